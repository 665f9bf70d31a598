/* softnic DMAPP benchmarks: `XT_SYMMETRIC_HEAP_SIZE=160M snrun -n 2 bench/pin.sh dmapp_bench <benchmark>`.
 *
 *   put_lat     blocking dmapp_put (data visible at the target on return), 8 B - 64 KiB
 *   get_lat     blocking dmapp_get, 8 B - 64 KiB
 *   put_nbi_bw  64 dmapp_put_nbi (fewer above 4 MiB), then dmapp_gsync_wait, 4 KiB - 64 MiB
 *   afadd_lat   blocking dmapp_afadd_qw, 8 B
 *   put_pingpong  blocking dmapp_put of N bytes whose last 8 are a sequence number;
 *               the receiver spins on that word in its symmetric heap and answers the
 *               same way (the ping-pong of every other API); 8 B - 64 KiB, half the
 *               round trip
 *   put_nbi_msgrate  windows of 256 dmapp_put_nbi of 8 B (to distinct words), each
 *               window completed by one dmapp_gsync_wait: the work of UCX's put_msgrate
 *   op_cost     cost_rejected: a dmapp_put to a PE out of range (the entry and first
 *               checks, time per call), beside put_lat and put_nbi_msgrate
 *
 * Rank 0 is the origin, rank 1 the target (it only waits in a barrier, or answers
 * the ping-pong); the target buffers are in the symmetric heap.  A DMAPP failure prints a SKIP line
 * and aborts the job with exit code 77. */
#include "bench.h"
#include "dmapp.h"
#include "pmi.h"

#define LIB "softnic-dmapp"

static const char *bench_name = "init";
static dmapp_jobinfo_t job;
static int me, peer;
static uint8_t *heap, *src;

static void fail(const char *what, dmapp_return_t rc)
{
    char msg[256];
    const char *text = NULL;
    dmapp_explain_error(rc, &text);
    snprintf(msg, sizeof msg, "%s returned %d (%s) on rank %d", what, (int)rc, text ? text : "?", me);
    bench_skip_line(LIB, bench_name, msg);
    fprintf(stderr, "dmapp_bench %s: %s\n", bench_name, msg);
    PMI_Abort(BENCH_SKIP_EXIT, msg);
    exit(BENCH_SKIP_EXIT);
}

#define D(call) do { dmapp_return_t rc_ = (call); if (rc_ != DMAPP_RC_SUCCESS) fail(#call, rc_); } while (0)

static void barrier(void)
{
    if (PMI_Barrier() != PMI_SUCCESS) fail("PMI_Barrier", DMAPP_RC_RESOURCE_ERROR);
}

static void put_op(size_t size) { D(dmapp_put(heap, &job.sheap_seg, peer, src, size / 8, DMAPP_QW)); }
static void get_op(size_t size) { D(dmapp_get(src, heap, &job.sheap_seg, peer, size / 8, DMAPP_QW)); }

/* Ping-pong: puts land at PP_OFF of the peer's heap (clear of the other benchmarks'
 * target at offset 0), sent from the same offset of `src`. */
#define PP_OFF (BENCH_MAX_BW / 2)
static uint64_t seq;

static void pp_send(size_t size)
{
    seq++;
    memcpy(src + PP_OFF + size - 8, &seq, 8);
    D(dmapp_put(heap + PP_OFF, &job.sheap_seg, peer, src + PP_OFF, size / 8, DMAPP_QW));
}

static void pp_wait(size_t size)
{
    volatile uint64_t *w = (volatile uint64_t *)(heap + PP_OFF + size - 8);
    unsigned long spins = 0;
    uint64_t want = ++seq;
    while (*w != want) bench_spin_check(&spins);
}

static void put_nbi_issue(size_t size, long j)
{
    (void)j;
    D(dmapp_put_nbi(heap, &job.sheap_seg, peer, src, size / 8, DMAPP_QW));
}
static void put_nbi_complete(size_t size) { (void)size; D(dmapp_gsync_wait()); }

static void put_nbi_bw(void)
{
    bench_bw_run(me, LIB, "put_nbi_bw", put_nbi_issue, put_nbi_complete, barrier);
}

