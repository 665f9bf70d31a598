//! Job state: the init/finalize window, attributes, the symmetric segments of every
//! PE, and remote address translation (digest 5.3 / 9.3).
//!
//! At `dmapp_init` every PE contributes one record to an allgather (rank order):
//! its status, its [`PeerRef`] and, for each symmetric segment (data segment, heap),
//! the segment's base, length and registration key.  With that table any PE can
//! translate a symmetric address: `remote = their_base + (addr - seg->addr)`.
//!
//! A descriptor is recognised by its `memhndl` alone (never by `reserved`, which is
//! process-local): if the handle is some PE's data-segment or heap handle, the
//! descriptor is symmetric and the offset is applied to the *target* PE's segment;
//! otherwise it names a non-symmetric registration of the target PE (from
//! `dmapp_mem_register`, or a uGNI handle in the shared CrayHandle encoding) and
//! the address is `handle.base + (addr - seg->addr)` with the handle's key.  So a
//! descriptor stays valid after a byte copy to another PE.

use crate::heap::Heap;
use crate::mutex::lock;
use crate::types::*;
use softnic_fabric::bootstrap;
use softnic_fabric::mem::{self, Access, CrayHandle, MemKey, RingLoc, SharedMem};
use softnic_fabric::node::{self, PeerRef};
use softnic_fabric::registry::ProcId;
use softnic_fabric::atomic::{AmoOp, AmoWidth};
use softnic_fabric::rma::{self, Peer, Pinned, PinnedRef, QuickPinned, Region};
use softnic_fabric::{env, sn_debug, sn_warn, Error};
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

pub const DATA: usize = 0;
pub const SHEAP: usize = 1;

/// Each PE's pset directory (crate::coll): `DIR_ENTRIES` entries of 8 words: [identifier
/// (0 = free), node location (5 words), 0, 0].
pub const DIR_ENTRIES: usize = 64;
pub const DIR_ENTRY: usize = 64;
pub const DIR_BYTES: usize = DIR_ENTRIES * DIR_ENTRY;

/// One symmetric segment of one PE.
#[derive(Clone, Copy, Debug, Default)]
pub struct SymSeg {
    pub base: u64,
    pub len: u64,
    pub key: u64,
}

pub struct PeInfo {
    pub peer_ref: PeerRef,
    /// The PE's node and registry id: how it is reached from another node.
    pub node: u32,
    pub id: ProcId,
    pub segs: [SymSeg; 2],
    /// The PE's pset directory (crate::coll): where its exported psets' tree nodes are.
    pub pset_dir: RingLoc,
    /// The PE's receive queue (crate::queue) and the largest put it takes, in QW.
    pub queue_loc: RingLoc,
    pub queue_nelems: u32,
    /// The PE's table of lock queue nodes (crate::lock, crate::lock_table) and its number of nodes.
    pub lock_loc: RingLoc,
    pub lock_nodes: u32,
    peer: OnceLock<Arc<Peer>>,
    lock_region: OnceLock<Region>,
    /// Its symmetric segments pinned, once first used (None: the fabric cannot pin them).
    /// Quick pins: the rows each access re-checks are resolved to their addresses once,
    /// so the quick paths' check is two loads deep instead of a walk from the peer.
    pins: [OnceLock<Option<QuickPinned>>; 2],
    /// For a segment the fabric cannot pin whole because it lies in several of the
    /// owner's backings (the fabric keeps one per aligned GiB of rebound memory: a data
    /// segment across a GiB boundary, as a program with large static arrays has), its
    /// pieces in each aligned GiB ([`PIECE`]), each pinned at its first use.  Made only
    /// when the whole pin failed; at most [`MAX_PIECES`] pieces (longer: no pieces).
    pieces: [OnceLock<Box<[OnceLock<Option<QuickPinned>>]>>; 2],
}

/// The piece of a segment pinned alone when the whole cannot be (see `PeInfo::pieces`):
/// the fabric's block backings are per aligned GiB, so such a piece lies in one.
const PIECE: u64 = 1 << 30;
/// Most pieces kept per segment (a segment spanning more is served unpinned).
const MAX_PIECES: u64 = 256;

impl PeInfo {
    /// The pin slot of segment `kind`'s piece holding `[addr, addr + extent)` (target
    /// addresses, inside the segment), when the segment has pieces (its whole pin failed:
    /// `make` makes them) and the range lies in one piece.
    #[inline(always)]
    fn piece(&self, kind: usize, addr: u64, extent: u64, make: bool) -> Option<&OnceLock<Option<QuickPinned>>> {
        let t = self.segs[kind];
        if addr / PIECE != (addr + extent.max(1) - 1) / PIECE {
            return None;
        }
        let pieces = match self.pieces[kind].get() {
            Some(p) => p,
            None if make => self.pieces[kind].get_or_init(|| {
                let n = (t.base + t.len.max(1) - 1) / PIECE - t.base / PIECE + 1;
                (0..if n <= MAX_PIECES { n } else { 0 }).map(|_| OnceLock::new()).collect()
            }),
            None => return None,
        };
        pieces.get((addr / PIECE).wrapping_sub(t.base / PIECE) as usize)
    }
}

