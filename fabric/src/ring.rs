//! Bounded lock-free rings in shared memory (CONTRACT STUB: the rings helper replaces this).

use crate::{Error, Result};
use std::time::Duration;

/// Plain-old-data entries: any bit pattern valid, no pointers, no Drop.
///
/// # Safety
/// Implement only for `#[repr(C)]` types made of integers / arrays of integers.
pub unsafe trait Pod: Copy + Send + Sync + 'static {}
unsafe impl Pod for u64 {}
unsafe impl Pod for [u64; 2] {}
unsafe impl Pod for [u64; 4] {}
unsafe impl Pod for [u64; 8] {}

/// A view of a ring that lives in (possibly shared) memory.  Multi-producer,
/// multi-consumer; all positions are offsets from the ring's own base.
pub struct Ring<T: Pod> {
    _p: std::marker::PhantomData<T>,
}

unsafe impl<T: Pod> Send for Ring<T> {}
unsafe impl<T: Pod> Sync for Ring<T> {}

impl<T: Pod> Ring<T> {
    /// Bytes of memory a ring of `capacity` entries (a power of two) occupies.
    pub fn bytes_needed(capacity: u32) -> usize { let _ = capacity; 0 }
    /// Formats `len` bytes at `mem` as an empty ring.
    /// # Safety
    /// `mem` valid for `len` bytes, 64-byte aligned, not used by anyone else during init.
    pub unsafe fn init(mem: *mut u8, len: usize, capacity: u32) -> Result<Self> { let _ = (mem, len, capacity); Err(Error::Unsupported) }
    /// Attaches to a ring formatted by `init` (maybe in another process); checks version,
    /// entry size and length.
    /// # Safety
    /// `mem` valid for `len` bytes for the life of the view.
    pub unsafe fn attach(mem: *mut u8, len: usize) -> Result<Self> { let _ = (mem, len); Err(Error::Unsupported) }
    /// Appends `v`; `Err(NoSpace)` when full (nothing written).  Wakes sleepers.
    pub fn push(&self, v: &T) -> Result<()> { let _ = v; Err(Error::Unsupported) }
    /// Like `push`, but on a full ring records an overrun (see `overrun`) instead.
    pub fn push_or_overrun(&self, v: &T) -> bool { let _ = v; false }
    /// Removes the oldest entry.
    pub fn pop(&self) -> Option<T> { None }
    /// Number of entries (a snapshot).
    pub fn len(&self) -> usize { 0 }
    pub fn is_empty(&self) -> bool { true }
    pub fn capacity(&self) -> u32 { 0 }
    /// True once a push found the ring full (sticky until `clear_overrun`).
    pub fn overrun(&self) -> bool { false }
    pub fn clear_overrun(&self) {}
    /// Waits until the ring is non-empty: spin briefly, then futex sleep.
    /// `None` waits forever; `Err(Timeout)` when the time runs out.
    pub fn wait_nonempty(&self, timeout: Option<Duration>) -> Result<()> { let _ = timeout; Err(Error::Unsupported) }
}
