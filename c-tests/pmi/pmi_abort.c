/* A rank that ends the job, while the others wait in a barrier that can never complete.
 *   pmi_abort        the last rank calls PMI_Abort(7): the launcher must end the whole
 *                    job with status 7.
 *   pmi_abort exit   the last rank calls exit(3) without PMI_Finalize: the job must end
 *                    (with a status that is not 0), as under MPICH's own PMI client.
 *   pmi_abort exit0  the last rank exits with status 0 without PMI_Finalize while the
 *                    others go on for 0.3 s and finish: a rank that leaves early and
 *                    successfully must not take the job down (the library finalizes it
 *                    at exit), and the job's status is 0. */
#include "pmitest.h"
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "abort";
    int rank, size;
    pmitest_init(&rank, &size);
    PMI_OK(PMI_Barrier());
    if (strcmp(mode, "exit0") == 0) {
        if (rank == size - 1)
            exit(0);
        usleep(300000);
        printf("pmi_abort exit0: rank %d ok\n", rank);
        fflush(stdout);
        PMI_OK(PMI_Finalize());
        return 0;
    }
    if (rank == size - 1) {
        if (strcmp(mode, "exit") == 0) {
            fprintf(stderr, "pmi_abort test: deliberate exit(3) without PMI_Finalize\n");
            exit(3);
        }
        PMI_Abort(7, "pmi_abort test: deliberate abort");
        SN_FAIL("PMI_Abort returned");
    }
    PMI_Barrier();
    SN_FAIL("barrier completed although a rank left");
}
