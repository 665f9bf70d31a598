//! Communication domains, NIC attach, devices, versions and the privileged job calls.
//!
//! # The job model (digest sections 2 and 3.1)
//! - One emulated device, id 0 (`(uint32_t)-1` = "nearest" = 0); any other id is NO_MATCH.
//! - The NIC address is the first token of `PMI_GNI_LOC_ADDR` when set (snrun and PMI_Init
//!   set it to the node id), else the launcher's node id of this rank, else 0.  All
//!   processes of a node share it; instances are told apart by inst_id.
//! - **Job container check at CdmAttach.**  When `PMI_GNI_PTAG`/`PMI_GNI_COOKIE` are set
//!   (colon-separated lists, pairs taken position by position), a CDM may attach only with
//!   one of those (ptag, cookie) pairs or a pair this process added with GNI_ConfigureJob;
//!   anything else is GNI_RC_PERMISSION_ERROR (the driver's answer for a domain the job
//!   container does not hold).  Without those variables (no launcher) every pair attaches.
//! - Attaching publishes the instance in the node registry under (ptag, cookie, inst_id).
//!   A second live instance with the same triple on this machine is GNI_RC_INVALID_STATE.
//! - **Domains belong to one job.**  GNI_ConfigureJob and GNI_CdmAttach take (ptag, cookie)
//!   for the caller's job (the processes that share its secret) on this machine; while a
//!   process of another job holds the pair, both answer GNI_RC_PERMISSION_ERROR (the real
//!   driver lets only the workload manager configure a domain).
//! - GNI_ConfigureJob records an extra allowed (job_id, ptag, cookie) for this process.  The same ptag with another cookie, or
//!   with another job_id than an earlier ConfigureJob, is INVALID_STATE (the environment's
//!   pairs count with any job_id).  Limits are recorded and reported by GetJobResInfo.
//! - NTT programming (GNI_ConfigureNTT, the NTT part of GNI_ConfigureNTTandJob) is
//!   GNI_RC_PERMISSION_ERROR: it is privileged hardware setup and softnic translates no NTT
//!   indices (EpBind takes NIC addresses).  SuspendJob/ResumeJob: PERMISSION_ERROR too.
//! - GNI_CdmCheckpoint/GNI_CdmResume: GNI_RC_ILLEGAL_OP (no checkpoint/restart of NIC state).
//! - GNI_CdmDestroy detaches: the NIC handle becomes invalid, the registry entry is removed,
//!   the datagram board freed and the NIC's memory registrations ended.  Endpoints and CQs
//!   made through it remain valid handles for EpDestroy/CqDestroy; calls needing the
//!   NIC on them answer INVALID_PARAM.
//! - Device type: GNI_DEVICE_ARIES (we implement the Aries command set).

use crate::datagram::{instance_key, remote_instance_key, InstanceInfo};
use crate::handles::lock;
use crate::objects::*;
use crate::types::*;
use libc::{c_int, c_void};
use softnic_fabric::registry;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

/// Modes that exclude each other pairwise (at most one bit of each group).
const EXCLUSIVE: &[u32] = &[
    (GNI_CDM_MODE_FORK_NOCOPY | GNI_CDM_MODE_FORK_FULLCOPY | GNI_CDM_MODE_FORK_PARTCOPY) as u32,
    (GNI_CDM_MODE_ERR_NO_KILL | GNI_CDM_MODE_ERR_ALL_KILL) as u32,
    (GNI_CDM_MODE_MDD_DEDICATED | GNI_CDM_MODE_MDD_SHARED) as u32,
    (GNI_CDM_MODE_FMA_DEDICATED | GNI_CDM_MODE_FMA_SHARED) as u32,
    (GNI_CDM_MODE_DLA_ENABLE_FORWARDING | GNI_CDM_MODE_DLA_DISABLE_FORWARDING) as u32,
];

/// Checks CdmCreate modes: no privileged bits, at most one of each exclusive group.
pub fn modes_valid(modes: u32) -> bool {
    if modes & GNI_CDM_MODE_PRIV_MASK as u32 != 0 {
        return false;
    }
    EXCLUSIVE.iter().all(|g| (modes & g).count_ones() <= 1)
}

