/* DMAPP queues the way Global Arrays' ARMCI/ComEx ports and UPC++ use them: read the
 * attributes before dmapp_init_ext, set the queue fields, init, attach a callback, then
 * every PE puts NMSG messages (0 to queue_nelems QW long, every element type, sequence
 * numbers inside) to every PE including itself; each callback checks sender, length,
 * contents and that every sender's messages come in order.
 *   dmapp_queue [MODE [NMSG]]
 *   sync   default attributes (checked), the callback runs from this PE's DMAPP calls
 *   async  DMAPP_QUEUE_ASYNC_PROGRESS at attach, queue_depth 5 (-> 8): a library thread
 *          delivers while senders keep finding the queue full
 *   attr   asynchronous progress from the queue_flags attribute, queue_nelems 16
 *   full   queue_depth 4 (2 PEs or more): a sender blocks on a full queue until the
 *          target, which had not attached yet, attaches and delivers; a put from inside
 *          a callback into a full queue is DMAPP_RC_NO_SPACE.
 * Bad input (before init, NULLs, forged handles, bad type/PE/length, second attach,
 * double detach) in every mode; unknown flag bits are ignored.
 * Run with XT_SYMMETRIC_HEAP_SIZE=8M. */
#include <unistd.h>
#include "dmtest.h"

static enum { SYNC, ASYNC, ATTR, FULL } mode;
static int nmsg = 200;
static uint32_t qnelems;               /* queue_nelems in effect (QW) */
static int64_t *next_seq;              /* per sender: the sequence number expected next */
static int64_t received;               /* messages delivered (atomic: the callback may run on a library thread) */
static int token;                      /* the callback's context */
static volatile int64_t started;       /* .bss, FULL: the target has begun to deliver */

static uint64_t pattern(int from, int64_t seq, int i) { return (uint64_t)from * 0x9e3779b97f4a7c15ULL ^ (uint64_t)seq << 20 ^ (uint64_t)i; }

/* Length in bytes of message seq from `from` to `to`: every 50th is empty, the rest 24
 * bytes (sender, seq, target) up to the whole queue_nelems, at any byte count. */
static uint32_t msg_len(int from, int to, int64_t seq)
{
    if (seq % 50 == 49) return 0;
    uint32_t span = qnelems * 8 - 24 + 1;
    return 24 + (uint32_t)((seq * 13 + from * 5 + to) % span);
}

static int qcb(void *ctx, void *data, uint32_t len, dmapp_pe_t rank)
{
    CHECK(ctx == &token);
    CHECK(rank >= 0 && rank < npes);
    int64_t seq = next_seq[rank]++;
    uint32_t want = msg_len(rank, me, seq);
    if (len != want) SN_FAIL("message %lld from PE %d: %u bytes, expected %u (out of order?)", (long long)seq, rank, len, want);
    if (len > 0) {
        uint64_t w[3];
        memcpy(w, data, sizeof w);
        if (w[0] != (uint64_t)rank || w[1] != (uint64_t)seq || w[2] != (uint64_t)me)
            SN_FAIL("message from PE %d: header (%llu, %llu, %llu), expected (%d, %lld, %d)", rank,
                    (unsigned long long)w[0], (unsigned long long)w[1], (unsigned long long)w[2], rank, (long long)seq, me);
        for (uint32_t i = 24; i < len; i++) {
            uint8_t b = ((uint8_t *)data)[i];
            if (b != (uint8_t)pattern(rank, seq, (int)i)) SN_FAIL("message %lld from PE %d: byte %u differs", (long long)seq, rank, i);
        }
    }
    __atomic_add_fetch(&received, 1, __ATOMIC_SEQ_CST);
    return 0;
}

static void send_one(dmapp_queue_handle_t h, int to, int64_t seq)
{
    uint32_t len = msg_len(me, to, seq);
    uint8_t buf[DMAPP_QUEUE_MAX_NELEMS * 8];
    uint64_t w[3] = { (uint64_t)me, (uint64_t)seq, (uint64_t)to };
    memcpy(buf, w, sizeof w);
    for (uint32_t i = 24; i < len; i++) buf[i] = (uint8_t)pattern(me, seq, (int)i);
    dmapp_type_t ty = len % 16 == 0 ? DMAPP_DQW : len % 8 == 0 ? DMAPP_QW : len % 4 == 0 ? DMAPP_DW : DMAPP_BYTE;
    uint32_t sz = ty == DMAPP_DQW ? 16 : ty == DMAPP_QW ? 8 : ty == DMAPP_DW ? 4 : 1;
    /* Odd messages carry an unknown flag bit: ignored. */
    OK(dmapp_queue_put(h, buf, len / sz, ty, to, seq % 2 ? 0x8000 : 0));
}

