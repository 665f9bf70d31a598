//! PUT/GET in every shape (contiguous, strided, indexed, PE-list) and every
//! completion class, over one issue path.
//!
//! Each export decodes its arguments and checks locally, in this order: init window,
//! NULL pointers / PE / type / counts (INVALID_PARAM), alignment where the call has
//! an alignment rule (ALIGNMENT_ERROR), then the remote range against the descriptor
//! and the target's symmetric segment (INVALID_PARAM).  Nothing moves until all of a
//! call's checks pass; then [`issue`] runs the transfer.  Remote-side refusals
//! (stale registration, bounds the target enforces, dead peer) come back from the
//! fabric and are reported per completion class: returned by a blocking call, kept
//! in the syncid of an `_nb` call, kept for the next gsync of an `_nbi` call.
//!
//! Units (digest 5.4): `nelems` counts elements of `type`; strides and index
//! offsets are in elements too.  Zero-length GETs are INVALID_PARAM (documented as
//! unsupported); a zero-length PUT is a successful no-op that still validates its
//! arguments.

use crate::job::{live, Job, Remote};
use crate::mutex::lock;
use crate::types::*;
use softnic_fabric::rma::{self, PinnedRef};
use std::ffi::{c_int, c_void};

/// Completion class of a call.
#[derive(Clone, Copy)]
pub enum Mode {
    Blocking,
    Nb(*mut SyncHandle),
    Nbi,
}

/// Runs a validated request and reports it by completion class: [`Issue::begin`], the
/// request unless the fault point lost it, [`Issue::finish`].
pub fn issue(job: &Job, mode: Mode, exec: impl FnOnce() -> softnic_fabric::Result<()>) -> Rc {
    match Issue::begin(job, mode) {
        Ok(t) => {
            let done = if t.lost { Err(softnic_fabric::Error::Timeout) } else { exec() };
            t.finish(job, mode, done)
        }
        Err(rc) => rc,
    }
}

/// A validated request between its issue and its report.  The hot calls (put, get, AMOs)
/// run their transfer between the two halves themselves: a closure shared by the three
/// exports of a family would not inline.
pub struct Issue {
    /// SOFTNIC_FAULTS=transfer: the request is lost in the network (nothing moves), as a
    /// timed-out transaction: DMAPP_RC_TRANSACTION_ERROR where this request reports.
    pub lost: bool,
    /// The syncid slot of an `_nb` request.
    slot: u32,
}

impl Issue {
    /// Before anything moves: the fault point, then for `_nb` the syncid slot (so that
    /// NO_SPACE has no side effects).  Err: the call's return code.
    #[inline(always)]
    pub fn begin(job: &Job, mode: Mode) -> Result<Issue, Rc> {
        let lost = softnic_fabric::faults::hit(softnic_fabric::faults::Point::Transfer);
        let slot = match mode {
            Mode::Nb(out) if out.is_null() => return Err(DMAPP_RC_INVALID_PARAM),
            Mode::Nb(_) => lock(&job.sync).reserve()?,
            _ => 0,
        };
        Ok(Issue { lost, slot })
    }

    /// Reports the request's outcome `done` by completion class: returned by a blocking
    /// call, kept in the syncid of `_nb`, kept for the next gsync of `_nbi`.
    #[inline(always)]
    pub fn finish(self, job: &Job, mode: Mode, done: softnic_fabric::Result<()>) -> Rc {
        match mode {
            Mode::Blocking => {
                let rc = match done {
                    Ok(()) => DMAPP_RC_SUCCESS,
                    Err(e) => crate::rc::from_rma(e),
                };
                // A blocking call is a wait for the network: the progress callbacks run.
                crate::progress::run();
                rc
            }
            Mode::Nb(out) => {
                let rc = done.map_or_else(crate::rc::from_rma, |_| DMAPP_RC_SUCCESS);
                let h = lock(&job.sync).complete(self.slot, rc);
                // SAFETY: non-null pointer to the caller's handle (checked in begin).
                unsafe { out.write_unaligned(h) };
                if softnic_fabric::trace::enabled() {
                    softnic_fabric::trace::async_begin("dmapp", TRACE_NB, h as u64, &[]);
                }
                DMAPP_RC_SUCCESS
            }
            Mode::Nbi => {
                if let Err(e) = done {
                    job.note_gsync(crate::rc::from_rma(e));
                }
                if softnic_fabric::trace::enabled() {
                    trace_nbi_begin();
                }
                DMAPP_RC_SUCCESS
            }
        }
    }
}

