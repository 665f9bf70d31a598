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
//! - vMDH: GNI_SetMddResources sizes a per-NIC block (at most `node::NREG` entries, else
//!   INVALID_PARAM); GNI_MEM_USE_VMDH takes entry `vmdh_index` (`(uint32_t)-1` = next
//!   free) and fails with ERROR_RESOURCE when no block was set up, the entry is in use or
//!   none is free; an index past the block is INVALID_PARAM.  SetMddResources may resize
//!   the block only while no entry is in use (else INVALID_PARAM).
//! - **Symmetric vMDH handles.**  The handle returned for entry i is
//!   `{qword1 = VMDH_FLAG | i, qword2 = pd_key(ptag, cookie)}`: the same value on every PE
//!   of the job.  The real handle of the registration is published in entry i of the
//!   instance's **vMDH table**, which lives in its datagram board (library-owned shared
//!   memory that peers already map, see crate::datagram).  An initiator resolves a vMDH
//!   remote handle in the *target's* table (the EP's bound instance), so a handle made on
//!   PE A with index i addresses PE B's registration at index i; `remote_addr` stays a
//!   virtual address in the target (as for any single-segment registration).  A target
//!   with no entry i, or a qword2 of another domain, is a transaction error.  As a local
//!   handle it names our own entry i.  `GNI_RebuildMemHndl(src, i, dst)`: `src` must be a
//!   vMDH handle (else INVALID_PARAM), `dst` = the handle of entry i of the same domain.
//! - **Multi-segment registrations** (GNI_MemRegisterSegments with n > 1, at most
//!   [`MAX_SEGS`]): each segment is registered with the fabric; a segment table
//!   `[magic, n, total, 0]` + n x `[offset, length, key, address]` is written into
//!   library-owned shared memory registered READ_ONLY as the registration itself (its key,
//!   its dst_cq notify ring).  Handle: `{qword1 = SEG_FLAG | table address, qword2 = table
//!   key}` (qword1 of a plain handle is a user address, below 2^47, so bits 63/62 are free).
//!   Remote accesses use **offsets**: the layout is the plain concatenation of the segments
//!   in list order, segment k starting at the sum of the lengths before it (no padding; for
//!   page-aligned, page-multiple segments, the usual case, this is also the digest's
//!   page-rounded layout).  The initiator reads the table with `rma::get` and splits an
//!   access that spans segments into per-segment pieces; an access past the total length
//!   is a transaction error; an AMO or sync flag must lie within one segment.  REMOTE
//!   events and CQ writes use the table registration's dst CQ.  SMSG mailboxes in one
//!   are addressed by offset at the peer (`msg_buffer + mbox_offset` as an offset).  Zero
//!   segments, a NULL list or a zero-length segment is INVALID_PARAM.  Deregistration
//!   releases the segments and the table; later remote accesses fail with a transaction
//!   error.
//! - **Segmented handles as local handles** (FMA and RDMA PUT/GET, the flagged variants,
//!   fetching and flagged AMOs, CE results): one memory domain addressed by offset, as at
//!   a target: `local_addr` is the offset into the concatenated segments (0 included) and
//!   a transfer crossing from one segment into the next is split into pieces (`pair`
//!   matches them with the remote pieces).  [`LocalMem`] resolves the table from our own
//!   memory at post time; an access past the total length is INVALID_PARAM returned by
//!   the post (nothing moves), like any local range outside its registration.  An FMA PUT
//!   source needs no handle and `local_addr` stays a virtual address unless the handle is
//!   segmented.  A fetched AMO value or a response flag straddling two segments (possible
//!   only where a segment's length is not a multiple of 4 or 8) is stored in pieces.  A
//!   CE result must lie within one segment.  The local mailbox of GNI_SmsgInit is read
//!   through `msg_buffer`, a pointer: a segmented handle there stays INVALID_PARAM.
//! - GNI_MemHndlQueryAttr accepts plain, segmented (READONLY from the segments) and vMDH
//!   handles (resolved in the table of the NIC of this process that registered them).
//! - GNI_MemDeregister of a handle this NIC did not register (never, already
//!   deregistered, another NIC's, forged) is INVALID_PARAM.  The caller's handle is left
//!   as is; it is stale from now on.
//! - GNI_MemQueryHndls (walking the registrations of a device file descriptor for
//!   checkpointing) answers ILLEGAL_OP: there is no device file.

