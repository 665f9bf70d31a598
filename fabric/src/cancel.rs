//! Thread cancellation (`pthread_cancel`) in blocking calls.
//!
//! The vendors' libraries are C libraries, and their blocking calls are cancellation points:
//! programs park a watcher thread in `GNI_CqWaitEvent` or `PtlEQWait` (often with
//! `PTHREAD_CANCEL_ASYNCHRONOUS`) and cancel it at exit.  Cancellation unwinds the thread
//! (glibc's forced unwind); in Rust that runs the destructors of the frames it passes, so what
//! a call holds is released, provided that the unwind reaches us only where we expect it.
//!
//! The rules:
//! - **A blocking export** is `extern "C-unwind"` and runs its body through [`blocking`].  On
//!   entry the calling thread's cancellation is made deferred and disabled, so nothing inside
//!   the library — a lock held, a ring slot half claimed, a libfabric call, a log line written
//!   — can be interrupted by it; the caller's type and state are put back on return.
//! - **Cancellation points** are the blocking calls themselves (a request pending when one
//!   is called ends the thread there) and the waits for what the call is about (an event, a
//!   barrier, a DMA completion), marked with [`point`].  Their sleeps ([`syscall`] from `wait`'s futex
//!   calls, [`sleep`]) are *windows*: if the caller had cancellation enabled, it is enabled
//!   again, asynchronous, around that one system call, as glibc does for its own cancellable
//!   system calls.  A pending or arriving request then unwinds the thread out of the system
//!   call: the waits' guards drop their waiter counts, guards release locks and references,
//!   and the C frames above the export run the program's cleanup handlers.  Lock waits and
//!   other short internal sleeps are never windows.
//! - **Frames an asynchronous unwind may start in hold nothing to drop.**  An unwind that
//!   starts between two calls of a frame with landing pads aborts (the unwinder finds no
//!   entry for the instruction), so the window functions, [`blocking`] and the exports
//!   themselves have no destructors; everything else runs with cancellation disabled.
//! - **Outside blocking calls** the library never acts on a cancellation request: its own
//!   sleeps use the raw system call, which is not a cancellation point.
//! - A Rust panic inside a blocking call still aborts, naming the call ([`blocking`]'s
//!   guard tells a panic from a cancellation by `std::thread::panicking`).
//! - **A request may still be on its way when the thread holds cancellation off.**
//!   `pthread_cancel` marks an asynchronous target and sends it the signal afterwards; a
//!   sender preempted in between lets the target make itself deferred and disabled first.
//!   glibc 2.36's handler acts if the thread's *type* bit is set, whatever its state, and
//!   glibc's cancellable wrappers (`sendmsg`, `poll`, `epoll_wait`: libfabric's) set that
//!   bit around their system call even with cancellation disabled.  The late signal so
//!   unwound a thread from inside libfabric, holding the provider's lock: the process hung
//!   (`cancel_sisci_vh2`, under load).  So a thread that was asynchronous a moment ago (a
//!   caller with asynchronous cancellation, or a window just closed) first waits for such a
//!   signal to land ([`settle`]), as glibc's wrappers themselves do after their system
//!   call; once deferred, no new one is sent.  (Blocking the signal instead deadlocks in
//!   that same wait of glibc's.)

use std::cell::Cell;
use std::time::Duration;

use libc::{c_int, c_long};

const PTHREAD_CANCEL_ENABLE: c_int = 0;
const PTHREAD_CANCEL_DISABLE: c_int = 1;
const PTHREAD_CANCEL_DEFERRED: c_int = 0;
const PTHREAD_CANCEL_ASYNCHRONOUS: c_int = 1;

