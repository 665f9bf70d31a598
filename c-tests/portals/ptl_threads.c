/* Many threads per rank on one NI: T sender threads put (with acks, each on its own
 * MD and queue) to the right neighbour while W threads wait in PtlEQWait on one shared
 * queue at the target (each event reaches exactly one of them), another thread takes
 * events with PtlEQGet, and a churn thread attaches, updates and unlinks entries on
 * another portal all the while.  Usage: ptl_threads [T] [iterations].
 * Prints "ptl_threads: rank R of N ok (T threads)". */
#include "ptest.h"
#include <pmi.h>
#include <pthread.h>
#include <unistd.h>

#define W 3
enum { PT_DATA = 1, PT_CHURN = 2 };

static int rank, n, T, iters;
static ptl_handle_ni_t ni;
static ptl_handle_eq_t tq;
static ptl_process_id_t right_id;
static unsigned char *seen;                                   /* [thread][iteration] */
static int total_seen, stop_churn, churn_rounds;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void note(ptl_event_t *ev)
{
    if (ev->type != PTL_EVENT_PUT_END) return;
    unsigned t = (unsigned)(ev->hdr_data >> 32), i = (unsigned)ev->hdr_data;
    CHECK(t < (unsigned)T && i < (unsigned)iters);
    CHECK_EQ(ev->match_bits, t);
    pthread_mutex_lock(&mu);
    if (seen[t * iters + i]++) SN_FAIL("event (%u, %u) delivered twice", t, i);
    total_seen++;
    pthread_mutex_unlock(&mu);
}

static void *waiter(void *arg)
{
    for (;;) {
        ptl_event_t ev;
        int rc = PtlEQWait(tq, &ev);
        if (rc == PTL_EQ_INVALID) return NULL;                 /* the queue was freed: done */
        if (rc != PTL_OK) SN_FAIL("PtlEQWait: %s", PtlErrorStr(rc));
        note(&ev);
    }
}

static void *poller(void *arg)
{
    for (;;) {
        ptl_event_t ev;
        int rc = PtlEQGet(tq, &ev);
        if (rc == PTL_EQ_INVALID) return NULL;
        if (rc == PTL_OK) note(&ev);
        else if (rc == PTL_EQ_EMPTY) usleep(100);
        else SN_FAIL("PtlEQGet: %s", PtlErrorStr(rc));
    }
}

static void *sender(void *arg)
{
    int t = (int)(long)arg;
    ptl_handle_eq_t q;
    PCHECK(PtlEQAlloc(ni, 16, PTL_EQ_HANDLER_NONE, &q));
    uint64_t word;
    ptl_handle_md_t md;
    PCHECK(PtlMDBind(ni, md_of(&word, 8, PTL_MD_THRESH_INF, 0, q), PTL_RETAIN, &md));
    for (int i = 0; i < iters; i++) {
        word = ((uint64_t)t << 32) | (unsigned)i;
        PCHECK(PtlPut(md, PTL_ACK_REQ, right_id, PT_DATA, 0, (ptl_match_bits_t)t, 0, word));
        EXPECT(q, PTL_EVENT_SEND_START);
        EXPECT(q, PTL_EVENT_SEND_END);
        ptl_event_t a = EXPECT(q, PTL_EVENT_ACK);
        CHECK_EQ(a.mlength, 8);
    }
    PCHECK(PtlMDUnlink(md));
    PCHECK(PtlEQFree(q));
    return NULL;
}

