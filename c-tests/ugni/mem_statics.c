/* Registering a program's initialised statics while other threads write them.
 *
 * A registration makes the pages it covers shareable by copying them; a write another
 * thread makes to such a page between the copy and the switch to the copy must not be
 * lost.  For .data (a private mapping of the executable) no userfaultfd guard can hold
 * those writes: the library parks the other threads for that moment instead.
 *
 * Two writer threads increment counters in every page of a 256 KiB initialised static
 * array (and in a heap array, the same way) as fast as they can, keeping their own
 * tallies, while the main thread registers and deregisters a word of each page in turn
 * (each page's first registration copies it) and a third thread sleeps in read(2) into
 * a static page.  Afterwards every counter equals its tally, the read landed whole, and
 * the right neighbour reads the first word of each page with FMA GET (handles exchanged
 * with PMI_Allgather).
 *
 * "blocked": the first writer blocks every signal, so the threads cannot be parked:
 * registration still succeeds, each process says once (SOFTNIC_LOG warning) that writes
 * may have been lost, and lost counts are not an error.
 *
 *   mem_statics [ROUNDS] [blocked]      prints "mem_statics: rank R ok"
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#include "data_util.h"

#define PAGES 64
#define WORDS (PAGES * 512)
#define WRITERS 2

/* Initialised, so it lies in .data (the file's pages), not in the anonymous .bss. */
static volatile uint64_t statics[WORDS] = { 0x5eed };
static uint8_t landing[8192] = { 1 };
static atomic_int stop;
static uint64_t *heap;
static uint64_t tally[WRITERS][PAGES];
static int blocked;

static void *writer(void *p)
{
    int w = (int)(long)p;
    if (blocked && w == 0) {
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, NULL);
    }
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        for (int k = 0; k < PAGES; k++) {
            statics[k * 512 + 8 + w]++;
            heap[k * 512 + 8 + w]++;
            tally[w][k]++;
        }
    }
    return NULL;
}

struct reader {
    int fd;
    ssize_t got;
};

