/* Injected timeouts (SOFTNIC_FAULTS=timeout:after=1,times=2, set by the manifest): each
 * rank puts to its right neighbour three times and waits for each event with
 * GNI_CqWaitEvent.  The waits given a time limit are counted: the second and third run
 * out at once (GNI_RC_TIMEOUT) with the event queued, and the event is there for the
 * next wait; waits without a limit are not counted.  Prints "fault_timeout: rank R ok". */
#include "data_util.h"

int main(void)
{
    gnit_t t;
    gnit_init(&t, 64);
    int right = (t.rank + 1) % t.size;
    static dt_pair_t p;
    dt_pair(&t, &p);
    for (int i = 0; i < 3; i++) {
        gni_post_descriptor_t d;
        dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, p.src, p.smh, p.bs[right] + 8 * (uint64_t)i, p.hs[right], 8);
        GNI_OK(GNI_PostFma(t.eps[right], &d));
        gni_cq_entry_t ev = 0;
        gni_return_t rc = GNI_CqWaitEvent(t.cq, 5000, &ev); /* timed waits 0, 1, 2 */
        if (i == 0) GNI_OK(rc);
        else {
            CHECK_EQ(rc, GNI_RC_TIMEOUT);
            /* the event stayed queued: a wait without a limit (not counted) gets it */
            GNI_OK(GNI_CqWaitEvent(t.cq, (uint64_t)-1, &ev));
        }
        gni_post_descriptor_t *got = NULL;
        GNI_OK(GNI_GetCompleted(t.cq, ev, &got));
        CHECK(got == &d);
    }
    gni_cq_entry_t ev = 0;
    GNI_EXPECT(GNI_RC_TIMEOUT, GNI_CqWaitEvent(t.cq, 10, &ev)); /* a real timeout: nothing queued */
    printf("fault_timeout: rank %d ok\n", t.rank);
    gnit_fini(&t);
    return 0;
}
