/* Two concurrent uTofu jobs on one machine (c-tests/tools/twojobs; any launcher or none).
 * Both get the CQs Fugaku's table prefers for their local ranks (same coordinates, same
 * TNI and CQ: the same VCQ ids).  Job A's rank r registers canary buffers under STag 13
 * and with reg_mem, creates a second VCQ (component 3, the next CQ) and writes its VCQ
 * ids and STADDs to a file.  Job B's rank r, which registered only STag 20, puts and gets
 * with A's ids: they are looked up in B's own namespace, so an id equal to one of B's
 * VCQs names B's VCQ (where STag 13 and A's reg_mem row are not registered:
 * UTOFU_ERR_MRQ_RMT_MEMORY) and A's second VCQ names nothing (UTOFU_ERR_MRQ_PEER).  B's
 * own buffer is untouched by the failed gets; after B is done, A's canaries are intact
 * and A's MRQ received nothing. */
#include "fugaku.h"
#include "xjob.h"
#include <mpi.h>

#define LEN 4096
#define STAG_A 13
#define STAG_B 20

static uint8_t abuf[LEN] __attribute__((aligned(256)));
static uint8_t aregion[LEN] __attribute__((aligned(256)));
static uint8_t bbuf[LEN] __attribute__((aligned(256)));

struct rec { utofu_vcq_id_t vcq, vcq2; utofu_stadd_t stag_stadd, reg_stadd; };

/* One operation against A's (vcq, stadd) from B's VCQ h: the error it must meet. */
static void attempt(utofu_vcq_hdl_t h, utofu_vcq_id_t vcq, utofu_stadd_t local, utofu_stadd_t remote, int get, int want)
{
    struct utofu_mrq_notice n;
    void *cb;
    unsigned long fl = UTOFU_ONESIDED_FLAG_TCQ_NOTICE | UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE;
    if (get) UCHECK(utofu_get(h, vcq, local, remote, 64, 0, fl, NULL));
    else UCHECK(utofu_put(h, vcq, local, remote, 64, 0, fl, NULL));
    int rc = wait_mrq(h, &n);
    if (rc != want) SN_FAIL("%s to another job's vcq %#llx stadd %#llx: MRQ %d, expected %d", get ? "get" : "put",
                            (unsigned long long)vcq, (unsigned long long)remote, rc, want);
    while (utofu_poll_tcq(h, 0, &cb) == UTOFU_SUCCESS) {}
    while (utofu_poll_mrq(h, 0, &n) != UTOFU_ERR_NOT_FOUND) {}
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    sntest_rank = rank;
    if (argc < 2) SN_FAIL("usage: xjob_utofu owner|intruder");
    int owner = !strcmp(argv[1], "owner");
    struct place *pl = job_places(rank, n);
    utofu_tni_id_t tni; utofu_cq_id_t cq;
    fugaku_tni_cq(pl[rank].ppn, pl[rank].local, &tni, &cq);

    /* Our preferred CQ, although the other job has (or will have) the same VCQ ids. */
    utofu_vcq_hdl_t h;
    utofu_vcq_id_t id;
    UCHECK(utofu_create_vcq(tni, 0, &h));
    UCHECK(utofu_query_vcq_id(h, &id));
    utofu_tni_id_t qt; utofu_cq_id_t qc; uint8_t co[6]; uint16_t extra;
    UCHECK(utofu_query_vcq_info(id, co, &qt, &qc, &extra));
    if (qt != tni || qc != cq) SN_FAIL("VCQ on TNI %d CQ %d, Fugaku's table gives TNI %d CQ %d", qt, qc, tni, cq);

    if (owner) {
        struct rec r;
        utofu_vcq_hdl_t h2;
        memset(abuf, XJOB_CANARY, LEN);
        memset(aregion, XJOB_CANARY, LEN);
        UCHECK(utofu_reg_mem_with_stag(h, abuf, LEN, STAG_A, 0, &r.stag_stadd));
        UCHECK(utofu_reg_mem(h, aregion, LEN, 0, &r.reg_stadd));
        UCHECK(utofu_create_vcq_with_cmp_id(tni, 3, 0, &h2));
        UCHECK(utofu_query_vcq_id(h2, &r.vcq2));
        r.vcq = id;
        xjob_publish(rank, &r, sizeof r);
        xjob_wait_done(rank);
        MPI_Barrier(MPI_COMM_WORLD);
        if (!xjob_intact(abuf, LEN) || !xjob_intact(aregion, LEN)) SN_FAIL("another job changed our registered memory");
        expect_empty(h);
        expect_empty(h2);
        UCHECK(utofu_free_vcq(h2));
    } else {
        struct rec r;
        utofu_stadd_t mine;
        memset(bbuf, 0x5a, LEN);
        UCHECK(utofu_reg_mem_with_stag(h, bbuf, LEN, STAG_B, 0, &mine));
        xjob_learn(rank, &r, sizeof r);
        if (r.vcq != id) SN_FAIL("job A's rank %d has VCQ %#llx, we %#llx: not the same preferred CQ", rank, (unsigned long long)r.vcq, (unsigned long long)id);
        attempt(h, r.vcq, mine, r.stag_stadd, 0, UTOFU_ERR_MRQ_RMT_MEMORY);
        attempt(h, r.vcq, mine, r.stag_stadd, 1, UTOFU_ERR_MRQ_RMT_MEMORY);
        attempt(h, r.vcq, mine, r.reg_stadd, 0, UTOFU_ERR_MRQ_RMT_MEMORY);
        attempt(h, r.vcq, mine, r.reg_stadd, 1, UTOFU_ERR_MRQ_RMT_MEMORY);
        attempt(h, r.vcq2, mine, r.stag_stadd, 0, UTOFU_ERR_MRQ_PEER);
        attempt(h, r.vcq2, mine, r.reg_stadd, 1, UTOFU_ERR_MRQ_PEER);
        for (int i = 0; i < LEN; i++) if (bbuf[i] != 0x5a) SN_FAIL("a failed get changed our buffer at %d", i);
        /* Our own STag works at that very id (it is ours in our namespace). */
        utofu_stadd_t their_view;
        UCHECK(utofu_query_stadd(r.vcq, STAG_B, &their_view));
        CHECK(their_view == mine);
        MPI_Barrier(MPI_COMM_WORLD);
        xjob_done(rank);
    }
    UCHECK(utofu_free_vcq(h));
    printf("xjob_utofu: %s rank %d ok\n", owner ? "owner" : "intruder", rank);
    MPI_Finalize();
    return 0;
}
