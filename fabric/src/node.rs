//! This process's place in the node fabric: its control segment and registry row.
//!
//! The **control segment** is one memfd per process (found by peers through the
//! registry's process table, or through a [`PeerRef`] passed by any other means).  It
//! holds, at fixed offsets:
//! - a header: magic, version, pid, start time (first cache line);
//! - the memory-registration table ([`RegEntry`]), read by peers to validate remote
//!   accesses (generation, bounds, access, protection-domain key);
//! - the backing table ([`BackEntry`]): each memfd that backs registered or library-owned
//!   memory, with its descriptor number, inode, length and base address in the owner.
//!
//! Everything in it is offsets and integers, never pointers.  Only the owner writes it;
//! peers read with acquire loads and re-check generations (see [`crate::rma`]).
//!
//! The fabric is set up on first use ([`get`]) and left at process exit (an `atexit`
//! handler detaches from the registry; the last process removes the registry file).  A
//! forked child does not inherit the parent's fabric: [`get`] returns `Err(Unsupported)`
//! there, as a real NIC context is not usable across fork either.

use crate::registry::{self, Attached, ProcId, SelfInfo};
use crate::shm::Segment;
use crate::{Error, Result};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

pub const CTL_MAGIC: u64 = 0x5346_4e43_544c_0001; // "SFNCTL" + layout 1
/// Layout version: 2 added `RegEntry::notify` (uGNI dst_cq of a registration); 3 added
/// the registry id and the node address to the header; 4 the life lock at [`LIFE_OFF`];
/// 5 the invalidation count at [`INVAL_OFF`].
pub const CTL_VERSION: u32 = 5;
/// Registration-table rows per process.
pub const NREG: usize = 4096;
/// Backing-table rows per process.
pub const NBACK: usize = 1024;

#[repr(C)]
pub(crate) struct CtlHeader {
    pub magic: u64,
    pub version: u32,
    pub pid: i32,
    pub starttime: u64,
    pub nreg: u32,
    pub nback: u32,
    /// This process's registry row ([`registry::ProcId`]), written before the row goes live.
    pub proc_slot: u32,
    pub proc_gen: u32,
    /// The address of the (virtual) node this process runs on, as its API names it (the
    /// uGNI NIC address), or [`NO_NODE_ADDR`] until an API announces it.
    pub node_addr: AtomicU32,
    _pad: [u8; 20],
}

/// `CtlHeader::node_addr` before an API has announced the node's address.
pub const NO_NODE_ADDR: u32 = u32::MAX;
// First cache line: identity and version are checked before anything else is read.
const _: () = assert!(std::mem::size_of::<CtlHeader>() == 64);

/// A registration row.  `gen` changes on every deregistration, so a key holding the
/// old value is stale; `state` is LIVE only between register and deregister.
#[repr(C)]
pub(crate) struct RegEntry {
    pub gen: AtomicU32,
    pub state: AtomicU32,
    /// 1 = read-write, 0 = read-only.
    pub writable: AtomicU32,
    /// First backing row covering `base`, or `NO_BACKING` (process_vm fallback).
    pub backing: AtomicU32,
    pub base: AtomicU64,
    pub len: AtomicU64,
    pub pd_key: AtomicU64,
    /// Notify ring of the registration ([`crate::mem::set_notify`]): the three words of a
    /// [`crate::mem::RingLoc`]; all zero (length 0) = none.  Cleared by `register`, set by
    /// the owner before it hands the key out.
    pub notify: [AtomicU64; 3],
}
// One cache line per row: peers read a row with a handful of loads on one line.
const _: () = assert!(std::mem::size_of::<RegEntry>() == 64);

/// A backing row: memfd `fd` (inode `ino`) of `len` bytes is mapped at `base` in the owner.
#[repr(C)]
pub(crate) struct BackEntry {
    pub gen: AtomicU32,
    /// FREE, LIVE (in the page map), or DETACHED (its pages were unmapped or remapped
    /// by the owner: still valid for registrations made earlier, never for new ones).
    pub state: AtomicU32,
    pub fd: AtomicU32,
    pub kind: AtomicU32,
    pub base: AtomicU64,
    pub len: AtomicU64,
    pub ino: AtomicU64,
    _pad: [u64; 3],
}
const _: () = assert!(std::mem::size_of::<BackEntry>() == 64);

pub(crate) const FREE: u32 = 0;
pub(crate) const LIVE: u32 = 1;
pub(crate) const DETACHED: u32 = 2;
pub(crate) const NO_BACKING: u32 = u32::MAX;

