/* MSGQ shared by the instances of a node, used the way real programs use it: NIC
 * addresses allgathered, every rank joins its node's MSGQ (GNI_MsgqInit), only the lowest
 * rank of each node (its "leader") takes the node's connection attributes and connects to
 * every node; then every rank sends to every other rank through those connections, and
 * each rank's GNI_MsgqProgress delivers what was addressed to it (FIFO per sender,
 * contents, tags, sender identity, send events checked).  Then the decisions of
 * gni_pub.h's MSGQ paragraph:
 *   - a send to a node that is not connected: INVALID_STATE;
 *   - an instance joining with other attributes is accepted; the node's apply;
 *   - the connecting instance releases its MSGQ: its neighbours keep the connections,
 *     sends to its released queue fail in the send event, and when it joins again it
 *     sends at once; a single-rank node's connections end with its only instance;
 *   - holds: the last holder's ConnRelease ends a connection, a non-holder's at once;
 *   - the connecting instance is another process that exits: the connections stay;
 *   - bad input (Connect, Send, ConnRelease) and the limit of 48 instances per node.
 * Usage: msgq_node (under a launcher); "msgq_node --helper INST NNODES" is the exiting
 * connector, started by the test itself. */
#include <unistd.h>
#include <sys/wait.h>
#include "data_util.h"

#define MAXSZ 128
#define QSZ 8
#define NMSG1 200
#define NMSG2 50
#define NMSG3 50
#define NMSG5 30

typedef struct { uint32_t src, dst, seq, phase; } hdr_t;

static gnit_t t;
static int me, n, nnodes, nlocal, leader, second;   /* second: the next-lowest rank of my node, or -1 */
static int *node_of;            /* per rank: index of its node */
static uint32_t *node_addr;     /* per node: NIC address */
static int *node_leader, *node_size;
static gni_msgq_handle_t q;
static gni_cq_handle_t scq;
static gni_msgq_attr_t attr;
static gni_msgq_ep_attr_t *node_attrs;   /* per node: its leader's connection attributes */

/* receive side, per phase */
static uint32_t phase;
static long *next_seq, received;

/* send events expected, in send order */
#define NEXP (1 << 16)
static uint32_t exp_id[NEXP];
static gni_return_t exp_rc[NEXP];
static long exp_head, exp_tail;

static int is_leader(int r) { return node_leader[node_of[r]] == r; }

static int payload_len(uint32_t seq) { return (int)(seq % (MAXSZ - sizeof(hdr_t) + 1)); }
static uint8_t payload_byte(uint32_t src, uint32_t seq, int i) { return (uint8_t)(seq * 31 + (uint32_t)i + src * 7); }

static int rcv(uint32_t snd_id, uint32_t snd_pe, void *msg, uint8_t tag, void *cb_data)
{
    CHECK(cb_data == (void *)&t);
    if (snd_id >= (uint32_t)n) SN_FAIL("message from inst_id %u", snd_id);
    CHECK_EQ(snd_pe, t.addrs[snd_id]);
    hdr_t h;
    memcpy(&h, msg, sizeof(h));
    CHECK_EQ(h.src, snd_id);
    CHECK_EQ(h.dst, me);        /* delivered to the instance it was addressed to */
    CHECK_EQ(h.phase, phase);
    if ((long)h.seq != next_seq[snd_id])
        SN_FAIL("phase %u from %u: seq %u, expected %ld (FIFO order broken)", phase, snd_id, h.seq, next_seq[snd_id]);
    next_seq[snd_id]++;
    CHECK_EQ(tag, (uint8_t)(h.seq ^ h.src ^ phase));
    const uint8_t *d = (const uint8_t *)msg + sizeof(h);
    for (int i = 0; i < payload_len(h.seq); i++)
        if (d[i] != payload_byte(h.src, h.seq, i)) SN_FAIL("from %u seq %u: byte %d is %u", h.src, h.seq, i, d[i]);
    received++;
    return 0;
}

