/* Events are causal: a target's reaction to a put is never seen before the put's own
 * completion event.
 *
 * Rank 0 posts FMA_PUT_W_SYNCFLAG (GLOBAL event) into rank 1's window; rank 1 spins on
 * the flag and answers at once with a put carrying a REMOTE event into rank 0's window,
 * whose registration names rank 0's endpoint CQ as its destination CQ.  So rank 0's one
 * CQ receives both: its own POST completion and the REMOTE event the reaction caused.
 * The reaction cannot begin before the data landed, so the completion must come first,
 * every round, whoever else runs on the machine (a program reaping "my put is done"
 * before "the answer to my put arrived" relies on it).
 *
 * Usage: data_causal [ROUNDS [rdma|amo|smsg]]   (default 200000 rounds; rdma: rank 0's put
 * is an RDMA_PUT of the flag word itself, which travels in the background to another
 * machine; amo: a fetch-add of 1 to the flag word; smsg: SMSG messages both ways, rank
 * 0's mailbox delivering its REMOTE events into the endpoint CQ, which also gets the
 * local SMSG completions)
 * Rank 0 also has a second thread that polls the CQ while the first posts, in the
 * second half of the rounds: a completion handed to another thread must also come
 * before the reaction. */
#include "data_util.h"
#include "causaltest.h"
#include <pthread.h>
#include <sched.h>

#define LOCAL_DATA 0xa11ceu
#define REMOTE_DATA 0xb0b0u

static gni_cq_handle_t cq;
static volatile int round_no;   /* the round the poller expects events of, 0: stop */
static volatile int poller_seen;
static int poller_errors;

/* Takes the next event of the CQ, spinning; returns its data. */
static uint64_t next_event(gni_cq_entry_t *ev)
{
    gni_return_t rc;
    double deadline = dt_now() + 10;
    unsigned spins = 0;
    while ((rc = GNI_CqGetEvent(cq, ev)) == GNI_RC_NOT_DONE) {
        causal_relax(&spins);
        if (spins % 1024 == 0 && dt_now() > deadline) SN_FAIL("no event within 10 s");
    }
    if (rc != GNI_RC_SUCCESS) SN_FAIL("GNI_CqGetEvent returned %d (%s)", (int)rc, gnit_rc(rc));
    return GNI_CQ_GET_DATA(*ev);
}

/* Gives a POST completion's descriptor back (SMSG completions have none). */
static int smsg;
static void take_back(gni_cq_entry_t ev)
{
    gni_post_descriptor_t *d = NULL;
    if (!smsg) GNI_OK(GNI_GetCompleted(cq, ev, &d));
}

/* Rank 0's second thread: takes both events of each round it is given. */
static void *poller(void *arg)
{
    (void)arg;
    int done = 0;
    for (;;) {
        while (round_no == done) sched_yield();
        if (round_no < 0) return NULL;
        gni_cq_entry_t ev;
        uint64_t first = next_event(&ev);
        if (first != LOCAL_DATA) poller_errors++;
        else take_back(ev);
        if (next_event(&ev) == LOCAL_DATA) take_back(ev);
        done = round_no;
        __atomic_store_n(&poller_seen, done, __ATOMIC_RELEASE);
    }
}

/* The next SMSG message from the peer on `ep` (spinning), checked and released. */
static void smsg_take(gni_ep_handle_t ep, uint64_t want)
{
    void *hp;
    gni_return_t rc;
    unsigned spins = 0;
    while ((rc = GNI_SmsgGetNext(ep, &hp)) == GNI_RC_NOT_DONE) causal_relax(&spins);
    GNI_OK(rc);
    CHECK_EQ(*(uint64_t *)hp, want);
    GNI_OK(GNI_SmsgRelease(ep));
}

/* Sends the 8-byte message `v` on `ep` with `msg_id`, waiting out a lack of credits. */
static void smsg_send(gni_ep_handle_t ep, uint64_t v, uint32_t msg_id)
{
    gni_return_t rc;
    unsigned spins = 0;
    while ((rc = GNI_SmsgSend(ep, &v, 8, NULL, 0, msg_id)) == GNI_RC_NOT_DONE) causal_relax(&spins);
    GNI_OK(rc);
}

