//! The library and its network interface: PtlInit/PtlFini, PtlNIInit/PtlNIFini, the
//! identity calls, status registers, PtlNIDist, PtlNIHandle, PtlNIFailStr.
//!
//! One interface per process (the [`Ni`] object and the library's table of it, [`Lib`],
//! live in [`crate::objects`]).  Its shared state is an NI segment ([`crate::seg`]) in
//! library-owned shared memory, published in the node registry under (job, nid, pid)
//! with the segment's location ([`crate::endpoint`]), so that initiators find it
//! ([`crate::ops`]).  When the interface ends, a tombstone takes the entry's place for as
//! long as the process lives: initiators then fail at once instead of waiting for a late
//! target.

use crate::endpoint::{endpoint_key, endpoint_payload, tombstone_payload};
use crate::handle;
use crate::objects::{Arena, Lib, MdMem, Ni, CURRENT, LIB};
use crate::runtime::{self, random_u64, Runtime};
use crate::seg::{self, Layout, Limits, Seg};
use crate::status::{done, out, ret, set_debug_mask, PResult};
use crate::types::*;
use softnic_fabric::mem;
use softnic_fabric::registry::{self, EndpointId};
use std::ffi::c_char;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// Limits: (default, maximum) per `ptl_ni_limits_t` field.
pub const LIM_MES: (u32, u32) = (8192, 65534);
pub const LIM_MDS: (u32, u32) = (8192, 65534);
pub const LIM_EQS: (u32, u32) = (256, 4096);
pub const LIM_AC: (u32, u32) = (63, 1023);
pub const LIM_PT: (u32, u32) = (255, 1023);
pub const LIM_IOV: (u32, u32) = (32, 256);
pub const LIM_GETPUT: (u32, u32) = (64, 4096);

fn clamp(v: i32, (def, max): (u32, u32)) -> u32 {
    if v <= 0 {
        def
    } else {
        (v as u32).min(max)
    }
}

fn limits_from(desired: Option<&ptl_ni_limits_t>) -> Limits {
    let d = desired.copied().unwrap_or_default();
    let mes = clamp(d.max_mes, LIM_MES);
    Limits {
        mes,
        mds: clamp(d.max_mds, LIM_MDS),
        eqs: clamp(d.max_eqs, LIM_EQS),
        ac: clamp(d.max_ac_index, LIM_AC),
        pt: clamp(d.max_pt_index, LIM_PT),
        iov: clamp(d.max_md_iovecs, LIM_IOV),
        me_list: clamp(d.max_me_list, (mes, mes)).min(mes),
        getput: clamp(d.max_getput_md, LIM_GETPUT),
    }
}

fn limits_to_c(l: &Limits) -> ptl_ni_limits_t {
    ptl_ni_limits_t {
        max_mes: l.mes as i32,
        max_mds: l.mds as i32,
        max_eqs: l.eqs as i32,
        max_ac_index: l.ac as i32,
        max_pt_index: l.pt as i32,
        max_md_iovecs: l.iov as i32,
        max_me_list: l.me_list as i32,
        max_getput_md: l.getput as i32,
    }
}

/// This process's tombstone, if an NI of it ended (removed when the next one begins).
static TOMB: Mutex<Option<EndpointId>> = Mutex::new(None);

#[no_mangle]
pub extern "C" fn PtlInit(max_interfaces: *mut i32) -> i32 {
    let r = (|| {
        out(max_interfaces, 1)?;
        // The Portals service runs target-side work for initiators (here on this machine,
        // in this process's progress thread for other machines).
        softnic_fabric::rma::register_service(registry::api::PORTALS, crate::service::serve).map_err(|_| PTL_FAIL)?;
        LIB.init.store(true, Ordering::Release);
        Ok(())
    })();
    done("PtlInit", r)
}

#[no_mangle]
pub extern "C" fn PtlFini() {
    let _s = LIB.setup.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = LIB.ni.write().unwrap_or_else(|e| e.into_inner()).take() {
        end_ni(&n);
    }
    LIB.init.store(false, Ordering::Release);
    softnic_fabric::trace::flush();
}

