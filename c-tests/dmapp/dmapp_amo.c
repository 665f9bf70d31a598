/* AMOs: every operation in every completion class, with the argument roles of the
 * digest (fetching AMOs: remote word = source_*, old value -> local target_addr), and
 * concurrent AFADD/AADD from every PE on one word of PE 0 (the total must be exact). */
#include "dmtest.h"

static int64_t word;        /* data segment */
#define ITERS 2000

static void complete(int m, dmapp_syncid_handle_t *h) {
    if (m == 1) { OK(dmapp_syncid_wait(h)); CHECK(*h == NULL); }
    if (m == 2) OK(dmapp_gsync_wait());
}

int main(void) {
    dm_init();
    int64_t *w = dmapp_sheap_malloc(8);
    CHECK(w != NULL);
    int right = (me + 1) % npes;
    for (int m = 0; m < 3; m++) {
        dmapp_syncid_handle_t h = NULL;
        int64_t old = -1;
        const int64_t start = 0x0ff0f00f12345678LL;
        /* Each PE operates only on its right neighbour's word, one op at a time. */
#define STEP(call, expect_word, expect_old) do { \
            *w = start; barrier(); \
            old = -1; OK(call); complete(m, &h); barrier(); \
            CHECK_EQ(*w, (expect_word)); \
            if ((expect_old) != -1) CHECK_EQ(old, (expect_old)); } while (0)
#define NB3(name, ...) (m == 0 ? name(__VA_ARGS__) : m == 1 ? name##_nb(__VA_ARGS__, &h) : name##_nbi(__VA_ARGS__))
        STEP(NB3(dmapp_aadd_qw, w, sheap(), right, 5), start + 5, -1);
        STEP(NB3(dmapp_aand_qw, w, sheap(), right, 0xff), start & 0xff, -1);
        STEP(NB3(dmapp_aor_qw, w, sheap(), right, 0x7000000000000000LL), start | 0x7000000000000000LL, -1);
        STEP(NB3(dmapp_axor_qw, w, sheap(), right, -1), ~start, -1);
        STEP(NB3(dmapp_afadd_qw, &old, w, sheap(), right, -7), start - 7, start);
        STEP(NB3(dmapp_afand_qw, &old, w, sheap(), right, 0xf0f0), start & 0xf0f0, start);
        STEP(NB3(dmapp_afor_qw, &old, w, sheap(), right, 1), start | 1, start);
        STEP(NB3(dmapp_afxor_qw, &old, w, sheap(), right, 0x5555), start ^ 0x5555, start);
        STEP(NB3(dmapp_afax_qw, &old, w, sheap(), right, 0xffff0000LL, 0x0000abcdLL), (start & 0xffff0000LL) ^ 0xabcdLL, start);
        STEP(NB3(dmapp_acswap_qw, &old, w, sheap(), right, start, 77), 77, start);
        STEP(NB3(dmapp_acswap_qw, &old, w, sheap(), right, start + 1, 77), start, start); /* no swap, old returned */
    }
    /* Contention: everyone adds to PE 0's data-segment word. */
    word = 0;
    barrier();
    int64_t prev_max = -1, old;
    for (int i = 0; i < ITERS; i++) {
        if (i & 1) OK(dmapp_aadd_qw(&word, dseg(), 0, 1));
        else {
            OK(dmapp_afadd_qw(&old, &word, dseg(), 0, 1));
            CHECK(old >= 0 && old < (int64_t)ITERS * npes);
            CHECK(old > prev_max);  /* my own fetches see the word grow */
            prev_max = old;
        }
    }
    barrier();
    if (me == 0) CHECK_EQ(word, (int64_t)ITERS * npes);
    barrier();
    OK(dmapp_finalize());
    printf("dmapp_amo: pe %d of %d ok\n", me, npes);
    return 0;
}
