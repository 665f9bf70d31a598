//! The ring of one event queue, in the arena of its NI's segment: exactly `count` slots,
//! written by whoever deposits an event (under the NI's lock), read by the owner's threads.
//!
//! **Overwrite-oldest.**  Events take consecutive positions (never reused, 64-bit); the
//! event at position `p` lives in slot `p % count`.  A deposit always succeeds: it writes
//! the slot of position `head`, overwriting the event `count` positions older if nobody
//! took it.  A consumer that finds a newer position than the one it expects in its slot
//! has lost events: it jumps to the oldest position still held (`head - count`) and
//! returns the next event with PTL_EQ_DROPPED.  An event's position is its `sequence`.
//!
//! **Slots.**  A slot is a stamp word and the event (128 bytes, two cache lines): the
//! stamp is `position << 1 | ready`.  A writer stores the stamp "not ready" first, then
//! the event, then the final stamp (Release); a reader loads the stamp (Acquire), copies
//! the event, and checks the stamp again: a seqlock, so a reader racing with an overwrite
//! sees it and never returns a torn event.  Neither side uses a locked instruction.
//!
//! **Held events.**  An event may be written "not ready": the consumer stops at it (it
//! and everything after it are not visible yet).  The queue's owner holds back what
//! others deposit while one of its own operations is in flight, then inserts that
//! operation's own events before them ([`EvRing::insert_at`]: held events are invisible,
//! so they can be moved) and makes everything visible ([`EvRing::mark_ready`]): see
//! [`Holds`] and `crate::eq`.

use crate::types::Packed;
use softnic_fabric::wait::WaitWords;
use std::cell::UnsafeCell;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

const MAGIC: u64 = u64::from_le_bytes(*b"snPTLevq");
/// Header bytes (four cache lines), then the slots.
const HDR_LEN: usize = 256;

#[repr(C)]
struct Hdr {
    // Line 0: fixed once formatted.
    magic: u64,
    cap: u32,
    _pad0: [u8; 52],
    // Line 1: the producers' (under the NI lock).
    /// The next position to write.
    head: AtomicU64,
    /// `head % cap`, kept so that a deposit needs no division.
    head_idx: AtomicU32,
    _pad1: [u8; 52],
    // Line 2: sleeping consumers.
    wake: WaitWords,
    _pad2: [u8; 56],
    _pad3: [u8; 64],
}

#[repr(C)]
struct Slot {
    stamp: AtomicU64,
    ev: UnsafeCell<Packed>,
}

const _: () = assert!(std::mem::size_of::<Hdr>() == HDR_LEN && std::mem::size_of::<Slot>() == 128);

/// A view of a ring (ours or a peer's, mapped here), its capacity read once and checked
/// against the mapping when attached.
#[derive(Clone, Copy)]
pub struct EvRing {
    base: *mut u8,
    cap: u32,
}

// SAFETY: shared memory accessed through atomics and the protocols above.
unsafe impl Send for EvRing {}
unsafe impl Sync for EvRing {}

/// Where a consumer is: the position it expects next, its slot, and whether events were
/// lost since the last one it returned.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cursor {
    pub pos: u64,
    pub idx: u32,
    pub dropped: bool,
}

impl EvRing {
    pub fn bytes_needed(cap: u32) -> usize {
        HDR_LEN + cap as usize * std::mem::size_of::<Slot>()
    }

