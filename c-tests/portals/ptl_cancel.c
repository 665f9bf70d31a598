/* Watcher threads blocked in PtlEQWait, PtlEQWait_timeout and PtlEQPoll, cancelled as
 * programs do at exit (deferred and asynchronous; at once, soon and after they slept),
 * plus threads calling PtlEQPoll with a zero timeout in a loop.  Afterwards the queues the
 * watchers slept on still work from the main thread: PtlEQGet takes the events of the left
 * neighbour's puts (a waiter count left behind would make it answer PTL_EQ_EMPTY forever),
 * a second waiter beside a cancelled one gets its event, and PtlEQFree succeeds.
 * Also the decision recorded in portals3.h: PtlEQWait that finds an event queued returns
 * it, a cancellation request pending or not (as the reference, whose wait is a
 * cancellation point only in its sleep); the next wait that sleeps ends the thread.
 * Usage: ptl_cancel [rounds | spin] (spin: see event_then_cancel).  Prints "ptl_cancel:
 * rank R of N ok". */
#include "ptest.h"
#include "canceltest.h"
#include <pmi.h>

enum { PT_DATA = 4 };
static ptl_handle_ni_t ni;
static ptl_handle_eq_t q1, q2;

static void eq_wait(void *a)
{
    ptl_event_t ev;
    int rc = PtlEQWait(q1, &ev);
    SN_FAIL("PtlEQWait returned %s with nothing sent", PtlErrorStr(rc));
}

static void eq_wait_timeout(void *a)
{
    ptl_event_t ev;
    int rc = PtlEQWait_timeout(q2, &ev);
    SN_FAIL("PtlEQWait_timeout returned %s with nothing sent", PtlErrorStr(rc));
}

static void eq_poll(void *a)
{
    ptl_handle_eq_t qs[2] = { q2, q1 };
    ptl_event_t ev;
    int which;
    int rc = PtlEQPoll(qs, 2, PTL_TIME_FOREVER, &ev, &which);
    SN_FAIL("PtlEQPoll returned %s with nothing sent", PtlErrorStr(rc));
}

static void eq_poll_zero(void *a)
{
    ptl_handle_eq_t qs[2] = { q1, q2 };
    ptl_event_t ev;
    int which;
    int rc = PtlEQPoll(qs, 2, 0, &ev, &which);
    if (rc != PTL_EQ_EMPTY) SN_FAIL("PtlEQPoll(0) returned %s", PtlErrorStr(rc));
}

typedef struct { atomic_int done; ptl_event_t ev; } second_t;

static void *second_waiter(void *p)
{
    second_t *s = p;
    int rc = PtlEQWait(q1, &s->ev);
    if (rc != PTL_OK) SN_FAIL("PtlEQWait beside a cancelled waiter: %s", PtlErrorStr(rc));
    atomic_store(&s->done, 1);
    return NULL;
}

typedef struct {
    ptl_handle_eq_t q;
    int rc;
    ptl_event_kind_t type;
    atomic_int stage;
} pending_t;

/* Deferred, with a cancellation request pending (made while it had cancellation
 * disabled): the first PtlEQWait finds an event and returns it, the second sleeps and
 * ends the thread. */
static void *pending_wait(void *p)
{
    pending_t *s = p;
    ptl_event_t ev;
    int old;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    atomic_store(&s->stage, 1);
    while (atomic_load(&s->stage) != 2) ct_sleep_us(100);
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old); /* deferred: not acted on here */
    s->rc = PtlEQWait(s->q, &ev);
    s->type = ev.type;
    atomic_store(&s->stage, 3);
    PtlEQWait(s->q, &ev);
    atomic_store(&s->stage, 4);
    return NULL;
}

/* A deferred PtlEQWait with a cancellation request pending returns an event and ends
 * the thread in the next wait, which finds none.  The event is queued before the wait
 * (`in_spin` 0), or put while the first wait still spins on the empty queue (`in_spin`
 * 1: `ptl_cancel spin`, run with a long SOFTNIC_PTL_SPIN_NS).  Both are the decision in
 * portals3.h. */
