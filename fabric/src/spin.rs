//! A spin lock for hot paths (see [`SpinLock`]).

use std::sync::atomic::{AtomicBool, Ordering};

/// A lock for critical sections that do not sleep and are rarely contended (uGNI's
/// descriptor slab and endpoint state, a uTofu VCQ's queue): taking it is one
/// compare-exchange and releasing it a plain Release store, where a `Mutex` pays two
/// atomic read-modify-writes (and a poison check).  Waiters spin, then yield, then sleep
/// (a holder that a higher-priority waiter preempted runs only when the waiter sleeps).
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
    /// Inlined (the uncontended case is one compare-exchange); waiting is out of line.
    #[inline]
    pub fn lock(&self) -> SpinGuard<'_, T> {
        // Acquire: pairs with the Release in `drop`, so the last holder's writes are seen.
        if self.held.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            self.lock_contended();
        }
        SpinGuard(self)
    }

    #[cold]
    #[inline(never)]
    fn lock_contended(&self) {
        let mut spins = 0u32;
        // Acquire: as in `lock`.
        while self.held.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            spins += 1;
            relax(spins);
        }
    }
}

/// One step of waiting for another thread or process to finish something short (`spins`:
/// this wait's steps so far, from 1): spin, then yield, then sleep.  Yielding alone never
/// lets the other run when we outrank it (the network progress thread runs at real-time
/// priority and may have preempted it on its own core), so after 32 yields each step
/// sleeps, a little longer each time (1 us .. 256 us).
#[inline]
pub fn relax(spins: u32) {
    if spins < 64 {
        std::hint::spin_loop();
    } else if spins < 96 {
        std::thread::yield_now();
    } else {
        crate::cancel::nap(std::time::Duration::from_micros(1 << (spins - 96).min(8)));
    }
}

impl<T> std::ops::Deref for SpinGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: we hold the lock.
        unsafe { &*self.0.v.get() }
    }
}

impl<T> std::ops::DerefMut for SpinGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: we hold the lock.
        unsafe { &mut *self.0.v.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.0.held.store(false, Ordering::Release);
    }
}


#[cfg(test)]
mod tests {
    use super::SpinLock;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    fn pin_to_cpu0() {
        // SAFETY: a zeroed cpu_set_t with CPU 0 set, for the calling thread.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(0, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }

    /// The network progress thread runs at real-time priority and can preempt a thread of
    /// its process holding a SpinLock on the same core; it must then let the holder run
    /// (yielding alone does not: the scheduler gives the core straight back to it).
    #[test]
    fn a_real_time_waiter_lets_the_preempted_holder_finish() {
        let lock = Arc::new(SpinLock::new(0u64));
        let (tx, rx) = std::sync::mpsc::channel();
        let holder = {
            let lock = lock.clone();
            std::thread::spawn(move || {
                pin_to_cpu0();
                let mut g = lock.lock();
                let waiter = {
                    let lock = lock.clone();
                    std::thread::spawn(move || {
                        pin_to_cpu0();
                        let param = libc::sched_param { sched_priority: 1 };
                        // SAFETY: this thread's policy; refused without the privilege.
                        let rt = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0;
                        let t0 = Instant::now();
                        *lock.lock() += 1;
                        (rt, t0.elapsed())
                    })
                };
                // The waiter (same core, higher priority) runs as soon as it can; the
                // holder gets the core back only when the waiter sleeps.
                std::thread::sleep(Duration::from_millis(5));
                *g += 1;
                drop(g);
                tx.send(waiter.join().expect("waiter")).expect("send");
            })
        };
        let (rt, waited) = rx.recv_timeout(Duration::from_secs(20)).expect("the holder never got the core back");
        holder.join().expect("holder");
        assert_eq!(*lock.lock(), 2);
        if !rt {
            eprintln!("SKIP real-time part: SCHED_FIFO refused (waited {waited:?} at normal priority)");
            return;
        }
        // A liveness bound, not a speed measurement: a waiter that only yields keeps the
        // holder off the core until the kernel's real-time throttling (~50 ms of every
        // second for others) or for good.
        assert!(waited < Duration::from_millis(40), "the real-time waiter held the core for {waited:?}");
    }
}
