/* portals3.h -- softnic's Portals 3 API, provided by libportals.so (also
 * installed as libportals3.so, with the NAL library libportals3-utcp.so).
 *
 * Written for softnic from the ABI facts of the Portals 3.3 reference
 * implementation (names, values, struct layouts, prototypes) and from the
 * Portals 3.2 specification (semantics); it is not a copy of any vendor
 * header.  Programs written for the reference implementation compile
 * unchanged: build with -DP3_NAL='<p3nal_utcp.h>' and link -lportals3
 * -lportals3-utcp, or simply -lportals (pkg-config portals3).  This header
 * also includes <p3nal_utcp.h>, <p3rt/p3rt.h> and <p3api/debug.h>, so
 * PTL_IFACE_DEFAULT, the rank runtime and the debug calls are always declared.
 * The 3.2 specification's spellings of the codes are accepted as aliases
 * (PTL_NOACK_REQ, PTL_INV_MD, PTL_NOSPACE, ...).
 *
 * How this implementation behaves where the documents are silent (tests in
 * c-tests/portals/, named in brackets):
 *
 * - Ids.  One interface, PTL_IFACE_DEFAULT (PTL_IFACE_UTCP0, or PTL_IFACE_IBNG0
 *   which names the same interface); any other is PTL_IFACE_INVALID, and
 *   PtlInit reports max_interfaces 1.  The NID is the
 *   launcher's node (each snrun -N group is one virtual node), the PID the
 *   process's rank among the ranks of its node (or its entry of a PID map set
 *   up before PtlNIInit, below), unless PtlNIInit asks for a well-known pid
 *   (PTL_PID_INVALID when that pid is taken on the node).
 *   They come from PTL_MY_RID / PTL_NIDMAP / PTL_PIDMAP / PTL_MY_JID (snrun
 *   sets them), else from PMI (mpiexec).  The job id (PtlGetJid) is part of
 *   a process's address: processes of different jobs do not reach each
 *   other.  PtlGetUid is getuid().  [ptl_basic, ptl_ring, ptl_ref]
 * - Runtime set-up before PtlNIInit (p3rt.h): PtlSetRank, PtlSetNIDMap,
 *   PtlSetPIDMap and the getters work before PtlNIInit (and before PtlInit),
 *   on any handle (PTL_INVALID_HANDLE is the usual one); what they set is
 *   kept for the next NI, and PtlNIInit(PTL_PID_ANY) takes its PID from the
 *   PID map entry of its rank.  The NID stays the launcher's node (a NID map
 *   naming another one for this rank is only warned about: NIDs route).  So
 *   a child forked before its parent's PtlNIInit that sets rank + size of
 *   2 * size, and maps giving it the parent's PID + size, gets that PID (on
 *   one machine: across machines a child is no rank of the launcher, and
 *   cannot join the collective PtlNIInit below).  A child forked after its
 *   parent's PtlNIInit cannot initialise an NI (like a NIC context, the
 *   fabric does not cross fork): PtlNIInit fails.  Once an NI is up, the
 *   runtime calls take its handle or PTL_INVALID_HANDLE.
 *   [ptl_rt, ptl_fork, ptl_badinput]
 * - When the job spans machines (the network engine runs: several nodes in the
 *   launcher's map, or SOFTNIC_ENGINE=net), a PtlNIInit that creates the
 *   interface is collective: it ends with a PMI barrier, which makes every rank's network
 *   address visible (MPICH's PMI-1 server publishes the key-value space to other
 *   hosts only at barriers).  Every rank must call it, as Portals programs do at
 *   start-up.  On one machine it is not collective.  [ptl_ref_vh2]
 * - Repeated PtlNIInit returns PTL_OK and the existing handle (PTL_PID_INVALID
 *   if it names another explicit pid); actual may be NULL.  Desired limits are
 *   honoured up to the maxima below; values <= 0 take the defaults.
 *   Limits (default / maximum): max_mes 8192 / 65534, max_mds 8192 / 65534,
 *   max_eqs 256 / 4096, max_ac_index 63 / 1023, max_pt_index 255 / 1023,
 *   max_md_iovecs 32 / 256, max_me_list = max_mes, max_getput_md 64 / 4096.
 *   [ptl_basic, ptl_badinput]
 * - Handles are 32-bit: bits 31-30 the kind (NI 0, ME 1, MD 2, EQ 3), 29-16 a
 *   generation (offset by a random number per NI, so handles of an earlier NI
 *   of the process do not name the new one's objects), 15-0 the index.  A
 *   handle of an unlinked or freed object is stale and refused
 *   (PTL_*_INVALID); 0 and the PTL_*NONE / PTL_INVALID_HANDLE values are never
 *   valid.  [ptl_badinput]
 * - Execution.  PtlPut, PtlGet and PtlGetPut carry the whole operation out
 *   before they return: the target's access check, match-list walk and
 *   deposit run as the fabric's Portals service on the target's Portals
 *   state, which lives in the target's shared memory (on this machine the
 *   calling process runs it there: the target takes no part, it may compute,
 *   sleep in PtlEQWait or spin on the buffer; on another machine the
 *   target's network progress thread runs it).  So when PtlPut returns, the
 *   target's events, its SEND events and its ACK are all in their queues.
 *   One lock in the target's shared memory serialises its match processing
 *   and its own list/MD calls; a process that dies holding it is detected and
 *   the lock taken over.  Messages between a pair are delivered in order.
 *   [ptl_ring, ptl_threads, ptl_death]
 * - Causal order at the initiator: every event an operation logs in the
 *   initiator's own queues (SEND_END, ACK, REPLY_START/END, UNLINK) comes
 *   before any event a reaction of its target can put there (a put back, a
 *   get), on one machine and across machines.  When the operation cannot
 *   keep its own NI's lock throughout (a first contact, a busy target, more
 *   than 8 KiB, another machine), its queues hold back what others deposit
 *   meanwhile (events from anyone, also other threads' operations: they
 *   become visible when it ends) and its own events go in before them.
 *   [ptl_rt, ptl_eqfull]
 * - Large messages.  On one machine data moves once, straight between the
 *   two buffers, whatever the size.  Across machines data up to 256 KiB
 *   travels with the request; larger puts and gets are matched first (the
 *   START event, threshold and offset are taken), then moved with RDMA into
 *   or out of the matched MD's registered memory, then completed (END event,
 *   ack, auto-unlink).  [ptl_ring]
 * - A target that is not up yet: a put, get or getput to a process of this
 *   job (a process id in the rank maps, the runtime's or the launcher's)
 *   whose NI does not exist yet waits for it, polling with naps of 1 to 20
 *   ms, at most SOFTNIC_PTL_CONNECT_TIMEOUT_MS (60000) milliseconds, as the
 *   reference's transport retries its connection; the call returns once
 *   the operation is done.  Across machines PtlNIInit is collective (above),
 *   so targets there are up once it returns.  A target fails at once when
 *   it is known gone: it finalised (PtlNIFini leaves a tombstone while the
 *   process lives; its next PtlNIInit removes it, and no other process can
 *   take that PID meanwhile), this process reached it before and it has
 *   exited or ended since, or it was already waited for in vain.  Like the
 *   reference's, a process never reached that has exited is not told from
 *   one not started yet: it is waited for.  [ptl_late, ptl_ring, ptl_death]
 * - Target process missing (an id outside the job with no NI, a target
 *   gone, or one that did not come): the initiator's SEND_END (put) or
 *   REPLY_START/REPLY_END (get) carries ni_fail_type PTL_NI_FAIL and mlength
 *   0, no ACK.  A request the target rejects (access control, no matching
 *   MD) is dropped silently and counted in the target's PTL_SR_DROP_COUNT.
 *   [ptl_late, ptl_badinput, ptl_death]
 * - Matching follows the 3.2 walk: MEs without an MD, inactive MDs, MDs that
 *   do not enable the operation and MDs without room (no PTL_MD_TRUNCATE) are
 *   skipped; the match predicate is ((bits ^ me_bits) & ~ignore_bits) == 0.
 *   Offsets advance by mlength; PTL_MD_MAX_SIZE caps a request at max_size
 *   and makes a locally managed MD inactive when length - offset < max_size.
 *   Thresholds count accepted target operations and, at the initiator, a
 *   put's send, its ack and a get's reply (these are never refused for the
 *   threshold).  Auto-unlink (unlink_op PTL_UNLINK) happens after the
 *   operation that made the MD inactive and logs PTL_EVENT_UNLINK (link = the
 *   operation's link); never for an MD created or updated inactive.  An
 *   unlinked MD unlinks its ME when the ME was attached with PTL_UNLINK.
 *   [ptl_basic]
 * - unlink_nofit (3.2): PtlMDAttachNoFit(me, md, unlink_op, unlink_nofit, &h)
 *   is the 3.2 document's five-argument PtlMDAttach: with unlink_nofit
 *   PTL_UNLINK a matching request that does not fit unlinks the MD (and its
 *   ME per the ME's flag), logs PTL_EVENT_UNLINK, and the walk continues.
 *   [ptl_basic, ptl_mpi]
 * - Events: START and END of one operation share link; sequence is written
 *   last and increases by one per event of the queue, dropped ones included.
 *   PTL_MD_EVENT_START_DISABLE / _END_DISABLE suppress those events.  Fields:
 *   initiator = the requester for target events, the target for ACK and
 *   REPLY, this process for SEND; offset = where in the MD the data went
 *   (REPLY: the local offset of the data); hdr_data is carried by PUT, SEND,
 *   ACK and GETPUT events; md is the MD after the event.  A failure is an END
 *   event with ni_fail_type PTL_NI_FAIL (3.3 has no *_FAIL kinds).
 *   [ptl_basic, ptl_ring]
 * - Event queues are circular and hold count events: an event that finds
 *   the queue full overwrites the oldest one, and the next event PtlEQGet,
 *   PtlEQWait or PtlEQPoll returns (the oldest still held) comes with
 *   PTL_EQ_DROPPED; sequence is the event's position in the queue, so the
 *   gap shows how many were lost.  PtlEQGet returns PTL_EQ_EMPTY while a
 *   thread of the process waits in PtlEQWait on that queue; each event is
 *   returned to exactly one caller.  PtlEQWait spins for SOFTNIC_PTL_SPIN_NS (100000)
 *   nanoseconds, then sleeps (futex) until an event arrives;
 *   PtlEQFree or PtlNIFini wake it with PTL_EQ_INVALID.  PtlEQWait_timeout
 *   waits at most SOFTNIC_PTL_WAIT_TIMEOUT_MS (1000) milliseconds, then
 *   returns PTL_EQ_EMPTY.  PtlEQPoll: timeout in milliseconds, 0 polls once,
 *   PTL_TIME_FOREVER waits forever; PTL_EQ_EMPTY when it runs out.  Count
 *   at most 1048576.  [ptl_basic, ptl_threads, ptl_eqfull]
 * - EQ handlers (PtlEQAlloc with a handler) run in a library thread of the
 *   queue's owner, started with the first such queue: once per event put in
 *   the queue, when it becomes visible, in order, with a pointer to a copy
 *   of the event; the event stays in the queue for PtlEQGet/Wait/Poll.
 *   [ptl_basic]
 * - PtlMDUpdate is atomic with respect to arriving messages (same lock),
 *   refuses with PTL_MD_NO_UPDATE while testq holds an event (one held back
 *   for an operation in flight too) or the MD has a transfer in flight, and
 *   resets the local offset.  PtlMEMDPost inserts an
 *   ME next to base and attaches an MD to it, both or nothing, and only if
 *   eq_handle is PTL_EQ_NONE or empty (else PTL_MD_NO_UPDATE).  [ptl_mpi]
 * - PtlMDUnlink of an MD with a transfer in flight is PTL_MD_IN_USE;
 *   PtlMEUnlink removes the ME at once and frees its MD when the transfer
 *   ends.  Neither logs PTL_EVENT_UNLINK.  [ptl_basic]
 * - Access control: entry 0 admits every process of the job with this user
 *   id, any portal; the other entries admit nobody until PtlACEntry sets
 *   them.  A request also names the job (jid) and user (uid) it comes from.
 *   [ptl_basic, ptl_ring]
 * - Bad arguments: a NULL output pointer is PTL_SEGV; unknown MD option
 *   bits, a threshold below -1, start NULL with a non-zero length, an iovec
 *   MD with more than max_md_iovecs entries, memory that is not mapped (or
 *   not writable for an MD that accepts puts), and a region outside the MD
 *   (PtlPutRegion/PtlGetRegion) are PTL_MD_ILLEGAL; a get into read-only
 *   memory is PTL_MD_ILLEGAL; unlink and position values other than the
 *   enumerators are PTL_ME_INVALID for ME calls and PTL_MD_ILLEGAL for MD
 *   calls; an ack_req other than the two enumerators is PTL_FAIL; an event
 *   queue of 0 or more than 1048576 events is PTL_NO_SPACE; a wildcard or an
 *   unknown node in a target id is PTL_PROCESS_INVALID.  [ptl_badinput, null
 *   sweep]
 * - Status registers: PTL_SR_DROP_COUNT/_LENGTH, _RECV_COUNT/_LENGTH,
 *   _SEND_COUNT/_LENGTH, the _MES_/_MDS_/_EQS_ _ALLOC/_FREED/_MAX/_CUR
 *   families and PTL_SR_MLIST_LEN(i) (the length of portal i's list) and
 *   PTL_SR_MLIST_MAX(i) (its limit); the others are PTL_SR_INDEX_INVALID.
 *   [ptl_basic]
 * - GetPut: the target MD must enable both puts and gets; at most
 *   max_getput_md bytes; the target's old bytes come back into get_md
 *   (REPLY events), the new ones leave put_md (SEND events), the target logs
 *   GETPUT_START/END.  No ack.  [ptl_basic]
 * - PtlProgress validates the handle and returns: progress never needs the
 *   application (so PTL_PROGRESS_THREAD is defined).  PtlNIDist is 0 for
 *   this process, 1 for this node, 2 for another node.  The dump calls print
 *   to stderr.  p3_out (p3api/debug.h), the reference library's debug
 *   stream that its test programs name, is exported and is stderr.
 *   [ptl_basic, ptl_ring, ptl_rt]
 * - Threads: every call may be made from any thread.  [ptl_threads]
 * - Thread cancellation: PtlEQWait, PtlEQWait_timeout and PtlEQPoll are
 *   cancellation points, deferred and asynchronous: the thread ends, no event is
 *   taken for it, and the queue no longer counts it as a waiter.  No other call
 *   is a cancellation point.  A deferred PtlEQWait that finds an event queued,
 *   or one that arrives while it spins before it sleeps (SOFTNIC_PTL_SPIN_NS),
 *   returns it without acting on a pending request (the reference's wait is a
 *   cancellation point only in its sleep): the next wait that sleeps ends the
 *   thread.  [ptl_cancel]
 */
