/* One process talking to itself: every call of portals3.h, and each behaviour of the
 * digest's section 9 that one process can show (the match-list walk, unlink_nofit,
 * offsets and truncation, thresholds and auto-unlink timing, the ack rules, event
 * pairs and where they land, EQ drops and PTL_EQ_EMPTY under PtlEQWait, PtlMDUpdate,
 * access control).  Prints "ptl_basic: ok". */
#include "ptest.h"
#include <pthread.h>
#include <unistd.h>

#define PT 4
static ptl_handle_ni_t ni;
static ptl_process_id_t me;
static ptl_handle_eq_t eq_t, eq_i;   /* target side, initiator side */

/* A bound MD over `buf` for sending/receiving, logging to eq_i. */
static ptl_handle_md_t bind(void *buf, ptl_size_t len)
{
    ptl_handle_md_t h;
    PCHECK(PtlMDBind(ni, md_of(buf, len, PTL_MD_THRESH_INF, 0, eq_i), PTL_RETAIN, &h));
    return h;
}

/* An ME + MD on portal PT matching `bits`. */
static ptl_handle_me_t post(ptl_match_bits_t bits, void *buf, ptl_size_t len, int thr, unsigned opts, ptl_unlink_t unlink_op, ptl_handle_md_t *mdh)
{
    ptl_handle_me_t m;
    PCHECK(PtlMEAttach(ni, PT, ANY_ID, bits, 0, PTL_UNLINK, PTL_INS_AFTER, &m));
    PCHECK(PtlMDAttach(m, md_of(buf, len, thr, opts, eq_t), unlink_op, mdh));
    return m;
}

static void init_section(void)
{
    int maxif = 0;
    PCHECK_RC(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni), PTL_NO_INIT);
    PCHECK(PtlInit(&maxif));
    CHECK_EQ(maxif, 1);
    PCHECK(PtlInit(&maxif));                                  /* repeatable */
    PCHECK_RC(PtlInit(NULL), PTL_SEGV);
    PCHECK_RC(PtlNIInit(0x1234, PTL_PID_ANY, NULL, NULL, &ni), PTL_IFACE_INVALID);
    ptl_ni_limits_t want, got;
    memset(&want, 0, sizeof want);
    want.max_eqs = 16;
    want.max_pt_index = 31;
    want.max_mes = 1000000;                                   /* clamped */
    PCHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, &want, &got, &ni));
    CHECK_EQ(got.max_eqs, 16);
    CHECK_EQ(got.max_pt_index, 31);
    CHECK_EQ(got.max_mes, 65534);
    CHECK_EQ(got.max_ac_index, 63);
    CHECK(got.max_md_iovecs >= 8 && got.max_getput_md >= 8 && got.max_me_list == got.max_mes);
    ptl_handle_ni_t again;
    PCHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &again));
    CHECK(again == ni);
    PCHECK(PtlGetId(ni, &me));
    PCHECK_RC(PtlNIInit(PTL_IFACE_DEFAULT, me.pid + 1, NULL, NULL, &again), PTL_PID_INVALID);
    PCHECK(PtlNIInit(PTL_IFACE_DEFAULT, me.pid, NULL, NULL, &again));
    ptl_uid_t uid;
    PCHECK(PtlGetUid(ni, &uid));
    CHECK_EQ(uid, getuid());
    ptl_jid_t jid;
    PCHECK(PtlGetJid(ni, &jid));
    CHECK(jid != PTL_JID_ANY);
    ptl_handle_ni_t nh;
    PCHECK(PtlNIHandle(ni, &nh));
    CHECK(nh == ni);
    unsigned long dist = 9;
    PCHECK(PtlNIDist(ni, me, &dist));
    CHECK_EQ(dist, 0);
    PCHECK_RC(PtlNIDist(ni, ANY_ID, &dist), PTL_PROCESS_INVALID);
    CHECK_EQ(status_reg(ni, PTL_SR_DROP_COUNT), 0);
    PCHECK(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &eq_t));
    PCHECK(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &eq_i));
    PCHECK(PtlNIHandle(eq_t, &nh));
    CHECK(nh == ni);
}

/* A put with an ack: SEND_START/END and ACK on the initiator's MD, PUT_START/END on
 * the target's, START/END sharing link, sequence numbers in order, fields as the
 * top comment of portals3.h says; the local offset advances. */
static void put_section(void)
{
    static char target[64], src[16];
    memset(target, '.', sizeof target);
    memcpy(src, "0123456789abcdef", 16);
    ptl_handle_md_t tmd, smd = bind(src, 16);
    ptl_handle_me_t m = post(0x10, target, sizeof target, PTL_MD_THRESH_INF, PTL_MD_OP_PUT, PTL_RETAIN, &tmd);
    PCHECK(PtlPut(smd, PTL_ACK_REQ, me, PT, 0, 0x10, 0, 0xfeed));
    /* Everything is in the queues when PtlPut returns. */
    ptl_event_t ss = EXPECT(eq_i, PTL_EVENT_SEND_START);
    ptl_event_t ps = EXPECT(eq_t, PTL_EVENT_PUT_START);
    ptl_event_t pe = EXPECT(eq_t, PTL_EVENT_PUT_END);
    ptl_event_t se = EXPECT(eq_i, PTL_EVENT_SEND_END);
    ptl_event_t ack = EXPECT(eq_i, PTL_EVENT_ACK);
    expect_empty(eq_t);
    expect_empty(eq_i);
    CHECK(!memcmp(target, "0123456789abcdef....", 20));
    CHECK(ps.link == pe.link && ss.link == se.link);
    CHECK(ps.sequence + 1 == pe.sequence && ss.sequence + 1 == se.sequence && se.sequence + 1 == ack.sequence);
    CHECK(pe.initiator.nid == me.nid && pe.initiator.pid == me.pid);
    CHECK_EQ(pe.pt_index, PT);
    CHECK_EQ(pe.match_bits, 0x10);
    CHECK_EQ(pe.rlength, 16);
    CHECK_EQ(pe.mlength, 16);
    CHECK_EQ(pe.offset, 0);
    CHECK_EQ(pe.hdr_data, 0xfeed);
    CHECK(pe.md_handle == tmd && pe.md.start == target && pe.md.user_ptr == target);
    CHECK_EQ(pe.uid, getuid());
    CHECK(ss.md_handle == smd && se.md_handle == smd && ack.md_handle == smd);
    CHECK_EQ(ack.mlength, 16);
    CHECK(ack.initiator.nid == me.nid && ack.initiator.pid == me.pid);
    CHECK_EQ(se.hdr_data, 0xfeed);
    /* Second put: the next part of the MD (local offset by mlength). */
    PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT, 0, 0x10, 40, 0));
    EXPECT(eq_i, PTL_EVENT_SEND_START);
    pe = EXPECT(eq_t, PTL_EVENT_PUT_START);
    CHECK_EQ(pe.offset, 16);
    EXPECT(eq_t, PTL_EVENT_PUT_END);
    EXPECT(eq_i, PTL_EVENT_SEND_END);
    expect_empty(eq_i);                                       /* no ack: not requested */
    CHECK(!memcmp(target + 16, "0123456789abcdef", 16));
    PCHECK(PtlMEUnlink(m));
    PCHECK_RC(PtlMDUnlink(tmd), PTL_MD_INVALID);              /* went with its ME */
    expect_empty(eq_t);                                       /* explicit unlinks log nothing */
    PCHECK(PtlMDUnlink(smd));
    PCHECK_RC(PtlMDUnlink(smd), PTL_MD_INVALID);
}

