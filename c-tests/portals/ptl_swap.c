/* PtlGetPut between processes, the way programs build locks and counters on it:
 *  - every rank swaps its own values into rank 0's word, all at once: each value
 *    sent comes back exactly once (as the old value of a later swap, or as the word's
 *    final value), checked by sum and xor over the job; rank 0 counts one GETPUT_END
 *    per swap;
 *  - a swap whose get and put MDs are the same 8 bytes: the neighbour's old value comes
 *    back, our value lands (the new bytes are taken before the old ones arrive);
 *  - a get MD shorter than the put MD: the first 4 old bytes come back (REPLY_END says
 *    4), all 8 new ones land.
 * Usage: ptl_swap [swaps per rank].  Prints "ptl_swap: rank R of N ok". */
#include "ptest.h"
#include <pmi.h>

enum { PT_COUNTER = 8, PT_SAME = 9, PT_SHORT = 10 };

static pt_job_t j;
static ptl_handle_eq_t ieq, teq;

static ptl_handle_md_t bind_md(void *buf, ptl_size_t len)
{
    ptl_handle_md_t h;
    PCHECK(PtlMDBind(j.ni, md_of(buf, len, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, ieq), PTL_RETAIN, &h));
    return h;
}

static void target(ptl_pt_index_t pt, void *word, ptl_handle_eq_t q)
{
    ptl_handle_me_t m;
    unsigned opts = PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE;
    if (q == PTL_EQ_NONE) opts |= PTL_MD_EVENT_END_DISABLE;
    PCHECK(PtlMEAttach(j.ni, pt, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m));
    PCHECK(PtlMDAttach(m, md_of(word, 8, PTL_MD_THRESH_INF, opts, q), PTL_RETAIN, NULL));
}

/* The initiator's events of one swap: SEND_END, then REPLY_END of `mlength` bytes. */
static void swap_done(ptl_size_t mlength)
{
    EXPECT(ieq, PTL_EVENT_SEND_END);
    ptl_event_t e = EXPECT(ieq, PTL_EVENT_REPLY_END);
    CHECK_EQ(e.mlength, mlength);
}

int main(int argc, char **argv)
{
    PT_JOB_INIT(&j);
    int swaps = argc > 1 ? atoi(argv[1]) : 500;
    PCHECK(PtlEQAlloc(j.ni, 64, PTL_EQ_HANDLER_NONE, &ieq));
    PCHECK(PtlEQAlloc(j.ni, 4096, PTL_EQ_HANDLER_NONE, &teq));
    static uint64_t counter = 7, same_word, short_word;
    same_word = 1000 + (uint64_t)j.rank;
    short_word = 0x1111111122222222ull * (uint64_t)(j.rank + 1);
    target(PT_COUNTER, &counter, j.rank == 0 ? teq : PTL_EQ_NONE);
    target(PT_SAME, &same_word, PTL_EQ_NONE);
    target(PT_SHORT, &short_word, PTL_EQ_NONE);
    ptl_process_id_t zero;
    PCHECK(PtlGetRankId(j.ni, 0, &zero));
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);

    /* All ranks at once into rank 0's word (rank 0 into its own). */
    static uint64_t newv, oldv;
    ptl_handle_md_t put = bind_md(&newv, 8), get = bind_md(&oldv, 8);
    uint64_t sums[2] = { 0, 0 }; /* sent - received, xor of both */
    for (int i = 0; i < swaps; i++) {
        newv = ((uint64_t)(j.rank + 1) << 32) | (uint64_t)i;
        PCHECK(PtlGetPut(get, put, zero, PT_COUNTER, 0, 0, 0, (ptl_hdr_data_t)i));
        swap_done(8);
        sums[0] += newv - oldv;
        sums[1] ^= newv ^ oldv;
    }
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    uint64_t *all = calloc(2 * (size_t)j.n, sizeof *all);
    CHECK_EQ(PMI_Allgather(sums, all, sizeof sums), PMI_SUCCESS);
    if (j.rank == 0) {
        /* Every value entered the word once and left it once, but the first (7) and the
         * last (the word now). */
        uint64_t s = 0, x = 0;
        for (int r = 0; r < j.n; r++) {
            s += all[2 * r];
            x ^= all[2 * r + 1];
        }
        CHECK_EQ(s, counter - 7);
        CHECK_EQ(x, counter ^ 7);
        ptl_event_t e;
        int ends = 0, rc;
        while ((rc = PtlEQGet(teq, &e)) == PTL_OK) {
            CHECK_EQ(e.type, PTL_EVENT_GETPUT_END);
            CHECK_EQ(e.mlength, 8);
            ends++;
        }
        CHECK_EQ(rc, PTL_EQ_EMPTY);
        CHECK_EQ(ends, swaps * j.n);
    }

    /* The same 8 bytes as get and put MD, into the right neighbour's word. */
    static uint64_t both;
    both = 5000 + (uint64_t)j.rank;
    ptl_handle_md_t b1 = bind_md(&both, 8), b2 = bind_md(&both, 8);
    PCHECK(PtlGetPut(b1, b2, j.right, PT_SAME, 0, 0, 0, 0));
    swap_done(8);
    CHECK_EQ(both, 1000 + (uint64_t)((j.rank + 1) % j.n));

    /* A get MD of 4 bytes for a put MD of 8: 4 old bytes back, 8 new ones land. */
    static uint64_t long_new;
    static uint32_t short_old = 0xdeadbeef;
    long_new = 0xabcdef0123456789ull;
    ptl_handle_md_t sget = bind_md(&short_old, 4), sput = bind_md(&long_new, 8);
    PCHECK(PtlGetPut(sget, sput, j.right, PT_SHORT, 0, 0, 0, 0));
    swap_done(4);
    uint64_t rv = 0x1111111122222222ull * (uint64_t)((j.rank + 1) % j.n + 1);
    CHECK_EQ(short_old, (uint32_t)rv);
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    int left = (j.rank + j.n - 1) % j.n;
    CHECK_EQ(same_word, 5000 + (uint64_t)left);
    CHECK_EQ(short_word, 0xabcdef0123456789ull);
    expect_empty(ieq);

    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    PCHECK(PtlNIFini(j.ni));
    PtlFini();
    printf("ptl_swap: rank %d of %d ok\n", j.rank, j.n);
    PMI_Finalize();
    return 0;
}
