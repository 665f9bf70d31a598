/* A tiny PMI-1 wire client for the launcher tests.  It speaks the protocol
 * directly (no libpmi), so these tests check snrun's server on its own. */
#ifndef PMIWIRE_H
#define PMIWIRE_H
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>
#include "sntest.h"

/* Not every test uses every helper. */
#pragma GCC diagnostic ignored "-Wunused-function"

#define PW_LINE 4096
static int pw_fd = -1;

static void pw_write(const char *s, size_t len)
{
    while (len > 0) {
        ssize_t n = write(pw_fd, s, len);
        if (n < 0 && errno == EINTR) continue;
        CHECK(n > 0);
        s += n; len -= (size_t)n;
    }
}

static void pw_send(const char *fmt, ...)
{
    char buf[PW_LINE * 2];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    CHECK(n > 0 && (size_t)n < sizeof buf);
    pw_write(buf, (size_t)n);
}

/* One line without its newline; NULL at EOF.  Byte at a time so nothing
 * beyond the line is consumed. */
static char *pw_recv(char *buf, size_t cap)
{
    size_t len = 0;
    for (;;) {
        char c;
        ssize_t n = read(pw_fd, &c, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return NULL;
        if (c == '\n') break;
        if (len + 1 < cap) buf[len++] = c;
    }
    buf[len] = 0;
    return buf;
}

/* Value of word `key` in `line` (copied to out), or NULL. */
static char *pw_val(const char *line, const char *key, char *out, size_t cap)
{
    size_t kl = strlen(key);
    const char *p = line;
    while (*p) {
        while (*p == ' ') p++;
        if (!strncmp(p, key, kl) && p[kl] == '=') {
            const char *v = p + kl + 1;
            size_t n = strcspn(v, " ");
            if (n >= cap) n = cap - 1;
            memcpy(out, v, n);
            out[n] = 0;
            return out;
        }
        p += strcspn(p, " ");
    }
    return NULL;
}

static int pw_rc(const char *line)
{
    char v[32];
    CHECK(pw_val(line, "rc", v, sizeof v) != NULL);
    return atoi(v);
}

/* Send a command (include the trailing \n) and return the reply line. */
static char *pw_cmd(char *buf, size_t cap, const char *fmt, ...)
{
    char tmp[PW_LINE * 2];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    CHECK(n > 0 && (size_t)n < sizeof tmp);
    pw_write(tmp, (size_t)n);
    char *r = pw_recv(buf, cap);
    if (!r) SN_FAIL("EOF from snrun after: %s", tmp);
    return r;
}

/* SipHash-2-4 of m under the 128-bit key k (written from the paper, independently of
 * the Rust one, so the two check each other). */
static uint64_t pw_rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }
static uint64_t pw_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
#define PW_SIPROUND do { \
    v0 += v1; v1 = pw_rotl(v1, 13); v1 ^= v0; v0 = pw_rotl(v0, 32); \
    v2 += v3; v3 = pw_rotl(v3, 16); v3 ^= v2; \
    v0 += v3; v3 = pw_rotl(v3, 21); v3 ^= v0; \
    v2 += v1; v1 = pw_rotl(v1, 17); v1 ^= v2; v2 = pw_rotl(v2, 32); } while (0)
static uint64_t pw_siphash24(const uint8_t k[16], const uint8_t *m, size_t len)
{
    uint64_t k0 = pw_le64(k), k1 = pw_le64(k + 8);
    uint64_t v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
    uint64_t v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w = pw_le64(m + i);
        v3 ^= w; PW_SIPROUND; PW_SIPROUND; v0 ^= w;
    }
    uint64_t b = (uint64_t)len << 56;
    for (size_t j = 0; i + j < len; j++) b |= (uint64_t)m[i + j] << (8 * j);
    v3 ^= b; PW_SIPROUND; PW_SIPROUND; v0 ^= b;
    v2 ^= 0xff;
    for (int r = 0; r < 4; r++) PW_SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/* The job secret snrun exported (SOFTNIC_JOB_SECRET, 32 hex digits); 0 if absent. */
static int pw_secret(uint8_t out[16])
{
    const char *h = getenv("SOFTNIC_JOB_SECRET");
    if (!h || strlen(h) != 32) return 0;
    for (int i = 0; i < 16; i++) {
        unsigned x;
        if (sscanf(h + 2 * i, "%2x", &x) != 1) return 0;
        out[i] = (uint8_t)x;
    }
    return 1;
}

/* The initack a rank sends in port mode, proof under `key` (see fabric pmi.rs). */
static void pw_initack_line(char *out, size_t cap, int id, const uint8_t key[16])
{
    uint8_t raw[16];
    CHECK(getrandom(raw, sizeof raw, 0) == (ssize_t)sizeof raw);
    char nonce[33];
    for (int i = 0; i < 16; i++) sprintf(nonce + 2 * i, "%02x", raw[i]);
    char msg[128];
    int n = snprintf(msg, sizeof msg, "softnic-pmi-initack %d %s", id, nonce);
    uint64_t proof = pw_siphash24(key, (const uint8_t *)msg, (size_t)n);
    snprintf(out, cap, "cmd=initack pmiid=%d nonce=%s proof=%016llx\n", id, nonce, (unsigned long long)proof);
}

/* A TCP connection to host:port (PMI_PORT's form). */
static int pw_dial(const char *port)
{
    const char *colon = strrchr(port, ':');
    CHECK(colon != NULL);
    char host[64];
    snprintf(host, sizeof host, "%.*s", (int)(colon - port), port);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(colon + 1)) };
    CHECK(inet_pton(AF_INET, host, &sa.sin_addr) == 1);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    CHECK(connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
    return fd;
}

/* Connects as snrun told us: PMI_FD, or PMI_PORT + PMI_ID (with initack and its proof).
 * Returns the rank. */
static int pw_connect(void)
{
    const char *fd = getenv("PMI_FD"), *port = getenv("PMI_PORT");
    if (fd) {
        pw_fd = atoi(fd);
        CHECK(getenv("PMI_RANK") != NULL);
        return atoi(getenv("PMI_RANK"));
    }
    CHECK(port != NULL && getenv("PMI_ID") != NULL);
    pw_fd = pw_dial(port);
    char line[PW_LINE], v[64], ack[256];
    int id = atoi(getenv("PMI_ID"));
    uint8_t key[16];
    if (pw_secret(key))
        pw_initack_line(ack, sizeof ack, id, key);
    else /* a launcher other than snrun (mpiexec -pmi-port) */
        snprintf(ack, sizeof ack, "cmd=initack pmiid=%d\n", id);
    pw_cmd(line, sizeof line, "%s", ack);
    CHECK(!strncmp(line, "cmd=initack", 11) && pw_rc(line) == 0);
    int size = -1, rank = -1;
    for (int i = 0; i < 3; i++) {
        CHECK(pw_recv(line, sizeof line) != NULL);
        CHECK(!strncmp(line, "cmd=set ", 8));
        if (pw_val(line, "size", v, sizeof v)) size = atoi(v);
        if (pw_val(line, "rank", v, sizeof v)) rank = atoi(v);
    }
    CHECK_EQ(rank, id);
    CHECK_EQ(size, atoi(getenv("PMI_SIZE")));
    return rank;
}
#endif
