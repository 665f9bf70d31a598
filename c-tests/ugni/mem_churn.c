/* Registering many short-lived buffers, as Charm++'s uGNI layer does for each zero-copy
 * message: a fresh user buffer is registered, handed to the peer, and deregistered when
 * the transfer is done; one registration is live at a time.
 *
 *   mem_churn [CYCLES]      (CYCLES per phase, default 100000)
 *
 * Ranks pair up (2k, 2k+1): the even rank churns, the odd one is its peer (an odd last
 * rank churns alone).  Phase A walks the pages of one 64 MiB malloc'd buffer (a stride
 * permutation: every page once per pass) with 100 B - 3 KiB registrations at varying
 * offsets; phase B registers separately malloc'd buffers of varying sizes (100 B to
 * 3 MiB: heap and mmap'd chunks), freed a few cycles later.  Every 8th cycle the churning
 * rank fills the buffer with a fresh pattern and sends (address, handle, length, seed)
 * to its peer with FMA_PUT_W_SYNCFLAG into a control page; the peer reads the buffer
 * with FMA or RDMA GET (the first and last 64 KiB), checks the pattern, writes another
 * one back with PUT and answers the same way; the churning rank then checks the peer's
 * bytes in its buffer and deregisters.  Every 64th exchange the buffer is deregistered
 * first: the peer's GET with the stale handle must fail (TRANSACTION_ERROR), although
 * the pages stay shared.  GNI_MemRegister must never fail (real uGNI counts only live
 * registrations), and the open descriptors, the mappings (/proc/self/maps) and the
 * resident memory of both ranks must stay flat once the first part of each phase is
 * done. */
#define _GNU_SOURCE
#include <dirent.h>
#include <sched.h>
#include "data_util.h"

#define CTL 8192                 /* control page: message, flags */
#define SCR (1u << 20)           /* staging for GET/PUT */
#define PEEK (64u << 10)         /* bytes checked at each end of a buffer */
#define BIG (64u << 20)          /* phase A's buffer */
#define SHARE 8                  /* every SHARE-th cycle goes to the peer */
#define RING 16                  /* phase B: buffers freed RING cycles later */
#define WAIT_S 20.0

struct msg {                     /* at offset 0 of the control page */
    uint64_t addr, q1, q2, len, seed, stale;
};
#define MSG_FLAG 512             /* seq of the last message (written by the churner) */
#define ACK_FLAG 1024            /* seq of the last answer (written by the peer) */

static gnit_t t;
static uint8_t *ctl, *scr;
static gni_mem_handle_t ctl_mh, scr_mh, *ctl_mhs;
static uint64_t *ctl_bases;

static uint8_t pat(uint64_t seed, uint64_t i)
{
    return (uint8_t)(seed * 131 + i * 7 + (i >> 8) + 1);
}

static long count_dir(const char *path)
{
    DIR *d = opendir(path);
    CHECK(d);
    long n = 0;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

static long count_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f);
    long n = 0;
    int c;
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    CHECK(f);
    char line[256];
    long v = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) v = atol(line + 6);
    fclose(f);
    return v;
}

struct usage { long fds, maps, rss; };

static struct usage usage(void)
{
    struct usage u = { count_dir("/proc/self/fd"), count_maps(), rss_kib() };
    return u;
}

/* Resources must not grow between the checkpoint and now (small slack for what the
 * library or libc opens or maps on their own: a log line, a lazily created thread). */
static void check_flat(const char *phase, struct usage was, struct usage now)
{
    if (now.fds > was.fds + 2) SN_FAIL("%s: open descriptors grew from %ld to %ld", phase, was.fds, now.fds);
    if (now.maps > was.maps + 8) SN_FAIL("%s: mappings grew from %ld to %ld", phase, was.maps, now.maps);
    if (now.rss > was.rss + 64 * 1024) SN_FAIL("%s: resident memory grew from %ld to %ld KiB", phase, was.rss, now.rss);
    printf("mem_churn: rank %d %s: fds %ld -> %ld, mappings %ld -> %ld, rss %ld -> %ld KiB\n",
           t.rank, phase, was.fds, now.fds, was.maps, now.maps, was.rss, now.rss);
}

/* Spins on a word a peer PUTs, yielding the core now and then (the two ranks may share
 * one core of a busy machine). */
static void wait_word(volatile uint64_t *w, uint64_t want, const char *what)
{
    double t0 = dt_now();
    for (unsigned long spins = 0; __atomic_load_n(w, __ATOMIC_ACQUIRE) != want; spins++) {
        if (spins % 256 == 255) sched_yield();
        if (spins % 4096 == 4095 && dt_now() - t0 > WAIT_S)
            SN_FAIL("no %s %llu after %.0f s (word %llu)", what, (unsigned long long)want, WAIT_S, (unsigned long long)*w);
    }
}

/* FMA_PUT_W_SYNCFLAG of `len` staged bytes to `off` of `peer`'s control page, the flag
 * word `flag_off` set to `seq` after them. */
