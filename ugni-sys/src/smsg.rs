//! Short messaging (SMSG): mailboxes in the users' registered memory, credits, in-order
//! delivery per endpoint, SMSG events.
//!
//! **Mailbox layout** (ours; `GNI_SmsgBufferSizeNeeded` returns its size).  A mailbox
//! lives at `msg_buffer + mbox_offset` in memory the user allocated, **zeroed** and
//! registered (read-write), and is written by exactly one peer:
//! ```text
//! +0     u64  credits word: how many of the OWNER's messages the peer has released
//! +8..64      reserved
//! +64    slot[0], slot[1], ... slot[mbox_maxcredit-1], each SLOT bytes:
//!          +0  u64 seq       n+1 for the n-th message (0-based) placed in this slot;
//!                            written LAST, with one atomic 64-bit store (publication)
//!          +8  u32 header_length   +12 u32 data_length
//!          +16 u8  tag             +20 u32 msg_id        +24 reserved
//!          +32 header bytes, then data bytes (contiguous)
//! SLOT = round_up(32 + msg_maxsize, 64)
//! ```
//! **Sending** (`GNI_SmsgSend[WTag]`) on endpoint E (local attr = my mailbox, remote attr =
//! the peer's): my n-th message goes to slot n % maxcredit of the peer's mailbox, if
//! `n - released < maxcredit` where `released` is the credits word of MY mailbox (written
//! by the peer); else `GNI_RC_NOT_DONE` (nothing sent; retry after the peer releases).
//! The slot is filled with one put, then published by its seq word; then the SMSG
//! remote event goes to the dst CQ of the peer's mailbox registration (data = my EP's
//! remote_event data, by default my inst_id), so the message is visible before its
//! event; then a local SMSG event goes to E's CQ (`GNI_CQ_GET_MSG_ID` = msg_id,
//! `GNI_CQ_GET_INST_ID` = E's local_event data, low 22 bits).  The message is in the
//! peer's memory when the call returns (the transport is reliable, so MBOX and
//! MBOX_AUTO_RETRANSMIT behave the same and msg_id is always carried).
//!
//! **Receiving**: `GNI_SmsgGetNext[WTag]` looks at the slot of the next expected message
//! in my mailbox; when its seq says it has arrived, the message becomes *current* and
//! the call returns a pointer to its header, valid until `GNI_SmsgRelease`.  Calling
//! GetNext again before Release returns the same current message.  `GNI_SmsgRelease`
//! frees the slot and returns the credit by storing my release count in the credits
//! word of the peer's mailbox (found through my remote attr).  Messages are presented in
//! send order (FIFO per endpoint).  Tags: untagged sends carry tag 0; GetNextWTag matches
//! `*tag` or `GNI_SMSG_ANY_TAG` (0xFF) and sets `*tag` to the message's tag on success;
//! on a mismatch it returns `GNI_RC_NO_MATCH`, leaves `*tag` unchanged and the message
//! stays at the head.
//!
//! **Codes**: SmsgInit: NULL attrs, bad msg_type, zero credits/size, msg_maxsize >
//! `GNI_SMSG_MAX_SIZE`, `buff_size` smaller than the mailbox, a local mailbox not inside
//! a live read-write registration of this process -> INVALID_PARAM; EP not bound ->
//! INVALID_STATE.  Send: EP not SMSG-initialised, NULL buffer with a non-zero length ->
//! INVALID_PARAM; header_length + data_length > the peer's msg_maxsize -> ERROR_RESOURCE
//! (the later header's reading); no credit -> NOT_DONE; the peer unreachable (exited,
//! deregistered its mailbox) -> the local SMSG event carries the transaction-error
//! status (TRANSACTION_ERROR when the EP has no CQ).
//!
//! A send refused for lack of credit counts `GNI_STAT_SMSG_MBOX_CREDITS_STALL` (crate::stats).
//! The remote mailbox handle may be plain, symmetric vMDH or multi-segment (then the
//! mailbox address is an offset).  Plain (and vMDH) mailboxes are pinned on first use
//! ([`Channel`]): a message is then one bounds-free copy into the peer's slot, its
//! sequence store and one ring push, after a re-check of a few words; segmented ones, and
//! any pin that fails its re-check, are resolved per message (crate::memhandle).
//!
//! `GNI_SmsgSetDeliveryMode` and `GNI_SmsgSetMaxRetrans` validate the NIC and succeed:
//! delivery is always in order and never needs retransmission.