// Declared "C-unwind": enabling cancellation, or a system call made with it enabled, may
// unwind the thread.  (Declared here rather than taken from `libc`, whose declarations
// are "C": calls through them are assumed not to unwind.)
#[allow(clashing_extern_declarations)]
extern "C-unwind" {
    fn pthread_setcancelstate(state: c_int, oldstate: *mut c_int) -> c_int;
    fn pthread_setcanceltype(ty: c_int, oldtype: *mut c_int) -> c_int;
    fn pthread_testcancel();
    /// glibc's `syscall` is variadic, but it only moves integer registers (it never reads
    /// variable arguments through `va_list`), so calling it with six fixed `long`s is the
    /// same call.
    #[link_name = "syscall"]
    fn syscall6(nr: c_long, a1: c_long, a2: c_long, a3: c_long, a4: c_long, a5: c_long, a6: c_long) -> c_long;
    /// A cancellable wrapper, for [`settle`].
    #[link_name = "poll"]
    fn poll_cancellable(fds: *mut libc::pollfd, nfds: libc::nfds_t, timeout: c_int) -> c_int;
}

/// Lets a cancellation signal still on its way to this thread land, now that the thread is
/// deferred (see the module doc): glibc's cancellable wrappers wait for exactly that after
/// their system call, when the thread is marked as being cancelled but the signal has not
/// come; its handler then only marks the thread (the next cancellation point acts).  An
/// empty `poll` is the cheapest such wrapper.  Should the signal come during its system
/// call, it acts there (glibc 2.36 ignores the state then): this frame and the callers'
/// are at a call site and hold nothing half done.  For threads that were asynchronous just
/// before; a no-op system call's cost.
#[inline(never)]
fn settle() {
    let e = errno();
    // SAFETY: no descriptors, no timeout; errno put back.
    unsafe {
        poll_cancellable(std::ptr::null_mut(), 0, 0);
        *libc::__errno_location() = e;
    }
}

/// This thread's place, as bits: inside a blocking call; the caller had cancellation
/// enabled; inside a cancellation point of that call.
const IN_CALL: u8 = 1;
const CALLER_ENABLED: u8 = 2;
const AT_POINT: u8 = 4;

thread_local! {
    static STATE: Cell<u8> = const { Cell::new(0) };
}

/// Runs the body of a blocking export (see the module doc).  `api` names the call in the
/// message printed if a panic happens inside.  Nested blocking calls (a library function
/// calling another) keep the outermost call's settings.
///
/// No destructors here: this frame is the one an asynchronous cancellation may find between
/// the export's entry and the disabling of cancellation.
#[inline(never)]
pub fn blocking<R>(api: &'static str, f: impl FnOnce() -> R) -> R {
    if STATE.with(|s| s.get()) & IN_CALL != 0 {
        return run(api, f);
    }
    // SAFETY: see `enter`.
    let ty = unsafe { enter() };
    blocking_from(api, ty, f)
}

/// [`blocking`] with a first attempt `now` that never sleeps (an event already queued:
/// the common case of a wait that follows the operation it waits for).  When `now`
/// answers, the call returns at once, the way a C library's wait that finds its condition
/// true returns without reaching the cancellation point inside its sleep (the Portals
/// reference's `PtlEQWait` is one only in its `pthread_cond_wait`); a pending request is
/// acted on at the caller's next cancellation point.  That saves the thread-local state
/// and the three cancellation calls of a blocking call (about 10 ns of a 120 ns round
/// trip); one remains, to learn the caller's type: only a deferred caller runs `now`
/// (nothing can interrupt it then but a cancellation point, and `now` must call none: the
/// library's own system calls are raw, see [`sys`]; it must not print through std).  An
/// asynchronous caller, or `now` answering None, go the way of [`blocking`].
#[inline(never)]
pub fn blocking_after<R>(api: &'static str, now: impl FnOnce() -> Option<R>, f: impl FnOnce() -> R) -> R {
    let mut ty: c_int = 0;
    // SAFETY: valid out pointer; making a deferred thread deferred changes nothing.  (Inside
    // a blocking call, the thread is deferred too: `blocking` then sees the nesting.)
    unsafe { pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &mut ty) };
    if ty == PTHREAD_CANCEL_DEFERRED {
        if let Some(r) = run(api, now) {
            return r;
        }
        return blocking(api, f);
    }
    // An asynchronous caller (never inside a blocking call of ours, which is deferred),
    // deferred now: the rest of `enter`, then the call.
    // SAFETY: a cancellation point; this frame holds nothing to drop.
    unsafe { pthread_testcancel() };
    blocking_from(api, ty, f)
}

