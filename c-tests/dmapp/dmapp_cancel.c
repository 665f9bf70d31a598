/* Watcher threads blocked in DMAPP's blocking calls, cancelled (deferred and asynchronous)
 * while the rest of the job goes on:
 * - dmapp_lock_acquire queued behind PE 0, which holds the lock: the cancelled waiter is
 *   in the lock's queue, so its end takes the lock when it comes and passes it on; then
 *   every PE takes the lock 50 times around a non-atomic counter update (a waiter that
 *   kept the lock would hang them, one that lost it would break the count).
 * - dmapp_queue_put into PE 0's full queue (depth 4, PE 0 making no DMAPP call): nothing
 *   of the cancelled put arrives; PE 0 then gets exactly the messages whose puts returned.
 * - dmapp_c_pset_wait on a barrier the other PEs have not joined yet: the main thread
 *   waits for the same barrier afterwards and it completes with theirs.
 * Usage: dmapp_cancel.  Run with XT_SYMMETRIC_HEAP_SIZE=8M. */
#include <pthread.h>
#include <unistd.h>
#include "dmtest.h"
#include "canceltest.h"

static dmapp_lock_desc_t *lockd;       /* heap: the lock, used on PE 0 */
static int64_t *counter;               /* heap: guarded by the lock, on PE 0 */
static dmapp_queue_handle_t qh;
static int64_t received[64];           /* per sender, counted by PE 0's callback */
static int64_t last_seq[64];
static dmapp_c_pset_handle_t world;

static void lock_wait(void *a)
{
    dmapp_lock_handle_t h;
    int rc = dmapp_lock_acquire(lockd, sheap(), 0, 0, &h);
    SN_FAIL("dmapp_lock_acquire returned %d while PE 0 holds the lock", rc);
}

static void queue_put_wait(void *a)
{
    uint64_t v = 1000;
    int rc = dmapp_queue_put(qh, &v, 1, DMAPP_QW, 0, 0);
    SN_FAIL("dmapp_queue_put into a full queue returned %d", rc);
}

static void pset_wait(void *a)
{
    int rc = dmapp_c_pset_wait(world);
    SN_FAIL("dmapp_c_pset_wait returned %d before the others joined", rc);
}

static int qcb(void *ctx, void *data, uint32_t len, dmapp_pe_t from)
{
    uint64_t v;
    CHECK_EQ(len, 8);
    memcpy(&v, data, 8);
    if (v == 1000) SN_FAIL("the cancelled put from PE %u arrived", (unsigned)from);
    CHECK_EQ((int64_t)v, last_seq[from] + 1);   /* in order, none lost */
    last_seq[from] = (int64_t)v;
    received[from]++;
    return 0;
}

/* Starts a watcher in `call`, cancels it after it sleeps; joins it after `before_join`. */
static void cancel_then(const char *what, void (*call)(void *), int type, void (*before_join)(void))
{
    ct_watcher_t w;
    memset(&w, 0, sizeof w);
    w.what = what; w.call = call; w.type = type;
    pthread_t th;
    CHECK(pthread_create(&th, NULL, ct_main, &w) == 0);
    while (!atomic_load(&w.started)) ct_sleep_us(100);
    ct_sleep_us(50000);
    CHECK(pthread_cancel(th) == 0);
    if (before_join) before_join();
    void *res;
    CHECK(pthread_join(th, &res) == 0);
    if (res != PTHREAD_CANCELED) SN_FAIL("%s (%s): not cancelled", what, ct_type_name(type));
    CHECK(atomic_load(&w.cleaned));
}

static void barrier_release_by_pe0(void) { barrier(); }

