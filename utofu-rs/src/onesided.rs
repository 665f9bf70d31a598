//! One-sided operations: validation, descriptors, execution, TOQ/TCQ accounting, polls.
//!
//! **Execution.**  The initiator carries an operation out while its start call (or
//! `post_toq`) runs, through the fabric's one-sided engine on the target's registered
//! memory: the target process takes no part.  Order within one operation: the data,
//! then the initiator's local MRQ notice, then the target's remote notice (so a local
//! notice never follows a remote notice caused by the peer's reaction), then the TCQ
//! entry.  Operations of one VCQ run one after another in TOQ order, so every (local
//! VCQ, remote VCQ) stream is FIFO whatever its path: STRONG_ORDER always holds.
//!
//! **Errors** (see utofu.h): argument errors are returned and nothing is queued; a bad
//! local STADD of a put is a TCQ error; everything found from then on is an error
//! notice on the initiator's MRQ (whatever the notice flags), and no remote notice.
//!
//! **Descriptors** (`prepare_*`, `post_toq`): 4 to 8 words, position independent.
//! ```text
//! w0: 0-7 magic 0xd5  8-11 kind  12-15 words  16-51 flags  52-59 edata  60-63 ARMW op
//! w1: remote VCQ id   w2: remote STADD   w3: 0-31 length, 32-63 the VCQ handle's low bits
//! w4: local STADD, or the ARMW/CSWAP operand, or piggyback data (w4..w7)   w5: CSWAP old
//! ```

use crate::stadd::{self, Fault};
use crate::status::{done, out, UResult};
use crate::topo::{canonical, VcqAddr};
use crate::types::*;
use crate::vcq::{self, Notice, Target, Tcq, Vcq, pd};
use softnic_fabric::atomic::{AmoOp, AmoWidth};
use softnic_fabric::mem::MemKey;
use std::ffi::c_void;
use std::sync::atomic::Ordering;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Put = 1,
    PutPb = 2,
    Get = 3,
    Armw4 = 4,
    Armw8 = 5,
    Cswap4 = 6,
    Cswap8 = 7,
    Nop = 8,
}

impl Kind {
    fn from(v: u64) -> Option<Kind> {
        Some(match v {
            1 => Kind::Put,
            2 => Kind::PutPb,
            3 => Kind::Get,
            4 => Kind::Armw4,
            5 => Kind::Armw8,
            6 => Kind::Cswap4,
            7 => Kind::Cswap8,
            8 => Kind::Nop,
            _ => return None,
        })
    }
    fn is_armw(self) -> bool {
        matches!(self, Kind::Armw4 | Kind::Armw8 | Kind::Cswap4 | Kind::Cswap8)
    }
}

/// One operation, validated.
#[derive(Clone, Copy, Debug)]
pub struct Op {
    pub kind: Kind,
    pub flags: u64,
    pub edata: u8,
    pub rmt: u64,
    pub rmt_stadd: u64,
    pub lcl_stadd: u64,
    pub len: usize,
    pub value: u64,
    pub old: u64,
    pub armw: u8,
    pub pb: [u8; 32],
}

impl Op {
    fn nop(flags: u64) -> Op {
        Op { kind: Kind::Nop, flags, edata: 0, rmt: 0, rmt_stadd: 0, lcl_stadd: 0, len: 0, value: 0, old: 0, armw: 0, pb: [0; 32] }
    }
}

const DESC_MAGIC: u64 = 0xd5;
const FLAG_FIELD: u64 = (1 << 36) - 1;

#[inline(always)]
fn check_flags(flags: u64) -> UResult<()> {
    if flags & !ONESIDED_FLAGS_KNOWN != 0 {
        return Err(UTOFU_ERR_INVALID_FLAGS);
    }
    let path = (flags >> PATH_SHIFT) & 0xff;
    if path > 12 {
        return Err(UTOFU_ERR_INVALID_PATH_ID);
    }
    Ok(())
}

#[inline(always)]
fn common(rmt: u64, edata: u64, flags: u64, kind: Kind) -> UResult<Op> {
    common_with(rmt, edata, flags, kind, |id| VcqAddr::decode(id).is_some())
}

/// [`common`] with the test of the remote VCQ id given (the quick paths pass
/// [`Vcq::valid_remote_id`], which remembers its last verdict).
#[inline(always)]
fn common_with(rmt: u64, edata: u64, flags: u64, kind: Kind, id_ok: impl FnOnce(u64) -> bool) -> UResult<Op> {
    check_flags(flags)?;
    if edata > MAX_EDATA {
        return Err(UTOFU_ERR_INVALID_EDATA);
    }
    if !id_ok(rmt) {
        return Err(UTOFU_ERR_INVALID_VCQ_ID);
    }
    Ok(Op { kind, flags, edata: edata as u8, rmt, ..Op::nop(flags) })
}

fn check_gap(mtu: usize, gap: usize) -> UResult<()> {
    // Packetisation and throttling do not exist here: validated, then no effect.
    if mtu == 0 || mtu > MAX_MTU || gap > MAX_GAP {
        return Err(UTOFU_ERR_INVALID_SIZE);
    }
    Ok(())
}

/// The blocks of a (strided) put or get.
#[allow(clippy::too_many_arguments)]
fn transfer(kind: Kind, rmt: u64, lcl: u64, rmts: u64, len: usize, stride: usize, blocks: usize, edata: u64, flags: u64) -> UResult<Vec<Op>> {
    let base = common(rmt, edata, flags, kind)?;
    if len > MAX_PUTGET {
        return Err(UTOFU_ERR_INVALID_SIZE);
    }
    if blocks == 0 || blocks > TOQ_DEPTH {
        return Err(UTOFU_ERR_INVALID_NUMBER);
    }
    let mut v = Vec::with_capacity(blocks);
    for k in 0..blocks {
        let d = (k as u64).checked_mul(stride as u64).ok_or(UTOFU_ERR_INVALID_SIZE)?;
        let (l, r) = (lcl.checked_add(d).ok_or(UTOFU_ERR_INVALID_SIZE)?, rmts.checked_add(d).ok_or(UTOFU_ERR_INVALID_SIZE)?);
        v.push(Op { lcl_stadd: l, rmt_stadd: r, len, ..base });
    }
    Ok(v)
}

fn piggyback(rmt: u64, data: &[u8], rmts: u64, edata: u64, flags: u64) -> UResult<Op> {
    let mut op = common(rmt, edata, flags, Kind::PutPb)?;
    op.pb[..data.len()].copy_from_slice(data);
    op.len = data.len();
    op.rmt_stadd = rmts;
    Ok(op)
}

/// The bytes of a piggyback source (copied at once: the caller may reuse it on return).
unsafe fn pb_bytes<'a>(p: *const c_void, len: usize) -> UResult<&'a [u8]> {
    if len > MAX_PIGGYBACK {
        return Err(UTOFU_ERR_INVALID_SIZE);
    }
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(UTOFU_ERR_INVALID_POINTER);
    }
    // SAFETY: the caller's buffer of `len` bytes.
    Ok(unsafe { std::slice::from_raw_parts(p as *const u8, len) })
}

#[inline(always)]
fn armw(kind: Kind, rmt: u64, op: i32, value: u64, old: u64, rmts: u64, edata: u64, flags: u64) -> UResult<Op> {
    armw_with(kind, rmt, op, value, old, rmts, edata, flags, |id| VcqAddr::decode(id).is_some())
}

/// [`armw`] with the test of the remote VCQ id given (see [`common_with`]).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn armw_with(kind: Kind, rmt: u64, op: i32, value: u64, old: u64, rmts: u64, edata: u64, flags: u64, id_ok: impl FnOnce(u64) -> bool) -> UResult<Op> {
    let mut o = common_with(rmt, edata, flags, kind, id_ok)?;
    if matches!(kind, Kind::Armw4 | Kind::Armw8) && !(UTOFU_ARMW_OP_SWAP..=UTOFU_ARMW_OP_OR).contains(&op) {
        return Err(UTOFU_ERR_INVALID_OP);
    }
    o.armw = op as u8;
    o.value = value;
    o.old = old;
    o.rmt_stadd = rmts;
    o.len = if matches!(kind, Kind::Armw4 | Kind::Cswap4) { 4 } else { 8 };
    Ok(o)
}

// ---- descriptors ----------------------------------------------------------------------

fn words_of(op: &Op) -> usize {
    match op.kind {
        Kind::Nop => 4,
        Kind::Put | Kind::Get | Kind::Armw4 | Kind::Armw8 => 5,
        Kind::Cswap4 | Kind::Cswap8 => 6,
        Kind::PutPb => 4 + op.len.div_ceil(8).max(1),
    }
}

fn encode(op: &Op, h: usize, out_words: &mut Vec<u64>) {
    let n = words_of(op);
    let w0 = DESC_MAGIC | (op.kind as u64) << 8 | (n as u64) << 12 | (op.flags & FLAG_FIELD) << 16 | (op.edata as u64) << 52 | (op.armw as u64 & 0xf) << 60;
    let mut w = [w0, op.rmt, op.rmt_stadd, (op.len as u64 & 0xffff_ffff) | ((h as u64) & 0xffff_ffff) << 32, 0, 0, 0, 0];
    match op.kind {
        Kind::Put | Kind::Get => w[4] = op.lcl_stadd,
        Kind::Armw4 | Kind::Armw8 => w[4] = op.value,
        Kind::Cswap4 | Kind::Cswap8 => {
            w[4] = op.value;
            w[5] = op.old;
        }
        Kind::PutPb => {
            for (i, c) in op.pb.chunks(8).enumerate() {
                w[4 + i] = u64::from_le_bytes(c.try_into().expect("8 bytes"));
            }
        }
        Kind::Nop => {}
    }
    out_words.extend_from_slice(&w[..n]);
}

