//! Return-code plumbing: every exported function reports its result through [`ret`],
//! which remembers the calling thread's last failure for `utofu_get_last_error`.

use crate::types::*;
use std::cell::Cell;
use std::ffi::{c_char, CStr};

pub type UResult<T> = std::result::Result<T, i32>;

thread_local! {
    static LAST: Cell<Option<(&'static str, i32)>> = const { Cell::new(None) };
}

/// Records `rc` of `func` (when it is a failure worth reporting) and returns it.
/// "Nothing yet" answers (NOT_FOUND, NOT_COMPLETED) are normal polling results.
#[inline]
pub fn ret(func: &'static str, rc: i32) -> i32 {
    if rc != UTOFU_SUCCESS && rc != UTOFU_ERR_NOT_FOUND && rc != UTOFU_ERR_NOT_COMPLETED {
        record_failure(func, rc);
    }
    rc
}

/// [`ret`]'s failure path, out of line (the polls that report through `ret` hold nothing to
/// drop, see `utofu_poll_mrq`).
#[cold]
#[inline(never)]
fn record_failure(func: &'static str, rc: i32) {
    LAST.with(|l| l.set(Some((func, rc))));
    softnic_fabric::sn_debug!("uTofu", "{} -> {} ({})", func, rc, name(rc));
}

/// `ret` for an internal result.
#[inline]
pub fn done(func: &'static str, r: UResult<()>) -> i32 {
    ret(func, match r {
        Ok(()) => UTOFU_SUCCESS,
        Err(rc) => rc,
    })
}

pub fn name(rc: i32) -> &'static str {
    match rc {
        UTOFU_SUCCESS => "UTOFU_SUCCESS",
        UTOFU_ERR_NOT_FOUND => "UTOFU_ERR_NOT_FOUND",
        UTOFU_ERR_NOT_COMPLETED => "UTOFU_ERR_NOT_COMPLETED",
        -3 => "UTOFU_ERR_NOT_PROCESSED",
        UTOFU_ERR_BUSY => "UTOFU_ERR_BUSY",
        UTOFU_ERR_USED => "UTOFU_ERR_USED",
        UTOFU_ERR_FULL => "UTOFU_ERR_FULL",
        UTOFU_ERR_NOT_AVAILABLE => "UTOFU_ERR_NOT_AVAILABLE",
        UTOFU_ERR_NOT_SUPPORTED => "UTOFU_ERR_NOT_SUPPORTED",
        -128 => "UTOFU_ERR_TCQ_OTHER",
        -129 => "UTOFU_ERR_TCQ_DESC",
        UTOFU_ERR_TCQ_MEMORY => "UTOFU_ERR_TCQ_MEMORY",
        UTOFU_ERR_TCQ_STADD => "UTOFU_ERR_TCQ_STADD",
        UTOFU_ERR_TCQ_LENGTH => "UTOFU_ERR_TCQ_LENGTH",
        UTOFU_ERR_MRQ_OTHER => "UTOFU_ERR_MRQ_OTHER",
        UTOFU_ERR_MRQ_PEER => "UTOFU_ERR_MRQ_PEER",
        UTOFU_ERR_MRQ_LCL_MEMORY => "UTOFU_ERR_MRQ_LCL_MEMORY",
        UTOFU_ERR_MRQ_RMT_MEMORY => "UTOFU_ERR_MRQ_RMT_MEMORY",
        UTOFU_ERR_MRQ_LCL_STADD => "UTOFU_ERR_MRQ_LCL_STADD",
        UTOFU_ERR_MRQ_RMT_STADD => "UTOFU_ERR_MRQ_RMT_STADD",
        UTOFU_ERR_MRQ_LCL_LENGTH => "UTOFU_ERR_MRQ_LCL_LENGTH",
        UTOFU_ERR_MRQ_RMT_LENGTH => "UTOFU_ERR_MRQ_RMT_LENGTH",
        UTOFU_ERR_BARRIER_OTHER => "UTOFU_ERR_BARRIER_OTHER",
        UTOFU_ERR_BARRIER_MISMATCH => "UTOFU_ERR_BARRIER_MISMATCH",
        UTOFU_ERR_INVALID_ARG => "UTOFU_ERR_INVALID_ARG",
        UTOFU_ERR_INVALID_POINTER => "UTOFU_ERR_INVALID_POINTER",
        UTOFU_ERR_INVALID_FLAGS => "UTOFU_ERR_INVALID_FLAGS",
        UTOFU_ERR_INVALID_COORDS => "UTOFU_ERR_INVALID_COORDS",
        UTOFU_ERR_INVALID_PATH => "UTOFU_ERR_INVALID_PATH",
        UTOFU_ERR_INVALID_TNI_ID => "UTOFU_ERR_INVALID_TNI_ID",
        UTOFU_ERR_INVALID_CQ_ID => "UTOFU_ERR_INVALID_CQ_ID",
        UTOFU_ERR_INVALID_BG_ID => "UTOFU_ERR_INVALID_BG_ID",
        UTOFU_ERR_INVALID_CMP_ID => "UTOFU_ERR_INVALID_CMP_ID",
        UTOFU_ERR_INVALID_VCQ_HDL => "UTOFU_ERR_INVALID_VCQ_HDL",
        UTOFU_ERR_INVALID_VCQ_ID => "UTOFU_ERR_INVALID_VCQ_ID",
        UTOFU_ERR_INVALID_VBG_ID => "UTOFU_ERR_INVALID_VBG_ID",
        UTOFU_ERR_INVALID_PATH_ID => "UTOFU_ERR_INVALID_PATH_ID",
        UTOFU_ERR_INVALID_STADD => "UTOFU_ERR_INVALID_STADD",
        UTOFU_ERR_INVALID_ADDRESS => "UTOFU_ERR_INVALID_ADDRESS",
        UTOFU_ERR_INVALID_SIZE => "UTOFU_ERR_INVALID_SIZE",
        UTOFU_ERR_INVALID_STAG => "UTOFU_ERR_INVALID_STAG",
        UTOFU_ERR_INVALID_EDATA => "UTOFU_ERR_INVALID_EDATA",
        UTOFU_ERR_INVALID_NUMBER => "UTOFU_ERR_INVALID_NUMBER",
        UTOFU_ERR_INVALID_OP => "UTOFU_ERR_INVALID_OP",
        UTOFU_ERR_INVALID_DESC => "UTOFU_ERR_INVALID_DESC",
        UTOFU_ERR_INVALID_DATA => "UTOFU_ERR_INVALID_DATA",
        UTOFU_ERR_OUT_OF_RESOURCE => "UTOFU_ERR_OUT_OF_RESOURCE",
        UTOFU_ERR_OUT_OF_MEMORY => "UTOFU_ERR_OUT_OF_MEMORY",
        UTOFU_ERR_FATAL => "UTOFU_ERR_FATAL",
        _ => "unknown code",
    }
}

