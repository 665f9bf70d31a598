//! The initiator side: PtlPut, PtlPutRegion, PtlGet, PtlGetRegion, PtlGetPut, and how
//! a target is found.
//!
//! Each operation runs whole while its call does: the initiator's MD is checked and its
//! SEND_START logged (and the MD marked busy, so PtlMDUnlink says PTL_MD_IN_USE), the
//! target side runs as the fabric's Portals service ([`crate::service`]), then the
//! initiator logs what remains (SEND_END, ACK, REPLY_START/END) and does the MD's
//! threshold and unlink bookkeeping.  One operation after the other on one thread is
//! therefore delivered in order.
//!
//! **Causal order.**  The initiator's own events of an operation are seen before
//! anything its target does in reaction: the one-critical-section path below keeps the
//! initiator's lock, which a reaction needs, until they are logged; the general path
//! holds its queues first ([`crate::eq::Hold`]) and inserts its events before whatever
//! arrived meanwhile.
//!
//! **One critical section.**  A put or get of up to [`FAST_MAX`] bytes (a swap,
//! PtlGetPut, whose get MD holds all the old bytes) to a target on this machine that the
//! thread has reached before keeps its own NI's lock from its first half to its second
//! and runs the target side in between, directly
//! (`service::run_local`, the handler's code without the request's bytes): under that
//! same lock when the target is our own NI, else under the target's lock when a short
//! try gets it ([`fast`]; nobody waits for a lock while holding another, so processes
//! putting to each other cannot deadlock).  Anything else (first contact, a busy
//! target, another machine, a larger transfer) releases our lock around
//! `rma::Peer::call` as described above.
//!
//! **Targets** are found in the node registry of the target's node under (job, nid,
//! pid) (`rma::Peer::lookup`: this machine's registry, or the node's through the network
//! engine) and cached (the NI's [`Targets`](crate::objects::Targets)); an answer that
//! the NI is gone drops the cache entry, retries once, and otherwise fails the
//! operation with PTL_NI_FAIL in its END event.
//!
//! **Late targets.**  A target of this job (a process id of the runtime's or the
//! launcher's map) that has not initialised its NI yet is waited for, before the
//! operation begins, for up to SOFTNIC_PTL_CONNECT_TIMEOUT_MS, polling the registry with
//! growing naps (1 to 20 ms), as the reference implementation's transport retries its
//! connection.  A target known gone fails at once: one that finalised (its registry
//! entry is a tombstone, see [`crate::ni`]), one this NI reached before that has ended
//! or exited since, and one already waited for in vain.

use crate::handle;
use crate::endpoint::{endpoint_key, is_tombstone, parse_payload};
use crate::eq::{check_op, OpHolds, OwnEvents, CHECK_REPLY, CHECK_SEND, TRACE_GET, TRACE_PUT};
use crate::md;
use crate::objects::{Lib, Ni, Target};
use crate::runtime::pd;
use crate::seg::{Guard, MdRow, Seg, MDF_DOOMED, MDF_SPENT, MDF_UNLINK_OP, MDF_WRITABLE};
use crate::service::{self, bytes_of, read_pod, LocalSpans, Rep, Req, Span};
use crate::status::{done, PResult};
use crate::types::*;
use softnic_fabric::mem::MemKey;
use softnic_fabric::registry;
use softnic_fabric::rma::{self, Peer};
use std::cell::RefCell;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// A thread's request and reply buffers (kept: no allocation per operation).
struct Bufs {
    req: Vec<u8>,
    reply: Vec<u8>,
}

thread_local! {
    static BUFS: RefCell<Bufs> = const { RefCell::new(Bufs { req: Vec::new(), reply: Vec::new() }) };
}

/// Why a target NI was not found.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Missing {
    /// Nothing published under its id (yet).
    NotUp,
    /// Finalised, exited or ended since this NI reached it, or unreachable.
    Gone,
}

/// The target NI `id` of our job.
fn resolve(n: &Ni, id: ptl_process_id_t) -> Result<&Target, Missing> {
    let key = (n.jid, id.nid, id.pid);
    if let Some(t) = n.targets.lookup(key) {
        return Ok(t);
    }
    let own = id == n.id;
    let (peer, loc, nonce) = if own {
        (Peer::this().map_err(|_| Missing::Gone)?, n.loc, n.nonce)
    } else {
        match Peer::lookup(id.nid, registry::api::PORTALS, &endpoint_key(n.jid, id.nid, id.pid)) {
            Ok((_, payload)) if is_tombstone(&payload) => {
                n.targets.forget(key);
                return Err(Missing::Gone);
            }
            Ok((peer, payload)) => {
                let (loc, nonce) = parse_payload(&payload);
                (peer, loc, nonce)
            }
            Err(softnic_fabric::Error::NotFound) if !n.targets.is_gone(key) => return Err(Missing::NotUp),
            Err(_) => return Err(Missing::Gone),
        }
    };
    // Our own segment is `n.seg` (a view of it would hold the NI: a cycle).
    let view = if peer.is_remote() || own { None } else { service::view(&peer, loc) };
    Ok(n.targets.insert(Target { key, peer, loc, nonce, view, own, stale: AtomicBool::new(false) }))
}

/// The target NI `id`, waited for while it is a process of this job that has not
/// initialised yet (see the module doc).  None when it does not come (the operation then
/// fails with PTL_NI_FAIL).  No lock is held: the caller has not begun the operation.
#[cold]
fn await_target(n: &Ni, id: ptl_process_id_t) -> Option<&Target> {
    match resolve(n, id) {
        Ok(t) => return Some(t),
        Err(Missing::Gone) => return None,
        Err(Missing::NotUp) => {}
    }
    let limit = Duration::from_millis(softnic_fabric::env::get_u64("SOFTNIC_PTL_CONNECT_TIMEOUT_MS"));
    if limit.is_zero() || !n.in_job(id) {
        return None;
    }
    softnic_fabric::sn_debug!("Portals", "nid {} pid {} has no interface yet: waiting for it", id.nid, id.pid);
    let start = Instant::now();
    let mut nap = Duration::from_millis(1);
    loop {
        let Some(left) = limit.checked_sub(start.elapsed()).filter(|l| !l.is_zero()) else {
            softnic_fabric::sn_debug!("Portals", "nid {} pid {} did not come up within {:?}", id.nid, id.pid, limit);
            // Not waited for again (it is used as soon as it is there, all the same).
            n.targets.forget((n.jid, id.nid, id.pid));
            return None;
        };
        // Not a blocking call: an ordinary sleep (never a cancellation point here).
        softnic_fabric::cancel::sleep(nap.min(left));
        nap = (nap * 2).min(Duration::from_millis(20));
        match resolve(n, id) {
            Ok(t) => return Some(t),
            Err(Missing::Gone) => return None,
            Err(Missing::NotUp) => {}
        }
    }
}

