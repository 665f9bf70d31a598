/* uGNI core: completion queues.  Each rank registers a buffer whose dst CQ holds 4
 * entries (BLOCKING, with an event handler); its left neighbour writes 6 CQ entries into
 * it with GNI_PostCqWrite.  The target then sees the overrun exactly as documented in
 * ugni-sys/src/cq.rs: TestEvent ERROR_RESOURCE (consumes nothing), GetEvent
 * ERROR_RESOURCE once, then the 4 queued entries in order (the first flagged
 * GNI_CQ_OVERRUN), then NOT_DONE; the handler ran exactly once per delivered entry.
 * Also: GetCompleted returns the very descriptor (a second call: NULL +
 * DESCRIPTOR_ERROR), WaitEvent timeout / forever / non-blocking CQ, VectorWaitEvent and
 * VectorMonitor, CqDestroy refused while an EP or a registration uses the CQ,
 * CqErrorStr / CqErrorRecoverable on error entries. */
#include "gnitest.h"
#include <sys/time.h>
#include <unistd.h>

static int handled;
static gni_cq_entry_t last_handled;
static void handler(gni_cq_entry_t *e, void *ctx)
{
    CHECK(ctx == &handled);
    handled++;
    last_handled = *e;
}

static double now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return tv.tv_sec * 1e3 + tv.tv_usec / 1e3;
}

static void cqwrite(gnit_t *t, int peer, gni_mem_handle_t mh, uint64_t value)
{
    gni_post_descriptor_t d;
    memset(&d, 0, sizeof d);
    d.type = GNI_POST_CQWRITE;
    d.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
    d.dlvr_mode = GNI_DLVMODE_PERFORMANCE;
    d.remote_mem_hndl = mh;
    d.cqwrite_value = value;
    GNI_OK(GNI_PostCqWrite(t->eps[peer], &d));
    gni_cq_entry_t ev = gnit_wait(t->cq, GNI_RC_SUCCESS);
    gni_post_descriptor_t *got = NULL;
    GNI_OK(GNI_GetCompleted(t->cq, ev, &got));
    CHECK(got == &d);
    CHECK_EQ(got->status, 0);
    got = (gni_post_descriptor_t *)1;
    GNI_EXPECT(GNI_RC_DESCRIPTOR_ERROR, GNI_GetCompleted(t->cq, ev, &got));
    CHECK(got == NULL);
}

