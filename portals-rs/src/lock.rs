//! The lock of an NI's shared state: a word in the target's shared memory holding its
//! holder's identity, so that a holder that dies (an initiator killed in the middle of
//! a match) is detected and the lock taken over, as `fabric::registry` does.
//!
//! **Word.**  0 = free; otherwise the holder process's pid (low 32 bits) and the low 32
//! bits of its start time (high 32 bits), which tells a dead holder from a new process
//! that reused its pid.  Threads of one process take the same word: the lock excludes
//! them from each other like any two processes (a holder never re-enters).
//!
//! **Release.**  An atomic exchange of the word (one locked instruction, which on x86-64
//! is also the full fence the wake-up protocol needs), then the sleepers of the lock and
//! of the event rings the holder published into are woken, each only if one sleeps
//! ([`Held::wake_on_release`]): a critical section that deposits events pays one fence
//! for all of them.
//!
//! **Waiting.**  Spin briefly (critical sections are a match-list walk and a copy), then
//! sleep on the lock's [`WaitWords`] in slices of 2 ms: a release wakes sleepers, and
//! every slice a waiter also probes whether the holder is still alive (a /proc read),
//! stealing the lock from a dead one.  Whatever the dead holder left half done stays as
//! it is: the structures under this lock are written so that a partial update is at
//! worst an entry or event lost, never a broken list (new entries are filled before they
//! are linked).

use softnic_fabric::registry;
use softnic_fabric::wait::WaitWords;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[repr(C)]
pub struct ShmLock {
    word: AtomicU64,
    wait: WaitWords,
}

const _: () = assert!(std::mem::size_of::<ShmLock>() == 16);

/// This process's lock word (pid, start time), computed once per process: the fabric
/// refuses a forked child anyway.
#[inline]
fn me() -> u64 {
    static ME: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *ME.get_or_init(|| {
        let pid = std::process::id();
        let st = registry::proc_starttime(pid as i32).unwrap_or(0);
        (pid as u64) | ((st as u32 as u64) << 32)
    })
}

/// Is the process named by lock word `w` still the one that took the lock?
fn holder_alive(w: u64) -> bool {
    match registry::proc_stat((w & 0xffff_ffff) as i32) {
        None => false,
        Some((state, start)) => state != b'Z' && state != b'X' && start as u32 == (w >> 32) as u32,
    }
}

/// A held lock; released on drop.
pub struct Held<'a> {
    lock: &'a ShmLock,
    /// Wait words to notify after the release (see the module doc), or null.  One: it
    /// keeps a guard two words, returned in registers.
    wake: Cell<*const WaitWords>,
}

impl<'a> Held<'a> {
    #[inline]
    fn new(lock: &'a ShmLock) -> Held<'a> {
        Held { lock, wake: Cell::new(std::ptr::null()) }
    }

    /// Has `w`'s sleepers woken once the lock is released: for a ring entry published
    /// under the lock with `Ring::push_serialized`.  (A critical section publishes into
    /// one queue's ring, as a rule; another is woken at once.)
    ///
    /// # Safety
    /// `w` stays valid until the release (it lies in the mapping that holds the lock).
    #[inline]
    pub unsafe fn wake_on_release(&self, w: *const WaitWords) {
        let cur = self.wake.get();
        if cur.is_null() {
            self.wake.set(w);
        } else if cur != w {
            // SAFETY: the caller's contract.
            unsafe { (*w).notify() };
        }
    }
}

impl Drop for Held<'_> {
    #[inline]
    fn drop(&mut self) {
        // Release: everything written under the lock is visible to the next holder.  The
        // exchange is also the full fence between those writes (ring entries among them)
        // and the loads of the wait words below (x86-64: a locked instruction).
        self.lock.word.swap(0, Ordering::SeqCst);
        #[cfg(not(target_arch = "x86_64"))]
        softnic_fabric::sync::full_fence();
        self.lock.wait.notify_fenced();
        let w = self.wake.get();
        if !w.is_null() {
            // SAFETY: valid until now (wake_on_release's contract).
            unsafe { (*w).notify_fenced() };
        }
    }
}

impl ShmLock {
    /// Starts fetching the lock's cache line for writing, so that a later `lock` or
    /// `try_lock` finds it here: the line is usually in the last holder's cache (another
    /// process, on another core), and the fetches of two locks then overlap.
    #[inline]
    pub fn prefetch(&self) {
        crate::prefetch::prefetch_write(&self.word as *const AtomicU64 as *const u8);
    }

    /// Takes the lock (see the module doc).
    #[inline]
    pub fn lock(&self) -> Held<'_> {
        let me = me();
        // Acquire: pairs with the Release in `Held::drop`.
        if self.word.compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            return Held::new(self);
        }
        self.lock_slow(me)
    }

    /// Takes the lock if it is free now (a holder that died is left to `lock`).
    #[inline]
    pub fn try_lock(&self) -> Option<Held<'_>> {
        // Acquire: as in `lock`.
        self.word.compare_exchange(0, me(), Ordering::Acquire, Ordering::Relaxed).ok().map(|_| Held::new(self))
    }

    #[cold]
    fn lock_slow(&self, me: u64) -> Held<'_> {
        for i in 0..200u32 {
            if self.word.load(Ordering::Relaxed) == 0 && self.word.compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                return Held::new(self);
            }
            if i < 100 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        loop {
            let owner = self.word.load(Ordering::Relaxed);
            if owner == 0 {
                if self.word.compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                    return Held::new(self);
                }
                continue;
            }
            if owner != me && !holder_alive(owner) && self.word.compare_exchange(owner, me, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                softnic_fabric::sn_warn!("Portals", "took over the match lock from dead process {}", owner & 0xffff_ffff);
                return Held::new(self);
            }
            // Sleeps until a release (or 2 ms, to probe the holder again).
            let _ = self.wait.wait_until(|| self.word.load(Ordering::Relaxed) == 0, Some(Duration::from_millis(2)));
        }
    }

    /// A free lock for a freshly formatted segment.
    pub fn init(&self) {
        self.word.store(0, Ordering::Relaxed);
    }

    /// A lock word that names no live process (a test hook: lets a test stage a dead
    /// holder without killing one).
    #[cfg(test)]
    pub fn force_word(&self, w: u64) {
        self.word.store(w, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn excludes_threads_and_survives_a_dead_holder() {
        let l = Arc::new(ShmLock { word: AtomicU64::new(0), wait: WaitWords::new() });
        let counter = Arc::new(AtomicU64::new(0));
        let mut th = Vec::new();
        for _ in 0..4 {
            let (l, c) = (l.clone(), counter.clone());
            th.push(std::thread::spawn(move || {
                for _ in 0..2000 {
                    let _g = l.lock();
                    // A non-atomic read-modify-write: lost updates show a broken lock.
                    let v = c.load(Ordering::Relaxed);
                    std::hint::spin_loop();
                    c.store(v + 1, Ordering::Relaxed);
                }
            }));
        }
        for t in th {
            t.join().unwrap();
        }
        assert_eq!(counter.load(Ordering::Relaxed), 8000);
        // pid 0x7fff_fff0 does not exist: its lock is taken over.
        l.force_word(0x7fff_fff0 | (5 << 32));
        let g = l.lock();
        drop(g);
        assert_eq!(l.word.load(Ordering::Relaxed), 0);
    }
}