/// The target `id` for an operation about to begin: cached, or found (waited for if it
/// is late).  `Err` for an id that names no process; `Ok(None)` for one that is not
/// there (the operation fails with PTL_NI_FAIL).
#[inline]
fn target_for(n: &Ni, id: ptl_process_id_t) -> PResult<Option<&Target>> {
    match known_target(n, id)? {
        Some(t) => Ok(Some(t)),
        None => Ok(await_target(n, id)),
    }
}

/// The target `id` if the NI has reached it before (checked then), else None after
/// the checks of [`check_target`].
#[inline]
fn known_target(n: &Ni, id: ptl_process_id_t) -> PResult<Option<&Target>> {
    let key = (n.jid, id.nid, id.pid);
    if let Some(t) = n.targets.get(key) {
        return Ok(Some(t));
    }
    check_target(n, id)?;
    Ok(n.targets.find(key))
}

/// A target id names no process: a wildcard, or a node the job does not have.
pub fn check_target(n: &Ni, id: ptl_process_id_t) -> PResult<()> {
    if id.nid == PTL_NID_ANY || id.pid == PTL_PID_ANY {
        return Err(PTL_PROCESS_INVALID);
    }
    check_nid(n, id.nid)
}

pub fn check_nid(n: &Ni, nid: u32) -> PResult<()> {
    if n.nodes.binary_search(&nid).is_err() {
        return Err(PTL_PROCESS_INVALID);
    }
    Ok(())
}

/// SOFTNIC_CHECK: a put's MD memory is in use until its SEND_END is taken from the queue;
/// the checker watches the bytes it sent till then (contiguous MDs whose SEND_END is
/// logged; an MD with PTL_MD_EVENT_END_DISABLE or no queue tells the program nothing).
#[cold]
fn check_watch(seg: &Seg, g: &Guard<'_>, mi: u32, md_h: u32, link: u32, mem: &Mem, target: ptl_process_id_t) {
    let Some(m) = seg.md(g, mi) else { return };
    if m.view.options & PTL_MD_EVENT_END_DISABLE != 0 || m.view.eq_handle == PTL_EQ_NONE || mem.pieces.len() != 1 {
        return;
    }
    let (_, start, _) = mem.pieces[0];
    let (off, len) = (mem.off, mem.len);
    // SAFETY: the MD's memory, which the put just read.
    unsafe {
        softnic_fabric::check::watch(CHECK_SEND, check_op(md_h, link), "PtlPut", || format!("MD {md_h:#x} ({len} bytes to nid {} pid {})", target.nid, target.pid), (start + off) as usize, len as usize)
    };
}

/// SOFTNIC_CHECK: a get's reply has landed in the MD's memory (its REPLY_END is logged
/// next); the program may use it once it took that event from the queue.  A write of the
/// program's before then may be undone on the hardware by data landing after it: the
/// checker watches those bytes till the REPLY_END is taken (a contiguous MD that logs it).
#[cold]
#[allow(clippy::too_many_arguments)]
fn check_watch_reply(seg: &Seg, g: &Guard<'_>, mi: u32, link: u32, mem: &Mem, mlength: u64, target: ptl_process_id_t) {
    let Some(m) = seg.md(g, mi) else { return };
    if m.view.options & PTL_MD_EVENT_END_DISABLE != 0 || m.view.eq_handle == PTL_EQ_NONE || mem.pieces.len() != 1 {
        return;
    }
    let (_, start, _) = mem.pieces[0];
    let md_h = seg.handle(handle::MD, m.gen, mi);
    let what = || format!("MD {md_h:#x} ({mlength} bytes from nid {} pid {})", target.nid, target.pid);
    softnic_fabric::check::watch_filled(CHECK_REPLY, check_op(md_h, link), "PtlGet", what, (start + mem.off) as usize, mlength.min(mem.len) as usize);
}

/// SOFTNIC_CHECK: the space of Portals targets in the race table ("P3" in the top bits):
/// a target process (nid, pid) and addresses in its memory.
const CHECK_RACE: u64 = 0x5033 << 48;

/// SOFTNIC_CHECK: a put (get) on MD row `mi` is in flight at its target until the program
/// takes its SEND_END (REPLY_END) from the queue; another process's access to the same
/// bytes posted meanwhile is a data race (fabric check.rs, "Races").  Called under our
/// lock after the target side ran and before that END event is logged (so no thread of
/// ours can take it first); `remote_access` takes only this process's mutex and reads
/// the shared table, and no lock of another process's segment is held here.
///
/// Tracked: puts and gets (PtlPut, PtlPutRegion, PtlGet, PtlGetRegion; reported as
/// PtlPut and PtlGet) whose MD logs END events into a queue (no PTL_MD_EVENT_END_DISABLE,
/// not PTL_EQ_NONE: otherwise no completion is ever seen), that the target accepted and
/// that moved their data without failing.  The bytes are named as the target resolved
/// them: the target process (nid, pid) and the address in its memory where the data
/// landed or was read (the matched MD's memory at the offset used, remotely or locally
/// managed; the service notes it, [`service::take_landed`]).  Two initiators reaching the
/// same bytes through different match entries or MDs therefore meet, and a locally
/// managed MD, which gives each operation fresh bytes, never races.  A transfer over
/// several pieces of an iovec MD is named by its part in the first piece.
///
/// Not tracked: operations whose target side does not run in the initiator (a target
/// reached through the network engine, on another machine: the address is not known
/// here, and initiators on other machines share no table anyway); PtlGetPut (a swap the
/// target runs whole under its lock, like an AMO); dropped, lost or failed operations;
/// MDs with no END event or no queue.  An END event overwritten in a full queue
/// (PTL_EQ_DROPPED) or left in a freed queue is never taken: its access stays in flight
/// until the initiator exits (PtlNIFini reports such a SEND_END as never taken).
#[cold]
#[allow(clippy::too_many_arguments)]
fn check_race(seg: &Seg, g: &Guard<'_>, mi: u32, link: u32, req: &Req, target: ptl_process_id_t, outcome: &Outcome, write: bool) {
    // Always taken: a note left behind would be read by this thread's next operation.
    let landed = service::take_landed();
    let (Outcome::Accepted(rep, _), Some((addr, len))) = (outcome, landed) else { return };
    let Some(m) = seg.md(g, mi) else { return };
    if rep.flags & service::R_FAILED != 0 || m.view.options & PTL_MD_EVENT_END_DISABLE != 0 || m.view.eq_handle == PTL_EQ_NONE {
        return;
    }
    let md_h = seg.handle(handle::MD, m.gen, mi);
    let (kind, api, what) = if write { (CHECK_SEND, "PtlPut", "a put") } else { (CHECK_REPLY, "PtlGet", "a get") };
    let to = softnic_fabric::check::Target { space: CHECK_RACE, target: (target.nid as u64) << 32 | target.pid as u64, addr, len };
    let (pt, bits) = (req.pt_index, req.match_bits);
    let describe = || format!("MD {md_h:#x} ({what} of {len} bytes, nid {} pid {} portal {pt} match bits {bits:#x}, at {addr:#x})", target.nid, target.pid);
    softnic_fabric::check::remote_access(kind, check_op(md_h, link), api, describe, to, write);
}

