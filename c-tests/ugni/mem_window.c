/* Registration windows and the threads that may write beside them.
 *
 * A registration of a page not shared yet makes the aligned window around it (256 KiB)
 * shareable too, so that the registrations of its neighbours cost only bookkeeping.
 * Pages nobody registered may be written by the kernel for another thread at any moment
 * (a read(2) into them); the library takes a window only when that write cannot be lost
 * or fail: when its write guard holds the kernel's writes (a privileged process), when
 * the calling thread is the process's only thread, or with the other threads parked
 * for the moment of the copy (a signal; their system calls restart).
 *
 *   phase 1, one thread: register 100 B on a page of a 4 MiB heap buffer whose every
 *     page holds its own pattern: with windows available, the whole window around it is
 *     a memfd mapping now (/proc/self/maps), and every byte of the buffer is unchanged.
 *   phase 2, a second thread sleeps in read(2) from a pipe into a page of another
 *     window: register 100 B on that window's first page.  "window": the window is
 *     taken (a guard that holds the kernel's writes, or the thread parked); "exact":
 *     exactly the page asked for is shared (the guard in user mode only,
 *     SOFTNIC_REGISTER_GUARD_KERNEL=0, and no parking, SOFTNIC_STOP_SIGNAL naming a
 *     signal that cannot be used); "any": either.  Either way, the read that completes
 *     afterwards lands, whole, in the page the program sees.
 *   Each rank then reads its right neighbour's two registered pieces with FMA GET
 *     (handles exchanged with PMI_Allgather): the patterns.
 *
 *   mem_window [exact|window|any]      prints "mem_window: rank R ok"
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <unistd.h>
#include "data_util.h"

#define BUF (4u << 20)
#define WIN (256u << 10)
#define PAGE 4096u

/* The pattern of the byte at offset `off` (wrapping) from the first window boundary. */
static uint8_t pat(uint64_t off, int rank)
{
    return (uint8_t)((off / PAGE) * 7 + off % 251 + rank * 13);
}
static uint8_t *w0;
#define PAT(p, rank) pat((uint64_t)((uintptr_t)(p) - (uintptr_t)w0), rank)

/* Bytes of [a, b) covered by memfd mappings of the library's backings. */
static size_t shared_bytes(uintptr_t a, uintptr_t b)
{
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f);
    char line[512];
    size_t got = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx", &lo, &hi) != 2 || !strstr(line, "softnic-bk")) continue;
        uintptr_t s = lo > a ? lo : a, e = hi < b ? hi : b;
        if (s < e) got += e - s;
    }
    fclose(f);
    return got;
}

struct reader {
    int fd;
    uint8_t *dst;
    ssize_t got;
    int err;
};

static void *read_into(void *p)
{
    struct reader *r = p;
    size_t have = 0;
    while (have < PAGE) {
        ssize_t n = read(r->fd, r->dst + have, PAGE - have);
        if (n <= 0) {
            r->err = n < 0 ? errno : 0;
            break;
        }
        have += (size_t)n;
    }
    r->got = (ssize_t)have;
    return NULL;
}

