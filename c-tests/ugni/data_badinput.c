/* Bad input to the data-movement calls.  Post-time errors (nothing moves, no event):
 * NULL/forged EP and descriptor, unbound EP, wrong type per call, unknown amo_cmd and
 * cq_mode bits, misaligned and zero-length GET/AMO, lengths past the limits, missing,
 * stale, too small and read-only local handles.  Transaction errors (post succeeds, the
 * event says TRANSACTION_ERROR, GetCompleted fills desc->status, CqErrorStr says what
 * happened, the target memory is untouched): out of bounds, read-only, deregistered and
 * forged remote handles, CQ write to a registration without a CQ. */
#include "data_util.h"

#define SZ 8192
#define GUARD 0xA5

static gnit_t t;

/* Post d and expect a transaction error whose text contains `what`. */
static void txerr(int peer, gni_post_descriptor_t *d, int rdma, const char *what)
{
    if (rdma) GNI_OK(GNI_PostRdma(t.eps[peer], d));
    else if (d->type == GNI_POST_CQWRITE) GNI_OK(GNI_PostCqWrite(t.eps[peer], d));
    else GNI_OK(GNI_PostFma(t.eps[peer], d));
    gni_cq_entry_t ev = dt_complete(t.cq, d, GNI_RC_TRANSACTION_ERROR);
    CHECK(!GNI_CQ_STATUS_OK(ev));
    CHECK(d->status != 0);
    char buf[256];
    memset(buf, 0, sizeof(buf));
    GNI_OK(GNI_CqErrorStr(ev, buf, sizeof(buf)));
    if (!strstr(buf, what)) SN_FAIL("CqErrorStr says \"%s\", expected it to mention \"%s\"", buf, what);
}

