/* softnic uGNI benchmarks: `snrun -n 2 bench/pin.sh ugni_bench <benchmark>`.
 *
 *   fma_put_pingpong    FMA_PUT_W_SYNCFLAG ping-pong; the receiver polls the
 *                       sync flag word in its registered window (8 B - 64 KiB)
 *   fma_put_pingpong_prefilled  the same, 8 B only, but each rank fills its next
 *                       descriptor before it waits (then only the flag value is set
 *                       after the wait): what the descriptor fill costs on the path
 *   put_event_pingpong  FMA_PUT with GLOBAL|REMOTE events; the receiver polls
 *                       the window's destination CQ for the remote event
 *   smsg_pingpong       GNI_SmsgSend / remote SMSG event + SmsgGetNext (8 B - 1 KiB)
 *   rdma_put_bw         RDMA_PUT, window of 64 posts (fewer above 4 MiB), then
 *   rdma_get_bw         RDMA_GET  all their GLOBAL events reaped (4 KiB - 64 MiB)
 *   amo_fadd_lat        blocking-style AMO fetch-add (post, reap the event), 8 B
 *   fma_get_lat         blocking-style FMA GET (post, reap the event), 8 B - 64 KiB
 *   put_msgrate         8 B FMA_PUTs, 64 outstanding, then reaped
 *   put_msgrate_silent  8 B FMA_PUTs in windows of 64: GNI_CQMODE_SILENT but the
 *                       last, whose one GLOBAL event completes the window (puts on an
 *                       endpoint complete in order)
 *   op_cost             one 8 B put step by step (time per call): cost_fill (the
 *                       descriptor filled as every benchmark here fills it, no call: what
 *                       the program itself spends), cost_rejected (a post
 *                       of an unknown type: handle lookup and the checks before data
 *                       moves), cost_put_silent (a SILENT FMA put), cost_put_event (a
 *                       GLOBAL one, its event reaped), cost_fadd_silent (a fetch-add
 *                       without an event, into the counter of amo_fadd_lat),
 *                       cost_cq_empty (GNI_CqGetEvent on an empty CQ)
 *   mem_register        GNI_MemRegister + GNI_MemDeregister, one registration live at
 *                       a time, each cycle timed alone (rank 0; rank 1 waits), what a
 *                       zero-copy protocol pays per buffer (Charm++ registers each
 *                       zero-copy buffer and deregisters it on completion):
 *                       reg_fresh 100 B: 100 B at offset 256 of each page in turn of a
 *                         64 MiB malloc'd buffer whose pages hold data (memset first),
 *                         a new buffer per repetition, so no page was registered
 *                         before; reg_fresh 1 MiB: each 1 MiB slice in turn of a
 *                         256 MiB buffer, likewise.  Reported: the median (the
 *                         steady state), reg_fresh_p99, reg_fresh_mean (what a
 *                         cycle costs on average, first registrations in a fresh
 *                         region included) and, for 100 B, reg_fresh_first: the
 *                         median of the first cycle in each aligned window of
 *                         SOFTNIC_REGISTER_WINDOW bytes (256 KiB unless set), where
 *                         the library rebinds the window; the distribution is
 *                         printed in a comment line ("# mem_register ...").
 *                       reg_same 100 B / 1 MiB: the same buffer again and again
 *                         (median cycle).
 *                       BENCH_SCALE scales the pages and slices walked (down to
 *                       512 and 32); BENCH_REG_PAGES caps the pages of the 100 B run.
 *
 * Every initiator post asks for an event and every event is reaped with
 * GNI_GetCompleted, as a real program must.  Setup is the usual one (see
 * c-tests/ugni/gnitest.h): PMI, PMI_GNI_* environment, CDM per rank, attach,
 * CQ, EP to the peer, memory handles exchanged with PMI_Allgather.  Any uGNI
 * failure prints a SKIP line naming the call and its code and aborts the job
 * with exit code 77. */
