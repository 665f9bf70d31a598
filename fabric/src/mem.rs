//! Memory registration: making a process's memory reachable by its peers.
//!
//! **Rebinding.**  To let peers use plain loads, stores and hardware atomics on registered
//! memory, registration makes the pages shareable: the pages covering `[addr, addr+len)`
//! are copied into a memfd, which is then moved over the original pages at the same
//! virtual address (`mremap(MREMAP_FIXED)` from a temporary mapping, so the page-table
//! swap is a single atomic step).  The program sees the same contents at the same
//! address; peers map the memfd (see [`crate::rma`]).  Pages of anonymous memory that
//! never held data (neither present nor swapped, per /proc/self/pagemap) are not copied:
//! they read as zeros on both sides, and registering a large untouched buffer stays
//! cheap.  Memory that the library itself allocates with [`alloc_shared`] is shared from
//! the start and needs no rebind.
//!
//! **Block backings.**  Every memfd that backs our memory is a *backing*, listed in the
//! control segment (see [`crate::node`]).  Rebound pages go to the *block backing* of the
//! aligned 1 GiB block of addresses they lie in, each page at its offset in the block:
//! one sparse memfd per block, taking memory only for the pages rebound into it, mapped
//! whole by each peer once.  Pages rebound side by side become one mapping (same file,
//! consecutive offsets), so the count of mappings stays that of the program's own.  A
//! page stays rebound after its registration ends: registering it again costs only
//! bookkeeping (the steady state of a program that registers and deregisters its buffers
//! again and again), and a backing row, its memfd and the peers' mappings of it live as
//! long as the block holds rebound pages, whatever the number of registrations.
//!
//! **Windows.**  A registration of pages not rebound yet rebinds the aligned window of
//! `SOFTNIC_REGISTER_WINDOW` bytes (256 KiB) around them, clipped to their mapping (which
//! must be anonymous private read-write memory: heap, anonymous mmap; not what looks
//! like a .bss), to the block, to pages rebound already and away from the caller's own
//! stack and thread control block, so that the registrations of their neighbours, in the
//! common pattern of a fresh buffer per message, pay only bookkeeping.  Windows need the
//! write guard in its full form, a process whose only thread is the caller, or the other
//! threads parked (see the caveats and [`window_mode`]; otherwise exactly the pages asked
//! for are rebound), and each is checked to be the same mapping just before its swap (another
//! thread may unmap or remap its neighbour's memory meanwhile: then only the pages asked
//! for are rebound).  Before a `fork` the pages of windows that no live registration
//! covers are made private again (see [`before_fork`]).
//!
//! **Keeping up with the program.**  Registration reads the mappings of the range it
//! covers (one PROCMAP_QUERY per mapping on Linux 6.11+).  Rebound pages the program has
//! since unmapped or replaced (free of an mmap'd malloc chunk, heap trim) are found by a
//! *sweep* (one read of /proc/self/maps): when a registration meets such pages, and after
//! every 32 MiB rebound (or as much as was rebound at the last sweep).  Their file pages
//! are punched out, giving the memory back, and the block may take the range again.  A
//! block backing whose pages were moved elsewhere (mremap) or unmapped under a live
//! registration is *retired*: detached (still valid for the registrations made before,
//! never bound into again) and released when they end.
//!
//! **What can be rebound** (decided from the mappings): readable private mappings —
//! heap, stacks, bss/data, anonymous mmap, private file mappings; executable ones only
//! when anonymous (valgrind's client heap, JIT buffers; PROT_EXEC is kept) — and our own
//! memfd mappings.  Under valgrind the copy is made by the kernel (so memcheck does not
//! report reading the redzones of its heap arena), and the rebound bytes count as
//! defined.  Everything else (MAP_SHARED mappings that are not ours, hugetlbfs,
//! executable or special mappings such as [vdso]) is the **fallback**: the region is still
//! registered and bounds/permission/PD checks still apply, but peers move data with
//! `process_vm_readv/writev`, and remote atomics on it return `Err(Unsupported)` (no
//! target-side agent yet).
//!
//! **Caveats (documented contract).**
//! - Writes by *other* threads to anonymous pages being rebound are held in their page
//!   fault until the swap is done, then land on the new pages ([`WriteGuard`]: userfaultfd
//!   write protection, Linux 6.4+, `SOFTNIC_REGISTER_GUARD`).  Where the process may
//!   (CAP_SYS_PTRACE or vm.unprivileged_userfaultfd=1) writes the kernel makes for other
//!   threads (read(2) into those pages, the rseq area of a thread control block, a signal
//!   frame) are held the same way; otherwise the guard works in user mode only, such a
//!   write fails with EFAULT while the guard is armed, and a window is used only with the
//!   other threads parked ([`crate::stop`]: a parked thread makes no system call).  Where the
//!   guard is unavailable (older kernels, seccomp filters, valgrind) and for private file
//!   mappings (.data), the other threads are parked from just before the copy until the
//!   swap ([`crate::stop`]); only where that fails (the signal is taken, a thread blocks
//!   it) can their writes be lost (they may land between the copy and the swap), and a
//!   warning says so.  The calling thread is safe, including when the range covers its own
//!   stack or thread control block: then the copy and swap run on a helper thread while
//!   the caller sleeps in the kernel with signals blocked (unguarded, like the stack of
//!   a thread other than the caller).
//! - Rebound pages are MAP_SHARED: a child created by `fork` shares those of live
//!   registrations (and, without windows, of ended ones) with the parent instead of
//!   getting a copy.
//! - Rebound pages stay shared after their registration ends, for the program's life or
//!   until it unmaps them: MADV_DONTNEED on them no longer gives the memory back nor
//!   reads as zeros afterwards (memory the program unmaps is given back by the sweeps).

use crate::node::{self, Ctl, DETACHED, FREE, LIVE, NBACK, NO_BACKING, NREG};
use crate::registry::ProcId;
use crate::shm::{self, Fd};
use crate::{Error, Result};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// Name of backing memfds; /proc/self/maps shows `/memfd:softnic-bk (deleted)`.
const BACKING_NAME: &str = "softnic-bk";

/// Address span of one block backing (see the module doc): 1 GiB, aligned.
const BLOCK: usize = 1 << 30;

/// Access rights of a registered region for remote operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    ReadWrite,
    ReadOnly,
}

/// Names one registration: table row + generation.  8 bytes (`to_u64`), so API handles
/// of 16 bytes (uGNI's two u64) have room for the base address beside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MemKey {
    pub index: u32,
    pub generation: u32,
}

/// The 16-byte memory handle of the Cray APIs: uGNI's `gni_mem_handle_t {qword1, qword2}`,
/// also carried inside DMAPP segment descriptors.  One encoding for both APIs, so a handle
/// made by one is accepted by the other in the same program (as on Cray systems, where
/// DMAPP sits on uGNI).
///
/// **A handle names its owner by itself.**  On the hardware a transaction reaches its
/// target by (NIC address, memory handle): the address picks the node, the handle the
/// memory domain there.  Here the NIC address picks the node and the handle's [`ProcId`]
/// picks the process on it, so no other routing information (uGNI's EpBind `remote_id`
/// is an arbitrary user value) is needed, and the network engine can route the same way.
///
/// ```text
/// qword1:  63..62 kind (0 = plain; uGNI's other kinds, see KIND_BITS)
///          61..58 zero   57..48 owner slot   47..0 base address of the registration
/// qword2:  63..32 registration generation   31..12 owner generation (low 20 bits)
///          11..0  registration row
/// ```
/// Registration generations are always odd, so an all-zero handle (a forgotten
/// initialisation) is never valid.  A stale owner (the process left; its row was reused),
/// a stale registration or a foreign protection domain are all refused by the owner's
/// tables before anything is touched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CrayHandle {
    pub base: u64,
    pub key: MemKey,
    pub owner: ProcId,
}

impl CrayHandle {
    /// Bits of qword1 a plain handle never has: uGNI marks its other handle kinds with
    /// them (segment tables, symmetric vMDH).
    pub const KIND_BITS: u64 = 0b11 << 62;
    /// Registrations must lie below this address (user space on x86-64 and arm64 with
    /// 4-level page tables ends at 2^47).
    pub const ADDR_LIMIT: u64 = 1 << 48;
    /// Generation bits of the owner kept in a handle (compare with [`Self::owner_matches`]).
    pub const OWNER_GEN_BITS: u32 = 20;
    const SLOT_SHIFT: u32 = 48;
    const SLOT_BITS: u32 = 10;
    const ROW_BITS: u32 = 12;

    /// A handle of this process's registration `key` at `base`.  `InvalidArg` for an
    /// address at or above [`Self::ADDR_LIMIT`].
    pub fn mine(base: u64, key: MemKey) -> Result<CrayHandle> {
        if base >= Self::ADDR_LIMIT {
            return Err(Error::InvalidArg);
        }
        Ok(CrayHandle { base, key, owner: node::get()?.proc_id() })
    }

    /// Do these words hold a plain handle (one registration), not one of uGNI's others?
    pub fn is_plain(w: [u64; 2]) -> bool {
        w[0] & Self::KIND_BITS == 0
    }

    pub fn to_words(self) -> [u64; 2] {
        let gen_mask = (1u64 << Self::OWNER_GEN_BITS) - 1;
        let slot_mask = (1u64 << Self::SLOT_BITS) - 1;
        [
            (self.base & (Self::ADDR_LIMIT - 1)) | ((self.owner.slot as u64 & slot_mask) << Self::SLOT_SHIFT),
            (self.key.index as u64 & ((1 << Self::ROW_BITS) - 1)) | ((self.owner.gen as u64 & gen_mask) << Self::ROW_BITS) | ((self.key.generation as u64) << 32),
        ]
    }

    /// Decodes the words of a handle; the kind bits are ignored (callers strip them).
    pub fn from_words(w: [u64; 2]) -> CrayHandle {
        let slot = ((w[0] >> Self::SLOT_SHIFT) & ((1 << Self::SLOT_BITS) - 1)) as u32;
        let index = (w[1] & ((1 << Self::ROW_BITS) - 1)) as u32;
        let gen = ((w[1] >> Self::ROW_BITS) & ((1 << Self::OWNER_GEN_BITS) - 1)) as u32;
        CrayHandle { base: w[0] & (Self::ADDR_LIMIT - 1), key: MemKey { index, generation: (w[1] >> 32) as u32 }, owner: ProcId { slot, gen } }
    }

    /// Is `id` the owner this handle names (within the generation bits it keeps)?
    pub fn owner_matches(&self, id: ProcId) -> bool {
        let m = (1u32 << Self::OWNER_GEN_BITS) - 1;
        self.owner.slot == id.slot && self.owner.gen & m == id.gen & m
    }
}

// The handle's fields must hold every row and slot the tables have.
const _: () = assert!(NREG <= 1 << CrayHandle::ROW_BITS && crate::registry::NPROC <= 1 << CrayHandle::SLOT_BITS);

impl MemKey {
    /// A key no registration ever has: every operation on it fails with `InvalidHandle`
    /// at the target (for handles found unusable before the operation is issued).
    pub const NONE: MemKey = MemKey { index: u32::MAX, generation: 0 };

    pub fn to_u64(self) -> u64 {
        (self.index as u64) | ((self.generation as u64) << 32)
    }
    pub fn from_u64(v: u64) -> MemKey {
        MemKey { index: v as u32, generation: (v >> 32) as u32 }
    }
}

/// A registration as seen by its owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub base: u64,
    pub len: u64,
    pub access: Access,
    pub pd_key: u64,
    /// False when the region uses the process_vm fallback (no atomics).
    pub shared: bool,
}

/// Memory allocated shared from the start (DMAPP symmetric heap, SISCI segments, rings).
#[derive(Debug)]
pub struct SharedMem {
    ptr: *mut u8,
    len: usize,
    backing: u32,
    backing_gen: u32,
}

// SAFETY: plain memory; users synchronise access as they would any shared buffer.
unsafe impl Send for SharedMem {}
unsafe impl Sync for SharedMem {}

/// Where a ring lives in some process's library-owned shared memory: backing row +
/// its generation + offset + length.  Packs into three u64 ([`RingLoc::to_words`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RingLoc {
    pub backing: u32,
    pub backing_gen: u32,
    pub offset: u64,
    pub len: u64,
}

impl RingLoc {
    pub fn to_words(&self) -> [u64; 3] {
        [(self.backing as u64) | ((self.backing_gen as u64) << 32), self.offset, self.len]
    }
    pub fn from_words(w: [u64; 3]) -> RingLoc {
        RingLoc { backing: w[0] as u32, backing_gen: (w[0] >> 32) as u32, offset: w[1], len: w[2] }
    }
}

impl SharedMem {
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Names `len` bytes at `offset` in this buffer for peers (e.g. a ring initialised there).
    pub fn ring_loc(&self, offset: usize, len: usize) -> Result<RingLoc> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len && len > 0 => {}
            _ => return Err(Error::OutOfBounds),
        }
        Ok(RingLoc { backing: self.backing, backing_gen: self.backing_gen, offset: offset as u64, len: len as u64 })
    }
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Kind {
    /// A block backing: pages of the program rebound into it (see the module doc).
    Rebound,
    /// Library memory from [`alloc_shared`], shared from the start.
    Owned,
}

struct Backing {
    base: usize,
    len: usize,
    /// Identity of the memfd: device and inode (as mappings of it show them).
    dev: u64,
    ino: u64,
    fd: Fd,
    kind: Kind,
    /// Live registrations using it, plus one while an `alloc_shared` buffer owns it.
    refs: u32,
    /// In the page map (reusable by new registrations).
    attached: bool,
    /// Block backings: the address ranges rebound into the memfd (each page at its offset
    /// in the block) and not yet seen unmapped by a sweep; sorted, disjoint.
    bound: Vec<(usize, usize)>,
}

struct State {
    backs: Vec<Option<Backing>>,
    /// Per registration row: the backings it holds a reference on.
    reg_backs: Vec<Vec<u32>>,
    /// Bytes rebound since the last sweep, and bytes bound after it (see [`sweep`]).
    bound_since_sweep: usize,
    bound_at_sweep: usize,
    /// No registration row below this one is free: `register` looks from here (then,
    /// should the table have changed behind us, from the start), `deregister` lowers it.
    /// A program with thousands of live registrations that registers and deregisters all
    /// the time (zero-copy protocols) then finds a row at once instead of scanning them.
    free_hint: usize,
}

static STATE: Mutex<State> = Mutex::new(State { backs: Vec::new(), reg_backs: Vec::new(), bound_since_sweep: 0, bound_at_sweep: 0, free_hint: 0 });

/// Called when a registration ends, with its key (the network engine closes peers' RMA
/// windows onto it).
pub static ON_DEREGISTER: crate::hook::Hook<MemKey> = crate::hook::Hook::new();

fn state() -> std::sync::MutexGuard<'static, State> {
    // A panic while holding the lock cannot leave the tables inconsistent in a way
    // worse than refusing all further registration; keep going.
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------------------
// /proc/self/maps

#[derive(Debug, Clone)]
struct Vma {
    start: usize,
    end: usize,
    r: bool,
    w: bool,
    x: bool,
    shared: bool,
    offset: u64,
    inode: u64,
    path: String,
}

fn read_maps() -> Result<Vec<Vma>> {
    let s = std::fs::read_to_string("/proc/self/maps").map_err(|e| Error::Os(e.raw_os_error().unwrap_or(libc::EIO)))?;
    let mut v = Vec::new();
    for line in s.lines() {
        let mut it = line.splitn(6, ' ');
        let (Some(range), Some(perms), Some(off), Some(_dev), Some(ino)) = (it.next(), it.next(), it.next(), it.next(), it.next()) else { continue };
        let path = it.next().unwrap_or("").trim_start().to_string();
        let Some((a, b)) = range.split_once('-') else { continue };
        let (Ok(start), Ok(end), Ok(offset), Ok(inode)) =
            (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16), u64::from_str_radix(off, 16), ino.parse::<u64>())
        else {
            continue;
        };
        let p = perms.as_bytes();
        if p.len() < 4 {
            continue;
        }
        v.push(Vma { start, end, r: p[0] == b'r', w: p[1] == b'w', x: p[2] == b'x', shared: p[3] == b's', offset, inode, path });
    }
    Ok(v)
}

