/* One process, every function group on its own node (connections to the local node are
 * allowed): library and device state, queries, node ids, segment ids and AUTO_ID, the
 * segment state order, maps and PIO copies, sequences, teardown refusals, events and
 * callbacks, NOTIFY / FORCE_DISCONNECT, shared segments, program memory, resource limits,
 * error strings, the unsupported groups.  Runs with or without a launcher. */
#include "stest.h"
#include <dlfcn.h>
#include <pthread.h>

static unsigned int me;

/* ---- callbacks --------------------------------------------------------------------- */
static volatile int lcb_n, lcb_reason, lcb_cancel;
static volatile unsigned lcb_node;
static sci_callback_action_t on_local(void *arg, sci_local_segment_t s, sci_segment_cb_reason_t reason, unsigned int node, unsigned int adapter, sci_error_t e)
{
    (void)s; (void)adapter; (void)e;
    CHECK(arg == (void *)0x1234);
    lcb_reason = reason;
    lcb_node = node;
    __atomic_add_fetch(&lcb_n, 1, __ATOMIC_SEQ_CST);
    return lcb_cancel ? SCI_CALLBACK_CANCEL : SCI_CALLBACK_CONTINUE;
}

static volatile int rcb_n, rcb_reason;
static sci_callback_action_t on_remote(void *arg, sci_remote_segment_t s, sci_segment_cb_reason_t reason, sci_error_t status)
{
    (void)arg; (void)s; (void)status;
    rcb_reason = reason;
    __atomic_add_fetch(&rcb_n, 1, __ATOMIC_SEQ_CST);
    return SCI_CALLBACK_CONTINUE;
}

static void await_n(volatile int *p, int n)
{
    double end = st_now() + 10;
    while (__atomic_load_n(p, __ATOMIC_SEQ_CST) < n) {
        if (st_now() > end) SN_FAIL("callback count %d, want %d", *p, n);
        usleep(200);
    }
}

struct seg_waiter { sci_local_segment_t s; sci_error_t got; };
static void *seg_wait(void *p)
{
    struct seg_waiter *w = p;
    sci_error_t e;
    SCIWaitForLocalSegmentEvent(w->s, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &e);
    w->got = e;
    return NULL;
}

