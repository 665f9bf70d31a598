/* uGNI core: bad input never crashes: NULL, forged, wrong-type and destroyed handles of
 * every kind, bad outputs, and the endpoint and error-queue calls (decisions in
 * ugni-sys/src/ep.rs and errors.rs).  Single process is enough; runs under snrun -n 2. */
#include "gnitest.h"
#include <sys/time.h>

int main(void)
{
    gnit_t t;
    gnit_init(&t, 16);
    gni_cdm_handle_t fcdm = (gni_cdm_handle_t)(uintptr_t)0x1234;
    gni_nic_handle_t fnic = (gni_nic_handle_t)(uintptr_t)t.cdm; /* a CDM handle as a NIC */
    gni_cq_handle_t fcq = (gni_cq_handle_t)(uintptr_t)t.eps[0];
    gni_ep_handle_t fep = (gni_ep_handle_t)(uintptr_t)t.cq;
    gni_err_handle_t ferr = (gni_err_handle_t)(uintptr_t)t.nic;
    gni_ep_handle_t ep;
    gni_cq_handle_t cq;
    gni_cq_entry_t ev;
    gni_mem_handle_t mh;
    uint32_t a, b;
    gni_post_state_t st;
    static char buf[4096];

    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CdmDestroy(NULL));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CdmDestroy(fcdm));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CdmAttach(NULL, 0, &a, &t.nic));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqCreate(NULL, 16, 0, 0, NULL, NULL, &cq));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqCreate(fnic, 16, 0, 0, NULL, NULL, &cq));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqDestroy(NULL));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqDestroy(fcq));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqGetEvent(fcq, &ev));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqGetEvent(t.cq, NULL));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqWaitEvent(NULL, 1, &ev));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqTestEvent(NULL));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqVectorWaitEvent(NULL, 1, 1, &ev, &a));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqVectorWaitEvent(&t.cq, 0, 1, &ev, &a));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqVectorWaitEvent(&fcq, 1, 1, &ev, &a));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_GetCompleted(NULL, 0, NULL));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpCreate(NULL, t.cq, &ep));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpCreate(t.nic, fcq, &ep));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpCreate(t.nic, t.cq, NULL));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpBind(fep, 0, 0));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpUnbind(NULL));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpDestroy(fep));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpSetEventData(NULL, 1, 2));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpPostData(fep, buf, 8, buf, 8));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpPostDataTest(NULL, &st, &a, &b));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpPostDataWait(fep, 10, &st, &a, &b));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpPostDataCancel(NULL));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostDataProbe(fnic, &a, &b));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostDataProbe(t.nic, NULL, &b));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostDataProbeById(t.nic, NULL));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemRegister(fnic, (uint64_t)(uintptr_t)buf, 8, NULL, 0, -1, &mh));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_MemDeregister(fnic, &mh));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_SetMddResources(NULL, 4));

    /* Endpoints: NULL CQ allowed; event data; unbind of unbound; destroy twice. */
    GNI_OK(GNI_EpCreate(t.nic, NULL, &ep));
    GNI_OK(GNI_EpSetEventData(ep, 11, 22));
    GNI_OK(GNI_EpUnbind(ep));
    GNI_OK(GNI_EpIdle(ep));
    GNI_OK(GNI_EpBind(ep, t.addrs[0], 0));
    GNI_OK(GNI_EpBind(ep, t.addrs[0], 0)); /* rebinding an idle EP */
    GNI_OK(GNI_EpUnbind(ep));
    GNI_OK(GNI_EpDestroy(ep));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpDestroy(ep));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpBind(ep, 0, 0));
    /* An EP holding a CQ, destroyed with a datagram pending: cancelled implicitly, and
     * reported once by a probe (which collects it), as real datagram threads expect. */
    GNI_OK(GNI_CqCreate(t.nic, 4, 0, GNI_CQ_BLOCKING, NULL, NULL, &cq));
    GNI_OK(GNI_EpCreate(t.nic, cq, &ep));
    GNI_OK(GNI_EpPostDataWId(ep, buf, 8, buf, 8, 3));
    GNI_EXPECT(GNI_RC_NOT_DONE, GNI_EpIdle(ep));
    GNI_EXPECT(GNI_RC_ERROR_RESOURCE, GNI_CqDestroy(cq));
    GNI_OK(GNI_EpDestroy(ep));
    uint64_t id = 0;
    GNI_OK(GNI_PostDataProbeById(t.nic, &id));
    CHECK_EQ(id, 3);
    GNI_EXPECT(GNI_RC_NO_MATCH, GNI_PostDataProbeById(t.nic, &id));
    {
        /* Polled just before destruction (so in this thread's handle cache), then stale. */
        gni_cq_entry_t ev0;
        GNI_EXPECT(GNI_RC_NOT_DONE, GNI_CqGetEvent(cq, &ev0));
    }
    GNI_OK(GNI_CqDestroy(cq));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpCreate(t.nic, cq, &ep));
    {
        gni_cq_entry_t ev0;
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqGetEvent(cq, &ev0));
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqTestEvent(cq));
    }

    /* Error queues. */
    gni_err_handle_t eh;
    gni_error_mask_t m = 0;
    gni_error_event_t evs[4];
    uint32_t nev = 99;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_SubscribeErrors(NULL, 0, GNI_ERRMASK_TRANSACTION, 0, &eh));
    GNI_EXPECT(GNI_RC_NO_MATCH, GNI_SubscribeErrors(t.nic, 5, GNI_ERRMASK_TRANSACTION, 0, &eh));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_SubscribeErrors(t.nic, 0, GNI_ERRMASK_TRANSACTION, 0, NULL));
    GNI_OK(GNI_SubscribeErrors(t.nic, 0, GNI_ERRMASK_TRANSACTION | GNI_ERRMASK_CRITICAL, 0, &eh));
    GNI_OK(GNI_GetErrorMask(eh, &m));
    CHECK_EQ(m, GNI_ERRMASK_TRANSACTION | GNI_ERRMASK_CRITICAL);
    GNI_OK(GNI_SetErrorMask(eh, GNI_ERRMASK_TRANSACTION | GNI_ERRMASK_ADDRESS_TRANSLATION, &m));
    CHECK_EQ(m, GNI_ERRMASK_TRANSACTION | GNI_ERRMASK_CRITICAL);
    GNI_OK(GNI_GetErrorMask(eh, &m));
    CHECK_EQ(m, GNI_ERRMASK_TRANSACTION | GNI_ERRMASK_ADDRESS_TRANSLATION);
    GNI_EXPECT(GNI_RC_NOT_DONE, GNI_GetErrorEvent(eh, &evs[0]));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_GetErrorEvent(eh, NULL));
    struct timeval t0, t1;
    gettimeofday(&t0, NULL);
    GNI_EXPECT(GNI_RC_TIMEOUT, GNI_WaitErrorEvents(eh, evs, 4, 150, &nev));
    gettimeofday(&t1, NULL);
    CHECK_EQ(nev, 0);
    CHECK((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_usec - t0.tv_usec) / 1000 >= 145);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_WaitErrorEvents(eh, evs, 0, 10, &nev));
    GNI_OK(GNI_SetErrorPtag(eh, t.ptag));
    GNI_EXPECT(GNI_RC_PERMISSION_ERROR, GNI_SetErrorPtag(eh, (uint8_t)(t.ptag + 1)));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_GetErrorMask(ferr, &m));

    /* A failed transaction produces an error event: a put into a bogus handle. */
    uint64_t v = 1;
    gni_post_descriptor_t d;
    memset(&d, 0, sizeof d);
    d.type = GNI_POST_FMA_PUT;
    d.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
    d.local_addr = (uint64_t)(uintptr_t)&v;
    d.remote_addr = 4096;
    d.length = 8;
    d.remote_mem_hndl.qword1 = 4096;
    d.remote_mem_hndl.qword2 = 0x0000000300000001ull;
    gni_return_t prc = GNI_PostFma(t.eps[t.rank], &d);
    if (prc == GNI_RC_SUCCESS) {
        gni_cq_entry_t e = gnit_wait(t.cq, GNI_RC_TRANSACTION_ERROR);
        gni_post_descriptor_t *pd;
        GNI_EXPECT(GNI_RC_TRANSACTION_ERROR, GNI_GetCompleted(t.cq, e, &pd));
        /* Reported when the data-movement code calls errors::report_transaction_error. */
        gni_return_t wrc = GNI_WaitErrorEvents(eh, evs, 4, 100, &nev);
        if (nev > 0) {
            CHECK(wrc == GNI_RC_TIMEOUT || wrc == GNI_RC_SUCCESS);
            CHECK(evs[0].ptag == t.ptag);
            CHECK(evs[0].error_category & (GNI_ERRMASK_TRANSACTION | GNI_ERRMASK_ADDRESS_TRANSLATION));
        }
    }
    GNI_OK(GNI_ReleaseErrors(eh));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_ReleaseErrors(eh));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_GetErrorEvent(eh, &evs[0]));

    gnit_fini(&t);
    /* Everything destroyed: old handles are dead. */
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqTestEvent(t.cq));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostDataProbe(t.nic, &a, &b));
    printf("core_badinput: rank %d ok\n", t.rank);
    return 0;
}
