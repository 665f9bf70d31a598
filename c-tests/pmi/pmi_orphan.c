/* Ranks that must die with their launcher (kill -9 of snrun; see kill9.sh).
 * Usage: pmi_orphan        (run with 4 ranks and SNTEST_PIDDIR set)
 *   rank 0: blocked in PMI_Barrier (the others never enter it)
 *   rank 1: a compute loop that never calls PMI
 *   rank 2: ignores SIGTERM and sleeps, without PMI
 *   rank 3: forks a child that blocks in PMI_Barrier and sleeps itself; the child has no
 *           death signal (the kernel clears it at fork), so only libpmi's hang-up
 *           handling (EOF on its PMI connection) can end it
 * Every process records its pid in SNTEST_PIDDIR once it is in place. */
#include "pmitest.h"
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

static void record_pid(const char *tag)
{
    const char *dir = getenv("SNTEST_PIDDIR");
    CHECK(dir != NULL);
    char path[4096];
    snprintf(path, sizeof path, "%s/%d", dir, (int)getpid());
    int fd = open(path, O_CREAT | O_WRONLY, 0600);
    CHECK(fd >= 0);
    CHECK(write(fd, tag, strlen(tag)) == (ssize_t)strlen(tag));
    close(fd);
}

/* In PMI_Barrier for good: record first, then enter (the barrier never completes). */
__attribute__((noreturn)) static void barrier_forever(const char *tag)
{
    int rank, size;
    pmitest_init(&rank, &size);
    record_pid(tag);
    PMI_Barrier();
    SN_FAIL("%s: PMI_Barrier returned", tag);
}

int main(void)
{
    int rank = atoi(getenv("PMI_RANK") ? getenv("PMI_RANK") : "-1");
    sntest_rank = rank;
    switch (rank) {
    case 0:
        barrier_forever("barrier");
    case 1: {
        record_pid("compute");
        volatile unsigned long x = 0;
        for (;;) x++;
    }
    case 2:
        signal(SIGTERM, SIG_IGN);
        record_pid("ignoreterm");
        for (;;) pause();
    case 3: {
        pid_t c = fork();
        CHECK(c >= 0);
        if (c == 0) barrier_forever("child-in-barrier");
        record_pid("parent");
        for (;;) pause();
    }
    }
    SN_FAIL("run with 4 ranks");
}
