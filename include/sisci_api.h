/* sisci_api.h -- softnic's Dolphin SISCI API (the current DIS API), provided
 * by libsisci.so.
 *
 * Written for softnic from the ABI facts (names, values, struct layouts,
 * prototypes); it is not a copy of any vendor header.  Link with -lsisci
 * (pkg-config sisci).  The headers are also installed under include/dis/,
 * as the vendor installs them.
 *
 * Flags and query codes are macros with today's values where they are known
 * (the values Dolphin's current header gives); the others are ours, distinct
 * among the flags each function takes.  libsisci.so also exports every one of
 * them as a const unsigned int object, under its name and under SISCI 1.10's
 * _SISCI_PUBLIC_CONST_<name>, and every function under three names: its own,
 * _SISCI_PUBLIC_FUNC_ST_<name> (what this header makes calls reference) and
 * _SISCI_PUBLIC_FUNC_MT_<name> (the same with _REENTRANT, i.e. gcc -pthread).
 * SISCI 1.10 functions that today's API dropped are kept with their 1.10
 * prototypes (sizes and offsets unsigned int), see the end of this file.
 *
 * How this implementation behaves where the reference is silent:
 *
 * - Nodes.  A process's node id is SOFTNIC_SISCI_NODE_ID when set (programs
 *   started without a launcher: SOFTNIC_SISCI_NODE_ID=4 ./server & and
 *   SOFTNIC_SISCI_NODE_ID=8 ./client 4); otherwise 4*(n+1) for the launcher's
 *   node n (snrun -N k makes nodes of k ranks: 4, 8, 12, ...; PMI's process
 *   mapping under mpiexec or srun), skipping 252; 4 without a launcher.  All
 *   processes of a node share its segment ids and interrupt numbers, claimed
 *   in the node registry (SCI_ERR_SEGMENTID_USED whoever holds them).  Nodes
 *   of one machine reach each other through shared memory, nodes of other
 *   machines through the network engine; SCI_LOCAL_HOST names this node.  A
 *   node exists when the launcher's job has it, or always without a launcher;
 *   SCIProbeNode and connects to a node that does not exist answer
 *   SCI_ERR_NO_SUCH_NODEID at once.  Adapter names: "node<id>", this host's
 *   name, "local".
 * - One adapter per node, number 0; 1..15 are SCI_ERR_NO_SUCH_ADAPTERNO, 16
 *   and up SCI_ERR_ILLEGAL_ADAPTERNO.  Its link is always up (SCI_CB_LOST is
 *   the only link event: a segment's owner died).
 * - Handles are opaque tagged values, never dereferenced: NULL, forged, stale
 *   and other kinds' handles are SCI_ERR_ILLEGAL_PARAMETER.  *error is always
 *   written (a NULL error pointer is tolerated).  Flags a function does not
 *   take are SCI_ERR_ILLEGAL_FLAG; nothing changes when a call fails.
 * - Limits: 32 resources of each kind per virtual device (SCI_ERR_NOSPC
 *   beyond); 96 connections per segment or interrupt
 *   (SCI_ERR_CONNECTION_REFUSED beyond); SCI_FLAG_AUTO_ID tries
 *   [id, id + 128]; interrupts without SCI_FLAG_FIXED_INTNO get the lowest
 *   free number from 0x10000 (plain and data interrupts are separate
 *   namespaces); up to 8 creators share a SCI_FLAG_SHARED_INT number (a
 *   connection reaches the sharers that existed when it was made); segments
 *   of any size up to the machine's memory, zero-filled, with no alignment
 *   rules (a size of 0 is SCI_ERR_SIZE_ALIGNMENT, for maps too).
 * - Segments.  create -> prepare -> available <-> unavailable -> remove, as
 *   documented.  SCIConnectSegment makes one attempt and never waits (its
 *   timeout is ignored): a segment that does not exist or is not available is
 *   SCI_ERR_NO_SUCH_SEGMENT, and programs retry.  Connections to the local
 *   node are allowed.  Teardown follows what the hardware lets programs do.
 *   SCIRemoveSegment is SCI_ERR_BUSY while the segment is mapped (here or by
 *   an importer) or a DMA transfer in flight uses it; an importer's
 *   connection with nothing mapped and no transfer in flight does not hold
 *   it: the removal succeeds, the importer is told (SCI_CB_DISCONNECT, status
 *   SCI_ERR_OK) and its connection dropped, its later SCIMapRemoteSegment is
 *   SCI_ERR_NOT_CONNECTED, a transfer it starts ends in SCI_DMAQUEUE_ERROR
 *   (SCI_ERR_TRANSFER_FAILED), and its SCIDisconnectSegment succeeds.  A
 *   broadcast connection reaches the group, not the member it was made
 *   through: that member's removal neither waits for its maps and transfers
 *   nor tells it, and on a machine with a member it goes on reaching the group
 *   also when that member's process ends (no SCI_CB_LOST for it).
 *   SCIDisconnectSegment is SCI_ERR_BUSY while the connection is mapped or a
 *   transfer uses it; SCIClose while resources of the device exist.
 *   SCIUnmapSegment succeeds while sequences of the map exist (programs do not
 *   remove them): such a sequence then holds nothing (not even a resource of
 *   its device), SCIStartSequence answers SCI_SEQ_PENDING and SCICheckSequence
 *   SCI_SEQ_NOT_RETRIABLE, both with SCI_ERR_ILLEGAL_OPERATION, SCIMemCpy with
 *   SCI_FLAG_ERROR_CHECK on it is SCI_ERR_ILLEGAL_OPERATION, SCIFlush and
 *   SCIStoreBarrier on it do nothing, and SCIRemoveSequence still succeeds.
 *   [sisci_teardown, sisci_local, sisci_pingpong]
 *   Connections of processes that died are dropped first, each reported to
 *   the owner as SCI_CB_DISCONNECT.  SCI_FLAG_NOTIFY sends every importer
 *   SCI_CB_DISCONNECT (status SCI_ERR_OK); SCI_FLAG_FORCE_DISCONNECT also
 *   drops the connections (and SCI_FLAG_FORCE_REMOVE on removal), after which
 *   importers' maps stay readable, their sequences say NOT_RETRIABLE and
 *   their transfers fail.  An owner that dies is reported once to each
 *   importer as SCI_CB_LOST with status SCI_ERR_NOT_CONNECTED.  Up to 64
 *   owner events queue per segment (older ones are dropped when nobody takes
 *   them).  SCI_CB_CONNECT is not delivered on the importer's side.
 * - Shared segments: the creator's SCIRemoveSegment while others are attached
 *   is its detach, the segment stays until the last user removes it (or the
 *   creator's process ends); events of a shared segment go to one of its
 *   users.
 * - Program memory (SCIRegisterSegmentMemory, SCIAttachPhysicalMemory with a
 *   CPU address) must be mapped (writable unless SCI_FLAG_READONLY_USER_MEM)
 *   and 4-byte aligned; it is made shareable in place, and peers on this
 *   machine map it like library memory.  SCIAttachPhysicalMemory without a
 *   CPU address (a bus address only devices reach) is SCI_ERR_NOT_SUPPORTED.
 *   Documented, not prevented: a map is made of whole pages (an MMU maps
 *   nothing smaller, as an NTB window maps whole pages too), so an importer
 *   on this machine that reaches below the map's start or past its end, by
 *   pointer arithmetic, reads and writes the rest of the registered memory's
 *   first and last pages.  SCIMemCpy, SCIMemWrite, DMA and remote maps of
 *   another machine (copies) stay within what was registered.  Register
 *   page-aligned memory, whole pages, to expose nothing else.
 * - Jobs: segments, interrupts and reflective-memory groups are found only by
 *   processes of the same job (those sharing its secret: the ranks of one
 *   snrun, mpiexec or srun job).  Processes started by hand, without a
 *   launcher, are one job each unless given the same SOFTNIC_JOB_SECRET (32
 *   hex digits), so a server and client started separately need it:
 *     export SOFTNIC_JOB_SECRET=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
 *   A node and segment id of another job, however learnt, is
 *   SCI_ERR_NO_SUCH_SEGMENT (and its interrupts SCI_ERR_NO_SUCH_INTNO).
 * - Maps of this machine's segments are the owner's memory: loads and stores
 *   are PIO, coherent; SCIFlush, SCIStoreBarrier and SCICheckSequence are full
 *   fences.  SCI_FLAG_READONLY_MAP protects a map of another process's
 *   segment (SCIMemCpy into one is SCI_ERR_ACCESS); SCI_FLAG_FIXED_MAP_ADDR's
 *   address is not used; LOCK_OPERATION, CONDITIONAL_INTERRUPT_MAP and
 *   UNCONDITIONAL_DATA_INTERRUPT_MAP are SCI_ERR_FLAG_NOT_IMPLEMENTED.  Map
 *   and segment addresses (SCIGetMapPhysAddr, SCIQuery) are opaque non-zero
 *   tokens.
 * - Maps of a segment on another machine are shadows (a coherent pointer into
 *   another machine's memory cannot exist): a private copy of the window,
 *   filled when the map is made.  Stores reach the owner, as whole 8-byte
 *   words in address order, at the next SCIFlush, SCIStoreBarrier,
 *   SCIStartSequence, SCICheckSequence (unless SCI_FLAG_NO_FLUSH and
 *   SCI_FLAG_NO_STORE_BARRIER), SCIUnmapSegment, SCITriggerInterrupt or
 *   SCITriggerDataInterrupt (so an interrupt never overtakes the data stored
 *   before it); loads see the owner's memory as of the map or the last
 *   SCIStartSequence / SCICheckSequence, which refresh the copy after
 *   shipping (SCICacheSync ships, with SCI_FLAG_CACHE_INVALIDATE refreshes).
 *   In between, a library thread does the same every SOFTNIC_SISCI_SHADOW_US
 *   microseconds (default 1000; less often for large windows), so flags
 *   polled or stored without those calls still move, with that delay.  A
 *   background pass is not ordered with the program's own
 *   stores: between data and the flag behind it a writer calls SCIFlush or
 *   SCIStoreBarrier (as write combining on the real hardware requires), and a
 *   reader, having seen the flag change, calls SCIStartSequence (or reads with
 *   SCIMemCpy) before it reads the data.  Only changed words travel, and a
 *   refresh never replaces a word stored but not yet shipped: on a word two
 *   nodes store, the last writer wins.  SCIMemCpy, SCIMemWrite and DMA always
 *   go to the owner.
 * - Reflective memory, as with PCIe multicast: every broadcast segment (one
 *   per node and id) is the node's own copy of the group.  Its local maps
 *   (and plain connections to it, without SCI_FLAG_BROADCAST) are plain
 *   memory, and a store through them stays in that copy; what is written to
 *   the group - a store through a broadcast map (SCIConnectSegment with
 *   SCI_FLAG_BROADCAST to DIS_BROADCAST_NODEID_GROUP_ALL, mapped), SCIMemCpy
 *   or SCIMemWrite to one, a DMA to a broadcast connection (with or without
 *   SCI_FLAG_BROADCAST) - reaches every member's copy, the writer's own node
 *   included.  SCIConnectSegment to the group connects through a member: the
 *   node's own, another node's of the machine, or another machine's (an
 *   ordinary segment of the node with the group's id is not a member and is
 *   passed over).  A broadcast map is a copy of the group's content, not of
 *   any node's copy: its loads never see a node's private stores, and its
 *   stores reach the group, as whole 8-byte words in address order, at the
 *   points and in the background of the shadows above (SCIFlush,
 *   SCIStoreBarrier, sequences, SCIUnmapSegment, triggers, SCICacheSync, every
 *   SOFTNIC_SISCI_SHADOW_US); only words changed since the map last synced
 *   travel, so a store that leaves a word's value as the map last saw it is
 *   not a write to the group (SCIMemCpy and SCIMemWrite carry every byte).
 *   On one machine a write is in every member's copy when the call that makes
 *   it returns.  Each machine keeps a mirror of the group's content (made
 *   with its first member, living as long as that process) and writes every
 *   word that reaches the mirror into the machine's copies.  Across machines
 *   the mirrors are kept in step through one of them, the group's hub (the
 *   oldest: the first machine's; the lowest node among machines that made
 *   theirs at once): every other machine ships its writes to the hub before
 *   the writing call returns and reloads its mirror from the hub (a word
 *   written and not shipped yet keeps its value) at its members' sequences,
 *   SCICacheSync with SCI_FLAG_CACHE_INVALIDATE (on any map of the group, the
 *   local map included), before SCIMemCpy reads, and every
 *   SOFTNIC_SISCI_SHADOW_US in the background (one process per machine); the
 *   hub's machine takes what other machines shipped into its copies at the
 *   same points.  So a write reaches the other machines' copies at their next
 *   reload: a writer calls SCIStoreBarrier between data and the flag behind
 *   it, and a reader that sees the flag calls SCIStartSequence on its
 *   broadcast map (or SCICacheSync with SCI_FLAG_CACHE_INVALIDATE) before it
 *   reads the data.  An interrupt or data interrupt is delivered (wait or
 *   callback) after its process's mirrors and broadcast maps were reloaded,
 *   so data written to the group before the trigger (which ships it) is in
 *   the receiver's copy and broadcast map at once.  On a word machines write
 *   at once the hub's order decides, and every copy ends with the hub's value.
 *   A machine without a member reaches the group through the hub's mirror
 *   (its broadcast maps are shadows of it).  A copy made later starts with the
 *   group's content.  When the hub's process ends, the next oldest mirror is
 *   the hub (found out within SOFTNIC_NET_TIMEOUT_MS, during which sequences
 *   may answer SCI_SEQ_PENDING); what only the old hub had is lost.  A member
 *   larger than its machine's mirror is SCI_ERR_OUT_OF_RANGE; up to 63
 *   machines share a group, up to 64 members a machine.  [sisci_reflect,
 *   sisci_bcast]
 * - DMA moves data with the fabric's one-sided engine (a copy between the two
 *   mappings on one machine, libfabric across machines).  Without
 *   SCI_FLAG_USE_CALLBACK a transfer runs within its start call (POSTED while
 *   it runs, then DONE or ERROR); with it, on the library's DMA thread, which
 *   then calls the callback (SCI_ERR_OK, SCI_ERR_TRANSFER_FAILED, or
 *   SCI_ERR_CANCELLED after SCIAbortDMAQueue).  Data moves in pieces of 1 MiB;
 *   an abort takes effect between pieces and SCIAbortDMAQueue returns once
 *   the queue left POSTED.  SCIWaitForDMAQueue on a transfer started with a
 *   callback is SCI_ERR_ILLEGAL_OPERATION.  Remote segments need not be
 *   mapped; vectors have 1..DIS_DMA_MAX_VECLEN entries whose flags are
 *   ignored (programs leave them uninitialised);
 *   maxEntries bounds SISCI 1.10's SCIEnqueueDMATransfer (SCI_ERR_MAX_ENTRIES)
 *   and must be at least 1.  DMA channels are bookkeeping: 4 channels of each
 *   type (ADAPTER, GLOBAL, SYSTEM; DONTCARE means ADAPTER; SLAVE and
 *   TRANSPARENT are SCI_ERR_DMA_NOT_AVAILABLE) per process, exclusive unless
 *   SCI_FLAG_DMA_CHANNEL_SHARED; only SYSTEM channels take
 *   SCIPrepare*SegmentForDMA.
 * - Events are causal: an interrupt or data interrupt that a target
 *   triggers on seeing a DMA write's data is never delivered (wait returned,
 *   callback called) before the transfer's end shows in its queue's state;
 *   deliveries wait for the end of writes whose last MiB is being moved.  The
 *   DMA callback may run after the answer's callback has begun (it is called
 *   once the state is final, and may itself wait for the answer).
 *   [sisci_causal]
 * - Interrupts: plain interrupts coalesce (at least one event per burst, the
 *   last trigger never lost); SCI_FLAG_COUNTING_INT on either side makes one
 *   event per trigger.  Data interrupts carry up to 4096 bytes (more is
 *   SCI_ERR_OUT_OF_RANGE), queue up to 32 messages per interrupt in order (a
 *   trigger meeting a full queue is SCI_ERR_NOSPC at once, the message not
 *   taken); a message longer than the waiter's buffer is
 *   SCI_ERR_OUT_OF_RANGE with *length set to its size and stays first in
 *   line.  SCIRemoveInterrupt and SCIRemoveDataInterrupt succeed also while
 *   processes are connected (the triggering side holds nothing the receiver
 *   could wait for, and the hardware lets the receiver go on): the number is
 *   free at once, waiters are woken with SCI_ERR_CANCELLED, and the
 *   connected processes' triggers fail with SCI_ERR_NOT_CONNECTED (their
 *   SCIDisconnect* succeed).  A trigger whose interrupt or owner is gone is
 *   SCI_ERR_NOT_CONNECTED; one that goes to several (the sharers of a
 *   SCI_FLAG_SHARED_INT number, a broadcast) passes over those gone while
 *   another took it.  SCI_FLAG_BROADCAST on SCIConnectDataInterrupt reaches
 *   every node of the job that has the number.  [sisci_intr, sisci_teardown]
 * - Callbacks run in one library thread per process, started by the first
 *   SCI_FLAG_USE_CALLBACK (segments, connections, interrupts; DMA callbacks
 *   run on the DMA thread), one at a time and with no library lock held, so a
 *   callback may call the library, remove its own object or start the next
 *   transfer.  Waits (SCIWaitFor*) are SCI_ERR_ILLEGAL_OPERATION while a
 *   callback is armed; they sleep (futexes), and a signal does not end them.
 * - Across machines, a process must be known to the others through the
 *   launcher.  In an MPI program every rank's address is exchanged when
 *   libsisci is loaded (before main, so MPI's own collectives need not carry
 *   it); in a program without MPI, from its first PMI collective after
 *   SCIInitialize on (PMI_Barrier, PMI_KVS_Fence, PMI_Allgather).  A process
 *   on another machine that dies is noticed within SOFTNIC_NET_TIMEOUT_MS.
 * - Queries: SCI_Q_ADAPTER results are unsigned int (node id, 1 for
 *   CONFIGURED and the link states, 4096 DATAINT_MAX_LENGTH, 4
 *   MCAST_MAX_GROUPS, 1 MiB DMA_MTU, alignments 1, ...); an unknown
 *   sub-command is SCI_ERR_ILLEGAL_PARAMETER, an unknown command
 *   SCI_ERR_ILLEGAL_QUERY; strings are truncated to the buffer and always
 *   NUL-terminated.
 * - Not available without hardware: SmartIO (SCI_ERR_NOT_IMPLEMENTED, the
 *   reference's code for a system without it; SCIGetDeviceList finds no
 *   devices), adapter registers (SCIGet/SetCSRRegister, SCIGet/SetLocalCSR),
 *   SCIConnectSCISpace, and SISCI 1.10's physical DMA, conditional
 *   interrupts and asynchronous block transfers (SCI_ERR_NOT_SUPPORTED).
 * - Thread cancellation: the waits are cancellation points, deferred and
 *   asynchronous: SCIWaitForInterrupt, SCIWaitForDataInterrupt (no message is
 *   taken for a cancelled thread), SCIWaitForLocalSegmentEvent,
 *   SCIWaitForRemoteSegmentEvent, SCIWaitForDMAQueue, and the DMA starts with
 *   SCI_FLAG_DMA_WAIT (SCIStartDmaTransfer*, SCIPostDMAQueue; the transfer
 *   goes on).  SCIFlush, SCIStoreBarrier and SCIFlushReadBuffers are fences
 *   while the process has no map whose stores are shipped (maps of another
 *   machine's segment, broadcast maps), no cancellation point, as on the
 *   hardware; with such maps they ship and are cancellation points when
 *   called (a request already pending ends the thread before anything is
 *   shipped) and while they wait for another process's pass over the group;
 *   the network round trip of a ship is not one (it ends within
 *   SOFTNIC_NET_TIMEOUT_MS).  No other call is a cancellation point.  A
 *   thread cancelled asynchronously inside any of these calls ends cleanly
 *   (the calls hold cancellation off while they hold anything).
 *   [sisci_cancel]
 */
