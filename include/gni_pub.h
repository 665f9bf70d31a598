/* gni_pub.h -- softnic's Cray uGNI user API (API version 0x5c), provided by
 * libugni.so.0.
 *
 * Written for softnic from the ABI facts (names, values, struct layouts,
 * prototypes); it is not a copy of any vendor header.  Programs compiled
 * against it are binary compatible with those compiled against the vendor's
 * header of the same API version.
 *
 * Configuration: user space only (the kernel API is not provided), and the
 * Gemini/default form of gni_statistic_t (the Aries-only statistics are not
 * declared).  A CQ entry is decoded only through the exported gni_cq_*
 * functions (the GNI_CQ_* names are aliases of them); its bit layout is
 * private to the library.
 *
 * Memory registration (GNI_MemRegister*) moves the range onto shared pages in
 * place: same addresses, same contents, so peers reach it with plain loads,
 * stores and CPU atomics and no target-side progress.  Pages of anonymous
 * memory never written are not copied.  While the call runs, another thread
 * writing those pages waits in its page fault and its write lands on the new
 * page (Linux 6.4+ with userfaultfd allowed; SOFTNIC_REGISTER_GUARD=0 turns it
 * off); where that is not possible (older kernels, container seccomp filters,
 * valgrind, the executable's .data) the other threads are parked instead for
 * the moment of the copy (a real-time signal, SOFTNIC_STOP_SIGNAL, whose
 * handler waits; a system call it interrupts is restarted, or fails with EINTR
 * where it never restarts, as for any signal); only if that signal is taken by
 * the program, or a thread blocks it, can such a write be lost (SOFTNIC_LOG
 * says so) [mem_statics]; where the process may not have the
 * kernel's writes held too (CAP_SYS_PTRACE or vm.unprivileged_userfaultfd=1), a
 * system call of another thread writing them (read(2)) fails with EFAULT while
 * the call runs.  Pages stay shared when their registration ends: registering
 * them again costs bookkeeping only, and only live registrations take
 * resources (no limit on registrations made over time).  Where the kernel's
 * writes are held, when the calling thread is the process's only thread (no
 * one else can write meanwhile), or with the other threads parked for that
 * moment (SOFTNIC_STOP_SIGNAL, below), a first registration in anonymous memory
 * shares the aligned window of SOFTNIC_REGISTER_WINDOW bytes (256 KiB) around
 * it, so that its neighbours' registrations are cheap too.  [mem_window]  A child made by fork shares the
 * pages of live registrations with its parent.  Under valgrind, memcheck sees
 * the registered bytes as defined.
 *
 * Completion: a post to a process on this machine completes during the call
 * (data moved, events queued when it returns).  Across machines, FMA, AMO and
 * CQ-write posts complete during the call too (one network round trip); an
 * RDMA PUT or GET of 16 KiB or more without a REMOTE event travels in the
 * background (libfabric RMA, SOFTNIC_NET_RMA_DEPTH pieces in flight) and its
 * events come when it has arrived, so many can be in flight at once; until
 * then the endpoint counts it in flight (GNI_EpUnbind answers NOT_DONE), and
 * the descriptor and local buffer stay the caller's, as uGNI requires.  A
 * peer machine that does not complete it within SOFTNIC_NET_TIMEOUT_MS gives
 * a transaction error.
 * Events are causal: the local event of a post or SMSG send is never reaped
 * after an event its target caused in reaction to the data (a put or message
 * back whose REMOTE event goes to the same CQ), on one machine or across
 * machines.  To keep that order, a post or send reporting to a CQ that peers
 * can reach (the destination CQ of a registration, or a CE's CQ) takes its
 * event's place before its data moves, so later events on that CQ wait for its
 * end (one round trip, or a background RDMA's arrival).  [data_causal]
 * A CQ keeps the descriptors of posts with a local event until
 * GNI_GetCompleted takes them back: one per CQ entry, and about 2 million
 * (2^21 - 1) more for entries whose slot still holds an earlier one; past
 * that, a post asking for such an event answers GNI_RC_ERROR_RESOURCE.
 *
 * Routing (how programs use the API, as on the hardware): a transaction reaches
 * its target by (remote NIC address, remote memory handle).  A memory handle
 * names its owning process by itself, so the remote_id given to GNI_EpBind may
 * be any value (rank*100 + peer, a hash); it is only the default event data and
 * the datagram match key.  A handle used on an endpoint bound to another node's
 * address, a forged or stale handle, one whose owner has exited, or one of
 * another (ptag, cookie) domain is a transaction error that touches nothing.
 * Two kinds of object name instances, not memory, and so do use remote_id:
 * symmetric vMDH handles (the same value on every PE) resolve in the instance
 * whose inst_id is remote_id at that address, else in the instance the
 * endpoint last exchanged a datagram with there; MSGQ connections list
 * instances by inst_id, and the endpoint's remote_id picks one of them (or the
 * only instance connected at that address).
 *
 * Jobs (every process that shares a job secret: the ranks of one snrun, mpiexec
 * or srun job, or one process started without a launcher): a (ptag, cookie)
 * domain belongs, on a machine, to the first job whose process passes it to
 * GNI_ConfigureJob or attaches a CDM in it, and stays that job's until the last
 * of its processes that did so exits; meanwhile GNI_ConfigureJob and
 * GNI_CdmAttach of that pair by a process of any other job are
 * GNI_RC_PERMISSION_ERROR (on Cray only the workload manager may configure a
 * domain; here the job owning it stands in).  A domain's protection key (kept in
 * the target's registration table, presented by the initiator's NIC) is derived
 * from the job secret and the pair, and instances are found only within the
 * job: a memory handle, NIC address or inst_id learnt from another job (even
 * one that drew the same pair) is a transaction error with a protection status
 * that touches nothing, and its instances are never found by datagrams.
 *
 * Multi-segment registrations (GNI_MemRegisterSegments) are one memory domain
 * addressed by offset: the segments concatenated in list order, no padding.  A
 * segmented handle works on both sides of every post (FMA and RDMA PUT/GET, the
 * flagged and sync-flag variants, AMOs, CE results): as remote_mem_hndl,
 * remote_addr is the offset; as local_mem_hndl, local_addr is (0 included), and
 * a transfer may cross from one segment into the next on either side.  A local
 * range past the total length is INVALID_PARAM from the post itself (nothing
 * moves); a remote one is a transaction error.  An FMA PUT needs no local
 * handle: its local_addr is a virtual address unless the handle is segmented.
 * (GNI_SmsgInit's local mailbox is the msg_buffer pointer: not segmented.)
 *
 * Event data: every event on the initiator's CQ (LOCAL and GLOBAL POST events,
 * CQ-write completions, SMSG and MSGQ send completions) carries the endpoint's
 * local_event value, by default the remote_id it was bound with; every event at
 * the target (REMOTE events, SMSG arrivals) carries the initiator's
 * remote_event value, by default the initiator's inst_id.  GNI_EpSetEventData
 * sets both.
 *
 * MSGQ (ugni-sys/src/msgq.rs; tested by c-tests/ugni/msgq_node.c, msgq_basic.c): the
 * instances of one (ptag, cookie) with one NIC address on a machine are a node (under
 * snrun -N k, each group of k ranks) and share its MSGQ connections; each instance has
 * its own receive queue, and its GNI_MsgqProgress delivers only what was addressed to
 * it.  Our choices where the documents are silent: GNI_MsgqGetConnAttrs lists the
 * node's instances that have called GNI_MsgqInit so far (the caller first), so take it
 * after a barrier; a connection made by any local instance serves all of them;
 * GNI_MsgqSend to a node that is not connected, or to an instance its connection does
 * not list, is INVALID_STATE; every local instance that connected a node holds that
 * connection: GNI_MsgqConnRelease by a holder drops its hold and the last live hold
 * ends the connection, by an instance without a hold ends it at once, and for a node
 * not connected is INVALID_PARAM; GNI_MsgqRelease or exit of the connecting instance
 * ends no connection (connections last while any local instance has the MSGQ); at most
 * GNI_MSGQ_NODE_INSTS_MAX instances per node (one more: INVALID_STATE); more than
 * nloc_insts, or attributes that differ between local instances, are accepted and
 * logged, and the first instance's apply.
 *
 * A datagram still outstanding when its endpoint is destroyed is cancelled and
 * stays visible to GNI_PostDataProbe(ById) and GNI_PostdataProbeWaitById (which
 * it wakes) until one of them reports it.  Further decisions are documented
 * where each behaviour lives (ugni-sys/src/<area>.rs) and tested in c-tests/ugni.
 *
 * Collective engine (a software reduction tree; ugni-sys/src/ce.rs): a VCE is
 * named by (NIC address, CE id); a PE joins through an endpoint bound to the
 * VCE owner's address whose CE attributes are (VCE id, index, GNI_CE_CHILD_PE).
 * Our choices where the documents are silent: _S commands reduce the low 32
 * bits and leave the results' high halves zero; without GNI_CEMODE_TWO_OP
 * result2 is 0 (the index for the LIDX/GIDX commands); the result's control
 * word holds the low 32 bits of ce_red_id, the raised GNI_CE_FPE_* bits in bits
 * 35..32, bit 40 when contributions disagreed and bit 63 once delivered; a
 * post's GLOBAL event reports the transfer, GNI_CeCheckResult the reduction
 * (TRANSACTION_ERROR for disagreement or a trapped exception, also when the
 * VCE's owner has exited); GNI_CeCheckResult's length is not a byte count
 * (programs pass 1 for one result, 0, or sizeof(gni_ce_result_t)): any value
 * is accepted and the one result at `result` is checked; a second post on an endpoint before its previous
 * result arrived is INVALID_PARAM; the ROUND_* mode of the VCE that combines
 * applies, RC_* modes change nothing; every VCE configured with CQE_ONCOMP
 * gets one event per round (GNI_CQ_GET_CE_ID), CQE_ONERR only failed rounds.
 *
 * Thread cancellation: the blocking calls are cancellation points, deferred and
 * asynchronous, as in a C library: GNI_CqWaitEvent, GNI_CqVectorWaitEvent,
 * GNI_CqVectorMonitor, GNI_EpPostDataWait(ById), GNI_PostdataProbeWaitById (and
 * GNI_PostDataProbeWaitById), GNI_WaitErrorEvents and GNI_MsgqProgress.  A
 * request pending at the call, or arriving while it sleeps, ends the thread;
 * nothing is taken from a queue for it (events, datagrams, messages stay for the
 * next waiter) and everything it held is released.  No other call is a
 * cancellation point; a thread cancelled asynchronously while inside one of them
 * may end the process.  [cancel_wait]
 */
