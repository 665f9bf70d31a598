/* uGNI core: datagram exchange (digest 5.3 / 9.3).
 * Phases, every rank (n >= 2):
 *  1. bound<->bound with every peer (both directions, simultaneous posts); payload
 *     carries sender and receiver; Wait reports the peer's NIC address and inst_id.
 *  2. bound->unbound wildcard: rank 0 posts on an unbound EP with ids and reaps one
 *     datagram per peer through PostDataProbeById + EpPostDataTestById; peers post bound.
 *  3. two unbound never pair: ranks 0 and 1 post unbound; Wait times out (TIMEOUT,
 *     state PENDING); cancel -> TERMINATED via Test; cancel again -> NO_MATCH.
 *  4. one outstanding per EP (ERROR_RESOURCE), SIZE_ERROR for a too-small out_buf,
 *     Wait timeout 0 -> INVALID_PARAM, EpPostData on unbound -> INVALID_PARAM,
 *     datagram_id -1 -> INVALID_PARAM, data_len > 128 -> SIZE_ERROR, Test with nothing
 *     posted -> NO_MATCH, EpUnbind while a datagram is pending -> NOT_DONE,
 *     PostdataProbeWaitById timeout -> TIMEOUT and both spellings exported. */
#include "gnitest.h"
#include <sys/time.h>

typedef struct { uint32_t from, to, phase, pad; char text[48]; } msg_t;

static double now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return tv.tv_sec * 1e3 + tv.tv_usec / 1e3;
}

