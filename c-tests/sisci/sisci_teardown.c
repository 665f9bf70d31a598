/* Teardown in the orders programs use, between a server and its clients, written the way
 * such programs are: node ids on the command line, everything driven by data interrupts.
 *
 *  1. Every client connects to the server's segment (retrying until it is there), maps it
 *     and makes a sequence on the map (never removed), writes its block by PIO and by a
 *     DMA vector whose entries' flags are left as garbage, and says so.
 *  2. The server checks the blocks; its SCIRemoveSegment is SCI_ERR_BUSY while clients
 *     map the segment.  The clients unmap (their sequences stay, and then fail with
 *     SCI_ERR_ILLEGAL_OPERATION) but stay connected; now the server's SCIRemoveSegment
 *     succeeds.  A client's later map is SCI_ERR_NOT_CONNECTED, its DMA ends in
 *     SCI_DMAQUEUE_ERROR, it hears SCI_CB_DISCONNECT, and its SCIDisconnectSegment
 *     succeeds.
 *  3. The clients fill the server's data-interrupt queue while the server does not read
 *     it: 32 messages are taken, the next is SCI_ERR_NOSPC at once; the server then reads
 *     exactly the messages taken.
 *  4. The server removes its interrupt and data interrupts while the clients are still
 *     connected; their triggers then fail with SCI_ERR_NOT_CONNECTED, their
 *     disconnections succeed, and everybody's SCIClose succeeds (with the sequences
 *     never removed).
 *
 * Usage: sisci_teardown server CLIENT_NODE...
 *        sisci_teardown client SERVER_NODE */
#include "stest.h"

#define SEG 500
#define BLOCK 4096
#define INT_SERVER 50        /* requests */
#define INT_CONTROL 51       /* the server's control messages while it does not read 50 */
#define INT_PLAIN 52
#define INT_CLIENT 60
#define MAXCLI 16

enum { M_HELLO = 1, M_WELCOME, M_WRITTEN, M_UNMAP, M_UNMAPPED, M_REMOVED, M_FILL, M_FILLED, M_DRAINED, M_GONE, M_DONE, M_FLOOD };
struct msg { uint32_t kind, node, index, count; };

static void send(sci_remote_data_interrupt_t to, uint32_t kind, uint32_t node, uint32_t index, uint32_t count)
{
    struct msg m = { kind, node, index, count };
    OK(SCITriggerDataInterrupt(to, &m, sizeof m, 0, &err));
}

static struct msg receive(sci_local_data_interrupt_t in, const char *what)
{
    struct msg m;
    unsigned len = sizeof m;
    SCIWaitForDataInterrupt(in, &m, &len, 60000, 0, &err);
    if (err != SCI_ERR_OK) SN_FAIL("waiting for %s: %s", what, SCIGetErrorString(err));
    CHECK_EQ(len, sizeof m);
    return m;
}

static uint8_t pattern(unsigned index, size_t i) { return (uint8_t)(index * 31 + i * 7 + 1); }

