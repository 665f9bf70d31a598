/* Cancelling threads blocked in a library call, the way programs do at exit: a watcher
 * thread parked in a blocking call (deferred or asynchronous cancellation type, a cleanup
 * handler pushed around the call) is cancelled with pthread_cancel and joined.  The call
 * must end the thread: joined as PTHREAD_CANCELED with the cleanup handler run, the
 * process alive.  What the library must still do afterwards is each test's own part. */
#ifndef CANCELTEST_H
#define CANCELTEST_H
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>
#include "sntest.h"

typedef struct {
    const char *what;
    /* The blocking call; returns only if the call returned (then the thread ends normally,
     * which a test of a call that should still be waiting reports as a failure). */
    void (*call)(void *arg);
    void *arg;
    int type;                 /* PTHREAD_CANCEL_DEFERRED or PTHREAD_CANCEL_ASYNCHRONOUS */
    int repeat;               /* call again and again (a call with a short timeout) */
    atomic_int started;
    atomic_int cleaned;
    atomic_long calls;
} ct_watcher_t;

static void ct_cleanup(void *p)
{
    atomic_store(&((ct_watcher_t *)p)->cleaned, 1);
}

static void *ct_main(void *p)
{
    ct_watcher_t *w = p;
    int old;
    pthread_setcanceltype(w->type, &old);
    pthread_cleanup_push(ct_cleanup, w);
    atomic_store(&w->started, 1);
    do {
        w->call(w->arg);
        atomic_fetch_add(&w->calls, 1);
    } while (w->repeat);
    pthread_cleanup_pop(0);
    return NULL;
}

static __attribute__((unused)) void ct_sleep_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
    while (nanosleep(&ts, &ts) != 0) {}
}

static __attribute__((unused)) const char *ct_type_name(int type)
{
    return type == PTHREAD_CANCEL_ASYNCHRONOUS ? "asynchronous" : "deferred";
}

/* Starts `call(arg)` on a watcher thread with cancellation type `type`, lets it run
 * `delay_us` after it started (0: cancel at once), cancels it and joins it. */
static __attribute__((unused)) void ct_cancel(const char *what, void (*call)(void *), void *arg, int type, int repeat, long delay_us)
{
    ct_watcher_t w;
    memset(&w, 0, sizeof(w));
    w.what = what; w.call = call; w.arg = arg; w.type = type; w.repeat = repeat;
    pthread_t th;
    CHECK(pthread_create(&th, NULL, ct_main, &w) == 0);
    while (!atomic_load(&w.started)) ct_sleep_us(100);
    if (delay_us) ct_sleep_us(delay_us);
    CHECK(pthread_cancel(th) == 0);
    void *res = NULL;
    CHECK(pthread_join(th, &res) == 0);
    if (res != PTHREAD_CANCELED)
        SN_FAIL("%s (%s): the thread was not cancelled: the call returned (thread result %p, %ld calls, cleanup %s)", what, ct_type_name(type), res, atomic_load(&w.calls), atomic_load(&w.cleaned) ? "ran" : "did not run");
    if (!atomic_load(&w.cleaned))
        SN_FAIL("%s (%s): cancelled, but its cleanup handler did not run", what, ct_type_name(type));
}

/* A thread that makes `call` again and again (a wait with a short timeout), cancelled
 * wherever it is (inside the call or between calls), `rounds` times with each type, after
 * `base_us` + 100 us per round. */
static __attribute__((unused)) void ct_loop_both(const char *what, void (*call)(void *), void *arg, int rounds, long base_us)
{
    for (int i = 0; i < rounds; i++) {
        ct_cancel(what, call, arg, PTHREAD_CANCEL_ASYNCHRONOUS, 1, base_us + 100 * i);
        ct_cancel(what, call, arg, PTHREAD_CANCEL_DEFERRED, 1, base_us + 100 * i);
    }
}

/* The usual battery for one blocking call: both types, cancelled at once, soon and after
 * it has surely gone to sleep; `rounds` times with short random delays for the races
 * between entering the call and the request. */
static __attribute__((unused)) void ct_battery(const char *what, void (*call)(void *), void *arg, int rounds)
{
    static const int types[2] = { PTHREAD_CANCEL_DEFERRED, PTHREAD_CANCEL_ASYNCHRONOUS };
    static const long delays[3] = { 0, 1000, 50000 };
    unsigned seed = (unsigned)getpid();
    for (int t = 0; t < 2; t++) {
        for (int d = 0; d < 3; d++) ct_cancel(what, call, arg, types[t], 0, delays[d]);
        for (int i = 0; i < rounds; i++) ct_cancel(what, call, arg, types[t], 0, rand_r(&seed) % 300);
    }
}
#endif
