/* DMAPP locks the way Global Arrays' ARMCI port uses them: an array of zero-filled
 * dmapp_lock_desc_t in the symmetric heap, lock k living on PE k % npes, acquired by
 * every PE (two threads each) around a non-atomic read-modify-write (GET, add, PUT) of a
 * counter on the lock's PE; the counters are checked exactly.  Also a lock in the data
 * segment, FIFO order of waiters, the DMAPP_MAX_LOCKS limit, and bad input (before init,
 * NULLs, bad PE, alignment, outside the segment, garbage descriptor, releases of handles
 * not held: released, forged, another PE's), unknown flag bits ignored.
 * Argument "death" (2 PEs): PE 1 exits holding a lock; PE 0's acquire of it returns
 * TRANSACTION_ERROR instead of waiting forever.  PE 1 ends its PMI connection first:
 * under mpiexec, hydra takes a client whose PMI socket closes before PMI_Finalize for a
 * crash (exit status 1) and, when it notices the socket before the process's output
 * closing, kills the whole job; PE 0 would die before its acquire answered.  Run with
 * XT_SYMMETRIC_HEAP_SIZE=8M. */
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include "dmtest.h"

#define NLOCKS 8
#define NT 2
#define ITERS 300

static dmapp_lock_desc_t *locks;      /* heap: NLOCKS on every PE; lock k used on PE k % npes */
static int64_t *counters;             /* heap: counters[k] guarded by lock k, on the same PE */
static dmapp_lock_desc_t data_lock;   /* .bss: the data-segment lock, used on the last PE */
static int64_t data_counter;          /* .bss: guarded by data_lock, on the last PE */
static volatile int64_t go;           /* .bss: FIFO test, "your turn to queue" */

static int owner(int k) { return k % npes; }
static int lock_of(int pe, long tid, int i) { return (i * 7 + pe * 3 + (int)tid) % NLOCKS; }

/* Read-modify-write of a remote counter, deliberately not atomic: only the lock makes
 * it exact.  A yield now and then between GET and PUT widens the window. */
static void bump(int64_t *ctr, dmapp_seg_desc_t *seg, int pe, int i)
{
    int64_t v;
    OK(dmapp_get(&v, ctr, seg, pe, 1, DMAPP_QW));
    if (i % 5 == 0) sched_yield();
    v += 1;
    OK(dmapp_put(ctr, seg, pe, &v, 1, DMAPP_QW));
}

static void *hammer(void *arg)
{
    long tid = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        int k = lock_of(me, tid, i);
        dmapp_lock_handle_t h;
        OK(dmapp_lock_acquire(&locks[k], sheap(), owner(k), 0, &h));
        bump(&counters[k], sheap(), owner(k), i);
        OK(dmapp_lock_release(h, 0));
        if (i % 8 == 0) {
            OK(dmapp_lock_acquire(&data_lock, dseg(), npes - 1, 0, &h));
            bump(&data_counter, dseg(), npes - 1, i);
            OK(dmapp_lock_release(h, 0));
        }
    }
    return NULL;
}

static void hammer_all(void)
{
    pthread_t th[NT];
    for (long t = 0; t < NT; t++) CHECK(pthread_create(&th[t], NULL, hammer, (void *)t) == 0);
    for (int t = 0; t < NT; t++) CHECK(pthread_join(th[t], NULL) == 0);
    barrier();
    for (int k = 0; k < NLOCKS; k++) {
        if (owner(k) != me) continue;
        int64_t want = 0;
        for (int pe = 0; pe < npes; pe++)
            for (long t = 0; t < NT; t++)
                for (int i = 0; i < ITERS; i++) want += lock_of(pe, t, i) == k;
        if (counters[k] != want) SN_FAIL("counter of lock %d is %lld, expected %lld", k, (long long)counters[k], (long long)want);
        CHECK_EQ(((volatile uint64_t *)&locks[k])[0], 0);   /* free again */
    }
    if (me == npes - 1) CHECK_EQ(data_counter, (int64_t)npes * NT * ((ITERS + 7) / 8));
}

/* Waiters get the lock in the order they queued: PE 0 holds it, lets PE 1, 2, ... queue
 * one after the other (it sees each join in the descriptor's first word), then releases;
 * each holder appends its PE to a log on PE 0. */
