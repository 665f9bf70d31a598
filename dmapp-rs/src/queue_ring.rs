//! This PE's receive queue (the message queues of [`crate::queue`], where the design is):
//! the ring peers append entries to, the attachment, and the delivery of what the ring
//! holds to the attached callback.  The job holds one, made at `dmapp_init`.

use crate::mutex::lock;
use crate::types::*;
use softnic_fabric::mem::{self, RingLoc, SharedMem};
use softnic_fabric::ring::{Pod, Ring};
use softnic_fabric::{net, sn_debug, sn_warn, Error};
use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, TryLockError};
use std::thread::{JoinHandle, ThreadId};
use std::time::Duration;

/// Payload words of one entry: the largest put any queue takes.
pub const ENTRY_WORDS: usize = DMAPP_QUEUE_MAX_NELEMS as usize;

/// One message in a receive ring.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Entry {
    /// Sender PE (low 32 bits) and payload length in bytes (high 32 bits).
    pub head: u64,
    pub data: [u64; ENTRY_WORDS],
}
// SAFETY: repr(C), integers only; every bit pattern is a valid Entry.
unsafe impl Pod for Entry {}

/// `int (*queue_cb)(void *context, void *data, uint32_t len, dmapp_pe_t rank)`.
pub type QueueCb = extern "C" fn(context: *mut c_void, data: *mut c_void, len: u32, rank: Pe) -> c_int;

/// The delivery thread of an asynchronous attachment (or of finalize).
pub struct Worker {
    pub stop: Arc<AtomicBool>,
    pub thread: JoinHandle<()>,
    pub id: ThreadId,
}

pub struct Attachment {
    /// Generation of the current (or last) attachment; the handle carries it.
    pub gen: u32,
    /// The callback and its context (an address, never dereferenced here); None: detached.
    pub cb: Option<(QueueCb, usize)>,
    pub worker: Option<Worker>,
}

/// This PE's receive queue.
pub struct Queue {
    /// Owns the ring's memory (kept mapped for the life of the process, like the heap).
    _mem: SharedMem,
    pub ring: Ring<Entry>,
    pub loc: RingLoc,
    /// Largest put this queue takes, in QW (the settled queue_nelems attribute).
    pub nelems: u32,
    /// The queue_flags attribute asked for asynchronous progress.
    pub async_attr: bool,
    /// Serialises deliveries: one callback at a time, entries in ring order.
    pub delivering: Mutex<()>,
    pub att: Mutex<Attachment>,
}

thread_local! {
    /// This thread is inside a queue callback.
    pub static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

impl Queue {
    /// A ring of `depth` entries (a settled power of two) in fresh shared memory.
    pub fn new(depth: u32, nelems: u32, flags: u64) -> Result<Queue, Error> {
        let bytes = Ring::<Entry>::bytes_needed(depth);
        if bytes == 0 {
            return Err(Error::InvalidArg);
        }
        let m = mem::alloc_shared(bytes)?;
        // SAFETY: fresh, exclusively ours, 64-aligned (page-aligned mapping), `bytes` long.
        let ring = unsafe { Ring::<Entry>::init(m.as_ptr(), m.len(), depth)? };
        let loc = m.ring_loc(0, bytes)?;
        Ok(Queue {
            _mem: m,
            ring,
            loc,
            nelems,
            async_attr: flags & DMAPP_QUEUE_ASYNC_PROGRESS != 0,
            delivering: Mutex::new(()),
            att: Mutex::new(Attachment { gen: 0, cb: None, worker: None }),
        })
    }

    /// Delivers what the ring holds (at most one ring's worth, so a fast sender cannot
    /// keep the caller here), one callback at a time.  `wait_turn`: wait for a delivery
    /// running on another thread to end instead of leaving the work to it.  With
    /// `discard`, entries that find no callback are dropped (finalize).  Returns the number
    /// of entries taken.
    pub fn deliver(&self, wait_turn: bool, discard: bool) -> usize {
        let _turn = match self.delivering.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) if wait_turn && !IN_CALLBACK.with(|c| c.get()) => lock(&self.delivering),
            Err(TryLockError::WouldBlock) => return 0,
        };
        let mut taken = 0;
        while taken < self.ring.capacity() as usize {
            // Read per entry: a callback may detach (then the rest stays queued).
            let cb = lock(&self.att).cb;
            if cb.is_none() && !discard {
                break;
            }
            let Some(mut e) = self.ring.pop() else { break };
            taken += 1;
            let from = e.head as u32 as Pe;
            let len = ((e.head >> 32) as usize).min(ENTRY_WORDS * 8) as u32;
            match cb {
                Some((f, ctx)) => {
                    IN_CALLBACK.with(|c| c.set(true));
                    let rc = f(ctx as *mut c_void, e.data.as_mut_ptr() as *mut c_void, len, from);
                    IN_CALLBACK.with(|c| c.set(false));
                    if rc != 0 {
                        sn_debug!("dmapp queue", "callback returned {} for a message from PE {}", rc, from);
                    }
                }
                None => sn_warn!("dmapp_finalize", "a {}-byte queue message from PE {} was never delivered (no callback attached)", len, from),
            }
        }
        taken
    }

    /// Sleeps until the ring has an entry, `stop` is set, or `timeout` passes.
    pub fn sleep(&self, stop: &AtomicBool, timeout: Duration) {
        let Some(w) = self.ring.waker() else {
            softnic_fabric::cancel::sleep(timeout);
            return;
        };
        // The network engine's lease ends: our progress thread must serve pushes meanwhile.
        net::stop_polling_for_events();
        let _ = w.wait_until(|| stop.load(Ordering::Acquire) || !self.ring.is_empty(), Some(timeout));
    }

    pub fn wake(&self) {
        if let Some(w) = self.ring.waker() {
            w.notify();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_carries_the_largest_put() {
        assert_eq!(std::mem::size_of::<Entry>(), 8 + DMAPP_QUEUE_MAX_NELEMS as usize * 8);
        assert!(std::mem::size_of::<Entry>() + 64 < net::MAX_DATA);
    }
}
