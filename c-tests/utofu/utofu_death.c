/* A peer that comes up late and then dies, with no MPI: addresses are computed, not
 * exchanged (construct_vcq_id from the node's coordinates and the CQ utofu.h's table
 * gives the peer's local rank, 6r for 2 per node; query_stadd of a known STag; the
 * peer's first start/end VBG, 8r, on its TNI, built in Fujitsu's layout), as
 * topology-file programs do.  Rank 0 retries until rank 1 exists, then keeps operating until rank 1's exit
 * shows: puts then fail with MRQ_PEER and barriers with BARRIER_OTHER, within seconds.
 * The operation rank 0 keeps issuing after the peer left is argv[1]: "piggyback" (the
 * default), "put" (8 bytes from a registered buffer) or "armw" (a fetch-add), the last two
 * through the quick paths of the pinned region (the piggyback puts before pinned it).
 * Run with 2 ranks on one node (snrun -n 2). */
#include "utest.h"
#include <string.h>
#include <unistd.h>
#include <time.h>

static uint64_t word[32] __attribute__((aligned(256)));

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "piggyback";
    const char *r = getenv("PMI_RANK");
    int rank = r ? atoi(r) : 0;
    sntest_rank = rank;
    utofu_vcq_hdl_t h;
    UCHECK(utofu_create_vcq_with_cmp_id(0, 2, 0, &h));
    uint8_t me[6];
    UCHECK(utofu_query_my_coords(me));
    utofu_vcq_id_t peer;
    UCHECK(utofu_construct_vcq_id(me, 0, (utofu_cq_id_t)(6 * (1 - rank)), 2, &peer));
    utofu_vcq_id_t mine;
    utofu_tni_id_t t; utofu_cq_id_t cq;
    UCHECK(utofu_query_vcq_id(h, &mine));
    UCHECK(utofu_query_vcq_info(mine, me, &t, &cq, NULL));
    if (cq != 6 * rank) SKIP("the launcher gave no local rank (CQ %d for rank %d)", cq, rank);
    utofu_vbg_id_t vbg, peer_vbg;
    UCHECK(utofu_alloc_vbg((utofu_tni_id_t)rank, 1, 0, &vbg));
    utofu_bg_id_t bg;
    UCHECK(utofu_query_vbg_info(vbg, me, &t, &bg, NULL));
    CHECK_EQ(bg, 8 * rank);
    /* same node, the peer's TNI (bits 61-63) and BG (bits 0-5) */
    peer_vbg = (vbg & ~(7ULL << 61 | 0x3f)) | (uint64_t)(1 - rank) << 61 | (uint64_t)(8 * (1 - rank));
    struct utofu_vbg_setting s = { vbg, UTOFU_VBG_ID_NULL, peer_vbg, UTOFU_VBG_ID_NULL, peer_vbg, { UTOFU_PATH_COORD_NULL, 0, 0 } };
    UCHECK(utofu_set_vbg(&s, 1));
    struct utofu_mrq_notice n;
    void *cb;

    if (rank == 1) {
        usleep(300000);                                    /* come up late */
        utofu_stadd_t st;
        UCHECK(utofu_reg_mem_with_stag(h, word, sizeof word, 3, 0, &st));
        while (((volatile uint64_t *)word)[0] != 0xfeed) ;
        UCHECK(utofu_barrier(vbg, 0));
        int rc;
        while ((rc = utofu_poll_barrier(vbg, 0)) == UTOFU_ERR_NOT_COMPLETED) ;
        UCHECK(rc);
        printf("utofu_death: rank 1 leaves without freeing anything\n");
        fflush(stdout);
        _exit(0);
    }
    utofu_stadd_t peer_st;
    UCHECK(utofu_query_stadd(peer, 3, &peer_st));
    int early = 0, rc;
    for (;;) {
        UCHECK(utofu_put_piggyback8(h, peer, 0xfeed, peer_st, 8, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));
        if ((rc = wait_mrq(h, &n)) == UTOFU_SUCCESS) break;
        CHECK(rc == UTOFU_ERR_MRQ_PEER || rc == UTOFU_ERR_MRQ_RMT_MEMORY);  /* no VCQ yet / no STag yet */
        early++;
        CHECK(early < 100000);
        usleep(1000);
        while (utofu_poll_tcq(h, 0, &cb) != UTOFU_ERR_NOT_FOUND) ;
    }
    CHECK(early > 0);
    UCHECK(utofu_barrier(vbg, 0));
    while ((rc = utofu_poll_barrier(vbg, 0)) == UTOFU_ERR_NOT_COMPLETED) ;
    UCHECK(rc);
    static uint64_t src[4] __attribute__((aligned(64))) = { 2 };
    utofu_stadd_t src_st;
    UCHECK(utofu_reg_mem(h, src, sizeof src, 0, &src_st));
    /* Now rank 1 goes away: operations must fail, not hang. */
    double t0 = now();
    for (;;) {
        if (!strcmp(how, "put"))
            UCHECK(utofu_put(h, peer, src_st, peer_st, 8, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));
        else if (!strcmp(how, "armw"))
            UCHECK(utofu_armw8(h, peer, UTOFU_ARMW_OP_ADD, 1, peer_st, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));
        else
            UCHECK(utofu_put_piggyback8(h, peer, 1, peer_st, 8, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));
        rc = wait_mrq(h, &n);
        while (utofu_poll_tcq(h, 0, &cb) != UTOFU_ERR_NOT_FOUND) ;
        if (rc == UTOFU_ERR_MRQ_PEER) break;
        UCHECK(rc);
        CHECK(now() - t0 < 10);
        usleep(1000);
    }
    UCHECK(utofu_barrier(vbg, 0));
    while ((rc = utofu_poll_barrier(vbg, 0)) == UTOFU_ERR_NOT_COMPLETED) CHECK(now() - t0 < 20);
    CHECK_EQ(rc, UTOFU_ERR_BARRIER_OTHER);
    printf("utofu_death: rank 0 saw MRQ_PEER and BARRIER_OTHER %.2f s after the peer left (%s, %d early attempts)\n", now() - t0, how, early);
    return 0;
}
