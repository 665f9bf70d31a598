//! VCQs: the local object, its shared block, the CQ accounting of the node, and the
//! resolution of remote VCQ ids.
//!
//! **The block** (library shared memory of the owner, found through the node registry
//! under (job, coordinates, TNI, CQ, component)):
//! ```text
//! 0      header: magic, version, MRQ-overflow word, VCQ id (0 once freed)
//! 64     STADD table: NROWS rows of 4 words
//!          w0: 0-31 seqlock counter (odd while written)  32 live  33 read-only  40-54 check
//!          w1: fabric registration key   w2: base address   w3: length
//! RING   the MRQ: a fabric ring of [u64; 8] notices (see onesided::Notice)
//! ```
//! Rows are written only by the owner (under its lock); initiators read them with the
//! seqlock recipe and then operate through the fabric's one-sided engine, which validates
//! the registration again (generation, bounds, read-only), so a torn or stale row can
//! only fail an operation, never misdirect it.

use crate::status::{done, out, UResult};
use crate::topo::{self, VcqAddr};
use crate::types::*;
use once_cell::sync::Lazy;
use softnic_fabric::mem::{self, MemKey, RingLoc, SharedMem};
use softnic_fabric::registry::{self, api, EndpointId};
use softnic_fabric::ring::Ring;
use softnic_fabric::spin::SpinLock;
use softnic_fabric::rma::{self, Peer, PinnedRing, RegionView};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{fence, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Protection-domain key of every uTofu registration: uTofu has no domains (any process
/// of the job may address any VCQ), so it is the job's, derived from the job secret.
pub fn pd() -> u64 {
    static PD: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *PD.get_or_init(|| softnic_fabric::bootstrap::protection_key("utofu"))
}

const BLK_MAGIC: u64 = u64::from_le_bytes(*b"snTofVQ1");
const BLK_VERSION: u32 = 1;
const H_VERSION: usize = 8;
const H_OVERFLOW: usize = 12;
const H_ID: usize = 16;
pub const ROWS_OFF: usize = 64;
/// Rows per VCQ: 256 STags, then rows `reg_mem` assigns.
pub const NROWS: usize = 4096;
const ROW_BYTES: usize = 32;
pub const RING_OFF: usize = ROWS_OFF + NROWS * ROW_BYTES;

pub type Notice = [u64; 8];

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Cheap hashing for ids that are already well mixed.
#[derive(Default, Clone, Copy)]
pub struct IdHash;
pub struct IdHasher(u64);
impl std::hash::BuildHasher for IdHash {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}
impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ *b as u64;
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// A row as read from a block.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    pub key: u64,
    pub base: u64,
    pub len: u64,
    pub readonly: bool,
    pub check: u16,
}

fn word(blk: *const u8, off: usize) -> &'static AtomicU64 {
    // SAFETY: callers pass offsets inside a mapped block, 8-aligned; the block outlives
    // the reference's use (held by the Vcq or the Target).
    unsafe { &*(blk.add(off) as *const AtomicU64) }
}

/// Reads row `i` of the block at `blk` (seqlock); None when the row is not live.  Always
/// inlined: on the put quick path's local STADD, a result returned through memory.
#[inline(always)]
pub fn read_row(blk: *const u8, i: usize) -> Option<Row> {
    if i >= NROWS {
        return None;
    }
    let o = ROWS_OFF + i * ROW_BYTES;
    for _ in 0..64 {
        let s1 = word(blk, o).load(Ordering::Acquire);
        if s1 & 1 != 0 {
            std::hint::spin_loop();
            continue;
        }
        let (k, b, l) = (word(blk, o + 8).load(Ordering::Relaxed), word(blk, o + 16).load(Ordering::Relaxed), word(blk, o + 24).load(Ordering::Relaxed));
        fence(Ordering::Acquire);
        if word(blk, o).load(Ordering::Relaxed) != s1 {
            continue;
        }
        if s1 >> 32 & 1 == 0 {
            return None;
        }
        return Some(Row { key: k, base: b, len: l, readonly: s1 >> 33 & 1 != 0, check: ((s1 >> 40) & 0x7fff) as u16 });
    }
    None
}

/// Writes row `i` of our own block (the owner, under its registration lock).
pub fn write_row_pub(blk: *const u8, i: usize, row: Option<Row>) {
    write_row(blk, i, row)
}

fn write_row(blk: *const u8, i: usize, row: Option<Row>) {
    let o = ROWS_OFF + i * ROW_BYTES;
    let w0 = word(blk, o);
    let seq = (w0.load(Ordering::Relaxed) as u32).wrapping_add(1);
    w0.store(seq as u64, Ordering::Relaxed);
    fence(Ordering::Release);
    let (k, b, l, st) = match row {
        Some(r) => (r.key, r.base, r.len, 1u64 << 32 | (r.readonly as u64) << 33 | (r.check as u64 & 0x7fff) << 40),
        None => (0, 0, 0, 0),
    };
    word(blk, o + 8).store(k, Ordering::Relaxed);
    word(blk, o + 16).store(b, Ordering::Relaxed);
    word(blk, o + 24).store(l, Ordering::Relaxed);
    w0.store(st | seq.wrapping_add(1) as u64, Ordering::Release);
}

