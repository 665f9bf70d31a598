/* Two concurrent SISCI jobs on one machine (c-tests/tools/twojobs; any launcher or none).
 * Job A's rank r creates segment XSEG+r, prepares it, fills it with canaries and makes it
 * available, creates an interrupt and a data interrupt with fixed numbers, and writes its
 * node id (from the launcher: the ranks of one node share it, and job B's ranks have the
 * same ones), the segment id and the interrupt numbers to a file.  Job B's rank r reads
 * them: SCIConnectSegment to A's node and segment id is SCI_ERR_NO_SUCH_SEGMENT (one
 * attempt, however often retried), and SCIConnectInterrupt / SCIConnectDataInterrupt to
 * A's interrupt numbers are SCI_ERR_NO_SUCH_INTNO: segments and interrupts are found only
 * by processes of the owner's job (include/sisci_api.h, "Jobs").  The segment id is free
 * in job B: B creates a segment of that id on its node and connects to it through A's
 * (node, segment id), reaching its own bytes, not A's.  After B is done, A's
 * segment is all canaries and neither interrupt has fired (a 1 ms wait times out).
 *
 * "mixed" is the control that shows the checks catch a reach: one job whose first half
 * of the ranks are owners and second half intruders (rank h+r learns rank r's record), so
 * the ids do name the owners' segments: an intruder's SCIConnectSegment succeeds and it
 * fails, which ends the job; its manifest line expects exit 1 and that failure.  (Two
 * jobs given the same SOFTNIC_JOB_SECRET by hand fail the same way.) */
#include "stest.h"
#include "xjob.h"

#define LEN 4096
#define XSEG 4100
#define XINT 41
#define XDINT 42

struct rec { uint32_t node, seg, intno, dintno; };

int main(int argc, char **argv)
{
    if (argc < 2) SN_FAIL("usage: xjob_sisci owner|intruder|mixed");
    int rank, size;
    unsigned int *nodes;
    OK(SCIInitialize(0, &err));
    st_job(&rank, &size, &nodes);
    int mixed = !strcmp(argv[1], "mixed"), half = size / 2;
    if (mixed && size % 2) SN_FAIL("mixed needs an even number of ranks");
    int owner = mixed ? rank < half : !strcmp(argv[1], "owner");
    int slot = mixed ? rank % half : rank;   /* whose record: a.<slot> */
    sci_desc_t sd;
    OK(SCIOpen(&sd, 0, &err));
    if (owner) {
        sci_local_segment_t seg;
        sci_map_t map;
        sci_local_interrupt_t li;
        sci_local_data_interrupt_t ldi;
        struct rec r = { nodes[rank], XSEG + (uint32_t)slot, XINT + 2u * (uint32_t)slot, XDINT + 2u * (uint32_t)slot };
        OK(SCICreateSegment(sd, &seg, r.seg, LEN, NULL, NULL, 0, &err));
        OK(SCIPrepareSegment(seg, 0, 0, &err));
        volatile uint8_t *p;
        OK(p = SCIMapLocalSegment(seg, &map, 0, LEN, NULL, 0, &err));
        memset((void *)p, XJOB_CANARY, LEN);
        OK(SCISetSegmentAvailable(seg, 0, 0, &err));
        unsigned int no = r.intno, dno = r.dintno;
        OK(SCICreateInterrupt(sd, &li, 0, &no, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));
        OK(SCICreateDataInterrupt(sd, &ldi, 0, &dno, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));
        xjob_publish(slot, &r, sizeof r);
        xjob_wait_done(slot);
        if (!xjob_intact((const void *)p, LEN)) SN_FAIL("another job changed our segment");
        FAILS(SCI_ERR_TIMEOUT, SCIWaitForInterrupt(li, 1, 0, &err));
        uint8_t got[64];
        unsigned int len = sizeof got;
        FAILS(SCI_ERR_TIMEOUT, SCIWaitForDataInterrupt(ldi, got, &len, 1, 0, &err));
        OK(SCIRemoveDataInterrupt(ldi, 0, &err));
        OK(SCIRemoveInterrupt(li, 0, &err));
        OK(SCISetSegmentUnavailable(seg, 0, 0, &err));
        OK(SCIUnmapSegment(map, 0, &err));
        OK(SCIRemoveSegment(seg, 0, &err));
    } else {
        struct rec r;
        xjob_learn(slot, &r, sizeof r);
        sci_remote_segment_t rs;
        sci_remote_interrupt_t ri;
        sci_remote_data_interrupt_t rdi;
        /* The id names a node of this job too: only the job's own segments are there. */
        for (int i = 0; i < 3; i++)
            FAILS(SCI_ERR_NO_SUCH_SEGMENT, SCIConnectSegment(sd, &rs, r.node, r.seg, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err));
        FAILS(SCI_ERR_NO_SUCH_INTNO, SCIConnectInterrupt(sd, &ri, r.node, 0, r.intno, SCI_INFINITE_TIMEOUT, 0, &err));
        FAILS(SCI_ERR_NO_SUCH_INTNO, SCIConnectDataInterrupt(sd, &rdi, r.node, 0, r.dintno, SCI_INFINITE_TIMEOUT, 0, &err));
        /* The id is free in this job: our own segment of that id is what it names here. */
        sci_local_segment_t own;
        sci_map_t lmap, rmap;
        OK(SCICreateSegment(sd, &own, r.seg, LEN, NULL, NULL, 0, &err));
        OK(SCIPrepareSegment(own, 0, 0, &err));
        void *lp;
        OK(lp = SCIMapLocalSegment(own, &lmap, 0, LEN, NULL, 0, &err));
        memset(lp, 0x3c, LEN);
        OK(SCISetSegmentAvailable(own, 0, 0, &err));
        OK(SCIConnectSegment(sd, &rs, r.node, r.seg, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err));
        volatile uint8_t *rp;
        OK(rp = SCIMapRemoteSegment(rs, &rmap, 0, LEN, NULL, 0, &err));
        for (int i = 0; i < LEN; i++)
            if (rp[i] != 0x3c) SN_FAIL("segment %u of node %u holds 0x%02x at %d, not our own bytes", r.seg, r.node, rp[i], i);
        OK(SCIUnmapSegment(rmap, 0, &err));
        OK(SCIDisconnectSegment(rs, 0, &err));
        OK(SCISetSegmentUnavailable(own, 0, 0, &err));
        OK(SCIUnmapSegment(lmap, 0, &err));
        OK(SCIRemoveSegment(own, 0, &err));
        xjob_done(slot);
    }
    OK(SCIClose(sd, 0, &err));
    SCITerminate();
    free(nodes);
    PMI_Finalize();
    printf("xjob_sisci: %s rank %d ok\n", owner ? "owner" : "intruder", rank);
    return 0;
}
