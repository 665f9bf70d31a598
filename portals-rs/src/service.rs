//! The target side of every operation, written once as the fabric's Portals service
//! ([`serve`], registered by PtlInit): access control, the match-list walk, MD
//! selection, offsets, truncation, thresholds and auto-unlink, the deposit (or the read
//! for a get), the target's events, and the answer the initiator needs (accepted or
//! not, mlength, offset, ack allowed, get data or where to move large data).
//!
//! It runs where `rma::Peer::call` puts it: in the initiator's process when the target
//! is on this machine (on the target's NI segment, mapped here, and the target's
//! registered memory, through the one-sided engine), in the target's network progress
//! thread otherwise (on its own segment and memory).  It takes the target NI's lock for
//! the whole match-and-deposit, never waits on another remote operation, and is short.
//! The initiator's one-critical-section path ([`run_local`], see [`crate::ops`]) runs
//! the same [`request`] under the lock it took itself, with the request as a value.
//!
//! **Data.**  When the handler runs in the initiator's own process (a `proc_nonce`
//! match), the request carries a pointer to the initiator's pieces of memory and data
//! moves once, between the two buffers, whatever its size.  Otherwise data up to
//! [`INLINE_MAX`] travels in the request (put) or the reply (get); a larger transfer is
//! matched (START event, threshold, offset; the MD marked as having a transfer in
//! flight), the reply names the target pieces, the initiator moves the data with
//! `rma::put`/`rma::get`, then sends a COMPLETE (END event, unlink check).

use crate::eq;
use crate::handle;
use crate::md;
use crate::objects::{Keep, Lib, NiView};
use crate::runtime::pd;
use crate::seg::{Guard, Seg, LIVE, MDF_DOOMED, MDF_UNLINK_NOFIT, MDF_UNLINK_OP, NONE};
use crate::types::*;
use softnic_fabric::mem::{MemKey, RingLoc};
use softnic_fabric::rma::{self, Live, Peer, PinnedRef};
use softnic_fabric::{Error, Result};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

pub const OP_PUT: u32 = 1;
pub const OP_GET: u32 = 2;
pub const OP_GETPUT: u32 = 3;
pub const OP_COMPLETE: u32 = 4;

/// Request flags.
pub const F_ACK: u32 = 1 << 0;
/// `Req::local` points at the initiator's [`LocalSpans`] (valid in its process only).
pub const F_LOCAL: u32 = 1 << 1;
/// Put data follows the request.
pub const F_INLINE: u32 = 1 << 2;
/// COMPLETE: the initiator could not move the data.
pub const F_FAILED: u32 = 1 << 3;
/// The initiator runs SOFTNIC_CHECK: a request run in its own process notes where its
/// data moves in the target's memory ([`take_landed`]).  (Set once per operation where
/// the initiator asks the checker anyway: cheaper on the path than asking again.)
pub const F_CHECK: u32 = 1 << 4;

/// Reply status.
pub const ST_ACCEPTED: u32 = 1;
pub const ST_DROPPED: u32 = 2;
/// No such NI here (never initialised, ended, or another instance).
pub const ST_NO_TARGET: u32 = 3;

/// Reply flags.
pub const R_ACK: u32 = 1 << 0;
/// The reply names the target pieces (`nseg` triples follow): move, then COMPLETE.
pub const R_TWO_PHASE: u32 = 1 << 1;
/// Get data follows the reply.
pub const R_DATA: u32 = 1 << 2;
/// The transfer failed at the target (a piece could not be read or written).
pub const R_FAILED: u32 = 1 << 3;

const WIRE: u32 = 0x5033_0001; // "P3", version 1

#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct Req {
    pub wire: u32,
    pub op: u32,
    pub flags: u32,
    pub tgt_jid: u32,
    pub tgt_nid: u32,
    pub tgt_pid: u32,
    pub init_nid: u32,
    pub init_pid: u32,
    pub init_uid: u32,
    pub init_jid: u32,
    pub pt_index: u32,
    pub ac_index: u32,
    pub ni_loc: [u64; 3],
    pub ni_nonce: u64,
    pub proc_nonce: u64,
    pub local: u64,
    pub match_bits: u64,
    pub roffset: u64,
    pub hdr_data: u64,
    pub rlength: u64,
    /// COMPLETE: the MD (index | generation << 32), link and offset of phase one.
    pub token: u64,
    pub offset: u64,
    pub mlength: u64,
    pub link: u32,
    pub _pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct Rep {
    pub status: u32,
    pub flags: u32,
    pub mlength: u64,
    pub offset: u64,
    pub token: u64,
    pub link: u32,
    pub nseg: u32,
}