/// Where a remote access goes (borrowed from the job: no reference count per access).
pub struct Remote<'a> {
    pub peer: &'a Arc<Peer>,
    pub key: MemKey,
    pub addr: u64,
    /// The target's symmetric segment pinned (`rma::Pinned`), when the access lies in one
    /// and the fabric can pin it: puts and AMOs then skip the per-access validation.
    pub pin: Option<&'a Pinned>,
}

impl Remote<'_> {
    /// Writes `src` at the access's address: through the pin when it serves, else (and
    /// for the exact error) through the per-access path.  Inlined into the put family: the
    /// pinned case is a few loads and one store.
    #[inline(always)]
    pub fn put(&self, src: &[u8], pd: u64) -> softnic_fabric::Result<()> {
        if let Some(pin) = self.pin {
            if self.put_pinned(pin, src).is_ok() {
                return Ok(());
            }
        }
        rma::put(self.peer, self.key, self.addr, src, pd)
    }

    #[inline(always)]
    fn put_pinned(&self, pin: &Pinned, src: &[u8]) -> softnic_fabric::Result<()> {
        let p = pin.check(self.peer.live()?)?;
        match src.len() {
            // An aligned word (a QW or DW put): one store, not a call to memmove.
            8 if self.addr % 8 == 0 => p.store_word_at(self.addr, u64::from_ne_bytes(src.try_into().unwrap_or([0; 8])), 8),
            4 if self.addr % 4 == 0 => p.store_word_at(self.addr, u32::from_ne_bytes(src.try_into().unwrap_or([0; 4])) as u64, 4),
            _ => p.put_at(self.addr, src),
        }
    }

    /// Applies `op` at the access's address (as [`Remote::put`]) and returns the old value.
    #[inline(always)]
    pub fn atomic(&self, width: AmoWidth, op: AmoOp, pd: u64) -> softnic_fabric::Result<u64> {
        if let Some(pin) = self.pin {
            if let Ok(old) = self.atomic_pinned(pin, width, op) {
                return Ok(old);
            }
        }
        rma::atomic(self.peer, self.key, self.addr, width, op, pd)
    }

    #[inline(always)]
    fn atomic_pinned(&self, pin: &Pinned, width: AmoWidth, op: AmoOp) -> softnic_fabric::Result<u64> {
        pin.check(self.peer.live()?)?.atomic_at(self.addr, width, op)
    }
}

pub struct Job {
    pub pe: u32,
    pub npes: u32,
    /// Protection-domain key of every registration and access of this job.
    pub pd: u64,
    pub pes: Vec<PeInfo>,
    /// Handle words of every PE's symmetric segments -> segment kind.
    sym: HashMap<[u64; 2], usize>,
    /// This PE's own descriptors (data, heap).
    pub local: [SegDesc; 2],
    own_keys: [Option<MemKey>; 2],
    pub heap_mem: Option<SharedMem>,
    /// This PE's pset directory (crate::coll).
    pub pset_dir: SharedMem,
    pub heap: Mutex<Heap>,
    pub attrs: Mutex<RmaAttrsExt>,
    pub sync: Mutex<crate::sync_table::Table>,
    /// First error of `_nbi` requests since the last gsync (0 = none).
    pub gsync_err: Mutex<Rc>,
    /// Handle words -> key of this PE's dmapp_mem_register regions.
    pub dynregs: Mutex<HashMap<[u64; 2], MemKey>>,
    /// This PE's receive queue (crate::queue, crate::queue_ring).
    pub queue: crate::queue_ring::Queue,
    /// This PE's lock queue nodes (crate::lock, crate::lock_table).
    pub locks: crate::lock_table::Table,
}

// SAFETY: the raw pointers in `local` are addresses only (never dereferenced here);
// everything mutable is behind a mutex.
unsafe impl Send for Job {}
unsafe impl Sync for Job {}

enum Phase {
    Before,
    Live(&'static Job),
    After,
}

static PHASE: RwLock<Phase> = RwLock::new(Phase::Before);

/// The live job for the data calls, read with one load: set with `Phase::Live` and
/// cleared with it (both under PHASE's write lock), null outside the init/finalize window.
///
/// The job is allocated once and never freed (a process runs DMAPP once: init after
/// finalize is refused), so a call that loaded the pointer may go on using the job while
/// another thread finalizes: its accesses then meet the deregistered segments and fail at
/// the fabric, as they would have after taking a reference just before finalize.  No
/// reference count is taken per call.
static LIVE: AtomicPtr<Job> = AtomicPtr::new(std::ptr::null_mut());

/// The job once made, for good (memory checkers see it reachable after finalize).
static ALLOCATED: AtomicPtr<Job> = AtomicPtr::new(std::ptr::null_mut());

/// True between a successful `dmapp_init*` and `dmapp_finalize` (`dmapp_initialized`).
pub fn initialized() -> bool {
    matches!(&*PHASE.read().unwrap_or_else(|e| e.into_inner()), Phase::Live(_))
}

/// True until the first successful `dmapp_init*`.
pub fn before_init() -> bool {
    matches!(&*PHASE.read().unwrap_or_else(|e| e.into_inner()), Phase::Before)
}

/// The live job, or INVALID_PARAM outside the init/finalize window.
#[inline]
pub fn live() -> Result<&'static Job, Rc> {
    let p = LIVE.load(Ordering::Acquire);
    if p.is_null() {
        return live_locked();
    }
    // SAFETY: LIVE only ever holds the leaked job of `init` (never freed, see LIVE).
    Ok(unsafe { &*p })
}