int main(int argc, char **argv)
{
    gnit_t t;
    gnit_init(&t, 64);
    gnit_bind_inst_ids(&t);
    int rounds = argc > 1 ? atoi(argv[1]) : 1;
    int me = t.rank, n = t.size;
    gni_post_state_t st;
    uint32_t ra, rid;

    /* 1. bound <-> bound with every peer: post to all (in rotated order, so posts
     *    overlap in every direction), then wait for all. */
    msg_t *outs = calloc(n, sizeof *outs), *ins = calloc(n, sizeof *ins);
    for (int round = 0; round < rounds; round++) {
    for (int k = 1; k < n; k++) {
        int peer = (me + k) % n;
        outs[peer] = (msg_t){ me, peer, 1, 0, "hello" };
        GNI_OK(GNI_EpPostData(t.eps[peer], &outs[peer], sizeof(msg_t), &ins[peer], sizeof(msg_t)));
        GNI_EXPECT(GNI_RC_ERROR_RESOURCE, GNI_EpPostData(t.eps[peer], &outs[peer], sizeof(msg_t), &ins[peer], sizeof(msg_t)));
    }
    for (int k = n - 1; k >= 1; k--) {
        int peer = (me + k) % n;
        GNI_OK(GNI_EpPostDataWait(t.eps[peer], 20000, &st, &ra, &rid));
        CHECK_EQ(st, GNI_POST_COMPLETED);
        CHECK_EQ(ra, t.addrs[peer]);
        CHECK_EQ(rid, peer);
        CHECK_EQ(ins[peer].from, peer);
        CHECK_EQ(ins[peer].to, me);
        CHECK(strcmp(ins[peer].text, "hello") == 0);
        GNI_EXPECT(GNI_RC_NO_MATCH, GNI_EpPostDataTest(t.eps[peer], &st, &ra, &rid));
    }
    }
    CHECK(PMI_Barrier() == PMI_SUCCESS);

    /* 2. bound -> unbound wildcard at rank 0. */
    if (me == 0) {
        gni_ep_handle_t any;
        GNI_OK(GNI_EpCreate(t.nic, NULL, &any));
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpPostData(any, NULL, 0, NULL, 0)); /* unbound needs an id */
        int seen[64] = { 0 };
        for (int k = 1; k < n; k++) {
            msg_t out = { 0, 0xffffffffu, 2, 0, "wild" }, in;
            memset(&in, 0, sizeof in);
            uint64_t id = 1000 + k, got = 0;
            GNI_OK(GNI_EpPostDataWId(any, &out, sizeof out, &in, sizeof in, id));
            if (k == 1) CHECK(PMI_Barrier() == PMI_SUCCESS); /* peers post only now */
            /* Probe until the datagram has finished, then reap it by id. */
            double t0 = now_ms();
            gni_return_t rc;
            while ((rc = GNI_PostDataProbeById(t.nic, &got)) == GNI_RC_NO_MATCH) {
                if (now_ms() - t0 > 20000) SN_FAIL("no datagram arrived on the unbound EP");
                GNI_EXPECT(GNI_RC_SUCCESS, GNI_EpPostDataTestById(any, id, &st, &ra, &rid));
                if (st == GNI_POST_COMPLETED) break;
                CHECK_EQ(st, GNI_POST_PENDING);
            }
            if (rc == GNI_RC_SUCCESS) {
                CHECK_EQ(got, id);
                uint32_t pa, pid;
                GNI_OK(GNI_PostDataProbe(t.nic, &pa, &pid));
                GNI_OK(GNI_EpPostDataTestById(any, id, &st, &ra, &rid));
                CHECK_EQ(pid, rid);
            }
            CHECK_EQ(st, GNI_POST_COMPLETED);
            CHECK(rid > 0 && (int)rid < n && !seen[rid]);
            seen[rid] = 1;
            CHECK_EQ(ra, t.addrs[rid]);
            CHECK_EQ(in.from, rid);
            CHECK_EQ(in.phase, 2);
            GNI_EXPECT(GNI_RC_NO_MATCH, GNI_PostDataProbeById(t.nic, &got));
        }
        GNI_OK(GNI_EpDestroy(any));
    } else {
        CHECK(PMI_Barrier() == PMI_SUCCESS);
        msg_t out = { me, 0, 2, 0, "to wildcard" }, in;
        memset(&in, 0, sizeof in);
        GNI_OK(GNI_EpPostData(t.eps[0], &out, sizeof out, &in, sizeof in));
        GNI_OK(GNI_EpPostDataWait(t.eps[0], (uint32_t)-1, &st, &ra, &rid));
        CHECK_EQ(st, GNI_POST_COMPLETED);
        CHECK_EQ(rid, 0);
        CHECK_EQ(ra, t.addrs[0]);
        CHECK_EQ(in.phase, 2);
        CHECK(strcmp(in.text, "wild") == 0);
    }
    CHECK(PMI_Barrier() == PMI_SUCCESS);

    /* 3. two unbound EPs never pair (ranks 0 and 1), timeouts, cancel. */
    if (me < 2) {
        gni_ep_handle_t u;
        char out[8] = "unbound", in[8];
        GNI_OK(GNI_EpCreate(t.nic, NULL, &u));
        GNI_OK(GNI_EpPostDataWId(u, out, sizeof out, in, sizeof in, 77));
        CHECK(PMI_Barrier() == PMI_SUCCESS);
        double t0 = now_ms();
        st = 99;
        GNI_EXPECT(GNI_RC_TIMEOUT, GNI_EpPostDataWaitById(u, 77, 300, &st, &ra, &rid));
        double el = now_ms() - t0;
        CHECK(el >= 290 && el < 5000);
        CHECK_EQ(st, GNI_POST_PENDING);
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpPostDataWaitById(u, 77, 0, &st, &ra, &rid));
        GNI_EXPECT(GNI_RC_NO_MATCH, GNI_EpPostDataTestById(u, 78, &st, &ra, &rid));
        uint64_t got;
        GNI_EXPECT(GNI_RC_NO_MATCH, GNI_PostDataProbeById(t.nic, &got));
        t0 = now_ms();
        GNI_EXPECT(GNI_RC_TIMEOUT, GNI_PostdataProbeWaitById(t.nic, 100, &got));
        GNI_EXPECT(GNI_RC_TIMEOUT, GNI_PostDataProbeWaitById(t.nic, 100, &got));
        CHECK(now_ms() - t0 >= 190);
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_PostDataProbeWaitById(t.nic, 0, &got));
        GNI_EXPECT(GNI_RC_NO_MATCH, GNI_EpPostDataCancelById(u, 78));
        GNI_OK(GNI_EpPostDataCancelById(u, 77));
        GNI_EXPECT(GNI_RC_NO_MATCH, GNI_EpPostDataCancel(u));
        /* Cancelled: probe-able, then reaped as TERMINATED. */
        GNI_OK(GNI_PostDataProbeById(t.nic, &got));
        CHECK_EQ(got, 77);
        GNI_OK(GNI_EpPostDataTestById(u, 77, &st, &ra, &rid));
        CHECK_EQ(st, GNI_POST_TERMINATED);
        GNI_EXPECT(GNI_RC_NO_MATCH, GNI_EpPostDataTestById(u, 77, &st, &ra, &rid));
        GNI_EXPECT(GNI_RC_NO_MATCH, GNI_PostDataProbeById(t.nic, &got));
        /* The EP can post again after a cancel. */
        GNI_OK(GNI_EpPostDataWId(u, out, sizeof out, in, sizeof in, 79));
        GNI_OK(GNI_EpPostDataCancel(u));
        GNI_OK(GNI_EpDestroy(u));
    } else {
        CHECK(PMI_Barrier() == PMI_SUCCESS);
    }
    CHECK(PMI_Barrier() == PMI_SUCCESS);

    /* 4. bad input and SIZE_ERROR, between ranks 0 and 1. */
    if (me < 2) {
        int peer = 1 - me;
        char big[200], small[4];
        memset(big, 'x', sizeof big);
        GNI_EXPECT(GNI_RC_SIZE_ERROR, GNI_EpPostData(t.eps[peer], big, 129, small, sizeof small));
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpPostDataWId(t.eps[peer], big, 8, small, sizeof small, (uint64_t)-1));
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpPostData(t.eps[peer], NULL, 8, small, sizeof small));
        GNI_EXPECT(GNI_RC_NO_MATCH, GNI_EpPostDataTest(t.eps[peer], &st, &ra, &rid));
        GNI_EXPECT(GNI_RC_NO_MATCH, GNI_EpPostDataWait(t.eps[peer], 10, &st, &ra, &rid));
        GNI_EXPECT(GNI_RC_NO_MATCH, GNI_EpPostDataCancel(t.eps[peer]));
        /* rank 0 sends 64 bytes into rank 1's 4-byte buffer; rank 1 sends 4 bytes. */
        char in0[128];
        if (me == 0) GNI_OK(GNI_EpPostData(t.eps[peer], big, 64, in0, sizeof in0));
        else GNI_OK(GNI_EpPostData(t.eps[peer], "abc", 4, small, sizeof small));
        GNI_EXPECT(GNI_RC_NOT_DONE, GNI_EpUnbind(t.eps[peer]));
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpPostDataWait(t.eps[peer], 0, &st, &ra, &rid));
        GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_EpPostDataWait(t.eps[peer], 100, NULL, &ra, &rid));
        gni_return_t rc = GNI_EpPostDataWait(t.eps[peer], 20000, &st, &ra, &rid);
        if (me == 0) {
            GNI_EXPECT(GNI_RC_SUCCESS, rc);
            CHECK(strcmp(in0, "abc") == 0);
        } else {
            GNI_EXPECT(GNI_RC_SIZE_ERROR, rc);
        }
        CHECK_EQ(st, GNI_POST_COMPLETED);
        CHECK_EQ(rid, peer);
        /* Reaped either way: the EP is free again. */
        GNI_EXPECT(GNI_RC_NO_MATCH, GNI_EpPostDataTest(t.eps[peer], &st, &ra, &rid));
    }
    gnit_fini(&t);
    printf("core_dgram: rank %d ok\n", me);
    return 0;
}
