/* A program written the way the Portals 3.3 reference implementation's test programs are,
 * and built like them (-DP3_NAL='<p3nal_utcp.h>', -lportals3 -lportals3-utcp, no PMI):
 *
 * - the runtime is set up before PtlNIInit, on PTL_INVALID_HANDLE: "env" takes rank and
 *   size from the environment (PtlSetRank(PTL_INVALID_HANDLE, -1, -1)); "maps" gives an
 *   explicit rank/size and NID/PID maps of the program's own numbering (PIDs 40 + 3 *
 *   (size - 1 - rank)), and PtlNIInit(PTL_PID_ANY) must take the PID of its rank's entry;
 * - ranks start seconds apart: odd ranks sleep STAGGER_MS before PtlNIInit, so early
 *   ranks' first puts wait for late targets (first puts are acknowledged and repeated
 *   until acknowledged: a target may be up before its match entry is attached);
 * - one small event queue per process for what it sends and receives;
 * - a ring where each rank passes the token on as soon as it arrives, and a ping-pong in
 *   pairs where the partner answers each put at once: after each of its puts the
 *   initiator must see SEND_END and ACK before anything from its target (the answer),
 *   whatever the size (8 B; 16 KiB and 300 KiB take the paths that release the
 *   initiator's lock); other ranks' puts may come in between, and are kept for later;
 * - p3_out, the reference library's debug stream.
 *
 * Usage: ptl_rt [env|maps] [STAGGER_MS] [ROUNDS].  Prints "ptl_rt: rank R of N ok". */
#include <portals3.h>
#include P3_NAL
#include <p3rt/p3rt.h>
#include <p3api/debug.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PT_RING 5
#define PT_PING 6
#define BUF (512 << 10)

static unsigned rank, size;
static ptl_handle_ni_t ni;
static ptl_handle_eq_t eq;
static ptl_handle_md_t out_md;
static uint8_t *ring_in, *ping_in, *out;
static const size_t sizes[] = { 8, 16 << 10, 300 << 10 };

static void die(const char *what, int rc)
{
    fprintf(stderr, "FAIL ptl_rt rank %u: %s: %s\n", rank, what, PtlErrorStr(rc));
    exit(1);
}
#define TRY(call) do { int rc_ = (call); if (rc_ != PTL_OK) die(#call, rc_); } while (0)

/* Puts from others that came while this rank waited for its own events, in order. */
static ptl_event_t kept[16];
static int nkept;

static int same(ptl_process_id_t a, ptl_process_id_t b)
{
    return a.nid == b.nid && a.pid == b.pid;
}

static void bad_event(ptl_event_kind_t kind, ptl_event_t ev, const char *when)
{
    fprintf(stderr, "FAIL ptl_rt rank %u: %s: expected %s, got %s (from nid %u pid %u)\n", rank, when, PtlEventKindStr(kind), PtlEventKindStr(ev.type), ev.initiator.nid, ev.initiator.pid);
    exit(1);
}

/* The next event of the queue: one kept, else one waited for. */
static ptl_event_t next_event(void)
{
    ptl_event_t ev;
    if (nkept > 0) {
        ev = kept[0];
        memmove(kept, kept + 1, --nkept * sizeof *kept);
        return ev;
    }
    int rc = PtlEQWait(eq, &ev);
    if (rc != PTL_OK) die("PtlEQWait", rc);
    return ev;
}

/* `ev` arrived while this rank waited for its own events of a put to `to`: a put from
 * another rank is kept for later; anything from `to` (its answer) is out of order. */
static void keep(ptl_event_t ev, ptl_event_kind_t kind, ptl_process_id_t to, const char *when)
{
    if (ev.type != PTL_EVENT_PUT_END || same(ev.initiator, to) || nkept == 16) bad_event(kind, ev, when);
    kept[nkept++] = ev;
}

/* The next own event `kind` of a put to `to`. */
static ptl_event_t expect_own(ptl_event_kind_t kind, ptl_process_id_t to, const char *when)
{
    for (;;) {
        ptl_event_t ev;
        int rc = PtlEQWait(eq, &ev);
        if (rc != PTL_OK) die("PtlEQWait", rc);
        if (ev.type == kind) {
            if (ev.ni_fail_type != PTL_NI_OK) die(when, PTL_FAIL);
            return ev;
        }
        keep(ev, kind, to, when);
    }
}

