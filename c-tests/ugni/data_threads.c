/* uGNI from several threads at once (the digest recommends every call be thread-safe,
 * blocking ones without holding global locks while asleep).  Each rank's threads work
 * on its right neighbour:
 *   A. NT threads, each with its own EP and CQ: FMA fetch-add on one shared counter,
 *      FMA PUT of a private pattern into its own slot, FMA GET back; every event reaped
 *      with GetCompleted returning that thread's own descriptor.
 *   B. NT threads posting fetch-adds on ONE shared EP whose CQ is drained by a progress
 *      thread blocked in GNI_CqWaitEvent; each completion found by its descriptor.
 *   C. NT threads sending SMSG on ONE shared EP (retrying NOT_DONE); the receiver checks
 *      each thread's messages arrive in that thread's order and none is lost.
 *   D. While A runs, one more thread creates and destroys endpoints and CQs in a loop
 *      (every destroy invalidates the other threads' handle caches).
 *   E. NT threads, each with its own EP and CQ: RDMA PUT of 192 KiB of a private pattern
 *      into its own slot of a second window, RDMA GET back (on the network engine:
 *      concurrent libfabric RMA through one cached window).
 *   F. A CQ destroyed under its pollers, round after round: two threads poll the
 *      current CQ with GNI_CqGetEvent and hand each event to GNI_GetCompleted while the
 *      main thread posts puts with events on it and then destroys the EP and the CQ,
 *      events still queued or being reaped.  Every call answers SUCCESS (the descriptor
 *      one of the round's), NOT_DONE, ERROR_RESOURCE (overrun) or, once the CQ is gone,
 *      INVALID_PARAM; nothing crashes; the rounds leave no mappings behind.
 * Counters are checked exactly at the end. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include "data_util.h"

#define NT 4
#define ITERS 1500
#define SLOT 256
#define CRED 16
#define MSGSZ 64
#define BIG (192 << 10)
#define ITERS_E 60

static gnit_t t;
static int me, n, right, left;
static uint8_t *win;                      /* [0]: counter A, [8]: counter B, slots at 4096 */
static gni_mem_handle_t win_mh, *mh;
static uint64_t *base;
static gni_cq_handle_t rcq;               /* dst CQ of the SMSG mailboxes */

/* ---- A: per-thread EP and CQ ----------------------------------------------------- */

static void *phase_a(void *arg)
{
    long id = (long)arg;
    gni_cq_handle_t cq;
    gni_ep_handle_t ep;
    GNI_OK(GNI_CqCreate(t.nic, 64, 0, GNI_CQ_BLOCKING, NULL, NULL, &cq));
    GNI_OK(GNI_EpCreate(t.nic, cq, &ep));
    GNI_OK(GNI_EpBind(ep, t.addrs[right], right));
    uint8_t *mine = dt_alloc(2 * SLOT + 8);
    gni_mem_handle_t mine_mh = dt_reg(&t, mine, 2 * SLOT + 8, NULL, GNI_MEM_READWRITE);
    uint64_t slot = base[right] + 4096 + (uint64_t)id * SLOT;
    for (int i = 0; i < ITERS; i++) {
        gni_post_descriptor_t d, *done;
        /* fetch-add +1 on the neighbour's counter A */
        dt_desc(&d, GNI_POST_AMO, GNI_CQMODE_GLOBAL_EVENT, mine + 2 * SLOT, mine_mh, base[right], mh[right], 8);
        d.amo_cmd = GNI_FMA_ATOMIC_FADD;
        d.first_operand = 1;
        GNI_OK(GNI_PostFma(ep, &d));
        gni_cq_entry_t ev = gnit_wait(cq, GNI_RC_SUCCESS);
        GNI_OK(GNI_GetCompleted(cq, ev, &done));
        CHECK(done == &d);
        /* PUT a pattern of (thread, iteration) into my slot, GET it back */
        for (int k = 0; k < SLOT; k++) mine[k] = (uint8_t)(id * 37 + i * 11 + k);
        dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, mine, mine_mh, slot, mh[right], SLOT);
        GNI_OK(GNI_PostFma(ep, &d));
        ev = gnit_wait(cq, GNI_RC_SUCCESS);
        GNI_OK(GNI_GetCompleted(cq, ev, &done));
        CHECK(done == &d);
        dt_desc(&d, GNI_POST_FMA_GET, GNI_CQMODE_GLOBAL_EVENT, mine + SLOT, mine_mh, slot, mh[right], SLOT);
        GNI_OK(GNI_PostFma(ep, &d));
        ev = gnit_wait(cq, GNI_RC_SUCCESS);
        GNI_OK(GNI_GetCompleted(cq, ev, &done));
        CHECK(done == &d);
        if (memcmp(mine, mine + SLOT, SLOT) != 0) SN_FAIL("thread %ld iteration %d: GET differs from PUT", id, i);
    }
    GNI_OK(GNI_MemDeregister(t.nic, &mine_mh));
    free(mine);
    GNI_OK(GNI_EpUnbind(ep));
    GNI_OK(GNI_EpDestroy(ep));
    GNI_OK(GNI_CqDestroy(cq));
    return NULL;
}