/// Colon-separated decimal list from the environment (read at call time: PMI_Init may
/// set these after the library was loaded).
fn env_list(name: &str) -> Option<Vec<u64>> {
    let v = std::env::var(name).ok()?;
    Some(v.split(':').filter_map(|t| t.trim().parse::<u64>().ok()).collect())
}

struct JobEntry {
    job_id: Option<u64>,
    ptag: u8,
    cookie: u32,
    limits: Option<gni_job_limits_t>,
}

static JOBS: Mutex<Vec<JobEntry>> = Mutex::new(Vec::new());

/// The environment's (ptag, cookie) pairs; None when the job gives none.
fn env_domains() -> Option<Vec<(u8, u32)>> {
    let p = env_list("PMI_GNI_PTAG")?;
    let c = env_list("PMI_GNI_COOKIE")?;
    Some(p.iter().zip(c.iter()).map(|(&p, &c)| (p as u8, c as u32)).collect())
}

/// May a CDM of (ptag, cookie) attach here?
pub fn domain_allowed(ptag: u8, cookie: u32) -> bool {
    let Some(envd) = env_domains() else { return true };
    envd.contains(&(ptag, cookie)) || lock(&JOBS).iter().any(|j| j.ptag == ptag && j.cookie == cookie)
}

/// Our emulated NIC address.
pub fn nic_address() -> u32 {
    if let Some(l) = env_list("PMI_GNI_LOC_ADDR") {
        if let Some(&a) = l.first() {
            return a as u32;
        }
    }
    softnic_fabric::bootstrap::rank().and_then(softnic_fabric::bootstrap::node_id).unwrap_or(0)
}

fn device_ok(dev: u32) -> bool {
    dev == 0 || dev == u32::MAX
}

unsafe fn put<T>(p: *mut T, v: T) {
    // SAFETY: callers check p non-NULL; caller's contract for validity.
    unsafe { p.write(v) }
}

#[no_mangle]
pub unsafe extern "C" fn GNI_CdmCreate(inst_id: u32, ptag: u8, cookie: u32, modes: u32, cdm_hndl: *mut gni_cdm_handle_t) -> gni_return_t {
    if cdm_hndl.is_null() || !modes_valid(modes) {
        softnic_fabric::sn_debug!("GNI_CdmCreate", "invalid modes {:#x} or NULL handle pointer", modes);
        return GNI_RC_INVALID_PARAM;
    }
    let cdm = Arc::new(Cdm { inst_id, ptag, cookie, modes, pd: pd_key(ptag, cookie), nic: Mutex::new(None) });
    let h = CDMS.insert(cdm);
    softnic_fabric::check::at_exit(crate::objects::check_at_exit);
    softnic_fabric::sn_debug!("GNI_CdmCreate", "inst {} ptag {} cookie {:#x} modes {:#x} -> {:p}", inst_id, ptag, cookie, modes, h);
    // SAFETY: checked non-NULL.
    unsafe { put(cdm_hndl, h as gni_cdm_handle_t) };
    GNI_RC_SUCCESS
}

/// Detaches a NIC: unpublish, end registrations, mark detached (handle removed by caller).
fn detach(nic: &Nic) {
    nic.detached.store(true, std::sync::atomic::Ordering::Release);
    let _ = registry::unpublish(nic.published);
    crate::memreg::deregister_all(nic);
}