    /// Formats `len` bytes at `mem` as a ring of `cap` slots (the memory may hold an old
    /// ring: every stamp is reset).
    ///
    /// # Safety
    /// `mem` 64-aligned, valid for `len` bytes, not in use by anyone else.
    pub unsafe fn init(mem: *mut u8, len: usize, cap: u32) -> Option<EvRing> {
        if cap == 0 || Self::bytes_needed(cap) > len || !(mem as usize).is_multiple_of(64) {
            return None;
        }
        let r = EvRing { base: mem, cap };
        // SAFETY: the caller's memory, ours alone; the header fits (checked above).
        let h = unsafe { &mut *(mem as *mut Hdr) };
        h.cap = cap;
        h.head.store(0, Ordering::Relaxed);
        h.head_idx.store(0, Ordering::Relaxed);
        h.wake = WaitWords::new();
        for i in 0..cap {
            // A zero stamp is "position 0, not ready": empty for every slot's first lap.
            r.slot(i).stamp.store(0, Ordering::Relaxed);
        }
        // Release: whoever sees the magic sees the formatted ring.
        fence(Ordering::Release);
        h.magic = MAGIC;
        Some(r)
    }

    /// A view of the ring formatted at `mem`; None unless it fits `len` bytes.
    ///
    /// # Safety
    /// `mem` 64-aligned and valid for `len` bytes for the life of the view.
    pub unsafe fn attach(mem: *mut u8, len: usize) -> Option<EvRing> {
        if len < HDR_LEN || !(mem as usize).is_multiple_of(64) {
            return None;
        }
        // SAFETY: the header is inside the caller's memory; volatile: another process wrote it.
        let (magic, cap) = unsafe { (std::ptr::read_volatile(&(*(mem as *const Hdr)).magic), std::ptr::read_volatile(&(*(mem as *const Hdr)).cap)) };
        fence(Ordering::Acquire);
        (magic == MAGIC && cap > 0 && Self::bytes_needed(cap) <= len).then_some(EvRing { base: mem, cap })
    }

    #[inline(always)]
    fn hdr(&self) -> &Hdr {
        // SAFETY: the header lies at the start of the validated memory.
        unsafe { &*(self.base as *const Hdr) }
    }

    #[inline(always)]
    fn slot(&self, idx: u32) -> &Slot {
        debug_assert!(idx < self.cap);
        // SAFETY: idx < cap (callers reduce it), and the memory covers cap slots.
        unsafe { &*(self.base.add(HDR_LEN) as *const Slot).add(idx as usize) }
    }

    /// The slot of position `pos`.  A capacity that is a power of two (most programs ask
    /// for one) takes a mask, not a division (10-40 cycles, on every event read).
    #[inline]
    fn idx_of(&self, pos: u64) -> u32 {
        let cap = self.cap as u64;
        (if cap.is_power_of_two() { pos & (cap - 1) } else { pos % cap }) as u32
    }

    pub fn cap(&self) -> u32 {
        self.cap
    }

    /// The words sleeping consumers wait on.
    #[inline]
    pub fn wake(&self) -> &WaitWords {
        &self.hdr().wake
    }

    /// The next position a deposit will take.
    #[inline]
    pub fn head(&self) -> u64 {
        // Acquire: pairs with the producers' stores (see `push`).
        self.hdr().head.load(Ordering::Acquire)
    }

    /// The slot the next deposit fills, as a prefetch hint.
    #[inline]
    pub fn next_slot(&self) -> *const u8 {
        let i = self.hdr().head_idx.load(Ordering::Relaxed);
        self.slot(if i < self.cap { i } else { 0 }) as *const Slot as *const u8
    }

    /// The slot a consumer at `c` reads next, as a prefetch hint.
    #[inline]
    pub fn slot_at(&self, c: &Cursor) -> *const u8 {
        self.slot(c.idx) as *const Slot as *const u8
    }

    /// Writes `ev` as position `pos` into slot `idx`.
    ///
    /// # Safety
    /// The caller is the only producer (the NI lock).
    #[inline(always)]
    unsafe fn write(&self, idx: u32, pos: u64, ev: &Packed, ready: bool) {
        let s = self.slot(idx);
        s.stamp.store(pos << 1, Ordering::Relaxed);
        // Release fence: the "not ready" stamp (and the head before it) become visible
        // before any byte of the new event (a compiler barrier on x86-64).
        fence(Ordering::Release);
        // SAFETY: inside the slot; the only writer (caller's contract); readers detect the
        // race through the stamp.  A plain copy (a few wide stores; a volatile write of
        // the struct is one store per field): the Release store below orders it.
        unsafe { std::ptr::copy_nonoverlapping(ev, s.ev.get(), 1) };
        // Release: publishes the event; pairs with the consumer's Acquire load.
        s.stamp.store(pos << 1 | ready as u64, Ordering::Release);
    }

