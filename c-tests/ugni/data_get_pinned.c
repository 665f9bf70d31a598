/* Small FMA and RDMA gets once the endpoint has pinned both registrations (a get's quick
 * path, issue 25).  After warm-up gets from the right neighbour: gets of 4 B up to 64 KiB
 * (the quick path's limit) and 64 KiB + 4 (past it), at several offsets, land exactly with
 * the guards around them untouched and one event each (FMA GLOBAL, RDMA LOCAL or GLOBAL);
 * what the general path refuses is still refused with its code (a misaligned or empty get,
 * a destination past our registration, one in a read-only registration); a get through
 * the pin of a registration its owner ended completes with a transaction error and moves
 * nothing, and the owner's new registration at the same address then serves. */
#include "data_util.h"

#define WIN (256 * 1024)
#define GUARD 0xEE

static uint8_t pat(int r, int gen, size_t i) { return (uint8_t)(r * 29 + gen * 101 + i * 7 + 3); }

static gnit_t t;
static uint8_t *win, *dst;
static gni_mem_handle_t dmh, *mh;
static uint64_t *base;

/* Posts a get of `len` bytes at `off` of `peer`'s window into dst + 64 (FMA or RDMA, with
 * `mode`'s event) and returns PostFma/PostRdma's code. */
static gni_return_t get(gni_post_descriptor_t *d, int rdma, uint16_t mode, int peer, size_t off, size_t len)
{
    dt_desc(d, rdma ? GNI_POST_RDMA_GET : GNI_POST_FMA_GET, mode, dst + 64, dmh, base[peer] + off, mh[peer], len);
    return rdma ? GNI_PostRdma(t.eps[peer], d) : GNI_PostFma(t.eps[peer], d);
}

static void get_ok(int rdma, uint16_t mode, int peer, int gen, size_t off, size_t len)
{
    gni_post_descriptor_t d;
    memset(dst, GUARD, 64 + len + 256);
    GNI_OK(get(&d, rdma, mode, peer, off, len));
    dt_complete(t.cq, &d, GNI_RC_SUCCESS);
    gni_cq_entry_t ev;
    GNI_EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(t.cq, &ev));          /* one event, no more */
    for (size_t i = 0; i < 64; i++) if (dst[i] != GUARD) SN_FAIL("get %zu@%zu: guard before at %zu", len, off, i);
    for (size_t i = 0; i < len; i++)
        if (dst[64 + i] != pat(peer, gen, off + i)) SN_FAIL("get %zu@%zu (%s): byte %zu is %d, want %d", len, off, rdma ? "RDMA" : "FMA", i, dst[64 + i], pat(peer, gen, off + i));
    for (size_t i = 64 + len; i < 64 + len + 256; i++) if (dst[i] != GUARD) SN_FAIL("get %zu@%zu: guard after at %zu", len, off, i);
}

int main(void)
{
    gnit_init(&t, 1024);
    int n = t.size, me = t.rank, right = (me + 1) % n;
    win = dt_alloc(WIN);
    dst = dt_alloc(WIN);
    uint8_t *ro = dt_alloc(4096);
    gni_mem_handle_t wmh = dt_reg(&t, win, WIN, NULL, GNI_MEM_READWRITE);
    dmh = dt_reg(&t, dst, WIN, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t romh = dt_reg(&t, ro, 4096, NULL, GNI_MEM_READ_ONLY);
    mh = calloc(n, sizeof(*mh));
    base = calloc(n, sizeof(*base));
    gnit_exchange_mem(&t, win, wmh, mh, base);
    for (size_t i = 0; i < WIN; i++) win[i] = pat(me, 0, i);
    dt_barrier();

    for (int i = 0; i < 4; i++) get_ok(0, GNI_CQMODE_GLOBAL_EVENT, right, 0, 0, 8);   /* pins made */
    static const size_t sizes[] = { 4, 8, 60, 4096, 65536, 65536 + 4 };
    static const size_t offs[] = { 0, 4, 4092 };
    for (size_t o = 0; o < sizeof offs / sizeof offs[0]; o++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            get_ok(0, GNI_CQMODE_GLOBAL_EVENT, right, 0, offs[o], sizes[s]);
            get_ok(1, GNI_CQMODE_LOCAL_EVENT, right, 0, offs[o], sizes[s]);
            get_ok(1, GNI_CQMODE_GLOBAL_EVENT, right, 0, offs[o], sizes[s]);
            get_ok(0, GNI_CQMODE_GLOBAL_EVENT, me, 0, offs[o], sizes[s]);          /* our own window */
        }

    /* Refused as the general path refuses them, pins or not. */
    gni_post_descriptor_t d;
    memset(dst, GUARD, 128);
    GNI_EXPECT(GNI_RC_ALIGNMENT_ERROR, get(&d, 0, GNI_CQMODE_GLOBAL_EVENT, right, 2, 8));
    GNI_EXPECT(GNI_RC_ALIGNMENT_ERROR, get(&d, 0, GNI_CQMODE_GLOBAL_EVENT, right, 0, 6));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, get(&d, 0, GNI_CQMODE_GLOBAL_EVENT, right, 0, 0));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, get(&d, 1, GNI_CQMODE_GLOBAL_EVENT, right, 0, 0));
    dt_desc(&d, GNI_POST_FMA_GET, GNI_CQMODE_GLOBAL_EVENT, dst + WIN - 4, dmh, base[right], mh[right], 8);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(t.eps[right], &d));       /* past our registration */
    dt_desc(&d, GNI_POST_FMA_GET, GNI_CQMODE_GLOBAL_EVENT, ro, romh, base[right], mh[right], 8);
    GNI_EXPECT(GNI_RC_PERMISSION_ERROR, GNI_PostFma(t.eps[right], &d));    /* read-only destination */
    for (int i = 0; i < 128; i++) CHECK_EQ(dst[i], GUARD);
    for (int i = 0; i < 8; i++) CHECK_EQ(ro[i], 0);
    gni_cq_entry_t ev;
    GNI_EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(t.cq, &ev));

    /* The neighbour ends its registration: our pin of it is stale. */
    dt_barrier();
    GNI_OK(GNI_MemDeregister(t.nic, &wmh));
    for (size_t i = 0; i < WIN; i++) win[i] = pat(me, 1, i);
    dt_barrier();
    for (int rdma = 0; rdma < 2; rdma++) {
        memset(dst, GUARD, 256);
        GNI_OK(get(&d, rdma, GNI_CQMODE_GLOBAL_EVENT, right, 0, 64));
        dt_complete(t.cq, &d, GNI_RC_TRANSACTION_ERROR);
        for (int i = 0; i < 256; i++) if (dst[i] != GUARD) SN_FAIL("a get through a stale handle wrote byte %d", i);
    }
    dt_barrier();
    wmh = dt_reg(&t, win, WIN, NULL, GNI_MEM_READWRITE);
    gnit_exchange_mem(&t, win, wmh, mh, base);
    dt_barrier();
    for (int i = 0; i < 4; i++) get_ok(i & 1, GNI_CQMODE_GLOBAL_EVENT, right, 1, 64 * i, 64);
    dt_barrier();
    printf("data_get_pinned: rank %d ok\n", me);
    gnit_fini(&t);
    return 0;
}