pub const REQ_LEN: usize = std::mem::size_of::<Req>();
pub const REP_LEN: usize = std::mem::size_of::<Rep>();
/// Most data carried in a request or reply.
pub const INLINE_MAX: usize = rma::MAX_CALL - 256;

/// A list of pieces of memory (registration, unused here; address; length) in the
/// initiator's process.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Span {
    pub ptr: *const (u64, u64, u64),
    pub n: usize,
    /// Where in the pieces the transfer starts (a region's local offset).
    pub off: u64,
}

impl Span {
    /// The `len` bytes from the start of the span when they lie in its first piece.
    #[inline]
    fn one(&self, len: u64) -> Option<&[u8]> {
        if self.n == 0 {
            return None;
        }
        // SAFETY: the span lists the initiator's MD pieces (see `serve`); n > 0.
        let &(_, addr, plen) = unsafe { &*self.ptr };
        // SAFETY: inside the initiator's first MD piece, mapped while the operation runs.
        (self.off.checked_add(len).is_some_and(|e| e <= plen)).then(|| unsafe { std::slice::from_raw_parts((addr + self.off) as *const u8, len as usize) })
    }
}

/// What `Req::local` points at: the source of a put, the destination of a get.
#[repr(C)]
pub struct LocalSpans {
    pub src: Span,
    pub dst: Span,
}

/// Plain-data views of the wire structures.
pub fn bytes_of<T: Copy>(v: &T) -> &[u8] {
    // SAFETY: T is a repr(C) struct of integers (Req, Rep): all its bytes are initialised
    // (explicit padding fields, Default-constructed).
    unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()) }
}

pub fn read_pod<T: Copy + Default>(b: &[u8]) -> Option<T> {
    if b.len() < std::mem::size_of::<T>() {
        return None;
    }
    // SAFETY: enough bytes; T is plain data (any bit pattern valid).
    Some(unsafe { (b.as_ptr() as *const T).read_unaligned() })
}

/// This process's nonce: a request carrying it was built here, so its local pointer
/// may be followed.
pub fn proc_nonce() -> u64 {
    static N: OnceLock<u64> = OnceLock::new();
    *N.get_or_init(crate::runtime::random_u64)
}

type ViewKey = (i32, u32, u32, [u64; 3]);

static VIEWS: OnceLock<Mutex<HashMap<ViewKey, Arc<NiView>>>> = OnceLock::new();

thread_local! {
    static LAST_VIEW: RefCell<Option<(ViewKey, Arc<NiView>)>> = const { RefCell::new(None) };
}

/// The segment of the NI at `loc` of `target`; None when there is none (any more).
pub(crate) fn view(target: &Arc<Peer>, loc: RingLoc) -> Option<Arc<NiView>> {
    let id = target.proc_id();
    let key = (target.pid(), id.slot, id.gen, loc.to_words());
    if let Some(v) = LAST_VIEW.with(|l| l.borrow().as_ref().filter(|(k, _)| *k == key).map(|(_, v)| v.clone())) {
        return Some(v);
    }
    let views = VIEWS.get_or_init(|| Mutex::new(HashMap::new()));
    let found = views.lock().unwrap_or_else(|e| e.into_inner()).get(&key).cloned();
    let v = match found {
        Some(v) => v,
        None => {
            let me = softnic_fabric::node::get().ok()?.proc_id();
            let v = if !target.is_remote() && id == me {
                let n = Lib::current().ok()?;
                if n.loc != loc {
                    return None;
                }
                // SAFETY: our own segment, mapped for the life of `n`, which the view keeps.
                let seg = unsafe { Seg::attach(n.seg.base(), n.seg.lay.total)? };
                Arc::new(NiView { seg, _keep: Keep::Mine(n) })
            } else {
                let map = rma::map_region(target, &loc).ok()?;
                // SAFETY: the mapping lives as long as the view, which owns it.
                let seg = unsafe { Seg::attach(map.as_ptr(), map.len())? };
                Arc::new(NiView { seg, _keep: Keep::Mapped(map) })
            };
            views.lock().unwrap_or_else(|e| e.into_inner()).insert(key, v.clone());
            v
        }
    };
    LAST_VIEW.with(|l| *l.borrow_mut() = Some((key, v.clone())));
    Some(v)
}