/* Digest 9.1: the walk skips an ME without MD, an inactive MD, an MD that does not
 * take puts and an MD without room, and uses the first that accepts; a request that
 * nothing accepts is dropped and counted, silently. */
static void walk_section(void)
{
    static char b_inact[32], b_get[32], b_small[4], b_ok[32], src[8] = "walkwalk";
    ptl_handle_me_t bare, m1, m2, m3, m4;
    ptl_handle_md_t d1, d2, d3, d4, smd = bind(src, 8);
    PCHECK(PtlMEAttach(ni, PT, ANY_ID, 0x20, 0, PTL_RETAIN, PTL_INS_AFTER, &bare));
    m1 = post(0x20, b_inact, 32, 0, PTL_MD_OP_PUT, PTL_RETAIN, &d1);
    m2 = post(0x20, b_get, 32, PTL_MD_THRESH_INF, PTL_MD_OP_GET, PTL_RETAIN, &d2);
    m3 = post(0x20, b_small, 4, PTL_MD_THRESH_INF, PTL_MD_OP_PUT, PTL_RETAIN, &d3);
    m4 = post(0x20, b_ok, 32, PTL_MD_THRESH_INF, PTL_MD_OP_PUT, PTL_RETAIN, &d4);
    PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT, 0, 0x20, 0, 0));
    ptl_event_t e = EXPECT(eq_t, PTL_EVENT_PUT_START);
    CHECK(e.md_handle == d4);
    EXPECT(eq_t, PTL_EVENT_PUT_END);
    CHECK(!memcmp(b_ok, "walkwalk", 8));
    CHECK(b_inact[0] == 0 && b_get[0] == 0 && b_small[0] == 0);
    /* Ignore bits: bits 0x2f match 0x20 when 0x0f is ignored. */
    ptl_handle_me_t mi;
    ptl_handle_md_t di;
    static char b_ign[8];
    PCHECK(PtlMEAttach(ni, PT, ANY_ID, 0x20, 0x0f, PTL_UNLINK, PTL_INS_BEFORE, &mi));
    PCHECK(PtlMDAttach(mi, md_of(b_ign, 8, 1, PTL_MD_OP_PUT, eq_t), PTL_UNLINK, &di));
    PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT, 0, 0x2f, 0, 0));
    e = EXPECT(eq_t, PTL_EVENT_PUT_START);
    CHECK(e.md_handle == di && e.match_bits == 0x2f);
    EXPECT(eq_t, PTL_EVENT_PUT_END);
    EXPECT(eq_t, PTL_EVENT_UNLINK);                           /* threshold 1, PTL_UNLINK */
    /* Nothing matches: dropped, counted, nobody told. */
    CHECK_EQ(drain(eq_i), 4);
    ptl_sr_value_t drops = status_reg(ni, PTL_SR_DROP_COUNT);
    PCHECK(PtlPut(smd, PTL_ACK_REQ, me, PT, 0, 0x77, 0, 0));
    CHECK_EQ(status_reg(ni, PTL_SR_DROP_COUNT), drops + 1);
    CHECK_EQ(status_reg(ni, PTL_SR_DROP_LENGTH) > 0, 1);
    expect_empty(eq_t);
    EXPECT(eq_i, PTL_EVENT_SEND_START);
    EXPECT(eq_i, PTL_EVENT_SEND_END);
    expect_empty(eq_i);                                       /* no ack for a dropped put */
    for (ptl_handle_me_t *x = (ptl_handle_me_t[]){bare, m1, m2, m3, m4}, *end = x + 5; x < end; x++)
        PCHECK(PtlMEUnlink(*x));
    PCHECK_RC(PtlMEUnlink(mi), PTL_ME_INVALID);               /* auto-unlinked with its MD */
    PCHECK(PtlMDUnlink(smd));
    (void)d1; (void)d2; (void)d3;
}

/* Digest 9.2: a matching MD without room, attached with unlink_nofit, is unlinked (and
 * its ME, per the ME's flag), logs PTL_EVENT_UNLINK, and the walk goes on. */
static void nofit_section(void)
{
    static char small[8], big[64], src[20] = "nineteen-characters";
    ptl_handle_me_t ma, mb;
    ptl_handle_md_t da, db, smd = bind(src, 20);
    PCHECK(PtlMEAttach(ni, PT, ANY_ID, 0x30, 0, PTL_UNLINK, PTL_INS_AFTER, &ma));
    PCHECK(PtlMDAttachNoFit(ma, md_of(small, 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT, eq_t), PTL_UNLINK, PTL_UNLINK, &da));
    mb = post(0x30, big, 64, PTL_MD_THRESH_INF, PTL_MD_OP_PUT, PTL_RETAIN, &db);
    PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT, 0, 0x30, 0, 0));
    ptl_event_t u = EXPECT(eq_t, PTL_EVENT_UNLINK);
    CHECK(u.md_handle == da);
    ptl_event_t s = EXPECT(eq_t, PTL_EVENT_PUT_START);
    CHECK(s.md_handle == db);
    EXPECT(eq_t, PTL_EVENT_PUT_END);
    CHECK(!memcmp(big, "nineteen-characters", 20));
    PCHECK_RC(PtlMDUnlink(da), PTL_MD_INVALID);
    PCHECK_RC(PtlMEUnlink(ma), PTL_ME_INVALID);
    /* Without unlink_nofit the MD stays, skipped. */
    PCHECK(PtlMEAttach(ni, PT, ANY_ID, 0x31, 0, PTL_UNLINK, PTL_INS_BEFORE, &ma));
    PCHECK(PtlMDAttachNoFit(ma, md_of(small, 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT, eq_t), PTL_UNLINK, PTL_RETAIN, &da));
    ptl_sr_value_t drops = status_reg(ni, PTL_SR_DROP_COUNT);
    PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT, 0, 0x31, 0, 0));
    CHECK_EQ(status_reg(ni, PTL_SR_DROP_COUNT), drops + 1);
    expect_empty(eq_t);
    PCHECK(PtlMDUnlink(da));                                  /* the ME goes with it (PTL_UNLINK) */
    PCHECK_RC(PtlMEUnlink(ma), PTL_ME_INVALID);
    PCHECK(PtlMEUnlink(mb));
    PCHECK(PtlMDUnlink(smd));
    drain(eq_i);
}

