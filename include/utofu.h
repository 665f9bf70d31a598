/* utofu.h -- softnic's Fujitsu uTofu API 1.0, provided by libtofucom.so.
 *
 * Written for softnic from the ABI facts (names, values, struct layouts,
 * prototypes); it is not a copy of any vendor header.  Link with -ltofucom
 * (pkg-config utofu); libtofufocom.so, the spelling the user's guide prints,
 * is installed as an alias.  Only <stddef.h> and <stdint.h> are included.
 *
 * The machine this library presents: 6 TNIs per node, CQ ids 0-11 per TNI (the
 * guide's 9 usable CQs cannot be CQs 0-8: Fugaku's assignment below hands out CQs
 * up to 10), 8 VCQs (component ids 0..7) per CQ, 48 VBGs per TNI (16 start/end +
 * 32 relay), the
 * capability values of the guide's chapter 6 (max_edata_size 1,
 * max_toq_desc_size 64, max_putget_size 2^24-1, 256 reserved STags, ...),
 * Tofu version 3.0.  Session-mode CQs are not offered: the one-sided caps do
 * not carry UTOFU_ONESIDED_CAP_FLAG_SESSION_MODE and a SESSION_MODE VCQ is
 * UTOFU_ERR_NOT_SUPPORTED (the SPS bits are accepted and have no effect).
 *
 * How this implementation behaves where the guide is silent:
 *
 * - Nodes: a process's node is SOFTNIC_NODE_ID (set by snrun; each -N group
 *   is one virtual node), else the launcher's node of its rank (mpiexec,
 *   srun), else node 0 (no launcher).  Node n has coordinates
 *   A = n%2, B = (n/2)%3, C = (n/6)%2, X/Y/Z = the bytes of n/12.
 * - The launcher: the program's MPI owns its PMI connection, so the library
 *   uses it only when it is loaded (before main, hence before MPI_Init): MPI
 *   is then given a socket to an in-process relay and our client keeps the
 *   launcher's connection, so both share it.  A job over several machines
 *   exchanges network addresses there, every rank taking part (so
 *   libtofucom must be linked, not dlopen()ed after MPI_Init, in such jobs).
 *   Under snrun, or without a launcher, nothing is asked of anyone.
 * - Machines: processes of one machine reach each other through its node
 *   fabric (shared memory); a VCQ or VBG on another machine is reached through
 *   the network engine, where its owner's progress thread performs the
 *   operation's target side (STADD checks, data, remote notice) itself.
 *   Operations are the same; a remote notice for a VCQ with an operation of
 *   its own in flight to another machine waits until that operation's local
 *   notice is queued (the peer may react to our remote notice before our
 *   reply arrives).  A peer machine that stops answering gives MRQ_PEER after
 *   SOFTNIC_NET_TIMEOUT_MS.
 * - Jobs [replaces: one namespace per SOFTNIC_JOBID, which only snrun set]:
 *   VCQ ids, STADDs and BG ids keep Fujitsu's layouts and carry nothing of the
 *   job; they are looked up in the job's own namespace (every process that
 *   shares the job secret: one snrun, mpiexec or srun job, or one process
 *   started without a launcher).  So concurrent jobs on one machine each get
 *   the CQs and BGs Fugaku's table gives them (the same ids), and an id of
 *   another job names our own VCQ of that id or nothing: a put or get with
 *   another job's STADD fails as UTOFU_ERR_MRQ_RMT_MEMORY (the STag or region
 *   is not registered here) or UTOFU_ERR_MRQ_PEER (no such VCQ in this job),
 *   and no byte of the other job is touched.  [xjob_utofu]
 * - Which TNIs, CQs and BGs a process gets [replaces: CQ (local rank % 9) on
 *   every TNI, BGs first come first served].  Fugaku's job manager gives each
 *   process of a node a share and exports it as UTOFU_CQ_MASK_<tni> and
 *   UTOFU_BG_MASK_<tni> (hexadecimal, 0x optional; bit i = CQ i / BG i), read at
 *   first use; once one variable of a kind is set, TNIs whose variable is unset
 *   have nothing of that kind.  Without them the share follows from the node's
 *   process count ppn and the local rank r, as the launcher tells them
 *   (SOFTNIC_LOCAL_RANK/_SIZE of snrun, MPI_LOCALRANKID/MPI_LOCALNRANKS,
 *   OMPI_COMM_WORLD_LOCAL_RANK/_SIZE, or the launcher's node map), as Fugaku
 *   assigns them, so a program computes its peers' (TNI, CQ):
 *
 *     ppn    TNIs of rank r (first listed first)  CQ of rank r on them
 *     1      0-5                                  0
 *     2      r, r+1, ... (all six)                6r
 *     3      r, r+1, ... (all six)                4r
 *     4      r, r+1, ... (all six)                [0,2,5,8][r]
 *     5-8    3(r%2), +1, +2                       [0,2,5,8][r/2]
 *     9-12   2(r%3), +1                           [0,2,5,8][r/3]
 *     13-24  r%6                                  [0,2,5,8][r/6]
 *     25-30  r%6                                  [0,2,5,8,10][r/6]
 *     31-36  r%6                                  [0,2,5,8,9,10][r/6]
 *     37-42  r%6                                  [0,2,5,6,8,9,10][r/6]
 *     43-48  r%6                                  [0,2,4,5,6,8,9,10][r/6]
 *
 *   On each of its TNIs rank r has the block of CQs from its entry up to the
 *   next entry of the list (the last up to CQ 11), and, with k entries in the
 *   list and j its index in it, start/end BGs j*(16/k) to j*(16/k)+16/k-1 and
 *   relays 16+j*(32/k) to 16+j*(32/k)+32/k-1 (2 per node: BGs 0-7 and 16-31 for
 *   rank 0, 8-15 and 32-47 for rank 1).  utofu_get_onesided_tnis and
 *   utofu_get_barrier_tnis list the rank's TNIs in the order above (tni_ids[0]
 *   is the table's TNI; with masks, ascending).  More than 48 per node, or no
 *   launcher that tells: every TNI, CQ and BG, the lowest free first.  A VCQ or
 *   VBG on a TNI outside the share is UTOFU_ERR_NOT_AVAILABLE.
 *   [utofu_ids, utofu_gates]
 * - CQs: the free-mode VCQs of a process on a TNI share the first CQ of its
 *   block (the CQ peers compute); an EXCLUSIVE VCQ takes another CQ of the
 *   block, the first one last.  A CQ another process of the node holds (masks
 *   that overlap) is passed over with a warning.  No CQ left: UTOFU_ERR_FULL
 *   (shared) or UTOFU_ERR_NOT_AVAILABLE (exclusive).  The CQ is released with
 *   its last VCQ.
 * - VCQ ids, Fujitsu's layout [replaces: X/Y/Z/A/B/C in bits 0-27, TNI 28-31,
 *   CQ 32-37, component 38-40, path 41-44, a tag in 48-63]: bits 0-5 CQ, 24-26
 *   component, 27 set (a component is named), 28 path A, 29-30 path B, 31 path
 *   C, 32-39 X, 40-47 Y, 48-55 Z, 56 A, 57-58 B, 59 C, 61-63 TNI; bits 6-23 and
 *   60 are zero.  Coordinates (1,2,3,1,2,1), TNI 1, CQ 6, component 7:
 *   0x2d030201df000006.  The default path is the node's own A,B,C
 *   (query_vcq_id, construct_vcq_id and set_vcq_id_path(NULL) all give it), so
 *   ids compare equal to notice.vcq_id.  construct_vcq_id works for every VCQ,
 *   with or without a chosen component.  An id whose bits 24-27 are all clear,
 *   as a program builds it from coordinates, TNI and CQ alone, names the CQ's
 *   VCQ of the lowest component.  Other bit patterns are UTOFU_ERR_INVALID_VCQ_ID;
 *   an id naming no live VCQ gives UTOFU_ERR_MRQ_PEER (see Errors).  extra_val
 *   of query_vcq_info is the component (0 when none is named).  [utofu_ids]
 * - VBG ids, Fujitsu's layout [replaces: the VCQ id's old coordinate and TNI
 *   fields, BG in bits 32-37, a tag in 48-63]: BG in bits 0-5 (0-15 start/end,
 *   16-47 relay), bits 32-63 as in VCQ ids, all others zero.  utofu_set_vbg
 *   takes ids programs build that way.  The layouts overlap as Fujitsu's do: a
 *   VBG id of BG 0-11 also reads as a VCQ id without a component.  [utofu_gates]
 * - Path ids are 1 + A*6 + B*2 + C (1..12), so UTOFU_ONESIDED_FLAG_PATH(0)
 *   means "the path in the VCQ id"; a path id above 12 is
 *   UTOFU_ERR_INVALID_PATH_ID.  Paths are validated and carried, and do not
 *   change delivery: every (local VCQ, remote VCQ) pair is one ordered stream.
 * - Notices are causal: an operation's local MRQ notice is never polled after a
 *   remote notice its target caused in reaction to the operation's data (its
 *   place in the MRQ is taken before the data moves; answers from another
 *   machine are held until the operation's notice is queued).  [utofu_causal]
 * - STADDs [replaces: bits 0-35 offset, 36-47 row, 48-60 a check derived from
 *   the VCQ id, 61-63 component, which made a STag's STADD differ between VCQs]:
 *   a STag registration's STADD is 0xf << 48 | STag << 40 | offset (STag 13:
 *   0xf0d0000000000, as Fujitsu's library gives), the same on every VCQ and
 *   process, so a program uses its own STADD of a STag as its peers' (they
 *   registered the same STag); query_stadd returns it for any well-formed VCQ
 *   id, with no communication.  reg_mem STADDs: bit 63 set, 48-62 a check value,
 *   36-47 the region's row in the VCQ's table (256-4095), 0-35 the offset.  What
 *   a STADD reaches is decided at the target VCQ, named by the VCQ id: the row
 *   must be registered there, the range inside it, and every access re-checks
 *   the registration's generation there (a region deregistered meanwhile is
 *   refused).  A STag STADD reaches what the target registers under that STag
 *   now, as on hardware; a reg_mem STADD carries the check its row holds (drawn
 *   from the VCQ id, the row and the registration), so one of another VCQ, or of
 *   a region since deregistered, fails with *_MEMORY.  Regions up to 64 GiB; up
 *   to 3840 reg_mem regions per VCQ besides the STags (UTOFU_ERR_FULL beyond).
 *   Registering the same range with the same flags again returns the same
 *   STADD and counts a reference; dereg_mem must be called as often.
 *   [utofu_local, utofu_ids]
 * - Execution: an operation is carried out while its start (or post_toq)
 *   call runs: data first, then the local MRQ notice, then the remote one,
 *   then the TCQ entry.  The target never has to call the library (it may
 *   compute, sleep or spin on the word being written).  DELAY_START starts at
 *   once, as the guide permits.  Zero-length puts and gets are allowed.
 * - TOQ/TCQ: 1024 descriptors per VCQ; a descriptor keeps its slot until
 *   poll_tcq consumes its TCQ entry (entries without TCQ_NOTICE and without
 *   error are consumed silently).  Start calls then return UTOFU_ERR_BUSY;
 *   post_toq is all-or-nothing.  query_num_unread_tcq counts over every VCQ
 *   of the CQ in this process.
 * - Errors: a bad local STADD of a put is reported by poll_tcq
 *   (UTOFU_ERR_TCQ_MEMORY unknown/stale, _STADD offset outside, _LENGTH end
 *   outside); everything found later on the initiator's MRQ, whether or not a
 *   notice was asked for: remote STADD problems as UTOFU_ERR_MRQ_RMT_*, a put
 *   or ARMW into a READ_ONLY region as MRQ_RMT_MEMORY, a get into a READ_ONLY
 *   or bad local region as MRQ_LCL_*, a remote VCQ that does not exist (or
 *   whose process died) as UTOFU_ERR_MRQ_PEER.  Argument errors are returned
 *   by the call itself and nothing is queued: NULL pointers INVALID_POINTER,
 *   unknown flag bits INVALID_FLAGS, malformed ids INVALID_VCQ_ID /
 *   INVALID_VBG_ID, edata > 255 INVALID_EDATA, lengths above the limits
 *   INVALID_SIZE, misaligned ARMW addresses INVALID_STADD, bad ops INVALID_OP.
 * - Notices: lcl_stadd is set for LCL_GET and RMT_GET (one past the end),
 *   rmt_stadd for every put, get and ARMW notice (one past the end for put and
 *   get, the word itself for ARMW), rmt_value for LCL_ARMW (the old value,
 *   zero-extended); other fields are zero.
 * - MRQ: UTOFU_NUM_MRQ_ENTRIES entries per VCQ (default 131072, rounded to the
 *   nearest documented size, ties upward).  When it overflows, the owner's next
 *   poll_mrq prints "utofu: asynchronous error: MRQ Overflow on TNI t CQ c"
 *   and terminates the process, as documented.
 * - Barriers: see the VBG functions.  One operation per circuit at a time;
 *   a reduction started with UTOFU_REDUCE_OP_BARRIER is a plain barrier;
 *   polling with the wrong poll function is UTOFU_ERR_INVALID_OP; MAXLOC needs
 *   an even num_data (pairs value, location; ties keep the smaller location).
 * - Threads: every object is internally locked, whatever its flags.
 * - Thread cancellation: no call blocks, so none is a cancellation point; a
 *   program waits by polling.  utofu_poll_mrq and utofu_poll_tcq may be
 *   interrupted by an asynchronous cancellation at any point (a polling watcher
 *   thread cancelled at exit ends; the queues stay usable).  Elsewhere a thread
 *   must not be cancelled asynchronously inside the library.  [utofu_cancel]
 * - utofu_get_last_error(prefix), absent from the vendor header but called by
 *   real programs, prints the calling thread's last failing call, its code and
 *   the prefix to stderr.
 */
