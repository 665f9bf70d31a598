/* The physical floor: what two processes on this machine can do through shared
 * memory with no library at all, and what a sleeping receiver costs over TCP.
 * `floor_bench pingpong|memcpy_bw|onesided|pin|tcp_pingpong|tcp_bw`
 *
 *   pingpong   memcpy of the payload into the peer's half of a MAP_SHARED
 *              mapping, then a release store of a sequence flag on its own
 *              cache line; the peer spins on the flag (acquire), then answers
 *              the same way.  half round trip, 8 B - 64 KiB.
 *   memcpy_bw  one process memcpy()s from its private buffer into the shared
 *              mapping (one copy, what a single-copy put must do), window of 64
 *              copies, 4 KiB - 64 MiB.
 *   onesided   lower bounds of one-sided operations when nothing else touches
 *              the target line: put_lat = memcpy into the shared mapping plus
 *              a full fence (8 B - 64 KiB), amo_lat = one atomic fetch-add on a
 *              shared word (8 B).  Rank 1 only waits.
 *   pin        what pinning memory costs the kernel, the part of a NIC's memory
 *              registration (ibv_reg_mr, GNI_MemRegister on hardware) a CPU can
 *              measure: mlock + munlock of the pages of 100 B at offset 256 of each
 *              page in turn of a 64 MiB malloc'd buffer whose pages hold data, and of
 *              each 1 MiB slice of a 256 MiB one (the same walk as ugni_bench
 *              mem_register); median us per mlock + munlock (pin_unpin).  Rank 1
 *              only waits.
 *
 * The tcp_* modes (library "floor-tcp-sleep") are the floor of a design that may
 * not busy-poll the network (softnic's network engine: its progress thread sleeps
 * in the provider's wait object).  One TCP connection over 127.0.0.1
 * (TCP_NODELAY; the listening socket is bound to port 0 before the fork).
 *
 *   tcp_pingpong  in each process a receiver thread (SCHED_FIFO priority 1 when
 *              allowed, else normal priority and a note on stderr) sleeps in
 *              recv(MSG_WAITALL) for a 16-byte header (length, sequence), then
 *              the payload into a private buffer, and publishes the sequence
 *              with a release store; the main thread spins on that word
 *              (acquire), like a one-sided program waiting for a put, and
 *              answers with one sendmsg() of header + payload from the main
 *              thread.  The only thread that can land data is a sleeping one
 *              the kernel must wake.  half round trip, 8 B - 64 KiB.
 *   tcp_bw     rank 0 writes a window of messages on a non-blocking socket
 *              (poll(POLLOUT) when send() says EAGAIN), then waits (poll(POLLIN))
 *              for rank 1's 1-byte acknowledgement of the whole window; rank 1's
 *              main thread does non-blocking recv() of up to one message into
 *              one buffer, sleeping in poll(POLLIN) on EAGAIN.  Nobody spins on
 *              the socket.  Windows as bench_bw_run, 4 KiB - 64 MiB.
 *
 * A peer that dies ends the other side with an error (recv() returning 0, a
 * send error, or the spin / poll loops noticing), never a hang.
 *
 * The program forks itself: the parent is rank 0 on core 0, the child rank 1
 * on core 1 (sched_setaffinity, i.e. taskset); a tcp_pingpong receiver thread
 * runs on its process's core. */
#include "bench.h"
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>

#define LIB "floor"

struct ctrl {
    _Alignas(64) volatile uint64_t flag0;          /* written by rank 1, read by rank 0 */
    _Alignas(64) volatile uint64_t flag1;          /* written by rank 0, read by rank 1 */
    _Alignas(64) volatile uint64_t bar_count;
    _Alignas(64) volatile uint64_t bar_gen;
};

static struct ctrl *ctl;
static uint8_t *shbuf[2];   /* shbuf[r]: where the peer writes for r */
static uint8_t *src;
static int me;

static volatile uint64_t *myflag(int r) { return r == 0 ? &ctl->flag0 : &ctl->flag1; }

static int tcp;                    /* a tcp_* mode: the barrier also watches for a dead peer */
static void tcp_barrier_step(void);

static void barrier(void) { bench_fork_barrier(&ctl->bar_count, &ctl->bar_gen, tcp ? tcp_barrier_step : NULL); }

static uint64_t seq;

static void shm_send(size_t size)
{
    int p = 1 - me;
    memcpy(shbuf[p], src, size);
    __atomic_store_n(myflag(p), ++seq, __ATOMIC_RELEASE);
}

static void wait_msg(size_t size)
{
    (void)size;
    unsigned long spins = 0;
    ++seq;
    while (__atomic_load_n(myflag(me), __ATOMIC_ACQUIRE) != seq) bench_spin_check(&spins);
}

