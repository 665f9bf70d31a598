/* Small puts and AMOs into registrations that cross a boundary of the fabric's 1 GiB
 * backing blocks (where a large buffer lands decides it: a 64 MiB buffer does in about
 * one run of sixteen).  Such a registration cannot be pinned whole; ugni-sys post.rs
 * `pin_after` pins the 2 MiB block of it each access falls in, so its small posts take
 * the pinned path like any other (the manifest runs this with SOFTNIC_LOG=debug and
 * rejects "cannot be pinned").  Every rank puts to and fetch-adds at its right neighbour
 * on both sides of the boundary, fetching into its own straddling registration, and
 * every value is checked. */
#include "data_util.h"
#include <sys/mman.h>

#define GIB (1ull << 30)
#define LEN (8ull << 20)
#define ROUNDS 40

/* LEN bytes whose middle is a 1 GiB-aligned address (placed inside a reservation of
 * 2 GiB of our own address space). */
static uint8_t *straddling(void)
{
    uint8_t *r = mmap(NULL, 2 * GIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    CHECK(r != MAP_FAILED);
    uint64_t mid = ((uint64_t)(uintptr_t)r + GIB) & ~(GIB - 1);
    uint8_t *p = (uint8_t *)(uintptr_t)(mid - LEN / 2);
    CHECK(mmap(p, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == p);
    memset(p, 0, LEN);
    return p;
}

int main(void)
{
    gnit_t t;
    gnit_init(&t, 64);
    int n = t.size, me = t.rank, right = (me + 1) % n, left = (me + n - 1) % n;
    uint8_t *buf = straddling();
    gni_mem_handle_t mh = dt_reg(&t, buf, LEN, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t *mhs = calloc(n, sizeof(*mhs));
    uint64_t *bases = calloc(n, sizeof(*bases));
    gnit_exchange_mem(&t, buf, mh, mhs, bases);
    uint64_t *src = dt_alloc(64);
    gni_mem_handle_t smh = dt_reg(&t, src, 64, NULL, GNI_MEM_READWRITE);
    /* Below the boundary and above it; puts at +0..+127, the counter at +256, our
     * fetched values at +512 (of our own buffer). */
    const uint64_t offs[2] = { LEN / 2 - 4096, LEN / 2 + 4096 };
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < ROUNDS; i++) {
            gni_post_descriptor_t d;
            src[0] = ((uint64_t)me << 32) | ((uint64_t)k << 16) | (uint64_t)i;
            dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, src, smh, bases[right] + offs[k] + 8 * (i % 16), mhs[right], 8);
            dt_fma(&t, right, &d);
            uint64_t *res = (uint64_t *)(buf + offs[k] + 512);
            dt_desc(&d, GNI_POST_AMO, GNI_CQMODE_GLOBAL_EVENT, res, mh, bases[right] + offs[k] + 256, mhs[right], 8);
            d.amo_cmd = GNI_FMA_ATOMIC_FADD;
            d.first_operand = 1;
            dt_fma(&t, right, &d);
            CHECK_EQ(*res, (uint64_t)i);
        }
    }
    dt_barrier();
    for (int k = 0; k < 2; k++) {
        CHECK_EQ(*(volatile uint64_t *)(buf + offs[k] + 256), ROUNDS);
        for (int j = 0; j < 16; j++) {
            int last = ROUNDS - 1 - ((ROUNDS - 1 - j) % 16);   /* the last round that wrote slot j */
            CHECK_EQ(*(volatile uint64_t *)(buf + offs[k] + 8 * j), ((uint64_t)left << 32) | ((uint64_t)k << 16) | (uint64_t)last);
        }
    }
    dt_barrier();
    GNI_OK(GNI_MemDeregister(t.nic, &smh));
    GNI_OK(GNI_MemDeregister(t.nic, &mh));
    gnit_fini(&t);
    printf("data_pins_straddle: rank %d ok\n", me);
    return 0;
}
