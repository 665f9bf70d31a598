//! The functions of the fact sheet that this library does not implement.  Each
//! returns `DMAPP_RC_NOT_SUPPORTED` without side effects; nothing else in the
//! library does.  Reasons:
//!
//! - `dmapp_checkpoint`, `dmapp_restart`: checkpoint/restart of a job needs the
//!   launcher's cooperation (BLCR on Cray systems); neither snrun nor the node fabric
//!   can save and restore shared mappings and peers' cached handles.

use crate::types::*;

#[no_mangle]
pub extern "C" fn dmapp_checkpoint() -> Rc {
    DMAPP_RC_NOT_SUPPORTED
}
#[no_mangle]
pub extern "C" fn dmapp_restart(_restart_modes: u32) -> Rc {
    DMAPP_RC_NOT_SUPPORTED
}