/* Digest 9.3: remotely managed offsets use the request's, truncation gives mlength <
 * rlength, PTL_MD_MAX_SIZE caps requests and deactivates a locally managed MD. */
static void offsets_section(void)
{
    static char buf[32], src[24] = "abcdefghijklmnopqrstuvw";
    ptl_handle_md_t d, smd = bind(src, 24);
    ptl_handle_me_t m = post(0x40, buf, 32, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_TRUNCATE, PTL_RETAIN, &d);
    PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT, 0, 0x40, 20, 0));
    ptl_event_t e = EXPECT(eq_t, PTL_EVENT_PUT_START);
    CHECK_EQ(e.offset, 20);
    CHECK_EQ(e.rlength, 24);
    CHECK_EQ(e.mlength, 12);                                  /* truncated to the room */
    EXPECT(eq_t, PTL_EVENT_PUT_END);
    CHECK(!memcmp(buf + 20, "abcdefghijkl", 12));
    PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT, 0, 0x40, 40, 0)); /* past the end: 0 bytes */
    e = EXPECT(eq_t, PTL_EVENT_PUT_START);
    CHECK_EQ(e.mlength, 0);
    EXPECT(eq_t, PTL_EVENT_PUT_END);
    PCHECK(PtlMEUnlink(m));
    /* max_size 10 of 32: requests capped at 10 (truncated), inactive below 10 left. */
    ptl_md_t md = md_of(buf, 32, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MAX_SIZE | PTL_MD_TRUNCATE, eq_t);
    md.max_size = 10;
    PCHECK(PtlMEAttach(ni, PT, ANY_ID, 0x41, 0, PTL_UNLINK, PTL_INS_AFTER, &m));
    PCHECK(PtlMDAttach(m, md, PTL_UNLINK, &d));
    for (int i = 0; i < 3; i++) {
        PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT, 0, 0x41, 0, 0));
        e = EXPECT(eq_t, PTL_EVENT_PUT_START);
        CHECK_EQ(e.offset, 10 * i);
        CHECK_EQ(e.mlength, 10);
        EXPECT(eq_t, PTL_EVENT_PUT_END);
    }
    /* 2 bytes left < max_size: inactive, unlinked after the third. */
    e = EXPECT(eq_t, PTL_EVENT_UNLINK);
    CHECK(e.md_handle == d);
    PCHECK_RC(PtlMEUnlink(m), PTL_ME_INVALID);
    PCHECK(PtlMDUnlink(smd));
    drain(eq_i);
}

/* Digest 9.4: thresholds count operations; auto-unlink right after the operation that
 * exhausted it (UNLINK's link = that operation's); never for an MD made with threshold
 * 0, which PtlMDUpdate activates. */
static void threshold_section(void)
{
    static char buf[64], src[4] = "thr";
    ptl_handle_md_t d, smd = bind(src, 4);
    ptl_handle_me_t m = post(0x50, buf, 64, 2, PTL_MD_OP_PUT, PTL_UNLINK, &d);
    PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT, 0, 0x50, 0, 0));
    ptl_event_t e = EXPECT(eq_t, PTL_EVENT_PUT_START);
    CHECK_EQ(e.md.threshold, 1);
    EXPECT(eq_t, PTL_EVENT_PUT_END);
    expect_empty(eq_t);
    PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT, 0, 0x50, 0, 0));
    EXPECT(eq_t, PTL_EVENT_PUT_START);
    ptl_event_t end = EXPECT(eq_t, PTL_EVENT_PUT_END);
    CHECK_EQ(end.md.threshold, 0);
    ptl_event_t u = EXPECT(eq_t, PTL_EVENT_UNLINK);
    CHECK(u.link == end.link && u.md_handle == d);
    PCHECK_RC(PtlMEUnlink(m), PTL_ME_INVALID);                /* ME had PTL_UNLINK */
    /* Threshold 0 at creation: inactive, not unlinked; PtlMDUpdate activates it. */
    m = post(0x51, buf, 64, 0, PTL_MD_OP_PUT, PTL_UNLINK, &d);
    ptl_sr_value_t drops = status_reg(ni, PTL_SR_DROP_COUNT);
    PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT, 0, 0x51, 0, 0));
    CHECK_EQ(status_reg(ni, PTL_SR_DROP_COUNT), drops + 1);
    expect_empty(eq_t);
    ptl_md_t old, nw = md_of(buf, 64, 1, PTL_MD_OP_PUT, eq_t);
    PCHECK(PtlMDUpdate(d, &old, &nw, eq_t));
    CHECK_EQ(old.threshold, 0);
    PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT, 0, 0x51, 0, 0));
    EXPECT(eq_t, PTL_EVENT_PUT_START);
    EXPECT(eq_t, PTL_EVENT_PUT_END);
    EXPECT(eq_t, PTL_EVENT_UNLINK);
    PCHECK_RC(PtlMDUnlink(d), PTL_MD_INVALID);
    PCHECK_RC(PtlMEUnlink(m), PTL_ME_INVALID);
    PCHECK(PtlMDUnlink(smd));
    drain(eq_i);
    /* Initiator side: a put's send and its ack each take a unit; the bound MD (threshold
     * 2, PTL_UNLINK) goes after the ack.  A bound MD made with threshold 0 is used, not
     * unlinked. */
    m = post(0x52, buf, 64, PTL_MD_THRESH_INF, PTL_MD_OP_PUT, PTL_RETAIN, &d);
    ptl_handle_md_t b2, b0;
    PCHECK(PtlMDBind(ni, md_of(src, 4, 2, 0, eq_i), PTL_UNLINK, &b2));
    PCHECK(PtlPut(b2, PTL_ACK_REQ, me, PT, 0, 0x52, 0, 0));
    e = EXPECT(eq_i, PTL_EVENT_SEND_START);
    CHECK_EQ(e.md.threshold, 1);
    EXPECT(eq_i, PTL_EVENT_SEND_END);
    e = EXPECT(eq_i, PTL_EVENT_ACK);
    CHECK_EQ(e.md.threshold, 0);
    u = EXPECT(eq_i, PTL_EVENT_UNLINK);
    CHECK(u.md_handle == b2 && u.link == e.link);
    PCHECK_RC(PtlMDUnlink(b2), PTL_MD_INVALID);
    PCHECK(PtlMDBind(ni, md_of(src, 4, 0, 0, eq_i), PTL_UNLINK, &b0));
    PCHECK(PtlPut(b0, PTL_ACK_REQ, me, PT, 0, 0x52, 0, 0));
    CHECK_EQ(drain(eq_i), 3);                                 /* SEND_START, SEND_END, ACK */
    PCHECK(PtlMDUnlink(b0));                                  /* still there */
    PCHECK(PtlMEUnlink(m));
    drain(eq_t);
}