static void fifo(dmapp_lock_desc_t *fl, int64_t *log, int64_t *nlog)
{
    dmapp_lock_handle_t h;
    int64_t one = 1;
    if (me == 0) {
        OK(dmapp_lock_acquire(fl, sheap(), 0, 0, &h));
        uint64_t tail = ((volatile uint64_t *)fl)[0];
        CHECK(tail != 0);
        barrier();
        for (int p = 1; p < npes; p++) {
            OK(dmapp_put((void *)&go, dseg(), p, &one, 1, DMAPP_QW));
            while (((volatile uint64_t *)fl)[0] == tail) usleep(200);
            tail = ((volatile uint64_t *)fl)[0];
        }
        OK(dmapp_lock_release(h, 0));
    } else {
        barrier();
        while (go == 0) usleep(200);
        OK(dmapp_lock_acquire(fl, sheap(), 0, 0, &h));
        int64_t slot;
        OK(dmapp_afadd_qw(&slot, nlog, sheap(), 0, 1));
        int64_t mine = me;
        OK(dmapp_put(&log[slot], sheap(), 0, &mine, 1, DMAPP_QW));
        OK(dmapp_lock_release(h, 0));
    }
    barrier();
    if (me == 0) {
        CHECK_EQ(*nlog, npes - 1);
        for (int i = 0; i < npes - 1; i++)
            if (log[i] != i + 1) SN_FAIL("holder %d was PE %lld, expected PE %d (FIFO)", i, (long long)log[i], i + 1);
    }
}

/* DMAPP_MAX_LOCKS (default 128): that many held at once, one more is NO_SPACE and
 * touches nothing; after a release the next acquire works. */
static void max_locks(void)
{
    const char *env = getenv("DMAPP_MAX_LOCKS");
    int lim = env ? atoi(env) : 128;
    dmapp_lock_desc_t *mine = dmapp_sheap_malloc((size_t)(lim + 1) * sizeof *mine);
    dmapp_lock_handle_t *hs = calloc((size_t)lim + 1, sizeof *hs);
    CHECK(mine && hs);
    memset(mine, 0, (size_t)(lim + 1) * sizeof *mine);
    for (int i = 0; i < lim; i++) OK(dmapp_lock_acquire(&mine[i], sheap(), me, 0, &hs[i]));
    RC_EQ(dmapp_lock_acquire(&mine[lim], sheap(), me, 0, &hs[lim]), DMAPP_RC_NO_SPACE);
    CHECK_EQ(((volatile uint64_t *)&mine[lim])[0], 0);
    OK(dmapp_lock_release(hs[0], 0));
    OK(dmapp_lock_acquire(&mine[lim], sheap(), me, 0, &hs[lim]));
    for (int i = 1; i <= lim; i++) OK(dmapp_lock_release(hs[i], 0));
    for (int i = 0; i <= lim; i++) CHECK_EQ(((volatile uint64_t *)&mine[i])[0], 0);
    free(hs);
    dmapp_sheap_free(mine);
}

static void bad_input(dmapp_lock_desc_t *own)
{
    dmapp_lock_handle_t h, h2;
    char *end = (char *)job.sheap_seg.addr + job.sheap_seg.len;
    RC_EQ(dmapp_lock_acquire(NULL, sheap(), me, 0, &h), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_lock_acquire(own, NULL, me, 0, &h), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_lock_acquire(own, sheap(), me, 0, NULL), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_lock_acquire(own, sheap(), -1, 0, &h), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_lock_acquire(own, sheap(), npes, 0, &h), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_lock_acquire((dmapp_lock_desc_t *)((char *)own + 4), sheap(), me, 0, &h), DMAPP_RC_ALIGNMENT_ERROR);
    RC_EQ(dmapp_lock_acquire((dmapp_lock_desc_t *)end, sheap(), me, 0, &h), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_lock_acquire((dmapp_lock_desc_t *)(end - 8), sheap(), me, 0, &h), DMAPP_RC_INVALID_PARAM);
    CHECK_EQ(((volatile uint64_t *)own)[0], 0);
    /* A descriptor that was never zeroed: refused, left as it was. */
    dmapp_lock_desc_t *junk = dmapp_sheap_malloc(sizeof *junk);
    CHECK(junk);
    junk->opaque[0] = 0xdeadbeefcafef00dULL;
    RC_EQ(dmapp_lock_acquire(junk, sheap(), me, 0, &h), DMAPP_RC_INVALID_PARAM);
    CHECK(junk->opaque[0] == 0xdeadbeefcafef00dULL);
    dmapp_sheap_free(junk);

    /* Releases of handles not held touch nothing. */
    RC_EQ(dmapp_lock_release(NULL, 0), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_lock_release((dmapp_lock_handle_t)(uintptr_t)0x1234, 0), DMAPP_RC_INVALID_PARAM);
    OK(dmapp_lock_acquire(own, sheap(), me, ~0ULL, &h));   /* unknown flag bits: ignored */
    uint64_t held = ((volatile uint64_t *)own)[0];
    CHECK(held != 0);
    /* Another PE's handle: exchanged as programs exchange ids. */
    uint64_t mine = (uint64_t)(uintptr_t)h, *all = calloc((size_t)npes, sizeof *all);
    CHECK(all);
    CHECK_EQ(PMI_Allgather(&mine, all, sizeof mine), PMI_SUCCESS);
    if (npes > 1) {
        RC_EQ(dmapp_lock_release((dmapp_lock_handle_t)(uintptr_t)all[(me + 1) % npes], 0), DMAPP_RC_INVALID_PARAM);
        barrier();  /* everyone tried the neighbour's: each lock is still held */
        CHECK_EQ(((volatile uint64_t *)own)[0], held);
    }
    free(all);
    OK(dmapp_lock_release(h, ~0ULL));
    CHECK_EQ(((volatile uint64_t *)own)[0], 0);
    RC_EQ(dmapp_lock_release(h, 0), DMAPP_RC_INVALID_PARAM);   /* released already */
    /* The node was reused by a new acquire: the old handle still names nothing held. */
    OK(dmapp_lock_acquire(own, sheap(), me, 0, &h2));
    RC_EQ(dmapp_lock_release(h, 0), DMAPP_RC_INVALID_PARAM);
    CHECK(((volatile uint64_t *)own)[0] != 0);
    OK(dmapp_lock_release(h2, 0));
}

