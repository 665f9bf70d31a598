/* uGNI core: memory registration (decisions in ugni-sys/src/memreg.rs): READWRITE /
 * READ_ONLY, length 0 / NULL / unknown flags -> INVALID_PARAM, READWRITE on read-only
 * pages -> PERMISSION_ERROR, deregister twice -> INVALID_PARAM, dst_cq keeps the CQ busy,
 * vMDH with GNI_SetMddResources (ERROR_RESOURCE rules), MemRegisterSegments (one segment
 * and several), MemHndlQueryAttr, handles of a destroyed CDM. Plus a put into a
 * peer's region through its handle, to show the handle works remotely. */
#include "gnitest.h"
#include <sys/mman.h>

int main(void)
{
    gnit_t t;
    gnit_init(&t, 64);
    int me = t.rank, n = t.size;
    static char buf[3 * 4096];
    gni_mem_handle_t mh, ro, h2, zero;
    memset(&zero, 0, sizeof zero);
    uint64_t a = (uint64_t)(uintptr_t)buf;

    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemRegister(t.nic, a, 0, NULL, GNI_MEM_READWRITE, -1, &mh));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemRegister(t.nic, 0, 4096, NULL, GNI_MEM_READWRITE, -1, &mh));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemRegister(t.nic, a, 4096, NULL, GNI_MEM_READWRITE, -1, NULL));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemRegister(t.nic, a, 4096, NULL, 0x40000000, -1, &mh));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemRegister(NULL, a, 4096, NULL, GNI_MEM_READWRITE, -1, &mh));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemRegister(t.nic, a, 4096, (gni_cq_handle_t)t.nic, GNI_MEM_READWRITE, -1, &mh));
    GNI_OK(GNI_MemRegister(t.nic, a, sizeof buf, NULL, GNI_MEM_READWRITE | GNI_MEM_STRICT_PI_ORDERING | GNI_MEM_PI_FLUSH, -1, &mh));
    GNI_OK(GNI_MemRegister(t.nic, a + 100, 500, NULL, GNI_MEM_READ_ONLY, -1, &ro));
    int yes = -1;
    GNI_OK(GNI_MemHndlQueryAttr(&ro, GNI_MEMHNDL_ATTR_READONLY, &yes));
    CHECK_EQ(yes, 1);
    GNI_OK(GNI_MemHndlQueryAttr(&mh, GNI_MEMHNDL_ATTR_READONLY, &yes));
    CHECK_EQ(yes, 0);
    GNI_OK(GNI_MemHndlQueryAttr(&mh, GNI_MEMHNDL_ATTR_VMDH, &yes));
    CHECK_EQ(yes, 0);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemHndlQueryAttr(&zero, GNI_MEMHNDL_ATTR_READONLY, &yes));

    /* Read-only pages: READWRITE refused, READ_ONLY fine. */
    void *rop = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(rop != MAP_FAILED);
    GNI_EXPECT(GNI_RC_PERMISSION_ERROR, GNI_MemRegister(t.nic, (uint64_t)(uintptr_t)rop, 4096, NULL, GNI_MEM_READWRITE, -1, &h2));
    GNI_OK(GNI_MemRegister(t.nic, (uint64_t)(uintptr_t)rop, 4096, NULL, GNI_MEM_READ_ONLY, -1, &h2));
    GNI_OK(GNI_MemDeregister(t.nic, &h2));
    /* An unmapped range. */
    munmap(rop, 4096);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemRegister(t.nic, (uint64_t)(uintptr_t)rop, 4096, NULL, GNI_MEM_READ_ONLY, -1, &h2));
    /* Pages that cannot be read (PROT_NONE) cannot be registered either, in any part. */
    char *nop = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(nop != MAP_FAILED);
    CHECK(mprotect(nop + 4096, 4096, PROT_NONE) == 0);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemRegister(t.nic, (uint64_t)(uintptr_t)(nop + 4096), 4096, NULL, GNI_MEM_READ_ONLY, -1, &h2));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemRegister(t.nic, (uint64_t)(uintptr_t)nop, 3 * 4096, NULL, GNI_MEM_READWRITE, -1, &h2));
    GNI_OK(GNI_MemRegister(t.nic, (uint64_t)(uintptr_t)(nop + 2 * 4096), 4096, NULL, GNI_MEM_READWRITE, -1, &h2));
    GNI_OK(GNI_MemDeregister(t.nic, &h2));
    munmap(nop, 3 * 4096);

    /* Deregister: once. */
    GNI_OK(GNI_MemDeregister(t.nic, &ro));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemDeregister(t.nic, &ro));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemDeregister(t.nic, &zero));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemDeregister(t.nic, NULL));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemHndlQueryAttr(&ro, GNI_MEMHNDL_ATTR_READONLY, &yes));

    /* dst_cq keeps its CQ busy until deregistration. */
    gni_cq_handle_t rcq;
    GNI_OK(GNI_CqCreate(t.nic, 16, 0, GNI_CQ_NOBLOCK, NULL, NULL, &rcq));
    GNI_OK(GNI_MemRegister(t.nic, a, 4096, rcq, GNI_MEM_READWRITE, -1, &h2));
    GNI_EXPECT(GNI_RC_ERROR_RESOURCE, GNI_CqDestroy(rcq));
    GNI_OK(GNI_MemDeregister(t.nic, &h2));
    GNI_OK(GNI_CqDestroy(rcq));

    /* vMDH. */
    gni_mem_handle_t v[3];
    GNI_EXPECT(GNI_RC_ERROR_RESOURCE, GNI_MemRegister(t.nic, a, 4096, NULL, GNI_MEM_USE_VMDH, 0, &v[0]));
    GNI_OK(GNI_SetMddResources(t.nic, 2));
    GNI_OK(GNI_MemRegister(t.nic, a, 4096, NULL, GNI_MEM_USE_VMDH, 1, &v[1]));
    GNI_EXPECT(GNI_RC_ERROR_RESOURCE, GNI_MemRegister(t.nic, a, 4096, NULL, GNI_MEM_USE_VMDH, 1, &v[2]));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemRegister(t.nic, a, 4096, NULL, GNI_MEM_USE_VMDH, 2, &v[2]));
    GNI_OK(GNI_MemRegister(t.nic, a, 4096, NULL, GNI_MEM_USE_VMDH, -1, &v[0]));
    GNI_EXPECT(GNI_RC_ERROR_RESOURCE, GNI_MemRegister(t.nic, a, 4096, NULL, GNI_MEM_USE_VMDH, -1, &v[2]));
    GNI_OK(GNI_MemHndlQueryAttr(&v[0], GNI_MEMHNDL_ATTR_VMDH, &yes));
    CHECK_EQ(yes, 1);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_SetMddResources(t.nic, 5)); /* entries in use */
    GNI_OK(GNI_MemDeregister(t.nic, &v[1]));
    GNI_OK(GNI_MemRegister(t.nic, a, 4096, NULL, GNI_MEM_USE_VMDH, -1, &v[2]));
    GNI_OK(GNI_MemDeregister(t.nic, &v[0]));
    GNI_OK(GNI_MemDeregister(t.nic, &v[2]));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_RebuildMemHndl(&mh, 0, &h2)); /* not a vMDH handle */

    /* Segments. */
    gni_mem_segment_t seg[2] = { { a, 4096 }, { a + 8192, 4096 } };
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemRegisterSegments(t.nic, seg, 0, NULL, 0, -1, &h2));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemRegisterSegments(t.nic, NULL, 1, NULL, 0, -1, &h2));
    seg[1].length = 0;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemRegisterSegments(t.nic, seg, 2, NULL, 0, -1, &h2));
    seg[1].length = 4096;
    GNI_OK(GNI_MemRegisterSegments(t.nic, seg, 2, NULL, 0, -1, &h2)); /* mem_segments.c */
    GNI_OK(GNI_MemDeregister(t.nic, &h2));
    GNI_OK(GNI_MemRegisterSegments(t.nic, seg, 1, NULL, 0, -1, &h2));
    GNI_OK(GNI_MemDeregister(t.nic, &h2));

    /* The handle works for a peer: everyone puts its rank into its right neighbour. */
    gni_mem_handle_t *hs = calloc(n, sizeof *hs);
    uint64_t *bases = calloc(n, sizeof *bases);
    memset(buf, 0, sizeof buf);
    gnit_exchange_mem(&t, buf, mh, hs, bases);
    int right = (me + 1) % n, left = (me + n - 1) % n;
    uint64_t val = 0xabc00 + me;
    gni_post_descriptor_t d;
    memset(&d, 0, sizeof d);
    d.type = GNI_POST_FMA_PUT;
    d.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
    d.local_addr = (uint64_t)(uintptr_t)&val;
    d.remote_addr = bases[right] + 8 * me;
    d.remote_mem_hndl = hs[right];
    d.length = 8;
    GNI_OK(GNI_PostFma(t.eps[right], &d));
    gni_cq_entry_t ev = gnit_wait(t.cq, GNI_RC_SUCCESS);
    gni_post_descriptor_t *pd;
    GNI_OK(GNI_GetCompleted(t.cq, ev, &pd));
    CHECK(pd == &d);
    CHECK(PMI_Barrier() == PMI_SUCCESS);
    CHECK_EQ(((uint64_t *)buf)[left], 0xabc00 + left);
    CHECK(PMI_Barrier() == PMI_SUCCESS);

    /* After deregistration the peer's put fails at the initiator with a transaction error. */
    GNI_OK(GNI_MemDeregister(t.nic, &mh));
    CHECK(PMI_Barrier() == PMI_SUCCESS);
    GNI_OK(GNI_PostFma(t.eps[right], &d));
    ev = gnit_wait(t.cq, GNI_RC_TRANSACTION_ERROR);
    GNI_EXPECT(GNI_RC_TRANSACTION_ERROR, GNI_GetCompleted(t.cq, ev, &pd));
    CHECK(pd == &d && d.status != 0);
    char text[256];
    GNI_OK(GNI_CqErrorStr(ev, text, sizeof text));
    CHECK(strstr(text, "deregistered") != NULL);
    gnit_fini(&t);
    printf("core_mem: rank %d ok\n", me);
    return 0;
}
