/* Multi-segment registrations as *local* handles (decisions in ugni-sys/src/memreg.rs and
 * gni_pub.h): a segmented handle is one memory domain addressed by offset on both sides
 * of a post.  Every rank registers three discontiguous segments of 8192, 5004 (not a page
 * multiple) and 4096 bytes, twice: S (exposed to peers, with a dst CQ) and L (its own
 * local buffer), plus plain buffers P (exposed) and Q (local).  Handles and bases go
 * round with PMI_Allgather.  Each rank then, towards its right neighbour:
 * - FMA and RDMA GET and PUT with the local side segmented, the remote side segmented,
 *   or both: local_addr 0, transfers crossing one and two boundaries on either side,
 *   ending exactly at a segment's end and at the domain's end; every byte of the
 *   destination domain is checked (the range written, the rest untouched, the guard
 *   bytes around each segment untouched);
 * - GET_W_FLAG whose flag lands at the start of the next segment, PUT_W_SYNCFLAG from a
 *   segmented source, a fetching AMO whose result straddles two segments, AMO_W_FLAG
 *   with its flag ending a segment, a CQ write whose descriptor carries a segmented
 *   local handle (not read);
 * - bad input: an access 1 or 4 bytes past the total length (GET, PUT, flag, AMO
 *   result), an offset that overflows, a READ_ONLY destination, a deregistered handle:
 *   the post returns the error, no event is queued and nothing moves on either side. */
#include "data_util.h"

#define NSEG 3
static const size_t seg_len[NSEG] = { 8192, 5004, 4096 };
#define TOTAL (8192 + 5004 + 4096)
#define B_END (8192 + 5004)
#define GUARD 0xEE
#define PAGE 4096

static gnit_t t;
static int me, n, right, left;

/* A registered memory domain: segmented (3 segments, addressed by offset, base 0) or
 * plain (one buffer of TOTAL bytes, addressed by virtual address, base = its address).
 * Each segment sits one page into an allocation filled with GUARD bytes. */
typedef struct {
    int segmented;
    int nseg;
    size_t len[NSEG];
    uint8_t *alloc[NSEG], *seg[NSEG];
    size_t alloc_len[NSEG];
    uint64_t base;
    gni_mem_handle_t mh;
} mem_t;

static void mem_make(mem_t *m, int segmented, gni_cq_handle_t dst_cq, uint32_t flags)
{
    gni_mem_segment_t sg[NSEG];
    memset(m, 0, sizeof(*m));
    m->segmented = segmented;
    m->nseg = segmented ? NSEG : 1;
    for (int k = 0; k < m->nseg; k++) {
        m->len[k] = segmented ? seg_len[k] : TOTAL;
        m->alloc_len[k] = PAGE + ((m->len[k] + PAGE - 1) & ~(size_t)(PAGE - 1)) + PAGE;
        m->alloc[k] = dt_alloc(m->alloc_len[k]);
        memset(m->alloc[k], GUARD, m->alloc_len[k]);
        m->seg[k] = m->alloc[k] + PAGE;
        sg[k].address = (uint64_t)(uintptr_t)m->seg[k];
        sg[k].length = m->len[k];
    }
    if (segmented) {
        GNI_OK(GNI_MemRegisterSegments(t.nic, sg, NSEG, dst_cq, flags, -1, &m->mh));
        m->base = 0;
    } else {
        GNI_OK(GNI_MemRegister(t.nic, sg[0].address, TOTAL, dst_cq, flags, -1, &m->mh));
        m->base = sg[0].address;
    }
}

/* The byte at domain offset `off`. */
static uint8_t *mem_at(mem_t *m, size_t off)
{
    for (int k = 0; k < m->nseg; k++) {
        if (off < m->len[k]) return m->seg[k] + off;
        off -= m->len[k];
    }
    SN_FAIL("offset past the domain");
    return NULL;
}

static uint8_t pat(int seed, size_t off)
{
    return (uint8_t)((off * 131u + (off >> 8) * 7u + (unsigned)seed * 29u) ^ 0x5c);
}

static void mem_fill(mem_t *m, int seed)
{
    for (size_t o = 0; o < TOTAL; o++) *mem_at(m, o) = pat(seed, o);
}

/* Checks the whole domain: [from, from+len) holds pat(src_seed, src_off + i), every other
 * byte pat(seed, o), and the guard bytes around every segment are intact. */
