/* softnic Portals benchmarks: `snrun -n 2 bench/pin.sh portals_bench <benchmark>`
 * (process ids from the Portals runtime, PMI barriers between sizes).
 *
 *   put_pingpong  PtlPut of N bytes (no ack) into the peer's MD; the receiver waits for
 *                 its PUT_END with PtlEQWait and answers the same way; 8 B - 64 KiB;
 *                 half the round trip
 *   get_lat       PtlGet of N bytes from the peer's MD, waiting for REPLY_END with
 *                 PtlEQWait: a blocking get; 8 B - 64 KiB; time per get
 *   getput_lat    PtlGetPut of 8 B (Portals 3.2's one remote atomic: a swap) into the
 *                 peer's MD, waiting for REPLY_END with PtlEQWait; time per swap (the
 *                 row beside the other APIs' fetch-adds)
 *   put_bw        a window of 64 PtlPut of N bytes (fewer above 4 MiB) into the peer's
 *                 MD, the last one acknowledged, then that ACK with PtlEQWait;
 *                 4 KiB - 64 MiB.  The sending MD logs no SEND_END
 *                 (PTL_MD_EVENT_END_DISABLE): the work of UCX's put_bw, whose puts
 *                 complete together at one flush (here: the last put's ACK, which
 *                 Portals orders after the puts before it)
 *   put_bw_events put_bw with a SEND_END logged for every put, each taken with
 *                 PtlEQWait while waiting for the ACK (a program that watches every put)
 *   op_cost       one 8 B put step by step (time per call): cost_rejected (PtlPutRegion
 *                 of an invalid MD handle), cost_put_event (a put without ack, its
 *                 SEND_END waited for), cost_put_ack (with an ack, waited for),
 *                 cost_eq_empty (PtlEQGet of an empty queue)
 *
 * Rank 0 is the origin; rank 1 only answers the ping-pong or waits in PMI_Barrier.
 * The receiving MD uses remotely managed offsets (every put lands at offset 0); outside
 * the ping-pong it logs no events (rank 1 reads none). */
#include "bench.h"
#include <pmi.h>
#include <portals3.h>

#define LIB "softnic-portals"
#define PT 4

static const char *bench_name = "init";
static int me;
static ptl_handle_ni_t ni;
static ptl_handle_eq_t eq, seq;
static ptl_handle_md_t smd, gp_get, gp_put; /* gp_*: PtlGetPut's 8-byte MDs */
static ptl_process_id_t peer;
static uint8_t *buf;          /* send half [0, BENCH_MAX_BW), receive half after it */

static void fail(const char *what, int rc)
{
    char msg[256];
    snprintf(msg, sizeof msg, "%s returned %s on rank %d", what, PtlErrorStr((unsigned)rc), me);
    bench_skip_line(LIB, bench_name, msg);
    fprintf(stderr, "portals_bench %s: %s\n", bench_name, msg);
    PMI_Abort(BENCH_SKIP_EXIT, msg);
    exit(BENCH_SKIP_EXIT);
}

#define P(call) do { int rc_ = (call); if (rc_ != PTL_OK) fail(#call, rc_); } while (0)

/* Waits (PtlEQWait) for an event of `kind` on `q`. */
static void wait_kind(ptl_handle_eq_t q, ptl_event_kind_t kind)
{
    ptl_event_t ev;
    do {
        int rc = PtlEQWait(q, &ev);
        if (rc != PTL_OK) fail("PtlEQWait", rc);
    } while (ev.type != kind);
}

static void pp_send(size_t size)
{
    P(PtlPutRegion(smd, 0, size, PTL_NO_ACK_REQ, peer, PT, 0, 0, 0, 0));
}

static void pp_wait(size_t size)
{
    (void)size;
    wait_kind(eq, PTL_EVENT_PUT_END);
}

static void get_op(size_t size)
{
    P(PtlGetRegion(smd, 0, size, peer, PT, 0, 0, 0));
    wait_kind(seq, PTL_EVENT_REPLY_END);
}

static void getput_op(size_t size)
{
    (void)size;
    P(PtlGetPut(gp_get, gp_put, peer, PT, 0, 0, 0, 0));
    wait_kind(seq, PTL_EVENT_REPLY_END);
}

static void bw_issue(size_t size, long j)
{
    long w = bench_bw_window(size);
    P(PtlPutRegion(smd, 0, size, j == w - 1 ? PTL_ACK_REQ : PTL_NO_ACK_REQ, peer, PT, 0, 0, 0, 0));
}

static void bw_complete(size_t size)
{
    (void)size;
    wait_kind(seq, PTL_EVENT_ACK);
}

