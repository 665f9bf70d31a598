//! Event queues: PtlEQAlloc/Free/Get/Wait/Wait_timeout/Poll, the deposit of events
//! ([`push`], used by both sides of every operation), the owner's holds that keep its
//! events in causal order, EQ handlers, PtlNIEqDump.
//!
//! **Where events live.**  Each queue is an [`EvRing`] of exactly `count` slots in the
//! arena of its NI's segment, so whoever runs an operation against the NI (an initiator on
//! this machine, the NI's own progress thread for other machines, the owner for its own
//! initiator-side events) deposits into it, and a deposit wakes a thread asleep in
//! PtlEQWait (futex on the ring's wait words) without polling.  Every deposit happens
//! under the NI's lock; the lock's release (an atomic exchange) is the fence after which
//! the sleepers of the queues it deposited into are woken (see [`crate::lock`]).
//!
//! **Full queues** overwrite their oldest event (the 3.2 document's circular queue, as the
//! reference implementation does): a deposit never fails, and the consumer that finds
//! its next event overwritten returns the oldest one still held with PTL_EQ_DROPPED.  An
//! event's `sequence` is its position in the queue: consecutive, the lost ones included.
//!
//! **Causal order (holds).**  Every event an initiator's operation logs in its own queue
//! (SEND_END, ACK, REPLY_START/END, UNLINK) must be seen before anything the target does
//! in reaction (a put back lands in the same queue).  An operation that runs with its own
//! NI's lock held throughout (the one-critical-section path of [`crate::ops`]) gets that
//! from the lock.  One that releases it (first contact, a busy target, another machine, a
//! large transfer) first takes a [`Hold`] on its queue: from then on, events deposited
//! there by others are held (written, not visible); when the operation ends its own
//! events are inserted where the hold began, before the held ones, and everything no
//! earlier hold still covers becomes visible.  Holds are the owner's (process-local,
//! under the NI lock); deposits only read the row's count of them.
//!
//! **Consumers** are the owner's threads.  One spin lock per queue serialises takes (the
//! cursor: next position, slot, loss seen), and the event is copied straight into the
//! caller's `ptl_event_t`; PtlEQGet answers PTL_EQ_EMPTY while a thread waits in
//! PtlEQWait/PtlEQPoll on the queue.  PtlEQFree and PtlNIFini end the queue and wake its
//! waiters, which return PTL_EQ_INVALID.
//!
//! **Handlers** run in one library thread per process (started by the first queue with
//! a handler), fed by a second ring in the segment: each event that becomes visible in a
//! queue with a handler is also pushed there, and the thread calls the handler with a copy.

use crate::evring::{Cursor, EvRing};
use crate::handle;
use crate::objects::{EqLocal, Lib, Ni};
use crate::seg::{Guard, HandlerNote, Seg, FREE, LIVE};
use crate::status::{done, ret, PResult};
use crate::types::*;
use softnic_fabric::spin::SpinLock;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Most events a queue may be asked to hold.
pub const MAX_COUNT: u64 = 1 << 20;

/// An operation's hold on one of its own queues (see the module doc): taken before its
/// target can act, released with the operation's own events.  Plain data: the holds
/// themselves are kept by the owner's view of its segment ([`Seg::with_holds`]).
#[derive(Clone, Copy)]
struct Hold {
    eq_h: u32,
    idx: u32,
    gen: u32,
    id: u64,
}

/// The holds of one operation: one queue, or two for PtlGetPut.
#[derive(Default)]
pub struct OpHolds {
    h: [Option<Hold>; 2],
}

/// Most events one operation logs in its own queues (PtlGetPut: SEND_END, REPLY_START,
/// REPLY_END and two UNLINKs), with room to spare.
const OWN_MAX: usize = 8;

/// The events an operation logs in its own queues while it holds them, kept aside until
/// it releases its holds (they go in before what was held).  On the stack, not even
/// zeroed: this is on the path of every operation that releases its lock.
pub struct OwnEvents {
    n: usize,
    eqs: [u32; OWN_MAX],
    evs: [std::mem::MaybeUninit<Packed>; OWN_MAX],
}

impl Default for OwnEvents {
    fn default() -> Self {
        OwnEvents { n: 0, eqs: [0; OWN_MAX], evs: [const { std::mem::MaybeUninit::uninit() }; OWN_MAX] }
    }
}

impl OwnEvents {
    /// The events kept, in order.
    fn events(&self) -> &[Packed] {
        // SAFETY: the first `n` were written (`deposit`); MaybeUninit<Packed> has Packed's layout.
        unsafe { std::slice::from_raw_parts(self.evs.as_ptr() as *const Packed, self.n) }
    }
}

impl EqLocal {
    /// Wakes and refuses every waiter (PtlEQFree, PtlNIFini).
    pub fn end(&self) {
        self.ended.store(true, Ordering::Release);
        // Full fence, then a wake if someone sleeps: pairs with the waiters' fence.
        self.ring.wake().notify();
    }

