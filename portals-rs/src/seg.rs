//! An NI's shared state: the segment of library-owned shared memory (from
//! `fabric::mem::alloc_shared`) that holds everything an initiator needs to act as the
//! target's NIC: portal table, match entries, memory descriptors, event queues, access
//! control table, status registers.  Initiators on this machine map it and run the
//! target side of their operations on it; across machines the target's progress thread
//! does (see [`crate::service`]).
//!
//! **Layout** (offsets, never pointers; every table 64-byte aligned):
//! ```text
//! 0      header (4 KiB): identity, limits, layout, alive flag, debug mask, the lock,
//!        counters and status registers
//! ac     access control table   (max_ac_index + 1) x AcRow
//! pt     portal table           (max_pt_index + 1) x PtRow (head, tail, length)
//! me     match entries          max_mes x MeRow
//! md     memory descriptors     max_mds x MdRow
//! iov    iovec entries          max_mds x max_md_iovecs x IovRow
//! eq     event queues           max_eqs x EqRow
//! hring  EQ-handler ring        (events for queues with a handler, see crate::eq)
//! arena  event-queue rings      SOFTNIC_PTL_EQ_MEM bytes, carved by the owner
//! ```
//! The header's magic is stored last when the segment is formatted; a reader checks
//! magic and version, recomputes the layout from the limits and checks it against the
//! stored total length and its own mapping, so nothing read from the segment can make
//! it index outside the mapping.  Every row index read from a row (list links) is
//! checked against its table before use.
//!
//! **Concurrency.**  Everything but the identity, the alive flag and the debug mask is
//! read and written only under the header's lock ([`crate::lock`]), by the owner's API
//! calls and by whoever runs a Portals operation against this NI.  The row accessors
//! therefore take the lock guard as a witness.
//!
//! **Per-view caches.**  A [`Seg`] (this process's view of a segment) keeps, under the
//! same lock, the event rings it attached (by queue row, generation and place) and pins
//! of contiguous MDs' memory (by MD row, generation and piece, `rma::Pinned`; windows of
//! it when it lies in several of the target's backings), so that an operation does not
//! validate them again; and a hint of the event slot the next deposit fills, for
//! [`Seg::prefetch`].  The owner's view also keeps the holds on its queues (process-local
//! by nature, see `crate::eq`).

use crate::lock::{Held, ShmLock};
use crate::prefetch::prefetch_write;
use crate::types::*;
use softnic_fabric::mem::MemKey;
use crate::evring::{EvRing, Holds};
use softnic_fabric::ring::{Pod, Ring};
use softnic_fabric::rma::{Live, Peer, Pinned, PinnedRef};
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

pub const MAGIC: u64 = u64::from_le_bytes(*b"snicPTL3");
/// Layout version: bump on any change below.
pub const VERSION: u32 = 5;
pub const NONE: u32 = u32::MAX;
pub const HEADER_LEN: usize = 4096;
/// Entries of the EQ-handler ring.
pub const HRING_CAP: u32 = 1024;

/// Row states.
pub const FREE: u32 = 0;
pub const LIVE: u32 = 1;
/// An MD unlinked by someone other than its owner: its memory registration is released
/// by the owner's next MD call before the row is reused.
pub const ZOMBIE: u32 = 2;

/// Limits as stored in the segment (the `ptl_ni_limits_t` fields, all positive).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    pub mes: u32,
    pub mds: u32,
    pub eqs: u32,
    pub ac: u32,
    pub pt: u32,
    pub iov: u32,
    pub me_list: u32,
    pub getput: u32,
}

/// The status registers every operation updates: on the lock's cache line, so that an
/// operation moves one line of the header between processes, not three.
#[repr(C)]
#[derive(Default)]
pub struct HotStats {
    pub recv_count: u64,
    pub recv_length: u64,
    pub send_count: u64,
    pub send_length: u64,
}

/// The other status registers and counters (under the lock).
#[repr(C)]
#[derive(Default)]
pub struct Stats {
    pub drop_count: u64,
    pub drop_length: u64,
    pub me_alloc: u64,
    pub me_freed: u64,
    pub md_alloc: u64,
    pub md_freed: u64,
    pub eq_alloc: u64,
    pub eq_freed: u64,
}

