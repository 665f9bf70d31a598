/* The checker's data races (SOFTNIC_CHECK=1) between SISCI initiators, committed on purpose.
 * Rank 0 exports a segment; ranks 1 and 2 connect to it (its node id from PMI_Allgather of
 * SCIGetLocalNodeId, the segment id agreed) and move data to and from it by DMA:
 *   race     rank 1 starts a DMA write of bytes 0..63 and does not wait for its queue;
 *            after a barrier rank 2 starts one of bytes 32..95 (SCIStartDmaTransferMem):
 *            nothing ordered them (rank 2 reports it, naming rank 1's call)
 *   getput   rank 1's vector DMA read (its second entry: bytes 0..63) is in flight when
 *            rank 2 starts a DMA write of bytes 32..95
 *   alias    rank 0 exports one buffer of its own as two segments (SCIRegisterSegmentMemory
 *            at buffer+0 and at buffer+1024); rank 1 writes bytes 1024..1087 of the first
 *            while rank 2's write of bytes 0..63 of the second, the same memory, is in
 *            flight: the race is found on the memory, whatever segment names it
 *   clean    rank 1's write ends before the barrier after which rank 2 writes the same
 *            bytes, its end learnt from SCIWaitForDMAQueue, a start with SCI_FLAG_DMA_WAIT,
 *            SCIDMAQueueState, a callback, and the calls that succeed only once no
 *            transfer is POSTED (SCIAbortDMAQueue, SCIResetDMAQueue, SCIRemoveDMAQueue, the
 *            next transfer started on the queue, SISCI 1.10's next gather); both write
 *            different bytes at once; both read the same bytes at once (reads never race
 *            each other): no finding
 * Needs 3 ranks.  Prints "sisci_check_race: rank R MODE done". */
#include "stest.h"

#define SEG_ID 700
#define SEG_SIZE 4096

static sci_remote_segment_t rs;
static sci_local_segment_t ls;
static sci_dma_queue_t dq;
static sci_desc_t sd;
static uint8_t mem_src[256] __attribute__((aligned(64)));
static volatile int callbacks;

static sci_callback_action_t dma_done(void *arg, sci_dma_queue_t q, sci_error_t status)
{
    (void)arg;
    CHECK(q == dq);
    CHECK_EQ(status, SCI_ERR_OK);
    __atomic_add_fetch(&callbacks, 1, __ATOMIC_SEQ_CST);
    return SCI_CALLBACK_CONTINUE;
}

/* A DMA write of `len` bytes of our segment (from `loff`) to the target's bytes at `roff`. */
static void put(size_t loff, size_t roff, size_t len, unsigned int flags)
{
    OK(SCIStartDmaTransfer(dq, ls, rs, loff, len, roff, NULL, NULL, flags, &err));
}

static void await_end(void)
{
    CHECK_EQ(SCIWaitForDMAQueue(dq, SCI_INFINITE_TIMEOUT, 0, &err), SCI_DMAQUEUE_DONE);
    CHECK_EQ(err, SCI_ERR_OK);
}

/* How an initiator learns that its transfer ended. */
enum { BY_WAIT, BY_DMA_WAIT, BY_STATE, BY_CALLBACK, BY_ABORT, BY_RESET, BY_REMOVE };

