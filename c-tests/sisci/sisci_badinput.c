/* Bad input: NULL, stale, forged and wrong-kind handles, illegal flags, bad adapter
 * numbers and node ids, out-of-range and overflowing offsets and sizes, misaligned
 * addresses, calls in the wrong state, NULL error pointers.  Each refused call must give
 * the documented code and leave everything as it was (checked by using the objects
 * afterwards).  One process; runs with or without a launcher. */
#include "stest.h"

static sci_callback_action_t never(void *a, sci_local_segment_t s, sci_segment_cb_reason_t r, unsigned n, unsigned ad, sci_error_t e)
{
    (void)a; (void)s; (void)r; (void)n; (void)ad; (void)e;
    SN_FAIL("a refused call registered a callback");
}

int main(void)
{
    OK(SCIInitialize(0, &err));
    unsigned int me;
    OK(SCIGetLocalNodeId(0, &me, 0, &err));
    sci_desc_t sd, gone;
    OK(SCIOpen(&sd, 0, &err));
    OK(SCIOpen(&gone, 0, &err));
    OK(SCIClose(gone, 0, &err));

    /* A working set of objects to abuse. */
    sci_local_segment_t ls;
    sci_remote_segment_t rs;
    sci_map_t lm, rm;
    sci_sequence_t seq;
    sci_dma_queue_t dq;
    sci_local_interrupt_t li;
    sci_remote_interrupt_t ri;
    sci_local_data_interrupt_t ld;
    sci_remote_data_interrupt_t rd;
    unsigned int ino = 70, dno = 71;
    OK(SCICreateSegment(sd, &ls, 60, 8192, NULL, NULL, 0, &err));
    OK(SCIPrepareSegment(ls, 0, 0, &err));
    OK(SCISetSegmentAvailable(ls, 0, 0, &err));
    volatile uint64_t *l = SCIMapLocalSegment(ls, &lm, 0, 8192, NULL, 0, &err);
    CHECK(err == SCI_ERR_OK);
    OK(SCIConnectSegment(sd, &rs, me, 60, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err));
    volatile uint64_t *r = SCIMapRemoteSegment(rs, &rm, 0, 8192, NULL, 0, &err);
    CHECK(err == SCI_ERR_OK);
    OK(SCICreateMapSequence(rm, &seq, 0, &err));
    OK(SCICreateDMAQueue(sd, &dq, 0, 4, 0, &err));
    OK(SCICreateInterrupt(sd, &li, 0, &ino, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));
    OK(SCIConnectInterrupt(sd, &ri, me, 0, ino, SCI_INFINITE_TIMEOUT, 0, &err));
    OK(SCICreateDataInterrupt(sd, &ld, 0, &dno, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));
    OK(SCIConnectDataInterrupt(sd, &rd, me, 0, dno, SCI_INFINITE_TIMEOUT, 0, &err));
    l[0] = 0x600d;

    /* ---- handles: NULL, forged, of another kind, stale ---- */
    uint64_t junk[16] = { 0 };
    void *forged[] = { NULL, (void *)1, (void *)junk, (void *)(uintptr_t)0x5C1000000001ull, (void *)(uintptr_t)0xffffffffffffffffull };
    for (unsigned i = 0; i < sizeof forged / sizeof forged[0]; i++) {
        void *h = forged[i];
        sci_local_segment_t s2;
        FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCICreateSegment((sci_desc_t)h, &s2, 61, 64, NULL, NULL, 0, &err));
        FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIPrepareSegment((sci_local_segment_t)h, 0, 0, &err));
        FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIRemoveSegment((sci_local_segment_t)h, 0, &err));
        FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIDisconnectSegment((sci_remote_segment_t)h, 0, &err));
        FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIUnmapSegment((sci_map_t)h, 0, &err));
        FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIRemoveSequence((sci_sequence_t)h, 0, &err));
        FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIRemoveDMAQueue((sci_dma_queue_t)h, 0, &err));
        FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCITriggerInterrupt((sci_remote_interrupt_t)h, 0, &err));
        FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIWaitForInterrupt((sci_local_interrupt_t)h, 0, 0, &err));
        FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCITriggerDataInterrupt((sci_remote_data_interrupt_t)h, junk, 8, 0, &err));
        FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIMemCpy(NULL, junk, (sci_map_t)h, 0, 8, 0, &err));
        FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIStartDmaTransfer((sci_dma_queue_t)h, ls, rs, 0, 8, 0, NULL, NULL, 0, &err));
        CHECK_EQ(SCIGetLocalSegmentSize((sci_local_segment_t)h), 0);
        CHECK_EQ(SCIGetRemoteSegmentSize((sci_remote_segment_t)h), 0);
        CHECK(SCIGetMapPointer((sci_map_t)h) == NULL);
        CHECK_EQ(SCIGetMapPhysAddr((sci_map_t)h), 0);
        CHECK_EQ(SCIDMAQueueState((sci_dma_queue_t)h), SCI_DMAQUEUE_ERROR);
        SCIFlush((sci_sequence_t)h, 0);
        SCIStoreBarrier((sci_sequence_t)h, 0);
    }
    /* Every kind refuses every other kind's handle. */
    void *kinds[] = { sd, ls, rs, lm, seq, dq, li, ri, ld, rd };
    for (unsigned i = 0; i < 10; i++) {
        if (i != 1) FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIPrepareSegment((sci_local_segment_t)kinds[i], 0, 0, &err));
        if (i != 2) CHECK_EQ(SCIGetRemoteSegmentSize((sci_remote_segment_t)kinds[i]), 0);
        if (i != 3) CHECK(SCIGetMapPointer((sci_map_t)kinds[i]) == NULL);
        if (i != 4) FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCICheckSequence((sci_sequence_t)kinds[i], 0, &err));
        if (i != 5) FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIAbortDMAQueue((sci_dma_queue_t)kinds[i], 0, &err));
        if (i != 6) CHECK_EQ(SCIGetLocalInterruptNo((sci_local_interrupt_t)kinds[i]), 0);
        if (i != 7) FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCITriggerInterrupt((sci_remote_interrupt_t)kinds[i], 0, &err));
        if (i != 8) FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIRemoveDataInterrupt((sci_local_data_interrupt_t)kinds[i], 0, &err));
        if (i != 9) FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIDisconnectDataInterrupt((sci_remote_data_interrupt_t)kinds[i], 0, &err));
        if (i != 0) FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIClose((sci_desc_t)kinds[i], 0, &err));
    }
    /* A closed device is stale. */
    sci_local_segment_t s2;
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCICreateSegment(gone, &s2, 61, 64, NULL, NULL, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIClose(gone, 0, &err));

    /* ---- NULL out-pointers ---- */
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCICreateSegment(sd, NULL, 61, 64, NULL, NULL, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIConnectSegment(sd, NULL, me, 60, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err));
    CHECK(SCIMapLocalSegment(ls, NULL, 0, 64, NULL, 0, &err) == NULL && err == SCI_ERR_ILLEGAL_PARAMETER);
    CHECK(SCIMapRemoteSegment(rs, NULL, 0, 64, NULL, 0, &err) == NULL && err == SCI_ERR_ILLEGAL_PARAMETER);
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCICreateMapSequence(rm, NULL, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCICreateDMAQueue(sd, NULL, 0, 4, 0, &err));
    sci_local_interrupt_t li2;
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCICreateInterrupt(sd, &li2, 0, NULL, NULL, NULL, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCICreateInterrupt(sd, NULL, 0, &ino, NULL, NULL, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIWaitForDataInterrupt(ld, junk, NULL, 0, 0, &err));
    unsigned int len = 8;
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIWaitForDataInterrupt(ld, NULL, &len, 0, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCITriggerDataInterrupt(rd, NULL, 8, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIGetLocalNodeId(0, NULL, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIStartDmaTransferVec(dq, ls, rs, 1, NULL, NULL, NULL, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_ADDRESS, SCIStartDmaTransferMem(dq, NULL, rs, 8, 0, NULL, NULL, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_ADDRESS, SCIStartDmaTransferMem(dq, (void *)8, rs, 8, 0, NULL, NULL, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_ADDRESS, SCIMemCpy(seq, NULL, rm, 0, 8, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCICreateSegment(sd, &s2, 61, 64, NULL, NULL, SCI_FLAG_USE_CALLBACK, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIStartDmaTransfer(dq, ls, rs, 0, 8, 0, NULL, NULL, SCI_FLAG_USE_CALLBACK, &err));
    sci_query_adapter_t qa = { 0, 0, SCI_Q_ADAPTER_NODEID, NULL };
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIQuery(SCI_Q_ADAPTER, &qa, 0, &err));
    sci_query_string_t qs = { NULL, 10 };
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIQuery(SCI_Q_VENDORID, &qs, 0, &err));
    char c1[1];
    sci_query_string_t q0 = { c1, 0 };
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIQuery(SCI_Q_API, &q0, 0, &err));

    /* ---- flags where none (or only some) are accepted ---- */
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIClose(sd, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIPrepareSegment(ls, 0, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCISetSegmentAvailable(ls, 0, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCISetSegmentUnavailable(ls, 0, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIRemoveSegment(ls, SCI_FLAG_NOTIFY, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIDisconnectSegment(rs, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIUnmapSegment(rm, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCICreateMapSequence(rm, &seq, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIRemoveSequence(seq, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIStartSequence(seq, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCICheckSequence(seq, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIRemoveDMAQueue(dq, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIAbortDMAQueue(dq, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIWaitForDMAQueue(dq, 0, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIStartDmaTransfer(dq, ls, rs, 0, 8, 0, NULL, NULL, 0x80000000, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIStartDmaTransfer(dq, ls, rs, 0, 8, 0, NULL, NULL, SCI_FLAG_DMA_GLOBAL | SCI_FLAG_DMA_SYSDMA, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIStartDmaTransfer(dq, ls, rs, 0, 8, 0, NULL, NULL, SCI_FLAG_BROADCAST, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCITriggerInterrupt(ri, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIWaitForInterrupt(li, 0, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIRemoveInterrupt(li, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIDisconnectInterrupt(ri, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIConnectInterrupt(sd, &ri, me, 0, ino, SCI_INFINITE_TIMEOUT, SCI_FLAG_BROADCAST, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCITriggerDataInterrupt(rd, junk, 8, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIWaitForDataInterrupt(ld, junk, &len, 0, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCICreateDataInterrupt(sd, &ld, 0, &dno, NULL, NULL, SCI_FLAG_COUNTING_INT, &err));
    FAILS(SCI_ERR_FLAG_NOT_IMPLEMENTED, SCICreateInterrupt(sd, &li2, 0, &ino, NULL, NULL, SCI_FLAG_CONDITIONAL_INTERRUPT, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCICreateSegment(sd, &s2, 61, 64, never, NULL, 0x400, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCICreateSegment(sd, &s2, 61, 64, NULL, NULL, SCI_FLAG_ALLOW_UNICAST, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIMemCpy(seq, junk, rm, 0, 8, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIGetLocalNodeId(0, &me, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIShareSegment(ls, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIRegisterSegmentMemory(junk, 64, ls, 1, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIQuery(SCI_Q_VENDORID, &qs, 1, &err));

    /* ---- adapters and node ids ---- */
    sci_dma_queue_t dq2;
    FAILS(SCI_ERR_NO_SUCH_ADAPTERNO, SCICreateDMAQueue(sd, &dq2, 1, 4, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_ADAPTERNO, SCICreateDMAQueue(sd, &dq2, 99, 4, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_ADAPTERNO, SCISetSegmentAvailable(ls, 1000, 0, &err));
    FAILS(SCI_ERR_NO_SUCH_ADAPTERNO, SCIConnectSegment(sd, &rs, me, 60, 2, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err));
    FAILS(SCI_ERR_NO_SUCH_ADAPTERNO, SCIGetLocalNodeId(5, &me, 0, &err));
    unsigned int bad_nodes[] = { 0, 252, 0x10000, 0xffffffffu };
    for (unsigned i = 0; i < 4; i++) {
        sci_remote_segment_t x;
        sci_remote_interrupt_t y;
        sci_remote_data_interrupt_t z;
        FAILS(SCI_ERR_ILLEGAL_NODEID, SCIConnectSegment(sd, &x, bad_nodes[i], 60, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err));
        FAILS(SCI_ERR_ILLEGAL_NODEID, SCIConnectInterrupt(sd, &y, bad_nodes[i], 0, ino, SCI_INFINITE_TIMEOUT, 0, &err));
        FAILS(SCI_ERR_ILLEGAL_NODEID, SCIConnectDataInterrupt(sd, &z, bad_nodes[i], 0, dno, SCI_INFINITE_TIMEOUT, 0, &err));
    }
    sci_remote_segment_t x;
    FAILS(SCI_ERR_ILLEGAL_NODEID, SCIConnectSegment(sd, &x, me, 60, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, SCI_FLAG_BROADCAST, &err));

    /* ---- sizes and offsets at and past the limits (overflows included) ---- */
    sci_map_t m2;
    CHECK(SCIMapLocalSegment(ls, &m2, 8192, 1, NULL, 0, &err) == NULL && err == SCI_ERR_OUT_OF_RANGE);
    CHECK(SCIMapLocalSegment(ls, &m2, 1, SIZE_MAX, NULL, 0, &err) == NULL && err == SCI_ERR_OUT_OF_RANGE);
    CHECK(SCIMapRemoteSegment(rs, &m2, SIZE_MAX, SIZE_MAX, NULL, 0, &err) == NULL && err == SCI_ERR_OUT_OF_RANGE);
    void *last = SCIMapLocalSegment(ls, &m2, 8191, 1, NULL, 0, &err);     /* the last byte is fine */
    CHECK(err == SCI_ERR_OK && last == (char *)l + 8191);
    OK(SCIUnmapSegment(m2, 0, &err));
    FAILS(SCI_ERR_OUT_OF_RANGE, SCIMemCpy(seq, junk, rm, 8185, 8, 0, &err));
    FAILS(SCI_ERR_OUT_OF_RANGE, SCIMemCpy(seq, junk, rm, SIZE_MAX, 2, 0, &err));
    OK(SCIMemCpy(seq, junk, rm, 8184, 8, 0, &err));
    OK(SCIMemCpy(seq, junk, rm, 8192, 0, 0, &err));
    FAILS(SCI_ERR_OUT_OF_RANGE, SCIStartDmaTransfer(dq, ls, rs, 0, 8, 8185, NULL, NULL, 0, &err));
    FAILS(SCI_ERR_OUT_OF_RANGE, SCIStartDmaTransfer(dq, ls, rs, SIZE_MAX - 3, 8, 0, NULL, NULL, 0, &err));
    FAILS(SCI_ERR_OUT_OF_RANGE, SCIStartDmaTransfer(dq, ls, rs, 0, SIZE_MAX, 0, NULL, NULL, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIStartDmaTransfer(dq, ls, rs, 0, 0, 0, NULL, NULL, 0, &err));
    CHECK_EQ(SCIDMAQueueState(dq), SCI_DMAQUEUE_IDLE);   /* nothing was started */
    dis_dma_vec_t v = { 8, 8190, 0, 0 };
    FAILS(SCI_ERR_OUT_OF_RANGE, SCIStartDmaTransferVec(dq, ls, rs, 1, &v, NULL, NULL, 0, &err));
    FAILS(SCI_ERR_OUT_OF_RANGE, SCITriggerDataInterrupt(rd, junk, 4097, 0, &err));
    FAILS(SCI_ERR_SIZE_ALIGNMENT, SCICreateSegment(sd, &s2, 61, 0, NULL, NULL, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCICreateDMAQueue(sd, &dq2, 0, 0, 0, &err));
    FAILS(SCI_ERR_OUT_OF_RANGE, SCICacheSync(lm, (void *)l, SIZE_MAX, SCI_FLAG_CACHE_FLUSH, &err));

    /* ---- addresses ---- */
    sci_local_segment_t es;
    OK(SCICreateSegment(sd, &es, 62, 4096, NULL, NULL, SCI_FLAG_EMPTY, &err));
    char *mem = aligned_alloc(4096, 4096);
    FAILS(SCI_ERR_ILLEGAL_ADDRESS, SCIRegisterSegmentMemory(mem + 2, 64, es, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_ADDRESS, SCIRegisterSegmentMemory(NULL, 64, es, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_ADDRESS, SCIRegisterSegmentMemory((void *)0x1000, 64, es, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_ADDRESS, SCIRegisterSegmentMemory((void *)main, 64, es, 0, &err));   /* read-only */
    FAILS(SCI_ERR_SIZE_ALIGNMENT, SCIRegisterSegmentMemory(mem, 0, es, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_OPERATION, SCIRegisterSegmentMemory(mem, 64, ls, 0, &err));   /* not EMPTY */
    FAILS(SCI_ERR_NOT_SUPPORTED, SCIAttachPhysicalMemory(0, NULL, 0, 64, es, 0, &err));
    FAILS(SCI_ERR_FLAG_NOT_IMPLEMENTED, SCIAttachPhysicalMemory(0, mem, 0, 64, es, SCI_FLAG_CUDA_BUFFER, &err));
    OK(SCIAttachPhysicalMemory(0x1000, mem, 0, 4096, es, 0, &err));
    OK(SCIRemoveSegment(es, 0, &err));
    free(mem);
    FAILS(SCI_ERR_ILLEGAL_ADDRESS, SCIMemWrite(junk, NULL, 8, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_ADDRESS, SCICacheSync(lm, NULL, 8, SCI_FLAG_CACHE_FLUSH, &err));

    /* ---- wrong states ---- */
    FAILS(SCI_ERR_ILLEGAL_OPERATION, SCIWaitForDMAQueue(dq, 0, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_OPERATION, SCIAbortDMAQueue(dq, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_OPERATION, SCIPostDMAQueue(dq, NULL, NULL, 0, &err));
    CHECK_EQ(SCIEnqueueDMATransfer(dq, ls, rs, 0, 0, 8, 0, &err), SCI_DMAQUEUE_GATHER);
    FAILS(SCI_ERR_ILLEGAL_OPERATION, SCIStartDmaTransfer(dq, ls, rs, 0, 8, 0, NULL, NULL, 0, &err));   /* gathering */
    FAILS(SCI_ERR_ILLEGAL_OPERATION, SCIWaitForDMAQueue(dq, 0, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_OPERATION, SCIRemoveDMAQueue(dq, 0, &err));
    for (int i = 1; i < 4; i++) CHECK_EQ(SCIEnqueueDMATransfer(dq, ls, rs, 0, 0, 8, 0, &err), SCI_DMAQUEUE_GATHER);
    FAILS(SCI_ERR_MAX_ENTRIES, SCIEnqueueDMATransfer(dq, ls, rs, 0, 0, 8, 0, &err));
    OK(SCIResetDMAQueue(dq, 0, &err));
    FAILS(SCI_ERR_TIMEOUT, SCIWaitForInterrupt(li, 0, 0, &err));
    FAILS(SCI_ERR_TIMEOUT, SCIWaitForDataInterrupt(ld, junk, &len, 0, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCICreateMapSequence(lm, &seq, 0, &err));

    /* ---- a NULL error pointer: the call still runs (nothing to report to) ---- */
    sci_local_segment_t ne;
    SCICreateSegment(sd, &ne, 63, 64, NULL, NULL, 0, NULL);
    CHECK_EQ(SCIGetLocalSegmentId(ne), 63);
    SCIRemoveSegment(ne, 0, NULL);
    CHECK_EQ(SCIGetLocalSegmentSize(ne), 0);
    SCIQuery(0x999, NULL, 0, NULL);
    SCIClose(NULL, 0, NULL);

    /* ---- everything refused touched nothing: the objects still work ---- */
    CHECK_EQ(r[0], 0x600d);
    CHECK_EQ(SCICheckSequence(seq, 0, &err), SCI_SEQ_OK);
    OK(SCIStartDmaTransfer(dq, ls, rs, 0, 8, 4096, NULL, NULL, 0, &err));
    CHECK_EQ(SCIWaitForDMAQueue(dq, SCI_INFINITE_TIMEOUT, 0, &err), SCI_DMAQUEUE_DONE);
    CHECK_EQ(l[512], 0x600d);
    OK(SCITriggerInterrupt(ri, 0, &err));
    OK(SCIWaitForInterrupt(li, 1000, 0, &err));
    OK(SCITriggerDataInterrupt(rd, junk, 8, 0, &err));
    len = sizeof junk;
    OK(SCIWaitForDataInterrupt(ld, junk, &len, 1000, 0, &err));
    CHECK_EQ(len, 8);

    OK(SCIDisconnectDataInterrupt(rd, 0, &err));
    OK(SCIRemoveDataInterrupt(ld, 0, &err));
    OK(SCIDisconnectInterrupt(ri, 0, &err));
    OK(SCIRemoveInterrupt(li, 0, &err));
    OK(SCIRemoveDMAQueue(dq, 0, &err));
    OK(SCIRemoveSequence(seq, 0, &err));
    OK(SCIUnmapSegment(rm, 0, &err));
    OK(SCIDisconnectSegment(rs, 0, &err));
    OK(SCIUnmapSegment(lm, 0, &err));
    OK(SCIRemoveSegment(ls, 0, &err));
    /* ... and are now stale. */
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIRemoveSegment(ls, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIUnmapSegment(lm, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIStartSequence(seq, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCITriggerInterrupt(ri, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIDisconnectSegment(rs, 0, &err));
    OK(SCIClose(sd, 0, &err));
    SCITerminate();
    printf("sisci_badinput: ok\n");
    return 0;
}
