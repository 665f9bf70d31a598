//! Barrier circuits: VBGs, gates, packets.
//!
//! **Gates.**  A VBG waits for its configured inputs — a *signal* from a VBG of the same
//! TNI (here: of the same allocation, in this process) and a *packet* from a VBG anywhere
//! — and then fires: it sends `op(signal, packet)` (or the one input it has) as its
//! signal and its packet.  A start/end VBG fires first with the caller's own value when
//! an operation starts, and completes the operation when its own inputs have arrived;
//! the result is `op(signal, packet)`.  This is the guide's gate model; for the 8-process
//! butterfly of the sample it gives exact recursive doubling, bit-identical on every
//! process (each pairwise combination is commutative, including BFPSUM's additions).
//!
//! **Packets** are written by the sender into the receiving VBG's mailbox in its owner's
//! shared memory (two slots, by round parity, so a fast partner's packet of the next
//! round waits beside the current one): six data words and a header (kind, op,
//! `num_data`, flags) written first, then the round number with a Release store.  The
//! receiver clears the slot when it takes the packet; a sender that finds its slot still
//! full keeps the packet and retries on its own next poll.  Gates are driven by the
//! owner's polls (a circuit completes only after all of its gates fired, so no gate is
//! left behind).  A header that differs from the start's marks the result
//! BARRIER_MISMATCH.  A source VBG whose owner has gone makes the poll fail with
//! BARRIER_OTHER instead of waiting forever.
//!
//! VBGs are claimed per node in the registry under (coordinates, TNI, BG) — BGs 0-15 are
//! start/end gates, 16-47 relays; a process takes the lowest free ones of its share
//! ([`crate::share`]) — with the owner's block and slot as payload.

use crate::status::{done, out, UResult};
use crate::topo::{self, VbgAddr};
use crate::types::*;
use crate::vcq::{key, lock, IdHash};
use once_cell::sync::Lazy;
use softnic_fabric::mem::{self, RingLoc, SharedMem};
use softnic_fabric::registry::{self, api, EndpointId};
use softnic_fabric::rma::{self, Peer, RegionView};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

const SLOT_BYTES: usize = 192;
const NSLOTS: usize = NUM_TNIS as usize * BGS_PER_TNI as usize;
const BLOCK_BYTES: usize = NSLOTS * SLOT_BYTES;
/// Polls between two checks that the circuit's remote sources still exist.
const LIVENESS_EVERY: u32 = 4096;

const KIND_BARRIER: u64 = 1;
const KIND_U64: u64 = 2;
const KIND_DOUBLE: u64 = 3;
const MISMATCH: u64 = 1 << 40;

fn slot_of(tni: u16, bg: u16) -> usize {
    tni as usize * BGS_PER_TNI as usize + bg as usize
}

/// What travels along a circuit: header (kind | op << 8 | num << 16 | mismatch bit)
/// and up to six words.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Val {
    hdr: u64,
    data: [u64; 6],
}

impl Val {
    fn kind(&self) -> u64 {
        self.hdr & 0xff
    }
    fn op(&self) -> i32 {
        ((self.hdr >> 8) & 0xff) as i32
    }
    fn num(&self) -> usize {
        ((self.hdr >> 16) & 0xff) as usize
    }
    fn same_shape(&self, o: &Val) -> bool {
        self.hdr & !MISMATCH == o.hdr & !MISMATCH
    }
}

