/* PIO ping-pong through mapped segments, the way SISCI programs do it: every rank
 * exports an inbox segment (id 100 + rank: ids are node-wide), connects to its partner's inbox on the partner's
 * node (retrying until the partner has made it available), maps it, and stores into it;
 * the partner spins on its local map.  Ranks pair up (0-1, 2-3, ...).  Also checks the
 * owner's SCI_CB_CONNECT / SCI_CB_DISCONNECT events and the teardown order.
 * Usage: sisci_pingpong [iterations] [bytes] */
#include "stest.h"

#define SEG_ID 100

int main(int argc, char **argv)
{
    int rank, size;
    unsigned int *nodes;
    int iters = argc > 1 ? atoi(argv[1]) : 1000;
    size_t bytes = argc > 2 ? (size_t)atol(argv[2]) : 8;
    if (bytes < 8) bytes = 8;
    OK(SCIInitialize(0, &err));
    st_job(&rank, &size, &nodes);
    if (size % 2) SKIP("needs an even number of ranks");
    int peer = rank ^ 1;
    size_t segsize = bytes + 64;

    sci_desc_t sd;
    sci_local_segment_t ls;
    sci_map_t lmap, rmap;
    OK(SCIOpen(&sd, 0, &err));
    OK(SCICreateSegment(sd, &ls, SEG_ID + rank, segsize, NULL, NULL, 0, &err));
    CHECK_EQ(SCIGetLocalSegmentSize(ls), segsize);
    CHECK_EQ(SCIGetLocalSegmentId(ls), SEG_ID + rank);
    volatile uint8_t *in = SCIMapLocalSegment(ls, &lmap, 0, segsize, NULL, 0, &err);
    CHECK(err == SCI_ERR_OK && in != NULL);
    for (size_t i = 0; i < segsize; i++) CHECK(in[i] == 0);   /* new segments are zeroed */
    FAILS(SCI_ERR_SEGMENT_NOT_PREPARED, SCISetSegmentAvailable(ls, 0, 0, &err));
    OK(SCIPrepareSegment(ls, 0, 0, &err));
    OK(SCISetSegmentAvailable(ls, 0, 0, &err));

    /* The partner may not be there yet: retry. */
    sci_remote_segment_t rs = st_connect(sd, nodes[peer], SEG_ID + peer, NULL, NULL, 0, 30);
    CHECK_EQ(SCIGetRemoteSegmentSize(rs), segsize);
    CHECK_EQ(SCIGetRemoteSegmentNodeId(rs), nodes[peer]);
    CHECK_EQ(SCIGetRemoteSegmentId(rs), SEG_ID + peer);
    volatile uint8_t *out = SCIMapRemoteSegment(rs, &rmap, 0, segsize, NULL, 0, &err);
    CHECK(err == SCI_ERR_OK && out != NULL);
    CHECK(SCIGetMapPointer(rmap) == out);
    sci_sequence_t seq;
    OK(SCICreateMapSequence(rmap, &seq, 0, &err));
    CHECK_EQ(SCIStartSequence(seq, 0, &err), SCI_SEQ_OK);

    /* The owner hears of the partner's connection. */
    unsigned int from = 0, adapter = 99;
    sci_segment_cb_reason_t why = SCIWaitForLocalSegmentEvent(ls, &from, &adapter, 10000, 0, &err);
    CHECK_EQ(err, SCI_ERR_OK);
    CHECK_EQ(why, SCI_CB_CONNECT);
    CHECK_EQ(from, nodes[peer]);
    CHECK_EQ(adapter, 0);

    volatile uint64_t *flag_in = (volatile uint64_t *)(in + bytes);
    volatile uint64_t *flag_out = (volatile uint64_t *)(out + bytes);
    uint8_t *msg = malloc(bytes);
    double t0 = st_now();
    for (int i = 1; i <= iters; i++) {
        if (rank % 2 == 0) {
            memset(msg, i & 0xff, bytes);
            memcpy((void *)out, msg, bytes);
            SCIFlush(seq, 0);
            *flag_out = (uint64_t)i;
            SCIStoreBarrier(seq, 0);
            st_await(flag_in, (uint64_t)i, 30);
            for (size_t k = 0; k < bytes; k++) if (in[k] != (uint8_t)(i & 0xff)) SN_FAIL("iteration %d byte %zu", i, k);
        } else {
            st_await(flag_in, (uint64_t)i, 30);
            for (size_t k = 0; k < bytes; k++) if (in[k] != (uint8_t)(i & 0xff)) SN_FAIL("iteration %d byte %zu", i, k);
            memcpy((void *)out, (const void *)in, bytes);
            SCIFlush(seq, 0);
            *flag_out = (uint64_t)i;
            SCIStoreBarrier(seq, 0);
        }
    }
    double t = st_now() - t0;
    CHECK_EQ(SCICheckSequence(seq, 0, &err), SCI_SEQ_OK);
    CHECK_EQ(err, SCI_ERR_OK);

    /* Teardown refusals, then the order programs use: the sequence is never removed. */
    FAILS(SCI_ERR_BUSY, SCIDisconnectSegment(rs, 0, &err));     /* mapped */
    FAILS(SCI_ERR_BUSY, SCIRemoveSegment(ls, 0, &err));         /* mapped here and by the partner */
    FAILS(SCI_ERR_BUSY, SCIClose(sd, 0, &err));
    OK(SCIUnmapSegment(rmap, 0, &err));                          /* its sequence stays, holding nothing */
    st_orphan_sequence(seq);
    OK(SCIDisconnectSegment(rs, 0, &err));
    OK(SCIUnmapSegment(lmap, 0, &err));
    /* Our segment stays until the partner disconnected (then its owner hears of it). */
    why = SCIWaitForLocalSegmentEvent(ls, &from, NULL, 10000, 0, &err);
    CHECK_EQ(err, SCI_ERR_OK);
    CHECK_EQ(why, SCI_CB_DISCONNECT);
    CHECK_EQ(from, nodes[peer]);
    OK(SCISetSegmentUnavailable(ls, 0, 0, &err));
    OK(SCIRemoveSegment(ls, 0, &err));
    OK(SCIClose(sd, 0, &err));
    SCITerminate();
    printf("sisci_pingpong: rank %d of %d ok (node %u <-> node %u, %d x %zu B, %.2f us per round trip)\n",
           rank, size, nodes[rank], nodes[peer], iters, bytes, t / iters * 1e6);
    PMI_Finalize();
    return 0;
}