#ifndef _GNI_PUB_H_
#define _GNI_PUB_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Parameter direction annotations; they expand to nothing.  Guarded because
 * other headers (e.g. some Windows-compat layers) define them too. */
#ifndef IN
#define IN
#endif
#ifndef OUT
#define OUT
#endif
#ifndef INOUT
#define INOUT
#endif

/* ---- Version ------------------------------------------------------------ */

#define GNI_MAJOR_REV 0x00
#define GNI_MINOR_REV 0x5c
#define GNI_CODE_REV  0x0000

#define GNI_GET_MAJOR(value) (((value) >> 24) & 0xFF)
#define GNI_GET_MINOR(value) (((value) >> 16) & 0xFF)
#define GNI_GET_REV(value)   ((value) & 0xFFFF)

#define GNI_VERSION ((GNI_MAJOR_REV << 24) | (GNI_MINOR_REV << 16) | GNI_CODE_REV)
#define GNI_VERSION_CHECK(maj, min, code) (((maj) << 24) | ((min) << 16) | (code))

/* First API version with FMA sharing (GNI_CDM_MODE_FMA_SHARED). */
#define GNI_VERSION_FMA_SHARING 0x5b0000

/* ---- Protection tags and keys ------------------------------------------- */

enum {
    GNI_PTAG_LND = 1,
    GNI_PTAG_OFED,
    GNI_PTAG_USER_START,
    GNI_PTAG_LND_KNC = 128,
    GNI_PTAG_USER_END = 253,
    GNI_PTAG_HSNBOOT = 254,
    GNI_PTAG_MAX = 254,
    GNI_PTAG_LB = 255
};

/* Asks GNI_GetPtag-style callers to have a ptag allocated. */
#define GNI_FIND_ALLOC_PTAG GNI_PTAG_LB

enum {
    GNI_PKEY_INVALID = 0,
    GNI_PKEY_LND = 1,
    GNI_PKEY_OFED,
    GNI_PKEY_USER_START = 128,
    GNI_PKEY_USER_END = 65407,
    GNI_PKEY_HSNBOOT = 65408,
    GNI_PKEY_MAX = 65534,
    GNI_PKEY_LB = 65535
};

#define GNI_COOKIE_PKEY_MASK      0xFFFF
#define GNI_COOKIE_PKEY_SHIFT     16
#define GNI_COOKIE_CBPS_MDD_MASK  0x7
#define GNI_COOKIE_CBPS_MDD_SHIFT 3

/* cookie = pkey in bits 31..16, cbps_mdd (3 bits) in bits 5..3 */
#define GNI_JOB_CREATE_COOKIE(pkey, cbps_mdd)                          \
    (((uint32_t)(pkey) << GNI_COOKIE_PKEY_SHIFT) |                      \
     (((cbps_mdd) & GNI_COOKIE_CBPS_MDD_MASK) << GNI_COOKIE_CBPS_MDD_SHIFT))

/* ---- Short messaging limits ---------------------------------------------- */

#define GNI_SMSG_ANY_TAG             0xFF
#define FMA_SMSG_MAX_RETRANS_DEFAULT 10

/* ---- Communication domain modes (GNI_CdmCreate) ------------------------- */

#define GNI_CDM_MODE_FORK_NOCOPY             0x00000001
#define GNI_CDM_MODE_FORK_FULLCOPY           0x00000002
#define GNI_CDM_MODE_FORK_PARTCOPY           0x00000004
#define GNI_CDM_MODE_ERR_NO_KILL             0x00000008
#define GNI_CDM_MODE_ERR_ALL_KILL            0x00000010
#define GNI_CDM_MODE_FAST_DATAGRAM_POLL      0x00000020
#define GNI_CDM_MODE_BTE_SINGLE_CHANNEL      0x00000040
#define GNI_CDM_MODE_USE_PCI_IOMMU           0x00000080
#define GNI_CDM_MODE_MDD_DEDICATED           0x00000100
#define GNI_CDM_MODE_MDD_SHARED              0x00000200
#define GNI_CDM_MODE_DUAL_EVENTS             0x00001000
#define GNI_CDM_MODE_DLA_ENABLE_FORWARDING   0x00004000
#define GNI_CDM_MODE_DLA_DISABLE_FORWARDING  0x00008000
#define GNI_CDM_MODE_FMA_DEDICATED           0x00010000
#define GNI_CDM_MODE_FMA_SHARED              0x00020000
#define GNI_CDM_MODE_CACHED_AMO_ENABLED      0x00040000
#define GNI_CDM_MODE_CQ_NIC_LOCAL_PLACEMENT  0x00080000
#define GNI_CDM_MODE_FLBTE_DISABLE           0x00100000
#define GNI_CDM_MODE_FMA_SMALL_WINDOW        0x00200000
#define GNI_CDM_MODE_MASK                    0x0FFFFFFF
#define GNI_CDM_MODE_PRIV_RESERVED_1         0x10000000
#define GNI_CDM_MODE_PRIV_RESERVED_2         0x20000000
#define GNI_CDM_MODE_PRIV_RESERVED_3         0x40000000
#define GNI_CDM_MODE_PRIV_RESERVED_4         0x80000000
#define GNI_CDM_MODE_PRIV_MASK               0xF0000000

/* ---- Memory registration flags (GNI_MemRegister) ------------------------ */

#define GNI_MEM_READWRITE            0x00000000
#define GNI_MEM_READ_ONLY            0x00000001
#define GNI_MEM_USE_VMDH             0x00000002
#define GNI_MEM_USE_GART             0x00000004
#define GNI_MEM_PHYS_CONT            0x00000008
#define GNI_MEM_PHYS_SEGMENTS        0x00000010
#define GNI_MEM_STRICT_PI_ORDERING   0x00000020
#define GNI_MEM_PI_FLUSH             0x00000040
#define GNI_MEM_MDD_CLONE            0x00000080
#define GNI_MEM_RELAXED_PI_ORDERING  0x00000100
#define GNI_MEM_RESERVE_REGION       0x00000200
#define GNI_MEM_UPDATE_REGION        0x00000400
#define GNI_MEM_MDD_SHARED           0x00000800
#define GNI_MEM_MDD_DEDICATED        0x00001000
#define GNI_MEM_CUDA                 0x01000000

/* Bits 31..24 of the flags select external (non host) memory. */
#define GNI_EXMEM_FLAGS(flag)     ((flag) >> 24)
#define GNI_MEM_IS_EXTERNAL(flag) (GNI_EXMEM_FLAGS(flag))

/* ---- Memory handles ------------------------------------------------------ */

/* 16 bytes, copied by value between processes (e.g. through PMI). */
typedef struct gni_mem_handle {
    uint64_t qword1;
    uint64_t qword2;
} gni_mem_handle_t;

