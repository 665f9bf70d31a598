/* A program written for the Portals 3.3 reference implementation, built the way those
 * are (-DP3_NAL='<p3nal_utcp.h>', -lportals3 -lportals3-utcp, no PMI library): the NAL
 * header through P3_NAL, PTL_IFACE_DEFAULT, the rank runtime (PtlSetRank(ni, -1, -1),
 * PtlGetRankId), the optional macros tested with #ifdef, and peers found by retrying an
 * acknowledged put until it is acknowledged (a peer not up yet fails the put, one whose
 * entry is not attached yet drops it).  A token goes round the ring R times.
 * Usage: ptl_ref [rounds].  Prints "ptl_ref: rank R of N ok". */
#include <portals3.h>
#include P3_NAL
#include <p3rt/p3rt.h>
#include <p3api/debug.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TOKEN_PT 7

static ptl_handle_ni_t ni;
static ptl_handle_eq_t send_eq, recv_eq;
static unsigned rank, size;

static void die(const char *what, int rc)
{
    fprintf(stderr, "ptl_ref rank %u: %s: %s\n", rank, what, PtlErrorStr(rc));
    exit(1);
}
#define TRY(call) do { int rc_ = (call); if (rc_ != PTL_OK) die(#call, rc_); } while (0)

/* Puts `v` to `to` until the target acknowledges it. */
static void reliable_put(ptl_process_id_t to, uint64_t *v)
{
    ptl_md_t md;
    memset(&md, 0, sizeof md);
    md.start = v;
    md.length = sizeof *v;
    md.threshold = PTL_MD_THRESH_INF;
    md.eq_handle = send_eq;
    ptl_handle_md_t h;
    TRY(PtlMDBind(ni, md, PTL_RETAIN, &h));
    for (int attempt = 0; attempt < 20000; attempt++) {
        TRY(PtlPut(h, PTL_ACK_REQ, to, TOKEN_PT, 0, 0, 0, 0));
        int acked = 0, failed = 0;
        for (;;) {
            ptl_event_t ev;
            int which, rc = PtlEQPoll(&send_eq, 1, 100, &ev, &which);
            if (rc == PTL_EQ_EMPTY) break;                      /* no ack: dropped, retry */
            if (rc != PTL_OK) die("PtlEQPoll", rc);
            if (ev.type == PTL_EVENT_SEND_END && ev.ni_fail_type != PTL_NI_OK) { failed = 1; break; }
            if (ev.type == PTL_EVENT_ACK) { acked = 1; break; }
        }
        if (acked) {
            TRY(PtlMDUnlink(h));
            return;
        }
        usleep(failed ? 1000 : 100);
    }
    fprintf(stderr, "ptl_ref rank %u: nid %u pid %u never acknowledged\n", rank, to.nid, to.pid);
    exit(1);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20, maxif;
    TRY(PtlInit(&maxif));
    ptl_ni_limits_t lim;
    TRY(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, &lim, &ni));
    TRY(PtlSetRank(ni, (unsigned)-1, (unsigned)-1));
    TRY(PtlGetRank(ni, &rank, &size));
    ptl_process_id_t me, right;
    TRY(PtlGetId(ni, &me));
    TRY(PtlGetRankId(ni, (rank + 1) % size, &right));
    ptl_process_id_t check;
    TRY(PtlGetRankId(ni, rank, &check));
    if (check.nid != me.nid || check.pid != me.pid) die("PtlGetRankId(my rank) is not PtlGetId", PTL_FAIL);
#ifndef PTL_PROGRESS_THREAD
    fprintf(stderr, "ptl_ref: this library would need PtlProgress calls\n");
    return 1;
#endif
    TRY(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &send_eq));
    TRY(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &recv_eq));
    static uint64_t token;
    ptl_md_t md;
    memset(&md, 0, sizeof md);
    md.start = &token;
    md.length = sizeof token;
    md.threshold = PTL_MD_THRESH_INF;
    md.options = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE;
#ifdef PTL_MD_EVENT_AUTO_UNLINK_ENABLE
    md.options |= PTL_MD_EVENT_AUTO_UNLINK_ENABLE;
#endif
    md.eq_handle = recv_eq;
    ptl_process_id_t any = { PTL_NID_ANY, PTL_PID_ANY };
    ptl_handle_me_t me_h;
    TRY(PtlMEAttach(ni, TOKEN_PT, any, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me_h));
    TRY(PtlMDAttach(me_h, md, PTL_RETAIN, NULL));

    for (int r = 0; r < rounds; r++) {
        uint64_t v;
        if (rank == 0) {
            v = (uint64_t)r * size;
            reliable_put(right, &v);
        }
        ptl_event_t ev;
        TRY(PtlEQWait(recv_eq, &ev));
        if (ev.type != PTL_EVENT_PUT_END) die("unexpected event", PTL_FAIL);
        uint64_t want = (uint64_t)r * size + (rank == 0 ? size - 1 : rank - 1);
        if (token != want) {
            fprintf(stderr, "ptl_ref rank %u round %d: token %llu, expected %llu\n", rank, r, (unsigned long long)token, (unsigned long long)want);
            return 1;
        }
        if (rank != 0) {
            v = token + 1;
            reliable_put(right, &v);
        }
    }
    printf("ptl_ref: rank %u of %u ok\n", rank, size);
    fflush(stdout);
    /* Stay a moment so that a late retry from the left still finds this NI. */
    usleep(200000);
    TRY(PtlNIFini(ni));
    PtlFini();
    return 0;
}
