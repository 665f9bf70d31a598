/* Node-wide namespaces and reflective memory with several processes per node
 * (snrun -N k): on each node exactly one process gets a given segment id or interrupt
 * number, other nodes have their own; SCI_FLAG_AUTO_ID gives distinct ids per node,
 * which the ranks exchange (PMI_Allgather) and everybody connects to everybody's;
 * the owner's callback counts every connection; program memory exported with
 * SCIRegisterSegmentMemory is mapped in place; broadcast segments (one per node, same
 * id) share what a broadcast map or a SCI_FLAG_BROADCAST DMA writes, also when the
 * nodes are on different machines (the writer ships with SCIStoreBarrier and the DMA's
 * completion, the members reload with SCICacheSync(SCI_FLAG_CACHE_INVALIDATE)). */
#include "stest.h"

static volatile int connects;
static sci_callback_action_t on_conn(void *arg, sci_local_segment_t s, sci_segment_cb_reason_t reason, unsigned int node, unsigned int adapter, sci_error_t e)
{
    (void)arg; (void)s; (void)node; (void)adapter; (void)e;
    if (reason == SCI_CB_CONNECT) __atomic_add_fetch(&connects, 1, __ATOMIC_SEQ_CST);
    return SCI_CALLBACK_CONTINUE;
}

