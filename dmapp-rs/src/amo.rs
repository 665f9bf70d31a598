//! Atomic memory operations on one 8-byte word, blocking, `_nb` and `_nbi`.
//!
//! Argument roles (digest 9.1): for the non-fetching AMOs (aadd, aand, aor, axor)
//! `target_*` is the remote word.  For the fetching ones (afadd, afand, afor, afxor,
//! afax, acswap) the remote word is (`source_addr`, `source_seg`, `source_pe`) and
//! `target_addr` is the LOCAL buffer that receives the old value.
//! AFAX stores `(old & andMask) ^ xorMask`; ACSWAP stores `swaperand` if
//! `old == comperand`; both always return `old`.  The remote word and the local
//! result buffer must be 8-byte aligned (ALIGNMENT_ERROR).  The operation is a real
//! CPU atomic on the target's memory, so it is atomic with respect to the target's
//! own atomics and every other PE's AMOs.

use crate::job::live;
use crate::rma::{family, Issue, Mode};
use crate::types::*;
use softnic_fabric::atomic::{AmoOp, AmoWidth};
use std::ffi::c_void;

type R = Result<Rc, Rc>;

fn out(r: R) -> Rc {
    match r {
        Ok(rc) | Err(rc) => rc,
    }
}

/// Shared core.  `result` is the local old-value buffer of a fetching AMO.  Inlined with
/// the operations below into each export, so that the operation and completion class are
/// constants there.
#[inline(always)]
fn amo(mode: Mode, addr: *mut c_void, seg: *mut SegDesc, pe: Pe, op: AmoOp, result: Option<*mut c_void>) -> R {
    match mode {
        Mode::Blocking if amo_quick(addr, seg, pe, op, result) => {
            // As Issue::finish: a blocking call runs the progress callbacks.
            return Ok(crate::progress::run_then(DMAPP_RC_SUCCESS));
        }
        Mode::Nbi if amo_quick(addr, seg, pe, op, result) => return Ok(DMAPP_RC_SUCCESS),
        _ => {}
    }
    amo_any(mode, addr, seg, pe, op, result)
}

/// The quick AMO (as `crate::rma`'s quick put): a blocking or `_nbi` AMO on an aligned
/// word of one of our symmetric segments at a PE whose segment is pinned, every hook
/// decided and off.  Then the general path would pass every check in the same order, apply
/// the same atomic through the same pin and report success: true, applied and the old
/// value written to `result`.  False, having changed nothing, in every other case; the
/// general path then runs the call.
#[inline(always)]
fn amo_quick(addr: *mut c_void, seg: *mut SegDesc, pe: Pe, op: AmoOp, result: Option<*mut c_void>) -> bool {
    // Undecided observers take the general path, which decides them (`amo_any`).
    if !softnic_fabric::observers_surely_off() || addr.is_null() || addr as usize % 8 != 0 {
        return false;
    }
    if result.is_some_and(|r| r.is_null() || r as usize % 8 != 0) {
        return false;
    }
    let Some(job) = crate::job::live_quick() else { return false };
    let Some((p, at)) = job.pinned_quick(addr, seg, pe, 8) else { return false };
    let Ok(old) = p.atomic_at(at, AmoWidth::I64, op) else { return false };
    if let Some(res) = result {
        // SAFETY: non-null and 8-aligned (checked above): the caller's result word.
        unsafe { (res as *mut u64).write(old) };
    }
    true
}

/// The general path of every AMO (out of line: the quick path stays small).
#[inline(never)]
fn amo_any(mode: Mode, addr: *mut c_void, seg: *mut SegDesc, pe: Pe, op: AmoOp, result: Option<*mut c_void>) -> R {
    softnic_fabric::decide_observers(); // for the quick path's next try (see amo_quick)
    if softnic_fabric::trace::enabled() {
        return amo_traced(mode, addr, seg, pe, op, result);
    }
    amo_untraced(mode, addr, seg, pe, op, result)
}

/// [`amo`] inside its span on the timeline (see [`crate::rma::start_span`]).
#[cold]
#[inline(never)]
fn amo_traced(mode: Mode, addr: *mut c_void, seg: *mut SegDesc, pe: Pe, op: AmoOp, result: Option<*mut c_void>) -> R {
    let names = if result.is_some() { ["dmapp_afetch_op", "dmapp_afetch_op_nb", "dmapp_afetch_op_nbi"] } else { ["dmapp_aop", "dmapp_aop_nb", "dmapp_aop_nbi"] };
    let _span = crate::rma::start_span(mode, names, pe, 8);
    amo_untraced(mode, addr, seg, pe, op, result)
}

