/* MPI-style message passing built the way the specification's chapter 5 describes it
 * (figure "Message Reception in MPI"): on the receive portal, posted receives, then the
 * RcvMark entry (no MD: matches nothing), then short-message buffers that roll over
 * with unlink_nofit (3.2's five-argument PtlMDAttach) and are replenished on their
 * UNLINK events, then a zero-length truncating "match any" entry that records long
 * unexpected messages, whose bodies the receiver then fetches with PtlGet from the
 * sender's get portal.  A receive that finds nothing among the unexpected messages is
 * posted inactive before RcvMark and activated with PtlMDUpdate conditioned on the
 * unexpected queue being empty (the race the chapter closes that way).  Every pair of
 * ranks exchanges short and long messages, some preposted, some unexpected, some
 * posted before they are sent.  Usage: ptl_mpi [messages per pair].
 * Prints "ptl_mpi: rank R of N ok (S short, L long, U unexpected, B buffers)". */
#include "ptest.h"
#include <pmi.h>
#include <unistd.h>

enum { PT_RECV = 1, PT_GET = 2 };
#define LONG_FLAG (1ULL << 63)
#define SHORT_MAX 200
#define SHORT_BUF 256

static int rank, n, K;
static ptl_handle_ni_t ni;
static ptl_process_id_t *ids;
static ptl_handle_eq_t unexq, recvq, sendq, getq;
static ptl_handle_me_t rcvmark, matchany;
static int buffers_made, unexpected_seen, NBUF;

static size_t msg_size(int src, int dst, int tag)
{
    return tag % 2 == 0 ? (size_t)(1 + (src * 31 + dst * 17 + tag * 13) % SHORT_MAX)
                        : (size_t)(2000 + (src * 7919 + dst * 104729 + tag * 1299709) % 70000);
}

static char byte_of(int src, int tag, size_t i) { return (char)(src * 13 + tag * 7 + i * 3); }

static ptl_match_bits_t bits_of(int src, int tag) { return ((ptl_match_bits_t)src << 32) | (unsigned)tag; }

/* A short-message buffer at the end of the short list (just before "match any"). */
static void add_short_buffer(void)
{
    char *buf = malloc(SHORT_BUF);                            /* kept: unexpected data lives there */
    ptl_handle_me_t m;
    PCHECK(PtlMEInsert(matchany, ANY_ID, 0, ~LONG_FLAG, PTL_UNLINK, PTL_INS_BEFORE, &m));
    PCHECK(PtlMDAttachNoFit(m, md_of(buf, SHORT_BUF, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_ACK_DISABLE, unexq), PTL_UNLINK, PTL_UNLINK, NULL));
    buffers_made++;
}

/* The receiver's list of unexpected messages already taken from the queue. */
struct unexp { ptl_event_t ev; int used; };
static struct unexp *rcvd;
static int nrcvd, caprcvd;

/* Takes everything from the unexpected queue: messages into `rcvd`, buffer rollovers
 * replenished. */
static void drain_unexpected(void)
{
    ptl_event_t ev;
    int rc;
    while ((rc = PtlEQGet(unexq, &ev)) == PTL_OK || rc == PTL_EQ_DROPPED) {
        CHECK_EQ(rc, PTL_OK);
        if (ev.type == PTL_EVENT_UNLINK) {
            add_short_buffer();
        } else if (ev.type == PTL_EVENT_PUT_END) {
            if (nrcvd == caprcvd) rcvd = realloc(rcvd, sizeof *rcvd * (caprcvd = caprcvd * 2 + 16));
            rcvd[nrcvd].ev = ev;
            rcvd[nrcvd++].used = 0;
            unexpected_seen++;
        } else {
            CHECK_EQ(ev.type, PTL_EVENT_PUT_START);
        }
    }
}

/* Copies an unexpected message out (short: from its buffer; long: a get of the body). */
static void take_unexpected(struct unexp *u, char *buf, size_t len)
{
    ptl_event_t *ev = &u->ev;
    u->used = 1;
    CHECK_EQ(ev->rlength, len);
    if (!(ev->match_bits & LONG_FLAG)) {
        CHECK_EQ(ev->mlength, len);
        memcpy(buf, (char *)ev->md.start + ev->offset, len);
        return;
    }
    CHECK_EQ(ev->mlength, 0);                                  /* only the envelope was kept */
    ptl_handle_md_t g;
    PCHECK(PtlMDBind(ni, md_of(buf, len, 1, 0, getq), PTL_UNLINK, &g));
    PCHECK(PtlGet(g, ev->initiator, PT_GET, 0, ev->match_bits, 0));
    EXPECT(getq, PTL_EVENT_REPLY_START);
    ptl_event_t r = EXPECT(getq, PTL_EVENT_REPLY_END);
    CHECK_EQ(r.mlength, len);
    EXPECT(getq, PTL_EVENT_UNLINK);                            /* threshold 1, PTL_UNLINK */
    PCHECK_RC(PtlMDUnlink(g), PTL_MD_INVALID);
}

