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

int main(void)
{
    sntest_rank = 0;
    init_section();
    put_section();
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