static void pingpong(void)
{
    bench_pingpong_run(me, LIB, "pingpong", bench_lat_sizes, BENCH_NELEM(bench_lat_sizes), shm_send, wait_msg, barrier, NULL);
}

static void memcpy_issue(size_t size, long j) { (void)j; memcpy(shbuf[1], src, size); }
static void memcpy_complete(size_t size) { (void)size; __atomic_thread_fence(__ATOMIC_SEQ_CST); }

static void memcpy_bw(void)
{
    bench_bw_run(me, LIB, "memcpy_bw", memcpy_issue, memcpy_complete, barrier);
}

static void put_op(size_t size)
{
    memcpy(shbuf[1], src, size);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static void amo_op(size_t size)
{
    (void)size;
    __atomic_fetch_add((volatile uint64_t *)(shbuf[1] + 64), 1, __ATOMIC_SEQ_CST);
}

static double pin_cycle(uint8_t *p, size_t len)
{
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095;
    size_t l = ((uintptr_t)p + len + 4095 - a) & ~(size_t)4095;
    double t0 = bench_now();
    if (mlock((void *)a, l) || munlock((void *)a, l)) {
        printf("SKIP %s pin_unpin mlock failed: %s\n", LIB, strerror(errno));
        exit(BENCH_SKIP_EXIT);
    }
    return (bench_now() - t0) * 1e6;
}

static void pin(void)
{
    if (me != 0) return;
    int reps = bench_reps();
    size_t sizes[2] = { 100, 1u << 20 }, bufs[2] = { (size_t)64 << 20, (size_t)256 << 20 }, step[2] = { 4096, 1u << 20 };
    for (int k = 0; k < 2; k++) {
        if (!bench_size_selected(sizes[k])) continue;
        long n = (long)(bufs[k] / step[k]) - 1, m = 0;
        double *v = malloc(sizeof(double) * (size_t)n * (size_t)reps);
        for (int r = 0; r < reps; r++) {
            uint8_t *buf = malloc(bufs[k]);
            if (!buf || !v) { perror("malloc"); exit(1); }
            memset(buf, r + 1, bufs[k]);
            uint8_t *first = (uint8_t *)(((uintptr_t)buf + 4095) & ~(uintptr_t)4095);
            for (long i = 0; i < n; i++) v[m++] = pin_cycle(first + (size_t)i * step[k] + 256, sizes[k]);
            free(buf);
        }
        bench_result(LIB, "pin_unpin", sizes[k], "us", bench_median(v, (int)m));
        free(v);
    }
}

static void onesided(void)
{
    bench_op_lat_sizes(me, LIB, "put_lat", put_op, NULL);
    if (me == 0) bench_op_lat(LIB, "amo_lat", 8, amo_op);
}

/* ---- the sleeping TCP floor (tcp_pingpong, tcp_bw) ---- */

#define TCP_LIB "floor-tcp-sleep"
#define TCP_STOP UINT64_MAX        /* header length that ends a receiver thread */

struct tcp_hdr {
    uint64_t len;
    uint64_t seq;
};

static int tcp_fd = -1;
static pid_t tcp_child;            /* rank 0: rank 1's pid */
static uint8_t *tcp_rbuf;          /* where received payloads land */
static _Alignas(64) uint64_t tcp_landed;   /* last sequence the receiver thread landed */
static uint64_t tcp_sseq, tcp_rseq;

static void tcp_die(const char *what, int err)
{
    fprintf(stderr, "floor_bench rank %d: %s%s%s\n", me, what, err ? ": " : "", err ? strerror(err) : "");
    _exit(3);
}

/* The peer is gone: rank 0's child exited, or rank 1 was re-parented. */
static int tcp_peer_gone(void)
{
    if (me == 0) return waitpid(tcp_child, NULL, WNOHANG) == tcp_child;
    return getppid() != bench_parent;
}

/* Barrier spin step of the tcp modes: rank 0 cannot see its child die through getppid(). */
static void tcp_barrier_step(void)
{
    static unsigned long n;
    if ((++n & 0xffff) == 0 && tcp_peer_gone()) tcp_die("peer gone", 0);
}

/* Sleeps in poll() until `events` on fd; wakes every second to check the peer. */
static void tcp_poll(int fd, short events)
{
    struct pollfd p = { .fd = fd, .events = events };
    for (;;) {
        int n = poll(&p, 1, 1000);
        if (n > 0) return;     /* ready, or POLLERR/POLLHUP: the next call says which */
        if (n < 0 && errno != EINTR) tcp_die("poll", errno);
        if (n == 0 && tcp_peer_gone()) tcp_die("peer gone", 0);
    }
}

/* Blocking: sleeps in recv(MSG_WAITALL) until len bytes are in. */
static void tcp_recv_full(void *buf, size_t len)
{
    uint8_t *b = buf;
    while (len) {
        ssize_t n = recv(tcp_fd, b, len, MSG_WAITALL);
        if (n == 0) tcp_die("peer closed the connection", 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            tcp_die("recv", errno);
        }
        b += n;
        len -= (size_t)n;
    }
}

/* Writes all of iov[0..cnt) (blocking socket: one sendmsg() unless interrupted;
 * non-blocking: poll(POLLOUT) on EAGAIN). */
static void tcp_send_iov(struct iovec *iov, int cnt)
{
    while (cnt) {
        struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)cnt };
        ssize_t n = sendmsg(tcp_fd, &m, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) { tcp_poll(tcp_fd, POLLOUT); continue; }
            tcp_die("send", errno);
        }
        while (cnt && (size_t)n >= iov->iov_len) { n -= (ssize_t)iov->iov_len; iov++; cnt--; }
        if (cnt) { iov->iov_base = (uint8_t *)iov->iov_base + n; iov->iov_len -= (size_t)n; }
    }
}