/// `op(a, b)` element by element (MAXLOC on (value, location) pairs: the greater value,
/// the smaller location on ties).
fn combine(a: &Val, b: &Val) -> Val {
    let mut r = *a;
    if !a.same_shape(b) || b.hdr & MISMATCH != 0 {
        r.hdr |= MISMATCH;
        return r;
    }
    let n = a.num().min(6);
    match (a.kind(), a.op()) {
        (KIND_U64, UTOFU_REDUCE_OP_BAND) => (0..n).for_each(|i| r.data[i] = a.data[i] & b.data[i]),
        (KIND_U64, UTOFU_REDUCE_OP_BOR) => (0..n).for_each(|i| r.data[i] = a.data[i] | b.data[i]),
        (KIND_U64, UTOFU_REDUCE_OP_BXOR) => (0..n).for_each(|i| r.data[i] = a.data[i] ^ b.data[i]),
        (KIND_U64, UTOFU_REDUCE_OP_MAX) => (0..n).for_each(|i| r.data[i] = a.data[i].max(b.data[i])),
        (KIND_U64, UTOFU_REDUCE_OP_SUM) => (0..n).for_each(|i| r.data[i] = a.data[i].wrapping_add(b.data[i])),
        (KIND_U64, UTOFU_REDUCE_OP_MAXLOC) => {
            for p in (0..n).step_by(2) {
                let (av, al, bv, bl) = (a.data[p], a.data[p + 1], b.data[p], b.data[p + 1]);
                if bv > av || (bv == av && bl < al) {
                    r.data[p] = bv;
                    r.data[p + 1] = bl;
                }
            }
        }
        (KIND_DOUBLE, UTOFU_REDUCE_OP_BFPSUM) => (0..n).for_each(|i| r.data[i] = (f64::from_bits(a.data[i]) + f64::from_bits(b.data[i])).to_bits()),
        _ => {}
    }
    r
}

fn merge(a: Option<Val>, b: Option<Val>) -> Option<Val> {
    match (a, b) {
        (Some(a), Some(b)) => Some(combine(&a, &b)),
        (a, None) => a,
        (None, b) => b,
    }
}

// ---- this process's VBGs ----------------------------------------------------------------

#[derive(Default, Clone, Copy)]
struct Setting {
    src_lcl: Option<usize>,
    src_rmt: Option<u64>,
    dst_lcl: Option<usize>,
    dst_rmt: Option<u64>,
}

/// One gate (index within its group).
#[derive(Default)]
struct Gate {
    id: u64,
    claim: Option<EndpointId>,
    set: Setting,
    round: u64,
    signal: Option<Val>,
    packet: Option<Val>,
    fired: bool,
    /// A packet whose mailbox slot was still full: (destination, round, value).
    pending: Option<(u64, u64, Val)>,
}

/// One `utofu_alloc_vbg` result: gate 0 is the start/end gate.
struct Group {
    gates: Vec<Gate>,
    /// The running operation: (kind of the start call, own value), and its result once
    /// complete.
    op: Option<Val>,
    result: Option<Val>,
    polls: u32,
    failed: bool,
}

struct State {
    block: Option<SharedMem>,
    groups: Vec<Option<Group>>,
    /// Start-gate id -> group index.
    by_start: HashMap<u64, usize>,
}

static STATE: Lazy<Mutex<State>> = Lazy::new(|| Mutex::new(State { block: None, groups: Vec::new(), by_start: HashMap::new() }));

fn word(p: *const u8, off: usize) -> &'static AtomicU64 {
    // SAFETY: callers pass 8-aligned offsets inside a mapped barrier block.
    unsafe { &*(p.add(off) as *const AtomicU64) }
}

// ---- remote mailboxes -----------------------------------------------------------------

struct Mailbox {
    peer: Arc<Peer>,
    /// The owner's block mapped here, or None when the owner is reached through the
    /// network engine (its uTofu service then delivers the packet: [`serve_packet`]).
    view: Option<RegionView>,
    slot: usize,
}

static MAILBOXES: Lazy<Mutex<HashMap<u64, Arc<Mailbox>, IdHash>>> = Lazy::new(|| Mutex::new(HashMap::default()));