#ifndef _PTL3_PORTALS3_H_
#define _PTL3_PORTALS3_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- types (p3api/types.h) ------------------------------------------------ */
#ifndef _PTL3_API_TYPES_H_
#define _PTL3_API_TYPES_H_

typedef uint64_t ptl_size_t;
typedef uint32_t ptl_handle_any_t;
typedef ptl_handle_any_t ptl_handle_ni_t;
typedef ptl_handle_any_t ptl_handle_md_t;
typedef ptl_handle_any_t ptl_handle_me_t;
typedef ptl_handle_any_t ptl_handle_eq_t;
typedef uint32_t ptl_pt_index_t;
typedef uint32_t ptl_ac_index_t;
typedef uint64_t ptl_match_bits_t;
typedef uint32_t ptl_interface_t;
typedef uint32_t ptl_nid_t;
typedef uint32_t ptl_pid_t;
typedef uint32_t ptl_uid_t;
typedef uint32_t ptl_jid_t;
typedef uint32_t ptl_sr_index_t;
typedef uint64_t ptl_sr_value_t;
typedef uint32_t ptl_ni_fail_t;
typedef uint32_t ptl_seq_t;
typedef uint64_t ptl_hdr_data_t;
typedef uint32_t ptl_time_t;

#define PTL_INVALID_HANDLE ((ptl_handle_any_t)0xffffffff)
#define PTL_HANDLE_NONE    ((ptl_handle_any_t)0x7fffffff)
#define PTL_EQ_NONE        ((ptl_handle_eq_t)0xbfffffff)

