//! Process identity and the rank runtime of `p3rt/p3rt.h`.
//!
//! **Ids.**  A process's (nid, pid) and job id come from the launcher's environment
//! (`PTL_MY_RID`, `PTL_NIDMAP`, `PTL_PIDMAP`, `PTL_MY_JID`; snrun sets them), else from
//! PMI through `fabric::bootstrap` (a program under MPICH's mpiexec, or a singleton): the
//! NID is the PMI node of the rank (the fabric's node, so the engines route by it), the
//! PID the rank's index among the ranks of its node, the job id a hash of the PMI job
//! name.  snrun's variables hold exactly those values.
//!
//! **Runtime.**  PtlSetRank / PtlGetRank / PtlGetRankId and the NID/PID map calls of the
//! reference runtime, on the values above (see p3rt.h for the rules).  Before PtlNIInit
//! (any handle then names it) they set up a pending runtime, kept for the next NI:
//! PtlNIInit(PTL_PID_ANY) takes its pid from the PID map entry of its rank.

use crate::ni::Lib;
use crate::status::{done, PResult};
use crate::types::*;
use std::sync::Mutex;

/// What the launcher (or PMI) says about the job.
#[derive(Clone, Debug)]
pub struct Ids {
    pub rank: u32,
    pub nids: Vec<u32>,
    pub pids: Vec<u32>,
    pub jid: u32,
}

impl Ids {
    pub fn my_nid(&self) -> u32 {
        self.nids.get(self.rank as usize).copied().unwrap_or(0)
    }
    pub fn my_pid(&self) -> u32 {
        self.pids.get(self.rank as usize).copied().unwrap_or(0)
    }
}

/// The job id of a PMI job name: the same number snrun puts in PTL_MY_JID (derived from
/// the job's uGNI credentials, which both compute from the name); never PTL_JID_ANY.
pub fn jid_of(kvsname: &str) -> u32 {
    let (ptag, cookie) = softnic_fabric::bootstrap::gni_credentials(kvsname);
    ((ptag as u32) << 16) | (cookie >> 16)
}

/// `strtoul(s, 0)`: decimal, 0x-hex or 0-octal; the whole field must be a number.
fn parse_num(s: &str) -> Option<u32> {
    let s = s.trim();
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()?
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()?
    } else {
        s.parse::<u64>().ok()?
    };
    u32::try_from(v).ok()
}

/// A colon-separated list (empty fields skipped).
fn parse_map(s: &str) -> Option<Vec<u32>> {
    s.split(':').filter(|f| !f.trim().is_empty()).map(parse_num).collect()
}

/// The environment's view, `Err(PTL_NO_INIT)` without PTL_MY_RID, `Err(PTL_FAIL)` when
/// the variables are malformed or disagree.
fn from_env() -> PResult<Ids> {
    let rid = std::env::var("PTL_MY_RID").map_err(|_| PTL_NO_INIT)?;
    let rank = parse_num(&rid).ok_or(PTL_FAIL)?;
    let nids = parse_map(&std::env::var("PTL_NIDMAP").map_err(|_| PTL_FAIL)?).ok_or(PTL_FAIL)?;
    let pids = parse_map(&std::env::var("PTL_PIDMAP").map_err(|_| PTL_FAIL)?).ok_or(PTL_FAIL)?;
    if nids.is_empty() || nids.len() != pids.len() || rank as usize >= nids.len() {
        return Err(PTL_FAIL);
    }
    let jid = match std::env::var("PTL_MY_JID") {
        Ok(j) => parse_num(&j).ok_or(PTL_FAIL)?,
        Err(_) => PTL_JID_ANY,
    };
    Ok(Ids { rank, nids, pids, jid })
}

/// The PMI view (a singleton when no launcher is there).
fn from_pmi() -> PResult<Ids> {
    use softnic_fabric::bootstrap as b;
    let rank = b::rank().map_err(|_| PTL_NO_INIT)?;
    let size = b::size().map_err(|_| PTL_NO_INIT)?;
    let mut nids = Vec::with_capacity(size as usize);
    for r in 0..size {
        nids.push(b::node_id(r).map_err(|_| PTL_NO_INIT)?);
    }
    let pids = (0..size as usize).map(|r| nids[..r].iter().filter(|&&n| n == nids[r]).count() as u32).collect();
    let jid = jid_of(&b::job_id().map_err(|_| PTL_NO_INIT)?);
    Ok(Ids { rank, nids, pids, jid })
}

/// The ids of this process's job: the environment when it names a rank, else PMI.
pub fn discover() -> PResult<Ids> {
    match from_env() {
        Ok(ids) => Ok(ids),
        Err(PTL_NO_INIT) => from_pmi(),
        Err(e) => {
            softnic_fabric::sn_warn!("Portals", "PTL_MY_RID/PTL_NIDMAP/PTL_PIDMAP are malformed; taking the ids from PMI");
            from_pmi().map_err(|_| e)
        }
    }
}

static JID_OVERRIDE: Mutex<Option<u32>> = Mutex::new(None);

/// The job id set by PtlSetJID, if any.
pub fn jid_override() -> Option<u32> {
    *JID_OVERRIDE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The runtime's state (per NI).
#[derive(Clone, Debug)]
pub struct Runtime {
    rank: u32,
    size: u32,
    nids: Option<Vec<u32>>,
    pids: Option<Vec<u32>>,
}

impl Runtime {
    pub fn from_ids(ids: &Ids) -> Runtime {
        Runtime { rank: ids.rank, size: ids.nids.len() as u32, nids: Some(ids.nids.clone()), pids: Some(ids.pids.clone()) }
    }

    /// This rank's entry of the PID map, if set.
    pub fn my_pid(&self) -> Option<u32> {
        self.pids.as_ref()?.get(self.rank as usize).copied()
    }

    /// This rank's entry of the NID map, if set.
    pub fn my_nid(&self) -> Option<u32> {
        self.nids.as_ref()?.get(self.rank as usize).copied()
    }

    /// Does some rank of the maps have process id `id`?
    pub fn names(&self, id: ptl_process_id_t) -> bool {
        let (Some(n), Some(p)) = (&self.nids, &self.pids) else { return false };
        n.iter().zip(p).any(|(&nid, &pid)| nid == id.nid && pid == id.pid)
    }
}

/// The runtime set up before PtlNIInit, for the next NI.
static PENDING: Mutex<Option<Runtime>> = Mutex::new(None);

/// The pending runtime (PtlNIInit's).
pub fn pending() -> Option<Runtime> {
    PENDING.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Forgets the pending runtime (an NI took it).
pub fn clear_pending() {
    *PENDING.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_maps_parse_like_strtoul() {
        assert_eq!(parse_num("12"), Some(12));
        assert_eq!(parse_num("0x1f"), Some(31));
        assert_eq!(parse_num("017"), Some(15));
        assert_eq!(parse_num("0"), Some(0));
        assert_eq!(parse_num("x"), None);
        assert_eq!(parse_map("0:1::2:"), Some(vec![0, 1, 2]));
        assert_eq!(parse_map("0:a"), None);
        assert_ne!(jid_of("kvs_1_0"), PTL_JID_ANY);
        assert_eq!(jid_of("kvs_1_0"), jid_of("kvs_1_0"));
    }
}
