/* The checker's data races (SOFTNIC_CHECK=1) between uTofu initiators, committed on purpose.
 * One rank is the target (rank 0, or the rank given after the mode); the two others, A and
 * B (the lower first), access its window, whose VCQ id and STADD every rank learns through
 * MPI_Allgather:
 *   race     A puts asking for a TCQ notice (after a put it completed, so this one takes
 *            the pinned fast path) and does not poll that notice; after a barrier B puts
 *            to overlapping bytes asking for a local MRQ notice: nothing ordered them (B
 *            reports it, naming A's put)
 *   getput   A's get of those bytes (local MRQ notice not polled yet) is in flight when
 *            B's put is posted
 *   armwput  A's ARMW of a word is in flight when B's put to that word is posted (an ARMW
 *            races with a put, not with another ARMW nor with a get)
 *   clean    ordered by A polling its notice before the barrier; ordered by the target
 *            polling the remote notice of A's put (A polls its TCQ notice only later); at
 *            once to different bytes; two gets of the same bytes at once; two ARMWs and
 *            a get of the same word at once: no finding
 * Needs 3 ranks.  Prints "utofu_check_race: rank R MODE done". */
#include "utest.h"
#include <mpi.h>

#define TCQ UTOFU_ONESIDED_FLAG_TCQ_NOTICE
#define LCL UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE
#define RMT UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE

static uint64_t win[64] __attribute__((aligned(256)));  /* the target's window (512 bytes) */
static uint64_t src[16] __attribute__((aligned(256)));
static uint64_t into[16] __attribute__((aligned(256))); /* gets land here */
static utofu_vcq_hdl_t h;

static void tcq_done(void)
{
    void *cb;
    UCHECK(wait_tcq(h, &cb));
}

static void mrq_done(int type)
{
    struct utofu_mrq_notice n;
    UCHECK(wait_mrq(h, &n));
    CHECK_EQ(n.notice_type, type);
}

