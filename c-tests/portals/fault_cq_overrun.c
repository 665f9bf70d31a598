/* Injected queue overruns (SOFTNIC_FAULTS=cq_overrun:..., set by the manifest): each rank
 * puts six times to its right neighbour, then takes the SEND_ENDs from its queue.  The
 * event the spec names is lost as on a queue that overflowed: the queue returns the
 * others, in order, and the one after the loss with PTL_EQ_DROPPED; the sequence numbers
 * show the gap.  LOST is the index of the lost event (-1: none).
 * Prints "ptl_fault_cq_overrun: rank R ok, N events".
 *
 *   fault_cq_overrun LOST */
#include "ptest.h"
#include <pmi.h>

#define NPUTS 6

static uint64_t out[4], in[4];

int main(int argc, char **argv)
{
    int lost = argc > 1 ? atoi(argv[1]) : -1;
    PT_PUT_PAIR_JOB(j, seq, src, out, in);
    for (int i = 0; i < NPUTS; i++) PCHECK(PtlPut(src, PTL_NOACK_REQ, j.right, 3, 0, 1, 0, 0));
    int n = 0;
    ptl_seq_t first = 0;
    for (int i = 0; i < NPUTS; i++) {
        if (i == lost) continue;
        ptl_event_t ev;
        int rc = PtlEQGet(seq, &ev);
        PCHECK_RC(rc, i == lost + 1 && lost >= 0 ? PTL_EQ_DROPPED : PTL_OK);
        CHECK_EQ(ev.type, PTL_EVENT_SEND_END);
        if (n == 0) first = ev.sequence - (ptl_seq_t)i;
        if (ev.sequence != first + (ptl_seq_t)i) SN_FAIL("event %d has sequence %lu, expected %lu", i, (unsigned long)ev.sequence, (unsigned long)(first + i));
        n++;
    }
    ptl_event_t ev;
    PCHECK_RC(PtlEQGet(seq, &ev), PTL_EQ_EMPTY);
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    PCHECK(PtlNIFini(j.ni));
    PtlFini();
    printf("ptl_fault_cq_overrun: rank %d ok, %d events\n", j.rank, n);
    return 0;
}