static void put_ctl(int peer, uint64_t off, size_t len, uint64_t flag_off, uint64_t seq)
{
    gni_post_descriptor_t d;
    dt_desc(&d, GNI_POST_FMA_PUT_W_SYNCFLAG, GNI_CQMODE_GLOBAL_EVENT, scr, scr_mh, ctl_bases[peer] + off, ctl_mhs[peer], len);
    d.sync_flag_addr = ctl_bases[peer] + flag_off;
    d.sync_flag_value = seq;
    dt_fma(&t, peer, &d);
}

/* GET (get != 0) or PUT of `len` bytes between scr and the peer's `remote`. */
static gni_return_t move(int peer, int get, uint64_t remote, gni_mem_handle_t rmh, size_t len, gni_return_t want)
{
    gni_post_descriptor_t d;
    int rdma = len > 4096;
    gni_post_type_t type = rdma ? (get ? GNI_POST_RDMA_GET : GNI_POST_RDMA_PUT) : (get ? GNI_POST_FMA_GET : GNI_POST_FMA_PUT);
    dt_desc(&d, type, GNI_CQMODE_GLOBAL_EVENT, scr, scr_mh, remote, rmh, len);
    if (rdma) GNI_OK(GNI_PostRdma(t.eps[peer], &d));
    else GNI_OK(GNI_PostFma(t.eps[peer], &d));
    dt_complete(t.cq, &d, want);
    return want;
}

/* The byte ranges of a buffer the peer checks: 4-aligned, at most PEEK at each end. */
static void spans(uint64_t addr, uint64_t len, uint64_t s[2][2])
{
    uint64_t a = (addr + 3) & ~3ull, e = (addr + len) & ~3ull;
    if (e <= a) { s[0][0] = s[0][1] = s[1][0] = s[1][1] = a; return; }
    s[0][0] = a; s[0][1] = e - a > PEEK ? a + PEEK : e;
    s[1][0] = e - a > 2 * PEEK ? e - PEEK : s[0][1]; s[1][1] = e;
}

/* The peer: serves the churning rank's messages until one of length 0. */
static long serve(int owner)
{
    struct msg *m = (struct msg *)ctl;
    volatile uint64_t *flag = (volatile uint64_t *)(ctl + MSG_FLAG);
    static uint64_t seq;        /* the churner's sequence, over both phases */
    long served = 0;
    for (;;) {
        seq++;
        wait_word(flag, seq, "message");
        struct msg x = *m;
        if (x.len == 0) return served;
        gni_mem_handle_t h = { .qword1 = x.q1, .qword2 = x.q2 };
        uint64_t s[2][2];
        spans(x.addr, x.len, s);
        for (int k = 0; k < 2; k++) {
            size_t n = s[k][1] - s[k][0];
            if (!n) continue;
            if (x.stale) {
                move(owner, 1, s[k][0], h, n, GNI_RC_TRANSACTION_ERROR);
                continue;
            }
            memset(scr, 0, n);
            move(owner, 1, s[k][0], h, n, GNI_RC_SUCCESS);
            for (size_t i = 0; i < n; i++)
                if (scr[i] != pat(x.seed, s[k][0] - x.addr + i))
                    SN_FAIL("seq %llu: byte %zu of the buffer at %#llx (+%llu) reads %u, expected %u", (unsigned long long)seq,
                            (size_t)(s[k][0] - x.addr + i), (unsigned long long)x.addr, (unsigned long long)x.len, scr[i],
                            pat(x.seed, s[k][0] - x.addr + i));
            for (size_t i = 0; i < n; i++) scr[i] = pat(x.seed ^ 0x5555, s[k][0] - x.addr + i);
            move(owner, 0, s[k][0], h, n, GNI_RC_SUCCESS);
        }
        served++;
        put_ctl(owner, CTL - 64, 8, ACK_FLAG, seq);
    }
}

static uint64_t seq;

/* Hands the registered buffer to the peer and checks what it wrote back; `stale`: the
 * buffer was deregistered before, the peer's accesses must fail. */
static void exchange(int peer, uint8_t *buf, uint64_t len, gni_mem_handle_t mh, uint64_t seed, int stale)
{
    struct msg x = { (uint64_t)(uintptr_t)buf, mh.qword1, mh.qword2, len, seed, (uint64_t)stale };
    memcpy(scr, &x, sizeof x);
    seq++;
    put_ctl(peer, 0, sizeof x, MSG_FLAG, seq);
    wait_word((volatile uint64_t *)(ctl + ACK_FLAG), seq, "answer");
    uint64_t s[2][2];
    spans((uint64_t)(uintptr_t)buf, len, s);
    for (int k = 0; k < 2; k++)
        for (uint64_t a = s[k][0]; a < s[k][1]; a++) {
            uint8_t want = stale ? pat(seed, a - x.addr) : pat(seed ^ 0x5555, a - x.addr);
            if (*(uint8_t *)(uintptr_t)a != want)
                SN_FAIL("seq %llu: byte %llu of the buffer at %p reads %u after the peer's %s, expected %u", (unsigned long long)seq,
                        (unsigned long long)(a - x.addr), (void *)buf, *(uint8_t *)(uintptr_t)a,
                        stale ? "refused PUT" : "PUT", want);
        }
}

