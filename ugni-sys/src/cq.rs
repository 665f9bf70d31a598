//! Completion queues: GNI_CqCreate/Destroy, GNI_CqTestEvent/GetEvent/WaitEvent,
//! GNI_CqVectorWaitEvent/VectorMonitor, GNI_CqInterruptMask/Unmask, GNI_GetCompleted,
//! GNI_CqErrorStr, GNI_CqErrorRecoverable.  The queue itself is [`crate::objects::Cq`].
//!
//! # Decisions
//! - Capacity: the ring holds entry_count rounded up to a power of two (the digest allows
//!   "at least entry_count").  When full, further entries are dropped and the CQ is
//!   overrun: TestEvent answers ERROR_RESOURCE (without consuming), the next
//!   GetEvent/WaitEvent answers ERROR_RESOURCE once and clears the condition; the entry
//!   taken after that carries the overrun bit (`GNI_CQ_OVERRUN(ev)`), the queued entries
//!   are still delivered.  A poster is never blocked by a full CQ.  Entries are taken in
//!   the order their slots were claimed: a poster preempted between claiming a slot and
//!   filling it (with more ranks than cores) holds back the entries behind it until it runs
//!   again.  A program that reaps each SMSG event before taking the message keeps the CQ
//!   within its credits meanwhile; one that takes messages without reaping their events
//!   can overrun it.
//! - Modes: GNI_CQ_NOBLOCK or GNI_CQ_BLOCKING, optionally with GNI_CQ_PHYS_PAGES or
//!   GNI_CQ_UNMANAGED (accepted, no effect); GNI_CQ_EMULATED (with or without BLOCKING) and
//!   unknown bits are INVALID_PARAM.  `delay_count` is accepted and ignored (no interrupts).
//! - The event handler runs inside GetEvent/WaitEvent/VectorWaitEvent, once per entry they
//!   return with SUCCESS or TRANSACTION_ERROR, before they return.
//! - GNI_CqDestroy while endpoints or registrations (dst_cq) use the CQ: ERROR_RESOURCE.
//! - GNI_GetCompleted: the POST entry's aux field is the descriptor token of the CQ the
//!   descriptor was posted on (the ring slot the entry landed in, or a slab token: see
//!   `Cq::push_post`); the exact descriptor is returned (any completion order).
//!   An entry that names no outstanding descriptor (not a local POST entry, token
//!   already taken, another CQ's token): `*post_descr = NULL`, DESCRIPTOR_ERROR.  An entry
//!   with an error status: the descriptor is returned with `status` = the entry's
//!   status code (our `cqe::Status`, non-zero) and the call answers TRANSACTION_ERROR
//!   (the code real programs test for a failed transaction); on success `status` = 0.
//! - CqVectorWaitEvent / CqVectorMonitor sleep once on all the CQs (`futex_waitv`), so an
//!   entry arriving on any of them wakes the caller at once.  Where one sleep cannot cover
//!   them (more than 128 CQs, or a kernel before 5.16) they sleep on the CQs in turn, in
//!   slices growing from 100 us to 10 ms (an entry on the CQ being slept on wakes at once,
//!   others wait for the slice to end).
//!   VectorMonitor reports (in `which`) a CQ that has an entry or an overrun, consuming
//!   nothing.
//! - GNI_CqInterruptMask/Unmask: no interrupts are emulated; SUCCESS on a BLOCKING CQ,
//!   ERROR_RESOURCE on a NOBLOCK one.
//! - GNI_CqErrorStr: text from `cqe::Status::describe` (also for status 0: "no error");
//!   SIZE_ERROR when `length` cannot hold it with its NUL; an undecodable status is
//!   INVALID_PARAM.  GNI_CqErrorRecoverable: 1 only for "no such instance" (it may still
//!   attach) and for status 0; an undecodable status is INVALID_STATE.

use crate::cqe::{self, Status};
use crate::handles::GniResult;
use crate::objects::*;
use crate::types::*;
use libc::c_void;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn cq_of(h: gni_cq_handle_t) -> GniResult<Arc<Cq>> {
    CQS.get(h as *const c_void)
}

