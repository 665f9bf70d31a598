//! Element-wise reduction: the combine step every collective (uGNI's collective engine,
//! DMAPP's `dmapp_c_greduce`, uTofu's barrier reductions) applies to two contributions.
//!
//! Elements are stored in their C layouts, native byte order.  Value/index pairs
//! (`Loc*`) are 16 bytes: the value at offset 0 (4 or 8 bytes), the 64-bit index at 8.
//! Complex numbers are (re, im) pairs of f32 or f64.
//!
//! Floating point follows IEEE 754 in a chosen rounding mode ([`Rounding`]); the
//! exceptions raised while combining are reported ([`Fpe`]), so that the collective engine
//! can set its FPE bits.  Determinism is the caller's part: combining in one fixed order
//! gives the same bits everywhere.

use crate::{Error, Result};

/// Element types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
    /// complex of two f32 (re, im)
    C32,
    /// complex of two f64
    C64,
    /// (value, u64 index) pairs
    LocI32,
    LocU32,
    LocI64,
    LocU64,
    LocF32,
    LocF64,
}

/// Which index wins when two values of a MINLOC/MAXLOC are equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ties {
    LowerIndex,
    GreaterIndex,
}

/// Operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Sum,
    Prod,
    Min,
    Max,
    BAnd,
    BOr,
    BXor,
    LAnd,
    LOr,
    LXor,
    MinLoc(Ties),
    MaxLoc(Ties),
}

/// IEEE rounding modes for floating-point sums and products.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Rounding {
    #[default]
    Nearest,
    Up,
    Down,
    TowardZero,
}

/// Floating-point exceptions raised while combining (a bit set).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Fpe(pub u32);

impl Fpe {
    pub const INVALID: u32 = 1;
    pub const OVERFLOW: u32 = 2;
    pub const UNDERFLOW: u32 = 4;
    pub const INEXACT: u32 = 8;
}

impl Elem {
    /// Bytes of one element.
    pub fn size(self) -> usize {
        match self {
            Elem::I32 | Elem::U32 | Elem::F32 => 4,
            Elem::I64 | Elem::U64 | Elem::F64 | Elem::C32 => 8,
            Elem::C64 | Elem::LocI32 | Elem::LocU32 | Elem::LocI64 | Elem::LocU64 | Elem::LocF32 | Elem::LocF64 => 16,
        }
    }

    fn is_float(self) -> bool {
        matches!(self, Elem::F32 | Elem::F64 | Elem::C32 | Elem::C64 | Elem::LocF32 | Elem::LocF64)
    }

    fn is_loc(self) -> bool {
        matches!(self, Elem::LocI32 | Elem::LocU32 | Elem::LocI64 | Elem::LocU64 | Elem::LocF32 | Elem::LocF64)
    }

    fn is_complex(self) -> bool {
        matches!(self, Elem::C32 | Elem::C64)
    }

    /// A stable code (for shared memory and messages).
    pub fn code(self) -> u32 {
        self as u32
    }

    pub fn from_code(c: u32) -> Option<Elem> {
        use Elem::*;
        [I32, U32, I64, U64, F32, F64, C32, C64, LocI32, LocU32, LocI64, LocU64, LocF32, LocF64].get(c as usize).copied()
    }
}

impl Op {
    /// Is `self` defined on `e`?  Bitwise operations want integers; MIN/MAX/SUM/PROD want
    /// plain numbers (MIN/MAX not complex); logical operations integers; the LOC
    /// operations exactly the value/index pairs.
    pub fn valid_for(self, e: Elem) -> bool {
        match self {
            Op::Sum | Op::Prod => !e.is_loc(),
            Op::Min | Op::Max => !e.is_loc() && !e.is_complex(),
            Op::BAnd | Op::BOr | Op::BXor | Op::LAnd | Op::LOr | Op::LXor => !e.is_loc() && !e.is_float(),
            Op::MinLoc(_) | Op::MaxLoc(_) => e.is_loc(),
        }
    }

    pub fn code(self) -> u32 {
        match self {
            Op::Sum => 0,
            Op::Prod => 1,
            Op::Min => 2,
            Op::Max => 3,
            Op::BAnd => 4,
            Op::BOr => 5,
            Op::BXor => 6,
            Op::LAnd => 7,
            Op::LOr => 8,
            Op::LXor => 9,
            Op::MinLoc(Ties::LowerIndex) => 10,
            Op::MinLoc(Ties::GreaterIndex) => 11,
            Op::MaxLoc(Ties::LowerIndex) => 12,
            Op::MaxLoc(Ties::GreaterIndex) => 13,
        }
    }