/// The mappings that overlap `[lo, hi)`, in address order.  One PROCMAP_QUERY ioctl per
/// mapping (Linux 6.11+) instead of formatting the whole of /proc/self/maps, which costs
/// tens of microseconds (every path rendered) on each registration; the full read where
/// the ioctl is missing.
fn read_maps_range(lo: usize, hi: usize, names: Names) -> Result<Vec<Vma>> {
    match query_maps(lo, hi, names) {
        Some(v) => Ok(v),
        None => Ok(read_maps()?.into_iter().filter(|v| v.end > lo && v.start < hi).collect()),
    }
}

/// `struct procmap_query` (linux/fs.h, 6.11).
#[repr(C)]
#[derive(Default)]
struct ProcmapQuery {
    size: u64,
    query_flags: u64,
    query_addr: u64,
    vma_start: u64,
    vma_end: u64,
    vma_flags: u64,
    vma_page_size: u64,
    vma_offset: u64,
    inode: u64,
    dev_major: u32,
    dev_minor: u32,
    vma_name_size: u32,
    build_id_size: u32,
    vma_name_addr: u64,
    build_id_addr: u64,
}

/// Which mapping names a query reads: the kernel renders each name it is asked for (a
/// good part of a query's cost), and most callers need only some.
#[derive(Clone, Copy)]
#[cfg_attr(not(test), allow(dead_code))] // `All` is for tests
enum Names<'a> {
    /// None (`Vma::path` left empty).
    Skip,
    /// Every name.
    All,
    /// Every name but those of mappings of these files, (device, inode): our backings,
    /// named [`BACKING_PATH`] without asking.
    ExceptOurs(&'a [(u64, u64)]),
}

/// How /proc/self/maps names a mapping of one of our backings.
const BACKING_PATH: &str = "/memfd:softnic-bk (deleted)";

/// PROCMAP_QUERY walk of `[lo, hi)`; None when the kernel lacks the ioctl.
fn query_maps(lo: usize, hi: usize, names: Names) -> Option<Vec<Vma>> {
    const PROCMAP_QUERY: libc::c_ulong = 0xc068_6611; // _IOWR('f', 17, struct procmap_query)
    const READABLE: u64 = 1;
    const WRITABLE: u64 = 2;
    const EXECUTABLE: u64 = 4;
    const SHARED: u64 = 8;
    const COVERING_OR_NEXT_VMA: u64 = 0x10;
    const _: () = assert!(std::mem::size_of::<ProcmapQuery>() == 104);
    static MISSING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if MISSING.load(Ordering::Relaxed) {
        return None;
    }
    let fd = maps_fd()?;
    let mut out = Vec::new();
    let mut name = [0u8; 4096];
    let mut addr = lo;
    let query = |addr: usize, name: Option<&mut [u8; 4096]>| -> std::result::Result<ProcmapQuery, Error> {
        let (size, ptr) = name.map_or((0, 0), |n| (n.len() as u32, n.as_mut_ptr() as u64));
        let mut q = ProcmapQuery {
            size: std::mem::size_of::<ProcmapQuery>() as u64,
            query_flags: COVERING_OR_NEXT_VMA,
            query_addr: addr as u64,
            vma_name_size: size,
            vma_name_addr: ptr,
            ..Default::default()
        };
        // SAFETY: an ioctl on our descriptor with a properly sized, initialised argument;
        // the kernel writes at most vma_name_size bytes to the name buffer.
        if unsafe { libc::ioctl(fd, PROCMAP_QUERY, &mut q) } != 0 {
            return Err(Error::last_os());
        }
        Ok(q)
    };
    let result = loop {
        if addr >= hi {
            break Some(out);
        }
        let named = matches!(names, Names::All);
        let q = match query(addr, named.then_some(&mut name)) {
            Ok(q) => q,
            Err(Error::Os(libc::ENOENT)) => break Some(out), // no mapping at or above addr
            Err(Error::Os(libc::ENOTTY)) | Err(Error::Os(libc::EINVAL)) => {
                MISSING.store(true, Ordering::Relaxed);
                break None;
            }
            Err(_) => break None,
        };
        if q.vma_start as usize >= hi || q.vma_end as usize <= addr {
            break Some(out);
        }
        let mut path = String::new();
        if named {
            let len = (q.vma_name_size as usize).min(name.len());
            if len > 0 {
                path = String::from_utf8_lossy(&name[..len - 1]).into_owned();
            }
        } else if let Names::ExceptOurs(ours) = names {
            let dev = libc::makedev(q.dev_major, q.dev_minor) as u64;
            if ours.contains(&(dev, q.inode)) && q.vma_flags & SHARED != 0 {
                path = BACKING_PATH.to_string();
            } else {
                // Ask again for this mapping with its name.
                match query(q.vma_start as usize, Some(&mut name)) {
                    Ok(n) if n.vma_start == q.vma_start => {
                        let len = (n.vma_name_size as usize).min(name.len());
                        if len > 0 {
                            path = String::from_utf8_lossy(&name[..len - 1]).into_owned();
                        }
                    }
                    _ => break None,
                }
            }
        }
        out.push(Vma {
            start: q.vma_start as usize,
            end: q.vma_end as usize,
            r: q.vma_flags & READABLE != 0,
            w: q.vma_flags & WRITABLE != 0,
            x: q.vma_flags & EXECUTABLE != 0,
            shared: q.vma_flags & SHARED != 0,
            offset: q.vma_offset,
            inode: q.inode,
            path,
        });
        addr = q.vma_end as usize;
    };
    result
}

/// This process's `/proc/self/maps`, opened once and kept for the PROCMAP_QUERY ioctls
/// (opening it costs several microseconds of path walk, more than the query; the ioctl
/// keeps no file position, so threads share the descriptor).
fn maps_fd() -> Option<i32> {
    static MAPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(u64::MAX);
    proc_self_fd(&MAPS, c"/proc/self/maps")
}

/// This process's `/proc/self/pagemap`, opened once (read with pread only).
fn pagemap_fd() -> Option<i32> {
    static PAGEMAP: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(u64::MAX);
    proc_self_fd(&PAGEMAP, c"/proc/self/pagemap")
}

/// A /proc/self file kept open in `word`, which holds the pid with the descriptor: a
/// forked child (which inherits its parent's, naming the parent's memory) opens its own.
fn proc_self_fd(word: &std::sync::atomic::AtomicU64, path: &std::ffi::CStr) -> Option<i32> {
    let pid = node::current_pid() as u32 as u64;
    let cur = word.load(Ordering::Acquire);
    if cur != u64::MAX && cur >> 32 == pid {
        return Some(cur as u32 as i32);
    }
    // SAFETY: a NUL-terminated path.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    match word.compare_exchange(cur, (pid << 32) | fd as u32 as u64, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Some(fd),
        Err(now) => {
            // Another thread stored one first: use it.
            // SAFETY: ours, never published.
            unsafe { libc::close(fd) };
            (now != u64::MAX && now >> 32 == pid).then_some(now as u32 as i32)
        }
    }
}

/// Whether `[addr, addr+len)` is mapped readable without holes (None if not: a hole or a
/// PROT_NONE page, which the hardware could not pin either), and if so whether every page
/// of it is writable: the mapping checks of an API's registration call.
pub fn mapped_writable(addr: usize, len: usize) -> Option<bool> {
    // Its system calls (reads of /proc, file descriptors) must not be cancellation points.
    let _masked = crate::cancel::Masked::new();
    mapped_writable_now(addr, len).or_else(|| {
        // Linux (6.17 on) answers map queries without the mmap lock, and a mapping that
        // mremap is replacing at that moment can be missing from the answer.  Another
        // thread's registration rebinding a window over these pages is such a swap, and
        // ours run under `state()`: a hole seen once is looked at again under it, so a
        // concurrent registration never makes a mapped range look unmapped (test:
        // checks_see_no_hole_while_a_window_is_rebound).  No caller holds `state()`.
        let _st = state();
        mapped_writable_now(addr, len)
    })
}

/// One walk of [`mapped_writable`]'s mappings, as the kernel shows them at this moment.
fn mapped_writable_now(addr: usize, len: usize) -> Option<bool> {
    let end = addr.checked_add(len)?;
    let maps = read_maps_range(addr, end, Names::Skip).ok()?;
    let mut cur = addr;
    let mut writable = true;
    for v in &maps {
        if v.start > cur || !v.r {
            return None;
        }
        writable &= v.w;
        cur = cur.max(v.end);
    }
    (cur >= end && len > 0).then_some(writable)
}

fn is_our_backing_vma(v: &Vma) -> bool {
    v.shared && v.path.starts_with("/memfd:softnic-bk")
}

/// Can these pages be rebound (copied to a memfd and swapped in place)?
fn rebindable(v: &Vma) -> bool {
    // Executable pages only when anonymous and private: a JIT buffer or valgrind's heap
    // arena (its client heap is rwx), rebound with PROT_EXEC kept.  Never code mapped
    // from a file.
    if !v.r || (v.x && (v.shared || v.inode != 0 || !v.path.is_empty())) {
        return false;
    }
    if v.shared {
        return is_our_backing_vma(v); // a detached backing of ours: safe to copy again
    }
    !(v.path.starts_with("[v") || v.path.contains("hugepage") || v.path.contains("hugetlb"))
}

/// Is backing `b` still mapped, whole, at its base address?
fn intact(b: &Backing, maps: &[Vma]) -> bool {
    let mut cur = b.base;
    let end = b.base + b.len;
    for v in maps {
        if v.end <= cur || v.start >= end {
            continue;
        }
        if v.start > cur || !is_our_backing_vma(v) || v.inode != b.ino || v.offset != (v.start - b.base) as u64 {
            return false;
        }
        cur = v.end.min(end);
        if cur == end {
            return true;
        }
    }
    cur >= end
}

// ---------------------------------------------------------------------------------------
// Address ranges: sorted lists of disjoint half-open [start, end) pairs.

/// Adds `[s, e)` to `v`, merging what touches it.
fn ranges_add(v: &mut Vec<(usize, usize)>, s: usize, e: usize) {
    if s >= e {
        return;
    }
    let i = v.partition_point(|r| r.1 < s);
    let mut j = i;
    let (mut ns, mut ne) = (s, e);
    while j < v.len() && v[j].0 <= e {
        ns = ns.min(v[j].0);
        ne = ne.max(v[j].1);
        j += 1;
    }
    v.splice(i..j, [(ns, ne)]);
}

/// `a` without what `b` covers.
fn ranges_sub(a: &[(usize, usize)], b: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for &(s, e) in a {
        let mut cur = s;
        for &(bs, be) in b.iter().filter(|r| r.1 > s && r.0 < e) {
            if bs > cur {
                out.push((cur, bs));
            }
            cur = cur.max(be);
        }
        if cur < e {
            out.push((cur, e));
        }
    }
    out
}

fn ranges_overlap(v: &[(usize, usize)], s: usize, e: usize) -> bool {
    let i = v.partition_point(|r| r.1 <= s);
    i < v.len() && v[i].0 < e
}

// ---------------------------------------------------------------------------------------
// Backing rows.

fn publish_backing(ctl: Ctl, st: &mut State, b: Backing) -> Result<(u32, u32)> {
    let idx = (0..NBACK).find(|&i| ctl.back(i).map_or(false, |e| e.state.load(Ordering::Relaxed) == FREE) && st.backs.get(i).map_or(true, |x| x.is_none()));
    let idx = idx.ok_or(Error::NoSpace)?;
    if st.backs.len() <= idx {
        st.backs.resize_with(idx + 1, || None);
    }
    let e = ctl.back(idx).expect("in range");
    e.fd.store(b.fd.0 as u32, Ordering::Relaxed);
    e.kind.store(b.kind as u32, Ordering::Relaxed);
    e.base.store(b.base as u64, Ordering::Relaxed);
    e.len.store(b.len as u64, Ordering::Relaxed);
    e.ino.store(b.ino, Ordering::Relaxed);
    // Release: a peer that sees LIVE sees the fields above.
    e.state.store(LIVE, Ordering::Release);
    // Peers read their index of the table again (rma::Peer::find_backing).
    ctl.invalidated();
    let gen = e.gen.load(Ordering::Relaxed);
    st.backs[idx] = Some(b);
    Ok((idx as u32, gen))
}

/// Takes a backing out of the page map; frees it when nothing references it.
fn detach_backing(ctl: Ctl, st: &mut State, idx: u32) {
    let e = ctl.back(idx as usize).expect("in range");
    let Some(b) = st.backs[idx as usize].as_mut() else { return };
    b.attached = false;
    e.state.store(DETACHED, Ordering::Release);
    ctl.invalidated();
    if b.refs == 0 {
        release_backing(ctl, st, idx);
    }
}

/// When the backing table is nearly full, gives back the rows of block backings that
/// hold nothing any more (a sweep).  Called before a registration or allocation looks at
/// the table, so that no row it is about to use goes away under it.
fn make_room(ctl: Ctl, st: &mut State) -> Result<()> {
    if st.backs.iter().flatten().count() + 8 >= NBACK {
        sweep(ctl, st, true)?;
    }
    Ok(())
}

/// Frees a backing's row and closes its memfd.  Pages the program still maps from it
/// stay (the mapping holds the file); they are no backing's any more, and a later
/// registration of them copies them again.
fn release_backing(ctl: Ctl, st: &mut State, idx: u32) {
    let e = ctl.back(idx as usize).expect("in range");
    // Generation first: a peer that re-checks after reading sees the change.
    e.gen.fetch_add(1, Ordering::Release);
    e.state.store(FREE, Ordering::Release);
    ctl.invalidated();
    st.backs[idx as usize] = None; // closes the memfd
}

fn unref_backing(ctl: Ctl, st: &mut State, idx: u32) {
    if let Some(b) = st.backs[idx as usize].as_mut() {
        b.refs = b.refs.saturating_sub(1);
        if b.refs == 0 && !b.attached {
            release_backing(ctl, st, idx);
        }
    }
}

/// Frees the file pages of `[s, e)` (addresses) of block backing `b`: they read as zeros
/// afterwards, in the program and in every peer's mapping.
fn punch(b: &Backing, s: usize, e: usize) {
    if s >= e {
        return;
    }
    // SAFETY: fallocate on our memfd; the range lies inside it (s, e inside the block).
    let r = unsafe { libc::fallocate(b.fd.0, libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE, (s - b.base) as libc::off_t, (e - s) as libc::off_t) };
    if r != 0 {
        crate::sn_debug!("fabric", "punching {:#x}..{:#x} out of a backing failed: {}", s, e, Error::last_os());
    }
}

/// The attached block backing of the block holding `addr`, made when there is none.
fn block_backing(ctl: Ctl, st: &mut State, addr: usize) -> Result<u32> {
    let base = addr & !(BLOCK - 1);
    let found = st.backs.iter().position(|b| matches!(b, Some(b) if b.kind == Kind::Rebound && b.attached && b.base == base));
    if let Some(i) = found {
        return Ok(i as u32);
    }
    // Sparse: the file takes memory only for the pages rebound into it.
    let fd = shm::memfd(BACKING_NAME, BLOCK)?;
    let (dev, ino, _) = shm::fd_identity(fd.0)?;
    let b = Backing { base, len: BLOCK, dev, ino, fd, kind: Kind::Rebound, refs: 0, attached: true, bound: Vec::new() };
    let (idx, _) = publish_backing(ctl, st, b)?;
    node::debug(&format!("block backing {} for {:#x}..{:#x}", idx, base, base + BLOCK));
    Ok(idx)
}

