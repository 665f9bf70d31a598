/* DMAPP collectives as SHMEM-style runtimes use them: psets over all PEs (strided), over
 * the odd PEs (strided subset) and over all PEs in reverse order (vector), created with
 * arbitrary identifiers, exported with some PEs late (no barrier between export and the
 * first operation), several trees (radix 2 and the default).  Checked: the barrier
 * (every PE's token put before it joined is visible after it), greduce of every valid
 * (type, op) pair at 1, 3 and nelems_max elements against a local computation, results
 * bit-identical on every member, two psets in flight at once, cancel_op, members that
 * start different operations (TRANSACTION_ERROR everywhere), the progress callback
 * running inside dmapp_c_pset_wait, and nelems_max before dmapp_init.
 * Usage: dmapp_coll [rounds] */
#include "dmtest.h"
#include <math.h>
#include <unistd.h>

static uint64_t *tokens;   /* symmetric: tokens[pe] written by pe before each barrier */

static void wait_ok(dmapp_c_pset_handle_t ps) { OK(dmapp_c_pset_wait(ps)); }

static dmapp_c_pset_handle_t make_strided(uint64_t id, uint32_t n, uint32_t base, uint32_t stride, dmapp_c_pset_attrs_t *attrs)
{
    dmapp_c_pset_desc_t d = dm_strided(n, base, stride);
    dmapp_c_pset_handle_t ps = NULL;
    OK(dmapp_c_pset_create(&d, id, 0, attrs, &ps));
    CHECK(ps != NULL);
    if (me % 3 == 1) usleep(20000);          /* some PEs export late */
    OK(dmapp_c_pset_export(ps));
    return ps;
}

/* Barrier: put our token into every member's tokens[me], join, wait, check all tokens. */
static void check_barrier(dmapp_c_pset_handle_t ps, const uint32_t *mem, int n, uint64_t round)
{
    uint64_t v = round * 1000 + (uint64_t)me;
    for (int i = 0; i < n; i++)
        OK(dmapp_put(&tokens[me], sheap(), (dmapp_pe_t)mem[i], &v, 1, DMAPP_QW));
    if (me % 2 == 0) usleep(5000);
    OK(dmapp_c_barrier_join(ps));
    wait_ok(ps);
    /* A member already past this barrier may have put its next token: at least ours. */
    for (int i = 0; i < n; i++)
        if (tokens[mem[i]] < round * 1000 || tokens[mem[i]] % 1000 != mem[i])
            SN_FAIL("after barrier round %llu: token of PE %u is %llu", (unsigned long long)round, mem[i], (unsigned long long)tokens[mem[i]]);
}

/* ---- greduce reference ---- */
enum { T_I32 = DMAPP_C_INT32, T_U32, T_I64, T_U64, T_F, T_D, T_C8, T_C16, T_FL, T_DL, T_IL, T_I64L };
static size_t tsize(int t)
{
    switch (t) {
    case T_I32: case T_U32: case T_F: return 4;
    case T_I64: case T_U64: case T_D: case T_C8: return 8;
    default: return 16;
    }
}
static int is_loc(int t) { return t >= T_FL; }
static int is_float(int t) { return t == T_F || t == T_D || t == T_C8 || t == T_C16 || t == T_FL || t == T_DL; }
static int is_complex(int t) { return t == T_C8 || t == T_C16; }
static int valid(int t, int op)
{
    switch (op) {
    case DMAPP_C_SUM: case DMAPP_C_PROD: return !is_loc(t);
    case DMAPP_C_MAX: case DMAPP_C_MIN: return !is_loc(t) && !is_complex(t);
    case DMAPP_C_MINLOC: case DMAPP_C_MAXLOC: return is_loc(t);
    default: return !is_loc(t) && !is_float(t);
    }
}

/* Element i of PE pe's input as (value, imaginary part or loc). */
static void input(int t, int op, int pe, int i, int k, double *re, double *im, uint64_t *bits)
{
    int logical = op == DMAPP_C_LAND || op == DMAPP_C_LOR || op == DMAPP_C_LXOR;
    if (op == DMAPP_C_PROD) *re = (double)(((pe + i + k) % 3) - 1 == 0 ? 2 : ((pe + i + k) % 3) - 1);
    else if (logical) *re = (pe + i + k) % 3 == 0 ? 0 : pe + i + 1;
    else *re = (double)(((pe * 7 + i * 3 + k) % 11) - (t == T_U32 || t == T_U64 ? 0 : 5)) * (is_float(t) ? 0.5 : 1);
    *im = is_loc(t) ? (double)(100 - pe + i) : (double)((pe + 2 * i) % 3);
    *bits = ((uint64_t)(pe + 1) * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)(i + k) << 17);
    if (is_loc(t)) *re = (double)((pe * 5 + i + k) % 4);
}