/// Decodes the descriptors in `words` prepared for handle `h`; `INVALID_DESC` for
/// anything that is not exactly that.
fn decode(words: &[u64], h: usize) -> UResult<Vec<Op>> {
    let mut ops = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w0 = words[i];
        let n = ((w0 >> 12) & 0xf) as usize;
        let kind = Kind::from((w0 >> 8) & 0xf).ok_or(UTOFU_ERR_INVALID_DESC)?;
        if w0 & 0xff != DESC_MAGIC || n < 4 || i + n > words.len() {
            return Err(UTOFU_ERR_INVALID_DESC);
        }
        let w = &words[i..i + n];
        if w[3] >> 32 != (h as u64) & 0xffff_ffff {
            return Err(UTOFU_ERR_INVALID_DESC);
        }
        let flags = (w0 >> 16) & FLAG_FIELD;
        let edata = (w0 >> 52) & 0xff;
        let len = (w[3] & 0xffff_ffff) as usize;
        let op = match kind {
            Kind::Nop => {
                check_flags(flags).map_err(|_| UTOFU_ERR_INVALID_DESC)?;
                Op::nop(flags)
            }
            Kind::Put | Kind::Get => {
                let mut v = transfer(kind, w[1], *w.get(4).ok_or(UTOFU_ERR_INVALID_DESC)?, w[2], len, 0, 1, edata, flags).map_err(|_| UTOFU_ERR_INVALID_DESC)?;
                v.pop().expect("one block")
            }
            Kind::PutPb => {
                let mut data = [0u8; 32];
                for (k, x) in w[4..].iter().enumerate() {
                    data[k * 8..k * 8 + 8].copy_from_slice(&x.to_le_bytes());
                }
                if len > MAX_PIGGYBACK || n != 4 + len.div_ceil(8).max(1) {
                    return Err(UTOFU_ERR_INVALID_DESC);
                }
                piggyback(w[1], &data[..len], w[2], edata, flags).map_err(|_| UTOFU_ERR_INVALID_DESC)?
            }
            _ => {
                let old = if matches!(kind, Kind::Cswap4 | Kind::Cswap8) { *w.get(5).ok_or(UTOFU_ERR_INVALID_DESC)? } else { 0 };
                armw(kind, w[1], (w0 >> 60) as i32, *w.get(4).ok_or(UTOFU_ERR_INVALID_DESC)?, old, w[2], edata, flags).map_err(|_| UTOFU_ERR_INVALID_DESC)?
            }
        };
        if n != words_of(&op) {
            return Err(UTOFU_ERR_INVALID_DESC);
        }
        ops.push(op);
        i += n;
    }
    Ok(ops)
}

// ---- execution ------------------------------------------------------------------------

fn notice(kind: u8, rc: i32, vcq_id: u64, edata: u8, value: u64, lcl: u64, rmt: u64) -> Notice {
    [kind as u64 | (rc as u32 as u64) << 32, vcq_id, edata as u64, value, lcl, rmt, 0, 0]
}

fn local_type(k: Kind) -> u8 {
    match k {
        Kind::Put | Kind::PutPb => UTOFU_MRQ_TYPE_LCL_PUT,
        Kind::Get => UTOFU_MRQ_TYPE_LCL_GET,
        _ => UTOFU_MRQ_TYPE_LCL_ARMW,
    }
}

fn rmt_fault(f: Fault) -> i32 {
    match f {
        Fault::Memory => UTOFU_ERR_MRQ_RMT_MEMORY,
        Fault::Stadd => UTOFU_ERR_MRQ_RMT_STADD,
        Fault::Length => UTOFU_ERR_MRQ_RMT_LENGTH,
    }
}

fn lcl_fault(f: Fault) -> i32 {
    match f {
        Fault::Memory => UTOFU_ERR_MRQ_LCL_MEMORY,
        Fault::Stadd => UTOFU_ERR_MRQ_LCL_STADD,
        Fault::Length => UTOFU_ERR_MRQ_LCL_LENGTH,
    }
}

fn fabric_fault(e: softnic_fabric::Error) -> i32 {
    use softnic_fabric::Error as E;
    match e {
        E::PeerDead => UTOFU_ERR_MRQ_PEER,
        E::OutOfBounds => UTOFU_ERR_MRQ_RMT_LENGTH,
        E::Misaligned => UTOFU_ERR_MRQ_RMT_STADD,
        _ => UTOFU_ERR_MRQ_RMT_MEMORY,
    }
}

/// Pins kept per VCQ for the put fast path.
const PUT_PINS: usize = 8;

/// The put fast path: a put into a region this VCQ has put into before, through the
/// fabric pin of that region, or of its block that holds the put ([`pin_after`])
/// (re-checked per use by the registration and backing generations, so a deregistered
/// or freed target fails the check).  Skips the target's
/// STADD row and header; anything unusual (remote notice wanted, no pin, a failed check,
/// out of range) returns false and the full path runs and reports the exact outcome.
fn put_pinned(v: &Vcq, op: &Op, rid: u64, src: &[u8], pins: &[vcq::PutPin]) -> bool {
    let Some((r, off)) = pin_for(op, rid, pins, false) else { return false };
    if !r.holds(off, src.len(), 1) {
        return false;
    }
    // The notice's place before the data (notices are causal: `Vcq::claim_local`).
    let noticed = op.flags & UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE != 0;
    let slot = if noticed { v.claim_local(true) } else { vcq::LocalSlot::none() };
    // Checked above: neither part can fail.
    if src.len() > 8 {
        let cut = src.len() - 8;
        let _ = r.put(off, &src[..cut]);
        let _ = r.put(off + cut, &src[cut..]);
    } else {
        let _ = r.put(off, src);
    }
    if op.flags & NOTICES_TRACKED != 0 && softnic_fabric::check::enabled() {
        check_race_pinned(v, *op, rid, pins);
    }
    if noticed {
        slot.publish(&notice(UTOFU_MRQ_TYPE_LCL_PUT, 0, rid, op.edata, 0, 0, op.rmt_stadd.wrapping_add(op.len as u64)));
    }
    true
}

/// The get fast path, [`put_pinned`]'s mirror: a get from a region this VCQ has pinned,
/// into `dst` (our registration, resolved and checked writable by the caller), its local
/// notice queued as `run` queues it.  False, with nothing done, when it does not apply
/// (remote notice wanted, no pin, a failed check, out of range) or the checker is on (it
/// watches a get's destination and its races: `run` does that); the full path then runs.
fn get_pinned(v: &Vcq, op: &Op, rid: u64, dst: &mut [u8], pins: &[vcq::PutPin]) -> bool {
    if softnic_fabric::check::enabled() {
        return false;
    }
    let Some((r, off)) = pin_for(op, rid, pins, false) else { return false };
    if r.get(off, dst).is_err() {
        return false;
    }
    if op.flags & UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE != 0 {
        v.push_local(&notice(UTOFU_MRQ_TYPE_LCL_GET, 0, rid, op.edata, 0, end_of(op, op.lcl_stadd), end_of(op, op.rmt_stadd)));
    }
    true
}

/// The pin of `op`'s target region, checked for this use, and `op`'s offset in it; None
/// when a remote notice is wanted (the full path queues it) or no valid pin is there.
/// `quick` (the quick paths): also None when the peer's liveness needs a probe, which
/// `exec` then makes (the quick path stays free of calls, its values in registers).
#[inline(always)]
fn pin_for<'p>(op: &Op, rid: u64, pins: &'p [vcq::PutPin], quick: bool) -> Option<(softnic_fabric::rma::PinnedRef<'p>, usize)> {
    if op.flags & UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE != 0 {
        return None;
    }
    let (p, off) = pin_of(op, rid, pins)?;
    let r = if quick { p.pin.check_quick()? } else { p.pin.check().ok()? };
    Some((r, off))
}

/// The pin of `op`'s target region (unchecked) that holds its first byte, and `op`'s
/// offset in the pin.
#[inline(always)]
fn pin_of<'p>(op: &Op, rid: u64, pins: &'p [vcq::PutPin]) -> Option<(&'p vcq::PutPin, usize)> {
    let tag = op.rmt_stadd >> 36;
    let off = (op.rmt_stadd & (stadd::MAX_REGION - 1)) as usize;
    let hit = |p: &&vcq::PutPin| p.rid == rid && p.tag == tag && off.wrapping_sub(p.skip) < p.len;
    // The first pin inline (a program's one busy region is usually the first pinned):
    // the search's call and loop only for the others.
    let p = match pins.first() {
        Some(p) if hit(&p) => p,
        _ => pins.iter().skip(1).find(hit)?,
    };
    Some((p, off - p.skip))
}

/// The timeline's name of an operation (the call that queued it).
fn trace_name(k: Kind) -> &'static str {
    match k {
        Kind::Put => "utofu_put",
        Kind::PutPb => "utofu_put_piggyback",
        Kind::Get => "utofu_get",
        Kind::Armw4 | Kind::Armw8 => "utofu_armw",
        Kind::Cswap4 | Kind::Cswap8 => "utofu_cswap",
        Kind::Nop => "utofu_nop",
    }
}

/// The ARMW (and compare-and-swap) of `op` on a region this VCQ has pinned (see
/// [`put_pinned`]): applied through the pin, its local notice carrying the old value.
/// False when it does not apply (remote notice wanted, no pin, a failed check, misaligned
/// or out of range): the full path then runs and reports the exact outcome.
/// `quick`: called from [`armw_quick`], which runs only with every observer off (no
/// SOFTNIC_FAULTS rule, no checker), so the notice is pushed without the fault test and
/// the checker is not asked.
#[inline(always)]
fn armw_pinned(v: &Vcq, op: &Op, rid: u64, pins: &[vcq::PutPin], quick: bool) -> bool {
    let Some((r, off)) = pin_for(op, rid, pins, quick) else { return false };
    let (width, a, mask) = armw_op(op);
    let Some(place) = r.atomic_place(off, width) else { return false };
    // The notice's place before the operation (notices are causal: `Vcq::claim_local`).
    let noticed = op.flags & UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE != 0;
    let slot = if noticed { v.claim_local(!quick) } else { vcq::LocalSlot::none() };
    // Checked above, and every uTofu operation is one the fabric applies: an error is
    // reported as the general path would.
    let (rc, old) = match place.apply(a) {
        Ok(old) => (0, old),
        Err(e) => (fabric_fault(e), 0),
    };
    if !quick && op.flags & NOTICES_TRACKED != 0 && softnic_fabric::check::enabled() {
        check_race_pinned(v, *op, rid, pins);
    }
    if noticed {
        slot.publish(&notice(local_type(op.kind), rc, rid, op.edata, old & mask, 0, end_of(op, op.rmt_stadd)));
    }
    true
}

/// The fabric's form of an ARMW or compare-and-swap: width, operation, and the mask of
/// the value it returns.
#[inline(always)]
fn armw_op(op: &Op) -> (AmoWidth, AmoOp, u64) {
    let (width, mask) = if op.len == 4 { (AmoWidth::I32, 0xffff_ffffu64) } else { (AmoWidth::I64, u64::MAX) };
    let (val, cmp) = (op.value & mask, op.old & mask);
    let a = match (op.kind, op.armw as i32) {
        (Kind::Cswap4 | Kind::Cswap8, _) => AmoOp::CompareSwap { compare: cmp, swap: val },
        (_, UTOFU_ARMW_OP_SWAP) => AmoOp::Swap(val),
        (_, UTOFU_ARMW_OP_ADD) => AmoOp::Add(val),
        (_, UTOFU_ARMW_OP_XOR) => AmoOp::Xor(val),
        (_, UTOFU_ARMW_OP_AND) => AmoOp::And(val),
        _ => AmoOp::Or(val),
    };
    (width, a, mask)
}

