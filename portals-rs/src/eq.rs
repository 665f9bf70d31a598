//! Event queues: PtlEQAlloc/Free/Get/Wait/Wait_timeout/Poll, the deposit of events
//! ([`push`], used by both sides of every operation), EQ handlers, PtlNIEqDump.
//!
//! **Where events live.**  Each queue is a `fabric::ring` of [`Event`] in the arena of
//! its NI's segment, so whoever runs an operation against the NI (an initiator on this
//! machine, the NI's own progress thread for other machines, the owner for its own
//! initiator-side events) pushes into it, and a push wakes a thread asleep in PtlEQWait
//! (futex on the ring's wait words) without polling.
//!
//! **Sequence numbers and drops.**  Every push happens under the NI's lock, which also
//! hands out the queue's sequence numbers, so ring order is sequence order (and pushes
//! need no compare-exchange: `Ring::push_serialized`; the lock's release, an atomic
//! exchange, is the fence after which the sleepers of the queues it published into are
//! woken, see [`crate::lock`]).  An event
//! that finds the queue holding `count` events (or the ring full) is dropped but still
//! takes its number: the consumer, which knows the number it expects next, returns the
//! next event it gets with PTL_EQ_DROPPED.  The ring is a little larger than `count`
//! so that a consumer between its two ring steps never makes a push fail early.
//!
//! **Consumers** are the owner's threads.  One spin lock per queue serialises the take
//! of an event (`Ring::pop_serialized`) and the check of its number, and the event is
//! copied straight into the caller's `ptl_event_t`; PtlEQGet answers PTL_EQ_EMPTY while a thread
//! waits in PtlEQWait/PtlEQPoll on the queue.  PtlEQFree and PtlNIFini wake waiters by
//! pushing a poison entry (not an event: it carries no sequence number).
//!
//! **Handlers** run in one library thread per process (started by the first queue with
//! a handler), fed by a second ring in the segment: each event deposited in a queue with
//! a handler is also pushed there, and the thread calls the handler with a copy.

use crate::handle;
use crate::ni::{Lib, Ni};
use crate::seg::{Guard, HandlerNote, Seg, FREE, LIVE};
use crate::status::{done, ret, PResult};
use crate::types::*;
use softnic_fabric::ring::Ring;
use softnic_fabric::spin::SpinLock;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Most events a queue may be asked to hold.
pub const MAX_COUNT: u64 = 1 << 20;

/// Free space of the event arena (first fit, merged on free).
pub struct Arena {
    free: Vec<(usize, usize)>,
}

impl Arena {
    pub fn new(off: usize, len: usize) -> Arena {
        Arena { free: vec![(off, len)] }
    }
    fn alloc(&mut self, len: usize) -> Option<usize> {
        let len = len.checked_add(63)? & !63;
        let i = self.free.iter().position(|&(_, l)| l >= len)?;
        let (off, l) = self.free[i];
        if l == len {
            self.free.remove(i);
        } else {
            self.free[i] = (off + len, l - len);
        }
        Some(off)
    }
    fn release(&mut self, off: usize, len: usize) {
        let len = (len + 63) & !63;
        let i = self.free.partition_point(|&(o, _)| o < off);
        self.free.insert(i, (off, len));
        // Merge with the neighbours.
        if i + 1 < self.free.len() && self.free[i].0 + self.free[i].1 == self.free[i + 1].0 {
            self.free[i].1 += self.free[i + 1].1;
            self.free.remove(i + 1);
        }
        if i > 0 && self.free[i - 1].0 + self.free[i - 1].1 == self.free[i].0 {
            self.free[i - 1].1 += self.free[i].1;
            self.free.remove(i);
        }
    }
}

/// The owner's side of a queue.
pub struct EqLocal {
    pub handle: u32,
    pub idx: u32,
    ring: Ring<Packed>,
    chunk: (usize, usize),
    /// The sequence number expected next; its lock serialises consumers (held for a
    /// pop and a compare: a spin lock, one locked instruction).
    next: SpinLock<u32>,
    waiters: AtomicU32,
    ended: AtomicBool,
    pub handler: ptl_eq_handler_t,
    ni: Arc<Ni>,
}

impl Drop for EqLocal {
    fn drop(&mut self) {
        // Nobody uses the ring any more (the row was freed first, so nobody pushes).
        self.ni.arena.lock().unwrap_or_else(|e| e.into_inner()).release(self.chunk.0, self.chunk.1);
    }
}

impl EqLocal {
    /// Wakes and refuses every waiter (PtlEQFree, PtlNIFini).
    pub fn end(&self) {
        self.ended.store(true, Ordering::Release);
        self.push_poison(&Packed { kind: Packed::POISON, ..Packed::default() });
    }

    /// Pushes a poison entry under the NI lock, as every producer does (see [`push`]).
    fn push_poison(&self, p: &Packed) {
        let g = self.ni.seg.lock();
        // SAFETY: the NI lock serialises producers; the ring is ours, mapped while `ni` lives.
        if unsafe { self.ring.push_serialized(p) }.is_ok() {
            if let Some(w) = self.ring.waker() {
                // SAFETY: as above.
                unsafe { g.wake_on_release(w) };
            }
        }
    }

