//! Message queues (MSGQ): `GNI_MsgqInit`, `GNI_MsgqRelease`, `GNI_MsgqIdle`,
//! `GNI_MsgqGetConnAttrs`, `GNI_MsgqConnect`, `GNI_MsgqConnRelease`, `GNI_MsgqSend`,
//! `GNI_MsgqProgress`, `GNI_MsgqSize`.
//!
//! MSGQ is the shared-queue variant of SMSG: instead of one mailbox per pair of endpoints,
//! a receiver owns **one receive queue** that every connected sender writes into, and a
//! progress call hands arrived messages to the receive callback.  The documents give only
//! the prototypes, the three structs and three constants (`GNI_MSGQ_MSG_SZ_MAX` = 128,
//! `GNI_MSGQ_NODE_INSTS_MAX` = 48, `GNI_MSGQ_MODE_BLOCKING` = 1); everything below is our
//! decision.
//!
//! # Mechanism
//! The receive queue is a fabric [`Ring`] of [`Entry`] (one message each: sender id and
//! address, lengths, msg_id, tag, up to 128 bytes of header+data) in library-owned shared
//! memory.  That memory is also registered with the fabric (READ_ONLY for peers, in the
//! NIC's protection domain) and the registration's notify ring is the queue itself, so the
//! queue is named by an ordinary memory handle: `GNI_MsgqGetConnAttrs` publishes it as
//! `insts[0].mdh` (`mdh_off` = 0).  A sender resolves it with `rma::notify_ring`
//! (which checks the key's generation and the protection domain) and appends with
//! `rma::post_event`; the receiver pops in `GNI_MsgqProgress`.  After `GNI_MsgqRelease`
//! the registration is gone, so late senders get a transaction error, never a write into
//! freed memory.
//!
//! # Decisions
//! - **One queue per instance**, not per node: every NIC handle may have one MSGQ (a second
//!   `GNI_MsgqInit` on the same NIC: INVALID_STATE until the first is released).
//!   `nloc_insts` (1..=48) is validated and otherwise unused; `GNI_MsgqGetConnAttrs`
//!   describes only the calling instance (`num_insts` = 1, `insts[0].id` = our inst_id),
//!   `pe_addr` = our NIC address, and `*attrs_size` = the bytes used
//!   (`16 + 32 * num_insts` = 48).  The `pe_addr` argument (the remote node the attrs are
//!   for) is not checked: the same attrs serve every peer.
//! - **Connections** are kept by remote `pe_addr` (node address): `GNI_MsgqConnect(q, pe,
//!   attrs)` records each listed instance (id -> its queue handle) under `pe`; calling it
//!   again for the same `pe` adds instances (several ranks per node each connect) and
//!   replaces an instance already listed (a peer that re-created its queue).  At most
//!   `num_msgq_eps` distinct `pe` may be connected (one more: ERROR_RESOURCE).  Bad
//!   attrs (NULL, `attrs->pe_addr != pe_addr`, `num_insts` 0 or > 48, `max_msg_sz` 0 or
//!   > 128, a NULL handle in an instance): INVALID_PARAM.  `GNI_MsgqConnRelease` of a `pe`
//!   that is not connected: INVALID_PARAM.
//! - **Attributes** (`GNI_MsgqInit`, `GNI_MsgqSize`): `max_msg_sz` 1..=128 (header plus data
//!   of one message), `smsg_q_sz` >= 1 (messages per connection), `num_msgq_eps` >= 1
//!   (connections), `nloc_insts` 1..=48, `modes` only `GNI_MSGQ_MODE_BLOCKING`; otherwise
//!   INVALID_PARAM.  The queue holds `max(smsg_q_sz * num_msgq_eps, rcv_pool_sz)` messages
//!   rounded up to a power of two (at least 2, at most [`MAX_ENTRIES`], beyond:
//!   INVALID_PARAM); `rcv_cq_sz` is accepted and unused (the queue is its own CQ).
//!   `GNI_MsgqSize` returns the bytes of that queue, which the library allocates itself.
//! - **Send** (`GNI_MsgqSend(q, ep, hdr, hdr_len, msg, msg_len, msg_id, tag)`): `ep` must be
//!   an endpoint of the queue's NIC, bound to an instance that is connected (bound address =
//!   a connected `pe`, bound inst_id listed for it; else INVALID_STATE; unbound EP or wrong
//!   NIC: INVALID_PARAM).  `hdr_len + msg_len` larger than the receiver's `max_msg_sz`:
//!   ERROR_RESOURCE (as SMSG).  NULL buffer with non-zero length: INVALID_PARAM.  A full
//!   receive queue: NOT_DONE (nothing sent; counted as `GNI_STAT_SMSG_BUFF_CREDITS_STALL`).
//!   On success the message is in the receiver's queue when the call returns and, when the
//!   queue has a `snd_cq`, a local event of type `GNI_CQ_EVENT_TYPE_MSGQ` goes there
//!   (`GNI_CQ_GET_MSG_ID` = msg_id).  An unreachable receiver (exited, released its queue)
//!   is reported like SMSG: the local event carries the error status, or the call returns
//!   TRANSACTION_ERROR when there is no `snd_cq`.  Messages from one sender to one queue
//!   arrive in send order.
//! - **Progress** (`GNI_MsgqProgress(q, timeout)`, timeout in ms): calls `rcv_cb(snd_id,
//!   snd_pe, msg, tag, cb_data)` for each waiting message, at most one queue's worth per
//!   call; `msg` points to the header bytes followed by the data bytes and is valid only
//!   during the callback; `snd_id` is the sender's inst_id, `snd_pe` its NIC address.  The
//!   callback's return value is ignored (the message is consumed).  With nothing waiting,
//!   timeout 0 returns NOT_DONE at once; otherwise it sleeps up to `timeout` ms for the
//!   first message (`(uint32_t)-1` = forever) and returns TIMEOUT when none came.  SUCCESS
//!   when at least one message was delivered.  The callback may call `GNI_MsgqSend`.
//! - **Idle**: SUCCESS when no message is waiting in our queue, NOT_DONE otherwise.
//! - **Release**: frees the queue at once (waiting messages are dropped, connections
//!   forgotten); the handle is invalid afterwards (INVALID_PARAM).  After `GNI_CdmDestroy`
//!   of its NIC every call but Release answers INVALID_PARAM.
//! - NULL/unknown/released `msgq_hndl`, NULL `rcv_cb`, NULL out pointers, invalid NIC or
//!   `snd_cq` (or a CQ of another NIC): INVALID_PARAM.