fn mailbox(id: u64) -> Option<Arc<Mailbox>> {
    if let Some(m) = lock(&MAILBOXES).get(&id) {
        let same = m.view.as_ref().map_or(true, |v| word(v.as_ptr(), m.slot * SLOT_BYTES).load(Ordering::Acquire) == id);
        if same && m.peer.seems_alive() {
            return Some(m.clone());
        }
    }
    lock(&MAILBOXES).remove(&id);
    let a = VbgAddr::decode(id)?;
    let node = topo::node_at(&a.coords)?;
    let (peer, payload) = Peer::lookup(node, api::UTOFU, &key(b"tofuBG", &a.coords, &[a.tni as u8, a.bg as u8])).ok()?;
    let slot = slot_of(a.tni, a.bg);
    let view = if peer.is_remote() {
        None
    } else {
        let mut w = [0u64; 3];
        for (i, x) in w.iter_mut().enumerate() {
            *x = u64::from_le_bytes(payload[i * 8..i * 8 + 8].try_into().ok()?);
        }
        let view = rma::map_region(&peer, &RingLoc::from_words(w)).ok()?;
        if view.len() < BLOCK_BYTES || word(view.as_ptr(), slot * SLOT_BYTES).load(Ordering::Acquire) != id {
            return None;
        }
        Some(view)
    };
    let m = Arc::new(Mailbox { peer, view, slot });
    lock(&MAILBOXES).insert(id, m.clone());
    Some(m)
}

/// Writes `v` of `round` into slot `slot` of the block at `p` unless the round's place
/// is still full (false then).
fn deliver(p: *const u8, slot: usize, round: u64, v: &Val) -> bool {
    let base = slot * SLOT_BYTES + 64 + (round as usize & 1) * 64;
    if word(p, base).load(Ordering::Acquire) != 0 {
        return false;
    }
    word(p, base + 8).store(v.hdr, Ordering::Relaxed);
    for i in 0..6 {
        word(p, base + 16 + 8 * i).store(v.data[i], Ordering::Relaxed);
    }
    word(p, base).store(round + 1, Ordering::Release);
    true
}

/// Tries to deliver `v` of `round` to VBG `to`: Ok(true) delivered, Ok(false) its slot
/// is still full (retry later), Err when the VBG does not exist.
fn send(to: u64, round: u64, v: &Val) -> Result<bool, ()> {
    let m = mailbox(to).ok_or(())?;
    if let Some(view) = &m.view {
        return Ok(deliver(view.as_ptr(), m.slot, round, v));
    }
    let mut req = Vec::with_capacity(80);
    for w in [crate::onesided::SVC_PACKET, to, round, v.hdr].iter().chain(v.data.iter()) {
        req.extend_from_slice(&w.to_le_bytes());
    }
    let mut reply = Vec::new();
    match m.peer.call(api::UTOFU, &req, &mut reply) {
        Ok(()) => Ok(reply.first().copied().unwrap_or(0) != 0),
        Err(_) => {
            lock(&MAILBOXES).remove(&to);
            Err(())
        }
    }
}

/// The uTofu service's side of [`send`] from another machine: the packet for one of
/// this node's VBGs.  Reply: one byte, 1 when delivered, 0 when its place is full;
/// `NotFound` when no such VBG exists here.
pub(crate) fn serve_packet(req: &[u8], reply: &mut Vec<u8>) -> softnic_fabric::Result<()> {
    use softnic_fabric::Error;
    let w = |k: usize| req.get(k * 8..k * 8 + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).ok_or(Error::InvalidArg);
    let (to, round) = (w(1)?, w(2)?);
    let mut v = Val { hdr: w(3)?, data: [0; 6] };
    for (i, d) in v.data.iter_mut().enumerate() {
        *d = w(4 + i)?;
    }
    let m = mailbox(to).ok_or(Error::NotFound)?;
    let view = m.view.as_ref().ok_or(Error::NotFound)?; // not on this node
    reply.push(deliver(view.as_ptr(), m.slot, round, &v) as u8);
    Ok(())
}

