//! Exports of the uGNI functions that are not implemented yet.
//!
//! This is the one sanctioned place for placeholders: every function the
//! header declares is exported from the start, so programs link and the ABI
//! check can hold the symbol list to the fact sheet while the library grows.
//! Implementing a function means deleting its line here and writing it in
//! the module that owns its group; nothing else refers to these entries.
//!
//! Until then a `GNI_*` call returns `GNI_RC_ILLEGAL_OP` (the "operation not
//! possible" code) and logs one warning per function naming it, so a program
//! that depends on it fails visibly instead of silently.  The CQ entry and CE
//! result accessors return 0 and the setters do nothing; they are silent
//! because programs call them in polling loops.

use crate::types::*;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Shared body of the placeholders: warn once per function, then refuse.
fn not_yet(api: &'static str, warned: &AtomicBool) -> gni_return_t {
    if !warned.swap(true, Relaxed) {
        softnic_fabric::sn_warn!(api, "not implemented yet in softnic; returning GNI_RC_ILLEGAL_OP");
    }
    GNI_RC_ILLEGAL_OP
}

/// `name(args);` lines -> `#[no_mangle] extern "C" fn name(args) -> gni_return_t`.
macro_rules! pending {
    ($($name:ident($($arg:ident: $ty:ty),* $(,)?);)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> gni_return_t {
            $(let _ = $arg;)*
            static WARNED: AtomicBool = AtomicBool::new(false);
            not_yet(stringify!($name), &WARNED)
        }
    )*};
}

/// Accessors: `name(args) -> ret;` returning the type's zero.
macro_rules! pending_accessor {
    ($($name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) $(-> $ret)? {
            $(let _ = $arg;)*
            $(<$ret>::default())?
        }
    )*};
}

// CQ entry accessors live in cqe.rs (our CQE bit layout).

// Collective engine result accessors (the GNI_CE_RES_* macros).
pending_accessor! {
    gni_ce_res_get_status(res: *mut gni_ce_result_t) -> u64;
    gni_ce_res_status_ok(res: *mut gni_ce_result_t) -> u64;
    gni_ce_res_get_fpe(res: *mut gni_ce_result_t) -> u64;
    gni_ce_res_get_red_id(res: *mut gni_ce_result_t) -> u64;
}

pending! {
    // Collective engine (CE, Aries hardware reductions): deliberately GNI_RC_ILLEGAL_OP
    // (issue 3 allows it).  The CE is an in-network reduction tree configured by
    // privileged resource limits (GNI_JOB_RES_CE); no public program we target depends
    // on it, and GNI_PostFma/GNI_PostRdma reject GNI_POST_CE descriptors (INVALID_PARAM).
    GNI_CeCreate(nic_hndl: gni_nic_handle_t, ce_hndl: *mut gni_ce_handle_t);
    GNI_CeGetId(ce_hndl: gni_ce_handle_t, ce_id: *mut u32);
    GNI_EpSetCeAttr(ep_hndl: gni_ep_handle_t, ce_id: u32, child_id: u32,
                    child_type: gni_ce_child_t);
    GNI_CeConfigure(ce_hndl: gni_ce_handle_t, child_eps: *mut gni_ep_handle_t,
                    num_child_eps: u32, parent_ep: gni_ep_handle_t, cq_hndl: gni_cq_handle_t,
                    modes: u32);
    GNI_CeCheckResult(result: *mut gni_ce_result_t, length: u32);
    GNI_CeDestroy(ce_hndl: gni_ce_handle_t);
}