/* Digest 9.5: an ack only when asked, when the initiator's MD has a queue, when the
 * target MD allows it; gets never ack. */
static void ack_section(void)
{
    static char buf[16], src[4] = "ack";
    ptl_handle_md_t d, quiet, smd = bind(src, 4);
    ptl_handle_me_t m = post(0x60, buf, 16, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_ACK_DISABLE | PTL_MD_MANAGE_REMOTE, PTL_RETAIN, &d);
    PCHECK(PtlPut(smd, PTL_ACK_REQ, me, PT, 0, 0x60, 0, 0));
    EXPECT(eq_i, PTL_EVENT_SEND_START);
    EXPECT(eq_i, PTL_EVENT_SEND_END);
    expect_empty(eq_i);                                       /* ACK_DISABLE */
    EXPECT(eq_t, PTL_EVENT_PUT_START);
    EXPECT(eq_t, PTL_EVENT_PUT_END);
    PCHECK(PtlMEUnlink(m));
    m = post(0x61, buf, 16, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, PTL_RETAIN, &d);
    PCHECK(PtlMDBind(ni, md_of(src, 4, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE), PTL_RETAIN, &quiet));
    PCHECK(PtlPut(quiet, PTL_ACK_REQ, me, PT, 0, 0x61, 0, 0)); /* no queue, no ack */
    EXPECT(eq_t, PTL_EVENT_PUT_START);
    EXPECT(eq_t, PTL_EVENT_PUT_END);
    expect_empty(eq_i);
    PCHECK(PtlMEUnlink(m));
    PCHECK(PtlMDUnlink(quiet));
    PCHECK(PtlMDUnlink(smd));
}

/* Digest 9.6: a get logs GET_START/END at the target and REPLY_START/END at the
 * initiator, no SEND, no ACK; the reply lands at offset 0 of the initiator's MD. */
static void get_section(void)
{
    static char remote[32] = "0123456789ABCDEFGHIJKLMNOPQRSTU", local[12];
    ptl_handle_md_t d, lmd;
    PCHECK(PtlMDBind(ni, md_of(local, 12, PTL_MD_THRESH_INF, 0, eq_i), PTL_RETAIN, &lmd));
    ptl_handle_me_t m = post(0x70, remote, 32, PTL_MD_THRESH_INF, PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, PTL_RETAIN, &d);
    PCHECK(PtlGet(lmd, me, PT, 0, 0x70, 10));
    ptl_event_t gs = EXPECT(eq_t, PTL_EVENT_GET_START);
    ptl_event_t ge = EXPECT(eq_t, PTL_EVENT_GET_END);
    ptl_event_t rs = EXPECT(eq_i, PTL_EVENT_REPLY_START);
    ptl_event_t re = EXPECT(eq_i, PTL_EVENT_REPLY_END);
    expect_empty(eq_i);
    expect_empty(eq_t);
    CHECK(gs.link == ge.link && rs.link == re.link);
    CHECK_EQ(ge.offset, 10);
    CHECK_EQ(ge.mlength, 12);
    CHECK_EQ(re.mlength, 12);
    CHECK_EQ(re.offset, 0);
    CHECK(re.md_handle == lmd);
    CHECK(!memcmp(local, "ABCDEFGHIJKL", 12));
    /* A get that nothing accepts: dropped, counted, nothing at either side. */
    ptl_sr_value_t drops = status_reg(ni, PTL_SR_DROP_COUNT);
    PCHECK(PtlGet(lmd, me, PT, 0, 0x71, 0));
    CHECK_EQ(status_reg(ni, PTL_SR_DROP_COUNT), drops + 1);
    expect_empty(eq_i);
    expect_empty(eq_t);
    PCHECK(PtlMEUnlink(m));
    PCHECK(PtlMDUnlink(lmd));
}

static volatile int waiter_rc = -1;
static ptl_event_t waiter_ev;
static void *waiter(void *arg)
{
    waiter_rc = PtlEQWait(*(ptl_handle_eq_t *)arg, &waiter_ev);
    return NULL;
}

/* Digest 9.7: an overflowing queue is circular: the oldest events are overwritten, and
 * the next one returned (by PtlEQGet, PtlEQWait or PtlEQPoll) is PTL_EQ_DROPPED (still an
 * event), its sequence showing the gap; PtlEQGet says empty while a thread waits, and
 * the waiter gets the event. */
