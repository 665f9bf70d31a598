//! Remote atomic operations.
//!
//! The initiator executes the operation itself, on the target's memory mapped
//! shared into its own address space.  Because it uses the very same
//! lock-prefixed (x86) / LL-SC or LSE (aarch64) instructions on the same cache
//! line that the target CPU's own `AtomicU64::fetch_add` etc. would use, our
//! operations are atomic with respect to the target's atomics as well as to each
//! other.  That is the contract the vendor APIs give for NIC atomics.
//!
//! Memory ordering: every access is `SeqCst`.  The vendor contracts say nothing
//! finer, users spin on the target word with whatever ordering their compiler
//! picks, and on x86 every locked RMW is sequentially consistent anyway, so a
//! weaker ordering would buy nothing where it matters and risk surprises
//! elsewhere.
//!
//! Operand conventions (chosen here, relied on by the API crates):
//! - Operands travel as `u64`.  For 32-bit widths only the low 32 bits are used;
//!   the upper 32 bits are ignored (so a sign-extended `-1i64 as u64` is a valid
//!   `I32` operand), and the returned previous value is zero-extended.
//! - `Min`/`Max` on integers are *signed* comparisons.
//! - Float operands are IEEE bit patterns (`f32::to_bits` in the low 32 bits).
//!
//! Float semantics:
//! - `Add` is IEEE addition in the current (default, round-to-nearest) mode,
//!   done in a compare-and-swap loop on the bit pattern.
//! - `Min`/`Max` follow IEEE 754 minNum/maxNum (= `f64::min`/`f64::max`, C
//!   `fmin`/`fmax`): a NaN operand loses to a number, so `Min(NaN)` leaves a
//!   number in memory unchanged and `Min(x)` replaces a NaN in memory by `x`;
//!   only if both are NaN is the result NaN (memory keeps its NaN).  Where Rust
//!   leaves the sign of zero unspecified we decide it, as IEEE 754-2019
//!   minimumNumber does: `-0.0 < +0.0`, so `min(+0, -0) = -0` and
//!   `max(+0, -0) = +0`.  When the result equals the old value bit for bit,
//!   memory is not written (the read alone is the linearisation point).
//! - `Swap` and `CompareSwap` work on bit patterns: `CompareSwap` compares bits,
//!   so `-0.0` does not match `+0.0` and a NaN matches the identical NaN.
//! - `And`/`Or`/`Xor`/`MaskedSwap`/`AndXor` on floats are `Err(Unsupported)`.

use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering::SeqCst};

use crate::{Error, Result};

/// Operand width / type of an atomic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmoWidth { I32, I64, F32, F64 }

impl AmoWidth {
    /// Size of the operand in bytes (also its required alignment).
    #[inline]
    pub fn bytes(self) -> usize {
        match self {
            AmoWidth::I32 | AmoWidth::F32 => 4,
            AmoWidth::I64 | AmoWidth::F64 => 8,
        }
    }
}

/// The operation.  Integer values travel as u64 (low 32 bits for I32); float
/// values travel as their IEEE bit patterns (`f32::to_bits` in the low 32 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmoOp {
    Add(u64),
    And(u64),
    Or(u64),
    Xor(u64),
    Swap(u64),
    /// if old == compare { new = swap }
    CompareSwap { compare: u64, swap: u64 },
    /// new = (old & !mask) | (value & mask)
    MaskedSwap { mask: u64, value: u64 },
    /// new = (old & and) ^ xor
    AndXor { and: u64, xor: u64 },
    /// signed integer min/max for I32/I64; IEEE min/max for F32/F64
    Min(u64),
    Max(u64),
}

