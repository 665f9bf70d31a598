/* pmi.h -- softnic's PMI: the PMI-1 process-management interface plus the
 * Cray extensions, provided by libpmi.so.0.
 *
 * Written for softnic from the ABI facts (constant values, struct layout,
 * prototypes); it is not a copy of any vendor header.
 *
 * How this implementation behaves where the vendor documents are silent:
 *
 *  - Launchers: snrun, or MPICH's mpiexec (hydra), or any server of the
 *    PMI-1 "simple" wire protocol (PMI_FD, or PMI_PORT + PMI_ID).  With
 *    neither variable set the program is a singleton: a 1-rank job with a
 *    private key-value space.
 *  - Lazy start: every call connects on first use, so PMI_Barrier,
 *    PMI_Allgather, PMI_Get_rank, ... work without PMI_Init (DMAPP programs
 *    rely on this).  PMI_Initialized reports PMI_TRUE once connected, whether
 *    by PMI_Init or implicitly.  PMI_Init may be called again (no effect).
 *  - Environment contract: on connecting, the library sets these variables
 *    unless already set (snrun sets them first): PMI_GNI_PTAG, PMI_GNI_COOKIE
 *    (decimal, the same on every rank of the job), PMI_GNI_DEV_ID=0,
 *    PMI_GNI_LOC_ADDR=<this rank's nid> (one device per node, so no colon
 *    list), ALPS_APP_PE=<rank>.
 *  - PMI_Finalize is final: afterwards PMI_Init returns PMI_FAIL and calls
 *    that need the job return PMI_ERR_INIT.  PMI_Initialized reports PMI_FALSE.
 *  - PMI_Abort ends every rank of the job (the launcher kills them) and does
 *    not return; the exit status of the job is exit_code.  As a singleton the
 *    process exits with exit_code.
 *  - A process that exits without PMI_Finalize is finalized at exit when its
 *    exit status is 0 (programs that never call it end cleanly, and a rank
 *    that leaves early does not take the job down); with any other status it
 *    is not, so the launcher ends the job, as MPICH's own client does with
 *    hydra (snrun ends it either way).  [pmi_exit_*]
 *  - Threads: all calls are serialised by one process-wide lock; a thread
 *    blocked in PMI_Barrier delays other threads' PMI calls until it returns.
 *  - PMI_Barrier is also a full memory barrier.
 *  - Thread cancellation: PMI_Barrier (and PMI_Ibarrier) is a cancellation
 *    point, deferred and asynchronous.  The process has entered the barrier:
 *    the other ranks complete it without it, and the process's next barrier
 *    adopts it (waits for its end instead of entering a new one), so barriers
 *    stay matched across the job.  No other call is a cancellation point
 *    (PMI_Allgather and PMI_Bcast run to their end).  [pmi_cancel]
 *  - Keys: non-empty, shorter than PMI_KVS_Get_key_length_max(), no spaces,
 *    control characters or '=' (else PMI_ERR_INVALID_KEY /
 *    PMI_ERR_INVALID_KEY_LENGTH).  Values: shorter than
 *    PMI_KVS_Get_value_length_max(), no spaces or control characters (else
 *    PMI_ERR_INVALID_VAL / PMI_ERR_INVALID_VAL_LENGTH); empty is allowed.
 *    The wire protocol cannot carry those characters.
 *  - PMI_KVS_Get of a key nobody put (or whose put is not yet followed by a
 *    PMI_Barrier) returns PMI_ERR_INVALID_KEY.  A KVS name other than the
 *    job's own (PMI_KVS_Get_my_name) or one this process created returns
 *    PMI_ERR_INVALID_KVS.  NULL pointers return PMI_ERR_INVALID_ARG; output
 *    buffers too small for the result return PMI_ERR_INVALID_LENGTH
 *    (PMI_ERR_INVALID_VAL_LENGTH / _KEY_LENGTH for KVS values and keys).
 *  - PMI_KVS_Iter_first/_next walk the KVS in server order; the end is
 *    signalled by PMI_SUCCESS with an empty key and value.  Keys starting with
 *    "_sn." are softnic's own (PMI_Allgather, PMI_Bcast, the API libraries'
 *    bootstrap) and are skipped.  PMI_KVS_Create/_Destroy and the iterators
 *    need server support: snrun and singletons have it; under hydra (which
 *    ends the job on commands it does not know) they return PMI_FAIL
 *    without asking the server.
 *  - PMI_Get_universe_size returns the job size when the server does not
 *    know a universe size.  PMI_Get_id and PMI_Get_kvs_domain_id return the
 *    KVS name.  PMI_Get_id_length_max returns the KVS name limit.
 *  - Spawning is not supported: PMI_Spawn_multiple returns PMI_FAIL (and
 *    PMI_FAIL in every errors[] slot when errors is not NULL).
 *  - Launcher options: none are passed through the application's argv, so
 *    PMI_Parse_option and PMI_Args_to_keyval recognise nothing: they leave
 *    the arguments alone, return *num_parsed = 0 (Parse_option), *keyvalp =
 *    NULL and *size = 0.  PMI_Free_keyvals accepts what they return and
 *    frees nothing.  PMI_Get_options stores an empty string (*length = 0).
 *
 * Cray extensions:
 *  - Node ids (nids) are 0, 1, 2, ... in the launcher's process mapping
 *    (snrun -N k puts k ranks per node; mpiexec on one host: one node).
 *  - PMI_Allgather returns the contributions in RANK order (rank 0's len
 *    bytes first).  Cray's documentation does not promise an order; ours is
 *    a guarantee.  Every rank must pass the same len.
 *  - PMI_Bcast broadcasts from rank 0.
 *  - PMI_Get_nidlist_ptr stores a pointer to a library-owned int array with
 *    the nid of every rank, valid until the process exits.
 *  - pmi_nid_t is uint16_t (consumers cast NIDs to uint16_t or pmi_nid_t;
 *    16 bits covers every node a softnic job can have).
 *  - Mesh coordinates: nid n lies at (mesh_x = n, mesh_y = 0, mesh_z = 0);
 *    PMI_Get_max_dimension gives (nodes - 1, 0, 0).  PMI_Get_meshcoord of a
 *    nid outside the job returns PMI_ERR_INVALID_ARG.
 *  - One application per job: PMI_Get_rank_in_app equals the rank and
 *    PMI_Get_app_size(appnum) the job size for this job's appnum
 *    (PMI_ERR_INVALID_ARG for any other appnum).
 *  - PMI_Ibarrier completes the barrier before returning; PMI_Wait then
 *    returns PMI_SUCCESS at once.
 */
