//! Endpoints: GNI_EpCreate, GNI_EpBind, GNI_EpUnbind, GNI_EpDestroy, GNI_EpSetEventData,
//! GNI_EpIdle.  The object is [`crate::objects::Ep`]; datagrams are in crate::postdata.
//!
//! # Decisions
//! - `src_cq_hndl` may be NULL (endpoints used only for datagrams or SMSG with explicit
//!   CQs); a CQ of another NIC is INVALID_PARAM.  The CQ counts the endpoint as a user
//!   until EpDestroy.
//! - EpBind does not contact the peer (it may not be attached yet).  `remote_addr` names
//!   the node; the process a transaction reaches is the owner its remote memory handle
//!   names (`Ep::route`), so `remote_id` may be any value (it is the default event data
//!   and the datagram match key).  Binding an already bound endpoint rebinds it when nothing is pending
//!   on it (no transaction in flight, no datagram posted, no SMSG set up); otherwise
//!   INVALID_PARAM.
//! - EpUnbind: NOT_DONE while transactions are in flight or a datagram is posted (not yet
//!   reaped); releases SMSG state.  Unbinding an unbound endpoint is SUCCESS.
//! - EpDestroy cancels the endpoint's outstanding datagrams, which then stay visible to
//!   the probes (GNI_PostDataProbe(ById), GNI_PostdataProbeWaitById, woken by it) in the
//!   cancelled state until one reports them; completed, unreaped ones are dropped.  It
//!   succeeds even with transactions in flight (their events still arrive on the CQ).
//! - GNI_EpIdle: SUCCESS when nothing is in flight and no datagram is posted, else
//!   NOT_DONE.

use crate::handles::GniResult;
use crate::objects::*;
use crate::types::*;
use libc::c_void;
use std::sync::atomic::Ordering;
use std::sync::Arc;

fn ep_of(h: gni_ep_handle_t) -> GniResult<Arc<Ep>> {
    EPS.get(h as *const c_void)
}

#[no_mangle]
pub unsafe extern "C" fn GNI_EpCreate(nic_hndl: gni_nic_handle_t, src_cq_hndl: gni_cq_handle_t, ep_hndl: *mut gni_ep_handle_t) -> gni_return_t {
    let Ok(nic) = NICS.get(nic_hndl as *const c_void) else { return GNI_RC_INVALID_PARAM };
    if nic.is_detached() || ep_hndl.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    let cq = if src_cq_hndl.is_null() {
        None
    } else {
        let Ok(cq) = CQS.get(src_cq_hndl as *const c_void) else { return GNI_RC_INVALID_PARAM };
        if !Arc::ptr_eq(&cq.nic, &nic) {
            return GNI_RC_INVALID_PARAM;
        }
        Some(cq)
    };
    if let Some(cq) = &cq {
        cq.users.fetch_add(1, Ordering::AcqRel);
    }
    let ep = Arc::new(Ep {
        nic,
        cq,
        st: SpinLock::new(EpState { binding: None, local_event: None, remote_event: None, smsg: None, dgram: Default::default(), dgram_peer: None, in_flight: 0, ce: None }),
    });
    let h = EPS.insert(ep);
    // SAFETY: checked non-NULL.
    unsafe { ep_hndl.write(h as gni_ep_handle_t) };
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_EpSetEventData(ep_hndl: gni_ep_handle_t, local_event: u32, remote_event: u32) -> gni_return_t {
    let Ok(ep) = ep_of(ep_hndl) else { return GNI_RC_INVALID_PARAM };
    let mut st = ep.state();
    st.local_event = Some(local_event);
    st.remote_event = Some(remote_event);
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_EpBind(ep_hndl: gni_ep_handle_t, remote_addr: u32, remote_id: u32) -> gni_return_t {
    let Ok(ep) = ep_of(ep_hndl) else { return GNI_RC_INVALID_PARAM };
    if ep.nic.is_detached() {
        return GNI_RC_INVALID_PARAM;
    }
    let uid = ep.state().dgram.uid;
    if ep.nic.dgram.has_active(uid) {
        return GNI_RC_INVALID_PARAM;
    }
    let mut st = ep.state();
    if st.binding.is_some() && (st.in_flight != 0 || st.smsg.is_some()) {
        return GNI_RC_INVALID_PARAM;
    }
    st.binding = Some(Binding { remote_addr, remote_id, route: None, pins: Default::default() });
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_EpUnbind(ep_hndl: gni_ep_handle_t) -> gni_return_t {
    let Ok(ep) = ep_of(ep_hndl) else { return GNI_RC_INVALID_PARAM };
    let uid = ep.state().dgram.uid;
    if ep.nic.dgram.has_active(uid) {
        return GNI_RC_NOT_DONE;
    }
    let mut st = ep.state();
    if st.in_flight != 0 {
        return GNI_RC_NOT_DONE;
    }
    st.binding = None;
    st.smsg = None;
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_EpIdle(ep_hndl: gni_ep_handle_t) -> gni_return_t {
    let Ok(ep) = ep_of(ep_hndl) else { return GNI_RC_INVALID_PARAM };
    let uid = ep.state().dgram.uid;
    if ep.nic.dgram.has_active(uid) || ep.state().in_flight != 0 {
        return GNI_RC_NOT_DONE;
    }
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_EpDestroy(ep_hndl: gni_ep_handle_t) -> gni_return_t {
    let Ok(ep) = EPS.remove(ep_hndl as *const c_void) else { return GNI_RC_INVALID_PARAM };
    let uid = ep.state().dgram.uid;
    ep.nic.dgram.forget_ep(uid);
    {
        let mut st = ep.state();
        st.binding = None;
        st.smsg = None;
    }
    if let Some(cq) = &ep.cq {
        cq.users.fetch_sub(1, Ordering::AcqRel);
    }
    GNI_RC_SUCCESS
}
