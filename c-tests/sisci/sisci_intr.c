/* Interrupts and data interrupts between pairs of ranks (0-1, 2-3, ...): fixed and
 * automatic numbers (node-wide, SCI_ERR_SEGMENTID_USED on reuse), waiting and callbacks,
 * coalescing (at least one event per burst, never more than triggers) against
 * SCI_FLAG_COUNTING_INT (exactly one per trigger), data interrupts in order with their
 * payloads, SCI_ERR_OUT_OF_RANGE for a short buffer and for an oversized message,
 * SCI_ERR_NOSPC at once for a full queue, removal while the partner is connected (its
 * triggers then fail with SCI_ERR_NOT_CONNECTED), SCI_ERR_CANCELLED for a waiter whose
 * interrupt is removed. */
#include "stest.h"
#include <pthread.h>

static volatile int cb_hits, cb_cancel_after = 1 << 30;
static sci_local_interrupt_t cb_int;

static sci_callback_action_t on_int(void *arg, sci_local_interrupt_t li, sci_error_t status)
{
    CHECK(arg == (void *)&cb_hits);
    CHECK(li == cb_int);
    CHECK(status == SCI_ERR_OK);
    int n = __atomic_add_fetch(&cb_hits, 1, __ATOMIC_SEQ_CST);
    return n >= cb_cancel_after ? SCI_CALLBACK_CANCEL : SCI_CALLBACK_CONTINUE;
}

static volatile int dcb_msgs;
static volatile unsigned dcb_last;
static sci_local_data_interrupt_t dcb_int;

static sci_callback_action_t on_data(void *arg, sci_local_data_interrupt_t li, void *data, unsigned int len, sci_error_t status)
{
    CHECK(arg == NULL && li == dcb_int && status == SCI_ERR_OK);
    CHECK(len == 16);
    unsigned seq;
    memcpy(&seq, data, sizeof seq);
    CHECK(seq == dcb_last + 1);
    for (unsigned i = 4; i < len; i++) CHECK(((uint8_t *)data)[i] == (uint8_t)(seq + i));
    dcb_last = seq;
    __atomic_add_fetch(&dcb_msgs, 1, __ATOMIC_SEQ_CST);
    return SCI_CALLBACK_CONTINUE;
}

static void await_int(volatile int *p, int n)
{
    double end = st_now() + 30;
    while (__atomic_load_n(p, __ATOMIC_SEQ_CST) < n) {
        if (st_now() > end) SN_FAIL("callback count stuck at %d, want %d", *p, n);
        usleep(100);
    }
}

struct waiter { sci_local_interrupt_t li; sci_error_t got; };

static void *wait_thread(void *p)
{
    struct waiter *w = p;
    sci_error_t e;
    SCIWaitForInterrupt(w->li, SCI_INFINITE_TIMEOUT, 0, &e);
    w->got = e;
    return NULL;
}

/* Counts events of `li` until the partner's data interrupt says how many it sent, then
 * drains for a while. */
static int count_events(sci_local_interrupt_t li, sci_local_data_interrupt_t ctl, unsigned *sent)
{
    int events = 0;
    unsigned len = sizeof *sent;
    for (;;) {
        SCIWaitForInterrupt(li, 1, 0, &err);
        if (err == SCI_ERR_OK) { events++; continue; }
        CHECK_EQ(err, SCI_ERR_TIMEOUT);
        len = sizeof *sent;
        SCIWaitForDataInterrupt(ctl, sent, &len, 0, 0, &err);
        if (err == SCI_ERR_OK) break;
        CHECK_EQ(err, SCI_ERR_TIMEOUT);
    }
    for (;;) {
        SCIWaitForInterrupt(li, 200, 0, &err);
        if (err != SCI_ERR_OK) { CHECK_EQ(err, SCI_ERR_TIMEOUT); break; }
        events++;
    }
    return events;
}