static void queries(sci_desc_t sd)
{
    char buf[128];
    sci_query_string_t qs = { buf, sizeof buf };
    OK(SCIQuery(SCI_Q_VENDORID, &qs, 0, &err));
    CHECK(strlen(buf) > 0);
    OK(SCIQuery(SCI_Q_API, &qs, 0, &err));
    CHECK(strstr(buf, "SISCI") != NULL);
    char tiny[5];
    sci_query_string_t qt = { tiny, sizeof tiny };
    OK(SCIQuery(SCI_Q_API, &qt, 0, &err));        /* truncated, still terminated */
    CHECK(strlen(tiny) == 4 && strncmp(tiny, buf, 4) == 0);
    unsigned int v = 0, id = 0;
    sci_query_adapter_t qa = { 0, 0, SCI_Q_ADAPTER_NODEID, &v };
    OK(SCIQuery(SCI_Q_ADAPTER, &qa, 0, &err));
    OK(SCIGetLocalNodeId(0, &id, 0, &err));
    CHECK_EQ(v, id);
    CHECK_EQ(v, me);
    static const unsigned subs[] = { SCI_Q_ADAPTER_CONFIGURED, SCI_Q_ADAPTER_LINK_OPERATIONAL, SCI_Q_ADAPTER_NUMBER_OF_LINKS,
        SCI_Q_ADAPTER_DATAINT_MAX_LENGTH, SCI_Q_ADAPTER_MCAST_MAX_GROUPS, SCI_Q_ADAPTER_CARD_TYPE };
    static const unsigned want[] = { 1, 1, 1, 4096, 4, 0x5C1 };
    for (unsigned i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        qa.subcommand = subs[i];
        OK(SCIQuery(SCI_Q_ADAPTER, &qa, 0, &err));
        CHECK_EQ(v, want[i]);
    }
    CHECK(strcmp(SCIGetAdapterTypeString(0x5C1), "softnic adapter") == 0);
    qa.subcommand = SCI_Q_ADAPTER_DMA_MTU;
    OK(SCIQuery(SCI_Q_ADAPTER, &qa, SCI_FLAG_DMA_SYSDMA, &err));
    CHECK(v > 0);
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIQuery(SCI_Q_ADAPTER, &qa, SCI_FLAG_DMA_GLOBAL, &err));
    qa.subcommand = 0x7777;
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIQuery(SCI_Q_ADAPTER, &qa, 0, &err));
    qa.subcommand = SCI_Q_SYSTEM_HOSTBRIDGE;     /* a sub-command of another family */
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIQuery(SCI_Q_ADAPTER, &qa, 0, &err));
    qa.subcommand = SCI_Q_ADAPTER_NODEID;
    qa.localAdapterNo = 1;
    FAILS(SCI_ERR_NO_SUCH_ADAPTERNO, SCIQuery(SCI_Q_ADAPTER, &qa, 0, &err));
    qa.localAdapterNo = 100;
    FAILS(SCI_ERR_ILLEGAL_ADAPTERNO, SCIQuery(SCI_Q_ADAPTER, &qa, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_QUERY, SCIQuery(0x4242, &qa, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIQuery(SCI_Q_ADAPTER, NULL, 0, &err));
    sci_query_system_t qsys = { SCI_Q_SYSTEM_HOSTBRIDGE, &v };
    OK(SCIQuery(SCI_Q_SYSTEM, &qsys, 0, &err));
    CHECK_EQ(v, HOSTBRIDGE_WRITE_POSTING_ENABLED);
    qsys.subcommand = SCI_Q_SYSTEM_CPU_CACHE_LINE_SIZE;
    OK(SCIQuery(SCI_Q_SYSTEM, &qsys, 0, &err));
    CHECK_EQ(v, 64);
    sci_dma_capabilities_t caps;
    sci_query_dma_t qd = { 0, SCI_Q_DMA_CAPABILITIES, &caps };
    OK(SCIQuery(SCI_Q_DMA, &qd, SCI_FLAG_DMA_GLOBAL, &err));
    CHECK_EQ(caps.max_vector_length, DIS_DMA_MAX_VECLEN);
    CHECK_EQ(caps.min_align_bytes, 1);
    qd.subcommand = SCI_Q_DMA_AVAILABLE;
    qd.data = &v;
    OK(SCIQuery(SCI_Q_DMA, &qd, SCI_FLAG_DMA_SYSDMA, &err));
    CHECK_EQ(v, 1);
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIQuery(SCI_Q_DMA, &qd, SCI_FLAG_DMA_SYSDMA | SCI_FLAG_DMA_GLOBAL, &err));
    /* Nodes and adapter names. */
    CHECK_EQ(SCIProbeNode(sd, 0, me, 0, &err), 1);
    CHECK_EQ(err, SCI_ERR_OK);
    CHECK_EQ(SCIProbeNode(sd, 0, SCI_LOCAL_HOST, 0, &err), 1);
    CHECK_EQ(SCIProbeNode(sd, 0, 0, 0, &err), 0);
    CHECK_EQ(err, SCI_ERR_ILLEGAL_NODEID);
    CHECK_EQ(SCIProbeNode(sd, 0, 252, 0, &err), 0);
    CHECK_EQ(err, SCI_ERR_ILLEGAL_NODEID);
    dis_nodeId_list_t list;
    dis_virt_adapter_t type;
    char name[32];
    OK(SCIGetNodeIdByAdapterName((char *)"local", &list, &type, 0, &err));
    CHECK_EQ(list[0], me);
    CHECK_EQ(list[1], 0);
    snprintf(name, sizeof name, "node%u", me);
    unsigned int adapter = 9;
    OK(SCIGetNodeInfoByAdapterName(name, &adapter, &list, &type, 0, &err));
    CHECK_EQ(list[0], me);
    CHECK_EQ(adapter, 0);
    CHECK_EQ(type, DIS_VIRT_ADAPTER_SOFTNIC);
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIGetNodeIdByAdapterName((char *)"no-such-adapter", &list, &type, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIGetNodeIdByAdapterName(NULL, &list, &type, 0, &err));
    /* Strings. */
    CHECK(strcmp(SCIGetErrorString(SCI_ERR_NO_SUCH_SEGMENT), SCIGetErrorString(SCI_ERR_NO_SUCH_INTNO)) == 0);
    CHECK(SCIGetErrorString((sci_error_t)0x12345) != NULL);
    CHECK(SCIGetAdapterFamilyString(12345) != NULL);
    unsigned int fno = 7;
    char fname[32];
    CHECK_EQ(GetSciMemCopyFunction(&fno, fname), 0);
    CHECK_EQ(fno, 0);
    CHECK_EQ(SetSciMemCopyFunction(0), 0);
    /* PCIe requesters: a registration list. */
    OK(SCIRegisterPCIeRequester(sd, 0, 3, 0x10, 0, &err));
    FAILS(SCI_ERR_NOSPC, SCIRegisterPCIeRequester(sd, 0, 3, 0x10, 0, &err));
    FAILS(SCI_ERR_BUSY, SCIClose(sd, 0, &err));
    OK(SCIUnregisterPCIeRequester(sd, 0, 3, 0x10, 0, &err));
    FAILS(SCI_ERR_NOSPC, SCIUnregisterPCIeRequester(sd, 0, 3, 0x10, 0, &err));
    /* What needs hardware. */
    sci_smartio_device_t dev;
    FAILS(SCI_ERR_NOT_IMPLEMENTED, SCIBorrowDevice(sd, &dev, 1, 0, &err));
    CHECK_EQ(SCIGetDeviceList(sd, NULL, 0, NULL, 0, &err), 0);
    CHECK_EQ(err, SCI_ERR_OK);
    FAILS(SCI_ERR_NOT_SUPPORTED, SCIGetLocalCSR(sd, 0, 0, 0, &err));
}