/// The entry of a blocking call: acts on a request already pending (a cancellation point
/// does, even if it would not sleep: a wait with a zero timeout in a loop), then makes
/// the thread deferred (a cancellation signal already on its way then only marks the
/// thread: glibc acts on it from the handler only when asynchronous).  Returns the
/// caller's type.  Changing nothing costs no atomic update when already deferred.
///
/// # Safety
/// Called from a frame that holds nothing to drop (the unwind may start there).
#[inline(always)]
unsafe fn enter() -> c_int {
    let mut ty: c_int = 0;
    // SAFETY: valid out pointer.
    unsafe {
        pthread_testcancel();
        pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &mut ty);
    }
    ty
}

/// The rest of [`blocking`] once the thread is deferred (`ty`: the caller's type):
/// cancellation disabled around `f`, the caller's state and type put back.  No
/// destructors (see [`blocking`]).
#[inline(always)]
fn blocking_from<R>(api: &'static str, ty: c_int, f: impl FnOnce() -> R) -> R {
    let mut st: c_int = 0;
    // SAFETY: valid out pointer; deferred, so disabling does not act.
    unsafe { pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &mut st) };
    if ty == PTHREAD_CANCEL_ASYNCHRONOUS {
        settle();
    }
    STATE.with(|s| s.set(IN_CALL | if st == PTHREAD_CANCEL_ENABLE { CALLER_ENABLED } else { 0 }));
    let r = run(api, f);
    STATE.with(|s| s.set(0));
    let mut ignored: c_int = 0;
    if st == PTHREAD_CANCEL_ENABLE {
        // SAFETY: still deferred here (see `enable`).  An asynchronous caller is cancelled
        // at once by a request that arrived meanwhile (the unwind starts in this frame,
        // which holds nothing); a deferred one at its next cancellation point.
        unsafe { enable(ty == PTHREAD_CANCEL_ASYNCHRONOUS) };
    }
    if ty == PTHREAD_CANCEL_ASYNCHRONOUS {
        // SAFETY: valid out pointer.
        unsafe { pthread_setcanceltype(ty, &mut ignored) };
    }
    r
}

/// Enables cancellation of a thread that is deferred, acting on a pending request only if
/// `act`.  Never through `pthread_setcancelstate` acting itself: glibc (2.36) then unwinds
/// without setting the thread's result, and `pthread_join` reads NULL instead of
/// `PTHREAD_CANCELED`; `pthread_testcancel` sets it.
///
/// # Safety
/// The thread's type must be deferred; the caller's frame holds nothing to drop if `act`.
#[inline(always)]
unsafe fn enable(act: bool) {
    let mut st: c_int = 0;
    // SAFETY: valid out pointer; deferred, so enabling does not act by itself.
    unsafe { pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &mut st) };
    if act {
        // SAFETY: a plain cancellation point.
        unsafe { pthread_testcancel() };
    }
}

