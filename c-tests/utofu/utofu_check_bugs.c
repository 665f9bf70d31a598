/* The checker (SOFTNIC_CHECK) against a uTofu bug committed on purpose, in one process:
 * VCQ a puts from its registered buffer to VCQ b's, asking for a TCQ notice, and
 *   reuse     overwrites the source before polling that notice (the TNI may still be
 *             reading it)
 *   unpolled  exits without polling it, nor deregistering its memory or freeing its VCQs
 *   getwrite  gets VCQ b's data back into its buffer with a local MRQ notice and writes
 *             the destination before polling that notice (the data may land after it)
 *   clean     polls the notices first: no finding
 * Prints "utofu_check_bugs: MODE done". */
#include "utest.h"
#include <stdlib.h>

static uint64_t src[64] __attribute__((aligned(256)));
static uint64_t dst[64] __attribute__((aligned(256)));

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "clean";
    sntest_rank = 0;
    utofu_vcq_hdl_t a, b;
    utofu_vcq_id_t idb;
    utofu_stadd_t sa, sb;
    UCHECK(utofu_create_vcq(0, 0, &a));
    UCHECK(utofu_create_vcq(0, 0, &b));
    UCHECK(utofu_query_vcq_id(b, &idb));
    UCHECK(utofu_reg_mem(a, src, sizeof src, 0, &sa));
    UCHECK(utofu_reg_mem(b, dst, sizeof dst, 0, &sb));
    for (int i = 0; i < 8; i++) src[i] = 0x70f00000u + (uint64_t)i;
    UCHECK(utofu_put(a, idb, sa, sb, 64, 0, UTOFU_ONESIDED_FLAG_TCQ_NOTICE, (void *)0x1));
    if (!strcmp(mode, "reuse")) src[2] = 0; /* the bug */
    if (strcmp(mode, "unpolled")) {
        void *cb;
        UCHECK(wait_tcq(a, &cb));
        CHECK(cb == (void *)0x1);
    }
    src[3] = 0; /* after the notice: fine */
    if (!strcmp(mode, "getwrite") || !strcmp(mode, "clean")) {
        UCHECK(utofu_get(a, idb, sa + 256, sb, 64, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));
        if (!strcmp(mode, "getwrite")) src[33] = 7; /* the bug: the data may still be landing */
        struct utofu_mrq_notice n;
        UCHECK(wait_mrq(a, &n));
        CHECK_EQ(n.notice_type, UTOFU_MRQ_TYPE_LCL_GET);
        src[33] = 7; /* after the notice: fine */
    }
    if (strcmp(mode, "unpolled")) {
        UCHECK(utofu_dereg_mem(a, sa, 0));
        UCHECK(utofu_dereg_mem(b, sb, 0));
        UCHECK(utofu_free_vcq(a));
        UCHECK(utofu_free_vcq(b));
    }
    printf("utofu_check_bugs: %s done\n", mode);
    fflush(stdout);
    return 0;
}