/* One cycle: register, maybe exchange, deregister.  Returns the microseconds spent in
 * GNI_MemRegister + GNI_MemDeregister. */
static double cycle(int peer, uint8_t *buf, uint64_t len, long i)
{
    static long exchanges;
    int share = peer >= 0 && i % SHARE == 0;
    uint64_t seed = (uint64_t)i * 2654435761u;
    if (share)
        for (uint64_t k = 0; k < len; k++) buf[k] = pat(seed, k);
    gni_mem_handle_t mh;
    double t0 = dt_now();
    GNI_OK(GNI_MemRegister(t.nic, (uint64_t)(uintptr_t)buf, len, NULL, GNI_MEM_READWRITE, (uint32_t)-1, &mh));
    double spent = dt_now() - t0;
    int stale = share && ++exchanges % 64 == 0;
    if (share && !stale) exchange(peer, buf, len, mh, seed, 0);
    t0 = dt_now();
    GNI_OK(GNI_MemDeregister(t.nic, &mh));
    spent += dt_now() - t0;
    if (stale) exchange(peer, buf, len, mh, seed, 1);
    return spent * 1e6;
}

int main(int argc, char **argv)
{
    long cycles = argc > 1 ? atol(argv[1]) : 100000;
    gnit_init(&t, 256);
    int me = t.rank;
    ctl = dt_alloc(CTL);
    scr = dt_alloc(SCR);
    ctl_mh = dt_reg(&t, ctl, CTL, NULL, GNI_MEM_READWRITE);
    scr_mh = dt_reg(&t, scr, SCR, NULL, GNI_MEM_READWRITE);
    ctl_mhs = calloc(t.size, sizeof(*ctl_mhs));
    ctl_bases = calloc(t.size, sizeof(*ctl_bases));
    CHECK(ctl_mhs && ctl_bases);
    gnit_exchange_mem(&t, ctl, ctl_mh, ctl_mhs, ctl_bases);
    int churner = me % 2 == 0;
    int peer = churner ? (me + 1 < t.size ? me + 1 : -1) : me - 1;
    dt_barrier();

    if (!churner) {
        struct usage early = usage(), late = early;
        long served = 0;
        for (int phase = 0; phase < 2; phase++) {
            served += serve(peer);
            if (phase == 0) early = usage();
            else late = usage();
        }
        /* The peer maps each of the churner's backings once, whatever the number of
         * registrations it reached through them. */
        check_flat("peer", early, late);
        printf("mem_churn: rank %d served %ld exchanges\n", me, served);
    } else {
        /* Phase A: the pages of one big buffer. */
        uint8_t *big = malloc(BIG);
        CHECK(big);
        memset(big, 0x3c, BIG);
        long pages = BIG / 4096 - 1, stride = 97;
        uint8_t *first = (uint8_t *)(((uintptr_t)big + 4095) & ~(uintptr_t)4095);
        struct usage mark = usage();
        double spent = 0;
        for (long i = 0; i < cycles; i++) {
            long p = (i * stride) % pages;
            uint64_t off = 64 + (uint64_t)(i * 40) % 900, len = 100 + (uint64_t)(i * 37) % 3000;
            spent += cycle(peer, first + p * 4096 + off, len, i);
            if (i == cycles / 5) mark = usage();
        }
        check_flat("one big buffer", mark, usage());
        printf("mem_churn: rank %d phase A: %ld cycles, %.2f us per register + deregister\n", me, cycles, spent / cycles);
        if (peer >= 0) {
            memset(scr, 0, sizeof(struct msg));
            seq++;
            put_ctl(peer, 0, sizeof(struct msg), MSG_FLAG, seq);  /* length 0: end of phase */
        }
        free(big);

        /* Phase B: separate buffers, freed RING cycles later. */
        uint8_t *ring[RING] = { 0 };
        spent = 0;
        for (long i = 0; i < cycles; i++) {
            uint64_t len = i % 97 == 0 ? (1u << 20) + (uint64_t)(i * 4093) % (2u << 20)
                         : i % 13 == 0 ? (64u << 10) + (uint64_t)(i * 409) % (448u << 10)
                         : 100 + (uint64_t)(i * 131) % 16000;
            uint8_t *b = malloc(len);
            CHECK(b);
            spent += cycle(peer, b, len, i);
            free(ring[i % RING]);
            ring[i % RING] = b;
            if (i == cycles / 5) mark = usage();
        }
        for (int k = 0; k < RING; k++) free(ring[k]);
        check_flat("separate buffers", mark, usage());
        printf("mem_churn: rank %d phase B: %ld cycles, %.2f us per register + deregister\n", me, cycles, spent / cycles);
        if (peer >= 0) {
            memset(scr, 0, sizeof(struct msg));
            seq++;
            put_ctl(peer, 0, sizeof(struct msg), MSG_FLAG, seq);
        }
    }
    GNI_OK(GNI_MemDeregister(t.nic, &ctl_mh));
    GNI_OK(GNI_MemDeregister(t.nic, &scr_mh));
    gnit_fini(&t);
    printf("mem_churn: rank %d ok\n", me);
    return 0;
}
