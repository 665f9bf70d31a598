/* Shared helpers of the softnic benchmark programs (the bench/ C files).
 *
 * Every program measures between exactly two processes, rank 0 ("origin") and
 * rank 1 ("target"), and rank 0 prints one line per measurement:
 *
 *     RESULT <library> <benchmark> <size-bytes> <metric> <value>
 *
 * metric is half_rtt_us (ping-pong: round trip / 2), us (time per blocking
 * operation), GBps (1e9 bytes/s) or Mmsgps (1e6 messages/s).  Each value is
 * the median of BENCH_REPS (default 5) timed repetitions, after one untimed
 * warm-up pass of iters/10 (at least 10) iterations per size.  A benchmark that
 * cannot run prints "SKIP <library> <benchmark> <reason>" and the program
 * exits 77.  The runner (bench/run.py) collects these lines.
 *
 * Iteration counts depend only on the size (both ranks compute the same
 * numbers, no agreement needed); BENCH_SCALE (default 1.0) multiplies them. */
#ifndef SOFTNIC_BENCH_H
#define SOFTNIC_BENCH_H
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BENCH_SKIP_EXIT 77
#define BENCH_MAX_REPS 32

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int bench_reps(void)
{
    const char *v = getenv("BENCH_REPS");
    int r = v ? atoi(v) : 5;
    return r < 1 ? 1 : r > BENCH_MAX_REPS ? BENCH_MAX_REPS : r;
}

static inline double bench_scale(void)
{
    const char *v = getenv("BENCH_SCALE");
    double s = v ? atof(v) : 1.0;
    return s > 0 ? s : 1.0;
}

static inline long bench_clamp(double x, long lo, long hi)
{
    long v = (long)(x * bench_scale());
    return v < lo ? lo : v > hi ? hi : v;
}

/* Ping-pong / blocking-latency iterations for a message of `size` bytes. */
static inline long bench_lat_iters(size_t size)
{
    return bench_clamp(4e6 / ((double)size + 200.0), 200, 10000);
}

/* Window (outstanding operations) of the bandwidth tests: 64, fewer for huge
 * messages so that one window stays near 256 MiB. */
static inline long bench_bw_window(size_t size)
{
    long w = (long)((256u << 20) / size);
    return w > 64 ? 64 : w < 2 ? 2 : w;
}

/* Windows per repetition: about 256 MiB moved per repetition. */
static inline long bench_bw_windows(size_t size)
{
    double bytes = (double)bench_bw_window(size) * (double)size;
    return bench_clamp((256.0 * 1048576.0) / bytes, 1, 100000);
}

/* Message-rate windows (of 64 messages) per repetition. */
static inline long bench_rate_windows(void)
{
    return bench_clamp(3000, 50, 1000000);
}

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* BENCH_LIBRARY renames the library in RESULT/SKIP lines (the same program measured
 * another way: e.g. softnic-ugni over the network engine). */
static inline const char *bench_lib(const char *lib)
{
    const char *v = getenv("BENCH_LIBRARY");
    return v && *v ? v : lib;
}

static inline void bench_result(const char *lib, const char *bench, size_t size, const char *metric, double value)
{
    lib = bench_lib(lib);
    printf("RESULT %s %s %zu %s %.6g\n", lib, bench, size, metric, value);
    fflush(stdout);
}

static inline void bench_skip_line(const char *lib, const char *bench, const char *reason)
{
    lib = bench_lib(lib);
    printf("SKIP %s %s %s\n", lib, bench, reason);
    fflush(stdout);
}

/* Pins the calling process to one core (what `taskset -c cpu` does); the
 * fork-based programs use it, the launched ones run under bench/pin.sh. */
static inline void bench_pin(int cpu)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(n > 0 ? cpu % (int)n : 0, &set);
    sched_setaffinity(0, sizeof(set), &set);
}

/* Size lists. */
static const size_t bench_lat_sizes[] = { 8, 32, 128, 512, 2048, 8192, 32768, 65536 };
static const size_t bench_bw_sizes[] = { 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864 };
static const size_t bench_smsg_sizes[] = { 8, 16, 32, 64, 128, 256, 512, 1024 };
#define BENCH_NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define BENCH_MAX_BW (64u << 20)
#define BENCH_MAX_LAT (64u << 10)

/* Sizes can be narrowed with BENCH_SIZES=8,4096 (a comma list); only listed sizes run. */
static inline int bench_size_selected(size_t size)
{
    const char *v = getenv("BENCH_SIZES");
    if (!v || !*v) return 1;
    while (*v) {
        char *end;
        unsigned long long s = strtoull(v, &end, 10);
        if (end == v) return 1;
        if ((size_t)s == size) return 1;
        v = *end ? end + 1 : end;
    }
    return 0;
}

#define BENCH_SPIN() __builtin_ia32_pause()

/* Called from spin loops: every 2^20 spins, exits when the launcher is gone (the
 * process was re-parented), so a job whose peer or launcher died does not spin
 * forever on a flag nobody will write. */
static pid_t bench_parent;
/* Records the parent; the programs call it first thing (after fork, in the child). */
static inline void bench_init_parent(void) { bench_parent = getppid(); }
static inline void bench_spin_check(unsigned long *spins)
{
    if (!bench_parent) bench_init_parent();
    if ((++*spins & 0xfffff) == 0 && getppid() != bench_parent) {
        fprintf(stderr, "bench: launcher or peer gone; exiting\n");
        _exit(3);
    }
    BENCH_SPIN();
}

static inline long bench_warm(long iters)
{
    return iters / 10 < 10 ? 10 : iters / 10;
}

