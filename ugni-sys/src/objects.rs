//! The uGNI object model, shared by every group of exported functions.
//!
//! C sees opaque handles, each looked up in a per-type [`Table`] (crate::handles): one
//! table per object type here.
//!
//! - [`Cdm`]: a communication domain instance (ptag, cookie, inst_id, modes).
//! - [`Nic`]: a CDM attached to our one emulated device.  Attaching publishes the instance
//!   in the node registry under (ptag, cookie, inst_id), with its process reference, its
//!   datagram board and its NIC address, so peers can find it.
//! - [`Cq`]: a completion queue: a fabric ring of [`crate::cqe`] entries in library-owned
//!   shared memory, so peers can post remote events into it directly; plus a table of
//!   outstanding post descriptors (the CQE's aux field is the token `GNI_GetCompleted`
//!   uses to find the exact descriptor: the ring slot the entry landed in, whose
//!   descriptor sits in a table beside the ring, or a token of a slab).
//! - [`Ep`]: an endpoint; bound to (remote NIC address, remote_id).  Transactions go to
//!   the process their remote memory handle names ([`Ep::route`]), cached per endpoint.
//!
//! The state the objects hold is defined here ([`RegInfo`], [`Mdd`], [`CeAttr`]) or, for
//! larger parts, in modules below this one: the datagram board (crate::datagram), the SMSG
//! state (crate::mailbox).  The exported functions that use them are in the modules above.
//!
//! Memory handles are values, not objects: `gni_mem_handle_t` is the fabric's
//! [`CrayHandle`] encoding (base address, registration key, owner), shared with DMAPP, with
//! our kind bits (crate::memhandle).  The protection domain of a registration is
//! [`pd_key`]`(ptag, cookie)`.

use crate::cqe::{self, CqEntry};
use crate::handles::{GniResult, Table};
use crate::mailbox::SmsgState;
use crate::types::*;
use softnic_fabric::coll::NodeRef;
use softnic_fabric::mem::{self, CrayHandle, MemKey, RingLoc, SharedMem};
use softnic_fabric::registry::{EndpointId, ProcId};
use softnic_fabric::ring::Ring;
use softnic_fabric::rma::Peer;
use std::collections::{HashMap, HashSet};
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// SOFTNIC_CHECK at exit: what this process never reaped or released (events left in its
/// CQs, descriptors never returned by GNI_GetCompleted, memory registrations never
/// deregistered, endpoints and domains never destroyed).
pub fn check_at_exit() {
    use softnic_fabric::check::report;
    for (h, nic) in NICS.live_objects() {
        let regs = crate::handles::lock(&nic.regs);
        if !regs.is_empty() {
            let one = regs.keys().find_map(|&k| softnic_fabric::mem::query(softnic_fabric::mem::MemKey::from_u64(k)).ok());
            let example = one.map_or(String::new(), |r| format!(", among them [{:#x}, +{})", r.base, r.len));
            report("GNI_MemDeregister", &format!("NIC {h:#x}: {} memory registration(s) never deregistered{example}", regs.len()), "exit");
        }
    }
    for (h, cq) in CQS.live_objects() {
        let n = cq.ring.len();
        if n > 0 {
            report("GNI_CqGetEvent", &format!("CQ {h:#x} still holds {n} event(s) never reaped"), "exit");
        }
        let d = cq.outstanding_descs();
        if d > 0 {
            report("GNI_GetCompleted", &format!("CQ {h:#x}: {d} posted descriptor(s) never taken back"), "exit");
        }
    }
    let eps = EPS.live_objects().len();
    if eps > 0 {
        report("GNI_EpDestroy", &format!("{eps} endpoint(s) never destroyed"), "exit");
    }
    let cdms = CDMS.live_objects().len();
    if cdms > 0 {
        report("GNI_CdmDestroy", &format!("{cdms} communication domain(s) never destroyed"), "exit");
    }
}

pub static CDMS: Table<Cdm> = Table::new(0xc1);
pub static NICS: Table<Nic> = Table::new(0xc2);
pub static CQS: Table<Cq> = Table::new(0xc3);
pub static EPS: Table<Ep> = Table::new(0xc4);

// ---------------------------------------------------------------------------------------
// Domains

/// Protection-domain key of registrations made through a (ptag, cookie) domain: derived
/// from the job secret and the pair, so a handle another job learnt (even one of a job
/// that happened to draw the same pair) fails the target's check.  Memory handles carry it
/// in their second word.  Computed once per CDM ([`Cdm::pd`]).
pub fn pd_key(ptag: u8, cookie: u32) -> u64 {
    softnic_fabric::bootstrap::gni_domain_key(ptag, cookie)
}

pub struct Cdm {
    pub inst_id: u32,
    pub ptag: u8,
    pub cookie: u32,
    pub modes: u32,
    /// [`pd_key`] of (ptag, cookie), computed at creation (posts read it).
    pub pd: u64,
    /// The NIC handle once attached (one device: attaching twice is INVALID_STATE).
    pub nic: Mutex<Option<*mut c_void>>,
}

// SAFETY: the raw handle is an opaque integer id, never dereferenced.
unsafe impl Send for Cdm {}
unsafe impl Sync for Cdm {}