static void eq_section(void)
{
    static char buf[8], src[1];
    ptl_handle_eq_t small;
    ptl_handle_md_t d, smd = bind(src, 1);
    PCHECK(PtlEQAlloc(ni, 4, PTL_EQ_HANDLER_NONE, &small));
    ptl_handle_me_t m;
    PCHECK(PtlMEAttach(ni, PT, ANY_ID, 0x80, 0, PTL_RETAIN, PTL_INS_AFTER, &m));
    PCHECK(PtlMDAttach(m, md_of(buf, 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, small), PTL_RETAIN, &d));
    for (int i = 0; i < 3; i++) PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT, 0, 0x80, 0, i)); /* 6 events */
    ptl_event_t e;
    PCHECK_RC(PtlEQGet(small, &e), PTL_EQ_DROPPED);           /* the first two were overwritten */
    CHECK(e.type == PTL_EVENT_PUT_START && e.hdr_data == 1 && e.sequence == 2);
    for (int i = 3; i < 6; i++) {
        PCHECK(PtlEQGet(small, &e));                          /* the four newest, in order */
        CHECK_EQ(e.sequence, i);
        CHECK_EQ(e.hdr_data, i / 2);
    }
    PCHECK_RC(PtlEQGet(small, &e), PTL_EQ_EMPTY);
    PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT, 0, 0x80, 0, 7));
    PCHECK(PtlEQGet(small, &e));                              /* no loss this time */
    CHECK(e.type == PTL_EVENT_PUT_START && e.hdr_data == 7 && e.sequence == 6);
    PCHECK(PtlEQGet(small, &e));
    CHECK(e.type == PTL_EVENT_PUT_END);
    /* A queue whose newest events overflow it: PtlEQWait returns at once with the loss. */
    for (int i = 0; i < 5; i++) PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT, 0, 0x80, 0, 20 + i));
    CHECK_EQ(PtlEQWait(small, &e), PTL_EQ_DROPPED);
    CHECK(e.type == PTL_EVENT_PUT_START && e.hdr_data == 23 && e.sequence == 14);
    int which = -1;
    CHECK_EQ(PtlEQPoll(&small, 1, 0, &e, &which), PTL_OK);
    CHECK(e.type == PTL_EVENT_PUT_END && e.hdr_data == 23 && which == 0);
    for (int i = 0; i < 6; i++) PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT, 0, 0x80, 0, 30 + i));
    CHECK_EQ(PtlEQPoll(&small, 1, 10, &e, &which), PTL_EQ_DROPPED);
    CHECK(e.type == PTL_EVENT_PUT_START && e.hdr_data == 34 && e.sequence == 26);
    CHECK_EQ(drain(small), 3);
    /* A waiting thread: PtlEQGet says empty meanwhile; the waiter gets the event. */
    pthread_t th;
    CHECK(pthread_create(&th, NULL, waiter, &small) == 0);
    for (int i = 0; i < 2000; i++) {
        usleep(1000);
        if (PtlEQGet(small, &e) == PTL_EQ_EMPTY && i > 20) break;
    }
    PCHECK_RC(PtlEQGet(small, &e), PTL_EQ_EMPTY);
    PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT, 0, 0x80, 0, 9));
    pthread_join(th, NULL);
    CHECK_EQ(waiter_rc, PTL_OK);
    CHECK(waiter_ev.type == PTL_EVENT_PUT_START && waiter_ev.hdr_data == 9);
    PCHECK(PtlEQGet(small, &e));
    /* PtlEQFree wakes a waiter with PTL_EQ_INVALID. */
    CHECK(pthread_create(&th, NULL, waiter, &small) == 0);
    usleep(20000);
    PCHECK(PtlMEUnlink(m));
    PCHECK(PtlEQFree(small));
    pthread_join(th, NULL);
    CHECK_EQ(waiter_rc, PTL_EQ_INVALID);
    PCHECK_RC(PtlEQGet(small, &e), PTL_EQ_INVALID);
    PCHECK(PtlMDUnlink(smd));
    drain(eq_i);
}

/* Digest 9.8: PtlMDUpdate fills old_md always, updates only when testq is empty, and a
 * PTL_EQ_NONE testq updates unconditionally. */
static void update_section(void)
{
    static char buf[16], buf2[16], src[2] = "u";
    ptl_handle_md_t d, smd = bind(src, 2);
    ptl_handle_me_t m = post(0x90, buf, 16, PTL_MD_THRESH_INF, PTL_MD_OP_PUT, PTL_RETAIN, &d);
    PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT, 0, 0x90, 0, 0));
    ptl_md_t old, nw = md_of(buf2, 16, 5, PTL_MD_OP_PUT, eq_t);
    memset(&old, 0, sizeof old);
    PCHECK_RC(PtlMDUpdate(d, &old, &nw, eq_t), PTL_MD_NO_UPDATE); /* eq_t holds 2 events */
    CHECK(old.start == buf && old.length == 16 && old.threshold == PTL_MD_THRESH_INF);
    ptl_event_t e;
    EXPECT(eq_t, PTL_EVENT_PUT_START);
    EXPECT(eq_t, PTL_EVENT_PUT_END);
    PCHECK(PtlMDUpdate(d, NULL, &nw, eq_t));
    PCHECK(PtlMDUpdate(d, &old, NULL, eq_t));
    CHECK(old.start == buf2 && old.threshold == 5);
    PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT, 0, 0x90, 0, 0));
    EXPECT(eq_t, PTL_EVENT_PUT_START);
    e = EXPECT(eq_t, PTL_EVENT_PUT_END);
    CHECK(e.md.start == buf2 && e.md.threshold == 4 && e.offset == 0);
    CHECK(buf2[0] == 'u');
    nw.threshold = 9;
    PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT, 0, 0x90, 0, 0));
    PCHECK(PtlMDUpdate(d, &old, &nw, PTL_EQ_NONE));           /* unconditional */
    PCHECK(PtlMDUpdate(d, &old, NULL, PTL_EQ_NONE));
    CHECK_EQ(old.threshold, 9);
    nw.options = 0x10000;
    PCHECK_RC(PtlMDUpdate(d, &old, &nw, PTL_EQ_NONE), PTL_MD_ILLEGAL);
    PCHECK_RC(PtlMDUpdate(d, &old, &nw, 0x12345), PTL_EQ_INVALID);
    PCHECK(PtlMEUnlink(m));
    PCHECK_RC(PtlMDUpdate(d, &old, NULL, PTL_EQ_NONE), PTL_MD_INVALID);
    PCHECK(PtlMDUnlink(smd));
    drain(eq_t);
    drain(eq_i);
}

/* Digest 9.9: access control: a cookie whose entry does not admit the request, an
 * entry never set, an index out of range, a portal out of range: all dropped, all
 * counted, no event anywhere. */