typedef enum gni_mem_handle_attr {
    GNI_MEMHNDL_ATTR_READONLY = 1,
    GNI_MEMHNDL_ATTR_VMDH,
    GNI_MEMHNDL_ATTR_MRT,
    GNI_MEMHNDL_ATTR_GART,
    GNI_MEMHNDL_ATTR_IOMMU,
    GNI_MEMHNDL_ATTR_PCI_IOMMU,
    GNI_MEMHNDL_ATTR_CLONE
} gni_mem_handle_attr_t;

/* ---- Opaque handles ------------------------------------------------------ */

typedef struct gni_nic   *gni_nic_handle_t;
typedef struct gni_cdm   *gni_cdm_handle_t;
typedef struct gni_ep    *gni_ep_handle_t;
typedef struct gni_cq    *gni_cq_handle_t;
typedef struct gni_err   *gni_err_handle_t;
typedef struct gni_msgq  *gni_msgq_handle_t;
typedef struct gni_ce    *gni_ce_handle_t;

/* ---- Short messaging attributes ------------------------------------------ */

typedef enum gni_smsg_type {
    GNI_SMSG_TYPE_INVALID = 0,
    GNI_SMSG_TYPE_MBOX,
    GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT
} gni_smsg_type_t;

typedef struct gni_smsg_attr {
    gni_smsg_type_t  msg_type;
    void            *msg_buffer;
    uint32_t         buff_size;
    gni_mem_handle_t mem_hndl;
    uint32_t         mbox_offset;
    uint16_t         mbox_maxcredit;
    uint32_t         msg_maxsize;
} gni_smsg_attr_t;

/* ---- Return codes -------------------------------------------------------- */

typedef enum gni_return {
    GNI_RC_SUCCESS = 0,
    GNI_RC_NOT_DONE,
    GNI_RC_INVALID_PARAM,
    GNI_RC_ERROR_RESOURCE,
    GNI_RC_TIMEOUT,
    GNI_RC_PERMISSION_ERROR,
    GNI_RC_DESCRIPTOR_ERROR,
    GNI_RC_ALIGNMENT_ERROR,
    GNI_RC_INVALID_STATE,
    GNI_RC_NO_MATCH,
    GNI_RC_SIZE_ERROR,
    GNI_RC_TRANSACTION_ERROR,
    GNI_RC_ILLEGAL_OP,
    GNI_RC_ERROR_NOMEM
} gni_return_t;

/* ---- Datagram state ------------------------------------------------------ */

typedef enum gni_post_state {
    GNI_POST_PENDING,
    GNI_POST_COMPLETED,
    GNI_POST_ERROR,
    GNI_POST_TIMEOUT,
    GNI_POST_TERMINATED,
    GNI_POST_REMOTE_DATA
} gni_post_state_t;

/* ---- Memory segments (GNI_MemRegisterSegments) ---------------------------- */

typedef struct gni_mem_segment {
    uint64_t address;
    uint64_t length;
} gni_mem_segment_t;

/* ---- Completion queues --------------------------------------------------- */

typedef uint32_t gni_cq_mode_t;

#define GNI_CQ_NOBLOCK          0x00000000
#define GNI_CQ_BLOCKING         0x00000001
#define GNI_CQ_EMULATED         0x00000002
#define GNI_CQ_EMULATED_INVALID (GNI_CQ_EMULATED | GNI_CQ_BLOCKING)
#define GNI_CQ_PHYS_PAGES       0x00000004
#define GNI_CQ_UNMANAGED        0x00000008

#define GNI_CQ_IS_NON_BLOCKING(modes)     (((modes) & GNI_CQ_BLOCKING) == GNI_CQ_NOBLOCK)
#define GNI_CQ_IS_BLOCKING(modes)         (((modes) & GNI_CQ_BLOCKING) == GNI_CQ_BLOCKING)
#define GNI_CQ_IS_EMULATED(modes)         (((modes) & GNI_CQ_EMULATED) == GNI_CQ_EMULATED)
#define GNI_CQ_IS_NOT_EMULATED(modes)     (((modes) & GNI_CQ_EMULATED) == 0)
#define GNI_CQ_IS_INVALID_EMULATED(modes) \
    (((modes) & GNI_CQ_EMULATED_INVALID) == GNI_CQ_EMULATED_INVALID)
#define GNI_CQ_USE_PHYS_PAGES(modes)      (((modes) & GNI_CQ_PHYS_PAGES) == GNI_CQ_PHYS_PAGES)

/* A completion queue entry.  softnic: its bit layout is private to
 * libugni; read it only through the functions / GNI_CQ_* names below. */
typedef uint64_t gni_cq_entry_t;

/* Values of GNI_CQ_GET_TYPE(entry). */
#define GNI_CQ_EVENT_TYPE_POST  0x0ULL
#define GNI_CQ_EVENT_TYPE_SMSG  0x1ULL
#define GNI_CQ_EVENT_TYPE_DMAPP 0x2ULL
#define GNI_CQ_EVENT_TYPE_MSGQ  0x3ULL

/* ---- Post descriptors ---------------------------------------------------- */

typedef enum gni_post_type {
    GNI_POST_RDMA_PUT = 1,
    GNI_POST_RDMA_GET,
    GNI_POST_FMA_PUT,
    GNI_POST_FMA_PUT_W_SYNCFLAG,
    GNI_POST_FMA_GET,
    GNI_POST_AMO,
    GNI_POST_CQWRITE,
    GNI_POST_CE,
    GNI_POST_FMA_GET_W_FLAG,
    GNI_POST_AMO_W_FLAG
} gni_post_type_t;

/* AMO commands.  0x1xx: no result is returned; 0x_1_: cached variant;
 * ATOMIC2 (Aries) forms: 0x2xx/0x3xx with _S = 32-bit operand. */