/// Runs one operation; returns the TCQ status (MRQ errors are queued here).
fn run(v: &Vcq, op: &Op, q: &mut vcq::Queue) -> i32 {
    if op.kind == Kind::Nop {
        return UTOFU_SUCCESS;
    }
    let _span = softnic_fabric::trace::span("utofu", trace_name(op.kind)).map(|s| s.arg("vcq_id", op.rmt).arg("length", op.len as u64));
    let rid = canonical(op.rmt);
    let ltype = local_type(op.kind);
    let lcl_field = if op.kind == Kind::Get { end_of(op, op.lcl_stadd) } else { 0 };
    let mrq_err = |rc: i32| {
        v.push_local(&notice(ltype, rc, rid, op.edata, 0, lcl_field, end_of(op, op.rmt_stadd)));
        UTOFU_SUCCESS
    };
    // The local side of a put is read while sending: its faults are TCQ errors.
    let mut src: &[u8] = &[];
    let mut dst: &mut [u8] = &mut [];
    match op.kind {
        Kind::Put => match stadd::resolve(v.blk(), op.lcl_stadd, op.len) {
            // SAFETY: inside a live registration of ours (checked), which stays mapped.
            Ok((_, a)) => src = unsafe { std::slice::from_raw_parts(a as *const u8, op.len) },
            Err(Fault::Memory) => return UTOFU_ERR_TCQ_MEMORY,
            Err(Fault::Stadd) => return UTOFU_ERR_TCQ_STADD,
            Err(Fault::Length) => return UTOFU_ERR_TCQ_LENGTH,
        },
        Kind::PutPb => src = &op.pb[..op.len],
        Kind::Get => match stadd::resolve(v.blk(), op.lcl_stadd, op.len) {
            Ok((row, _)) if row.readonly => return mrq_err(UTOFU_ERR_MRQ_LCL_MEMORY),
            // SAFETY: our live registration, writable (checked), which stays mapped.
            Ok((_, a)) => dst = unsafe { std::slice::from_raw_parts_mut(a as *mut u8, op.len) },
            Err(f) => return mrq_err(lcl_fault(f)),
        },
        _ => {}
    }
    // SOFTNIC_FAULTS=transfer: the operation is lost in the network after the local side
    // sent it: nothing reaches the target, and the MRQ reports "other error".
    if softnic_fabric::faults::hit(softnic_fabric::faults::Point::Transfer) {
        return mrq_err(UTOFU_ERR_MRQ_OTHER);
    }
    if matches!(op.kind, Kind::Put | Kind::PutPb) && op.len > 0 && put_pinned(v, op, rid, src, &q.pins) {
        return UTOFU_SUCCESS;
    }
    if op.kind.is_armw() && armw_pinned(v, op, rid, &q.pins, false) {
        return UTOFU_SUCCESS;
    }
    if op.kind == Kind::Get && op.len > 0 && get_pinned(v, op, rid, dst, &q.pins) {
        return UTOFU_SUCCESS;
    }
    let t = match vcq::target_cached(&mut q.last, rid) {
        Ok(t) => t.clone(),
        Err(rc) => return mrq_err(rc),
    };
    // Dropped when run returns, after the operation's local notice (any outcome).
    let _hold = matches!(t.site, vcq::Site::Remote).then(|| v.hold_remote_notices());
    // On this machine the local notice's place is claimed before the data moves (notices
    // are causal: `Vcq::claim_local`); a get's target cannot react to it.
    let claimed = matches!(t.site, vcq::Site::Mapped { .. }) && op.flags & UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE != 0 && op.kind != Kind::Get;
    let mut slot = if claimed { v.claim_local(true) } else { vcq::LocalSlot::none() };
    let local_notice = |slot: vcq::LocalSlot<'_>, n: &vcq::Notice| if claimed { slot.publish(n) } else { v.push_local(n) };
    let landed = match t.site {
        vcq::Site::Mapped { .. } => at_target(&t, op, v.id, src, dst, lcl_field),
        vcq::Site::Remote => remote(&t, op, v.id, src, dst, lcl_field),
    };
    let landed = match landed {
        Ok(l) => l,
        Err(rc) => {
            local_notice(slot.take(), &notice(ltype, rc, rid, op.edata, 0, lcl_field, end_of(op, op.rmt_stadd)));
            return UTOFU_SUCCESS;
        }
    };
    if let Some((key, base, len)) = landed.region {
        if pin_of(op, rid, &q.pins).is_none() {
            pin_after(q, &t.peer, (rid, op.rmt_stadd >> 36, key), (base, len), landed.addr);
        }
    }
    if softnic_fabric::check::enabled() {
        check_race(v, op, rid, &t.peer, landed.addr);
    }
    if op.flags & UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE != 0 {
        if op.kind == Kind::Get && softnic_fabric::check::enabled() {
            check_watch_get(v, op, dst);
        }
        let value = if op.kind.is_armw() { landed.old } else { 0 };
        local_notice(slot.take(), &notice(ltype, 0, rid, op.edata, value, lcl_field, end_of(op, op.rmt_stadd)));
    }
    if let Some(n) = landed.remote_notice {
        notify_target(&t, &n);
    }
    UTOFU_SUCCESS
}

/// The end of an operation's range from `s` (ARMW notices carry the address itself).
fn end_of(op: &Op, s: u64) -> u64 {
    if op.kind.is_armw() {
        s
    } else {
        s.wrapping_add(op.len as u64)
    }
}

/// The blocks of a region in several backings that are pinned on their own (as uGNI's
/// registration blocks): aligned 2 MiB in the owner's addresses.
const PIN_BLOCK: u64 = 2 << 20;

/// After an operation that found no pin: pins its target region `(base, len)` (of
/// registration `id.2` at VCQ `id.0`, STADD tag `id.1`) for the next puts, gets and ARMWs,
/// or, for a region the fabric cannot pin whole because it lies in several backings (one
/// that straddles an aligned GiB, say), the [`PIN_BLOCK`] of it holding `at` (the
/// operation's target address) once a second operation in a row falls in that block
/// (accesses spread over many blocks keep the general path rather than replace a pin
/// at every operation).  Regions that cannot be pinned at all (fallback memory,
/// read-only) are remembered as such and not tried again while they are among the last
/// two refused.
#[cold]
#[inline(never)]
fn pin_after(q: &mut vcq::Queue, peer: &std::sync::Arc<softnic_fabric::rma::Peer>, id: (u64, u64, MemKey), (base, len): (u64, u64), at: u64) {
    use softnic_fabric::rma::Pinned;
    let (rid, tag, key) = id;
    let region = (rid, tag, key.to_u64());
    let refused = q.unpinnable.iter().flatten().find(|(r, _)| *r == region).map(|&(_, blocks)| blocks);
    let pin = match refused {
        None => match Pinned::new(peer, key, base, len as usize, true, pd()) {
            Ok(pin) => Some(pin),
            Err(e) => {
                refuse(q, region, e == softnic_fabric::Error::Unsupported);
                None
            }
        },
        Some(true) => {
            let block = at / PIN_BLOCK;
            if q.block_miss == Some((region, block)) {
                q.block_miss = None;
                // The block part of the fabric registration, which is the region (one
                // registration per utofu_reg_mem): anything else is not pinned here.
                match Pinned::registration_block(peer, key, at, PIN_BLOCK, true, pd()) {
                    Ok(p) if p.range().0 >= base && p.range().0 - base + p.range().1 as u64 <= len => Some(p),
                    _ => {
                        refuse(q, region, false); // fallback memory: no block pins either
                        None
                    }
                }
            } else {
                q.block_miss = Some((region, block));
                None
            }
        }
        Some(false) => None,
    };
    let Some(pin) = pin else { return };
    let (start, plen) = pin.range();
    if plen as u64 != len {
        softnic_fabric::sn_debug!("uTofu", "pinned block {:#x}+{:#x} of the region {:#x}+{:#x} at VCQ {:#x} (it lies in several backings)", start, plen, base, len, rid);
    }
    let e = vcq::PutPin { rid, tag, base: start, skip: (start - base) as usize, len: plen, pin: softnic_fabric::rma::QuickPinned::new(pin) };
    if q.pins.len() < PUT_PINS {
        q.pins.push(e);
    } else {
        let i = q.next_pin % PUT_PINS;
        q.pins[i] = e;
        q.next_pin = q.next_pin.wrapping_add(1);
    }
}

/// Remembers `region` as one the fabric cannot pin whole (`blocks`: its blocks may be).
fn refuse(q: &mut vcq::Queue, region: (u64, u64, u64), blocks: bool) {
    if let Some(e) = q.unpinnable.iter_mut().flatten().find(|(r, _)| *r == region) {
        e.1 = blocks;
        return;
    }
    let i = q.next_unpinnable % 2;
    q.unpinnable[i] = Some((region, blocks));
    q.next_unpinnable = q.next_unpinnable.wrapping_add(1);
}

/// What an operation's target side did.
struct Landed {
    /// The value an ARMW found.
    old: u64,
    /// The target's own address of the first byte (what the remote STADD resolved to).
    addr: u64,
    /// The target region (registration key, base, length) when the target is mapped
    /// here, for the put fast path's pin.
    region: Option<(MemKey, u64, u64)>,
    /// The remote notice to queue at the target once the local one is queued (None
    /// when not asked for, or when the target queued it itself).
    remote_notice: Option<Notice>,
}

/// The target side of `op` on the mapped target `t`: resolves the remote STADD range in
/// the target's table, checks access, moves the data (`src` for a put, into `dst` for a
/// get) or applies the ARMW, and makes the remote notice (`from`: the initiator VCQ's
/// id) for the caller to queue with [`notify_target`].  Runs in the initiator when it maps the target's block, and in the target itself
/// (the uTofu service) when the initiator reaches it through the network engine: the
/// same checks and the same order (data, then notice) either way.  Errs with the MRQ
/// code of the failure; nothing was written then.
fn at_target(t: &Target, op: &Op, from: u64, src: &[u8], dst: &mut [u8], lcl_field: u64) -> Result<Landed, i32> {
    let (row, addr) = stadd::resolve(t.blk(), op.rmt_stadd, op.len).map_err(rmt_fault)?;
    if row.readonly && op.kind != Kind::Get {
        return Err(UTOFU_ERR_MRQ_RMT_MEMORY);
    }
    // target_cached probed liveness (rate-limited) a moment ago.
    let live = t.peer.live_probed().map_err(|_| UTOFU_ERR_MRQ_PEER)?;
    let key = MemKey::from_u64(row.key);
    let mut old = 0u64;
    let r = match op.kind {
        // The final 8 bytes are stored after the rest (memcpy may write a tail early), so
        // a target polling the last word of a put sees the whole put (guide 6.1.3).
        Kind::Put | Kind::PutPb if src.len() > 8 => {
            let cut = src.len() - 8;
            live.put(key, addr, &src[..cut], pd()).and_then(|_| live.put(key, addr + cut as u64, &src[cut..], pd()))
        }
        Kind::Put | Kind::PutPb => live.put(key, addr, src, pd()),
        Kind::Get if op.len == 0 => Ok(()),
        Kind::Get => live.get(key, addr, dst, pd()),
        _ => {
            if addr % op.len as u64 != 0 {
                return Err(UTOFU_ERR_MRQ_RMT_STADD);
            }
            let (width, a, mask) = armw_op(op);
            live.atomic(key, addr, width, a, pd()).map(|o| old = o & mask)
        }
    };
    r.map_err(fabric_fault)?;
    let remote_notice = (op.flags & UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE != 0).then(|| notice(local_type(op.kind) + 1, 0, from, op.edata, 0, lcl_field, end_of(op, op.rmt_stadd)));
    Ok(Landed { old, addr, region: Some((key, row.base, row.len)), remote_notice })
}

