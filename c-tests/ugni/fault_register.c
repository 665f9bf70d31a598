/* Injected registration faults (SOFTNIC_FAULTS=register:...), as a program's error path
 * sees them: the manifest runs it with "register:after=2,times=1,rank=1".  Rank 1's
 * third GNI_MemRegister returns GNI_RC_ERROR_RESOURCE and the fourth succeeds; every
 * other rank's registrations all succeed.  Then each rank puts into its right
 * neighbour's registered buffer (handles exchanged with PMI_Allgather): the library
 * goes on as before.
 *
 *   fault_register FAULTY_RANK      prints "fault_register: rank R ok"
 */
#include "data_util.h"

int main(int argc, char **argv)
{
    int faulty = argc > 1 ? atoi(argv[1]) : 1;
    gnit_t t;
    gnit_init(&t, 64);
    uint64_t *bufs[4];
    gni_mem_handle_t mh[4];
    for (int i = 0; i < 4; i++) {
        bufs[i] = dt_alloc(4096);
        memset(&mh[i], 0, sizeof mh[i]);
        gni_return_t rc = GNI_MemRegister(t.nic, (uint64_t)(uintptr_t)bufs[i], 4096, NULL, GNI_MEM_READWRITE, (uint32_t)-1, &mh[i]);
        gni_return_t want = (t.rank == faulty && i == 2) ? GNI_RC_ERROR_RESOURCE : GNI_RC_SUCCESS;
        if (rc != want) SN_FAIL("registration %d returned %d (%s), want %d", i, (int)rc, gnit_rc(rc), (int)want);
    }
    /* Use the last one: the neighbour puts into it. */
    gni_mem_handle_t hs[256];
    uint64_t bs[256];
    CHECK(t.size <= 256);
    gnit_exchange_mem(&t, bufs[3], mh[3], hs, bs);
    int right = (t.rank + 1) % t.size, left = (t.rank + t.size - 1) % t.size;
    bufs[0][0] = 0xfa170000u + (uint64_t)t.rank;
    gni_post_descriptor_t d;
    dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, bufs[0], mh[0], bs[right], hs[right], 8);
    GNI_OK(GNI_PostFma(t.eps[right], &d));
    dt_complete(t.cq, &d, GNI_RC_SUCCESS);
    CHECK(PMI_Barrier() == PMI_SUCCESS);
    CHECK_EQ(bufs[3][0], 0xfa170000u + (uint64_t)left);
    for (int i = 0; i < 4; i++)
        if (!(t.rank == faulty && i == 2)) GNI_OK(GNI_MemDeregister(t.nic, &mh[i]));
    printf("fault_register: rank %d ok\n", t.rank);
    gnit_fini(&t);
    return 0;
}
