/* MPI and our libraries in one program, sharing the launcher's one PMI connection (the
 * PMI relay): the application's MPI and our libpmi (and DMAPP, which bootstraps over
 * PMI) take turns on it — KVS puts and gets through both, PMI barriers between MPI
 * collectives, DMAPP RMA and AMOs between ranks.  `mpi_with_pmi [dmapp]`; run under
 * snrun, mpiexec and srun --mpi=pmi2. */
#include <mpi.h>
#include <pmi.h>
#include <dmapp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sntest.h"

int main(int argc, char **argv)
{
    int with_dmapp = argc > 1 && !strcmp(argv[1], "dmapp");
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    sntest_rank = rank;
    int spawned, prank, psize;
    CHECK_EQ(PMI_Init(&spawned), PMI_SUCCESS);
    CHECK_EQ(PMI_Get_rank(&prank), PMI_SUCCESS);
    CHECK_EQ(PMI_Get_size(&psize), PMI_SUCCESS);
    CHECK_EQ(prank, rank);
    CHECK_EQ(psize, n);
    char kvs[256], key[64], val[64], got[256];
    CHECK_EQ(PMI_KVS_Get_my_name(kvs, sizeof kvs), PMI_SUCCESS);
    for (int round = 0; round < 5; round++) {
        snprintf(key, sizeof key, "relay-%d-%d", round, rank);
        snprintf(val, sizeof val, "v%d.%d", round, rank * 7);
        CHECK_EQ(PMI_KVS_Put(kvs, key, val), PMI_SUCCESS);
        CHECK_EQ(PMI_KVS_Commit(kvs), PMI_SUCCESS);
        int x = rank + round, sum = 0;
        MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK_EQ(sum, n * (n - 1) / 2 + n * round);
        CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
        for (int r = 0; r < n; r++) {
            snprintf(key, sizeof key, "relay-%d-%d", round, r);
            snprintf(val, sizeof val, "v%d.%d", round, r * 7);
            CHECK_EQ(PMI_KVS_Get(kvs, key, got, sizeof got), PMI_SUCCESS);
            CHECK(!strcmp(got, val));
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (with_dmapp) {
        dmapp_rma_attrs_t req = {0}, act = {0};
        req.max_outstanding_nb = DMAPP_DEF_OUTSTANDING_NB;
        req.offload_threshold = DMAPP_OFFLOAD_THRESHOLD;
        req.put_relaxed_ordering = DMAPP_ROUTING_DETERMINISTIC;
        req.get_relaxed_ordering = DMAPP_ROUTING_ADAPTIVE;
        req.max_concurrency = 1;
        CHECK_EQ(dmapp_init(&req, &act), DMAPP_RC_SUCCESS);
        dmapp_jobinfo_t job;
        CHECK_EQ(dmapp_get_jobinfo(&job), DMAPP_RC_SUCCESS);
        CHECK_EQ(job.pe, rank);
        int64_t *cell = dmapp_sheap_malloc(8 * (size_t)n);
        CHECK(cell != NULL);
        memset(cell, 0, 8 * (size_t)n);
        MPI_Barrier(MPI_COMM_WORLD);
        int right = (rank + 1) % n;
        int64_t mine = 1000 + rank;
        CHECK_EQ(dmapp_put(&cell[rank], &job.sheap_seg, right, &mine, 1, DMAPP_QW), DMAPP_RC_SUCCESS);
        CHECK_EQ(dmapp_aadd_qw(&cell[0], &job.sheap_seg, 0, 1), DMAPP_RC_SUCCESS);
        MPI_Barrier(MPI_COMM_WORLD);
        int left = (rank + n - 1) % n;
        if (n > 1) CHECK_EQ(cell[left], 1000 + left);
        if (rank == 0) CHECK_EQ(cell[0] - (n == 1 ? 1000 : 0), n);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_EQ(dmapp_finalize(), DMAPP_RC_SUCCESS);
    }
    printf("mpi_with_pmi: rank %d of %d ok%s\n", rank, n, with_dmapp ? " (with DMAPP)" : "");
    MPI_Finalize();
    return 0;
}