#[repr(C)]
pub struct Header {
    // Line 0: identity, immutable once `magic` is stored.
    pub magic: AtomicU64,
    pub version: u32,
    pub owner_pid: u32,
    pub jid: u32,
    pub nid: u32,
    pub pid: u32,
    pub uid: u32,
    /// This NI's instance, random: initiators name it, so a request meant for an NI
    /// that ended never lands in a later one at the same place.
    pub nonce: u64,
    pub total_len: u64,
    pub arena_len: u64,
    /// Added to row generations in handles (random per NI), so that a handle of an
    /// earlier NI of the process never names an object of this one.
    pub hbase: u32,
    _pad0: [u8; 4],
    // Line 1.
    pub lim: Limits,
    _pad1: [u8; 32],
    // Line 2: read without the lock.
    /// 1 while the NI is initialised; 0 once PtlNIFini has begun.
    pub alive: AtomicU32,
    /// PtlNIDebug's mask (who processes a request prints what it says).
    pub debug: AtomicU32,
    _pad2: [u8; 56],
    // Line 3: the lock and what every operation writes under it.
    pub lock: ShmLock,
    /// The next operation id (the `link` of START/END pairs).
    pub next_link: u32,
    /// MD rows unlinked by others, waiting for the owner (chained through `MdRow::me`).
    pub zombies: u32,
    pub hot: HotStats,
    _pad3: [u8; 8],
    // Line 4 on: under the lock.
    /// Free ME rows (chained through `MeRow::next`) and rows never used yet.
    pub me_free: u32,
    pub me_hw: u32,
    /// Free MD rows (chained through `MdRow::me`) and rows never used yet.
    pub md_free: u32,
    pub md_hw: u32,
    _pad4: [u8; 48],
    pub stats: Stats,
}

