/* FMA PUT and GET at several sizes and alignments between ring neighbours; GLOBAL events
 * with GetCompleted returning the posted descriptor and carrying our inst_id; guard bytes
 * around every target range stay untouched; the latency of an 8-byte FMA PUT. */
#include "data_util.h"

#define WIN (1 << 20)
#define GUARD 0xEE

static uint8_t pat(int r, size_t sz, size_t al, size_t i) { return (uint8_t)(r * 31 + sz * 7 + al * 13 + i * 5 + 1); }

int main(void)
{
    gnit_t t;
    gnit_init(&t, 64);
    int n = t.size, me = t.rank, right = (me + 1) % n, left = (me + n - 1) % n;
    uint8_t *win = dt_alloc(WIN), *src = dt_alloc(WIN), *dst = dt_alloc(WIN);
    gni_mem_handle_t wmh = dt_reg(&t, win, WIN, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t dmh = dt_reg(&t, dst, WIN, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t *mh = calloc(n, sizeof(*mh));
    uint64_t *base = calloc(n, sizeof(*base));
    gnit_exchange_mem(&t, win, wmh, mh, base);
    gni_post_descriptor_t d;

    static const size_t psz[] = { 0, 1, 3, 8, 13, 64, 1000, 4096, 65536 + 5 };
    static const size_t pal[] = { 0, 1, 3, 5 };
    for (size_t a = 0; a < sizeof(pal) / sizeof(pal[0]); a++)
        for (size_t s = 0; s < sizeof(psz) / sizeof(psz[0]); s++) {
            size_t sz = psz[s], al = pal[a];
            memset(win, GUARD, WIN);
            dt_barrier();
            for (size_t i = 0; i < sz; i++) src[al + i] = pat(me, sz, al, i);
            dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, src + al, (gni_mem_handle_t){0, 0},
                    base[right] + 64 + al, mh[right], sz);
            GNI_OK(GNI_PostFma(t.eps[right], &d));
            gni_cq_entry_t ev = dt_complete(t.cq, &d, GNI_RC_SUCCESS);
            CHECK_EQ(GNI_CQ_GET_INST_ID(ev), GNIT_RID(me, right)); /* default local_event: the bound remote_id */
            CHECK_EQ(d.status, 0);
            dt_barrier();
            for (size_t i = 0; i < 64 + al; i++) if (win[i] != GUARD) SN_FAIL("put %zu@%zu: guard before at %zu", sz, al, i);
            for (size_t i = 0; i < sz; i++)
                if (win[64 + al + i] != pat(left, sz, al, i)) SN_FAIL("put %zu@%zu: byte %zu wrong", sz, al, i);
            for (size_t i = 64 + al + sz; i < 64 + al + sz + 256; i++)
                if (win[i] != GUARD) SN_FAIL("put %zu@%zu: guard after at %zu", sz, al, i);
        }

    /* GET from the right neighbour's window, filled with its pattern. */
    for (size_t i = 0; i < WIN; i++) win[i] = pat(me, 0, 0, i);
    dt_barrier();
    static const size_t gsz[] = { 4, 8, 12, 64, 1000, 4096, 65536 + 4 };
    static const size_t gal[] = { 0, 4, 12 };
    for (size_t a = 0; a < sizeof(gal) / sizeof(gal[0]); a++)
        for (size_t s = 0; s < sizeof(gsz) / sizeof(gsz[0]); s++) {
            size_t sz = gsz[s], al = gal[a];
            memset(dst, GUARD, WIN);
            dt_desc(&d, GNI_POST_FMA_GET, GNI_CQMODE_GLOBAL_EVENT, dst + 64 + al, dmh, base[right] + 4 * al + 8, mh[right], sz);
            dt_fma(&t, right, &d);
            for (size_t i = 0; i < 64 + al; i++) if (dst[i] != GUARD) SN_FAIL("get %zu@%zu: guard before", sz, al);
            for (size_t i = 0; i < sz; i++)
                if (dst[64 + al + i] != pat(right, 0, 0, 4 * al + 8 + i)) SN_FAIL("get %zu@%zu: byte %zu wrong", sz, al, i);
            for (size_t i = 64 + al + sz; i < 64 + al + sz + 256; i++)
                if (dst[i] != GUARD) SN_FAIL("get %zu@%zu: guard after", sz, al);
        }
    dt_barrier();

    /* Latency of an 8-byte FMA PUT with a GLOBAL event (rank 0 -> rank 1). */
    if (me == 0 && n > 1) {
        int iters = 20000;
        double t0 = 0;
        for (int i = -1000; i < iters; i++) {
            if (i == 0) t0 = dt_now();
            dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, src, (gni_mem_handle_t){0, 0}, base[1], mh[1], 8);
            GNI_OK(GNI_PostFma(t.eps[1], &d));
            gni_cq_entry_t ev;
            gni_post_descriptor_t *g;
            while (GNI_CqGetEvent(t.cq, &ev) == GNI_RC_NOT_DONE) {}
            GNI_OK(GNI_GetCompleted(t.cq, ev, &g));
        }
        printf("data_fma: FMA PUT 8 B + GLOBAL event: %.2f us\n", (dt_now() - t0) / iters * 1e6);
    }
    dt_barrier();
    GNI_OK(GNI_MemDeregister(t.nic, &wmh));
    GNI_OK(GNI_MemDeregister(t.nic, &dmh));
    gnit_fini(&t);
    printf("data_fma: rank %d ok\n", me);
    return 0;
}