/// One TCQ entry (a TOQ slot until consumed).
#[derive(Clone, Copy)]
pub struct Tcq {
    pub cbdata: usize,
    pub rc: i32,
    pub notify: bool,
    /// SOFTNIC_CHECK: the checker's id of the put whose source this entry releases (0: none).
    pub check: usize,
}

/// What the owner keeps about one of its rows.
pub struct RowInfo {
    pub key: MemKey,
    pub base: usize,
    pub len: usize,
    pub readonly: bool,
    pub refs: u32,
    /// The check its STADDs carry (0 for a STag).
    pub check: u16,
}

#[derive(Default)]
pub struct Regs {
    pub rows: HashMap<usize, RowInfo>,
    pub by_range: HashMap<(usize, usize, bool), usize>,
    pub next_free: usize,
}

pub struct Vcq {
    pub handle: AtomicUsize,
    pub addr: VcqAddr,
    pub id: u64,
    pub flags: u64,
    pub exclusive: bool,
    pub block: std::mem::ManuallyDrop<SharedMem>,
    pub ring: Ring<Notice>,
    endpoint: EndpointId,
    cq_claim: Option<EndpointId>,
    pub regs: Mutex<Regs>,
    /// The queue (TOQ accounting, TCQ entries, target caches): taken by every start
    /// call and poll, so a spin lock (one locked instruction per call).
    pub tcq: SpinLock<Queue>,
    /// Completions nobody asked to hear of (successful, without TCQ_NOTICE) are counted
    /// here instead of queued: `issued` is advanced under the `tcq` lock, `reaped` by
    /// any poll_tcq (a TOQ slot is free again once a poll_tcq has run after its
    /// operation, as when the entry was queued).  A race between two polls can only
    /// move `reaped` back, which a later poll undoes: it never frees a slot twice.
    pub silent_issued: AtomicU64,
    /// Remote notices held back while an operation of this VCQ is in flight to another
    /// machine (see [`Vcq::push_remote_notice`]).
    pub held: Mutex<Held>,
    pub silent_reaped: AtomicU64,
    /// `tcq.tcq.len()`, readable without the lock: a poll_tcq that finds 0 returns
    /// without locking.
    pub queued: AtomicUsize,
    /// The last remote VCQ id found well-formed (see [`Vcq::valid_remote_id`]).
    known_id: AtomicU64,
}

/// The TCQ of a VCQ and, under the same lock, the target its operations went to last
/// (most programs talk to few peers; the global cache costs a lock more).
#[derive(Default)]
pub struct Queue {
    pub tcq: VecDeque<Tcq>,
    pub last: Option<Arc<Target>>,
    /// Remote regions this VCQ put into lately, pinned (see onesided's put fast path).
    pub pins: Vec<PutPin>,
    pub next_pin: usize,
    /// The last regions (target VCQ id, tag, registration key) the fabric could not pin
    /// whole, and whether blocks of it may be pinned (a region in several backings) or
    /// nothing (fallback memory, read-only): not tried again at each operation, where a
    /// failed try costs a validation of the region.
    pub unpinnable: [Option<((u64, u64, u64), bool)>; 2],
    pub next_unpinnable: usize,
    /// The block of such a region that the last miss fell in (region as in
    /// `unpinnable`, block index): a second miss there pins the block.
    pub block_miss: Option<((u64, u64, u64), u64)>,
}

/// A remote STADD region pinned for puts: (target VCQ id, the STADD without its
/// offset: form, row or STag, check) -> the fabric pin of the region, or of the block of
/// it at offsets `skip..skip + len` (a region in several backings), which starts at
/// `base` in its owner.
pub struct PutPin {
    pub rid: u64,
    pub tag: u64,
    pub base: u64,
    pub skip: usize,
    pub len: usize,
    /// The pin, with the addresses of the words its per-use checks read (liveness, rows).
    pub pin: softnic_fabric::rma::QuickPinned,
}

/// See [`Vcq::push_remote_notice`].
#[derive(Default)]
pub struct Held {
    in_flight: u32,
    notices: Vec<Notice>,
}

/// An operation's local notice position in its MRQ ([`Vcq::claim_local`]); none when the
/// MRQ was full (the overflow is marked).
#[must_use = "the MRQ's later notices wait until the claimed one is published"]
pub struct LocalSlot<'v>(Option<softnic_fabric::ring::Claim<'v, Notice>>);

impl LocalSlot<'_> {
    /// No position: for an operation whose notice is pushed when it is made, or that
    /// asks for none.  (An `Option<LocalSlot>` instead left `onesided::run` a drop whose
    /// code tested the inner claim before the outer tag, a read of bytes never written
    /// that memcheck reports; every holder of a position keeps a `LocalSlot` and a flag.)
    pub fn none() -> Self {
        LocalSlot(None)
    }

    /// The position, leaving none behind.
    pub fn take(&mut self) -> Self {
        LocalSlot(self.0.take())
    }

    /// Writes notice `n` into the claimed position and publishes it.
    #[inline(always)]
    pub fn publish(self, n: &Notice) {
        let Some(claim) = self.0 else { return };
        // SAFETY: `p` is the claimed slot, ours until published; all eight words are
        // written (volatile: the ring is shared memory).
        claim.publish(|_, p| unsafe {
            for (i, w) in n.iter().enumerate() {
                std::ptr::write_volatile((p as *mut u64).add(i), *w);
            }
        });
    }
}