#include "bench.h"
#include <pthread.h>
#include "gni_pub.h"
#include "pmi.h"

#define LIB "softnic-ugni"
#define PAYOFF 4096          /* payload offset in the window; flags live below */
#define WIN (64 + 4)         /* descriptors for windows */

static const char *bench_name = "init";
static int me, peer;
static gni_cdm_handle_t cdm;
static gni_nic_handle_t nic;
static gni_cq_handle_t cq, rcq;
static gni_ep_handle_t ep;
static uint8_t *win, *src;
static gni_mem_handle_t win_mh, src_mh, peer_mh;
static uint64_t peer_base;
static gni_post_descriptor_t desc[WIN];

static const char *rc_name(gni_return_t rc)
{
    static const char *n[] = { "GNI_RC_SUCCESS", "GNI_RC_NOT_DONE", "GNI_RC_INVALID_PARAM",
        "GNI_RC_ERROR_RESOURCE", "GNI_RC_TIMEOUT", "GNI_RC_PERMISSION_ERROR", "GNI_RC_DESCRIPTOR_ERROR",
        "GNI_RC_ALIGNMENT_ERROR", "GNI_RC_INVALID_STATE", "GNI_RC_NO_MATCH", "GNI_RC_SIZE_ERROR",
        "GNI_RC_TRANSACTION_ERROR", "GNI_RC_ILLEGAL_OP", "GNI_RC_ERROR_NOMEM" };
    return (unsigned)rc < BENCH_NELEM(n) ? n[rc] : "unknown";
}

static void fail(const char *what, gni_return_t rc)
{
    char msg[256];
    snprintf(msg, sizeof msg, "%s returned %s (%d) on rank %d", what, rc_name(rc), (int)rc, me);
    bench_skip_line(LIB, bench_name, msg);
    fprintf(stderr, "ugni_bench %s: %s\n", bench_name, msg);
    PMI_Abort(BENCH_SKIP_EXIT, msg);
    exit(BENCH_SKIP_EXIT);
}

#define G(call) do { gni_return_t rc_ = (call); if (rc_ != GNI_RC_SUCCESS) fail(#call, rc_); } while (0)

static void barrier(void)
{
    if (PMI_Barrier() != PMI_SUCCESS) fail("PMI_Barrier", GNI_RC_ERROR_RESOURCE);
}

static unsigned long env_ul(const char *name)
{
    const char *v = getenv(name);
    if (!v) fail(name, GNI_RC_INVALID_PARAM);
    return strtoul(v, NULL, 10);
}

static gni_cq_entry_t cq_poll(gni_cq_handle_t c)
{
    gni_cq_entry_t ev = 0;
    gni_return_t rc;
    unsigned long spins = 0;
    while ((rc = GNI_CqGetEvent(c, &ev)) == GNI_RC_NOT_DONE) bench_spin_check(&spins);
    if (rc != GNI_RC_SUCCESS) fail("GNI_CqGetEvent", rc);
    return ev;
}

/* Reaps one post completion from the local CQ. */
static void reap(void)
{
    gni_cq_entry_t ev = cq_poll(cq);
    gni_post_descriptor_t *d = NULL;
    G(GNI_GetCompleted(cq, ev, &d));
}

static void fill(gni_post_descriptor_t *d, gni_post_type_t type, uint16_t cq_mode, void *local,
                 uint64_t remote, uint64_t len)
{
    memset(d, 0, sizeof(*d));
    d->type = type;
    d->cq_mode = cq_mode;
    d->dlvr_mode = GNI_DLVMODE_PERFORMANCE;
    d->local_addr = (uint64_t)(uintptr_t)local;
    d->local_mem_hndl = src_mh;
    d->remote_addr = remote;
    d->remote_mem_hndl = peer_mh;
    d->length = len;
}