use crate::cqe::{self, Status};
use crate::mailbox::{Channel, SmsgState, MBOX_HDR, SLOT_HDR};
use crate::memhandle::RemoteMem;
use crate::objects::{Cq, Ep, EPS, NICS};
use crate::post::{check_local, remote_event};
use crate::types::*;
use libc::{c_uint, c_void};
use softnic_fabric::mem::MemKey;
use softnic_fabric::rma::{Live, Peer};
use std::sync::Arc;

/// Messages between two attempts to pin a channel that could not be pinned.
const CHAN_RETRY: u64 = 64;

/// Bytes of one slot for messages of up to `maxsize` bytes.
fn slot_size(maxsize: u32) -> u64 {
    (SLOT_HDR + maxsize as u64 + 63) & !63
}

/// Bytes of a mailbox; None when the attributes are unusable.
fn mbox_size(a: &gni_smsg_attr_t) -> Option<u64> {
    if a.msg_type != GNI_SMSG_TYPE_MBOX && a.msg_type != GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT {
        return None;
    }
    if a.mbox_maxcredit == 0 || a.msg_maxsize == 0 || a.msg_maxsize > GNI_SMSG_MAX_SIZE as u32 {
        return None;
    }
    let n = MBOX_HDR + a.mbox_maxcredit as u64 * slot_size(a.msg_maxsize);
    (n <= u32::MAX as u64).then_some(n)
}

/// Size of the mailbox described by `smsg_attr` (msg_type, mbox_maxcredit, msg_maxsize).
#[no_mangle]
pub unsafe extern "C" fn GNI_SmsgBufferSizeNeeded(smsg_attr: *mut gni_smsg_attr_t, size: *mut c_uint) -> gni_return_t {
    // SAFETY: caller's pointers; NULL checked.
    let (Some(a), false) = (unsafe { smsg_attr.as_ref() }, size.is_null()) else { return GNI_RC_INVALID_PARAM };
    match mbox_size(a) {
        Some(n) => {
            // SAFETY: non-NULL out pointer.
            unsafe { *size = n as c_uint };
            GNI_RC_SUCCESS
        }
        None => GNI_RC_INVALID_PARAM,
    }
}

/// Configures SMSG on a bound endpoint (module doc).
#[no_mangle]
pub unsafe extern "C" fn GNI_SmsgInit(ep_hndl: gni_ep_handle_t, local_smsg_attr: *mut gni_smsg_attr_t, remote_smsg_attr: *mut gni_smsg_attr_t) -> gni_return_t {
    let Ok(ep) = EPS.get(ep_hndl as *const _) else { return GNI_RC_INVALID_PARAM };
    // SAFETY: caller's pointers; NULL checked.
    let (Some(l), Some(r)) = (unsafe { local_smsg_attr.as_ref() }, unsafe { remote_smsg_attr.as_ref() }) else {
        return GNI_RC_INVALID_PARAM;
    };
    let (Some(lsize), Some(_)) = (mbox_size(l), mbox_size(r)) else { return GNI_RC_INVALID_PARAM };
    if (l.buff_size as u64) < lsize {
        return GNI_RC_INVALID_PARAM;
    }
    let local = (l.msg_buffer as u64).wrapping_add(l.mbox_offset as u64);
    let remote = (r.msg_buffer as u64).wrapping_add(r.mbox_offset as u64);
    if local % 8 != 0 || remote % 8 != 0 || local == 0 {
        return GNI_RC_INVALID_PARAM;
    }
    let pd = ep.nic.pd_key();
    let _ = pd;
    match check_local(&ep.nic, &l.mem_hndl, local, lsize, true) {
        Ok(()) => {}
        Err(_) => return GNI_RC_INVALID_PARAM,
    }
    let mut st = ep.state();
    if st.binding.is_none() {
        return GNI_RC_INVALID_STATE;
    }
    let remote_slot = slot_size(r.msg_maxsize);
    st.smsg = Some(SmsgState {
        local,
        local_credits: l.mbox_maxcredit as u32,
        local_slot: slot_size(l.msg_maxsize),
        remote,
        remote_h: r.mem_hndl,
        remote_credits: r.mbox_maxcredit as u32,
        remote_slot,
        remote_maxsize: r.msg_maxsize,
        sent: 0,
        credits_seen: 0,
        released: 0,
        current: None,
        lent: None,
        buf: Vec::with_capacity(remote_slot as usize),
        chan: None,
        chan_retry: 0,
    });
    GNI_RC_SUCCESS
}