/* op_cost: one 8 B put step by step (time per call, rank 0). */
static void cost_rejected(size_t size)
{
    if (PtlPutRegion(PTL_INVALID_HANDLE, 0, size, PTL_NO_ACK_REQ, peer, PT, 0, 0, 0, 0) != PTL_MD_INVALID)
        fail("PtlPutRegion with an invalid MD handle", PTL_FAIL);
}
static void cost_put_event(size_t size)
{
    P(PtlPutRegion(smd, 0, size, PTL_NO_ACK_REQ, peer, PT, 0, 0, 0, 0));
    wait_kind(seq, PTL_EVENT_SEND_END);
}
static void cost_put_ack(size_t size)
{
    P(PtlPutRegion(smd, 0, size, PTL_ACK_REQ, peer, PT, 0, 0, 0, 0));
    wait_kind(seq, PTL_EVENT_ACK);
}
static void cost_eq_empty(size_t size)
{
    ptl_event_t ev;
    (void)size;
    if (PtlEQGet(seq, &ev) != PTL_EQ_EMPTY) fail("PtlEQGet on an empty queue", PTL_FAIL);
}

static void sync_all(void)
{
    if (PMI_Barrier() != PMI_SUCCESS) fail("PMI_Barrier", PTL_FAIL);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: portals_bench put_pingpong|get_lat|getput_lat|put_bw|put_bw_events|op_cost\n");
        return 2;
    }
    bench_name = argv[1];
    int spawned, n, maxif;
    PMI_Init(&spawned);
    PMI_Get_rank(&me);
    PMI_Get_size(&n);
    if (n != 2) fail("PMI_Get_size (need 2 ranks)", PTL_FAIL);
    P(PtlInit(&maxif));
    P(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    P(PtlSetRank(ni, (unsigned)-1, (unsigned)-1));
    P(PtlGetRankId(ni, (unsigned)(1 - me), &peer));
    buf = aligned_alloc(4096, 2 * (size_t)BENCH_MAX_BW);
    memset(buf, 0, 2 * (size_t)BENCH_MAX_BW);
    P(PtlEQAlloc(ni, 1024, PTL_EQ_HANDLER_NONE, &eq));
    P(PtlEQAlloc(ni, 1024, PTL_EQ_HANDLER_NONE, &seq));
    ptl_md_t md;
    memset(&md, 0, sizeof md);
    md.start = buf + BENCH_MAX_BW;
    md.length = BENCH_MAX_BW;
    md.threshold = PTL_MD_THRESH_INF;
    md.options = PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE;
    /* In get_lat and put_bw the target never reads its queue, so its MD logs nothing, as
     * such a program's would: a queue nobody reads overwrites its oldest event, one slot
     * write per operation (portals3.h). */
    if (strcmp(bench_name, "put_pingpong")) md.options |= PTL_MD_EVENT_END_DISABLE;
    md.eq_handle = eq;
    ptl_process_id_t any = { PTL_NID_ANY, PTL_PID_ANY };
    ptl_handle_me_t meh;
    P(PtlMEAttach(ni, PT, any, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &meh));
    P(PtlMDAttach(meh, md, PTL_RETAIN, NULL));
    md.start = buf;
    md.options = PTL_MD_EVENT_START_DISABLE;
    if (!strcmp(bench_name, "put_bw")) md.options |= PTL_MD_EVENT_END_DISABLE;
    md.eq_handle = seq;
    P(PtlMDBind(ni, md, PTL_RETAIN, &smd));
    if (!strcmp(bench_name, "getput_lat")) {
        /* The swap's two MDs: the new value is read from one, the old lands in the other
         * (two places: the get half must not overwrite what the put half sends). */
        md.length = 8;
        md.options = PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_END_DISABLE;
        md.eq_handle = PTL_EQ_NONE;
        P(PtlMDBind(ni, md, PTL_RETAIN, &gp_put));
        md.start = buf + 64;
        md.options = PTL_MD_EVENT_START_DISABLE;
        md.eq_handle = seq;
        P(PtlMDBind(ni, md, PTL_RETAIN, &gp_get));
    }
    sync_all();

    if (!strcmp(bench_name, "put_pingpong")) {
        bench_pingpong_run(me, LIB, "put_pingpong", bench_lat_sizes, BENCH_NELEM(bench_lat_sizes), pp_send, pp_wait, sync_all, NULL);
    } else if (!strcmp(bench_name, "get_lat")) {
        bench_op_lat_sizes(me, LIB, "get_lat", get_op, sync_all);
    } else if (!strcmp(bench_name, "getput_lat")) {
        if (me == 0) bench_op_lat(LIB, "getput_lat", 8, getput_op);
        sync_all();
    } else if (!strcmp(bench_name, "op_cost")) {
        static const bench_cost_t steps[] = { { "cost_rejected", cost_rejected }, { "cost_put_event", cost_put_event },
                                              { "cost_put_ack", cost_put_ack }, { "cost_eq_empty", cost_eq_empty } };
        bench_costs(me, LIB, steps, BENCH_NELEM(steps));
        sync_all();
    } else if (!strcmp(bench_name, "put_bw") || !strcmp(bench_name, "put_bw_events")) {
        bench_bw_run(me, LIB, bench_name, bw_issue, bw_complete, sync_all);
    } else {
        fprintf(stderr, "portals_bench: unknown benchmark %s\n", bench_name);
        return 2;
    }
    P(PtlNIFini(ni));
    PtlFini();
    PMI_Finalize();
    return 0;
}