/// Takes the packet of `round` from our own VBG's mailbox.
fn receive(block: *const u8, tni: u16, bg: u16, round: u64) -> Option<Val> {
    let base = slot_of(tni, bg) * SLOT_BYTES + 64 + (round as usize & 1) * 64;
    if word(block, base).load(Ordering::Acquire) != round + 1 {
        return None;
    }
    let mut v = Val { hdr: word(block, base + 8).load(Ordering::Relaxed), data: [0; 6] };
    for i in 0..6 {
        v.data[i] = word(block, base + 16 + 8 * i).load(Ordering::Relaxed);
    }
    word(block, base).store(0, Ordering::Release);
    Some(v)
}

// ---- driving a group ------------------------------------------------------------------

/// Fires gate `g` with `out`: signal to its local destination, packet to its remote one.
fn fire(gr: &mut Group, g: usize, out: Val) {
    let set = gr.gates[g].set;
    let round = gr.gates[g].round;
    gr.gates[g].fired = true;
    softnic_fabric::sn_trace!("uTofu", "VBG {:#x} round {} fires {:?} -> signal {:?} packet {:?}", gr.gates[g].id, round, out.data[0], set.dst_lcl, set.dst_rmt);
    if let Some(d) = set.dst_lcl {
        gr.gates[d].signal = Some(out);
    }
    if let Some(to) = set.dst_rmt {
        match send(to, round, &out) {
            Ok(true) => {}
            Ok(false) => gr.gates[g].pending = Some((to, round, out)),
            Err(()) => gr.failed = true,
        }
    }
}