#ifndef _SISCI_API_H
#define _SISCI_API_H

#include <stddef.h>
#include "sisci_types.h"
#include "sisci_error.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef SISCI_API_EXPORT
#define SISCI_API_EXPORT extern
#endif

/* Every function is referenced by its single-threaded name, or its
 * multithreaded name when _REENTRANT is defined (gcc -pthread); the library
 * exports both, and the plain name, for the same implementation. */
#if defined(_REENTRANT)
#define _SISCI_EXPANDE_FUNCTION_NAME(name) _SISCI_PUBLIC_FUNC_MT_##name
#define _SISCI_EXPANDE_VARIABLE_NAME(name) _SISCI_PUBLIC_VAR_MT_##name
#else
#define _SISCI_EXPANDE_FUNCTION_NAME(name) _SISCI_PUBLIC_FUNC_ST_##name
#define _SISCI_EXPANDE_VARIABLE_NAME(name) _SISCI_PUBLIC_VAR_ST_##name
#endif
#define _SISCI_EXPANDE_CONSTANT_NAME(name) _SISCI_PUBLIC_CONST_##name

typedef char *sci_semaphoreId_t;

/* ---- flags (per function: flags of different functions share bits) ------ */
#define SCI_FLAG_USE_CALLBACK                    0x00000001U
/* SCICreateSegment */
#define SCI_FLAG_EMPTY                           0x00000002U
#define SCI_FLAG_PRIVATE                         0x00000004U
#define SCI_FLAG_DMA_GLOBAL                      0x00000040U
#define SCI_FLAG_ALLOW_UNICAST                   0x00000080U
#define SCI_FLAG_BROADCAST                       0x00040000U
#define SCI_FLAG_AUTO_ID                         0x20000000U
/* SCIPrepareSegment */
#define SCI_FLAG_DMA_SOURCE_ONLY                 0x00000008U
/* SCIRemoveSegment */
#define SCI_FLAG_FORCE_REMOVE                    0x00000020U
/* SCISetSegmentUnavailable */
#define SCI_FLAG_NOTIFY                          0x00080000U
#define SCI_FLAG_FORCE_DISCONNECT                0x00400000U
/* SCIConnectSegment */
#define SCI_FLAG_ASYNCHRONOUS_CONNECT            0x00020000U
/* SCIMapLocalSegment, SCIMapRemoteSegment */
#define SCI_FLAG_FIXED_MAP_ADDR                  0x00000001U
#define SCI_FLAG_READONLY_MAP                    0x00000002U
#define SCI_FLAG_LOCK_OPERATION                  0x00000004U
#define SCI_FLAG_CONDITIONAL_INTERRUPT_MAP       0x00000008U
#define SCI_FLAG_UNCONDITIONAL_DATA_INTERRUPT_MAP 0x00000010U
#define SCI_FLAG_IO_MAP_IOSPACE                  0x00000080U
#define SCI_FLAG_READ_PREFETCH_AGGR_HOLD_MAP     0x00000100U
#define SCI_FLAG_READ_PREFETCH_NO_HOLD_MAP       0x00000200U
#define SCI_FLAG_DMOVE_MAP                       0x00000400U
#define SCI_FLAG_NO_MEMORY_LOOPBACK              0x00000800U
#define SCI_FLAG_NO_MEMORY_LOOPBACK_MAP          0x00000800U
#define SCI_FLAG_WRITES_DISABLE_GATHER_MAP       0x00001000U
#define SCI_FLAG_SHARED_MAP                      0x00002000U
#define SCI_FLAG_DISABLE_128_BYTES_PACKETS       0x00004000U
#define SCI_FLAG_WRITE_BACK_CACHE_MAP            0x08000000U
/* SCIMemCpy, SCIMemWrite */
#define SCI_FLAG_BLOCK_READ                      0x00008000U
#define SCI_FLAG_ERROR_CHECK                     0x00010000U
#define SCI_FLAG_BLOCK_PAD_UP                    0x00020000U
/* SCICheckSequence, SCIStoreBarrier, SCIFlush */
#define SCI_FLAG_NO_FLUSH                        0x00800000U
#define SCI_FLAG_NO_STORE_BARRIER                0x40000000U
#define SCI_FLAG_FAST_BARRIER                    0x00008000U
#define SCI_FLAG_FLUSH_CPU_BUFFERS_ONLY          0x80000000U
#define FLUSH_CPU_BUFFERS_ONLY                   SCI_FLAG_FLUSH_CPU_BUFFERS_ONLY
/* DMA */
#define SCI_FLAG_DMA_WAIT                        0x00000004U
#define SCI_FLAG_DMA_READ                        0x00000010U
#define SCI_FLAGSEG                              0x00000010U
#define SCI_FLAG_DMA_PHDMA                       0x00000020U
#define SCI_FLAG_DMA_SYSDMA                      0x00000100U
#define SCI_FLAG_DMA_USER_MEM                    0x00000200U
#define SCI_FLAG_DMA_ADAPTER                     0x00000800U
#define SCI_FLAG_DMA_IO2MEM                      0x00080000U
#define SCI_FLAG_DMA_MEM2IO                      0x00400000U
#define SCI_FLAG_DMA_POST                        0x00080000U
#define SCI_FLAG_DMA_RESET                       0x00400000U
#define SCI_FLAG_DMA_CHANNEL_SHARED              0x00000001U
/* SCIRegisterSegmentMemory */
#define SCI_FLAG_LOCK_USER_MEM                   0x00000400U
#define SCI_FLAG_CONTIG_USER_MEM                 0x00008000U
#define SCI_FLAG_READONLY_USER_MEM               0x00010000U
/* SCIAttachPhysicalMemory */
#define SCI_FLAG_PHYSICAL                        0x00001000U
#define SCI_FLAG_CUDA_BUFFER                     0x00002000U
#define SCI_FLAG_SCIF_BUFFER                     0x00004000U
/* interrupts */
#define SCI_FLAG_FIXED_INTNO                     0x00000002U
#define SCI_FLAG_SHARED_INT                      0x00000004U
#define SCI_FLAG_CONDITIONAL_INTERRUPT           0x00000008U
#define SCI_FLAG_COUNTING_INT                    0x00000020U
#define SCI_FLAG_SHARE_EXTERNAL                  0x00000040U
/* SCIOpen (SISCI 1.10) */
#define SCI_FLAG_THREAD_SAFE                     0x00800000U
/* SCIRegisterPCIeRequester */
#define SCI_FLAG_PCIE_REQUESTER_GLOBAL           0x00000001U
/* SCICacheSync */
#define SCI_FLAG_CACHE_FLUSH                     0x00100000U
#define SCI_FLAG_CACHE_INVALIDATE                0x00200000U
/* SmartIO */
#define SCI_FLAG_EXCLUSIVE                       0x01000000U
#define SCI_FLAG_DEVICE_SIDE_ONLY                0x02001000U
#define SCI_FLAG_LOCAL_ONLY                      0x02002000U
#define SCI_FLAG_DEVICE_PREFER_BANDWIDTH         0x04000001U
#define SCI_FLAG_HOST_PREFER_BANDWIDTH           0x04000002U
#define SCI_FLAG_SPECIFY_PATH                    0x10000000U
#define SCI_FLAG_SPECIFY_SLOT                    0x20000000U

