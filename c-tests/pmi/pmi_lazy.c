/* DMAPP-style use: no PMI_Init.  "barrier": PMI_Barrier is the first call;
 * "allgather": PMI_Allgather is.  Both must connect implicitly. */
#include "pmitest.h"

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "barrier";
    int initialized = -1, rank = -1, size = -1, r;
    PMI_OK(PMI_Initialized(&initialized));
    CHECK_EQ(initialized, PMI_FALSE);
    if (strcmp(mode, "barrier") == 0) {
        PMI_OK(PMI_Barrier());
        PMI_OK(PMI_Barrier());
        PMI_OK(PMI_Get_rank(&rank));
        PMI_OK(PMI_Get_size(&size));
    } else {
        long tag = 0x5eed;
        long *all = malloc(4096 * sizeof(long)); /* size unknown yet: generous */
        PMI_OK(PMI_Allgather(&tag, all, sizeof tag));
        PMI_OK(PMI_Get_size(&size));
        CHECK(size <= 4096);
        for (r = 0; r < size; r++) CHECK(all[r] == 0x5eed);
        PMI_OK(PMI_Get_rank(&rank));
        int *ranks = malloc(size * sizeof(int));
        PMI_OK(PMI_Allgather(&rank, ranks, sizeof rank));
        for (r = 0; r < size; r++) CHECK_EQ(ranks[r], r);
    }
    sntest_rank = rank;
    PMI_OK(PMI_Initialized(&initialized));
    CHECK_EQ(initialized, PMI_TRUE);
    /* environment contract is set by the implicit start too */
    CHECK(getenv("PMI_GNI_PTAG") != NULL && getenv("PMI_GNI_COOKIE") != NULL);
    printf("pmi_lazy %s: rank %d of %d ok\n", mode, rank, size);
    /* no PMI_Finalize: DMAPP programs often exit without one */
    return 0;
}
