//! Datagram exports: GNI_EpPostData*, GNI_EpPostDataTest*/Wait*/Cancel*,
//! GNI_PostDataProbe*: handle and argument checks around the NIC's datagram board; the
//! mechanism and the decisions where the digest is silent are in crate::datagram.

use crate::datagram::{TestResult, MAXDG};
use crate::handles::GniResult;
use crate::objects::{Ep, Nic, EPS, NICS};
use crate::types::*;
use libc::c_void;
use std::sync::Arc;

unsafe fn out<T>(p: *mut T, v: T) {
    if !p.is_null() {
        // SAFETY: caller's contract (NULL skipped).
        unsafe { p.write(v) };
    }
}

fn post_common(ep_h: gni_ep_handle_t, in_data: *mut c_void, data_len: u16, out_buf: *mut c_void, buf_size: u16, id: Option<u64>) -> gni_return_t {
    let Ok(ep) = EPS.get(ep_h as *const c_void) else { return GNI_RC_INVALID_PARAM };
    if ep.nic.is_detached() {
        return GNI_RC_INVALID_PARAM;
    }
    if data_len as usize > MAXDG {
        return GNI_RC_SIZE_ERROR;
    }
    if (data_len > 0 && in_data.is_null()) || (buf_size > 0 && out_buf.is_null()) || id == Some(u64::MAX) {
        return GNI_RC_INVALID_PARAM;
    }
    let input: &[u8] = if data_len == 0 {
        &[]
    } else {
        // SAFETY: the caller's buffer of data_len bytes.
        unsafe { std::slice::from_raw_parts(in_data as *const u8, data_len as usize) }
    };
    let uid = ep.state().dgram.uid;
    let bind = ep.state().binding.as_ref().map(|b| (b.remote_addr, b.remote_id));
    ep.nic.dgram.post(uid, bind, input, out_buf as usize, buf_size, id)
}

#[no_mangle]
pub unsafe extern "C" fn GNI_EpPostData(ep_hndl: gni_ep_handle_t, in_data: *mut c_void, data_len: u16, out_buf: *mut c_void, buf_size: u16) -> gni_return_t {
    post_common(ep_hndl, in_data, data_len, out_buf, buf_size, None)
}

#[no_mangle]
pub unsafe extern "C" fn GNI_EpPostDataWId(ep_hndl: gni_ep_handle_t, in_data: *mut c_void, data_len: u16, out_buf: *mut c_void, buf_size: u16, datagram_id: u64) -> gni_return_t {
    post_common(ep_hndl, in_data, data_len, out_buf, buf_size, Some(datagram_id))
}

unsafe fn report(r: TestResult, post_state: *mut gni_post_state_t, remote_addr: *mut u32, remote_id: *mut u32) -> gni_return_t {
    if r.0 == GNI_RC_NO_MATCH || r.0 == GNI_RC_INVALID_PARAM {
        return r.0;
    }
    // SAFETY: caller's pointers (NULL checked by the callers).
    unsafe {
        out(post_state, r.1);
        if r.1 != GNI_POST_PENDING {
            out(remote_addr, r.2);
            out(remote_id, r.3);
        }
    }
    r.0
}

fn ep_of(ep_h: gni_ep_handle_t) -> GniResult<Arc<Ep>> {
    let ep = EPS.get(ep_h as *const c_void)?;
    if ep.nic.is_detached() {
        return Err(GNI_RC_INVALID_PARAM);
    }
    Ok(ep)
}

unsafe fn test_common(ep_h: gni_ep_handle_t, id: Option<u64>, timeout: Option<u32>, post_state: *mut gni_post_state_t, remote_addr: *mut u32, remote_id: *mut u32) -> gni_return_t {
    let Ok(ep) = ep_of(ep_h) else { return GNI_RC_INVALID_PARAM };
    if post_state.is_null() || remote_addr.is_null() || remote_id.is_null() || id == Some(u64::MAX) || timeout == Some(0) {
        return GNI_RC_INVALID_PARAM;
    }
    let uid = ep.state().dgram.uid;
    let nic = &ep.nic;
    let r = match timeout {
        None => nic.dgram.test(uid, id),
        Some(t) => nic.dgram.wait(uid, id, t),
    };
    if r.1 == GNI_POST_COMPLETED {
        // The instance this endpoint exchanged with (symmetric vMDH handles may resolve
        // through it, see Ep::route).
        ep.state().dgram_peer = Some((r.2, r.3));
    }
    // SAFETY: pointers checked non-NULL above.
    unsafe { report(r, post_state, remote_addr, remote_id) }
}

#[no_mangle]
pub unsafe extern "C" fn GNI_EpPostDataTest(ep_hndl: gni_ep_handle_t, post_state: *mut gni_post_state_t, remote_addr: *mut u32, remote_id: *mut u32) -> gni_return_t {
    // SAFETY: forwarded caller pointers.
    unsafe { test_common(ep_hndl, None, None, post_state, remote_addr, remote_id) }
}