#[no_mangle]
pub unsafe extern "C" fn PtlNIInit(interface: u32, pid: u32, desired: *mut ptl_ni_limits_t, actual: *mut ptl_ni_limits_t, ni_handle: *mut u32) -> i32 {
    // SAFETY: NULL or the caller's limits.
    let desired = unsafe { desired.as_ref() };
    done("PtlNIInit", ni_init(interface, pid, desired, actual, ni_handle))
}

fn ni_init(interface: u32, pid: u32, desired: Option<&ptl_ni_limits_t>, actual: *mut ptl_ni_limits_t, ni_handle: *mut u32) -> PResult<()> {
    Lib::check_init()?;
    if interface != PTL_IFACE_UTCP0 && interface != PTL_IFACE_IBNG0 {
        return Err(PTL_IFACE_INVALID);
    }
    if ni_handle.is_null() {
        return Err(PTL_SEGV);
    }
    let _s = LIB.setup.lock().unwrap_or_else(|e| e.into_inner());
    forget_parents_ni();
    if let Some(n) = LIB.ni.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
        // Repeated initialisation: the existing interface (a conflicting pid is refused).
        if pid != PTL_PID_ANY && pid != n.id.pid {
            return Err(PTL_PID_INVALID);
        }
        if !actual.is_null() {
            out(actual, n.limits)?;
        }
        return out(ni_handle, n.handle);
    }
    let ids = runtime::discover().map_err(|_| PTL_FAIL)?;
    // The runtime set up before this call (PtlSetRank and the maps), else the launcher's.
    let rt = runtime::pending().unwrap_or_else(|| Runtime::from_ids(&ids));
    let nid = ids.my_nid();
    let my_pid = if pid == PTL_PID_ANY { rt.my_pid().unwrap_or_else(|| ids.my_pid()) } else { pid };
    if rt.my_nid().is_some_and(|m| m != nid) {
        softnic_fabric::sn_warn!("Portals", "PtlNIInit: the NID map names {} for this rank, but this node is {}: keeping {}", rt.my_nid().unwrap_or(0), nid, nid);
    }
    let jid = runtime::jid_override().unwrap_or(ids.jid);
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let lim = limits_from(desired);
    let arena = softnic_fabric::env::get_u64("SOFTNIC_PTL_EQ_MEM").clamp(1 << 16, 1 << 40) as usize;
    let lay = Layout::new(lim, arena).ok_or(PTL_NO_SPACE)?;
    // (Unsupported: a child forked after its parent set the fabric up cannot have one.)
    let shm = mem::alloc_shared(lay.total).map_err(|e| if e == softnic_fabric::Error::Unsupported { PTL_FAIL } else { PTL_NO_SPACE })?;
    let loc = match shm.ring_loc(0, lay.total) {
        Ok(l) => l,
        Err(_) => {
            let _ = mem::free_shared(shm);
            return Err(PTL_NO_SPACE);
        }
    };
    let nonce = random_u64();
    // SAFETY: fresh zeroed shared memory of lay.total bytes, page aligned, ours.
    let seg = unsafe { Seg::format(shm.as_ptr(), lay, (jid, nid, my_pid, uid), nonce) };
    {
        // Access control entry 0: every process of this job and user, any portal.
        let g = seg.lock();
        if let Some(a) = seg.ac(&g, 0) {
            *a = seg::AcRow { valid: 1, nid: PTL_NID_ANY, pid: PTL_PID_ANY, uid, jid, pt: PTL_PT_INDEX_ANY, ..Default::default() };
        }
    }
    // An earlier NI's tombstone goes (it may have this very id).
    if let Some(t) = TOMB.lock().unwrap_or_else(|e| e.into_inner()).take() {
        let _ = registry::unpublish(t);
    }
    let ep = match registry::publish(registry::api::PORTALS, &endpoint_key(jid, nid, my_pid), &endpoint_payload(&loc, nonce, uid)) {
        Ok(e) => e,
        Err(e) => {
            let _ = mem::free_shared(shm);
            return Err(if e == softnic_fabric::Error::Exists { PTL_PID_INVALID } else { PTL_NO_SPACE });
        }
    };
    let gen = LIB.ni_gen.fetch_add(1, Ordering::Relaxed).wrapping_add(1) & handle::GEN_MASK;
    let gen = if gen == 0 { 1 } else { gen };
    let limits = limits_to_c(&lim);
    let n = Arc::new(Ni {
        handle: handle::make(handle::NI, gen, 0),
        id: ptl_process_id_t { nid, pid: my_pid },
        uid,
        jid,
        limits,
        nodes: {
            let mut v = ids.nids.clone();
            v.push(nid);
            v.sort_unstable();
            v.dedup();
            v
        },
        job: ids.nids.iter().copied().zip(ids.pids.iter().copied()).collect(),
        owner_pid: std::process::id(),
        seg,
        loc,
        nonce,
        mem: Mutex::new(Some(shm)),
        endpoint: Mutex::new(Some(ep)),
        ended: AtomicBool::new(false),
        eqs: RwLock::new((0..lim.eqs).map(|_| None).collect()),
        arena: Mutex::new(Arena::new(lay.arena, lay.arena_len)),
        md_mem: Mutex::new((0..lim.mds).map(|_| MdMem::default()).collect()),
        rt: Mutex::new(rt),
        handler_thread: Mutex::new(false),
        targets: Default::default(),
    });
    // Across machines every rank's network address must be visible before anyone sends,
    // and MPICH's PMI-1 server publishes the KVS to other hosts only at a barrier: there
    // PtlNIInit is collective (every rank calls it, as Portals programs do at start-up).
    if softnic_fabric::net::running().is_some() && softnic_fabric::bootstrap::kvs_fence().is_err() {
        softnic_fabric::sn_warn!("Portals", "PtlNIInit: the PMI barrier that publishes network addresses failed");
    }
    softnic_fabric::sn_debug!("Portals", "PtlNIInit: nid {} pid {} jid {} ({} MEs, {} MDs, {} EQs)", nid, my_pid, jid, lim.mes, lim.mds, lim.eqs);
    set_debug_mask(0);
    let h = n.handle;
    *LIB.ni.write().unwrap_or_else(|e| e.into_inner()) = Some(n.clone());
    softnic_fabric::check::at_exit(check_at_exit);
    // Kept for this NI only: a later one starts from the launcher's again.
    runtime::clear_pending();
    if !actual.is_null() {
        out(actual, limits)?;
    }
    out(ni_handle, h)
}