#ifndef UTOFU_H
#define UTOFU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UTOFU_VERSION_MAJOR 1
#define UTOFU_VERSION_MINOR 0

typedef uint16_t  utofu_tni_id_t;
typedef uint16_t  utofu_cq_id_t;
typedef uint16_t  utofu_bg_id_t;
typedef uint16_t  utofu_cmp_id_t;
typedef uintptr_t utofu_vcq_hdl_t;
typedef uint64_t  utofu_vcq_id_t;
typedef uint64_t  utofu_vbg_id_t;
typedef uint8_t   utofu_path_id_t;
typedef uint64_t  utofu_stadd_t;

enum utofu_return_code {
    UTOFU_SUCCESS = 0,
    UTOFU_ERR_NOT_FOUND = -1,
    UTOFU_ERR_NOT_COMPLETED = -2,
    UTOFU_ERR_NOT_PROCESSED = -3,
    UTOFU_ERR_BUSY = -4,
    UTOFU_ERR_USED = -5,
    UTOFU_ERR_FULL = -6,
    UTOFU_ERR_NOT_AVAILABLE = -7,
    UTOFU_ERR_NOT_SUPPORTED = -8,
    UTOFU_ERR_TCQ_OTHER = -128,
    UTOFU_ERR_TCQ_DESC = -129,
    UTOFU_ERR_TCQ_MEMORY = -130,
    UTOFU_ERR_TCQ_STADD = -131,
    UTOFU_ERR_TCQ_LENGTH = -132,
    UTOFU_ERR_MRQ_OTHER = -192,
    UTOFU_ERR_MRQ_PEER = -193,
    UTOFU_ERR_MRQ_LCL_MEMORY = -194,
    UTOFU_ERR_MRQ_RMT_MEMORY = -195,
    UTOFU_ERR_MRQ_LCL_STADD = -196,
    UTOFU_ERR_MRQ_RMT_STADD = -197,
    UTOFU_ERR_MRQ_LCL_LENGTH = -198,
    UTOFU_ERR_MRQ_RMT_LENGTH = -199,
    UTOFU_ERR_BARRIER_OTHER = -256,
    UTOFU_ERR_BARRIER_MISMATCH = -257,
    UTOFU_ERR_INVALID_ARG = -512,
    UTOFU_ERR_INVALID_POINTER = -513,
    UTOFU_ERR_INVALID_FLAGS = -514,
    UTOFU_ERR_INVALID_COORDS = -515,
    UTOFU_ERR_INVALID_PATH = -516,
    UTOFU_ERR_INVALID_TNI_ID = -517,
    UTOFU_ERR_INVALID_CQ_ID = -518,
    UTOFU_ERR_INVALID_BG_ID = -519,
    UTOFU_ERR_INVALID_CMP_ID = -520,
    UTOFU_ERR_INVALID_VCQ_HDL = -521,
    UTOFU_ERR_INVALID_VCQ_ID = -522,
    UTOFU_ERR_INVALID_VBG_ID = -523,
    UTOFU_ERR_INVALID_PATH_ID = -524,
    UTOFU_ERR_INVALID_STADD = -525,
    UTOFU_ERR_INVALID_ADDRESS = -526,
    UTOFU_ERR_INVALID_SIZE = -527,
    UTOFU_ERR_INVALID_STAG = -528,
    UTOFU_ERR_INVALID_EDATA = -529,
    UTOFU_ERR_INVALID_NUMBER = -530,
    UTOFU_ERR_INVALID_OP = -531,
    UTOFU_ERR_INVALID_DESC = -532,
    UTOFU_ERR_INVALID_DATA = -533,
    UTOFU_ERR_OUT_OF_RESOURCE = -640,
    UTOFU_ERR_OUT_OF_MEMORY = -641,
    UTOFU_ERR_FATAL = -768
};