/// Applies `op` atomically at `ptr` and returns the previous value (zero-extended).
/// Add/Min/Max on F32/F64 are float operations; And/Or/Xor/AndXor/MaskedSwap on
/// floats are `Err(Unsupported)`.  `ptr` must be aligned to the width, else `Err(Misaligned)`.
/// A null `ptr` is `Err(InvalidArg)`.  On any error memory is not touched.
///
/// # Safety
/// `ptr` must be valid for reads and writes of the width for the duration of the call.
#[inline(always)]
pub unsafe fn apply(ptr: *mut u8, width: AmoWidth, op: AmoOp) -> Result<u64> {
    // The plain integer operations (what NIC AMOs mostly are) inline in the caller: one
    // locked instruction after the null and alignment tests; the rest out of line.
    if !ptr.is_null() && (ptr as usize) & (width.bytes() - 1) == 0 {
        // SAFETY: non-null and aligned (tested); validity is the caller's promise.
        let quick = unsafe {
            match width {
                AmoWidth::I64 => int64_plain(ptr as *mut u64, op),
                AmoWidth::I32 => int32_plain(ptr as *mut u32, op).map(u64::from),
                _ => None,
            }
        };
        if let Some(old) = quick {
            return Ok(old);
        }
    }
    // SAFETY: forwarded.
    unsafe { apply_general(ptr, width, op) }
}

/// [`apply`]'s plain integer operations (None for the others).
/// # Safety: `p` non-null, 8-aligned, valid for the call, only accessed atomically.
#[inline(always)]
unsafe fn int64_plain(p: *mut u64, op: AmoOp) -> Option<u64> {
    // SAFETY: forwarded from the caller.
    let a = unsafe { AtomicU64::from_ptr(p) };
    Some(match op {
        AmoOp::Add(v) => a.fetch_add(v, SeqCst),
        AmoOp::And(v) => a.fetch_and(v, SeqCst),
        AmoOp::Or(v) => a.fetch_or(v, SeqCst),
        AmoOp::Xor(v) => a.fetch_xor(v, SeqCst),
        AmoOp::Swap(v) => a.swap(v, SeqCst),
        AmoOp::CompareSwap { compare, swap } => match a.compare_exchange(compare, swap, SeqCst, SeqCst) {
            Ok(v) | Err(v) => v,
        },
        _ => return None,
    })
}

/// [`int64_plain`] at 32 bits (the operands' low halves).
/// # Safety: `p` non-null, 4-aligned, valid for the call, only accessed atomically.
#[inline(always)]
unsafe fn int32_plain(p: *mut u32, op: AmoOp) -> Option<u32> {
    // SAFETY: forwarded from the caller.
    let a = unsafe { AtomicU32::from_ptr(p) };
    let lo = |v: u64| v as u32;
    Some(match op {
        AmoOp::Add(v) => a.fetch_add(lo(v), SeqCst),
        AmoOp::And(v) => a.fetch_and(lo(v), SeqCst),
        AmoOp::Or(v) => a.fetch_or(lo(v), SeqCst),
        AmoOp::Xor(v) => a.fetch_xor(lo(v), SeqCst),
        AmoOp::Swap(v) => a.swap(lo(v), SeqCst),
        AmoOp::CompareSwap { compare, swap } => match a.compare_exchange(lo(compare), lo(swap), SeqCst, SeqCst) {
            Ok(v) | Err(v) => v,
        },
        _ => return None,
    })
}

/// [`apply`] in full, out of line.
/// # Safety: as [`apply`].
#[inline(never)]
unsafe fn apply_general(ptr: *mut u8, width: AmoWidth, op: AmoOp) -> Result<u64> {
    if ptr.is_null() {
        return Err(Error::InvalidArg);
    }
    // Widths are powers of two, so the mask test is the alignment test.
    if (ptr as usize) & (width.bytes() - 1) != 0 {
        return Err(Error::Misaligned);
    }
    // Reject unsupported float ops before creating any reference to memory.
    if matches!(width, AmoWidth::F32 | AmoWidth::F64) && !float_op_supported(op) {
        return Err(Error::Unsupported);
    }
    // SAFETY: non-null and aligned (checked above); the caller guarantees validity
    // for reads and writes of `width` bytes for the duration of the call.  Other
    // parties (the target CPU, other initiators) only access the word atomically,
    // which is what `from_ptr` requires; plain non-atomic racing accesses by the
    // user are the user's data race, exactly as on the real hardware.
    unsafe {
        Ok(match width {
            AmoWidth::I32 => int32(ptr as *mut u32, op) as u64,
            AmoWidth::I64 => int64(ptr as *mut u64, op),
            AmoWidth::F32 => float32(ptr as *mut u32, op) as u64,
            AmoWidth::F64 => float64(ptr as *mut u64, op),
        })
    }
}

