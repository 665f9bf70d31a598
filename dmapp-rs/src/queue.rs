//! Message queues (`dmapp_queue_attach`, `_detach`, `_put`; later DMAPP releases, used by
//! Global Arrays' ARMCI/ComEx ports and UPC++): a PE sends a small message to another PE's
//! queue, and the target's callback receives it.
//!
//! **Where messages wait.**  Every PE makes one receive queue at `dmapp_init`
//! ([`crate::queue_ring`]): a fabric `Ring` of `queue_depth` fixed-size entries in
//! library-owned shared memory, whose location the init allgather tells every PE.  A put
//! appends one entry (sender, length, payload) with [`rma::post_event`]: written in place
//! into the target's ring on this machine, pushed by the target's network progress thread
//! on another.  A sender's puts complete one after the other and the ring is FIFO, so the
//! target sees each sender's messages in the order they were put.
//!
//! **Who delivers.**  Nothing runs the callback behind the target's back unless it asked:
//! - without `DMAPP_QUEUE_ASYNC_PROGRESS` the target's own calls into DMAPP deliver (the
//!   calls that run the progress callbacks, see [`crate::progress`], plus
//!   `dmapp_queue_put`, the completion tests and a lock wait), on the calling thread;
//! - with it (attach flags or the `queue_flags` attribute), a library thread sleeps on the
//!   ring and delivers as messages arrive; then only that thread runs the callback.
//!
//! Deliveries are serialised (one callback at a time, in ring order).  The payload is a
//! copy, valid during the callback.  Messages that arrive while no callback is attached
//! wait in the ring and are delivered after the next attach.
//!
//! **Flow control.**  A put to a full queue waits until the target has taken an entry,
//! delivering the sender's own queue meanwhile (two PEs filling each other's queues both
//! make progress) and sleeping between tries (20 us doubling to 1 ms).  It returns
//! DMAPP_RC_NO_SPACE instead of waiting only inside a queue callback, where waiting
//! could never end (the target may be in its own callback, putting to us; or the target
//! is this PE, whose deliveries wait for this callback).  A target that has exited gives
//! DMAPP_RC_TRANSACTION_ERROR.
//!
//! `dmapp_finalize` keeps the queue draining (a library thread; to the callback if one is
//! attached, else discarding with a warning) while it waits for the other PEs, so that a
//! PE still blocked on our full queue reaches its own finalize.

use crate::job::{live, Job};
use crate::mutex::lock;
use crate::queue_ring::{Entry, Queue, QueueCb, Worker, ENTRY_WORDS, IN_CALLBACK};
use crate::types::*;
use softnic_fabric::{rma, sn_debug, sn_warn, Error};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// `dmapp_queue_handle_t`: an opaque token naming one attachment (see [`handle_of`]).
pub type QueueHandle = *mut c_void;

/// Handles carry this tag above the attachment's generation, so that small integers and
/// other DMAPP handles are not mistaken for one.
const HANDLE_TAG: u64 = 0x51 << 56;

fn handle_of(gen: u32) -> QueueHandle {
    (HANDLE_TAG | gen as u64) as usize as QueueHandle
}

/// True while a callback is attached that the program's own DMAPP calls deliver to (no
/// asynchronous progress): read without a lock by [`progress`] on every blocking call.
static SYNC_DELIVERY: AtomicBool = AtomicBool::new(false);

/// Starts a library thread that delivers until its stop flag is set.
fn spawn_worker(job: &'static Job, discard: bool) -> std::io::Result<Worker> {
    let stop = Arc::new(AtomicBool::new(false));
    let (j, s) = (job, stop.clone());
    let thread = std::thread::Builder::new().name("dmapp-queue".into()).spawn(move || {
        while !s.load(Ordering::Acquire) {
            j.queue.sleep(&s, Duration::from_millis(500));
            if s.load(Ordering::Acquire) {
                break;
            }
            j.queue.deliver(true, discard);
        }
    })?;
    let id = thread.thread().id();
    Ok(Worker { stop, thread, id })
}

/// Stops a worker; joins it unless the caller is that worker (a callback detaching).
fn stop_worker(q: &Queue, w: Worker) {
    w.stop.store(true, Ordering::Release);
    q.wake();
    if std::thread::current().id() != w.id {
        let _ = w.thread.join();
    }
}

