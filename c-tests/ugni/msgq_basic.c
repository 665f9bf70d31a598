/* MSGQ with every rank connecting for itself (the instances of a node share one node
 * table: their connections merge).  GNI_MsgqSize/Init argument checks; GetConnAttrs
 * contents (the node's instances, the caller first); attrs allgathered and connected by
 * every rank (the connection limit gives ERROR_RESOURCE); all-to-all traffic through
 * small queues (NOT_DONE when a queue is full, counted by
 * GNI_STAT_SMSG_BUFF_CREDITS_STALL) with per-sender FIFO order, header+data contiguity,
 * tags and sender identity checked in the receive callback; MSGQ events on the send CQ;
 * Progress NOT_DONE/TIMEOUT/blocking wake; Idle; ConnRelease by every holder ends a
 * connection; a send to a released queue -> error event; Release and use after release.
 * msgq_node.c tests the node sharing itself (only one rank per node connecting). */
#include <unistd.h>
#include "data_util.h"

#define NMSG 300
#define MAXSZ 64

static gnit_t t;
static long *next_seq;          /* per sender: next expected seq */
static long received;
static int cb_calls;

typedef struct { uint32_t rank, seq; } hdr_t;

static int rcv(uint32_t snd_id, uint32_t snd_pe, void *msg, uint8_t tag, void *cb_data)
{
    CHECK(cb_data == (void *)&t);
    CHECK(snd_id < (uint32_t)t.size);
    CHECK_EQ(snd_pe, t.addrs[snd_id]);
    hdr_t h;
    memcpy(&h, msg, sizeof(h));
    CHECK_EQ(h.rank, snd_id);
    if ((long)h.seq != next_seq[snd_id])
        SN_FAIL("from %u: seq %u, expected %ld (FIFO order broken)", snd_id, h.seq, next_seq[snd_id]);
    next_seq[snd_id]++;
    CHECK_EQ(tag, (uint8_t)(h.seq * 7));
    const uint8_t *d = (const uint8_t *)msg + sizeof(h);
    int len = 1 + h.seq % (MAXSZ - (int)sizeof(h));
    for (int i = 0; i < len; i++)
        if (d[i] != (uint8_t)(h.seq + i + snd_id)) SN_FAIL("from %u seq %u: data byte %d is %u", snd_id, h.seq, i, d[i]);
    received++;
    cb_calls++;
    return 0;
}

static long local_events, events_bad;
static void drain_scq(gni_cq_handle_t scq)
{
    gni_cq_entry_t ev;
    gni_return_t rc;
    while ((rc = GNI_CqGetEvent(scq, &ev)) != GNI_RC_NOT_DONE) {
        CHECK_EQ(GNI_CQ_GET_TYPE(ev), GNI_CQ_EVENT_TYPE_MSGQ);
        if (rc != GNI_RC_SUCCESS) events_bad++;
        else local_events++;
    }
}