/// Publishes a 64-bit word at the peer (atomic store; plain put on fallback memory).
fn store_word(peer: Live<'_>, key: MemKey, addr: u64, v: u64, pd: u64) -> softnic_fabric::Result<()> {
    match peer.store_u64(key, addr, v, pd) {
        Err(softnic_fabric::Error::Unsupported) => peer.put(key, addr, &v.to_ne_bytes(), pd),
        r => r,
    }
}

/// `n` bytes at `p` (empty when `n` is 0, whatever `p`).
///
/// # Safety
/// `p` must be valid for reading `n` bytes when `n > 0`.
unsafe fn bytes<'a>(p: *const c_void, n: u32) -> &'a [u8] {
    if n == 0 {
        &[]
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(p as *const u8, n as usize) }
    }
}

/// The endpoint's pinned channel, opened now if it has none (and the last failed attempt
/// is `CHAN_RETRY` messages old); None: use the per-message path.
fn channel<'s>(peer: &Arc<Peer>, words: [u64; 2], sm: &'s mut SmsgState, pd: u64) -> Option<&'s Channel> {
    if sm.chan.is_none() && sm.sent + sm.released >= sm.chan_retry {
        match Channel::open(peer, words, sm, pd) {
            Ok(c) => sm.chan = Some(c),
            Err(_) => sm.chan_retry = sm.sent + sm.released + CHAN_RETRY,
        }
    }
    sm.chan.as_ref()
}

/// Writes one message into slot `slot_off` of the pinned mailbox, publishes it with its
/// sequence word, then queues the REMOTE event.  `Err`: the pin is stale and nothing was
/// written.
#[allow(clippy::too_many_arguments)]
fn send_pinned(ch: &Channel, live: Live<'_>, slot_off: usize, fields: &[u8; 24], header: &[u8], data: &[u8], seq: u64, event: u64, pd: u64) -> softnic_fabric::Result<()> {
    const API: &str = "GNI_SmsgSend";
    let m = ch.mbox.check(live)?;
    let body = slot_off + SLOT_HDR as usize;
    m.put(slot_off + 8, fields)?;
    m.put(body, header)?;
    m.put(body + header.len(), data)?;
    m.store_u64(slot_off, seq)?;
    // The message is visible before its event.
    match ch.events.as_ref().map(|r| r.check(live)) {
        None => {}
        Some(Ok(ring)) => {
            if !ring.push_or_overrun(&event) {
                softnic_fabric::sn_debug!(API, "remote CQ overran: event dropped");
            }
        }
        // The CQ went away since the pin: the per-message path reports why.
        Some(Err(_)) => remote_event(live, ch.mbox.key(), pd, event),
    }
    Ok(())
}

fn send(ep_hndl: gni_ep_handle_t, header: *const c_void, hlen: u32, data: *const c_void, dlen: u32, msg_id: u32, tag: u8) -> gni_return_t {
    EPS.with(ep_hndl as *const _, |ep| send_on(ep, header, hlen, data, dlen, msg_id, tag)).unwrap_or(GNI_RC_INVALID_PARAM)
}