/// Defines a blocking export: `#[no_mangle] extern "C-unwind"`, its body run through
/// [`blocking`] as a separate function, so that the export's own frame holds nothing to
/// drop (see the module doc).  `return` in the body returns from the call.
///
/// ```ignore
/// softnic_fabric::blocking_export! {
///     pub unsafe fn GNI_CqWaitEvent(cq: gni_cq_handle_t, timeout: u64, ev: *mut u64) -> gni_return_t {
///         ...
///     }
/// }
/// ```
#[macro_export]
macro_rules! blocking_export {
    ($(#[$m:meta])* pub unsafe fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C-unwind" fn $name($($arg: $ty),*) -> $ret {
            #[inline(never)]
            unsafe fn body($($arg: $ty),*) -> $ret $body
            // SAFETY: the caller's arguments, forwarded under the export's own contract.
            $crate::cancel::blocking(stringify!($name), move || unsafe { body($($arg),*) })
        }
    };
    ($(#[$m:meta])* pub fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        $(#[$m])*
        #[no_mangle]
        pub extern "C-unwind" fn $name($($arg: $ty),*) -> $ret {
            #[inline(never)]
            fn body($($arg: $ty),*) -> $ret $body
            $crate::cancel::blocking(stringify!($name), move || body($($arg),*))
        }
    };
}

/// [`blocking_export!`] for a call with a first attempt that never sleeps (see
/// [`blocking_after`]): `now` gives `Some(result)` to return at once, `None` to go on to the
/// body.  `now` must not call a cancellation point, print through std, or report an error
/// (leave errors to the body: it runs the same checks with cancellation held off).
///
/// ```ignore
/// softnic_fabric::blocking_export_now! {
///     pub unsafe fn PtlEQWait(eq: u32, ev: *mut Event) -> i32;
///     now { try_take(eq, ev) }
///     wait { ret("PtlEQWait", wait_one(eq, ev, None)) }
/// }
/// ```
#[macro_export]
macro_rules! blocking_export_now {
    ($(#[$m:meta])* pub unsafe fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty; now $now:block wait $body:block) => {
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C-unwind" fn $name($($arg: $ty),*) -> $ret {
            #[inline(never)]
            unsafe fn now($($arg: $ty),*) -> Option<$ret> $now
            #[inline(never)]
            unsafe fn body($($arg: $ty),*) -> $ret $body
            // SAFETY: the caller's arguments, forwarded under the export's own contract.
            $crate::cancel::blocking_after(
                stringify!($name),
                move || unsafe { now($($arg),*) },
                move || unsafe { body($($arg),*) },
            )
        }
    };
}

/// The body of a blocking call, under a guard that aborts on a Rust panic and forgets the
/// call's thread state when a cancellation unwinds through it.
#[inline(never)]
fn run<R>(api: &'static str, f: impl FnOnce() -> R) -> R {
    struct Guard(&'static str);
    impl Drop for Guard {
        fn drop(&mut self) {
            if std::thread::panicking() {
                crate::log::fatal(self.0, "internal error (a panic inside a blocking call)");
            }
            // A cancellation: the thread is ending; whatever the program's cleanup handlers
            // call next starts afresh.
            STATE.with(|s| s.set(0));
        }
    }
    let g = Guard(api);
    let r = f();
    std::mem::forget(g);
    r
}

/// Runs `f` as a cancellation point of the current blocking call: its sleeps are windows
/// (see the module doc).  Outside a blocking call, or when the caller had cancellation
/// disabled, `f` just runs.
#[inline]
pub fn point<R>(f: impl FnOnce() -> R) -> R {
    let before = STATE.with(|s| s.get());
    if before & (IN_CALL | CALLER_ENABLED) != IN_CALL | CALLER_ENABLED || before & AT_POINT != 0 {
        return f();
    }
    struct Leave(u8);
    impl Drop for Leave {
        fn drop(&mut self) {
            STATE.with(|s| s.set(self.0));
        }
    }
    STATE.with(|s| s.set(before | AT_POINT));
    let _leave = Leave(before);
    f()
}

/// A cancellation point for waits that poll instead of sleeping (a collective's progress
/// loop): acts on a pending request if this thread is in a blocking call whose caller had
/// cancellation enabled.  A thread-local read otherwise.
#[inline]
pub fn test() {
    if STATE.with(|s| s.get()) & (IN_CALL | CALLER_ENABLED) == IN_CALL | CALLER_ENABLED {
        test_window();
    }
}

/// `pthread_testcancel` with cancellation enabled around it.  No destructors (the unwind
/// starts in glibc, called from here).
#[inline(never)]
fn test_window() {
    let mut st: c_int = 0;
    // SAFETY: valid out pointers; the thread is deferred inside a blocking call.
    unsafe {
        enable(true);
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &mut st);
    }
}

/// Whether a sleep of this thread now is a window.
#[inline]
fn window_open() -> bool {
    STATE.with(|s| s.get()) == IN_CALL | CALLER_ENABLED | AT_POINT
}

/// A system call that sleeps (futex waits, nanosleep, poll): a cancellation window at a
/// cancellation point of a blocking call, otherwise the plain system call (never a
/// cancellation point).  Returns the call's result and `errno` (0 on success).
pub fn syscall(nr: c_long, args: [c_long; 6]) -> (c_long, c_int) {
    if window_open() {
        window(nr, args)
    } else {
        // SAFETY: the caller's system call and arguments, as for libc::syscall.
        let r = unsafe { syscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5]) };
        (r, if r < 0 { errno() } else { 0 })
    }
}