typedef enum gni_fma_cmd_type {
    GNI_FMA_ATOMIC_FADD        = 0x008,
    GNI_FMA_ATOMIC_FADD_C      = 0x018,
    GNI_FMA_ATOMIC_FAND        = 0x009,
    GNI_FMA_ATOMIC_FAND_C      = 0x019,
    GNI_FMA_ATOMIC_FOR         = 0x00A,
    GNI_FMA_ATOMIC_FOR_C       = 0x01A,
    GNI_FMA_ATOMIC_FXOR        = 0x00B,
    GNI_FMA_ATOMIC_FXOR_C      = 0x01B,
    GNI_FMA_ATOMIC_FAX         = 0x00C,
    GNI_FMA_ATOMIC_FAX_C       = 0x01C,
    GNI_FMA_ATOMIC_CSWAP       = 0x00D,
    GNI_FMA_ATOMIC_CSWAP_C     = 0x01D,
    GNI_FMA_ATOMIC2_FAND_S     = 0x240,
    GNI_FMA_ATOMIC2_FAND       = 0x041,
    GNI_FMA_ATOMIC2_FAND_SC    = 0x260,
    GNI_FMA_ATOMIC2_FAND_C     = 0x061,
    GNI_FMA_ATOMIC2_FOR_S      = 0x242,
    GNI_FMA_ATOMIC2_FOR        = 0x043,
    GNI_FMA_ATOMIC2_FOR_SC     = 0x262,
    GNI_FMA_ATOMIC2_FOR_C      = 0x063,
    GNI_FMA_ATOMIC2_FXOR_S     = 0x244,
    GNI_FMA_ATOMIC2_FXOR       = 0x045,
    GNI_FMA_ATOMIC2_FXOR_SC    = 0x264,
    GNI_FMA_ATOMIC2_FXOR_C     = 0x065,
    GNI_FMA_ATOMIC2_FSWAP_S    = 0x246,
    GNI_FMA_ATOMIC2_FSWAP      = 0x047,
    GNI_FMA_ATOMIC2_FSWAP_SC   = 0x266,
    GNI_FMA_ATOMIC2_FSWAP_C    = 0x067,
    GNI_FMA_ATOMIC2_FAX_S      = 0x248,
    GNI_FMA_ATOMIC2_FAX        = 0x049,
    GNI_FMA_ATOMIC2_FAX_SC     = 0x268,
    GNI_FMA_ATOMIC2_FAX_C      = 0x069,
    GNI_FMA_ATOMIC2_FCSWAP_S   = 0x24A,
    GNI_FMA_ATOMIC2_FCSWAP     = 0x04B,
    GNI_FMA_ATOMIC2_FCSWAP_SC  = 0x26A,
    GNI_FMA_ATOMIC2_FCSWAP_C   = 0x06B,
    GNI_FMA_ATOMIC2_FIMIN_S    = 0x250,
    GNI_FMA_ATOMIC2_FIMIN      = 0x051,
    GNI_FMA_ATOMIC2_FIMIN_SC   = 0x270,
    GNI_FMA_ATOMIC2_FIMIN_C    = 0x071,
    GNI_FMA_ATOMIC2_FIMAX_S    = 0x252,
    GNI_FMA_ATOMIC2_FIMAX      = 0x053,
    GNI_FMA_ATOMIC2_FIMAX_SC   = 0x272,
    GNI_FMA_ATOMIC2_FIMAX_C    = 0x073,
    GNI_FMA_ATOMIC2_FIADD_S    = 0x254,
    GNI_FMA_ATOMIC2_FIADD      = 0x055,
    GNI_FMA_ATOMIC2_FIADD_SC   = 0x274,
    GNI_FMA_ATOMIC2_FIADD_C    = 0x075,
    GNI_FMA_ATOMIC2_FFPMIN_S   = 0x258,
    GNI_FMA_ATOMIC2_FFPMIN     = 0x059,
    GNI_FMA_ATOMIC2_FFPMIN_SC  = 0x278,
    GNI_FMA_ATOMIC2_FFPMIN_C   = 0x079,
    GNI_FMA_ATOMIC2_FFPMAX_S   = 0x25A,
    GNI_FMA_ATOMIC2_FFPMAX     = 0x05B,
    GNI_FMA_ATOMIC2_FFPMAX_SC  = 0x27A,
    GNI_FMA_ATOMIC2_FFPMAX_C   = 0x07B,
    GNI_FMA_ATOMIC2_FFPADD_S   = 0x25C,
    GNI_FMA_ATOMIC2_FFPADD     = 0x05D,
    GNI_FMA_ATOMIC2_FFPADD_SC  = 0x27C,
    GNI_FMA_ATOMIC2_FFPADD_C   = 0x07D,
    GNI_FMA_ATOMIC_ADD         = 0x108,
    GNI_FMA_ATOMIC_ADD_C       = 0x118,
    GNI_FMA_ATOMIC_AND         = 0x109,
    GNI_FMA_ATOMIC_AND_C       = 0x119,
    GNI_FMA_ATOMIC_OR          = 0x10A,
    GNI_FMA_ATOMIC_OR_C        = 0x11A,
    GNI_FMA_ATOMIC_XOR         = 0x10B,
    GNI_FMA_ATOMIC_XOR_C       = 0x11B,
    GNI_FMA_ATOMIC_AX          = 0x10C,
    GNI_FMA_ATOMIC_AX_C        = 0x11C,
    GNI_FMA_ATOMIC2_AND_S      = 0x340,
    GNI_FMA_ATOMIC2_AND        = 0x141,
    GNI_FMA_ATOMIC2_AND_SC     = 0x360,
    GNI_FMA_ATOMIC2_AND_C      = 0x161,
    GNI_FMA_ATOMIC2_OR_S       = 0x342,
    GNI_FMA_ATOMIC2_OR         = 0x143,
    GNI_FMA_ATOMIC2_OR_SC      = 0x362,
    GNI_FMA_ATOMIC2_OR_C       = 0x163,
    GNI_FMA_ATOMIC2_XOR_S      = 0x344,
    GNI_FMA_ATOMIC2_XOR        = 0x145,
    GNI_FMA_ATOMIC2_XOR_SC     = 0x364,
    GNI_FMA_ATOMIC2_XOR_C      = 0x165,
    GNI_FMA_ATOMIC2_SWAP_S     = 0x346,
    GNI_FMA_ATOMIC2_SWAP       = 0x147,
    GNI_FMA_ATOMIC2_SWAP_SC    = 0x366,
    GNI_FMA_ATOMIC2_SWAP_C     = 0x167,
    GNI_FMA_ATOMIC2_AX_S       = 0x348,
    GNI_FMA_ATOMIC2_AX         = 0x149,
    GNI_FMA_ATOMIC2_AX_SC      = 0x368,
    GNI_FMA_ATOMIC2_AX_C       = 0x169,
    GNI_FMA_ATOMIC2_CSWAP_S    = 0x34A,
    GNI_FMA_ATOMIC2_CSWAP      = 0x14B,
    GNI_FMA_ATOMIC2_CSWAP_SC   = 0x36A,
    GNI_FMA_ATOMIC2_CSWAP_C    = 0x16B,
    GNI_FMA_ATOMIC2_IMIN_S     = 0x350,
    GNI_FMA_ATOMIC2_IMIN       = 0x151,
    GNI_FMA_ATOMIC2_IMIN_SC    = 0x370,
    GNI_FMA_ATOMIC2_IMIN_C     = 0x171,
    GNI_FMA_ATOMIC2_IMAX_S     = 0x352,
    GNI_FMA_ATOMIC2_IMAX       = 0x153,
    GNI_FMA_ATOMIC2_IMAX_SC    = 0x372,
    GNI_FMA_ATOMIC2_IMAX_C     = 0x173,
    GNI_FMA_ATOMIC2_IADD_S     = 0x354,
    GNI_FMA_ATOMIC2_IADD       = 0x155,
    GNI_FMA_ATOMIC2_IADD_SC    = 0x374,
    GNI_FMA_ATOMIC2_IADD_C     = 0x175,
    GNI_FMA_ATOMIC2_FPMIN_S    = 0x358,
    GNI_FMA_ATOMIC2_FPMIN      = 0x159,
    GNI_FMA_ATOMIC2_FPMIN_SC   = 0x378,
    GNI_FMA_ATOMIC2_FPMIN_C    = 0x179,
    GNI_FMA_ATOMIC2_FPMAX_S    = 0x35A,
    GNI_FMA_ATOMIC2_FPMAX      = 0x15B,
    GNI_FMA_ATOMIC2_FPMAX_SC   = 0x37A,
    GNI_FMA_ATOMIC2_FPMAX_C    = 0x17B,
    GNI_FMA_ATOMIC2_FPADD_S    = 0x35C,
    GNI_FMA_ATOMIC2_FPADD      = 0x15D,
    GNI_FMA_ATOMIC2_FPADD_SC   = 0x37C,
    GNI_FMA_ATOMIC2_FPADD_C    = 0x17D
} gni_fma_cmd_type_t;

/* Collective engine operations (descriptor field ce_cmd). */
typedef enum gni_ce_cmd_type {
    GNI_FMA_CE_AND_S          = 0x00,
    GNI_FMA_CE_AND            = 0x01,
    GNI_FMA_CE_OR_S           = 0x02,
    GNI_FMA_CE_OR             = 0x03,
    GNI_FMA_CE_XOR_S          = 0x04,
    GNI_FMA_CE_XOR            = 0x05,
    GNI_FMA_CE_IMIN_LIDX_S    = 0x10,
    GNI_FMA_CE_IMIN_LIDX      = 0x11,
    GNI_FMA_CE_IMAX_LIDX_S    = 0x12,
    GNI_FMA_CE_IMAX_LIDX      = 0x13,
    GNI_FMA_CE_IADD_S         = 0x14,
    GNI_FMA_CE_IADD           = 0x15,
    GNI_FMA_CE_FPMIN_LIDX_S   = 0x18,
    GNI_FMA_CE_FPMIN_LIDX     = 0x19,
    GNI_FMA_CE_FPMAX_LIDX_S   = 0x1A,
    GNI_FMA_CE_FPMAX_LIDX     = 0x1B,
    GNI_FMA_CE_FPADD_S        = 0x1C,
    GNI_FMA_CE_FPADD          = 0x1D,
    GNI_FMA_CE_IMIN_GIDX_S    = 0x30,
    GNI_FMA_CE_IMIN_GIDX      = 0x31,
    GNI_FMA_CE_IMAX_GIDX_S    = 0x32,
    GNI_FMA_CE_IMAX_GIDX      = 0x33,
    GNI_FMA_CE_FPMIN_GIDX_S   = 0x38,
    GNI_FMA_CE_FPMIN_GIDX     = 0x39,
    GNI_FMA_CE_FPMAX_GIDX_S   = 0x3A,
    GNI_FMA_CE_FPMAX_GIDX     = 0x3B
} gni_ce_cmd_type_t;

/* Result of a collective engine operation. */
typedef struct gni_ce_result {
    uint64_t control;
    uint64_t result1;
    uint64_t result2;
} gni_ce_result_t;

#define GNI_FMA_FLAGGED_RESPONSE_SIZE 4

#define GNI_CE_FPE_OP_INVAL   0x1
#define GNI_CE_FPE_OFLOW      0x2
#define GNI_CE_FPE_UFLOW      0x4
#define GNI_CE_FPE_PRECISION  0x8

#define GNI_CE_MODE_ROUND_UP      0x00000001
#define GNI_CE_MODE_ROUND_DOWN    0x00000002
#define GNI_CE_MODE_ROUND_NEAR    0x00000004
#define GNI_CE_MODE_ROUND_ZERO    0x00000008
#define GNI_CE_MODE_CQE_ONCOMP    0x00000010
#define GNI_CE_MODE_CQE_ONERR     0x00000040
#define GNI_CE_MODE_RC_NMIN_HASH  0x00000080
#define GNI_CE_MODE_RC_MIN_HASH   0x00000100
#define GNI_CE_MODE_RC_MNON_HASH  0x00000200
#define GNI_CE_MODE_RC_ADAPT      0x00000400