use crate::cqe::{self, Status};
use crate::objects::*;
use crate::types::*;
use libc::c_void;
use softnic_fabric::mem::{self, Access, CrayHandle, MemKey, SharedMem};
use softnic_fabric::ring::{Pod, Ring};
use softnic_fabric::rma;
use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Largest queue, in messages.
pub const MAX_ENTRIES: u64 = 1 << 16;
const MSG_MAX: usize = GNI_MSGQ_MSG_SZ_MAX as usize;
const INSTS_MAX: u32 = GNI_MSGQ_NODE_INSTS_MAX as u32;
/// Bytes of `gni_msgq_ep_attr_t` before `insts`, and of one `gni_msgq_rem_inst_t`.
const EP_ATTR_HDR: u32 = 16;
const REM_INST: u32 = 32;

/// One message in a receive queue.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Entry {
    snd_id: u32,
    snd_pe: u32,
    hdr_len: u32,
    msg_len: u32,
    msg_id: u32,
    tag: u32,
    /// Header bytes, then data bytes.
    data: [u8; MSG_MAX],
}
// SAFETY: repr(C), integers and byte arrays only, no padding-sensitive invariants.
unsafe impl Pod for Entry {}

pub static MSGQS: Table<Msgq> = Table::new(0xc6);

pub struct Msgq {
    nic: Arc<Nic>,
    rcv_cb: gni_msgq_rcv_cb_func,
    cb_data: usize,
    snd_cq: Option<Arc<Cq>>,
    max_msg_sz: u32,
    smsg_q_sz: u32,
    num_eps: u32,
    mem: ManuallyDrop<SharedMem>,
    ring: Ring<Entry>,
    key: MemKey,
    /// Connected pe_addr -> (inst_id -> (queue handle of that instance, its max_msg_sz)).
    conns: Mutex<HashMap<u32, HashMap<u32, (gni_mem_handle_t, u32)>>>,
}