static void setup(void)
{
    int spawned, size;
    if (PMI_Init(&spawned) != PMI_SUCCESS) fail("PMI_Init", GNI_RC_ERROR_RESOURCE);
    PMI_Get_rank(&me);
    PMI_Get_size(&size);
    if (size != 2) fail("job size must be 2", GNI_RC_INVALID_PARAM);
    peer = 1 - me;
    uint8_t ptag = (uint8_t)env_ul("PMI_GNI_PTAG");
    uint32_t cookie = (uint32_t)env_ul("PMI_GNI_COOKIE");
    uint32_t dev = (uint32_t)env_ul("PMI_GNI_DEV_ID");
    uint32_t addr, addrs[2];
    G(GNI_CdmCreate((uint32_t)me, ptag, cookie, GNI_CDM_MODE_FORK_NOCOPY, &cdm));
    G(GNI_CdmAttach(cdm, dev, &addr, &nic));
    G(GNI_CqCreate(nic, 1024, 0, GNI_CQ_NOBLOCK, NULL, NULL, &cq));
    G(GNI_CqCreate(nic, 1024, 0, GNI_CQ_NOBLOCK, NULL, NULL, &rcq));
    if (PMI_Allgather(&addr, addrs, sizeof addr) != PMI_SUCCESS) fail("PMI_Allgather", GNI_RC_ERROR_RESOURCE);
    G(GNI_EpCreate(nic, cq, &ep));
    G(GNI_EpBind(ep, addrs[peer], (uint32_t)peer));

    size_t len = PAYOFF + BENCH_MAX_BW;
    if (posix_memalign((void **)&win, 4096, len) || posix_memalign((void **)&src, 4096, len))
        fail("posix_memalign", GNI_RC_ERROR_NOMEM);
    memset(win, 0, len);
    memset(src, 0x5a, len);
    G(GNI_MemRegister(nic, (uint64_t)(uintptr_t)win, len, rcq, GNI_MEM_READWRITE, (uint32_t)-1, &win_mh));
    G(GNI_MemRegister(nic, (uint64_t)(uintptr_t)src, len, NULL, GNI_MEM_READWRITE, (uint32_t)-1, &src_mh));
    uint64_t mine[3] = { (uint64_t)(uintptr_t)win, win_mh.qword1, win_mh.qword2 }, all[6];
    if (PMI_Allgather(mine, all, sizeof mine) != PMI_SUCCESS) fail("PMI_Allgather", GNI_RC_ERROR_RESOURCE);
    peer_base = all[peer * 3];
    peer_mh.qword1 = all[peer * 3 + 1];
    peer_mh.qword2 = all[peer * 3 + 2];
    barrier();
}

/* ---- ping-pongs ------------------------------------------------------------ */

static uint64_t seq;   /* flag values: the same sequence on both ranks */

static void fma_flag_send(size_t size)
{
    seq++;
    fill(&desc[0], GNI_POST_FMA_PUT_W_SYNCFLAG, GNI_CQMODE_GLOBAL_EVENT, src + PAYOFF, peer_base + PAYOFF, size);
    desc[0].sync_flag_addr = peer_base;
    desc[0].sync_flag_value = seq;
    G(GNI_PostFma(ep, &desc[0]));
    reap();
}

static void fma_flag_wait(size_t size)
{
    (void)size;
    volatile uint64_t *flag = (volatile uint64_t *)win;
    unsigned long spins = 0;
    seq++;
    while (*flag != seq) bench_spin_check(&spins);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
}

/* The prefilled variant: the wait fills the descriptor of the send that follows it
 * (every field as fma_flag_send's fill); the send sets the flag value and posts.  Rank 0's
 * first send of each pass comes before any wait: its descriptor is filled then. */
static int prefilled;
static void fma_pre_send(size_t size)
{
    seq++;
    if (!prefilled) {
        fill(&desc[0], GNI_POST_FMA_PUT_W_SYNCFLAG, GNI_CQMODE_GLOBAL_EVENT, src + PAYOFF, peer_base + PAYOFF, size);
        desc[0].sync_flag_addr = peer_base;
    }
    prefilled = 0;
    desc[0].sync_flag_value = seq;
    G(GNI_PostFma(ep, &desc[0]));
    reap();
}

