/* A VCE whose owner dies gives its contributors an error, not a hang: rank 1 owns a VCE
 * with two PE children (ranks 0 and 1), rank 0 contributes, rank 1 exits without
 * contributing (and without finalizing uGNI); rank 0's GNI_CeCheckResult loop then
 * answers GNI_RC_TRANSACTION_ERROR within seconds instead of NOT_DONE forever.  Two
 * ranks.  Rank 1 ends its PMI connection before it exits, as a program under MPICH's
 * hydra must (hydra ends the whole job when a client's PMI socket closes before
 * PMI_Finalize, and its proxy may fail an assertion forwarding a command to it). */
#include "gnitest.h"
#include <sched.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
    gnit_t t;
    gnit_init(&t, 64);
    if (t.size != 2) SKIP("needs exactly 2 ranks");
    uint32_t id = 0, ids[2];
    gni_ce_handle_t ce;
    gni_ep_handle_t kids[2], join;
    if (t.rank == 1) {
        GNI_OK(GNI_CeCreate(t.nic, &ce));
        GNI_OK(GNI_CeGetId(ce, &id));
        for (int r = 0; r < 2; r++) {
            GNI_OK(GNI_EpCreate(t.nic, t.cq, &kids[r]));
            GNI_OK(GNI_EpBind(kids[r], t.addrs[r], 500 + r));
            GNI_OK(GNI_EpSetCeAttr(kids[r], (uint32_t)-1, r, GNI_CE_CHILD_PE));
        }
        GNI_OK(GNI_CeConfigure(ce, kids, 2, NULL, NULL, 0));
    }
    CHECK(PMI_Allgather(&id, ids, sizeof(id)) == PMI_SUCCESS);
    if (t.rank == 1) {
        CHECK(PMI_Barrier() == PMI_SUCCESS);
        printf("ce_death: rank 1 ok (exits without contributing)\n");
        fflush(stdout);
        CHECK(PMI_Finalize() == PMI_SUCCESS);
        _exit(0);
    }
    gni_ce_result_t *res = aligned_alloc(64, 4096);
    gni_mem_handle_t mh;
    CHECK(res);
    GNI_OK(GNI_MemRegister(t.nic, (uint64_t)(uintptr_t)res, 4096, NULL, GNI_MEM_READWRITE, -1, &mh));
    GNI_OK(GNI_EpCreate(t.nic, t.cq, &join));
    GNI_OK(GNI_EpBind(join, t.addrs[1], GNIT_RID(0, 1)));
    GNI_OK(GNI_EpSetCeAttr(join, ids[1], 0, GNI_CE_CHILD_PE));
    gni_post_descriptor_t d;
    memset(&d, 0, sizeof d);
    d.type = GNI_POST_CE;
    d.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
    d.local_addr = (uint64_t)(uintptr_t)res;
    d.local_mem_hndl = mh;
    d.ce_cmd = GNI_FMA_CE_IADD;
    d.first_operand = 1;
    GNI_OK(GNI_PostFma(join, &d));
    CHECK(PMI_Barrier() == PMI_SUCCESS);
    time_t t0 = time(NULL);
    gni_return_t rc;
    while ((rc = GNI_CeCheckResult(res, sizeof *res)) == GNI_RC_NOT_DONE) {
        if (time(NULL) - t0 > 20) SN_FAIL("still NOT_DONE 20 s after the VCE owner exited");
        sched_yield();
    }
    CHECK_EQ(rc, GNI_RC_TRANSACTION_ERROR);
    printf("ce_death: rank 0 ok (transaction error after %ld s)\n", (long)(time(NULL) - t0));
    return 0;
}
