/* libfabric peer benchmarks over the shm provider (or FI_PROVIDER's, with BENCH_LIBRARY
 * naming the results): `FI_PROVIDER=shm fi_bench pingpong|write_bw`
 *
 *   pingpong  fi_write ping-pong, 8 B - 64 KiB: the last 8 bytes of each message
 *             carry a sequence number, which the receiver polls in its
 *             registered buffer while driving progress with fi_cq_read (the
 *             shm provider moves data when the target progresses).
 *   write_bw  64 fi_write (fewer above 4 MiB), then all their completions,
 *             4 KiB - 64 MiB; the target spins in fi_cq_read meanwhile.
 *   sleep_pingpong, sleep_write_bw
 *             the same, but whatever a process does not drive itself is
 *             progressed by a thread of its own at SCHED_FIFO priority that
 *             sleeps in the completion queue's wait object (fi_trywait, then
 *             poll on the FI_WAIT_FD descriptor), as softnic's network engine
 *             must (it may not busy-poll): the ping-pong's waiting side spins
 *             on its memory only, the bandwidth test's target only sleeps.
 *             This is what a sleeping target costs over the provider itself.
 *
 * FI_EP_RDM, caps FI_RMA, provider "shm" (hints and FI_PROVIDER).  The program
 * forks itself: parent rank 0 on core 0, child rank 1 on core 1; endpoint
 * names, buffer addresses and MR keys go through a MAP_SHARED page set up
 * before the fork.  When the provider cannot be opened, a SKIP line says why. */
#include "bench.h"
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define LIB "libfabric-shm"
#define PAYOFF 4096
#define MAXW 64

struct ctrl {
    char name[2][256];
    size_t namelen[2];
    uint64_t addr[2], key[2];
    volatile int failed;
    char reason[512];
    _Alignas(64) volatile uint64_t bar_count;
    _Alignas(64) volatile uint64_t bar_gen;
};

static const char *bench_name;
static struct ctrl *ctl;
static int me, peer;
static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_ep *ep;
static struct fid_cq *cq;
static struct fid_av *av;
static struct fid_mr *mr, *smr;
static fi_addr_t peer_addr;
static uint8_t *buf, *src;
static void *src_desc;
static long outstanding;       /* atomic: the progress thread reaps too */
static int sleeping;            /* sleep_*: a sleeping progress thread */
static int wait_fd = -1;
static volatile int stopping;
static pthread_t progress_thread;
static struct fi_context ctx[MAXW + 1];

static void fail(const char *what, int rc)
{
    if (!ctl->failed) {
        snprintf(ctl->reason, sizeof ctl->reason, "%s failed on rank %d: %s (%d)", what, me, fi_strerror(-rc), rc);
        ctl->failed = 1;
    }
    if (me == 0) {
        bench_skip_line(LIB, bench_name, ctl->reason);
        fprintf(stderr, "fi_bench %s: %s\n", bench_name, ctl->reason);
    }
    exit(BENCH_SKIP_EXIT);
}

#define F(call) do { int rc_ = (int)(call); if (rc_ < 0) fail(#call, rc_); } while (0)

/* Reads completions (drives progress); returns how many were reaped. */
static int progress(void)
{
    struct fi_cq_entry e[16];
    ssize_t n = fi_cq_read(cq, e, 16);
    if (n > 0) { __atomic_sub_fetch(&outstanding, n, __ATOMIC_RELAXED); return (int)n; }
    if (n == -FI_EAGAIN) return 0;
    struct fi_cq_err_entry err;
    memset(&err, 0, sizeof err);
    fi_cq_readerr(cq, &err, 0);
    fail("fi_cq_read", err.err ? -err.err : (int)n);
    return 0;
}

static void barrier_step(void)
{
    if (ctl->failed) fail("peer", -FI_EOTHER);
    progress();
}

static void barrier(void) { bench_fork_barrier(&ctl->bar_count, &ctl->bar_gen, barrier_step); }

static void post_write(void *local, size_t size, uint64_t roff, struct fi_context *c)
{
    ssize_t rc;
    while ((rc = fi_write(ep, local, size, src_desc, peer_addr, ctl->addr[peer] + roff, ctl->key[peer], c)) == -FI_EAGAIN)
        progress();
    if (rc < 0) fail("fi_write", (int)rc);
    __atomic_add_fetch(&outstanding, 1, __ATOMIC_RELAXED);
}