static void fma_pre_wait(size_t size)
{
    fill(&desc[0], GNI_POST_FMA_PUT_W_SYNCFLAG, GNI_CQMODE_GLOBAL_EVENT, src + PAYOFF, peer_base + PAYOFF, size);
    desc[0].sync_flag_addr = peer_base;
    prefilled = 1;
    fma_flag_wait(size);
}

static void event_send(size_t size)
{
    fill(&desc[0], GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT, src + PAYOFF,
         peer_base + PAYOFF, size);
    G(GNI_PostFma(ep, &desc[0]));
    reap();
}

static void event_wait(size_t size)
{
    (void)size;
    (void)cq_poll(rcq);
}

/* SMSG: one mailbox per direction; the mailbox registration's CQ gets the remote events. */
static gni_ep_handle_t smsg_ep;

static void smsg_setup(void)
{
    gni_smsg_attr_t a;
    unsigned int mbsz = 0;
    memset(&a, 0, sizeof a);
    a.msg_type = GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT;
    a.mbox_maxcredit = 16;
    a.msg_maxsize = 1024;
    G(GNI_SmsgBufferSizeNeeded(&a, &mbsz));
    uint8_t *mb;
    if (posix_memalign((void **)&mb, 4096, (size_t)mbsz * 2)) fail("posix_memalign", GNI_RC_ERROR_NOMEM);
    memset(mb, 0, (size_t)mbsz * 2);
    gni_mem_handle_t mbh;
    G(GNI_MemRegister(nic, (uint64_t)(uintptr_t)mb, (uint64_t)mbsz * 2, rcq, GNI_MEM_READWRITE, (uint32_t)-1, &mbh));
    uint64_t mine[3] = { (uint64_t)(uintptr_t)mb, mbh.qword1, mbh.qword2 }, all[6];
    if (PMI_Allgather(mine, all, sizeof mine) != PMI_SUCCESS) fail("PMI_Allgather", GNI_RC_ERROR_RESOURCE);
    gni_smsg_attr_t l = a, r = a;
    l.msg_buffer = mb;
    l.buff_size = mbsz;
    l.mem_hndl = mbh;
    l.mbox_offset = mbsz * (uint32_t)peer;    /* my mailbox for messages from peer */
    r.msg_buffer = (void *)(uintptr_t)all[peer * 3];
    r.buff_size = mbsz;
    r.mem_hndl.qword1 = all[peer * 3 + 1];
    r.mem_hndl.qword2 = all[peer * 3 + 2];
    r.mbox_offset = mbsz * (uint32_t)me;      /* peer's mailbox for messages from me */
    smsg_ep = ep;
    G(GNI_SmsgInit(smsg_ep, &l, &r));
    barrier();
}

static void smsg_send(size_t size)
{
    gni_return_t rc;
    unsigned long spins = 0;
    while ((rc = GNI_SmsgSend(smsg_ep, src, (uint32_t)size, NULL, 0, 1)) == GNI_RC_NOT_DONE) bench_spin_check(&spins);
    if (rc != GNI_RC_SUCCESS) fail("GNI_SmsgSend", rc);
    cq_poll(cq);          /* the local SMSG event */
}

static void smsg_wait(size_t size)
{
    (void)size;
    void *hdr;
    gni_return_t rc;
    unsigned long spins = 0;
    cq_poll(rcq);         /* the remote SMSG event */
    while ((rc = GNI_SmsgGetNext(smsg_ep, &hdr)) == GNI_RC_NOT_DONE) bench_spin_check(&spins);
    if (rc != GNI_RC_SUCCESS) fail("GNI_SmsgGetNext", rc);
    G(GNI_SmsgRelease(smsg_ep));
}