const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<Header>() <= HEADER_LEN);
    assert!(offset_of!(Header, alive) == 128 && offset_of!(Header, lock) == 192);
    assert!(offset_of!(Header, hot) + size_of::<HotStats>() <= 256 && offset_of!(Header, me_free) == 256);
};

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct AcRow {
    pub valid: u32,
    pub nid: u32,
    pub pid: u32,
    pub uid: u32,
    pub jid: u32,
    pub pt: u32,
    pub _pad: [u32; 2],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PtRow {
    pub head: u32,
    pub tail: u32,
    pub len: u32,
    _pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct MeRow {
    pub gen: u32,
    pub state: u32,
    pub pt: u32,
    pub unlink: u32,
    pub prev: u32,
    pub next: u32,
    /// The attached MD's row, or NONE.
    pub md: u32,
    _pad0: u32,
    pub nid: u32,
    pub pid: u32,
    _pad1: [u32; 2],
    pub match_bits: u64,
    pub ignore_bits: u64,
}

/// MdRow::flags.
pub const MDF_UNLINK_OP: u32 = 1 << 0;
pub const MDF_UNLINK_NOFIT: u32 = 1 << 1;
/// Unlinked (PtlMEUnlink) while a transfer was in flight: freed when it ends.
pub const MDF_DOOMED: u32 = 1 << 2;
/// The memory may be written (checked or registered read-write).
pub const MDF_WRITABLE: u32 = 1 << 3;
/// An initiator-side operation used the last threshold unit (so the MD may auto-unlink:
/// one made or updated with threshold 0 never does).
pub const MDF_SPENT: u32 = 1 << 4;

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct MdRow {
    pub gen: u32,
    pub state: u32,
    /// The ME it is attached to, or NONE (bound); the next zombie while ZOMBIE.
    pub me: u32,
    pub flags: u32,
    /// The application's view (threshold is the remaining count).
    pub view: MdView,
    /// Number of iovec entries (0: contiguous `view.start`/`view.length`).
    pub niov: u32,
    /// Transfers matched but not completed (two-phase ones, or the owner's own
    /// operation in progress).
    pub pending: u32,
    /// Bytes of memory (the iovec lengths' sum for an iovec MD).
    pub total: u64,
    /// The registration of a contiguous MD (a fabric MemKey), 0 when none.
    pub key: u64,
    pub local_offset: u64,
    /// When `pending` last rose (CLOCK_MONOTONIC_COARSE ns): a transfer whose initiator
    /// vanished mid-way is abandoned after a while (see crate::md).
    pub pending_since: u64,
    _pad: [u64; 2],
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct IovRow {
    pub base: u64,
    pub len: u64,
    pub key: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct EqRow {
    pub gen: u32,
    pub state: u32,
    /// Events the application asked for (the ring may hold a few more).
    pub count: u32,
    pub has_handler: u32,
    pub ring_off: u64,
    pub ring_len: u64,
    /// Operations of the owner in flight whose events this queue holds back the events
    /// of others for (see crate::eq's holds): while non-zero a deposit is held.
    pub gates: u32,
    /// Non-zero once an MD attached to a match entry named this queue (for this
    /// generation): only then can a target's reaction to our operation land here, and
    /// only then do our operations hold it (crate::eq's holds).
    pub targeted: u32,
    _pad: [u32; 6],
}

/// An entry of the EQ-handler ring: the event and the queue it went to.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct HandlerNote {
    pub eq: u32,
    pub eq_gen: u32,
    pub ev: Event,
}
// SAFETY: repr(C) integers only.
unsafe impl Pod for HandlerNote {}

const _: () = {
    use std::mem::size_of;
    assert!(size_of::<AcRow>() == 32 && size_of::<PtRow>() == 16 && size_of::<MeRow>() == 64);
    assert!(size_of::<MdRow>() == 128 && size_of::<IovRow>() == 24 && size_of::<EqRow>() == 64);
    assert!(size_of::<HandlerNote>() == 152);
};

/// Where each table lives, computed from the limits alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub lim: Limits,
    pub ac: usize,
    pub pt: usize,
    pub me: usize,
    pub md: usize,
    pub iov: usize,
    pub eq: usize,
    pub hring: usize,
    pub hring_len: usize,
    pub arena: usize,
    pub arena_len: usize,
    pub total: usize,
}

fn align64(v: usize) -> Option<usize> {
    v.checked_add(63).map(|v| v & !63)
}

impl Layout {
    /// `None` when the sizes overflow.
    pub fn new(lim: Limits, arena_len: usize) -> Option<Layout> {
        let mut at = HEADER_LEN;
        let mut table = |n: usize, row: usize| -> Option<usize> {
            let off = at;
            at = align64(at.checked_add(n.checked_mul(row)?)?)?;
            Some(off)
        };
        let ac = table(lim.ac as usize + 1, 32)?;
        let pt = table(lim.pt as usize + 1, 16)?;
        let me = table(lim.mes as usize, 64)?;
        let md = table(lim.mds as usize, 128)?;
        let iov = table((lim.mds as usize).checked_mul(lim.iov as usize)?, 24)?;
        let eq = table(lim.eqs as usize, 64)?;
        let hring_len = Ring::<HandlerNote>::bytes_needed(HRING_CAP);
        let hring = table(1, hring_len)?;
        let arena = align64(at)?;
        let total = arena.checked_add(arena_len)?;
        let total = softnic_fabric::shm::page_round_up(total)?;
        Some(Layout { lim, ac, pt, me, md, iov, eq, hring, hring_len, arena, arena_len: total - arena, total })
    }
}

/// A view of an NI segment (ours or a peer's), validated.
pub struct Seg {
    base: *mut u8,
    pub lay: Layout,
    hbase: u32,
    /// Event rings this view attached, by queue row (see [`Seg::with_eq_ring`]).
    rings: std::cell::UnsafeCell<Vec<Option<CachedRing>>>,
    /// Target memory pinned by this view, by MD row modulo PINS (see [`Seg::with_pin`]).
    pins: std::cell::UnsafeCell<[Option<PinEntry>; PINS]>,
    /// Where the last deposit through this view left its queue's next slot (see
    /// [`Seg::prefetch`]).
    slot_hint: AtomicPtr<u8>,
    /// The owner's holds on its queues, by queue row (see [`Seg::with_holds`]).
    holds: std::cell::UnsafeCell<Vec<Option<(u32, Holds)>>>,
}

/// Entries of a view's pin cache.
const PINS: usize = 8;

/// The memory of a contiguous MD (row of one generation, registration, range) pinned for
/// writing, or None when it cannot be pinned (the per-operation path serves it).
struct PinEntry {
    row: u32,
    gen: u32,
    piece: (u64, u64, u64),
    /// The part of the piece pinned (owner's addresses): all of it, or the window around
    /// an operation when the piece lies in several backings (see [`Seg::with_pin`]).
    lo: u64,
    hi: u64,
    /// None: nothing could be pinned for `[lo, hi)`.
    pin: Option<Pinned>,
    /// The whole piece could not be pinned (it is not tried again for the row).
    whole_failed: bool,
    /// A part of the piece could be pinned (so parts are tried for other operations).
    parts_ok: bool,
}

/// The window pinned around an operation when an MD's whole piece cannot be (its
/// memory lies in several of the target's backings: a registration's pages rebound in
/// windows of this size, as a rule).
const PIN_WINDOW: u64 = 256 << 10;

/// A queue's ring as attached for a row of one generation at one place.
struct CachedRing {
    gen: u32,
    off: u64,
    len: u64,
    ring: EvRing,
}

// SAFETY: the segment is shared memory; all access goes through atomics or happens
// under the segment's lock.
unsafe impl Send for Seg {}
unsafe impl Sync for Seg {}

/// The lock held, as a witness for the row accessors.
pub struct Guard<'a> {
    held: Held<'a>,
}

impl Guard<'_> {
    /// See [`Held::wake_on_release`].
    ///
    /// # Safety
    /// As there.
    pub unsafe fn wake_on_release(&self, w: *const softnic_fabric::wait::WaitWords) {
        // SAFETY: the caller's contract.
        unsafe { self.held.wake_on_release(w) }
    }
}