fn float_op_supported(op: AmoOp) -> bool {
    matches!(op, AmoOp::Add(_) | AmoOp::Swap(_) | AmoOp::CompareSwap { .. } | AmoOp::Min(_) | AmoOp::Max(_))
}

/// Read-modify-write with `f(old) -> Some(new)`, or `None` to leave memory as is.
/// Returns the previous value.
fn rmw32(a: &AtomicU32, f: impl FnMut(u32) -> Option<u32>) -> u32 {
    match a.fetch_update(SeqCst, SeqCst, f) {
        Ok(v) | Err(v) => v,
    }
}

fn rmw64(a: &AtomicU64, f: impl FnMut(u64) -> Option<u64>) -> u64 {
    match a.fetch_update(SeqCst, SeqCst, f) {
        Ok(v) | Err(v) => v,
    }
}

/// # Safety: `p` non-null, 4-aligned, valid for the call, only accessed atomically.
unsafe fn int32(p: *mut u32, op: AmoOp) -> u32 {
    // SAFETY: forwarded from the caller (see `apply`).
    if let Some(old) = unsafe { int32_plain(p, op) } {
        return old;
    }
    // SAFETY: as above.
    let a = unsafe { AtomicU32::from_ptr(p) };
    let lo = |v: u64| v as u32;
    match op {
        AmoOp::MaskedSwap { mask, value } => {
            let (m, v) = (lo(mask), lo(value));
            rmw32(a, |old| Some((old & !m) | (v & m)))
        }
        AmoOp::AndXor { and, xor } => {
            let (an, x) = (lo(and), lo(xor));
            rmw32(a, |old| Some((old & an) ^ x))
        }
        AmoOp::Min(v) | AmoOp::Max(v) => {
            // SAFETY: same memory, same size and alignment as AtomicU32.
            let s = unsafe { AtomicI32::from_ptr(p as *mut i32) };
            let v = lo(v) as i32;
            let old = if matches!(op, AmoOp::Min(_)) { s.fetch_min(v, SeqCst) } else { s.fetch_max(v, SeqCst) };
            old as u32
        }
        // int32_plain did these.
        AmoOp::Add(_) | AmoOp::And(_) | AmoOp::Or(_) | AmoOp::Xor(_) | AmoOp::Swap(_) | AmoOp::CompareSwap { .. } => unreachable!("plain operation"),
    }
}

/// # Safety: `p` non-null, 8-aligned, valid for the call, only accessed atomically.
unsafe fn int64(p: *mut u64, op: AmoOp) -> u64 {
    // SAFETY: forwarded from the caller (see `apply`).
    if let Some(old) = unsafe { int64_plain(p, op) } {
        return old;
    }
    // SAFETY: as above.
    let a = unsafe { AtomicU64::from_ptr(p) };
    match op {
        AmoOp::MaskedSwap { mask, value } => rmw64(a, |old| Some((old & !mask) | (value & mask))),
        AmoOp::AndXor { and, xor } => rmw64(a, |old| Some((old & and) ^ xor)),
        AmoOp::Min(v) | AmoOp::Max(v) => {
            // SAFETY: same memory, same size and alignment as AtomicU64.
            let s = unsafe { AtomicI64::from_ptr(p as *mut i64) };
            let old = if matches!(op, AmoOp::Min(_)) { s.fetch_min(v as i64, SeqCst) } else { s.fetch_max(v as i64, SeqCst) };
            old as u64
        }
        // int64_plain did these.
        AmoOp::Add(_) | AmoOp::And(_) | AmoOp::Or(_) | AmoOp::Xor(_) | AmoOp::Swap(_) | AmoOp::CompareSwap { .. } => unreachable!("plain operation"),
    }
}