/* ---- E: per-thread RDMA ---------------------------------------------------------------- */

static gni_mem_handle_t *bmh;
static uint64_t *bbase;

static void *phase_e(void *arg)
{
    long id = (long)arg;
    gni_cq_handle_t cq;
    gni_ep_handle_t ep;
    GNI_OK(GNI_CqCreate(t.nic, 64, 0, GNI_CQ_BLOCKING, NULL, NULL, &cq));
    GNI_OK(GNI_EpCreate(t.nic, cq, &ep));
    GNI_OK(GNI_EpBind(ep, t.addrs[right], right));
    uint8_t *mine = dt_alloc(2 * BIG);
    gni_mem_handle_t mine_mh = dt_reg(&t, mine, 2 * BIG, NULL, GNI_MEM_READWRITE);
    uint64_t slot = bbase[right] + (uint64_t)id * BIG;
    for (int i = 0; i < ITERS_E; i++) {
        gni_post_descriptor_t d, *done;
        for (int k = 0; k < BIG; k += 64) mine[k] = (uint8_t)(id * 37 + i * 11 + k / 64);
        dt_desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, mine, mine_mh, slot, bmh[right], BIG);
        GNI_OK(GNI_PostRdma(ep, &d));
        gni_cq_entry_t ev = gnit_wait(cq, GNI_RC_SUCCESS);
        GNI_OK(GNI_GetCompleted(cq, ev, &done));
        CHECK(done == &d);
        dt_desc(&d, GNI_POST_RDMA_GET, GNI_CQMODE_GLOBAL_EVENT, mine + BIG, mine_mh, slot, bmh[right], BIG);
        GNI_OK(GNI_PostRdma(ep, &d));
        ev = gnit_wait(cq, GNI_RC_SUCCESS);
        GNI_OK(GNI_GetCompleted(cq, ev, &done));
        CHECK(done == &d);
        if (memcmp(mine, mine + BIG, BIG) != 0) SN_FAIL("thread %ld iteration %d: RDMA GET differs from RDMA PUT", id, i);
    }
    GNI_OK(GNI_MemDeregister(t.nic, &mine_mh));
    free(mine);
    GNI_OK(GNI_EpUnbind(ep));
    GNI_OK(GNI_EpDestroy(ep));
    GNI_OK(GNI_CqDestroy(cq));
    return NULL;
}

/* ---- D: handle churn ---------------------------------------------------------------- */

static atomic_int churn_stop;

