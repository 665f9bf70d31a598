/* Bad input to the collective engine: every call gets its documented code and changes
 * nothing; GNI_CeCheckResult takes any length (0, 1, sizeof: what programs pass) (a VCE refused a configuration can still be configured; a refused post leaves
 * the result buffer and the CQ untouched).  Also: a VCE destroyed while a contributor's
 * endpoint still names it gives that contributor an error event, not a hang.
 * Runs on any number of ranks (each rank works on its own VCEs). */
#include "gnitest.h"
#include <sched.h>

static gnit_t t;

static void ce_post(gni_ep_handle_t ep, gni_post_descriptor_t *d, void *res, gni_mem_handle_t mh, uint32_t cmd)
{
    memset(d, 0, sizeof(*d));
    d->type = GNI_POST_CE;
    d->cq_mode = GNI_CQMODE_GLOBAL_EVENT;
    d->local_addr = (uint64_t)(uintptr_t)res;
    d->local_mem_hndl = mh;
    d->ce_cmd = cmd;
    d->first_operand = 5;
}

int main(void)
{
    gnit_init(&t, 64);
    gni_ce_handle_t ce, ce2;
    uint32_t id = 0, id2 = 0;
    gni_cq_handle_t cq2;
    GNI_OK(GNI_CqCreate(t.nic, 16, 0, GNI_CQ_NOBLOCK, NULL, NULL, &cq2));

    /* Create / GetId. */
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeCreate(t.nic, NULL));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeCreate(NULL, &ce));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeCreate((gni_nic_handle_t)&t, &ce));
    GNI_OK(GNI_CeCreate(t.nic, &ce));
    GNI_OK(GNI_CeCreate(t.nic, &ce2));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeGetId(ce, NULL));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeGetId(NULL, &id));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeGetId((gni_ce_handle_t)&t, &id));
    GNI_OK(GNI_CeGetId(ce, &id));
    GNI_OK(GNI_CeGetId(ce2, &id2));
    CHECK(id != id2);

    /* EpSetCeAttr. */
    gni_ep_handle_t me, me2, plain;
    GNI_OK(GNI_EpCreate(t.nic, t.cq, &me));
    GNI_OK(GNI_EpBind(me, t.nic_addr, GNIT_RID(t.rank, t.rank)));
    GNI_OK(GNI_EpCreate(t.nic, t.cq, &me2));
    GNI_OK(GNI_EpBind(me2, t.nic_addr, 4242));
    GNI_OK(GNI_EpCreate(t.nic, t.cq, &plain));
    GNI_OK(GNI_EpBind(plain, t.nic_addr, 4343));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpSetCeAttr(NULL, id, 0, GNI_CE_CHILD_PE));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpSetCeAttr(me, id, 0, (gni_ce_child_t)3));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpSetCeAttr(me, id, GNI_CE_MAX_CHILDREN, GNI_CE_CHILD_PE));

    /* Configure: nothing changes on refusal. */
    GNI_OK(GNI_EpSetCeAttr(me, (uint32_t)-1, 0, GNI_CE_CHILD_PE));
    GNI_OK(GNI_EpSetCeAttr(me2, (uint32_t)-1, 0, GNI_CE_CHILD_PE));
    gni_ep_handle_t two[2] = { me, me2 }, bad[1] = { (gni_ep_handle_t)&t }, none[1] = { plain };
    gni_ep_handle_t many[GNI_CE_MAX_CHILDREN + 1];
    for (int i = 0; i <= GNI_CE_MAX_CHILDREN; i++) many[i] = me;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeConfigure(NULL, two, 1, NULL, NULL, 0));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeConfigure(ce, NULL, 1, NULL, NULL, 0));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeConfigure(ce, two, 0, NULL, NULL, 0));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeConfigure(ce, many, GNI_CE_MAX_CHILDREN + 1, NULL, NULL, 0));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeConfigure(ce, bad, 1, NULL, NULL, 0));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeConfigure(ce, none, 1, NULL, NULL, 0));   /* no CE attributes */
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeConfigure(ce, two, 2, NULL, NULL, 0));    /* index 0 twice */
    GNI_OK(GNI_CeConfigure(ce, &me2, 1, NULL, NULL, 0));    /* the refusals changed nothing */
    GNI_OK(GNI_EpSetCeAttr(me2, (uint32_t)-1, 5, GNI_CE_CHILD_PE));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeConfigure(ce2, two, 2, NULL, NULL, 0));   /* index 5 of 2 */
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeConfigure(ce2, &me, 1, NULL, NULL, GNI_CE_MODE_CQE_ONCOMP));  /* no CQ */
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeConfigure(ce2, &me, 1, NULL, cq2, GNI_CE_MODE_ROUND_UP | GNI_CE_MODE_ROUND_DOWN));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeConfigure(ce2, &me, 1, NULL, cq2, 0x8000));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeConfigure(ce2, &me, 1, (gni_ep_handle_t)&t, NULL, 0));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeConfigure(ce2, &me, 1, plain, NULL, 0));   /* parent without VCE attributes */
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeConfigure(ce2, &me, 1, NULL, (gni_cq_handle_t)&t, GNI_CE_MODE_CQE_ONERR));
    /* Configured once only. */
    GNI_EXPECT(GNI_RC_INVALID_STATE, GNI_CeConfigure(ce, &me, 1, NULL, NULL, 0));
    GNI_OK(GNI_CeConfigure(ce2, &me, 1, NULL, cq2, GNI_CE_MODE_CQE_ONCOMP | GNI_CE_MODE_RC_ADAPT));

    /* Posts: join ce2 through `me` (index 0). */
    GNI_OK(GNI_EpSetCeAttr(me, id2, 0, GNI_CE_CHILD_PE));
    uint64_t *buf = aligned_alloc(64, 4096), *ro = aligned_alloc(64, 4096);
    CHECK(buf && ro);
    gni_mem_handle_t mh, romh;
    GNI_OK(GNI_MemRegister(t.nic, (uint64_t)(uintptr_t)buf, 4096, NULL, GNI_MEM_READWRITE, -1, &mh));
    GNI_OK(GNI_MemRegister(t.nic, (uint64_t)(uintptr_t)ro, 4096, NULL, GNI_MEM_READ_ONLY, -1, &romh));
    for (int i = 0; i < 512; i++) buf[i] = 0x1111111111111111ull * (i % 15);
    uint64_t snap[512];
    memcpy(snap, buf, sizeof(snap));
    gni_post_descriptor_t d;
    ce_post(me, &d, buf + 8, mh, 0x06);            /* not a CE command */
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(me, &d));
    ce_post(me, &d, buf + 8, mh, GNI_FMA_CE_IADD);
    d.ce_mode = 0x40;                              /* unknown mode bit */
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(me, &d));
    ce_post(me, &d, (char *)(buf + 8) + 4, mh, GNI_FMA_CE_IADD);
    GNI_EXPECT(GNI_RC_ALIGNMENT_ERROR, GNI_PostFma(me, &d));
    ce_post(me, &d, buf + 510, mh, GNI_FMA_CE_IADD);   /* 24 bytes past the registration */
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(me, &d));
    ce_post(me, &d, buf + 8, (gni_mem_handle_t){ 0, 0 }, GNI_FMA_CE_IADD);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(me, &d));
    ce_post(me, &d, ro + 8, romh, GNI_FMA_CE_IADD);
    GNI_EXPECT(GNI_RC_PERMISSION_ERROR, GNI_PostFma(me, &d));
    ce_post(plain, &d, buf + 8, mh, GNI_FMA_CE_IADD); /* endpoint without CE attributes */
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(plain, &d));
    ce_post(me, &d, buf + 8, mh, GNI_FMA_CE_IADD);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostRdma(me, &d));   /* CE posts are FMA posts */
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(me, NULL));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(NULL, &d));
    CHECK(memcmp(snap, buf, sizeof(snap)) == 0);
    gni_cq_entry_t ev;
    GNI_EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(t.cq, &ev));

    /* CheckResult: `length` is not a byte count (programs pass 1, 0 or the size), so only
     * a NULL or misaligned result is refused, whatever the length. */
    gni_ce_result_t *r = (gni_ce_result_t *)(buf + 8);
    const uint32_t lengths[5] = { 0, 1, sizeof(*r), sizeof(*r) - 1, 1000 };
    for (int i = 0; i < 5; i++) {
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeCheckResult(NULL, lengths[i]));
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeCheckResult((gni_ce_result_t *)((char *)r + 4), lengths[i]));
    }
    CHECK_EQ(gni_ce_res_status_ok(NULL), 0);
    CHECK_EQ(gni_ce_res_get_red_id(NULL), 0);

    /* A good post on a one-leaf VCE completes at once. */
    ce_post(me, &d, r, mh, GNI_FMA_CE_IADD);
    d.ce_red_id = 0x123456789ull;
    GNI_OK(GNI_PostFma(me, &d));
    for (int i = 0; i < 5; i++) GNI_OK(GNI_CeCheckResult(r, lengths[i]));
    CHECK_EQ(r->result1, 5);
    CHECK_EQ(gni_ce_res_get_red_id(r), 0x23456789);
    ev = gnit_wait(t.cq, GNI_RC_SUCCESS);
    gni_post_descriptor_t *done;
    GNI_OK(GNI_GetCompleted(t.cq, ev, &done));
    CHECK(done == &d);
    GNI_OK(GNI_CqGetEvent(cq2, &ev));
    CHECK_EQ(GNI_CQ_GET_CE_ID(ev), id2);

    /* A segmented registration as the result buffer: local_addr is an offset, and the
     * result must lie in one segment (not across the boundary, not past the end). */
    uint64_t *s1 = aligned_alloc(4096, 4096), *s2 = aligned_alloc(4096, 4096);
    CHECK(s1 && s2);
    memset(s2, 0x5a, 4096);
    gni_mem_segment_t sg[2] = { { (uint64_t)(uintptr_t)s1, 4096 }, { (uint64_t)(uintptr_t)s2, 4096 } };
    gni_mem_handle_t smh;
    GNI_OK(GNI_MemRegisterSegments(t.nic, sg, 2, NULL, GNI_MEM_READWRITE, -1, &smh));
    ce_post(me, &d, (void *)(uintptr_t)(4096 - 16), smh, GNI_FMA_CE_IADD);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(me, &d));
    ce_post(me, &d, (void *)(uintptr_t)(8192 - 16), smh, GNI_FMA_CE_IADD);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(me, &d));
    ce_post(me, &d, (void *)(uintptr_t)(4096 + 64), smh, GNI_FMA_CE_IADD);
    d.ce_red_id = 77;
    GNI_OK(GNI_PostFma(me, &d));
    gni_ce_result_t *sr = (gni_ce_result_t *)(s2 + 8);
    GNI_OK(GNI_CeCheckResult(sr, 1));
    CHECK_EQ(sr->result1, 5);
    CHECK_EQ(gni_ce_res_get_red_id(sr), 77);
    CHECK_EQ(s2[7], 0x5a5a5a5a5a5a5a5aull);
    CHECK_EQ(s2[11], 0x5a5a5a5a5a5a5a5aull);
    ev = gnit_wait(t.cq, GNI_RC_SUCCESS);
    GNI_OK(GNI_GetCompleted(t.cq, ev, &done));
    CHECK(done == &d);
    GNI_OK(GNI_CqGetEvent(cq2, &ev));
    GNI_OK(GNI_MemDeregister(t.nic, &smh));

    /* Destroy: twice is INVALID_PARAM; a post naming a destroyed VCE is an error event. */
    GNI_OK(GNI_CeDestroy(ce2));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeDestroy(ce2));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CeGetId(ce2, &id));
    ce_post(me, &d, r, mh, GNI_FMA_CE_IADD);
    GNI_OK(GNI_PostFma(me, &d));
    GNI_EXPECT(GNI_RC_TRANSACTION_ERROR, GNI_CqWaitEvent(t.cq, 10000, &ev));
    GNI_EXPECT(GNI_RC_TRANSACTION_ERROR, GNI_GetCompleted(t.cq, ev, &done));
    CHECK(done == &d && d.status != GNI_RC_SUCCESS);
    GNI_OK(GNI_CeDestroy(ce));

    GNI_OK(GNI_MemDeregister(t.nic, &mh));
    GNI_OK(GNI_MemDeregister(t.nic, &romh));
    GNI_OK(GNI_EpDestroy(me));
    GNI_OK(GNI_EpDestroy(me2));
    GNI_OK(GNI_EpDestroy(plain));
    GNI_OK(GNI_CqDestroy(cq2));
    printf("ce_badinput: rank %d ok\n", t.rank);
    gnit_fini(&t);
    return 0;
}
