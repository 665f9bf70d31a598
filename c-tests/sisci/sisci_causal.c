/* Events are causal: an interrupt a target triggers in reaction to a DMA transfer's data
 * is never seen before the transfer's own end (its queue's DONE state).
 *
 * Rank 0 writes a round number into rank 1's segment by DMA (8 bytes from its own
 * segment); rank 1 spins on that word and triggers rank 0's interrupt at once.  A thread
 * of rank 0 waits for the interrupt and then reads the queue's state: the trigger cannot
 * begin before the data landed, so the queue must show DONE in every round, however the
 * threads are scheduled (rank 0 runs a thread that only yields, so that the thread moving
 * the data is preempted now and then).  With `cb` the transfers run on the library's DMA
 * thread (SCI_FLAG_USE_CALLBACK); else inside SCIStartDmaTransfer, while the waiting thread
 * may already run.
 *
 * Usage: sisci_causal [ROUNDS] [cb]   (default 100000 rounds) */
#include "stest.h"
#include "causaltest.h"
#include <pthread.h>

#define SEG_ID 300
#define INTNO 40

static volatile long acked, called;
static long rounds, early;
static sci_local_interrupt_t li;
static sci_dma_queue_t dq;



/* Rank 0's interrupt thread: each answer, then the state of the transfer it answers. */
static void *waiter(void *arg)
{
    (void)arg;
    for (long r = 1; r <= rounds; r++) {
        sci_error_t e;
        SCIWaitForInterrupt(li, SCI_INFINITE_TIMEOUT, 0, &e);
        if (e != SCI_ERR_OK) SN_FAIL("SCIWaitForInterrupt (round %ld) -> %s", r, SCIGetErrorString(e));
        sci_dma_queue_state_t st = SCIDMAQueueState(dq);
        if (st != SCI_DMAQUEUE_DONE) {
            if (early++ < 5) fprintf(stderr, "sisci_causal: round %ld: the answer came while the queue was in state %d\n", r, (int)st);
        }
        __atomic_store_n(&acked, r, __ATOMIC_RELEASE);
    }
    return NULL;
}

static sci_callback_action_t dma_done(void *arg, sci_dma_queue_t q, sci_error_t status)
{
    (void)arg;
    (void)q;
    if (status != SCI_ERR_OK) SN_FAIL("DMA callback status %s", SCIGetErrorString(status));
    __atomic_add_fetch(&called, 1, __ATOMIC_RELEASE);
    return SCI_CALLBACK_CONTINUE;
}

int main(int argc, char **argv)
{
    int rank, size;
    unsigned int *nodes;
    rounds = argc > 1 ? atol(argv[1]) : 100000;
    int cb = argc > 2 && !strcmp(argv[2], "cb");
    OK(SCIInitialize(0, &err));
    st_job(&rank, &size, &nodes);
    if (size != 2) SKIP("needs exactly 2 ranks");
    size_t segsize = 4096;

    sci_desc_t sd;
    sci_local_segment_t ls;
    sci_map_t lmap;
    OK(SCIOpen(&sd, 0, &err));
    OK(SCICreateSegment(sd, &ls, SEG_ID + rank, segsize, NULL, NULL, 0, &err));
    volatile uint64_t *mine = SCIMapLocalSegment(ls, &lmap, 0, segsize, NULL, 0, &err);
    CHECK(err == SCI_ERR_OK);
    OK(SCIPrepareSegment(ls, 0, 0, &err));
    OK(SCISetSegmentAvailable(ls, 0, 0, &err));
    if (rank == 0) {
        unsigned int no = INTNO;
        OK(SCICreateInterrupt(sd, &li, 0, &no, NULL, NULL, SCI_FLAG_FIXED_INTNO | SCI_FLAG_COUNTING_INT, &err));
    }
    CHECK(PMI_Barrier() == PMI_SUCCESS);

    if (rank == 1) {
        sci_remote_interrupt_t ri = st_connect_int(sd, nodes[0], INTNO, 0, 30);
        CHECK(PMI_Barrier() == PMI_SUCCESS);
        for (long r = 1; r <= rounds; r++) {
            unsigned spins = 0;
            while (mine[0] != (uint64_t)r) causal_relax(&spins);
            OK(SCITriggerInterrupt(ri, 0, &err));
        }
        CHECK(PMI_Barrier() == PMI_SUCCESS);
        OK(SCIDisconnectInterrupt(ri, 0, &err));
    } else {
        sci_remote_segment_t rs = st_connect(sd, nodes[1], SEG_ID + 1, NULL, NULL, 0, 30);
        OK(SCICreateDMAQueue(sd, &dq, 0, 1, 0, &err));
        pthread_t w, y;
        CHECK(pthread_create(&w, NULL, waiter, NULL) == 0);
        CHECK(pthread_create(&y, NULL, causal_yielder, NULL) == 0);
        CHECK(PMI_Barrier() == PMI_SUCCESS);
        for (long r = 1; r <= rounds; r++) {
            mine[0] = (uint64_t)r;
            if (cb)
                OK(SCIStartDmaTransfer(dq, ls, rs, 0, 8, 0, dma_done, NULL, SCI_FLAG_USE_CALLBACK, &err));
            else
                OK(SCIStartDmaTransfer(dq, ls, rs, 0, 8, 0, NULL, NULL, 0, &err));
            unsigned spins = 0;
            while (__atomic_load_n(&acked, __ATOMIC_ACQUIRE) < r || (cb && __atomic_load_n(&called, __ATOMIC_ACQUIRE) < r)) causal_relax(&spins);
        }
        causal_stop = 1;
        CHECK(pthread_join(w, NULL) == 0);
        CHECK(pthread_join(y, NULL) == 0);
        CHECK(PMI_Barrier() == PMI_SUCCESS);
        if (early) SN_FAIL("%ld of %ld answers came before the transfer's end", early, rounds);
        printf("sisci_causal: %ld rounds (%s), the transfer's end first in every one\n", rounds, cb ? "DMA thread" : "in the starting call");
        OK(SCIRemoveDMAQueue(dq, 0, &err));
        OK(SCIDisconnectSegment(rs, 0, &err));
        OK(SCIRemoveInterrupt(li, 0, &err));
    }
    OK(SCISetSegmentUnavailable(ls, 0, 0, &err));
    OK(SCIUnmapSegment(lmap, 0, &err));
    OK(SCIRemoveSegment(ls, 0, &err));
    OK(SCIClose(sd, 0, &err));
    printf("sisci_causal: rank %d ok\n", rank);
    PMI_Finalize();
    return 0;
}
