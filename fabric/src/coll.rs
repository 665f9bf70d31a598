//! Reduction trees: one software collective engine for uGNI's collective engine
//! (`GNI_Ce*`) and DMAPP's collectives (`dmapp_c_*`).
//!
//! A **node** is a small table in its owner's library-owned shared memory ([`Node`]),
//! reached by every participant through [`crate::rma::Region`] — mapped when the owner runs
//! on the same machine, through the network engine otherwise — and named job-wide by a
//! [`NodeRef`] (node address, registry id, location).  A node has `nchild` slots; each
//! child (a process, or another node) contributes once per round, and nodes are joined
//! into a tree by parent links.
//!
//! **Protocol (one round).**  No thread serves a node; whoever arrives last does the work:
//! 1. A contributor reads the node's completed-round counter `done` (Acquire), writes its
//!    slot (payload, parameters, delivery record), then the slot's round `done + 1`
//!    (Release), then adds one to the node's arrival counter (compare-and-swap loop).
//! 2. The contributor whose addition makes `arrived == (done + 1) * nchild` is last: it
//!    reads every slot (Acquire on the round words, which were published after the
//!    payloads), checks that all carry this round and the same parameters, and combines the
//!    payloads **in slot order** with [`crate::reduce::combine`] — one fixed order, so every
//!    participant later receives the same bits.
//! 3. With a parent, it contributes the combined value to the parent node as that node's
//!    child (slot `index`), with a delivery record that names this node; the parent's
//!    last arriver continues.  At the root it distributes.
//! 4. Distribution of the result into a node: read every slot's delivery record first, then
//!    write the node's result area (payload, status, then `done` with Release), push the
//!    node's completion notification, then deliver to each slot: a child node recursively,
//!    a process's buffer by a put of `[tag | status << 32, payload]` followed by its event.
//!    Records are read before anything is delivered because a contributor that has its
//!    result may contribute to the next round at once (overwriting its slot); none can
//!    before it has its result.
//!
//! A round's status: the FP exceptions raised (low byte, [`crate::reduce::Fpe`]) and
//! [`STATUS_ERROR`] when contributions disagreed (operation, type, length) or a combine
//! failed.  Layouts carry a magic and version; every offset is relative to the node.

use crate::mem::{MemKey, RingLoc, SharedMem};
use crate::reduce::{self, Elem, Op, Rounding};
use crate::registry::ProcId;
use crate::rma::{Peer, Region};
use crate::{Error, Result};
use std::sync::atomic::Ordering;

const MAGIC: u64 = u64::from_le_bytes(*b"snCOLL01");
/// Layout version of a node (bump on any change below).
pub const VERSION: u64 = 1;
/// Most children of one node.
pub const MAX_CHILDREN: usize = 64;
/// Most payload bytes of one contribution.
pub const MAX_PAYLOAD: usize = 256;
/// Status bit: contributions disagreed, or combining them failed.
pub const STATUS_ERROR: u64 = 1 << 8;
/// Status bit set in every delivered result (so a zeroed buffer tells "not yet").
pub const STATUS_DELIVERED: u64 = 1 << 31;

// Node layout (byte offsets).
const H_MAGIC: usize = 0;
const H_VERSION: usize = 8;
const H_NCHILD: usize = 16;
const H_DONE: usize = 24;
const H_ARRIVED: usize = 32;
// Configuration: parent link and completion notification.
const C_PARENT: usize = 64; // [has, node, proc, loc0, loc1, loc2, index]
const C_NOTIFY: usize = 128; // [flags, loc0, loc1, loc2, ok entry, error entry]
/// Rounding mode of the node's floating-point combines: 0 = the contributions', else
/// `Rounding::code() + 1` (a collective engine's ROUND_* mode).
const C_ROUNDING: usize = 176;
const NOTIFY_ON_OK: u64 = 1;
const NOTIFY_ON_ERROR: u64 = 2;
// Result area: [round, status, len], payload.
const R_ROUND: usize = 192;
const R_STATUS: usize = 200;
const R_LEN: usize = 208;
const R_DATA: usize = 216;
const SLOTS: usize = 512;
// Slot: [round, params, status, len, deliver kind, node, proc, key, addr, tag, pd,
//        loc0, loc1, loc2, entry] (15 words, padded to 128), payload.
const SLOT_HEAD: usize = 128;
const SLOT: usize = SLOT_HEAD + MAX_PAYLOAD;
const S_ROUND: usize = 0;
const _: () = assert!(R_DATA + MAX_PAYLOAD <= SLOTS && 15 * 8 <= SLOT_HEAD);