#define PTL_PT_INDEX_ANY ((ptl_pt_index_t)UINT32_C(0xffffffff))
#define PTL_NID_ANY      ((ptl_nid_t)UINT32_C(0xffffffff))
#define PTL_PID_ANY      ((ptl_pid_t)UINT32_C(0xffffffff))
#define PTL_JID_ANY      ((ptl_jid_t)UINT32_C(0xffffffff))
#define PTL_UID_ANY      ((ptl_uid_t)UINT32_C(0xffffffff))

/* Status registers (PtlNIStatus). */
#define PTL_SR_DROP_COUNT     0
#define PTL_SR_DROP_LENGTH    1
#define PTL_SR_RECV_COUNT     2
#define PTL_SR_RECV_LENGTH    3
#define PTL_SR_SEND_COUNT     4
#define PTL_SR_SEND_LENGTH    5
#define PTL_SR_PTLS_MAX       6
#define PTL_SR_PTLS_CUR       7
#define PTL_SR_MSGS_ALLOC     8
#define PTL_SR_MSGS_FREED     9
#define PTL_SR_MSGS_MAX       10
#define PTL_SR_MSGS_CUR       11
#define PTL_SR_MES_ALLOC      12
#define PTL_SR_MES_FREED      13
#define PTL_SR_MES_MAX        14
#define PTL_SR_MES_CUR        15
#define PTL_SR_MDS_ALLOC      16
#define PTL_SR_MDS_FREED      17
#define PTL_SR_MDS_MAX        18
#define PTL_SR_MDS_CUR        19
#define PTL_SR_EQS_ALLOC      20
#define PTL_SR_EQS_FREED      21
#define PTL_SR_EQS_MAX        22
#define PTL_SR_EQS_CUR        23
#define PTL_SR_MD_ALIGN_128   24
#define PTL_SR_MD_ALIGN_64    25
#define PTL_SR_MD_ALIGN_32    26
#define PTL_SR_MD_ALIGN_16    27
#define PTL_SR_MD_ALIGN_8     28
#define PTL_SR_NAL_REGS_START 29
/* Per-portal registers: the match list length of portal ptl_index, and its
 * limit (the latter is defined here; the reference header's is unusable). */
