/* Puts, gets and ARMWs into a neighbour's region that straddles an aligned GiB of its
 * owner's addresses, so that it lies in two of the owner's backings (the fabric's block
 * backings are per aligned GiB) and cannot be pinned whole.  The general path finds the
 * backing of each address; after two operations in a row in one 2 MiB block of the
 * region, that block is pinned and serves the next ones (the VCQ's quick paths).  At
 * offsets on both sides of the boundary, at the region's ends and across the boundary,
 * each operation several times in a row: every result is checked by the initiator, and
 * every byte of the region by its owner (a pin addressed from the wrong start writes
 * elsewhere).  Then the owner deregisters the region: a put, a get and an ARMW at a
 * pinned block fail with MRQ_RMT_MEMORY and write nothing; puts into new regions of
 * the owner's, straddling other GiBs, land there.  Usage: utofu_straddle (an
 * MPI program, as the guide's are). */
#include <mpi.h>
#include <string.h>
#include "utest.h"

#define LEN (1u << 20)
#define MID ((512u << 10) - 4096)       /* the boundary's offset in the region */
#define CROSS 32                        /* bytes of the put across the boundary */
#define FLAGS UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE

static uint8_t pat(int r, size_t i) { return (uint8_t)(r * 29 + i * 7 + (i >> 12) + 3); }
static uint64_t val(int r, size_t off, int k) { return 0x1000000000000ULL * (uint64_t)(r + 1) + off * 8 + (uint64_t)k; }
static uint8_t cross_byte(int r, size_t i) { return (uint8_t)(0x80 + r * 5 + i); }

/* Word offsets written (each 8 bytes; none within 32 bytes of the boundary). */
static const size_t offs[] = { 0, 8, 4096, MID - 64, MID - 40, MID + 32, MID + 4096, (256u << 10), LEN - 8 };
#define NOFFS (sizeof offs / sizeof offs[0])

static utofu_vcq_hdl_t h;
static uint64_t *src, *dst;
static utofu_stadd_t s_src, s_dst;

static uint64_t mrq(int want_type)
{
    struct utofu_mrq_notice n;
    UCHECK(wait_mrq(h, &n));
    CHECK_EQ(n.notice_type, want_type);
    return n.rmt_value;
}