static void mem_check(mem_t *m, int seed, size_t from, size_t len, int src_seed, size_t src_off, const char *what)
{
    for (size_t o = 0; o < TOTAL; o++) {
        int in = o >= from && o < from + len;
        uint8_t want = in ? pat(src_seed, src_off + (o - from)) : pat(seed, o);
        uint8_t got = *mem_at(m, o);
        if (got != want)
            SN_FAIL("%s: offset %zu holds %#x, expected %#x (%s the range %zu+%zu)", what, o, got, want, in ? "in" : "outside", from, len);
    }
    for (int k = 0; k < m->nseg; k++)
        for (size_t i = 0; i < m->alloc_len[k]; i++) {
            uint8_t *p = m->alloc[k] + i;
            if (p >= m->seg[k] && p < m->seg[k] + m->len[k]) continue;
            if (*p != GUARD) SN_FAIL("%s: guard byte %zd around segment %d changed to %#x", what, p - m->seg[k], k, *p);
        }
}

static void mem_free(mem_t *m)
{
    GNI_OK(GNI_MemDeregister(t.nic, &m->mh));
    for (int k = 0; k < m->nseg; k++) free(m->alloc[k]);
}

/* Seeds of the four domains of rank r. */
#define SEED_S(r) ((r) * 4 + 0)
#define SEED_P(r) ((r) * 4 + 1)
#define SEED_L(r) ((r) * 4 + 2)
#define SEED_Q(r) ((r) * 4 + 3)

static mem_t S, P, L, Q;
static gni_mem_handle_t *hS, *hP;
static uint64_t *bS, *bP;
static gni_cq_handle_t rcq;

typedef struct {
    size_t loff, roff, len;
    const char *what;
} xfer_t;

static const xfer_t xfers[] = {
    { 0, 0, TOTAL, "whole domain from offset 0 (two boundaries each side)" },
    { 8192 - 4, 100, 8, "local side crosses one boundary" },
    { 100, 8192 - 4, 8, "remote side crosses one boundary" },
    { 8000, 4000, 5400, "local crosses two boundaries, remote one" },
    { 4000, 8000, 5400, "remote crosses two boundaries, local one" },
    { B_END - 12, 0, 12, "local ends exactly at a segment's end" },
    { TOTAL - 8, TOTAL - 8, 8, "exactly at the end of both domains" },
    { 0, 4, 64, "local_addr 0" },
};
#define NXFER (sizeof(xfers) / sizeof(xfers[0]))

static void post(int rdma, gni_post_descriptor_t *d)
{
    if (rdma) dt_rdma(&t, right, d);
    else dt_fma(&t, right, d);
}

static void no_event(const char *what)
{
    gni_cq_entry_t ev;
    gni_return_t rc = GNI_CqGetEvent(t.cq, &ev);
    if (rc != GNI_RC_NOT_DONE) SN_FAIL("%s: a refused post queued an event (rc %d)", what, (int)rc);
}

/* GETs into our L or Q from the right neighbour's S or P (each checked at once), or PUTs
 * from our L or Q into the right neighbour's S or P (each rank checks what its left
 * neighbour put), by FMA and by RDMA, with the segmented handle on both sides or on one. */
static void transfers(int put)
{
    gni_post_descriptor_t d;
    char what[160];
    for (int rdma = 0; rdma < 2; rdma++)
        for (int sides = 0; sides < 3; sides++) {     /* 0: both segmented, 1: local only, 2: remote only */
            mem_t *loc = sides == 2 ? &Q : &L;
            int lseed = sides == 2 ? SEED_Q(me) : SEED_L(me);
            int rseg = sides != 1;
            mem_t *mine = rseg ? &S : &P;       /* what the left neighbour PUTs into */
            int mseed = rseg ? SEED_S(me) : SEED_P(me);
            gni_post_type_t type = put ? (rdma ? GNI_POST_RDMA_PUT : GNI_POST_FMA_PUT) : (rdma ? GNI_POST_RDMA_GET : GNI_POST_FMA_GET);
            for (size_t i = 0; i < NXFER; i++) {
                const xfer_t *x = &xfers[i];
                snprintf(what, sizeof what, "%s %s, %s: %s", rdma ? "RDMA" : "FMA", put ? "PUT" : "GET",
                         sides == 0 ? "both segmented" : sides == 1 ? "local segmented" : "remote segmented", x->what);
                dt_desc(&d, type, GNI_CQMODE_GLOBAL_EVENT, (void *)(uintptr_t)(loc->base + x->loff), loc->mh,
                        (rseg ? bS[right] : bP[right]) + x->roff, rseg ? hS[right] : hP[right], x->len);
                post(rdma, &d);
                if (!put) {
                    mem_check(loc, lseed, x->loff, x->len, rseg ? SEED_S(right) : SEED_P(right), x->roff, what);
                    mem_fill(loc, lseed);
                    continue;
                }
                dt_barrier();
                mem_check(mine, mseed, x->roff, x->len, sides == 2 ? SEED_Q(left) : SEED_L(left), x->loff, what);
                mem_fill(mine, mseed);
                dt_barrier();
            }
        }
}