#define PTL_SR_MLIST_LEN(ptl_index) ((ptl_index) << 16 | PTL_SR_MES_CUR | 1U << 31)
#define PTL_SR_MLIST_MAX(ptl_index) ((ptl_index) << 16 | PTL_SR_MES_MAX | 1U << 31)

typedef struct {
    int max_mes;
    int max_mds;
    int max_eqs;
    int max_ac_index;
    int max_pt_index;
    int max_md_iovecs;
    int max_me_list;
    int max_getput_md;
} ptl_ni_limits_t;

typedef struct {
    ptl_nid_t nid;
    ptl_pid_t pid;
} ptl_process_id_t;

typedef enum { PTL_RETAIN, PTL_UNLINK } ptl_unlink_t;

typedef enum { PTL_INS_BEFORE, PTL_INS_AFTER } ptl_ins_pos_t;

typedef struct {
    void           *start;
    ptl_size_t      length;
    int             threshold;
    ptl_size_t      max_size;
    unsigned int    options;
    void           *user_ptr;
    ptl_handle_eq_t eq_handle;
} ptl_md_t;

#define PTL_MD_THRESH_INF (-1)

/* MD options. */
#define PTL_MD_OP_PUT              0x0001
#define PTL_MD_OP_GET              0x0002
#define PTL_MD_MANAGE_REMOTE       0x0004
#define PTL_MD_TRUNCATE            0x0008
#define PTL_MD_ACK_DISABLE         0x0010
#define PTL_MD_IOVEC               0x0020
#define PTL_MD_MAX_SIZE            0x0040
#define PTL_MD_EVENT_START_DISABLE 0x0080
#define PTL_MD_EVENT_END_DISABLE   0x0100

