//! Remote atomic operations (CONTRACT STUB: the atomics helper replaces the bodies).

use crate::{Error, Result};

/// Operand width / type of an atomic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmoWidth { I32, I64, F32, F64 }

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
///
/// # Safety
/// `ptr` must be valid for reads and writes of the width for the duration of the call.
pub unsafe fn apply(ptr: *mut u8, width: AmoWidth, op: AmoOp) -> Result<u64> {
    let _ = (ptr, width, op);
    Err(Error::Unsupported)
}