/* The 4- or 8-byte word at domain offset `off` (it may straddle segments). */
static uint64_t load(mem_t *m, size_t off, size_t n)
{
    uint8_t b[8] = { 0 };
    for (size_t i = 0; i < n; i++) b[i] = *mem_at(m, off + i);
    uint32_t v32;
    uint64_t v64;
    memcpy(&v32, b, 4);
    memcpy(&v64, b, 8);
    return n == 4 ? v32 : v64;
}
#define load32(m, off) load(m, off, 4)
#define load64(m, off) load(m, off, 8)

/* Flagged posts, AMOs and a CQ write with segmented local handles. */
static void flags_amos(void)
{
    gni_post_descriptor_t d;
    /* GET_W_FLAG: 16 bytes ending A; the flag is the first 4 bytes of B. */
    dt_desc(&d, GNI_POST_FMA_GET_W_FLAG, GNI_CQMODE_GLOBAL_EVENT, (void *)(uintptr_t)(8192 - 16), L.mh, 40, hS[right], 16);
    d.sync_flag_value = 0xabcd0000u + (uint32_t)me;
    dt_fma(&t, right, &d);
    CHECK_EQ(load32(&L, 8192), 0xabcd0000u + (uint32_t)me);
    for (size_t i = 0; i < 4; i++) *mem_at(&L, 8192 + i) = pat(SEED_L(me), 8192 + i);
    mem_check(&L, SEED_L(me), 8192 - 16, 16, SEED_S(right), 40, "GET_W_FLAG across a boundary");
    mem_fill(&L, SEED_L(me));
    /* ... and ending exactly at the domain's end (flag in C's last 4 bytes). */
    dt_desc(&d, GNI_POST_FMA_GET_W_FLAG, GNI_CQMODE_GLOBAL_EVENT, (void *)(uintptr_t)(TOTAL - 12), L.mh, 8, hS[right], 8);
    d.sync_flag_value = 0;      /* flag value 1 */
    dt_fma(&t, right, &d);
    CHECK_EQ(load32(&L, TOTAL - 4), 1);
    for (size_t i = 0; i < 4; i++) *mem_at(&L, TOTAL - 4 + i) = pat(SEED_L(me), TOTAL - 4 + i);
    mem_check(&L, SEED_L(me), TOTAL - 12, 8, SEED_S(right), 8, "GET_W_FLAG at the end");
    mem_fill(&L, SEED_L(me));

    /* PUT_W_SYNCFLAG from offset 0 of L, 100 bytes across the target's A/B boundary; the
     * sync flag in the target's C (8-aligned there). */
    const size_t flag_off = B_END + 800;
    dt_desc(&d, GNI_POST_FMA_PUT_W_SYNCFLAG, GNI_CQMODE_GLOBAL_EVENT, (void *)0, L.mh, 8192 - 50, hS[right], 100);
    d.sync_flag_addr = flag_off;
    d.sync_flag_value = 0x5151000000000000ull + (uint64_t)me;
    dt_fma(&t, right, &d);
    dt_barrier();
    CHECK_EQ(load64(&S, flag_off), 0x5151000000000000ull + (uint64_t)left);
    for (size_t i = 0; i < 8; i++) *mem_at(&S, flag_off + i) = pat(SEED_S(me), flag_off + i);
    mem_check(&S, SEED_S(me), 8192 - 50, 100, SEED_L(left), 0, "PUT_W_SYNCFLAG from a segmented source");
    mem_fill(&S, SEED_S(me));
    dt_barrier();

    /* Fetching AMO whose 8-byte result straddles B/C (4 bytes in each); the target word is
     * the start of its B. */
    uint64_t old_mine, old_right;
    {
        uint8_t b[8], c[8];
        for (int i = 0; i < 8; i++) b[i] = pat(SEED_S(right), 8192 + i), c[i] = pat(SEED_S(me), 8192 + i);
        memcpy(&old_right, b, 8);
        memcpy(&old_mine, c, 8);
    }
    dt_desc(&d, GNI_POST_AMO, GNI_CQMODE_GLOBAL_EVENT, (void *)(uintptr_t)(B_END - 4), L.mh, 8192, hS[right], 8);
    d.amo_cmd = GNI_FMA_ATOMIC_FADD;
    d.first_operand = 1000 + (uint64_t)me;
    dt_fma(&t, right, &d);
    CHECK_EQ(load64(&L, B_END - 4), old_right);
    dt_barrier();
    CHECK_EQ(load64(&S, 8192), old_mine + 1000 + (uint64_t)left);
    dt_barrier();
    /* AMO_W_FLAG (fetching): the result ends 4 bytes before B's end, the flag ends B. */
    dt_desc(&d, GNI_POST_AMO_W_FLAG, GNI_CQMODE_GLOBAL_EVENT, (void *)(uintptr_t)(B_END - 12), L.mh, 8192, hS[right], 8);
    d.amo_cmd = GNI_FMA_ATOMIC_FADD;
    d.first_operand = 1;
    d.sync_flag_value = 0x777;
    dt_fma(&t, right, &d);
    CHECK_EQ(load64(&L, B_END - 12), old_right + 1000 + (uint64_t)me);
    CHECK_EQ(load32(&L, B_END - 4), 0x777);
    dt_barrier();
    CHECK_EQ(load64(&S, 8192), old_mine + 1001 + (uint64_t)left);
    mem_fill(&S, SEED_S(me));
    {
        /* everything of L but the 16 bytes at B_END-12.. (AMO result, flag, earlier result) */
        for (size_t i = 0; i < 16; i++) *mem_at(&L, B_END - 12 + i) = pat(SEED_L(me), B_END - 12 + i);
        mem_check(&L, SEED_L(me), 0, 0, 0, 0, "after the AMOs");
    }
    dt_barrier();

    /* A CQ write carrying a segmented local handle (a CQ write reads no local memory). */
    dt_desc(&d, GNI_POST_CQWRITE, GNI_CQMODE_GLOBAL_EVENT, (void *)0, L.mh, 0, hS[right], 0);
    d.cqwrite_value = 0x1234500 + (uint64_t)me;
    GNI_OK(GNI_PostCqWrite(t.eps[right], &d));
    dt_complete(t.cq, &d, GNI_RC_SUCCESS);
    dt_barrier();
    gni_cq_entry_t ev;
    GNI_OK(GNI_CqGetEvent(rcq, &ev));
    CHECK_EQ(GNI_CQ_GET_DATA(ev), 0x1234500 + (uint64_t)left);
    GNI_EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(rcq, &ev));
    dt_barrier();
}

