/* dmapp_init attribute negotiation, the init/finalize window, job info, rma
 * attributes, error strings and the NOT_SUPPORTED list.  Run with
 * XT_SYMMETRIC_HEAP_SIZE=8M. */
#include "dmtest.h"

long global_var = 42;          /* in .data: must lie inside data_seg */
static char bss_buf[100000];   /* in .bss: likewise */

static void before_init(void) {
    dmapp_jobinfo_t j;
    dmapp_rma_attrs_t a;
    dmapp_seg_desc_t d;
    dmapp_syncid_handle_t h = NULL;
    long x = 0;
    dmapp_rma_attrs_ext_t e;
    RC_EQ(dmapp_get_jobinfo(&j), DMAPP_RC_INVALID_PARAM);
    /* The attributes read before init are the defaults (programs adjust them and pass
     * them to dmapp_init_ext); setting them needs init. */
    memset(&a, 0x5a, sizeof a);
    OK(dmapp_get_rma_attrs(&a));
    CHECK_EQ(a.max_outstanding_nb, DMAPP_DEF_OUTSTANDING_NB);
    CHECK_EQ(a.offload_threshold, DMAPP_OFFLOAD_THRESHOLD);
    CHECK_EQ(a.put_relaxed_ordering, DMAPP_ROUTING_DETERMINISTIC);
    CHECK_EQ(a.get_relaxed_ordering, DMAPP_ROUTING_ADAPTIVE);
    CHECK_EQ(a.max_concurrency, 1);
    memset(&e, 0x5a, sizeof e);
    OK(dmapp_get_rma_attrs_ext(&e));
    CHECK_EQ(e.max_outstanding_nb, DMAPP_DEF_OUTSTANDING_NB);
    CHECK_EQ(e.PI_ordering, DMAPP_PI_ORDERING_STRICT);
    CHECK_EQ(e.queue_depth, DMAPP_QUEUE_DEFAULT_DEPTH);
    CHECK_EQ(e.queue_nelems, DMAPP_QUEUE_DEFAULT_NELEMS);
    CHECK_EQ(e.queue_flags, 0);
    for (int i = 12; i < 32; i++) CHECK_EQ(e.unused[i], 0);
    RC_EQ(dmapp_get_rma_attrs(NULL), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_get_rma_attrs_ext(NULL), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_set_rma_attrs(&a, &a), DMAPP_RC_INVALID_PARAM);
    int flag = 7;
    OK(dmapp_initialized(&flag));
    CHECK_EQ(flag, 0);
    RC_EQ(dmapp_put(&x, &d, 0, &x, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_aadd_qw(&x, &d, 0, 1), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_syncid_wait(&h), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_syncid_test(&h, &flag), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_gsync_wait(), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_mem_register(&x, 8, &d), DMAPP_RC_INVALID_PARAM);
    CHECK(dmapp_sheap_malloc(64) == NULL);
    RC_EQ(dmapp_finalize(), DMAPP_RC_INVALID_PARAM);
}

static void bad_attrs(void) {
    dmapp_rma_attrs_t ok = {DMAPP_DEF_OUTSTANDING_NB, DMAPP_OFFLOAD_THRESHOLD, 0, 0, 1}, r, a;
    RC_EQ(dmapp_init(NULL, &a), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_init(&ok, NULL), DMAPP_RC_INVALID_PARAM);
    r = ok; r.max_outstanding_nb = DMAPP_MIN_OUTSTANDING_NB - 1;
    RC_EQ(dmapp_init(&r, &a), DMAPP_RC_INVALID_PARAM);
    r = ok; r.max_outstanding_nb = DMAPP_MAX_OUTSTANDING_NB + 1;
    RC_EQ(dmapp_init(&r, &a), DMAPP_RC_INVALID_PARAM);
    r = ok; r.put_relaxed_ordering = 3;
    RC_EQ(dmapp_init(&r, &a), DMAPP_RC_INVALID_PARAM);
    r = ok; r.get_relaxed_ordering = 200;
    RC_EQ(dmapp_init(&r, &a), DMAPP_RC_INVALID_PARAM);
    r = ok; r.max_concurrency = 0;
    RC_EQ(dmapp_init(&r, &a), DMAPP_RC_INVALID_PARAM);
}

int main(void) {
    before_init();
    bad_attrs();

    /* The failed inits left nothing behind: a good one works now. */
    dmapp_rma_attrs_t req = {0}, act;
    memset(&act, 0xa5, sizeof act);
    req.max_outstanding_nb = DMAPP_MAX_OUTSTANDING_NB;   /* the extremes are legal */
    req.offload_threshold = 123;                         /* any value is legal */
    req.put_relaxed_ordering = DMAPP_ROUTING_ADAPTIVE;
    req.get_relaxed_ordering = DMAPP_ROUTING_IN_ORDER;
    req.max_concurrency = 4;
    OK(dmapp_init(&req, &act));
    /* Right after dmapp_init, with no PMI_Init: digest 9.4. */
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    CHECK_EQ(act.max_outstanding_nb, DMAPP_MAX_OUTSTANDING_NB);
    CHECK_EQ(act.offload_threshold, 123);
    CHECK_EQ(act.put_relaxed_ordering, DMAPP_ROUTING_ADAPTIVE);
    CHECK_EQ(act.get_relaxed_ordering, DMAPP_ROUTING_IN_ORDER);
    CHECK_EQ(act.max_concurrency, 4);

    /* A second init keeps the job and reports what is in effect. */
    dmapp_rma_attrs_t req2 = {DMAPP_DEF_OUTSTANDING_NB, 9, 1, 1, 1}, act2;
    OK(dmapp_init(&req2, &act2));
    CHECK(attrs_eq(&act2, &act));

    OK(dmapp_get_jobinfo(&job));
    me = job.pe; npes = job.npes; sntest_rank = me;
    CHECK(npes >= 1 && me >= 0 && me < npes);
    CHECK_EQ(job.version, 0x030100);
    CHECK_EQ(job.hw_version, DMAPP_GNI_HW_MAJOR_GEMINI);
    CHECK_EQ(job.sheap_seg.len, 8 << 20);
    CHECK(job.sheap_seg.addr != NULL);
    char *d0 = job.data_seg.addr;
    CHECK((char *)&global_var >= d0 && (char *)(&global_var + 1) <= d0 + job.data_seg.len);
    CHECK(bss_buf >= d0 && bss_buf + sizeof bss_buf <= d0 + job.data_seg.len);
    RC_EQ(dmapp_get_jobinfo(NULL), DMAPP_RC_INVALID_PARAM);

    /* Every PE sees the same npes and distinct pe numbers: count with AMOs. */
    static int64_t seen = 0;
    barrier();
    OK(dmapp_aadd_qw(&seen, dseg(), 0, (int64_t)1 << (me % 63)));
    barrier();
    if (me == 0 && npes <= 63) CHECK_EQ(seen, ((int64_t)1 << npes) - 1);

    /* rma attributes: get is exact; set changes only the dynamic ones. */
    dmapp_rma_attrs_t cur, want, got;
    OK(dmapp_get_rma_attrs(&cur));
    CHECK(attrs_eq(&cur, &act));
    want = cur;
    want.max_outstanding_nb = 7;   /* static: ignored */
    want.max_concurrency = 9;      /* static: ignored */
    want.offload_threshold = 1 << 20;
    want.put_relaxed_ordering = DMAPP_ROUTING_IN_ORDER;
    want.get_relaxed_ordering = DMAPP_ROUTING_DETERMINISTIC;
    OK(dmapp_set_rma_attrs(&want, &got));
    CHECK_EQ(got.max_outstanding_nb, DMAPP_MAX_OUTSTANDING_NB);
    CHECK_EQ(got.max_concurrency, 4);
    CHECK_EQ(got.offload_threshold, 1 << 20);
    CHECK_EQ(got.put_relaxed_ordering, DMAPP_ROUTING_IN_ORDER);
    CHECK_EQ(got.get_relaxed_ordering, DMAPP_ROUTING_DETERMINISTIC);
    OK(dmapp_get_rma_attrs(&cur));
    CHECK(attrs_eq(&cur, &got));
    want.put_relaxed_ordering = 3;
    RC_EQ(dmapp_set_rma_attrs(&want, &got), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_set_rma_attrs(NULL, &got), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_get_rma_attrs(NULL), DMAPP_RC_INVALID_PARAM);
    OK(dmapp_get_rma_attrs(&cur));
    CHECK_EQ(cur.put_relaxed_ordering, DMAPP_ROUTING_IN_ORDER); /* the refused set changed nothing */

    dmapp_rma_attrs_ext_t ext, ext2;
    OK(dmapp_get_rma_attrs_ext(&ext));
    CHECK_EQ(ext.offload_threshold, 1 << 20);
    /* dmapp_init's struct has no queue fields: the queue got the defaults. */
    CHECK_EQ(ext.queue_depth, DMAPP_QUEUE_DEFAULT_DEPTH);
    CHECK_EQ(ext.queue_nelems, DMAPP_QUEUE_DEFAULT_NELEMS);
    ext.PI_ordering = DMAPP_PI_ORDERING_RELAXED;
    ext.queue_depth = 16;   /* static: ignored */
    OK(dmapp_set_rma_attrs_ext(&ext, &ext2));
    CHECK_EQ(ext2.PI_ordering, DMAPP_PI_ORDERING_RELAXED);
    CHECK_EQ(ext2.queue_depth, DMAPP_QUEUE_DEFAULT_DEPTH);
    ext.PI_ordering = 3;
    RC_EQ(dmapp_set_rma_attrs_ext(&ext, &ext2), DMAPP_RC_INVALID_PARAM);

    /* Error strings. */
    const char *msg = NULL;
    OK(dmapp_explain_error(DMAPP_RC_NO_SPACE, &msg));
    CHECK(msg && strstr(msg, "NO_SPACE"));
    RC_EQ(dmapp_explain_error((dmapp_return_t)99, &msg), DMAPP_RC_INVALID_PARAM);

    /* The documented NOT_SUPPORTED list. */
    dmapp_c_pset_handle_t ps = NULL;
    uint32_t nm;
    RC_EQ(dmapp_checkpoint(), DMAPP_RC_NOT_SUPPORTED);
    RC_EQ(dmapp_restart(0), DMAPP_RC_NOT_SUPPORTED);
    RC_EQ(dmapp_register_progress_cb(NULL, NULL), DMAPP_RC_INVALID_PARAM); /* implemented: dmapp_progress.c */
    RC_EQ(dmapp_deregister_progress_cb(NULL), DMAPP_RC_INVALID_PARAM);
    /* Collectives are implemented (dmapp_coll.c). */
    RC_EQ(dmapp_c_pset_create(NULL, 1, 0, NULL, &ps), DMAPP_RC_INVALID_PARAM);
    OK(dmapp_c_greduce_nelems_max(DMAPP_C_INT64, &nm));
    CHECK(nm >= 1);
    RC_EQ(dmapp_c_barrier_join(ps), DMAPP_RC_INVALID_PARAM);

    barrier();
    int on = 0;
    OK(dmapp_initialized(&on));
    CHECK_EQ(on, 1);
    OK(dmapp_finalize());
    /* After finalize: the window is closed. */
    OK(dmapp_initialized(&on));
    CHECK_EQ(on, 0);
    RC_EQ(dmapp_get_rma_attrs(&cur), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_finalize(), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_get_jobinfo(&job), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_init(&req, &act), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_put(&global_var, dseg(), 0, &global_var, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    CHECK(dmapp_sheap_malloc(8) == NULL);
    printf("dmapp_init_query: pe %d of %d ok\n", me, npes);
    return 0;
}
