/* The digest's section 9, one behaviour per run: dmapp_s9 ITEM (1..10).
 * Run with XT_SYMMETRIC_HEAP_SIZE=8M except item 9 (see c-tests/dmapp.list). */
#include <unistd.h>
#include <stdatomic.h>
#include "dmtest.h"

static int64_t dword[16];           /* data segment */
static volatile int64_t flagword;   /* data segment */

static void item1(void) {   /* fetching AMO roles: target_addr is LOCAL, source_* remote */
    int64_t *w = dmapp_sheap_malloc(8), res = 0;
    *w = 100 + me;
    barrier();
    int right = (me + 1) % npes;
    OK(dmapp_afadd_qw(&res, w, sheap(), right, 5));
    CHECK_EQ(res, 100 + right);              /* old value of the REMOTE word, here */
    barrier();
    CHECK_EQ(*w, 100 + me + 5);              /* my word was changed by my left neighbour */
    /* non-fetching: target_* is the remote word */
    barrier();
    OK(dmapp_aadd_qw(w, sheap(), right, 10));
    barrier();
    CHECK_EQ(*w, 115 + me);
}

static void item2(void) {   /* AFAX = (old & and) ^ xor, not fetch-xor; CSWAP returns old */
    int64_t *w = dmapp_sheap_malloc(8), old;
    *w = 0x00ff00ff00ff00ffLL;
    barrier();
    OK(dmapp_afax_qw(&old, w, sheap(), me, 0x0000ffff0000ffffLL, 0x1111000000001111LL));
    CHECK_EQ(old, 0x00ff00ff00ff00ffLL);
    CHECK_EQ(*w, (0x00ff00ff00ff00ffLL & 0x0000ffff0000ffffLL) ^ 0x1111000000001111LL);
    *w = 5;
    OK(dmapp_acswap_qw(&old, w, sheap(), me, 6, 9));
    CHECK_EQ(old, 5); CHECK_EQ(*w, 5);       /* no match: unchanged, old returned */
    OK(dmapp_acswap_qw(&old, w, sheap(), me, 5, 9));
    CHECK_EQ(old, 5); CHECK_EQ(*w, 9);
}

static void item3(void) {   /* translation through the descriptor, valid after a byte copy */
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    char *pad = dmapp_sheap_malloc(1000 + 37 * me);  /* asymmetric allocation... */
    (void)pad;
    barrier();
    /* ...breaks symmetry on purpose, so use only symmetric-call-order data below */
    int64_t *x = dmapp_sheap_malloc(8 * 4);          /* offsets differ per PE now */
    x[0] = x[1] = x[2] = x[3] = 0;
    /* 1. symmetric data segment, own local address + own data_seg */
    barrier();
    int64_t v = 1000 + me;
    OK(dmapp_put(&dword[3], dseg(), right, &v, 1, DMAPP_QW));
    /* 2. the right neighbour's sheap descriptor and address, copied into my data
     *    segment by the neighbour itself (byte copy), used against it */
    struct { void *a; dmapp_seg_desc_t d; } mine = {x, job.sheap_seg};
    static unsigned char box[sizeof mine];
    OK(dmapp_put(box, dseg(), left, &mine, sizeof mine, DMAPP_BYTE));
    barrier();
    CHECK_EQ(dword[3], 1000 + left);
    struct { void *a; dmapp_seg_desc_t d; } theirs;
    memcpy(&theirs, box, sizeof theirs);
    int64_t w = 2000 + me;
    OK(dmapp_put((int64_t *)theirs.a + 2, &theirs.d, right, &w, 1, DMAPP_QW));
    barrier();
    CHECK_EQ(x[2], 2000 + left);
    CHECK_EQ(x[1], 0); CHECK_EQ(x[3], 0);
}

static void item4(void) {   /* PMI_Barrier orders blocking PUTs of every PE */
    int64_t *slots = dmapp_sheap_malloc(8 * npes);
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < npes; i++) slots[i] = -1;
        CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
        int64_t v = round * 1000 + me;
        for (int p = 0; p < npes; p++) OK(dmapp_put(&slots[me], sheap(), p, &v, 1, DMAPP_QW));
        CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
        for (int i = 0; i < npes; i++) CHECK_EQ(slots[i], round * 1000 + i);
        CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    }
}

static void item5(void) {   /* blocking PUT = visible at the target on return: target spins, no barrier */
    if (npes < 2) SKIP("needs 2 PEs");
    flagword = 0;
    barrier();
    if (me == 0) {
        for (int64_t i = 1; i <= 200; i++) {
            int64_t data[8];
            for (int k = 0; k < 8; k++) data[k] = i * 10 + k;
            OK(dmapp_put(dword, dseg(), 1, data, 8, DMAPP_QW));
            OK(dmapp_put((void *)&flagword, dseg(), 1, &i, 1, DMAPP_QW));
            int64_t ack = 0;
            do OK(dmapp_get(&ack, (void *)&flagword, dseg(), 0, 1, DMAPP_QW)); while (ack != -i);
        }
    } else if (me == 1) {
        for (int64_t i = 1; i <= 200; i++) {
            while (atomic_load((_Atomic int64_t *)&flagword) != i) ;
            for (int k = 0; k < 8; k++) CHECK_EQ(dword[k], i * 10 + k);
            int64_t a = -i;
            OK(dmapp_put((void *)&flagword, dseg(), 0, &a, 1, DMAPP_QW));
        }
    }
    barrier();
}

