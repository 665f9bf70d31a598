/* Bad input: each call gets the documented code and touches nothing (guard bytes
 * around and inside the target are checked on the target PE after every round). */
#include "dmtest.h"

#define G 256

int main(void) {
    dm_init();
    int right = (me + 1) % npes;
    unsigned char *tg = dmapp_sheap_malloc(G);      /* the target everybody aims at */
    CHECK(tg != NULL);
    memset(tg, 0xee, G);
    int64_t src[8] = {1, 2, 3, 4, 5, 6, 7, 8}, dst[8];
    ptrdiff_t idx[2] = {0, -1};
    dmapp_pe_t badlist[2] = {right, npes};
    dmapp_seg_desc_t junk;
    memset(&junk, 0x5a, sizeof junk);                 /* an invalid descriptor */
    dmapp_seg_desc_t zero = {0};
    dmapp_seg_desc_t shifted = *sheap();              /* claims more than the heap */
    shifted.len += 4096;
    dmapp_syncid_handle_t h = NULL;
    int64_t *t8 = (int64_t *)(tg + 64);
    barrier();

    /* NULL / invalid descriptors */
    RC_EQ(dmapp_put(t8, NULL, right, src, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_put(t8, &junk, right, src, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_put(t8, &zero, right, src, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_get(dst, t8, NULL, right, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_aadd_qw(t8, NULL, right, 1), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_afadd_qw(dst, t8, &junk, right, 1), DMAPP_RC_INVALID_PARAM);
    /* a descriptor with a forged handle but a plausible range: the target refuses */
    dmapp_seg_desc_t forged = *sheap();
    forged.memhndl.qword2 ^= 0x100000000ULL;          /* other generation */
    RC_EQ(dmapp_put(t8, &forged, right, src, 1, DMAPP_QW), DMAPP_RC_TRANSACTION_ERROR);
    RC_EQ(dmapp_aadd_qw(t8, &forged, right, 1), DMAPP_RC_TRANSACTION_ERROR);
    /* out of segment: before, past the end, straddling the end, descriptor lying */
    char *end = (char *)sheap()->addr + sheap()->len;
    RC_EQ(dmapp_put((char *)sheap()->addr - 8, sheap(), right, src, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_put(end, sheap(), right, src, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_put(end - 8, sheap(), right, src, 2, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_put(end, &shifted, right, src, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_get(dst, end, sheap(), right, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_iput(t8, sheap(), right, src, 1 << 20, 1, 3, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    /* unregistered target: a stack address with the heap descriptor */
    int64_t local;
    RC_EQ(dmapp_put(&local, sheap(), right, src, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    /* misaligned AMOs: remote word and local result */
    RC_EQ(dmapp_aadd_qw(tg + 4, sheap(), right, 1), DMAPP_RC_ALIGNMENT_ERROR);
    RC_EQ(dmapp_aadd_qw_nbi(tg + 1, sheap(), right, 1), DMAPP_RC_ALIGNMENT_ERROR);
    RC_EQ(dmapp_acswap_qw_nb(dst, tg + 4, sheap(), right, 0, 1, &h), DMAPP_RC_ALIGNMENT_ERROR);
    RC_EQ(dmapp_afadd_qw(((char *)dst) + 4, t8, sheap(), right, 1), DMAPP_RC_ALIGNMENT_ERROR);
    RC_EQ(dmapp_afax_qw(dst, tg + 2, sheap(), right, 0, 0), DMAPP_RC_ALIGNMENT_ERROR);
    /* strided/indexed GET alignment (DWORD) */
    RC_EQ(dmapp_iget((char *)dst + 2, t8, sheap(), right, 1, 1, 2, DMAPP_DW), DMAPP_RC_ALIGNMENT_ERROR);
    RC_EQ(dmapp_iget(dst, t8, sheap(), right, 1, 1, 3, DMAPP_BYTE), DMAPP_RC_ALIGNMENT_ERROR);
    RC_EQ(dmapp_ixget(dst, tg + 2, sheap(), right, idx, 1, DMAPP_DW), DMAPP_RC_ALIGNMENT_ERROR);
    /* zero-length GETs of every kind; zero-length PUT is a no-op */
    RC_EQ(dmapp_get(dst, t8, sheap(), right, 0, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_get_nbi(dst, t8, sheap(), right, 0, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_iget(dst, t8, sheap(), right, 1, 1, 0, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_ixget(dst, t8, sheap(), right, idx, 0, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_gather_ixpe(dst, t8, sheap(), badlist, 1, 0, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    OK(dmapp_put(t8, sheap(), right, NULL, 0, DMAPP_QW));
    /* bad PE numbers */
    RC_EQ(dmapp_put(t8, sheap(), -1, src, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_put(t8, sheap(), npes, src, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_get(dst, t8, sheap(), npes, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_aadd_qw(t8, sheap(), -1, 1), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_put_ixpe(t8, sheap(), badlist, 2, src, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM); /* right is valid: nothing moves either */
    RC_EQ(dmapp_put_ixpe(t8, sheap(), badlist, 0, src, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_put_ixpe(t8, sheap(), NULL, 1, src, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    /* bad dmapp_type_t, strides, indices, syncid pointer, NULL local buffers */
    RC_EQ(dmapp_put(t8, sheap(), right, src, 1, (dmapp_type_t)4), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_put(t8, sheap(), right, src, 1, (dmapp_type_t)-1), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_get(dst, t8, sheap(), right, 1, (dmapp_type_t)9), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_ixget(dst, t8, sheap(), right, idx, 1, DMAPP_BYTE), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_iput(t8, sheap(), right, src, 0, 1, 2, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_iput(t8, sheap(), right, src, 1, -1, 2, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_ixput(t8, sheap(), right, src, idx, 2, DMAPP_QW), DMAPP_RC_INVALID_PARAM);  /* idx[1] < 0 */
    RC_EQ(dmapp_ixput(t8, sheap(), right, src, NULL, 2, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_put_nb(t8, sheap(), right, src, 1, DMAPP_QW, NULL), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_aadd_qw_nb(t8, sheap(), right, 1, NULL), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_put(t8, sheap(), right, NULL, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_get(NULL, t8, sheap(), right, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_afadd_qw(NULL, t8, sheap(), right, 1), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_put(t8, sheap(), right, src, UINT64_MAX / 2, DMAPP_QW), DMAPP_RC_INVALID_PARAM);  /* size overflow */
    /* None of the refused _nbi calls recorded anything for gsync. */
    OK(dmapp_gsync_wait());

    barrier();
    /* Nothing touched: every byte of my target still holds the guard pattern. */
    for (int i = 0; i < G; i++) CHECK_EQ(tg[i], 0xee);
    barrier();
    OK(dmapp_finalize());
    printf("dmapp_badinput: pe %d of %d ok\n", me, npes);
    return 0;
}
