/* uGNI the way real programs use it (issue 9).  Written like a Cray application, not on
 * gnitest.h: ptag/cookie/device from the first token of PMI_GNI_*, inst_id = rank, NIC
 * addresses and memory handles exchanged with PMI_Allgather, endpoints bound with
 * remote_id = rank*100 + peer (never the peer's inst_id, except for rank 0), events
 * checked with GNI_CQ_GET_INST_ID on both sides, first with the default event data, then
 * with GNI_EpSetEventData.
 *  - Every operation family to the right neighbour: FMA PUT, FMA GET, AMOs (Gemini 64-bit,
 *    Aries 64-bit, 32-bit and float, fetching and not), RDMA PUT with DUAL events, RDMA
 *    GET, CQ write, SMSG; initiator events carry the local value (default: the bound
 *    remote_id), target events (REMOTE, CQ write, SMSG arrival) the initiator's remote
 *    value (default: its inst_id).
 *  - Everyone PUTs into rank 0 at once; rank 0 sees one REMOTE event from each rank.
 *  - MSGQ (connections list instances by inst_id: its endpoints bind to inst_ids).
 *  - Datagram connect with late peers (odd ranks post 150 ms late, the others retry
 *    EpPostDataWait with a short timeout), and a symmetric vMDH handle resolved through
 *    the instance an unbound endpoint exchanged a datagram with.
 *  - Forged, stale, zero and other-node handles: transaction errors, nothing touched.
 * `data_routing serve DIR` / `data_routing attack DIR`: two separate jobs; the attacker
 * uses the server's handle from another job (another ptag/cookie) and must get
 * transaction errors; the server checks its memory is untouched. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include "gni_pub.h"
#include "pmi.h"
#include "sntest.h"

#define OK(call) do { gni_return_t rc_ = (call); \
    if (rc_ != GNI_RC_SUCCESS) SN_FAIL("%s returned %d", #call, (int)rc_); } while (0)
#define EXPECT(want, call) do { gni_return_t rc_ = (call); \
    if (rc_ != (want)) SN_FAIL("%s returned %d, expected %s", #call, (int)rc_, #want); } while (0)

#define WIN 65536
#define MAXMSG 64
#define CRED 8
#define CANARY 0x5a5a5a5a5a5a5a5aull

static int me, n, left, right;
static uint8_t ptag;
static uint32_t cookie, dev_id, my_addr;
static gni_cdm_handle_t cdm;
static gni_nic_handle_t nic;
static gni_cq_handle_t cq, rcq;
static gni_ep_handle_t *ep;
static uint64_t *win, *loc;
static gni_mem_handle_t win_mh, loc_mh;

typedef struct {
    uint32_t addr, pad;
    uint64_t win;
    gni_mem_handle_t mdh;
} peer_t;
static peer_t *peers;

static int set_data; /* 0: default event data, 1: after GNI_EpSetEventData */

static unsigned long first_token(const char *name)
{
    const char *v = getenv(name);
    if (!v) SN_FAIL("%s is not set", name);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    char *tok = strtok(buf, ":");
    return tok ? strtoul(tok, NULL, 10) : 0;
}

static uint32_t rid(int from, int to) { return (uint32_t)(from * 100 + to); }
/* What an event on my CQ for a transaction to `peer` must carry. */
static uint32_t want_local(int peer) { return set_data ? 0x30000u + rid(me, peer) : rid(me, peer); }
/* What an event at the target of a transaction from `from` must carry. */
static uint32_t want_remote(int from) { return set_data ? 0x50000u + (uint32_t)from : (uint32_t)from; }

static void barrier(void) { CHECK(PMI_Barrier() == PMI_SUCCESS); }

static void desc(gni_post_descriptor_t *d, gni_post_type_t type, uint16_t mode, void *local,
                 gni_mem_handle_t lmh, uint64_t remote, gni_mem_handle_t rmh, uint64_t len)
{
    memset(d, 0, sizeof *d);
    d->type = type;
    d->cq_mode = mode;
    d->dlvr_mode = GNI_DLVMODE_PERFORMANCE;
    d->local_addr = (uint64_t)(uintptr_t)local;
    d->local_mem_hndl = lmh;
    d->remote_addr = remote;
    d->remote_mem_hndl = rmh;
    d->length = len;
}

