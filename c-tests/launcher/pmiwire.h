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

/* Connects as snrun told us: PMI_FD, or PMI_PORT + PMI_ID (with initack).
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
    const char *colon = strrchr(port, ':');
    CHECK(colon != NULL);
    char host[64];
    snprintf(host, sizeof host, "%.*s", (int)(colon - port), port);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(colon + 1)) };
    CHECK(inet_pton(AF_INET, host, &sa.sin_addr) == 1);
    pw_fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(pw_fd >= 0);
    CHECK(connect(pw_fd, (struct sockaddr *)&sa, sizeof sa) == 0);
    char line[PW_LINE], v[64];
    int id = atoi(getenv("PMI_ID"));
    pw_cmd(line, sizeof line, "cmd=initack pmiid=%d\n", id);
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