typedef struct {
    void      *iov_base;
    ptl_size_t iov_len;
} ptl_md_iovec_t;

typedef enum {
    PTL_EVENT_GET_START,
    PTL_EVENT_GET_END,
    PTL_EVENT_PUT_START,
    PTL_EVENT_PUT_END,
    PTL_EVENT_GETPUT_START,
    PTL_EVENT_GETPUT_END,
    PTL_EVENT_REPLY_START,
    PTL_EVENT_REPLY_END,
    PTL_EVENT_SEND_START,
    PTL_EVENT_SEND_END,
    PTL_EVENT_ACK,
    PTL_EVENT_UNLINK
} ptl_event_kind_t;

#define PTL_NI_OK   0
#define PTL_NI_FAIL 1

typedef struct {
    ptl_event_kind_t   type;
    ptl_process_id_t   initiator;
    ptl_uid_t          uid;
    ptl_uid_t          jid;
    ptl_pt_index_t     pt_index;
    ptl_match_bits_t   match_bits;
    ptl_size_t         rlength;
    ptl_size_t         mlength;
    ptl_size_t         offset;
    ptl_handle_md_t    md_handle;
    ptl_md_t           md;
    ptl_hdr_data_t     hdr_data;
    ptl_seq_t          link;
    ptl_ni_fail_t      ni_fail_type;
    volatile ptl_seq_t sequence;
} ptl_event_t;