/* Puts `len` bytes of `out` (the token first) to `to`, acknowledged: exactly SEND_END
 * then ACK.  `first`: repeated until acknowledged (the target may not be ready yet). */
static void put_token(ptl_pt_index_t pt, ptl_process_id_t to, size_t len, uint64_t token, int first)
{
    memcpy(out, &token, 8);
    for (int attempt = 0;; attempt++) {
        TRY(PtlPutRegion(out_md, 0, len, PTL_ACK_REQ, to, pt, 0, 0, 0, token));
        expect_own(PTL_EVENT_SEND_END, to, "after a put");
        if (!first) {
            ptl_event_t a = expect_own(PTL_EVENT_ACK, to, "after SEND_END");
            if (a.mlength != len) die("ACK mlength", PTL_FAIL);
            return;
        }
        ptl_event_t ev;
        int which, rc;
        while ((rc = PtlEQPoll(&eq, 1, 1000, &ev, &which)) == PTL_OK && ev.type != PTL_EVENT_ACK)
            keep(ev, PTL_EVENT_ACK, to, "the first put");
        if (rc == PTL_OK) return;
        if (rc != PTL_EQ_EMPTY) die("the first put", rc);
        if (attempt == 100) die("first put never acknowledged", PTL_FAIL);
    }
}

/* The token that arrives next (into `in`): its PUT_END, with the data in place. */
static uint64_t take_token(const uint8_t *in, size_t len, const char *when)
{
    ptl_event_t ev = next_event();
    if (ev.type != PTL_EVENT_PUT_END || ev.ni_fail_type != PTL_NI_OK) bad_event(PTL_EVENT_PUT_END, ev, when);
    uint64_t t;
    memcpy(&t, in, 8);
    if (ev.mlength != len || ev.hdr_data != t) {
        fprintf(stderr, "FAIL ptl_rt rank %u: %s: token %llu (hdr %llu), %llu bytes, expected %zu\n", rank, when, (unsigned long long)t, (unsigned long long)ev.hdr_data, (unsigned long long)ev.mlength, len);
        exit(1);
    }
    for (size_t i = 8; i < len; i += 4093)
        if (in[i] != (uint8_t)(t + i)) die("token data", PTL_FAIL);
    return t;
}

static void fill(uint64_t token, size_t len)
{
    for (size_t i = 8; i < len; i += 4093) out[i] = (uint8_t)(token + i);
}

static ptl_process_id_t id_of(unsigned r)
{
    ptl_process_id_t id;
    TRY(PtlGetRankId(ni, r, &id));
    return id;
}