/// The page-rounded ranges of the live registrations that hold backing `idx`.
fn live_ranges(ctl: Ctl, st: &State, idx: u32) -> Vec<(usize, usize)> {
    let pm = shm::page_size() - 1;
    let mut v = Vec::new();
    for (row, backs) in st.reg_backs.iter().enumerate() {
        if backs.contains(&idx) {
            let e = ctl.reg(row).expect("in range");
            let (b, l) = (e.base.load(Ordering::Relaxed) as usize, e.len.load(Ordering::Relaxed) as usize);
            ranges_add(&mut v, b & !pm, (b + l + pm) & !pm);
        }
    }
    v
}

/// Brings the block backings in line with what the program maps (one read of
/// /proc/self/maps).  Ranges the program has unmapped (free of an mmap'd chunk, heap
/// trim) are punched out of their memfd, so the memory goes back, and may be rebound
/// later.  A backing whose pages were moved elsewhere (mremap) or unmapped under a live
/// registration is *retired*: detached, kept while registrations hold it, never bound
/// into again (its file offsets may still be in use), and released after; only what
/// nothing maps or uses is punched out of it.  `idle`: also release attached block
/// backings holding nothing (when the table is full).
fn sweep(ctl: Ctl, st: &mut State, idle: bool) -> Result<()> {
    // The file is read in pieces: a mapping another thread moves meanwhile from a part
    // not read yet to one read already would be missed, and its pages punched.  So what
    // looks lost in one reading must look lost in a second one too.
    let first = read_maps()?;
    let mut second: Option<Vec<Vma>> = None;
    let mut total = 0usize;
    for i in 0..st.backs.len() {
        let (ino, base, attached) = match &st.backs[i] {
            Some(b) if b.kind == Kind::Rebound => (b.ino, b.base, b.attached),
            _ => continue,
        };
        let mut in_place = Vec::new();
        let mut elsewhere = Vec::new();
        let seen = |maps: &[Vma], in_place: &mut Vec<(usize, usize)>, elsewhere: &mut Vec<(usize, usize)>| {
            for v in maps.iter().filter(|v| v.inode == ino && is_our_backing_vma(v)) {
                let at = base.wrapping_add(v.offset as usize);
                if at == v.start {
                    ranges_add(in_place, v.start, v.end);
                } else {
                    ranges_add(elsewhere, at, at + (v.end - v.start));
                }
            }
        };
        seen(&first, &mut in_place, &mut elsewhere);
        if !ranges_sub(&st.backs[i].as_ref().expect("checked").bound, &in_place).is_empty() {
            if second.is_none() {
                second = Some(read_maps()?);
            }
            seen(second.as_deref().expect("read"), &mut in_place, &mut elsewhere);
        }
        let live = live_ranges(ctl, st, i as u32);
        let b = st.backs[i].as_mut().expect("checked");
        let lost = ranges_sub(&b.bound, &in_place);
        if attached && (!elsewhere.is_empty() || lost.iter().any(|&(s, e)| ranges_overlap(&live, s, e))) {
            node::debug(&format!("block backing {} retired: {} range(s) moved, {} lost", i, elsewhere.len(), lost.len()));
            b.attached = false;
            ctl.back(i).expect("in range").state.store(DETACHED, Ordering::Release);
            ctl.invalidated();
        }
        if b.attached {
            for &(s, e) in &lost {
                punch(b, s, e);
            }
            b.bound = in_place;
            total += b.bound.iter().map(|r| r.1 - r.0).sum::<usize>();
            if idle && b.bound.is_empty() && b.refs == 0 {
                release_backing(ctl, st, i as u32);
            }
        } else {
            let mut keep = in_place;
            for &(s, e) in elsewhere.iter().chain(&live) {
                ranges_add(&mut keep, s, e);
            }
            for (s, e) in ranges_sub(&b.bound, &keep) {
                punch(b, s, e);
            }
            b.bound = keep;
            if b.refs == 0 {
                release_backing(ctl, st, i as u32);
            }
        }
    }
    st.bound_since_sweep = 0;
    st.bound_at_sweep = total;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Rebinding.

struct Piece {
    start: usize,
    len: usize,
    prot: i32,
    tmp: *mut u8,
    /// The memfd and the piece's offset in it.
    fd: i32,
    off: usize,
    /// Check just before the swap that the piece is still the mapping it was (pages
    /// nobody asked to register: another thread may unmap or remap them meanwhile).
    verify: bool,
    /// Null: copy everything.  Else a run list in the scratch mapping (see [`Scratch`]):
    /// word 0 the number of runs (`COPY_ALL`: copy everything), then (offset, length)
    /// pairs of the runs that hold data.
    runs: *mut usize,
    /// Room for this many runs.
    cap: usize,
    /// Two pagemap words per page in the scratch mapping (before and after the write
    /// guard was armed), when `runs` is not null.
    scan: *mut u64,
}

/// Run count meaning "copy the whole piece".
const COPY_ALL: usize = usize::MAX;

/// Pieces of at most this many pages are copied whole, without reading which of their
/// pages hold data (two pagemap reads cost more than copying a few pages).
const SCAN_MIN_PAGES: usize = 16;

/// Memory the registering thread writes while the write guard is armed (pagemap scans,
/// run lists): a shared anonymous mapping of ours, so never part of a range or window
/// being rebound (those are private), and never the allocator's.  Kept between
/// registrations (they are serialised); one that grew past [`Scratch::KEEP`] is given
/// back after use.
struct Scratch {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: plain memory owned by the static below, used under its lock.
unsafe impl Send for Scratch {}

static SCRATCH: Mutex<Scratch> = Mutex::new(Scratch { ptr: std::ptr::null_mut(), len: 0 });

impl Scratch {
    const KEEP: usize = 1 << 20;

    /// Makes room for `len` bytes; false if the mapping failed.
    fn reserve(&mut self, len: usize) -> bool {
        if len <= self.len {
            return true;
        }
        self.release();
        let len = (len + Self::KEEP / 16 - 1) & !(Self::KEEP / 16 - 1);
        // SAFETY: a fresh shared anonymous mapping.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED | libc::MAP_ANONYMOUS, -1, 0) };
        if p == libc::MAP_FAILED {
            return false;
        }
        (self.ptr, self.len) = (p as *mut u8, len);
        true
    }

    fn release(&mut self) {
        if self.len > 0 {
            // SAFETY: our mapping.
            unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
            (self.ptr, self.len) = (std::ptr::null_mut(), 0);
        }
    }
}

/// Reads the pagemap words of `pages` pages from `start` into `buf`.
///
/// # Safety
/// `buf` holds `pages` words.
unsafe fn read_pagemap(pagemap: i32, start: usize, pages: usize, buf: *mut u64) -> bool {
    let page = shm::page_size();
    let bytes = pages * 8;
    let mut done = 0usize;
    while done < bytes {
        // SAFETY: the caller's buffer.  Bare: this runs while the write guard is armed.
        let r = unsafe { bare_syscall(libc::SYS_pread64, [pagemap as usize, buf as usize + done, bytes - done, start / page * 8 + done, 0]) };
        if r <= 0 {
            return false;
        }
        done += r as usize;
    }
    true
}

/// Fills `p`'s run list with the runs of its pages (anonymous private memory) that hold
/// data, from its two pagemap scans: present or swapped out before the write guard was
/// armed, or present after (a page another thread touched in between).  The second scan
/// cannot count swap entries: the guard's markers on never-touched pages look like them.
/// The other pages were never written (or were discarded) and read as zeros, like the
/// fresh memfd they move to, so the rebind neither copies them nor makes them take
/// memory in the backing: registering a large, mostly untouched buffer costs what was
/// touched.  Leaves `COPY_ALL` when a scan failed.  Writes only the scratch mapping: it
/// runs while the guard is armed.
fn data_runs(p: &Piece, scanned: bool) {
    const PRESENT: u64 = 1 << 63;
    const SWAPPED: u64 = 1 << 62;
    let page = shm::page_size();
    let pages = p.len / page;
    // SAFETY: p.runs has room for a count and p.cap pairs, p.scan for 2 * pages words
    // (laid out by rebind_into in the scratch mapping).
    unsafe {
        *p.runs = COPY_ALL;
        if !scanned || p.cap < pages / 2 + 1 {
            return;
        }
        let (before, after) = (p.scan, p.scan.add(pages));
        let pairs = p.runs.add(1);
        let mut n = 0usize;
        for i in 0..pages {
            if *before.add(i) & (PRESENT | SWAPPED) == 0 && *after.add(i) & PRESENT == 0 {
                continue;
            }
            if n > 0 && *pairs.add(2 * (n - 1)) + *pairs.add(2 * (n - 1) + 1) == i * page {
                *pairs.add(2 * (n - 1) + 1) += page;
            } else {
                *pairs.add(2 * n) = i * page;
                *pairs.add(2 * n + 1) = page;
                n += 1;
            }
        }
        *p.runs = n;
    }
}

/// Holds other threads' writes to ranges being copied and swapped, so that none lands on
/// an old page after its copy: userfaultfd write-protection (Linux 6.4+ for the
/// protection of never-touched pages).  A thread that writes a protected page sleeps in
/// its page fault until the guard is dropped, then retries the write, which lands on the
/// new page.  Signals are blocked on the registering thread meanwhile (a handler writing
/// a protected page would wait for itself).  Where the process may (CAP_SYS_PTRACE or
/// vm.unprivileged_userfaultfd=1) the kernel's writes for other threads (a read(2) into
/// a protected page) are held the same way; otherwise the guard works in user mode only
/// (UFFD_USER_MODE_ONLY, no privilege needed) and such writes fail with EFAULT during
/// the window.  Without userfaultfd, or for memory it cannot protect, the copy runs
/// unguarded (the documented caveat).
struct WriteGuard {
    fd: i32,
    old_mask: libc::sigset_t,
}

#[repr(C)]
struct UffdRange {
    start: u64,
    len: u64,
}

impl WriteGuard {
    const API: u64 = 0xaa;
    const FEATURE_WP_UNPOPULATED: u64 = 1 << 13;
    const IOC_API: libc::c_ulong = 0xc018_aa3f; // _IOWR(0xaa, 0x3f, struct uffdio_api)
    const IOC_REGISTER: libc::c_ulong = 0xc020_aa00; // _IOWR(0xaa, 0x00, struct uffdio_register)
    const IOC_WRITEPROTECT: libc::c_ulong = 0xc018_aa06; // _IOWR(0xaa, 0x06, struct uffdio_writeprotect)
    const REGISTER_MODE_WP: u64 = 1 << 1;
    const WRITEPROTECT_MODE_WP: u64 = 1 << 0;
    const USER_MODE_ONLY: libc::c_long = 1;

    fn new() -> Option<WriteGuard> {
        // Set once userfaultfd is known not to work here (no such system call, refused by
        // a filter, no write protection of unpopulated pages): not asked again.
        static MISSING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        let permanent = |e: Error| !matches!(e, Error::Os(libc::EMFILE) | Error::Os(libc::ENFILE) | Error::Os(libc::ENOMEM));
        if MISSING.load(Ordering::Relaxed) || !crate::env::get_bool("SOFTNIC_REGISTER_GUARD") {
            return None;
        }
        // SAFETY: plain system calls on a descriptor we own.
        unsafe {
            let flags = (libc::O_CLOEXEC | libc::O_NONBLOCK) as libc::c_long;
            // Holding the kernel's writes too needs privilege (CAP_SYS_PTRACE,
            // vm.unprivileged_userfaultfd=1, or access to /dev/userfaultfd); tried once,
            // then user mode only.
            let mut fd = -1;
            if KERNEL_WRITES_HELD.load(Ordering::Relaxed) == 0 && !crate::env::get_bool("SOFTNIC_REGISTER_GUARD_KERNEL") {
                KERNEL_WRITES_HELD.store(2, Ordering::Relaxed);
            }
            if KERNEL_WRITES_HELD.load(Ordering::Relaxed) != 2 {
                fd = libc::syscall(libc::SYS_userfaultfd, flags) as i32;
                if fd < 0 {
                    // Linux 6.1+: whoever may open /dev/userfaultfd gets it whole.
                    const USERFAULTFD_IOC_NEW: libc::c_ulong = 0xaa00; // _IO(0xaa, 0x00)
                    let dev = libc::open(c"/dev/userfaultfd".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
                    if dev >= 0 {
                        fd = libc::ioctl(dev, USERFAULTFD_IOC_NEW, flags as libc::c_int);
                        libc::close(dev);
                    }
                }
                KERNEL_WRITES_HELD.store(if fd >= 0 { 1 } else { 2 }, Ordering::Relaxed);
            }
            if fd < 0 {
                fd = libc::syscall(libc::SYS_userfaultfd, flags | Self::USER_MODE_ONLY) as i32;
            }
            if fd < 0 {
                let e = Error::last_os();
                MISSING.store(permanent(e), Ordering::Relaxed);
                Self::unavailable("userfaultfd", e);
                return None;
            }
            let mut api = [Self::API, Self::FEATURE_WP_UNPOPULATED, 0u64];
            if libc::ioctl(fd, Self::IOC_API, api.as_mut_ptr()) != 0 {
                let e = Error::last_os();
                MISSING.store(permanent(e), Ordering::Relaxed);
                Self::unavailable("UFFDIO_API with WP_UNPOPULATED", e);
                libc::close(fd);
                return None;
            }
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut old_mask: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old_mask);
            Some(WriteGuard { fd, old_mask })
        }
    }

    /// Says once (SOFTNIC_LOG=info) that registrations run unguarded, and why.  Called
    /// before anything is protected, so it may allocate.
    fn unavailable(what: &str, e: Error) {
        static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        // Not while other threads are parked (one may hold the allocator's lock).
        if crate::stop::parking() {
            return;
        }
        if !SAID.swap(true, Ordering::Relaxed) {
            crate::sn_info!("fabric", "registrations copy pages unguarded (another thread's write during one can be lost): {} failed: {}", what, e);
        }
    }

    /// Write-protects `[start, start+len)` (one anonymous private mapping); false when the
    /// kernel refuses (the range stays unguarded).  Allocates nothing and makes its calls
    /// bare (see `rebind_into`).
    fn protect(&self, start: usize, len: usize) -> bool {
        let range = UffdRange { start: start as u64, len: len as u64 };
        let mut reg = [range.start, range.len, Self::REGISTER_MODE_WP, 0u64];
        // SAFETY: ioctls on our userfaultfd with properly sized argument blocks.
        unsafe {
            if bare_syscall(libc::SYS_ioctl, [self.fd as usize, Self::IOC_REGISTER as usize, reg.as_mut_ptr() as usize, 0, 0]) != 0 {
                return false;
            }
            // Registered but not protected (refused): closing the descriptor unregisters it.
            let mut wp = [range.start, range.len, Self::WRITEPROTECT_MODE_WP];
            bare_syscall(libc::SYS_ioctl, [self.fd as usize, Self::IOC_WRITEPROTECT as usize, wp.as_mut_ptr() as usize, 0, 0]) == 0
        }
    }
}

/// Whether the write guard holds writes the kernel makes for other threads too (a
/// read(2) into a guarded page waits instead of failing with EFAULT): 0 not tried yet,
/// 1 yes, 2 no (userfaultfd in user mode only).
static KERNEL_WRITES_HELD: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Does the write guard hold the kernel's writes into guarded pages too (see
/// [`WriteGuard`]), not only other threads' own stores?
pub fn register_guard_holds_kernel_writes() -> bool {
    register_guard_available() && KERNEL_WRITES_HELD.load(Ordering::Relaxed) == 1
}

/// Can registrations hold other threads' writes while they copy (see [`WriteGuard`])?
/// False without userfaultfd (kernels before 6.4, seccomp filters such as container
/// defaults, valgrind) or with `SOFTNIC_REGISTER_GUARD=0`.
pub fn register_guard_available() -> bool {
    WriteGuard::new().is_some()
}

impl Drop for WriteGuard {
    fn drop(&mut self) {
        // SAFETY: our descriptor; closing it unregisters what is still registered (pieces
        // whose swap failed) and wakes every held writer, which then retries its write.
        // Bare: the guard is armed until the descriptor is closed.
        unsafe {
            bare_syscall(libc::SYS_close, [self.fd as usize, 0, 0, 0, 0]);
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.old_mask, std::ptr::null_mut());
        }
    }
}

/// Is this process running under valgrind?  The client request RUNNING_ON_VALGRIND: a
/// magic instruction sequence (four rotations of rdi that cancel out, then xchg rbx,rbx)
/// that valgrind's JIT recognises and answers in rdx; natively it leaves the default 0.
fn under_valgrind() -> bool {
    static ANSWER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ANSWER.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            const RUNNING_ON_VALGRIND: u64 = 0x1001;
            let args: [u64; 6] = [RUNNING_ON_VALGRIND, 0, 0, 0, 0, 0];
            let mut answer: u64 = 0;
            // SAFETY: natively a no-op (rdi rotated by 128 bits in all, rbx swapped with
            // itself); under valgrind it reads `args` and writes rdx.
            unsafe {
                std::arch::asm!(
                    "rol rdi, 3", "rol rdi, 13", "rol rdi, 61", "rol rdi, 51", "xchg rbx, rbx",
                    inout("rdx") answer, in("rax") args.as_ptr(), inout("rdi") 0u64 => _,
                    options(nostack)
                )
            };
            answer != 0
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    })
}