pub struct Nic {
    pub cdm: Arc<Cdm>,
    pub device_id: u32,
    pub address: u32,
    /// Our registry entry (removed on CdmDestroy).
    pub published: EndpointId,
    /// Datagram state of this instance (crate::datagram).
    pub dgram: crate::datagram::Board,
    /// Set by GNI_CdmDestroy: the NIC handle is gone; objects still holding the Nic
    /// answer INVALID_PARAM where they check [`Nic::is_detached`].
    pub detached: AtomicBool,
    /// Memory registrations made through this NIC, by `MemKey::to_u64` (crate::memreg).
    pub regs: Mutex<HashMap<u64, RegInfo>>,
    /// vMDH block (GNI_SetMddResources) and the indices in use.
    pub mdd: Mutex<Mdd>,
}

impl Nic {
    pub fn is_detached(&self) -> bool {
        self.detached.load(Ordering::Acquire)
    }
    pub fn inst_id(&self) -> u32 {
        self.cdm.inst_id
    }
    pub fn pd_key(&self) -> u64 {
        self.cdm.pd
    }
}

/// What a NIC remembers about one of its registrations.
pub struct RegInfo {
    pub dst_cq: Option<Arc<Cq>>,
    pub vmdh: Option<u32>,
    pub read_only: bool,
    /// Multi-segment registration: the per-segment registrations and the segment table
    /// (library-owned shared memory; this registration's key is the table's).
    pub segs: Vec<MemKey>,
    pub table: Option<SharedMem>,
}

/// The vMDH block of a NIC.
#[derive(Default)]
pub struct Mdd {
    pub size: u32,
    pub used: HashSet<u32>,
}

// ---------------------------------------------------------------------------------------
// Completion queues

pub type EventHandler = unsafe extern "C" fn(*mut gni_cq_entry_t, *mut c_void);

pub struct Cq {
    pub nic: Arc<Nic>,
    /// Library-owned shared memory holding the ring (peers post into it); freed when the
    /// last reference to the CQ goes (peers' later posts then fail with StaleHandle).
    pub mem: ManuallyDrop<SharedMem>,
    pub ring: Ring<u64>,
    /// How peers name the ring.
    pub loc: RingLoc,
    pub blocking: bool,
    /// entry_count as given to GNI_CqCreate (the ring holds the next power of two).
    pub entry_count: u32,
    pub handler: Option<EventHandler>,
    pub context: usize,
    /// The descriptor of the local POST entry pushed into each ring slot (0: none), by
    /// slot index; the entry's aux is [`Cq::SLOT_TOKEN`] | the index.  Empty when the
    /// ring has more than [`Cq::SLOT_TOKEN`] slots.  See [`Cq::push_post`].
    by_slot: Box<[AtomicU64]>,
    /// Outstanding post descriptors by token (the CQE aux field) for the entries whose
    /// ring slot's descriptor was still outstanding, and for the collective engine.
    descs: SpinLock<Slab>,
    /// The slab refused a token (see [`Cq::slab_exhausted`]); cleared when one is freed.
    slab_full: AtomicBool,
    /// Endpoints and registrations using this CQ (CqDestroy refuses while non-zero).
    pub users: AtomicU32,
    /// Set when the ring overran: reported once as ERROR_RESOURCE, then cleared.
    overrun_reported: AtomicU32,
    /// A registration has named this CQ its dst_cq, or a collective engine its CQ (set
    /// then, never cleared: a hint, also left by a registration that failed after the
    /// lookup): peers queue events here.  A program polling it waits for peers, so its
    /// empty polls serve network traffic under a lease (`net::poll_for_events`).  A CQ of
    /// local completions only does not: a program that reaps its own post and then spins
    /// on memory for a peer's put must not hold the progress thread off.  Posts reporting
    /// to such a CQ claim their event's place before their data moves (`Cq::begin_post`).
    pub remote_dst: AtomicBool,
}

// SAFETY: the descriptor pointers in the slab are opaque values handed back to the user.
unsafe impl Send for Cq {}
unsafe impl Sync for Cq {}

pub use softnic_fabric::spin::{SpinGuard, SpinLock};

/// Where a post's local event goes ([`Cq::begin_post`]): claimed before the post's data
/// moved, taken when the event is published, or nowhere (the CQ was full: lost).
#[must_use = "a claimed position holds up the CQ's later events until it is published"]
pub enum PostSlot<'c> {
    Later(&'c Cq),
    Claimed(&'c Cq, softnic_fabric::ring::Claim<'c, u64>),
    Lost,
}

/// A [`PostSlot`] kept by a post that completes later, from a callback that owns its CQ
/// by a reference count ([`PostSlot::park`], [`Cq::unpark`]).
#[derive(Clone, Copy)]
pub enum Parked {
    Later,
    At(u64),
    Lost,
}

impl Cq {
    /// The slot `p` parked on this CQ.
    ///
    /// # Safety
    /// `p` was parked from a slot of this CQ and is unparked once.
    pub unsafe fn unpark(&self, p: Parked) -> PostSlot<'_> {
        match p {
            Parked::Later => PostSlot::Later(self),
            // SAFETY: the caller's contract.
            Parked::At(pos) => PostSlot::Claimed(self, unsafe { self.ring.resume(pos) }),
            Parked::Lost => PostSlot::Lost,
        }
    }
}

