//! The checker (`SOFTNIC_CHECK=1`, or `=abort` to stop at the first finding): the bugs the
//! hardware keeps silent, named as they happen.
//!
//! A finding is one line: `softnic check: API: what, object, rank, bytes, at CALLER`, on
//! stderr and appended to `SOFTNIC_CHECK_FILE` when set.  The caller is the first frame
//! outside softnic's libraries: its function and line where the program's symbols say,
//! else its object and offset.
//!
//! What an API reports through it (each says where it checks):
//! - a local buffer changed between the post that reads it and the completion that
//!   releases it ([`watch`] at the post, [`release`] at the completion);
//! - a local buffer an operation fills (a get's destination) written by the program
//!   between the fill and the completion that hands it over ([`watch_filled`] when the
//!   data has landed, [`release`] at the completion): on the hardware the data may land
//!   after that write and undo it;
//! - at exit, what was never released or reaped ([`at_exit`] hooks).
//!
//! Off, every entry point costs one load and a branch.
use std::collections::HashMap;
use std::io::Write as _;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::Mutex;

const OFF: u8 = 1;
const ON: u8 = 2;
const ABORT: u8 = 3;
static STATE: AtomicU8 = AtomicU8::new(0);
/// Findings so far (what the exit summary says).
static FINDINGS: AtomicU64 = AtomicU64::new(0);

/// Is the checker on?  (Decided once, from `SOFTNIC_CHECK`.)
#[inline]
pub fn enabled() -> bool {
    match STATE.load(Ordering::Relaxed) {
        0 => decide() != OFF,
        s => s != OFF,
    }
}

#[cold]
fn decide() -> u8 {
    let s = match std::env::var("SOFTNIC_CHECK").as_deref().map(str::trim) {
        Ok("abort") => ABORT,
        Ok("") | Ok("0") | Err(_) => OFF,
        Ok(_) => ON,
    };
    STATE.store(s, Ordering::Relaxed);
    if s != OFF {
        // SAFETY: registers a plain function with the C library.
        unsafe { libc::atexit(run_exit_hooks) };
    }
    s
}

/// The first caller outside softnic's libraries: its function and source line when the
/// program's symbols and debug information say (`recycle (app.c:42)`), else its object
/// and offset as the dynamic loader knows them.
#[cold]
pub fn caller() -> String {
    symbolised_caller().unwrap_or_else(loader_caller)
}

/// Is `sym` a frame of softnic's (Rust code, an exported API entry) or of the C library?
fn ours(sym: &str) -> bool {
    sym.contains("::")
        || sym.starts_with('<')
        || sym.starts_with("__")
        || ["GNI_", "gni_", "dmapp_", "utofu_", "jtofu_", "Ptl", "SCI", "DIS", "_SISCI_", "PMI_", "PMI2_", "backtrace", "rust_"].iter().any(|p| sym.starts_with(p))
}

/// The caller from the program's symbol table and debug information (std's backtrace).
fn symbolised_caller() -> Option<String> {
    caller_in(&std::backtrace::Backtrace::force_capture())
}

/// The first frame of `bt` outside softnic's libraries (see [`caller`]).
fn caller_in(bt: &std::backtrace::Backtrace) -> Option<String> {
    let bt = bt.to_string();
    let mut lines = bt.lines().peekable();
    while let Some(l) = lines.next() {
        // Frames read "  N: symbol", then maybe "      at file:line:col".
        let Some((num, sym)) = l.trim_start().split_once(": ") else { continue };
        if num.parse::<u32>().is_err() || ours(sym.trim()) {
            continue;
        }
        let at = lines.peek().and_then(|n| n.trim_start().strip_prefix("at ")).map(|w| w.rsplit_once(':').map_or(w, |(f, _)| f).to_string());
        return Some(match at {
            Some(w) => format!("{} ({})", sym.trim(), w),
            None => sym.trim().to_string(),
        });
    }
    None
}