/// Queues the remote notice of an operation `at_target` carried out on `t` (after the
/// initiator's local notice, when the initiator runs it).
fn notify_target(t: &Target, n: &Notice) {
    let vcq::Site::Mapped { ring, .. } = &t.site else { return };
    if t.peer.is_self() {
        // Our own VCQ, for an initiator here or on another machine: in order with what
        // our own operations on it are waiting to queue.
        if let Some(own) = vcq::by_id(t.vcq_id) {
            own.push_remote_notice(n);
            return;
        }
    }
    let pushed = t.peer.live_probed().and_then(|live| ring.check(live).map(|ring| {
        if vcq::mrq_overrun_injected() || ring.push(n).is_err() {
            t.mark_overflow();
        }
    }));
    if pushed.is_err() {
        // The target's memory moved under the pin (it freed the VCQ meanwhile) or it
        // died: the notice has nowhere to go, as on hardware.
        softnic_fabric::sn_debug!("uTofu", "remote notice for {:#x} dropped: the VCQ went away", t.id);
    }
}

// ---- the target side across machines ----------------------------------------------------
//
// A target on another machine runs `at_target` itself: the initiator sends the operation
// as a request of the uTofu service (rma::Peer::call), the target's network progress
// thread resolves the VCQ and the STADD in its own tables and answers with the MRQ code,
// the ARMW's old value, the address the STADD resolved to (the checker names the bytes
// by it) and a get's data.  Transfers longer than one request are pieces
// in order, each checking the whole rest of the range first (so a range that runs out
// fails before anything is written), the remote notice with the last piece.

/// Service request kinds (the first word): an operation, a barrier packet (crate::barrier).
const SVC_OP: u64 = 1;
pub(crate) const SVC_PACKET: u64 = 2;
/// Header words of an operation request.
const OP_WORDS: usize = 12;
/// Most data bytes in one piece.
const PIECE: usize = softnic_fabric::rma::MAX_CALL - 8 * (OP_WORDS + 4);