/* One completion of d on my CQ: the descriptor comes back and the event says to whom. */
static void complete(gni_post_descriptor_t *d, gni_return_t want_rc, int peer)
{
    gni_cq_entry_t ev = 0;
    gni_return_t rc = GNI_CqWaitEvent(cq, 10000, &ev);
    if (rc != want_rc) SN_FAIL("GNI_CqWaitEvent returned %d, expected %d", (int)rc, (int)want_rc);
    CHECK_EQ(GNI_CQ_GET_TYPE(ev), GNI_CQ_EVENT_TYPE_POST);
    gni_post_descriptor_t *got = NULL;
    rc = GNI_GetCompleted(cq, ev, &got);
    CHECK(rc == want_rc || (want_rc == GNI_RC_TRANSACTION_ERROR && rc == GNI_RC_DESCRIPTOR_ERROR));
    CHECK(got == d);
    if (peer >= 0) CHECK_EQ(GNI_CQ_GET_INST_ID(ev), want_local(peer));
}

/* The target side: exactly `count` events of `type` from `from` on my dst CQ; then a
 * barrier, so that nobody starts the next step before everyone has counted. */
static void remote_events(int count, uint64_t type, int from)
{
    for (int i = 0; i < count; i++) {
        gni_cq_entry_t ev = 0;
        gni_return_t rc = GNI_CqWaitEvent(rcq, 10000, &ev);
        if (rc != GNI_RC_SUCCESS) SN_FAIL("remote event %d of %d: rc %d", i, count, (int)rc);
        CHECK_EQ(GNI_CQ_GET_TYPE(ev), type);
        CHECK_EQ(GNI_CQ_GET_INST_ID(ev), want_remote(from));
    }
    gni_cq_entry_t ev;
    EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(rcq, &ev));
    barrier();
}

static void setup(void)
{
    int spawned;
    CHECK(PMI_Init(&spawned) == PMI_SUCCESS);
    CHECK(PMI_Get_rank(&me) == PMI_SUCCESS);
    CHECK(PMI_Get_size(&n) == PMI_SUCCESS);
    sntest_rank = me;
    left = (me + n - 1) % n;
    right = (me + 1) % n;
    ptag = (uint8_t)first_token("PMI_GNI_PTAG");
    cookie = (uint32_t)first_token("PMI_GNI_COOKIE");
    dev_id = (uint32_t)first_token("PMI_GNI_DEV_ID");
    OK(GNI_CdmCreate((uint32_t)me, ptag, cookie, GNI_CDM_MODE_DUAL_EVENTS, &cdm));
    OK(GNI_CdmAttach(cdm, dev_id, &my_addr, &nic));
    OK(GNI_CqCreate(nic, 1024, 0, GNI_CQ_BLOCKING, NULL, NULL, &cq));
    OK(GNI_CqCreate(nic, 1024, 0, GNI_CQ_BLOCKING, NULL, NULL, &rcq));
    CHECK(posix_memalign((void **)&win, 4096, WIN) == 0 && posix_memalign((void **)&loc, 4096, WIN) == 0);
    memset(win, 0, WIN);
    memset(loc, 0, WIN);
    OK(GNI_MemRegister(nic, (uint64_t)(uintptr_t)win, WIN, rcq, GNI_MEM_READWRITE, (uint32_t)-1, &win_mh));
    OK(GNI_MemRegister(nic, (uint64_t)(uintptr_t)loc, WIN, NULL, GNI_MEM_READWRITE, (uint32_t)-1, &loc_mh));
    peer_t mine = { my_addr, 0, (uint64_t)(uintptr_t)win, win_mh };
    peers = calloc((size_t)n, sizeof *peers);
    CHECK(peers);
    CHECK(PMI_Allgather(&mine, peers, sizeof mine) == PMI_SUCCESS);
    ep = calloc((size_t)n, sizeof *ep);
    CHECK(ep);
    for (int p = 0; p < n; p++) {
        OK(GNI_EpCreate(nic, cq, &ep[p]));
        OK(GNI_EpBind(ep[p], peers[p].addr, rid(me, p)));
    }
}