static void setup(void)
{
    struct fi_info *hints = fi_allocinfo();
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_RMA;
    hints->mode = FI_CONTEXT;
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    if (sleeping) hints->domain_attr->threading = FI_THREAD_SAFE;
    /* shm unless FI_PROVIDER names another (tcp;ofi_rxm for the network peers). */
    const char *prov = getenv("FI_PROVIDER");
    hints->fabric_attr->prov_name = strdup(prov && *prov ? prov : "shm");
    F(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
    fi_freeinfo(hints);
    F(fi_fabric(info->fabric_attr, &fabric, NULL));
    F(fi_domain(fabric, info, &domain, NULL));
    struct fi_cq_attr ca;
    memset(&ca, 0, sizeof ca);
    ca.format = FI_CQ_FORMAT_CONTEXT;
    ca.size = 1024;
    if (sleeping) ca.wait_obj = FI_WAIT_FD;
    F(fi_cq_open(domain, &ca, &cq, NULL));
    struct fi_av_attr aa;
    memset(&aa, 0, sizeof aa);
    aa.type = FI_AV_TABLE;
    F(fi_av_open(domain, &aa, &av, NULL));
    F(fi_endpoint(domain, info, &ep, NULL));
    F(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    F(fi_ep_bind(ep, &av->fid, 0));
    F(fi_enable(ep));
    if (sleeping) F(fi_control(&cq->fid, FI_GETWAIT, &wait_fd));

    size_t len = PAYOFF + BENCH_MAX_BW;
    if (posix_memalign((void **)&buf, 4096, len) || posix_memalign((void **)&src, 4096, len)) fail("posix_memalign", -FI_ENOMEM);
    memset(buf, 0, len);
    memset(src, 0x5a, len);
    F(fi_mr_reg(domain, buf, len, FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 0, 0, &mr, NULL));
    F(fi_mr_reg(domain, src, len, FI_WRITE | FI_READ, 0, 1, 0, &smr, NULL));
    if (info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
        F(fi_mr_bind(mr, &ep->fid, 0));
        F(fi_mr_enable(mr));
        F(fi_mr_bind(smr, &ep->fid, 0));
        F(fi_mr_enable(smr));
    }
    src_desc = fi_mr_desc(smr);
    ctl->namelen[me] = sizeof ctl->name[me];
    F(fi_getname(&ep->fid, ctl->name[me], &ctl->namelen[me]));
    ctl->addr[me] = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)buf : 0;
    ctl->key[me] = fi_mr_key(mr);
    barrier();
    int n = fi_av_insert(av, ctl->name[peer], 1, &peer_addr, 0, NULL);
    if (n != 1) fail("fi_av_insert", n < 0 ? n : -FI_EOTHER);
    barrier();
}

static uint64_t seq;

/* The sleep_* modes' progress thread: reads the CQ while it has something, then
 * sleeps in its wait object (100 ms at most, to notice the end). */
static void *progress_main(void *arg)
{
    (void)arg;
    struct sched_param sp = { .sched_priority = 1 };
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) && me == 0)
        fprintf(stderr, "fi_bench %s: progress thread at normal priority (SCHED_FIFO refused)\n", bench_name);
    while (!stopping) {
        if (progress() > 0) continue;
        struct fid *f = &cq->fid;
        if (fi_trywait(fabric, &f, 1) == FI_SUCCESS) {
            struct pollfd p = { .fd = wait_fd, .events = POLLIN };
            (void)poll(&p, 1, 100);
        }
    }
    return NULL;
}

static void start_progress(void)
{
    if (pthread_create(&progress_thread, NULL, progress_main, NULL)) fail("pthread_create", -FI_ENOMEM);
}

static void stop_progress(void)
{
    stopping = 1;
    pthread_join(progress_thread, NULL);
}

static long in_flight(void) { return __atomic_load_n(&outstanding, __ATOMIC_RELAXED); }

static void pp_send(size_t size)
{
    uint64_t s = ++seq;
    while (in_flight() >= MAXW) if (!sleeping) progress();
    memcpy(src + PAYOFF + size - 8, &s, 8);
    post_write(src + PAYOFF, size, PAYOFF, &ctx[seq % MAXW]);
}

static void pp_wait(size_t size)
{
    uint64_t s = ++seq;
    volatile uint64_t *flag = (volatile uint64_t *)(buf + PAYOFF + size - 8);
    unsigned long spins = 0;
    while (*flag != s) {
        if (!sleeping) progress();
        bench_spin_check(&spins);
    }
}

static void pp_drain(void)
{
    while (in_flight() > 0) progress();
}

static void pingpong(void)
{
    bench_pingpong_run(me, LIB, bench_name, bench_lat_sizes, BENCH_NELEM(bench_lat_sizes), pp_send, pp_wait, barrier, pp_drain);
}

static void write_issue(size_t size, long j) { post_write(src + PAYOFF, size, PAYOFF, &ctx[j]); }
static void write_complete(size_t size) { (void)size; pp_drain(); }

static void write_bw(void)
{
    bench_bw_run(me, LIB, bench_name, write_issue, write_complete, barrier);
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "pingpong") && strcmp(argv[1], "write_bw") && strcmp(argv[1], "sleep_pingpong") &&
                      strcmp(argv[1], "sleep_write_bw"))) {
        fprintf(stderr, "usage: fi_bench pingpong|write_bw|sleep_pingpong|sleep_write_bw\n");
        return 2;
    }
    bench_name = argv[1];
    sleeping = !strncmp(bench_name, "sleep_", 6);
    ctl = mmap(NULL, sizeof *ctl, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (ctl == MAP_FAILED) { perror("mmap"); return 1; }
    memset(ctl, 0, sizeof *ctl);
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) { perror("fork"); return 1; }
    me = child == 0 ? 1 : 0;
    bench_init_parent();
    peer = 1 - me;
    bench_pin(me);
    setup();
    /* The bandwidth test's initiator drives its own completions, as softnic's does
     * while it waits for them; only the target sleeps. */
    int threaded = sleeping && (strstr(bench_name, "pingpong") || me == 1);
    if (threaded) start_progress();
    if (strstr(bench_name, "pingpong")) pingpong();
    else write_bw();
    barrier();
    if (threaded) stop_progress();
    fi_close(&ep->fid);
    fi_close(&mr->fid);
    fi_close(&smr->fid);
    fi_close(&av->fid);
    fi_close(&cq->fid);
    fi_close(&domain->fid);
    fi_close(&fabric->fid);
    fi_freeinfo(info);
    if (me == 1) _exit(0);
    int st = 0;
    waitpid(child, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
