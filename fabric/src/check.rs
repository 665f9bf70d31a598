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
//! - at exit, what was never released or reaped ([`at_exit`] hooks);
//! - a data race between initiators ([`remote_access`] at the post, [`release`] at the
//!   completion): two one-sided accesses of different processes to overlapping bytes of
//!   one target, one of them a write, both in flight at once (see "Races" below).
//!
//! Off, every entry point costs one load and a branch.
//!
//! # Races
//! An access is in flight from its post until its initiator learns it completed (the
//! release the API reports for the watched buffers).  Two accesses in flight at the same
//! moment were ordered by nothing: neither initiator had seen its own complete before the
//! other posted, so no synchronisation the initiators took part in can stand between
//! them.  It misses races whose accesses happen not to overlap in time.  One ordering it
//! cannot see: a target that watches its memory, sees the first access's data land and
//! then lets a third process touch the same bytes, all before the first initiator took
//! its completion back, has ordered the two through its memory; that would be reported.
//! Programs hand on bytes that way rarely, and every clean test and sample is free of
//! findings (`c-tests/tools/check-sweep`).  The accesses in flight of a job's processes on one machine are kept
//! in a table they share (a file in the per-user directory, one per job and node, removed
//! at exit; see [`Races`]); initiators on different machines do not see each other's.
//! Targets are named in the API's own terms ([`Target`]), the same for every initiator.
use std::collections::HashMap;
use std::io::Write as _;
use std::sync::atomic::{AtomicU32, AtomicU8, AtomicU64, Ordering};
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

/// Is the checker decided and off?  One load and no call, for quick paths that leave
/// every other case (on, or not decided yet) to their general path.
#[inline(always)]
pub fn surely_off() -> bool {
    STATE.load(Ordering::Relaxed) == OFF
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
        if skipped_object(base) {
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

/// Where an operation was posted, found cheaply at the post and named only for a finding:
/// the return address of the first frame outside softnic's libraries (a partial unwind
/// that stops there, no allocation), whose full stack is captured once per such address
/// and symbolised from that capture ([`caller_in`]).  A post whose walk finds no such
/// frame keeps its own full capture.
enum Posted {
    Site(usize),
    Stack(std::backtrace::Backtrace),
}

/// Full stacks by call site (first frame outside softnic), one capture per site.
static SITES: Mutex<Option<HashMap<usize, std::sync::Arc<std::backtrace::Backtrace>>>> = Mutex::new(None);

impl Posted {
    fn here() -> Posted {
        let ip = first_foreign_frame();
        if ip == 0 {
            return Posted::Stack(std::backtrace::Backtrace::force_capture());
        }
        let mut sites = SITES.lock().unwrap_or_else(|e| e.into_inner());
        // The capture is made from this same call, so its first frame outside softnic is
        // the one at `ip`.
        sites.get_or_insert_with(HashMap::new).entry(ip).or_insert_with(|| std::sync::Arc::new(std::backtrace::Backtrace::force_capture()));
        Posted::Site(ip)
    }

    fn name(&self) -> String {
        let named = match self {
            Posted::Stack(bt) => caller_in(bt),
            Posted::Site(ip) => {
                let bt = SITES.lock().unwrap_or_else(|e| e.into_inner()).as_ref().and_then(|m| m.get(ip).cloned());
                bt.and_then(|b| caller_in(&b))
            }
        };
        named.unwrap_or_else(|| "(unknown)".into())
    }
}

/// The executable ranges of the objects [`loader_caller`] skips (softnic's libraries,
/// Rust's and C's runtimes), found once from the loader's list.
fn skipped_ranges() -> &'static [(usize, usize)] {
    static R: std::sync::OnceLock<Vec<(usize, usize)>> = std::sync::OnceLock::new();
    R.get_or_init(|| {
        extern "C" fn each(info: *mut libc::dl_phdr_info, _size: libc::size_t, out: *mut libc::c_void) -> libc::c_int {
            // SAFETY: the loader's entry, valid during the callback; `out` is our Vec.
            let (info, out) = unsafe { (&*info, &mut *(out as *mut Vec<(usize, usize)>)) };
            let name = if info.dlpi_name.is_null() {
                String::new()
            } else {
                // SAFETY: a C string the loader owns.
                unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) }.to_string_lossy().into_owned()
            };
            if !skipped_object(name.rsplit('/').next().unwrap_or("")) {
                return 0;
            }
            for i in 0..info.dlpi_phnum as usize {
                // SAFETY: dlpi_phnum program headers at dlpi_phdr.
                let ph = unsafe { &*info.dlpi_phdr.add(i) };
                if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_X != 0 {
                    let start = info.dlpi_addr as usize + ph.p_vaddr as usize;
                    out.push((start, start + ph.p_memsz as usize));
                }
            }
            0
        }
        let mut v: Vec<(usize, usize)> = Vec::new();
        // SAFETY: the callback only reads the loader's entries and pushes to `v`.
        unsafe { libc::dl_iterate_phdr(Some(each), &mut v as *mut Vec<(usize, usize)> as *mut libc::c_void) };
        v
    })
}

