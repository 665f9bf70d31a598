/* softnic uTofu benchmarks: `snrun -n 2 bench/pin.sh utofu_bench <benchmark>` (an MPI
 * program, as uTofu programs are: VCQ ids and STADDs are exchanged with MPI).
 *
 *   put_pingpong   utofu_put of N bytes (no notices: the TCQ is drained silently), the
 *                  receiver spins on the last 8 bytes (a sequence number) and answers
 *                  the same way; 8 B - 64 KiB; half the round trip
 *   armw_fadd_lat  utofu_armw8(ADD) with LOCAL_MRQ_NOTICE, waiting for the notice that
 *                  carries the old value: a blocking fetch-and-add, 8 B; the TCQ polled
 *                  only when the ARMW answers BUSY, as in the guide's sample
 *   get_lat        utofu_get of N bytes with LOCAL_MRQ_NOTICE, waiting for that notice:
 *                  a blocking get; 8 B - 64 KiB (the TCQ polled as for armw_fadd_lat)
 *   put_lat        an 8 B utofu_put with TCQ_NOTICE, its TCQ entry polled (the peer's
 *                  receive half); put_straddle_lat the same into a 1 MiB region of the
 *                  peer's that straddles an aligned GiB of its addresses (so it lies in two
 *                  of the library's backings), puts spread over both sides, 8 B
 *   put_bw         64 utofu_put (fewer above 4 MiB; puts above 8 MiB are split in 8 MiB
 *                  pieces, max_putget_size being 16 MiB - 1), the last with
 *                  LOCAL_MRQ_NOTICE, then that notice; 4 KiB - 64 MiB
 *
 * Rank 0 is the origin; rank 1 only answers the ping-pong or waits in MPI_Barrier. */
#include "bench.h"
#include <mpi.h>
#include <sys/mman.h>
#include <utofu.h>

#define LIB "softnic-utofu"
#define PIECE (8u << 20)

static const char *bench_name = "init";
static int me;
static utofu_vcq_hdl_t vcq;
static utofu_vcq_id_t peer;
static utofu_stadd_t lcl, rmt;
static uint8_t *buf;          /* send half [0, BENCH_MAX_BW), receive half after it */
static uint64_t seq;

static void fail(const char *what, int rc)
{
    char msg[256];
    snprintf(msg, sizeof msg, "%s returned %d on rank %d", what, rc, me);
    bench_skip_line(LIB, bench_name, msg);
    fprintf(stderr, "utofu_bench %s: %s\n", bench_name, msg);
    MPI_Abort(MPI_COMM_WORLD, BENCH_SKIP_EXIT);
    exit(BENCH_SKIP_EXIT);
}

#define U(call) do { int rc_ = (call); if (rc_ != UTOFU_SUCCESS) fail(#call, rc_); } while (0)

static void drain_tcq(void)
{
    void *cb;
    int rc;
    while ((rc = utofu_poll_tcq(vcq, 0, &cb)) == UTOFU_SUCCESS) ;
    if (rc != UTOFU_ERR_NOT_FOUND) fail("utofu_poll_tcq", rc);
}

static void wait_notice(struct utofu_mrq_notice *n)
{
    int rc;
    unsigned long spins = 0;
    while ((rc = utofu_poll_mrq(vcq, 0, n)) == UTOFU_ERR_NOT_FOUND) bench_spin_check(&spins);
    if (rc != UTOFU_SUCCESS) fail("utofu_poll_mrq", rc);
}

static void pp_send(size_t size)
{
    seq++;
    memcpy(buf + size - 8, &seq, 8);
    U(utofu_put(vcq, peer, lcl, rmt + BENCH_MAX_BW, size, 0, 0, NULL));
    drain_tcq();
}

static void pp_wait(size_t size)
{
    volatile uint64_t *w = (volatile uint64_t *)(buf + BENCH_MAX_BW + size - 8);
    unsigned long spins = 0;
    uint64_t want = ++seq;
    while (*w != want) bench_spin_check(&spins);
}

static void sync_all(void) { MPI_Barrier(MPI_COMM_WORLD); }

/* A start call made as the guide's samples make it (utofu_armw_game.c,
 * utofu_get_progress.c): the TCQ is polled only when the call answers BUSY (the TOQ is
 * full of completions nobody asked to see), not after every operation. */
#define START(call) do { \
        int rc_; \
        while ((rc_ = (call)) == UTOFU_ERR_BUSY) drain_tcq(); \
        if (rc_ != UTOFU_SUCCESS) fail(#call, rc_); \
    } while (0)

static void fadd_op(size_t size)
{
    struct utofu_mrq_notice n;
    (void)size;
    START(utofu_armw8(vcq, peer, UTOFU_ARMW_OP_ADD, 1, rmt + BENCH_MAX_BW, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));
    wait_notice(&n);
}

/* get_lat: a get of N bytes from the peer's receive half into our send half, waiting for
 * its LCL_GET notice (a blocking get). */
static void get_op(size_t size)
{
    struct utofu_mrq_notice n;
    START(utofu_get(vcq, peer, lcl, rmt + BENCH_MAX_BW, size, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));
    wait_notice(&n);
}