    pub fn from_code(c: u32) -> Option<Op> {
        Some(match c {
            0 => Op::Sum,
            1 => Op::Prod,
            2 => Op::Min,
            3 => Op::Max,
            4 => Op::BAnd,
            5 => Op::BOr,
            6 => Op::BXor,
            7 => Op::LAnd,
            8 => Op::LOr,
            9 => Op::LXor,
            10 => Op::MinLoc(Ties::LowerIndex),
            11 => Op::MinLoc(Ties::GreaterIndex),
            12 => Op::MaxLoc(Ties::LowerIndex),
            13 => Op::MaxLoc(Ties::GreaterIndex),
            _ => return None,
        })
    }
}

impl Rounding {
    pub fn code(self) -> u32 {
        self as u32
    }
    pub fn from_code(c: u32) -> Rounding {
        match c {
            1 => Rounding::Up,
            2 => Rounding::Down,
            3 => Rounding::TowardZero,
            _ => Rounding::Nearest,
        }
    }
    fn fenv(self) -> i32 {
        match self {
            Rounding::Nearest => fe::TONEAREST,
            Rounding::Up => fe::UPWARD,
            Rounding::Down => fe::DOWNWARD,
            Rounding::TowardZero => fe::TOWARDZERO,
        }
    }
}

/// <fenv.h> values (not in the libc crate), per architecture.
#[cfg(target_arch = "x86_64")]
mod fe {
    pub const INVALID: i32 = 0x01;
    pub const OVERFLOW: i32 = 0x08;
    pub const UNDERFLOW: i32 = 0x10;
    pub const INEXACT: i32 = 0x20;
    pub const TONEAREST: i32 = 0;
    pub const DOWNWARD: i32 = 0x400;
    pub const UPWARD: i32 = 0x800;
    pub const TOWARDZERO: i32 = 0xc00;
}
#[cfg(target_arch = "aarch64")]
mod fe {
    pub const INVALID: i32 = 0x01;
    pub const OVERFLOW: i32 = 0x04;
    pub const UNDERFLOW: i32 = 0x08;
    pub const INEXACT: i32 = 0x10;
    pub const TONEAREST: i32 = 0;
    pub const UPWARD: i32 = 0x40_0000;
    pub const DOWNWARD: i32 = 0x80_0000;
    pub const TOWARDZERO: i32 = 0xc0_0000;
}

extern "C" {
    fn fegetround() -> i32;
    fn fesetround(mode: i32) -> i32;
    fn feclearexcept(excepts: i32) -> i32;
    fn fetestexcept(excepts: i32) -> i32;
}

fn fe_all() -> i32 {
    fe::INVALID | fe::OVERFLOW | fe::UNDERFLOW | fe::INEXACT
}

/// `acc[i] = acc[i] op x[i]` for every element; `acc` and `x` hold the same whole number
/// of elements.  Floating point in `rounding`; returns the exceptions raised.
/// `InvalidArg` for an operation the type does not have or mismatched lengths.
pub fn combine(op: Op, e: Elem, rounding: Rounding, acc: &mut [u8], x: &[u8]) -> Result<Fpe> {
    let n = e.size();
    if !op.valid_for(e) || acc.len() != x.len() || acc.len() % n != 0 {
        return Err(Error::InvalidArg);
    }
    // SAFETY: C99 floating-point environment calls on this thread; restored below.
    let saved = unsafe { fegetround() };
    // SAFETY: as above.
    unsafe {
        fesetround(rounding.fenv());
        feclearexcept(fe_all());
    }
    // The compiler takes floating-point arithmetic for free of side effects and may move it
    // across the environment calls (it did, once a change elsewhere altered the inlining):
    // the operands pass through an opaque barrier after the flags are cleared, and the
    // results through one before they are read.
    let (acc, x) = std::hint::black_box((acc, x));
    for (a, b) in acc.chunks_exact_mut(n).zip(x.chunks_exact(n)) {
        one(op, e, a, b);
    }
    std::hint::black_box(&*acc);
    // SAFETY: as above.
    let raised = unsafe { fetestexcept(fe_all()) };
    // SAFETY: as above.
    unsafe {
        feclearexcept(fe_all());
        fesetround(saved);
    }
    let mut f = 0;
    for (bit, flag) in [(Fpe::INVALID, fe::INVALID), (Fpe::OVERFLOW, fe::OVERFLOW), (Fpe::UNDERFLOW, fe::UNDERFLOW), (Fpe::INEXACT, fe::INEXACT)] {
        if raised & flag != 0 {
            f |= bit;
        }
    }
    Ok(Fpe(f))
}