#ifndef PMI_H
#define PMI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes */
#define PMI_SUCCESS                  0
#define PMI_FAIL                    -1
#define PMI_ERR_INIT                 1
#define PMI_ERR_NOMEM                2
#define PMI_ERR_INVALID_ARG          3
#define PMI_ERR_INVALID_KEY          4
#define PMI_ERR_INVALID_KEY_LENGTH   5
#define PMI_ERR_INVALID_VAL          6
#define PMI_ERR_INVALID_VAL_LENGTH   7
#define PMI_ERR_INVALID_LENGTH       8
#define PMI_ERR_INVALID_NUM_ARGS     9
#define PMI_ERR_INVALID_ARGS        10
#define PMI_ERR_INVALID_NUM_PARSED  11
#define PMI_ERR_INVALID_KEYVALP     12
#define PMI_ERR_INVALID_SIZE        13
#define PMI_ERR_INVALID_KVS         14

typedef int PMI_BOOL;
#define PMI_TRUE  1
#define PMI_FALSE 0

/* A key/value pair (used by the spawn and option-parsing calls). */
typedef struct PMI_keyval_t {
    char *key;
    char *val;
} PMI_keyval_t;

/* ---- Initialisation and job shape ---- */
int PMI_Init(int *spawned);
int PMI_Initialized(PMI_BOOL *initialized);
int PMI_Finalize(void);
int PMI_Get_size(int *size);
int PMI_Get_rank(int *rank);
int PMI_Get_universe_size(int *size);
int PMI_Get_appnum(int *appnum);

