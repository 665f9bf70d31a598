/* dmapp.h -- softnic's Cray DMAPP API (the CLE 3.1 / Gemini-era interface),
 * provided by libdmapp.so.1.
 *
 * Written for softnic from the ABI facts (names, values, struct layouts,
 * prototypes); it is not a copy of any vendor header.  Link with
 * -ldmapp -lugni -lpmi (pkg-config cray-dmapp).
 *
 * How this implementation behaves where the documentation is silent:
 *
 * - Completion: every request completes when the call returns (shared memory),
 *   so a blocking PUT has made its data visible at the target on return, and
 *   dmapp_syncid_test / dmapp_gsync_test always report flag = 1.  Errors the
 *   target side detects (stale or unregistered memory handle, bounds the target
 *   enforces, dead peer) are DMAPP_RC_TRANSACTION_ERROR: returned by blocking
 *   calls, by dmapp_syncid_test/wait for _nb calls, and by the next
 *   dmapp_gsync_test/wait for _nbi calls (the first such error, then cleared).
 * - Syncids: an _nb call counts against max_outstanding_nb until its syncid is
 *   retired by dmapp_syncid_test (flag 1) or dmapp_syncid_wait, which then set
 *   the handle to NULL; a NULL handle value tests as complete; a retired or
 *   forged handle is DMAPP_RC_INVALID_PARAM.  At the limit, _nb calls return
 *   DMAPP_RC_NO_SPACE and do nothing.  _nbi and blocking calls never return
 *   NO_SPACE.  gsync does not retire syncids.
 * - Local checks give DMAPP_RC_INVALID_PARAM before anything moves: calls before
 *   dmapp_init or after dmapp_finalize (the heap calls return NULL then; the
 *   exceptions, which work before init, are dmapp_get_rma_attrs*, dmapp_initialized,
 *   dmapp_explain_error, dmapp_c_greduce_nelems_max and the progress-callback
 *   registration), NULL
 *   descriptors/addresses/lists/syncid pointers, dmapp_type_t outside 0..3, a PE
 *   outside [0, npes), an empty PE list, strides < 1, negative indices, a remote
 *   range outside the descriptor [addr, addr+len) or outside the target PE's
 *   symmetric segment, a dynamically registered descriptor in a PE-list call
 *   (put_ixpe, scatter_ixpe, gather_ixpe accept only data_seg and sheap_seg),
 *   zero-length GETs of every kind, DMAPP_BYTE for indexed GETs.
 * - A zero-length PUT (any kind) validates its arguments and succeeds doing
 *   nothing (an _nb one still returns a syncid to retire).
 * - Units: nelems counts elements; strides and index offsets count elements of
 *   the type.  PE lists may contain the caller and duplicates (list order).
 * - Alignment: AMOs need the remote word and (fetching AMOs) the local result
 *   buffer 8-byte aligned; strided and indexed GETs need both buffers and the
 *   length 4-byte aligned; else DMAPP_RC_ALIGNMENT_ERROR.
 * - Segments: data_seg is the executable's writable data and bss (without the
 *   RELRO part); sheap_seg is the symmetric heap of XT_SYMMETRIC_HEAP_SIZE bytes
 *   (K/M/G suffixes, powers of 1024; default 0 as documented, so set it; no
 *   extra internal megabyte is taken).  Memory is committed only when touched.
 *   The heap allocator is deterministic (same calls, same offsets on every PE),
 *   blocks are 64-byte aligned, malloc(0) returns a unique block, free(NULL) is a
 *   no-op, realloc of a pointer not from the heap returns NULL.
 * - Descriptors: memhndl holds the same encoding as uGNI's gni_mem_handle_t
 *   (qword1 = registered base, qword2 = registration key), so a descriptor keeps
 *   its meaning after a byte copy to another PE, and a uGNI handle registered in
 *   the same job may be used in a descriptor (a plain one: uGNI's multi-segment
 *   and vMDH handles address by offset or per target, and a descriptor holding
 *   one is DMAPP_RC_INVALID_PARAM).  flags and reserved are always 0.
 *   dmapp_segdesc_compare compares addr, len and memhndl.  dmapp_mem_register
 *   registers exactly [addr, addr+length), which must be mapped readable and
 *   writable (else DMAPP_RC_RESOURCE_ERROR), and accepts only this PE's registrations
 *   for dmapp_mem_unregister (never data_seg or sheap_seg).
 * - Registered memory (dmapp_mem_register, data_seg, and uGNI's registrations)
 *   is moved onto shared pages in place: same addresses, same contents.  Pages of
 *   anonymous memory never written are not copied.  While a registration call
 *   runs, another thread writing those pages waits in its page fault and its
 *   write lands on the new page (Linux 6.4+ with userfaultfd allowed); where that
 *   is not possible (older kernels, container seccomp filters, valgrind, .data)
 *   the other threads are parked for the moment of the copy instead (see
 *   gni_pub.h, SOFTNIC_STOP_SIGNAL).  Pages stay shared when their registration ends (registering them
 *   again costs bookkeeping only; see gni_pub.h for the window shared around a
 *   first registration).  A child made by fork shares the pages of live
 *   registrations with its parent.  Under valgrind, memcheck sees the registered
 *   bytes as defined.
 * - dmapp_init: a second call returns SUCCESS and reports the attributes in
 *   effect; a call after dmapp_finalize is DMAPP_RC_INVALID_PARAM.  Attributes
 *   are accepted as requested when valid: max_outstanding_nb in [5, 2048],
 *   routing and PI_ordering values <= 2, max_concurrency >= 1 (the library is
 *   thread-safe whatever the value).  dmapp_set_rma_attrs changes only the
 *   dynamic attributes and reports all of them.  dmapp_init makes PMI usable
 *   (PMI_Barrier works without PMI_Init).
 * - dmapp_get_rma_attrs / _ext before dmapp_init report the defaults (programs
 *   read them, change a field, then call dmapp_init_ext): max_outstanding_nb
 *   DMAPP_DEF_OUTSTANDING_NB, offload_threshold DMAPP_OFFLOAD_THRESHOLD, PUT
 *   routing DETERMINISTIC, GET routing ADAPTIVE, max_concurrency 1, PI_ordering
 *   STRICT, queue_depth DMAPP_QUEUE_DEFAULT_DEPTH, queue_nelems
 *   DMAPP_QUEUE_DEFAULT_NELEMS, queue_flags 0.  After dmapp_finalize they are
 *   DMAPP_RC_INVALID_PARAM; dmapp_set_rma_attrs* works only between the two.
 *   dmapp_initialized sets *flag to 1 between a successful init and finalize,
 *   else 0 (NULL: INVALID_PARAM).
 * - Queue attributes (static, taken at init): 0 means the default (so
 *   dmapp_init, whose struct has no such fields, and zero-filled structs get the
 *   defaults); queue_depth is rounded up to a power of two, at most 4096;
 *   queue_nelems counts QW (8-byte) units and is at most DMAPP_QUEUE_MAX_NELEMS
 *   (1 KiB); unknown queue_flags bits are dropped; actual_attrs reports the
 *   values in effect.
 * - dmapp_finalize: completes outstanding work, synchronises the whole job (a
 *   barrier), then unregisters every segment; the heap stays mapped so local
 *   results remain readable.  A second dmapp_finalize is INVALID_PARAM.
 * - jobinfo.version is 0x030100 (DMAPP 3.1); hw_version is
 *   DMAPP_GNI_HW_MAJOR_GEMINI.
 * - DMAPP_ABORT_ON_ERROR=1 makes init, registration and heap failures abort.
 * - Progress callbacks run from the library's waits: every blocking data-motion
 *   call (after the data has moved), dmapp_syncid_wait and dmapp_gsync_wait call
 *   each registered callback once, in registration order, with its data; the
 *   return value is ignored; callbacks are not re-entered from DMAPP calls made
 *   inside one.  They are keyed by function: registering one again replaces its
 *   data; at most 16 (then DMAPP_RC_RESOURCE_ERROR); NULL is INVALID_PARAM;
 *   deregistering an unknown one is DMAPP_RC_NOT_FOUND.
 * - A non-symmetric descriptor's memory handle names the PE that registered it:
 *   used against another PE it names nothing there (DMAPP_RC_TRANSACTION_ERROR,
 *   nothing touched).
 * - Collectives (dmapp-rs/src/coll.rs): members in description order form a
 *   heap-ordered tree of arity attrs radix (2..63, default 16).  create checks
 *   the description (1..npes distinct valid PEs including the caller, vec_pes
 *   non-NULL), a non-zero identifier unused by another live pset of this PE,
 *   known mode bits (CONCAT needs a concat buffer; the modes change nothing
 *   else) and attrs (NULL or VER1): else INVALID_PARAM.  export is required
 *   before the first operation; again is a no-op.  One operation at a time:
 *   another start while one is in flight is DMAPP_RC_BUSY.  greduce: in/out
 *   non-NULL, 1..nelems_max elements (256 bytes of them), bitwise/logical ops
 *   on integer types, MIN/MAX on real types, SUM/PROD on all but the LOC
 *   pairs, MINLOC/MAXLOC on the LOC pairs (ties to the smaller index); in is
 *   read at start, out written when test/wait sees completion; every member
 *   gets the same bits (one combining order, round to nearest).  test:
 *   SUCCESS (done, or nothing in flight) or NOT_DONE; wait runs the progress
 *   callbacks; both give TRANSACTION_ERROR when a member has exited or the
 *   members started different operations.  cancel_op abandons the operation
 *   (out never written); if this member already joined the round, the next
 *   start is BUSY until the others complete it.  destroy with an operation in
 *   flight (not cancelled): RESOURCE_ERROR.
 * - Not supported (return DMAPP_RC_NOT_SUPPORTED, see dmapp-rs/src/unsupported.rs):
 *   dmapp_checkpoint and dmapp_restart.
 * - dmapp_explain_error (from later DMAPP releases) gives a text for each code.
 * - Locks (later releases; dmapp-rs/src/lock.rs): an MCS queue lock over the
 *   remote AMOs, so it works on one machine and across machines and is fair
 *   (FIFO in the order acquirers reach the descriptor; its first word names the
 *   last one in line, 0 when the lock is free).  Each acquirer sleeps
 *   on a futex in its own memory; the holder's release wakes the next.  The
 *   descriptor (dmapp_lock_desc_t, 16 bytes, zero = free) lives in a segment of
 *   PE pe at lock, described by seg (NULL lock/seg/handle, bad PE, a descriptor
 *   outside seg: INVALID_PARAM; not 8-byte aligned: ALIGNMENT_ERROR; a
 *   descriptor holding garbage, i.e. not zero-filled: INVALID_PARAM, nothing
 *   written).
 *   dmapp_lock_acquire waits until the lock is this caller's (blocking); any
 *   thread of the holding PE may release it; locks are not recursive.  A
 *   release with a handle this PE does not hold (released already, another
 *   PE's, forged, NULL) is INVALID_PARAM and touches nothing.  Flags of both
 *   calls are ignored.  DMAPP_MAX_LOCKS (environment, default 128, 1..1023) is
 *   the number of locks one PE may hold or wait for at once; one more acquire
 *   is DMAPP_RC_NO_SPACE and touches nothing.  If the PE an acquirer waits
 *   behind exits, the lock is broken: that acquire returns TRANSACTION_ERROR
 *   (and a release whose hand-off to an exited successor fails, likewise).
 * - Queues (later releases; dmapp-rs/src/queue.rs): every PE has one receive
 *   queue from dmapp_init (queue_depth entries of up to queue_nelems QW); a PE
 *   attaches one callback at a time (a second attach: DMAPP_RC_BUSY; NULL
 *   callback or handle pointer: INVALID_PARAM).  dmapp_queue_put(h, src, nelems,
 *   type, pe, flags) copies nelems elements of type into PE pe's queue and
 *   returns; the callback gets (context, a copy of the bytes valid during the
 *   call, their length in bytes, the sender PE).  h must be the caller's attached
 *   handle, and the length at most the target's queue_nelems QW (else
 *   INVALID_PARAM); zero-length puts are delivered.  Each sender's messages
 *   arrive in the order it put them.  The target's callback runs from the
 *   target's own DMAPP calls (blocking data motion, the syncid, gsync and
 *   collective waits and tests, dmapp_queue_put, the lock calls and a lock
 *   wait), on the calling thread, or,
 *   with DMAPP_QUEUE_ASYNC_PROGRESS in the attach flags or in queue_flags, from
 *   a library thread only.  One callback runs at a time; its return value is
 *   ignored.  Messages that arrive while nothing is attached wait for the next
 *   attach.  A full queue: the put waits (delivering its own PE's queue
 *   meanwhile) until the target has taken an entry; it returns
 *   DMAPP_RC_NO_SPACE at once only when called from inside a queue callback
 *   (the target may be in its own, putting to us).  A target that has
 *   exited: TRANSACTION_ERROR.  dmapp_queue_detach (flags ignored) stops
 *   deliveries (an unknown handle: INVALID_PARAM); from another thread it waits
 *   for a running callback to return.  dmapp_finalize delivers until every PE
 *   has reached finalize (a library thread meanwhile; without a callback the
 *   messages are dropped with a warning), then detaches.  Unknown flag bits are
 *   ignored everywhere.
 * - Thread cancellation: dmapp_c_pset_wait, dmapp_lock_acquire and
 *   dmapp_queue_put (while the target's queue is full) are cancellation points,
 *   deferred and asynchronous.  A cancelled dmapp_c_pset_wait leaves the
 *   collective running (a later wait or test completes it); a cancelled
 *   dmapp_queue_put has sent nothing.  A waiter cancelled in dmapp_lock_acquire
 *   is in the lock's queue: before the thread ends it takes the lock when its
 *   turn comes and releases it at once, so the waiters behind it go on (as a
 *   cancelled pthread_cond_wait takes its mutex back).  [dmapp_cancel]
 */