/* Every operation family to the right neighbour, events checked on both sides. */
static void families(void)
{
    gni_post_descriptor_t d, d2;
    uint64_t rwin = peers[right].win;
    gni_mem_handle_t rmh = peers[right].mdh;

    /* FMA PUT with GLOBAL|REMOTE. */
    barrier();
    loc[0] = 0x1000 + (uint64_t)me;
    desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT, loc, loc_mh, rwin + 8, rmh, 8);
    OK(GNI_PostFma(ep[right], &d));
    complete(&d, GNI_RC_SUCCESS, right);
    barrier();
    remote_events(1, GNI_CQ_EVENT_TYPE_POST, left);
    CHECK_EQ(win[1], 0x1000 + (uint64_t)left);

    /* FMA GET with GLOBAL|REMOTE. */
    desc(&d, GNI_POST_FMA_GET, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT, loc + 8, loc_mh, rwin + 8, rmh, 8);
    OK(GNI_PostFma(ep[right], &d));
    complete(&d, GNI_RC_SUCCESS, right);
    CHECK_EQ(loc[8], 0x1000 + (uint64_t)me);
    barrier();
    remote_events(1, GNI_CQ_EVENT_TYPE_POST, left);

    /* AMOs: Gemini fetch-add, Aries 64-bit add (no fetch), 32-bit fetch-add, float add. */
    struct { uint32_t cmd; uint64_t op; int off, bytes, fetch; } amo[] = {
        { GNI_FMA_ATOMIC_FADD, 5, 16, 8, 1 },
        { GNI_FMA_ATOMIC2_IADD, 7, 16, 8, 0 },
        { GNI_FMA_ATOMIC2_FIADD_S, 3, 24, 4, 1 },
        { GNI_FMA_ATOMIC2_FFPADD, 0, 32, 8, 1 },
    };
    double half = 0.5;
    memcpy(&amo[3].op, &half, 8);
    for (size_t i = 0; i < sizeof amo / sizeof amo[0]; i++) {
        desc(&d, GNI_POST_AMO, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT, loc + 16, loc_mh,
             rwin + (uint64_t)amo[i].off, rmh, (uint64_t)amo[i].bytes);
        d.amo_cmd = amo[i].cmd;
        d.first_operand = amo[i].op;
        OK(GNI_PostFma(ep[right], &d));
        complete(&d, GNI_RC_SUCCESS, right);
    }
    barrier();
    remote_events(4, GNI_CQ_EVENT_TYPE_POST, left);
    uint32_t w32;
    double f;
    memcpy(&w32, (char *)win + 24, 4);
    memcpy(&f, (char *)win + 32, 8);
    /* two rounds of families() add twice */
    CHECK_EQ(win[2], (uint64_t)(12 * (set_data + 1)));
    CHECK_EQ(w32, 3u * (uint32_t)(set_data + 1));
    CHECK(f == 0.5 * (set_data + 1));

    /* RDMA PUT with DUAL events (both on my CQ, both say to whom) and REMOTE. */
    for (int i = 0; i < 512; i++) loc[64 + i] = ((uint64_t)me << 32) | (uint64_t)i;
    desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_LOCAL_EVENT | GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT,
         loc + 64, loc_mh, rwin + 512, rmh, 4096);
    OK(GNI_PostRdma(ep[right], &d));
    complete(&d, GNI_RC_SUCCESS, right);
    complete(&d, GNI_RC_SUCCESS, right);
    barrier();
    remote_events(1, GNI_CQ_EVENT_TYPE_POST, left);
    for (int i = 0; i < 512; i++) if (win[64 + i] != (((uint64_t)left << 32) | (uint64_t)i)) SN_FAIL("RDMA PUT word %d", i);

    /* RDMA GET with GLOBAL|REMOTE. */
    desc(&d, GNI_POST_RDMA_GET, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT, loc + 1024, loc_mh, rwin + 512, rmh, 4096);
    OK(GNI_PostRdma(ep[right], &d));
    complete(&d, GNI_RC_SUCCESS, right);
    for (int i = 0; i < 512; i++) if (loc[1024 + i] != (((uint64_t)me << 32) | (uint64_t)i)) SN_FAIL("RDMA GET word %d", i);
    barrier();
    remote_events(1, GNI_CQ_EVENT_TYPE_POST, left);

    /* CQ write: the value arrives at the registration's dst CQ; my completion says to whom. */
    memset(&d2, 0, sizeof d2);
    d2.type = GNI_POST_CQWRITE;
    d2.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
    d2.dlvr_mode = GNI_DLVMODE_PERFORMANCE;
    d2.remote_mem_hndl = rmh;
    d2.cqwrite_value = 0xc0ffee000ull + (uint64_t)me;
    OK(GNI_PostCqWrite(ep[right], &d2));
    complete(&d2, GNI_RC_SUCCESS, right);
    barrier();
    {
        gni_cq_entry_t ev = 0;
        OK(GNI_CqWaitEvent(rcq, 10000, &ev));
        CHECK_EQ(GNI_CQ_GET_DATA(ev) & 0xffffffffffffull, 0xc0ffee000ull + (uint64_t)left);
        EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(rcq, &ev));
    }
    barrier();
}