    /// The next event and whether events were lost before it; else the cursor at which
    /// the queue is empty (for a wait).
    #[inline(always)]
    fn take(&self) -> PResult<Result<(Packed, bool), Cursor>> {
        if self.ended.load(Ordering::Acquire) {
            return Err(PTL_EQ_INVALID);
        }
        let mut c = self.next.lock();
        loop {
            return match self.ring.take(&mut c) {
                // SOFTNIC_FAULTS=cq_overrun: this event is lost as on a queue that
                // overflowed; the next one returned says so (PTL_EQ_DROPPED).
                Some(_) if softnic_fabric::faults::hit(softnic_fabric::faults::Point::CqOverrun) => {
                    c.dropped = true;
                    continue;
                }
                Some(x) => {
                    // An event is often answered at once (a reply, a ping-pong): start
                    // fetching our lock's line, which the event's initiator has just used.
                    self.ni.seg.prefetch_lock();
                    if softnic_fabric::trace::enabled() {
                        // The timeline: how many events are still queued after this one.
                        softnic_fabric::trace::counter_of("EQ depth", self as *const EqLocal as u64, self.ring.head().saturating_sub(c.pos));
                    }
                    Ok(Ok(x))
                }
                None => Ok(Err(*c)),
            };
        }
    }

    /// [`EqLocal::take`] straight into the caller's event: its code, or the cursor.
    #[inline]
    fn take_into(&self, dst: *mut Event) -> PResult<Result<i32, Cursor>> {
        Ok(self.take()?.map(|(p, dropped)| deliver(&p, dropped, dst)))
    }

    /// [`EqLocal::take_into`] for the calls that do not wait (PtlEQGet, PtlEQWait's first
    /// try): no cursor to hand back, and inlined into the caller's lookup (out of line,
    /// the nested result went through memory and back).
    #[inline(always)]
    fn try_take_into(&self, dst: *mut Event) -> PResult<Option<i32>> {
        Ok(self.take()?.ok().map(|(p, dropped)| deliver(&p, dropped, dst)))
    }

    /// Is there something for a consumer at `at` (or has the queue ended)?
    #[inline(always)]
    fn ready_at(&self, at: &Cursor) -> bool {
        self.ring.ready_at(at) || self.ended.load(Ordering::Relaxed)
    }

    /// Waits until the queue, empty at `at`, has an entry: spins (a pause between checks,
    /// so that an event is seen within a few dozen nanoseconds) for up to
    /// SOFTNIC_PTL_SPIN_NS unless `spun` (the caller just did), then sleeps on the ring's
    /// futex.
    fn wait(&self, at: &Cursor, timeout: Option<Duration>, spun: bool) -> softnic_fabric::Result<()> {
        let _waiting = Waiting::on(std::slice::from_ref(&self));
        if !spun && self.spin_for(at, timeout) {
            return Ok(());
        }
        let left = if spun { timeout } else { timeout.map(|t| t.saturating_sub(spin_time())) };
        softnic_fabric::net::stop_polling_for_events();
        softnic_fabric::cancel::point(|| self.ring.wake().wait_until(|| self.ready_at(at), left))
    }

    /// The spin of [`EqLocal::wait`] (the caller counts itself a waiter): true once the
    /// queue, empty at `at`, has an entry; false when the spin time (or `timeout`) is over.
    #[inline]
    fn spin_for(&self, at: &Cursor, timeout: Option<Duration>) -> bool {
        // The next event lands in the slot at the cursor.  Its first line holds the stamp
        // the check reads; keep its second line in the cache too (a prefetch per check:
        // free while nothing changes), so that both are fetched together when the event
        // is written, not one after the other.
        let second = self.ring.slot_at(at).wrapping_add(64);
        spin_until(
            || {
                crate::prefetch::prefetch_read(second);
                self.ready_at(at)
            },
            timeout,
        )
    }

    /// PtlEQWait's attempt before it blocks (see `take_now`): the event at the head of
    /// the queue, or the first that arrives while it spins (SOFTNIC_PTL_SPIN_NS); None
    /// when the spin is over first, which [`SPUN`] records so that the wait that follows
    /// sleeps at once.
    #[inline]
    fn take_or_spin(&self, dst: *mut Event) -> PResult<Option<i32>> {
        let at = match self.take()? {
            Ok((p, dropped)) => return Ok(Some(deliver(&p, dropped, dst))),
            Err(at) => at,
        };
        let arrived = {
            let _waiting = Waiting::on(std::slice::from_ref(&self));
            self.spin_for(&at, None)
        };
        if !arrived {
            SPUN.with(|s| s.set(true));
            return Ok(None);
        }
        self.try_take_into(dst)
    }

    /// Does the queue hold an event (taken or not by a consumer yet)?  NI lock held.
    pub fn holds_events(&self) -> bool {
        self.ring.head() > self.next.lock().pos
    }

    /// Events deposited and not taken yet (at most the queue's size).
    pub fn untaken(&self) -> u64 {
        self.ring.head().saturating_sub(self.next.lock().pos).min(self.ring.cap() as u64)
    }

}