/// The caller as the C library names it (its object and offset).
fn loader_caller() -> String {
    extern "C" {
        fn backtrace(buffer: *mut *mut libc::c_void, size: libc::c_int) -> libc::c_int;
    }
    let mut frames = [std::ptr::null_mut::<libc::c_void>(); 48];
    // SAFETY: a buffer of frames.len() entries.
    let n = unsafe { backtrace(frames.as_mut_ptr(), frames.len() as libc::c_int) }.max(0) as usize;
    for &f in &frames[..n] {
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        // SAFETY: dladdr only reads the address.
        if unsafe { libc::dladdr(f, &mut info) } == 0 || info.dli_fname.is_null() {
            continue;
        }
        // SAFETY: a C string the loader owns.
        let file = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy();
        let base = file.rsplit('/').next().unwrap_or(&file);
        if ["libsoftnic_fabric", "libugni", "libdmapp", "libtofucom", "libtofutop", "libportals", "libsisci", "libpmi", "libstd-", "libc.so", "libgcc"]
            .iter()
            .any(|l| base.starts_with(l))
        {
            continue;
        }
        let sym = (!info.dli_sname.is_null())
            // SAFETY: as above.
            .then(|| unsafe { std::ffi::CStr::from_ptr(info.dli_sname) }.to_string_lossy().into_owned());
        let off = f as usize - if sym.is_some() { info.dli_saddr as usize } else { info.dli_fbase as usize };
        return match sym {
            Some(s) => format!("{base}({s}+{off:#x})"),
            None => format!("{base}(+{off:#x})"),
        };
    }
    "(caller unknown)".into()
}

fn rank() -> String {
    ["PMI_RANK", "SLURM_PROCID"].iter().find_map(|k| std::env::var(k).ok()).map_or_else(|| format!("pid {}", std::process::id()), |r| format!("rank {r}"))
}

/// Reports a finding of `api`: `what` happened (object, bytes involved), found at `at`
/// (the caller, see [`caller`]).  Stops the process when `SOFTNIC_CHECK=abort`.
#[cold]
pub fn report(api: &str, what: &str, at: &str) {
    FINDINGS.fetch_add(1, Ordering::Relaxed);
    let line = format!("softnic check: {api}: {what}; {}, at {at}\n", rank());
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let Some(path) = std::env::var_os("SOFTNIC_CHECK_FILE").filter(|p| !p.is_empty()) {
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = f.write_all(line.as_bytes());
        }
    }
    if STATE.load(Ordering::Relaxed) == ABORT {
        let _ = std::io::stderr().write_all(b"softnic check: stopping at the first finding (SOFTNIC_CHECK=abort)\n");
        std::process::abort();
    }
}

/// What the watched bytes are to their operation.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// It reads them (a put's source).
    Source,
    /// It filled them (a get's destination), before the program may use them.
    Destination,
}

/// A buffer a pending operation reads or filled: where, how long, and a digest of its
/// bytes then.
struct Watched {
    role: Role,
    api: &'static str,
    what: String,
    addr: usize,
    len: usize,
    digest: u64,
    /// Where the operation was started (resolved only for a finding).
    posted: std::backtrace::Backtrace,
}

static WATCHED: Mutex<Option<HashMap<(usize, u64), Watched>>> = Mutex::new(None);