impl PostSlot<'_> {
    /// This slot, to be unparked ([`Cq::unpark`]) and published later.
    pub fn park(self) -> Parked {
        match self {
            PostSlot::Later(_) => Parked::Later,
            PostSlot::Claimed(_, c) => Parked::At(c.into_pos()),
            PostSlot::Lost => Parked::Lost,
        }
    }

    /// Queues entry `e` (a local event other than a post's: an SMSG send's).
    #[inline(always)]
    pub fn publish_entry(self, e: CqEntry) {
        match self {
            PostSlot::Later(cq) => cq.push(e),
            // SAFETY: the slot the claim reserved for us, written whole.
            PostSlot::Claimed(_, c) => c.publish(|_, p| unsafe { std::ptr::write_volatile(p, e) }),
            PostSlot::Lost => {}
        }
    }

    /// Queues the local POST entry of descriptor `d` (`status`, event data `data`).
    #[inline(always)]
    pub fn publish(self, d: *mut gni_post_descriptor_t, status: cqe::Status, data: u32) {
        match self {
            PostSlot::Later(cq) => cq.push_post(d, status, data),
            PostSlot::Claimed(cq, c) => cq.fill_post(c, d, status, data),
            PostSlot::Lost => {}
        }
    }
}

/// Outstanding post descriptors by token.  A slot holds a descriptor's address, or, when
/// free, [`Slab::FREE`] with the next free token (an intrusive free list: taking and
/// returning a token touch one slot and the list head).
struct Slab {
    slots: Vec<u64>,
    /// The first free token ([`Slab::NONE`]: none, the next token is a new slot).
    free: u32,
}

impl Slab {
    /// Marks a free slot (user-space addresses are below 2^63 on every Linux target).
    const FREE: u64 = 1 << 63;
    const NONE: u32 = u32::MAX;
}

impl Default for Slab {
    fn default() -> Slab {
        Slab { slots: Vec::new(), free: Slab::NONE }
    }
}

impl Cq {
    /// A CQ of at least `entry_count` entries (rounded up to a power of two).
    pub fn new(nic: Arc<Nic>, entry_count: u32, blocking: bool, handler: Option<EventHandler>, context: usize) -> GniResult<Arc<Cq>> {
        if entry_count == 0 || entry_count > (1 << 24) {
            return Err(GNI_RC_INVALID_PARAM);
        }
        let cap = entry_count.max(2).next_power_of_two();
        let len = Ring::<u64>::bytes_needed(cap);
        let mem = mem::alloc_shared(len).map_err(|_| GNI_RC_ERROR_NOMEM)?;
        // Only BLOCKING CQs are ever waited on (WaitEvent and the vector waits refuse the
        // others): the rest skip the wake-up on every push.
        // SAFETY: fresh shared memory of `len` bytes that only this CQ uses.
        let ring = unsafe {
            if blocking {
                Ring::<u64>::init(mem.as_ptr(), len, cap)
            } else {
                Ring::<u64>::init_unwaited(mem.as_ptr(), len, cap)
            }
        }
        .map_err(|_| GNI_RC_ERROR_RESOURCE)?;
        let loc = mem.ring_loc(0, len).map_err(|_| GNI_RC_ERROR_RESOURCE)?;
        let slots = if cap <= Cq::SLOT_TOKEN { cap } else { 0 };
        Ok(Arc::new(Cq {
            by_slot: (0..slots).map(|_| AtomicU64::new(0)).collect(),
            nic,
            mem: ManuallyDrop::new(mem),
            ring,
            loc,
            blocking,
            entry_count,
            handler,
            context,
            descs: SpinLock::new(Slab::default()),
            slab_full: AtomicBool::new(false),
            users: AtomicU32::new(0),
            overrun_reported: AtomicU32::new(0),
            remote_dst: AtomicBool::new(false),
        }))
    }

    /// Appends a locally produced entry; a full CQ records an overrun and drops it
    /// (never blocks the poster).
    #[inline(always)]
    pub fn push(&self, e: CqEntry) {
        // SOFTNIC_FAULTS=cq_overrun: the event is lost as on a full CQ.
        if softnic_fabric::faults::hit(softnic_fabric::faults::Point::CqOverrun) {
            self.ring.mark_overrun();
            return;
        }
        self.ring.push_or_overrun(&e);
    }

    /// Tokens with this bit name a ring slot (`by_slot`), the others a slab entry.
    pub const SLOT_TOKEN: u32 = 1 << 21;

    /// Queues the local POST entry of descriptor `d` (`status`, event data `data`); the
    /// descriptor is handed back by [`Cq::take_desc`] of the entry's aux.  A full CQ
    /// records an overrun and drops the entry (never blocks the poster).
    ///
    /// No lock and no read-modify-write beyond the ring's own: the descriptor goes into
    /// the table slot of the ring position the entry lands in (`Ring::push_in_place`), which
    /// only the producer that claimed that position writes, while it owns it:
    /// - that producer's store happens before the entry is published, and so before the
    ///   pop that returns it and the GNI_GetCompleted the program makes of it;
    /// - the producer of the next lap of that position (which claims it only after the
    ///   entry was popped, so after this store) finds the slot 0 once GetCompleted took the
    ///   descriptor (Release/Acquire on the slot); if it was not taken yet, that producer
    ///   leaves it alone and takes a slab token instead (locked, rare).
    ///
    /// Callers check [`Cq::slab_exhausted`] before moving data (ERROR_RESOURCE); a slab
    /// that fills between that check and the push loses the descriptor (the entry's aux
    /// then names none: GetCompleted answers DESCRIPTOR_ERROR) with a warning.
    #[inline(always)]
    pub fn push_post(&self, d: *mut gni_post_descriptor_t, status: cqe::Status, data: u32) {
        // SOFTNIC_FAULTS=cq_overrun: the event is lost as on a full CQ.
        if softnic_fabric::faults::hit(softnic_fabric::faults::Point::CqOverrun) {
            self.ring.mark_overrun();
            return;
        }
        match self.ring.claim() {
            Ok(c) => self.fill_post(c, d, status, data),
            Err(_) => self.ring.mark_overrun(),
        }
    }

