//! The DMAPP collectives (`dmapp_c_*`, digest 3b) over the fabric's reduction trees
//! (`softnic_fabric::coll`).
//!
//! **Tree.** A pset's members, in the order its description lists them, form a heap of
//! arity `radix`: member `i`'s parent is member `(i - 1) / radix`, its children are
//! `radix*i + 1 ..= radix*i + radix`.  Every member owns one tree node: slot 0 is its own
//! contribution, slot `j` the combined contribution of its `j`-th child's subtree.  The
//! node of member 0 is the root; when it completes, the result flows down into every
//! node's result area, where its owner reads it (`test`/`wait`).
//!
//! **Finding the parent.** Each PE has a small *pset directory* in its shared memory
//! (located by the `dmapp_init` allgather): `export` writes (identifier, node location)
//! into it.  A member finds its parent's node by reading the parent PE's directory —
//! mapped on this machine, through the network engine elsewhere.  Until the parent has
//! exported, a member's contribution waits inside the member (start stays non-blocking;
//! `test`/`wait` retry), because the member's node must know its parent before it can
//! complete.
//!
//! # Decisions where the header is silent (also in dmapp.h)
//! - `create` checks the description (type, 1..=npes members, each a valid PE, no PE
//!   twice, the caller among them, `vec_pes` non-NULL), a non-zero identifier not used
//!   by another live pset of this PE, known mode bits (CONCAT needs a concat buffer and
//!   size; CONCAT, FAULT_TOLERANT and HW_OFFLOAD change nothing else), attrs NULL or VER1
//!   with radix 2..=63 (default [`DEFAULT_RADIX`]).  Anything else: INVALID_PARAM.
//! - `export` is required before the first operation (else INVALID_PARAM); again is a
//!   no-op.  Operations are one at a time: starting one while another is in flight (or
//!   while a cancelled one is still open in the tree) is DMAPP_RC_BUSY.
//! - `greduce_start`: `in`/`out` non-NULL, 1..=`nelems_max` elements, a valid (type, op)
//!   pair (bitwise and logical ops on integer types, MIN/MAX on real types, SUM/PROD on
//!   all but the LOC pairs, MINLOC/MAXLOC on the LOC pairs only, ties to the smaller
//!   index): else INVALID_PARAM.  Logical results are 0 or 1 (also with one member).
//!   `in` is read at start; `out` is written when `test` or
//!   `wait` observes completion (it may alias `in`).  Every member receives the same bits
//!   (one fixed combining order); floating-point sums round to nearest.
//! - `test` is SUCCESS (done, or nothing in flight) or NOT_DONE; `wait` returns when
//!   done, running the progress callbacks while it waits; either is TRANSACTION_ERROR
//!   when a member of the pset has exited, or the contributions disagreed (members
//!   started different operations).
//! - `cancel_op` abandons the current operation: `out` is never written, and `test`/
//!   `wait` report nothing in flight.  If this member had already joined the round it
//!   stays in the tree (the others still complete it) and the next start is BUSY until
//!   that round has completed.  With nothing in flight it is a no-op (SUCCESS).
//! - `destroy` with an operation in flight: RESOURCE_ERROR; after `cancel_op`, allowed.

use crate::job::{self, Job, DIR_ENTRIES, DIR_ENTRY};
use crate::mutex::lock;
use crate::types::*;
use softnic_fabric::coll::{self, Deliver, Node, NodeRef, Params};
use softnic_fabric::reduce::{Elem, Op, Rounding, Ties};
use softnic_fabric::rma::Region;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Tree arity when attrs give none.
pub const DEFAULT_RADIX: usize = 16;
const MAX_RADIX: usize = coll::MAX_CHILDREN - 1;

pub const DMAPP_C_PSET_DELIMITER_VEC: i32 = 1;
pub const DMAPP_C_PSET_DELIMITER_STRIDED: i32 = 2;
pub const DMAPP_C_PSET_ATTRS_VER1: i32 = 1;
const MODE_CONCAT: u64 = 1;
const KNOWN_MODES: u64 = 0x7;

/// `dmapp_c_pset_desc_t` (the union as its largest member).
#[repr(C)]
pub struct PsetDesc {
    pub concat_buf: *mut c_void,
    pub concat_buf_size: u64,
    pub type_: i32,
    /// STRIDED: n_pes | base_pe << 32, stride_pe; VEC: n_pes, vec_pes.
    pub u: [u64; 2],
}
const _: () = assert!(std::mem::size_of::<PsetDesc>() == 40);