/// The timeline: an `_nb` request from its issue to the wait or test that retires its
/// handle (an asynchronous span named by the handle).
pub const TRACE_NB: &str = "request in flight";
/// The timeline: `_nbi` requests from the first after a gsync to the gsync that completes
/// them (one asynchronous span per such window).
const TRACE_NBI: &str = "nbi requests in flight";
/// The window of `_nbi` requests open on the timeline, if any (its number + 1).
static NBI_WINDOW: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static NBI_WINDOWS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[cold]
fn trace_nbi_begin() {
    use std::sync::atomic::Ordering::Relaxed;
    if NBI_WINDOW.load(Relaxed) == 0 {
        let w = NBI_WINDOWS.fetch_add(1, Relaxed) + 1;
        if NBI_WINDOW.compare_exchange(0, w, Relaxed, Relaxed).is_ok() {
            softnic_fabric::trace::async_begin("dmapp", TRACE_NBI, w, &[]);
        }
    }
}

/// The timeline: a gsync completed the open window of `_nbi` requests.
pub fn trace_nbi_end() {
    let w = NBI_WINDOW.swap(0, std::sync::atomic::Ordering::Relaxed);
    if w != 0 {
        softnic_fabric::trace::async_end("dmapp", TRACE_NBI, w);
    }
}

/// `_nb` needs a place for the handle: checked with the other arguments.
fn check_mode(mode: Mode) -> Result<(), Rc> {
    match mode {
        Mode::Nb(p) if p.is_null() => Err(DMAPP_RC_INVALID_PARAM),
        _ => Ok(()),
    }
}

fn size_of(ty: c_int) -> Result<u64, Rc> {
    elem_size(ty).map(|s| s as u64).ok_or(DMAPP_RC_INVALID_PARAM)
}

/// Bytes spanned by `n` elements of `size` with stride `st` (elements): the last
/// element starts at (n-1)*st*size.
fn span(n: u64, st: i64, size: u64) -> Result<u64, Rc> {
    if n == 0 {
        return Ok(0);
    }
    (n - 1).checked_mul(st as u64).and_then(|v| v.checked_mul(size)).and_then(|v| v.checked_add(size)).ok_or(DMAPP_RC_INVALID_PARAM)
}

fn bytes(n: u64, size: u64) -> Result<usize, Rc> {
    n.checked_mul(size).filter(|&b| b <= isize::MAX as u64).map(|b| b as usize).ok_or(DMAPP_RC_INVALID_PARAM)
}

/// Fabric-side pre-check of a scattered access: the lowest and highest elements
/// (a registration is contiguous, so both inside means all inside).  Keeps a remote
/// refusal from leaving a strided/indexed transfer half done.
fn probe(r: &Remote, pd: u64, lo: u64, hi_end: u64) -> softnic_fabric::Result<()> {
    let mut b = [0u8; 1];
    rma::get(&r.peer, r.key, r.addr + lo, &mut b, pd)?;
    rma::get(&r.peer, r.key, r.addr + hi_end - 1, &mut b, pd)
}

type R = Result<Rc, Rc>;

fn out(r: R) -> Rc {
    match r {
        Ok(rc) | Err(rc) => rc,
    }
}

// ---- contiguous -------------------------------------------------------------------