int main(void)
{
    gnit_init(&t, 64);
    int n = t.size, me = t.rank, right = (me + 1) % n;
    uint8_t *rw = dt_alloc(SZ), *ro = dt_alloc(SZ), *gone = dt_alloc(SZ), *loc = dt_alloc(SZ), *lro = dt_alloc(SZ);
    memset(rw, GUARD, SZ); memset(ro, GUARD, SZ); memset(gone, GUARD, SZ);
    gni_mem_handle_t rwh = dt_reg(&t, rw, SZ, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t roh = dt_reg(&t, ro, SZ, NULL, GNI_MEM_READ_ONLY);
    gni_mem_handle_t goneh = dt_reg(&t, gone, SZ, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t lh = dt_reg(&t, loc, SZ, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t lroh = dt_reg(&t, lro, SZ, NULL, GNI_MEM_READ_ONLY);
    gni_mem_handle_t *rwm = calloc(n, sizeof(*rwm)), *rom = calloc(n, sizeof(*rom)), *gom = calloc(n, sizeof(*gom));
    uint64_t *rwb = calloc(n, 8), *rob = calloc(n, 8), *gob = calloc(n, 8);
    gnit_exchange_mem(&t, rw, rwh, rwm, rwb);
    gnit_exchange_mem(&t, ro, roh, rom, rob);
    gnit_exchange_mem(&t, gone, goneh, gom, gob);
    GNI_OK(GNI_MemDeregister(t.nic, &goneh));
    dt_barrier();
    gni_post_descriptor_t d;
    gni_cq_entry_t ev;
    gni_mem_handle_t none = { 0, 0 };
    uint64_t R = rwb[right];
    gni_mem_handle_t RH = rwm[right];

    /* ---- post-time errors ---- */
    dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, loc, lh, R, RH, 8);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(NULL, &d));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma((gni_ep_handle_t)(uintptr_t)0x1234, &d));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma((gni_ep_handle_t)t.cq, &d));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(t.eps[right], NULL));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostRdma(NULL, &d));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostRdma(t.eps[right], NULL));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostCqWrite(NULL, &d));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostCqWrite(t.eps[right], NULL));
    gni_ep_handle_t unbound;
    GNI_OK(GNI_EpCreate(t.nic, t.cq, &unbound));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(unbound, &d));
    d.type = GNI_POST_RDMA_PUT;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostRdma(unbound, &d));
    GNI_OK(GNI_EpDestroy(unbound));
    /* wrong type for the call */
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(t.eps[right], &d));
    d.type = GNI_POST_FMA_PUT;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostRdma(t.eps[right], &d));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostCqWrite(t.eps[right], &d));
    d.type = GNI_POST_CQWRITE;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(t.eps[right], &d));
    d.type = GNI_POST_CE;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(t.eps[right], &d));
    d.type = (gni_post_type_t)99;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(t.eps[right], &d));
    d.type = GNI_POST_FMA_PUT;
    d.cq_mode = 0x8;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(t.eps[right], &d));
    d.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
    d.src_cq_hndl = (gni_cq_handle_t)(uintptr_t)0x99;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(t.eps[right], &d));
    d.src_cq_hndl = NULL;
    /* lengths */
    d.length = (1ull << 30) + 1;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(t.eps[right], &d));
    dt_desc(&d, GNI_POST_RDMA_GET, GNI_CQMODE_GLOBAL_EVENT, loc, lh, R, RH, 1ull << 32);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostRdma(t.eps[right], &d));
    /* GET: alignment, zero length, local handle */
    dt_desc(&d, GNI_POST_FMA_GET, GNI_CQMODE_GLOBAL_EVENT, loc, lh, R, RH, 0);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(t.eps[right], &d));
    d.length = 6;
    GNI_EXPECT(GNI_RC_ALIGNMENT_ERROR, GNI_PostFma(t.eps[right], &d));
    d.length = 8; d.local_addr += 1;
    GNI_EXPECT(GNI_RC_ALIGNMENT_ERROR, GNI_PostFma(t.eps[right], &d));
    d.local_addr -= 1; d.remote_addr += 2;
    GNI_EXPECT(GNI_RC_ALIGNMENT_ERROR, GNI_PostFma(t.eps[right], &d));
    d.type = GNI_POST_RDMA_GET;
    GNI_EXPECT(GNI_RC_ALIGNMENT_ERROR, GNI_PostRdma(t.eps[right], &d));
    d.type = GNI_POST_FMA_GET; d.remote_addr -= 2;
    d.local_mem_hndl = none;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(t.eps[right], &d));
    d.local_mem_hndl = goneh;                       /* deregistered: stale */
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(t.eps[right], &d));
    d.local_mem_hndl = lh; d.local_addr = (uint64_t)(uintptr_t)(loc + SZ - 4);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(t.eps[right], &d));   /* local range too small */
    d.local_mem_hndl = lroh; d.local_addr = (uint64_t)(uintptr_t)lro;
    GNI_EXPECT(GNI_RC_PERMISSION_ERROR, GNI_PostFma(t.eps[right], &d)); /* GET into read-only */
    /* AMO: alignment, zero/odd length, command, local handle of fetching AMOs */
    dt_desc(&d, GNI_POST_AMO, GNI_CQMODE_GLOBAL_EVENT, loc, lh, R + 4, RH, 8);
    d.amo_cmd = GNI_FMA_ATOMIC_FADD;
    GNI_EXPECT(GNI_RC_ALIGNMENT_ERROR, GNI_PostFma(t.eps[right], &d));
    d.remote_addr = R; d.local_addr += 4;
    GNI_EXPECT(GNI_RC_ALIGNMENT_ERROR, GNI_PostFma(t.eps[right], &d));
    d.local_addr -= 4; d.length = 0;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(t.eps[right], &d));
    d.length = 4;
    GNI_EXPECT(GNI_RC_ALIGNMENT_ERROR, GNI_PostFma(t.eps[right], &d));
    d.length = 16;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(t.eps[right], &d));
    d.length = 8; d.amo_cmd = 0x7;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(t.eps[right], &d));
    d.amo_cmd = GNI_FMA_ATOMIC_FADD; d.local_mem_hndl = none;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(t.eps[right], &d));
    d.amo_cmd = GNI_FMA_ATOMIC2_FIADD_S; d.local_mem_hndl = lh; d.length = 4; d.remote_addr = R + 2;
    GNI_EXPECT(GNI_RC_ALIGNMENT_ERROR, GNI_PostFma(t.eps[right], &d));
    d.remote_addr = R + 4096 + 4; d.first_operand = 0;   /* 4-aligned is fine for _S (adds 0) */
    dt_fma(&t, right, &d);
    /* zero-length PUT is fine; PUT needs no local handle; RDMA needs one */
    dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, loc, none, R + 100, RH, 0);
    dt_fma(&t, right, &d);
    dt_desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, loc, none, R + 100, RH, 8);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostRdma(t.eps[right], &d));
    GNI_EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(t.cq, &ev));   /* no event from any refused post */

    /* ---- transaction errors: post succeeds, the event reports, nothing is touched ---- */
    memset(loc, 0x11, SZ);
    dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, loc, lh, R + SZ - 8, RH, 16);
    txerr(right, &d, 0, "outside");
    dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_SILENT, loc, lh, R - 8, RH, 16);    /* SILENT still reports */
    txerr(right, &d, 0, "outside");
    dt_desc(&d, GNI_POST_RDMA_GET, GNI_CQMODE_GLOBAL_EVENT, loc, lh, R + SZ, RH, 4);
    txerr(right, &d, 1, "outside");
    dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, loc, lh, rob[right], rom[right], 64);
    txerr(right, &d, 0, "READ_ONLY");
    dt_desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, loc, lh, rob[right], rom[right], 64);
    txerr(right, &d, 1, "READ_ONLY");
    /* RDMA puts to another machine complete asynchronously (short ones as requests, 4 KiB
     * and up as RMA): their errors still arrive as the post's event, nothing written. */
    dt_desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, loc, lh, R + SZ - 8, RH, 16);
    txerr(right, &d, 1, "outside");
    dt_desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, loc, lh, R + 4096 + 8, RH, 4096);
    txerr(right, &d, 1, "outside");
    dt_desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, loc, lh, gob[right], gom[right], 64);
    txerr(right, &d, 1, "deregistered");
    dt_desc(&d, GNI_POST_AMO, GNI_CQMODE_GLOBAL_EVENT, loc, lh, rob[right], rom[right], 8);
    d.amo_cmd = GNI_FMA_ATOMIC_ADD; d.first_operand = 1;
    txerr(right, &d, 0, "READ_ONLY");
    dt_desc(&d, GNI_POST_FMA_PUT_W_SYNCFLAG, GNI_CQMODE_GLOBAL_EVENT, loc, lh, R, RH, 64);
    d.sync_flag_addr = R + SZ; d.sync_flag_value = 1;              /* flag outside: payload not written either */
    txerr(right, &d, 0, "outside");
    dt_desc(&d, GNI_POST_FMA_GET, GNI_CQMODE_GLOBAL_EVENT, loc, lh, rob[right], rom[right], 64);
    dt_fma(&t, right, &d);                                         /* reading read-only memory is fine */
    CHECK_EQ(loc[0], GUARD);
    memset(loc, 0x11, SZ);
    dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, loc, lh, gob[right], gom[right], 64);
    txerr(right, &d, 0, "deregistered");
    dt_desc(&d, GNI_POST_FMA_GET, GNI_CQMODE_GLOBAL_EVENT, loc, lh, gob[right], gom[right], 64);
    txerr(right, &d, 0, "deregistered");
    gni_mem_handle_t forged = RH;
    forged.qword2 ^= 0x100000000ull << 4;                          /* another generation */
    dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, loc, lh, R, forged, 64);
    txerr(right, &d, 0, "invalid");
    dt_desc(&d, GNI_POST_CQWRITE, GNI_CQMODE_GLOBAL_EVENT, NULL, none, 0, RH, 0);
    d.cqwrite_value = 42;                                          /* RH has no dst CQ */
    txerr(right, &d, 0, "not possible");
    CHECK_EQ(loc[0], 0x11);                                        /* failed GET wrote nothing */
    GNI_EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(t.cq, &ev));
    dt_barrier();

    /* Our buffers, targets of the neighbour's failed operations, are untouched. */
    for (int i = 0; i < SZ; i++) {
        if (rw[i] != GUARD && !(i >= 4096 + 4 && i < 4096 + 8)) SN_FAIL("rw byte %d changed to %#x", i, rw[i]);
        if (ro[i] != GUARD) SN_FAIL("read-only byte %d changed", i);
        if (gone[i] != GUARD) SN_FAIL("deregistered byte %d changed", i);
    }
    GNI_OK(GNI_MemDeregister(t.nic, &rwh));
    GNI_OK(GNI_MemDeregister(t.nic, &roh));
    GNI_OK(GNI_MemDeregister(t.nic, &lh));
    GNI_OK(GNI_MemDeregister(t.nic, &lroh));
    gnit_fini(&t);
    printf("data_badinput: rank %d ok\n", me);
    return 0;
}
