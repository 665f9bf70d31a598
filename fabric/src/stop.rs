//! Parking the process's other threads for a moment: what a registration does where no
//! write guard can hold their writes (see [`crate::mem`]).
//!
//! Registration copies pages into shared memory and swaps the copy in.  A write another
//! thread makes to a page between its copy and the swap would be lost.  For anonymous
//! memory the userfaultfd write guard holds such writes; for a program's initialised
//! statics (.data, and the .bss that shares its last page: private file mappings)
//! userfaultfd cannot, and neither can it where the kernel lacks it or a seccomp filter
//! forbids it.  There the other threads are parked instead, the way garbage collectors
//! stop the world: each gets a signal ([`signal`]) whose handler counts itself parked and
//! sleeps until the copy is swapped in.  A handler runs only between two instructions of
//! its thread, or when its system call returns or is interrupted (and restarted after,
//! SA_RESTART), so a parked thread's writes, its kernel's included, all landed before the
//! copy or land after the swap.
//!
//! Rules kept:
//! - The signal is ours alone: it is installed only if nobody handles it already
//!   (`SOFTNIC_STOP_SIGNAL`, default SIGRTMAX - 7); otherwise parking is unavailable.
//! - Each request carries its round's number (`sigqueue`'s value), so a signal delivered
//!   late, after its round, is ignored instead of parking the thread in the next one.
//! - Between the first signal and the release the parker neither allocates nor takes a
//!   lock (a parked thread may hold the allocator's): its lists are fixed arrays, its
//!   calls raw system calls.  So must be what the caller does while they are parked.
//! - A thread that does not park in time (it blocks the signal, or is a kernel worker
//!   such as io_uring's) makes [`park_others`] give up: everyone is released and the
//!   caller goes on without the parking (and says so).
//! - Threads created meanwhile are found by listing /proc/self/task again until a listing
//!   finds nobody new (only threads that are not parked yet can create one).
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// Most threads parked at once; a process with more is not parked (the caller goes on
/// without).
const MAX_THREADS: usize = 4096;

/// How long the parker waits for every thread to park before giving up.
const PARK_TIMEOUT: Duration = Duration::from_millis(200);

/// The round in progress (odd while one is, even between rounds).
static ROUND: AtomicU32 = AtomicU32::new(0);
/// Threads parked in the current round.
static PARKED: AtomicU32 = AtomicU32::new(0);
/// The parker's thread id, so that a stray signal to it never parks it.
static PARKER: AtomicI32 = AtomicI32::new(0);
/// 0 not tried, 1 installed, 2 unavailable.
static INSTALLED: AtomicU8 = AtomicU8::new(0);
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// One parker at a time (a spin flag, never held by a thread that could be parked).
static BUSY: AtomicBool = AtomicBool::new(false);
/// Threads parked in the current round, by arrival (PARKED's value before each one).
static PARKED_TIDS: [AtomicI32; MAX_THREADS] = [const { AtomicI32::new(0) }; MAX_THREADS];
/// Threads that did not park in a round that gave up: while one of them lives, parking
/// is not tried again (a thread that blocks the signal would cost every later round the
/// whole timeout).
static UNPARKABLE: [AtomicI32; 8] = [const { AtomicI32::new(0) }; 8];

/// The thread ids of a round: those signalled, and a listing's buffer.  Only the holder of
/// `BUSY` touches them.
struct Lists {
    signalled: [i32; MAX_THREADS],
    n: usize,
    dirents: [u8; 16384],
}
static mut LISTS: Lists = Lists { signalled: [0; MAX_THREADS], n: 0, dirents: [0; 16384] };

fn gettid() -> i32 {
    // SAFETY: no arguments.
    (unsafe { libc::syscall(libc::SYS_gettid) }) as i32
}

fn futex(word: &AtomicU32, op: libc::c_int, val: u32, timeout: Option<&libc::timespec>) {
    let ts = timeout.map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: a live word; raw system call (never a cancellation point).
    unsafe { libc::syscall(libc::SYS_futex, word as *const AtomicU32, op | libc::FUTEX_PRIVATE_FLAG, val, ts, 0usize, 0u32) };
}

