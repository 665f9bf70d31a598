//! Data movement: `GNI_PostFma`, `GNI_PostRdma`, `GNI_PostCqWrite`.
//!
//! **One engine.**  FMA and RDMA (BTE) transactions run on the fabric's one-sided engine
//! ([`softnic_fabric::rma`]): the initiator moves the data itself, into or out of the
//! target's registered memory mapped into its address space.  A post therefore completes
//! *during* the call: when it returns SUCCESS the data is at its destination and every
//! requested event is queued.  Programs cannot tell (posts are documented non-blocking and
//! completion is only learned from events), and it makes three things simple (the one
//! exception, bulk RDMA to another machine, travels in the background: see
//! `post_async`):
//! - **Ordering** (`dlvr_mode`): delivery is in order per endpoint for every mode (stricter
//!   than `GNI_DLVMODE_PERFORMANCE` allows, which is permitted); `GNI_RDMAMODE_FENCE` is
//!   implied.  `dlvr_mode` and `rdma_mode` are accepted and otherwise ignored.
//! - **EpUnbind** sees `EpState.in_flight` non-zero only while a post is inside this module
//!   (it is incremented before the data moves and decremented right after), so NOT_DONE
//!   is answered exactly while a transaction is really in progress.  Transfers of up to
//!   `HOLD_MAX` bytes move while the post holds the EP lock (one lock per post), so they
//!   are never seen in flight: EpUnbind waits for the lock and then finds them done.
//! - **LOCAL vs GLOBAL** events (RDMA): both are produced after the data has arrived.
//!   Both carry the EP's local_event data (digest CORRECTION: every event on the
//!   initiator's CQ does; default the bound `remote_id`).
//!
//! **Pinned posts.**  A small FMA put, RDMA put, AMO or FMA/RDMA get (local memory
//! addressed by virtual address; a REMOTE event only for puts, queued at the target
//! registration's pinned notify ring) into or from a registration the endpoint has pinned
//! (`Binding::pins`: one that missed twice recently, four per endpoint; for a fetching
//! AMO, an RDMA source or a get's destination our own registration too) moves after the
//! pins' few checks (`rma::Pinned`: registration generation, backing, bounds, alignment)
//! instead of resolving the handles and validating them again, in [`pinned_post`] before
//! the general checks (gets: [`pinned_get`], first thing in the general path).  Anything
//! the pins cannot serve takes the general path, which gives the exact outcome (tests:
//! c-tests/ugni/data_put_pins.c, data_get_pinned.c).
//!
//! **Checks at post time** (the call's return code; nothing moves and no event is queued):
//! NULL/invalid EP or descriptor, EP not bound, invalid `src_cq_hndl`, no CQ for a
//! requested local event -> INVALID_PARAM; a `type` the call does not take, an unknown
//! `amo_cmd`, `cq_mode` bits beyond LOCAL|GLOBAL|REMOTE, DUAL events on RDMA without
//! `GNI_CDM_MODE_DUAL_EVENTS` -> INVALID_PARAM; lengths: zero-length GET/AMO and lengths
//! past [`FMA_MAX_LENGTH`]/[`RDMA_MAX_LENGTH`] -> INVALID_PARAM, an AMO length other than
//! its operand size -> INVALID_PARAM; alignment (GET: local_addr, remote_addr and length
//! multiples of 4; AMO: addresses aligned to the operand, 8 bytes, 4 for the Aries `_S`
//! commands) -> ALIGNMENT_ERROR; `local_mem_hndl` (required for GET, fetching AMO, every
//! RDMA and the flagged variants; for an FMA PUT only when it is segmented) not naming a
//! live registration of this process that covers the local range (for a segmented one:
//! offset + length at most its total length) -> INVALID_PARAM, and a READ_ONLY one as the
//! destination of a GET/fetch -> PERMISSION_ERROR; too many outstanding descriptors ->
//! ERROR_RESOURCE.
//!
//! **Routing.**  A post goes to the process its `remote_mem_hndl` names (the handle carries
//! its owner; the bound NIC address must be that process's node, else a transaction
//! error): `remote_id` routes nothing (see `Ep::route`).  Remote handles are then resolved
//! by `memhandle::RemoteMem`: plain handles name a registration and a virtual address;
//! symmetric vMDH handles are looked up in the vMDH table of the instance bound as
//! `remote_id`; multi-segment handles take offsets, split at segment boundaries (see
//! crate::memreg).  Local handles may be plain, vMDH or multi-segment, the last with
//! `local_addr` an offset and pieces split at both sides' segment boundaries
//! (`crate::memreg::LocalMem`, one path for every post type).
//!
//! **Transaction errors** (the remote side refuses: out of bounds, read-only, stale or
//! forged handle, other protection domain, dead or unknown peer) touch nothing at the
//! target and are reported as a local POST event whose status field holds the
//! [`Status`] (GNI_CqGetEvent -> TRANSACTION_ERROR, GNI_GetCompleted -> the descriptor with
//! `status` set, GNI_CqErrorStr -> the text).  The error event is queued even for
//! SILENT posts (an error is never lost silently), on the same CQ a GLOBAL event would use.
//!
//! **cq_mode.**  GLOBAL: a local event (source LOCAL, data = the EP's local_event data,
//! aux = descriptor token).  LOCAL (RDMA): the same.  On FMA
//! a LOCAL bit is read as GLOBAL (digest 8.13: lenient).  DUAL on RDMA: two events, two
//! tokens of the same descriptor.  REMOTE: an event on the dst CQ of the target
//! registration (`remote_mem_hndl`), data = the EP's remote_event data, queued after the
//! data is visible; none when that registration has no CQ.  SILENT: none.
//!
//! **Post types** (PostFma): FMA_PUT, FMA_PUT_W_SYNCFLAG (after the payload the 64-bit
//! `sync_flag_value` is stored at `sync_flag_addr`, which must lie in the region of
//! `remote_mem_hndl`; an 8-byte-aligned flag is stored with one atomic 64-bit write, so a
//! target polling it never sees a torn value), FMA_GET, AMO, FMA_GET_W_FLAG and AMO_W_FLAG
//! (Aries flagged responses: after the response data lands at `local_addr`, a 32-bit flag
//! of [`GNI_FMA_FLAGGED_RESPONSE_SIZE`] bytes is stored at `local_addr + length`; its
//! value is the low 32 bits of `sync_flag_value`, or 1 when those are zero; the local
//! registration must cover the flag too).  PostRdma: RDMA_PUT, RDMA_GET.  PostCqWrite:
//! CQWRITE (the low 48 bits of `cqwrite_value` arrive as a CQ-write entry on the dst CQ
//! of `remote_mem_hndl`'s registration; a registration without a CQ is a transaction
//! error "operation not possible on the target memory").
//!
//! **AMOs** ([`decode_amo`]): every `gni_fma_cmd_type_t` of the sheet.  Fetching commands
//! (no 0x100 bit) return the previous value at `local_addr`; `_C` (cached) variants are
//! the same operation; operands: ADD/AND/OR/XOR/SWAP/IMIN/IMAX/FPADD/FPMIN/FPMAX use
//! `first_operand`; CSWAP: first = compare, second = new value; AX/FAX: new =
//! (old & first) ^ second.  IMIN/IMAX are signed; FP* are IEEE (f64, or f32 for `_S`).
//! The `_S` commands work on 32-bit words (low 32 bits of the operands).

use crate::cqe::{self, Status};
use crate::memhandle::{self, RemoteMem};
use crate::memreg::LocalMem;
use crate::objects::{Binding, Cq, Ep, Nic, Parked, PostSlot, CQS, EPS};
use crate::types::*;
use softnic_fabric::atomic::{AmoOp, AmoWidth};
use softnic_fabric::mem::{CrayHandle, MemKey};
use softnic_fabric::rma::Live;
use std::sync::Arc;

/// Largest FMA transfer (the size of a Gemini FMA window).  Longer -> INVALID_PARAM.
pub const FMA_MAX_LENGTH: u64 = 1 << 30;
/// Largest RDMA (BTE) transfer: the BTE length field is 32 bits, kept a multiple of 4.
pub const RDMA_MAX_LENGTH: u64 = (1 << 32) - 4;
/// Bytes of the flag of the flagged-response posts (`GNI_FMA_FLAGGED_RESPONSE_SIZE`).
pub const GNI_FMA_FLAGGED_RESPONSE_SIZE: u64 = 4;
/// Largest transfer moved while holding the EP lock (see `post`).
const HOLD_MAX: u64 = 64 * 1024;

