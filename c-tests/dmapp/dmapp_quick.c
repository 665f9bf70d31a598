/* The word-sized quick paths of dmapp_get, dmapp_put and the AMOs (blocking and _nbi:
 * one atomic access through the target segment's pin, no per-access validation) against
 * what the general path gives:
 *   - gets and puts of one DW and one QW, from and to this PE and its right neighbour, in
 *     the symmetric heap and the data segment, at every 4-byte offset of a 16-byte block
 *     (a QW at offset 4 is misaligned: the general path takes it) and into local buffers
 *     aligned or not; every byte checked, the neighbour's untouched bytes too;
 *   - fetch-adds from the left neighbour only, blocking and _nbi, mixed: each blocking
 *     one returns the exact previous value, the total is exact;
 *   - the same calls with bad arguments still answer as the general path does (NULL
 *     target, PE out of range, a misaligned AMO word).
 * Argument "death" (2 PEs): PE 1 exits unfinalized after a barrier; PE 0's get, put and
 * fetch-add to it, all of the quick kind, then fail with TRANSACTION_ERROR (never succeed
 * on the dead PE's memory) within 10 s.  Run with XT_SYMMETRIC_HEAP_SIZE=8M. */
#include <time.h>
#include <unistd.h>
#include "dmtest.h"

#define ITERS 3000

static uint8_t dblock[64] __attribute__((aligned(64)));   /* data segment */

static uint8_t pattern(int pe, int i) { return (uint8_t)(pe * 37 + i * 11 + 1); }

static void fill(uint8_t *b, int pe) {
    for (int i = 0; i < 64; i++) b[i] = pattern(pe, i);
}

/* Gets of `len` (4: DW, 8: QW) bytes at byte offset `off` of PE `pe`'s block (heap or
 * data segment), into a local buffer at offset `lo` (0: aligned, 1: not). */
static void get_one(uint8_t *blk, dmapp_seg_desc_t *seg, int pe, int off, int len, int lo, int nbi) {
    uint8_t local[32];
    memset(local, 0xee, sizeof local);
    dmapp_type_t ty = len == 8 ? DMAPP_QW : DMAPP_DW;
    if (nbi) {
        OK(dmapp_get_nbi(local + lo, blk + off, seg, pe, 1, ty));
        OK(dmapp_gsync_wait());
    } else {
        OK(dmapp_get(local + lo, blk + off, seg, pe, 1, ty));
    }
    for (int i = 0; i < len; i++) CHECK_EQ(local[lo + i], pattern(pe, off + i));
    for (int i = 0; i < lo; i++) CHECK_EQ(local[i], 0xee);
    for (int i = lo + len; i < (int)sizeof local; i++) CHECK_EQ(local[i], 0xee);
}

static void gets(uint8_t *blk, dmapp_seg_desc_t *seg, int pe) {
    for (int off = 0; off <= 12; off += 4)
        for (int len = 4; len <= 8; len += 4)
            for (int lo = 0; lo < 2; lo++)
                for (int nbi = 0; nbi < 2; nbi++) get_one(blk, seg, pe, off, len, lo, nbi);
}

/* Puts a DW and a QW into the right neighbour's block (blocking at offset 16, _nbi at
 * 32; QW at +4, misaligned, and at +8), checked by the neighbour after a barrier. */
static void puts_to(uint8_t *blk, dmapp_seg_desc_t *seg, int pe) {
    uint8_t src[16];
    for (int i = 0; i < 16; i++) src[i] = (uint8_t)(0xa0 + me + i);
    OK(dmapp_put(blk + 16, seg, pe, src + 1, 1, DMAPP_DW));        /* unaligned source */
    OK(dmapp_put(blk + 20, seg, pe, src, 1, DMAPP_QW));            /* misaligned target */
    OK(dmapp_put_nbi(blk + 32, seg, pe, src, 1, DMAPP_DW));
    OK(dmapp_put_nbi(blk + 40, seg, pe, src + 3, 1, DMAPP_QW));
    OK(dmapp_gsync_wait());
}