static void store(int t, void *p, double re, double im, uint64_t bits, int bitwise)
{
    switch (t) {
    case T_I32: *(int32_t *)p = bitwise ? (int32_t)bits : (int32_t)re; break;
    case T_U32: *(uint32_t *)p = bitwise ? (uint32_t)bits : (uint32_t)re; break;
    case T_I64: *(int64_t *)p = bitwise ? (int64_t)bits : (int64_t)re; break;
    case T_U64: *(uint64_t *)p = bitwise ? bits : (uint64_t)re; break;
    case T_F: *(float *)p = (float)re; break;
    case T_D: *(double *)p = re; break;
    case T_C8: ((dmapp_c_complex8_t *)p)->re = (float)re; ((dmapp_c_complex8_t *)p)->im = (float)im; break;
    case T_C16: ((dmapp_c_complex16_t *)p)->re = re; ((dmapp_c_complex16_t *)p)->im = im; break;
    case T_FL: ((dmapp_c_float_uint64_t *)p)->value = (float)re; ((dmapp_c_float_uint64_t *)p)->loc = (uint64_t)im; break;
    case T_DL: ((dmapp_c_double_uint64_t *)p)->value = re; ((dmapp_c_double_uint64_t *)p)->loc = (uint64_t)im; break;
    case T_IL: ((dmapp_c_int_uint64_t *)p)->value = (int)re; ((dmapp_c_int_uint64_t *)p)->loc = (uint64_t)im; break;
    case T_I64L: ((dmapp_c_int64_uint64_t *)p)->value = (int64_t)re; ((dmapp_c_int64_uint64_t *)p)->loc = (uint64_t)im; break;
    }
}

/* Expected element i over the members mem[0..n). */
static void expect(int t, int op, const uint32_t *mem, int n, int i, int k, void *out)
{
    int bitwise = op == DMAPP_C_BAND || op == DMAPP_C_BOR || op == DMAPP_C_BXOR;
    double re = 0, im = 0;
    uint64_t bits = 0;
    for (int m = 0; m < n; m++) {
        double r, j;
        uint64_t b;
        input(t, op, (int)mem[m], i, k, &r, &j, &b);
        if (m == 0) { re = r; im = j; bits = b; if (op == DMAPP_C_LAND || op == DMAPP_C_LOR || op == DMAPP_C_LXOR) re = r != 0; continue; }
        switch (op) {
        case DMAPP_C_SUM: re += r; im += j; break;
        case DMAPP_C_PROD:
            if (is_complex(t)) { double a = re * r - im * j, c = re * j + im * r; re = a; im = c; }
            else re *= r;
            break;
        case DMAPP_C_MAX: if (r > re) re = r; break;
        case DMAPP_C_MIN: if (r < re) re = r; break;
        case DMAPP_C_LAND: re = (re != 0) && (r != 0); break;
        case DMAPP_C_LOR: re = (re != 0) || (r != 0); break;
        case DMAPP_C_LXOR: re = (re != 0) != (r != 0); break;
        case DMAPP_C_BAND: bits &= b; break;
        case DMAPP_C_BOR: bits |= b; break;
        case DMAPP_C_BXOR: bits ^= b; break;
        case DMAPP_C_MINLOC: if (r < re || (r == re && j < im)) { re = r; im = j; } break;
        case DMAPP_C_MAXLOC: if (r > re || (r == re && j < im)) { re = r; im = j; } break;
        }
    }
    memset(out, 0, tsize(t));
    store(t, out, re, im, bits, bitwise);
}

static int tested_pairs;

static void check_reduce(dmapp_c_pset_handle_t ps, const uint32_t *mem, int n, int t, int op, uint32_t nelems, int k)
{
    size_t sz = tsize(t);
    int bitwise = op == DMAPP_C_BAND || op == DMAPP_C_BOR || op == DMAPP_C_BXOR;
    unsigned char in[256], out[256 + 16], want[16];
    memset(in, 0, sizeof in);
    for (uint32_t i = 0; i < nelems; i++) {
        double r, j;
        uint64_t b;
        input(t, op, me, (int)i, k, &r, &j, &b);
        store(t, in + i * sz, r, j, b, bitwise);
    }
    memset(out, 0xee, sizeof out);
    OK(dmapp_c_greduce_start(ps, in, out, nelems, (dmapp_c_type_t)t, (dmapp_c_op_t)op));
    wait_ok(ps);
    for (uint32_t i = 0; i < nelems; i++) {
        expect(t, op, mem, n, (int)i, k, want);
        /* LOC pairs of 4-byte values have 4 padding bytes: compare value and loc only. */
        int same = (t == T_FL || t == T_IL) ? memcmp(out + i * sz, want, 4) == 0 && memcmp(out + i * sz + 8, want + 8, 8) == 0
                                            : memcmp(out + i * sz, want, sz) == 0;
        if (!same) SN_FAIL("greduce type %d op %d nelems %u element %u differs", t, op, nelems, i);
    }
    CHECK(out[nelems * sz] == 0xee);      /* nothing past the last element */
    tested_pairs++;
}