/// Forgets a view whose NI has ended.
fn forget_view(target: &Arc<Peer>, loc: RingLoc) {
    let id = target.proc_id();
    let key = (target.pid(), id.slot, id.gen, loc.to_words());
    LAST_VIEW.with(|l| *l.borrow_mut() = None);
    if let Some(v) = VIEWS.get() {
        v.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
    }
}

/// The handler registered as service `registry::api::PORTALS`.
pub fn serve(target: &Arc<Peer>, req_bytes: &[u8], reply: &mut Vec<u8>) -> Result<()> {
    let req: Req = read_pod(req_bytes).ok_or(Error::InvalidArg)?;
    if req.wire != WIRE {
        return Err(Error::Version);
    }
    let data = &req_bytes[REQ_LEN..];
    let loc = RingLoc::from_words(req.ni_loc);
    let start = reply.len();
    reply.extend_from_slice(bytes_of(&Rep { status: ST_NO_TARGET, ..Rep::default() }));
    let Some(v) = view(target, loc) else { return Ok(()) };
    let seg = &v.seg;
    let h = seg.hdr();
    if !seg.alive() || h.nonce != req.ni_nonce || (h.jid, h.nid, h.pid) != (req.tgt_jid, req.tgt_nid, req.tgt_pid) {
        forget_view(target, loc);
        return Ok(());
    }
    // Local pointers are followed only in the process that made them.
    let local = if req.flags & F_LOCAL != 0 && req.proc_nonce == proc_nonce() && req.local != 0 {
        // SAFETY: built by this process's initiator, which is waiting in Peer::call on
        // this very thread for this handler to return: the spans are alive.
        Some(unsafe { &*(req.local as *const LocalSpans) })
    } else {
        None
    };
    let mut out = Out { rep: Rep { status: ST_DROPPED, ..Rep::default() }, extra: Vec::new() };
    {
        let g = seg.lock();
        if !seg.alive() {
            drop(g);
            forget_view(target, loc);
            return Ok(());
        }
        match req.op & 0xff {
            // Peer::call checked the target's liveness just before.
            OP_PUT | OP_GET | OP_GETPUT => request(target, target.live_probed()?, seg, &g, &req, data, local, &mut out),
            OP_COMPLETE => complete(seg, &g, &req, &mut out),
            _ => return Err(Error::InvalidArg),
        }
    }
    reply.truncate(start);
    reply.extend_from_slice(bytes_of(&out.rep));
    reply.extend_from_slice(&out.extra);
    Ok(())
}

/// The handler's work for a request built in this process for a target NI whose
/// segment is mapped here (`seg`, locked by `g`): what [`serve`] does after decoding,
/// without the bytes.  The data moves between `spans` (the initiator's memory) and the
/// target's memory.  None when `seg` is no longer the NI the request names.
#[inline(always)]
pub(crate) fn run_local(peer: &Arc<Peer>, target: Live<'_>, seg: &Seg, g: &Guard<'_>, req: &Req, spans: &LocalSpans) -> Option<Rep> {
    let h = seg.hdr();
    if !seg.alive() || h.nonce != req.ni_nonce || (h.jid, h.nid, h.pid) != (req.tgt_jid, req.tgt_nid, req.tgt_pid) {
        return None;
    }
    let mut out = Out { rep: Rep { status: ST_DROPPED, ..Rep::default() }, extra: Vec::new() };
    request(peer, target, seg, g, req, &[], Some(spans), &mut out);
    Some(out.rep)
}

/// What the handler answers: the reply header, then get data or the pieces of a
/// two-phase transfer.
struct Out {
    rep: Rep,
    extra: Vec<u8>,
}

/// Forgets the views of this process's own NI (PtlNIFini), so its memory can go.
pub fn forget_own_views() {
    LAST_VIEW.with(|l| *l.borrow_mut() = None);
    if let Some(v) = VIEWS.get() {
        v.lock().unwrap_or_else(|e| e.into_inner()).retain(|_, v| !matches!(v._keep, Keep::Mine(_)));
    }
}

