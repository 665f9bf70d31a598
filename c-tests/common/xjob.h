/* Two concurrent jobs that meet through files, as programs of different jobs would
 * learn each other's ids out of band: c-tests/tools/twojobs starts job A ("owner") and
 * job B ("intruder") with XJOB_DIR naming a fresh directory.  A's rank r writes what it
 * exposes to "a.<r>" and keeps it until "b.<r>.done" appears; B's rank r reads "a.<r>",
 * tries A's memory with it, then writes "b.<r>.done".  Files appear whole (written under
 * another name, then renamed); every wait has a deadline. */
#ifndef XJOB_H
#define XJOB_H
#include "sntest.h"
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define XJOB_CANARY 0xA5u
#define XJOB_WAIT_S 60

static const char *xjob_path(const char *name)
{
    static char p[4096];
    const char *d = getenv("XJOB_DIR");
    if (!d) SN_FAIL("XJOB_DIR is not set (start through c-tests/tools/twojobs)");
    snprintf(p, sizeof p, "%s/%s", d, name);
    return p;
}

static void xjob_put(const char *name, const void *data, size_t len)
{
    char tmp[4200], dst[4200];
    snprintf(dst, sizeof dst, "%s", xjob_path(name));
    snprintf(tmp, sizeof tmp, "%.4000s.tmp%d", dst, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) SN_FAIL("cannot write %s", tmp);
    if (rename(tmp, dst) != 0) SN_FAIL("cannot rename %s", tmp);
}

/* Waits (up to XJOB_WAIT_S) for `name` and reads exactly `len` bytes of it (len may be 0). */
static void xjob_get(const char *name, void *data, size_t len)
{
    struct timespec nap = { 0, 5 * 1000 * 1000 };
    for (int i = 0; i < XJOB_WAIT_S * 200; i++) {
        FILE *f = fopen(xjob_path(name), "rb");
        if (f) {
            size_t got = len ? fread(data, 1, len, f) : 0;
            fclose(f);
            if (got != len) SN_FAIL("%s: %zu bytes, expected %zu", name, got, len);
            return;
        }
        nanosleep(&nap, NULL);
    }
    SN_FAIL("%s did not appear within %d s", name, XJOB_WAIT_S);
}

static void xjob_done(int rank)
{
    char n[64];
    snprintf(n, sizeof n, "b.%d.done", rank);
    xjob_put(n, "", 0);
}

static void xjob_wait_done(int rank)
{
    char n[64];
    snprintf(n, sizeof n, "b.%d.done", rank);
    xjob_get(n, NULL, 0);
}

static void xjob_publish(int rank, const void *rec, size_t len)
{
    char n[64];
    snprintf(n, sizeof n, "a.%d", rank);
    xjob_put(n, rec, len);
}

static void xjob_learn(int rank, void *rec, size_t len)
{
    char n[64];
    snprintf(n, sizeof n, "a.%d", rank);
    xjob_get(n, rec, len);
}

/* Every byte of buf is the canary. */
static int xjob_intact(const void *buf, size_t len)
{
    const unsigned char *b = buf;
    for (size_t i = 0; i < len; i++)
        if (b[i] != XJOB_CANARY) return 0;
    return 1;
}
#endif