#[cold]
fn trace_in_flight(seg: &Seg, g: &Guard<'_>, mi: u32, id: usize, name: &'static str) {
    if let Some(m) = seg.md(g, mi) {
        if m.view.options & PTL_MD_EVENT_END_DISABLE == 0 && m.view.eq_handle != PTL_EQ_NONE {
            softnic_fabric::trace::async_begin("portals", name, id as u64, &[]);
        }
    }
}

/// The timeline's span of an operation: its target and, for a region, its length.
#[inline]
fn trace_span(name: &'static str, target: ptl_process_id_t, region: Option<(u64, u64)>) -> Option<softnic_fabric::trace::Span> {
    softnic_fabric::trace::span("portals", name).map(|s| {
        let s = s.arg("nid", target.nid as u64).arg("pid", target.pid as u64);
        match region {
            Some((_, len)) => s.arg("length", len),
            None => s,
        }
    })
}

/// SOFTNIC_FAULTS=transfer: this operation's request is lost in the network (it ends
/// as one whose target cannot be reached: PTL_NI_FAIL in its end event, no ack or reply).
#[inline]
fn lost_in_network() -> bool {
    softnic_fabric::faults::hit(softnic_fabric::faults::Point::Transfer)
}

/// What became of a request.
enum Outcome {
    Accepted(Rep, Vec<u8>),
    Dropped,
    /// No such target NI, or it could not be reached.
    Failed,
}

/// The initiator's memory for one operation: its MD's pieces and the part used.
struct Mem {
    pieces: md::Pieces,
    off: u64,
    len: u64,
}

impl Mem {
    fn span(&self) -> Span {
        Span { ptr: self.pieces.as_ptr(), n: self.pieces.len(), off: self.off }
    }
}

fn empty_span() -> Span {
    Span { ptr: std::ptr::null(), n: 0, off: 0 }
}

/// Runs `req` at target `tid` (one retry when a cached target turned out stale).
fn send(n: &Ni, tid: ptl_process_id_t, base: Req, src: Option<&Mem>, dst: Option<&Mem>, inline: Option<&[u8]>) -> Outcome {
    for attempt in 0..2 {
        let Ok(t) = resolve(n, tid) else { return Outcome::Failed };
        let mut req = base;
        req.tgt_jid = t.key.0;
        req.tgt_nid = t.key.1;
        req.tgt_pid = t.key.2;
        req.ni_loc = t.loc.to_words();
        req.ni_nonce = t.nonce;
        req.proc_nonce = service::proc_nonce();
        let spans = LocalSpans { src: src.map_or_else(empty_span, Mem::span), dst: dst.map_or_else(empty_span, Mem::span) };
        let local = !t.peer.is_remote() && inline.is_none();
        if local {
            req.flags |= service::F_LOCAL;
            req.local = &spans as *const LocalSpans as u64;
        }
        let r = BUFS.with(|b| {
            let mut b = b.borrow_mut();
            let Bufs { req: buf, reply } = &mut *b;
            reply.clear();
            let r = if local {
                // Data moves in place: the request is just its header.
                t.peer.call(registry::api::PORTALS, bytes_of(&req), reply)
            } else {
                buf.clear();
                let data_len = match (inline, src) {
                    (Some(d), _) => Some(d.len()),
                    (None, Some(s)) if req.op == service::OP_PUT && s.len as usize <= service::INLINE_MAX => Some(s.len as usize),
                    _ => None,
                };
                if data_len.is_some() {
                    req.flags |= service::F_INLINE;
                }
                buf.extend_from_slice(bytes_of(&req));
                match (inline, src) {
                    (Some(d), _) => buf.extend_from_slice(d),
                    (None, Some(s)) if data_len.is_some() => {
                        let at = buf.len();
                        buf.resize(at + s.len as usize, 0);
                        service::local_parts(&s.span(), 0, s.len, |d, p| buf[at + d as usize..at + d as usize + p.len()].copy_from_slice(p));
                    }
                    _ => {}
                }
                t.peer.call(registry::api::PORTALS, buf, reply)
            };
            r.map(|_| (read_pod::<Rep>(reply), reply.get(service::REP_LEN..).map(|x| x.to_vec()).unwrap_or_default()))
        });
        let (rep, extra) = match r {
            Ok((Some(rep), extra)) => (rep, extra),
            Ok((None, _)) => return Outcome::Failed,
            Err(e) => {
                softnic_fabric::sn_debug!("Portals", "request to nid {} pid {} failed: {}", tid.nid, tid.pid, e);
                n.targets.forget(t.key);
                if attempt == 0 && matches!(e, softnic_fabric::Error::StaleHandle | softnic_fabric::Error::NotFound) {
                    continue;
                }
                return Outcome::Failed;
            }
        };
        return match rep.status {
            service::ST_ACCEPTED if rep.flags & service::R_TWO_PHASE != 0 => two_phase(t, &req, rep, &extra, src, dst),
            service::ST_ACCEPTED => Outcome::Accepted(rep, extra),
            service::ST_DROPPED => Outcome::Dropped,
            _ => {
                n.targets.forget(t.key);
                if attempt == 0 {
                    continue;
                }
                Outcome::Failed
            }
        };
    }
    Outcome::Failed
}