/// `dmapp_c_pset_attrs_t`.
#[repr(C)]
pub struct PsetAttrs {
    pub type_: i32,
    pub radix: u32,
}

/// `dmapp_c_pset_handle_t`.
pub type PsetHandle = *mut c_void;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Barrier,
    Reduce { out: usize, len: usize },
}

/// The current operation.
#[derive(Clone, Copy)]
struct Current {
    kind: Kind,
    /// Round of our node this operation is; None until we have joined it (parent found).
    round: Option<u64>,
    params: Params,
    payload: [u8; coll::MAX_PAYLOAD],
    len: usize,
    /// Abandoned by cancel_op (kept while its round is open in the tree).
    cancelled: bool,
    polls: u32,
}

pub struct Pset {
    job: &'static Job,
    identifier: u64,
    members: Vec<u32>,
    me: usize,
    radix: usize,
    node: Node,
    exported: Mutex<Option<usize>>,
    parent_set: Mutex<bool>,
    op: Mutex<Option<Current>>,
}

static PSETS: Mutex<Option<HashMap<u64, Arc<Pset>>>> = Mutex::new(None);
static NEXT: AtomicU64 = AtomicU64::new(1);
/// Handles are `HANDLE_BASE + n`: never NULL, never a heap address, never reused.
const HANDLE_BASE: u64 = 0x5e75_0000_0000;

fn get(h: PsetHandle) -> Result<Arc<Pset>, Rc> {
    lock(&PSETS).as_ref().and_then(|m| m.get(&(h as u64)).cloned()).ok_or(DMAPP_RC_INVALID_PARAM)
}

/// The element type and operation of a (dmapp_c_type_t, dmapp_c_op_t) pair.
fn decode(ty: i32, op: i32) -> Option<(Elem, Op)> {
    let elem = match ty {
        101 => Elem::I32,
        102 => Elem::U32,
        103 => Elem::I64,
        104 => Elem::U64,
        105 => Elem::F32,
        106 => Elem::F64,
        107 => Elem::C32,
        108 => Elem::C64,
        109 => Elem::LocF32,
        110 => Elem::LocF64,
        111 => Elem::LocI32,
        112 => Elem::LocI64,
        _ => return None,
    };
    let op = match op {
        201 => Op::Sum,
        202 => Op::Max,
        203 => Op::Min,
        204 => Op::Prod,
        205 => Op::LAnd,
        206 => Op::BAnd,
        207 => Op::LOr,
        208 => Op::BOr,
        209 => Op::LXor,
        210 => Op::BXor,
        211 => Op::MinLoc(Ties::LowerIndex),
        212 => Op::MaxLoc(Ties::LowerIndex),
        _ => return None,
    };
    op.valid_for(elem).then_some((elem, op))
}

/// The members a description lists, checked (module doc).
///
/// # Safety
/// `d` is a valid description; `vec_pes` NULL or valid for `n_pes` entries.
unsafe fn members(d: &PsetDesc, npes: u32) -> Result<Vec<u32>, Rc> {
    let v: Vec<u32> = match d.type_ {
        DMAPP_C_PSET_DELIMITER_STRIDED => {
            let (n, base, stride) = (d.u[0] as u32, (d.u[0] >> 32) as u32, d.u[1] as u32);
            if n == 0 || n > npes || (n > 1 && stride == 0) {
                return Err(DMAPP_RC_INVALID_PARAM);
            }
            (0..n as u64).map(|k| base as u64 + k * stride as u64).map(|p| u32::try_from(p).unwrap_or(u32::MAX)).collect()
        }
        DMAPP_C_PSET_DELIMITER_VEC => {
            let n = d.u[0] as u32;
            let ptr = d.u[1] as *const u32;
            if n == 0 || n > npes || ptr.is_null() {
                return Err(DMAPP_RC_INVALID_PARAM);
            }
            // SAFETY: the caller's array of n_pes entries (non-NULL checked).
            unsafe { std::slice::from_raw_parts(ptr, n as usize) }.to_vec()
        }
        _ => return Err(DMAPP_RC_INVALID_PARAM),
    };
    let mut seen = vec![false; npes as usize];
    for &p in &v {
        if p >= npes || std::mem::replace(&mut seen[p as usize], true) {
            return Err(DMAPP_RC_INVALID_PARAM);
        }
    }
    Ok(v)
}