const MODE_LOCAL: u16 = GNI_CQMODE_LOCAL_EVENT as u16;
const MODE_GLOBAL: u16 = GNI_CQMODE_GLOBAL_EVENT as u16;
const MODE_REMOTE: u16 = GNI_CQMODE_REMOTE_EVENT as u16;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Engine {
    Fma,
    Rdma,
    CqWrite,
}

impl Engine {
    /// Does this engine's call take posts of type `t`?  (The CE type is an FMA post of
    /// its own kind: crate::ce.)
    #[inline(always)]
    fn takes(self, t: gni_post_type_t) -> bool {
        match self {
            Engine::Fma => matches!(t, GNI_POST_FMA_PUT | GNI_POST_FMA_PUT_W_SYNCFLAG | GNI_POST_FMA_GET | GNI_POST_FMA_GET_W_FLAG | GNI_POST_AMO | GNI_POST_AMO_W_FLAG | GNI_POST_CE),
            Engine::Rdma => matches!(t, GNI_POST_RDMA_PUT | GNI_POST_RDMA_GET),
            Engine::CqWrite => t == GNI_POST_CQWRITE,
        }
    }

    fn api(self) -> &'static str {
        match self {
            Engine::Fma => "GNI_PostFma",
            Engine::Rdma => "GNI_PostRdma",
            Engine::CqWrite => "GNI_PostCqWrite",
        }
    }
}

/// A decoded AMO command.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Amo {
    pub width: AmoWidth,
    pub op: AmoOp,
    pub fetch: bool,
}

/// What a validated post does.
enum Op {
    Put { len: u64, sync: Option<(u64, u64)> },
    Get { len: u64, flag: Option<u32> },
    Amo { amo: Amo, flag: Option<u32> },
    CqWrite(u64),
}

/// Decodes `cmd` with the descriptor's operands; None for a value that is not a
/// `gni_fma_cmd_type_t` of the sheet.  Inlined: the pinned AMO path decodes on every post.
#[inline(always)]
pub fn decode_amo(cmd: u32, first: u64, second: u64) -> Option<Amo> {
    if cmd & 0x40 == 0 {
        // First-generation (Gemini) commands: 0x00N fetching, 0x10N not; 0x010 = cached.
        if cmd & !0x11f != 0 {
            return None;
        }
        let op = match cmd & 0xf {
            0x8 => AmoOp::Add(first),
            0x9 => AmoOp::And(first),
            0xa => AmoOp::Or(first),
            0xb => AmoOp::Xor(first),
            0xc => AmoOp::AndXor { and: first, xor: second },
            0xd => AmoOp::CompareSwap { compare: first, swap: second },
            _ => return None,
        };
        return Some(Amo { width: AmoWidth::I64, op, fetch: cmd & 0x100 == 0 });
    }
    // Aries second generation: 0x040 set; 0x100 = no result; 0x200 = 32-bit (`_S`, then
    // bit 0 is clear; 64-bit commands have bit 0 set); 0x020 = cached; bits 4..1 = op.
    if cmd & !0x37f != 0 {
        return None;
    }
    let short = cmd & 0x200 != 0;
    if short == (cmd & 1 != 0) {
        return None;
    }
    let (int, float) = if short { (AmoWidth::I32, AmoWidth::F32) } else { (AmoWidth::I64, AmoWidth::F64) };
    let (width, op) = match cmd & 0x1e {
        0x00 => (int, AmoOp::And(first)),
        0x02 => (int, AmoOp::Or(first)),
        0x04 => (int, AmoOp::Xor(first)),
        0x06 => (int, AmoOp::Swap(first)),
        0x08 => (int, AmoOp::AndXor { and: first, xor: second }),
        0x0a => (int, AmoOp::CompareSwap { compare: first, swap: second }),
        0x10 => (int, AmoOp::Min(first)),
        0x12 => (int, AmoOp::Max(first)),
        0x14 => (int, AmoOp::Add(first)),
        0x18 => (float, AmoOp::Min(first)),
        0x1a => (float, AmoOp::Max(first)),
        0x1c => (float, AmoOp::Add(first)),
        _ => return None,
    };
    Some(Amo { width, op, fetch: cmd & 0x100 == 0 })
}

/// Checks a local buffer addressed by virtual address (an SMSG mailbox): `[addr,
/// addr+len)` must lie in a live registration of this process named by `h`
/// (INVALID_PARAM otherwise, and for a segmented handle), writable if `write` (else
/// PERMISSION_ERROR).
pub(crate) fn check_local(nic: &Nic, h: &gni_mem_handle_t, addr: u64, len: u64, write: bool) -> Result<(), gni_return_t> {
    match LocalMem::open(nic, h, addr, len, write)? {
        LocalMem::Virtual(_) => Ok(()),
        LocalMem::Segments(_) => Err(GNI_RC_INVALID_PARAM),
    }
}

/// Flag value of the flagged-response posts.
fn flag_value(d: &gni_post_descriptor_t) -> u32 {
    match d.sync_flag_value as u32 {
        0 => 1,
        v => v,
    }
}

/// Validates the descriptor's type, lengths, alignment and local handle; resolves where
/// `local_addr` points.
fn decode(engine: Engine, d: &gni_post_descriptor_t, nic: &Nic) -> Result<(Op, LocalMem), gni_return_t> {
    let len = d.length;
    let max = if engine == Engine::Rdma { RDMA_MAX_LENGTH } else { FMA_MAX_LENGTH };
    let get_checks = |extra: u64| -> Result<LocalMem, gni_return_t> {
        if len == 0 || len > max {
            return Err(GNI_RC_INVALID_PARAM);
        }
        if d.local_addr % 4 != 0 || d.remote_addr % 4 != 0 || len % 4 != 0 {
            return Err(GNI_RC_ALIGNMENT_ERROR);
        }
        LocalMem::open(nic, &d.local_mem_hndl, d.local_addr, len + extra, true)
    };
    let amo_checks = |flagged: bool| -> Result<(Amo, LocalMem), gni_return_t> {
        let amo = decode_amo(d.amo_cmd, d.first_operand, d.second_operand).ok_or(GNI_RC_INVALID_PARAM)?;
        let n = amo.width.bytes() as u64;
        if len == 0 {
            return Err(GNI_RC_INVALID_PARAM);
        }
        if len % n != 0 || d.remote_addr % n != 0 || (amo.fetch && d.local_addr % n != 0) {
            return Err(GNI_RC_ALIGNMENT_ERROR);
        }
        if len != n {
            return Err(GNI_RC_INVALID_PARAM);
        }
        if amo.fetch || flagged {
            let extra = if flagged { GNI_FMA_FLAGGED_RESPONSE_SIZE } else { 0 };
            return Ok((amo, LocalMem::open(nic, &d.local_mem_hndl, d.local_addr, n + extra, true)?));
        }
        Ok((amo, LocalMem::Virtual(None)))
    };
    match (engine, d.type_) {
        (Engine::Fma, GNI_POST_FMA_PUT) | (Engine::Fma, GNI_POST_FMA_PUT_W_SYNCFLAG) | (Engine::Rdma, GNI_POST_RDMA_PUT) => {
            if len > max {
                return Err(GNI_RC_INVALID_PARAM);
            }
            let local = if engine == Engine::Rdma { LocalMem::open(nic, &d.local_mem_hndl, d.local_addr, len, false)? } else { LocalMem::source(nic, &d.local_mem_hndl, d.local_addr, len)? };
            // Address 0 is no source buffer, but offset 0 of a segmented registration is.
            if len > 0 && d.local_addr == 0 && !local.is_segmented() {
                return Err(GNI_RC_INVALID_PARAM);
            }
            let sync = (d.type_ == GNI_POST_FMA_PUT_W_SYNCFLAG).then_some((d.sync_flag_addr, d.sync_flag_value));
            Ok((Op::Put { len, sync }, local))
        }
        (Engine::Fma, GNI_POST_FMA_GET) | (Engine::Rdma, GNI_POST_RDMA_GET) => Ok((Op::Get { len, flag: None }, get_checks(0)?)),
        (Engine::Fma, GNI_POST_FMA_GET_W_FLAG) => Ok((Op::Get { len, flag: Some(flag_value(d)) }, get_checks(GNI_FMA_FLAGGED_RESPONSE_SIZE)?)),
        (Engine::Fma, GNI_POST_AMO) => {
            let (amo, local) = amo_checks(false)?;
            Ok((Op::Amo { amo, flag: None }, local))
        }
        (Engine::Fma, GNI_POST_AMO_W_FLAG) => {
            let (amo, local) = amo_checks(true)?;
            Ok((Op::Amo { amo, flag: Some(flag_value(d)) }, local))
        }
        // A CQ write has no local buffer: its local handle is not read.
        (Engine::CqWrite, GNI_POST_CQWRITE) => Ok((Op::CqWrite(d.cqwrite_value), LocalMem::Virtual(None))),
        _ => Err(GNI_RC_INVALID_PARAM),
    }
}

