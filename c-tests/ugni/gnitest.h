/* Job setup shared by the uGNI C tests: what a typical uGNI program does first.
 * PMI for rank/size/allgather, the Cray environment contract for ptag/cookie/device,
 * one CDM per rank (inst_id = rank), attached to device 0, one CQ, and one endpoint per
 * peer bound to (peer's NIC address, GNIT_RID(rank, peer)): an arbitrary user id, as
 * real programs pass (rank*100 + peer and the like), never the peer's inst_id, so every
 * test checks that transactions route by memory handle and that events carry the bound
 * id.  Datagram tests rebind to the peer's inst_id (the datagram match key).  A failing
 * call prints where and which return code, then exits 1. */
#ifndef GNITEST_H
#define GNITEST_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gni_pub.h"
#include "pmi.h"
#include "sntest.h"

static __attribute__((unused)) const char *gnit_rc(gni_return_t rc)
{
    return (unsigned)rc <= GNI_RC_ERROR_NOMEM && gni_err_str[rc] ? gni_err_str[rc] : "?";
}

/* Calls that must succeed. */
#define GNI_OK(call) do { gni_return_t rc_ = (call); \
    if (rc_ != GNI_RC_SUCCESS) SN_FAIL("%s returned %d (%s)", #call, (int)rc_, gnit_rc(rc_)); } while (0)
/* Calls that must fail with a given code. */
#define GNI_EXPECT(want, call) do { gni_return_t rc_ = (call); \
    if (rc_ != (want)) SN_FAIL("%s returned %d (%s), expected %s", #call, (int)rc_, gnit_rc(rc_), #want); } while (0)

/* The remote_id rank `me` binds its endpoint to `peer` with. */
#define GNIT_RID(me, peer) (1000u + 100u * (uint32_t)(me) + (uint32_t)(peer))

typedef struct {
    int rank, size;
    uint8_t ptag;
    uint32_t cookie;
    uint32_t dev_id;
    uint32_t nic_addr;          /* ours, from GNI_CdmAttach */
    uint32_t *addrs;            /* every rank's NIC address (allgathered) */
    gni_cdm_handle_t cdm;
    gni_nic_handle_t nic;
    gni_cq_handle_t cq;         /* source CQ of every endpoint */
    gni_ep_handle_t *eps;       /* eps[r] bound to rank r (eps[rank] too: self), remote_id GNIT_RID(rank, r) */
} gnit_t;

/* First token of a colon-separated PMI_GNI_* variable, as real programs read it. */
static __attribute__((unused)) unsigned long gnit_env(const char *name)
{
    const char *v = getenv(name);
    if (!v) SN_FAIL("%s is not set (PMI_Init should set it)", name);
    return strtoul(v, NULL, 10);
}

static __attribute__((unused)) void gnit_init_mode(gnit_t *t, uint32_t cq_entries, gni_cq_mode_t cq_mode, uint32_t cdm_modes)
{
    int spawned;
    memset(t, 0, sizeof(*t));
    CHECK(PMI_Init(&spawned) == PMI_SUCCESS);
    CHECK(PMI_Get_rank(&t->rank) == PMI_SUCCESS);
    CHECK(PMI_Get_size(&t->size) == PMI_SUCCESS);
    sntest_rank = t->rank;
    t->ptag = (uint8_t)gnit_env("PMI_GNI_PTAG");
    t->cookie = (uint32_t)gnit_env("PMI_GNI_COOKIE");
    t->dev_id = (uint32_t)gnit_env("PMI_GNI_DEV_ID");
    GNI_OK(GNI_CdmCreate(t->rank, t->ptag, t->cookie, cdm_modes, &t->cdm));
    GNI_OK(GNI_CdmAttach(t->cdm, t->dev_id, &t->nic_addr, &t->nic));
    GNI_OK(GNI_CqCreate(t->nic, cq_entries, 0, cq_mode, NULL, NULL, &t->cq));
    t->addrs = calloc(t->size, sizeof(uint32_t));
    t->eps = calloc(t->size, sizeof(gni_ep_handle_t));
    CHECK(t->addrs && t->eps);
    CHECK(PMI_Allgather(&t->nic_addr, t->addrs, sizeof(uint32_t)) == PMI_SUCCESS);
    for (int r = 0; r < t->size; r++) {
        GNI_OK(GNI_EpCreate(t->nic, t->cq, &t->eps[r]));
        GNI_OK(GNI_EpBind(t->eps[r], t->addrs[r], GNIT_RID(t->rank, r)));
    }
}

/* Rebinds every endpoint to the peer's inst_id (= rank here), as a program does before a
 * datagram exchange: datagrams match on (NIC address, remote_id == the peer's inst_id). */
static __attribute__((unused)) void gnit_bind_inst_ids(gnit_t *t)
{
    for (int r = 0; r < t->size; r++) GNI_OK(GNI_EpBind(t->eps[r], t->addrs[r], r));
}

static __attribute__((unused)) void gnit_init(gnit_t *t, uint32_t cq_entries)
{
    gnit_init_mode(t, cq_entries, GNI_CQ_BLOCKING, GNI_CDM_MODE_FORK_NOCOPY);
}

/* Exchanges a registration with every rank: handles[r], addrs[r] are rank r's. */
static __attribute__((unused)) void gnit_exchange_mem(gnit_t *t, void *buf, gni_mem_handle_t mh,
                              gni_mem_handle_t *handles, uint64_t *bases)
{
    uint64_t mine[3] = { (uint64_t)(uintptr_t)buf, mh.qword1, mh.qword2 };
    uint64_t *all = calloc((size_t)t->size * 3, sizeof(uint64_t));
    CHECK(all);
    CHECK(PMI_Allgather(mine, all, sizeof(mine)) == PMI_SUCCESS);
    for (int r = 0; r < t->size; r++) {
        bases[r] = all[r * 3];
        handles[r].qword1 = all[r * 3 + 1];
        handles[r].qword2 = all[r * 3 + 2];
    }
    free(all);
}

/* Waits for one event on cq (blocking CQ), failing the test on timeout. */
static __attribute__((unused)) gni_cq_entry_t gnit_wait(gni_cq_handle_t cq, gni_return_t want_rc)
{
    gni_cq_entry_t ev = 0;
    gni_return_t rc = GNI_CqWaitEvent(cq, 10000, &ev);
    if (rc != want_rc) SN_FAIL("GNI_CqWaitEvent returned %d (%s), expected %d", (int)rc, gnit_rc(rc), (int)want_rc);
    return ev;
}

static __attribute__((unused)) void gnit_fini(gnit_t *t)
{
    CHECK(PMI_Barrier() == PMI_SUCCESS);
    for (int r = 0; r < t->size; r++) {
        GNI_OK(GNI_EpUnbind(t->eps[r]));
        GNI_OK(GNI_EpDestroy(t->eps[r]));
    }
    GNI_OK(GNI_CqDestroy(t->cq));
    GNI_OK(GNI_CdmDestroy(t->cdm));
    free(t->addrs);
    free(t->eps);
    CHECK(PMI_Finalize() == PMI_SUCCESS);
}
#endif
