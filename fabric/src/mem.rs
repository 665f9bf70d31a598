//! Memory registration: making a process's memory reachable by its peers.
//!
//! **Rebinding.**  To let peers use plain loads, stores and hardware atomics on registered
//! memory, registration makes the pages shareable: the page range covering
//! `[addr, addr+len)` is copied into a new memfd, which is then moved over the original
//! pages at the same virtual address (`mremap(MREMAP_FIXED)` from a temporary mapping, so
//! the page-table swap is a single atomic step).  The program sees the same contents at the
//! same address; peers map the memfd (see [`crate::rma`]).  Pages of anonymous memory that
//! never held data (neither present nor swapped, per /proc/self/pagemap) are not copied:
//! they read as zeros on both sides, and registering a large untouched buffer stays cheap.  Memory that the library itself
//! allocates with [`alloc_shared`] is shared from the start and needs no rebind.
//!
//! **Page map.**  Every memfd that backs our memory is a *backing*, listed in the control
//! segment (see [`crate::node`]).  A page is never rebound twice while its backing is
//! intact (peers may have it mapped): overlapping and adjacent registrations reuse the
//! existing backings and only the uncovered gaps get new ones.  Before trusting the map,
//! registration re-reads /proc/self/maps: a backing whose pages the program has since
//! unmapped or replaced (free of an mmap'd malloc chunk, heap trim) is *detached* — still
//! valid for registrations made before, never reused.
//!
//! **What can be rebound** (decided from /proc/self/maps): readable private mappings —
//! heap, stacks, bss/data, anonymous mmap, private file mappings; executable ones only when
//! anonymous (valgrind's client heap, JIT buffers; PROT_EXEC is kept) — and our own memfd
//! mappings.  Under valgrind the copy is made by the kernel (so memcheck does not report
//! reading the redzones of its heap arena), and the rebound bytes count as defined.  Everything else (MAP_SHARED mappings that are not ours,
//! hugetlbfs, executable or special mappings such as [vdso]) is the **fallback**: the
//! region is still registered and bounds/permission/PD checks still apply, but peers move
//! data with `process_vm_readv/writev`, and remote atomics on it return
//! `Err(Unsupported)` (no target-side agent yet).
//!
//! **Caveats (documented contract).**
//! - Writes by *other* threads to anonymous pages being rebound are held in their page
//!   fault until the swap is done, then land on the new pages ([`WriteGuard`]: userfaultfd
//!   write protection, Linux 6.4+, `SOFTNIC_REGISTER_GUARD`).  Where that is unavailable
//!   (older kernels, seccomp filters, valgrind), for private file mappings (.data), and
//!   for a range holding the caller's own stack, such writes can be lost (they may land
//!   between the copy and the swap).  While the guard is armed, a system call of another
//!   thread that writes into those pages (read(2) into them) fails with EFAULT.  The
//!   calling thread is safe, including when the range covers its own stack: then the copy
//!   and swap run on a helper thread while the caller sleeps in the kernel with signals
//!   blocked.
//! - Rebound pages are MAP_SHARED: a child created by `fork` shares them with the parent
//!   instead of getting a copy.
//! - Backings are released when their last registration goes and the program no longer
//!   maps them; a rebound range that stays mapped keeps its memfd for the process's life.

use crate::node::{self, Ctl, DETACHED, FREE, LIVE, NBACK, NO_BACKING, NREG};
use crate::registry::ProcId;
use crate::shm::{self, Fd};
use crate::{Error, Result};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// Name of backing memfds; /proc/self/maps shows `/memfd:softnic-bk (deleted)`.
const BACKING_NAME: &str = "softnic-bk";

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
    Rebound,
    Owned,
}

struct Backing {
    base: usize,
    len: usize,
    ino: u64,
    _fd: Fd,
    kind: Kind,
    /// Live registrations using it, plus one while an `alloc_shared` buffer owns it.
    refs: u32,
    /// In the page map (reusable by new registrations).
    attached: bool,
}

struct State {
    backs: Vec<Option<Backing>>,
    /// Per registration row: the backings it holds a reference on.
    reg_backs: Vec<Vec<u32>>,
}

