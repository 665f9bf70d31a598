//! The functions of the fact sheet that this library does not implement.  Each
//! returns `DMAPP_RC_NOT_SUPPORTED` without side effects; nothing else in the
//! library does.  Reasons:
//!
//! - `dmapp_checkpoint`, `dmapp_restart`: checkpoint/restart of a job needs the
//!   launcher's cooperation (BLCR on Cray systems); neither snrun nor the node fabric
//!   can save and restore shared mappings and peers' cached handles.
//! - `dmapp_c_pset_create`, `dmapp_c_pset_export`, `dmapp_c_pset_destroy`,
//!   `dmapp_c_barrier_join`, `dmapp_c_greduce_start`, `dmapp_c_greduce_nelems_max`,
//!   `dmapp_c_pset_test`, `dmapp_c_pset_wait`, `dmapp_c_pset_cancel_op`: the
//!   hardware-offloaded collectives (Gemini collective engine) are outside the
//!   documented contract (not in the seed document, header only) and not built yet.
//!   Programs use PMI_Barrier or their own AMO-based collectives meanwhile.

use crate::types::*;
use std::ffi::{c_int, c_void};

/// `dmapp_c_pset_handle_t`.
pub type PsetHandle = *mut c_void;

#[no_mangle]
pub extern "C" fn dmapp_checkpoint() -> Rc {
    DMAPP_RC_NOT_SUPPORTED
}
#[no_mangle]
pub extern "C" fn dmapp_restart(_restart_modes: u32) -> Rc {
    DMAPP_RC_NOT_SUPPORTED
}
#[no_mangle]
pub extern "C" fn dmapp_c_pset_create(_pdesc: *mut c_void, _identifier: u64, _modes: u64, _attrs: *mut c_void, _pset_hndl: *mut PsetHandle) -> Rc {
    DMAPP_RC_NOT_SUPPORTED
}
#[no_mangle]
pub extern "C" fn dmapp_c_pset_export(_pset_hndl: PsetHandle) -> Rc {
    DMAPP_RC_NOT_SUPPORTED
}
#[no_mangle]
pub extern "C" fn dmapp_c_pset_destroy(_pset_hndl: PsetHandle) -> Rc {
    DMAPP_RC_NOT_SUPPORTED
}
#[no_mangle]
pub extern "C" fn dmapp_c_barrier_join(_pset_hndl: PsetHandle) -> Rc {
    DMAPP_RC_NOT_SUPPORTED
}
#[no_mangle]
pub extern "C" fn dmapp_c_greduce_start(_pset: PsetHandle, _in: *mut c_void, _out: *mut c_void, _nelems: u32, _type: c_int, _op: c_int) -> Rc {
    DMAPP_RC_NOT_SUPPORTED
}
#[no_mangle]
pub extern "C" fn dmapp_c_greduce_nelems_max(_type: c_int, _nelems_max: *mut u32) -> Rc {
    DMAPP_RC_NOT_SUPPORTED
}
#[no_mangle]
pub extern "C" fn dmapp_c_pset_test(_pset_hndl: PsetHandle) -> Rc {
    DMAPP_RC_NOT_SUPPORTED
}
#[no_mangle]
pub extern "C" fn dmapp_c_pset_wait(_pset_hndl: PsetHandle) -> Rc {
    DMAPP_RC_NOT_SUPPORTED
}
#[no_mangle]
pub extern "C" fn dmapp_c_pset_cancel_op(_pset_hndl: PsetHandle) -> Rc {
    DMAPP_RC_NOT_SUPPORTED
}
