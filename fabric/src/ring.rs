//! Bounded lock-free MPMC rings of fixed-size entries in shared memory (completion queues,
//! mailboxes).
//!
//! The algorithm is Dmitry Vyukov's bounded MPMC queue: every slot carries a sequence
//! number that says whose turn it is.  Slot `i` starts with `seq = i`.  For the entry at
//! position `pos` (positions count up forever; the slot is `pos & mask`):
//! `seq == pos` means "free for the producer of `pos`", `seq == pos + 1` means "published,
//! ready for the consumer of `pos`", and the consumer hands it on to the producer of the next
//! lap by storing `seq = pos + capacity`.
//!
//! # Push recipe
//! 1. **Reserve**: `pos = tail` (Relaxed); load `slot.seq` (Acquire, pairs with pop step 4:
//!    the previous lap's consumer has finished reading).  `seq == pos`: CAS `tail` from
//!    `pos` to `pos + 1` (Relaxed: it only arbitrates between producers); on failure retry
//!    with the value seen.  `seq < pos`: the ring is full, return `NoSpace`, nothing written.
//!    `seq > pos`: another producer took `pos`, reload `tail`.
//! 2. **Fill**: write the payload into the slot (plain volatile copy; we own the slot).
//! 3. **Release-store** `slot.seq = pos + 1`: publishes the payload (pairs with pop step 1).
//! 4. **Notify**: `wait::notify` (SeqCst fence, then a futex wake only if someone sleeps).
//!
//! # Pop recipe
//! 1. **Reserve**: `pos = head` (Relaxed); load `slot.seq` (Acquire, pairs with push step 3).
//!    `seq == pos + 1`: CAS `head` from `pos` to `pos + 1` (Relaxed: the Acquire above
//!    already made the payload visible); on failure retry.  `seq < pos + 1`: empty (or the
//!    producer of `pos` has not published yet), return `None`.  `seq > pos + 1`: another
//!    consumer took `pos`, reload `head`.
//! 2. **Read** the payload (volatile copy).
//! 3. (nothing to commit or discard: a reserved slot is always consumed.)
//! 4. **Release-store** `slot.seq = pos + capacity`: hands the slot to the next lap's producer
//!    (pairs with push step 1).
//!
//! There is no separate commit/discard: a producer that reserved a slot always publishes it.
//!
//! # Limitations
//! * A producer that dies between reserve and publish leaves its slot unpublished forever:
//!   consumers stall at that position (they see "empty"), and producers see "full" once
//!   they lap it.  Peer death is detected elsewhere (registry dead-pid reclaim); the ring
//!   does not try to repair itself.
//! * `push` may report `NoSpace` while a consumer is between its reserve and its step 4,
//!   even though `head` has moved: the slot is not free yet.
//! * Corrupted memory (a slot sequence inconsistent with the indices) is detected where it
//!   would otherwise loop: `push` returns `Err(InvalidArg)` and `pop` returns `None`.  The
//!   view caches capacity and mask at attach time, so a scribbled header can never make it
//!   index outside the mapping.
//!
//! # Layout (shared between processes, offsets only, no pointers)
//! ```text
//! 0    line 0: magic, version, entry size, capacity, slot stride, slots offset, total len, owner pid
//! 64   line 1: tail (producers)
//! 128  line 2: head (consumers)
//! 192  line 3: wait words (futex seq, waiters), overrun flag
//! 256  slots: capacity x { seq: u64, payload: T } (stride = size_of::<Slot<T>>())
//! ```
//!
//! Under `cfg(loom)` atomics are loom objects that cannot live in raw shared memory, so
//! [`Ring::init`]/[`Ring::attach`] return `Err(Unsupported)` and rings are built on the heap
//! with [`Ring::new_boxed`]; the push/pop code is the same in both builds.

use crate::sync::{AtomicU32, AtomicU64, Ordering, UnsafeCell};
use crate::wait::WaitWords;
use crate::{Error, Result};
use std::marker::PhantomData;
use std::ptr::NonNull;

/// Called before a consumer sleeps on a ring (the network engine stops busy-polling for
/// events it would deliver to a consumer that no longer spins).
pub static BEFORE_SLEEP: crate::hook::Hook<()> = crate::hook::Hook::new();
use std::time::Duration;

/// Plain-old-data entries: any bit pattern valid, no pointers, no Drop.
///
/// # Safety
/// Implement only for `#[repr(C)]` types made of integers / arrays of integers.
pub unsafe trait Pod: Copy + Send + Sync + 'static {}
unsafe impl Pod for u64 {}
unsafe impl Pod for [u64; 2] {}
unsafe impl Pod for [u64; 4] {}
unsafe impl Pod for [u64; 8] {}
unsafe impl Pod for u32 {}

/// "snicRING" as a little-endian u64.
pub const RING_MAGIC: u64 = u64::from_le_bytes(*b"snicRING");
/// Layout version; bump on any change to the header or slot layout.
pub const RING_VERSION: u32 = 1;
/// Bytes before the first slot.
pub const RING_HEADER_BYTES: usize = 256;
/// Largest capacity accepted (keeps offsets and lengths far from overflow).
pub const RING_MAX_CAPACITY: u32 = 1 << 30;

/// One cache line of its own, so producers (tail), consumers (head) and sleepers do not
/// false-share.
#[repr(C, align(64))]
struct Line<T>(T);

/// Immutable after `init` (except `magic`, which `init` stores last).
#[repr(C)]
struct Meta {
    /// `RING_MAGIC` once the ring is fully formatted (Release-stored last by `init`).
    magic: AtomicU64,
    version: u32,
    entry_size: u32,
    capacity: u32,
    slot_stride: u32,
    slots_offset: u64,
    total_len: u64,
    owner_pid: u32,
    entry_align: u32,
}

#[repr(C)]
struct Ctl {
    wake: WaitWords,
    /// Sticky: set when `push_or_overrun` found the ring full.
    overrun: AtomicU32,
    /// Non-zero: nobody ever sleeps on this ring (set by `init_unwaited`, never changed), so
    /// producers skip the wake-up (its full fence is most of a push's cost).  Zero, the
    /// value older formatters leave, keeps the wake-up: the safe reading.
    unwaited: AtomicU32,
}

#[repr(C)]
struct Header {
    meta: Line<Meta>,
    tail: Line<AtomicU64>,
    head: Line<AtomicU64>,
    ctl: Line<Ctl>,
}

#[repr(C)]
struct Slot<T> {
    seq: AtomicU64,
    val: UnsafeCell<T>,
}

// The header is a cross-process ABI: its size and field offsets must not change silently
// (that requires a RING_VERSION bump), version and pid must be in the first cache line, and
// head/tail/wait words must each have their own line (false sharing between producers and
// consumers is the main cost of a ring).
#[cfg(not(loom))]
const _: () = {
    use std::mem::{align_of, offset_of, size_of};
    assert!(size_of::<Header>() == RING_HEADER_BYTES);
    assert!(align_of::<Header>() == 64);
    assert!(size_of::<Meta>() <= 64);
    assert!(offset_of!(Meta, magic) == 0 && offset_of!(Meta, version) == 8);
    assert!(offset_of!(Meta, owner_pid) < 64);
    assert!(offset_of!(Header, tail) == 64);
    assert!(offset_of!(Header, head) == 128);
    assert!(offset_of!(Header, ctl) == 192);
    // A slot is its sequence word followed by the payload, 8-aligned.
    assert!(size_of::<Slot<u64>>() == 16 && size_of::<Slot<[u64; 4]>>() == 40);
};

fn valid_capacity(capacity: u32) -> bool {
    // >= 2: with one slot "published" (pos+1) and "freed for the next lap" (pos+cap) coincide.
    (2..=RING_MAX_CAPACITY).contains(&capacity) && capacity.is_power_of_two()
}

/// Memory that a heap ring (`new_boxed`) owns.
#[cfg(not(loom))]
struct Owned {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}
#[cfg(not(loom))]
impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: allocated in `new_boxed` with exactly this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

/// A view of a ring that lives in (possibly shared) memory.  Multi-producer,
/// multi-consumer; all positions are offsets from the ring's own base.
pub struct Ring<T: Pod> {
    hdr: NonNull<Header>,
    slots: NonNull<Slot<T>>,
    /// Cached at init/attach; never re-read from shared memory.
    cap: u64,
    mask: u64,
    #[cfg(not(loom))]
    _owned: Option<Owned>,
    #[cfg(loom)]
    _owned: Option<(Box<Header>, Box<[Slot<T>]>)>,
    _p: PhantomData<T>,
}