    /// Deposits `ev` (visible at once when `ready`, else held); returns its position.
    ///
    /// # Safety
    /// The caller serialises every producer of this ring (the NI lock).
    #[inline(always)]
    pub unsafe fn push(&self, ev: &Packed, ready: bool) -> u64 {
        let h = self.hdr();
        // Relaxed: producers are ordered by the caller's lock.
        let pos = h.head.load(Ordering::Relaxed);
        let mut idx = h.head_idx.load(Ordering::Relaxed);
        if idx >= self.cap {
            idx = self.idx_of(pos);
        }
        h.head.store(pos + 1, Ordering::Relaxed);
        h.head_idx.store(if idx + 1 == self.cap { 0 } else { idx + 1 }, Ordering::Relaxed);
        // SAFETY: the caller's contract.
        unsafe { self.write(idx, pos, ev, ready) };
        pos
    }

    /// Inserts `evs` at position `at` (<= head): the events at `at..head` move `evs.len()`
    /// positions on, and the oldest fall out when the ring overflows.  Everything from `at`
    /// on is left held; the caller makes it visible with [`EvRing::mark_ready`].
    ///
    /// # Safety
    /// As for `push`; and no event at or after `at` is visible (the consumer never reads
    /// the slots of positions it cannot see, so they may move).
    pub unsafe fn insert_at(&self, at: u64, evs: &[Packed]) {
        let k = evs.len() as u64;
        if k == 0 {
            return;
        }
        let h = self.hdr();
        let head = h.head.load(Ordering::Relaxed);
        let at = at.min(head);
        let cap = self.cap as u64;
        let new_head = head + k;
        // Positions below `lost` are not held once the ring is `new_head`.
        let lost = new_head.saturating_sub(cap);
        // The events to move (those still in the ring and not lost after the move), read
        // first: a destination slot may hold a source not moved yet.
        let from = at.max(head.saturating_sub(cap)).max(lost.saturating_sub(k));
        let mut idx = self.idx_of(from);
        let moved: Vec<Packed> = (from..head)
            .map(|_| {
                // SAFETY: inside the ring; the only producer, so the slot is stable.
                let e = unsafe { std::ptr::read_volatile(self.slot(idx).ev.get()) };
                idx = self.next_idx(idx);
                e
            })
            .collect();
        h.head.store(new_head, Ordering::Relaxed);
        h.head_idx.store(self.idx_of(new_head), Ordering::Relaxed);
        // The new order from `at` on: `evs`, then the moved events.
        let mut d = at;
        let mut idx = self.idx_of(at);
        for ev in evs.iter().chain(&moved) {
            if d >= lost {
                // SAFETY: the caller's contract.
                unsafe { self.write(idx, d, ev, false) };
            }
            d += 1;
            idx = self.next_idx(idx);
        }
    }

    #[inline(always)]
    fn next_idx(&self, idx: u32) -> u32 {
        if idx + 1 == self.cap {
            0
        } else {
            idx + 1
        }
    }

    /// Makes the held events at positions `from..to` visible (those still in the ring),
    /// calling `f` with each (and its position), in order.
    ///
    /// # Safety
    /// As for `push`.
    pub unsafe fn mark_ready(&self, from: u64, to: u64, mut f: impl FnMut(u64, &Packed)) {
        let head = self.hdr().head.load(Ordering::Relaxed);
        let to = to.min(head);
        let from = from.max(head.saturating_sub(self.cap as u64));
        let mut idx = self.idx_of(from);
        for p in from..to {
            let s = self.slot(idx);
            if s.stamp.load(Ordering::Relaxed) == p << 1 {
                // SAFETY: inside the slot; the only producer.
                f(p, &unsafe { std::ptr::read_volatile(s.ev.get()) });
                // Release: as in `write`.
                s.stamp.store(p << 1 | 1, Ordering::Release);
            }
            idx = self.next_idx(idx);
        }
    }