/// Copies `n` bytes from `src` to `dst` (ours, not overlapping).  Under valgrind the kernel
/// copies them (process_vm_readv on ourselves): the pages may hold bytes memcheck marks
/// unaddressable (its heap arena's redzones and free space), and reading those is correct
/// here but would be reported.  The copied bytes are then all "defined" to memcheck.
///
/// Returns false when the source turned out unmapped (another thread unmapped part of a
/// window meanwhile): nothing more is copied, and the caller gives the piece up.
///
/// # Safety
/// `dst` mapped writable for `n` bytes; `src` mapped readable for `n` bytes when the copy
/// began (it may be unmapped meanwhile, see above).
unsafe fn copy_pages(src: *const u8, dst: *mut u8, n: usize) -> bool {
    if under_valgrind() {
        let mut done = 0usize;
        while done < n {
            let l = libc::iovec { iov_base: (dst as usize + done) as *mut libc::c_void, iov_len: n - done };
            let r = libc::iovec { iov_base: (src as usize + done) as *mut libc::c_void, iov_len: n - done };
            // SAFETY: the caller's ranges; our own pid.
            let got = unsafe { libc::process_vm_readv(libc::getpid(), &l, 1, &r, 1, 0) };
            if got <= 0 {
                if got < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EFAULT) {
                    return false;
                }
                break; // then copy the rest directly
            }
            done += got as usize;
        }
        if done == n {
            return true;
        }
        // SAFETY: the caller's contract, the part not copied yet.
        unsafe { std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), n - done) };
        return true;
    }
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, n) };
    true
}

/// Is piece `p` still one private anonymous mapping with the protection it had?  One
/// bare PROCMAP_QUERY (no allocation, no libc: it runs while the write guard is armed).
fn still_mapped(maps_fd: i32, p: &Piece) -> bool {
    const PROCMAP_QUERY: usize = 0xc068_6611;
    const RWX: u64 = 7;
    const SHARED: u64 = 8;
    let mut q = ProcmapQuery { size: std::mem::size_of::<ProcmapQuery>() as u64, query_addr: p.start as u64, ..Default::default() };
    // SAFETY: an ioctl on our descriptor with a properly sized argument and no name buffer.
    let r = unsafe { bare_syscall(libc::SYS_ioctl, [maps_fd as usize, PROCMAP_QUERY, &mut q as *mut ProcmapQuery as usize, 0, 0]) };
    // PROT_READ/WRITE/EXEC are the query's bits 1/2/4.
    r == 0 && q.vma_start as usize <= p.start && q.vma_end as usize >= p.start + p.len && q.vma_flags & (RWX | SHARED) == p.prot as u64 && q.inode == 0
}

/// Copies `len` bytes at offset `off` of piece `p` into its memfd: written into the file
/// (pwrite: the kernel takes the new pages without zeroing them first and without a page
/// fault each, several times cheaper than storing through the mapping), then mapped into
/// the temporary mapping in one call (so the program takes no fault on them after the
/// swap).  Under valgrind, or where a write fails, copied through the mapping instead.
///
/// False when the source is gone: a window's pages beyond what the caller registers may
/// be unmapped by another thread at any time (then the kernel's copy answers EFAULT, where
/// a copy through the mapping would crash), and the piece is given up.
///
/// # Safety
/// `off..off+len` lies inside the piece.
unsafe fn fill(p: &Piece, off: usize, len: usize) -> bool {
    const MADV_POPULATE_WRITE: usize = 23;
    let mut done = 0usize;
    if !under_valgrind() {
        while done < len {
            // SAFETY: the source lies in the piece's mapped range, the file offset in the block.
            let r = unsafe { bare_syscall(libc::SYS_pwrite64, [p.fd as usize, p.start + off + done, len - done, p.off + off + done, 0]) };
            if r == -(libc::EFAULT as isize) {
                return false;
            }
            if r <= 0 {
                break;
            }
            done += r as usize;
        }
        if done > 0 {
            // SAFETY: madvise on our temporary mapping; failure only costs later faults.
            unsafe { bare_syscall(libc::SYS_madvise, [p.tmp as usize + off, done, MADV_POPULATE_WRITE, 0, 0]) };
        }
    }
    if done < len {
        // SAFETY: the caller's contract; the part not written yet.
        return unsafe { copy_pages((p.start + off + done) as *const u8, p.tmp.add(off + done), len - done) };
    }
    true
}

/// Copies each piece into its temporary shared mapping and swaps it over the original.
/// Returns how many pieces were swapped and the errno of a failed swap (0 if none).
///
/// Writes nothing but the temporary mappings and this thread's registers/stack (not even
/// errno or its thread control block: every system call is bare), and allocates
/// nothing, so the copy is exact as long as no other thread writes the pages.
fn copy_and_swap(pieces: &[Piece], maps_fd: i32) -> (usize, i32) {
    for (k, p) in pieces.iter().enumerate() {
        if p.verify && !still_mapped(maps_fd, p) {
            return (k, libc::EAGAIN);
        }
        // SAFETY: p.start..+len is mapped readable (checked against /proc/self/maps);
        // p.tmp is our fresh mapping of the same length.
        unsafe {
            let n = if p.runs.is_null() { COPY_ALL } else { *p.runs };
            let copied = if n == COPY_ALL {
                fill(p, 0, p.len)
            } else {
                // The run list: see `Piece::runs`.
                let pairs = p.runs.add(1);
                (0..n).all(|k| fill(p, *pairs.add(2 * k), *pairs.add(2 * k + 1)))
            };
            if !copied {
                return (k, libc::EAGAIN);
            }
            if p.prot != libc::PROT_READ | libc::PROT_WRITE {
                let r = bare_syscall(libc::SYS_mprotect, [p.tmp as usize, p.len, p.prot as usize, 0, 0]);
                if r < 0 {
                    return (k, (-r) as i32);
                }
            }
            let r = mremap_fixed(p.tmp as usize, p.len, p.start);
            if r < 0 {
                return (k, (-r) as i32);
            }
        }
    }
    (pieces.len(), 0)
}

/// `mremap(from, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to)` as a bare system call:
/// MPI libraries interpose mremap(3) for their memory hooks (UCX, libfabric), and some of
/// those wrappers drop the fifth argument MREMAP_FIXED needs (seen under MPICH: the pages
/// landed at address 0).  Returns the new address or -errno.
///
/// # Safety
/// As mremap: `from..+len` is a mapping of ours, `to..+len` may be replaced.
#[inline(always)]
unsafe fn mremap_fixed(from: usize, len: usize, to: usize) -> isize {
    // SAFETY: the caller's contract.
    unsafe { bare_syscall(libc::SYS_mremap, [from, len, len, (libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED) as usize, to]) }
}

/// A system call made inline, without libc: the calls between the copy and the swap
/// must not go through a wrapper a memory hook interposes (UCX hooks madvise and mremap;
/// a hook may allocate or lock while the write guard holds other threads), nor through
/// a first PLT resolution.  Returns the result or -errno.
///
/// # Safety
/// As the system call `nr` with these arguments.
#[inline(always)]
unsafe fn bare_syscall(nr: libc::c_long, a: [usize; 5]) -> isize {
    #[cfg(target_arch = "x86_64")]
    {
        let ret: isize;
        // SAFETY: the Linux x86-64 system call convention; rcx and r11 are clobbered.
        unsafe {
            std::arch::asm!("syscall", inlateout("rax") nr as isize => ret, in("rdi") a[0], in("rsi") a[1],
                in("rdx") a[2], in("r10") a[3], in("r8") a[4], lateout("rcx") _, lateout("r11") _, options(nostack));
        }
        ret
    }
    #[cfg(target_arch = "aarch64")]
    {
        let ret: isize;
        // SAFETY: the Linux arm64 system call convention.
        unsafe {
            std::arch::asm!("svc 0", in("x8") nr as usize, inlateout("x0") a[0] as isize => ret, in("x1") a[1],
                in("x2") a[2], in("x3") a[3], in("x4") a[4], options(nostack));
        }
        ret
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        // SAFETY: as above, through libc.
        let r = unsafe { libc::syscall(nr, a[0], a[1], a[2], a[3], a[4]) };
        if r == -1 { -(unsafe { *libc::__errno_location() } as isize) } else { r as isize }
    }
}

struct SendPieces(Vec<Piece>);
// SAFETY: the pointers are our private temporary mappings, handed to one helper thread.
unsafe impl Send for SendPieces {}

static STACK_WAKE: AtomicU32 = AtomicU32::new(0);