int main(int argc, char **argv)
{
    int rank, n;
    utest_mpi_init(&argc, &argv, &rank, &n);
    int right = (rank + 1) % n, left = (rank + n - 1) % n;
    UCHECK(utofu_create_vcq(0, 0, &h));
    utofu_vcq_id_t me;
    UCHECK(utofu_query_vcq_id(h, &me));
    uint8_t *reg = sn_straddling_gib(LEN, MID);
    for (size_t i = 0; i < LEN; i++) reg[i] = pat(rank, i);
    src = aligned_alloc(4096, 4096);
    dst = aligned_alloc(4096, 4096);
    CHECK(src && dst);
    utofu_stadd_t s_reg;
    UCHECK(utofu_reg_mem(h, reg, LEN, 0, &s_reg));
    UCHECK(utofu_reg_mem(h, src, 4096, 0, &s_src));
    UCHECK(utofu_reg_mem(h, dst, 4096, 0, &s_dst));
    uint64_t mine[2] = { me, s_reg }, *all = malloc(sizeof mine * n);
    MPI_Allgather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, MPI_COMM_WORLD);
    utofu_vcq_id_t rid = all[2 * right];
    utofu_stadd_t rreg = all[2 * right + 1];

    /* Into the right neighbour's region: three puts in a row at each offset, each read
     * back, then a fetch-and-add (its old value exact) and a last read. */
    for (size_t o = 0; o < NOFFS; o++) {
        size_t off = offs[o];
        for (int k = 0; k < 3; k++) {
            src[0] = val(rank, off, k);
            UCHECK(utofu_put(h, rid, s_src, rreg + off, 8, 0, FLAGS, NULL));
            mrq(UTOFU_MRQ_TYPE_LCL_PUT);
            dst[0] = 0;
            UCHECK(utofu_get(h, rid, s_dst, rreg + off, 8, 0, FLAGS, NULL));
            mrq(UTOFU_MRQ_TYPE_LCL_GET);
            if (dst[0] != val(rank, off, k)) SN_FAIL("get at %zu read %#llx, want %#llx", off, (unsigned long long)dst[0], (unsigned long long)val(rank, off, k));
        }
        UCHECK(utofu_armw8(h, rid, UTOFU_ARMW_OP_ADD, off + 1, rreg + off, 0, FLAGS, NULL));
        uint64_t old = mrq(UTOFU_MRQ_TYPE_LCL_ARMW);
        if (old != val(rank, off, 2)) SN_FAIL("fetch-add at %zu found %#llx, want %#llx", off, (unsigned long long)old, (unsigned long long)val(rank, off, 2));
        UCHECK(utofu_get(h, rid, s_dst, rreg + off, 8, 0, FLAGS, NULL));
        mrq(UTOFU_MRQ_TYPE_LCL_GET);
        CHECK(dst[0] == val(rank, off, 2) + off + 1);
    }
    /* Across the boundary (both backings: the general path), twice. */
    uint8_t *s8 = (uint8_t *)src, *d8 = (uint8_t *)dst;
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < CROSS; i++) s8[i] = cross_byte(rank, i + (size_t)k);
        UCHECK(utofu_put(h, rid, s_src, rreg + MID - CROSS / 2, CROSS, 0, FLAGS, NULL));
        mrq(UTOFU_MRQ_TYPE_LCL_PUT);
        memset(d8, 0, CROSS);
        UCHECK(utofu_get(h, rid, s_dst, rreg + MID - CROSS / 2, CROSS, 0, FLAGS, NULL));
        mrq(UTOFU_MRQ_TYPE_LCL_GET);
        CHECK(memcmp(d8, s8, CROSS) == 0);
    }
    expect_empty(h);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Our own region, as the left neighbour left it: its words, its bytes across the
     * boundary, the pattern everywhere else. */
    for (size_t i = 0; i < LEN; i++) {
        uint8_t want = pat(rank, i);
        for (size_t o = 0; o < NOFFS; o++)
            if (i >= offs[o] && i < offs[o] + 8) {
                uint64_t w = val(left, offs[o], 2) + offs[o] + 1;
                want = (uint8_t)(w >> (8 * (i - offs[o])));
            }
        if (i >= MID - CROSS / 2 && i < MID + CROSS / 2) want = cross_byte(left, i - (MID - CROSS / 2) + 1);
        if (reg[i] != want) SN_FAIL("byte %zu of the region is %d, want %d", i, reg[i], want);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* The owner deregisters: the pinned blocks are stale; nothing is written. */
    UCHECK(utofu_dereg_mem(h, s_reg, 0));
    memcpy(dst + 8, reg + MID + 4096, 64);                  /* what the owner must keep */
    MPI_Barrier(MPI_COMM_WORLD);
    struct utofu_mrq_notice no;
    src[0] = 0xdeadbeef;
    UCHECK(utofu_put(h, rid, s_src, rreg + MID + 4096, 8, 0, FLAGS, NULL));
    CHECK_EQ(wait_mrq(h, &no), UTOFU_ERR_MRQ_RMT_MEMORY);
    dst[0] = 0x5555;
    UCHECK(utofu_get(h, rid, s_dst, rreg + 8, 8, 0, FLAGS, NULL));
    CHECK_EQ(wait_mrq(h, &no), UTOFU_ERR_MRQ_RMT_MEMORY);
    CHECK(dst[0] == 0x5555);
    UCHECK(utofu_armw8(h, rid, UTOFU_ARMW_OP_ADD, 1, rreg + MID + 32, 0, FLAGS, NULL));
    CHECK_EQ(wait_mrq(h, &no), UTOFU_ERR_MRQ_RMT_MEMORY);
    expect_empty(h);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(memcmp(dst + 8, reg + MID + 4096, 64) == 0);
    uint64_t w;
    memcpy(&w, reg + MID + 32, 8);
    CHECK(w == val(left, MID + 32, 2) + MID + 32 + 1);

    /* New regions straddling other GiBs (new backings of the owner's, which peers must
     * learn of, also when nothing else of the owner's changed since they last looked):
     * a put across each one's boundary (the general path, which looks the second backing
     * up) and puts on both sides land there. */
    for (int round = 0; round < 2; round++) {
        uint8_t *reg2 = sn_straddling_gib(LEN, MID);
        memset(reg2, 0, LEN);
        UCHECK(utofu_reg_mem(h, reg2, LEN, 0, &s_reg));
        mine[1] = s_reg;
        MPI_Allgather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, MPI_COMM_WORLD);
        rreg = all[2 * right + 1];
        for (size_t i = 0; i < CROSS; i++) s8[i] = cross_byte(rank, i + 5 + (size_t)round);
        UCHECK(utofu_put(h, rid, s_src, rreg + MID - CROSS / 2, CROSS, 0, FLAGS, NULL));
        mrq(UTOFU_MRQ_TYPE_LCL_PUT);
        for (size_t o = 0; o < NOFFS; o++) {
            src[0] = val(rank, offs[o], 7 + round);
            UCHECK(utofu_put(h, rid, s_src, rreg + offs[o], 8, 0, FLAGS, NULL));
            mrq(UTOFU_MRQ_TYPE_LCL_PUT);
        }
        expect_empty(h);
        MPI_Barrier(MPI_COMM_WORLD);
        for (size_t i = 0; i < CROSS; i++) {
            uint8_t *b = reg2 + MID - CROSS / 2 + i;
            if (*b != cross_byte(left, i + 5 + (size_t)round)) SN_FAIL("new region %d: byte %zu across the boundary is %d", round, i, *b);
            *b = 0;
        }
        for (size_t o = 0; o < NOFFS; o++) {
            memcpy(&w, reg2 + offs[o], 8);
            if (w != val(left, offs[o], 7 + round)) SN_FAIL("new region %d: word at %zu is %#llx", round, offs[o], (unsigned long long)w);
            memset(reg2 + offs[o], 0, 8);
        }
        for (size_t i = 0; i < LEN; i++) if (reg2[i]) SN_FAIL("new region %d: byte %zu written", round, i);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    printf("utofu_straddle: rank %d of %d ok\n", rank, n);
    UCHECK(utofu_free_vcq(h));
    MPI_Finalize();
    return 0;
}
