/* Two concurrent uGNI jobs on one machine (c-tests/tools/twojobs; any launcher or none).
 * Job A's rank r registers a canary buffer and writes its (ptag, cookie), NIC address,
 * inst_id, the buffer's address and memory handle to a file.  Job B's rank r reads them:
 * GNI_ConfigureJob and GNI_CdmAttach with A's (ptag, cookie) are GNI_RC_PERMISSION_ERROR
 * (the pair belongs to job A); FMA put, FMA get and an AMO through B's own domain, bound
 * to A's NIC address and inst_id, with A's handle, complete with transaction errors and
 * the get's local buffer is untouched.  After B is done, A's canaries are intact. */
#include "gnitest.h"
#include "xjob.h"

#define LEN 4096

static uint8_t abuf[LEN] __attribute__((aligned(64)));
static uint8_t local[LEN] __attribute__((aligned(64)));

struct rec { uint64_t addr; gni_mem_handle_t mh; uint32_t nic_addr, inst, cookie; uint8_t ptag; };

static void attempt(gnit_t *t, gni_ep_handle_t ep, gni_mem_handle_t lh, const struct rec *r, gni_post_type_t type)
{
    gni_post_descriptor_t d, *pd;
    memset(&d, 0, sizeof d);
    d.type = type;
    d.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
    d.local_addr = (uint64_t)(uintptr_t)local;
    d.local_mem_hndl = lh;
    d.remote_addr = r->addr;
    d.remote_mem_hndl = r->mh;
    d.length = 64;
    if (type == GNI_POST_AMO) { d.length = 8; d.amo_cmd = GNI_FMA_ATOMIC_FADD; d.first_operand = 1; }
    GNI_OK(GNI_PostFma(ep, &d));
    gni_cq_entry_t ev = gnit_wait(t->cq, GNI_RC_TRANSACTION_ERROR);
    GNI_EXPECT(GNI_RC_TRANSACTION_ERROR, GNI_GetCompleted(t->cq, ev, &pd));
    CHECK(pd == &d);
}

int main(int argc, char **argv)
{
    if (argc < 2) SN_FAIL("usage: xjob_ugni owner|intruder");
    int owner = !strcmp(argv[1], "owner");
    gnit_t t;
    gnit_init(&t, 64);
    if (owner) {
        struct rec r = { (uint64_t)(uintptr_t)abuf, { 0, 0 }, t.nic_addr, (uint32_t)t.rank, t.cookie, t.ptag };
        memset(abuf, XJOB_CANARY, LEN);
        GNI_OK(GNI_MemRegister(t.nic, r.addr, LEN, NULL, GNI_MEM_READWRITE, -1, &r.mh));
        xjob_publish(t.rank, &r, sizeof r);
        xjob_wait_done(t.rank);
        if (!xjob_intact(abuf, LEN)) SN_FAIL("another job changed our registered memory");
        GNI_OK(GNI_MemDeregister(t.nic, &r.mh));
    } else {
        struct rec r;
        xjob_learn(t.rank, &r, sizeof r);
        if (r.ptag != t.ptag || r.cookie != t.cookie) {
            /* The other job's domain cannot be configured or attached here. */
            gni_cdm_handle_t cdm;
            gni_nic_handle_t nic;
            uint32_t addr;
            GNI_EXPECT(GNI_RC_PERMISSION_ERROR, GNI_ConfigureJob(0, 4242, r.ptag, r.cookie, NULL));
            GNI_OK(GNI_CdmCreate(500 + t.rank, r.ptag, r.cookie, GNI_CDM_MODE_FORK_NOCOPY, &cdm));
            GNI_EXPECT(GNI_RC_PERMISSION_ERROR, GNI_CdmAttach(cdm, 0, &addr, &nic));
            GNI_OK(GNI_CdmDestroy(cdm));
        }
        gni_ep_handle_t ep;
        GNI_OK(GNI_EpCreate(t.nic, t.cq, &ep));
        GNI_OK(GNI_EpBind(ep, r.nic_addr, r.inst));
        memset(local, 0x5a, LEN);
        gni_mem_handle_t lh;
        GNI_OK(GNI_MemRegister(t.nic, (uint64_t)(uintptr_t)local, LEN, NULL, GNI_MEM_READWRITE, -1, &lh));
        attempt(&t, ep, lh, &r, GNI_POST_FMA_PUT);
        attempt(&t, ep, lh, &r, GNI_POST_FMA_GET);
        attempt(&t, ep, lh, &r, GNI_POST_AMO);
        GNI_OK(GNI_MemDeregister(t.nic, &lh));
        for (int i = 0; i < LEN; i++) if (local[i] != 0x5a) SN_FAIL("a failed get changed our buffer at %d", i);
        GNI_OK(GNI_EpUnbind(ep));
        GNI_OK(GNI_EpDestroy(ep));
        xjob_done(t.rank);
    }
    gnit_fini(&t);
    printf("xjob_ugni: %s rank %d ok\n", owner ? "owner" : "intruder", t.rank);
    return 0;
}