#[inline(always)]
fn amo_untraced(mode: Mode, addr: *mut c_void, seg: *mut SegDesc, pe: Pe, op: AmoOp, result: Option<*mut c_void>) -> R {
    let job = live()?;
    if let Mode::Nb(p) = mode {
        if p.is_null() {
            return Err(DMAPP_RC_INVALID_PARAM);
        }
    }
    if seg.is_null() || addr.is_null() || result.is_some_and(|r| r.is_null()) {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    job.check_pe(pe)?;
    if addr as usize % 8 != 0 || result.is_some_and(|r| r as usize % 8 != 0) {
        return Err(DMAPP_RC_ALIGNMENT_ERROR);
    }
    let r = job.resolve(addr, seg, pe, 8, false)?;
    let t = Issue::begin(job, mode)?;
    let done = if t.lost { Err(softnic_fabric::Error::Timeout) } else { r.atomic(AmoWidth::I64, op, job.pd) };
    let done = done.map(|old| {
        if let Some(res) = result {
            // SAFETY: non-null, 8-aligned local result buffer (checked above).
            unsafe { (res as *mut u64).write(old) };
        }
    });
    Ok(t.finish(job, mode, done))
}

#[inline(always)]
fn aadd(m: Mode, t: *mut c_void, s: *mut SegDesc, pe: Pe, v: i64) -> R {
    amo(m, t, s, pe, AmoOp::Add(v as u64), None)
}
#[inline(always)]
fn aand(m: Mode, t: *mut c_void, s: *mut SegDesc, pe: Pe, v: i64) -> R {
    amo(m, t, s, pe, AmoOp::And(v as u64), None)
}
#[inline(always)]
fn aor(m: Mode, t: *mut c_void, s: *mut SegDesc, pe: Pe, v: i64) -> R {
    amo(m, t, s, pe, AmoOp::Or(v as u64), None)
}
#[inline(always)]
fn axor(m: Mode, t: *mut c_void, s: *mut SegDesc, pe: Pe, v: i64) -> R {
    amo(m, t, s, pe, AmoOp::Xor(v as u64), None)
}
#[inline(always)]
fn afadd(m: Mode, t: *mut c_void, a: *mut c_void, s: *mut SegDesc, pe: Pe, v: i64) -> R {
    amo(m, a, s, pe, AmoOp::Add(v as u64), Some(t))
}
#[inline(always)]
fn afand(m: Mode, t: *mut c_void, a: *mut c_void, s: *mut SegDesc, pe: Pe, v: i64) -> R {
    amo(m, a, s, pe, AmoOp::And(v as u64), Some(t))
}
#[inline(always)]
fn afor(m: Mode, t: *mut c_void, a: *mut c_void, s: *mut SegDesc, pe: Pe, v: i64) -> R {
    amo(m, a, s, pe, AmoOp::Or(v as u64), Some(t))
}
#[inline(always)]
fn afxor(m: Mode, t: *mut c_void, a: *mut c_void, s: *mut SegDesc, pe: Pe, v: i64) -> R {
    amo(m, a, s, pe, AmoOp::Xor(v as u64), Some(t))
}
#[inline(always)]
#[allow(non_snake_case)]
fn afax(m: Mode, t: *mut c_void, a: *mut c_void, s: *mut SegDesc, pe: Pe, andMask: i64, xorMask: i64) -> R {
    amo(m, a, s, pe, AmoOp::AndXor { and: andMask as u64, xor: xorMask as u64 }, Some(t))
}
#[inline(always)]
fn acswap(m: Mode, t: *mut c_void, a: *mut c_void, s: *mut SegDesc, pe: Pe, comperand: i64, swaperand: i64) -> R {
    amo(m, a, s, pe, AmoOp::CompareSwap { compare: comperand as u64, swap: swaperand as u64 }, Some(t))
}

family!(aadd, dmapp_aadd_qw, dmapp_aadd_qw_nb, dmapp_aadd_qw_nbi,
    (target_addr: *mut c_void, target_seg: *mut SegDesc, target_pe: Pe, operand: i64));
family!(aand, dmapp_aand_qw, dmapp_aand_qw_nb, dmapp_aand_qw_nbi,
    (target_addr: *mut c_void, target_seg: *mut SegDesc, target_pe: Pe, operand: i64));
family!(aor, dmapp_aor_qw, dmapp_aor_qw_nb, dmapp_aor_qw_nbi,
    (target_addr: *mut c_void, target_seg: *mut SegDesc, target_pe: Pe, operand: i64));
family!(axor, dmapp_axor_qw, dmapp_axor_qw_nb, dmapp_axor_qw_nbi,
    (target_addr: *mut c_void, target_seg: *mut SegDesc, target_pe: Pe, operand: i64));
family!(afadd, dmapp_afadd_qw, dmapp_afadd_qw_nb, dmapp_afadd_qw_nbi,
    (target_addr: *mut c_void, source_addr: *mut c_void, source_seg: *mut SegDesc, source_pe: Pe, operand: i64));
family!(afand, dmapp_afand_qw, dmapp_afand_qw_nb, dmapp_afand_qw_nbi,
    (target_addr: *mut c_void, source_addr: *mut c_void, source_seg: *mut SegDesc, source_pe: Pe, operand: i64));
family!(afor, dmapp_afor_qw, dmapp_afor_qw_nb, dmapp_afor_qw_nbi,
    (target_addr: *mut c_void, source_addr: *mut c_void, source_seg: *mut SegDesc, source_pe: Pe, operand: i64));
family!(afxor, dmapp_afxor_qw, dmapp_afxor_qw_nb, dmapp_afxor_qw_nbi,
    (target_addr: *mut c_void, source_addr: *mut c_void, source_seg: *mut SegDesc, source_pe: Pe, operand: i64));
family!(afax, dmapp_afax_qw, dmapp_afax_qw_nb, dmapp_afax_qw_nbi,
    (target_addr: *mut c_void, source_addr: *mut c_void, source_seg: *mut SegDesc, source_pe: Pe, and_mask: i64, xor_mask: i64));
family!(acswap, dmapp_acswap_qw, dmapp_acswap_qw_nb, dmapp_acswap_qw_nbi,
    (target_addr: *mut c_void, source_addr: *mut c_void, source_seg: *mut SegDesc, source_pe: Pe, comperand: i64, swaperand: i64));
