/* Injected network losses (SOFTNIC_FAULTS=transfer:...) as a uTofu program's error path
 * sees them, in one process: VCQ a makes nine requests to VCQ b's region, in turn a put,
 * an ARMW add and a get, each on its own word, every one asking for the local MRQ
 * notice; the manifest sets the fault spec and passes its after/every here.  A lost
 * request is reported by the MRQ as UTOFU_ERR_MRQ_OTHER (its TCQ entry is a success: the
 * local side sent it), and nothing of it reaches b; the others succeed, and so do the
 * retries of the lost ones.
 *
 *   utofu_fault_transfer AFTER EVERY    (0 0: no faults expected)
 */
#include "utest.h"
#include <stdlib.h>

#define NOPS 9

static uint64_t target[64] __attribute__((aligned(256)));
static uint64_t local[64] __attribute__((aligned(256)));

static utofu_vcq_hdl_t a;
static utofu_vcq_id_t idb;
static utofu_stadd_t sa, sb;

/* Request i; returns the MRQ code of its local notice. */
static int request(int i)
{
    switch (i % 3) {
    case 0: UCHECK(utofu_put(a, idb, sa + 8 * i, sb + 8 * i, 8, i, UTOFU_ONESIDED_FLAG_TCQ_NOTICE | UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL)); break;
    case 1: UCHECK(utofu_armw8(a, idb, UTOFU_ARMW_OP_ADD, local[i], sb + 8 * i, i, UTOFU_ONESIDED_FLAG_TCQ_NOTICE | UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL)); break;
    default: UCHECK(utofu_get(a, idb, sa + 8 * (32 + i), sb + 8 * i, 8, i, UTOFU_ONESIDED_FLAG_TCQ_NOTICE | UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL)); break;
    }
    void *cb;
    UCHECK(wait_tcq(a, &cb));
    struct utofu_mrq_notice n;
    int rc = wait_mrq(a, &n);
    CHECK_EQ(n.edata, (uint64_t)i);
    return rc;
}

int main(int argc, char **argv)
{
    int after = argc > 2 ? atoi(argv[1]) : 0, every = argc > 2 ? atoi(argv[2]) : 0;
    sntest_rank = 0;
    utofu_vcq_hdl_t b;
    UCHECK(utofu_create_vcq(0, 0, &a));
    UCHECK(utofu_create_vcq(0, 0, &b));
    UCHECK(utofu_query_vcq_id(b, &idb));
    UCHECK(utofu_reg_mem(a, local, sizeof local, 0, &sa));
    UCHECK(utofu_reg_mem(b, target, sizeof target, 0, &sb));
    for (int i = 0; i < NOPS; i++) {
        local[i] = 0x10000u + (uint64_t)i;
        target[i] = i % 3 == 2 ? 0x20000u + (uint64_t)i : 0;
    }
    int nlost = 0;
    for (int i = 0; i < NOPS; i++) {
        int rc = request(i);
        int want = sn_fault_hits(i, after, every) ? UTOFU_ERR_MRQ_OTHER : UTOFU_SUCCESS;
        if (rc != want) SN_FAIL("request %d: MRQ code %d, expected %d", i, rc, want);
        nlost += rc != UTOFU_SUCCESS;
    }
    for (int i = 0; i < NOPS; i++) {
        int gone = sn_fault_hits(i, after, every);
        if (i % 3 == 2) {
            uint64_t want = gone ? 0 : 0x20000u + (uint64_t)i;
            if (local[32 + i] != want) SN_FAIL("get %d read %#lx, expected %#lx", i, (unsigned long)local[32 + i], (unsigned long)want);
        } else {
            uint64_t want = gone ? 0 : 0x10000u + (uint64_t)i;
            if (target[i] != want) SN_FAIL("word %d holds %#lx, expected %#lx", i, (unsigned long)target[i], (unsigned long)want);
        }
    }
    for (int i = 0; i < NOPS; i++)
        if (sn_fault_hits(i, after, every) && request(i) != UTOFU_SUCCESS) SN_FAIL("the retry of request %d failed", i);
    for (int i = 0; i < NOPS; i++)
        if (i % 3 != 2 && target[i] != 0x10000u + (uint64_t)i) SN_FAIL("after the retries word %d holds %#lx", i, (unsigned long)target[i]);
    expect_empty(a);
    printf("utofu_fault_transfer: ok, %d requests lost\n", nlost);
    return 0;
}
