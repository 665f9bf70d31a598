/* The last rank calls PMI_Abort(7) while the others wait in a barrier that
 * can never complete: the launcher must end the whole job with status 7. */
#include "pmitest.h"
#include <unistd.h>

int main(void)
{
    int rank, size;
    pmitest_init(&rank, &size);
    PMI_OK(PMI_Barrier());
    if (rank == size - 1) {
        PMI_Abort(7, "pmi_abort test: deliberate abort");
        SN_FAIL("PMI_Abort returned");
    }
    PMI_Barrier();
    SN_FAIL("barrier completed although a rank aborted");
}