int main(int argc, char **argv)
{
    int exact = argc > 1 && !strcmp(argv[1], "exact");
    int want_window = argc > 1 && !strcmp(argv[1], "window");
    gnit_t t;
    gnit_init(&t, 64);
    uint8_t *buf = dt_alloc(BUF + WIN);
    /* The first window boundary inside the buffer, plus room for three windows. */
    w0 = (uint8_t *)(((uintptr_t)buf + WIN - 1) & ~(uintptr_t)(WIN - 1));
    for (uint64_t i = 0; i < BUF; i++) buf[i] = PAT(buf + i, t.rank);

    /* Phase 1: the only thread. */
    uint8_t *p1 = w0 + 5 * PAGE + 256;
    gni_mem_handle_t mh1 = dt_reg(&t, p1, 100, NULL, GNI_MEM_READWRITE);
    size_t sh1 = shared_bytes((uintptr_t)w0, (uintptr_t)w0 + WIN);
    CHECK(sh1 >= PAGE);
    int windows = sh1 == WIN;
    if (!windows) printf("mem_window: rank %d: no registration windows here (%zu of %u bytes shared)\n", t.rank, sh1, WIN);
    for (uint64_t i = 0; i < BUF; i++)
        if (buf[i] != PAT(buf + i, t.rank)) SN_FAIL("byte %lu changed by the registration", (unsigned long)i);

    /* Phase 2: another thread sleeps in read(2) into a page of the next window. */
    uint8_t *w1 = w0 + WIN;
    uint8_t *target = w1 + 9 * PAGE;
    int fds[2];
    CHECK(pipe(fds) == 0);
    struct reader r = { fds[0], target, 0, 0 };
    pthread_t th;
    CHECK(pthread_create(&th, NULL, read_into, &r) == 0);
    usleep(20000); /* let it reach its read */
    uint8_t *p2 = w1 + 256;
    gni_mem_handle_t mh2 = dt_reg(&t, p2, 100, NULL, GNI_MEM_READWRITE);
    size_t sh2 = shared_bytes((uintptr_t)w1, (uintptr_t)w1 + WIN);
    if (exact && sh2 != PAGE) SN_FAIL("with another thread, a user-mode guard and no parking, %zu bytes were shared (want the one page)", sh2);
    if (want_window && windows && sh2 != WIN) SN_FAIL("with another thread parked, %zu bytes were shared (want the window)", sh2);
    uint8_t msg[PAGE];
    for (unsigned i = 0; i < PAGE; i++) msg[i] = (uint8_t)(0xa5 ^ i ^ t.rank);
    CHECK(write(fds[1], msg, PAGE) == PAGE);
    CHECK(pthread_join(th, NULL) == 0);
    if (r.got != PAGE) SN_FAIL("the read beside the registration got %zd bytes (errno %d)", r.got, r.err);
    if (memcmp(target, msg, PAGE)) SN_FAIL("the read's bytes were lost");
    for (uint64_t i = 0; i < BUF; i++) {
        if (buf + i >= target && buf + i < target + PAGE) continue;
        if (buf[i] != PAT(buf + i, t.rank)) SN_FAIL("byte %lu changed", (unsigned long)i);
    }

    /* The neighbour reads both pieces. */
    gni_mem_handle_t hs1[64], hs2[64];
    uint64_t b1[64], b2[64];
    CHECK(t.size <= 64);
    gnit_exchange_mem(&t, p1, mh1, hs1, b1);
    gnit_exchange_mem(&t, p2, mh2, hs2, b2);
    int right = (t.rank + 1) % t.size;
    uint8_t *land = dt_alloc(PAGE);
    gni_mem_handle_t lmh = dt_reg(&t, land, PAGE, NULL, GNI_MEM_READWRITE);
    for (int k = 0; k < 2; k++) {
        gni_post_descriptor_t d;
        dt_desc(&d, GNI_POST_FMA_GET, GNI_CQMODE_GLOBAL_EVENT, land, lmh, k ? b2[right] : b1[right], k ? hs2[right] : hs1[right], 100);
        GNI_OK(GNI_PostFma(t.eps[right], &d));
        dt_complete(t.cq, &d, GNI_RC_SUCCESS);
        uint64_t off = (uint64_t)((k ? p2 : p1) - w0);
        for (unsigned i = 0; i < 100; i++)
            if (land[i] != pat(off + i, right)) SN_FAIL("GET %d byte %u: %#x, want %#x", k, i, land[i], pat(off + i, right));
    }
    CHECK(PMI_Barrier() == PMI_SUCCESS);
    GNI_OK(GNI_MemDeregister(t.nic, &mh1));
    GNI_OK(GNI_MemDeregister(t.nic, &mh2));
    GNI_OK(GNI_MemDeregister(t.nic, &lmh));
    printf("mem_window: rank %d ok%s\n", t.rank, windows ? " (windows)" : "");
    gnit_fini(&t);
    return 0;
}
