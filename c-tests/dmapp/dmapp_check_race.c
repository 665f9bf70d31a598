/* The checker's data races (SOFTNIC_CHECK=1) between DMAPP initiators, committed on
 * purpose.  PE 0 is the target; PEs 1 and 2 access one symmetric array of it:
 *   race     PE 1's dmapp_put_nbi is not completed (no gsync yet) when, after a barrier,
 *            PE 2 posts a dmapp_put_nb to overlapping elements: nothing ordered them (PE 2
 *            reports it, naming PE 1's put)
 *   getput   PE 1's dmapp_get_nbi of those elements is in flight when PE 2's put is posted
 *   clean    PE 1 completes its put (gsync) before the barrier, then PE 2 puts; both put
 *            at once to different elements; both get the same elements at once: no finding
 * Needs 3 PEs.  Prints "dmapp_check_race: pe P MODE done". */
#include "dmtest.h"

static uint64_t src[8], got[8];

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "clean";
    dm_init();
    if (npes != 3) SKIP("needs 3 PEs");
    uint64_t *dst = dmapp_sheap_malloc(16 * sizeof(uint64_t));
    CHECK(dst != NULL);
    for (int i = 0; i < 8; i++) src[i] = 0x7ace0000u + (uint64_t)me * 8 + (uint64_t)i;
    barrier();
    dmapp_syncid_handle_t h;
    if (!strcmp(mode, "race") || !strcmp(mode, "getput")) {
        if (me == 1) {
            if (!strcmp(mode, "race")) OK(dmapp_put_nbi(dst, sheap(), 0, src, 4, DMAPP_QW));
            else OK(dmapp_get_nbi(got, dst, sheap(), 0, 4, DMAPP_QW));
        }
        barrier();
        if (me == 2) OK(dmapp_put_nb(dst + 2, sheap(), 0, src, 4, DMAPP_QW, &h)); /* overlaps 2..3 */
        barrier();
        if (me == 1) OK(dmapp_gsync_wait());
        if (me == 2) OK(dmapp_syncid_wait(&h));
    } else {
        if (me == 1) {
            OK(dmapp_put_nbi(dst, sheap(), 0, src, 4, DMAPP_QW));
            OK(dmapp_gsync_wait());
        }
        barrier();
        if (me == 2) {
            OK(dmapp_put_nb(dst, sheap(), 0, src, 4, DMAPP_QW, &h));
            OK(dmapp_syncid_wait(&h));
        }
        barrier();
        if (me != 0) OK(dmapp_put_nbi(dst + (me == 1 ? 0 : 8), sheap(), 0, src, 4, DMAPP_QW));
        barrier();
        if (me != 0) OK(dmapp_gsync_wait());
        barrier();
        if (me != 0) OK(dmapp_get_nbi(got, dst, sheap(), 0, 4, DMAPP_QW));
        barrier();
        if (me != 0) OK(dmapp_gsync_wait());
    }
    barrier();
    printf("dmapp_check_race: pe %d %s done\n", me, mode);
    fflush(stdout);
    dmapp_sheap_free(dst);
    OK(dmapp_finalize());
    return 0;
}
