/* Small FMA puts and AMOs through an endpoint's pins of registrations (ugni-sys post.rs
 * `fma_pinned`: a handle that missed twice recently is pinned, four per endpoint).  Every rank
 * puts to its right neighbour, the way a halo exchange does, and every outcome must be the
 * one the per-operation path gives:
 *  - puts cycling over five registrations (more than an endpoint pins) land, at every
 *    size from 0 to 4 KiB, at the first and the last bytes of each;
 *  - through a pinned handle: a put running past the end or starting before the start is a
 *    transaction error and writes nothing; a misaligned sync flag lands (as bytes); a flag
 *    outside the registration is a transaction error and the payload does not land;
 *  - the target deregisters a pinned registration: puts through the old handle are
 *    transaction errors, and through the handle of its new registration (same memory) land;
 *  - through a pinned handle, REMOTE events reach the target's dst CQ, a descriptor's
 *    src_cq_hndl gets its event, SILENT posts queue none;
 *  - RDMA puts (GLOBAL and LOCAL events) land; a source past our registration, a target
 *    range past its end, a deregistered source handle: the general path's errors;
 *  - AMOs (fetching into our pinned registration, not fetching, 32-bit) return and leave
 *    the right values; past the end, into a read-only result buffer, misaligned, through
 *    a deregistered result handle: the general path's errors;
 *  - a read-only registration refuses every put, also when a writable registration of
 *    the same memory is pinned. */
#include "data_util.h"

#define NW 5
#define WLEN 8192

static gnit_t t;

static void put(int peer, gni_post_type_t type, void *src, gni_mem_handle_t lmh, uint64_t raddr, gni_mem_handle_t rmh, uint64_t len, uint64_t flag_addr, uint64_t flag_value, gni_return_t want)
{
    gni_post_descriptor_t d;
    dt_desc(&d, type, GNI_CQMODE_GLOBAL_EVENT, src, lmh, raddr, rmh, len);
    d.sync_flag_addr = flag_addr;
    d.sync_flag_value = flag_value;
    GNI_OK(GNI_PostFma(t.eps[peer], &d));
    dt_complete(t.cq, &d, want);
}

/* A fetch-add of 1 into *res, which must return `want`. */
static void fetch_add_one(int peer, uint64_t *res, gni_mem_handle_t lmh, uint64_t raddr, gni_mem_handle_t rmh, uint64_t want)
{
    gni_post_descriptor_t d;
    dt_desc(&d, GNI_POST_AMO, GNI_CQMODE_GLOBAL_EVENT, res, lmh, raddr, rmh, 8);
    d.amo_cmd = GNI_FMA_ATOMIC_FADD;
    d.first_operand = 1;
    GNI_OK(GNI_PostFma(t.eps[peer], &d));
    dt_complete(t.cq, &d, GNI_RC_SUCCESS);
    if (*res != want) SN_FAIL("fetch-add returned %lu, expected %lu", (unsigned long)*res, (unsigned long)want);
}

static uint8_t pattern(int from, int round, int j, int i)
{
    return (uint8_t)(from * 131 + round * 17 + j * 7 + i * 3 + 1);
}

