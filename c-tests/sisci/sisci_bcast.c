/* Reflective memory with the nodes spread over machines (virtual hosts), written the way
 * reflective-memory programs are: every node creates broadcast segment 970 (its first
 * rank does; the node-wide id lets only one), every rank connects to the group
 * (DIS_BROADCAST_NODEID_GROUP_ALL), maps it with SCI_FLAG_BROADCAST and keeps a
 * sequence on the map.
 *  1. Each round every rank writes its own words through its broadcast map and with a
 *     broadcast DMA from program memory, then SCIStoreBarrier; after a PMI barrier and
 *     SCIStartSequence every rank sees every rank's words (through the broadcast map,
 *     and members also through their local map, their node's own copy).  A member's
 *     store through its local map stays in its copy: no other member, and no broadcast
 *     map, ever sees it.
 *  2. Each round one rank writes a data block, SCIStoreBarrier, then a flag, and makes
 *     no further call; the others poll the flag with plain loads, then SCIStartSequence
 *     and find the whole block.
 *  3. (Node ids of the launcher's numbering.)  Each round one rank writes a block and
 *     triggers every other rank's interrupt, with no other call; each finds the block
 *     as soon as SCIWaitForInterrupt returns (an interrupt never overtakes the data).
 * Usage: sisci_bcast [rounds] [nomember|die|dielast]
 *   nomember: the last node has no member (its ranks write through the hub's copy).
 *   die:      the first node's segment is made first (its machine's mirror is the hub),
 *             then, after the rounds, every process on rank 0's machine ends; the others
 *             carry on: each writes one more word and all of them see all of them.
 *   dielast:  the same with the processes of the last rank's machine (not the hub's). */
#include "stest.h"
#include <signal.h>

#define SEG 970
#define SIZE 65536
#define SLOT(r) (16 * (size_t)(r))        /* a rank's 16 words */
#define FLAG (4096 + 1024)                /* the flag word, after its data block */
#define DATA 4096                         /* 1024 words of data */
#define DATA2 2048                        /* 512 words: data behind an interrupt */
#define DIEW 6144                       /* survivors' words */
#define ACKW 7168
#define PRIV 7680                         /* members' private words (in their own copy) */