static void *churn(void *arg)
{
    static char buf[64];
    long rounds = 0;
    while (!__atomic_load_n(&stop_churn, __ATOMIC_ACQUIRE)) {
        ptl_handle_me_t m, m2;
        ptl_handle_md_t d;
        PCHECK(PtlMEAttach(ni, PT_CHURN, ANY_ID, rounds, 0, PTL_UNLINK, PTL_INS_AFTER, &m));
        PCHECK(PtlMEInsert(m, ANY_ID, rounds, 0, PTL_RETAIN, PTL_INS_BEFORE, &m2));
        PCHECK(PtlMDAttach(m, md_of(buf, sizeof buf, 0, PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_UNLINK, &d));
        ptl_md_t nw = md_of(buf, sizeof buf, 3, PTL_MD_OP_PUT | PTL_MD_OP_GET, PTL_EQ_NONE), old;
        PCHECK(PtlMDUpdate(d, &old, &nw, PTL_EQ_NONE));
        CHECK_EQ(old.threshold, 0);
        PCHECK(PtlMDUnlink(d));                                /* takes its ME along */
        PCHECK_RC(PtlMEUnlink(m), PTL_ME_INVALID);
        PCHECK(PtlMEUnlink(m2));
        rounds++;
        __atomic_store_n(&churn_rounds, (int)rounds, __ATOMIC_RELEASE);
    }
    CHECK(rounds > 0);
    return NULL;
}

int main(int argc, char **argv)
{
    int spawned;
    CHECK_EQ(PMI_Init(&spawned), PMI_SUCCESS);
    CHECK_EQ(PMI_Get_rank(&rank), PMI_SUCCESS);
    CHECK_EQ(PMI_Get_size(&n), PMI_SUCCESS);
    sntest_rank = rank;
    T = argc > 1 ? atoi(argv[1]) : 4;
    iters = argc > 2 ? atoi(argv[2]) : 300;
    int maxif;
    PCHECK(PtlInit(&maxif));
    PCHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    PCHECK(PtlGetRankId(ni, (rank + 1) % n, &right_id));
    PCHECK(PtlEQAlloc(ni, 2 * T * iters + 16, PTL_EQ_HANDLER_NONE, &tq));
    seen = calloc((size_t)T * iters, 1);
    uint64_t *bufs = calloc(T, 8);
    for (int t = 0; t < T; t++) {
        ptl_handle_me_t m;
        PCHECK(PtlMEAttach(ni, PT_DATA, ANY_ID, t, 0, PTL_RETAIN, PTL_INS_AFTER, &m));
        PCHECK(PtlMDAttach(m, md_of(&bufs[t], 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, tq), PTL_RETAIN, NULL));
    }
    pthread_t w[W], p, c, s[64];
    CHECK(T <= 64);
    for (int i = 0; i < W; i++) CHECK(pthread_create(&w[i], NULL, waiter, NULL) == 0);
    CHECK(pthread_create(&p, NULL, poller, NULL) == 0);
    CHECK(pthread_create(&c, NULL, churn, NULL) == 0);
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    for (int t = 0; t < T; t++) CHECK(pthread_create(&s[t], NULL, sender, (void *)(long)t) == 0);
    for (int t = 0; t < T; t++) pthread_join(s[t], NULL);
    /* Everything my left neighbour sent reaches exactly one consumer. */
    for (long spins = 0;; spins++) {
        pthread_mutex_lock(&mu);
        int done = total_seen == T * iters;
        pthread_mutex_unlock(&mu);
        if (done) break;
        if (spins > 60000) SN_FAIL("only %d of %d events", total_seen, T * iters);
        usleep(1000);
    }
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    /* On a loaded machine the churn thread may not have run yet: it does one round at
     * least before it is stopped (else it would have overlapped nothing). */
    for (long spins = 0; __atomic_load_n(&churn_rounds, __ATOMIC_ACQUIRE) == 0; spins++) {
        if (spins > 60000) SN_FAIL("the churn thread never ran");
        usleep(1000);
    }
    __atomic_store_n(&stop_churn, 1, __ATOMIC_RELEASE);
    pthread_join(c, NULL);
    PCHECK(PtlEQFree(tq));                                     /* wakes the waiters */
    for (int i = 0; i < W; i++) pthread_join(w[i], NULL);
    pthread_join(p, NULL);
    for (int t = 0; t < T; t++) CHECK_EQ(bufs[t] >> 32, (uint64_t)t);
    CHECK_EQ(status_reg(ni, PTL_SR_DROP_COUNT), 0);
    CHECK_EQ(status_reg(ni, PTL_SR_MES_CUR), T);
    PCHECK(PtlNIFini(ni));
    PtlFini();
    printf("ptl_threads: rank %d of %d ok (%d threads)\n", rank, n, T);
    return 0;
}
