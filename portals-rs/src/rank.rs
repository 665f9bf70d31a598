//! The rank runtime of `p3rt/p3rt.h`: PtlSetRank / PtlGetRank / PtlGetRankId, the NID/PID
//! map calls of the reference runtime and PtlSetJID, on the values of [`crate::runtime`]
//! (see p3rt.h for the rules).  Before PtlNIInit (any handle then names it) they set up
//! a pending runtime, kept for the next NI.

use crate::objects::Lib;
use crate::runtime::{discover, Runtime, JID_OVERRIDE, PENDING};
use crate::status::{done, PResult};
use crate::types::*;

/// Runs `f` on the runtime `ni` names: the NI's once it is initialised (its handle, or
/// PTL_INVALID_HANDLE), else the pending one, set up from the launcher (or PMI) when the
/// program has not set it.  `fresh`: `f` replaces it, no need to set it up first.
fn with_rt<R>(ni: u32, fresh: bool, f: impl FnOnce(&mut Runtime) -> PResult<R>) -> PResult<R> {
    if let Ok(n) = Lib::current() {
        if ni != n.handle && ni != PTL_INVALID_HANDLE {
            return Err(PTL_NI_INVALID);
        }
        let mut rt = n.rt.lock().unwrap_or_else(|e| e.into_inner());
        return f(&mut rt);
    }
    let mut p = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    let rt = match &mut *p {
        Some(rt) => rt,
        None if fresh => p.insert(Runtime { rank: 0, size: 0, nids: None, pids: None }),
        None => p.insert(Runtime::from_ids(&discover()?)),
    };
    let r = f(rt);
    if rt.size == 0 {
        // Nothing was set (a refused PtlSetRank): nothing pending.
        *p = None;
    }
    r
}

#[no_mangle]
pub extern "C" fn PtlSetRank(ni: u32, rank: u32, group_size: u32) -> i32 {
    let r = with_rt(ni, true, |rt| {
        if rank == u32::MAX && group_size == u32::MAX {
            *rt = Runtime::from_ids(&discover()?);
            return Ok(());
        }
        if group_size == 0 || rank >= group_size {
            return Err(PTL_FAIL);
        }
        *rt = Runtime { rank, size: group_size, nids: None, pids: None };
        Ok(())
    });
    done("PtlSetRank", r)
}

/// # Safety
/// `map` NULL or `group_size` readable entries.
unsafe fn read_map(map: *const u32, n: u32) -> PResult<Vec<u32>> {
    if map.is_null() {
        return Err(PTL_SEGV);
    }
    // SAFETY: the caller's array of n entries.
    Ok(unsafe { std::slice::from_raw_parts(map, n as usize) }.to_vec())
}

#[no_mangle]
pub unsafe extern "C" fn PtlSetNIDMap(ni: u32, map: *mut u32, group_size: u32) -> i32 {
    if map.is_null() {
        return done("PtlSetNIDMap", Err(PTL_SEGV));
    }
    let r = with_rt(ni, false, |rt| {
        if group_size != rt.size {
            return Err(PTL_FAIL);
        }
        // SAFETY: the caller's array.
        rt.nids = Some(unsafe { read_map(map, group_size)? });
        Ok(())
    });
    done("PtlSetNIDMap", r)
}

#[no_mangle]
pub unsafe extern "C" fn PtlSetPIDMap(ni: u32, map: *mut u32, group_size: u32) -> i32 {
    if map.is_null() {
        return done("PtlSetPIDMap", Err(PTL_SEGV));
    }
    let r = with_rt(ni, false, |rt| {
        if group_size != rt.size {
            return Err(PTL_FAIL);
        }
        // SAFETY: the caller's array.
        rt.pids = Some(unsafe { read_map(map, group_size)? });
        Ok(())
    });
    done("PtlSetPIDMap", r)
}

#[no_mangle]
pub unsafe extern "C" fn PtlGetRank(ni: u32, rank: *mut u32, group_size: *mut u32) -> i32 {
    if rank.is_null() || group_size.is_null() {
        return done("PtlGetRank", Err(PTL_SEGV));
    }
    let r = with_rt(ni, false, |rt| {
        // SAFETY: non-NULL out pointers.
        unsafe {
            rank.write_unaligned(rt.rank);
            group_size.write_unaligned(rt.size);
        }
        Ok(())
    });
    done("PtlGetRank", r)
}

#[no_mangle]
pub unsafe extern "C" fn PtlGetRankId(ni: u32, rank: u32, id: *mut ptl_process_id_t) -> i32 {
    if id.is_null() {
        return done("PtlGetRankId", Err(PTL_SEGV));
    }
    let r = with_rt(ni, false, |rt| {
        let (Some(n), Some(p)) = (&rt.nids, &rt.pids) else { return Err(PTL_FAIL) };
        let (Some(&nid), Some(&pid)) = (n.get(rank as usize), p.get(rank as usize)) else { return Err(PTL_FAIL) };
        // SAFETY: non-NULL out pointer.
        unsafe { id.write_unaligned(ptl_process_id_t { nid, pid }) };
        Ok(())
    });
    done("PtlGetRankId", r)
}

fn get_map(ni: u32, map: *mut u32, group_size: u32, pids: bool) -> PResult<()> {
    if map.is_null() {
        return Err(PTL_SEGV);
    }
    with_rt(ni, false, |rt| {
        let m = if pids { &rt.pids } else { &rt.nids };
        let m = m.as_ref().ok_or(PTL_FAIL)?;
        if group_size as usize != m.len() {
            return Err(PTL_FAIL);
        }
        // SAFETY: the caller's array of group_size entries (checked equal to m.len()).
        unsafe { std::ptr::copy_nonoverlapping(m.as_ptr(), map, m.len()) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PtlGetNIDMap(ni: u32, map: *mut u32, group_size: u32) -> i32 {
    done("PtlGetNIDMap", get_map(ni, map, group_size, false))
}

#[no_mangle]
pub unsafe extern "C" fn PtlGetPIDMap(ni: u32, map: *mut u32, group_size: u32) -> i32 {
    done("PtlGetPIDMap", get_map(ni, map, group_size, true))
}

/// Sets the job id of the next PtlNIInit (`PTL_FAIL` while an NI is initialised: a
/// process's job id is part of its address).
#[no_mangle]
pub extern "C" fn PtlSetJID(jid: u32) -> i32 {
    let r = if Lib::current().is_ok() {
        Err(PTL_FAIL)
    } else {
        *JID_OVERRIDE.lock().unwrap_or_else(|e| e.into_inner()) = Some(jid);
        Ok(())
    };
    done("PtlSetJID", r)
}
