/* Many threads per rank sharing one virtual device: each thread exports a segment and a
 * counting interrupt, connects to its twin thread's on the partner rank, and runs rounds
 * of DMA write + trigger / wait + check, alternating halves of the segment, plus PIO
 * through a map; the data is checked every round.  Built twice: as a plain program and
 * with -pthread -D_REENTRANT (sisci_threads_mt), which calls the multithreaded symbol
 * names.  Usage: sisci_threads [threads] [rounds] */
#include "stest.h"
#include <pthread.h>

#define BASE 500
#define HALF 32768

static int rank, size, peer, rounds;
static unsigned int *nodes;
static sci_desc_t sd;
static pthread_barrier_t bar;

static void *worker(void *p)
{
    int t = (int)(intptr_t)p;
    sci_error_t e = SCI_ERR_OK;
    sci_local_segment_t ls;
    sci_local_interrupt_t li;
    sci_dma_queue_t dq;
    sci_map_t lm, rm;
    unsigned int id = BASE + rank * 16 + t, pid = BASE + peer * 16 + t, no = id;
#define T_OK(call) do { e = (sci_error_t)0x12345; call; if (e != SCI_ERR_OK) SN_FAIL("thread %d: %s -> %s", t, #call, SCIGetErrorString(e)); } while (0)
    T_OK(SCICreateSegment(sd, &ls, id, 2 * HALF, NULL, NULL, 0, &e));
    volatile uint8_t *mine = SCIMapLocalSegment(ls, &lm, 0, 2 * HALF, NULL, 0, &e);
    CHECK(e == SCI_ERR_OK);
    T_OK(SCIPrepareSegment(ls, 0, 0, &e));
    T_OK(SCISetSegmentAvailable(ls, 0, 0, &e));
    T_OK(SCICreateInterrupt(sd, &li, 0, &no, NULL, NULL, SCI_FLAG_FIXED_INTNO | SCI_FLAG_COUNTING_INT, &e));
    T_OK(SCICreateDMAQueue(sd, &dq, 0, 1, 0, &e));
    sci_remote_segment_t rs;
    sci_remote_interrupt_t ri;
    double end = st_now() + 30;
    for (;;) {
        SCIConnectSegment(sd, &rs, nodes[peer], pid, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &e);
        if (e == SCI_ERR_OK) break;
        CHECK(e == SCI_ERR_NO_SUCH_SEGMENT && st_now() < end);
        usleep(1000);
    }
    for (;;) {
        SCIConnectInterrupt(sd, &ri, nodes[peer], 0, pid, SCI_INFINITE_TIMEOUT, 0, &e);
        if (e == SCI_ERR_OK) break;
        CHECK(e == SCI_ERR_NO_SUCH_INTNO && st_now() < end);
        usleep(1000);
    }
    volatile uint32_t *out = SCIMapRemoteSegment(rs, &rm, 0, 2 * HALF, NULL, 0, &e);
    CHECK(e == SCI_ERR_OK);
    uint32_t *src = malloc(HALF);
    for (int r = 1; r <= rounds; r++) {
        size_t half = (size_t)(r % 2) * HALF;
        for (size_t k = 0; k < HALF / 4; k++) src[k] = (uint32_t)(r * 1000003u + t * 7919u + k);
        /* DMA for even rounds, PIO through the map for odd ones. */
        if (r % 2 == 0) {
            T_OK(SCIStartDmaTransferMem(dq, src, rs, HALF, half, NULL, NULL, 0, &e));
            CHECK(SCIWaitForDMAQueue(dq, SCI_INFINITE_TIMEOUT, 0, &e) == SCI_DMAQUEUE_DONE && e == SCI_ERR_OK);
        } else {
            memcpy((void *)(out + half / 4), src, HALF);
            __sync_synchronize();
        }
        T_OK(SCITriggerInterrupt(ri, 0, &e));
        T_OK(SCIWaitForInterrupt(li, 30000, 0, &e));
        for (size_t k = 0; k < HALF / 4; k++) {
            uint32_t want = (uint32_t)(r * 1000003u + t * 7919u + k);
            uint32_t got = ((volatile uint32_t *)(mine + half))[k];
            if (got != want) SN_FAIL("thread %d round %d word %zu: %u, want %u", t, r, k, got, want);
        }
    }
    free(src);
    pthread_barrier_wait(&bar);
    if (t == 0) PMI_Barrier();          /* everyone is done writing */
    pthread_barrier_wait(&bar);
    T_OK(SCIUnmapSegment(rm, 0, &e));
    T_OK(SCIDisconnectSegment(rs, 0, &e));
    T_OK(SCIDisconnectInterrupt(ri, 0, &e));
    T_OK(SCIRemoveDMAQueue(dq, 0, &e));
    pthread_barrier_wait(&bar);
    if (t == 0) PMI_Barrier();          /* everyone disconnected */
    pthread_barrier_wait(&bar);
    T_OK(SCIRemoveInterrupt(li, 0, &e));
    T_OK(SCIUnmapSegment(lm, 0, &e));
    T_OK(SCIRemoveSegment(ls, 0, &e));
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    rounds = argc > 2 ? atoi(argv[2]) : 50;
    if (threads < 1 || threads > 16) SKIP("1..16 threads");
    OK(SCIInitialize(0, &err));
    st_job(&rank, &size, &nodes);
    if (size % 2) SKIP("needs an even number of ranks");
    peer = rank ^ 1;
    OK(SCIOpen(&sd, 0, &err));
    pthread_barrier_init(&bar, NULL, (unsigned)threads);
    pthread_t th[16];
    for (int t = 0; t < threads; t++) CHECK(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0);
    for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
    OK(SCIClose(sd, 0, &err));
    SCITerminate();
#ifdef _REENTRANT
    const char *names = "multithreaded";
#else
    const char *names = "single-threaded";
#endif
    printf("sisci_threads: rank %d of %d ok (%d threads, %d rounds, %s names)\n", rank, size, threads, rounds, names);
    PMI_Finalize();
    return 0;
}