/// In a child forked after its parent's PtlNIInit, the parent's NI (its copy) is not
/// ours: left alone (not ended: its memory is the parent's), and forgotten.
fn forget_parents_ni() {
    let mut slot = LIB.ni.write().unwrap_or_else(|e| e.into_inner());
    if slot.as_ref().is_some_and(|n| n.owner_pid != std::process::id()) {
        softnic_fabric::sn_warn!("Portals", "PtlNIInit in a child forked after its parent's PtlNIInit: the parent's interface is not the child's");
        std::mem::forget(slot.take());
        CURRENT.with(|c| {
            if let Ok(mut c) = c.try_borrow_mut() {
                std::mem::forget(c.take());
            }
        });
    }
}

/// Ends an NI: refuses further requests (alive = 0 under the lock), leaves the
/// registry, wakes waiters, releases memory registrations.  The segment itself goes
/// when the last reference does.
fn end_ni(n: &Arc<Ni>) {
    n.ended.store(true, Ordering::Release);
    CURRENT.with(|c| {
        if let Ok(mut c) = c.try_borrow_mut() {
            *c = None;
        }
    });
    {
        let _g = n.seg.lock();
        n.seg.hdr().alive.store(0, Ordering::Release);
    }
    if let Some(ep) = n.endpoint.lock().unwrap_or_else(|e| e.into_inner()).take() {
        let _ = registry::unpublish(ep);
        // Initiators that look for it from now on fail at once (see the module doc).
        let key = endpoint_key(n.jid, n.id.nid, n.id.pid);
        if let Ok(t) = registry::publish(registry::api::PORTALS, &key, &tombstone_payload()) {
            *TOMB.lock().unwrap_or_else(|e| e.into_inner()) = Some(t);
        }
    }
    for q in n.eqs.write().unwrap_or_else(|e| e.into_inner()).iter_mut() {
        if let Some(q) = q.take() {
            q.end();
        }
    }
    crate::eq::stop_handlers(n);
    crate::md::release_all(n);
    crate::service::forget_own_views();
}

