/* DMA between pairs of ranks (0-1, 2-3, ...), both directions: single transfers with
 * SCIWaitForDMAQueue and with callbacks, program memory (SCIStartDmaTransferMem),
 * vectors (entry flags left uninitialised), the queue state machine (IDLE -> POSTED -> DONE, one transfer at a time,
 * abort, remove only when not POSTED), SISCI 1.10's enqueue/post, and DMA channels.
 * The data is checked on both sides; the partner learns of each transfer through an
 * interrupt, triggered after the transfer completed.  Usage: sisci_dma [bytes] */
#include "stest.h"
#include <pthread.h>

#define SEG_ID 200

static volatile int cb_calls;
static volatile sci_error_t cb_status;
static volatile sci_dma_queue_state_t cb_state;
static sci_dma_queue_t cb_queue;

static sci_callback_action_t dma_done(void *arg, sci_dma_queue_t q, sci_error_t status)
{
    CHECK(arg == (void *)&cb_calls);
    CHECK(q == cb_queue);
    cb_status = status;
    cb_state = SCIDMAQueueState(q);
    __atomic_add_fetch(&cb_calls, 1, __ATOMIC_SEQ_CST);
    return SCI_CALLBACK_CONTINUE;
}

static void await_calls(int n)
{
    double end = st_now() + 30;
    while (__atomic_load_n(&cb_calls, __ATOMIC_SEQ_CST) < n) {
        if (st_now() > end) SN_FAIL("DMA callback %d never came", n);
        usleep(100);
    }
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

static void expect(const volatile uint8_t *p, size_t n, unsigned seed, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (uint8_t)(seed * 131 + i * 7 + (i >> 8))) SN_FAIL("%s: byte %zu is %u", what, i, p[i]);
}

