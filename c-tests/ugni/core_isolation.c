/* uGNI core: (ptag, cookie) domains are isolated.  Each rank adds a second domain with
 * GNI_ConfigureJob and attaches a CDM there with the SAME inst_id as its job CDM (allowed:
 * registry keys include ptag and cookie).  Then, between ranks 0 and 1:
 *  - rank 1's foreign instance posts an unbound datagram, rank 0's job EP bound to rank 1
 *    posts a bound one: they never pair (both time out);
 *  - rank 0's foreign EP bound to (rank 1's address, 1) posts a bound datagram while rank
 *    1's job domain has an unbound one posted: no pairing either;
 *  - an FMA put from rank 0's foreign EP to rank 1's job registration fails with a
 *    transaction error (no such instance in that domain) and the memory is untouched. */
#include "gnitest.h"

int main(void)
{
    gnit_t t;
    gnit_init(&t, 64);
    int me = t.rank;
    uint8_t optag = (uint8_t)(t.ptag + 1);
    uint32_t ocookie = t.cookie + 0x20000;
    gni_cdm_handle_t ocdm;
    gni_nic_handle_t onic;
    gni_cq_handle_t ocq;
    uint32_t oaddr;
    GNI_OK(GNI_ConfigureJob(0, 4242, optag, ocookie, NULL));
    GNI_OK(GNI_CdmCreate(me, optag, ocookie, 0, &ocdm));
    GNI_OK(GNI_CdmAttach(ocdm, 0, &oaddr, &onic));
    CHECK_EQ(oaddr, t.nic_addr);
    GNI_OK(GNI_CqCreate(onic, 16, 0, GNI_CQ_BLOCKING, NULL, NULL, &ocq));
    static uint64_t mem[64];
    gni_mem_handle_t mh, *hs = calloc(t.size, sizeof *hs);
    uint64_t *bases = calloc(t.size, sizeof *bases);
    GNI_OK(GNI_MemRegister(t.nic, (uint64_t)(uintptr_t)mem, sizeof mem, NULL, GNI_MEM_READWRITE, -1, &mh));
    gnit_exchange_mem(&t, mem, mh, hs, bases);
    gni_post_state_t st;
    uint32_t ra, rid;
    char in[16], out[16] = "x";

    if (me < 2) {
        int peer = 1 - me;
        gni_ep_handle_t oep, any;
        GNI_OK(GNI_EpCreate(onic, ocq, &oep));
        GNI_OK(GNI_EpCreate(t.nic, NULL, &any));
        /* A: job-domain bound 0->1 vs foreign-domain unbound at 1. */
        if (me == 0) GNI_OK(GNI_EpPostData(t.eps[1], out, sizeof out, in, sizeof in));
        else GNI_OK(GNI_EpPostDataWId(oep, out, sizeof out, in, sizeof in, 5));
        CHECK(PMI_Barrier() == PMI_SUCCESS);
        if (me == 0) {
            GNI_EXPECT(GNI_RC_TIMEOUT, GNI_EpPostDataWait(t.eps[1], 400, &st, &ra, &rid));
            GNI_OK(GNI_EpPostDataCancel(t.eps[1]));
            GNI_OK(GNI_EpPostDataTest(t.eps[1], &st, &ra, &rid));
            CHECK_EQ(st, GNI_POST_TERMINATED);
        } else {
            GNI_EXPECT(GNI_RC_TIMEOUT, GNI_EpPostDataWaitById(oep, 5, 400, &st, &ra, &rid));
            GNI_OK(GNI_EpPostDataCancelById(oep, 5));
        }
        CHECK(PMI_Barrier() == PMI_SUCCESS);
        /* B: foreign-domain bound 0->(rank 1's address, 1) vs job-domain unbound at 1. */
        if (me == 0) {
            GNI_OK(GNI_EpBind(oep, t.addrs[1], 1));
            GNI_OK(GNI_EpPostData(oep, out, sizeof out, in, sizeof in));
        } else {
            GNI_OK(GNI_EpPostDataWId(any, out, sizeof out, in, sizeof in, 6));
        }
        CHECK(PMI_Barrier() == PMI_SUCCESS);
        if (me == 0) {
            GNI_EXPECT(GNI_RC_TIMEOUT, GNI_EpPostDataWait(oep, 400, &st, &ra, &rid));
            GNI_OK(GNI_EpPostDataCancel(oep));
        } else {
            GNI_EXPECT(GNI_RC_TIMEOUT, GNI_EpPostDataWaitById(any, 6, 400, &st, &ra, &rid));
            GNI_OK(GNI_EpPostDataCancel(any));
        }
        CHECK(PMI_Barrier() == PMI_SUCCESS);
        if (me == 0) {
            /* A put from the foreign domain into the job's registration. */
            uint64_t v = 0xdead;
            gni_post_descriptor_t d;
            memset(&d, 0, sizeof d);
            d.type = GNI_POST_FMA_PUT;
            d.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
            d.local_addr = (uint64_t)(uintptr_t)&v;
            d.remote_addr = bases[peer];
            d.remote_mem_hndl = hs[peer];
            d.length = 8;
            GNI_OK(GNI_PostFma(oep, &d));
            gni_cq_entry_t ev = gnit_wait(ocq, GNI_RC_TRANSACTION_ERROR);
            gni_post_descriptor_t *pd;
            GNI_EXPECT(GNI_RC_TRANSACTION_ERROR, GNI_GetCompleted(ocq, ev, &pd));
            CHECK(pd == &d);
        }
        CHECK(PMI_Barrier() == PMI_SUCCESS);
        CHECK_EQ(mem[0], 0);
        GNI_OK(GNI_EpDestroy(oep));
        GNI_OK(GNI_EpDestroy(any));
    } else {
        for (int i = 0; i < 5; i++) CHECK(PMI_Barrier() == PMI_SUCCESS);
    }
    GNI_OK(GNI_MemDeregister(t.nic, &mh));
    GNI_OK(GNI_CqDestroy(ocq));
    GNI_OK(GNI_CdmDestroy(ocdm));
    gnit_fini(&t);
    printf("core_isolation: rank %d ok\n", me);
    return 0;
}