/// Largest transfer run in one critical section of the initiator (see [`fast`]): a
/// larger one copies long enough that its own lock is better released meanwhile.
const FAST_MAX: u64 = 16384;

/// How often [`fast`] tries a busy target lock before it takes the general path.
const FAST_TRIES: u32 = 64;

/// Starts fetching the target's lock and event lines while our own lock is taken (see
/// [`Seg::prefetch`]): they are usually in the other process's cache.
#[inline]
fn prefetch_target(t: Option<&Target>) {
    if let Some(v) = t.and_then(|t| t.view.as_ref()) {
        v.seg.prefetch();
    }
}

/// What [`fast`] made of an operation.
enum Fast {
    Done(Outcome),
    /// Not possible here: take the general path.
    Slow,
    /// The cached target is not the NI it was: forget it, then the general path.
    Stale,
}

/// The one-critical-section path of a put or get to a target on this machine: while
/// the caller holds its own NI's lock `g` (taken for the operation's first half, kept for
/// its second), the target side runs here on the target's segment: under that same
/// lock when the target is our own NI, else under the target's lock if it can be had
/// without waiting long.  Nobody waits for a lock while holding another one (a busy
/// target lock sends the caller to the general path, which releases its own first), so
/// two processes putting to each other cannot deadlock.  None: take the general path.
#[inline(always)]
fn fast(n: &Ni, t: Option<&Target>, g: &Guard<'_>, req: &mut Req, spans: &LocalSpans) -> Option<Outcome> {
    let t = t?;
    if req.rlength > FAST_MAX {
        return None;
    }
    match fast_on(n, t, g, req, spans) {
        Fast::Done(o) => Some(o),
        Fast::Slow => None,
        Fast::Stale => {
            n.targets.forget(t.key);
            None
        }
    }
}

#[inline(always)]
fn fast_on(n: &Ni, t: &Target, g: &Guard<'_>, req: &mut Req, spans: &LocalSpans) -> Fast {
    if t.view.is_none() && !t.own {
        return Fast::Slow;
    }
    // The liveness probe Peer::call would make.
    let Ok(live) = t.peer.live() else { return Fast::Slow };
    (req.tgt_jid, req.tgt_nid, req.tgt_pid) = t.key;
    req.ni_nonce = t.nonce;
    let rep = match &t.view {
        None => service::run_local(&t.peer, live, &n.seg, g, req, spans),
        Some(v) => {
            let seg = &v.seg;
            let mut tries = 0;
            let tg = loop {
                if let Some(tg) = seg.try_lock() {
                    break tg;
                }
                tries += 1;
                if tries == FAST_TRIES {
                    return Fast::Slow;
                }
                std::hint::spin_loop();
            };
            service::run_local(&t.peer, live, seg, &tg, req, spans)
        }
    };
    match rep {
        Some(rep) if rep.status == service::ST_ACCEPTED => Fast::Done(Outcome::Accepted(rep, Vec::new())),
        Some(_) => Fast::Done(Outcome::Dropped),
        None => Fast::Stale,
    }
}

/// Moves a large transfer's data into or out of the target pieces named by `extra`,
/// then completes it at the target.
fn two_phase(t: &Target, req: &Req, rep: Rep, extra: &[u8], src: Option<&Mem>, dst: Option<&Mem>) -> Outcome {
    let w = |i: usize| extra.get(i * 8..i * 8 + 8).map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
    // As many pieces as the reply really carries, whatever its count says.
    let nseg = (rep.nseg as usize).min(extra.len() / 24);
    let segs: Vec<(u64, u64, u64)> = (0..nseg).map(|s| (w(s * 3), w(s * 3 + 1), w(s * 3 + 2))).collect();
    let mut ok = true;
    service::each_piece(&segs, 0, rep.mlength, |key, addr, at, len| {
        let mem = if req.op == service::OP_PUT { src } else { dst };
        let Some(mem) = mem else {
            ok = false;
            return;
        };
        service::local_parts(&mem.span(), at, len, |d, p| {
            if !ok {
                return;
            }
            let r = if req.op == service::OP_PUT { rma::put(&t.peer, MemKey::from_u64(key), addr + d, p, pd()) } else { rma::get(&t.peer, MemKey::from_u64(key), addr + d, p, pd()) };
            ok = r.is_ok();
        });
    });
    let mut c = *req;
    c.op = service::OP_COMPLETE | (req.op << 8);
    c.flags = (req.flags & service::F_ACK) | if ok { 0 } else { service::F_FAILED };
    c.local = 0;
    c.token = rep.token;
    c.link = rep.link;
    c.offset = rep.offset;
    c.mlength = rep.mlength;
    let mut reply = Vec::new();
    let done = t.peer.call(registry::api::PORTALS, bytes_of(&c), &mut reply).ok().and_then(|_| read_pod::<Rep>(&reply));
    let mut fin = rep;
    fin.flags &= !(service::R_TWO_PHASE | service::R_ACK);
    match done {
        Some(d) if d.status == service::ST_ACCEPTED => fin.flags |= d.flags & service::R_ACK,
        _ => ok = false,
    }
    if !ok {
        fin.flags |= service::R_FAILED;
    }
    Outcome::Accepted(fin, Vec::new())
}