/* Until `n` messages have arrived: in sync mode this PE's DMAPP calls deliver. */
static void await(int64_t n)
{
    while (__atomic_load_n(&received, __ATOMIC_SEQ_CST) < n) {
        if (mode != ASYNC && mode != ATTR) OK(dmapp_gsync_wait());
        usleep(50);
    }
}

static void before_init(void)
{
    dmapp_queue_handle_t h = NULL;
    int flag = 7;
    char b[8] = {0};
    OK(dmapp_initialized(&flag));
    CHECK_EQ(flag, 0);
    RC_EQ(dmapp_initialized(NULL), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_queue_attach(qcb, &token, 0, &h), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_queue_put(h, b, 1, DMAPP_QW, 0, 0), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_queue_detach(h, 0), DMAPP_RC_INVALID_PARAM);
}

static void bad_input(dmapp_queue_handle_t h)
{
    dmapp_queue_handle_t h2 = NULL;
    uint8_t b[(DMAPP_QUEUE_MAX_NELEMS + 2) * 8] = {0};
    RC_EQ(dmapp_queue_attach(NULL, &token, 0, &h2), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_queue_attach(qcb, &token, 0, NULL), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_queue_attach(qcb, &token, 0, &h2), DMAPP_RC_BUSY);          /* one at a time */
    RC_EQ(dmapp_queue_put(NULL, b, 1, DMAPP_QW, me, 0), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_queue_put((dmapp_queue_handle_t)(uintptr_t)0x4242, b, 1, DMAPP_QW, me, 0), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_queue_put(h, b, 1, (dmapp_type_t)4, me, 0), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_queue_put(h, b, 1, DMAPP_QW, -1, 0), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_queue_put(h, b, 1, DMAPP_QW, npes, 0), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_queue_put(h, b, qnelems + 1, DMAPP_QW, me, 0), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_queue_put(h, b, qnelems * 8 + 1, DMAPP_BYTE, me, 0), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_queue_put(h, b, UINT64_MAX / 2, DMAPP_DQW, me, 0), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_queue_put(h, NULL, 1, DMAPP_QW, me, 0), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_queue_detach((dmapp_queue_handle_t)(uintptr_t)0x4242, 0), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_queue_detach(NULL, 0), DMAPP_RC_INVALID_PARAM);
}

/* FULL, part 2: the last PE fills PE 0's queue (four messages) while PE 0 makes no
 * DMAPP call; then PE 0 delivers, and the callback of the first message puts two more
 * to PE 0 itself: the first fits (one entry was taken), the second finds the queue full
 * and, inside a callback, returns NO_SPACE instead of waiting. */
static int inner_rc[2] = { -1, -1 };
static int64_t inner_got;
static dmapp_queue_handle_t inner_h;
static volatile int64_t go;            /* .bss: set by the filler */
static int inner_cb(void *ctx, void *data, uint32_t len, dmapp_pe_t rank)
{
    (void)ctx;
    uint64_t v;
    CHECK_EQ(len, 8);
    CHECK_EQ(rank, inner_got < 4 ? npes - 1 : me);
    memcpy(&v, data, 8);
    CHECK_EQ(v, (uint64_t)inner_got);   /* in order */
    if (inner_got++ == 0) {
        uint64_t a = 4, b = 5;
        inner_rc[0] = dmapp_queue_put(inner_h, &a, 1, DMAPP_QW, me, 0);
        inner_rc[1] = dmapp_queue_put(inner_h, &b, 1, DMAPP_QW, me, 0);
    }
    return 0;
}