#ifndef _DMAPP_H
#define _DMAPP_H

#include <stddef.h>
#include <stdint.h>
#include "gni_pub.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef INOUT
#define INOUT
#endif

/* ---- constants ------------------------------------------------------------ */

#define DMAPP_OFFLOAD_THRESHOLD  (4096)
#define DMAPP_MAX_OUTSTANDING_NB (2048)
#define DMAPP_DEF_OUTSTANDING_NB (512)
#define DMAPP_MIN_OUTSTANDING_NB (5)

/* Value of dmapp_jobinfo_t.hw_version (the document names it, gives no value). */
#define DMAPP_GNI_HW_MAJOR_GEMINI 1

#define DMAPP_C_PSET_MODE_CONCAT         0x00000001
#define DMAPP_C_PSET_MODE_FAULT_TOLERANT 0x00000002
#define DMAPP_C_PSET_MODE_HW_OFFLOAD     0x00000004

typedef enum dmapp_return {
    DMAPP_RC_SUCCESS = 0,
    DMAPP_RC_INVALID_PARAM,
    DMAPP_RC_ALIGNMENT_ERROR,
    DMAPP_RC_TRANSACTION_ERROR,
    DMAPP_RC_RESOURCE_ERROR,
    DMAPP_RC_PERMISSION_ERROR,
    DMAPP_RC_NO_SPACE,
    DMAPP_RC_NOT_DONE,
    DMAPP_RC_NOT_SUPPORTED,
    DMAPP_RC_NOT_FOUND,
    DMAPP_RC_BUSY,
    DMAPP_RC_NOT_USED
} dmapp_return_t;