fn remote(t: &Target, op: &Op, from: u64, src: &[u8], dst: &mut [u8], lcl_field: u64) -> Result<Landed, i32> {
    let pieces = if op.kind.is_armw() || op.len == 0 { 1 } else { op.len.div_ceil(PIECE) };
    let (mut old, mut addr) = (0, 0);
    let mut reply = Vec::new();
    for i in 0..pieces {
        let off = i * PIECE;
        let n = if op.kind.is_armw() { op.len } else { (op.len - off).min(PIECE) };
        let last = i + 1 == pieces;
        let flags = if last { op.flags } else { op.flags & !UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE };
        let rest = (op.len - off.min(op.len)) as u64;
        let words = [SVC_OP, t.id, from, op.kind as u64, flags, op.edata as u64, op.rmt_stadd.wrapping_add(off as u64), n as u64, op.value, op.old, op.armw as u64 | lcl_field << 8, rest];
        debug_assert_eq!(words.len(), OP_WORDS);
        let mut req = Vec::with_capacity(8 * OP_WORDS + if matches!(op.kind, Kind::Put | Kind::PutPb) { n } else { 0 });
        words.iter().for_each(|w| req.extend_from_slice(&w.to_le_bytes()));
        if matches!(op.kind, Kind::Put | Kind::PutPb) {
            req.extend_from_slice(&src[off..off + n]);
        }
        reply.clear();
        t.peer.call(softnic_fabric::registry::api::UTOFU, &req, &mut reply).map_err(fabric_fault)?;
        let word = |k: usize| reply.get(k * 8..k * 8 + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
        let (Some(rc), Some(o), Some(a)) = (word(0), word(1), word(2)) else { return Err(UTOFU_ERR_MRQ_OTHER) };
        if rc != 0 {
            return Err(rc as i64 as i32);
        }
        old = o;
        if i == 0 {
            addr = a;
        }
        if op.kind == Kind::Get {
            let data = reply.get(24..24 + n).ok_or(UTOFU_ERR_MRQ_OTHER)?;
            dst[off..off + n].copy_from_slice(data);
        }
    }
    Ok(Landed { old, addr, region: None, remote_notice: None })
}

/// The uTofu service's side of [`remote`]: the target side of an operation from another
/// machine (the service, in lib.rs, hands SVC_OP requests here).
pub(crate) fn service(_me: &std::sync::Arc<softnic_fabric::rma::Peer>, req: &[u8], reply: &mut Vec<u8>) -> softnic_fabric::Result<()> {
    use softnic_fabric::Error;
    let word = |k: usize| req.get(k * 8..k * 8 + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).ok_or(Error::InvalidArg);
    if word(0)? != SVC_OP {
        return Err(Error::InvalidArg);
    }
    let kind = Kind::from(word(3)?).ok_or(Error::InvalidArg)?;
    let n = word(7)? as usize;
    let extra = word(10)?;
    let op = Op { kind, flags: word(4)?, edata: word(5)? as u8, rmt: word(1)?, rmt_stadd: word(6)?, lcl_stadd: 0, len: n, value: word(8)?, old: word(9)?, armw: extra as u8, pb: [0; 32] };
    let (from, lcl_field, rest) = (word(2)?, extra >> 8, word(11)?);
    let data = &req[8 * OP_WORDS..];
    let src: &[u8] = if matches!(kind, Kind::Put | Kind::PutPb) { data.get(..n).ok_or(Error::InvalidArg)? } else { &[] };
    if n > PIECE && !kind.is_armw() {
        return Err(Error::InvalidArg);
    }
    let mut got = vec![0u8; if kind == Kind::Get { n } else { 0 }];
    let r = (|| {
        let t = vcq::target(canonical(op.rmt))?;
        if !matches!(t.site, vcq::Site::Mapped { .. }) {
            return Err(UTOFU_ERR_MRQ_PEER); // not ours to serve
        }
        if !kind.is_armw() && rest > n as u64 {
            // The whole rest of a longer transfer must fit before its first piece lands.
            stadd::resolve(t.blk(), op.rmt_stadd, rest as usize).map_err(rmt_fault)?;
        }
        let landed = at_target(&t, &op, from, src, &mut got, lcl_field)?;
        if let Some(n) = &landed.remote_notice {
            notify_target(&t, n);
        }
        Ok(landed)
    })();
    let (rc, old, addr) = match r {
        Ok(l) => (0i64, l.old, l.addr),
        Err(rc) => (rc as i64, 0, 0),
    };
    reply.extend_from_slice(&(rc as u64).to_le_bytes());
    reply.extend_from_slice(&old.to_le_bytes());
    reply.extend_from_slice(&addr.to_le_bytes());
    if rc == 0 {
        reply.extend_from_slice(&got);
    }
    Ok(())
}

/// SOFTNIC_CHECK: the checker's id space of uTofu puts, released by their TCQ entries.
const CHECK_TCQ: u64 = 0x70f0;

/// SOFTNIC_CHECK: a put with a TCQ notice reads its source until the program polls that
/// notice; the checker watches those bytes till then.  Returns the watch's id.
#[cold]
#[inline(never)]
fn check_watch(v: &Vcq, op: &Op, id: usize) {
    let Ok((_, addr)) = stadd::resolve(v.blk(), op.lcl_stadd, op.len) else { return };
    softnic_fabric::check::at_exit(check_at_exit);
    let (len, rmt) = (op.len, op.rmt);
    // SAFETY: our live registration, which the put just read.
    unsafe { softnic_fabric::check::watch(CHECK_TCQ, id, "utofu_put", || format!("a put of {len} bytes to VCQ {rmt:#x}"), addr as usize, len) };
}

/// The timeline: an operation asking for a TCQ notice, from its start to the poll that
/// returns the notice (an asynchronous span).
const TRACE_IN_FLIGHT: &str = "operation in flight";

/// The id of an operation the checker or the timeline follows to its TCQ notice (the
/// entry's `check`), watched or begun here; 0 when neither is on.
#[cold]
#[inline(never)]
fn follow(v: &Vcq, op: &Op) -> usize {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
    let watch = op.kind == Kind::Put && softnic_fabric::check::enabled();
    let race = if softnic_fabric::check::enabled() { RACE_TILL_TCQ.take() } else { None };
    let trace = softnic_fabric::trace::enabled();
    if !watch && race.is_none() && !trace {
        return 0;
    }
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    if watch {
        check_watch(v, op, id);
    }
    if let Some(to) = race {
        check_race_flight(CHECK_TCQ, id, op, to);
    }
    if trace {
        softnic_fabric::trace::async_begin("utofu", TRACE_IN_FLIGHT, id as u64, &[("vcq_id", op.rmt), ("length", op.len as u64)]);
    }
    id
}

/// SOFTNIC_CHECK at exit: puts whose TCQ notice was never polled.
fn check_at_exit() {
    let n = softnic_fabric::check::outstanding(CHECK_TCQ);
    if n > 0 {
        softnic_fabric::check::report("utofu_poll_tcq", &format!("{n} put(s) whose TCQ notice was never polled"), "exit");
    }
}

/// SOFTNIC_CHECK: the checker's id space of uTofu gets, released by their local MRQ
/// notices (LCL_GET), each named by its VCQ and the notice's lcl_stadd.
const CHECK_GET: u64 = 0x70f1;

fn check_get_id(v: &Vcq, lcl_end: u64) -> usize {
    (v.blk() as usize) ^ (lcl_end as usize).rotate_left(32)
}

/// SOFTNIC_CHECK: a get asking for a local MRQ notice has filled its destination (the
/// notice is queued next); the program owns the data once it polled that notice.  A write
/// of the program's before then may be undone on the hardware by data landing after it:
/// the checker watches those bytes till then.
#[cold]
#[inline(never)]
fn check_watch_get(v: &Vcq, op: &Op, dst: &[u8]) {
    let (len, rmt) = (op.len, op.rmt);
    let id = check_get_id(v, end_of(op, op.lcl_stadd));
    softnic_fabric::check::watch_filled(CHECK_GET, id, "utofu_get", || format!("a get of {len} bytes from VCQ {rmt:#x}"), dst.as_ptr() as usize, dst.len());
}

/// SOFTNIC_CHECK: the TCQ entry of watched put `id` was polled.
#[cold]
#[inline(never)]
fn check_release(id: usize) {
    softnic_fabric::check::release(CHECK_TCQ, id, "utofu_poll_tcq");
}

/// SOFTNIC_CHECK: the checker's id space of puts and ARMWs in flight till their local MRQ
/// notice (LCL_PUT, LCL_ARMW), each named by its VCQ, the notice's type, remote VCQ and
/// rmt_stadd (what the notice carries back).
const CHECK_MRQ: u64 = 0x70f2;

/// SOFTNIC_CHECK: the space of uTofu targets in the race table (fabric check.rs, "Races"):
/// `CHECK_RACE << 32 | node`, with the owning process's registry id and its own address.
const CHECK_RACE: u64 = 0x70f3;

fn check_mrq_id(v: &Vcq, ltype: u8, rid: u64, rmt_end: u64) -> usize {
    (v.blk() as usize) ^ (ltype as usize) << 56 ^ (rid as usize).rotate_left(17) ^ (rmt_end as usize).rotate_left(32)
}

std::thread_local! {
    /// A put tracked till its TCQ notice: where it landed, from [`check_race`] (inside
    /// `run`) to [`follow`] (which names the TCQ entry), both under the VCQ's TCQ lock.
    static RACE_TILL_TCQ: std::cell::Cell<Option<softnic_fabric::check::Target>> = const { std::cell::Cell::new(None) };
}

/// SOFTNIC_CHECK, data races between initiators (fabric check.rs, "Races"): `op` just
/// landed at `addr` of `owner` (its remote STADD resolved there: by the target's STADD
/// row, the put fast path's pin, or the target itself across machines), before its local
/// notice is queued.  It is in flight from its post until the initiator polls the notice
/// that says it completed:
/// - with a local MRQ notice (put, get, ARMW): until that notice is polled
///   (utofu_poll_mrq), the notice that says the remote memory was updated or read;
/// - a put with a TCQ notice and no local MRQ notice: until the TCQ notice is polled.
///   Strictly that notice only says the source was sent (the data may land later on the
///   hardware), so ending there may miss a race but never invents one;
/// - anything else is not tracked: a get or ARMW with only a TCQ notice (which says it
///   started), an operation with no notice of the initiator's (no completion ever seen),
///   and any operation asking for a remote MRQ notice: the target may poll that notice
///   and order other initiators' accesses after it, which the initiator never sees
///   (a finding would then be false).  A target that learns of a put by watching the
///   memory itself (the last word, guide 6.1.3) and lets another initiator write there
///   before the first polled its notice is not seen either: that program gets a finding
///   it does not deserve (as with uGNI's and DMAPP's checks).
///
/// The bytes are named by what the STADD resolves to, the same for every initiator: the
/// target VCQ's node, the owning process's registry id (slot and generation), and the
/// address in that process.  Two VCQs of a process registering one buffer under
/// different STADDs name it alike; an initiator's VCQ id + STADD would not (and a STag's
/// STADD is the same on every VCQ of a process, for different memory).
///
/// Puts (and piggyback puts) write.  ARMWs are atomic against each other and are
/// recorded as reads: an ARMW then races with a put to the same bytes (its read-modify-
/// write and the put are unordered) but not with another ARMW, nor with a get (a get
/// reading a word an ARMW changes sees the old or the new value, whole).  Gets read.
#[cold]
#[inline(never)]
fn check_race(v: &Vcq, op: &Op, rid: u64, owner: &softnic_fabric::rma::Peer, addr: u64) {
    RACE_TILL_TCQ.set(None);
    let (f, put) = (op.flags, matches!(op.kind, Kind::Put | Kind::PutPb));
    if f & UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE != 0 || op.len == 0 {
        return;
    }
    let Some(node) = VcqAddr::decode(rid).and_then(|a| crate::topo::node_at(&a.coords)) else { return };
    let p = owner.proc_id();
    let to = softnic_fabric::check::Target { space: CHECK_RACE << 32 | node as u64, target: (p.slot as u64) << 32 | p.gen as u64, addr, len: op.len as u64 };
    if f & UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE != 0 {
        let (kind, id) = match op.kind {
            Kind::Get => (CHECK_GET, check_get_id(v, end_of(op, op.lcl_stadd))),
            k => (CHECK_MRQ, check_mrq_id(v, local_type(k), rid, end_of(op, op.rmt_stadd))),
        };
        check_race_flight(kind, id, op, to);
    } else if put && f & UTOFU_ONESIDED_FLAG_TCQ_NOTICE != 0 {
        RACE_TILL_TCQ.set(Some(to));
    }
}

/// The notices without one of which [`check_race`] tracks nothing (tested first on the
/// fast paths: the operation's flags are at hand, the checker's state is a load).
const NOTICES_TRACKED: u64 = UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE | UTOFU_ONESIDED_FLAG_TCQ_NOTICE;

/// [`check_race`] of `op`, just carried out through the pin of its region (the put fast
/// path), found again here to keep the fast path's own lookup lean.  `op` by value: a
/// copy made on this cold path, so that the fast paths keep theirs in registers.
#[cold]
#[inline(never)]
fn check_race_pinned(v: &Vcq, op: Op, rid: u64, pins: &[vcq::PutPin]) {
    if let Some((p, off)) = pin_of(&op, rid, pins) {
        check_race(v, &op, rid, p.pin.pinned().peer(), p.base + off as u64);
    }
}

/// SOFTNIC_CHECK: `op`, landed at `to`, in flight as `(kind, id)` (see [`check_race`]).
fn check_race_flight(kind: u64, id: usize, op: &Op, to: softnic_fabric::check::Target) {
    let (len, rmt, at) = (op.len, op.rmt, to.addr);
    let what = || match op.kind {
        Kind::Put | Kind::PutPb => format!("a put of {len} bytes to VCQ {rmt:#x} ({at:#x} in its process)"),
        Kind::Get => format!("a get of {len} bytes from VCQ {rmt:#x} ({at:#x} in its process)"),
        _ => format!("an ARMW of {len} bytes at VCQ {rmt:#x} ({at:#x} in its process)"),
    };
    softnic_fabric::check::remote_access(kind, id, trace_name(op.kind), what, to, matches!(op.kind, Kind::Put | Kind::PutPb));
}

/// SOFTNIC_CHECK: a local MRQ notice of VCQ `v` (the even types) was polled: the
/// operation it reports is complete (a get hands its destination over; see [`check_race`]).
#[cold]
#[inline(never)]
fn check_mrq_release(v: &Vcq, ltype: u8, rid: u64, lcl_end: u64, rmt_end: u64) {
    let (kind, id) = match ltype {
        UTOFU_MRQ_TYPE_LCL_GET => (CHECK_GET, check_get_id(v, lcl_end)),
        t => (CHECK_MRQ, check_mrq_id(v, t, rid, rmt_end)),
    };
    softnic_fabric::check::release(kind, id, "utofu_poll_mrq");
}

/// Executes `ops` on `v` in order, all or nothing with respect to TOQ space.
fn exec(v: &Vcq, ops: &[Op], cbdata: usize) -> UResult<()> {
    let mut q = v.tcq.lock();
    if q.tcq.len() + v.silent_pending() + ops.len() > TOQ_DEPTH {
        return Err(UTOFU_ERR_BUSY);
    }
    let q = &mut *q;
    let mut silent = 0;
    for op in ops {
        let rc = run(v, op, q);
        let notify = op.flags & UTOFU_ONESIDED_FLAG_TCQ_NOTICE != 0;
        if rc == UTOFU_SUCCESS && !notify {
            silent += 1;
        } else {
            let check = if rc == UTOFU_SUCCESS && (softnic_fabric::check::enabled() || softnic_fabric::trace::enabled()) { follow(v, op) } else { 0 };
            q.tcq.push_back(Tcq { cbdata, rc, notify, check });
        }
    }
    if silent > 0 {
        // Only advanced under the lock: a load and a store, no locked instruction.
        let issued = v.silent_issued.load(Ordering::Relaxed);
        v.silent_issued.store(issued.wrapping_add(silent), Ordering::Release);
    }
    v.queued.store(q.tcq.len(), Ordering::Release);
    Ok(())
}

fn start(func: &'static str, h: usize, ops: UResult<Vec<Op>>, cbdata: *mut c_void) -> i32 {
    let r = vcq::get(h).and_then(|v| exec(v, &ops?, cbdata as usize));
    done(func, r)
}

#[inline(always)]
fn start1(func: &'static str, h: usize, op: UResult<Op>, cbdata: *mut c_void) -> i32 {
    // Borrowed where it was built: moving an Op out of its Result copies it through a
    // store-forwarding stall on this hot path.
    let r = vcq::get(h).and_then(|v| match &op {
        Ok(o) => exec(v, std::slice::from_ref(o), cbdata as usize),
        Err(rc) => Err(*rc),
    });
    done(func, r)
}

/// The start of one ARMW or compare-and-swap: inlined into each of its four exports, so
/// that the operation is built in registers and the quick path ([`armw_quick`]) makes no
/// call but the fabric's atomic.
/// The handle is checked first, as in start1; `build` validates the arguments and makes
/// the operation (given the VCQ, whose [`Vcq::valid_remote_id`] it uses).
#[inline(always)]
fn start_armw(func: &'static str, h: usize, build: impl FnOnce(&Vcq) -> UResult<Op>, cbdata: *mut c_void) -> i32 {
    let r = vcq::get(h).and_then(|v| armw_quick(v, build(v)?, cbdata as usize));
    done(func, r)
}

/// [`exec`] of one ARMW, specialised: what `exec` and `run` do for it when no observer is
/// on (no SOFTNIC_TRACE span, no SOFTNIC_FAULTS rule, no checker: three loads) and it does
/// not ask for a remote notice, through the pin of its region ([`armw_pinned`]), under the
/// same TCQ lock and TOQ accounting.  Everything else (no pin yet, a failed pin check, a
/// hook on) goes to `exec`, which carries the operation out from the start: nothing was
/// done here then.  The Vcq is `&'static` (handle table: never deallocated) and its block
/// stays mapped until RETIRE_AFTER more VCQs are freed, as for `exec`; `free` clears the
/// pins under the lock taken here.  `op` comes by value and only its copies for `exec`
/// and the hooks have an address: on the quick path it lives in registers.
#[inline(always)]
fn armw_quick(v: &Vcq, op: Op, cbdata: usize) -> UResult<()> {
    if op.flags & UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE != 0 {
        return exec1(v, op, cbdata);
    }
    if !softnic_fabric::observers_surely_off() {
        // Undecided observers are decided here: `exec` alone may never ask the checker.
        softnic_fabric::decide_observers();
        return exec1(v, op, cbdata);
    }
    let mut q = v.tcq.lock();
    if q.tcq.len() + v.silent_pending() + 1 > TOQ_DEPTH {
        return Err(UTOFU_ERR_BUSY);
    }
    if !armw_pinned(v, &op, canonical(op.rmt), &q.pins, true) {
        drop(q);
        return exec1(v, op, cbdata);
    }
    complete_quick(v, &mut q, op, cbdata, false);
    Ok(())
}

/// The end of a quick path's operation, done under its TCQ lock: its TCQ entry, or its
/// silent completion counted, as `exec` does after a successful `run` (tracing is off on
/// the quick paths, so `follow` is only for the checker; `checked`: the checker may be
/// on, false when the caller knows it off).
#[inline(always)]
fn complete_quick(v: &Vcq, q: &mut vcq::Queue, op: Op, cbdata: usize, checked: bool) {
    if op.flags & UTOFU_ONESIDED_FLAG_TCQ_NOTICE != 0 {
        let check = if checked && softnic_fabric::check::enabled() { follow_parts(v, op.kind, op.rmt, op.lcl_stadd, op.len) } else { 0 };
        q.tcq.push_back(Tcq { cbdata, rc: UTOFU_SUCCESS, notify: true, check });
        v.queued.store(q.tcq.len(), Ordering::Release);
    } else {
        // Only advanced under the lock (see exec).
        let issued = v.silent_issued.load(Ordering::Relaxed);
        v.silent_issued.store(issued.wrapping_add(1), Ordering::Release);
    }
}

/// The start of one put: the quick path ([`put_quick`]) inlined into `utofu_put`; the
/// handle is checked first, then the arguments (as in [`start_armw`]).
#[inline(always)]
fn start_put(h: usize, build: impl FnOnce(&Vcq) -> UResult<Op>, cbdata: *mut c_void) -> i32 {
    let r = vcq::get(h).and_then(|v| put_quick(v, build(v)?, cbdata as usize));
    done("utofu_put", r)
}

/// [`exec`] of one put, specialised as [`armw_quick`] is for ARMWs: with no trace or
/// faults hook on, no remote notice and a non-empty length, the local STADD is resolved
/// (as `run` does) and the data copied through the pin of the target region
/// ([`put_pinned_quick`]), under the same TCQ lock and TOQ accounting.  A local STADD
/// that does not resolve, no pin, a failed pin check: `exec` carries the operation out
/// from the start and reports the exact outcome (nothing was done here then).
#[inline(always)]
fn put_quick(v: &Vcq, op: Op, cbdata: usize) -> UResult<()> {
    // SAFETY (of the pointer's use): inside a live registration of ours (checked), which
    // stays mapped (as in run).
    put_quick_from(v, op, cbdata, |op| stadd::resolve_inline(v.blk(), op.lcl_stadd, op.len).ok().map(|(_, a)| a as *const u8))
}

/// [`put_quick`] of a piggyback put (`utofu_put_piggyback`, `_piggyback8`): its bytes are
/// in the operation itself.
#[inline(always)]
fn put_pb_quick(v: &Vcq, op: Op, cbdata: usize) -> UResult<()> {
    put_quick_from(v, op, cbdata, |op| Some(op.pb.as_ptr()))
}

/// The quick put of [`put_quick`] and [`put_pb_quick`]: `source` gives where the
/// operation's `len` bytes are (None: `exec` from the start).
#[inline(always)]
fn put_quick_from(v: &Vcq, op: Op, cbdata: usize, source: impl FnOnce(&Op) -> Option<*const u8>) -> UResult<()> {
    if op.len == 0 || op.flags & UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE != 0 || softnic_fabric::trace::enabled() || softnic_fabric::faults::any() {
        return exec1(v, op, cbdata);
    }
    let mut q = v.tcq.lock();
    if q.tcq.len() + v.silent_pending() + 1 > TOQ_DEPTH {
        return Err(UTOFU_ERR_BUSY);
    }
    let Some(a) = source(&op) else {
        drop(q);
        return exec1(v, op, cbdata);
    };
    // SAFETY: `len` bytes the caller's `source` vouched for.
    let src = unsafe { std::slice::from_raw_parts(a, op.len) };
    if !put_pinned_quick(v, &op, canonical(op.rmt), src, &q.pins) {
        drop(q);
        return exec1(v, op, cbdata);
    }
    complete_quick(v, &mut q, op, cbdata, true);
    Ok(())
}

/// The start of one piggyback put: [`start1`] with the quick path ([`put_pb_quick`]).
#[inline(always)]
fn start_pb(func: &'static str, h: usize, op: UResult<Op>, cbdata: *mut c_void) -> i32 {
    let r = vcq::get(h).and_then(|v| put_pb_quick(v, op?, cbdata as usize));
    done(func, r)
}

/// The start of one get: the quick path ([`get_quick`]) inlined into `utofu_get`, as
/// [`start_put`] for puts.
#[inline(always)]
fn start_get(h: usize, build: impl FnOnce(&Vcq) -> UResult<Op>, cbdata: *mut c_void) -> i32 {
    let r = vcq::get(h).and_then(|v| get_quick(v, build(v)?, cbdata as usize));
    done("utofu_get", r)
}

/// [`exec`] of one get, specialised as [`put_quick`] is for puts: with no hook on (the
/// checker neither: it watches a get's destination), no remote notice and a non-empty
/// length, the local STADD resolved to a writable registration of ours (as `run` does)
/// and the data copied from the pin of the target region, its local notice queued as
/// `run` queues it, under the same TCQ lock and TOQ accounting.  Anything else (a local
/// STADD that does not resolve or is read-only, no pin, a failed pin check): `exec` from
/// the start, which reports the exact outcome (nothing was done here then).
#[inline(always)]
fn get_quick(v: &Vcq, op: Op, cbdata: usize) -> UResult<()> {
    use softnic_fabric::{check, faults, trace};
    if op.len == 0 || op.flags & UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE != 0 || trace::enabled() || faults::any() || check::enabled() {
        return exec1(v, op, cbdata);
    }
    let mut q = v.tcq.lock();
    if q.tcq.len() + v.silent_pending() + 1 > TOQ_DEPTH {
        return Err(UTOFU_ERR_BUSY);
    }
    let rid = canonical(op.rmt);
    let got = match stadd::resolve_inline(v.blk(), op.lcl_stadd, op.len) {
        Ok((row, a)) if !row.readonly => pin_for(&op, rid, &q.pins, true).is_some_and(|(r, off)| {
            // SAFETY: our live registration, writable (checked), which stays mapped (as in run).
            r.get(off, unsafe { std::slice::from_raw_parts_mut(a as *mut u8, op.len) }).is_ok()
        }),
        _ => false,
    };
    if !got {
        drop(q);
        return exec1(v, op, cbdata);
    }
    if op.flags & UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE != 0 {
        v.push_local_unhooked(&notice(UTOFU_MRQ_TYPE_LCL_GET, 0, rid, op.edata, 0, end_of(&op, op.lcl_stadd), end_of(&op, op.rmt_stadd)));
    }
    complete_quick(v, &mut q, op, cbdata, false);
    Ok(())
}

/// [`put_pinned`] for [`put_quick`]: inlined, and its local notice pushed without the
/// SOFTNIC_FAULTS test (the quick path runs only without fault rules).
#[inline(always)]
fn put_pinned_quick(v: &Vcq, op: &Op, rid: u64, src: &[u8], pins: &[vcq::PutPin]) -> bool {
    let Some((r, off)) = pin_for(op, rid, pins, true) else { return false };
    if !r.holds(off, src.len(), 1) {
        return false;
    }
    // The notice's place before the data (notices are causal: `Vcq::claim_local`).
    let noticed = op.flags & UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE != 0;
    let slot = if noticed { v.claim_local(false) } else { vcq::LocalSlot::none() };
    // Checked above: no store can fail.
    if let Ok(word) = <[u8; 8]>::try_from(src) {
        // 8 bytes to an aligned place: one store (a copy of a length known only at run
        // time is a call to memmove); elsewhere the copy.
        if r.store_u64(off, u64::from_ne_bytes(word)).is_err() {
            let _ = r.put(off, src);
        }
    } else if src.len() > 8 {
        let cut = src.len() - 8;
        let _ = r.put(off, &src[..cut]);
        let _ = r.put(off + cut, &src[cut..]);
    } else {
        let _ = r.put(off, src);
    }
    if op.flags & NOTICES_TRACKED != 0 && softnic_fabric::check::enabled() {
        check_race_pinned(v, *op, rid, pins);
    }
    if noticed {
        slot.publish(&notice(UTOFU_MRQ_TYPE_LCL_PUT, 0, rid, op.edata, 0, 0, op.rmt_stadd.wrapping_add(op.len as u64)));
    }
    true
}

/// [`exec`] of one operation passed by value (out of line: its copy is the only one
/// with an address, see [`armw_quick`]).
#[inline(never)]
fn exec1(v: &Vcq, op: Op, cbdata: usize) -> UResult<()> {
    exec(v, std::slice::from_ref(&op), cbdata)
}

/// [`follow`] of an operation given by the fields it reads (kind, remote VCQ, local
/// STADD, length): with the whole `Op` passed, the quick paths built its copy on the
/// stack before testing whether this call is made.
#[cold]
#[inline(never)]
fn follow_parts(v: &Vcq, kind: Kind, rmt: u64, lcl_stadd: u64, len: usize) -> usize {
    follow(v, &Op { kind, rmt, lcl_stadd, len, ..Op::nop(0) })
}

fn prepare(func: &'static str, h: usize, ops: UResult<Vec<Op>>, desc: *mut c_void, desc_size: *mut usize) -> i32 {
    let r = (|| {
        vcq::get(h)?;
        let ops = ops?;
        if desc.is_null() || desc_size.is_null() || desc as usize % 8 != 0 {
            return Err(UTOFU_ERR_INVALID_POINTER);
        }
        let mut w = Vec::with_capacity(ops.len() * 6);
        for op in &ops {
            encode(op, h, &mut w);
        }
        // SAFETY: the caller's buffer holds max_toq_desc_size bytes per descriptor.
        unsafe { std::ptr::copy_nonoverlapping(w.as_ptr(), desc as *mut u64, w.len()) };
        out(desc_size, w.len() * 8)
    })();
    done(func, r)
}

// ---- exported: start functions -----------------------------------------------------------

/// One block of a put or get (the common case, without a Vec).
#[inline(always)]
fn transfer1(kind: Kind, rmt: u64, lcl: u64, rmts: u64, len: usize, edata: u64, flags: u64) -> UResult<Op> {
    transfer1_with(kind, rmt, lcl, rmts, len, edata, flags, |id| VcqAddr::decode(id).is_some())
}

/// [`transfer1`] with the test of the remote VCQ id given (see [`common_with`]).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn transfer1_with(kind: Kind, rmt: u64, lcl: u64, rmts: u64, len: usize, edata: u64, flags: u64, id_ok: impl FnOnce(u64) -> bool) -> UResult<Op> {
    let base = common_with(rmt, edata, flags, kind, id_ok)?;
    if len > MAX_PUTGET {
        return Err(UTOFU_ERR_INVALID_SIZE);
    }
    Ok(Op { lcl_stadd: lcl, rmt_stadd: rmts, len, ..base })
}

