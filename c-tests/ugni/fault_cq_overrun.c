/* Injected CQ overruns (SOFTNIC_FAULTS=cq_overrun:after=2,times=1, set by the manifest):
 * each rank posts six FMA puts to its right neighbour, each with a local event, and
 * reaps after each.  The third event is lost as on a full CQ: GNI_CqGetEvent returns
 * GNI_RC_ERROR_RESOURCE once, then nothing is left of that event (its descriptor never
 * comes back), the next event carries the overrun bit, and the others are reaped as
 * usual.  The data of all six puts lands (only the event was lost).
 * Prints "fault_cq_overrun: rank R ok". */
#include "data_util.h"

int main(void)
{
    gnit_t t;
    gnit_init_mode(&t, 64, GNI_CQ_NOBLOCK, GNI_CDM_MODE_FORK_NOCOPY);
    int right = (t.rank + 1) % t.size, left = (t.rank + t.size - 1) % t.size;
    static dt_pair_t p;
    dt_pair(&t, &p);
    for (int i = 0; i < 6; i++) p.src[i] = 0x0c0e0000u + 0x100u * (uint64_t)t.rank + (uint64_t)i;
    gni_post_descriptor_t d[6];
    for (int i = 0; i < 6; i++) {
        dt_desc(&d[i], GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, &p.src[i], p.smh, p.bs[right] + 8 * (uint64_t)i, p.hs[right], 8);
        GNI_OK(GNI_PostFma(t.eps[right], &d[i]));
        gni_cq_entry_t ev = 0;
        gni_return_t rc = GNI_CqGetEvent(t.cq, &ev);
        if (i == 2) {
            CHECK_EQ(rc, GNI_RC_ERROR_RESOURCE);
            GNI_EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(t.cq, &ev));
            continue;
        }
        GNI_OK(rc);
        CHECK_EQ(GNI_CQ_OVERRUN(ev) != 0, i == 3);
        gni_post_descriptor_t *got = NULL;
        GNI_OK(GNI_GetCompleted(t.cq, ev, &got));
        CHECK(got == &d[i]);
    }
    CHECK(PMI_Barrier() == PMI_SUCCESS);
    for (int i = 0; i < 6; i++) CHECK_EQ(p.dst[i], 0x0c0e0000u + 0x100u * (uint64_t)left + (uint64_t)i);
    printf("fault_cq_overrun: rank %d ok\n", t.rank);
    return 0;
}
