/* Injected network losses (SOFTNIC_FAULTS=transfer:...), as a program's error path sees
 * them.  Every rank posts ten operations to its right neighbour, in turn an FMA put, an
 * RDMA put and a fetch-add, each into its own word of the neighbour's buffer; the
 * manifest sets the fault spec and passes its after/every here.  A lost post completes
 * with a transaction error that GNI_CqErrorRecoverable calls recoverable and
 * GNI_CqErrorStr describes, and nothing of it reaches the target; the others land.  Then
 * the lost ones are posted again (the retry a program makes) and land.
 *
 *   fault_transfer AFTER EVERY    (0 0: no faults expected)
 */
#include "data_util.h"

#define NOPS 10

static void post(gnit_t *t, int peer, int i, uint64_t *src, gni_mem_handle_t smh, uint64_t rbase, gni_mem_handle_t rmh, gni_post_descriptor_t *d)
{
    uint64_t raddr = rbase + 8 * (uint64_t)i;
    switch (i % 3) {
    case 0:
        dt_desc(d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, &src[i], smh, raddr, rmh, 8);
        GNI_OK(GNI_PostFma(t->eps[peer], d));
        break;
    case 1:
        dt_desc(d, GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, &src[i], smh, raddr, rmh, 8);
        GNI_OK(GNI_PostRdma(t->eps[peer], d));
        break;
    default:
        dt_desc(d, GNI_POST_AMO, GNI_CQMODE_GLOBAL_EVENT, &src[32 + i], smh, raddr, rmh, 8);
        d->amo_cmd = GNI_FMA_ATOMIC_FADD;
        d->first_operand = src[i];
        GNI_OK(GNI_PostFma(t->eps[peer], d));
        break;
    }
}

int main(int argc, char **argv)
{
    int after = argc > 2 ? atoi(argv[1]) : 0, every = argc > 2 ? atoi(argv[2]) : 0;
    gnit_t t;
    gnit_init(&t, 64);
    int right = (t.rank + 1) % t.size, left = (t.rank + t.size - 1) % t.size;
    static dt_pair_t p;
    dt_pair(&t, &p);
    uint64_t *src = p.src, *dst = p.dst, *bs = p.bs;
    gni_mem_handle_t smh = p.smh, dmh = p.dmh, *hs = p.hs;
    for (int i = 0; i < NOPS; i++) src[i] = 0x10000u * (uint64_t)(t.rank + 1) + (uint64_t)i;
    int nlost = 0;
    for (int i = 0; i < NOPS; i++) {
        gni_post_descriptor_t d;
        post(&t, right, i, src, smh, bs[right], hs[right], &d);
        if (!sn_fault_hits(i, after, every)) {
            dt_complete(t.cq, &d, GNI_RC_SUCCESS);
            continue;
        }
        gni_cq_entry_t ev = dt_complete(t.cq, &d, GNI_RC_TRANSACTION_ERROR);
        uint32_t recoverable = 0;
        GNI_OK(GNI_CqErrorRecoverable(ev, &recoverable));
        CHECK_EQ(recoverable, 1);
        char text[256];
        GNI_OK(GNI_CqErrorStr(ev, text, sizeof text));
        if (!strstr(text, "network")) SN_FAIL("GNI_CqErrorStr of a lost post says \"%s\"", text);
        nlost++;
    }
    CHECK(PMI_Barrier() == PMI_SUCCESS);
    for (int i = 0; i < NOPS; i++) {
        uint64_t want = sn_fault_hits(i, after, every) ? 0 : 0x10000u * (uint64_t)(left + 1) + (uint64_t)i;
        if (dst[i] != want) SN_FAIL("word %d holds %#lx, expected %#lx", i, (unsigned long)dst[i], (unsigned long)want);
    }
    CHECK(PMI_Barrier() == PMI_SUCCESS);
    /* The retries (counted by the fault spec too: give the spec room with times=). */
    for (int i = 0; i < NOPS; i++) {
        if (!sn_fault_hits(i, after, every)) continue;
        gni_post_descriptor_t d;
        post(&t, right, i, src, smh, bs[right], hs[right], &d);
        dt_complete(t.cq, &d, GNI_RC_SUCCESS);
    }
    CHECK(PMI_Barrier() == PMI_SUCCESS);
    for (int i = 0; i < NOPS; i++)
        if (dst[i] != 0x10000u * (uint64_t)(left + 1) + (uint64_t)i) SN_FAIL("after the retries word %d holds %#lx", i, (unsigned long)dst[i]);
    printf("fault_transfer: rank %d ok, %d posts lost\n", t.rank, nlost);
    GNI_OK(GNI_MemDeregister(t.nic, &smh));
    GNI_OK(GNI_MemDeregister(t.nic, &dmh));
    gnit_fini(&t);
    return 0;
}
