/* Watcher threads blocked in uGNI's blocking calls, cancelled as programs do at exit
 * (deferred and asynchronous), while the rest of the job goes on:
 * GNI_CqWaitEvent, GNI_CqVectorWaitEvent, GNI_CqVectorMonitor, GNI_PostdataProbeWaitById,
 * GNI_EpPostDataWaitById, GNI_WaitErrorEvents and GNI_MsgqProgress, each cancelled at once, soon and long
 * after it went to sleep, plus threads calling GNI_CqWaitEvent with short timeouts in a
 * loop (cancelled wherever they are).  Afterwards every rank takes a remote event that its
 * left neighbour's put produced on the CQ the watchers slept on (a waiter count left
 * behind, a lock left held or a half-taken entry would show here), a second waiter whose
 * neighbour was cancelled still gets its event, the datagram a cancelled thread waited for
 * can be cancelled, the error subscription a cancelled thread waited on can be released
 * (its waiter count came back), and the MSGQ a cancelled thread progressed is released.
 * Usage: cancel_wait [rounds] */
#include <pthread.h>
#include "gnitest.h"
#include "data_util.h"
#include "canceltest.h"

static gnit_t T;
static gni_cq_handle_t RCQ;       /* remote events of `buf` */
static gni_err_handle_t ERR;

static void wait_rcq(void *a)
{
    gni_cq_entry_t ev;
    gni_return_t rc = GNI_CqWaitEvent(RCQ, (uint64_t)-1, &ev);
    SN_FAIL("GNI_CqWaitEvent returned %d with nothing sent", (int)rc);
}

static void wait_rcq_short(void *a)
{
    gni_cq_entry_t ev;
    gni_return_t rc = GNI_CqWaitEvent(RCQ, (uint64_t)(uintptr_t)a, &ev);
    if (rc != GNI_RC_TIMEOUT) SN_FAIL("GNI_CqWaitEvent(%lu ms) returned %d", (unsigned long)(uintptr_t)a, (int)rc);
}

static void vector_wait(void *a)
{
    gni_cq_handle_t cqs[2] = { RCQ, T.cq };
    gni_cq_entry_t ev;
    uint32_t which;
    gni_return_t rc = GNI_CqVectorWaitEvent(cqs, 2, (uint64_t)-1, &ev, &which);
    SN_FAIL("GNI_CqVectorWaitEvent returned %d with nothing sent", (int)rc);
}

static void vector_monitor(void *a)
{
    gni_cq_handle_t cqs[2] = { T.cq, RCQ };
    uint32_t which;
    gni_return_t rc = GNI_CqVectorMonitor(cqs, 2, (uint64_t)-1, &which);
    SN_FAIL("GNI_CqVectorMonitor returned %d with nothing sent", (int)rc);
}

static void probe_wait(void *a)
{
    uint64_t id;
    gni_return_t rc = GNI_PostdataProbeWaitById(T.nic, (uint32_t)-1, &id);
    SN_FAIL("GNI_PostdataProbeWaitById returned %d with no datagram", (int)rc);
}

static gni_ep_handle_t DG_EP;
#define DG_ID 0x5eedULL

static void datagram_wait(void *a)
{
    gni_post_state_t st;
    uint32_t ra, rid;
    gni_return_t rc = GNI_EpPostDataWaitById(DG_EP, DG_ID, (uint32_t)-1, &st, &ra, &rid);
    SN_FAIL("GNI_EpPostDataWaitById returned %d with no partner", (int)rc);
}

static void error_wait(void *a)
{
    gni_error_event_t evs[4];
    uint32_t n;
    gni_return_t rc = GNI_WaitErrorEvents(ERR, evs, 4, 0, &n);
    SN_FAIL("GNI_WaitErrorEvents returned %d with no error", (int)rc);
}

static gni_msgq_handle_t MSGQ;

static int msgq_rcv(uint32_t snd_id, uint32_t snd_pe, void *msg, uint8_t tag, void *cb_data)
{
    SN_FAIL("a MSGQ message arrived with nothing sent");
    return 0;
}

static void msgq_progress(void *a)
{
    gni_return_t rc = GNI_MsgqProgress(MSGQ, (uint32_t)-1);
    SN_FAIL("GNI_MsgqProgress returned %d with nothing sent", (int)rc);
}

typedef struct { atomic_int got; gni_cq_entry_t ev; } second_t;