/* A DMA write of the target's bytes 0..63, and its end learnt by `how`. */
static void write_and_learn(int how)
{
    switch (how) {
    case BY_WAIT:
        put(0, 0, 64, 0);
        await_end();
        break;
    case BY_DMA_WAIT: /* the start returns once the transfer is over */
        put(0, 0, 64, SCI_FLAG_DMA_WAIT);
        break;
    case BY_STATE:
        put(0, 0, 64, 0);
        while (SCIDMAQueueState(dq) == SCI_DMAQUEUE_POSTED) sched_yield();
        CHECK_EQ(SCIDMAQueueState(dq), SCI_DMAQUEUE_DONE);
        break;
    case BY_CALLBACK: {
        int before = __atomic_load_n(&callbacks, __ATOMIC_SEQ_CST);
        OK(SCIStartDmaTransfer(dq, ls, rs, 0, 64, 0, dma_done, NULL, SCI_FLAG_USE_CALLBACK, &err));
        double end = st_now() + 30;
        while (__atomic_load_n(&callbacks, __ATOMIC_SEQ_CST) == before) {
            if (st_now() > end) SN_FAIL("the DMA callback never came");
            usleep(100);
        }
        break;
    }
    case BY_ABORT: /* succeeds once the queue is no longer POSTED */
        put(0, 0, 64, 0);
        OK(SCIAbortDMAQueue(dq, 0, &err));
        break;
    case BY_RESET: /* only when no transfer is POSTED */
        put(0, 0, 64, 0);
        OK(SCIResetDMAQueue(dq, 0, &err));
        CHECK_EQ(SCIDMAQueueState(dq), SCI_DMAQUEUE_IDLE);
        break;
    case BY_REMOVE: /* likewise; a new queue for what follows */
        put(0, 0, 64, 0);
        OK(SCIRemoveDMAQueue(dq, 0, &err));
        OK(SCICreateDMAQueue(sd, &dq, 0, 16, 0, &err));
        break;
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "clean";
    int rank, size;
    unsigned int *nodes;
    OK(SCIInitialize(0, &err));
    st_job(&rank, &size, &nodes);
    if (size != 3) SKIP("needs 3 ranks");
    int alias = !strcmp(mode, "alias");
    OK(SCIOpen(&sd, 0, &err));
    sci_local_segment_t target[2];
    sci_map_t lmap;
    volatile uint8_t *lmem = NULL;
    uint8_t *buffer = NULL;
    if (rank == 0) {
        if (alias) {
            /* One buffer, two segments over it. */
            CHECK(posix_memalign((void **)&buffer, 4096, SEG_SIZE) == 0);
            memset(buffer, 0, SEG_SIZE);
            for (int k = 0; k < 2; k++) {
                OK(SCICreateSegment(sd, &target[k], SEG_ID + k, SEG_SIZE, NULL, NULL, SCI_FLAG_EMPTY, &err));
                OK(SCIRegisterSegmentMemory(buffer + 1024 * k, SEG_SIZE - 1024 * k, target[k], 0, &err));
            }
        } else {
            OK(SCICreateSegment(sd, &target[0], SEG_ID, SEG_SIZE, NULL, NULL, 0, &err));
        }
        for (int k = 0; k < 1 + alias; k++) {
            OK(SCIPrepareSegment(target[k], 0, 0, &err));
            OK(SCISetSegmentAvailable(target[k], 0, 0, &err));
        }
    } else {
        /* An initiator: its own segment (the DMA's local side), a queue, the connection. */
        OK(SCICreateSegment(sd, &ls, SEG_ID + 10 + rank, SEG_SIZE, NULL, NULL, 0, &err));
        lmem = SCIMapLocalSegment(ls, &lmap, 0, SEG_SIZE, NULL, 0, &err);
        CHECK(err == SCI_ERR_OK);
        for (int i = 0; i < SEG_SIZE; i++) lmem[i] = (uint8_t)(rank * 16 + i);
        for (int i = 0; i < (int)sizeof mem_src; i++) mem_src[i] = (uint8_t)(rank * 16 + i);
        OK(SCIPrepareSegment(ls, 0, 0, &err));
        OK(SCICreateDMAQueue(sd, &dq, 0, 16, 0, &err));
        /* alias: rank 1 through the first segment, rank 2 through the second. */
        rs = st_connect(sd, nodes[0], SEG_ID + (alias && rank == 2), NULL, NULL, 0, 30);
    }
    PMI_Barrier();

    if (!strcmp(mode, "race")) {
        if (rank == 1) put(0, 0, 64, 0);
        PMI_Barrier();
        if (rank == 2) OK(SCIStartDmaTransferMem(dq, mem_src, rs, 64, 32, NULL, NULL, 0, &err)); /* overlaps bytes 32..63 */
        PMI_Barrier();
        if (rank != 0) await_end();
    } else if (!strcmp(mode, "getput")) {
        if (rank == 1) {
            dis_dma_vec_t v[2];
            memset(v, 0, sizeof v);
            v[0].size = 16, v[0].local_offset = 2048, v[0].remote_offset = 512;
            v[1].size = 64, v[1].local_offset = 2048 + 64, v[1].remote_offset = 0;
            OK(SCIStartDmaTransferVec(dq, ls, rs, 2, v, NULL, NULL, SCI_FLAG_DMA_READ, &err));
        }
        PMI_Barrier();
        if (rank == 2) put(0, 32, 64, 0);
        PMI_Barrier();
        if (rank != 0) await_end();
    } else if (alias) {
        if (rank == 2) put(0, 0, 64, 0); /* the buffer's bytes 1024..1087 */
        PMI_Barrier();
        if (rank == 1) put(0, 1024, 64, 0); /* the same bytes, through the other segment */
        PMI_Barrier();
        if (rank != 0) await_end();
    } else {
        /* Ordered: rank 1's write ends, as it learns, before the barrier after which
         * rank 2 writes the same bytes. */
        for (int how = BY_WAIT; how <= BY_REMOVE; how++) {
            if (rank == 1) write_and_learn(how);
            PMI_Barrier();
            if (rank == 2) {
                put(0, 0, 64, 0);
                await_end();
            }
            PMI_Barrier();
        }
        /* ... learnt from the next start on the queue (rank 1: a vector whose second
         * entry writes the bytes, then a single transfer elsewhere) or the next gather
         * (rank 2), which succeed only once the last transfer is over; the queues are
         * waited for only after the other rank's write. */
        if (rank == 1) {
            dis_dma_vec_t v[2];
            memset(v, 0, sizeof v);
            v[0].size = 16, v[0].local_offset = 0, v[0].remote_offset = 2048;
            v[1].size = 64, v[1].local_offset = 64, v[1].remote_offset = 0;
            OK(SCIStartDmaTransferVec(dq, ls, rs, 2, v, NULL, NULL, 0, &err));
            put(0, 2048, 64, 0);
        }
        PMI_Barrier();
        if (rank == 2) {
            put(0, 0, 64, 0);
            CHECK_EQ(SCIEnqueueDMATransfer(dq, ls, rs, 0, 3072, 64, 0, &err), SCI_DMAQUEUE_GATHER);
            CHECK_EQ(err, SCI_ERR_OK);
        }
        PMI_Barrier();
        if (rank == 1) put(0, 0, 64, 0);
        PMI_Barrier();
        if (rank == 1) await_end();
        if (rank == 2) {
            OK(SCIPostDMAQueue(dq, NULL, NULL, 0, &err));
            await_end();
        }
        PMI_Barrier();
        /* At once, different bytes. */
        if (rank != 0) put(0, rank == 1 ? 0 : 64, 64, 0);
        PMI_Barrier();
        if (rank != 0) await_end();
        PMI_Barrier();
        /* At once, the same bytes, both reading. */
        if (rank != 0) put(1024, 0, 64, SCI_FLAG_DMA_READ);
        PMI_Barrier();
        if (rank != 0) await_end();
    }
    PMI_Barrier();
    /* The initiators let go first; the target removes its segments after them. */
    if (rank != 0) {
        OK(SCIDisconnectSegment(rs, 0, &err));
        OK(SCIRemoveDMAQueue(dq, 0, &err));
        OK(SCIUnmapSegment(lmap, 0, &err));
        OK(SCIRemoveSegment(ls, 0, &err));
    }
    PMI_Barrier();
    if (rank == 0) {
        for (int k = 0; k < 1 + alias; k++) {
            OK(SCISetSegmentUnavailable(target[k], 0, 0, &err));
            OK(SCIRemoveSegment(target[k], 0, &err));
        }
    }
    printf("sisci_check_race: rank %d %s done\n", rank, mode);
    fflush(stdout);
    OK(SCIClose(sd, 0, &err));
    SCITerminate();
    PMI_Finalize();
    return 0;
}