/// Objects whose frames are not the program's caller (by file name).
fn skipped_object(base: &str) -> bool {
    ["libsoftnic_fabric", "libugni", "libdmapp", "libtofucom", "libtofutop", "libportals", "libsisci", "libpmi", "libstd-", "libc.so", "libgcc"].iter().any(|l| base.starts_with(l))
}

/// The return address of the first frame outside the skipped objects (0 if none within
/// 64 frames): an unwind that stops there.
fn first_foreign_frame() -> usize {
    #[repr(C)]
    struct Walk {
        ip: usize,
        frames: u32,
    }
    extern "C" {
        fn _Unwind_Backtrace(step: extern "C" fn(*mut libc::c_void, *mut libc::c_void) -> libc::c_int, arg: *mut libc::c_void) -> libc::c_int;
        fn _Unwind_GetIP(ctx: *mut libc::c_void) -> usize;
    }
    const NO_REASON: libc::c_int = 0;
    const END_OF_STACK: libc::c_int = 5;
    extern "C" fn step(ctx: *mut libc::c_void, arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: the unwinder's context for this frame; `arg` is our Walk.
        let (ip, walk) = unsafe { (_Unwind_GetIP(ctx), &mut *(arg as *mut Walk)) };
        walk.frames += 1;
        if ip == 0 || walk.frames > 64 {
            return END_OF_STACK;
        }
        if skipped_ranges().iter().any(|&(a, b)| ip >= a && ip < b) {
            return NO_REASON;
        }
        walk.ip = ip;
        END_OF_STACK
    }
    let mut walk = Walk { ip: 0, frames: 0 };
    // SAFETY: walks this thread's stack; the callback only writes `walk`.
    unsafe { _Unwind_Backtrace(step, &mut walk as *mut Walk as *mut libc::c_void) };
    walk.ip
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
    /// Where the operation was started (named only for a finding).
    posted: Posted,
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
    let w = Watched { role, api, what: what(), addr, len, digest: d, posted: Posted::here() };
    WATCHED.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(HashMap::new).insert((op, kind), w);
}

/// The completion of `op` (see [`watch`]), reported by `api_done`: a finding if the bytes
/// it read changed before it.  Ends its access's flight too ([`remote_access`]).
pub fn release(kind: u64, op: usize, api_done: &str) {
    if !enabled() {
        return;
    }
    land(kind, op);
    let w = WATCHED.lock().unwrap_or_else(|e| e.into_inner()).as_mut().and_then(|m| m.remove(&(op, kind)));
    if let Some(w) = w {
        // Unmapped since (freed): nothing to compare.
        if digest(w.addr, w.len).is_some_and(|d| d != w.digest) {
            let posted = w.posted.name();
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
    let flying: Vec<usize> = MINE.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map_or_else(Vec::new, |m| m.keys().filter(|k| k.1 == kind).map(|k| k.0).collect());
    for op in flying {
        land(kind, op);
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
        land(kind, op);
        if let Some(m) = WATCHED.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            m.remove(&(op, kind));
        }
    }
}

// ---- races ---------------------------------------------------------------------

/// Where a one-sided access goes, in the API's own terms (the same for every initiator):
/// `space` separates APIs and their address kinds, `target` names the process (a PE, a
/// registration's owner), `addr` and `len` the bytes in the API's addressing.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    pub space: u64,
    pub target: u64,
    pub addr: u64,
    pub len: u64,
}

/// One access in flight, in the shared table: 128 bytes.  `state` is 0 when free, odd
/// while its owner writes it, and an even ticket (never 0) once it is complete; a reader
/// takes the fields between two equal even loads.
#[repr(C)]
struct Flight {
    state: AtomicU64,
    space: AtomicU64,
    target: AtomicU64,
    addr: AtomicU64,
    len: AtomicU64,
    /// The initiator's pid (a dead one's entries are ignored and freed) and rank.
    pid: AtomicU32,
    rank: AtomicU32,
    /// 1 for a write.
    write: AtomicU32,
    _pad: AtomicU32,
    /// The API call that posted it: its name (up to [`CALL_BYTES`]), NUL-padded.
    call: [AtomicU64; CALL_WORDS],
}

const RACE_MAGIC: u64 = 0x736e_7261_6365_0003; // "snrace", version 3
const CALL_WORDS: usize = 9;
const CALL_BYTES: usize = CALL_WORDS * 8;
const _: () = assert!(std::mem::size_of::<Flight>() == 128);
const FLIGHTS: usize = 1023;

