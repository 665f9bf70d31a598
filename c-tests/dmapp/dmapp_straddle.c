/* Puts, gets and fetch-adds into a neighbour PE's data segment where it straddles an
 * aligned GiB of addresses: the program is linked to load just below 1 GiB (c-tests.mk:
 * -no-pie, text segment at 0x3fc00000), so its 8 MiB static array crosses 0x40000000.
 * The fabric keeps rebound memory in one backing per aligned GiB, so the segment lies in
 * two of its owner's backings and cannot be pinned whole: the library pins the piece in
 * each GiB at its first use instead (SOFTNIC_LOG=debug names each piece pinned; the
 * list counts them), and an access across the boundary takes the per-access path.
 * Words on both sides of the boundary, at the array's ends and a put across the
 * boundary, each by dmapp_put, dmapp_put_nbi (one gsync) and a fetch-add, several times
 * in a row (the first use pins, the next ones go through the pin); the initiator reads
 * every result back with dmapp_get, and the owner checks every word of its array (a
 * piece pin addressed from the wrong start would write elsewhere).
 * Run with XT_SYMMETRIC_HEAP_SIZE set (any size). */
#include "dmtest.h"

#define N (1u << 20)                 /* QWs of the array: 8 MiB */
#define REPS 4
#define CROSS 6                      /* QWs of the put across the boundary */

static int64_t arr[N];

static int64_t val(int pe, size_t i, int k) { return (int64_t)(0x100000000LL * (pe + 1) + (int64_t)i * 16 + k); }

int main(void)
{
    dm_init();
    const uintptr_t G = (uintptr_t)1 << 30;
    uintptr_t a = (uintptr_t)arr, e = (uintptr_t)(arr + N);
    if ((a & ~(G - 1)) == ((e - 1) & ~(G - 1)))
        SKIP("the array %#lx+%u does not straddle an aligned GiB (linked elsewhere?)", (unsigned long)a, N * 8);
    const size_t b = (size_t)((((a + G) & ~(G - 1)) - a) / 8);   /* first QW past the boundary */
    CHECK(b > 64 && b + 64 < N);
    const size_t put_at[] = { 0, 1, b - 2, b - 1, b, b + 1, b + 40, N - 1 };
    const size_t nbi_at[] = { 5, b - 9, b + 9, N - 5 };
    const size_t amo_at[] = { 9, b - 17, b + 17, N - 9 };
    const size_t cross_at = b - CROSS / 2;
    const int to = (me + 1) % npes, from = (me + npes - 1) % npes;
    barrier();

    for (int k = 0; k < REPS; k++) {
        for (size_t j = 0; j < sizeof put_at / sizeof put_at[0]; j++) {
            int64_t v = val(me, put_at[j], k), got = 0;
            OK(dmapp_put(&arr[put_at[j]], dseg(), to, &v, 1, DMAPP_QW));
            OK(dmapp_get(&got, &arr[put_at[j]], dseg(), to, 1, DMAPP_QW));
            CHECK_EQ(got, v);
        }
        for (size_t j = 0; j < sizeof nbi_at / sizeof nbi_at[0]; j++) {
            int64_t v = val(me, nbi_at[j], k);
            OK(dmapp_put_nbi(&arr[nbi_at[j]], dseg(), to, &v, 1, DMAPP_QW));
        }
        OK(dmapp_gsync_wait());
        for (size_t j = 0; j < sizeof nbi_at / sizeof nbi_at[0]; j++) {
            int64_t got = 0;
            OK(dmapp_get(&got, &arr[nbi_at[j]], dseg(), to, 1, DMAPP_QW));
            CHECK_EQ(got, val(me, nbi_at[j], k));
        }
        for (size_t j = 0; j < sizeof amo_at / sizeof amo_at[0]; j++) {
            int64_t old = -1;
            OK(dmapp_afadd_qw(&old, &arr[amo_at[j]], dseg(), to, (int64_t)j + 1));
            CHECK_EQ(old, ((int64_t)j + 1) * k);
        }
        int64_t cross[CROSS], back[CROSS];
        for (int i = 0; i < CROSS; i++) cross[i] = val(me, cross_at + (size_t)i, k) ^ 0x5a5a;
        OK(dmapp_put(&arr[cross_at], dseg(), to, cross, CROSS, DMAPP_QW));
        OK(dmapp_get(back, &arr[cross_at], dseg(), to, CROSS, DMAPP_QW));
        CHECK(memcmp(back, cross, sizeof cross) == 0);
    }
    barrier();

    /* The owner: every word of the array is what the neighbour last wrote, or zero. */
    size_t written = 0;
    for (size_t i = 0; i < N; i++) {
        int64_t want = 0;
        for (size_t j = 0; j < sizeof put_at / sizeof put_at[0]; j++)
            if (put_at[j] == i) want = val(from, i, REPS - 1);
        for (size_t j = 0; j < sizeof nbi_at / sizeof nbi_at[0]; j++)
            if (nbi_at[j] == i) want = val(from, i, REPS - 1);
        for (size_t j = 0; j < sizeof amo_at / sizeof amo_at[0]; j++)
            if (amo_at[j] == i) want = ((int64_t)j + 1) * REPS;
        /* The put across the boundary came after the single-word ones it overlaps. */
        if (i >= cross_at && i < cross_at + CROSS) want = val(from, i, REPS - 1) ^ 0x5a5a;
        if (arr[i] != want) SN_FAIL("arr[%zu] (boundary at %zu) == %lld, expected %lld", i, b, (long long)arr[i], (long long)want);
        written += want != 0;
    }
    CHECK(written > 0);
    barrier();
    OK(dmapp_finalize());
    printf("dmapp_straddle: pe %d of %d ok\n", me, npes);
    return 0;
}
