/* Helpers shared by the DMAPP C tests. */
#ifndef DMTEST_H
#define DMTEST_H
#include <stdint.h>
#include <string.h>
#include "pmi.h"
#include "dmapp.h"
#include "sntest.h"

static dmapp_jobinfo_t job;
static int me, npes;

#define RC_EQ(call, want) CHECK_EQ((call), (want))
#define OK(call) RC_EQ((call), DMAPP_RC_SUCCESS)

static void dm_init_n(uint32_t max_nb) {
    dmapp_rma_attrs_t req = {0}, act = {0};
    req.max_outstanding_nb = max_nb;
    req.offload_threshold = DMAPP_OFFLOAD_THRESHOLD;
    req.put_relaxed_ordering = DMAPP_ROUTING_DETERMINISTIC;
    req.get_relaxed_ordering = DMAPP_ROUTING_ADAPTIVE;
    req.max_concurrency = 1;
    OK(dmapp_init(&req, &act));
    OK(dmapp_get_jobinfo(&job));
    me = job.pe;
    npes = job.npes;
    sntest_rank = me;
}

__attribute__((unused)) static void dm_init(void) { dm_init_n(DMAPP_DEF_OUTSTANDING_NB); }

__attribute__((unused)) static void barrier(void) { CHECK_EQ(PMI_Barrier(), PMI_SUCCESS); }

__attribute__((unused)) static dmapp_seg_desc_t *sheap(void) { return &job.sheap_seg; }
__attribute__((unused)) static dmapp_seg_desc_t *dseg(void) { return &job.data_seg; }

/* Field-wise: the struct has a padding byte. */
__attribute__((unused)) static int attrs_eq(const dmapp_rma_attrs_t *a, const dmapp_rma_attrs_t *b) {
    return a->max_outstanding_nb == b->max_outstanding_nb && a->offload_threshold == b->offload_threshold &&
           a->put_relaxed_ordering == b->put_relaxed_ordering && a->get_relaxed_ordering == b->get_relaxed_ordering &&
           a->max_concurrency == b->max_concurrency;
}

/* A strided pset description (n PEs from base, stride apart). */
__attribute__((unused)) static dmapp_c_pset_desc_t dm_strided(uint32_t n, uint32_t base, uint32_t stride) {
    dmapp_c_pset_desc_t d;
    memset(&d, 0, sizeof d);
    d.type = DMAPP_C_PSET_DELIMITER_STRIDED;
    d.u.stride_type.n_pes = n;
    d.u.stride_type.base_pe = base;
    d.u.stride_type.stride_pe = stride;
    return d;
}

#endif