static void *churn(void *arg)
{
    (void)arg;
    long rounds = 0;
    while (!atomic_load(&churn_stop)) {
        gni_cq_handle_t cq;
        gni_ep_handle_t ep;
        GNI_OK(GNI_CqCreate(t.nic, 8, 0, GNI_CQ_NOBLOCK, NULL, NULL, &cq));
        GNI_OK(GNI_EpCreate(t.nic, cq, &ep));
        GNI_OK(GNI_EpBind(ep, t.addrs[left], left));
        GNI_OK(GNI_EpUnbind(ep));
        GNI_OK(GNI_EpDestroy(ep));
        GNI_OK(GNI_CqDestroy(cq));
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpDestroy(ep));   /* stale from now on */
        rounds++;
    }
    return (void *)rounds;
}

/* ---- F: a CQ destroyed under its pollers ------------------------------------------- */

#define ROUNDS_F 300
#define POSTS_F 24                          /* more than the CQ holds: overruns too */
static _Atomic(gni_cq_handle_t) cq_f;
static atomic_int stop_f;
static atomic_long reaped_f, gone_f;
static gni_post_descriptor_t desc_f[POSTS_F];

/* After INVALID_PARAM: waits for the next round's CQ. */
static void next_cq_f(gni_cq_handle_t gone)
{
    atomic_fetch_add(&gone_f, 1);
    while (atomic_load(&cq_f) == gone && !atomic_load(&stop_f)) sched_yield();
}

static void *poll_f(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_f)) {
        gni_cq_handle_t cq = atomic_load(&cq_f);
        if (cq == NULL) continue;
        gni_cq_entry_t ev;
        gni_return_t rc = GNI_CqGetEvent(cq, &ev);
        if (rc == GNI_RC_INVALID_PARAM) { next_cq_f(cq); continue; }
        if (rc == GNI_RC_NOT_DONE || rc == GNI_RC_ERROR_RESOURCE) continue;
        if (rc != GNI_RC_SUCCESS) SN_FAIL("F: GNI_CqGetEvent returned %s", gnit_rc(rc));
        gni_post_descriptor_t *d = NULL;
        rc = GNI_GetCompleted(cq, ev, &d);
        if (rc == GNI_RC_INVALID_PARAM) { next_cq_f(cq); continue; }
        if (rc != GNI_RC_SUCCESS) SN_FAIL("F: GNI_GetCompleted returned %s", gnit_rc(rc));
        CHECK(d >= desc_f && d < desc_f + POSTS_F);
        atomic_fetch_add(&reaped_f, 1);
    }
    return NULL;
}

static long count_mappings(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return 0;
    long lines = 0;
    for (int c; (c = fgetc(f)) != EOF;) lines += c == '\n';
    fclose(f);
    return lines;
}

static void phase_f(void)
{
    uint8_t *src = dt_alloc(64);
    gni_mem_handle_t src_mh = dt_reg(&t, src, 64, NULL, GNI_MEM_READWRITE);
    pthread_t pollers[2];
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&pollers[i], NULL, poll_f, NULL) == 0);
    long maps_before = 0;
    for (int r = 0; r < ROUNDS_F; r++) {
        if (r == 20) maps_before = count_mappings();   /* warm: pins, caches, TLS */
        gni_cq_handle_t cq;
        gni_ep_handle_t ep;
        GNI_OK(GNI_CqCreate(t.nic, 8, 0, GNI_CQ_NOBLOCK, NULL, NULL, &cq));
        GNI_OK(GNI_EpCreate(t.nic, cq, &ep));
        GNI_OK(GNI_EpBind(ep, t.addrs[right], right));
        atomic_store(&cq_f, cq);
        long reaped = atomic_load(&reaped_f);
        int posts = r % (POSTS_F + 1);
        for (int i = 0; i < posts; i++) {
            dt_desc(&desc_f[i], GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, src, src_mh, base[right] + 4096 + 8 * (uint64_t)i, mh[right], 8);
            GNI_OK(GNI_PostFma(ep, &desc_f[i]));
        }
        /* Let the pollers reap some (at most what the CQ holds), then pull the CQ away
         * from under them, the rest still queued. */
        double t0 = dt_now();
        while (atomic_load(&reaped_f) < reaped + (posts < 4 ? posts : 4) && dt_now() - t0 < 0.05) sched_yield();
        GNI_OK(GNI_EpUnbind(ep));
        GNI_OK(GNI_EpDestroy(ep));
        GNI_OK(GNI_CqDestroy(cq));                  /* the pollers may be inside it */
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqDestroy(cq));
    }
    long maps_after = count_mappings();
    atomic_store(&stop_f, 1);
    for (int i = 0; i < 2; i++) CHECK(pthread_join(pollers[i], NULL) == 0);
    GNI_OK(GNI_MemDeregister(t.nic, &src_mh));
    free(src);
    if (maps_after > maps_before + 8) SN_FAIL("F: %ld mappings before, %ld after %d CQ create/destroy rounds", maps_before, maps_after, ROUNDS_F - 20);
    printf("data_threads: rank %d: %d CQs destroyed under 2 pollers: %ld events reaped, %ld calls on destroyed CQs\n",
           me, ROUNDS_F, (long)atomic_load(&reaped_f), (long)atomic_load(&gone_f));
}