impl Seg {
    /// Formats `len` bytes at `base` (fresh, zero-filled, ours) as the segment of an NI.
    ///
    /// # Safety
    /// `base` valid for `lay.total` bytes, 64-aligned, not yet visible to anyone.
    pub unsafe fn format(base: *mut u8, lay: Layout, id: (u32, u32, u32, u32), nonce: u64) -> Seg {
        let s = Seg { base, lay, hbase: nonce as u32, rings: Default::default(), pins: Default::default(), slot_hint: AtomicPtr::new(std::ptr::null_mut()), holds: Default::default() };
        // SAFETY: the caller's contract: fresh memory of lay.total bytes.
        let h = unsafe { &mut *(base as *mut Header) };
        h.hbase = nonce as u32;
        h.version = VERSION;
        h.owner_pid = std::process::id();
        (h.jid, h.nid, h.pid, h.uid) = id;
        h.nonce = nonce;
        h.total_len = lay.total as u64;
        h.arena_len = lay.arena_len as u64;
        h.lim = lay.lim;
        h.lock.init();
        h.zombies = NONE;
        h.me_free = NONE;
        h.md_free = NONE;
        h.alive.store(1, Ordering::Relaxed);
        for i in 0..=lay.lim.pt {
            // SAFETY: inside the portal table.
            unsafe { *(base.add(lay.pt + i as usize * 16) as *mut PtRow) = PtRow { head: NONE, tail: NONE, len: 0, _pad: 0 } };
        }
        // SAFETY: inside the segment; the ring is formatted before anyone can see it.
        let _ = unsafe { Ring::<HandlerNote>::init(base.add(lay.hring), lay.hring_len, HRING_CAP) };
        // Release: whoever sees the magic sees everything above.
        h.magic.store(MAGIC, Ordering::Release);
        s
    }

