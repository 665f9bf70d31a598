//! Waiting on words in shared memory: spin briefly, then sleep on a futex.
//!
//! The futex calls are *shared* (no `FUTEX_PRIVATE_FLAG`): the words live in memory mapped
//! by several processes, and the kernel must key the wait queue on the physical page, not on
//! this process's address space.
//!
//! # The sleep/wake protocol (no lost wake-ups)
//!
//! Two words, usually on one cache line of a shared structure ([`WaitWords`]):
//! `seq` (the futex word, bumped by notifiers) and `waiters` (how many are asleep or about to
//! be).  The *condition* is whatever the caller waits for (e.g. "the slot at head is
//! published"); it is published by a store of its own.
//!
//! Waiter ([`wait_until`]):
//! 1. check the condition; spin (`spin_ns()` ns) re-checking it;
//! 2. `waiters += 1`;
//! 3. full fence, `sync::full_fence` (pairs with notifier step 2);
//! 4. `s = seq.load(Acquire)`  (pairs with notifier step 4);
//! 5. re-check the condition; if true: `waiters -= 1`, done;
//! 6. `futex_wait(seq, s)`: the kernel sleeps only if `seq` still equals `s`, atomically
//!    with respect to `futex_wake`;
//! 7. `waiters -= 1`, re-check, loop to 2 (wake-ups may be spurious or for someone else).
//!
//! Notifier ([`notify`]), after publishing the condition:
//! 1. publish (the caller's own Release store);
//! 2. full fence (pairs with waiter step 3);
//! 3. if `waiters == 0`: done, no syscall (the common, fast case);
//! 4. `seq += 1` (Release), then `futex_wake(seq, all)`.
//!
//! Why nothing is lost: the two SeqCst fences order "waiter stores waiters, then reads the
//! condition" against "notifier stores the condition, then reads waiters" (Dekker): at least
//! one side sees the other's store.  If the waiter sees the condition it does not sleep.  If
//! the notifier sees `waiters > 0` it bumps `seq`: either the waiter's snapshot `s` already
//! includes the bump (then, through the Acquire/Release pair, step 5 sees the condition), or
//! it does not and the kernel either refuses to sleep (`seq != s`) or is woken by the wake
//! that follows the bump.
//!
//! A waiter that dies asleep leaves `waiters` too high: notifiers then make a needless wake
//! syscall, which costs time but is never incorrect.
//!
//! Under `cfg(loom)` the futex is modelled by one global mutex + condvar (the kernel's hash
//! bucket lock and wait queue), so the protocol above is model-checked as written.  Timeouts
//! are not modelled there: a loom wait behaves as if it had no timeout.

use crate::sync::{full_fence, AtomicU32, Ordering};
use crate::{Error, Result};
use std::time::{Duration, Instant};

/// CLOCK_MONOTONIC_COARSE in nanoseconds (the last tick's time, read from the vDSO with
/// no counter access: this is on every operation's path).
pub(crate) fn now_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC_COARSE)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid out pointer; both clocks used here exist on every Linux since 2.6.32.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

/// Default spin before sleeping, in nanoseconds: long enough to catch a peer that is about to
/// publish (a push is ~50-100 ns), short enough not to burn a core that someone else needs.
pub const SPIN_NS_DEFAULT: u64 = 4_000;
/// Upper bound accepted from `SOFTNIC_SPIN_NS` (10 ms).
pub const SPIN_NS_MAX: u64 = 10_000_000;

/// Spin time before sleeping: `SOFTNIC_SPIN_NS` from the tunables registry (default
/// [`SPIN_NS_DEFAULT`]), clamped to `SPIN_NS_MAX`.
pub fn spin_ns() -> u64 {
    static SPIN: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SPIN.get_or_init(|| {
        // Under loom the registry's Lazy would be modelled too; the value does not matter there.
        #[cfg(loom)]
        return SPIN_NS_DEFAULT;
        #[cfg(not(loom))]
        crate::env::get_u64("SOFTNIC_SPIN_NS").min(SPIN_NS_MAX)
    })
}