/// FNV-1a over the bytes (what matters is that a change shows); None when part of the
/// range is not mapped: an operation that failed before reading its source (a transaction
/// error, an injected loss) may have been given any address, and a buffer may be unmapped
/// by the time its operation completes.  Whether every page is mapped is asked of the
/// kernel (mincore: a page-table walk, no copy); the bytes are then read in place.  (A
/// mapped page nobody may read, PROT_NONE, would still fault: an operation's buffer never
/// is one.)
fn digest(addr: usize, len: usize) -> Option<u64> {
    let page = crate::shm::page_size();
    let start = addr & !(page - 1);
    let end = addr.checked_add(len)?;
    let pages = (end - start).div_ceil(page);
    let mut vec = vec![0u8; pages];
    // SAFETY: mincore only looks at the range and writes one byte per page into `vec`.
    if unsafe { libc::mincore(start as *mut libc::c_void, end - start, vec.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: every page of the range is mapped (just checked); a volatile read of each
    // byte, as another thread or a peer may be writing them.
    let h = (0..len).fold(0xcbf2_9ce4_8422_2325u64, |h, i| {
        let x = unsafe { std::ptr::read_volatile((addr + i) as *const u8) };
        (h ^ x as u64).wrapping_mul(0x100_0000_01b3)
    });
    Some(h)
}

/// Remembers that the operation `op` (an id the API picks: a descriptor's address, a
/// request number; `kind` separates the API's id spaces) reads `[addr, addr+len)` until
/// its completion: [`release`] then reports it if the bytes changed meanwhile.
///
/// Memory that cannot be read is not watched (the operation cannot have read it either).
///
/// # Safety
/// The range is readable where it is mapped (an operation's buffer; see [`digest`]).
pub unsafe fn watch(kind: u64, op: usize, api: &'static str, what: impl FnOnce() -> String, addr: usize, len: usize) {
    watch_as(Role::Source, kind, op, api, what, addr, len)
}

/// Remembers that the operation `op` (as in [`watch`]) has filled `[addr, addr+len)` (its
/// data landed) and hands it to the program at its completion: [`release`] then reports
/// it if the program wrote those bytes meanwhile.  Called before the completion can be
/// seen (before its event is queued).
pub fn watch_filled(kind: u64, op: usize, api: &'static str, what: impl FnOnce() -> String, addr: usize, len: usize) {
    watch_as(Role::Destination, kind, op, api, what, addr, len)
}

fn watch_as(role: Role, kind: u64, op: usize, api: &'static str, what: impl FnOnce() -> String, addr: usize, len: usize) {
    if !enabled() || len == 0 {
        return;
    }
    let Some(d) = digest(addr, len) else { return };
    let w = Watched { role, api, what: what(), addr, len, digest: d, posted: std::backtrace::Backtrace::force_capture() };
    WATCHED.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(HashMap::new).insert((op, kind), w);
}

/// The completion of `op` (see [`watch`]), reported by `api_done`: a finding if the bytes
/// it read changed before it.
pub fn release(kind: u64, op: usize, api_done: &str) {
    if !enabled() {
        return;
    }
    let w = WATCHED.lock().unwrap_or_else(|e| e.into_inner()).as_mut().and_then(|m| m.remove(&(op, kind)));
    if let Some(w) = w {
        // Unmapped since (freed): nothing to compare.
        if digest(w.addr, w.len).is_some_and(|d| d != w.digest) {
            let posted = caller_in(&w.posted).unwrap_or_else(|| "(unknown)".into());
            let what = match w.role {
                Role::Source => format!("the source buffer [{:#x}, +{}) of {}, posted at {posted}, changed before its completion ({})", w.addr, w.len, w.what, api_done),
                Role::Destination => format!(
                    "the destination buffer [{:#x}, +{}) of {}, posted at {posted}, was written before its completion ({}): the data may land after that write",
                    w.addr, w.len, w.what, api_done
                ),
            };
            report(w.api, &what, &caller());
        }
    }
}

/// The completion of every operation of `kind` (a fence that completes them all, e.g.
/// DMAPP's gsync): [`release`] of each.
pub fn release_all(kind: u64, api_done: &str) {
    if !enabled() {
        return;
    }
    let ops: Vec<usize> = WATCHED.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map_or_else(Vec::new, |m| m.keys().filter(|k| k.1 == kind).map(|k| k.0).collect());
    for op in ops {
        release(kind, op, api_done);
    }
}

/// Operations of `kind` watched and not completed yet.
pub fn outstanding(kind: u64) -> usize {
    if !enabled() {
        return 0;
    }
    WATCHED.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map_or(0, |m| m.keys().filter(|k| k.1 == kind).count())
}

/// Forgets every watch of `kind` whose id is `op` without checking (the operation ended
/// without a completion the program sees, e.g. a failed post).
pub fn forget(kind: u64, op: usize) {
    if enabled() {
        if let Some(m) = WATCHED.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            m.remove(&(op, kind));
        }
    }
}

type ExitHook = fn();
static EXIT_HOOKS: Mutex<Vec<ExitHook>> = Mutex::new(Vec::new());

/// Runs `hook` at exit when the checker is on (an API's report of what was never released
/// or reaped).  Registered once per API.
pub fn at_exit(hook: ExitHook) {
    if enabled() {
        let mut h = EXIT_HOOKS.lock().unwrap_or_else(|e| e.into_inner());
        if !h.iter().any(|&x| x as usize == hook as usize) {
            h.push(hook);
        }
    }
}

extern "C" fn run_exit_hooks() {
    let hooks: Vec<ExitHook> = EXIT_HOOKS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for h in hooks {
        h();
    }
    let n = FINDINGS.load(Ordering::Relaxed);
    if n > 0 {
        let _ = std::io::stderr().write_all(format!("softnic check: {n} finding(s) in {}\n", rank()).as_bytes());
    }
}

/// Findings reported so far in this process.
pub fn findings() -> u64 {
    FINDINGS.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_source_is_reported_once() {
        STATE.store(ON, Ordering::Relaxed);
        let mut buf = vec![1u8; 64];
        let before = findings();
        // SAFETY: buf lives across the release.
        unsafe { watch(7, 1, "test", || "op 1".into(), buf.as_ptr() as usize, 64) };
        // An address nothing is mapped at: not watched, no fault.
        unsafe { watch(7, 3, "test", || "op 3".into(), 8, 64) };
        assert_eq!(outstanding(7), 1);
        unsafe { watch(7, 2, "test", || "op 2".into(), buf.as_ptr() as usize + 32, 32) };
        release(7, 1, "done");
        assert_eq!(findings(), before, "unchanged");
        buf[40] = 9;
        release(7, 2, "done");
        assert_eq!(findings(), before + 1);
        release(7, 2, "done");
        assert_eq!(findings(), before + 1, "released once");
        STATE.store(OFF, Ordering::Relaxed);
    }
}
