/* The checker (SOFTNIC_CHECK) against uGNI bugs committed on purpose; each rank puts to
 * its right neighbour.  The manifest runs every mode with SOFTNIC_CHECK=1 and looks for
 * the finding (or for none):
 *   reuse     an FMA put's source is overwritten before its completion is taken back
 *             (GNI_GetCompleted), as a program that recycles its buffer too early does;
 *             again for a put through the endpoint's pin; then an RDMA put's, through a
 *             helper function (the finding names the caller)
 *   unreaped  a put's event is never reaped, and the program exits without destroying its
 *             endpoints and domain
 *   getwrite  the destination of an FMA get, then of an RDMA get, is written by the
 *             program after the post and before its completion is taken back (the data
 *             may land after that write on the hardware)
 *   clean     the same puts and gets done right, everything released: no finding
 *   lostbad   (with SOFTNIC_FAULTS=transfer:times=1) a put from an unmapped address,
 *             lost before anything reads it: no fault, no finding
 * Prints "check_bugs: rank R MODE done". */
#include "data_util.h"

static gnit_t t;

/* Overwrites the source of an RDMA put before its completion is taken back. */
__attribute__((noinline)) static void recycle_too_early(int right, uint64_t *src, gni_mem_handle_t smh, uint64_t raddr, gni_mem_handle_t rmh)
{
    gni_post_descriptor_t d;
    dt_desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, src, smh, raddr, rmh, 64);
    GNI_OK(GNI_PostRdma(t.eps[right], &d));
    src[3] ^= 0xff;
    dt_complete(t.cq, &d, GNI_RC_SUCCESS);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "clean";
    gnit_init(&t, 64);
    int right = (t.rank + 1) % t.size;
    static dt_pair_t p;
    dt_pair(&t, &p);
    uint64_t *src = p.src, *bs = p.bs;
    gni_mem_handle_t smh = p.smh, dmh = p.dmh, *hs = p.hs;
    for (int i = 0; i < 16; i++) src[i] = 0xc0de0000u + (uint64_t)i;
    if (!strcmp(mode, "lostbad")) {
        /* Run with SOFTNIC_FAULTS=transfer: a put from an address nothing is mapped at is
         * lost before anything reads it; the checker must not read it either. */
        gni_post_descriptor_t bad;
        dt_desc(&bad, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, (void *)(uintptr_t)0x10, smh, bs[right], hs[right], 64);
        GNI_OK(GNI_PostFma(t.eps[right], &bad));
        dt_complete(t.cq, &bad, GNI_RC_TRANSACTION_ERROR);
    }
    gni_post_descriptor_t d;
    dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, src, smh, bs[right], hs[right], 64);
    GNI_OK(GNI_PostFma(t.eps[right], &d));
    if (!strcmp(mode, "reuse")) src[0] = 0; /* the bug: the NIC may still be reading it */
    if (!strcmp(mode, "unreaped")) {
        CHECK(PMI_Barrier() == PMI_SUCCESS);
        printf("check_bugs: rank %d %s done\n", t.rank, mode);
        fflush(stdout);
        exit(0); /* the event is left in the CQ; nothing is destroyed */
    }
    dt_complete(t.cq, &d, GNI_RC_SUCCESS);
    /* Three more puts through the same handle: the endpoint pins it (the fast path is
     * checked the same way); the last one's source is reused too early in "reuse". */
    for (int k = 0; k < 3; k++) {
        dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, src + 8, smh, bs[right] + 128, hs[right], 64);
        GNI_OK(GNI_PostFma(t.eps[right], &d));
        if (k == 2 && !strcmp(mode, "reuse")) src[9] ^= 1;
        dt_complete(t.cq, &d, GNI_RC_SUCCESS);
    }
    if (!strcmp(mode, "reuse")) recycle_too_early(right, src, smh, bs[right] + 64, hs[right]);
    else {
        /* done right: the source changes only after its completion */
        dt_desc(&d, GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, src, smh, bs[right] + 64, hs[right], 64);
        GNI_OK(GNI_PostRdma(t.eps[right], &d));
        dt_complete(t.cq, &d, GNI_RC_SUCCESS);
        src[3] ^= 0xff;
    }
    /* Gets from the right neighbour's window into the upper half of ours (which nobody
     * puts into): FMA, then RDMA; in "getwrite" the destination is written before the
     * completion is taken back, else after it. */
    uint64_t *into = p.dst + 256;
    int getwrite = !strcmp(mode, "getwrite");
    for (int k = 0; k < 2; k++) {
        gni_post_type_t type = k == 0 ? GNI_POST_FMA_GET : GNI_POST_RDMA_GET;
        dt_desc(&d, type, GNI_CQMODE_GLOBAL_EVENT, into + 16 * k, dmh, bs[right], hs[right], 64);
        GNI_OK(k == 0 ? GNI_PostFma(t.eps[right], &d) : GNI_PostRdma(t.eps[right], &d));
        if (getwrite) into[16 * k + 1] = 7; /* the bug: the data may still be landing */
        dt_complete(t.cq, &d, GNI_RC_SUCCESS);
        if (!getwrite) into[16 * k + 1] = 7;
    }
    CHECK(PMI_Barrier() == PMI_SUCCESS);
    GNI_OK(GNI_MemDeregister(t.nic, &smh));
    GNI_OK(GNI_MemDeregister(t.nic, &dmh));
    printf("check_bugs: rank %d %s done\n", t.rank, mode);
    gnit_fini(&t);
    return 0;
}
