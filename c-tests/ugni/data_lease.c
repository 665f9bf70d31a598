/* A target that changes how it waits, round after round: it polls its destination CQ
 * for a REMOTE event (GNI_CqGetEvent), then spins on a flag word of its memory with no
 * uGNI call at all, then sleeps in GNI_CqWaitEvent.  Across machines the first mode
 * lets the polling thread serve the network itself for a while (a lease, see
 * fabric/src/net.rs, Engine::lease); the second must still get the put landed (the
 * progress thread takes over when the lease runs out), the third must be woken (a
 * thread that sleeps hands the network back at once).  Every wait has a 10 s deadline:
 * a wait that the engine leaves unserved fails the test instead of hanging it.  The
 * slowest wait of each mode is printed (information, not a pass criterion).
 *
 * Rank 0 is the target, rank 1 the initiator; other ranks only take part in barriers.
 * Usage: data_lease [ROUNDS] (default 40). */
#include "data_util.h"

#define DEADLINE_S 10.0

static gni_cq_entry_t poll_event(gni_cq_handle_t cq, double *slowest)
{
    gni_cq_entry_t ev = 0;
    gni_return_t rc;
    double t0 = dt_now();
    while ((rc = GNI_CqGetEvent(cq, &ev)) == GNI_RC_NOT_DONE) {
        if (dt_now() - t0 > DEADLINE_S) SN_FAIL("no REMOTE event polled within %.0f s", DEADLINE_S);
    }
    if (rc != GNI_RC_SUCCESS) SN_FAIL("GNI_CqGetEvent returned %d (%s)", (int)rc, gnit_rc(rc));
    if (dt_now() - t0 > *slowest) *slowest = dt_now() - t0;
    return ev;
}

static double spin_total;

static void spin_for(volatile uint64_t *w, uint64_t v, double *slowest)
{
    double t0 = dt_now();
    unsigned long spins = 0;
    while (*w != v) {
        if ((++spins & 1023) == 0 && dt_now() - t0 > DEADLINE_S)
            SN_FAIL("flag %llu not seen within %.0f s (it holds %llu)", (unsigned long long)v, DEADLINE_S,
                    (unsigned long long)*w);
    }
    if (dt_now() - t0 > *slowest) *slowest = dt_now() - t0;
    spin_total += dt_now() - t0;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 40;
    gnit_t t;
    gnit_init(&t, 64);
    int n = t.size, me = t.rank;
    if (n < 2) SKIP("needs 2 ranks");
    gni_cq_handle_t rcq;
    GNI_OK(GNI_CqCreate(t.nic, 1024, 0, GNI_CQ_BLOCKING, NULL, NULL, &rcq));
    uint8_t *win = dt_alloc(1 << 16), *src = dt_alloc(1 << 16);
    gni_mem_handle_t wmh = dt_reg(&t, win, 1 << 16, rcq, GNI_MEM_READWRITE);
    gni_mem_handle_t smh = dt_reg(&t, src, 1 << 16, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t *mh = calloc(n, sizeof(*mh));
    uint64_t *base = calloc(n, sizeof(*base));
    gnit_exchange_mem(&t, win, wmh, mh, base);
    volatile uint64_t *flag = (volatile uint64_t *)(win + 64);   /* rank 0's spin word */
    volatile uint64_t *go = (volatile uint64_t *)(win + 128);    /* rank 1's spin word */
    double slow_poll = 0, slow_spin = 0, slow_sleep = 0, slow_go = 0;
    gni_post_descriptor_t d;
    dt_barrier();

    for (int r = 1; r <= rounds && me < 2; r++) {
        if (me == 1) {
            /* 1: a put with a REMOTE event (rank 0 polls for it) */
            *(uint64_t *)src = (uint64_t)r;
            dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT, src, smh,
                    base[0] + 1024, mh[0], 8);
            dt_fma(&t, 0, &d);
            /* 2: the flag (rank 0 spins on it without calling uGNI) */
            dt_desc(&d, GNI_POST_FMA_PUT_W_SYNCFLAG, GNI_CQMODE_GLOBAL_EVENT, src, smh, base[0] + 2048, mh[0], 8);
            d.sync_flag_addr = base[0] + 64;
            d.sync_flag_value = (uint64_t)r;
            dt_fma(&t, 0, &d);
            /* 3: another REMOTE event (rank 0 sleeps in GNI_CqWaitEvent for it) */
            dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT, src, smh,
                    base[0] + 3072, mh[0], 8);
            dt_fma(&t, 0, &d);
            /* rank 0 answers by a flag put into our memory */
            spin_for(go, (uint64_t)r, &slow_go);
        } else {
            gni_cq_entry_t ev = poll_event(rcq, &slow_poll);
            CHECK(GNI_CQ_GET_TYPE(ev) == GNI_CQ_EVENT_TYPE_POST);
            CHECK_EQ(*(volatile uint64_t *)(win + 1024), (uint64_t)r);
            spin_for(flag, (uint64_t)r, &slow_spin);
            CHECK_EQ(*(volatile uint64_t *)(win + 2048), (uint64_t)r);
            double t0 = dt_now();
            GNI_OK(GNI_CqWaitEvent(rcq, (uint64_t)(DEADLINE_S * 1000), &ev));
            if (dt_now() - t0 > slow_sleep) slow_sleep = dt_now() - t0;
            CHECK_EQ(*(volatile uint64_t *)(win + 3072), (uint64_t)r);
            *(uint64_t *)src = (uint64_t)r;
            dt_desc(&d, GNI_POST_FMA_PUT_W_SYNCFLAG, GNI_CQMODE_GLOBAL_EVENT, src + 8, smh, base[1] + 256, mh[1], 8);
            d.sync_flag_addr = base[1] + 128;
            d.sync_flag_value = (uint64_t)r;
            dt_fma(&t, 1, &d);
        }
    }
    dt_barrier();
    if (me == 0)
        printf("data_lease: %d rounds; slowest waits: polled event %.0f us, memory spin %.0f us (mean %.0f us), "
               "CqWaitEvent %.0f us\n", rounds, slow_poll * 1e6, slow_spin * 1e6, spin_total / rounds * 1e6, slow_sleep * 1e6);
    if (me == 1) printf("data_lease: initiator's slowest memory spin %.0f us\n", slow_go * 1e6);
    GNI_OK(GNI_MemDeregister(t.nic, &wmh));
    GNI_OK(GNI_MemDeregister(t.nic, &smh));
    GNI_OK(GNI_CqDestroy(rcq));
    gnit_fini(&t);
    printf("data_lease: rank %d ok\n", me);
    return 0;
}
