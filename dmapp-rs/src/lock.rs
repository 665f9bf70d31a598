//! Locks (`dmapp_lock_acquire`, `dmapp_lock_release`; later DMAPP releases, used by Global
//! Arrays' ARMCI port): mutual exclusion across PEs on a lock descriptor that lives in a
//! segment of one PE (the caller allocates it zero-filled in the symmetric heap or the
//! data segment, usually an array of them on every PE).
//!
//! **Algorithm: an MCS queue lock** over the remote AMOs, so it works wherever AMOs do
//! (shared memory on this machine, the network engine across machines), and is fair:
//! waiters get the lock in the order their swap reached the descriptor.
//! - The descriptor's first word is the tail of the waiters' queue: 0 when free, else the
//!   id of the last waiter's queue node.
//! - Every PE has a table of queue nodes in library-owned shared memory (its location is
//!   exchanged at `dmapp_init`): each node has a `locked` word, a `next` word (the
//!   successor's id) and wait words to sleep on.  A node is in use from acquire to release.
//! - acquire: node.locked = 1, next = 0; append ourselves: `prev = tail`, set to our id by
//!   compare-and-swap (first guess 0, then the value each failed attempt returned; a
//!   value that is no lock word is refused before anything is written); if `prev` is 0
//!   the lock is ours, else we write our id into prev's `next`, wake prev, and sleep on
//!   our node until our predecessor clears our `locked`.
//! - release: with no successor recorded, `cswap(tail, me, 0)` frees the lock; if that
//!   fails a successor is between its swap and its write, so we sleep until `next` is
//!   set; then we clear the successor's `locked` and wake it.
//!
//! A waiter sleeps on a futex in its own memory (no polling of the network); while it
//! waits it wakes now and then to deliver its queue (when its calls do that) and to check
//! that its predecessor is alive: if the predecessor has exited, the lock is broken and
//! acquire returns DMAPP_RC_TRANSACTION_ERROR.
//!
//! **Handles** name (node, PE, generation): a release with a handle this PE does not hold
//! (released already, another PE's, forged) is DMAPP_RC_INVALID_PARAM and touches nothing.
//! Any thread of the holding PE may release.  Locks are not recursive: acquiring a lock
//! the same thread holds waits for ever, as on the hardware.
//!
//! **DMAPP_MAX_LOCKS** (environment, default 128, at most 1023) is the number of queue
//! nodes, that is the number of locks one PE can hold or be waiting for at once; one more
//! acquire is DMAPP_RC_NO_SPACE and touches nothing.
//!
//! The node table (layout, claiming a node) is [`crate::lock_table`]; the job holds it.

use crate::job::{live, Job};
use crate::lock_table::{State, Table, Tail, LOCKED, NEXT, NODE, WAKE};
use crate::mutex::lock;
use crate::types::*;
use softnic_fabric::atomic::{AmoOp, AmoWidth};
use softnic_fabric::rma;
use softnic_fabric::{net, sn_debug, sn_warn, Error};
use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// `dmapp_lock_desc_t`: 16 bytes (tail word + a reserved word), zero when free.
pub const DESC_BYTES: u64 = 16;

/// How long a waiter sleeps before it looks around (queue delivery, predecessor alive).
const TICK_DELIVERING: Duration = Duration::from_millis(1);
const TICK: Duration = Duration::from_millis(50);

/// `dmapp_lock_handle_t`: an opaque token (see [`handle_of`]).
pub type LockHandle = *mut c_void;

/// A node's id in lock words: (pe + 1) << 16 | node, never 0.
fn node_id(pe: u32, idx: u32) -> u64 {
    ((pe as u64 + 1) << 16) | idx as u64
}

/// Handle value: node + 1 (16 bits) | pe (32 bits) << 16 | generation (16 bits) << 48.
fn handle_of(pe: u32, idx: u32, gen: u16) -> LockHandle {
    ((idx as u64 + 1) | (pe as u64) << 16 | (gen as u64) << 48) as usize as LockHandle
}

fn decode_handle(h: LockHandle) -> (u32, Option<u32>, u16) {
    let v = h as usize as u64;
    let idx = (v & 0xffff).checked_sub(1).map(|i| i as u32);
    ((v >> 16) as u32, idx, (v >> 48) as u16)
}

