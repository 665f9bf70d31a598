/* An MRQ that overflows is the guide's fatal asynchronous error: with
 * UTOFU_NUM_MRQ_ENTRIES=2048 (set by the test list), 2049 unpolled notices end the
 * process at its next poll_mrq with "utofu: asynchronous error: MRQ Overflow on TNI t
 * CQ c".  Exits 0 (and fails the test) if the process survives. */
#include "utest.h"

static uint64_t buf[16];

int main(void)
{
    utofu_vcq_hdl_t h; utofu_vcq_id_t id; utofu_stadd_t s;
    UCHECK(utofu_create_vcq(0, 0, &h));
    UCHECK(utofu_query_vcq_id(h, &id));
    UCHECK(utofu_reg_mem(h, buf, sizeof buf, 0, &s));
    void *cb;
    for (int i = 0; i < 2049; i++) {
        UCHECK(utofu_put(h, id, s, s + 64, 8, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));
        utofu_poll_tcq(h, 0, &cb);
    }
    size_t unread;
    UCHECK(utofu_query_num_unread_mrq(h, &unread));
    printf("utofu_overflow: %zu unread notices\n", unread);
    fflush(stdout);
    struct utofu_mrq_notice n;
    utofu_poll_mrq(h, 0, &n);
    printf("utofu_overflow: survived an MRQ overflow\n");
    return 0;
}