/// Counts and reports a dropped request (lock held).
fn drop_req(seg: &Seg, g: &Guard<'_>, req: &Req, why: &str) {
    let st = &mut seg.state(g).stats;
    st.drop_count += 1;
    st.drop_length = st.drop_length.wrapping_add(req.rlength);
    if seg.hdr().debug.load(std::sync::atomic::Ordering::Relaxed) & PTL_DBG_DROP != 0 {
        eprintln!(
            "portals[{}]: nid {} pid {} dropped a request from nid {} pid {} (portal {}, cookie {}, bits {:#x}, {} bytes): {}",
            std::process::id(),
            seg.hdr().nid,
            seg.hdr().pid,
            req.init_nid,
            req.init_pid,
            req.pt_index,
            req.ac_index,
            req.match_bits,
            req.rlength,
            why
        );
    }
}

fn wild_eq(rule: u32, v: u32) -> bool {
    rule == PTL_ANY || rule == v
}

/// Access control (doc 4.2): the cookie names a valid entry whose process, user, job
/// and portal admit the request.
#[inline(always)]
fn admitted(seg: &Seg, g: &Guard<'_>, req: &Req) -> std::result::Result<(), &'static str> {
    if seg.pt(g, req.pt_index).is_none() {
        return Err("invalid portal index");
    }
    let a = seg.ac(g, req.ac_index).ok_or("invalid access control index")?;
    if a.valid == 0 {
        return Err("access control entry not set");
    }
    if !wild_eq(a.nid, req.init_nid) || !wild_eq(a.pid, req.init_pid) {
        return Err("access control: process not admitted");
    }
    if !wild_eq(a.uid, req.init_uid) || !wild_eq(a.jid, req.init_jid) {
        return Err("access control: user or job not admitted");
    }
    if !wild_eq(a.pt, req.pt_index) {
        return Err("access control: portal not admitted");
    }
    Ok(())
}

/// A match: the MD row, where in it, how much.
struct Matched {
    md: u32,
    offset: u64,
    mlength: u64,
}

/// The match-list walk (digest 5.1): the first ME whose criteria match and whose MD is
/// active, enables the operation and has room (or truncates).  A matching MD without
/// room is unlinked when it was attached with unlink_nofit, and the walk goes on.
#[inline(always)]
fn walk(seg: &Seg, g: &Guard<'_>, req: &Req) -> Option<Matched> {
    let want = match req.op {
        OP_PUT => PTL_MD_OP_PUT,
        OP_GET => PTL_MD_OP_GET,
        _ => PTL_MD_OP_PUT | PTL_MD_OP_GET,
    };
    let mut i = seg.pt(g, req.pt_index)?.head;
    let mut steps = 0u32;
    while i != NONE && steps < seg.lay.lim.mes {
        steps += 1;
        let Some(e) = seg.me(g, i) else { break };
        let next = e.next;
        let id_ok = wild_eq(e.nid, req.init_nid) && wild_eq(e.pid, req.init_pid);
        let bits_ok = (req.match_bits ^ e.match_bits) & !e.ignore_bits == 0;
        if e.state == LIVE && id_ok && bits_ok && e.md != NONE {
            let mi = e.md;
            if let Some(m) = seg.md(g, mi).filter(|m| m.state == LIVE && m.flags & MDF_DOOMED == 0) {
                let opts = m.view.options;
                if md::active(m) && opts & want == want {
                    let offset = if opts & PTL_MD_MANAGE_REMOTE != 0 { req.roffset } else { m.local_offset };
                    let mut room = m.total.saturating_sub(offset);
                    if opts & PTL_MD_MAX_SIZE != 0 {
                        room = room.min(m.view.max_size);
                    }
                    if req.rlength <= room {
                        return Some(Matched { md: mi, offset, mlength: req.rlength });
                    }
                    if opts & PTL_MD_TRUNCATE != 0 {
                        return Some(Matched { md: mi, offset, mlength: room });
                    }
                    if m.flags & MDF_UNLINK_NOFIT != 0 {
                        let link = next_link(seg, g);
                        md::unlink_md_with(seg, g, mi, Some(link));
                    }
                }
            }
        }
        i = next;
    }
    None
}

#[inline]
fn next_link(seg: &Seg, g: &Guard<'_>) -> u32 {
    let s = seg.state(g);
    let l = s.next_link;
    s.next_link = l.wrapping_add(1);
    l
}

/// A target event about MD row `mi` (lock held), logged unless `disable` is set in its
/// options.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn target_event(seg: &Seg, g: &Guard<'_>, mi: u32, kind: u32, disable: u32, req: &Req, mlength: u64, offset: u64, link: u32, fail: bool) {
    let Some(m) = seg.md(g, mi) else { return };
    if m.view.options & disable != 0 {
        return;
    }
    if m.view.eq_handle == PTL_EQ_NONE {
        return;
    }
    let ev = Packed {
        initiator: ptl_process_id_t { nid: req.init_nid, pid: req.init_pid },
        uid: req.init_uid,
        jid: req.init_jid,
        pt_index: req.pt_index,
        match_bits: req.match_bits,
        rlength: req.rlength,
        mlength,
        offset,
        hdr_data: if kind == PTL_EVENT_GET_START || kind == PTL_EVENT_GET_END { 0 } else { req.hdr_data },
        link,
        fail: fail as u8 * PTL_NI_FAIL as u8,
        ..Packed::about(kind, seg.handle(handle::MD, m.gen, mi), &m.view)
    };
    // Built here, not by a closure the deposit calls (see `ops::own_event`).
    eq::push(seg, g, m.view.eq_handle, move || ev);
}

