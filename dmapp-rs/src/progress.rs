//! Progress callbacks: `dmapp_register_progress_cb`, `dmapp_deregister_progress_cb`.
//!
//! Cray's DMAPP calls these while it waits for the network, so that a runtime layered on
//! it (a SHMEM or PGAS library) can make its own progress from inside DMAPP's waits.  Here
//! a request completes when it is issued, and the waits are: every blocking data-motion
//! call (after the data has moved), `dmapp_syncid_wait`, `dmapp_gsync_wait`, and each poll
//! of a collective wait.  [`run`] calls every registered callback once there, in
//! registration order, with its data.  The same places deliver the message queue
//! ([`crate::queue::progress`]) when its callback is not asynchronous.
//!
//! # Decisions (also in dmapp.h)
//! - Callbacks are keyed by function: registering one that is already registered replaces
//!   its data; at most [`MAX_CALLBACKS`] (more: DMAPP_RC_RESOURCE_ERROR).  NULL:
//!   DMAPP_RC_INVALID_PARAM.  Deregistering a function that is not registered:
//!   DMAPP_RC_NOT_FOUND.  Both work before `dmapp_init` and after `dmapp_finalize`.
//! - A callback's return value is ignored (logged at debug level when non-zero).
//! - Callbacks are not re-entered: DMAPP calls made from inside a callback do not call the
//!   callbacks again (on that thread).  A callback may deregister itself or others; the
//!   change applies from the next wait.

use crate::types::*;
use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Most callbacks registered at once.
pub const MAX_CALLBACKS: usize = 16;

pub type ProgressCb = extern "C" fn(*mut c_void) -> c_int;

/// (callback, data) in registration order; `data` is an address, never dereferenced here.
static CALLBACKS: Mutex<Vec<(ProgressCb, usize)>> = Mutex::new(Vec::new());
/// Length of `CALLBACKS`, read without the lock on every blocking call.
static COUNT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

fn callbacks() -> std::sync::MutexGuard<'static, Vec<(ProgressCb, usize)>> {
    CALLBACKS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Calls every registered callback once (see the module doc); nothing when none is
/// registered or when called from inside a callback.
#[inline]
pub fn run() {
    // Every blocking call ends here: when no callback is registered and no queue is
    // delivered by the program's calls, two loads and no call.
    if COUNT.load(Ordering::Acquire) != 0 || crate::queue::sync_delivery() {
        run_registered();
    }
}

/// [`run`], then `rc`: for quick paths, whose one call (when a callback is registered) is
/// then a tail call.
#[inline(always)]
pub fn run_then(rc: crate::types::Rc) -> crate::types::Rc {
    if COUNT.load(Ordering::Acquire) != 0 || crate::queue::sync_delivery() {
        return run_registered_then(rc);
    }
    rc
}

#[inline(never)]
fn run_registered_then(rc: crate::types::Rc) -> crate::types::Rc {
    run_registered();
    rc
}

#[inline(never)]
fn run_registered() {
    // The queue's messages are delivered at the same places (crate::queue).
    crate::queue::progress();
    if COUNT.load(Ordering::Acquire) == 0 || IN_CALLBACK.with(|c| c.get()) {
        return;
    }
    let list: Vec<(ProgressCb, usize)> = callbacks().clone();
    IN_CALLBACK.with(|c| c.set(true));
    for (cb, data) in list {
        let rc = cb(data as *mut c_void);
        if rc != 0 {
            softnic_fabric::sn_debug!("dmapp progress", "callback {:p} returned {}", cb as *const c_void, rc);
        }
    }
    IN_CALLBACK.with(|c| c.set(false));
}

#[no_mangle]
pub extern "C" fn dmapp_register_progress_cb(cb: Option<ProgressCb>, data: *mut c_void) -> Rc {
    let Some(cb) = cb else { return DMAPP_RC_INVALID_PARAM };
    let mut l = callbacks();
    if let Some(e) = l.iter_mut().find(|e| e.0 as usize == cb as usize) {
        e.1 = data as usize;
        return DMAPP_RC_SUCCESS;
    }
    if l.len() >= MAX_CALLBACKS {
        return DMAPP_RC_RESOURCE_ERROR;
    }
    l.push((cb, data as usize));
    COUNT.store(l.len(), Ordering::Release);
    DMAPP_RC_SUCCESS
}

#[no_mangle]
pub extern "C" fn dmapp_deregister_progress_cb(cb: Option<ProgressCb>) -> Rc {
    let Some(cb) = cb else { return DMAPP_RC_INVALID_PARAM };
    let mut l = callbacks();
    let Some(i) = l.iter().position(|e| e.0 as usize == cb as usize) else { return DMAPP_RC_NOT_FOUND };
    l.remove(i);
    COUNT.store(l.len(), Ordering::Release);
    DMAPP_RC_SUCCESS
}
