/* RDMA PUT/GET of 4 MiB and 64 KiB between ring neighbours (on the network engine both
 * go by libfabric RMA, 64 KiB at unaligned offsets); failures through that path are the
 * usual transaction errors touching nothing: out of bounds, a read-only target, a
 * registration ended at the target after a transfer through it (its old handle fails, a
 * new registration of the same memory works).  LOCAL events carry the EP's local_event
 * data (default: the peer's inst_id), GLOBAL events its remote_event data (default: our
 * inst_id); DUAL events need GNI_CDM_MODE_DUAL_EVENTS (argument "dual": then both events
 * arrive and return the same descriptor); RDMA bandwidth rank 0 -> 1.
 * Usage: data_rdma [dual] */
#include "data_util.h"

#define LEN (4u << 20)
#define MID (64u << 10)

static uint32_t pat(int r, size_t i) { return (uint32_t)(r * 0x9e3779b1u + i * 2654435761u); }

int main(int argc, char **argv)
{
    int dual = argc > 1 && !strcmp(argv[1], "dual");
    gnit_t t;
    gnit_init_mode(&t, 64, GNI_CQ_BLOCKING, dual ? GNI_CDM_MODE_DUAL_EVENTS : 0);
    int n = t.size, me = t.rank, right = (me + 1) % n, left = (me + n - 1) % n;
    uint32_t *win = dt_alloc(LEN + 8192), *src = dt_alloc(LEN), *dst = dt_alloc(LEN + 8192);
    gni_mem_handle_t wmh = dt_reg(&t, win, LEN + 8192, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t smh = dt_reg(&t, src, LEN, NULL, GNI_MEM_READ_ONLY);
    gni_mem_handle_t dmh = dt_reg(&t, dst, LEN + 8192, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t *mh = calloc(n, sizeof(*mh));
    uint64_t *base = calloc(n, sizeof(*base));
    gnit_exchange_mem(&t, win, wmh, mh, base);
    gni_post_descriptor_t d;
    for (size_t i = 0; i < LEN / 4; i++) src[i] = pat(me, i);

    /* DUAL without the CDM mode is refused at post time. */
    dt_desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_DUAL_EVENTS, src, smh, base[right] + 4096, mh[right], LEN);
    if (!dual) {
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostRdma(t.eps[right], &d));
    } else {
        GNI_OK(GNI_PostRdma(t.eps[right], &d));
        gni_cq_entry_t e1 = dt_complete(t.cq, &d, GNI_RC_SUCCESS);
        gni_cq_entry_t e2 = dt_complete(t.cq, &d, GNI_RC_SUCCESS);
        /* Both events are on our CQ: both carry the bound remote_id. */
        CHECK_EQ(GNI_CQ_GET_INST_ID(e1), GNIT_RID(me, right));
        CHECK_EQ(GNI_CQ_GET_INST_ID(e2), GNIT_RID(me, right));
    }

    /* LOCAL event: data = local_event (by default the remote_id the EP was bound with). */
    memset(win, 0xEE, LEN + 8192);
    dt_barrier();
    dt_desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_LOCAL_EVENT, src, smh, base[right] + 4096, mh[right], LEN);
    GNI_OK(GNI_PostRdma(t.eps[right], &d));
    gni_cq_entry_t ev = dt_complete(t.cq, &d, GNI_RC_SUCCESS);
    CHECK_EQ(GNI_CQ_GET_INST_ID(ev), GNIT_RID(me, right));
    dt_barrier();
    for (size_t i = 0; i < LEN / 4; i++) if (win[1024 + i] != pat(left, i)) SN_FAIL("rdma put word %zu wrong", i);
    for (size_t i = 0; i < 1024; i++) if (win[i] != 0xEEEEEEEEu || win[1024 + LEN / 4 + i] != 0xEEEEEEEEu) SN_FAIL("guard %zu", i);

    /* GLOBAL event on a GET: data = local_event too (every event on the initiator's CQ);
     * the data is in place at the event. */
    dt_barrier();
    memset(dst, 0, LEN + 8192);
    dt_desc(&d, GNI_POST_RDMA_GET, GNI_CQMODE_GLOBAL_EVENT, dst + 1, dmh, base[right] + 4096, mh[right], LEN);
    GNI_OK(GNI_PostRdma(t.eps[right], &d));
    ev = dt_complete(t.cq, &d, GNI_RC_SUCCESS);
    CHECK_EQ(GNI_CQ_GET_INST_ID(ev), GNIT_RID(me, right));
    for (size_t i = 0; i < LEN / 4; i++) if (dst[1 + i] != pat(me, i)) SN_FAIL("rdma get word %zu wrong", i);
    CHECK(dst[0] == 0 && dst[1 + LEN / 4] == 0);

    /* 64 KiB PUT and GET at unaligned offsets; guards intact (once every GET above is done). */
    dt_barrier();
    memset(win, 0xEE, LEN + 8192);
    dt_barrier();
    dt_desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, src, smh, base[right] + 4100, mh[right], MID);
    dt_rdma(&t, right, &d);
    dt_barrier();
    for (size_t i = 0; i < MID / 4; i++) if (win[1025 + i] != pat(left, i)) SN_FAIL("64 KiB put word %zu wrong", i);
    CHECK(win[1024] == 0xEEEEEEEEu && win[1025 + MID / 4] == 0xEEEEEEEEu);
    memset(dst, 0, LEN + 8192);
    dt_desc(&d, GNI_POST_RDMA_GET, GNI_CQMODE_GLOBAL_EVENT, dst + 3, dmh, base[right] + 4100, mh[right], MID);
    dt_rdma(&t, right, &d);
    for (size_t i = 0; i < MID / 4; i++) if (dst[3 + i] != pat(me, i)) SN_FAIL("64 KiB get word %zu wrong", i);
    CHECK(dst[2] == 0 && dst[3 + MID / 4] == 0);
    /* 4 bytes past the end: transaction error, nothing written. */
    dt_desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, src, smh, base[right] + LEN + 8192 - MID + 4, mh[right], MID);
    GNI_OK(GNI_PostRdma(t.eps[right], &d));
    dt_complete(t.cq, &d, GNI_RC_TRANSACTION_ERROR);
    dt_barrier();
    for (size_t i = (LEN + 8192 - MID) / 4; i < (LEN + 8192) / 4; i++) if (win[i] != 0xEEEEEEEEu) SN_FAIL("out-of-bounds put wrote word %zu", i);

    /* A read-only target: PUT fails and writes nothing, GET works. */
    gni_mem_handle_t *romh = calloc(n, sizeof(*romh));
    uint64_t *robase = calloc(n, sizeof(*robase));
    gnit_exchange_mem(&t, src, smh, romh, robase);
    dt_desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, win, wmh, robase[right], romh[right], MID);
    GNI_OK(GNI_PostRdma(t.eps[right], &d));
    dt_complete(t.cq, &d, GNI_RC_TRANSACTION_ERROR);
    dt_desc(&d, GNI_POST_RDMA_GET, GNI_CQMODE_GLOBAL_EVENT, dst, dmh, robase[right] + 4096, romh[right], MID);
    dt_rdma(&t, right, &d);
    for (size_t i = 0; i < MID / 4; i++) if (dst[i] != pat(right, 1024 + i)) SN_FAIL("read-only get word %zu wrong", i);
    dt_barrier();
    for (size_t i = 0; i < LEN / 4; i++) if (src[i] != pat(me, i)) SN_FAIL("put into read-only memory wrote word %zu", i);

    /* A registration ended at the target after PUT and GET through it: its old handle
     * gives transaction errors and writes nothing; a new one on the same memory works. */
    uint32_t *sb = dt_alloc(MID + 4096);
    gni_mem_handle_t sbh = dt_reg(&t, sb, MID + 4096, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t *sbmh = calloc(n, sizeof(*sbmh));
    uint64_t *sbase = calloc(n, sizeof(*sbase));
    gnit_exchange_mem(&t, sb, sbh, sbmh, sbase);
    dt_desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, src, smh, sbase[right], sbmh[right], MID);
    dt_rdma(&t, right, &d);
    dt_desc(&d, GNI_POST_RDMA_GET, GNI_CQMODE_GLOBAL_EVENT, dst, dmh, sbase[right], sbmh[right], MID);
    dt_rdma(&t, right, &d);
    dt_barrier();
    GNI_OK(GNI_MemDeregister(t.nic, &sbh));
    memset(sb, 0x55, MID + 4096);
    dt_barrier();
    dt_desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, src, smh, sbase[right], sbmh[right], MID);
    GNI_OK(GNI_PostRdma(t.eps[right], &d));
    dt_complete(t.cq, &d, GNI_RC_TRANSACTION_ERROR);
    dt_desc(&d, GNI_POST_RDMA_GET, GNI_CQMODE_GLOBAL_EVENT, dst, dmh, sbase[right], sbmh[right], MID);
    GNI_OK(GNI_PostRdma(t.eps[right], &d));
    dt_complete(t.cq, &d, GNI_RC_TRANSACTION_ERROR);
    dt_barrier();
    for (size_t i = 0; i < (MID + 4096) / 4; i++) if (sb[i] != 0x55555555u) SN_FAIL("put through an ended registration wrote word %zu", i);
    sbh = dt_reg(&t, sb, MID + 4096, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t old = sbmh[right];
    gnit_exchange_mem(&t, sb, sbh, sbmh, sbase);
    CHECK(memcmp(&old, &sbmh[right], sizeof(old)) != 0);
    dt_desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, src, smh, sbase[right] + 4096, sbmh[right], MID);
    dt_rdma(&t, right, &d);
    dt_barrier();
    for (size_t i = 0; i < MID / 4; i++) if (sb[1024 + i] != pat(left, i)) SN_FAIL("put through a new registration: word %zu wrong", i);
    dt_barrier();
    GNI_OK(GNI_MemDeregister(t.nic, &sbh));

    /* EpSetEventData: both LOCAL and GLOBAL events at the initiator carry its local value. */
    GNI_OK(GNI_EpSetEventData(t.eps[right], 777, 888));
    dt_desc(&d, GNI_POST_RDMA_GET, GNI_CQMODE_LOCAL_EVENT, dst, dmh, base[right], mh[right], 64);
    dt_rdma(&t, right, &d);
    dt_desc(&d, GNI_POST_RDMA_GET, GNI_CQMODE_GLOBAL_EVENT, dst, dmh, base[right], mh[right], 64);
    GNI_OK(GNI_PostRdma(t.eps[right], &d));
    ev = dt_complete(t.cq, &d, GNI_RC_SUCCESS);
    CHECK_EQ(GNI_CQ_GET_INST_ID(ev), 777);
    dt_desc(&d, GNI_POST_RDMA_GET, GNI_CQMODE_LOCAL_EVENT, dst, dmh, base[right], mh[right], 64);
    GNI_OK(GNI_PostRdma(t.eps[right], &d));
    ev = dt_complete(t.cq, &d, GNI_RC_SUCCESS);
    CHECK_EQ(GNI_CQ_GET_INST_ID(ev), 777);

    /* SILENT: no event at all. */
    dt_desc(&d, GNI_POST_RDMA_GET, GNI_CQMODE_SILENT, dst, dmh, base[right], mh[right], 64);
    GNI_OK(GNI_PostRdma(t.eps[right], &d));
    GNI_EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(t.cq, &ev));
    dt_barrier();

    /* Bandwidth, 4 MiB RDMA PUTs rank 0 -> 1. */
    if (me == 0 && n > 1 && !dual) {
        int iters = 50;
        double t0 = dt_now();
        for (int i = 0; i < iters; i++) {
            dt_desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, src, smh, base[1], mh[1], LEN);
            dt_rdma(&t, 1, &d);
        }
        double s = dt_now() - t0;
        printf("data_rdma: RDMA PUT 4 MiB: %.2f GB/s\n", (double)LEN * iters / s / 1e9);
    }
    dt_barrier();
    GNI_OK(GNI_MemDeregister(t.nic, &wmh));
    GNI_OK(GNI_MemDeregister(t.nic, &smh));
    GNI_OK(GNI_MemDeregister(t.nic, &dmh));
    gnit_fini(&t);
    printf("data_rdma: rank %d ok\n", me);
    return 0;
}