/// The table's file: a header (magic, the ticket counter, the high-water mark) and
/// [`FLIGHTS`] entries.
#[repr(C)]
struct RaceHeader {
    magic: AtomicU64,
    ticket: AtomicU64,
    /// Entries below this index have been used (a scan stops there): raised before an
    /// entry is filled, never lowered.
    high: AtomicU64,
    _pad: [u64; 5],
}

struct Races {
    base: *mut u8,
    path: std::path::PathBuf,
}

// SAFETY: the mapping is shared memory accessed only through atomics.
unsafe impl Send for Races {}
unsafe impl Sync for Races {}

impl Races {
    fn header(&self) -> &RaceHeader {
        // SAFETY: the mapping starts with the header and lives as long as the process.
        unsafe { &*(self.base as *const RaceHeader) }
    }
    fn flight(&self, i: usize) -> &Flight {
        // SAFETY: i < FLIGHTS, inside the mapping.
        unsafe { &*(self.base.add(std::mem::size_of::<RaceHeader>() + i * std::mem::size_of::<Flight>()) as *const Flight) }
    }
}

/// This process's table (None when it cannot be made: races then go unchecked).
fn races() -> Option<&'static Races> {
    static R: std::sync::OnceLock<Option<Races>> = std::sync::OnceLock::new();
    R.get_or_init(open_races).as_ref()
}

fn open_races() -> Option<Races> {
    let job = crate::bootstrap::job_tag().ok()?;
    let node = crate::bootstrap::known_node().unwrap_or(0);
    let dir = crate::shm::user_dir();
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("check-races-{job:016x}-{node}"));
    let len = std::mem::size_of::<RaceHeader>() + FLIGHTS * std::mem::size_of::<Flight>();
    use std::os::unix::fs::OpenOptionsExt as _;
    let f = std::fs::OpenOptions::new().read(true).write(true).create(true).mode(0o600).open(&path).ok()?;
    // Every opener sizes it alike; a new file reads as zeros (no entry, no magic yet).
    f.set_len(len as u64).ok()?;
    use std::os::fd::AsRawFd as _;
    // SAFETY: a shared mapping of the whole file; kept for the life of the process.
    let base = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, f.as_raw_fd(), 0) };
    if base == libc::MAP_FAILED {
        return None;
    }
    let r = Races { base: base as *mut u8, path };
    let _ = r.header().magic.compare_exchange(0, RACE_MAGIC, Ordering::AcqRel, Ordering::Acquire);
    if r.header().magic.load(Ordering::Acquire) != RACE_MAGIC {
        crate::sn_warn!("check", "{}: not a race table of this version; races not checked", r.path.display());
        return None;
    }
    at_exit(leave_races);
    Some(r)
}

/// At exit: our entries freed, and the file removed (processes still running keep theirs;
/// a process of the job that opens it later starts a new one).
fn leave_races() {
    let Some(r) = races() else { return };
    let mine: Vec<usize> = MINE.lock().unwrap_or_else(|e| e.into_inner()).take().map_or_else(Vec::new, |m| m.into_values().collect());
    for i in mine {
        r.flight(i).state.store(0, Ordering::Release);
    }
    let _ = std::fs::remove_file(&r.path);
}

/// This process's entries in the table, by (op, kind).
static MINE: Mutex<Option<HashMap<(usize, u64), usize>>> = Mutex::new(None);

/// An access read whole from the table.
struct Seen {
    target: Target,
    pid: u32,
    rank: u32,
    write: bool,
    call: [u64; CALL_WORDS],
}

fn read_flight(f: &Flight) -> Option<Seen> {
    let s1 = f.state.load(Ordering::Acquire);
    if s1 == 0 || s1 & 1 != 0 {
        return None;
    }
    let seen = Seen {
        target: Target { space: f.space.load(Ordering::Relaxed), target: f.target.load(Ordering::Relaxed), addr: f.addr.load(Ordering::Relaxed), len: f.len.load(Ordering::Relaxed) },
        pid: f.pid.load(Ordering::Relaxed),
        rank: f.rank.load(Ordering::Relaxed),
        write: f.write.load(Ordering::Relaxed) != 0,
        call: std::array::from_fn(|i| f.call[i].load(Ordering::Relaxed)),
    };
    std::sync::atomic::fence(Ordering::Acquire);
    (f.state.load(Ordering::Relaxed) == s1).then_some(seen)
}

fn call_words(api: &str) -> [u64; CALL_WORDS] {
    let mut b = [0u8; CALL_BYTES];
    for (d, s) in b.iter_mut().zip(api.bytes()) {
        *d = s;
    }
    std::array::from_fn(|i| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().expect("8 bytes")))
}