    /// Attaches to a segment mapped at `base` for `len` bytes.  `None` when it is not a
    /// well-formed NI segment of this layout version.
    ///
    /// # Safety
    /// `base` valid for `len` bytes for the life of the view.
    pub unsafe fn attach(base: *mut u8, len: usize) -> Option<Seg> {
        if base.is_null() || !(base as usize).is_multiple_of(64) || len < HEADER_LEN {
            return None;
        }
        // SAFETY: len covers the header.
        let h = unsafe { &*(base as *const Header) };
        if h.magic.load(Ordering::Acquire) != MAGIC {
            return None;
        }
        // SAFETY: inside the header; volatile because another process wrote it.
        let (version, lim, total, arena, hbase) = unsafe {
            use std::ptr::{addr_of, read_volatile as rv};
            (rv(addr_of!(h.version)), rv(addr_of!(h.lim)), rv(addr_of!(h.total_len)), rv(addr_of!(h.arena_len)), rv(addr_of!(h.hbase)))
        };
        if version != VERSION || !limits_sane(&lim) {
            return None;
        }
        let lay = Layout::new(lim, arena as usize)?;
        if lay.total as u64 != total || lay.total > len {
            return None;
        }
        Some(Seg { base, lay, hbase, rings: Default::default(), pins: Default::default(), slot_hint: AtomicPtr::new(std::ptr::null_mut()), holds: Default::default() })
    }

    /// The handle of row `idx` (generation `row_gen`) of table `kind`.
    pub fn handle(&self, kind: u32, row_gen: u32, idx: u32) -> u32 {
        crate::handle::make(kind, row_gen.wrapping_add(self.hbase), idx)
    }

    /// Does a row of generation `row_gen` carry a handle's generation bits `h_gen`?
    pub fn gen_ok(&self, row_gen: u32, h_gen: u32) -> bool {
        crate::handle::gen_matches(row_gen.wrapping_add(self.hbase), h_gen)
    }

    pub fn base(&self) -> *mut u8 {
        self.base
    }

    pub fn hdr(&self) -> &Header {
        // SAFETY: the header is inside the validated mapping.
        unsafe { &*(self.base as *const Header) }
    }

