/* Gets through the VCQ's pin of the target region (a get's quick path, issue 25), as an
 * MPI program exchanges ids and STADDs: after a first get from the right neighbour's
 * region, gets of 1 B to 64 KiB at several offsets land exactly (guards untouched) with
 * their LCL_GET notice (both ends of the notice right) or TCQ entry; piggyback puts of
 * 1-8 and 32 bytes land exactly through the same pin; a read-only destination still
 * gets the general path's MRQ error; a get from a region its owner
 * deregistered fails with MRQ_RMT_MEMORY and moves nothing; a get of the owner's new
 * registration then works.  Usage: utofu_get_pinned. */
#include <mpi.h>
#include <string.h>
#include "utest.h"

#define WIN (64 * 1024)
#define GUARD 0xEE

static uint8_t pat(int r, int gen, size_t i) { return (uint8_t)(r * 41 + gen * 97 + i * 3 + 5); }

static utofu_vcq_hdl_t h;
static uint8_t *dst;
static utofu_stadd_t s_dst;

static void get_ok(utofu_vcq_id_t rid, utofu_stadd_t rbase, int peer, int gen, size_t off, size_t len, int tcq)
{
    memset(dst, GUARD, 64 + len + 64);
    unsigned long flags = tcq ? UTOFU_ONESIDED_FLAG_TCQ_NOTICE : UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE;
    UCHECK(utofu_get(h, rid, s_dst + 64, rbase + off, len, 7, flags, (void *)(uintptr_t)(len + 1)));
    if (tcq) {
        void *cb;
        UCHECK(wait_tcq(h, &cb));
        CHECK(cb == (void *)(uintptr_t)(len + 1));
    } else {
        struct utofu_mrq_notice n;
        UCHECK(wait_mrq(h, &n));
        CHECK_EQ(n.notice_type, UTOFU_MRQ_TYPE_LCL_GET);
        CHECK(n.vcq_id == rid);
        CHECK_EQ(n.edata, 7);
        CHECK(n.rmt_stadd == rbase + off + len);
        CHECK(n.lcl_stadd == s_dst + 64 + len);
    }
    expect_empty(h);
    for (size_t i = 0; i < 64; i++) if (dst[i] != GUARD) SN_FAIL("get %zu@%zu: guard before at %zu", len, off, i);
    for (size_t i = 0; i < len; i++)
        if (dst[64 + i] != pat(peer, gen, off + i)) SN_FAIL("get %zu@%zu: byte %zu is %d, want %d", len, off, i, dst[64 + i], pat(peer, gen, off + i));
    for (size_t i = 64 + len; i < 64 + len + 64; i++) if (dst[i] != GUARD) SN_FAIL("get %zu@%zu: guard after at %zu", len, off, i);
}

