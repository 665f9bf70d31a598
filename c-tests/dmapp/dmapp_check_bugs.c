/* The checker (SOFTNIC_CHECK) against DMAPP bugs committed on purpose; each PE puts to
 * its right neighbour.  The manifest runs every mode with SOFTNIC_CHECK=1 and looks for
 * the finding (or for none):
 *   reuse     the source of a dmapp_put_nbi is overwritten before dmapp_gsync_wait, and
 *             the source of a dmapp_put_nb before its sync handle is waited for
 *   unsynced  a dmapp_put_nbi is never completed by a gsync, a dmapp_put_nb's handle never
 *             waited for, and a dmapp_mem_register region never unregistered, before
 *             dmapp_finalize
 *   getwrite  the destination of a dmapp_get_nbi is written before dmapp_gsync_wait, and
 *             that of a dmapp_get_nb before its sync handle is waited for (the data may
 *             land after those writes on the hardware)
 *   clean     the same puts and gets done right: no finding
 * Prints "dmapp_check_bugs: pe P MODE done". */
#include "dmtest.h"

static uint64_t src[8];

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "clean";
    dm_init();
    int right = (me + 1) % npes;
    static uint64_t extra[64];
    dmapp_seg_desc_t xd;
    OK(dmapp_mem_register(extra, sizeof extra, &xd));
    uint64_t *dst = dmapp_sheap_malloc(16 * sizeof(uint64_t));
    CHECK(dst != NULL);
    for (int i = 0; i < 8; i++) src[i] = 0xd0d00000u + (uint64_t)i;
    barrier();
    OK(dmapp_put_nbi(dst, sheap(), right, src, 4, DMAPP_QW));
    if (!strcmp(mode, "reuse")) src[1] = 0; /* the bug: the request may still be reading it */
    dmapp_syncid_handle_t h;
    OK(dmapp_put_nb(dst + 8, sheap(), right, src + 4, 4, DMAPP_QW, &h));
    if (!strcmp(mode, "reuse")) src[5] = 0;
    if (strcmp(mode, "unsynced")) {
        OK(dmapp_gsync_wait());
        OK(dmapp_syncid_wait(&h));
    }
    src[1] = src[5] = 7; /* after the completions: fine */
    barrier();
    if (strcmp(mode, "unsynced")) {
        /* Gets from the right neighbour's puts, landed above. */
        static uint64_t got[8];
        int getwrite = !strcmp(mode, "getwrite");
        OK(dmapp_get_nbi(got, dst, sheap(), right, 4, DMAPP_QW));
        if (getwrite) got[1] = 7; /* the bug: the data may still be landing */
        dmapp_syncid_handle_t g;
        OK(dmapp_get_nb(got + 4, dst + 8, sheap(), right, 4, DMAPP_QW, &g));
        if (getwrite) got[5] = 7;
        OK(dmapp_gsync_wait());
        OK(dmapp_syncid_wait(&g));
        got[1] = got[5] = 7; /* after the completions: fine */
        barrier();
    }
    if (strcmp(mode, "unsynced")) OK(dmapp_mem_unregister(&xd));
    printf("dmapp_check_bugs: pe %d %s done\n", me, mode);
    OK(dmapp_finalize());
    return 0;
}