/// IEEE minNum / maxNum with `-0 < +0` (see the module comment), for f64 and f32.  A NaN
/// in memory (`a`) loses to a number; both NaN keeps `a` bit for bit, so memory is not
/// rewritten.
macro_rules! ieee_min_max {
    ($t:ty, $min:ident, $max:ident) => {
        pub fn $min(a: $t, b: $t) -> $t {
            if a.is_nan() {
                return if b.is_nan() { a } else { b };
            }
            if b.is_nan() || a < b {
                return a;
            }
            if b < a {
                return b;
            }
            // Equal: only ±0 can differ; prefer the negative one.
            if a.is_sign_negative() { a } else { b }
        }

        pub fn $max(a: $t, b: $t) -> $t {
            if a.is_nan() {
                return if b.is_nan() { a } else { b };
            }
            if b.is_nan() || a > b {
                return a;
            }
            if b > a {
                return b;
            }
            if a.is_sign_positive() { a } else { b }
        }
    };
}

ieee_min_max!(f64, fmin64, fmax64);
ieee_min_max!(f32, fmin32, fmax32);

/// `Some(new)` unless `new` is bit-identical to `old` (then skip the store).
fn changed32(old: u32, new: u32) -> Option<u32> {
    (old != new).then_some(new)
}

fn changed64(old: u64, new: u64) -> Option<u64> {
    (old != new).then_some(new)
}

/// # Safety: as `int32`.  `op` must be a supported float op.
unsafe fn float32(p: *mut u32, op: AmoOp) -> u32 {
    // SAFETY: forwarded from the caller (see `apply`).
    let a = unsafe { AtomicU32::from_ptr(p) };
    let f = |v: u64| f32::from_bits(v as u32);
    match op {
        AmoOp::Add(v) => {
            let x = f(v);
            rmw32(a, |old| Some((f32::from_bits(old) + x).to_bits()))
        }
        AmoOp::Swap(v) => a.swap(v as u32, SeqCst),
        AmoOp::CompareSwap { compare, swap } => {
            match a.compare_exchange(compare as u32, swap as u32, SeqCst, SeqCst) {
                Ok(v) | Err(v) => v,
            }
        }
        AmoOp::Min(v) => {
            let x = f(v);
            rmw32(a, |old| changed32(old, fmin32(f32::from_bits(old), x).to_bits()))
        }
        AmoOp::Max(v) => {
            let x = f(v);
            rmw32(a, |old| changed32(old, fmax32(f32::from_bits(old), x).to_bits()))
        }
        // Filtered out in `apply`; keep memory untouched if ever reached.
        AmoOp::And(_) | AmoOp::Or(_) | AmoOp::Xor(_) | AmoOp::MaskedSwap { .. } | AmoOp::AndXor { .. } => {
            a.load(SeqCst)
        }
    }
}