/* put_lat / put_straddle_lat: one 8 B put into `put_to` (+ a rotating offset in the
 * straddling region), its TCQ entry polled. */
static utofu_stadd_t put_to;
static size_t put_span, put_off, put_n;
static void put_op(size_t size)
{
    void *cb;
    int rc;
    (void)size;
    U(utofu_put(vcq, peer, lcl, put_to + put_off, 8, 0, UTOFU_ONESIDED_FLAG_TCQ_NOTICE, NULL));
    while ((rc = utofu_poll_tcq(vcq, 0, &cb)) == UTOFU_ERR_NOT_FOUND) ;
    if (rc != UTOFU_SUCCESS) fail("utofu_poll_tcq", rc);
    /* 64 puts in a row per place: a program's accesses to a big region are local */
    if (put_span && ++put_n % 64 == 0) put_off = (put_off + 3 * 4096 + 8) % (put_span - 8) & ~(size_t)7;
}

/* 1 MiB of fresh memory with an aligned GiB half way (as c-tests' sn_straddling_gib). */
static uint8_t *straddling(void)
{
    const uintptr_t G = (uintptr_t)1 << 30;
    uint8_t *r = mmap(NULL, 3 * G, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED) fail("mmap", -1);
    uintptr_t b = ((uintptr_t)r + G) & ~(G - 1);
    uint8_t *p = mmap((void *)(b - (512u << 10)), 1u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (p != (uint8_t *)(b - (512u << 10))) fail("mmap", -1);
    memset(p, 0, 1u << 20);
    return p;
}

static long window_pos;
static void bw_issue(size_t size, long j)
{
    long w = bench_bw_window(size);
    for (size_t off = 0; off < size; off += PIECE) {
        size_t len = size - off < PIECE ? size - off : PIECE;
        int last = j == w - 1 && off + len == size;
        int rc;
        while ((rc = utofu_put(vcq, peer, lcl + off, rmt + BENCH_MAX_BW + off, len, 0, last ? UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE : 0, NULL)) == UTOFU_ERR_BUSY)
            drain_tcq();
        if (rc != UTOFU_SUCCESS) fail("utofu_put", rc);
    }
    window_pos = j;
}

static void bw_complete(size_t size)
{
    struct utofu_mrq_notice n;
    (void)size;
    wait_notice(&n);
    drain_tcq();
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc != 2) {
        fprintf(stderr, "usage: utofu_bench put_pingpong|put_lat|armw_fadd_lat|get_lat|put_bw\n");
        return 2;
    }
    bench_name = argv[1];
    int n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n != 2) fail("MPI_Comm_size (need 2 ranks)", n);
    buf = aligned_alloc(4096, 2 * (size_t)BENCH_MAX_BW);
    memset(buf, 0, 2 * (size_t)BENCH_MAX_BW);
    U(utofu_create_vcq(0, 0, &vcq));
    utofu_vcq_id_t mine;
    U(utofu_query_vcq_id(vcq, &mine));
    U(utofu_reg_mem(vcq, buf, 2 * (size_t)BENCH_MAX_BW, 0, &lcl));
    MPI_Sendrecv(&mine, 1, MPI_UINT64_T, 1 - me, 0, &peer, 1, MPI_UINT64_T, 1 - me, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&lcl, 1, MPI_UINT64_T, 1 - me, 0, &rmt, 1, MPI_UINT64_T, 1 - me, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    U(utofu_set_vcq_id_path(&peer, NULL));
    MPI_Barrier(MPI_COMM_WORLD);

    if (!strcmp(bench_name, "put_pingpong")) {
        bench_pingpong_run(me, LIB, "put_pingpong", bench_lat_sizes, BENCH_NELEM(bench_lat_sizes), pp_send, pp_wait, sync_all, NULL);
    } else if (!strcmp(bench_name, "armw_fadd_lat")) {
        if (me == 0) bench_op_lat(LIB, "armw_fadd_lat", 8, fadd_op);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (!strcmp(bench_name, "put_lat")) {
        utofu_stadd_t mine_s, peer_s;
        U(utofu_reg_mem(vcq, straddling(), 1u << 20, 0, &mine_s));
        MPI_Sendrecv(&mine_s, 1, MPI_UINT64_T, 1 - me, 0, &peer_s, 1, MPI_UINT64_T, 1 - me, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (me == 0) {
            put_to = rmt + BENCH_MAX_BW;
            bench_op_lat(LIB, "put_lat", 8, put_op);
            put_to = peer_s, put_span = 1u << 20;
            bench_op_lat(LIB, "put_straddle_lat", 8, put_op);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (!strcmp(bench_name, "get_lat")) {
        bench_op_lat_sizes(me, LIB, "get_lat", get_op, sync_all);
    } else if (!strcmp(bench_name, "put_bw")) {
        bench_bw_run(me, LIB, "put_bw", bw_issue, bw_complete, sync_all);
    } else {
        fprintf(stderr, "utofu_bench: unknown benchmark %s\n", bench_name);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    U(utofu_dereg_mem(vcq, lcl, 0));
    U(utofu_free_vcq(vcq));
    MPI_Finalize();
    return 0;
}