/* ---- one-sided: bandwidth, message rate, AMO ------------------------------ */

static gni_post_type_t rdma_type;
static void rdma_issue(size_t size, long j)
{
    fill(&desc[j], rdma_type, GNI_CQMODE_GLOBAL_EVENT, src + PAYOFF, peer_base + PAYOFF, size);
    G(GNI_PostRdma(ep, &desc[j]));
}
static void rdma_complete(size_t size)
{
    for (long j = 0; j < bench_bw_window(size); j++) reap();
}

static void rdma_bw(const char *bench, gni_post_type_t type)
{
    rdma_type = type;
    bench_bw_run(me, LIB, bench, rdma_issue, rdma_complete, barrier);
}

/* 8 B FMA_PUTs in windows of 64: `silent`, GNI_CQMODE_SILENT but the last, whose one
 * event completes the window; else a GLOBAL event per put, all reaped. */
static void put_rate(const char *name, int silent)
{
    double v[BENCH_MAX_REPS];
    int reps = bench_reps();
    long w = 64, windows = bench_rate_windows();
    if (me == 0) {
        for (int r = -1; r < reps; r++) {
            long n = r < 0 ? bench_warm(windows) : windows;
            double t0 = bench_now();
            for (long i = 0; i < n; i++) {
                for (long j = 0; j < w; j++) {
                    uint16_t mode = silent && j < w - 1 ? GNI_CQMODE_SILENT : GNI_CQMODE_GLOBAL_EVENT;
                    fill(&desc[j], GNI_POST_FMA_PUT, mode, src + PAYOFF, peer_base + PAYOFF + 8 * j, 8);
                    G(GNI_PostFma(ep, &desc[j]));
                }
                for (long j = silent ? w - 1 : 0; j < w; j++) reap();
            }
            if (r >= 0) v[r] = (double)n * (double)w / (bench_now() - t0) / 1e6;
        }
        bench_result(LIB, name, 8, "Mmsgps", bench_median(v, reps));
    }
    barrier();
}

static void amo_fadd_op(size_t size)
{
    fill(&desc[0], GNI_POST_AMO, GNI_CQMODE_GLOBAL_EVENT, src, peer_base + 64, size);
    desc[0].amo_cmd = GNI_FMA_ATOMIC_FADD;
    desc[0].first_operand = 1;
    G(GNI_PostFma(ep, &desc[0]));
    reap();
}

/* op_cost: one 8 B put taken apart by what each step adds (time per call, rank 0; the
 * report turns the differences into the per-step table).  Every variant fills its
 * descriptor as a program does. */
static void cost_fill(size_t size)
{
    fill(&desc[0], GNI_POST_FMA_PUT, GNI_CQMODE_SILENT, src + PAYOFF, peer_base + PAYOFF, size);
}
static void cost_rejected(size_t size)
{
    fill(&desc[0], (gni_post_type_t)0x7f, GNI_CQMODE_SILENT, src + PAYOFF, peer_base + PAYOFF, size);
    if (GNI_PostFma(ep, &desc[0]) != GNI_RC_INVALID_PARAM) fail("GNI_PostFma of an unknown type", GNI_RC_ERROR_RESOURCE);
}
static void cost_put_silent(size_t size)
{
    fill(&desc[0], GNI_POST_FMA_PUT, GNI_CQMODE_SILENT, src + PAYOFF, peer_base + PAYOFF, size);
    G(GNI_PostFma(ep, &desc[0]));
}
static void cost_put_event(size_t size)
{
    fill(&desc[0], GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, src + PAYOFF, peer_base + PAYOFF, size);
    G(GNI_PostFma(ep, &desc[0]));
    reap();
}
static void cost_fadd_silent(size_t size)
{
    fill(&desc[0], GNI_POST_AMO, GNI_CQMODE_SILENT, src, peer_base + 64, size);
    desc[0].amo_cmd = GNI_FMA_ATOMIC_FADD;
    desc[0].first_operand = 1;
    G(GNI_PostFma(ep, &desc[0]));
}
static void cost_cq_empty(size_t size)
{
    (void)size;
    gni_cq_entry_t ev;
    if (GNI_CqGetEvent(cq, &ev) != GNI_RC_NOT_DONE) fail("GNI_CqGetEvent on an empty CQ", GNI_RC_ERROR_RESOURCE);
}

