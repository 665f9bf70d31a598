/* Dynamic registration: a malloc'd buffer is registered, its (address, descriptor)
 * pair is copied byte for byte into the left neighbour's heap, and the neighbour
 * puts, gets and adds through the copied descriptor (and fails with it against any
 * other PE: the handle names its owner).  Also segdesc_compare,
 * unregister (later accesses fail, nothing touched), and the refusals. */
#include <sys/mman.h>
#include "dmtest.h"

struct ad { void *addr; dmapp_seg_desc_t desc; };

int main(void) {
    dm_init();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    int64_t *priv = malloc(4096 + 64);
    CHECK(priv != NULL);
    memset(priv, 0, 4096 + 64);
    dmapp_seg_desc_t d, d2;
    OK(dmapp_mem_register(priv, 4096, &d));
    CHECK(d.addr == priv && d.len == 4096);
    int flag = -1;
    d2 = d;
    OK(dmapp_segdesc_compare(&d, &d2, &flag)); CHECK_EQ(flag, 1);
    d2.flags = 7;                                    /* flags are ignored */
    OK(dmapp_segdesc_compare(&d, &d2, &flag)); CHECK_EQ(flag, 1);
    OK(dmapp_segdesc_compare(&d, sheap(), &flag)); CHECK_EQ(flag, 0);
    RC_EQ(dmapp_segdesc_compare(&d, NULL, &flag), DMAPP_RC_INVALID_PARAM);

    struct ad *box = dmapp_sheap_malloc(sizeof *box);   /* symmetric mailbox */
    CHECK(box != NULL);
    struct ad mine = {priv + 8, d};
    barrier();
    OK(dmapp_put(box, sheap(), left, &mine, sizeof mine, DMAPP_BYTE));
    barrier();
    /* box now holds the right neighbour's pair */
    int64_t v[4] = {me + 1, me + 2, me + 3, me + 4}, back[4] = {0};
    OK(dmapp_put(box->addr, &box->desc, right, v, 4, DMAPP_QW));
    OK(dmapp_aadd_qw((int64_t *)box->addr + 4, &box->desc, right, 1000 + me));
    OK(dmapp_get(back, box->addr, &box->desc, right, 4, DMAPP_QW));
    for (int i = 0; i < 4; i++) CHECK_EQ(back[i], me + 1 + i);
    /* A non-symmetric descriptor is refused by PE-list calls. */
    dmapp_pe_t list[1] = {right};
    RC_EQ(dmapp_put_ixpe(box->addr, &box->desc, list, 1, v, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    /* The descriptor's handle names its owner (right): used against any other PE it names
     * nothing there, so the access fails as a transaction error and touches nothing. */
    if (npes > 2) {
        int other = (me + 2) % npes;
        RC_EQ(dmapp_put(box->addr, &box->desc, other, v, 1, DMAPP_QW), DMAPP_RC_TRANSACTION_ERROR);
        RC_EQ(dmapp_afadd_qw(back, box->addr, &box->desc, other, 1), DMAPP_RC_TRANSACTION_ERROR);
    }
    /* Out of the descriptor's range: refused locally. */
    RC_EQ(dmapp_put((int64_t *)box->desc.addr + 512, &box->desc, right, v, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    barrier();
    for (int i = 0; i < 4; i++) CHECK_EQ(priv[8 + i], left + 1 + i);
    CHECK_EQ(priv[12], 1000 + left);
    CHECK_EQ(priv[7], 0);
    CHECK_EQ(priv[13], 0);
    barrier();
    /* Unregister: the data and heap segments are refused, ours goes. */
    RC_EQ(dmapp_mem_unregister(sheap()), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_mem_unregister(dseg()), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_mem_unregister(NULL), DMAPP_RC_INVALID_PARAM);
    OK(dmapp_mem_unregister(&d));
    RC_EQ(dmapp_mem_unregister(&d), DMAPP_RC_INVALID_PARAM);
    barrier();
    /* The neighbour's copy of my descriptor is stale now: transaction error, and the
     * memory is not touched (it is still ours, so we can look). */
    dmapp_syncid_handle_t h = NULL;
    RC_EQ(dmapp_put(box->addr, &box->desc, right, v, 1, DMAPP_QW), DMAPP_RC_TRANSACTION_ERROR);
    RC_EQ(dmapp_afadd_qw(back, box->addr, &box->desc, right, 1), DMAPP_RC_TRANSACTION_ERROR);
    OK(dmapp_put_nb(box->addr, &box->desc, right, v, 1, DMAPP_QW, &h));
    RC_EQ(dmapp_syncid_wait(&h), DMAPP_RC_TRANSACTION_ERROR);
    OK(dmapp_get_nbi(back, box->addr, &box->desc, right, 1, DMAPP_QW));
    RC_EQ(dmapp_gsync_wait(), DMAPP_RC_TRANSACTION_ERROR);
    OK(dmapp_gsync_wait());                        /* reported once */
    barrier();
    for (int i = 0; i < 4; i++) CHECK_EQ(priv[8 + i], left + 1 + i);
    /* Refusals of register itself. */
    RC_EQ(dmapp_mem_register(NULL, 8, &d), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_mem_register(priv, 0, &d), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_mem_register(priv, 8, NULL), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_mem_register((void *)8, 4096, &d), DMAPP_RC_RESOURCE_ERROR);  /* not mapped */
    {
        /* Peers would write it: read-only and PROT_NONE pages are refused, in any part. */
        char *m = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(m != MAP_FAILED);
        CHECK(mprotect(m + 4096, 4096, PROT_READ) == 0);
        CHECK(mprotect(m + 2 * 4096, 4096, PROT_NONE) == 0);
        RC_EQ(dmapp_mem_register(m + 4096, 4096, &d), DMAPP_RC_RESOURCE_ERROR);
        RC_EQ(dmapp_mem_register(m + 2 * 4096, 4096, &d), DMAPP_RC_RESOURCE_ERROR);
        RC_EQ(dmapp_mem_register(m, 3 * 4096, &d), DMAPP_RC_RESOURCE_ERROR);
        OK(dmapp_mem_register(m, 4096, &d));
        OK(dmapp_mem_unregister(&d));
        munmap(m, 3 * 4096);
    }
    barrier();
    OK(dmapp_finalize());
    printf("dmapp_memreg: pe %d of %d ok\n", me, npes);
    return 0;
}