/// Holds a VCQ's incoming remote notices until dropped (see [`Vcq::hold_remote_notices`]).
pub struct HoldGuard<'a>(&'a Vcq);

impl Drop for HoldGuard<'_> {
    fn drop(&mut self) {
        let mut h = lock(&self.0.held);
        h.in_flight -= 1;
        if h.in_flight == 0 {
            for n in std::mem::take(&mut h.notices) {
                self.0.push_local(&n);
            }
        }
    }
}

impl Vcq {
    /// Called before an operation goes to another machine; the guard is dropped once its
    /// local notice is queued.  Until then remote notices for this VCQ wait: a peer that
    /// reacts to the operation's remote notice must not have its own notice seen here
    /// before the operation's local one (on one machine the initiator queues both
    /// notices itself, in that order).
    pub fn hold_remote_notices(&self) -> HoldGuard<'_> {
        lock(&self.held).in_flight += 1;
        HoldGuard(self)
    }

    /// Queues a remote notice that arrived for this VCQ from another machine (the uTofu
    /// service runs it), or holds it while an operation of ours is in flight.
    pub fn push_remote_notice(&self, n: &Notice) {
        let mut h = lock(&self.held);
        if h.in_flight > 0 {
            h.notices.push(*n);
        } else {
            self.push_local(n);
        }
    }

    /// Is `id` a well-formed VCQ id ([`VcqAddr::decode`])?  The last id found so is
    /// remembered, so that a program addressing one peer again and again decodes its id
    /// once.  The verdict depends on the id alone, so whichever thread's store lands last,
    /// the remembered id stays well-formed (a single word: no torn pair).
    #[inline(always)]
    pub fn valid_remote_id(&self, id: u64) -> bool {
        id == self.known_id.load(Ordering::Relaxed) || self.decode_remote_id(id)
    }

    #[inline(never)]
    fn decode_remote_id(&self, id: u64) -> bool {
        let ok = VcqAddr::decode(id).is_some();
        if ok {
            self.known_id.store(id, Ordering::Relaxed);
        }
        ok
    }

    pub fn blk(&self) -> *const u8 {
        self.block.as_ptr()
    }

    /// Silent completions whose TOQ slots no poll_tcq has freed yet.
    pub fn silent_pending(&self) -> usize {
        let issued = self.silent_issued.load(Ordering::Acquire);
        issued.wrapping_sub(self.silent_reaped.load(Ordering::Relaxed)).min(TOQ_DEPTH as u64) as usize
    }

    /// Frees the TOQ slots of the silent completions issued so far (any poll_tcq).
    pub fn reap_silent(&self) {
        let issued = self.silent_issued.load(Ordering::Acquire);
        if self.silent_reaped.load(Ordering::Relaxed) != issued {
            self.silent_reaped.store(issued, Ordering::Relaxed);
        }
    }

    /// The MRQ overflowed: the documented fatal asynchronous error.
    pub fn check_overflow(&self) {
        // SAFETY: inside our block, 4-aligned.
        let w = unsafe { &*(self.blk().add(H_OVERFLOW) as *const AtomicU32) };
        if w.load(Ordering::Relaxed) != 0 {
            self.overflowed();
        }
    }

    /// The fatal end of an overflowed MRQ, out of line: the polls that check for it hold
    /// nothing to drop (see `utofu_poll_mrq`).
    #[cold]
    #[inline(never)]
    fn overflowed(&self) -> ! {
        crate::status::fatal(&format!("MRQ Overflow on TNI {} CQ {}", self.addr.tni, self.addr.cq))
    }

    /// Pushes a notice into our own MRQ (a local notice); a full MRQ is an overflow.
    /// Out of line: the general path has many pushes; see [`Vcq::push_local_inline`].
    #[inline(never)]
    pub fn push_local(&self, n: &Notice) {
        self.push_local_inline(n)
    }

    /// [`Vcq::push_local`] always inlined, for the quick paths: a fault test and the
    /// ring's push, the notice built in the ring slot.
    #[inline(always)]
    pub fn push_local_inline(&self, n: &Notice) {
        if mrq_overrun_injected() || self.ring.push(n).is_err() {
            mark_overflow(self.blk());
        }
    }

    /// The MRQ position of an operation's local notice, claimed before the operation
    /// moves data at a target on this machine and published with the notice
    /// ([`LocalSlot::publish`]).  Notices are causal: the target may see the data at once
    /// and react with an operation whose remote notice lands in this MRQ; that notice
    /// goes behind ours, so the program never polls the answer to an operation before
    /// the operation's own notice (test: utofu/utofu_causal.c).  (For another machine,
    /// [`Vcq::hold_remote_notices`] holds the answers back instead.)  `hooked`: with the
    /// SOFTNIC_FAULTS=cq_overrun test (the quick paths run only without fault rules).  A
    /// full MRQ is an overflow, as for a push.
    #[inline(always)]
    pub fn claim_local(&self, hooked: bool) -> LocalSlot<'_> {
        let claim = if hooked && mrq_overrun_injected() { None } else { self.ring.claim().ok() };
        if claim.is_none() {
            mark_overflow(self.blk());
        }
        LocalSlot(claim)
    }

    /// [`Vcq::push_local_inline`] without the SOFTNIC_FAULTS=cq_overrun test, for the
    /// quick paths, which run only when no fault rule exists (`faults::any()` false).
    /// The notice's words are stored one by one into the ring's slot, so that a notice
    /// built from registers is not first built on the stack and copied.
    #[inline(always)]
    pub fn push_local_unhooked(&self, n: &Notice) {
        // SAFETY: `p` is the reserved slot, ours until the push publishes it; all eight
        // words are written (volatile: the ring is shared memory).
        let pushed = self.ring.push_in_place(|_, p| unsafe {
            for (i, w) in n.iter().enumerate() {
                std::ptr::write_volatile((p as *mut u64).add(i), *w);
            }
        });
        if pushed.is_err() {
            mark_overflow(self.blk());
        }
    }
}

