/* jtofu.h -- softnic's Fujitsu jTofu (job topology for uTofu), provided by
 * libtofutop.so.  Link with -ltofutop -ltofucom (either order).
 *
 * Written for softnic from the ABI facts; it is not a copy of any vendor header.
 *
 * How this implementation behaves where the vendor says nothing:
 *
 * - Nodes: as utofu.h says (SOFTNIC_NODE_ID; node n has A = n%2, B = (n/2)%3,
 *   C = (n/6)%2, X/Y/Z = the bytes of n/12).
 * - Mapinfo is our own blob (magic, process count, node of each rank), made
 *   by jtofu_create_mapinfo_by_envvars from the launcher's environment:
 *   process count PMI_SIZE, OMPI_COMM_WORLD_SIZE or SLURM_NTASKS; nodes from
 *   SOFTNIC_NODE_MAP (comma list, set by snrun) or blocks of
 *   SOFTNIC_RANKS_PER_NODE / MPI_LOCALNRANKS / OMPI_COMM_WORLD_LOCAL_SIZE ranks
 *   (all ranks on one node when none is set).  It comes from malloc: release it
 *   with free().  jtofu_initialize with a NULL mapinfo builds the same map.
 * - jtofu_initialize may be called again (counted; the first job stays the
 *   default); each needs a jtofu_finalize, one more is
 *   JTOFU_ERR_EXCESS_FINALIZE.  Queries before it: JTOFU_ERR_NOT_INITIALIZED
 *   (jtofu_query_max_proc_per_node returns that code as its value).
 * - Shapes: system size and job size are the bounding box of the job's nodes
 *   (from 0 for the system; A, B, C always 2, 3, 2); only B is a torus; the
 *   reference coordinates are the box's lower corner; logical coordinates are
 *   (index of the rank's node among the job's nodes, 0, 0).
 * - Paths: one-sided, all 12 (A, B, C) path coordinates with the node's own
 *   first (what utofu_set_vcq_id_path(NULL) chooses); barrier, the node's own.
 *   Hops: the 6-D distance from this node (B wraps).
 * - Rank lists: num_ranks is the number written (at most max_ranks), in rank
 *   order.  Unknown jobs, ranks or coordinates: JTOFU_ERR_INVALID_ARG; NULL
 *   pointers: JTOFU_ERR_INVALID_POINTER.
 */
#ifndef JTOFU_H
#define JTOFU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define JTOFU_VERSION_MAJOR 0
#define JTOFU_VERSION_MINOR 0

enum jtofu_return_code {
    JTOFU_SUCCESS = 0,
    JTOFU_ERR_NOT_INITIALIZED = -1,
    JTOFU_ERR_NOT_IMPLEMENTED = -2,
    JTOFU_ERR_INVALID_ARG = -3,
    JTOFU_ERR_INVALID_POINTER = -4,
    JTOFU_ERR_EXCESS_FINALIZE = -5,
    JTOFU_ERR_OUT_OF_MEMORY = -6,
    JTOFU_ERR_INTERNAL = -100
};

typedef uint32_t jtofu_job_id_t;
typedef uint32_t jtofu_rank_t;

union jtofu_phys_coords {
    struct {
        uint8_t x, y, z, a, b, c;
    } s;
    uint8_t a[6];
};

union jtofu_log_coords {
    struct {
        uint32_t x, y, z;
    } s;
    uint32_t a[3];
};

union jtofu_path_coords {
    struct {
        uint8_t pa, pb, pc;
    } s;
    uint8_t a[3];
};

int jtofu_initialize(jtofu_job_id_t job_id, jtofu_rank_t rank, const void *mapinfo);
int jtofu_finalize(void);
int jtofu_add_job(jtofu_job_id_t job_id, const void *mapinfo);
int jtofu_delete_job(jtofu_job_id_t job_id);
int jtofu_query_sys_size(union jtofu_phys_coords *sys_size);
int jtofu_query_sys_torus(union jtofu_phys_coords *sys_torus);
int jtofu_query_ref_coords(union jtofu_phys_coords *ref_coords);
int jtofu_query_phys_size(union jtofu_phys_coords *phys_size);
int jtofu_query_log_size(union jtofu_log_coords *log_size);
int jtofu_query_phys_coords(jtofu_job_id_t job_id, jtofu_rank_t rank, union jtofu_phys_coords *phys_coords);
int jtofu_query_log_coords(jtofu_job_id_t job_id, jtofu_rank_t rank, union jtofu_log_coords *log_coords);
int jtofu_query_max_proc_per_node(void);
int jtofu_query_ranks_from_phys_coords(jtofu_job_id_t job_id, union jtofu_phys_coords *phys_coords, size_t max_ranks,
                                       jtofu_rank_t *ranks, size_t *num_ranks);
int jtofu_query_ranks_from_log_coords(jtofu_job_id_t job_id, union jtofu_log_coords *log_coords, size_t max_ranks,
                                      jtofu_rank_t *ranks, size_t *num_ranks);
int jtofu_query_onesided_paths(union jtofu_phys_coords *phys_coords, size_t max_paths,
                               union jtofu_path_coords path_coords[], size_t *num_paths);
int jtofu_query_barrier_paths(union jtofu_phys_coords *phys_coords, size_t max_paths,
                              union jtofu_path_coords path_coords[], size_t *num_paths);
int jtofu_query_onesided_hops(union jtofu_phys_coords *phys_coords, size_t *num_hops);
int jtofu_query_barrier_hops(union jtofu_phys_coords *phys_coords, size_t *num_hops);
extern void jtofu_query_jtofu_version(int *major_ver, int *minor_ver);
extern int jtofu_create_mapinfo_by_envvars(void **mapinfo, size_t *mapinfo_size, unsigned int *num_proc);

#ifdef __cplusplus
}
#endif

#endif /* JTOFU_H */