#define SCI_MEMTYPE_BAR                          0x00000001U
#define SCI_MEMTYPE_PRIVATE                      0x00000002U
#define SCI_MEMTYPE_SHARED                       0x00000004U
#define SCI_MEMACCESS_DEVICE_READ                0x00000001U
#define SCI_MEMACCESS_DEVICE_WRITE               0x00000002U
#define SCI_MEMACCESS_HOST_READ                  0x00000004U
#define SCI_MEMACCESS_HOST_WRITE                 0x00000008U
#define SCI_MEMACCESS_MULTIHOST_READ             0x00000014U
#define SCI_MEMACCESS_MULTIHOST_WRITE            0x00000018U
#define SCI_MEMACCESS_P2P_READ                   0x00000021U
#define SCI_MEMACCESS_P2P_WRITE                  0x00000022U

/* ---- other constants ---------------------------------------------------- */
#define SCI_INFINITE_TIMEOUT                     0xFFFFFFFFU
/* A node id meaning "this node" (SCIConnectSegment, SCIConnectInterrupt, ...). */
#define SCI_LOCAL_HOST                           0xFFFFFFFEU
#define DIS_BROADCAST_NODEID_GROUP_ALL           252U
#define SCI_DMA_CHANNEL_ID_DONTCARE              0xFFFFFFFFU