fn send_on(ep: &Ep, header: *const c_void, hlen: u32, data: *const c_void, dlen: u32, msg_id: u32, tag: u8) -> gni_return_t {
    const API: &str = "GNI_SmsgSend";
    if (header.is_null() && hlen > 0) || (data.is_null() && dlen > 0) {
        return GNI_RC_INVALID_PARAM;
    }
    let pd = ep.nic.pd_key();
    let mut guard = ep.state();
    let st = &mut *guard;
    let Some(sm) = st.smsg.as_mut() else { return GNI_RC_INVALID_PARAM };
    let total = hlen as u64 + dlen as u64;
    if total > sm.remote_maxsize as u64 {
        return GNI_RC_ERROR_RESOURCE;
    }
    if sm.sent - sm.credits_seen.min(sm.sent) >= sm.remote_credits as u64 {
        sm.credits_seen = sm.credits_returned();
    }
    if sm.sent - sm.credits_seen.min(sm.sent) >= sm.remote_credits as u64 {
        drop(guard);
        crate::stats::bump(&ep.nic, GNI_STAT_SMSG_MBOX_CREDITS_STALL);
        return GNI_RC_NOT_DONE;
    }
    let rh = sm.remote_h;
    let local_data = Ep::local_event(st);
    let remote_data = ep.remote_event(st);
    let st = &mut *st;
    // The mailbox handle names the receiving process (see Ep::route).
    let reached = match ep.route(st, &rh) {
        Ok(w) => Ok(w),
        Err(None) => return GNI_RC_INVALID_PARAM,
        Err(Some(s)) => Err(s),
    };
    // The local SMSG event's place, taken before the message can be seen when peers can
    // queue events on the CQ (the answer to this message must come after it: events are
    // causal, see `Cq::begin_post`).
    let slot = ep.cq.as_deref().map(Cq::begin_post);
    // The whole send runs under the EP lock (so `in_flight` is never seen non-zero by
    // another thread); the peer is borrowed from the binding.
    let b = st.binding.as_ref().expect("route() succeeded or failed with a status");
    let sm = st.smsg.as_mut().expect("checked above");
    let result: Result<(), Status> = reached.and_then(|words| {
        let peer = &b.route.as_ref().expect("route() caches the peer").1;
        // route() probed the peer: one liveness verdict for the message (payload,
        // seq word, REMOTE event).
        let live = peer.live_probed().map_err(Status::from_fabric)?;
        // SAFETY: the caller's buffers of the given lengths (NULL only with length 0).
        let (header, data) = unsafe { (bytes(header, hlen), bytes(data, dlen)) };
        let mut fields = [0u8; 24];
        fields[0..4].copy_from_slice(&hlen.to_ne_bytes());
        fields[4..8].copy_from_slice(&dlen.to_ne_bytes());
        fields[8] = tag;
        fields[12..16].copy_from_slice(&msg_id.to_ne_bytes());
        let idx = crate::mailbox::slot_index(sm.sent, sm.remote_credits);
        let slot_off = MBOX_HDR + idx * sm.remote_slot;
        let event = cqe::make(cqe::SRC_REMOTE, cqe::TYPE_SMSG, Status::Ok, 0, remote_data as u64);
        let seq = sm.sent + 1;
        if let Some(ch) = channel(peer, words, sm, pd) {
            if send_pinned(ch, live, slot_off as usize, &fields, header, data, seq, event, pd).is_ok() {
                sm.sent += 1;
                return Ok(());
            }
            sm.chan = None; // re-check failed before anything was written
        }
        let rm = RemoteMem::open(peer, words, pd).map_err(Status::from_fabric)?;
        let slot = sm.remote + slot_off;
        let buf = &mut sm.buf;
        buf.clear();
        buf.extend_from_slice(&fields);
        buf.extend_from_slice(header);
        buf.extend_from_slice(data);
        // The slot's fields, header and data, then its sequence word (publication), then
        // the REMOTE event: one compound put (one request on the network engine), so the
        // message is visible before its event.
        let parts = rm.parts(slot + 8, buf).map_err(Status::from_fabric)?;
        let (key, addr) = rm.word(slot, 8).map_err(Status::from_fabric)?;
        live.put_compound(parts.as_slice(), Some((key, addr, sm.sent + 1)), Some((rm.notify_key(), event)), pd).map_err(Status::from_fabric)?;
        sm.sent += 1;
        Ok(())
    });
    drop(guard);
    let status = match result {
        Ok(()) => Status::Ok,
        Err(s) => {
            softnic_fabric::sn_debug!(API, "message not delivered: {}", s.describe());
            crate::errors::report_transaction_error(&ep.nic, s, [0, total, 0, 0]);
            s
        }
    };
    match slot {
        Some(slot) => slot.publish_entry(cqe::make(cqe::SRC_LOCAL, cqe::TYPE_SMSG, status, local_data as u64, msg_id as u64)),
        None if status != Status::Ok => return GNI_RC_TRANSACTION_ERROR,
        None => {}
    }
    GNI_RC_SUCCESS
}