/// The handler: parks the thread until its round ends.  Async-signal-safe: atomics and
/// raw system calls; errno is kept.
extern "C" fn on_signal(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: glibc's per-thread errno location.
    let errno = unsafe { *libc::__errno_location() };
    // SAFETY: the kernel's siginfo for this delivery; sigqueue's value is in si_value.
    let asked = unsafe { (*info).si_value().sival_ptr } as usize as u32;
    let round = ROUND.load(Ordering::Acquire);
    if round & 1 == 1 && asked == round && gettid() != PARKER.load(Ordering::Relaxed) {
        let i = PARKED.fetch_add(1, Ordering::AcqRel) as usize;
        if i < MAX_THREADS {
            PARKED_TIDS[i].store(gettid(), Ordering::Release);
        }
        futex(&PARKED, libc::FUTEX_WAKE, 1, None);
        while ROUND.load(Ordering::Acquire) == round {
            futex(&ROUND, libc::FUTEX_WAIT, round, None);
        }
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// The signal used, installed on first use; None where it cannot be (taken by the
/// program, or refused).
fn signal() -> Option<i32> {
    match INSTALLED.load(Ordering::Acquire) {
        1 => return Some(SIGNAL.load(Ordering::Relaxed)),
        2 => return None,
        _ => {}
    }
    static ONCE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _g = ONCE.lock().unwrap_or_else(|e| e.into_inner());
    if INSTALLED.load(Ordering::Acquire) != 0 {
        return signal();
    }
    let want = crate::env::get_u64("SOFTNIC_STOP_SIGNAL") as i32;
    let sig = if want == 0 { libc::SIGRTMAX() - 7 } else { want };
    let ok = sig >= libc::SIGRTMIN() && sig <= libc::SIGRTMAX() && {
        // SAFETY: sigaction with valid pointers; the old action is read first, so a
        // program's own handler is never replaced.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_DFL && {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_signal as *const () as usize;
                sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(sig, &sa, std::ptr::null_mut()) == 0
            }
        }
    };
    if !ok {
        crate::sn_info!("fabric", "signal {} is taken: other threads are not parked while statics are registered", sig);
    }
    SIGNAL.store(sig, Ordering::Relaxed);
    INSTALLED.store(if ok { 1 } else { 2 }, Ordering::Release);
    ok.then_some(sig)
}

/// Whether a round is in progress (some threads may be parked): no allocation then.
pub fn parking() -> bool {
    ROUND.load(Ordering::Acquire) & 1 == 1
}

/// Makes sure the signal is installed (call before anything must not allocate).
pub fn prepare() -> bool {
    signal().is_some()
}

/// The process's other threads, parked while alive.  Dropping it releases them.
pub struct Parked {
    _private: (),
}

impl Drop for Parked {
    fn drop(&mut self) {
        release();
    }
}

/// How many threads parked so far in this round (bounded by the record's size).
fn parked_now() -> usize {
    (PARKED.load(Ordering::Acquire) as usize).min(MAX_THREADS)
}

/// Records the threads of `signalled` that did not park (not among the first `parked`
/// of PARKED_TIDS) in UNPARKABLE, as room allows.
fn remember_unparked(signalled: &[i32], parked: usize) {
    let mut slot = 0;
    for &t in signalled {
        if (0..parked).any(|i| PARKED_TIDS[i].load(Ordering::Acquire) == t) {
            continue;
        }
        while slot < UNPARKABLE.len() {
            let cur = UNPARKABLE[slot].load(Ordering::Relaxed);
            slot += 1;
            // SAFETY: getpid/tgkill(0): is the recorded thread still there?
            if cur == 0 || unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), cur, 0) } != 0 {
                UNPARKABLE[slot - 1].store(t, Ordering::Relaxed);
                break;
            }
        }
    }
}

fn release() {
    PARKER.store(0, Ordering::Relaxed);
    ROUND.fetch_add(1, Ordering::AcqRel);
    futex(&ROUND, libc::FUTEX_WAKE, i32::MAX as u32, None);
    BUSY.store(false, Ordering::Release);
}