/// Advances every gate of the group as far as it can go.
fn progress(gr: &mut Group, block: *const u8) {
    let Some(own) = gr.op else { return };
    loop {
        let mut moved = false;
        for g in 0..gr.gates.len() {
            if let Some((to, round, v)) = gr.gates[g].pending {
                match send(to, round, &v) {
                    Ok(true) => {
                        gr.gates[g].pending = None;
                        moved = true;
                    }
                    Ok(false) => {}
                    Err(()) => {
                        gr.gates[g].pending = None;
                        gr.failed = true;
                    }
                }
            }
            let (set, round) = (gr.gates[g].set, gr.gates[g].round);
            if set.src_rmt.is_some() && gr.gates[g].packet.is_none() {
                let a = VbgAddr::decode(gr.gates[g].id).expect("our own ids decode");
                if let Some(v) = receive(block, a.tni, a.bg, round) {
                    gr.gates[g].packet = Some(v);
                    moved = true;
                }
            }
            let ready = (set.src_lcl.is_none() || gr.gates[g].signal.is_some()) && (set.src_rmt.is_none() || gr.gates[g].packet.is_some());
            if g == 0 {
                if gr.gates[0].fired && ready && gr.result.is_none() && gr.gates.iter().all(|x| x.pending.is_none()) {
                    let inputs = merge(gr.gates[0].signal, gr.gates[0].packet);
                    let mut res = inputs.unwrap_or(own);
                    if !res.same_shape(&own) {
                        res.hdr |= MISMATCH;
                    }
                    gr.result = Some(res);
                    moved = true;
                }
            } else if !gr.gates[g].fired && ready && (set.src_lcl.is_some() || set.src_rmt.is_some()) {
                let out = merge(gr.gates[g].signal, gr.gates[g].packet).expect("ready with an input");
                fire(gr, g, out);
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
}

/// The sources of the group's packets still exist (else the operation cannot end).
fn sources_alive(gr: &Group) -> bool {
    gr.gates.iter().filter(|g| g.packet.is_none()).filter_map(|g| g.set.src_rmt).all(|id| mailbox(id).is_some())
}

fn new_round(gr: &mut Group) {
    for g in gr.gates.iter_mut() {
        g.round += 1;
        g.signal = None;
        g.packet = None;
        g.fired = false;
    }
}

// ---- the API ----------------------------------------------------------------------------

fn block_loc(st: &mut State) -> UResult<(RingLoc, *const u8)> {
    if st.block.is_none() {
        st.block = Some(mem::alloc_shared(BLOCK_BYTES).map_err(|_| UTOFU_ERR_OUT_OF_MEMORY)?);
    }
    let b = st.block.as_ref().expect("set");
    Ok((b.ring_loc(0, BLOCK_BYTES).map_err(|_| UTOFU_ERR_FATAL)?, b.as_ptr()))
}

/// Claims the first free BG of `candidates` on this node (the registry holds the claims).
fn claim(tni: u16, mut candidates: impl Iterator<Item = u16>, payload: &[u8]) -> Option<(u16, EndpointId)> {
    let me = topo::my_coords();
    candidates.find_map(|bg| registry::publish(api::UTOFU, &key(b"tofuBG", &me, &[tni as u8, bg as u8]), payload).ok().map(|e| (bg, e)))
}

fn alloc(tni: u16, n: usize, flags: u64, ids: *mut u64) -> UResult<()> {
    if tni >= NUM_TNIS {
        return Err(UTOFU_ERR_INVALID_TNI_ID);
    }
    if flags & !UTOFU_VBG_FLAG_THREAD_SAFE != 0 {
        return Err(UTOFU_ERR_INVALID_FLAGS);
    }
    if ids.is_null() {
        return Err(UTOFU_ERR_INVALID_POINTER);
    }
    if n == 0 {
        return Err(UTOFU_ERR_INVALID_NUMBER);
    }
    if n > 1 + (BGS_PER_TNI - START_BGS) as usize {
        return Err(UTOFU_ERR_FULL);
    }
    // This process's BGs on the TNI (see share), lowest first, so a program can tell
    // which BGs a peer's allocations got.
    let mine = crate::share::get().bgs[tni as usize];
    if mine & 0xffff == 0 {
        softnic_fabric::sn_debug!("uTofu", "TNI {} has no start/end BG for this process (see UTOFU_BG_MASK_{} / utofu.h)", tni, tni);
        return Err(UTOFU_ERR_NOT_AVAILABLE);
    }
    let mut st = lock(&STATE);
    let (loc, blk) = block_loc(&mut st)?;
    let payload: Vec<u8> = loc.to_words().iter().flat_map(|x| x.to_le_bytes()).collect();
    let me = topo::my_coords();
    let mut gates: Vec<Gate> = Vec::with_capacity(n);
    let release = |gates: &[Gate]| {
        for g in gates {
            if let Some(c) = g.claim {
                let _ = registry::unpublish(c);
            }
        }
    };
    for k in 0..n {
        let kind = if k == 0 { mine & 0xffff } else { mine & !0xffff };
        let Some((bg, c)) = claim(tni, crate::share::bits(kind), &payload) else {
            release(&gates);
            return Err(UTOFU_ERR_FULL);
        };
        let id = VbgAddr { coords: me, tni, bg }.id();
        let s = slot_of(tni, bg) * SLOT_BYTES;
        for i in 1..SLOT_BYTES / 8 {
            word(blk, s + 8 * i).store(0, Ordering::Relaxed);
        }
        word(blk, s).store(id, Ordering::Release);
        gates.push(Gate { id, claim: Some(c), ..Default::default() });
    }
    for (k, g) in gates.iter().enumerate() {
        // SAFETY: the caller's array of at least `n` ids (checked non-NULL).
        unsafe { ids.add(k).write_unaligned(g.id) };
    }
    let start = gates[0].id;
    let gr = Group { gates, op: None, result: None, polls: 0, failed: false };
    let i = match st.groups.iter().position(|g| g.is_none()) {
        Some(i) => {
            st.groups[i] = Some(gr);
            i
        }
        None => {
            st.groups.push(Some(gr));
            st.groups.len() - 1
        }
    };
    st.by_start.insert(start, i);
    Ok(())
}

fn free(ids: *mut u64, n: usize) -> UResult<()> {
    if ids.is_null() {
        return Err(UTOFU_ERR_INVALID_POINTER);
    }
    if n == 0 {
        return Err(UTOFU_ERR_INVALID_NUMBER);
    }
    // SAFETY: the caller's array of `n` ids.
    let given: Vec<u64> = (0..n).map(|k| unsafe { ids.add(k).read_unaligned() }).collect();
    let mut st = lock(&STATE);
    let gi = *st.by_start.get(&given[0]).ok_or(UTOFU_ERR_INVALID_VBG_ID)?;
    let gr = st.groups[gi].as_ref().expect("indexed groups exist");
    if gr.gates.len() != n {
        return Err(UTOFU_ERR_INVALID_NUMBER);
    }
    if gr.gates.iter().zip(&given).any(|(g, &id)| g.id != id) {
        return Err(UTOFU_ERR_INVALID_VBG_ID);
    }
    let gr = st.groups[gi].take().expect("checked");
    st.by_start.remove(&given[0]);
    let blk = st.block.as_ref().map(|b| b.as_ptr()).expect("a group implies the block");
    for g in &gr.gates {
        let a = VbgAddr::decode(g.id).expect("ours");
        word(blk, slot_of(a.tni, a.bg) * SLOT_BYTES).store(0, Ordering::Release);
        if let Some(c) = g.claim {
            let _ = registry::unpublish(c);
        }
    }
    Ok(())
}

fn set(settings: *const utofu_vbg_setting, n: usize) -> UResult<()> {
    if settings.is_null() {
        return Err(UTOFU_ERR_INVALID_POINTER);
    }
    if n == 0 {
        return Err(UTOFU_ERR_INVALID_NUMBER);
    }
    // SAFETY: the caller's array of `n` settings.
    let s: Vec<utofu_vbg_setting> = (0..n).map(|k| unsafe { settings.add(k).read_unaligned() }).collect();
    let mut st = lock(&STATE);
    let gi = *st.by_start.get(&s[0].vbg_id).ok_or(UTOFU_ERR_INVALID_VBG_ID)?;
    let gr = st.groups[gi].as_mut().expect("indexed groups exist");
    if n > gr.gates.len() {
        return Err(UTOFU_ERR_INVALID_NUMBER);
    }
    if gr.op.is_some() {
        return Err(UTOFU_ERR_BUSY);
    }
    let local = |id: u64| -> UResult<Option<usize>> {
        if id == UTOFU_VBG_ID_NULL {
            return Ok(None);
        }
        gr.gates.iter().position(|g| g.id == id).map(Some).ok_or(UTOFU_ERR_INVALID_DATA)
    };
    let remote = |id: u64| -> UResult<Option<u64>> {
        if id == UTOFU_VBG_ID_NULL {
            return Ok(None);
        }
        VbgAddr::decode(id).map(|_| Some(id)).ok_or(UTOFU_ERR_INVALID_VBG_ID)
    };
    let mut parsed = Vec::with_capacity(n);
    for x in &s {
        let g = gr.gates.iter().position(|g| g.id == x.vbg_id).ok_or(UTOFU_ERR_INVALID_VBG_ID)?;
        let p = x.dst_path_coords;
        if p[0] != UTOFU_PATH_COORD_NULL && !topo::path_valid(&p) {
            return Err(UTOFU_ERR_INVALID_PATH);
        }
        parsed.push((g, Setting { src_lcl: local(x.src_lcl_vbg_id)?, src_rmt: remote(x.src_rmt_vbg_id)?, dst_lcl: local(x.dst_lcl_vbg_id)?, dst_rmt: remote(x.dst_rmt_vbg_id)? }));
    }
    for (g, setting) in parsed {
        gr.gates[g].set = setting;
    }
    Ok(())
}

fn start(vbg: u64, v: Val, flags: u64) -> UResult<()> {
    if flags != 0 {
        return Err(UTOFU_ERR_INVALID_FLAGS);
    }
    let mut st = lock(&STATE);
    let gi = *st.by_start.get(&vbg).ok_or(UTOFU_ERR_INVALID_VBG_ID)?;
    let blk = st.block.as_ref().map(|b| b.as_ptr()).expect("a group implies the block");
    let gr = st.groups[gi].as_mut().expect("indexed");
    if gr.op.is_some() {
        return Err(UTOFU_ERR_BUSY);
    }
    gr.op = Some(v);
    gr.result = None;
    gr.polls = 0;
    gr.failed = false;
    fire(gr, 0, v);
    progress(gr, blk);
    Ok(())
}

/// Polls the operation on `vbg`: `kind` is what the poll function expects.
fn poll(vbg: u64, flags: u64, kind: u64) -> UResult<Val> {
    if flags != 0 {
        return Err(UTOFU_ERR_INVALID_FLAGS);
    }
    let mut st = lock(&STATE);
    let gi = *st.by_start.get(&vbg).ok_or(UTOFU_ERR_INVALID_VBG_ID)?;
    let blk = st.block.as_ref().map(|b| b.as_ptr()).expect("a group implies the block");
    let gr = st.groups[gi].as_mut().expect("indexed");
    let Some(own) = gr.op else { return Err(UTOFU_ERR_BUSY) };
    // An operation completes through the poll function of its start function (a
    // reduction with REDUCE_OP_BARRIER too: through its reduce poll, data untouched).
    if own.kind() != kind {
        return Err(UTOFU_ERR_INVALID_OP);
    }
    progress(gr, blk);
    if gr.result.is_none() {
        gr.polls += 1;
        if gr.failed || (gr.polls % LIVENESS_EVERY == 0 && !sources_alive(gr)) {
            gr.op = None;
            new_round(gr);
            return Err(UTOFU_ERR_BARRIER_OTHER);
        }
        // Every participant polls; with more of them than cores, spinning would keep
        // the ones we wait for off the CPU.
        drop(st);
        std::thread::yield_now();
        return Err(UTOFU_ERR_NOT_COMPLETED);
    }
    let res = gr.result.take().expect("checked");
    gr.op = None;
    new_round(gr);
    if res.hdr & MISMATCH != 0 {
        return Err(UTOFU_ERR_BARRIER_MISMATCH);
    }
    Ok(res)
}

fn reduce_val(kind: u64, op: i32, words: &[u64]) -> Val {
    let mut v = Val { hdr: kind | (op as u64 & 0xff) << 8 | (words.len() as u64) << 16, data: [0; 6] };
    v.data[..words.len()].copy_from_slice(words);
    v
}

#[no_mangle]
pub unsafe extern "C" fn utofu_alloc_vbg(tni_id: u16, num_vbgs: usize, flags: u64, vbg_ids: *mut u64) -> i32 {
    done("utofu_alloc_vbg", alloc(tni_id, num_vbgs, flags, vbg_ids))
}

#[no_mangle]
pub unsafe extern "C" fn utofu_free_vbg(vbg_ids: *mut u64, num_vbgs: usize) -> i32 {
    done("utofu_free_vbg", free(vbg_ids, num_vbgs))
}

#[no_mangle]
pub unsafe extern "C" fn utofu_set_vbg(settings: *mut utofu_vbg_setting, num: usize) -> i32 {
    done("utofu_set_vbg", set(settings, num))
}

#[no_mangle]
pub extern "C" fn utofu_barrier(vbg_id: u64, flags: u64) -> i32 {
    done("utofu_barrier", start(vbg_id, reduce_val(KIND_BARRIER, UTOFU_REDUCE_OP_BARRIER, &[]), flags))
}

#[no_mangle]
pub unsafe extern "C" fn utofu_reduce_uint64(vbg_id: u64, op: i32, data: *mut u64, num: usize, flags: u64) -> i32 {
    let r = (|| {
        if !(UTOFU_REDUCE_OP_BARRIER..=UTOFU_REDUCE_OP_SUM).contains(&op) {
            return Err(UTOFU_ERR_INVALID_OP);
        }
        if num == 0 || num > MAX_U64_REDUCTION || (op == UTOFU_REDUCE_OP_MAXLOC && num % 2 != 0) {
            return Err(UTOFU_ERR_INVALID_NUMBER);
        }
        if data.is_null() {
            return Err(UTOFU_ERR_INVALID_POINTER);
        }
        // SAFETY: the caller's `num` elements.
        let w: Vec<u64> = (0..num).map(|i| unsafe { data.add(i).read_unaligned() }).collect();
        start(vbg_id, reduce_val(KIND_U64, op, &w), flags)
    })();
    done("utofu_reduce_uint64", r)
}

#[no_mangle]
pub unsafe extern "C" fn utofu_reduce_double(vbg_id: u64, op: i32, data: *mut f64, num: usize, flags: u64) -> i32 {
    let r = (|| {
        if op != UTOFU_REDUCE_OP_BFPSUM && op != UTOFU_REDUCE_OP_BARRIER {
            return Err(UTOFU_ERR_INVALID_OP);
        }
        if num == 0 || num > MAX_DOUBLE_REDUCTION {
            return Err(UTOFU_ERR_INVALID_NUMBER);
        }
        if data.is_null() {
            return Err(UTOFU_ERR_INVALID_POINTER);
        }
        // SAFETY: the caller's `num` elements.
        let w: Vec<u64> = (0..num).map(|i| unsafe { data.add(i).read_unaligned() }.to_bits()).collect();
        start(vbg_id, reduce_val(KIND_DOUBLE, op, &w), flags)
    })();
    done("utofu_reduce_double", r)
}

#[no_mangle]
pub extern "C" fn utofu_poll_barrier(vbg_id: u64, flags: u64) -> i32 {
    done("utofu_poll_barrier", poll(vbg_id, flags, KIND_BARRIER).map(|_| ()))
}

fn write_result(res: &Val, data: *mut u64) -> UResult<()> {
    if res.op() == UTOFU_REDUCE_OP_BARRIER {
        return Ok(()); // a plain barrier leaves data[] alone
    }
    for i in 0..res.num().min(6) {
        out(data.wrapping_add(i), res.data[i])?;
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn utofu_poll_reduce_uint64(vbg_id: u64, flags: u64, data: *mut u64) -> i32 {
    let r = if data.is_null() { Err(UTOFU_ERR_INVALID_POINTER) } else { poll(vbg_id, flags, KIND_U64).and_then(|v| write_result(&v, data)) };
    done("utofu_poll_reduce_uint64", r)
}

#[no_mangle]
pub unsafe extern "C" fn utofu_poll_reduce_double(vbg_id: u64, flags: u64, data: *mut f64) -> i32 {
    let r = if data.is_null() { Err(UTOFU_ERR_INVALID_POINTER) } else { poll(vbg_id, flags, KIND_DOUBLE).and_then(|v| write_result(&v, data as *mut u64)) };
    done("utofu_poll_reduce_double", r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maxloc_keeps_the_smaller_location_on_ties() {
        let a = reduce_val(KIND_U64, UTOFU_REDUCE_OP_MAXLOC, &[5, 7, 1, 2]);
        let b = reduce_val(KIND_U64, UTOFU_REDUCE_OP_MAXLOC, &[5, 3, 4, 9]);
        let r = combine(&a, &b);
        assert_eq!(&r.data[..4], &[5, 3, 4, 9]);
        assert_eq!(combine(&b, &a).data, r.data);
    }

    #[test]
    fn differing_shapes_mismatch() {
        let a = reduce_val(KIND_U64, UTOFU_REDUCE_OP_SUM, &[1]);
        let b = reduce_val(KIND_U64, UTOFU_REDUCE_OP_MAX, &[1]);
        assert!(combine(&a, &b).hdr & MISMATCH != 0);
        let c = reduce_val(KIND_U64, UTOFU_REDUCE_OP_SUM, &[1, 2]);
        assert!(combine(&a, &c).hdr & MISMATCH != 0);
        assert_eq!(combine(&a, &a).data[0], 2);
    }
}
