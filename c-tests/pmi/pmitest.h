/* Shared helpers for the PMI C tests. */
#ifndef PMITEST_H
#define PMITEST_H
#include "sntest.h"
#include <pmi.h>
#include <stdint.h>

#define PMI_OK(call) CHECK_EQ((call), PMI_SUCCESS)

/* hydra (mpiexec) ends the job on PMI commands it does not know, so the
 * library refuses KVS iteration/creation there; tests expect PMI_FAIL. */
static inline int under_hydra(void) { return getenv("HYDI_CONTROL_FD") != NULL; }
/* Servers without getbyidx/create_kvs/destroy_kvs (PMI_KVS_Iter_*, PMI_KVS_Create and
 * PMI_KVS_Destroy answer PMI_FAIL): hydra, and Slurm's PMI-2. */
static inline int limited_server(void) { return under_hydra() || getenv("SLURM_STEP_ID") != NULL; }

static inline void pmitest_init(int *rank, int *size)
{
    int spawned = -1;
    PMI_OK(PMI_Init(&spawned));
    CHECK_EQ(spawned, 0);
    PMI_OK(PMI_Get_rank(rank));
    PMI_OK(PMI_Get_size(size));
    sntest_rank = *rank;
    CHECK(*size >= 1 && *rank >= 0 && *rank < *size);
}

/* FNV-1a, to compare strings across ranks through a fixed-size allgather. */
static inline uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; s && *s; s++) { h ^= (unsigned char)*s; h *= 0x100000001b3ull; }
    return h;
}
#endif
