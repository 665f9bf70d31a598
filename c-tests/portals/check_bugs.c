/* The checker (SOFTNIC_CHECK) against a Portals bug committed on purpose: every rank puts
 * to its right neighbour from a bound MD and
 *   reuse     overwrites the MD's memory before the put's SEND_END is taken from the
 *             queue (on the hardware the NIC may still be reading it)
 *   unseen    never takes the SEND_END from the queue before PtlNIFini
 *   nofini    never takes it either, and exits without PtlNIFini (what the NI still holds
 *             is named at exit)
 *   getwrite  gets from the right neighbour into a bound MD and writes that memory before
 *             the get's REPLY_END is taken from the queue (the data may land after it)
 *   clean     waits for SEND_END (and REPLY_END) first: no finding
 * Prints "ptl_check_bugs: rank R MODE done". */
#include "ptest.h"
#include <pmi.h>

static uint64_t out[8], in[8], into[8];

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "clean";
    pt_job_t j;
    PT_JOB_INIT(&j);
    int rank = j.rank;
    ptl_handle_ni_t ni = j.ni;
    ptl_process_id_t right = j.right;
    ptl_handle_eq_t seq;
    PCHECK(PtlEQAlloc(ni, 16, PTL_EQ_HANDLER_NONE, &seq));
    ptl_handle_me_t meh;
    PCHECK(PtlMEAttach(ni, 3, ANY_ID, 1, 0, PTL_RETAIN, PTL_INS_AFTER, &meh));
    PCHECK(PtlMDAttach(meh, md_of(in, sizeof in, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_END_DISABLE, PTL_EQ_NONE), PTL_RETAIN, NULL));
    ptl_handle_me_t gmeh;
    PCHECK(PtlMEAttach(ni, 3, ANY_ID, 2, 0, PTL_RETAIN, PTL_INS_AFTER, &gmeh));
    PCHECK(PtlMDAttach(gmeh, md_of(in, sizeof in, PTL_MD_THRESH_INF, PTL_MD_OP_GET | PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_END_DISABLE, PTL_EQ_NONE), PTL_RETAIN, NULL));
    ptl_handle_md_t src;
    PCHECK(PtlMDBind(ni, md_of(out, sizeof out, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, seq), PTL_RETAIN, &src));
    for (int i = 0; i < 8; i++) out[i] = 0x9070000u + (unsigned)i;
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    PCHECK(PtlPut(src, PTL_NOACK_REQ, right, 3, 0, 1, 0, 0));
    if (!strcmp(mode, "reuse")) out[2] = 0; /* the bug */
    ptl_event_t ev;
    if (strcmp(mode, "unseen") && strcmp(mode, "nofini")) {
        PCHECK(PtlEQWait(seq, &ev));
        CHECK_EQ(ev.type, PTL_EVENT_SEND_END);
    }
    out[3] = 0; /* after SEND_END: fine */
    if (!strcmp(mode, "getwrite") || !strcmp(mode, "clean")) {
        CHECK_EQ(PMI_Barrier(), PMI_SUCCESS); /* the neighbour's put has landed in `in` */
        ptl_handle_md_t dst;
        PCHECK(PtlMDBind(ni, md_of(into, sizeof into, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, seq), PTL_RETAIN, &dst));
        PCHECK(PtlGet(dst, right, 3, 0, 2, 0));
        if (!strcmp(mode, "getwrite")) into[1] = 7; /* the bug: the reply may still be landing */
        PCHECK(PtlEQWait(seq, &ev));
        CHECK_EQ(ev.type, PTL_EVENT_REPLY_END);
        into[1] = 7; /* after REPLY_END: fine */
        PCHECK(PtlMDUnlink(dst));
    }
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    printf("ptl_check_bugs: rank %d %s done\n", rank, mode);
    fflush(stdout);
    if (!strcmp(mode, "nofini")) exit(0);
    PCHECK(PtlNIFini(ni));
    PtlFini();
    return 0;
}