static int server(int n, unsigned *cnode)
{
    unsigned me;
    OK(SCIGetLocalNodeId(0, &me, 0, &err));
    sci_desc_t sd;
    OK(SCIOpen(&sd, 0, &err));
    size_t size = 2 * BLOCK * (size_t)n;
    sci_local_segment_t ls;
    sci_map_t lm;
    OK(SCICreateSegment(sd, &ls, SEG, size, NULL, NULL, 0, &err));
    volatile uint8_t *mem = SCIMapLocalSegment(ls, &lm, 0, size, NULL, 0, &err);
    CHECK(err == SCI_ERR_OK && mem != NULL);
    OK(SCIPrepareSegment(ls, 0, 0, &err));
    OK(SCISetSegmentAvailable(ls, 0, 0, &err));
    unsigned no = INT_SERVER, nc = INT_CONTROL, np = INT_PLAIN;
    sci_local_data_interrupt_t in, ctl;
    sci_local_interrupt_t plain;
    OK(SCICreateDataInterrupt(sd, &in, 0, &no, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));
    OK(SCICreateDataInterrupt(sd, &ctl, 0, &nc, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));
    OK(SCICreateInterrupt(sd, &plain, 0, &np, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));

    /* 1. Clients say hello (in any order), get their index, write their blocks. */
    sci_remote_data_interrupt_t to[MAXCLI];
    int seen[MAXCLI] = { 0 };
    for (int hellos = 0, written = 0; hellos < n || written < n;) {
        struct msg m = receive(in, "hellos and blocks");
        if (m.kind == M_WRITTEN) {
            written++;
            continue;
        }
        CHECK_EQ(m.kind, M_HELLO);
        int c = -1;
        for (int i = 0; i < n; i++) if (cnode[i] == m.node) c = i;
        if (c < 0 || seen[c]++) SN_FAIL("hello from node %u, not one of ours (or twice)", m.node);
        to[c] = st_connect_dint(sd, m.node, INT_CLIENT, 0, 60);
        send(to[c], M_WELCOME, me, (uint32_t)c, (uint32_t)n);
        hellos++;
    }
    for (int c = 0; c < n; c++)
        for (size_t i = 0; i < 2 * BLOCK; i++)
            if (mem[2 * BLOCK * (size_t)c + i] != pattern((unsigned)c, i)) SN_FAIL("client %d's block, byte %zu", c, i);

    /* 2. Mapped by the clients (and here): busy.  Unmapped, connections idle: removed. */
    FAILS(SCI_ERR_BUSY, SCIRemoveSegment(ls, 0, &err));
    OK(SCIUnmapSegment(lm, 0, &err));
    FAILS(SCI_ERR_BUSY, SCIRemoveSegment(ls, 0, &err));
    for (int c = 0; c < n; c++) send(to[c], M_UNMAP, me, (uint32_t)c, 0);
    for (int k = 0; k < n; k++) CHECK_EQ(receive(in, "the unmaps").kind, M_UNMAPPED);
    OK(SCIRemoveSegment(ls, 0, &err));
    for (int c = 0; c < n; c++) send(to[c], M_REMOVED, me, (uint32_t)c, 0);

    /* 3. The queue of `in` fills while we only read `ctl`. */
    for (int k = 0; k < n; k++) CHECK_EQ(receive(ctl, "the end of the removal checks").kind, M_DONE);
    for (int c = 0; c < n; c++) send(to[c], M_FILL, me, (uint32_t)c, 0);
    unsigned taken = 0;
    for (int k = 0; k < n; k++) {
        struct msg m = receive(ctl, "the fill");
        CHECK_EQ(m.kind, M_FILLED);
        taken += m.count;
    }
    CHECK_EQ(taken, 32);
    for (unsigned k = 0; k < taken; k++) CHECK_EQ(receive(in, "the flood").kind, M_FLOOD);
    struct msg extra;
    unsigned len = sizeof extra;
    FAILS(SCI_ERR_TIMEOUT, SCIWaitForDataInterrupt(in, &extra, &len, 50, 0, &err));   /* refused ones were not taken */
    for (int c = 0; c < n; c++) send(to[c], M_DRAINED, me, (uint32_t)c, 0);
    for (int k = 0; k < n; k++) CHECK_EQ(receive(in, "a message after the drain").kind, M_FLOOD);

    /* 4. Interrupts removed while the clients are connected. */
    OK(SCIRemoveInterrupt(plain, 0, &err));
    OK(SCIRemoveDataInterrupt(in, 0, &err));
    for (int c = 0; c < n; c++) send(to[c], M_GONE, me, (uint32_t)c, 0);
    for (int k = 0; k < n; k++) CHECK_EQ(receive(ctl, "the clients' last checks").kind, M_DONE);
    OK(SCIRemoveDataInterrupt(ctl, 0, &err));
    for (int c = 0; c < n; c++) OK(SCIDisconnectDataInterrupt(to[c], 0, &err));
    OK(SCIClose(sd, 0, &err));
    printf("sisci_teardown: server (node %u) ok (%d clients)\n", me, n);
    return 0;
}