static void acl_section(void)
{
    static char buf[8], src[2] = "a";
    ptl_handle_md_t d, smd = bind(src, 2);
    ptl_handle_me_t m = post(0xa0, buf, 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, PTL_RETAIN, &d);
    PCHECK(PtlACEntry(ni, 1, ANY_ID, PTL_UID_ANY, PTL_JID_ANY, PT + 1));   /* another portal */
    ptl_process_id_t other = me;
    other.pid = me.pid + 100;
    PCHECK(PtlACEntry(ni, 3, other, PTL_UID_ANY, PTL_JID_ANY, PTL_PT_INDEX_ANY)); /* another process */
    PCHECK(PtlACEntry(ni, 4, ANY_ID, getuid() + 1, PTL_JID_ANY, PTL_PT_INDEX_ANY)); /* another user */
    ptl_sr_value_t drops = status_reg(ni, PTL_SR_DROP_COUNT);
    PtlNIDebug(ni, PTL_DBG_DROP);                              /* each drop printed (stderr) */
    int cookies[] = {1, 2, 3, 4, 63, 64, 100000};
    for (unsigned i = 0; i < sizeof cookies / sizeof *cookies; i++)
        PCHECK(PtlPut(smd, PTL_ACK_REQ, me, PT, cookies[i], 0xa0, 0, 0));
    PCHECK(PtlPut(smd, PTL_ACK_REQ, me, 32, 0, 0xa0, 0, 0));  /* portal beyond max 31 */
    PCHECK(PtlPut(smd, PTL_ACK_REQ, me, 1000000, 0, 0xa0, 0, 0));
    CHECK_EQ(status_reg(ni, PTL_SR_DROP_COUNT), drops + 9);
    PtlNIDebug(ni, PTL_DBG_NONE);
    expect_empty(eq_t);
    ptl_event_t e;
    int n = 0;
    while (PtlEQGet(eq_i, &e) == PTL_OK) {
        CHECK(e.type == PTL_EVENT_SEND_START || e.type == PTL_EVENT_SEND_END);
        n++;
    }
    CHECK_EQ(n, 18);
    /* Entry 1 admits portal PT+1; entry 5 admits exactly this process, this user. */
    PCHECK(PtlACEntry(ni, 5, me, getuid(), PTL_JID_ANY, PT));
    PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT, 5, 0xa0, 0, 0));
    EXPECT(eq_t, PTL_EVENT_PUT_START);
    EXPECT(eq_t, PTL_EVENT_PUT_END);
    PCHECK_RC(PtlACEntry(ni, 64, ANY_ID, PTL_UID_ANY, PTL_JID_ANY, PT), PTL_AC_INDEX_INVALID);
    PCHECK_RC(PtlACEntry(ni, 1, ANY_ID, PTL_UID_ANY, PTL_JID_ANY, 32), PTL_PT_INDEX_INVALID);
    PCHECK_RC(PtlACEntry(ni + 1, 1, ANY_ID, PTL_UID_ANY, PTL_JID_ANY, 1), PTL_NI_INVALID);
    PCHECK(PtlMEUnlink(m));
    PCHECK(PtlMDUnlink(smd));
    drain(eq_i);
}

/* PtlGetPut swaps: the target's old bytes come back, the new ones stay. */
static void getput_section(void)
{
    static uint64_t word = 0x1111, newv = 0x2222, oldv;
    ptl_handle_md_t d, gmd, pmd;
    ptl_handle_me_t m = post(0xb0, &word, 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, PTL_RETAIN, &d);
    PCHECK(PtlMDBind(ni, md_of(&oldv, 8, PTL_MD_THRESH_INF, 0, eq_i), PTL_RETAIN, &gmd));
    PCHECK(PtlMDBind(ni, md_of(&newv, 8, PTL_MD_THRESH_INF, 0, eq_i), PTL_RETAIN, &pmd));
    PCHECK(PtlGetPut(gmd, pmd, me, PT, 0, 0xb0, 0, 0x55));
    CHECK_EQ(oldv, 0x1111);
    CHECK_EQ(word, 0x2222);
    ptl_event_t e = EXPECT(eq_t, PTL_EVENT_GETPUT_START);
    CHECK_EQ(e.hdr_data, 0x55);
    EXPECT(eq_t, PTL_EVENT_GETPUT_END);
    EXPECT(eq_i, PTL_EVENT_SEND_START);
    EXPECT(eq_i, PTL_EVENT_SEND_END);
    e = EXPECT(eq_i, PTL_EVENT_REPLY_START);
    CHECK(e.md_handle == gmd);
    EXPECT(eq_i, PTL_EVENT_REPLY_END);
    expect_empty(eq_i);
    /* Over max_getput_md: refused. */
    static char big[4096 * 2];
    ptl_handle_md_t bmd;
    PCHECK(PtlMDBind(ni, md_of(big, sizeof big, PTL_MD_THRESH_INF, 0, eq_i), PTL_RETAIN, &bmd));
    PCHECK_RC(PtlGetPut(gmd, bmd, me, PT, 0, 0xb0, 0, 0), PTL_MD_ILLEGAL);
    PCHECK(PtlMDUnlink(bmd));
    PCHECK(PtlMEUnlink(m));
    PCHECK(PtlMDUnlink(gmd));
    PCHECK(PtlMDUnlink(pmd));
}

/* PtlPutRegion/PtlGetRegion use part of the MD; iovec MDs scatter and gather. */
static void region_iovec_section(void)
{
    static char buf[64], src[32] = "0123456789abcdefghijklmnopqrstu", dst[32];
    static char a[5], b[7], c[20];
    ptl_handle_md_t d, smd = bind(src, 32), dmd = bind(dst, 32);
    ptl_handle_me_t m = post(0xc0, buf, 64, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, PTL_RETAIN, &d);
    PCHECK(PtlPutRegion(smd, 10, 6, PTL_NO_ACK_REQ, me, PT, 0, 0xc0, 3, 0));
    ptl_event_t e = EXPECT(eq_t, PTL_EVENT_PUT_START);
    CHECK(e.rlength == 6 && e.offset == 3);
    CHECK(!memcmp(buf + 3, "abcdef", 6));
    PCHECK(PtlGetRegion(dmd, 20, 4, me, PT, 0, 0xc0, 4));
    CHECK(!memcmp(dst + 20, "bcde", 4));
    drain(eq_i); /* the get's REPLY_END: dst is ours again before it is reused below */
    PCHECK_RC(PtlPutRegion(smd, 30, 3, PTL_NO_ACK_REQ, me, PT, 0, 0xc0, 0, 0), PTL_MD_ILLEGAL);
    PCHECK_RC(PtlGetRegion(dmd, UINT64_MAX, 2, me, PT, 0, 0xc0, 0), PTL_MD_ILLEGAL);
    PCHECK(PtlMEUnlink(m));
    /* Target iovec MD: 5 + 7 + 20 bytes. */
    ptl_md_iovec_t iov[3] = {{a, 5}, {b, 7}, {c, 20}};
    ptl_md_t md = md_of(iov, 3, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_IOVEC | PTL_MD_MANAGE_REMOTE, eq_t);
    PCHECK(PtlMEAttach(ni, PT, ANY_ID, 0xc1, 0, PTL_RETAIN, PTL_INS_AFTER, &m));
    PCHECK(PtlMDAttach(m, md, PTL_RETAIN, &d));
    memset(iov, 0, sizeof iov);                               /* the library keeps its copy */
    PCHECK(PtlPutRegion(smd, 0, 16, PTL_NO_ACK_REQ, me, PT, 0, 0xc1, 2, 0));
    CHECK(!memcmp(a + 2, "012", 3) && !memcmp(b, "3456789", 7) && !memcmp(c, "abcdef", 6));
    memset(dst, 0, sizeof dst);
    PCHECK(PtlGetRegion(dmd, 0, 16, me, PT, 0, 0xc1, 2));
    CHECK(!memcmp(dst, "0123456789abcdef", 16));
    /* Source iovec MD: gathers. */
    ptl_md_iovec_t siov[2] = {{src + 28, 4}, {src, 4}};
    ptl_handle_md_t gmd;
    PCHECK(PtlMDBind(ni, md_of(siov, 2, PTL_MD_THRESH_INF, PTL_MD_IOVEC, eq_i), PTL_RETAIN, &gmd));
    PCHECK(PtlPut(gmd, PTL_NO_ACK_REQ, me, PT, 0, 0xc1, 0, 0));
    CHECK(!memcmp(a, "stu", 3) && a[4] == '0' && !memcmp(b, "123", 3));
    PCHECK(PtlMEUnlink(m));
    PCHECK(PtlMDUnlink(gmd));
    PCHECK(PtlMDUnlink(smd));
    PCHECK(PtlMDUnlink(dmd));
    drain(eq_t);
    drain(eq_i);
}

