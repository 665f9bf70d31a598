/* The datagram progress thread of real uGNI clients: a thread sleeps in
 * GNI_PostdataProbeWaitById(nic, -1) and serves every finished datagram; to stop it,
 * the main thread posts a datagram to its own instance with a shutdown id and destroys
 * that endpoint.  The cancelled datagram stays visible to the probe until reported,
 * and the destroy wakes the sleeper.  Meanwhile the thread also serves real datagrams:
 * every other rank posts a bound datagram to rank 0, taken by one of its wildcard
 * (unbound) endpoints. */
#include <pthread.h>
#include <unistd.h>
#include "gnitest.h"

#define SHUTDOWN_ID 0xdeadbeefull

static gnit_t t;
static gni_ep_handle_t *wild;   /* rank 0: one unbound endpoint per peer, id = 100 + peer */
static struct { uint32_t from, magic; } *ins, out0;
static int served;

static void *progress(void *arg)
{
    (void)arg;
    for (;;) {
        uint64_t id = 0;
        GNI_OK(GNI_PostdataProbeWaitById(t.nic, (uint32_t)-1, &id));
        if (id == SHUTDOWN_ID) return NULL;
        CHECK(id >= 100 && id < 100 + (uint64_t)t.size);
        /* Any peer's bound post may take any of the wildcards. */
        int k = (int)(id - 100);
        gni_post_state_t st;
        uint32_t ra, rid;
        GNI_OK(GNI_EpPostDataWaitById(wild[k], id, 1000, &st, &ra, &rid));
        CHECK_EQ(st, GNI_POST_COMPLETED);
        CHECK(rid >= 1 && rid < (uint32_t)t.size);
        CHECK_EQ(ins[k].from, rid);
        CHECK_EQ(ins[k].magic, 0x5eed);
        served++;
    }
}

int main(void)
{
    gnit_init(&t, 64);
    gnit_bind_inst_ids(&t);
    int me = t.rank, n = t.size;
    pthread_t th;
    if (me == 0) {
        wild = calloc((size_t)n, sizeof *wild);
        ins = calloc((size_t)n, sizeof *ins);
        CHECK(wild && ins);
        for (int p = 1; p < n; p++) {
            GNI_OK(GNI_EpCreate(t.nic, NULL, &wild[p]));
            GNI_OK(GNI_EpPostDataWId(wild[p], &out0, sizeof out0, &ins[p], sizeof ins[p], 100 + (uint64_t)p));
        }
        CHECK(pthread_create(&th, NULL, progress, NULL) == 0);
    }
    CHECK(PMI_Barrier() == PMI_SUCCESS);
    if (me != 0) {
        struct { uint32_t from, magic; } out = { (uint32_t)me, 0x5eed }, in;
        gni_post_state_t st;
        uint32_t ra, rid;
        GNI_OK(GNI_EpPostData(t.eps[0], &out, sizeof out, &in, sizeof in));
        GNI_OK(GNI_EpPostDataWait(t.eps[0], 10000, &st, &ra, &rid));
        CHECK_EQ(st, GNI_POST_COMPLETED);
        CHECK_EQ(rid, 0);
    }
    CHECK(PMI_Barrier() == PMI_SUCCESS);
    if (me == 0) {
        /* Shut the thread down the way real clients do: post to self, destroy, join. */
        gni_ep_handle_t self;
        char b = 0;
        GNI_OK(GNI_EpCreate(t.nic, NULL, &self));
        GNI_OK(GNI_EpBind(self, t.nic_addr, (uint32_t)me));
        GNI_OK(GNI_EpPostDataWId(self, &b, 1, &b, 1, SHUTDOWN_ID));
        usleep(50000); /* the thread is asleep in the probe by now */
        GNI_OK(GNI_EpDestroy(self));
        CHECK(pthread_join(th, NULL) == 0);
        CHECK_EQ(served, n - 1);
        uint64_t id;
        GNI_EXPECT(GNI_RC_NO_MATCH, GNI_PostDataProbeById(t.nic, &id)); /* reported once, then gone */
        printf("core_dgram_wake: progress thread served %d and stopped\n", served);
        for (int p = 1; p < n; p++) GNI_OK(GNI_EpDestroy(wild[p]));
    }
    printf("core_dgram_wake: rank %d ok\n", me);
    gnit_fini(&t);
    return 0;
}