/* ---- Name publishing ---- */
int PMI_Publish_name(const char service_name[], const char port[]);
int PMI_Unpublish_name(const char service_name[]);
/* port must hold PMI_KVS_Get_value_length_max() bytes. */
int PMI_Lookup_name(const char service_name[], char port[]);

/* ---- Job identity, synchronisation, node-local ranks ---- */
int PMI_Get_id(char id_str[], int length);
int PMI_Get_kvs_domain_id(char id_str[], int length);
int PMI_Get_id_length_max(int *length);
int PMI_Barrier(void);
int PMI_Get_clique_size(int *size);
int PMI_Get_clique_ranks(int ranks[], int length);
int PMI_Abort(int exit_code, const char error_msg[]);

/* ---- Key-value spaces ---- */
int PMI_KVS_Get_my_name(char kvsname[], int length);
int PMI_KVS_Get_name_length_max(int *length);
int PMI_KVS_Get_key_length_max(int *length);
int PMI_KVS_Get_value_length_max(int *length);
int PMI_KVS_Create(char kvsname[], int length);
int PMI_KVS_Destroy(const char kvsname[]);
int PMI_KVS_Put(const char kvsname[], const char key[], const char value[]);
int PMI_KVS_Commit(const char kvsname[]);
int PMI_KVS_Get(const char kvsname[], const char key[], char value[], int length);
int PMI_KVS_Iter_first(const char kvsname[], char key[], int key_len, char val[], int val_len);
int PMI_KVS_Iter_next(const char kvsname[], char key[], int key_len, char val[], int val_len);

/* ---- Process creation and launcher options (see the notes above) ---- */
int PMI_Spawn_multiple(int count,
                       const char *cmds[],
                       const char **argvs[],
                       const int maxprocs[],
                       const int info_keyval_sizesp[],
                       const PMI_keyval_t *info_keyval_vectors[],
                       int preput_keyval_size,
                       const PMI_keyval_t preput_keyval_vector[],
                       int errors[]);
int PMI_Parse_option(int num_args, char *args[], int *num_parsed, PMI_keyval_t **keyvalp, int *size);
int PMI_Args_to_keyval(int *argcp, char *((*argvp)[]), PMI_keyval_t **keyvalp, int *size);
int PMI_Free_keyvals(PMI_keyval_t keyvalp[], int size);
int PMI_Get_options(char *str, int *length);

/* ---- Cray extensions ---- */
typedef uint16_t pmi_nid_t;

typedef struct pmi_mesh_coord {
    uint16_t mesh_x;
    uint16_t mesh_y;
    uint16_t mesh_z;
} pmi_mesh_coord_t;

int PMI_Get_nid(int rank, int *nid);
int PMI_Allgather(void *in, void *out, int len);
int PMI_Bcast(void *buf, int len);
int PMI_Get_numpes_on_smp(int *num);
int PMI_Get_pes_on_smp(int *pes, int length);
int PMI_Get_rank_in_app(int *rank);
int PMI_Get_app_size(int appnum, int *size);
int PMI_Get_nidlist_ptr(void **nidlist);
int PMI_Get_meshcoord(pmi_nid_t nid, pmi_mesh_coord_t *xyz);
int PMI_Get_max_dimension(pmi_mesh_coord_t *max);
int PMI_Ibarrier(void);
int PMI_Wait(void);

#ifdef __cplusplus
}
#endif

#endif /* PMI_H */