/// [`live`] for the quick paths: None (and no call) outside the window or while init or
/// finalize runs; the general path then decides.
#[inline(always)]
pub fn live_quick() -> Option<&'static Job> {
    // SAFETY: as in `live`.
    unsafe { LIVE.load(Ordering::Acquire).as_ref() }
}

/// [`live`] outside the window, or while init or finalize runs: waits for them (PHASE).
#[cold]
fn live_locked() -> Result<&'static Job, Rc> {
    match &*PHASE.read().unwrap_or_else(|e| e.into_inner()) {
        Phase::Live(j) => Ok(j),
        _ => Err(DMAPP_RC_INVALID_PARAM),
    }
}

/// DMAPP_ABORT_ON_ERROR: dump core instead of returning an error from init,
/// registration and the heap functions (documented 5.4).
pub fn maybe_abort(api: &str, rc: Rc) -> Rc {
    if rc != DMAPP_RC_SUCCESS && env::get_bool("DMAPP_ABORT_ON_ERROR") {
        eprintln!("softnic dmapp: {} failed with code {}; DMAPP_ABORT_ON_ERROR is set, aborting", api, rc);
        std::process::abort();
    }
    rc
}

/// `XT_SYMMETRIC_HEAP_SIZE`: bytes, with an optional K/M/G suffix (powers of 1024,
/// case-insensitive, optional trailing B).  None if it does not parse.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let s = s.strip_suffix(['b', 'B']).filter(|r| r.ends_with(|c: char| c.is_ascii_alphabetic())).unwrap_or(s);
    let (num, mul) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1u64 << 10),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        'g' | 'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mul)
}

fn heap_size() -> u64 {
    let raw = env::get_str("XT_SYMMETRIC_HEAP_SIZE");
    match parse_size(raw) {
        Some(v) => v,
        None => {
            sn_warn!("dmapp_init", "XT_SYMMETRIC_HEAP_SIZE={:?} is not a size (bytes, or with K/M/G); using 0", raw);
            0
        }
    }
}

/// The main program's writable data (`.data` + `.bss`), from its program headers:
/// the writable PT_LOAD segment(s) minus the part RELRO makes read-only after
/// relocation.  Same executable on every PE, so the layout is identical.
fn data_segment() -> Option<(usize, usize)> {
    unsafe extern "C" fn cb(info: *mut libc::dl_phdr_info, _size: libc::size_t, data: *mut c_void) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info; data is our Option.
        let (info, out) = unsafe { (&*info, &mut *(data as *mut Option<(usize, usize)>)) };
        if info.dlpi_phdr.is_null() {
            return 1;
        }
        // SAFETY: dlpi_phdr points to dlpi_phnum headers.
        let ph = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
        let base = info.dlpi_addr as usize;
        let page = 4096usize;
        let mut relro_end = 0usize;
        let (mut lo, mut hi) = (usize::MAX, 0usize);
        for p in ph {
            if p.p_type == libc::PT_GNU_RELRO {
                // glibc protects only whole pages: [.., align_down(end)).
                relro_end = (base + p.p_vaddr as usize + p.p_memsz as usize) & !(page - 1);
            }
            if p.p_type == libc::PT_LOAD && p.p_flags & libc::PF_W != 0 && p.p_memsz > 0 {
                lo = lo.min(base + p.p_vaddr as usize);
                hi = hi.max(base + p.p_vaddr as usize + p.p_memsz as usize);
            }
        }
        let start = lo.max(relro_end);
        if lo != usize::MAX && hi > start {
            *out = Some((start, hi - start));
        }
        1 // the first object is the main program; stop
    }
    let mut out: Option<(usize, usize)> = None;
    // SAFETY: callback and data as documented for dl_iterate_phdr.
    unsafe { libc::dl_iterate_phdr(Some(cb), &mut out as *mut _ as *mut c_void) };
    out
}

/// The job's protection-domain key: that of the uGNI domain (ptag, cookie) every rank
/// derives from the job's KVS name, keyed by the job secret as uGNI's is, so handles of
/// both APIs validate alike and another job's never do.
fn job_pd() -> Result<u64, Error> {
    let (ptag, cookie) = bootstrap::gni_credentials(&bootstrap::job_id()?);
    Ok(bootstrap::gni_domain_key(ptag, cookie))
}

