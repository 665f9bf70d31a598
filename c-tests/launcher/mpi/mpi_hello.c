/* A real PMI-1 client: MPICH's libmpi talks to snrun over PMI_FD (or
 * PMI_PORT).  Checks that ranks are distinct and complete, that the barrier
 * and an allreduce work, and that node-local information derived from
 * PMI_process_mapping matches snrun's SOFTNIC_LOCAL_* variables. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAIL [rank %d] %s:%d: %s\n", rank, __FILE__, __LINE__, #c); \
    MPI_Abort(MPI_COMM_WORLD, 1); } } while (0)

int main(int argc, char **argv)
{
    int rank = -1, size = 0;
    CHECK(MPI_Init(&argc, &argv) == MPI_SUCCESS);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    const char *pr = getenv("PMI_RANK"), *ps = getenv("PMI_SIZE");
    if (pr) CHECK(atoi(pr) == rank);
    if (ps) CHECK(atoi(ps) == size);
    CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS);

    /* Sum of ranks and a bitmask of who took part. */
    long sum = 0, mine = rank;
    CHECK(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(sum == (long)size * (size - 1) / 2);
    int seen = 0, bit = 1 << (rank % 30);
    CHECK(MPI_Allreduce(&bit, &seen, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD) == MPI_SUCCESS);
    if (size <= 30) CHECK(seen == (1 << size) - 1);

    /* MPICH computes node membership from PMI_process_mapping. */
    MPI_Comm node;
    int lrank = -1, lsize = 0;
    CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS);
    MPI_Comm_rank(node, &lrank);
    MPI_Comm_size(node, &lsize);
    const char *elr = getenv("SOFTNIC_LOCAL_RANK"), *els = getenv("SOFTNIC_LOCAL_SIZE");
    if (elr) CHECK(atoi(elr) == lrank);
    if (els) CHECK(atoi(els) == lsize);
    MPI_Comm_free(&node);

    printf("mpi_hello rank %d of %d (local %d of %d) ok\n", rank, size, lrank, lsize);
    fflush(stdout);
    CHECK(MPI_Finalize() == MPI_SUCCESS);
    return 0;
}
