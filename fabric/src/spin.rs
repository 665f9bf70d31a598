//! A spin lock for hot paths (see [`SpinLock`]).

use std::sync::atomic::{AtomicBool, Ordering};

/// A lock for critical sections that do not sleep and are rarely contended (uGNI's
/// descriptor slab and endpoint state, a uTofu VCQ's queue): taking it is one
/// compare-exchange and releasing it a plain Release store, where a `Mutex` pays two
/// atomic read-modify-writes (and a poison check).  Waiters spin, then yield.
pub struct SpinLock<T> {
    held: AtomicBool,
    v: std::cell::UnsafeCell<T>,
}

// SAFETY: `v` is only reached through a guard, which exists while `held` is ours.
unsafe impl<T: Send> Sync for SpinLock<T> {}

pub struct SpinGuard<'a, T>(&'a SpinLock<T>);

impl<T> SpinLock<T> {
    pub fn new(v: T) -> Self {
        SpinLock { held: AtomicBool::new(false), v: std::cell::UnsafeCell::new(v) }
    }
    pub fn lock(&self) -> SpinGuard<'_, T> {
        let mut spins = 0u32;
        // Acquire: pairs with the Release in `drop`, so the last holder's writes are seen.
        while self.held.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        SpinGuard(self)
    }
}

impl<T> std::ops::Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: we hold the lock.
        unsafe { &*self.0.v.get() }
    }
}

impl<T> std::ops::DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: we hold the lock.
        unsafe { &mut *self.0.v.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        self.0.held.store(false, Ordering::Release);
    }
}