static void item6(void) {   /* self-targeted operations of every kind */
    int64_t *b = dmapp_sheap_malloc(8 * 16), src[4] = {1, 2, 3, 4}, got[4], old;
    memset(b, 0, 8 * 16);
    dmapp_pe_t self[1] = {me};
    OK(dmapp_put(b, sheap(), me, src, 4, DMAPP_QW));
    OK(dmapp_get(got, b, sheap(), me, 4, DMAPP_QW));
    for (int i = 0; i < 4; i++) CHECK_EQ(got[i], i + 1);
    OK(dmapp_iput(b + 4, sheap(), me, src, 2, 1, 2, DMAPP_QW));
    CHECK_EQ(b[4], 1); CHECK_EQ(b[6], 2);
    OK(dmapp_put_ixpe(b + 8, sheap(), self, 1, src, 2, DMAPP_QW));
    CHECK_EQ(b[9], 2);
    OK(dmapp_afadd_qw(&old, b, sheap(), me, 10));
    CHECK_EQ(old, 1); CHECK_EQ(b[0], 11);
    OK(dmapp_put(&dword[0], dseg(), me, src, 4, DMAPP_QW));   /* overlapping self copy source */
    CHECK_EQ(dword[3], 4);
}

static void item7(void) {   /* syncid written, flag 0/1, gsync does not free _nb handles */
    int64_t *b = dmapp_sheap_malloc(8), v = 3, got = 0;
    dmapp_syncid_handle_t h = NULL;
    OK(dmapp_put_nb(b, sheap(), me, &v, 1, DMAPP_QW, &h));
    CHECK(h != NULL);
    OK(dmapp_gsync_wait());
    CHECK(h != NULL);
    int flag = 0;
    OK(dmapp_syncid_test(&h, &flag));
    CHECK_EQ(flag, 1); CHECK(h == NULL);
    OK(dmapp_get_nb(&got, b, sheap(), me, 1, DMAPP_QW, &h));
    OK(dmapp_syncid_wait(&h));
    CHECK_EQ(got, 3);
}

static void item8(void) {   /* enum values, element units, zero-length GETs, byte ixget */
    CHECK_EQ(DMAPP_DQW, 0); CHECK_EQ(DMAPP_QW, 1); CHECK_EQ(DMAPP_DW, 2); CHECK_EQ(DMAPP_BYTE, 3);
    unsigned char *b = dmapp_sheap_malloc(64), src[64];
    memset(b, 0, 64);
    for (int i = 0; i < 64; i++) src[i] = i + 1;
    OK(dmapp_put(b, sheap(), me, src, 2, DMAPP_DQW));         /* 2 elements = 32 bytes */
    CHECK_EQ(b[31], 32); CHECK_EQ(b[32], 0);
    int32_t d[16] = {0}, s32[4] = {7, 8, 9, 10};
    ptrdiff_t ix[2] = {1, 3};
    OK(dmapp_ixput(b, sheap(), me, s32, ix, 2, DMAPP_DW));     /* offsets in elements */
    CHECK_EQ(((int32_t *)b)[1], 7); CHECK_EQ(((int32_t *)b)[3], 8);
    RC_EQ(dmapp_get(d, b, sheap(), me, 0, DMAPP_DW), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_ixget(d, b, sheap(), me, ix, 2, DMAPP_BYTE), DMAPP_RC_INVALID_PARAM);
}

static void item9(void) {   /* XT_SYMMETRIC_HEAP_SIZE: suffixes, default 0 */
    const char *e = getenv("XT_SYMMETRIC_HEAP_SIZE");
    if (!e) {
        CHECK_EQ(job.sheap_seg.len, 0);
        CHECK(dmapp_sheap_malloc(8) == NULL);
    } else if (!strcmp(e, "2600M")) {
        CHECK_EQ(job.sheap_seg.len, 2600ULL << 20);
        char *big = dmapp_sheap_malloc(2600ULL << 20);    /* reserved lazily: cheap */
        CHECK(big != NULL);
        big[0] = 1; big[(2600ULL << 20) - 1] = 2;
    } else if (!strcmp(e, "3k")) {
        CHECK_EQ(job.sheap_seg.len, 3072);
    } else if (!strcmp(e, "1G")) {
        CHECK_EQ(job.sheap_seg.len, 1ULL << 30);
    } else {
        CHECK_EQ(job.sheap_seg.len, strtoull(e, NULL, 10));
    }
}

static void item10(void) {  /* finalize synchronises: a slow PE's late PUT still lands */
    static int64_t late = 0;
    if (me == npes - 1 && npes > 1) {
        usleep(300000);
        int64_t v = 77;
        OK(dmapp_put(&late, dseg(), 0, &v, 1, DMAPP_QW));
    }
    OK(dmapp_finalize());
    if (me == 0 && npes > 1) CHECK_EQ(late, 77);
}

int main(int argc, char **argv) {
    int item = argc > 1 ? atoi(argv[1]) : 0;
    dm_init();
    switch (item) {
    case 1: item1(); break;
    case 2: item2(); break;
    case 3: item3(); break;
    case 4: item4(); break;
    case 5: item5(); break;
    case 6: item6(); break;
    case 7: item7(); break;
    case 8: item8(); break;
    case 9: item9(); break;
    case 10: item10(); printf("dmapp_s9 item %d: pe %d of %d ok\n", item, me, npes); return 0;
    default: SN_FAIL("usage: dmapp_s9 ITEM (1..10)");
    }
    barrier();
    OK(dmapp_finalize());
    printf("dmapp_s9 item %d: pe %d of %d ok\n", item, me, npes);
    return 0;
}
