/* Event routing: REMOTE events at the target registration's dst CQ carry the initiator's
 * EpSetEventData remote value (GNI_CQ_GET_INST_ID); every event at the initiator (GLOBAL,
 * and LOCAL on RDMA) carries the local value; a descriptor's src_cq_hndl overrides the
 * EP's CQ; several outstanding posts each come back with their own descriptor, also when
 * their events were reaped long before (the CQ's ring lapped several times meanwhile) and
 * after an overrun (ERROR_RESOURCE once, the queued events flagged and each giving back its
 * descriptor, the dropped ones never);
 * GNI_PostCqWrite delivers its 48-bit value to the dst CQ of the remote registration. */
#include "data_util.h"

int main(void)
{
    gnit_t t;
    gnit_init(&t, 256);
    int n = t.size, me = t.rank;
    gni_cq_handle_t rcq, alt;
    GNI_OK(GNI_CqCreate(t.nic, 1024, 0, GNI_CQ_BLOCKING, NULL, NULL, &rcq));
    GNI_OK(GNI_CqCreate(t.nic, 16, 0, GNI_CQ_BLOCKING, NULL, NULL, &alt));
    uint64_t *win = dt_alloc(1 << 16), *loc = dt_alloc(1 << 16);
    gni_mem_handle_t wmh = dt_reg(&t, win, 1 << 16, rcq, GNI_MEM_READWRITE);
    gni_mem_handle_t lmh = dt_reg(&t, loc, 1 << 16, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t *mh = calloc(n, sizeof(*mh));
    uint64_t *base = calloc(n, sizeof(*base));
    gnit_exchange_mem(&t, win, wmh, mh, base);
    for (int r = 0; r < n; r++) GNI_OK(GNI_EpSetEventData(t.eps[r], 1000 + me, 5000 + me));
    gni_post_descriptor_t d[8];
    gni_cq_entry_t ev;

    /* Every rank PUTs one word into rank 0 with GLOBAL|REMOTE, then a GET with REMOTE. */
    for (int i = 0; i < 8; i++) loc[i] = 0x1000 + me * 8 + i;
    dt_desc(&d[0], GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT, loc, lmh,
            base[0] + 8 * me, mh[0], 8);
    GNI_OK(GNI_PostFma(t.eps[0], &d[0]));
    ev = dt_complete(t.cq, &d[0], GNI_RC_SUCCESS);
    CHECK_EQ(GNI_CQ_GET_INST_ID(ev), 1000 + me);
    dt_desc(&d[1], GNI_POST_RDMA_GET, GNI_CQMODE_LOCAL_EVENT | GNI_CQMODE_REMOTE_EVENT, loc + 16, lmh,
            base[0] + 8 * me, mh[0], 8);
    GNI_OK(GNI_PostRdma(t.eps[0], &d[1]));
    ev = dt_complete(t.cq, &d[1], GNI_RC_SUCCESS);
    CHECK_EQ(GNI_CQ_GET_INST_ID(ev), 1000 + me);
    CHECK_EQ(loc[16], 0x1000 + me * 8);
    if (me == 0) {
        int seen[2][64] = {{0}};
        for (int i = 0; i < 2 * n; i++) {
            ev = gnit_wait(rcq, GNI_RC_SUCCESS);
            CHECK_EQ(GNI_CQ_GET_TYPE(ev), GNI_CQ_EVENT_TYPE_POST);
            uint64_t id = GNI_CQ_GET_INST_ID(ev);
            CHECK(id >= 5000 && id < 5000 + (uint64_t)n);
            int k = seen[0][id - 5000] ? 1 : 0;
            seen[k][id - 5000]++;
            /* the data is visible when the event is */
            CHECK_EQ(win[id - 5000], 0x1000 + (id - 5000) * 8);
        }
        for (int r = 0; r < n; r++) CHECK(seen[0][r] == 1 && seen[1][r] == 1);
        GNI_EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(rcq, &ev));
    }
    dt_barrier();

    /* A registration without a dst CQ gets no REMOTE event; the initiator still completes. */
    int right = (me + 1) % n;
    dt_desc(&d[0], GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT, loc, lmh, 0, lmh, 8);
    /* (own loc registration has no CQ: post to ourselves) */
    d[0].remote_addr = (uint64_t)(uintptr_t)(loc + 100);
    dt_fma(&t, me, &d[0]);
    CHECK_EQ(loc[100], loc[0]);

    /* src_cq_hndl overrides the EP's CQ. */
    dt_desc(&d[0], GNI_POST_FMA_GET, GNI_CQMODE_GLOBAL_EVENT, loc + 32, lmh, base[right], mh[right], 8);
    d[0].src_cq_hndl = alt;
    GNI_OK(GNI_PostFma(t.eps[right], &d[0]));
    dt_complete(alt, &d[0], GNI_RC_SUCCESS);
    GNI_EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(t.cq, &ev));

    /* Eight outstanding posts; each event gives back its own descriptor. */
    for (int i = 0; i < 8; i++) {
        dt_desc(&d[i], i & 1 ? GNI_POST_FMA_GET : GNI_POST_RDMA_GET, GNI_CQMODE_GLOBAL_EVENT, loc + 200 + 2 * i, lmh,
                base[right] + 8 * (i % n), mh[right], 8);
        GNI_OK(i & 1 ? GNI_PostFma(t.eps[right], &d[i]) : GNI_PostRdma(t.eps[right], &d[i]));
    }
    for (int i = 0; i < 8; i++) dt_complete(t.cq, &d[i], GNI_RC_SUCCESS);
    dt_barrier();

    /* A CQ of 4 entries: 5 laps of 4 puts, each event reaped at once but its descriptor
     * taken back only after all 20 (in reverse order); then an overrun. */
    {
        gni_cq_handle_t small;
        gni_ep_handle_t sep;
        gni_post_descriptor_t dl[20], *got;
        gni_cq_entry_t evs[20];
        GNI_OK(GNI_CqCreate(t.nic, 4, 0, GNI_CQ_BLOCKING, NULL, NULL, &small));
        GNI_OK(GNI_EpCreate(t.nic, small, &sep));
        GNI_OK(GNI_EpBind(sep, t.addrs[right], right));
        for (int k = 0; k < 20; k++) {
            dt_desc(&dl[k], GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, loc + (k % 8), lmh, base[right] + 1024 + 8 * k, mh[right], 8);
            GNI_OK(GNI_PostFma(sep, &dl[k]));
            if (k % 4 == 3)
                for (int j = k - 3; j <= k; j++) GNI_OK(GNI_CqGetEvent(small, &evs[j]));
        }
        GNI_EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(small, &ev));
        for (int k = 19; k >= 0; k--) {
            GNI_OK(GNI_GetCompleted(small, evs[k], &got));
            CHECK(got == &dl[k]);
        }
        GNI_EXPECT(GNI_RC_DESCRIPTOR_ERROR, GNI_GetCompleted(small, evs[7], &got));
        CHECK(got == NULL);
        /* Six posts into four entries: the last two events are lost. */
        for (int k = 0; k < 6; k++) GNI_OK(GNI_PostFma(sep, &dl[k]));
        GNI_EXPECT(GNI_RC_ERROR_RESOURCE, GNI_CqGetEvent(small, &ev));
        for (int k = 0; k < 4; k++) {
            GNI_OK(GNI_CqGetEvent(small, &ev));
            CHECK_EQ(!!GNI_CQ_OVERRUN(ev), k == 0);
            GNI_OK(GNI_GetCompleted(small, ev, &got));
            CHECK(got == &dl[k]);
        }
        GNI_EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(small, &ev));
        GNI_OK(GNI_PostFma(sep, &dl[6]));   /* and the CQ works on */
        dt_complete(small, &dl[6], GNI_RC_SUCCESS);
        GNI_OK(GNI_EpUnbind(sep));
        GNI_OK(GNI_EpDestroy(sep));
        GNI_OK(GNI_CqDestroy(small));
    }
    dt_barrier();

    /* CQ write: every rank writes a 48-bit value into rank 0's window CQ. */
    dt_desc(&d[0], GNI_POST_CQWRITE, GNI_CQMODE_GLOBAL_EVENT, NULL, lmh, 0, mh[0], 0);
    d[0].cqwrite_value = 0xffff000000000000ull | (0xABCDEF000000ull + (uint64_t)me);
    GNI_OK(GNI_PostCqWrite(t.eps[0], &d[0]));
    dt_complete(t.cq, &d[0], GNI_RC_SUCCESS);
    if (me == 0) {
        uint64_t seen = 0;
        for (int i = 0; i < n; i++) {
            ev = gnit_wait(rcq, GNI_RC_SUCCESS);
            uint64_t v = GNI_CQ_GET_DATA(ev);
            CHECK((v & ~0xffull) == 0xABCDEF000000ull);
            seen |= 1ull << (v & 0xff);
        }
        CHECK_EQ(seen, n >= 64 ? ~0ull : (1ull << n) - 1);
    }
    dt_barrier();
    GNI_OK(GNI_MemDeregister(t.nic, &wmh));
    GNI_OK(GNI_MemDeregister(t.nic, &lmh));
    GNI_OK(GNI_CqDestroy(rcq));
    GNI_OK(GNI_CqDestroy(alt));
    gnit_fini(&t);
    printf("data_events: rank %d ok\n", me);
    return 0;
}