/* SMSG to the right neighbour: send completion says to whom, arrival says from whom. */
static void smsg(void)
{
    gni_smsg_attr_t a;
    unsigned int mbsz = 0;
    memset(&a, 0, sizeof a);
    a.msg_type = GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT;
    a.mbox_maxcredit = CRED;
    a.msg_maxsize = MAXMSG;
    OK(GNI_SmsgBufferSizeNeeded(&a, &mbsz));
    char *mb;
    CHECK(posix_memalign((void **)&mb, 4096, (size_t)mbsz * (size_t)n) == 0);
    memset(mb, 0, (size_t)mbsz * (size_t)n);
    gni_mem_handle_t mbh;
    OK(GNI_MemRegister(nic, (uint64_t)(uintptr_t)mb, (uint64_t)mbsz * (uint64_t)n, rcq, GNI_MEM_READWRITE, (uint32_t)-1, &mbh));
    struct { uint64_t base; gni_mem_handle_t mh; } mine = { (uint64_t)(uintptr_t)mb, mbh }, *all = calloc((size_t)n, sizeof mine);
    CHECK(all);
    CHECK(PMI_Allgather(&mine, all, sizeof mine) == PMI_SUCCESS);
    for (int p = 0; p < n; p++) {
        gni_smsg_attr_t l = a, r = a;
        l.msg_buffer = mb; l.buff_size = mbsz; l.mem_hndl = mbh; l.mbox_offset = mbsz * (uint32_t)p;
        r.msg_buffer = (void *)(uintptr_t)all[p].base; r.buff_size = mbsz; r.mem_hndl = all[p].mh;
        r.mbox_offset = mbsz * (uint32_t)me;
        OK(GNI_SmsgInit(ep[p], &l, &r));
    }
    barrier();
    for (int round = 0; round < 2; round++) {
        set_data = round;
        if (round == 1)
            for (int p = 0; p < n; p++) OK(GNI_EpSetEventData(ep[p], 0x30000u + rid(me, p), 0x50000u + (uint32_t)me));
        uint64_t msg[2] = { 0xa000 + (uint64_t)me, (uint64_t)round };
        OK(GNI_SmsgSend(ep[right], msg, sizeof msg, NULL, 0, 77));
        gni_cq_entry_t ev = 0;
        OK(GNI_CqWaitEvent(cq, 10000, &ev));
        CHECK_EQ(GNI_CQ_GET_TYPE(ev), GNI_CQ_EVENT_TYPE_SMSG);
        CHECK_EQ(GNI_CQ_GET_MSG_ID(ev), 77);
        CHECK_EQ(GNI_CQ_GET_INST_ID(ev), want_local(right) & 0x3fffff);
        remote_events(1, GNI_CQ_EVENT_TYPE_SMSG, left);
        void *hp = NULL;
        OK(GNI_SmsgGetNext(ep[left], &hp));
        CHECK_EQ(((uint64_t *)hp)[0], 0xa000 + (uint64_t)left);
        CHECK_EQ(((uint64_t *)hp)[1], (uint64_t)round);
        OK(GNI_SmsgRelease(ep[left]));
        barrier();
    }
    set_data = 0;
    for (int p = 0; p < n; p++) OK(GNI_EpSetEventData(ep[p], rid(me, p), (uint32_t)me)); /* the defaults again */
    free(all);
}