/// Runs [`copy_and_swap`] on a helper thread while this thread sleeps in `futex` with all
/// signals blocked — used when the pages include this thread's own stack, whose frames
/// (return addresses, the syscall's own frame) would otherwise change after the copy.
fn copy_and_swap_off_stack(pieces: Vec<Piece>) -> Result<((usize, i32), Vec<Piece>)> {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
    let word = &STACK_WAKE as *const AtomicU32 as usize;
    STACK_WAKE.store(0, Ordering::SeqCst);
    let job = SendPieces(pieces);
    // SAFETY: sigset_t is plain data, filled by sigfillset.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    let h = std::thread::Builder::new()
        .name("softnic-rebind".into())
        .spawn(move || {
            let job = job;
            // Wait until the caller is inside futex(WORD): only then is its stack quiet.
            let path = format!("/proc/self/task/{}/syscall", tid);
            let stat = format!("/proc/self/task/{}/stat", tid);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            let mut ok = false;
            while std::time::Instant::now() < deadline {
                match std::fs::read_to_string(&path) {
                    Ok(s) => {
                        let mut f = s.split_ascii_whitespace();
                        let nr = f.next().and_then(|x| x.parse::<i64>().ok());
                        let a1 = f.next().and_then(|x| usize::from_str_radix(x.trim_start_matches("0x"), 16).ok());
                        if nr == Some(libc::SYS_futex) && a1 == Some(word) {
                            ok = true;
                            break;
                        }
                    }
                    Err(_) => {
                        // No syscall file (kernel without it): settle for "sleeping", then a grace period.
                        if let Ok(s) = std::fs::read_to_string(&stat) {
                            if s.rsplit(')').next().map_or(false, |r| r.trim_start().starts_with('S')) {
                                std::thread::sleep(std::time::Duration::from_millis(2));
                                ok = true;
                                break;
                            }
                        }
                    }
                }
                std::thread::sleep(std::time::Duration::from_micros(20));
            }
            let r = if ok { copy_and_swap(&job.0, -1) } else { (0, libc::ETIMEDOUT) };
            STACK_WAKE.store(1, Ordering::Release);
            // SAFETY: futex wake on a static word.
            unsafe { libc::syscall(libc::SYS_futex, word, libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, 1, 0usize, 0usize, 0u32) };
            (r, job)
        })
        .map_err(|e| Error::Os(e.raw_os_error().unwrap_or(libc::EAGAIN)))?;
    // SAFETY: sigset pointers are valid locals; blocking signals so no handler runs on
    // this stack while its pages are copied.
    unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        while STACK_WAKE.load(Ordering::Acquire) == 0 {
            libc::syscall(libc::SYS_futex, word, libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG, 0, 0usize, 0usize, 0u32);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
    let (r, job) = h.join().map_err(|_| Error::Os(libc::EIO))?;
    Ok((r, job.0))
}

/// Rebinds `[start, end)` (page aligned, fully mapped by `maps`, inside one block) into
/// block backing `b`, each page at its offset in the block.  Returns the number of bytes
/// from `start` that were rebound.
///
/// `widen`: rebind the window around `[gs, ge)` (see [`window`]) instead of exactly it.
/// Returns the range that was rebound: it starts at or before `gs`, and ends at or
/// after `ge` unless a piece failed (then before it; nothing rebound is an error).
#[inline(never)] // its frame must lie near the probe (see `OwnZone`)
fn rebind_into(b: &Backing, gs: usize, ge: usize, maps: &[Vma], widen: bool) -> Result<(usize, usize)> {
    // What this thread writes until the swap is done (see `OwnZone`).
    let probe = 0u8;
    let zone = OwnZone::here(std::hint::black_box(&probe) as *const u8 as usize);
    // Whether this thread is the process's only one: read once, when it matters.
    let mut alone_memo: Option<bool> = None;
    let mut alone = || *alone_memo.get_or_insert_with(only_thread);
    // A window, and whether the other threads must be parked while it is copied.
    let mode = if widen && window_bytes() > 0 && !FORKING.load(Ordering::Acquire) && !zone.overlaps(gs, ge) { window_mode(&mut alone) } else { None };
    let widen = mode.is_some();
    let park_for_window = mode == Some(true);
    let (start, end) = if widen { window(gs, ge, maps, &b.bound, zone) } else { (gs, ge) };
    // Pages not copied below must read as zeros in the memfd (a late write of a peer
    // through a registration that ended may have filled the hole since it was punched).
    // Ranges of up to SCAN_MIN_PAGES are copied whole.
    if end - start > SCAN_MIN_PAGES * shm::page_size() {
        punch(b, start, end);
    }
    let fd = &b.fd;
    let mut pieces: Vec<Piece> = Vec::new();
    let cleanup = |pieces: &[Piece]| {
        for p in pieces {
            // SAFETY: our temporary mappings, not yet moved.
            unsafe { libc::munmap(p.tmp as *mut libc::c_void, p.len) };
        }
    };
    for v in maps.iter().filter(|v| v.end > start && v.start < end) {
        let s = v.start.max(start);
        let e = v.end.min(end);
        let prot = libc::PROT_READ | if v.w { libc::PROT_WRITE } else { 0 } | if v.x { libc::PROT_EXEC } else { 0 };
        // SAFETY: a fresh mapping of our memfd at a kernel-chosen address.
        let tmp = unsafe {
            libc::mmap(std::ptr::null_mut(), e - s, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd.0, (s - b.base) as libc::off_t)
        };
        if tmp == libc::MAP_FAILED {
            let err = Error::last_os();
            cleanup(&pieces);
            return Err(err);
        }
        pieces.push(Piece { start: s, len: e - s, prot, tmp: tmp as *mut u8, fd: fd.0, off: s - b.base, verify: false, runs: std::ptr::null_mut(), cap: 0, scan: std::ptr::null_mut() });
    }
    // Does this thread write the range until the swap (its stack near the stack pointer,
    // its thread control block)?
    let on_stack = zone.overlaps(start, end);
    // Copy only pages that hold data, in anonymous private memory (an untouched page of a
    // file mapping reads as the file), and hold other threads' writes to those pieces
    // (WriteGuard) from before the pagemap read until after the swap.  Not when this
    // thread writes the range meanwhile (`on_stack`).  Between arming the guard and
    // dropping it nothing may allocate or take a lock (a thread held in a page fault may
    // hold the allocator's), nor write a static or thread-local (they may lie in a
    // guarded window): system calls are bare.
    let _ = under_valgrind(); // decided now: it writes a static the first time
    let widened = (start, end) != (gs, ge);
    let maps_fd = if widened { maps_fd().unwrap_or(-1) } else { -1 };
    let page = shm::page_size();
    let anon: Vec<bool> = maps
        .iter()
        .filter(|v| v.end > start && v.start < end)
        .map(|v| !on_stack && !v.shared && v.inode == 0 && (v.path.is_empty() || v.path == "[heap]"))
        .collect();
    // Whether other threads can be parked around the copy ([`crate::stop`]), decided now
    // (it may allocate): not when this is the only thread (nobody to park) or a helper
    // copies (on_stack).  Pieces no guard can hold (a program's initialised statics) and
    // windows whose guard cannot hold the kernel's writes park them before the guard is
    // armed (a thread parked then makes no system call into a guarded page, which would
    // fail); pieces whose guard fails park them just before the copy.
    let file_pieces = anon.iter().any(|a| !a);
    // (Not under valgrind, which runs one thread at a time and does not deliver the
    // signal the way parking needs.)
    let park_ready = !on_stack && !under_valgrind() && (park_for_window || file_pieces || !register_guard_available_cached()) && !alone() && crate::stop::prepare();
    // Pieces big enough that finding their untouched pages pays: the scratch mapping
    // holds, per such piece, two pagemap words per page and a run list (count + room for
    // one run per two pages, plus one).  Smaller ones are copied whole.
    let scan = |p: &Piece, a: bool| a && p.len / page > SCAN_MIN_PAGES;
    let words = |p: &Piece| 2 * (p.len / page) + 1 + 2 * (p.len / page / 2 + 1);
    let total: usize = pieces.iter().zip(&anon).filter(|(p, a)| scan(p, **a)).map(|(p, _)| words(p)).sum();
    let mut scratch = SCRATCH.lock().unwrap_or_else(|e| e.into_inner());
    let room = total > 0 && scratch.reserve(total * 8);
    let pagemap = if room { pagemap_fd().unwrap_or(-1) } else { -1 };
    let mut guard = None;
    let mut unguarded = false;
    // Whether each piece's first scan worked.
    let mut scanned = vec![false; pieces.len()];
    if room && pagemap >= 0 {
        let mut at = 0usize;
        for (p, _) in pieces.iter_mut().zip(&anon).filter(|(p, a)| scan(p, **a)) {
            let pages = p.len / page;
            p.cap = pages / 2 + 1;
            // SAFETY: inside the scratch mapping (reserved above).
            unsafe {
                p.scan = (scratch.ptr as *mut u64).add(at);
                p.runs = (scratch.ptr as *mut usize).add(at + 2 * pages);
            }
            at += words(p);
        }
        for (k, p) in pieces.iter().enumerate().filter(|(_, p)| !p.runs.is_null()) {
            // SAFETY: p.scan holds 2 * pages words.
            scanned[k] = unsafe { read_pagemap(pagemap, p.start, p.len / page, p.scan) };
        }
    }
    for (p, a) in pieces.iter_mut().zip(&anon) {
        p.verify = widened && *a && maps_fd >= 0;
    }
    // From here to the release nothing may allocate or take a lock (a parked thread may
    // hold the allocator's).
    let mut parked = if park_ready && (park_for_window || file_pieces) { crate::stop::park_others() } else { None };
    if park_for_window && parked.is_none() {
        // A window without its threads parked: only the pages asked for.
        drop(scratch);
        cleanup(&pieces);
        return rebind_into(b, gs, ge, maps, false);
    }
    let mut unparked = file_pieces && park_ready && parked.is_none();
    if anon.iter().any(|a| *a) {
        // Armed from here to its drop: this thread writes nothing but its stack, the
        // scratch and the temporary mappings, and neither allocates nor locks.
        guard = WriteGuard::new();
        for (k, (p, _)) in pieces.iter().zip(&anon).enumerate().filter(|(_, (_, a))| **a) {
            if let Some(g) = &guard {
                if !g.protect(p.start, p.len) {
                    unguarded = true;
                }
            }
            if !p.runs.is_null() {
                // SAFETY: the second half of p.scan.
                let again = unsafe { read_pagemap(pagemap, p.start, p.len / page, p.scan.add(p.len / page)) };
                data_runs(p, scanned[k] && again);
            }
        }
    }
    if (guard.is_none() || unguarded || (maps_fd < 0 && widened)) && widened {
        // Never widen unguarded or unchecked: rebind only the pages asked for.
        drop(guard);
        drop(parked);
        drop(scratch);
        cleanup(&pieces);
        return rebind_into(b, gs, ge, maps, false);
    }
    let n = pieces.len();
    let (done, errno) = if on_stack {
        let (r, pieces) = copy_and_swap_off_stack(pieces)?;
        cleanup(&pieces[r.0..]);
        r
    } else {
        // Anonymous pieces the guard does not hold (no userfaultfd, or it refused them):
        // the other threads are parked now, until after the swap.  (A thread held in a
        // guarded page fault parks only if the kernel interrupts its wait for the signal,
        // else parking gives up.)
        let exposed = anon.iter().any(|a| *a) && (guard.is_none() || unguarded);
        if parked.is_none() && exposed && park_ready {
            parked = crate::stop::park_others();
            unparked |= parked.is_none();
        }
        let r = copy_and_swap(&pieces, maps_fd);
        // Writers held by the guard go on now, on the new pages (or the old ones where
        // the swap failed); then the parked threads (after the guard: a system call of
        // theirs into a page guarded in user mode only would fail).
        drop(guard);
        drop(parked);
        // Pieces from the failed one on were not moved: drop their temporary mappings.
        cleanup(&pieces[r.0..]);
        r
    };
    if unparked {
        unparked_warning();
    }
    if errno != 0 {
        node::debug(&format!("rebind of {:#x}..{:#x} stopped at piece {} of {}: errno {}", start, end, done, n, errno));
    }
    // Bytes rebound = up to the first piece not swapped.
    let rebound = maps
        .iter()
        .filter(|v| v.end > start && v.start < end)
        .take(done)
        .map(|v| v.end.min(end) - v.start.max(start))
        .sum::<usize>();
    if rebound == 0 && errno == libc::EAGAIN && widened {
        // The window changed under us (another thread unmapped or remapped part of it):
        // only the pages asked for, with the scratch buffer free again for that attempt.
        drop(scratch);
        return rebind_into(b, gs, ge, maps, false);
    }
    if rebound == 0 {
        return Err(Error::Os(if errno != 0 { errno } else { libc::EIO }));
    }
    Ok((start, start + rebound))
}

/// What this thread writes itself, or has written for it by the kernel, while a rebind
/// copies and swaps, where no write guard may hold it (it would wait for itself):
/// - its stack, from well below the stack pointer (the frames of the calls the rebind
///   makes) to a little above it (the frame of [`rebind_into`], which is never inlined;
///   the frames of its callers are not written until it returns, after the swap, so a
///   buffer in an older frame or another coroutine's stack in the same mapping, above
///   the zone, is copied exactly);
/// - its thread control block and the static TLS beside it (errno, the cancellation
///   state libc's wrappers update, the rseq area the kernel writes whenever the thread
///   is preempted).
///
/// A range meeting the zone is rebound by a helper thread while this one sleeps in the
/// kernel ([`copy_and_swap_off_stack`]); a window never grows into it.
#[derive(Clone, Copy)]
struct OwnZone {
    z: [(usize, usize); 2],
}

impl OwnZone {
    const BELOW_SP: usize = 256 << 10;
    const ABOVE_SP: usize = 64 << 10;
    /// Around the thread pointer, both ways (static TLS lies below it on x86-64, above on
    /// arm64).
    const AROUND_TP: usize = 128 << 10;

    fn here(sp: usize) -> OwnZone {
        let pm = shm::page_size() - 1;
        let around = |x: usize, below: usize, above: usize| (x.saturating_sub(below) & !pm, x.saturating_add(above).saturating_add(pm) & !pm);
        // SAFETY: no preconditions; glibc returns the address of the thread's control block.
        let tp = unsafe { libc::pthread_self() } as usize;
        OwnZone { z: [around(sp, Self::BELOW_SP, Self::ABOVE_SP), around(tp, Self::AROUND_TP, Self::AROUND_TP)] }
    }

    fn overlaps(&self, s: usize, e: usize) -> bool {
        self.z.iter().any(|&(lo, hi)| s < hi && lo < e)
    }
}

/// Bytes of the aligned window a rebind covers around the pages asked for
/// (`SOFTNIC_REGISTER_WINDOW`, rounded down to a power of two; below a page = exactly
/// the pages asked for).  Widening makes the neighbours' later registrations cost only
/// bookkeeping.  It happens only where [`widenable`], with the write guard armed, and
/// only when nobody but the guard's own thread can write the window meanwhile in a way
/// the guard cannot hold ([`window_mode`]).  0 where windows are never used (no
/// PROCMAP_QUERY, no write guard).
fn window_bytes() -> usize {
    static W: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *W.get_or_init(|| {
        let w = crate::env::get_u64("SOFTNIC_REGISTER_WINDOW").min(BLOCK as u64) as usize;
        // Windows are checked with PROCMAP_QUERY (Linux 6.11+) before they are swapped.
        let queries = query_maps(&W as *const _ as usize, &W as *const _ as usize + 1, Names::Skip).is_some();
        if w < shm::page_size() || !queries || !register_guard_available() {
            0
        } else {
            1 << (usize::BITS - 1 - w.leading_zeros())
        }
    })
}

/// May a rebind starting now take a window, and must the other threads be parked while
/// it is copied (`Some(true)`)?  Pages nobody asked to register may hold what the kernel
/// writes for other threads at any moment (the rseq area in a thread control block, a
/// signal frame, a read(2) buffer).  A guard that holds the kernel's writes too makes
/// them wait; a guard in user mode only (no privilege) would make them fail (a failed
/// rseq update or signal frame kills the thread).  So, without that privilege: when the
/// calling thread is the process's only thread (no other thread exists to write, none can
/// appear before the swap is done: only this thread could create it, and its own signal
/// handlers are blocked by the guard), or with the other threads parked
/// ([`crate::stop`]: a parked thread makes no system call).  (Kernel threads that write
/// for the process, io_uring's workers, count as its threads; they do not park, and the
/// rebind then takes only the pages asked for.)
fn window_mode(alone: &mut impl FnMut() -> bool) -> Option<bool> {
    if register_guard_holds_kernel_writes() || alone() {
        Some(false)
    } else if !under_valgrind() && crate::stop::prepare() {
        Some(true)
    } else {
        None
    }
}

/// [`register_guard_available`], asked once.
fn register_guard_available_cached() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(register_guard_available)
}

/// Says once that a registration copied pages no guard holds with other threads running
/// (parking them failed: see [`crate::stop`]).
#[cold]
fn unparked_warning() {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        crate::sn_warn!("fabric", "a registration copied pages no write guard holds while other threads ran (they could not be parked): a write they made meanwhile may be lost");
    }
}

/// Is the calling thread the process's only one (/proc/self/stat's thread count)?
fn only_thread() -> bool {
    let Ok(stat) = crate::cancel::sys::read_file(c"/proc/self/stat") else { return false };
    // num_threads is field 20: the 18th after the ')' that ends the command name.
    let after = stat.iter().rposition(|&c| c == b')').map_or(&stat[..0], |i| &stat[i + 1..]);
    let count = after.split(|c| c.is_ascii_whitespace()).filter(|f| !f.is_empty()).nth(17);
    count == Some(&b"1"[..])
}

/// May a rebind take these pages though nobody asked to register them?  Anonymous
/// private read-write memory only (heap, anonymous mmap): the kind the write guard holds
/// writes to, without the side effects rebinding has elsewhere (a private file mapping
/// would stop reading the file, code would become shared).  Never the main thread's
/// [stack] (the caller's own stack is kept out by [`OwnZone`]), nor what looks like the
/// zero-filled tail (.bss) of a program or library, an unnamed mapping right after a
/// writable private one of a file (its .data): library state there would become shared
/// with a forked child.
fn widenable(v: &Vma) -> bool {
    if !(v.r && v.w && !v.x && !v.shared && v.inode == 0) {
        return false;
    }
    if v.path == "[heap]" {
        return true;
    }
    v.path.is_empty() && v.start > 0 && query_maps(v.start - 1, v.start, Names::Skip).is_some_and(|b| !b.iter().any(|p| p.end == v.start && p.inode != 0 && !p.shared && p.w))
}

/// The range a rebind of the gap `[gs, ge)` (inside one block) takes: the gap grown to
/// the aligned window of [`window_bytes`] around it, clipped to the mapping on each side
/// (only where that mapping is [`widenable`]), to the block, to pages already bound
/// (`bound`) and away from what this thread writes meanwhile (`zone`).
fn window(gs: usize, ge: usize, maps: &[Vma], bound: &[(usize, usize)], zone: OwnZone) -> (usize, usize) {
    let w = window_bytes();
    if w == 0 {
        return (gs, ge);
    }
    let vma_at = |a: usize| maps.iter().find(|v| v.start <= a && a < v.end);
    let block = gs & !(BLOCK - 1);
    let (mut ws, mut we) = (gs, ge);
    if let Some(v) = vma_at(gs).filter(|v| widenable(v)) {
        ws = (gs & !(w - 1)).max(v.start).max(block);
    }
    if let Some(v) = vma_at(ge - 1).filter(|v| widenable(v)) {
        we = ge.checked_add(w - 1).map_or(ge, |x| x & !(w - 1)).min(v.end).min(block + BLOCK);
    }
    let i = bound.partition_point(|r| r.1 <= gs);
    if i > 0 {
        ws = ws.max(bound[i - 1].1.min(gs));
    }
    if let Some(r) = bound.get(i) {
        we = we.min(r.0.max(ge));
    }
    for &(lo, hi) in &zone.z {
        if ws < hi && lo < gs {
            ws = hi.min(gs).max(ws);
        }
        if ge < hi && lo < we {
            we = lo.max(ge).min(we);
        }
    }
    (ws, we)
}

/// Tests that look at what is rebound after registrations end, and tests that fork (a
/// fork makes the windows no registration covers private again, see [`before_fork`]),
/// run one at a time.
#[cfg(test)]
pub(crate) fn tests_serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------------------
// Fork.

/// Runs [`before_fork`] and [`after_fork`] around every fork (the node layer below calls
/// them from its fork handlers); set when the library is loaded.
extern "C" fn set_fork_hooks() {
    node::BEFORE_FORK.set(|()| before_fork());
    node::AFTER_FORK.set(|()| after_fork());
}

#[used]
#[link_section = ".init_array"]
static SET_FORK_HOOKS: extern "C" fn() = set_fork_hooks;

/// Set from just before a fork until it returned: registrations made meanwhile rebind
/// only their own pages (see [`before_fork`]).
static FORKING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Called just before this process forks (pthread_atfork prepare handler).  A forked child
/// shares the rebound pages with its parent (MAP_SHARED), so the pages of a window that no
/// live registration covers are made private again here: a child that writes them before
/// it execs (glibc's fork resets the allocator's arena headers in the child, a child may
/// edit its environment) must not write the parent's memory.  The pages of live
/// registrations stay shared (the documented caveat).  Only where windows are used:
/// pages rebound exactly stay as before.
pub(crate) fn before_fork() {
    if window_bytes() == 0 {
        return;
    }
    let Ok(n) = node::get() else { return };
    let ctl = n.ctl();
    let mut st = state();
    FORKING.store(true, Ordering::Release);
    let maps_fd = maps_fd().unwrap_or(-1);
    for i in 0..st.backs.len() {
        let (attached, rebound) = match &st.backs[i] {
            Some(b) => (b.attached, b.kind == Kind::Rebound),
            None => continue,
        };
        if !attached || !rebound {
            continue;
        }
        let live = live_ranges(ctl, &st, i as u32);
        let b = st.backs[i].as_ref().expect("checked");
        let spare = ranges_sub(&b.bound, &live);
        let mut done = Vec::new();
        for (s, e) in spare {
            if unbind(b, s, e, maps_fd) {
                done.push((s, e));
            }
        }
        let b = st.backs[i].as_mut().expect("checked");
        b.bound = ranges_sub(&b.bound, &done);
        for (s, e) in done {
            punch(b, s, e);
        }
    }
}