static STATE: Mutex<State> = Mutex::new(State { backs: Vec::new(), reg_backs: Vec::new() });

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
fn read_maps_range(lo: usize, hi: usize) -> Result<Vec<Vma>> {
    match query_maps(lo, hi) {
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

/// PROCMAP_QUERY walk of `[lo, hi)`; None when the kernel lacks the ioctl.
fn query_maps(lo: usize, hi: usize) -> Option<Vec<Vma>> {
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
    let result = loop {
        if addr >= hi {
            break Some(out);
        }
        let mut q = ProcmapQuery {
            size: std::mem::size_of::<ProcmapQuery>() as u64,
            query_flags: COVERING_OR_NEXT_VMA,
            query_addr: addr as u64,
            vma_name_size: name.len() as u32,
            vma_name_addr: name.as_mut_ptr() as u64,
            ..Default::default()
        };
        // SAFETY: an ioctl on our descriptor with a properly sized, initialised argument;
        // the kernel writes at most vma_name_size bytes to `name`.
        if unsafe { libc::ioctl(fd, PROCMAP_QUERY, &mut q) } != 0 {
            match Error::last_os() {
                Error::Os(libc::ENOENT) => break Some(out), // no mapping at or above addr
                Error::Os(libc::ENOTTY) | Error::Os(libc::EINVAL) => {
                    MISSING.store(true, Ordering::Relaxed);
                    break None;
                }
                _ => break None,
            }
        }
        if q.vma_start as usize >= hi || q.vma_end as usize <= addr {
            break Some(out);
        }
        let len = (q.vma_name_size as usize).min(name.len());
        let path = if len == 0 { String::new() } else { String::from_utf8_lossy(&name[..len - 1]).into_owned() };
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
/// keeps no file position, so threads share the descriptor).  The word holds the pid with
/// the descriptor: a forked child (which inherits its parent's, naming the parent's
/// memory) opens its own.
fn maps_fd() -> Option<i32> {
    static MAPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(u64::MAX);
    let pid = std::process::id() as u64;
    let cur = MAPS.load(Ordering::Acquire);
    if cur != u64::MAX && cur >> 32 == pid {
        return Some(cur as u32 as i32);
    }
    // SAFETY: a NUL-terminated path.
    let fd = unsafe { libc::open(c"/proc/self/maps".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    match MAPS.compare_exchange(cur, (pid << 32) | fd as u32 as u64, Ordering::AcqRel, Ordering::Acquire) {
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
    let end = addr.checked_add(len)?;
    let maps = read_maps_range(addr, end).ok()?;
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
// Backing rows.

fn publish_backing(ctl: Ctl, st: &mut State, b: Backing, fd: i32) -> Result<(u32, u32)> {
    let idx = (0..NBACK).find(|&i| ctl.back(i).map_or(false, |e| e.state.load(Ordering::Relaxed) == FREE) && st.backs.get(i).map_or(true, |x| x.is_none()));
    let idx = idx.ok_or(Error::NoSpace)?;
    if st.backs.len() <= idx {
        st.backs.resize_with(idx + 1, || None);
    }
    let e = ctl.back(idx).expect("in range");
    e.fd.store(fd as u32, Ordering::Relaxed);
    e.kind.store(b.kind as u32, Ordering::Relaxed);
    e.base.store(b.base as u64, Ordering::Relaxed);
    e.len.store(b.len as u64, Ordering::Relaxed);
    e.ino.store(b.ino, Ordering::Relaxed);
    // Release: a peer that sees LIVE sees the fields above.
    e.state.store(LIVE, Ordering::Release);
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
    if b.refs == 0 {
        release_backing(ctl, st, idx);
    }
}

fn release_backing(ctl: Ctl, st: &mut State, idx: u32) {
    let e = ctl.back(idx as usize).expect("in range");
    // Generation first: a peer that re-checks after reading sees the change.
    e.gen.fetch_add(1, Ordering::Release);
    e.state.store(FREE, Ordering::Release);
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

// ---------------------------------------------------------------------------------------
// Rebinding.

struct Piece {
    start: usize,
    len: usize,
    prot: i32,
    tmp: *mut u8,
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

/// Memory the registering thread writes while the write guard is armed: its own anonymous
/// mapping, so never inside a range being registered (whose pages are write-protected),
/// and never the allocator's.
struct Scratch {
    ptr: *mut u8,
    len: usize,
}

impl Scratch {
    fn new(len: usize) -> Option<Scratch> {
        if len == 0 {
            return None;
        }
        // SAFETY: a fresh private anonymous mapping.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
        (p != libc::MAP_FAILED).then_some(Scratch { ptr: p as *mut u8, len })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // SAFETY: our mapping.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
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
        // SAFETY: the caller's buffer.
        let r = unsafe { libc::pread(pagemap, (buf as *mut u8).add(done) as *mut libc::c_void, bytes - done, (start / page * 8 + done) as libc::off_t) };
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
    // (laid out by rebind_gap in the scratch mapping).
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
/// an old page after its copy: userfaultfd write-protection (UFFD_USER_MODE_ONLY, so no
/// privilege is needed; Linux 6.4+ for the protection of never-touched pages).  A thread
/// that writes a protected page sleeps in its page fault until the guard is dropped, then
/// retries the write, which lands on the new page.  Signals are blocked on the
/// registering thread meanwhile (a handler writing a protected page would wait for
/// itself).  Kernel writes into a protected page (another thread's read(2) into it) fail
/// with EFAULT during the window.  Without userfaultfd, or for memory it cannot protect,
/// the copy runs unguarded (the documented caveat).
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
        if !crate::env::get_bool("SOFTNIC_REGISTER_GUARD") {
            return None;
        }
        // SAFETY: plain system calls on a descriptor we own.
        unsafe {
            let fd = libc::syscall(libc::SYS_userfaultfd, (libc::O_CLOEXEC | libc::O_NONBLOCK) as libc::c_long | Self::USER_MODE_ONLY) as i32;
            if fd < 0 {
                Self::unavailable("userfaultfd", Error::last_os());
                return None;
            }
            let mut api = [Self::API, Self::FEATURE_WP_UNPOPULATED, 0u64];
            if libc::ioctl(fd, Self::IOC_API, api.as_mut_ptr()) != 0 {
                Self::unavailable("UFFDIO_API with WP_UNPOPULATED", Error::last_os());
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
        if !SAID.swap(true, Ordering::Relaxed) {
            crate::sn_info!("fabric", "registrations copy pages unguarded (another thread's write during one can be lost): {} failed: {}", what, e);
        }
    }

    /// Write-protects `[start, start+len)` (one anonymous private mapping); a range the
    /// kernel refuses stays unguarded.  Allocates nothing (see `rebind_gap`).
    fn protect(&self, start: usize, len: usize) {
        let range = UffdRange { start: start as u64, len: len as u64 };
        let mut reg = [range.start, range.len, Self::REGISTER_MODE_WP, 0u64];
        // SAFETY: ioctls on our userfaultfd with properly sized argument blocks.
        unsafe {
            if libc::ioctl(self.fd, Self::IOC_REGISTER, reg.as_mut_ptr()) != 0 {
                return;
            }
            // Registered but not protected (refused): closing the descriptor unregisters it.
            let mut wp = [range.start, range.len, Self::WRITEPROTECT_MODE_WP];
            let _ = libc::ioctl(self.fd, Self::IOC_WRITEPROTECT, wp.as_mut_ptr());
        }
    }
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
        unsafe {
            libc::close(self.fd);
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
/// # Safety
/// Both ranges mapped for `n` bytes (src readable, dst writable).
unsafe fn copy_pages(src: *const u8, dst: *mut u8, n: usize) {
    if under_valgrind() {
        let mut done = 0usize;
        while done < n {
            let l = libc::iovec { iov_base: (dst as usize + done) as *mut libc::c_void, iov_len: n - done };
            let r = libc::iovec { iov_base: (src as usize + done) as *mut libc::c_void, iov_len: n - done };
            // SAFETY: the caller's ranges; our own pid.
            let got = unsafe { libc::process_vm_readv(libc::getpid(), &l, 1, &r, 1, 0) };
            if got <= 0 {
                break; // then copy the rest directly
            }
            done += got as usize;
        }
        if done == n {
            return;
        }
        // SAFETY: the caller's contract, the part not copied yet.
        return unsafe { std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), n - done) };
    }
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, n) }
}

/// Copies each piece into its temporary shared mapping and swaps it over the original.
/// Returns how many pieces were swapped and the errno of a failed swap (0 if none).
///
/// Writes nothing but the temporary mappings and this thread's registers/stack, and
/// allocates nothing, so the copy is exact as long as no other thread writes the pages.
fn copy_and_swap(pieces: &[Piece]) -> (usize, i32) {
    for (k, p) in pieces.iter().enumerate() {
        // SAFETY: p.start..+len is mapped readable (checked against /proc/self/maps);
        // p.tmp is our fresh mapping of the same length.
        unsafe {
            let n = if p.runs.is_null() { COPY_ALL } else { *p.runs };
            if n == COPY_ALL {
                copy_pages(p.start as *const u8, p.tmp, p.len);
            } else {
                // The run list: see `Piece::runs`.
                let pairs = p.runs.add(1);
                for k in 0..n {
                    let (off, len) = (*pairs.add(2 * k), *pairs.add(2 * k + 1));
                    copy_pages((p.start + off) as *const u8, p.tmp.add(off), len);
                }
            }
            if p.prot != libc::PROT_READ | libc::PROT_WRITE && libc::mprotect(p.tmp as *mut libc::c_void, p.len, p.prot) != 0 {
                return (k, *libc::__errno_location());
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
/// landed at address 0).  Inline, not libc's syscall(3): this runs between the copy and
/// the swap, where a first call through the PLT (lazy binding) must not happen.
/// Returns the new address or -errno.
///
/// # Safety
/// As mremap: `from..+len` is a mapping of ours, `to..+len` may be replaced.
#[inline(always)]
unsafe fn mremap_fixed(from: usize, len: usize, to: usize) -> isize {
    let flags = (libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED) as usize;
    #[cfg(target_arch = "x86_64")]
    {
        let ret: isize;
        // SAFETY: the Linux x86-64 system call convention; rcx and r11 are clobbered.
        unsafe {
            std::arch::asm!("syscall", inlateout("rax") libc::SYS_mremap as isize => ret, in("rdi") from, in("rsi") len,
                in("rdx") len, in("r10") flags, in("r8") to, lateout("rcx") _, lateout("r11") _, options(nostack));
        }
        ret
    }
    #[cfg(target_arch = "aarch64")]
    {
        let ret: isize;
        // SAFETY: the Linux arm64 system call convention.
        unsafe {
            std::arch::asm!("svc 0", in("x8") libc::SYS_mremap as usize, inlateout("x0") from as isize => ret, in("x1") len,
                in("x2") len, in("x3") flags, in("x4") to, options(nostack));
        }
        ret
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        // SAFETY: as above, through libc.
        let r = unsafe { libc::syscall(libc::SYS_mremap, from, len, len, flags, to) };
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
            let r = if ok { copy_and_swap(&job.0) } else { (0, libc::ETIMEDOUT) };
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

/// Rebinds `[start, end)` (page aligned, fully mapped by `vmas`) to one new memfd.
/// Returns the number of bytes from `start` that were rebound, and the memfd.
fn rebind_gap(start: usize, end: usize, maps: &[Vma]) -> Result<(usize, Fd, u64)> {
    let fd = shm::memfd(BACKING_NAME, end - start)?;
    let (_, ino, _) = shm::fd_identity(fd.0)?;
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
            libc::mmap(std::ptr::null_mut(), e - s, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd.0, (s - start) as libc::off_t)
        };
        if tmp == libc::MAP_FAILED {
            let err = Error::last_os();
            cleanup(&pieces);
            return Err(err);
        }
        pieces.push(Piece { start: s, len: e - s, prot, tmp: tmp as *mut u8, runs: std::ptr::null_mut(), cap: 0, scan: std::ptr::null_mut() });
    }
    // Does the range hold this thread's stack?
    let probe = 0u8;
    let sp = &probe as *const u8 as usize;
    let on_stack = maps.iter().any(|v| v.start <= sp && sp < v.end && v.end > start && v.start < end);
    // Copy only pages that hold data, in anonymous private memory (an untouched page of a
    // file mapping reads as the file), and hold other threads' writes to those pieces
    // (WriteGuard) from before the pagemap read until after the swap.  Not with our own
    // stack in the range: the calls between the pagemap read and the swap touch pages
    // below the stack pointer.  Between arming the guard and dropping it nothing may
    // allocate or take a lock: a thread held in a page fault may hold the allocator's.
    let page = shm::page_size();
    let anon: Vec<bool> = maps
        .iter()
        .filter(|v| v.end > start && v.start < end)
        .map(|v| !on_stack && !v.shared && v.inode == 0 && (v.path.is_empty() || v.path == "[heap]"))
        .collect();
    // The scratch mapping: per anonymous piece, two pagemap words per page and a run list
    // (count + room for one run per two pages, plus one).
    let words = |p: &Piece| 2 * (p.len / page) + 1 + 2 * (p.len / page / 2 + 1);
    let total: usize = pieces.iter().zip(&anon).filter(|(_, a)| **a).map(|(p, _)| words(p)).sum();
    let scratch = Scratch::new(total * 8);
    let mut guard = None;
    let mut pagemap = -1;
    // Whether each piece's first scan worked (freed after the window, like the scratch).
    let mut scanned = vec![false; pieces.len()];
    if let Some(sc) = &scratch {
        let mut at = 0usize;
        for (p, _) in pieces.iter_mut().zip(&anon).filter(|(_, a)| **a) {
            let pages = p.len / page;
            p.cap = pages / 2 + 1;
            // SAFETY: inside the scratch mapping (sized above).
            unsafe {
                p.scan = (sc.ptr as *mut u64).add(at);
                p.runs = (sc.ptr as *mut usize).add(at + 2 * pages);
            }
            at += words(p);
        }
        // SAFETY: a NUL-terminated path; the descriptor is closed below.
        pagemap = unsafe { libc::open(c"/proc/self/pagemap".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        for (k, p) in pieces.iter().enumerate().filter(|(_, p)| !p.runs.is_null()) {
            // SAFETY: p.scan holds 2 * pages words.
            scanned[k] = pagemap >= 0 && unsafe { read_pagemap(pagemap, p.start, p.len / page, p.scan) };
        }
        // Armed from here to its drop: this thread writes nothing but its stack, the
        // scratch and the temporary mappings, and neither allocates nor locks.
        guard = WriteGuard::new();
        for (k, p) in pieces.iter().enumerate().filter(|(_, p)| !p.runs.is_null()) {
            if let Some(g) = &guard {
                g.protect(p.start, p.len);
            }
            // SAFETY: the second half of p.scan.
            let again = unsafe { read_pagemap(pagemap, p.start, p.len / page, p.scan.add(p.len / page)) };
            data_runs(p, scanned[k] && again);
        }
    }
    let n = pieces.len();
    let (done, errno) = if on_stack {
        let (r, pieces) = copy_and_swap_off_stack(pieces)?;
        cleanup(&pieces[r.0..]);
        r
    } else {
        let r = copy_and_swap(&pieces);
        // Writers held by the guard go on now, on the new pages (or the old ones where
        // the swap failed).
        drop(guard);
        if pagemap >= 0 {
            // SAFETY: our descriptor.
            unsafe { libc::close(pagemap) };
        }
        // Pieces from the failed one on were not moved: drop their temporary mappings.
        cleanup(&pieces[r.0..]);
        r
    };
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
    if rebound == 0 {
        return Err(Error::Os(if errno != 0 { errno } else { libc::EIO }));
    }
    Ok((rebound, fd, ino))
}

// ---------------------------------------------------------------------------------------
// Public API.

/// Registers `[addr, addr+len)` for remote access with `access` rights under
/// protection-domain key `pd_key`.  See the module doc for what happens to the pages.
/// Errors: `InvalidArg` (null, zero length, wrapping, or a range not fully mapped),
/// `NoSpace` (tables full), `Os` (memfd/mmap failures).
pub fn register(addr: usize, len: usize, access: Access, pd_key: u64) -> Result<MemKey> {
    if addr == 0 || len == 0 {
        return Err(Error::InvalidArg);
    }
    let end = addr.checked_add(len).ok_or(Error::InvalidArg)?;
    let pm = shm::page_size() - 1;
    let ps = addr & !pm;
    let pe = end.checked_add(pm).ok_or(Error::InvalidArg)? & !pm;
    let n = node::get()?;
    let ctl = n.ctl();
    let mut st = state();
    let slot = (0..NREG).find(|&i| ctl.reg(i).expect("in range").state.load(Ordering::Relaxed) == FREE).ok_or(Error::NoSpace)?;
    // Everything below looks at the range and at the backings that overlap it (whole).
    let (lo, hi) = st
        .backs
        .iter()
        .flatten()
        .filter(|b| b.attached && b.base < pe && b.base + b.len > ps)
        .fold((ps, pe), |(lo, hi), b| (lo.min(b.base), hi.max(b.base + b.len)));
    let maps = read_maps_range(lo, hi)?;

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

    // Revalidate the page map against what is really mapped.
    for i in 0..st.backs.len() {
        let stale = match &st.backs[i] {
            Some(b) if b.attached && b.base < pe && b.base + b.len > ps => !intact(b, &maps),
            _ => false,
        };
        if stale {
            node::debug(&format!("backing {} no longer mapped whole; detaching", i));
            detach_backing(ctl, &mut st, i as u32);
        }
    }

    // Gaps not covered by attached backings.
    let mut covered: Vec<(usize, usize)> = st
        .backs
        .iter()
        .flatten()
        .filter(|b| b.attached && b.base < pe && b.base + b.len > ps)
        .map(|b| (b.base.max(ps), (b.base + b.len).min(pe)))
        .collect();
    covered.sort();
    let mut gaps = Vec::new();
    let mut cur = ps;
    for (s, e) in &covered {
        if *s > cur {
            gaps.push((cur, *s));
        }
        cur = cur.max(*e);
    }
    if cur < pe {
        gaps.push((cur, pe));
    }
    let fallback = gaps.iter().any(|&(s, e)| maps.iter().filter(|v| v.end > s && v.start < e).any(|v| !rebindable(v)));
    if fallback && !crate::env::get_bool("SOFTNIC_RMA_FALLBACK") {
        // The user asked for shared pages or nothing (e.g. to be sure atomics work).
        return Err(Error::Unsupported);
    }

    let mut backs: Vec<u32> = Vec::new();
    let mut first = NO_BACKING;
    if !fallback {
        for (s, e) in gaps {
            let mut at = s;
            while at < e {
                let (done, fd, ino) = rebind_gap(at, e, &maps)?;
                let raw = fd.0;
                let b = Backing { base: at, len: done, ino, _fd: fd, kind: Kind::Rebound, refs: 0, attached: true };
                publish_backing(ctl, &mut st, b, raw)?;
                // After a partial swap (rare) the rest gets its own memfd on the next turn.
                at += done;
            }
        }
        for (i, b) in st.backs.iter().enumerate() {
            if let Some(b) = b {
                if b.attached && b.base < pe && b.base + b.len > ps {
                    backs.push(i as u32);
                    if b.base <= addr && addr < b.base + b.len {
                        first = i as u32;
                    }
                }
            }
        }
        for &i in &backs {
            if let Some(b) = st.backs[i as usize].as_mut() {
                b.refs += 1;
            }
        }
    }

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
    if st.reg_backs.len() <= slot {
        st.reg_backs.resize_with(slot + 1, Vec::new);
    }
    st.reg_backs[slot] = backs;
    let key = MemKey { index: slot as u32, generation: e.gen.load(Ordering::Relaxed) };
    node::debug(&format!("register {:#x}+{} -> {:?} ({})", addr, len, key, if fallback { "process_vm fallback" } else { "shared" }));
    Ok(key)
}

/// Ends a registration.  Its key (and any copy a peer holds) is stale afterwards.
pub fn deregister(key: MemKey) -> Result<()> {
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
    let backs = std::mem::take(&mut st.reg_backs[key.index as usize]);
    for b in backs {
        unref_backing(ctl, &mut st, b);
    }
    drop(st);
    // Peers' RMA windows onto it are refused by the provider from here on (outside the
    // lock: this sends to peers, and sending may serve their requests meanwhile).
    crate::net::forget_registration(key);
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
    if len == 0 {
        return Err(Error::InvalidArg);
    }
    let n = node::get()?;
    let ctl = n.ctl();
    let seg = shm::Segment::create(BACKING_NAME, len)?;
    let mut st = state();
    let raw = seg.fd.0;
    let len = seg.map.len();
    let ino = seg.ino;
    let ptr = seg.map.leak();
    let b = Backing { base: ptr as usize, len, ino, _fd: seg.fd, kind: Kind::Owned, refs: 1, attached: true };
    match publish_backing(ctl, &mut st, b, raw) {
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
    let Some(backs) = st.reg_backs.get(key.index as usize) else { return Ok(None) };
    for &i in backs {
        if let (Some(Some(b)), Some(row)) = (st.backs.get(i as usize), ctl.back(i as usize)) {
            if b.base <= base && base + len <= b.base + b.len {
                let gen = row.gen.load(Ordering::Acquire);
                return Ok(Some(RingLoc { backing: i, backing_gen: gen, offset: (base - b.base) as u64, len: len as u64 }));
            }
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
        let Some(q) = query_maps(base + page, base + 4 * page) else {
            eprintln!("SKIP queried_mappings_match_the_maps_file: no PROCMAP_QUERY (kernel before 6.11)");
            free_shared(shared).unwrap();
            // SAFETY: our reservation.
            unsafe { libc::munmap(base as *mut libc::c_void, 5 * page) };
            return;
        };
        let qs = query_maps(sp, sp + 1).unwrap();
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
