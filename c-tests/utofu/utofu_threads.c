/* Several threads on one VCQ and on VCQs of their own (the guide lets any thread poll what
 * another started; this library locks every object whatever its flags): each thread puts
 * into its own slice of the right neighbour's window and fetch-adds rank 0's counter, and
 * polls the shared TCQ/MRQ; every notice is accounted for and the data and the counter
 * are exact.  Usage: utofu_threads [threads] [iterations]. */
#include "utest.h"
#include <mpi.h>
#include <pthread.h>

static int rank, n, nthreads = 4, iters = 500;
static utofu_vcq_hdl_t shared_vcq;
static utofu_vcq_id_t right_id, zero_id;
static utofu_stadd_t my_win, right_win, zero_cnt;
static uint64_t win[16 * 64];
static uint64_t counter;
static long lcl_notices;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    uint64_t *slot = &win[t * 64];
    for (int i = 0; i < iters; i++) {
        int rc;
        slot[0] = ((uint64_t)rank << 48) | ((uint64_t)t << 32) | (uint64_t)i;
        /* put into slice t + 8 of the neighbour (its slots 8..15 are the receive side) */
        while ((rc = utofu_put(shared_vcq, right_id, my_win + 8 * 64 * t, right_win + 8 * 64 * (t + 8), 8, (uint64_t)t,
                               UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE | UTOFU_ONESIDED_FLAG_TCQ_NOTICE, (void *)(intptr_t)(t + 1))) == UTOFU_ERR_BUSY) {
            void *cb;
            utofu_poll_tcq(shared_vcq, 0, &cb);
        }
        UCHECK(rc);
        while ((rc = utofu_armw8(shared_vcq, zero_id, UTOFU_ARMW_OP_ADD, 1, zero_cnt, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL)) == UTOFU_ERR_BUSY) {
            void *cb;
            utofu_poll_tcq(shared_vcq, 0, &cb);
        }
        UCHECK(rc);
        /* poll whatever is there: another thread's notices count the same */
        struct utofu_mrq_notice no;
        void *cb;
        while ((rc = utofu_poll_mrq(shared_vcq, 0, &no)) != UTOFU_ERR_NOT_FOUND) {
            UCHECK(rc);
            CHECK(no.notice_type == UTOFU_MRQ_TYPE_LCL_PUT || no.notice_type == UTOFU_MRQ_TYPE_LCL_ARMW);
            pthread_mutex_lock(&count_lock); lcl_notices++; pthread_mutex_unlock(&count_lock);
        }
        while ((rc = utofu_poll_tcq(shared_vcq, 0, &cb)) != UTOFU_ERR_NOT_FOUND) {
            UCHECK(rc);
            CHECK((intptr_t)cb >= 1 && (intptr_t)cb <= nthreads);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int prov;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &prov);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    sntest_rank = rank;
    if (argc > 1) nthreads = atoi(argv[1]);
    if (argc > 2) iters = atoi(argv[2]);
    if (nthreads > 8) nthreads = 8;
    UCHECK(utofu_create_vcq(0, UTOFU_VCQ_FLAG_THREAD_SAFE, &shared_vcq));
    utofu_vcq_id_t me;
    UCHECK(utofu_query_vcq_id(shared_vcq, &me));
    UCHECK(utofu_reg_mem(shared_vcq, win, sizeof win, 0, &my_win));
    utofu_stadd_t cnt;
    UCHECK(utofu_reg_mem(shared_vcq, &counter, 8, 0, &cnt));
    uint64_t mine[3] = { me, my_win, cnt }, *all = malloc(sizeof mine * n);
    MPI_Allgather(mine, 3, MPI_UINT64_T, all, 3, MPI_UINT64_T, MPI_COMM_WORLD);
    right_id = all[3 * ((rank + 1) % n)]; right_win = all[3 * ((rank + 1) % n) + 1];
    zero_id = all[0]; zero_cnt = all[2];
    MPI_Barrier(MPI_COMM_WORLD);
    pthread_t th[8];
    for (int t = 0; t < nthreads; t++) pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
    /* the rest of the notices */
    struct utofu_mrq_notice no;
    int rc;
    while (lcl_notices < 2L * nthreads * iters) {
        rc = wait_mrq(shared_vcq, &no);
        UCHECK(rc);
        lcl_notices++;
    }
    expect_empty(shared_vcq);
    MPI_Barrier(MPI_COMM_WORLD);
    int left = (rank + n - 1) % n;
    for (int t = 0; t < nthreads; t++)
        CHECK(win[(t + 8) * 64] == (((uint64_t)left << 48) | ((uint64_t)t << 32) | (uint64_t)(iters - 1)));
    if (rank == 0) CHECK_EQ(counter, (uint64_t)n * nthreads * iters);
    MPI_Barrier(MPI_COMM_WORLD);
    UCHECK(utofu_free_vcq(shared_vcq));
    free(all);
    printf("utofu_threads: rank %d of %d ok (%d threads)\n", rank, n, nthreads);
    MPI_Finalize();
    return 0;
}