struct recv { char *buf; size_t len; int src, tag, done; ptl_handle_md_t md; };

/* MPIreceive: the unexpected messages first; else post inactive before RcvMark and
 * activate unless something arrived meanwhile.  Returns 1 when received at once. */
static int mpi_receive(struct recv *r)
{
    ptl_match_bits_t want = bits_of(r->src, r->tag);
    ptl_handle_me_t m;
    int posted = 0;
    for (;;) {
        drain_unexpected();
        for (int i = 0; i < nrcvd; i++) {
            if (!rcvd[i].used && (rcvd[i].ev.match_bits & ~LONG_FLAG) == want) {
                if (posted) PCHECK(PtlMEUnlink(m));
                take_unexpected(&rcvd[i], r->buf, r->len);
                r->done = 1;
                return 1;
            }
        }
        if (!posted) {
            PCHECK(PtlMEInsert(rcvmark, ids[r->src], want, LONG_FLAG, PTL_UNLINK, PTL_INS_BEFORE, &m));
            ptl_md_t md = md_of(r->buf, r->len, 0, PTL_MD_OP_PUT, recvq);   /* inactive */
            md.user_ptr = r;
            PCHECK(PtlMDAttach(m, md, PTL_UNLINK, &r->md));
            posted = 1;
        }
        ptl_md_t active = md_of(r->buf, r->len, 1, PTL_MD_OP_PUT, recvq);
        active.user_ptr = r;
        int rc = PtlMDUpdate(r->md, NULL, &active, unexq);
        if (rc == PTL_OK) return 0;
        CHECK_EQ(rc, PTL_MD_NO_UPDATE);                        /* something arrived: look again */
    }
}

/* A receive posted directly (preposted, before any send). */
static void prepost(struct recv *r)
{
    ptl_handle_me_t m;
    PCHECK(PtlMEInsert(rcvmark, ids[r->src], bits_of(r->src, r->tag), LONG_FLAG, PTL_UNLINK, PTL_INS_BEFORE, &m));
    ptl_md_t md = md_of(r->buf, r->len, 1, PTL_MD_OP_PUT, recvq);
    md.user_ptr = r;
    PCHECK(PtlMDAttach(m, md, PTL_UNLINK, &r->md));
}

struct send { char *buf; size_t len; int dst, tag, waiting; ptl_handle_me_t getme; };

/* Takes the sender's events: an ACK means a long message landed in a posted receive
 * (its body on the get portal is not needed), a GET_END that the receiver fetched it. */
static void process_sendq(void)
{
    ptl_event_t ev;
    int rc;
    while ((rc = PtlEQGet(sendq, &ev)) == PTL_OK) {
        struct send *s = ev.md.user_ptr;
        if (ev.type == PTL_EVENT_ACK && s->waiting) {
            CHECK_EQ(ev.mlength, s->len);
            s->waiting = 0;
            PCHECK(PtlMEUnlink(s->getme));
        } else if (ev.type == PTL_EVENT_GET_END) {
            CHECK_EQ(ev.mlength, s->len);
            s->waiting = 0;
        }
    }
    CHECK_EQ(rc, PTL_EQ_EMPTY);
}

/* MPIsend: a long message leaves its body available on the get portal first. */
static void mpi_send(struct send *s)
{
    ptl_match_bits_t bits = bits_of(rank, s->tag);
    int is_long = s->len > SHORT_MAX;
    if (is_long) {
        bits |= LONG_FLAG;
        PCHECK(PtlMEAttach(ni, PT_GET, ids[s->dst], bits, 0, PTL_UNLINK, PTL_INS_AFTER, &s->getme));
        ptl_md_t gmd = md_of(s->buf, s->len, 1, PTL_MD_OP_GET, sendq);
        gmd.user_ptr = s;
        PCHECK(PtlMDAttach(s->getme, gmd, PTL_UNLINK, NULL));
        s->waiting = 1;
    }
    ptl_md_t md = md_of(s->buf, s->len, PTL_MD_THRESH_INF, 0, sendq);
    md.user_ptr = s;
    ptl_handle_md_t h;
    PCHECK(PtlMDBind(ni, md, PTL_RETAIN, &h));
    PCHECK(PtlPut(h, is_long ? PTL_ACK_REQ : PTL_NO_ACK_REQ, ids[s->dst], PT_RECV, 0, bits, 0, s->len));
    process_sendq();
    PCHECK(PtlMDUnlink(h));
}