/// The system call with cancellation enabled and asynchronous around it.  No destructors:
/// the unwind may start in this frame.
#[inline(never)]
fn window(nr: c_long, args: [c_long; 6]) -> (c_long, c_int) {
    let mut ty: c_int = 0;
    let mut st: c_int = 0;
    // SAFETY: valid out pointers; the system call as the caller gave it.  Enabling with a
    // request pending (asynchronous by then) unwinds at once.
    unsafe {
        // A request already pending is acted on here, one that arrives later by the signal
        // (both set the thread's result, see `enable`).
        enable(true);
        pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &mut ty);
        let r = syscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5]);
        let e = if r < 0 { errno() } else { 0 };
        pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &mut ty);
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &mut st);
        // A request made while the thread slept may still be on its way.
        settle();
        (r, e)
    }
}

fn errno() -> c_int {
    // SAFETY: glibc's per-thread errno location.
    unsafe { *libc::__errno_location() }
}

/// Sleeps for `d`: a window at a cancellation point (see [`syscall`]), never a
/// cancellation point elsewhere, unlike `std::thread::sleep`.  For the naps of waits for
/// what a blocking call is about (a peer's answer, a DMA completion).
pub fn sleep(d: Duration) {
    nanosleep(d, true)
}

/// Sleeps for `d` and is never a cancellation point: for short waits on internal state
/// (a lock, a claim another thread is finishing), where the thread may hold something
/// that must not be left half done.
pub fn nap(d: Duration) {
    nanosleep(d, false)
}

fn nanosleep(d: Duration, may_be_window: bool) {
    let mut ts = libc::timespec { tv_sec: d.as_secs().min(i64::MAX as u64) as libc::time_t, tv_nsec: d.subsec_nanos() as libc::c_long };
    loop {
        let mut rem = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        let args = [&ts as *const libc::timespec as c_long, &mut rem as *mut libc::timespec as c_long, 0, 0, 0, 0];
        let (r, e) = if may_be_window {
            syscall(libc::SYS_nanosleep, args)
        } else {
            // SAFETY: nanosleep with two live timespecs.
            let r = unsafe { syscall6(libc::SYS_nanosleep, args[0], args[1], 0, 0, 0, 0) };
            (r, if r < 0 { errno() } else { 0 })
        };
        if r == 0 || e != libc::EINTR {
            return;
        }
        ts = rem;
    }
}

/// Cancellation held off while alive: for calls into other C libraries (libfabric) whose
/// internal system calls are cancellation points and which must not be unwound halfway,
/// from whatever call of ours reaches them.  Deferred first, then disabled: glibc (2.36)
/// acts on a cancellation signal already on its way to an asynchronous thread even after
/// the thread disabled cancellation, as long as its type is still asynchronous (seen
/// leaving a libfabric mutex locked).  Two cheap calls each way, for paths that make
/// system calls anyway.
pub struct Masked {
    ty: c_int,
    st: c_int,
}

impl Masked {
    pub fn new() -> Masked {
        let mut m = Masked { ty: PTHREAD_CANCEL_DEFERRED, st: PTHREAD_CANCEL_DISABLE };
        // SAFETY: valid out pointers; neither call acts on a request (deferred first).
        unsafe {
            pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &mut m.ty);
            pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &mut m.st);
        }
        if m.ty == PTHREAD_CANCEL_ASYNCHRONOUS {
            settle();
        }
        m
    }
}