static void check_puts(const uint8_t *blk, int from) {
    uint8_t src[16];
    for (int i = 0; i < 16; i++) src[i] = (uint8_t)(0xa0 + from + i);
    CHECK(memcmp(blk + 16, src + 1, 4) == 0);
    CHECK(memcmp(blk + 20, src, 8) == 0);
    CHECK_EQ(blk[28], pattern(me, 28));
    CHECK(memcmp(blk + 32, src, 4) == 0);
    CHECK_EQ(blk[36], pattern(me, 36));
    CHECK(memcmp(blk + 40, src + 3, 8) == 0);
    CHECK_EQ(blk[48], pattern(me, 48));
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void death(uint8_t *h) {
    CHECK(npes == 2);
    barrier();
    /* No dmapp_finalize; only the PMI connection ended (under mpiexec, hydra kills the
     * whole job when a client's PMI socket closes before PMI_Finalize). */
    if (me == 1) {
        PMI_Finalize();
        _exit(0);
    }
    uint64_t v = 0, one = 1, old = 0;
    double t0 = now();
    dmapp_return_t rc;
    while ((rc = dmapp_get(&v, h, sheap(), 1, 1, DMAPP_QW)) == DMAPP_RC_SUCCESS) {
        if (now() - t0 > 10) SN_FAIL("%s", "a get from a PE that exited kept succeeding for 10 s");
        usleep(1000);
    }
    RC_EQ(rc, DMAPP_RC_TRANSACTION_ERROR);
    RC_EQ(dmapp_put(h, sheap(), 1, &one, 1, DMAPP_QW), DMAPP_RC_TRANSACTION_ERROR);
    RC_EQ(dmapp_afadd_qw(&old, h, sheap(), 1, 1), DMAPP_RC_TRANSACTION_ERROR);
    rc = dmapp_put_nbi(h, sheap(), 1, &one, 1, DMAPP_QW);
    CHECK(rc == DMAPP_RC_SUCCESS || rc == DMAPP_RC_TRANSACTION_ERROR);
    RC_EQ(dmapp_gsync_wait(), DMAPP_RC_TRANSACTION_ERROR);
    printf("dmapp_quick: pe 0 ok (the exited PE's get, put and fetch-add fail)\n");
    exit(0);
}

int main(int argc, char **argv) {
    dm_init();
    uint8_t *h = dmapp_sheap_malloc(64);
    int64_t *ctr = dmapp_sheap_malloc(8);
    CHECK(h != NULL && ctr != NULL);
    if (argc > 1 && !strcmp(argv[1], "death")) death(h);
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    fill(h, me);
    fill(dblock, me);
    *ctr = 1000 * me;
    barrier();

    gets(h, sheap(), me);
    gets(h, sheap(), right);
    gets(dblock, dseg(), me);
    gets(dblock, dseg(), right);
    barrier();
    puts_to(h, sheap(), right);
    puts_to(dblock, dseg(), right);
    barrier();
    check_puts(h, left);
    check_puts(dblock, left);
    barrier();

    /* Fetch-adds on the right neighbour's counter; only we update it. */
    int64_t expect = 1000 * right, old = -1;
    for (int i = 0; i < ITERS; i++) {
        if (i % 3 == 2) {
            OK(dmapp_afadd_qw_nbi(&old, ctr, sheap(), right, 2));
            OK(dmapp_gsync_wait());
        } else {
            OK(dmapp_afadd_qw(&old, ctr, sheap(), right, 2));
        }
        CHECK_EQ(old, expect);
        expect += 2;
    }
    barrier();
    CHECK_EQ(*ctr, 1000 * me + 2 * ITERS);

    /* Bad arguments still get the general path's answers. */
    uint64_t w = 0;
    RC_EQ(dmapp_get(NULL, h, sheap(), right, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_get(&w, h, sheap(), npes, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_get(&w, h, NULL, right, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_afadd_qw(&old, h + 4, sheap(), right, 1), DMAPP_RC_ALIGNMENT_ERROR);
    RC_EQ(dmapp_afadd_qw(NULL, ctr, sheap(), right, 1), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_afadd_qw(&old, ctr, sheap(), -1, 1), DMAPP_RC_INVALID_PARAM);
    barrier();
    CHECK_EQ(*ctr, 1000 * me + 2 * ITERS);

    OK(dmapp_finalize());
    printf("dmapp_quick: pe %d of %d ok\n", me, npes);
    return 0;
}
