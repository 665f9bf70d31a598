/* Injected network losses (SOFTNIC_FAULTS=transfer:...) as a SISCI program's error path
 * sees them: every rank moves eight pieces of its segment by DMA into its own segment
 * connected as a remote one (writes, then reads); the manifest sets the fault spec and
 * passes its after/every here.  A lost transfer leaves the queue in SCI_DMAQUEUE_ERROR
 * (the wait itself succeeds; a callback would get SCI_ERR_TRANSFER_FAILED) and moves
 * nothing; the others are DONE and land; the
 * queue takes the retries of the lost ones, which land.
 *
 *   sisci_fault_transfer AFTER EVERY    (0 0: no faults expected)
 */
#include "stest.h"

#define SEG_ID 400
#define NOPS 8
#define PIECE 256

static sci_dma_queue_t dq;
static sci_local_segment_t ls;
static sci_remote_segment_t rs;

/* Transfer i (even: a write of piece i into the second half; odd: a read of it back into
 * the third quarter); returns 1 when it ended as a lost transfer does. */
static int transfer(int i)
{
    size_t off = (size_t)i * PIECE;
    if (i % 2 == 0)
        OK(SCIStartDmaTransfer(dq, ls, rs, off, PIECE, NOPS * PIECE + off, NULL, NULL, 0, &err));
    else
        OK(SCIStartDmaTransfer(dq, ls, rs, 2 * NOPS * PIECE + off, PIECE, off, NULL, NULL, SCI_FLAG_DMA_READ, &err));
    sci_dma_queue_state_t st = SCIWaitForDMAQueue(dq, SCI_INFINITE_TIMEOUT, 0, &err);
    CHECK_EQ(err, SCI_ERR_OK);
    if (st == SCI_DMAQUEUE_DONE) return 0;
    CHECK_EQ(st, SCI_DMAQUEUE_ERROR);
    CHECK_EQ(SCIDMAQueueState(dq), SCI_DMAQUEUE_ERROR);
    return 1;
}

static uint8_t pat(int i, size_t k)
{
    return (uint8_t)(i * 37 + k * 5 + 1);
}

static void fill(volatile uint8_t *m)
{
    for (int i = 0; i < NOPS; i++)
        for (size_t k = 0; k < PIECE; k++) m[(size_t)i * PIECE + k] = pat(i, k);
}

int main(int argc, char **argv)
{
    int after = argc > 2 ? atoi(argv[1]) : 0, every = argc > 2 ? atoi(argv[2]) : 0;
    int rank, size;
    unsigned int *nodes;
    OK(SCIInitialize(0, &err));
    st_job(&rank, &size, &nodes);
    st_loop_t l;
    st_loop_open(&l, nodes[rank], SEG_ID + rank, 3 * NOPS * PIECE, fill);
    dq = l.dq;
    ls = l.ls;
    rs = l.rs;
    volatile uint8_t *mine = l.mem;
    int nlost = 0;
    for (int i = 0; i < NOPS; i++) {
        int failed = transfer(i);
        if (failed != sn_fault_hits(i, after, every)) SN_FAIL("transfer %d %s", i, failed ? "failed" : "succeeded");
        nlost += failed;
    }
    for (int i = 0; i < NOPS; i++) {
        /* a write lands in the second half; a read fills the third part */
        size_t at = (i % 2 == 0 ? NOPS : 2 * NOPS) * (size_t)PIECE + (size_t)i * PIECE;
        for (size_t k = 0; k < PIECE; k++) {
            uint8_t want = sn_fault_hits(i, after, every) ? 0 : pat(i, k);
            if (mine[at + k] != want) SN_FAIL("transfer %d: byte %zu is %u, expected %u", i, k, mine[at + k], want);
        }
    }
    for (int i = 0; i < NOPS; i++)
        if (sn_fault_hits(i, after, every) && transfer(i)) SN_FAIL("the retry of transfer %d failed", i);
    for (int i = 0; i < NOPS; i++) {
        size_t at = (i % 2 == 0 ? NOPS : 2 * NOPS) * (size_t)PIECE + (size_t)i * PIECE;
        for (size_t k = 0; k < PIECE; k++)
            if (mine[at + k] != pat(i, k)) SN_FAIL("after the retries transfer %d: byte %zu is %u", i, k, mine[at + k]);
    }
    st_loop_close(&l);
    printf("sisci_fault_transfer: rank %d ok, %d transfers lost\n", rank, nlost);
    PMI_Finalize();
    return 0;
}