/// The timeline's span of a call of the family `names` (blocking, `_nb`, `_nbi`).
///
/// The hot calls (put, get, AMOs) test `trace::enabled()` (one inlined load) and, when on,
/// run their body in a separate cold function inside this span: the span, a large value
/// with a destructor, then never sits in the untraced path's frame.
#[cold]
#[inline(never)]
pub fn start_span(mode: Mode, names: [&'static str; 3], pe: Pe, bytes: u64) -> Option<softnic_fabric::trace::Span> {
    let name = match mode {
        Mode::Blocking => names[0],
        Mode::Nb(_) => names[1],
        Mode::Nbi => names[2],
    };
    softnic_fabric::trace::span("dmapp", name).map(|s| s.arg("pe", pe as u64).arg("bytes", bytes))
}

/// `dmapp_put` and `dmapp_put_nbi` try [`put_quick`] first, in a body with no call but
/// the general path's, itself out of line (a tail call): so the common put saves and
/// restores no registers and keeps everything in them.
#[inline(always)]
fn put(mode: Mode, ta: *mut c_void, ts: *mut SegDesc, pe: Pe, sa: *mut c_void, n: u64, ty: c_int) -> R {
    match mode {
        Mode::Nb(_) => put_any(mode, ta, ts, pe, sa, n, ty),
        Mode::Blocking => {
            if put_quick(ta, ts, pe, sa, n, ty) {
                // As Issue::finish: a blocking call runs the progress callbacks.
                return Ok(crate::progress::run_then(DMAPP_RC_SUCCESS));
            }
            Ok(put_blocking(ta, ts, pe, sa, n, ty))
        }
        Mode::Nbi => {
            if put_quick(ta, ts, pe, sa, n, ty) {
                return Ok(DMAPP_RC_SUCCESS);
            }
            Ok(put_nbi(ta, ts, pe, sa, n, ty))
        }
    }
}

#[inline(never)]
fn put_blocking(ta: *mut c_void, ts: *mut SegDesc, pe: Pe, sa: *mut c_void, n: u64, ty: c_int) -> Rc {
    softnic_fabric::decide_observers(); // for the quick path's next try (see quick_word)
    out(put_any(Mode::Blocking, ta, ts, pe, sa, n, ty))
}

#[inline(never)]
fn put_nbi(ta: *mut c_void, ts: *mut SegDesc, pe: Pe, sa: *mut c_void, n: u64, ty: c_int) -> Rc {
    softnic_fabric::decide_observers();
    out(put_any(Mode::Nbi, ta, ts, pe, sa, n, ty))
}

/// The quick put: an aligned 4- or 8-byte word (what `put_untraced` stores with one
/// instruction) into one of our symmetric segments at a PE whose segment is pinned, with
/// every hook decided and off (no span, fault point, checker watch).  Then the general
/// path would pass every check in the same order and end in the same store, and report
/// success (an `_nbi` put notes nothing for gsync): true, the word stored.  False, having
/// changed nothing, in every other case; the general path then runs the call.
#[inline(always)]
fn put_quick(ta: *mut c_void, ts: *mut SegDesc, pe: Pe, sa: *mut c_void, n: u64, ty: c_int) -> bool {
    if sa.is_null() {
        return false;
    }
    let Some((p, addr, len)) = quick_word(ta, ts, pe, n, ty) else { return false };
    // Each width with its constant, so that store_word_at folds to its one store.
    // SAFETY (both reads): the caller's source buffer of nelems elements (len bytes, non-null).
    if len == 8 {
        addr & 7 == 0 && p.store_word_at(addr, unsafe { (sa as *const u64).read_unaligned() }, 8).is_ok()
    } else {
        addr & 3 == 0 && p.store_word_at(addr, unsafe { (sa as *const u32).read_unaligned() } as u64, 4).is_ok()
    }
}

/// The remote word of a quick put or get ([`put_quick`], [`get_quick`]): every hook
/// decided and off, the job live, `n` elements of `ty` making one DW or QW, and `addr` in
/// one of our own symmetric descriptors at a PE whose segment is pinned and checked for
/// this access.  The pin, the target's address and the length; None in every other case.
/// The hooks are only looked at (no call: the quick path saves no registers); the general
/// path that runs while they are undecided decides them (`decide_observers`), or a
/// program whose every call would take a quick path would never come here.
#[inline(always)]
fn quick_word(addr: *mut c_void, seg: *mut SegDesc, pe: Pe, n: u64, ty: c_int) -> Option<(PinnedRef<'static>, u64, u64)> {
    if !softnic_fabric::observers_surely_off() {
        return None;
    }
    let job = crate::job::live_quick()?;
    let len = match elem_size(ty).and_then(|s| n.checked_mul(s as u64)) {
        Some(l @ (4 | 8)) => l,
        _ => return None,
    };
    let (p, at) = job.pinned_quick(addr, seg, pe, len)?;
    Some((p, at, len))
}

#[inline(always)]
fn put_any(mode: Mode, ta: *mut c_void, ts: *mut SegDesc, pe: Pe, sa: *mut c_void, n: u64, ty: c_int) -> R {
    if softnic_fabric::trace::enabled() {
        return put_traced(mode, ta, ts, pe, sa, n, ty);
    }
    put_untraced(mode, ta, ts, pe, sa, n, ty)
}

#[cold]
#[inline(never)]
fn put_traced(mode: Mode, ta: *mut c_void, ts: *mut SegDesc, pe: Pe, sa: *mut c_void, n: u64, ty: c_int) -> R {
    let _span = start_span(mode, ["dmapp_put", "dmapp_put_nb", "dmapp_put_nbi"], pe, n.saturating_mul(size_of(ty).unwrap_or(0)));
    put_untraced(mode, ta, ts, pe, sa, n, ty)
}

#[inline(always)]
fn put_untraced(mode: Mode, ta: *mut c_void, ts: *mut SegDesc, pe: Pe, sa: *mut c_void, n: u64, ty: c_int) -> R {
    let job = live()?;
    let size = size_of(ty)?;
    check_mode(mode)?;
    let len = bytes(n, size)?;
    if len > 0 && sa.is_null() {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    let r = job.resolve(ta, ts, pe, len as u64, false)?;
    let t = Issue::begin(job, mode)?;
    let done = if t.lost {
        Err(softnic_fabric::Error::Timeout)
    } else if len == 0 {
        Ok(())
    } else {
        // SAFETY: the caller's source buffer of nelems elements.
        r.put(unsafe { std::slice::from_raw_parts(sa as *const u8, len) }, job.pd)
    };
    Ok(t.finish(job, mode, done))
    .inspect(|&rc| {
        if rc == DMAPP_RC_SUCCESS && len > 0 && softnic_fabric::check::enabled() {
            check_watch(mode, Watch::PutSource, sa as usize, len, pe, r.addr);
        }
    })
}

/// SOFTNIC_CHECK: the checker's id spaces of DMAPP requests (`_nb`: by sync handle;
/// `_nbi`: by request number, completed together by gsync).
pub const CHECK_NB: u64 = 0xd0;
pub const CHECK_NBI: u64 = 0xd1;

/// What the checker watches of a non-blocking request.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Watch {
    PutSource,
    GetDestination,
}

/// SOFTNIC_CHECK: a non-blocking put reads its source until its completion (the sync
/// handle's wait or test, or gsync for `_nbi`); a non-blocking get hands its destination
/// to the program only then (its data, landed now, may land later on the hardware, over
/// a write of the program's).  The checker watches those bytes till then.  The request is
/// in flight at the target PE's bytes (`remote`, their address in the target, which the
/// symmetric address resolves to alike for every initiator) till then too: another PE's access to them meanwhile is
/// a data race (fabric check.rs, "Races").  Blocking requests complete inside the call.
#[cold]
fn check_watch(mode: Mode, watch: Watch, buf: usize, len: usize, pe: Pe, remote: u64) {
    static NBI: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let put = watch == Watch::PutSource;
    let (kind, op, api) = match mode {
        Mode::Blocking => return,
        // SAFETY: issue() wrote the handle there (checked non-NULL).
        Mode::Nb(out) => (CHECK_NB, unsafe { out.read_unaligned() } as usize, if put { "dmapp_put_nb" } else { "dmapp_get_nb" }),
        Mode::Nbi => (CHECK_NBI, NBI.fetch_add(1, std::sync::atomic::Ordering::Relaxed), if put { "dmapp_put_nbi" } else { "dmapp_get_nbi" }),
    };
    if put {
        // SAFETY: the put read these bytes just now.
        unsafe { softnic_fabric::check::watch(kind, op, api, || format!("a put of {len} bytes to PE {pe}"), buf, len) };
    } else {
        softnic_fabric::check::watch_filled(kind, op, api, || format!("a get of {len} bytes from PE {pe}"), buf, len);
    }
    let to = softnic_fabric::check::Target { space: CHECK_RACE, target: pe as u64, addr: remote, len: len as u64 };
    let what = || format!("a {} of {len} bytes {} PE {pe} at {remote:#x}", if put { "put" } else { "get" }, if put { "to" } else { "from" });
    softnic_fabric::check::remote_access(kind, op, api, what, to, put);
}

/// SOFTNIC_CHECK: the space of DMAPP targets in the race table (PE, symmetric address).
const CHECK_RACE: u64 = 0xd0d0;

#[inline(always)]
fn get(mode: Mode, ta: *mut c_void, sa: *mut c_void, ss: *mut SegDesc, pe: Pe, n: u64, ty: c_int) -> R {
    match mode {
        Mode::Blocking if get_quick(ta, sa, ss, pe, n, ty) => return Ok(crate::progress::run_then(DMAPP_RC_SUCCESS)),
        Mode::Nbi if get_quick(ta, sa, ss, pe, n, ty) => return Ok(DMAPP_RC_SUCCESS),
        _ => {}
    }
    get_any(mode, ta, sa, ss, pe, n, ty)
}

/// The quick get, [`put_quick`]'s mirror: an aligned 4- or 8-byte word read with one
/// atomic load through the pin (the general path copies the same bytes through the
/// fabric's per-access validation).  True, the word read into `ta`; false, having changed
/// nothing, in every other case (the general path then runs the call and gives its exact
/// outcome).
#[inline(always)]
fn get_quick(ta: *mut c_void, sa: *mut c_void, ss: *mut SegDesc, pe: Pe, n: u64, ty: c_int) -> bool {
    if ta.is_null() {
        return false;
    }
    let Some((p, addr, len)) = quick_word(sa, ss, pe, n, ty) else { return false };
    // Each width with its constant, so that load_word_at folds to its one load.
    // SAFETY (both writes): the caller's target buffer of nelems elements (len bytes, non-null).
    if len == 8 {
        p.load_word_at(addr, 8).map(|v| unsafe { (ta as *mut u64).write_unaligned(v) }).is_ok()
    } else {
        p.load_word_at(addr, 4).map(|v| unsafe { (ta as *mut u32).write_unaligned(v as u32) }).is_ok()
    }
}

/// The general path of every get (out of line: the quick path stays small).
#[inline(never)]
fn get_any(mode: Mode, ta: *mut c_void, sa: *mut c_void, ss: *mut SegDesc, pe: Pe, n: u64, ty: c_int) -> R {
    softnic_fabric::decide_observers(); // for the quick path's next try (see quick_word)
    if softnic_fabric::trace::enabled() {
        return get_traced(mode, ta, sa, ss, pe, n, ty);
    }
    get_untraced(mode, ta, sa, ss, pe, n, ty)
}

#[cold]
#[inline(never)]
fn get_traced(mode: Mode, ta: *mut c_void, sa: *mut c_void, ss: *mut SegDesc, pe: Pe, n: u64, ty: c_int) -> R {
    let _span = start_span(mode, ["dmapp_get", "dmapp_get_nb", "dmapp_get_nbi"], pe, n.saturating_mul(size_of(ty).unwrap_or(0)));
    get_untraced(mode, ta, sa, ss, pe, n, ty)
}

#[inline(always)]
fn get_untraced(mode: Mode, ta: *mut c_void, sa: *mut c_void, ss: *mut SegDesc, pe: Pe, n: u64, ty: c_int) -> R {
    let job = live()?;
    let size = size_of(ty)?;
    check_mode(mode)?;
    if n == 0 || ta.is_null() {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    let len = bytes(n, size)?;
    let r = job.resolve(sa, ss, pe, len as u64, false)?;
    let t = Issue::begin(job, mode)?;
    let done = if t.lost {
        Err(softnic_fabric::Error::Timeout)
    } else {
        // SAFETY: the caller's target buffer of nelems elements.
        rma::get(r.peer, r.key, r.addr, unsafe { std::slice::from_raw_parts_mut(ta as *mut u8, len) }, job.pd)
    };
    Ok(t.finish(job, mode, done))
    .inspect(|&rc| {
        if rc == DMAPP_RC_SUCCESS && softnic_fabric::check::enabled() {
            check_watch(mode, Watch::GetDestination, ta as usize, len, pe, r.addr);
        }
    })
}

// ---- strided ------------------------------------------------------------------------

#[allow(clippy::too_many_arguments)]
fn iput(mode: Mode, ta: *mut c_void, ts: *mut SegDesc, pe: Pe, sa: *mut c_void, tst: isize, sst: isize, n: u64, ty: c_int) -> R {
    let job = live()?;
    let size = size_of(ty)?;
    check_mode(mode)?;
    if tst < 1 || sst < 1 || (n > 0 && sa.is_null()) {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    let ext = span(n, tst as i64, size)?;
    span(n, sst as i64, size).and_then(|b| bytes(b, 1))?;
    let r = job.resolve(ta, ts, pe, ext, false)?;
    Ok(issue(job, mode, || {
        if n == 0 {
            return Ok(());
        }
        probe(&r, job.pd, 0, ext)?;
        for k in 0..n {
            // SAFETY: element k of the caller's strided source.
            let src = unsafe { std::slice::from_raw_parts((sa as *const u8).add((k * sst as u64 * size) as usize), size as usize) };
            rma::put(&r.peer, r.key, r.addr + k * tst as u64 * size, src, job.pd)?;
        }
        Ok(())
    }))
}

/// Strided and indexed GETs need DWORD-aligned buffers and length (documented).
fn dword_ok(a: *const c_void, b: *const c_void, len: u64) -> bool {
    (a as usize) % 4 == 0 && (b as usize) % 4 == 0 && len % 4 == 0
}

#[allow(clippy::too_many_arguments)]
fn iget(mode: Mode, ta: *mut c_void, sa: *mut c_void, ss: *mut SegDesc, pe: Pe, tst: isize, sst: isize, n: u64, ty: c_int) -> R {
    let job = live()?;
    let size = size_of(ty)?;
    check_mode(mode)?;
    if n == 0 || ta.is_null() || ss.is_null() || tst < 1 || sst < 1 {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    job.check_pe(pe)?;
    if !dword_ok(ta, sa, bytes(n, size)? as u64) {
        return Err(DMAPP_RC_ALIGNMENT_ERROR);
    }
    let ext = span(n, sst as i64, size)?;
    span(n, tst as i64, size).and_then(|b| bytes(b, 1))?;
    let r = job.resolve(sa, ss, pe, ext, false)?;
    Ok(issue(job, mode, || {
        probe(&r, job.pd, 0, ext)?;
        for k in 0..n {
            // SAFETY: element k of the caller's strided target.
            let dst = unsafe { std::slice::from_raw_parts_mut((ta as *mut u8).add((k * tst as u64 * size) as usize), size as usize) };
            rma::get(&r.peer, r.key, r.addr + k * sst as u64 * size, dst, job.pd)?;
        }
        Ok(())
    }))
}

// ---- indexed ------------------------------------------------------------------------

/// The index array (elements, each >= 0) and the extent it spans in bytes.
fn indices<'a>(idx: *const isize, n: u64, size: u64) -> Result<(&'a [isize], u64, u64), Rc> {
    if n == 0 {
        return Ok((&[], 0, 0));
    }
    if idx.is_null() {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    let n = usize::try_from(n).map_err(|_| DMAPP_RC_INVALID_PARAM)?;
    // SAFETY: the document requires nelems entries.
    let v = unsafe { std::slice::from_raw_parts(idx, n) };
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    for &i in v {
        if i < 0 {
            return Err(DMAPP_RC_INVALID_PARAM);
        }
        let at = (i as u64).checked_mul(size).ok_or(DMAPP_RC_INVALID_PARAM)?;
        lo = lo.min(at);
        hi = hi.max(at.checked_add(size).ok_or(DMAPP_RC_INVALID_PARAM)?);
    }
    Ok((v, lo, hi))
}

#[allow(clippy::too_many_arguments)]
fn ixput(mode: Mode, ta: *mut c_void, ts: *mut SegDesc, pe: Pe, sa: *mut c_void, tidx: *mut isize, n: u64, ty: c_int) -> R {
    let job = live()?;
    let size = size_of(ty)?;
    check_mode(mode)?;
    if n > 0 && sa.is_null() {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    bytes(n, size)?;
    let (idx, lo, hi) = indices(tidx, n, size)?;
    let r = job.resolve(ta, ts, pe, hi, false)?;
    Ok(issue(job, mode, || {
        if n == 0 {
            return Ok(());
        }
        probe(&r, job.pd, lo, hi)?;
        for (k, &i) in idx.iter().enumerate() {
            // SAFETY: element k of the caller's contiguous source.
            let src = unsafe { std::slice::from_raw_parts((sa as *const u8).add(k * size as usize), size as usize) };
            rma::put(&r.peer, r.key, r.addr + i as u64 * size, src, job.pd)?;
        }
        Ok(())
    }))
}

#[allow(clippy::too_many_arguments)]
fn ixget(mode: Mode, ta: *mut c_void, sa: *mut c_void, ss: *mut SegDesc, pe: Pe, sidx: *mut isize, n: u64, ty: c_int) -> R {
    let job = live()?;
    let size = size_of(ty)?;
    check_mode(mode)?;
    // DMAPP_BYTE is documented as unsupported for indexed GETs.
    if ty == DMAPP_BYTE || n == 0 || ta.is_null() || ss.is_null() {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    job.check_pe(pe)?;
    let len = bytes(n, size)?;
    let (idx, lo, hi) = indices(sidx, n, size)?;
    if !dword_ok(ta, sa, len as u64) {
        return Err(DMAPP_RC_ALIGNMENT_ERROR);
    }
    let r = job.resolve(sa, ss, pe, hi, false)?;
    Ok(issue(job, mode, || {
        probe(&r, job.pd, lo, hi)?;
        for (k, &i) in idx.iter().enumerate() {
            // SAFETY: element k of the caller's contiguous target.
            let dst = unsafe { std::slice::from_raw_parts_mut((ta as *mut u8).add(k * size as usize), size as usize) };
            rma::get(&r.peer, r.key, r.addr + i as u64 * size, dst, job.pd)?;
        }
        Ok(())
    }))
}

// ---- PE lists (symmetric segments only) -----------------------------------------------

fn pe_list<'a>(list: *mut Pe, n: u32) -> Result<&'a [Pe], Rc> {
    if list.is_null() || n == 0 {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    // SAFETY: the caller's list of n PEs.
    Ok(unsafe { std::slice::from_raw_parts(list, n as usize) })
}

/// put_ixpe (`scatter` false: every PE gets the whole source) and scatter_ixpe
/// (PE at index I gets block I).  Duplicates: later entries win, in list order.
#[allow(clippy::too_many_arguments)]
fn put_pes(mode: Mode, ta: *mut c_void, ts: *mut SegDesc, list: *mut Pe, np: u32, sa: *mut c_void, n: u64, ty: c_int, scatter: bool) -> R {
    let job = live()?;
    let size = size_of(ty)?;
    check_mode(mode)?;
    let pes = pe_list(list, np)?;
    let len = bytes(n, size)?;
    if scatter {
        bytes(len as u64, np as u64)?;
    }
    if len > 0 && sa.is_null() {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    let rs = pes.iter().map(|&pe| job.resolve(ta, ts, pe, len as u64, true)).collect::<Result<Vec<_>, _>>()?;
    Ok(issue(job, mode, || {
        if len == 0 {
            return Ok(());
        }
        for (i, r) in rs.iter().enumerate() {
            let from = if scatter { i * len } else { 0 };
            // SAFETY: block i (scatter) or the whole source.
            let src = unsafe { std::slice::from_raw_parts((sa as *const u8).add(from), len) };
            rma::put(&r.peer, r.key, r.addr, src, job.pd)?;
        }
        Ok(())
    }))
}

/// gather_ixpe: block I of the target comes from the PE at index I.
#[allow(clippy::too_many_arguments)]
fn gather(mode: Mode, ta: *mut c_void, sa: *mut c_void, ss: *mut SegDesc, list: *mut Pe, np: u32, n: u64, ty: c_int) -> R {
    let job = live()?;
    let size = size_of(ty)?;
    check_mode(mode)?;
    let pes = pe_list(list, np)?;
    if n == 0 || ta.is_null() {
        return Err(DMAPP_RC_INVALID_PARAM);
    }
    let len = bytes(n, size)?;
    bytes(len as u64, np as u64)?;
    let rs = pes.iter().map(|&pe| job.resolve(sa, ss, pe, len as u64, true)).collect::<Result<Vec<_>, _>>()?;
    Ok(issue(job, mode, || {
        for (i, r) in rs.iter().enumerate() {
            // SAFETY: block i of the caller's target.
            let dst = unsafe { std::slice::from_raw_parts_mut((ta as *mut u8).add(i * len), len) };
            rma::get(&r.peer, r.key, r.addr, dst, job.pd)?;
        }
        Ok(())
    }))
}

// ---- exports ------------------------------------------------------------------------------

/// Defines the blocking, `_nb` and `_nbi` exports of one family over its core.
macro_rules! family {
    ($core:ident, $blk:ident, $nb:ident, $nbi:ident, ($($a:ident : $t:ty),*) $(, $extra:expr)?) => {
        /// # Safety
        /// Pointer arguments follow the DMAPP contract (NULL is refused).
        #[no_mangle]
        pub unsafe extern "C" fn $blk($($a: $t),*) -> Rc {
            out($core(Mode::Blocking, $($a),* $(, $extra)?))
        }
        /// # Safety
        /// As the blocking form; `syncid` receives the request's handle.
        #[no_mangle]
        pub unsafe extern "C" fn $nb($($a: $t),*, syncid: *mut SyncHandle) -> Rc {
            out($core(Mode::Nb(syncid), $($a),* $(, $extra)?))
        }
        /// # Safety
        /// As the blocking form.
        #[no_mangle]
        pub unsafe extern "C" fn $nbi($($a: $t),*) -> Rc {
            out($core(Mode::Nbi, $($a),* $(, $extra)?))
        }
    };
}
pub(crate) use family;

family!(put, dmapp_put, dmapp_put_nb, dmapp_put_nbi,
    (target_addr: *mut c_void, target_seg: *mut SegDesc, target_pe: Pe, source_addr: *mut c_void, nelems: u64, ty: c_int));
family!(get, dmapp_get, dmapp_get_nb, dmapp_get_nbi,
    (target_addr: *mut c_void, source_addr: *mut c_void, source_seg: *mut SegDesc, source_pe: Pe, nelems: u64, ty: c_int));
family!(iput, dmapp_iput, dmapp_iput_nb, dmapp_iput_nbi,
    (target_addr: *mut c_void, target_seg: *mut SegDesc, target_pe: Pe, source_addr: *mut c_void, tst: isize, sst: isize, nelems: u64, ty: c_int));
family!(iget, dmapp_iget, dmapp_iget_nb, dmapp_iget_nbi,
    (target_addr: *mut c_void, source_addr: *mut c_void, source_seg: *mut SegDesc, source_pe: Pe, tst: isize, sst: isize, nelems: u64, ty: c_int));
family!(ixput, dmapp_ixput, dmapp_ixput_nb, dmapp_ixput_nbi,
    (target_addr: *mut c_void, target_seg: *mut SegDesc, target_pe: Pe, source_addr: *mut c_void, tidx: *mut isize, nelems: u64, ty: c_int));
family!(ixget, dmapp_ixget, dmapp_ixget_nb, dmapp_ixget_nbi,
    (target_addr: *mut c_void, source_addr: *mut c_void, source_seg: *mut SegDesc, source_pe: Pe, sidx: *mut isize, nelems: u64, ty: c_int));
family!(put_pes, dmapp_put_ixpe, dmapp_put_ixpe_nb, dmapp_put_ixpe_nbi,
    (target_addr: *mut c_void, target_seg: *mut SegDesc, target_pe_list: *mut Pe, num_target_pes: u32, source_addr: *mut c_void, nelems: u64, ty: c_int), false);
family!(put_pes, dmapp_scatter_ixpe, dmapp_scatter_ixpe_nb, dmapp_scatter_ixpe_nbi,
    (target_addr: *mut c_void, target_seg: *mut SegDesc, target_pe_list: *mut Pe, num_target_pes: u32, source_addr: *mut c_void, nelems: u64, ty: c_int), true);
family!(gather, dmapp_gather_ixpe, dmapp_gather_ixpe_nb, dmapp_gather_ixpe_nbi,
    (target_addr: *mut c_void, source_addr: *mut c_void, source_seg: *mut SegDesc, source_pe_list: *mut Pe, num_source_pes: u32, nelems: u64, ty: c_int));
