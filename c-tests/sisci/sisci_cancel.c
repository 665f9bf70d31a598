/* Watcher threads blocked in SISCI's waits, cancelled as programs do at exit (deferred and
 * asynchronous; at once, soon and after they slept): SCIWaitForInterrupt,
 * SCIWaitForDataInterrupt, SCIWaitForLocalSegmentEvent and SCIWaitForRemoteSegmentEvent,
 * plus threads calling SCIWaitForInterrupt with a 1 ms timeout in a loop.  Afterwards the
 * objects they waited on still work from the main thread: the partner's interrupt and data
 * interrupt arrive (no message taken by a thread that was cancelled), its disconnection is
 * seen as a local segment event, and everything is removed without SCI_ERR_BUSY.
 * Pairs of ranks (even count).  Usage: sisci_cancel [rounds]. */
#include "stest.h"
#include "canceltest.h"

static sci_local_interrupt_t li;
static sci_local_data_interrupt_t ldi;
static sci_local_segment_t ls;
static sci_remote_segment_t rs;

static void wait_int(void *a)
{
    sci_error_t e;
    SCIWaitForInterrupt(li, SCI_INFINITE_TIMEOUT, 0, &e);
    SN_FAIL("SCIWaitForInterrupt returned %s with nothing triggered", SCIGetErrorString(e));
}

static void wait_int_short(void *a)
{
    sci_error_t e;
    SCIWaitForInterrupt(li, 1, 0, &e);
    if (e != SCI_ERR_TIMEOUT) SN_FAIL("SCIWaitForInterrupt(1 ms) returned %s", SCIGetErrorString(e));
}

static void wait_data(void *a)
{
    sci_error_t e;
    char buf[64];
    unsigned len = sizeof buf;
    SCIWaitForDataInterrupt(ldi, buf, &len, SCI_INFINITE_TIMEOUT, 0, &e);
    SN_FAIL("SCIWaitForDataInterrupt returned %s with nothing sent", SCIGetErrorString(e));
}

static void wait_local_seg(void *a)
{
    sci_error_t e;
    SCIWaitForLocalSegmentEvent(ls, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &e);
    SN_FAIL("SCIWaitForLocalSegmentEvent returned %s with no event", SCIGetErrorString(e));
}

static void wait_remote_seg(void *a)
{
    sci_error_t e, status;
    SCIWaitForRemoteSegmentEvent(rs, &status, SCI_INFINITE_TIMEOUT, 0, &e);
    SN_FAIL("SCIWaitForRemoteSegmentEvent returned %s with no event", SCIGetErrorString(e));
}

int main(int argc, char **argv)
{
    int rank, size;
    unsigned int *nodes;
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    OK(SCIInitialize(0, &err));
    st_job(&rank, &size, &nodes);
    if (size % 2) SKIP("needs an even number of ranks");
    int peer = rank ^ 1;
    unsigned int pn = nodes[peer];
    sci_desc_t sd;
    OK(SCIOpen(&sd, 0, &err));
    unsigned int no_int = 70 + rank, no_data = 80 + rank;
    OK(SCICreateInterrupt(sd, &li, 0, &no_int, NULL, NULL, SCI_FLAG_FIXED_INTNO | SCI_FLAG_COUNTING_INT, &err));
    OK(SCICreateDataInterrupt(sd, &ldi, 0, &no_data, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));
    OK(SCICreateSegment(sd, &ls, 900 + rank, 4096, NULL, NULL, 0, &err));
    OK(SCIPrepareSegment(ls, 0, 0, &err));
    OK(SCISetSegmentAvailable(ls, 0, 0, &err));
    rs = st_connect(sd, pn, 900 + peer, NULL, NULL, 0, 30);
    sci_remote_interrupt_t ri = st_connect_int(sd, pn, 70 + peer, 0, 30);
    sci_remote_data_interrupt_t rdi = st_connect_dint(sd, pn, 80 + peer, 0, 30);
    /* The partner's connection to our segment is an event: take it first. */
    sci_segment_cb_reason_t why = SCIWaitForLocalSegmentEvent(ls, NULL, NULL, 10000, 0, &err);
    CHECK(err == SCI_ERR_OK && why == SCI_CB_CONNECT);
    PMI_Barrier();

    ct_battery("SCIWaitForInterrupt", wait_int, NULL, rounds);
    ct_battery("SCIWaitForDataInterrupt", wait_data, NULL, rounds);
    ct_battery("SCIWaitForLocalSegmentEvent", wait_local_seg, NULL, rounds);
    ct_battery("SCIWaitForRemoteSegmentEvent", wait_remote_seg, NULL, rounds);
    ct_loop_both("SCIWaitForInterrupt(1 ms) in a loop", wait_int_short, NULL, rounds, 3000);

    /* The library goes on: what the partner sends now arrives whole. */
    PMI_Barrier();
    OK(SCITriggerInterrupt(ri, 0, &err));
    unsigned msg = 0xca11ed00u + rank;
    OK(SCITriggerDataInterrupt(rdi, &msg, sizeof msg, 0, &err));
    OK(SCIWaitForInterrupt(li, 10000, 0, &err));
    unsigned got = 0, len = sizeof got;
    OK(SCIWaitForDataInterrupt(ldi, &got, &len, 10000, 0, &err));
    CHECK_EQ(len, sizeof got);
    CHECK_EQ(got, 0xca11ed00u + peer);
    FAILS(SCI_ERR_TIMEOUT, SCIWaitForInterrupt(li, 20, 0, &err));
    PMI_Barrier();
    OK(SCIDisconnectInterrupt(ri, 0, &err));
    OK(SCIDisconnectDataInterrupt(rdi, 0, &err));
    OK(SCIDisconnectSegment(rs, 0, &err));
    why = SCIWaitForLocalSegmentEvent(ls, NULL, NULL, 10000, 0, &err);
    CHECK(err == SCI_ERR_OK && why == SCI_CB_DISCONNECT);
    PMI_Barrier();
    OK(SCISetSegmentUnavailable(ls, 0, 0, &err));
    OK(SCIRemoveSegment(ls, 0, &err));
    OK(SCIRemoveInterrupt(li, 0, &err));
    OK(SCIRemoveDataInterrupt(ldi, 0, &err));
    OK(SCIClose(sd, 0, &err));
    printf("sisci_cancel: rank %d ok\n", rank);
    SCITerminate();
    return 0;
}
