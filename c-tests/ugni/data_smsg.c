/* SMSG: mailboxes for every pair of ranks in one registered region per rank; ping-pong
 * (latency); FIFO order of many messages to every peer at once with credits in play;
 * credit exhaustion -> NOT_DONE and recovery after the receiver's Release; tags, the
 * 0xFF wildcard and NO_MATCH; the size limit; local SMSG events (msg_id, peer inst_id)
 * on the EP's CQ and remote SMSG events (sender inst_id) on the mailbox's dst CQ;
 * header and data contiguous; error codes. */
#include "data_util.h"

#define CRED 8
#define MAXSZ 256
#define NMSG 2000

static gnit_t t;
static gni_cq_handle_t rcq;
static long local_events, remote_events, *local_next, *remote_from;

/* Takes every queued event off both CQs, checking them. */
static void drain(void)
{
    gni_cq_entry_t ev;
    gni_return_t rc;
    while ((rc = GNI_CqGetEvent(t.cq, &ev)) != GNI_RC_NOT_DONE) {
        if (rc != GNI_RC_SUCCESS) SN_FAIL("local CQ: %s", gnit_rc(rc));
        CHECK_EQ(GNI_CQ_GET_TYPE(ev), GNI_CQ_EVENT_TYPE_SMSG);
        /* A send completion carries the bound remote_id: it says to whom. */
        uint64_t rid = GNI_CQ_GET_INST_ID(ev), id = GNI_CQ_GET_MSG_ID(ev);
        CHECK(rid >= GNIT_RID(t.rank, 0) && rid < GNIT_RID(t.rank, t.size));
        uint64_t p = rid - GNIT_RID(t.rank, 0);
        if (local_next) {
            if ((long)id != (long)p * 100000 + local_next[p]) SN_FAIL("local event msg_id %llu, expected %ld", (unsigned long long)id, (long)p * 100000 + local_next[p]);
            local_next[p]++;
        }
        local_events++;
    }
    while ((rc = GNI_CqGetEvent(rcq, &ev)) != GNI_RC_NOT_DONE) {
        if (rc != GNI_RC_SUCCESS) SN_FAIL("remote CQ: %s", gnit_rc(rc));
        CHECK_EQ(GNI_CQ_GET_TYPE(ev), GNI_CQ_EVENT_TYPE_SMSG);
        CHECK(GNI_CQ_GET_INST_ID(ev) < (uint64_t)t.size);
        if (remote_from) remote_from[GNI_CQ_GET_INST_ID(ev)]++;
        remote_events++;
    }
}

struct msg { uint32_t seq, from; uint8_t body[MAXSZ - 8]; };