/* ---- SCIQuery: major commands, then sub-commands by family --------------- */
#define SCI_Q_VENDORID                           1U
#define SCI_Q_API                                2U
#define SCI_Q_SISCI_DRIVER_VERSION               3U
#define SCI_Q_ADAPTER                            4U
#define SCI_Q_SYSTEM                             5U
#define SCI_Q_DMA                                6U
#define SCI_Q_DEVICE                             7U
#define SCI_Q_LOCAL_SEGMENT                      8U
#define SCI_Q_REMOTE_SEGMENT                     9U
#define SCI_Q_MAP                                10U

#define SCI_Q_ADAPTER_DMA_SIZE_ALIGNMENT         0x101U
#define SCI_Q_ADAPTER_DMA_OFFSET_ALIGNMENT       0x102U
#define SCI_Q_ADAPTER_DMA_MTU                    0x103U
#define SCI_Q_ADAPTER_SUGGESTED_MIN_DMA_SIZE     0x104U
#define SCI_Q_ADAPTER_SUGGESTED_MIN_BLOCK_SIZE   0x105U
#define SCI_Q_ADAPTER_NODEID                     0x106U
#define SCI_Q_ADAPTER_SERIAL_NUMBER              0x107U
#define SCI_Q_ADAPTER_CARD_TYPE                  0x108U
#define SCI_Q_ADAPTER_NUMBER_OF_STREAMS          0x109U
#define SCI_Q_ADAPTER_STREAM_BUFFER_SIZE         0x10AU
#define SCI_Q_ADAPTER_CONFIGURED                 0x10BU
#define SCI_Q_ADAPTER_NUMBER                     0x10CU
#define SCI_Q_ADAPTER_INSTANCE_NUMBER            0x10DU
#define SCI_Q_ADAPTER_FIRMWARE_OK                0x10EU
#define SCI_Q_ADAPTER_CONNECTED_TO_SWITCH        0x10FU
#define SCI_Q_ADAPTER_LOCAL_SWITCH_TYPE          0x110U
#define SCI_Q_ADAPTER_LOCAL_SWITCH_PORT_NUMBER   0x111U
#define SCI_Q_ADAPTER_CONNECTED_TO_EXPECTED_SWITCH_PORT 0x112U
#define SCI_Q_ADAPTER_ATT_PAGE_SIZE              0x113U
#define SCI_Q_ADAPTER_ATT_NUMBER_OF_ENTRIES      0x114U
#define SCI_Q_ADAPTER_ATT_AVAILABLE_ENTRIES      0x115U
#define SCI_Q_ADAPTER_PHYS_MEM_NODEID            0x116U
#define SCI_Q_ADAPTER_PHYS_MBX_NODEID            0x117U
#define SCI_Q_ADAPTER_MODE                       0x118U
#define SCI_Q_ADAPTER_IO_BUS_FREQUENCY           0x119U
#define SCI_Q_ADAPTER_DATAINT_MAX_LENGTH         0x11AU
#define SCI_Q_ADAPTER_MCAST_MAX_GROUPS           0x11BU
#define SCI_Q_ADAPTER_BDF                        0x11CU
#define SCI_Q_ADAPTER_LINK_OPERATIONAL           0x11DU
#define SCI_Q_ADAPTER_LINK_WIDTH                 0x11EU
#define SCI_Q_ADAPTER_LINK_SPEED                 0x11FU
#define SCI_Q_ADAPTER_LINK_UPTIME                0x120U
#define SCI_Q_ADAPTER_LINK_DOWNTIME              0x121U
#define SCI_Q_ADAPTER_LINK_CABLE_INSERTED        0x122U
#define SCI_Q_ADAPTER_LINK_ENABLED               0x123U
#define SCI_Q_ADAPTER_LINK_PARTNER_PORT_NO       0x124U
#define SCI_Q_ADAPTER_NUMBER_OF_LINKS            0x125U
#define SCI_Q_ADAPTER_HW_LINK_STATUS_IS_OK       0x126U
#define SCI_Q_ADAPTER_PHYS_LINK_PORT_NODEID      0x127U
#define SCI_Q_ADAPTER_SCI_LINK_FREQUENCY         0x128U
#define SCI_Q_ADAPTER_B_LINK_FREQUENCY           0x129U

#define SCI_Q_SYSTEM_CPU_CACHE_LINE_SIZE         0x201U
#define SCI_Q_SYSTEM_HOSTBRIDGE                  0x202U
#define SCI_Q_SYSTEM_WRITE_POSTING_ENABLED       0x203U
#define SCI_Q_SYSTEM_WRITE_COMBINING_ENABLED     0x204U

#define SCI_Q_LOCAL_SEGMENT_IOADDR               0x301U
#define SCI_Q_LOCAL_SEGMENT_VIRTUAL_KERNEL_ADDR  0x302U
#define SCI_Q_LOCAL_SEGMENT_PHYS_ADDR            0x303U

#define SCI_Q_REMOTE_SEGMENT_IOADDR              0x401U

#define SCI_Q_MAP_MAPPED_TO_LOCAL_TARGET         0x501U
#define SCI_Q_MAP_QUERY_REMOTE_MAPPED_TO_LOCAL_TARGET 0x502U
#define SCI_Q_MAP_PHYS_ADDR                      0x503U
#define SCI_Q_MAP_IOADDR                         0x504U

#define SCI_Q_DMA_AVAILABLE                      0x601U
#define SCI_Q_DMA_CAPABILITIES                   0x602U

#define SCI_Q_DEVICE_INFO                        0x701U

