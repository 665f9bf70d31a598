/* Remote use of multi-segment registrations and symmetric vMDH handles
 * (decisions in ugni-sys/src/memreg.rs).
 * Segments: three discontiguous regions registered as one; a peer's PUT at offset 0
 * spanning all three lands in order; a GET across a boundary; an AMO at a segment start;
 * a REMOTE event on the registration's dst CQ; an access past the total length and any
 * access after deregistration are transaction errors; as a local handle a segmented one
 * takes offsets, not addresses.  vMDH: every rank's handle for index 2 is the same value and addresses each
 * peer's own registration (no handle exchange); an index with no entry at the target and
 * a deregistered entry are transaction errors; GNI_RebuildMemHndl; QueryAttr. */
#include "data_util.h"

static gnit_t t;

int main(void)
{
    gnit_init(&t, 256);
    int me = t.rank, n = t.size, right = (me + 1) % n, left = (me + n - 1) % n;
    gni_cq_handle_t rcq;
    GNI_OK(GNI_CqCreate(t.nic, 64, 0, GNI_CQ_NOBLOCK, NULL, NULL, &rcq));

    /* ---- multi-segment ---- */
    uint8_t *A = dt_alloc(4096), *B = dt_alloc(8192), *C = dt_alloc(4096);
    gni_mem_segment_t seg[3] = { { (uint64_t)(uintptr_t)A, 4096 }, { (uint64_t)(uintptr_t)B, 8192 }, { (uint64_t)(uintptr_t)C, 4096 } };
    gni_mem_handle_t hseg, hs_all[64];
    CHECK(n <= 64);
    GNI_OK(GNI_MemRegisterSegments(t.nic, seg, 3, rcq, 0, -1, &hseg));
    CHECK(PMI_Allgather(&hseg, hs_all, sizeof(hseg)) == PMI_SUCCESS);
    uint8_t *src = dt_alloc(16384), *dst = dt_alloc(16384 + 64);
    gni_mem_handle_t hsrc = dt_reg(&t, src, 16384, NULL, 0), hdst = dt_reg(&t, dst, 16384 + 64, NULL, 0);
    for (int i = 0; i < 16384; i++) src[i] = (uint8_t)(i * 31 + me);
    gni_post_descriptor_t d;
    dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT, src, hsrc, 0, hs_all[right], 16384);
    dt_fma(&t, right, &d);
    dt_barrier();
    for (int i = 0; i < 16384; i++) {
        uint8_t want = (uint8_t)(i * 31 + left);
        uint8_t got = i < 4096 ? A[i] : i < 12288 ? B[i - 4096] : C[i - 12288];
        if (got != want) SN_FAIL("segmented PUT: offset %d holds %u, expected %u", i, got, want);
    }
    gni_cq_entry_t ev = 0;
    GNI_OK(GNI_CqGetEvent(rcq, &ev));
    CHECK_EQ(GNI_CQ_GET_INST_ID(ev), left);
    /* GET across the A/B boundary */
    dt_desc(&d, GNI_POST_FMA_GET, GNI_CQMODE_GLOBAL_EVENT, dst, hdst, 4000, hs_all[right], 200);
    dt_fma(&t, right, &d);
    for (int i = 0; i < 200; i++) CHECK_EQ(dst[i], (uint8_t)((4000 + i) * 31 + me));
    /* GET across B/C by RDMA */
    dt_desc(&d, GNI_POST_RDMA_GET, GNI_CQMODE_GLOBAL_EVENT, dst, hdst, 12000, hs_all[right], 1000);
    dt_rdma(&t, right, &d);
    for (int i = 0; i < 1000; i++) CHECK_EQ(dst[i], (uint8_t)((12000 + i) * 31 + me));
    dt_barrier();
    /* AMO at the start of B (offset 4096) */
    memset(B, 0, 8);
    dt_barrier();
    dt_desc(&d, GNI_POST_AMO, GNI_CQMODE_GLOBAL_EVENT, dst, hdst, 4096, hs_all[right], 8);
    d.amo_cmd = GNI_FMA_ATOMIC_FADD;
    d.first_operand = 1000 + me;
    dt_fma(&t, right, &d);
    CHECK_EQ(*(uint64_t *)dst, 0);
    dt_barrier();
    CHECK_EQ(*(uint64_t *)B, 1000 + left);
    /* past the total length (16384): transaction error, nothing written */
    dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, src, hsrc, 16384 - 8, hs_all[right], 16);
    GNI_OK(GNI_PostFma(t.eps[right], &d));
    dt_complete(t.cq, &d, GNI_RC_TRANSACTION_ERROR);
    /* as a local handle it takes offsets too (mem_segments_local.c): a virtual address
     * is an offset far past its 16384 bytes */
    dt_desc(&d, GNI_POST_FMA_GET, GNI_CQMODE_GLOBAL_EVENT, A, hseg, 0, hs_all[right], 64);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(t.eps[right], &d));
    int yes = -1;
    GNI_OK(GNI_MemHndlQueryAttr(&hseg, GNI_MEMHNDL_ATTR_READONLY, &yes));
    CHECK_EQ(yes, 0);
    dt_barrier();
    GNI_OK(GNI_MemDeregister(t.nic, &hseg));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemDeregister(t.nic, &hseg));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemHndlQueryAttr(&hseg, GNI_MEMHNDL_ATTR_READONLY, &yes));
    dt_barrier();
    dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, src, hsrc, 0, hs_all[right], 8);
    GNI_OK(GNI_PostFma(t.eps[right], &d));
    dt_complete(t.cq, &d, GNI_RC_TRANSACTION_ERROR);
    while (GNI_CqGetEvent(rcq, &ev) != GNI_RC_NOT_DONE) ;
    dt_barrier();
    if (me == 0) printf("mem_remote: segmented registrations ok\n");

    /* ---- symmetric vMDH ----
     * A vMDH handle names no process: the endpoint's remote_id must be the target's inst_id
     * (here) or the endpoint must have exchanged a datagram with it (data_routing.c). */
    GNI_OK(GNI_EpBind(t.eps[right], t.addrs[right], right));
    uint64_t *V = dt_alloc(4096 * (1 + me));   /* different addresses on every rank */
    V += 512 * me;
    gni_mem_handle_t hv, hv_all[64], h3;
    GNI_OK(GNI_SetMddResources(t.nic, 4));
    GNI_OK(GNI_MemRegister(t.nic, (uint64_t)(uintptr_t)V, 4096, NULL, GNI_MEM_USE_VMDH, 2, &hv));
    CHECK(PMI_Allgather(&hv, hv_all, sizeof(hv)) == PMI_SUCCESS);
    for (int r = 0; r < n; r++)
        if (memcmp(&hv_all[r], &hv, sizeof(hv)) != 0) SN_FAIL("vMDH handle of rank %d differs from ours", r);
    GNI_OK(GNI_MemHndlQueryAttr(&hv, GNI_MEMHNDL_ATTR_VMDH, &yes));
    CHECK_EQ(yes, 1);
    uint64_t mine = (uint64_t)(uintptr_t)V, bases[64];
    CHECK(PMI_Allgather(&mine, bases, sizeof(mine)) == PMI_SUCCESS);
    dt_barrier();
    /* our own handle value, the neighbour's address */
    uint64_t val[4] = { 0xabc0 + me, 1, 2, 3 };
    dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, val, hsrc, bases[right] + 64, hv, 8);
    dt_fma(&t, right, &d);
    dt_barrier();
    CHECK_EQ(V[8], 0xabc0 + left);
    /* vMDH handle as the local handle of a GET */
    dt_desc(&d, GNI_POST_FMA_GET, GNI_CQMODE_GLOBAL_EVENT, V + 16, hv, bases[right] + 64, hv, 8);
    dt_fma(&t, right, &d);
    CHECK_EQ(V[16], 0xabc0 + me);
    /* rebuilt handle for index 3: nobody registered it */
    GNI_OK(GNI_RebuildMemHndl(&hv, 3, &h3));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_RebuildMemHndl(&hv, 1u << 20, &h3 + 0));
    GNI_OK(GNI_RebuildMemHndl(&hv, 3, &h3));
    dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, val, hsrc, bases[right] + 64, h3, 8);
    GNI_OK(GNI_PostFma(t.eps[right], &d));
    dt_complete(t.cq, &d, GNI_RC_TRANSACTION_ERROR);
    dt_barrier();
    GNI_OK(GNI_MemDeregister(t.nic, &hv));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemDeregister(t.nic, &hv));
    dt_barrier();
    dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, val, hsrc, bases[right] + 64, hv, 8);
    GNI_OK(GNI_PostFma(t.eps[right], &d));
    dt_complete(t.cq, &d, GNI_RC_TRANSACTION_ERROR);
    dt_barrier();
    if (me == 0) printf("mem_remote: symmetric vMDH ok\n");
    GNI_OK(GNI_EpBind(t.eps[right], t.addrs[right], GNIT_RID(me, right)));

    /* ---- NIC statistics / BI config ---- */
    uint32_t v = 7;
    GNI_OK(GNI_GetNicStat(t.nic, GNI_STAT_SMSG_RETRANS_COUNT, &v));
    CHECK_EQ(v, 0);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_GetNicStat(t.nic, GNI_STAT_SMSG_RETRANS_COUNT, NULL));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_GetNicStat(NULL, GNI_STAT_SMSG_RETRANS_COUNT, &v));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_ResetNicStat(t.nic, 19));
    gni_bi_desc_t bi;
    GNI_OK(GNI_GetBIConfig(0, &bi));
    CHECK_EQ(bi.current_bw, bi.sys_def_bw);
    GNI_OK(GNI_SetBIConfig(0, 40, 30, 1));
    GNI_OK(GNI_GetBIConfig(0, &bi));
    CHECK(bi.current_bw == 40 && bi.current_aot_bw == 30 && bi.flags == 1 && bi.cle_seqnum == 1);
    GNI_OK(GNI_BISyncWait(0, 100));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_SetBIConfig(5, 40, 30, 1));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_GetBIConfig(0, NULL));

    GNI_OK(GNI_MemDeregister(t.nic, &hsrc));
    GNI_OK(GNI_MemDeregister(t.nic, &hdst));
    GNI_OK(GNI_CqDestroy(rcq));
    gnit_fini(&t);
    printf("mem_remote: rank %d ok\n", me);
    return 0;
}
