/* The collective engine as Aries programs drive it (digest 8b): ranks form groups of G
 * consecutive ranks; each group's first rank owns a VCE whose PE children are the group's
 * ranks; the group VCEs form a heap-ordered tree of arity A (group 0's VCE is the root, a
 * VCE's VCE children follow its PE children).  CE ids are exchanged with PMI_Allgather,
 * endpoints carry arbitrary remote ids.  Every rank then runs every gni_ce_cmd_type_t for
 * several rounds with operands that depend on (rank, round) and checks, against a local
 * computation, result1/result2, the red_id, status and FP exception accessors, the POST
 * event of its descriptor (GLOBAL, data = the endpoint's bound remote_id), and, on VCE
 * owners, one CQE_ONCOMP event per round carrying the CE id.  Also: every rank receives
 * bit-identical floating-point sums; an overflow with and without the FPE trap; a round
 * whose contributions disagree fails everywhere (CE error event) and the next one works;
 * a second post before the first completed is INVALID_PARAM; and the reduction as a
 * barrier: tokens every rank put (FMA PUT, completed) into every rank's window before
 * joining are all there once the result arrives.
 * Usage: ce_basic [G [A [rounds]]] */
#include "gnitest.h"
#include <math.h>
#include <sched.h>
#include <unistd.h>

static gnit_t t;
static int G = 4, A = 2, rounds = 3;
static int ngroups, group, leader, is_leader;
static uint32_t *ce_ids;                 /* every rank's VCE id (leaders), allgathered */
static gni_ce_handle_t ce;
static gni_cq_handle_t cecq;
static gni_ep_handle_t join_ep;          /* to our leader, attributes (VCE, index, PE) */
static gni_ce_result_t *res;             /* registered result buffer */
static gni_mem_handle_t rmh;
static gni_ep_handle_t kids[GNI_CE_MAX_CHILDREN], parent_ep;
static int nkid_eps;

static int group_size(int g) { int n = t.size - g * G; return n < G ? n : G; }

/* Sets up the tree (module comment). */
static void build_tree(void)
{
    ngroups = (t.size + G - 1) / G;
    group = t.rank / G;
    leader = group * G;
    is_leader = t.rank == leader;
    uint32_t mine = (uint32_t)-1;
    if (is_leader) {
        GNI_OK(GNI_CeCreate(t.nic, &ce));
        GNI_OK(GNI_CeGetId(ce, &mine));
    }
    ce_ids = calloc(t.size, sizeof(uint32_t));
    CHECK(ce_ids);
    CHECK(PMI_Allgather(&mine, ce_ids, sizeof(mine)) == PMI_SUCCESS);
    if (is_leader) {
        int nmem = group_size(group), n = 0;
        for (int i = 0; i < nmem; i++, n++) {
            GNI_OK(GNI_EpCreate(t.nic, t.cq, &kids[n]));
            GNI_OK(GNI_EpBind(kids[n], t.addrs[leader + i], 7000 + 100 * t.rank + leader + i));
            GNI_OK(GNI_EpSetCeAttr(kids[n], (uint32_t)-1, n, GNI_CE_CHILD_PE));
        }
        for (int c = group * A + 1; c <= group * A + A && c < ngroups; c++, n++) {
            GNI_OK(GNI_EpCreate(t.nic, t.cq, &kids[n]));
            GNI_OK(GNI_EpBind(kids[n], t.addrs[c * G], 8000 + c));
            GNI_OK(GNI_EpSetCeAttr(kids[n], ce_ids[c * G], n, GNI_CE_CHILD_VCE));
        }
        gni_ep_handle_t parent = NULL;
        nkid_eps = n;
        if (group > 0) {
            int p = (group - 1) / A, pos = group_size(p) + (group - 1) % A;
            GNI_OK(GNI_EpCreate(t.nic, t.cq, &parent));
            GNI_OK(GNI_EpBind(parent, t.addrs[p * G], 9000 + p));
            GNI_OK(GNI_EpSetCeAttr(parent, ce_ids[p * G], pos, GNI_CE_CHILD_VCE));
        }
        GNI_OK(GNI_CqCreate(t.nic, 64, 0, GNI_CQ_NOBLOCK, NULL, NULL, &cecq));
        GNI_OK(GNI_CeConfigure(ce, kids, n, parent, cecq, GNI_CE_MODE_CQE_ONCOMP | GNI_CE_MODE_ROUND_NEAR));
        /* Configured once only. */
        GNI_EXPECT(GNI_RC_INVALID_STATE, GNI_CeConfigure(ce, kids, n, parent, cecq, 0));
        parent_ep = parent;
    }
    CHECK(PMI_Barrier() == PMI_SUCCESS);
    GNI_OK(GNI_EpCreate(t.nic, t.cq, &join_ep));
    GNI_OK(GNI_EpBind(join_ep, t.addrs[leader], GNIT_RID(t.rank, leader)));
    GNI_OK(GNI_EpSetCeAttr(join_ep, ce_ids[leader], t.rank - leader, GNI_CE_CHILD_PE));
}