/// Called in the parent and the child once a fork returned.
pub(crate) fn after_fork() {
    FORKING.store(false, Ordering::Release);
}

/// Makes `[s, e)`, pages of block backing `b` that no live registration covers, private
/// anonymous memory again: the data runs of the memfd copied into a fresh private mapping
/// that is swapped over them, under the write guard (other threads' writes are held).
/// False (nothing changed) when the range is no longer `b`'s mapping or cannot be guarded.
fn unbind(b: &Backing, s: usize, e: usize, maps_fd: i32) -> bool {
    const PROCMAP_QUERY: usize = 0xc068_6611;
    const SHARED: u64 = 8;
    const SEEK_DATA: usize = 3;
    const SEEK_HOLE: usize = 4;
    let Some(v) = query_maps(s, s + 1, Names::Skip).and_then(|m| m.into_iter().next()) else { return false };
    if v.start > s || v.end < e || v.inode != b.ino || !v.shared || b.base.wrapping_add(v.offset as usize) != v.start {
        return false;
    }
    let prot = libc::PROT_READ | if v.w { libc::PROT_WRITE } else { 0 } | if v.x { libc::PROT_EXEC } else { 0 };
    let len = e - s;
    // SAFETY: a fresh private anonymous mapping.
    let tmp = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
    if tmp == libc::MAP_FAILED {
        return false;
    }
    let tmp = tmp as usize;
    let page = shm::page_size();
    let mut scratch = SCRATCH.lock().unwrap_or_else(|e| e.into_inner());
    let cap = len / page / 2 + 1;
    let _ = under_valgrind();
    let guard = if scratch.reserve(cap * 16) { WriteGuard::new() } else { None };
    let moved = match &guard {
        Some(g) if g.protect(s, len) => {
            // Armed: bare calls only, writes to the scratch and `tmp` only (see rebind_into).
            // The data runs of the file (SEEK_DATA / SEEK_HOLE), then copied.
            let runs = scratch.ptr as *mut usize;
            let mut n = 0usize;
            let mut at = s - b.base;
            let end = e - b.base;
            while at < end && n < cap {
                // SAFETY: lseek on our memfd.
                let d = unsafe { bare_syscall(libc::SYS_lseek, [b.fd.0 as usize, at, SEEK_DATA, 0, 0]) };
                if d < 0 || d as usize >= end {
                    break;
                }
                // SAFETY: as above.
                let h = unsafe { bare_syscall(libc::SYS_lseek, [b.fd.0 as usize, d as usize, SEEK_HOLE, 0, 0]) };
                let h = if h < 0 { end } else { (h as usize).min(end) };
                // SAFETY: inside the scratch (cap pairs reserved).
                unsafe {
                    *runs.add(2 * n) = d as usize;
                    *runs.add(2 * n + 1) = h;
                }
                n += 1;
                at = h;
            }
            let mut q = ProcmapQuery { size: std::mem::size_of::<ProcmapQuery>() as u64, query_addr: s as u64, ..Default::default() };
            // SAFETY: an ioctl on our descriptor with a properly sized argument and no name.
            let r = unsafe { bare_syscall(libc::SYS_ioctl, [maps_fd as usize, PROCMAP_QUERY, &mut q as *mut ProcmapQuery as usize, 0, 0]) };
            let same = r == 0 && q.vma_start as usize <= s && q.vma_end as usize >= e && q.vma_flags & SHARED != 0 && q.inode == b.ino && q.vma_offset as usize == s - b.base;
            // (A run list cannot overflow: runs are at least a page apart.)
            if same {
                // SAFETY: each run lies in [s, e) (file offsets of the block), mapped by both
                // (a copy that finds the range unmapped meanwhile gives it up).
                let copied = (0..n).all(|k| unsafe {
                    let (d, h) = (*runs.add(2 * k), *runs.add(2 * k + 1));
                    copy_pages((b.base + d) as *const u8, (tmp + (b.base + d - s)) as *mut u8, h - d)
                });
                // SAFETY: our temporary mapping over the range, which is ours (checked).
                copied
                    && unsafe {
                        (prot == libc::PROT_READ | libc::PROT_WRITE || bare_syscall(libc::SYS_mprotect, [tmp, len, prot as usize, 0, 0]) == 0)
                            && mremap_fixed(tmp, len, s) >= 0
                    }
            } else {
                false
            }
        }
        _ => false,
    };
    drop(guard);
    drop(scratch);
    if !moved {
        // SAFETY: our temporary mapping, not moved.
        unsafe { libc::munmap(tmp as *mut libc::c_void, len) };
    }
    moved
}

// ---------------------------------------------------------------------------------------
// Public API.

/// Bytes rebound since the last sweep after which a registration sweeps first (see
/// [`sweep`]; also once the bytes bound at the last sweep were rebound again): ranges the
/// program unmapped and never registered again give their memory back then at the latest.
const SWEEP_MIN: usize = 32 << 20;

/// Most separate runs of rebound pages kept (each is a mapping of its own, and the
/// kernel allows some 65530 per process): past it, registrations make the pages of ended
/// registrations private again ([`trim_runs`]).  Windows rarely get near it; exactly
/// rebound pages do when a program registers pages scattered over a large region.
const RUN_BUDGET: usize = if cfg!(test) { 64 } else { 16384 };

/// Keeps the runs of rebound pages within [`RUN_BUDGET`]: when past it, runs of pages
/// that no live registration covers are made private again (see [`unbind`]: under the
/// write guard; without it nothing is done), an eighth of the budget at a time.
fn trim_runs(ctl: Ctl, st: &mut State) {
    let runs: usize = st.backs.iter().flatten().filter(|b| b.kind == Kind::Rebound && b.attached).map(|b| b.bound.len()).sum();
    if runs <= RUN_BUDGET {
        return;
    }
    let want = runs - RUN_BUDGET + RUN_BUDGET / 8;
    let maps_fd = maps_fd().unwrap_or(-1);
    let mut freed = 0usize;
    for i in 0..st.backs.len() {
        if freed >= want {
            break;
        }
        match &st.backs[i] {
            Some(b) if b.kind == Kind::Rebound && b.attached => {}
            _ => continue,
        }
        let live = live_ranges(ctl, st, i as u32);
        let b = st.backs[i].as_ref().expect("checked");
        let spare = ranges_sub(&b.bound, &live);
        let mut done: Vec<(usize, usize)> = Vec::new();
        for (s, e) in spare {
            if freed + done.len() >= want {
                break;
            }
            if unbind(b, s, e, maps_fd) {
                done.push((s, e));
            }
        }
        let b = st.backs[i].as_mut().expect("checked");
        b.bound = ranges_sub(&b.bound, &done);
        for &(s, e) in &done {
            punch(b, s, e);
        }
        freed += done.len();
    }
    node::debug(&format!("{} runs of rebound pages, past {}: {} made private again", runs, RUN_BUDGET, freed));
}

/// One part of a range being registered, by what holds its pages: `back` is the
/// attached backing whose memfd the program maps there at the matching offset, or none
/// (pages to rebind, or the fallback).
struct Part {
    s: usize,
    e: usize,
    back: Option<u32>,
}

/// Splits `[ps, pe)` (mapped without holes, as `maps` says) into [`Part`]s.
fn classify(st: &State, maps: &[Vma], ps: usize, pe: usize) -> Vec<Part> {
    let mut parts: Vec<Part> = Vec::new();
    for v in maps.iter().filter(|v| v.end > ps && v.start < pe) {
        let (s, e) = (v.start.max(ps), v.end.min(pe));
        let back = if is_our_backing_vma(v) {
            st.backs.iter().position(|b| matches!(b, Some(b) if b.attached && b.ino == v.inode && b.base.wrapping_add(v.offset as usize) == v.start)).map(|i| i as u32)
        } else {
            None
        };
        match parts.last_mut() {
            Some(p) if p.e == s && p.back == back => p.e = e,
            _ => parts.push(Part { s, e, back }),
        }
    }
    parts
}

/// Would a peer find each piece of a registration in the backing that holds it?  A peer
/// starts in the registration's first backing and reads on to that backing's end, then
/// looks up the backing of the next address (the narrowest live one that spans it, see
/// `rma::Peer::find_backing`).  `covers`: (start, end, backing) in address order,
/// neighbours in different backings.
fn peers_resolve(ctl: Ctl, st: &State, covers: &[(usize, usize, u32)]) -> bool {
    covers.windows(2).all(|w| {
        let Some(Some(prev)) = st.backs.get(w[0].2 as usize) else { return false };
        let next = (0..st.backs.len())
            .filter(|&i| ctl.back(i).is_some_and(|e| e.state.load(Ordering::Relaxed) == LIVE))
            .filter_map(|i| st.backs[i].as_ref().map(|b| (i, b)))
            .filter(|(_, b)| b.base <= w[1].0 && w[1].0 < b.base + b.len)
            .min_by_key(|(_, b)| b.len)
            .map(|(i, _)| i as u32);
        prev.base + prev.len == w[1].0 && next == Some(w[1].2)
    })
}

fn push_cover(covers: &mut Vec<(usize, usize, u32)>, s: usize, e: usize, back: u32) {
    match covers.last_mut() {
        Some(c) if c.1 == s && c.2 == back => c.1 = e,
        _ => covers.push((s, e, back)),
    }
}

/// Registers `[addr, addr+len)` for remote access with `access` rights under
/// protection-domain key `pd_key`.  See the module doc for what happens to the pages.
/// Errors: `InvalidArg` (null, zero length, wrapping, or a range not fully mapped),
/// `NoSpace` (tables full), `Os` (memfd/mmap failures).
pub fn register(addr: usize, len: usize, access: Access, pd_key: u64) -> Result<MemKey> {
    // Its system calls (reads of /proc, file descriptors) must not be cancellation points.
    let _masked = crate::cancel::Masked::new();
    if addr == 0 || len == 0 {
        return Err(Error::InvalidArg);
    }
    let end = addr.checked_add(len).ok_or(Error::InvalidArg)?;
    let pm = shm::page_size() - 1;
    let ps = addr & !pm;
    let pe = end.checked_add(pm).ok_or(Error::InvalidArg)? & !pm;
    // An injected "out of resources" (SOFTNIC_FAULTS=register...), after the argument
    // checks: bad arguments keep their own errors.
    if crate::faults::hit(crate::faults::Point::Register) {
        return Err(Error::NoSpace);
    }
    let n = node::get()?;
    let ctl = n.ctl();
    let mut st = state();
    let hint = st.free_hint.min(NREG);
    let slot = (hint..NREG).chain(0..hint).find(|&i| ctl.reg(i).expect("in range").state.load(Ordering::Relaxed) == FREE).ok_or(Error::NoSpace)?;
    let mut swept = false;
    if st.bound_since_sweep >= SWEEP_MIN.max(st.bound_at_sweep) {
        sweep(ctl, &mut st, false)?;
        swept = true;
    }
    make_room(ctl, &mut st)?;
    let (maps, parts) = loop {
        // The range, and the library's own backings that overlap it, whole.
        let (lo, hi) = st
            .backs
            .iter()
            .flatten()
            .filter(|b| b.kind == Kind::Owned && b.attached && b.base < pe && b.base + b.len > ps)
            .fold((ps, pe), |(lo, hi), b| (lo.min(b.base), hi.max(b.base + b.len)));
        let ours: Vec<(u64, u64)> = st.backs.iter().flatten().map(|b| (b.dev, b.ino)).collect();
        let maps = read_maps_range(lo, hi, Names::ExceptOurs(&ours))?;
        // The range must be mapped without holes.
        let mut cur = ps;
        for v in maps.iter().filter(|v| v.end > ps && v.start < pe) {
            if v.start > cur {
                return Err(Error::InvalidArg);
            }
            cur = v.end;
        }
        if cur < pe {
            return Err(Error::InvalidArg);
        }
        // Library memory the program has unmapped or replaced is never used again.
        for i in 0..st.backs.len() {
            let stale = match &st.backs[i] {
                Some(b) if b.kind == Kind::Owned && b.attached && b.base < pe && b.base + b.len > ps => !intact(b, &maps),
                _ => false,
            };
            if stale {
                node::debug(&format!("backing {} no longer mapped whole; detaching", i));
                detach_backing(ctl, &mut st, i as u32);
            }
        }
        let parts = classify(&st, &maps, ps, pe);
        // Pages to rebind that a block backing still counts as bound: the program has
        // unmapped or moved them since (free, heap trim, mremap).  Sweep before the block
        // takes them again.
        let stale = parts.iter().any(|p| p.back.is_none() && st.backs.iter().flatten().any(|b| b.kind == Kind::Rebound && b.attached && ranges_overlap(&b.bound, p.s, p.e)));
        if stale && !swept {
            sweep(ctl, &mut st, false)?;
            swept = true;
            continue;
        }
        break (maps, parts);
    };
    let mut fallback = parts.iter().filter(|p| p.back.is_none()).any(|p| maps.iter().filter(|v| v.end > p.s && v.start < p.e).any(|v| !rebindable(v)));
    if fallback && !crate::env::get_bool("SOFTNIC_RMA_FALLBACK") {
        // The user asked for shared pages or nothing (e.g. to be sure atomics work).
        return Err(Error::Unsupported);
    }

    // (start, end, backing) of the range in address order.
    let mut covers: Vec<(usize, usize, u32)> = Vec::new();
    if !fallback {
        for p in &parts {
            if let Some(i) = p.back {
                push_cover(&mut covers, p.s, p.e, i);
                continue;
            }
            let mut at = p.s;
            while at < p.e {
                let stop = ((at & !(BLOCK - 1)) + BLOCK).min(p.e);
                let bi = block_backing(ctl, &mut st, at)?;
                let mut cur = at;
                while cur < stop {
                    let b = st.backs[bi as usize].as_ref().expect("published");
                    let (ws, we) = rebind_into(b, cur, stop, &maps, true)?;
                    if we <= cur {
                        return Err(Error::Os(libc::EIO));
                    }
                    let b = st.backs[bi as usize].as_mut().expect("published");
                    ranges_add(&mut b.bound, ws, we);
                    st.bound_since_sweep += we - ws;
                    cur = we;
                }
                push_cover(&mut covers, at, stop, bi);
                at = stop;
            }
        }
        if !peers_resolve(ctl, &st, &covers) {
            crate::sn_debug!("fabric", "register {:#x}+{}: its pieces lie in backings peers could not tell apart; process_vm fallback", addr, len);
            fallback = true;
            covers.clear();
        }
    }
    let mut backs: Vec<u32> = Vec::with_capacity(covers.len());
    for c in &covers {
        if !backs.contains(&c.2) {
            backs.push(c.2);
        }
    }
    let first = covers.iter().find(|c| c.0 <= addr && addr < c.1).map_or(NO_BACKING, |c| c.2);
    for &i in &backs {
        if let Some(b) = st.backs[i as usize].as_mut() {
            b.refs += 1;
        }
    }
    if st.reg_backs.len() <= slot {
        st.reg_backs.resize_with(slot + 1, Vec::new);
    }
    st.reg_backs[slot] = backs;

    let e = ctl.reg(slot).expect("in range");
    // Seqlock writer: the generation already moved on at the last deregister; this fence
    // makes a peer that reads any of the new fields also see that generation.
    std::sync::atomic::fence(Ordering::Release);
    e.base.store(addr as u64, Ordering::Relaxed);
    e.len.store(len as u64, Ordering::Relaxed);
    e.writable.store(u32::from(access == Access::ReadWrite), Ordering::Relaxed);
    e.pd_key.store(pd_key, Ordering::Relaxed);
    e.backing.store(first, Ordering::Relaxed);
    for w in &e.notify {
        w.store(0, Ordering::Relaxed);
    }
    // Release: a peer that sees LIVE (with the key's generation) sees the fields.
    e.state.store(LIVE, Ordering::Release);
    if slot >= hint {
        st.free_hint = slot + 1;
    }
    // Counts this registration as live (its row is written).
    trim_runs(ctl, &mut st);
    let key = MemKey { index: slot as u32, generation: e.gen.load(Ordering::Relaxed) };
    crate::sn_debug!("fabric", "register {:#x}+{} -> {:?} ({})", addr, len, key, if fallback { "process_vm fallback" } else { "shared" });
    Ok(key)
}