/// # Safety: as `int64`.  `op` must be a supported float op.
unsafe fn float64(p: *mut u64, op: AmoOp) -> u64 {
    // SAFETY: forwarded from the caller (see `apply`).
    let a = unsafe { AtomicU64::from_ptr(p) };
    match op {
        AmoOp::Add(v) => {
            let x = f64::from_bits(v);
            rmw64(a, |old| Some((f64::from_bits(old) + x).to_bits()))
        }
        AmoOp::Swap(v) => a.swap(v, SeqCst),
        AmoOp::CompareSwap { compare, swap } => match a.compare_exchange(compare, swap, SeqCst, SeqCst) {
            Ok(v) | Err(v) => v,
        },
        AmoOp::Min(v) => {
            let x = f64::from_bits(v);
            rmw64(a, |old| changed64(old, fmin64(f64::from_bits(old), x).to_bits()))
        }
        AmoOp::Max(v) => {
            let x = f64::from_bits(v);
            rmw64(a, |old| changed64(old, fmax64(f64::from_bits(old), x).to_bits()))
        }
        AmoOp::And(_) | AmoOp::Or(_) | AmoOp::Xor(_) | AmoOp::MaskedSwap { .. } | AmoOp::AndXor { .. } => {
            a.load(SeqCst)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use AmoOp::*;
    use AmoWidth::*;

    /// Runs `op` on a 64-bit word holding `init`; returns (previous, new).
    fn run64(width: AmoWidth, init: u64, op: AmoOp) -> (u64, u64) {
        let mut w: u64 = init;
        let prev = unsafe { apply(&mut w as *mut u64 as *mut u8, width, op) }.unwrap();
        (prev, w)
    }

    /// Runs `op` on the middle u32 of three, checking the neighbours are untouched.
    fn run32(width: AmoWidth, init: u32, op: AmoOp) -> (u64, u32) {
        // Aligned to 8 so index 1 is 4- but not 8-aligned: a 64-bit access there
        // would be caught as misaligned, a sloppy 64-bit RMW would hit a neighbour.
        #[repr(C, align(8))]
        struct Three([u32; 3]);
        let mut t = Three([0xDEAD_BEEF, init, 0xCAFE_F00D]);
        let prev = unsafe { apply(&mut t.0[1] as *mut u32 as *mut u8, width, op) }.unwrap();
        assert_eq!(t.0[0], 0xDEAD_BEEF, "low neighbour touched by {op:?}");
        assert_eq!(t.0[2], 0xCAFE_F00D, "high neighbour touched by {op:?}");
        assert_eq!(prev >> 32, 0, "previous value not zero-extended");
        (prev, t.0[1])
    }

    #[test]
    fn i64_ops_exact() {
        assert_eq!(run64(I64, 40, Add(2)), (40, 42));
        assert_eq!(run64(I64, u64::MAX, Add(1)), (u64::MAX, 0), "add wraps");
        assert_eq!(run64(I64, 5, Add(-7i64 as u64)), (5, -2i64 as u64), "add of negative");
        assert_eq!(run64(I64, 0xF0F0, And(0xFF00)), (0xF0F0, 0xF000));
        assert_eq!(run64(I64, 0xF0F0, Or(0x0F01)), (0xF0F0, 0xFFF1));
        assert_eq!(run64(I64, 0xF0F0, Xor(0xFFFF)), (0xF0F0, 0x0F0F));
        assert_eq!(run64(I64, 7, Swap(u64::MAX)), (7, u64::MAX));
        assert_eq!(run64(I64, 7, CompareSwap { compare: 7, swap: 9 }), (7, 9), "matching CAS swaps");
        assert_eq!(run64(I64, 7, CompareSwap { compare: 8, swap: 9 }), (7, 7), "failing CAS returns old");
        assert_eq!(
            run64(I64, 0x1122_3344_5566_7788, MaskedSwap { mask: 0xFFFF_0000_0000_FF00, value: 0xAAAA_BBBB_CCCC_DDDD }),
            (0x1122_3344_5566_7788, 0xAAAA_3344_5566_DD88)
        );
        assert_eq!(
            run64(I64, 0xFF00_FF00_FF00_FF00, AndXor { and: 0xFFFF_0000_FFFF_0000, xor: 0x0000_0000_0000_00FF }),
            (0xFF00_FF00_FF00_FF00, 0xFF00_0000_FF00_00FF)
        );
        // AndXor with and=!0 is Xor, with xor=0 is And: identities users rely on.
        assert_eq!(run64(I64, 0b1010, AndXor { and: !0, xor: 0b0110 }), (0b1010, 0b1100));
        assert_eq!(run64(I64, 0b1010, AndXor { and: 0b0011, xor: 0 }), (0b1010, 0b0010));
    }

    #[test]
    fn i64_min_max_signed() {
        assert_eq!(run64(I64, 5, Min(-3i64 as u64)), (5, -3i64 as u64));
        assert_eq!(run64(I64, -3i64 as u64, Min(5)), (-3i64 as u64, -3i64 as u64));
        assert_eq!(run64(I64, 5, Max(-3i64 as u64)), (5, 5));
        assert_eq!(run64(I64, -3i64 as u64, Max(5)), (-3i64 as u64, 5));
        assert_eq!(run64(I64, i64::MAX as u64, Min(i64::MIN as u64)), (i64::MAX as u64, i64::MIN as u64));
        assert_eq!(run64(I64, i64::MIN as u64, Max(i64::MAX as u64)), (i64::MIN as u64, i64::MAX as u64));
        // Unsigned view would say u64::MAX > 1; signed says -1 < 1.
        assert_eq!(run64(I64, u64::MAX, Max(1)), (u64::MAX, 1));
    }

    #[test]
    fn i32_ops_exact_and_neighbours_untouched() {
        assert_eq!(run32(I32, 40, Add(2)), (40, 42));
        assert_eq!(run32(I32, u32::MAX, Add(1)), (u32::MAX as u64, 0), "add wraps at 32 bits, no carry out");
        assert_eq!(run32(I32, 5, Add(-7i64 as u64)), (5, -2i32 as u32), "sign-extended operand");
        assert_eq!(run32(I32, 1, Add(0xFFFF_FFFF_0000_0002)), (1, 3), "upper operand bits ignored");
        assert_eq!(run32(I32, 0xF0F0, And(0xFF00)), (0xF0F0, 0xF000));
        assert_eq!(run32(I32, 0xF0F0, Or(0x0F01)), (0xF0F0, 0xFFF1));
        assert_eq!(run32(I32, 0xF0F0, Xor(0xFFFF_FFFF_FFFF_FFFF)), (0xF0F0, 0xFFFF_0F0F));
        assert_eq!(run32(I32, 7, Swap(0x1_0000_0009)), (7, 9));
        assert_eq!(run32(I32, 7, CompareSwap { compare: 7, swap: 9 }), (7, 9));
        assert_eq!(run32(I32, 7, CompareSwap { compare: 8, swap: 9 }), (7, 7));
        assert_eq!(run32(I32, 7, CompareSwap { compare: 0xFFFF_FFFF_0000_0007, swap: 9 }), (7, 9), "compare uses low 32 bits");
        assert_eq!(run32(I32, 0x1122_3344, MaskedSwap { mask: 0xFF00_00FF, value: 0xAABB_CCDD }), (0x1122_3344, 0xAA22_33DD));
        assert_eq!(run32(I32, 0xFF00_FF00, AndXor { and: 0xFFFF_0000, xor: 0x0000_00FF }), (0xFF00_FF00, 0xFF00_00FF));
        // Previous value is zero-extended even when its sign bit is set.
        assert_eq!(run32(I32, 0x8000_0000, Add(0)), (0x8000_0000, 0x8000_0000));
    }

    #[test]
    fn i32_min_max_signed() {
        assert_eq!(run32(I32, 5, Min(-3i64 as u64)), (5, -3i32 as u32));
        assert_eq!(run32(I32, 5, Min(0xFFFF_FFFD)), (5, -3i32 as u32), "low 32 bits are an i32");
        assert_eq!(run32(I32, 5, Max(-3i64 as u64)), (5, 5));
        assert_eq!(run32(I32, -3i32 as u32, Max(5)), (-3i32 as u32 as u64, 5));
        assert_eq!(run32(I32, i32::MIN as u32, Max(i32::MAX as u64)), (0x8000_0000, i32::MAX as u32));
        assert_eq!(run32(I32, i32::MAX as u32, Min(i32::MIN as u32 as u64)), (i32::MAX as u64, 0x8000_0000));
    }

    fn b64(x: f64) -> u64 { x.to_bits() }
    fn b32(x: f32) -> u64 { x.to_bits() as u64 }

    fn runf64(init: f64, op: AmoOp) -> (f64, f64) {
        let (p, n) = run64(F64, init.to_bits(), op);
        (f64::from_bits(p), f64::from_bits(n))
    }

    fn runf32(init: f32, op: AmoOp) -> (f32, f32) {
        let (p, n) = run32(F32, init.to_bits(), op);
        (f32::from_bits(p as u32), f32::from_bits(n))
    }

    #[test]
    fn f64_ops() {
        assert_eq!(runf64(1.5, Add(b64(2.25))), (1.5, 3.75));
        assert_eq!(runf64(1.0, Add(b64(-3.0))), (1.0, -2.0));
        assert_eq!(runf64(f64::MAX, Add(b64(f64::MAX))), (f64::MAX, f64::INFINITY), "overflow to inf");
        assert!(runf64(f64::INFINITY, Add(b64(f64::NEG_INFINITY))).1.is_nan());
        assert_eq!(runf64(1.5, Swap(b64(-7.0))), (1.5, -7.0));
        assert_eq!(runf64(1.5, CompareSwap { compare: b64(1.5), swap: b64(2.0) }), (1.5, 2.0));
        assert_eq!(runf64(1.5, CompareSwap { compare: b64(1.0), swap: b64(2.0) }), (1.5, 1.5));
        assert_eq!(runf64(1.5, Min(b64(-2.0))), (1.5, -2.0));
        assert_eq!(runf64(1.5, Min(b64(2.0))), (1.5, 1.5));
        assert_eq!(runf64(1.5, Max(b64(2.0))), (1.5, 2.0));
        assert_eq!(runf64(1.5, Max(b64(-2.0))), (1.5, 1.5));
        assert_eq!(runf64(-1.0, Min(b64(f64::NEG_INFINITY))).1, f64::NEG_INFINITY);
        assert_eq!(runf64(-1.0, Max(b64(f64::INFINITY))).1, f64::INFINITY);
    }

    #[test]
    fn f64_compare_swap_is_bitwise() {
        // -0.0 == +0.0 numerically, but the CAS compares bits.
        let (p, n) = run64(F64, b64(0.0), CompareSwap { compare: b64(-0.0), swap: b64(1.0) });
        assert_eq!((p, n), (b64(0.0), b64(0.0)));
        // NaN != NaN numerically, but the identical bit pattern matches.
        let nan = f64::NAN.to_bits();
        assert_eq!(run64(F64, nan, CompareSwap { compare: nan, swap: b64(1.0) }), (nan, b64(1.0)));
    }

    #[test]
    fn f64_nan_and_signed_zero_min_max() {
        let nan = f64::NAN.to_bits();
        // A NaN operand loses to the number in memory: memory unchanged.
        assert_eq!(run64(F64, b64(3.0), Min(nan)), (b64(3.0), b64(3.0)));
        assert_eq!(run64(F64, b64(3.0), Max(nan)), (b64(3.0), b64(3.0)));
        // A NaN in memory loses to the operand.
        assert_eq!(run64(F64, nan, Min(b64(3.0))), (nan, b64(3.0)));
        assert_eq!(run64(F64, nan, Max(b64(-3.0))), (nan, b64(-3.0)));
        // Both NaN: memory keeps its own NaN (payload preserved).
        let other_nan = nan | 1;
        assert_eq!(run64(F64, nan, Min(other_nan)), (nan, nan));
        // -0 < +0.
        assert_eq!(run64(F64, b64(0.0), Min(b64(-0.0))), (b64(0.0), b64(-0.0)));
        assert_eq!(run64(F64, b64(-0.0), Min(b64(0.0))), (b64(-0.0), b64(-0.0)));
        assert_eq!(run64(F64, b64(-0.0), Max(b64(0.0))), (b64(-0.0), b64(0.0)));
        assert_eq!(run64(F64, b64(0.0), Max(b64(-0.0))), (b64(0.0), b64(0.0)));
    }

    #[test]
    fn f32_ops_and_neighbours_untouched() {
        assert_eq!(runf32(1.5, Add(b32(2.25))), (1.5, 3.75));
        assert_eq!(runf32(1.0, Add(b32(-3.0))), (1.0, -2.0));
        assert_eq!(runf32(f32::MAX, Add(b32(f32::MAX))), (f32::MAX, f32::INFINITY));
        // 2^24 + 1 is not representable in f32: rounds to even (stays 2^24).
        assert_eq!(runf32(16_777_216.0, Add(b32(1.0))), (16_777_216.0, 16_777_216.0));
        assert_eq!(runf32(1.5, Swap(b32(-7.0))), (1.5, -7.0));
        assert_eq!(runf32(1.5, CompareSwap { compare: b32(1.5), swap: b32(2.0) }), (1.5, 2.0));
        assert_eq!(runf32(1.5, CompareSwap { compare: b32(1.0), swap: b32(2.0) }), (1.5, 1.5));
        assert_eq!(runf32(1.5, Min(b32(-2.0))), (1.5, -2.0));
        assert_eq!(runf32(1.5, Min(b32(2.0))), (1.5, 1.5));
        assert_eq!(runf32(1.5, Max(b32(2.0))), (1.5, 2.0));
        assert_eq!(runf32(1.5, Max(b32(-2.0))), (1.5, 1.5));
        // The f32 operand is the low 32 bits; the upper bits are ignored.
        assert_eq!(runf32(1.0, Add(0xFFFF_FFFF_0000_0000 | b32(0.5))), (1.0, 1.5));
    }

    #[test]
    fn f32_nan_and_signed_zero_min_max() {
        let nan = f32::NAN.to_bits();
        assert_eq!(run32(F32, 3.0f32.to_bits(), Min(nan as u64)).1, 3.0f32.to_bits());
        assert_eq!(run32(F32, 3.0f32.to_bits(), Max(nan as u64)).1, 3.0f32.to_bits());
        assert_eq!(run32(F32, nan, Min(b32(3.0))).1, 3.0f32.to_bits());
        assert_eq!(run32(F32, nan, Max(b32(-3.0))).1, (-3.0f32).to_bits());
        assert_eq!(run32(F32, nan, Min((nan | 1) as u64)).1, nan);
        assert_eq!(run32(F32, 0.0f32.to_bits(), Min(b32(-0.0))).1, (-0.0f32).to_bits());
        assert_eq!(run32(F32, (-0.0f32).to_bits(), Max(b32(0.0))).1, 0.0f32.to_bits());
        assert_eq!(run32(F32, 0.0f32.to_bits(), CompareSwap { compare: b32(-0.0), swap: b32(1.0) }).1, 0);
    }

    #[test]
    fn float_bitwise_ops_unsupported_and_untouched() {
        for width in [F32, F64] {
            for op in [And(1), Or(1), Xor(1), MaskedSwap { mask: 1, value: 1 }, AndXor { and: 1, xor: 1 }] {
                let mut w: u64 = 0x1234;
                let r = unsafe { apply(&mut w as *mut u64 as *mut u8, width, op) };
                assert_eq!(r, Err(Error::Unsupported), "{width:?} {op:?}");
                assert_eq!(w, 0x1234);
            }
        }
    }

    #[test]
    fn null_and_misaligned_rejected_without_touching_memory() {
        for width in [I32, I64, F32, F64] {
            assert_eq!(unsafe { apply(std::ptr::null_mut(), width, Add(1)) }, Err(Error::InvalidArg));
        }
        #[repr(C, align(8))]
        struct Buf([u8; 24]);
        let mut b = Buf([0x55; 24]);
        let base = b.0.as_mut_ptr();
        for off in 1..8usize {
            for width in [I32, I64, F32, F64] {
                if off % width.bytes() == 0 {
                    continue;
                }
                let r = unsafe { apply(base.add(off), width, Swap(0)) };
                assert_eq!(r, Err(Error::Misaligned), "{width:?} at +{off}");
            }
        }
        // Misalignment wins over an unsupported float op; null wins over both.
        assert_eq!(unsafe { apply(base.add(2), F64, And(0)) }, Err(Error::Misaligned));
        assert_eq!(unsafe { apply(std::ptr::null_mut(), F64, And(0)) }, Err(Error::InvalidArg));
        assert!(b.0.iter().all(|&x| x == 0x55), "memory touched on error");
        // 4-aligned but not 8-aligned is fine for 32-bit widths.
        assert_eq!(unsafe { apply(base.add(4), I32, Swap(1)) }, Ok(0x5555_5555));
    }

    #[test]
    fn fmin_fmax_helpers_match_std_where_std_is_defined() {
        let vals = [-f64::INFINITY, -2.5, -1.0, -0.0, 0.0, 1.0, 2.5, f64::INFINITY, f64::NAN];
        for &a in &vals {
            for &b in &vals {
                let (m, x) = (fmin64(a, b), fmax64(a, b));
                if a == 0.0 && b == 0.0 {
                    continue; // std leaves the zero sign unspecified; covered above.
                }
                assert_eq!(m.to_bits(), a.min(b).to_bits(), "min({a},{b})");
                assert_eq!(x.to_bits(), a.max(b).to_bits(), "max({a},{b})");
                let (m32, x32) = (fmin32(a as f32, b as f32), fmax32(a as f32, b as f32));
                assert_eq!(m32.to_bits(), (a as f32).min(b as f32).to_bits());
                assert_eq!(x32.to_bits(), (a as f32).max(b as f32).to_bits());
            }
        }
    }
}