#[no_mangle]
pub extern "C" fn utofu_put(h: usize, rmt: u64, lcl: u64, rmts: u64, len: usize, edata: u64, flags: u64, cbdata: *mut c_void) -> i32 {
    start_put(h, |v| transfer1_with(Kind::Put, rmt, lcl, rmts, len, edata, flags, |id| v.valid_remote_id(id)), cbdata)
}

#[no_mangle]
pub extern "C" fn utofu_put_gap(h: usize, rmt: u64, lcl: u64, rmts: u64, len: usize, edata: u64, flags: u64, mtu: usize, gap: usize, cbdata: *mut c_void) -> i32 {
    start("utofu_put_gap", h, check_gap(mtu, gap).and_then(|_| transfer(Kind::Put, rmt, lcl, rmts, len, 0, 1, edata, flags)), cbdata)
}

#[no_mangle]
pub extern "C" fn utofu_put_stride(h: usize, rmt: u64, lcl: u64, rmts: u64, len: usize, stride: usize, blocks: usize, edata: u64, flags: u64, cbdata: *mut c_void) -> i32 {
    start("utofu_put_stride", h, transfer(Kind::Put, rmt, lcl, rmts, len, stride, blocks, edata, flags), cbdata)
}

#[no_mangle]
pub extern "C" fn utofu_put_stride_gap(h: usize, rmt: u64, lcl: u64, rmts: u64, len: usize, stride: usize, blocks: usize, edata: u64, flags: u64, mtu: usize, gap: usize, cbdata: *mut c_void) -> i32 {
    start("utofu_put_stride_gap", h, check_gap(mtu, gap).and_then(|_| transfer(Kind::Put, rmt, lcl, rmts, len, stride, blocks, edata, flags)), cbdata)
}