/* Capability bits. */
#define UTOFU_ONESIDED_CAP_FLAG_SESSION_MODE (1UL << 0)
#define UTOFU_ONESIDED_CAP_FLAG_ARMW         (1UL << 1)

#define UTOFU_ONESIDED_CAP_ARMW_OP_CSWAP (1UL << 0)
#define UTOFU_ONESIDED_CAP_ARMW_OP_SWAP  (1UL << 1)
#define UTOFU_ONESIDED_CAP_ARMW_OP_ADD   (1UL << 2)
#define UTOFU_ONESIDED_CAP_ARMW_OP_XOR   (1UL << 3)
#define UTOFU_ONESIDED_CAP_ARMW_OP_AND   (1UL << 4)
#define UTOFU_ONESIDED_CAP_ARMW_OP_OR    (1UL << 5)

#define UTOFU_BARRIER_CAP_REDUCE_OP_BARRIER (1UL << 1)
#define UTOFU_BARRIER_CAP_REDUCE_OP_BAND    (1UL << 2)
#define UTOFU_BARRIER_CAP_REDUCE_OP_BOR     (1UL << 3)
#define UTOFU_BARRIER_CAP_REDUCE_OP_BXOR    (1UL << 4)
#define UTOFU_BARRIER_CAP_REDUCE_OP_MAX     (1UL << 5)
#define UTOFU_BARRIER_CAP_REDUCE_OP_MAXLOC  (1UL << 6)
#define UTOFU_BARRIER_CAP_REDUCE_OP_SUM     (1UL << 7)
#define UTOFU_BARRIER_CAP_REDUCE_OP_BFPSUM  (1UL << 8)