const KIND_NONE: u64 = 0;
const KIND_NODE: u64 = 1;
const KIND_BUFFER: u64 = 2;

fn node_len(nchild: usize) -> usize {
    SLOTS + nchild * SLOT
}

fn slot_off(i: usize) -> usize {
    SLOTS + i * SLOT
}

/// Where a node is, job-wide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeRef {
    /// Node address of the owner (the network engine routes by it).
    pub node: u32,
    pub proc: ProcId,
    pub loc: RingLoc,
}

impl NodeRef {
    pub fn to_words(&self) -> [u64; 5] {
        let l = self.loc.to_words();
        [self.node as u64, self.proc.slot as u64 | ((self.proc.gen as u64) << 32), l[0], l[1], l[2]]
    }
    pub fn from_words(w: [u64; 5]) -> NodeRef {
        NodeRef { node: w[0] as u32, proc: ProcId { slot: w[1] as u32, gen: (w[1] >> 32) as u32 }, loc: RingLoc::from_words([w[2], w[3], w[4]]) }
    }

    fn open(&self) -> Result<Region> {
        let peer = Peer::at(self.node, self.proc, 32)?;
        let r = Region::open(&peer, &self.loc)?;
        if r.load_u64(H_MAGIC)? != MAGIC || r.load_u64(H_VERSION)? != VERSION {
            return Err(Error::Version);
        }
        Ok(r)
    }
}

/// What a round combines: the operation and element type, the FP rounding mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    pub op: Op,
    pub elem: Elem,
    pub rounding: Rounding,
}

impl Params {
    fn word(&self, len: usize) -> u64 {
        self.op.code() as u64 | ((self.elem.code() as u64) << 8) | ((self.rounding.code() as u64) << 16) | ((len as u64) << 32)
    }
    fn from_word(w: u64) -> Option<(Params, usize)> {
        Some((Params { op: Op::from_code(w as u32 & 0xff)?, elem: Elem::from_code((w >> 8) as u32 & 0xff)?, rounding: Rounding::from_code((w >> 16) as u32 & 0xff) }, (w >> 32) as usize))
    }
}

/// Where a contributor wants the result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deliver {
    /// Nowhere: the contributor reads the result area of the node it contributed to.
    None,
    /// Into a registered buffer of the contributor: `[tag | status << 32, payload]` put at
    /// `addr` of registration `key` (protection domain `pd`), then `event` pushed into a
    /// ring of the contributor's (its completion queue), if any.
    Buffer { node: u32, proc: ProcId, key: MemKey, addr: u64, tag: u32, pd: u64, event: Option<(RingLoc, u64)> },
}

/// A node this process owns.
pub struct Node {
    mem: std::mem::ManuallyDrop<SharedMem>,
    nchild: usize,
    at: NodeRef,
}

impl Node {
    /// A node with `nchild` children (1..=[`MAX_CHILDREN`]), no parent, no notification.
    pub fn create(nchild: usize, node_addr: u32) -> Result<Node> {
        if nchild == 0 || nchild > MAX_CHILDREN {
            return Err(Error::InvalidArg);
        }
        let len = node_len(nchild);
        let mem = crate::mem::alloc_shared(len)?;
        let loc = mem.ring_loc(0, len)?;
        let proc = crate::node::get()?.proc_id();
        let n = Node { mem: std::mem::ManuallyDrop::new(mem), nchild, at: NodeRef { node: node_addr, proc, loc } };
        n.set(H_VERSION, VERSION);
        n.set(H_NCHILD, nchild as u64);
        n.set(H_MAGIC, MAGIC);
        Ok(n)
    }

    fn word(&self, off: usize) -> &std::sync::atomic::AtomicU64 {
        debug_assert!(off + 8 <= self.mem.len() && off % 8 == 0);
        // SAFETY: in bounds of our node (offsets are layout constants), 8-aligned (page-
        // aligned memory); the words are shared and accessed atomically everywhere.
        unsafe { &*(self.mem.as_ptr().add(off) as *const std::sync::atomic::AtomicU64) }
    }

    fn set(&self, off: usize, v: u64) {
        self.word(off).store(v, Ordering::Release);
    }

    pub fn at(&self) -> NodeRef {
        self.at
    }

    pub fn nchild(&self) -> usize {
        self.nchild
    }

