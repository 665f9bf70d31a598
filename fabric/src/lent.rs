//! The checker's lent memory: bytes an API hands the program for a while (a received
//! short message, valid until the program releases it), so that a use after the release
//! is caught as it happens.
//!
//! With `SOFTNIC_CHECK` on, the API gives the program a copy on pages of its own
//! ([`lend`]) instead of a pointer into the buffer it will reuse, and at the release
//! ([`take_back`]) those pages lose all access.  A later read or write of them faults;
//! the fault handler (installed with the first loan) names the access as a finding (the
//! API, the object, the faulting code's function and line), makes the pages readable and
//! writable again and lets the access run, so the program goes on as it would on the
//! hardware (where it would have read whatever the next message left there).  A fault
//! elsewhere goes to the handler that was there before, or kills the process as it would
//! have.
//!
//! Why copies and page protection: the program's reads make no call, so nothing else
//! can see them; the hardware's buffer (the mailbox slot) cannot be protected, as the
//! peer keeps writing the slots around it.  The pages taken back stay protected until
//! [`QUARANTINE`] later loans have been taken back (then they are unmapped), so a use
//! shortly after the release is caught; a use much later may find them gone and fault
//! as a use of freed memory would.
//!
//! Off, nothing here runs: the API asks [`crate::check::enabled`] first.
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Loans taken back and kept protected (the oldest is unmapped beyond this).
pub const QUARANTINE: usize = 256;

struct Loan {
    addr: usize,
    /// Mapped bytes (whole pages).
    map_len: usize,
    api: &'static str,
    what: String,
    /// The call that took it back (None while lent).
    taken_back_by: Option<&'static str>,
}

struct Loans {
    lent: Vec<Loan>,
    /// Taken back, oldest first.
    quarantined: VecDeque<Loan>,
}

static LOANS: Mutex<Loans> = Mutex::new(Loans { lent: Vec::new(), quarantined: VecDeque::new() });
static HANDLER: AtomicBool = AtomicBool::new(false);
/// The action that was installed for SIGSEGV before ours (restored for faults not ours).
static mut PREVIOUS: std::mem::MaybeUninit<libc::sigaction> = std::mem::MaybeUninit::uninit();

fn loans() -> std::sync::MutexGuard<'static, Loans> {
    LOANS.lock().unwrap_or_else(|e| e.into_inner())
}

/// A copy of `[src, src+len)` on pages of its own, lent to the program by `api` (what it
/// is: `what`) until [`take_back`]; None when it cannot be made (the caller then hands
/// out its own pointer, unchecked).
///
/// # Safety
/// `[src, src+len)` is readable.
pub unsafe fn lend(api: &'static str, what: impl FnOnce() -> String, src: *const u8, len: usize) -> Option<*mut u8> {
    let page = crate::shm::page_size();
    let map_len = len.max(1).div_ceil(page) * page;
    // SAFETY: a fresh private anonymous mapping.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), map_len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
    if p == libc::MAP_FAILED {
        return None;
    }
    // SAFETY: the caller's readable range into our new pages (map_len >= len).
    unsafe { std::ptr::copy_nonoverlapping(src, p as *mut u8, len) };
    install_handler();
    loans().lent.push(Loan { addr: p as usize, map_len, api, what: what(), taken_back_by: None });
    Some(p as *mut u8)
}

/// The program released the loan at `ptr` (through `api_done`): its pages lose all access
/// (see the module doc).  An address that is not a loan is ignored.
pub fn take_back(ptr: *mut u8, api_done: &'static str) {
    let mut l = loans();
    let Some(i) = l.lent.iter().position(|x| x.addr == ptr as usize) else { return };
    let mut loan = l.lent.swap_remove(i);
    // SAFETY: our own mapping.
    unsafe { libc::mprotect(loan.addr as *mut libc::c_void, loan.map_len, libc::PROT_NONE) };
    loan.taken_back_by = Some(api_done);
    l.quarantined.push_back(loan);
    while l.quarantined.len() > QUARANTINE {
        let old = l.quarantined.pop_front().expect("longer than the bound");
        // SAFETY: our own mapping, nobody may use it any more.
        unsafe { libc::munmap(old.addr as *mut libc::c_void, old.map_len) };
    }
}