    #[inline]
    pub fn lock(&self) -> Guard<'_> {
        Guard { held: self.hdr().lock.lock() }
    }

    /// Starts fetching, for writing, what an operation on this NI writes first and what
    /// is usually in the cache of the NI's owner (another process, another core): the
    /// lock's line ([`ShmLock::prefetch`]) and the event slot the last deposit through
    /// this view left next (a hint, see [`Seg::hint_next_slot`]).  The fetches overlap
    /// each other and the caller's work until it takes the lock.
    #[inline]
    pub fn prefetch(&self) {
        self.hdr().lock.prefetch();
        let p = self.slot_hint.load(Ordering::Relaxed);
        if !p.is_null() {
            // A slot is two lines (the hint is refreshed under the lock from a ring of this
            // segment; a stale one only wastes the prefetch).
            prefetch_write(p);
            prefetch_write(p.wrapping_add(64));
        }
    }

    /// See [`ShmLock::prefetch`].
    #[inline]
    pub fn prefetch_lock(&self) {
        self.hdr().lock.prefetch();
    }

    /// Records the slot a queue's next deposit will fill (from `EvRing::next_slot`).
    #[inline]
    pub fn hint_next_slot(&self, p: *const u8) {
        self.slot_hint.store(p as *mut u8, Ordering::Relaxed);
    }

    /// The lock if it is free now.
    #[inline]
    pub fn try_lock(&self) -> Option<Guard<'_>> {
        self.hdr().lock.try_lock().map(|held| Guard { held })
    }

    /// Is this a view of the same segment as `other` (one lock)?
    pub fn same(&self, other: &Seg) -> bool {
        self.base == other.base
    }

    /// The state under the lock (`next_link`, `zombies`, `stats`).
    #[allow(clippy::mut_from_ref)]
    pub fn state<'a>(&'a self, _g: &Guard<'a>) -> &'a mut Header {
        // SAFETY: the lock is held; the fields used through this are only touched under it.
        unsafe { &mut *(self.base as *mut Header) }
    }

    #[allow(clippy::mut_from_ref)]
    fn row<T>(&self, off: usize, size: usize, i: u32, n: u32) -> Option<&mut T> {
        if i >= n {
            return None;
        }
        // SAFETY: i < n rows of `size` bytes from `off`, inside the validated layout; the
        // caller holds the lock (every public accessor takes the guard).
        Some(unsafe { &mut *(self.base.add(off + i as usize * size) as *mut T) })
    }

    #[allow(clippy::mut_from_ref)]
    pub fn ac<'a>(&'a self, _g: &Guard<'a>, i: u32) -> Option<&'a mut AcRow> {
        self.row(self.lay.ac, 32, i, self.lay.lim.ac + 1)
    }
    #[allow(clippy::mut_from_ref)]
    pub fn pt<'a>(&'a self, _g: &Guard<'a>, i: u32) -> Option<&'a mut PtRow> {
        self.row(self.lay.pt, 16, i, self.lay.lim.pt + 1)
    }
    #[allow(clippy::mut_from_ref)]
    pub fn me<'a>(&'a self, _g: &Guard<'a>, i: u32) -> Option<&'a mut MeRow> {
        self.row(self.lay.me, 64, i, self.lay.lim.mes)
    }
    #[allow(clippy::mut_from_ref)]
    pub fn md<'a>(&'a self, _g: &Guard<'a>, i: u32) -> Option<&'a mut MdRow> {
        self.row(self.lay.md, 128, i, self.lay.lim.mds)
    }
    #[allow(clippy::mut_from_ref)]
    pub fn iov<'a>(&'a self, _g: &Guard<'a>, md: u32, k: u32) -> Option<&'a mut IovRow> {
        if md >= self.lay.lim.mds || k >= self.lay.lim.iov {
            return None;
        }
        self.row(self.lay.iov, 24, md * self.lay.lim.iov + k, self.lay.lim.mds * self.lay.lim.iov)
    }
    #[allow(clippy::mut_from_ref)]
    pub fn eq<'a>(&'a self, _g: &Guard<'a>, i: u32) -> Option<&'a mut EqRow> {
        self.row(self.lay.eq, 64, i, self.lay.lim.eqs)
    }

    fn eq_ring_at(&self, off: u64, len: u64) -> Option<EvRing> {
        let off = off as usize;
        let len = len as usize;
        let end = off.checked_add(len)?;
        if off < self.lay.arena || end > self.lay.arena + self.lay.arena_len {
            return None;
        }
        // SAFETY: inside the arena of the mapping; attach validates the ring header.
        unsafe { EvRing::attach(self.base.add(off), len) }
    }

    /// Runs `f` on the ring of queue row `i` (`q`), attached (and validated) once per view
    /// and reused while the row keeps its generation and place (a freed queue's row
    /// changes generation; a view never indexes outside the place it validated, whatever
    /// is written in the ring's header later).  None when `q` names no valid ring.
    /// Always inlined, the attach out of line: called, `f` (an event's deposit) read
    /// every value it needs through a pointer, 187 instructions a deposit.
    #[inline(always)]
    pub fn with_eq_ring<R>(&self, _g: &Guard<'_>, i: u32, place: (u32, u64, u64), f: impl FnOnce(&EvRing) -> R) -> Option<R> {
        // SAFETY: the cache is only touched here and in `attach_eq_ring`, under the
        // segment's lock (the guard), which excludes every other thread of this process
        // too; `f` cannot reach it.
        let rings = unsafe { &*self.rings.get() };
        if let Some(Some(c)) = rings.get(i as usize) {
            if (c.gen, c.off, c.len) == place {
                return Some(f(&c.ring));
            }
        }
        self.attach_eq_ring(i, place).map(|r| f(&r))
    }

    /// The miss of [`Seg::with_eq_ring`]: attaches the ring and caches it.
    #[cold]
    #[inline(never)]
    fn attach_eq_ring(&self, i: u32, (gen, off, len): (u32, u64, u64)) -> Option<EvRing> {
        // SAFETY: as in `with_eq_ring` (the lock is held by its caller).
        let rings = unsafe { &mut *self.rings.get() };
        if rings.is_empty() {
            rings.resize_with(self.lay.lim.eqs as usize, || None);
        }
        let slot = rings.get_mut(i as usize)?;
        let ring = self.eq_ring_at(off, len)?;
        *slot = Some(CachedRing { gen, off, len, ring });
        Some(ring)
    }

    /// Runs `f` on the holds of queue row `i` of generation `gen` (the owner's, see
    /// `crate::eq`): kept per view, under the segment's lock, and started afresh for a
    /// new generation of the row.
    pub fn with_holds<R>(&self, _g: &Guard<'_>, i: u32, gen: u32, f: impl FnOnce(&mut Holds) -> R) -> Option<R> {
        // SAFETY: the cache is only touched here, under the segment's lock (the guard),
        // which excludes every other thread of this process too; `f` cannot reach it.
        let holds = unsafe { &mut *self.holds.get() };
        if holds.is_empty() {
            holds.resize_with(self.lay.lim.eqs as usize, || None);
        }
        let slot = holds.get_mut(i as usize)?;
        if slot.as_ref().is_none_or(|(g, _)| *g != gen) {
            *slot = Some((gen, Holds::default()));
        }
        slot.as_mut().map(|(_, h)| f(h))
    }

    /// Runs `f` on the memory `piece` (registration, address, length) of the contiguous
    /// MD row `row` of generation `gen`, pinned for writing at `target` once per view
    /// (`rma::Pinned`: validated once, then re-checked per use in a few loads) while the
    /// row, its generation and its piece stay the same; `f` also gets where the
    /// operation's bytes `[off, off+len)` of the piece (the caller checked they lie in it)
    /// begin in the pinned range.  The whole piece is pinned, or, when its memory lies in
    /// several of the target's backings (the pin fails: it happened to a 64 MiB MD in 1
    /// run of 12, and every operation of the run then took the per-operation path), the
    /// window of [`PIN_WINDOW`] around the operation, then its bytes alone.  None when
    /// nothing can be pinned or the pin no longer holds: the caller takes the
    /// per-operation path, which reports the exact error.
    /// Always inlined: called, the arguments alone cost a small put 23 instructions.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn with_pin<R>(&self, _g: &Guard<'_>, target: &Arc<Peer>, live: Live<'_>, row: u32, gen: u32, piece: (u64, u64, u64), off: u64, len: u64, f: impl FnOnce(PinnedRef<'_>, usize) -> R) -> Option<R> {
        // SAFETY: the cache is only touched here, under the segment's lock (the guard),
        // which excludes every other thread of this process too; `f` cannot reach it.
        let pins = unsafe { &mut *self.pins.get() };
        let slot = &mut pins[row as usize % PINS];
        // The operation's bytes (owner's addresses; inside the piece: no overflow).
        let (a, b) = (piece.1 + off, piece.1 + off + len);
        match slot {
            // (A pin of another peer fails its check below and is replaced.)
            Some(e) if e.row == row && e.gen == gen && e.piece == piece && e.lo <= a && b <= e.hi => {}
            _ => {
                let known = slot.as_ref().filter(|e| e.row == row && e.gen == gen && e.piece == piece).map_or((false, false), |e| (e.whole_failed, e.parts_ok));
                *slot = Some(pin_for(target, row, gen, piece, a, b, known));
            }
        }
        let e = slot.as_ref()?;
        let pin = e.pin.as_ref()?;
        match pin.check(live) {
            Ok(r) => Some(f(r, (a - e.lo) as usize)),
            Err(_) => {
                *slot = None;
                None
            }
        }
    }

    /// The EQ-handler ring.
    pub fn handler_ring(&self) -> Option<Ring<HandlerNote>> {
        // SAFETY: inside the mapping (layout); attach validates the header.
        unsafe { Ring::<HandlerNote>::attach(self.base.add(self.lay.hring), self.lay.hring_len).ok() }
    }

    /// A free ME row, set up LIVE with a fresh generation; None when all are in use.
    pub fn alloc_me(&self, g: &Guard<'_>) -> Option<u32> {
        let h = self.state(g);
        let i = if h.me_free != NONE {
            let i = h.me_free;
            h.me_free = self.me(g, i).map_or(NONE, |r| r.next);
            i
        } else if h.me_hw < self.lay.lim.mes {
            h.me_hw += 1;
            h.me_hw - 1
        } else {
            return None;
        };
        let r = self.me(g, i)?;
        let gen = r.gen;
        *r = MeRow { gen, state: LIVE, prev: NONE, next: NONE, md: NONE, ..MeRow::default() };
        self.state(g).stats.me_alloc += 1;
        Some(i)
    }

    /// Returns ME row `i` to the free list (its handles go stale).
    pub fn free_me(&self, g: &Guard<'_>, i: u32) {
        let head = self.state(g).me_free;
        if let Some(r) = self.me(g, i) {
            r.state = FREE;
            r.gen = r.gen.wrapping_add(1);
            r.next = head;
            self.state(g).me_free = i;
            self.state(g).stats.me_freed += 1;
        }
    }

    /// A free MD row, set up LIVE with a fresh generation; None when all are in use.
    pub fn alloc_md(&self, g: &Guard<'_>) -> Option<u32> {
        let h = self.state(g);
        let i = if h.md_free != NONE {
            let i = h.md_free;
            h.md_free = self.md(g, i).map_or(NONE, |r| r.me);
            i
        } else if h.md_hw < self.lay.lim.mds {
            h.md_hw += 1;
            h.md_hw - 1
        } else {
            return None;
        };
        let r = self.md(g, i)?;
        let gen = r.gen;
        *r = MdRow { gen, state: LIVE, me: NONE, ..MdRow::default() };
        self.state(g).stats.md_alloc += 1;
        Some(i)
    }

    /// Returns MD row `i` to the free list.  Its generation moved on when it was unlinked.
    pub fn free_md(&self, g: &Guard<'_>, i: u32) {
        let head = self.state(g).md_free;
        if let Some(r) = self.md(g, i) {
            r.state = FREE;
            r.me = head;
            self.state(g).md_free = i;
            self.state(g).stats.md_freed += 1;
        }
    }

    pub fn alive(&self) -> bool {
        self.hdr().alive.load(Ordering::Acquire) != 0
    }
}

