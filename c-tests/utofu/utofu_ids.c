/* uTofu as a communication library for Fugaku uses it: no VCQ id or STADD is exchanged.
 * Every rank computes its own and every peer's (TNI, CQ) from processes per node and
 * local rank (fugaku.h: Fugaku's assignment, the table in utofu.h) and the peers'
 * coordinates (jTofu), creates its VCQ there with component 7, registers its buffers
 * under the same STags as everyone, and puts into each peer at its *own* STADD of those
 * STags, addressing the peer by a VCQ id it built: through utofu_construct_vcq_id, in
 * Fujitsu's bit layout, or from coordinates, TNI and CQ alone (no component, no path).
 * Remote notices must name the sender by the id the receiver computes for it.  MPI only
 * synchronises, and checks after the fact that the computed ids are the real ones.
 * Then bad input: an id naming no live CQ, malformed ids, an unregistered STag, a range
 * outside the region, a TNI outside the rank's share.
 *
 * Argument "masks": the launcher wrapper set UTOFU_CQ_MASK_2 = 1 << (3 * local rank + 1)
 * and no other CQ mask, so every rank has TNI 2 only and CQ 3r+1 there. */
#include "fugaku.h"
#include <mpi.h>

#define SLOT 64
#define STAG_IN 13
#define STAG_OUT 200