#[no_mangle]
pub unsafe extern "C" fn utofu_put_piggyback(h: usize, rmt: u64, data: *mut c_void, rmts: u64, len: usize, edata: u64, flags: u64, cbdata: *mut c_void) -> i32 {
    // SAFETY: the caller's buffer of `len` bytes.
    let op = unsafe { pb_bytes(data, len) }.and_then(|d| piggyback(rmt, d, rmts, edata, flags));
    start_pb("utofu_put_piggyback", h, op, cbdata)
}

#[no_mangle]
pub extern "C" fn utofu_put_piggyback8(h: usize, rmt: u64, data: u64, rmts: u64, len: usize, edata: u64, flags: u64, cbdata: *mut c_void) -> i32 {
    // The low-order bytes of the value (little-endian: its first bytes in memory).
    let op = if len > 8 { Err(UTOFU_ERR_INVALID_SIZE) } else { piggyback(rmt, &data.to_le_bytes()[..len], rmts, edata, flags) };
    start_pb("utofu_put_piggyback8", h, op, cbdata)
}

#[no_mangle]
pub extern "C" fn utofu_get(h: usize, rmt: u64, lcl: u64, rmts: u64, len: usize, edata: u64, flags: u64, cbdata: *mut c_void) -> i32 {
    start_get(h, |_| transfer1(Kind::Get, rmt, lcl, rmts, len, edata, flags), cbdata)
}

#[no_mangle]
pub extern "C" fn utofu_get_gap(h: usize, rmt: u64, lcl: u64, rmts: u64, len: usize, edata: u64, flags: u64, mtu: usize, gap: usize, cbdata: *mut c_void) -> i32 {
    start("utofu_get_gap", h, check_gap(mtu, gap).and_then(|_| transfer(Kind::Get, rmt, lcl, rmts, len, 0, 1, edata, flags)), cbdata)
}

#[no_mangle]
pub extern "C" fn utofu_get_stride(h: usize, rmt: u64, lcl: u64, rmts: u64, len: usize, stride: usize, blocks: usize, edata: u64, flags: u64, cbdata: *mut c_void) -> i32 {
    start("utofu_get_stride", h, transfer(Kind::Get, rmt, lcl, rmts, len, stride, blocks, edata, flags), cbdata)
}

#[no_mangle]
pub extern "C" fn utofu_get_stride_gap(h: usize, rmt: u64, lcl: u64, rmts: u64, len: usize, stride: usize, blocks: usize, edata: u64, flags: u64, mtu: usize, gap: usize, cbdata: *mut c_void) -> i32 {
    start("utofu_get_stride_gap", h, check_gap(mtu, gap).and_then(|_| transfer(Kind::Get, rmt, lcl, rmts, len, stride, blocks, edata, flags)), cbdata)
}

#[no_mangle]
pub extern "C" fn utofu_armw4(h: usize, rmt: u64, op: i32, value: u32, rmts: u64, edata: u64, flags: u64, cbdata: *mut c_void) -> i32 {
    start_armw("utofu_armw4", h, |v| armw_with(Kind::Armw4, rmt, op, value as u64, 0, rmts, edata, flags, |id| v.valid_remote_id(id)), cbdata)
}

#[no_mangle]
pub extern "C" fn utofu_armw8(h: usize, rmt: u64, op: i32, value: u64, rmts: u64, edata: u64, flags: u64, cbdata: *mut c_void) -> i32 {
    start_armw("utofu_armw8", h, |v| armw_with(Kind::Armw8, rmt, op, value, 0, rmts, edata, flags, |id| v.valid_remote_id(id)), cbdata)
}

#[no_mangle]
pub extern "C" fn utofu_cswap4(h: usize, rmt: u64, old: u32, new: u32, rmts: u64, edata: u64, flags: u64, cbdata: *mut c_void) -> i32 {
    start_armw("utofu_cswap4", h, |v| armw_with(Kind::Cswap4, rmt, 0, new as u64, old as u64, rmts, edata, flags, |id| v.valid_remote_id(id)), cbdata)
}

#[no_mangle]
pub extern "C" fn utofu_cswap8(h: usize, rmt: u64, old: u64, new: u64, rmts: u64, edata: u64, flags: u64, cbdata: *mut c_void) -> i32 {
    start_armw("utofu_cswap8", h, |v| armw_with(Kind::Cswap8, rmt, 0, new, old, rmts, edata, flags, |id| v.valid_remote_id(id)), cbdata)
}

#[no_mangle]
pub extern "C" fn utofu_nop(h: usize, flags: u64, cbdata: *mut c_void) -> i32 {
    start1("utofu_nop", h, check_flags(flags).map(|_| Op::nop(flags)), cbdata)
}

// ---- exported: prepare + post ---------------------------------------------------------

#[no_mangle]
pub extern "C" fn utofu_prepare_put(h: usize, rmt: u64, lcl: u64, rmts: u64, len: usize, edata: u64, flags: u64, desc: *mut c_void, desc_size: *mut usize) -> i32 {
    prepare("utofu_prepare_put", h, transfer(Kind::Put, rmt, lcl, rmts, len, 0, 1, edata, flags), desc, desc_size)
}

#[no_mangle]
pub extern "C" fn utofu_prepare_put_gap(h: usize, rmt: u64, lcl: u64, rmts: u64, len: usize, edata: u64, flags: u64, mtu: usize, gap: usize, desc: *mut c_void, desc_size: *mut usize) -> i32 {
    prepare("utofu_prepare_put_gap", h, check_gap(mtu, gap).and_then(|_| transfer(Kind::Put, rmt, lcl, rmts, len, 0, 1, edata, flags)), desc, desc_size)
}

#[no_mangle]
pub extern "C" fn utofu_prepare_put_stride(h: usize, rmt: u64, lcl: u64, rmts: u64, len: usize, stride: usize, blocks: usize, edata: u64, flags: u64, desc: *mut c_void, desc_size: *mut usize) -> i32 {
    prepare("utofu_prepare_put_stride", h, transfer(Kind::Put, rmt, lcl, rmts, len, stride, blocks, edata, flags), desc, desc_size)
}

#[no_mangle]
pub extern "C" fn utofu_prepare_put_stride_gap(h: usize, rmt: u64, lcl: u64, rmts: u64, len: usize, stride: usize, blocks: usize, edata: u64, flags: u64, mtu: usize, gap: usize, desc: *mut c_void, desc_size: *mut usize) -> i32 {
    prepare("utofu_prepare_put_stride_gap", h, check_gap(mtu, gap).and_then(|_| transfer(Kind::Put, rmt, lcl, rmts, len, stride, blocks, edata, flags)), desc, desc_size)
}

#[no_mangle]
pub unsafe extern "C" fn utofu_prepare_put_piggyback(h: usize, rmt: u64, data: *mut c_void, rmts: u64, len: usize, edata: u64, flags: u64, desc: *mut c_void, desc_size: *mut usize) -> i32 {
    // SAFETY: the caller's buffer of `len` bytes.
    let op = unsafe { pb_bytes(data, len) }.and_then(|d| piggyback(rmt, d, rmts, edata, flags)).map(|o| vec![o]);
    prepare("utofu_prepare_put_piggyback", h, op, desc, desc_size)
}

#[no_mangle]
pub extern "C" fn utofu_prepare_put_piggyback8(h: usize, rmt: u64, data: u64, rmts: u64, len: usize, edata: u64, flags: u64, desc: *mut c_void, desc_size: *mut usize) -> i32 {
    let op = if len > 8 { Err(UTOFU_ERR_INVALID_SIZE) } else { piggyback(rmt, &data.to_le_bytes()[..len], rmts, edata, flags).map(|o| vec![o]) };
    prepare("utofu_prepare_put_piggyback8", h, op, desc, desc_size)
}

#[no_mangle]
pub extern "C" fn utofu_prepare_get(h: usize, rmt: u64, lcl: u64, rmts: u64, len: usize, edata: u64, flags: u64, desc: *mut c_void, desc_size: *mut usize) -> i32 {
    prepare("utofu_prepare_get", h, transfer(Kind::Get, rmt, lcl, rmts, len, 0, 1, edata, flags), desc, desc_size)
}

