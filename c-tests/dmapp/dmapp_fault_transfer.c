/* Injected network losses (SOFTNIC_FAULTS=transfer:...) as a DMAPP program's error path
 * sees them.  Every PE issues nine requests to its right neighbour's symmetric heap, in
 * turn a blocking put, a blocking fetch-add and a put_nbi (completed by dmapp_gsync_wait),
 * each into its own word; the manifest sets the fault spec and passes its after/every
 * here.  A lost blocking request returns DMAPP_RC_TRANSACTION_ERROR, a lost put_nbi makes
 * the next gsync return it; nothing of a lost request lands, the others do.  The retries
 * land.
 *
 *   dmapp_fault_transfer AFTER EVERY    (0 0: no faults expected)
 */
#include "dmtest.h"

#define NOPS 9

static dmapp_return_t issue(int i, uint64_t *dst, int peer, uint64_t v)
{
    int64_t old;
    switch (i % 3) {
    case 0: return dmapp_put(&dst[i], sheap(), peer, &v, 1, DMAPP_QW);
    case 1: return dmapp_afadd_qw(&old, &dst[i], sheap(), peer, (int64_t)v);
    default: {
        dmapp_return_t rc = dmapp_put_nbi(&dst[i], sheap(), peer, &v, 1, DMAPP_QW);
        return rc != DMAPP_RC_SUCCESS ? rc : dmapp_gsync_wait();
    }
    }
}

int main(int argc, char **argv)
{
    int after = argc > 2 ? atoi(argv[1]) : 0, every = argc > 2 ? atoi(argv[2]) : 0;
    dm_init();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    uint64_t *dst = dmapp_sheap_malloc(NOPS * sizeof(uint64_t));
    CHECK(dst != NULL);
    memset(dst, 0, NOPS * sizeof(uint64_t));
    barrier();
    int nlost = 0;
    for (int i = 0; i < NOPS; i++) {
        dmapp_return_t want = sn_fault_hits(i, after, every) ? DMAPP_RC_TRANSACTION_ERROR : DMAPP_RC_SUCCESS;
        RC_EQ(issue(i, dst, right, 0x10000u * (uint64_t)(me + 1) + (uint64_t)i), want);
        nlost += want != DMAPP_RC_SUCCESS;
    }
    barrier();
    for (int i = 0; i < NOPS; i++) {
        uint64_t want = sn_fault_hits(i, after, every) ? 0 : 0x10000u * (uint64_t)(left + 1) + (uint64_t)i;
        if (dst[i] != want) SN_FAIL("word %d holds %#lx, expected %#lx", i, (unsigned long)dst[i], (unsigned long)want);
    }
    barrier();
    for (int i = 0; i < NOPS; i++)
        if (sn_fault_hits(i, after, every)) OK(issue(i, dst, right, 0x10000u * (uint64_t)(me + 1) + (uint64_t)i));
    barrier();
    for (int i = 0; i < NOPS; i++)
        if (dst[i] != 0x10000u * (uint64_t)(left + 1) + (uint64_t)i) SN_FAIL("after the retries word %d holds %#lx", i, (unsigned long)dst[i]);
    printf("dmapp_fault_transfer: pe %d ok, %d requests lost\n", me, nlost);
    barrier();
    OK(dmapp_finalize());
    return 0;
}
