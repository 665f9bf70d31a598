/* A target MD whose memory lies in two backings of the target's registrations (its
 * buffer straddles a 1 GiB boundary: the fabric's block backings are per aligned GiB, so
 * the whole MD cannot be pinned, as happened to a 64 MiB MD in 1 benchmark run of 12):
 * puts and gets that the initiator runs through pins of windows of the MD, at offsets in
 * different windows and blocks, across a window's edge and across the blocks' edge (no
 * pin: the per-operation path), and after the MD's row was reused by another MD over
 * other memory.  Every byte is checked where it landed.  2 ranks: rank 1 is the target,
 * rank 0 the initiator. */
#include <pmi.h>
#include "ptest.h"

#define LEN (1u << 20)
/* Where the 1 GiB boundary lies in the target buffer: the buffer starts 4 KiB after a
 * multiple of the library's 256 KiB pin window, so that a window's start is not the
 * MD's (an offset taken from the MD's start instead of the window's lands elsewhere). */
#define MID ((512u << 10) - 4096)
#define PT 5

/* The byte at `off` of the `round`-th fill. */
static uint8_t pat(size_t off, int round) { return (uint8_t)(off * 131u + (off >> 9) + round * 17u + 1u); }

int main(void)
{
    pt_job_t j;
    PT_JOB_INIT(&j);
    if (j.n != 2) SN_FAIL("needs 2 ranks");
    ptl_process_id_t peer;
    PCHECK(PtlGetRankId(j.ni, 1 - j.rank, &peer));
    uint8_t *buf = sn_straddling_gib(LEN, MID), *buf2 = aligned_alloc(4096, LEN);
    CHECK(buf && buf2);
    memset(buf, 0, LEN);
    memset(buf2, 0, LEN);
    ptl_handle_eq_t eq;
    PCHECK(PtlEQAlloc(j.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    /* Pieces: (offset, length) in the big MD; each put writes `pat` there, each get
     * reads it back. */
    static const size_t at[][2] = {
        { 0, 8 }, { 4096, 16384 }, { MID, 8 }, { MID + 100, 3000 }, { MID - 64, 128 },
        { MID + (256u << 10) - 32, 64 }, { (256u << 10) - 8, 16 }, { LEN - 16384, 16384 }, { 12345, 777 }, { MID - 16384, 16384 }, { 253u << 10, 1024 },
    };
    const int npieces = (int)(sizeof at / sizeof at[0]);
    if (j.rank == 1) {
        ptl_handle_me_t big_me;
        ptl_handle_md_t big_md;
        PCHECK(PtlMEAttach(j.ni, PT, ANY_ID, 2, 0, PTL_RETAIN, PTL_INS_AFTER, &big_me));
        PCHECK(PtlMDAttach(big_me, md_of(buf, LEN, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_END_DISABLE, eq), PTL_RETAIN, &big_md));
        CHECK_EQ(PMI_Barrier(), PMI_SUCCESS); /* 1: set up */
        CHECK_EQ(PMI_Barrier(), PMI_SUCCESS); /* 2: rank 0 put every piece */
        for (int i = 0; i < npieces; i++)
            for (size_t k = 0; k < at[i][1]; k++)
                if (buf[at[i][0] + k] != pat(at[i][0] + k, 1))
                    SN_FAIL("piece %d (offset %zu): byte %zu is %u, expected %u", i, at[i][0], k, buf[at[i][0] + k], pat(at[i][0] + k, 1));
        /* Untouched bytes around the pieces stay as they were. */
        CHECK_EQ(buf[MID + 64], 0);
        CHECK_EQ(buf[16384 + 4096], 0);
        CHECK_EQ(buf[MID - 16384 - 1], 0);
        /* Refill for the gets. */
        for (size_t k = 0; k < LEN; k++) buf[k] = pat(k, 2);
        CHECK_EQ(PMI_Barrier(), PMI_SUCCESS); /* 3: refilled */
        CHECK_EQ(PMI_Barrier(), PMI_SUCCESS); /* 4: rank 0 got every piece */
        /* The row of the big MD goes to a new MD over other memory (same size). */
        PCHECK(PtlMDUnlink(big_md));
        PCHECK(PtlMDAttach(big_me, md_of(buf2, LEN, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_END_DISABLE, eq), PTL_RETAIN, &big_md));
        memset(buf, 0, LEN);
        CHECK_EQ(PMI_Barrier(), PMI_SUCCESS); /* 5: new MD */
        CHECK_EQ(PMI_Barrier(), PMI_SUCCESS); /* 6: rank 0 put again */
        for (int i = 0; i < npieces; i++)
            for (size_t k = 0; k < at[i][1]; k++) {
                if (buf2[at[i][0] + k] != pat(at[i][0] + k, 3))
                    SN_FAIL("new MD, piece %d: byte %zu is %u, expected %u", i, k, buf2[at[i][0] + k], pat(at[i][0] + k, 3));
                if (buf[at[i][0] + k] != 0) SN_FAIL("old memory written after its MD went (piece %d byte %zu)", i, k);
            }
    } else {
        uint8_t *src = aligned_alloc(4096, LEN), *dst = aligned_alloc(4096, LEN);
        CHECK(src && dst);
        ptl_handle_md_t smd, dmd;
        PCHECK(PtlMDBind(j.ni, md_of(src, LEN, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, eq), PTL_RETAIN, &smd));
        PCHECK(PtlMDBind(j.ni, md_of(dst, LEN, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, eq), PTL_RETAIN, &dmd));
        for (size_t k = 0; k < LEN; k++) src[k] = pat(k, 1);
        CHECK_EQ(PMI_Barrier(), PMI_SUCCESS); /* 1 */
        /* Each piece twice (the second time through the window's pin, if any). */
        for (int r = 0; r < 2; r++)
            for (int i = 0; i < npieces; i++) {
                PCHECK(PtlPutRegion(smd, at[i][0], at[i][1], PTL_NO_ACK_REQ, peer, PT, 0, 2, at[i][0], 0));
                ptl_event_t ev = EXPECT(eq, PTL_EVENT_SEND_END);
                CHECK_EQ(ev.mlength, at[i][1]);
            }
        CHECK_EQ(PMI_Barrier(), PMI_SUCCESS); /* 2 */
        CHECK_EQ(PMI_Barrier(), PMI_SUCCESS); /* 3 */
        for (int i = 0; i < npieces; i++) {
            PCHECK(PtlGetRegion(dmd, at[i][0], at[i][1], peer, PT, 0, 2, at[i][0]));
            ptl_event_t ev = EXPECT(eq, PTL_EVENT_REPLY_END);
            CHECK_EQ(ev.mlength, at[i][1]);
            for (size_t k = 0; k < at[i][1]; k++)
                if (dst[at[i][0] + k] != pat(at[i][0] + k, 2))
                    SN_FAIL("get of piece %d: byte %zu is %u, expected %u", i, k, dst[at[i][0] + k], pat(at[i][0] + k, 2));
        }
        CHECK_EQ(PMI_Barrier(), PMI_SUCCESS); /* 4 */
        CHECK_EQ(PMI_Barrier(), PMI_SUCCESS); /* 5 */
        for (size_t k = 0; k < LEN; k++) src[k] = pat(k, 3);
        for (int i = 0; i < npieces; i++) {
            PCHECK(PtlPutRegion(smd, at[i][0], at[i][1], PTL_NO_ACK_REQ, peer, PT, 0, 2, at[i][0], 0));
            EXPECT(eq, PTL_EVENT_SEND_END);
        }
        CHECK_EQ(PMI_Barrier(), PMI_SUCCESS); /* 6 */
    }
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    PCHECK(PtlNIFini(j.ni));
    PtlFini();
    printf("ptl_pin_windows: rank %d ok\n", j.rank);
    PMI_Finalize();
    return 0;
}
