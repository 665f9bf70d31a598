/* uTofu has no blocking calls ("every function returns in finite time"): a program waits
 * by polling, so its watcher threads poll utofu_poll_mrq / utofu_poll_tcq in a loop, and
 * are cancelled at exit either asynchronously or, deferred, at their own cancellation
 * points (pthread_testcancel, a sleep) between polls.  Both must end the thread and leave
 * the VCQ usable: afterwards the main thread puts to the right neighbour with a remote MRQ
 * notice and receives the left neighbour's, and a thread-safe VCQ shared with the
 * cancelled pollers still takes every notice.  Usage: utofu_cancel [rounds]. */
#include "utest.h"
#include "canceltest.h"
#include <mpi.h>

static utofu_vcq_hdl_t vcq;

static void poll_mrq(void *a)
{
    struct utofu_mrq_notice n;
    int rc = utofu_poll_mrq(vcq, 0, &n);
    if (rc != UTOFU_ERR_NOT_FOUND) SN_FAIL("utofu_poll_mrq returned %d with nothing sent", rc);
    if (a) pthread_testcancel();
}

static void poll_tcq(void *a)
{
    void *cb;
    int rc = utofu_poll_tcq(vcq, 0, &cb);
    if (rc != UTOFU_ERR_NOT_FOUND) SN_FAIL("utofu_poll_tcq returned %d with nothing posted", rc);
    if (a) pthread_testcancel();
}

int main(int argc, char **argv)
{
    int rank, n, prov;
    int rounds = argc > 1 ? atoi(argv[1]) : 10;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &prov);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    sntest_rank = rank;
    UCHECK(utofu_create_vcq(0, UTOFU_VCQ_FLAG_THREAD_SAFE, &vcq));
    static uint64_t win[64];
    utofu_stadd_t my_win;
    utofu_vcq_id_t me;
    UCHECK(utofu_query_vcq_id(vcq, &me));
    UCHECK(utofu_reg_mem(vcq, win, sizeof win, 0, &my_win));
    uint64_t mine[2] = { me, my_win }, *all = malloc(sizeof mine * n);
    MPI_Allgather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, MPI_COMM_WORLD);
    int right = (rank + 1) % n, left = (rank + n - 1) % n;

    for (int i = 0; i < rounds; i++) {
        long d = 1000 + 150 * i;
        ct_cancel("utofu_poll_mrq in a loop", poll_mrq, NULL, PTHREAD_CANCEL_ASYNCHRONOUS, 1, d);
        ct_cancel("utofu_poll_tcq in a loop", poll_tcq, NULL, PTHREAD_CANCEL_ASYNCHRONOUS, 1, d);
        ct_cancel("utofu_poll_mrq + pthread_testcancel in a loop", poll_mrq, (void *)1, PTHREAD_CANCEL_DEFERRED, 1, d);
        ct_cancel("utofu_poll_tcq + pthread_testcancel in a loop", poll_tcq, (void *)1, PTHREAD_CANCEL_DEFERRED, 1, d);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    win[0] = 0xca11ed00u + rank;
    int rc;
    while ((rc = utofu_put(vcq, all[2 * right], my_win, all[2 * right + 1] + 8, 8, 0x77,
                           UTOFU_ONESIDED_FLAG_TCQ_NOTICE | UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE, NULL)) == UTOFU_ERR_BUSY) {}
    UCHECK(rc);
    void *cb;
    UCHECK(wait_tcq(vcq, &cb));
    struct utofu_mrq_notice no;
    UCHECK(wait_mrq(vcq, &no));
    CHECK_EQ(no.notice_type, UTOFU_MRQ_TYPE_RMT_PUT);
    CHECK_EQ(no.edata, 0x77);
    CHECK_EQ(win[1], 0xca11ed00u + left);
    MPI_Barrier(MPI_COMM_WORLD);
    expect_empty(vcq);
    UCHECK(utofu_dereg_mem(vcq, my_win, 0));
    UCHECK(utofu_free_vcq(vcq));
    printf("utofu_cancel: rank %d ok\n", rank);
    MPI_Finalize();
    return 0;
}