    /// Links this node under `parent` as its child number `index` (None: a root).
    pub fn set_parent(&self, parent: Option<(NodeRef, u32)>) {
        match parent {
            Some((p, index)) => {
                let w = p.to_words();
                for (k, v) in w.iter().enumerate() {
                    self.set(C_PARENT + 8 + 8 * k, *v);
                }
                self.set(C_PARENT + 48, index as u64);
                self.set(C_PARENT, 1);
            }
            None => self.set(C_PARENT, 0),
        }
    }

    /// After each round, push `ok` (or `err` for a round with an error) into the ring at
    /// `loc` — when `on_ok` (resp. `on_err`) asks for it.
    pub fn set_notify(&self, loc: Option<RingLoc>, ok: u64, err: u64, on_ok: bool, on_err: bool) {
        self.set(C_NOTIFY, 0);
        if let Some(l) = loc {
            let w = l.to_words();
            for (k, v) in w.iter().enumerate() {
                self.set(C_NOTIFY + 8 + 8 * k, *v);
            }
            self.set(C_NOTIFY + 32, ok);
            self.set(C_NOTIFY + 40, err);
            self.set(C_NOTIFY, (on_ok as u64 * NOTIFY_ON_OK) | (on_err as u64 * NOTIFY_ON_ERROR));
        }
    }

    /// Sets how many children take part (1..=the capacity given to `create`); only
    /// before the first contribution.
    pub fn set_children(&self, n: usize) -> Result<()> {
        if n == 0 || n > self.nchild || self.word(H_ARRIVED).load(Ordering::Acquire) != 0 {
            return Err(Error::InvalidArg);
        }
        self.set(H_NCHILD, n as u64);
        Ok(())
    }

    /// Fixes the rounding mode of every floating-point combine that finishes at this node
    /// (None: the contributions' own).
    pub fn set_rounding(&self, r: Option<Rounding>) {
        self.set(C_ROUNDING, r.map_or(0, |r| r.code() as u64 + 1));
    }

    /// Rounds completed at this node.
    pub fn done(&self) -> u64 {
        self.word(H_DONE).load(Ordering::Acquire)
    }

    /// The last result: (round, status, payload).
    pub fn result(&self) -> (u64, u64, Vec<u8>) {
        let round = self.word(R_ROUND).load(Ordering::Acquire);
        let status = self.word(R_STATUS).load(Ordering::Relaxed);
        let len = (self.word(R_LEN).load(Ordering::Relaxed) as usize).min(MAX_PAYLOAD);
        // SAFETY: inside our node; published by the Release store of R_ROUND read above.
        let data = unsafe { std::slice::from_raw_parts(self.mem.as_ptr().add(R_DATA), len) }.to_vec();
        (round, status, data)
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.set(H_MAGIC, 0);
        // SAFETY: dropped once, here; nothing uses the memory after the node goes.
        let m = unsafe { std::mem::ManuallyDrop::take(&mut self.mem) };
        let _ = crate::mem::free_shared(m);
    }
}

fn u64s(b: &[u8], i: usize) -> u64 {
    u64::from_ne_bytes(b[i * 8..i * 8 + 8].try_into().expect("8 bytes"))
}

/// Adds one to the arrival counter of `r`; returns the new value.
fn arrive(r: &Region) -> Result<u64> {
    let mut cur = r.load_u64(H_ARRIVED)?;
    loop {
        match r.cas_u64(H_ARRIVED, cur, cur + 1)? {
            Ok(_) => return Ok(cur + 1),
            Err(now) => cur = now,
        }
    }
}

/// Rounds completed at the node at `target` (a contributor asks whether its round is
/// over).
pub fn done(target: &NodeRef) -> Result<u64> {
    target.open()?.load_u64(H_DONE)
}

/// Does the owner of the node at `target` still run?  (Rate-limited like every liveness
/// check: a waiter may call it often.)  A round whose node owner died never completes;
/// waiters ask this to give up.
pub fn owner_alive(target: &NodeRef) -> bool {
    Peer::at(target.node, target.proc, 32).is_ok_and(|p| p.seems_alive())
}

/// Contributes `payload` as child `index` of the node at `target` (see the module doc).
/// Returns the round contributed to.  `InvalidArg` for a bad index or payload, a stale or
/// unreachable node as the engines report it.
pub fn contribute(target: &NodeRef, index: usize, params: Params, payload: &[u8], deliver: Deliver) -> Result<u64> {
    if payload.len() > MAX_PAYLOAD || payload.len() % params.elem.size() != 0 || !params.op.valid_for(params.elem) {
        return Err(Error::InvalidArg);
    }
    contribute_status(target, index, params, payload, 0, deliver)
}