int main(void)
{
    gnit_init(&t, 64);
    /* MSGQ connections list instances by inst_id: the EP's remote_id picks one of them. */
    gnit_bind_inst_ids(&t);
    int me = t.rank, n = t.size;
    next_seq = calloc((size_t)(n > 0 ? n : 1), sizeof(long));
    CHECK(next_seq);
    /* distinct node addresses = connections needed */
    int neps = 0;
    for (int r = 0; r < n; r++) {
        int dup = 0;
        for (int s = 0; s < r; s++) dup |= t.addrs[s] == t.addrs[r];
        neps += !dup;
    }

    gni_msgq_attr_t a;
    memset(&a, 0, sizeof(a));
    a.max_msg_sz = MAXSZ;
    a.smsg_q_sz = 4;
    a.num_msgq_eps = neps;
    a.nloc_insts = 1;
    a.modes = GNI_MSGQ_MODE_BLOCKING;
    uint32_t sz = 0;
    GNI_OK(GNI_MsgqSize(&a, &sz));
    CHECK(sz >= 4u * neps * MAXSZ);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqSize(NULL, &sz));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqSize(&a, NULL));
    gni_msgq_attr_t b = a;
    b.max_msg_sz = GNI_MSGQ_MSG_SZ_MAX + 1;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqSize(&b, &sz));
    b = a; b.smsg_q_sz = 0;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqSize(&b, &sz));
    b = a; b.nloc_insts = GNI_MSGQ_NODE_INSTS_MAX + 1;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqSize(&b, &sz));
    b = a; b.modes = 0x80;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqSize(&b, &sz));

    gni_cq_handle_t scq;
    GNI_OK(GNI_CqCreate(t.nic, 4096, 0, GNI_CQ_NOBLOCK, NULL, NULL, &scq));
    gni_msgq_handle_t q = NULL, q2 = NULL;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqInit(t.nic, NULL, &t, scq, &a, &q));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqInit(t.nic, rcv, &t, scq, NULL, &q));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqInit(t.nic, rcv, &t, scq, &a, NULL));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqInit(NULL, rcv, &t, scq, &a, &q));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqInit(t.nic, rcv, &t, (gni_cq_handle_t)t.nic, &a, &q));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqInit(t.nic, rcv, &t, scq, &b, &q));
    GNI_OK(GNI_MsgqInit(t.nic, rcv, &t, scq, &a, &q));
    GNI_EXPECT(GNI_RC_INVALID_STATE, GNI_MsgqInit(t.nic, rcv, &t, scq, &a, &q2));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqProgress(NULL, 0));

    gni_msgq_ep_attr_t mine, *all = calloc((size_t)(n > 0 ? n : 1), sizeof(gni_msgq_ep_attr_t));
    CHECK(all);
    uint32_t asz = 0;
    memset(&mine, 0, sizeof(mine));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqGetConnAttrs(q, 0, NULL, &asz));
    dt_barrier();   /* every instance of this node has joined its MSGQ */
    GNI_OK(GNI_MsgqGetConnAttrs(q, t.addrs[(me + 1) % n], &mine, &asz));
    int nlocal = 0;
    for (int r = 0; r < n; r++) nlocal += t.addrs[r] == t.nic_addr;
    CHECK_EQ(mine.pe_addr, t.nic_addr);
    CHECK_EQ(mine.num_insts, nlocal);      /* the node's instances, the caller first */
    CHECK_EQ(asz, 16 + 32 * nlocal);
    CHECK_EQ(mine.insts[0].id, me);
    for (uint32_t i = 0; i < mine.num_insts; i++) CHECK_EQ(t.addrs[mine.insts[i].id], t.nic_addr);
    CHECK_EQ(mine.max_msg_sz, MAXSZ);
    CHECK_EQ(mine.smsg_q_sz, 4);
    CHECK(PMI_Allgather(&mine, all, sizeof(mine)) == PMI_SUCCESS);

    /* not connected yet */
    hdr_t h = { (uint32_t)me, 0 };
    GNI_EXPECT(GNI_RC_INVALID_STATE, GNI_MsgqSend(q, t.eps[me], &h, sizeof(h), NULL, 0, 1, 0));
    dt_barrier();   /* a neighbour's connection would be ours too */
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqConnect(q, t.addrs[0] + 1, &all[0]));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqConnect(q, t.addrs[0], NULL));
    for (int r = 0; r < n; r++) GNI_OK(GNI_MsgqConnect(q, all[r].pe_addr, &all[r]));
    gni_msgq_ep_attr_t fake = mine;
    fake.pe_addr = 0x7fffff0;
    GNI_EXPECT(GNI_RC_ERROR_RESOURCE, GNI_MsgqConnect(q, fake.pe_addr, &fake));
    fake.num_insts = 0;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqConnect(q, fake.pe_addr, &fake));

    /* bad sends */
    uint8_t big[GNI_MSGQ_MSG_SZ_MAX];
    memset(big, 1, sizeof(big));
    GNI_EXPECT(GNI_RC_ERROR_RESOURCE, GNI_MsgqSend(q, t.eps[me], big, 8, big, MAXSZ - 7, 1, 0));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqSend(q, t.eps[me], NULL, 8, NULL, 0, 1, 0));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqSend(q, NULL, &h, sizeof(h), NULL, 0, 1, 0));
    GNI_EXPECT(GNI_RC_NOT_DONE, GNI_MsgqProgress(q, 0));
    GNI_EXPECT(GNI_RC_TIMEOUT, GNI_MsgqProgress(q, 20));
    GNI_OK(GNI_MsgqIdle(q));
    GNI_OK(GNI_ResetNicStat(t.nic, GNI_STAT_SMSG_BUFF_CREDITS_STALL));
    uint32_t stall = 99;
    GNI_OK(GNI_GetNicStat(t.nic, GNI_STAT_SMSG_BUFF_CREDITS_STALL, &stall));
    CHECK_EQ(stall, 0);
    dt_barrier();   /* nobody sends before everybody checked its empty queue */

    /* all-to-all through queues of 4*neps entries */
    long not_done = 0, sent = 0;
    double t0 = dt_now();
    for (uint32_t s = 0; s < NMSG; s++) {
        for (int k = 0; k < n; k++) {
            int r = (me + k) % n;
            hdr_t hh = { (uint32_t)me, s };
            uint8_t data[MAXSZ];
            int len = 1 + s % (MAXSZ - (int)sizeof(hh));
            for (int i = 0; i < len; i++) data[i] = (uint8_t)(s + i + me);
            gni_return_t rc;
            while ((rc = GNI_MsgqSend(q, t.eps[r], &hh, sizeof(hh), data, len, s, (uint8_t)(s * 7))) == GNI_RC_NOT_DONE) {
                not_done++;
                gni_return_t p = GNI_MsgqProgress(q, 0);
                CHECK(p == GNI_RC_SUCCESS || p == GNI_RC_NOT_DONE);
                drain_scq(scq);
            }
            if (rc != GNI_RC_SUCCESS) SN_FAIL("GNI_MsgqSend returned %s", gnit_rc(rc));
            sent++;
            drain_scq(scq);
        }
        GNI_MsgqProgress(q, 0);
    }
    while (received < (long)n * NMSG) {
        gni_return_t p = GNI_MsgqProgress(q, 10000);
        if (p != GNI_RC_SUCCESS) SN_FAIL("waiting for messages: %s after %ld of %ld", gnit_rc(p), received, (long)n * NMSG);
    }
    double el = dt_now() - t0;
    drain_scq(scq);
    CHECK_EQ(local_events, sent);
    CHECK_EQ(events_bad, 0);
    for (int r = 0; r < n; r++) CHECK_EQ(next_seq[r], NMSG);
    GNI_OK(GNI_GetNicStat(t.nic, GNI_STAT_SMSG_BUFF_CREDITS_STALL, &stall));
    CHECK_EQ(stall, not_done);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_GetNicStat(t.nic, GNI_NUM_STATS + 12, &stall));
    if (me == 0) printf("msgq_basic: %ld messages all-to-all in %.3f s, %ld queue-full retries\n", (long)n * NMSG, el, not_done);
    dt_barrier();
    GNI_OK(GNI_MsgqIdle(q));

    /* a blocked Progress is woken by a late sender */
    if (n >= 2) {
        if (me == 0) {
            usleep(100000);
            hdr_t hh = { 0, NMSG };
            uint8_t data[MAXSZ];
            int len = 1 + NMSG % (MAXSZ - (int)sizeof(hh));
            for (int i = 0; i < len; i++) data[i] = (uint8_t)(NMSG + i);
            GNI_OK(GNI_MsgqSend(q, t.eps[1], &hh, sizeof(hh), data, len, 77, (uint8_t)(NMSG * 7)));
            gni_cq_entry_t ev = 0;
            gni_return_t rc;
            while ((rc = GNI_CqGetEvent(scq, &ev)) == GNI_RC_NOT_DONE) ;
            GNI_OK(rc);
            CHECK_EQ(GNI_CQ_GET_MSG_ID(ev), 77);
        } else if (me == 1) {
            cb_calls = 0;
            double w0 = dt_now();
            GNI_OK(GNI_MsgqProgress(q, 10000));
            CHECK_EQ(cb_calls, 1);
            CHECK(dt_now() - w0 < 5.0);
            CHECK_EQ(next_seq[0], NMSG + 1);
        }
    }
    dt_barrier();

    /* ConnRelease: every local rank connected this node, so each holds the connection;
     * it ends with the last hold, then nobody can use it */
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqConnRelease(q, 0x7fffff0));
    GNI_OK(GNI_MsgqConnRelease(q, t.nic_addr));
    dt_barrier();
    GNI_EXPECT(GNI_RC_INVALID_STATE, GNI_MsgqSend(q, t.eps[me], &h, sizeof(h), NULL, 0, 1, 0));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqConnRelease(q, t.nic_addr));
    dt_barrier();
    for (int r = 0; r < n; r++)
        if (all[r].pe_addr == t.nic_addr) GNI_OK(GNI_MsgqConnect(q, all[r].pe_addr, &all[r]));
    dt_barrier();

    /* a send to a queue that was released -> error in the local event */
    if (n >= 2) {
        if (me == 1) GNI_OK(GNI_MsgqRelease(q));
        dt_barrier();
        if (me == 0) {
            hdr_t hh = { 0, 0 };
            GNI_OK(GNI_MsgqSend(q, t.eps[1], &hh, sizeof(hh), NULL, 0, 5, 0));
            gni_cq_entry_t ev = 0;
            GNI_EXPECT(GNI_RC_TRANSACTION_ERROR, GNI_CqGetEvent(scq, &ev));
            CHECK_EQ(GNI_CQ_GET_TYPE(ev), GNI_CQ_EVENT_TYPE_MSGQ);
            CHECK_EQ(GNI_CQ_GET_MSG_ID(ev), 5);
        }
        dt_barrier();
    }
    if (!(n >= 2 && me == 1)) GNI_OK(GNI_MsgqRelease(q));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqRelease(q));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqProgress(q, 0));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqIdle(q));
    /* a new queue may be created once the old one is released */
    GNI_OK(GNI_MsgqInit(t.nic, rcv, &t, NULL, &a, &q2));
    GNI_OK(GNI_MsgqRelease(q2));
    dt_barrier();
    GNI_OK(GNI_CqDestroy(scq));
    free(all);
    gnit_fini(&t);
    printf("msgq_basic: rank %d ok\n", me);
    return 0;
}
