/* A uTofu peer on another (virtual) host stops answering: its partner's operations end
 * with error notices within a bounded time (SOFTNIC_NET_TIMEOUT_MS), never hang.  Two
 * MPI ranks on two hosts exchange VCQ ids and STADDs; rank 0 puts into rank 1 with
 * notices (a round of puts, gets and fetch-adds first, checked on both sides); then
 * rank 1 freezes (SIGSTOP: a hung or cut-off machine, which the launcher cannot see)
 * and rank 0 keeps putting until it gets MRQ_PEER; it reports how long that took and
 * ends the job with MPI_Abort (rank 1 never resumes).  Run: vhrun 2 2 utofu_net_death. */
#include "utest.h"
#include <mpi.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

static uint64_t win[512] __attribute__((aligned(256)));

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    sntest_rank = rank;
    CHECK_EQ(n, 2);
    utofu_vcq_hdl_t h;
    UCHECK(utofu_create_vcq(0, 0, &h));
    uint64_t mine[2], peer[2];
    UCHECK(utofu_query_vcq_id(h, &mine[0]));
    UCHECK(utofu_reg_mem(h, win, sizeof win, 0, &mine[1]));
    MPI_Sendrecv(mine, 2, MPI_UINT64_T, 1 - rank, 0, peer, 2, MPI_UINT64_T, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    uint8_t mc[6], pc[6];
    utofu_tni_id_t t;
    utofu_cq_id_t q;
    utofu_cmp_id_t c;
    UCHECK(utofu_query_vcq_info(mine[0], mc, &t, &q, &c));
    UCHECK(utofu_query_vcq_info(peer[0], pc, &t, &q, &c));
    CHECK(memcmp(mc, pc, 6) != 0);                      /* really two nodes */
    struct utofu_mrq_notice nt;
    void *cb;
    if (rank == 1) win[300] = 40;
    MPI_Barrier(MPI_COMM_WORLD);                        /* win[300] set before the ARMW */
    if (rank == 0) {
        /* A round that works: put, get back, fetch-add; notices on both sides. */
        for (int i = 0; i < 64; i++) win[i] = 0x1000 + i;
        UCHECK(utofu_put(h, peer[0], mine[1], peer[1] + 64 * 8, 64 * 8, 7, ALL_NOTICES, (void *)1));
        UCHECK(wait_mrq(h, &nt));
        CHECK_EQ(nt.notice_type, UTOFU_MRQ_TYPE_LCL_PUT);
        CHECK_EQ(wait_tcq(h, &cb), UTOFU_SUCCESS);
        UCHECK(utofu_get(h, peer[0], mine[1] + 128 * 8, peer[1] + 64 * 8, 64 * 8, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));
        UCHECK(wait_mrq(h, &nt));
        CHECK_EQ(nt.notice_type, UTOFU_MRQ_TYPE_LCL_GET);
        for (int i = 0; i < 64; i++) CHECK_EQ(win[128 + i], 0x1000 + (uint64_t)i);
        UCHECK(utofu_armw8(h, peer[0], UTOFU_ARMW_OP_ADD, 5, peer[1] + 8 * 300, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));
        UCHECK(wait_mrq(h, &nt));
        CHECK_EQ(nt.rmt_value, 40);                     /* rank 1 set it */
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        UCHECK(wait_mrq(h, &nt));                       /* the put's remote notice */
        CHECK_EQ(nt.notice_type, UTOFU_MRQ_TYPE_RMT_PUT);
        CHECK_EQ(nt.edata, 7);
        CHECK_EQ(win[64 + 63], 0x1000 + 63);
        CHECK_EQ(win[300], 45);
        fprintf(stderr, "utofu_net_death: rank 1 freezes now\n");
        MPI_Barrier(MPI_COMM_WORLD);
        raise(SIGSTOP);
        return 1;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    usleep(100000);
    double t0 = now();
    int rc, puts = 0;
    for (;;) {
        UCHECK(utofu_put_piggyback8(h, peer[0], 1, peer[1], 8, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));
        puts++;
        rc = wait_mrq(h, &nt);
        while (utofu_poll_tcq(h, 0, &cb) != UTOFU_ERR_NOT_FOUND) ;
        if (rc != UTOFU_SUCCESS) break;
        CHECK(now() - t0 < 30);
    }
    CHECK_EQ(rc, UTOFU_ERR_MRQ_PEER);
    printf("utofu_net_death: rank 0 ok: MRQ_PEER %.2f s after the peer froze (%d puts)\n", now() - t0, puts);
    fflush(stdout);
    usleep(300000); /* let the launcher forward the output before the abort tears it down */
    MPI_Abort(MPI_COMM_WORLD, 0);
    return 0;
}