/// SOFTNIC_FAULTS=cq_overrun: a notice finds its MRQ full (counted per notice queued).
/// Inlined (one load without rules), so that a notice is built where it is pushed.
#[inline]
pub fn mrq_overrun_injected() -> bool {
    softnic_fabric::faults::hit(softnic_fabric::faults::Point::CqOverrun)
}

fn mark_overflow(blk: *const u8) {
    // SAFETY: inside a mapped block, 4-aligned.
    unsafe { &*(blk.add(H_OVERFLOW) as *const AtomicU32) }.store(1, Ordering::Relaxed);
}

// ---- job and registry keys ------------------------------------------------------------

/// The job in registry keys: a key derived from the job secret (the registry shows each
/// job only its own rows already; keys carrying the job keep names of two jobs apart in
/// any registry that answers them, e.g. another machine's through the network engine).
fn job_hash() -> u64 {
    static H: Lazy<u64> = Lazy::new(|| softnic_fabric::bootstrap::protection_key("utofu names"));
    *H
}

/// A registry key: a 6-byte kind, the job, the coordinates and up to 3 small fields.
pub fn key(kind: &[u8; 6], coords: &[u8; 6], fields: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(32);
    k.extend_from_slice(kind);
    k.extend_from_slice(&job_hash().to_le_bytes());
    k.extend_from_slice(coords);
    k.extend_from_slice(fields);
    k
}

fn vcq_key(a: &VcqAddr, cmp: u16) -> Vec<u8> {
    key(b"tofuVQ", &a.coords, &[a.tni as u8, a.cq as u8, cmp as u8])
}

// ---- CQs ------------------------------------------------------------------------------

/// This process's shared CQ on a TNI and the components used on it.
struct SharedCq {
    cq: u16,
    claim: EndpointId,
    cmps: u8,
}

static SHARED_CQS: Mutex<[Option<SharedCq>; NUM_TNIS as usize]> = Mutex::new([None, None, None, None, None, None]);

/// Claims a CQ of `tni` on this node in the registry, the first free one of `order`.
fn claim_cq(tni: u16, order: impl Iterator<Item = u16>) -> Option<(u16, EndpointId)> {
    let me = topo::my_coords();
    for cq in order {
        if let Ok(id) = registry::publish(api::UTOFU, &key(b"tofuCQ", &me, &[tni as u8, cq as u8]), &[]) {
            return Some((cq, id));
        }
    }
    None
}

// ---- the handle table ---------------------------------------------------------------

/// Handles are (tag, slot generation, slot + 1).  Lookups are lock-free (one Acquire load
/// and a compare: every one-sided call and poll does one); a freed VCQ's struct is never
/// deallocated (a handle that raced with its free still points at valid memory, and is
/// then refused by the handle check), and its block is released a while later (see
/// [`RETIRE_AFTER`]).
const HANDLE_TAG: usize = 0x7f0c << 32;
const MAX_VCQS: usize = 4096;
/// Freed blocks are unmapped once this many more VCQs have been freed after them.
const RETIRE_AFTER: usize = 32;

static SLOTS: [AtomicPtr<Vcq>; MAX_VCQS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_VCQS];

struct Table {
    gens: Vec<u16>,
    retired: VecDeque<SharedMem>,
}

/// Serialises create and free (slot allocation, retirement).
static TABLE: Mutex<Table> = Mutex::new(Table { gens: Vec::new(), retired: VecDeque::new() });

/// The VCQ of handle `h`.  Only the slot bits are tested before the table is read: the
/// comparison with the slot's handle (always tagged, see `reserve`; 0 once freed) then
/// refuses every other tag and generation.
#[inline]
pub fn get(h: usize) -> UResult<&'static Vcq> {
    let slot = (h & 0xffff).wrapping_sub(1);
    if slot >= MAX_VCQS {
        return Err(UTOFU_ERR_INVALID_VCQ_HDL);
    }
    let p = SLOTS[slot].load(Ordering::Acquire);
    if p.is_null() {
        return Err(UTOFU_ERR_INVALID_VCQ_HDL);
    }
    // SAFETY: published Vcqs are never deallocated.
    let v = unsafe { &*p };
    if v.handle.load(Ordering::Relaxed) != h {
        return Err(UTOFU_ERR_INVALID_VCQ_HDL);
    }
    Ok(v)
}