/// u64 words per PE in the init allgather: status, PeerRef (3), then per symmetric
/// segment base, length, key and the two words of its handle, then the node id and the
/// registry id (slot | generation << 32), then the location of the PE's pset directory,
/// of its receive queue, the queue's largest put (QW), then the location of its lock
/// node table and its number of nodes.
const REC: usize = 27;

/// The descriptor of one of this PE's symmetric segments (a handle naming this process).
fn desc(base: u64, len: u64, key: Option<MemKey>) -> SegDesc {
    match key.and_then(|k| CrayHandle::mine(base, k).ok()) {
        Some(h) => {
            let w = h.to_words();
            SegDesc::new(base as *mut c_void, len as usize, GniMemHandle { qword1: w[0], qword2: w[1] })
        }
        None => SegDesc::EMPTY,
    }
}

/// The queue attributes as they take effect (dmapp.h): 0 means the default; the depth is
/// rounded up to a power of two and at most DMAPP_QUEUE_MAX_DEPTH; nelems at most
/// DMAPP_QUEUE_MAX_NELEMS; unknown flag bits are dropped.
pub fn settle_queue_attrs(a: &mut RmaAttrsExt) {
    let depth = if a.queue_depth == 0 { DMAPP_QUEUE_DEFAULT_DEPTH } else { a.queue_depth };
    a.queue_depth = depth.clamp(2, DMAPP_QUEUE_MAX_DEPTH).next_power_of_two();
    let nelems = if a.queue_nelems == 0 { DMAPP_QUEUE_DEFAULT_NELEMS } else { a.queue_nelems };
    a.queue_nelems = nelems.min(DMAPP_QUEUE_MAX_NELEMS);
    a.queue_flags &= DMAPP_QUEUE_ASYNC_PROGRESS as u32;
    a.reserved = [0; 20];
}