impl Default for Masked {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Masked {
    fn drop(&mut self) {
        let asynchronous = self.ty == PTHREAD_CANCEL_ASYNCHRONOUS;
        // SAFETY: valid out pointers.  Enabled again while deferred (see `enable`); an
        // asynchronous thread is then cancelled by a request that came meanwhile (the
        // unwind starts in glibc, at a call site of ours), a deferred one later.
        unsafe {
            if self.st == PTHREAD_CANCEL_ENABLE {
                enable(asynchronous);
            }
            if asynchronous {
                let mut ignored: c_int = 0;
                pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &mut ignored);
            }
        }
    }
}

/// Runs `f` with cancellation held off, as [`Masked`] does, from a frame that holds nothing
/// to drop: for the paths a thread cancelled asynchronously may be in (uTofu's polls
/// reaching the network engine), where even the prologue of a frame with landing pads is
/// no place for an unwind to start.
#[inline(never)]
pub fn masked<R>(f: impl FnOnce() -> R) -> R {
    let mut ty: c_int = 0;
    let mut st: c_int = 0;
    // SAFETY: as in `Masked`.
    unsafe {
        pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &mut ty);
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &mut st);
    }
    if ty == PTHREAD_CANCEL_ASYNCHRONOUS {
        settle();
    }
    let r = f();
    let asynchronous = ty == PTHREAD_CANCEL_ASYNCHRONOUS;
    // SAFETY: as in `Masked`'s drop.
    unsafe {
        if st == PTHREAD_CANCEL_ENABLE {
            enable(asynchronous);
        }
        if asynchronous {
            pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &mut ty);
        }
    }
    r
}

/// Whether this thread is at a live cancellation point (its sleeps are windows): for waits
/// that must choose a sleeping system call to be cancellable (a poll before a read).
pub fn at_point() -> bool {
    window_open()
}

/// Whether this thread is inside a blocking call whose cancellation points are live
/// (diagnostics and tests).
pub fn in_cancellable_call() -> bool {
    STATE.with(|s| s.get()) & (IN_CALL | CALLER_ENABLED) == IN_CALL | CALLER_ENABLED
}

/// The system calls the library makes outside waits, as raw system calls: libc's wrappers
/// of these are cancellation points, and the library's own calls must never be (a pending
/// request would end the thread in the middle of a registration or an attach, holding
/// what it holds).
pub mod sys {
    use libc::{c_int, c_void};
    use std::ffi::CStr;

    pub fn open(path: &CStr, flags: c_int, mode: libc::mode_t) -> c_int {
        // SAFETY: a NUL-terminated path.
        (unsafe { libc::syscall(libc::SYS_openat, libc::AT_FDCWD, path.as_ptr(), flags, mode) }) as c_int
    }

    pub fn close(fd: c_int) -> c_int {
        // SAFETY: closes a descriptor the caller owns.
        (unsafe { libc::syscall(libc::SYS_close, fd) }) as c_int
    }

    /// # Safety
    /// `buf` is valid for `len` bytes of writing.
    pub unsafe fn read(fd: c_int, buf: *mut c_void, len: usize) -> isize {
        // SAFETY: the caller's buffer.
        (unsafe { libc::syscall(libc::SYS_read, fd, buf, len) }) as isize
    }

    /// # Safety
    /// `buf` is valid for `len` bytes of writing.
    pub unsafe fn pread(fd: c_int, buf: *mut c_void, len: usize, off: libc::off_t) -> isize {
        // SAFETY: the caller's buffer.
        (unsafe { libc::syscall(libc::SYS_pread64, fd, buf, len, off) }) as isize
    }