/* Object flags. */
#define UTOFU_VCQ_FLAG_THREAD_SAFE  (1UL << 0)
#define UTOFU_VCQ_FLAG_EXCLUSIVE    (1UL << 1)
#define UTOFU_VCQ_FLAG_SESSION_MODE (1UL << 2)

#define UTOFU_VBG_FLAG_THREAD_SAFE (1UL << 0)

#define UTOFU_REG_MEM_FLAG_READ_ONLY (1UL << 0)

/* One-sided flags.  The two function-like macros expand exactly as the
 * vendor's do: the argument is not parenthesised. */
#define UTOFU_ONESIDED_FLAG_STRONG_ORDER      (1UL << 0)
#define UTOFU_ONESIDED_FLAG_PACKET_RESPONSE   (1UL << 1)
#define UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE (1UL << 2)
#define UTOFU_ONESIDED_FLAG_PADDING           (1UL << 3)
#define UTOFU_ONESIDED_FLAG_CACHE_INJECTION   (1UL << 5)
#define UTOFU_ONESIDED_FLAG_DELAY_START       (1UL << 8)
#define UTOFU_ONESIDED_FLAG_TCQ_NOTICE        (1UL << 14)
#define UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE  (1UL << 15)
#define UTOFU_ONESIDED_FLAG_SPS(sps)          ((unsigned long int)sps << 24)
#define UTOFU_ONESIDED_FLAG_PATH(path_id)     ((unsigned long int)path_id << 28)

