/* uTofu barrier circuits between MPI ranks: a three-gate chain that works for any rank
 * count (gather along the ranks, broadcast back) and the butterfly of the guide's
 * sample when the count is a power of two; every reduce op and type, identical results
 * on every rank (compared bit for bit), MAXLOC ties, BARRIER_MISMATCH, the one-operation
 * rule (BUSY), the poll/op pairing, and the argument checks. */
#include "utest.h"
#include <mpi.h>
#include <string.h>

static int rank, n;

static void run_barrier(utofu_vbg_id_t s)
{
    UCHECK(utofu_barrier(s, 0));
    CHECK_EQ(utofu_barrier(s, 0), UTOFU_ERR_BUSY);                  /* one at a time */
    CHECK_EQ(utofu_poll_reduce_uint64(s, 0, (uint64_t[6]){0}), UTOFU_ERR_INVALID_OP);
    int rc;
    while ((rc = utofu_poll_barrier(s, 0)) == UTOFU_ERR_NOT_COMPLETED) ;
    UCHECK(rc);
    CHECK_EQ(utofu_poll_barrier(s, 0), UTOFU_ERR_BUSY);             /* nothing started */
}

static int reduce_u64(utofu_vbg_id_t s, int op, uint64_t *d, size_t num, uint64_t *out)
{
    int rc = utofu_reduce_uint64(s, op, d, num, 0);
    if (rc) return rc;
    while ((rc = utofu_poll_reduce_uint64(s, 0, out)) == UTOFU_ERR_NOT_COMPLETED) ;
    return rc;
}

static int reduce_dbl(utofu_vbg_id_t s, double *d, size_t num, double *out)
{
    int rc = utofu_reduce_double(s, UTOFU_REDUCE_OP_BFPSUM, d, num, 0);
    if (rc) return rc;
    while ((rc = utofu_poll_reduce_double(s, 0, out)) == UTOFU_ERR_NOT_COMPLETED) ;
    return rc;
}

/* The same bytes on every rank. */
static void same_everywhere(const void *p, int len)
{
    char *all = malloc((size_t)len * n);
    MPI_Allgather((void *)p, len, MPI_BYTE, all, len, MPI_BYTE, MPI_COMM_WORLD);
    for (int r = 0; r < n; r++) CHECK(memcmp(all + (size_t)r * len, p, len) == 0);
    free(all);
}

