/* Helpers for the uTofu tests: checked calls and notice waits. */
#ifndef UTEST_H
#define UTEST_H
#include "sntest.h"
#include <stdint.h>
#include <utofu.h>

#define UCHECK(call) CHECK_EQ((call), UTOFU_SUCCESS)
#define ALL_NOTICES (UTOFU_ONESIDED_FLAG_TCQ_NOTICE | UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE | UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE)

/* Polls the MRQ until something arrives; returns the code, fills *n. */
static inline int wait_mrq(utofu_vcq_hdl_t h, struct utofu_mrq_notice *n)
{
    int rc;
    long spins = 0;
    while ((rc = utofu_poll_mrq(h, 0, n)) == UTOFU_ERR_NOT_FOUND)
        if (++spins > 2000000000L) SN_FAIL("no MRQ notice");
    return rc;
}

/* Polls the TCQ until an entry is returned; returns the code, fills *cb. */
static inline int wait_tcq(utofu_vcq_hdl_t h, void **cb)
{
    int rc;
    long spins = 0;
    while ((rc = utofu_poll_tcq(h, 0, cb)) == UTOFU_ERR_NOT_FOUND)
        if (++spins > 2000000000L) SN_FAIL("no TCQ entry");
    return rc;
}

#ifdef MPI_VERSION
/* MPI_Init, this rank and the job's size, and the rank failure messages name. */
static inline void utest_mpi_init(int *argc, char ***argv, int *rank, int *n)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, n);
    sntest_rank = *rank;
}
#endif

/* Nothing more in either queue. */
static inline void expect_empty(utofu_vcq_hdl_t h)
{
    struct utofu_mrq_notice n;
    void *cb;
    CHECK_EQ(utofu_poll_mrq(h, 0, &n), UTOFU_ERR_NOT_FOUND);
    CHECK_EQ(utofu_poll_tcq(h, 0, &cb), UTOFU_ERR_NOT_FOUND);
}
#endif