/// Ends a registration.  Its key (and any copy a peer holds) is stale afterwards.
pub fn deregister(key: MemKey) -> Result<()> {
    // Its system calls (reads of /proc, file descriptors) must not be cancellation points.
    let _masked = crate::cancel::Masked::new();
    let n = node::get()?;
    let ctl = n.ctl();
    let mut st = state();
    let e = ctl.reg(key.index as usize).ok_or(Error::InvalidHandle)?;
    if e.state.load(Ordering::Relaxed) != LIVE || e.gen.load(Ordering::Relaxed) != key.generation {
        return Err(Error::StaleHandle);
    }
    // Generation first, so peers validating concurrently see a mismatch.  Steps of 2
    // keep registration generations odd: an all-zero handle never validates.
    e.gen.fetch_add(2, Ordering::Release);
    e.state.store(FREE, Ordering::Release);
    ctl.invalidated();
    st.free_hint = st.free_hint.min(key.index as usize);
    let backs = std::mem::take(&mut st.reg_backs[key.index as usize]);
    for b in backs {
        unref_backing(ctl, &mut st, b);
    }
    drop(st);
    // Whoever exposed it further (the network engine: peers' RMA windows onto it) forgets
    // it now, outside the lock (that may send to peers and serve their requests).
    ON_DEREGISTER.call(key);
    Ok(())
}

/// Looks up one of this process's registrations.
pub fn query(key: MemKey) -> Result<Region> {
    let ctl = node::get()?.ctl();
    let e = ctl.reg(key.index as usize).ok_or(Error::InvalidHandle)?;
    if e.state.load(Ordering::Acquire) != LIVE || e.gen.load(Ordering::Relaxed) != key.generation {
        return Err(Error::StaleHandle);
    }
    Ok(Region {
        base: e.base.load(Ordering::Relaxed),
        len: e.len.load(Ordering::Relaxed),
        access: if e.writable.load(Ordering::Relaxed) != 0 { Access::ReadWrite } else { Access::ReadOnly },
        pd_key: e.pd_key.load(Ordering::Relaxed),
        shared: e.backing.load(Ordering::Relaxed) != NO_BACKING,
    })
}

/// Allocates `len` bytes (rounded up to pages) of zeroed memory that is shared from the
/// start: registering it later needs no rebind, and rings in it can be named by
/// [`SharedMem::ring_loc`].
pub fn alloc_shared(len: usize) -> Result<SharedMem> {
    // Its system calls (reads of /proc, file descriptors) must not be cancellation points.
    let _masked = crate::cancel::Masked::new();
    if len == 0 {
        return Err(Error::InvalidArg);
    }
    let n = node::get()?;
    let ctl = n.ctl();
    let seg = shm::Segment::create(BACKING_NAME, len)?;
    let mut st = state();
    make_room(ctl, &mut st)?;
    let len = seg.map.len();
    let ino = seg.ino;
    let ptr = seg.map.leak();
    let dev = shm::fd_identity(seg.fd.0).map_or(0, |i| i.0);
    let b = Backing { base: ptr as usize, len, dev, ino, fd: seg.fd, kind: Kind::Owned, refs: 1, attached: true, bound: Vec::new() };
    match publish_backing(ctl, &mut st, b) {
        Ok((backing, backing_gen)) => Ok(SharedMem { ptr, len, backing, backing_gen }),
        Err(e) => {
            // SAFETY: the mapping we just leaked.
            unsafe { libc::munmap(ptr as *mut libc::c_void, len) };
            Err(e)
        }
    }
}

/// Frees memory from [`alloc_shared`].  Registrations inside it should be ended first;
/// peers' later accesses through a `RingLoc` into it get `Err(StaleHandle)`.
pub fn free_shared(m: SharedMem) -> Result<()> {
    // Its system calls (reads of /proc, file descriptors) must not be cancellation points.
    let _masked = crate::cancel::Masked::new();
    let n = node::get()?;
    let ctl = n.ctl();
    let mut st = state();
    let idx = m.backing;
    let ok = matches!(st.backs.get(idx as usize), Some(Some(b)) if b.kind == Kind::Owned && b.base == m.ptr as usize);
    if !ok {
        return Err(Error::InvalidHandle);
    }
    if let Some(b) = st.backs[idx as usize].as_mut() {
        b.refs = b.refs.saturating_sub(1);
    }
    detach_backing(ctl, &mut st, idx);
    // SAFETY: the mapping alloc_shared created; the caller gave up the SharedMem.
    unsafe { libc::munmap(m.ptr as *mut libc::c_void, m.len) };
    Ok(())
}

/// Where peers on this machine map registration `key` of this process as one piece: its
/// bytes inside the one backing that holds them all (for [`crate::rma::map_region`]).
/// `Ok(None)` when the registration spans several backings or uses the fallback.
/// `StaleHandle` / `InvalidHandle` as [`query`].
pub fn region_loc(key: MemKey) -> Result<Option<RingLoc>> {
    let ctl = node::get()?.ctl();
    let st = state();
    let e = ctl.reg(key.index as usize).ok_or(Error::InvalidHandle)?;
    if e.state.load(Ordering::Acquire) != LIVE || e.gen.load(Ordering::Relaxed) != key.generation {
        return Err(Error::StaleHandle);
    }
    let base = e.base.load(Ordering::Relaxed) as usize;
    let len = e.len.load(Ordering::Relaxed) as usize;
    // Peers map it as one piece only when one backing holds all of it.
    let Some([i]) = st.reg_backs.get(key.index as usize).map(|v| v.as_slice()) else { return Ok(None) };
    if let (Some(Some(b)), Some(row)) = (st.backs.get(*i as usize), ctl.back(*i as usize)) {
        if b.base <= base && base + len <= b.base + b.len {
            let gen = row.gen.load(Ordering::Acquire);
            return Ok(Some(RingLoc { backing: *i, backing_gen: gen, offset: (base - b.base) as u64, len: len as u64 }));
        }
    }
    Ok(None)
}

/// Number of backing memfds this process currently has (for tests and diagnostics).
pub fn backing_count() -> usize {
    state().backs.iter().flatten().count()
}

/// Names the ring that receives remote events for accesses to registration `key` (uGNI's
/// dst_cq of a memory registration), or none.  Stored in the registration's row of the
/// control segment, where peers read it with [`crate::rma::notify_ring`].  Call it before
/// the key is given to anyone: a peer reading the row while it changes may see a mix of
/// old and new words (it then fails validation in `rma::post_event`, or names another
/// ring of this process).  `Err(StaleHandle)` if `key` is not a live registration of ours,
/// `Err(InvalidHandle)` for an index out of range.
pub fn set_notify(key: MemKey, ring: Option<RingLoc>) -> Result<()> {
    let ctl = node::get()?.ctl();
    let _st = state(); // serialises with register/deregister of the same row
    let e = ctl.reg(key.index as usize).ok_or(Error::InvalidHandle)?;
    if e.state.load(Ordering::Relaxed) != LIVE || e.gen.load(Ordering::Relaxed) != key.generation {
        return Err(Error::StaleHandle);
    }
    let w = ring.map_or([0; 3], |r| r.to_words());
    // Length word last with Release: a reader that sees a non-zero length sees the rest.
    e.notify[0].store(w[0], Ordering::Relaxed);
    e.notify[1].store(w[1], Ordering::Relaxed);
    e.notify[2].store(w[2], Ordering::Release);
    Ok(())
}

#[cfg(test)]
mod maps_tests {
    use super::*;

    /// The PROCMAP_QUERY walk and the text of /proc/self/maps describe the same mappings.
    /// Compared on mappings of this test only (other tests' threads map and unmap
    /// meanwhile): an anonymous reservation split into RW / R / RW between PROT_NONE
    /// guards (so nothing merges into it), and one of our shared backings.
    #[test]
    fn queried_mappings_match_the_maps_file() {
        let page = shm::page_size();
        // SAFETY: a fresh private anonymous reservation of 5 pages, ours until the munmap.
        let base = unsafe { libc::mmap(std::ptr::null_mut(), 5 * page, libc::PROT_NONE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) } as usize;
        assert_ne!(base as *mut libc::c_void, libc::MAP_FAILED);
        // SAFETY: pages 1..4 of the reservation.
        unsafe {
            assert_eq!(libc::mprotect((base + page) as *mut libc::c_void, 3 * page, libc::PROT_READ | libc::PROT_WRITE), 0);
            assert_eq!(libc::mprotect((base + 2 * page) as *mut libc::c_void, page, libc::PROT_READ), 0);
        }
        let shared = alloc_shared(3 * page).unwrap();
        let sp = shared.as_ptr() as usize;
        let Some(q) = query_maps(base + page, base + 4 * page, Names::All) else {
            eprintln!("SKIP queried_mappings_match_the_maps_file: no PROCMAP_QUERY (kernel before 6.11)");
            free_shared(shared).unwrap();
            // SAFETY: our reservation.
            unsafe { libc::munmap(base as *mut libc::c_void, 5 * page) };
            return;
        };
        let qs = query_maps(sp, sp + 1, Names::All).unwrap();
        let text = read_maps().unwrap();
        let t: Vec<&Vma> = text.iter().filter(|v| v.end > base + page && v.start < base + 4 * page).collect();
        let ts: Vec<&Vma> = text.iter().filter(|v| v.end > sp && v.start < sp + 1).collect();
        assert_eq!(q.len(), 3, "RW / R / RW: {:?}", q);
        assert_eq!(q.len(), t.len());
        assert_eq!((qs.len(), ts.len()), (1, 1));
        for (a, b) in q.iter().zip(&t).chain(qs.iter().zip(&ts)) {
            assert_eq!((a.start, a.end, a.r, a.w, a.x, a.shared, a.offset, a.inode), (b.start, b.end, b.r, b.w, b.x, b.shared, b.offset, b.inode), "{:?} vs {:?}", a, b);
            assert_eq!(a.path, b.path, "name of {:#x}", a.start);
        }
        assert_eq!((q[0].w, q[1].w, q[2].w), (true, false, true));
        assert!(is_our_backing_vma(&qs[0]), "{:?}", qs[0]);
        assert_eq!(mapped_writable(base + page, 3 * page), Some(false));
        assert_eq!(mapped_writable(base + page, page), Some(true));
        assert_eq!(mapped_writable(base + 3 * page, 2 * page), None, "a PROT_NONE page cannot be registered");
        free_shared(shared).unwrap();
        // SAFETY: our reservation.
        unsafe { libc::munmap(base as *mut libc::c_void, 5 * page) };
        assert_eq!(mapped_writable(base + page, page), None, "unmapped");
    }
}

/// Test buffers of whole pages of their own: registering them rebinds no page that also
/// holds malloc's bookkeeping, which the test harness's other threads write meanwhile
/// (unguarded where userfaultfd is unavailable, see the module doc).
#[cfg(test)]
pub(crate) struct PageBuf {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

#[cfg(test)]
impl PageBuf {
    pub(crate) fn new(len: usize, fill: u8) -> PageBuf {
        let layout = std::alloc::Layout::from_size_align(len.div_ceil(4096) * 4096, 4096).expect("layout");
        // SAFETY: non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        assert!(!ptr.is_null());
        // SAFETY: the fresh allocation.
        unsafe { std::ptr::write_bytes(ptr, fill, layout.size()) };
        PageBuf { ptr, layout }
    }
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
    pub(crate) fn len(&self) -> usize {
        self.layout.size()
    }
}

#[cfg(test)]
impl Drop for PageBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in new with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

#[cfg(test)]
mod notify_tests {
    use super::*;

    #[test]
    fn set_notify_round_trips_and_clears_on_reuse() {
        let buf = PageBuf::new(10000, 7);
        let key = register(buf.as_ptr() as usize, buf.len(), Access::ReadWrite, 99).unwrap();
        let loc = RingLoc { backing: 3, backing_gen: 5, offset: 64, len: 4096 };
        set_notify(key, Some(loc)).unwrap();
        let me = crate::rma::Peer::this().unwrap();
        assert_eq!(crate::rma::notify_ring(&me, key, 99).unwrap(), Some(loc));
        assert_eq!(crate::rma::notify_ring(&me, key, 98).unwrap_err(), Error::ProtectionDomain);
        set_notify(key, None).unwrap();
        assert_eq!(crate::rma::notify_ring(&me, key, 99).unwrap(), None);
        set_notify(key, Some(loc)).unwrap();
        deregister(key).unwrap();
        assert_eq!(crate::rma::notify_ring(&me, key, 99).unwrap_err(), Error::StaleHandle);
        assert_eq!(set_notify(key, None).unwrap_err(), Error::StaleHandle);
        // The next registration in that row starts without a notify ring.
        let key2 = register(buf.as_ptr() as usize, buf.len(), Access::ReadWrite, 99).unwrap();
        assert_eq!(crate::rma::notify_ring(&me, key2, 99).unwrap(), None);
        deregister(key2).unwrap();
    }
}

#[cfg(test)]
mod handle_tests {
    use super::*;

    /// Every field survives the 16-byte encoding, the kind bits stay clear, and the
    /// owner decoded from a handle resolves to the process that minted it.
    #[test]
    fn cray_handle_names_its_owner() {
        let buf = PageBuf::new(8192, 1);
        let key = register(buf.as_ptr() as usize, buf.len(), Access::ReadWrite, 7).unwrap();
        let h = CrayHandle::mine(buf.as_ptr() as u64, key).unwrap();
        let w = h.to_words();
        assert!(CrayHandle::is_plain(w));
        assert_eq!(CrayHandle::from_words(w), CrayHandle { owner: ProcId { slot: h.owner.slot, gen: h.owner.gen & 0xf_ffff }, ..h });
        assert_eq!(w[0] & ((1 << 48) - 1), buf.as_ptr() as u64);
        let me = node::get().unwrap().proc_id();
        assert!(CrayHandle::from_words(w).owner_matches(me));
        let p = crate::rma::Peer::by_id(CrayHandle::from_words(w).owner, CrayHandle::OWNER_GEN_BITS).unwrap();
        assert_eq!(p.proc_id(), me);
        let mut b = [0u8; 4];
        crate::rma::get(&p, CrayHandle::from_words(w).key, h.base + 8, &mut b, 7).unwrap();
        assert_eq!(b, [1; 4]);
        // Another generation of our row, or a row nobody holds, names no process.
        let other = ProcId { slot: me.slot, gen: me.gen.wrapping_add(3) };
        assert!(!CrayHandle { owner: other, ..h }.owner_matches(me));
        assert!(matches!(crate::rma::Peer::by_id(other, CrayHandle::OWNER_GEN_BITS), Err(Error::StaleHandle)));
        // Addresses past the handle's 48 bits are refused.
        assert_eq!(CrayHandle::mine(CrayHandle::ADDR_LIMIT, key).unwrap_err(), Error::InvalidArg);
        assert!(crate::rma::get(&p, MemKey::NONE, h.base, &mut b, 7).is_err());
        deregister(key).unwrap();
    }
}

#[cfg(test)]
mod region_loc_tests {
    use super::*;

