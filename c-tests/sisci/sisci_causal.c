/* Events are causal: an interrupt a target triggers in reaction to a DMA transfer's data
 * is never seen before the transfer's own end (its queue's DONE state).
 *
 * Rank 0 writes a round number into rank 1's segment by DMA (8 bytes from its own
 * segment); rank 1 spins on that word and triggers rank 0's interrupt at once.  A thread
 * of rank 0 waits for the interrupt and then reads the queue's state: the trigger cannot
 * begin before the data landed, so the queue must show DONE in every round, however the
 * threads are scheduled (rank 0 runs a thread that only yields, so that the thread moving
 * the data is preempted now and then).  With `cb` the transfers run on the library's DMA
 * thread (SCI_FLAG_USE_CALLBACK); else inside SCIStartDmaTransfer, while the waiting
 * thread may already run.  The answer comes as ANSWER says: `wait` (default), a plain
 * interrupt rank 0 waits for; `data`, a data interrupt carrying the round, waited for;
 * `icb` and `dcb`, the same delivered to a callback (the library's callback thread).
 *
 * Usage: sisci_causal [ROUNDS] [cb|nocb] [wait|data|icb|dcb]   (default 100000 rounds) */
#include "stest.h"
#include "causaltest.h"
#include <pthread.h>

#define SEG_ID 300
#define INTNO 40

static volatile long acked, called;
static long rounds, early;
static sci_local_interrupt_t li;
static sci_local_data_interrupt_t ldi;
static sci_dma_queue_t dq;

/* An answer to round r arrived: the queue must show the transfer's end. */
static void answered(long r)
{
    sci_dma_queue_state_t st = SCIDMAQueueState(dq);
    if (st != SCI_DMAQUEUE_DONE) {
        if (early++ < 5) fprintf(stderr, "sisci_causal: round %ld: the answer came while the queue was in state %d\n", r, (int)st);
    }
    __atomic_store_n(&acked, r, __ATOMIC_RELEASE);
}

static sci_callback_action_t on_int(void *arg, sci_local_interrupt_t i, sci_error_t status)
{
    (void)arg;
    (void)i;
    if (status != SCI_ERR_OK) SN_FAIL("interrupt callback status %s", SCIGetErrorString(status));
    answered(acked + 1);
    return SCI_CALLBACK_CONTINUE;
}

static sci_callback_action_t on_data(void *arg, sci_local_data_interrupt_t i, void *data, unsigned int len, sci_error_t status)
{
    (void)arg;
    (void)i;
    if (status != SCI_ERR_OK || len != sizeof(long)) SN_FAIL("data interrupt callback: status %s, %u bytes", SCIGetErrorString(status), len);
    long r;
    memcpy(&r, data, sizeof r);
    answered(r);
    return SCI_CALLBACK_CONTINUE;
}

/* Rank 0's waiting thread (`wait`, `data`): each answer, then the state of the transfer
 * it answers. */
static void *waiter(void *arg)
{
    int data = arg != NULL;
    for (long r = 1; r <= rounds; r++) {
        sci_error_t e;
        if (data) {
            long got = 0;
            unsigned int len = sizeof got;
            SCIWaitForDataInterrupt(ldi, &got, &len, SCI_INFINITE_TIMEOUT, 0, &e);
            if (e == SCI_ERR_OK && (len != sizeof got || got != r)) SN_FAIL("data interrupt of round %ld: %u bytes, round %ld", r, len, got);
        } else {
            SCIWaitForInterrupt(li, SCI_INFINITE_TIMEOUT, 0, &e);
        }
        if (e != SCI_ERR_OK) SN_FAIL("waiting for the answer (round %ld) -> %s", r, SCIGetErrorString(e));
        answered(r);
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
    const char *answer = argc > 3 ? argv[3] : "wait";
    int data = !strcmp(answer, "data") || !strcmp(answer, "dcb");
    int callback = !strcmp(answer, "icb") || !strcmp(answer, "dcb");
    if (!data && !callback && strcmp(answer, "wait")) SKIP("unknown answer mode %s", answer);
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
        unsigned int use_cb = callback ? SCI_FLAG_USE_CALLBACK : 0;
        if (data)
            OK(SCICreateDataInterrupt(sd, &ldi, 0, &no, callback ? on_data : NULL, NULL, SCI_FLAG_FIXED_INTNO | use_cb, &err));
        else
            OK(SCICreateInterrupt(sd, &li, 0, &no, callback ? on_int : NULL, NULL, SCI_FLAG_FIXED_INTNO | SCI_FLAG_COUNTING_INT | use_cb, &err));
    }
    CHECK(PMI_Barrier() == PMI_SUCCESS);

    if (rank == 1) {
        sci_remote_interrupt_t ri = NULL;
        sci_remote_data_interrupt_t rdi = NULL;
        if (data)
            rdi = st_connect_dint(sd, nodes[0], INTNO, 0, 30);
        else
            ri = st_connect_int(sd, nodes[0], INTNO, 0, 30);
        CHECK(PMI_Barrier() == PMI_SUCCESS);
        for (long r = 1; r <= rounds; r++) {
            unsigned spins = 0;
            while (mine[0] != (uint64_t)r) causal_relax(&spins);
            if (data)
                OK(SCITriggerDataInterrupt(rdi, &r, sizeof r, 0, &err));
            else
                OK(SCITriggerInterrupt(ri, 0, &err));
        }
        CHECK(PMI_Barrier() == PMI_SUCCESS);
        if (data)
            OK(SCIDisconnectDataInterrupt(rdi, 0, &err));
        else
            OK(SCIDisconnectInterrupt(ri, 0, &err));
        /* Each side drops what reaches the other before either goes (not a requirement:
         * a peer that ended answers at once; see fabric-jobtest gone). */
        CHECK(PMI_Barrier() == PMI_SUCCESS);
    } else {
        sci_remote_segment_t rs = st_connect(sd, nodes[1], SEG_ID + 1, NULL, NULL, 0, 30);
        OK(SCICreateDMAQueue(sd, &dq, 0, 1, 0, &err));
        pthread_t w, y;
        if (!callback) CHECK(pthread_create(&w, NULL, waiter, data ? (void *)1 : NULL) == 0);
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
        if (!callback) CHECK(pthread_join(w, NULL) == 0);
        CHECK(pthread_join(y, NULL) == 0);
        CHECK(PMI_Barrier() == PMI_SUCCESS);
        if (early) SN_FAIL("%ld of %ld answers came before the transfer's end", early, rounds);
        printf("sisci_causal: %ld rounds (%s, answers by %s), the transfer's end first in every one\n", rounds, cb ? "DMA thread" : "in the starting call", answer);
        OK(SCIRemoveDMAQueue(dq, 0, &err));
        OK(SCIDisconnectSegment(rs, 0, &err));
        CHECK(PMI_Barrier() == PMI_SUCCESS);
        if (data)
            OK(SCIRemoveDataInterrupt(ldi, 0, &err));
        else
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