/* Everyone PUTs into rank 0 at once: one REMOTE event per rank, each naming its sender. */
static void all_to_zero(void)
{
    gni_post_descriptor_t d;
    loc[0] = 0x2000 + (uint64_t)me;
    desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT, loc, loc_mh,
         peers[0].win + 4096 + 8 * (uint64_t)me, peers[0].mdh, 8);
    OK(GNI_PostFma(ep[0], &d));
    complete(&d, GNI_RC_SUCCESS, 0);
    barrier();
    if (me == 0) {
        int *seen = calloc((size_t)n, sizeof(int));
        CHECK(seen);
        for (int i = 0; i < n; i++) {
            gni_cq_entry_t ev = 0;
            OK(GNI_CqWaitEvent(rcq, 10000, &ev));
            uint64_t from = GNI_CQ_GET_INST_ID(ev);
            CHECK(from < (uint64_t)n);
            seen[from]++;
            CHECK_EQ(win[512 + from], 0x2000 + from);
        }
        for (int i = 0; i < n; i++) CHECK_EQ(seen[i], 1);
        free(seen);
    }
    barrier();
}

static long msgq_got;
static int msgq_rcv(uint32_t snd_id, uint32_t snd_pe, void *msg, uint8_t tag, void *cb_data)
{
    CHECK_EQ(snd_id, (uint32_t)left);
    CHECK_EQ(snd_pe, peers[left].addr);
    CHECK_EQ(*(uint64_t *)msg, 0xb000 + (uint64_t)left);
    CHECK_EQ(tag, 9);
    msgq_got++;
    return 0;
}

/* MSGQ: connections list instances by inst_id, so its endpoints bind to inst_ids. */
static void msgq(void)
{
    int neps = 0;
    for (int r = 0; r < n; r++) {
        int dup = 0;
        for (int s = 0; s < r; s++) dup |= peers[s].addr == peers[r].addr;
        neps += !dup;
    }
    gni_msgq_attr_t a;
    memset(&a, 0, sizeof a);
    a.max_msg_sz = 64;
    a.smsg_q_sz = 4;
    a.num_msgq_eps = (uint32_t)neps;
    a.nloc_insts = 1;
    a.modes = GNI_MSGQ_MODE_BLOCKING;
    gni_cq_handle_t scq;
    OK(GNI_CqCreate(nic, 64, 0, GNI_CQ_BLOCKING, NULL, NULL, &scq));
    gni_msgq_handle_t q;
    OK(GNI_MsgqInit(nic, msgq_rcv, NULL, scq, &a, &q));
    gni_msgq_ep_attr_t mine, *all = calloc((size_t)n, sizeof mine);
    uint32_t asz = sizeof mine;
    CHECK(all);
    OK(GNI_MsgqGetConnAttrs(q, peers[right].addr, &mine, &asz));
    CHECK(PMI_Allgather(&mine, all, sizeof mine) == PMI_SUCCESS);
    for (int r = 0; r < n; r++) OK(GNI_MsgqConnect(q, all[r].pe_addr, &all[r]));
    gni_ep_handle_t qep;
    OK(GNI_EpCreate(nic, cq, &qep));
    OK(GNI_EpBind(qep, peers[right].addr, (uint32_t)right));
    barrier();
    uint64_t m = 0xb000 + (uint64_t)me;
    OK(GNI_MsgqSend(q, qep, &m, 8, NULL, 0, 5, 9));
    gni_cq_entry_t ev = 0;
    OK(GNI_CqWaitEvent(scq, 10000, &ev));
    CHECK_EQ(GNI_CQ_GET_TYPE(ev), GNI_CQ_EVENT_TYPE_MSGQ);
    CHECK_EQ(GNI_CQ_GET_MSG_ID(ev), 5);
    for (int i = 0; i < 1000 && msgq_got == 0; i++) {
        gni_return_t rc = GNI_MsgqProgress(q, 10);
        CHECK(rc == GNI_RC_SUCCESS || rc == GNI_RC_TIMEOUT || rc == GNI_RC_NOT_DONE);
    }
    CHECK_EQ(msgq_got, 1);
    barrier();
    OK(GNI_EpDestroy(qep));
    OK(GNI_MsgqRelease(q));
    OK(GNI_CqDestroy(scq));
    free(all);
}