static int progress_calls;
static int count_progress(void *data) { (void)data; progress_calls++; return 0; }

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 2;
    uint32_t nm = 0;
    OK(dmapp_c_greduce_nelems_max(DMAPP_C_DOUBLE, &nm));   /* before dmapp_init */
    CHECK_EQ(nm, 32);
    dm_init();
    tokens = dmapp_sheap_malloc(sizeof(uint64_t) * (size_t)npes);
    CHECK(tokens);
    memset(tokens, 0, sizeof(uint64_t) * (size_t)npes);
    barrier();

    uint32_t *all = malloc(sizeof(uint32_t) * npes), *rev = malloc(sizeof(uint32_t) * npes), *odd = malloc(sizeof(uint32_t) * npes);
    CHECK(all && rev && odd);
    int nodd = 0;
    for (int p = 0; p < npes; p++) { all[p] = p; rev[p] = npes - 1 - p; if (p % 2) odd[nodd++] = p; }

    dmapp_c_pset_attrs_t radix2 = { .type = DMAPP_C_PSET_ATTRS_VER1, .u.type1.radix = 2 };
    dmapp_c_pset_handle_t world = make_strided(0xC0FFEE, npes, 0, 1, NULL);
    dmapp_c_pset_handle_t world2 = make_strided(0xC0FFEE + 1, npes, 0, 1, &radix2);
    dmapp_c_pset_desc_t vd;
    memset(&vd, 0, sizeof vd);
    vd.type = DMAPP_C_PSET_DELIMITER_VEC;
    vd.u.vec_type.n_pes = npes;
    vd.u.vec_type.vec_pes = rev;
    dmapp_c_pset_handle_t reversed;
    OK(dmapp_c_pset_create(&vd, 77, DMAPP_C_PSET_MODE_FAULT_TOLERANT, &radix2, &reversed));
    OK(dmapp_c_pset_export(reversed));
    OK(dmapp_c_pset_export(reversed));        /* again: no-op */
    dmapp_c_pset_handle_t odds = NULL;
    if (me % 2 == 1) odds = make_strided(0x0dd, nodd, 1, 2, &radix2);
    else if (nodd > 0) {
        dmapp_c_pset_desc_t d = dm_strided(nodd, 1, 2);
        dmapp_c_pset_handle_t x;
        RC_EQ(dmapp_c_pset_create(&d, 0x0dd, 0, NULL, &x), DMAPP_RC_INVALID_PARAM);   /* not a member */
    }

    static const int types[] = { T_I32, T_U32, T_I64, T_U64, T_F, T_D, T_C8, T_C16, T_FL, T_DL, T_IL, T_I64L };
    static const int ops[] = { DMAPP_C_SUM, DMAPP_C_MAX, DMAPP_C_MIN, DMAPP_C_PROD, DMAPP_C_LAND, DMAPP_C_BAND,
                               DMAPP_C_LOR, DMAPP_C_BOR, DMAPP_C_LXOR, DMAPP_C_BXOR, DMAPP_C_MINLOC, DMAPP_C_MAXLOC };
    for (int k = 0; k < rounds; k++) {
        check_barrier(world, all, npes, 3 * k + 1);
        check_barrier(world2, all, npes, 3 * k + 2);
        check_barrier(reversed, rev, npes, 3 * k + 3);
        for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
            for (size_t oi = 0; oi < sizeof ops / sizeof *ops; oi++) {
                int t = types[ti], op = ops[oi];
                uint32_t max = 0;
                OK(dmapp_c_greduce_nelems_max((dmapp_c_type_t)t, &max));
                CHECK_EQ(max, 256 / tsize(t));
                if (!valid(t, op)) {
                    unsigned char buf[64];
                    RC_EQ(dmapp_c_greduce_start(world, buf, buf, 1, (dmapp_c_type_t)t, (dmapp_c_op_t)op), DMAPP_RC_INVALID_PARAM);
                    continue;
                }
                dmapp_c_pset_handle_t ps = (ti + oi + k) % 3 == 0 ? world : (ti + oi + k) % 3 == 1 ? world2 : reversed;
                const uint32_t *mem = ps == reversed ? rev : all;
                check_reduce(ps, mem, npes, t, op, 1, k);
                check_reduce(ps, mem, npes, t, op, 3, k);
                check_reduce(ps, mem, npes, t, op, max, k);
            }
        if (odds) {
            check_barrier(odds, odd, nodd, 1000 + k);
            check_reduce(odds, odd, nodd, T_I64, DMAPP_C_SUM, 5, k);
        }
    }

    /* Two psets in flight at once (odd PEs in both). */
    int64_t a = me + 1, sa = 0, b = 10 * me, sb = 0;
    OK(dmapp_c_greduce_start(world, &a, &sa, 1, DMAPP_C_INT64, DMAPP_C_SUM));
    if (odds) OK(dmapp_c_greduce_start(odds, &b, &sb, 1, DMAPP_C_INT64, DMAPP_C_SUM));
    /* One operation at a time per pset. */
    RC_EQ(dmapp_c_barrier_join(world), DMAPP_RC_BUSY);
    RC_EQ(dmapp_c_pset_destroy(world), DMAPP_RC_RESOURCE_ERROR);
    if (odds) wait_ok(odds);
    wait_ok(world);
    CHECK_EQ(sa, (int64_t)npes * (npes + 1) / 2);
    if (odds) { int64_t w = 0; for (int i = 0; i < nodd; i++) w += 10 * odd[i]; CHECK_EQ(sb, w); }
    OK(dmapp_c_pset_test(world));             /* nothing in flight */

    /* Inexact double sums: every member gets the same bits. */
    double x = 0.1 * (me + 1) + 1e-7 * me, sx = 0;
    OK(dmapp_c_greduce_start(world2, &x, &sx, 1, DMAPP_C_DOUBLE, DMAPP_C_SUM));
    wait_ok(world2);
    double *sums = malloc(sizeof(double) * npes);
    CHECK(sums);
    CHECK(PMI_Allgather(&sx, sums, sizeof sx) == PMI_SUCCESS);
    for (int p = 0; p < npes; p++) CHECK(memcmp(&sums[p], &sums[0], sizeof sx) == 0);

    /* Progress callbacks run while waiting (PE 0 waits for the others, which are late). */
    OK(dmapp_register_progress_cb(count_progress, NULL));
    if (me != 0) usleep(30000);
    OK(dmapp_c_barrier_join(world));
    wait_ok(world);
    if (me == 0 && npes > 1) CHECK(progress_calls > 0);
    OK(dmapp_deregister_progress_cb(count_progress));

    if (npes >= 2) {
        /* Members that start different operations: an error on every member, then the
         * pset works again. */
        int64_t v = 1, s = 0;
        if (me == 1) OK(dmapp_c_barrier_join(world));
        else OK(dmapp_c_greduce_start(world, &v, &s, 1, DMAPP_C_INT64, DMAPP_C_SUM));
        RC_EQ(dmapp_c_pset_wait(world), DMAPP_RC_TRANSACTION_ERROR);
        OK(dmapp_c_greduce_start(world, &v, &s, 1, DMAPP_C_INT64, DMAPP_C_SUM));
        wait_ok(world);
        CHECK_EQ(s, npes);

        /* cancel_op: PE 0 joins and cancels before the others start; its out is never
         * written, the pset is BUSY for it until the others complete the round. */
        int64_t c = 5, sc = -1;
        if (me == 0) {
            OK(dmapp_c_greduce_start(world, &c, &sc, 1, DMAPP_C_INT64, DMAPP_C_SUM));
            OK(dmapp_c_pset_cancel_op(world));
            OK(dmapp_c_pset_test(world));     /* nothing in flight for PE 0 */
            RC_EQ(dmapp_c_barrier_join(world), DMAPP_RC_BUSY);
            OK(dmapp_c_pset_destroy(world2));    /* its other members still hold theirs */
            world2 = NULL;
        }
        barrier();
        if (me != 0) {
            OK(dmapp_c_greduce_start(world, &c, &sc, 1, DMAPP_C_INT64, DMAPP_C_SUM));
            wait_ok(world);
            CHECK_EQ(sc, 5 * npes);
        }
        barrier();
        if (me == 0) {
            CHECK_EQ(sc, -1);
            OK(dmapp_c_barrier_join(world));  /* the abandoned round is complete now */
        } else {
            OK(dmapp_c_barrier_join(world));
        }
        wait_ok(world);
        OK(dmapp_c_pset_cancel_op(world));    /* nothing in flight: no-op */
    }

    barrier();
    OK(dmapp_c_pset_destroy(world));
    RC_EQ(dmapp_c_pset_destroy(world), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_c_barrier_join(world), DMAPP_RC_INVALID_PARAM);
    if (world2) OK(dmapp_c_pset_destroy(world2));
    OK(dmapp_c_pset_destroy(reversed));
    if (odds) OK(dmapp_c_pset_destroy(odds));
    barrier();
    OK(dmapp_finalize());
    printf("dmapp_coll: PE %d ok (%d reductions checked)\n", me, tested_pairs);
    return 0;
}
