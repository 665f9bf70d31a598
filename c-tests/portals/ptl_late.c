/* Targets that are not up (one machine; run with SOFTNIC_PTL_CONNECT_TIMEOUT_MS=3000 and
 * at least 3 ranks).  PMI barriers only order the phases; ids come from the runtime.
 *
 * A. Ranks 1..n-2 start their NI late (300-900 ms): rank 0's puts to them (acknowledged,
 *    repeated until acknowledged: a target may be up before its entry is attached) wait
 *    for each, and succeed.
 * C. Rank n-1 has no NI yet: rank 0's put to it waits the timeout, then fails
 *    (PTL_NI_FAIL); a second one fails at once (waited for in vain); once rank n-1 is up,
 *    puts reach it again.
 * B. Rank 1 finalises and stays: puts and gets to it fail at once (not after the
 *    timeout); once it initialises again, puts reach it again.
 * Prints "ptl_late: rank R ok". */
#include "ptest.h"
#include <pmi.h>
#include <time.h>
#include <unistd.h>

#define PT 3

static int rank, n;
static ptl_handle_ni_t ni;
static ptl_handle_eq_t eq;
static ptl_handle_md_t smd;
static uint64_t token, src;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void barrier(void)
{
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
}

/* NI, queue, the receiving entry, the sending MD. */
static void up(void)
{
    PCHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    PCHECK(PtlEQAlloc(ni, 16, PTL_EQ_HANDLER_NONE, &eq));
    ptl_handle_me_t m;
    PCHECK(PtlMEAttach(ni, PT, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m));
    PCHECK(PtlMDAttach(m, md_of(&token, 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, PTL_EQ_NONE), PTL_RETAIN, NULL));
    PCHECK(PtlMDBind(ni, md_of(&src, 8, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN, &smd));
}

static ptl_process_id_t id_of(int r)
{
    ptl_process_id_t id;
    PCHECK(PtlGetRankId(PTL_INVALID_HANDLE, r, &id));
    return id;
}

/* A put to `to`: returns its SEND_END's ni_fail_type; *acked whether an ACK followed. */
static ptl_ni_fail_t put_once(ptl_process_id_t to, int *acked)
{
    PCHECK(PtlPut(smd, PTL_ACK_REQ, to, PT, 0, 0, 0, 0));
    EXPECT(eq, PTL_EVENT_SEND_START);
    ptl_event_t e;
    PCHECK(PtlEQWait(eq, &e));
    CHECK_EQ(e.type, PTL_EVENT_SEND_END);
    int which;
    ptl_event_t a;
    *acked = PtlEQPoll(&eq, 1, e.ni_fail_type == PTL_NI_OK ? 200 : 0, &a, &which) == PTL_OK;
    if (*acked) CHECK_EQ(a.type, PTL_EVENT_ACK);
    return e.ni_fail_type;
}

/* Puts to `to` until acknowledged; returns the time the first put took. */
static double put_until_acked(ptl_process_id_t to)
{
    double t0 = now(), first = -1;
    for (int i = 0; i < 100; i++) {
        int acked;
        double t = now();
        ptl_ni_fail_t f = put_once(to, &acked);
        if (first < 0) first = now() - t;
        CHECK_EQ(f, PTL_NI_OK);
        if (acked) return first;
    }
    SN_FAIL("nid %u pid %u never acknowledged (%.1f s)", to.nid, to.pid, now() - t0);
}

int main(void)
{
    int spawned;
    CHECK_EQ(PMI_Init(&spawned), PMI_SUCCESS);
    CHECK_EQ(PMI_Get_rank(&rank), PMI_SUCCESS);
    CHECK_EQ(PMI_Get_size(&n), PMI_SUCCESS);
    sntest_rank = rank;
    if (n < 3) SKIP("needs 3 ranks");
    int maxif;
    PCHECK(PtlInit(&maxif));
    barrier();

    /* A: late targets. */
    if (rank == n - 1) {
        /* Not up until phase C. */
    } else if (rank > 0) {
        usleep(300000 * (1 + (rank - 1) % 3));
        up();
    } else {
        up();
        for (int r = 1; r < n - 1; r++) {
            double w = put_until_acked(id_of(r));
            printf("ptl_late: rank 0 waited %.3f s for rank %d\n", w, r);
        }
    }
    barrier();

    /* C: a target of the job that does not come within the timeout. */
    if (rank == 0) {
        int acked;
        double t = now();
        CHECK_EQ(put_once(id_of(n - 1), &acked), PTL_NI_FAIL);
        double w = now() - t;
        printf("ptl_late: rank 0 gave up on rank %d after %.3f s\n", n - 1, w);
        CHECK(w > 2.7 && w < 15);
        t = now();
        CHECK_EQ(put_once(id_of(n - 1), &acked), PTL_NI_FAIL);
        CHECK(now() - t < 0.5);
    }
    barrier();
    if (rank == n - 1) up();
    barrier();
    if (rank == 0) put_until_acked(id_of(n - 1));
    barrier();

    /* B: a target that finalised fails at once; it is reached again once it is back. */
    if (rank == 1) PCHECK(PtlNIFini(ni));
    barrier();
    if (rank == 0) {
        int acked;
        double t = now();
        CHECK_EQ(put_once(id_of(1), &acked), PTL_NI_FAIL);
        CHECK(!acked);
        PCHECK(PtlGet(smd, id_of(1), PT, 0, 0, 0));
        EXPECT(eq, PTL_EVENT_REPLY_START);
        expect_ev(eq, PTL_EVENT_REPLY_END, PTL_NI_FAIL);
        double w = now() - t;
        printf("ptl_late: rank 0 saw rank 1 finalised after %.3f s\n", w);
        CHECK(w < 1.0);
        expect_empty(eq);
    }
    barrier();
    if (rank == 1) up();
    barrier();
    if (rank == 0) {
        put_until_acked(id_of(1));
        expect_empty(eq);
    }
    barrier();
    PCHECK(PtlNIFini(ni));
    PtlFini();
    printf("ptl_late: rank %d ok\n", rank);
    return 0;
}
