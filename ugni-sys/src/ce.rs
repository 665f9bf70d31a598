//! The collective engine (Aries VCEs): GNI_CeCreate, GNI_CeGetId, GNI_EpSetCeAttr,
//! GNI_CeConfigure, GNI_CeCheckResult, GNI_CeDestroy, `GNI_POST_CE` posts and the
//! `gni_ce_res_*` accessors — over the fabric's reduction trees (`softnic_fabric::coll`).
//!
//! A VCE is a tree node in its owner's shared memory, named by a CE id unique on its NIC
//! address within the (ptag, cookie) domain (node registry; and the job's KVS, for
//! instances on other nodes, when the network engine runs).  The owner configures it:
//! its children are the endpoints it passes (their CE attributes give each child's index;
//! a child is a process, `GNI_CE_CHILD_PE`, or another VCE, `GNI_CE_CHILD_VCE`), its parent
//! the VCE named by the parent endpoint's attributes (the parent lives at that endpoint's
//! NIC address).  A process joins by posting `GNI_POST_CE` on an endpoint whose attributes
//! name (VCE id, its index, PE); the VCE is at the endpoint's bound NIC address.  When
//! every leaf of the tree has contributed, the result is written into every contributor's
//! registered `gni_ce_result_t` and the post's GLOBAL event (if asked) reaches its CQ;
//! every VCE configured with `GNI_CE_MODE_CQE_ONCOMP` gets a CE event (`GNI_CQ_GET_CE_ID`).
//!
//! # Decisions (also in gni_pub.h)
//! - Operands: `first_operand`/`second_operand` reduce to `result1`/`result2`; the `_S`
//!   commands work on the low 32 bits (the high halves of the results are zero).  Without
//!   `GNI_CEMODE_TWO_OP` only the first operand is reduced (`result2` is 0).  The LIDX/GIDX
//!   commands reduce (value = first, index = second) pairs; ties go to the lower/greater
//!   index; `result2` is the winner's index.
//! - The result's control word is ours: bits 31..0 = the low 32 bits of `ce_red_id`
//!   (`gni_ce_res_get_red_id`), bit 63 = delivered, bit 40 = the contributions disagreed,
//!   bits 35..32 = FP exceptions raised (`GNI_CE_FPE_*` values).  A post clears it; until
//!   the result arrives `GNI_CeCheckResult` answers NOT_DONE; then SUCCESS, or
//!   TRANSACTION_ERROR when the contributions disagreed or an exception the post enabled
//!   (`GNI_CEMODE_FPE_*`) was raised.  Its `length` is not a byte count: programs pass 1
//!   (one result), 0, or `sizeof(gni_ce_result_t)`; every value is accepted and the call
//!   checks the one result at `result` (NULL or not 8-aligned: INVALID_PARAM).
//! - ROUND_* modes of the VCE that finishes a combine apply (nearest when none); RC_*
//!   modes change nothing.
//! - A post on a VCE whose previous reduction this endpoint has not seen completed is
//!   INVALID_PARAM (digest 8b); so is a post on an endpoint without PE attributes, on a
//!   VCE not configured yet or with an index past its children, an unknown command, or a
//!   result buffer (`local_addr`, 24 bytes, 8-aligned) outside a writable registration of
//!   this NIC.  With a segmented registration as `local_mem_hndl`, `local_addr` is an
//!   offset (as for other posts) and the 24 bytes must lie in one segment;
//!   GNI_CeCheckResult takes their address.  A VCE that cannot be found at the bound address is a transaction error.
//! - GNI_CeConfigure: 1..=32 children, each endpoint of this NIC with CE attributes,
//!   indices 0..n-1 each exactly once; a parent endpoint with VCE attributes (its
//!   `child_id` = our index there); once only (again: INVALID_STATE); a CQ of this NIC when
//!   CQE_ONCOMP/CQE_ONERR is asked.  GNI_CeDestroy of a VCE with a reduction in flight is
//!   allowed (contributors then get transaction errors).

