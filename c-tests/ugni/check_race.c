/* The checker's data races (SOFTNIC_CHECK=1) between uGNI initiators, committed on purpose.
 * Rank 0 is the target; ranks 1 and 2 access the first 64 bytes of its window:
 *   race     rank 1 posts an FMA put with a local event and does not take its completion
 *            back; after a barrier rank 2 posts an RDMA put to the same bytes: nothing
 *            ordered them (rank 2 reports it, naming rank 1's put)
 *   getput   rank 1's get of those bytes is in flight when rank 2's put is posted
 *   clean    rank 1 takes its put's completion back before the barrier, then rank 2
 *            puts; both put at once to different bytes; both get the same bytes at once
 *            (reads never race each other): no finding
 * Needs 3 ranks.  Prints "check_race: rank R MODE done". */
#include "data_util.h"

static gnit_t t;
static dt_pair_t p;

static void post(gni_post_descriptor_t *d, gni_post_type_t type, uint64_t *local, uint64_t off)
{
    dt_desc(d, type, GNI_CQMODE_GLOBAL_EVENT, local, type == GNI_POST_FMA_GET || type == GNI_POST_RDMA_GET ? p.dmh : p.smh, p.bs[0] + off, p.hs[0], 64);
    if (type == GNI_POST_RDMA_PUT || type == GNI_POST_RDMA_GET) GNI_OK(GNI_PostRdma(t.eps[0], d));
    else GNI_OK(GNI_PostFma(t.eps[0], d));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "clean";
    gnit_init(&t, 64);
    if (t.size != 3) SKIP("needs 3 ranks");
    dt_pair(&t, &p);
    for (int i = 0; i < 16; i++) p.src[i] = 0x7ace0000u + (uint64_t)t.rank * 16 + (uint64_t)i;
    gni_post_descriptor_t d;
    uint64_t *into = p.dst + 256;
    if (!strcmp(mode, "race") || !strcmp(mode, "getput")) {
        if (t.rank == 1) post(&d, !strcmp(mode, "race") ? GNI_POST_FMA_PUT : GNI_POST_FMA_GET, !strcmp(mode, "race") ? p.src : into, 0);
        dt_barrier();
        if (t.rank == 2) post(&d, GNI_POST_RDMA_PUT, p.src, 32); /* overlaps bytes 32..63 */
        dt_barrier();
        if (t.rank != 0) dt_complete(t.cq, &d, GNI_RC_SUCCESS);
    } else {
        /* Ordered: rank 1's put completes (taken back) before the barrier. */
        if (t.rank == 1) {
            post(&d, GNI_POST_FMA_PUT, p.src, 0);
            dt_complete(t.cq, &d, GNI_RC_SUCCESS);
        }
        dt_barrier();
        if (t.rank == 2) {
            post(&d, GNI_POST_FMA_PUT, p.src, 0);
            dt_complete(t.cq, &d, GNI_RC_SUCCESS);
        }
        dt_barrier();
        /* At once, different bytes. */
        if (t.rank != 0) post(&d, GNI_POST_FMA_PUT, p.src, t.rank == 1 ? 0 : 64);
        dt_barrier();
        if (t.rank != 0) dt_complete(t.cq, &d, GNI_RC_SUCCESS);
        dt_barrier();
        /* At once, the same bytes, both reading. */
        if (t.rank != 0) post(&d, GNI_POST_FMA_GET, into, 0);
        dt_barrier();
        if (t.rank != 0) dt_complete(t.cq, &d, GNI_RC_SUCCESS);
    }
    dt_barrier();
    printf("check_race: rank %d %s done\n", t.rank, mode);
    fflush(stdout);
    gnit_fini(&t);
    return 0;
}