// The waits are the table's, but they live here, above the job: between sleeps they
// deliver the queue and watch the PE expected to wake us.
impl Table {
    /// Sleeps on node `idx` until `ready()`; between sleeps delivers the queue and checks
    /// that `watch` (the PE expected to wake us) is alive.
    fn wait(&self, job: &Job, idx: u32, ready: impl Fn() -> bool, watch: Option<u32>) -> Result<(), Rc> {
        loop {
            let tick = if crate::queue::sync_delivery() { TICK_DELIVERING } else { TICK };
            // Our progress thread must serve the peer that will wake us.
            net::stop_polling_for_events();
            match self.wake(idx).wait_until(&ready, Some(tick)) {
                Ok(()) => return Ok(()),
                Err(Error::Timeout) => {}
                Err(e) => {
                    sn_warn!("dmapp_lock", "waiting on a lock node: {}", e);
                    return Err(DMAPP_RC_TRANSACTION_ERROR);
                }
            }
            crate::queue::progress();
            if let Some(pe) = watch {
                if !job.peer(pe).is_ok_and(|p| p.seems_alive()) && !ready() {
                    sn_warn!("dmapp_lock", "PE {} exited while this PE waited on it: the lock is broken", pe);
                    return Err(DMAPP_RC_TRANSACTION_ERROR);
                }
            }
        }
    }
}

/// The (pe, node) a lock word names, if it names a node that exists.
fn decode_id(job: &Job, id: u64) -> Option<(u32, u32)> {
    let pe = ((id >> 16) as u32).checked_sub(1)?;
    let idx = (id & 0xffff) as u32;
    (pe < job.npes && idx < job.pes[pe as usize].lock_nodes && id >> 48 == 0).then_some((pe, idx))
}

/// Writes `v` at `off` of PE `pe`'s node `idx` and wakes whoever sleeps on that node.
fn poke(job: &Job, pe: u32, idx: u32, off: usize, v: u64) -> Result<(), Rc> {
    let r = job.lock_region(pe)?;
    let base = idx as usize * NODE;
    r.store_u64(base + off, v).map_err(crate::rc::from_rma)?;
    r.notify(base + WAKE).map_err(crate::rc::from_rma)
}

fn acquire(job: &Job, desc: *mut c_void, seg: *mut SegDesc, pe: Pe, out: *mut LockHandle) -> Result<(), Rc> {
    if desc.is_null() || seg.is_null() || out.is_null() {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    job.check_pe(pe)?;
    if desc as usize % 8 != 0 {
        return Err(DMAPP_RC_ALIGNMENT_ERROR);
    }
    let r = job.resolve(desc, seg, pe, DESC_BYTES, false)?;
    let t = &job.locks;
    let (idx, gen) = t.claim()?;
    let me = node_id(job.pe, idx);
    t.word(idx, NEXT).store(0, Ordering::Relaxed);
    // Release: set before our id is published in the tail below (a predecessor that
    // finds us clears it, and must not find a stale 0).
    t.word(idx, LOCKED).store(1, Ordering::Release);
    // Join the queue: compare-and-swap from what the tail holds (first guess: free), so
    // that a descriptor holding something else than a lock word is refused untouched.
    let (mut prev, mut prev_node) = (0, None);
    loop {
        let old = match rma::atomic(&r.peer, r.key, r.addr, AmoWidth::I64, AmoOp::CompareSwap { compare: prev, swap: me }, job.pd) {
            Ok(v) => v,
            Err(e) => {
                t.free(idx);
                return Err(crate::rc::from_rma(e));
            }
        };
        if old == prev {
            break;
        }
        prev_node = decode_id(job, old);
        if old != 0 && prev_node.is_none() {
            sn_warn!("dmapp_lock_acquire", "the lock descriptor at {:p} holds {:#x}, not a lock word: was it zero-filled?", desc, old);
            t.free(idx);
            return Err(DMAPP_RC_INVALID_PARAM);
        }
        prev = old;
    }
    let tail = Tail { peer: r.peer.clone(), key: r.key, addr: r.addr };
    if let Some((ppe, pidx)) = prev_node {
        // Failures from here on leave our node out of use: our id is in the queue.
        poke(job, ppe, pidx, NEXT, me)?;
        let locked = t.word(idx, LOCKED);
        // The call's cancellation point.  A cancelled waiter is in the queue: the lock will
        // come to it, and it must pass it on, or every waiter behind it waits for ever.  So
        // the unwind takes the lock (waiting, no longer cancellable) and releases it, as a
        // cancelled pthread_cond_wait takes its mutex back.
        let queued = LeaveQueue { job, idx, gen, tail: Some(tail.clone()) };
        let waited = softnic_fabric::cancel::point(|| t.wait(job, idx, || locked.load(Ordering::Acquire) == 0, Some(ppe)));
        // Only an unwind leaves the queue that way; an error (a dead predecessor) returns.
        std::mem::forget(queued);
        waited?;
    }
    lock(&t.slots)[idx as usize].state = State::Held(tail);
    // SAFETY: non-null (checked).
    unsafe { out.write_unaligned(handle_of(job.pe, idx, gen)) };
    Ok(())
}

/// What a cancellation ending a waiting `dmapp_lock_acquire` does (see there).
struct LeaveQueue<'a> {
    job: &'a Job,
    idx: u32,
    gen: u16,
    tail: Option<Tail>,
}