static uint8_t inbox[64 * SLOT] __attribute__((aligned(256)));
static uint8_t outbox[256] __attribute__((aligned(256)));
static uint8_t other[256] __attribute__((aligned(256)));

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    sntest_rank = rank;
    CHECK(n <= 64);
    int masks = argc > 1 && !strcmp(argv[1], "masks");
    struct place *pl = job_places(rank, n);
    utofu_tni_id_t *tni = calloc((size_t)n, sizeof *tni);
    utofu_cq_id_t *cq = calloc((size_t)n, sizeof *cq);
    for (int r = 0; r < n; r++) {
        if (masks) { tni[r] = 2; cq[r] = (utofu_cq_id_t)(3 * pl[r].local + 1); }
        else fugaku_tni_cq(pl[r].ppn, pl[r].local, &tni[r], &cq[r]);
    }
    const uint8_t *me = pl[rank].coords;
    uint8_t mine[6];
    UCHECK(utofu_query_my_coords(mine));
    CHECK(!memcmp(mine, me, 6));

    /* The TNI the table gives is the first one listed; a TNI outside the share is not ours. */
    utofu_tni_id_t *tnis; size_t ntni;
    UCHECK(utofu_get_onesided_tnis(&tnis, &ntni));
    CHECK(ntni >= 1); CHECK_EQ(tnis[0], tni[rank]);
    if (masks) CHECK_EQ(ntni, 1);
    else CHECK_EQ(ntni, pl[rank].ppn <= 4 ? 6 : pl[rank].ppn <= 8 ? 3 : pl[rank].ppn <= 12 ? 2 : 1);
    free(tnis);
    utofu_vcq_hdl_t h, x;
    if (ntni < 6) {
        utofu_tni_id_t outside = (utofu_tni_id_t)((tni[rank] + 6 - 1) % 6);      /* the TNI before ours */
        CHECK_EQ(utofu_create_vcq(outside, 0, &x), UTOFU_ERR_NOT_AVAILABLE);
    }

    /* Our VCQ: the computed id, bit for bit. */
    UCHECK(utofu_create_vcq_with_cmp_id(tni[rank], 7, 0, &h));
    utofu_vcq_id_t id, built;
    UCHECK(utofu_query_vcq_id(h, &id));
    CHECK_HEX(id, vcq_id_of(me, tni[rank], cq[rank], 7));
    UCHECK(utofu_construct_vcq_id((uint8_t *)me, tni[rank], cq[rank], 7, &built));
    CHECK_HEX(built, id);
    uint8_t co[6]; utofu_tni_id_t t; utofu_cq_id_t q; uint16_t extra;
    UCHECK(utofu_query_vcq_info(id, co, &t, &q, &extra));
    CHECK(!memcmp(co, me, 6)); CHECK_EQ(t, tni[rank]); CHECK_EQ(q, cq[rank]); CHECK_EQ(extra, 7);

    /* The same STags as everyone: STADDs that are the STag's alone. */
    utofu_stadd_t in, out, q13;
    UCHECK(utofu_reg_mem_with_stag(h, inbox, sizeof inbox, STAG_IN, 0, &in));
    UCHECK(utofu_reg_mem_with_stag(h, outbox, sizeof outbox, STAG_OUT, 0, &out));
    CHECK_HEX(in, 0xf0d0000000000ULL);
    CHECK_HEX(out, 0xfc80000000000ULL);
    UCHECK(utofu_query_stadd(id, STAG_IN, &q13)); CHECK_HEX(q13, in);
    MPI_Barrier(MPI_COMM_WORLD);                              /* everyone registered */

    /* Put into every peer: its VCQ computed three ways in turn, its STADD = ours. */
    int sent = 0;
    for (int k = 1; k < n; k++) {
        int p = (rank + k) % n;
        utofu_vcq_id_t peer, expect_notice;
        switch (k % 3) {
        case 0:
            UCHECK(utofu_construct_vcq_id(pl[p].coords, tni[p], cq[p], 7, &peer));
            UCHECK(utofu_set_vcq_id_path(&peer, NULL));
            expect_notice = peer;
            break;
        case 1:
            peer = vcq_id_of(pl[p].coords, tni[p], cq[p], 7);
            expect_notice = peer;
            break;
        default:
            peer = bare_vcq_id(pl[p].coords, tni[p], cq[p]);
            /* the notice carries the id as given, with the target node's own path */
            expect_notice = peer | abc_bits(pl[p].coords[3], pl[p].coords[4], pl[p].coords[5]) << 28;
            UCHECK(utofu_query_vcq_info(peer, co, &t, &q, &extra));
            CHECK(!memcmp(co, pl[p].coords, 6)); CHECK_EQ(t, tni[p]); CHECK_EQ(q, cq[p]); CHECK_EQ(extra, 0);
            break;
        }
        for (int i = 0; i < SLOT; i++) outbox[i] = (uint8_t)(rank * 7 + p + i);
        struct utofu_mrq_notice no;
        void *cb;
        UCHECK(utofu_put(h, peer, out, in + (utofu_stadd_t)rank * SLOT, SLOT, (uint64_t)rank,
                         UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE | UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE, NULL));
        int rc;
        /* Remote notices of others' puts may come first. */
        while ((rc = poll_mrq_yield(h, &no)) == UTOFU_SUCCESS && no.notice_type == UTOFU_MRQ_TYPE_RMT_PUT) {
            CHECK(no.edata < (uint64_t)n);
            int s = (int)no.edata;
            CHECK_HEX(no.vcq_id, vcq_id_of(pl[s].coords, tni[s], cq[s], 7));
            CHECK_HEX(no.rmt_stadd, in + (utofu_stadd_t)(s + 1) * SLOT);
            sent++;
        }
        if (rc != UTOFU_SUCCESS) SN_FAIL("put to rank %d at %#llx (form %d): %d", p, (unsigned long long)peer, k % 3, rc);
        CHECK_EQ(no.notice_type, UTOFU_MRQ_TYPE_LCL_PUT);
        CHECK_HEX(no.vcq_id, expect_notice);
        CHECK_HEX(no.rmt_stadd, in + (utofu_stadd_t)(rank + 1) * SLOT);
        while (utofu_poll_tcq(h, 0, &cb) != UTOFU_ERR_NOT_FOUND) ;
    }
    /* The rest of the remote notices: one from every peer, each naming it by its id. */
    for (; sent < n - 1; sent++) {
        struct utofu_mrq_notice no;
        UCHECK(poll_mrq_yield(h, &no));
        CHECK_EQ(no.notice_type, UTOFU_MRQ_TYPE_RMT_PUT);
        int s = (int)no.edata;
        CHECK(s < n && s != rank);
        CHECK_HEX(no.vcq_id, vcq_id_of(pl[s].coords, tni[s], cq[s], 7));
    }
    for (int s = 0; s < n; s++)
        for (int i = 0; s != rank && i < SLOT; i++) CHECK_EQ(inbox[s * SLOT + i], (uint8_t)(s * 7 + rank + i));

    /* After the fact: the computed ids are every rank's real one. */
    utofu_vcq_id_t *all = malloc((size_t)n * sizeof *all);
    MPI_Allgather(&id, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    for (int r = 0; r < n; r++) CHECK_HEX(all[r], vcq_id_of(pl[r].coords, tni[r], cq[r], 7));

    /* Bad input.  CQ 11 is nobody's VCQ here (the last block's first CQ is at most 10). */
    int p = (rank + 1) % n;
    struct utofu_mrq_notice no;
    void *cb;
    utofu_vcq_id_t nobody = vcq_id_of(pl[p].coords, tni[p], 11, 7);
    UCHECK(utofu_put(h, nobody, out, in, 8, 0, 0, NULL));
    CHECK_EQ(poll_mrq_yield(h, &no), UTOFU_ERR_MRQ_PEER); CHECK_HEX(no.vcq_id, nobody);
    UCHECK(utofu_put(h, bare_vcq_id(pl[p].coords, tni[p], 11), out, in, 8, 0, 0, NULL));
    CHECK_EQ(poll_mrq_yield(h, &no), UTOFU_ERR_MRQ_PEER);
    UCHECK(utofu_put(h, vcq_id_of(pl[p].coords, tni[p], cq[p], 6), out, in, 8, 0, 0, NULL));  /* component 6: none */
    CHECK_EQ(poll_mrq_yield(h, &no), UTOFU_ERR_MRQ_PEER);
    utofu_vcq_id_t good = vcq_id_of(pl[p].coords, tni[p], cq[p], 7);
    CHECK_EQ(utofu_put(h, good | 1ULL << 12, out, in, 8, 0, 0, NULL), UTOFU_ERR_INVALID_VCQ_ID);
    CHECK_EQ(utofu_put(h, good | 1ULL << 60, out, in, 8, 0, 0, NULL), UTOFU_ERR_INVALID_VCQ_ID);
    CHECK_EQ(utofu_put(h, (good & ~0x3fULL) | 12, out, in, 8, 0, 0, NULL), UTOFU_ERR_INVALID_VCQ_ID);
    CHECK_EQ(utofu_put(h, good | 7ULL << 61, out, in, 8, 0, 0, NULL), UTOFU_ERR_INVALID_VCQ_ID);
    utofu_stadd_t s14;
    UCHECK(utofu_query_stadd(good, 14, &s14));                 /* nobody registered STag 14 */
    UCHECK(utofu_put(h, good, out, s14, 8, 0, 0, NULL));
    CHECK_EQ(poll_mrq_yield(h, &no), UTOFU_ERR_MRQ_RMT_MEMORY);
    UCHECK(utofu_put(h, good, out, in + sizeof inbox - 8, 16, 0, 0, NULL));
    CHECK_EQ(poll_mrq_yield(h, &no), UTOFU_ERR_MRQ_RMT_LENGTH);
    UCHECK(utofu_put(h, good, out, in + sizeof inbox, 8, 0, 0, NULL));
    CHECK_EQ(poll_mrq_yield(h, &no), UTOFU_ERR_MRQ_RMT_STADD);
    CHECK_EQ(utofu_query_stadd(good, 256, &s14), UTOFU_ERR_INVALID_STAG);
    CHECK_EQ(utofu_query_stadd(good | 1ULL << 7, 1, &s14), UTOFU_ERR_INVALID_VCQ_ID);
    while (utofu_poll_tcq(h, 0, &cb) != UTOFU_ERR_NOT_FOUND) ;

    /* A STag registered again (elsewhere) keeps its STADD. */
    MPI_Barrier(MPI_COMM_WORLD);
    UCHECK(utofu_dereg_mem(h, out, 0));
    utofu_stadd_t again;
    UCHECK(utofu_reg_mem_with_stag(h, other, sizeof other, STAG_OUT, 0, &again));
    CHECK_HEX(again, out);
    UCHECK(utofu_dereg_mem(h, again, 0));
    UCHECK(utofu_dereg_mem(h, in, 0));
    UCHECK(utofu_free_vcq(h));
    MPI_Barrier(MPI_COMM_WORLD);
    printf("utofu_ids: rank %d of %d ok (%d per node, TNI %d, CQ %d)\n", rank, n, pl[rank].ppn, tni[rank], cq[rank]);
    jtofu_finalize();
    MPI_Finalize();
    return 0;
}