#[no_mangle]
pub unsafe extern "C" fn GNI_CqCreate(
    nic_hndl: gni_nic_handle_t,
    entry_count: u32,
    _delay_count: u32,
    mode: gni_cq_mode_t,
    handler: gni_cq_handler_t,
    context: *mut c_void,
    cq_hndl: *mut gni_cq_handle_t,
) -> gni_return_t {
    let Ok(nic) = NICS.get(nic_hndl as *const c_void) else { return GNI_RC_INVALID_PARAM };
    if nic.is_detached() || cq_hndl.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    let known = (GNI_CQ_BLOCKING | GNI_CQ_PHYS_PAGES | GNI_CQ_UNMANAGED) as u32;
    if mode & !known != 0 {
        return GNI_RC_INVALID_PARAM;
    }
    let blocking = GNI_CQ_IS_BLOCKING(mode);
    match Cq::new(nic, entry_count, blocking, handler, context as usize) {
        Ok(cq) => {
            let h = CQS.insert(cq);
            softnic_fabric::sn_debug!("GNI_CqCreate", "{} entries, {} -> {:p}", entry_count, if blocking { "blocking" } else { "non-blocking" }, h);
            // SAFETY: checked non-NULL.
            unsafe { cq_hndl.write(h as gni_cq_handle_t) };
            GNI_RC_SUCCESS
        }
        Err(rc) => rc,
    }
}

/// Memory safety against another thread's GNI_CqGetEvent / GNI_GetCompleted / post on
/// the CQ at the same time (a program error, but it must not crash): those calls reach
/// the `Cq` through `Table::with`, which holds a strong reference for the whole call (this
/// thread's pinned cache entry, or one taken from the table on a miss).  Removing the
/// handle here only stops new lookups (and empties every thread's cache before its next
/// lookup); the `Cq`, its ring memory and the descriptor table beside the ring
/// (`Cq::push_post`) are freed when the last reference goes, after every call in flight
/// has returned.  Such a call sees the CQ as it was (it may still pop an entry or take a
/// descriptor back); calls that start after the removal answer INVALID_PARAM.  Test:
/// c-tests/ugni/data_threads.c, part F.
#[no_mangle]
pub unsafe extern "C" fn GNI_CqDestroy(cq_hndl: gni_cq_handle_t) -> gni_return_t {
    let Ok(cq) = cq_of(cq_hndl) else { return GNI_RC_INVALID_PARAM };
    let users = cq.users.load(Ordering::Acquire);
    if users != 0 {
        softnic_fabric::sn_debug!("GNI_CqDestroy", "{:p} still used by {} endpoints/registrations", cq_hndl, users);
        return GNI_RC_ERROR_RESOURCE;
    }
    let _ = CQS.remove(cq_hndl as *const c_void);
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_CqTestEvent(cq_hndl: gni_cq_handle_t) -> gni_return_t {
    match cq_of(cq_hndl) {
        Ok(cq) => cq.test_event(),
        Err(rc) => rc,
    }
}

unsafe fn deliver(rc: gni_return_t, e: cqe::CqEntry, event_data: *mut gni_cq_entry_t) -> gni_return_t {
    if rc == GNI_RC_SUCCESS || rc == GNI_RC_TRANSACTION_ERROR {
        // SAFETY: checked non-NULL by the callers.
        unsafe { event_data.write(e) };
    }
    rc
}

#[no_mangle]
pub unsafe extern "C" fn GNI_CqGetEvent(cq_hndl: gni_cq_handle_t, event_data: *mut gni_cq_entry_t) -> gni_return_t {
    // Polled in tight loops: the borrowing lookup (no reference count traffic), the
    // closure inlined into its hit path (`Table::with` calls it from its miss path too,
    // which left it out of line: a call and a frame per poll).
    CQS.with(cq_hndl as *const c_void, #[inline(always)] |cq| {
        if event_data.is_null() {
            return GNI_RC_INVALID_PARAM;
        }
        let (rc, e) = cq.get_event();
        // SAFETY: checked non-NULL.
        unsafe { deliver(rc, e, event_data) }
    })
    .unwrap_or(GNI_RC_INVALID_PARAM)
}

