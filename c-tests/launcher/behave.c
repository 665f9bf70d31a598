/* Rank behaviours for snrun's failure-handling tests.
 * Usage: behave MODE [ARGS]
 *   fail R CODE     rank R exits CODE after 100 ms; the others sleep forever
 *   segv R          rank R dies of SIGSEGV; the others sleep forever
 *   abort R CODE    rank R sends "cmd=abort" on the raw wire; the others wait in a PMI barrier
 *   barrier_skip R  rank R exits 0 at once; the others wait in a PMI barrier forever
 *   sleep           every rank sleeps forever (timeouts, signals to snrun)
 *   ignoreterm      like sleep, but ranks ignore SIGTERM (snrun must SIGKILL them)
 *   print           each rank writes labelled lines on stdout and stderr, plus a partial line
 *   pass            exit 0 without touching PMI
 *   spew            every rank writes numbered lines on stdout forever
 *   flood R         rank R sends PMI queries forever and never reads a reply; the
 *                   others ignore SIGTERM and wait in a PMI barrier (so snrun lingers
 *                   a second after ending the job, long enough to be measured)
 * With SNTEST_PIDDIR set, sleeping ranks fork a sleeping child too and record
 * both pids as files in that directory, so the caller can check nothing survives. */
#include "pmiwire.h"
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

static void record_pid(pid_t pid)
{
    const char *dir = getenv("SNTEST_PIDDIR");
    if (!dir) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%d", dir, (int)pid);
    int fd = open(path, O_CREAT | O_WRONLY, 0600);
    CHECK(fd >= 0);
    close(fd);
}

static void sleep_forever(void)
{
    if (getenv("SNTEST_PIDDIR")) {
        pid_t c = fork();
        CHECK(c >= 0);
        if (c == 0) { for (;;) pause(); }
        record_pid(c);
    }
    record_pid(getpid());
    for (;;) pause();
}

/* Enter a PMI barrier over the raw wire and wait for barrier_out. */
static void barrier(void)
{
    char line[PW_LINE];
    pw_connect();
    pw_cmd(line, sizeof line, "cmd=init pmi_version=1 pmi_subversion=1\n");
    CHECK(pw_rc(line) == 0);
    record_pid(getpid());
    pw_send("cmd=barrier_in\n");
    CHECK(pw_recv(line, sizeof line) != NULL);
}

int main(int argc, char **argv)
{
    if (argc < 2) SN_FAIL("usage: behave MODE [ARGS]");
    const char *mode = argv[1];
    int rank = atoi(getenv("PMI_RANK") ? getenv("PMI_RANK") : "-1");
    sntest_rank = rank;
    int who = argc > 2 ? atoi(argv[2]) : -1;
    int code = argc > 3 ? atoi(argv[3]) : 1;

    if (!strcmp(mode, "fail")) {
        if (rank == who) { usleep(100000); exit(code); }
        sleep_forever();
    } else if (!strcmp(mode, "segv")) {
        if (rank == who) { usleep(100000); signal(SIGSEGV, SIG_DFL); raise(SIGSEGV); }
        sleep_forever();
    } else if (!strcmp(mode, "abort")) {
        if (rank == who) {
            char line[PW_LINE];
            pw_connect();
            pw_cmd(line, sizeof line, "cmd=init pmi_version=1 pmi_subversion=1\n");
            usleep(200000); /* let the others block in the barrier first */
            pw_send("cmd=abort exitcode=%d message=behave rank %d gives up\n", code, rank);
            for (;;) pause();
        }
        barrier();
        SN_FAIL("barrier completed although rank %d aborted", who);
    } else if (!strcmp(mode, "barrier_skip")) {
        if (rank == who) return 0;
        barrier();
        SN_FAIL("barrier completed although rank %d never entered it", who);
    } else if (!strcmp(mode, "sleep")) {
        sleep_forever();
    } else if (!strcmp(mode, "ignoreterm")) {
        signal(SIGTERM, SIG_IGN);
        sleep_forever();
    } else if (!strcmp(mode, "print")) {
        printf("out line one from %d\n", rank);
        fflush(stdout);
        fprintf(stderr, "err line from %d\n", rank);
        printf("out line two from %d\nno newline %d", rank, rank);
        return 0;
    } else if (!strcmp(mode, "pass")) {
        return 0;
    } else if (!strcmp(mode, "spew")) {
        for (unsigned long i = 0;; i++) printf("spew line %lu from rank %d: 0123456789abcdefghijklmnopqrstuvwxyz\n", i, rank);
    } else if (!strcmp(mode, "flood")) {
        if (rank == who) {
            char line[PW_LINE];
            pw_connect();
            pw_cmd(line, sizeof line, "cmd=init pmi_version=1 pmi_subversion=1\n");
            static char burst[65536];
            static const char q[] = "cmd=get_universe_size\n";
            size_t n = 0;
            while (n + sizeof q - 1 <= sizeof burst) { memcpy(burst + n, q, sizeof q - 1); n += sizeof q - 1; }
            for (;;) {
                /* Until snrun cuts us off (EPIPE) or kills the job. */
                if (send(pw_fd, burst, n, MSG_NOSIGNAL) < 0 && errno != EINTR) {
                    fprintf(stderr, "behave rank %d: cut off (%s)\n", rank, strerror(errno));
                    for (;;) pause();
                }
            }
        }
        signal(SIGTERM, SIG_IGN);
        barrier();
        SN_FAIL("barrier completed although rank %d never entered it", who);
    }
    SN_FAIL("unknown mode %s", mode);
}