/// An initiator event about our MD row `mi` (lock held), kept aside in `own` while the
/// operation holds its queues.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn own_event(seg: &Seg, g: &Guard<'_>, mi: u32, kind: u32, peer: ptl_process_id_t, req: &Req, rlength: u64, mlength: u64, offset: u64, link: u32, fail: bool, own: Option<&mut OwnEvents>) -> bool {
    let Some(m) = seg.md(g, mi) else { return false };
    let disable = match kind {
        PTL_EVENT_SEND_START | PTL_EVENT_REPLY_START => PTL_MD_EVENT_START_DISABLE,
        PTL_EVENT_SEND_END | PTL_EVENT_REPLY_END => PTL_MD_EVENT_END_DISABLE,
        _ => 0,
    };
    if m.view.options & disable != 0 {
        return true;
    }
    if m.view.eq_handle == PTL_EQ_NONE {
        return false;
    }
    let h = seg.hdr();
    let ev = Packed {
        initiator: peer,
        uid: h.uid,
        jid: h.jid,
        pt_index: req.pt_index,
        match_bits: req.match_bits,
        rlength,
        mlength,
        offset,
        hdr_data: if kind == PTL_EVENT_REPLY_START || kind == PTL_EVENT_REPLY_END { 0 } else { req.hdr_data },
        link,
        fail: fail as u8 * PTL_NI_FAIL as u8,
        ..Packed::about(kind, seg.handle(handle::MD, m.gen, mi), &m.view)
    };
    // Built here, not by a closure the deposit calls: that closure stayed out of line
    // and read each field through a pointer to its captures.
    crate::eq::deposit(seg, g, m.view.eq_handle, move || ev, own)
}

/// Phase A of every operation on our MD `(idx, gen)`: checks, the region, the
/// threshold unit of a send, the busy mark.  Returns the row, the operation's link and
/// where in the MD it works (the caller builds the [`Mem`] in its own frame: moving it
/// out through the result cost a store-forwarding stall per operation).
#[inline(always)]
fn begin(n: &Ni, g: &Guard<'_>, idx: u32, gen: u32, region: Option<(u64, u64)>, write: bool, counts: bool) -> PResult<(u32, u32, u64, u64)> {
    let seg = &n.seg;
    let mi = md::row_of(seg, g, idx, gen)?;
    let m = seg.md(g, mi).expect("live");
    let (off, len) = region.unwrap_or((0, m.total));
    if off.checked_add(len).is_none_or(|e| e > m.total) {
        return Err(PTL_MD_ILLEGAL);
    }
    if write && m.flags & MDF_WRITABLE == 0 && len > 0 {
        return Err(PTL_MD_ILLEGAL);
    }
    if counts {
        use_unit(m);
    }
    m.pending += 1;
    let s = seg.state(g);
    let link = s.next_link;
    s.next_link = link.wrapping_add(1);
    Ok((mi, link, off, len))
}

/// Takes one threshold unit of an initiator-side operation (a send, an ack, a reply),
/// if any is left: these are never refused for the threshold.
#[inline]
fn use_unit(m: &mut MdRow) {
    if m.view.threshold > 0 {
        m.view.threshold -= 1;
        if m.view.threshold == 0 {
            m.flags |= MDF_SPENT;
        }
    }
}

/// The end of every operation on our MD row `mi`: busy mark off, then the unlink check
/// (lock held; its UNLINK event kept in `own` when the operation holds its queues).  True
/// when the MD went (the caller reaps).
#[inline]
fn end(seg: &Seg, g: &Guard<'_>, mi: u32, link: u32, own: Option<&mut OwnEvents>) -> bool {
    let Some(m) = seg.md(g, mi) else { return false };
    m.pending = m.pending.saturating_sub(1);
    if m.flags & MDF_DOOMED != 0 {
        if m.pending == 0 {
            md::bury(seg, g, mi);
            return true;
        }
        return false;
    }
    if m.flags & MDF_UNLINK_OP != 0 && m.flags & MDF_SPENT != 0 && m.pending == 0 && m.view.threshold == 0 {
        md::unlink_md_logged(seg, g, mi, Some(link), own);
        return true;
    }
    false
}

#[allow(clippy::too_many_arguments)]
#[inline]
fn base_req(n: &Ni, op: u32, pt: u32, ac: u32, bits: u64, roff: u64, hdr: u64, rlength: u64) -> Req {
    Req {
        wire: 0x5033_0001,
        op,
        init_nid: n.id.nid,
        init_pid: n.id.pid,
        init_uid: n.uid,
        init_jid: n.jid,
        pt_index: pt,
        ac_index: ac,
        match_bits: bits,
        roffset: roff,
        hdr_data: hdr,
        rlength,
        ..Req::default()
    }
}

/// What a put needs to finish once its target side ran.
struct PutEnd<'a> {
    mi: u32,
    link: u32,
    req: &'a Req,
    mem: &'a Mem,
    ack_wanted: bool,
    target: ptl_process_id_t,
    /// The MD logs no SEND_END, as read in the critical section that ends the put (the
    /// one-critical-section path): its row need not be read again for it after the
    /// transfer, which may have pushed that line out of the cache.  False: look.
    end_off: bool,
}

/// Phase B of a put (lock held): SEND_END, the ACK, the MD's bookkeeping; the events
/// kept in `own` when the put holds its queue.  True when the MD went.
#[inline(always)]
fn put_end(seg: &Seg, g: &Guard<'_>, p: &PutEnd<'_>, outcome: &Outcome, mut own: Option<&mut OwnEvents>) -> bool {
    let (mi, req, mem) = (p.mi, p.req, p.mem);
    let failed = matches!(outcome, Outcome::Failed) || matches!(outcome, Outcome::Accepted(r, _) if r.flags & service::R_FAILED != 0);
    if req.flags & service::F_CHECK != 0 {
        check_race(seg, g, mi, p.link, req, p.target, outcome, true);
    }
    if !p.end_off {
        own_event(seg, g, mi, PTL_EVENT_SEND_END, ptl_process_id_t { nid: req.init_nid, pid: req.init_pid }, req, mem.len, mem.len, mem.off, p.link, failed, own.as_deref_mut());
    }
    if let Outcome::Accepted(rep, _) = outcome {
        // A put whose data did not land (the target died under it) ends with
        // PTL_NI_FAIL and no ACK, even though the target had accepted it.
        if p.ack_wanted && !failed && rep.flags & service::R_ACK != 0 {
            if let Some(m) = seg.md(g, mi) {
                use_unit(m);
            }
            // An ack whose queue is gone is discarded and counted (doc 4.2).
            if !own_event(seg, g, mi, PTL_EVENT_ACK, p.target, req, mem.len, rep.mlength, rep.offset, p.link, false, own.as_deref_mut()) {
                seg.state(g).stats.drop_count += 1;
            }
        }
    }
    end(seg, g, mi, p.link, own)
}