#define UTOFU_VBG_ID_NULL     ((utofu_vbg_id_t)-1)
#define UTOFU_PATH_COORD_NULL ((uint8_t)-1)

enum utofu_armw_op {
    UTOFU_ARMW_OP_SWAP = 1,
    UTOFU_ARMW_OP_ADD = 2,
    UTOFU_ARMW_OP_XOR = 3,
    UTOFU_ARMW_OP_AND = 4,
    UTOFU_ARMW_OP_OR = 5
};

enum utofu_reduce_op {
    UTOFU_REDUCE_OP_BARRIER = 1,
    UTOFU_REDUCE_OP_BAND = 2,
    UTOFU_REDUCE_OP_BOR = 3,
    UTOFU_REDUCE_OP_BXOR = 4,
    UTOFU_REDUCE_OP_MAX = 5,
    UTOFU_REDUCE_OP_MAXLOC = 6,
    UTOFU_REDUCE_OP_SUM = 7,
    UTOFU_REDUCE_OP_BFPSUM = 8
};

enum utofu_mrq_notice_type {
    UTOFU_MRQ_TYPE_LCL_PUT,
    UTOFU_MRQ_TYPE_RMT_PUT,
    UTOFU_MRQ_TYPE_LCL_GET,
    UTOFU_MRQ_TYPE_RMT_GET,
    UTOFU_MRQ_TYPE_LCL_ARMW,
    UTOFU_MRQ_TYPE_RMT_ARMW
};

