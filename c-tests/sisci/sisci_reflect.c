/* A replicated key-value store on reflective memory, written the way such programs are:
 * node ids on the command line, peers driven by data interrupts, private bookkeeping in
 * each replica's own copy of the group.
 *
 * Every replica creates broadcast segment 990 on its node (its own copy of the group),
 * maps it locally, connects to the group (DIS_BROADCAST_NODEID_GROUP_ALL) and maps it
 * with SCI_FLAG_BROADCAST.  The client writes each request into a slot of the group
 * through its broadcast map (by PIO then SCIStoreBarrier, or by SCIMemCpy) and sends
 * every replica a data interrupt.  A replica reads the request from its *local* map,
 * marks it handled in its own copy (the same offsets in every copy: a mark another
 * replica could see would make it take the request for handled and not answer), keeps
 * the value in a private table in its copy, and answers through the broadcast map (its
 * acknowledgement word) and a data interrupt.  The client needs every replica's answer
 * (the quorum) for each request, and checks through its broadcast map that no private
 * mark ever reached the group.  At the end every replica's private table must hold the
 * values of every request.  A client whose node has no replica first makes an ordinary
 * segment with the group's id (connecting to the group must still find the group).
 * Nothing is removed that programs do not remove: sequences stay; the replicas remove
 * their segments while the client's broadcast map (its connection made through one of
 * them) is still there, and their data interrupts while the client is connected.
 *
 * Under a launcher the processes meet in a PMI_Barrier at the start (so that those of
 * other machines know each other) and at the end; nothing else goes through the
 * launcher.
 *
 * Usage: sisci_reflect ROUNDS client REPLICA_NODE...   (the replicas, in index order)
 *        sisci_reflect ROUNDS replica INDEX CLIENT_NODE */
#include "stest.h"

#define GROUP 990
#define SIZE 65536
#define NSLOT 128
#define REQ(slot) (64 * (size_t)(slot))                         /* requests: [0, 8K) */
#define ACK(r, slot) (8192 + 4096 * (size_t)(r) + 8 * (size_t)(slot))   /* answers: [8K, 40K) */
#define MARK(slot) (49152 + 8 * (size_t)(slot))                 /* private: [48K, 49K) */
#define KV(key) (53248 + 8 * (size_t)(key))                     /* private: [52K, 53K) */
#define NKEY 64
#define INT_REPLICA 600
#define INT_CLIENT 700
#define MAXREP 8

enum { M_REQ = 1, M_ACK, M_STOP, M_DONE, M_BYE };
struct msg { uint32_t kind, from, slot, pad; uint64_t seq, sum; };
struct req { uint64_t seq, key, value, pad[5]; };

static uint64_t key_of(uint64_t seq) { return seq * 7 % NKEY; }
static uint64_t value_of(uint64_t seq) { return seq * 1000003 + 17; }
static uint64_t mark_of(int r, uint64_t seq) { return (uint64_t)(r + 1) << 48 | seq; }

static void send(sci_remote_data_interrupt_t to, uint32_t kind, uint32_t from, uint32_t slot, uint64_t seq, uint64_t sum)
{
    struct msg m = { kind, from, slot, 0, seq, sum };
    OK(SCITriggerDataInterrupt(to, &m, sizeof m, 0, &err));
}

static struct msg receive(sci_local_data_interrupt_t in, double secs, const char *what)
{
    struct msg m;
    unsigned len = sizeof m;
    SCIWaitForDataInterrupt(in, &m, &len, (unsigned)(secs * 1000), 0, &err);
    if (err != SCI_ERR_OK) SN_FAIL("waiting for %s: %s", what, SCIGetErrorString(err));
    CHECK_EQ(len, sizeof m);
    return m;
}

/* Connects to the group (retrying until a member is there) and maps it for broadcast. */
static volatile uint64_t *group_map(sci_desc_t sd, sci_remote_segment_t *all, sci_map_t *bm, sci_sequence_t *seq)
{
    double end = st_now() + 60;
    for (;;) {
        SCIConnectSegment(sd, all, DIS_BROADCAST_NODEID_GROUP_ALL, GROUP, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, SCI_FLAG_BROADCAST, &err);
        if (err == SCI_ERR_OK) break;
        if (err != SCI_ERR_NO_SUCH_SEGMENT || st_now() > end) SN_FAIL("connecting to group %d: %s", GROUP, SCIGetErrorString(err));
        usleep(2000);
    }
    CHECK_EQ(SCIGetRemoteSegmentSize(*all), (size_t)SIZE);
    volatile uint64_t *w = SCIMapRemoteSegment(*all, bm, 0, SIZE, NULL, SCI_FLAG_BROADCAST, &err);
    CHECK(err == SCI_ERR_OK && w != NULL);
    OK(SCICreateMapSequence(*bm, seq, 0, &err));
    return w;
}

