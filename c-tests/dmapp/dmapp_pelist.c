/* PE-list calls: put_ixpe (same block to every listed PE), scatter_ixpe (block I to
 * list[I]), gather_ixpe (block I from list[I]); every completion class; the list
 * holds every PE in reverse order (so it includes the caller). */
#include "dmtest.h"

static void complete(int m, dmapp_syncid_handle_t *h) {
    if (m == 1) { OK(dmapp_syncid_wait(h)); CHECK(*h == NULL); }
    if (m == 2) OK(dmapp_gsync_wait());
}

int main(void) {
    dm_init();
    int64_t *bc = dmapp_sheap_malloc(npes * 4 * 8), *sc = dmapp_sheap_malloc(4 * 8), *src = dmapp_sheap_malloc(npes * 4 * 8);
    int64_t gat[64 * 4];
    dmapp_pe_t list[64];
    CHECK(bc && sc && src && npes <= 64);
    for (int i = 0; i < npes; i++) list[i] = npes - 1 - i;
    for (int m = 0; m < 3; m++) {
        dmapp_syncid_handle_t h = NULL;
        memset(bc, 0, npes * 4 * 8);
        memset(sc, 0, 4 * 8);
        int64_t mine[4];
        for (int k = 0; k < 4; k++) mine[k] = me * 10 + k + m * 1000;
        for (int i = 0; i < npes * 4; i++) src[i] = me * 100000 + i + m * 1000;  /* scatter source */
        barrier();
        /* broadcast my 4 elements into slot `me` of everyone's bc */
        OK(m == 0 ? dmapp_put_ixpe(bc + 4 * me, sheap(), list, npes, mine, 4, DMAPP_QW)
           : m == 1 ? dmapp_put_ixpe_nb(bc + 4 * me, sheap(), list, npes, mine, 4, DMAPP_QW, &h)
                    : dmapp_put_ixpe_nbi(bc + 4 * me, sheap(), list, npes, mine, 4, DMAPP_QW));
        complete(m, &h);
        /* PE 0 scatters: list[I] = npes-1-I gets block I */
        if (me == 0) {
            OK(m == 0 ? dmapp_scatter_ixpe(sc, sheap(), list, npes, src, 4, DMAPP_QW)
               : m == 1 ? dmapp_scatter_ixpe_nb(sc, sheap(), list, npes, src, 4, DMAPP_QW, &h)
                        : dmapp_scatter_ixpe_nbi(sc, sheap(), list, npes, src, 4, DMAPP_QW));
            complete(m, &h);
        }
        barrier();
        for (int p = 0; p < npes; p++)
            for (int k = 0; k < 4; k++) CHECK_EQ(bc[4 * p + k], p * 10 + k + m * 1000);
        int blk = npes - 1 - me;  /* my index in the list */
        for (int k = 0; k < 4; k++) CHECK_EQ(sc[k], 4 * blk + k + m * 1000);
        /* gather: block I comes from list[I]'s src[0..4) */
        memset(gat, 0, sizeof gat);
        OK(m == 0 ? dmapp_gather_ixpe(gat, src, sheap(), list, npes, 4, DMAPP_QW)
           : m == 1 ? dmapp_gather_ixpe_nb(gat, src, sheap(), list, npes, 4, DMAPP_QW, &h)
                    : dmapp_gather_ixpe_nbi(gat, src, sheap(), list, npes, 4, DMAPP_QW));
        complete(m, &h);
        for (int i = 0; i < npes; i++)
            for (int k = 0; k < 4; k++) CHECK_EQ(gat[4 * i + k], list[i] * 100000 + k + m * 1000);
        barrier();
    }
    OK(dmapp_finalize());
    printf("dmapp_pelist: pe %d of %d ok\n", me, npes);
    return 0;
}