/* Refused posts: the error from the post, no event, nothing touched on either side. */
static void bounds(void)
{
    gni_post_descriptor_t d;
    struct {
        gni_post_type_t type;
        uint64_t loff, len;
        gni_return_t rc;
        const char *what;
    } bad[] = {
        { GNI_POST_FMA_GET, TOTAL - 4, 8, GNI_RC_INVALID_PARAM, "FMA GET 4 bytes past the end" },
        { GNI_POST_RDMA_GET, TOTAL - 4, 8, GNI_RC_INVALID_PARAM, "RDMA GET 4 bytes past the end" },
        { GNI_POST_RDMA_GET, TOTAL, 4, GNI_RC_INVALID_PARAM, "RDMA GET at the end" },
        { GNI_POST_FMA_PUT, TOTAL - 7, 8, GNI_RC_INVALID_PARAM, "FMA PUT 1 byte past the end" },
        { GNI_POST_FMA_PUT, TOTAL, 1, GNI_RC_INVALID_PARAM, "FMA PUT at the end" },
        { GNI_POST_FMA_PUT_W_SYNCFLAG, TOTAL - 3, 4, GNI_RC_INVALID_PARAM, "PUT_W_SYNCFLAG 1 byte past" },
        { GNI_POST_RDMA_PUT, TOTAL - 100, 101, GNI_RC_INVALID_PARAM, "RDMA PUT 1 byte past the end" },
        { GNI_POST_FMA_GET_W_FLAG, TOTAL - 8, 8, GNI_RC_INVALID_PARAM, "GET_W_FLAG whose flag is past the end" },
        { GNI_POST_AMO, TOTAL - 4, 8, GNI_RC_INVALID_PARAM, "AMO result 4 bytes past the end" },
        { GNI_POST_AMO_W_FLAG, TOTAL - 4, 4, GNI_RC_INVALID_PARAM, "AMO_W_FLAG (32-bit) whose flag is past the end" },
        { GNI_POST_FMA_GET, UINT64_MAX - 3, 8, GNI_RC_INVALID_PARAM, "FMA GET at an offset that overflows" },
        { GNI_POST_RDMA_PUT, UINT64_MAX, 2, GNI_RC_INVALID_PARAM, "RDMA PUT at an offset that overflows" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        dt_desc(&d, bad[i].type, GNI_CQMODE_GLOBAL_EVENT, (void *)(uintptr_t)bad[i].loff, L.mh, 0, hS[right], bad[i].len);
        d.amo_cmd = bad[i].len == 4 ? GNI_FMA_ATOMIC2_FIADD_S : GNI_FMA_ATOMIC_FADD;
        d.first_operand = 1;
        d.sync_flag_addr = 64;
        d.sync_flag_value = 9;
        gni_return_t rc = bad[i].type == GNI_POST_RDMA_GET || bad[i].type == GNI_POST_RDMA_PUT ? GNI_PostRdma(t.eps[right], &d)
                                                                                               : GNI_PostFma(t.eps[right], &d);
        if (rc != bad[i].rc) SN_FAIL("%s: returned %d (%s), expected %d", bad[i].what, (int)rc, gnit_rc(rc), (int)bad[i].rc);
        no_event(bad[i].what);
        mem_check(&L, SEED_L(me), 0, 0, 0, 0, bad[i].what);
    }
    /* READ_ONLY segments as a GET destination: PERMISSION_ERROR; as an RDMA PUT source: fine. */
    mem_t R;
    mem_make(&R, 1, NULL, GNI_MEM_READ_ONLY);
    mem_fill(&R, 99);
    dt_desc(&d, GNI_POST_FMA_GET, GNI_CQMODE_GLOBAL_EVENT, (void *)(uintptr_t)8000, R.mh, 0, hS[right], 400);
    GNI_EXPECT(GNI_RC_PERMISSION_ERROR, GNI_PostFma(t.eps[right], &d));
    no_event("GET into READ_ONLY segments");
    mem_check(&R, 99, 0, 0, 0, 0, "GET into READ_ONLY segments");
    /* a deregistered segmented handle is no local handle any more */
    mem_free(&R);
    dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, (void *)0, R.mh, 0, hS[right], 8);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(t.eps[right], &d));
    dt_desc(&d, GNI_POST_RDMA_GET, GNI_CQMODE_GLOBAL_EVENT, (void *)0, R.mh, 0, hS[right], 8);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostRdma(t.eps[right], &d));
    /* another rank's segmented handle is not ours */
    if (n > 1) {
        dt_desc(&d, GNI_POST_FMA_GET, GNI_CQMODE_GLOBAL_EVENT, (void *)0, hS[right], 0, hS[right], 8);
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(t.eps[right], &d));
    }
    no_event("stale or foreign handles");
    dt_barrier();
    /* nothing reached the targets */
    mem_check(&S, SEED_S(me), 0, 0, 0, 0, "target of the refused posts");
    dt_barrier();
}

