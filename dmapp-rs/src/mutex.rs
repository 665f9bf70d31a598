//! The library's one way to take a mutex.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, also after a thread panicked holding it: what it guards stays usable, and no
/// C call panics on a poisoned lock.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