struct utofu_onesided_caps {
    unsigned long int flags;
    unsigned long int armw_ops;
    unsigned int num_cmp_ids;
    unsigned int num_reserved_stags;
    size_t cache_line_size;
    size_t stag_address_alignment;
    size_t max_toq_desc_size;
    size_t max_putget_size;
    size_t max_piggyback_size;
    size_t max_edata_size;
    size_t max_mtu;
    size_t max_gap;
};

struct utofu_barrier_caps {
    unsigned long int flags;
    unsigned long int reduce_ops;
    size_t max_uint64_reduction;
    size_t max_double_reduction;
};

struct utofu_vbg_setting {
    utofu_vbg_id_t vbg_id;
    utofu_vbg_id_t src_lcl_vbg_id;
    utofu_vbg_id_t src_rmt_vbg_id;
    utofu_vbg_id_t dst_lcl_vbg_id;
    utofu_vbg_id_t dst_rmt_vbg_id;
    uint8_t dst_path_coords[3];
};

struct utofu_mrq_notice {
    uint8_t notice_type;
    uint8_t padding1[7];
    utofu_vcq_id_t vcq_id;
    uint64_t edata;
    uint64_t rmt_value;
    utofu_stadd_t lcl_stadd;
    utofu_stadd_t rmt_stadd;
    uint64_t reserved[2];
};

/* TNIs and capabilities.  The TNI arrays come from malloc: release with free(). */
extern int utofu_get_onesided_tnis(utofu_tni_id_t **tni_ids, size_t *num_tnis);
extern int utofu_get_barrier_tnis(utofu_tni_id_t **tni_ids, size_t *num_tnis);
extern int utofu_query_onesided_caps(utofu_tni_id_t tni_id, struct utofu_onesided_caps **tni_caps);
extern int utofu_query_barrier_caps(utofu_tni_id_t tni_id, struct utofu_barrier_caps **tni_caps);

/* VCQs, VBGs and paths. */
extern int utofu_create_vcq(utofu_tni_id_t tni_id, unsigned long int flags, utofu_vcq_hdl_t *vcq_hdl);
extern int utofu_create_vcq_with_cmp_id(utofu_tni_id_t tni_id, utofu_cmp_id_t cmp_id, unsigned long int flags,
                                        utofu_vcq_hdl_t *vcq_hdl);
extern int utofu_free_vcq(utofu_vcq_hdl_t vcq_hdl);
extern int utofu_query_vcq_id(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t *vcq_id);
extern int utofu_construct_vcq_id(uint8_t coords[], utofu_tni_id_t tni_id, utofu_cq_id_t cq_id,
                                  utofu_cmp_id_t cmp_id, utofu_vcq_id_t *vcq_id);
extern int utofu_set_vcq_id_path(utofu_vcq_id_t *vcq_id, uint8_t path_coords[]);
extern int utofu_query_vcq_info(utofu_vcq_id_t vcq_id, uint8_t coords[], utofu_tni_id_t *tni_id,
                                utofu_cq_id_t *cq_id, uint16_t *extra_val);
extern int utofu_alloc_vbg(utofu_tni_id_t tni_id, size_t num_vbgs, unsigned long int flags, utofu_vbg_id_t vbg_ids[]);
extern int utofu_free_vbg(utofu_vbg_id_t vbg_ids[], size_t num_vbgs);
extern int utofu_set_vbg(struct utofu_vbg_setting vbg_settings[], size_t num_vbg_settings);
extern int utofu_query_vbg_info(utofu_vbg_id_t vbg_id, uint8_t coords[], utofu_tni_id_t *tni_id,
                                utofu_bg_id_t *bg_id, uint16_t *extra_val);
extern int utofu_get_path_id(utofu_vcq_id_t vcq_id, uint8_t path_coords[], utofu_path_id_t *path_id);
extern int utofu_get_path_coords(utofu_vcq_id_t vcq_id, utofu_path_id_t path_id, uint8_t path_coords[]);

/* Memory. */
extern int utofu_reg_mem(utofu_vcq_hdl_t vcq_hdl, void *addr, size_t size, unsigned long int flags,
                         utofu_stadd_t *stadd);
extern int utofu_reg_mem_with_stag(utofu_vcq_hdl_t vcq_hdl, void *addr, size_t size, unsigned int stag,
                                   unsigned long int flags, utofu_stadd_t *stadd);
extern int utofu_query_stadd(utofu_vcq_id_t vcq_id, unsigned int stag, utofu_stadd_t *stadd);
extern int utofu_dereg_mem(utofu_vcq_hdl_t vcq_hdl, utofu_stadd_t stadd, unsigned long int flags);