/// SOFTNIC_CHECK at exit: an NI the program never finalized.  PtlNIFini releases
/// everything by the specification, so only an exit without it leaves things behind: the
/// events still in its queues, and puts whose SEND_END was never taken (what PtlNIFini
/// would have reported).
fn check_at_exit() {
    let Some(n) = LIB.ni.read().unwrap_or_else(|e| e.into_inner()).clone() else { return };
    if n.ended.load(Ordering::Acquire) || n.owner_pid != std::process::id() {
        return;
    }
    let (mut queues, mut events) = (0, 0);
    for q in n.eqs.read().unwrap_or_else(|e| e.into_inner()).iter().flatten() {
        let k = q.untaken();
        if k > 0 {
            queues += 1;
            events += k;
        }
    }
    let unseen = softnic_fabric::check::outstanding(crate::eq::CHECK_SEND);
    let mut left = Vec::new();
    if events > 0 {
        left.push(format!("{events} event(s) never taken from {queues} queue(s)"));
    }
    if unseen > 0 {
        left.push(format!("{unseen} put(s) whose SEND_END was never taken"));
    }
    let left = if left.is_empty() { String::new() } else { format!(", leaving {}", left.join(" and ")) };
    softnic_fabric::check::report("PtlNIFini", &format!("the NI of nid {} pid {} was never finalized{left}", n.id.nid, n.id.pid), "exit");
}

#[no_mangle]
pub extern "C" fn PtlNIFini(ni_handle: u32) -> i32 {
    let unseen = softnic_fabric::check::outstanding(crate::eq::CHECK_SEND);
    if unseen > 0 {
        softnic_fabric::check::report("PtlNIFini", &format!("{unseen} put(s) whose SEND_END was never taken from its queue"), &softnic_fabric::check::caller());
    }
    let r = (|| {
        let _s = LIB.setup.lock().unwrap_or_else(|e| e.into_inner());
        let n = Lib::ni(ni_handle)?;
        *LIB.ni.write().unwrap_or_else(|e| e.into_inner()) = None;
        end_ni(&n);
        Ok(())
    })();
    done("PtlNIFini", r)
}

#[no_mangle]
pub unsafe extern "C" fn PtlNIStatus(ni_handle: u32, register_index: u32, status: *mut u64) -> i32 {
    let r = (|| {
        let n = Lib::ni(ni_handle)?;
        if status.is_null() {
            return Err(PTL_SEGV);
        }
        let v = status_register(&n, register_index)?;
        out(status, v)
    })();
    done("PtlNIStatus", r)
}

fn status_register(n: &Ni, sr: u32) -> PResult<u64> {
    let g = n.seg.lock();
    let h = n.seg.state(&g);
    let s = &h.stats;
    let lim = n.seg.lay.lim;
    // PTL_SR_MLIST_LEN(i) / PTL_SR_MLIST_MAX(i): bit 31, the portal in bits 16-30.
    if sr & (1 << 31) != 0 {
        let pt = (sr >> 16) & 0x7fff;
        let row = n.seg.pt(&g, pt).ok_or(PTL_SR_INDEX_INVALID)?;
        return match sr & 0xffff {
            PTL_SR_MES_CUR => Ok(row.len as u64),
            PTL_SR_MES_MAX => Ok(lim.me_list as u64),
            _ => Err(PTL_SR_INDEX_INVALID),
        };
    }
    Ok(match sr {
        PTL_SR_DROP_COUNT => s.drop_count,
        PTL_SR_DROP_LENGTH => s.drop_length,
        PTL_SR_RECV_COUNT => h.hot.recv_count,
        PTL_SR_RECV_LENGTH => h.hot.recv_length,
        PTL_SR_SEND_COUNT => h.hot.send_count,
        PTL_SR_SEND_LENGTH => h.hot.send_length,
        PTL_SR_MES_ALLOC => s.me_alloc,
        PTL_SR_MES_FREED => s.me_freed,
        PTL_SR_MES_MAX => lim.mes as u64,
        PTL_SR_MES_CUR => s.me_alloc - s.me_freed,
        PTL_SR_MDS_ALLOC => s.md_alloc,
        PTL_SR_MDS_FREED => s.md_freed,
        PTL_SR_MDS_MAX => lim.mds as u64,
        PTL_SR_MDS_CUR => s.md_alloc - s.md_freed,
        PTL_SR_EQS_ALLOC => s.eq_alloc,
        PTL_SR_EQS_FREED => s.eq_freed,
        PTL_SR_EQS_MAX => lim.eqs as u64,
        PTL_SR_EQS_CUR => s.eq_alloc - s.eq_freed,
        _ => return Err(PTL_SR_INDEX_INVALID),
    })
}