/// Delivery from the program's own calls into DMAPP (called by [`crate::progress::run`]
/// and the queue and lock calls): nothing unless a callback is attached without
/// asynchronous progress, and never from inside a callback.
pub fn progress() {
    if !SYNC_DELIVERY.load(Ordering::Acquire) || IN_CALLBACK.with(|c| c.get()) {
        return;
    }
    if let Ok(job) = live() {
        job.queue.deliver(false, false);
    }
}

/// True while some thread will deliver this PE's queue: the program's calls (an attached
/// callback without asynchronous progress) or a library thread.  Lock waits use it to
/// decide how often to call [`progress`].
#[inline]
pub fn sync_delivery() -> bool {
    SYNC_DELIVERY.load(Ordering::Acquire)
}

/// Guard of [`drain_during_finalize`]: stops the thread when dropped.
pub struct Draining {
    job: &'static Job,
    worker: Option<Worker>,
}

impl Drop for Draining {
    fn drop(&mut self) {
        if let Some(w) = self.worker.take() {
            stop_worker(&self.job.queue, w);
        }
        // What is left: deliver it if a callback is attached; then detach for good.
        self.job.queue.deliver(true, false);
        lock(&self.job.queue.att).cb = None;
    }
}

/// finalize: detaches, and keeps the queue draining on a library thread until the guard
/// is dropped (see the module doc).  `dmapp_finalize` hands it to [`crate::job::finalize`],
/// which runs it around its barrier.
pub fn drain_during_finalize(job: &'static Job) -> Draining {
    let (cb, worker) = {
        let mut a = lock(&job.queue.att);
        SYNC_DELIVERY.store(false, Ordering::Release);
        (a.cb, a.worker.take())
    };
    // An asynchronous attachment's thread goes on as it is; otherwise one starts.  The
    // callback stays attached for the drain (finalize has not returned yet).
    let worker = worker.or_else(|| match spawn_worker(job, cb.is_none()) {
        Ok(w) => Some(w),
        Err(e) => {
            sn_warn!("dmapp_finalize", "cannot start a thread to drain the queue: {}", e);
            None
        }
    });
    Draining { job, worker }
}

/// # Safety
/// `queue_hndl` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn dmapp_queue_attach(queue_cb: Option<QueueCb>, context: *mut c_void, flags: u64, queue_hndl: *mut QueueHandle) -> Rc {
    let job = match live() {
        Ok(j) => j,
        Err(rc) => return rc,
    };
    let Some(cb) = queue_cb else { return DMAPP_RC_INVALID_PARAM };
    if queue_hndl.is_null() {
        return DMAPP_RC_INVALID_PARAM;
    }
    let q = &job.queue;
    let mut a = lock(&q.att);
    if a.cb.is_some() {
        return DMAPP_RC_BUSY; // one queue per PE, attached once at a time
    }
    let gen = a.gen.wrapping_add(1).max(1);
    a.cb = Some((cb, context as usize));
    if flags & DMAPP_QUEUE_ASYNC_PROGRESS != 0 || q.async_attr {
        match spawn_worker(job, false) {
            Ok(w) => a.worker = Some(w),
            Err(e) => {
                a.cb = None;
                sn_warn!("dmapp_queue_attach", "cannot start the delivery thread: {}", e);
                return DMAPP_RC_RESOURCE_ERROR;
            }
        }
    } else {
        SYNC_DELIVERY.store(true, Ordering::Release);
    }
    a.gen = gen;
    // SAFETY: non-null.
    unsafe { queue_hndl.write_unaligned(handle_of(gen)) };
    DMAPP_RC_SUCCESS
}

/// Whether `h` is the live attachment of this PE's queue.
fn attached(q: &Queue, h: QueueHandle) -> bool {
    let a = lock(&q.att);
    a.cb.is_some() && h == handle_of(a.gen)
}