int main(void)
{
    gnit_t t;
    gnit_init(&t, 64);
    int me = t.rank, n = t.size, right = (me + 1) % n;
    gni_cq_handle_t dst, nb, other;
    static uint64_t buf[512];
    gni_mem_handle_t mh, *hs = calloc(n, sizeof *hs);
    uint64_t *bases = calloc(n, sizeof *bases);
    gni_cq_entry_t ev;

    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqCreate(t.nic, 0, 0, GNI_CQ_BLOCKING, NULL, NULL, &dst));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqCreate(t.nic, 4, 0, GNI_CQ_EMULATED | GNI_CQ_BLOCKING, NULL, NULL, &dst));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqCreate(t.nic, 4, 0, 0x100, NULL, NULL, &dst));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqCreate(t.nic, 4, 0, GNI_CQ_BLOCKING, NULL, NULL, NULL));
    GNI_OK(GNI_CqCreate(t.nic, 4, 0, GNI_CQ_BLOCKING, handler, &handled, &dst));
    GNI_OK(GNI_CqCreate(t.nic, 8, 0, GNI_CQ_NOBLOCK, NULL, NULL, &nb));
    GNI_OK(GNI_CqCreate(t.nic, 8, 3, GNI_CQ_BLOCKING, NULL, NULL, &other));
    GNI_OK(GNI_MemRegister(t.nic, (uint64_t)(uintptr_t)buf, sizeof buf, dst, GNI_MEM_READWRITE, -1, &mh));
    gnit_exchange_mem(&t, buf, mh, hs, bases);

    /* Empty queues. */
    GNI_EXPECT(GNI_RC_NOT_DONE, GNI_CqTestEvent(dst));
    GNI_EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(dst, &ev));
    GNI_EXPECT(GNI_RC_ERROR_RESOURCE, GNI_CqWaitEvent(nb, 10, &ev));
    GNI_EXPECT(GNI_RC_ERROR_RESOURCE, GNI_CqInterruptMask(nb));
    GNI_OK(GNI_CqInterruptMask(dst));
    GNI_OK(GNI_CqInterruptUnmask(dst));
    double t0 = now_ms();
    GNI_EXPECT(GNI_RC_TIMEOUT, GNI_CqWaitEvent(dst, 200, &ev));
    double el = now_ms() - t0;
    CHECK(el >= 195 && el < 5000);
    gni_cq_handle_t v2[2] = { other, nb };
    uint32_t which = 99;
    GNI_EXPECT(GNI_RC_ERROR_RESOURCE, GNI_CqVectorWaitEvent(v2, 2, 10, &ev, &which));
    v2[1] = dst;
    t0 = now_ms();
    GNI_EXPECT(GNI_RC_TIMEOUT, GNI_CqVectorWaitEvent(v2, 2, 100, &ev, &which));
    CHECK(now_ms() - t0 >= 95);
    GNI_EXPECT(GNI_RC_TIMEOUT, GNI_CqVectorMonitor(v2, 2, 50, &which));
    CHECK_EQ(handled, 0);

    /* CqDestroy refused while used. */
    GNI_EXPECT(GNI_RC_ERROR_RESOURCE, GNI_CqDestroy(dst));   /* registration */
    GNI_EXPECT(GNI_RC_ERROR_RESOURCE, GNI_CqDestroy(t.cq));  /* endpoints */
    CHECK(PMI_Barrier() == PMI_SUCCESS);

    /* Overrun: 6 writes into a 4-entry CQ. */
    for (int i = 0; i < 6; i++) cqwrite(&t, right, hs[right], ((uint64_t)me << 32) | (100 + i));
    CHECK(PMI_Barrier() == PMI_SUCCESS);
    int left = (me + n - 1) % n;
    GNI_EXPECT(GNI_RC_ERROR_RESOURCE, GNI_CqTestEvent(dst));
    GNI_EXPECT(GNI_RC_ERROR_RESOURCE, GNI_CqTestEvent(dst));
    GNI_EXPECT(GNI_RC_ERROR_RESOURCE, GNI_CqGetEvent(dst, &ev));
    CHECK_EQ(handled, 0);
    for (int i = 0; i < 4; i++) {
        if (i % 2) GNI_OK(GNI_CqWaitEvent(dst, (uint64_t)-1, &ev));
        else GNI_OK(GNI_CqGetEvent(dst, &ev));
        CHECK_EQ(GNI_CQ_GET_DATA(ev), ((uint64_t)left << 32) | (100 + i));
        CHECK_EQ(!!GNI_CQ_OVERRUN(ev), i == 0);
        CHECK_EQ(handled, i + 1);
        CHECK(last_handled == ev);
    }
    GNI_EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(dst, &ev));
    GNI_EXPECT(GNI_RC_NOT_DONE, GNI_CqTestEvent(dst));
    CHECK_EQ(handled, 4);
    CHECK(PMI_Barrier() == PMI_SUCCESS);

    /* Vector calls see the event on the second CQ. */
    cqwrite(&t, right, hs[right], 4242);
    CHECK(PMI_Barrier() == PMI_SUCCESS);
    GNI_OK(GNI_CqVectorMonitor(v2, 2, 10000, &which));
    CHECK_EQ(which, 1);
    GNI_OK(GNI_CqTestEvent(dst));
    which = 99;
    GNI_OK(GNI_CqVectorWaitEvent(v2, 2, 10000, &ev, &which));
    CHECK_EQ(which, 1);
    CHECK_EQ(GNI_CQ_GET_DATA(ev), 4242);
    CHECK_EQ(handled, 5);
    CHECK(PMI_Barrier() == PMI_SUCCESS);

    /* A WaitEvent blocked forever is woken by a write arriving 200 ms later. */
    if (me == 0) {
        CHECK(PMI_Barrier() == PMI_SUCCESS);
        t0 = now_ms();
        GNI_OK(GNI_CqWaitEvent(dst, (uint64_t)-1, &ev));
        CHECK(now_ms() - t0 >= 150);
        CHECK_EQ(GNI_CQ_GET_DATA(ev), 777);
    } else {
        CHECK(PMI_Barrier() == PMI_SUCCESS);
        if (right == 0) {
            usleep(200000);
            cqwrite(&t, 0, hs[0], 777);
        }
    }
    CHECK(PMI_Barrier() == PMI_SUCCESS);

    /* Error entries: decoding (the status field is ours: bits 59..62). */
    gni_cq_entry_t bad = (gni_cq_entry_t)1 << 59; /* out of bounds */
    char text[256];
    GNI_EXPECT(GNI_RC_SIZE_ERROR, GNI_CqErrorStr(bad, text, 5));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqErrorStr(bad, NULL, 100));
    GNI_OK(GNI_CqErrorStr(bad, text, sizeof text));
    CHECK(strstr(text, "outside the registered") != NULL);
    uint32_t rec = 7;
    GNI_OK(GNI_CqErrorRecoverable(bad, &rec));
    CHECK_EQ(rec, 0);
    GNI_OK(GNI_CqErrorRecoverable((gni_cq_entry_t)6 << 59, &rec)); /* no such instance */
    CHECK_EQ(rec, 1);
    GNI_EXPECT(GNI_RC_INVALID_STATE, GNI_CqErrorRecoverable((gni_cq_entry_t)15 << 59, &rec));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqErrorRecoverable(bad, NULL));
    gni_post_descriptor_t *pd = (gni_post_descriptor_t *)1;
    GNI_EXPECT(GNI_RC_DESCRIPTOR_ERROR, GNI_GetCompleted(t.cq, bad, &pd));
    CHECK(pd == NULL);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_GetCompleted(t.cq, bad, NULL));

    CHECK(PMI_Barrier() == PMI_SUCCESS);
    GNI_OK(GNI_MemDeregister(t.nic, &mh));
    GNI_OK(GNI_CqDestroy(dst));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqDestroy(dst));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqGetEvent(dst, &ev));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqTestEvent(dst));
    GNI_OK(GNI_CqDestroy(nb));
    GNI_OK(GNI_CqDestroy(other));
    gnit_fini(&t);
    printf("core_cq: rank %d ok\n", me);
    return 0;
}