static void op_cost(void)
{
    static const bench_cost_t steps[] = { { "cost_fill", cost_fill }, { "cost_rejected", cost_rejected }, { "cost_put_silent", cost_put_silent },
                                          { "cost_put_event", cost_put_event }, { "cost_fadd_silent", cost_fadd_silent },
                                          { "cost_cq_empty", cost_cq_empty } };
    bench_costs(me, LIB, steps, BENCH_NELEM(steps));
    barrier();
}

/* fma_get_lat: an FMA GET of N bytes from the peer's window into our registered buffer,
 * its GLOBAL event reaped (a blocking-style get). */
static void fma_get_op(size_t size)
{
    fill(&desc[0], GNI_POST_FMA_GET, GNI_CQMODE_GLOBAL_EVENT, src + PAYOFF, peer_base + PAYOFF, size);
    G(GNI_PostFma(ep, &desc[0]));
    reap();
}

static void amo_fadd_lat(void)
{
    int reps = bench_reps();
    long iters = bench_lat_iters(8);
    if (me == 0) bench_op_lat(LIB, "amo_fadd_lat", 8, amo_fadd_op);
    barrier();
    if (me == 1) {
        uint64_t want = (uint64_t)(bench_warm(iters) + (long)reps * iters);
        uint64_t got = *(volatile uint64_t *)(win + 64);
        if (got != want) fprintf(stderr, "ugni_bench amo_fadd_lat: counter %llu, expected %llu\n",
                                 (unsigned long long)got, (unsigned long long)want);
    }
}

/* ---- registration ------------------------------------------------------------ */

static double reg_cycle(uint8_t *p, size_t len)
{
    gni_mem_handle_t h;
    double t0 = bench_now();
    G(GNI_MemRegister(nic, (uint64_t)(uintptr_t)p, len, NULL, GNI_MEM_READWRITE, (uint32_t)-1, &h));
    G(GNI_MemDeregister(nic, &h));
    return (bench_now() - t0) * 1e6;
}