typedef void (*ptl_eq_handler_t)(ptl_event_t *event);
#define PTL_EQ_HANDLER_NONE ((ptl_eq_handler_t)NULL)

#define PTL_TIME_FOREVER ((ptl_time_t)-1)

typedef enum { PTL_ACK_REQ, PTL_NO_ACK_REQ } ptl_ack_req_t;

#endif /* _PTL3_API_TYPES_H_ */

/* ---- NAL types (p3/nal_types.h) ------------------------------------------- */
#ifndef _PTL3_P3_NAL_TYPES_H_
#define _PTL3_P3_NAL_TYPES_H_

#define PTL_NALTYPE_NONE  UINT32_C(0)
#define PTL_NALTYPE_UTCP0 UINT32_C(0xf0f0f000)
#define PTL_NALTYPE_UTCP1 UINT32_C(0xf0f0f001)
#define PTL_NALTYPE_UTCP2 UINT32_C(0xf0f0f002)
#define PTL_NALTYPE_UTCP3 UINT32_C(0xf0f0f003)
#define PTL_NALTYPE_UTCP  PTL_NALTYPE_UTCP0
#define PTL_NALTYPE_IBNG0 UINT32_C(0xf0f0f050)
#define PTL_NALTYPE_IBNG  PTL_NALTYPE_IBNG0

#endif /* _PTL3_P3_NAL_TYPES_H_ */

/* ---- return codes (p3/errno.h) -------------------------------------------- */
#ifndef _PTL3_API_ERRNO_H_
#define _PTL3_API_ERRNO_H_

/* The codes as an X-macro list: define ptlerr(name) and expand PTL_ERRORS. */
#define PTL_ERRORS \
    ptlerr(PTL_OK), \
    ptlerr(PTL_AC_INDEX_INVALID), \
    ptlerr(PTL_EQ_DROPPED), \
    ptlerr(PTL_EQ_EMPTY), \
    ptlerr(PTL_EQ_INVALID), \
    ptlerr(PTL_FAIL), \
    ptlerr(PTL_HANDLE_INVALID), \
    ptlerr(PTL_IFACE_INVALID), \
    ptlerr(PTL_MD_ILLEGAL), \
    ptlerr(PTL_MD_INVALID), \
    ptlerr(PTL_MD_IN_USE), \
    ptlerr(PTL_MD_NO_UPDATE), \
    ptlerr(PTL_ME_INVALID), \
    ptlerr(PTL_ME_IN_USE), \
    ptlerr(PTL_ME_LIST_TOO_LONG), \
    ptlerr(PTL_NI_INVALID), \
    ptlerr(PTL_NO_INIT), \
    ptlerr(PTL_NO_SPACE), \
    ptlerr(PTL_PID_INVALID), \
    ptlerr(PTL_PROCESS_INVALID), \
    ptlerr(PTL_PT_FULL), \
    ptlerr(PTL_PT_INDEX_INVALID), \
    ptlerr(PTL_SEGV), \
    ptlerr(PTL_SR_INDEX_INVALID), \
    ptlerr(PTL_UNKNOWN_ERROR)

typedef enum {
    PTL_OK,
    PTL_AC_INDEX_INVALID,
    PTL_EQ_DROPPED,
    PTL_EQ_EMPTY,
    PTL_EQ_INVALID,
    PTL_FAIL,
    PTL_HANDLE_INVALID,
    PTL_IFACE_INVALID,
    PTL_MD_ILLEGAL,
    PTL_MD_INVALID,
    PTL_MD_IN_USE,
    PTL_MD_NO_UPDATE,
    PTL_ME_INVALID,
    PTL_ME_IN_USE,
    PTL_ME_LIST_TOO_LONG,
    PTL_NI_INVALID,
    PTL_NO_INIT,
    PTL_NO_SPACE,
    PTL_PID_INVALID,
    PTL_PROCESS_INVALID,
    PTL_PT_FULL,
    PTL_PT_INDEX_INVALID,
    PTL_SEGV,
    PTL_SR_INDEX_INVALID,
    PTL_UNKNOWN_ERROR,
    PTL_MAX_ERRNO
} ptl_err_t;