use crate::cqe::{self, Status};
use crate::handles::{lock, Table};
use crate::objects::*;
use crate::types::*;
use libc::c_void;
use softnic_fabric::coll::{self, Deliver, Node, NodeRef, Params};
use softnic_fabric::reduce::{Elem, Op, Rounding, Ties};
use softnic_fabric::registry::{self, EndpointId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Most children of a VCE (`GNI_CE_MAX_CHILDREN`).
pub const MAX_CHILDREN: usize = GNI_CE_MAX_CHILDREN as usize;
/// Bytes of one `gni_ce_result_t` (control word, result1, result2).
const RESULT_BYTES: u64 = std::mem::size_of::<gni_ce_result_t>() as u64;
const DELIVERED: u64 = 1 << 63;
const DISAGREED: u64 = coll::STATUS_ERROR << 32;
const FPE_SHIFT: u32 = 32;

pub struct Ce {
    pub nic: Arc<Nic>,
    pub id: u32,
    node: Node,
    published: EndpointId,
    configured: Mutex<bool>,
    /// The CQ of its completion events (counted as a user of the CQ).
    cq: Mutex<Option<Arc<Cq>>>,
}

pub static CES: Table<Ce> = Table::new(0xc5);

/// What GNI_CeCheckResult needs to know about a result buffer's post (it has only the
/// buffer): the FP exceptions the post enabled, the VCE it went to, and how often the
/// buffer was polled (the VCE owner's liveness is checked every [`LIVENESS_POLLS`]).
struct PendingResult {
    enabled_fpe: u64,
    vce: NodeRef,
    polls: u32,
}
static PENDING: Mutex<Option<HashMap<usize, PendingResult>>> = Mutex::new(None);
const LIVENESS_POLLS: u32 = 256;

fn ce_key(ptag: u8, cookie: u32, addr: u32, id: u32) -> [u8; 13] {
    let mut k = [0u8; 13];
    k[0] = ptag;
    k[1..5].copy_from_slice(&cookie.to_le_bytes());
    k[5..9].copy_from_slice(&addr.to_le_bytes());
    k[9..13].copy_from_slice(&id.to_le_bytes());
    k
}

fn kvs_key(ptag: u8, cookie: u32, addr: u32, id: u32) -> String {
    format!("gnice.{}.{:x}.{}.{}", ptag, cookie, addr, id)
}

fn node_words(r: &NodeRef) -> Vec<u8> {
    r.to_words().iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn words_node(b: &[u8]) -> Option<NodeRef> {
    let w = |i: usize| b.get(i * 8..i * 8 + 8).map(|x| u64::from_le_bytes(x.try_into().expect("8 bytes")));
    Some(NodeRef::from_words([w(0)?, w(1)?, w(2)?, w(3)?, w(4)?]))
}

/// Where VCE `id` of `nic`'s domain at NIC address `addr` is.
fn find(nic: &Nic, addr: u32, id: u32) -> Option<NodeRef> {
    let key = ce_key(nic.cdm.ptag, nic.cdm.cookie, addr, id);
    if let Ok(e) = registry::lookup(registry::api::UGNI_CE, &key) {
        return words_node(&e.payload);
    }
    if softnic_fabric::net::running().is_some() {
        let b = softnic_fabric::bootstrap::kvs_get_global(&kvs_key(nic.cdm.ptag, nic.cdm.cookie, addr, id)).ok()?;
        return words_node(&b);
    }
    None
}

/// VCE ids: 1..=MAX_CE_IDS, taken from per-process blocks of ID_BLOCK (see GNI_CeCreate).
const MAX_CE_IDS: u32 = 1 << 20;
const ID_BLOCK: u32 = MAX_CE_IDS / softnic_fabric::registry::NPROC as u32;

#[no_mangle]
pub unsafe extern "C" fn GNI_CeCreate(nic_hndl: gni_nic_handle_t, ce_hndl: *mut gni_ce_handle_t) -> gni_return_t {
    let Ok(nic) = NICS.get(nic_hndl as *const c_void) else { return GNI_RC_INVALID_PARAM };
    if nic.is_detached() || ce_hndl.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    let Ok(node) = Node::create(MAX_CHILDREN, nic.address) else { return GNI_RC_ERROR_NOMEM };
    let at = node.at();
    // A free id on this NIC address (ids are unique there, per domain).  Each process
    // takes ids from its own block (by its registry slot), moving on with every VCE it
    // creates, so an id a process has just destroyed is not at once another process's:
    // a contributor still naming the old VCE gets an error, not a stranger's VCE.
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let Ok(me) = softnic_fabric::node::get() else { return GNI_RC_ERROR_RESOURCE };
    let start = me.proc_id().slot.wrapping_mul(ID_BLOCK).wrapping_add(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % ID_BLOCK);
    let mut tries = 0u32;
    let (id, published) = loop {
        let id = 1 + (start.wrapping_add(tries) % MAX_CE_IDS);
        match registry::publish(registry::api::UGNI_CE, &ce_key(nic.cdm.ptag, nic.cdm.cookie, nic.address, id), &node_words(&at)) {
            Ok(p) => break (id, p),
            Err(softnic_fabric::Error::Exists) if tries < MAX_CE_IDS => tries += 1,
            Err(_) => return GNI_RC_ERROR_RESOURCE,
        }
    };
    if softnic_fabric::net::running().is_some() {
        let _ = softnic_fabric::bootstrap::kvs_put_global(&kvs_key(nic.cdm.ptag, nic.cdm.cookie, nic.address, id), &node_words(&at));
    }
    let ce = Arc::new(Ce { nic, id, node, published, configured: Mutex::new(false), cq: Mutex::new(None) });
    let h = CES.insert(ce);
    // SAFETY: checked non-NULL.
    unsafe { ce_hndl.write(h as gni_ce_handle_t) };
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_CeGetId(ce_hndl: gni_ce_handle_t, ce_id: *mut u32) -> gni_return_t {
    let Ok(ce) = CES.get(ce_hndl as *const c_void) else { return GNI_RC_INVALID_PARAM };
    if ce_id.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    // SAFETY: checked non-NULL.
    unsafe { ce_id.write(ce.id) };
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_EpSetCeAttr(ep_hndl: gni_ep_handle_t, ce_id: u32, child_id: u32, child_type: gni_ce_child_t) -> gni_return_t {
    let Ok(ep) = EPS.get(ep_hndl as *const c_void) else { return GNI_RC_INVALID_PARAM };
    if child_id as usize >= MAX_CHILDREN || !matches!(child_type, GNI_CE_CHILD_PE | GNI_CE_CHILD_VCE | GNI_CE_CHILD_UNUSED) {
        return GNI_RC_INVALID_PARAM;
    }
    let mut st = ep.state();
    st.ce = (child_type != GNI_CE_CHILD_UNUSED).then_some(CeAttr { ce_id, child_id, child_type, last: None });
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_CeConfigure(
    ce_hndl: gni_ce_handle_t,
    child_eps: *mut gni_ep_handle_t,
    num_child_eps: u32,
    parent_ep: gni_ep_handle_t,
    cq_hndl: gni_cq_handle_t,
    modes: u32,
) -> gni_return_t {
    let Ok(ce) = CES.get(ce_hndl as *const c_void) else { return GNI_RC_INVALID_PARAM };
    let n = num_child_eps as usize;
    if n == 0 || n > MAX_CHILDREN || child_eps.is_null() || ce.nic.is_detached() {
        return GNI_RC_INVALID_PARAM;
    }
    let known = (GNI_CE_MODE_ROUND_UP | GNI_CE_MODE_ROUND_DOWN | GNI_CE_MODE_ROUND_NEAR | GNI_CE_MODE_ROUND_ZERO | GNI_CE_MODE_CQE_ONCOMP | GNI_CE_MODE_CQE_ONERR
        | GNI_CE_MODE_RC_NMIN_HASH | GNI_CE_MODE_RC_MIN_HASH | GNI_CE_MODE_RC_MNON_HASH | GNI_CE_MODE_RC_ADAPT) as u32;
    let rounding_bits = modes & (GNI_CE_MODE_ROUND_UP | GNI_CE_MODE_ROUND_DOWN | GNI_CE_MODE_ROUND_NEAR | GNI_CE_MODE_ROUND_ZERO) as u32;
    if modes & !known != 0 || rounding_bits.count_ones() > 1 {
        return GNI_RC_INVALID_PARAM;
    }
    // SAFETY: the caller's array of num_child_eps handles (NULL checked).
    let eps = unsafe { std::slice::from_raw_parts(child_eps, n) };
    let mut seen = vec![false; n];
    for &h in eps {
        let Ok(ep) = EPS.get(h as *const c_void) else { return GNI_RC_INVALID_PARAM };
        let attr = ep.state().ce;
        let Some(a) = attr else { return GNI_RC_INVALID_PARAM };
        if !Arc::ptr_eq(&ep.nic, &ce.nic) || a.child_id as usize >= n || seen[a.child_id as usize] {
            return GNI_RC_INVALID_PARAM;
        }
        seen[a.child_id as usize] = true;
    }
    let parent = if parent_ep.is_null() {
        None
    } else {
        let Ok(ep) = EPS.get(parent_ep as *const c_void) else { return GNI_RC_INVALID_PARAM };
        let st = ep.state();
        let (Some(a), Some(b)) = (st.ce, st.binding.as_ref()) else { return GNI_RC_INVALID_PARAM };
        if a.child_type != GNI_CE_CHILD_VCE || !Arc::ptr_eq(&ep.nic, &ce.nic) {
            return GNI_RC_INVALID_PARAM;
        }
        let addr = b.remote_addr;
        drop(st);
        match find(&ce.nic, addr, a.ce_id) {
            Some(p) => Some((p, a.child_id)),
            None => return GNI_RC_INVALID_PARAM,
        }
    };
    let want_events = modes & (GNI_CE_MODE_CQE_ONCOMP | GNI_CE_MODE_CQE_ONERR) as u32 != 0;
    let cq = if cq_hndl.is_null() {
        if want_events {
            return GNI_RC_INVALID_PARAM;
        }
        None
    } else {
        let Ok(cq) = CQS.get(cq_hndl as *const c_void) else { return GNI_RC_INVALID_PARAM };
        if !Arc::ptr_eq(&cq.nic, &ce.nic) {
            return GNI_RC_INVALID_PARAM;
        }
        Some(cq)
    };
    let mut configured = lock(&ce.configured);
    if *configured {
        return GNI_RC_INVALID_STATE;
    }
    if ce.node.set_children(n).is_err() {
        return GNI_RC_INVALID_STATE;
    }
    ce.node.set_parent(parent);
    ce.node.set_rounding(match rounding_bits as i32 {
        GNI_CE_MODE_ROUND_UP => Some(Rounding::Up),
        GNI_CE_MODE_ROUND_DOWN => Some(Rounding::Down),
        GNI_CE_MODE_ROUND_ZERO => Some(Rounding::TowardZero),
        _ => Some(Rounding::Nearest),
    });
    if let Some(cq) = &cq {
        let ok = cqe::make(cqe::SRC_CE, cqe::TYPE_POST, Status::Ok, 0, ce.id as u64);
        let err = cqe::make(cqe::SRC_CE, cqe::TYPE_POST, Status::CeFailed, 0, ce.id as u64);
        // Whoever completes a round queues its event here (see `Cq::remote_dst`).
        cq.remote_dst.store(true, std::sync::atomic::Ordering::Relaxed);
        ce.node.set_notify(Some(cq.loc), ok, err, modes & GNI_CE_MODE_CQE_ONCOMP as u32 != 0, modes & (GNI_CE_MODE_CQE_ONERR | GNI_CE_MODE_CQE_ONCOMP) as u32 != 0);
        cq.users.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }
    *lock(&ce.cq) = cq;
    *configured = true;
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_CeDestroy(ce_hndl: gni_ce_handle_t) -> gni_return_t {
    let Ok(ce) = CES.remove(ce_hndl as *const c_void) else { return GNI_RC_INVALID_PARAM };
    let _ = registry::unpublish(ce.published);
    if let Some(cq) = lock(&ce.cq).take() {
        cq.users.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
    GNI_RC_SUCCESS
}

/// The reduction a `ce_cmd` asks for: (operation, element type).  None: not a command.
fn decode_cmd(cmd: u32) -> Option<(Op, Elem)> {
    let short = cmd & 1 == 0;
    let ties = if cmd & 0x20 != 0 { Ties::GreaterIndex } else { Ties::LowerIndex };
    let (i, u, f, li, lf) = if short { (Elem::I32, Elem::U32, Elem::F32, Elem::LocI32, Elem::LocF32) } else { (Elem::I64, Elem::U64, Elem::F64, Elem::LocI64, Elem::LocF64) };
    Some(match cmd & !1 {
        0x00 => (Op::BAnd, u),
        0x02 => (Op::BOr, u),
        0x04 => (Op::BXor, u),
        0x10 | 0x30 => (Op::MinLoc(ties), li),
        0x12 | 0x32 => (Op::MaxLoc(ties), li),
        0x14 => (Op::Sum, i),
        0x18 | 0x38 => (Op::MinLoc(ties), lf),
        0x1A | 0x3A => (Op::MaxLoc(ties), lf),
        0x1C => (Op::Sum, f),
        _ => return None,
    })
}

/// The 16-byte payload of a contribution: two 64-bit words, 32-bit values in their low
/// halves for the `_S` commands (the zero high halves reduce to zero).
fn payload(cmd: u32, mode: u32, first: u64, second: u64) -> [u8; 16] {
    let short = cmd & 1 == 0;
    let loc = matches!(cmd & !1, 0x10 | 0x12 | 0x18 | 0x1A | 0x30 | 0x32 | 0x38 | 0x3A);
    let lo = |v: u64| if short { v & 0xffff_ffff } else { v };
    let w1 = lo(first);
    let w2 = if loc { if short { second & 0xffff_ffff } else { second } } else if mode & GNI_CEMODE_TWO_OP as u32 != 0 { lo(second) } else { 0 };
    let mut p = [0u8; 16];
    p[..8].copy_from_slice(&w1.to_ne_bytes());
    p[8..].copy_from_slice(&w2.to_ne_bytes());
    p
}

/// GNI_PostFma with `type == GNI_POST_CE` (module doc).
pub(crate) fn post(ep: &Ep, desc: *mut gni_post_descriptor_t) -> gni_return_t {
    // SAFETY: non-NULL (checked by the caller); read once.
    let d: gni_post_descriptor_t = unsafe { std::ptr::read(desc) };
    let Some((op, elem)) = decode_cmd(d.ce_cmd) else { return GNI_RC_INVALID_PARAM };
    let fpe_bits = (GNI_CEMODE_FPE_OP_INVAL | GNI_CEMODE_FPE_OFLOW | GNI_CEMODE_FPE_UFLOW | GNI_CEMODE_FPE_PRECISION) as u32;
    if d.ce_mode & !(GNI_CEMODE_TWO_OP as u32 | fpe_bits) != 0 || d.cq_mode & !(GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_SILENT) as u16 != 0 {
        return GNI_RC_INVALID_PARAM;
    }
    // The result buffer: 24 bytes in a writable registration of ours (in one segment of
    // a segmented one, `local_addr` then being an offset); `result` is where they are.
    if d.local_addr % 8 != 0 {
        return GNI_RC_ALIGNMENT_ERROR;
    }
    let local = match crate::memreg::LocalMem::open(&ep.nic, &d.local_mem_hndl, d.local_addr, RESULT_BYTES, true) {
        Ok(l) => l,
        Err(rc) => return rc,
    };
    let (key, result) = match local.word(d.local_addr, RESULT_BYTES) {
        Ok(w) => w,
        Err(rc) => return rc,
    };
    if result % 8 != 0 {
        return GNI_RC_ALIGNMENT_ERROR;
    }
    let Ok(me) = softnic_fabric::node::get().map(|n| n.proc_id()) else { return GNI_RC_INVALID_PARAM };
    let cq = if d.src_cq_hndl.is_null() {
        ep.cq.clone()
    } else {
        match CQS.get(d.src_cq_hndl as *const c_void) {
            Ok(c) => Some(c),
            Err(rc) => return rc,
        }
    };
    let want_event = d.cq_mode & GNI_CQMODE_GLOBAL_EVENT as u16 != 0;
    if want_event && cq.is_none() {
        return GNI_RC_INVALID_PARAM;
    }
    let mut st = ep.state();
    let Some(attr) = st.ce else { return GNI_RC_INVALID_PARAM };
    let Some(addr) = st.binding.as_ref().map(|b| b.remote_addr) else { return GNI_RC_INVALID_PARAM };
    if attr.child_type != GNI_CE_CHILD_PE {
        return GNI_RC_INVALID_PARAM;
    }
    // One reduction at a time per endpoint: the previous one must have completed.
    if let Some((vce, round)) = attr.last {
        if coll::done(&vce).map_or(false, |done| done < round) {
            return GNI_RC_INVALID_PARAM;
        }
    }
    let local_data = Ep::local_event(&st);
    let Some(vce) = find(&ep.nic, addr, attr.ce_id) else {
        drop(st);
        return transaction_error(ep, cq.as_deref(), desc, local_data, want_event);
    };
    let token = match (&cq, want_event) {
        (Some(c), true) => match c.add_desc(desc) {
            Ok(t) => Some(t),
            Err(rc) => return rc,
        },
        _ => None,
    };
    // SAFETY: GNI-owned fields of the caller's descriptor; the result buffer is ours
    // (checked above): clear its control word so GNI_CeCheckResult sees "not yet".
    unsafe {
        (*desc).status = 0;
        (*desc).cq_mode_complete = 0;
        std::ptr::write_volatile(result as *mut u64, 0);
    }
    lock(&PENDING).get_or_insert_with(HashMap::new).insert(result as usize, PendingResult { enabled_fpe: ((d.ce_mode & fpe_bits) >> 1) as u64, vce, polls: 0 });
    let event = match (&cq, token) {
        (Some(c), Some(t)) => Some((c.loc, cqe::make(cqe::SRC_LOCAL, cqe::TYPE_POST, Status::Ok, t as u64, local_data as u64))),
        _ => None,
    };
    let deliver = Deliver::Buffer { node: ep.nic.address, proc: me, key, addr: result, tag: d.ce_red_id as u32, pd: ep.nic.pd_key(), event };
    let params = Params { op, elem, rounding: Rounding::Nearest };
    let pl = payload(d.ce_cmd, d.ce_mode, d.first_operand, d.second_operand);
    match coll::contribute(&vce, attr.child_id as usize, params, &pl, deliver) {
        Ok(round) => {
            if let Some(a) = st.ce.as_mut() {
                a.last = Some((vce, round));
            }
            GNI_RC_SUCCESS
        }
        Err(softnic_fabric::Error::InvalidArg) => {
            if let (Some(c), Some(t)) = (&cq, token) {
                c.drop_desc(t);
            }
            GNI_RC_INVALID_PARAM
        }
        Err(e) => {
            softnic_fabric::sn_debug!("GNI_PostFma", "collective engine unreachable: {}", e);
            if let (Some(c), Some(t)) = (&cq, token) {
                c.drop_desc(t);
            }
            drop(st);
            transaction_error(ep, cq.as_deref(), desc, local_data, want_event)
        }
    }
}

/// The VCE cannot be reached: an error event for the descriptor (as for other posts).
fn transaction_error(_ep: &Ep, cq: Option<&Cq>, desc: *mut gni_post_descriptor_t, data: u32, _want: bool) -> gni_return_t {
    match cq {
        Some(cq) => match cq.add_desc(desc) {
            Ok(t) => {
                cq.push(cqe::make(cqe::SRC_LOCAL, cqe::TYPE_POST, Status::NoTarget, t as u64, data as u64));
                GNI_RC_SUCCESS
            }
            Err(rc) => rc,
        },
        None => GNI_RC_TRANSACTION_ERROR,
    }
}

/// Has the result of a `GNI_POST_CE` arrived in `result`?  (module doc)
#[no_mangle]
pub unsafe extern "C" fn GNI_CeCheckResult(result: *mut gni_ce_result_t, length: u32) -> gni_return_t {
    // `length` says nothing we need: programs pass 1 (one result), 0 or the size of one;
    // the call checks the one result at `result` whatever it is (module doc).
    let _ = length;
    if result.is_null() || result as usize % 8 != 0 {
        return GNI_RC_INVALID_PARAM;
    }
    // SAFETY: the caller's result buffer (non-NULL, aligned); written by the engine with
    // one put, the control word published before our read by the delivery's ordering.
    let control = unsafe { std::ptr::read_volatile(&(*result).control) };
    if control & DELIVERED == 0 {
        // Nothing yet: serve network traffic now (the result may be in it).  A VCE whose
        // owner died never completes its round: say so instead of NOT_DONE forever.
        softnic_fabric::net::poll_for_events();
        let vce = lock(&PENDING).as_mut().and_then(|m| m.get_mut(&(result as usize))).and_then(|p| {
            p.polls = p.polls.wrapping_add(1);
            (p.polls % LIVENESS_POLLS == 0).then_some(p.vce)
        });
        if vce.is_some_and(|v| !coll::owner_alive(&v)) {
            return GNI_RC_TRANSACTION_ERROR;
        }
        return GNI_RC_NOT_DONE;
    }
    let enabled = lock(&PENDING).as_ref().and_then(|m| m.get(&(result as usize)).map(|p| p.enabled_fpe)).unwrap_or(0);
    let raised = (control >> FPE_SHIFT) & 0xf;
    if control & DISAGREED != 0 || raised & enabled != 0 {
        return GNI_RC_TRANSACTION_ERROR;
    }
    GNI_RC_SUCCESS
}

/// The status bits of a result (delivered, disagreement, FP exceptions).
#[no_mangle]
pub unsafe extern "C" fn gni_ce_res_get_status(res: *mut gni_ce_result_t) -> u64 {
    // SAFETY: NULL or the caller's result.
    unsafe { res.as_ref() }.map_or(0, |r| r.control >> 32)
}

/// Non-zero when the result arrived and the contributions agreed.
#[no_mangle]
pub unsafe extern "C" fn gni_ce_res_status_ok(res: *mut gni_ce_result_t) -> u64 {
    // SAFETY: NULL or the caller's result.
    unsafe { res.as_ref() }.map_or(0, |r| (r.control & DELIVERED != 0 && r.control & DISAGREED == 0) as u64)
}

/// The `GNI_CE_FPE_*` bits raised.
#[no_mangle]
pub unsafe extern "C" fn gni_ce_res_get_fpe(res: *mut gni_ce_result_t) -> u64 {
    // SAFETY: NULL or the caller's result.
    unsafe { res.as_ref() }.map_or(0, |r| (r.control >> FPE_SHIFT) & 0xf)
}

/// The post's `ce_red_id` (low 32 bits).
#[no_mangle]
pub unsafe extern "C" fn gni_ce_res_get_red_id(res: *mut gni_ce_result_t) -> u64 {
    // SAFETY: NULL or the caller's result.
    unsafe { res.as_ref() }.map_or(0, |r| r.control & 0xffff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ce_command_decodes() {
        for (cmd, op, elem) in [
            (GNI_FMA_CE_AND_S, Op::BAnd, Elem::U32),
            (GNI_FMA_CE_XOR, Op::BXor, Elem::U64),
            (GNI_FMA_CE_IADD_S, Op::Sum, Elem::I32),
            (GNI_FMA_CE_FPADD, Op::Sum, Elem::F64),
            (GNI_FMA_CE_IMIN_LIDX, Op::MinLoc(Ties::LowerIndex), Elem::LocI64),
            (GNI_FMA_CE_IMAX_GIDX_S, Op::MaxLoc(Ties::GreaterIndex), Elem::LocI32),
            (GNI_FMA_CE_FPMIN_GIDX, Op::MinLoc(Ties::GreaterIndex), Elem::LocF64),
            (GNI_FMA_CE_FPMAX_LIDX_S, Op::MaxLoc(Ties::LowerIndex), Elem::LocF32),
        ] {
            assert_eq!(decode_cmd(cmd), Some((op, elem)), "{cmd:#x}");
        }
        for bad in [0x06, 0x08, 0x16, 0x1E, 0x20, 0x34, 0x40] {
            assert_eq!(decode_cmd(bad), None, "{bad:#x}");
        }
        // _S: low halves only; without TWO_OP the second word is zero (not for LOC).
        let p = payload(GNI_FMA_CE_IADD_S, 0, 0xffff_ffff_0000_0007, 9);
        assert_eq!(&p[..8], &7u64.to_ne_bytes());
        assert_eq!(&p[8..], &0u64.to_ne_bytes());
        let p = payload(GNI_FMA_CE_IMIN_LIDX, 0, 5, 3);
        assert_eq!(&p[8..], &3u64.to_ne_bytes());
    }
}