macro_rules! rd {
    ($t:ty, $b:expr) => {
        <$t>::from_ne_bytes($b.try_into().expect("element size"))
    };
}

fn int_op<T: Copy + PartialOrd + Default + PartialEq>(op: Op, a: T, b: T, add: fn(T, T) -> T, mul: fn(T, T) -> T, and: fn(T, T) -> T, or: fn(T, T) -> T, xor: fn(T, T) -> T, one: T) -> T {
    let zero = T::default();
    let truth = |v: T| v != zero;
    let from = |t: bool| if t { one } else { zero };
    match op {
        Op::Sum => add(a, b),
        Op::Prod => mul(a, b),
        Op::Min => {
            if b < a {
                b
            } else {
                a
            }
        }
        Op::Max => {
            if b > a {
                b
            } else {
                a
            }
        }
        Op::BAnd => and(a, b),
        Op::BOr => or(a, b),
        Op::BXor => xor(a, b),
        Op::LAnd => from(truth(a) && truth(b)),
        Op::LOr => from(truth(a) || truth(b)),
        Op::LXor => from(truth(a) != truth(b)),
        Op::MinLoc(_) | Op::MaxLoc(_) => a,
    }
}

fn float_op<T: Copy + PartialOrd + std::ops::Add<Output = T> + std::ops::Mul<Output = T>>(op: Op, a: T, b: T) -> T {
    match op {
        Op::Sum => a + b,
        Op::Prod => a * b,
        // A NaN never wins: min/max of a number and a NaN is the number (IEEE minNum).
        Op::Min => {
            if b < a || a != a {
                b
            } else {
                a
            }
        }
        Op::Max => {
            if b > a || a != a {
                b
            } else {
                a
            }
        }
        _ => a,
    }
}

/// MINLOC/MAXLOC on (value, index): the better value wins, ties go by `ties`.
fn loc<T: PartialOrd>(op: Op, av: T, ai: u64, bv: T, bi: u64) -> bool {
    let (min, ties) = match op {
        Op::MinLoc(t) => (true, t),
        Op::MaxLoc(t) => (false, t),
        _ => return false,
    };
    if bv == av {
        return match ties {
            Ties::LowerIndex => bi < ai,
            Ties::GreaterIndex => bi > ai,
        };
    }
    if min {
        bv < av
    } else {
        bv > av
    }
}