/// Sleeps while `*word == expected` (shared futex).  `Ok` on wake-up, on a changed value, on
/// a signal or spuriously: the caller re-checks its condition.  `Err(Timeout)` when `timeout`
/// elapsed; `Err(Os(e))` for anything else (e.g. `EFAULT`).
#[cfg(not(loom))]
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) -> Result<()> {
    let ts;
    let tsp = match timeout {
        Some(d) => {
            ts = libc::timespec {
                tv_sec: d.as_secs().min(i64::MAX as u64) as libc::time_t,
                tv_nsec: d.subsec_nanos() as libc::c_long,
            };
            &ts as *const libc::timespec
        }
        None => std::ptr::null(),
    };
    // `word` is a live, 4-aligned u32 (AtomicU32 has u32's layout); FUTEX_WAIT only reads
    // it.  `tsp` is null or points at `ts`, alive for the call.  Shared (non-private) futex on
    // purpose: the word may be in memory mapped by other processes.  At a cancellation point
    // of a blocking call this sleep is where a cancellation request ends the thread.
    let (r, e) = crate::cancel::syscall(
        libc::SYS_futex,
        [word as *const AtomicU32 as libc::c_long, libc::FUTEX_WAIT as libc::c_long, expected as libc::c_long, tsp as libc::c_long, 0, 0],
    );
    if r == 0 {
        return Ok(());
    }
    match e {
        libc::ETIMEDOUT => Err(Error::Timeout),
        libc::EINTR | libc::EAGAIN => Ok(()),
        e => Err(Error::Os(e)),
    }
}

/// Wakes up to `n` sleepers on `word` (shared futex); returns how many were woken.
#[cfg(not(loom))]
pub fn futex_wake(word: &AtomicU32, n: u32) -> usize {
    let n = n.min(i32::MAX as u32) as i32;
    // SAFETY: `word` is a live, 4-aligned u32; FUTEX_WAKE does not access it, the address
    // only names the wait queue.
    let r = unsafe {
        libc::syscall(libc::SYS_futex, word as *const AtomicU32 as *const u32, libc::FUTEX_WAKE, n)
    };
    if r > 0 {
        r as usize
    } else {
        0
    }
}

// Loom model of the kernel futex: the mutex is the hash-bucket lock under which the kernel
// compares the word and enqueues the waiter; the condvar is the wait queue.
#[cfg(loom)]
loom::lazy_static! {
    static ref FUTEX: (crate::sync::Mutex<()>, crate::sync::Condvar) =
        (crate::sync::Mutex::new(()), crate::sync::Condvar::new());
}

/// Loom model of `futex_wait` (timeouts not modelled, see the module doc).
#[cfg(loom)]
pub fn futex_wait(word: &AtomicU32, expected: u32, _timeout: Option<Duration>) -> Result<()> {
    let g = FUTEX.0.lock().unwrap();
    // Relaxed: like the kernel, ordering comes from the bucket lock, which the waker takes
    // after changing the word.
    if word.load(Ordering::Relaxed) != expected {
        return Ok(());
    }
    drop(FUTEX.1.wait(g).unwrap());
    Ok(())
}

/// Loom model of `futex_wake` (wakes everyone; returns 0).
#[cfg(loom)]
pub fn futex_wake(_word: &AtomicU32, _n: u32) -> usize {
    let _g = FUTEX.0.lock().unwrap();
    FUTEX.1.notify_all();
    0
}

/// Outcome of the spin step.
enum Spun {
    /// Ready (`Ok`), or a zero timeout ran out (`Err(Timeout)`): no sleep.
    Done(Result<()>),
    /// Go to sleep, until this deadline (None: forever).
    Sleep(Option<Instant>),
}