/// Parks every other thread of the process; None (everyone running) when that cannot be
/// done: the signal is not ours ([`prepare`] first), a thread did not park within
/// [`PARK_TIMEOUT`], or there are too many.  Allocates nothing and takes no lock.
pub fn park_others() -> Option<Parked> {
    let sig = if INSTALLED.load(Ordering::Acquire) == 1 { SIGNAL.load(Ordering::Relaxed) } else { return None };
    // Still ours?  A program may have installed its own handler since: then its handler
    // must never see our requests.
    // SAFETY: sigaction reading the current action into a local.
    let ours = unsafe {
        let mut cur: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut cur) == 0 && cur.sa_sigaction == on_signal as *const () as usize
    };
    if !ours {
        INSTALLED.store(2, Ordering::Release);
        return None;
    }
    // SAFETY: getpid has no arguments.
    let pid = unsafe { libc::getpid() };
    for u in &UNPARKABLE {
        let t = u.load(Ordering::Relaxed);
        // SAFETY: signal 0 only checks that the thread exists.
        if t != 0 && unsafe { libc::syscall(libc::SYS_tgkill, pid, t, 0) } == 0 {
            return None;
        }
    }
    while BUSY.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
        std::hint::spin_loop();
        crate::cancel::nap(Duration::from_micros(50));
    }
    let me = gettid();
    PARKER.store(me, Ordering::Relaxed);
    PARKED.store(0, Ordering::Relaxed);
    let round = ROUND.fetch_add(1, Ordering::AcqRel) + 1;
    // SAFETY: BUSY is ours: nobody else touches the lists.
    let lists = unsafe { &mut *std::ptr::addr_of_mut!(LISTS) };
    lists.n = 0;
    let start = Instant::now();
    loop {
        // Signal the threads this listing finds that were not signalled yet.
        let mut new = 0;
        let listed = list_threads(&mut lists.dirents, |tid| {
            if tid == me || lists.signalled[..lists.n].contains(&tid) {
                return true;
            }
            if lists.n == MAX_THREADS {
                return false;
            }
            // SAFETY: a siginfo for rt_tgsigqueueinfo: SI_QUEUE from this process, the
            // round in si_value.
            let r = unsafe {
                let mut si: libc::siginfo_t = std::mem::zeroed();
                let p = &mut si as *mut libc::siginfo_t as *mut i32;
                *p = sig; // si_signo
                *p.add(2) = libc::SI_QUEUE; // si_code
                *p.add(4) = pid; // si_pid
                *p.add(5) = libc::getuid() as i32; // si_uid
                *(p.add(6) as *mut usize) = round as usize; // si_value
                libc::syscall(libc::SYS_rt_tgsigqueueinfo, pid, tid, sig, &si as *const libc::siginfo_t)
            };
            if r == 0 {
                lists.signalled[lists.n] = tid;
                lists.n += 1;
                new += 1;
                true
            } else {
                // Gone meanwhile (ESRCH), or the signal cannot be sent: give up.
                // SAFETY: glibc's per-thread errno location.
                unsafe { *libc::__errno_location() == libc::ESRCH }
            }
        });
        if !listed {
            release();
            return None;
        }
        if new == 0 {
            return Some(Parked { _private: () });
        }
        // Wait until everyone signalled so far is parked (or gone).
        loop {
            let parked = PARKED.load(Ordering::Acquire) as usize;
            if parked >= lists.n {
                break;
            }
            // Threads that ended since they were signalled will never park.
            let mut k = 0;
            while k < lists.n {
                // SAFETY: signal 0 only checks that the thread exists.
                if unsafe { libc::syscall(libc::SYS_tgkill, pid, lists.signalled[k], 0) } != 0 {
                    lists.signalled[k] = lists.signalled[lists.n - 1];
                    lists.n -= 1;
                } else {
                    k += 1;
                }
            }
            if PARKED.load(Ordering::Acquire) as usize >= lists.n {
                break;
            }
            if start.elapsed() > PARK_TIMEOUT {
                remember_unparked(&lists.signalled[..lists.n], parked_now());
                release();
                return None;
            }
            let ts = libc::timespec { tv_sec: 0, tv_nsec: 200_000 };
            futex(&PARKED, libc::FUTEX_WAIT, parked as u32, Some(&ts));
        }
    }
}

/// Calls `f` with every thread id in /proc/self/task (through `buf`, with raw system
/// calls); false when the listing failed or `f` answered false.
fn list_threads(buf: &mut [u8], mut f: impl FnMut(i32) -> bool) -> bool {
    let fd = crate::cancel::sys::open(c"/proc/self/task", libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC, 0);
    if fd < 0 {
        return false;
    }
    let mut ok = true;
    'outer: loop {
        // SAFETY: getdents64 into our buffer.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) };
        if n < 0 {
            ok = false;
            break;
        }
        if n == 0 {
            break;
        }
        let mut at = 0usize;
        while at + 19 < n as usize {
            // struct linux_dirent64: u64 ino, i64 off, u16 reclen, u8 type, name.
            let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
            if reclen == 0 {
                break;
            }
            let name = &buf[at + 19..(at + reclen).min(n as usize)];
            let len = name.iter().position(|&c| c == 0).unwrap_or(name.len());
            let mut tid: i64 = 0;
            let digits = &name[..len];
            if !digits.is_empty() && digits.iter().all(|c| c.is_ascii_digit()) {
                for &c in digits {
                    tid = tid * 10 + (c - b'0') as i64;
                }
                if !f(tid as i32) {
                    ok = false;
                    break 'outer;
                }
            }
            at += reclen;
        }
    }
    crate::cancel::sys::close(fd);
    ok
}
