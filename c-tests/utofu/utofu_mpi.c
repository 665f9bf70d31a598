/* uTofu between MPI ranks, written the way real programs are: ids and STADDs exchanged
 * with MPI_Allgather (and computed without exchange from coordinates and STags), a ring
 * of puts and gets checked on both sides, ARMW contention against the target CPU's own
 * atomics, a target that spins on memory or sits in MPI_Barrier, a peer whose VCQ
 * comes up late (the first attempt fails with MRQ_PEER, the retry works) and one that
 * goes away.  Usage: utofu_mpi [iterations]. */
#include "utest.h"
#include <mpi.h>
#include <unistd.h>
#include <string.h>

#define CMP 3
#define STAG 9
static uint64_t win[2048] __attribute__((aligned(256)));
static volatile uint64_t counter;

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    sntest_rank = rank;
    int iters = argc > 1 ? atoi(argv[1]) : 200;
    int right = (rank + 1) % n, left = (rank + n - 1) % n;
    utofu_tni_id_t tni = (utofu_tni_id_t)(rank % 6);

    utofu_vcq_hdl_t h;
    UCHECK(utofu_create_vcq_with_cmp_id(tni, CMP, 0, &h));
    utofu_vcq_id_t me;
    UCHECK(utofu_query_vcq_id(h, &me));
    utofu_stadd_t s_win, s_tag, s_cnt;
    UCHECK(utofu_reg_mem(h, win, 1024 * 8, 0, &s_win));
    UCHECK(utofu_reg_mem_with_stag(h, &win[1024], 1024 * 8, STAG, 0, &s_tag));
    UCHECK(utofu_reg_mem(h, (void *)&counter, 8, 0, &s_cnt));

    /* Exchange as the samples do, plus what exchange-free addressing needs. */
    uint64_t mine[5], *all = malloc(sizeof mine * n);
    uint8_t coords[6];
    utofu_tni_id_t t; utofu_cq_id_t cq;
    UCHECK(utofu_query_vcq_info(me, coords, &t, &cq, NULL));
    uint64_t packed = 0;
    memcpy(&packed, coords, 6);
    mine[0] = me; mine[1] = s_win; mine[2] = s_cnt; mine[3] = packed; mine[4] = cq;
    MPI_Allgather(mine, 5, MPI_UINT64_T, all, 5, MPI_UINT64_T, MPI_COMM_WORLD);
    for (int r = 0; r < n; r++) {
        uint8_t c[6];
        memcpy(c, &all[5 * r + 3], 6);
        utofu_vcq_id_t built;
        UCHECK(utofu_construct_vcq_id(c, (utofu_tni_id_t)(r % 6), (utofu_cq_id_t)all[5 * r + 4], CMP, &built));
        CHECK(built == all[5 * r]);
    }
    utofu_vcq_id_t rid = all[5 * right], lid = all[5 * left];
    UCHECK(utofu_set_vcq_id_path(&rid, NULL));
    utofu_stadd_t r_tag;
    UCHECK(utofu_query_stadd(rid, STAG, &r_tag));                  /* no exchange needed */

    /* Ring of puts: each rank writes its right neighbour's window; both sides see it. */
    for (int i = 0; i < iters; i++) {
        uint64_t v = ((uint64_t)rank << 32) | (uint64_t)i;
        win[0] = v;
        uint64_t edata = (uint64_t)(i + rank) & 0xff;
        UCHECK(utofu_put(h, rid, s_win, r_tag + 8 * (i % 64), 8, edata, ALL_NOTICES, (void *)(uintptr_t)(i + 1)));
        void *cb;
        UCHECK(wait_tcq(h, &cb));
        CHECK(cb == (void *)(uintptr_t)(i + 1));
        int got_lcl = 0, got_rmt = 0;
        while (!got_lcl || !got_rmt) {
            struct utofu_mrq_notice no;
            UCHECK(wait_mrq(h, &no));
            if (no.notice_type == UTOFU_MRQ_TYPE_LCL_PUT) {
                CHECK(!got_lcl); got_lcl = 1;
                CHECK(no.vcq_id == all[5 * right]); CHECK_EQ(no.edata, edata);
            } else {
                CHECK_EQ(no.notice_type, UTOFU_MRQ_TYPE_RMT_PUT); CHECK(!got_rmt); got_rmt = 1;
                CHECK(no.vcq_id == lid); CHECK_EQ(no.edata, (uint64_t)(i + left) & 0xff);
                CHECK(win[1024 + i % 64] == (((uint64_t)left << 32) | (uint64_t)i));
            }
        }
        MPI_Barrier(MPI_COMM_WORLD); /* the slot is reused 64 iterations later */
    }
    /* Gets: read the right neighbour's tag region into our window. */
    win[1024 + 100] = 0xabc000 + (uint64_t)rank;
    MPI_Barrier(MPI_COMM_WORLD);
    UCHECK(utofu_get(h, rid, s_win + 8 * 50, r_tag + 8 * 100, 8, 1, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));
    struct utofu_mrq_notice no;
    UCHECK(wait_mrq(h, &no));
    CHECK_EQ(no.notice_type, UTOFU_MRQ_TYPE_LCL_GET);
    CHECK(win[50] == 0xabc000 + (uint64_t)right);
    MPI_Barrier(MPI_COMM_WORLD);

    /* A target that only spins on the word being written. */
    if (n >= 2) {
        if (rank == 1) {
            win[900] = 0;
            MPI_Barrier(MPI_COMM_WORLD);
            while (((volatile uint64_t *)win)[900] != 0x5eed) ;
            printf("utofu_mpi: spinning rank received the put\n");
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                usleep(50000);
                UCHECK(utofu_put_piggyback8(h, all[5], 0x5eed, all[5 + 1] + 8 * 900, 8, 0, 0, NULL));
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* ARMW contention on rank 0's counter, against rank 0's own CPU atomics. */
    counter = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    int k = iters * 10;
    if (rank == 0) {
        for (int i = 0; i < k; i++) __atomic_fetch_add(&counter, 1, __ATOMIC_SEQ_CST);
    } else {
        uint64_t last = 0;
        for (int i = 0; i < k; i++) {
            int rc;
            while ((rc = utofu_armw8(h, all[0], UTOFU_ARMW_OP_ADD, 1, all[2], 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL)) == UTOFU_ERR_BUSY) {
                void *cb;
                utofu_poll_tcq(h, 0, &cb);
            }
            UCHECK(rc);
            UCHECK(wait_mrq(h, &no));
            CHECK_EQ(no.notice_type, UTOFU_MRQ_TYPE_LCL_ARMW);
            CHECK(i == 0 || no.rmt_value > last);                     /* strictly increasing */
            last = no.rmt_value;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);                                      /* rank 0 sits here */
    if (rank == 0) CHECK_EQ(counter, (uint64_t)k * n);

    /* A late VCQ: rank `right` creates component 6 only after our first attempt. */
    utofu_vcq_id_t late;
    {
        uint8_t c[6];
        memcpy(c, &all[5 * right + 3], 6);
        UCHECK(utofu_construct_vcq_id(c, (utofu_tni_id_t)(right % 6), (utofu_cq_id_t)all[5 * right + 4], 6, &late));
    }
    utofu_stadd_t late_tag;
    UCHECK(utofu_query_stadd(late, 1, &late_tag));
    win[0] = 0x1a7e;
    UCHECK(utofu_put(h, late, s_win, late_tag, 8, 0, 0, NULL));
    CHECK_EQ(wait_mrq(h, &no), UTOFU_ERR_MRQ_PEER);
    MPI_Barrier(MPI_COMM_WORLD);
    utofu_vcq_hdl_t h6;
    static uint64_t late_buf[32] __attribute__((aligned(256)));
    UCHECK(utofu_create_vcq_with_cmp_id(tni, 6, 0, &h6));
    utofu_stadd_t mine_late;
    UCHECK(utofu_reg_mem_with_stag(h6, late_buf, sizeof late_buf, 1, 0, &mine_late));
    MPI_Barrier(MPI_COMM_WORLD);
    int tries = 0;
    for (;;) {                                                        /* retried, as real programs do */
        UCHECK(utofu_put(h, late, s_win, late_tag, 8, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));
        if (wait_mrq(h, &no) == UTOFU_SUCCESS) break;
        CHECK(++tries < 1000);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(late_buf[0] == 0x1a7e);

    /* A VCQ that went away: MRQ_PEER, nothing else. */
    UCHECK(utofu_free_vcq(h6));
    MPI_Barrier(MPI_COMM_WORLD);
    UCHECK(utofu_put(h, late, s_win, late_tag, 8, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));
    CHECK_EQ(wait_mrq(h, &no), UTOFU_ERR_MRQ_PEER);
    void *cb;
    while (utofu_poll_tcq(h, 0, &cb) != UTOFU_ERR_NOT_FOUND) ;
    expect_empty(h);

    MPI_Barrier(MPI_COMM_WORLD);
    UCHECK(utofu_dereg_mem(h, s_win, 0));
    UCHECK(utofu_dereg_mem(h, s_tag, 0));
    UCHECK(utofu_dereg_mem(h, s_cnt, 0));
    UCHECK(utofu_free_vcq(h));
    free(all);
    printf("utofu_mpi: rank %d of %d ok\n", rank, n);
    MPI_Finalize();
    return 0;
}