/// Validates requested attributes (digest 5.6).
pub fn check_attrs(a: &RmaAttrsExt, statics: bool) -> Result<(), Rc> {
    if statics && !(DMAPP_MIN_OUTSTANDING_NB..=DMAPP_MAX_OUTSTANDING_NB).contains(&a.max_outstanding_nb) {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    if statics && a.max_concurrency == 0 {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    if a.put_relaxed_ordering > DMAPP_ROUTING_ADAPTIVE || a.get_relaxed_ordering > DMAPP_ROUTING_ADAPTIVE || a.PI_ordering > DMAPP_PI_ORDERING_RELAXED {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    Ok(())
}

/// dmapp_init / dmapp_init_ext.  `req` validated by the caller.
pub fn init(req: &RmaAttrsExt) -> Result<RmaAttrsExt, Rc> {
    let mut phase = PHASE.write().unwrap_or_else(|e| e.into_inner());
    match &*phase {
        // A second init: keep the job, report what is in effect.
        Phase::Live(j) => return Ok(*lock(&j.attrs)),
        // Segments were torn down and peers have moved on; a job runs DMAPP once.
        Phase::After => return Err(DMAPP_RC_INVALID_PARAM),
        Phase::Before => {}
    }
    let (pe, npes) = match (bootstrap::rank(), bootstrap::size()) {
        (Ok(r), Ok(s)) => (r, s),
        _ => {
            sn_warn!("dmapp_init", "no job bootstrap (PMI) available");
            return Err(DMAPP_RC_RESOURCE_ERROR);
        }
    };
    let mut status = 0u64;
    let pd = job_pd().unwrap_or_else(|_| {
        status = 1;
        0
    });
    let me = node::self_ref().unwrap_or_else(|e| {
        sn_warn!("dmapp_init", "node fabric unavailable: {}", e);
        status = 1;
        PeerRef { pid: 0, ctl_fd: -1, starttime: 0, ctl_ino: 0 }
    });

    // Data segment: registered in place (its pages become shareable).
    let mut segs = [SymSeg::default(); 2];
    let mut keys: [Option<MemKey>; 2] = [None, None];
    if status == 0 {
        if let Some((a, l)) = data_segment() {
            match mem::register(a, l, Access::ReadWrite, pd) {
                Ok(k) => {
                    segs[DATA] = SymSeg { base: a as u64, len: l as u64, key: k.to_u64() };
                    keys[DATA] = Some(k);
                }
                Err(e) => {
                    sn_warn!("dmapp_init", "cannot export the data segment {:#x}+{}: {}", a, l, e);
                    status = 1;
                }
            }
        }
    }
    // Symmetric heap: library-owned shared memory (sparse, so large sizes are cheap).
    let hsize = heap_size();
    let mut heap_mem = None;
    if status == 0 && hsize > 0 {
        match mem::alloc_shared(hsize as usize).and_then(|m| {
            let k = mem::register(m.as_ptr() as usize, hsize as usize, Access::ReadWrite, pd)?;
            Ok((m, k))
        }) {
            Ok((m, k)) => {
                segs[SHEAP] = SymSeg { base: m.as_ptr() as u64, len: hsize, key: k.to_u64() };
                keys[SHEAP] = Some(k);
                heap_mem = Some(m);
            }
            Err(e) => {
                sn_warn!("dmapp_init", "cannot allocate a {}-byte symmetric heap: {}", hsize, e);
                status = 1;
            }
        }
    }

    let pset_dir = match mem::alloc_shared(DIR_BYTES) {
        Ok(m) => Some(m),
        Err(e) => {
            sn_warn!("dmapp_init", "cannot allocate the pset directory: {}", e);
            status = 1;
            None
        }
    };
    let dir_loc = pset_dir.as_ref().and_then(|m| m.ring_loc(0, DIR_BYTES).ok()).map_or([0; 3], |l| l.to_words());

    let mut attrs = *req;
    settle_queue_attrs(&mut attrs);
    let queue = match crate::queue_ring::Queue::new(attrs.queue_depth, attrs.queue_nelems, attrs.queue_flags as u64) {
        Ok(q) => Some(q),
        Err(e) => {
            sn_warn!("dmapp_init", "cannot allocate a receive queue of {} entries: {}", attrs.queue_depth, e);
            status = 1;
            None
        }
    };
    let locks = match crate::lock_table::Table::new(crate::lock_table::max_locks()) {
        Ok(t) => Some(t),
        Err(e) => {
            sn_warn!("dmapp_init", "cannot allocate the lock node table: {}", e);
            status = 1;
            None
        }
    };

    // Exchange, even after a local failure, so that no PE waits forever for us.
    let local = [desc(segs[DATA].base, segs[DATA].len, keys[DATA]), desc(segs[SHEAP].base, segs[SHEAP].len, keys[SHEAP])];
    let mut rec = [0u64; REC];
    rec[0] = status;
    rec[1..4].copy_from_slice(&me.to_words());
    for (i, s) in segs.iter().enumerate() {
        rec[4 + 5 * i] = s.base;
        rec[5 + 5 * i] = s.len;
        rec[6 + 5 * i] = s.key;
        rec[7 + 5 * i] = local[i].memhndl.qword1;
        rec[8 + 5 * i] = local[i].memhndl.qword2;
    }
    let my_node = bootstrap::rank().and_then(bootstrap::node_id).unwrap_or(0);
    let my_id = node::get().map(|n| n.proc_id()).unwrap_or(ProcId { slot: 0, gen: 0 });
    rec[14] = my_node as u64;
    rec[15] = my_id.slot as u64 | ((my_id.gen as u64) << 32);
    rec[16..19].copy_from_slice(&dir_loc);
    if let Some(q) = &queue {
        rec[19..22].copy_from_slice(&q.loc.to_words());
        rec[22] = q.nelems as u64;
    }
    if let Some(t) = &locks {
        rec[23..26].copy_from_slice(&t.loc.to_words());
        rec[26] = t.count as u64;
    }
    let bytes: Vec<u8> = rec.iter().flat_map(|w| w.to_ne_bytes()).collect();
    let all = match bootstrap::allgather(&bytes) {
        Ok(v) if v.len() == bytes.len() * npes as usize => v,
        _ => return Err(DMAPP_RC_RESOURCE_ERROR),
    };
    let words: Vec<u64> = all.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8]))).collect();
    if words.chunks_exact(REC).any(|r| r[0] != 0) {
        sn_warn!("dmapp_init", "initialisation failed on some PE");
        for k in keys.into_iter().flatten() {
            let _ = mem::deregister(k);
        }
        return Err(DMAPP_RC_RESOURCE_ERROR);
    }
    let mut pes = Vec::with_capacity(npes as usize);
    let mut sym = HashMap::new();
    for r in words.chunks_exact(REC) {
        let mut s = [SymSeg::default(); 2];
        for (i, seg) in s.iter_mut().enumerate() {
            *seg = SymSeg { base: r[4 + 5 * i], len: r[5 + 5 * i], key: r[6 + 5 * i] };
            if seg.len > 0 {
                sym.insert([r[7 + 5 * i], r[8 + 5 * i]], i);
            }
        }
        let id = ProcId { slot: r[15] as u32, gen: (r[15] >> 32) as u32 };
        let pset_dir = RingLoc::from_words([r[16], r[17], r[18]]);
        pes.push(PeInfo {
            peer_ref: PeerRef::from_words([r[1], r[2], r[3]]),
            node: r[14] as u32,
            id,
            segs: s,
            pset_dir,
            queue_loc: RingLoc::from_words([r[19], r[20], r[21]]),
            queue_nelems: r[22] as u32,
            lock_loc: RingLoc::from_words([r[23], r[24], r[25]]),
            lock_nodes: r[26] as u32,
            peer: OnceLock::new(),
            lock_region: OnceLock::new(),
            pins: [OnceLock::new(), OnceLock::new()],
            pieces: [OnceLock::new(), OnceLock::new()],
        });
    }
    let job = Job {
        pe,
        npes,
        pd,
        pes,
        sym,
        local,
        own_keys: keys,
        heap_mem,
        pset_dir: pset_dir.ok_or(DMAPP_RC_RESOURCE_ERROR)?,
        heap: Mutex::new(Heap::new(hsize as usize)),
        attrs: Mutex::new(attrs),
        sync: Mutex::new(crate::sync_table::Table::new(attrs.max_outstanding_nb)),
        gsync_err: Mutex::new(DMAPP_RC_SUCCESS),
        dynregs: Mutex::new(HashMap::new()),
        queue: queue.ok_or(DMAPP_RC_RESOURCE_ERROR)?,
        locks: locks.ok_or(DMAPP_RC_RESOURCE_ERROR)?,
    };
    sn_debug!(
        "dmapp_init",
        "pe {} of {}: data {:#x}+{}, heap {:#x}+{}",
        pe,
        npes,
        segs[DATA].base,
        segs[DATA].len,
        segs[SHEAP].base,
        segs[SHEAP].len
    );
    // Never freed (see LIVE); `ALLOCATED` keeps it reachable after finalize.
    let job: &'static Job = Box::leak(Box::new(job));
    ALLOCATED.store(job as *const Job as *mut Job, Ordering::Relaxed);
    *phase = Phase::Live(job);
    LIVE.store(job as *const Job as *mut Job, Ordering::Release);
    Ok(attrs)
}