    /// A registration of fresh anonymous pages lies in one backing, which a peer maps in
    /// one piece; one of library memory too.
    #[test]
    fn registrations_have_a_location() {
        let len = 3 * shm::page_size();
        // SAFETY: a fresh private anonymous mapping, ours.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) } as *mut u8;
        assert_ne!(p as *mut libc::c_void, libc::MAP_FAILED);
        // SAFETY: inside the mapping.
        unsafe { *p.add(100) = 7 };
        let key = register(p as usize + 64, 2 * shm::page_size(), Access::ReadWrite, 1).unwrap();
        let loc = region_loc(key).unwrap().expect("one backing");
        assert_eq!(loc.len as usize, 2 * shm::page_size());
        let v = crate::rma::map_region(&crate::rma::Peer::this().unwrap(), &loc).unwrap();
        assert_eq!(v.as_ptr() as usize, p as usize + 64);
        // SAFETY: the view covers the registration.
        assert_eq!(unsafe { *v.as_ptr().add(36) }, 7);
        deregister(key).unwrap();
        assert_eq!(region_loc(key).unwrap_err(), Error::StaleHandle);
        let m = alloc_shared(8192).unwrap();
        let k2 = register(m.as_ptr() as usize + 4096, 100, Access::ReadOnly, 1).unwrap();
        let l2 = region_loc(k2).unwrap().unwrap();
        assert_eq!((l2.offset, l2.len), (4096, 100));
        deregister(k2).unwrap();
        free_shared(m).unwrap();
    }
}

#[cfg(test)]
mod churn_tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize};

    /// A fresh private anonymous mapping of `len` bytes filled with `fill`.
    fn anon(len: usize, fill: u8) -> usize {
        // SAFETY: a fresh mapping, ours until the test unmaps it.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
        assert_ne!(p, libc::MAP_FAILED);
        // SAFETY: inside the mapping.
        unsafe { std::ptr::write_bytes(p as *mut u8, fill, len) };
        p as usize
    }

    /// Maps fresh (never touched) anonymous memory at `at`, if nothing took the range.
    fn fresh_at(at: usize, len: usize) -> bool {
        // SAFETY: MAP_FIXED_NOREPLACE replaces nothing: fails if any of the range is mapped.
        let p = unsafe { libc::mmap(at as *mut libc::c_void, len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE, -1, 0) };
        p as usize == at
    }

    fn unmap(p: usize, len: usize) {
        // SAFETY: the test's own mapping.
        unsafe { libc::munmap(p as *mut libc::c_void, len) };
    }

    /// What peers see at `addr`: the bytes of the attached backing whose memfd the
    /// program maps there, read from the file.
    fn file_bytes(addr: usize, len: usize) -> Option<Vec<u8>> {
        let st = state();
        let v = query_maps(addr, addr + 1, Names::Skip)?.into_iter().next()?;
        let b = st.backs.iter().flatten().find(|b| b.attached && b.ino == v.inode && b.base.wrapping_add(v.offset as usize) == v.start)?;
        let mut out = vec![0u8; len];
        // SAFETY: a read into our buffer from the backing's memfd.
        let n = unsafe { libc::pread(b.fd.0, out.as_mut_ptr() as *mut libc::c_void, len, (addr - b.base) as libc::off_t) };
        (n == len as isize).then_some(out)
    }

    fn windows_on() -> bool {
        window_bytes() > 0
    }

    fn serial() -> std::sync::MutexGuard<'static, ()> {
        super::tests_serial()
    }

    fn runs() -> usize {
        state().backs.iter().flatten().filter(|b| b.kind == Kind::Rebound && b.attached).map(|b| b.bound.len()).sum()
    }

    /// Pages registered one at a time, scattered so that each makes a run of its own
    /// (a mapping of its own), never take more than the run budget: the runs of ended
    /// registrations are made private again, with their data.
    #[test]
    fn scattered_registrations_stay_within_the_run_budget() {
        let _g = serial();
        if !register_guard_available() {
            eprintln!("SKIP scattered_registrations_stay_within_the_run_budget: no write guard here");
            return;
        }
        const STEP: usize = 640 << 10;
        const N: usize = 3 * RUN_BUDGET;
        // SAFETY: a fresh mapping (untouched but for the pages registered), ours.
        let base = unsafe { libc::mmap(std::ptr::null_mut(), N * STEP, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) } as usize;
        assert_ne!(base as *mut libc::c_void, libc::MAP_FAILED);
        let mut most = 0;
        for k in 0..N {
            let a = base + k * STEP + 512;
            // SAFETY: inside the mapping.
            unsafe { *(a as *mut u64) = 0xfeed_0000 + k as u64 };
            let key = register(a, 64, Access::ReadWrite, 10).unwrap();
            most = most.max(runs());
            deregister(key).unwrap();
        }
        assert!(most <= RUN_BUDGET + 1, "{most} runs of rebound pages, budget {RUN_BUDGET}");
        for k in 0..N {
            // SAFETY: inside the mapping.
            assert_eq!(unsafe { *((base + k * STEP + 512) as *const u64) }, 0xfeed_0000 + k as u64, "page {k} lost its data");
        }
        unmap(base, N * STEP);
    }

    /// Many register/deregister cycles on distinct pages, one registration live at a
    /// time, take no new table rows after the first pass, and every page keeps its data
    /// (which peers see too).
    #[test]
    fn distinct_pages_one_live_at_a_time_reuse_their_block() {
        let _g = serial();
        const LEN: usize = 16 << 20;
        let page = shm::page_size();
        let base = anon(LEN, 0x3c);
        let pages = LEN / page;
        let mut rows_after_first = 0;
        for round in 0..3 {
            for i in 0..pages {
                let a = base + i * page + 256;
                // SAFETY: inside the mapping.
                unsafe { *(a as *mut u8) = (i + round) as u8 };
                let k = register(a, 100, Access::ReadWrite, 5).unwrap_or_else(|e| panic!("round {round} page {i}: {e:?}"));
                if i % 509 == 0 {
                    assert_eq!(file_bytes(a, 2).unwrap(), vec![(i + round) as u8, 0x3c], "page {i}: peers' view");
                }
                deregister(k).unwrap();
            }
            if round == 0 {
                rows_after_first = backing_count();
            } else {
                assert!(backing_count() <= rows_after_first + 1, "round {round}: {} backings, {} after the first pass", backing_count(), rows_after_first);
            }
        }
        unmap(base, LEN);
    }

    /// Another thread writes a trail over the neighbours of a page being registered (the
    /// window rebinds them too), and reads into them from a pipe (a write by the
    /// kernel): no write is lost, and where the guard holds the kernel's writes, no read
    /// fails.
    #[test]
    fn writes_to_a_window_are_held_not_lost() {
        let _g = serial();
        if !register_guard_available() {
            eprintln!("SKIP writes_to_a_window_are_held_not_lost: no write guard here");
            return;
        }
        const LEN: usize = 4 << 20;
        const WORDS: usize = 4096;
        static AT: AtomicUsize = AtomicUsize::new(0);
        static STOP: AtomicBool = AtomicBool::new(false);
        let page = shm::page_size();
        for round in 0..10 {
            let base = anon(LEN, 0x11);
            // The trail runs over the window of the registered page, above it.
            let reg = (base + LEN / 2) & !((256 << 10) - 1);
            let trail = reg + 4 * page;
            AT.store(trail, Ordering::Release);
            STOP.store(false, Ordering::Release);
            let mut fds = [0i32; 2];
            // SAFETY: a pipe of ours.
            assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
            let (rd, wr) = (fds[0], fds[1]);
            let writer = std::thread::spawn(move || {
                let w = AT.load(Ordering::Acquire);
                let mut n = 0;
                let mut efault = 0;
                while n < WORDS && !STOP.load(Ordering::Acquire) {
                    // SAFETY: inside the mapping, which outlives this thread.
                    unsafe { std::ptr::write_volatile((w + n * 8) as *mut u64, 0x5eed_0000 + n as u64) };
                    // The kernel writes a word eight pages further (from the pipe).
                    let v = (n as u64).to_ne_bytes();
                    // SAFETY: our pipe and our buffer.
                    unsafe {
                        libc::write(wr, v.as_ptr() as *const libc::c_void, 8);
                        if libc::read(rd, (w + 8 * 4096 + (n % 512) * 8) as *mut libc::c_void, 8) != 8 {
                            efault += 1;
                        }
                    }
                    n += 1;
                }
                (n, efault)
            });
            std::thread::sleep(std::time::Duration::from_micros(200));
            let key = register(reg + 100, 100, Access::ReadWrite, 6).unwrap();
            STOP.store(true, Ordering::Release);
            let (written, efault) = writer.join().unwrap();
            // SAFETY: the writer is done; inside our mapping.
            let lost = (0..written).filter(|&n| unsafe { std::ptr::read_volatile((trail + n * 8) as *const u64) } != 0x5eed_0000 + n as u64).count();
            assert_eq!(lost, 0, "round {round}: {lost} of {written} trail writes lost");
            if register_guard_holds_kernel_writes() {
                assert_eq!(efault, 0, "round {round}: {efault} reads into the window failed");
            }
            deregister(key).unwrap();
            if windows_on() {
                assert!(file_bytes(trail, 8).is_some(), "round {round}: the window was not rebound");
            }
            // SAFETY: our pipe.
            unsafe {
                libc::close(rd);
                libc::close(wr);
            }
            unmap(base, LEN);
        }
    }

    /// A registration in one thread rebinds its window (mremap over the pages) while
    /// another thread checks pages of that window, as a registration call does: the
    /// check must never see them unmapped (the kernel's lockless map queries can miss a
    /// mapping being swapped; `data_threads` once failed GNI_MemRegister so).
    #[test]
    fn checks_see_no_hole_while_a_window_is_rebound() {
        let _g = serial();
        if !windows_on() {
            eprintln!("SKIP checks_see_no_hole_while_a_window_is_rebound: registrations rebind no windows here");
            return;
        }
        const LEN: usize = 2 << 20;
        static AT: AtomicUsize = AtomicUsize::new(0);
        static STOP: AtomicBool = AtomicBool::new(false);
        let page = shm::page_size();
        const ROUNDS: usize = 100;
        let (mut checks, mut rebound) = (0, 0);
        for round in 0..ROUNDS {
            let base = anon(LEN, 0x22);
            let reg = (base + LEN / 2) & !((256 << 10) - 1);
            AT.store(reg + 8 * page, Ordering::Release);
            STOP.store(false, Ordering::Release);
            let checker = std::thread::spawn(move || {
                let at = AT.load(Ordering::Acquire);
                let (mut n, mut holes) = (0usize, 0usize);
                while !STOP.load(Ordering::Acquire) {
                    if mapped_writable(at, 4 * page) != Some(true) {
                        holes += 1;
                    }
                    n += 1;
                }
                (n, holes)
            });
            std::thread::sleep(std::time::Duration::from_micros(300));
            let key = register(reg + 100, 100, Access::ReadWrite, 6).unwrap();
            std::thread::sleep(std::time::Duration::from_micros(100));
            STOP.store(true, Ordering::Release);
            let (n, holes) = checker.join().unwrap();
            assert_eq!(holes, 0, "round {round}: {holes} of {n} checks saw the window unmapped");
            checks += n;
            rebound += usize::from(file_bytes(reg + 8 * page, 8).is_some());
            deregister(key).unwrap();
            unmap(base, LEN);
        }
        assert!(rebound > 0, "no round rebound the checked pages");
        eprintln!("checks_see_no_hole_while_a_window_is_rebound: {checks} checks, {rebound} of {ROUNDS} rounds rebound the checked pages");
    }

    /// Pages the program unmapped are punched out of their block (the memory goes back);
    /// fresh pages mapped at the same address and registered read as zeros, to the
    /// program and to peers, never as the old data.
    #[test]
    fn unmapped_pages_come_back_fresh() {
        let _g = serial();
        const LEN: usize = 2 << 20;
        let page = shm::page_size();
        let base = anon(LEN, 0x77);
        let k = register(base + page, 100, Access::ReadWrite, 7).unwrap();
        deregister(k).unwrap();
        assert_eq!(file_bytes(base + page, 1).unwrap(), vec![0x77]);
        unmap(base, LEN);
        if !fresh_at(base, LEN) {
            eprintln!("SKIP unmapped_pages_come_back_fresh: the address was taken meanwhile");
            return;
        }
        // SAFETY: inside the fresh mapping.
        unsafe { *((base + 3 * page) as *mut u8) = 5 };
        let k = register(base + page, 3 * page, Access::ReadWrite, 7).unwrap();
        // SAFETY: inside the mapping.
        let seen: Vec<u8> = (0..4).map(|i| unsafe { *((base + page + i * page / 2) as *const u8) }).collect();
        assert_eq!(seen, vec![0, 0, 0, 0], "the program sees old data");
        assert_eq!(file_bytes(base + page, 1).unwrap(), vec![0], "peers see old data");
        assert_eq!(file_bytes(base + 3 * page, 1).unwrap(), vec![5]);
        deregister(k).unwrap();
        unmap(base, LEN);
    }

    /// Rebound pages moved elsewhere by mremap (realloc of a big chunk) keep their data,
    /// and their old address can be registered again afterwards.
    #[test]
    fn moved_pages_keep_their_data() {
        let _g = serial();
        const LEN: usize = 1 << 20;
        let page = shm::page_size();
        let base = anon(LEN, 0);
        for i in 0..LEN / page {
            // SAFETY: inside the mapping.
            unsafe { *((base + i * page) as *mut u64) = 0xabc0_0000 + i as u64 };
        }
        let k = register(base, LEN, Access::ReadWrite, 8).unwrap();
        deregister(k).unwrap();
        let dest = anon(LEN, 0);
        // SAFETY: our mapping moved over our other one.
        let moved = unsafe { libc::mremap(base as *mut libc::c_void, LEN, LEN, libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED, dest as *mut libc::c_void) };
        assert_eq!(moved as usize, dest);
        let fresh = fresh_at(base, LEN);
        if fresh {
            // SAFETY: inside it.
            unsafe { std::ptr::write_bytes(base as *mut u8, 0x42, LEN) };
            let k = register(base + 100, 100, Access::ReadWrite, 8).unwrap();
            assert_eq!(file_bytes(base + 100, 1).unwrap(), vec![0x42]);
            deregister(k).unwrap();
        }
        let k = register(dest, LEN, Access::ReadWrite, 8).unwrap();
        for i in 0..LEN / page {
            // SAFETY: inside the moved mapping.
            assert_eq!(unsafe { *((dest + i * page) as *const u64) }, 0xabc0_0000 + i as u64, "page {i} lost its data");
        }
        assert_eq!(file_bytes(dest + 5 * page, 8).unwrap(), (0xabc0_0000u64 + 5).to_ne_bytes().to_vec());
        deregister(k).unwrap();
        unmap(dest, LEN);
        if fresh {
            unmap(base, LEN);
        }
    }

    /// A forked child that writes the neighbours of a page registered before (rebound by
    /// its window) writes its own copy, not its parent's memory.
    #[test]
    fn a_forked_child_writes_its_own_copy_of_a_window() {
        let _g = serial();
        const LEN: usize = 1 << 20;
        let page = shm::page_size();
        let base = anon(LEN, 0x66);
        let k = register(base + LEN / 2, 100, Access::ReadWrite, 9).unwrap();
        deregister(k).unwrap();
        let near = base + LEN / 2 + 2 * page;
        // SAFETY: the child only stores to its memory and leaves with _exit.
        let child = unsafe { libc::fork() };
        assert!(child >= 0);
        if child == 0 {
            // SAFETY: inside the child's copy of the mapping.
            unsafe {
                std::ptr::write_volatile(near as *mut u8, 0x99);
                libc::_exit(0);
            }
        }
        let mut status = 0;
        // SAFETY: our child.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
        // SAFETY: inside the mapping.
        assert_eq!(unsafe { std::ptr::read_volatile(near as *const u8) }, 0x66, "the child wrote its parent's memory");
        unmap(base, LEN);
    }
}