/// The **life lock**: a process-shared robust mutex that the thread setting up the
/// fabric locks and never unlocks.  Its lock word holds that thread's id; when the thread
/// ends (the process exits, is killed, or execs) the kernel sets FUTEX_OWNER_DIED in it
/// while tearing the thread down, before the process can be reaped.  Peers read the word
/// on every operation ([`Ctl::surely_alive`]): one load, where a liveness probe costs a
/// clock read and, at times, a system call.  A word without a clean owner (that thread
/// ended while the process goes on, or a C library that lays the mutex out otherwise)
/// proves nothing, and peers fall back to probing.  Second cache line: written twice per
/// process life.
pub(crate) const LIFE_OFF: usize = 64;
/// glibc's mutex starts with its lock word (the owner's thread id for a robust mutex).
const FUTEX_OWNER_DIED: u32 = 0x4000_0000;
const FUTEX_TID_MASK: u32 = 0x3fff_ffff;
const PTHREAD_MUTEX_ROBUST: libc::c_int = 1;

pub(crate) const REG_OFF: usize = 4096;
pub(crate) const BACK_OFF: usize = REG_OFF + NREG * 64;
pub const CTL_LEN: usize = BACK_OFF + NBACK * 64;
// Tables start page aligned so a peer could map them separately later.
const _: () = assert!(REG_OFF % 4096 == 0 && BACK_OFF % 4096 == 0);
const _: () = assert!(LIFE_OFF + std::mem::size_of::<libc::pthread_mutex_t>() <= REG_OFF);

/// The **invalidation count** (a u64): the owner adds one after each change that can end
/// the validity of a pin of its memory or move where peers find an address (a
/// registration ended; a backing row published, detached or freed), once the rows show
/// the change.  A peer that found a pin's rows valid while the count read N need not read
/// them again while it still reads N ([`crate::rma::QuickPinned`]); its index of the
/// backing rows is good while the count reads the same (`rma::Peer::find_backing`).  On the
/// life lock's line, which peers read on every operation anyway: the per-operation check
/// is one line, not three (life lock, registration row, backing row).
pub(crate) const INVAL_OFF: usize = LIFE_OFF + 48;
const _: () = assert!(LIFE_OFF + std::mem::size_of::<libc::pthread_mutex_t>() <= INVAL_OFF && INVAL_OFF % 8 == 0 && INVAL_OFF + 8 <= LIFE_OFF + 64);

/// A view of a control segment (ours or a peer's).
#[derive(Clone, Copy)]
pub(crate) struct Ctl {
    pub base: *mut u8,
}

// SAFETY: all fields accessed through a Ctl are atomics in shared memory.
unsafe impl Send for Ctl {}
unsafe impl Sync for Ctl {}

impl Ctl {
    pub fn hdr(&self) -> &CtlHeader {
        // SAFETY: base is a live mapping of CTL_LEN bytes (owner: Node or rma::Peer).
        unsafe { &*(self.base as *const CtlHeader) }
    }
    pub fn reg(&self, i: usize) -> Option<&RegEntry> {
        // SAFETY: bounds checked; rows are 64-byte aligned inside the mapping.
        (i < NREG).then(|| unsafe { &*(self.base.add(REG_OFF + i * 64) as *const RegEntry) })
    }
    pub fn back(&self, i: usize) -> Option<&BackEntry> {
        // SAFETY: as above.
        (i < NBACK).then(|| unsafe { &*(self.base.add(BACK_OFF + i * 64) as *const BackEntry) })
    }
    /// Checks magic, version and identity of a peer's segment.
    /// True when the life lock (see [`LIFE_OFF`]) shows its owner thread alive: then the
    /// process is.  False proves nothing (probe instead).
    #[inline]
    pub fn surely_alive(&self) -> bool {
        // SAFETY: LIFE_OFF is inside the mapped control segment, 4-aligned; the word is
        // written by the owner's C library and the kernel, so it is read atomically.
        let w = unsafe { (*(self.base.add(LIFE_OFF) as *const AtomicU32)).load(Ordering::Relaxed) };
        w & FUTEX_OWNER_DIED == 0 && w & FUTEX_TID_MASK != 0
    }

    /// The invalidation count (see [`INVAL_OFF`]).
    #[inline(always)]
    pub fn invalidations(&self) -> &AtomicU64 {
        // SAFETY: INVAL_OFF is inside the mapped control segment, 8-aligned (asserted); the
        // word is only accessed atomically.
        unsafe { &*(self.base.add(INVAL_OFF) as *const AtomicU64) }
    }

    /// Counts a change that may have ended a pin's validity (see [`INVAL_OFF`]); called
    /// after the rows show it.
    pub fn invalidated(&self) {
        // Release: a peer that reads the new count sees the rows' change.
        self.invalidations().fetch_add(1, Ordering::Release);
    }