    /// The next event for a consumer at `c` (and whether events were lost before it), its
    /// `sequence` set to its position; None when there is none visible yet.
    ///
    /// Consumers must be serialised by the caller (one cursor).
    #[inline(always)]
    pub fn take(&self, c: &mut Cursor) -> Option<(Packed, bool)> {
        loop {
            let s = self.slot(c.idx);
            // Acquire: pairs with the writer's final Release store.
            let st = s.stamp.load(Ordering::Acquire);
            if st == (c.pos << 1 | 1) {
                // SAFETY: inside the slot; a concurrent overwrite is detected below.  A
                // plain copy (wide loads; every bit pattern is a valid Packed), ordered
                // before the second stamp load by the fence.
                let mut ev = unsafe { std::ptr::read(s.ev.get()) };
                // Acquire fence: the copy above completes before the stamp is read again.
                fence(Ordering::Acquire);
                if s.stamp.load(Ordering::Relaxed) != st {
                    continue;
                }
                ev.sequence = c.pos as u32;
                let dropped = std::mem::take(&mut c.dropped);
                c.pos += 1;
                c.idx = if c.idx + 1 == self.cap { 0 } else { c.idx + 1 };
                return Some((ev, dropped));
            }
            let there = st >> 1;
            if there <= c.pos {
                // This lap's event is not written yet, or held.
                return None;
            }
            // Overwritten: the oldest event still held is `head - cap` (and at least the one
            // after the position found in the slot, which lies a lap or more ahead).
            let oldest = self.head().max(there + 1).saturating_sub(self.cap as u64);
            c.pos = oldest.max(c.pos + 1);
            c.idx = self.idx_of(c.pos);
            c.dropped = true;
        }
    }

    /// Would `take` at `c` find something (an event, or a loss)?  For waiters.
    #[inline(always)]
    pub fn ready_at(&self, c: &Cursor) -> bool {
        // Acquire: as in `take`.
        let st = self.slot(c.idx).stamp.load(Ordering::Acquire);
        st == (c.pos << 1 | 1) || st >> 1 > c.pos
    }
}

/// The holds open on one ring (its owner's, process-local; used under the NI lock): where
/// each began, in position order (a later hold never lies before an earlier one: it
/// begins at the head, and an insertion moves every hold after it).  Operations that
/// begin while nothing was deposited in between share a place.
#[derive(Default)]
pub struct Holds {
    next_id: u64,
    list: Vec<Place>,
}

struct Place {
    id: u64,
    pos: u64,
    ops: u32,
}

impl Holds {
    /// Opens a hold at `ring`'s head (or joins the one that begins there); its id.
    pub fn open(&mut self, ring: &EvRing) -> u64 {
        let head = ring.head();
        match self.list.last_mut() {
            Some(p) if p.pos == head => {
                p.ops += 1;
                p.id
            }
            _ => {
                self.next_id += 1;
                self.list.push(Place { id: self.next_id, pos: head, ops: 1 });
                self.next_id
            }
        }
    }

    /// Ends hold `id` if nothing would come after its events: it is the only hold and
    /// nothing was deposited since it began (the common case: its events then go in as
    /// any deposit does).  True when it ended.
    pub fn end_if_clear(&mut self, ring: &EvRing, id: u64) -> bool {
        let clear = matches!(&self.list[..], [p] if p.id == id && p.ops == 1 && p.pos == ring.head());
        if clear {
            self.list.clear();
        }
        clear
    }