#define GNI_CE_MAX_CHILDREN 32

typedef enum {
    GNI_CE_CHILD_UNUSED,
    GNI_CE_CHILD_VCE,
    GNI_CE_CHILD_PE
} gni_ce_child_t;

/* Completion event requests (descriptor field cq_mode). */
#define GNI_CQMODE_SILENT        0x0000
#define GNI_CQMODE_LOCAL_EVENT   0x0001
#define GNI_CQMODE_GLOBAL_EVENT  0x0002
#define GNI_CQMODE_REMOTE_EVENT  0x0004
#define GNI_CQMODE_DUAL_EVENTS   (GNI_CQMODE_LOCAL_EVENT | GNI_CQMODE_GLOBAL_EVENT)

/* Routing (descriptor field dlvr_mode, GNI_SmsgSetDeliveryMode). */
#define GNI_DLVMODE_PERFORMANCE  0x0000
#define GNI_DLVMODE_NO_ADAPT     0x0001
#define GNI_DLVMODE_NO_HASH      0x0002
#define GNI_DLVMODE_NO_RADAPT    0x0004
#define GNI_DLVMODE_IN_ORDER     (GNI_DLVMODE_NO_ADAPT | GNI_DLVMODE_NO_HASH)
#define GNI_DLVMODE_MNON_HASH    GNI_DLVMODE_IN_ORDER
#define GNI_DLVMODE_NMIN_HASH    0x0008
#define GNI_DLVMODE_MIN_HASH     0x0010
#define GNI_DLVMODE_ADAPTIVE0    GNI_DLVMODE_PERFORMANCE
#define GNI_DLVMODE_ADAPTIVE1    0x0020
#define GNI_DLVMODE_ADAPTIVE2    0x0040
#define GNI_DLVMODE_ADAPTIVE3    0x0080
#define GNI_DLVMODE_ORDERED_TAIL 0x0100

/* Error subscription categories (gni_error_mask_t bits). */
#define GNI_ERRMASK_CORRECTABLE_MEMORY   (1 << 0)
#define GNI_ERRMASK_CRITICAL             (1 << 1)
#define GNI_ERRMASK_TRANSACTION          (1 << 2)
#define GNI_ERRMASK_ADDRESS_TRANSLATION  (1 << 3)
#define GNI_ERRMASK_TRANSIENT            (1 << 4)
#define GNI_ERRMASK_INFORMATIONAL        (1 << 5)
#define GNI_ERRMASK_DIAG_ONLY            (1 << 6)
#define GNI_ERRMASK_UNKNOWN_TRANSACTION  (1 << 7)

/* Descriptor field rdma_mode. */
#define GNI_RDMAMODE_PHYS_ADDR  0x0001
#define GNI_RDMAMODE_FENCE      0x0002
#define GNI_RDMAMODE_GETWC_DIS  0x0004

#define GNI_CEMODE_TWO_OP          (1 << 0)
#define GNI_CEMODE_FPE_OP_INVAL    (1 << 1)
#define GNI_CEMODE_FPE_OFLOW       (1 << 2)
#define GNI_CEMODE_FPE_UFLOW       (1 << 3)
#define GNI_CEMODE_FPE_PRECISION   (1 << 4)

/* One RDMA/FMA/AMO/CQ-write/CE request.  The caller owns the memory; the
 * library holds on to it from Post* until GNI_GetCompleted returns it. */
typedef struct gni_post_descriptor {
    void               *next_descr;
    void               *prev_descr;
    uint64_t            post_id;
    uint64_t            status;
    uint16_t            cq_mode_complete;
    gni_post_type_t     type;
    uint16_t            cq_mode;
    uint16_t            dlvr_mode;
    uint64_t            local_addr;
    gni_mem_handle_t    local_mem_hndl;
    uint64_t            remote_addr;
    gni_mem_handle_t    remote_mem_hndl;
    uint64_t            length;
    uint16_t            rdma_mode;
    gni_cq_handle_t     src_cq_hndl;
    uint64_t            sync_flag_value;
    uint64_t            sync_flag_addr;
    gni_fma_cmd_type_t  amo_cmd;
    uint64_t            first_operand;
    uint64_t            second_operand;
    uint64_t            cqwrite_value;   /* only the low 48 bits are delivered */
    gni_ce_cmd_type_t   ce_cmd;
    uint32_t            ce_mode;
    uint64_t            ce_red_id;
} gni_post_descriptor_t;

/* ---- Node translation table (privileged) --------------------------------- */

typedef struct gni_ntt_entry {
    uint32_t blck_addr;
    uint32_t rplc_addr;
    uint8_t  rplc_size;
} gni_ntt_entry_t;

typedef struct gni_ntt_descriptor {
    uint32_t group_size;
    uint8_t  granularity;
    union {
        uint32_t        *table;
        gni_ntt_entry_t *table_v2;
    } u;
    uint8_t  flags;
} gni_ntt_descriptor_t;

/* ---- Error events ---------------------------------------------------------- */

typedef struct gni_error_event {
    uint16_t error_code;
    uint8_t  error_category;
    uint8_t  ptag;
    uint32_t serial_number;
    uint64_t timestamp;
    uint64_t info_mmrs[4];
} gni_error_event_t;

typedef uint8_t gni_error_mask_t;

/* ---- Datagrams and short messages ----------------------------------------- */

#define GNI_DATAGRAM_MAXSIZE 128
#define GNI_SMSG_MAX_SIZE    65535

/* ---- Job limits (privileged) ------------------------------------------------ */

#define GNI_JOB_INVALID_LIMIT (-1)

#define GNI_JOB_CTRL_NTT_CLEANUP  (0x01)
#define GNI_JOB_CTRL_CE0_MASK     (1 << 0)
#define GNI_JOB_CTRL_CE1_MASK     (1 << 1)
#define GNI_JOB_CTRL_CE2_MASK     (1 << 2)
#define GNI_JOB_CTRL_CE3_MASK     (1 << 3)
#define GNI_JOB_CTRL_ALL_CE_MASK  (GNI_JOB_CTRL_CE0_MASK | GNI_JOB_CTRL_CE1_MASK | \
                                   GNI_JOB_CTRL_CE2_MASK | GNI_JOB_CTRL_CE3_MASK)

typedef struct gni_job_limits {
    int32_t mdd_limit;
    union {
        int32_t mrt_limit;
        struct {
            uint8_t ce_limit;
            uint8_t iommu_limit;
            uint8_t res_byte2;
            uint8_t res_byte3;
        } m;
    } a;
    union {
        int32_t gart_limit;
        int32_t dla_limit;
    } b;
    int32_t fma_limit;
    int32_t bte_limit;
    int32_t cq_limit;
    int32_t ntt_ctrl;
    int32_t ntt_base;
    int32_t ntt_size;
} gni_job_limits_t;

/* ---- Devices and resources ------------------------------------------------- */

typedef enum gni_nic_device {
    GNI_DEVICE_GEMINI = 0,
    GNI_DEVICE_ARIES = 1,
    GNI_DEVICE_PISCES = 2,
    GNI_DEVICE_LAST
} gni_nic_device_t;

typedef enum gni_dev_res {
    GNI_DEV_RES_FIRST = 0,
    GNI_DEV_RES_MDD,
    GNI_DEV_RES_MRT,
    GNI_DEV_RES_CQ,
    GNI_DEV_RES_FMA,
    GNI_DEV_RES_CE,
    GNI_DEV_RES_DLA,
    GNI_DEV_RES_LAST
} gni_dev_res_t;

typedef struct gni_dev_res_desc {
    uint64_t available;
    uint64_t reserved;
    uint64_t held;
    uint64_t total;
} gni_dev_res_desc_t;

typedef enum gni_job_res {
    GNI_JOB_RES_FIRST = 0,
    GNI_JOB_RES_MDD,
    GNI_JOB_RES_MRT,
    GNI_JOB_RES_IOMMU,
    GNI_JOB_RES_GART,
    GNI_JOB_RES_CQ,
    GNI_JOB_RES_FMA,
    GNI_JOB_RES_RMDA,
    GNI_JOB_RES_CE,
    GNI_JOB_RES_DLA,
    GNI_JOB_RES_SFMA,
    GNI_JOB_RES_LAST
} gni_job_res_t;

typedef struct gni_job_res_desc {
    uint64_t used;
    uint64_t limit;
} gni_job_res_desc_t;

/* ---- NIC statistics (GNI_GetNicStat) ---------------------------------------- */

typedef enum gni_statistic {
    GNI_STAT_SMSG_BUFF_CREDITS_STALL = 0,
    GNI_STAT_SMSG_DLA_STALL,
    GNI_STAT_SMSG_MBOX_CREDITS_STALL,
    GNI_STAT_SMSG_REQ_STALL,
    GNI_STAT_SMSG_RETRANS_COUNT,
    GNI_STAT_SMSG_RETRANS_DLA_COUNT,
    GNI_STAT_SMSG_RETRANS_STALL,
    GNI_NUM_STATS
} gni_statistic_t;

