/* Bad input: calls before PtlInit and after PtlFini, NULL pointers, invalid, stale,
 * foreign-kind and previous-NI handles, unknown option bits and enumerator values,
 * MDs over unmapped, read-only, overflowing or oversized memory, indexes and regions
 * out of range, wildcard and unknown targets, every limit reached, calls in the wrong
 * state.  Each gets its documented code (portals3.h's top comment) and leaves
 * everything as it was: counters, lists and buffers are checked after the failures.
 * Prints "ptl_badinput: ok". */
#include "ptest.h"
#include <sys/mman.h>
#include <unistd.h>

static ptl_handle_ni_t ni;
static ptl_process_id_t me;
static ptl_handle_eq_t eq;

static void before_init(void)
{
    ptl_handle_ni_t h;
    ptl_event_t ev;
    ptl_process_id_t id;
    ptl_md_t md = md_of(NULL, 0, 0, 0, PTL_EQ_NONE);
    PCHECK_RC(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &h), PTL_NO_INIT);
    PCHECK_RC(PtlNIFini(1), PTL_NO_INIT);
    PCHECK_RC(PtlGetId(1, &id), PTL_NO_INIT);
    PCHECK_RC(PtlEQGet(1, &ev), PTL_NO_INIT);
    PCHECK_RC(PtlEQWait(1, &ev), PTL_NO_INIT);
    PCHECK_RC(PtlMDBind(1, md, PTL_RETAIN, &h), PTL_NO_INIT);
    PCHECK_RC(PtlPut(1, PTL_ACK_REQ, id, 0, 0, 0, 0, 0), PTL_NO_INIT);
    PCHECK_RC(PtlMEUnlink(1), PTL_NO_INIT);
    PCHECK_RC(PtlNIHandle(1, &h), PTL_NO_INIT);
    PCHECK_RC(PtlEQPoll(&h, 1, 0, &ev, (int *)&id), PTL_NO_INIT);
    /* The runtime works before PtlInit: kept for the next NI (p3rt.h). */
    PCHECK_RC(PtlSetRank(1, 0, 0), PTL_FAIL);
    PCHECK_RC(PtlSetNIDMap(PTL_INVALID_HANDLE, NULL, 1), PTL_SEGV);
    unsigned r, s;
    PCHECK_RC(PtlGetRank(PTL_INVALID_HANDLE, NULL, &s), PTL_SEGV);
    PCHECK(PtlSetRank(PTL_INVALID_HANDLE, (unsigned)-1, (unsigned)-1));
    PCHECK(PtlGetRank(PTL_INVALID_HANDLE, &r, &s));
    CHECK(r < s);
    PCHECK_RC(PtlProgress(1, 0), PTL_NO_INIT);
    PCHECK_RC(PtlInit(NULL), PTL_SEGV);
    PtlFini();                                                /* before PtlInit: harmless */
}

