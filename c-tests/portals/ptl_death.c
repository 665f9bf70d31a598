/* Processes that die: (1) initiators killed (SIGKILL) in the middle of 1 MiB puts into
 * rank 0, most likely while holding rank 0's match lock: the next initiator and rank 0
 * itself take the lock over and carry on; (2) rank 1 exits without finalising: puts and
 * gets to it (rank 0 reached it before) fail (PTL_NI_FAIL in their END events) within a
 * short time, never hang.
 * The killed initiators are helper processes rank 2 starts (this program with
 * "helper NID PID"): they are not ranks, so the launcher does not end the job.
 * Run with 3 ranks under snrun; "ptl_death remote" skips the killed initiators (they
 * take their ids from snrun's environment) for runs across virtual hosts, where rank
 * 1's exit is seen through the network engine.  Prints "ptl_death: rank R ok". */
#include "ptest.h"
#include <pmi.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BIG (1 << 20)
static ptl_handle_ni_t ni;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* A helper: puts 1 MiB into the target again and again until it is killed. */
static int helper(ptl_nid_t nid, ptl_pid_t pid, int k)
{
    setenv("SOFTNIC_ENGINE", "shm", 1);
    int maxif;
    PCHECK(PtlInit(&maxif));
    PCHECK(PtlNIInit(PTL_IFACE_DEFAULT, 1000 + k, NULL, NULL, &ni));
    char *buf = malloc(BIG);
    memset(buf, 'h', BIG);
    ptl_handle_md_t md;
    PCHECK(PtlMDBind(ni, md_of(buf, BIG, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE), PTL_RETAIN, &md));
    ptl_process_id_t t = { nid, pid };
    printf("ptl_death: helper %d putting\n", k);
    fflush(stdout);
    for (;;) PCHECK(PtlPut(md, PTL_NO_ACK_REQ, t, 1, 0, 0, 0, 0));
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "helper")) return helper(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
    int spawned, rank, n;
    CHECK_EQ(PMI_Init(&spawned), PMI_SUCCESS);
    CHECK_EQ(PMI_Get_rank(&rank), PMI_SUCCESS);
    CHECK_EQ(PMI_Get_size(&n), PMI_SUCCESS);
    sntest_rank = rank;
    if (n != 3) SKIP("needs 3 ranks");
    int maxif;
    PCHECK(PtlInit(&maxif));
    PCHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    ptl_process_id_t ids[3];
    for (int r = 0; r < 3; r++) PCHECK(PtlGetRankId(ni, r, &ids[r]));
    ptl_handle_eq_t eq;
    PCHECK(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    char *buf = aligned_alloc(4096, 2 * BIG);
    memset(buf, 0, 2 * BIG);
    ptl_handle_me_t m;
    PCHECK(PtlMEAttach(ni, 1, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m));
    PCHECK(PtlMDAttach(m, md_of(buf, 2 * BIG, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, PTL_EQ_NONE), PTL_RETAIN, NULL));
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);

    int helpers = !(argc > 1 && !strcmp(argv[1], "remote"));
    if (rank == 0) {
        /* Rank 0 reaches rank 1 while it is up: once it has exited, puts to it fail at
         * once (a process never reached would be waited for, as one not started yet). */
        static char hello[8] = "hello";
        ptl_handle_md_t hmd;
        PCHECK(PtlMDBind(ni, md_of(hello, 8, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN, &hmd));
        PCHECK(PtlPut(hmd, PTL_ACK_REQ, ids[1], 1, 0, 0, 0, 0));
        EXPECT(eq, PTL_EVENT_SEND_START);
        EXPECT(eq, PTL_EVENT_SEND_END);
        EXPECT(eq, PTL_EVENT_ACK);
        PCHECK(PtlMDUnlink(hmd));
    }
    if (rank == 2) {
        /* Killed initiators. */
        for (int k = 0; k < 3 * helpers; k++) {
            pid_t c = fork();
            CHECK(c >= 0);
            if (c == 0) {
                char a[3][16];
                snprintf(a[0], 16, "%u", ids[0].nid);
                snprintf(a[1], 16, "%u", ids[0].pid);
                snprintf(a[2], 16, "%d", k);
                execl("/proc/self/exe", argv[0], "helper", a[0], a[1], a[2], (char *)NULL);
                _exit(127);
            }
            usleep(150000 + 20000 * k);
            CHECK(kill(c, SIGKILL) == 0);
            int st;
            CHECK(waitpid(c, &st, 0) == c && WIFSIGNALED(st));
        }
        /* Rank 0 still takes puts, with its acks. */
        char msg[8] = "alive";
        ptl_handle_md_t md;
        PCHECK(PtlMDBind(ni, md_of(msg, 8, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN, &md));
        double t0 = now();
        PCHECK(PtlPut(md, PTL_ACK_REQ, ids[0], 1, 0, 0, BIG, 0));
        EXPECT(eq, PTL_EVENT_SEND_START);
        EXPECT(eq, PTL_EVENT_SEND_END);
        EXPECT(eq, PTL_EVENT_ACK);
        CHECK(now() - t0 < 10);
        printf("ptl_death: rank 2 put after the killed initiators\n");
    }
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    if (rank == 2) {
        printf("ptl_death: rank 2 ok\n");
        return 0;
    }
    if (rank == 1) {
        /* No Portals finalize, no goodbye.  Under mpiexec the PMI connection is closed
         * first: hydra ends the whole job when a client vanishes without PMI_Finalize. */
        if (!helpers) PMI_Finalize();
        _exit(0);
    }

    /* Rank 0: its own lock works; rank 2's put landed. */
    CHECK(!strcmp(buf + BIG, "alive"));
    ptl_handle_me_t m2;
    PCHECK(PtlMEAttach(ni, 1, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m2));
    PCHECK(PtlMEUnlink(m2));
    /* Rank 1 is gone (or going): puts to it fail soon, and then every time, quickly. */
    char word[8] = "ping";
    ptl_handle_md_t wmd;
    PCHECK(PtlMDBind(ni, md_of(word, 8, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN, &wmd));
    double t0 = now();
    int failed = 0, tries = 0;
    while (!failed) {
        CHECK(now() - t0 < 20);
        PCHECK(PtlPut(wmd, PTL_ACK_REQ, ids[1], 1, 0, 0, 0, 0));
        tries++;
        EXPECT(eq, PTL_EVENT_SEND_START);
        ptl_event_t e;
        PCHECK(PtlEQWait(eq, &e));
        CHECK_EQ(e.type, PTL_EVENT_SEND_END);
        if (e.ni_fail_type == PTL_NI_FAIL) failed = 1;
        else { EXPECT(eq, PTL_EVENT_ACK); usleep(1000); }
    }
    t0 = now();
    for (int i = 0; i < 10; i++) {
        PCHECK(PtlGet(wmd, ids[1], 1, 0, 0, 0));
        EXPECT(eq, PTL_EVENT_REPLY_START);
        expect_ev(eq, PTL_EVENT_REPLY_END, PTL_NI_FAIL);
        PCHECK(PtlPut(wmd, PTL_ACK_REQ, ids[1], 1, 0, 0, 0, 0));
        EXPECT(eq, PTL_EVENT_SEND_START);
        expect_ev(eq, PTL_EVENT_SEND_END, PTL_NI_FAIL);
    }
    CHECK(now() - t0 < 5);
    expect_empty(eq);
    printf("ptl_death: rank 0 saw rank 1 gone after %d puts\n", tries);
    printf("ptl_death: rank 0 ok\n");
    return 0;
}