/* One-sided start functions. */
extern int utofu_put(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, utofu_stadd_t lcl_stadd,
                     utofu_stadd_t rmt_stadd, size_t length, uint64_t edata, unsigned long int flags, void *cbdata);
extern int utofu_put_gap(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, utofu_stadd_t lcl_stadd,
                         utofu_stadd_t rmt_stadd, size_t length, uint64_t edata, unsigned long int flags,
                         size_t mtu, size_t gap, void *cbdata);
extern int utofu_put_stride(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, utofu_stadd_t lcl_stadd,
                            utofu_stadd_t rmt_stadd, size_t length, size_t stride, size_t num_blocks,
                            uint64_t edata, unsigned long int flags, void *cbdata);
extern int utofu_put_stride_gap(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, utofu_stadd_t lcl_stadd,
                                utofu_stadd_t rmt_stadd, size_t length, size_t stride, size_t num_blocks,
                                uint64_t edata, unsigned long int flags, size_t mtu, size_t gap, void *cbdata);
extern int utofu_put_piggyback(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, void *lcl_data,
                               utofu_stadd_t rmt_stadd, size_t length, uint64_t edata, unsigned long int flags,
                               void *cbdata);
extern int utofu_put_piggyback8(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, uint64_t lcl_data,
                                utofu_stadd_t rmt_stadd, size_t length, uint64_t edata, unsigned long int flags,
                                void *cbdata);
extern int utofu_get(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, utofu_stadd_t lcl_stadd,
                     utofu_stadd_t rmt_stadd, size_t length, uint64_t edata, unsigned long int flags, void *cbdata);
extern int utofu_get_gap(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, utofu_stadd_t lcl_stadd,
                         utofu_stadd_t rmt_stadd, size_t length, uint64_t edata, unsigned long int flags,
                         size_t mtu, size_t gap, void *cbdata);
extern int utofu_get_stride(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, utofu_stadd_t lcl_stadd,
                            utofu_stadd_t rmt_stadd, size_t length, size_t stride, size_t num_blocks,
                            uint64_t edata, unsigned long int flags, void *cbdata);
extern int utofu_get_stride_gap(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, utofu_stadd_t lcl_stadd,
                                utofu_stadd_t rmt_stadd, size_t length, size_t stride, size_t num_blocks,
                                uint64_t edata, unsigned long int flags, size_t mtu, size_t gap, void *cbdata);
extern int utofu_armw4(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, enum utofu_armw_op armw_op,
                       uint32_t op_value, utofu_stadd_t rmt_stadd, uint64_t edata, unsigned long int flags,
                       void *cbdata);
extern int utofu_armw8(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, enum utofu_armw_op armw_op,
                       uint64_t op_value, utofu_stadd_t rmt_stadd, uint64_t edata, unsigned long int flags,
                       void *cbdata);
extern int utofu_cswap4(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, uint32_t old_value, uint32_t new_value,
                        utofu_stadd_t rmt_stadd, uint64_t edata, unsigned long int flags, void *cbdata);
extern int utofu_cswap8(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, uint64_t old_value, uint64_t new_value,
                        utofu_stadd_t rmt_stadd, uint64_t edata, unsigned long int flags, void *cbdata);
extern int utofu_nop(utofu_vcq_hdl_t vcq_hdl, unsigned long int flags, void *cbdata);

/* Prepared descriptors (at most 64 bytes each, 8-byte multiples, position
 * independent, concatenable, reusable) and their posting. */
extern int utofu_prepare_put(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, utofu_stadd_t lcl_stadd,
                             utofu_stadd_t rmt_stadd, size_t length, uint64_t edata, unsigned long int flags,
                             void *desc, size_t *desc_size);
extern int utofu_prepare_put_gap(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, utofu_stadd_t lcl_stadd,
                                 utofu_stadd_t rmt_stadd, size_t length, uint64_t edata, unsigned long int flags,
                                 size_t mtu, size_t gap, void *desc, size_t *desc_size);
extern int utofu_prepare_put_stride(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, utofu_stadd_t lcl_stadd,
                                    utofu_stadd_t rmt_stadd, size_t length, size_t stride, size_t num_blocks,
                                    uint64_t edata, unsigned long int flags, void *desc, size_t *desc_size);
extern int utofu_prepare_put_stride_gap(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, utofu_stadd_t lcl_stadd,
                                        utofu_stadd_t rmt_stadd, size_t length, size_t stride, size_t num_blocks,
                                        uint64_t edata, unsigned long int flags, size_t mtu, size_t gap, void *desc,
                                        size_t *desc_size);