fn dir_word(job: &Job, entry: usize, w: usize) -> &std::sync::atomic::AtomicU64 {
    debug_assert!(entry < DIR_ENTRIES && w < 8);
    // SAFETY: inside our directory (DIR_BYTES, page-aligned); shared words accessed
    // atomically by us and (read-only) by peers.
    unsafe { &*(job.pset_dir.as_ptr().add(entry * DIR_ENTRY + w * 8) as *const std::sync::atomic::AtomicU64) }
}

/// # Safety
/// Pointers NULL or valid (see dmapp.h).
#[no_mangle]
pub unsafe extern "C" fn dmapp_c_pset_create(pdesc: *mut PsetDesc, identifier: u64, modes: u64, attrs: *mut PsetAttrs, pset_hndl: *mut PsetHandle) -> Rc {
    let Ok(job) = job::live() else { return DMAPP_RC_INVALID_PARAM };
    if pdesc.is_null() || pset_hndl.is_null() || identifier == 0 || modes & !KNOWN_MODES != 0 {
        return DMAPP_RC_INVALID_PARAM;
    }
    // SAFETY: non-NULL, the caller's description.
    let d = unsafe { &*pdesc };
    if modes & MODE_CONCAT != 0 && (d.concat_buf.is_null() || d.concat_buf_size == 0) {
        return DMAPP_RC_INVALID_PARAM;
    }
    let radix = if attrs.is_null() {
        DEFAULT_RADIX
    } else {
        // SAFETY: non-NULL, the caller's attributes.
        let a = unsafe { &*attrs };
        if a.type_ != DMAPP_C_PSET_ATTRS_VER1 || !(2..=MAX_RADIX as u32).contains(&a.radix) {
            return DMAPP_RC_INVALID_PARAM;
        }
        a.radix as usize
    };
    // SAFETY: as documented for the description.
    let members = match unsafe { members(d, job.npes) } {
        Ok(m) => m,
        Err(rc) => return rc,
    };
    let Some(me) = members.iter().position(|&p| p == job.pe) else { return DMAPP_RC_INVALID_PARAM };
    let mut psets = lock(&PSETS);
    let map = psets.get_or_insert_with(HashMap::new);
    if map.values().any(|p| p.identifier == identifier) {
        return DMAPP_RC_INVALID_PARAM;
    }
    let nkids = (radix * me + 1..=radix * me + radix).filter(|&c| c < members.len()).count();
    let node = match Node::create(1 + nkids, job.pes[job.pe as usize].node) {
        Ok(n) => n,
        Err(e) => return crate::rc::from_rma(e),
    };
    node.set_parent(None);
    let pset = Arc::new(Pset {
        job,
        identifier,
        members,
        me,
        radix,
        node,
        exported: Mutex::new(None),
        parent_set: Mutex::new(me == 0),
        op: Mutex::new(None),
    });
    let h = HANDLE_BASE + NEXT.fetch_add(1, Ordering::Relaxed);
    map.insert(h, pset);
    // SAFETY: checked non-NULL.
    unsafe { pset_hndl.write(h as PsetHandle) };
    DMAPP_RC_SUCCESS
}

#[no_mangle]
pub extern "C" fn dmapp_c_pset_export(pset_hndl: PsetHandle) -> Rc {
    let Ok(p) = get(pset_hndl) else { return DMAPP_RC_INVALID_PARAM };
    let mut exported = lock(&p.exported);
    if exported.is_some() {
        return DMAPP_RC_SUCCESS;
    }
    let job = &p.job;
    // A free directory entry (only this process writes its directory).
    let Some(e) = (0..DIR_ENTRIES).find(|&e| dir_word(job, e, 0).load(Ordering::Acquire) == 0) else { return DMAPP_RC_RESOURCE_ERROR };
    for (k, w) in p.node.at().to_words().iter().enumerate() {
        dir_word(job, e, 1 + k).store(*w, Ordering::Relaxed);
    }
    dir_word(job, e, 0).store(p.identifier, Ordering::Release);
    *exported = Some(e);
    DMAPP_RC_SUCCESS
}

#[no_mangle]
pub extern "C" fn dmapp_c_pset_destroy(pset_hndl: PsetHandle) -> Rc {
    let mut psets = lock(&PSETS);
    let Some(p) = psets.as_ref().and_then(|m| m.get(&(pset_hndl as u64)).cloned()) else { return DMAPP_RC_INVALID_PARAM };
    if lock(&p.op).is_some_and(|c| !c.cancelled) {
        return DMAPP_RC_RESOURCE_ERROR;
    }
    if let Some(e) = lock(&p.exported).take() {
        dir_word(&p.job, e, 0).store(0, Ordering::Release);
    }
    psets.as_mut().map(|m| m.remove(&(pset_hndl as u64)));
    DMAPP_RC_SUCCESS
}

