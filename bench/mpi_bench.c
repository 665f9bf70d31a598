/* MPICH peer benchmarks: `mpiexec -n 2 bench/pin.sh mpi_bench <benchmark>`
 * (MPICH's own launcher; built with mpicc).
 *
 *   pingpong   MPI_Send / MPI_Recv ping-pong, half round trip, 8 B - 64 KiB
 *   put_flush  MPI_Put + MPI_Win_flush (passive target, lock_all), 8 B - 64 KiB
 *   get_flush  MPI_Get + MPI_Win_flush, 8 B - 64 KiB
 *   fadd_lat   MPI_Fetch_and_op(MPI_SUM) + MPI_Win_flush, 8 B
 *   put_bw     64 MPI_Put (fewer above 4 MiB), then MPI_Win_flush, 4 KiB - 64 MiB
 *   send_bw    64 MPI_Isend / MPI_Irecv (fewer above 4 MiB), Waitall, 1-byte ack
 *
 * The window comes from MPI_Win_allocate.  During one-sided tests rank 1 waits
 * in MPI_Barrier, which drives MPICH's progress engine. */
#include "bench.h"
#include <mpi.h>

#define LIB "mpich"
#define MAXW 64

static int me, peer;
static uint8_t *src, *dst, *base;
static MPI_Win win;

static void mpi_barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }

static void pp_send(size_t size) { MPI_Send(src, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD); }
static void pp_recv(size_t size) { MPI_Recv(dst, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }

static void pingpong(void)
{
    bench_pingpong_run(me, LIB, "pingpong", bench_lat_sizes, BENCH_NELEM(bench_lat_sizes), pp_send, pp_recv, mpi_barrier, NULL);
}

static void put_flush(size_t size)
{
    MPI_Put(src, (int)size, MPI_BYTE, peer, 0, (int)size, MPI_BYTE, win);
    MPI_Win_flush(peer, win);
}

static void get_flush(size_t size)
{
    MPI_Get(dst, (int)size, MPI_BYTE, peer, 0, (int)size, MPI_BYTE, win);
    MPI_Win_flush(peer, win);
}

static void fadd_flush(size_t size)
{
    int64_t one = 1, old;
    (void)size;
    MPI_Fetch_and_op(&one, &old, MPI_INT64_T, peer, 0, MPI_SUM, win);
    MPI_Win_flush(peer, win);
}

static void fadd_lat(void)
{
    if (me == 0) bench_op_lat(LIB, "fadd_lat", 8, fadd_flush);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void put_bw_issue(size_t size, long j)
{
    (void)j;
    MPI_Put(src, (int)size, MPI_BYTE, peer, 0, (int)size, MPI_BYTE, win);
}
static void put_bw_complete(size_t size) { (void)size; MPI_Win_flush(peer, win); }

static void put_bw(void)
{
    bench_bw_run(me, LIB, "put_bw", put_bw_issue, put_bw_complete, mpi_barrier);
}

static void send_bw(void)
{
    double v[BENCH_MAX_REPS];
    int reps = bench_reps();
    MPI_Request req[MAXW];
    char ack = 0;
    for (size_t k = 0; k < BENCH_NELEM(bench_bw_sizes); k++) {
        size_t size = bench_bw_sizes[k];
        if (!bench_size_selected(size)) continue;
        long w = bench_bw_window(size), windows = bench_bw_windows(size);
        MPI_Barrier(MPI_COMM_WORLD);
        for (int r = -1; r < reps; r++) {
            long n = r < 0 ? 1 : windows;
            double t0 = bench_now();
            for (long i = 0; i < n; i++) {
                if (me == 0) {
                    for (long j = 0; j < w; j++) MPI_Isend(src, (int)size, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &req[j]);
                    MPI_Waitall((int)w, req, MPI_STATUSES_IGNORE);
                    MPI_Recv(&ack, 1, MPI_BYTE, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    for (long j = 0; j < w; j++) MPI_Irecv(dst, (int)size, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &req[j]);
                    MPI_Waitall((int)w, req, MPI_STATUSES_IGNORE);
                    MPI_Send(&ack, 1, MPI_BYTE, peer, 3, MPI_COMM_WORLD);
                }
            }
            if (r >= 0) v[r] = (double)n * (double)w * (double)size / (bench_now() - t0) / 1e9;
        }
        if (me == 0) bench_result(LIB, "send_bw", size, "GBps", bench_median(v, reps));
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 2 || size != 2) {
        if (me == 0) fprintf(stderr, "usage: mpiexec -n 2 mpi_bench pingpong|put_flush|get_flush|fadd_lat|put_bw|send_bw\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    peer = 1 - me;
    if (posix_memalign((void **)&src, 4096, BENCH_MAX_BW) || posix_memalign((void **)&dst, 4096, BENCH_MAX_BW))
        MPI_Abort(MPI_COMM_WORLD, 1);
    memset(src, 0x5a, BENCH_MAX_BW);
    memset(dst, 0, BENCH_MAX_BW);
    const char *b = argv[1];
    int rma = !strcmp(b, "put_flush") || !strcmp(b, "get_flush") || !strcmp(b, "fadd_lat") || !strcmp(b, "put_bw");
    if (rma) {
        MPI_Win_allocate(BENCH_MAX_BW, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        memset(base, 0, BENCH_MAX_BW);
        MPI_Win_lock_all(0, win);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (!strcmp(b, "pingpong")) pingpong();
    else if (!strcmp(b, "put_flush")) bench_op_lat_sizes(me, LIB, b, put_flush, mpi_barrier);
    else if (!strcmp(b, "get_flush")) bench_op_lat_sizes(me, LIB, b, get_flush, mpi_barrier);
    else if (!strcmp(b, "fadd_lat")) fadd_lat();
    else if (!strcmp(b, "put_bw")) put_bw();
    else if (!strcmp(b, "send_bw")) send_bw();
    else {
        if (me == 0) fprintf(stderr, "mpi_bench: unknown benchmark %s\n", b);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rma) {
        MPI_Win_unlock_all(win);
        MPI_Win_free(&win);
    }
    MPI_Finalize();
    return 0;
}