static int client(int rounds, int n, unsigned *rep)
{
    unsigned me;
    OK(SCIGetLocalNodeId(0, &me, 0, &err));
    sci_desc_t sd;
    OK(SCIOpen(&sd, 0, &err));
    /* A node without a replica may use the group's id for a segment of its own. */
    int member_node = 0;
    for (int r = 0; r < n; r++) member_node |= rep[r] == me;
    sci_local_segment_t own;
    if (!member_node) {
        OK(SCICreateSegment(sd, &own, GROUP, 4096, NULL, NULL, 0, &err));
        OK(SCIPrepareSegment(own, 0, 0, &err));
        OK(SCISetSegmentAvailable(own, 0, 0, &err));
    }
    unsigned no = INT_CLIENT;
    sci_local_data_interrupt_t in;
    OK(SCICreateDataInterrupt(sd, &in, 0, &no, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));
    sci_remote_data_interrupt_t to[MAXREP];
    for (int r = 0; r < n; r++) to[r] = st_connect_dint(sd, rep[r], INT_REPLICA + r, 0, 60);
    sci_remote_segment_t all;
    sci_map_t bm;
    sci_sequence_t seq;
    volatile uint64_t *w = group_map(sd, &all, &bm, &seq);

    for (uint64_t s = 1; s <= (uint64_t)rounds; s++) {
        uint32_t slot = (uint32_t)(s % NSLOT);
        struct req q = { s, key_of(s), value_of(s), { 0 } };
        if (s % 2) {
            volatile uint64_t *p = w + REQ(slot) / 8;
            p[1] = q.key;
            p[2] = q.value;
            SCIStoreBarrier(seq, 0);
            p[0] = q.seq;
            SCIStoreBarrier(seq, 0);
        } else {
            OK(SCIMemCpy(seq, &q, bm, REQ(slot), sizeof q, 0, &err));
        }
        for (int r = 0; r < n; r++) send(to[r], M_REQ, me, slot, s, 0);
        /* The quorum: every replica's answer, each seen in the group once it arrives. */
        int acks = 0;
        while (acks < n) {
            struct msg m = receive(in, 30, "the quorum");
            if (m.kind != M_ACK || m.seq != s || m.slot != slot || m.from >= (unsigned)n)
                SN_FAIL("request %llu: unexpected message %u from %u (slot %u, seq %llu)", (unsigned long long)s, m.kind, m.from, m.slot, (unsigned long long)m.seq);
            if (w[ACK(m.from, slot) / 8] != s)
                SN_FAIL("request %llu: replica %u answered, its acknowledgement reads %llu", (unsigned long long)s, m.from, (unsigned long long)w[ACK(m.from, slot) / 8]);
            acks++;
        }
        if (w[MARK(slot) / 8] != 0)
            SN_FAIL("request %llu: a private mark reached the group: %#llx", (unsigned long long)s, (unsigned long long)w[MARK(slot) / 8]);
    }
    /* Every replica's private table holds the last value of every key. */
    uint64_t last[NKEY] = { 0 }, sum = 0;
    for (uint64_t s = 1; s <= (uint64_t)rounds; s++) last[key_of(s)] = value_of(s);
    for (int k = 0; k < NKEY; k++) sum += last[k];
    for (int r = 0; r < n; r++) send(to[r], M_STOP, me, 0, 0, 0);
    for (int r = 0; r < n; r++) {
        struct msg m = receive(in, 30, "the replicas' tables");
        CHECK_EQ(m.kind, M_DONE);
        if (m.sum != sum) SN_FAIL("replica %u's table sums to %llu, want %llu", m.from, (unsigned long long)m.sum, (unsigned long long)sum);
    }
    for (int k = 0; k < NKEY; k++) CHECK(w[KV(k) / 8] == 0);   /* never broadcast */

    /* Teardown as programs do it: the sequence stays; the replicas remove their segments
     * and interrupts while our broadcast map (made through one of them) is still there:
     * it reaches the group, not that member, and still works. */
    for (int r = 0; r < n; r++) send(to[r], M_BYE, me, 0, 0, 0);
    for (int r = 0; r < n; r++) CHECK_EQ(receive(in, 30, "the replicas leaving").kind, M_BYE);
    w[ACK(0, 0) / 8] = 0xb7e;
    SCIStoreBarrier(seq, 0);
    CHECK_EQ(SCICheckSequence(seq, 0, &err), SCI_SEQ_OK);
    OK(SCIUnmapSegment(bm, 0, &err));
    OK(SCIDisconnectSegment(all, 0, &err));
    for (int r = 0; r < n; r++) OK(SCIDisconnectDataInterrupt(to[r], 0, &err));
    OK(SCIRemoveDataInterrupt(in, 0, &err));
    if (!member_node) OK(SCIRemoveSegment(own, 0, &err));
    OK(SCIClose(sd, 0, &err));
    printf("sisci_reflect: client (node %u) ok (%d requests, quorum of %d%s)\n", me, rounds, n, member_node ? "" : ", own segment with the group's id");
    return 0;
}