impl Pset {
    /// Links our node under our parent's once the parent has exported (module doc).
    /// Ok(false): not yet.
    fn find_parent(&self) -> Result<bool, Rc> {
        let mut set = lock(&self.parent_set);
        if *set {
            return Ok(true);
        }
        let pi = (self.me - 1) / self.radix;
        let slot = self.me - (self.radix * pi + 1) + 1;
        let pe = self.members[pi];
        let peer = self.job.peer(pe)?;
        let dir = Region::open(&peer, &self.job.pes[pe as usize].pset_dir).map_err(crate::rc::from_rma)?;
        for e in 0..DIR_ENTRIES {
            if dir.load_u64(e * DIR_ENTRY).map_err(crate::rc::from_rma)? != self.identifier {
                continue;
            }
            let mut w = [0u64; 5];
            for (k, x) in w.iter_mut().enumerate() {
                *x = dir.load_u64(e * DIR_ENTRY + 8 + 8 * k).map_err(crate::rc::from_rma)?;
            }
            self.node.set_parent(Some((NodeRef::from_words(w), slot as u32)));
            *set = true;
            return Ok(true);
        }
        Ok(false)
    }

    /// Joins the current round if not done yet and possible.
    fn join(&self, cur: &mut Current) -> Result<(), Rc> {
        if cur.round.is_some() || !self.find_parent()? {
            return Ok(());
        }
        let round = coll::contribute(&self.node.at(), 0, cur.params, &cur.payload[..cur.len], Deliver::None).map_err(crate::rc::from_rma)?;
        cur.round = Some(round);
        Ok(())
    }

    fn start(&self, kind: Kind, params: Params, payload: &[u8]) -> Rc {
        if lock(&self.exported).is_none() {
            return DMAPP_RC_INVALID_PARAM;
        }
        let mut op = lock(&self.op);
        if let Some(c) = op.as_ref() {
            // A cancelled round that is still open keeps the pset busy.
            if !(c.cancelled && c.round.map_or(true, |r| self.node.done() >= r)) {
                return DMAPP_RC_BUSY;
            }
        }
        let mut cur = Current { kind, round: None, params, payload: [0; coll::MAX_PAYLOAD], len: payload.len(), cancelled: false, polls: 0 };
        cur.payload[..payload.len()].copy_from_slice(payload);
        if let Err(rc) = self.join(&mut cur) {
            return rc;
        }
        *op = Some(cur);
        DMAPP_RC_SUCCESS
    }

    /// SUCCESS (done; result delivered) / NOT_DONE / TRANSACTION_ERROR.
    fn test(&self) -> Rc {
        let mut op = lock(&self.op);
        let Some(cur) = op.as_mut() else { return DMAPP_RC_SUCCESS };
        if cur.cancelled {
            return DMAPP_RC_SUCCESS;
        }
        if let Err(rc) = self.join(cur) {
            *op = None;
            return rc;
        }
        let done = cur.round.is_some_and(|r| self.node.done() >= r);
        if !done {
            softnic_fabric::net::poll_for_events();
            cur.polls = cur.polls.wrapping_add(1);
            if cur.polls % 256 == 0 && !self.members_alive() {
                *op = None;
                return DMAPP_RC_TRANSACTION_ERROR;
            }
            return DMAPP_RC_NOT_DONE;
        }
        let (_, status, data) = self.node.result();
        let cur = op.take().expect("current operation");
        if status & coll::STATUS_ERROR != 0 || data.len() != cur.len {
            return DMAPP_RC_TRANSACTION_ERROR;
        }
        if let Kind::Reduce { out, len } = cur.kind {
            // SAFETY: the caller's output buffer of `len` bytes (checked non-NULL at start;
            // valid until the operation completes, as for any non-blocking call).
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), out as *mut u8, len) };
        }
        DMAPP_RC_SUCCESS
    }

    fn members_alive(&self) -> bool {
        self.members.iter().all(|&pe| pe == self.job.pe || self.job.peer(pe).is_ok_and(|p| p.seems_alive()))
    }
}