    pub fn check(&self, pid: i32, starttime: u64) -> Result<()> {
        let h = self.hdr();
        if h.magic != CTL_MAGIC || h.version != CTL_VERSION || h.nreg != NREG as u32 || h.nback != NBACK as u32 {
            return Err(Error::Version);
        }
        if h.pid != pid || h.starttime != starttime {
            return Err(Error::StaleHandle);
        }
        Ok(())
    }
}

pub use crate::registry::PeerRef;

/// The process-global fabric state.
pub struct Node {
    pub pid: i32,
    pub starttime: u64,
    pub(crate) seg: Segment,
    reg: Attached,
}

static NODE: once_cell::sync::OnceCell<Node> = once_cell::sync::OnceCell::new();

/// This process's pid, kept current in a forked child by an atfork handler: `get()` runs
/// on every operation, and `getpid()` is a system call (glibc stopped caching it).  Only
/// a child made by a raw `fork`/`clone` system call (which runs no atfork handlers) would
/// be taken for its parent; fork(3), and everything built on it, is covered.
static PID: AtomicI32 = AtomicI32::new(0);

/// Called each time the fabric is found set up for this process (the network engine
/// starts on the first call, if the job needs it).
pub static ON_READY: crate::hook::Hook<()> = crate::hook::Hook::new();

/// Called just before this process forks, and after the fork in the parent and in the
/// child (set by the registration layer above, which unshares its windows around a fork).
pub static BEFORE_FORK: crate::hook::Hook<()> = crate::hook::Hook::new();
pub static AFTER_FORK: crate::hook::Hook<()> = crate::hook::Hook::new();

extern "C" fn before_fork() {
    BEFORE_FORK.call(());
}

extern "C" fn after_fork_in_parent() {
    AFTER_FORK.call(());
}

extern "C" fn after_fork_in_child() {
    AFTER_FORK.call(());
    // SAFETY: getpid has no preconditions (and is async-signal-safe).
    PID.store(unsafe { libc::getpid() }, Ordering::Relaxed);
}

/// This process's pid without a system call once the fabric is set up.
pub(crate) fn current_pid() -> i32 {
    match PID.load(Ordering::Relaxed) {
        // SAFETY: as above.
        0 => unsafe { libc::getpid() },
        p => p,
    }
}

extern "C" fn at_exit() {
    if let Some(n) = NODE.get() {
        if n.pid == current_pid() {
            n.reg.detach();
        }
    }
}

/// Debug-level log line for the node fabric (registry, registration, engine).
pub(crate) fn debug(msg: &str) {
    crate::sn_debug!("fabric", "{}", msg)
}

/// Initialises and locks the life lock of our fresh control segment (see [`LIFE_OFF`]).
/// Failure only costs peers the fast liveness check.
fn take_life_lock(ctl: &Ctl) {
    // SAFETY: the mutex lives in our segment (aligned, inside, zeroed, not yet shared);
    // the attribute is initialised before use and destroyed after.
    unsafe {
        let m = ctl.base.add(LIFE_OFF) as *mut libc::pthread_mutex_t;
        let mut a: libc::pthread_mutexattr_t = std::mem::zeroed();
        if libc::pthread_mutexattr_init(&mut a) != 0 {
            return;
        }
        let ok = libc::pthread_mutexattr_setpshared(&mut a, libc::PTHREAD_PROCESS_SHARED) == 0
            && libc::pthread_mutexattr_setrobust(&mut a, PTHREAD_MUTEX_ROBUST) == 0
            && libc::pthread_mutex_init(m, &a) == 0
            && libc::pthread_mutex_lock(m) == 0;
        libc::pthread_mutexattr_destroy(&mut a);
        if !ok {
            debug("no life lock: peers probe this process's liveness");
        }
    }
}