/* Element types: DQW 16 bytes, QW 8, DW 4, BYTE 1. */
typedef enum dmapp_type {
    DMAPP_DQW = 0,
    DMAPP_QW,
    DMAPP_DW,
    DMAPP_BYTE
} dmapp_type_t;

typedef enum dmapp_routing_type {
    DMAPP_ROUTING_IN_ORDER = 0,
    DMAPP_ROUTING_DETERMINISTIC,
    DMAPP_ROUTING_ADAPTIVE
} dmapp_routing_type_t;

typedef enum dmapp_pi_reg_type {
    DMAPP_PI_ORDERING_STRICT = 0,
    DMAPP_PI_ORDERING_DEFAULT,
    DMAPP_PI_ORDERING_RELAXED
} dmapp_pi_reg_type_t;

/* ---- types ---------------------------------------------------------------- */

typedef struct dmapp_seg_desc {
    void             *addr;
    size_t            len;
    gni_mem_handle_t  memhndl;
    uint16_t          flags;
    void             *reserved;
} dmapp_seg_desc_t;

typedef int dmapp_pe_t;

typedef struct dmapp_jobinfo {
    int               version;
    int               hw_version;
    int               npes;
    dmapp_pe_t        pe;
    dmapp_seg_desc_t  data_seg;
    dmapp_seg_desc_t  sheap_seg;
} dmapp_jobinfo_t;