/// Runs a validated operation against the target.  `local`: where `local_addr` points.
/// `notify`: the REMOTE event entry, when one is wanted; a put delivers it itself (after
/// its data, in the same request on the network engine), and then `Ok(true)` says so;
/// other operations leave it to the caller.
fn execute(rm: &RemoteMem, peer: Live<'_>, d: &gni_post_descriptor_t, op: &Op, local: &LocalMem, pd: u64, notify: Option<u64>) -> softnic_fabric::Result<bool> {
    match *op {
        Op::Put { len, sync } => {
            let flag = match sync {
                Some((faddr, fval)) => {
                    let (fkey, faddr) = rm.word(faddr, 8)?;
                    Some((fkey, faddr, fval))
                }
                None => None,
            };
            let spans = memhandle::pair(rm.pieces(d.remote_addr, len)?.as_slice(), local.spans(d.local_addr, len).as_slice());
            let parts = spans.map(|(k, ra, la, n)| (k, ra, local_bytes(la, n)));
            let notify = notify.map(|e| (rm.notify_key(), e));
            peer.put_compound(parts.as_slice(), flag, notify, pd)?;
            Ok(notify.is_some())
        }
        Op::Get { len, flag } => {
            let spans = memhandle::pair(rm.pieces(d.remote_addr, len)?.as_slice(), local.spans(d.local_addr, len).as_slice());
            for &(key, addr, la, n) in spans.as_slice() {
                // SAFETY: checked by `LocalMem::open`: inside a writable registration of ours.
                let dst = unsafe { std::slice::from_raw_parts_mut(la as *mut u8, n as usize) };
                peer.get(key, addr, dst, pd)?;
            }
            if let Some(v) = flag {
                local.store(d.local_addr + len, v as u64, GNI_FMA_FLAGGED_RESPONSE_SIZE);
            }
            Ok(false)
        }
        Op::Amo { amo, flag } => {
            let n = amo.width.bytes() as u64;
            let (key, addr) = rm.word(d.remote_addr, n)?;
            let old = peer.atomic(key, addr, amo.width, amo.op, pd)?;
            if amo.fetch {
                local.store(d.local_addr, old, n);
            }
            if let Some(v) = flag {
                local.store(d.local_addr + n, v as u64, GNI_FMA_FLAGGED_RESPONSE_SIZE);
            }
            Ok(false)
        }
        Op::CqWrite(v) => match peer.notify_ring(rm.notify_key(), pd)? {
            Some(loc) => peer.post_event(&loc, &cqe::make_cqwrite(v), true).map(|_| false),
            None => Err(softnic_fabric::Error::Unsupported),
        },
    }
}

/// `n` bytes of this process's memory at `addr` (empty when `n` is 0, whatever `addr`).
fn local_bytes<'a>(addr: u64, n: u64) -> &'a [u8] {
    if n == 0 {
        return &[];
    }
    // SAFETY: a source checked at post time (a registration of ours, or an FMA PUT source,
    // which needs none: the CPU reads it, as on the hardware).
    unsafe { std::slice::from_raw_parts(addr as *const u8, n as usize) }
}

/// `n` bytes of this process's memory at `addr`, to be written (empty when `n` is 0).
fn local_bytes_mut<'a>(addr: u64, n: u64) -> &'a mut [u8] {
    if n == 0 {
        return &mut [];
    }
    // SAFETY: a get's destination checked at post time: inside a registration of ours
    // pinned for writing (the CPU writes it, as the NIC does on the hardware).
    unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, n as usize) }
}

/// Queues the REMOTE event of a completed post at the target registration's dst CQ
/// (best effort: a missing or full CQ drops it, as the hardware does).
pub(crate) fn remote_event(peer: Live<'_>, key: MemKey, pd: u64, entry: u64) {
    peer.notify(key, entry, pd);
}

/// The endpoint's lookup, inlined into each of the three exports (a call less per post).
#[inline(always)]
fn post(engine: Engine, ep_h: gni_ep_handle_t, desc: *mut gni_post_descriptor_t) -> gni_return_t {
    EPS.with(ep_h as *const _, |ep| post_ep(engine, ep, ep_h, desc)).unwrap_or(GNI_RC_INVALID_PARAM)
}

/// A post on endpoint `ep` (handle `ep_h`), found.  Out of line: `Table::with` has it on
/// its hit and its miss path.  With no observer (tracing, the checker, fault injection:
/// decided off, three loads) it is the post alone; with one, [`post_observed`].
#[inline(never)]
fn post_ep(engine: Engine, ep: &Ep, ep_h: gni_ep_handle_t, desc: *mut gni_post_descriptor_t) -> gni_return_t {
    if !softnic_fabric::observers_surely_off() {
        return post_observed(engine, ep, ep_h, desc);
    }
    // SAFETY: NULL or the caller's descriptor; one field read.
    if !unsafe { desc.as_ref() }.is_some_and(|d| engine.takes(d.type_)) {
        return GNI_RC_INVALID_PARAM;
    }
    let pinned = if engine != Engine::CqWrite { pinned_post(engine, ep, desc) } else { None };
    match pinned {
        Some(rc) => rc,
        None => post_on(engine, ep, ep_h, desc, false),
    }
}

/// [`post_ep`] when an observer may be on (or is not decided yet): the post's span, a
/// fault injected, the checker's watches, the timeline's asynchronous span.
#[cold]
#[inline(never)]
fn post_observed(engine: Engine, ep: &Ep, ep_h: gni_ep_handle_t, desc: *mut gni_post_descriptor_t) -> gni_return_t {
    let _span = softnic_fabric::trace::span("ugni", engine.api()).map(|s| trace_args(s, ep, desc));
    // SOFTNIC_FAULTS=transfer: a post that passes its checks completes with a
    // network transaction error and moves nothing (the general path reports it).
    let lost = softnic_fabric::faults::hit(softnic_fabric::faults::Point::Transfer);
    // A NULL descriptor or a type this call does not take is INVALID_PARAM, as is every
    // check `post_on` makes before it looks at the type: answered here, before the EP
    // lock and the descriptor copy (cost_rejected).
    // SAFETY: NULL or the caller's descriptor; one field read.
    if !unsafe { desc.as_ref() }.is_some_and(|d| engine.takes(d.type_)) {
        return GNI_RC_INVALID_PARAM;
    }
    let pinned = if engine != Engine::CqWrite && !lost { pinned_post(engine, ep, desc) } else { None };
    let rc = match pinned {
        Some(rc) => rc,
        None => post_on(engine, ep, ep_h, desc, lost),
    };
    if rc == GNI_RC_SUCCESS && softnic_fabric::check::enabled() {
        check_watch(engine, desc);
        check_race(engine, ep, desc);
    }
    if rc == GNI_RC_SUCCESS && softnic_fabric::trace::enabled() {
        trace_begin(desc);
    }
    rc
}

/// SOFTNIC_CHECK: the checker's id space of uGNI descriptors.
pub(crate) const CHECK_DESC: u64 = 0x6e69;

/// SOFTNIC_CHECK: a put that completes with an event reads its source until the program
/// takes the completion back (GNI_GetCompleted); the checker watches those bytes till then
/// (on the hardware the NIC may still be reading them).  Sources addressed by offset (a
/// segmented local handle) are not watched.
#[cold]
fn check_watch(engine: Engine, desc: *mut gni_post_descriptor_t) {
    // SAFETY: the caller's descriptor, posted successfully (so readable).
    let Some(d) = (unsafe { desc.as_ref() }) else { return };
    let reads_source = matches!(d.type_, GNI_POST_FMA_PUT | GNI_POST_FMA_PUT_W_SYNCFLAG | GNI_POST_RDMA_PUT);
    if !reads_source || d.cq_mode & (MODE_LOCAL | MODE_GLOBAL) == 0 || d.local_mem_hndl.qword1 & memhandle::SEG_FLAG != 0 || d.local_addr == 0 {
        return;
    }
    let (api, len) = (engine.api(), d.length as usize);
    // SAFETY: the post read these bytes just now (a source it accepted).
    unsafe { softnic_fabric::check::watch(CHECK_DESC, desc as usize, api, || format!("descriptor {desc:p} ({len} bytes)"), d.local_addr as usize, len) };
}