/* q-quantile of the sorted v[0..n). */
static double quantile(const double *v, long n, double q)
{
    long i = (long)(q * (double)(n - 1) + 0.5);
    return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

/* The distribution of one fresh-buffer series; returns the median, p99 and mean through
 * the pointers (all repetitions pooled). */
static void reg_stats(const char *what, double *v, long n, double *med, double *p99, double *mean)
{
    double sum = 0;
    for (long i = 0; i < n; i++) sum += v[i];
    qsort(v, (size_t)n, sizeof(double), bench_cmp_double);
    *med = quantile(v, n, 0.5);
    *p99 = quantile(v, n, 0.99);
    *mean = sum / (double)n;
    printf("# mem_register %s: %ld cycles, us per register+deregister: p50 %.2f p90 %.2f p99 %.2f p99.9 %.2f max %.1f mean %.2f\n",
           what, n, *med, quantile(v, n, 0.9), *p99, quantile(v, n, 0.999), v[n - 1], *mean);
}

/* A thread that sleeps in read(2) until its pipe closes: the idle helper thread of a
 * multi-threaded program. */
static void *sleeper(void *p)
{
    char c;
    while (read(*(int *)p, &c, 1) > 0) {
    }
    return NULL;
}

/* The fresh-page series (100 B at offset 256 of each page in turn of a 64 MiB buffer per
 * repetition, `pages` pages): fills v (all cycles) and f (first in each window). */
static void reg_fresh_series(long pages, int reps, uintptr_t window, double *v, long *n, double *f, long *nf)
{
    const size_t page = 4096, small = 100, len = (size_t)64 << 20;
    for (int r = 0; r < reps; r++) {
        uint8_t *buf = malloc(len);
        if (!buf) fail("malloc", GNI_RC_ERROR_NOMEM);
        memset(buf, r + 1, len);
        uint8_t *first = (uint8_t *)(((uintptr_t)buf + page - 1) & ~(uintptr_t)(page - 1));
        for (long i = 0; i < pages; i++) {
            uint8_t *p = first + (size_t)i * page;
            v[(*n)++] = reg_cycle(p + 256, small);
            if (f && (i == 0 || (window >= page && (uintptr_t)p % window == 0))) f[(*nf)++] = v[*n - 1];
        }
        free(buf);
    }
}

static void mem_register(void)
{
    int reps = bench_reps();
    const size_t page = 4096, small = 100, big = 1u << 20;
    if (me == 0 && bench_size_selected(small)) {
        size_t len = (size_t)64 << 20;
        long pages = bench_clamp((double)(len / page) - 1, 512, (long)(len / page) - 1);
        const char *cap = getenv("BENCH_REG_PAGES");
        if (cap && atol(cap) > 0 && atol(cap) < pages) pages = atol(cap);
        const char *wv = getenv("SOFTNIC_REGISTER_WINDOW");
        uintptr_t window = wv && *wv ? (uintptr_t)strtoull(wv, NULL, 0) : 256u << 10;
        double *v = malloc(sizeof(double) * (size_t)pages * (size_t)reps);
        double *f = malloc(sizeof(double) * (size_t)pages * (size_t)reps);
        if (!v || !f) fail("malloc", GNI_RC_ERROR_NOMEM);
        long n = 0, nf = 0;
        reg_fresh_series(pages, reps, window, v, &n, f, &nf);
        double med, p99, mean, fmed, fp99, fmean;
        reg_stats("100 B on a fresh page, first in a window", f, nf, &fmed, &fp99, &fmean);
        reg_stats("100 B on a fresh page", v, n, &med, &p99, &mean);
        bench_result(LIB, "reg_fresh", small, "us", med);
        bench_result(LIB, "reg_fresh_p99", small, "us", p99);
        bench_result(LIB, "reg_fresh_mean", small, "us", mean);
        bench_result(LIB, "reg_fresh_first", small, "us", fmed);
        /* The same with a second thread (asleep in read(2)), as in a program with a
         * progress or helper thread: where the library's write guard cannot hold the
         * kernel's writes, windows then need the thread parked. */
        int fds[2];
        pthread_t th;
        if (pipe(fds) != 0 || pthread_create(&th, NULL, sleeper, &fds[0]) != 0) fail("pipe/pthread_create", GNI_RC_ERROR_RESOURCE);
        n = 0;
        reg_fresh_series(pages, reps, window, v, &n, NULL, NULL);
        close(fds[1]);
        pthread_join(th, NULL);
        close(fds[0]);
        reg_stats("100 B on a fresh page, a second thread alive", v, n, &med, &p99, &mean);
        bench_result(LIB, "reg_fresh_threaded", small, "us", med);
        bench_result(LIB, "reg_fresh_threaded_mean", small, "us", mean);
        free(v);
        free(f);
    }
    if (me == 0 && bench_size_selected(big)) {
        size_t len = (size_t)256 << 20;
        long slices = bench_clamp((double)(len / big) - 1, 32, (long)(len / big) - 1);
        double *v = malloc(sizeof(double) * (size_t)slices * (size_t)reps);
        long n = 0;
        for (int r = 0; r < reps; r++) {
            uint8_t *buf = malloc(len);
            if (!buf || !v) fail("malloc", GNI_RC_ERROR_NOMEM);
            memset(buf, r + 1, len);
            for (long i = 0; i < slices; i++) v[n++] = reg_cycle(buf + (size_t)i * big + 256, big);
            free(buf);
        }
        double med, p99, mean;
        reg_stats("1 MiB of fresh pages", v, n, &med, &p99, &mean);
        bench_result(LIB, "reg_fresh", big, "us", med);
        bench_result(LIB, "reg_fresh_p99", big, "us", p99);
        bench_result(LIB, "reg_fresh_mean", big, "us", mean);
        free(v);
    }
    /* The same buffer again and again: what a cycle costs once its pages were registered. */
    if (me == 0) {
        size_t sizes[2] = { small, big };
        for (int k = 0; k < 2; k++) {
            if (!bench_size_selected(sizes[k])) continue;
            uint8_t *buf = malloc(sizes[k] + 512);
            if (!buf) fail("malloc", GNI_RC_ERROR_NOMEM);
            memset(buf, 7, sizes[k] + 512);
            long iters = 2000, n = 0;
            double *v = malloc(sizeof(double) * (size_t)iters * (size_t)reps);
            if (!v) fail("malloc", GNI_RC_ERROR_NOMEM);
            for (long i = 0; i < bench_warm(iters); i++) reg_cycle(buf + 256, sizes[k]);
            for (long i = 0; i < iters * reps; i++) v[n++] = reg_cycle(buf + 256, sizes[k]);
            bench_result(LIB, "reg_same", sizes[k], "us", bench_median(v, (int)n));
            free(v);
            free(buf);
        }
    }
    barrier();
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: ugni_bench fma_put_pingpong|fma_put_pingpong_prefilled|put_event_pingpong|smsg_pingpong|"
                        "rdma_put_bw|rdma_get_bw|amo_fadd_lat|fma_get_lat|put_msgrate|put_msgrate_silent|mem_register|op_cost\n");
        return 2;
    }
    bench_name = argv[1];
    bench_init_parent();
    setup();
    const char *b = argv[1];
    if (!strcmp(b, "fma_put_pingpong"))
        bench_pingpong_run(me, LIB, b, bench_lat_sizes, BENCH_NELEM(bench_lat_sizes), fma_flag_send, fma_flag_wait, NULL, NULL);
    else if (!strcmp(b, "fma_put_pingpong_prefilled")) {
        static const size_t eight[] = { 8 };
        bench_pingpong_run(me, LIB, b, eight, 1, fma_pre_send, fma_pre_wait, NULL, NULL);
    } else if (!strcmp(b, "put_event_pingpong"))
        bench_pingpong_run(me, LIB, b, bench_lat_sizes, BENCH_NELEM(bench_lat_sizes), event_send, event_wait, NULL, NULL);
    else if (!strcmp(b, "smsg_pingpong")) {
        smsg_setup();
        bench_pingpong_run(me, LIB, b, bench_smsg_sizes, BENCH_NELEM(bench_smsg_sizes), smsg_send, smsg_wait, NULL, NULL);
    } else if (!strcmp(b, "rdma_put_bw")) rdma_bw(b, GNI_POST_RDMA_PUT);
    else if (!strcmp(b, "rdma_get_bw")) rdma_bw(b, GNI_POST_RDMA_GET);
    else if (!strcmp(b, "amo_fadd_lat")) amo_fadd_lat();
    else if (!strcmp(b, "fma_get_lat")) bench_op_lat_sizes(me, LIB, b, fma_get_op, barrier);
    else if (!strcmp(b, "put_msgrate")) put_rate(b, 0);
    else if (!strcmp(b, "put_msgrate_silent")) put_rate(b, 1);
    else if (!strcmp(b, "mem_register")) mem_register();
    else if (!strcmp(b, "op_cost")) op_cost();
    else { fprintf(stderr, "ugni_bench: unknown benchmark %s\n", b); PMI_Abort(2, "unknown benchmark"); return 2; }
    barrier();
    PMI_Finalize();
    return 0;
}