static void drain_scq(void)
{
    gni_cq_entry_t ev;
    gni_return_t rc;
    while ((rc = GNI_CqGetEvent(scq, &ev)) != GNI_RC_NOT_DONE) {
        if (exp_head == exp_tail) SN_FAIL("unexpected send event (rc %d)", (int)rc);
        long i = exp_head++ % NEXP;
        CHECK_EQ(GNI_CQ_GET_TYPE(ev), GNI_CQ_EVENT_TYPE_MSGQ);
        CHECK_EQ(GNI_CQ_GET_MSG_ID(ev), exp_id[i]);
        if (rc != exp_rc[i]) SN_FAIL("send event of msg_id %u: %s, expected %s", exp_id[i], gnit_rc(rc), gnit_rc(exp_rc[i]));
    }
}

static void progress(void)
{
    gni_return_t p = GNI_MsgqProgress(q, 0);
    if (p != GNI_RC_SUCCESS && p != GNI_RC_NOT_DONE) SN_FAIL("GNI_MsgqProgress: %s", gnit_rc(p));
    drain_scq();
}

/* Sends message `seq` of this phase to rank dst; want_ev: the status its send event must
 * carry (SUCCESS, or TRANSACTION_ERROR for a released queue). */
static void send_one(int dst, uint32_t seq, gni_return_t want_ev)
{
    hdr_t h = { (uint32_t)me, (uint32_t)dst, seq, phase };
    uint8_t data[MAXSZ];
    int len = payload_len(seq);
    for (int i = 0; i < len; i++) data[i] = payload_byte((uint32_t)me, seq, i);
    uint32_t id = phase * 100000u + seq * 64u + (uint32_t)dst % 64u;
    gni_return_t rc;
    while ((rc = GNI_MsgqSend(q, t.eps[dst], &h, sizeof(h), data, (uint32_t)len, id, (uint8_t)(seq ^ (uint32_t)me ^ phase))) == GNI_RC_NOT_DONE)
        progress();
    if (rc != GNI_RC_SUCCESS) SN_FAIL("phase %u: GNI_MsgqSend to rank %d: %s", phase, dst, gnit_rc(rc));
    CHECK(exp_tail - exp_head < NEXP);
    exp_id[exp_tail % NEXP] = id;
    exp_rc[exp_tail % NEXP] = want_ev;
    exp_tail++;
}

static void start_phase(uint32_t p)
{
    phase = p;
    memset(next_seq, 0, sizeof(long) * (size_t)n);
    received = 0;
}

/* Waits for the messages of this phase: want[r] from rank r. */
static void finish_phase(const long *want)
{
    long total = 0;
    for (int r = 0; r < n; r++) total += want[r];
    while (received < total) {
        gni_return_t p = GNI_MsgqProgress(q, 10000);
        if (p != GNI_RC_SUCCESS) SN_FAIL("phase %u: waiting for messages: %s after %ld of %ld", phase, gnit_rc(p), received, total);
        drain_scq();
    }
    for (int r = 0; r < n; r++)
        if (next_seq[r] != want[r]) SN_FAIL("phase %u: %ld messages from rank %d, expected %ld", phase, next_seq[r], r, want[r]);
    drain_scq();
    CHECK_EQ(exp_tail - exp_head, 0);
    dt_barrier();
    /* nothing else came */
    GNI_EXPECT(GNI_RC_NOT_DONE, GNI_MsgqProgress(q, 0));
    GNI_OK(GNI_MsgqIdle(q));
}

/* Every rank sends `count` messages to every other rank; returns after receiving all. */
static void all_to_all(uint32_t p, int count)
{
    long *want = calloc((size_t)n, sizeof(long));
    CHECK(want);
    start_phase(p);
    for (int s = 0; s < count; s++) {
        for (int k = 1; k < n; k++) send_one((me + k) % n, (uint32_t)s, GNI_RC_SUCCESS);
        progress();
    }
    for (int r = 0; r < n; r++) want[r] = r == me ? 0 : count;
    finish_phase(want);
    free(want);
}