static void put_nbi_msgrate(void)
{
    double v[BENCH_MAX_REPS];
    int reps = bench_reps();
    long w = 256, windows = bench_rate_windows();
    if (me == 0) {
        for (int r = -1; r < reps; r++) {
            long n = r < 0 ? bench_warm(windows) : windows;
            double t0 = bench_now();
            for (long i = 0; i < n; i++) {
                for (long j = 0; j < w; j++) D(dmapp_put_nbi(heap + 8 * j, &job.sheap_seg, peer, src + 8 * j, 1, DMAPP_QW));
                D(dmapp_gsync_wait());
            }
            if (r >= 0) v[r] = (double)n * (double)w / (bench_now() - t0) / 1e6;
        }
        bench_result(LIB, "put_nbi_msgrate", 8, "Mmsgps", bench_median(v, reps));
    }
    barrier();
}

static void afadd_op(size_t size)
{
    int64_t result;
    (void)size;
    D(dmapp_afadd_qw(&result, heap, &job.sheap_seg, peer, 1));
}

/* op_cost: the entry of a put that fails its first checks (a PE out of range), beside
 * the whole put (put_lat) and the queued one (put_nbi_msgrate). */
static void cost_rejected(size_t size)
{
    if (dmapp_put(heap, &job.sheap_seg, job.npes, src, size / 8, DMAPP_QW) != DMAPP_RC_INVALID_PARAM)
        fail("dmapp_put to a PE out of range", DMAPP_RC_INVALID_PARAM);
}

static void op_cost(void)
{
    static const bench_cost_t steps[] = { { "cost_rejected", cost_rejected } };
    bench_costs(me, LIB, steps, BENCH_NELEM(steps));
    barrier();
}

static void afadd_lat(void)
{
    if (me == 0) bench_op_lat(LIB, "afadd_lat", 8, afadd_op);
    barrier();
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: dmapp_bench put_lat|get_lat|put_pingpong|put_nbi_bw|afadd_lat|put_nbi_msgrate|op_cost\n");
        return 2;
    }
    bench_name = argv[1];
    dmapp_rma_attrs_t req, act;
    memset(&req, 0, sizeof req);
    req.max_outstanding_nb = DMAPP_DEF_OUTSTANDING_NB;
    req.offload_threshold = DMAPP_OFFLOAD_THRESHOLD;
    req.put_relaxed_ordering = DMAPP_ROUTING_DETERMINISTIC;
    req.get_relaxed_ordering = DMAPP_ROUTING_ADAPTIVE;
    req.max_concurrency = 1;
    D(dmapp_init(&req, &act));
    D(dmapp_get_jobinfo(&job));
    me = job.pe;
    if (job.npes != 2) fail("job size must be 2", DMAPP_RC_INVALID_PARAM);
    peer = 1 - me;
    heap = dmapp_sheap_malloc(BENCH_MAX_BW);
    if (!heap) fail("dmapp_sheap_malloc(64 MiB) (set XT_SYMMETRIC_HEAP_SIZE=160M)", DMAPP_RC_RESOURCE_ERROR);
    if (posix_memalign((void **)&src, 4096, BENCH_MAX_BW)) fail("posix_memalign", DMAPP_RC_RESOURCE_ERROR);
    memset(src, 0x5a, BENCH_MAX_BW);
    memset(heap, 0, BENCH_MAX_BW);
    barrier();
    const char *b = argv[1];
    if (!strcmp(b, "put_lat")) bench_op_lat_sizes(me, LIB, b, put_op, barrier);
    else if (!strcmp(b, "get_lat")) bench_op_lat_sizes(me, LIB, b, get_op, barrier);
    else if (!strcmp(b, "put_pingpong")) bench_pingpong_run(me, LIB, b, bench_lat_sizes, BENCH_NELEM(bench_lat_sizes), pp_send, pp_wait, barrier, NULL);
    else if (!strcmp(b, "put_nbi_bw")) put_nbi_bw();
    else if (!strcmp(b, "afadd_lat")) afadd_lat();
    else if (!strcmp(b, "op_cost")) op_cost();
    else if (!strcmp(b, "put_nbi_msgrate")) put_nbi_msgrate();
    else { fprintf(stderr, "dmapp_bench: unknown benchmark %s\n", b); PMI_Abort(2, "unknown benchmark"); return 2; }
    D(dmapp_finalize());
    return 0;
}
