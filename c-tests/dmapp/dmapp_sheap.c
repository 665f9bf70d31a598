/* Symmetric heap: the same call sequence gives the same offsets on every PE (each PE
 * writes its offsets into PE 0, which compares), alignment, malloc(0), realloc and
 * free rules, exhaustion.  Run with XT_SYMMETRIC_HEAP_SIZE=1M. */
#include "dmtest.h"

#define NOPS 12
static int64_t offs[64][NOPS];   /* on PE 0: everyone's offsets */

int main(void) {
    dm_init();
    char *base = job.sheap_seg.addr;
    CHECK_EQ(job.sheap_seg.len, 1 << 20);
    int64_t mine[NOPS];
    char *p[NOPS] = {0};
    size_t sizes[NOPS] = {100, 0, 4096, 1, 77, 100000, 16, 3000, 0, 65, 64, 12345};
    for (int i = 0; i < NOPS; i++) {
        p[i] = dmapp_sheap_malloc(sizes[i]);
        CHECK(p[i] != NULL);
        CHECK(((uintptr_t)p[i] & 15) == 0);    /* DQW alignment at least */
        if (i == 4) { dmapp_sheap_free(p[1]); p[1] = NULL; }
        if (i == 7) { p[2] = dmapp_sheap_realloc(p[2], 9000); CHECK(p[2] != NULL); }
        mine[i] = p[i] - base;
    }
    for (int i = 0; i < NOPS; i++)
        for (int j = 0; j < i; j++) if (p[i] && p[j]) CHECK(p[i] != p[j]);   /* malloc(0) blocks are unique */
    CHECK(npes <= 64);
    barrier();
    OK(dmapp_put(offs[me], dseg(), 0, mine, NOPS, DMAPP_QW));
    barrier();
    if (me == 0)
        for (int r = 1; r < npes; r++)
            for (int i = 0; i < NOPS; i++) CHECK_EQ(offs[r][i], offs[0][i]);

    /* realloc keeps contents, moves when it must, NULL/0 rules. */
    char *q = dmapp_sheap_malloc(200);
    CHECK(q != NULL);
    for (int i = 0; i < 200; i++) q[i] = (char)i;
    char *r = dmapp_sheap_realloc(q, 50000);
    CHECK(r != NULL);
    for (int i = 0; i < 200; i++) CHECK_EQ(r[i], (char)i);
    r = dmapp_sheap_realloc(r, 10);                  /* shrink in place */
    CHECK(r != NULL);
    for (int i = 0; i < 10; i++) CHECK_EQ(r[i], (char)i);
    CHECK(dmapp_sheap_realloc(r, 0) == NULL);        /* frees */
    char stackbuf[8];
    CHECK(dmapp_sheap_realloc(stackbuf, 8) == NULL); /* not from the heap */
    char *s = dmapp_sheap_realloc(NULL, 32);         /* = malloc */
    CHECK(s != NULL);
    dmapp_sheap_free(NULL);                          /* no-op */
    /* Exhaustion: NULL, and a failed realloc leaves the block alone. */
    CHECK(dmapp_sheap_malloc(2 << 20) == NULL);
    s[0] = 42;
    CHECK(dmapp_sheap_realloc(s, 4 << 20) == NULL);
    CHECK_EQ(s[0], 42);
    /* Free everything: the whole heap is one block again. */
    for (int i = 0; i < NOPS; i++) dmapp_sheap_free(p[i]);
    dmapp_sheap_free(s);
    char *all = dmapp_sheap_malloc(1 << 20);
    CHECK(all == base);
    barrier();
    OK(dmapp_finalize());
    printf("dmapp_sheap: pe %d of %d ok\n", me, npes);
    return 0;
}
