/* Notices are causal: a target's reaction to a put is never seen before the put's own
 * local notice.
 *
 * Rank 0 puts a round number into rank 1's window asking for a local MRQ notice; rank 1
 * spins on that word and answers at once with a put into rank 0's window asking for a
 * remote MRQ notice there.  Rank 0's MRQ receives both: LCL_PUT (its put is done) and
 * RMT_PUT (the answer landed).  The answer cannot begin before the data landed, so
 * LCL_PUT must come first in every round, however the threads are scheduled (rank 0
 * runs a thread that only yields, so that its poster is preempted now and then).
 *
 * Usage: utofu_causal [ROUNDS] [armw]   (default 200000 rounds; armw: rank 0 adds 1 to
 * the word with utofu_armw8 instead, notice LCL_ARMW) */
#include <mpi.h>
#include "utest.h"
#include "causaltest.h"
#include <pthread.h>
#include <sched.h>




int main(int argc, char **argv)
{
    int rank, n;
    utest_mpi_init(&argc, &argv, &rank, &n);
    if (n != 2) {
        printf("SKIP: utofu_causal needs exactly 2 ranks\n");
        MPI_Finalize();
        return 77;
    }
    long rounds = argc > 1 ? atol(argv[1]) : 200000;
    int armw = argc > 2 && !strcmp(argv[2], "armw");
    static uint64_t win[64] __attribute__((aligned(64)));
    utofu_vcq_hdl_t vcq;
    utofu_vcq_id_t me, peer_id;
    utofu_stadd_t my_win, peer_win;
    UCHECK(utofu_create_vcq(0, 0, &vcq));
    UCHECK(utofu_query_vcq_id(vcq, &me));
    UCHECK(utofu_reg_mem(vcq, win, sizeof win, 0, &my_win));
    uint64_t mine[2] = { me, my_win }, all[4];
    MPI_Allgather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, MPI_COMM_WORLD);
    peer_id = all[2 * (1 - rank)];
    peer_win = all[2 * (1 - rank) + 1];
    volatile uint64_t *word = &win[0];
    long wrong = 0;
    pthread_t th;
    if (rank == 0) CHECK(pthread_create(&th, NULL, causal_yielder, NULL) == 0);
    MPI_Barrier(MPI_COMM_WORLD);

    for (long i = 1; i <= rounds; i++) {
        unsigned spins = 0;
        win[8] = (uint64_t)i;
        if (rank == 0) {
            int rc;
            void *cb;
            while ((rc = armw ? utofu_armw8(vcq, peer_id, UTOFU_ARMW_OP_ADD, 1, peer_win, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL)
                              : utofu_put(vcq, peer_id, my_win + 64, peer_win, 8, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL)) == UTOFU_ERR_BUSY)
                utofu_poll_tcq(vcq, 0, &cb);
            UCHECK(rc);
            struct utofu_mrq_notice first, second;
            UCHECK(wait_mrq(vcq, &first));
            UCHECK(wait_mrq(vcq, &second));
            int want = armw ? UTOFU_MRQ_TYPE_LCL_ARMW : UTOFU_MRQ_TYPE_LCL_PUT;
            if (first.notice_type != want) {
                if (wrong++ < 5) fprintf(stderr, "utofu_causal: round %ld: notice type %d came before the operation's own (%d)\n", i, first.notice_type, want);
                CHECK(first.notice_type == UTOFU_MRQ_TYPE_RMT_PUT && second.notice_type == want);
            } else {
                CHECK_EQ(second.notice_type, UTOFU_MRQ_TYPE_RMT_PUT);
            }
            while (*word != (uint64_t)i) causal_relax(&spins);
        } else {
            while (*word != (uint64_t)i) causal_relax(&spins);
            int rc;
            void *cb;
            while ((rc = utofu_put(vcq, peer_id, my_win + 64, peer_win, 8, 0, UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE, NULL)) == UTOFU_ERR_BUSY)
                utofu_poll_tcq(vcq, 0, &cb);
            UCHECK(rc);
        }
    }
    if (rank == 0) {
        causal_stop = 1;
        CHECK(pthread_join(th, NULL) == 0);
        if (wrong) SN_FAIL("%ld of %ld rounds saw the reaction's notice first", wrong, rounds);
        printf("utofu_causal: %ld rounds, the local notice first in every one\n", rounds);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    UCHECK(utofu_dereg_mem(vcq, my_win, 0));
    UCHECK(utofu_free_vcq(vcq));
    printf("utofu_causal: rank %d ok\n", rank);
    MPI_Finalize();
    return 0;
}