int main(int argc, char **argv)
{
    int spawned;
    CHECK_EQ(PMI_Init(&spawned), PMI_SUCCESS);
    CHECK_EQ(PMI_Get_rank(&rank), PMI_SUCCESS);
    CHECK_EQ(PMI_Get_size(&n), PMI_SUCCESS);
    sntest_rank = rank;
    K = argc > 1 ? atoi(argv[1]) : 24;
    int maxif;
    PCHECK(PtlInit(&maxif));
    PCHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    PCHECK(PtlSetRank(ni, (unsigned)-1, (unsigned)-1));
    ids = malloc(sizeof *ids * n);
    for (int r = 0; r < n; r++) PCHECK(PtlGetRankId(ni, r, &ids[r]));
    PCHECK(PtlEQAlloc(ni, 16384, PTL_EQ_HANDLER_NONE, &unexq));
    PCHECK(PtlEQAlloc(ni, 16384, PTL_EQ_HANDLER_NONE, &recvq));
    PCHECK(PtlEQAlloc(ni, 16384, PTL_EQ_HANDLER_NONE, &sendq));
    PCHECK(PtlEQAlloc(ni, 16, PTL_EQ_HANDLER_NONE, &getq));

    /* The receive portal: RcvMark, short buffers, match any. */
    PCHECK(PtlMEAttach(ni, PT_RECV, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &rcvmark));
    PCHECK(PtlMEAttach(ni, PT_RECV, ANY_ID, 0, ~0ULL, PTL_RETAIN, PTL_INS_AFTER, &matchany));
    PCHECK(PtlMDAttach(matchany, md_of(NULL, 0, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_TRUNCATE | PTL_MD_ACK_DISABLE, unexq), PTL_RETAIN, NULL));
    /* Enough short buffers for every short unexpected message of the phase where the
     * receiver does not replenish them (at least one message fits in each). */
    NBUF = (K / 6 + 1) * (n - 1) + 2;
    for (int i = 0; i < NBUF; i++) add_short_buffer();

    /* Messages: K per ordered pair.  tag % 3: 0 preposted, 1 unexpected, 2 posted
     * (through the unexpected search and PtlMDUpdate) before it is sent. */
    int nr = (n - 1) * K, ns = nr;
    struct recv *rv = calloc(nr ? nr : 1, sizeof *rv);
    struct send *sv = calloc(ns ? ns : 1, sizeof *sv);
    int k = 0;
    for (int src = 0; src < n; src++) {
        if (src == rank) continue;
        for (int tag = 0; tag < K; tag++, k++) {
            rv[k] = (struct recv){ .len = msg_size(src, rank, tag), .src = src, .tag = tag };
            rv[k].buf = malloc(rv[k].len);
            memset(rv[k].buf, 0, rv[k].len);
        }
    }
    k = 0;
    for (int dst = 0; dst < n; dst++) {
        if (dst == rank) continue;
        for (int tag = 0; tag < K; tag++, k++) {
            sv[k] = (struct send){ .len = msg_size(rank, dst, tag), .dst = dst, .tag = tag };
            sv[k].buf = malloc(sv[k].len);
            for (size_t i = 0; i < sv[k].len; i++) sv[k].buf[i] = byte_of(rank, tag, i);
        }
    }
    for (int i = 0; i < nr; i++) if (rv[i].tag % 3 == 0) prepost(&rv[i]);
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    for (int i = 0; i < ns; i++) if (sv[i].tag % 3 != 2) mpi_send(&sv[i]);
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    int at_once = 0;
    for (int i = 0; i < nr; i++) if (rv[i].tag % 3 != 0) at_once += mpi_receive(&rv[i]);
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    for (int i = 0; i < ns; i++) if (sv[i].tag % 3 == 2) mpi_send(&sv[i]);

    /* Completion: posted receives report on recvq (user_ptr = the receive). */
    int pending = 0;
    for (int i = 0; i < nr; i++) pending += !rv[i].done;
    while (pending > 0) {
        ptl_event_t ev;
        PCHECK(PtlEQWait(recvq, &ev));
        if (ev.type != PTL_EVENT_PUT_END) continue;
        struct recv *r = ev.md.user_ptr;
        CHECK(r >= rv && r < rv + nr && !r->done);
        CHECK_EQ(ev.mlength, r->len);
        CHECK(ev.initiator.nid == ids[r->src].nid && ev.initiator.pid == ids[r->src].pid);
        CHECK_EQ(ev.hdr_data, r->len);
        r->done = 1;
        pending--;
    }
    /* Senders: a long message not acked waits for the receiver's get of its body. */
    for (;;) {
        process_sendq();
        int waiting = 0;
        for (int i = 0; i < ns; i++) waiting += sv[i].waiting;
        if (!waiting) break;
        usleep(1000);
    }
    int shorts = 0, longs = 0;
    for (int i = 0; i < nr; i++) {
        for (size_t j = 0; j < rv[i].len; j++)
            if (rv[i].buf[j] != byte_of(rv[i].src, rv[i].tag, j))
                SN_FAIL("message %d from %d tag %d: byte %zu of %zu wrong", i, rv[i].src, rv[i].tag, j, rv[i].len);
        rv[i].len > SHORT_MAX ? longs++ : shorts++;
    }
    CHECK(n == 1 || (unexpected_seen > 0 && at_once > 0));
    CHECK(n == 1 || K < 24 || buffers_made > NBUF);            /* short buffers rolled over */
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    printf("ptl_mpi: rank %d of %d ok (%d short, %d long, %d unexpected, %d buffers)\n", rank, n, shorts, longs, unexpected_seen, buffers_made);
    PCHECK(PtlNIFini(ni));
    PtlFini();
    return 0;
}