    /// The next event and whether events were dropped before it; `Ok(None)` when empty.
    #[inline(always)]
    fn take(&self) -> PResult<Option<(Packed, bool)>> {
        if self.ended.load(Ordering::Acquire) {
            return Err(PTL_EQ_INVALID);
        }
        let mut next = self.next.lock();
        // SAFETY: every pop of the ring is here, under `next`: consumers are serialised.
        match unsafe { self.ring.pop_serialized() } {
            None => Ok(None),
            Some(p) if p.kind == Packed::POISON => {
                // Leave it for the other waiters.
                self.push_poison(&p);
                Err(PTL_EQ_INVALID)
            }
            Some(p) => {
                // An event is often answered at once (a reply, a ping-pong): start fetching
                // our lock's line, which the event's initiator has just used.
                self.ni.seg.prefetch_lock();
                let dropped = p.sequence != *next;
                *next = p.sequence.wrapping_add(1);
                Ok(Some((p, dropped)))
            }
        }
    }

    /// [`EqLocal::take`] straight into the caller's event: its code, or None when empty.
    #[inline]
    fn take_into(&self, dst: *mut Event) -> PResult<Option<i32>> {
        Ok(self.take()?.map(|(p, dropped)| deliver(&p, dropped, dst)))
    }

    /// Waits until the queue has an entry: spins (a pause between checks, so that an
    /// event is seen within a few dozen nanoseconds) for up to SOFTNIC_PTL_SPIN_NS, then
    /// sleeps on the ring's futex.
    fn wait(&self, timeout: Option<Duration>) -> softnic_fabric::Result<()> {
        let _waiting = Waiting::on(std::slice::from_ref(&self));
        // The queue is empty: the next event lands in the slot the next push fills.  Its
        // first line holds the word `is_empty` reads; keep its second line in the cache
        // too (a prefetch per check: free while nothing changes), so that both are
        // fetched together when the event is written, not one after the other.
        let (slot, len) = self.ring.head_slot();
        let second = (len > 64).then(|| slot.wrapping_add(64));
        let r = if spin_until(
            || {
                if let Some(p) = second {
                    crate::seg::prefetch_read(p);
                }
                !self.ring.is_empty()
            },
            timeout,
        ) {
            Ok(())
        } else {
            let left = timeout.map(|t| t.saturating_sub(spin_time()));
            self.ring.wait_nonempty(left)
        };
        r
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

/// Is `h` PTL_EQ_NONE or a live queue of `n`?  (`PTL_EQ_INVALID` otherwise.)
pub fn check_eq_or_none(n: &Ni, h: u32) -> PResult<()> {
    if h == PTL_EQ_NONE {
        return Ok(());
    }
    eq_local(n, h).map(|_| ())
}

/// Deposits the event `ev()` builds in queue `eq_h` of the NI `seg` (lock held): gives
/// it the queue's next sequence number; drops it (number taken, event not even built)
/// when the queue holds `count` events.  Events for PTL_EQ_NONE or a freed queue are
/// discarded.  True when deposited.
#[inline]
pub fn push(seg: &Seg, g: &Guard<'_>, eq_h: u32, ev: impl Fn() -> Packed) -> bool {
    let Some((idx, gen)) = handle::index_of(eq_h, handle::EQ) else { return false };
    let Some(q) = seg.eq(g, idx) else { return false };
    if q.state != LIVE || !seg.gen_ok(q.gen, gen) {
        return false;
    }
    let seq = q.next_seq;
    q.next_seq = seq.wrapping_add(1);
    let place = (q.gen, q.ring_off, q.ring_len);
    let pushed = seg
        .with_eq_ring(g, idx, place, |ring| {
            let mut room = q.pushed.wrapping_sub(q.taken_hint) < q.count as u64;
            if !room {
                let queued = ring.len() as u64;
                q.taken_hint = q.pushed.wrapping_sub(queued);
                room = queued < q.count as u64;
            }
            if !room {
                return false;
            }
            let e = Packed { sequence: seq as u32, ..ev() };
            // SAFETY: every push into a queue's ring holds the NI lock (this function's
            // guard, EqLocal::end's and take's): producers are serialised.
            if unsafe { ring.push_serialized(&e) }.is_err() {
                return false;
            }
            q.pushed = q.pushed.wrapping_add(1);
            seg.hint_next_slot(ring.next_slot());
            if let Some(w) = ring.waker() {
                // SAFETY: the ring lies in the segment, mapped as long as the lock's holder is.
                unsafe { g.wake_on_release(w) };
            }
            if q.has_handler != 0 {
                if let Some(h) = seg.handler_ring() {
                    h.push_or_overrun(&HandlerNote { eq: idx, eq_gen: q.gen, ev: e.unpack() });
                }
            }
            true
        })
        .unwrap_or(false);
    if seg.hdr().debug.load(Ordering::Relaxed) & PTL_DBG_EVENT != 0 {
        debug_event(seg, eq_h, seq, &ev(), pushed);
    }
    pushed
}

#[cold]
fn debug_event(seg: &Seg, eq_h: u32, seq: u64, ev: &Packed, pushed: bool) {
    eprintln!(
        "portals[{}]: nid {} pid {} eq {:#x}: {} seq {} mlength {}{}",
        std::process::id(),
        seg.hdr().nid,
        seg.hdr().pid,
        eq_h,
        crate::status::event_name(ev.kind as u32),
        seq,
        ev.mlength,
        if pushed { "" } else { " (dropped: queue full)" }
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

/// Returns an event taken from `q` to the caller.
#[inline]
fn deliver(p: &Packed, dropped: bool, dst: *mut Event) -> i32 {
    // SAFETY: the callers checked dst for NULL.
    unsafe { copy_out(p, dst) };
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
    // Room for count events plus consumers between their two ring steps.
    let cap = ((count + 2).next_power_of_two()).max(2) as u32;
    let bytes = Ring::<Packed>::bytes_needed(cap);
    let off = n.arena.lock().unwrap_or_else(|e| e.into_inner()).alloc(bytes).ok_or(PTL_NO_SPACE)?;
    let release = |n: &Ni| n.arena.lock().unwrap_or_else(|e| e.into_inner()).release(off, bytes);
    // SAFETY: a free chunk of the arena, inside our segment, 64-aligned; nobody can reach
    // it before the row below names it.
    let ring = match unsafe { Ring::<Packed>::init(n.seg.base().add(off), bytes, cap) } {
        Ok(r) => r,
        Err(_) => {
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
        q.next_seq = 0;
        q.pushed = 0;
        q.taken_hint = 0;
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
        next: SpinLock::new(0),
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
        match q.take_into(event)? {
            Some(rc) => Err(rc),
            None => Err(PTL_EQ_EMPTY),
        }
    });
    ret("PtlEQGet", r.err().unwrap_or(PTL_OK))
}

fn wait_one(eq_handle: u32, event: *mut Event, timeout: Option<Duration>) -> i32 {
    with_eq(eq_handle, |q| Ok(wait_on(q, event, timeout))).unwrap_or_else(|e| e)
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

fn wait_on(q: &EqLocal, event: *mut Event, timeout: Option<Duration>) -> i32 {
    if event.is_null() {
        return PTL_SEGV;
    }
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        match q.take_into(event) {
            Err(e) => return e,
            Ok(Some(rc)) => return rc,
            Ok(None) => {}
        }
        let left = match time_left(deadline) {
            Ok(l) => l,
            Err(e) => return e,
        };
        match q.wait(left) {
            Ok(()) | Err(softnic_fabric::Error::Timeout) => {}
            Err(_) => return PTL_FAIL,
        }
    }
}

softnic_fabric::blocking_export! {
    pub unsafe fn PtlEQWait(eq_handle: u32, event: *mut Event) -> i32 {
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
    loop {
        for (i, q) in qs.iter().enumerate() {
            match q.take() {
                Err(e) => return e,
                Ok(Some((ev, dropped))) => {
                    // SAFETY: checked non-NULL above.
                    unsafe { which.write_unaligned(i as i32) };
                    return deliver(&ev, dropped, event);
                }
                Ok(None) => {}
            }
        }
        let left = match time_left(deadline) {
            Ok(l) => l,
            Err(e) => return e,
        };
        let refs: Vec<&EqLocal> = qs.iter().map(|q| &**q).collect();
        let _waiting = Waiting::on(&refs);
        let rings: Vec<&Ring<Packed>> = qs.iter().map(|q| &q.ring).collect();
        let r = if spin_until(|| rings.iter().any(|r| !r.is_empty()), left) {
            Ok(())
        } else {
            Ring::wait_any_nonempty(&rings, left.map(|l| l.saturating_sub(spin_time())))
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
                eprintln!(
                    "  eq {:#x}: count {} queued {} next sequence {} handler {}",
                    q.handle,
                    row.count,
                    q.ring.len(),
                    row.next_seq,
                    if q.handler.is_some() { "yes" } else { "no" }
                );
            }
        }
    });
    done("PtlNIEqDump", r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arena_first_fit_and_merge() {
        let mut a = Arena::new(4096, 64 * 10);
        let x = a.alloc(64).unwrap();
        let y = a.alloc(100).unwrap();
        let z = a.alloc(64).unwrap();
        assert_eq!((x, y, z), (4096, 4160, 4288));
        assert!(a.alloc(64 * 8).is_none());
        a.release(y, 100);
        a.release(x, 64);
        assert_eq!(a.alloc(192), Some(4096), "freed neighbours merge");
        a.release(4096, 192);
        a.release(z, 64);
        assert_eq!(a.free, vec![(4096, 640)]);
    }
}