/// The general path of a put (its lock `g` held on entry, released here): the target
/// may react before the put has logged its own events, so its queue is held meanwhile.
/// Out of line: the one-critical-section path stays small.  True when the MD went.
#[inline(never)]
fn put_general(n: &Ni, g: Guard<'_>, eq_h: u32, end: &PutEnd<'_>) -> bool {
    let seg = &n.seg;
    let mut holds = OpHolds::open(seg, &g, &[eq_h]);
    drop(g);
    let o = send(n, end.target, *end.req, Some(end.mem), None, None);
    let g = seg.lock();
    if holds.settle(seg, &g) {
        put_end(seg, &g, end, &o, None)
    } else {
        let mut own = OwnEvents::default();
        let gone = put_end(seg, &g, end, &o, Some(&mut own));
        holds.release(seg, &g, own);
        gone
    }
}

/// The general path of a get, as [`put_general`].
#[inline(never)]
fn get_general(n: &Ni, g: Guard<'_>, mi: u32, link: u32, req: &Req, mem: &Mem, target: ptl_process_id_t) -> bool {
    let seg = &n.seg;
    let mut holds = OpHolds::open(seg, &g, &[seg.md(&g, mi).expect("live").view.eq_handle]);
    drop(g);
    let o = send(n, target, *req, None, Some(mem), None);
    let g = seg.lock();
    if holds.settle(seg, &g) {
        get_end(seg, &g, mi, link, req, mem, target, &o, None)
    } else {
        let mut own = OwnEvents::default();
        let gone = get_end(seg, &g, mi, link, req, mem, target, &o, Some(&mut own));
        holds.release(seg, &g, own);
        gone
    }
}

/// The first checks of an operation on MD handle `md_h` (those of `Lib::with_of`):
/// PtlInit done, an MD handle; its row index and generation bits.
#[inline(always)]
fn md_index(md_h: u32) -> PResult<(u32, u32)> {
    Lib::check_init()?;
    handle::index_of(md_h, handle::MD).ok_or(PTL_MD_INVALID)
}

/// The timeline's span of a put or get is built only when tracing may be on: the span's
/// Option, built and dropped around the body, cost every call (a rejected one most:
/// cost_rejected 92 -> 69 instructions with this and the inlined `ret`) even when off.
/// The first checks are made here, where the frame is small: a rejected call returns
/// without the body's prologue.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn put(md_h: u32, region: Option<(u64, u64)>, ack_req: u32, target: ptl_process_id_t, pt: u32, ac: u32, bits: u64, roff: u64, hdr: u64) -> PResult<()> {
    if softnic_fabric::trace::surely_off() {
        let (idx, gen) = md_index(md_h)?;
        return put_body(md_h, idx, gen, region, ack_req, target, pt, ac, bits, roff, hdr);
    }
    put_traced(md_h, region, ack_req, target, pt, ac, bits, roff, hdr)
}

/// [`put`] with its span, out of line: inlined, the span's frame made every export's
/// prologue and epilogue larger (a 600-byte frame, six saved registers).
#[allow(clippy::too_many_arguments)]
#[cold]
#[inline(never)]
fn put_traced(md_h: u32, region: Option<(u64, u64)>, ack_req: u32, target: ptl_process_id_t, pt: u32, ac: u32, bits: u64, roff: u64, hdr: u64) -> PResult<()> {
    let _span = trace_span("PtlPut", target, region);
    let (idx, gen) = md_index(md_h)?;
    put_body(md_h, idx, gen, region, ack_req, target, pt, ac, bits, roff, hdr)
}

#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn put_body(md_h: u32, idx: u32, gen: u32, region: Option<(u64, u64)>, ack_req: u32, target: ptl_process_id_t, pt: u32, ac: u32, bits: u64, roff: u64, hdr: u64) -> PResult<()> {
    // `move`: the closure holds the arguments themselves (a reference to each cost a
    // store of the value, a store of its address and a load through it).
    Lib::with_ni(PTL_MD_INVALID, move |n| {
        if ack_req > PTL_NO_ACK_REQ {
            return Err(PTL_FAIL);
        }
        let t = target_for(n, target)?;
        let seg = &n.seg;
        prefetch_target(t);
        let g = seg.lock();
        let (mi, link, off, len) = begin(n, &g, idx, gen, region, false, true)?;
        let mem = Mem { pieces: md::pieces(seg, &g, mi), off, len };
        let (eq_h, opts) = seg.md(&g, mi).map(|m| (m.view.eq_handle, m.view.options)).expect("live");
        let ack_wanted = ack_req == PTL_ACK_REQ && eq_h != PTL_EQ_NONE;
        let mut req = base_req(n, service::OP_PUT, pt, ac, bits, roff, hdr, mem.len);
        if softnic_fabric::check::enabled() {
            check_watch(seg, &g, mi, md_h, link, &mem, target);
            req.flags |= service::F_CHECK;
        }
        if softnic_fabric::trace::enabled() {
            trace_in_flight(seg, &g, mi, check_op(md_h, link), TRACE_PUT);
        }
        if opts & PTL_MD_EVENT_START_DISABLE == 0 {
            own_event(seg, &g, mi, PTL_EVENT_SEND_START, n.id, &req, mem.len, mem.len, mem.off, link, false, None);
        }
        let st = &mut seg.state(&g).hot;
        st.send_count += 1;
        st.send_length = st.send_length.wrapping_add(mem.len);
        if ack_wanted {
            req.flags |= service::F_ACK;
        }
        let spans = LocalSpans { src: mem.span(), dst: empty_span() };
        let o = if lost_in_network() { Some(Outcome::Failed) } else { fast(n, t, &g, &mut req, &spans) };
        let gone = match o {
            Some(o) => {
                // Our lock was held since `opts` was read: the options are the same.
                let end_off = opts & PTL_MD_EVENT_END_DISABLE != 0;
                let gone = put_end(seg, &g, &PutEnd { mi, link, req: &req, mem: &mem, ack_wanted, target, end_off }, &o, None);
                drop(g);
                gone
            }
            // The lock is released meanwhile (PtlMDUpdate may change the options).
            None => put_general(n, g, eq_h, &PutEnd { mi, link, req: &req, mem: &mem, ack_wanted, target, end_off: false }),
        };
        if gone {
            md::reap(n);
        }
        Ok(())
    })
}

