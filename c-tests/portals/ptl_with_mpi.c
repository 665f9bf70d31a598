/* A Portals program that is also an MPI program: process ids exchanged with
 * MPI_Allgather and checked against the Portals runtime, a ring of acknowledged puts,
 * MPI_Barrier between the phases.  MPI and libportals share the launcher connection.
 * Built with mpicc.  Prints "ptl_with_mpi: rank R of N ok". */
#include "ptest.h"
#include <mpi.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n, maxif;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    sntest_rank = rank;
    ptl_handle_ni_t ni;
    PCHECK(PtlInit(&maxif));
    PCHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    ptl_process_id_t me, *ids = malloc(sizeof *ids * n);
    PCHECK(PtlGetId(ni, &me));
    MPI_Allgather(&me, 2, MPI_UNSIGNED, ids, 2, MPI_UNSIGNED, MPI_COMM_WORLD);
    for (int r = 0; r < n; r++) {
        ptl_process_id_t id;
        PCHECK(PtlGetRankId(ni, r, &id));
        CHECK(id.nid == ids[r].nid && id.pid == ids[r].pid);
    }
    ptl_handle_eq_t eq, ieq;
    PCHECK(PtlEQAlloc(ni, 256, PTL_EQ_HANDLER_NONE, &eq));
    PCHECK(PtlEQAlloc(ni, 256, PTL_EQ_HANDLER_NONE, &ieq));
    static uint64_t slot, out;
    ptl_handle_me_t m;
    PCHECK(PtlMEAttach(ni, 3, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m));
    PCHECK(PtlMDAttach(m, md_of(&slot, 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq), PTL_RETAIN, NULL));
    ptl_handle_md_t md;
    PCHECK(PtlMDBind(ni, md_of(&out, 8, PTL_MD_THRESH_INF, 0, ieq), PTL_RETAIN, &md));
    MPI_Barrier(MPI_COMM_WORLD);
    int right = (rank + 1) % n, left = (rank + n - 1) % n;
    for (int i = 0; i < 50; i++) {
        out = (uint64_t)rank * 1000 + i;
        PCHECK(PtlPut(md, PTL_ACK_REQ, ids[right], 3, 0, 0, 0, i));
        EXPECT(ieq, PTL_EVENT_SEND_START);
        EXPECT(ieq, PTL_EVENT_SEND_END);
        EXPECT(ieq, PTL_EVENT_ACK);
        ptl_event_t e = EXPECT(eq, PTL_EVENT_PUT_START);
        e = EXPECT(eq, PTL_EVENT_PUT_END);
        CHECK_EQ(e.hdr_data, i);
        CHECK(e.initiator.nid == ids[left].nid && e.initiator.pid == ids[left].pid);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_EQ(slot, (uint64_t)left * 1000 + i);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    PCHECK(PtlNIFini(ni));
    PtlFini();
    printf("ptl_with_mpi: rank %d of %d ok\n", rank, n);
    MPI_Finalize();
    return 0;
}