static void *reader(void *p)
{
    struct reader *r = p;
    uint8_t *dst = (uint8_t *)(((uintptr_t)landing + 4095) & ~(uintptr_t)4095);
    size_t have = 0;
    while (have < 4096) {
        ssize_t n = read(r->fd, dst + have, 4096 - have);
        if (n <= 0) break;
        have += (size_t)n;
    }
    r->got = (ssize_t)have;
    return NULL;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    blocked = argc > 2 && !strcmp(argv[2], "blocked");
    gnit_t t;
    gnit_init(&t, 64);
    heap = dt_alloc(WORDS * 8);
    for (int k = 0; k < PAGES; k++) statics[k * 512] = heap[k * 512] = 0xa000u + (uint64_t)k * 16 + (uint64_t)t.rank;
    int fds[2];
    CHECK(pipe(fds) == 0);
    struct reader rd = { fds[0], 0 };
    pthread_t th[WRITERS], rt;
    CHECK(pthread_create(&rt, NULL, reader, &rd) == 0);
    for (long w = 0; w < WRITERS; w++) CHECK(pthread_create(&th[w], NULL, writer, (void *)w) == 0);
    usleep(10000);

    gni_mem_handle_t mh[PAGES];
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < PAGES; k++) {
            gni_mem_handle_t s = dt_reg(&t, (void *)&statics[k * 512], 64, NULL, GNI_MEM_READWRITE);
            gni_mem_handle_t h = dt_reg(&t, &heap[k * 512], 64, NULL, GNI_MEM_READWRITE);
            GNI_OK(GNI_MemDeregister(t.nic, &h));
            if (r == rounds - 1) mh[k] = s;
            else GNI_OK(GNI_MemDeregister(t.nic, &s));
        }
    }
    uint8_t msg[4096];
    for (unsigned i = 0; i < sizeof msg; i++) msg[i] = (uint8_t)(i * 3 + t.rank);
    CHECK(write(fds[1], msg, sizeof msg) == (ssize_t)sizeof msg);
    usleep(10000);
    atomic_store(&stop, 1);
    for (int w = 0; w < WRITERS; w++) CHECK(pthread_join(th[w], NULL) == 0);
    CHECK(pthread_join(rt, NULL) == 0);
    long lost = 0;
    for (int w = 0; w < WRITERS; w++)
        for (int k = 0; k < PAGES; k++) {
            if (statics[k * 512 + 8 + w] != tally[w][k]) {
                if (!lost) fprintf(stderr, "rank %d: static counter %d of page %d is %lu, tally %lu\n", t.rank, w, k,
                                   (unsigned long)statics[k * 512 + 8 + w], (unsigned long)tally[w][k]);
                lost++;
            }
            if (heap[k * 512 + 8 + w] != tally[w][k]) SN_FAIL("heap counter %d of page %d is %lu, tally %lu", w, k, (unsigned long)heap[k * 512 + 8 + w], (unsigned long)tally[w][k]);
        }
    if (lost && !blocked) SN_FAIL("%ld static counters lost writes", lost);
    if (rd.got != 4096) SN_FAIL("the read into a static page got %zd bytes", rd.got);
    if (memcmp((uint8_t *)(((uintptr_t)landing + 4095) & ~(uintptr_t)4095), msg, sizeof msg)) SN_FAIL("the read's bytes were lost");

    /* The right neighbour's first word of each page. */
    gni_mem_handle_t *hs = calloc((size_t)t.size * PAGES, sizeof *hs);
    uint64_t *bs = calloc((size_t)t.size * PAGES, 8);
    CHECK(hs && bs);
    {
        uint64_t *mine = calloc(PAGES * 3, 8), *all = calloc((size_t)t.size * PAGES * 3, 8);
        CHECK(mine && all);
        for (int k = 0; k < PAGES; k++) {
            mine[k * 3] = (uint64_t)(uintptr_t)&statics[k * 512];
            mine[k * 3 + 1] = mh[k].qword1;
            mine[k * 3 + 2] = mh[k].qword2;
        }
        CHECK(PMI_Allgather(mine, all, PAGES * 3 * 8) == PMI_SUCCESS);
        for (int r = 0; r < t.size; r++)
            for (int k = 0; k < PAGES; k++) {
                bs[r * PAGES + k] = all[(r * PAGES + k) * 3];
                hs[r * PAGES + k].qword1 = all[(r * PAGES + k) * 3 + 1];
                hs[r * PAGES + k].qword2 = all[(r * PAGES + k) * 3 + 2];
            }
        free(mine);
        free(all);
    }
    int right = (t.rank + 1) % t.size;
    uint64_t *land = dt_alloc(4096);
    gni_mem_handle_t lmh = dt_reg(&t, land, 4096, NULL, GNI_MEM_READWRITE);
    for (int k = 0; k < PAGES; k++) {
        gni_post_descriptor_t d;
        dt_desc(&d, GNI_POST_FMA_GET, GNI_CQMODE_GLOBAL_EVENT, land, lmh, bs[right * PAGES + k], hs[right * PAGES + k], 8);
        GNI_OK(GNI_PostFma(t.eps[right], &d));
        dt_complete(t.cq, &d, GNI_RC_SUCCESS);
        if (land[0] != 0xa000u + (uint64_t)k * 16 + (uint64_t)right) SN_FAIL("GET of page %d: %#lx", k, (unsigned long)land[0]);
    }
    CHECK(PMI_Barrier() == PMI_SUCCESS);
    for (int k = 0; k < PAGES; k++) GNI_OK(GNI_MemDeregister(t.nic, &mh[k]));
    GNI_OK(GNI_MemDeregister(t.nic, &lmh));
    printf("mem_statics: rank %d ok\n", t.rank);
    gnit_fini(&t);
    return 0;
}
