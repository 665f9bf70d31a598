/* Flags stored and polled through a remote map with no SISCI call in between, the way
 * many SISCI programs spin: on one machine the map is the owner's memory; on another
 * machine (or with SOFTNIC_ENGINE=net) it is a shadow, and the library's background
 * passes must move the flags both ways (see sisci_api.h).  Ranks pair up (0-1, 2-3, ...);
 * the even rank owns one segment, the odd rank maps it.
 *   1. ping-pong of a counter: the odd rank stores word 0 through its map (no flush) and
 *      spins on word 1 through the same map (no sequence call); the even rank spins on
 *      word 0 and answers in word 1 of its local map;
 *   2. data behind a flag, the documented way: the writer stores 4 KiB, calls
 *      SCIStoreBarrier, stores the flag (no call); the reader, having seen the flag,
 *      calls SCIStartSequence (through a map) before it reads the data;
 *   3. both sides store their own words of one window at once for a while: no side's
 *      stores are undone by the other's (only changed words travel, a refresh never
 *      replaces a word not yet shipped).
 * Usage: sisci_poll [rounds] */
#include "stest.h"

#define SEG_ID 300
#define DATA 4096
#define W_PING 0
#define W_PONG 1
#define W_FLAG_A 2 /* odd -> even, phase 2 */
#define W_FLAG_B 3 /* even -> odd, phase 2 */
#define W_OWN_EVEN 4
#define W_OWN_ODD 5
#define W_DONE_EVEN 6
#define W_DONE_ODD 7
#define OFF_DATA_A 4096
#define OFF_DATA_B 8192
#define SEGSIZE (3 * 4096)

int main(int argc, char **argv)
{
    int rank, size;
    unsigned int *nodes;
    int rounds = argc > 1 ? atoi(argv[1]) : 50;
    OK(SCIInitialize(0, &err));
    st_job(&rank, &size, &nodes);
    if (size % 2) SKIP("needs an even number of ranks");
    int owner = rank % 2 == 0;
    int peer = rank ^ 1;
    int pair = rank / 2;

    sci_desc_t sd;
    sci_local_segment_t ls = NULL;
    sci_remote_segment_t rs = NULL;
    sci_map_t map;
    sci_sequence_t seq;
    volatile uint8_t *m;
    OK(SCIOpen(&sd, 0, &err));
    if (owner) {
        OK(SCICreateSegment(sd, &ls, SEG_ID + pair, SEGSIZE, NULL, NULL, 0, &err));
        m = SCIMapLocalSegment(ls, &map, 0, SEGSIZE, NULL, 0, &err);
        CHECK(err == SCI_ERR_OK && m != NULL);
        OK(SCIPrepareSegment(ls, 0, 0, &err));
        OK(SCISetSegmentAvailable(ls, 0, 0, &err));
    } else {
        rs = st_connect(sd, nodes[peer], SEG_ID + pair, NULL, NULL, 0, 30);
        m = SCIMapRemoteSegment(rs, &map, 0, SEGSIZE, NULL, 0, &err);
        CHECK(err == SCI_ERR_OK && m != NULL);
        OK(SCICreateMapSequence(map, &seq, 0, &err));
    }
    volatile uint64_t *w = (volatile uint64_t *)m;
    CHECK(PMI_Barrier() == PMI_SUCCESS);

    /* 1. Counter ping-pong, no calls at all. */
    double t0 = st_now();
    for (uint64_t i = 1; i <= (uint64_t)rounds; i++) {
        if (owner) {
            st_await(&w[W_PING], i, 20);
            w[W_PONG] = i;
        } else {
            w[W_PING] = i;
            st_await(&w[W_PONG], i, 20);
        }
    }
    double t1 = st_now();

    /* 2. Data behind a flag, both directions. */
    for (uint64_t i = 1; i <= 5; i++) {
        if (owner) {
            st_await(&w[W_FLAG_A], i, 20);
            for (int k = 0; k < DATA; k++)
                if (m[OFF_DATA_A + k] != (uint8_t)(i * 7 + k)) SN_FAIL("phase 2 round %llu: odd's byte %d", (unsigned long long)i, k);
            for (int k = 0; k < DATA; k++) m[OFF_DATA_B + k] = (uint8_t)(i * 11 + k);
            w[W_FLAG_B] = i; /* our own memory: nothing to ship */
        } else {
            for (int k = 0; k < DATA; k++) m[OFF_DATA_A + k] = (uint8_t)(i * 7 + k);
            SCIStoreBarrier(seq, 0);
            w[W_FLAG_A] = i;
            st_await(&w[W_FLAG_B], i, 20);
            CHECK_EQ(SCIStartSequence(seq, 0, &err), SCI_SEQ_OK);
            for (int k = 0; k < DATA; k++)
                if (m[OFF_DATA_B + k] != (uint8_t)(i * 11 + k)) SN_FAIL("phase 2 round %llu: even's byte %d", (unsigned long long)i, k);
        }
    }

    /* 3. Both store their own words of the window at once; each watches the other's
     * count grow and ends with the other's last value, its own never undone. */
    uint64_t n = (uint64_t)rounds * 20;
    volatile uint64_t *mine = &w[owner ? W_OWN_EVEN : W_OWN_ODD];
    volatile uint64_t *theirs = &w[owner ? W_OWN_ODD : W_OWN_EVEN];
    uint64_t seen = 0;
    for (uint64_t i = 1; i <= n; i++) {
        *mine = i;
        uint64_t t = *theirs;
        if (t < seen) SN_FAIL("phase 3: the other side's count went back from %llu to %llu", (unsigned long long)seen, (unsigned long long)t);
        seen = t;
        if (*mine != i) SN_FAIL("phase 3: our store %llu was replaced by %llu", (unsigned long long)i, (unsigned long long)*mine);
        if (i % 64 == 0) usleep(100);
    }
    w[owner ? W_DONE_EVEN : W_DONE_ODD] = 1;
    st_await(&w[owner ? W_DONE_ODD : W_DONE_EVEN], 1, 20);
    st_await(theirs, n, 20);
    CHECK_EQ(*mine, n);
    CHECK(PMI_Barrier() == PMI_SUCCESS);
    if (owner) CHECK_EQ(*mine, n); /* what the owner holds in the end */

    CHECK(PMI_Barrier() == PMI_SUCCESS);
    if (owner) {
        OK(SCIUnmapSegment(map, 0, &err));
        OK(SCISetSegmentUnavailable(ls, 0, 0, &err));
        /* Wait for the peer to disconnect before removing. */
        unsigned int from;
        sci_segment_cb_reason_t why;
        do {
            why = SCIWaitForLocalSegmentEvent(ls, &from, NULL, 10000, 0, &err);
            CHECK_EQ(err, SCI_ERR_OK);
        } while (why != SCI_CB_DISCONNECT);
        OK(SCIRemoveSegment(ls, 0, &err));
    } else {
        OK(SCIRemoveSequence(seq, 0, &err));
        OK(SCIUnmapSegment(map, 0, &err));
        OK(SCIDisconnectSegment(rs, 0, &err));
    }
    OK(SCIClose(sd, 0, &err));
    SCITerminate();
    printf("sisci_poll: rank %d of %d ok (%d rounds, %.1f us per round trip)\n", rank, size, rounds, (t1 - t0) / rounds * 1e6);
    PMI_Finalize();
    return 0;
}