static void join_msgq(const gni_msgq_attr_t *a)
{
    gni_msgq_attr_t copy = *a;
    GNI_OK(GNI_MsgqInit(t.nic, rcv, &t, scq, &copy, &q));
}

/* Leaders take their node's connection attributes; everybody learns them. */
static void exchange_node_attrs(void)
{
    gni_msgq_ep_attr_t mine;
    memset(&mine, 0, sizeof(mine));
    if (me == leader) {
        uint32_t sz = 0;
        GNI_OK(GNI_MsgqGetConnAttrs(q, node_addr[(node_of[me] + 1) % nnodes], &mine, &sz));
        CHECK_EQ(mine.pe_addr, t.nic_addr);
        CHECK_EQ(mine.num_insts, nlocal);
        CHECK_EQ(sz, 16 + 32 * nlocal);
        CHECK_EQ(mine.insts[0].id, me);
        for (uint32_t i = 0; i < mine.num_insts; i++) CHECK_EQ(node_of[mine.insts[i].id], node_of[me]);
        CHECK_EQ(mine.max_msg_sz, MAXSZ);
        CHECK_EQ(mine.smsg_q_sz, QSZ);
    }
    gni_msgq_ep_attr_t *all = calloc((size_t)n, sizeof(*all));
    CHECK(all);
    CHECK(PMI_Allgather(&mine, all, sizeof(mine)) == PMI_SUCCESS);
    for (int k = 0; k < nnodes; k++) node_attrs[k] = all[node_leader[k]];
    free(all);
}

/* The leader connects every node (its own too, for messages between local ranks). */
static void leader_connects(void)
{
    if (me == leader)
        for (int k = 0; k < nnodes; k++) GNI_OK(GNI_MsgqConnect(q, node_addr[k], &node_attrs[k]));
    dt_barrier();
}

/* A message to myself through my node's connection: SUCCESS (and received) or not. */
static void self_send(int connected)
{
    uint32_t seq = (uint32_t)next_seq[me];
    if (!connected) {
        hdr_t h = { (uint32_t)me, (uint32_t)me, seq, phase };
        GNI_EXPECT(GNI_RC_INVALID_STATE, GNI_MsgqSend(q, t.eps[me], &h, sizeof(h), NULL, 0, 1, 0));
        return;
    }
    send_one(me, seq, GNI_RC_SUCCESS);
    while (next_seq[me] == (long)seq) {
        GNI_OK(GNI_MsgqProgress(q, 10000));
        drain_scq();
    }
}

/* The connector that exits: a process of its own (no PMI), joins the node's MSGQ as
 * another instance, connects the nodes whose attributes it reads from stdin, and exits
 * without releasing anything. */
static int helper(int argc, char **argv)
{
    if (argc < 4) return 2;
    uint32_t inst = (uint32_t)strtoul(argv[2], NULL, 10);
    int k = atoi(argv[3]);
    gni_msgq_ep_attr_t *na = calloc((size_t)k, sizeof(*na));
    CHECK(na);
    for (size_t got = 0, want = (size_t)k * sizeof(*na); got < want;) {
        ssize_t r = read(0, (char *)na + got, want - got);
        if (r <= 0) SN_FAIL("helper: stdin ended");
        got += (size_t)r;
    }
    gni_cdm_handle_t cdm;
    gni_nic_handle_t nic;
    uint32_t addr;
    GNI_OK(GNI_CdmCreate(inst, (uint8_t)gnit_env("PMI_GNI_PTAG"), (uint32_t)gnit_env("PMI_GNI_COOKIE"), GNI_CDM_MODE_FORK_NOCOPY, &cdm));
    GNI_OK(GNI_CdmAttach(cdm, (uint32_t)gnit_env("PMI_GNI_DEV_ID"), &addr, &nic));
    gni_msgq_attr_t a;
    memset(&a, 0, sizeof(a));
    a.max_msg_sz = MAXSZ;
    a.smsg_q_sz = QSZ;
    a.num_msgq_eps = (uint32_t)k;
    a.nloc_insts = GNI_MSGQ_NODE_INSTS_MAX;
    gni_msgq_handle_t hq;
    GNI_OK(GNI_MsgqInit(nic, rcv, NULL, NULL, &a, &hq));
    for (int i = 0; i < k; i++) GNI_OK(GNI_MsgqConnect(hq, na[i].pe_addr, &na[i]));
    printf("msgq_node: helper %u at address %u connected %d nodes\n", inst, addr, k);
    fflush(stdout);
    _exit(0);
}