#[no_mangle]
pub extern "C" fn dmapp_queue_detach(queue_hndl: QueueHandle, _flags: u64) -> Rc {
    let job = match live() {
        Ok(j) => j,
        Err(rc) => return rc,
    };
    let q = &job.queue;
    let worker = {
        let mut a = lock(&q.att);
        if a.cb.is_none() || queue_hndl != handle_of(a.gen) {
            return DMAPP_RC_INVALID_PARAM;
        }
        a.cb = None;
        SYNC_DELIVERY.store(false, Ordering::Release);
        a.worker.take()
    };
    if let Some(w) = worker {
        stop_worker(q, w);
    }
    // A delivery running on another thread finishes its callback before we return (one
    // running on this thread is the caller's own callback: it stops after this entry).
    if !IN_CALLBACK.with(|c| c.get()) {
        drop(lock(&q.delivering));
    }
    DMAPP_RC_SUCCESS
}

softnic_fabric::blocking_export! {
    /// # Safety
    /// `source` NULL or valid for `nelems` elements of `type_`.
    pub unsafe fn dmapp_queue_put(queue_hndl: QueueHandle, source: *mut c_void, nelems: u64, type_: c_int, target_pe: Pe, _flags: u64) -> Rc {
        let job = match live() {
            Ok(j) => j,
            Err(rc) => return rc,
        };
        let q = &job.queue;
        if !attached(q, queue_hndl) {
            return DMAPP_RC_INVALID_PARAM;
        }
        let Some(size) = elem_size(type_) else { return DMAPP_RC_INVALID_PARAM };
        let pe = match job.check_pe(target_pe) {
            Ok(p) => p,
            Err(rc) => return rc,
        };
        let limit = job.pes[pe as usize].queue_nelems as u64 * 8;
        let len = match nelems.checked_mul(size as u64) {
            Some(l) if l <= limit => l as usize,
            _ => return DMAPP_RC_INVALID_PARAM,
        };
        if len > 0 && source.is_null() {
            return DMAPP_RC_INVALID_PARAM;
        }
        let mut e = Entry { head: job.pe as u64 | (len as u64) << 32, data: [0; ENTRY_WORDS] };
        // SAFETY: the caller's source of `len` bytes (non-NULL when len > 0); the entry has
        // room for any settled queue_nelems.
        unsafe { std::ptr::copy_nonoverlapping(source as *const u8, e.data.as_mut_ptr() as *mut u8, len) };
        let peer = match job.peer(pe) {
            Ok(p) => p,
            Err(rc) => return rc,
        };
        let loc = job.pes[pe as usize].queue_loc;
        progress();
        let mut nap = Duration::from_micros(20);
        // SOFTNIC_FAULTS=cq_overrun: the target's queue is found full once (counted per put).
        let mut found_full = softnic_fabric::faults::hit(softnic_fabric::faults::Point::CqOverrun);
        loop {
            let pushed = if std::mem::take(&mut found_full) { Ok(false) } else { rma::post_event(&peer, &loc, &e, false) };
            match pushed {
                Ok(true) => return DMAPP_RC_SUCCESS,
                Ok(false) | Err(Error::NoSpace) => {}
                Err(err) => {
                    sn_debug!("dmapp_queue_put", "to PE {}: {}", pe, err);
                    return crate::rc::from_rma(err);
                }
            }
            // Full.  Waiting could never end inside a callback (see the module doc).
            if IN_CALLBACK.with(|c| c.get()) {
                return DMAPP_RC_NO_SPACE;
            }
            // Deliver our own queue meanwhile (when that is ours to do), and sleep: on our
            // ring, woken by what arrives for us, when we can deliver it; plainly otherwise.
            let sync = SYNC_DELIVERY.load(Ordering::Acquire);
            let delivered = if sync { q.deliver(false, false) } else { 0 };
            if delivered == 0 {
                // The call's cancellation point: nothing of this put is in the target's queue.
                softnic_fabric::cancel::point(|| {
                    if sync && q.ring.is_empty() {
                        q.sleep(&AtomicBool::new(false), nap);
                    } else {
                        softnic_fabric::cancel::sleep(nap);
                    }
                });
            }
            nap = (nap * 2).min(Duration::from_millis(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_name_one_attachment() {
        assert_ne!(handle_of(1), handle_of(2));
        assert!(!handle_of(1).is_null());
        assert_eq!(handle_of(7) as usize as u64 >> 56, 0x51);
    }
}