impl Drop for Msgq {
    fn drop(&mut self) {
        let _ = mem::deregister(self.key);
        // SAFETY: dropped once, here; the ring view is not used after this.
        let m = unsafe { ManuallyDrop::take(&mut self.mem) };
        let _ = mem::free_shared(m);
    }
}

/// NICs that have a MSGQ (`Arc::as_ptr` of the Nic -> msgq handle).
static BY_NIC: Mutex<Option<HashMap<usize, usize>>> = Mutex::new(None);

/// Queue capacity (messages) of valid attributes; None when they are unusable.
fn capacity(a: &gni_msgq_attr_t) -> Option<u32> {
    if a.max_msg_sz == 0 || a.max_msg_sz as usize > MSG_MAX || a.smsg_q_sz == 0 || a.num_msgq_eps == 0 {
        return None;
    }
    if a.nloc_insts == 0 || a.nloc_insts > INSTS_MAX || a.modes as i32 & !GNI_MSGQ_MODE_BLOCKING != 0 {
        return None;
    }
    let n = (a.smsg_q_sz as u64 * a.num_msgq_eps as u64).max(a.rcv_pool_sz as u64).max(2).next_power_of_two();
    (n <= MAX_ENTRIES).then_some(n as u32)
}

fn size_of_queue(a: &gni_msgq_attr_t) -> Option<usize> {
    let n = Ring::<Entry>::bytes_needed(capacity(a)?);
    (n > 0).then_some(n)
}

fn msgq_of(h: gni_msgq_handle_t) -> GniResult<Arc<Msgq>> {
    let q = MSGQS.get(h as *const c_void)?;
    if q.nic.is_detached() {
        return Err(GNI_RC_INVALID_PARAM);
    }
    Ok(q)
}

#[no_mangle]
pub unsafe extern "C" fn GNI_MsgqSize(attrs: *mut gni_msgq_attr_t, size: *mut u32) -> gni_return_t {
    // SAFETY: NULL or the caller's struct.
    let Some(a) = (unsafe { attrs.as_ref() }) else { return GNI_RC_INVALID_PARAM };
    if size.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    match size_of_queue(a) {
        Some(n) if n <= u32::MAX as usize => {
            // SAFETY: non-NULL out pointer.
            unsafe { size.write(n as u32) };
            GNI_RC_SUCCESS
        }
        _ => GNI_RC_INVALID_PARAM,
    }
}

