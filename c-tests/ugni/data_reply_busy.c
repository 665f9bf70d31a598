/* An initiator's completion must not wait for its target to call the library again.
 *
 * Over the network engine, the reply that completes a short put may be held back while
 * the target's program spins on its memory (fabric/src/net.rs, "The reply off the
 * target's path"): it goes with the target's next request, when a thread of it sleeps in
 * the library, or after a short timer.  Here the target never gives it the first two: after
 * each flag it computes for COMPUTE_MS without any call (no uGNI, no PMI), then spins for
 * the next flag.  Each of the initiator's puts must complete well before the target's
 * computation ends; a reply that waited for the target's next call would come only at
 * the final barrier.  The last put is answered by a target that exits right after seeing
 * it, without finalizing: the initiator's completion is still a success.
 *
 * Every rank pins itself (and so the engine's progress thread, started later) to one
 * core, so that the progress thread's wake-up preempts the spinning program, which is
 * when replies are held back.  Shared memory (snrun) runs the same checks. */
#define _GNU_SOURCE
#include "data_util.h"
#include <sched.h>
#include <unistd.h>

#define ROUNDS 6
#define COMPUTE_MS 400
#define BOUND_MS 200

static void pin_to_core(int rank)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET((int)(rank % (ncpu > 0 ? ncpu : 1)), &s);
    (void)sched_setaffinity(0, sizeof s, &s); /* best effort: the checks hold either way */
}

int main(void)
{
    const char *r = getenv("PMI_RANK");
    pin_to_core(r ? atoi(r) : 0);
    gnit_t t;
    gnit_init(&t, 64);
    int n = t.size, me = t.rank;
    if (n != 2) SKIP("needs 2 ranks");
    uint8_t *buf = dt_alloc(4096), *src = dt_alloc(4096);
    gni_mem_handle_t bmh = dt_reg(&t, buf, 4096, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t smh = dt_reg(&t, src, 4096, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t mh[2];
    uint64_t base[2];
    gnit_exchange_mem(&t, buf, bmh, mh, base);
    volatile uint64_t *flag = (volatile uint64_t *)buf;
    gni_post_descriptor_t d;

    if (me == 1) {
        double worst = 0;
        for (uint64_t i = 1; i <= ROUNDS + 1; i++) {
            *(uint64_t *)src = i;
            dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, src, smh, base[0], mh[0], 8);
            double t0 = dt_now();
            dt_fma(&t, 0, &d);
            double ms = (dt_now() - t0) * 1e3;
            if (ms > worst) worst = ms;
            if (ms > BOUND_MS)
                SN_FAIL("put %d completed after %.1f ms: its reply waited for the target (computing %d ms)",
                        (int)i, ms, COMPUTE_MS);
            if (i <= ROUNDS) {
                /* Let the target finish this round's computation before the next put. */
                double until = dt_now() + COMPUTE_MS * 1.2e-3;
                while (dt_now() < until) {}
            }
        }
        printf("data_reply_busy: slowest completion %.3f ms (bound %d ms)\n", worst, BOUND_MS);
        printf("data_reply_busy: rank %d ok\n", me);
        fflush(stdout);
        /* The target is gone: no barrier, no teardown.  Only the PMI connection is
         * ended, or mpiexec (hydra) may take this exit for a crash and kill the target
         * before it prints its line. */
        CHECK_EQ(PMI_Finalize(), PMI_SUCCESS);
        _exit(0);
    }
    /* The target: no library call from here on. */
    for (uint64_t i = 1; i <= ROUNDS; i++) {
        while (*flag != i) {}
        double until = dt_now() + COMPUTE_MS * 1e-3;
        volatile uint64_t work = 0;
        while (dt_now() < until) work++;
    }
    while (*flag != ROUNDS + 1) {}
    printf("data_reply_busy: rank %d ok\n", me);
    fflush(stdout);
    exit(0); /* without finalizing, as programs may */
}