/* The name of each code, indexed by its value (PTL_MAX_ERRNO has none). */
extern const char *ptl_err_str[];

#endif /* _PTL3_API_ERRNO_H_ */

/* The Portals 3.2 specification's spellings. */
#define PTL_NOACK_REQ     PTL_NO_ACK_REQ
#define PTL_AC_INV_INDEX  PTL_AC_INDEX_INVALID
#define PTL_INV_EQ        PTL_EQ_INVALID
#define PTL_INV_HANDLE    PTL_HANDLE_INVALID
#define PTL_INV_MD        PTL_MD_INVALID
#define PTL_ILL_MD        PTL_MD_ILLEGAL
#define PTL_MD_INUSE      PTL_MD_IN_USE
#define PTL_INUSE         PTL_ME_IN_USE
#define PTL_INV_ME        PTL_ME_INVALID
#define PTL_ML_TOOLONG    PTL_ME_LIST_TOO_LONG
#define PTL_INV_NI        PTL_NI_INVALID
#define PTL_NOINIT        PTL_NO_INIT
#define PTL_NOSPACE       PTL_NO_SPACE
#define PTL_INV_PROC      PTL_PROCESS_INVALID
#define PTL_PT_INV_INDEX  PTL_PT_INDEX_INVALID
#define PTL_INV_PTINDEX   PTL_PT_INDEX_INVALID
#define PTL_INV_SR_INDX   PTL_SR_INDEX_INVALID
#define PTL_NOUPDATE      PTL_MD_NO_UPDATE

/* Progress never needs the application (see the top comment). */
#define PTL_PROGRESS_THREAD 1

/* ---- functions (p3api/api.h, p3api/misc.h) -------------------------------- */
#ifndef _PTL3_API_H_
#define _PTL3_API_H_

int PtlInit(int *max_interfaces);
void PtlFini(void);

int PtlNIInit(ptl_interface_t interface, ptl_pid_t pid, ptl_ni_limits_t *desired,
              ptl_ni_limits_t *actual, ptl_handle_ni_t *ni_handle);
int PtlNIFini(ptl_handle_ni_t ni_handle);
int PtlNIStatus(ptl_handle_ni_t ni_handle, ptl_sr_index_t register_index, ptl_sr_value_t *status);
int PtlNIDist(ptl_handle_ni_t ni_handle, ptl_process_id_t process, unsigned long *distance);
int PtlNIHandle(ptl_handle_any_t handle, ptl_handle_ni_t *ni_handle);

int PtlGetUid(ptl_handle_ni_t ni_handle, ptl_uid_t *uid);
int PtlGetId(ptl_handle_ni_t ni_handle, ptl_process_id_t *id);
int PtlGetJid(ptl_handle_ni_t ni_handle, ptl_jid_t *jid);

int PtlMEAttach(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, ptl_process_id_t match_id,
                ptl_match_bits_t match_bits, ptl_match_bits_t ignore_bits, ptl_unlink_t unlink,
                ptl_ins_pos_t postion, ptl_handle_me_t *me_handle);
int PtlMEAttachAny(ptl_handle_ni_t ni_handle, ptl_pt_index_t *pt_index, ptl_process_id_t match_id,
                   ptl_match_bits_t match_bits, ptl_match_bits_t ignore_bits, ptl_unlink_t unlink,
                   ptl_handle_me_t *me_handle);
int PtlMEInsert(ptl_handle_me_t base, ptl_process_id_t match_id, ptl_match_bits_t match_bits,
                ptl_match_bits_t ignore_bits, ptl_unlink_t unlink, ptl_ins_pos_t position,
                ptl_handle_me_t *me_handle);
int PtlMEUnlink(ptl_handle_me_t me_handle);

int PtlMDAttach(ptl_handle_me_t me_handle, ptl_md_t md, ptl_unlink_t unlink_op,
                ptl_handle_md_t *md_handle);
int PtlMDBind(ptl_handle_ni_t ni_handle, ptl_md_t md, ptl_unlink_t unlink_op,
              ptl_handle_md_t *md_handle);