static void null_pointers(void)
{
    ptl_handle_me_t m;
    ptl_handle_md_t d;
    ptl_pt_index_t pt;
    ptl_event_t ev;
    int which;
    PCHECK_RC(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, NULL), PTL_SEGV);
    PCHECK_RC(PtlGetId(ni, NULL), PTL_SEGV);
    PCHECK_RC(PtlGetUid(ni, NULL), PTL_SEGV);
    PCHECK_RC(PtlGetJid(ni, NULL), PTL_SEGV);
    PCHECK_RC(PtlNIStatus(ni, PTL_SR_DROP_COUNT, NULL), PTL_SEGV);
    PCHECK_RC(PtlNIDist(ni, me, NULL), PTL_SEGV);
    PCHECK_RC(PtlNIHandle(ni, NULL), PTL_SEGV);
    PCHECK_RC(PtlMEAttach(ni, 0, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, NULL), PTL_SEGV);
    PCHECK_RC(PtlMEAttachAny(ni, NULL, ANY_ID, 0, 0, PTL_RETAIN, &m), PTL_SEGV);
    PCHECK_RC(PtlMEAttachAny(ni, &pt, ANY_ID, 0, 0, PTL_RETAIN, NULL), PTL_SEGV);
    CHECK_EQ(status_reg(ni, PTL_SR_MES_CUR), 0);              /* nothing was made */
    PCHECK(PtlMEAttach(ni, 0, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m));
    PCHECK_RC(PtlMEInsert(m, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, NULL), PTL_SEGV);
    PCHECK_RC(PtlMDBind(ni, md_of(NULL, 0, 1, 0, PTL_EQ_NONE), PTL_RETAIN, NULL), PTL_SEGV);
    PCHECK_RC(PtlEQAlloc(ni, 8, PTL_EQ_HANDLER_NONE, NULL), PTL_SEGV);
    PCHECK_RC(PtlEQGet(eq, NULL), PTL_SEGV);
    PCHECK_RC(PtlEQWait(eq, NULL), PTL_SEGV);
    PCHECK_RC(PtlEQWait_timeout(eq, NULL), PTL_SEGV);
    PCHECK_RC(PtlEQPoll(NULL, 1, 0, &ev, &which), PTL_SEGV);
    PCHECK_RC(PtlEQPoll(&eq, 1, 0, NULL, &which), PTL_SEGV);
    PCHECK_RC(PtlEQPoll(&eq, 1, 0, &ev, NULL), PTL_SEGV);
    PCHECK_RC(PtlMEMDPost(ni, m, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, md_of(NULL, 0, 1, 0, PTL_EQ_NONE), PTL_RETAIN, NULL, &d, PTL_EQ_NONE), PTL_SEGV);
    CHECK_EQ(status_reg(ni, PTL_SR_MES_CUR), 1);
    CHECK_EQ(status_reg(ni, PTL_SR_MDS_CUR), 0);
    PCHECK(PtlMDAttach(m, md_of(NULL, 0, 1, 0, PTL_EQ_NONE), PTL_RETAIN, NULL)); /* NULL handle: allowed */
    PCHECK(PtlMEUnlink(m));
    unsigned r, s;
    PCHECK_RC(PtlGetRank(ni, NULL, &s), PTL_SEGV);
    PCHECK_RC(PtlGetRank(ni, &r, NULL), PTL_SEGV);
    PCHECK_RC(PtlGetRankId(ni, 0, NULL), PTL_SEGV);
    PCHECK(PtlGetRank(ni, &r, &s));
    PCHECK_RC(PtlGetNIDMap(ni, NULL, s), PTL_SEGV);
    PCHECK_RC(PtlSetPIDMap(ni, NULL, s), PTL_SEGV);
}

