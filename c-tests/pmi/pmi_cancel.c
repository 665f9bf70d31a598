/* A watcher thread blocked in PMI_Barrier, cancelled (deferred and asynchronous, at once,
 * soon and after it slept), again and again, on rank 0 while the other ranks have not
 * reached the barrier.  The process entered that barrier once: every later barrier of the
 * process adopts it, so when the other ranks arrive, the next PMI_Barrier of rank 0's main
 * thread completes with theirs, and the barriers after it stay matched (an allgather per
 * round checks that every rank is in the same round).  The connection stays usable for
 * every other call afterwards.  Usage: pmi_cancel [rounds].  Prints "pmi_cancel: rank R ok". */
#include "pmitest.h"
#include "canceltest.h"

static char kvs[256];

static void barrier_call(void *a)
{
    int rc = PMI_Barrier();
    SN_FAIL("PMI_Barrier returned %d before the other ranks arrived", rc);
}

int main(int argc, char **argv)
{
    int rank, size;
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    pmitest_init(&rank, &size);
    PMI_OK(PMI_KVS_Get_my_name(kvs, sizeof kvs));
    char flag_path[512];
    snprintf(flag_path, sizeof flag_path, "/tmp/pmi_cancel.%s", kvs);
    if (rank == 0) {
        ct_battery("PMI_Barrier", barrier_call, NULL, rounds);
        FILE *f = fopen(flag_path, "w");
        CHECK(f != NULL);
        fclose(f);
    } else {
        /* Wait for rank 0's word without a barrier (a file: hydra publishes KVS puts only
         * at a barrier). */
        for (int spins = 0; access(flag_path, F_OK) != 0; spins++) {
            if (spins > 6000) SN_FAIL("rank 0 never finished its cancellations");
            ct_sleep_us(10000);
        }
    }
    /* Rank 0's main thread adopts the barrier its watchers entered. */
    PMI_OK(PMI_Barrier());
    for (int round = 0; round < 3; round++) {
        int *all = calloc(size, sizeof(int));
        int mine = 1000 + round;
        PMI_OK(PMI_Allgather(&mine, all, sizeof mine));
        for (int r = 0; r < size; r++)
            if (all[r] != 1000 + round) SN_FAIL("round %d: rank %d is in round %d", round, r, all[r] - 1000);
        free(all);
        PMI_OK(PMI_Barrier());
    }
    if (rank == 0) unlink(flag_path);
    printf("pmi_cancel: rank %d ok\n", rank);
    PMI_OK(PMI_Finalize());
    return 0;
}