impl Drop for LeaveQueue<'_> {
    fn drop(&mut self) {
        let (job, idx) = (self.job, self.idx);
        let t = &job.locks;
        let locked = t.word(idx, LOCKED);
        sn_debug!("dmapp_lock_acquire", "cancelled while waiting: taking the lock to pass it on");
        if t.wait(job, idx, || locked.load(Ordering::Acquire) == 0, None).is_err() {
            return;
        }
        lock(&t.slots)[idx as usize].state = State::Held(self.tail.take().expect("set"));
        let _ = release(job, handle_of(job.pe, idx, self.gen));
    }
}

fn release(job: &Job, h: LockHandle) -> Result<(), Rc> {
    let t = &job.locks;
    let (pe, idx, gen) = decode_handle(h);
    let Some(idx) = idx.filter(|&i| pe == job.pe && i < t.count) else { return Err(DMAPP_RC_INVALID_PARAM) };
    let tail = {
        let mut s = lock(&t.slots);
        let slot = &mut s[idx as usize];
        match &slot.state {
            State::Held(tail) if slot.gen == gen => {
                let tail = tail.clone();
                slot.state = State::Busy;
                tail
            }
            _ => return Err(DMAPP_RC_INVALID_PARAM),
        }
    };
    let me = node_id(job.pe, idx);
    let next = t.word(idx, NEXT);
    let result = (|| {
        if next.load(Ordering::Acquire) == 0 {
            let old = rma::atomic(&tail.peer, tail.key, tail.addr, AmoWidth::I64, AmoOp::CompareSwap { compare: me, swap: 0 }, job.pd)
                .map_err(crate::rc::from_rma)?;
            if old == me {
                return Ok(()); // nobody waiting: free
            }
            // A successor swapped itself in and is about to tell us who it is.
            t.wait(job, idx, || next.load(Ordering::Acquire) != 0, None)?;
        }
        let succ = next.load(Ordering::Acquire);
        let Some((spe, sidx)) = decode_id(job, succ) else {
            sn_warn!("dmapp_lock_release", "successor word {:#x} names no lock node", succ);
            return Err(DMAPP_RC_TRANSACTION_ERROR);
        };
        poke(job, spe, sidx, LOCKED, 0)
    })();
    if let Err(rc) = result {
        sn_debug!("dmapp_lock_release", "hand-off failed: code {}", rc);
    }
    t.free(idx);
    result
}

softnic_fabric::blocking_export! {
    /// # Safety
    /// Pointer arguments NULL or valid.
    pub unsafe fn dmapp_lock_acquire(lock_desc: *mut c_void, seg: *mut SegDesc, pe: Pe, _flags: u64, handle: *mut LockHandle) -> Rc {
        let job = match live() {
            Ok(j) => j,
            Err(rc) => return rc,
        };
        let rc = match acquire(&job, lock_desc, seg, pe, handle) {
            Ok(()) => DMAPP_RC_SUCCESS,
            Err(rc) => rc,
        };
        crate::progress::run();
        rc
    }
}

#[no_mangle]
pub extern "C" fn dmapp_lock_release(handle: LockHandle, _flags: u64) -> Rc {
    let job = match live() {
        Ok(j) => j,
        Err(rc) => return rc,
    };
    let rc = match release(&job, handle) {
        Ok(()) => DMAPP_RC_SUCCESS,
        Err(rc) => rc,
    };
    crate::queue::progress();
    rc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_handles_round_trip() {
        assert_ne!(node_id(0, 0), 0);
        assert_eq!(node_id(3, 17), (4 << 16) | 17);
        let h = handle_of(5, 1022, 9);
        assert_eq!(decode_handle(h), (5, Some(1022), 9));
        assert_eq!(decode_handle(std::ptr::null_mut()).1, None);
        assert_ne!(handle_of(0, 0, 1), handle_of(1, 0, 1)); // another PE's handle differs
    }
}