/* List order: PtlMEInsert before/after, PtlMEAttach at the head or tail,
 * PtlMEAttachAny picks an empty portal; MD unlink keeps a PTL_RETAIN ME. */
static void me_section(void)
{
    static char b[4][8], src[2] = "o";
    ptl_handle_md_t d[4], smd = bind(src, 2);
    ptl_handle_me_t m1, m0, m2, m3;
    PCHECK(PtlMEAttach(ni, PT + 2, ANY_ID, 1, 0, PTL_RETAIN, PTL_INS_AFTER, &m1));
    PCHECK(PtlMEInsert(m1, ANY_ID, 1, 0, PTL_RETAIN, PTL_INS_BEFORE, &m0));
    PCHECK(PtlMEInsert(m1, ANY_ID, 1, 0, PTL_RETAIN, PTL_INS_AFTER, &m2));
    PCHECK(PtlMEAttach(ni, PT + 2, ANY_ID, 1, 0, PTL_RETAIN, PTL_INS_BEFORE, &m3)); /* head */
    ptl_handle_me_t order[4] = {m3, m0, m1, m2};
    for (int i = 0; i < 4; i++) PCHECK(PtlMDAttach(order[i], md_of(b[i], 8, 1, PTL_MD_OP_PUT, eq_t), PTL_RETAIN, &d[i]));
    CHECK_EQ(status_reg(ni, PTL_SR_MLIST_LEN(PT + 2)), 4);
    for (int i = 0; i < 4; i++) {
        PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT + 2, 0, 1, 0, 0));
        ptl_event_t e = EXPECT(eq_t, PTL_EVENT_PUT_START);
        CHECK(e.md_handle == d[i]);
        EXPECT(eq_t, PTL_EVENT_PUT_END);
    }
    /* Threshold 1, PTL_RETAIN: used up but still attached; unlink keeps the ME. */
    PCHECK_RC(PtlMDAttach(m1, md_of(b[0], 8, 1, PTL_MD_OP_PUT, eq_t), PTL_RETAIN, NULL), PTL_ME_IN_USE);
    PCHECK(PtlMDUnlink(d[2]));
    PCHECK(PtlMDAttach(m1, md_of(b[0], 8, 1, PTL_MD_OP_PUT, eq_t), PTL_RETAIN, NULL)); /* NULL handle allowed */
    CHECK_EQ(status_reg(ni, PTL_SR_MLIST_LEN(PT + 2)), 4);
    ptl_pt_index_t any;
    ptl_handle_me_t ma;
    PCHECK(PtlMEAttachAny(ni, &any, ANY_ID, 0, 0, PTL_RETAIN, &ma));
    CHECK(any != PT && any != (ptl_pt_index_t)PT + 2);
    CHECK_EQ(status_reg(ni, PTL_SR_MLIST_LEN(any)), 1);
    PCHECK(PtlMEUnlink(ma));
    for (int i = 0; i < 4; i++) PCHECK(PtlMEUnlink(order[i]));
    CHECK_EQ(status_reg(ni, PTL_SR_MLIST_LEN(PT + 2)), 0);
    PCHECK(PtlMDUnlink(smd));
    drain(eq_i);
}

/* PtlMEMDPost: both or nothing, only while the test queue is empty. */
static void memdpost_section(void)
{
    static char buf[8], src[2] = "p";
    ptl_handle_md_t d, smd = bind(src, 2);
    ptl_handle_me_t mark, m;
    PCHECK(PtlMEAttach(ni, PT + 3, ANY_ID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &mark));
    PCHECK(PtlMEMDPost(ni, mark, ANY_ID, 5, 0, PTL_UNLINK, PTL_INS_BEFORE, md_of(buf, 8, 1, PTL_MD_OP_PUT, eq_t), PTL_UNLINK, &m, &d, eq_t));
    PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT + 3, 0, 5, 0, 0));
    EXPECT(eq_t, PTL_EVENT_PUT_START);
    CHECK_EQ(status_reg(ni, PTL_SR_MLIST_LEN(PT + 3)), 1);   /* auto-unlinked */
    ptl_sr_value_t cur = status_reg(ni, PTL_SR_MES_CUR);
    PCHECK_RC(PtlMEMDPost(ni, mark, ANY_ID, 5, 0, PTL_UNLINK, PTL_INS_BEFORE, md_of(buf, 8, 1, PTL_MD_OP_PUT, eq_t), PTL_UNLINK, &m, &d, eq_t), PTL_MD_NO_UPDATE);
    CHECK_EQ(status_reg(ni, PTL_SR_MES_CUR), cur);            /* nothing was created */
    drain(eq_t);
    PCHECK(PtlMEMDPost(ni, mark, ANY_ID, 5, 0, PTL_UNLINK, PTL_INS_BEFORE, md_of(buf, 8, 1, PTL_MD_OP_PUT, eq_t), PTL_UNLINK, &m, &d, eq_t));
    PCHECK(PtlMEUnlink(m));
    PCHECK(PtlMEUnlink(mark));
    PCHECK(PtlMDUnlink(smd));
    drain(eq_i);
}

static volatile int handled;
static ptl_event_kind_t handled_kinds[8];
static void handler(ptl_event_t *ev)
{
    if (handled < 8) handled_kinds[handled] = ev->type;
    __atomic_add_fetch(&handled, 1, __ATOMIC_SEQ_CST);
}

/* EQ handlers run once per event; the events stay in the queue.  PtlEQPoll waits on
 * several queues, PtlEQWait_timeout gives up. */