/// Opens a hold on queue `eq_h` of our NI `seg` (lock held): from now on what others
/// deposit there is held.  None for PTL_EQ_NONE, a queue that is not live, and a queue
/// no attached MD ever named: only our own operations log there (SEND, ACK, REPLY and
/// UNLINK of bound MDs), no reaction of a target can, so there is nothing to hold back
/// (the operations of a bandwidth loop then cost no hold).
#[inline]
fn hold(seg: &Seg, g: &Guard<'_>, eq_h: u32) -> Option<Hold> {
    let (idx, hgen) = handle::index_of(eq_h, handle::EQ)?;
    let q = seg.eq(g, idx)?;
    if q.state != LIVE || !seg.gen_ok(q.gen, hgen) || q.targeted == 0 {
        return None;
    }
    let ring = seg.with_eq_ring(g, idx, (q.gen, q.ring_off, q.ring_len), |r| *r)?;
    let id = seg.with_holds(g, idx, q.gen, |h| h.open(&ring))?;
    q.gates += 1;
    Some(Hold { eq_h, idx, gen: q.gen, id })
}

/// Ends hold `h` (lock held): `own` go in where it began, and whatever no earlier hold
/// still covers becomes visible (and reaches the queue's handler).
fn release(seg: &Seg, g: &Guard<'_>, h: &Hold, own: &[Packed]) {
    let Some(q) = seg.eq(g, h.idx) else { return };
    if q.state != LIVE || q.gen != h.gen {
        // Freed meanwhile: nothing to release into (a new queue there starts afresh).
        return;
    }
    let Some(ring) = seg.with_eq_ring(g, h.idx, (q.gen, q.ring_off, q.ring_len), |r| *r) else { return };
    let handler = (q.has_handler != 0).then(|| seg.handler_ring()).flatten();
    let (idx, gen) = (h.idx, q.gen);
    // SAFETY: the NI lock serialises the ring's producers; the holds were opened on it.
    let shown = seg.with_holds(g, idx, gen, |hs| unsafe {
        hs.release(&ring, h.id, own, |pos, e| {
            if let Some(hr) = &handler {
                hr.push_or_overrun(&HandlerNote { eq: idx, eq_gen: gen, ev: Packed { sequence: pos as u32, ..*e }.unpack() });
            }
        })
    });
    q.gates = q.gates.saturating_sub(1);
    if shown == Some(true) {
        // SAFETY: the ring lies in the segment, mapped as long as the lock's holder is.
        unsafe { g.wake_on_release(ring.wake()) };
    }
}

/// Ends hold `h` if nothing would come after the operation's own events (see
/// `Holds::end_if_clear`).  True when it ended.
fn end_if_clear(seg: &Seg, g: &Guard<'_>, h: &Hold) -> bool {
    let Some(q) = seg.eq(g, h.idx) else { return true };
    if q.state != LIVE || q.gen != h.gen {
        return true;
    }
    let Some(ring) = seg.with_eq_ring(g, h.idx, (q.gen, q.ring_off, q.ring_len), |r| *r) else { return true };
    if seg.with_holds(g, h.idx, q.gen, |hs| hs.end_if_clear(&ring, h.id)) != Some(true) {
        return false;
    }
    q.gates = q.gates.saturating_sub(1);
    true
}

impl OpHolds {
    /// At the operation's end (lock held): ends the holds behind which nothing came (and
    /// no other hold lies), whose queues then take the operation's events as usual.  True
    /// when none is left: the events need not be kept aside.
    #[inline]
    pub fn settle(&mut self, seg: &Seg, g: &Guard<'_>) -> bool {
        for slot in self.h.iter_mut() {
            if slot.as_ref().is_some_and(|h| end_if_clear(seg, g, h)) {
                *slot = None;
            }
        }
        self.h.iter().all(Option::is_none)
    }

    /// Holds `eqs` (PTL_EQ_NONE and repeats skipped) for an operation of our NI `seg` that
    /// is about to release its lock (`g`).
    #[inline]
    pub fn open(seg: &Seg, g: &Guard<'_>, eqs: &[u32]) -> OpHolds {
        let mut o = OpHolds::default();
        for (i, &e) in eqs.iter().take(2).enumerate() {
            if e != PTL_EQ_NONE && !o.h.iter().flatten().any(|h| h.eq_h == e) {
                o.h[i] = hold(seg, g, e);
            }
        }
        o
    }

    fn holds(&self, eq_h: u32) -> bool {
        self.h.iter().flatten().any(|h| h.eq_h == eq_h)
    }

    /// Releases the holds with the operation's own events (lock held); events for a queue
    /// it did not hold are deposited as usual.
    pub fn release(self, seg: &Seg, g: &Guard<'_>, own: OwnEvents) {
        let (eqs, evs) = (&own.eqs[..own.n], own.events());
        for h in self.h.iter().flatten() {
            if eqs.iter().all(|&q| q == h.eq_h) {
                // All of them (the rule: one queue).
                release(seg, g, h, evs);
                continue;
            }
            let mut mine = [Packed::default(); OWN_MAX];
            let mut n = 0;
            for (_, e) in eqs.iter().zip(evs).filter(|(q, _)| **q == h.eq_h) {
                mine[n] = *e;
                n += 1;
            }
            release(seg, g, h, &mine[..n]);
        }
        for (&q, &e) in eqs.iter().zip(evs).filter(|(q, _)| !self.holds(**q)) {
            push(seg, g, q, || e);
        }
    }
}