/* Names of the statistics, indexed by gni_statistic_t (GNI_NUM_STATS entries). */
extern const char *gni_statistic_str[];

/* ---- Message queues ---------------------------------------------------------- */

#define GNI_MSGQ_MSG_SZ_MAX      128
#define GNI_MSGQ_NODE_INSTS_MAX  48
#define GNI_MSGQ_MODE_BLOCKING   (0x01)

/* Receive callback of a message queue; called from GNI_MsgqProgress. */
typedef int gni_msgq_rcv_cb_func(uint32_t snd_id, uint32_t snd_pe, void *msg,
                                 uint8_t msg_tag, void *cb_data);

typedef struct gni_msgq_attr {
    uint32_t max_msg_sz;
    uint32_t smsg_q_sz;
    uint32_t rcv_pool_sz;
    uint32_t num_msgq_eps;
    uint32_t nloc_insts;
    uint8_t  modes;
    uint32_t rcv_cq_sz;
} gni_msgq_attr_t;

typedef struct gni_msgq_rem_inst {
    uint32_t         id;
    gni_mem_handle_t mdh;
    uint64_t         mdh_off;
} gni_msgq_rem_inst_t;

typedef struct gni_msgq_ep_attr {
    uint32_t            pe_addr;
    uint32_t            max_msg_sz;
    uint32_t            smsg_q_sz;
    uint32_t            num_insts;
    gni_msgq_rem_inst_t insts[GNI_MSGQ_NODE_INSTS_MAX];
} gni_msgq_ep_attr_t;

/* ---- Version information ----------------------------------------------------- */

#define MAX_BUILD_STRING_LENGTH 80

typedef struct gni_version_info {
    uint32_t ugni_version;
    uint32_t ugni_svn_revision;
    char     ugni_build_string[MAX_BUILD_STRING_LENGTH];
    uint32_t kgni_version;
    uint32_t kgni_svn_revision;
    char     kgni_build_string[MAX_BUILD_STRING_LENGTH];
} gni_version_info_t;

/* ---- Bandwidth / injection throttling ---------------------------------------- */

#define GNI_BI_FLAG_APPLY_NOW                0x1
#define GNI_BI_FLAG_APPLY_AFTER_THROTTLE     0x2
#define GNI_BI_FLAG_USE_DEFAULT_SETTINGS     0x4
#define GNI_BI_FLAG_VALUE_IS_NUM_ORB_ENTRIES 0x8

#define GNI_BI_INJECT_BW_MIN      0
#define GNI_BI_INJECT_BW_MAX      100
#define GNI_BI_INJECT_BW_ORB_MIN  0
#define GNI_BI_INJECT_BW_ORB_MAX  992

typedef struct gni_bi_desc {
    uint16_t current_bw;
    uint16_t current_aot_bw;
    uint16_t current_norbs;
    uint16_t flags;
    uint16_t sys_def_bw;
    uint16_t sys_def_aot_bw;
    uint16_t cle_seqnum;
    uint16_t hss_seqnum;
} gni_bi_desc_t;

/* Names of the return codes, indexed by gni_return_t: gni_err_str[rc]. */
extern const char *gni_err_str[];

/* ---- CQ entry accessors ------------------------------------------------------- */

/* Getters take the entry by value; setters take its address (the GNI_CQ_SET_*
 * macros add the '&'). */
uint64_t gni_cq_get_data(gni_cq_entry_t entry);
uint64_t gni_cq_get_source(gni_cq_entry_t entry);
uint64_t gni_cq_get_status(gni_cq_entry_t entry);
uint64_t gni_cq_get_info(gni_cq_entry_t entry);
uint64_t gni_cq_overrun(gni_cq_entry_t entry);
uint64_t gni_cq_rem_overrun(gni_cq_entry_t entry);
uint64_t gni_cq_get_inst_id(gni_cq_entry_t entry);
uint64_t gni_cq_get_rem_inst_id(gni_cq_entry_t entry);
uint64_t gni_cq_get_tid(gni_cq_entry_t entry);
uint64_t gni_cq_get_msg_id(gni_cq_entry_t entry);
uint64_t gni_cq_get_type(gni_cq_entry_t entry);
uint64_t gni_cq_get_block_id(gni_cq_entry_t entry);
uint64_t gni_cq_get_unsuccessful_cnt(gni_cq_entry_t entry);
uint64_t gni_cq_get_marker_id(gni_cq_entry_t entry);
uint64_t gni_cq_get_failed_enqueue_cnt(gni_cq_entry_t entry);
uint64_t gni_cq_get_ce_id(gni_cq_entry_t entry);
uint64_t gni_cq_get_reductn_id(gni_cq_entry_t entry);
uint64_t gni_cq_get_trans_type(gni_cq_entry_t entry);
void gni_cq_set_inst_id(gni_cq_entry_t *entry, uint64_t val);
void gni_cq_set_rem_inst_id(gni_cq_entry_t *entry, uint64_t val);
void gni_cq_set_tid(gni_cq_entry_t *entry, uint64_t val);
void gni_cq_set_msg_id(gni_cq_entry_t *entry, uint64_t val);
void gni_cq_set_type(gni_cq_entry_t *entry, uint64_t val);
void gni_cq_clr_status(gni_cq_entry_t *entry);
unsigned gni_cq_status_dla_overflow(gni_cq_entry_t entry);
unsigned gni_cq_bte_enq_status(gni_cq_entry_t entry);

uint64_t gni_ce_res_get_status(gni_ce_result_t *res);
uint64_t gni_ce_res_status_ok(gni_ce_result_t *res);
uint64_t gni_ce_res_get_fpe(gni_ce_result_t *res);
uint64_t gni_ce_res_get_red_id(gni_ce_result_t *res);

#define GNI_CQ_GET_DATA                gni_cq_get_data
#define GNI_CQ_GET_SOURCE              gni_cq_get_source
#define GNI_CQ_GET_STATUS              gni_cq_get_status
#define GNI_CQ_GET_INFO                gni_cq_get_info
#define GNI_CQ_OVERRUN                 gni_cq_overrun
#define GNI_CQ_REM_OVERRUN             gni_cq_rem_overrun
#define GNI_CQ_GET_INST_ID             gni_cq_get_inst_id
#define GNI_CQ_GET_REM_INST_ID         gni_cq_get_rem_inst_id
#define GNI_CQ_GET_TID                 gni_cq_get_tid
#define GNI_CQ_GET_MSG_ID              gni_cq_get_msg_id
#define GNI_CQ_GET_TYPE                gni_cq_get_type
#define GNI_CQ_GET_BLOCK_ID            gni_cq_get_block_id
#define GNI_CQ_GET_UNSUCCESSFUL_CNT    gni_cq_get_unsuccessful_cnt
#define GNI_CQ_GET_MARKER_ID           gni_cq_get_marker_id
#define GNI_CQ_GET_FAILED_ENQUEUE_CNT  gni_cq_get_failed_enqueue_cnt
#define GNI_CQ_GET_CE_ID               gni_cq_get_ce_id
#define GNI_CQ_GET_REDUCTN_ID          gni_cq_get_reductn_id
#define GNI_CQ_GET_TRANS_TYPE          gni_cq_get_trans_type

#define GNI_CQ_SET_INST_ID(entry, val)     gni_cq_set_inst_id(&(entry), (val))
#define GNI_CQ_SET_REM_INST_ID(entry, val) gni_cq_set_rem_inst_id(&(entry), (val))
#define GNI_CQ_SET_TID(entry, val)         gni_cq_set_tid(&(entry), (val))
#define GNI_CQ_SET_MSG_ID(entry, val)      gni_cq_set_msg_id(&(entry), (val))
#define GNI_CQ_SET_TYPE(entry, val)        gni_cq_set_type(&(entry), (val))
#define GNI_CQ_CLR_STATUS(entry)           gni_cq_clr_status(&(entry))
#define GNI_CQ_STATUS_OK(entry)            (gni_cq_get_status(entry) == 0)
#define GNI_CQ_STATUS_DLA_OVERFLOW(entry)  (gni_cq_status_dla_overflow(entry))
#define GNI_CQ_BTE_ENQ_STATUS(entry)       gni_cq_bte_enq_status(entry)

#define GNI_CE_RES_GET_STATUS  gni_ce_res_get_status
#define GNI_CE_RES_STATUS_OK   gni_ce_res_status_ok
#define GNI_CE_RES_GET_FPE     gni_ce_res_get_fpe
#define GNI_CE_RES_GET_RED_ID  gni_ce_res_get_red_id

/* ---- Communication domains and jobs ------------------------------------------ */

