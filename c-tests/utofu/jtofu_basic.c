/* jTofu between MPI ranks: a mapinfo from the launcher's environment, initialize with
 * and without it, rank <-> coordinates against what each rank's uTofu reports, the
 * shape queries, paths usable by utofu_set_vcq_id_path and utofu_get_path_id, hops,
 * finalize counting, and the argument checks. */
#include "utest.h"
#include <jtofu.h>
#include <mpi.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    sntest_rank = rank;

    union jtofu_phys_coords pc;
    CHECK_EQ(jtofu_query_phys_coords(1, 0, &pc), JTOFU_ERR_NOT_INITIALIZED);
    CHECK_EQ(jtofu_query_max_proc_per_node(), JTOFU_ERR_NOT_INITIALIZED);
    CHECK_EQ(jtofu_finalize(), JTOFU_ERR_EXCESS_FINALIZE);
    void *map; size_t sz; unsigned int np;
    CHECK_EQ(jtofu_create_mapinfo_by_envvars(NULL, &sz, &np), JTOFU_ERR_INVALID_POINTER);
    CHECK_EQ(jtofu_create_mapinfo_by_envvars(&map, &sz, &np), JTOFU_SUCCESS);
    CHECK_EQ(np, n);
    CHECK_EQ(jtofu_initialize(7, (jtofu_rank_t)n, map), JTOFU_ERR_INVALID_ARG);    /* rank out of range */
    if (rank % 2) CHECK_EQ(jtofu_initialize(7, (jtofu_rank_t)rank, NULL), JTOFU_SUCCESS);
    else CHECK_EQ(jtofu_initialize(7, (jtofu_rank_t)rank, map), JTOFU_SUCCESS);

    /* Every rank's coordinates as jTofu says = what that rank's uTofu says. */
    uint8_t mine[6], *all = malloc(6 * (size_t)n);
    UCHECK(utofu_query_my_coords(mine));
    MPI_Allgather(mine, 6, MPI_BYTE, all, 6, MPI_BYTE, MPI_COMM_WORLD);
    int per_node = 0;
    for (int r = 0; r < n; r++) {
        CHECK_EQ(jtofu_query_phys_coords(7, (jtofu_rank_t)r, &pc), JTOFU_SUCCESS);
        CHECK(memcmp(pc.a, all + 6 * r, 6) == 0);
        jtofu_rank_t ranks[64]; size_t nr;
        CHECK_EQ(jtofu_query_ranks_from_phys_coords(7, &pc, 64, ranks, &nr), JTOFU_SUCCESS);
        int found = 0, same = 0;
        for (size_t i = 0; i < nr; i++) found |= ranks[i] == (jtofu_rank_t)r;
        for (int q = 0; q < n; q++) same += memcmp(all + 6 * q, all + 6 * r, 6) == 0;
        CHECK(found); CHECK_EQ(nr, same);
        per_node = same > per_node ? same : per_node;
        union jtofu_log_coords lc;
        CHECK_EQ(jtofu_query_log_coords(7, (jtofu_rank_t)r, &lc), JTOFU_SUCCESS);
        CHECK_EQ(jtofu_query_ranks_from_log_coords(7, &lc, 64, ranks, &nr), JTOFU_SUCCESS);
        CHECK_EQ(nr, same);
    }
    CHECK_EQ(jtofu_query_max_proc_per_node(), per_node);
    CHECK_EQ(jtofu_query_phys_coords(7, (jtofu_rank_t)n, &pc), JTOFU_ERR_INVALID_ARG);
    CHECK_EQ(jtofu_query_phys_coords(8, 0, &pc), JTOFU_ERR_INVALID_ARG);           /* unknown job */
    CHECK_EQ(jtofu_query_phys_coords(7, 0, NULL), JTOFU_ERR_INVALID_POINTER);

    /* Shapes. */
    union jtofu_phys_coords size, torus, ref, psize;
    union jtofu_log_coords lsize;
    CHECK_EQ(jtofu_query_sys_size(&size), JTOFU_SUCCESS);
    CHECK(size.s.a == 2 && size.s.b == 3 && size.s.c == 2);
    CHECK_EQ(jtofu_query_sys_torus(&torus), JTOFU_SUCCESS);
    CHECK(torus.s.b == 1 && torus.s.a == 0);
    CHECK_EQ(jtofu_query_ref_coords(&ref), JTOFU_SUCCESS);
    CHECK_EQ(jtofu_query_phys_size(&psize), JTOFU_SUCCESS);
    CHECK_EQ(jtofu_query_log_size(&lsize), JTOFU_SUCCESS);
    CHECK(lsize.s.x >= 1 && lsize.s.y == 1 && lsize.s.z == 1);

    /* Paths to the right neighbour's node, used with uTofu. */
    int right = (rank + 1) % n;
    memcpy(pc.a, all + 6 * right, 6);
    union jtofu_path_coords paths[12];
    size_t npaths, hops;
    CHECK_EQ(jtofu_query_onesided_paths(&pc, 12, paths, &npaths), JTOFU_SUCCESS);
    CHECK_EQ(npaths, 12);
    CHECK(paths[0].s.pa == pc.s.a && paths[0].s.pb == pc.s.b && paths[0].s.pc == pc.s.c);
    CHECK_EQ(jtofu_query_barrier_paths(&pc, 12, paths + 0, &npaths), JTOFU_SUCCESS);
    CHECK_EQ(npaths, 1);
    CHECK_EQ(jtofu_query_onesided_paths(&pc, 12, paths, &npaths), JTOFU_SUCCESS);
    utofu_vcq_hdl_t h; utofu_vcq_id_t id, rid;
    UCHECK(utofu_create_vcq(0, 0, &h));
    UCHECK(utofu_query_vcq_id(h, &id));
    MPI_Sendrecv(&id, 1, MPI_UINT64_T, (rank + n - 1) % n, 0, &rid, 1, MPI_UINT64_T, right, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (size_t i = 0; i < npaths; i++) {
        utofu_vcq_id_t with = rid;
        utofu_path_id_t pid;
        uint8_t back[3];
        UCHECK(utofu_set_vcq_id_path(&with, paths[i].a));
        UCHECK(utofu_get_path_id(rid, paths[i].a, &pid));
        UCHECK(utofu_get_path_coords(rid, pid, back));
        CHECK(memcmp(back, paths[i].a, 3) == 0);
    }
    CHECK_EQ(jtofu_query_onesided_hops(&pc, &hops), JTOFU_SUCCESS);
    if (memcmp(pc.a, mine, 6) == 0) CHECK_EQ(hops, 0); else CHECK(hops > 0);
    CHECK_EQ(jtofu_query_barrier_hops(&pc, NULL), JTOFU_ERR_INVALID_POINTER);
    pc.s.b = 3;
    CHECK_EQ(jtofu_query_onesided_hops(&pc, &hops), JTOFU_ERR_INVALID_ARG);

    /* Jobs, nesting, finalize counting. */
    CHECK_EQ(jtofu_add_job(9, map), JTOFU_SUCCESS);
    CHECK_EQ(jtofu_add_job(9, map), JTOFU_ERR_INVALID_ARG);
    CHECK_EQ(jtofu_query_phys_coords(9, 0, &pc), JTOFU_SUCCESS);
    CHECK_EQ(jtofu_delete_job(9), JTOFU_SUCCESS);
    CHECK_EQ(jtofu_delete_job(9), JTOFU_ERR_INVALID_ARG);
    CHECK_EQ(jtofu_delete_job(7), JTOFU_ERR_INVALID_ARG);                       /* the initial job */
    CHECK_EQ(jtofu_initialize(7, (jtofu_rank_t)rank, map), JTOFU_SUCCESS);      /* nested */
    CHECK_EQ(jtofu_finalize(), JTOFU_SUCCESS);
    CHECK_EQ(jtofu_query_max_proc_per_node(), per_node);                          /* still initialized */
    CHECK_EQ(jtofu_finalize(), JTOFU_SUCCESS);
    CHECK_EQ(jtofu_finalize(), JTOFU_ERR_EXCESS_FINALIZE);
    CHECK_EQ(jtofu_query_sys_size(&size), JTOFU_ERR_NOT_INITIALIZED);
    int ma = -1, mi = -1;
    jtofu_query_jtofu_version(&ma, &mi);
    CHECK_EQ(ma, JTOFU_VERSION_MAJOR); CHECK_EQ(mi, JTOFU_VERSION_MINOR);
    free(map);
    free(all);
    UCHECK(utofu_free_vcq(h));
    printf("jtofu_basic: rank %d of %d ok (%d per node)\n", rank, n, per_node);
    MPI_Finalize();
    return 0;
}