/// Sends a short message with tag 0 (module doc).
#[no_mangle]
pub unsafe extern "C" fn GNI_SmsgSend(ep_hndl: gni_ep_handle_t, header: *mut c_void, header_length: u32, data: *mut c_void, data_length: u32, msg_id: u32) -> gni_return_t {
    let _span = softnic_fabric::trace::span("ugni", "GNI_SmsgSend").map(|s| s.arg("length", header_length as u64 + data_length as u64));
    send(ep_hndl, header, header_length, data, data_length, msg_id, 0)
}

/// Sends a tagged short message (module doc).
#[no_mangle]
pub unsafe extern "C" fn GNI_SmsgSendWTag(ep_hndl: gni_ep_handle_t, header: *mut c_void, header_length: u32, data: *mut c_void, data_length: u32, msg_id: u32, tag: u8) -> gni_return_t {
    let _span = softnic_fabric::trace::span("ugni", "GNI_SmsgSendWTag").map(|s| s.arg("length", header_length as u64 + data_length as u64).arg("tag", tag as u64));
    send(ep_hndl, header, header_length, data, data_length, msg_id, tag)
}

/// GetNext with an optional tag filter (`None` = any, untouched output).
fn get_next(ep_hndl: gni_ep_handle_t, header: *mut *mut c_void, tag: Option<*mut u8>) -> gni_return_t {
    EPS.with(ep_hndl as *const _, |ep| get_next_on(ep, ep_hndl, header, tag)).unwrap_or(GNI_RC_INVALID_PARAM)
}

fn get_next_on(ep: &Ep, ep_hndl: gni_ep_handle_t, header: *mut *mut c_void, tag: Option<*mut u8>) -> gni_return_t {
    if header.is_null() || tag.map_or(false, |t| t.is_null()) {
        return GNI_RC_INVALID_PARAM;
    }
    let mut st = ep.state();
    let Some(sm) = st.smsg.as_mut() else { return GNI_RC_INVALID_PARAM };
    let Some((slot, mtag)) = sm.peek() else { return GNI_RC_NOT_DONE };
    if let Some(t) = tag {
        // SAFETY: non-NULL INOUT pointer of the caller.
        let want = unsafe { *t };
        if want != GNI_SMSG_ANY_TAG as u8 && want != mtag {
            return GNI_RC_NO_MATCH;
        }
        // SAFETY: as above.
        unsafe { *t = mtag };
    }
    let mut h = slot + SLOT_HDR;
    sm.current = Some(h);
    if softnic_fabric::check::enabled() {
        h = lend(sm, slot, ep_hndl);
    }
    // SAFETY: non-NULL out pointer.
    unsafe { *header = h as *mut c_void };
    GNI_RC_SUCCESS
}

/// SOFTNIC_CHECK: the program gets the current message (header and data) as a copy lent
/// to it till GNI_SmsgRelease, whose use after that release is a finding
/// (`softnic_fabric::lent`): on the hardware the slot then holds a later message, or is
/// being written.  The same copy while the message stays current; the slot itself when
/// no copy can be made.
#[cold]
fn lend(sm: &mut SmsgState, slot: u64, ep_hndl: gni_ep_handle_t) -> u64 {
    let h = slot + SLOT_HDR;
    if let Some(l) = sm.lent {
        return l;
    }
    // SAFETY: the slot's lengths, written before its seq was published (peek saw it).
    let (hl, dl) = unsafe { (std::ptr::read_volatile((slot + 8) as *const u32), std::ptr::read_volatile((slot + 12) as *const u32)) };
    let len = (hl as u64 + dl as u64).min(sm.local_slot - SLOT_HDR) as usize;
    let n = sm.released;
    let what = || format!("message {n} of endpoint {ep_hndl:p} ({len} bytes, returned by GNI_SmsgGetNext)");
    // SAFETY: the message's bytes lie inside its slot of my mailbox (bounded above).
    let lent = unsafe { softnic_fabric::lent::lend("GNI_SmsgRelease", what, h as *const u8, len) };
    sm.lent = lent.map(|p| p as u64);
    sm.lent.unwrap_or(h)
}