int main(void)
{
    int rank, size;
    unsigned int *nodes;
    OK(SCIInitialize(0, &err));
    st_job(&rank, &size, &nodes);
    if (size % 2) SKIP("needs an even number of ranks");
    int peer = rank ^ 1;
    unsigned int pn = nodes[peer];

    sci_desc_t sd;
    OK(SCIOpen(&sd, 0, &err));
    sci_local_interrupt_t plain, counting, dup;
    sci_local_data_interrupt_t dint, ctl;
    unsigned int no_plain = 30 + rank, no_count = 40 + rank, no_data = 50 + rank, no_ctl = 60 + rank, no_cb = 0, no_dcb = 0;
    OK(SCICreateInterrupt(sd, &plain, 0, &no_plain, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));
    OK(SCICreateInterrupt(sd, &counting, 0, &no_count, NULL, NULL, SCI_FLAG_FIXED_INTNO | SCI_FLAG_COUNTING_INT, &err));
    CHECK_EQ(SCIGetLocalInterruptNo(plain), 30 + rank);
    /* Numbers are node-wide: taken is taken, whoever took it. */
    unsigned int again = 30 + rank;
    FAILS(SCI_ERR_SEGMENTID_USED, SCICreateInterrupt(sd, &dup, 0, &again, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));
    /* ... but data interrupts have their own numbers. */
    OK(SCICreateDataInterrupt(sd, &dint, 0, &no_data, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));
    OK(SCICreateDataInterrupt(sd, &ctl, 0, &no_ctl, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));
    unsigned int same_as_plain = 30 + rank;
    sci_local_data_interrupt_t dsame;
    OK(SCICreateDataInterrupt(sd, &dsame, 0, &same_as_plain, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));
    OK(SCIRemoveDataInterrupt(dsame, 0, &err));
    /* Automatic numbers, with callbacks; the partner learns them through PMI. */
    /* Counting: one callback per trigger (plain ones could merge two triggers into one). */
    OK(SCICreateInterrupt(sd, &cb_int, 0, &no_cb, on_int, (void *)&cb_hits, SCI_FLAG_USE_CALLBACK | SCI_FLAG_COUNTING_INT, &err));
    OK(SCICreateDataInterrupt(sd, &dcb_int, 0, &no_dcb, on_data, NULL, SCI_FLAG_USE_CALLBACK, &err));
    CHECK(no_cb != 0 && no_dcb != 0);
    FAILS(SCI_ERR_ILLEGAL_OPERATION, SCIWaitForInterrupt(cb_int, 0, 0, &err));   /* a callback is armed */
    unsigned int mine[2] = { no_cb, no_dcb }, all[2 * 64];
    CHECK(size <= 64);
    CHECK(PMI_Allgather(mine, all, sizeof mine) == PMI_SUCCESS);
    FAILS(SCI_ERR_TIMEOUT, SCIWaitForInterrupt(plain, 20, 0, &err));

    sci_remote_interrupt_t r_plain = st_connect_int(sd, pn, 30 + peer, 0, 30);
    sci_remote_interrupt_t r_count = st_connect_int(sd, pn, 40 + peer, 0, 30);
    sci_remote_interrupt_t r_cb = st_connect_int(sd, pn, all[2 * peer], 0, 30);
    sci_remote_data_interrupt_t r_data = st_connect_dint(sd, pn, 50 + peer, 0, 30);
    sci_remote_data_interrupt_t r_ctl = st_connect_dint(sd, pn, 60 + peer, 0, 30);
    sci_remote_data_interrupt_t r_dcb = st_connect_dint(sd, pn, all[2 * peer + 1], 0, 30);
    sci_remote_interrupt_t nope;
    FAILS(SCI_ERR_NO_SUCH_INTNO, SCIConnectInterrupt(sd, &nope, pn, 0, 0xdead, SCI_INFINITE_TIMEOUT, 0, &err));
    CHECK(SCI_ERR_NO_SUCH_INTNO == SCI_ERR_NO_SUCH_SEGMENT);

    /* Bursts: plain interrupts coalesce, counting ones do not.  Even ranks send first. */
    const unsigned burst = 200;
    for (int turn = 0; turn < 2; turn++) {
        PMI_Barrier();
        if ((rank % 2) == turn) {
            for (unsigned i = 0; i < burst; i++) OK(SCITriggerInterrupt(r_plain, 0, &err));
            OK(SCITriggerDataInterrupt(r_ctl, (void *)&burst, sizeof burst, 0, &err));
            for (unsigned i = 0; i < burst; i++) OK(SCITriggerInterrupt(r_count, 0, &err));
            OK(SCITriggerDataInterrupt(r_ctl, (void *)&burst, sizeof burst, 0, &err));
        } else {
            unsigned sent;
            int e = count_events(plain, ctl, &sent);
            CHECK_EQ(sent, burst);
            if (e < 1 || e > (int)burst) SN_FAIL("plain interrupt: %d events for %u triggers", e, burst);
            e = count_events(counting, ctl, &sent);
            CHECK_EQ(e, burst);
        }
    }

    /* Callbacks: CONTINUE keeps the callback, CANCEL ends it. */
    PMI_Barrier();
    cb_cancel_after = 3;
    for (int i = 0; i < 3; i++) {
        OK(SCITriggerInterrupt(r_cb, 0, &err));
        await_int(&cb_hits, i + 1);    /* our partner does the same to us; wait for ours */
    }
    PMI_Barrier();
    OK(SCITriggerInterrupt(r_cb, 0, &err));   /* the partner's callback was cancelled */
    PMI_Barrier();
    usleep(200000);
    CHECK_EQ(cb_hits, 3);

    /* Data interrupts: in order, with their payloads, any size up to 4096. */
    PMI_Barrier();
    enum { NMSG = 30 };   /* both sides send before receiving: stay below the 32-message queue */
    uint8_t msg[4096];
    for (unsigned i = 1; i <= NMSG; i++) {
        unsigned len = i == NMSG ? 4096 : (i * 97) % 4096 + 4;
        memcpy(msg, &i, 4);
        for (unsigned k = 4; k < len; k++) msg[k] = (uint8_t)(i * 3 + k);
        OK(SCITriggerDataInterrupt(r_data, msg, len, 0, &err));
    }
    for (unsigned i = 1; i <= NMSG; i++) {
        uint8_t got[4096];
        unsigned len = sizeof got, want = i == NMSG ? 4096 : (i * 97) % 4096 + 4, seq;
        OK(SCIWaitForDataInterrupt(dint, got, &len, 30000, 0, &err));
        CHECK_EQ(len, want);
        memcpy(&seq, got, 4);
        CHECK_EQ(seq, i);
        for (unsigned k = 4; k < len; k++) if (got[k] != (uint8_t)(i * 3 + k)) SN_FAIL("message %u byte %u", i, k);
    }
    /* A message longer than the buffer: OUT_OF_RANGE with the size, and it stays. */
    memset(msg, 0x5a, 1000);
    OK(SCITriggerDataInterrupt(r_data, msg, 1000, 0, &err));
    FAILS(SCI_ERR_OUT_OF_RANGE, SCITriggerDataInterrupt(r_data, msg, 4097, 0, &err));
    {
        uint8_t small[10], big[2000];
        unsigned len = sizeof small;
        FAILS(SCI_ERR_OUT_OF_RANGE, SCIWaitForDataInterrupt(dint, small, &len, 30000, 0, &err));
        CHECK_EQ(len, 1000);
        len = sizeof big;
        OK(SCIWaitForDataInterrupt(dint, big, &len, 30000, 0, &err));
        CHECK_EQ(len, 1000);
        for (int k = 0; k < 1000; k++) CHECK(big[k] == 0x5a);
    }
    /* A full queue (32 messages): SCI_ERR_NOSPC at once, the message not taken; room
     * again once the receiver reads. */
    PMI_Barrier();
    {
        unsigned taken = 0, len, got;
        double t = st_now();
        for (;;) {
            SCITriggerDataInterrupt(r_data, &taken, sizeof taken, 0, &err);
            if (err != SCI_ERR_OK || taken > 100) break;
            taken++;
        }
        CHECK_EQ(err, SCI_ERR_NOSPC);
        CHECK_EQ(taken, 32);
        if (st_now() - t > 5) SN_FAIL("filling the queue took %.1f s", st_now() - t);
        PMI_Barrier();
        for (unsigned i = 0; i < taken; i++) {
            len = sizeof got;
            OK(SCIWaitForDataInterrupt(dint, &got, &len, 30000, 0, &err));
            CHECK_EQ(got, i);
        }
        len = sizeof got;
        FAILS(SCI_ERR_TIMEOUT, SCIWaitForDataInterrupt(dint, &got, &len, 20, 0, &err));
        PMI_Barrier();
        OK(SCITriggerDataInterrupt(r_data, &taken, sizeof taken, 0, &err));
        len = sizeof got;
        OK(SCIWaitForDataInterrupt(dint, &got, &len, 30000, 0, &err));
        CHECK_EQ(got, 32);
    }
    /* Data callbacks. */
    for (unsigned i = 1; i <= 10; i++) {
        uint8_t m[16];
        memcpy(m, &i, 4);
        for (unsigned k = 4; k < 16; k++) m[k] = (uint8_t)(i + k);
        OK(SCITriggerDataInterrupt(r_dcb, m, sizeof m, 0, &err));
    }
    await_int(&dcb_msgs, 10);

    /* Removal, also while the partner is connected (the hardware lets the receiver go
     * on): the partner's triggers fail from then on, its disconnection still succeeds. */
    PMI_Barrier();
    OK(SCIRemoveDataInterrupt(dint, 0, &err));
    OK(SCIRemoveInterrupt(counting, 0, &err));
    PMI_Barrier();
    {
        unsigned one = 1;
        FAILS(SCI_ERR_NOT_CONNECTED, SCITriggerDataInterrupt(r_data, &one, sizeof one, 0, &err));
        FAILS(SCI_ERR_NOT_CONNECTED, SCITriggerInterrupt(r_count, 0, &err));
    }
    /* A number removed is free again at once. */
    OK(SCICreateDataInterrupt(sd, &dint, 0, &no_data, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));
    PMI_Barrier();
    OK(SCIDisconnectInterrupt(r_count, 0, &err));
    OK(SCIDisconnectInterrupt(r_cb, 0, &err));
    OK(SCIDisconnectDataInterrupt(r_data, 0, &err));
    OK(SCIDisconnectDataInterrupt(r_ctl, 0, &err));
    OK(SCIDisconnectDataInterrupt(r_dcb, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIDisconnectDataInterrupt(r_dcb, 0, &err));
    PMI_Barrier();
    OK(SCIRemoveInterrupt(cb_int, 0, &err));
    OK(SCIRemoveDataInterrupt(dint, 0, &err));
    OK(SCIRemoveDataInterrupt(ctl, 0, &err));
    OK(SCIRemoveDataInterrupt(dcb_int, 0, &err));
    PMI_Barrier();
    /* `plain` is still connected by the partner: odd ranks remove theirs under a waiter,
     * which is cancelled; the partner's triggers fail then. */
    if (rank % 2 == 0) {
        PMI_Barrier();
        PMI_Barrier();
        FAILS(SCI_ERR_NOT_CONNECTED, SCITriggerInterrupt(r_plain, 0, &err));
        OK(SCIDisconnectInterrupt(r_plain, 0, &err));
    } else {
        struct waiter w = { plain, (sci_error_t)0x1234 };
        pthread_t th;
        CHECK(pthread_create(&th, NULL, wait_thread, &w) == 0);
        PMI_Barrier();
        usleep(50000);
        OK(SCIRemoveInterrupt(plain, 0, &err));
        pthread_join(th, NULL);
        CHECK_EQ(w.got, SCI_ERR_CANCELLED);
        PMI_Barrier();
    }
    PMI_Barrier();
    if (rank % 2 == 1) OK(SCIDisconnectInterrupt(r_plain, 0, &err));
    PMI_Barrier();
    if (rank % 2 == 0) OK(SCIRemoveInterrupt(plain, 0, &err));
    OK(SCIClose(sd, 0, &err));
    SCITerminate();
    printf("sisci_intr: rank %d of %d ok\n", rank, size);
    PMI_Finalize();
    return 0;
}