/// The memory registrations of this process's live VCQs: how many, and one of them
/// (address, length).
pub fn live_registrations() -> (usize, Option<(usize, usize)>) {
    let mut n = 0;
    let mut one = None;
    for s in SLOTS.iter() {
        let p = s.load(Ordering::Acquire);
        if p.is_null() {
            continue;
        }
        // SAFETY: published Vcqs are never deallocated.
        let v = unsafe { &*p };
        if v.handle.load(Ordering::Relaxed) == 0 {
            continue;
        }
        let r = lock(&v.regs);
        n += r.rows.len();
        one = one.or_else(|| r.rows.values().next().map(|ri| (ri.base, ri.len)));
    }
    (n, one)
}

/// This process's live VCQ with (canonical) id `id`.
pub fn by_id(id: u64) -> Option<&'static Vcq> {
    SLOTS.iter().find_map(|s| {
        let p = s.load(Ordering::Acquire);
        // SAFETY: published Vcqs are never deallocated.
        (!p.is_null()).then(|| unsafe { &*p }).filter(|v| v.id == id && v.handle.load(Ordering::Relaxed) != 0)
    })
}

/// Reserves a slot: the handle the new VCQ will have.
fn reserve(t: &mut Table) -> UResult<usize> {
    let slot = (0..MAX_VCQS).find(|&i| SLOTS[i].load(Ordering::Relaxed).is_null() && t.gens.get(i).map_or(true, |g| g & 1 == 0)).ok_or(UTOFU_ERR_OUT_OF_RESOURCE)?;
    if t.gens.len() <= slot {
        t.gens.resize(slot + 1, 0);
    }
    // Odd while reserved or live, even when free; the handle carries it.
    t.gens[slot] = t.gens[slot].wrapping_add(1);
    Ok(HANDLE_TAG | (t.gens[slot] as usize) << 16 | (slot + 1))
}

fn unreserve(t: &mut Table, h: usize) {
    let slot = (h & 0xffff) - 1;
    t.gens[slot] = t.gens[slot].wrapping_add(1);
}

/// VCQs of this process on (tni, cq), for per-CQ counts.
pub fn on_cq(tni: u16, cq: u16) -> Vec<&'static Vcq> {
    SLOTS.iter().filter_map(|s| {
        let p = s.load(Ordering::Acquire);
        // SAFETY: never deallocated (see above).
        (!p.is_null()).then(|| unsafe { &*p })
    }).filter(|v| v.handle.load(Ordering::Relaxed) != 0 && v.addr.tni == tni && v.addr.cq == cq).collect()
}

// ---- MRQ size -------------------------------------------------------------------------

const MRQ_SIZES: [u64; 6] = [2048, 8192, 32768, 131072, 524288, 2097152];

/// `UTOFU_NUM_MRQ_ENTRIES` rounded to the nearest documented size (ties to the larger).
pub fn mrq_entries() -> u32 {
    static N: Lazy<u32> = Lazy::new(|| {
        let s = softnic_fabric::env::get_str("UTOFU_NUM_MRQ_ENTRIES").trim().to_ascii_lowercase();
        let v = if let Some(k) = s.strip_suffix("ki") {
            k.parse::<u64>().ok().map(|v| v << 10)
        } else if let Some(m) = s.strip_suffix("mi") {
            m.parse::<u64>().ok().map(|v| v << 20)
        } else {
            s.parse::<u64>().ok()
        };
        match v {
            Some(v) => nearest_mrq(v),
            None => 131072,
        }
    });
    *N
}

pub fn nearest_mrq(v: u64) -> u32 {
    let mut best = MRQ_SIZES[0];
    for &s in &MRQ_SIZES {
        if s.abs_diff(v) <= best.abs_diff(v) {
            best = s;
        }
    }
    best as u32
}

// ---- create / free --------------------------------------------------------------------