static void bad_handles(void)
{
    static char buf[16];
    ptl_handle_me_t m, m2;
    ptl_handle_md_t d, b;
    ptl_handle_eq_t q;
    ptl_event_t ev;
    ptl_md_t md;
    ptl_handle_ni_t h;
    uint32_t garbage[] = {0, PTL_INVALID_HANDLE, PTL_HANDLE_NONE, PTL_EQ_NONE, 0x12345678, 0x3fffffff, 0x8000fffe};
    for (unsigned i = 0; i < sizeof garbage / sizeof *garbage; i++) {
        uint32_t g = garbage[i];
        PCHECK_RC(PtlNIFini(g), PTL_NI_INVALID);
        PCHECK_RC(PtlMEUnlink(g), PTL_ME_INVALID);
        PCHECK_RC(PtlMEInsert(g, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m), PTL_ME_INVALID);
        PCHECK_RC(PtlMDAttach(g, md_of(buf, 16, 1, PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, &d), PTL_ME_INVALID);
        PCHECK_RC(PtlMDUnlink(g), PTL_MD_INVALID);
        PCHECK_RC(PtlMDUpdate(g, &md, NULL, PTL_EQ_NONE), PTL_MD_INVALID);
        PCHECK_RC(PtlEQFree(g), PTL_EQ_INVALID);
        PCHECK_RC(PtlEQGet(g, &ev), PTL_EQ_INVALID);
        PCHECK_RC(PtlEQWait(g, &ev), PTL_EQ_INVALID);
        PCHECK_RC(PtlPut(g, PTL_NO_ACK_REQ, me, 0, 0, 0, 0, 0), PTL_MD_INVALID);
        PCHECK_RC(PtlGet(g, me, 0, 0, 0, 0), PTL_MD_INVALID);
        PCHECK_RC(PtlNIHandle(g, &h), PTL_HANDLE_INVALID);
        PCHECK_RC(PtlMEDump(g), PTL_ME_INVALID);
        CHECK_EQ(PtlNIDebug(g, PTL_DBG_ALL), PTL_DBG_NONE);
        CHECK(!strcmp(PtlNIFailStr(g, PTL_NI_OK), "PTL_NI_UNKNOWN_ERROR"));
    }
    /* A handle of another kind. */
    PCHECK(PtlMEAttach(ni, 1, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m));
    PCHECK(PtlMDBind(ni, md_of(buf, 16, 1, 0, eq), PTL_RETAIN, &b));
    PCHECK_RC(PtlMDUnlink(m), PTL_MD_INVALID);
    PCHECK_RC(PtlMEUnlink(b), PTL_ME_INVALID);
    PCHECK_RC(PtlEQFree(b), PTL_EQ_INVALID);
    PCHECK_RC(PtlPut(eq, PTL_NO_ACK_REQ, me, 0, 0, 0, 0, 0), PTL_MD_INVALID);
    PCHECK_RC(PtlMDAttach(ni, md_of(buf, 16, 1, 0, PTL_EQ_NONE), PTL_RETAIN, &d), PTL_ME_INVALID);
    PCHECK_RC(PtlMDBind(m, md_of(buf, 16, 1, 0, PTL_EQ_NONE), PTL_RETAIN, &d), PTL_NI_INVALID);
    PCHECK_RC(PtlEQAlloc(eq, 4, PTL_EQ_HANDLER_NONE, &q), PTL_NI_INVALID);
    PCHECK_RC(PtlMDUpdate(b, &md, NULL, m), PTL_EQ_INVALID);
    PCHECK_RC(PtlMDBind(ni, md_of(buf, 16, 1, 0, m), PTL_RETAIN, &d), PTL_EQ_INVALID);
    /* Stale handles: unlinked, freed, reused rows. */
    PCHECK(PtlMEInsert(m, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m2));
    PCHECK(PtlMEUnlink(m));
    PCHECK_RC(PtlMEUnlink(m), PTL_ME_INVALID);
    PCHECK_RC(PtlMEInsert(m, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m), PTL_ME_INVALID);
    ptl_handle_me_t m3;
    PCHECK(PtlMEAttach(ni, 1, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m3)); /* reuses the row */
    CHECK(m3 != m);
    PCHECK_RC(PtlMEUnlink(m), PTL_ME_INVALID);
    PCHECK(PtlMDUnlink(b));
    PCHECK_RC(PtlPut(b, PTL_NO_ACK_REQ, me, 1, 0, 0, 0, 0), PTL_MD_INVALID);
    PCHECK(PtlEQAlloc(ni, 4, PTL_EQ_HANDLER_NONE, &q));
    PCHECK(PtlEQFree(q));
    PCHECK_RC(PtlEQFree(q), PTL_EQ_INVALID);
    PCHECK_RC(PtlEQGet(q, &ev), PTL_EQ_INVALID);
    PCHECK_RC(PtlMDBind(ni, md_of(buf, 16, 1, 0, q), PTL_RETAIN, &d), PTL_EQ_INVALID);
    PCHECK(PtlMEUnlink(m2));
    PCHECK(PtlMEUnlink(m3));
    CHECK_EQ(status_reg(ni, PTL_SR_MES_CUR), 0);
    CHECK_EQ(status_reg(ni, PTL_SR_MDS_CUR), 0);
}

static void bad_values(void)
{
    static char buf[64];
    ptl_handle_me_t m;
    ptl_handle_md_t d, b;
    ptl_md_t md;
    PCHECK_RC(PtlMEAttach(ni, 1, ANY_ID, 0, 0, 7, PTL_INS_AFTER, &m), PTL_ME_INVALID);
    PCHECK_RC(PtlMEAttach(ni, 1, ANY_ID, 0, 0, PTL_RETAIN, 9, &m), PTL_ME_INVALID);
    PCHECK_RC(PtlMEAttach(ni, 256, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m), PTL_PT_INDEX_INVALID);
    PCHECK_RC(PtlMEAttach(ni, PTL_PT_INDEX_ANY, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m), PTL_PT_INDEX_INVALID);
    PCHECK(PtlMEAttach(ni, 1, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m));
    PCHECK_RC(PtlMEInsert(m, ANY_ID, 0, 0, 3, PTL_INS_AFTER, &b), PTL_ME_INVALID);
    /* MD values: option bits, threshold, unlink, NULL start, overflow, iovecs, queue. */
    PCHECK_RC(PtlMDAttach(m, md_of(buf, 64, 1, 0x200 | PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, &d), PTL_MD_ILLEGAL);
    PCHECK_RC(PtlMDAttach(m, md_of(buf, 64, -2, PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, &d), PTL_MD_ILLEGAL);
    PCHECK_RC(PtlMDAttach(m, md_of(buf, 64, 1, PTL_MD_OP_PUT, PTL_EQ_NONE), 2, &d), PTL_MD_ILLEGAL);
    PCHECK_RC(PtlMDAttachNoFit(m, md_of(buf, 64, 1, PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, 5, &d), PTL_MD_ILLEGAL);
    PCHECK_RC(PtlMDAttach(m, md_of(NULL, 64, 1, PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, &d), PTL_MD_ILLEGAL);
    PCHECK_RC(PtlMDAttach(m, md_of((void *)-16L, 64, 1, PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, &d), PTL_MD_ILLEGAL);
    PCHECK_RC(PtlMDBind(ni, md_of(buf, UINT64_MAX, 1, 0, PTL_EQ_NONE), PTL_RETAIN, &d), PTL_MD_ILLEGAL);
    PCHECK_RC(PtlMDBind(ni, md_of(buf, 64, 1, 0, 0x12345), PTL_RETAIN, &d), PTL_EQ_INVALID);
    PCHECK_RC(PtlMDBind(ni, md_of(buf, 64, 1, 0, PTL_EQ_NONE), 9, &d), PTL_MD_ILLEGAL);
    ptl_md_iovec_t iov[300];
    for (int i = 0; i < 300; i++) { iov[i].iov_base = buf; iov[i].iov_len = 1; }
    PCHECK_RC(PtlMDBind(ni, md_of(iov, 300, 1, PTL_MD_IOVEC, PTL_EQ_NONE), PTL_RETAIN, &d), PTL_MD_ILLEGAL);
    PCHECK_RC(PtlMDBind(ni, md_of(NULL, 2, 1, PTL_MD_IOVEC, PTL_EQ_NONE), PTL_RETAIN, &d), PTL_MD_ILLEGAL);
    iov[1].iov_base = NULL;
    PCHECK_RC(PtlMDBind(ni, md_of(iov, 2, 1, PTL_MD_IOVEC, PTL_EQ_NONE), PTL_RETAIN, &d), PTL_MD_ILLEGAL);
    /* Unmapped and read-only memory. */
    long ps = sysconf(_SC_PAGESIZE);
    char *none = mmap(NULL, 2 * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *ro = mmap(NULL, ps, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(none != MAP_FAILED && ro != MAP_FAILED);
    PCHECK_RC(PtlMDBind(ni, md_of(none, 64, 1, 0, PTL_EQ_NONE), PTL_RETAIN, &d), PTL_MD_ILLEGAL);
    PCHECK_RC(PtlMDAttach(m, md_of(none + ps, 8, 1, PTL_MD_OP_GET, PTL_EQ_NONE), PTL_RETAIN, &d), PTL_MD_ILLEGAL);
    PCHECK_RC(PtlMDAttach(m, md_of(ro, 64, 1, PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, &d), PTL_MD_ILLEGAL);
    iov[0].iov_base = buf; iov[1].iov_base = none;
    PCHECK_RC(PtlMDBind(ni, md_of(iov, 2, 1, PTL_MD_IOVEC, PTL_EQ_NONE), PTL_RETAIN, &d), PTL_MD_ILLEGAL);
    PCHECK_RC(PtlMDBind(ni, md_of(none, 2, 1, PTL_MD_IOVEC, PTL_EQ_NONE), PTL_RETAIN, &d), PTL_MD_ILLEGAL);
    CHECK_EQ(status_reg(ni, PTL_SR_MDS_CUR), 0);              /* none of that made an MD */
    /* Read-only memory can be a get target and a put source, not a get sink. */
    PCHECK(PtlMDAttach(m, md_of(ro, 64, PTL_MD_THRESH_INF, PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, PTL_EQ_NONE), PTL_RETAIN, &d));
    ptl_handle_md_t rob;
    PCHECK(PtlMDBind(ni, md_of(ro, 16, 1, 0, PTL_EQ_NONE), PTL_RETAIN, &rob));
    PCHECK_RC(PtlGet(rob, me, 1, 0, 0, 0), PTL_MD_ILLEGAL);
    /* A failed MDUpdate leaves the MD as it was. */
    ptl_md_t bad = md_of(ro, 64, 3, PTL_MD_OP_PUT, PTL_EQ_NONE);   /* puts into read-only */
    PCHECK_RC(PtlMDUpdate(d, &md, &bad, PTL_EQ_NONE), PTL_MD_ILLEGAL);
    PCHECK(PtlMDUpdate(d, &md, NULL, PTL_EQ_NONE));
    CHECK(md.start == ro && md.threshold == PTL_MD_THRESH_INF && md.options == (PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE));
    PCHECK(PtlMDUnlink(rob));
    PCHECK(PtlMEUnlink(m));
    munmap(none, 2 * ps);
    munmap(ro, ps);
    /* Operations: ack request values, wildcard and unknown targets, regions. */
    PCHECK(PtlMDBind(ni, md_of(buf, 64, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN, &b));
    PCHECK_RC(PtlPut(b, 5, me, 1, 0, 0, 0, 0), PTL_FAIL);
    ptl_process_id_t wild = me;
    wild.pid = PTL_PID_ANY;
    PCHECK_RC(PtlPut(b, PTL_NO_ACK_REQ, wild, 1, 0, 0, 0, 0), PTL_PROCESS_INVALID);
    PCHECK_RC(PtlGet(b, ANY_ID, 1, 0, 0, 0), PTL_PROCESS_INVALID);
    ptl_process_id_t far = me;
    far.nid = me.nid + 1000;
    PCHECK_RC(PtlPut(b, PTL_NO_ACK_REQ, far, 1, 0, 0, 0, 0), PTL_PROCESS_INVALID);
    unsigned long dist;
    PCHECK_RC(PtlNIDist(ni, far, &dist), PTL_PROCESS_INVALID);
    PCHECK_RC(PtlPutRegion(b, 60, 5, PTL_NO_ACK_REQ, me, 1, 0, 0, 0, 0), PTL_MD_ILLEGAL);
    PCHECK_RC(PtlPutRegion(b, UINT64_MAX, 2, PTL_NO_ACK_REQ, me, 1, 0, 0, 0, 0), PTL_MD_ILLEGAL);
    PCHECK_RC(PtlGetRegion(b, 0, 65, me, 1, 0, 0, 0), PTL_MD_ILLEGAL);
    CHECK_EQ(drain(eq), 0);                                    /* none of those started */
    /* A process id nobody has on this node: the put fails asynchronously. */
    ptl_process_id_t ghost = me;
    ghost.pid = me.pid + 777;
    PCHECK(PtlPut(b, PTL_ACK_REQ, ghost, 1, 0, 0, 0, 0));
    EXPECT(eq, PTL_EVENT_SEND_START);
    ptl_event_t e = expect_ev(eq, PTL_EVENT_SEND_END, PTL_NI_FAIL);
    CHECK_EQ(e.mlength, 64);
    expect_empty(eq);
    PCHECK(PtlGet(b, ghost, 1, 0, 0, 0));
    EXPECT(eq, PTL_EVENT_REPLY_START);
    e = expect_ev(eq, PTL_EVENT_REPLY_END, PTL_NI_FAIL);
    CHECK_EQ(e.mlength, 0);
    PCHECK(PtlMDUnlink(b));
    /* Access control, status registers, runtime. */
    PCHECK_RC(PtlACEntry(ni, 64, ANY_ID, PTL_UID_ANY, PTL_JID_ANY, 0), PTL_AC_INDEX_INVALID);
    PCHECK_RC(PtlACEntry(ni, 1, ANY_ID, PTL_UID_ANY, PTL_JID_ANY, 256), PTL_PT_INDEX_INVALID);
    PCHECK_RC(PtlACEntry(ni, 1, far, PTL_UID_ANY, PTL_JID_ANY, 0), PTL_PROCESS_INVALID);
    ptl_sr_value_t v;
    PCHECK_RC(PtlNIStatus(ni, 9999, &v), PTL_SR_INDEX_INVALID);
    PCHECK_RC(PtlNIStatus(ni + 1, PTL_SR_DROP_COUNT, &v), PTL_NI_INVALID);
    ptl_process_id_t id;
    unsigned r, s, my_rank;
    PCHECK(PtlGetRank(ni, &r, &s));
    my_rank = r;
    PCHECK_RC(PtlGetRankId(ni, s, &id), PTL_FAIL);
    ptl_nid_t map[4];
    PCHECK_RC(PtlGetNIDMap(ni, map, s + 1), PTL_FAIL);
    PCHECK_RC(PtlSetRank(ni, 3, 2), PTL_FAIL);
    PCHECK_RC(PtlSetRank(ni, 0, 0), PTL_FAIL);
    PCHECK_RC(PtlSetJID(5), PTL_FAIL);                        /* an NI is up */
    PCHECK(PtlSetRank(ni, 1, 2));                             /* the program's own numbering */
    PCHECK_RC(PtlGetRankId(ni, 0, &id), PTL_FAIL);            /* no maps yet */
    PCHECK_RC(PtlSetNIDMap(ni, map, 3), PTL_FAIL);
    map[0] = 7; map[1] = 8;
    PCHECK(PtlSetNIDMap(ni, map, 2));
    PCHECK(PtlSetPIDMap(ni, map, 2));
    PCHECK(PtlGetRankId(ni, 1, &id));
    CHECK(id.nid == 8 && id.pid == 8);
    PCHECK(PtlSetRank(ni, (unsigned)-1, (unsigned)-1));       /* back to the launcher's */
    PCHECK(PtlGetRank(ni, &r, &s));
    CHECK_EQ(r, my_rank);
    PCHECK_RC(PtlGetRank(ni + 1, &r, &s), PTL_NI_INVALID);   /* another handle, an NI up */
    PCHECK_RC(PtlSetRank(ni + 1, 0, 1), PTL_NI_INVALID);
    PCHECK(PtlGetRank(PTL_INVALID_HANDLE, &r, &s));           /* the NI's runtime */
    CHECK_EQ(r, my_rank);
    CHECK_EQ(PtlEQAlloc(ni, 0, PTL_EQ_HANDLER_NONE, &b), PTL_NO_SPACE);
    CHECK_EQ(PtlEQAlloc(ni, 1ULL << 40, PTL_EQ_HANDLER_NONE, &b), PTL_NO_SPACE);
    PCHECK_RC(PtlEQPoll(&eq, 0, 0, &e, (int *)&r), PTL_EQ_INVALID);
    PCHECK_RC(PtlEQPoll(&eq, -3, 0, &e, (int *)&r), PTL_EQ_INVALID);
}

/* Limits: a small NI runs out of MEs, MDs, EQs, portals and list length. */
static void limits(void)
{
    ptl_handle_me_t old_me;
    PCHECK(PtlMEAttach(ni, 0, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &old_me));
    PCHECK(PtlNIFini(ni));
    ptl_handle_ni_t old = ni;
    ptl_ni_limits_t want, got;
    memset(&want, 0, sizeof want);
    want.max_mes = 3; want.max_mds = 2; want.max_eqs = 2; want.max_pt_index = 1; want.max_me_list = 2;
    want.max_ac_index = -5;                                    /* negative: the default */
    PCHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, &want, &got, &ni));
    CHECK(ni != old);
    CHECK(got.max_mes == 3 && got.max_mds == 2 && got.max_eqs == 2 && got.max_pt_index == 1 && got.max_me_list == 2 && got.max_ac_index == 63);
    ptl_process_id_t id;
    PCHECK_RC(PtlGetId(old, &id), PTL_NI_INVALID);            /* the previous NI's handle */
    ptl_handle_me_t m[4];
    ptl_handle_eq_t q[3];
    ptl_pt_index_t pt;
    PCHECK_RC(PtlMEUnlink(old_me), PTL_ME_INVALID);           /* an object of the previous NI */
    PCHECK_RC(PtlMEInsert(old_me, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m[0]), PTL_ME_INVALID);
    PCHECK(PtlMEAttach(ni, 0, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m[0]));
    PCHECK(PtlMEAttach(ni, 0, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m[1]));
    PCHECK_RC(PtlMEAttach(ni, 0, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m[2]), PTL_ME_LIST_TOO_LONG);
    PCHECK_RC(PtlMEInsert(m[0], ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m[2]), PTL_ME_LIST_TOO_LONG);
    PCHECK(PtlMEAttachAny(ni, &pt, ANY_ID, 0, 0, PTL_RETAIN, &m[2]));
    CHECK_EQ(pt, 1);
    PCHECK_RC(PtlMEAttachAny(ni, &pt, ANY_ID, 0, 0, PTL_RETAIN, &m[3]), PTL_PT_FULL);
    PCHECK(PtlMEUnlink(m[1]));
    PCHECK(PtlMEAttach(ni, 0, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m[1]));
    PCHECK_RC(PtlMEAttach(ni, 1, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m[3]), PTL_NO_SPACE);
    static char buf[8];
    ptl_handle_md_t d[3];
    PCHECK(PtlMDAttach(m[0], md_of(buf, 8, 1, PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, &d[0]));
    PCHECK(PtlMDBind(ni, md_of(buf, 8, 1, 0, PTL_EQ_NONE), PTL_RETAIN, &d[1]));
    PCHECK_RC(PtlMDAttach(m[1], md_of(buf, 8, 1, PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, &d[2]), PTL_NO_SPACE);
    PCHECK_RC(PtlMDBind(ni, md_of(buf, 8, 1, 0, PTL_EQ_NONE), PTL_RETAIN, &d[2]), PTL_NO_SPACE);
    PCHECK(PtlEQAlloc(ni, 4, PTL_EQ_HANDLER_NONE, &q[0]));
    PCHECK(PtlEQAlloc(ni, 4, PTL_EQ_HANDLER_NONE, &q[1]));
    PCHECK_RC(PtlEQAlloc(ni, 4, PTL_EQ_HANDLER_NONE, &q[2]), PTL_NO_SPACE);
    CHECK_EQ(status_reg(ni, PTL_SR_MES_CUR), 3);
    CHECK_EQ(status_reg(ni, PTL_SR_MDS_CUR), 2);
    CHECK_EQ(status_reg(ni, PTL_SR_EQS_CUR), 2);
    /* Wrong state. */
    PCHECK_RC(PtlMDAttach(m[0], md_of(buf, 8, 1, PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, &d[2]), PTL_ME_IN_USE);
    PCHECK(PtlMDUnlink(d[1]));
    PCHECK_RC(PtlMDUnlink(d[1]), PTL_MD_INVALID);
    PCHECK(PtlNIFini(ni));
    PCHECK_RC(PtlNIFini(ni), PTL_NI_INVALID);
    PCHECK_RC(PtlMEUnlink(m[0]), PTL_ME_INVALID);
    PCHECK_RC(PtlEQFree(q[0]), PTL_EQ_INVALID);
    PCHECK(PtlSetJID(12345));                                 /* no NI now: taken at the next */
    PCHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    ptl_jid_t jid;
    PCHECK(PtlGetJid(ni, &jid));
    CHECK_EQ(jid, 12345);
    PCHECK(PtlNIFini(ni));
}

int main(void)
{
    sntest_rank = 0;
    before_init();
    int maxif;
    PCHECK(PtlInit(&maxif));
    PCHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    PCHECK(PtlGetId(ni, &me));
    PCHECK(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    null_pointers();
    bad_handles();
    bad_values();
    CHECK_EQ(status_reg(ni, PTL_SR_MES_CUR), 0);
    limits();
    PtlFini();
    ptl_process_id_t id;
    PCHECK_RC(PtlGetId(ni, &id), PTL_NO_INIT);
    PCHECK_RC(PtlEQAlloc(ni, 4, PTL_EQ_HANDLER_NONE, &eq), PTL_NO_INIT);
    printf("ptl_badinput: ok\n");
    return 0;
}
