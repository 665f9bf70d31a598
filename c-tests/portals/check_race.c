/* The checker's data races (SOFTNIC_CHECK=1) between Portals initiators, committed on
 * purpose.  Rank 0 is the target: portal 4 holds `win` twice, remotely managed, under
 * match bits 1 (from byte 0) and 2 (from byte 32: another ME and MD over the same
 * memory), and `lwin`, locally managed, under match bits 3.  Ranks 1 and 2 find rank 0
 * with PtlGetRankId and log their END events into a queue:
 *   race     after a put each to the locally managed MD (rank 0 is then known: the next
 *            puts run the target side in one critical section), rank 1 puts 64 bytes at
 *            offset 0 under bits 1 and does not take its SEND_END; after a barrier rank 2
 *            puts 64 bytes at offset 0 under bits 2, i.e. bytes 32..95 of `win`: nothing
 *            ordered them (rank 2 reports it, naming rank 1's put)
 *   getput   rank 1's get of bytes 0..20479 (longer than one critical section moves: the
 *            general path) is in flight when rank 2's put is posted
 *   clean    rank 1 takes its SEND_END before the barrier, then rank 2 puts the same
 *            bytes; both put at once to different bytes; both get the same bytes at once
 *            (reads never race each other); both put at once to the locally managed MD
 *            (each put lands in fresh bytes): no finding
 * Needs 3 ranks.  Prints "ptl_check_race: rank R MODE done". */
#include "ptest.h"
#include <pmi.h>

static uint64_t win[4096], lwin[32];
static uint64_t src[8], into[4096];
static ptl_handle_eq_t eq;
static ptl_handle_md_t smd, gmd;
static ptl_process_id_t target;

/* A put of the 64 bytes of `src` under `bits` at `offset` of rank 0's MD. */
static void put_at(ptl_match_bits_t bits, ptl_size_t offset)
{
    PCHECK(PtlPut(smd, PTL_NOACK_REQ, target, 4, 0, bits, offset, 0));
}

/* A get of `len` bytes under `bits` at `offset` into `into`. */
static void get_at(ptl_match_bits_t bits, ptl_size_t offset, ptl_size_t len)
{
    PCHECK(PtlGetRegion(gmd, 0, len, target, 4, 0, bits, offset));
}

static void barrier(void)
{
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "clean";
    pt_job_t j;
    PT_JOB_INIT(&j);
    if (j.n != 3) SKIP("needs 3 ranks");
    PCHECK(PtlGetRankId(j.ni, 0, &target));
    if (j.rank == 0) {
        const unsigned opts = PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_END_DISABLE;
        ptl_handle_me_t me;
        PCHECK(PtlMEAttach(j.ni, 4, ANY_ID, 1, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
        PCHECK(PtlMDAttach(me, md_of(win, sizeof win, PTL_MD_THRESH_INF, opts | PTL_MD_MANAGE_REMOTE, PTL_EQ_NONE), PTL_RETAIN, NULL));
        PCHECK(PtlMEAttach(j.ni, 4, ANY_ID, 2, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
        PCHECK(PtlMDAttach(me, md_of(win + 4, sizeof win - 32, PTL_MD_THRESH_INF, opts | PTL_MD_MANAGE_REMOTE, PTL_EQ_NONE), PTL_RETAIN, NULL));
        PCHECK(PtlMEAttach(j.ni, 4, ANY_ID, 3, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
        PCHECK(PtlMDAttach(me, md_of(lwin, sizeof lwin, PTL_MD_THRESH_INF, opts, PTL_EQ_NONE), PTL_RETAIN, NULL));
    } else {
        PCHECK(PtlEQAlloc(j.ni, 16, PTL_EQ_HANDLER_NONE, &eq));
        for (int i = 0; i < 8; i++) src[i] = 0x7ace0000u + (uint64_t)j.rank * 16 + (uint64_t)i;
        PCHECK(PtlMDBind(j.ni, md_of(src, sizeof src, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, eq), PTL_RETAIN, &smd));
        PCHECK(PtlMDBind(j.ni, md_of(into, sizeof into, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, eq), PTL_RETAIN, &gmd));
    }
    barrier(); /* every match entry is in place */
    int one = j.rank == 1, two = j.rank == 2, initiator = one || two;
    if (!strcmp(mode, "race") || !strcmp(mode, "getput")) {
        int get = !strcmp(mode, "getput");
        if (!get && initiator) {
            /* Both have reached rank 0 before: the racing puts run the target side in one
             * critical section (short, target known), while getput's 20 KiB get takes the
             * general path. */
            put_at(3, 0);
            EXPECT(eq, PTL_EVENT_SEND_END);
        }
        if (one) {
            if (get) get_at(1, 0, 20480);
            else put_at(1, 0);
        }
        barrier();
        if (two) put_at(2, 0); /* bytes 32..95 of win: overlaps 32..63 */
        barrier();
        if (one) EXPECT(eq, get ? PTL_EVENT_REPLY_END : PTL_EVENT_SEND_END);
        if (two) EXPECT(eq, PTL_EVENT_SEND_END);
    } else {
        /* Ordered: rank 1's SEND_END is taken before the barrier. */
        if (one) {
            put_at(1, 0);
            EXPECT(eq, PTL_EVENT_SEND_END);
        }
        barrier();
        if (two) {
            put_at(2, 0);
            EXPECT(eq, PTL_EVENT_SEND_END);
        }
        barrier();
        /* At once, different bytes (rank R under match bits R: rank 1 bytes 0..63 of win,
         * rank 2 bytes 96..159). */
        if (initiator) put_at(j.rank, j.rank == 1 ? 0 : 64);
        barrier();
        if (initiator) EXPECT(eq, PTL_EVENT_SEND_END);
        barrier();
        /* At once, the same bytes, both reading. */
        if (initiator) get_at(1, 0, 64);
        barrier();
        if (initiator) EXPECT(eq, PTL_EVENT_REPLY_END);
        barrier();
        /* At once, the locally managed MD: each put lands after the one before. */
        if (initiator) put_at(3, 0);
        barrier();
        if (initiator) EXPECT(eq, PTL_EVENT_SEND_END);
    }
    barrier();
    if (initiator) expect_empty(eq);
    if (j.rank == 0 && !strcmp(mode, "clean")) {
        /* Both locally managed puts landed, one after the other. */
        uint64_t a = lwin[0] & ~(uint64_t)0xff, b = lwin[8] & ~(uint64_t)0xff;
        CHECK(a == 0x7ace0000u && b == 0x7ace0000u && (lwin[0] & 0xf0) != (lwin[8] & 0xf0));
    }
    printf("ptl_check_race: rank %d %s done\n", j.rank, mode);
    fflush(stdout);
    PCHECK(PtlNIFini(j.ni));
    PtlFini();
    return 0;
}