#[no_mangle]
pub extern "C" fn utofu_prepare_get_gap(h: usize, rmt: u64, lcl: u64, rmts: u64, len: usize, edata: u64, flags: u64, mtu: usize, gap: usize, desc: *mut c_void, desc_size: *mut usize) -> i32 {
    prepare("utofu_prepare_get_gap", h, check_gap(mtu, gap).and_then(|_| transfer(Kind::Get, rmt, lcl, rmts, len, 0, 1, edata, flags)), desc, desc_size)
}

#[no_mangle]
pub extern "C" fn utofu_prepare_get_stride(h: usize, rmt: u64, lcl: u64, rmts: u64, len: usize, stride: usize, blocks: usize, edata: u64, flags: u64, desc: *mut c_void, desc_size: *mut usize) -> i32 {
    prepare("utofu_prepare_get_stride", h, transfer(Kind::Get, rmt, lcl, rmts, len, stride, blocks, edata, flags), desc, desc_size)
}

#[no_mangle]
pub extern "C" fn utofu_prepare_get_stride_gap(h: usize, rmt: u64, lcl: u64, rmts: u64, len: usize, stride: usize, blocks: usize, edata: u64, flags: u64, mtu: usize, gap: usize, desc: *mut c_void, desc_size: *mut usize) -> i32 {
    prepare("utofu_prepare_get_stride_gap", h, check_gap(mtu, gap).and_then(|_| transfer(Kind::Get, rmt, lcl, rmts, len, stride, blocks, edata, flags)), desc, desc_size)
}

#[no_mangle]
pub extern "C" fn utofu_prepare_armw4(h: usize, rmt: u64, op: i32, value: u32, rmts: u64, edata: u64, flags: u64, desc: *mut c_void, desc_size: *mut usize) -> i32 {
    prepare("utofu_prepare_armw4", h, armw(Kind::Armw4, rmt, op, value as u64, 0, rmts, edata, flags).map(|o| vec![o]), desc, desc_size)
}

#[no_mangle]
pub extern "C" fn utofu_prepare_armw8(h: usize, rmt: u64, op: i32, value: u64, rmts: u64, edata: u64, flags: u64, desc: *mut c_void, desc_size: *mut usize) -> i32 {
    prepare("utofu_prepare_armw8", h, armw(Kind::Armw8, rmt, op, value, 0, rmts, edata, flags).map(|o| vec![o]), desc, desc_size)
}

#[no_mangle]
pub extern "C" fn utofu_prepare_cswap4(h: usize, rmt: u64, old: u32, new: u32, rmts: u64, edata: u64, flags: u64, desc: *mut c_void, desc_size: *mut usize) -> i32 {
    prepare("utofu_prepare_cswap4", h, armw(Kind::Cswap4, rmt, 0, new as u64, old as u64, rmts, edata, flags).map(|o| vec![o]), desc, desc_size)
}

#[no_mangle]
pub extern "C" fn utofu_prepare_cswap8(h: usize, rmt: u64, old: u64, new: u64, rmts: u64, edata: u64, flags: u64, desc: *mut c_void, desc_size: *mut usize) -> i32 {
    prepare("utofu_prepare_cswap8", h, armw(Kind::Cswap8, rmt, 0, new, old, rmts, edata, flags).map(|o| vec![o]), desc, desc_size)
}

#[no_mangle]
pub extern "C" fn utofu_prepare_nop(h: usize, flags: u64, desc: *mut c_void, desc_size: *mut usize) -> i32 {
    prepare("utofu_prepare_nop", h, check_flags(flags).map(|_| vec![Op::nop(flags)]), desc, desc_size)
}

#[no_mangle]
pub extern "C" fn utofu_post_toq(h: usize, desc: *mut c_void, desc_size: usize, cbdata: *mut c_void) -> i32 {
    let r = (|| {
        let v = vcq::get(h)?;
        if desc_size == 0 {
            // Only starts delayed operations, and nothing is ever delayed here.
            return Ok(());
        }
        if desc.is_null() || desc as usize % 8 != 0 {
            return Err(UTOFU_ERR_INVALID_POINTER);
        }
        if desc_size % 8 != 0 {
            return Err(UTOFU_ERR_INVALID_DESC);
        }
        // SAFETY: the caller's `desc_size` bytes of prepared descriptors, 8-aligned.
        let words = unsafe { std::slice::from_raw_parts(desc as *const u64, desc_size / 8) };
        let ops = decode(words, h)?;
        exec(v, &ops, cbdata as usize)
    })();
    done("utofu_post_toq", r)
}

// ---- exported: completion ---------------------------------------------------------------

// The polls are how a uTofu program waits (no call blocks), so a watcher thread spends its
// life in them and is cancelled there, often asynchronously.  They are "C-unwind" and hold
// nothing to drop, so that an asynchronous cancellation may unwind from any instruction of
// them (see fabric::cancel): a frame with landing pads would abort the process instead.
// c-tests/tools/check-cancel-frames checks that they stay so.

#[no_mangle]
pub unsafe extern "C-unwind" fn utofu_poll_tcq(h: usize, flags: u64, cbdata: *mut *mut c_void) -> i32 {
    let r = (|| {
        let v = vcq::get(h)?;
        if flags != 0 {
            return Err(UTOFU_ERR_INVALID_FLAGS);
        }
        if cbdata.is_null() {
            return Err(UTOFU_ERR_INVALID_POINTER);
        }
        v.reap_silent();
        if v.queued.load(Ordering::Acquire) == 0 {
            return Err(UTOFU_ERR_NOT_FOUND);
        }
        take_tcq(v, cbdata)
    })();
    done("utofu_poll_tcq", r)
}

/// The TCQ entry of a non-empty poll, under the queue's lock (whose guard lives here, not in
/// the export).
#[inline(never)]
fn take_tcq(v: &vcq::Vcq, cbdata: *mut *mut c_void) -> UResult<()> {
    let mut q = v.tcq.lock();
    let e = q.tcq.pop_front();
    // SOFTNIC_CHECK: released before the entry leaves the queue for everyone: a thread that
    // finds the queue empty then (its own put's entry polled by another thread) may reuse
    // the put's source at once.
    if let Some(e) = e.as_ref().filter(|e| e.check != 0) {
        check_release(e.check);
        softnic_fabric::trace::async_end("utofu", TRACE_IN_FLIGHT, e.check as u64);
    }
    v.queued.store(q.tcq.len(), Ordering::Release);
    drop(q);
    // Every queued entry is reported (successes with TCQ_NOTICE, and errors).
    let Some(e) = e else { return Err(UTOFU_ERR_NOT_FOUND) };
    out(cbdata, e.cbdata as *mut c_void)?;
    if e.rc == UTOFU_SUCCESS { Ok(()) } else { Err(e.rc) }
}

#[no_mangle]
pub unsafe extern "C-unwind" fn utofu_poll_mrq(h: usize, flags: u64, notice_out: *mut utofu_mrq_notice) -> i32 {
    let r = (|| {
        let v = vcq::get(h)?;
        if flags != 0 {
            return Err(UTOFU_ERR_INVALID_FLAGS);
        }
        if notice_out.is_null() {
            return Err(UTOFU_ERR_INVALID_POINTER);
        }
        v.check_overflow();
        // The notice is written word by word from the ring's slot into the caller's
        // struct (64 bytes: the type byte and its padding are word 0, the reserved words
        // 6 and 7 zero), with no copy on our stack: a struct built there and copied out
        // cost a store-forwarding stall on the type's padding.  SAFETY: `p` is the
        // popped entry, readable in the closure; `notice_out` is non-NULL (checked) and
        // the caller's utofu_mrq_notice (64 bytes, any alignment: unaligned writes).
        const _: () = assert!(std::mem::size_of::<utofu_mrq_notice>() == 64);
        let to = notice_out as *mut u64;
        let w0 = v.ring.pop_with(|p| unsafe {
            let p = p as *const u64;
            let w0 = std::ptr::read_volatile(p);
            to.write_unaligned(w0 & 0xff);
            for i in 1..6 {
                to.add(i).write_unaligned(std::ptr::read_volatile(p.add(i)));
            }
            to.add(6).write_unaligned(0);
            to.add(7).write_unaligned(0);
            w0
        });
        let Some(w0) = w0 else {
            softnic_fabric::net::poll_for_events();
            return Err(UTOFU_ERR_NOT_FOUND);
        };
        if w0 & 1 == 0 && softnic_fabric::check::enabled() {
            // SAFETY: the notice just written above.
            let n = unsafe { notice_out.read_unaligned() };
            check_mrq_release(v, n.notice_type, n.vcq_id, n.lcl_stadd, n.rmt_stadd);
        }
        let rc = (w0 >> 32) as u32 as i32;
        if rc == UTOFU_SUCCESS { Ok(()) } else { Err(rc) }
    })();
    done("utofu_poll_mrq", r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_round_trip_and_fit() {
        let rmt = VcqAddr { coords: [0, 0, 0, 1, 2, 1], tni: 1, cq: 2, cmp: Some(3), path: [0; 3] }.id();
        let h = 0x7f0c_0001_0001usize;
        let mut ops = transfer(Kind::Put, rmt, 10, 20, 8, 800, 3, 7, UTOFU_ONESIDED_FLAG_TCQ_NOTICE | 5 << PATH_SHIFT).unwrap();
        ops.push(piggyback(rmt, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32], 99, 255, 0).unwrap());
        ops.push(armw(Kind::Cswap8, rmt, 0, 5, 6, 64, 1, 0).unwrap());
        ops.push(armw(Kind::Armw4, rmt, UTOFU_ARMW_OP_OR, 5, 0, 64, 1, 0).unwrap());
        ops.push(Op::nop(UTOFU_ONESIDED_FLAG_TCQ_NOTICE));
        let mut w = Vec::new();
        for op in &ops {
            let before = w.len();
            encode(op, h, &mut w);
            assert!((w.len() - before) * 8 <= MAX_TOQ_DESC);
        }
        let back = decode(&w, h).unwrap();
        assert_eq!(back.len(), ops.len());
        for (a, b) in ops.iter().zip(&back) {
            assert_eq!(format!("{:?}", a), format!("{:?}", b));
        }
        // Prepared for another handle, truncated, or scribbled: refused.
        assert_eq!(decode(&w, h + 1).unwrap_err(), UTOFU_ERR_INVALID_DESC);
        assert_eq!(decode(&w[..w.len() - 1], h).unwrap_err(), UTOFU_ERR_INVALID_DESC);
        let mut bad = w.clone();
        bad[0] ^= 0xff;
        assert_eq!(decode(&bad, h).unwrap_err(), UTOFU_ERR_INVALID_DESC);
    }
}
