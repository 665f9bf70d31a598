/* A peer that comes up late and then dies without cleaning up (no SCIClose, no finalize).
 * Rank 0 retries its connects until rank 1 has exported, then, after rank 1's _exit:
 * its connection reports SCI_CB_LOST (to a waiter and to a callback), sequences
 * NOT_RETRIABLE / PENDING, DMA ends in ERROR with SCI_ERR_TRANSFER_FAILED, triggers fail
 * with SCI_ERR_NOT_CONNECTED, SCIMemCpy with SCI_FLAG_ERROR_CHECK fails, reconnecting
 * finds nothing, and rank 0's own segment and interrupt, which rank 1 had connected to,
 * report SCI_CB_DISCONNECT and can be removed.  No call hangs.  Run: snrun -n 2 -N 1. */
#include "stest.h"

static volatile int lost_cb;
static sci_callback_action_t on_remote(void *arg, sci_remote_segment_t s, sci_segment_cb_reason_t reason, sci_error_t status)
{
    (void)arg; (void)s; (void)status;
    if (reason == SCI_CB_LOST) __atomic_store_n(&lost_cb, 1, __ATOMIC_SEQ_CST);
    return SCI_CALLBACK_CONTINUE;
}

int main(void)
{
    int rank, size;
    unsigned int *nodes;
    OK(SCIInitialize(0, &err));
    st_job(&rank, &size, &nodes);
    if (size != 2 || nodes[0] == nodes[1]) SKIP("needs 2 ranks on 2 nodes (snrun -n 2 -N 1)");
    sci_desc_t sd;
    OK(SCIOpen(&sd, 0, &err));
    sci_local_segment_t ls;
    sci_map_t lm;
    unsigned int ino = 90 + rank, dno = 95 + rank;
    sci_local_interrupt_t li;
    sci_local_data_interrupt_t ld;
    if (rank == 1) usleep(1500000);          /* late: rank 0 retries meanwhile */
    OK(SCICreateSegment(sd, &ls, 800 + rank, 65536, NULL, NULL, 0, &err));
    volatile uint64_t *mine = SCIMapLocalSegment(ls, &lm, 0, 65536, NULL, 0, &err);
    CHECK(err == SCI_ERR_OK);
    mine[0] = 0xa11e;
    OK(SCIPrepareSegment(ls, 0, 0, &err));
    OK(SCISetSegmentAvailable(ls, 0, 0, &err));
    OK(SCICreateInterrupt(sd, &li, 0, &ino, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));
    OK(SCICreateDataInterrupt(sd, &ld, 0, &dno, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));
    int other = 1 - rank;
    sci_remote_segment_t rs = st_connect(sd, nodes[other], 800 + other, NULL, NULL, 0, 30);
    sci_remote_interrupt_t ri = st_connect_int(sd, nodes[other], 90 + other, 0, 30);
    if (rank == 1) {
        PMI_Barrier();
        /* Die holding everything (connections, maps, an interrupt others connected to).
         * Only the PMI connection ended first: hydra (mpiexec) kills the whole job when a client's PMI
         * socket closes before PMI_Finalize and it notices that before the exit. */
        fflush(stdout);
        PMI_Finalize();
        _exit(0);
    }
    sci_remote_segment_t rs_cb = st_connect(sd, nodes[1], 801, on_remote, NULL, SCI_FLAG_USE_CALLBACK, 30);
    sci_remote_data_interrupt_t rd = st_connect_dint(sd, nodes[1], 96, 0, 30);
    sci_map_t rm;
    volatile uint64_t *theirs = SCIMapRemoteSegment(rs, &rm, 0, 65536, NULL, 0, &err);
    CHECK(err == SCI_ERR_OK);
    CHECK_EQ(theirs[0], 0xa11e);
    sci_sequence_t seq;
    OK(SCICreateMapSequence(rm, &seq, 0, &err));
    CHECK_EQ(SCICheckSequence(seq, 0, &err), SCI_SEQ_OK);
    OK(SCITriggerInterrupt(ri, 0, &err));
    sci_segment_cb_reason_t why = SCIWaitForLocalSegmentEvent(ls, NULL, NULL, 10000, 0, &err);
    CHECK(err == SCI_ERR_OK && why == SCI_CB_CONNECT);
    PMI_Barrier();                          /* rank 1 exits now */

    double t0 = st_now();
    sci_error_t status;
    why = SCIWaitForRemoteSegmentEvent(rs, &status, 15000, 0, &err);
    CHECK_EQ(err, SCI_ERR_OK);
    CHECK_EQ(why, SCI_CB_LOST);
    CHECK_EQ(status, SCI_ERR_NOT_CONNECTED);
    double t_lost = st_now() - t0;
    while (!__atomic_load_n(&lost_cb, __ATOMIC_SEQ_CST)) {
        if (st_now() - t0 > 15) SN_FAIL("no SCI_CB_LOST callback");
        usleep(1000);
    }
    CHECK_EQ(SCICheckSequence(seq, 0, &err), SCI_SEQ_NOT_RETRIABLE);
    CHECK_EQ(SCIStartSequence(seq, 0, &err), SCI_SEQ_PENDING);
    (void)theirs[1];                        /* the map stays readable */
    uint64_t word = 1;
    FAILS(SCI_ERR_TRANSFER_FAILED, SCIMemCpy(seq, &word, rm, 0, 8, SCI_FLAG_ERROR_CHECK, &err));
    sci_dma_queue_t dq;
    OK(SCICreateDMAQueue(sd, &dq, 0, 1, 0, &err));
    OK(SCIPrepareSegment(ls, 0, 0, &err));
    OK(SCIStartDmaTransfer(dq, ls, rs, 0, 4096, 0, NULL, NULL, 0, &err));
    CHECK_EQ(SCIWaitForDMAQueue(dq, 10000, 0, &err), SCI_DMAQUEUE_ERROR);
    FAILS(SCI_ERR_NOT_CONNECTED, SCITriggerInterrupt(ri, 0, &err));
    FAILS(SCI_ERR_NOT_CONNECTED, SCITriggerDataInterrupt(rd, &word, 8, 0, &err));
    sci_remote_segment_t again;
    FAILS(SCI_ERR_NO_SUCH_SEGMENT, SCIConnectSegment(sd, &again, nodes[1], 801, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err));
    /* Our own segment: the dead importer's connection is dropped, and reported. */
    why = SCIWaitForLocalSegmentEvent(ls, NULL, NULL, 10000, 0, &err);
    CHECK(err == SCI_ERR_OK && why == SCI_CB_DISCONNECT);
    OK(SCIRemoveSequence(seq, 0, &err));
    OK(SCIUnmapSegment(rm, 0, &err));
    OK(SCIDisconnectSegment(rs, 0, &err));
    OK(SCIDisconnectSegment(rs_cb, 0, &err));
    OK(SCIDisconnectInterrupt(ri, 0, &err));
    OK(SCIDisconnectDataInterrupt(rd, 0, &err));
    OK(SCIRemoveDMAQueue(dq, 0, &err));
    OK(SCIRemoveInterrupt(li, 0, &err));        /* rank 1's connection died with it */
    OK(SCIRemoveDataInterrupt(ld, 0, &err));
    OK(SCIUnmapSegment(lm, 0, &err));
    OK(SCIRemoveSegment(ls, 0, &err));
    OK(SCIClose(sd, 0, &err));
    printf("sisci_death: rank 0 saw the peer lost after %.2f s and got errors, not hangs\n", t_lost);
    return 0;
}