static void event_then_cancel(int in_spin)
{
    enum { PT_SELF = 5 };
    ptl_handle_eq_t q3;
    ptl_process_id_t self;
    PCHECK(PtlGetId(ni, &self));
    PCHECK(PtlEQAlloc(ni, 8, PTL_EQ_HANDLER_NONE, &q3));
    uint64_t landing = 0, src = 0x5e1f;
    ptl_handle_me_t me;
    ptl_handle_md_t md;
    PCHECK(PtlMEAttach(ni, PT_SELF, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
    PCHECK(PtlMDAttach(me, md_of(&landing, 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, q3), PTL_RETAIN, NULL));
    PCHECK(PtlMDBind(ni, md_of(&src, 8, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE), PTL_RETAIN, &md));
    if (!in_spin) {
        /* A put to ourselves: its PUT_END is in q3 when PtlPut returns. */
        PCHECK(PtlPut(md, PTL_NOACK_REQ, self, PT_SELF, 0, 0, 0, 0));
        CHECK_EQ(landing, 0x5e1f);
    }
    pending_t s;
    memset(&s, 0, sizeof s);
    s.q = q3;
    s.rc = -1;
    pthread_t th;
    CHECK(pthread_create(&th, NULL, pending_wait, &s) == 0);
    while (atomic_load(&s.stage) != 1) ct_sleep_us(100);
    CHECK(pthread_cancel(th) == 0);
    atomic_store(&s.stage, 2);
    if (in_spin) {
        ct_sleep_us(50000); /* the waiter is in its first PtlEQWait's spin by now */
        CHECK_EQ(atomic_load(&s.stage), 2);
        PCHECK(PtlPut(md, PTL_NOACK_REQ, self, PT_SELF, 0, 0, 0, 0));
    }
    void *res = NULL;
    CHECK(pthread_join(th, &res) == 0);
    CHECK(res == PTHREAD_CANCELED);
    CHECK_EQ(atomic_load(&s.stage), 3);
    PCHECK_RC(s.rc, PTL_OK);
    CHECK_EQ(s.type, PTL_EVENT_PUT_END);
    CHECK_EQ(landing, 0x5e1f);
    PCHECK(PtlMDUnlink(md));
    PCHECK(PtlMEUnlink(me));
    PCHECK(PtlEQFree(q3));
}

/* The queues and the NI go, and the rank reports (`what` after "ok"). */
static int finish(int rank, int n, const char *what)
{
    PCHECK(PtlEQFree(q1));
    PCHECK(PtlEQFree(q2));
    PCHECK(PtlNIFini(ni));
    PtlFini();
    printf("ptl_cancel: rank %d of %d ok%s\n", rank, n, what);
    return 0;
}

int main(int argc, char **argv)
{
    int spawned, rank, n, maxif;
    int spin = argc > 1 && !strcmp(argv[1], "spin");
    int rounds = argc > 1 && !spin ? atoi(argv[1]) : 10;
    CHECK_EQ(PMI_Init(&spawned), PMI_SUCCESS);
    CHECK_EQ(PMI_Get_rank(&rank), PMI_SUCCESS);
    CHECK_EQ(PMI_Get_size(&n), PMI_SUCCESS);
    sntest_rank = rank;
    /* PtlEQWait_timeout waits SOFTNIC_PTL_WAIT_TIMEOUT_MS: long enough never to return here. */
    setenv("SOFTNIC_PTL_WAIT_TIMEOUT_MS", "600000", 1);
    PCHECK(PtlInit(&maxif));
    PCHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    ptl_process_id_t right;
    PCHECK(PtlGetRankId(ni, (rank + 1) % n, &right));
    PCHECK(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &q1));
    PCHECK(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &q2));
    uint64_t target = 0;
    ptl_handle_me_t me;
    PCHECK(PtlMEAttach(ni, PT_DATA, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
    PCHECK(PtlMDAttach(me, md_of(&target, 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, q1), PTL_RETAIN, NULL));

    if (spin) {
        event_then_cancel(1);
        PCHECK(PtlMEUnlink(me));
        return finish(rank, n, " (an event in the spin)");
    }
    ct_battery("PtlEQWait", eq_wait, NULL, rounds);
    ct_battery("PtlEQWait_timeout", eq_wait_timeout, NULL, rounds);
    ct_battery("PtlEQPoll", eq_poll, NULL, rounds);
    ct_loop_both("PtlEQPoll(0) in a loop", eq_poll_zero, NULL, rounds, 2000);
    event_then_cancel(0);
    /* Nothing was taken or left half-taken. */
    expect_empty(q1);
    expect_empty(q2);

    second_t second;
    memset(&second, 0, sizeof second);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, second_waiter, &second) == 0);
    ct_sleep_us(20000);
    ct_cancel("PtlEQWait beside another waiter", eq_wait, NULL, PTHREAD_CANCEL_ASYNCHRONOUS, 0, 20000);
    ct_cancel("PtlEQWait beside another waiter", eq_wait, NULL, PTHREAD_CANCEL_DEFERRED, 0, 20000);
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);

    uint64_t word;
    ptl_handle_md_t md;
    PCHECK(PtlMDBind(ni, md_of(&word, 8, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, q2), PTL_RETAIN, &md));
    word = 0xca11ed00u + rank;
    PCHECK(PtlPut(md, PTL_NOACK_REQ, right, PT_DATA, 0, 0, 0, 0));
    EXPECT(q2, PTL_EVENT_SEND_END);
    CHECK(pthread_join(th, NULL) == 0);
    CHECK(atomic_load(&second.done));
    CHECK_EQ(second.ev.type, PTL_EVENT_PUT_END);
    CHECK_EQ(target, 0xca11ed00u + (rank + n - 1) % n);

    /* PtlEQGet from this thread: no stale waiter makes it answer EMPTY. */
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    word = 0xbeef0000u + rank;
    PCHECK(PtlPut(md, PTL_NOACK_REQ, right, PT_DATA, 0, 0, 0, 0));
    EXPECT(q2, PTL_EVENT_SEND_END);
    ptl_event_t ev;
    int rc;
    for (long spins = 0; (rc = PtlEQGet(q1, &ev)) == PTL_EQ_EMPTY; spins++) {
        if (spins > 20000) SN_FAIL("PtlEQGet never saw the put (a waiter count left behind?)");
        ct_sleep_us(500);
    }
    PCHECK_RC(rc, PTL_OK);
    CHECK_EQ(ev.type, PTL_EVENT_PUT_END);
    CHECK_EQ(target, 0xbeef0000u + (rank + n - 1) % n);

    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    PCHECK(PtlMDUnlink(md));
    return finish(rank, n, "");
}