static int replica(int idx, unsigned cnode)
{
    unsigned me;
    OK(SCIGetLocalNodeId(0, &me, 0, &err));
    sci_desc_t sd;
    OK(SCIOpen(&sd, 0, &err));
    sci_local_segment_t ls;
    sci_map_t lm;
    OK(SCICreateSegment(sd, &ls, GROUP, SIZE, NULL, NULL, SCI_FLAG_BROADCAST, &err));
    volatile uint64_t *loc = SCIMapLocalSegment(ls, &lm, 0, SIZE, NULL, 0, &err);
    CHECK(err == SCI_ERR_OK && loc != NULL);
    OK(SCIPrepareSegment(ls, 0, 0, &err));
    OK(SCISetSegmentAvailable(ls, 0, 0, &err));
    sci_remote_segment_t all;
    sci_map_t bm;
    sci_sequence_t seq;
    volatile uint64_t *w = group_map(sd, &all, &bm, &seq);
    unsigned no = INT_REPLICA + (unsigned)idx;
    sci_local_data_interrupt_t in;
    OK(SCICreateDataInterrupt(sd, &in, 0, &no, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));
    sci_remote_data_interrupt_t to = st_connect_dint(sd, cnode, INT_CLIENT, 0, 60);

    int handled = 0;
    for (;;) {
        struct msg m = receive(in, 120, "a request");
        if (m.kind == M_STOP) break;
        CHECK_EQ(m.kind, M_REQ);
        /* The request is in our copy (it was written to the group before the interrupt). */
        volatile uint64_t *q = loc + REQ(m.slot) / 8;
        if (q[0] != m.seq || q[1] != key_of(m.seq) || q[2] != value_of(m.seq))
            SN_FAIL("request %llu: our copy holds seq %llu key %llu value %llu", (unsigned long long)m.seq, (unsigned long long)q[0], (unsigned long long)q[1], (unsigned long long)q[2]);
        uint64_t mark = loc[MARK(m.slot) / 8];
        if (mark != 0 && mark >> 48 != (uint64_t)idx + 1)
            SN_FAIL("request %llu: our copy holds replica %llu's private mark", (unsigned long long)m.seq, (unsigned long long)(mark >> 48) - 1);
        if (mark == mark_of(idx, m.seq))
            continue;   /* handled already: the client gets no second answer */
        loc[MARK(m.slot) / 8] = mark_of(idx, m.seq);
        loc[KV(q[1]) / 8] = q[2];
        handled++;
        /* The answer goes to the group, then the interrupt. */
        w[ACK(idx, m.slot) / 8] = m.seq;
        SCIStoreBarrier(seq, 0);
        send(to, M_ACK, (uint32_t)idx, m.slot, m.seq, 0);
    }
    uint64_t sum = 0;
    for (int k = 0; k < NKEY; k++) sum += loc[KV(k) / 8];
    for (int s = 0; s < NSLOT; s++) {
        uint64_t mark = loc[MARK(s) / 8];
        if (mark != 0 && mark >> 48 != (uint64_t)idx + 1) SN_FAIL("slot %d: another replica's mark %#llx in our copy", s, (unsigned long long)mark);
    }
    send(to, M_DONE, (uint32_t)idx, 0, 0, sum);
    /* Our own broadcast map goes; the client's may have been made through our segment,
     * and stays while we remove it. */
    OK(SCIUnmapSegment(bm, 0, &err));
    OK(SCIDisconnectSegment(all, 0, &err));
    CHECK_EQ(receive(in, 60, "the client's goodbye").kind, M_BYE);
    OK(SCIUnmapSegment(lm, 0, &err));
    OK(SCIRemoveSegment(ls, 0, &err));
    send(to, M_BYE, (uint32_t)idx, 0, 0, 0);
    OK(SCIRemoveDataInterrupt(in, 0, &err));     /* the client is still connected to it */
    OK(SCIDisconnectDataInterrupt(to, 0, &err));
    OK(SCIClose(sd, 0, &err));
    printf("sisci_reflect: replica %d (node %u) ok (%d requests)\n", idx, me, handled);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: sisci_reflect ROUNDS client REPLICA_NODE... | ROUNDS replica INDEX CLIENT_NODE\n");
        return 2;
    }
    int rounds = atoi(argv[1]);
    OK(SCIInitialize(0, &err));
    int launched = st_meet();
    int rc;
    if (strcmp(argv[2], "client") == 0) {
        unsigned rep[MAXREP];
        int n = argc - 3;
        CHECK(n >= 1 && n <= MAXREP);
        for (int r = 0; r < n; r++) rep[r] = (unsigned)atoi(argv[3 + r]);
        rc = client(rounds, n, rep);
    } else {
        CHECK(argc == 5);
        rc = replica(atoi(argv[3]), (unsigned)atoi(argv[4]));
    }
    SCITerminate();
    st_part(launched);
    return rc;
}