static void barrier(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    sntest_rank = rank;
    const char *mode = argc > 1 ? argv[1] : "clean";
    if (n != 3) SKIP("needs 3 ranks");
    int target = argc > 2 ? atoi(argv[2]) : 0;
    CHECK(target >= 0 && target < 3);
    int a = target == 0 ? 1 : 0, b = 3 - target - a;

    UCHECK(utofu_create_vcq(0, 0, &h));
    utofu_vcq_id_t me;
    UCHECK(utofu_query_vcq_id(h, &me));
    utofu_stadd_t s_win, s_src, s_into;
    UCHECK(utofu_reg_mem(h, win, sizeof win, 0, &s_win));
    UCHECK(utofu_reg_mem(h, src, sizeof src, 0, &s_src));
    UCHECK(utofu_reg_mem(h, into, sizeof into, 0, &s_into));
    uint64_t mine[2] = { me, s_win }, all[6];
    MPI_Allgather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, MPI_COMM_WORLD);
    utofu_vcq_id_t tid = all[2 * target];
    utofu_stadd_t tw = all[2 * target + 1];
    for (int i = 0; i < 16; i++) src[i] = 0x7ace0000u + (uint64_t)rank * 16 + (uint64_t)i;
    barrier();

    if (!strcmp(mode, "race")) {
        if (rank == a) {
            UCHECK(utofu_put(h, tid, s_src, tw + 256, 64, 0, TCQ, NULL));
            tcq_done();
            UCHECK(utofu_put(h, tid, s_src, tw, 64, 0, TCQ, NULL));
        }
        barrier();
        if (rank == b) UCHECK(utofu_put(h, tid, s_src, tw + 32, 64, 0, LCL, NULL)); /* overlaps 32..63 */
        barrier();
        if (rank == a) tcq_done();
        if (rank == b) mrq_done(UTOFU_MRQ_TYPE_LCL_PUT);
    } else if (!strcmp(mode, "getput")) {
        if (rank == a) UCHECK(utofu_get(h, tid, s_into, tw, 64, 0, LCL, NULL));
        barrier();
        if (rank == b) UCHECK(utofu_put(h, tid, s_src, tw + 32, 64, 0, TCQ, NULL));
        barrier();
        if (rank == a) mrq_done(UTOFU_MRQ_TYPE_LCL_GET);
        if (rank == b) tcq_done();
    } else if (!strcmp(mode, "armwput")) {
        if (rank == a) UCHECK(utofu_armw8(h, tid, UTOFU_ARMW_OP_ADD, 1, tw + 8 * 40, 0, LCL, NULL));
        barrier();
        if (rank == b) UCHECK(utofu_put(h, tid, s_src, tw + 8 * 36, 64, 0, TCQ, NULL)); /* words 36..43 */
        barrier();
        if (rank == a) mrq_done(UTOFU_MRQ_TYPE_LCL_ARMW);
        if (rank == b) tcq_done();
    } else {
        /* Ordered: A's put completes (its notice polled) before the barrier. */
        if (rank == a) {
            UCHECK(utofu_put(h, tid, s_src, tw, 64, 0, TCQ, NULL));
            tcq_done();
        }
        barrier();
        if (rank == b) {
            UCHECK(utofu_put(h, tid, s_src, tw, 64, 0, LCL, NULL));
            mrq_done(UTOFU_MRQ_TYPE_LCL_PUT);
        }
        barrier();
        /* Ordered by the target: it polls the remote notice of A's put, then B writes. */
        if (rank == a) UCHECK(utofu_put(h, tid, s_src, tw, 64, 0, TCQ | RMT, NULL));
        if (rank == target) mrq_done(UTOFU_MRQ_TYPE_RMT_PUT);
        barrier();
        if (rank == b) {
            UCHECK(utofu_put(h, tid, s_src, tw, 64, 0, LCL, NULL));
            mrq_done(UTOFU_MRQ_TYPE_LCL_PUT);
        }
        barrier();
        if (rank == a) tcq_done();
        barrier();
        /* At once, different bytes. */
        if (rank == a) UCHECK(utofu_put(h, tid, s_src, tw, 64, 0, LCL, NULL));
        if (rank == b) UCHECK(utofu_put(h, tid, s_src, tw + 64, 64, 0, TCQ, NULL));
        barrier();
        if (rank == a) mrq_done(UTOFU_MRQ_TYPE_LCL_PUT);
        if (rank == b) tcq_done();
        barrier();
        /* At once, the same bytes, both reading. */
        if (rank != target) UCHECK(utofu_get(h, tid, s_into, tw, 64, 0, LCL, NULL));
        barrier();
        if (rank != target) mrq_done(UTOFU_MRQ_TYPE_LCL_GET);
        barrier();
        /* At once on one word: two ARMWs (atomic), and a get of it. */
        if (rank != target) UCHECK(utofu_armw8(h, tid, UTOFU_ARMW_OP_ADD, 1, tw + 8 * 40, 0, LCL, NULL));
        if (rank == b) UCHECK(utofu_get(h, tid, s_into, tw + 8 * 36, 64, 0, LCL, NULL));
        barrier();
        if (rank != target) mrq_done(UTOFU_MRQ_TYPE_LCL_ARMW);
        if (rank == b) mrq_done(UTOFU_MRQ_TYPE_LCL_GET);
        barrier();
        if (rank == target) CHECK_EQ(win[40], 2);
    }
    barrier();
    expect_empty(h);
    printf("utofu_check_race: rank %d %s done\n", rank, mode);
    fflush(stdout);
    UCHECK(utofu_dereg_mem(h, s_into, 0));
    UCHECK(utofu_dereg_mem(h, s_src, 0));
    UCHECK(utofu_dereg_mem(h, s_win, 0));
    UCHECK(utofu_free_vcq(h));
    MPI_Finalize();
    return 0;
}
