//! The synchronisation facade (after tokio's `src/loom/`): `std` normally, `loom` under
//! `--cfg loom`, so the ring and wait code is written once and model-checked as is.
//!
//! Only [`crate::ring`] and [`crate::wait`] use it.  Everything else in the fabric uses
//! `std` directly: loom types cannot live in memory shared between processes.
//!
//! Loom models `SeqCst` loads/stores/RMWs only as `AcqRel` but implements `fence(SeqCst)`
//! faithfully, so code relying on sequential consistency must use explicit fences.

#[cfg(loom)]
mod imp {
    pub use loom::cell::UnsafeCell;
    pub use loom::hint::spin_loop;
    pub use loom::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
    pub use loom::sync::{Arc, Condvar, Mutex};
    pub use loom::thread::yield_now;
}

#[cfg(not(loom))]
mod imp {
    pub use std::hint::spin_loop;
    pub use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
    pub use std::sync::{Arc, Condvar, Mutex};
    pub use std::thread::yield_now;

    /// `core::cell::UnsafeCell` with loom's closure API (`with`, `with_mut`), so the same
    /// code compiles against both.  `repr(transparent)`: in shared memory it is just a `T`.
    #[repr(transparent)]
    #[derive(Debug)]
    pub struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        pub const fn new(v: T) -> Self {
            UnsafeCell(core::cell::UnsafeCell::new(v))
        }
        #[inline(always)]
        pub fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }
        #[inline(always)]
        pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

pub use imp::*;

/// A sequentially consistent fence (the store-then-load ordering of the wake protocol).
/// On x86-64 a locked read-modify-write of a stack word orders exactly like `mfence` for
/// ordinary memory and costs well under half of it (the substitution Linux makes for
/// `smp_mb()` and crossbeam-epoch for its pin); elsewhere, and under loom, the fence itself.
#[inline(always)]
pub fn full_fence() {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    // SAFETY: ORs 0 into the word at the stack pointer (ours; unchanged).  Without
    // `nomem`, the compiler treats it as reading and writing any memory, so no access
    // moves across it.
    unsafe {
        std::arch::asm!("lock or dword ptr [rsp - 8], 0", options(nostack))
    };
    #[cfg(not(all(target_arch = "x86_64", not(loom))))]
    fence(Ordering::SeqCst);
}