/* A barrier of the two processes of a forked benchmark, on two words of their shared
 * mapping (each on its own cache line).  `wait_step` (may be NULL) runs on every spin of the
 * waiting side: progress or a failure check. */
static inline void bench_fork_barrier(volatile uint64_t *count, volatile uint64_t *gen_word, void (*wait_step)(void))
{
    uint64_t gen = __atomic_load_n(gen_word, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(count, 1, __ATOMIC_ACQ_REL) == 2) {
        __atomic_store_n(count, 0, __ATOMIC_RELAXED);
        __atomic_store_n(gen_word, gen + 1, __ATOMIC_RELEASE);
    } else {
        unsigned long spins = 0;
        while (__atomic_load_n(gen_word, __ATOMIC_ACQUIRE) == gen) {
            if (wait_step) wait_step();
            bench_spin_check(&spins);
        }
    }
}

/* The ping-pong loop every library's latency benchmark shares.  For each selected size
 * of `sizes`: sync() (when given), one warm-up pass and `reps` timed passes of
 * bench_lat_iters(size) round trips (rank 0: send(size) then wait(size); the other rank
 * the reverse), then after() (when given; e.g. reap what is still outstanding).  Rank 0
 * reports the median half round trip. */
static inline void bench_pingpong_run(int me, const char *lib, const char *bench, const size_t *sizes, size_t nsizes,
                                      void (*send)(size_t size), void (*wait)(size_t size),
                                      void (*sync)(void), void (*after)(void))
{
    double v[BENCH_MAX_REPS];
    int reps = bench_reps();
    for (size_t k = 0; k < nsizes; k++) {
        size_t size = sizes[k];
        if (!bench_size_selected(size)) continue;
        long iters = bench_lat_iters(size);
        if (sync) sync();
        for (int r = -1; r < reps; r++) {
            long n = r < 0 ? bench_warm(iters) : iters;
            double t0 = bench_now();
            for (long i = 0; i < n; i++) {
                if (me == 0) { send(size); wait(size); }
                else { wait(size); send(size); }
            }
            if (r >= 0) v[r] = (bench_now() - t0) / (double)n / 2 * 1e6;
        }
        if (after) after();
        if (me == 0) bench_result(lib, bench, size, "half_rtt_us", bench_median(v, reps));
    }
}

/* Times a blocking operation the calling rank issues alone: one warm-up pass of
 * bench_warm(iters) calls of op(size), then `reps` passes of bench_lat_iters(size)
 * calls; reports the median time per call (us). */
static inline void bench_op_lat(const char *lib, const char *bench, size_t size, void (*op)(size_t size))
{
    double v[BENCH_MAX_REPS];
    int reps = bench_reps();
    long iters = bench_lat_iters(size);
    for (int r = -1; r < reps; r++) {
        long n = r < 0 ? bench_warm(iters) : iters;
        double t0 = bench_now();
        for (long i = 0; i < n; i++) op(size);
        if (r >= 0) v[r] = (bench_now() - t0) / (double)n * 1e6;
    }
    bench_result(lib, bench, size, "us", bench_median(v, reps));
}

/* One step of an op_cost benchmark: its name and the call it times. */
typedef struct {
    const char *name;
    void (*op)(size_t size);
} bench_cost_t;

/* bench_op_lat at 8 B on rank 0 for each step of an op_cost benchmark. */
static inline void bench_costs(int me, const char *lib, const bench_cost_t *steps, size_t n)
{
    if (me != 0) return;
    for (size_t i = 0; i < n; i++) bench_op_lat(lib, steps[i].name, 8, steps[i].op);
}

/* bench_op_lat on rank 0 for every selected size of bench_lat_sizes; every rank runs
 * sync() (when given) after each size. */
static inline void bench_op_lat_sizes(int me, const char *lib, const char *bench, void (*op)(size_t size),
                                      void (*sync)(void))
{
    for (size_t k = 0; k < BENCH_NELEM(bench_lat_sizes); k++) {
        size_t size = bench_lat_sizes[k];
        if (!bench_size_selected(size)) continue;
        if (me == 0) bench_op_lat(lib, bench, size, op);
        if (sync) sync();
    }
}

/* The windowed bandwidth loop every library's *_bw benchmark shares.  For each selected
 * size, rank 0 issues a window of transfers (issue(size, j) for j < window), then waits
 * for them (complete(size)); one untimed window warms up, then each repetition times
 * `windows` windows and the median of bytes/s (1e9) is reported.  Every rank runs
 * sync() after each size. */
static inline void bench_bw_run(int me, const char *lib, const char *bench,
                                void (*issue)(size_t size, long j), void (*complete)(size_t size),
                                void (*sync)(void))
{
    double v[BENCH_MAX_REPS];
    int reps = bench_reps();
    for (size_t k = 0; k < BENCH_NELEM(bench_bw_sizes); k++) {
        size_t size = bench_bw_sizes[k];
        if (!bench_size_selected(size)) continue;
        long w = bench_bw_window(size), windows = bench_bw_windows(size);
        if (me == 0) {
            for (int r = -1; r < reps; r++) {
                long n = r < 0 ? 1 : windows;
                double t0 = bench_now();
                for (long i = 0; i < n; i++) {
                    for (long j = 0; j < w; j++) issue(size, j);
                    complete(size);
                }
                if (r >= 0) v[r] = (double)n * (double)w * (double)size / (bench_now() - t0) / 1e9;
            }
            bench_result(lib, bench, size, "GBps", bench_median(v, reps));
        }
        sync();
    }
}
#endif
