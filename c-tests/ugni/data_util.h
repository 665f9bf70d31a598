/* Helpers of the uGNI data-movement tests (data_*.c), on top of gnitest.h. */
#ifndef DATA_UTIL_H
#define DATA_UTIL_H
#include <stdint.h>
#include <time.h>
#include "gni_pub.h"
#include "gnitest.h"

__attribute__((unused)) static double dt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A page-aligned zeroed buffer. */
__attribute__((unused)) static void *dt_alloc(size_t len)
{
    void *p = NULL;
    CHECK(posix_memalign(&p, 4096, len ? len : 1) == 0);
    memset(p, 0, len);
    return p;
}

__attribute__((unused)) static gni_mem_handle_t dt_reg(gnit_t *t, void *buf, size_t len, gni_cq_handle_t dst_cq, uint32_t flags)
{
    gni_mem_handle_t mh;
    memset(&mh, 0, sizeof(mh));
    GNI_OK(GNI_MemRegister(t->nic, (uint64_t)(uintptr_t)buf, len, dst_cq, flags, (uint32_t)-1, &mh));
    return mh;
}

/* SMSG attributes of an auto-retransmit mailbox; returns its size (GNI_SmsgBufferSizeNeeded). */
__attribute__((unused)) static unsigned int dt_smsg_attr(gni_smsg_attr_t *a, uint16_t credits, uint32_t maxsize)
{
    unsigned int mbsz = 0;
    memset(a, 0, sizeof(*a));
    a->msg_type = GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT;
    a->mbox_maxcredit = credits;
    a->msg_maxsize = maxsize;
    GNI_OK(GNI_SmsgBufferSizeNeeded(a, &mbsz));
    return mbsz;
}

__attribute__((unused)) static void dt_desc(gni_post_descriptor_t *d, gni_post_type_t type, uint16_t cq_mode,
                    void *local, gni_mem_handle_t lmh, uint64_t remote, gni_mem_handle_t rmh, uint64_t len)
{
    memset(d, 0, sizeof(*d));
    d->type = type;
    d->cq_mode = cq_mode;
    d->dlvr_mode = GNI_DLVMODE_PERFORMANCE;
    d->local_addr = (uint64_t)(uintptr_t)local;
    d->local_mem_hndl = lmh;
    d->remote_addr = remote;
    d->remote_mem_hndl = rmh;
    d->length = len;
}

/* Waits for the completion event of d on cq and checks GetCompleted hands back d itself.
 * Returns the event. want = GNI_RC_SUCCESS or GNI_RC_TRANSACTION_ERROR. */
__attribute__((unused)) static gni_cq_entry_t dt_complete(gni_cq_handle_t cq, gni_post_descriptor_t *d, gni_return_t want)
{
    gni_cq_entry_t ev = gnit_wait(cq, want);
    gni_post_descriptor_t *got = NULL;
    CHECK_EQ(GNI_CQ_GET_TYPE(ev), GNI_CQ_EVENT_TYPE_POST);
    gni_return_t rc = GNI_GetCompleted(cq, ev, &got);
    if (want == GNI_RC_SUCCESS) {
        if (rc != GNI_RC_SUCCESS) SN_FAIL("GNI_GetCompleted returned %d (%s)", (int)rc, gnit_rc(rc));
    } else if (rc != GNI_RC_TRANSACTION_ERROR && rc != GNI_RC_DESCRIPTOR_ERROR) {
        SN_FAIL("GNI_GetCompleted of a failed post returned %d (%s)", (int)rc, gnit_rc(rc));
    }
    if (got != d) SN_FAIL("GNI_GetCompleted returned descriptor %p, posted %p", (void *)got, (void *)d);
    return ev;
}

__attribute__((unused)) static void dt_fma(gnit_t *t, int peer, gni_post_descriptor_t *d)
{
    GNI_OK(GNI_PostFma(t->eps[peer], d));
    dt_complete(t->cq, d, GNI_RC_SUCCESS);
}

__attribute__((unused)) static void dt_rdma(gnit_t *t, int peer, gni_post_descriptor_t *d)
{
    GNI_OK(GNI_PostRdma(t->eps[peer], d));
    dt_complete(t->cq, d, GNI_RC_SUCCESS);
}

/* A registered 4 KiB source and destination per rank; every rank's destination (address,
 * handle) gathered (at most 256 ranks). */
typedef struct {
    uint64_t *src, *dst;
    gni_mem_handle_t smh, dmh;
    gni_mem_handle_t hs[256];
    uint64_t bs[256];
} dt_pair_t;

__attribute__((unused)) static void dt_pair(gnit_t *t, dt_pair_t *p)
{
    CHECK(t->size <= 256);
    p->src = dt_alloc(4096);
    p->dst = dt_alloc(4096);
    p->smh = dt_reg(t, p->src, 4096, NULL, GNI_MEM_READWRITE);
    p->dmh = dt_reg(t, p->dst, 4096, NULL, GNI_MEM_READWRITE);
    gnit_exchange_mem(t, p->dst, p->dmh, p->hs, p->bs);
}

__attribute__((unused)) static void dt_barrier(void)
{
    CHECK(PMI_Barrier() == PMI_SUCCESS);
}
#endif