static uint64_t val(int round, int rank, int k) { return (uint64_t)round << 40 | (uint64_t)rank << 16 | (uint64_t)k; }

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 10;
    const char *mode = argc > 2 ? argv[2] : "";
    int nomember = strcmp(mode, "nomember") == 0, dielast = strcmp(mode, "dielast") == 0;
    int die = dielast || strcmp(mode, "die") == 0;
    int rank, size;
    unsigned int *nodes;
    OK(SCIInitialize(0, &err));
    st_job(&rank, &size, &nodes);
    sci_desc_t sd;
    OK(SCIOpen(&sd, 0, &err));

    /* Machines by host name (virtual hosts have their own). */
    char host[64] = { 0 }, *hosts = calloc((size_t)size, sizeof host);
    gethostname(host, sizeof host - 1);
    CHECK(PMI_Allgather(host, hosts, sizeof host) == PMI_SUCCESS);
    int nhosts = 0;
    for (int q = 0; q < size; q++) {
        int seen = 0;
        for (int p = 0; p < q; p++) seen |= strcmp(hosts + 64 * p, hosts + 64 * q) == 0;
        nhosts += !seen;
    }

    /* Members: the first rank of every node (not the last node's with "nomember"). */
    int first = rank == 0 || nodes[rank - 1] != nodes[rank];
    int member = first && !(nomember && nodes[rank] == nodes[size - 1] && nodes[0] != nodes[size - 1]);
    sci_local_segment_t ls;
    sci_map_t lm;
    volatile uint64_t *loc = NULL;
    for (int turn = 0; turn < 2; turn++) {
        /* die: node of rank 0 first, so its machine's mirror is the oldest (the hub). */
        int mine_now = die && !dielast ? (turn == 0) == (nodes[rank] == nodes[0]) : turn == 0;
        if (member && mine_now) {
            OK(SCICreateSegment(sd, &ls, SEG, SIZE, NULL, NULL, SCI_FLAG_BROADCAST, &err));
            loc = SCIMapLocalSegment(ls, &lm, 0, SIZE, NULL, 0, &err);
            CHECK_EQ(err, SCI_ERR_OK);
            OK(SCIPrepareSegment(ls, 0, 0, &err));
            OK(SCISetSegmentAvailable(ls, 0, 0, &err));
        }
        if (die && !dielast) PMI_Barrier();
    }
    PMI_Barrier();
    sci_remote_segment_t all;
    double end = st_now() + 30;
    for (;;) {
        SCIConnectSegment(sd, &all, DIS_BROADCAST_NODEID_GROUP_ALL, SEG, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, SCI_FLAG_BROADCAST, &err);
        if (err == SCI_ERR_OK) break;
        if (err != SCI_ERR_NO_SUCH_SEGMENT || st_now() > end) SN_FAIL("connect to the group: %s", SCIGetErrorString(err));
        usleep(1000);
    }
    CHECK_EQ(SCIGetRemoteSegmentSize(all), (size_t)SIZE);
    sci_map_t bm;
    volatile uint64_t *w = SCIMapRemoteSegment(all, &bm, 0, SIZE, NULL, SCI_FLAG_BROADCAST, &err);
    CHECK_EQ(err, SCI_ERR_OK);
    sci_sequence_t seq;
    OK(SCICreateMapSequence(bm, &seq, 0, &err));
    sci_dma_queue_t dq;
    OK(SCICreateDMAQueue(sd, &dq, 0, 1, 0, &err));
    PMI_Barrier();

    /* 1. Everybody's words, by PIO and by broadcast DMA. */
    uint64_t block[8];
    for (int r = 1; r <= rounds; r++) {
        for (int k = 0; k < 8; k++) w[SLOT(rank) + (size_t)k] = val(r, rank, k);
        for (int k = 0; k < 8; k++) block[k] = val(r, rank, 8 + k);
        if (loc) loc[PRIV + rank] = val(r, rank, 99);
        OK(SCIStartDmaTransferMem(dq, block, all, sizeof block, (SLOT(rank) + 8) * 8, NULL, NULL, SCI_FLAG_BROADCAST, &err));
        CHECK_EQ(SCIWaitForDMAQueue(dq, 10000, 0, &err), SCI_DMAQUEUE_DONE);
        SCIStoreBarrier(seq, 0);
        PMI_Barrier();
        CHECK_EQ(SCIStartSequence(seq, 0, &err), SCI_SEQ_OK);
        for (int q = 0; q < size; q++)
            for (int k = 0; k < 16; k++) {
                if (w[SLOT(q) + (size_t)k] != val(r, q, k))
                    SN_FAIL("round %d: word %d of rank %d is %#llx through the broadcast map", r, k, q, (unsigned long long)w[SLOT(q) + (size_t)k]);
                if (loc && loc[SLOT(q) + (size_t)k] != val(r, q, k))
                    SN_FAIL("round %d: word %d of rank %d is %#llx in the local segment", r, k, q, (unsigned long long)loc[SLOT(q) + (size_t)k]);
            }
        for (int q = 0; q < size; q++) {
            if (w[PRIV + q] != 0)
                SN_FAIL("round %d: rank %d's private word reached the group (%#llx)", r, q, (unsigned long long)w[PRIV + q]);
            if (loc && loc[PRIV + q] != (q == rank ? val(r, rank, 99) : 0))
                SN_FAIL("round %d: rank %d's private word is %#llx in our copy", r, q, (unsigned long long)loc[PRIV + q]);
        }
        PMI_Barrier();
    }

    /* 2. Data, store barrier, flag; readers poll the flag with no SISCI call. */
    for (int r = 1; r <= rounds; r++) {
        int writer = r % size;
        if (rank == writer) {
            for (int i = 0; i < 1024; i++) w[DATA + i] = val(r, writer, i);
            SCIStoreBarrier(seq, 0);
            w[FLAG] = (uint64_t)r;
        } else {
            end = st_now() + 20;
            while (w[FLAG] != (uint64_t)r) {
                if (st_now() > end) SN_FAIL("round %d: flag is %llu after 20 s", r, (unsigned long long)w[FLAG]);
                sched_yield();
            }
            CHECK_EQ(SCIStartSequence(seq, 0, &err), SCI_SEQ_OK);
            for (int i = 0; i < 1024; i++)
                if (w[DATA + i] != val(r, writer, i))
                    SN_FAIL("round %d: flag seen, data word %d is %#llx", r, i, (unsigned long long)w[DATA + i]);
        }
        PMI_Barrier();
    }

    /* 3. Data, then interrupts; the receivers read at once. */
    int standard = 1;
    for (int q = 0; q < size; q++) standard &= nodes[q] % 4 == 0 && nodes[q] <= 248;
    sci_local_interrupt_t li;
    sci_remote_interrupt_t *ri = calloc((size_t)size, sizeof *ri);
    if (standard) {
        unsigned int no = 600 + (unsigned)rank;
        OK(SCICreateInterrupt(sd, &li, 0, &no, NULL, NULL, SCI_FLAG_FIXED_INTNO, &err));
        PMI_Barrier();
        for (int q = 0; q < size; q++)
            if (q != rank) ri[q] = st_connect_int(sd, nodes[q], 600 + (unsigned)q, 0, 30);
        PMI_Barrier();
        for (int r = 1; r <= rounds; r++) {
            int writer = (r + 1) % size;
            if (rank == writer) {
                for (int i = 0; i < 512; i++) w[DATA2 + i] = val(r, writer, 2000 + i);
                for (int q = 0; q < size; q++)
                    if (q != rank) OK(SCITriggerInterrupt(ri[q], 0, &err));
            } else {
                OK(SCIWaitForInterrupt(li, 20000, 0, &err));
                for (int i = 0; i < 512; i++)
                    if (w[DATA2 + i] != val(r, writer, 2000 + i))
                        SN_FAIL("round %d: interrupt from rank %d seen, data word %d is %#llx", r, writer, i, (unsigned long long)w[DATA2 + i]);
            }
            PMI_Barrier();
        }
    }

    if (die) {
        /* Every process on the victim's machine ends (rank 0's: the hub's; or the last
         * rank's); the others carry on. */
        const char *victim = hosts + 64 * (dielast ? size - 1 : 0);
        if (strcmp(host, victim) == 0) {
            printf("sisci_bcast: rank %d of %d on %s ends now\n", rank, size, host);
            fflush(stdout);
            PMI_Finalize();
            _exit(0);
        }
        int survivors = 0;
        for (int q = 0; q < size; q++) survivors += strcmp(hosts + 64 * q, victim) != 0;
        /* Once they are gone (what only the hub held when it ended is lost). */
        usleep(500000);
        w[DIEW + rank] = 0xdead0000u + (unsigned)rank;
        SCIStoreBarrier(seq, 0);
        /* Wait until every survivor's word is here, then say so (ACK), and stay until
         * every survivor said so: the last copies standing keep each other in step. */
        for (int phase = 0; phase < 2; phase++) {
            end = st_now() + 40;
            for (;;) {
                /* PENDING while the group finds its next hub: programs start again. */
                sci_sequence_status_t st = SCIStartSequence(seq, 0, &err);
                if (st == SCI_SEQ_PENDING && st_now() < end) continue;
                CHECK_EQ(st, SCI_SEQ_OK);
                int seen = 0, missing = -1;
                for (int q = 0; q < size; q++)
                    if (strcmp(hosts + 64 * q, victim) != 0) {
                        int ok = phase == 0 ? w[DIEW + q] == 0xdead0000u + (unsigned)q : w[ACKW + q] == 1;
                        seen += ok;
                        if (!ok) missing = q;
                    }
                if (seen == survivors) break;
                if (st_now() > end) SN_FAIL("phase %d: %d of %d survivors seen after 40 s (not rank %d's)", phase, seen, survivors, missing);
                usleep(2000);
            }
            if (phase == 0) {
                w[ACKW + rank] = 1;
                SCIStoreBarrier(seq, 0);
            }
        }
        /* Stay a while, so that the others see our acknowledgement too. */
        usleep(1500000);
        printf("sisci_bcast: rank %d of %d ok (%d survivors on %d hosts)\n", rank, size, survivors, nhosts);
        fflush(stdout);
        /* No teardown: a program that never cleans up. */
        PMI_Finalize();
        return 0;
    }

    if (standard) {
        for (int q = 0; q < size; q++)
            if (q != rank) OK(SCIDisconnectInterrupt(ri[q], 0, &err));
        PMI_Barrier();
        OK(SCIRemoveInterrupt(li, 0, &err));
    }
    OK(SCIRemoveDMAQueue(dq, 0, &err));
    OK(SCIRemoveSequence(seq, 0, &err));
    OK(SCIUnmapSegment(bm, 0, &err));
    OK(SCIDisconnectSegment(all, 0, &err));
    PMI_Barrier();
    if (loc) {
        OK(SCIUnmapSegment(lm, 0, &err));
        OK(SCIRemoveSegment(ls, 0, &err));
    }
    OK(SCIClose(sd, 0, &err));
    printf("sisci_bcast: rank %d of %d ok (node %u, %d hosts, %d rounds%s)\n", rank, size, nodes[rank], nhosts, rounds, member ? ", member" : "");
    PMI_Finalize();
    return 0;
}
