/* The physical floor: what two processes on this machine can do through shared
 * memory with no library at all.  `floor_bench pingpong|memcpy_bw`
 *
 *   pingpong   memcpy of the payload into the peer's half of a MAP_SHARED
 *              mapping, then a release store of a sequence flag on its own
 *              cache line; the peer spins on the flag (acquire), then answers
 *              the same way.  half round trip, 8 B - 64 KiB.
 *   memcpy_bw  one process memcpy()s from its private buffer into the shared
 *              mapping (one copy, what a single-copy put must do), window of 64
 *              copies, 4 KiB - 64 MiB.
 *   onesided   lower bounds of one-sided operations when nothing else touches
 *              the target line: put_lat = memcpy into the shared mapping plus
 *              a full fence (8 B - 64 KiB), amo_lat = one atomic fetch-add on a
 *              shared word (8 B).  Rank 1 only waits.
 *
 * The program forks itself: the parent is rank 0 on core 0, the child rank 1
 * on core 1 (sched_setaffinity, i.e. taskset). */
#include "bench.h"
#include <sys/mman.h>
#include <sys/wait.h>

#define LIB "floor"

struct ctrl {
    _Alignas(64) volatile uint64_t flag0;          /* written by rank 1, read by rank 0 */
    _Alignas(64) volatile uint64_t flag1;          /* written by rank 0, read by rank 1 */
    _Alignas(64) volatile uint64_t bar_count;
    _Alignas(64) volatile uint64_t bar_gen;
};

static struct ctrl *ctl;
static uint8_t *shbuf[2];   /* shbuf[r]: where the peer writes for r */
static uint8_t *src;
static int me;

static volatile uint64_t *myflag(int r) { return r == 0 ? &ctl->flag0 : &ctl->flag1; }

static void barrier(void) { bench_fork_barrier(&ctl->bar_count, &ctl->bar_gen, NULL); }

static uint64_t seq;

static void send(size_t size)
{
    int p = 1 - me;
    memcpy(shbuf[p], src, size);
    __atomic_store_n(myflag(p), ++seq, __ATOMIC_RELEASE);
}

static void wait_msg(size_t size)
{
    (void)size;
    unsigned long spins = 0;
    ++seq;
    while (__atomic_load_n(myflag(me), __ATOMIC_ACQUIRE) != seq) bench_spin_check(&spins);
}

static void pingpong(void)
{
    bench_pingpong_run(me, LIB, "pingpong", bench_lat_sizes, BENCH_NELEM(bench_lat_sizes), send, wait_msg, barrier, NULL);
}

static void memcpy_issue(size_t size, long j) { (void)j; memcpy(shbuf[1], src, size); }
static void memcpy_complete(size_t size) { (void)size; __atomic_thread_fence(__ATOMIC_SEQ_CST); }

static void memcpy_bw(void)
{
    bench_bw_run(me, LIB, "memcpy_bw", memcpy_issue, memcpy_complete, barrier);
}

static void put_op(size_t size)
{
    memcpy(shbuf[1], src, size);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static void amo_op(size_t size)
{
    (void)size;
    __atomic_fetch_add((volatile uint64_t *)(shbuf[1] + 64), 1, __ATOMIC_SEQ_CST);
}

static void onesided(void)
{
    bench_op_lat_sizes(me, LIB, "put_lat", put_op, NULL);
    if (me == 0) bench_op_lat(LIB, "amo_lat", 8, amo_op);
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "pingpong") && strcmp(argv[1], "memcpy_bw") && strcmp(argv[1], "onesided"))) {
        fprintf(stderr, "usage: floor_bench pingpong|memcpy_bw|onesided\n");
        return 2;
    }
    size_t per = 4096 + BENCH_MAX_BW;
    uint8_t *m = mmap(NULL, 4096 + 2 * per, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) { perror("mmap"); return 1; }
    memset(m, 0, 4096 + 2 * per);
    ctl = (struct ctrl *)m;
    shbuf[0] = m + 4096;
    shbuf[1] = m + 4096 + per;
    pid_t child = fork();
    if (child < 0) { perror("fork"); return 1; }
    me = child == 0 ? 1 : 0;
    bench_init_parent();
    bench_pin(me);
    if (posix_memalign((void **)&src, 4096, BENCH_MAX_BW)) return 1;
    memset(src, 0x5a, BENCH_MAX_BW);
    barrier();
    if (!strcmp(argv[1], "pingpong")) pingpong();
    else if (!strcmp(argv[1], "onesided")) onesided();
    else memcpy_bw();
    barrier();
    if (me == 1) _exit(0);
    int st = 0;
    waitpid(child, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