typedef struct dmapp_rma_attrs {
    uint32_t max_outstanding_nb;
    uint32_t offload_threshold;
    uint8_t  put_relaxed_ordering;
    uint8_t  get_relaxed_ordering;
    uint8_t  max_concurrency;
} dmapp_rma_attrs_t;

#if defined(__GNUC__)
#define DMAPP_ANON_ __extension__   /* anonymous members without -pedantic warnings */
#else
#define DMAPP_ANON_
#endif

/* The queue fields of later releases overlay the first 12 of the 32 reserved bytes
 * (an anonymous union), so the size and every older offset are unchanged. */
typedef struct dmapp_rma_attrs_ext {
    uint32_t max_outstanding_nb;
    uint32_t offload_threshold;
    uint8_t  put_relaxed_ordering;
    uint8_t  get_relaxed_ordering;
    uint8_t  max_concurrency;
    uint8_t  PI_ordering;
    DMAPP_ANON_ union {
        uint8_t unused[32];
        DMAPP_ANON_ struct {
            uint32_t queue_depth;    /* entries of this PE's receive queue */
            uint32_t queue_nelems;   /* largest dmapp_queue_put into it, in QW (8 bytes) */
            uint32_t queue_flags;    /* DMAPP_QUEUE_ASYNC_PROGRESS */
        };
    };
} dmapp_rma_attrs_ext_t;

typedef struct dmapp_syncid *dmapp_syncid_handle_t;

/* Collectives (see the top comment). */
typedef enum dmapp_c_pset_delimiter_type {
    DMAPP_C_PSET_DELIMITER_VEC = 1,
    DMAPP_C_PSET_DELIMITER_STRIDED,
    DMAPP_C_PSET_DELIMITER_LAST
} dmapp_c_pset_delimiter_type_t;