/// SOFTNIC_CHECK: a put or get that completes with a local event is in flight at its
/// target until the program takes the completion back (GNI_GetCompleted); another
/// process's access to the same bytes posted meanwhile is a data race (fabric check.rs,
/// "Races").  The target is the remote handle's owner at the endpoint's remote NIC
/// address, the bytes its `remote_addr` range.  Symmetric (VMDH) handles, AMOs (atomic
/// against each other) and posts without a local event (no completion is ever seen) are
/// not tracked.
#[cold]
fn check_race(engine: Engine, ep: &Ep, desc: *mut gni_post_descriptor_t) {
    // SAFETY: the caller's descriptor, posted successfully (so readable).
    let Some(d) = (unsafe { desc.as_ref() }) else { return };
    let write = match d.type_ {
        GNI_POST_FMA_PUT | GNI_POST_FMA_PUT_W_SYNCFLAG | GNI_POST_RDMA_PUT => true,
        GNI_POST_FMA_GET | GNI_POST_FMA_GET_W_FLAG | GNI_POST_RDMA_GET => false,
        _ => return,
    };
    let h = &d.remote_mem_hndl;
    if d.cq_mode & (MODE_LOCAL | MODE_GLOBAL) == 0 || h.qword1 & memhandle::VMDH_FLAG != 0 || d.length == 0 {
        return;
    }
    let Some(nic_addr) = ep.state().binding.as_ref().map(|b| b.remote_addr) else { return };
    let owner = CrayHandle::from_words([h.qword1 & !CrayHandle::KIND_BITS, h.qword2]).owner;
    let to = softnic_fabric::check::Target { space: (CHECK_DESC << 32) | nic_addr as u64, target: ((owner.slot as u64) << 32) | owner.gen as u64, addr: d.remote_addr, len: d.length };
    let (api, len) = (engine.api(), d.length);
    let what = || format!("descriptor {desc:p} ({} of {len} bytes to NIC address {nic_addr:#x})", if write { "a put" } else { "a get" });
    softnic_fabric::check::remote_access(CHECK_DESC, desc as usize, api, what, to, write);
}

/// SOFTNIC_CHECK: a get hands its destination to the program at its completion
/// (GNI_GetCompleted); from the moment its data landed (now: its event is queued next)
/// till then, a write of the program's may be undone on the hardware by data landing
/// after it.  The checker watches those bytes.  Destinations addressed by offset (a
/// segmented local handle) are not watched.
#[cold]
fn check_watch_filled(desc: *mut gni_post_descriptor_t) {
    // SAFETY: the caller's descriptor, which stays the caller's until its completion.
    let Some(d) = (unsafe { desc.as_ref() }) else { return };
    let fills = matches!(d.type_, GNI_POST_FMA_GET | GNI_POST_FMA_GET_W_FLAG | GNI_POST_RDMA_GET);
    if !fills || d.cq_mode & (MODE_LOCAL | MODE_GLOBAL) == 0 || d.local_mem_hndl.qword1 & memhandle::SEG_FLAG != 0 || d.local_addr == 0 {
        return;
    }
    let api = if d.type_ == GNI_POST_RDMA_GET { "GNI_PostRdma" } else { "GNI_PostFma" };
    let len = d.length as usize;
    softnic_fabric::check::watch_filled(CHECK_DESC, desc as usize, api, || format!("descriptor {desc:p} ({len} bytes)"), d.local_addr as usize, len);
}

/// The timeline: a post with a local event, from the post to GNI_GetCompleted of its
/// descriptor (an asynchronous span, "in flight").
#[cold]
fn trace_begin(desc: *const gni_post_descriptor_t) {
    // SAFETY: the caller's descriptor, posted successfully.
    let Some(d) = (unsafe { desc.as_ref() }) else { return };
    if d.cq_mode & (MODE_LOCAL | MODE_GLOBAL) != 0 {
        softnic_fabric::trace::async_begin("ugni", TRACE_IN_FLIGHT, desc as u64, &[("type", d.type_ as u64), ("length", d.length)]);
    }
}

/// The name of a post's asynchronous span (see `trace_begin`).
pub(crate) const TRACE_IN_FLIGHT: &str = "post in flight";

/// What the timeline shows of a post: its type, length and the endpoint's remote_id.
#[cold]
fn trace_args(s: softnic_fabric::trace::Span, ep: &Ep, desc: *const gni_post_descriptor_t) -> softnic_fabric::trace::Span {
    // SAFETY: NULL or the caller's descriptor.
    let (ty, len) = unsafe { desc.as_ref() }.map_or((0, 0), |d| (d.type_ as u64, d.length));
    let rid = ep.state().binding.as_ref().map_or(u64::MAX, |b| b.remote_id as u64);
    s.arg("type", ty).arg("length", len).arg("remote_id", rid)
}