/// Step 1 of every wait: check `ready`, then spin `spin_ns()` re-checking it.  The spin is
/// skipped under loom, where only the sleep protocol is of interest and wall-clock time
/// would make executions non-deterministic.
fn spin(ready: &mut impl FnMut() -> bool, timeout: Option<Duration>) -> Spun {
    if ready() {
        return Spun::Done(Ok(()));
    }
    if timeout == Some(Duration::ZERO) {
        return Spun::Done(Err(Error::Timeout));
    }
    #[cfg(loom)]
    {
        Spun::Sleep(None)
    }
    #[cfg(not(loom))]
    {
        let start = Instant::now();
        // A timeout too large to represent is "forever".
        let deadline = timeout.and_then(|t| start.checked_add(t));
        let mut spin_end = start + Duration::from_nanos(spin_ns());
        if let Some(d) = deadline {
            spin_end = spin_end.min(d);
        }
        loop {
            for _ in 0..32 {
                crate::sync::spin_loop();
            }
            if ready() {
                return Spun::Done(Ok(()));
            }
            if Instant::now() >= spin_end {
                return Spun::Sleep(deadline);
            }
        }
    }
}

/// Waits until `ready()` returns true, using the protocol in the module doc on `seq` and
/// `waiters`.  `ready` must only read (with Acquire where it reads published data) and may
/// be called many times.  `None` waits forever; `Err(Timeout)` when `timeout` elapsed with
/// `ready()` still false.
pub fn wait_until(
    seq: &AtomicU32,
    waiters: &AtomicU32,
    mut ready: impl FnMut() -> bool,
    timeout: Option<Duration>,
) -> Result<()> {
    // Step 1.
    let deadline = match spin(&mut ready, timeout) {
        Spun::Done(r) => return r,
        Spun::Sleep(d) => d,
    };

    loop {
        // Step 2.  Relaxed: the fence below orders it.  The guard takes the count back
        // (step 7) however this iteration ends, a cancellation in the sleep included.
        let counted = Counted::enter(std::slice::from_ref(&waiters));
        // Step 3: pairs with the fence in `notify` (Dekker: we see the published condition,
        // or the notifier sees our increment).
        full_fence();
        // Step 4: Acquire pairs with the Release bump in `notify`: seeing the bump implies
        // seeing what was published before it.
        let s = seq.load(Ordering::Acquire);
        // Step 5.
        if ready() {
            return Ok(());
        }
        let remaining = match deadline {
            None => None,
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    return Err(Error::Timeout);
                }
                Some(d - now)
            }
        };
        // Step 6.
        let r = futex_wait(seq, s, remaining);
        // Step 7.  Relaxed: a late decrement only costs a notifier a needless wake.
        drop(counted);
        if ready() {
            return Ok(());
        }
        match r {
            Ok(()) => {}
            Err(Error::Timeout) => return Err(Error::Timeout),
            Err(e) => return Err(e),
        }
    }
}

