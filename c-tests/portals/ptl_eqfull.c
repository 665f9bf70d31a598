/* Small event queues that overflow, across processes (queues are circular: the oldest
 * events are overwritten).  PMI barriers order the phases; ids come from the runtime.
 *
 * 1. Rank 0's queue of 4 takes 5 puts from every other rank while rank 0 does not read:
 *    the first event PtlEQPoll returns comes with PTL_EQ_DROPPED, the sequence numbers go
 *    on from it without a gap, exactly 4 are returned, the newest (a sender's last put's
 *    PUT_END) among them; no request was dropped (PTL_SR_DROP_COUNT).
 * 2. Rank 0 sleeps in PtlEQWait on a queue of 1 while the others put 3 each: it returns,
 *    and after the senders are done the queue's one event is the newest.
 * 3. Each rank's initiator queue of 2: a put with an ack logs SEND_START, SEND_END, ACK;
 *    PtlEQWait returns SEND_END with PTL_EQ_DROPPED, then the ACK (8 B and 16 KiB, first
 *    and later contacts).
 * Prints "ptl_eqfull: rank R of N ok". */
#include "ptest.h"
#include <pmi.h>
#include <unistd.h>

static int rank, n;
static ptl_handle_ni_t ni;

static void barrier(void)
{
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
}

static ptl_process_id_t id_of(int r)
{
    ptl_process_id_t id;
    PCHECK(PtlGetRankId(ni, r, &id));
    return id;
}

int main(void)
{
    int spawned, maxif;
    CHECK_EQ(PMI_Init(&spawned), PMI_SUCCESS);
    CHECK_EQ(PMI_Get_rank(&rank), PMI_SUCCESS);
    CHECK_EQ(PMI_Get_size(&n), PMI_SUCCESS);
    sntest_rank = rank;
    if (n < 2) SKIP("needs 2 ranks");
    PCHECK(PtlInit(&maxif));
    PCHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    static char rbuf[16 << 10], sbuf[16 << 10];
    ptl_handle_eq_t eq4, eq1, ieq;
    PCHECK(PtlEQAlloc(ni, 4, PTL_EQ_HANDLER_NONE, &eq4));
    PCHECK(PtlEQAlloc(ni, 1, PTL_EQ_HANDLER_NONE, &eq1));
    PCHECK(PtlEQAlloc(ni, 2, PTL_EQ_HANDLER_NONE, &ieq));
    ptl_handle_me_t m;
    unsigned opts = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE;
    PCHECK(PtlMEAttach(ni, 1, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m));
    PCHECK(PtlMDAttach(m, md_of(rbuf, sizeof rbuf, PTL_MD_THRESH_INF, opts, eq4), PTL_RETAIN, NULL));
    PCHECK(PtlMEAttach(ni, 2, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m));
    PCHECK(PtlMDAttach(m, md_of(rbuf, sizeof rbuf, PTL_MD_THRESH_INF, opts, eq1), PTL_RETAIN, NULL));
    PCHECK(PtlMEAttach(ni, 3, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m));
    PCHECK(PtlMDAttach(m, md_of(rbuf, sizeof rbuf, PTL_MD_THRESH_INF, opts, PTL_EQ_NONE), PTL_RETAIN, NULL));
    ptl_handle_md_t quiet, loud;
    PCHECK(PtlMDBind(ni, md_of(sbuf, sizeof sbuf, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE), PTL_RETAIN, &quiet));
    PCHECK(PtlMDBind(ni, md_of(sbuf, sizeof sbuf, PTL_MD_THRESH_INF, 0, ieq), PTL_RETAIN, &loud));
    barrier();

    /* 1. */
    if (rank != 0)
        for (int i = 0; i < 5; i++) PCHECK(PtlPutRegion(quiet, 0, 8, PTL_NO_ACK_REQ, id_of(0), 1, 0, 0, 0, rank * 1000 + i));
    barrier();
    if (rank == 0) {
        int total = (n - 1) * 5 * 2, which = -1;
        ptl_event_t e;
        CHECK_EQ(PtlEQPoll(&eq4, 1, 0, &e, &which), PTL_EQ_DROPPED);
        CHECK_EQ(which, 0);
        CHECK_EQ(e.sequence, total - 4);
        for (int i = 1; i < 4; i++) {
            PCHECK(PtlEQGet(eq4, &e));
            CHECK_EQ(e.sequence, total - 4 + i);
        }
        CHECK_EQ(e.type, PTL_EVENT_PUT_END);
        CHECK_EQ(e.hdr_data % 1000, 4);
        expect_empty(eq4);
        CHECK_EQ(status_reg(ni, PTL_SR_DROP_COUNT), 0);
    }
    barrier();

    /* 2. */
    if (rank != 0) {
        for (int i = 0; i < 3; i++) PCHECK(PtlPutRegion(quiet, 0, 8, PTL_NO_ACK_REQ, id_of(0), 2, 0, 0, 0, rank * 1000 + i));
    } else {
        ptl_event_t e;
        int rc = PtlEQWait(eq1, &e);
        CHECK(rc == PTL_OK || rc == PTL_EQ_DROPPED);
        CHECK(e.type == PTL_EVENT_PUT_START || e.type == PTL_EVENT_PUT_END);
        ptl_event_t last = e;
        barrier();
        rc = PtlEQGet(eq1, &e);
        if (rc == PTL_OK || rc == PTL_EQ_DROPPED) last = e;
        else CHECK_EQ(rc, PTL_EQ_EMPTY);
        CHECK_EQ(last.type, PTL_EVENT_PUT_END);                /* the newest: a last put's */
        CHECK_EQ(last.hdr_data % 1000, 2);
        CHECK_EQ(last.sequence, (n - 1) * 3 * 2 - 1);
        CHECK_EQ(PtlEQWait_timeout(eq1, &e), PTL_EQ_EMPTY);
    }
    if (rank != 0) barrier();
    barrier();

    /* 3. */
    ptl_process_id_t right = id_of((rank + 1) % n);
    int seq = 0;
    for (int k = 0; k < 4; k++) {
        ptl_size_t len = k % 2 ? sizeof sbuf : 8;
        PCHECK(PtlPutRegion(loud, 0, len, PTL_ACK_REQ, right, 3, 0, 0, 0, k));
        ptl_event_t e;
        CHECK_EQ(PtlEQWait(ieq, &e), PTL_EQ_DROPPED);          /* SEND_START was overwritten */
        CHECK(e.type == PTL_EVENT_SEND_END && e.hdr_data == (ptl_hdr_data_t)k && e.sequence == (ptl_seq_t)(seq + 1));
        PCHECK(PtlEQWait(ieq, &e));
        CHECK(e.type == PTL_EVENT_ACK && e.mlength == len && e.sequence == (ptl_seq_t)(seq + 2));
        seq += 3;
        expect_empty(ieq);
    }
    barrier();
    PCHECK(PtlNIFini(ni));
    PtlFini();
    printf("ptl_eqfull: rank %d of %d ok\n", rank, n);
    return 0;
}