int main(int argc, char **argv)
{
    gnit_t t;
    gnit_init_mode(&t, 64, GNI_CQ_NOBLOCK, GNI_CDM_MODE_FORK_NOCOPY);
    int rounds = argc > 1 ? atoi(argv[1]) : 200000, me = t.rank;
    int rdma = argc > 2 && !strcmp(argv[2], "rdma"), amo = argc > 2 && !strcmp(argv[2], "amo");
    smsg = argc > 2 && !strcmp(argv[2], "smsg");
    if (t.size != 2) SKIP("needs exactly 2 ranks");
    cq = t.cq;
    int peer = 1 - me;
    uint8_t *win = dt_alloc(8192), *src = dt_alloc(4096);
    /* Rank 0's window delivers REMOTE events into its endpoint CQ. */
    gni_mem_handle_t wmh = dt_reg(&t, win, 8192, me == 0 ? t.cq : NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t smh = dt_reg(&t, src, 4096, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t mh[2];
    uint64_t base[2];
    gnit_exchange_mem(&t, win, wmh, mh, base);
    GNI_OK(GNI_EpSetEventData(t.eps[peer], LOCAL_DATA, REMOTE_DATA));
    gni_mem_handle_t mbh;
    if (smsg) {
        /* One mailbox per rank (messages from the peer); rank 0's reports to its CQ. */
        gni_smsg_attr_t l, r;
        unsigned int mbsz = dt_smsg_attr(&l, 8, 64);
        char *mb = dt_alloc(mbsz);
        mbh = dt_reg(&t, mb, mbsz, me == 0 ? t.cq : NULL, GNI_MEM_READWRITE);
        gni_mem_handle_t bh[2];
        uint64_t bb[2];
        gnit_exchange_mem(&t, mb, mbh, bh, bb);
        r = l;
        l.msg_buffer = mb; l.buff_size = mbsz; l.mem_hndl = mbh; l.mbox_offset = 0;
        r.msg_buffer = (void *)(uintptr_t)bb[peer]; r.buff_size = mbsz; r.mem_hndl = bh[peer]; r.mbox_offset = 0;
        GNI_OK(GNI_SmsgInit(t.eps[peer], &l, &r));
    }
    volatile uint64_t *flag = (volatile uint64_t *)win;
    gni_post_descriptor_t d;
    int wrong = 0, threaded = rounds / 2;
    pthread_t th;
    if (me == 0) CHECK(pthread_create(&th, NULL, poller, NULL) == 0);
    dt_barrier();

    for (int i = 1; i <= rounds; i++) {
        *(uint64_t *)(src + 64) = (uint64_t)i;
        if (me == 0) {
            if (rdma) {
                dt_desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, src + 64, smh, base[1], mh[1], 8);
            } else if (amo) {
                dt_desc(&d, GNI_POST_AMO, GNI_CQMODE_GLOBAL_EVENT, src + 128, smh, base[1], mh[1], 8);
                d.amo_cmd = GNI_FMA_ATOMIC_FADD;
                d.first_operand = 1;
            } else {
                dt_desc(&d, GNI_POST_FMA_PUT_W_SYNCFLAG, GNI_CQMODE_GLOBAL_EVENT, src + 64, smh, base[1] + 64, mh[1], 8);
                d.sync_flag_addr = base[1];
                d.sync_flag_value = (uint64_t)i;
            }
            if (i > threaded) round_no = i;
            if (smsg) smsg_send(t.eps[1], (uint64_t)i, LOCAL_DATA);
            else GNI_OK(rdma ? GNI_PostRdma(t.eps[1], &d) : GNI_PostFma(t.eps[1], &d));
            if (i > threaded) {
                unsigned spins = 0;
                while (__atomic_load_n(&poller_seen, __ATOMIC_ACQUIRE) != i) causal_relax(&spins);
            } else {
                gni_cq_entry_t ev;
                uint64_t first = next_event(&ev);
                if (first != LOCAL_DATA) {
                    if (wrong++ < 5) fprintf(stderr, "data_causal: round %d: the reaction's event (data %#llx) came before the put's completion\n", i, (unsigned long long)first);
                }
                if (first == LOCAL_DATA) take_back(ev);
                uint64_t second = next_event(&ev);
                if (second == LOCAL_DATA) take_back(ev);
                else if (second != REMOTE_DATA) SN_FAIL("round %d: event data %#llx", i, (unsigned long long)second);
            }
            unsigned spins = 0;
            if (smsg) smsg_take(t.eps[1], (uint64_t)i);
            else while (*flag != (uint64_t)i) causal_relax(&spins);
        } else if (smsg) {
            smsg_take(t.eps[0], (uint64_t)i);
            smsg_send(t.eps[0], (uint64_t)i, 0);
            gni_cq_entry_t ev;
            while (GNI_CqGetEvent(t.cq, &ev) == GNI_RC_SUCCESS) {}
        } else {
            unsigned spins = 0;
            while (*flag != (uint64_t)i) causal_relax(&spins);
            dt_desc(&d, GNI_POST_FMA_PUT_W_SYNCFLAG, GNI_CQMODE_REMOTE_EVENT, src + 64, smh, base[0] + 64, mh[0], 8);
            d.sync_flag_addr = base[0];
            d.sync_flag_value = (uint64_t)i;
            GNI_OK(GNI_PostFma(t.eps[0], &d));
        }
    }
    if (me == 0) {
        round_no = -1;
        CHECK(pthread_join(th, NULL) == 0);
        wrong += poller_errors;
        if (wrong) SN_FAIL("%d of %d rounds saw the reaction first (%d of them on the polling thread)", wrong, rounds, poller_errors);
        printf("data_causal: %d rounds, the completion first in every one\n", rounds);
    }
    dt_barrier();
    GNI_OK(GNI_MemDeregister(t.nic, &wmh));
    if (smsg) GNI_OK(GNI_MemDeregister(t.nic, &mbh));
    GNI_OK(GNI_MemDeregister(t.nic, &smh));
    printf("data_causal: rank %d ok\n", me);
    gnit_fini(&t);
    return 0;
}