/* SCI_Q_SYSTEM_HOSTBRIDGE answers. */
#define HOSTBRIDGE_NOT_AVAILABLE                 0U
#define HOSTBRIDGE_UNKNOWN                       1U
#define HOSTBRIDGE_440FX                         2U
#define HOSTBRIDGE_440LX                         3U
#define HOSTBRIDGE_440BX_A                       4U
#define HOSTBRIDGE_440BX_B                       5U
#define HOSTBRIDGE_440GX                         6U
#define HOSTBRIDGE_450KX                         7U
#define HOSTBRIDGE_430NX                         8U
#define HOSTBRIDGE_450NX                         9U
#define HOSTBRIDGE_450NX_MICO                    10U
#define HOSTBRIDGE_450NX_PXB                     11U
#define HOSTBRIDGE_I810                          12U
#define HOSTBRIDGE_I810_DC100                    13U
#define HOSTBRIDGE_I810E                         14U
#define HOSTBRIDGE_I815                          15U
#define HOSTBRIDGE_I840                          16U
#define HOSTBRIDGE_I850                          17U
#define HOSTBRIDGE_I860                          18U
#define HOSTBRIDGE_VIA_KT133                     19U
#define HOSTBRIDGE_VIA_KX133                     20U
#define HOSTBRIDGE_VIA_APOLLO_PRO_133A           21U
#define HOSTBRIDGE_VIA_APOLLO_PRO_266            22U
#define HOSTBRIDGE_AMD_760_MP                    23U
#define HOSTBRIDGE_SERVERWORKS_HE                24U
#define HOSTBRIDGE_SERVERWORKS_HE_B              25U
#define HOSTBRIDGE_SERVERWORKS_LE                26U
#define HOSTBRIDGE_WRITE_POSTING_DISABLED        0x100U
#define HOSTBRIDGE_WRITE_POSTING_ENABLED         0x101U