fn contribute_status(target: &NodeRef, index: usize, params: Params, payload: &[u8], status: u64, deliver: Deliver) -> Result<u64> {
    // Delivery record: kind, then node, proc, key, addr, tag | has-event << 32, pd, ring
    // location (3 words), event entry.
    let rec: Vec<u64> = match deliver {
        Deliver::None => vec![KIND_NONE],
        Deliver::Buffer { node, proc, key, addr, tag, pd, event } => {
            let (loc, entry) = event.map_or(([0; 3], 0), |(l, e)| (l.to_words(), e));
            vec![KIND_BUFFER, node as u64, proc.slot as u64 | ((proc.gen as u64) << 32), key.to_u64(), addr, tag as u64 | ((event.is_some() as u64) << 32), pd, loc[0], loc[1], loc[2], entry]
        }
    };
    publish(target, index, params, payload, status, &rec)
}

/// Contributes the result of this node's children as a child node (delivery: this node).
fn contribute_node(target: &NodeRef, index: usize, me: &NodeRef, params: Params, payload: &[u8], status: u64) -> Result<u64> {
    let w = me.to_words();
    publish(target, index, params, payload, status, &[KIND_NODE, w[0], w[1], w[2], w[3], w[4]])
}

/// Step 1 of the protocol (module doc): fills slot `index` (parameters, status, length,
/// delivery record `rec`, payload), publishes it with its round, arrives, and finishes
/// the round when last.
fn publish(target: &NodeRef, index: usize, params: Params, payload: &[u8], status: u64, rec: &[u64]) -> Result<u64> {
    let r = target.open()?;
    let nchild = r.load_u64(H_NCHILD)? as usize;
    if index >= nchild {
        return Err(Error::InvalidArg);
    }
    let round = r.load_u64(H_DONE)? + 1;
    let s = slot_off(index);
    let mut head = vec![params.word(payload.len()), status, payload.len() as u64];
    head.extend_from_slice(rec);
    let bytes: Vec<u8> = head.iter().flat_map(|w| w.to_ne_bytes()).collect();
    r.write(s + 8, &bytes)?;
    r.write(s + SLOT_HEAD, payload)?;
    // Release: the slot is complete before its round says so.
    r.store_u64(s + S_ROUND, round)?;
    if arrive(&r)? == round * nchild as u64 {
        finish_round(target, &r, round, nchild)?;
    }
    Ok(round)
}

/// The last arriver's work at one node: combine, then go up or distribute.
fn finish_round(at: &NodeRef, r: &Region, round: u64, nchild: usize) -> Result<()> {
    let heads = r.gather(SLOTS, SLOT, nchild, SLOT_HEAD)?;
    let mut status = 0u64;
    let mut params: Option<(Params, usize)> = None;
    let mut acc: Vec<u8> = Vec::new();
    for i in 0..nchild {
        let h = &heads[i * SLOT_HEAD..(i + 1) * SLOT_HEAD];
        let p = Params::from_word(u64s(h, 1));
        status |= u64s(h, 2);
        let len = (u64s(h, 3) as usize).min(MAX_PAYLOAD);
        if u64s(h, 0) != round || p.is_none() || params.is_some_and(|q| Some((q.0.op, q.0.elem, q.1)) != p.map(|(x, l)| (x.op, x.elem, l))) {
            status |= STATUS_ERROR;
            continue;
        }
        let (pp, plen) = p.expect("checked");
        if plen != len {
            status |= STATUS_ERROR;
            continue;
        }
        let mut data = vec![0u8; len];
        r.read(slot_off(i) + SLOT_HEAD, &mut data)?;
        let pp = match r.load_u64(C_ROUNDING)? {
            0 => pp,
            code => Params { rounding: Rounding::from_code(code as u32 - 1), ..pp },
        };
        if params.is_none() {
            params = Some((pp, len));
            acc = data;
        } else {
            match reduce::combine(pp.op, pp.elem, pp.rounding, &mut acc, &data) {
                Ok(f) => status |= f.0 as u64,
                Err(_) => status |= STATUS_ERROR,
            }
        }
    }
    let (p, _) = params.unwrap_or((Params { op: Op::Sum, elem: Elem::U64, rounding: Rounding::Nearest }, 0));
    if r.load_u64(C_PARENT)? != 0 {
        let mut w = [0u64; 5];
        for (k, v) in w.iter_mut().enumerate() {
            *v = r.load_u64(C_PARENT + 8 + 8 * k)?;
        }
        let index = r.load_u64(C_PARENT + 48)? as usize;
        contribute_node(&NodeRef::from_words(w), index, at, p, &acc, status)?;
        return Ok(());
    }
    distribute(at, r, round, status, &acc)
}