#[no_mangle]
pub unsafe extern "C" fn GNI_CdmDestroy(cdm_hndl: gni_cdm_handle_t) -> gni_return_t {
    let Ok(cdm) = CDMS.remove(cdm_hndl as *const c_void) else { return GNI_RC_INVALID_PARAM };
    if let Some(nh) = lock(&cdm.nic).take() {
        if let Ok(nic) = NICS.remove(nh) {
            detach(&nic);
        }
    }
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_CdmAttach(cdm_hndl: gni_cdm_handle_t, device_id: u32, local_addr: *mut u32, nic_hndl: *mut gni_nic_handle_t) -> gni_return_t {
    let Ok(cdm) = CDMS.get(cdm_hndl as *const c_void) else { return GNI_RC_INVALID_PARAM };
    if local_addr.is_null() || nic_hndl.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    if !device_ok(device_id) {
        return GNI_RC_NO_MATCH;
    }
    let mut slot = lock(&cdm.nic);
    if slot.is_some() {
        return GNI_RC_INVALID_STATE;
    }
    if !domain_allowed(cdm.ptag, cdm.cookie) {
        softnic_fabric::sn_warn!(
            "GNI_CdmAttach",
            "(ptag {}, cookie {:#x}) is not a domain of this job (PMI_GNI_PTAG/PMI_GNI_COOKIE) and was not added by GNI_ConfigureJob",
            cdm.ptag,
            cdm.cookie
        );
        return GNI_RC_PERMISSION_ERROR;
    }
    if let Err(rc) = hold_domain("GNI_CdmAttach", cdm.ptag, cdm.cookie) {
        return rc;
    }
    let address = nic_address();
    let Ok(node) = softnic_fabric::node::get() else { return GNI_RC_ERROR_RESOURCE };
    let me = node.peer_ref();
    // Peers check that a transaction addressed to this NIC address reaches a process here.
    node.set_node_addr(address);
    let board = match crate::datagram::Board::new(address, cdm.inst_id, cdm.ptag, cdm.cookie) {
        Ok(b) => b,
        Err(rc) => return rc,
    };
    let info = InstanceInfo { peer: me, dgram_board: board.loc, nic_addr: address };
    let key = instance_key(cdm.ptag, cdm.cookie, cdm.inst_id);
    let published = match registry::publish(registry::api::UGNI, &key, &info.to_payload()) {
        Ok(id) => id,
        Err(softnic_fabric::Error::Exists) => {
            softnic_fabric::sn_warn!("GNI_CdmAttach", "inst_id {} is already attached in (ptag {}, cookie {:#x}) on this machine", cdm.inst_id, cdm.ptag, cdm.cookie);
            return GNI_RC_INVALID_STATE;
        }
        Err(softnic_fabric::Error::NoSpace) => return GNI_RC_ERROR_RESOURCE,
        Err(_) => return GNI_RC_ERROR_RESOURCE,
    };
    // Instances on other nodes find our board through the job's KVS.
    if softnic_fabric::net::running().is_some() {
        let id = node.proc_id();
        let w = board.loc.to_words();
        let rec: Vec<u8> = [address as u64, id.slot as u64 | ((id.gen as u64) << 32), w[0], w[1], w[2]].iter().flat_map(|v| v.to_le_bytes()).collect();
        if let Err(e) = softnic_fabric::bootstrap::kvs_put_global(&remote_instance_key(cdm.ptag, cdm.cookie, cdm.inst_id), &rec) {
            softnic_fabric::sn_warn!("GNI_CdmAttach", "instance not published for other nodes: {}", e);
        }
    }
    let nic = Arc::new(Nic {
        cdm: cdm.clone(),
        device_id: 0,
        address,
        published,
        dgram: board,
        detached: AtomicBool::new(false),
        regs: Mutex::new(Default::default()),
        mdd: Mutex::new(Default::default()),
    });
    let h = NICS.insert(nic);
    *slot = Some(h);
    softnic_fabric::sn_debug!("GNI_CdmAttach", "inst {} attached at address {} -> nic {:p}", cdm.inst_id, address, h);
    // SAFETY: checked non-NULL.
    unsafe {
        put(local_addr, address);
        put(nic_hndl, h as gni_nic_handle_t);
    }
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_CdmGetNicAddress(device_id: u32, address: *mut u32, cpu_id: *mut u32) -> gni_return_t {
    if address.is_null() || cpu_id.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    if !device_ok(device_id) {
        return GNI_RC_NO_MATCH;
    }
    // SAFETY: checked non-NULL.
    unsafe {
        put(address, nic_address());
        put(cpu_id, 0);
    }
    GNI_RC_SUCCESS
}

/// Checkpoint/restart of NIC state is not emulated.
#[no_mangle]
pub unsafe extern "C" fn GNI_CdmCheckpoint(cdm_handle: gni_cdm_handle_t) -> gni_return_t {
    if CDMS.get(cdm_handle as *const c_void).is_err() {
        return GNI_RC_INVALID_PARAM;
    }
    softnic_fabric::sn_warn!("GNI_CdmCheckpoint", "checkpoint/restart of the NIC context is not emulated");
    GNI_RC_ILLEGAL_OP
}

#[no_mangle]
pub unsafe extern "C" fn GNI_CdmResume(cdm_handle: gni_cdm_handle_t) -> gni_return_t {
    if CDMS.get(cdm_handle as *const c_void).is_err() {
        return GNI_RC_INVALID_PARAM;
    }
    softnic_fabric::sn_warn!("GNI_CdmResume", "checkpoint/restart of the NIC context is not emulated");
    GNI_RC_ILLEGAL_OP
}

#[no_mangle]
pub unsafe extern "C" fn GNI_SuspendJob(device_id: u32, _job_id: u64, _ptag: u8, _cookie: u32, _timeout: u32) -> gni_return_t {
    if !device_ok(device_id) {
        return GNI_RC_NO_MATCH;
    }
    GNI_RC_PERMISSION_ERROR
}

#[no_mangle]
pub unsafe extern "C" fn GNI_ResumeJob(device_id: u32, _job_id: u64, _ptag: u8, _cookie: u32) -> gni_return_t {
    if !device_ok(device_id) {
        return GNI_RC_NO_MATCH;
    }
    GNI_RC_PERMISSION_ERROR
}

/// Takes (ptag, cookie) for this job on this machine, or refuses it (PERMISSION_ERROR) while
/// processes of another job hold it: the domain belongs to the first job whose process
/// configures or attaches it, until the last of its processes that did so exits (see the
/// top comment of gni_pub.h).
fn hold_domain(call: &str, ptag: u8, cookie: u32) -> Result<(), gni_return_t> {
    let mut key = [0u8; 5];
    key[0] = ptag;
    key[1..].copy_from_slice(&cookie.to_le_bytes());
    match registry::claim(registry::api::UGNI_DOMAIN, &key) {
        Ok(_) => Ok(()),
        Err(softnic_fabric::Error::Permission) => {
            softnic_fabric::sn_warn!(call, "(ptag {}, cookie {:#x}) belongs to another job on this machine", ptag, cookie);
            Err(GNI_RC_PERMISSION_ERROR)
        }
        Err(e) => {
            softnic_fabric::sn_warn!(call, "cannot hold (ptag {}, cookie {:#x}) for this job: {}", ptag, cookie, e);
            Err(GNI_RC_ERROR_RESOURCE)
        }
    }
}

fn configure_job(device_id: u32, job_id: u64, ptag: u8, cookie: u32, limits: *mut gni_job_limits_t) -> gni_return_t {
    if !device_ok(device_id) {
        return GNI_RC_NO_MATCH;
    }
    let envd = env_domains().unwrap_or_default();
    if envd.iter().any(|&(p, c)| p == ptag && c != cookie) {
        return GNI_RC_INVALID_STATE;
    }
    let mut jobs = lock(&JOBS);
    if jobs.iter().any(|j| j.ptag == ptag && (j.cookie != cookie || j.job_id.map_or(false, |id| id != job_id))) {
        return GNI_RC_INVALID_STATE;
    }
    if let Err(rc) = hold_domain("GNI_ConfigureJob", ptag, cookie) {
        return rc;
    }
    // SAFETY: NULL or the caller's struct.
    let lim = unsafe { limits.as_ref() }.copied();
    match jobs.iter_mut().find(|j| j.ptag == ptag && j.cookie == cookie) {
        Some(j) => {
            if lim.is_some() {
                j.limits = lim;
            }
        }
        None => jobs.push(JobEntry { job_id: Some(job_id), ptag, cookie, limits: lim }),
    }
    softnic_fabric::sn_debug!("GNI_ConfigureJob", "job {} ptag {} cookie {:#x} allowed in this process", job_id, ptag, cookie);
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_ConfigureJob(device_id: u32, job_id: u64, ptag: u8, cookie: u32, limits: *mut gni_job_limits_t) -> gni_return_t {
    configure_job(device_id, job_id, ptag, cookie, limits)
}

#[no_mangle]
pub unsafe extern "C" fn GNI_ConfigureNTT(device_id: c_int, ntt_desc: *mut gni_ntt_descriptor_t, ntt_base: *mut u32) -> gni_return_t {
    if !device_ok(device_id as u32) {
        return GNI_RC_NO_MATCH;
    }
    if ntt_desc.is_null() || ntt_base.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    softnic_fabric::sn_warn!("GNI_ConfigureNTT", "NTT programming is privileged; softnic translates no NTT indices");
    GNI_RC_PERMISSION_ERROR
}

#[no_mangle]
pub unsafe extern "C" fn GNI_ConfigureNTTandJob(
    device_id: c_int,
    job_id: u64,
    ptag: u8,
    cookie: u32,
    limits: *mut gni_job_limits_t,
    ntt_desc: *mut gni_ntt_descriptor_t,
    ntt_base: *mut u32,
) -> gni_return_t {
    // SAFETY: NULL or the caller's descriptor.
    let wants_ntt = unsafe { ntt_desc.as_ref() }.map_or(false, |d| d.group_size != 0);
    if wants_ntt {
        // SAFETY: forwarded.
        return unsafe { GNI_ConfigureNTT(device_id, ntt_desc, ntt_base) };
    }
    configure_job(device_id as u32, job_id, ptag, cookie, limits)
}

#[no_mangle]
pub unsafe extern "C" fn GNI_GetVersion(version: *mut u32) -> gni_return_t {
    if version.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    // SAFETY: checked non-NULL.
    unsafe { put(version, GNI_VERSION as u32) };
    GNI_RC_SUCCESS
}

fn fill_str(dst: &mut [libc::c_char], s: &str) {
    let n = s.len().min(dst.len() - 1);
    for (d, b) in dst.iter_mut().zip(s.bytes().take(n)) {
        *d = b as libc::c_char;
    }
    dst[n] = 0;
}

/// ugni and kgni versions are both GNI_VERSION (there is no separate driver); the build
/// strings name softnic and its version.
#[no_mangle]
pub unsafe extern "C" fn GNI_GetVersionInformation(version_info: *mut gni_version_info_t) -> gni_return_t {
    // SAFETY: NULL or the caller's struct.
    let Some(v) = (unsafe { version_info.as_mut() }) else { return GNI_RC_INVALID_PARAM };
    v.ugni_version = GNI_VERSION as u32;
    v.ugni_svn_revision = 0;
    fill_str(&mut v.ugni_build_string, concat!("softnic libugni ", env!("CARGO_PKG_VERSION")));
    v.kgni_version = GNI_VERSION as u32;
    v.kgni_svn_revision = 0;
    fill_str(&mut v.kgni_build_string, concat!("softnic node fabric ", env!("CARGO_PKG_VERSION")));
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_GetNumLocalDevices(num_devices: *mut c_int) -> gni_return_t {
    if num_devices.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    // SAFETY: checked non-NULL.
    unsafe { put(num_devices, 1) };
    GNI_RC_SUCCESS
}

/// Writes device 0; `len < 1` or NULL is INVALID_PARAM; entries past the first are left alone.
#[no_mangle]
pub unsafe extern "C" fn GNI_GetLocalDeviceIds(len: c_int, device_ids: *mut c_int) -> gni_return_t {
    if len < 1 || device_ids.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    // SAFETY: checked non-NULL, len >= 1.
    unsafe { put(device_ids, 0) };
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_GetDeviceType(dev_type: *mut gni_nic_device_t) -> gni_return_t {
    if dev_type.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    // SAFETY: checked non-NULL.
    unsafe { put(dev_type, GNI_DEVICE_ARIES) };
    GNI_RC_SUCCESS
}

/// Device resources: MDD = registration rows per process, CQ/FMA = what one process may
/// create (not enforced beyond memory), others 0.
#[no_mangle]
pub unsafe extern "C" fn GNI_GetDevResInfo(device_id: u32, res_type: gni_dev_res_t, res_desc: *mut gni_dev_res_desc_t) -> gni_return_t {
    if !device_ok(device_id) {
        return GNI_RC_NO_MATCH;
    }
    if res_desc.is_null() || res_type == 0 || res_type >= 7 {
        return GNI_RC_INVALID_PARAM;
    }
    let total: u64 = match res_type {
        1 => softnic_fabric::node::NREG as u64, // MDD
        3 => 1 << 16,                            // CQ
        4 => 1 << 16,                            // FMA
        _ => 0,
    };
    // SAFETY: checked non-NULL.
    unsafe { put(res_desc, gni_dev_res_desc_t { available: total, reserved: 0, held: 0, total }) };
    GNI_RC_SUCCESS
}

/// Job resources: MDD used = this process's registrations in the ptag's domains; limits
/// from GNI_ConfigureJob (GNI_JOB_INVALID_LIMIT or none = u64::MAX).
#[no_mangle]
pub unsafe extern "C" fn GNI_GetJobResInfo(device_id: u32, ptag: u8, res_type: gni_job_res_t, res_desc: *mut gni_job_res_desc_t) -> gni_return_t {
    if !device_ok(device_id) {
        return GNI_RC_NO_MATCH;
    }
    if res_desc.is_null() || res_type == 0 || res_type >= 11 {
        return GNI_RC_INVALID_PARAM;
    }
    let lim = lock(&JOBS).iter().find(|j| j.ptag == ptag).and_then(|j| j.limits);
    let limit = |v: i32| if v < 0 { u64::MAX } else { v as u64 };
    let (used, limit) = match (res_type, lim) {
        (1, l) => (crate::memreg::count_for_ptag(ptag), l.map_or(u64::MAX, |l| limit(l.mdd_limit))),
        (5, l) => (0, l.map_or(u64::MAX, |l| limit(l.cq_limit))),
        (6, l) => (0, l.map_or(u64::MAX, |l| limit(l.fma_limit))),
        (7, l) => (0, l.map_or(u64::MAX, |l| limit(l.bte_limit))),
        _ => (0, u64::MAX),
    };
    // SAFETY: checked non-NULL.
    unsafe { put(res_desc, gni_job_res_desc_t { used, limit }) };
    GNI_RC_SUCCESS
}

/// No NTT is emulated: granularity 1 (one entry per node).
#[no_mangle]
pub unsafe extern "C" fn GNI_GetNttGran(device_id: u32, ntt_gran: *mut u32) -> gni_return_t {
    if !device_ok(device_id) {
        return GNI_RC_NO_MATCH;
    }
    if ntt_gran.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    // SAFETY: checked non-NULL.
    unsafe { put(ntt_gran, 1) };
    GNI_RC_SUCCESS
}

/// The ptag that goes with `cookie` in this job (environment pairs, then ConfigureJob);
/// NO_MATCH when none.
#[no_mangle]
pub unsafe extern "C" fn GNI_GetPtag(device_id: u32, cookie: u32, ptag: *mut u8) -> gni_return_t {
    if !device_ok(device_id) {
        return GNI_RC_NO_MATCH;
    }
    if ptag.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    let found = env_domains()
        .unwrap_or_default()
        .into_iter()
        .find(|&(_, c)| c == cookie)
        .map(|(p, _)| p)
        .or_else(|| lock(&JOBS).iter().find(|j| j.cookie == cookie).map(|j| j.ptag));
    match found {
        Some(p) => {
            // SAFETY: checked non-NULL.
            unsafe { put(ptag, p) };
            GNI_RC_SUCCESS
        }
        None => GNI_RC_NO_MATCH,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_exclusive_groups() {
        assert!(modes_valid(0));
        assert!(modes_valid(GNI_CDM_MODE_FORK_NOCOPY as u32 | GNI_CDM_MODE_ERR_NO_KILL as u32));
        assert!(!modes_valid(GNI_CDM_MODE_FORK_NOCOPY as u32 | GNI_CDM_MODE_FORK_FULLCOPY as u32));
        assert!(!modes_valid(GNI_CDM_MODE_ERR_NO_KILL as u32 | GNI_CDM_MODE_ERR_ALL_KILL as u32));
        assert!(!modes_valid(0x8000_0000));
    }
}