fn call_name(w: &[u64; CALL_WORDS]) -> String {
    let b: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
    String::from_utf8_lossy(&b[..b.iter().position(|&c| c == 0).unwrap_or(CALL_BYTES)]).into_owned()
}

fn my_rank_number() -> u32 {
    static RANK: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *RANK.get_or_init(|| ["PMI_RANK", "SLURM_PROCID"].iter().find_map(|k| std::env::var(k).ok()).and_then(|r| r.trim().parse().ok()).unwrap_or(u32::MAX))
}

/// A one-sided access of operation `op` (ids as in [`watch`]) posted now by `api`: `what`
/// it is, where it goes (`to`), whether it writes there.  In flight until [`release`],
/// [`release_all`] or [`forget`] of the same `kind` and `op`.  A finding when an access of
/// another process to overlapping bytes of the same target is in flight now and one of
/// the two writes: nothing can have ordered them (see "Races").
pub fn remote_access(kind: u64, op: usize, api: &'static str, what: impl FnOnce() -> String, to: Target, write: bool) {
    if !enabled() || to.len == 0 {
        return;
    }
    let Some(r) = races() else { return };
    let me = std::process::id();
    let end = to.addr.saturating_add(to.len);
    let mut found: Option<Seen> = None;
    let high = (r.header().high.load(Ordering::Acquire) as usize).min(FLIGHTS);
    for i in 0..high {
        let f = r.flight(i);
        let Some(s) = read_flight(f) else { continue };
        if s.pid == me || s.target.space != to.space || s.target.target != to.target || !(write || s.write) {
            continue;
        }
        if s.target.addr >= end || to.addr >= s.target.addr.saturating_add(s.target.len) {
            continue;
        }
        if !crate::process::pid_alive(s.pid as i32, None) {
            // Its initiator died with it in flight: no longer an access.
            let _ = f.state.compare_exchange(f.state.load(Ordering::Acquire), 0, Ordering::AcqRel, Ordering::Relaxed);
            continue;
        }
        found = Some(s);
        break;
    }
    if let Some(s) = found {
        let (lo, hi) = (to.addr.max(s.target.addr), end.min(s.target.addr.saturating_add(s.target.len)));
        let other = if s.rank == u32::MAX { format!("pid {}", s.pid) } else { format!("rank {}", s.rank) };
        let mine = if write { "writes" } else { "reads" };
        let theirs = if s.write { "write" } else { "read" };
        report(api, &format!("data race: {} {mine} bytes [{lo:#x}, {hi:#x}) of its target while {other}'s {theirs} of them ({}) is still in flight; nothing orders the two", what(), call_name(&s.call)), &caller());
    }
    // Our entry: a free slot, claimed, filled, then published with a new ticket.
    let ticket = r.header().ticket.fetch_add(2, Ordering::Relaxed).wrapping_add(2) & !1;
    let ticket = if ticket == 0 { 2 } else { ticket };
    for i in 0..FLIGHTS {
        let f = r.flight(i);
        if f.state.load(Ordering::Relaxed) != 0 || f.state.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
            continue;
        }
        r.header().high.fetch_max(i as u64 + 1, Ordering::AcqRel);
        f.space.store(to.space, Ordering::Relaxed);
        f.target.store(to.target, Ordering::Relaxed);
        f.addr.store(to.addr, Ordering::Relaxed);
        f.len.store(to.len, Ordering::Relaxed);
        f.pid.store(me, Ordering::Relaxed);
        f.rank.store(my_rank_number(), Ordering::Relaxed);
        f.write.store(write as u32, Ordering::Relaxed);
        for (w, v) in f.call.iter().zip(call_words(api)) {
            w.store(v, Ordering::Relaxed);
        }
        f.state.store(ticket, Ordering::Release);
        let old = MINE.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(HashMap::new).insert((op, kind), i);
        if let Some(o) = old {
            // The same id posted again before its completion was seen: the older one ends.
            r.flight(o).state.store(0, Ordering::Release);
        }
        return;
    }
    crate::sn_debug!("check", "the race table is full ({FLIGHTS} accesses in flight): one not checked");
}

/// The access of `op` (if any) is no longer in flight.
fn land(kind: u64, op: usize) {
    let i = MINE.lock().unwrap_or_else(|e| e.into_inner()).as_mut().and_then(|m| m.remove(&(op, kind)));
    if let (Some(i), Some(r)) = (i, races()) {
        r.flight(i).state.store(0, Ordering::Release);
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

/// Tests that count findings run one at a time (the count is per process).
#[cfg(test)]
pub(crate) static TESTS_SERIAL: Mutex<()> = Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_source_is_reported_once() {
        let _serial = TESTS_SERIAL.lock().unwrap_or_else(|e| e.into_inner());
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