// SAFETY: all shared state is accessed through atomics or through slots whose ownership the
// sequence protocol transfers; T: Pod is Send + Sync.
unsafe impl<T: Pod> Send for Ring<T> {}
// SAFETY: as above.
unsafe impl<T: Pod> Sync for Ring<T> {}

impl<T: Pod> std::fmt::Debug for Ring<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring").field("capacity", &self.cap).field("len", &self.len()).finish()
    }
}

/// Push step 1 on any slot layout (typed rings and [`push_bytes`]): claims a position.
/// `seq(pos)` is the sequence word of the slot `pos` maps to.  `NoSpace` when full,
/// `InvalidArg` when corrupt.
#[inline]
fn reserve_in<'a>(tail: &AtomicU64, seq: impl Fn(u64) -> &'a AtomicU64) -> Result<u64> {
    // Relaxed: a stale value only costs a retry; the slot sequence decides.
    let mut pos = tail.load(Ordering::Relaxed);
    loop {
        // Acquire: pairs with pop step 4 (Release of pos + cap): the previous lap's
        // consumer has finished reading the payload we are about to overwrite.
        let s = seq(pos).load(Ordering::Acquire);
        let dif = s.wrapping_sub(pos) as i64;
        if dif == 0 {
            // Relaxed: the CAS arbitrates between producers only; the payload's
            // visibility is carried by the slot sequence (step 3).
            match tail.compare_exchange_weak(pos, pos.wrapping_add(1), Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Ok(pos),
                Err(cur) => pos = cur,
            }
        } else if dif < 0 {
            return Err(Error::NoSpace);
        } else {
            // Someone claimed `pos`.  Whoever stored `seq > pos` advanced `tail` past
            // `pos` before (and our Acquire load synchronised with that chain), so the
            // reload must move; if it does not, the slot memory is corrupt.
            let cur = tail.load(Ordering::Relaxed);
            if cur == pos {
                return Err(Error::InvalidArg);
            }
            pos = cur;
        }
    }
}

/// Appends one entry, given as its bytes, to the ring formatted at `mem` whatever its
/// entry type (the network engine receives entries as bytes and pushes them for the
/// initiator).  Same protocol, checks and return value as `push_or_overrun` (`overrun`)
/// or `push`; `InvalidArg` when `bytes` is not the ring's entry size or the header does
/// not describe a ring that fits in `len`.
///
/// # Safety
/// `mem` valid for `len` bytes for the duration of the call.
/// Under loom rings cannot live in raw memory (as [`Ring::attach`]): `Err(Unsupported)`.
///
/// # Safety
/// Same contract as the normal build.
#[cfg(loom)]
pub unsafe fn push_bytes(_mem: *mut u8, _len: usize, _bytes: &[u8], _overrun: bool) -> Result<bool> {
    Err(Error::Unsupported)
}

#[cfg(not(loom))]
pub unsafe fn push_bytes(mem: *mut u8, len: usize, bytes: &[u8], overrun: bool) -> Result<bool> {
    if mem.is_null() || (mem as usize) & 63 != 0 || len < RING_HEADER_BYTES {
        return Err(Error::InvalidArg);
    }
    let hdr = mem as *const Header;
    // SAFETY: `len` covers the header; alignment checked.
    let h = unsafe { &*hdr };
    if h.meta.0.magic.load(Ordering::Acquire) != RING_MAGIC {
        return Err(Error::InvalidArg);
    }
    // SAFETY: in bounds of the header, aligned; volatile copies validated below.
    let (version, entry_size, capacity, stride, slots_off, total_len) = unsafe {
        use std::ptr::{addr_of, read_volatile as rv};
        let m = &h.meta.0;
        (rv(addr_of!(m.version)), rv(addr_of!(m.entry_size)), rv(addr_of!(m.capacity)), rv(addr_of!(m.slot_stride)), rv(addr_of!(m.slots_offset)), rv(addr_of!(m.total_len)))
    };
    if version != RING_VERSION {
        return Err(Error::Version);
    }
    let stride = stride as usize;
    let need = (capacity as usize).checked_mul(stride).and_then(|v| v.checked_add(RING_HEADER_BYTES + 63)).map(|n| n & !63);
    if entry_size as usize != bytes.len()
        || !valid_capacity(capacity)
        || stride < 8 + bytes.len()
        || stride % 8 != 0
        || slots_off != RING_HEADER_BYTES as u64
        || need.map_or(true, |n| n as u64 != total_len || n > len)
    {
        return Err(Error::InvalidArg);
    }
    let mask = capacity as u64 - 1;
    // SAFETY: `(pos & mask) < capacity` and `capacity * stride` lies inside `len`.
    let slot = |pos: u64| unsafe { mem.add(RING_HEADER_BYTES + (pos & mask) as usize * stride) };
    // SAFETY: the slot's first 8 bytes are its 8-aligned sequence word.
    let seq = |pos: u64| unsafe { &*(slot(pos) as *const AtomicU64) };
    let pos = match reserve_in(&h.tail.0, seq) {
        Ok(p) => p,
        Err(Error::NoSpace) if overrun => {
            h.ctl.0.overrun.store(1, Ordering::Relaxed);
            return Ok(false);
        }
        Err(e) => return Err(e),
    };
    // Step 2, fill (as `push`).  SAFETY: the reserve made this slot ours until step 3.
    unsafe {
        let dst = slot(pos).add(8);
        for (i, b) in bytes.iter().enumerate() {
            std::ptr::write_volatile(dst.add(i), *b);
        }
    }
    // Step 3, Release: publishes the payload (pairs with the consumer's Acquire).
    seq(pos).store(pos.wrapping_add(1), Ordering::Release);
    if h.ctl.0.unwaited.load(Ordering::Relaxed) == 0 {
        h.ctl.0.wake.notify();
    }
    Ok(true)
}

/// A position of a [`Ring`] claimed and not yet published ([`Ring::claim`]).
#[must_use = "a claimed position holds up every later entry until it is published"]
pub struct Claim<'r, T: Pod> {
    ring: &'r Ring<T>,
    pos: u64,
}

impl<T: Pod> Claim<'_, T> {
    /// The claimed position (what [`Claim::publish`] passes its `fill`).
    #[inline(always)]
    pub fn pos(&self) -> u64 {
        self.pos
    }

    /// Push steps 2-4 at the claimed position: `fill(pos, slot)` writes the whole entry
    /// (volatile writes: shared memory), which is then published and sleepers woken.
    #[inline(always)]
    pub fn publish(self, fill: impl FnOnce(u64, *mut T)) {
        let (ring, pos) = (self.ring, self.pos);
        // Published here: no drop (which is for claims left unpublished).
        std::mem::forget(self);
        let slot = ring.slot(pos);
        // Step 2, fill: the reserve made this slot ours until step 3.
        slot.val.with_mut(|p| fill(pos, p));
        // Step 3, Release: publishes the payload; pairs with the Acquire in pop step 1.
        slot.seq.store(pos.wrapping_add(1), Ordering::Release);
        // Step 4 (Relaxed: the flag is fixed before the ring is shared).
        if ring.hdr().ctl.0.unwaited.load(Ordering::Relaxed) == 0 {
            ring.hdr().ctl.0.wake.notify();
        }
    }

    /// The claimed position, for a producer that publishes it later from a place the
    /// claim cannot be kept in (a completion callback that owns its ring by a
    /// reference count): it must come back through [`Ring::resume`] to be published.
    pub fn into_pos(self) -> u64 {
        let pos = self.pos;
        std::mem::forget(self);
        pos
    }
}

impl<T: Pod> Ring<T> {
    /// The claim of position `pos` that [`Claim::into_pos`] gave up.
    ///
    /// # Safety
    /// `pos` came from `into_pos` of a claim on this ring, and is resumed once.
    pub unsafe fn resume(&self, pos: u64) -> Claim<'_, T> {
        Claim { ring: self, pos }
    }
}

impl<T: Pod> Drop for Claim<'_, T> {
    /// A claim left unpublished (a bug of its producer) would stop the ring's consumers
    /// for good: it is published with whatever the slot held, and said so.
    #[cold]
    #[inline(never)]
    fn drop(&mut self) {
        crate::sn_warn!("ring", "a claimed entry was never written: published unchanged");
        // The slot is ours until published (step 1).
        self.ring.slot(self.pos).seq.store(self.pos.wrapping_add(1), Ordering::Release);
    }
}