/// One element: `a = a op b`.
fn one(op: Op, e: Elem, a: &mut [u8], b: &[u8]) {
    match e {
        Elem::I32 => {
            let r = int_op(op, rd!(i32, &a[..]), rd!(i32, b), i32::wrapping_add, i32::wrapping_mul, |x, y| x & y, |x, y| x | y, |x, y| x ^ y, 1);
            a.copy_from_slice(&r.to_ne_bytes());
        }
        Elem::U32 => {
            let r = int_op(op, rd!(u32, &a[..]), rd!(u32, b), u32::wrapping_add, u32::wrapping_mul, |x, y| x & y, |x, y| x | y, |x, y| x ^ y, 1);
            a.copy_from_slice(&r.to_ne_bytes());
        }
        Elem::I64 => {
            let r = int_op(op, rd!(i64, &a[..]), rd!(i64, b), i64::wrapping_add, i64::wrapping_mul, |x, y| x & y, |x, y| x | y, |x, y| x ^ y, 1);
            a.copy_from_slice(&r.to_ne_bytes());
        }
        Elem::U64 => {
            let r = int_op(op, rd!(u64, &a[..]), rd!(u64, b), u64::wrapping_add, u64::wrapping_mul, |x, y| x & y, |x, y| x | y, |x, y| x ^ y, 1);
            a.copy_from_slice(&r.to_ne_bytes());
        }
        Elem::F32 => {
            let r = float_op(op, rd!(f32, &a[..]), rd!(f32, b));
            a.copy_from_slice(&r.to_ne_bytes());
        }
        Elem::F64 => {
            let r = float_op(op, rd!(f64, &a[..]), rd!(f64, b));
            a.copy_from_slice(&r.to_ne_bytes());
        }
        Elem::C32 => {
            let (ar, ai, br, bi) = (rd!(f32, &a[0..4]), rd!(f32, &a[4..8]), rd!(f32, &b[0..4]), rd!(f32, &b[4..8]));
            let (r, i) = if op == Op::Prod { (ar * br - ai * bi, ar * bi + ai * br) } else { (ar + br, ai + bi) };
            a[0..4].copy_from_slice(&r.to_ne_bytes());
            a[4..8].copy_from_slice(&i.to_ne_bytes());
        }
        Elem::C64 => {
            let (ar, ai, br, bi) = (rd!(f64, &a[0..8]), rd!(f64, &a[8..16]), rd!(f64, &b[0..8]), rd!(f64, &b[8..16]));
            let (r, i) = if op == Op::Prod { (ar * br - ai * bi, ar * bi + ai * br) } else { (ar + br, ai + bi) };
            a[0..8].copy_from_slice(&r.to_ne_bytes());
            a[8..16].copy_from_slice(&i.to_ne_bytes());
        }
        Elem::LocI32 | Elem::LocU32 | Elem::LocI64 | Elem::LocU64 | Elem::LocF32 | Elem::LocF64 => {
            let (ai, bi) = (rd!(u64, &a[8..16]), rd!(u64, &b[8..16]));
            let take = match e {
                Elem::LocI32 => loc(op, rd!(i32, &a[0..4]), ai, rd!(i32, &b[0..4]), bi),
                Elem::LocU32 => loc(op, rd!(u32, &a[0..4]), ai, rd!(u32, &b[0..4]), bi),
                Elem::LocI64 => loc(op, rd!(i64, &a[0..8]), ai, rd!(i64, &b[0..8]), bi),
                Elem::LocU64 => loc(op, rd!(u64, &a[0..8]), ai, rd!(u64, &b[0..8]), bi),
                // A NaN value never wins over a number.
                Elem::LocF32 => {
                    let (x, y) = (rd!(f32, &a[0..4]), rd!(f32, &b[0..4]));
                    x.is_nan() && !y.is_nan() || (!y.is_nan() && loc(op, x, ai, y, bi))
                }
                _ => {
                    let (x, y) = (rd!(f64, &a[0..8]), rd!(f64, &b[0..8]));
                    x.is_nan() && !y.is_nan() || (!y.is_nan() && loc(op, x, ai, y, bi))
                }
            };
            if take {
                a.copy_from_slice(b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(op: Op, e: Elem, a: &[u8], b: &[u8]) -> Vec<u8> {
        let mut x = a.to_vec();
        combine(op, e, Rounding::Nearest, &mut x, b).unwrap();
        x
    }

    fn loc_bytes_i64(v: i64, i: u64) -> Vec<u8> {
        [v.to_ne_bytes(), i.to_ne_bytes()].concat()
    }

    #[test]
    fn integers() {
        let a = 7i32.to_ne_bytes();
        let b = (-3i32).to_ne_bytes();
        assert_eq!(c(Op::Sum, Elem::I32, &a, &b), 4i32.to_ne_bytes());
        assert_eq!(c(Op::Prod, Elem::I32, &a, &b), (-21i32).to_ne_bytes());
        assert_eq!(c(Op::Min, Elem::I32, &a, &b), (-3i32).to_ne_bytes());
        assert_eq!(c(Op::Max, Elem::U32, &a, &b), (-3i32 as u32).to_ne_bytes());
        assert_eq!(c(Op::BAnd, Elem::U64, &0b1100u64.to_ne_bytes(), &0b1010u64.to_ne_bytes()), 0b1000u64.to_ne_bytes());
        assert_eq!(c(Op::BOr, Elem::U64, &0b1100u64.to_ne_bytes(), &0b1010u64.to_ne_bytes()), 0b1110u64.to_ne_bytes());
        assert_eq!(c(Op::BXor, Elem::I64, &0b1100i64.to_ne_bytes(), &0b1010i64.to_ne_bytes()), 0b0110i64.to_ne_bytes());
        assert_eq!(c(Op::LAnd, Elem::I64, &5i64.to_ne_bytes(), &0i64.to_ne_bytes()), 0i64.to_ne_bytes());
        assert_eq!(c(Op::LOr, Elem::I64, &5i64.to_ne_bytes(), &0i64.to_ne_bytes()), 1i64.to_ne_bytes());
        assert_eq!(c(Op::LXor, Elem::I64, &5i64.to_ne_bytes(), &9i64.to_ne_bytes()), 0i64.to_ne_bytes());
        assert_eq!(c(Op::Sum, Elem::U64, &u64::MAX.to_ne_bytes(), &2u64.to_ne_bytes()), 1u64.to_ne_bytes(), "wraps");
    }

    #[test]
    fn floats_rounding_and_exceptions() {
        let a = 1.0f64.to_ne_bytes();
        let b = 1e-20f64.to_ne_bytes();
        let mut x = a.to_vec();
        let f = combine(Op::Sum, Elem::F64, Rounding::Nearest, &mut x, &b).unwrap();
        assert_eq!(f64::from_ne_bytes(x[..].try_into().unwrap()), 1.0);
        assert_eq!(f.0 & Fpe::INEXACT, Fpe::INEXACT);
        let mut y = a.to_vec();
        combine(Op::Sum, Elem::F64, Rounding::Up, &mut y, &b).unwrap();
        assert!(f64::from_ne_bytes(y[..].try_into().unwrap()) > 1.0, "rounded up");
        let mut z = f64::MAX.to_ne_bytes().to_vec();
        let f = combine(Op::Sum, Elem::F64, Rounding::Nearest, &mut z, &f64::MAX.to_ne_bytes()).unwrap();
        assert_eq!(f.0 & Fpe::OVERFLOW, Fpe::OVERFLOW);
        let mut w = 1.5f32.to_ne_bytes().to_vec();
        let f = combine(Op::Sum, Elem::F32, Rounding::Nearest, &mut w, &2.25f32.to_ne_bytes()).unwrap();
        assert_eq!(f32::from_ne_bytes(w[..].try_into().unwrap()), 3.75);
        assert_eq!(f.0, 0, "exact");
        assert_eq!(c(Op::Min, Elem::F64, &f64::NAN.to_ne_bytes(), &2.0f64.to_ne_bytes()), 2.0f64.to_ne_bytes());
        // The caller's rounding mode is restored.
        // SAFETY: reading this thread's rounding mode.
        assert_eq!(unsafe { fegetround() }, fe::TONEAREST);
    }

    #[test]
    fn complex() {
        let a = [1.0f64.to_ne_bytes(), 2.0f64.to_ne_bytes()].concat();
        let b = [3.0f64.to_ne_bytes(), 4.0f64.to_ne_bytes()].concat();
        assert_eq!(c(Op::Sum, Elem::C64, &a, &b), [4.0f64.to_ne_bytes(), 6.0f64.to_ne_bytes()].concat());
        assert_eq!(c(Op::Prod, Elem::C64, &a, &b), [(-5.0f64).to_ne_bytes(), 10.0f64.to_ne_bytes()].concat());
    }

    #[test]
    fn loc_ties() {
        let a = loc_bytes_i64(5, 7);
        let b = loc_bytes_i64(5, 3);
        let d = loc_bytes_i64(9, 1);
        assert_eq!(c(Op::MinLoc(Ties::LowerIndex), Elem::LocI64, &a, &b), b);
        assert_eq!(c(Op::MinLoc(Ties::GreaterIndex), Elem::LocI64, &a, &b), a);
        assert_eq!(c(Op::MaxLoc(Ties::LowerIndex), Elem::LocI64, &a, &d), d);
        assert_eq!(c(Op::MinLoc(Ties::LowerIndex), Elem::LocI64, &a, &d), a);
        let u = [u64::MAX.to_ne_bytes(), 4u64.to_ne_bytes()].concat();
        let v = [1u64.to_ne_bytes(), 2u64.to_ne_bytes()].concat();
        assert_eq!(c(Op::MaxLoc(Ties::LowerIndex), Elem::LocU64, &v, &u), u, "unsigned compare");
    }

    #[test]
    fn refusals() {
        let mut x = 1.0f64.to_ne_bytes().to_vec();
        assert_eq!(combine(Op::BAnd, Elem::F64, Rounding::Nearest, &mut x, &1.0f64.to_ne_bytes()), Err(Error::InvalidArg));
        assert_eq!(combine(Op::MinLoc(Ties::LowerIndex), Elem::F64, Rounding::Nearest, &mut x, &1.0f64.to_ne_bytes()), Err(Error::InvalidArg));
        assert_eq!(combine(Op::Sum, Elem::F64, Rounding::Nearest, &mut x, &[0u8; 4]), Err(Error::InvalidArg));
        assert_eq!(combine(Op::Max, Elem::C32, Rounding::Nearest, &mut x, &[0u8; 8]), Err(Error::InvalidArg));
        for code in 0..14 {
            assert_eq!(Op::from_code(code).unwrap().code(), code);
            assert_eq!(Elem::from_code(code).unwrap().code(), code);
        }
        assert!(Op::from_code(14).is_none() && Elem::from_code(14).is_none());
    }
}