fn kinds(op: u32) -> (u32, u32) {
    match op {
        OP_PUT => (PTL_EVENT_PUT_START, PTL_EVENT_PUT_END),
        OP_GET => (PTL_EVENT_GET_START, PTL_EVENT_GET_END),
        _ => (PTL_EVENT_GETPUT_START, PTL_EVENT_GETPUT_END),
    }
}

/// A put, get or getput request (lock held).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn request(peer: &Arc<Peer>, target: Live<'_>, seg: &Seg, g: &Guard<'_>, req: &Req, data: &[u8], local: Option<&LocalSpans>, out: &mut Out) {
    if let Err(why) = admitted(seg, g, req) {
        return drop_req(seg, g, req, why);
    }
    if req.op == OP_GETPUT && req.rlength > seg.lay.lim.getput as u64 {
        return drop_req(seg, g, req, "getput longer than max_getput_md");
    }
    let Some(Matched { md: mi, offset, mlength }) = walk(seg, g, req) else {
        return drop_req(seg, g, req, "no matching memory descriptor");
    };
    // Accept: the operation takes a threshold unit and (local offsets) its room.
    let link = next_link(seg, g);
    let m = seg.md(g, mi).expect("matched");
    if m.view.threshold > 0 {
        m.view.threshold -= 1;
    }
    if m.view.options & PTL_MD_MANAGE_REMOTE == 0 {
        m.local_offset = m.local_offset.saturating_add(mlength);
    }
    let ack = req.op == OP_PUT && req.flags & F_ACK != 0 && m.view.options & PTL_MD_ACK_DISABLE == 0;
    // A contiguous MD's one piece, read from its row here: the local paths below use it
    // as it is, without building the MD's `Pieces` (a copy through the stack, re-read
    // wider: a store-forwarding stall per operation).
    let gen = m.gen;
    let one = (m.niov == 0).then_some((m.key, m.view.start, m.view.length));
    // Does the end read the row again (an END event to log, an unlink to check)?  Decided
    // now: nothing changes the row meanwhile (our lock), and a transfer of a few KiB
    // pushes its line out of the first-level cache (a 16 KiB put read it back after its
    // copy).  A matched MD is never doomed (the walk skips those).
    let row_at_end = m.view.options & PTL_MD_EVENT_END_DISABLE == 0 || m.flags & MDF_UNLINK_OP != 0;
    let pieces = || md::pieces(seg, g, mi);
    let (start_kind, end_kind) = kinds(req.op);
    if m.view.options & PTL_MD_EVENT_START_DISABLE == 0 {
        target_event(seg, g, mi, start_kind, PTL_MD_EVENT_START_DISABLE, req, mlength, offset, link, false);
    }
    if req.flags & F_CHECK != 0 && local.is_some() {
        note_landed(&pieces(), offset, mlength);
    }
    out.rep = Rep { status: ST_ACCEPTED, flags: if ack { R_ACK } else { 0 }, mlength, offset, link, ..Rep::default() };
    let inline_ok = local.is_some()
        || match req.op {
            OP_PUT => req.flags & F_INLINE != 0,
            OP_GET => mlength as usize <= INLINE_MAX,
            _ => true,
        };
    if !inline_ok {
        // Two phases: the initiator moves the data, then completes.
        let m = seg.md(g, mi).expect("matched");
        m.pending += 1;
        m.pending_since = md::now_ns();
        out.rep.flags |= R_TWO_PHASE;
        out.rep.token = mi as u64 | (m.gen as u64) << 32;
        let mut n = 0u32;
        each_piece(&pieces(), offset, mlength, |key, addr, _at, len| {
            for w in [key, addr, len] {
                out.extra.extend_from_slice(&w.to_le_bytes());
            }
            n += 1;
        });
        out.rep.nseg = n;
        return;
    }
    let ok = match (req.op, local) {
        (OP_PUT, Some(l)) => {
            let pinned = match one {
                // A contiguous MD, written through its pin (the common small put).
                Some(piece) if offset.checked_add(mlength).is_some_and(|e| e <= piece.2) => seg.with_pin(g, peer, target, mi, gen, piece, offset, mlength, |p, at| match l.src.one(mlength) {
                    // From one piece of ours (a contiguous MD): one copy.
                    Some(s) => put_pinned(&p, at, s),
                    None => {
                        let mut ok = true;
                        local_parts(&l.src, 0, mlength, |d, s| ok &= p.put(at + d as usize, s).is_ok());
                        ok
                    }
                }),
                _ => None,
            };
            // Anything but a pinned copy that worked: the general copy, which reports.
            pinned == Some(true) || copy_local_to_pieces(target, &l.src, &pieces(), offset, mlength).is_ok()
        }
        (OP_PUT, None) => data.len() as u64 >= mlength && write_pieces(target, &pieces(), offset, &data[..mlength as usize]).is_ok(),
        (OP_GET, Some(l)) => {
            let pinned = match one {
                // A contiguous MD read through the pin its puts use (the common small get).
                Some(piece) if offset.checked_add(mlength).is_some_and(|e| e <= piece.2) => seg.with_pin(g, peer, target, mi, gen, piece, offset, mlength, |p, at| {
                    let mut ok = true;
                    local_parts(&l.dst, 0, mlength, |d, s| ok &= p.get(at + d as usize, s).is_ok());
                    ok
                }),
                _ => None,
            };
            pinned == Some(true) || copy_pieces_to_local(target, &pieces(), offset, mlength, &l.dst).is_ok()
        }
        // A swap of this process's own (its get MD's memory receives the old bytes).
        (OP_GETPUT, Some(l)) => swap_local(seg, g, peer, target, (mi, gen, one), offset, mlength, l),
        (OP_GET, None) => {
            out.rep.flags |= R_DATA;
            out.extra = vec![0u8; mlength as usize];
            read_pieces(target, &pieces(), offset, &mut out.extra).is_ok()
        }
        _ => {
            // GetPut: the old bytes out (into the reply), then the new ones in.
            let pieces = pieces();
            let mut old = vec![0u8; mlength as usize];
            let ok = read_pieces(target, &pieces, offset, &mut old).is_ok() && data.len() as u64 >= mlength && write_pieces(target, &pieces, offset, &data[..mlength as usize]).is_ok();
            out.rep.flags |= R_DATA;
            out.extra = old;
            ok
        }
    };
    if !ok {
        out.rep.flags |= R_FAILED;
    }
    if row_at_end {
        finish(seg, g, mi, end_kind, req, mlength, offset, link, !ok);
    } else {
        count_received(seg, g, mlength);
    }
}