/* ---- B: shared EP, progress thread --------------------------------------------------- */

static gni_ep_handle_t shared_ep;
static gni_cq_handle_t shared_cq;
static atomic_int done_b[NT];
static atomic_long completions_b;

static void *progress_b(void *arg)
{
    (void)arg;
    while (atomic_load(&completions_b) < (long)NT * ITERS) {
        gni_cq_entry_t ev;
        gni_return_t rc = GNI_CqWaitEvent(shared_cq, 100, &ev);
        if (rc == GNI_RC_TIMEOUT) continue;
        if (rc != GNI_RC_SUCCESS) SN_FAIL("progress: GNI_CqWaitEvent returned %s", gnit_rc(rc));
        gni_post_descriptor_t *d;
        GNI_OK(GNI_GetCompleted(shared_cq, ev, &d));
        CHECK(d->post_id < NT);
        atomic_store(&done_b[d->post_id], 1);
        atomic_fetch_add(&completions_b, 1);
    }
    return NULL;
}

static void *phase_b(void *arg)
{
    long id = (long)arg;
    uint64_t *result = dt_alloc(8);
    gni_mem_handle_t rmh = dt_reg(&t, result, 8, NULL, GNI_MEM_READWRITE);
    gni_post_descriptor_t d;
    for (int i = 0; i < ITERS; i++) {
        dt_desc(&d, GNI_POST_AMO, GNI_CQMODE_GLOBAL_EVENT, result, rmh, base[right] + 8, mh[right], 8);
        d.amo_cmd = GNI_FMA_ATOMIC_FADD;
        d.first_operand = 1;
        d.post_id = (uint64_t)id;
        atomic_store(&done_b[id], 0);
        GNI_OK(GNI_PostFma(shared_ep, &d));
        double t0 = dt_now();
        while (!atomic_load(&done_b[id])) {
            sched_yield();
            if (dt_now() - t0 > 30) SN_FAIL("thread %ld: completion %d never came", id, i);
        }
    }
    GNI_OK(GNI_MemDeregister(t.nic, &rmh));
    free(result);
    return NULL;
}

/* ---- C: SMSG from several threads on one EP ------------------------------------------ */

struct tmsg { uint32_t thread, seq; uint8_t pad[MSGSZ - 8]; };

static void *phase_c(void *arg)
{
    long id = (long)arg;
    struct tmsg m;
    memset(&m, 0, sizeof m);
    m.thread = (uint32_t)id;
    for (int i = 0; i < ITERS; i++) {
        m.seq = (uint32_t)i;
        gni_return_t rc;
        while ((rc = GNI_SmsgSend(t.eps[right], &m, sizeof m, NULL, 0, (uint32_t)id)) == GNI_RC_NOT_DONE) {}
        if (rc != GNI_RC_SUCCESS) SN_FAIL("thread %ld: GNI_SmsgSend returned %s", id, gnit_rc(rc));
    }
    return NULL;
}