static void tcp_send_buf(const void *buf, size_t len)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
    tcp_send_iov(&iov, 1);
}

/* Non-blocking socket: returns what one recv() of at most len bytes gave, sleeping in
 * poll(POLLIN) while there is nothing. */
static size_t tcp_recv_some(void *buf, size_t len)
{
    for (;;) {
        ssize_t n = recv(tcp_fd, buf, len, 0);
        if (n > 0) return (size_t)n;
        if (n == 0) tcp_die("peer closed the connection", 0);
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) tcp_die("recv", errno);
        tcp_poll(tcp_fd, POLLIN);
    }
}

static void tcp_set_nodelay(int fd)
{
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one))) tcp_die("TCP_NODELAY", errno);
}

/* Before the fork: a listening socket on 127.0.0.1, port chosen by the kernel. */
static int tcp_listen(struct sockaddr_in *addr)
{
    socklen_t alen = sizeof(*addr);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(addr, 0, sizeof(*addr));
    addr->sin_family = AF_INET;
    addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr->sin_port = 0;
    if (fd < 0 || bind(fd, (struct sockaddr *)addr, sizeof(*addr)) || listen(fd, 1) ||
        getsockname(fd, (struct sockaddr *)addr, &alen)) {
        perror("floor_bench: listening socket on 127.0.0.1");
        exit(1);
    }
    return fd;
}

/* After the fork: rank 0 accepts, rank 1 connects. */
static void tcp_connect(int lfd, const struct sockaddr_in *addr)
{
    if (me == 0) {
        tcp_poll(lfd, POLLIN);
        tcp_fd = accept(lfd, NULL, NULL);
        if (tcp_fd < 0) tcp_die("accept", errno);
    } else {
        tcp_fd = socket(AF_INET, SOCK_STREAM, 0);
        if (tcp_fd < 0) tcp_die("socket", errno);
        if (connect(tcp_fd, (const struct sockaddr *)addr, sizeof(*addr))) tcp_die("connect", errno);
    }
    close(lfd);
    tcp_set_nodelay(tcp_fd);
}

/* tcp_pingpong's receiver thread: sleeps in recv until a message is in, lands it and
 * publishes its sequence. */
static void *tcp_receiver(void *arg)
{
    (void)arg;
    for (;;) {
        struct tcp_hdr h;
        tcp_recv_full(&h, sizeof(h));
        if (h.len == TCP_STOP) return NULL;
        if (h.len > BENCH_MAX_LAT) tcp_die("bad message header", 0);
        tcp_recv_full(tcp_rbuf, (size_t)h.len);
        __atomic_store_n(&tcp_landed, h.seq, __ATOMIC_RELEASE);
    }
}

static void tcp_pp_send(size_t size)
{
    struct tcp_hdr h = { .len = size, .seq = ++tcp_sseq };
    struct iovec iov[2] = { { .iov_base = &h, .iov_len = sizeof(h) }, { .iov_base = src, .iov_len = size } };
    tcp_send_iov(iov, 2);
}

static void tcp_pp_wait(size_t size)
{
    (void)size;
    unsigned long spins = 0;
    ++tcp_rseq;
    while (__atomic_load_n(&tcp_landed, __ATOMIC_ACQUIRE) != tcp_rseq) bench_spin_check(&spins);
}

