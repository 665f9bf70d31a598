//! Message queues (`dmapp_queue_attach`, `_detach`, `_put`; later DMAPP releases, used by
//! Global Arrays' ARMCI/ComEx ports and UPC++): a PE sends a small message to another PE's
//! queue, and the target's callback receives it.
//!
//! **Where messages wait.**  Every PE makes one receive queue at `dmapp_init`: a fabric
//! [`Ring`] of `queue_depth` fixed-size entries in library-owned shared memory, whose
//! location the init allgather tells every PE.  A put appends one entry (sender, length,
//! payload) with [`rma::post_event`]: written in place into the target's ring on this
//! machine, pushed by the target's network progress thread on another.  A sender's puts
//! complete one after the other and the ring is FIFO, so the target sees each sender's
//! messages in the order they were put.
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

use crate::job::{live, lock, Job};
use crate::types::*;
use softnic_fabric::mem::{self, RingLoc, SharedMem};
use softnic_fabric::ring::{Pod, Ring};
use softnic_fabric::{net, rma, sn_debug, sn_warn, Error};
use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, TryLockError};
use std::thread::{JoinHandle, ThreadId};
use std::time::Duration;

/// Payload words of one entry: the largest put any queue takes.
const ENTRY_WORDS: usize = DMAPP_QUEUE_MAX_NELEMS as usize;

/// One message in a receive ring.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Entry {
    /// Sender PE (low 32 bits) and payload length in bytes (high 32 bits).
    head: u64,
    data: [u64; ENTRY_WORDS],
}
// SAFETY: repr(C), integers only; every bit pattern is a valid Entry.
unsafe impl Pod for Entry {}

/// `int (*queue_cb)(void *context, void *data, uint32_t len, dmapp_pe_t rank)`.
pub type QueueCb = extern "C" fn(context: *mut c_void, data: *mut c_void, len: u32, rank: Pe) -> c_int;

/// `dmapp_queue_handle_t`: an opaque token naming one attachment (see [`handle_of`]).
pub type QueueHandle = *mut c_void;

/// Handles carry this tag above the attachment's generation, so that small integers and
/// other DMAPP handles are not mistaken for one.
const HANDLE_TAG: u64 = 0x51 << 56;

fn handle_of(gen: u32) -> QueueHandle {
    (HANDLE_TAG | gen as u64) as usize as QueueHandle
}

/// The delivery thread of an asynchronous attachment (or of finalize).
struct Worker {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
    id: ThreadId,
}

struct Attachment {
    /// Generation of the current (or last) attachment; the handle carries it.
    gen: u32,
    /// The callback and its context (an address, never dereferenced here); None: detached.
    cb: Option<(QueueCb, usize)>,
    worker: Option<Worker>,
}

/// This PE's receive queue.
pub struct Queue {
    /// Owns the ring's memory (kept mapped for the life of the process, like the heap).
    _mem: SharedMem,
    ring: Ring<Entry>,
    pub loc: RingLoc,
    /// Largest put this queue takes, in QW (the settled queue_nelems attribute).
    pub nelems: u32,
    /// The queue_flags attribute asked for asynchronous progress.
    async_attr: bool,
    /// Serialises deliveries: one callback at a time, entries in ring order.
    delivering: Mutex<()>,
    att: Mutex<Attachment>,
}

/// True while a callback is attached that the program's own DMAPP calls deliver to (no
/// asynchronous progress): read without a lock by [`progress`] on every blocking call.
static SYNC_DELIVERY: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// This thread is inside a queue callback.
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
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
    fn deliver(&self, wait_turn: bool, discard: bool) -> usize {
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
    fn sleep(&self, stop: &AtomicBool, timeout: Duration) {
        let Some(w) = self.ring.waker() else {
            softnic_fabric::cancel::sleep(timeout);
            return;
        };
        // The network engine's lease ends: our progress thread must serve pushes meanwhile.
        net::stop_polling_for_events();
        let _ = w.wait_until(|| stop.load(Ordering::Acquire) || !self.ring.is_empty(), Some(timeout));
    }

    fn wake(&self) {
        if let Some(w) = self.ring.waker() {
            w.notify();
        }
    }
}

/// Starts a library thread that delivers until its stop flag is set.
fn spawn_worker(job: &Arc<Job>, discard: bool) -> std::io::Result<Worker> {
    let stop = Arc::new(AtomicBool::new(false));
    let (j, s) = (job.clone(), stop.clone());
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
pub fn sync_delivery() -> bool {
    SYNC_DELIVERY.load(Ordering::Acquire)
}

/// Guard of [`drain_during_finalize`]: stops the thread when dropped.
pub struct Draining<'a> {
    job: &'a Arc<Job>,
    worker: Option<Worker>,
}

impl Drop for Draining<'_> {
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
/// is dropped (see the module doc).
pub fn drain_during_finalize(job: &Arc<Job>) -> Draining<'_> {
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
        match spawn_worker(&job, false) {
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
        loop {
            match rma::post_event(&peer, &loc, &e, false) {
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
    fn entry_carries_the_largest_put() {
        assert_eq!(std::mem::size_of::<Entry>(), 8 + DMAPP_QUEUE_MAX_NELEMS as usize * 8);
        assert!(std::mem::size_of::<Entry>() + 64 < net::MAX_DATA);
    }

    #[test]
    fn handles_name_one_attachment() {
        assert_ne!(handle_of(1), handle_of(2));
        assert!(!handle_of(1).is_null());
        assert_eq!(handle_of(7) as usize as u64 >> 56, 0x51);
    }
}
