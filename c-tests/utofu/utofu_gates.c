/* Barrier gates as a library for Fugaku builds them, without exchanging VBG ids: every
 * rank computes its peers' VBG ids in Fujitsu's layout (BG in bits 0-5, coordinates from
 * jTofu in bits 32-59, TNI in bits 61-63) from processes per node and local rank
 * (fugaku.h: the TNI and the first start/end and relay BGs utofu.h's table gives each
 * rank), sets a butterfly circuit over 2^k ranks with them and runs barriers and
 * reductions.  What each rank's utofu_alloc_vbg returned is compared with the computed
 * ids only afterwards.  Then bad input: malformed ids, a TNI outside the share.
 *
 * Argument "masks": the launcher wrapper set UTOFU_BG_MASK_1 = (1 << r) | (0x7 <<
 * (16 + 3r)) for local rank r and no other BG mask: TNI 1 only, start/end BG r, relays
 * from 16 + 3r. */
#include "fugaku.h"
#include <mpi.h>

#define MAXK 4

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n, k = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    sntest_rank = rank;
    while ((1 << k) < n) k++;
    if ((1 << k) != n || k < 2 || k > MAXK) SKIP("a butterfly over 4, 8 or 16 ranks (%d)", n);
    int rounds = argc > 2 ? atoi(argv[2]) : 20;
    int masks = argc > 1 && !strcmp(argv[1], "masks");
    struct place *pl = job_places(rank, n);

    /* Every rank's TNI and gates: gate 0 its first start/end BG, gates 1.. its relays. */
    utofu_tni_id_t *tni = calloc((size_t)n, sizeof *tni);
    utofu_vbg_id_t (*gate)[MAXK] = calloc((size_t)n, sizeof *gate);
    for (int r = 0; r < n; r++) {
        int start, relay;
        if (masks) { tni[r] = 1; start = pl[r].local; relay = 16 + 3 * pl[r].local; }
        else {
            utofu_cq_id_t cq;
            fugaku_tni_cq(pl[r].ppn, pl[r].local, &tni[r], &cq);
            fugaku_bgs(pl[r].ppn, pl[r].local, &start, &relay);
        }
        gate[r][0] = vbg_id_of(pl[r].coords, tni[r], start);
        for (int j = 1; j < k; j++) gate[r][j] = vbg_id_of(pl[r].coords, tni[r], relay + j - 1);
    }
    utofu_tni_id_t *tnis; size_t ntni;
    UCHECK(utofu_get_barrier_tnis(&tnis, &ntni));
    CHECK(ntni >= 1); CHECK_EQ(tnis[0], tni[rank]);
    free(tnis);
    utofu_vbg_id_t own[MAXK];
    UCHECK(utofu_alloc_vbg(tni[rank], (size_t)k, 0, own));

    /* Butterfly: gate j sends to partner rank ^ 2^j's gate j+1 (mod k) and hands on to
     * our gate j+1; it hears from partner rank ^ 2^(j-1)'s gate j-1 and our gate j-1. */
    struct utofu_vbg_setting st[MAXK];
    for (int j = 0; j < k; j++) {
        int prev = (j + k - 1) % k, next = (j + 1) % k;
        st[j].vbg_id = gate[rank][j];
        st[j].src_lcl_vbg_id = gate[rank][prev];
        st[j].src_rmt_vbg_id = gate[rank ^ (1 << prev)][prev];
        st[j].dst_lcl_vbg_id = gate[rank][next];
        st[j].dst_rmt_vbg_id = gate[rank ^ (1 << j)][next];
        st[j].dst_path_coords[0] = UTOFU_PATH_COORD_NULL;
    }
    /* Malformed peer ids are refused and change nothing. */
    struct utofu_vbg_setting bad[MAXK];
    memcpy(bad, st, sizeof bad);
    bad[0].src_rmt_vbg_id |= 1ULL << 20;                        /* bits 6-31 are zero */
    CHECK_EQ(utofu_set_vbg(bad, (size_t)k), UTOFU_ERR_INVALID_VBG_ID);
    memcpy(bad, st, sizeof bad);
    bad[0].dst_rmt_vbg_id = (bad[0].dst_rmt_vbg_id & ~0x3fULL) | 48;   /* BG 48 */
    CHECK_EQ(utofu_set_vbg(bad, (size_t)k), UTOFU_ERR_INVALID_VBG_ID);
    memcpy(bad, st, sizeof bad);
    bad[0].dst_rmt_vbg_id |= 6ULL << 61;                        /* TNI 6 or 7 */
    CHECK_EQ(utofu_set_vbg(bad, (size_t)k), UTOFU_ERR_INVALID_VBG_ID);
    UCHECK(utofu_set_vbg(st, (size_t)k));                       /* fails if our ids are not the computed ones */
    MPI_Barrier(MPI_COMM_WORLD);                                /* everyone's circuit is set */

    int rc;
    for (int i = 0; i < rounds; i++) {
        UCHECK(utofu_barrier(gate[rank][0], 0));
        while ((rc = utofu_poll_barrier(gate[rank][0], 0)) == UTOFU_ERR_NOT_COMPLETED) sched_yield();
        UCHECK(rc);
        uint64_t d[2] = { (uint64_t)rank + 1 + (uint64_t)i, (uint64_t)rank * 3 };
        UCHECK(utofu_reduce_uint64(gate[rank][0], UTOFU_REDUCE_OP_SUM, d, 2, 0));
        while ((rc = utofu_poll_reduce_uint64(gate[rank][0], 0, d)) == UTOFU_ERR_NOT_COMPLETED) sched_yield();
        UCHECK(rc);
        CHECK_EQ(d[0], (uint64_t)n * (n + 1) / 2 + (uint64_t)n * i);
        CHECK_EQ(d[1], 3ULL * n * (n - 1) / 2);
        uint64_t m = (uint64_t)((rank * 5 + i) % n);
        UCHECK(utofu_reduce_uint64(gate[rank][0], UTOFU_REDUCE_OP_MAX, &m, 1, 0));
        while ((rc = utofu_poll_reduce_uint64(gate[rank][0], 0, &m)) == UTOFU_ERR_NOT_COMPLETED) sched_yield();
        UCHECK(rc);
        CHECK_EQ(m, (uint64_t)n - 1);
    }
    double x = 0.5 * rank;
    UCHECK(utofu_reduce_double(gate[rank][0], UTOFU_REDUCE_OP_BFPSUM, &x, 1, 0));
    while ((rc = utofu_poll_reduce_double(gate[rank][0], 0, &x)) == UTOFU_ERR_NOT_COMPLETED) sched_yield();
    UCHECK(rc);
    CHECK(x == 0.25 * n * (n - 1));

    /* After the fact: our allocation is the computed one; ids decode offline. */
    for (int j = 0; j < k; j++) CHECK_HEX(own[j], gate[rank][j]);
    utofu_vbg_id_t *all = malloc((size_t)n * MAXK * sizeof *all);
    MPI_Allgather(own, MAXK, MPI_UINT64_T, all, MAXK, MPI_UINT64_T, MPI_COMM_WORLD);
    for (int r = 0; r < n; r++)
        for (int j = 0; j < k; j++) CHECK_HEX(all[r * MAXK + j], gate[r][j]);
    int p = rank ^ 1;
    uint8_t co[6]; utofu_tni_id_t t; utofu_bg_id_t bg;
    UCHECK(utofu_query_vbg_info(gate[p][1], co, &t, &bg, NULL));
    CHECK(!memcmp(co, pl[p].coords, 6)); CHECK_EQ(t, tni[p]); CHECK_EQ(bg, gate[p][1] & 0x3f); CHECK(bg >= 16);
    CHECK_EQ(utofu_query_vbg_info(gate[p][0] | 1ULL << 60, co, &t, &bg, NULL), UTOFU_ERR_INVALID_VBG_ID);

    /* A TNI outside the share has no gates for us. */
    UCHECK(utofu_get_barrier_tnis(&tnis, &ntni));
    if (ntni < 6) {
        utofu_vbg_id_t none;
        CHECK_EQ(utofu_alloc_vbg((utofu_tni_id_t)((tni[rank] + 5) % 6), 1, 0, &none), UTOFU_ERR_NOT_AVAILABLE);
    }
    free(tnis);
    MPI_Barrier(MPI_COMM_WORLD);
    UCHECK(utofu_free_vbg(own, (size_t)k));
    printf("utofu_gates: rank %d of %d ok (%d per node, TNI %d, BGs %d..)\n", rank, n, pl[rank].ppn, tni[rank], (int)(gate[rank][0] & 0x3f));
    jtofu_finalize();
    MPI_Finalize();
    return 0;
}