/* Datagram connect with late peers, then a vMDH handle resolved through the instance an
 * unbound endpoint exchanged a datagram with (its remote_id is then a user value). */
static void datagrams(void)
{
    gni_ep_handle_t dep, wep;
    struct { uint32_t from, to; } out = { (uint32_t)me, (uint32_t)right }, in = { 0, 0 };
    struct { uint32_t from, to; } wout = { (uint32_t)me, 0 }, win_ = { 0, 0 };
    gni_post_state_t st;
    uint32_t ra = 0, rid_ = 0;
    OK(GNI_EpCreate(nic, cq, &dep));
    OK(GNI_EpCreate(nic, cq, &wep));
    OK(GNI_EpBind(dep, peers[right].addr, (uint32_t)right)); /* datagrams match on inst_id */
    /* With 3 or more ranks my bound post goes to right's unbound wildcard (right's own
     * bound post aims further on); with 2 the bound posts pair with each other. */
    int wild = n >= 3;
    if (wild) OK(GNI_EpPostDataWId(wep, &wout, sizeof wout, &win_, sizeof win_, 4000 + (uint64_t)me));
    if (me % 2) usleep(150000); /* a peer that comes up late */
    OK(GNI_EpPostData(dep, &out, sizeof out, &in, sizeof in));
    /* Connect retried: short waits until the peer has posted. */
    int tries = 0;
    gni_return_t rc;
    while ((rc = GNI_EpPostDataWait(dep, 20, &st, &ra, &rid_)) == GNI_RC_TIMEOUT) {
        CHECK_EQ(st, GNI_POST_PENDING);
        if (++tries > 1000) SN_FAIL("datagram never matched");
    }
    CHECK_EQ(rc, GNI_RC_SUCCESS);
    CHECK_EQ(st, GNI_POST_COMPLETED);
    CHECK_EQ(ra, peers[right].addr);
    CHECK_EQ(rid_, (uint32_t)right);
    CHECK_EQ(in.from, (uint32_t)right);
    if (wild) {
        /* my wildcard was taken by left's bound post */
        OK(GNI_EpPostDataWaitById(wep, 4000 + (uint64_t)me, 10000, &st, &ra, &rid_));
        CHECK_EQ(st, GNI_POST_COMPLETED);
        CHECK_EQ(rid_, (uint32_t)left);
        CHECK_EQ(win_.from, (uint32_t)left);
    }
    /* The endpoint that exchanged a datagram and its partner: wep with left, or dep with right. */
    gni_ep_handle_t vep = wild ? wep : dep;
    int vpeer = wild ? left : right;

    /* vMDH: the same handle on every rank names no process; vep is rebound with a user
     * remote_id, so the target is the instance it exchanged the datagram with. */
    uint64_t *V;
    CHECK(posix_memalign((void **)&V, 4096, 4096) == 0);
    memset(V, 0, 4096);
    gni_mem_handle_t vh;
    OK(GNI_SetMddResources(nic, 2));
    OK(GNI_MemRegister(nic, (uint64_t)(uintptr_t)V, 4096, NULL, GNI_MEM_USE_VMDH, 1, &vh));
    uint64_t vb = (uint64_t)(uintptr_t)V, *vbs = calloc((size_t)n, 8);
    CHECK(vbs);
    CHECK(PMI_Allgather(&vb, vbs, 8) == PMI_SUCCESS);
    OK(GNI_EpBind(vep, peers[vpeer].addr, 777000 + (uint32_t)me));
    barrier();
    gni_post_descriptor_t d;
    loc[0] = 0x3000 + (uint64_t)me;
    desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, loc, loc_mh, vbs[vpeer] + 8, vh, 8);
    OK(GNI_PostFma(vep, &d));
    gni_cq_entry_t ev = 0;
    OK(GNI_CqWaitEvent(cq, 10000, &ev));
    CHECK_EQ(GNI_CQ_GET_INST_ID(ev), 777000 + (uint32_t)me);
    gni_post_descriptor_t *got;
    OK(GNI_GetCompleted(cq, ev, &got));
    CHECK(got == &d);
    barrier();
    /* the rank whose partner I am: right in both layouts */
    CHECK_EQ(V[1], 0x3000 + (uint64_t)right);
    barrier();
    OK(GNI_MemDeregister(nic, &vh));
    OK(GNI_EpDestroy(dep));
    OK(GNI_EpDestroy(wep));
    free(vbs);
}

