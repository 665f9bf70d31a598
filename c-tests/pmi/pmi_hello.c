/* Smallest PMI program: every rank prints its rank and the job size. */
#include <stdio.h>
#include <pmi.h>

int main(void)
{
    int spawned, rank, size;
    if (PMI_Init(&spawned) != PMI_SUCCESS || PMI_Get_rank(&rank) != PMI_SUCCESS ||
        PMI_Get_size(&size) != PMI_SUCCESS) {
        fprintf(stderr, "PMI start-up failed\n");
        return 1;
    }
    printf("rank %d of %d\n", rank, size);
    fflush(stdout);
    PMI_Barrier();
    return PMI_Finalize() == PMI_SUCCESS ? 0 : 1;
}