/// The target side of a swap run in the initiator's process (`l`: its put MD, the new
/// bytes; its get MD, where the old ones go, big enough for `mlength`), on MD row `mi`
/// of generation `gen` (`one`: its piece when contiguous, then through its pin, as puts
/// and gets): the new bytes copied aside first (the two MDs may share memory), the old
/// ones read straight into the get MD, then the new ones written.  Out of line: it stays
/// out of the frame of every put and get.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn swap_local(seg: &Seg, g: &Guard<'_>, peer: &Arc<Peer>, target: Live<'_>, (mi, gen, one): (u32, u32, Option<(u64, u64, u64)>), offset: u64, mlength: u64, l: &LocalSpans) -> bool {
    // A swap is a word as a rule; max_getput_md bounds the rest.
    let (mut small, mut big) = ([0u8; 64], Vec::new());
    let new: &mut [u8] = if mlength <= small.len() as u64 {
        &mut small[..mlength as usize]
    } else {
        big.resize(mlength as usize, 0);
        &mut big
    };
    local_parts(&l.src, 0, mlength, |d, s| new[d as usize..d as usize + s.len()].copy_from_slice(s));
    let new = &*new;
    let pinned = match one {
        Some(piece) if offset.checked_add(mlength).is_some_and(|e| e <= piece.2) => seg.with_pin(g, peer, target, mi, gen, piece, offset, mlength, |p, at| {
            let mut ok = true;
            local_parts(&l.dst, 0, mlength, |d, s| ok &= p.get(at + d as usize, s).is_ok());
            ok && p.put(at, new).is_ok()
        }),
        _ => None,
    };
    // Nothing moved unless the pin served it all (its range was checked first).
    pinned == Some(true) || {
        let pieces = md::pieces(seg, g, mi);
        copy_pieces_to_local(target, &pieces, offset, mlength, &l.dst).is_ok() && write_pieces(target, &pieces, offset, new).is_ok()
    }
}