/// Writes the result into the node `at` (opened as `r`) and delivers it to every slot.
fn distribute(at: &NodeRef, r: &Region, round: u64, status: u64, payload: &[u8]) -> Result<()> {
    let nchild = r.load_u64(H_NCHILD)? as usize;
    // The delivery records first: once results go out, contributors may reuse their slots.
    let heads = r.gather(SLOTS, SLOT, nchild, SLOT_HEAD)?;
    r.write(R_DATA, payload)?;
    r.store_u64(R_LEN, payload.len() as u64)?;
    r.store_u64(R_STATUS, status)?;
    r.store_u64(R_ROUND, round)?;
    r.store_u64(H_DONE, round)?;
    // The node's own completion notification (e.g. a CE's CQ).
    let flags = r.load_u64(C_NOTIFY)?;
    let error = status & STATUS_ERROR != 0;
    if (flags & NOTIFY_ON_OK != 0 && !error) || (flags & NOTIFY_ON_ERROR != 0 && error) {
        let loc = RingLoc::from_words([r.load_u64(C_NOTIFY + 8)?, r.load_u64(C_NOTIFY + 16)?, r.load_u64(C_NOTIFY + 24)?]);
        let entry = r.load_u64(C_NOTIFY + if error { 40 } else { 32 })?;
        // The ring is the node owner's (best effort, like any completion event).
        if let Err(e) = Peer::at(at.node, at.proc, 32).and_then(|owner| crate::rma::post_event(&owner, &loc, &entry, true)) {
            crate::sn_debug!("collective", "completion event not delivered: {}", e);
        }
    }
    let mut first_err = None;
    for i in 0..nchild {
        let h = &heads[i * SLOT_HEAD..(i + 1) * SLOT_HEAD];
        let res = match u64s(h, 4) {
            KIND_NODE => {
                let child = NodeRef::from_words([u64s(h, 5), u64s(h, 6), u64s(h, 7), u64s(h, 8), u64s(h, 9)]);
                child.open().and_then(|c| distribute(&child, &c, round, status, payload))
            }
            KIND_BUFFER => deliver_buffer(h, status, payload),
            _ => Ok(()),
        };
        if let Err(e) = res {
            // One unreachable contributor (it died) must not keep the others from theirs.
            first_err.get_or_insert(e);
        }
    }
    match first_err {
        Some(e) => {
            crate::sn_debug!("collective", "a result could not be delivered: {}", e);
            Ok(())
        }
        None => Ok(()),
    }
}