static int death(dmapp_lock_desc_t *fl)
{
    if (npes != 2) SKIP("death mode needs 2 PEs");
    dmapp_lock_handle_t h;
    if (me == 1) OK(dmapp_lock_acquire(fl, sheap(), 0, 0, &h));
    barrier();
    if (me == 1) {
        printf("dmapp_lock: pe 1 of 2 ok (exits holding the lock)\n");
        fflush(stdout);
        CHECK_EQ(PMI_Finalize(), PMI_SUCCESS);
        _exit(0);
    }
    time_t t0 = time(NULL);
    RC_EQ(dmapp_lock_acquire(fl, sheap(), 0, 0, &h), DMAPP_RC_TRANSACTION_ERROR);
    CHECK(time(NULL) - t0 < 20);
    printf("dmapp_lock: pe 0 of 2 ok (transaction error once the holder exited)\n");
    return 0;
}

int main(int argc, char **argv)
{
    /* Before dmapp_init: nothing to lock with. */
    dmapp_lock_handle_t h = NULL;
    RC_EQ(dmapp_lock_acquire(&data_lock, &job.data_seg, 0, 0, &h), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_lock_release(h, 0), DMAPP_RC_INVALID_PARAM);

    /* As GA does: read the attributes, adjust, init. */
    dmapp_rma_attrs_ext_t req, act;
    OK(dmapp_get_rma_attrs_ext(&req));
    req.max_concurrency = NT;
    OK(dmapp_init_ext(&req, &act));
    OK(dmapp_get_jobinfo(&job));
    me = job.pe;
    npes = job.npes;
    sntest_rank = me;

    size_t bytes = NLOCKS * sizeof(dmapp_lock_desc_t) + NLOCKS * 8 + 2 * sizeof(dmapp_lock_desc_t) + (size_t)(npes + 1) * 8;
    char *area = dmapp_sheap_malloc(bytes);
    CHECK(area != NULL);
    memset(area, 0, bytes);
    locks = (dmapp_lock_desc_t *)area;
    counters = (int64_t *)(locks + NLOCKS);
    dmapp_lock_desc_t *fl = (dmapp_lock_desc_t *)(counters + NLOCKS);   /* FIFO / death lock */
    dmapp_lock_desc_t *own = fl + 1;                                   /* this PE's own */
    int64_t *nlog = (int64_t *)(own + 1), *log = nlog + 1;
    barrier();   /* every descriptor is zero before anyone locks */

    if (argc > 1 && strcmp(argv[1], "death") == 0) return death(fl);

    hammer_all();
    fifo(fl, log, nlog);
    max_locks();
    bad_input(own);

    barrier();
    OK(dmapp_finalize());
    RC_EQ(dmapp_lock_acquire(own, sheap(), me, 0, &h), DMAPP_RC_INVALID_PARAM);
    printf("dmapp_lock: pe %d of %d ok\n", me, npes);
    return 0;
}