#[no_mangle]
pub extern "C" fn dmapp_c_barrier_join(pset_hndl: PsetHandle) -> Rc {
    let Ok(p) = get(pset_hndl) else { return DMAPP_RC_INVALID_PARAM };
    p.start(Kind::Barrier, Params { op: Op::BOr, elem: Elem::U64, rounding: Rounding::Nearest }, &[0u8; 8])
}

/// # Safety
/// `in_` and `out` NULL or valid for `nelems` elements of `type_`.
#[no_mangle]
pub unsafe extern "C" fn dmapp_c_greduce_start(pset: PsetHandle, in_: *mut c_void, out: *mut c_void, nelems: u32, type_: i32, op: i32) -> Rc {
    let Ok(p) = get(pset) else { return DMAPP_RC_INVALID_PARAM };
    let Some((elem, op)) = decode(type_, op) else { return DMAPP_RC_INVALID_PARAM };
    let len = nelems as usize * elem.size();
    if in_.is_null() || out.is_null() || nelems == 0 || len > coll::MAX_PAYLOAD {
        return DMAPP_RC_INVALID_PARAM;
    }
    // SAFETY: the caller's input of nelems elements (non-NULL checked).
    let mut payload = unsafe { std::slice::from_raw_parts(in_ as *const u8, len) }.to_vec();
    if matches!(op, Op::LAnd | Op::LOr | Op::LXor) {
        // Logical results are 0 or 1 whatever the member count (one member: no combine).
        for e in payload.chunks_exact_mut(elem.size()) {
            let truth = e.iter().any(|&b| b != 0) as u8;
            e.fill(0);
            e[if cfg!(target_endian = "little") { 0 } else { elem.size() - 1 }] = truth;
        }
    }
    p.start(Kind::Reduce { out: out as usize, len }, Params { op, elem, rounding: Rounding::Nearest }, &payload)
}

/// # Safety
/// `nelems_max` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn dmapp_c_greduce_nelems_max(type_: i32, nelems_max: *mut u32) -> Rc {
    let Some((elem, _)) = decode(type_, if (109..=112).contains(&type_) { 211 } else { 201 }) else { return DMAPP_RC_INVALID_PARAM };
    if nelems_max.is_null() {
        return DMAPP_RC_INVALID_PARAM;
    }
    // SAFETY: checked non-NULL.
    unsafe { nelems_max.write((coll::MAX_PAYLOAD / elem.size()) as u32) };
    DMAPP_RC_SUCCESS
}

#[no_mangle]
pub extern "C" fn dmapp_c_pset_test(pset_hndl: PsetHandle) -> Rc {
    let Ok(p) = get(pset_hndl) else { return DMAPP_RC_INVALID_PARAM };
    crate::queue::progress();
    p.test()
}

softnic_fabric::blocking_export! {
    pub fn dmapp_c_pset_wait(pset_hndl: PsetHandle) -> Rc {
        let Ok(p) = get(pset_hndl) else { return DMAPP_RC_INVALID_PARAM };
        let mut spins = 0u32;
        loop {
            let rc = p.test();
            if rc != DMAPP_RC_NOT_DONE {
                return rc;
            }
            crate::progress::run();
            spins += 1;
            if spins > 64 {
                // The call's cancellation point: the collective polls its tree, it never sleeps.
                softnic_fabric::cancel::test();
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

#[no_mangle]
pub extern "C" fn dmapp_c_pset_cancel_op(pset_hndl: PsetHandle) -> Rc {
    let Ok(p) = get(pset_hndl) else { return DMAPP_RC_INVALID_PARAM };
    let mut op = lock(&p.op);
    match op.as_mut() {
        // Not joined yet: nothing of it is in the tree.
        Some(c) if c.round.is_none() => *op = None,
        Some(c) => c.cancelled = true,
        None => {}
    }
    DMAPP_RC_SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_op_pairs() {
        assert_eq!(decode(101, 201), Some((Elem::I32, Op::Sum)));
        assert_eq!(decode(110, 211), Some((Elem::LocF64, Op::MinLoc(Ties::LowerIndex))));
        assert_eq!(decode(105, 206), None, "bitwise on floats");
        assert_eq!(decode(105, 205), None, "logical on floats");
        assert_eq!(decode(101, 211), None, "MINLOC on a plain type");
        assert_eq!(decode(109, 201), None, "SUM on a LOC pair");
        assert_eq!(decode(107, 202), None, "MAX on complex");
        assert_eq!(decode(100, 201), None);
        assert_eq!(decode(101, 213), None);
    }
}
