//! The access control table: PtlACEntry.  Entry 0 starts as "every process of this job
//! and user, any portal" (set by PtlNIInit); the others admit nobody until set.  The
//! check itself is the target side's (crate::service).

use crate::objects::Lib;
use crate::seg::AcRow;
use crate::status::{done, PResult};
use crate::types::*;

fn ac_entry(ni_handle: u32, ac_index: u32, match_id: ptl_process_id_t, user_id: u32, job_id: u32, pt_index: u32) -> PResult<()> {
    let n = Lib::ni(ni_handle)?;
    if ac_index > n.seg.lay.lim.ac {
        return Err(PTL_AC_INDEX_INVALID);
    }
    if pt_index != PTL_PT_INDEX_ANY && pt_index > n.seg.lay.lim.pt {
        return Err(PTL_PT_INDEX_INVALID);
    }
    if match_id.nid != PTL_NID_ANY && crate::ops::check_nid(&n, match_id.nid).is_err() {
        return Err(PTL_PROCESS_INVALID);
    }
    let g = n.seg.lock();
    let a = n.seg.ac(&g, ac_index).ok_or(PTL_AC_INDEX_INVALID)?;
    *a = AcRow { valid: 1, nid: match_id.nid, pid: match_id.pid, uid: user_id, jid: job_id, pt: pt_index, ..AcRow::default() };
    Ok(())
}

#[no_mangle]
pub extern "C" fn PtlACEntry(ni_handle: u32, ac_index: u32, match_id: ptl_process_id_t, user_id: u32, job_id: u32, pt_index: u32) -> i32 {
    done("PtlACEntry", ac_entry(ni_handle, ac_index, match_id, user_id, job_id, pt_index))
}