    /// Ends hold `id`: `own` go in where it began (before what was held since), and what
    /// no earlier hold still covers becomes visible (`f` sees each such event).  True
    /// when something became visible.
    ///
    /// # Safety
    /// As for [`EvRing::push`]; `ring` is the one the holds were opened on.
    pub unsafe fn release(&mut self, ring: &EvRing, id: u64, own: &[Packed], mut f: impl FnMut(u64, &Packed)) -> bool {
        let Some(i) = self.list.iter().position(|p| p.id == id) else { return false };
        if self.list.len() == 1 && self.list[0].ops == 1 && self.list[0].pos == ring.head() {
            // The common case: the only hold, and nothing came meanwhile.  The events go in
            // as any deposit does, visible at once.
            self.list.clear();
            for e in own {
                // SAFETY: the caller's contract.
                let pos = unsafe { ring.push(e, true) };
                f(pos, e);
            }
            return !own.is_empty();
        }
        let front = self.list[0].pos;
        let at = self.list[i].pos;
        let k = own.len() as u64;
        // SAFETY: the caller's contract; nothing at or after `at` is visible (held).
        unsafe { ring.insert_at(at, own) };
        for p in self.list.iter_mut() {
            if p.pos > at {
                p.pos += k;
            }
        }
        self.list[i].ops -= 1;
        if self.list[i].ops == 0 {
            self.list.remove(i);
        } else {
            self.list[i].pos += k;
        }
        let visible_to = self.list.first().map_or_else(|| ring.head(), |p| p.pos);
        if visible_to <= front {
            return false;
        }
        // SAFETY: the caller's contract.
        unsafe { ring.mark_ready(front, visible_to, f) };
        true
    }