fn create(tni: u16, cmp: Option<u16>, flags: u64) -> UResult<usize> {
    if tni >= NUM_TNIS {
        return Err(UTOFU_ERR_INVALID_TNI_ID);
    }
    let known = UTOFU_VCQ_FLAG_THREAD_SAFE | UTOFU_VCQ_FLAG_EXCLUSIVE | UTOFU_VCQ_FLAG_SESSION_MODE;
    if flags & !known != 0 || flags & UTOFU_VCQ_FLAG_EXCLUSIVE != 0 && flags & UTOFU_VCQ_FLAG_SESSION_MODE != 0 {
        return Err(UTOFU_ERR_INVALID_FLAGS);
    }
    if let Some(c) = cmp {
        if flags & (UTOFU_VCQ_FLAG_EXCLUSIVE | UTOFU_VCQ_FLAG_SESSION_MODE) != 0 {
            return Err(UTOFU_ERR_INVALID_FLAGS);
        }
        if c >= CMPS_PER_CQ {
            return Err(UTOFU_ERR_INVALID_CMP_ID);
        }
    }
    if flags & UTOFU_VCQ_FLAG_SESSION_MODE != 0 {
        return Err(UTOFU_ERR_NOT_SUPPORTED);
    }
    softnic_fabric::node::get().map_err(|_| UTOFU_ERR_FATAL)?;
    let exclusive = flags & UTOFU_VCQ_FLAG_EXCLUSIVE != 0;
    // This process's CQs on the TNI (see share): free-mode VCQs share the first, which
    // is the CQ peers compute; exclusive ones take the others first.
    let mine = crate::share::get().cqs[tni as usize];
    if mine == 0 {
        softnic_fabric::sn_debug!("uTofu", "TNI {} has no CQ for this process (see UTOFU_CQ_MASK_{} / utofu.h)", tni, tni);
        return Err(UTOFU_ERR_NOT_AVAILABLE);
    }
    let first = crate::share::bits(mine as u64).next().expect("non-empty");
    // Pick (cq, cmp) and the claim that holds the CQ.
    let mut shared = lock(&SHARED_CQS);
    let (cq, cmp, own_claim) = if exclusive {
        let order = crate::share::bits(mine as u64).filter(|&c| c != first).chain(std::iter::once(first));
        let (cq, claim) = claim_cq(tni, order).ok_or(UTOFU_ERR_NOT_AVAILABLE)?;
        (cq, 0, Some(claim))
    } else {
        if shared[tni as usize].is_none() {
            let (cq, claim) = claim_cq(tni, crate::share::bits(mine as u64)).ok_or(UTOFU_ERR_FULL)?;
            if cq != first && crate::share::get().assigned {
                softnic_fabric::sn_warn!("uTofu", "CQ {} of TNI {} is taken by another process of this node; using CQ {}", first, tni, cq);
            }
            shared[tni as usize] = Some(SharedCq { cq, claim, cmps: 0 });
        }
        let s = shared[tni as usize].as_ref().expect("set above");
        let cmp = match cmp {
            Some(c) if s.cmps & 1 << c != 0 => return Err(UTOFU_ERR_USED),
            Some(c) => c,
            None => (0..CMPS_PER_CQ).find(|c| s.cmps & 1 << c == 0).ok_or(UTOFU_ERR_FULL)?,
        };
        (s.cq, cmp, None)
    };
    let addr = VcqAddr { coords: topo::my_coords(), tni, cq, cmp: Some(cmp), path: [0; 3] };
    let id = addr.id();
    debug_assert!(VcqAddr::decode(id).is_some());
    let fail = |shared: &mut [Option<SharedCq>; 6], rc: i32| {
        if let Some(c) = own_claim {
            let _ = registry::unpublish(c);
        }
        release_shared(shared, tni);
        rc
    };
    let entries = mrq_entries();
    let len = RING_OFF + Ring::<Notice>::bytes_needed(entries);
    let block = match mem::alloc_shared(len) {
        Ok(b) => b,
        Err(_) => return Err(fail(&mut shared, UTOFU_ERR_OUT_OF_MEMORY)),
    };
    let blk = block.as_ptr();
    // SAFETY: our fresh block, 64-aligned (page), large enough for the ring.
    let ring = match unsafe { Ring::<Notice>::init_unwaited(blk.add(RING_OFF), len - RING_OFF, entries) } {
        Ok(r) => r,
        Err(_) => {
            let _ = mem::free_shared(block);
            return Err(fail(&mut shared, UTOFU_ERR_OUT_OF_MEMORY));
        }
    };
    word(blk, 0).store(BLK_MAGIC, Ordering::Relaxed);
    // SAFETY: inside the block, 4-aligned.
    unsafe { &*(blk.add(H_VERSION) as *const AtomicU32) }.store(BLK_VERSION, Ordering::Relaxed);
    word(blk, H_ID).store(id, Ordering::Release);
    let loc = block.ring_loc(0, len).expect("whole block");
    let w = loc.to_words();
    let payload: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
    let endpoint = match registry::publish(api::UTOFU, &vcq_key(&addr, cmp), &payload) {
        Ok(e) => e,
        Err(e) => {
            let _ = mem::free_shared(block);
            // Another process claims this (cq, cmp): only with a forged claim or a
            // component promised elsewhere.
            return Err(fail(&mut shared, if e == softnic_fabric::Error::Exists { UTOFU_ERR_USED } else { UTOFU_ERR_OUT_OF_RESOURCE }));
        }
    };
    if !exclusive {
        shared[tni as usize].as_mut().expect("set").cmps |= 1 << cmp;
    }
    drop(shared);
    let mut t = lock(&TABLE);
    let h = match reserve(&mut t) {
        Ok(h) => h,
        Err(rc) => {
            drop(t);
            let _ = registry::unpublish(endpoint);
            let _ = mem::free_shared(block);
            let mut shared = lock(&SHARED_CQS);
            if !exclusive {
                shared[tni as usize].as_mut().expect("set").cmps &= !(1 << cmp);
            }
            return Err(fail(&mut shared, rc));
        }
    };
    let v = Box::new(Vcq {
        handle: AtomicUsize::new(h),
        addr,
        id,
        flags,
        exclusive,
        block: std::mem::ManuallyDrop::new(block),
        ring,
        endpoint,
        cq_claim: own_claim,
        regs: Mutex::new(Regs { next_free: NUM_STAGS as usize, ..Default::default() }),
        tcq: SpinLock::new(Queue::default()),
        silent_issued: AtomicU64::new(0),
        held: Mutex::new(Held::default()),
        silent_reaped: AtomicU64::new(0),
        queued: AtomicUsize::new(0),
        // Well-formed by construction (made by VcqAddr::id; topo's round-trip test).
        known_id: AtomicU64::new(id),
    });
    softnic_fabric::sn_debug!("uTofu", "VCQ {:#x}: TNI {} CQ {} component {}{}", id, tni, cq, cmp, if exclusive { " (exclusive)" } else { "" });
    SLOTS[(h & 0xffff) - 1].store(Box::into_raw(v), Ordering::Release);
    Ok(h)
}