/// dmapp_finalize: every request has completed (they complete at issue), so drain
/// means retiring the bookkeeping; then a job-wide barrier, so no PE tears down
/// memory a slower PE is still targeting; then the registrations go.  The heap stays
/// mapped (no longer reachable remotely), so results remain readable locally.
/// `keep_draining` is [`crate::queue::drain_during_finalize`], passed down by
/// `dmapp_finalize` (the queue's delivery lives above the job): it keeps this PE's queue
/// draining until the guard it returns is dropped, after the barrier.
pub fn finalize<G>(keep_draining: impl FnOnce(&'static Job) -> G) -> Rc {
    let job = {
        let mut phase = PHASE.write().unwrap_or_else(|e| e.into_inner());
        match std::mem::replace(&mut *phase, Phase::After) {
            Phase::Live(j) => {
                LIVE.store(std::ptr::null_mut(), Ordering::Release);
                j
            }
            other => {
                *phase = other;
                return DMAPP_RC_INVALID_PARAM;
            }
        }
    };
    lock(&job.sync).clear();
    // A peer may be waiting for room in our queue before it reaches its own finalize:
    // keep our queue draining while we wait for everyone (crate::queue).
    let draining = keep_draining(job);
    if let Err(e) = bootstrap::barrier() {
        sn_warn!("dmapp_finalize", "job barrier failed: {}", e);
    }
    drop(draining);
    for (_, k) in lock(&job.dynregs).drain() {
        let _ = mem::deregister(k);
    }
    for k in job.own_keys.iter().flatten() {
        let _ = mem::deregister(*k);
    }
    // job.heap_mem has no Drop: the heap stays mapped for the process's life.
    DMAPP_RC_SUCCESS
}

impl Job {
    pub fn peer(&self, pe: u32) -> Result<Arc<Peer>, Rc> {
        self.peer_ref(pe).cloned()
    }

    /// [`Job::peer`], borrowed.
    #[inline(always)]
    pub fn peer_ref(&self, pe: u32) -> Result<&Arc<Peer>, Rc> {
        match self.pes[pe as usize].peer.get() {
            Some(p) => Ok(p),
            None => self.reach(pe),
        }
    }

    /// Reaches PE `pe` at its first use.
    #[cold]
    fn reach(&self, pe: u32) -> Result<&Arc<Peer>, Rc> {
        let info = &self.pes[pe as usize];
        // Through shared memory on this node, the network engine on another.
        let p = Peer::at(info.node, info.id, 32).map_err(crate::rc::from_rma)?;
        Ok(info.peer.get_or_init(|| p))
    }

    /// PE `pe`'s lock node table (mapped on this node, through the network engine elsewhere).
    pub fn lock_region(&self, pe: u32) -> Result<&Region, Rc> {
        let info = &self.pes[pe as usize];
        if let Some(r) = info.lock_region.get() {
            return Ok(r);
        }
        let r = Region::open(&self.peer(pe)?, &info.lock_loc).map_err(crate::rc::from_rma)?;
        Ok(info.lock_region.get_or_init(|| r))
    }

    #[inline]
    pub fn check_pe(&self, pe: Pe) -> Result<u32, Rc> {
        if pe < 0 || pe as u32 >= self.npes {
            return Err(DMAPP_RC_INVALID_PARAM);
        }
        Ok(pe as u32)
    }

    /// Translates (addr, seg, pe) for an access covering `extent` bytes from `addr`.
    /// Local checks only (INVALID_PARAM): NULL descriptor, bad PE, a range outside the
    /// descriptor or outside the target's symmetric segment, a non-symmetric
    /// descriptor where `sym_only`.  The fabric validates the rest at the target.
    ///
    /// Inlined, so that the data calls keep the [`Remote`] in registers: the common case
    /// (one of our own symmetric descriptors, its target segment pinned) makes no call.
    #[inline(always)]
    pub fn resolve(&self, addr: *const c_void, seg: *const SegDesc, pe: Pe, extent: u64, sym_only: bool) -> Result<Remote<'_>, Rc> {
        if seg.is_null() {
            return Err(DMAPP_RC_INVALID_PARAM);
        }
        // SAFETY: non-null; read unaligned since the user may pack it anywhere.
        let d = unsafe { std::ptr::read_unaligned(seg) };
        let pe = self.check_pe(pe)?;
        let a = addr as u64;
        let s = d.addr as u64;
        let off = a.checked_sub(s).ok_or(DMAPP_RC_INVALID_PARAM)?;
        match off.checked_add(extent) {
            Some(end) if end <= d.len as u64 => {}
            _ => return Err(DMAPP_RC_INVALID_PARAM),
        }
        let h = [d.memhndl.qword1, d.memhndl.qword2];
        // Our own descriptors first (what programs pass, nearly always): two compares
        // instead of hashing the handle.
        let own = |l: &SegDesc| l.len > 0 && [l.memhndl.qword1, l.memhndl.qword2] == h;
        if own(&self.local[SHEAP]) {
            return self.symmetric(pe, SHEAP, off, extent);
        }
        if own(&self.local[DATA]) {
            return self.symmetric(pe, DATA, off, extent);
        }
        self.resolve_other(h, pe, off, extent, sym_only)
    }

    /// The quick paths' [`Job::resolve`] and pin check in one, with no call: for one of our
    /// own symmetric descriptors whose target segment is pinned already, the pin checked
    /// for this access (the peer alive by the verdict that needs no probe, the
    /// registration and backing still those pinned) and the target address.  The same
    /// checks as `resolve` + `Remote::put`/`atomic` make, each still per access; None in
    /// every other case (any check failing, a first use, another descriptor, a peer that
    /// needs a probe), having changed nothing: the general path then runs the call from the
    /// start and gives its exact outcome.
    #[inline(always)]
    pub fn pinned_quick(&self, addr: *const c_void, seg: *const SegDesc, pe: Pe, extent: u64) -> Option<(PinnedRef<'_>, u64)> {
        if seg.is_null() {
            return None;
        }
        // SAFETY: non-null; read unaligned since the user may pack it anywhere.
        let d = unsafe { std::ptr::read_unaligned(seg) };
        let pe = self.check_pe(pe).ok()?;
        let off = (addr as u64).checked_sub(d.addr as u64)?;
        if off.checked_add(extent)? > d.len as u64 {
            return None;
        }
        let h = [d.memhndl.qword1, d.memhndl.qword2];
        let own = |l: &SegDesc| l.len > 0 && [l.memhndl.qword1, l.memhndl.qword2] == h;
        let kind = if own(&self.local[SHEAP]) {
            SHEAP
        } else if own(&self.local[DATA]) {
            DATA
        } else {
            return None;
        };
        let info = self.pes.get(pe as usize)?;
        let t = info.segs[kind];
        if off + extent > t.len {
            return None;
        }
        // The pin holds the PE's peer (the one `peer_ref` gives: it was pinned through it).
        let p = match info.pins[kind].get()? {
            Some(whole) => whole.check_quick()?,
            None => Self::piece_quick(info, kind, t.base + off, extent)?,
        };
        Some((p, t.base + off))
    }

    /// [`Job::pinned_quick`]'s pin when its segment has pieces: that of the piece holding
    /// the access, once pinned.  Out of line: only segments in several backings come here.
    #[inline(never)]
    fn piece_quick(info: &PeInfo, kind: usize, addr: u64, extent: u64) -> Option<PinnedRef<'_>> {
        info.piece(kind, addr, extent, false)?.get()?.as_ref()?.check_quick()
    }

    /// [`Job::resolve`] into segment `kind` of PE `pe`.
    #[inline(always)]
    fn symmetric(&self, pe: u32, kind: usize, off: u64, extent: u64) -> Result<Remote<'_>, Rc> {
        let info = &self.pes[pe as usize];
        let t = info.segs[kind];
        if off + extent > t.len {
            return Err(DMAPP_RC_INVALID_PARAM);
        }
        let peer = self.peer_ref(pe)?;
        let key = MemKey::from_u64(t.key);
        let pin = match info.pins[kind].get() {
            Some(Some(p)) => Some(p.pinned()),
            Some(None) => self.piece_pin(pe, kind, peer, key, t.base + off, extent),
            None => self.pin(pe, kind, peer, key, t.base + off, extent),
        };
        Ok(Remote { peer, key, addr: t.base + off, pin })
    }

    /// Pins segment `kind` of PE `pe` at its first use; if the fabric cannot pin it whole,
    /// the piece that `[addr, addr + extent)` lies in.
    #[cold]
    fn pin(&self, pe: u32, kind: usize, peer: &Arc<Peer>, key: MemKey, addr: u64, extent: u64) -> Option<&Pinned> {
        match self.pes[pe as usize].pins[kind].get_or_init(|| Pinned::registration(peer, key, true, self.pd).ok().map(QuickPinned::new)) {
            Some(p) => Some(p.pinned()),
            None => self.piece_pin(pe, kind, peer, key, addr, extent),
        }
    }

    /// The pin of the piece of segment `kind` of PE `pe` that `[addr, addr + extent)` lies
    /// in (see `PeInfo::pieces`), made at its first use; None when the range is in no
    /// one piece or the piece cannot be pinned either (the per-access path serves it).
    #[inline(never)]
    fn piece_pin(&self, pe: u32, kind: usize, peer: &Arc<Peer>, key: MemKey, addr: u64, extent: u64) -> Option<&Pinned> {
        let slot = self.pes[pe as usize].piece(kind, addr, extent, true)?;
        let made = slot.get_or_init(|| {
            let p = Pinned::registration_block(peer, key, addr, PIECE, true, self.pd).ok().map(QuickPinned::new);
            sn_debug!("dmapp", "PE {pe}: {} segment piece at {:#x} {}", if kind == DATA { "data" } else { "heap" }, addr & !(PIECE - 1), if p.is_some() { "pinned (the segment lies in several backings)" } else { "cannot be pinned" });
            p
        });
        made.as_ref().map(QuickPinned::pinned)
    }

    /// [`Job::resolve`] of a descriptor that is not one of ours: another PE's symmetric
    /// segment, or a registration.
    #[inline(never)]
    fn resolve_other(&self, h: [u64; 2], pe: u32, off: u64, extent: u64, sym_only: bool) -> Result<Remote<'_>, Rc> {
        if let Some(&kind) = self.sym.get(&h) {
            return self.symmetric(pe, kind, off, extent);
        }
        if sym_only {
            return Err(DMAPP_RC_INVALID_PARAM);
        }
        // uGNI's segmented and vMDH handles address by offset or through the target's
        // vMDH table; a DMAPP descriptor addresses by virtual address (dmapp.h).
        if !CrayHandle::is_plain(h) {
            return Err(DMAPP_RC_INVALID_PARAM);
        }
        let ch = CrayHandle::from_words(h);
        let ra = ch.base.checked_add(off).ok_or(DMAPP_RC_INVALID_PARAM)?;
        let peer = self.peer_ref(pe)?;
        // The handle names its owner: used against another PE it names nothing there, and
        // the access fails at the target as a transaction error (as a forged one would).
        let key = if ch.owner_matches(peer.proc_id()) { ch.key } else { MemKey::NONE };
        Ok(Remote { peer, key, addr: ra, pin: None })
    }

    /// Records the first error of an `_nbi` request for the next gsync.
    pub fn note_gsync(&self, rc: Rc) {
        let mut g = lock(&self.gsync_err);
        if *g == DMAPP_RC_SUCCESS {
            *g = rc;
        }
    }

    /// Heap address <-> offset.
    pub fn heap_base(&self) -> Option<usize> {
        self.heap_mem.as_ref().map(|m| m.as_ptr() as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_size, settle_queue_attrs};
    use crate::types::*;

    #[test]
    fn queue_attributes_settle() {
        let mut a = RmaAttrsExt { queue_depth: 0, queue_nelems: 0, queue_flags: 0xff, reserved: [7; 20], ..RmaAttrsExt::DEFAULTS };
        settle_queue_attrs(&mut a);
        assert_eq!((a.queue_depth, a.queue_nelems, a.queue_flags), (DMAPP_QUEUE_DEFAULT_DEPTH, DMAPP_QUEUE_DEFAULT_NELEMS, 1));
        assert_eq!(a.reserved, [0; 20]);
        for (asked, got) in [(1, 2), (2, 2), (5, 8), (128, 128), (129, 256), (4096, 4096), (1 << 20, 4096), (u32::MAX, 4096)] {
            a.queue_depth = asked;
            settle_queue_attrs(&mut a);
            assert_eq!(a.queue_depth, got, "depth {asked}");
        }
        a.queue_nelems = 1000;
        settle_queue_attrs(&mut a);
        assert_eq!(a.queue_nelems, DMAPP_QUEUE_MAX_NELEMS);
        a.queue_nelems = 3;
        settle_queue_attrs(&mut a);
        assert_eq!(a.queue_nelems, 3);
    }

    #[test]
    fn heap_size_suffixes() {
        assert_eq!(parse_size("2600M"), Some(2600 << 20));
        assert_eq!(parse_size("64m"), Some(64 << 20));
        assert_eq!(parse_size("3k"), Some(3072));
        assert_eq!(parse_size("1G"), Some(1 << 30));
        assert_eq!(parse_size("1GB"), Some(1 << 30));
        assert_eq!(parse_size("12345"), Some(12345));
        assert_eq!(parse_size(" 8M "), Some(8 << 20));
        assert_eq!(parse_size("M"), None);
        assert_eq!(parse_size("-1"), None);
        assert_eq!(parse_size("12Q"), None);
        assert_eq!(parse_size("99999999999G"), None);
    }
}