int main(int argc, char **argv)
{
    dmapp_rma_attrs_ext_t req, act;
    OK(dmapp_get_rma_attrs_ext(&req));
    req.queue_depth = 4;
    OK(dmapp_init_ext(&req, &act));
    OK(dmapp_get_jobinfo(&job));
    me = job.pe;
    npes = job.npes;
    sntest_rank = me;
    CHECK(npes >= 2 && npes <= 64);
    lockd = dmapp_sheap_malloc(sizeof(dmapp_lock_desc_t));
    counter = dmapp_sheap_malloc(sizeof(int64_t));
    CHECK(lockd && counter);
    memset(lockd, 0, sizeof *lockd);
    *counter = 0;
    barrier();

    /* 1. Locks. */
    static const int types[2] = { PTHREAD_CANCEL_DEFERRED, PTHREAD_CANCEL_ASYNCHRONOUS };
    for (int t = 0; t < 2; t++) {
        dmapp_lock_handle_t held;
        if (me == 0) OK(dmapp_lock_acquire(lockd, sheap(), 0, 0, &held));
        barrier();
        if (me != 0) {
            cancel_then("dmapp_lock_acquire", lock_wait, types[t], barrier_release_by_pe0);
        } else {
            barrier();                 /* every watcher queued and cancelled */
            ct_sleep_us(20000);
            OK(dmapp_lock_release(held, 0));
        }
        barrier();
    }
    for (int i = 0; i < 50; i++) {
        dmapp_lock_handle_t h;
        OK(dmapp_lock_acquire(lockd, sheap(), 0, 0, &h));
        int64_t v;
        OK(dmapp_get(&v, counter, sheap(), 0, 1, DMAPP_QW));
        v++;
        OK(dmapp_put(counter, sheap(), 0, &v, 1, DMAPP_QW));
        OK(dmapp_lock_release(h, 0));
    }
    barrier();
    if (me == 0) CHECK_EQ(*counter, 50 * npes);
    barrier();

    /* 2. Queues: the last PE fills PE 0's queue, then its watchers block on it. */
    OK(dmapp_queue_attach(qcb, NULL, 0, &qh));
    barrier();
    int sender = npes - 1;
    if (me == sender) {
        for (uint64_t v = 1; v <= 4; v++) OK(dmapp_queue_put(qh, &v, 1, DMAPP_QW, 0, 0));
        for (int t = 0; t < 2; t++) cancel_then("dmapp_queue_put", queue_put_wait, types[t], NULL);
    }
    barrier();
    for (int round = 0; round < 2; round++) {
        /* PE 0 delivers what the puts that returned sent (4, then 1 more), nothing else. */
        int64_t want = round == 0 ? 4 : 5;
        if (me == 0) {
            for (int spins = 0; received[sender] < want; spins++) {
                OK(dmapp_gsync_wait());
                if (spins > 200000) SN_FAIL("PE 0 got %ld of %ld messages", (long)received[sender], (long)want);
                usleep(50);
            }
            usleep(20000);
            OK(dmapp_gsync_wait());
            CHECK_EQ(received[sender], want);
        }
        barrier();
        if (round == 0 && me == sender) {
            uint64_t v = 5;
            OK(dmapp_queue_put(qh, &v, 1, DMAPP_QW, 0, 0));
        }
        barrier();
    }
    OK(dmapp_queue_detach(qh, 0));

    /* 3. A collective: PE 0's watcher waits on a barrier the others have not joined. */
    dmapp_c_pset_desc_t d = dm_strided((uint32_t)npes, 0, 1);
    OK(dmapp_c_pset_create(&d, 0xca7, 0, NULL, &world));
    OK(dmapp_c_pset_export(world));
    barrier();
    if (me == 0) {
        OK(dmapp_c_barrier_join(world));
        for (int t = 0; t < 2; t++) cancel_then("dmapp_c_pset_wait", pset_wait, types[t], NULL);
    }
    barrier();
    if (me != 0) OK(dmapp_c_barrier_join(world));
    OK(dmapp_c_pset_wait(world));
    barrier();
    OK(dmapp_c_pset_destroy(world));

    printf("dmapp_cancel: pe %d of %d ok\n", me, npes);
    dmapp_sheap_free(lockd);
    dmapp_sheap_free(counter);
    OK(dmapp_finalize());
    return 0;
}