fn release_shared(shared: &mut [Option<SharedCq>; 6], tni: u16) {
    if let Some(s) = &shared[tni as usize] {
        if s.cmps == 0 {
            let _ = registry::unpublish(s.claim);
            shared[tni as usize] = None;
        }
    }
}

fn free(h: usize) -> UResult<()> {
    let mut t = lock(&TABLE);
    let v = get(h)?;
    let slot = (h & 0xffff) - 1;
    v.handle.store(0, Ordering::Relaxed);
    SLOTS[slot].store(std::ptr::null_mut(), Ordering::Release);
    unreserve(&mut t, h);
    // Registrations left behind go with the VCQ.
    {
        let mut r = lock(&v.regs);
        let rows: Vec<usize> = r.rows.keys().copied().collect();
        for i in rows {
            if let Some(ri) = r.rows.remove(&i) {
                write_row(v.blk(), i, None);
                let _ = mem::deregister(ri.key);
            }
        }
        r.by_range.clear();
    }
    word(v.blk(), H_ID).store(0, Ordering::Release);
    let _ = registry::unpublish(v.endpoint);
    let mut shared = lock(&SHARED_CQS);
    if let Some(c) = v.cq_claim {
        let _ = registry::unpublish(c);
    } else if let Some(s) = shared[v.addr.tni as usize].as_mut() {
        s.cmps &= !(1 << v.addr.cmp.unwrap_or(0));
        release_shared(&mut shared, v.addr.tni);
    }
    drop(shared);
    forget_target(v.id);
    {
        let mut q = v.tcq.lock();
        q.last = None;
        q.pins.clear();
    }
    // The struct stays (see the handle table); its block is unmapped later, so that a
    // call that raced with this free still finds it mapped.
    // SAFETY: taken once: the slot was emptied above under TABLE's lock.
    t.retired.push_back(unsafe { std::ptr::read(&*v.block) });
    while t.retired.len() > RETIRE_AFTER {
        let _ = mem::free_shared(t.retired.pop_front().expect("non-empty"));
    }
    Ok(())
}

// ---- remote VCQs ----------------------------------------------------------------------

/// A VCQ as an initiator reaches it: its block mapped here (same machine), or its
/// owner reached through the network engine, which then runs each operation's target
/// side itself (the uTofu service, see `onesided`).
pub struct Target {
    /// The id initiators use (canonical path), the cache key.
    pub id: u64,
    /// The VCQ's own id: `id`, or the VCQ found for an id that names no component.
    pub vcq_id: u64,
    pub peer: Arc<Peer>,
    pub site: Site,
}

pub enum Site {
    Mapped { view: RegionView, ring: PinnedRing<Notice> },
    Remote,
}

impl Target {
    /// The mapped block (`Site::Mapped` only).
    pub fn blk(&self) -> *const u8 {
        match &self.site {
            Site::Mapped { view, .. } => view.as_ptr(),
            Site::Remote => std::ptr::null(),
        }
    }
    /// Is the VCQ still the one we resolved (not freed)?  A remote one is checked by
    /// its owner on every operation.
    #[inline]
    pub fn live(&self) -> bool {
        match &self.site {
            Site::Mapped { view, .. } => word(view.as_ptr(), H_ID).load(Ordering::Acquire) == self.vcq_id,
            Site::Remote => true,
        }
    }
    pub fn mark_overflow(&self) {
        if let Site::Mapped { view, .. } = &self.site {
            mark_overflow(view.as_ptr());
        }
    }
}

static TARGETS: Lazy<Mutex<HashMap<u64, Arc<Target>, IdHash>>> = Lazy::new(|| Mutex::new(HashMap::default()));

fn forget_target(id: u64) {
    lock(&TARGETS).remove(&id);
}

/// The target of `id` through the VCQ's own last-target cache (no global lock while
/// a VCQ keeps talking to one peer), else [`target`].
#[inline]
pub fn target_cached(last: &mut Option<Arc<Target>>, id: u64) -> UResult<&Arc<Target>> {
    let hit = matches!(last, Some(t) if t.id == id && t.live() && t.peer.seems_alive());
    if !hit {
        *last = Some(target(id)?);
    }
    Ok(last.as_ref().expect("set above"))
}

