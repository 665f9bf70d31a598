/* Ranks written the way Portals programs are: the runtime (p3rt.h) names every rank's
 * process id, checked against ids exchanged with PMI_Allgather; a rank whose NI comes
 * up late (a put to it waits for it; across machines PtlNIInit is collective, so there
 * it is up by then); a ring of puts with
 * acks checked on both sides (initiator ids, data, per-pair order); a ping-pong whose
 * target sleeps in PtlEQWait; puts landing while the target spins on the buffer and
 * gets answered while it sleeps (no Portals call); access control across processes
 * (denials silent and counted); 1 MiB puts and gets (two-phase across machines).
 * Usage: ptl_ring [iterations].  Prints "ptl_ring: rank R of N ok". */
#include "ptest.h"
#include <pmi.h>
#include <time.h>
#include <unistd.h>

enum { PT_RING = 1, PT_PING = 2, PT_BIG = 3, PT_ACL = 4, PT_SPIN = 5, PT_LATE = 6, PT_IOV = 7 };
#define MID (300 << 10)
#define BIG (1 << 20)

static int rank, n;
static ptl_handle_ni_t ni;
static ptl_handle_eq_t eq, ieq;
static ptl_process_id_t *ids;

static ptl_handle_md_t bind_md(void *buf, ptl_size_t len, ptl_handle_eq_t q)
{
    ptl_handle_md_t h;
    PCHECK(PtlMDBind(ni, md_of(buf, len, PTL_MD_THRESH_INF, 0, q), PTL_RETAIN, &h));
    return h;
}

static ptl_handle_md_t attach(ptl_pt_index_t pt, ptl_process_id_t who, ptl_match_bits_t bits, void *buf, ptl_size_t len, unsigned opts, ptl_handle_eq_t q)
{
    ptl_handle_me_t m;
    ptl_handle_md_t d;
    PCHECK(PtlMEAttach(ni, pt, who, bits, 0, PTL_RETAIN, PTL_INS_AFTER, &m));
    PCHECK(PtlMDAttach(m, md_of(buf, len, PTL_MD_THRESH_INF, opts, q), PTL_RETAIN, &d));
    return d;
}

/* The initiator side of a put that must have been accepted with an ack. */
static void put_acked(ptl_handle_md_t md, ptl_process_id_t to, ptl_pt_index_t pt, ptl_ac_index_t ac, ptl_size_t off, uint64_t hdr, ptl_size_t len)
{
    PCHECK(PtlPut(md, PTL_ACK_REQ, to, pt, ac, 0, off, hdr));
    ptl_event_t s = EXPECT(ieq, PTL_EVENT_SEND_START);
    ptl_event_t e = EXPECT(ieq, PTL_EVENT_SEND_END);
    ptl_event_t a = EXPECT(ieq, PTL_EVENT_ACK);
    CHECK(s.link == e.link && e.hdr_data == hdr);
    CHECK(a.initiator.nid == to.nid && a.initiator.pid == to.pid);
    CHECK_EQ(a.mlength, len);
    CHECK_EQ(a.offset, off);
}

