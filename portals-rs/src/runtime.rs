//! Process identity and the state of the rank runtime of `p3rt/p3rt.h` (its calls are in
//! [`crate::rank`]); the job's protection key ([`pd`]) and the random values that tell
//! NI instances and processes apart ([`random_u64`]).
//!
//! **Ids.**  A process's (nid, pid) and job id come from the launcher's environment
//! (`PTL_MY_RID`, `PTL_NIDMAP`, `PTL_PIDMAP`, `PTL_MY_JID`; snrun sets them), else from
//! PMI through `fabric::bootstrap` (a program under MPICH's mpiexec, or a singleton): the
//! NID is the PMI node of the rank (the fabric's node, so the engines route by it), the
//! PID the rank's index among the ranks of its node, the job id a hash of the PMI job
//! name.  snrun's variables hold exactly those values.
//!
//! **Runtime.**  The rank, group size and NID/PID maps the runtime calls set and read
//! ([`Runtime`]): an NI's, or, before PtlNIInit, a pending one kept for the next NI:
//! PtlNIInit(PTL_PID_ANY) takes its pid from the PID map entry of its rank.

use crate::status::PResult;
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

/// The job id PtlSetJID set for the next PtlNIInit.
pub(crate) static JID_OVERRIDE: Mutex<Option<u32>> = Mutex::new(None);

/// The job id set by PtlSetJID, if any.
pub fn jid_override() -> Option<u32> {
    *JID_OVERRIDE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The runtime's state (per NI).
#[derive(Clone, Debug)]
pub struct Runtime {
    pub(crate) rank: u32,
    /// The group size; 0 while nothing is set.
    pub(crate) size: u32,
    pub(crate) nids: Option<Vec<u32>>,
    pub(crate) pids: Option<Vec<u32>>,
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
pub(crate) static PENDING: Mutex<Option<Runtime>> = Mutex::new(None);

/// The pending runtime (PtlNIInit's).
pub fn pending() -> Option<Runtime> {
    PENDING.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Forgets the pending runtime (an NI took it).
pub fn clear_pending() {
    *PENDING.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// Protection-domain key of Portals registrations: the job's, derived from the job secret.
pub fn pd() -> u64 {
    static PD: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *PD.get_or_init(|| softnic_fabric::bootstrap::protection_key("portals"))
}

/// A random 64-bit value (NI instances, the process nonce).
pub fn random_u64() -> u64 {
    let mut v = 0u64;
    // SAFETY: writes 8 bytes into v.
    let n = unsafe { libc::getrandom(&mut v as *mut u64 as *mut libc::c_void, 8, 0) };
    if n != 8 {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: a valid out pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        v = (ts.tv_nsec as u64) ^ ((std::process::id() as u64) << 32) ^ (ts.tv_sec as u64).rotate_left(17);
    }
    v | 1
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