static void full_inside_callback(void)
{
    OK(dmapp_queue_attach(inner_cb, NULL, 0, &inner_h));
    barrier();
    if (me == npes - 1) {
        for (uint64_t v = 0; v < 4; v++) OK(dmapp_queue_put(inner_h, &v, 1, DMAPP_QW, 0, 0));
        int64_t one = 1;
        OK(dmapp_put((void *)&go, dseg(), 0, &one, 1, DMAPP_QW));
    } else if (me == 0) {
        while (go == 0) usleep(200);   /* no DMAPP call meanwhile */
        while (inner_got < 5) OK(dmapp_gsync_wait());
        CHECK_EQ(inner_rc[0], DMAPP_RC_SUCCESS);
        CHECK_EQ(inner_rc[1], DMAPP_RC_NO_SPACE);
        CHECK_EQ(inner_got, 5);
    }
    barrier();
    OK(dmapp_queue_detach(inner_h, 0));
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        if (!strcmp(argv[1], "async")) mode = ASYNC;
        else if (!strcmp(argv[1], "attr")) mode = ATTR;
        else if (!strcmp(argv[1], "full")) mode = FULL;
        else if (strcmp(argv[1], "sync")) SN_FAIL("unknown mode %s", argv[1]);
    }
    if (argc > 2) nmsg = atoi(argv[2]);
    before_init();

    /* As the clients do: defaults first, then the queue fields. */
    dmapp_rma_attrs_ext_t req, act;
    memset(&req, 0xa5, sizeof req);
    OK(dmapp_get_rma_attrs_ext(&req));
    CHECK_EQ(req.max_outstanding_nb, DMAPP_DEF_OUTSTANDING_NB);
    CHECK_EQ(req.queue_depth, DMAPP_QUEUE_DEFAULT_DEPTH);
    CHECK_EQ(req.queue_nelems, DMAPP_QUEUE_DEFAULT_NELEMS);
    CHECK_EQ(req.queue_flags, 0);
    uint32_t want_depth = DMAPP_QUEUE_DEFAULT_DEPTH, want_nelems = DMAPP_QUEUE_DEFAULT_NELEMS;
    if (mode == ASYNC) { req.queue_depth = 5; want_depth = 8; }
    if (mode == ATTR) { req.queue_depth = 0; req.queue_nelems = 16; want_nelems = 16; req.queue_flags = DMAPP_QUEUE_ASYNC_PROGRESS | 0x40; }
    if (mode == FULL) { req.queue_depth = 4; want_depth = 4; }
    OK(dmapp_init_ext(&req, &act));
    CHECK_EQ(act.queue_depth, want_depth);
    CHECK_EQ(act.queue_nelems, want_nelems);
    CHECK_EQ(act.queue_flags, mode == ATTR ? DMAPP_QUEUE_ASYNC_PROGRESS : 0);   /* unknown bit dropped */
    dmapp_rma_attrs_ext_t cur;
    OK(dmapp_get_rma_attrs_ext(&cur));
    CHECK_EQ(cur.queue_depth, want_depth);
    int flag = 0;
    OK(dmapp_initialized(&flag));
    CHECK_EQ(flag, 1);
    OK(dmapp_get_jobinfo(&job));
    me = job.pe;
    npes = job.npes;
    sntest_rank = me;
    qnelems = act.queue_nelems;
    next_seq = calloc((size_t)npes, sizeof *next_seq);
    CHECK(next_seq);

    dmapp_queue_handle_t h = NULL;
    uint64_t aflags = mode == ASYNC ? DMAPP_QUEUE_ASYNC_PROGRESS : 0x100;   /* 0x100: unknown, ignored */
    int target = 0, sender = npes - 1;
    if (mode == FULL && npes > 1) {
        /* A sender blocks on the target's full queue until the target delivers. */
        if (me != target) OK(dmapp_queue_attach(qcb, &token, aflags, &h));
        barrier();
        if (me == sender) {
            for (int64_t s = 0; s < 4; s++) send_one(h, target, s);   /* fills it */
            send_one(h, target, 4);                                 /* waits */
            int64_t st = 0;
            OK(dmapp_get(&st, (void *)&started, dseg(), target, 1, DMAPP_QW));
            CHECK_EQ(st, 1);
            send_one(h, target, 5);
        } else if (me == target) {
            usleep(300000);   /* no DMAPP call: nothing is delivered, nothing taken */
            started = 1;
            OK(dmapp_queue_attach(qcb, &token, aflags, &h));
            await(6);
            CHECK_EQ(next_seq[sender], 6);
        }
        barrier();
        OK(dmapp_queue_detach(h, 0));
        full_inside_callback();
        barrier();
        /* Then the all-to-all below, through a queue of 4. */
        memset(next_seq, 0, (size_t)npes * sizeof *next_seq);
        __atomic_store_n(&received, 0, __ATOMIC_SEQ_CST);
    }

    OK(dmapp_queue_attach(qcb, &token, aflags, &h));
    barrier();
    for (int64_t s = 0; s < nmsg; s++)
        for (int t = 0; t < npes; t++) send_one(h, (me + t) % npes, s);
    await((int64_t)npes * nmsg);
    for (int p = 0; p < npes; p++) CHECK_EQ(next_seq[p], nmsg);
    barrier();

    bad_input(h);
    OK(dmapp_queue_detach(h, 0));
    RC_EQ(dmapp_queue_detach(h, 0), DMAPP_RC_INVALID_PARAM);
    uint64_t x = 0;
    RC_EQ(dmapp_queue_put(h, &x, 1, DMAPP_QW, me, 0), DMAPP_RC_INVALID_PARAM);
    CHECK_EQ(__atomic_load_n(&received, __ATOMIC_SEQ_CST), (int64_t)npes * nmsg);   /* nothing extra came */

    barrier();
    OK(dmapp_finalize());
    OK(dmapp_initialized(&flag));
    CHECK_EQ(flag, 0);
    RC_EQ(dmapp_get_rma_attrs_ext(&cur), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_queue_attach(qcb, &token, 0, &h), DMAPP_RC_INVALID_PARAM);
    printf("dmapp_queue: pe %d of %d ok (%s, %d messages to each PE)\n", me, npes, argc > 1 ? argv[1] : "sync", nmsg);
    return 0;
}
