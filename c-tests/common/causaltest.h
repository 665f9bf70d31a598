/* Helpers of the causality tests (ugni/data_causal, utofu/utofu_causal,
 * sisci/sisci_causal): spins that give the core away now and then, and a thread that
 * only yields, so that a thread moving data is preempted between the data and its
 * completion now and then (more threads spin than there are cores). */
#ifndef CAUSALTEST_H
#define CAUSALTEST_H
#include <pthread.h>
#include <sched.h>

/* One turn of a spin: every 64th gives the core away. */
static inline __attribute__((unused)) void causal_relax(unsigned *spins)
{
    if (++*spins % 64 == 0) sched_yield();
}

/* Set to stop causal_yielder threads. */
static volatile int causal_stop;

/* A thread that only yields until causal_stop is set. */
static inline __attribute__((unused)) void *causal_yielder(void *arg)
{
    (void)arg;
    while (!causal_stop) sched_yield();
    return NULL;
}
#endif