#[no_mangle]
pub unsafe extern "C" fn GNI_EpPostDataTestById(ep_hndl: gni_ep_handle_t, datagram_id: u64, post_state: *mut gni_post_state_t, remote_addr: *mut u32, remote_id: *mut u32) -> gni_return_t {
    // SAFETY: forwarded caller pointers.
    unsafe { test_common(ep_hndl, Some(datagram_id), None, post_state, remote_addr, remote_id) }
}

softnic_fabric::blocking_export! {
    pub unsafe fn GNI_EpPostDataWait(ep_hndl: gni_ep_handle_t, timeout: u32, post_state: *mut gni_post_state_t, remote_addr: *mut u32, remote_id: *mut u32) -> gni_return_t {
        // SAFETY: forwarded caller pointers.
        unsafe { test_common(ep_hndl, None, Some(timeout), post_state, remote_addr, remote_id) }
    }
}

softnic_fabric::blocking_export! {
    pub unsafe fn GNI_EpPostDataWaitById(ep_hndl: gni_ep_handle_t, datagram_id: u64, timeout: u32, post_state: *mut gni_post_state_t, remote_addr: *mut u32, remote_id: *mut u32) -> gni_return_t {
        // SAFETY: forwarded caller pointers.
        unsafe { test_common(ep_hndl, Some(datagram_id), Some(timeout), post_state, remote_addr, remote_id) }
    }
}

#[no_mangle]
pub unsafe extern "C" fn GNI_EpPostDataCancel(ep_hndl: gni_ep_handle_t) -> gni_return_t {
    let Ok(ep) = ep_of(ep_hndl) else { return GNI_RC_INVALID_PARAM };
    let uid = ep.state().dgram.uid;
    ep.nic.dgram.cancel(uid, None)
}

#[no_mangle]
pub unsafe extern "C" fn GNI_EpPostDataCancelById(ep_hndl: gni_ep_handle_t, datagram_id: u64) -> gni_return_t {
    let Ok(ep) = ep_of(ep_hndl) else { return GNI_RC_INVALID_PARAM };
    if datagram_id == u64::MAX {
        return GNI_RC_INVALID_PARAM;
    }
    let uid = ep.state().dgram.uid;
    ep.nic.dgram.cancel(uid, Some(datagram_id))
}

fn nic_of(h: gni_nic_handle_t) -> GniResult<Arc<Nic>> {
    let nic = NICS.get(h as *const c_void)?;
    if nic.is_detached() {
        return Err(GNI_RC_INVALID_PARAM);
    }
    Ok(nic)
}

#[no_mangle]
pub unsafe extern "C" fn GNI_PostDataProbe(nic_hndl: gni_nic_handle_t, remote_addr: *mut u32, remote_id: *mut u32) -> gni_return_t {
    let Ok(nic) = nic_of(nic_hndl) else { return GNI_RC_INVALID_PARAM };
    if remote_addr.is_null() || remote_id.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    match nic.dgram.probe(false) {
        None => GNI_RC_NO_MATCH,
        Some((a, p, _)) => {
            // SAFETY: checked non-NULL.
            unsafe {
                remote_addr.write(a);
                remote_id.write(p);
            }
            GNI_RC_SUCCESS
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn GNI_PostDataProbeById(nic_hndl: gni_nic_handle_t, datagram_id: *mut u64) -> gni_return_t {
    let Ok(nic) = nic_of(nic_hndl) else { return GNI_RC_INVALID_PARAM };
    if datagram_id.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    match nic.dgram.probe(true) {
        None => GNI_RC_NO_MATCH,
        Some((_, _, id)) => {
            // SAFETY: checked non-NULL.
            unsafe { datagram_id.write(id) };
            GNI_RC_SUCCESS
        }
    }
}

softnic_fabric::blocking_export! {
    pub unsafe fn GNI_PostdataProbeWaitById(nic_hndl: gni_nic_handle_t, timeout: u32, datagram_id: *mut u64) -> gni_return_t {
        let Ok(nic) = nic_of(nic_hndl) else { return GNI_RC_INVALID_PARAM };
        if datagram_id.is_null() || timeout == 0 {
            return GNI_RC_INVALID_PARAM;
        }
        match nic.dgram.probe_wait(timeout) {
            None => GNI_RC_TIMEOUT,
            Some(id) => {
                // SAFETY: checked non-NULL.
                unsafe { datagram_id.write(id) };
                GNI_RC_SUCCESS
            }
        }
    }
}

softnic_fabric::blocking_export! {
    /// The 2010 manual's spelling of [`GNI_PostdataProbeWaitById`].
    pub unsafe fn GNI_PostDataProbeWaitById(nic_hndl: gni_nic_handle_t, timeout: u32, datagram_id: *mut u64) -> gni_return_t {
        // SAFETY: forwarded.
        unsafe { GNI_PostdataProbeWaitById(nic_hndl, timeout, datagram_id) }
    }
}
