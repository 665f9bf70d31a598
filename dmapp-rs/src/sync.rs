//! Completion bookkeeping: syncids of `_nb` requests and the gsync of `_nbi` ones.
//!
//! Every request completes at issue (fabric operations are synchronous), so a syncid
//! only carries the request's outcome until it is retired.  It still counts against
//! `max_outstanding_nb` until `dmapp_syncid_test` reports it done or
//! `dmapp_syncid_wait` returns (digest 5.7, 9.7): the program must retire what it
//! issued, as on the hardware, and `DMAPP_RC_NO_SPACE` comes exactly when the limit
//! would be exceeded.  gsync never retires syncids.  The handles and their table are in
//! [`crate::sync_table`].

use crate::job::live;
use crate::mutex::lock;
use crate::types::*;
use std::ffi::c_int;

/// Shared body of syncid_test and syncid_wait: both find the request complete.
fn retire(syncid: *mut SyncHandle) -> Rc {
    let job = match live() {
        Ok(j) => j,
        Err(rc) => return rc,
    };
    if syncid.is_null() {
        return DMAPP_RC_INVALID_PARAM;
    }
    // SAFETY: non-null pointer to the caller's handle.
    let h = unsafe { syncid.read_unaligned() };
    if h.is_null() {
        return DMAPP_RC_SUCCESS; // already retired (we set it to NULL then)
    }
    let rc = lock(&job.sync).retire(h);
    if rc != DMAPP_RC_INVALID_PARAM {
        softnic_fabric::check::release(crate::rma::CHECK_NB, h as usize, "the wait or test of its sync handle");
        softnic_fabric::trace::async_end("dmapp", crate::rma::TRACE_NB, h as u64);
        // SAFETY: as above.  Retired: the handle's resources are gone.
        unsafe { syncid.write_unaligned(std::ptr::null_mut()) };
    }
    rc
}

/// # Safety
/// `syncid` and `flag` are NULL or valid pointers.
#[no_mangle]
pub unsafe extern "C" fn dmapp_syncid_test(syncid: *mut SyncHandle, flag: *mut c_int) -> Rc {
    if flag.is_null() {
        return DMAPP_RC_INVALID_PARAM;
    }
    let rc = retire(syncid);
    crate::queue::progress();
    if rc == DMAPP_RC_SUCCESS || rc == DMAPP_RC_TRANSACTION_ERROR {
        // SAFETY: non-null.
        unsafe { flag.write_unaligned(1) };
    }
    rc
}

/// # Safety
/// `syncid` is NULL or a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn dmapp_syncid_wait(syncid: *mut SyncHandle) -> Rc {
    let rc = retire(syncid);
    crate::progress::run();
    rc
}

/// Reports (and clears) the first error of `_nbi` requests since the last gsync.
fn gsync() -> Rc {
    match live() {
        Ok(job) => std::mem::replace(&mut *lock(&job.gsync_err), DMAPP_RC_SUCCESS),
        Err(rc) => rc,
    }
}

/// # Safety
/// `flag` is NULL or a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn dmapp_gsync_test(flag: *mut c_int) -> Rc {
    if flag.is_null() {
        return DMAPP_RC_INVALID_PARAM;
    }
    let rc = gsync();
    crate::queue::progress();
    if rc != DMAPP_RC_INVALID_PARAM {
        softnic_fabric::check::release_all(crate::rma::CHECK_NBI, "dmapp_gsync_test");
        crate::rma::trace_nbi_end();
        // SAFETY: non-null.
        unsafe { flag.write_unaligned(1) };
    }
    rc
}

#[no_mangle]
pub extern "C" fn dmapp_gsync_wait() -> Rc {
    let _span = softnic_fabric::trace::span("dmapp", "dmapp_gsync_wait");
    let rc = gsync();
    softnic_fabric::check::release_all(crate::rma::CHECK_NBI, "dmapp_gsync_wait");
    crate::rma::trace_nbi_end();
    crate::progress::run();
    rc
}
