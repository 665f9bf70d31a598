/* Two concurrent Portals jobs on one machine (c-tests/tools/twojobs; any launcher or none).
 * Job A's rank r attaches an ME (any source, match bits XBITS) with an MD over a canary
 * buffer that accepts puts and gets on portal XPT, and writes its process id (PtlGetId),
 * the portal index and the match bits to a file.  Job B's rank r reads them and does a
 * PtlPut (with an ACK request) and a PtlGet to the id of A's rank r+1 (mod the size) with
 * those bits.  Ids are per job: A's (nid, pid) of rank r+1 names, in job B, B's own rank
 * r+1 (its own id is A's rank r's), which has no ME on that portal, so the requests are
 * dropped there (each B rank counts exactly 2 in its PTL_SR_DROP_COUNT) and never reach
 * A: B's put ends (SEND_END) without an ACK, its get without a reply, its
 * local buffer is untouched, and any event B does get carries no data.  After B is done,
 * A's buffer is all canaries, A's event queue is empty and A's NI received and dropped
 * nothing.
 *
 * "mixed" is the control that shows the checks catch a reach: one job whose first half
 * of the ranks are owners and second half intruders (rank h+r aims at owner (r+1) mod h),
 * so the ids do name the owners: an intruder's put lands in an owner's MD and is acknowledged,
 * and the intruder fails ("an ACK from the other job's id"), which ends the job; its
 * manifest line expects exit 1 and that failure. */
#include "ptest.h"
#include "xjob.h"
#include "pmi.h"

#define LEN 4096
#define XPT 7
#define XBITS 0x5eed0000cafeULL
#define UNSET 0x5a

struct rec { ptl_process_id_t id; uint32_t pt; uint64_t bits; };

int main(int argc, char **argv)
{
    if (argc < 2) SN_FAIL("usage: xjob_portals owner|intruder|mixed");
    int spawned, rank, size, maxif;
    CHECK(PMI_Init(&spawned) == PMI_SUCCESS);
    CHECK(PMI_Get_rank(&rank) == PMI_SUCCESS);
    CHECK(PMI_Get_size(&size) == PMI_SUCCESS);
    sntest_rank = rank;
    int mixed = !strcmp(argv[1], "mixed"), half = size / 2;
    if (mixed && size % 2) SN_FAIL("mixed needs an even number of ranks");
    int owner = mixed ? rank < half : !strcmp(argv[1], "owner");
    int slot = mixed ? rank % half : rank;   /* whose record: a.<slot> */
    ptl_handle_ni_t ni;
    ptl_handle_eq_t eq;
    ptl_process_id_t me;
    PCHECK(PtlInit(&maxif));
    PCHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    PCHECK(PtlGetId(ni, &me));
    PCHECK(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    static uint8_t buf[LEN];
    if (owner) {
        ptl_handle_me_t meh;
        ptl_handle_md_t mdh;
        memset(buf, XJOB_CANARY, LEN);
        PCHECK(PtlMEAttach(ni, XPT, ANY_ID, XBITS, 0, PTL_RETAIN, PTL_INS_AFTER, &meh));
        PCHECK(PtlMDAttach(meh, md_of(buf, LEN, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_OP_GET, eq), PTL_RETAIN, &mdh));
        struct rec r = { me, XPT, XBITS };
        xjob_publish(slot, &r, sizeof r);
        xjob_wait_done(slot);
        if (!xjob_intact(buf, LEN)) SN_FAIL("another job changed our MD's memory");
        expect_empty(eq);
        CHECK_EQ(status_reg(ni, PTL_SR_RECV_COUNT), 0);
        CHECK_EQ(status_reg(ni, PTL_SR_DROP_COUNT), 0);
        PCHECK(PtlMEUnlink(meh));
    } else {
        /* Our slot's record, and the one we aim at: the next rank's, whose id names, in
         * this job, our next rank (ourselves when alone). */
        struct rec own, r;
        int n = mixed ? half : size;
        xjob_learn(slot, &own, sizeof own);
        xjob_learn((slot + 1) % n, &r, sizeof r);
        memset(buf, UNSET, LEN);
        ptl_handle_md_t mdh;
        PCHECK(PtlMDBind(ni, md_of(buf, LEN, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN, &mdh));
        /* The operations are carried out before the calls return: every event they will
         * ever log here is in the queue afterwards. */
        PCHECK(PtlPut(mdh, PTL_ACK_REQ, r.id, r.pt, 0, r.bits, 0, 0));
        PCHECK(PtlGet(mdh, r.id, r.pt, 0, r.bits, 0));
        ptl_event_t ev;
        int rc, sends = 0;
        while ((rc = PtlEQGet(eq, &ev)) == PTL_OK || rc == PTL_EQ_DROPPED) {
            switch (ev.type) {
            case PTL_EVENT_SEND_START:
            case PTL_EVENT_SEND_END:
                sends++;
                break;
            case PTL_EVENT_ACK:
                SN_FAIL("an ACK from the other job's id (ni_fail_type %s, mlength %llu)",
                        PtlNIFailStr(ni, ev.ni_fail_type), (unsigned long long)ev.mlength);
            case PTL_EVENT_REPLY_START:
            case PTL_EVENT_REPLY_END:
                if (ev.ni_fail_type == PTL_NI_OK || ev.mlength != 0)
                    SN_FAIL("%s from the other job's id (ni_fail_type %s, mlength %llu)", PtlEventKindStr(ev.type),
                            PtlNIFailStr(ni, ev.ni_fail_type), (unsigned long long)ev.mlength);
                break;
            default:
                SN_FAIL("unexpected event %s", PtlEventKindStr(ev.type));
            }
        }
        CHECK(sends > 0);
        if (!mixed) {
            /* Ids are per job: A's rank r has the id of our rank r, so the previous rank's
             * two requests came to us, found no ME on the portal and were dropped here. */
            CHECK(own.id.nid == me.nid && own.id.pid == me.pid);
            CHECK(PMI_Barrier() == PMI_SUCCESS);
            CHECK_EQ(status_reg(ni, PTL_SR_DROP_COUNT), 2);
            CHECK_EQ(status_reg(ni, PTL_SR_RECV_COUNT), 0);
        }
        for (int i = 0; i < LEN; i++)
            if (buf[i] != UNSET) SN_FAIL("our get buffer changed at byte %d (0x%02x)", i, buf[i]);
        PCHECK(PtlMDUnlink(mdh));
        xjob_done(slot);
    }
    PCHECK(PtlEQFree(eq));
    PCHECK(PtlNIFini(ni));
    PtlFini();
    PMI_Finalize();
    printf("xjob_portals: %s rank %d ok\n", owner ? "owner" : "intruder", rank);
    return 0;
}