fn deliver_buffer(h: &[u8], status: u64, payload: &[u8]) -> Result<()> {
    let node = u64s(h, 5) as u32;
    let pw = u64s(h, 6);
    let proc = ProcId { slot: pw as u32, gen: (pw >> 32) as u32 };
    let key = MemKey::from_u64(u64s(h, 7));
    let addr = u64s(h, 8);
    let tw = u64s(h, 9);
    let pd = u64s(h, 10);
    let peer = Peer::at(node, proc, 32)?;
    let live = peer.live()?;
    let mut buf = Vec::with_capacity(8 + payload.len());
    buf.extend_from_slice(&((tw & 0xffff_ffff) | (((status | STATUS_DELIVERED) & 0xffff_ffff) << 32)).to_ne_bytes());
    buf.extend_from_slice(payload);
    live.put(key, addr, &buf, pd)?;
    if tw >> 32 != 0 {
        let loc = RingLoc::from_words([u64s(h, 11), u64s(h, 12), u64s(h, 13)]);
        live.post_event(&loc, &u64s(h, 14), true)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::Access;
    use crate::reduce::Ties;

    fn sum_u64() -> Params {
        Params { op: Op::Sum, elem: Elem::U64, rounding: Rounding::Nearest }
    }

    /// Two leaves of 3 contributors under a root of 2: every round's result is the sum
    /// of all six contributions, identical at every node, whatever thread arrives last.
    #[test]
    fn two_level_tree_rounds() {
        let root = Node::create(2, 0).unwrap();
        let leaves = [Node::create(3, 0).unwrap(), Node::create(3, 0).unwrap()];
        for (i, l) in leaves.iter().enumerate() {
            l.set_parent(Some((root.at(), i as u32)));
        }
        let at: Vec<NodeRef> = leaves.iter().map(|l| l.at()).collect();
        for round in 1..=20u64 {
            std::thread::scope(|sc| {
                for leaf in 0..2 {
                    for child in 0..3 {
                        let at = at[leaf];
                        sc.spawn(move || {
                            let v = round * 100 + (leaf * 3 + child) as u64;
                            assert_eq!(contribute(&at, child, sum_u64(), &v.to_ne_bytes(), Deliver::None).unwrap(), round);
                        });
                    }
                }
            });
            let want: u64 = (0..6).map(|k| round * 100 + k).sum();
            for n in [&root, &leaves[0], &leaves[1]] {
                let (r, status, data) = n.result();
                assert_eq!((r, status), (round, 0));
                assert_eq!(u64::from_ne_bytes(data[..].try_into().unwrap()), want);
                assert_eq!(n.done(), round);
            }
        }
    }

    /// Results delivered into registered buffers with the tag and an event; a mismatch
    /// (another operation) gives every contributor the error status.
    #[test]
    fn buffer_delivery_and_mismatch() {
        let node = Node::create(2, 0).unwrap();
        let page = crate::mem::PageBuf::new(64, 0);
        // SAFETY: 64 zeroed, 4096-aligned bytes of our own.
        let buf = unsafe { std::slice::from_raw_parts_mut(page.as_ptr() as *mut u64, 8) };
        let key = crate::mem::register(buf.as_ptr() as usize, 64, Access::ReadWrite, 5).unwrap();
        let me = crate::node::get().unwrap().proc_id();
        let cap = 8u32;
        let len = crate::ring::Ring::<u64>::bytes_needed(cap);
        let rmem = crate::mem::alloc_shared(len).unwrap();
        // SAFETY: fresh shared memory of `len` bytes used only by this ring.
        let ring = unsafe { crate::ring::Ring::<u64>::init(rmem.as_ptr(), len, cap) }.unwrap();
        let rloc = rmem.ring_loc(0, len).unwrap();
        let d = |i: usize, tag: u32| Deliver::Buffer { node: 0, proc: me, key, addr: buf.as_ptr() as u64 + 24 * i as u64, tag, pd: 5, event: Some((rloc, 700 + i as u64)) };
        let p = Params { op: Op::MaxLoc(Ties::LowerIndex), elem: Elem::LocF64, rounding: Rounding::Nearest };
        let pair = |v: f64, i: u64| [v.to_ne_bytes(), i.to_ne_bytes()].concat();
        contribute(&node.at(), 0, p, &pair(2.5, 4), d(0, 11)).unwrap();
        contribute(&node.at(), 1, p, &pair(2.5, 1), d(1, 12)).unwrap();
        assert_eq!(buf[0], 11 | (STATUS_DELIVERED << 32));
        assert_eq!(f64::from_bits(buf[1]), 2.5);
        assert_eq!(buf[2], 1, "ties: the lower index");
        assert_eq!(buf[3], 12 | (STATUS_DELIVERED << 32));
        assert_eq!((ring.pop(), ring.pop(), ring.pop()), (Some(700), Some(701), None));
        let q = Params { op: Op::Sum, ..p };
        assert_eq!(contribute(&node.at(), 0, q, &pair(1.0, 1), Deliver::None), Err(Error::InvalidArg), "SUM on pairs");
        let q = Params { op: Op::MinLoc(Ties::LowerIndex), ..p };
        contribute(&node.at(), 0, q, &pair(1.0, 1), d(0, 13)).unwrap();
        contribute(&node.at(), 1, p, &pair(1.0, 1), d(1, 14)).unwrap();
        assert_eq!(buf[0] >> 32, STATUS_ERROR | STATUS_DELIVERED);
        assert_eq!(node.result().1 & STATUS_ERROR, STATUS_ERROR);
        assert_eq!(contribute(&node.at(), 2, p, &pair(1.0, 1), Deliver::None), Err(Error::InvalidArg), "no such child");
        crate::mem::deregister(key).unwrap();
        crate::mem::free_shared(rmem).unwrap();
    }
}