int main(int argc, char **argv)
{
    int spawned;
    CHECK_EQ(PMI_Init(&spawned), PMI_SUCCESS);
    CHECK_EQ(PMI_Get_rank(&rank), PMI_SUCCESS);
    CHECK_EQ(PMI_Get_size(&n), PMI_SUCCESS);
    sntest_rank = rank;
    int iters = argc > 1 ? atoi(argv[1]) : 200;
    int right = (rank + 1) % n, left = (rank + n - 1) % n;
    int maxif;
    PCHECK(PtlInit(&maxif));

    /* A late peer: the first other rank on rank 0's node (from the runtime's NID map,
     * read before PtlNIInit) starts its NI 300 ms late; rank 0's put to it waits. */
    static char late[8] = "late";
    unsigned rs, rr;
    PCHECK(PtlGetRank(PTL_INVALID_HANDLE, &rr, &rs));
    CHECK(rr == (unsigned)rank && rs == (unsigned)n);
    ptl_nid_t *nids = malloc(sizeof *nids * n);
    PCHECK(PtlGetNIDMap(PTL_INVALID_HANDLE, nids, n));
    int late_rank = -1;
    for (int r = 1; r < n && late_rank < 0; r++)
        if (nids[r] == nids[0]) late_rank = r;
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    if (rank == late_rank) usleep(300000);
    PCHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    PCHECK(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &ieq));
    if (rank == 0 && late_rank > 0) {
        ptl_process_id_t idl;
        PCHECK(PtlGetRankId(ni, late_rank, &idl));            /* the runtime knows it already */
        ptl_handle_md_t md = bind_md(late, 8, ieq);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        PCHECK(PtlPut(md, PTL_NO_ACK_REQ, idl, PT_LATE, 0, 0, 0, 0));
        clock_gettime(CLOCK_MONOTONIC, &t1);
        EXPECT(ieq, PTL_EVENT_SEND_START);
        EXPECT(ieq, PTL_EVENT_SEND_END);                      /* delivered (no entry: dropped) */
        expect_empty(ieq);
        double waited = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
        printf("ptl_ring: rank 0 waited %.3f s for rank %d\n", waited, late_rank);
        PCHECK(PtlMDUnlink(md));
    }
    free(nids);
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    PCHECK(PtlEQAlloc(ni, 4 * iters + 256, PTL_EQ_HANDLER_NONE, &eq));
    PCHECK(PtlEQFree(ieq));
    PCHECK(PtlEQAlloc(ni, 4096, PTL_EQ_HANDLER_NONE, &ieq));

    /* Ids: the runtime's map and PMI_Allgather agree. */
    ptl_process_id_t me;
    PCHECK(PtlGetId(ni, &me));
    ids = malloc(sizeof *ids * n);
    CHECK_EQ(PMI_Allgather(&me, ids, sizeof me), PMI_SUCCESS);
    unsigned rrank, rsize;
    PCHECK(PtlGetRank(ni, &rrank, &rsize));
    CHECK_EQ(rrank, rank);
    CHECK_EQ(rsize, n);
    for (int r = 0; r < n; r++) {
        ptl_process_id_t id;
        PCHECK(PtlGetRankId(ni, r, &id));
        CHECK(id.nid == ids[r].nid && id.pid == ids[r].pid);
        for (int q = 0; q < r; q++) CHECK(ids[q].nid != ids[r].nid || ids[q].pid != ids[r].pid);
    }
    ptl_nid_t *nmap = malloc(sizeof *nmap * n);
    ptl_pid_t *pmap = malloc(sizeof *pmap * n);
    PCHECK(PtlGetNIDMap(ni, nmap, n));
    PCHECK(PtlGetPIDMap(ni, pmap, n));
    for (int r = 0; r < n; r++) CHECK(nmap[r] == ids[r].nid && pmap[r] == ids[r].pid);
    unsigned long dist;
    PCHECK(PtlNIDist(ni, ids[right], &dist));
    CHECK_EQ(dist, right == rank ? 0 : ids[right].nid == me.nid ? 1 : 2);

    /* Receive buffers. */
    static char ring[64 * 64];
    static uint64_t ping[2], spin_word;
    static char acl[16];
    char *big = aligned_alloc(4096, 2 * BIG);
    CHECK(big != NULL);
    for (int i = 0; i < BIG; i++) big[BIG + i] = (char)(i * 7 + rank);
    attach(PT_RING, ANY_ID, 0, ring, sizeof ring, PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, eq);
    attach(PT_PING, ANY_ID, 0, ping, sizeof ping, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq);
    attach(PT_BIG, ANY_ID, 0, big, 2 * BIG, PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, eq);
    attach(PT_SPIN, ANY_ID, 0, &spin_word, 8, PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_END_DISABLE, PTL_EQ_NONE);
    attach(PT_ACL, ANY_ID, 0, acl, sizeof acl, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq);
    attach(PT_LATE, ANY_ID, 0, late, sizeof late, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq);
    /* An iovec MD of three pieces, the middle one larger than a request carries. */
    static char ia[100], ic[100];
    char *ib = malloc(MID);
    ptl_md_iovec_t tiov[3] = {{ia, 100}, {ib, MID}, {ic, 100}};
    {
        ptl_handle_me_t m;
        PCHECK(PtlMEAttach(ni, PT_IOV, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m));
        PCHECK(PtlMDAttach(m, md_of(tiov, 3, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_IOVEC | PTL_MD_MANAGE_REMOTE, eq), PTL_RETAIN, NULL));
    }
    /* Cookie 1 admits only the left neighbour, on PT_ACL. */
    PCHECK(PtlACEntry(ni, 1, ids[left], PTL_UID_ANY, PTL_JID_ANY, PT_ACL));
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);

    /* The late peer is up now: the retry lands. */
    if (rank == 0 && n > 1) {
        ptl_handle_md_t md = bind_md(late, 8, ieq);
        put_acked(md, ids[1], PT_LATE, 0, 0, 1, 8);
        PCHECK(PtlMDUnlink(md));
    }

    /* Ring: iters puts to the right, each acked; the target checks order at the end. */
    char msg[64];
    ptl_handle_md_t mmd = bind_md(msg, sizeof msg, ieq);
    for (int i = 0; i < iters; i++) {
        snprintf(msg, sizeof msg, "from %d iteration %d", rank, i);
        put_acked(mmd, ids[right], PT_RING, 0, 64 * (rank % 64), i, sizeof msg);
    }
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    if (rank == 1) {                                          /* the late put's retry came first */
        EXPECT(eq, PTL_EVENT_PUT_START);
        ptl_event_t l = EXPECT(eq, PTL_EVENT_PUT_END);
        CHECK(l.hdr_data == 1 && l.pt_index == PT_LATE && !strcmp(late, "late"));
    }
    for (int i = 0; i < iters; i++) {
        ptl_event_t s = EXPECT(eq, PTL_EVENT_PUT_START);
        ptl_event_t e = EXPECT(eq, PTL_EVENT_PUT_END);
        CHECK(s.link == e.link);
        CHECK(e.initiator.nid == ids[left].nid && e.initiator.pid == ids[left].pid);
        CHECK_EQ(e.hdr_data, i);                              /* in order per pair */
        CHECK_EQ(e.offset, 64 * (left % 64));
        CHECK_EQ(e.uid, getuid());
    }
    snprintf(msg, sizeof msg, "from %d iteration %d", left, iters - 1);
    CHECK(!strcmp(ring + 64 * (left % 64), msg));
    expect_empty(eq);
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);

    /* Gets from the left neighbour's ring memory, answered without it. */
    char got[64];
    ptl_handle_md_t gmd = bind_md(got, sizeof got, ieq);
    PCHECK(PtlGet(gmd, ids[left], PT_RING, 0, 0, 64 * (((left + n - 1) % n) % 64)));
    EXPECT(ieq, PTL_EVENT_REPLY_START);
    ptl_event_t re = EXPECT(ieq, PTL_EVENT_REPLY_END);
    CHECK_EQ(re.mlength, 64);
    snprintf(msg, sizeof msg, "from %d iteration %d", (left + n - 1) % n, iters - 1);
    CHECK(!strcmp(got, msg));
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    EXPECT(eq, PTL_EVENT_GET_START);
    ptl_event_t ge = EXPECT(eq, PTL_EVENT_GET_END);
    CHECK(ge.initiator.nid == ids[right].nid && ge.initiator.pid == ids[right].pid);

    /* Ping-pong between ranks 2k and 2k+1; the waiting side sleeps in PtlEQWait. */
    int peer = rank ^ 1;
    if (peer < n) {
        uint64_t v;
        ptl_handle_md_t vmd = bind_md(&v, 8, PTL_EQ_NONE);
        for (int i = 0; i < iters; i++) {
            if ((rank & 1) == 0) {
                v = 2 * (uint64_t)i;
                PCHECK(PtlPut(vmd, PTL_NO_ACK_REQ, ids[peer], PT_PING, 0, 0, 0, 0));
            }
            EXPECT(eq, PTL_EVENT_PUT_START);
            ptl_event_t e = EXPECT(eq, PTL_EVENT_PUT_END);
            CHECK_EQ(e.mlength, 8);
            CHECK_EQ(ping[0], 2 * (uint64_t)i + (rank & 1 ? 0 : 1));
            if (rank & 1) {
                v = ping[0] + 1;
                PCHECK(PtlPut(vmd, PTL_NO_ACK_REQ, ids[peer], PT_PING, 0, 0, 0, 0));
            }
        }
        PCHECK(PtlMDUnlink(vmd));
    }
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);

    /* Rank 0 spins on its own memory while rank 1 writes it; rank 1 sleeps while rank 0
     * reads its memory.  Neither target calls Portals meanwhile. */
    if (n > 1 && rank < 2) {
        if (rank == 0) {
            long spins = 0;
            while (__atomic_load_n(&spin_word, __ATOMIC_ACQUIRE) != 0x5151)
                if (++spins > 20000000000L) SN_FAIL("the put never landed");
            printf("ptl_ring: spinning rank received\n");
            CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
            uint64_t r = 0;
            ptl_handle_md_t rmd = bind_md(&r, 8, ieq);
            PCHECK(PtlGet(rmd, ids[1], PT_SPIN, 0, 0, 0));
            EXPECT(ieq, PTL_EVENT_REPLY_START);
            EXPECT(ieq, PTL_EVENT_REPLY_END);
            CHECK_EQ(r, 0x6262);
            PCHECK(PtlMDUnlink(rmd));
        } else {
            spin_word = 0x6262;
            uint64_t w = 0x5151;
            ptl_handle_md_t wmd = bind_md(&w, 8, PTL_EQ_NONE);
            usleep(20000);
            PCHECK(PtlPut(wmd, PTL_NO_ACK_REQ, ids[0], PT_SPIN, 0, 0, 0, 0));
            PCHECK(PtlMDUnlink(wmd));
            CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
            usleep(200000);                                   /* asleep while rank 0 reads */
        }
    } else if (n > 1) {
        CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    }
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);

    /* Access control: cookie 1 admits only the left neighbour.  The right neighbour's
     * attempt (when it is another rank) is dropped, silently, and counted. */
    ptl_sr_value_t drops = status_reg(ni, PTL_SR_DROP_COUNT);
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    char a1[8] = "admit", a2[8] = "deny";
    ptl_handle_md_t amd = bind_md(a1, 8, ieq), dmd = bind_md(a2, 8, ieq);
    put_acked(amd, ids[right], PT_ACL, 1, 0, 0, 8);           /* I am right's left */
    int denied = n > 2;
    if (denied) {
        PCHECK(PtlPut(dmd, PTL_ACK_REQ, ids[left], PT_ACL, 1, 0, 8, 0)); /* I am not left's left */
        EXPECT(ieq, PTL_EVENT_SEND_START);
        EXPECT(ieq, PTL_EVENT_SEND_END);
        expect_empty(ieq);                                    /* no ack, no error */
    }
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    CHECK_EQ(status_reg(ni, PTL_SR_DROP_COUNT), drops + denied);
    EXPECT(eq, PTL_EVENT_PUT_START);
    EXPECT(eq, PTL_EVENT_PUT_END);
    expect_empty(eq);
    CHECK(!strcmp(acl, "admit") && acl[8] == 0);
    PCHECK(PtlMDUnlink(amd));
    PCHECK(PtlMDUnlink(dmd));
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);

    /* 1 MiB: put into the right neighbour's first half, get the left's second half. */
    char *out = malloc(BIG), *in = malloc(BIG);
    for (int i = 0; i < BIG; i++) out[i] = (char)(i * 3 + rank);
    ptl_handle_md_t omd = bind_md(out, BIG, ieq), imd = bind_md(in, BIG, ieq);
    put_acked(omd, ids[right], PT_BIG, 0, 0, 77, BIG);
    PCHECK(PtlGet(imd, ids[left], PT_BIG, 0, 0, BIG));
    EXPECT(ieq, PTL_EVENT_REPLY_START);
    re = EXPECT(ieq, PTL_EVENT_REPLY_END);
    CHECK_EQ(re.mlength, BIG);
    for (int i = 0; i < BIG; i++)
        if (in[i] != (char)(i * 7 + left)) SN_FAIL("get byte %d is %d", i, in[i]);
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    for (int i = 0; i < BIG; i++)
        if (big[i] != (char)(i * 3 + left)) SN_FAIL("put byte %d is %d", i, big[i]);
    /* The left neighbour's put and the right one's get, in either order. */
    int seen[PTL_EVENT_UNLINK + 1] = {0};
    for (int k = 0; k < 4; k++) {
        ptl_event_t e;
        PCHECK(PtlEQWait(eq, &e));
        seen[e.type]++;
        CHECK_EQ(e.mlength, BIG);
        if (e.type == PTL_EVENT_PUT_END) CHECK(e.hdr_data == 77 && e.initiator.pid == ids[left].pid && e.initiator.nid == ids[left].nid);
        if (e.type == PTL_EVENT_GET_END) CHECK(e.initiator.pid == ids[right].pid && e.initiator.nid == ids[right].nid && e.offset == BIG);
    }
    CHECK(seen[PTL_EVENT_PUT_START] == 1 && seen[PTL_EVENT_PUT_END] == 1 && seen[PTL_EVENT_GET_START] == 1 && seen[PTL_EVENT_GET_END] == 1);
    expect_empty(eq);
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);

    /* Iovecs on both sides: a put of MID+150 bytes from 50 bytes into the right
     * neighbour's three pieces, read back with a get into two local pieces. */
    size_t ilen = MID + 150;
    char *isrc = malloc(ilen), *i1 = malloc(1000), *i2 = malloc(ilen - 1000);
    for (size_t i = 0; i < ilen; i++) isrc[i] = (char)(i * 11 + rank);
    ptl_handle_md_t ismd = bind_md(isrc, ilen, ieq), idmd;
    ptl_md_iovec_t liov[2] = {{i1, 1000}, {i2, ilen - 1000}};
    PCHECK(PtlMDBind(ni, md_of(liov, 2, PTL_MD_THRESH_INF, PTL_MD_IOVEC, ieq), PTL_RETAIN, &idmd));
    put_acked(ismd, ids[right], PT_IOV, 0, 50, 5, ilen);
    PCHECK(PtlGet(idmd, ids[right], PT_IOV, 0, 0, 50));
    EXPECT(ieq, PTL_EVENT_REPLY_START);
    re = EXPECT(ieq, PTL_EVENT_REPLY_END);
    CHECK_EQ(re.mlength, ilen);
    for (size_t i = 0; i < ilen; i++) {
        char got_c = i < 1000 ? i1[i] : i2[i - 1000];
        if (got_c != (char)(i * 11 + rank)) SN_FAIL("iovec byte %zu", i);
    }
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    CHECK(ia[49] == 0 && ia[50] == (char)left);
    CHECK(ib[0] == (char)(50 * 11 + left) && ib[MID - 1] == (char)((size_t)(MID + 49) * 11 + left));
    CHECK(ic[0] == (char)((size_t)(MID + 50) * 11 + left) && ic[99] == (char)((size_t)(MID + 149) * 11 + left));
    CHECK_EQ(drain(eq), 4);                                   /* PUT_START/END, GET_START/END */
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);

    PCHECK(PtlNIFini(ni));
    PtlFini();
    printf("ptl_ring: rank %d of %d ok\n", rank, n);
    CHECK_EQ(PMI_Finalize(), PMI_SUCCESS);
    return 0;
}
