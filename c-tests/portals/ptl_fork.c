/* A reference-style program that doubles its processes with fork (built like the
 * reference's programs, no PMI): each launched rank r of n calls PtlInit, reads the
 * runtime (PtlSetRank(PTL_INVALID_HANDLE, -1, -1), the NID and PID maps) and forks; the
 * child becomes rank r + n of 2n, the parent stays rank r of 2n, both with the doubled
 * maps in which a child's PID is its parent's PID + n, set before PtlNIInit.  Each
 * process must get the PID of its map entry from PtlNIInit(PTL_PID_ANY).  Then a token
 * goes round the 2n processes (children come up at their own pace: puts to them wait),
 * and each parent reaps its child.  A child forked after its parent's PtlNIInit gets
 * PTL_FAIL from its own PtlNIInit.
 * Usage: ptl_fork [ROUNDS].  Prints "ptl_fork: rank R of 2N ok" (children too). */
#include <portals3.h>
#include P3_NAL
#include <p3rt/p3rt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PT 9

static unsigned rank, size;
static ptl_handle_ni_t ni;
static ptl_handle_eq_t eq;

static void die(const char *what, int rc)
{
    fprintf(stderr, "FAIL ptl_fork rank %u: %s: %s\n", rank, what, PtlErrorStr(rc));
    exit(1);
}
#define TRY(call) do { int rc_ = (call); if (rc_ != PTL_OK) die(#call, rc_); } while (0)

static ptl_event_t next_event(int ms, int *got)
{
    ptl_event_t ev;
    int which, rc = PtlEQPoll(&eq, 1, ms, &ev, &which);
    *got = rc == PTL_OK;
    if (rc != PTL_OK && rc != PTL_EQ_EMPTY) die("PtlEQPoll", rc);
    return ev;
}

/* An acknowledged put of `v`, repeated until acknowledged (a target may not be ready). */
static void put_value(ptl_handle_md_t md, uint64_t *src, uint64_t v, ptl_process_id_t to)
{
    *src = v;
    for (int attempt = 0; attempt < 200; attempt++) {
        TRY(PtlPut(md, PTL_ACK_REQ, to, PT, 0, 0, 0, v));
        int got;
        ptl_event_t ev = next_event(10000, &got);
        if (!got || ev.type != PTL_EVENT_SEND_END || ev.ni_fail_type != PTL_NI_OK) die("SEND_END", PTL_FAIL);
        ev = next_event(500, &got);
        if (got && ev.type == PTL_EVENT_ACK) return;
        if (got) die("an event other than ACK", PTL_FAIL);
    }
    die("never acknowledged", PTL_FAIL);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 10, maxif;
    TRY(PtlInit(&maxif));
    unsigned r0, n;
    TRY(PtlSetRank(PTL_INVALID_HANDLE, (unsigned)-1, (unsigned)-1));
    TRY(PtlGetRank(PTL_INVALID_HANDLE, &r0, &n));
    rank = r0;
    ptl_nid_t *nids = calloc(2 * n, sizeof *nids);
    ptl_pid_t *pids = calloc(2 * n, sizeof *pids);
    TRY(PtlGetNIDMap(PTL_INVALID_HANDLE, nids, n));
    TRY(PtlGetPIDMap(PTL_INVALID_HANDLE, pids, n));
    for (unsigned r = 0; r < n; r++) {
        nids[n + r] = nids[r];
        pids[n + r] = pids[r] + n;
    }
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) die("fork", PTL_FAIL);
    rank = child == 0 ? r0 + n : r0;
    size = 2 * n;
    TRY(PtlSetRank(PTL_INVALID_HANDLE, rank, size));
    TRY(PtlSetNIDMap(PTL_INVALID_HANDLE, nids, size));
    TRY(PtlSetPIDMap(PTL_INVALID_HANDLE, pids, size));
    if (child == 0) usleep(100000 * (r0 % 3));                 /* children come up unevenly */
    TRY(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    ptl_process_id_t me;
    TRY(PtlGetId(ni, &me));
    if (me.pid != pids[rank] || me.nid != nids[rank]) {
        fprintf(stderr, "FAIL ptl_fork rank %u: PtlGetId nid %u pid %u, the maps say nid %u pid %u\n", rank, me.nid, me.pid, nids[rank], pids[rank]);
        return 1;
    }
    TRY(PtlEQAlloc(ni, 16, PTL_EQ_HANDLER_NONE, &eq));
    static uint64_t token, src;
    ptl_md_t md;
    memset(&md, 0, sizeof md);
    md.start = &token;
    md.length = 8;
    md.threshold = PTL_MD_THRESH_INF;
    md.options = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE;
    md.eq_handle = eq;
    ptl_process_id_t any = { PTL_NID_ANY, PTL_PID_ANY };
    ptl_handle_me_t meh;
    ptl_handle_md_t smd;
    TRY(PtlMEAttach(ni, PT, any, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &meh));
    TRY(PtlMDAttach(meh, md, PTL_RETAIN, NULL));
    md.start = &src;
    md.options = PTL_MD_EVENT_START_DISABLE;
    TRY(PtlMDBind(ni, md, PTL_RETAIN, &smd));
    ptl_process_id_t right;
    TRY(PtlGetRankId(ni, (rank + 1) % size, &right));

    for (int r = 0; r < rounds; r++) {
        if (rank == 0) put_value(smd, &src, (uint64_t)r * size, right);
        int got;
        ptl_event_t ev = next_event(60000, &got);
        if (!got || ev.type != PTL_EVENT_PUT_END) die("expected the token's PUT_END", PTL_FAIL);
        uint64_t want = (uint64_t)r * size + (rank == 0 ? size - 1 : rank - 1);
        if (token != want) {
            fprintf(stderr, "FAIL ptl_fork rank %u round %d: token %llu, expected %llu\n", rank, r, (unsigned long long)token, (unsigned long long)want);
            return 1;
        }
        if (rank != 0) put_value(smd, &src, token + 1, right);
    }
    if (child > 0) {
        /* A child forked after its parent's PtlNIInit cannot have an NI of its own (the
         * parent's is not its); the parent's goes on. */
        fflush(stdout);
        pid_t late = fork();
        if (late == 0) {
            ptl_handle_ni_t n2;
            int rc = PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &n2);
            exit(rc == PTL_FAIL ? 0 : 3);
        }
        int st;
        if (late < 0 || waitpid(late, &st, 0) != late || !WIFEXITED(st) || WEXITSTATUS(st) != 0) die("the late child's PtlNIInit did not fail", PTL_FAIL);
        TRY(PtlGetId(ni, &me));
    }
    printf("ptl_fork: rank %u of %u ok\n", rank, size);
    fflush(stdout);
    TRY(PtlNIFini(ni));
    PtlFini();
    if (child > 0) {
        int st;
        if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0) die("the child failed", PTL_FAIL);
    }
    return 0;
}