use crate::handles::{lock, GniResult};
use crate::memhandle::{parse_table, SegEnt, Seq, MAX_SEGS, SEG_ENT, SEG_FLAG, SEG_HDR, SEG_MAGIC, VMDH_FLAG};
use crate::objects::*;
use crate::types::*;
use libc::{c_int, c_void};
use softnic_fabric::mem::{self, Access, CrayHandle, MemKey};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

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
    mem::mapped_writable(usize::try_from(addr).ok()?, usize::try_from(len).ok()?)
}

fn nic_of(h: gni_nic_handle_t) -> GniResult<Arc<Nic>> {
    let nic = NICS.get(h as *const c_void)?;
    if nic.is_detached() {
        return Err(GNI_RC_INVALID_PARAM);
    }
    Ok(nic)
}

fn register(nic: &Arc<Nic>, address: u64, length: u64, dst_cq: gni_cq_handle_t, flags: u32, vmdh_index: u32) -> GniResult<gni_mem_handle_t> {
    register_segs(nic, &[gni_mem_segment_t { address, length }], dst_cq, flags, vmdh_index)
}

/// Registers one segment (plain handle) or several (segment table, SEG_FLAG handle).
fn register_segs(nic: &Arc<Nic>, segs: &[gni_mem_segment_t], dst_cq: gni_cq_handle_t, flags: u32, vmdh_index: u32) -> GniResult<gni_mem_handle_t> {
    if segs.is_empty() || segs.iter().any(|s| s.length == 0 || s.address == 0) || flags & !KNOWN_FLAGS != 0 {
        return Err(GNI_RC_INVALID_PARAM);
    }
    if segs.len() > MAX_SEGS {
        return Err(GNI_RC_INVALID_PARAM);
    }
    let cq = if dst_cq.is_null() {
        None
    } else {
        let cq = CQS.get(dst_cq as *const c_void)?;
        if !Arc::ptr_eq(&cq.nic, nic) {
            return Err(GNI_RC_INVALID_PARAM);
        }
        cq.remote_dst.store(true, std::sync::atomic::Ordering::Relaxed);
        Some(cq)
    };
    let read_only = flags & GNI_MEM_READ_ONLY as u32 != 0;
    for sg in segs {
        // Handles keep 48 address bits (beside the owner's id, see fabric CrayHandle).
        if sg.address.checked_add(sg.length).map_or(true, |e| e > CrayHandle::ADDR_LIMIT) {
            return Err(GNI_RC_INVALID_PARAM);
        }
        match range_writable(sg.address, sg.length) {
            None => return Err(GNI_RC_INVALID_PARAM),
            Some(false) if !read_only => {
                softnic_fabric::sn_debug!("GNI_MemRegister", "READWRITE requested on pages that are not writable");
                return Err(GNI_RC_PERMISSION_ERROR);
            }
            _ => {}
        }
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
    let fab_err = |e: softnic_fabric::Error| match e {
        softnic_fabric::Error::InvalidArg => GNI_RC_INVALID_PARAM,
        softnic_fabric::Error::NoSpace => GNI_RC_ERROR_RESOURCE,
        softnic_fabric::Error::Unsupported | softnic_fabric::Error::Permission => GNI_RC_PERMISSION_ERROR,
        _ => GNI_RC_ERROR_NOMEM,
    };
    let mut parts: Vec<MemKey> = Vec::new();
    let undo = |parts: &[MemKey]| {
        for k in parts {
            let _ = mem::deregister(*k);
        }
    };
    for sg in segs {
        match mem::register(sg.address as usize, sg.length as usize, access, nic.pd_key()) {
            Ok(k) => parts.push(k),
            Err(e) => {
                undo(&parts);
                release_vmdh();
                softnic_fabric::sn_debug!("GNI_MemRegister", "{:#x}+{}: {:?}", sg.address, sg.length, e);
                return Err(fab_err(e));
            }
        }
    }
    // Several segments: the table, registered read-only; its key names the registration.
    let mut table = None;
    let (key, base) = if segs.len() == 1 {
        (parts[0], segs[0].address)
    } else {
        let len = SEG_HDR + segs.len() * SEG_ENT;
        let shm = match mem::alloc_shared(len) {
            Ok(m) => m,
            Err(_) => {
                undo(&parts);
                release_vmdh();
                return Err(GNI_RC_ERROR_NOMEM);
            }
        };
        let mut w: Vec<u64> = vec![SEG_MAGIC, segs.len() as u64, segs.iter().map(|s| s.length).sum(), 0];
        let mut off = 0u64;
        for (sg, k) in segs.iter().zip(&parts) {
            w.extend_from_slice(&[off, sg.length, k.to_u64(), sg.address]);
            off += sg.length;
        }
        // SAFETY: fresh shared memory of `len` = w.len() * 8 bytes, page aligned.
        unsafe { std::ptr::copy_nonoverlapping(w.as_ptr() as *const u8, shm.as_ptr(), len) };
        match mem::register(shm.as_ptr() as usize, len, Access::ReadOnly, nic.pd_key()) {
            Ok(k) => {
                let b = shm.as_ptr() as u64;
                table = Some(shm);
                (k, b)
            }
            Err(e) => {
                let _ = mem::free_shared(shm);
                undo(&parts);
                release_vmdh();
                return Err(fab_err(e));
            }
        }
    };
    if segs.len() == 1 {
        parts.clear();
    }
    if let Some(cq) = &cq {
        if mem::set_notify(key, Some(cq.loc)).is_err() {
            let _ = mem::deregister(key);
            undo(&parts);
            if let Some(t) = table {
                let _ = mem::free_shared(t);
            }
            release_vmdh();
            return Err(GNI_RC_ERROR_RESOURCE);
        }
        cq.users.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }
    if vmdh.is_some() {
        lock(&VMDH_KEYS).get_or_insert_with(HashSet::new).insert(key.to_u64());
    }
    let segmented = table.is_some();
    lock(&nic.regs).insert(key.to_u64(), RegInfo { dst_cq: cq, vmdh, read_only, segs: parts, table });
    bump_ptag(nic.cdm.ptag, true);
    let mut w = match CrayHandle::mine(base, key) {
        Ok(h) => h.to_words(),
        Err(_) => {
            // Unreachable in practice: every address was checked against the limit above.
            let info = lock(&nic.regs).remove(&key.to_u64());
            if let Some(info) = info {
                end(nic, key, info);
            }
            return Err(GNI_RC_INVALID_PARAM);
        }
    };
    if segmented {
        w[0] |= SEG_FLAG;
    }
    softnic_fabric::sn_debug!("GNI_MemRegister", "{} segment(s) at {:#x} flags {:#x} -> key {:?}", segs.len(), base, flags, key);
    if let Some(i) = vmdh {
        // Symmetric handle: the same value on every PE; peers find our entry in the board.
        nic.dgram.set_vmdh(i as usize, Some(w));
        lock(&VMDH_OWNERS).get_or_insert_with(HashMap::new).insert((nic.pd_key(), i as usize), Arc::downgrade(nic));
        return Ok(gni_mem_handle_t { qword1: VMDH_FLAG | i as u64, qword2: nic.pd_key() });
    }
    Ok(gni_mem_handle_t { qword1: w[0], qword2: w[1] })
}

/// Ends one registration of `nic` (the caller removed it from `nic.regs`).
fn end(nic: &Nic, key: MemKey, info: RegInfo) {
    let _ = mem::deregister(key);
    for k in &info.segs {
        let _ = mem::deregister(*k);
    }
    if let Some(t) = info.table {
        let _ = mem::free_shared(t);
    }
    if let Some(i) = info.vmdh {
        nic.dgram.set_vmdh(i as usize, None);
        if let Some(m) = lock(&VMDH_OWNERS).as_mut() {
            m.remove(&(nic.pd_key(), i as usize));
        }
    }
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

/// NICs owning vMDH entries: (pd key, index) -> NIC (GNI_MemHndlQueryAttr has no NIC).
static VMDH_OWNERS: Mutex<Option<HashMap<(u64, usize), std::sync::Weak<Nic>>>> = Mutex::new(None);

/// The words of a handle of this NIC: a vMDH handle is replaced by the handle of the
/// entry it names in the NIC's own table (None when there is none).
fn local_words(nic: &Nic, h: &gni_mem_handle_t) -> Option<[u64; 2]> {
    if h.qword1 & VMDH_FLAG != 0 {
        if h.qword2 != nic.pd_key() {
            return None;
        }
        return nic.dgram.vmdh((h.qword1 & !VMDH_FLAG) as usize);
    }
    Some([h.qword1, h.qword2])
}

/// The registration a handle of this NIC names (vMDH handles resolved in the NIC's own
/// table, the SEG flag stripped); None for a vMDH index with no entry or a handle another
/// process owns.
pub(crate) fn local_handle(nic: &Nic, h: &gni_mem_handle_t) -> Option<CrayHandle> {
    local_handle_kind(nic, h).map(|(ch, _)| ch)
}

/// [`local_handle`] and whether it is a segmented registration.
fn local_handle_kind(nic: &Nic, h: &gni_mem_handle_t) -> Option<(CrayHandle, bool)> {
    let w = local_words(nic, h)?;
    let ch = CrayHandle::from_words([w[0] & !SEG_FLAG, w[1]]);
    let me = softnic_fabric::node::get().ok()?.proc_id();
    ch.owner_matches(me).then_some((ch, w[0] & SEG_FLAG != 0))
}

/// The segments of one of this process's segmented registrations (None: not one).
fn seg_table_local(ch: CrayHandle) -> Option<Vec<SegEnt>> {
    let r = mem::query(ch.key).ok()?;
    if r.base != ch.base || (r.len as usize) < SEG_HDR {
        return None;
    }
    // SAFETY: a live registration of ours of r.len bytes at ch.base (our shared memory).
    let w = unsafe { std::slice::from_raw_parts(ch.base as *const u64, r.len as usize / 8) };
    parse_table(w)
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
    match register_segs(&nic, segs, dst_cq_hndl, flags, vmdh_index) {
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
    let Some(ch) = local_handle(&nic, h) else { return GNI_RC_INVALID_PARAM };
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
    let ch = if h.qword1 & VMDH_FLAG != 0 {
        // A vMDH handle: resolve it in the vMDH table of a NIC of this process.
        let idx = (h.qword1 & !VMDH_FLAG) as usize;
        let found = lock(&VMDH_OWNERS).as_ref().and_then(|m| m.get(&(h.qword2, idx)).cloned()).and_then(|w| w.upgrade());
        match found.and_then(|nic| local_handle(&nic, h)) {
            Some(c) => c,
            None => return GNI_RC_INVALID_PARAM,
        }
    } else {
        let ch = CrayHandle::from_words([h.qword1 & !SEG_FLAG, h.qword2]);
        match softnic_fabric::node::get() {
            Ok(n) if ch.owner_matches(n.proc_id()) => ch,
            _ => return GNI_RC_INVALID_PARAM,
        }
    };
    let Ok(r) = mem::query(ch.key) else { return GNI_RC_INVALID_PARAM };
    if r.base != ch.base {
        return GNI_RC_INVALID_PARAM;
    }
    // A segmented registration's table is always read-only; its first segment tells.
    let read_only = match seg_table_local(ch) {
        Some(t) => mem::query(t[0].key).map_or(true, |r| r.access == Access::ReadOnly),
        None => r.access == Access::ReadOnly,
    };
    let v = match attr {
        GNI_MEMHNDL_ATTR_READONLY => read_only,
        GNI_MEMHNDL_ATTR_VMDH => lock(&VMDH_KEYS).as_ref().map_or(false, |s| s.contains(&ch.key.to_u64())),
        GNI_MEMHNDL_ATTR_MRT | GNI_MEMHNDL_ATTR_GART | GNI_MEMHNDL_ATTR_IOMMU | GNI_MEMHNDL_ATTR_PCI_IOMMU | GNI_MEMHNDL_ATTR_CLONE => false,
        _ => return GNI_RC_INVALID_PARAM,
    };
    // SAFETY: checked non-NULL.
    unsafe { yesno.write(v as c_int) };
    GNI_RC_SUCCESS
}

/// Rebuilds a symmetric vMDH handle for another vMDH index: `src` must be a vMDH handle
/// (else INVALID_PARAM); `dst` = the handle naming entry `vmdh_index` of the same domain,
/// on whichever PE it is used against.
#[no_mangle]
pub unsafe extern "C" fn GNI_RebuildMemHndl(src_mem_hndl: *mut gni_mem_handle_t, vmdh_index: u32, dst_mem_hndl: *mut gni_mem_handle_t) -> gni_return_t {
    // SAFETY: NULL or the caller's handle.
    let Some(src) = (unsafe { src_mem_hndl.as_ref() }) else { return GNI_RC_INVALID_PARAM };
    if dst_mem_hndl.is_null() || src.qword1 & VMDH_FLAG == 0 || vmdh_index as usize >= crate::datagram::NVMDH {
        return GNI_RC_INVALID_PARAM;
    }
    // SAFETY: checked non-NULL.
    unsafe { dst_mem_hndl.write(gni_mem_handle_t { qword1: VMDH_FLAG | vmdh_index as u64, qword2: src.qword2 }) };
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_MemQueryHndls(nic_hndl: gni_nic_handle_t, _fd: c_int, mem_hndl: *mut gni_mem_handle_t, address: *mut u64, length: *mut u64) -> gni_return_t {
    if nic_of(nic_hndl).is_err() || mem_hndl.is_null() || address.is_null() || length.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    softnic_fabric::sn_warn!("GNI_MemQueryHndls", "there is no device file descriptor to query");
    GNI_RC_ILLEGAL_OP
}

/// The local side of a post (`local_mem_hndl`, `local_addr`) resolved at the initiator.
/// A plain or vMDH registration (or no handle, for an FMA PUT source) is addressed by
/// virtual address; a segmented one, like at a target, by offset into the concatenation
/// of its segments (0 = the first byte of the first segment), an access crossing from
/// one segment into the next being split into pieces.
pub(crate) enum LocalMem {
    /// `local_addr` is a virtual address; the registration's key when a handle was checked.
    Virtual(Option<MemKey>),
    /// `local_addr` is an offset into these segments (one of this process's segmented
    /// registrations, checked to cover the access).
    Segments(Vec<SegEnt>),
}

impl LocalMem {
    /// Resolves a local handle for the access `[addr, addr+len)`: `h` must name a live
    /// registration of this process in the NIC's domain covering it (for a segmented one:
    /// `addr + len` at most the total length), else INVALID_PARAM; `write` on a READ_ONLY
    /// registration is PERMISSION_ERROR.
    pub(crate) fn open(nic: &Nic, h: &gni_mem_handle_t, addr: u64, len: u64, write: bool) -> Result<LocalMem, gni_return_t> {
        let (ch, segmented) = local_handle_kind(nic, h).ok_or(GNI_RC_INVALID_PARAM)?;
        let end = addr.checked_add(len).ok_or(GNI_RC_INVALID_PARAM)?;
        let live = |key: MemKey| match mem::query(key) {
            Ok(r) if r.pd_key == nic.pd_key() => Ok(r),
            _ => Err(GNI_RC_INVALID_PARAM),
        };
        let writable = |r: &mem::Region| if write && r.access == Access::ReadOnly { Err(GNI_RC_PERMISSION_ERROR) } else { Ok(()) };
        if !segmented {
            let r = live(ch.key)?;
            if addr < r.base || end > r.base.saturating_add(r.len) {
                return Err(GNI_RC_INVALID_PARAM);
            }
            writable(&r)?;
            return Ok(LocalMem::Virtual(Some(ch.key)));
        }
        let segs = match live(ch.key) {
            Ok(r) if r.base == ch.base => seg_table_local(ch).ok_or(GNI_RC_INVALID_PARAM)?,
            _ => return Err(GNI_RC_INVALID_PARAM),
        };
        let total = segs.last().map_or(0, |s| s.off + s.len);
        if end > total {
            softnic_fabric::sn_debug!("local handle", "offset {}+{} past the {} bytes of a segmented registration", addr, len, total);
            return Err(GNI_RC_INVALID_PARAM);
        }
        for s in segs.iter().filter(|s| s.off < end && addr < s.off + s.len) {
            writable(&live(s.key)?)?;
        }
        Ok(LocalMem::Segments(segs))
    }

    /// The source of an FMA PUT, which needs no registration: `local_addr` is a virtual
    /// address unless `h` is a segmented handle (itself or through our vMDH entry), which
    /// must then be one of ours covering the access ([`LocalMem::open`]).
    pub(crate) fn source(nic: &Nic, h: &gni_mem_handle_t, addr: u64, len: u64) -> Result<LocalMem, gni_return_t> {
        let segmented = if h.qword1 & VMDH_FLAG != 0 { local_words(nic, h).is_some_and(|w| w[0] & SEG_FLAG != 0) } else { h.qword1 & SEG_FLAG != 0 };
        if segmented {
            Self::open(nic, h, addr, len, false)
        } else {
            Ok(LocalMem::Virtual(None))
        }
    }

    /// Was `local_addr` an offset (a segmented registration)?
    pub(crate) fn is_segmented(&self) -> bool {
        matches!(self, LocalMem::Segments(_))
    }

    /// The `(virtual address, length)` pieces of `[addr, addr+len)` (checked by `open`);
    /// one piece for a zero length.
    pub(crate) fn spans(&self, addr: u64, len: u64) -> Seq<(u64, u64)> {
        let LocalMem::Segments(segs) = self else { return Seq::One([(addr, len)]) };
        let end = addr + len;
        let mut out: Vec<(u64, u64)> = segs
            .iter()
            .filter_map(|s| {
                let (a, b) = (addr.max(s.off), end.min(s.off + s.len));
                (a < b).then(|| (s.addr + (a - s.off), b - a))
            })
            .collect();
        if out.is_empty() {
            // Zero length: where it would start (the end of the domain maps past its last segment).
            let a = segs.iter().find(|s| addr < s.off + s.len).map_or_else(|| segs.last().map_or(0, |s| s.addr + s.len), |s| s.addr + (addr - s.off));
            out.push((a, 0));
        }
        if out.len() == 1 {
            Seq::One([out[0]])
        } else {
            Seq::Many(out)
        }
    }

    /// `(registration, virtual address)` of `[addr, addr+len)`, which must lie in one
    /// segment (INVALID_PARAM otherwise, or when no handle was checked).
    pub(crate) fn word(&self, addr: u64, len: u64) -> Result<(MemKey, u64), gni_return_t> {
        match self {
            LocalMem::Virtual(Some(k)) => Ok((*k, addr)),
            LocalMem::Virtual(None) => Err(GNI_RC_INVALID_PARAM),
            LocalMem::Segments(segs) => segs
                .iter()
                .find(|s| addr >= s.off && addr + len <= s.off + s.len)
                .map(|s| (s.key, s.addr + (addr - s.off)))
                .ok_or(GNI_RC_INVALID_PARAM),
        }
    }

    /// Stores the low `width` (4 or 8) bytes of `v` at `addr` (a fetched AMO value or a
    /// response flag, checked by `open`): one atomic Release store when the bytes are
    /// aligned in one piece (a thread polling the word never sees it torn, and sees the
    /// response data before it), else byte pieces after a Release fence (only where a
    /// segment's length is not a multiple of the width).
    pub(crate) fn store(&self, addr: u64, v: u64, width: u64) {
        let bytes = v.to_ne_bytes();
        match self.spans(addr, width).as_slice() {
            &[(p, _)] if p % width == 0 => {
                // SAFETY: inside a writable registration of ours (checked by `open`), aligned.
                unsafe {
                    match width {
                        4 => (*(p as *const AtomicU32)).store(v as u32, Ordering::Release),
                        _ => (*(p as *const AtomicU64)).store(v, Ordering::Release),
                    }
                }
            }
            spans => {
                std::sync::atomic::fence(Ordering::Release);
                let mut done = 0usize;
                for &(p, n) in spans {
                    // SAFETY: as above; the pieces hold `width` bytes in all.
                    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr().add(done), p as *mut u8, n as usize) };
                    done += n as usize;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_offsets_map_into_the_segments() {
        let k = MemKey { index: 1, generation: 1 };
        let segs = vec![
            SegEnt { off: 0, len: 4096, key: k, addr: 0x10000 },
            SegEnt { off: 4096, len: 100, key: k, addr: 0x30000 },
            SegEnt { off: 4196, len: 4096, key: k, addr: 0x50000 },
        ];
        let l = LocalMem::Segments(segs);
        assert_eq!(l.spans(0, 8).as_slice(), &[(0x10000, 8)]);
        assert_eq!(l.spans(4090, 10).as_slice(), &[(0x10000 + 4090, 6), (0x30000, 4)]);
        assert_eq!(l.spans(4000, 300).as_slice(), &[(0x10000 + 4000, 96), (0x30000, 100), (0x50000, 104)]);
        assert_eq!(l.spans(8292, 0).as_slice(), &[(0x50000 + 4096, 0)]);
        assert_eq!(l.spans(4196, 0).as_slice(), &[(0x50000, 0)]);
        assert_eq!(l.word(4100, 8), Ok((k, 0x30004)));
        assert_eq!(l.word(4190, 8), Err(GNI_RC_INVALID_PARAM));
        assert_eq!(LocalMem::Virtual(None).spans(0x1234, 5).as_slice(), &[(0x1234, 5)]);
    }
}