int main(int argc, char **argv)
{
    int maps = argc > 1 && !strcmp(argv[1], "maps");
    int stagger_ms = argc > 2 ? atoi(argv[2]) : 0;
    int rounds = argc > 3 ? atoi(argv[3]) : 30;
    int maxif;
    TRY(PtlInit(&maxif));
    TRY(PtlSetRank(PTL_INVALID_HANDLE, (unsigned)-1, (unsigned)-1));
    TRY(PtlGetRank(PTL_INVALID_HANDLE, &rank, &size));
    ptl_nid_t *nids = calloc(size, sizeof *nids);
    ptl_pid_t *pids = calloc(size, sizeof *pids);
    TRY(PtlGetNIDMap(PTL_INVALID_HANDLE, nids, size));
    if (maps) {
        /* The program's own numbering, set before the NI exists. */
        for (unsigned r = 0; r < size; r++) pids[r] = 40 + 3 * (size - 1 - r);
        TRY(PtlSetRank(PTL_INVALID_HANDLE, rank, size));
        TRY(PtlSetNIDMap(PTL_INVALID_HANDLE, nids, size));
        TRY(PtlSetPIDMap(PTL_INVALID_HANDLE, pids, size));
    } else {
        TRY(PtlGetPIDMap(PTL_INVALID_HANDLE, pids, size));
    }
    if (rank % 2 == 1 && stagger_ms > 0) usleep(stagger_ms * 1000);
    TRY(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    ptl_process_id_t me;
    TRY(PtlGetId(ni, &me));
    if (me.pid != pids[rank] || me.nid != nids[rank]) {
        fprintf(stderr, "FAIL ptl_rt rank %u: PtlGetId nid %u pid %u, the maps say nid %u pid %u\n", rank, me.nid, me.pid, nids[rank], pids[rank]);
        return 1;
    }
    unsigned r2, s2;
    TRY(PtlGetRank(ni, &r2, &s2));
    ptl_process_id_t check = id_of(rank);
    if (r2 != rank || s2 != size || check.pid != me.pid) die("the NI's runtime is not the one set up", PTL_FAIL);
    fprintf(p3_out, "ptl_rt: rank %u is nid %u pid %u\n", rank, me.nid, me.pid);

    TRY(PtlEQAlloc(ni, 8, PTL_EQ_HANDLER_NONE, &eq));
    ring_in = calloc(1, BUF);
    ping_in = calloc(1, BUF);
    out = calloc(1, BUF);
    /* The ring's token and the ping-pong's land in buffers of their own, both logged in
     * the one queue. */
    ptl_md_t md;
    memset(&md, 0, sizeof md);
    md.length = BUF;
    md.threshold = PTL_MD_THRESH_INF;
    md.options = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE;
    md.eq_handle = eq;
    ptl_process_id_t any = { PTL_NID_ANY, PTL_PID_ANY };
    ptl_handle_me_t meh;
    md.start = ring_in;
    TRY(PtlMEAttach(ni, PT_RING, any, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &meh));
    TRY(PtlMDAttach(meh, md, PTL_RETAIN, NULL));
    md.start = ping_in;
    TRY(PtlMEAttach(ni, PT_PING, any, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &meh));
    TRY(PtlMDAttach(meh, md, PTL_RETAIN, NULL));
    md.start = out;
    md.options = PTL_MD_EVENT_START_DISABLE;
    TRY(PtlMDBind(ni, md, PTL_RETAIN, &out_md));

    /* The ring: each rank passes the token on at once (rank 0 first; the first put to
     * each neighbour is repeated until acknowledged). */
    if (size > 1) {
        ptl_process_id_t right = id_of((rank + 1) % size);
        for (int r = 0; r < rounds; r++) {
            size_t len = sizes[r % 3];
            uint64_t token;
            if (rank == 0) {
                token = (uint64_t)r * size;
                fill(token, len);
                put_token(PT_RING, right, len, token, r == 0);
            }
            token = take_token(ring_in, len, "the ring");
            uint64_t want = (uint64_t)r * size + (rank == 0 ? size - 1 : rank - 1);
            if (token != want) die("ring token", PTL_FAIL);
            if (rank != 0) {
                fill(token + 1, len);
                put_token(PT_RING, right, len, token + 1, r == 0);
            }
        }
    }
    /* Ping-pong in pairs (2k, 2k+1): the answer to each put comes at once. */
    unsigned partner = rank ^ 1;
    if (partner < size) {
        ptl_process_id_t p = id_of(partner);
        for (int r = 0; r < rounds; r++) {
            size_t len = sizes[(r + rank / 2) % 3];
            uint64_t token = 1000000 + (uint64_t)r * 2;
            if (rank % 2 == 0) {
                fill(token, len);
                put_token(PT_PING, p, len, token, 0);
                if (take_token(ping_in, len, "the ping-pong's answer") != token + 1) die("answer", PTL_FAIL);
            } else {
                if (take_token(ping_in, len, "the ping-pong") != token) die("ping", PTL_FAIL);
                fill(token + 1, len);
                put_token(PT_PING, p, len, token + 1, 0);
            }
        }
    }
    /* Nothing else came. */
    ptl_event_t ev;
    int rc = PtlEQGet(eq, &ev);
    if (rc != PTL_EQ_EMPTY) die("an event too many", rc);
    printf("ptl_rt: rank %u of %u ok\n", rank, size);
    fflush(stdout);
    /* Every put was acknowledged: nobody sends here any more. */
    TRY(PtlNIFini(ni));
    PtlFini();
    return 0;
}