#[no_mangle]
pub unsafe extern "C" fn GNI_MsgqInit(
    nic_hndl: gni_nic_handle_t,
    rcv_cb: Option<gni_msgq_rcv_cb_func>,
    cb_data: *mut c_void,
    snd_cq: gni_cq_handle_t,
    attrs: *mut gni_msgq_attr_t,
    msgq_hndl: *mut gni_msgq_handle_t,
) -> gni_return_t {
    let Ok(nic) = NICS.get(nic_hndl as *const c_void) else { return GNI_RC_INVALID_PARAM };
    if nic.is_detached() || msgq_hndl.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    let Some(rcv_cb) = rcv_cb else { return GNI_RC_INVALID_PARAM };
    // SAFETY: NULL or the caller's struct.
    let Some(a) = (unsafe { attrs.as_ref() }) else { return GNI_RC_INVALID_PARAM };
    let (Some(cap), Some(len)) = (capacity(a), size_of_queue(a)) else { return GNI_RC_INVALID_PARAM };
    let snd_cq = if snd_cq.is_null() {
        None
    } else {
        match CQS.get(snd_cq as *const c_void) {
            Ok(c) if Arc::ptr_eq(&c.nic, &nic) => Some(c),
            _ => return GNI_RC_INVALID_PARAM,
        }
    };
    let mut by_nic = lock(&BY_NIC);
    let by_nic = by_nic.get_or_insert_with(HashMap::new);
    let nic_key = Arc::as_ptr(&nic) as usize;
    if let Some(&h) = by_nic.get(&nic_key) {
        if MSGQS.get(h as *const c_void).is_ok() {
            return GNI_RC_INVALID_STATE;
        }
    }
    let Ok(shm) = mem::alloc_shared(len) else { return GNI_RC_ERROR_NOMEM };
    // SAFETY: fresh zeroed shared memory of `len` bytes, owned by the Msgq from here.
    let ring = match unsafe { Ring::<Entry>::init(shm.as_ptr(), len, cap) } {
        Ok(r) => r,
        Err(_) => {
            let _ = mem::free_shared(shm);
            return GNI_RC_ERROR_RESOURCE;
        }
    };
    let loc = shm.ring_loc(0, len);
    let key = mem::register(shm.as_ptr() as usize, len, Access::ReadOnly, nic.pd_key());
    let (loc, key) = match (loc, key) {
        (Ok(l), Ok(k)) => (l, k),
        (_, k) => {
            if let Ok(k) = k {
                let _ = mem::deregister(k);
            }
            let _ = mem::free_shared(shm);
            return GNI_RC_ERROR_RESOURCE;
        }
    };
    if mem::set_notify(key, Some(loc)).is_err() {
        let _ = mem::deregister(key);
        let _ = mem::free_shared(shm);
        return GNI_RC_ERROR_RESOURCE;
    }
    let q = Arc::new(Msgq {
        nic: nic.clone(),
        rcv_cb,
        cb_data: cb_data as usize,
        snd_cq,
        max_msg_sz: a.max_msg_sz,
        smsg_q_sz: a.smsg_q_sz,
        num_eps: a.num_msgq_eps,
        mem: ManuallyDrop::new(shm),
        ring,
        key,
        conns: Mutex::new(HashMap::new()),
    });
    let h = MSGQS.insert(q);
    by_nic.insert(nic_key, h as usize);
    // SAFETY: checked non-NULL.
    unsafe { msgq_hndl.write(h as gni_msgq_handle_t) };
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_MsgqRelease(msgq_hndl: gni_msgq_handle_t) -> gni_return_t {
    match MSGQS.remove(msgq_hndl as *const c_void) {
        Ok(q) => {
            if let Some(m) = lock(&BY_NIC).as_mut() {
                m.remove(&(Arc::as_ptr(&q.nic) as usize));
            }
            GNI_RC_SUCCESS
        }
        Err(rc) => rc,
    }
}

#[no_mangle]
pub unsafe extern "C" fn GNI_MsgqIdle(msgq_hndl: gni_msgq_handle_t) -> gni_return_t {
    match msgq_of(msgq_hndl) {
        Ok(q) if q.ring.is_empty() => GNI_RC_SUCCESS,
        Ok(_) => GNI_RC_NOT_DONE,
        Err(rc) => rc,
    }
}

#[no_mangle]
pub unsafe extern "C" fn GNI_MsgqGetConnAttrs(msgq_hndl: gni_msgq_handle_t, pe_addr: u32, attrs: *mut gni_msgq_ep_attr_t, attrs_size: *mut u32) -> gni_return_t {
    let _ = pe_addr;
    let Ok(q) = msgq_of(msgq_hndl) else { return GNI_RC_INVALID_PARAM };
    if attrs.is_null() || attrs_size.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    let Ok(h) = CrayHandle::mine(q.mem.as_ptr() as u64, q.key) else { return GNI_RC_ERROR_RESOURCE };
    let w = h.to_words();
    // SAFETY: the caller's struct; we write the fields we define, then the size.
    unsafe {
        let a = &mut *attrs;
        a.pe_addr = q.nic.address;
        a.max_msg_sz = q.max_msg_sz;
        a.smsg_q_sz = q.smsg_q_sz;
        a.num_insts = 1;
        a.insts[0] = gni_msgq_rem_inst_t { id: q.nic.inst_id(), mdh: gni_mem_handle_t { qword1: w[0], qword2: w[1] }, mdh_off: 0 };
        attrs_size.write(EP_ATTR_HDR + REM_INST);
    }
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_MsgqConnect(msgq_hndl: gni_msgq_handle_t, pe_addr: u32, attrs: *mut gni_msgq_ep_attr_t) -> gni_return_t {
    let Ok(q) = msgq_of(msgq_hndl) else { return GNI_RC_INVALID_PARAM };
    // SAFETY: NULL or the caller's struct.
    let Some(a) = (unsafe { attrs.as_ref() }) else { return GNI_RC_INVALID_PARAM };
    if a.pe_addr != pe_addr || a.num_insts == 0 || a.num_insts > INSTS_MAX || a.max_msg_sz == 0 || a.max_msg_sz as usize > MSG_MAX {
        return GNI_RC_INVALID_PARAM;
    }
    let insts = &a.insts[..a.num_insts as usize];
    if insts.iter().any(|i| i.mdh.qword1 == 0 && i.mdh.qword2 == 0) {
        return GNI_RC_INVALID_PARAM;
    }
    let mut conns = lock(&q.conns);
    if !conns.contains_key(&pe_addr) && conns.len() >= q.num_eps as usize {
        return GNI_RC_ERROR_RESOURCE;
    }
    let c = conns.entry(pe_addr).or_default();
    for i in insts {
        c.insert(i.id, (i.mdh, a.max_msg_sz));
    }
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_MsgqConnRelease(msgq_hndl: gni_msgq_handle_t, pe_addr: u32) -> gni_return_t {
    let Ok(q) = msgq_of(msgq_hndl) else { return GNI_RC_INVALID_PARAM };
    let removed = lock(&q.conns).remove(&pe_addr);
    match removed {
        Some(_) => GNI_RC_SUCCESS,
        None => GNI_RC_INVALID_PARAM,
    }
}

#[no_mangle]
pub unsafe extern "C" fn GNI_MsgqSend(
    msgq_hndl: gni_msgq_handle_t,
    ep_hndl: gni_ep_handle_t,
    hdr: *mut c_void,
    hdr_len: u32,
    msg: *mut c_void,
    msg_len: u32,
    msg_id: u32,
    msg_tag: u8,
) -> gni_return_t {
    const API: &str = "GNI_MsgqSend";
    let Ok(q) = msgq_of(msgq_hndl) else { return GNI_RC_INVALID_PARAM };
    let Ok(ep) = EPS.get(ep_hndl as *const c_void) else { return GNI_RC_INVALID_PARAM };
    if !Arc::ptr_eq(&ep.nic, &q.nic) || (hdr.is_null() && hdr_len > 0) || (msg.is_null() && msg_len > 0) {
        return GNI_RC_INVALID_PARAM;
    }
    let mut st = ep.state();
    let Some(b) = st.binding.as_ref() else { return GNI_RC_INVALID_PARAM };
    let (raddr, rid) = (b.remote_addr, b.remote_id);
    // The receiving instance: the one listed under the bound remote_id, or the only one
    // connected at that node (remote_id is a user value that need not be an inst_id).
    let found = lock(&q.conns).get(&raddr).and_then(|c| c.get(&rid).copied().or_else(|| (c.len() == 1).then(|| *c.values().next().expect("one"))));
    let Some((qh, max)) = found else {
        return GNI_RC_INVALID_STATE;
    };
    let total = hdr_len as u64 + msg_len as u64;
    if total > max as u64 {
        return GNI_RC_ERROR_RESOURCE;
    }
    let mut e = Entry { snd_id: q.nic.inst_id(), snd_pe: q.nic.address, hdr_len, msg_len, msg_id, tag: msg_tag as u32, data: [0; MSG_MAX] };
    // SAFETY: the caller's buffers of the given lengths (NULL only with length 0); total
    // <= max_msg_sz <= MSG_MAX.
    unsafe {
        if hdr_len > 0 {
            std::ptr::copy_nonoverlapping(hdr as *const u8, e.data.as_mut_ptr(), hdr_len as usize);
        }
        if msg_len > 0 {
            std::ptr::copy_nonoverlapping(msg as *const u8, e.data.as_mut_ptr().add(hdr_len as usize), msg_len as usize);
        }
    }
    let local_data = Ep::local_event(&st);
    let pd = q.nic.pd_key();
    let key = CrayHandle::from_words([qh.qword1, qh.qword2]).key;
    // The queue's handle names the receiving process (see Ep::route).
    let routed = ep.route(&mut st, &qh).map(|_| st.binding.as_ref().and_then(|b| b.route.as_ref()).expect("route() caches the peer").1.clone());
    let result: Result<(), Status> = match routed {
        Err(None) => return GNI_RC_INVALID_PARAM,
        Err(Some(s)) => Err(s),
        Ok(peer) => match rma::notify_ring(&peer, key, pd) {
            Ok(Some(loc)) => match rma::post_event(&peer, &loc, &e, false) {
                Ok(_) => Ok(()),
                Err(softnic_fabric::Error::NoSpace) => {
                    drop(st);
                    crate::stats::bump(&q.nic, GNI_STAT_SMSG_BUFF_CREDITS_STALL);
                    return GNI_RC_NOT_DONE;
                }
                Err(err) => Err(Status::from_fabric(err)),
            },
            Ok(None) => Err(Status::from_fabric(softnic_fabric::Error::Unsupported)),
            Err(err) => Err(Status::from_fabric(err)),
        },
    };
    drop(st);
    let status = match result {
        Ok(()) => Status::Ok,
        Err(s) => {
            softnic_fabric::sn_debug!(API, "message not delivered: {}", s.describe());
            crate::errors::report_transaction_error(&q.nic, s, [0, total, 0, 0]);
            s
        }
    };
    match &q.snd_cq {
        Some(cq) => cq.push(cqe::make(cqe::SRC_LOCAL, cqe::TYPE_MSGQ, status, local_data as u64, msg_id as u64)),
        None if status != Status::Ok => return GNI_RC_TRANSACTION_ERROR,
        None => {}
    }
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_MsgqProgress(msgq_hndl: gni_msgq_handle_t, timeout: u32) -> gni_return_t {
    let Ok(q) = msgq_of(msgq_hndl) else { return GNI_RC_INVALID_PARAM };
    if q.ring.is_empty() && timeout != 0 {
        let t = (timeout != u32::MAX).then(|| Duration::from_millis(timeout as u64));
        if q.ring.wait_nonempty(t).is_err() && q.ring.is_empty() {
            return GNI_RC_TIMEOUT;
        }
    }
    let mut n = 0u32;
    while n < q.ring.capacity() {
        let Some(mut e) = q.ring.pop() else { break };
        n += 1;
        // SAFETY: the program's callback, called with a message copy valid for the call.
        unsafe { (q.rcv_cb)(e.snd_id, e.snd_pe, e.data.as_mut_ptr() as *mut c_void, e.tag as u8, q.cb_data as *mut c_void) };
    }
    if n == 0 {
        return if timeout == 0 { GNI_RC_NOT_DONE } else { GNI_RC_TIMEOUT };
    }
    GNI_RC_SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(max: u32, q: u32, eps: u32) -> gni_msgq_attr_t {
        gni_msgq_attr_t { max_msg_sz: max, smsg_q_sz: q, rcv_pool_sz: 0, num_msgq_eps: eps, nloc_insts: 1, modes: 0, rcv_cq_sz: 0 }
    }

    #[test]
    fn capacities() {
        assert_eq!(capacity(&attrs(128, 4, 3)), Some(16));
        assert_eq!(capacity(&attrs(1, 1, 1)), Some(2));
        assert_eq!(capacity(&attrs(129, 4, 3)), None);
        assert_eq!(capacity(&attrs(0, 4, 3)), None);
        assert_eq!(capacity(&attrs(64, 0, 3)), None);
        assert_eq!(capacity(&attrs(64, 4, 0)), None);
        assert_eq!(capacity(&attrs(64, 1 << 16, 2)), None);
        let mut a = attrs(64, 4, 4);
        a.rcv_pool_sz = 100;
        assert_eq!(capacity(&a), Some(128));
        a.modes = 2;
        assert_eq!(capacity(&a), None);
        a.modes = 1;
        a.nloc_insts = 49;
        assert_eq!(capacity(&a), None);
        assert!(size_of_queue(&attrs(128, 4, 3)).unwrap() >= 16 * std::mem::size_of::<Entry>());
        assert_eq!(std::mem::size_of::<Entry>(), 24 + MSG_MAX);
    }
}