    /// Writes the local POST entry of descriptor `d` into claimed position `c` and
    /// publishes it.
    #[inline(always)]
    fn fill_post(&self, c: softnic_fabric::ring::Claim<'_, u64>, d: *mut gni_post_descriptor_t, status: cqe::Status, data: u32) {
        // The entry made before the publish, whose closure is then one store (a closure
        // that made it stayed out of line: a call per post).
        let e = cqe::make(cqe::SRC_LOCAL, cqe::TYPE_POST, status, self.token_at(c.pos(), d) as u64, data as u64);
        // SAFETY: the slot the claim reserved for us, written whole.
        c.publish(move |_, p| unsafe { std::ptr::write_volatile(p, e) });
    }

    /// The position of a post's local event, taken before the post moves its data and
    /// filled when it is done ([`PostSlot::publish`], as [`Cq::push_post`]): events are
    /// causal.  A target that sees the data may react at once, and its reaction may queue
    /// an event on this CQ (a put with a REMOTE event, a CQ write or an SMSG into a
    /// registration whose destination CQ this is, a collective's result); that event must
    /// land behind ours, so that the program never reaps the answer to a post before the
    /// post's own completion (test: ugni/data_causal.c).  So when peers can queue here
    /// ([`Cq::remote_dst`]) the position is claimed now and held while the data moves
    /// (usually short: a post of up to `HOLD_MAX` bytes, one round trip to another
    /// machine; a large transfer's copy or background RDMA holds the CQ's later events
    /// until it ends); a CQ of local completions only (the usual source CQ) takes it
    /// when the event is published, off the path to the target.  A registration naming this CQ made while
    /// a post is between its data and its event, and handed to the target which then
    /// reacts through it, could still overtake it: the flag is read once per post.  A
    /// full CQ records an overrun and the event is lost, as with `push_post`.
    #[inline(always)]
    pub fn begin_post(&self) -> PostSlot<'_> {
        if !self.remote_dst.load(Ordering::Relaxed) {
            return PostSlot::Later(self);
        }
        // SOFTNIC_FAULTS=cq_overrun: the event is lost as on a full CQ.
        if softnic_fabric::faults::hit(softnic_fabric::faults::Point::CqOverrun) {
            self.ring.mark_overrun();
            return PostSlot::Lost;
        }
        match self.ring.claim() {
            Ok(c) => PostSlot::Claimed(self, c),
            Err(_) => {
                self.ring.mark_overrun();
                PostSlot::Lost
            }
        }
    }

    /// The token of descriptor `d` in an entry landing at ring position `pos` (claimed by
    /// this producer, not yet published): the slot's, if its last descriptor was taken
    /// back, else a slab token (see [`Cq::push_post`]).
    #[inline(always)]
    fn token_at(&self, pos: u64, d: *mut gni_post_descriptor_t) -> u32 {
        // The ring's slot index (its capacity is a power of two, the table's length).
        let i = (pos & (self.by_slot.len() as u64).wrapping_sub(1)) as usize;
        match self.by_slot.get(i) {
            // Acquire: pairs with take_desc's Release (its reads of the slot are done).
            Some(slot) if slot.load(Ordering::Acquire) == 0 => {
                // Relaxed: published with the entry (the ring's Release).
                slot.store(d as u64, Ordering::Relaxed);
                Cq::SLOT_TOKEN | i as u32
            }
            _ => self.add_desc_slab(d),
        }
    }

    /// A slab token for `d` from inside a push (see [`Cq::push_post`]): out of line.
    #[cold]
    #[inline(never)]
    fn add_desc_slab(&self, d: *mut gni_post_descriptor_t) -> u32 {
        self.add_desc(d).unwrap_or_else(|_| {
            softnic_fabric::sn_warn!("GNI_PostFma", "{} descriptors outstanding: descriptor {:p} cannot be given back by GNI_GetCompleted", Cq::SLOT_TOKEN, d);
            Cq::NO_TOKEN
        })
    }

    /// A token naming no descriptor (the slab's last, never handed out).
    const NO_TOKEN: u32 = Cq::SLOT_TOKEN - 1;

    /// True while the slab is full: a post asking for an event answers ERROR_RESOURCE
    /// (2^21 - 1 descriptors outstanding besides those in `by_slot`).  One load.
    #[inline(always)]
    pub fn slab_exhausted(&self) -> bool {
        self.slab_full.load(Ordering::Relaxed)
    }

    /// Remembers a posted descriptor in the slab; its token goes into the CQE aux field.
    /// ERROR_RESOURCE when 2^21 - 1 descriptors are outstanding there.
    #[inline(always)]
    pub fn add_desc(&self, d: *mut gni_post_descriptor_t) -> GniResult<u32> {
        let mut s = self.descs.lock();
        let t = s.free;
        if t != Slab::NONE {
            let slot = &mut s.slots[t as usize];
            let next = *slot as u32;
            *slot = d as u64;
            s.free = next;
            return Ok(t);
        }
        Self::add_desc_new(&mut s, &self.slab_full, d)
    }

    /// A token in a new slot (the free list is empty): out of line, rare once warm.
    #[cold]
    #[inline(never)]
    fn add_desc_new(s: &mut Slab, full: &AtomicBool, d: *mut gni_post_descriptor_t) -> GniResult<u32> {
        let t = s.slots.len() as u32;
        if t >= Cq::NO_TOKEN {
            full.store(true, Ordering::Relaxed);
            return Err(GNI_RC_ERROR_RESOURCE);
        }
        s.slots.push(d as u64);
        Ok(t as u32)
    }

    /// Takes back the descriptor of `token` (GNI_GetCompleted).
    ///
    /// A ring slot's descriptor is taken with a load and a store, no read-modify-write
    /// (see [`Cq::push_post`]): an entry given to GetCompleted twice at the same time by
    /// two threads (a program error) may hand its descriptor to both, as a token reused
    /// by a later post hands the later descriptor to a second, late GetCompleted of an
    /// entry (with slab tokens too); descriptors are values here, never dereferenced by
    /// this function, so either is memory-safe.
    #[inline(always)]
    pub fn take_desc(&self, token: u32) -> Option<*mut gni_post_descriptor_t> {
        if token & Cq::SLOT_TOKEN != 0 {
            let slot = self.by_slot.get((token & (Cq::SLOT_TOKEN - 1)) as usize)?;
            // Acquire: the descriptor was stored by the producer before it published the
            // entry, which the program popped before this call; Acquire also keeps a
            // descriptor stored by a later lap from being read before the check below.
            let d = slot.load(Ordering::Acquire);
            if d == 0 {
                return None;
            }
            // Release: the next producer of this slot stores after our reads.
            slot.store(0, Ordering::Release);
            return Some(d as *mut gni_post_descriptor_t);
        }
        self.take_desc_slab(token)
    }

    /// `take_desc` of a slab token: out of line (rare).
    #[inline(never)]
    fn take_desc_slab(&self, token: u32) -> Option<*mut gni_post_descriptor_t> {
        let mut s = self.descs.lock();
        let free = s.free;
        let slot = s.slots.get_mut(token as usize)?;
        let d = *slot;
        if d & Slab::FREE != 0 {
            return None;
        }
        *slot = Slab::FREE | free as u64;
        s.free = token;
        self.slab_full.store(false, Ordering::Relaxed);
        Some(d as *mut gni_post_descriptor_t)
    }

    /// Descriptors posted with an event and not yet returned by GNI_GetCompleted.
    pub fn outstanding_descs(&self) -> usize {
        let in_slots = self.by_slot.iter().filter(|d| d.load(Ordering::Relaxed) != 0).count();
        in_slots + self.descs.lock().slots.iter().filter(|&&d| d & Slab::FREE == 0).count()
    }

    /// Returns a descriptor token unused (the post failed before producing an event).
    pub fn drop_desc(&self, token: u32) {
        let _ = self.take_desc(token);
    }

    /// One non-blocking dequeue with the codes of GNI_CqGetEvent: NOT_DONE when empty,
    /// ERROR_RESOURCE once after an overrun, TRANSACTION_ERROR for an entry with an
    /// error status (entry still returned), the event handler called for SUCCESS and
    /// TRANSACTION_ERROR.
    ///
    /// Inlined into GNI_CqGetEvent: the common case (no overrun, an entry queued, no
    /// overrun to flag, no trace, no handler) is a ring pop and three loads; everything
    /// else runs out of line in the same order ([`Cq::get_event_empty`],
    /// [`Cq::deliver_slow`]).
    #[inline(always)]
    pub fn get_event(&self) -> (gni_return_t, CqEntry) {
        if self.ring.overrun() {
            return self.report_overrun();
        }
        let Some(e) = self.ring.pop() else { return self.get_event_empty() };
        // Load first: the flag is almost never set, and a swap is a locked instruction.
        if self.overrun_reported.load(Ordering::Relaxed) != 0 || softnic_fabric::trace::enabled() || self.handler.is_some() {
            return self.deliver_slow(e);
        }
        (if cqe::status(e) == 0 { GNI_RC_SUCCESS } else { GNI_RC_TRANSACTION_ERROR }, e)
    }

    /// Reports the loss of an overrun once, then carries on with what is queued.
    #[cold]
    #[inline(never)]
    fn report_overrun(&self) -> (gni_return_t, CqEntry) {
        self.ring.clear_overrun();
        self.overrun_reported.store(1, Ordering::Relaxed);
        (GNI_RC_ERROR_RESOURCE, 0)
    }

    /// GNI_CqGetEvent found the ring empty: serve network traffic now (it may carry our
    /// event) rather than when the progress thread wakes, and look again.
    #[inline(never)]
    fn get_event_empty(&self) -> (gni_return_t, CqEntry) {
        let served = if self.remote_dst.load(Ordering::Relaxed) { softnic_fabric::net::poll_for_events() } else { softnic_fabric::net::poll() };
        match served.then(|| self.ring.pop()).flatten() {
            Some(e) => self.deliver_slow(e),
            None => (GNI_RC_NOT_DONE, 0),
        }
    }

    /// Delivers dequeued entry `e` with everything the quick path leaves out: the
    /// overrun bit owed from an earlier report, the trace counter, the event handler.
    #[inline(never)]
    fn deliver_slow(&self, mut e: CqEntry) -> (gni_return_t, CqEntry) {
        if self.overrun_reported.load(Ordering::Relaxed) != 0 && self.overrun_reported.swap(0, Ordering::Relaxed) != 0 {
            e = cqe::with_overrun(e);
        }
        let rc = if cqe::status(e) == 0 { GNI_RC_SUCCESS } else { GNI_RC_TRANSACTION_ERROR };
        if softnic_fabric::trace::enabled() {
            // The timeline: how many events are still queued after this one.
            softnic_fabric::trace::counter_of("CQ depth", self as *const Cq as u64, self.ring.len() as u64);
        }
        if let Some(h) = self.handler {
            let mut copy = e;
            // SAFETY: the user's callback, with a pointer to a live entry and their context.
            unsafe { h(&mut copy, self.context as *mut c_void) };
        }
        (rc, e)
    }

    /// Blocking dequeue (GNI_CqWaitEvent): `timeout_ms == u64::MAX` waits forever.
    pub fn wait_event(&self, timeout_ms: u64) -> (gni_return_t, CqEntry) {
        if !self.blocking {
            return (GNI_RC_ERROR_RESOURCE, 0);
        }
        let deadline = (timeout_ms != u64::MAX).then(|| std::time::Instant::now() + Duration::from_millis(timeout_ms));
        // SOFTNIC_FAULTS=timeout: a wait given a time limit runs out at once (events stay queued).
        if deadline.is_some() && softnic_fabric::faults::hit(softnic_fabric::faults::Point::Timeout) {
            return (GNI_RC_TIMEOUT, 0);
        }
        loop {
            let (rc, e) = self.get_event();
            if rc != GNI_RC_NOT_DONE {
                return (rc, e);
            }
            let left = match deadline {
                None => None,
                Some(d) => match d.checked_duration_since(std::time::Instant::now()) {
                    Some(l) if !l.is_zero() => Some(l),
                    _ => return (GNI_RC_TIMEOUT, 0),
                },
            };
            let _ = self.ring.wait_nonempty(left);
        }
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: dropped once, here; nothing uses the ring after the last reference.
        let m = unsafe { ManuallyDrop::take(&mut self.mem) };
        let _ = mem::free_shared(m);
    }
}