/// The whole of a small FMA put, AMO or RDMA put that the endpoint's pins serve (see the
/// module doc), in as few steps as it needs: only the fields it uses are read, and only a
/// post that would succeed on the general path is taken (plain handles, one GLOBAL/LOCAL
/// or no event on the endpoint's CQ, the routed owner's pinned registration, our pinned
/// registration for a fetched value or an RDMA source).  None, with nothing done, for anything else:
/// `post_on` then does all the checks and gives the exact outcome.
///
/// Inlining here is tuned (issue 25, round 6, Ir per call measured with callgrind on
/// `ugni_bench op_cost` and `amo_fadd_lat`; baseline PostFma put with its event 430, AMO
/// fetch-add 604): each of these made the post dearer, through register pressure in
/// `post_ep`'s one frame: this function out of line (+35 put, +32 AMO),
/// `Pins::find_with_ring` always inlined (+30, +27), `PinnedRef::put` and the 4-16 byte
/// case of `copy::copy` always inlined (+5), `PinnedRef::store_word_at` always inlined
/// (+3 AMO).  Moving `Cq::push_post`'s entry builder out of its closure changed nothing
/// (the closure stays a call).
#[inline(always)]
fn pinned_post(engine: Engine, ep: &Ep, desc: *mut gni_post_descriptor_t) -> Option<gni_return_t> {
    // SAFETY: NULL or the caller's descriptor, read field by field.
    let d = unsafe { desc.as_ref() }?;
    let op = match (engine, d.type_) {
        (Engine::Fma, GNI_POST_FMA_PUT) => PinnedOp::Put(None),
        (Engine::Fma, GNI_POST_FMA_PUT_W_SYNCFLAG) => PinnedOp::Put(Some((d.sync_flag_addr, d.sync_flag_value))),
        // An RDMA put reads a registration of ours: its pin must cover the source (below).
        // One event (LOCAL or GLOBAL); DUAL takes the general path.
        (Engine::Rdma, GNI_POST_RDMA_PUT) if d.length > 0 && d.cq_mode & (MODE_LOCAL | MODE_GLOBAL) != (MODE_LOCAL | MODE_GLOBAL) => PinnedOp::Put(None),
        (Engine::Fma, GNI_POST_AMO) => {
            let amo = decode_amo(d.amo_cmd, d.first_operand, d.second_operand)?;
            let n = amo.width.bytes() as u64;
            if d.length != n || d.remote_addr % n != 0 || (amo.fetch && d.local_addr % n != 0) {
                return None;
            }
            PinnedOp::Amo(amo)
        }
        _ => return None,
    };
    let mode = d.cq_mode;
    let lh = d.local_mem_hndl;
    // A REMOTE event (puts only) goes to the target registration's pinned notify ring.
    let want_remote = mode & MODE_REMOTE != 0;
    if want_remote && !matches!(op, PinnedOp::Put(_)) {
        return None;
    }
    if mode & !(MODE_LOCAL | MODE_GLOBAL | MODE_REMOTE) != 0 || !d.src_cq_hndl.is_null() || d.length > HOLD_MAX || (d.length > 0 && d.local_addr == 0) || lh.qword1 & (memhandle::SEG_FLAG | memhandle::VMDH_FLAG) != 0 {
        return None;
    }
    let want_event = mode & (MODE_LOCAL | MODE_GLOBAL) != 0;
    let cq = quick_cq(ep, want_event)?;
    let words = [d.remote_mem_hndl.qword1, d.remote_mem_hndl.qword2];
    let st = ep.state();
    let b = st.binding.as_ref()?;
    let peer = routed(b, words)?;
    // One search for the target's pin and its notify ring; a REMOTE event needs the ring
    // looked up already (the general path does that).
    let (qpin, ring) = b.pins.find_with_ring(words, d.remote_addr, d.length)?;
    let ring = if want_remote { Some(ring?) } else { None };
    let pin = qpin.pinned();
    if !Arc::ptr_eq(pin.peer(), peer) {
        return None; // a pin made through an earlier route to the same owner
    }
    // The peer's liveness (the rate-limited probe of `Peer::seems_alive`) and the pin's
    // rows, in one step.
    let r = qpin.check().ok()?;
    // Only the REMOTE event's push needs the `Live` (the verdict just made).
    let live = if ring.is_some() { Some(peer.live_probed().ok()?) } else { None };
    // Everything the operation touches is checked before a token is taken, so from the
    // token on it cannot fail (the checks are those of the stores below).
    let (len, raddr) = (d.length, d.remote_addr);
    let local = match op {
        PinnedOp::Put(sync) => {
            if !r.covers(raddr, len) || sync.is_some_and(|(faddr, _)| !r.can_store_u64_at(faddr)) {
                return None;
            }
            if engine == Engine::Rdma {
                // An RDMA source is a registration of ours, pinned too.
                let lpin = b.pins.find_quick([lh.qword1, lh.qword2], d.local_addr, len)?;
                if !lpin.check().ok()?.covers(d.local_addr, len) {
                    return None;
                }
            }
            None
        }
        PinnedOp::Amo(amo) => {
            let n = amo.width.bytes();
            if !r.can_store_at(raddr, n) {
                return None;
            }
            if amo.fetch {
                // The fetched value lands in a registration of ours, pinned too.
                let lpin = b.pins.find_quick([lh.qword1, lh.qword2], d.local_addr, n as u64)?;
                let l = lpin.check().ok()?;
                if !l.can_store_at(d.local_addr, n) {
                    return None;
                }
                Some(l)
            } else {
                None
            }
        }
    };
    // Too many descriptors outstanding: the general path answers ERROR_RESOURCE.
    if want_event && cq.is_some_and(|cq| cq.slab_exhausted()) {
        return None;
    }
    // SAFETY: GNI-owned fields of the caller's descriptor.
    unsafe {
        (*desc).status = 0;
        (*desc).cq_mode_complete = 0;
    }
    // The event's place, taken before the data can be seen when peers can queue events
    // on the CQ (events are causal: `Cq::begin_post`).
    let slot = if want_event { cq.map(Cq::begin_post) } else { None };
    let mut status = Status::Ok;
    match op {
        PinnedOp::Put(sync) => {
            // Checked above: neither store can fail.
            let _ = r.put_at(raddr, local_bytes(d.local_addr, len));
            if let Some((faddr, fval)) = sync {
                let _ = r.store_u64_at(faddr, fval);
            }
        }
        PinnedOp::Amo(amo) => match r.atomic_at(raddr, amo.width, amo.op) {
            Ok(old) => {
                if let Some(l) = local {
                    // Checked above: cannot fail.
                    let _ = l.store_word_at(d.local_addr, old, amo.width.bytes());
                }
            }
            // Not an operation the fabric applies (decode_amo makes none): a transaction
            // error, as the general path would report it.
            Err(e) => status = Status::from_fabric(e),
        },
    }
    if let (Some(ring), Some(live), Status::Ok) = (ring, live, status) {
        remote_event_pinned(ring, pin, live, ep.remote_event(&st), ep.nic.pd_key());
    }
    let local_data = Ep::local_event(&st);
    drop(st);
    if let Some(slot) = slot {
        slot.publish(desc, status, local_data);
    }
    Some(GNI_RC_SUCCESS)
}

/// [`pinned_post`] for an FMA or RDMA get (the engine's type, checked by the caller): the
/// same steps, the data copied from the target's pin into our registration's, which must
/// be pinned too (for writing, as `LocalMem::open` checks a destination).  What `decode`
/// refuses (empty, not 4-byte aligned), DUAL events and the checker (which watches the
/// destination) take the general path.  Tried first by `post_on`, not by `pinned_post`:
/// a get's branch there, even one calling this function, made every put dearer (+13-18
/// Ir: register pressure in `post_ep`'s frame).
#[inline(never)]
fn pinned_get(ep: &Ep, desc: *mut gni_post_descriptor_t) -> Option<gni_return_t> {
    // SAFETY: the caller's descriptor (non-NULL), read field by field.
    let d = unsafe { &*desc };
    let (mode, lh, len, raddr, laddr) = (d.cq_mode, d.local_mem_hndl, d.length, d.remote_addr, d.local_addr);
    if len == 0 || len > HOLD_MAX || (len | laddr | raddr) % 4 != 0 || laddr == 0 || softnic_fabric::check::enabled() {
        return None;
    }
    if mode & !(MODE_LOCAL | MODE_GLOBAL) != 0 || mode == MODE_LOCAL | MODE_GLOBAL || !d.src_cq_hndl.is_null() || lh.qword1 & (memhandle::SEG_FLAG | memhandle::VMDH_FLAG) != 0 {
        return None;
    }
    let want_event = mode != 0;
    let cq = quick_cq(ep, want_event)?;
    let words = [d.remote_mem_hndl.qword1, d.remote_mem_hndl.qword2];
    let st = ep.state();
    let b = st.binding.as_ref()?;
    let peer = routed(b, words)?;
    let qpin = b.pins.find_quick(words, raddr, len)?;
    if !Arc::ptr_eq(qpin.pinned().peer(), peer) {
        return None;
    }
    let r = qpin.check().ok()?;
    let lpin = b.pins.find_quick([lh.qword1, lh.qword2], laddr, len)?;
    if !r.covers(raddr, len) || !lpin.check().ok()?.covers(laddr, len) {
        return None;
    }
    if want_event && cq.is_some_and(|cq| cq.slab_exhausted()) {
        return None;
    }
    // SAFETY: GNI-owned fields of the caller's descriptor.
    unsafe {
        (*desc).status = 0;
        (*desc).cq_mode_complete = 0;
    }
    // Checked above (both ranges): cannot fail.
    let _ = r.get_at(raddr, local_bytes_mut(laddr, len));
    let local_data = Ep::local_event(&st);
    drop(st);
    if let (true, Some(cq)) = (want_event, cq) {
        cq.push_post(desc, Status::Ok, local_data);
    }
    Some(GNI_RC_SUCCESS)
}

/// The endpoint's CQ for a quick path's event (None inside when no event is wanted); None
/// when the quick path cannot serve the post: an event with no CQ, a detached NIC.
#[inline(always)]
fn quick_cq(ep: &Ep, want_event: bool) -> Option<Option<&Cq>> {
    let cq = ep.cq.as_deref();
    ((!want_event || cq.is_some()) && !ep.nic.is_detached()).then_some(cq)
}

/// What `Ep::route` would find for handle words `words`: the cached route's peer when the
/// handle's owner is the route's (probed alive by the pin's check that follows, whose
/// peer must be this one).
#[inline(always)]
fn routed(b: &Binding, words: [u64; 2]) -> Option<&Arc<softnic_fabric::rma::Peer>> {
    let (owner, peer) = b.route.as_ref()?;
    (CrayHandle::from_words([words[0] & !CrayHandle::KIND_BITS, words[1]]).owner == *owner).then_some(peer)
}

/// The operations [`pinned_post`] serves.
#[derive(Clone, Copy)]
enum PinnedOp {
    /// A put, with its sync flag (address, value).
    Put(Option<(u64, u64)>),
    Amo(Amo),
}

