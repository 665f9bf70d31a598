/* Injected deaths and network losses (SOFTNIC_FAULTS=die:... or net_drop:...), as the
 * partners see them.  Two ranks put one word at a time into each other, each put waited
 * for.  The manifest makes one rank die (at its Nth post, or on its clock) or lose one
 * network message, and runs the job with snrun -K so the other runs on: a rank whose peer
 * died (or was taken as dead, its message lost) sees its put complete with a transaction
 * error event that GNI_GetCompleted hands back, within the timeout, never a hang; the
 * rank that dies says nothing more.
 *
 *   fault_die        (2 ranks)
 */
#include <unistd.h>
#include "data_util.h"

int main(void)
{
    gnit_t t;
    gnit_init(&t, 64);
    CHECK_EQ(t.size, 2);
    int peer = 1 - t.rank;
    static dt_pair_t p;
    dt_pair(&t, &p);
    double end = dt_now() + 30;
    for (long n = 0; dt_now() < end; n++) {
        gni_post_descriptor_t d;
        p.src[0] = (uint64_t)n;
        dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, &p.src[0], p.smh, p.bs[peer] + 8 * (uint64_t)t.rank, p.hs[peer], 8);
        gni_return_t rc = GNI_PostFma(t.eps[peer], &d);
        if (rc != GNI_RC_SUCCESS) SN_FAIL("GNI_PostFma returned %d (%s): a post to a dead peer completes with an error event", (int)rc, gnit_rc(rc));
        gni_cq_entry_t ev = 0;
        /* A dead peer is found within a second on one machine, SOFTNIC_NET_TIMEOUT_MS
         * across machines (the manifest keeps it short). */
        rc = GNI_CqWaitEvent(t.cq, 10000, &ev);
        if (rc == GNI_RC_TIMEOUT) SN_FAIL("put %ld: no completion within 10 s", n);
        if (rc != GNI_RC_SUCCESS && rc != GNI_RC_TRANSACTION_ERROR) SN_FAIL("GNI_CqWaitEvent returned %d (%s)", (int)rc, gnit_rc(rc));
        gni_post_descriptor_t *got = NULL;
        gni_return_t done = GNI_GetCompleted(t.cq, ev, &got);
        if (got != &d) SN_FAIL("GNI_GetCompleted returned descriptor %p, posted %p", (void *)got, (void *)&d);
        if (rc == GNI_RC_TRANSACTION_ERROR) {
            if (done == GNI_RC_SUCCESS) SN_FAIL("GNI_GetCompleted of a failed put returned success");
            printf("fault_die: rank %d saw rank %d go after %ld puts\n", t.rank, peer, n);
            return 0;
        }
        usleep(2000);
    }
    SN_FAIL("rank %d: its peer still answers after 30 s (the fault spec did nothing?)", t.rank);
}