/// Phase B of a get (lock held): the inline data into our memory, REPLY_START/END, the
/// MD's bookkeeping; the events kept in `own` when the get holds its queue.  True when
/// the MD went.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn get_end(seg: &Seg, g: &Guard<'_>, mi: u32, link: u32, req: &Req, mem: &Mem, target: ptl_process_id_t, outcome: &Outcome, mut own: Option<&mut OwnEvents>) -> bool {
    if req.flags & service::F_CHECK != 0 {
        check_race(seg, g, mi, link, req, target, outcome, false);
    }
    let (got, fail) = match outcome {
        Outcome::Accepted(rep, extra) => {
            let mut fail = rep.flags & service::R_FAILED != 0;
            if rep.flags & service::R_DATA != 0 {
                // Inline data: into our pieces.
                if (extra.len() as u64) < rep.mlength {
                    fail = true;
                } else {
                    service::local_parts(&mem.span(), 0, rep.mlength.min(mem.len), |d, p| {
                        let l = p.len();
                        p.copy_from_slice(&extra[d as usize..d as usize + l]);
                    });
                }
            }
            (Some(rep.mlength), fail)
        }
        Outcome::Dropped => (None, false),
        Outcome::Failed => (Some(0), true),
    };
    if let Some(mlength) = got {
        if !fail && req.flags & service::F_CHECK != 0 {
            check_watch_reply(seg, g, mi, link, mem, mlength, target);
        }
        own_event(seg, g, mi, PTL_EVENT_REPLY_START, target, req, mem.len, mlength, mem.off, link, false, own.as_deref_mut());
        own_event(seg, g, mi, PTL_EVENT_REPLY_END, target, req, mem.len, mlength, mem.off, link, fail, own.as_deref_mut());
        if !fail {
            if let Some(m) = seg.md(g, mi) {
                use_unit(m);
            }
        }
    }
    end(seg, g, mi, link, own)
}

/// A get's span as a put's ([`put`]).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn get(md_h: u32, region: Option<(u64, u64)>, target: ptl_process_id_t, pt: u32, ac: u32, bits: u64, roff: u64) -> PResult<()> {
    if softnic_fabric::trace::surely_off() {
        let (idx, gen) = md_index(md_h)?;
        return get_body(md_h, idx, gen, region, target, pt, ac, bits, roff);
    }
    get_traced(md_h, region, target, pt, ac, bits, roff)
}

/// [`get`] with its span, out of line (as [`put_traced`]).
#[allow(clippy::too_many_arguments)]
#[cold]
#[inline(never)]
fn get_traced(md_h: u32, region: Option<(u64, u64)>, target: ptl_process_id_t, pt: u32, ac: u32, bits: u64, roff: u64) -> PResult<()> {
    let _span = trace_span("PtlGet", target, region);
    let (idx, gen) = md_index(md_h)?;
    get_body(md_h, idx, gen, region, target, pt, ac, bits, roff)
}

