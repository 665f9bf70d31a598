//! Return codes: names, the per-call logging (and the debug mask that turns it on), the
//! C-side output helper and the misc string calls (`PtlErrorStr`, `PtlEventKindStr`,
//! `ptl_err_str`; `PtlNIFailStr`, which checks its NI handle, is [`crate::ni`]'s).

use crate::types::*;
use std::ffi::c_char;
use std::sync::atomic::{AtomicU32, Ordering};

/// A call's outcome: `Err` carries the Portals code.
pub type PResult<T> = std::result::Result<T, i32>;

/// The names of the codes, indexed by value, NUL-terminated for C.
const NAMES: [&str; 25] = [
    "PTL_OK\0",
    "PTL_AC_INDEX_INVALID\0",
    "PTL_EQ_DROPPED\0",
    "PTL_EQ_EMPTY\0",
    "PTL_EQ_INVALID\0",
    "PTL_FAIL\0",
    "PTL_HANDLE_INVALID\0",
    "PTL_IFACE_INVALID\0",
    "PTL_MD_ILLEGAL\0",
    "PTL_MD_INVALID\0",
    "PTL_MD_IN_USE\0",
    "PTL_MD_NO_UPDATE\0",
    "PTL_ME_INVALID\0",
    "PTL_ME_IN_USE\0",
    "PTL_ME_LIST_TOO_LONG\0",
    "PTL_NI_INVALID\0",
    "PTL_NO_INIT\0",
    "PTL_NO_SPACE\0",
    "PTL_PID_INVALID\0",
    "PTL_PROCESS_INVALID\0",
    "PTL_PT_FULL\0",
    "PTL_PT_INDEX_INVALID\0",
    "PTL_SEGV\0",
    "PTL_SR_INDEX_INVALID\0",
    "PTL_UNKNOWN_ERROR\0",
];

const EVENT_NAMES: [&str; 12] = [
    "PTL_EVENT_GET_START\0",
    "PTL_EVENT_GET_END\0",
    "PTL_EVENT_PUT_START\0",
    "PTL_EVENT_PUT_END\0",
    "PTL_EVENT_GETPUT_START\0",
    "PTL_EVENT_GETPUT_END\0",
    "PTL_EVENT_REPLY_START\0",
    "PTL_EVENT_REPLY_END\0",
    "PTL_EVENT_SEND_START\0",
    "PTL_EVENT_SEND_END\0",
    "PTL_EVENT_ACK\0",
    "PTL_EVENT_UNLINK\0",
];

/// The name of code `rc` (without the NUL).
pub fn name(rc: i32) -> &'static str {
    let s = NAMES.get(rc as usize).copied().unwrap_or(NAMES[PTL_UNKNOWN_ERROR as usize]);
    &s[..s.len() - 1]
}

/// The name of event kind `k` (without the NUL), for dumps and logs.
pub fn event_name(k: u32) -> &'static str {
    match EVENT_NAMES.get(k as usize) {
        Some(s) => &s[..s.len() - 1],
        None => "PTL_UNKNOWN_EVENT_KIND",
    }
}

/// PtlNIDebug's mask of the current NI, readable without a lookup.
static DEBUG: AtomicU32 = AtomicU32::new(0);

/// The current NI's debug mask.
pub fn debug_mask() -> u32 {
    DEBUG.load(Ordering::Relaxed)
}

pub fn set_debug_mask(m: u32) {
    DEBUG.store(m, Ordering::Relaxed);
}

/// Logs a failing call (SOFTNIC_LOG=debug, or the NI's PTL_DBG_API bit) and returns its
/// code.  The "nothing there" answers of the queue calls are normal results.  The test is
/// inlined into every export (one compare on success), the logging stays out of line:
/// called, `ret` cost a successful put 12 instructions.
#[inline(always)]
pub fn ret(func: &'static str, rc: i32) -> i32 {
    if rc != PTL_OK && rc != PTL_EQ_EMPTY && rc != PTL_EQ_DROPPED {
        log_failure(func, rc);
    }
    rc
}

#[cold]
#[inline(never)]
fn log_failure(func: &'static str, rc: i32) {
    softnic_fabric::sn_debug!("Portals", "{} -> {}", func, name(rc));
    if debug_mask() & PTL_DBG_API != 0 {
        eprintln!("portals[{}]: {} -> {}", std::process::id(), func, name(rc));
    }
}

/// `ret` for an internal result.
#[inline(always)]
pub fn done(func: &'static str, r: PResult<()>) -> i32 {
    ret(func, match r {
        Ok(()) => PTL_OK,
        Err(rc) => rc,
    })
}

/// Writes `v` through `p` after a NULL check (`PTL_SEGV`).  `p` is the C caller's output
/// pointer, which the API's contract makes valid when not NULL.
#[inline]
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn out<T>(p: *mut T, v: T) -> PResult<()> {
    if p.is_null() {
        return Err(PTL_SEGV);
    }
    // SAFETY: non-NULL; the caller of the API promises it points to a T.
    unsafe { p.write_unaligned(v) };
    Ok(())
}

/// The C array of code names (`extern const char *ptl_err_str[]`).
#[repr(transparent)]
pub struct NameTable([*const c_char; 25]);
// SAFETY: pointers to immutable static strings.
unsafe impl Sync for NameTable {}

#[no_mangle]
pub static ptl_err_str: NameTable = NameTable([
    NAMES[0].as_ptr() as *const c_char,
    NAMES[1].as_ptr() as *const c_char,
    NAMES[2].as_ptr() as *const c_char,
    NAMES[3].as_ptr() as *const c_char,
    NAMES[4].as_ptr() as *const c_char,
    NAMES[5].as_ptr() as *const c_char,
    NAMES[6].as_ptr() as *const c_char,
    NAMES[7].as_ptr() as *const c_char,
    NAMES[8].as_ptr() as *const c_char,
    NAMES[9].as_ptr() as *const c_char,
    NAMES[10].as_ptr() as *const c_char,
    NAMES[11].as_ptr() as *const c_char,
    NAMES[12].as_ptr() as *const c_char,
    NAMES[13].as_ptr() as *const c_char,
    NAMES[14].as_ptr() as *const c_char,
    NAMES[15].as_ptr() as *const c_char,
    NAMES[16].as_ptr() as *const c_char,
    NAMES[17].as_ptr() as *const c_char,
    NAMES[18].as_ptr() as *const c_char,
    NAMES[19].as_ptr() as *const c_char,
    NAMES[20].as_ptr() as *const c_char,
    NAMES[21].as_ptr() as *const c_char,
    NAMES[22].as_ptr() as *const c_char,
    NAMES[23].as_ptr() as *const c_char,
    NAMES[24].as_ptr() as *const c_char,
]);

/// The name of a code; codes out of range give "PTL_UNKNOWN_ERROR".
#[no_mangle]
pub extern "C" fn PtlErrorStr(ptl_errno: u32) -> *const c_char {
    let i = (ptl_errno as usize).min(PTL_UNKNOWN_ERROR as usize);
    NAMES[i].as_ptr() as *const c_char
}

/// The enumerator name of an event kind; other values give "PTL_UNKNOWN_EVENT_KIND".
#[no_mangle]
pub extern "C" fn PtlEventKindStr(ev_kind: u32) -> *const c_char {
    match EVENT_NAMES.get(ev_kind as usize) {
        Some(s) => s.as_ptr() as *const c_char,
        None => c"PTL_UNKNOWN_EVENT_KIND".as_ptr(),
    }
}