static void *second_waiter(void *p)
{
    second_t *s = p;
    gni_cq_entry_t ev;
    gni_return_t rc = GNI_CqWaitEvent(RCQ, 20000, &ev);
    if (rc != GNI_RC_SUCCESS) SN_FAIL("the waiter beside a cancelled one: GNI_CqWaitEvent returned %d", (int)rc);
    s->ev = ev;
    atomic_store(&s->got, 1);
    return NULL;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 10;
    gnit_init(&T, 64);
    int right = (T.rank + 1) % T.size, left = (T.rank + T.size - 1) % T.size;
    GNI_OK(GNI_CqCreate(T.nic, 64, 0, GNI_CQ_BLOCKING, NULL, NULL, &RCQ));
    uint64_t *buf = dt_alloc(4096);
    gni_mem_handle_t mh = dt_reg(&T, buf, 4096, RCQ, GNI_MEM_READWRITE);
    gni_mem_handle_t *mhs = calloc(T.size, sizeof(*mhs));
    uint64_t *bases = calloc(T.size, sizeof(*bases));
    gnit_exchange_mem(&T, buf, mh, mhs, bases);
    GNI_OK(GNI_SubscribeErrors(T.nic, 0, GNI_ERRMASK_TRANSACTION, 16, &ERR));
    /* A datagram to the right neighbour's inst_id that it never answers. */
    GNI_OK(GNI_EpCreate(T.nic, T.cq, &DG_EP));
    GNI_OK(GNI_EpBind(DG_EP, T.addrs[right], 1000000 + right));
    uint64_t dg_in[4] = { 1, 2, 3, 4 }, dg_out[4];
    GNI_OK(GNI_EpPostDataWId(DG_EP, dg_in, sizeof(dg_in), dg_out, sizeof(dg_out), DG_ID));

    ct_battery("GNI_CqWaitEvent", wait_rcq, NULL, rounds);
    ct_battery("GNI_CqVectorWaitEvent", vector_wait, NULL, rounds);
    ct_battery("GNI_CqVectorMonitor", vector_monitor, NULL, rounds);
    ct_battery("GNI_PostdataProbeWaitById", probe_wait, NULL, rounds);
    ct_battery("GNI_EpPostDataWaitById", datagram_wait, NULL, rounds);
    ct_battery("GNI_WaitErrorEvents", error_wait, NULL, rounds);
    gni_msgq_attr_t ma;
    memset(&ma, 0, sizeof ma);
    ma.max_msg_sz = 64;
    ma.smsg_q_sz = 4;
    ma.num_msgq_eps = T.size;
    int local = 1;
    CHECK(PMI_Get_clique_size(&local) == PMI_SUCCESS);
    ma.nloc_insts = (uint32_t)local;
    ma.modes = GNI_MSGQ_MODE_BLOCKING;
    GNI_OK(GNI_MsgqInit(T.nic, msgq_rcv, NULL, NULL, &ma, &MSGQ));
    ct_battery("GNI_MsgqProgress", msgq_progress, NULL, rounds);
    GNI_OK(GNI_MsgqRelease(MSGQ));
    /* Threads that call with short timeouts again and again, cancelled wherever they are
     * (inside the call or between calls). */
    ct_loop_both("GNI_CqWaitEvent(0 ms) in a loop", wait_rcq_short, (void *)(uintptr_t)0, rounds, 2000);
    ct_loop_both("GNI_CqWaitEvent(1 ms) in a loop", wait_rcq_short, (void *)(uintptr_t)1, rounds, 3000);
    printf("cancel_wait: rank %d cancelled %d watchers\n", T.rank, 7 * 2 * (3 + rounds) + 4 * rounds);

    /* The library goes on.  The subscription and the datagram the cancelled threads
     * waited on are free to release and cancel. */
    GNI_OK(GNI_ReleaseErrors(ERR));
    GNI_OK(GNI_EpPostDataCancelById(DG_EP, DG_ID));
    GNI_OK(GNI_EpUnbind(DG_EP));
    GNI_OK(GNI_EpDestroy(DG_EP));

    /* A waiter parked beside one that is then cancelled still gets its event. */
    second_t second;
    memset(&second, 0, sizeof(second));
    pthread_t th;
    CHECK(pthread_create(&th, NULL, second_waiter, &second) == 0);
    ct_sleep_us(20000);
    ct_cancel("GNI_CqWaitEvent beside another waiter", wait_rcq, NULL, PTHREAD_CANCEL_ASYNCHRONOUS, 0, 20000);
    ct_cancel("GNI_CqWaitEvent beside another waiter", wait_rcq, NULL, PTHREAD_CANCEL_DEFERRED, 0, 20000);
    dt_barrier();

    /* Put 8 bytes with a remote event into the right neighbour's buffer. */
    uint64_t *src = dt_alloc(4096);
    gni_mem_handle_t smh = dt_reg(&T, src, 4096, NULL, GNI_MEM_READWRITE);
    src[0] = 0xca11ed00ULL + T.rank;
    gni_post_descriptor_t d;
    dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT, src, smh, bases[right], mhs[right], 8);
    dt_fma(&T, right, &d);
    CHECK(pthread_join(th, NULL) == 0);
    CHECK(atomic_load(&second.got));
    CHECK_EQ(GNI_CQ_GET_TYPE(second.ev), GNI_CQ_EVENT_TYPE_POST);
    CHECK_EQ(buf[0], 0xca11ed00ULL + left);

    /* And a plain wait on the same CQ from this thread, for a second put. */
    dt_barrier();
    src[0] = 0xbeef0000ULL + T.rank;
    dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT, src, smh, bases[right], mhs[right], 8);
    dt_fma(&T, right, &d);
    gni_cq_entry_t ev = gnit_wait(RCQ, GNI_RC_SUCCESS);
    CHECK_EQ(GNI_CQ_GET_TYPE(ev), GNI_CQ_EVENT_TYPE_POST);
    CHECK_EQ(buf[0], 0xbeef0000ULL + left);

    dt_barrier();
    GNI_OK(GNI_MemDeregister(T.nic, &smh));
    GNI_OK(GNI_MemDeregister(T.nic, &mh));
    GNI_OK(GNI_CqDestroy(RCQ));
    printf("cancel_wait: rank %d ok\n", T.rank);
    gnit_fini(&T);
    return 0;
}