/// The status registers of a received operation (lock held).
#[inline(always)]
fn count_received(seg: &Seg, g: &Guard<'_>, mlength: u64) {
    let st = &mut seg.state(g).hot;
    st.recv_count += 1;
    st.recv_length = st.recv_length.wrapping_add(mlength);
}

thread_local! {
    /// SOFTNIC_CHECK: where in the target's memory the last request this thread ran for
    /// its own initiator (local spans) moved its data: the address and length of the part
    /// in the first target piece it touched ([`crate::ops`]' race check takes it).
    static LANDED: Cell<Option<(u64, u64)>> = const { Cell::new(None) };
}

/// SOFTNIC_CHECK: notes the target bytes `[offset, +mlength)` of `pieces` an in-process
/// request is about to move (see [`LANDED`]).
#[cold]
fn note_landed(pieces: &[(u64, u64, u64)], offset: u64, mlength: u64) {
    let mut first = None;
    each_piece(pieces, offset, mlength, |_, addr, at, len| {
        if at == 0 {
            first = Some((addr, len));
        }
    });
    LANDED.with(|l| l.set(first));
}

/// SOFTNIC_CHECK: takes what [`note_landed`] noted on this thread (None when the last
/// request was not run here, or matched nothing).
pub(crate) fn take_landed() -> Option<(u64, u64)> {
    LANDED.with(|l| l.take())
}

/// END event, statistics and the unlink check of an accepted operation (lock held).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn finish(seg: &Seg, g: &Guard<'_>, mi: u32, end_kind: u32, req: &Req, mlength: u64, offset: u64, link: u32, fail: bool) {
    // The row once (an event's deposit changes no MD row).
    let m = seg.md(g, mi);
    if m.as_ref().is_some_and(|m| m.view.options & PTL_MD_EVENT_END_DISABLE == 0) {
        target_event(seg, g, mi, end_kind, PTL_MD_EVENT_END_DISABLE, req, mlength, offset, link, fail);
    }
    count_received(seg, g, mlength);
    let Some(m) = m else { return };
    if m.flags & MDF_DOOMED != 0 {
        if m.pending == 0 {
            md::bury(seg, g, mi);
        }
        return;
    }
    if m.flags & MDF_UNLINK_OP != 0 && m.pending == 0 && !md::active(m) {
        md::unlink_md_with(seg, g, mi, Some(link));
    }
}

/// The second half of a two-phase transfer (lock held).
fn complete(seg: &Seg, g: &Guard<'_>, req: &Req, out: &mut Out) {
    let mi = req.token as u32;
    let gen = (req.token >> 32) as u32;
    let Some(m) = seg.md(g, mi).filter(|m| m.state == LIVE && m.gen == gen && m.pending > 0) else {
        return;
    };
    m.pending -= 1;
    let ack = req.flags & F_ACK != 0 && m.view.options & PTL_MD_ACK_DISABLE == 0 && req.flags & F_FAILED == 0;
    let op = req.op_of_complete();
    out.rep = Rep { status: ST_ACCEPTED, flags: if ack { R_ACK } else { 0 }, mlength: req.mlength, offset: req.offset, link: req.link, ..Rep::default() };
    finish(seg, g, mi, kinds(op).1, req, req.mlength, req.offset, req.link, req.flags & F_FAILED != 0);
}

impl Req {
    /// The operation a COMPLETE finishes (kept in the high bits of `op`).
    fn op_of_complete(&self) -> u32 {
        self.op >> 8
    }
}

