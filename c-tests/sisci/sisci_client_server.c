/* Two programs started without a launcher, as SISCI users run them: the node id comes
 * from SOFTNIC_SISCI_NODE_ID, the peer's on the command line.
 *   SOFTNIC_SISCI_NODE_ID=4 sisci_client_server server 8
 *   SOFTNIC_SISCI_NODE_ID=8 sisci_client_server client 4
 * The client may start first: it retries its connects until the server exports.  The
 * server exports segment 4000 and data interrupt 4000; the client writes a request
 * through its map, triggers the data interrupt with the request's length, and waits on
 * its own segment 4001 for the reply, which the server writes with SCIMemCpy.
 * Processes started by hand form one job only when given the same SOFTNIC_JOB_SECRET;
 * with "nojob" the client checks that it, another job, never finds the segment. */
#include "stest.h"

int main(int argc, char **argv)
{
    if (argc < 3) SKIP("usage: sisci_client_server server|client PEER_NODE");
    int server = strcmp(argv[1], "server") == 0;
    unsigned int peer = (unsigned)atoi(argv[2]), me;
    sci_desc_t sd;
    sci_local_segment_t ls;
    sci_map_t lm, rm;
    OK(SCIInitialize(0, &err));
    OK(SCIOpen(&sd, 0, &err));
    OK(SCIGetLocalNodeId(0, &me, 0, &err));
    unsigned int mine = server ? 4000 : 4001, theirs = server ? 4001 : 4000;
    OK(SCICreateSegment(sd, &ls, mine, 4096, NULL, NULL, 0, &err));
    volatile char *in = SCIMapLocalSegment(ls, &lm, 0, 4096, NULL, 0, &err);
    OK(SCIPrepareSegment(ls, 0, 0, &err));
    OK(SCISetSegmentAvailable(ls, 0, 0, &err));
    sci_local_data_interrupt_t ld;
    unsigned int no = 4000;
    if (server) OK(SCICreateDataInterrupt(sd, &ld, 0, &no, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));
    if (!server && argc > 3 && !strcmp(argv[3], "nojob")) {
        /* Started as another job (no shared SOFTNIC_JOB_SECRET): for 3 s, while the
         * server exports, its segment is never found. */
        sci_remote_segment_t rs;
        double end = st_now() + 3;
        while (st_now() < end) {
            SCIConnectSegment(sd, &rs, peer, theirs, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err);
            CHECK_EQ(err, SCI_ERR_NO_SUCH_SEGMENT);
            usleep(10000);
        }
        printf("client (node %u): no segment on node %u (another job)\n", me, peer);
        return 0;
    }
    sci_remote_segment_t rs = st_connect(sd, peer, theirs, NULL, NULL, 0, 60);
    volatile char *out = SCIMapRemoteSegment(rs, &rm, 0, 4096, NULL, 0, &err);
    CHECK_EQ(err, SCI_ERR_OK);
    sci_sequence_t seq;
    OK(SCICreateMapSequence(rm, &seq, 0, &err));
    if (server) {
        unsigned int len = 0, cap = sizeof len;
        OK(SCIWaitForDataInterrupt(ld, &len, &cap, 60000, 0, &err));
        char reply[256];
        snprintf(reply, sizeof reply, "node %u heard: %.*s", me, (int)len, (const char *)in);
        OK(SCIMemCpy(seq, reply, rm, 0, strlen(reply) + 1, 0, &err));
        /* Wait until the client has read it and gone. */
        sci_segment_cb_reason_t why;
        do why = SCIWaitForLocalSegmentEvent(ls, NULL, NULL, 60000, 0, &err); while (err == SCI_ERR_OK && why != SCI_CB_DISCONNECT);
        CHECK_EQ(err, SCI_ERR_OK);
        printf("server (node %u): replied to node %u\n", me, peer);
    } else {
        sci_remote_data_interrupt_t rd = st_connect_dint(sd, peer, 4000, 0, 60);
        char req[64];
        snprintf(req, sizeof req, "hello from node %u", me);
        memcpy((void *)out, req, strlen(req));
        SCIStoreBarrier(seq, 0);
        unsigned int len = (unsigned)strlen(req);
        OK(SCITriggerDataInterrupt(rd, &len, sizeof len, 0, &err));
        double end = st_now() + 60;
        while (in[0] == 0) { if (st_now() > end) SN_FAIL("no reply"); usleep(100); }
        usleep(1000);
        printf("client (node %u): %s\n", me, (const char *)in);
        OK(SCIDisconnectDataInterrupt(rd, 0, &err));
    }
    OK(SCIRemoveSequence(seq, 0, &err));
    OK(SCIUnmapSegment(rm, 0, &err));
    OK(SCIDisconnectSegment(rs, 0, &err));
    return 0;   /* no teardown of our own segment: programs that just exit are fine */
}