/// A pin of `piece` of MD row `row` for the operation's bytes `[a, b)`: the whole piece
/// (unless that failed before), else the aligned window around them clipped to the piece,
/// else exactly them.  `known`: whether the whole piece failed before, whether a part of
/// it was pinned before.  When nothing can be pinned, an entry without a pin: for the
/// window when parts of the piece could be pinned before (its operations then take the
/// per-operation path without trying again), else for the whole piece (memory that
/// cannot be pinned at all, the fallback's: it is not tried again, as before windows).
/// See [`Seg::with_pin`].
#[cold]
#[inline(never)]
fn pin_for(target: &Arc<Peer>, row: u32, gen: u32, piece: (u64, u64, u64), a: u64, b: u64, known: (bool, bool)) -> PinEntry {
    let (key, addr, len) = piece;
    let end = addr + len;
    let (whole_failed, parts_ok) = known;
    let pin = |lo: u64, hi: u64| Pinned::new(target, MemKey::from_u64(key), lo, (hi - lo) as usize, true, crate::runtime::pd());
    if !whole_failed {
        match pin(addr, end) {
            Ok(p) => return PinEntry { row, gen, piece, lo: addr, hi: end, pin: Some(p), whole_failed: false, parts_ok: false },
            Err(e) => softnic_fabric::sn_debug!("Portals", "no pin of MD row {row} ({len} bytes at {addr:#x}): {e}; pinning windows"),
        }
    }
    let lo = (a & !(PIN_WINDOW - 1)).max(addr);
    let hi = b.checked_next_multiple_of(PIN_WINDOW).map_or(end, |h| h.min(end));
    for (lo, hi) in [(lo, hi), (a, b)] {
        if let Ok(p) = pin(lo, hi) {
            return PinEntry { row, gen, piece, lo, hi, pin: Some(p), whole_failed: true, parts_ok: true };
        }
    }
    let (lo, hi) = if parts_ok { (lo, hi) } else { (addr, end) };
    PinEntry { row, gen, piece, lo, hi, pin: None, whole_failed: true, parts_ok }
}

/// Limits a segment may carry (the maxima of crate::ni).
pub fn limits_sane(l: &Limits) -> bool {
    (1..=65534).contains(&l.mes)
        && (1..=65534).contains(&l.mds)
        && (1..=4096).contains(&l.eqs)
        && l.ac <= 1023
        && l.pt <= 1023
        && (1..=256).contains(&l.iov)
        && (1..=l.mes).contains(&l.me_list)
        && l.getput <= 4096
}