typedef struct {
    uint32_t  n_pes;
    uint32_t *vec_pes;
} dmapp_c_pset_delimiter_vec_t;

typedef struct {
    uint32_t n_pes;
    uint32_t base_pe;
    uint32_t stride_pe;
} dmapp_c_pset_delimiter_strided_t;

typedef struct {
    void                          *concat_buf;
    uint64_t                       concat_buf_size;
    dmapp_c_pset_delimiter_type_t  type;
    union {
        dmapp_c_pset_delimiter_vec_t     vec_type;
        dmapp_c_pset_delimiter_strided_t stride_type;
    } u;
} dmapp_c_pset_desc_t;

typedef struct dmapp_c_pset *dmapp_c_pset_handle_t;

typedef enum dmapp_c_pset_attrs_type {
    DMAPP_C_PSET_ATTRS_VER1 = 1,
    DMAPP_C_PSET_ATTRS_LAST
} dmapp_c_pset_attrs_type_t;

typedef struct {
    uint32_t radix;
} dmapp_c_pset_attrs_ver1_t;

typedef struct {
    dmapp_c_pset_attrs_type_t type;
    union {
        dmapp_c_pset_attrs_ver1_t type1;
    } u;
} dmapp_c_pset_attrs_t;

typedef enum dmapp_c_type {
    DMAPP_C_INT32 = 101,
    DMAPP_C_UINT32,
    DMAPP_C_INT64,
    DMAPP_C_UINT64,
    DMAPP_C_FLOAT,
    DMAPP_C_DOUBLE,
    DMAPP_C_COMPLEX8,
    DMAPP_C_COMPLEX16,
    DMAPP_C_FLOAT_UINT64,
    DMAPP_C_DOUBLE_UINT64,
    DMAPP_C_INT32_UINT64,
    DMAPP_C_INT64_UINT64,
    DMAPP_C_TYPE_LAST
} dmapp_c_type_t;

typedef enum dmapp_c_op {
    DMAPP_C_SUM = 201,
    DMAPP_C_MAX,
    DMAPP_C_MIN,
    DMAPP_C_PROD,
    DMAPP_C_LAND,
    DMAPP_C_BAND,
    DMAPP_C_LOR,
    DMAPP_C_BOR,
    DMAPP_C_LXOR,
    DMAPP_C_BXOR,
    DMAPP_C_MINLOC,
    DMAPP_C_MAXLOC,
    DMAPP_C_OP_LAST
} dmapp_c_op_t;

typedef struct dmapp_c_float_uint64   { float   value; uint64_t loc; } dmapp_c_float_uint64_t;
typedef struct dmapp_c_double_uint64  { double  value; uint64_t loc; } dmapp_c_double_uint64_t;
typedef struct dmapp_c_int_uint64     { int     value; uint64_t loc; } dmapp_c_int_uint64_t;
typedef struct dmapp_c_int64_uint64   { int64_t value; uint64_t loc; } dmapp_c_int64_uint64_t;
typedef struct dmapp_c_complex8       { float   re; float  im; } dmapp_c_complex8_t;
typedef struct dmapp_c_complex16      { double  re; double im; } dmapp_c_complex16_t;

/* ---- initialisation and query --------------------------------------------- */

extern dmapp_return_t dmapp_init(IN dmapp_rma_attrs_t *requested_attrs, OUT dmapp_rma_attrs_t *actual_attrs);
extern dmapp_return_t dmapp_init_ext(IN dmapp_rma_attrs_ext_t *requested_attrs, OUT dmapp_rma_attrs_ext_t *actual_attrs);
extern dmapp_return_t dmapp_finalize(void);
extern dmapp_return_t dmapp_get_jobinfo(OUT dmapp_jobinfo_t *info);
extern dmapp_return_t dmapp_get_rma_attrs(OUT dmapp_rma_attrs_t *attrs);
extern dmapp_return_t dmapp_get_rma_attrs_ext(OUT dmapp_rma_attrs_ext_t *attrs);
extern dmapp_return_t dmapp_set_rma_attrs(IN dmapp_rma_attrs_t *requested_attrs, OUT dmapp_rma_attrs_t *actual_attrs);
extern dmapp_return_t dmapp_set_rma_attrs_ext(IN dmapp_rma_attrs_ext_t *requested_attrs, OUT dmapp_rma_attrs_ext_t *actual_attrs);

/* ---- contiguous PUT / GET ----------------------------------------------------- */

#define DMAPP_PUT_ARGS_ IN void *target_addr, IN dmapp_seg_desc_t *target_seg, IN dmapp_pe_t target_pe, \
                        IN void *source_addr, IN uint64_t nelems, IN dmapp_type_t type