int main(int argc, char **argv)
{
    int rank, n;
    utest_mpi_init(&argc, &argv, &rank, &n);
    int right = (rank + 1) % n;
    UCHECK(utofu_create_vcq(0, 0, &h));
    utofu_vcq_id_t me;
    UCHECK(utofu_query_vcq_id(h, &me));
    uint8_t *win = aligned_alloc(4096, WIN), *ro = aligned_alloc(4096, 4096);
    dst = aligned_alloc(4096, WIN + 4096);
    CHECK(win && ro && dst);
    for (size_t i = 0; i < WIN; i++) win[i] = pat(rank, 0, i);
    memset(ro, 0, 4096);
    utofu_stadd_t s_win, s_ro;
    UCHECK(utofu_reg_mem(h, win, WIN, 0, &s_win));
    UCHECK(utofu_reg_mem(h, dst, WIN + 4096, 0, &s_dst));
    UCHECK(utofu_reg_mem(h, ro, 4096, UTOFU_REG_MEM_FLAG_READ_ONLY, &s_ro));
    uint64_t mine[2] = { me, s_win }, *all = malloc(sizeof mine * n);
    MPI_Allgather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, MPI_COMM_WORLD);
    utofu_vcq_id_t rid = all[2 * right];
    utofu_stadd_t rwin = all[2 * right + 1];

    for (int i = 0; i < 3; i++) get_ok(rid, rwin, right, 0, 8 * i, 8, 0);        /* pinned now */
    static const size_t sizes[] = { 1, 8, 13, 4096, WIN - 64 };
    static const size_t offs[] = { 0, 8, 3, 61 };
    for (size_t o = 0; o < sizeof offs / sizeof offs[0]; o++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            get_ok(rid, rwin, right, 0, offs[o], sizes[s], 0);
            get_ok(rid, rwin, right, 0, offs[o], sizes[s], 1);
            get_ok(me, s_win, rank, 0, offs[o], sizes[s], 0);                    /* ourselves */
        }

    /* Piggyback puts of 1-8 bytes (and utofu_put_piggyback's 32) through the same pin,
     * their LCL_PUT notices exact; the neighbour checks the bytes after a barrier. */
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 64; i++) {
        size_t len = 1 + (size_t)i % 8;
        uint64_t v = 0x0102030405060708ULL * (uint64_t)(rank + 1) + (uint64_t)i;
        UCHECK(utofu_put_piggyback8(h, rid, v, rwin + 16 * (size_t)i, len, 9, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));
        struct utofu_mrq_notice pn;
        UCHECK(wait_mrq(h, &pn));
        CHECK_EQ(pn.notice_type, UTOFU_MRQ_TYPE_LCL_PUT);
        CHECK(pn.rmt_stadd == rwin + 16 * (size_t)i + len);
    }
    uint8_t pb[32];
    for (int i = 0; i < 32; i++) pb[i] = (uint8_t)(0xc0 + rank + i);
    UCHECK(utofu_put_piggyback(h, rid, pb, rwin + 2048, 32, 0, UTOFU_ONESIDED_FLAG_TCQ_NOTICE, NULL));
    void *pcb;
    UCHECK(wait_tcq(h, &pcb));
    expect_empty(h);
    MPI_Barrier(MPI_COMM_WORLD);
    int left = (rank + n - 1) % n;
    for (int i = 0; i < 64; i++) {
        size_t len = 1 + (size_t)i % 8;
        uint64_t v = 0x0102030405060708ULL * (uint64_t)(left + 1) + (uint64_t)i;
        for (size_t b = 0; b < 16; b++) {
            uint8_t want = b < len ? (uint8_t)(v >> (8 * b)) : pat(rank, 0, 16 * (size_t)i + b);
            if (win[16 * i + b] != want) SN_FAIL("piggyback %d: byte %zu is %d, want %d", i, b, win[16 * i + b], want);
        }
    }
    for (int i = 0; i < 32; i++) CHECK_EQ(win[2048 + i], (uint8_t)(0xc0 + left + i));
    for (size_t i = 0; i < WIN; i++) win[i] = pat(rank, 0, i);
    MPI_Barrier(MPI_COMM_WORLD);

    /* A read-only destination: the general path's MRQ error, nothing written. */
    struct utofu_mrq_notice no;
    UCHECK(utofu_get(h, rid, s_ro, rwin, 8, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));
    CHECK_EQ(wait_mrq(h, &no), UTOFU_ERR_MRQ_LCL_MEMORY);
    for (int i = 0; i < 8; i++) CHECK_EQ(ro[i], 0);
    expect_empty(h);

    /* The neighbour deregisters its region: our pin of it is stale. */
    MPI_Barrier(MPI_COMM_WORLD);
    UCHECK(utofu_dereg_mem(h, s_win, 0));
    for (size_t i = 0; i < WIN; i++) win[i] = pat(rank, 1, i);
    MPI_Barrier(MPI_COMM_WORLD);
    memset(dst, GUARD, 256);
    UCHECK(utofu_get(h, rid, s_dst + 64, rwin, 64, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));
    CHECK_EQ(wait_mrq(h, &no), UTOFU_ERR_MRQ_RMT_MEMORY);
    for (int i = 0; i < 256; i++) if (dst[i] != GUARD) SN_FAIL("a get from a deregistered region wrote byte %d", i);
    expect_empty(h);
    MPI_Barrier(MPI_COMM_WORLD);
    UCHECK(utofu_reg_mem(h, win, WIN, 0, &s_win));
    mine[1] = s_win;
    MPI_Allgather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, MPI_COMM_WORLD);
    rwin = all[2 * right + 1];
    for (int i = 0; i < 3; i++) get_ok(rid, rwin, right, 1, 64 * i, 64, i & 1);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("utofu_get_pinned: rank %d of %d ok\n", rank, n);
    UCHECK(utofu_free_vcq(h));
    MPI_Finalize();
    return 0;
}