int main(int argc, char **argv)
{
    int rank, size;
    unsigned int *nodes;
    size_t bytes = argc > 1 ? (size_t)atol(argv[1]) : (1 << 20);
    OK(SCIInitialize(0, &err));
    st_job(&rank, &size, &nodes);
    if (size % 2) SKIP("needs an even number of ranks");
    int peer = rank ^ 1;
    size_t segsize = 2 * bytes;

    sci_desc_t sd;
    sci_local_segment_t ls;
    sci_map_t lmap;
    sci_local_interrupt_t li;
    unsigned int intno = 10 + rank;
    OK(SCIOpen(&sd, 0, &err));
    OK(SCICreateSegment(sd, &ls, SEG_ID + rank, segsize, NULL, NULL, 0, &err));
    volatile uint8_t *mine = SCIMapLocalSegment(ls, &lmap, 0, segsize, NULL, 0, &err);
    CHECK(err == SCI_ERR_OK);
    OK(SCICreateInterrupt(sd, &li, 0, &intno, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));
    CHECK_EQ(intno, 10 + rank);

    /* A queue is IDLE; waiting or aborting before a start is illegal. */
    sci_dma_queue_t dq;
    OK(SCICreateDMAQueue(sd, &dq, 0, 16, 0, &err));
    CHECK_EQ(SCIDMAQueueState(dq), SCI_DMAQUEUE_IDLE);
    FAILS(SCI_ERR_ILLEGAL_OPERATION, SCIWaitForDMAQueue(dq, 0, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_OPERATION, SCIAbortDMAQueue(dq, 0, &err));

    /* DMA needs a prepared local segment. */
    OK(SCISetSegmentAvailable(ls, 0, 0, &err) ; if (err == SCI_ERR_SEGMENT_NOT_PREPARED) err = SCI_ERR_OK);
    OK(SCIPrepareSegment(ls, 0, 0, &err));
    OK(SCISetSegmentAvailable(ls, 0, 0, &err));
    sci_remote_segment_t rs = st_connect(sd, nodes[peer], SEG_ID + peer, NULL, NULL, 0, 30);
    sci_remote_interrupt_t ri = st_connect_int(sd, nodes[peer], 10 + peer, 0, 30);
    CHECK_EQ(SCIGetRemoteSegmentSize(rs), segsize);

    /* Sources are first halves, destinations second halves (the partner sends at the
     * same time). */
    /* 1. Write: our first half -> the partner's second half; wait; tell the partner. */
    fill((uint8_t *)mine, bytes, 1 + rank);
    OK(SCIStartDmaTransfer(dq, ls, rs, 0, bytes, bytes, NULL, NULL, 0, &err));
    sci_dma_queue_state_t st = SCIWaitForDMAQueue(dq, SCI_INFINITE_TIMEOUT, 0, &err);
    CHECK_EQ(err, SCI_ERR_OK);
    CHECK_EQ(st, SCI_DMAQUEUE_DONE);
    CHECK_EQ(SCIDMAQueueState(dq), SCI_DMAQUEUE_DONE);
    OK(SCITriggerInterrupt(ri, 0, &err));
    OK(SCIWaitForInterrupt(li, 30000, 0, &err));
    expect(mine + bytes, bytes, 1 + peer, "DMA write from the partner");

    /* 2. Read: the partner's first half -> our second half, with a callback. */
    PMI_Barrier();
    memset((void *)(mine + bytes), 0, bytes);
    cb_queue = dq;
    OK(SCIStartDmaTransfer(dq, ls, rs, bytes, bytes, 0, dma_done, (void *)&cb_calls, SCI_FLAG_USE_CALLBACK | SCI_FLAG_DMA_READ, &err));
    await_calls(1);
    CHECK_EQ(cb_status, SCI_ERR_OK);
    CHECK_EQ(cb_state, SCI_DMAQUEUE_DONE);     /* the state is final before the callback */
    expect(mine + bytes, bytes, 1 + peer, "DMA read");

    /* 3. Program memory -> the partner's second half (SCIStartDmaTransferMem). */
    PMI_Barrier();
    uint8_t *buf = malloc(bytes);
    fill(buf, bytes, 50 + rank);
    OK(SCIStartDmaTransferMem(dq, buf, rs, bytes, bytes, NULL, NULL, 0, &err));
    CHECK_EQ(SCIWaitForDMAQueue(dq, 10000, 0, &err), SCI_DMAQUEUE_DONE);
    OK(SCITriggerInterrupt(ri, 0, &err));
    OK(SCIWaitForInterrupt(li, 30000, 0, &err));
    expect(mine + bytes, bytes, 50 + peer, "DMA from program memory");
    /* ... and read it back into program memory. */
    memset(buf, 0, bytes);
    OK(SCIStartDmaTransferMem(dq, buf, rs, bytes, bytes, NULL, NULL, SCI_FLAG_DMA_READ, &err));
    CHECK_EQ(SCIWaitForDMAQueue(dq, 10000, 0, &err), SCI_DMAQUEUE_DONE);
    expect(buf, bytes, 50 + rank, "DMA read into program memory");

    /* 4. A vector: 4 pieces in reverse order, with a wait flag. */
    PMI_Barrier();
    size_t piece = bytes / 4;
    dis_dma_vec_t v[4];
    fill((uint8_t *)mine, bytes, 90 + rank);
    for (int k = 0; k < 4; k++) {
        v[k].size = (unsigned)piece;
        v[k].local_offset = (unsigned)(k * piece);
        v[k].remote_offset = (unsigned)(bytes + (3 - k) * piece);
        v[k].flags = 0xdeadbeefu * (unsigned)(k + 1);   /* left uninitialised by programs */
    }
    OK(SCIStartDmaTransferVec(dq, ls, rs, 4, v, NULL, NULL, 0, &err));
    CHECK_EQ(SCIWaitForDMAQueue(dq, 10000, 0, &err), SCI_DMAQUEUE_DONE);
    OK(SCITriggerInterrupt(ri, 0, &err));
    OK(SCIWaitForInterrupt(li, 30000, 0, &err));
    {
        uint8_t *want = malloc(bytes);
        fill(want, bytes, 90 + peer);
        for (int k = 0; k < 4; k++)
            if (memcmp((const void *)(mine + bytes + (3 - k) * piece), want + k * piece, piece)) SN_FAIL("vector piece %d", k);
        free(want);
    }
    /* Vectors: 0 entries, too many, out of range. */
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIStartDmaTransferVec(dq, ls, rs, 0, v, NULL, NULL, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIStartDmaTransferVec(dq, ls, rs, DIS_DMA_MAX_VECLEN + 1, v, NULL, NULL, 0, &err));
    v[2].remote_offset = (unsigned)(segsize - piece + 1);
    FAILS(SCI_ERR_OUT_OF_RANGE, SCIStartDmaTransferVec(dq, ls, rs, 4, v, NULL, NULL, 0, &err));
    CHECK_EQ(SCIDMAQueueState(dq), SCI_DMAQUEUE_DONE);    /* refused starts change nothing */

    /* 5. One transfer at a time: a second start while POSTED is refused.  A 64 MiB
     *    callback transfer into a segment of our own node (connections to the local node
     *    are allowed) keeps the queue POSTED long enough to see it. */
    PMI_Barrier();
    {
        int before = cb_calls;
        sci_dma_queue_t big;
        sci_local_segment_t src, dst;
        size_t blen = 64u << 20;
        OK(SCICreateSegment(sd, &src, SEG_ID + 50 + rank, blen, NULL, NULL, SCI_FLAG_PRIVATE, &err));
        OK(SCIPrepareSegment(src, 0, 0, &err));
        OK(SCICreateSegment(sd, &dst, SEG_ID + 60 + rank, blen, NULL, NULL, 0, &err));
        OK(SCIPrepareSegment(dst, 0, 0, &err));
        OK(SCISetSegmentAvailable(dst, 0, 0, &err));
        sci_remote_segment_t loop;
        OK(SCIConnectSegment(sd, &loop, nodes[rank], SEG_ID + 60 + rank, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err));
        OK(SCICreateDMAQueue(sd, &big, 0, 1, 0, &err));
        size_t rsz = SCIGetRemoteSegmentSize(rs), roff = rsz >= blen ? rsz - blen + 8 : 0;
        FAILS(SCI_ERR_OUT_OF_RANGE, SCIStartDmaTransfer(big, src, rs, 0, blen, roff, NULL, NULL, 0, &err));
        cb_queue = big;
        int posted = 0;
        for (int round = 0; round < 2; round++) {
            OK(SCIStartDmaTransfer(big, src, loop, 0, blen, 0, dma_done, (void *)&cb_calls, SCI_FLAG_USE_CALLBACK, &err));
            if (SCIDMAQueueState(big) == SCI_DMAQUEUE_POSTED) {
                posted++;
                FAILS(SCI_ERR_ILLEGAL_OPERATION, SCIStartDmaTransfer(big, src, loop, 0, 8, 0, NULL, NULL, 0, &err));
                FAILS(SCI_ERR_ILLEGAL_OPERATION, SCIWaitForDMAQueue(big, 0, 0, &err));  /* a callback is active */
                FAILS(SCI_ERR_ILLEGAL_OPERATION, SCIRemoveDMAQueue(big, 0, &err));
                FAILS(SCI_ERR_BUSY, SCIRemoveSegment(src, 0, &err));     /* in use by the transfer */
                FAILS(SCI_ERR_BUSY, SCIRemoveSegment(dst, 0, &err));     /* a transfer in flight into it */
            }
            await_calls(before + round + 1);
            CHECK_EQ(cb_status, SCI_ERR_OK);
            CHECK_EQ(SCIDMAQueueState(big), SCI_DMAQUEUE_DONE);
            /* A final state: wait and abort are no-ops. */
            CHECK_EQ(SCIWaitForDMAQueue(big, 0, 0, &err), SCI_DMAQUEUE_DONE);
            CHECK_EQ(err, SCI_ERR_OK);
            OK(SCIAbortDMAQueue(big, 0, &err));
        }
        CHECK(posted > 0);
        OK(SCIRemoveDMAQueue(big, 0, &err));
        OK(SCIDisconnectSegment(loop, 0, &err));
        OK(SCIRemoveSegment(src, 0, &err));
        OK(SCIRemoveSegment(dst, 0, &err));
    }

    /* 6. Abort: right after the start (it ends ABORTED, or DONE if it won the race).  The
     * source is the half of the segment the partner's transfer does not write (its
     * transfer runs at the same time): a source written meanwhile would be a race the
     * checker reports (SOFTNIC_CHECK). */
    PMI_Barrier();
    {
        sci_dma_queue_t aq;
        OK(SCICreateDMAQueue(sd, &aq, 0, 1, 0, &err));
        cb_queue = aq;
        int before = cb_calls;
        OK(SCIStartDmaTransfer(aq, ls, rs, 0, segsize / 2, segsize / 2, dma_done, (void *)&cb_calls, SCI_FLAG_USE_CALLBACK, &err));
        OK(SCIAbortDMAQueue(aq, 0, &err));
        await_calls(before + 1);
        sci_dma_queue_state_t s = SCIDMAQueueState(aq);
        CHECK(s == SCI_DMAQUEUE_ABORTED || s == SCI_DMAQUEUE_DONE);
        CHECK(cb_status == (s == SCI_DMAQUEUE_ABORTED ? SCI_ERR_CANCELLED : SCI_ERR_OK));
        OK(SCIRemoveDMAQueue(aq, 0, &err));
    }

    /* 7. SISCI 1.10: enqueue two pieces (GATHER), post, wait. */
    PMI_Barrier();
    fill((uint8_t *)mine, bytes, 120 + rank);
    CHECK_EQ(SCIEnqueueDMATransfer(dq, ls, rs, 0, (unsigned)bytes, (unsigned)(bytes / 2), 0, &err), SCI_DMAQUEUE_GATHER);
    CHECK_EQ(err, SCI_ERR_OK);
    CHECK_EQ(SCIEnqueueDMATransfer(dq, ls, rs, (unsigned)(bytes / 2), (unsigned)(bytes + bytes / 2), (unsigned)(bytes / 2), 0, &err), SCI_DMAQUEUE_GATHER);
    FAILS(SCI_ERR_ILLEGAL_OPERATION, SCIRemoveDMAQueue(dq, 0, &err));
    OK(SCIPostDMAQueue(dq, NULL, NULL, 0, &err));
    CHECK_EQ(SCIWaitForDMAQueue(dq, 10000, 0, &err), SCI_DMAQUEUE_DONE);
    OK(SCITriggerInterrupt(ri, 0, &err));
    OK(SCIWaitForInterrupt(li, 30000, 0, &err));
    expect(mine + bytes, bytes, 120 + peer, "1.10 enqueue/post");
    OK(SCIResetDMAQueue(dq, 0, &err));
    CHECK_EQ(SCIDMAQueueState(dq), SCI_DMAQUEUE_IDLE);

    /* 8. Channels: bookkeeping (exclusive by default, shared on request). */
    {
        sci_dma_channel_t c1, c2, c3;
        OK(SCIRequestDMAChannel(sd, &c1, 0, SCI_DMA_TYPE_SYSTEM, 0, 0, &err));
        CHECK_EQ(SCIGetDMAChannelType(c1), SCI_DMA_TYPE_SYSTEM);
        FAILS(SCI_ERR_DMA_NOT_AVAILABLE, SCIRequestDMAChannel(sd, &c2, 0, SCI_DMA_TYPE_SYSTEM, 0, 0, &err));
        OK(SCIRequestDMAChannel(sd, &c2, 0, SCI_DMA_TYPE_DONTCARE, SCI_DMA_CHANNEL_ID_DONTCARE, 0, &err));
        CHECK_EQ(SCIGetDMAChannelType(c2), SCI_DMA_TYPE_ADAPTER);
        OK(SCIRequestDMAChannel(sd, &c3, 0, SCI_DMA_TYPE_ADAPTER, SCI_DMA_CHANNEL_ID_DONTCARE, SCI_FLAG_DMA_CHANNEL_SHARED, &err));
        FAILS(SCI_ERR_DMA_NOT_AVAILABLE, SCIRequestDMAChannel(sd, &c3, 0, SCI_DMA_TYPE_TRANSPARENT, 0, 0, &err));
        OK(SCIAssignDMAChannel(c1, dq, 0, &err));
        OK(SCIPrepareLocalSegmentForDMA(c1, ls, 0, &err));
        FAILS(SCI_ERR_ILLEGAL_OPERATION, SCIPrepareLocalSegmentForDMA(c2, ls, 0, &err));
        FAILS(SCI_ERR_ILLEGAL_OPERATION, SCIPrepareRemoteSegmentForDMA(c1, rs, 0, &err));  /* not mapped */
        OK(SCIUnprepareLocalSegmentForDMA(c1, ls, 0, &err));
        FAILS(SCI_ERR_ILLEGAL_OPERATION, SCIUnprepareLocalSegmentForDMA(c1, ls, 0, &err));
        OK(SCIStartDmaTransfer(dq, ls, rs, 0, bytes < 64 ? bytes : 64, bytes, NULL, NULL, 0, &err));
        CHECK_EQ(SCIWaitForDMAQueue(dq, 10000, 0, &err), SCI_DMAQUEUE_DONE);
        OK(SCIReturnDMAChannel(c1, &err));
        OK(SCIReturnDMAChannel(c2, &err));
        OK(SCIReturnDMAChannel(c3, &err));
        FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIReturnDMAChannel(c3, &err));
    }

    /* Teardown: a segment in use by a queue's transfer cannot go; afterwards it can. */
    PMI_Barrier();
    OK(SCIRemoveDMAQueue(dq, 0, &err));
    OK(SCIDisconnectInterrupt(ri, 0, &err));
    OK(SCIDisconnectSegment(rs, 0, &err));
    PMI_Barrier();
    OK(SCIRemoveInterrupt(li, 0, &err));
    OK(SCIUnmapSegment(lmap, 0, &err));
    OK(SCIRemoveSegment(ls, 0, &err));
    OK(SCIClose(sd, 0, &err));
    SCITerminate();
    printf("sisci_dma: rank %d of %d ok (%zu bytes)\n", rank, size, bytes);
    PMI_Finalize();
    return 0;
}