    /// # Safety
    /// `buf` is valid for `len` bytes of reading.
    pub unsafe fn write(fd: c_int, buf: *const c_void, len: usize) -> isize {
        // SAFETY: the caller's buffer.
        (unsafe { libc::syscall(libc::SYS_write, fd, buf, len) }) as isize
    }

    /// sendmsg(2) of `n` vectors on a socket, without SIGPIPE (a peer that closed is an
    /// EPIPE error, not the end of the process) and without blocking.
    ///
    /// # Safety
    /// `iov` points to `n` iovecs, each valid for its length of reading.
    pub unsafe fn send_vectors(fd: c_int, iov: *const libc::iovec, n: usize) -> isize {
        // SAFETY: all-zero is a valid msghdr; the caller's vectors.
        unsafe {
            let mut m: libc::msghdr = std::mem::zeroed();
            m.msg_iov = iov as *mut libc::iovec;
            m.msg_iovlen = n as _;
            libc::syscall(libc::SYS_sendmsg, fd, &m as *const libc::msghdr, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) as isize
        }
    }

    pub fn poll(fds: &mut [libc::pollfd], timeout_ms: c_int) -> c_int {
        // SAFETY: a live array of pollfds.
        (unsafe { libc::syscall(libc::SYS_poll, fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) }) as c_int
    }

    /// A whole (small) file, such as one under /proc.
    pub fn read_file(path: &CStr) -> std::io::Result<Vec<u8>> {
        let fd = open(path, libc::O_RDONLY | libc::O_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut out: Vec<u8> = Vec::with_capacity(4096);
        let r = loop {
            if out.capacity() - out.len() < 1024 {
                out.reserve(4096);
            }
            let spare = out.capacity() - out.len();
            // SAFETY: the vector's spare capacity.
            let n = unsafe { read(fd, out.as_mut_ptr().add(out.len()) as *mut c_void, spare) };
            match n {
                0 => break Ok(()),
                n if n > 0 => {
                    // SAFETY: the kernel wrote n bytes there.
                    unsafe { out.set_len(out.len() + n as usize) }
                }
                _ => {
                    let e = std::io::Error::last_os_error();
                    if e.raw_os_error() != Some(libc::EINTR) {
                        break Err(e);
                    }
                }
            }
        };
        close(fd);
        r.map(|()| out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_file_reads() {
        let me = sys::read_file(c"/proc/self/stat").unwrap();
        assert!(me.starts_with(std::process::id().to_string().as_bytes()));
        assert!(sys::read_file(c"/proc/self/no-such-file").is_err());
    }

    #[test]
    fn outside_calls_sleeps_are_plain() {
        assert!(!window_open());
        let t = std::time::Instant::now();
        sleep(Duration::from_millis(5));
        assert!(t.elapsed() >= Duration::from_millis(5));
        point(|| assert!(!window_open()));
    }

    #[test]
    fn a_blocking_call_opens_windows_only_at_its_points_and_restores_the_state() {
        let r = blocking("test", || {
            assert!(in_cancellable_call());
            assert!(!window_open());
            point(|| {
                assert!(window_open());
                // Nested points and nested calls keep the outer settings.
                point(|| assert!(window_open()));
                blocking("inner", || assert!(window_open()));
            });
            assert!(!window_open());
            // A window with nothing pending is an ordinary system call.
            point(|| sleep(Duration::from_millis(1)));
            7
        });
        assert_eq!(r, 7);
        assert_eq!(STATE.with(|s| s.get()), 0);
        let mut st: c_int = -1;
        // SAFETY: valid out pointer; puts the (enabled) state back.
        unsafe {
            pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &mut st);
        }
        assert_eq!(st, PTHREAD_CANCEL_ENABLE, "the caller's state is back after the call");
    }

    #[test]
    fn a_caller_with_cancellation_disabled_gets_no_windows() {
        let mut st: c_int = 0;
        // SAFETY: valid out pointers.
        unsafe { pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &mut st) };
        blocking("test", || point(|| assert!(!window_open())));
        // SAFETY: as above.
        unsafe { pthread_setcancelstate(st, &mut st) };
    }
}