/// Steps 2 and 7 of a wait on some words: `waiters += 1` on each now, `-= 1` when dropped
/// (also when a cancellation unwinds the sleeping thread, which would otherwise leave every
/// later notifier paying a needless wake).
struct Counted<'a>(&'a [&'a AtomicU32]);

impl<'a> Counted<'a> {
    fn enter(words: &'a [&'a AtomicU32]) -> Self {
        for w in words {
            // Relaxed: the full fence that follows orders it.
            w.fetch_add(1, Ordering::Relaxed);
        }
        Counted(words)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        for w in self.0 {
            // Relaxed: as in `wait_until` step 7.
            w.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Notifier side of the protocol: call after publishing (Release) what waiters wait for.
/// Returns true when it had to wake (someone was, or was about to be, asleep).
#[inline]
pub fn notify(seq: &AtomicU32, waiters: &AtomicU32) -> bool {
    // Step 2: pairs with the fence in `wait_until` step 3.
    full_fence();
    notify_fenced(seq, waiters)
}

/// [`notify`] without its step 2, for a notifier that has issued a full fence (on x86-64
/// any locked read-modify-write is one, e.g. the exchange that releases a lock) after
/// publishing: several publications then share one fence.
#[inline]
pub fn notify_fenced(seq: &AtomicU32, waiters: &AtomicU32) -> bool {
    // Relaxed: ordered by the caller's fence.
    if waiters.load(Ordering::Relaxed) == 0 {
        return false;
    }
    // Step 4: Release pairs with the Acquire snapshot in `wait_until` step 4.
    seq.fetch_add(1, Ordering::Release);
    futex_wake(seq, u32::MAX);
    true
}

/// `struct futex_waitv` of the kernel ABI.
#[cfg(not(loom))]
#[repr(C)]
struct FutexWaitv {
    val: u64,
    uaddr: u64,
    flags: u32,
    reserved: u32,
}

/// Most words one `futex_waitv` call takes (the kernel's `FUTEX_WAITV_MAX`).
pub const WAIT_ANY_MAX: usize = 128;

/// Set once `futex_waitv` answered ENOSYS (kernels before 5.16).
#[cfg(not(loom))]
static NO_FUTEX_WAITV: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Waits until `ready()` returns true, sleeping on several [`WaitWords`] at once: a
/// notify on any of them wakes the caller.  The module's protocol runs on every pair
/// (waiters += 1 on each, one fence, a snapshot of each `seq`, re-check, then one
/// `futex_waitv` on all the snapshots).  `ready` as for [`wait_until`].  `Err(Unsupported)`
/// (before any sleep) for more than [`WAIT_ANY_MAX`] pairs or a kernel without
/// `futex_waitv`: the caller then needs another strategy.  Not modelled under loom.
#[cfg(not(loom))]
pub fn wait_any(words: &[&WaitWords], mut ready: impl FnMut() -> bool, timeout: Option<Duration>) -> Result<()> {
    if words.len() > WAIT_ANY_MAX || NO_FUTEX_WAITV.load(Ordering::Relaxed) {
        return Err(Error::Unsupported);
    }
    let deadline = match spin(&mut ready, timeout) {
        Spun::Done(r) => return r,
        Spun::Sleep(d) => d,
    };
    let counts: Vec<&AtomicU32> = words.iter().map(|w| &w.waiters).collect();
    let mut v: Vec<FutexWaitv> = Vec::with_capacity(words.len());
    loop {
        let counted = Counted::enter(&counts);
        full_fence();
        v.clear();
        // FUTEX_32 (2), shared: the words are in memory other processes map.
        v.extend(words.iter().map(|w| FutexWaitv { val: w.seq.load(Ordering::Acquire) as u64, uaddr: &w.seq as *const AtomicU32 as u64, flags: 2, reserved: 0 }));
        if ready() {
            return Ok(());
        }
        // futex_waitv takes an absolute CLOCK_MONOTONIC deadline.
        let abs = match deadline {
            None => None,
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    return Err(Error::Timeout);
                }
                let left = d - now;
                let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
                // SAFETY: a valid out pointer.
                unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
                let ns = ts.tv_nsec as u64 + left.subsec_nanos() as u64;
                ts.tv_sec = ts.tv_sec.saturating_add(left.as_secs().min(i64::MAX as u64 / 2) as libc::time_t + (ns / 1_000_000_000) as libc::time_t);
                ts.tv_nsec = (ns % 1_000_000_000) as libc::c_long;
                Some(ts)
            }
        };
        let tsp = abs.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // `v` holds `len` valid entries naming live, 4-aligned u32 words; `tsp` is null or
        // points at `abs`, alive for the call; flags 0.  A cancellation window as in
        // `futex_wait`.
        let (_, err) = crate::cancel::syscall(
            libc::SYS_futex_waitv,
            [v.as_ptr() as libc::c_long, v.len() as libc::c_long, 0, tsp as libc::c_long, libc::CLOCK_MONOTONIC as libc::c_long, 0],
        );
        drop(counted);
        if ready() {
            return Ok(());
        }
        match err {
            0 | libc::EAGAIN | libc::EINTR => {}
            libc::ETIMEDOUT => return Err(Error::Timeout),
            libc::ENOSYS => {
                NO_FUTEX_WAITV.store(true, Ordering::Relaxed);
                return Err(Error::Unsupported);
            }
            e => return Err(Error::Os(e)),
        }
    }
}

/// The two words of the protocol, to embed in a shared `#[repr(C)]` structure (8 bytes,
/// all-zero is the initial state, so zero-filled shared memory is already valid).
#[repr(C)]
#[derive(Debug, Default)]
pub struct WaitWords {
    /// Futex word, bumped by notifiers when someone sleeps.
    pub seq: AtomicU32,
    /// Waiters currently asleep or about to sleep.
    pub waiters: AtomicU32,
}

#[cfg(not(loom))]
const _: () = assert!(
    std::mem::size_of::<WaitWords>() == 8 && std::mem::align_of::<WaitWords>() == 4,
    "WaitWords is part of shared-memory layouts (ring header): its size is ABI"
);

impl WaitWords {
    pub fn new() -> Self {
        WaitWords { seq: AtomicU32::new(0), waiters: AtomicU32::new(0) }
    }
    /// See [`wait_until`].
    pub fn wait_until(&self, ready: impl FnMut() -> bool, timeout: Option<Duration>) -> Result<()> {
        wait_until(&self.seq, &self.waiters, ready, timeout)
    }
    /// See [`notify`].
    #[inline]
    pub fn notify(&self) -> bool {
        notify(&self.seq, &self.waiters)
    }
    /// See [`notify_fenced`].
    #[inline]
    pub fn notify_fenced(&self) -> bool {
        notify_fenced(&self.seq, &self.waiters)
    }
    /// Waiters asleep or about to sleep (a snapshot, for tests and diagnostics).
    pub fn sleepers(&self) -> u32 {
        self.waiters.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn futex_wait_value_mismatch_returns_at_once() {
        let w = AtomicU32::new(5);
        let t = Instant::now();
        futex_wait(&w, 4, Some(Duration::from_secs(5))).unwrap();
        assert!(t.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn futex_wait_times_out() {
        let w = AtomicU32::new(0);
        let t = Instant::now();
        assert_eq!(futex_wait(&w, 0, Some(Duration::from_millis(30))), Err(Error::Timeout));
        assert!(t.elapsed() >= Duration::from_millis(30));
    }

    #[test]
    fn futex_wake_wakes_a_sleeper() {
        let w = Arc::new(AtomicU32::new(0));
        let w2 = w.clone();
        let th = std::thread::spawn(move || {
            while w2.load(Ordering::Acquire) == 0 {
                futex_wait(&w2, 0, Some(Duration::from_secs(10))).unwrap();
            }
        });
        std::thread::sleep(Duration::from_millis(50));
        w.store(1, Ordering::Release);
        futex_wake(&w, 1);
        th.join().unwrap();
    }

    #[test]
    fn wait_until_timeout_and_zero_timeout() {
        let ww = WaitWords::new();
        assert_eq!(ww.wait_until(|| false, Some(Duration::ZERO)), Err(Error::Timeout));
        let t = Instant::now();
        assert_eq!(ww.wait_until(|| false, Some(Duration::from_millis(40))), Err(Error::Timeout));
        assert!(t.elapsed() >= Duration::from_millis(40));
        assert_eq!(ww.sleepers(), 0, "waiters counter must be restored on timeout");
        // Absurd timeouts mean "forever", not a panic on Instant overflow.
        ww.wait_until(|| true, Some(Duration::MAX)).unwrap();
    }

    #[test]
    fn wait_until_sleeps_and_is_notified() {
        let ww = Arc::new(WaitWords::new());
        let flag = Arc::new(AtomicU32::new(0));
        let (ww2, flag2) = (ww.clone(), flag.clone());
        let th = std::thread::spawn(move || {
            ww2.wait_until(|| flag2.load(Ordering::Acquire) == 1, None).unwrap();
        });
        // Wait until the thread is really asleep so that the futex path is exercised.
        let t = Instant::now();
        while ww.sleepers() == 0 {
            assert!(t.elapsed() < Duration::from_secs(10), "waiter never went to sleep");
            std::thread::sleep(Duration::from_millis(1));
        }
        flag.store(1, Ordering::Release);
        assert!(ww.notify(), "a sleeper was registered, notify must wake");
        th.join().unwrap();
        assert_eq!(ww.sleepers(), 0);
        assert!(!ww.notify(), "no sleepers: no wake syscall");
    }

    #[test]
    fn wait_any_sleeps_on_all_and_wakes_on_each() {
        let words: Arc<Vec<WaitWords>> = Arc::new((0..3).map(|_| WaitWords::new()).collect());
        let flags: Arc<Vec<AtomicU32>> = Arc::new((0..3).map(|_| AtomicU32::new(0)).collect());
        for which in [2usize, 0, 1] {
            let (w2, f2) = (words.clone(), flags.clone());
            let th = std::thread::spawn(move || {
                let refs: Vec<&WaitWords> = w2.iter().collect();
                wait_any(&refs, || f2.iter().any(|f| f.load(Ordering::Acquire) != 0), Some(Duration::from_secs(20))).unwrap();
                f2[which].swap(0, Ordering::AcqRel)
            });
            // Really asleep on every word before the notify.
            let t = Instant::now();
            while words.iter().any(|w| w.sleepers() == 0) {
                assert!(t.elapsed() < Duration::from_secs(10), "waiter never went to sleep on all words");
                std::thread::sleep(Duration::from_millis(1));
            }
            flags[which].store(1, Ordering::Release);
            assert!(words[which].notify(), "a sleeper was registered on word {which}");
            assert_eq!(th.join().unwrap(), 1, "woken for word {which}");
            assert!(words.iter().all(|w| w.sleepers() == 0), "waiters restored");
        }
    }

    #[test]
    fn wait_any_timeout_limits_and_no_lost_wakeups() {
        let words: Vec<WaitWords> = (0..2).map(|_| WaitWords::new()).collect();
        let refs: Vec<&WaitWords> = words.iter().collect();
        assert_eq!(wait_any(&refs, || false, Some(Duration::ZERO)), Err(Error::Timeout));
        let t = Instant::now();
        assert_eq!(wait_any(&refs, || false, Some(Duration::from_millis(40))), Err(Error::Timeout));
        assert!(t.elapsed() >= Duration::from_millis(40));
        assert!(words.iter().all(|w| w.sleepers() == 0), "waiters restored on timeout");
        let many: Vec<WaitWords> = (0..=WAIT_ANY_MAX).map(|_| WaitWords::new()).collect();
        let many_refs: Vec<&WaitWords> = many.iter().collect();
        assert_eq!(wait_any(&many_refs, || false, None), Err(Error::Unsupported));
        // Ping-pong: the thread sleeps on words 0 and 1 at once and is notified through
        // each in turn; it answers through word 2.  A lost wake-up shows as a timeout.
        let words: Arc<Vec<WaitWords>> = Arc::new((0..3).map(|_| WaitWords::new()).collect());
        let cond = Arc::new(AtomicU32::new(0));
        let (w2, c2) = (words.clone(), cond.clone());
        let th = std::thread::spawn(move || {
            let refs: Vec<&WaitWords> = w2[..2].iter().collect();
            for i in 0..2000u32 {
                wait_any(&refs, || c2.load(Ordering::Acquire) == 2 * i + 1, Some(Duration::from_secs(10))).unwrap();
                c2.store(2 * i + 2, Ordering::Release);
                w2[2].notify();
            }
        });
        for i in 0..2000u32 {
            if i % 8 == 0 {
                // Let the thread's spin run out, so the sleep path is taken too.
                std::thread::sleep(Duration::from_micros(200));
            }
            cond.store(2 * i + 1, Ordering::Release);
            words[(i % 2) as usize].notify();
            words[2].wait_until(|| cond.load(Ordering::Acquire) == 2 * i + 2, Some(Duration::from_secs(10))).unwrap();
        }
        th.join().unwrap();
    }
}