/// Writes `s` at `off` of a pinned range.  Up to 16 bytes as two overlapping copies of
/// a fixed size (a few moves once inlined, where a copy of a run-time length is a call
/// to memmove: most of a small put's copy).
#[inline]
fn put_pinned(p: &PinnedRef<'_>, off: usize, s: &[u8]) -> bool {
    let n = s.len();
    let r = match n {
        8..=16 => p.put(off, &s[..8]).and_then(|_| p.put(off + n - 8, &s[n - 8..])),
        4..=7 => p.put(off, &s[..4]).and_then(|_| p.put(off + n - 4, &s[n - 4..])),
        _ => p.put(off, s),
    };
    r.is_ok()
}

/// Calls `f(key, addr, at, len)` for each part of `[off, off+n)` of `pieces` (`at`: the
/// part's position in the transfer).
pub fn each_piece(pieces: &[(u64, u64, u64)], mut off: u64, n: u64, mut f: impl FnMut(u64, u64, u64, u64)) {
    let mut at = 0u64;
    for &(key, addr, len) in pieces {
        if at >= n {
            break;
        }
        if off >= len {
            off -= len;
            continue;
        }
        let take = (len - off).min(n - at);
        f(key, addr + off, at, take);
        at += take;
        off = 0;
    }
}

fn write_pieces(target: Live<'_>, pieces: &[(u64, u64, u64)], off: u64, src: &[u8]) -> Result<()> {
    let mut r = Ok(());
    each_piece(pieces, off, src.len() as u64, |key, addr, at, len| {
        if r.is_ok() {
            r = target.put(MemKey::from_u64(key), addr, &src[at as usize..(at + len) as usize], pd());
        }
    });
    r
}

fn read_pieces(target: Live<'_>, pieces: &[(u64, u64, u64)], off: u64, dst: &mut [u8]) -> Result<()> {
    let mut r = Ok(());
    let n = dst.len() as u64;
    each_piece(pieces, off, n, |key, addr, at, len| {
        if r.is_ok() {
            r = target.get(MemKey::from_u64(key), addr, &mut dst[at as usize..(at + len) as usize], pd());
        }
    });
    r
}

/// The initiator's pieces `[span.off + at, +len)` as slices (local mode only).
pub fn local_parts(span: &Span, at: u64, len: u64, mut f: impl FnMut(u64, &mut [u8])) {
    // SAFETY: the span lists the initiator's MD pieces (see `serve`).
    let pieces = unsafe { std::slice::from_raw_parts(span.ptr, span.n) };
    let mut off = span.off + at;
    let mut done = 0u64;
    for &(_, addr, plen) in pieces {
        if done >= len {
            break;
        }
        if off >= plen {
            off -= plen;
            continue;
        }
        let take = (plen - off).min(len - done);
        // SAFETY: inside one of the initiator's MD pieces, which the MD's contract keeps
        // mapped while the operation runs.
        let s = unsafe { std::slice::from_raw_parts_mut((addr + off) as *mut u8, take as usize) };
        f(done, s);
        done += take;
        off = 0;
    }
}

fn copy_local_to_pieces(target: Live<'_>, src: &Span, pieces: &[(u64, u64, u64)], off: u64, n: u64) -> Result<()> {
    let mut r = Ok(());
    each_piece(pieces, off, n, |key, addr, at, len| {
        local_parts(src, at, len, |d, s| {
            if r.is_ok() {
                r = target.put(MemKey::from_u64(key), addr + d, s, pd());
            }
        });
    });
    r
}

fn copy_pieces_to_local(target: Live<'_>, pieces: &[(u64, u64, u64)], off: u64, n: u64, dst: &Span) -> Result<()> {
    let mut r = Ok(());
    each_piece(pieces, off, n, |key, addr, at, len| {
        local_parts(dst, at, len, |d, s| {
            if r.is_ok() {
                r = target.get(MemKey::from_u64(key), addr + d, s, pd());
            }
        });
    });
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_split_a_transfer() {
        let p = [(1, 1000, 10), (2, 2000, 5), (3, 3000, 20)];
        let mut got = Vec::new();
        each_piece(&p, 8, 10, |k, a, at, l| got.push((k, a, at, l)));
        assert_eq!(got, vec![(1, 1008, 0, 2), (2, 2000, 2, 5), (3, 3000, 7, 3)]);
        got.clear();
        each_piece(&p, 40, 10, |k, a, at, l| got.push((k, a, at, l)));
        assert!(got.is_empty());
        assert!(REQ_LEN % 8 == 0 && REP_LEN % 8 == 0);
    }
}