int main(void)
{
    gnit_init(&t, 256);
    me = t.rank;
    n = t.size;
    right = (me + 1) % n;
    left = (me + n - 1) % n;
    GNI_OK(GNI_CqCreate(t.nic, 64, 0, GNI_CQ_NOBLOCK, NULL, NULL, &rcq));
    mem_make(&S, 1, rcq, GNI_MEM_READWRITE);
    mem_make(&P, 0, NULL, GNI_MEM_READWRITE);
    mem_make(&L, 1, NULL, GNI_MEM_READWRITE);
    mem_make(&Q, 0, NULL, GNI_MEM_READWRITE);
    mem_fill(&S, SEED_S(me));
    mem_fill(&P, SEED_P(me));
    mem_fill(&L, SEED_L(me));
    mem_fill(&Q, SEED_Q(me));
    hS = calloc(n, sizeof *hS);
    hP = calloc(n, sizeof *hP);
    bS = calloc(n, sizeof *bS);
    bP = calloc(n, sizeof *bP);
    CHECK(hS && hP && bS && bP);
    gnit_exchange_mem(&t, (void *)(uintptr_t)S.base, S.mh, hS, bS);
    gnit_exchange_mem(&t, (void *)(uintptr_t)P.base, P.mh, hP, bP);
    dt_barrier();

    transfers(0);
    if (me == 0) printf("mem_segments_local: GETs ok\n");
    dt_barrier();
    transfers(1);
    if (me == 0) printf("mem_segments_local: PUTs ok\n");
    flags_amos();
    if (me == 0) printf("mem_segments_local: flags, AMOs and CQ write ok\n");
    bounds();
    if (me == 0) printf("mem_segments_local: bounds ok\n");

    mem_free(&S);
    mem_free(&P);
    mem_free(&L);
    mem_free(&Q);
    GNI_OK(GNI_CqDestroy(rcq));
    free(hS);
    free(hP);
    free(bS);
    free(bP);
    gnit_fini(&t);
    printf("mem_segments_local: rank %d ok\n", me);
    return 0;
}