/// Makes the next arrived message current and returns its header (module doc).
#[no_mangle]
pub unsafe extern "C" fn GNI_SmsgGetNext(ep_hndl: gni_ep_handle_t, header: *mut *mut c_void) -> gni_return_t {
    get_next(ep_hndl, header, None)
}

/// Like GNI_SmsgGetNext when the message's tag matches `*tag` (or `*tag` is 0xFF).
#[no_mangle]
pub unsafe extern "C" fn GNI_SmsgGetNextWTag(ep_hndl: gni_ep_handle_t, header: *mut *mut c_void, tag: *mut u8) -> gni_return_t {
    get_next(ep_hndl, header, Some(tag))
}

/// Frees the current message and returns its credit to the sender (module doc).
#[no_mangle]
pub unsafe extern "C" fn GNI_SmsgRelease(ep_hndl: gni_ep_handle_t) -> gni_return_t {
    EPS.with(ep_hndl as *const _, release_on).unwrap_or(GNI_RC_INVALID_PARAM)
}

fn release_on(ep: &Ep) -> gni_return_t {
    const API: &str = "GNI_SmsgRelease";
    let pd = ep.nic.pd_key();
    let mut st = ep.state();
    let Some(sm) = st.smsg.as_mut() else { return GNI_RC_INVALID_PARAM };
    if sm.current.take().is_none() {
        return GNI_RC_NOT_DONE;
    }
    if let Some(l) = sm.lent.take() {
        softnic_fabric::lent::take_back(l as *mut u8, API);
    }
    sm.released += 1;
    let (addr, rh, count) = (sm.remote, sm.remote_h, sm.released);
    let st = &mut *st;
    match ep.route(st, &rh) {
        Ok(words) => {
            let b = st.binding.as_ref().expect("route() succeeded");
            let peer = &b.route.as_ref().expect("route() caches the peer").1;
            let sm = st.smsg.as_mut().expect("checked above");
            let r = peer.live_probed().and_then(|live| {
                if let Some(ch) = channel(peer, words, sm, pd) {
                    if let Ok(m) = ch.mbox.check(live) {
                        return m.store_u64(0, count);
                    }
                    sm.chan = None;
                }
                let (key, a) = RemoteMem::open(peer, words, pd)?.word(addr, 8)?;
                store_word(live, key, a, count, pd)
            });
            if let Err(e) = r {
                softnic_fabric::sn_debug!(API, "credit not returned: {}", e);
            }
        }
        Err(s) => softnic_fabric::sn_debug!(API, "credit not returned: peer unreachable ({:?})", s),
    }
    GNI_RC_SUCCESS
}

/// Delivery is always in order; the mode is accepted for a valid NIC.
#[no_mangle]
pub unsafe extern "C" fn GNI_SmsgSetDeliveryMode(nic_handle: gni_nic_handle_t, dlvr_mode: u16) -> gni_return_t {
    let _ = dlvr_mode;
    match NICS.get(nic_handle as *const _) {
        Ok(_) => GNI_RC_SUCCESS,
        Err(e) => e,
    }
}

/// Nothing is ever retransmitted (reliable transport); accepted for a valid NIC.
#[no_mangle]
pub unsafe extern "C" fn GNI_SmsgSetMaxRetrans(nic_handle: gni_nic_handle_t, max_retrans: u16) -> gni_return_t {
    let _ = max_retrans;
    match NICS.get(nic_handle as *const _) {
        Ok(_) => GNI_RC_SUCCESS,
        Err(e) => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        let mut a: gni_smsg_attr_t = unsafe { std::mem::zeroed() };
        a.msg_type = GNI_SMSG_TYPE_MBOX;
        a.mbox_maxcredit = 4;
        a.msg_maxsize = 100;
        assert_eq!(slot_size(100), 192);
        assert_eq!(mbox_size(&a), Some(64 + 4 * 192));
        a.msg_maxsize = 65536;
        assert_eq!(mbox_size(&a), None);
        a.msg_maxsize = 65535;
        a.mbox_maxcredit = 65535;
        assert_eq!(mbox_size(&a), None); // > 4 GiB
        a.mbox_maxcredit = 0;
        assert_eq!(mbox_size(&a), None);
    }
}