static void exercise(utofu_vbg_id_t s, int rounds)
{
    for (int i = 0; i < rounds; i++) run_barrier(s);
    uint64_t sum = 0, mx = 0, band = ~0ULL, bor = 0, bxor = 0;
    for (int r = 0; r < n; r++) {
        uint64_t v = 0x1000ULL * (r + 1) + (uint64_t)r * 7;
        sum += v; mx = v > mx ? v : mx; band &= v; bor |= v; bxor ^= v;
    }
    uint64_t mine = 0x1000ULL * (rank + 1) + (uint64_t)rank * 7, d[6], o[6];
    for (int i = 0; i < rounds; i++) {
        for (int k = 0; k < 6; k++) d[k] = mine + (uint64_t)k + (uint64_t)i;
        UCHECK(reduce_u64(s, UTOFU_REDUCE_OP_SUM, d, 6, o));
        for (int k = 0; k < 6; k++) if (o[k] != sum + ((uint64_t)k + (uint64_t)i) * (uint64_t)n) SN_FAIL("round %d elem %d: got %llu want %llu (mine %llu)", i, k, (unsigned long long)o[k], (unsigned long long)(sum + ((uint64_t)k + (uint64_t)i) * (uint64_t)n), (unsigned long long)(mine+k+i));
    }
    d[0] = mine;
    UCHECK(reduce_u64(s, UTOFU_REDUCE_OP_MAX, d, 1, o)); CHECK(o[0] == mx);
    UCHECK(reduce_u64(s, UTOFU_REDUCE_OP_BAND, d, 1, o)); CHECK(o[0] == band);
    UCHECK(reduce_u64(s, UTOFU_REDUCE_OP_BOR, d, 1, o)); CHECK(o[0] == bor);
    UCHECK(reduce_u64(s, UTOFU_REDUCE_OP_BXOR, d, 1, o)); CHECK(o[0] == bxor);
    /* SUM wraps. */
    d[0] = ~0ULL;
    UCHECK(reduce_u64(s, UTOFU_REDUCE_OP_SUM, d, 1, o)); CHECK(o[0] == (uint64_t)0 - (uint64_t)n);
    /* MAXLOC: pair 0 ties everywhere (the smallest location wins), pair 1 has one max. */
    d[0] = 50; d[1] = 100 + (uint64_t)rank; d[2] = (uint64_t)(rank == n - 1 ? 9 : 3); d[3] = (uint64_t)rank; d[4] = 1; d[5] = 7;
    UCHECK(reduce_u64(s, UTOFU_REDUCE_OP_MAXLOC, d, 6, o));
    CHECK(o[0] == 50 && o[1] == 100); CHECK(o[2] == 9 && o[3] == (uint64_t)(n - 1)); CHECK(o[4] == 1 && o[5] == 7);
    /* REDUCE_OP_BARRIER through reduce_uint64 is a barrier that leaves data alone. */
    o[0] = 12345;
    UCHECK(reduce_u64(s, UTOFU_REDUCE_OP_BARRIER, d, 1, o)); CHECK(o[0] == 12345);
    /* BFPSUM: identical bits everywhere. */
    double dd[3], od[3];
    for (int i = 0; i < rounds; i++) {
        dd[0] = i + 0.1 * rank; dd[1] = 1e16 * (rank % 2 ? 1 : -1) + 0.3 * rank; dd[2] = 1.0 / (rank + 3);
        UCHECK(reduce_dbl(s, dd, 3, od));
        same_everywhere(od, sizeof od);
        double want = 0;
        for (int r = 0; r < n; r++) want += i + 0.1 * r;
        CHECK(od[0] > want - 1e-9 * (1 + want) && od[0] < want + 1e-9 * (1 + want));
    }
    /* Results are written only on success: a mismatch leaves o alone on every rank. */
    d[0] = 1; o[0] = 777;
    CHECK_EQ(reduce_u64(s, rank == 0 ? UTOFU_REDUCE_OP_MAX : UTOFU_REDUCE_OP_SUM, d, 1, o), n > 1 ? UTOFU_ERR_BARRIER_MISMATCH : UTOFU_SUCCESS);
    if (n > 1) CHECK(o[0] == 777);
    CHECK_EQ(reduce_u64(s, UTOFU_REDUCE_OP_SUM, d, rank == 0 ? 2 : 1, o), n > 1 ? UTOFU_ERR_BARRIER_MISMATCH : UTOFU_SUCCESS);
    /* and the circuit works on afterwards. */
    run_barrier(s);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    sntest_rank = rank;
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    utofu_tni_id_t *tnis; size_t nt;
    UCHECK(utofu_get_barrier_tnis(&tnis, &nt));
    utofu_tni_id_t tni = tnis[rank % nt];
    free(tnis);

    /* The chain: S (start/end), R (gathers x_0..x_i), B (broadcasts the total back). */
    utofu_vbg_id_t g[3], *all = malloc(sizeof g * n);
    UCHECK(utofu_alloc_vbg(tni, 3, 0, g));
    utofu_tni_id_t t; utofu_bg_id_t bg; uint8_t c[6];
    UCHECK(utofu_query_vbg_info(g[0], c, &t, &bg, NULL)); CHECK_EQ(t, tni); CHECK(bg < 16);
    UCHECK(utofu_query_vbg_info(g[1], c, &t, &bg, NULL)); CHECK(bg >= 16 && bg < 48);
    MPI_Allgather(g, 3, MPI_UINT64_T, all, 3, MPI_UINT64_T, MPI_COMM_WORLD);
#define G(r, k) all[3 * (r) + (k)]
    struct utofu_vbg_setting st[3];
    memset(st, 0, sizeof st);
    int last = n - 1;
    st[0] = (struct utofu_vbg_setting){ g[0], g[2], UTOFU_VBG_ID_NULL, g[1], UTOFU_VBG_ID_NULL, { UTOFU_PATH_COORD_NULL, 0, 0 } };
    st[1] = (struct utofu_vbg_setting){ g[1], g[0], rank > 0 ? G(rank - 1, 1) : UTOFU_VBG_ID_NULL,
                                        rank == last ? g[2] : UTOFU_VBG_ID_NULL, rank < last ? G(rank + 1, 1) : UTOFU_VBG_ID_NULL, { UTOFU_PATH_COORD_NULL, 0, 0 } };
    st[2] = (struct utofu_vbg_setting){ g[2], rank == last ? g[1] : UTOFU_VBG_ID_NULL, rank < last ? G(rank + 1, 2) : UTOFU_VBG_ID_NULL,
                                        g[0], rank > 0 ? G(rank - 1, 2) : UTOFU_VBG_ID_NULL, { UTOFU_PATH_COORD_NULL, 0, 0 } };
    /* settings may come in any order after the first */
    struct utofu_vbg_setting swapped[3] = { st[0], st[2], st[1] };
    UCHECK(utofu_set_vbg(swapped, 3));
    MPI_Barrier(MPI_COMM_WORLD);
    exercise(g[0], rounds);

    /* Argument checks (nothing started, nothing changed). */
    uint64_t d[7] = { 0 };
    double dd[4] = { 0 };
    CHECK_EQ(utofu_reduce_uint64(g[0], UTOFU_REDUCE_OP_SUM, d, 0, 0), UTOFU_ERR_INVALID_NUMBER);
    CHECK_EQ(utofu_reduce_uint64(g[0], UTOFU_REDUCE_OP_SUM, d, 7, 0), UTOFU_ERR_INVALID_NUMBER);
    CHECK_EQ(utofu_reduce_uint64(g[0], UTOFU_REDUCE_OP_MAXLOC, d, 3, 0), UTOFU_ERR_INVALID_NUMBER);
    CHECK_EQ(utofu_reduce_uint64(g[0], UTOFU_REDUCE_OP_BFPSUM, d, 1, 0), UTOFU_ERR_INVALID_OP);
    CHECK_EQ(utofu_reduce_uint64(g[0], 9, d, 1, 0), UTOFU_ERR_INVALID_OP);
    CHECK_EQ(utofu_reduce_double(g[0], UTOFU_REDUCE_OP_SUM, dd, 1, 0), UTOFU_ERR_INVALID_OP);
    CHECK_EQ(utofu_reduce_double(g[0], UTOFU_REDUCE_OP_BFPSUM, dd, 4, 0), UTOFU_ERR_INVALID_NUMBER);
    CHECK_EQ(utofu_reduce_uint64(g[0], UTOFU_REDUCE_OP_SUM, NULL, 1, 0), UTOFU_ERR_INVALID_POINTER);
    CHECK_EQ(utofu_barrier(g[0], 1), UTOFU_ERR_INVALID_FLAGS);
    CHECK_EQ(utofu_barrier(g[1], 0), UTOFU_ERR_INVALID_VBG_ID);        /* a relay is no handle */
    CHECK_EQ(utofu_barrier(UTOFU_VBG_ID_NULL, 0), UTOFU_ERR_INVALID_VBG_ID);
    CHECK_EQ(utofu_poll_barrier(g[0], 0), UTOFU_ERR_BUSY);
    CHECK_EQ(utofu_set_vbg(&st[1], 1), UTOFU_ERR_INVALID_VBG_ID);      /* first must be the start gate */
    struct utofu_vbg_setting bad = st[0];
    bad.dst_lcl_vbg_id = G((rank + 1) % n, 0) == g[0] ? UTOFU_VBG_ID_NULL + 0 * 1 : G((rank + 1) % n, 0);
    if (n > 1) CHECK_EQ(utofu_set_vbg(&bad, 1), UTOFU_ERR_INVALID_DATA);  /* signals stay local */
    bad = st[0];
    bad.dst_path_coords[0] = 2;
    CHECK_EQ(utofu_set_vbg(&bad, 1), UTOFU_ERR_INVALID_PATH);

    /* The guide's butterfly when the rank count is a power of two. */
    if ((n & (n - 1)) == 0 && n >= 2) {
        utofu_vbg_id_t h[3];
        UCHECK(utofu_alloc_vbg(tni, 3, UTOFU_VBG_FLAG_THREAD_SAFE, h));
        utofu_vbg_id_t *hs = malloc(sizeof h * n);
        MPI_Allgather(h, 3, MPI_UINT64_T, hs, 3, MPI_UINT64_T, MPI_COMM_WORLD);
        int lg = 0;
        while ((1 << lg) < n) lg++;
        /* lg gates in a cycle of signals (the sample's circuit for 8 ranks): gate k sends
         * its packet to gate k+1 of rank ^ (1 << k) and receives from gate k-1 of
         * rank ^ (1 << (k-1)); with one gate it signals itself. */
        if (lg <= 3) {
            struct utofu_vbg_setting bs[3];
            for (int k = 0; k < lg; k++) {
                int from = (k + lg - 1) % lg, to = (k + 1) % lg;
                bs[k].vbg_id = h[k];
                bs[k].src_lcl_vbg_id = h[from];
                bs[k].src_rmt_vbg_id = hs[3 * (rank ^ (1 << from)) + from];
                bs[k].dst_lcl_vbg_id = h[to];
                bs[k].dst_rmt_vbg_id = hs[3 * (rank ^ (1 << k)) + to];
                bs[k].dst_path_coords[0] = UTOFU_PATH_COORD_NULL;
            }
            UCHECK(utofu_set_vbg(bs, (size_t)lg));
            MPI_Barrier(MPI_COMM_WORLD);
            exercise(h[0], rounds);
        }
        UCHECK(utofu_free_vbg(h, 3));
        free(hs);
    }

    /* Free: the same ids and count as allocated. */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_EQ(utofu_free_vbg(g, 2), UTOFU_ERR_INVALID_NUMBER);
    utofu_vbg_id_t wrong[3] = { g[0], g[2], g[1] };
    CHECK_EQ(utofu_free_vbg(wrong, 3), UTOFU_ERR_INVALID_VBG_ID);
    UCHECK(utofu_free_vbg(g, 3));
    CHECK_EQ(utofu_free_vbg(g, 3), UTOFU_ERR_INVALID_VBG_ID);
    /* Gates run out with the share: at most 16 start/end gates and 32 relays per TNI and node. */
    utofu_vbg_id_t many[40];
    CHECK_EQ(utofu_alloc_vbg(tni, 34, 0, many), UTOFU_ERR_FULL);
    CHECK_EQ(utofu_alloc_vbg(tni, 0, 0, many), UTOFU_ERR_INVALID_NUMBER);
    CHECK_EQ(utofu_alloc_vbg(6, 1, 0, many), UTOFU_ERR_INVALID_TNI_ID);
    CHECK_EQ(utofu_alloc_vbg(tni, 1, 2, many), UTOFU_ERR_INVALID_FLAGS);
    free(all);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("utofu_barrier: rank %d of %d ok\n", rank, n);
    MPI_Finalize();
    return 0;
}