static void handler_poll_section(void)
{
    static char buf[8], src[2] = "h";
    ptl_handle_eq_t heq;
    ptl_handle_md_t d, smd = bind(src, 2);
    PCHECK(PtlEQAlloc(ni, 16, handler, &heq));
    ptl_handle_me_t m;
    PCHECK(PtlMEAttach(ni, PT, ANY_ID, 0xd0, 0, PTL_RETAIN, PTL_INS_AFTER, &m));
    PCHECK(PtlMDAttach(m, md_of(buf, 8, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, heq), PTL_RETAIN, &d));
    PCHECK(PtlPut(smd, PTL_NO_ACK_REQ, me, PT, 0, 0xd0, 0, 0));
    for (int i = 0; i < 5000 && handled < 2; i++) usleep(1000);
    CHECK_EQ(handled, 2);
    CHECK(handled_kinds[0] == PTL_EVENT_PUT_START && handled_kinds[1] == PTL_EVENT_PUT_END);
    ptl_handle_eq_t both[2] = {eq_t, heq};
    ptl_event_t e;
    int which = -1;
    PCHECK(PtlEQPoll(both, 2, 0, &e, &which));
    CHECK(which == 1 && e.type == PTL_EVENT_PUT_START);
    PCHECK(PtlEQPoll(both, 2, 100, &e, &which));
    CHECK(which == 1 && e.type == PTL_EVENT_PUT_END);
    PCHECK_RC(PtlEQPoll(both, 2, 0, &e, &which), PTL_EQ_EMPTY);
    PCHECK_RC(PtlEQPoll(both, 2, 30, &e, &which), PTL_EQ_EMPTY);
    PCHECK_RC(PtlEQWait_timeout(heq, &e), PTL_EQ_EMPTY);      /* SOFTNIC_PTL_WAIT_TIMEOUT_MS */
    PCHECK_RC(PtlEQPoll(both, 0, 0, &e, &which), PTL_EQ_INVALID);
    both[0] = 0x4000ffff;
    PCHECK_RC(PtlEQPoll(both, 2, 0, &e, &which), PTL_EQ_INVALID);
    PCHECK(PtlMEUnlink(m));
    PCHECK(PtlEQFree(heq));
    PCHECK(PtlMDUnlink(smd));
    drain(eq_i);
}

/* Strings, status registers, debug and dump calls, PtlProgress. */
static void misc_section(void)
{
    CHECK(!strcmp(PtlErrorStr(PTL_OK), "PTL_OK"));
    CHECK(!strcmp(PtlErrorStr(PTL_MD_NO_UPDATE), "PTL_MD_NO_UPDATE"));
    CHECK(!strcmp(PtlErrorStr(9999), "PTL_UNKNOWN_ERROR"));
    CHECK(!strcmp(ptl_err_str[PTL_SEGV], "PTL_SEGV"));
    CHECK(!strcmp(PtlEventKindStr(PTL_EVENT_ACK), "PTL_EVENT_ACK"));
    CHECK(!strcmp(PtlEventKindStr((ptl_event_kind_t)77), "PTL_UNKNOWN_EVENT_KIND"));
    CHECK(!strcmp(PtlNIFailStr(ni, PTL_NI_OK), "PTL_NI_OK"));
    CHECK(!strcmp(PtlNIFailStr(ni, PTL_NI_FAIL), "PTL_NI_FAIL"));
    CHECK(!strcmp(PtlNIFailStr(ni + 1, PTL_NI_OK), "PTL_NI_UNKNOWN_ERROR"));
    CHECK(status_reg(ni, PTL_SR_RECV_COUNT) > 10 && status_reg(ni, PTL_SR_SEND_COUNT) > 10);
    CHECK(status_reg(ni, PTL_SR_RECV_LENGTH) > 0 && status_reg(ni, PTL_SR_SEND_LENGTH) > 0);
    CHECK_EQ(status_reg(ni, PTL_SR_EQS_CUR), 2);
    CHECK_EQ(status_reg(ni, PTL_SR_EQS_MAX), 16);
    CHECK_EQ(status_reg(ni, PTL_SR_MES_CUR), 0);
    CHECK_EQ(status_reg(ni, PTL_SR_MDS_CUR), 0);
    CHECK(status_reg(ni, PTL_SR_MDS_ALLOC) == status_reg(ni, PTL_SR_MDS_FREED));
    CHECK_EQ(status_reg(ni, PTL_SR_MLIST_MAX(0)), 65534);
    ptl_sr_value_t v;
    PCHECK_RC(PtlNIStatus(ni, PTL_SR_MSGS_MAX, &v), PTL_SR_INDEX_INVALID);
    PCHECK_RC(PtlNIStatus(ni, PTL_SR_MLIST_LEN(32), &v), PTL_SR_INDEX_INVALID);
    PCHECK_RC(PtlNIStatus(ni, PTL_SR_DROP_COUNT, NULL), PTL_SEGV);
    CHECK_EQ(PtlNIDebug(ni, PTL_DBG_DROP | PTL_DBG_API), PTL_DBG_NONE);
    PCHECK_RC(PtlMEUnlink(0x4000fffe), PTL_ME_INVALID);      /* printed: PTL_DBG_API */
    CHECK_EQ(PtlNIDebug(ni, PTL_DBG_NONE), PTL_DBG_DROP | PTL_DBG_API);
    CHECK_EQ(PtlNIDebug(ni + 1, PTL_DBG_ALL), PTL_DBG_NONE);
    ptl_handle_me_t m;
    PCHECK(PtlMEAttach(ni, 7, ANY_ID, 0x99, 0, PTL_RETAIN, PTL_INS_AFTER, &m));
    PCHECK(PtlTblDump(ni, -1));
    PCHECK(PtlTblDump(ni, 7));
    PCHECK_RC(PtlTblDump(ni, 32), PTL_PT_INDEX_INVALID);
    PCHECK(PtlMEDump(m));
    PCHECK(PtlNIEqDump(ni));
    PCHECK(PtlProgress(ni, 0));
    PCHECK(PtlProgress(m, 10));
    PCHECK_RC(PtlProgress(0x12345678, 0), PTL_HANDLE_INVALID);
    PCHECK(PtlMEUnlink(m));
    PCHECK_RC(PtlMEDump(m), PTL_ME_INVALID);
}

int main(void)
{
    sntest_rank = 0;
    init_section();
    put_section();
    walk_section();
    nofit_section();
    offsets_section();
    threshold_section();
    ack_section();
    get_section();
    eq_section();
    update_section();
    acl_section();
    getput_section();
    region_iovec_section();
    me_section();
    memdpost_section();
    handler_poll_section();
    misc_section();
    PCHECK(PtlEQFree(eq_t));
    PCHECK(PtlEQFree(eq_i));
    PCHECK(PtlNIFini(ni));
    PCHECK_RC(PtlGetId(ni, &me), PTL_NI_INVALID);
    PtlFini();
    PCHECK_RC(PtlGetId(ni, &me), PTL_NO_INIT);
    PtlFini();                                                /* harmless */
    printf("ptl_basic: ok\n");
    return 0;
}
