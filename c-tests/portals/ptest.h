/* Helpers for the Portals tests: checked calls (codes printed by name), event
 * expectations, id exchange through PMI.  Programs include <portals3.h> the way
 * reference-implementation programs do. */
#ifndef PTEST_H
#define PTEST_H
#include "sntest.h"
#include <stdint.h>
#include <portals3.h>
#include <p3rt/p3rt.h>
#include <p3api/debug.h>

/* A call that must return `want` (PTL_OK, PTL_EQ_EMPTY, ...). */
#define PCHECK_RC(call, want) do { int rc_ = (call); if (rc_ != (want)) \
    SN_FAIL("%s returned %s, expected %s", #call, PtlErrorStr(rc_), PtlErrorStr(want)); } while (0)
#define PCHECK(call) PCHECK_RC(call, PTL_OK)

static const ptl_process_id_t ANY_ID = { PTL_NID_ANY, PTL_PID_ANY };

/* An MD over `buf`. */
static inline ptl_md_t md_of(void *buf, ptl_size_t len, int threshold, unsigned options, ptl_handle_eq_t eq)
{
    ptl_md_t md;
    memset(&md, 0, sizeof md);
    md.start = buf;
    md.length = len;
    md.threshold = threshold;
    md.options = options;
    md.eq_handle = eq;
    md.user_ptr = buf;
    return md;
}

/* Waits for the next event of `eq` (PtlEQWait) and checks its kind and ni_fail_type. */
static inline ptl_event_t expect_ev(ptl_handle_eq_t eq, ptl_event_kind_t kind, ptl_ni_fail_t fail)
{
    ptl_event_t ev;
    int rc = PtlEQWait(eq, &ev);
    if (rc != PTL_OK && rc != PTL_EQ_DROPPED) SN_FAIL("PtlEQWait returned %s", PtlErrorStr(rc));
    if (ev.type != kind)
        SN_FAIL("event %s (mlength %llu), expected %s", PtlEventKindStr(ev.type), (unsigned long long)ev.mlength, PtlEventKindStr(kind));
    if (ev.ni_fail_type != fail)
        SN_FAIL("%s with ni_fail_type %s, expected %s", PtlEventKindStr(kind), PtlNIFailStr(0, ev.ni_fail_type), PtlNIFailStr(0, fail));
    return ev;
}
#define EXPECT(eq, kind) expect_ev((eq), (kind), PTL_NI_OK)

/* The queue has nothing more. */
static inline void expect_empty(ptl_handle_eq_t eq)
{
    ptl_event_t ev;
    int rc = PtlEQGet(eq, &ev);
    if (rc != PTL_EQ_EMPTY) SN_FAIL("expected an empty queue, got %s (%s)", PtlErrorStr(rc), rc == PTL_OK || rc == PTL_EQ_DROPPED ? PtlEventKindStr(ev.type) : "-");
}

/* Takes every event left in the queue; returns how many. */
static inline int drain(ptl_handle_eq_t eq)
{
    ptl_event_t ev;
    int n = 0, rc;
    while ((rc = PtlEQGet(eq, &ev)) == PTL_OK || rc == PTL_EQ_DROPPED) n++;
    return n;
}

static inline ptl_sr_value_t status_reg(ptl_handle_ni_t ni, ptl_sr_index_t sr)
{
    ptl_sr_value_t v = 0;
    PCHECK(PtlNIStatus(ni, sr, &v));
    return v;
}
/* A job of PMI ranks with one NI each: rank, size, the NI and the right neighbour's id. */
typedef struct {
    int rank, n;
    ptl_handle_ni_t ni;
    ptl_process_id_t right;
} pt_job_t;

/* Needs <pmi.h> included before this header's user calls it. */
#define PT_JOB_INIT(j) do { int spawned_, maxif_; \
    CHECK_EQ(PMI_Init(&spawned_), PMI_SUCCESS); \
    CHECK_EQ(PMI_Get_rank(&(j)->rank), PMI_SUCCESS); \
    CHECK_EQ(PMI_Get_size(&(j)->n), PMI_SUCCESS); \
    sntest_rank = (j)->rank; \
    PCHECK(PtlInit(&maxif_)); \
    PCHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &(j)->ni)); \
    PCHECK(PtlGetRankId((j)->ni, ((j)->rank + 1) % (j)->n, &(j)->right)); } while (0)

/* The usual sender and receiver of the fault tests: an event queue of 16, a put target on
 * portal 3 (match bits 1) over `in` logging nothing, and `out` bound as the source MD
 * logging its END events into the queue. */
static inline void pt_put_pair(pt_job_t *j, void *out, ptl_size_t olen, void *in, ptl_size_t ilen, ptl_handle_eq_t *seq, ptl_handle_md_t *src)
{
    PCHECK(PtlEQAlloc(j->ni, 16, PTL_EQ_HANDLER_NONE, seq));
    ptl_handle_me_t meh;
    PCHECK(PtlMEAttach(j->ni, 3, ANY_ID, 1, 0, PTL_RETAIN, PTL_INS_AFTER, &meh));
    PCHECK(PtlMDAttach(meh, md_of(in, ilen, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_END_DISABLE, PTL_EQ_NONE), PTL_RETAIN, NULL));
    PCHECK(PtlMDBind(j->ni, md_of(out, olen, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, *seq), PTL_RETAIN, src));
}

/* The fault tests' start: declares the job `j`, the queue `seq` and the source MD `src`,
 * sets up pt_put_pair over the arrays `out` and `in`, and meets every rank. */
#define PT_PUT_PAIR_JOB(j, seq, src, out, in) \
    pt_job_t j; \
    PT_JOB_INIT(&j); \
    ptl_handle_eq_t seq; \
    ptl_handle_md_t src; \
    pt_put_pair(&j, out, sizeof out, in, sizeof in, &seq, &src); \
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS)

#endif