int main(void)
{
    gnit_init(&t, 1024);
    int n = t.size, me = t.rank;
    GNI_OK(GNI_CqCreate(t.nic, 1024, 0, GNI_CQ_BLOCKING, NULL, NULL, &rcq));

    gni_smsg_attr_t a;
    unsigned int mbsz = dt_smsg_attr(&a, CRED, MAXSZ);
    CHECK(mbsz >= CRED * MAXSZ);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_SmsgBufferSizeNeeded(NULL, &mbsz));
    char *mb = dt_alloc((size_t)mbsz * n);     /* zeroed, as SmsgInit requires */
    gni_mem_handle_t mbh = dt_reg(&t, mb, (size_t)mbsz * n, rcq, GNI_MEM_READWRITE);
    gni_mem_handle_t *mh = calloc(n, sizeof(*mh));
    uint64_t *base = calloc(n, sizeof(*base));
    gnit_exchange_mem(&t, mb, mbh, mh, base);

    /* SmsgInit on an unbound EP: INVALID_STATE; SMSG calls on an EP without SMSG: INVALID_PARAM. */
    gni_ep_handle_t loose;
    GNI_OK(GNI_EpCreate(t.nic, t.cq, &loose));
    gni_smsg_attr_t l = a, r = a;
    l.msg_buffer = mb; l.buff_size = mbsz; l.mem_hndl = mbh; l.mbox_offset = 0;
    GNI_EXPECT(GNI_RC_INVALID_STATE, GNI_SmsgInit(loose, &l, &l));
    void *hp;
    uint8_t tag;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_SmsgGetNext(loose, &hp));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_SmsgSend(loose, &tag, 1, NULL, 0, 0));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_SmsgRelease(loose));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_SmsgSend(NULL, &tag, 1, NULL, 0, 0));
    GNI_OK(GNI_EpDestroy(loose));

    for (int p = 0; p < n; p++) {
        l.mbox_offset = mbsz * p;                 /* my mailbox for messages from p */
        r.msg_buffer = (void *)(uintptr_t)base[p];
        r.buff_size = mbsz;
        r.mem_hndl = mh[p];
        r.mbox_offset = mbsz * me;                /* p's mailbox for messages from me */
        GNI_OK(GNI_SmsgInit(t.eps[p], &l, &r));
    }
    dt_barrier();
    struct msg m, *got;

    /* Ping-pong 0 <-> 1, receiving through the remote SMSG event. */
    if (n >= 2 && me < 2) {
        int peer = 1 - me, iters = 20000;
        double t0 = 0;
        for (int i = -500; i < iters; i++) {
            if (i == 0) t0 = dt_now();
            if (me == 0) {
                m.seq = (uint32_t)i;
                while (GNI_SmsgSend(t.eps[peer], &m, 8, NULL, 0, 1) == GNI_RC_NOT_DONE) {}
                gni_cq_entry_t ev = gnit_wait(t.cq, GNI_RC_SUCCESS);
                CHECK_EQ(GNI_CQ_GET_MSG_ID(ev), 1);
            }
            gni_cq_entry_t ev = gnit_wait(rcq, GNI_RC_SUCCESS);
            CHECK_EQ(GNI_CQ_GET_INST_ID(ev), peer);
            GNI_OK(GNI_SmsgGetNext(t.eps[peer], &hp));
            CHECK_EQ(((struct msg *)hp)->seq, (uint32_t)i);
            GNI_OK(GNI_SmsgRelease(t.eps[peer]));
            if (me == 1) {
                m.seq = (uint32_t)i;
                while (GNI_SmsgSend(t.eps[peer], &m, 8, NULL, 0, 1) == GNI_RC_NOT_DONE) {}
                gnit_wait(t.cq, GNI_RC_SUCCESS);
            }
        }
        if (me == 0) printf("data_smsg: SMSG ping-pong 8 B: %.2f us one-way\n", (dt_now() - t0) / iters / 2 * 1e6);
    }
    dt_barrier();
    drain();
    local_events = remote_events = 0;
    dt_barrier();   /* nobody sends before everyone has reset the counters */

    /* FIFO: NMSG messages to every peer (self included), interleaved with receiving. */
    long *sent = calloc(n, sizeof(long)), *rcvd = calloc(n, sizeof(long));
    local_next = calloc(n, sizeof(long));
    remote_from = calloc(n, sizeof(long));
    long todo = (long)NMSG * n * 2, notdone = 0;
    while (todo > 0) {
        for (int p = 0; p < n; p++) {
            if (sent[p] < NMSG) {
                m.seq = (uint32_t)sent[p]; m.from = (uint32_t)me;
                uint32_t len = 8 + (uint32_t)(sent[p] % (MAXSZ - 8));
                for (uint32_t k = 0; k < len - 8; k++) m.body[k] = (uint8_t)(sent[p] + k);
                gni_return_t rc = GNI_SmsgSend(t.eps[p], &m, 8, m.body, len - 8, (uint32_t)(p * 100000 + sent[p]));
                if (rc == GNI_RC_SUCCESS) { sent[p]++; todo--; }
                else if (rc == GNI_RC_NOT_DONE) notdone++;
                else SN_FAIL("SmsgSend: %s", gnit_rc(rc));
            }
            /* Only messages whose remote event was reaped, as real programs do: releasing
             * messages without reaping their events lets the remote CQ overrun, e.g.
             * while a preempted sender holds a reserved but unpublished CQ slot (8 ranks
             * on 2 cores) and the others keep sending behind it. */
            while (rcvd[p] < remote_from[p] && GNI_SmsgGetNext(t.eps[p], (void **)&got) == GNI_RC_SUCCESS) {
                if (got->seq != (uint32_t)rcvd[p] || got->from != (uint32_t)p)
                    SN_FAIL("from %d: got seq %u from %u, expected seq %ld", p, got->seq, got->from, rcvd[p]);
                uint32_t len = 8 + (uint32_t)(rcvd[p] % (MAXSZ - 8));
                for (uint32_t k = 0; k < len - 8; k++)
                    if (got->body[k] != (uint8_t)(rcvd[p] + k)) SN_FAIL("from %d msg %ld byte %u", p, rcvd[p], k);
                GNI_OK(GNI_SmsgRelease(t.eps[p]));
                rcvd[p]++; todo--;
            }
        }
        drain();
    }
    dt_barrier();
    drain();
    CHECK_EQ(local_events, (long)NMSG * n);
    CHECK_EQ(remote_events, (long)NMSG * n);
    for (int p = 0; p < n; p++) CHECK_EQ(local_next[p], NMSG);
    free(local_next);
    local_next = NULL;
    free(remote_from);
    remote_from = NULL;
    if (me == 0) printf("data_smsg: FIFO of %d messages per pair ok (%ld NOT_DONE retries)\n", NMSG, notdone);
    dt_barrier();

    /* Credit exhaustion and recovery (0 -> 1), tags, size limit. */
    if (n >= 2 && me == 0) {
        for (int i = 0; i < CRED; i++) { m.seq = i; GNI_OK(GNI_SmsgSendWTag(t.eps[1], &m, 8, NULL, 0, 7, (uint8_t)(10 + i))); }
        GNI_EXPECT(GNI_RC_NOT_DONE, GNI_SmsgSend(t.eps[1], &m, 8, NULL, 0, 7));
    }
    dt_barrier();
    if (n >= 2 && me == 1) {
        tag = 99;
        GNI_EXPECT(GNI_RC_NO_MATCH, GNI_SmsgGetNextWTag(t.eps[0], &hp, &tag));
        CHECK_EQ(tag, 99);
        GNI_EXPECT(GNI_RC_NOT_DONE, GNI_SmsgRelease(t.eps[0]));
        tag = 10;
        GNI_OK(GNI_SmsgGetNextWTag(t.eps[0], &hp, &tag));
        CHECK_EQ(tag, 10);
        CHECK_EQ(((struct msg *)hp)->seq, 0);
        GNI_OK(GNI_SmsgRelease(t.eps[0]));
        GNI_EXPECT(GNI_RC_NOT_DONE, GNI_SmsgRelease(t.eps[0]));
    }
    dt_barrier();
    if (n >= 2 && me == 0) {
        m.seq = CRED;
        GNI_OK(GNI_SmsgSendWTag(t.eps[1], &m, 8, NULL, 0, 7, 0));   /* the returned credit */
        GNI_EXPECT(GNI_RC_NOT_DONE, GNI_SmsgSend(t.eps[1], &m, 8, NULL, 0, 7));
    }
    dt_barrier();
    if (n >= 2 && me == 1) {
        for (int i = 1; i <= CRED; i++) {
            tag = GNI_SMSG_ANY_TAG;
            GNI_OK(GNI_SmsgGetNextWTag(t.eps[0], &hp, &tag));
            CHECK_EQ(tag, i < CRED ? 10 + i : 0);
            CHECK_EQ(((struct msg *)hp)->seq, i);
            GNI_OK(GNI_SmsgGetNext(t.eps[0], &hp));              /* same current message again */
            CHECK_EQ(((struct msg *)hp)->seq, i);
            GNI_OK(GNI_SmsgRelease(t.eps[0]));
        }
        GNI_EXPECT(GNI_RC_NOT_DONE, GNI_SmsgGetNext(t.eps[0], &hp));
        tag = GNI_SMSG_ANY_TAG;
        GNI_EXPECT(GNI_RC_NOT_DONE, GNI_SmsgGetNextWTag(t.eps[0], &hp, &tag));
    }
    dt_barrier();
    if (n >= 2 && me == 0) {
        static uint8_t big[2 * MAXSZ];
        for (int i = 0; i < 2 * MAXSZ; i++) big[i] = (uint8_t)i;
        GNI_EXPECT(GNI_RC_ERROR_RESOURCE, GNI_SmsgSend(t.eps[1], big, 16, big + 16, MAXSZ - 15, 3));
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_SmsgSend(t.eps[1], NULL, 16, NULL, 0, 3));
        GNI_OK(GNI_SmsgSend(t.eps[1], big, 16, big + 100, MAXSZ - 16, 3));
    }
    dt_barrier();
    if (n >= 2 && me == 1) {
        GNI_OK(GNI_SmsgGetNext(t.eps[0], &hp));
        uint8_t *b = hp;
        for (int i = 0; i < 16; i++) CHECK_EQ(b[i], i);
        for (int i = 0; i < MAXSZ - 16; i++) CHECK_EQ(b[16 + i], (uint8_t)(100 + i));
        GNI_OK(GNI_SmsgRelease(t.eps[0]));
    }
    dt_barrier();
    drain();

    /* Rank 1 withdraws its mailboxes (rank 0's endpoint has sent many messages through
     * them, so its fast path has them pinned): a send still returns SUCCESS, its local
     * event carries the transaction error, twice in a row, and rank 1's memory and
     * remote CQ see nothing. */
    int withdrawn = n >= 2 && me == 1;
    if (n >= 2) {
        char *snap = NULL;
        if (me == 1) {
            snap = malloc((size_t)mbsz * n);
            CHECK(snap != NULL);
            memcpy(snap, mb, (size_t)mbsz * n);
            GNI_OK(GNI_MemDeregister(t.nic, &mbh));
        }
        dt_barrier();
        if (me == 0) {
            for (int k = 0; k < 2; k++) {
                gni_cq_entry_t ev;
                gni_return_t rc;
                m.seq = 77;
                GNI_OK(GNI_SmsgSend(t.eps[1], &m, 8, NULL, 0, 42));
                while ((rc = GNI_CqGetEvent(t.cq, &ev)) == GNI_RC_NOT_DONE) ;
                CHECK_EQ(rc, GNI_RC_TRANSACTION_ERROR);
                CHECK(!GNI_CQ_STATUS_OK(ev));
                CHECK_EQ(GNI_CQ_GET_TYPE(ev), GNI_CQ_EVENT_TYPE_SMSG);
                CHECK_EQ(GNI_CQ_GET_MSG_ID(ev), 42);
            }
        }
        dt_barrier();
        if (me == 1) {
            gni_cq_entry_t ev;
            CHECK(memcmp(snap, mb, (size_t)mbsz * n) == 0);
            GNI_EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(rcq, &ev));
            free(snap);
            printf("data_smsg: withdrawn mailbox: sends fail with an event, nothing written\n");
        }
    }
    if (!withdrawn) GNI_OK(GNI_MemDeregister(t.nic, &mbh));
    GNI_OK(GNI_CqDestroy(rcq));
    gnit_fini(&t);
    printf("data_smsg: rank %d ok\n", me);
    return 0;
}