softnic_fabric::blocking_export! {
    pub unsafe fn GNI_CqWaitEvent(cq_hndl: gni_cq_handle_t, timeout: u64, event_data: *mut gni_cq_entry_t) -> gni_return_t {
        let _span = softnic_fabric::trace::span("ugni", "GNI_CqWaitEvent");
        let Ok(cq) = cq_of(cq_hndl) else { return GNI_RC_INVALID_PARAM };
        if event_data.is_null() {
            return GNI_RC_INVALID_PARAM;
        }
        let (rc, e) = cq.wait_event(timeout);
        // SAFETY: checked non-NULL.
        unsafe { deliver(rc, e, event_data) }
    }
}

/// Validates a CQ vector: every handle valid (INVALID_PARAM), every CQ blocking
/// (ERROR_RESOURCE).
unsafe fn vector(cq_hndls: *mut gni_cq_handle_t, num_cqs: u32) -> GniResult<Vec<Arc<Cq>>> {
    if cq_hndls.is_null() || num_cqs == 0 {
        return Err(GNI_RC_INVALID_PARAM);
    }
    // SAFETY: the caller's array of num_cqs handles.
    let hs = unsafe { std::slice::from_raw_parts(cq_hndls, num_cqs as usize) };
    let cqs = hs.iter().map(|&h| cq_of(h)).collect::<GniResult<Vec<_>>>()?;
    if cqs.iter().any(|c| !c.blocking) {
        return Err(GNI_RC_ERROR_RESOURCE);
    }
    Ok(cqs)
}

/// Polls `cqs` until `f(i, cq)` gives a result or the timeout passes.
fn vector_loop<R>(cqs: &[Arc<Cq>], timeout: u64, mut f: impl FnMut(usize, &Cq) -> Option<R>) -> Option<R> {
    let deadline = (timeout != u64::MAX).then(|| Instant::now() + Duration::from_millis(timeout));
    let rings: Vec<&softnic_fabric::ring::Ring<u64>> = cqs.iter().map(|c| &c.ring).collect();
    let mut one_sleep = true;
    let mut slice = Duration::from_micros(100);
    let mut turn = 0usize;
    loop {
        for (i, cq) in cqs.iter().enumerate() {
            if let Some(r) = f(i, cq) {
                return Some(r);
            }
        }
        let left = match deadline {
            None => None,
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(l) if !l.is_zero() => Some(l),
                _ => return None,
            },
        };
        if one_sleep {
            match softnic_fabric::ring::Ring::wait_any_nonempty(&rings, left) {
                Err(softnic_fabric::Error::Unsupported) => one_sleep = false,
                _ => continue, // an entry somewhere, a timeout (seen above) or a signal
            }
        }
        let _ = cqs[turn % cqs.len()].ring.wait_nonempty(Some(left.map_or(slice, |l| l.min(slice))));
        turn += 1;
        slice = (slice * 2).min(Duration::from_millis(10));
    }
}

softnic_fabric::blocking_export! {
    pub unsafe fn GNI_CqVectorWaitEvent(cq_hndls: *mut gni_cq_handle_t, num_cqs: u32, timeout: u64, event_data: *mut gni_cq_entry_t, which: *mut u32) -> gni_return_t {
        // SAFETY: the caller's array.
        let cqs = match unsafe { vector(cq_hndls, num_cqs) } {
            Ok(c) => c,
            Err(rc) => return rc,
        };
        if event_data.is_null() || which.is_null() {
            return GNI_RC_INVALID_PARAM;
        }
        let r = vector_loop(&cqs, timeout, |i, cq| {
            let (rc, e) = cq.get_event();
            (rc != GNI_RC_NOT_DONE).then_some((i, rc, e))
        });
        match r {
            None => GNI_RC_TIMEOUT,
            Some((i, rc, e)) => {
                // SAFETY: checked non-NULL.
                unsafe { which.write(i as u32) };
                // SAFETY: checked non-NULL.
                unsafe { deliver(rc, e, event_data) }
            }
        }
    }
}

softnic_fabric::blocking_export! {
    pub unsafe fn GNI_CqVectorMonitor(cq_hndls: *mut gni_cq_handle_t, num_cqs: u32, timeout: u64, which: *mut u32) -> gni_return_t {
        // SAFETY: the caller's array.
        let cqs = match unsafe { vector(cq_hndls, num_cqs) } {
            Ok(c) => c,
            Err(rc) => return rc,
        };
        if which.is_null() {
            return GNI_RC_INVALID_PARAM;
        }
        match vector_loop(&cqs, timeout, |i, cq| (cq.test_event() != GNI_RC_NOT_DONE).then_some(i)) {
            None => GNI_RC_TIMEOUT,
            Some(i) => {
                // SAFETY: checked non-NULL.
                unsafe { which.write(i as u32) };
                GNI_RC_SUCCESS
            }
        }
    }
}