impl Cq {
    /// GNI_CqTestEvent: SUCCESS when an entry is queued, ERROR_RESOURCE after an overrun
    /// (until GetEvent reports it), NOT_DONE otherwise.  Consumes nothing.
    pub fn test_event(&self) -> gni_return_t {
        if self.ring.overrun() {
            GNI_RC_ERROR_RESOURCE
        } else if self.ring.is_empty() {
            GNI_RC_NOT_DONE
        } else {
            GNI_RC_SUCCESS
        }
    }
}

// ---------------------------------------------------------------------------------------
// Endpoints

/// Where an endpoint is bound.
///
/// Only the NIC address routes: a transaction reaches the process its remote memory
/// handle names ([`CrayHandle`] carries its owner), as on the hardware, where the handle
/// names a memory domain of the addressed NIC.  `remote_id` is an arbitrary user value
/// (programs pass `rank*100 + peer`, hashes, upper-layer ids): it is the default event
/// data of the initiator's events and the datagram match key, nothing more — except for
/// symmetric vMDH handles, which name no process: they resolve in the vMDH table of the
/// instance whose inst_id is `remote_id` at `remote_addr`, else of the instance the
/// endpoint last exchanged a datagram with there (crate::memreg).
#[derive(Clone)]
pub struct Binding {
    pub remote_addr: u32,
    pub remote_id: u32,
    /// The process the last transaction went to (by its handle's owner), reused while the
    /// next one names the same owner ([`Ep::route`]).
    pub route: Option<(ProcId, Arc<Peer>)>,
    /// Registrations this endpoint's small puts and AMOs used more than once (see [`Pins`]).
    pub pins: Pins,
}