#[no_mangle]
pub unsafe extern "C" fn PtlNIDist(ni_handle: u32, process: ptl_process_id_t, distance: *mut std::ffi::c_ulong) -> i32 {
    let r = (|| {
        let n = Lib::ni(ni_handle)?;
        if distance.is_null() {
            return Err(PTL_SEGV);
        }
        if process.nid == PTL_NID_ANY || process.pid == PTL_PID_ANY {
            return Err(PTL_PROCESS_INVALID);
        }
        crate::ops::check_nid(&n, process.nid)?;
        let d = if process == n.id {
            0
        } else if process.nid == n.id.nid {
            1
        } else {
            2
        };
        out(distance, d)
    })();
    done("PtlNIDist", r)
}

#[no_mangle]
pub unsafe extern "C" fn PtlNIHandle(handle: u32, ni_handle: *mut u32) -> i32 {
    let r = (|| {
        Lib::check_init()?;
        let (kind, gen, idx) = handle::split(handle);
        let n = Lib::current().map_err(|e| if e == PTL_NI_INVALID { PTL_HANDLE_INVALID } else { e })?;
        let ok = match kind {
            handle::NI => handle == n.handle,
            handle::ME => crate::matchlist::me_live(&n, idx, gen),
            handle::MD => crate::md::md_live(&n, idx, gen),
            _ => crate::eq::eq_local(&n, handle).is_ok(),
        };
        if !ok {
            return Err(PTL_HANDLE_INVALID);
        }
        out(ni_handle, n.handle)
    })();
    done("PtlNIHandle", r)
}

/// "PTL_NI_OK", "PTL_NI_FAIL", or "PTL_NI_UNKNOWN_ERROR" for other values and for an NI
/// handle that is not valid (the interface has no failure codes of its own).
#[no_mangle]
pub extern "C" fn PtlNIFailStr(ni: u32, nal_errno: u32) -> *const c_char {
    if Lib::ni(ni).is_err() {
        return c"PTL_NI_UNKNOWN_ERROR".as_ptr();
    }
    match nal_errno {
        PTL_NI_OK => c"PTL_NI_OK".as_ptr(),
        PTL_NI_FAIL => c"PTL_NI_FAIL".as_ptr(),
        _ => c"PTL_NI_UNKNOWN_ERROR".as_ptr(),
    }
}

#[no_mangle]
pub unsafe extern "C" fn PtlGetUid(ni_handle: u32, uid: *mut u32) -> i32 {
    done("PtlGetUid", Lib::ni(ni_handle).and_then(|n| out(uid, n.uid)))
}

#[no_mangle]
pub unsafe extern "C" fn PtlGetId(ni_handle: u32, id: *mut ptl_process_id_t) -> i32 {
    done("PtlGetId", Lib::ni(ni_handle).and_then(|n| out(id, n.id)))
}

#[no_mangle]
pub unsafe extern "C" fn PtlGetJid(ni_handle: u32, jid: *mut u32) -> i32 {
    done("PtlGetJid", Lib::ni(ni_handle).and_then(|n| out(jid, n.jid)))
}

/// PtlProgress: progress never needs the application; the handle is checked.
#[no_mangle]
pub extern "C" fn PtlProgress(handle: u32, _timeout: u32) -> i32 {
    let mut ni = 0u32;
    // SAFETY: a valid out pointer.
    let rc = unsafe { PtlNIHandle(handle, &mut ni) };
    ret("PtlProgress", rc)
}