int main(int argc, char **argv)
{
    (void)argc; (void)argv;
    int rank, size;
    unsigned int *nodes;
    OK(SCIInitialize(0, &err));
    st_job(&rank, &size, &nodes);
    sci_desc_t sd;
    OK(SCIOpen(&sd, 0, &err));

    /* One winner per node for a fixed segment id and a fixed interrupt number. */
    sci_local_segment_t fixed;
    SCICreateSegment(sd, &fixed, 900, 64, NULL, NULL, 0, &err);
    CHECK(err == SCI_ERR_OK || err == SCI_ERR_SEGMENTID_USED);
    int won = err == SCI_ERR_OK;
    sci_local_interrupt_t fint;
    unsigned int no = 900;
    SCICreateInterrupt(sd, &fint, 0, &no, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err);
    CHECK(err == SCI_ERR_OK || err == SCI_ERR_SEGMENTID_USED);
    int iwon = err == SCI_ERR_OK;
    int wins[2] = { won, iwon }, all_wins[2 * 64];
    CHECK(size <= 64);
    CHECK(PMI_Allgather(wins, all_wins, sizeof wins) == PMI_SUCCESS);
    for (int r = 0; r < size; r++) {
        int seg = 0, in = 0;
        for (int q = 0; q < size; q++)
            if (nodes[q] == nodes[r]) { seg += all_wins[2 * q]; in += all_wins[2 * q + 1]; }
        if (seg != 1 || in != 1) SN_FAIL("node %u: %d segment owners and %d interrupt owners of id 900", nodes[r], seg, in);
    }

    /* A node the job does not have: SCI_ERR_NO_SUCH_NODEID at once (no retry loop). */
    sci_remote_segment_t none;
    sci_remote_interrupt_t inone;
    FAILS(SCI_ERR_NO_SUCH_NODEID, SCIConnectSegment(sd, &none, 4 * (unsigned)(size + 2), 900, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err));
    FAILS(SCI_ERR_NO_SUCH_NODEID, SCIConnectInterrupt(sd, &inone, 4 * (unsigned)(size + 2), 0, 900, SCI_INFINITE_TIMEOUT, 0, &err));
    CHECK_EQ(SCIProbeNode(sd, 0, 4 * (unsigned)(size + 2), 0, &err), 0);
    CHECK_EQ(err, SCI_ERR_NO_SUCH_NODEID);
    CHECK_EQ(SCIProbeNode(sd, 0, nodes[size - 1], 0, &err), 1);

    /* AUTO_ID from 1000: distinct on each node; everyone connects to everyone's. */
    sci_local_segment_t mine;
    sci_map_t mm;
    OK(SCICreateSegment(sd, &mine, 1000, 4096, on_conn, NULL, SCI_FLAG_AUTO_ID | SCI_FLAG_USE_CALLBACK, &err));
    unsigned int id = SCIGetLocalSegmentId(mine), *ids = calloc((size_t)size, sizeof *ids);
    CHECK(id >= 1000 && id <= 1128);
    CHECK(PMI_Allgather(&id, ids, sizeof id) == PMI_SUCCESS);
    for (int q = 0; q < size; q++)
        for (int p = 0; p < q; p++)
            if (nodes[p] == nodes[q] && ids[p] == ids[q]) SN_FAIL("ranks %d and %d of node %u both got id %u", p, q, nodes[p], ids[p]);
    volatile uint32_t *m = SCIMapLocalSegment(mine, &mm, 0, 4096, NULL, 0, &err);
    m[0] = 0xbeef0000u + (unsigned)rank;
    OK(SCIPrepareSegment(mine, 0, 0, &err));
    OK(SCISetSegmentAvailable(mine, 0, 0, &err));
    PMI_Barrier();
    for (int q = 0; q < size; q++) {
        if (q == rank) continue;
        sci_remote_segment_t rs = st_connect(sd, nodes[q], ids[q], NULL, NULL, 0, 30);
        sci_map_t rm;
        volatile uint32_t *r = SCIMapRemoteSegment(rs, &rm, 0, 4096, NULL, 0, &err);
        CHECK_EQ(err, SCI_ERR_OK);
        CHECK_EQ(r[0], 0xbeef0000u + (unsigned)q);
        OK(SCIUnmapSegment(rm, 0, &err));
        OK(SCIDisconnectSegment(rs, 0, &err));
    }
    double end = st_now() + 30;
    while (__atomic_load_n(&connects, __ATOMIC_SEQ_CST) < size - 1) {
        if (st_now() > end) SN_FAIL("%d connect callbacks, want %d", connects, size - 1);
        usleep(1000);
    }

    /* Program memory exported (SCIRegisterSegmentMemory): the next rank maps it and
     * stores into it.  On one machine the map is the owner's memory itself, so the store
     * is there without any barrier; across machines SCIStoreBarrier ships it. */
    {
        sci_local_segment_t us;
        uint64_t *mem = aligned_alloc(4096, 16384);
        memset(mem, 0, 16384);
        OK(SCICreateSegment(sd, &us, 1200 + rank, 16384, NULL, NULL, SCI_FLAG_EMPTY, &err));
        OK(SCIRegisterSegmentMemory(mem, 16384, us, 0, &err));
        OK(SCIPrepareSegment(us, 0, 0, &err));
        OK(SCISetSegmentAvailable(us, 0, 0, &err));
        int to = (rank + 1) % size;
        sci_remote_segment_t urs = st_connect(sd, nodes[to], 1200 + to, NULL, NULL, 0, 30);
        sci_map_t um;
        volatile uint64_t *u = SCIMapRemoteSegment(urs, &um, 0, 16384, NULL, 0, &err);
        CHECK_EQ(err, SCI_ERR_OK);
        u[1000] = 0x5eed0000u + (unsigned)rank;
        sci_sequence_t s;
        OK(SCICreateMapSequence(um, &s, 0, &err));
        SCIStoreBarrier(s, 0);
        OK(SCIRemoveSequence(s, 0, &err));
        PMI_Barrier();
        int from = (rank + size - 1) % size;
        CHECK_EQ(mem[1000], 0x5eed0000u + (unsigned)from);
        OK(SCIUnmapSegment(um, 0, &err));
        OK(SCIDisconnectSegment(urs, 0, &err));
        PMI_Barrier();
        OK(SCIRemoveSegment(us, 0, &err));
        free(mem);
    }

    /* Reflective memory: the first rank of every node but the last makes broadcast
     * segment 950. */
    /* (The writer's own node has no member when there are several nodes: a broadcast
     * connection reaches the machine's group from any node.) */
    int leader = (rank == 0 || nodes[rank - 1] != nodes[rank]) && (nodes[rank] != nodes[size - 1] || nodes[0] == nodes[size - 1]);
    sci_local_segment_t bc;
    sci_map_t bm;
    volatile uint64_t *b = NULL;
    if (leader) {
        OK(SCICreateSegment(sd, &bc, 950, 8192, NULL, NULL, SCI_FLAG_BROADCAST, &err));
        b = SCIMapLocalSegment(bc, &bm, 0, 8192, NULL, 0, &err);
        CHECK_EQ(err, SCI_ERR_OK);
        OK(SCIPrepareSegment(bc, 0, 0, &err));
        OK(SCISetSegmentAvailable(bc, 0, 0, &err));
    }
    PMI_Barrier();
    if (rank == size - 1) {
        sci_remote_segment_t all;
        sci_map_t am;
        OK(SCIConnectSegment(sd, &all, DIS_BROADCAST_NODEID_GROUP_ALL, 950, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, SCI_FLAG_BROADCAST, &err));
        volatile uint64_t *w = SCIMapRemoteSegment(all, &am, 0, 8192, NULL, SCI_FLAG_BROADCAST, &err);
        CHECK_EQ(err, SCI_ERR_OK);
        w[1] = 0xb0adca57;                        /* one store ... */
        sci_sequence_t s;
        OK(SCICreateMapSequence(am, &s, 0, &err));
        SCIStoreBarrier(s, 0);
        /* ... and a broadcast DMA from program memory. */
        uint64_t pattern[64];
        for (int i = 0; i < 64; i++) pattern[i] = 0xd0d0000000ull + (uint64_t)i;
        sci_dma_queue_t dq;
        OK(SCICreateDMAQueue(sd, &dq, 0, 1, 0, &err));
        OK(SCIStartDmaTransferMem(dq, pattern, all, sizeof pattern, 4096, NULL, NULL, SCI_FLAG_BROADCAST, &err));
        CHECK_EQ(SCIWaitForDMAQueue(dq, 10000, 0, &err), SCI_DMAQUEUE_DONE);
        OK(SCIRemoveDMAQueue(dq, 0, &err));
        OK(SCIRemoveSequence(s, 0, &err));
        OK(SCIUnmapSegment(am, 0, &err));
        OK(SCIDisconnectSegment(all, 0, &err));
    }
    PMI_Barrier();
    if (leader) {
        /* What other machines wrote, into this node's copy. */
        OK(SCICacheSync(bm, (void *)b, 8192, SCI_FLAG_CACHE_INVALIDATE, &err));
        CHECK_EQ(b[1], 0xb0adca57);               /* every node's segment has it */
        for (int i = 0; i < 64; i++) CHECK_EQ(b[512 + i], 0xd0d0000000ull + (uint64_t)i);
        size_t gsz = 0;
        sci_local_segment_t att;
        FAILS(SCI_ERR_NO_SUCH_SEGMENT, SCIAttachLocalSegment(sd, &att, 950, &gsz, NULL, NULL, 0, &err));
    }
    PMI_Barrier();
    if (leader) {
        OK(SCIUnmapSegment(bm, 0, &err));
        OK(SCIRemoveSegment(bc, 0, &err));
    }
    OK(SCIUnmapSegment(mm, 0, &err));
    OK(SCIRemoveSegment(mine, 0, &err));
    if (won) OK(SCIRemoveSegment(fixed, 0, &err));
    if (iwon) OK(SCIRemoveInterrupt(fint, 0, &err));
    OK(SCIClose(sd, 0, &err));
    printf("sisci_nodes: rank %d of %d ok (node %u, auto id %u%s)\n", rank, size, nodes[rank], id, leader ? ", broadcast leader" : "");
    PMI_Finalize();
    return 0;
}