fn interrupt(cq_hndl: gni_cq_handle_t) -> gni_return_t {
    match cq_of(cq_hndl) {
        Ok(cq) if cq.blocking => GNI_RC_SUCCESS,
        Ok(_) => GNI_RC_ERROR_RESOURCE,
        Err(rc) => rc,
    }
}

#[no_mangle]
pub unsafe extern "C" fn GNI_CqInterruptMask(cq_hndl: gni_cq_handle_t) -> gni_return_t {
    interrupt(cq_hndl)
}

#[no_mangle]
pub unsafe extern "C" fn GNI_CqInterruptUnmask(cq_hndl: gni_cq_handle_t) -> gni_return_t {
    interrupt(cq_hndl)
}

#[no_mangle]
pub unsafe extern "C" fn GNI_GetCompleted(cq_hndl: gni_cq_handle_t, event_data: gni_cq_entry_t, post_descr: *mut *mut gni_post_descriptor_t) -> gni_return_t {
    // The closure inlined, as in GNI_CqGetEvent.
    CQS.with(cq_hndl as *const c_void, #[inline(always)] |cq| get_completed(cq, event_data, post_descr)).unwrap_or(GNI_RC_INVALID_PARAM)
}

fn get_completed(cq: &Cq, event_data: gni_cq_entry_t, post_descr: *mut *mut gni_post_descriptor_t) -> gni_return_t {
    if post_descr.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    let d = if cqe::source(event_data) == cqe::SRC_LOCAL && cqe::ty(event_data) == cqe::TYPE_POST {
        cq.take_desc(cqe::aux(event_data) as u32)
    } else {
        None
    };
    let Some(d) = d else {
        // SAFETY: checked non-NULL.
        unsafe { post_descr.write(std::ptr::null_mut()) };
        return GNI_RC_DESCRIPTOR_ERROR;
    };
    // Both hooks test their switch inline first: off, they cost a load, not a call.
    if softnic_fabric::check::enabled() {
        softnic_fabric::check::release(crate::post::CHECK_DESC, d as usize, "GNI_GetCompleted");
    }
    if softnic_fabric::trace::enabled() {
        softnic_fabric::trace::async_end("ugni", crate::post::TRACE_IN_FLIGHT, d as u64);
    }
    let st = cqe::status(event_data);
    // SAFETY: the descriptor the user posted (GNI-owned until now); checked non-NULL.
    unsafe {
        if !d.is_null() {
            (*d).status = st;
        }
        post_descr.write(d);
    }
    if st == 0 {
        GNI_RC_SUCCESS
    } else {
        GNI_RC_TRANSACTION_ERROR
    }
}

/// The text GNI_CqErrorStr writes for `entry`.
pub fn error_text(entry: gni_cq_entry_t) -> Option<String> {
    let s = Status::from_bits(cqe::status(entry))?;
    let mut t = s.describe().to_string();
    if cqe::overrun(entry) {
        t.push_str(" (completion queue overrun: earlier events were lost)");
    }
    Some(t)
}

#[no_mangle]
pub unsafe extern "C" fn GNI_CqErrorStr(entry: gni_cq_entry_t, buffer: *mut c_void, len: u32) -> gni_return_t {
    if buffer.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    let Some(t) = error_text(entry) else { return GNI_RC_INVALID_PARAM };
    if (len as usize) < t.len() + 1 {
        return GNI_RC_SIZE_ERROR;
    }
    // SAFETY: the caller's buffer of len >= t.len() + 1 bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(t.as_ptr(), buffer as *mut u8, t.len());
        *(buffer as *mut u8).add(t.len()) = 0;
    }
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_CqErrorRecoverable(entry: gni_cq_entry_t, recoverable: *mut u32) -> gni_return_t {
    if recoverable.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    let Some(s) = Status::from_bits(cqe::status(entry)) else { return GNI_RC_INVALID_STATE };
    let r = s == Status::Ok || s.recoverable();
    // SAFETY: checked non-NULL.
    unsafe { recoverable.write(r as u32) };
    GNI_RC_SUCCESS
}