static void tcp_pingpong(void)
{
    pthread_t th;
    struct sched_param sp = { .sched_priority = 1 };
    if (posix_memalign((void **)&tcp_rbuf, 4096, BENCH_MAX_LAT)) tcp_die("out of memory", 0);
    memset(tcp_rbuf, 0, BENCH_MAX_LAT);
    int rc = pthread_create(&th, NULL, tcp_receiver, NULL);
    if (rc) tcp_die("pthread_create", rc);
    rc = pthread_setschedparam(th, SCHED_FIFO, &sp);
    if (rc)
        fprintf(stderr, "floor_bench rank %d: SCHED_FIFO for the receiver thread refused (%s); it runs at normal priority\n",
                me, strerror(rc));
    barrier();
    bench_pingpong_run(me, TCP_LIB, "tcp_pingpong", bench_lat_sizes, BENCH_NELEM(bench_lat_sizes), tcp_pp_send,
                       tcp_pp_wait, barrier, NULL);
    /* Each side stops the peer's receiver thread, then joins its own (stopped by the
     * peer): nothing is left unread when the sockets close. */
    struct tcp_hdr stop = { .len = TCP_STOP, .seq = 0 };
    tcp_send_buf(&stop, sizeof(stop));
    rc = pthread_join(th, NULL);
    if (rc) tcp_die("pthread_join", rc);
    close(tcp_fd);
    free(tcp_rbuf);
}

static void tcp_bw_issue(size_t size, long j)
{
    (void)j;
    tcp_send_buf(src, size);
}

static void tcp_bw_complete(size_t size)
{
    (void)size;
    char ack;
    tcp_recv_some(&ack, 1);
}

/* Rank 1: the same sizes, windows and repetitions as bench_bw_run on rank 0; each
 * window's bytes are received, then acknowledged with one byte. */
static void tcp_bw_target(void)
{
    int reps = bench_reps();
    for (size_t k = 0; k < BENCH_NELEM(bench_bw_sizes); k++) {
        size_t size = bench_bw_sizes[k];
        if (!bench_size_selected(size)) continue;
        long w = bench_bw_window(size), n = 1 + (long)reps * bench_bw_windows(size);
        for (long i = 0; i < n; i++) {
            size_t left = (size_t)w * size;
            while (left) left -= tcp_recv_some(tcp_rbuf, left < size ? left : size);
            tcp_send_buf("", 1);
        }
        barrier();
    }
}

static void tcp_bw(void)
{
    if (fcntl(tcp_fd, F_SETFL, fcntl(tcp_fd, F_GETFL) | O_NONBLOCK)) tcp_die("O_NONBLOCK", errno);
    if (me == 1) {
        if (posix_memalign((void **)&tcp_rbuf, 4096, BENCH_MAX_BW)) tcp_die("out of memory", 0);
        memset(tcp_rbuf, 0, BENCH_MAX_BW);
    }
    barrier();
    if (me == 0) bench_bw_run(me, TCP_LIB, "tcp_bw", tcp_bw_issue, tcp_bw_complete, barrier);
    else tcp_bw_target();
    close(tcp_fd);
    free(tcp_rbuf);
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "pingpong") && strcmp(argv[1], "memcpy_bw") && strcmp(argv[1], "onesided") &&
                      strcmp(argv[1], "pin") && strcmp(argv[1], "tcp_pingpong") && strcmp(argv[1], "tcp_bw"))) {
        fprintf(stderr, "usage: floor_bench pingpong|memcpy_bw|onesided|pin|tcp_pingpong|tcp_bw\n");
        return 2;
    }
    tcp = !strncmp(argv[1], "tcp_", 4);
    /* The tcp modes use the mapping only for the barrier. */
    size_t per = tcp || !strcmp(argv[1], "pin") ? 4096 : 4096 + BENCH_MAX_BW;
    uint8_t *m = mmap(NULL, 4096 + 2 * per, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) { perror("mmap"); return 1; }
    memset(m, 0, 4096 + 2 * per);
    ctl = (struct ctrl *)m;
    shbuf[0] = m + 4096;
    shbuf[1] = m + 4096 + per;
    struct sockaddr_in addr;
    int lfd = tcp ? tcp_listen(&addr) : -1;
    pid_t child = fork();
    if (child < 0) { perror("fork"); return 1; }
    me = child == 0 ? 1 : 0;
    tcp_child = child;
    bench_init_parent();
    bench_pin(me);
    if (posix_memalign((void **)&src, 4096, BENCH_MAX_BW)) return 1;
    memset(src, 0x5a, BENCH_MAX_BW);
    if (tcp) tcp_connect(lfd, &addr);
    barrier();
    if (!strcmp(argv[1], "pingpong")) pingpong();
    else if (!strcmp(argv[1], "onesided")) onesided();
    else if (!strcmp(argv[1], "pin")) pin();
    else if (!strcmp(argv[1], "tcp_pingpong")) tcp_pingpong();
    else if (!strcmp(argv[1], "tcp_bw")) tcp_bw();
    else memcpy_bw();
    barrier();
    if (me == 1) _exit(0);
    int st = 0;
    waitpid(child, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
