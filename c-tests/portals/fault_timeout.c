/* Injected timeouts (SOFTNIC_FAULTS=timeout:after=1,times=1, set by the manifest): each
 * rank puts to its right neighbour twice and waits for SEND_END with PtlEQPoll and a time
 * limit.  The second poll runs out at once (PTL_EQ_EMPTY) with the event queued, which
 * PtlEQWait then gets.  Prints "ptl_fault_timeout: rank R ok". */
#include "ptest.h"
#include <pmi.h>

static uint64_t out[4], in[4];

int main(void)
{
    PT_PUT_PAIR_JOB(j, seq, src, out, in);
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