/* Bad handles: transaction errors, and the target's memory is untouched. */
static void bad_handles(void)
{
    gni_post_descriptor_t d;
    uint64_t rwin = peers[right].win;
    for (int i = 0; i < 64; i++) win[3072 + i] = CANARY;
    /* A region registered, shared, then deregistered: its handle goes stale. */
    uint64_t *S;
    CHECK(posix_memalign((void **)&S, 4096, 4096) == 0);
    for (int i = 0; i < 512; i++) S[i] = CANARY;
    gni_mem_handle_t sh, *shs = calloc((size_t)n, sizeof sh);
    uint64_t sb = (uint64_t)(uintptr_t)S, *sbs = calloc((size_t)n, 8);
    CHECK(shs && sbs);
    OK(GNI_MemRegister(nic, sb, 4096, NULL, GNI_MEM_READWRITE, (uint32_t)-1, &sh));
    CHECK(PMI_Allgather(&sh, shs, sizeof sh) == PMI_SUCCESS);
    CHECK(PMI_Allgather(&sb, sbs, 8) == PMI_SUCCESS);
    OK(GNI_MemDeregister(nic, &sh));
    barrier();

    gni_mem_handle_t bad[5];
    bad[0] = peers[right].mdh; bad[0].qword1 ^= 1ull << 50;           /* another owner slot */
    bad[1] = peers[right].mdh; bad[1].qword2 ^= 1ull << 40;           /* wrong registration generation */
    bad[2] = peers[right].mdh; bad[2].qword2 ^= 1ull << 14;           /* wrong owner generation */
    memset(&bad[3], 0, sizeof bad[3]);                                 /* never initialised */
    bad[4] = shs[right];                                               /* deregistered */
    loc[0] = 0xbad;
    for (int i = 0; i < 5; i++) {
        uint64_t target = i == 4 ? sbs[right] : rwin + 3072 * 8;
        desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT, loc, loc_mh, target, bad[i], 8);
        OK(GNI_PostFma(ep[right], &d));
        complete(&d, GNI_RC_TRANSACTION_ERROR, -1);
        desc(&d, GNI_POST_AMO, GNI_CQMODE_GLOBAL_EVENT, loc + 8, loc_mh, target, bad[i], 8);
        d.amo_cmd = GNI_FMA_ATOMIC2_FIADD;
        d.first_operand = 1;
        OK(GNI_PostFma(ep[right], &d));
        complete(&d, GNI_RC_TRANSACTION_ERROR, -1);
        desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, loc, loc_mh, target, bad[i], 64);
        OK(GNI_PostRdma(ep[right], &d));
        complete(&d, GNI_RC_TRANSACTION_ERROR, -1);
    }
    /* A handle used on an endpoint bound to another node's address. */
    int other = -1;
    for (int p = 0; p < n; p++)
        if (peers[p].addr != peers[right].addr) other = p;
    if (other >= 0) {
        desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, loc, loc_mh, rwin + 3072 * 8, peers[right].mdh, 8);
        OK(GNI_PostFma(ep[other], &d));
        complete(&d, GNI_RC_TRANSACTION_ERROR, -1);
    }
    barrier();
    gni_cq_entry_t ev;
    EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(rcq, &ev));
    for (int i = 0; i < 64; i++) if (win[3072 + i] != CANARY) SN_FAIL("window word %d touched by a bad handle", i);
    for (int i = 0; i < 512; i++) if (S[i] != CANARY) SN_FAIL("deregistered word %d touched", i);
    if (me == 0) printf("data_routing: bad handles refused%s\n", other >= 0 ? " (other node too)" : "");
    barrier();
    free(shs);
    free(sbs);
}