    /// Forgets every hold (the queue was freed and its row reused).
    pub fn clear(&mut self) {
        self.list.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(cap: u32) -> (Vec<u64>, EvRing) {
        let mut mem = vec![0u64; EvRing::bytes_needed(cap) / 8 + 16];
        let p = ((mem.as_mut_ptr() as usize + 63) & !63) as *mut u8;
        // SAFETY: inside `mem`, 64-aligned, exclusive.
        let r = unsafe { EvRing::init(p, EvRing::bytes_needed(cap), cap) }.unwrap();
        (mem, r)
    }

    fn ev(n: u64) -> Packed {
        Packed { hdr_data: n, ..Packed::default() }
    }

    fn drain(r: &EvRing, c: &mut Cursor) -> Vec<(u64, u32, bool)> {
        std::iter::from_fn(|| r.take(c).map(|(e, d)| (e.hdr_data, e.sequence, d))).collect()
    }

    #[test]
    fn overwrites_the_oldest_and_reports_the_loss() {
        let (_m, r) = ring(4);
        let mut c = Cursor::default();
        assert!(r.take(&mut c).is_none() && !r.ready_at(&c));
        for i in 0..3 {
            // SAFETY: the only producer.
            unsafe { r.push(&ev(i), true) };
        }
        assert_eq!(drain(&r, &mut c), vec![(0, 0, false), (1, 1, false), (2, 2, false)]);
        for i in 3..13 {
            // SAFETY: as above.
            unsafe { r.push(&ev(i), true) };
        }
        assert!(r.ready_at(&c));
        // 3..8 were overwritten: the four newest remain, the first with the loss.
        assert_eq!(drain(&r, &mut c), vec![(9, 9, true), (10, 10, false), (11, 11, false), (12, 12, false)]);
        // SAFETY: as above.
        unsafe { r.push(&ev(13), true) };
        assert_eq!(drain(&r, &mut c), vec![(13, 13, false)]);
    }

    #[test]
    fn positions_wrap_alike_for_every_capacity() {
        // A power of two takes a mask, any other capacity a division (idx_of): both keep
        // the newest `cap` events in order across many wraps.
        for cap in [1, 3, 4, 5, 8, 12] {
            let (_m, r) = ring(cap);
            let mut c = Cursor::default();
            for i in 0..(5 * cap as u64 + 2) {
                // SAFETY: the only producer.
                unsafe { r.push(&ev(i), true) };
                assert_eq!(drain(&r, &mut c), vec![(i, i as u32, false)], "cap {cap}");
            }
        }
    }

    #[test]
    fn held_events_wait_and_inserted_ones_go_first() {
        let (_m, r) = ring(8);
        let mut c = Cursor::default();
        // SAFETY: the only producer.
        unsafe {
            r.push(&ev(0), true);
            r.push(&ev(100), false); // a reaction, held
            r.push(&ev(101), false);
        }
        assert_eq!(drain(&r, &mut c), vec![(0, 0, false)]);
        assert!(!r.ready_at(&c));
        // SAFETY: as above.
        unsafe {
            r.insert_at(1, &[ev(1), ev(2)]);
            r.mark_ready(1, r.head(), |_, _| {});
        }
        assert_eq!(drain(&r, &mut c), vec![(1, 1, false), (2, 2, false), (100, 3, false), (101, 4, false)]);
    }

    #[test]
    fn an_insert_into_a_full_ring_loses_the_oldest() {
        let (_m, r) = ring(4);
        let mut c = Cursor::default();
        // SAFETY: the only producer.
        unsafe {
            r.push(&ev(0), true);
            for i in 0..4 {
                r.push(&ev(100 + i), false);
            }
            // Held: 100..104 at positions 1..5 (position 0 lost already).
            r.insert_at(1, &[ev(1), ev(2)]);
            r.mark_ready(1, r.head(), |_, _| {});
        }
        // Seven events in order 0, 1, 2, 100, 101, 102, 103: the last four remain.
        assert_eq!(drain(&r, &mut c), vec![(100, 3, true), (101, 4, false), (102, 5, false), (103, 6, false)]);
    }

    #[test]
    fn overlapping_holds_release_in_any_order() {
        let (_m, r) = ring(16);
        let mut c = Cursor::default();
        let mut h = Holds::default();
        // SAFETY: the only producer.
        unsafe {
            let a = h.open(&r);
            r.push(&ev(100), false); // held by a
            let b = h.open(&r);
            let b2 = h.open(&r); // shares b's place
            r.push(&ev(200), false); // held by a and b
            // b ends first: its events go in at its place, but a still covers them.
            assert!(!h.release(&r, b, &[ev(1)], |_, _| {}));
            assert!(r.take(&mut c).is_none());
            // a ends: its events first, then everything up to b2's place is visible.
            let mut seen = Vec::new();
            assert!(h.release(&r, a, &[ev(2), ev(3)], |p, e| seen.push((p, e.hdr_data))));
            assert_eq!(seen, vec![(0, 2), (1, 3), (2, 100), (3, 1)]);
            assert!(h.release(&r, b2, &[ev(4)], |_, _| {}));
        }
        assert_eq!(drain(&r, &mut c), vec![(2, 0, false), (3, 1, false), (100, 2, false), (1, 3, false), (4, 4, false), (200, 5, false)]);
    }

    #[test]
    fn a_reader_racing_with_overwrites_never_returns_a_torn_event() {
        let (_m, r) = ring(2);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (r2, s2) = (r, stop.clone());
        let th = std::thread::spawn(move || {
            let mut i = 0u64;
            while !s2.load(Ordering::Relaxed) {
                let e = Packed { hdr_data: i, match_bits: i, offset: i, md_user_ptr: i, ..Packed::default() };
                // SAFETY: the only producer.
                unsafe { r2.push(&e, true) };
                i += 1;
            }
        });
        let mut c = Cursor::default();
        let mut last = None;
        for _ in 0..200_000 {
            if let Some((e, _)) = r.take(&mut c) {
                assert!(e.match_bits == e.hdr_data && e.offset == e.hdr_data && e.md_user_ptr == e.hdr_data, "torn event");
                assert_eq!(e.sequence as u64, e.hdr_data);
                assert!(last.is_none_or(|l| e.hdr_data > l));
                last = Some(e.hdr_data);
            }
        }
        stop.store(true, Ordering::Relaxed);
        th.join().unwrap();
    }
}
