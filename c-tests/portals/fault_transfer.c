/* Injected network losses (SOFTNIC_FAULTS=transfer:...) as a Portals program's error path
 * sees them.  Every rank makes eight requests to its right neighbour's MD, in turn a put
 * asking for an ack and a get, each on its own 8-byte word; the manifest sets the fault
 * spec and passes its after/every here.  A lost put ends with SEND_END carrying
 * PTL_NI_FAIL and no ack, a lost get with REPLY_END carrying PTL_NI_FAIL; nothing of a
 * lost put lands.  The others succeed, and the retries of the lost ones too.
 *
 *   ptl_fault_transfer AFTER EVERY    (0 0: no faults expected)
 * Prints "ptl_fault_transfer: rank R ok, N requests lost". */
#include "ptest.h"
#include <pmi.h>

#define NOPS 8

static ptl_handle_ni_t ni;
static ptl_handle_eq_t seq;
static ptl_handle_md_t src;
static ptl_process_id_t right;
static uint64_t out[NOPS], in[NOPS];

/* Request i; returns 1 when it failed as a lost one does, 0 when it succeeded. */
static int request(int i)
{
    ptl_event_t ev;
    if (i % 2 == 0) {
        PCHECK(PtlPutRegion(src, 8 * (ptl_size_t)i, 8, PTL_ACK_REQ, right, 3, 0, 1, 8 * (ptl_size_t)i, 0));
        PCHECK(PtlEQWait(seq, &ev));
        CHECK_EQ(ev.type, PTL_EVENT_SEND_END);
        if (ev.ni_fail_type == PTL_NI_FAIL) return 1;
        CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
        PCHECK(PtlEQWait(seq, &ev));
        CHECK_EQ(ev.type, PTL_EVENT_ACK);
        return 0;
    }
    PCHECK(PtlGetRegion(src, 8 * (ptl_size_t)i, 8, right, 3, 0, 1, 8 * (ptl_size_t)i));
    PCHECK(PtlEQWait(seq, &ev));
    CHECK_EQ(ev.type, PTL_EVENT_REPLY_END);
    return ev.ni_fail_type == PTL_NI_FAIL;
}

int main(int argc, char **argv)
{
    int after = argc > 2 ? atoi(argv[1]) : 0, every = argc > 2 ? atoi(argv[2]) : 0;
    pt_job_t j;
    PT_JOB_INIT(&j);
    int rank = j.rank, n = j.n;
    ni = j.ni;
    right = j.right;
    int left = (rank + n - 1) % n;
    PCHECK(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &seq));
    /* The target words: odd ones hold what gets read, even ones receive the puts. */
    for (int i = 0; i < NOPS; i++) in[i] = i % 2 ? 0x20000u * (uint64_t)(rank + 1) + (uint64_t)i : 0;
    ptl_handle_me_t meh;
    PCHECK(PtlMEAttach(ni, 3, ANY_ID, 1, 0, PTL_RETAIN, PTL_INS_AFTER, &meh));
    PCHECK(PtlMDAttach(meh, md_of(in, sizeof in, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_END_DISABLE, PTL_EQ_NONE), PTL_RETAIN, NULL));
    for (int i = 0; i < NOPS; i++) out[i] = i % 2 ? 0 : 0x10000u * (uint64_t)(rank + 1) + (uint64_t)i;
    PCHECK(PtlMDBind(ni, md_of(out, sizeof out, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, seq), PTL_RETAIN, &src));
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    int nlost = 0;
    for (int i = 0; i < NOPS; i++) {
        int failed = request(i);
        if (failed != sn_fault_hits(i, after, every)) SN_FAIL("request %d %s", i, failed ? "failed" : "succeeded");
        nlost += failed;
    }
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    for (int i = 0; i < NOPS; i += 2) {
        uint64_t want = sn_fault_hits(i, after, every) ? 0 : 0x10000u * (uint64_t)(left + 1) + (uint64_t)i;
        if (in[i] != want) SN_FAIL("word %d holds %#lx, expected %#lx", i, (unsigned long)in[i], (unsigned long)want);
    }
    for (int i = 1; i < NOPS; i += 2) {
        uint64_t want = sn_fault_hits(i, after, every) ? 0 : 0x20000u * (uint64_t)(((rank + 1) % n) + 1) + (uint64_t)i;
        if (out[i] != want) SN_FAIL("get %d read %#lx, expected %#lx", i, (unsigned long)out[i], (unsigned long)want);
    }
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    for (int i = 0; i < NOPS; i++)
        if (sn_fault_hits(i, after, every) && request(i)) SN_FAIL("the retry of request %d failed", i);
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    for (int i = 0; i < NOPS; i += 2)
        if (in[i] != 0x10000u * (uint64_t)(left + 1) + (uint64_t)i) SN_FAIL("after the retries word %d holds %#lx", i, (unsigned long)in[i]);
    CHECK_EQ(PMI_Barrier(), PMI_SUCCESS);
    PCHECK(PtlNIFini(ni));
    PtlFini();
    printf("ptl_fault_transfer: rank %d ok, %d requests lost\n", rank, nlost);
    return 0;
}