static void receive_c(void)
{
    uint32_t next[NT] = {0};
    long got = 0;
    while (got < (long)NT * ITERS) {
        (void)gnit_wait(rcq, GNI_RC_SUCCESS);       /* one remote event per message */
        void *h;
        GNI_OK(GNI_SmsgGetNext(t.eps[left], &h));
        struct tmsg *m = h;
        CHECK(m->thread < NT);
        if (m->seq != next[m->thread]) SN_FAIL("thread %u: message %u arrived, expected %u", m->thread, m->seq, next[m->thread]);
        next[m->thread]++;
        GNI_OK(GNI_SmsgRelease(t.eps[left]));
        got++;
    }
}

/* Local SMSG events of the senders land on t.cq: reap them from a thread of their own. */
static void *reap_local(void *arg)
{
    (void)arg;
    for (long i = 0; i < (long)NT * ITERS; i++) {
        gni_cq_entry_t ev = gnit_wait(t.cq, GNI_RC_SUCCESS);
        CHECK_EQ(GNI_CQ_GET_TYPE(ev), GNI_CQ_EVENT_TYPE_SMSG);
    }
    return NULL;
}

int main(void)
{
    gnit_init(&t, 4 * NT * ITERS);
    me = t.rank;
    n = t.size;
    right = (me + 1) % n;
    left = (me + n - 1) % n;
    win = dt_alloc(4096 + NT * SLOT);
    win_mh = dt_reg(&t, win, 4096 + NT * SLOT, NULL, GNI_MEM_READWRITE);
    mh = calloc(n, sizeof(*mh));
    base = calloc(n, sizeof(*base));
    gnit_exchange_mem(&t, win, win_mh, mh, base);
    pthread_t th[NT + 2];

    /* A + D */
    pthread_t churner;
    CHECK(pthread_create(&churner, NULL, churn, NULL) == 0);
    for (long i = 0; i < NT; i++) CHECK(pthread_create(&th[i], NULL, phase_a, (void *)i) == 0);
    for (int i = 0; i < NT; i++) CHECK(pthread_join(th[i], NULL) == 0);
    atomic_store(&churn_stop, 1);
    void *rounds;
    CHECK(pthread_join(churner, &rounds) == 0);
    dt_barrier();
    CHECK_EQ(*(volatile uint64_t *)win, (long)NT * ITERS);
    printf("data_threads: rank %d: %d threads x %d AMO/PUT/GET ok, %ld EP/CQ create-destroy rounds meanwhile\n",
           me, NT, ITERS, (long)rounds);

    /* E */
    uint8_t *bwin = dt_alloc((size_t)NT * BIG);
    gni_mem_handle_t bwin_mh = dt_reg(&t, bwin, (size_t)NT * BIG, NULL, GNI_MEM_READWRITE);
    bmh = calloc(n, sizeof(*bmh));
    bbase = calloc(n, sizeof(*bbase));
    gnit_exchange_mem(&t, bwin, bwin_mh, bmh, bbase);
    for (long i = 0; i < NT; i++) CHECK(pthread_create(&th[i], NULL, phase_e, (void *)i) == 0);
    for (int i = 0; i < NT; i++) CHECK(pthread_join(th[i], NULL) == 0);
    dt_barrier();
    GNI_OK(GNI_MemDeregister(t.nic, &bwin_mh));
    printf("data_threads: rank %d: %d threads x %d RDMA PUT/GET of %d KiB ok\n", me, NT, ITERS_E, BIG >> 10);

    /* F */
    phase_f();
    dt_barrier();

    /* B */
    GNI_OK(GNI_CqCreate(t.nic, 4 * NT, 0, GNI_CQ_BLOCKING, NULL, NULL, &shared_cq));
    GNI_OK(GNI_EpCreate(t.nic, shared_cq, &shared_ep));
    GNI_OK(GNI_EpBind(shared_ep, t.addrs[right], right));
    CHECK(pthread_create(&th[NT], NULL, progress_b, NULL) == 0);
    for (long i = 0; i < NT; i++) CHECK(pthread_create(&th[i], NULL, phase_b, (void *)i) == 0);
    for (int i = 0; i <= NT; i++) CHECK(pthread_join(th[i], NULL) == 0);
    dt_barrier();
    CHECK_EQ(*(volatile uint64_t *)(win + 8), (long)NT * ITERS);
    GNI_OK(GNI_EpUnbind(shared_ep));
    GNI_OK(GNI_EpDestroy(shared_ep));
    GNI_OK(GNI_CqDestroy(shared_cq));
    printf("data_threads: rank %d: shared EP, progress thread: %ld completions ok\n", me, (long)atomic_load(&completions_b));

    /* C: mailboxes for messages from the left neighbour (mine) and to the right one. */
    gni_smsg_attr_t a;
    unsigned int mbsz = 0;
    memset(&a, 0, sizeof a);
    a.msg_type = GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT;
    a.mbox_maxcredit = CRED;
    a.msg_maxsize = MSGSZ;
    GNI_OK(GNI_SmsgBufferSizeNeeded(&a, &mbsz));
    GNI_OK(GNI_CqCreate(t.nic, 4 * CRED * NT, 0, GNI_CQ_BLOCKING, NULL, NULL, &rcq));
    uint8_t *mb = dt_alloc(2 * (size_t)mbsz);
    gni_mem_handle_t mbh = dt_reg(&t, mb, 2 * (size_t)mbsz, rcq, GNI_MEM_READWRITE);
    gni_mem_handle_t *mbhs = calloc(n, sizeof(*mbhs));
    uint64_t *mbases = calloc(n, sizeof(*mbases));
    gnit_exchange_mem(&t, mb, mbh, mbhs, mbases);
    /* Rank r sends to r+1 on eps[right] and receives from r-1 on eps[left].  My mailbox
     * 0 takes the left neighbour's messages; mailbox 1 is eps[right]'s local one, which
     * only carries the credits the right neighbour returns.  With one or two ranks a
     * single EP does both directions through the mailboxes 0. */
    gni_smsg_attr_t l = a, r = a;
    l.msg_buffer = mb; l.buff_size = mbsz; l.mem_hndl = mbh; l.mbox_offset = 0;
    r.msg_buffer = (void *)(uintptr_t)mbases[right]; r.buff_size = mbsz; r.mem_hndl = mbhs[right]; r.mbox_offset = 0;
    if (left == right) {
        GNI_OK(GNI_SmsgInit(t.eps[right], &l, &r));
    } else {
        gni_smsg_attr_t l1 = l, rl = a;
        l1.mbox_offset = mbsz;
        GNI_OK(GNI_SmsgInit(t.eps[right], &l1, &r));
        rl.msg_buffer = (void *)(uintptr_t)mbases[left]; rl.buff_size = mbsz; rl.mem_hndl = mbhs[left]; rl.mbox_offset = mbsz;
        GNI_OK(GNI_SmsgInit(t.eps[left], &l, &rl));
    }
    dt_barrier();
    pthread_t reaper;
    CHECK(pthread_create(&reaper, NULL, reap_local, NULL) == 0);
    for (long i = 0; i < NT; i++) CHECK(pthread_create(&th[i], NULL, phase_c, (void *)i) == 0);
    receive_c();
    for (int i = 0; i < NT; i++) CHECK(pthread_join(th[i], NULL) == 0);
    CHECK(pthread_join(reaper, NULL) == 0);
    dt_barrier();
    printf("data_threads: rank %d: SMSG from %d threads on one EP: %d messages each, in order\n", me, NT, ITERS);
    GNI_OK(GNI_MemDeregister(t.nic, &mbh));
    GNI_OK(GNI_MemDeregister(t.nic, &win_mh));
    GNI_OK(GNI_CqDestroy(rcq));
    gnit_fini(&t);
    printf("data_threads: rank %d ok\n", me);
    return 0;
}
