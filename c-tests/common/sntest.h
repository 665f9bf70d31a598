/* Small helpers shared by the softnic C tests.  A failed CHECK prints the
 * location and the failing expression and exits 1; SKIP exits 77 with a reason. */
#ifndef SNTEST_H
#define SNTEST_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>

static int sntest_rank = -1;

#define SN_FAIL(...) do { \
    fprintf(stderr, "FAIL [rank %d] %s:%d: ", sntest_rank, __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

#define CHECK(cond) do { if (!(cond)) SN_FAIL("CHECK(%s)", #cond); } while (0)

/* Compare an integer result with the expected value, printing both on failure. */
#define CHECK_EQ(got, want) do { long long g_ = (long long)(got), w_ = (long long)(want); \
    if (g_ != w_) SN_FAIL("%s == %lld, expected %s == %lld", #got, g_, #want, w_); } while (0)

#define SKIP(...) do { fprintf(stderr, "SKIP: "); fprintf(stderr, __VA_ARGS__); \
    fputc('\n', stderr); exit(77); } while (0)

/* Does call i (counted from 0) fail under SOFTNIC_FAULTS=POINT:after=AFTER,every=EVERY
 * (EVERY 0: no fault)?  As fabric faults.rs counts. */
static inline __attribute__((unused)) int sn_fault_hits(int i, int after, int every)
{
    return every > 0 && i >= after && (i - after) % every == 0;
}

/* `len` bytes of fresh anonymous memory with an aligned GiB `before` bytes in: a buffer
 * that lies in two of the library's block backings (one per aligned GiB). */
static inline uint8_t *sn_straddling_gib(size_t len, size_t before)
{
    const uintptr_t G = (uintptr_t)1 << 30;
    uint8_t *r = mmap(NULL, 3 * G, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    CHECK(r != MAP_FAILED);
    uintptr_t b = ((uintptr_t)r + G) & ~(G - 1);
    uint8_t *p = mmap((void *)(b - before), len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    CHECK(p == (uint8_t *)(b - before));
    return p;
}

#endif