#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn get_body(md_h: u32, idx: u32, gen: u32, region: Option<(u64, u64)>, target: ptl_process_id_t, pt: u32, ac: u32, bits: u64, roff: u64) -> PResult<()> {
    // `move`: the closure holds the arguments themselves (a reference to each cost a
    // store of the value, a store of its address and a load through it).
    Lib::with_ni(PTL_MD_INVALID, move |n| {
        let t = target_for(n, target)?;
        let seg = &n.seg;
        prefetch_target(t);
        let g = seg.lock();
        let (mi, link, off, len) = begin(n, &g, idx, gen, region, true, false)?;
        let mem = Mem { pieces: md::pieces(seg, &g, mi), off, len };
        if softnic_fabric::trace::enabled() {
            trace_in_flight(seg, &g, mi, check_op(md_h, link), TRACE_GET);
        }
        let mut req = base_req(n, service::OP_GET, pt, ac, bits, roff, 0, mem.len);
        if softnic_fabric::check::enabled() {
            req.flags |= service::F_CHECK;
        }
        let spans = LocalSpans { src: empty_span(), dst: mem.span() };
        let o = if lost_in_network() { Some(Outcome::Failed) } else { fast(n, t, &g, &mut req, &spans) };
        let gone = match o {
            Some(o) => {
                let gone = get_end(seg, &g, mi, link, &req, &mem, target, &o, None);
                drop(g);
                gone
            }
            None => get_general(n, g, mi, link, &req, &mem, target),
        };
        if gone {
            md::reap(n);
        }
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
fn getput(get_h: u32, put_h: u32, target: ptl_process_id_t, pt: u32, ac: u32, bits: u64, roff: u64, hdr: u64) -> PResult<()> {
    let _span = trace_span("PtlGetPut", target, None);
    let (n, gidx, ggen) = Lib::of(get_h, handle::MD, PTL_MD_INVALID)?;
    let (pidx, pgen) = handle::index_of(put_h, handle::MD).ok_or(PTL_MD_INVALID)?;
    let t = target_for(&n, target)?;
    let seg = &n.seg;
    prefetch_target(t);
    let g = seg.lock();
    md::row_of(seg, &g, gidx, ggen)?;
    md::row_of(seg, &g, pidx, pgen)?;
    if seg.md(&g, pidx).expect("live").total > n.seg.lay.lim.getput as u64 {
        return Err(PTL_MD_ILLEGAL);
    }
    let (pmi, plink, off, len) = begin(&n, &g, pidx, pgen, None, false, true)?;
    let pmem = Mem { pieces: md::pieces(seg, &g, pmi), off, len };
    let (gmi, gmem) = match begin(&n, &g, gidx, ggen, None, true, false) {
        Ok((mi, _link, off, len)) => (mi, Mem { pieces: md::pieces(seg, &g, mi), off, len }),
        Err(e) => {
            end(seg, &g, pmi, plink, None);
            return Err(e);
        }
    };
    let req = base_req(&n, service::OP_GETPUT, pt, ac, bits, roff, hdr, pmem.len);
    own_event(seg, &g, pmi, PTL_EVENT_SEND_START, n.id, &req, pmem.len, pmem.len, 0, plink, false, None);
    let swap = Swap { pmi, gmi, plink, req: &req, pmem: &pmem, gmem: &gmem, target };
    let lost = lost_in_network();
    // One critical section (see `fast`) when the old bytes all fit the get MD (they go
    // straight into it); else the general path, which brings them back in its reply.
    if !lost && gmem.len >= pmem.len {
        let spans = LocalSpans { src: pmem.span(), dst: gmem.span() };
        let mut fast_req = req;
        if let Some(o) = fast(&n, t, &g, &mut fast_req, &spans) {
            let gone = swap.end(seg, &g, &o, true, None);
            drop(g);
            if gone {
                md::reap(&n);
            }
            return Ok(());
        }
    }
    let eqs = [seg.md(&g, pmi).expect("live").view.eq_handle, seg.md(&g, gmi).expect("live").view.eq_handle];
    let holds = OpHolds::open(seg, &g, &eqs);
    drop(g);
    let mut data = vec![0u8; pmem.len as usize];
    service::local_parts(&pmem.span(), 0, pmem.len, |d, p| data[d as usize..d as usize + p.len()].copy_from_slice(p));
    let outcome = if lost { Outcome::Failed } else { send(&n, target, req, None, None, Some(&data)) };
    if let Outcome::Accepted(rep, old) = &outcome {
        // The old bytes into the get MD (its events say how many).
        let mlength = rep.mlength.min(gmem.len).min(old.len() as u64);
        service::local_parts(&gmem.span(), 0, mlength, |d, p| {
            let l = p.len();
            p.copy_from_slice(&old[d as usize..d as usize + l]);
        });
    }
    let g = seg.lock();
    let mut own = OwnEvents::default();
    let gone = swap.end(seg, &g, &outcome, false, Some(&mut own));
    holds.release(seg, &g, own);
    drop(g);
    if gone {
        md::reap(&n);
    }
    Ok(())
}

/// What a swap (PtlGetPut) needs to finish once its target side ran.
struct Swap<'a> {
    /// The put MD's row (the new bytes) and the get MD's (the old ones).
    pmi: u32,
    gmi: u32,
    plink: u32,
    req: &'a Req,
    pmem: &'a Mem,
    gmem: &'a Mem,
    target: ptl_process_id_t,
}

impl Swap<'_> {
    /// The swap's end (lock held): SEND_END, REPLY_START/END with the get MD's threshold
    /// unit, both MDs' bookkeeping; the events kept in `own` when the swap holds its
    /// queues.  `landed`: the old bytes went straight into the get MD (one critical
    /// section), else the caller copied what the reply brought.  True when an MD went.
    fn end(&self, seg: &Seg, g: &Guard<'_>, outcome: &Outcome, landed: bool, mut own: Option<&mut OwnEvents>) -> bool {
        let (pmi, gmi, plink, req, pmem, gmem) = (self.pmi, self.gmi, self.plink, self.req, self.pmem, self.gmem);
        let failed = matches!(outcome, Outcome::Failed) || matches!(outcome, Outcome::Accepted(r, _) if r.flags & service::R_FAILED != 0);
        own_event(seg, g, pmi, PTL_EVENT_SEND_END, ptl_process_id_t { nid: req.init_nid, pid: req.init_pid }, req, pmem.len, pmem.len, 0, plink, failed, own.as_deref_mut());
        let mlength = match outcome {
            Outcome::Accepted(rep, _) if landed => Some(rep.mlength.min(gmem.len)),
            Outcome::Accepted(rep, old) => Some(rep.mlength.min(gmem.len).min(old.len() as u64)),
            // A swap that could not reach its target ends with empty failed replies.
            Outcome::Failed => Some(0),
            Outcome::Dropped => None,
        };
        if let Some(mlength) = mlength {
            own_event(seg, g, gmi, PTL_EVENT_REPLY_START, self.target, req, pmem.len, mlength, 0, plink, false, own.as_deref_mut());
            own_event(seg, g, gmi, PTL_EVENT_REPLY_END, self.target, req, pmem.len, mlength, 0, plink, failed, own.as_deref_mut());
            if !failed {
                if let Some(m) = seg.md(g, gmi) {
                    use_unit(m);
                }
            }
        }
        let gone = end(seg, g, pmi, plink, own.as_deref_mut());
        gone | end(seg, g, gmi, plink, own)
    }
}

#[no_mangle]
pub extern "C" fn PtlPut(md_handle: u32, ack_req: u32, target_id: ptl_process_id_t, pt_index: u32, ac_index: u32, match_bits: u64, remote_offset: u64, hdr_data: u64) -> i32 {
    done("PtlPut", put(md_handle, None, ack_req, target_id, pt_index, ac_index, match_bits, remote_offset, hdr_data))
}

#[no_mangle]
pub extern "C" fn PtlPutRegion(md_handle: u32, local_offset: u64, length: u64, ack_req: u32, target_id: ptl_process_id_t, pt_index: u32, ac_index: u32, match_bits: u64, remote_offset: u64, hdr_data: u64) -> i32 {
    done("PtlPutRegion", put(md_handle, Some((local_offset, length)), ack_req, target_id, pt_index, ac_index, match_bits, remote_offset, hdr_data))
}

#[no_mangle]
pub extern "C" fn PtlGet(md_handle: u32, target_id: ptl_process_id_t, pt_index: u32, ac_index: u32, match_bits: u64, remote_offset: u64) -> i32 {
    done("PtlGet", get(md_handle, None, target_id, pt_index, ac_index, match_bits, remote_offset))
}

#[no_mangle]
pub extern "C" fn PtlGetRegion(md_handle: u32, local_offset: u64, length: u64, target_id: ptl_process_id_t, pt_index: u32, ac_index: u32, match_bits: u64, remote_offset: u64) -> i32 {
    done("PtlGetRegion", get(md_handle, Some((local_offset, length)), target_id, pt_index, ac_index, match_bits, remote_offset))
}

#[no_mangle]
pub extern "C" fn PtlGetPut(get_md_handle: u32, put_md_handle: u32, target_id: ptl_process_id_t, pt_index: u32, ac_index: u32, match_bits: u64, remote_offset: u64, hdr_data: u64) -> i32 {
    done("PtlGetPut", getput(get_md_handle, put_md_handle, target_id, pt_index, ac_index, match_bits, remote_offset, hdr_data))
}
