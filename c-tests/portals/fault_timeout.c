/* Injected timeouts (SOFTNIC_FAULTS=timeout:after=1,times=1, set by the manifest): each
 * rank puts to its right neighbour twice and waits for SEND_END with PtlEQPoll and a time
 * limit.  The second poll runs out at once (PTL_EQ_EMPTY) with the event queued, which
 * PtlEQWait then gets.  Prints "ptl_fault_timeout: rank R ok". */
#include "ptest.h"
#include <pmi.h>

static uint64_t out[4], in[4];

int main(void)
{
    pt_job_t j;
    PT_JOB_INIT(&j);
    ptl_handle_eq_t seq;
    PCHECK(PtlEQAlloc(j.ni, 16, PTL_EQ_HANDLER_NONE, &seq));
    ptl_handle_me_t meh;
    PCHECK(PtlMEAttach(j.ni, 3, ANY_ID, 1, 0, PTL_RETAIN, PTL_INS_AFTER, &meh));
    PCHECK(PtlMDAttach(meh, md_of(in, sizeof in, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_END_DISABLE, PTL_EQ_NONE), PTL_RETAIN, NULL));
    ptl_handle_md_t src;
    PCHECK(PtlMDBind(j.ni, md_of(out, sizeof out, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, seq), PTL_RETAIN, &src));
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    for (int i = 0; i < 2; i++) {
        PCHECK(PtlPut(src, PTL_NOACK_REQ, j.right, 3, 0, 1, 0, 0));
        ptl_event_t ev;
        int which = -1;
        int rc = PtlEQPoll(&seq, 1, 5000, &ev, &which);
        if (i == 0) {
            PCHECK_RC(rc, PTL_OK);
        } else {
            PCHECK_RC(rc, PTL_EQ_EMPTY);
            PCHECK(PtlEQWait(seq, &ev));
        }
        CHECK_EQ(ev.type, PTL_EVENT_SEND_END);
    }
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    PCHECK(PtlNIFini(j.ni));
    PtlFini();
    printf("ptl_fault_timeout: rank %d ok\n", j.rank);
    return 0;
}
