//! Error event queues: GNI_SubscribeErrors, GNI_ReleaseErrors, GNI_GetErrorMask,
//! GNI_SetErrorMask, GNI_GetErrorEvent, GNI_WaitErrorEvents, GNI_SetErrorPtag.
//!
//! Each subscription is an event queue (EEQ) of `EEQ_size` entries (0 = 64) bound to one
//! NIC.  Events are produced by [`report_transaction_error`], which the data-movement code
//! calls when a transaction fails: every subscription of the same (ptag, cookie) domain
//! whose mask has the event's category receives a `gni_error_event_t`.  A full queue
//! drops the new event (its serial number is skipped, so gaps show losses).
//!
//! # Decisions
//! - `nic_handle == NULL` (privileged subscription by device) is INVALID_PARAM: callers are
//!   never privileged here.  `device_id` other than 0 (or -1) is NO_MATCH.
//! - Event fields: `error_code` = our `cqe::Status` code, `error_category` = the
//!   GNI_ERRMASK_* bit (ADDRESS_TRANSLATION for bad/foreign handles, TRANSACTION for
//!   the rest), `ptag` = the initiator's ptag, `serial_number` counts per subscription,
//!   `timestamp` = CLOCK_MONOTONIC ns, `info_mmrs` = four words the reporter supplies
//!   (for the data helper: remote address, length, the memory handle's two words).
//! - GNI_WaitErrorEvents: timeout in ms.  `timeout == 0`: block until the first event
//!   (the documented "blocks forever"), then return what is queued.  `timeout > 0`: the
//!   whole call waits at most that long — for the first event and then for more to
//!   coalesce; TIMEOUT when the array is not full when time runs out (`*num_events` may be
//!   > 0, see digest 8.20), SUCCESS when it filled up.  `events_size == 0` or NULL
//!   pointers are INVALID_PARAM.
//! - GNI_ReleaseErrors while another thread waits in WaitErrorEvents: NOT_DONE.
//! - GNI_SetErrorPtag: only the subscription's own ptag is accepted (no-op SUCCESS);
//!   any other (including 0 = all ptags) is PERMISSION_ERROR.

use crate::cqe::Status;
use crate::handles::{lock, GniResult, Table};
use crate::objects::*;
use crate::types::*;
use libc::c_void;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use softnic_fabric::wait::WaitWords;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct ErrSub {
    ptag: u8,
    cookie: u32,
    mask: AtomicU8,
    cap: usize,
    q: Mutex<(VecDeque<gni_error_event_t>, u32)>,
    /// Events queued (what waiters watch, without the lock) and their wake-up words.
    queued: AtomicU32,
    wake: WaitWords,
    waiting: AtomicU32,
}

pub static ERRS: Table<ErrSub> = Table::new(0xc7);
/// Live subscriptions, for reporters.
static SUBS: Mutex<Vec<Arc<ErrSub>>> = Mutex::new(Vec::new());

fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Reports a failed transaction of `nic` to the error subscribers of its domain.
/// `info`: four words saved in `info_mmrs` (suggested: remote address, length, remote
/// memory handle qword1, qword2).  Cheap when nobody subscribed.
pub fn report_transaction_error(nic: &Nic, status: Status, info: [u64; 4]) {
    let subs = lock(&SUBS);
    if subs.is_empty() || status == Status::Ok {
        return;
    }
    let category = match status {
        Status::BadHandle | Status::Protection => GNI_ERRMASK_ADDRESS_TRANSLATION as u8,
        _ => GNI_ERRMASK_TRANSACTION as u8,
    };
    for s in subs.iter().filter(|s| s.ptag == nic.cdm.ptag && s.cookie == nic.cdm.cookie) {
        if s.mask.load(Ordering::Relaxed) & category == 0 {
            continue;
        }
        let mut q = lock(&s.q);
        q.1 = q.1.wrapping_add(1);
        if q.0.len() < s.cap {
            let ev = gni_error_event_t { error_code: status as u16, error_category: category, ptag: nic.cdm.ptag, serial_number: q.1, timestamp: now_ns(), info_mmrs: info };
            q.0.push_back(ev);
            s.queued.store(q.0.len() as u32, Ordering::Release);
            s.wake.notify();
        }
    }
}

fn sub_of(h: gni_err_handle_t) -> GniResult<Arc<ErrSub>> {
    ERRS.get(h as *const c_void)
}