impl<T: Pod> Ring<T> {
    /// Bytes of memory a ring of `capacity` entries (a power of two, >= 2) occupies;
    /// 0 if `capacity` or `T` is not acceptable.
    pub fn bytes_needed(capacity: u32) -> usize {
        if !valid_capacity(capacity) || std::mem::align_of::<T>() > 64 {
            return 0;
        }
        let Some(slots) = (capacity as usize).checked_mul(std::mem::size_of::<Slot<T>>()) else {
            return 0;
        };
        match slots.checked_add(RING_HEADER_BYTES + 63) {
            Some(n) => n & !63,
            None => 0,
        }
    }

    fn meta_for(capacity: u32) -> Meta {
        Meta {
            magic: AtomicU64::new(0),
            version: RING_VERSION,
            entry_size: std::mem::size_of::<T>() as u32,
            capacity,
            slot_stride: std::mem::size_of::<Slot<T>>() as u32,
            slots_offset: RING_HEADER_BYTES as u64,
            total_len: Self::bytes_needed(capacity) as u64,
            owner_pid: std::process::id(),
            entry_align: std::mem::align_of::<T>() as u32,
        }
    }

    fn new_header(capacity: u32) -> Header {
        Header {
            meta: Line(Self::meta_for(capacity)),
            tail: Line(AtomicU64::new(0)),
            head: Line(AtomicU64::new(0)),
            ctl: Line(Ctl { wake: WaitWords::new(), overrun: AtomicU32::new(0), unwaited: AtomicU32::new(0) }),
        }
    }

    fn new_slot(i: u64) -> Slot<T> {
        // SAFETY: T: Pod, every bit pattern (including zero) is a valid T.
        let zero: T = unsafe { std::mem::zeroed() };
        Slot { seq: AtomicU64::new(i), val: UnsafeCell::new(zero) }
    }

    fn from_parts(hdr: NonNull<Header>, slots: NonNull<Slot<T>>, capacity: u32) -> Self {
        Ring {
            hdr,
            slots,
            cap: capacity as u64,
            mask: capacity as u64 - 1,
            _owned: None,
            _p: PhantomData,
        }
    }

    /// Formats `len` bytes at `mem` as an empty ring.
    /// `Err(InvalidArg)` for a bad capacity (not a power of two >= 2), a null or
    /// misaligned `mem`, or `len < bytes_needed(capacity)`.
    /// # Safety
    /// `mem` valid for `len` bytes, 64-byte aligned, not used by anyone else during init.
    #[cfg(not(loom))]
    pub unsafe fn init(mem: *mut u8, len: usize, capacity: u32) -> Result<Self> {
        let need = Self::bytes_needed(capacity);
        if need == 0 || mem.is_null() || (mem as usize) & 63 != 0 || len < need {
            return Err(Error::InvalidArg);
        }
        let hdr = mem as *mut Header;
        // SAFETY: 64-aligned and the slots start at a multiple of 64 (align_of::<T>() <= 64).
        let slots = unsafe { mem.add(RING_HEADER_BYTES) } as *mut Slot<T>;
        // SAFETY: caller guarantees `mem..mem+len` is valid and exclusive; `need <= len`
        // covers the header and all `capacity` slots; alignment checked above.
        unsafe {
            hdr.write(Self::new_header(capacity));
            for i in 0..capacity as usize {
                slots.add(i).write(Self::new_slot(i as u64));
            }
            // Release: pairs with the Acquire load in `attach`; whoever sees the magic sees
            // the formatted header and slots.
            (*hdr).meta.0.magic.store(RING_MAGIC, Ordering::Release);
        }
        // SAFETY: non-null checked above.
        let (h, s) = unsafe { (NonNull::new_unchecked(hdr), NonNull::new_unchecked(slots)) };
        Ok(Self::from_parts(h, s, capacity))
    }

    /// As [`Ring::init`], for a ring nobody will ever wait on (e.g. a completion queue that
    /// is only polled): pushes skip the wake-up, and `wait_nonempty` refuses it
    /// (`Err(Unsupported)`) rather than sleep through a push.
    /// # Safety
    /// As for `init`.
    pub unsafe fn init_unwaited(mem: *mut u8, len: usize, capacity: u32) -> Result<Self> {
        // SAFETY: the caller's contract.
        let r = unsafe { Self::init(mem, len, capacity)? };
        // Before anyone can see the ring: the Release store of the magic in `init` came
        // first, but nobody has been told where the ring is yet.
        r.hdr().ctl.0.unwaited.store(1, Ordering::Relaxed);
        Ok(r)
    }

    /// Attaches to a ring formatted by `init` (maybe in another process, at another address).
    /// `Err(InvalidArg)` for a null/misaligned `mem`, a too small `len`, a bad magic, an entry
    /// size/stride/capacity that does not match `T` or `len`; `Err(Version)` for a different
    /// layout version.
    /// # Safety
    /// `mem` valid for `len` bytes for the life of the view.
    #[cfg(not(loom))]
    pub unsafe fn attach(mem: *mut u8, len: usize) -> Result<Self> {
        if mem.is_null() || (mem as usize) & 63 != 0 || len < RING_HEADER_BYTES {
            return Err(Error::InvalidArg);
        }
        let hdr = mem as *mut Header;
        // SAFETY: `len` covers the header; alignment checked.  Atomics are shared-mutable.
        let meta = unsafe { &(*hdr).meta.0 };
        // Acquire: pairs with the Release store at the end of `init`.
        if meta.magic.load(Ordering::Acquire) != RING_MAGIC {
            return Err(Error::InvalidArg);
        }
        // Volatile copies: the fields are plain memory another (maybe broken) process could
        // scribble on; read each once and validate the copies.
        // SAFETY: in bounds of the header, aligned.
        let (version, entry_size, capacity, stride, slots_off, total_len, align) = unsafe {
            use std::ptr::{addr_of, read_volatile as rv};
            (
                rv(addr_of!(meta.version)),
                rv(addr_of!(meta.entry_size)),
                rv(addr_of!(meta.capacity)),
                rv(addr_of!(meta.slot_stride)),
                rv(addr_of!(meta.slots_offset)),
                rv(addr_of!(meta.total_len)),
                rv(addr_of!(meta.entry_align)),
            )
        };
        if version != RING_VERSION {
            return Err(Error::Version);
        }
        if entry_size as usize != std::mem::size_of::<T>()
            || align as usize != std::mem::align_of::<T>()
            || stride as usize != std::mem::size_of::<Slot<T>>()
            || slots_off != RING_HEADER_BYTES as u64
        {
            return Err(Error::InvalidArg);
        }
        let need = Self::bytes_needed(capacity);
        if need == 0 || total_len != need as u64 || len < need {
            return Err(Error::InvalidArg);
        }
        // SAFETY: `need <= len`, so the slot array is inside the mapping.
        let slots = unsafe { mem.add(RING_HEADER_BYTES) } as *mut Slot<T>;
        // SAFETY: `mem` non-null (checked), so are the derived pointers.
        let (h, s) = unsafe { (NonNull::new_unchecked(hdr), NonNull::new_unchecked(slots)) };
        Ok(Self::from_parts(h, s, capacity))
    }

    /// Under loom rings cannot live in raw memory: always `Err(Unsupported)`; use `new_boxed`.
    /// # Safety
    /// Same contract as the normal build.
    #[cfg(loom)]
    pub unsafe fn init(mem: *mut u8, len: usize, capacity: u32) -> Result<Self> {
        let _ = (mem, len, capacity);
        Err(Error::Unsupported)
    }

    /// Under loom: always `Err(Unsupported)` (see `init`).
    /// # Safety
    /// Same contract as the normal build.
    #[cfg(loom)]
    pub unsafe fn attach(mem: *mut u8, len: usize) -> Result<Self> {
        let _ = (mem, len);
        Err(Error::Unsupported)
    }

