/* PUT/GET, contiguous, strided and indexed, for every dmapp_type_t and every
 * completion class (blocking, _nb, _nbi), into the symmetric heap and the data
 * segment, each PE to its right neighbour (itself when alone). */
#include "dmtest.h"

#define N 96                         /* elements per transfer */
static unsigned char dbuf[N * 16 * 4]; /* data-segment target (.bss) */

static const int types[4] = {DMAPP_DQW, DMAPP_QW, DMAPP_DW, DMAPP_BYTE};
static const size_t tsize[4] = {16, 8, 4, 1};

static void complete(int mode, dmapp_syncid_handle_t *h) {
    if (mode == 1) {
        int flag = 0;
        OK(dmapp_syncid_test(h, &flag));
        CHECK_EQ(flag, 1);
        CHECK(*h == NULL);          /* retired */
    } else if (mode == 2) {
        OK(dmapp_gsync_wait());
    }
}

static unsigned char pat(int pe, int t, int m, size_t i) { return (unsigned char)(pe * 31 + t * 7 + m * 3 + i * 13 + 1); }

static dmapp_return_t put(int m, void *ta, dmapp_seg_desc_t *s, int pe, void *sa, uint64_t n, int ty, dmapp_syncid_handle_t *h) {
    return m == 0 ? dmapp_put(ta, s, pe, sa, n, ty) : m == 1 ? dmapp_put_nb(ta, s, pe, sa, n, ty, h) : dmapp_put_nbi(ta, s, pe, sa, n, ty);
}
static dmapp_return_t get(int m, void *ta, void *sa, dmapp_seg_desc_t *s, int pe, uint64_t n, int ty, dmapp_syncid_handle_t *h) {
    return m == 0 ? dmapp_get(ta, sa, s, pe, n, ty) : m == 1 ? dmapp_get_nb(ta, sa, s, pe, n, ty, h) : dmapp_get_nbi(ta, sa, s, pe, n, ty);
}

static void contiguous(unsigned char *tgt, dmapp_seg_desc_t *seg) {
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    unsigned char src[N * 16], back[N * 16 + 1];   /* back[len]: a guard byte */
    for (int t = 0; t < 4; t++)
        for (int m = 0; m < 3; m++) {
            size_t len = N * tsize[t];
            dmapp_syncid_handle_t h = NULL;
            memset(tgt, 0, N * 16 + 32);
            for (size_t i = 0; i < len; i++) src[i] = pat(me, t, m, i);
            barrier();
            OK(put(m, tgt + 16, seg, right, src, N, types[t], &h));
            complete(m, &h);
            barrier();
            for (size_t i = 0; i < len; i++) CHECK_EQ(tgt[16 + i], pat(left, t, m, i));
            CHECK_EQ(tgt[15], 0);               /* guards around the target */
            CHECK_EQ(tgt[16 + len], 0);
            /* GET it back from the right neighbour: its target holds my pattern. */
            memset(back, 0, sizeof back);
            OK(get(m, back, tgt + 16, seg, right, N, types[t], &h));
            complete(m, &h);
            for (size_t i = 0; i < len; i++) CHECK_EQ(back[i], pat(me, t, m, i));
            CHECK_EQ(back[len], 0);
            barrier();
        }
}

static void strided(unsigned char *tgt, dmapp_seg_desc_t *seg) {
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    int64_t src[64], back[64];
    const int n = 10, tst = 3, sst = 2;
    for (int m = 0; m < 3; m++) {
        dmapp_syncid_handle_t h = NULL;
        int64_t *t64 = (int64_t *)tgt;
        memset(tgt, 0, 64 * 8);
        for (int i = 0; i < 64; i++) src[i] = me * 1000 + i;
        barrier();
        OK(m == 0 ? dmapp_iput(t64, seg, right, src, tst, sst, n, DMAPP_QW)
           : m == 1 ? dmapp_iput_nb(t64, seg, right, src, tst, sst, n, DMAPP_QW, &h)
                    : dmapp_iput_nbi(t64, seg, right, src, tst, sst, n, DMAPP_QW));
        complete(m, &h);
        barrier();
        for (int i = 0; i < 64; i++) CHECK_EQ(t64[i], (i % tst == 0 && i / tst < n) ? left * 1000 + (i / tst) * sst : 0);
        /* iget: element k of the right neighbour's target at stride tst -> back[k*2] */
        memset(back, 0, sizeof back);
        OK(m == 0 ? dmapp_iget(back, t64, seg, right, 2, tst, n, DMAPP_QW)
           : m == 1 ? dmapp_iget_nb(back, t64, seg, right, 2, tst, n, DMAPP_QW, &h)
                    : dmapp_iget_nbi(back, t64, seg, right, 2, tst, n, DMAPP_QW));
        complete(m, &h);
        for (int i = 0; i < 2 * n; i++) CHECK_EQ(back[i], (i % 2 == 0) ? me * 1000 + (i / 2) * sst : 0);
        barrier();

        /* indexed, DW elements: scatter to tidx, gather from sidx */
        int32_t s32[8], g32[8] = {0};
        ptrdiff_t idx[8] = {7, 0, 3, 12, 5, 9, 1, 20};
        int32_t *t32 = (int32_t *)tgt;
        memset(tgt, 0, 64 * 8);
        for (int i = 0; i < 8; i++) s32[i] = me * 100 + i + 1;
        barrier();
        OK(m == 0 ? dmapp_ixput(t32, seg, right, s32, idx, 8, DMAPP_DW)
           : m == 1 ? dmapp_ixput_nb(t32, seg, right, s32, idx, 8, DMAPP_DW, &h)
                    : dmapp_ixput_nbi(t32, seg, right, s32, idx, 8, DMAPP_DW));
        complete(m, &h);
        barrier();
        int hits = 0;
        for (int j = 0; j < 24; j++) {
            int want = 0;
            for (int i = 0; i < 8; i++) if (idx[i] == j) want = left * 100 + i + 1;
            CHECK_EQ(t32[j], want);
            hits += want != 0;
        }
        CHECK_EQ(hits, 8);
        OK(m == 0 ? dmapp_ixget(g32, t32, seg, right, idx, 8, DMAPP_DW)
           : m == 1 ? dmapp_ixget_nb(g32, t32, seg, right, idx, 8, DMAPP_DW, &h)
                    : dmapp_ixget_nbi(g32, t32, seg, right, idx, 8, DMAPP_DW));
        complete(m, &h);
        for (int i = 0; i < 8; i++) CHECK_EQ(g32[i], me * 100 + i + 1);
        barrier();
    }
}

int main(void) {
    dm_init();
    unsigned char *h = dmapp_sheap_malloc(N * 16 * 4);
    CHECK(h != NULL);
    contiguous(h, sheap());
    contiguous(dbuf, dseg());
    strided(h, sheap());
    strided(dbuf, dseg());
    barrier();
    OK(dmapp_finalize());
    printf("dmapp_rma: pe %d of %d ok\n", me, npes);
    return 0;
}