#define DMAPP_GET_ARGS_ IN void *target_addr, IN void *source_addr, IN dmapp_seg_desc_t *source_seg, \
                        IN dmapp_pe_t source_pe, IN uint64_t nelems, IN dmapp_type_t type

extern dmapp_return_t dmapp_put_nb(DMAPP_PUT_ARGS_, OUT dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_put_nbi(DMAPP_PUT_ARGS_);
extern dmapp_return_t dmapp_put(DMAPP_PUT_ARGS_);
extern dmapp_return_t dmapp_get_nb(DMAPP_GET_ARGS_, OUT dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_get_nbi(DMAPP_GET_ARGS_);
extern dmapp_return_t dmapp_get(DMAPP_GET_ARGS_);

/* ---- strided (strides in elements, >= 1) -------------------------------------- */

#define DMAPP_IPUT_ARGS_ IN void *target_addr, IN dmapp_seg_desc_t *target_seg, IN dmapp_pe_t target_pe, \
                         IN void *source_addr, IN ptrdiff_t tst, IN ptrdiff_t sst, IN uint64_t nelems, \
                         IN dmapp_type_t type
#define DMAPP_IGET_ARGS_ IN void *target_addr, IN void *source_addr, IN dmapp_seg_desc_t *source_seg, \
                         IN dmapp_pe_t source_pe, IN ptrdiff_t tst, IN ptrdiff_t sst, IN uint64_t nelems, \
                         IN dmapp_type_t type

extern dmapp_return_t dmapp_iput_nb(DMAPP_IPUT_ARGS_, OUT dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_iput_nbi(DMAPP_IPUT_ARGS_);
extern dmapp_return_t dmapp_iput(DMAPP_IPUT_ARGS_);
extern dmapp_return_t dmapp_iget_nb(DMAPP_IGET_ARGS_, OUT dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_iget_nbi(DMAPP_IGET_ARGS_);
extern dmapp_return_t dmapp_iget(DMAPP_IGET_ARGS_);

/* ---- indexed (offsets in elements, >= 0; nelems of them) ----------------------- */

#define DMAPP_IXPUT_ARGS_ IN void *target_addr, IN dmapp_seg_desc_t *target_seg, IN dmapp_pe_t target_pe, \
                          IN void *source_addr, IN ptrdiff_t *tidx, IN uint64_t nelems, IN dmapp_type_t type
#define DMAPP_IXGET_ARGS_ IN void *target_addr, IN void *source_addr, IN dmapp_seg_desc_t *source_seg, \
                          IN dmapp_pe_t source_pe, IN ptrdiff_t *sidx, IN uint64_t nelems, IN dmapp_type_t type

extern dmapp_return_t dmapp_ixput_nb(DMAPP_IXPUT_ARGS_, OUT dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_ixput_nbi(DMAPP_IXPUT_ARGS_);
extern dmapp_return_t dmapp_ixput(DMAPP_IXPUT_ARGS_);
extern dmapp_return_t dmapp_ixget_nb(DMAPP_IXGET_ARGS_, OUT dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_ixget_nbi(DMAPP_IXGET_ARGS_);
extern dmapp_return_t dmapp_ixget(DMAPP_IXGET_ARGS_);

/* ---- PE lists: broadcast, scatter (block I -> list[I]), gather (block I <- list[I]) */

#define DMAPP_PEPUT_ARGS_ IN void *target_addr, IN dmapp_seg_desc_t *target_seg, IN dmapp_pe_t *target_pe_list, \
                          IN uint32_t num_target_pes, IN void *source_addr, IN uint64_t nelems, IN dmapp_type_t type
#define DMAPP_PEGET_ARGS_ IN void *target_addr, IN void *source_addr, IN dmapp_seg_desc_t *source_seg, \
                          IN dmapp_pe_t *source_pe_list, IN uint32_t num_source_pes, IN uint64_t nelems, \
                          IN dmapp_type_t type

extern dmapp_return_t dmapp_put_ixpe_nb(DMAPP_PEPUT_ARGS_, OUT dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_put_ixpe_nbi(DMAPP_PEPUT_ARGS_);
extern dmapp_return_t dmapp_put_ixpe(DMAPP_PEPUT_ARGS_);
extern dmapp_return_t dmapp_scatter_ixpe_nb(DMAPP_PEPUT_ARGS_, OUT dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_scatter_ixpe_nbi(DMAPP_PEPUT_ARGS_);
extern dmapp_return_t dmapp_scatter_ixpe(DMAPP_PEPUT_ARGS_);
extern dmapp_return_t dmapp_gather_ixpe_nb(DMAPP_PEGET_ARGS_, OUT dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_gather_ixpe_nbi(DMAPP_PEGET_ARGS_);
extern dmapp_return_t dmapp_gather_ixpe(DMAPP_PEGET_ARGS_);

/* ---- AMOs on one 8-byte word ------------------------------------------------------
 * Non-fetching: target_* is the remote word.  Fetching: (source_addr, source_seg,
 * source_pe) is the remote word and target_addr the LOCAL buffer for the old value.
 * AFAX stores (old & andMask) ^ xorMask; ACSWAP stores swaperand if old == comperand. */

#define DMAPP_AMO_ARGS_  IN void *target_addr, IN dmapp_seg_desc_t *target_seg, IN dmapp_pe_t target_pe, \
                         IN int64_t operand
#define DMAPP_FAMO_ARGS_ IN void *target_addr, IN void *source_addr, IN dmapp_seg_desc_t *source_seg, \
                         IN dmapp_pe_t source_pe

extern dmapp_return_t dmapp_aadd_qw_nb(DMAPP_AMO_ARGS_, OUT dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_aadd_qw_nbi(DMAPP_AMO_ARGS_);
extern dmapp_return_t dmapp_aadd_qw(DMAPP_AMO_ARGS_);
extern dmapp_return_t dmapp_aand_qw_nb(DMAPP_AMO_ARGS_, OUT dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_aand_qw_nbi(DMAPP_AMO_ARGS_);
extern dmapp_return_t dmapp_aand_qw(DMAPP_AMO_ARGS_);
extern dmapp_return_t dmapp_aor_qw_nb(DMAPP_AMO_ARGS_, OUT dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_aor_qw_nbi(DMAPP_AMO_ARGS_);
extern dmapp_return_t dmapp_aor_qw(DMAPP_AMO_ARGS_);
extern dmapp_return_t dmapp_axor_qw_nb(DMAPP_AMO_ARGS_, OUT dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_axor_qw_nbi(DMAPP_AMO_ARGS_);
extern dmapp_return_t dmapp_axor_qw(DMAPP_AMO_ARGS_);

extern dmapp_return_t dmapp_afadd_qw_nb(DMAPP_FAMO_ARGS_, IN int64_t operand, OUT dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_afadd_qw_nbi(DMAPP_FAMO_ARGS_, IN int64_t operand);
extern dmapp_return_t dmapp_afadd_qw(DMAPP_FAMO_ARGS_, IN int64_t operand);
extern dmapp_return_t dmapp_afand_qw_nb(DMAPP_FAMO_ARGS_, IN int64_t operand, OUT dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_afand_qw_nbi(DMAPP_FAMO_ARGS_, IN int64_t operand);
extern dmapp_return_t dmapp_afand_qw(DMAPP_FAMO_ARGS_, IN int64_t operand);
extern dmapp_return_t dmapp_afxor_qw_nb(DMAPP_FAMO_ARGS_, IN int64_t operand, OUT dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_afxor_qw_nbi(DMAPP_FAMO_ARGS_, IN int64_t operand);
extern dmapp_return_t dmapp_afxor_qw(DMAPP_FAMO_ARGS_, IN int64_t operand);
extern dmapp_return_t dmapp_afor_qw_nb(DMAPP_FAMO_ARGS_, IN int64_t operand, OUT dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_afor_qw_nbi(DMAPP_FAMO_ARGS_, IN int64_t operand);
extern dmapp_return_t dmapp_afor_qw(DMAPP_FAMO_ARGS_, IN int64_t operand);
extern dmapp_return_t dmapp_afax_qw_nb(DMAPP_FAMO_ARGS_, IN int64_t andMask, IN int64_t xorMask,
                                       OUT dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_afax_qw_nbi(DMAPP_FAMO_ARGS_, IN int64_t andMask, IN int64_t xorMask);
extern dmapp_return_t dmapp_afax_qw(DMAPP_FAMO_ARGS_, IN int64_t andMask, IN int64_t xorMask);
extern dmapp_return_t dmapp_acswap_qw_nb(DMAPP_FAMO_ARGS_, IN int64_t comperand, IN int64_t swaperand,
                                         OUT dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_acswap_qw_nbi(DMAPP_FAMO_ARGS_, IN int64_t comperand, IN int64_t swaperand);
extern dmapp_return_t dmapp_acswap_qw(DMAPP_FAMO_ARGS_, IN int64_t comperand, IN int64_t swaperand);

/* ---- completion ------------------------------------------------------------------ */

extern dmapp_return_t dmapp_syncid_test(INOUT dmapp_syncid_handle_t *syncid, OUT int *flag);
extern dmapp_return_t dmapp_syncid_wait(INOUT dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_gsync_test(OUT int *flag);
extern dmapp_return_t dmapp_gsync_wait(void);

/* ---- symmetric heap (same calls in the same order on every PE) -------------------- */

extern void *dmapp_sheap_malloc(IN size_t size);
extern void *dmapp_sheap_realloc(IN void *ptr, IN size_t size);
extern void  dmapp_sheap_free(IN void *ptr);

/* ---- dynamic registration ----------------------------------------------------------- */

extern dmapp_return_t dmapp_mem_register(IN void *addr, IN uint64_t length, INOUT dmapp_seg_desc_t *seg_desc);
extern dmapp_return_t dmapp_mem_unregister(INOUT dmapp_seg_desc_t *seg_desc);
extern dmapp_return_t dmapp_segdesc_compare(IN dmapp_seg_desc_t *seg_desc1, IN dmapp_seg_desc_t *seg_desc2,
                                            INOUT int *flag);

/* ---- not supported (DMAPP_RC_NOT_SUPPORTED) ------------------------------------------ */

extern dmapp_return_t dmapp_checkpoint(void);
extern dmapp_return_t dmapp_restart(IN uint32_t restart_modes);
extern dmapp_return_t dmapp_register_progress_cb(IN int (*progress_cb)(void *), IN void *data);
extern dmapp_return_t dmapp_deregister_progress_cb(IN int (*progress_cb)(void *));
extern dmapp_return_t dmapp_c_pset_create(IN dmapp_c_pset_desc_t *pdesc, IN uint64_t identifier, IN uint64_t modes,
                                          IN dmapp_c_pset_attrs_t *attrs, OUT dmapp_c_pset_handle_t *pset_hndl);
extern dmapp_return_t dmapp_c_pset_export(IN dmapp_c_pset_handle_t pset_hndl);
extern dmapp_return_t dmapp_c_pset_destroy(IN dmapp_c_pset_handle_t pset_hndl);
extern dmapp_return_t dmapp_c_barrier_join(IN dmapp_c_pset_handle_t pset_hndl);
extern dmapp_return_t dmapp_c_greduce_start(IN dmapp_c_pset_handle_t pset, IN void *in, OUT void *out,
                                            IN uint32_t nelems, IN dmapp_c_type_t type, IN dmapp_c_op_t op);
extern dmapp_return_t dmapp_c_greduce_nelems_max(IN dmapp_c_type_t type, OUT uint32_t *nelems_max);
extern dmapp_return_t dmapp_c_pset_test(IN dmapp_c_pset_handle_t pset_hndl);
extern dmapp_return_t dmapp_c_pset_wait(IN dmapp_c_pset_handle_t pset_hndl);
dmapp_return_t dmapp_c_pset_cancel_op(IN dmapp_c_pset_handle_t pset_hndl);

/* ---- from later DMAPP releases -------------------------------------------------------- */

extern dmapp_return_t dmapp_explain_error(IN dmapp_return_t rc, OUT const char **msg);
extern dmapp_return_t dmapp_initialized(OUT int *flag);

/* Locks (see the top comment).  A descriptor is 16 bytes, zero-filled before first use,
 * 8-byte aligned, in a segment of the PE that owns it. */
typedef struct dmapp_lock_desc {
    uint64_t opaque[2];
} dmapp_lock_desc_t;
typedef struct dmapp_lock *dmapp_lock_handle_t;

extern dmapp_return_t dmapp_lock_acquire(IN dmapp_lock_desc_t *lock, IN dmapp_seg_desc_t *seg, IN dmapp_pe_t pe,
                                         IN uint64_t flags, OUT dmapp_lock_handle_t *handle);
extern dmapp_return_t dmapp_lock_release(IN dmapp_lock_handle_t handle, IN uint64_t flags);

/* Queues (see the top comment). */
#define DMAPP_QUEUE_ASYNC_PROGRESS  0x1
#define DMAPP_QUEUE_DEFAULT_DEPTH   128
#define DMAPP_QUEUE_DEFAULT_NELEMS  128
#define DMAPP_QUEUE_MAX_NELEMS      128

typedef struct dmapp_queue *dmapp_queue_handle_t;

extern dmapp_return_t dmapp_queue_attach(IN int (*queue_cb)(void *context, void *data, uint32_t len, dmapp_pe_t rank),
                                         IN void *context, IN uint64_t flags, OUT dmapp_queue_handle_t *queue_hndl);
extern dmapp_return_t dmapp_queue_detach(IN dmapp_queue_handle_t queue_hndl, IN uint64_t flags);
extern dmapp_return_t dmapp_queue_put(IN dmapp_queue_handle_t queue_hndl, IN void *source, IN uint64_t nelems,
                                      IN dmapp_type_t type, IN dmapp_pe_t target_pe, IN uint64_t flags);

#ifdef __cplusplus
}
#endif

#endif /* _DMAPP_H */