/* ---- functions ----------------------------------------------------------- */
#define SCIInitialize                 _SISCI_EXPANDE_FUNCTION_NAME(SCIInitialize)
#define SCITerminate                  _SISCI_EXPANDE_FUNCTION_NAME(SCITerminate)
#define SCIOpen                       _SISCI_EXPANDE_FUNCTION_NAME(SCIOpen)
#define SCIClose                      _SISCI_EXPANDE_FUNCTION_NAME(SCIClose)
#define SCIConnectSegment             _SISCI_EXPANDE_FUNCTION_NAME(SCIConnectSegment)
#define SCIDisconnectSegment          _SISCI_EXPANDE_FUNCTION_NAME(SCIDisconnectSegment)
#define SCIGetRemoteSegmentSize       _SISCI_EXPANDE_FUNCTION_NAME(SCIGetRemoteSegmentSize)
#define SCIGetRemoteSegmentId         _SISCI_EXPANDE_FUNCTION_NAME(SCIGetRemoteSegmentId)
#define SCIGetRemoteSegmentNodeId     _SISCI_EXPANDE_FUNCTION_NAME(SCIGetRemoteSegmentNodeId)
#define SCIGetMapPointer              _SISCI_EXPANDE_FUNCTION_NAME(SCIGetMapPointer)
#define SCIGetMapPhysAddr             _SISCI_EXPANDE_FUNCTION_NAME(SCIGetMapPhysAddr)
#define SCIWaitForRemoteSegmentEvent  _SISCI_EXPANDE_FUNCTION_NAME(SCIWaitForRemoteSegmentEvent)
#define SCIMapRemoteSegment           _SISCI_EXPANDE_FUNCTION_NAME(SCIMapRemoteSegment)
#define SCIMapLocalSegment            _SISCI_EXPANDE_FUNCTION_NAME(SCIMapLocalSegment)
#define SCIUnmapSegment               _SISCI_EXPANDE_FUNCTION_NAME(SCIUnmapSegment)
#define SCICreateSegment              _SISCI_EXPANDE_FUNCTION_NAME(SCICreateSegment)
#define SCIWaitForLocalSegmentEvent   _SISCI_EXPANDE_FUNCTION_NAME(SCIWaitForLocalSegmentEvent)
#define SCIPrepareSegment             _SISCI_EXPANDE_FUNCTION_NAME(SCIPrepareSegment)
#define SCIRemoveSegment              _SISCI_EXPANDE_FUNCTION_NAME(SCIRemoveSegment)
#define SCIGetLocalSegmentSize        _SISCI_EXPANDE_FUNCTION_NAME(SCIGetLocalSegmentSize)
#define SCIGetLocalSegmentId          _SISCI_EXPANDE_FUNCTION_NAME(SCIGetLocalSegmentId)
#define SCISetSegmentAvailable        _SISCI_EXPANDE_FUNCTION_NAME(SCISetSegmentAvailable)
#define SCISetSegmentUnavailable      _SISCI_EXPANDE_FUNCTION_NAME(SCISetSegmentUnavailable)
#define SCICreateMapSequence          _SISCI_EXPANDE_FUNCTION_NAME(SCICreateMapSequence)
#define SCIRemoveSequence             _SISCI_EXPANDE_FUNCTION_NAME(SCIRemoveSequence)
#define SCIStartSequence              _SISCI_EXPANDE_FUNCTION_NAME(SCIStartSequence)
#define SCICheckSequence              _SISCI_EXPANDE_FUNCTION_NAME(SCICheckSequence)
#define SCIStoreBarrier               _SISCI_EXPANDE_FUNCTION_NAME(SCIStoreBarrier)
#define SCIFlushReadBuffers           _SISCI_EXPANDE_FUNCTION_NAME(SCIFlushReadBuffers)
#define SCIProbeNode                  _SISCI_EXPANDE_FUNCTION_NAME(SCIProbeNode)
#define SCIGetCSRRegister             _SISCI_EXPANDE_FUNCTION_NAME(SCIGetCSRRegister)
#define SCISetCSRRegister             _SISCI_EXPANDE_FUNCTION_NAME(SCISetCSRRegister)
#define SCIGetLocalCSR                _SISCI_EXPANDE_FUNCTION_NAME(SCIGetLocalCSR)
#define SCISetLocalCSR                _SISCI_EXPANDE_FUNCTION_NAME(SCISetLocalCSR)
#define SCIAttachPhysicalMemory       _SISCI_EXPANDE_FUNCTION_NAME(SCIAttachPhysicalMemory)
#define SCIQuery                      _SISCI_EXPANDE_FUNCTION_NAME(SCIQuery)
#define SCIGetLocalNodeId             _SISCI_EXPANDE_FUNCTION_NAME(SCIGetLocalNodeId)
#define SCIGetNodeIdByAdapterName     _SISCI_EXPANDE_FUNCTION_NAME(SCIGetNodeIdByAdapterName)
#define SCIGetNodeInfoByAdapterName   _SISCI_EXPANDE_FUNCTION_NAME(SCIGetNodeInfoByAdapterName)
#define SCIGetErrorString             _SISCI_EXPANDE_FUNCTION_NAME(SCIGetErrorString)
#define SCIGetAdapterTypeString       _SISCI_EXPANDE_FUNCTION_NAME(SCIGetAdapterTypeString)
#define SCIGetAdapterFamilyString     _SISCI_EXPANDE_FUNCTION_NAME(SCIGetAdapterFamilyString)
#define SCICreateDMAQueue             _SISCI_EXPANDE_FUNCTION_NAME(SCICreateDMAQueue)
#define SCIRemoveDMAQueue             _SISCI_EXPANDE_FUNCTION_NAME(SCIRemoveDMAQueue)
#define SCIEnqueueDMATransfer         _SISCI_EXPANDE_FUNCTION_NAME(SCIEnqueueDMATransfer)
#define SCIPostDMAQueue               _SISCI_EXPANDE_FUNCTION_NAME(SCIPostDMAQueue)
#define SCIAbortDMAQueue              _SISCI_EXPANDE_FUNCTION_NAME(SCIAbortDMAQueue)
#define SCIResetDMAQueue              _SISCI_EXPANDE_FUNCTION_NAME(SCIResetDMAQueue)
#define SCIDMAQueueState              _SISCI_EXPANDE_FUNCTION_NAME(SCIDMAQueueState)
#define SCIWaitForDMAQueue            _SISCI_EXPANDE_FUNCTION_NAME(SCIWaitForDMAQueue)
#define SCIphDmaEnqueue               _SISCI_EXPANDE_FUNCTION_NAME(SCIphDmaEnqueue)
#define SCIphDmaStart                 _SISCI_EXPANDE_FUNCTION_NAME(SCIphDmaStart)
#define SCICreateInterrupt            _SISCI_EXPANDE_FUNCTION_NAME(SCICreateInterrupt)
#define SCIRemoveInterrupt            _SISCI_EXPANDE_FUNCTION_NAME(SCIRemoveInterrupt)
#define SCIWaitForInterrupt           _SISCI_EXPANDE_FUNCTION_NAME(SCIWaitForInterrupt)
#define SCIConnectInterrupt           _SISCI_EXPANDE_FUNCTION_NAME(SCIConnectInterrupt)
#define SCIDisconnectInterrupt        _SISCI_EXPANDE_FUNCTION_NAME(SCIDisconnectInterrupt)
#define SCITriggerInterrupt           _SISCI_EXPANDE_FUNCTION_NAME(SCITriggerInterrupt)
#define SCIGetLocalInterruptNo        _SISCI_EXPANDE_FUNCTION_NAME(SCIGetLocalInterruptNo)
#define SCIRegisterInterruptFlag      _SISCI_EXPANDE_FUNCTION_NAME(SCIRegisterInterruptFlag)
#define SCIEnableConditionalInterrupt _SISCI_EXPANDE_FUNCTION_NAME(SCIEnableConditionalInterrupt)
#define SCIDisableConditionalInterrupt _SISCI_EXPANDE_FUNCTION_NAME(SCIDisableConditionalInterrupt)
#define SCIGetConditionalInterruptTrigCounter _SISCI_EXPANDE_FUNCTION_NAME(SCIGetConditionalInterruptTrigCounter)
#define SCICreateDataInterrupt        _SISCI_EXPANDE_FUNCTION_NAME(SCICreateDataInterrupt)
#define SCIRemoveDataInterrupt        _SISCI_EXPANDE_FUNCTION_NAME(SCIRemoveDataInterrupt)
#define SCIWaitForDataInterrupt       _SISCI_EXPANDE_FUNCTION_NAME(SCIWaitForDataInterrupt)
#define SCIConnectDataInterrupt       _SISCI_EXPANDE_FUNCTION_NAME(SCIConnectDataInterrupt)
#define SCIDisconnectDataInterrupt    _SISCI_EXPANDE_FUNCTION_NAME(SCIDisconnectDataInterrupt)
#define SCITriggerDataInterrupt       _SISCI_EXPANDE_FUNCTION_NAME(SCITriggerDataInterrupt)
#define SCITransferBlock              _SISCI_EXPANDE_FUNCTION_NAME(SCITransferBlock)
#define SCITransferBlockAsync         _SISCI_EXPANDE_FUNCTION_NAME(SCITransferBlockAsync)
#define SCIWaitForBlockTransfer       _SISCI_EXPANDE_FUNCTION_NAME(SCIWaitForBlockTransfer)
#define SCIAbortBlockTransfer         _SISCI_EXPANDE_FUNCTION_NAME(SCIAbortBlockTransfer)
#define SCIMemWrite                   _SISCI_EXPANDE_FUNCTION_NAME(SCIMemWrite)
#define SCIMemCpy                     _SISCI_EXPANDE_FUNCTION_NAME(SCIMemCpy)
#define SCIMemCpy_dual                _SISCI_EXPANDE_FUNCTION_NAME(SCIMemCpy_dual)
#define SCIMemCopy                    _SISCI_EXPANDE_FUNCTION_NAME(SCIMemCopy)
#define SCIRegisterSegmentMemory      _SISCI_EXPANDE_FUNCTION_NAME(SCIRegisterSegmentMemory)
#define SCIConnectSCISpace            _SISCI_EXPANDE_FUNCTION_NAME(SCIConnectSCISpace)
#define SCIAttachLocalSegment         _SISCI_EXPANDE_FUNCTION_NAME(SCIAttachLocalSegment)
#define SCIShareSegment               _SISCI_EXPANDE_FUNCTION_NAME(SCIShareSegment)
#define SCIFlush                      _SISCI_EXPANDE_FUNCTION_NAME(SCIFlush)
#define SCIStartDmaTransfer           _SISCI_EXPANDE_FUNCTION_NAME(SCIStartDmaTransfer)
#define SCIStartDmaTransferMem        _SISCI_EXPANDE_FUNCTION_NAME(SCIStartDmaTransferMem)
#define SCIStartDmaTransferVec        _SISCI_EXPANDE_FUNCTION_NAME(SCIStartDmaTransferVec)
#define DISStartDmaTransfer           _SISCI_EXPANDE_FUNCTION_NAME(DISStartDmaTransfer)
#define DISStartDmaTransferVec        _SISCI_EXPANDE_FUNCTION_NAME(DISStartDmaTransferVec)
#define SCIRequestDMAChannel          _SISCI_EXPANDE_FUNCTION_NAME(SCIRequestDMAChannel)
#define SCIReturnDMAChannel           _SISCI_EXPANDE_FUNCTION_NAME(SCIReturnDMAChannel)
#define SCIAssignDMAChannel           _SISCI_EXPANDE_FUNCTION_NAME(SCIAssignDMAChannel)
#define SCIGetDMAChannelType          _SISCI_EXPANDE_FUNCTION_NAME(SCIGetDMAChannelType)
#define SCIPrepareLocalSegmentForDMA  _SISCI_EXPANDE_FUNCTION_NAME(SCIPrepareLocalSegmentForDMA)
#define SCIUnprepareLocalSegmentForDMA _SISCI_EXPANDE_FUNCTION_NAME(SCIUnprepareLocalSegmentForDMA)
#define SCIPrepareRemoteSegmentForDMA _SISCI_EXPANDE_FUNCTION_NAME(SCIPrepareRemoteSegmentForDMA)
#define SCIUnprepareRemoteSegmentForDMA _SISCI_EXPANDE_FUNCTION_NAME(SCIUnprepareRemoteSegmentForDMA)
#define GetSciMemCopyFunction         _SISCI_EXPANDE_FUNCTION_NAME(GetSciMemCopyFunction)
#define SetSciMemCopyFunction         _SISCI_EXPANDE_FUNCTION_NAME(SetSciMemCopyFunction)
#define SCICacheSync                  _SISCI_EXPANDE_FUNCTION_NAME(SCICacheSync)
#define SCIRegisterPCIeRequester      _SISCI_EXPANDE_FUNCTION_NAME(SCIRegisterPCIeRequester)
#define SCIUnregisterPCIeRequester    _SISCI_EXPANDE_FUNCTION_NAME(SCIUnregisterPCIeRequester)
#define SCIBorrowDevice               _SISCI_EXPANDE_FUNCTION_NAME(SCIBorrowDevice)
#define SCIReturnDevice               _SISCI_EXPANDE_FUNCTION_NAME(SCIReturnDevice)
#define SCIReleaseExclusiveBorrow     _SISCI_EXPANDE_FUNCTION_NAME(SCIReleaseExclusiveBorrow)
#define SCIConnectDeviceSegment       _SISCI_EXPANDE_FUNCTION_NAME(SCIConnectDeviceSegment)
#define SCIConnectDeviceSegmentPath   _SISCI_EXPANDE_FUNCTION_NAME(SCIConnectDeviceSegmentPath)
#define SCICreateDeviceSegment        _SISCI_EXPANDE_FUNCTION_NAME(SCICreateDeviceSegment)
#define SCIMapLocalSegmentForDevice   _SISCI_EXPANDE_FUNCTION_NAME(SCIMapLocalSegmentForDevice)
#define SCIUnmapLocalSegmentForDevice _SISCI_EXPANDE_FUNCTION_NAME(SCIUnmapLocalSegmentForDevice)
#define SCIMapRemoteSegmentForDevice  _SISCI_EXPANDE_FUNCTION_NAME(SCIMapRemoteSegmentForDevice)
#define SCIUnmapRemoteSegmentForDevice _SISCI_EXPANDE_FUNCTION_NAME(SCIUnmapRemoteSegmentForDevice)
#define SCIGetDeviceList              _SISCI_EXPANDE_FUNCTION_NAME(SCIGetDeviceList)
#define SCIGetFabricDeviceId          _SISCI_EXPANDE_FUNCTION_NAME(SCIGetFabricDeviceId)
#define SCIAttachDeviceInterrupt      _SISCI_EXPANDE_FUNCTION_NAME(SCIAttachDeviceInterrupt)
#define SCIDetachDeviceInterrupt      _SISCI_EXPANDE_FUNCTION_NAME(SCIDetachDeviceInterrupt)

