/* Injected registration faults in Portals: with SOFTNIC_FAULTS=register:after=1,times=1
 * (the manifest sets it), the second MD attached (a target MD is registered; MDs on
 * pages already registered share that registration) fails with PTL_NO_SPACE and touches
 * nothing; attaching again succeeds, and the left neighbour's
 * put lands in it.  Prints "ptl_fault_register: rank R ok". */
#include "ptest.h"
#include <pmi.h>

int main(void)
{
    int spawned, rank, n, maxif;
    CHECK_EQ(PMI_Init(&spawned), PMI_SUCCESS);
    CHECK_EQ(PMI_Get_rank(&rank), PMI_SUCCESS);
    CHECK_EQ(PMI_Get_size(&n), PMI_SUCCESS);
    sntest_rank = rank;
    ptl_handle_ni_t ni;
    PCHECK(PtlInit(&maxif));
    PCHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    ptl_process_id_t right;
    PCHECK(PtlGetRankId(ni, (rank + 1) % n, &right));
    ptl_handle_eq_t eq;
    PCHECK(PtlEQAlloc(ni, 16, PTL_EQ_HANDLER_NONE, &eq));
    /* On pages of their own: MDs on one page share a registration. */
    uint64_t *a = aligned_alloc(4096, 4096), *b = aligned_alloc(4096, 4096);
    CHECK(a && b);
    memset(a, 0, 4096);
    memset(b, 0, 4096);
    ptl_handle_me_t me1, me2;
    PCHECK(PtlMEAttach(ni, 3, ANY_ID, 1, 0, PTL_RETAIN, PTL_INS_AFTER, &me1));
    PCHECK(PtlMDAttach(me1, md_of(a, 64, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE, eq), PTL_RETAIN, NULL));
    PCHECK(PtlMEAttach(ni, 3, ANY_ID, 2, 0, PTL_RETAIN, PTL_INS_AFTER, &me2));
    ptl_handle_md_t md2 = PTL_INVALID_HANDLE;
    PCHECK_RC(PtlMDAttach(me2, md_of(b, 64, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE, eq), PTL_RETAIN, &md2), PTL_NO_SPACE);
    CHECK(md2 == PTL_INVALID_HANDLE);
    PCHECK(PtlMDAttach(me2, md_of(b, 64, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE, eq), PTL_RETAIN, &md2));
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    static uint64_t word;
    word = 0xfa170000u + (unsigned)rank;
    ptl_handle_md_t src;
    PCHECK(PtlMDBind(ni, md_of(&word, 8, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, PTL_EQ_NONE), PTL_RETAIN, &src));
    PCHECK(PtlPut(src, PTL_NOACK_REQ, right, 3, 0, 2, 0, 0));
    ptl_event_t ev;
    PCHECK(PtlEQWait(eq, &ev));
    CHECK_EQ(ev.type, PTL_EVENT_PUT_END);
    CHECK_EQ(b[0], 0xfa170000u + (unsigned)((rank + n - 1) % n));
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    PCHECK(PtlNIFini(ni));
    PtlFini();
    printf("ptl_fault_register: rank %d ok\n", rank);
    return 0;
}