fn install_handler() {
    if HANDLER.swap(true, Ordering::AcqRel) {
        return;
    }
    // SAFETY: sigaction with valid pointers; PREVIOUS is written once, here, before our
    // handler (its only reader) can run.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_fault as *const () as usize;
        // Not SA_NODEFER: a fault inside the handler itself ends the process.
        sa.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGSEGV, &sa, (*std::ptr::addr_of_mut!(PREVIOUS)).as_mut_ptr());
    }
}

/// The loan taken back that holds `addr`: made usable again and out of quarantine (it
/// stays mapped: the program may use it again), described for the finding.
fn reopen(addr: usize) -> Option<(&'static str, String)> {
    // The faulting thread holds no lock of ours (the access is the program's); another
    // thread may hold it for a moment.
    let mut l = loop {
        match LOANS.try_lock() {
            Ok(l) => break l,
            Err(std::sync::TryLockError::Poisoned(e)) => break e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => std::thread::yield_now(),
        }
    };
    let i = l.quarantined.iter().position(|x| addr >= x.addr && addr < x.addr + x.map_len)?;
    let loan = l.quarantined.remove(i)?;
    // SAFETY: our own mapping.
    unsafe { libc::mprotect(loan.addr as *mut libc::c_void, loan.map_len, libc::PROT_READ | libc::PROT_WRITE) };
    Some((loan.api, format!("{} was used at byte {} after its release ({})", loan.what, addr - loan.addr, loan.taken_back_by.unwrap_or("?"))))
}

extern "C" fn on_fault(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel's siginfo for a SIGSEGV.
    let addr = unsafe { (*info).si_addr() } as usize;
    if let Some((api, what)) = reopen(addr) {
        // The finding names the code that made the access: the first frame outside
        // softnic's libraries above this handler (the signal frame leads there).
        crate::check::report(api, &what, &crate::check::caller());
        return; // the access runs again, now allowed
    }
    // Not ours: as if we had never been here.
    // SAFETY: PREVIOUS was written before our handler was installed.
    let prev = unsafe { (*std::ptr::addr_of!(PREVIOUS)).assume_init_ref() };
    match prev.sa_sigaction {
        libc::SIG_DFL | libc::SIG_IGN => {
            // SAFETY: restoring the default; the faulting access runs again and the
            // kernel delivers the signal as it would have.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &sa, std::ptr::null_mut());
            }
        }
        h if prev.sa_flags & libc::SA_SIGINFO != 0 => {
            // SAFETY: the previous handler, called as the kernel would have.
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) = unsafe { std::mem::transmute(h) };
            f(sig, info, ctx);
        }
        h => {
            // SAFETY: as above, a plain handler.
            let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(h) };
            f(sig);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_use_after_take_back_is_a_finding_and_goes_on() {
        let _serial = crate::check::TESTS_SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let src = [7u8; 100];
        // SAFETY: src is readable.
        let p = unsafe { lend("test", || "message 1".into(), src.as_ptr(), src.len()) }.expect("mapped");
        // SAFETY: lent, readable and writable until taken back.
        assert_eq!(unsafe { std::ptr::read_volatile(p.add(99)) }, 7);
        let before = crate::check::findings();
        take_back(p, "release");
        // SAFETY: the fault handler reopens the page; the read then returns the copy.
        let v = unsafe { std::ptr::read_volatile(p.add(10)) };
        assert_eq!(v, 7);
        assert_eq!(crate::check::findings(), before + 1);
        // Reopened: further uses are not findings again.
        // SAFETY: as above.
        unsafe { std::ptr::write_volatile(p.add(11), 1) };
        assert_eq!(crate::check::findings(), before + 1);
    }
}