/* ---- two jobs: `serve DIR` and `attack DIR` ---- */
static int job_pair(const char *mode, const char *dir)
{
    char hpath[512], dpath[512];
    snprintf(hpath, sizeof hpath, "%s/handle", dir);
    snprintf(dpath, sizeof dpath, "%s/done", dir);
    setup();
    if (strcmp(mode, "serve") == 0) {
        for (int i = 0; i < 64; i++) win[i] = CANARY;
        peer_t mine = { my_addr, 0, (uint64_t)(uintptr_t)win, win_mh };
        char tmp[600];
        snprintf(tmp, sizeof tmp, "%s.tmp", hpath);
        FILE *f = fopen(tmp, "wb");
        CHECK(f && fwrite(&mine, sizeof mine, 1, f) == 1 && fclose(f) == 0);
        CHECK(rename(tmp, hpath) == 0);
        for (int i = 0; i < 2000 && access(dpath, F_OK) != 0; i++) usleep(10000);
        CHECK(access(dpath, F_OK) == 0);
        for (int i = 0; i < 64; i++) if (win[i] != CANARY) SN_FAIL("another job wrote word %d", i);
        gni_cq_entry_t ev;
        EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(rcq, &ev));
        printf("data_routing: serve untouched\n");
    } else {
        peer_t srv;
        for (int i = 0; i < 2000 && access(hpath, F_OK) != 0; i++) usleep(10000);
        FILE *f = fopen(hpath, "rb");
        CHECK(f && fread(&srv, sizeof srv, 1, f) == 1);
        fclose(f);
        gni_ep_handle_t aep;
        OK(GNI_EpCreate(nic, cq, &aep));
        OK(GNI_EpBind(aep, srv.addr, 4242));
        gni_post_descriptor_t d;
        loc[0] = 0xbad;
        desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT, loc, loc_mh, srv.win, srv.mdh, 8);
        OK(GNI_PostFma(aep, &d));
        complete(&d, GNI_RC_TRANSACTION_ERROR, -1);
        desc(&d, GNI_POST_FMA_GET, GNI_CQMODE_GLOBAL_EVENT, loc + 8, loc_mh, srv.win, srv.mdh, 8);
        OK(GNI_PostFma(aep, &d));
        complete(&d, GNI_RC_TRANSACTION_ERROR, -1);
        CHECK(loc[8] == 0);
        desc(&d, GNI_POST_AMO, GNI_CQMODE_GLOBAL_EVENT, loc + 16, loc_mh, srv.win, srv.mdh, 8);
        d.amo_cmd = GNI_FMA_ATOMIC2_FIADD;
        d.first_operand = 1;
        OK(GNI_PostFma(aep, &d));
        complete(&d, GNI_RC_TRANSACTION_ERROR, -1);
        FILE *g = fopen(dpath, "wb");
        CHECK(g && fclose(g) == 0);
        printf("data_routing: attack refused\n");
    }
    CHECK(PMI_Finalize() == PMI_SUCCESS);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3) return job_pair(argv[1], argv[2]);
    setup();
    for (set_data = 0; set_data < 2; set_data++) {
        if (set_data)
            for (int p = 0; p < n; p++) OK(GNI_EpSetEventData(ep[p], 0x30000u + rid(me, p), 0x50000u + (uint32_t)me));
        families();
    }
    set_data = 0;
    for (int p = 0; p < n; p++) OK(GNI_EpSetEventData(ep[p], rid(me, p), (uint32_t)me));
    all_to_zero();
    smsg();
    msgq();
    datagrams();
    bad_handles();
    printf("data_routing: rank %d ok\n", me);
    /* Like many real programs: no GNI teardown, no PMI_Finalize. */
    return 0;
}