/// A wait on some queues, counted in their `waiters` (PtlEQGet leaves a queue with a waiter
/// to it) for as long as it lasts, also when a cancellation ends it in its sleep.
struct Waiting<'a>(&'a [&'a EqLocal]);

impl<'a> Waiting<'a> {
    fn on(qs: &'a [&'a EqLocal]) -> Self {
        for q in qs {
            q.waiters.fetch_add(1, Ordering::AcqRel);
        }
        Waiting(qs)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        for q in self.0 {
            q.waiters.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// How long the waits spin before they sleep (SOFTNIC_PTL_SPIN_NS).
fn spin_time() -> Duration {
    static NS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    Duration::from_nanos(*NS.get_or_init(|| softnic_fabric::env::get_u64("SOFTNIC_PTL_SPIN_NS").min(10_000_000_000)))
}

/// Checks of the first spin phase (see [`spin_until`]).
const TIGHT_CHECKS: u32 = 1024;

/// Spins until `ready()` or the spin time (or `timeout`, if shorter) is over.  First
/// [`TIGHT_CHECKS`] checks back to back, without a pause or a clock read (a pause costs
/// tens of nanoseconds, a clock read as much in a virtual machine: the delay between an
/// event's arrival and its sight, in a ping-pong), then a pause between checks.
fn spin_until(mut ready: impl FnMut() -> bool, timeout: Option<Duration>) -> bool {
    let limit = timeout.map_or(spin_time(), |t| t.min(spin_time()));
    if limit.is_zero() {
        return ready();
    }
    for _ in 0..TIGHT_CHECKS {
        if ready() {
            return true;
        }
    }
    let end = Instant::now() + limit;
    loop {
        for _ in 0..64 {
            if ready() {
                return true;
            }
            std::hint::spin_loop();
        }
        // The event may come from another machine: serve the network meanwhile (the
        // waiter sleeps on the ring next, which hands the network back to the progress
        // thread).  A no-op in a one-machine job.
        softnic_fabric::net::poll_for_events();
        if Instant::now() >= end {
            return ready();
        }
    }
}

/// The queue `h` of `n` (`PTL_EQ_INVALID` when it is not a live queue of this NI).
pub fn eq_local(n: &Ni, h: u32) -> PResult<Arc<EqLocal>> {
    let (idx, _) = handle::index_of(h, handle::EQ).ok_or(PTL_EQ_INVALID)?;
    let t = n.eqs.read().unwrap_or_else(|e| e.into_inner());
    t.get(idx as usize).and_then(|q| q.as_ref()).filter(|q| q.handle == h).cloned().ok_or(PTL_EQ_INVALID)
}

thread_local! {
    /// PtlEQWait's first attempt spun its full time without an event (see
    /// [`EqLocal::take_or_spin`]); read and cleared by the wait that follows it.
    static SPUN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

thread_local! {
    static LAST_EQ: std::cell::RefCell<Option<Arc<EqLocal>>> = const { std::cell::RefCell::new(None) };
}

fn lookup(h: u32) -> PResult<Arc<EqLocal>> {
    with_eq(h, |q| Ok(q.clone()))
}

/// Runs `f` on queue `h`, borrowed from the thread's cache of its last queue while that
/// queue lives (PtlEQWait in a loop takes no lock and no reference count).
#[inline]
fn with_eq<R>(h: u32, f: impl FnOnce(&Arc<EqLocal>) -> PResult<R>) -> PResult<R> {
    Lib::check_init()?;
    LAST_EQ.with(|c| {
        let b = c.try_borrow();
        if let Ok(Some(q)) = b.as_deref() {
            if q.handle == h && !q.ended.load(Ordering::Acquire) && !q.ni.ended.load(Ordering::Acquire) {
                return f(q);
            }
        }
        drop(b);
        let (n, _, _) = Lib::of(h, handle::EQ, PTL_EQ_INVALID)?;
        let q = eq_local(&n, h)?;
        // Unless a caller up the stack borrows it.
        if let Ok(mut c) = c.try_borrow_mut() {
            *c = Some(q.clone());
        }
        f(&q)
    })
}

/// Notes that an MD attached to a match entry names queue `eq_h` of our NI (lock held):
/// from now on our operations hold it (see `hold`).
pub fn note_targeted(seg: &Seg, g: &Guard<'_>, eq_h: u32) {
    let Some((idx, gen)) = handle::index_of(eq_h, handle::EQ) else { return };
    if let Some(q) = seg.eq(g, idx) {
        if q.state == LIVE && seg.gen_ok(q.gen, gen) {
            q.targeted = 1;
        }
    }
}

/// Is `h` PTL_EQ_NONE or a live queue of `n`?  (`PTL_EQ_INVALID` otherwise.)
pub fn check_eq_or_none(n: &Ni, h: u32) -> PResult<()> {
    if h == PTL_EQ_NONE {
        return Ok(());
    }
    eq_local(n, h).map(|_| ())
}

/// Deposits the event `ev()` builds in queue `eq_h` of the NI `seg` (lock held): at the
/// queue's head, overwriting its oldest event when it is full; held (not visible yet)
/// while the owner holds the queue.  Events for PTL_EQ_NONE or a freed queue are
/// discarded.  True when deposited.
#[inline]
pub fn push(seg: &Seg, g: &Guard<'_>, eq_h: u32, ev: impl FnOnce() -> Packed) -> bool {
    deposit(seg, g, eq_h, ev, None)
}

/// [`push`], or, for an operation that holds its queues (`own`), the event kept aside
/// for the release of its holds (a queue that is not live discards it all the same).
#[inline(always)]
pub fn deposit(seg: &Seg, g: &Guard<'_>, eq_h: u32, ev: impl FnOnce() -> Packed, own: Option<&mut OwnEvents>) -> bool {
    let Some((idx, gen)) = handle::index_of(eq_h, handle::EQ) else { return false };
    let Some(q) = seg.eq(g, idx) else { return false };
    if q.state != LIVE || !seg.gen_ok(q.gen, gen) {
        return false;
    }
    // Built once, here, for whichever way it goes: a builder called from several places
    // stayed out of line and read each field through a pointer to its captures (SEND_END
    // ~280 -> ~200 instructions with the ring's view copied out below).  Built first,
    // then copied into the slot in one burst of stores: a consumer spinning on the slot
    // takes its lines back between stores, and fields stored one by one as they were
    // computed (built in place) left it more chances: put ping-pong 8 B ~157 -> ~214 ns.
    let e = ev();
    let debug = seg.hdr().debug.load(Ordering::Relaxed) & PTL_DBG_EVENT != 0;
    if let Some(own) = own.filter(|o| o.n < OWN_MAX) {
        if debug {
            debug_event(seg, eq_h, None, &e);
        }
        own.eqs[own.n] = eq_h;
        own.evs[own.n].write(e);
        own.n += 1;
        return true;
    }
    let ready = q.gates == 0;
    let place = (q.gen, q.ring_off, q.ring_len);
    // The ring's view copied out of the cache (two words), not the deposit run in a
    // closure of `with_eq_ring` (called from two places there: kept out of line).
    let ring = seg.with_eq_ring(g, idx, place, |ring| *ring);
    let pos = if let Some(ring) = ring {
        // SAFETY: every deposit into a queue's ring holds the NI lock (this function's
        // guard, or a hold's release under it): producers are serialised.
        let pos = unsafe { ring.push(&e, ready) };
        seg.hint_next_slot(ring.next_slot());
        if ready {
            // SAFETY: the ring lies in the segment, mapped as long as the lock's holder is.
            unsafe { g.wake_on_release(ring.wake()) };
            if q.has_handler != 0 {
                if let Some(h) = seg.handler_ring() {
                    h.push_or_overrun(&HandlerNote { eq: idx, eq_gen: q.gen, ev: Packed { sequence: pos as u32, ..e }.unpack() });
                }
            }
        }
        Some(pos)
    } else {
        None
    };
    if debug {
        debug_event(seg, eq_h, pos, &e);
    }
    pos.is_some()
}

#[cold]
fn debug_event(seg: &Seg, eq_h: u32, pos: Option<u64>, ev: &Packed) {
    eprintln!(
        "portals[{}]: nid {} pid {} eq {:#x}: {} {} mlength {}",
        std::process::id(),
        seg.hdr().nid,
        seg.hdr().pid,
        eq_h,
        crate::status::event_name(ev.kind as u32),
        match pos {
            Some(p) => format!("seq {p}"),
            None => "(the operation's own, held)".to_string(),
        },
        ev.mlength,
    );
}

/// Copies an event to the caller's `ptl_event_t`, `sequence` last (after a Release
/// fence), as the specification asks of SMP implementations.
///
/// # Safety
/// `dst` non-NULL, writable for a `ptl_event_t`.
#[inline]
unsafe fn copy_out(p: &Packed, dst: *mut Event) {
    // SAFETY: EventHead is the prefix of ptl_event_t before `sequence` (types.rs).
    unsafe { (dst as *mut EventHead).write_unaligned(p.head()) };
    std::sync::atomic::fence(Ordering::Release);
    // SAFETY: inside *dst; volatile as the C field is.
    unsafe {
        let d = dst as *mut u8;
        let seq_off = std::mem::offset_of!(Event, sequence);
        std::ptr::write_volatile(d.add(seq_off) as *mut [u8; 4], p.sequence.to_ne_bytes());
        std::ptr::write_bytes(d.add(seq_off + 4), 0, 4);
    }
}

/// SOFTNIC_CHECK: the checker's id space of Portals puts, by MD handle and link (a put
/// is watched when sent, [`crate::ops`], and released here when its SEND_END is taken).
pub const CHECK_SEND: u64 = 0x9073;
/// The same for a get's destination, watched when its reply landed ([`crate::ops`]) and
/// released when its REPLY_END is taken.
pub const CHECK_REPLY: u64 = 0x9074;

/// The timeline: a put from PtlPut to its SEND_END taken from the queue, a get from PtlGet
/// to its REPLY_END taken (asynchronous spans named by [`check_op`], for an MD that logs
/// END events; begun in [`crate::ops`]).
pub const TRACE_PUT: &str = "put in flight";
pub const TRACE_GET: &str = "get in flight";

/// The checker's id of the put of `link` on MD handle `md_h`.
pub fn check_op(md_h: u32, link: u32) -> usize {
    ((md_h as usize) << 32) | link as usize
}

/// The checker and the timeline see an event the program took: SOFTNIC_CHECK releases a
/// put's MD memory (SEND_END) or a get's reply (REPLY_END); the timeline ends that
/// operation's span.  After the copy to the program, given three fields: the event then
/// need not be kept aside across a possible call (checking before the copy cost get_lat
/// 8 B about 15 ns with both off).
#[cold]
#[inline(never)]
fn observe_delivered(kind: u32, md_handle: u32, link: u32) {
    let (id, trace_name) = match kind {
        PTL_EVENT_SEND_END => (CHECK_SEND, TRACE_PUT),
        PTL_EVENT_REPLY_END => (CHECK_REPLY, TRACE_GET),
        _ => return,
    };
    if softnic_fabric::check::enabled() {
        let why = if kind == PTL_EVENT_SEND_END { "its SEND_END taken from the queue" } else { "its REPLY_END taken from the queue" };
        softnic_fabric::check::release(id, check_op(md_handle, link), why);
    }
    if softnic_fabric::trace::enabled() {
        softnic_fabric::trace::async_end("portals", trace_name, check_op(md_handle, link) as u64);
    }
}

/// Returns an event taken from `q` to the caller.
#[inline]
fn deliver(p: &Packed, dropped: bool, dst: *mut Event) -> i32 {
    // SAFETY: the callers checked dst for NULL.
    unsafe { copy_out(p, dst) };
    if softnic_fabric::check::enabled() || softnic_fabric::trace::enabled() {
        observe_delivered(p.kind as u32, p.md_handle, p.link);
    }
    if dropped {
        PTL_EQ_DROPPED
    } else {
        PTL_OK
    }
}

#[no_mangle]
pub unsafe extern "C" fn PtlEQAlloc(ni_handle: u32, count: u64, eq_handler: ptl_eq_handler_t, eq_handle: *mut u32) -> i32 {
    done("PtlEQAlloc", eq_alloc(ni_handle, count, eq_handler, eq_handle))
}

fn eq_alloc(ni_handle: u32, count: u64, handler: ptl_eq_handler_t, out: *mut u32) -> PResult<()> {
    let n = Lib::ni(ni_handle)?;
    if out.is_null() {
        return Err(PTL_SEGV);
    }
    if count == 0 || count > MAX_COUNT {
        return Err(PTL_NO_SPACE);
    }
    // Exactly count events: the next one overwrites the oldest.
    let cap = count as u32;
    let bytes = EvRing::bytes_needed(cap);
    let off = n.arena.lock().unwrap_or_else(|e| e.into_inner()).alloc(bytes).ok_or(PTL_NO_SPACE)?;
    let release = |n: &Ni| n.arena.lock().unwrap_or_else(|e| e.into_inner()).release(off, bytes);
    // SAFETY: a free chunk of the arena, inside our segment, 64-aligned; nobody can reach
    // it before the row below names it.
    let ring = match unsafe { EvRing::init(n.seg.base().add(off), bytes, cap) } {
        Some(r) => r,
        None => {
            release(&n);
            return Err(PTL_NO_SPACE);
        }
    };
    let mut table = n.eqs.write().unwrap_or_else(|e| e.into_inner());
    let h = {
        let g = n.seg.lock();
        let Some(idx) = (0..n.seg.lay.lim.eqs).find(|&i| n.seg.eq(&g, i).is_some_and(|q| q.state == FREE) && table[i as usize].is_none()) else {
            drop(g);
            release(&n);
            return Err(PTL_NO_SPACE);
        };
        let q = n.seg.eq(&g, idx).expect("in range");
        q.count = count as u32;
        q.has_handler = handler.is_some() as u32;
        q.ring_off = off as u64;
        q.ring_len = bytes as u64;
        q.gates = 0;
        q.targeted = 0;
        q.state = LIVE;
        n.seg.state(&g).stats.eq_alloc += 1;
        n.seg.handle(handle::EQ, q.gen, idx)
    };
    let (idx, _) = handle::index_of(h, handle::EQ).expect("an EQ handle");
    table[idx as usize] = Some(Arc::new(EqLocal {
        handle: h,
        idx,
        ring,
        chunk: (off, bytes),
        next: SpinLock::new(Cursor::default()),
        waiters: AtomicU32::new(0),
        ended: AtomicBool::new(false),
        handler,
        ni: n.clone(),
    }));
    drop(table);
    if handler.is_some() {
        start_handler_thread(&n);
    }
    // SAFETY: checked non-NULL above.
    unsafe { out.write_unaligned(h) };
    Ok(())
}

#[no_mangle]
pub extern "C" fn PtlEQFree(eq_handle: u32) -> i32 {
    let r = (|| {
        let (n, idx, _) = Lib::of(eq_handle, handle::EQ, PTL_EQ_INVALID)?;
        let q = {
            let mut table = n.eqs.write().unwrap_or_else(|e| e.into_inner());
            let slot = table.get_mut(idx as usize).ok_or(PTL_EQ_INVALID)?;
            if slot.as_ref().map(|q| q.handle) != Some(eq_handle) {
                return Err(PTL_EQ_INVALID);
            }
            let g = n.seg.lock();
            if let Some(row) = n.seg.eq(&g, idx) {
                row.state = FREE;
                row.gen = row.gen.wrapping_add(1);
            }
            n.seg.state(&g).stats.eq_freed += 1;
            drop(g);
            slot.take().expect("checked above")
        };
        q.end();
        LAST_EQ.with(|c| {
            if let Ok(mut c) = c.try_borrow_mut() {
                *c = None;
            }
        });
        Ok(())
    })();
    done("PtlEQFree", r)
}

#[no_mangle]
pub unsafe extern "C" fn PtlEQGet(eq_handle: u32, event: *mut Event) -> i32 {
    let r: PResult<()> = with_eq(eq_handle, |q| {
        if event.is_null() {
            return Err(PTL_SEGV);
        }
        if q.waiters.load(Ordering::Acquire) > 0 {
            return Err(PTL_EQ_EMPTY);
        }
        match q.try_take_into(event)? {
            Some(rc) => Err(rc),
            None => Err(PTL_EQ_EMPTY),
        }
    });
    ret("PtlEQGet", r.err().unwrap_or(PTL_OK))
}

fn wait_one(eq_handle: u32, event: *mut Event, timeout: Option<Duration>) -> i32 {
    let spun = SPUN.with(|s| s.replace(false));
    with_eq(eq_handle, |q| Ok(wait_on(q, event, timeout, spun))).unwrap_or_else(|e| e)
}

/// The time left before `deadline` (None: no deadline), or PTL_EQ_EMPTY once it passed.
fn time_left(deadline: Option<Instant>) -> Result<Option<Duration>, i32> {
    match deadline {
        None => Ok(None),
        Some(d) => match d.checked_duration_since(Instant::now()) {
            Some(l) if !l.is_zero() => Ok(Some(l)),
            _ => Err(PTL_EQ_EMPTY),
        },
    }
}

/// `spun`: the caller spun on the queue just now (the first wait sleeps at once).
fn wait_on(q: &EqLocal, event: *mut Event, timeout: Option<Duration>, mut spun: bool) -> i32 {
    if event.is_null() {
        return PTL_SEGV;
    }
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        let at = match q.take_into(event) {
            Err(e) => return e,
            Ok(Ok(rc)) => return rc,
            Ok(Err(at)) => at,
        };
        let left = match time_left(deadline) {
            Ok(l) => l,
            Err(e) => return e,
        };
        match q.wait(&at, left, std::mem::take(&mut spun)) {
            Ok(()) | Err(softnic_fabric::Error::Timeout) => {}
            Err(_) => return PTL_FAIL,
        }
    }
}

/// The event at the head of the queue, or the first to arrive while it spins (the
/// wait's first attempt; see `blocking_export_now!`): errors are left to the wait, which
/// checks the same things.
///
/// Decided: the spin is part of this attempt, which makes no cancellation point, so a
/// wait that ends in its spin (a ping-pong's, nearly always) pays none of the blocking
/// call's cancellation bookkeeping (four calls to the C library and the thread's state,
/// ~100 instructions, some of them after the event was seen).  A cancellation requested
/// meanwhile is acted on when the wait goes to sleep, at most SOFTNIC_PTL_SPIN_NS later,
/// or at the caller's next cancellation point if the event came first: what a C
/// library's wait that finds its condition without sleeping does (fabric::cancel).
fn take_now(eq_handle: u32, event: *mut Event) -> Option<i32> {
    if event.is_null() {
        return None;
    }
    with_eq(eq_handle, |q| q.take_or_spin(event)).ok().flatten()
}

softnic_fabric::blocking_export_now! {
    pub unsafe fn PtlEQWait(eq_handle: u32, event: *mut Event) -> i32;
    now { take_now(eq_handle, event) }
    wait {
        // The timeline shows the waits that sleep (an event already there, or one that
        // came while the first attempt spun, is not one).
        let _span = softnic_fabric::trace::span("portals", "PtlEQWait");
        ret("PtlEQWait", wait_one(eq_handle, event, None))
    }
}

softnic_fabric::blocking_export! {
    pub unsafe fn PtlEQWait_timeout(eq_handle: u32, event_out: *mut Event) -> i32 {
        let ms = softnic_fabric::env::get_u64("SOFTNIC_PTL_WAIT_TIMEOUT_MS");
        ret("PtlEQWait_timeout", wait_one(eq_handle, event_out, Some(Duration::from_millis(ms))))
    }
}

softnic_fabric::blocking_export! {
    pub unsafe fn PtlEQPoll(eq_handles: *mut u32, size: i32, timeout: u32, event: *mut Event, which_eq: *mut i32) -> i32 {
        ret("PtlEQPoll", eq_poll(eq_handles, size, timeout, event, which_eq))
    }
}

fn eq_poll(eq_handles: *mut u32, size: i32, timeout: u32, event: *mut Event, which: *mut i32) -> i32 {
    if let Err(e) = Lib::check_init() {
        return e;
    }
    if eq_handles.is_null() || event.is_null() || which.is_null() {
        return PTL_SEGV;
    }
    if size <= 0 {
        return PTL_EQ_INVALID;
    }
    // SAFETY: the caller's array of `size` handles.
    let hs = unsafe { std::slice::from_raw_parts(eq_handles, size as usize) };
    let mut qs = Vec::with_capacity(hs.len());
    for &h in hs {
        match lookup(h) {
            Ok(q) => qs.push(q),
            Err(e) => return e,
        }
    }
    let deadline = (timeout != PTL_TIME_FOREVER).then(|| Instant::now() + Duration::from_millis(timeout as u64));
    // SOFTNIC_FAULTS=timeout: a poll given a time limit runs out at once (events stay queued).
    if deadline.is_some() && softnic_fabric::faults::hit(softnic_fabric::faults::Point::Timeout) {
        return PTL_EQ_EMPTY;
    }
    let mut at = Vec::with_capacity(qs.len());
    loop {
        at.clear();
        for (i, q) in qs.iter().enumerate() {
            match q.take() {
                Err(e) => return e,
                Ok(Ok((ev, dropped))) => {
                    // SAFETY: checked non-NULL above.
                    unsafe { which.write_unaligned(i as i32) };
                    return deliver(&ev, dropped, event);
                }
                Ok(Err(c)) => at.push(c),
            }
        }
        let left = match time_left(deadline) {
            Ok(l) => l,
            Err(e) => return e,
        };
        let refs: Vec<&EqLocal> = qs.iter().map(|q| &**q).collect();
        let _waiting = Waiting::on(&refs);
        let ready = || refs.iter().zip(&at).any(|(q, c)| q.ready_at(c));
        let r = if spin_until(ready, left) {
            Ok(())
        } else {
            softnic_fabric::net::stop_polling_for_events();
            let words: Vec<&softnic_fabric::wait::WaitWords> = refs.iter().map(|q| q.ring.wake()).collect();
            softnic_fabric::cancel::point(|| softnic_fabric::wait::wait_any(&words, ready, left.map(|l| l.saturating_sub(spin_time()))))
        };
        if r == Err(softnic_fabric::Error::Unsupported) {
            // One sleep cannot cover them (too many queues, or an old kernel): short naps,
            // the call's cancellation point.
            softnic_fabric::cancel::point(|| softnic_fabric::cancel::sleep(left.unwrap_or(Duration::MAX).min(Duration::from_millis(1))));
        }
    }
}

/// Starts the EQ-handler thread of `n` once.
fn start_handler_thread(n: &Arc<Ni>) {
    let mut started = n.handler_thread.lock().unwrap_or_else(|e| e.into_inner());
    if *started {
        return;
    }
    let n2 = n.clone();
    if std::thread::Builder::new().name("portals-eq-handlers".into()).spawn(move || handler_loop(n2)).is_ok() {
        *started = true;
    }
}

fn handler_loop(n: Arc<Ni>) {
    let Some(ring) = n.seg.handler_ring() else { return };
    while !n.ended.load(Ordering::Acquire) {
        let Some(note) = ring.pop() else {
            let _ = ring.wait_nonempty(Some(Duration::from_millis(500)));
            continue;
        };
        if note.eq == u32::MAX {
            break; // NIFini's wake-up
        }
        let q = n.eqs.read().unwrap_or_else(|e| e.into_inner()).get(note.eq as usize).and_then(|q| q.clone());
        if let Some(q) = q.filter(|q| n.seg.gen_ok(note.eq_gen, handle::split(q.handle).1)) {
            if let Some(f) = q.handler {
                let mut ev = note.ev;
                // SAFETY: the application's handler, called with a pointer to a private
                // copy of the event, as PtlEQAlloc's contract says.
                unsafe { f(&mut ev) };
            }
        }
    }
}

/// Ends the handler thread of `n` (PtlNIFini).
pub fn stop_handlers(n: &Ni) {
    if let Some(h) = n.seg.handler_ring() {
        let _ = h.push(&HandlerNote { eq: u32::MAX, ..HandlerNote::default() });
    }
}

#[no_mangle]
pub extern "C" fn PtlNIEqDump(ni_handle: u32) -> i32 {
    let r = Lib::ni(ni_handle).map(|n| {
        let t = n.eqs.read().unwrap_or_else(|e| e.into_inner());
        let g = n.seg.lock();
        eprintln!("portals: NI {:#x} (nid {} pid {}) event queues:", n.handle, n.id.nid, n.id.pid);
        for q in t.iter().flatten() {
            if let Some(row) = n.seg.eq(&g, q.idx) {
                let head = q.ring.head();
                eprintln!(
                    "  eq {:#x}: count {} queued {} next sequence {} held back {} handler {}",
                    q.handle,
                    row.count,
                    head.saturating_sub(q.next.lock().pos).min(row.count as u64),
                    head,
                    if row.gates > 0 { "yes" } else { "no" },
                    if q.handler.is_some() { "yes" } else { "no" }
                );
            }
        }
    });
    done("PtlNIEqDump", r)
}
