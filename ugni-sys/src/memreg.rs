//! Memory registration: GNI_MemRegister, GNI_MemRegisterSegments, GNI_MemDeregister,
//! GNI_SetMddResources, GNI_MemHndlQueryAttr, GNI_RebuildMemHndl, GNI_MemQueryHndls.
//!
//! A registration is a fabric registration (`mem::register`) in the protection domain
//! `pd_key(ptag, cookie)` of the NIC's CDM; the handle is the fabric's `CrayHandle`
//! (qword1 = the registered address, qword2 = the registration key), shared with DMAPP.
//! Peers validate every access against the registration row (bounds, READ_ONLY,
//! generation, domain), so deregistered or forged handles fail at the initiator.
//!
//! With a dst_cq the registration's notify ring is the CQ's ring (`mem::set_notify`):
//! peers post REMOTE events there; the CQ counts the registration as a user until
//! deregistration (CqDestroy answers ERROR_RESOURCE meanwhile).
//!
//! # Decisions
//! - Accepted flags: every `GNI_MEM_*` flag of the header.  READ_ONLY selects read-only
//!   remote access; the ordering/translation flags (GART, PI ordering/flush, PHYS_*, MDD_*,
//!   RELAXED_PI_ORDERING, CUDA, RESERVE/UPDATE_REGION) are accepted and change nothing.
//!   Unknown bits are INVALID_PARAM.
//! - READWRITE on pages the process itself cannot write: PERMISSION_ERROR.  Address 0, a
//!   range not fully mapped, or length 0: INVALID_PARAM.  Registration table full:
//!   ERROR_RESOURCE.
//! - vMDH: GNI_SetMddResources sizes a per-NIC block; GNI_MEM_USE_VMDH takes entry
//!   `vmdh_index` (`(uint32_t)-1` = next free) and fails with ERROR_RESOURCE when no block
//!   was set up, the entry is in use or none is free; an index past the block is
//!   INVALID_PARAM.  The handle returned is an ordinary per-process handle: the symmetric
//!   property (one handle value addressing every peer's vMDH entry) is NOT emulated, so
//!   programs must still exchange handles (GNI_RebuildMemHndl answers ILLEGAL_OP).
//!   SetMddResources may resize the block only while no entry is in use (else
//!   INVALID_PARAM).
//! - GNI_MemRegisterSegments with one segment registers it like GNI_MemRegister (virtual
//!   addresses).  With several segments it answers GNI_RC_ILLEGAL_OP: offset addressing
//!   across discontiguous segments needs target-side translation the engine lacks.
//!   Zero segments, a NULL list or a zero-length segment is INVALID_PARAM first.
//! - GNI_MemDeregister of a handle this NIC did not register (never, already
//!   deregistered, another NIC's, forged) is INVALID_PARAM.  The caller's handle is left
//!   as is; it is stale from now on.
//! - GNI_MemQueryHndls (walking the registrations of a device file descriptor for
//!   checkpointing) answers ILLEGAL_OP: there is no device file.

use crate::objects::*;
use crate::types::*;
use libc::{c_int, c_void};
use softnic_fabric::mem::{self, Access, CrayHandle, MemKey};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

/// What a NIC remembers about one of its registrations.
pub struct RegInfo {
    pub dst_cq: Option<Arc<Cq>>,
    pub vmdh: Option<u32>,
    pub read_only: bool,
}

/// The vMDH block of a NIC.
#[derive(Default)]
pub struct Mdd {
    pub size: u32,
    pub used: HashSet<u32>,
}

const KNOWN_FLAGS: u32 = (GNI_MEM_READ_ONLY
    | GNI_MEM_USE_VMDH
    | GNI_MEM_USE_GART
    | GNI_MEM_PHYS_CONT
    | GNI_MEM_PHYS_SEGMENTS
    | GNI_MEM_STRICT_PI_ORDERING
    | GNI_MEM_PI_FLUSH
    | GNI_MEM_MDD_CLONE
    | GNI_MEM_RELAXED_PI_ORDERING
    | GNI_MEM_RESERVE_REGION
    | GNI_MEM_UPDATE_REGION
    | GNI_MEM_MDD_SHARED
    | GNI_MEM_MDD_DEDICATED
    | GNI_MEM_CUDA) as u32;