/// The target of a (canonical) VCQ id, or `MRQ_PEER` when no live VCQ has it.  The
/// VCQ's coordinates name its node; the node registry there names its owner.  An id
/// that names no component (built from coordinates, TNI and CQ alone) reaches the CQ's
/// VCQ of the lowest component.
pub fn target(id: u64) -> UResult<Arc<Target>> {
    if let Some(t) = lock(&TARGETS).get(&id) {
        if t.live() && t.peer.seems_alive() {
            return Ok(t.clone());
        }
    }
    forget_target(id);
    let a = VcqAddr::decode(id).ok_or(UTOFU_ERR_MRQ_PEER)?;
    let node = topo::node_at(&a.coords).ok_or(UTOFU_ERR_MRQ_PEER)?;
    let t = match a.cmp {
        Some(c) => resolve_target(id, node, &a, c),
        None => (0..CMPS_PER_CQ).map(|c| resolve_target(id, node, &a, c)).find(|t| t.is_ok()).unwrap_or(Err(UTOFU_ERR_MRQ_PEER)),
    }?;
    lock(&TARGETS).insert(id, t.clone());
    Ok(t)
}

fn resolve_target(id: u64, node: u32, a: &VcqAddr, cmp: u16) -> UResult<Arc<Target>> {
    let (peer, payload) = Peer::lookup(node, api::UTOFU, &vcq_key(a, cmp)).map_err(|_| UTOFU_ERR_MRQ_PEER)?;
    let (site, vcq_id) = if peer.is_remote() {
        // Its owner resolves the id again itself.
        (Site::Remote, id)
    } else {
        let mut w = [0u64; 3];
        for (i, x) in w.iter_mut().enumerate() {
            *x = u64::from_le_bytes(payload[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        }
        let loc = RingLoc::from_words(w);
        let view = rma::map_region(&peer, &loc).map_err(|_| UTOFU_ERR_MRQ_PEER)?;
        if view.len() < RING_OFF || word(view.as_ptr(), 0).load(Ordering::Acquire) != BLK_MAGIC {
            return Err(UTOFU_ERR_MRQ_PEER);
        }
        let vcq_id = word(view.as_ptr(), H_ID).load(Ordering::Acquire);
        let ring_loc = RingLoc { offset: loc.offset + RING_OFF as u64, len: loc.len - RING_OFF as u64, ..loc };
        let ring = PinnedRing::new(&peer, &ring_loc).map_err(|_| UTOFU_ERR_MRQ_PEER)?;
        (Site::Mapped { view, ring }, vcq_id)
    };
    let t = Arc::new(Target { id, vcq_id, peer, site });
    // A freed VCQ's block holds id 0 (ids of VCQs always name their component).
    if !t.live() || matches!(t.site, Site::Mapped { .. }) && vcq_id == 0 {
        return Err(UTOFU_ERR_MRQ_PEER);
    }
    Ok(t)
}

// ---- exported -------------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn utofu_create_vcq(tni_id: u16, flags: u64, vcq_hdl: *mut usize) -> i32 {
    let r = if vcq_hdl.is_null() { Err(UTOFU_ERR_INVALID_POINTER) } else { create(tni_id, None, flags).and_then(|h| out(vcq_hdl, h)) };
    done("utofu_create_vcq", r)
}

#[no_mangle]
pub unsafe extern "C" fn utofu_create_vcq_with_cmp_id(tni_id: u16, cmp_id: u16, flags: u64, vcq_hdl: *mut usize) -> i32 {
    let r = if vcq_hdl.is_null() { Err(UTOFU_ERR_INVALID_POINTER) } else { create(tni_id, Some(cmp_id), flags).and_then(|h| out(vcq_hdl, h)) };
    done("utofu_create_vcq_with_cmp_id", r)
}

#[no_mangle]
pub extern "C" fn utofu_free_vcq(vcq_hdl: usize) -> i32 {
    done("utofu_free_vcq", free(vcq_hdl))
}

#[no_mangle]
pub unsafe extern "C" fn utofu_query_vcq_id(vcq_hdl: usize, vcq_id: *mut u64) -> i32 {
    let r = get(vcq_hdl).and_then(|v| out(vcq_id, v.id));
    done("utofu_query_vcq_id", r)
}

#[no_mangle]
pub unsafe extern "C" fn utofu_query_num_unread_tcq(vcq_hdl: usize, count: *mut usize) -> i32 {
    let r = get(vcq_hdl).and_then(|v| {
        let unread = |o: &Vcq| o.tcq.lock().tcq.len() + o.silent_pending();
        let n = if v.exclusive { unread(v) } else { on_cq(v.addr.tni, v.addr.cq).iter().map(|o| unread(o)).sum() };
        out(count, n)
    });
    done("utofu_query_num_unread_tcq", r)
}

#[no_mangle]
pub unsafe extern "C" fn utofu_query_num_unread_mrq(vcq_hdl: usize, count: *mut usize) -> i32 {
    let r = get(vcq_hdl).and_then(|v| out(count, v.ring.len()));
    done("utofu_query_num_unread_mrq", r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mrq_sizes_round_to_nearest_ties_up() {
        assert_eq!(nearest_mrq(0), 2048);
        assert_eq!(nearest_mrq(2048), 2048);
        assert_eq!(nearest_mrq(5120), 8192); // tie between 2048 and 8192
        assert_eq!(nearest_mrq(5119), 2048);
        assert_eq!(nearest_mrq(100_000), 131072);
        assert_eq!(nearest_mrq(u64::MAX), 2097152);
    }
}