/* Library and virtual devices. */
SISCI_API_EXPORT void SCIInitialize(unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCITerminate(void);
SISCI_API_EXPORT void SCIOpen(sci_desc_t *sd, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIClose(sci_desc_t sd, unsigned int flags, sci_error_t *error);

/* Remote segments and maps. */
SISCI_API_EXPORT void SCIConnectSegment(sci_desc_t sd, sci_remote_segment_t *segment, unsigned int nodeId,
        unsigned int segmentId, unsigned int localAdapterNo, sci_cb_remote_segment_t callback, void *callbackArg,
        unsigned int timeout, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIDisconnectSegment(sci_remote_segment_t segment, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT size_t SCIGetRemoteSegmentSize(sci_remote_segment_t segment);
SISCI_API_EXPORT unsigned int SCIGetRemoteSegmentId(sci_remote_segment_t segment);
SISCI_API_EXPORT unsigned int SCIGetRemoteSegmentNodeId(sci_remote_segment_t segment);
SISCI_API_EXPORT volatile void *SCIGetMapPointer(sci_map_t map);
SISCI_API_EXPORT sci_ioaddr_t SCIGetMapPhysAddr(sci_map_t map);
SISCI_API_EXPORT sci_segment_cb_reason_t SCIWaitForRemoteSegmentEvent(sci_remote_segment_t segment,
        sci_error_t *status, unsigned int timeout, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT volatile void *SCIMapRemoteSegment(sci_remote_segment_t segment, sci_map_t *map, size_t offset,
        size_t size, void *addr, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void *SCIMapLocalSegment(sci_local_segment_t segment, sci_map_t *map, size_t offset, size_t size,
        void *addr, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIUnmapSegment(sci_map_t map, unsigned int flags, sci_error_t *error);

/* Local segments. */
SISCI_API_EXPORT void SCICreateSegment(sci_desc_t sd, sci_local_segment_t *segment, unsigned int segmentId,
        size_t size, sci_cb_local_segment_t callback, void *callbackArg, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT sci_segment_cb_reason_t SCIWaitForLocalSegmentEvent(sci_local_segment_t segment,
        unsigned int *sourcenodeId, unsigned int *localAdapterNo, unsigned int timeout, unsigned int flags,
        sci_error_t *error);
SISCI_API_EXPORT void SCIPrepareSegment(sci_local_segment_t segment, unsigned int localAdapterNo,
        unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIRemoveSegment(sci_local_segment_t segment, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT size_t SCIGetLocalSegmentSize(sci_local_segment_t segment);
SISCI_API_EXPORT unsigned int SCIGetLocalSegmentId(sci_local_segment_t segment);
SISCI_API_EXPORT void SCISetSegmentAvailable(sci_local_segment_t segment, unsigned int localAdapterNo,
        unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCISetSegmentUnavailable(sci_local_segment_t segment, unsigned int localAdapterNo,
        unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIRegisterSegmentMemory(void *address, size_t size, sci_local_segment_t segment,
        unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIAttachPhysicalMemory(sci_ioaddr_t ioaddress, void *address, unsigned int busNo,
        size_t size, sci_local_segment_t segment, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIAttachLocalSegment(sci_desc_t sd, sci_local_segment_t *segment, unsigned int segmentId,
        size_t *size, sci_cb_local_segment_t callback, void *callbackArg, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIShareSegment(sci_local_segment_t segment, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIConnectSCISpace(sci_desc_t sd, unsigned int localAdapterNo, sci_remote_segment_t *segment,
        sci_address_t address, size_t size, unsigned int flags, sci_error_t *error);

/* Sequences, barriers, PIO block copies. */
SISCI_API_EXPORT void SCICreateMapSequence(sci_map_t map, sci_sequence_t *sequence, unsigned int flags,
        sci_error_t *error);
SISCI_API_EXPORT void SCIRemoveSequence(sci_sequence_t sequence, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT sci_sequence_status_t SCIStartSequence(sci_sequence_t sequence, unsigned int flags,
        sci_error_t *error);
SISCI_API_EXPORT sci_sequence_status_t SCICheckSequence(sci_sequence_t sequence, unsigned int flags,
        sci_error_t *error);
SISCI_API_EXPORT void SCIStoreBarrier(sci_sequence_t sequence, unsigned int flags);
SISCI_API_EXPORT void SCIFlush(sci_sequence_t sequence, unsigned int flags);
SISCI_API_EXPORT void SCIMemWrite(void *memAddr, volatile void *remoteAddr, size_t size, unsigned int flags,
        sci_error_t *error);
SISCI_API_EXPORT void SCIMemCpy(sci_sequence_t sequence, void *memAddr, sci_map_t remoteMap, size_t remoteOffset,
        size_t size, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIMemCpy_dual(sci_sequence_t sequence1, sci_sequence_t sequence2, void *memAddr,
        sci_map_t remoteMap1, sci_map_t remoteMap2, size_t remoteOffset, size_t size, unsigned int flags,
        sci_error_t *error);
SISCI_API_EXPORT void SCICacheSync(sci_map_t map, void *addr, size_t length, unsigned int flags,
        sci_error_t *error);
SISCI_API_EXPORT int GetSciMemCopyFunction(unsigned int *functionNo, char *functionStr);
SISCI_API_EXPORT int SetSciMemCopyFunction(unsigned int functionNo);

/* Nodes, adapters, queries, strings. */
SISCI_API_EXPORT int SCIProbeNode(sci_desc_t sd, unsigned int localAdapterNo, unsigned int nodeId,
        unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIQuery(unsigned int command, void *data, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIGetLocalNodeId(unsigned int adapterNo, unsigned int *nodeId, unsigned int flags,
        sci_error_t *error);
SISCI_API_EXPORT void SCIGetNodeIdByAdapterName(char *adaptername, dis_nodeId_list_t *nodeId,
        dis_virt_adapter_t *type, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIGetNodeInfoByAdapterName(char *adaptername, unsigned int *adapterNo,
        dis_nodeId_list_t *nodeIdlist, dis_virt_adapter_t *type, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT const char *SCIGetErrorString(sci_error_t error);
SISCI_API_EXPORT const char *SCIGetAdapterTypeString(unsigned int adapterType);
SISCI_API_EXPORT const char *SCIGetAdapterFamilyString(unsigned int adapterType);
SISCI_API_EXPORT unsigned int SCIGetCSRRegister(sci_desc_t sd, unsigned int localAdapterNo, unsigned int SCINodeId,
        unsigned int CSROffset, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCISetCSRRegister(sci_desc_t sd, unsigned int localAdapterNo, unsigned int SCINodeId,
        unsigned int CSROffset, unsigned int CSRValue, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT unsigned int SCIGetLocalCSR(sci_desc_t sd, unsigned int localAdapterNo, unsigned int CSROffset,
        unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCISetLocalCSR(sci_desc_t sd, unsigned int localAdapterNo, unsigned int CSROffset,
        unsigned int CSRValue, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIRegisterPCIeRequester(sci_desc_t sd, unsigned int localAdapterNo, unsigned int bus,
        unsigned int devfn, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIUnregisterPCIeRequester(sci_desc_t sd, unsigned int localAdapterNo, unsigned int bus,
        unsigned int devfn, unsigned int flags, sci_error_t *error);

/* DMA. */
SISCI_API_EXPORT void SCICreateDMAQueue(sci_desc_t sd, sci_dma_queue_t *dq, unsigned int localAdapterNo,
        unsigned int maxEntries, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIRemoveDMAQueue(sci_dma_queue_t dq, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIAbortDMAQueue(sci_dma_queue_t dq, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT sci_dma_queue_state_t SCIDMAQueueState(sci_dma_queue_t dq);
SISCI_API_EXPORT sci_dma_queue_state_t SCIWaitForDMAQueue(sci_dma_queue_t dq, unsigned int timeout,
        unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIStartDmaTransfer(sci_dma_queue_t dq, sci_local_segment_t localSegment,
        sci_remote_segment_t remoteSegment, size_t localOffset, size_t size, size_t remoteOffset,
        sci_cb_dma_t callback, void *callbackArg, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIStartDmaTransferMem(sci_dma_queue_t dq, void *localAddress,
        sci_remote_segment_t remoteSegment, size_t size, size_t remoteOffset, sci_cb_dma_t callback,
        void *callbackArg, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIStartDmaTransferVec(sci_dma_queue_t dq, sci_local_segment_t localSegment,
        sci_remote_segment_t remoteSegment, size_t vecLength, dis_dma_vec_t *disDmaVec, sci_cb_dma_t callback,
        void *callbackArg, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void DISStartDmaTransfer(sci_dma_queue_t dq, sci_local_segment_t localSegment,
        sci_remote_segment_t remoteSegment, size_t localOffset, size_t size, size_t remoteOffset,
        sci_cb_dma_t callback, void *callbackArg, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void DISStartDmaTransferVec(sci_dma_queue_t dq, sci_local_segment_t localSegment,
        sci_remote_segment_t remoteSegment, size_t vecLength, dis_dma_vec_t *disDmaVec, sci_cb_dma_t callback,
        void *callbackArg, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIRequestDMAChannel(sci_desc_t sd, sci_dma_channel_t *channel, unsigned int localAdapterNo,
        sci_dma_type_t type, unsigned int channelId, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIReturnDMAChannel(sci_dma_channel_t channel, sci_error_t *error);
SISCI_API_EXPORT void SCIAssignDMAChannel(sci_dma_channel_t channel, sci_dma_queue_t dq, unsigned int flags,
        sci_error_t *error);
SISCI_API_EXPORT sci_dma_type_t SCIGetDMAChannelType(sci_dma_channel_t channel);
SISCI_API_EXPORT void SCIPrepareLocalSegmentForDMA(sci_dma_channel_t channel, sci_local_segment_t local_segment,
        unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIUnprepareLocalSegmentForDMA(sci_dma_channel_t channel, sci_local_segment_t local_segment,
        unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIPrepareRemoteSegmentForDMA(sci_dma_channel_t channel, sci_remote_segment_t remote_segment,
        unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIUnprepareRemoteSegmentForDMA(sci_dma_channel_t channel,
        sci_remote_segment_t remote_segment, unsigned int flags, sci_error_t *error);

/* Interrupts. */
SISCI_API_EXPORT void SCICreateInterrupt(sci_desc_t sd, sci_local_interrupt_t *interrupt,
        unsigned int localAdapterNo, unsigned int *interruptNo, sci_cb_interrupt_t callback, void *callbackArg,
        unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIRemoveInterrupt(sci_local_interrupt_t interrupt, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIWaitForInterrupt(sci_local_interrupt_t interrupt, unsigned int timeout,
        unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIConnectInterrupt(sci_desc_t sd, sci_remote_interrupt_t *interrupt, unsigned int nodeId,
        unsigned int localAdapterNo, unsigned int interruptNo, unsigned int timeout, unsigned int flags,
        sci_error_t *error);
SISCI_API_EXPORT void SCIDisconnectInterrupt(sci_remote_interrupt_t interrupt, unsigned int flags,
        sci_error_t *error);
SISCI_API_EXPORT void SCITriggerInterrupt(sci_remote_interrupt_t interrupt, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT unsigned int SCIGetLocalInterruptNo(sci_local_interrupt_t interrupt);
SISCI_API_EXPORT void SCICreateDataInterrupt(sci_desc_t sd, sci_local_data_interrupt_t *interrupt,
        unsigned int localAdapterNo, unsigned int *interruptNo, sci_cb_data_interrupt_t callback, void *callbackArg,
        unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIRemoveDataInterrupt(sci_local_data_interrupt_t interrupt, unsigned int flags,
        sci_error_t *error);
SISCI_API_EXPORT void SCIWaitForDataInterrupt(sci_local_data_interrupt_t interrupt, void *data,
        unsigned int *length, unsigned int timeout, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIConnectDataInterrupt(sci_desc_t sd, sci_remote_data_interrupt_t *interrupt,
        unsigned int nodeId, unsigned int localAdapterNo, unsigned int interruptNo, unsigned int timeout,
        unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIDisconnectDataInterrupt(sci_remote_data_interrupt_t interrupt, unsigned int flags,
        sci_error_t *error);
SISCI_API_EXPORT void SCITriggerDataInterrupt(sci_remote_data_interrupt_t interrupt, void *data,
        unsigned int length, unsigned int flags, sci_error_t *error);

/* SmartIO (devices borrowed across the fabric). */
SISCI_API_EXPORT void SCIBorrowDevice(sci_desc_t sd, sci_smartio_device_t *device, unsigned long long fdid,
        unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIReturnDevice(sci_smartio_device_t device, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIReleaseExclusiveBorrow(sci_smartio_device_t device, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIConnectDeviceSegment(sci_smartio_device_t device, sci_remote_segment_t *segment,
        unsigned int segmentId, unsigned int segmentType, sci_cb_device_segment_t callback, void *callbackArg,
        unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIConnectDeviceSegmentPath(sci_smartio_device_t device, sci_remote_segment_t *segment,
        unsigned int nodeId, unsigned int segmentId, unsigned int segmentType, unsigned int localAdapterNo,
        sci_cb_device_segment_t callback, void *callbackArg, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCICreateDeviceSegment(sci_smartio_device_t device, unsigned int segmentId, size_t size,
        unsigned int type, unsigned int accessHints, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIMapLocalSegmentForDevice(sci_local_segment_t segment, unsigned int localAdapterNo,
        sci_smartio_device_t device, sci_ioaddr_t *remoteAddr, size_t offset, size_t size,
        sci_cb_device_mapping_t callback, void *callbackArg, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIUnmapLocalSegmentForDevice(sci_local_segment_t segment, unsigned int localAdapterNo,
        sci_smartio_device_t device, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIMapRemoteSegmentForDevice(sci_remote_segment_t segment, sci_smartio_device_t device,
        sci_ioaddr_t *remoteAddr, size_t offset, size_t size, sci_cb_device_mapping_t callback, void *callbackArg,
        unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIUnmapRemoteSegmentForDevice(sci_remote_segment_t segment, sci_smartio_device_t device,
        unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT size_t SCIGetDeviceList(sci_desc_t sd, unsigned long long *fdids, size_t length,
        const sci_smartio_device_info_t *filter, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT unsigned long long SCIGetFabricDeviceId(sci_smartio_device_t device);
SISCI_API_EXPORT void SCIAttachDeviceInterrupt(sci_smartio_device_t device, sci_local_interrupt_t interrupt,
        unsigned int deviceInterruptNo, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIDetachDeviceInterrupt(sci_smartio_device_t device, sci_local_interrupt_t interrupt,
        unsigned int deviceInterruptNo, unsigned int flags, sci_error_t *error);

/* SISCI 1.10 functions that today's API dropped, kept for old programs (1.10
 * prototypes: 32-bit sizes and offsets). */
SISCI_API_EXPORT void SCIFlushReadBuffers(sci_sequence_t sequence);
SISCI_API_EXPORT sci_dma_queue_state_t SCIEnqueueDMATransfer(sci_dma_queue_t dq, sci_local_segment_t localSegment,
        sci_remote_segment_t remoteSegment, unsigned int localOffset, unsigned int remoteOffset, unsigned int size,
        unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIPostDMAQueue(sci_dma_queue_t dq, sci_cb_dma_t callback, void *callbackArg,
        unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIResetDMAQueue(sci_dma_queue_t dq, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIphDmaEnqueue(sci_dma_queue_t dmaqueue, unsigned int size, sci_ioaddr_t localBusAddr,
        unsigned int remote_nodeid, unsigned int remote_highaddr, unsigned int remote_lowaddr, unsigned int flags,
        sci_error_t *error);
SISCI_API_EXPORT sci_dma_queue_state_t SCIphDmaStart(sci_dma_queue_t dmaqueue, sci_cb_dma_t callback,
        void *callbackArg, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIRegisterInterruptFlag(unsigned int localAdapterNo, sci_local_interrupt_t *interrupt,
        sci_local_segment_t segment, unsigned int offset, sci_cb_interrupt_t callback, void *callbackArg,
        unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIEnableConditionalInterrupt(sci_local_interrupt_t interrupt, unsigned int flags,
        sci_error_t *error);
SISCI_API_EXPORT void SCIDisableConditionalInterrupt(sci_local_interrupt_t interrupt, unsigned int flags,
        sci_error_t *error);
SISCI_API_EXPORT void SCIGetConditionalInterruptTrigCounter(sci_local_interrupt_t interrupt,
        unsigned int *interruptTrigCounter, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCITransferBlock(sci_map_t sourceMap, unsigned int sourceOffset, sci_map_t destinationMap,
        unsigned int destinationOffset, unsigned int size, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCITransferBlockAsync(sci_map_t sourceMap, unsigned int sourceOffset,
        sci_map_t destinationMap, unsigned int destinationOffset, unsigned int size, sci_block_transfer_t *block,
        sci_cb_block_transfer_t callback, void *callbackArg, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIWaitForBlockTransfer(sci_block_transfer_t block, unsigned int timeout, unsigned int flags,
        sci_error_t *error);
SISCI_API_EXPORT void SCIAbortBlockTransfer(sci_block_transfer_t block, unsigned int flags, sci_error_t *error);
SISCI_API_EXPORT void SCIMemCopy(void *memAddr, sci_map_t remoteMap, unsigned int remoteOffset, unsigned int size,
        unsigned int flags, sci_error_t *error);

#ifdef __cplusplus
}
#endif

#endif /* _SISCI_API_H */