/// Writes `v` through `p` after a NULL check.
#[inline]
pub fn out<T>(p: *mut T, v: T) -> UResult<()> {
    if p.is_null() {
        return Err(UTOFU_ERR_INVALID_POINTER);
    }
    // SAFETY: non-NULL; the caller of the API promises it points to a T.
    unsafe { p.write_unaligned(v) };
    Ok(())
}

/// Prints the calling thread's last failing call, its code and `prefix` to stderr (the
/// de-facto extension real programs declare themselves and call after a failure).
#[no_mangle]
pub unsafe extern "C" fn utofu_get_last_error(prefix: *const c_char) {
    let p = if prefix.is_null() {
        String::new()
    } else {
        // SAFETY: the caller passes a NUL-terminated string.
        unsafe { CStr::from_ptr(prefix) }.to_string_lossy().into_owned()
    };
    let msg = match LAST.with(|l| l.get()) {
        Some((f, rc)) => format!("{}{}{} failed: {} ({})", p, if p.is_empty() { "" } else { ": " }, f, name(rc), rc),
        None => format!("{}{}no uTofu call has failed in this thread", p, if p.is_empty() { "" } else { ": " }),
    };
    eprintln!("{}", msg);
}

/// Fatal asynchronous errors end the process with the guide's message.
pub fn fatal(msg: &str) -> ! {
    eprintln!("utofu: asynchronous error: {}", msg);
    std::process::exit(1)
}
