/* An MPI program that uses SISCI, the common way: node ids exchanged with MPI_Allgather,
 * segments connected, written with SCIMemCpy and DMA, interrupts triggered along a ring,
 * MPI barriers between phases (no PMI call of its own).  Runs under snrun, mpiexec and
 * virtual hosts (c-tests/tools/vhrun), where neighbours are on other machines.
 * Usage: mpi_sisci */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sisci_api.h"
#include "sntest.h"

#define SEG_BASE 700
#define INTNO_BASE 40
#define SIZE 65536

static sci_error_t err;
#define OK(...) do { err = (sci_error_t)0x12345; __VA_ARGS__; \
    if (err != SCI_ERR_OK) SN_FAIL("%s -> %s (0x%x)", #__VA_ARGS__, SCIGetErrorString(err), (unsigned)err); } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    sntest_rank = rank;
    OK(SCIInitialize(0, &err));
    unsigned int me, *nodes = calloc((size_t)n, sizeof *nodes);
    OK(SCIGetLocalNodeId(0, &me, 0, &err));
    MPI_Allgather(&me, 1, MPI_UNSIGNED, nodes, 1, MPI_UNSIGNED, MPI_COMM_WORLD);
    int next = (rank + 1) % n, prev = (rank + n - 1) % n;

    sci_desc_t sd;
    sci_local_segment_t ls;
    sci_remote_segment_t rs;
    sci_map_t lmap;
    sci_local_interrupt_t li;
    sci_remote_interrupt_t ri;
    sci_dma_queue_t q;
    OK(SCIOpen(&sd, 0, &err));
    OK(SCICreateSegment(sd, &ls, SEG_BASE + rank, SIZE, NULL, NULL, 0, &err));
    volatile uint8_t *in = SCIMapLocalSegment(ls, &lmap, 0, SIZE, NULL, 0, &err);
    CHECK(err == SCI_ERR_OK && in);
    OK(SCIPrepareSegment(ls, 0, 0, &err));
    OK(SCISetSegmentAvailable(ls, 0, 0, &err));
    unsigned int intno = INTNO_BASE + rank;
    OK(SCICreateInterrupt(sd, &li, 0, &intno, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));
    MPI_Barrier(MPI_COMM_WORLD);

    /* Everything exists: connect to the next rank (no retry needed after the barrier). */
    OK(SCIConnectSegment(sd, &rs, nodes[next], SEG_BASE + next, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err));
    CHECK_EQ(SCIGetRemoteSegmentSize(rs), SIZE);
    OK(SCIConnectInterrupt(sd, &ri, nodes[next], 0, INTNO_BASE + next, SCI_INFINITE_TIMEOUT, 0, &err));
    sci_map_t rmap;
    SCIMapRemoteSegment(rs, &rmap, 0, SIZE, NULL, 0, &err);
    CHECK_EQ(err, SCI_ERR_OK);

    /* SCIMemCpy the first half, DMA the second, then interrupt the next rank. */
    uint8_t *buf = malloc(SIZE);
    for (int k = 0; k < SIZE; k++) buf[k] = (uint8_t)(rank * 31 + k);
    OK(SCIMemCpy(NULL, buf, rmap, 0, SIZE / 2, 0, &err));
    sci_local_segment_t src;
    sci_map_t smap;
    OK(SCICreateSegment(sd, &src, SEG_BASE + 100 + rank, SIZE, NULL, NULL, SCI_FLAG_PRIVATE, &err));
    uint8_t *s = SCIMapLocalSegment(src, &smap, 0, SIZE, NULL, 0, &err);
    CHECK(err == SCI_ERR_OK && s);
    memcpy(s, buf, SIZE);
    OK(SCIPrepareSegment(src, 0, 0, &err));
    OK(SCICreateDMAQueue(sd, &q, 0, 1, 0, &err));
    OK(SCIStartDmaTransfer(q, src, rs, SIZE / 2, SIZE / 2, SIZE / 2, NULL, NULL, 0, &err));
    OK(SCIWaitForDMAQueue(q, SCI_INFINITE_TIMEOUT, 0, &err));
    OK(SCITriggerInterrupt(ri, 0, &err));
    OK(SCIWaitForInterrupt(li, 20000, 0, &err));
    for (int k = 0; k < SIZE; k++)
        if (in[k] != (uint8_t)(prev * 31 + k)) SN_FAIL("byte %d from rank %d: %u", k, prev, in[k]);
    MPI_Barrier(MPI_COMM_WORLD);

    OK(SCIRemoveDMAQueue(q, 0, &err));
    OK(SCIUnmapSegment(smap, 0, &err));
    OK(SCIRemoveSegment(src, 0, &err));
    OK(SCIUnmapSegment(rmap, 0, &err));
    OK(SCIDisconnectSegment(rs, 0, &err));
    OK(SCIDisconnectInterrupt(ri, 0, &err));
    MPI_Barrier(MPI_COMM_WORLD);
    OK(SCIRemoveInterrupt(li, 0, &err));
    OK(SCIUnmapSegment(lmap, 0, &err));
    OK(SCISetSegmentUnavailable(ls, 0, 0, &err));
    OK(SCIRemoveSegment(ls, 0, &err));
    OK(SCIClose(sd, 0, &err));
    SCITerminate();
    printf("mpi_sisci: rank %d of %d ok (node %u -> node %u)\n", rank, n, me, nodes[next]);
    MPI_Finalize();
    return 0;
}