/// Registrations of this endpoint's small FMA posts, pinned (`rma::Pinned`, the whole
/// registration), by handle words: the targets' (puts, AMOs) and our own (where fetching
/// AMOs return their result).  A post through pinned handles moves after the pins' few
/// checks instead of the per-operation path (crate::post).  A handle is pinned when it
/// misses twice among the last two misses, so a program that uses a new registration each
/// time pays nothing for it.
#[derive(Default)]
pub struct Pins {
    pins: Vec<PinEntry>,
    next: usize,
    /// The handle words of the last two uses that found no pin.
    misses: [Option<[u64; 2]>; 2],
    next_miss: usize,
    /// The last two handles whose registrations the fabric cannot pin (several backings,
    /// fallback memory): not tried again at every post that misses.
    refused: [Option<[u64; 2]>; 2],
    next_refused: usize,
}

/// A pinned registration (or the block of it that a post used, when the whole spans
/// several backings: see `post::pin_after`), the owner's address range it covers, and its
/// notify ring (where REMOTE events go) once looked up: `Some(None)` when the
/// registration has none.
struct PinEntry {
    words: [u64; 2],
    /// Quick: its rows' addresses resolved once (every post re-checks them).
    pin: softnic_fabric::rma::QuickPinned,
    /// [start, end) of the pinned range (owner's addresses).
    range: (u64, u64),
    ring: Option<Option<softnic_fabric::rma::PinnedRing<u64>>>,
}