/// Registrations per ptag in this process (GNI_GetJobResInfo).
static PER_PTAG: Mutex<Option<HashMap<u8, u64>>> = Mutex::new(None);
/// Keys registered with GNI_MEM_USE_VMDH (GNI_MemHndlQueryAttr).
static VMDH_KEYS: Mutex<Option<HashSet<u64>>> = Mutex::new(None);

pub fn count_for_ptag(ptag: u8) -> u64 {
    lock(&PER_PTAG).as_ref().and_then(|m| m.get(&ptag).copied()).unwrap_or(0)
}

fn bump_ptag(ptag: u8, up: bool) {
    let mut g = lock(&PER_PTAG);
    let m = g.get_or_insert_with(HashMap::new);
    let c = m.entry(ptag).or_insert(0);
    *c = if up { *c + 1 } else { c.saturating_sub(1) };
}

/// Whether [addr, addr+len) is all mapped writable (None: some page is not mapped).
fn range_writable(addr: u64, len: u64) -> Option<bool> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let end = addr.checked_add(len)?;
    let mut cur = addr;
    let mut writable = true;
    let mut spans: Vec<(u64, u64, bool)> = maps
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let range = it.next()?;
            let perms = it.next()?;
            let (a, b) = range.split_once('-')?;
            Some((u64::from_str_radix(a, 16).ok()?, u64::from_str_radix(b, 16).ok()?, perms.as_bytes().get(1) == Some(&b'w')))
        })
        .collect();
    spans.sort();
    for (s, e, w) in spans {
        if e <= cur || s >= end {
            continue;
        }
        if s > cur {
            return None;
        }
        writable &= w;
        cur = e;
        if cur >= end {
            return Some(writable);
        }
    }
    None
}

fn nic_of(h: gni_nic_handle_t) -> GniResult<Arc<Nic>> {
    let nic = NICS.get(h as *const c_void)?;
    if nic.is_detached() {
        return Err(GNI_RC_INVALID_PARAM);
    }
    Ok(nic)
}

fn register(nic: &Arc<Nic>, address: u64, length: u64, dst_cq: gni_cq_handle_t, flags: u32, vmdh_index: u32) -> GniResult<gni_mem_handle_t> {
    if length == 0 || address == 0 || flags & !KNOWN_FLAGS != 0 {
        return Err(GNI_RC_INVALID_PARAM);
    }
    let cq = if dst_cq.is_null() {
        None
    } else {
        let cq = CQS.get(dst_cq as *const c_void)?;
        if !Arc::ptr_eq(&cq.nic, nic) {
            return Err(GNI_RC_INVALID_PARAM);
        }
        Some(cq)
    };
    let read_only = flags & GNI_MEM_READ_ONLY as u32 != 0;
    match range_writable(address, length) {
        None => return Err(GNI_RC_INVALID_PARAM),
        Some(false) if !read_only => {
            softnic_fabric::sn_debug!("GNI_MemRegister", "READWRITE requested on pages that are not writable");
            return Err(GNI_RC_PERMISSION_ERROR);
        }
        _ => {}
    }
    // vMDH entry.
    let vmdh = if flags & GNI_MEM_USE_VMDH as u32 != 0 {
        let mut m = lock(&nic.mdd);
        if m.size == 0 {
            return Err(GNI_RC_ERROR_RESOURCE);
        }
        let idx = if vmdh_index == u32::MAX {
            (0..m.size).find(|i| !m.used.contains(i)).ok_or(GNI_RC_ERROR_RESOURCE)?
        } else if vmdh_index >= m.size {
            return Err(GNI_RC_INVALID_PARAM);
        } else if m.used.contains(&vmdh_index) {
            return Err(GNI_RC_ERROR_RESOURCE);
        } else {
            vmdh_index
        };
        m.used.insert(idx);
        Some(idx)
    } else {
        None
    };
    let release_vmdh = || {
        if let Some(i) = vmdh {
            lock(&nic.mdd).used.remove(&i);
        }
    };
    let access = if read_only { Access::ReadOnly } else { Access::ReadWrite };
    let key = match mem::register(address as usize, length as usize, access, nic.pd_key()) {
        Ok(k) => k,
        Err(e) => {
            release_vmdh();
            softnic_fabric::sn_debug!("GNI_MemRegister", "{:#x}+{}: {:?}", address, length, e);
            return Err(match e {
                softnic_fabric::Error::InvalidArg => GNI_RC_INVALID_PARAM,
                softnic_fabric::Error::NoSpace => GNI_RC_ERROR_RESOURCE,
                softnic_fabric::Error::Unsupported | softnic_fabric::Error::Permission => GNI_RC_PERMISSION_ERROR,
                _ => GNI_RC_ERROR_NOMEM,
            });
        }
    };
    if let Some(cq) = &cq {
        if mem::set_notify(key, Some(cq.loc)).is_err() {
            let _ = mem::deregister(key);
            release_vmdh();
            return Err(GNI_RC_ERROR_RESOURCE);
        }
        cq.users.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }
    if vmdh.is_some() {
        lock(&VMDH_KEYS).get_or_insert_with(HashSet::new).insert(key.to_u64());
    }
    lock(&nic.regs).insert(key.to_u64(), RegInfo { dst_cq: cq, vmdh, read_only });
    bump_ptag(nic.cdm.ptag, true);
    let w = CrayHandle { base: address, key }.to_words();
    softnic_fabric::sn_debug!("GNI_MemRegister", "{:#x}+{} flags {:#x} -> key {:?}", address, length, flags, key);
    Ok(gni_mem_handle_t { qword1: w[0], qword2: w[1] })
}

