/* The checker (SOFTNIC_CHECK) against a SISCI bug committed on purpose: every rank moves
 * part of its segment by DMA into its own segment connected as a remote one, and
 *   reuse   overwrites the source after SCIStartDmaTransfer and before SCIWaitForDMAQueue
 *           (the DMA engine may still be reading it)
 *   readwrite  reads part of the segment back by DMA (SCI_FLAG_DMA_READ) and writes the
 *           destination before SCIWaitForDMAQueue (the data may land after that write)
 *   clean   waits first: no finding
 *   noclose waits first, then exits with its segments, queue and device still open (named
 *           at exit)
 * Prints "sisci_check_bugs: rank R MODE done". */
#include "stest.h"

#define SEG_ID 500

static void fill(volatile uint8_t *m)
{
    for (int i = 0; i < 4096; i++) m[i] = (uint8_t)i;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "clean";
    int rank, size;
    unsigned int *nodes;
    OK(SCIInitialize(0, &err));
    st_job(&rank, &size, &nodes);
    st_loop_t l;
    st_loop_open(&l, nodes[rank], SEG_ID + rank, 8192, fill);
    OK(SCIStartDmaTransfer(l.dq, l.ls, l.rs, 0, 4096, 4096, NULL, NULL, 0, &err));
    if (!strcmp(mode, "reuse")) l.mem[100] ^= 0xff; /* the bug */
    CHECK_EQ(SCIWaitForDMAQueue(l.dq, SCI_INFINITE_TIMEOUT, 0, &err), SCI_DMAQUEUE_DONE);
    l.mem[101] ^= 0xff; /* after the wait: fine */
    if (!strcmp(mode, "readwrite") || !strcmp(mode, "clean")) {
        OK(SCIStartDmaTransfer(l.dq, l.ls, l.rs, 4096, 2048, 0, NULL, NULL, SCI_FLAG_DMA_READ, &err));
        if (!strcmp(mode, "readwrite")) l.mem[4096 + 5] ^= 0xff; /* the bug: the data may still be landing */
        CHECK_EQ(SCIWaitForDMAQueue(l.dq, SCI_INFINITE_TIMEOUT, 0, &err), SCI_DMAQUEUE_DONE);
        l.mem[4096 + 5] ^= 0xff; /* after the wait: fine */
    }
    if (strcmp(mode, "noclose")) st_loop_close(&l);
    printf("sisci_check_bugs: rank %d %s done\n", rank, mode);
    PMI_Finalize();
    return 0;
}