    /// A process-local ring on the heap (freed when the view is dropped).
    #[cfg(not(loom))]
    pub fn new_boxed(capacity: u32) -> Result<Self> {
        let need = Self::bytes_needed(capacity);
        if need == 0 {
            return Err(Error::InvalidArg);
        }
        let layout = std::alloc::Layout::from_size_align(need, 64).map_err(|_| Error::InvalidArg)?;
        // SAFETY: `need > 0`.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(Error::NoSpace);
        }
        let owned = Owned { ptr, layout };
        // SAFETY: fresh allocation of `need` bytes, 64-aligned, exclusively ours.
        let mut ring = unsafe { Self::init(ptr, need, capacity)? };
        ring._owned = Some(owned);
        Ok(ring)
    }

    /// A ring built from loom objects on the heap (the only kind loom can model).
    #[cfg(loom)]
    pub fn new_boxed(capacity: u32) -> Result<Self> {
        if !valid_capacity(capacity) {
            return Err(Error::InvalidArg);
        }
        let hdr = Box::new(Self::new_header(capacity));
        hdr.meta.0.magic.store(RING_MAGIC, Ordering::Relaxed);
        let slots: Box<[Slot<T>]> = (0..capacity as u64).map(Self::new_slot).collect();
        let h = NonNull::from(&*hdr);
        // SAFETY: a boxed slice of `capacity >= 2` elements is non-null.
        let s = unsafe { NonNull::new_unchecked(slots.as_ptr() as *mut Slot<T>) };
        let mut ring = Self::from_parts(h, s, capacity);
        ring._owned = Some((hdr, slots));
        Ok(ring)
    }

    #[inline(always)]
    fn hdr(&self) -> &Header {
        // SAFETY: valid for the life of the view (init/attach contract or owned allocation).
        unsafe { self.hdr.as_ref() }
    }

    #[inline(always)]
    fn slot(&self, pos: u64) -> &Slot<T> {
        // SAFETY: `pos & mask < cap`, and the view covers `cap` slots (checked at
        // init/attach with the cached, not re-read, capacity).
        unsafe { &*self.slots.as_ptr().add((pos & self.mask) as usize) }
    }

    /// Push step 1: claims a position.  `NoSpace` when full, `InvalidArg` when corrupt.
    #[inline(always)]
    fn reserve(&self) -> Result<u64> {
        reserve_in(&self.hdr().tail.0, |pos| &self.slot(pos).seq)
    }

    /// Appends `v`; `Err(NoSpace)` when full (nothing written).  Wakes sleepers.  Always
    /// inlined: a CAS and a few loads and stores, on the path of every notice.
    #[inline(always)]
    pub fn push(&self, v: &T) -> Result<()> {
        // SAFETY: the whole entry is written into the slot the push reserved.
        self.push_in_place(|_, p| unsafe { std::ptr::write_volatile(p, *v) })
    }

    /// `push` of the entry `make(pos)` builds once position `pos` is claimed (and before
    /// it is published): a producer whose entry names where it lands (an index into a
    /// table of its own beside the ring, by `pos`) builds it there.  `Err(NoSpace)` when
    /// full (`make` is not run).  `make` must be short: the consumers of later entries
    /// wait for it.
    #[inline(always)]
    pub fn push_with(&self, make: impl FnOnce(u64) -> T) -> Result<()> {
        self.push_in_place(|pos, p| {
            let v = make(pos);
            // SAFETY: the whole entry is written into the slot the push reserved.
            unsafe { std::ptr::write_volatile(p, v) }
        })
    }

    /// The one push: claims position `pos`, lets `fill(pos, slot)` write the entry into
    /// its slot (volatile writes: the memory is shared with other processes), publishes
    /// it and wakes sleepers.  For a producer that builds the entry from values in
    /// registers, so that it is not first built on the stack and copied.  `fill` must
    /// write the whole entry (the slot holds the previous lap's before) and be short (the
    /// consumers of later entries wait for it).  `Err(NoSpace)` when full (`fill` is not
    /// run).  Always inlined.
    #[inline(always)]
    pub fn push_in_place(&self, fill: impl FnOnce(u64, *mut T)) -> Result<()> {
        self.claim()?.publish(fill);
        Ok(())
    }

    /// Push step 1 alone: claims the next position for an entry published later
    /// ([`Claim::publish`], steps 2-4).  Consumers stop at a claimed position until it is
    /// published, so an entry claimed before something happens is seen before every entry
    /// that something causes, whoever pushes those.  The producer must publish soon and
    /// on every path (a claim dropped unpublished is published as the slot's old entry,
    /// see [`Claim`]'s drop): consumers of later entries wait meanwhile.  `NoSpace` when
    /// full, `InvalidArg` when corrupt.
    #[inline(always)]
    pub fn claim(&self) -> Result<Claim<'_, T>> {
        Ok(Claim { ring: self, pos: self.reserve()? })
    }

    /// Push steps 1-3 for a producer that the caller serialises with every other producer
    /// of this ring (a lock they all hold while pushing, which also orders their stores
    /// to `tail`): the position is claimed with a plain store instead of a
    /// compare-exchange, and step 4 is left to the caller, who issues a full fence after
    /// publishing (releasing its lock with an atomic exchange is one) and then calls
    /// `notify_fenced` on [`Ring::waker`]: a lock-holder that publishes into several rings
    /// pays one fence for all of them.  `NoSpace` when full (nothing written),
    /// `InvalidArg` when the slot sequence is inconsistent (corrupt memory).
    ///
    /// # Safety
    /// No other push of any kind may run on this ring concurrently (two producers could
    /// fill one slot).
    pub unsafe fn push_serialized(&self, v: &T) -> Result<()> {
        let tail = &self.hdr().tail.0;
        // Relaxed: the previous producer's store is ordered before ours by the caller's lock.
        let pos = tail.load(Ordering::Relaxed);
        let slot = self.slot(pos);
        // Acquire: pairs with pop step 4, as in `reserve_in`.
        let dif = slot.seq.load(Ordering::Acquire).wrapping_sub(pos) as i64;
        if dif < 0 {
            return Err(Error::NoSpace);
        }
        if dif > 0 {
            // Only a producer past `pos` could have stored it: there is none.
            return Err(Error::InvalidArg);
        }
        tail.store(pos.wrapping_add(1), Ordering::Relaxed);
        // Steps 2 and 3 as in `push`.  SAFETY: the slot is ours until step 3 (no other
        // producer, the caller's contract).
        slot.val.with_mut(|p| unsafe { std::ptr::write_volatile(p, *v) });
        slot.seq.store(pos.wrapping_add(1), Ordering::Release);
        Ok(())
    }

    /// The memory the next push will fill (its slot: sequence word and entry), as a hint
    /// for a producer that wants to start fetching those cache lines before it pushes
    /// (they are usually in the consumer's cache).  Only an address: by the time it is
    /// used another push may have taken the slot, which costs the hint, nothing else.
    pub fn next_slot(&self) -> (*const u8, usize) {
        // Relaxed: a hint.
        let pos = self.hdr().tail.0.load(Ordering::Relaxed);
        (self.slot(pos) as *const Slot<T> as *const u8, std::mem::size_of::<Slot<T>>())
    }

    /// The wait words a producer of [`Ring::push_serialized`] notifies (after its fence);
    /// `None` for a ring nobody waits on.
    pub fn waker(&self) -> Option<&WaitWords> {
        // Relaxed: the flag is fixed before the ring is shared.
        (self.hdr().ctl.0.unwaited.load(Ordering::Relaxed) == 0).then_some(&self.hdr().ctl.0.wake)
    }

    /// Like `push`, but on a full ring records an overrun (see `overrun`) instead.
    /// Returns true if `v` was appended, false if it was dropped and the overrun flag set.
    pub fn push_or_overrun(&self, v: &T) -> bool {
        match self.push(v) {
            Ok(()) => true,
            Err(_) => {
                // Relaxed: a standalone flag, it publishes no other data.
                self.hdr().ctl.0.overrun.store(1, Ordering::Relaxed);
                false
            }
        }
    }

    /// Removes the oldest entry.  Always inlined (see `push`).
    #[inline(always)]
    pub fn pop(&self) -> Option<T> {
        // SAFETY: `p` is the claimed slot's payload (see `pop_with`).  Volatile: the memory
        // is shared with other processes.
        self.pop_with(|p| unsafe { std::ptr::read_volatile(p) })
    }

    /// `pop` that hands `f` the oldest entry in place, a pointer to its payload valid
    /// (and the slot this consumer's) until `f` returns, instead of copying it out: a
    /// consumer that wants only some fields reads just those (with volatile reads: the
    /// memory is shared with other processes).  Returns what `f` returned.
    #[inline(always)]
    pub fn pop_with<R>(&self, f: impl FnOnce(*const T) -> R) -> Option<R> {
        let head = &self.hdr().head.0;
        // Relaxed: a stale value only costs a retry; the slot sequence decides.
        let mut pos = head.load(Ordering::Relaxed);
        let slot = loop {
            let slot = self.slot(pos);
            // Step 1, Acquire: pairs with push step 3 (Release of pos + 1).
            let seq = slot.seq.load(Ordering::Acquire);
            let dif = seq.wrapping_sub(pos.wrapping_add(1)) as i64;
            if dif == 0 {
                // Relaxed: arbitrates between consumers; the payload is already visible.
                match head.compare_exchange_weak(pos, pos.wrapping_add(1), Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => break slot,
                    Err(cur) => pos = cur,
                }
            } else if dif < 0 {
                return None;
            } else {
                // Another consumer took `pos` (it moved `head` before freeing the slot); a
                // reload that does not move means corrupt memory.
                let cur = head.load(Ordering::Relaxed);
                if cur == pos {
                    return None;
                }
                pos = cur;
            }
        };
        // Step 2, read: the slot is ours (step 1 claimed it) until step 4.
        let r = slot.val.with(f);
        // Step 4, Release: hands the slot to the next lap's producer; pairs with the Acquire
        // in push step 1.
        slot.seq.store(pos.wrapping_add(self.cap), Ordering::Release);
        Some(r)
    }

    /// `pop` for a consumer that the caller serialises with every other consumer of this
    /// ring (a lock): `head` moves with a plain store instead of a compare-exchange.
    /// Producers may run concurrently.
    ///
    /// # Safety
    /// No other pop of any kind may run on this ring concurrently (two consumers could
    /// take one entry).
    pub unsafe fn pop_serialized(&self) -> Option<T> {
        let head = &self.hdr().head.0;
        // Relaxed: the previous consumer's store is ordered before ours by the caller's lock.
        let pos = head.load(Ordering::Relaxed);
        let slot = self.slot(pos);
        // Step 1, Acquire: pairs with push step 3.  Anything but "published for `pos`" is
        // empty (or, with no other consumer, corrupt memory: nothing to take either).
        if slot.seq.load(Ordering::Acquire) != pos.wrapping_add(1) {
            return None;
        }
        head.store(pos.wrapping_add(1), Ordering::Relaxed);
        // Steps 2 and 4 as in `pop`.  SAFETY: the slot is ours until step 4.
        let v = slot.val.with(|p| unsafe { std::ptr::read_volatile(p) });
        slot.seq.store(pos.wrapping_add(self.cap), Ordering::Release);
        Some(v)
    }

    /// The memory the next pop will read (the slot at `head`), as a hint for a consumer
    /// that waits on an empty ring: that is the slot the next push fills, found without
    /// reading the producers' `tail` line (a read that would cost the next producer a
    /// cache-line upgrade on its critical path).
    pub fn head_slot(&self) -> (*const u8, usize) {
        // Relaxed: a hint.
        let pos = self.hdr().head.0.load(Ordering::Relaxed);
        (self.slot(pos) as *const Slot<T> as *const u8, std::mem::size_of::<Slot<T>>())
    }

    /// True when `pop` would find an entry now (the slot at `head` is published).
    fn ready(&self) -> bool {
        let head = &self.hdr().head.0;
        let mut pos = head.load(Ordering::Relaxed);
        loop {
            // Acquire: pairs with push step 3, as in pop.
            let seq = self.slot(pos).seq.load(Ordering::Acquire);
            let dif = seq.wrapping_sub(pos.wrapping_add(1)) as i64;
            if dif == 0 {
                return true;
            } else if dif < 0 {
                return false;
            }
            let cur = head.load(Ordering::Relaxed);
            if cur == pos {
                return false;
            }
            pos = cur;
        }
    }

    /// Number of entries (a snapshot: reserved-but-unpublished and being-read slots count).
    pub fn len(&self) -> usize {
        // Relaxed snapshots; head first so that a concurrent pop cannot make head > tail
        // in the common case, and clamp for the rest.
        let h = self.hdr().head.0.load(Ordering::Relaxed);
        let t = self.hdr().tail.0.load(Ordering::Relaxed);
        let d = t.wrapping_sub(h) as i64;
        d.clamp(0, self.cap as i64) as usize
    }

    /// True when `pop` would find nothing right now (an entry reserved but not yet
    /// published counts as absent, unlike in `len`).
    pub fn is_empty(&self) -> bool {
        !self.ready()
    }

    pub fn capacity(&self) -> u32 {
        self.cap as u32
    }

    /// True once a push found the ring full (sticky until `clear_overrun`).
    pub fn overrun(&self) -> bool {
        // Relaxed: see push_or_overrun.
        self.hdr().ctl.0.overrun.load(Ordering::Relaxed) != 0
    }

    /// Records an overrun without a push (an event dropped as if the ring were full).
    pub fn mark_overrun(&self) {
        self.hdr().ctl.0.overrun.store(1, Ordering::Relaxed);
    }

    pub fn clear_overrun(&self) {
        self.hdr().ctl.0.overrun.store(0, Ordering::Relaxed);
    }

    /// Waits until the ring is non-empty: spin briefly, then futex sleep.
    /// `None` waits forever; `Err(Timeout)` when the time runs out.  Another consumer may
    /// still take the entry before the caller's `pop`.  A cancellation point of the blocking
    /// call it runs in (a consumer waits for what the call is about; see [`crate::cancel`]).
    pub fn wait_nonempty(&self, timeout: Option<Duration>) -> Result<()> {
        if self.hdr().ctl.0.unwaited.load(Ordering::Relaxed) != 0 {
            return Err(Error::Unsupported);
        }
        #[cfg(not(loom))]
        BEFORE_SLEEP.call(());
        crate::cancel::point(|| self.hdr().ctl.0.wake.wait_until(|| self.ready(), timeout))
    }

    /// Waits until any of `rings` has an entry: one sleep on all of them
    /// ([`crate::wait::wait_any`]), woken by the first push to any.  `Err(Unsupported)`,
    /// before any wait, when one sleep cannot cover them (more than
    /// [`crate::wait::WAIT_ANY_MAX`] rings, or a kernel without `futex_waitv`) or one of
    /// them is never waited on (`init_unwaited`).  A cancellation point, as `wait_nonempty`.
    #[cfg(not(loom))]
    pub fn wait_any_nonempty(rings: &[&Ring<T>], timeout: Option<Duration>) -> Result<()> {
        if rings.iter().any(|r| r.hdr().ctl.0.unwaited.load(Ordering::Relaxed) != 0) {
            return Err(Error::Unsupported);
        }
        BEFORE_SLEEP.call(());
        let words: Vec<&WaitWords> = rings.iter().map(|r| &r.hdr().ctl.0.wake).collect();
        crate::cancel::point(|| crate::wait::wait_any(&words, || rings.iter().any(|r| r.ready()), timeout))
    }

    /// Consumers currently asleep (or about to sleep) in `wait_nonempty`; diagnostics/tests.
    pub fn sleepers(&self) -> u32 {
        self.hdr().ctl.0.wake.sleepers()
    }

    /// The pid of the process that formatted the ring (as recorded in the header).
    pub fn owner_pid(&self) -> u32 {
        // SAFETY: in bounds, aligned; volatile because another process may write it.
        unsafe { std::ptr::read_volatile(std::ptr::addr_of!(self.hdr().meta.0.owner_pid)) }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    /// 64-aligned scratch memory for init/attach tests.
    struct Buf(Vec<u64>);
    impl Buf {
        fn new(len: usize) -> Self {
            Buf(vec![0u64; len / 8 + 16])
        }
        fn ptr(&mut self) -> *mut u8 {
            let p = self.0.as_mut_ptr() as *mut u8;
            // SAFETY: the vector has 128 spare bytes for the alignment offset.
            unsafe { p.add(p.align_offset(64)) }
        }
    }

    #[test]
    fn an_empty_ring_waits_on_the_slot_the_next_push_fills() {
        let r = Ring::<u64>::new_boxed(4).unwrap();
        for i in 0..11u64 {
            assert!(r.is_empty());
            // What a waiting consumer watches is where the producer writes next.
            assert_eq!(r.head_slot(), r.next_slot(), "after {i} push/pop pairs");
            r.push(&i).unwrap();
            assert_ne!(r.head_slot(), r.next_slot());
            assert_eq!(r.pop(), Some(i));
        }
    }

    #[test]
    fn a_claimed_position_holds_back_what_is_pushed_after_it() {
        let r = Ring::<u64>::new_boxed(4).unwrap();
        r.push(&1).unwrap();
        let c = r.claim().unwrap();
        r.push(&3).unwrap();
        // The entry before the claim is there; the one after waits for it.
        assert_eq!(r.pop(), Some(1));
        assert_eq!(r.pop(), None);
        c.publish(|_, p| unsafe { std::ptr::write_volatile(p, 2) });
        assert_eq!(r.pop(), Some(2));
        assert_eq!(r.pop(), Some(3));
        // A claim given up as a position and resumed publishes where it was claimed.
        let pos = r.claim().unwrap().into_pos();
        r.push(&5).unwrap();
        assert_eq!(r.pop(), None);
        // SAFETY: claimed on this ring just now, resumed once.
        unsafe { r.resume(pos) }.publish(|at, p| unsafe { std::ptr::write_volatile(p, 4 + at - pos) });
        assert_eq!((r.pop(), r.pop(), r.pop()), (Some(4), Some(5), None));
        // Claims count against the capacity.
        let held: Vec<_> = (0..4).map(|_| r.claim().unwrap()).collect();
        assert!(matches!(r.claim(), Err(Error::NoSpace)));
        for (i, c) in held.into_iter().enumerate() {
            c.publish(|_, p| unsafe { std::ptr::write_volatile(p, 10 + i as u64) });
        }
        assert_eq!((0..4).map(|_| r.pop().unwrap()).collect::<Vec<_>>(), vec![10, 11, 12, 13]);
    }

    #[test]
    fn a_claim_dropped_unpublished_does_not_stop_the_ring() {
        let r = Ring::<u64>::new_boxed(4).unwrap();
        drop(r.claim().unwrap());
        r.push(&7).unwrap();
        // The abandoned slot comes out with whatever it held (zeroes here), then the rest.
        assert_eq!(r.pop(), Some(0));
        assert_eq!(r.pop(), Some(7));
    }

    #[test]
    fn fifo_full_empty() {
        let r = Ring::<u64>::new_boxed(4).unwrap();
        assert_eq!(r.capacity(), 4);
        assert!(r.is_empty());
        assert_eq!(r.pop(), None);
        for round in 0..5u64 {
            for i in 0..4 {
                r.push(&(round * 10 + i)).unwrap();
            }
            assert_eq!(r.len(), 4);
            assert_eq!(r.push(&99), Err(Error::NoSpace));
            assert_eq!(r.len(), 4, "a refused push writes nothing");
            for i in 0..4 {
                assert_eq!(r.pop(), Some(round * 10 + i));
            }
            assert_eq!(r.pop(), None);
            assert!(r.is_empty());
        }
        assert!(!r.overrun(), "push() never sets the overrun flag");
    }

    /// `push_with` hands its builder the claimed position, one per push in order, and on a
    /// full ring does not run it.
    #[test]
    fn push_with_builds_from_the_claimed_position() {
        let r = Ring::<u64>::new_boxed(4).unwrap();
        let mut seen = Vec::new();
        for round in 0..3u64 {
            for _ in 0..4 {
                r.push_with(|pos| {
                    seen.push(pos);
                    pos * 10
                })
                .unwrap();
            }
            assert_eq!(r.push_with(|_| panic!("built for a full ring")), Err(Error::NoSpace));
            for i in 0..4 {
                assert_eq!(r.pop(), Some((round * 4 + i) * 10));
            }
        }
        assert_eq!(seen, (0..12).collect::<Vec<u64>>());
    }

    #[test]
    fn overrun_is_sticky() {
        let r = Ring::<[u64; 2]>::new_boxed(2).unwrap();
        assert!(r.push_or_overrun(&[1, 1]));
        assert!(r.push_or_overrun(&[2, 2]));
        assert!(!r.overrun());
        assert!(!r.push_or_overrun(&[3, 3]));
        assert!(r.overrun());
        assert_eq!(r.pop(), Some([1, 1]));
        assert!(r.overrun(), "sticky until cleared");
        assert!(r.push_or_overrun(&[4, 4]));
        assert!(r.overrun());
        r.clear_overrun();
        assert!(!r.overrun());
        assert_eq!(r.pop(), Some([2, 2]));
        assert_eq!(r.pop(), Some([4, 4]));
        assert_eq!(r.pop(), None);
    }

    #[test]
    fn bad_capacity() {
        for c in [0u32, 1, 3, 6, RING_MAX_CAPACITY * 2, u32::MAX] {
            assert_eq!(Ring::<u64>::bytes_needed(c), 0, "cap {c}");
            assert_eq!(Ring::<u64>::new_boxed(c).err(), Some(Error::InvalidArg), "cap {c}");
        }
        assert_eq!(Ring::<u64>::bytes_needed(2), 256 + 64);
        assert_eq!(Ring::<[u64; 4]>::bytes_needed(8), 256 + 8 * 40); // 576, already a multiple of 64
        assert_eq!(Ring::<[u64; 4]>::bytes_needed(4), 256 + 4 * 40 + 32); // rounded up to 64
    }

    #[test]
    fn init_attach_and_validation() {
        let need = Ring::<[u64; 2]>::bytes_needed(8);
        let mut b = Buf::new(need);
        let p = b.ptr();
        unsafe {
            assert_eq!(Ring::<[u64; 2]>::init(p, need - 1, 8).err(), Some(Error::InvalidArg));
            assert_eq!(Ring::<[u64; 2]>::init(p.add(8), need, 8).err(), Some(Error::InvalidArg));
            assert_eq!(Ring::<[u64; 2]>::init(std::ptr::null_mut(), need, 8).err(), Some(Error::InvalidArg));
            assert_eq!(Ring::<[u64; 2]>::attach(p, need).err(), Some(Error::InvalidArg), "unformatted");

            let a = Ring::<[u64; 2]>::init(p, need, 8).unwrap();
            a.push(&[7, 8]).unwrap();
            assert_eq!(a.owner_pid(), std::process::id());
            // A second view (as another process would have) sees the same ring.
            let b2 = Ring::<[u64; 2]>::attach(p, need).unwrap();
            assert_eq!(b2.capacity(), 8);
            assert_eq!(b2.pop(), Some([7, 8]));
            assert!(a.is_empty());

            assert_eq!(Ring::<[u64; 2]>::attach(p, need - 64).err(), Some(Error::InvalidArg), "short len");
            assert_eq!(Ring::<[u64; 2]>::attach(p, 100).err(), Some(Error::InvalidArg), "shorter than header");
            assert_eq!(Ring::<[u64; 2]>::attach(std::ptr::null_mut(), need).err(), Some(Error::InvalidArg));
            assert_eq!(Ring::<u64>::attach(p, need).err(), Some(Error::InvalidArg), "entry size");
            assert_eq!(Ring::<[u64; 4]>::attach(p, need).err(), Some(Error::InvalidArg), "entry size");

            // Corrupt one field at a time; each must be refused without touching slots.
            let corrupt = |off: usize, val: u32, want: Error| {
                let f = p.add(off) as *mut u32;
                let old = f.read();
                f.write(val);
                assert_eq!(Ring::<[u64; 2]>::attach(p, need).err(), Some(want), "offset {off} = {val}");
                f.write(old);
                assert!(Ring::<[u64; 2]>::attach(p, need).is_ok());
            };
            corrupt(0, 0x1234, Error::InvalidArg); // magic
            corrupt(8, RING_VERSION + 1, Error::Version); // version
            corrupt(12, 8, Error::InvalidArg); // entry size
            corrupt(16, 16, Error::InvalidArg); // capacity: larger than the memory
            corrupt(16, 7, Error::InvalidArg); // capacity: not a power of two
            corrupt(16, 0, Error::InvalidArg); // capacity: zero
            corrupt(20, 32, Error::InvalidArg); // slot stride
            corrupt(24, 0, Error::InvalidArg); // slots offset
            corrupt(32, 0, Error::InvalidArg); // total len
        }
    }

    #[test]
    fn corrupted_slot_sequence_does_not_hang() {
        let need = Ring::<u64>::bytes_needed(4);
        let mut b = Buf::new(need);
        let p = b.ptr();
        let r = unsafe { Ring::<u64>::init(p, need, 4).unwrap() };
        // Slot 0's sequence far in the future: "claimed by someone" although tail is 0.
        unsafe { (p.add(RING_HEADER_BYTES) as *mut u64).write(1000) };
        assert_eq!(r.push(&1), Err(Error::InvalidArg));
        assert_eq!(r.pop(), None);
        assert!(r.is_empty());
    }

    /// N producers, M consumers, exact multiset and per-producer order per consumer.
    fn mpmc(producers: u64, consumers: usize, per: u64, cap: u32) {
        let r = Arc::new(Ring::<[u64; 2]>::new_boxed(cap).unwrap());
        let done = Arc::new(AtomicBool::new(false));
        let mut cons = Vec::new();
        for _ in 0..consumers {
            let (r, done) = (r.clone(), done.clone());
            cons.push(std::thread::spawn(move || {
                let mut got = Vec::new();
                let mut last = vec![None::<u64>; producers as usize];
                loop {
                    match r.pop() {
                        Some([id, seq]) => {
                            let l = &mut last[id as usize];
                            assert!(!matches!(*l, Some(l) if seq <= l), "per-producer order");
                            *l = Some(seq);
                            got.push((id, seq));
                        }
                        None if done.load(std::sync::atomic::Ordering::Acquire) && r.is_empty() => break,
                        None => {
                            let _ = r.wait_nonempty(Some(Duration::from_millis(5)));
                        }
                    }
                }
                got
            }));
        }
        let t0 = std::time::Instant::now();
        let prods: Vec<_> = (0..producers)
            .map(|id| {
                let r = r.clone();
                std::thread::spawn(move || {
                    for seq in 0..per {
                        while r.push(&[id, seq]).is_err() {
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        for p in prods {
            p.join().unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Release);
        let mut all: Vec<(u64, u64)> = cons.into_iter().flat_map(|c| c.join().unwrap()).collect();
        let secs = t0.elapsed().as_secs_f64();
        println!(
            "ring threads: {producers}p/{consumers}c cap {cap}: {:.2} M entries/s",
            (producers * per) as f64 / secs / 1e6
        );
        all.sort_unstable();
        let want: Vec<(u64, u64)> = (0..producers).flat_map(|id| (0..per).map(move |s| (id, s))).collect();
        assert_eq!(all.len(), want.len(), "lost or duplicated entries");
        assert!(all == want, "wrong multiset of entries");
    }

    #[test]
    fn serialized_push_and_pop_keep_the_protocol() {
        let r = Ring::<u64>::new_boxed(4).unwrap();
        for round in 0..5u64 {
            // Both kinds of push and pop on one ring, one at a time.
            for i in 0..4 {
                let v = round * 10 + i;
                if i % 2 == 0 {
                    unsafe { r.push_serialized(&v).unwrap() };
                } else {
                    r.push(&v).unwrap();
                }
            }
            assert_eq!(unsafe { r.push_serialized(&99) }, Err(Error::NoSpace));
            assert_eq!(r.len(), 4, "a refused push writes nothing");
            for i in 0..4 {
                let got = if (i + round) % 2 == 0 { unsafe { r.pop_serialized() } } else { r.pop() };
                assert_eq!(got, Some(round * 10 + i));
            }
            assert_eq!(unsafe { r.pop_serialized() }, None);
        }
        // A sequence word no producer could have stored: refused, not overwritten.
        let need = Ring::<u64>::bytes_needed(4);
        let mut b = Buf::new(need);
        let p = b.ptr();
        let c = unsafe { Ring::<u64>::init(p, need, 4).unwrap() };
        unsafe { (p.add(RING_HEADER_BYTES) as *mut u64).write(1000) };
        assert_eq!(unsafe { c.push_serialized(&1) }, Err(Error::InvalidArg));
        assert_eq!(unsafe { c.pop_serialized() }, None);
    }

    #[test]
    fn serialized_threads_under_locks_and_a_fenced_wake() {
        // Producers serialised by one mutex, consumers by another (as Portals' NI lock and
        // queue lock do); every entry taken exactly once.  The consumers sleep in
        // wait_nonempty, so a lost fenced wake-up shows as a timeout.
        const STOP: u64 = u64::MAX;
        let r = Arc::new(Ring::<u64>::new_boxed(8).unwrap());
        let (plock, clock) = (Arc::new(std::sync::Mutex::new(())), Arc::new(std::sync::Mutex::new(())));
        let (per, producers, consumers) = (20_000u64, 3u64, 2);
        let push = |r: &Ring<u64>, plock: &std::sync::Mutex<()>, v: u64| loop {
            let g = plock.lock().unwrap();
            let ok = unsafe { r.push_serialized(&v) }.is_ok();
            drop(g);
            // The mutex's release is not a full fence everywhere: the test adds one.
            crate::sync::full_fence();
            r.waker().expect("a waited ring").notify_fenced();
            if ok {
                return;
            }
            std::thread::yield_now();
        };
        let prod: Vec<_> = (0..producers)
            .map(|id| {
                let (r, plock) = (r.clone(), plock.clone());
                std::thread::spawn(move || (0..per).for_each(|i| push(&r, &plock, id * per + i)))
            })
            .collect();
        let cons: Vec<_> = (0..consumers)
            .map(|_| {
                let (r, clock) = (r.clone(), clock.clone());
                std::thread::spawn(move || {
                    let mut got = Vec::new();
                    loop {
                        let v = {
                            let _g = clock.lock().unwrap();
                            unsafe { r.pop_serialized() }
                        };
                        match v {
                            Some(STOP) => return got,
                            Some(v) => got.push(v),
                            None => r.wait_nonempty(Some(Duration::from_secs(10))).expect("woken by a fenced notify"),
                        }
                    }
                })
            })
            .collect();
        prod.into_iter().for_each(|p| p.join().unwrap());
        (0..consumers).for_each(|_| push(&r, &plock, STOP));
        let mut all: Vec<u64> = cons.into_iter().flat_map(|c| c.join().unwrap()).collect();
        all.sort_unstable();
        assert!(all == (0..producers * per).collect::<Vec<_>>(), "lost or duplicated entries");
    }

    #[test]
    fn mpmc_threads_4p_1c() {
        mpmc(4, 1, 50_000, 64);
    }

    #[test]
    fn mpmc_threads_3p_3c_small_ring() {
        mpmc(3, 3, 30_000, 4);
    }

    #[test]
    fn wait_any_nonempty_is_one_sleep_on_every_ring() {
        let rings: Arc<Vec<Ring<u64>>> = Arc::new((0..3).map(|_| Ring::<u64>::new_boxed(8).unwrap()).collect());
        {
            let refs: Vec<&Ring<u64>> = rings.iter().collect();
            assert_eq!(Ring::wait_any_nonempty(&refs, Some(Duration::from_millis(20))), Err(Error::Timeout));
        }
        let r2 = rings.clone();
        let th = std::thread::spawn(move || {
            let refs: Vec<&Ring<u64>> = r2.iter().collect();
            Ring::wait_any_nonempty(&refs, None).unwrap();
            r2[1].pop()
        });
        // Asleep on all three at once (a wait that visits them in turn is on one at a time).
        let t = std::time::Instant::now();
        while rings.iter().any(|r| r.sleepers() == 0) {
            assert!(t.elapsed() < Duration::from_secs(10), "not asleep on every ring");
            std::thread::sleep(Duration::from_millis(1));
        }
        rings[1].push(&7).unwrap();
        assert_eq!(th.join().unwrap(), Some(7));
        assert!(rings.iter().all(|r| r.sleepers() == 0));
    }

    #[test]
    fn unwaited_rings_skip_the_wake_and_refuse_waits() {
        let mut mem = vec![0u64; Ring::<u64>::bytes_needed(8) / 8 + 8];
        let p = ((mem.as_mut_ptr() as usize + 63) & !63) as *mut u8;
        // SAFETY: inside `mem`, 64-aligned, exclusive.
        let r = unsafe { Ring::<u64>::init_unwaited(p, Ring::<u64>::bytes_needed(8), 8) }.unwrap();
        // SAFETY: the ring just formatted, seen as a peer would.
        let peer = unsafe { Ring::<u64>::attach(p, Ring::<u64>::bytes_needed(8)) }.unwrap();
        assert_eq!(r.wait_nonempty(Some(Duration::from_millis(1))), Err(Error::Unsupported));
        assert_eq!(Ring::wait_any_nonempty(&[&r], None), Err(Error::Unsupported));
        // Pushes from any view work without a wake-up; entries come out in order.
        for v in 0..8u64 {
            (if v % 2 == 0 { &r } else { &peer }).push(&v).unwrap();
        }
        assert_eq!(r.push(&99), Err(Error::NoSpace));
        assert!(!r.push_or_overrun(&99));
        assert!(r.overrun());
        assert_eq!((0..8).map(|_| r.pop().unwrap()).collect::<Vec<_>>(), (0..8).collect::<Vec<u64>>());
        assert_eq!(r.sleepers(), 0);
    }

    #[test]
    fn wait_nonempty_wakes_and_times_out() {
        let r = Arc::new(Ring::<u64>::new_boxed(8).unwrap());
        assert_eq!(r.wait_nonempty(Some(Duration::from_millis(20))), Err(Error::Timeout));
        assert_eq!(r.sleepers(), 0);
        let r2 = r.clone();
        let th = std::thread::spawn(move || {
            r2.wait_nonempty(None).unwrap();
            r2.pop()
        });
        let t = std::time::Instant::now();
        while r.sleepers() == 0 {
            assert!(t.elapsed() < Duration::from_secs(10));
            std::thread::sleep(Duration::from_millis(1));
        }
        r.push(&42).unwrap();
        assert_eq!(th.join().unwrap(), Some(42));
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::Arc;
    use loom::thread;

    /// Drains what is left after all threads joined.
    fn drain(r: &Ring<u64>, out: &mut Vec<u64>) {
        while let Some(v) = r.pop() {
            out.push(v);
        }
    }

    /// Takes what is left in `r` after the threads' results `got`: together, exactly `want`
    /// (in any order; nothing lost, nothing twice).
    fn assert_all_taken(r: &Ring<u64>, mut got: Vec<u64>, want: &[u64]) {
        drain(r, &mut got);
        got.sort();
        assert_eq!(got, want);
    }

    #[test]
    fn loom_two_producers_one_consumer() {
        loom::model(|| {
            let r = Arc::new(Ring::<u64>::new_boxed(2).unwrap());
            let r1 = r.clone();
            let p = thread::spawn(move || r1.push(&10).unwrap());
            // The consumer races both producers (two attempts, in order), the rest is
            // drained after the joins.
            let r2 = r.clone();
            let c = thread::spawn(move || {
                let mut got = Vec::new();
                for _ in 0..2 {
                    if let Some(v) = r2.pop() {
                        got.push(v);
                    }
                }
                got
            });
            r.push(&20).unwrap();
            p.join().unwrap();
            assert_all_taken(&r, c.join().unwrap(), &[10, 20]);
        });
    }

    #[test]
    fn loom_one_producer_two_consumers() {
        loom::model(|| {
            let r = Arc::new(Ring::<u64>::new_boxed(2).unwrap());
            let cs: Vec<_> = (0..2)
                .map(|_| {
                    let r = r.clone();
                    thread::spawn(move || r.pop())
                })
                .collect();
            r.push(&1).unwrap();
            r.push(&2).unwrap();
            let mut got: Vec<u64> = cs.into_iter().filter_map(|c| c.join().unwrap()).collect();
            // Two consumers that both got an entry may have taken them in either order
            // relative to each other, but neither can have seen 2 while 1 is still queued.
            let mut rest = Vec::new();
            drain(&r, &mut rest);
            if got.len() == 1 {
                assert!(got[0] == 1 && rest == vec![2], "FIFO across consumers: {got:?} {rest:?}");
            }
            got.extend(rest);
            got.sort();
            assert_eq!(got, vec![1, 2]);
        });
    }

    #[test]
    fn loom_wraparound_capacity_two() {
        loom::model(|| {
            let r = Arc::new(Ring::<u64>::new_boxed(2).unwrap());
            let r2 = r.clone();
            // Three entries through two slots: the producer must wait for the consumer to
            // free slot 0 before it can reuse it on the second lap.
            let p = thread::spawn(move || {
                for v in 1..=3u64 {
                    while r2.push(&v).is_err() {
                        thread::yield_now();
                    }
                }
            });
            let mut got = Vec::new();
            while got.len() < 3 {
                match r.pop() {
                    Some(v) => got.push(v),
                    None => thread::yield_now(),
                }
            }
            p.join().unwrap();
            assert_eq!(got, vec![1, 2, 3]);
            assert!(r.pop().is_none());
        });
    }

    #[test]
    fn loom_full_ring_nospace_and_overrun() {
        loom::model(|| {
            let r = Arc::new(Ring::<u64>::new_boxed(2).unwrap());
            r.push(&1).unwrap();
            r.push(&2).unwrap();
            let r2 = r.clone();
            // A consumer frees one slot concurrently with two overrunning pushes.
            let c = thread::spawn(move || r2.pop());
            let a = r.push_or_overrun(&3);
            let b = r.push(&4);
            assert_eq!(c.join().unwrap(), Some(1));
            let mut got = Vec::new();
            drain(&r, &mut got);
            // Exactly the accepted pushes are in the ring, in order, after 2.
            let mut want = vec![2];
            if a {
                want.push(3);
            }
            if b.is_ok() {
                want.push(4);
            }
            assert_eq!(got, want);
            assert_eq!(r.overrun(), !a);
            // Only one slot is ever freed (by the pop of 1) while 2 stays queued, so at
            // least one of the two pushes must have been refused.
            assert!(!(a && b.is_ok()));
            if let Err(e) = b {
                assert_eq!(e, Error::NoSpace);
            }
        });
    }

    #[test]
    fn loom_two_by_two() {
        loom::model(|| {
            let r = Arc::new(Ring::<u64>::new_boxed(2).unwrap());
            let cs: Vec<_> = (0..2)
                .map(|_| {
                    let r = r.clone();
                    thread::spawn(move || r.pop())
                })
                .collect();
            let r1 = r.clone();
            let p = thread::spawn(move || r1.push(&1).unwrap());
            r.push(&2).unwrap();
            p.join().unwrap();
            assert_all_taken(&r, cs.into_iter().filter_map(|c| c.join().unwrap()).collect(), &[1, 2]);
        });
    }

    #[test]
    fn loom_wraparound_two_producers() {
        loom::model(|| {
            // A full capacity-2 ring; a consumer frees both slots while two producers race
            // to reuse them on the second lap.  (No retry loops: loom explores spin loops
            // badly under a preemption bound, so refused pushes are recorded instead.)
            let r = Arc::new(Ring::<u64>::new_boxed(2).unwrap());
            r.push(&1).unwrap();
            r.push(&2).unwrap();
            let rc = r.clone();
            let c = thread::spawn(move || (rc.pop(), rc.pop()));
            let ps: Vec<_> = [10u64, 20]
                .into_iter()
                .map(|v| {
                    let r = r.clone();
                    thread::spawn(move || r.push(&v).ok().map(|_| v))
                })
                .collect();
            let mut accepted: Vec<u64> = ps.into_iter().filter_map(|p| p.join().unwrap()).collect();
            assert_eq!(c.join().unwrap(), (Some(1), Some(2)));
            let mut rest = Vec::new();
            drain(&r, &mut rest);
            rest.sort();
            accepted.sort();
            assert_eq!(rest, accepted, "exactly the accepted second-lap entries come out");
        });
    }

    #[test]
    fn loom_serialized_producers_fenced_wake() {
        // Two producers serialised by a mutex (push_serialized, then the fence and the
        // fenced notify after the release), one consumer asleep in wait_nonempty: both
        // entries arrive, none twice, and no wake-up is lost (a deadlock fails the model).
        loom::model(|| {
            let r = Arc::new(Ring::<u64>::new_boxed(2).unwrap());
            let lock = Arc::new(crate::sync::Mutex::new(()));
            let push = |r: &Ring<u64>, lock: &crate::sync::Mutex<()>, v: u64| {
                let g = lock.lock().unwrap();
                unsafe { r.push_serialized(&v).unwrap() };
                drop(g);
                crate::sync::full_fence();
                r.waker().unwrap().notify_fenced();
            };
            let (r2, l2) = (r.clone(), lock.clone());
            let p = thread::spawn(move || push(&r2, &l2, 1));
            let r3 = r.clone();
            let c = thread::spawn(move || {
                let mut got = Vec::new();
                while got.len() < 2 {
                    match unsafe { r3.pop_serialized() } {
                        Some(v) => got.push(v),
                        None => r3.wait_nonempty(None).unwrap(),
                    }
                }
                got
            });
            push(&r, &lock, 2);
            p.join().unwrap();
            let mut got = c.join().unwrap();
            got.sort();
            assert_eq!(got, vec![1, 2]);
        });
    }

    #[test]
    fn loom_wait_nonempty_no_lost_wakeup() {
        loom::model(|| {
            let r = Arc::new(Ring::<u64>::new_boxed(2).unwrap());
            let r2 = r.clone();
            let c = thread::spawn(move || {
                // Blocks (loom futex model) until notified; a lost wake-up is a deadlock,
                // which loom reports as a failure.
                r2.wait_nonempty(None).unwrap();
                r2.pop()
            });
            r.push(&7).unwrap();
            assert_eq!(c.join().unwrap(), Some(7));
        });
    }

    #[test]
    fn loom_wait_two_sleepers_two_pushes() {
        loom::model(|| {
            let r = Arc::new(Ring::<u64>::new_boxed(2).unwrap());
            let cs: Vec<_> = (0..2)
                .map(|_| {
                    let r = r.clone();
                    thread::spawn(move || loop {
                        r.wait_nonempty(None).unwrap();
                        if let Some(v) = r.pop() {
                            return v;
                        }
                    })
                })
                .collect();
            r.push(&1).unwrap();
            r.push(&2).unwrap();
            let mut got: Vec<u64> = cs.into_iter().map(|c| c.join().unwrap()).collect();
            got.sort();
            assert_eq!(got, vec![1, 2]);
        });
    }
}