impl PinEntry {
    /// Handle words `w`, and `[addr, addr+len)` inside the pinned range?
    #[inline]
    fn serves(&self, w: [u64; 2], addr: u64, len: u64) -> bool {
        self.words == w && addr >= self.range.0 && addr.checked_add(len).is_some_and(|end| end <= self.range.1)
    }
}

/// A copy of a binding starts with no pins (they are a cache).
impl Clone for Pins {
    fn clone(&self) -> Pins {
        Pins::default()
    }
}

impl Pins {
    /// Pins kept per endpoint (the oldest is replaced).
    const MAX: usize = 4;

    /// The pin of handle words `w` that covers the owner's `[addr, addr+len)`.
    #[inline]
    pub fn find(&self, w: [u64; 2], addr: u64, len: u64) -> Option<&softnic_fabric::rma::Pinned> {
        self.find_quick(w, addr, len).map(|q| q.pinned())
    }

    /// [`Pins::find`] for a quick path (`QuickPinned::check` re-checks it in one step).
    #[inline]
    pub fn find_quick(&self, w: [u64; 2], addr: u64, len: u64) -> Option<&softnic_fabric::rma::QuickPinned> {
        self.pins.iter().find(|e| e.serves(w, addr, len)).map(|e| &e.pin)
    }

    /// The pin of handle words `w` that covers `[addr, addr+len)` and its notify ring (as
    /// [`Pins::ring`]), found in one search.
    #[inline(always)]
    pub fn find_with_ring(&self, w: [u64; 2], addr: u64, len: u64) -> Option<(&softnic_fabric::rma::QuickPinned, Option<&Option<softnic_fabric::rma::PinnedRing<u64>>>)> {
        self.entry(w, addr, len).map(|e| (&e.pin, e.ring.as_ref()))
    }

    /// The entry serving `(w, addr, len)`: the first one tested inline (a program's busy
    /// registration is usually among the first pinned), the search through the others
    /// out of line.
    #[inline(always)]
    fn entry(&self, w: [u64; 2], addr: u64, len: u64) -> Option<&PinEntry> {
        match self.pins.first() {
            Some(e) if e.serves(w, addr, len) => Some(e),
            _ => self.entry_after_first(w, addr, len),
        }
    }

    #[inline(never)]
    fn entry_after_first(&self, w: [u64; 2], addr: u64, len: u64) -> Option<&PinEntry> {
        self.pins.iter().skip(1).find(|e| e.serves(w, addr, len))
    }

    /// The notify ring of the registration in its pin for handle words `w` that covers
    /// `[addr, addr+len)`: None when there is no such pin or the ring was not looked up
    /// yet, `Some(None)` when the registration has none.
    #[inline]
    pub fn ring(&self, w: [u64; 2], addr: u64, len: u64) -> Option<&Option<softnic_fabric::rma::PinnedRing<u64>>> {
        self.pins.iter().find(|e| e.serves(w, addr, len)).and_then(|e| e.ring.as_ref())
    }

    /// Records the notify ring of the registration in its pin for handle words `w` that
    /// covers `[addr, addr+len)` (each block's pin keeps its own).
    pub fn set_ring(&mut self, w: [u64; 2], addr: u64, len: u64, ring: Option<softnic_fabric::rma::PinnedRing<u64>>) {
        if let Some(e) = self.pins.iter_mut().find(|e| e.serves(w, addr, len)) {
            e.ring = Some(ring);
        }
    }

    /// Notes a use of handle words `w` that found no pin: true when one of the last two
    /// misses was `w` too (worth pinning).
    pub fn missed(&mut self, w: [u64; 2]) -> bool {
        if self.refused.contains(&Some(w)) {
            return false;
        }
        if self.misses.contains(&Some(w)) {
            return true;
        }
        self.misses[self.next_miss % 2] = Some(w);
        self.next_miss = self.next_miss.wrapping_add(1);
        false
    }

    /// Notes that the registration of handle words `w` cannot be pinned (its uses take
    /// the general path without trying again, while it is among the last two refused).
    pub fn refuse(&mut self, w: [u64; 2]) {
        for m in self.misses.iter_mut().filter(|m| **m == Some(w)) {
            *m = None;
        }
        self.refused[self.next_refused % 2] = Some(w);
        self.next_refused = self.next_refused.wrapping_add(1);
    }

    /// Keeps `pin` for handle words `w`.
    pub fn add(&mut self, w: [u64; 2], pin: softnic_fabric::rma::Pinned) {
        for m in self.misses.iter_mut().filter(|m| **m == Some(w)) {
            *m = None;
        }
        let (start, len) = pin.range();
        let range = (start, start.saturating_add(len as u64));
        let e = PinEntry { words: w, pin: softnic_fabric::rma::QuickPinned::new(pin), range, ring: None };
        if let Some(old) = self.pins.iter_mut().find(|e| e.words == w && e.range.0 == range.0) {
            *old = e; // a stale pin of the same handle (and block)
        } else if self.pins.len() < Self::MAX {
            self.pins.push(e);
        } else {
            self.pins[self.next % Self::MAX] = e;
            self.next = self.next.wrapping_add(1);
        }
    }
}