/// Ends one registration of `nic` (the caller removed it from `nic.regs`).
fn end(nic: &Nic, key: MemKey, info: RegInfo) {
    let _ = mem::deregister(key);
    if let Some(cq) = info.dst_cq {
        cq.users.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
    if let Some(i) = info.vmdh {
        lock(&nic.mdd).used.remove(&i);
        if let Some(s) = lock(&VMDH_KEYS).as_mut() {
            s.remove(&key.to_u64());
        }
    }
    bump_ptag(nic.cdm.ptag, false);
}

/// Ends every registration of a NIC being detached (GNI_CdmDestroy).
pub fn deregister_all(nic: &Nic) {
    let all: Vec<(u64, RegInfo)> = lock(&nic.regs).drain().collect();
    for (k, info) in all {
        end(nic, MemKey::from_u64(k), info);
    }
}

#[no_mangle]
pub unsafe extern "C" fn GNI_MemRegister(
    nic_hndl: gni_nic_handle_t,
    address: u64,
    length: u64,
    dst_cq_hndl: gni_cq_handle_t,
    flags: u32,
    vmdh_index: u32,
    mem_hndl: *mut gni_mem_handle_t,
) -> gni_return_t {
    let Ok(nic) = nic_of(nic_hndl) else { return GNI_RC_INVALID_PARAM };
    if mem_hndl.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    match register(&nic, address, length, dst_cq_hndl, flags, vmdh_index) {
        Ok(h) => {
            // SAFETY: checked non-NULL; written only on success.
            unsafe { mem_hndl.write(h) };
            GNI_RC_SUCCESS
        }
        Err(rc) => rc,
    }
}

#[no_mangle]
pub unsafe extern "C" fn GNI_MemRegisterSegments(
    nic_hndl: gni_nic_handle_t,
    mem_segments: *mut gni_mem_segment_t,
    segments_cnt: u32,
    dst_cq_hndl: gni_cq_handle_t,
    flags: u32,
    vmdh_index: u32,
    mem_hndl: *mut gni_mem_handle_t,
) -> gni_return_t {
    let Ok(nic) = nic_of(nic_hndl) else { return GNI_RC_INVALID_PARAM };
    if mem_hndl.is_null() || mem_segments.is_null() || segments_cnt == 0 {
        return GNI_RC_INVALID_PARAM;
    }
    // SAFETY: the caller's array of segments_cnt entries.
    let segs = unsafe { std::slice::from_raw_parts(mem_segments, segments_cnt as usize) };
    if segs.iter().any(|s| s.length == 0 || s.address == 0) {
        return GNI_RC_INVALID_PARAM;
    }
    if segs.len() > 1 {
        softnic_fabric::sn_warn!("GNI_MemRegisterSegments", "registering {} discontiguous segments as one region (offset addressing) is not supported", segs.len());
        return GNI_RC_ILLEGAL_OP;
    }
    match register(&nic, segs[0].address, segs[0].length, dst_cq_hndl, flags, vmdh_index) {
        Ok(h) => {
            // SAFETY: checked non-NULL.
            unsafe { mem_hndl.write(h) };
            GNI_RC_SUCCESS
        }
        Err(rc) => rc,
    }
}

#[no_mangle]
pub unsafe extern "C" fn GNI_MemDeregister(nic_hndl: gni_nic_handle_t, mem_hndl: *mut gni_mem_handle_t) -> gni_return_t {
    let Ok(nic) = nic_of(nic_hndl) else { return GNI_RC_INVALID_PARAM };
    // SAFETY: NULL or the caller's handle.
    let Some(h) = (unsafe { mem_hndl.as_ref() }) else { return GNI_RC_INVALID_PARAM };
    let ch = CrayHandle::from_words([h.qword1, h.qword2]);
    let info = {
        let mut regs = lock(&nic.regs);
        match mem::query(ch.key) {
            Ok(r) if r.base == ch.base => {}
            _ => return GNI_RC_INVALID_PARAM,
        }
        match regs.remove(&ch.key.to_u64()) {
            Some(i) => i,
            None => return GNI_RC_INVALID_PARAM,
        }
    };
    end(&nic, ch.key, info);
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_SetMddResources(nic_hndl: gni_nic_handle_t, num_entries: u32) -> gni_return_t {
    let Ok(nic) = nic_of(nic_hndl) else { return GNI_RC_INVALID_PARAM };
    if num_entries as usize > softnic_fabric::node::NREG {
        return GNI_RC_INVALID_PARAM;
    }
    let mut m = lock(&nic.mdd);
    if !m.used.is_empty() && m.size != num_entries {
        return GNI_RC_INVALID_PARAM;
    }
    m.size = num_entries;
    GNI_RC_SUCCESS
}

/// Attributes of one of this process's live registrations; INVALID_PARAM for a handle
/// that is not one (stale, forged, a peer's).
#[no_mangle]
pub unsafe extern "C" fn GNI_MemHndlQueryAttr(mem_hndl: *mut gni_mem_handle_t, attr: gni_mem_handle_attr_t, yesno: *mut c_int) -> gni_return_t {
    // SAFETY: NULL or the caller's handle.
    let Some(h) = (unsafe { mem_hndl.as_ref() }) else { return GNI_RC_INVALID_PARAM };
    if yesno.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    let ch = CrayHandle::from_words([h.qword1, h.qword2]);
    let Ok(r) = mem::query(ch.key) else { return GNI_RC_INVALID_PARAM };
    if r.base != ch.base {
        return GNI_RC_INVALID_PARAM;
    }
    let v = match attr {
        GNI_MEMHNDL_ATTR_READONLY => r.access == Access::ReadOnly,
        GNI_MEMHNDL_ATTR_VMDH => lock(&VMDH_KEYS).as_ref().map_or(false, |s| s.contains(&ch.key.to_u64())),
        GNI_MEMHNDL_ATTR_MRT | GNI_MEMHNDL_ATTR_GART | GNI_MEMHNDL_ATTR_IOMMU | GNI_MEMHNDL_ATTR_PCI_IOMMU | GNI_MEMHNDL_ATTR_CLONE => false,
        _ => return GNI_RC_INVALID_PARAM,
    };
    // SAFETY: checked non-NULL.
    unsafe { yesno.write(v as c_int) };
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_RebuildMemHndl(src_mem_hndl: *mut gni_mem_handle_t, _vmdh_index: u32, dst_mem_hndl: *mut gni_mem_handle_t) -> gni_return_t {
    if src_mem_hndl.is_null() || dst_mem_hndl.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    softnic_fabric::sn_warn!("GNI_RebuildMemHndl", "symmetric vMDH handles are not emulated; exchange handles instead");
    GNI_RC_ILLEGAL_OP
}

#[no_mangle]
pub unsafe extern "C" fn GNI_MemQueryHndls(nic_hndl: gni_nic_handle_t, _fd: c_int, mem_hndl: *mut gni_mem_handle_t, address: *mut u64, length: *mut u64) -> gni_return_t {
    if nic_of(nic_hndl).is_err() || mem_hndl.is_null() || address.is_null() || length.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    softnic_fabric::sn_warn!("GNI_MemQueryHndls", "there is no device file descriptor to query");
    GNI_RC_ILLEGAL_OP
}