extern int utofu_prepare_put_piggyback(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, void *lcl_data,
                                       utofu_stadd_t rmt_stadd, size_t length, uint64_t edata,
                                       unsigned long int flags, void *desc, size_t *desc_size);
extern int utofu_prepare_put_piggyback8(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, uint64_t lcl_data,
                                        utofu_stadd_t rmt_stadd, size_t length, uint64_t edata,
                                        unsigned long int flags, void *desc, size_t *desc_size);
extern int utofu_prepare_get(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, utofu_stadd_t lcl_stadd,
                             utofu_stadd_t rmt_stadd, size_t length, uint64_t edata, unsigned long int flags,
                             void *desc, size_t *desc_size);
extern int utofu_prepare_get_gap(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, utofu_stadd_t lcl_stadd,
                                 utofu_stadd_t rmt_stadd, size_t length, uint64_t edata, unsigned long int flags,
                                 size_t mtu, size_t gap, void *desc, size_t *desc_size);
extern int utofu_prepare_get_stride(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, utofu_stadd_t lcl_stadd,
                                    utofu_stadd_t rmt_stadd, size_t length, size_t stride, size_t num_blocks,
                                    uint64_t edata, unsigned long int flags, void *desc, size_t *desc_size);
extern int utofu_prepare_get_stride_gap(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, utofu_stadd_t lcl_stadd,
                                        utofu_stadd_t rmt_stadd, size_t length, size_t stride, size_t num_blocks,
                                        uint64_t edata, unsigned long int flags, size_t mtu, size_t gap, void *desc,
                                        size_t *desc_size);
extern int utofu_prepare_armw4(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, enum utofu_armw_op armw_op,
                               uint32_t op_value, utofu_stadd_t rmt_stadd, uint64_t edata, unsigned long int flags,
                               void *desc, size_t *desc_size);
extern int utofu_prepare_armw8(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, enum utofu_armw_op armw_op,
                               uint64_t op_value, utofu_stadd_t rmt_stadd, uint64_t edata, unsigned long int flags,
                               void *desc, size_t *desc_size);
extern int utofu_prepare_cswap4(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, uint32_t old_value,
                                uint32_t new_value, utofu_stadd_t rmt_stadd, uint64_t edata,
                                unsigned long int flags, void *desc, size_t *desc_size);
extern int utofu_prepare_cswap8(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, uint64_t old_value,
                                uint64_t new_value, utofu_stadd_t rmt_stadd, uint64_t edata,
                                unsigned long int flags, void *desc, size_t *desc_size);
extern int utofu_prepare_nop(utofu_vcq_hdl_t vcq_hdl, unsigned long int flags, void *desc, size_t *desc_size);
extern int utofu_post_toq(utofu_vcq_hdl_t vcq_hdl, void *desc, size_t desc_size, void *cbdata);

/* Completion. */
extern int utofu_poll_tcq(utofu_vcq_hdl_t vcq_hdl, unsigned long int flags, void **cbdata);
extern int utofu_poll_mrq(utofu_vcq_hdl_t vcq_hdl, unsigned long int flags, struct utofu_mrq_notice *notice);
extern int utofu_query_num_unread_tcq(utofu_vcq_hdl_t vcq_hdl, size_t *count);
extern int utofu_query_num_unread_mrq(utofu_vcq_hdl_t vcq_hdl, size_t *count);

/* Barrier circuits. */
extern int utofu_barrier(utofu_vbg_id_t vbg_id, unsigned long int flags);
extern int utofu_reduce_uint64(utofu_vbg_id_t vbg_id, enum utofu_reduce_op op, uint64_t data[], size_t num_data,
                               unsigned long int flags);
extern int utofu_reduce_double(utofu_vbg_id_t vbg_id, enum utofu_reduce_op op, double data[], size_t num_data,
                               unsigned long int flags);
extern int utofu_poll_barrier(utofu_vbg_id_t vbg_id, unsigned long int flags);
extern int utofu_poll_reduce_uint64(utofu_vbg_id_t vbg_id, unsigned long int flags, uint64_t data[]);
extern int utofu_poll_reduce_double(utofu_vbg_id_t vbg_id, unsigned long int flags, double data[]);

/* Versions and the local node. */
extern void utofu_query_tofu_version(int *major_ver, int *minor_ver);
extern void utofu_query_utofu_version(int *major_ver, int *minor_ver);
extern int utofu_query_my_coords(uint8_t coords[]);

#ifdef __cplusplus
}
#endif

#endif /* UTOFU_H */