static int client(unsigned snode)
{
    unsigned me;
    OK(SCIGetLocalNodeId(0, &me, 0, &err));
    sci_desc_t sd;
    OK(SCIOpen(&sd, 0, &err));
    unsigned no = INT_CLIENT;
    sci_local_data_interrupt_t in;
    OK(SCICreateDataInterrupt(sd, &in, 0, &no, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));
    sci_remote_segment_t rs = st_connect(sd, snode, SEG, NULL, NULL, 0, 60);
    sci_remote_data_interrupt_t req = st_connect_dint(sd, snode, INT_SERVER, 0, 60);
    sci_remote_data_interrupt_t ctl = st_connect_dint(sd, snode, INT_CONTROL, 0, 60);
    sci_remote_interrupt_t plain = st_connect_int(sd, snode, INT_PLAIN, 0, 60);
    send(req, M_HELLO, me, 0, 0);
    struct msg w = receive(in, "the welcome");
    CHECK_EQ(w.kind, M_WELCOME);
    unsigned idx = w.index;

    /* 1. Our block: by PIO through the map, and by a DMA vector. */
    size_t size = SCIGetRemoteSegmentSize(rs), at = 2 * BLOCK * (size_t)idx;
    CHECK_EQ(size, 2 * BLOCK * (size_t)w.count);
    sci_map_t rm;
    volatile uint8_t *p = SCIMapRemoteSegment(rs, &rm, 0, size, NULL, 0, &err);
    CHECK(err == SCI_ERR_OK && p != NULL);
    sci_sequence_t seq;
    OK(SCICreateMapSequence(rm, &seq, 0, &err));
    CHECK_EQ(SCIStartSequence(seq, 0, &err), SCI_SEQ_OK);
    for (size_t i = 0; i < BLOCK; i++) p[at + i] = pattern(idx, i);
    SCIStoreBarrier(seq, 0);
    sci_local_segment_t src;
    sci_map_t sm;
    OK(SCICreateSegment(sd, &src, 0, BLOCK, NULL, NULL, SCI_FLAG_PRIVATE, &err));
    uint8_t *s = SCIMapLocalSegment(src, &sm, 0, BLOCK, NULL, 0, &err);
    CHECK(err == SCI_ERR_OK && s != NULL);
    for (size_t i = 0; i < BLOCK; i++) s[i] = pattern(idx, BLOCK + i);
    OK(SCIPrepareSegment(src, 0, 0, &err));
    sci_dma_queue_t dq;
    OK(SCICreateDMAQueue(sd, &dq, 0, 4, 0, &err));
    dis_dma_vec_t v[4];
    for (int k = 0; k < 4; k++) {
        v[k].size = BLOCK / 4;
        v[k].local_offset = (unsigned)(k * BLOCK / 4);
        v[k].remote_offset = (unsigned)(at + BLOCK + (size_t)k * BLOCK / 4);
        v[k].flags = 0xa5a5a5a5u ^ (unsigned)k << 20;   /* garbage: never initialised */
    }
    OK(SCIStartDmaTransferVec(dq, src, rs, 4, v, NULL, NULL, 0, &err));
    CHECK_EQ(SCIWaitForDMAQueue(dq, 30000, 0, &err), SCI_DMAQUEUE_DONE);
    send(req, M_WRITTEN, me, idx, 0);

    /* 2. Unmapped with its sequence; the connection stays (idle) while the server
     *    removes the segment. */
    CHECK_EQ(receive(in, "unmap").kind, M_UNMAP);
    FAILS(SCI_ERR_BUSY, SCIDisconnectSegment(rs, 0, &err));
    OK(SCIUnmapSegment(rm, 0, &err));
    st_orphan_sequence(seq);
    send(req, M_UNMAPPED, me, idx, 0);
    CHECK_EQ(receive(in, "the removal").kind, M_REMOVED);
    CHECK(SCIMapRemoteSegment(rs, &rm, 0, size, NULL, 0, &err) == NULL);
    CHECK_EQ(err, SCI_ERR_NOT_CONNECTED);
    OK(SCIStartDmaTransfer(dq, src, rs, 0, BLOCK, at, NULL, NULL, 0, &err));
    CHECK_EQ(SCIWaitForDMAQueue(dq, 30000, 0, &err), SCI_DMAQUEUE_ERROR);
    sci_error_t status;
    sci_segment_cb_reason_t why = SCIWaitForRemoteSegmentEvent(rs, &status, 30000, 0, &err);
    CHECK_EQ(err, SCI_ERR_OK);
    CHECK_EQ(why, SCI_CB_DISCONNECT);
    OK(SCIDisconnectSegment(rs, 0, &err));
    FAILS(SCI_ERR_NO_SUCH_SEGMENT, SCIConnectSegment(sd, &rs, snode, SEG, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err));
    send(ctl, M_DONE, me, idx, 0);

    /* 3. Fill the server's queue: full is SCI_ERR_NOSPC at once. */
    CHECK_EQ(receive(in, "the fill").kind, M_FILL);
    unsigned taken = 0;
    for (;;) {
        double t = st_now();
        struct msg m = { M_FLOOD, me, idx, taken };
        SCITriggerDataInterrupt(req, &m, sizeof m, 0, &err);
        if (err == SCI_ERR_NOSPC) {
            if (st_now() - t > 1) SN_FAIL("a full queue took %.1f s to answer", st_now() - t);
            break;
        }
        CHECK_EQ(err, SCI_ERR_OK);
        if (++taken > 32) SN_FAIL("more than 32 messages taken");
    }
    struct msg again = { M_FLOOD, me, idx, taken };
    FAILS(SCI_ERR_NOSPC, SCITriggerDataInterrupt(req, &again, sizeof again, 0, &err));
    send(ctl, M_FILLED, me, idx, taken);
    CHECK_EQ(receive(in, "the drain").kind, M_DRAINED);
    send(req, M_FLOOD, me, idx, 0);

    /* 4. The server's interrupts go while we are connected. */
    CHECK_EQ(receive(in, "the end").kind, M_GONE);
    struct msg m = { M_FLOOD, me, idx, 0 };
    FAILS(SCI_ERR_NOT_CONNECTED, SCITriggerDataInterrupt(req, &m, sizeof m, 0, &err));
    FAILS(SCI_ERR_NOT_CONNECTED, SCITriggerInterrupt(plain, 0, &err));
    OK(SCIDisconnectDataInterrupt(req, 0, &err));
    OK(SCIDisconnectInterrupt(plain, 0, &err));
    OK(SCIRemoveDMAQueue(dq, 0, &err));
    OK(SCIUnmapSegment(sm, 0, &err));
    OK(SCIRemoveSegment(src, 0, &err));
    send(ctl, M_DONE, me, idx, 0);
    OK(SCIDisconnectDataInterrupt(ctl, 0, &err));
    OK(SCIRemoveDataInterrupt(in, 0, &err));
    OK(SCIClose(sd, 0, &err));            /* the sequence was never removed */
    printf("sisci_teardown: client %u (node %u) ok\n", idx, me);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: sisci_teardown server CLIENT_NODE... | client SERVER_NODE\n");
        return 2;
    }
    OK(SCIInitialize(0, &err));
    int launched = st_meet();
    int rc;
    if (strcmp(argv[1], "server") == 0) {
        unsigned cnode[MAXCLI];
        int n = argc - 2;
        CHECK(n >= 1 && n <= MAXCLI);
        for (int c = 0; c < n; c++) cnode[c] = (unsigned)atoi(argv[2 + c]);
        rc = server(n, cnode);
    } else {
        rc = client((unsigned)atoi(argv[2]));
    }
    SCITerminate();
    st_part(launched);
    return rc;
}
