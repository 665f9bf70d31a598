/* uGNI and DMAPP in one program, as on Cray systems where DMAPP sits on uGNI:
 *  1. a DMAPP segment descriptor's memory handle (the symmetric heap) is used by
 *     GNI_PostFma to put into another PE's heap;
 *  2. a uGNI registration (GNI_MemRegister), passed to the target's neighbour by
 *     PMI_Allgather, is used as a DMAPP descriptor by dmapp_put and dmapp_get;
 *  3. DMAPP AMOs and uGNI AMOs on one word are atomic with respect to each other.
 * Both libraries share one fabric in the process (one page map, one PMI
 * connection), and both encode gni_mem_handle_t the same way. */
#include "dmtest.h"
#include "../ugni/gnitest.h"

#define N_AMO 2000

/* One FMA transaction on ep, waited for and reaped. */
static void post_and_reap(gnit_t *t, gni_ep_handle_t ep, gni_post_descriptor_t *d)
{
    gni_post_descriptor_t *done = NULL;
    GNI_OK(GNI_PostFma(ep, d));
    gni_cq_entry_t ev = gnit_wait(t->cq, GNI_RC_SUCCESS);
    CHECK_EQ(GNI_CQ_GET_TYPE(ev), GNI_CQ_EVENT_TYPE_POST);
    GNI_OK(GNI_GetCompleted(t->cq, ev, &done));
    CHECK(done == d);
}

int main(void)
{
    gnit_t t;
    dm_init();
    gnit_init(&t, 64);
    CHECK_EQ(t.rank, me);
    CHECK_EQ(t.size, npes);
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;

    int64_t *heap = dmapp_sheap_malloc(4096);
    int64_t *counter = dmapp_sheap_malloc(64);
    CHECK(heap && counter);
    memset(heap, 0, 4096);
    memset(counter, 0, 64);

    /* Every PE's heap descriptor, byte-copied (descriptors stay valid elsewhere). */
    dmapp_seg_desc_t *segs = calloc(npes, sizeof(*segs));
    CHECK(segs);
    CHECK_EQ(PMI_Allgather(&job.sheap_seg, segs, sizeof(dmapp_seg_desc_t)), PMI_SUCCESS);
    uint64_t heap_off = (uint64_t)((char *)heap - (char *)job.sheap_seg.addr);
    uint64_t counter_off = (uint64_t)((char *)counter - (char *)job.sheap_seg.addr);

    /* 1. uGNI FMA PUT into the right neighbour's DMAPP heap. */
    int64_t src[8];
    for (int i = 0; i < 8; i++) src[i] = me * 100 + i;
    gni_post_descriptor_t d;
    memset(&d, 0, sizeof(d));
    d.type = GNI_POST_FMA_PUT;
    d.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
    d.dlvr_mode = GNI_DLVMODE_PERFORMANCE;
    d.local_addr = (uint64_t)(uintptr_t)src;
    d.remote_addr = (uint64_t)(uintptr_t)segs[right].addr + heap_off;
    d.remote_mem_hndl = segs[right].memhndl;
    d.length = sizeof(src);
    post_and_reap(&t, t.eps[right], &d);
    barrier();
    for (int i = 0; i < 8; i++) CHECK_EQ(heap[i], left * 100 + i);
    CHECK_EQ(heap[8], 0); /* nothing past the put */

    /* 2. A uGNI registration as a DMAPP descriptor. */
    int64_t *priv = aligned_alloc(4096, 4096);
    CHECK(priv);
    memset(priv, 0, 4096);
    gni_mem_handle_t mh;
    GNI_OK(GNI_MemRegister(t.nic, (uint64_t)(uintptr_t)priv, 4096, NULL, GNI_MEM_READWRITE, -1, &mh));
    gni_mem_handle_t *handles = calloc(npes, sizeof(*handles));
    uint64_t *bases = calloc(npes, sizeof(*bases));
    CHECK(handles && bases);
    gnit_exchange_mem(&t, priv, mh, handles, bases);
    dmapp_seg_desc_t seg;
    memset(&seg, 0, sizeof(seg));
    seg.addr = (void *)(uintptr_t)bases[right];
    seg.len = 4096;
    seg.memhndl = handles[right];
    int64_t val[4] = { me + 1, me + 2, me + 3, me + 4 };
    OK(dmapp_put((char *)seg.addr + 64, &seg, right, val, 4, DMAPP_QW));
    int64_t back[4] = { 0 };
    OK(dmapp_get(back, (char *)seg.addr + 64, &seg, right, 4, DMAPP_QW));
    for (int i = 0; i < 4; i++) CHECK_EQ(back[i], me + 1 + i);
    barrier();
    for (int i = 0; i < 4; i++) CHECK_EQ(priv[8 + i], left + 1 + i);
    CHECK_EQ(priv[7], 0);
    CHECK_EQ(priv[12], 0);

    /* uGNI's other handle kinds are refused locally (dmapp.h): a two-segment
     * registration and a symmetric vMDH one, over the same pages. */
    gni_mem_segment_t two[2] = { { (uint64_t)(uintptr_t)priv, 2048 }, { (uint64_t)(uintptr_t)priv + 2048, 2048 } };
    gni_mem_handle_t segmh, vmdh;
    GNI_OK(GNI_MemRegisterSegments(t.nic, two, 2, NULL, GNI_MEM_READWRITE, -1, &segmh));
    GNI_OK(GNI_SetMddResources(t.nic, 4));
    GNI_OK(GNI_MemRegister(t.nic, (uint64_t)(uintptr_t)priv, 4096, NULL, GNI_MEM_READWRITE | GNI_MEM_USE_VMDH, 0, &vmdh));
    dmapp_seg_desc_t other = seg;
    other.addr = priv;
    int64_t keep = priv[0];
    other.memhndl = segmh;
    RC_EQ(dmapp_put(priv, &other, me, val, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_get(back, priv, &other, me, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    other.memhndl = vmdh;
    RC_EQ(dmapp_put(priv, &other, me, val, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    CHECK_EQ(priv[0], keep);
    GNI_OK(GNI_MemDeregister(t.nic, &segmh));
    GNI_OK(GNI_MemDeregister(t.nic, &vmdh));

    /* 3. DMAPP and uGNI AMOs interleaved on rank 0's counter. */
    memset(&d, 0, sizeof(d));
    d.type = GNI_POST_AMO;
    d.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
    d.remote_addr = (uint64_t)(uintptr_t)segs[0].addr + counter_off;
    d.remote_mem_hndl = segs[0].memhndl;
    d.length = 8;
    d.amo_cmd = GNI_FMA_ATOMIC_ADD;
    d.first_operand = 1;
    for (int i = 0; i < N_AMO; i++) {
        OK(dmapp_aadd_qw(counter, &job.sheap_seg, 0, 1));
        post_and_reap(&t, t.eps[0], &d);
    }
    barrier();
    if (me == 0) CHECK_EQ(counter[0], (int64_t)2 * N_AMO * npes);

    GNI_OK(GNI_MemDeregister(t.nic, &mh));
    barrier();
    OK(dmapp_finalize());
    printf("mixed_gni: pe %d of %d ok\n", me, npes);
    gnit_fini(&t);
    free(priv);
    free(segs);
    free(handles);
    free(bases);
    return 0;
}