/// An endpoint's CE attributes (GNI_EpSetCeAttr) and its last post.
#[derive(Clone, Copy, Default)]
pub struct CeAttr {
    pub ce_id: u32,
    pub child_id: u32,
    pub child_type: gni_ce_child_t,
    /// (VCE, round) of the last reduction posted on this endpoint.
    pub last: Option<(NodeRef, u64)>,
}

pub struct EpState {
    pub binding: Option<Binding>,
    /// GNI_EpSetEventData values; None = the defaults (see `local_event`/`remote_event`).
    pub local_event: Option<u32>,
    pub remote_event: Option<u32>,
    /// Short-messaging state after GNI_SmsgInit (crate::mailbox, used by crate::smsg).
    pub smsg: Option<SmsgState>,
    /// The endpoint's datagram (crate::datagram).
    pub dgram: crate::datagram::EpDgram,
    /// (NIC address, inst_id) of the instance the last completed datagram was exchanged
    /// with.
    pub dgram_peer: Option<(u32, u32)>,
    /// Posts not yet completed (EpUnbind answers NOT_DONE while non-zero).
    pub in_flight: u32,
    /// Collective-engine attributes (GNI_EpSetCeAttr) and last reduction (crate::ce).
    pub ce: Option<CeAttr>,
}

pub struct Ep {
    pub nic: Arc<Nic>,
    pub cq: Option<Arc<Cq>>,
    /// Taken on every post and SMSG call (a spin lock: cheaper to release than a Mutex).
    pub st: SpinLock<EpState>,
}

impl Ep {
    pub fn state(&self) -> SpinGuard<'_, EpState> {
        self.st.lock()
    }

    /// Data of every event on the initiator's own CQ (LOCAL and GLOBAL POST events, SMSG
    /// and MSGQ send completions, CQ-write completions): the value set by
    /// GNI_EpSetEventData, else the `remote_id` the endpoint was bound with (digest
    /// CORRECTION: programs read it as "to whom").
    pub fn local_event(st: &EpState) -> u32 {
        st.local_event.or(st.binding.as_ref().map(|b| b.remote_id)).unwrap_or(0)
    }

    /// Data of every event this endpoint causes at the target (REMOTE POST events, SMSG
    /// arrivals): the value set by GNI_EpSetEventData, else our own inst_id ("from whom").
    pub fn remote_event(&self, st: &EpState) -> u32 {
        st.remote_event.unwrap_or(self.nic.inst_id())
    }

    /// Finds the process a transaction with remote handle `h` goes to and leaves it,
    /// probed alive during this call, in `st.binding.route` (borrow it from there: no
    /// reference-count traffic on the hot path).  Returns the handle's words with a vMDH
    /// handle replaced by the real handle it stands for at the target.
    ///
    /// `Err(None)`: the endpoint is unbound (the caller answers INVALID_PARAM).
    /// `Err(Some(status))`: the target cannot be reached — no live process owns the handle
    /// (forged, stale, owner gone), the owner is on another node than the bound address, a
    /// vMDH handle of another domain or index — reported as a transaction error.
    pub fn route(&self, st: &mut EpState, h: &gni_mem_handle_t) -> Result<[u64; 2], Option<cqe::Status>> {
        let b = st.binding.as_mut().ok_or(None)?;
        let words = if h.qword1 & crate::memhandle::VMDH_FLAG != 0 {
            if h.qword2 != self.nic.pd_key() {
                return Err(Some(cqe::Status::Protection));
            }
            let idx = (h.qword1 & !crate::memhandle::VMDH_FLAG) as usize;
            // A symmetric handle names no process: the instance bound as remote_id, else
            // the one this endpoint exchanged a datagram with at that address.
            let via_dgram = st.dgram_peer.filter(|&(a, id)| a == b.remote_addr && id != b.remote_id);
            self.nic
                .dgram
                .peer_vmdh(b.remote_addr, b.remote_id, idx)
                .or_else(|| via_dgram.and_then(|(a, id)| self.nic.dgram.peer_vmdh(a, id, idx)))
                .ok_or(Some(cqe::Status::NoTarget))?
        } else {
            [h.qword1, h.qword2]
        };
        let owner = CrayHandle::from_words([words[0] & !CrayHandle::KIND_BITS, words[1]]).owner;
        if let Some((id, p)) = &b.route {
            // Rate-limited: a liveness probe is a system call, too dear for every post.
            if *id == owner && p.seems_alive() {
                return Ok(words);
            }
            b.route = None;
        }
        // The bound address picks the node (shared memory here, the network engine
        // elsewhere), the handle's owner the process there.
        let peer = Peer::at(b.remote_addr, owner, CrayHandle::OWNER_GEN_BITS).map_err(|e| Some(cqe::Status::from_fabric(e)))?;
        if peer.node_addr().is_some_and(|a| a != b.remote_addr) {
            softnic_fabric::sn_debug!("uGNI", "memory handle of node {:?} used on an endpoint bound to node {}", peer.node_addr(), b.remote_addr);
            return Err(Some(cqe::Status::NoTarget));
        }
        // Run the rate-limited probe now (a cached Peer may not have been probed for a
        // while), so callers may rely on `Peer::live_probed` for the rest of the call.
        let _ = peer.seems_alive();
        b.route = Some((owner, peer));
        Ok(words)
    }
}
