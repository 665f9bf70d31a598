/* Memory-flag synchronisation without the target calling uGNI:
 * - rank 0 only busy-waits on words of its registered buffer (no uGNI call between the
 *   setup barrier and the end) while rank 1 PUTs a payload and then a flag into it;
 * - FMA_PUT_W_SYNCFLAG: the payload, then the 64-bit sync_flag_value at sync_flag_addr,
 *   which rank 0 polls; the payload is complete when the flag is seen;
 * - FMA_GET_W_FLAG / AMO_W_FLAG (Aries flagged responses): the initiator polls the 4-byte
 *   flag after the response instead of a CQ (SILENT posts). */
#include "data_util.h"

#define PAY 100000

int main(void)
{
    gnit_t t;
    gnit_init(&t, 64);
    int n = t.size, me = t.rank;
    if (n < 2) SKIP("needs 2 ranks");
    uint8_t *buf = dt_alloc(1 << 20), *src = dt_alloc(1 << 20);
    gni_mem_handle_t bmh = dt_reg(&t, buf, 1 << 20, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t smh = dt_reg(&t, src, 1 << 20, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t *mh = calloc(n, sizeof(*mh));
    uint64_t *base = calloc(n, sizeof(*base));
    gnit_exchange_mem(&t, buf, bmh, mh, base);
    volatile uint64_t *flag1 = (volatile uint64_t *)(buf + 4096);
    volatile uint64_t *flag2 = (volatile uint64_t *)(buf + 8192);
    uint8_t *pay1 = buf + 16384, *pay2 = buf + 16384 + PAY + 64;
    gni_post_descriptor_t d;

    if (me == 1) {
        for (int i = 0; i < PAY; i++) src[i] = (uint8_t)(i * 7 + 3);
        /* plain PUT of the payload, then a separate PUT of the flag (in order per EP) */
        dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, src, smh, base[0] + 16384, mh[0], PAY);
        dt_fma(&t, 0, &d);
        *(uint64_t *)(src + PAY) = 0x1111;
        dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_SILENT, src + PAY, smh, base[0] + 4096, mh[0], 8);
        GNI_OK(GNI_PostFma(t.eps[0], &d));
        /* PUT_W_SYNCFLAG of a second payload */
        for (int i = 0; i < PAY; i++) src[i] = (uint8_t)(i * 11 + 5);
        dt_desc(&d, GNI_POST_FMA_PUT_W_SYNCFLAG, GNI_CQMODE_GLOBAL_EVENT, src, smh, base[0] + 16384 + PAY + 64, mh[0], PAY);
        d.sync_flag_addr = base[0] + 8192;
        d.sync_flag_value = 0xFEEDFACECAFEBEEFull;
        dt_fma(&t, 0, &d);
    }
    if (me == 0) {
        /* No uGNI (or PMI) call until both flags are seen. */
        while (*flag1 != 0x1111) {}
        for (int i = 0; i < PAY; i++) if (pay1[i] != (uint8_t)(i * 7 + 3)) SN_FAIL("payload 1 byte %d", i);
        while (*flag2 != 0xFEEDFACECAFEBEEFull) {}
        for (int i = 0; i < PAY; i++) if (pay2[i] != (uint8_t)(i * 11 + 5)) SN_FAIL("payload 2 byte %d", i);
        for (int i = 0; i < 64; i++) if (pay1[PAY + i] != 0 || pay2[PAY + i] != 0) SN_FAIL("beyond payload %d", i);
        printf("data_flag: busy-waiting rank received PUT + flag and PUT_W_SYNCFLAG\n");
    }
    dt_barrier();

    /* Flagged GET and AMO responses, polled instead of a CQ. */
    uint64_t *w = (uint64_t *)buf;
    if (me == 0) { for (int i = 0; i < 65; i++) w[i] = 0x0101010101010101ull * i; }
    dt_barrier();
    if (me != 0) {
        volatile uint32_t *f;
        memset(src, 0, 4096);
        dt_desc(&d, GNI_POST_FMA_GET_W_FLAG, GNI_CQMODE_SILENT, src, smh, base[0] + 8, mh[0], 64);
        GNI_OK(GNI_PostFma(t.eps[0], &d));
        f = (volatile uint32_t *)(src + 64);
        while (*f == 0) {}
        CHECK_EQ(*f, 1);
        for (int i = 0; i < 8; i++) CHECK_EQ(((uint64_t *)src)[i], 0x0101010101010101ull * (i + 1));
        CHECK_EQ(*(uint32_t *)(src + 68), 0);

        memset(src, 0, 4096);
        dt_desc(&d, GNI_POST_AMO_W_FLAG, GNI_CQMODE_SILENT, src, smh, base[0] + 512, mh[0], 8);
        d.amo_cmd = GNI_FMA_ATOMIC2_FIADD;
        d.first_operand = 1;
        d.sync_flag_value = 0x77;
        GNI_OK(GNI_PostFma(t.eps[0], &d));
        f = (volatile uint32_t *)(src + 8);
        while (*f == 0) {}
        CHECK_EQ(*f, 0x77);
        uint64_t old = *(uint64_t *)src;
        CHECK(old >= 0x0101010101010101ull * 64 && old < 0x0101010101010101ull * 64 + (uint64_t)n);
    }
    dt_barrier();
    if (me == 0) CHECK_EQ(w[64], 0x0101010101010101ull * 64 + n - 1);
    dt_barrier();
    GNI_OK(GNI_MemDeregister(t.nic, &bmh));
    GNI_OK(GNI_MemDeregister(t.nic, &smh));
    gnit_fini(&t);
    printf("data_flag: rank %d ok\n", me);
    return 0;
}