int PtlMDUnlink(ptl_handle_md_t md_handle);
int PtlMDUpdate(ptl_handle_md_t md_handle, ptl_md_t *old_md, ptl_md_t *new_md,
                ptl_handle_eq_t eq_handle);

int PtlEQAlloc(ptl_handle_ni_t ni_handle, ptl_size_t count, ptl_eq_handler_t eq_handler,
               ptl_handle_eq_t *eq_handle);
int PtlEQFree(ptl_handle_eq_t eq_handle);
int PtlEQGet(ptl_handle_eq_t eq_handle, ptl_event_t *event);
int PtlEQWait(ptl_handle_eq_t eq_handle, ptl_event_t *event);
int PtlEQWait_timeout(ptl_handle_eq_t eq_handle, ptl_event_t *event_out);
int PtlEQPoll(ptl_handle_eq_t *eq_handles, int size, ptl_time_t timeout, ptl_event_t *event,
              int *which_eq);

int PtlACEntry(ptl_handle_ni_t ni_handle, ptl_ac_index_t ac_index, ptl_process_id_t match_id,
               ptl_uid_t user_id, ptl_jid_t job_id, ptl_pt_index_t pt_index);

int PtlPut(ptl_handle_md_t md_handle, ptl_ack_req_t ack_req, ptl_process_id_t target_id,
           ptl_pt_index_t pt_index, ptl_ac_index_t ac_index, ptl_match_bits_t match_bits,
           ptl_size_t remote_offset, ptl_hdr_data_t hdr_data);
int PtlPutRegion(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
                 ptl_ack_req_t ack_req, ptl_process_id_t target_id, ptl_pt_index_t pt_index,
                 ptl_ac_index_t ac_index, ptl_match_bits_t match_bits, ptl_size_t remote_offset,
                 ptl_hdr_data_t hdr_data);
int PtlGet(ptl_handle_md_t md_handle, ptl_process_id_t target_id, ptl_pt_index_t pt_index,
           ptl_ac_index_t ac_index, ptl_match_bits_t match_bits, ptl_size_t remote_offset);
int PtlGetRegion(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
                 ptl_process_id_t target_id, ptl_pt_index_t pt_index, ptl_ac_index_t ac_index,
                 ptl_match_bits_t match_bits, ptl_size_t remote_offset);
int PtlGetPut(ptl_handle_md_t get_md_handle, ptl_handle_md_t put_md_handle,
              ptl_process_id_t target_id, ptl_pt_index_t pt_index, ptl_ac_index_t ac_index,
              ptl_match_bits_t match_bits, ptl_size_t remote_offset, ptl_hdr_data_t hdr_data);

int PtlNIEqDump(ptl_handle_ni_t ni_handle);
int PtlMEMDPost(ptl_handle_ni_t ni_handle, ptl_handle_me_t base, ptl_process_id_t match_id,
                ptl_match_bits_t match_bits, ptl_match_bits_t ignore_bits, ptl_unlink_t unlink,
                ptl_ins_pos_t position, ptl_md_t md, ptl_unlink_t unlink_op,
                ptl_handle_me_t *me_handle, ptl_handle_md_t *md_handle, ptl_handle_eq_t eq_handle);

/* softnic extension: the Portals 3.2 five-argument PtlMDAttach (see the top
 * comment, "unlink_nofit"). */
int PtlMDAttachNoFit(ptl_handle_me_t me_handle, ptl_md_t md, ptl_unlink_t unlink_op,
                     ptl_unlink_t unlink_nofit, ptl_handle_md_t *md_handle);

#endif /* _PTL3_API_H_ */

#ifndef _PTL3_API_MISC_H_
#define _PTL3_API_MISC_H_

const char *PtlErrorStr(unsigned ptl_errno);
const char *PtlNIFailStr(ptl_handle_ni_t ni, ptl_ni_fail_t nal_errno);
const char *PtlEventKindStr(ptl_event_kind_t ev_kind);
int PtlProgress(ptl_handle_any_t handle, ptl_time_t timeout);

#endif /* _PTL3_API_MISC_H_ */

#ifdef __cplusplus
}
#endif

/* The companion headers: the NALs (the first one included names
 * PTL_IFACE_DEFAULT), the rank runtime and the debug calls. */
#include <p3nal_utcp.h>
#include <p3nal_ibng.h>
#include <p3rt/p3rt.h>
#include <p3api/debug.h>

#endif /* _PTL3_PORTALS3_H_ */
