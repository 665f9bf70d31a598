/* A peer on another (virtual) host stops answering: its partner's transactions fail
 * with transaction errors within a bounded time (SOFTNIC_NET_TIMEOUT_MS), never hang.
 * Two ranks on two hosts: rank 1 registers a window, shares it, then freezes (SIGSTOP:
 * a hung or cut-off machine, which the launcher cannot see); rank 0 keeps putting into
 * it (and posting AMOs), reports how long the first failure took and ends the job with
 * PMI_Abort.  `net_death kill`: rank 1 dies instead (SIGKILL); the launcher must end the
 * job (rank 0 is left looping: it is killed, not finished).  `net_death rdma`: rank 0
 * alternates 1 MiB RDMA PUTs and GETs instead (libfabric RMA through a window the peer
 * exposed before freezing). */
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include "data_util.h"

int main(int argc, char **argv)
{
    gnit_t t;
    gnit_init(&t, 64);
    CHECK_EQ(t.size, 2);
    int kill_mode = argc > 1 && strcmp(argv[1], "kill") == 0;
    int rdma = argc > 1 && strcmp(argv[1], "rdma") == 0;
    size_t len = rdma ? 1u << 20 : 8, size = rdma ? (1u << 20) + 4096 : 4096;
    uint64_t *win = dt_alloc(size), *loc = dt_alloc(size);
    gni_mem_handle_t wmh = dt_reg(&t, win, size, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t lmh = dt_reg(&t, loc, size, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t mh[2];
    uint64_t base[2];
    gnit_exchange_mem(&t, win, wmh, mh, base);
    gni_post_descriptor_t d;
    /* One successful put first: the connection exists when the peer dies. */
    if (t.rank == 0) {
        dt_desc(&d, rdma ? GNI_POST_RDMA_PUT : GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, loc, lmh, base[1], mh[1], len);
        if (rdma) dt_rdma(&t, 1, &d); else dt_fma(&t, 1, &d);
    }
    CHECK(PMI_Barrier() == PMI_SUCCESS);
    if (t.rank == 1) {
        fprintf(stderr, "net_death: rank 1 %s now\n", kill_mode ? "dies" : "freezes");
        raise(kill_mode ? SIGKILL : SIGSTOP);
        return 1;
    }
    double t0 = dt_now();
    for (int i = 0;; i++) {
        if (rdma) {
            dt_desc(&d, i % 2 ? GNI_POST_RDMA_GET : GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, loc, lmh, base[1], mh[1], len);
            GNI_OK(GNI_PostRdma(t.eps[1], &d));
        } else {
            dt_desc(&d, i % 2 ? GNI_POST_AMO : GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, loc, lmh, base[1], mh[1], 8);
            d.amo_cmd = GNI_FMA_ATOMIC2_FIADD;
            d.first_operand = 1;
            GNI_OK(GNI_PostFma(t.eps[1], &d));
        }
        gni_cq_entry_t ev = 0;
        gni_return_t rc = GNI_CqWaitEvent(t.cq, 60000, &ev);
        gni_post_descriptor_t *got = NULL;
        (void)GNI_GetCompleted(t.cq, ev, &got);
        if (rc == GNI_RC_TRANSACTION_ERROR) {
            fprintf(stderr, "net_death: transaction error after %.1f s (%d posts)\n", dt_now() - t0, i + 1);
            break;
        }
        CHECK_EQ(rc, GNI_RC_SUCCESS);
        if (dt_now() - t0 > 60) SN_FAIL("no error 60 s after the peer died");
        usleep(10000);
    }
    /* Later posts fail at once. */
    double t1 = dt_now();
    dt_desc(&d, rdma ? GNI_POST_RDMA_PUT : GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, loc, lmh, base[1], mh[1], len);
    GNI_OK(rdma ? GNI_PostRdma(t.eps[1], &d) : GNI_PostFma(t.eps[1], &d));
    dt_complete(t.cq, &d, GNI_RC_TRANSACTION_ERROR);
    CHECK(dt_now() - t1 < 1.0);
    fprintf(stderr, "net_death: rank 0 ok\n");
    usleep(300000); /* let the launcher forward the output before the abort tears it down */
    PMI_Abort(0, "net_death: done");
    return 0;
}