/// This process's fabric, set up on first call.
pub fn get() -> Result<&'static Node> {
    let n = NODE.get_or_try_init(|| {
        let pid = std::process::id() as i32;
        let starttime = crate::process::proc_starttime(pid).ok_or(Error::NotFound)?;
        let seg = Segment::create("softnic-ctl", CTL_LEN)?;
        // SAFETY: the fresh zeroed segment is ours; nobody can find it before attach.
        let h = unsafe { &mut *(seg.map.ptr() as *mut CtlHeader) };
        h.magic = CTL_MAGIC;
        h.version = CTL_VERSION;
        h.pid = pid;
        h.starttime = starttime;
        h.nreg = NREG as u32;
        h.nback = NBACK as u32;
        h.node_addr = AtomicU32::new(NO_NODE_ADDR);
        let ctl = Ctl { base: seg.map.ptr() };
        take_life_lock(&ctl);
        // Per-process starting generations, so a key minted by another process (or an
        // earlier run) rarely validates here by accident.
        let seed = (starttime ^ (pid as u64).rotate_left(17) ^ seg.ino.rotate_left(40)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        for i in 0..NREG {
            // Odd: generations advance by 2 (see mem::deregister), so they are never 0.
            let g = ((seed >> 32) as u32 ^ (i as u32).wrapping_mul(0x85eb_ca6b)) | 1;
            ctl.reg(i).expect("in range").gen.store(g, Ordering::Relaxed);
        }
        let hdr = seg.map.ptr() as *mut CtlHeader;
        let named = |id: ProcId| {
            // SAFETY: our own header; peers read these fields only after the registry row
            // goes live, which `attach` does after this call (Release store of its state).
            unsafe {
                (*hdr).proc_slot = id.slot;
                (*hdr).proc_gen = id.gen;
            }
        };
        // The job this process belongs to decides what it may find in the registry.
        let job = crate::bootstrap::job_tag().map_err(|e| {
            crate::sn_warn!("fabric", "cannot learn the job secret ({}): no node fabric", e);
            e
        })?;
        let reg = registry::attach(&SelfInfo { pid, starttime, ctl_fd: seg.fd.0, ctl_ino: seg.ino, ctl_len: CTL_LEN as u64, job }, &named)?;
        // SAFETY: at_exit and the fork handlers are extern "C" fns with no arguments,
        // living in this dylib, which is never unloaded (API libraries link it).
        unsafe {
            libc::atexit(at_exit);
            libc::pthread_atfork(Some(before_fork), Some(after_fork_in_parent), Some(after_fork_in_child));
        }
        PID.store(pid, Ordering::Relaxed);
        debug(&format!("attached: pid {} ctl fd {}", pid, seg.fd.0));
        crate::faults::start_clocks();
        Ok::<Node, Error>(Node { pid, starttime, seg, reg })
    })?;
    if n.pid != current_pid() {
        return Err(Error::Unsupported);
    }
    // Whoever starts with the fabric (the network engine, if the job needs it): cheap
    // after the first call.
    ON_READY.call(());
    Ok(n)
}

/// Tells the registry how its entry points find this process's attachment (see
/// [`registry::THIS_PROCESS`]); run when the library is loaded.
extern "C" fn set_registry_hook() {
    let _ = registry::THIS_PROCESS.set(|| get().map(|n| &n.reg));
}

#[used]
#[link_section = ".init_array"]
static SET_REGISTRY_HOOK: extern "C" fn() = set_registry_hook;

impl Node {
    pub(crate) fn ctl(&self) -> Ctl {
        Ctl { base: self.seg.map.ptr() }
    }
    /// This process's registry id (memory handles carry it to name their owner).
    pub fn proc_id(&self) -> ProcId {
        self.reg.proc_id()
    }

    /// Announces the address of the node this process runs on, as the API names it
    /// (uGNI: the NIC address).  Peers compare it with the address an initiator names.
    pub fn set_node_addr(&self, addr: u32) {
        self.ctl().hdr().node_addr.store(addr, Ordering::Release);
    }

    /// How other processes reach this one.
    pub fn peer_ref(&self) -> PeerRef {
        PeerRef { pid: self.pid, ctl_fd: self.seg.fd.0, starttime: self.starttime, ctl_ino: self.seg.ino }
    }
}

/// How other processes reach this one (sets up the fabric if needed).
pub fn self_ref() -> Result<PeerRef> {
    Ok(get()?.peer_ref())
}

/// Leaves the registry now instead of at exit (for tools and tests; the fabric is not
/// usable afterwards for registry operations).
pub fn detach_now() {
    at_exit();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cached pid must follow fork(3): a child may not use its parent's fabric.
    #[test]
    fn forked_child_is_refused_the_parents_fabric() {
        // Not while a registration test looks at its windows (the fork unbinds them).
        let _serial = crate::mem::tests_serial();
        let n = get().expect("fabric");
        assert_eq!(n.pid, current_pid());
        // SAFETY: the child only reads atomics and calls _exit (async-signal-safe work).
        let child = unsafe { libc::fork() };
        assert!(child >= 0, "fork");
        if child == 0 {
            let refused = matches!(get(), Err(Error::Unsupported));
            // SAFETY: leaving the forked child without running the test harness's exit path.
            unsafe { libc::_exit(if refused && current_pid() != n.pid { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: our child; a valid out pointer.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "child saw the parent's fabric as its own (status {status:#x})");
        assert!(get().is_ok(), "the parent keeps its fabric");
    }
}