/// The general path (every post the pins do not serve).  Out of line: inlined, its big
/// frame would be set up on the pinned posts' path too.
#[inline(never)]
fn post_on(engine: Engine, ep: &Ep, ep_h: gni_ep_handle_t, desc: *mut gni_post_descriptor_t, lost: bool) -> gni_return_t {
    let api = engine.api();
    if desc.is_null() || ep.nic.is_detached() {
        return GNI_RC_INVALID_PARAM;
    }
    // Gets have their quick path here, not in `pinned_post` (see `pinned_get`).
    // SAFETY: the caller's descriptor, non-NULL.
    if !lost && matches!((engine, unsafe { (*desc).type_ }), (Engine::Fma, GNI_POST_FMA_GET) | (Engine::Rdma, GNI_POST_RDMA_GET)) {
        if let Some(rc) = pinned_get(ep, desc) {
            return rc;
        }
    }
    // SAFETY: the caller's descriptor; we read it once and write only the fields GNI owns.
    let d: gni_post_descriptor_t = unsafe { std::ptr::read(desc) };
    if d.type_ == GNI_POST_CE {
        // Contributions to a collective engine are FMA posts of their own kind.
        return if engine == Engine::Fma { crate::ce::post(ep, desc) } else { GNI_RC_INVALID_PARAM };
    }
    let pd = ep.nic.pd_key();

    // Events.
    let mode = d.cq_mode;
    if mode & !(MODE_LOCAL | MODE_GLOBAL | MODE_REMOTE) != 0 {
        return GNI_RC_INVALID_PARAM;
    }
    let (want_local, want_global) = match engine {
        Engine::Rdma => {
            let dual = mode & (MODE_LOCAL | MODE_GLOBAL) == (MODE_LOCAL | MODE_GLOBAL);
            if dual && ep.nic.cdm.modes & GNI_CDM_MODE_DUAL_EVENTS as u32 == 0 {
                return GNI_RC_INVALID_PARAM;
            }
            (mode & MODE_LOCAL != 0, mode & MODE_GLOBAL != 0)
        }
        // FMA: LOCAL is not an FMA event; read it as GLOBAL (digest 8.13).
        _ => (false, mode & (MODE_LOCAL | MODE_GLOBAL) != 0),
    };
    let want_remote = mode & MODE_REMOTE != 0 && engine != Engine::CqWrite;
    // The EP's own CQ is borrowed (no reference count traffic on the hot path).
    let cq_arc: Arc<Cq>;
    let cq: Option<&Cq> = if d.src_cq_hndl.is_null() {
        ep.cq.as_deref()
    } else {
        match CQS.get(d.src_cq_hndl as *const _) {
            Ok(c) => {
                cq_arc = c;
                Some(&*cq_arc)
            }
            Err(e) => return e,
        }
    };
    if (want_local || want_global) && cq.is_none() {
        return GNI_RC_INVALID_PARAM;
    }
    // One EP lock per post: binding check, event data, target and (for small transfers)
    // the data movement itself all happen under it.
    let st = ep.state();
    if st.binding.is_none() {
        return GNI_RC_INVALID_PARAM;
    }
    let (op, local) = match decode(engine, &d, &ep.nic) {
        Ok(v) => v,
        Err(rc) => return rc,
    };

    // One local event per wanted kind, each naming the descriptor (its token is taken
    // when the event is queued); none can be taken while the CQ's slab is full.
    let events = want_local as u8 + want_global as u8;
    if events > 0 && cq.is_some_and(|cq| cq.slab_exhausted()) {
        return GNI_RC_ERROR_RESOURCE;
    }
    // SAFETY: GNI-owned fields of the caller's descriptor.
    unsafe {
        (*desc).status = 0;
        (*desc).cq_mode_complete = 0;
    }

    // Route by the remote handle's owner (the bound address names its node).
    let local_data = Ep::local_event(&st);
    let remote_data = ep.remote_event(&st);
    let mut guard = Some(st);
    let peer_arc: Arc<softnic_fabric::rma::Peer>;
    let target = match ep.route(guard.as_mut().expect("held"), &d.remote_mem_hndl) {
        Err(None) => return GNI_RC_INVALID_PARAM,
        Err(Some(status)) => {
            guard = None;
            Err(status)
        }
        Ok(words) => {
            let st = guard.as_mut().expect("held");
            // RDMA to another machine (no REMOTE event) travels asynchronously whatever
            // its size (`post_async`), which needs the unlocked path.
            let remote_rdma = engine == Engine::Rdma && !want_remote && st.binding.as_ref().and_then(|b| b.route.as_ref()).is_some_and(|r| r.1.is_remote());
            if d.length <= HOLD_MAX && !remote_rdma {
                // Small transfers move under the EP lock (the peer is borrowed from the
                // binding), so no other thread can ever see them in flight.
                Ok((None, words))
            } else {
                // Large ones mark the EP (EpUnbind answers NOT_DONE meanwhile) and move
                // without the lock, so the EP's other calls are not held up by the copy.
                peer_arc = st.binding.as_ref().and_then(|b| b.route.as_ref()).expect("route() caches the peer").1.clone();
                st.in_flight += 1;
                guard = None;
                Ok((Some(&*peer_arc), words))
            }
        }
    };

    // The local events' places, taken before the transfer's data can be seen (see
    // `Cq::begin_post`).
    let mut slots: [Option<PostSlot<'_>>; 2] = [None, None];
    let result: Result<(), Status> = match target {
        Err(s) => Err(s),
        Ok(_) if lost => {
            if guard.is_none() {
                let mut st = ep.state();
                st.in_flight = st.in_flight.saturating_sub(1);
            }
            Err(Status::Network)
        }
        Ok((peer, words)) => {
            let unlocked = peer.is_some();
            let peer = match peer {
                Some(p) => p,
                None => &*guard.as_ref().expect("held").binding.as_ref().and_then(|b| b.route.as_ref()).expect("routed").1,
            };
            // Whatever the way the data goes: a large copy on this machine, a round trip to
            // another one (the reply to the post and the target's reaction arrive
            // together, and the thread that reads them would otherwise queue the
            // reaction's event before this thread, woken by the reply, queued ours: 4576
            // of 5000 rounds of data_causal over two virtual hosts did), or RDMA in the
            // background (its completion and the reaction come by different ways with
            // libfabric's RMA).  The CQ's later events wait for the post's end meanwhile;
            // a transaction error (a dead peer included) publishes the place as its event.
            if let Some(cq) = cq {
                for slot in slots.iter_mut().take(events as usize) {
                    *slot = Some(cq.begin_post());
                }
            }
            if unlocked && engine == Engine::Rdma && !want_remote && peer.is_remote() && !local.is_segmented() {
                let cq_arc = if d.src_cq_hndl.is_null() { ep.cq.clone() } else { CQS.get(d.src_cq_hndl as *const _).ok() };
                // Handed to the callback once the transfer started (it publishes them);
                // taken back when it did not (the synchronous path below does).
                let parked = std::mem::take(&mut slots).map(|s| s.map(PostSlot::park));
                if let Some(rc) = post_async(api, ep_h, peer, words, &d, &op, pd, desc, cq_arc, events, local_data, parked) {
                    return rc;
                }
                if let Some(cq) = cq {
                    // SAFETY: parked from slots of this CQ just now; the callback that
                    // would have unparked them was never run (post_async returned None).
                    slots = parked.map(|p| p.map(|p| unsafe { cq.unpark(p) }));
                }
            }
            // route() probed the peer; one liveness verdict for the whole post
            // (payload, flag, REMOTE event).
            let event = want_remote.then(|| cqe::make(cqe::SRC_REMOTE, cqe::TYPE_POST, Status::Ok, 0, remote_data as u64));
            // A small put or AMO with no REMOTE event, from or into memory addressed by
            // virtual address: through the endpoint's pins when it has them.
            let pinnable = !unlocked && matches!(local, LocalMem::Virtual(_)) && (matches!(op, Op::Put { .. }) || (event.is_none() && matches!(op, Op::Amo { flag: None, .. } | Op::Get { flag: None, .. })));
            let binding = || guard.as_ref().expect("held").binding.as_ref().expect("routed");
            // A REMOTE event needs the pinned ring looked up (the general path does that).
            let via_pin = match op {
                _ if event.is_some() && binding().pins.ring(words, d.remote_addr, d.length).is_none() => None,
                Op::Put { len, sync } if pinnable => put_pinned(binding(), words, &d, len, sync),
                Op::Amo { amo, .. } if pinnable => amo_pinned(binding(), words, &d, amo),
                Op::Get { len, .. } if pinnable => get_pinned(binding(), words, &d, len),
                _ => None,
            };
            let r = if via_pin == Some(true) {
                if event.is_some() {
                    // put_pinned found the pin and the route, and the ring was looked up.
                    let b = binding();
                    if let (Some((pin, Some(ring))), Some((_, peer))) = (b.pins.find_with_ring(words, d.remote_addr, d.length), b.route.as_ref()) {
                        if let Ok(live) = peer.live_probed() {
                            remote_event_pinned(ring, pin.pinned(), live, remote_data, pd);
                        }
                    }
                }
                Ok(())
            } else {
                let r = peer.live_probed().and_then(|live| {
                    let rm = RemoteMem::open(peer, words, pd)?;
                    let notified = execute(&rm, live, &d, &op, &local, pd, event)?;
                    Ok((live, rm.notify_key(), rm.is_plain(), notified))
                });
                match r {
                    Ok((live, key, plain, notified)) => {
                        if let (Some(e), false) = (event, notified) {
                            remote_event(live, key, pd, e);
                        }
                        if pinnable && via_pin.is_none() && plain {
                            // Where this registration's REMOTE events go, for its pin (a
                            // local lookup; a peer on another machine is never pinned, and
                            // asking its engine would cost a round trip per post).
                            let ring_loc = if event.is_some() && !peer.is_remote() { live.notify_ring(key, pd).ok() } else { None };
                            let b = guard.as_mut().expect("held").binding.as_mut().expect("routed");
                            let at = (d.remote_addr, d.length);
                            pin_after(b, words, key, false, at, pd);
                            if let (Some(loc), Some(_), None) = (ring_loc, b.pins.find(words, at.0, at.1), b.pins.ring(words, at.0, at.1)) {
                                // No ring: no REMOTE events (Some(None)); a ring the fabric
                                // cannot pin: left to the general path.
                                match loc.map(|loc| softnic_fabric::rma::PinnedRing::new(live_arc(b), &loc)) {
                                    None => b.pins.set_ring(words, at.0, at.1, None),
                                    Some(Ok(r)) => b.pins.set_ring(words, at.0, at.1, Some(r)),
                                    Some(Err(_)) => {}
                                }
                            }
                            if let LocalMem::Virtual(Some(lkey)) = local {
                                let lw = [d.local_mem_hndl.qword1, d.local_mem_hndl.qword2];
                                if lw[0] & (memhandle::SEG_FLAG | memhandle::VMDH_FLAG) == 0 {
                                    pin_after(b, lw, lkey, true, (d.local_addr, d.length), pd);
                                }
                            }
                        }
                        Ok(())
                    }
                    Err(e) => Err(Status::from_fabric(e)),
                }
            };
            if guard.is_none() {
                let mut st = ep.state();
                st.in_flight = st.in_flight.saturating_sub(1);
            }
            r
        }
    };
    drop(guard);
    complete(api, &ep.nic, cq, desc, events, local_data, error_words(&d), result, slots);
    GNI_RC_SUCCESS
}

/// A small put through the endpoint's pin of the registration that handle words `words`
/// name (`Binding::pins`): the flag's place is checked, then the payload and the flag are
/// stored, as `Live::put_compound` does.  `Some(true)`: done.  `Some(false)`: the pin
/// cannot serve it (out of its range, a flag it cannot store): nothing moved, the general
/// path gives the exact outcome.  None: no usable pin (none yet, or gone stale).
#[inline]
fn put_pinned(b: &Binding, words: [u64; 2], d: &gni_post_descriptor_t, len: u64, sync: Option<(u64, u64)>) -> Option<bool> {
    let pin = b.pins.find(words, d.remote_addr, len)?;
    let (_, peer) = b.route.as_ref()?;
    let r = pin.check(peer.live_probed().ok()?).ok()?;
    if sync.is_some_and(|(faddr, _)| !r.can_store_u64_at(faddr)) {
        return Some(false);
    }
    if r.put_at(d.remote_addr, local_bytes(d.local_addr, len)).is_err() {
        return Some(false);
    }
    if let Some((faddr, fval)) = sync {
        // Checked above: cannot fail.
        let _ = r.store_u64_at(faddr, fval);
    }
    Some(true)
}

/// A get through the endpoint's pins (`Binding::pins`) of the target registration that
/// handle words `words` name and of our registration its `local_mem_hndl` names (the
/// destination).  Outcomes as [`put_pinned`]'s.
#[inline]
fn get_pinned(b: &Binding, words: [u64; 2], d: &gni_post_descriptor_t, len: u64) -> Option<bool> {
    let pin = b.pins.find(words, d.remote_addr, len)?;
    let (_, peer) = b.route.as_ref()?;
    let r = pin.check(peer.live_probed().ok()?).ok()?;
    let lpin = b.pins.find([d.local_mem_hndl.qword1, d.local_mem_hndl.qword2], d.local_addr, len)?;
    let l = lpin.check(lpin.peer().live().ok()?).ok()?;
    if !l.covers(d.local_addr, len) || !r.covers(d.remote_addr, len) {
        return Some(false);
    }
    // Checked above: cannot fail.
    let _ = r.get_at(d.remote_addr, local_bytes_mut(d.local_addr, len));
    Some(true)
}

/// An AMO through the endpoint's pins (`Binding::pins`) of the target registration that
/// handle words `words` name and, for a fetching one, of our registration its
/// `local_mem_hndl` names.  Outcomes as [`put_pinned`]'s.
#[inline]
fn amo_pinned(b: &Binding, words: [u64; 2], d: &gni_post_descriptor_t, amo: Amo) -> Option<bool> {
    let pin = b.pins.find(words, d.remote_addr, amo.width.bytes() as u64)?;
    let (_, peer) = b.route.as_ref()?;
    let r = pin.check(peer.live_probed().ok()?).ok()?;
    let n = amo.width.bytes();
    let local = if amo.fetch {
        let lpin = b.pins.find([d.local_mem_hndl.qword1, d.local_mem_hndl.qword2], d.local_addr, n as u64)?;
        let l = lpin.check(lpin.peer().live().ok()?).ok()?;
        if !l.can_store_at(d.local_addr, n) {
            return Some(false);
        }
        Some(l)
    } else {
        None
    };
    let Ok(old) = r.atomic_at(d.remote_addr, amo.width, amo.op) else { return Some(false) };
    if let Some(l) = local {
        // Checked above: cannot fail.
        let _ = l.store_word_at(d.local_addr, old, n);
    }
    Some(true)
}

/// The routed peer of a binding (a post's route is set).
fn live_arc(b: &Binding) -> &Arc<softnic_fabric::rma::Peer> {
    &b.route.as_ref().expect("routed").1
}

/// Queues a pinned put's REMOTE event (`data`) at the target registration's notify ring
/// `ring`, pinned with the registration `pin` (see `Pins::ring`): none when the
/// registration has no ring, dropped when it overran (as the hardware drops it), and
/// through the per-event path when the ring's pin went stale.
fn remote_event_pinned(ring: &Option<softnic_fabric::rma::PinnedRing<u64>>, pin: &softnic_fabric::rma::Pinned, live: Live<'_>, data: u32, pd: u64) {
    let Some(ring) = ring else { return };
    let entry = cqe::make(cqe::SRC_REMOTE, cqe::TYPE_POST, Status::Ok, 0, data as u64);
    match ring.check(live) {
        Ok(r) => {
            if !r.push_or_overrun(&entry) {
                softnic_fabric::sn_debug!("GNI_PostFma", "remote CQ overran: event dropped");
            }
        }
        Err(_) => remote_event(live, pin.key(), pd, entry),
    }
}

/// Block pinned of a registration that spans several backings (see `pin_after`).
const PIN_BLOCK: u64 = 2 << 20;

/// After a post through plain handle words `words` (registration `key`, ours when `own`)
/// at the owner's `at` = (address, length) that found no pin: pins the registration when
/// the same handle missed recently too.  A registration over several backings (a large
/// buffer that crosses a boundary of the fabric's backing blocks, which depends on where
/// the allocator placed it) cannot be pinned whole: then the [`PIN_BLOCK`]-aligned block
/// of it that holds the access is, so that where a buffer lands does not decide whether
/// its small posts cost once or twice the usual (amo_fadd_lat 68 or 112+ ns).
#[cold]
fn pin_after(b: &mut Binding, words: [u64; 2], key: MemKey, own: bool, at: (u64, u64), pd: u64) {
    if own && b.pins.find(words, at.0, at.1).is_some_and(|p| p.key() == key) {
        return; // our registration, pinned and fine (only the target's was missing)
    }
    if !b.pins.missed(words) {
        return;
    }
    let peer = if own { softnic_fabric::rma::Peer::this().ok() } else { b.route.as_ref().map(|(_, p)| p.clone()) };
    if peer.as_ref().is_some_and(|p| p.is_remote()) {
        // Another machine's memory is never pinned: its posts go through the network
        // engine, and that is no slower path to report.
        b.pins.refuse(words);
        return;
    }
    // Registrations the fabric cannot pin (several backings, the network engine) are not,
    // and are not tried again at each miss (a failed try costs a validation and a
    // backing lookup on top of the general path).
    let pinned = peer.map(|p| match softnic_fabric::rma::Pinned::registration(&p, key, true, pd) {
        Err(softnic_fabric::Error::Unsupported) => softnic_fabric::rma::Pinned::registration_block(&p, key, at.0, PIN_BLOCK, true, pd),
        r => r,
    });
    match pinned {
        Some(Ok(pin)) => b.pins.add(words, pin),
        Some(Err(softnic_fabric::Error::Unsupported)) => {
            // Worth knowing when a program's small posts run at twice their usual cost.
            softnic_fabric::sn_debug!("uGNI", "{} registration {:?} cannot be pinned at {:#x} (fallback memory or several backings in one block): its small posts take the general path", if own { "our" } else { "the target's" }, key, at.0);
            b.pins.refuse(words)
        }
        _ => {}
    }
}

/// What a transaction error report says of the post (remote address, length, handle).
fn error_words(d: &gni_post_descriptor_t) -> [u64; 4] {
    let rh = d.remote_mem_hndl;
    [d.remote_addr, d.length, rh.qword1, rh.qword2]
}

/// Queues a finished post's `events` local events or, after a transaction error, as
/// many error events, at least one (on the CQ a GLOBAL event would use, even for a
/// SILENT post); into the places `slots` claimed for them when the post claimed them.
#[allow(clippy::too_many_arguments)]
fn complete(api: &str, nic: &Nic, cq: Option<&Cq>, desc: *mut gni_post_descriptor_t, events: u8, local_data: u32, error_words: [u64; 4], result: Result<(), Status>, slots: [Option<PostSlot<'_>>; 2]) {
    let (status, n) = match result {
        Ok(()) => {
            if cq.is_some() && softnic_fabric::check::enabled() {
                check_watch_filled(desc);
            }
            (Status::Ok, events)
        }
        Err(status) => {
            softnic_fabric::sn_debug!(api, "transaction error: {}", status.describe());
            crate::errors::report_transaction_error(nic, status, error_words);
            if cq.is_none() {
                softnic_fabric::sn_warn!(api, "transaction error with no CQ to report it: {}", status.describe());
            }
            (status, events.max(1))
        }
    };
    let Some(cq) = cq else { return };
    let mut slots = slots.into_iter().flatten();
    for _ in 0..n {
        slots.next().unwrap_or(PostSlot::Later(cq)).publish(desc, status, local_data);
    }
}

/// RDMA to another machine travels asynchronously: the data goes out in pieces that
/// are all in flight together (the network engine's RMA, or requests below its RMA
/// size, whose replies complete them), the post returns, and the
/// local events (or the transaction error) are queued when the last piece has arrived,
/// from whichever thread sees that.  The EP counts the post in flight until then
/// (EpUnbind answers NOT_DONE), and the caller's descriptor and local memory stay the
/// caller's until the event, as uGNI requires.  Segmented handles (remote or local),
/// REMOTE events and anything RMA cannot carry take the synchronous path (None is
/// returned then).
#[allow(clippy::too_many_arguments)]
fn post_async(api: &'static str, ep_h: gni_ep_handle_t, peer: &softnic_fabric::rma::Peer, words: [u64; 2], d: &gni_post_descriptor_t, op: &Op, pd: u64, desc: *mut gni_post_descriptor_t, cq: Option<Arc<Cq>>, events: u8, local_data: u32, parked: [Option<Parked>; 2]) -> Option<gni_return_t> {
    let rm = RemoteMem::open(peer, words, pd).ok().filter(|rm| rm.is_plain())?;
    let ep = EPS.get(ep_h as *const _).ok()?;
    let words4 = error_words(d);
    let desc_addr = desc as usize;
    let finish = move |r: softnic_fabric::Result<()>| {
        {
            let mut st = ep.state();
            st.in_flight = st.in_flight.saturating_sub(1);
        }
        let cq = cq.as_deref();
        // SAFETY: parked from slots of this CQ by the post, which gave them up once the
        // transfer started; this callback runs once.
        let slots = parked.map(|p| p.zip(cq).map(|(p, cq)| unsafe { cq.unpark(p) }));
        complete(api, &ep.nic, cq, desc_addr as *mut gni_post_descriptor_t, events, local_data, words4, r.map_err(Status::from_fabric), slots);
    };
    let started = match *op {
        // SAFETY: the caller's registered source of `length` bytes (checked at post
        // time), which uGNI leaves the caller's to keep unchanged until the post's event:
        // the network reads it in place, as the hardware's DMA engine would.
        Op::Put { len, sync: None } => unsafe { peer.put_async(rm.notify_key(), d.remote_addr, d.local_addr as *const u8, len as usize, pd, Box::new(finish)) },
        // SAFETY: checked by `check_local`: inside a writable registration of ours, which
        // the caller keeps until the post's event (the contract of every post).
        Op::Get { len, flag: None } => unsafe { peer.get_async(rm.notify_key(), d.remote_addr, d.local_addr as *mut u8, len as usize, pd, Box::new(finish)) },
        _ => return None,
    };
    match started {
        Ok(()) => Some(GNI_RC_SUCCESS),
        Err(not_started) => {
            // Never run: the EP count stays with the synchronous path, which drops it.
            drop(not_started);
            None
        }
    }
}

/// Starts an FMA PUT, PUT_W_SYNCFLAG, GET, GET_W_FLAG, AMO or AMO_W_FLAG (module doc).
#[no_mangle]
pub unsafe extern "C" fn GNI_PostFma(ep_hndl: gni_ep_handle_t, post_descr: *mut gni_post_descriptor_t) -> gni_return_t {
    post(Engine::Fma, ep_hndl, post_descr)
}

/// Queues an RDMA (BTE) PUT or GET (module doc).
#[no_mangle]
pub unsafe extern "C" fn GNI_PostRdma(ep_hndl: gni_ep_handle_t, post_descr: *mut gni_post_descriptor_t) -> gni_return_t {
    post(Engine::Rdma, ep_hndl, post_descr)
}

/// Writes the low 48 bits of `cqwrite_value` into the dst CQ of `remote_mem_hndl`'s
/// registration at the bound peer (module doc).
#[no_mangle]
pub unsafe extern "C" fn GNI_PostCqWrite(ep_hndl: gni_ep_handle_t, post_descr: *mut gni_post_descriptor_t) -> gni_return_t {
    post(Engine::CqWrite, ep_hndl, post_descr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sheet_command_decodes() {
        let legacy = [0x008, 0x018, 0x009, 0x019, 0x00a, 0x01a, 0x00b, 0x01b, 0x00c, 0x01c, 0x00d, 0x01d];
        for c in legacy {
            let a = decode_amo(c, 1, 2).unwrap();
            assert!(a.fetch);
            assert_eq!(a.width, AmoWidth::I64);
            let b = decode_amo(c | 0x100, 1, 2);
            if c & 0xf == 0xd {
                // no non-fetching CSWAP in the first generation, but the encoding decodes
                assert!(b.is_some());
            } else {
                assert!(!b.unwrap().fetch);
            }
        }
        for base in [0x00, 0x02, 0x04, 0x06, 0x08, 0x0a, 0x10, 0x12, 0x14, 0x18, 0x1a, 0x1c] {
            for nofetch in [0, 0x100] {
                for cached in [0, 0x20] {
                    let long = 0x40 | nofetch | cached | base | 1;
                    let short = 0x240 | nofetch | cached | base;
                    let l = decode_amo(long, 1, 2).unwrap();
                    let s = decode_amo(short, 1, 2).unwrap();
                    assert_eq!(l.fetch, nofetch == 0);
                    assert_eq!(s.width.bytes(), 4);
                    assert_eq!(l.width.bytes(), 8);
                }
            }
        }
        assert_eq!(decode_amo(0x41, 3, 4).unwrap().op, AmoOp::And(3));
        assert_eq!(decode_amo(0x4b, 3, 4).unwrap().op, AmoOp::CompareSwap { compare: 3, swap: 4 });
        assert_eq!(decode_amo(0x5d, 3, 4).unwrap().width, AmoWidth::F64);
        assert_eq!(decode_amo(0x25c, 3, 4).unwrap().width, AmoWidth::F32);
        assert_eq!(decode_amo(0x00c, 3, 4).unwrap().op, AmoOp::AndXor { and: 3, xor: 4 });
        for bad in [0, 0x100, 0x110, 0x007, 0x00e, 0x040, 0x241, 0x80, 0x400, 0x45e, 0x4d] {
            assert!(decode_amo(bad, 0, 0).is_none(), "{bad:#x}");
        }
    }
}