static gni_post_descriptor_t desc;

static void post(uint32_t cmd, uint32_t mode, uint64_t a, uint64_t b, uint64_t red_id)
{
    memset(&desc, 0, sizeof(desc));
    desc.type = GNI_POST_CE;
    desc.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
    desc.local_addr = (uint64_t)(uintptr_t)res;
    desc.local_mem_hndl = rmh;
    desc.ce_cmd = cmd;
    desc.ce_mode = mode;
    desc.ce_red_id = red_id;
    desc.first_operand = a;
    desc.second_operand = b;
    res->result1 = res->result2 = 0xdeadbeefull;
    GNI_OK(GNI_PostFma(join_ep, &desc));
}

/* Waits for the result (as programs do: CeCheckResult + sched_yield), then for the POST
 * event of our descriptor, and on leaders for the VCE's completion event.  The length
 * argument goes through what programs pass: 1 (one result), 0 and sizeof. */
static gni_return_t finish(int expect_ce_ok)
{
    static const uint32_t lengths[3] = { 1, 0, sizeof(gni_ce_result_t) };
    static unsigned calls;
    uint32_t len = lengths[calls++ % 3];
    gni_return_t rc;
    long spins = 0;
    while ((rc = GNI_CeCheckResult(res, len)) == GNI_RC_NOT_DONE) {
        if (++spins > 50000000L) SN_FAIL("reduction never completed");
        sched_yield();
    }
    gni_cq_entry_t ev = gnit_wait(t.cq, GNI_RC_SUCCESS);
    gni_post_descriptor_t *done = NULL;
    CHECK(GNI_CQ_STATUS_OK(ev));
    CHECK_EQ(GNI_CQ_GET_INST_ID(ev), GNIT_RID(t.rank, leader));
    GNI_OK(GNI_GetCompleted(t.cq, ev, &done));
    CHECK(done == &desc);
    if (is_leader) {
        gni_return_t erc;
        spins = 0;
        while ((erc = GNI_CqGetEvent(cecq, &ev)) == GNI_RC_NOT_DONE) {
            if (++spins > 50000000L) SN_FAIL("no collective engine event");
            sched_yield();
        }
        CHECK_EQ(erc, expect_ce_ok ? GNI_RC_SUCCESS : GNI_RC_TRANSACTION_ERROR);
        CHECK_EQ(GNI_CQ_GET_CE_ID(ev), ce_ids[t.rank]);
        CHECK_EQ(GNI_CQ_STATUS_OK(ev), expect_ce_ok);
    }
    return rc;
}

/* Operand helpers: 32-bit values go in the low half; the high half carries junk the _S
 * commands must ignore. */