static void run_helper(void)
{
    extern char **environ;
    int fds[2];
    CHECK(pipe(fds) == 0);
    /* The helper is not a rank: no launcher connection (PMI_* but PMI_GNI_*). */
    int ne = 0;
    while (environ[ne]) ne++;
    char **env = calloc((size_t)ne + 1, sizeof(char *));
    CHECK(env);
    int k = 0;
    for (int i = 0; i < ne; i++)
        if (strncmp(environ[i], "PMI_", 4) != 0 || strncmp(environ[i], "PMI_GNI_", 8) == 0) env[k++] = environ[i];
    char inst[32], nn[32];
    snprintf(inst, sizeof(inst), "%d", n + me);
    snprintf(nn, sizeof(nn), "%d", nnodes);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(fds[0], 0);
        close(fds[0]);
        close(fds[1]);
        char *argv[] = { "msgq_node", "--helper", inst, nn, NULL };
        execve("/proc/self/exe", argv, env);
        _exit(127);
    }
    close(fds[0]);
    CHECK(write(fds[1], node_attrs, sizeof(*node_attrs) * (size_t)nnodes) == (ssize_t)(sizeof(*node_attrs) * (size_t)nnodes));
    close(fds[1]);
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) SN_FAIL("helper ended with status %#x", st);
    free(env);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--helper") == 0) return helper(argc, argv);
    gnit_init(&t, 64);
    /* MSGQ connections list instances by inst_id: the EP's remote_id picks one. */
    gnit_bind_inst_ids(&t);
    me = t.rank;
    n = t.size;
    next_seq = calloc((size_t)n, sizeof(long));
    node_of = calloc((size_t)n, sizeof(int));
    node_addr = calloc((size_t)n, sizeof(uint32_t));
    node_leader = calloc((size_t)n, sizeof(int));
    node_size = calloc((size_t)n, sizeof(int));
    node_attrs = calloc((size_t)n, sizeof(gni_msgq_ep_attr_t));
    CHECK(next_seq && node_of && node_addr && node_leader && node_size && node_attrs);
    for (int r = 0; r < n; r++) {
        int k = 0;
        while (k < nnodes && node_addr[k] != t.addrs[r]) k++;
        if (k == nnodes) {
            node_addr[nnodes] = t.addrs[r];
            node_leader[nnodes] = r;
            nnodes++;
        }
        node_of[r] = k;
        node_size[k]++;
    }
    nlocal = node_size[node_of[me]];
    leader = node_leader[node_of[me]];
    second = -1;
    for (int r = n - 1; r > leader; r--)
        if (node_of[r] == node_of[me]) second = r;

    GNI_OK(GNI_CqCreate(t.nic, 4096, 0, GNI_CQ_NOBLOCK, NULL, NULL, &scq));
    memset(&attr, 0, sizeof(attr));
    attr.max_msg_sz = MAXSZ;
    attr.smsg_q_sz = QSZ;
    attr.num_msgq_eps = (uint32_t)nnodes;
    attr.nloc_insts = (uint32_t)nlocal;
    attr.modes = GNI_MSGQ_MODE_BLOCKING;

    /* The leader creates the node's MSGQ; its neighbours join it, one with other
     * attributes (accepted: the node's apply). */
    if (me == leader) join_msgq(&attr);
    dt_barrier();
    if (me != leader) {
        gni_msgq_attr_t other = attr;
        if (me == second) other.smsg_q_sz = 2 * QSZ;
        join_msgq(&other);
    }
    gni_msgq_handle_t q2;
    GNI_EXPECT(GNI_RC_INVALID_STATE, GNI_MsgqInit(t.nic, rcv, &t, scq, &attr, &q2));
    dt_barrier();

    /* Every instance sees the whole node, itself first. */
    {
        gni_msgq_ep_attr_t a;
        uint32_t sz = 0;
        GNI_OK(GNI_MsgqGetConnAttrs(q, 0, &a, &sz));
        CHECK_EQ(a.num_insts, nlocal);
        CHECK_EQ(a.insts[0].id, me);
        CHECK_EQ(a.smsg_q_sz, QSZ);
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqGetConnAttrs(q, 0, NULL, &sz));
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqGetConnAttrs(q, 0, &a, NULL));
    }

    /* Nothing connected yet: INVALID_STATE to anybody. */
    for (int r = 0; r < n; r++) {
        hdr_t h = { (uint32_t)me, (uint32_t)r, 0, 0 };
        GNI_EXPECT(GNI_RC_INVALID_STATE, GNI_MsgqSend(q, t.eps[r], &h, sizeof(h), NULL, 0, 1, 0));
    }
    dt_barrier();

    exchange_node_attrs();
    if (me == leader) {
        /* bad attributes */
        gni_msgq_ep_attr_t bad = node_attrs[0];
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqConnect(q, bad.pe_addr + 1, &bad));
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqConnect(q, bad.pe_addr, NULL));
        bad.num_insts = 0;
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqConnect(q, bad.pe_addr, &bad));
        bad.num_insts = GNI_MSGQ_NODE_INSTS_MAX + 1;
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqConnect(q, bad.pe_addr, &bad));
        bad = node_attrs[0];
        memset(&bad.insts[0].mdh, 0, sizeof(bad.insts[0].mdh));
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqConnect(q, bad.pe_addr, &bad));
        bad = node_attrs[0];
        bad.max_msg_sz = GNI_MSGQ_MSG_SZ_MAX + 1;
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqConnect(q, bad.pe_addr, &bad));
    }
    leader_connects();
    if (me == leader) {
        /* one node more than num_msgq_eps */
        gni_msgq_ep_attr_t extra = node_attrs[0];
        extra.pe_addr = 0x7ffffff0;
        GNI_EXPECT(GNI_RC_ERROR_RESOURCE, GNI_MsgqConnect(q, extra.pe_addr, &extra));
    }

    /* bad sends */
    {
        hdr_t h = { (uint32_t)me, 0, 0, 0 };
        uint8_t big[GNI_MSGQ_MSG_SZ_MAX];
        memset(big, 0, sizeof(big));
        int peer = (me + 1) % n;
        GNI_EXPECT(GNI_RC_ERROR_RESOURCE, GNI_MsgqSend(q, t.eps[peer], big, 100, big, MAXSZ - 99, 1, 0));
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqSend(q, t.eps[peer], NULL, 8, NULL, 0, 1, 0));
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqSend(q, t.eps[peer], &h, sizeof(h), NULL, 4, 1, 0));
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqSend(q, NULL, &h, sizeof(h), NULL, 0, 1, 0));
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqSend(NULL, t.eps[peer], &h, sizeof(h), NULL, 0, 1, 0));
        gni_ep_handle_t unbound;
        GNI_OK(GNI_EpCreate(t.nic, t.cq, &unbound));
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqSend(q, unbound, &h, sizeof(h), NULL, 0, 1, 0));
        /* a connected node, an instance it does not list (it lists several) */
        if (nlocal >= 2) {
            GNI_OK(GNI_EpBind(unbound, t.nic_addr, 4000000u));
            GNI_EXPECT(GNI_RC_INVALID_STATE, GNI_MsgqSend(q, unbound, &h, sizeof(h), NULL, 0, 1, 0));
            GNI_OK(GNI_EpUnbind(unbound));
        }
        /* a node that is not connected */
        GNI_OK(GNI_EpBind(unbound, 0x7ffffff0, 0));
        GNI_EXPECT(GNI_RC_INVALID_STATE, GNI_MsgqSend(q, unbound, &h, sizeof(h), NULL, 0, 1, 0));
        GNI_OK(GNI_EpUnbind(unbound));
        GNI_OK(GNI_EpDestroy(unbound));
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqConnRelease(q, 0x7ffffff0));
    }
    dt_barrier();

    /* 1: every rank to every other rank, through the connections the leaders made. */
    double t0 = dt_now();
    all_to_all(1, NMSG1);
    if (me == 0)
        printf("msgq_node: %d ranks on %d nodes, %ld messages in %.3f s\n", n, nnodes, (long)n * (n - 1) * NMSG1, dt_now() - t0);

    /* 2: the leaders release their MSGQ.  Their neighbours keep the node's connections;
     * sends to a released queue fail in their send event.  A leader joining again sends
     * at once through its node's connections (a single-rank node's ended with it). */
    long *want = calloc((size_t)n, sizeof(long));
    CHECK(want);
    dt_barrier();
    if (me == leader) GNI_OK(GNI_MsgqRelease(q));
    dt_barrier();
    start_phase(2);
    if (me == leader) {
        join_msgq(&attr);
        for (int r = 0; r < n; r++) {
            if (is_leader(r)) continue;
            if (nlocal == 1) {
                hdr_t h = { (uint32_t)me, (uint32_t)r, 0, 2 };
                GNI_EXPECT(GNI_RC_INVALID_STATE, GNI_MsgqSend(q, t.eps[r], &h, sizeof(h), NULL, 0, 1, 0));
            } else {
                for (int s = 0; s < NMSG2; s++) send_one(r, (uint32_t)s, GNI_RC_SUCCESS);
            }
            progress();
        }
    } else {
        for (int r = 0; r < n; r++) {
            if (r == me) continue;
            if (is_leader(r)) {
                send_one(r, 0, GNI_RC_TRANSACTION_ERROR);
                continue;
            }
            for (int s = 0; s < NMSG2; s++) send_one(r, (uint32_t)s, GNI_RC_SUCCESS);
            progress();
        }
        for (int r = 0; r < n; r++)
            want[r] = r == me ? 0 : !is_leader(r) ? NMSG2 : node_size[node_of[r]] >= 2 ? NMSG2 : 0;
    }
    finish_phase(want);

    /* 3: the leaders connect again (their queues are new), then all-to-all. */
    exchange_node_attrs();
    leader_connects();
    all_to_all(3, NMSG3);

    /* 4: holds, on each node's connection to itself (messages to oneself). */
    start_phase(4);
    int own = node_of[me];
    if (me == leader) GNI_OK(GNI_MsgqConnRelease(q, t.nic_addr));   /* its only holder */
    dt_barrier();
    self_send(0);
    dt_barrier();
    if (me == leader) GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqConnRelease(q, t.nic_addr));
    dt_barrier();
    GNI_OK(GNI_MsgqConnect(q, t.nic_addr, &node_attrs[own]));       /* every local rank holds */
    dt_barrier();
    if (me == leader) GNI_OK(GNI_MsgqConnRelease(q, t.nic_addr));
    dt_barrier();
    self_send(nlocal >= 2);                                           /* others still hold it */
    dt_barrier();
    if (me != leader) GNI_OK(GNI_MsgqConnRelease(q, t.nic_addr));
    dt_barrier();
    self_send(0);                                                     /* the last hold went */
    dt_barrier();
    if (me == leader) GNI_OK(GNI_MsgqConnect(q, t.nic_addr, &node_attrs[own]));
    dt_barrier();
    self_send(1);
    dt_barrier();
    if (me == second) GNI_OK(GNI_MsgqConnRelease(q, t.nic_addr));  /* not a holder: ends it */
    if (nlocal == 1) GNI_OK(GNI_MsgqConnRelease(q, t.nic_addr));
    dt_barrier();
    self_send(0);
    for (int r = 0; r < n; r++) want[r] = r == me ? 1 + (nlocal >= 2) : 0;
    finish_phase(want);

    /* 5: the connections to other nodes end; another process joins the node's MSGQ,
     * connects every node and exits: its connections stay for everybody. */
    if (me == leader)
        for (int k = 0; k < nnodes; k++)
            if (k != own) GNI_OK(GNI_MsgqConnRelease(q, node_addr[k]));
    dt_barrier();
    for (int r = 0; r < n; r++) {
        hdr_t h = { (uint32_t)me, (uint32_t)r, 0, 5 };
        if (r != me) GNI_EXPECT(GNI_RC_INVALID_STATE, GNI_MsgqSend(q, t.eps[r], &h, sizeof(h), NULL, 0, 1, 0));
    }
    dt_barrier();
    if (me == leader) run_helper();
    dt_barrier();
    all_to_all(5, NMSG5);
    {
        /* the exited instance is no longer listed */
        gni_msgq_ep_attr_t a;
        uint32_t sz = 0;
        GNI_OK(GNI_MsgqGetConnAttrs(q, 0, &a, &sz));
        CHECK_EQ(a.num_insts, nlocal);
    }
    dt_barrier();

    /* 6: at most GNI_MSGQ_NODE_INSTS_MAX instances per node (node 0's leader adds
     * instances of its own until the node is full). */
    if (me == 0) {
        gni_cdm_handle_t cdm[GNI_MSGQ_NODE_INSTS_MAX];
        gni_nic_handle_t nic[GNI_MSGQ_NODE_INSTS_MAX];
        gni_msgq_handle_t mq[GNI_MSGQ_NODE_INSTS_MAX];
        int k = 0;
        for (; k < GNI_MSGQ_NODE_INSTS_MAX; k++) {
            uint32_t addr;
            GNI_OK(GNI_CdmCreate((uint32_t)(2 * n + k), t.ptag, t.cookie, GNI_CDM_MODE_FORK_NOCOPY, &cdm[k]));
            GNI_OK(GNI_CdmAttach(cdm[k], t.dev_id, &addr, &nic[k]));
            gni_msgq_attr_t a = attr;
            gni_return_t rc = GNI_MsgqInit(nic[k], rcv, &t, NULL, &a, &mq[k]);
            if (rc == GNI_RC_INVALID_STATE) break;
            GNI_OK(rc);
        }
        CHECK_EQ(k, GNI_MSGQ_NODE_INSTS_MAX - nlocal);
        gni_msgq_ep_attr_t a;
        uint32_t sz = 0;
        GNI_OK(GNI_MsgqGetConnAttrs(q, 0, &a, &sz));
        CHECK_EQ(a.num_insts, GNI_MSGQ_NODE_INSTS_MAX);
        CHECK_EQ(sz, sizeof(gni_msgq_ep_attr_t));
        for (int i = 0; i < k; i++) GNI_OK(GNI_MsgqRelease(mq[i]));
        for (int i = 0; i <= k && i < GNI_MSGQ_NODE_INSTS_MAX; i++) GNI_OK(GNI_CdmDestroy(cdm[i]));
        GNI_OK(GNI_MsgqGetConnAttrs(q, 0, &a, &sz));
        CHECK_EQ(a.num_insts, nlocal);
    }
    dt_barrier();

    GNI_OK(GNI_MsgqRelease(q));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqRelease(q));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqProgress(q, 0));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MsgqConnRelease(q, t.nic_addr));
    dt_barrier();
    GNI_OK(GNI_CqDestroy(scq));
    free(want);
    gnit_fini(&t);
    printf("msgq_node: rank %d ok\n", me);
    return 0;
}