#[no_mangle]
pub unsafe extern "C" fn GNI_SubscribeErrors(nic_handle: gni_nic_handle_t, device_id: u32, mask: gni_error_mask_t, eeq_size: u32, err_handle: *mut gni_err_handle_t) -> gni_return_t {
    if nic_handle.is_null() || err_handle.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    let Ok(nic) = NICS.get(nic_handle as *const c_void) else { return GNI_RC_INVALID_PARAM };
    if nic.is_detached() {
        return GNI_RC_INVALID_PARAM;
    }
    if device_id != 0 && device_id != u32::MAX {
        return GNI_RC_NO_MATCH;
    }
    if eeq_size > (1 << 20) {
        return GNI_RC_ERROR_RESOURCE;
    }
    let s = Arc::new(ErrSub {
        ptag: nic.cdm.ptag,
        cookie: nic.cdm.cookie,
        mask: AtomicU8::new(mask),
        cap: if eeq_size == 0 { 64 } else { eeq_size as usize },
        q: Mutex::new((VecDeque::new(), 0)),
        queued: AtomicU32::new(0),
        wake: WaitWords::new(),
        waiting: AtomicU32::new(0),
    });
    lock(&SUBS).push(s.clone());
    let h = ERRS.insert(s);
    // SAFETY: checked non-NULL.
    unsafe { err_handle.write(h as gni_err_handle_t) };
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_ReleaseErrors(err_handle: gni_err_handle_t) -> gni_return_t {
    let Ok(s) = sub_of(err_handle) else { return GNI_RC_INVALID_PARAM };
    if s.waiting.load(Ordering::Acquire) != 0 {
        return GNI_RC_NOT_DONE;
    }
    let _ = ERRS.remove(err_handle as *const c_void);
    lock(&SUBS).retain(|x| !Arc::ptr_eq(x, &s));
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_GetErrorMask(err_handle: gni_err_handle_t, mask: *mut gni_error_mask_t) -> gni_return_t {
    let Ok(s) = sub_of(err_handle) else { return GNI_RC_INVALID_PARAM };
    if mask.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    // SAFETY: checked non-NULL.
    unsafe { mask.write(s.mask.load(Ordering::Relaxed)) };
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_SetErrorMask(err_handle: gni_err_handle_t, mask_in: gni_error_mask_t, mask_out: *mut gni_error_mask_t) -> gni_return_t {
    let Ok(s) = sub_of(err_handle) else { return GNI_RC_INVALID_PARAM };
    if mask_out.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    let old = s.mask.swap(mask_in, Ordering::Relaxed);
    // SAFETY: checked non-NULL.
    unsafe { mask_out.write(old) };
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_GetErrorEvent(err_handle: gni_err_handle_t, event: *mut gni_error_event_t) -> gni_return_t {
    let Ok(s) = sub_of(err_handle) else { return GNI_RC_INVALID_PARAM };
    if event.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    let ev = {
        let mut q = lock(&s.q);
        let ev = q.0.pop_front();
        s.queued.store(q.0.len() as u32, Ordering::Release);
        ev
    };
    match ev {
        Some(ev) => {
            // SAFETY: checked non-NULL.
            unsafe { event.write(ev) };
            GNI_RC_SUCCESS
        }
        None => GNI_RC_NOT_DONE,
    }
}

softnic_fabric::blocking_export! {
    pub unsafe fn GNI_WaitErrorEvents(err_handle: gni_err_handle_t, events: *mut gni_error_event_t, events_size: u32, timeout: u32, num_events: *mut u32) -> gni_return_t {
        let Ok(s) = sub_of(err_handle) else { return GNI_RC_INVALID_PARAM };
        if events.is_null() || num_events.is_null() || events_size == 0 {
            return GNI_RC_INVALID_PARAM;
        }
        // Counted while waiting (ReleaseErrors answers NOT_DONE meanwhile), also when a
        // cancellation ends the wait.
        struct Waiting<'a>(&'a AtomicU32);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        s.waiting.fetch_add(1, Ordering::AcqRel);
        let waiting = Waiting(&s.waiting);
        let deadline = (timeout != 0).then(|| Instant::now() + Duration::from_millis(timeout as u64));
        // Wait without taking anything, so a cancellation leaves every event queued; take
        // them when the wait is over.
        loop {
            let seen = s.queued.load(Ordering::Acquire);
            if seen >= events_size || (deadline.is_none() && seen > 0) {
                break;
            }
            let left = match deadline {
                None => None,
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(l) if !l.is_zero() => Some(l),
                    _ => break,
                },
            };
            let _ = softnic_fabric::cancel::point(|| s.wake.wait_until(|| s.queued.load(Ordering::Acquire) != seen, left));
        }
        let mut got = 0u32;
        {
            let mut q = lock(&s.q);
            while got < events_size {
                let Some(ev) = q.0.pop_front() else { break };
                // SAFETY: the caller's array of events_size entries.
                unsafe { events.add(got as usize).write(ev) };
                got += 1;
            }
            s.queued.store(q.0.len() as u32, Ordering::Release);
        }
        drop(waiting);
        // SAFETY: checked non-NULL.
        unsafe { num_events.write(got) };
        if got == events_size {
            GNI_RC_SUCCESS
        } else {
            GNI_RC_TIMEOUT
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn GNI_SetErrorPtag(err_handle: gni_err_handle_t, ptag: u8) -> gni_return_t {
    let Ok(s) = sub_of(err_handle) else { return GNI_RC_INVALID_PARAM };
    if ptag != s.ptag {
        return GNI_RC_PERMISSION_ERROR;
    }
    GNI_RC_SUCCESS
}