static uint64_t s32(int32_t v) { return 0xabcd000000000000ull | (uint32_t)v; }
static uint64_t f64(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static double as_f64(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }
static uint64_t f32(float f) { uint32_t u; memcpy(&u, &f, 4); return 0x5555000000000000ull | u; }
static float as_f32(uint64_t u) { uint32_t v = (uint32_t)u; float f; memcpy(&f, &v, 4); return f; }

/* Ties: value depends on r % 3, indices are arbitrary and not monotone in rank. */
static long val_of(int r, int k) { return (long)((r + k) % 3) - 1; }
static long idx_of(int r) { return 1000 - 37L * r; }

static void loc_case(uint32_t cmd, int is_max, int gidx, int fp, int s, int k)
{
    long bv = 0, bi = 0;
    for (int r = 0; r < t.size; r++) {
        long v = val_of(r, k), i = idx_of(r);
        int better = r == 0 || (is_max ? v > bv : v < bv) || (v == bv && (gidx ? i > bi : i < bi));
        if (better) { bv = v; bi = i; }
    }
    long mv = val_of(t.rank, k), mi = idx_of(t.rank);
    uint64_t a = fp ? (s ? f32((float)mv) : f64((double)mv)) : (s ? s32((int32_t)mv) : (uint64_t)mv);
    uint64_t b = s ? s32((int32_t)mi) : (uint64_t)mi;
    post(cmd, 0, a, b, 0x100000000ull * k + cmd);
    GNI_OK(finish(1));
    if (fp) {
        double got = s ? as_f32(res->result1) : as_f64(res->result1);
        if (got != (double)bv) SN_FAIL("cmd %#x round %d: value %g, expected %ld", cmd, k, got, bv);
    } else {
        long got = s ? (int32_t)res->result1 : (long)res->result1;
        if (got != bv) SN_FAIL("cmd %#x round %d: value %ld, expected %ld", cmd, k, got, bv);
    }
    long gi = s ? (int32_t)res->result2 : (long)res->result2;
    if (gi != bi) SN_FAIL("cmd %#x round %d: index %ld, expected %ld", cmd, k, gi, bi);
    CHECK_EQ(gni_ce_res_get_red_id(res), (uint32_t)(0x100000000ull * k + cmd));
    CHECK(gni_ce_res_status_ok(res));
    CHECK_EQ(gni_ce_res_get_fpe(res), 0);
}

static uint64_t *tokens, *token_bases;      /* tokens[r]: written by rank r */
static gni_mem_handle_t tmh, *token_mhs;

/* A CE barrier (IADD_S of zeros) after putting our token into every rank's window. */
static void barrier_round(uint64_t round)
{
    static uint64_t src[1];
    src[0] = round * 1000 + (uint64_t)t.rank;
    for (int r = 0; r < t.size; r++) {
        gni_post_descriptor_t d;
        memset(&d, 0, sizeof d);
        d.type = GNI_POST_FMA_PUT;
        d.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
        d.local_addr = (uint64_t)(uintptr_t)src;
        d.remote_addr = token_bases[r] + 8 * (uint64_t)t.rank;
        d.remote_mem_hndl = token_mhs[r];
        d.length = 8;
        GNI_OK(GNI_PostFma(t.eps[r], &d));
        gni_cq_entry_t ev = gnit_wait(t.cq, GNI_RC_SUCCESS);
        gni_post_descriptor_t *done;
        GNI_OK(GNI_GetCompleted(t.cq, ev, &done));
        CHECK(done == &d);
    }
    if (t.rank % 2 == 0) usleep(2000);
    post(GNI_FMA_CE_IADD_S, 0, 0, 0, round);
    GNI_OK(finish(1));
    for (int r = 0; r < t.size; r++)
        if (tokens[r] < round * 1000 || tokens[r] % 1000 != (uint64_t)r)
            SN_FAIL("after CE barrier %llu: token of rank %d is %llu", (unsigned long long)round, r, (unsigned long long)tokens[r]);
}

static void run_round(int k)
{
    barrier_round(2 * (uint64_t)k + 1);
    int n = t.size, me = t.rank;
    /* Bitwise, 64 and 32 bits, two operands. */
    uint64_t and1 = ~0ull, or1 = 0, x1 = 0, and2 = ~0ull, or2 = 0, x2 = 0;
    for (int r = 0; r < n; r++) {
        uint64_t v = ~(1ull << ((r + k) % 64)), w = 0x1111ull * (r + 1) << (k % 8);
        and1 &= v; or1 |= w; x1 ^= w * 3; and2 &= w | v; or2 |= v >> 3; x2 ^= v;
    }
    uint64_t v = ~(1ull << ((me + k) % 64)), w = 0x1111ull * (me + 1) << (k % 8);
    post(GNI_FMA_CE_AND, GNI_CEMODE_TWO_OP, v, w | v, k);
    GNI_OK(finish(1));
    CHECK(res->result1 == and1 && res->result2 == and2);
    post(GNI_FMA_CE_OR, GNI_CEMODE_TWO_OP, w, v >> 3, k);
    GNI_OK(finish(1));
    CHECK(res->result1 == or1 && res->result2 == or2);
    post(GNI_FMA_CE_XOR, GNI_CEMODE_TWO_OP, w * 3, v, k);
    GNI_OK(finish(1));
    CHECK(res->result1 == x1 && res->result2 == x2);
    post(GNI_FMA_CE_AND_S, GNI_CEMODE_TWO_OP, v, w | v, k);
    GNI_OK(finish(1));
    CHECK(res->result1 == (and1 & 0xffffffffull) && res->result2 == (and2 & 0xffffffffull));
    post(GNI_FMA_CE_OR_S, 0, w, v >> 3, k);    /* one operand: result2 is 0 */
    GNI_OK(finish(1));
    CHECK(res->result1 == (or1 & 0xffffffffull) && res->result2 == 0);
    post(GNI_FMA_CE_XOR_S, GNI_CEMODE_TWO_OP, w * 3, v, k);
    GNI_OK(finish(1));
    CHECK(res->result1 == (x1 & 0xffffffffull) && res->result2 == (x2 & 0xffffffffull));

    /* Integer sums, signed, with wrap-around in the 32-bit variant. */
    long s1 = 0, s2 = 0;
    int32_t t1 = 0;
    for (int r = 0; r < n; r++) {
        s1 += (long)r * 1000003L - 5000000000L + k;
        s2 += -7L * r;
        t1 = (int32_t)((uint32_t)t1 + (uint32_t)(0x7ffffff0 - r + k));
    }
    post(GNI_FMA_CE_IADD, GNI_CEMODE_TWO_OP, (uint64_t)((long)me * 1000003L - 5000000000L + k), (uint64_t)(-7L * me), 77);
    GNI_OK(finish(1));
    CHECK_EQ((long)res->result1, s1);
    CHECK_EQ((long)res->result2, s2);
    CHECK_EQ(gni_ce_res_get_red_id(res), 77);
    post(GNI_FMA_CE_IADD_S, 0, s32(0x7ffffff0 - me + k), 0, 78);
    GNI_OK(finish(1));
    CHECK_EQ((int32_t)res->result1, t1);

    /* FP sums of exactly representable values: exact. */
    double d1 = 0, d2 = 0;
    float f1 = 0;
    for (int r = 0; r < n; r++) { d1 += 0.25 * r + k; d2 += -1.5 * r; f1 += 0.5f * (float)r; }
    post(GNI_FMA_CE_FPADD, GNI_CEMODE_TWO_OP, f64(0.25 * me + k), f64(-1.5 * me), 3);
    GNI_OK(finish(1));
    CHECK(as_f64(res->result1) == d1 && as_f64(res->result2) == d2);
    post(GNI_FMA_CE_FPADD_S, 0, f32(0.5f * (float)me), 0, 4);
    GNI_OK(finish(1));
    CHECK(as_f32(res->result1) == f1);

    /* Min/max with an index, every variant. */
    loc_case(GNI_FMA_CE_IMIN_LIDX, 0, 0, 0, 0, k);
    loc_case(GNI_FMA_CE_IMIN_LIDX_S, 0, 0, 0, 1, k);
    loc_case(GNI_FMA_CE_IMAX_LIDX, 1, 0, 0, 0, k);
    loc_case(GNI_FMA_CE_IMAX_LIDX_S, 1, 0, 0, 1, k);
    loc_case(GNI_FMA_CE_IMIN_GIDX, 0, 1, 0, 0, k);
    loc_case(GNI_FMA_CE_IMIN_GIDX_S, 0, 1, 0, 1, k);
    loc_case(GNI_FMA_CE_IMAX_GIDX, 1, 1, 0, 0, k);
    loc_case(GNI_FMA_CE_IMAX_GIDX_S, 1, 1, 0, 1, k);
    loc_case(GNI_FMA_CE_FPMIN_LIDX, 0, 0, 1, 0, k);
    loc_case(GNI_FMA_CE_FPMIN_LIDX_S, 0, 0, 1, 1, k);
    loc_case(GNI_FMA_CE_FPMAX_LIDX, 1, 0, 1, 0, k);
    loc_case(GNI_FMA_CE_FPMAX_LIDX_S, 1, 0, 1, 1, k);
    loc_case(GNI_FMA_CE_FPMIN_GIDX, 0, 1, 1, 0, k);
    loc_case(GNI_FMA_CE_FPMIN_GIDX_S, 0, 1, 1, 1, k);
    loc_case(GNI_FMA_CE_FPMAX_GIDX, 1, 1, 1, 0, k);
    loc_case(GNI_FMA_CE_FPMAX_GIDX_S, 1, 1, 1, 1, k);
}

int main(int argc, char **argv)
{
    if (argc > 1) G = atoi(argv[1]);
    if (argc > 2) A = atoi(argv[2]);
    if (argc > 3) rounds = atoi(argv[3]);
    CHECK(G >= 1 && G <= 16 && A >= 1 && A <= 16);
    gnit_init(&t, 256);
    build_tree();
    res = aligned_alloc(64, 4096);
    CHECK(res);
    GNI_OK(GNI_MemRegister(t.nic, (uint64_t)(uintptr_t)res, 4096, NULL, GNI_MEM_READWRITE, -1, &rmh));

    tokens = aligned_alloc(4096, 4096);
    token_bases = calloc(t.size, 8);
    token_mhs = calloc(t.size, sizeof(gni_mem_handle_t));
    CHECK(tokens && token_bases && token_mhs && t.size <= 512);
    memset(tokens, 0, 4096);
    GNI_OK(GNI_MemRegister(t.nic, (uint64_t)(uintptr_t)tokens, 4096, NULL, GNI_MEM_READWRITE, -1, &tmh));
    gnit_exchange_mem(&t, tokens, tmh, token_mhs, token_bases);
    for (int k = 0; k < rounds; k++) run_round(k);

    /* Inexact sums: every rank receives the same bits. */
    post(GNI_FMA_CE_FPADD, 0, f64(0.1 * (t.rank + 1) + 1e-9 * t.rank), 0, 5);
    GNI_OK(finish(1));
    uint64_t *all = calloc(t.size, 8);
    CHECK(all);
    CHECK(PMI_Allgather(&res->result1, all, 8) == PMI_SUCCESS);
    for (int r = 0; r < t.size; r++) CHECK(all[r] == all[0]);

    if (t.size >= 2) {
        /* Overflow: reported in the FPE bits; a transaction error only when trapped. */
        post(GNI_FMA_CE_FPADD, 0, f64(1.5e308), 0, 6);
        GNI_OK(finish(1));
        CHECK(isinf(as_f64(res->result1)));
        CHECK(gni_ce_res_get_fpe(res) & GNI_CE_FPE_OFLOW);
        post(GNI_FMA_CE_FPADD, GNI_CEMODE_FPE_OFLOW, f64(1.5e308), 0, 7);
        GNI_EXPECT(GNI_RC_TRANSACTION_ERROR, finish(1));
        CHECK(gni_ce_res_get_fpe(res) & GNI_CE_FPE_OFLOW);
        CHECK_EQ(gni_ce_res_get_red_id(res), 7);

        /* Contributions that disagree (rank 1 asks for XOR): fails on every rank. */
        post(t.rank == 1 ? GNI_FMA_CE_XOR : GNI_FMA_CE_IADD, 0, 1, 0, 8);
        GNI_EXPECT(GNI_RC_TRANSACTION_ERROR, finish(0));
        CHECK(!gni_ce_res_status_ok(res));
        post(GNI_FMA_CE_IADD, 0, 1, 0, 9);
        GNI_OK(finish(1));
        CHECK_EQ(res->result1, t.size);

        /* One reduction at a time per endpoint: rank 0 posts twice before the others
         * have posted (they wait in the barrier). */
        if (t.rank == 0) {
            post(GNI_FMA_CE_IADD, 0, 2, 0, 10);
            gni_post_descriptor_t again = desc;
            GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostFma(join_ep, &again));
        }
        CHECK(PMI_Barrier() == PMI_SUCCESS);
        if (t.rank != 0) post(GNI_FMA_CE_IADD, 0, 2, 0, 10);
        GNI_OK(finish(1));
        CHECK_EQ(res->result1, 2 * t.size);
    }

    CHECK(PMI_Barrier() == PMI_SUCCESS);
    GNI_OK(GNI_EpUnbind(join_ep));
    GNI_OK(GNI_EpDestroy(join_ep));
    GNI_OK(GNI_MemDeregister(t.nic, &rmh));
    GNI_OK(GNI_MemDeregister(t.nic, &tmh));
    if (is_leader) {
        GNI_OK(GNI_CeDestroy(ce));
        for (int i = 0; i < nkid_eps; i++) GNI_OK(GNI_EpDestroy(kids[i]));
        if (parent_ep) GNI_OK(GNI_EpDestroy(parent_ep));
        GNI_OK(GNI_CqDestroy(cecq));
    }
    printf("ce_basic: rank %d ok (%d groups of %d, arity %d)\n", t.rank, ngroups, G, A);
    gnit_fini(&t);
    return 0;
}
