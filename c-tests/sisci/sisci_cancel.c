/* Watcher threads blocked in SISCI's waits, cancelled as programs do at exit (deferred and
 * asynchronous; at once, soon and after they slept): SCIWaitForInterrupt,
 * SCIWaitForDataInterrupt, SCIWaitForLocalSegmentEvent and SCIWaitForRemoteSegmentEvent,
 * plus threads calling SCIWaitForInterrupt with a 1 ms timeout in a loop.  Afterwards the
 * objects they waited on still work from the main thread: the partner's interrupt and data
 * interrupt arrive (no message taken by a thread that was cancelled), its disconnection is
 * seen as a local segment event, and everything is removed without SCI_ERR_BUSY.
 * Then threads storing through maps in a loop with SCIFlush and SCIStoreBarrier: through
 * the partner's segment (cancelled asynchronously: on one machine the calls are fences,
 * no cancellation point, and must not abort the process), and through a broadcast map of
 * reflective memory, where the calls ship the stores to the group and are cancellation
 * points (both types); afterwards every rank's store through the broadcast map reaches
 * everybody.  Pairs of ranks (even count).  Usage: sisci_cancel [rounds]. */
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

/* A store and both barriers, again and again (the watcher repeats the call). */
struct storer { volatile uint64_t *p; sci_sequence_t seq; };
static void store_and_flush(void *a)
{
    struct storer *st = a;
    st->p[0]++;
    SCIFlush(st->seq, 0);
    st->p[1] = st->p[0];
    SCIStoreBarrier(st->seq, 0);
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

    /* Stores and barriers through the partner's segment: asynchronous cancellation. */
    sci_map_t pm;
    sci_sequence_t pseq;
    struct storer ps = { SCIMapRemoteSegment(rs, &pm, 0, 4096, NULL, 0, &err), 0 };
    CHECK_EQ(err, SCI_ERR_OK);
    OK(SCICreateMapSequence(pm, &ps.seq, 0, &err));
    for (int i = 0; i < rounds; i++)
        for (long d = 0; d <= 3000; d += 1500)
            ct_cancel("SCIFlush/SCIStoreBarrier through a map", store_and_flush, &ps, PTHREAD_CANCEL_ASYNCHRONOUS, 1, d + 100 * i);
    pseq = ps.seq;
    /* Through a broadcast map (the first rank of each node makes the node's member). */
    int first = rank == 0 || nodes[rank - 1] != nodes[rank];
    sci_local_segment_t bs;
    if (first) {
        OK(SCICreateSegment(sd, &bs, 960, 4096, NULL, NULL, SCI_FLAG_BROADCAST, &err));
        OK(SCIPrepareSegment(bs, 0, 0, &err));
        OK(SCISetSegmentAvailable(bs, 0, 0, &err));
    }
    PMI_Barrier();
    sci_remote_segment_t all;
    OK(SCIConnectSegment(sd, &all, DIS_BROADCAST_NODEID_GROUP_ALL, 960, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, SCI_FLAG_BROADCAST, &err));
    sci_map_t bm;
    volatile uint64_t *bw = SCIMapRemoteSegment(all, &bm, 0, 4096, NULL, SCI_FLAG_BROADCAST, &err);
    CHECK_EQ(err, SCI_ERR_OK);
    struct storer bst = { bw + 16 * rank, 0 };
    OK(SCICreateMapSequence(bm, &bst.seq, 0, &err));
    for (int t = 0; t < 2; t++) {
        int type = t ? PTHREAD_CANCEL_ASYNCHRONOUS : PTHREAD_CANCEL_DEFERRED;
        for (long d = 0; d <= 20000; d += 5000)
            ct_cancel("SCIFlush/SCIStoreBarrier through a broadcast map", store_and_flush, &bst, type, 1, d);
        for (int i = 0; i < rounds; i++)
            ct_cancel("SCIFlush/SCIStoreBarrier through a broadcast map", store_and_flush, &bst, type, 1, 100 * i);
    }
    /* The group goes on: every rank's word reaches everybody. */
    bw[16 * rank + 2] = 0x600d0000u + (unsigned)rank;
    SCIStoreBarrier(bst.seq, 0);
    PMI_Barrier();
    CHECK_EQ(SCIStartSequence(bst.seq, 0, &err), SCI_SEQ_OK);
    for (int q = 0; q < size; q++)
        if (bw[16 * q + 2] != 0x600d0000u + (unsigned)q) SN_FAIL("rank %d's word through the broadcast map reads %#llx", q, (unsigned long long)bw[16 * q + 2]);
    PMI_Barrier();
    OK(SCIUnmapSegment(bm, 0, &err));       /* its sequence stays */
    OK(SCIDisconnectSegment(all, 0, &err));
    OK(SCIUnmapSegment(pm, 0, &err));
    (void)pseq;
    PMI_Barrier();
    if (first) OK(SCIRemoveSegment(bs, 0, &err));

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