gni_return_t GNI_CdmCreate(IN uint32_t inst_id, IN uint8_t ptag, IN uint32_t cookie,
                           IN uint32_t modes, OUT gni_cdm_handle_t *cdm_hndl);
gni_return_t GNI_CdmDestroy(IN gni_cdm_handle_t cdm_hndl);
gni_return_t GNI_CdmGetNicAddress(IN uint32_t device_id, OUT uint32_t *address,
                                  OUT uint32_t *cpu_id);
gni_return_t GNI_CdmAttach(IN gni_cdm_handle_t cdm_hndl, IN uint32_t device_id,
                           OUT uint32_t *local_addr, OUT gni_nic_handle_t *nic_hndl);
gni_return_t GNI_CdmCheckpoint(IN gni_cdm_handle_t cdm_handle);
gni_return_t GNI_CdmResume(IN gni_cdm_handle_t cdm_handle);
gni_return_t GNI_SuspendJob(IN uint32_t device_id, IN uint64_t job_id, IN uint8_t ptag,
                            IN uint32_t cookie, IN uint32_t timeout);
gni_return_t GNI_ResumeJob(IN uint32_t device_id, IN uint64_t job_id, IN uint8_t ptag,
                           IN uint32_t cookie);
gni_return_t GNI_ConfigureNTT(IN int device_id, IN gni_ntt_descriptor_t *ntt_desc,
                              OUT uint32_t *ntt_base);
gni_return_t GNI_ConfigureJob(IN uint32_t device_id, IN uint64_t job_id, IN uint8_t ptag,
                              IN uint32_t cookie, IN gni_job_limits_t *limits);
gni_return_t GNI_ConfigureNTTandJob(IN int device_id, IN uint64_t job_id, IN uint8_t ptag,
                                    IN uint32_t cookie, IN gni_job_limits_t *limits,
                                    IN gni_ntt_descriptor_t *ntt_desc,
                                    OUT uint32_t *ntt_base);

/* ---- Endpoints and datagrams ------------------------------------------------- */

gni_return_t GNI_EpCreate(IN gni_nic_handle_t nic_hndl, IN gni_cq_handle_t src_cq_hndl,
                          OUT gni_ep_handle_t *ep_hndl);
gni_return_t GNI_EpSetEventData(IN gni_ep_handle_t ep_hndl, IN uint32_t local_event,
                                IN uint32_t remote_event);
gni_return_t GNI_EpBind(IN gni_ep_handle_t ep_hndl, IN uint32_t remote_addr,
                        IN uint32_t remote_id);
gni_return_t GNI_EpUnbind(IN gni_ep_handle_t ep_hndl);
gni_return_t GNI_EpIdle(IN gni_ep_handle_t ep_hndl);
gni_return_t GNI_EpDestroy(IN gni_ep_handle_t ep_hndl);
gni_return_t GNI_EpPostData(IN gni_ep_handle_t ep_hndl, IN void *in_data,
                            IN uint16_t data_len, IN void *out_buf, IN uint16_t buf_size);
gni_return_t GNI_EpPostDataWId(IN gni_ep_handle_t ep_hndl, IN void *in_data,
                               IN uint16_t data_len, IN void *out_buf, IN uint16_t buf_size,
                               IN uint64_t datagram_id);
gni_return_t GNI_EpPostDataTest(IN gni_ep_handle_t ep_hndl, OUT gni_post_state_t *post_state,
                                OUT uint32_t *remote_addr, OUT uint32_t *remote_id);
gni_return_t GNI_EpPostDataTestById(IN gni_ep_handle_t ep_hndl, IN uint64_t datagram_id,
                                    OUT gni_post_state_t *post_state,
                                    OUT uint32_t *remote_addr, OUT uint32_t *remote_id);
gni_return_t GNI_EpPostDataWait(IN gni_ep_handle_t ep_hndl, IN uint32_t timeout,
                                OUT gni_post_state_t *post_state,
                                OUT uint32_t *remote_addr, OUT uint32_t *remote_id);
gni_return_t GNI_EpPostDataWaitById(IN gni_ep_handle_t ep_hndl, IN uint64_t datagram_id,
                                    IN uint32_t timeout, OUT gni_post_state_t *post_state,
                                    OUT uint32_t *remote_addr, OUT uint32_t *remote_id);
gni_return_t GNI_PostDataProbe(IN gni_nic_handle_t nic_hndl, OUT uint32_t *remote_addr,
                               OUT uint32_t *remote_id);
gni_return_t GNI_PostDataProbeById(IN gni_nic_handle_t nic_hndl, OUT uint64_t *datagram_id);
gni_return_t GNI_PostdataProbeWaitById(IN gni_nic_handle_t nic_hndl, IN uint32_t timeout,
                                       OUT uint64_t *datagram_id);
gni_return_t GNI_EpPostDataCancel(IN gni_ep_handle_t ep_hndl);
gni_return_t GNI_EpPostDataCancelById(IN gni_ep_handle_t ep_hndl, IN uint64_t datagram_id);

/* ---- Memory registration ----------------------------------------------------- */

gni_return_t GNI_MemRegister(IN gni_nic_handle_t nic_hndl, IN uint64_t address,
                             IN uint64_t length, IN gni_cq_handle_t dst_cq_hndl,
                             IN uint32_t flags, IN uint32_t vmdh_index,
                             INOUT gni_mem_handle_t *mem_hndl);
gni_return_t GNI_MemRegisterSegments(IN gni_nic_handle_t nic_hndl,
                                     IN gni_mem_segment_t *mem_segments,
                                     IN uint32_t segments_cnt, IN gni_cq_handle_t dst_cq_hndl,
                                     IN uint32_t flags, IN uint32_t vmdh_index,
                                     INOUT gni_mem_handle_t *mem_hndl);
gni_return_t GNI_SetMddResources(IN gni_nic_handle_t nic_hndl, IN uint32_t num_entries);
gni_return_t GNI_MemDeregister(IN gni_nic_handle_t nic_hndl, IN gni_mem_handle_t *mem_hndl);
gni_return_t GNI_MemHndlQueryAttr(IN gni_mem_handle_t *mem_hndl, IN gni_mem_handle_attr_t attr,
                                  OUT int *yesno);
gni_return_t GNI_RebuildMemHndl(IN gni_mem_handle_t *src_mem_hndl, IN uint32_t vmdh_index,
                                OUT gni_mem_handle_t *dst_mem_hndl);
gni_return_t GNI_MemQueryHndls(IN gni_nic_handle_t nic_hndl, IN int fd,
                               INOUT gni_mem_handle_t *mem_hndl, OUT uint64_t *address,
                               OUT uint64_t *length);

/* ---- Completion queues and transfers ------------------------------------------ */

gni_return_t GNI_CqCreate(IN gni_nic_handle_t nic_hndl, IN uint32_t entry_count,
                          IN uint32_t delay_count, IN gni_cq_mode_t mode,
                          IN void (*handler)(gni_cq_entry_t *, void *),
                          IN void *context, OUT gni_cq_handle_t *cq_hndl);
gni_return_t GNI_CqDestroy(IN gni_cq_handle_t cq_hndl);
gni_return_t GNI_PostRdma(IN gni_ep_handle_t ep_hndl, IN gni_post_descriptor_t *post_descr);
gni_return_t GNI_PostFma(IN gni_ep_handle_t ep_hndl, IN gni_post_descriptor_t *post_descr);
gni_return_t GNI_PostCqWrite(IN gni_ep_handle_t ep_hndl, IN gni_post_descriptor_t *post_descr);
gni_return_t GNI_GetCompleted(IN gni_cq_handle_t cq_hndl, IN gni_cq_entry_t event_data,
                              OUT gni_post_descriptor_t **post_descr);
gni_return_t GNI_CqGetEvent(IN gni_cq_handle_t cq_hndl, OUT gni_cq_entry_t *event_data);
gni_return_t GNI_CqWaitEvent(IN gni_cq_handle_t cq_hndl, IN uint64_t timeout,
                             OUT gni_cq_entry_t *event_data);
gni_return_t GNI_CqVectorWaitEvent(IN gni_cq_handle_t *cq_hndls, IN uint32_t num_cqs,
                                   IN uint64_t timeout, OUT gni_cq_entry_t *event_data,
                                   OUT uint32_t *which);
gni_return_t GNI_CqVectorMonitor(IN gni_cq_handle_t *cq_hndls, IN uint32_t num_cqs,
                                 IN uint64_t timeout, OUT uint32_t *which);
gni_return_t GNI_CqInterruptMask(IN gni_cq_handle_t cq_hndl);
gni_return_t GNI_CqInterruptUnmask(IN gni_cq_handle_t cq_hndl);
gni_return_t GNI_CqTestEvent(IN gni_cq_handle_t cq_hndl);
gni_return_t GNI_CqErrorStr(IN gni_cq_entry_t entry, OUT void *buffer, IN uint32_t len);
gni_return_t GNI_CqErrorRecoverable(IN gni_cq_entry_t entry, OUT uint32_t *recoverable);