/* Flags and query codes are also data objects, under two names, with the macros' values. */
static void constants(void)
{
    const unsigned int *p = dlsym(RTLD_DEFAULT, "SCI_FLAG_USE_CALLBACK");
    const unsigned int *q = dlsym(RTLD_DEFAULT, "_SISCI_PUBLIC_CONST_SCI_Q_ADAPTER_NODEID");
    const unsigned int *r = dlsym(RTLD_DEFAULT, "_SISCI_PUBLIC_CONST_SCI_INFINITE_TIMEOUT");
    CHECK(p && q && r);
    CHECK_EQ(*p, SCI_FLAG_USE_CALLBACK);
    CHECK_EQ(*q, SCI_Q_ADAPTER_NODEID);
    CHECK_EQ(*r, SCI_INFINITE_TIMEOUT);
    CHECK(dlsym(RTLD_DEFAULT, "SCIOpen") && dlsym(RTLD_DEFAULT, "_SISCI_PUBLIC_FUNC_ST_SCIOpen") && dlsym(RTLD_DEFAULT, "_SISCI_PUBLIC_FUNC_MT_SCIOpen"));
}

int main(void)
{
    /* Before SCIInitialize. */
    sci_desc_t sd, sd2, sd3;
    FAILS(SCI_ERR_NOT_INITIALIZED, SCIOpen(&sd, 0, &err));
    FAILS(SCI_ERR_NOT_INITIALIZED, SCIGetLocalNodeId(0, &me, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIInitialize(1, &err));
    OK(SCIInitialize(0, &err));
    OK(SCIInitialize(0, &err));
    SCITerminate();                       /* counted: still initialized */
    OK(SCIOpen(&sd, 0, &err));
    OK(SCIOpen(&sd2, SCI_FLAG_THREAD_SAFE, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIOpen(&sd3, 2, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIOpen(NULL, 0, &err));
    OK(SCIGetLocalNodeId(0, &me, 0, &err));
    constants();
    queries(sd);

    /* ---- segment ids are node-wide; AUTO_ID picks in [id, id+128] ---- */
    sci_local_segment_t a, b, c, aa[130];
    OK(SCICreateSegment(sd, &a, 7, 4096, NULL, NULL, 0, &err));
    FAILS(SCI_ERR_SEGMENTID_USED, SCICreateSegment(sd2, &b, 7, 4096, NULL, NULL, 0, &err));
    OK(SCICreateSegment(sd2, &b, 7, 4096, NULL, NULL, SCI_FLAG_AUTO_ID, &err));
    CHECK_EQ(SCIGetLocalSegmentId(b), 8);
    OK(SCICreateSegment(sd2, &c, 7, 100, NULL, NULL, SCI_FLAG_PRIVATE, &err));   /* private: no id */
    FAILS(SCI_ERR_SIZE_ALIGNMENT, SCICreateSegment(sd, &c, 9, 0, NULL, NULL, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCICreateSegment(sd, &c, 9, 64, NULL, NULL, 0x100, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCICreateSegment(sd, &c, 9, 64, NULL, NULL, SCI_FLAG_PRIVATE | SCI_FLAG_BROADCAST, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCICreateSegment(sd, &c, 9, 64, NULL, NULL, SCI_FLAG_USE_CALLBACK, &err));
    FAILS(SCI_ERR_NOSPC, SCICreateSegment(sd, &c, 9, (size_t)1 << 62, NULL, NULL, 0, &err));
    OK(SCIRemoveSegment(c, 0, &err));
    /* Fill [1000, 1128] through several devices (32 resources of a kind per device). */
    sci_desc_t many[5];
    int made = 0;
    for (int d = 0; d < 5; d++) OK(SCIOpen(&many[d], 0, &err));
    for (int i = 0; i < 129; i++) {
        OK(SCICreateSegment(many[i / 32], &aa[i], 1000, 64, NULL, NULL, SCI_FLAG_AUTO_ID, &err));
        CHECK_EQ(SCIGetLocalSegmentId(aa[i]), 1000 + i);
        made++;
    }
    FAILS(SCI_ERR_SEGMENTID_USED, SCICreateSegment(many[4], &aa[129], 1000, 64, NULL, NULL, SCI_FLAG_AUTO_ID, &err));
    FAILS(SCI_ERR_NOSPC, SCICreateSegment(many[0], &aa[129], 5000, 64, NULL, NULL, 0, &err));   /* the 33rd */
    FAILS(SCI_ERR_BUSY, SCIClose(many[0], 0, &err));
    for (int i = 0; i < made; i++) OK(SCIRemoveSegment(aa[i], 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIRemoveSegment(aa[0], 0, &err));      /* stale */
    for (int d = 0; d < 5; d++) OK(SCIClose(many[d], 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIClose(many[0], 0, &err));

    /* ---- the state order: create -> prepare -> available <-> unavailable ---- */
    sci_remote_segment_t rs, rs2;
    FAILS(SCI_ERR_NO_SUCH_SEGMENT, SCIConnectSegment(sd, &rs, me, 7, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_OPERATION, SCISetSegmentUnavailable(a, 0, 0, &err));
    FAILS(SCI_ERR_SEGMENT_NOT_PREPARED, SCISetSegmentAvailable(a, 0, 0, &err));
    FAILS(SCI_ERR_NO_SUCH_ADAPTERNO, SCIPrepareSegment(a, 3, 0, &err));
    OK(SCIPrepareSegment(a, 0, 0, &err));
    OK(SCISetSegmentAvailable(a, 0, 0, &err));
    OK(SCISetSegmentUnavailable(a, 0, 0, &err));
    FAILS(SCI_ERR_NO_SUCH_SEGMENT, SCIConnectSegment(sd, &rs, me, 7, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err));
    OK(SCISetSegmentAvailable(a, 0, 0, &err));
    FAILS(SCI_ERR_FLAG_NOT_IMPLEMENTED, SCIConnectSegment(sd, &rs, me, 7, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, SCI_FLAG_ASYNCHRONOUS_CONNECT, &err));
    FAILS(SCI_ERR_ILLEGAL_NODEID, SCIConnectSegment(sd, &rs, 0, 7, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err));
    OK(SCIConnectSegment(sd, &rs, SCI_LOCAL_HOST, 7, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err));
    CHECK_EQ(SCIGetRemoteSegmentNodeId(rs), me);
    sci_segment_cb_reason_t why = SCIWaitForLocalSegmentEvent(a, NULL, NULL, 0, 0, &err);
    CHECK_EQ(err, SCI_ERR_OK);
    CHECK_EQ(why, SCI_CB_CONNECT);
    FAILS(SCI_ERR_TIMEOUT, SCIWaitForLocalSegmentEvent(a, NULL, NULL, 0, 0, &err));
    FAILS(SCI_ERR_TIMEOUT, SCIWaitForLocalSegmentEvent(a, NULL, NULL, 30, 0, &err));
    FAILS(SCI_ERR_TIMEOUT, SCIWaitForRemoteSegmentEvent(rs, NULL, 0, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIWaitForLocalSegmentEvent((sci_local_segment_t)rs, NULL, NULL, 0, 0, &err));

    /* ---- maps: local and remote maps of one segment are one memory ---- */
    sci_map_t lm, rm, rm2, rom;
    volatile uint32_t *l = SCIMapLocalSegment(a, &lm, 0, 4096, NULL, 0, &err);
    CHECK_EQ(err, SCI_ERR_OK);
    volatile uint32_t *r = SCIMapRemoteSegment(rs, &rm, 1024, 1024, NULL, 0, &err);
    CHECK_EQ(err, SCI_ERR_OK);
    l[256 + 3] = 0xabcd;
    CHECK_EQ(r[3], 0xabcd);
    r[5] = 0x1234;
    CHECK_EQ(l[256 + 5], 0x1234);
    CHECK(SCIMapRemoteSegment(rs, &rm2, 1024, 3073, NULL, 0, &err) == NULL);
    CHECK_EQ(err, SCI_ERR_OUT_OF_RANGE);
    CHECK(SCIMapRemoteSegment(rs, &rm2, (size_t)-1, 2, NULL, 0, &err) == NULL);
    CHECK_EQ(err, SCI_ERR_OUT_OF_RANGE);
    FAILS(SCI_ERR_SIZE_ALIGNMENT, SCIMapLocalSegment(a, &rm2, 0, 0, NULL, 0, &err));
    FAILS(SCI_ERR_FLAG_NOT_IMPLEMENTED, SCIMapRemoteSegment(rs, &rm2, 0, 8, NULL, SCI_FLAG_LOCK_OPERATION, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIMapRemoteSegment(rs, &rm2, 0, 8, NULL, 0x40000000, &err));
    /* A read-only map reads; SCIMemCpy into it is refused. */
    volatile uint32_t *ro = SCIMapRemoteSegment(rs, &rom, 0, 4096, NULL, SCI_FLAG_READONLY_MAP, &err);
    CHECK_EQ(err, SCI_ERR_OK);
    CHECK_EQ(ro[256 + 3], 0xabcd);
    uint32_t word = 77;
    FAILS(SCI_ERR_ACCESS, SCIMemCpy(NULL, &word, rom, 0, 4, 0, &err));
    OK(SCIMemCpy(NULL, &word, rom, 256 * 4 + 12, 4, SCI_FLAG_BLOCK_READ, &err));
    CHECK_EQ(word, 0xabcd);
    OK(SCIUnmapSegment(rom, 0, &err));
    /* Sequences only on remote maps; SCIMemCpy both ways, bounds checked. */
    sci_sequence_t seq, seq2;
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCICreateMapSequence(lm, &seq, 0, &err));
    OK(SCICreateMapSequence(rm, &seq, 0, &err));
    CHECK_EQ(SCIStartSequence(seq, 0, &err), SCI_SEQ_OK);
    char msg[64], back[64];
    for (int i = 0; i < 64; i++) msg[i] = (char)i;
    OK(SCIMemCpy(seq, msg, rm, 100, 64, SCI_FLAG_ERROR_CHECK, &err));
    CHECK(memcmp((const void *)((const char *)l + 1024 + 100), msg, 64) == 0);
    OK(SCIMemCpy(seq, back, rm, 100, 64, SCI_FLAG_BLOCK_READ, &err));
    CHECK(memcmp(back, msg, 64) == 0);
    FAILS(SCI_ERR_OUT_OF_RANGE, SCIMemCpy(seq, msg, rm, 1000, 64, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIMemCpy((sci_sequence_t)0, msg, rm, 0, 8, SCI_FLAG_ERROR_CHECK, &err));
    FAILS(SCI_ERR_ILLEGAL_FLAG, SCIMemCpy(seq, msg, rm, 0, 8, SCI_FLAG_NO_FLUSH, &err));
    OK(SCIMemWrite(msg, (volatile void *)(r + 10), 16, 0, &err));
    CHECK(memcmp((const void *)((const char *)l + 1024 + 40), msg, 16) == 0);
    FAILS(SCI_ERR_ILLEGAL_ADDRESS, SCIMemWrite(msg, (volatile void *)msg, 16, 0, &err));
    FAILS(SCI_ERR_OUT_OF_RANGE, SCIMemWrite(msg, (volatile void *)(l + 1020), 64, 0, &err));
    OK(SCICacheSync(lm, (void *)l, 64, SCI_FLAG_CACHE_FLUSH | SCI_FLAG_CACHE_INVALIDATE, &err));
    FAILS(SCI_ERR_OUT_OF_RANGE, SCICacheSync(lm, (void *)l, 4097, SCI_FLAG_CACHE_FLUSH, &err));
    FAILS(SCI_ERR_ILLEGAL_OPERATION, SCICacheSync(lm, (void *)l, 64, 0, &err));
    CHECK_EQ(SCICheckSequence(seq, SCI_FLAG_NO_FLUSH, &err), SCI_SEQ_OK);
    /* Map queries and addresses. */
    sci_query_map_t qm = { rm, SCI_Q_MAP_MAPPED_TO_LOCAL_TARGET, 99 };
    OK(SCIQuery(SCI_Q_MAP, &qm, 0, &err));
    CHECK_EQ(qm.data, 1);           /* the segment is on this node */
    CHECK(SCIGetMapPhysAddr(rm) != 0 && SCIGetMapPhysAddr(lm) != 0 && SCIGetMapPhysAddr(lm) != SCIGetMapPhysAddr(rm));
    sci_query_local_segment_t ql = { a, SCI_Q_LOCAL_SEGMENT_IOADDR, { 0 } };
    OK(SCIQuery(SCI_Q_LOCAL_SEGMENT, &ql, 0, &err));
    CHECK(ql.data.ioaddr != 0);
    sci_query_remote_segment_t qr = { rs, SCI_Q_REMOTE_SEGMENT_IOADDR, { 0 } };
    OK(SCIQuery(SCI_Q_REMOTE_SEGMENT, &qr, 0, &err));
    CHECK(qr.data.ioaddr != 0);

    /* ---- teardown refusals: maps hold a segment (no automatic cleanup) ---- */
    FAILS(SCI_ERR_BUSY, SCIDisconnectSegment(rs, 0, &err));     /* mapped */
    FAILS(SCI_ERR_BUSY, SCIRemoveSegment(a, 0, &err));          /* mapped, here and through rs */
    FAILS(SCI_ERR_BUSY, SCIClose(sd, 0, &err));
    /* A map with a sequence is unmapped; the sequence stays, its calls fail. */
    OK(SCIUnmapSegment(rm, 0, &err));
    st_orphan_sequence(seq);
    FAILS(SCI_ERR_ILLEGAL_OPERATION, SCIMemCpy(seq, msg, lm, 0, 8, SCI_FLAG_ERROR_CHECK, &err));
    OK(SCIRemoveSequence(seq, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_PARAMETER, SCIRemoveSequence(seq, 0, &err));
    FAILS(SCI_ERR_BUSY, SCIRemoveSegment(a, 0, &err));          /* mapped here */
    OK(SCIUnmapSegment(lm, 0, &err));

    /* ---- NOTIFY: the importer is invited to disconnect; FORCE_DISCONNECT drops it ---- */
    OK(SCISetSegmentUnavailable(a, 0, SCI_FLAG_NOTIFY, &err));
    sci_error_t status = (sci_error_t)1;
    why = SCIWaitForRemoteSegmentEvent(rs, &status, 5000, 0, &err);
    CHECK_EQ(err, SCI_ERR_OK);
    CHECK_EQ(why, SCI_CB_DISCONNECT);
    OK(SCISetSegmentAvailable(a, 0, 0, &err));
    OK(SCIConnectSegment(sd, &rs2, me, 7, 0, on_remote, NULL, SCI_INFINITE_TIMEOUT, SCI_FLAG_USE_CALLBACK, &err));
    FAILS(SCI_ERR_ILLEGAL_OPERATION, SCIWaitForRemoteSegmentEvent(rs2, &status, 0, 0, &err));
    volatile uint32_t *r2 = SCIMapRemoteSegment(rs2, &rm2, 0, 4096, NULL, 0, &err);
    CHECK_EQ(err, SCI_ERR_OK);
    OK(SCICreateMapSequence(rm2, &seq2, 0, &err));
    while (SCIWaitForLocalSegmentEvent(a, NULL, NULL, 0, 0, &err) == SCI_CB_CONNECT) ;
    OK(SCISetSegmentUnavailable(a, 0, SCI_FLAG_FORCE_DISCONNECT, &err));
    await_n(&rcb_n, 1);
    CHECK_EQ(rcb_reason, SCI_CB_DISCONNECT);
    why = SCIWaitForLocalSegmentEvent(a, NULL, NULL, 5000, 0, &err);   /* both were dropped */
    CHECK_EQ(why, SCI_CB_DISCONNECT);
    why = SCIWaitForLocalSegmentEvent(a, NULL, NULL, 5000, 0, &err);
    CHECK_EQ(why, SCI_CB_DISCONNECT);
    CHECK_EQ(SCICheckSequence(seq2, 0, &err), SCI_SEQ_NOT_RETRIABLE);
    CHECK_EQ(SCIStartSequence(seq2, 0, &err), SCI_SEQ_PENDING);
    (void)r2[0];                        /* the importer's map still reads (no crash) */
    /* The owner may remove it now, though the importer has not disconnected yet; a waiter
     * in SCIWaitForLocalSegmentEvent is cancelled. */
    struct seg_waiter w = { a, (sci_error_t)0 };
    pthread_t th;
    CHECK(pthread_create(&th, NULL, seg_wait, &w) == 0);
    usleep(50000);
    OK(SCIRemoveSegment(a, 0, &err));
    pthread_join(th, NULL);
    CHECK_EQ(w.got, SCI_ERR_CANCELLED);
    (void)r2[1];
    OK(SCIRemoveSequence(seq2, 0, &err));
    OK(SCIUnmapSegment(rm2, 0, &err));
    OK(SCIDisconnectSegment(rs, 0, &err));
    OK(SCIDisconnectSegment(rs2, 0, &err));

    /* ---- local segment callbacks: CONNECT, DISCONNECT, CANCEL disarms ---- */
    sci_local_segment_t cs;
    OK(SCICreateSegment(sd, &cs, 20, 4096, on_local, (void *)0x1234, SCI_FLAG_USE_CALLBACK, &err));
    FAILS(SCI_ERR_ILLEGAL_OPERATION, SCIWaitForLocalSegmentEvent(cs, NULL, NULL, 0, 0, &err));
    OK(SCIPrepareSegment(cs, 0, 0, &err));
    OK(SCISetSegmentAvailable(cs, 0, 0, &err));
    OK(SCIConnectSegment(sd2, &rs, me, 20, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err));
    await_n(&lcb_n, 1);
    CHECK_EQ(lcb_reason, SCI_CB_CONNECT);
    CHECK_EQ(lcb_node, me);
    lcb_cancel = 1;
    OK(SCIDisconnectSegment(rs, 0, &err));
    await_n(&lcb_n, 2);
    CHECK_EQ(lcb_reason, SCI_CB_DISCONNECT);
    OK(SCIConnectSegment(sd2, &rs, me, 20, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err));
    usleep(100000);
    CHECK_EQ(lcb_n, 2);                  /* cancelled: no more calls */
    OK(SCIDisconnectSegment(rs, 0, &err));
    OK(SCIRemoveSegment(cs, 0, &err));

    /* ---- program memory: an EMPTY segment takes it (SCIRegisterSegmentMemory) ---- */
    sci_local_segment_t us;
    sci_map_t um;
    char *mem = aligned_alloc(4096, 8192);
    memset(mem, 'u', 8192);
    OK(SCICreateSegment(sd, &us, 30, 8192, NULL, NULL, SCI_FLAG_EMPTY, &err));
    FAILS(SCI_ERR_ILLEGAL_OPERATION, SCIPrepareSegment(us, 0, 0, &err));     /* no memory yet */
    FAILS(SCI_ERR_ILLEGAL_ADDRESS, SCIRegisterSegmentMemory(mem + 1, 4096, us, 0, &err));
    FAILS(SCI_ERR_OUT_OF_RANGE, SCIRegisterSegmentMemory(mem, 16384, us, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_ADDRESS, SCIRegisterSegmentMemory((void *)4096, 4096, us, 0, &err));
    OK(SCIRegisterSegmentMemory(mem, 8192, us, SCI_FLAG_LOCK_USER_MEM, &err));
    FAILS(SCI_ERR_ILLEGAL_OPERATION, SCIRegisterSegmentMemory(mem, 4096, us, 0, &err));
    char *um_p = SCIMapLocalSegment(us, &um, 0, 8192, NULL, 0, &err);
    CHECK(err == SCI_ERR_OK && um_p == mem);
    OK(SCIPrepareSegment(us, 0, 0, &err));
    OK(SCISetSegmentAvailable(us, 0, 0, &err));
    OK(SCIConnectSegment(sd2, &rs, me, 30, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err));
    CHECK_EQ(SCIGetRemoteSegmentSize(rs), 8192);
    /* A connected importer reaches it with SCIMemCpy and DMA (its map is a copy, kept in
     * step at barriers where the memory cannot be mapped). */
    volatile char *ur = SCIMapRemoteSegment(rs, &rm, 0, 8192, NULL, 0, &err);
    CHECK_EQ(err, SCI_ERR_OK);
    OK(SCICreateMapSequence(rm, &seq, 0, &err));
    CHECK_EQ(ur[100], 'u');
    ur[200] = 'X';
    SCIStoreBarrier(seq, 0);
    CHECK_EQ(mem[200], 'X');
    mem[300] = 'Y';
    CHECK_EQ(SCICheckSequence(seq, 0, &err), SCI_SEQ_OK);
    CHECK_EQ(ur[300], 'Y');
    sci_dma_queue_t dq;
    sci_local_segment_t priv;
    char *pmem = aligned_alloc(64, 256);
    memset(pmem, 'p', 256);
    OK(SCICreateSegment(sd, &priv, 0, 256, NULL, NULL, SCI_FLAG_EMPTY | SCI_FLAG_PRIVATE, &err));
    OK(SCIRegisterSegmentMemory(pmem, 256, priv, 0, &err));
    FAILS(SCI_ERR_ILLEGAL_OPERATION, SCISetSegmentAvailable(priv, 0, 0, &err));
    OK(SCICreateDMAQueue(sd, &dq, 0, 4, 0, &err));
    FAILS(SCI_ERR_SEGMENT_NOT_PREPARED, SCIStartDmaTransfer(dq, priv, rs, 0, 256, 1000, NULL, NULL, 0, &err));
    OK(SCIPrepareSegment(priv, 0, 0, &err));
    OK(SCIStartDmaTransfer(dq, priv, rs, 0, 256, 1000, NULL, NULL, 0, &err));
    CHECK_EQ(SCIWaitForDMAQueue(dq, SCI_INFINITE_TIMEOUT, 0, &err), SCI_DMAQUEUE_DONE);
    for (int i = 0; i < 256; i++) CHECK(mem[1000 + i] == 'p');
    OK(SCIRemoveDMAQueue(dq, 0, &err));
    OK(SCIRemoveSequence(seq, 0, &err));
    OK(SCIUnmapSegment(rm, 0, &err));
    OK(SCIDisconnectSegment(rs, 0, &err));
    OK(SCIUnmapSegment(um, 0, &err));
    OK(SCIRemoveSegment(us, 0, &err));
    OK(SCIRemoveSegment(priv, 0, &err));
    CHECK_EQ(mem[200], 'X');             /* the program's memory is still the program's */
    free(pmem);
    free(mem);

    /* ---- shared segments: SCIShareSegment, then SCIAttachLocalSegment ---- */
    sci_local_segment_t sh, att;
    sci_map_t sm, am;
    size_t asz = 0;
    OK(SCICreateSegment(sd, &sh, 40, 4096, NULL, NULL, 0, &err));
    FAILS(SCI_ERR_ACCESS, SCIAttachLocalSegment(sd2, &att, 40, &asz, NULL, NULL, 0, &err));
    FAILS(SCI_ERR_NO_SUCH_SEGMENT, SCIAttachLocalSegment(sd2, &att, 41, &asz, NULL, NULL, 0, &err));
    OK(SCIShareSegment(sh, 0, &err));
    OK(SCIAttachLocalSegment(sd2, &att, 40, &asz, NULL, NULL, 0, &err));
    CHECK_EQ(asz, 4096);
    volatile uint64_t *s1 = SCIMapLocalSegment(sh, &sm, 0, 4096, NULL, 0, &err);
    volatile uint64_t *s2 = SCIMapLocalSegment(att, &am, 0, 4096, NULL, 0, &err);
    s1[7] = 0x77;
    CHECK_EQ(s2[7], 0x77);
    OK(SCIUnmapSegment(sm, 0, &err));
    OK(SCIRemoveSegment(sh, 0, &err));   /* the creator leaves; the segment stays */
    OK(SCIPrepareSegment(att, 0, 0, &err));
    OK(SCISetSegmentAvailable(att, 0, 0, &err));
    OK(SCIConnectSegment(sd, &rs, me, 40, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err));
    OK(SCIDisconnectSegment(rs, 0, &err));
    CHECK_EQ(s2[7], 0x77);
    OK(SCIUnmapSegment(am, 0, &err));
    OK(SCIRemoveSegment(att, 0, &err));  /* the last one: now it is gone */
    FAILS(SCI_ERR_NO_SUCH_SEGMENT, SCIConnectSegment(sd, &rs, me, 40, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err));

    /* ---- interrupts of our own ---- */
    sci_local_interrupt_t li;
    sci_remote_interrupt_t ri;
    unsigned int no = 0;
    OK(SCICreateInterrupt(sd, &li, 0, &no, NULL, NULL, 0, &err));
    CHECK(no >= 0x10000);
    OK(SCIConnectInterrupt(sd2, &ri, me, 0, no, SCI_INFINITE_TIMEOUT, 0, &err));
    OK(SCITriggerInterrupt(ri, 0, &err));
    OK(SCIWaitForInterrupt(li, 1000, 0, &err));
    OK(SCIRemoveInterrupt(li, 0, &err));                 /* while connected */
    FAILS(SCI_ERR_NOT_CONNECTED, SCITriggerInterrupt(ri, 0, &err));
    OK(SCIDisconnectInterrupt(ri, 0, &err));

    /* ---- removal with an importer connected: its maps hold the segment, a connection
     * with nothing mapped does not (it is told, and its later use fails) ---- */
    OK(SCIPrepareSegment(b, 0, 0, &err));
    OK(SCISetSegmentAvailable(b, 0, 0, &err));
    OK(SCIConnectSegment(sd, &rs, me, 8, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err));
    volatile uint64_t *bm = SCIMapRemoteSegment(rs, &rm, 0, 64, NULL, 0, &err);
    CHECK(err == SCI_ERR_OK && bm != NULL);
    bm[1] = 11;
    FAILS(SCI_ERR_BUSY, SCIRemoveSegment(b, 0, &err));          /* mapped by the importer */
    OK(SCIUnmapSegment(rm, 0, &err));
    OK(SCIRemoveSegment(b, 0, &err));                           /* connected, nothing mapped */
    CHECK(SCIMapRemoteSegment(rs, &rm, 0, 64, NULL, 0, &err) == NULL);
    CHECK_EQ(err, SCI_ERR_NOT_CONNECTED);
    why = SCIWaitForRemoteSegmentEvent(rs, &status, 1000, 0, &err);
    CHECK_EQ(err, SCI_ERR_OK);
    CHECK_EQ(why, SCI_CB_DISCONNECT);
    OK(SCIDisconnectSegment(rs, 0, &err));
    FAILS(SCI_ERR_NO_SUCH_SEGMENT, SCIConnectSegment(sd, &rs, me, 8, 0, NULL, NULL, SCI_INFINITE_TIMEOUT, 0, &err));
    OK(SCIClose(sd, 0, &err));
    OK(SCIClose(sd2, 0, &err));
    SCITerminate();
    FAILS(SCI_ERR_NOT_INITIALIZED, SCIOpen(&sd, 0, &err));
    printf("sisci_local: ok (node %u)\n", me);
    return 0;
}
