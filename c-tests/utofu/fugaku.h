/* What a uTofu program for Fugaku computes instead of exchanging: the node layout of the
 * job (jTofu), the TNI, CQ and first BGs of every rank from processes per node and local
 * rank (Fugaku's assignment, the table in utofu.h), and VCQ / VBG ids in Fujitsu's bit
 * layout.  Written from the table, independently of the library. */
#ifndef FUGAKU_H
#define FUGAKU_H
#include <jtofu.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include "utest.h"

/* Rank r's place: node coordinates, local rank, processes on its node. */
struct place { uint8_t coords[6]; int local, ppn; };

/* Every rank's place, from jTofu's map of the job (job id 1). */
static inline struct place *job_places(int rank, int n)
{
    CHECK_EQ(jtofu_initialize(1, (jtofu_rank_t)rank, NULL), JTOFU_SUCCESS);
    struct place *p = calloc((size_t)n, sizeof *p);
    for (int r = 0; r < n; r++) {
        union jtofu_phys_coords pc;
        CHECK_EQ(jtofu_query_phys_coords(1, (jtofu_rank_t)r, &pc), JTOFU_SUCCESS);
        memcpy(p[r].coords, pc.a, 6);
    }
    for (int r = 0; r < n; r++)
        for (int q = 0; q < n; q++)
            if (!memcmp(p[q].coords, p[r].coords, 6)) { p[r].ppn++; if (q < r) p[r].local++; }
    return p;
}

/* Fugaku's share of local rank r of ppn: TNI groups, the first CQ of each slot. */
static inline int fugaku_class(int ppn, const int **starts)
{
    static const int one[] = { 0 }, two[] = { 0, 6 }, three[] = { 0, 4, 8 }, four[] = { 0, 2, 5, 8 },
        five[] = { 0, 2, 5, 8, 10 }, six[] = { 0, 2, 5, 8, 9, 10 }, seven[] = { 0, 2, 5, 6, 8, 9, 10 },
        eight[] = { 0, 2, 4, 5, 6, 8, 9, 10 };
    int slots;
    if (ppn == 1) { *starts = one; slots = 1; }
    else if (ppn == 2) { *starts = two; slots = 2; }
    else if (ppn == 3) { *starts = three; slots = 3; }
    else if (ppn <= 24) { *starts = four; slots = 4; }
    else if (ppn <= 30) { *starts = five; slots = 5; }
    else if (ppn <= 36) { *starts = six; slots = 6; }
    else if (ppn <= 42) { *starts = seven; slots = 7; }
    else { *starts = eight; slots = 8; }
    return slots;
}

static inline int fugaku_groups(int ppn) { return ppn <= 4 ? 1 : ppn <= 8 ? 2 : ppn <= 12 ? 3 : 6; }

/* The TNI rank r uses (the first its utofu_get_*_tnis lists) and its CQ there. */
static inline void fugaku_tni_cq(int ppn, int r, utofu_tni_id_t *tni, utofu_cq_id_t *cq)
{
    const int *starts;
    fugaku_class(ppn, &starts);
    int g = fugaku_groups(ppn);
    *tni = (utofu_tni_id_t)(g == 1 ? r : (r % g) * (6 / g));
    *cq = (utofu_cq_id_t)starts[r / g];
}

/* The first start/end BG and the first relay BG of rank r on its TNIs. */
static inline void fugaku_bgs(int ppn, int r, int *start, int *relay)
{
    const int *starts;
    int k = fugaku_class(ppn, &starts), j = r / fugaku_groups(ppn);
    *start = j * (16 / k);
    *relay = 16 + j * (32 / k);
}

/* Two 64-bit ids (or STADDs) equal, both printed in hex otherwise. */
#define CHECK_HEX(got, want) do { uint64_t g_ = (got), w_ = (want); \
    if (g_ != w_) SN_FAIL("%s == %#llx, expected %#llx", #got, (unsigned long long)g_, (unsigned long long)w_); } while (0)

static inline uint64_t abc_bits(uint8_t a, uint8_t b, uint8_t c) { return (uint64_t)a | (uint64_t)b << 1 | (uint64_t)c << 3; }

/* Coordinates in bits 32-59, TNI in 61-63: what VCQ and VBG ids share. */
static inline uint64_t place_bits(const uint8_t *c, int tni)
{
    return (uint64_t)c[0] << 32 | (uint64_t)c[1] << 40 | (uint64_t)c[2] << 48 | abc_bits(c[3], c[4], c[5]) << 56 | (uint64_t)tni << 61;
}

/* A VCQ id as Fujitsu's library gives it: CQ, component (bit 27 set), the node's own
 * A, B, C as path. */
static inline uint64_t vcq_id_of(const uint8_t *c, int tni, int cq, int cmp)
{
    return place_bits(c, tni) | abc_bits(c[3], c[4], c[5]) << 28 | (8ULL | (uint64_t)cmp) << 24 | (uint64_t)cq;
}

/* A VCQ id built from coordinates, TNI and CQ alone. */
static inline uint64_t bare_vcq_id(const uint8_t *c, int tni, int cq) { return place_bits(c, tni) | (uint64_t)cq; }

static inline uint64_t vbg_id_of(const uint8_t *c, int tni, int bg) { return place_bits(c, tni) | (uint64_t)bg; }

/* Polls the MRQ, yielding now and then (more ranks than cores). */
static inline int poll_mrq_yield(utofu_vcq_hdl_t h, struct utofu_mrq_notice *n)
{
    int rc;
    long spins = 0;
    while ((rc = utofu_poll_mrq(h, 0, n)) == UTOFU_ERR_NOT_FOUND) {
        if (++spins % 256 == 0) sched_yield();
        if (spins > 400000000L) SN_FAIL("no MRQ notice");
    }
    return rc;
}
#endif