/* ---- Short messaging ------------------------------------------------------------ */

gni_return_t GNI_SmsgBufferSizeNeeded(IN gni_smsg_attr_t *smsg_attr, OUT unsigned int *size);
gni_return_t GNI_SmsgInit(IN gni_ep_handle_t ep_hndl, IN gni_smsg_attr_t *local_smsg_attr,
                          IN gni_smsg_attr_t *remote_smsg_attr);
gni_return_t GNI_SmsgSetDeliveryMode(IN gni_nic_handle_t nic_handle, IN uint16_t dlvr_mode);
gni_return_t GNI_SmsgSend(IN gni_ep_handle_t ep_hndl, IN void *header, IN uint32_t header_length,
                          IN void *data, IN uint32_t data_length, IN uint32_t msg_id);
gni_return_t GNI_SmsgSendWTag(IN gni_ep_handle_t ep_hndl, IN void *header,
                              IN uint32_t header_length, IN void *data,
                              IN uint32_t data_length, IN uint32_t msg_id, IN uint8_t tag);
gni_return_t GNI_SmsgGetNext(IN gni_ep_handle_t ep_hndl, OUT void **header);
gni_return_t GNI_SmsgGetNextWTag(IN gni_ep_handle_t ep_hndl, OUT void **header,
                                 OUT uint8_t *tag);
gni_return_t GNI_SmsgRelease(IN gni_ep_handle_t ep_hndl);
gni_return_t GNI_SmsgSetMaxRetrans(IN gni_nic_handle_t nic_handle, IN uint16_t max_retrans);

/* ---- Message queues ------------------------------------------------------------- */

gni_return_t GNI_MsgqInit(IN gni_nic_handle_t nic_hndl, IN gni_msgq_rcv_cb_func *rcv_cb,
                          IN void *cb_data, IN gni_cq_handle_t snd_cq,
                          IN gni_msgq_attr_t *attrs, OUT gni_msgq_handle_t *msgq_hndl);
gni_return_t GNI_MsgqRelease(IN gni_msgq_handle_t msgq_hndl);
gni_return_t GNI_MsgqIdle(IN gni_msgq_handle_t msgq_hndl);
gni_return_t GNI_MsgqGetConnAttrs(IN gni_msgq_handle_t msgq_hndl, IN uint32_t pe_addr,
                                  OUT gni_msgq_ep_attr_t *attrs, OUT uint32_t *attrs_size);
gni_return_t GNI_MsgqConnect(IN gni_msgq_handle_t msgq_hndl, IN uint32_t pe_addr,
                             IN gni_msgq_ep_attr_t *attrs);
gni_return_t GNI_MsgqConnRelease(IN gni_msgq_handle_t msgq_hndl, IN uint32_t pe_addr);
gni_return_t GNI_MsgqSend(IN gni_msgq_handle_t msgq_hndl, IN gni_ep_handle_t ep_hndl,
                          IN void *hdr, IN uint32_t hdr_len, IN void *msg,
                          IN uint32_t msg_len, IN uint32_t msg_id, IN uint8_t msg_tag);
gni_return_t GNI_MsgqProgress(IN gni_msgq_handle_t msgq_hndl, IN uint32_t timeout);
gni_return_t GNI_MsgqSize(IN gni_msgq_attr_t *attrs, OUT uint32_t *size);

/* ---- Error events ----------------------------------------------------------------- */

gni_return_t GNI_SubscribeErrors(IN gni_nic_handle_t nic_handle, IN uint32_t device_id,
                                 IN gni_error_mask_t mask, IN uint32_t EEQ_size,
                                 OUT gni_err_handle_t *err_handle);
gni_return_t GNI_ReleaseErrors(IN gni_err_handle_t err_handle);
gni_return_t GNI_GetErrorMask(IN gni_err_handle_t err_handle, OUT gni_error_mask_t *mask);
/* mask_out receives the previous mask. */
gni_return_t GNI_SetErrorMask(IN gni_err_handle_t err_handle, IN gni_error_mask_t mask_in,
                              OUT gni_error_mask_t *mask_out);
gni_return_t GNI_GetErrorEvent(IN gni_err_handle_t err_handle, OUT gni_error_event_t *event);
/* On GNI_RC_TIMEOUT, *num_events may still be non-zero. */
gni_return_t GNI_WaitErrorEvents(IN gni_err_handle_t err_handle, OUT gni_error_event_t *events,
                                 IN uint32_t events_size, IN uint32_t timeout,
                                 OUT uint32_t *num_events);
gni_return_t GNI_SetErrorPtag(IN gni_err_handle_t err_handle, IN uint8_t ptag);

/* ---- Devices, versions, resources ---------------------------------------------------- */

gni_return_t GNI_GetNumLocalDevices(OUT int *num_devices);
gni_return_t GNI_GetLocalDeviceIds(IN int len, OUT int *device_ids);
gni_return_t GNI_GetVersion(OUT uint32_t *version);
gni_return_t GNI_GetVersionInformation(OUT gni_version_info_t *version_info);
gni_return_t GNI_GetDeviceType(OUT gni_nic_device_t *dev_type);
gni_return_t GNI_GetDevResInfo(IN uint32_t device_id, IN gni_dev_res_t res_type,
                               OUT gni_dev_res_desc_t *res_desc);
gni_return_t GNI_GetJobResInfo(IN uint32_t device_id, IN uint8_t ptag, IN gni_job_res_t res_type,
                               OUT gni_job_res_desc_t *res_desc);
gni_return_t GNI_GetNttGran(IN uint32_t device_id, OUT uint32_t *ntt_gran);
gni_return_t GNI_GetPtag(IN uint32_t device_id, IN uint32_t cookie, OUT uint8_t *ptag);

/* ---- Collective engine -------------------------------------------------------------- */

gni_return_t GNI_CeCreate(IN gni_nic_handle_t nic_hndl, OUT gni_ce_handle_t *ce_hndl);
gni_return_t GNI_CeGetId(IN gni_ce_handle_t ce_hndl, OUT uint32_t *ce_id);
gni_return_t GNI_EpSetCeAttr(IN gni_ep_handle_t ep_hndl, IN uint32_t ce_id, IN uint32_t child_id,
                             IN gni_ce_child_t child_type);
gni_return_t GNI_CeConfigure(IN gni_ce_handle_t ce_hndl, IN gni_ep_handle_t *child_eps,
                             IN uint32_t num_child_eps, IN gni_ep_handle_t parent_ep,
                             IN gni_cq_handle_t cq_hndl, IN uint32_t modes);
gni_return_t GNI_CeCheckResult(IN gni_ce_result_t *result, IN uint32_t length);
gni_return_t GNI_CeDestroy(IN gni_ce_handle_t ce_hndl);

/* ---- Bandwidth throttling and NIC statistics ------------------------------------------ */

gni_return_t GNI_SetBIConfig(IN uint32_t device_id, IN uint16_t bw, IN uint16_t aot_bw,
                             IN uint16_t modes);
gni_return_t GNI_GetBIConfig(IN uint32_t device_id, OUT gni_bi_desc_t *desc);
gni_return_t GNI_BISyncWait(IN uint32_t device_id, IN uint32_t timeout);
gni_return_t GNI_GetNicStat(IN gni_nic_handle_t nic_hndl, IN gni_statistic_t stat,
                            OUT uint32_t *value);
gni_return_t GNI_ResetNicStat(IN gni_nic_handle_t nic_hndl, IN gni_statistic_t stat);

/* ---- softnic: spellings from the 2010 uGNI manual ------------------------------------
 * Programs written from the manual rather than the header use these names;
 * they are aliases of the header's own and add no new behaviour. */
typedef gni_post_state_t gni_ep_post_state_t;
#define GNI_POST_COMPLETE         GNI_POST_COMPLETED
#define GNI_DLVRMODE_PERFORMANCE  GNI_DLVMODE_PERFORMANCE
#define GNI_DLVRMODE_NO_ADAPT     GNI_DLVMODE_NO_ADAPT
#define GNI_DLVRMODE_NO_HASH      GNI_DLVMODE_NO_HASH
#define GNI_DLVRMODE_NO_RADAPT    GNI_DLVMODE_NO_RADAPT
#define GNI_DLVRMODE_IN_ORDER     GNI_DLVMODE_IN_ORDER
/* Same function as GNI_PostdataProbeWaitById (both symbols are exported). */
gni_return_t GNI_PostDataProbeWaitById(IN gni_nic_handle_t nic_hndl, IN uint32_t timeout,
                                       OUT uint64_t *datagram_id);

#ifdef __cplusplus
}
#endif

#endif /* _GNI_PUB_H_ */