int main(void)
{
    gnit_init(&t, 256);
    int me = t.rank, n = t.size, right = (me + 1) % n, left = (me + n - 1) % n;
    CHECK(n <= 64);
    uint8_t *w[NW];
    gni_mem_handle_t wh[NW], hall[NW][64];
    uint64_t base[NW][64];
    for (int j = 0; j < NW; j++) {
        w[j] = dt_alloc(WLEN);
        wh[j] = dt_reg(&t, w[j], WLEN, NULL, GNI_MEM_READWRITE);
        gnit_exchange_mem(&t, w[j], wh[j], hall[j], base[j]);
    }
    uint8_t *src = dt_alloc(WLEN);
    gni_mem_handle_t none;
    memset(&none, 0, sizeof none);

    /* ---- cycling over three registrations (all pinned), then over five (more than an
     * endpoint pins), every size, both ends ---- */
    static const uint64_t sizes[] = { 0, 1, 8, 13, 64, 512, 4096, 0, 8, 4096 };
    for (int round = 0; round < (int)(sizeof sizes / sizeof sizes[0]); round++) {
        uint64_t len = sizes[round];
        int nw = round < 7 ? 3 : NW;
        for (int j = 0; j < nw; j++) {
            for (uint64_t i = 0; i < len; i++) src[i] = pattern(me, round, j, (int)i);
            put(right, GNI_POST_FMA_PUT, src, none, base[j][right], hall[j][right], len, 0, 0, GNI_RC_SUCCESS);
            put(right, GNI_POST_FMA_PUT, src, none, base[j][right] + WLEN - len, hall[j][right], len, 0, 0, GNI_RC_SUCCESS);
        }
        dt_barrier();
        for (int j = 0; j < nw; j++)
            for (uint64_t i = 0; i < len; i++) {
                if (w[j][i] != pattern(left, round, j, (int)i)) SN_FAIL("size %lu: W%d[%lu] = %u, expected %u", (unsigned long)len, j, (unsigned long)i, w[j][i], pattern(left, round, j, (int)i));
                if (w[j][WLEN - len + i] != pattern(left, round, j, (int)i)) SN_FAIL("size %lu: the end of W%d is wrong at %lu", (unsigned long)len, j, (unsigned long)i);
            }
        dt_barrier();
    }

    /* ---- misuse through a pinned handle (W0, pinned by two puts in a row) ---- */
    memset(w[0], 0xee, WLEN);
    dt_barrier();
    memset(src, 0x11, 64);
    put(right, GNI_POST_FMA_PUT, src, none, base[0][right] + 128, hall[0][right], 8, 0, 0, GNI_RC_SUCCESS);
    put(right, GNI_POST_FMA_PUT, src, none, base[0][right] + 128, hall[0][right], 8, 0, 0, GNI_RC_SUCCESS);
    put(right, GNI_POST_FMA_PUT, src, none, base[0][right] + WLEN - 4, hall[0][right], 8, 0, 0, GNI_RC_TRANSACTION_ERROR);
    put(right, GNI_POST_FMA_PUT, src, none, base[0][right] - 8, hall[0][right], 16, 0, 0, GNI_RC_TRANSACTION_ERROR);
    /* a flag outside the registration: nothing lands */
    put(right, GNI_POST_FMA_PUT_W_SYNCFLAG, src, none, base[0][right] + 64, hall[0][right], 8, base[0][right] + WLEN, 7, GNI_RC_TRANSACTION_ERROR);
    /* a misaligned flag lands as bytes, after its payload */
    put(right, GNI_POST_FMA_PUT_W_SYNCFLAG, src, none, base[0][right] + 128, hall[0][right], 8, base[0][right] + 260, 0x0102030405060708ull, GNI_RC_SUCCESS);
    /* an aligned flag, twice (the pinned path) */
    put(right, GNI_POST_FMA_PUT_W_SYNCFLAG, src, none, base[0][right] + 136, hall[0][right], 8, base[0][right] + 512, 41, GNI_RC_SUCCESS);
    put(right, GNI_POST_FMA_PUT_W_SYNCFLAG, src, none, base[0][right] + 144, hall[0][right], 8, base[0][right] + 512, 42, GNI_RC_SUCCESS);
    dt_barrier();
    for (int i = WLEN - 4; i < WLEN; i++) if (w[0][i] != 0xee) SN_FAIL("a put past the end wrote byte %d", i);
    for (int i = 0; i < 8; i++) if (w[0][i] != 0xee) SN_FAIL("a put before the start wrote byte %d", i);
    for (int i = 64; i < 72; i++) if (w[0][i] != 0xee) SN_FAIL("the payload of a put whose flag lies outside landed (byte %d)", i);
    for (int i = 128; i < 152; i++) if (w[0][i] != 0x11) SN_FAIL("a flagged put's payload did not land (byte %d)", i);
    uint64_t f;
    memcpy(&f, w[0] + 260, 8);
    CHECK_EQ(f, 0x0102030405060708ull);
    memcpy(&f, w[0] + 512, 8);
    CHECK_EQ(f, 42);
    dt_barrier();

    /* ---- the target deregisters a pinned registration and registers it again ---- */
    memset(src, 0x22, 8);
    for (int k = 0; k < 3; k++) put(right, GNI_POST_FMA_PUT, src, none, base[1][right] + 64, hall[1][right], 8, 0, 0, GNI_RC_SUCCESS);
    dt_barrier();
    GNI_OK(GNI_MemDeregister(t.nic, &wh[1]));
    dt_barrier();
    put(right, GNI_POST_FMA_PUT, src, none, base[1][right], hall[1][right], 8, 0, 0, GNI_RC_TRANSACTION_ERROR);
    put(right, GNI_POST_FMA_PUT, src, none, base[1][right], hall[1][right], 8, 0, 0, GNI_RC_TRANSACTION_ERROR);
    dt_barrier();
    gni_mem_handle_t old[64];
    memcpy(old, hall[1], sizeof old);
    wh[1] = dt_reg(&t, w[1], WLEN, NULL, GNI_MEM_READWRITE);
    gnit_exchange_mem(&t, w[1], wh[1], hall[1], base[1]);
    memset(w[1], 0, 64);
    dt_barrier();
    for (int k = 0; k < 3; k++) {
        memset(src, 0x30 + k, 8);
        put(right, GNI_POST_FMA_PUT, src, none, base[1][right] + 8 * k, hall[1][right], 8, 0, 0, GNI_RC_SUCCESS);
        put(right, GNI_POST_FMA_PUT, src, none, base[1][right] + 32, old[right], 8, 0, 0, GNI_RC_TRANSACTION_ERROR);
    }
    dt_barrier();
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 8; i++) if (w[1][8 * k + i] != 0x30 + k) SN_FAIL("re-registered W1: byte %d is %u", 8 * k + i, w[1][8 * k + i]);
    for (int i = 32; i < 40; i++) if (w[1][i] != 0) SN_FAIL("a put through the deregistered handle landed (byte %d)", i);
    dt_barrier();

    /* ---- events through a pinned handle: REMOTE events at the target's dst CQ, a
     * descriptor's own src_cq_hndl, SILENT posts ---- */
    gni_cq_handle_t rcq, scq;
    GNI_OK(GNI_CqCreate(t.nic, 64, 0, GNI_CQ_NOBLOCK, NULL, NULL, &rcq));
    GNI_OK(GNI_CqCreate(t.nic, 64, 0, GNI_CQ_BLOCKING, NULL, NULL, &scq));
    uint8_t *ev = dt_alloc(4096);
    gni_mem_handle_t evh = dt_reg(&t, ev, 4096, rcq, GNI_MEM_READWRITE), evall[64];
    uint64_t evbase[64];
    gnit_exchange_mem(&t, ev, evh, evall, evbase);
    for (int k = 0; k < 2; k++) put(right, GNI_POST_FMA_PUT, src, none, evbase[right], evall[right], 8, 0, 0, GNI_RC_SUCCESS);
    for (int k = 0; k < 3; k++) {
        gni_post_descriptor_t d;
        dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT, src, none, evbase[right] + 8 * k, evall[right], 8);
        GNI_OK(GNI_PostFma(t.eps[right], &d));
        dt_complete(t.cq, &d, GNI_RC_SUCCESS);
        dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, src, none, evbase[right] + 64, evall[right], 8);
        d.src_cq_hndl = scq;
        GNI_OK(GNI_PostFma(t.eps[right], &d));
        dt_complete(scq, &d, GNI_RC_SUCCESS);
        dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_SILENT, src, none, evbase[right] + 72, evall[right], 8);
        GNI_OK(GNI_PostFma(t.eps[right], &d));
    }
    /* REMOTE events into a registration without a dst CQ: none anywhere, the data lands */
    for (int k = 0; k < 4; k++) {
        gni_post_descriptor_t d;
        dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT, src, none, base[3][right] + 8 * k, hall[3][right], 8);
        GNI_OK(GNI_PostFma(t.eps[right], &d));
        dt_complete(t.cq, &d, GNI_RC_SUCCESS);
    }
    dt_barrier();
    for (int i = 0; i < 32; i++) if (w[3][i] != src[i % 8]) SN_FAIL("a REMOTE-event put into W3 did not land (byte %d)", i);
    gni_cq_entry_t e;
    for (int k = 0; k < 3; k++) {
        GNI_OK(GNI_CqGetEvent(rcq, &e));
        CHECK_EQ(GNI_CQ_GET_TYPE(e), GNI_CQ_EVENT_TYPE_POST);
    }
    GNI_EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(rcq, &e));
    GNI_EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(scq, &e));
    GNI_EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(t.cq, &e));
    dt_barrier();
    GNI_OK(GNI_MemDeregister(t.nic, &evh));
    GNI_OK(GNI_CqDestroy(rcq));
    GNI_OK(GNI_CqDestroy(scq));

    /* ---- RDMA puts: the target's pin and our source's ---- */
    {
        uint8_t *rsrc = dt_alloc(WLEN);
        gni_mem_handle_t rsh = dt_reg(&t, rsrc, WLEN, NULL, GNI_MEM_READWRITE);
        memset(w[2], 0, WLEN);
        dt_barrier();
        for (int k = 0; k < 6; k++) {
            gni_post_descriptor_t d;
            for (int i = 0; i < 1024; i++) rsrc[1024 * (k % 2) + i] = pattern(me, k, 2, i);
            dt_desc(&d, GNI_POST_RDMA_PUT, k % 2 ? GNI_CQMODE_LOCAL_EVENT : GNI_CQMODE_GLOBAL_EVENT, rsrc + 1024 * (k % 2), rsh,
                    base[2][right] + 1024 * k, hall[2][right], 1024);
            dt_rdma(&t, right, &d);
            /* a source running past our registration: refused at the post */
            dt_desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, rsrc + WLEN - 512, rsh, base[2][right], hall[2][right], 1024);
            GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostRdma(t.eps[right], &d));
            /* past the target's end: a transaction error, nothing lands */
            dt_desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, rsrc, rsh, base[2][right] + WLEN - 512, hall[2][right], 1024);
            GNI_OK(GNI_PostRdma(t.eps[right], &d));
            dt_complete(t.cq, &d, GNI_RC_TRANSACTION_ERROR);
        }
        /* our source registration goes: refused; a new one of the same memory works */
        GNI_OK(GNI_MemDeregister(t.nic, &rsh));
        gni_post_descriptor_t d;
        dt_desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, rsrc, rsh, base[2][right], hall[2][right], 1024);
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostRdma(t.eps[right], &d));
        rsh = dt_reg(&t, rsrc, WLEN, NULL, GNI_MEM_READWRITE);
        for (int k = 0; k < 2; k++) {
            dt_desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, rsrc, rsh, base[2][right] + 6144, hall[2][right], 1024);
            dt_rdma(&t, right, &d);
        }
        dt_barrier();
        for (int k = 0; k < 6; k++)
            for (int i = 0; i < 1024; i++)
                if (w[2][1024 * k + i] != pattern(left, k, 2, i)) SN_FAIL("RDMA put %d: byte %d is %u", k, i, w[2][1024 * k + i]);
        for (int i = 0; i < 1024; i++) if (w[2][6144 + i] != pattern(left, 4, 2, i)) SN_FAIL("RDMA put after re-registering: byte %d", i);
        for (int i = 7168; i < WLEN; i++) if (w[2][i] != 0) SN_FAIL("an RDMA put past the end wrote byte %d", i);
        dt_barrier();
        GNI_OK(GNI_MemDeregister(t.nic, &rsh));
    }

    /* ---- AMOs through pinned handles (the target's counter, our result buffer) ---- */
    uint64_t *cnt = dt_alloc(4096), *res = dt_alloc(4096), *res_ro = dt_alloc(4096);
    gni_mem_handle_t ch = dt_reg(&t, cnt, 4096, NULL, GNI_MEM_READWRITE), call[64];
    gni_mem_handle_t resh = dt_reg(&t, res, 4096, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t roresh = dt_reg(&t, res_ro, 4096, NULL, GNI_MEM_READ_ONLY);
    uint64_t cbase[64];
    gnit_exchange_mem(&t, cnt, ch, call, cbase);
    for (int k = 0; k < 10; k++) {
        gni_post_descriptor_t d;
        fetch_add_one(right, &res[k], resh, cbase[right], call[right], (uint64_t)k);
        /* not fetching: no local handle at all */
        dt_desc(&d, GNI_POST_AMO, GNI_CQMODE_GLOBAL_EVENT, NULL, none, cbase[right] + 8, call[right], 8);
        d.amo_cmd = GNI_FMA_ATOMIC_ADD;
        d.first_operand = 2;
        GNI_OK(GNI_PostFma(t.eps[right], &d));
        dt_complete(t.cq, &d, GNI_RC_SUCCESS);
        /* 32-bit fetch-add into the second word of a result pair */
        uint32_t *r32 = (uint32_t *)&res[32 + k];
        dt_desc(&d, GNI_POST_AMO, GNI_CQMODE_GLOBAL_EVENT, r32 + 1, resh, cbase[right] + 20, call[right], 4);
        d.amo_cmd = GNI_FMA_ATOMIC2_FIADD_S;
        d.first_operand = 3;
        GNI_OK(GNI_PostFma(t.eps[right], &d));
        dt_complete(t.cq, &d, GNI_RC_SUCCESS);
        if (r32[1] != 3u * (uint32_t)k || r32[0] != 0) SN_FAIL("32-bit fetch-add %d returned %u (and wrote %u beside)", k, r32[1], r32[0]);
        /* past the end of the target's registration, a read-only result buffer, a
         * misaligned counter */
        dt_desc(&d, GNI_POST_AMO, GNI_CQMODE_GLOBAL_EVENT, &res[20], resh, cbase[right] + 4096, call[right], 8);
        d.amo_cmd = GNI_FMA_ATOMIC_FADD;
        d.first_operand = 1;
        GNI_OK(GNI_PostFma(t.eps[right], &d));
        dt_complete(t.cq, &d, GNI_RC_TRANSACTION_ERROR);
        dt_desc(&d, GNI_POST_AMO, GNI_CQMODE_GLOBAL_EVENT, res_ro, roresh, cbase[right], call[right], 8);
        d.amo_cmd = GNI_FMA_ATOMIC_FADD;
        GNI_EXPECT(GNI_RC_PERMISSION_ERROR, GNI_PostFma(t.eps[right], &d));
        dt_desc(&d, GNI_POST_AMO, GNI_CQMODE_GLOBAL_EVENT, &res[20], resh, cbase[right] + 4, call[right], 8);
        d.amo_cmd = GNI_FMA_ATOMIC_FADD;
        GNI_EXPECT(GNI_RC_ALIGNMENT_ERROR, GNI_PostFma(t.eps[right], &d));
    }
    /* our result registration goes: its handle is refused; a new one of the same memory works */
    GNI_OK(GNI_MemDeregister(t.nic, &resh));
    {
        gni_post_descriptor_t d;
        dt_desc(&d, GNI_POST_AMO, GNI_CQMODE_GLOBAL_EVENT, &res[10], resh, cbase[right], call[right], 8);
        d.amo_cmd = GNI_FMA_ATOMIC_FADD;
        d.first_operand = 1;
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(t.eps[right], &d));
        resh = dt_reg(&t, res, 4096, NULL, GNI_MEM_READWRITE);
        for (int k = 10; k < 13; k++) fetch_add_one(right, &res[k], resh, cbase[right], call[right], (uint64_t)k);
    }
    dt_barrier();
    CHECK_EQ(cnt[0], 13);
    CHECK_EQ(cnt[1], 20);
    CHECK_EQ(((uint32_t *)cnt)[5], 30u);
    CHECK_EQ(((uint32_t *)cnt)[4], 0u);
    for (int i = 3; i < 512; i++) if (cnt[i] != 0) SN_FAIL("an AMO wrote word %d of the counters", i);
    for (int i = 0; i < 512; i++) if (res_ro[i] != 0) SN_FAIL("a fetch landed in a read-only registration (word %d)", i);
    dt_barrier();
    GNI_OK(GNI_MemDeregister(t.nic, &ch));
    GNI_OK(GNI_MemDeregister(t.nic, &resh));
    GNI_OK(GNI_MemDeregister(t.nic, &roresh));

    /* ---- read-only: refused every time, even where a writable registration of the same
     * memory is pinned ---- */
    uint8_t *ro = dt_alloc(4096);
    gni_mem_handle_t rwh = dt_reg(&t, ro, 4096, NULL, GNI_MEM_READWRITE), rwall[64];
    gni_mem_handle_t roh = dt_reg(&t, ro, 4096, NULL, GNI_MEM_READ_ONLY), rall[64];
    uint64_t robase[64];
    gnit_exchange_mem(&t, ro, rwh, rwall, robase);
    gnit_exchange_mem(&t, ro, roh, rall, robase);
    memset(src, 0x44, 8);
    for (int k = 0; k < 2; k++) put(right, GNI_POST_FMA_PUT, src, none, robase[right], rwall[right], 8, 0, 0, GNI_RC_SUCCESS);
    memset(src, 0x55, 8);
    for (int k = 0; k < 3; k++) put(right, GNI_POST_FMA_PUT, src, none, robase[right] + 8, rall[right], 8, 0, 0, GNI_RC_TRANSACTION_ERROR);
    dt_barrier();
    for (int i = 0; i < 8; i++) if (ro[i] != 0x44) SN_FAIL("a put through the writable registration did not land (byte %d)", i);
    for (int i = 8; i < 4096; i++) if (ro[i] != 0) SN_FAIL("a put into a read-only registration landed (byte %d)", i);
    dt_barrier();

    GNI_OK(GNI_MemDeregister(t.nic, &roh));
    GNI_OK(GNI_MemDeregister(t.nic, &rwh));
    for (int j = 0; j < NW; j++) GNI_OK(GNI_MemDeregister(t.nic, &wh[j]));
    printf("data_put_pins: rank %d ok\n", me);
    gnit_fini(&t);
    return 0;
}
