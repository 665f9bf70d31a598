/* softnic SISCI benchmarks: `snrun -n 2 bench/pin.sh sisci_bench <benchmark>` (node ids
 * exchanged with PMI_Allgather of SCIGetLocalNodeId, as a launched SISCI program does).
 *
 *   pio_pingpong  PIO through mapped segments: each rank maps the other's inbox and
 *                 stores N bytes into it with memcpy, the last 8 being a sequence number
 *                 (stored last); the receiver spins on its local map and answers the
 *                 same way; 8 B - 64 KiB; half the round trip
 *   dma_bw        SCIStartDmaTransfer of N bytes from a local segment into the peer's
 *                 segment on one of 4 queues in turn, then SCIWaitForDMAQueue on each;
 *                 4 KiB - 64 MiB
 *   intr_lat      SCITriggerInterrupt / SCIWaitForInterrupt ping-pong: the receiver
 *                 sleeps in the wait (futex), the sender's trigger wakes it; half the
 *                 round trip (reported at size 0)
 *
 * Rank 0 is the origin; rank 1 answers the ping-pongs or waits in PMI_Barrier. */
#include "bench.h"
#include <pmi.h>
#include <sisci_api.h>

#define LIB "softnic-sisci"
#define NQ 4

static const char *bench_name = "init";
static int me;
static sci_desc_t sd;
static volatile uint8_t *in, *out;
static uint64_t seq;
static sci_local_segment_t ls;
static sci_remote_segment_t rs;
static sci_dma_queue_t dq[NQ];
static sci_local_interrupt_t li;
static sci_remote_interrupt_t ri;

static void fail(const char *what, sci_error_t e)
{
    char msg[256];
    snprintf(msg, sizeof msg, "%s: %s on rank %d", what, SCIGetErrorString(e), me);
    bench_skip_line(LIB, bench_name, msg);
    fprintf(stderr, "sisci_bench %s: %s\n", bench_name, msg);
    PMI_Abort(BENCH_SKIP_EXIT, msg);
    exit(BENCH_SKIP_EXIT);
}

#define S(...) do { sci_error_t e_ = SCI_ERR_OK; sci_error_t *err = &e_; __VA_ARGS__; if (e_ != SCI_ERR_OK) fail(#__VA_ARGS__, e_); } while (0)

static void pp_send(size_t size)
{
    seq++;
    memcpy((void *)out, (const void *)(in + BENCH_MAX_LAT), size - 8);
    __atomic_store_n((uint64_t *)(out + size - 8), seq, __ATOMIC_RELEASE);
}

static void pp_wait(size_t size)
{
    volatile uint64_t *w = (volatile uint64_t *)(in + size - 8);
    unsigned long spins = 0;
    uint64_t want = ++seq;
    while (*w != want) bench_spin_check(&spins);
}

static void sync_all(void) { PMI_Barrier(); }

static void dma_issue(size_t size, long j)
{
    S(SCIStartDmaTransfer(dq[j % NQ], ls, rs, 0, size, 0, NULL, NULL, 0, err));
}

static void dma_complete(size_t size)
{
    (void)size;
    for (int q = 0; q < NQ; q++) {
        if (SCIDMAQueueState(dq[q]) == SCI_DMAQUEUE_IDLE) continue;
        sci_dma_queue_state_t st;
        S(st = SCIWaitForDMAQueue(dq[q], SCI_INFINITE_TIMEOUT, 0, err));
        if (st != SCI_DMAQUEUE_DONE) fail("SCIWaitForDMAQueue state", SCI_ERR_TRANSFER_FAILED);
    }
}

static void int_send(size_t size) { (void)size; S(SCITriggerInterrupt(ri, 0, err)); }
static void int_wait(size_t size) { (void)size; S(SCIWaitForInterrupt(li, SCI_INFINITE_TIMEOUT, 0, err)); }

int main(int argc, char **argv)
{
    bench_init_parent();
    if (argc != 2) {
        fprintf(stderr, "usage: sisci_bench pio_pingpong|dma_bw|intr_lat\n");
        return 2;
    }
    bench_name = argv[1];
    int n, spawned;
    PMI_Init(&spawned);
    PMI_Get_rank(&me);
    PMI_Get_size(&n);
    if (n != 2) fail("PMI_Get_size (need 2 ranks)", SCI_ERR_ILLEGAL_PARAMETER);
    S(SCIInitialize(0, err));
    S(SCIOpen(&sd, 0, err));
    unsigned int node, nodes[2];
    S(SCIGetLocalNodeId(0, &node, 0, err));
    PMI_Allgather(&node, nodes, sizeof node);
    int dma = !strcmp(bench_name, "dma_bw");
    size_t segsize = dma ? BENCH_MAX_BW : 2 * BENCH_MAX_LAT;
    sci_map_t lm, rm;
    S(SCICreateSegment(sd, &ls, 7000 + me, segsize, NULL, NULL, 0, err));
    S(in = SCIMapLocalSegment(ls, &lm, 0, segsize, NULL, 0, err));
    S(SCIPrepareSegment(ls, 0, 0, err));
    S(SCISetSegmentAvailable(ls, 0, 0, err));
    unsigned int no = 7000 + me;
    S(SCICreateInterrupt(sd, &li, 0, &no, NULL, NULL, SCI_FLAG_FIXED_INTNO, err));
    PMI_Barrier();
    S(SCIConnectSegment(sd, &rs, nodes[1 - me], 7000 + (1 - me), 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, err));
    S(out = SCIMapRemoteSegment(rs, &rm, 0, segsize, NULL, 0, err));
    S(SCIConnectInterrupt(sd, &ri, nodes[1 - me], 0, 7000 + (1 - me), SCI_INFINITE_TIMEOUT, 0, err));
    for (int q = 0; q < NQ; q++) S(SCICreateDMAQueue(sd, &dq[q], 0, 1, 0, err));
    PMI_Barrier();

    if (!strcmp(bench_name, "pio_pingpong")) {
        bench_pingpong_run(me, LIB, "pio_pingpong", bench_lat_sizes, BENCH_NELEM(bench_lat_sizes), pp_send, pp_wait, sync_all, NULL);
    } else if (dma) {
        bench_bw_run(me, LIB, "dma_bw", dma_issue, dma_complete, sync_all);
    } else if (!strcmp(bench_name, "intr_lat")) {
        static const size_t zero[] = { 0 };
        bench_pingpong_run(me, LIB, "intr_lat", zero, 1, int_send, int_wait, sync_all, NULL);
    } else {
        fprintf(stderr, "sisci_bench: unknown benchmark %s\n", bench_name);
        PMI_Abort(2, "unknown benchmark");
    }
    PMI_Barrier();
    for (int q = 0; q < NQ; q++) S(SCIRemoveDMAQueue(dq[q], 0, err));
    S(SCIDisconnectInterrupt(ri, 0, err));
    S(SCIUnmapSegment(rm, 0, err));
    S(SCIDisconnectSegment(rs, 0, err));
    PMI_Barrier();
    S(SCIRemoveInterrupt(li, 0, err));
    S(SCIUnmapSegment(lm, 0, err));
    S(SCIRemoveSegment(ls, 0, err));
    S(SCIClose(sd, 0, err));
    SCITerminate();
    PMI_Finalize();
    return 0;
}
