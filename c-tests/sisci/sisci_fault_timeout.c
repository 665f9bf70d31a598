/* Injected timeouts (SOFTNIC_FAULTS=timeout:...) as a SISCI program's retry path sees
 * them.  Every rank waits, each with a time limit, for a DMA transfer of its own (into
 * its segment connected as a remote one), for an interrupt it triggered on itself, and
 * for a data interrupt with a message, each retried until it gets it; the manifest makes
 * FAULTS of those waits (retries count) run out at once: each answers SCI_ERR_TIMEOUT
 * although what it waits for is there, and a retry gets it (nothing is lost).  Waits without a limit (SCI_INFINITE_TIMEOUT) are
 * never cut short.
 *
 *   sisci_fault_timeout FAULTS    (0: no faults expected)
 */
#include "stest.h"

#define SEG_ID 420
#define LEN 4096

/* Timeouts seen so far: each wait is retried until it gets what it waits for. */
static int timeouts;

static void timed(const char *what, int (*wait)(void *), void *arg)
{
    int rc;
    while ((rc = wait(arg)) == SCI_ERR_TIMEOUT) {
        if (++timeouts > 100) SN_FAIL("%s: still timing out after 100 tries", what);
    }
    if (rc != SCI_ERR_OK) SN_FAIL("%s: %s", what, SCIGetErrorString(rc));
}

static int wait_segment(void *ls)
{
    unsigned int node = 0, adapter = 9;
    sci_segment_cb_reason_t r = SCIWaitForLocalSegmentEvent(*(sci_local_segment_t *)ls, &node, &adapter, 10000, 0, &err);
    if (err == SCI_ERR_OK && (r != SCI_CB_CONNECT || adapter != 0)) SN_FAIL("the segment event was %d from adapter %u", (int)r, adapter);
    return (int)err;
}

static int wait_dma(void *q)
{
    sci_dma_queue_state_t st = SCIWaitForDMAQueue(*(sci_dma_queue_t *)q, 10000, 0, &err);
    if (err == SCI_ERR_OK && st != SCI_DMAQUEUE_DONE) SN_FAIL("the DMA queue ended %d", (int)st);
    return (int)err;
}

static int wait_intr(void *li)
{
    SCIWaitForInterrupt(*(sci_local_interrupt_t *)li, 10000, 0, &err);
    return (int)err;
}

static int wait_data(void *li)
{
    char msg[16] = "";
    unsigned int len = sizeof msg;
    SCIWaitForDataInterrupt(*(sci_local_data_interrupt_t *)li, msg, &len, 10000, 0, &err);
    if (err == SCI_ERR_OK && (len != 6 || memcmp(msg, "hello", 6))) SN_FAIL("the data interrupt carried %u bytes \"%s\"", len, msg);
    return (int)err;
}

int main(int argc, char **argv)
{
    int faults = argc > 1 ? atoi(argv[1]) : 0;
    int rank, size;
    unsigned int *nodes;
    OK(SCIInitialize(0, &err));
    st_job(&rank, &size, &nodes);
    st_loop_t l;
    st_loop_open(&l, nodes[rank], SEG_ID + rank, 2 * LEN, NULL);

    timed("SCIWaitForLocalSegmentEvent", wait_segment, &l.ls);
    OK(SCIStartDmaTransfer(l.dq, l.ls, l.rs, 0, LEN, LEN, NULL, NULL, 0, &err));
    timed("SCIWaitForDMAQueue", wait_dma, &l.dq);

    sci_local_interrupt_t li;
    sci_remote_interrupt_t ri;
    unsigned int ino = 0;
    OK(SCICreateInterrupt(l.sd, &li, 0, &ino, NULL, NULL, 0, &err));
    OK(SCIConnectInterrupt(l.sd, &ri, nodes[rank], 0, ino, SCI_INFINITE_TIMEOUT, 0, &err));
    OK(SCITriggerInterrupt(ri, 0, &err));
    timed("SCIWaitForInterrupt", wait_intr, &li);

    sci_local_data_interrupt_t ldi;
    sci_remote_data_interrupt_t rdi;
    unsigned int dno = 0;
    OK(SCICreateDataInterrupt(l.sd, &ldi, 0, &dno, NULL, NULL, 0, &err));
    OK(SCIConnectDataInterrupt(l.sd, &rdi, nodes[rank], 0, dno, SCI_INFINITE_TIMEOUT, 0, &err));
    OK(SCITriggerDataInterrupt(rdi, (void *)"hello", 6, 0, &err));
    timed("SCIWaitForDataInterrupt", wait_data, &ldi);
    if (timeouts != faults) SN_FAIL("%d waits timed out, %d expected", timeouts, faults);

    /* No limit: never cut short, whatever the spec has left. */
    OK(SCIStartDmaTransfer(l.dq, l.ls, l.rs, 0, LEN, LEN, NULL, NULL, 0, &err));
    CHECK_EQ(SCIWaitForDMAQueue(l.dq, SCI_INFINITE_TIMEOUT, 0, &err), SCI_DMAQUEUE_DONE);
    CHECK_EQ(err, SCI_ERR_OK);

    OK(SCIDisconnectDataInterrupt(rdi, 0, &err));
    OK(SCIRemoveDataInterrupt(ldi, 0, &err));
    OK(SCIDisconnectInterrupt(ri, 0, &err));
    OK(SCIRemoveInterrupt(li, 0, &err));
    st_loop_close(&l);
    printf("sisci_fault_timeout: rank %d ok, %d waits timed out\n", rank, faults);
    PMI_Finalize();
    return 0;
}
