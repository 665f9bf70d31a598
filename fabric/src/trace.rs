//! The timeline (`SOFTNIC_TRACE=DIR`): every traced call of every rank as a span, in
//! Chrome's trace-event format, which Perfetto and chrome://tracing open.
//!
//! Each process appends its events to `DIR/softnic-trace-<rank>-<pid>-<time>.part` (a JSON array whose
//! closing bracket is left out, as the format allows, one event per line, so a process
//! that dies leaves every line it wrote whole); [`merge`] (snrun at the end of a job,
//! `sn-trace-merge DIR` after an mpiexec or srun job) joins the parts into
//! `DIR/softnic-trace.json`.  A rank is a track (`pid` = its rank, named "rank R"), a
//! thread a row.  Times are CLOCK_MONOTONIC microseconds: the tracks of one machine line
//! up; those of several machines are each on their own clock.
//!
//! Off (no `SOFTNIC_TRACE`), [`span`] costs one load and a branch.  On, an event is
//! formatted on the caller's stack and appended to a process-wide buffer under a lock;
//! the buffer is written out at 256 KiB, by [`flush`] and at exit.
use std::io::Write as _;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

const OFF: u8 = 1;
const ON: u8 = 2;
static STATE: AtomicU8 = AtomicU8::new(0);

struct Sink {
    dir: std::path::PathBuf,
    /// The process the buffer and file belong to (a forked child starts its own).
    pid: u32,
    file: Option<std::fs::File>,
    buf: Vec<u8>,
}

static SINK: Mutex<Option<Sink>> = Mutex::new(None);

/// Is tracing on?  (Decided once, from `SOFTNIC_TRACE`.)
#[inline]
pub fn enabled() -> bool {
    match STATE.load(Ordering::Relaxed) {
        ON => true,
        OFF => false,
        _ => decide(),
    }
}

/// Is tracing decided and off?  One load and no call, for quick paths that leave every
/// other case (on, or not decided yet) to their general path.
#[inline(always)]
pub fn surely_off() -> bool {
    STATE.load(Ordering::Relaxed) == OFF
}

#[cold]
fn decide() -> bool {
    let dir = std::env::var_os("SOFTNIC_TRACE").filter(|d| !d.is_empty());
    if let Some(d) = &dir {
        let mut s = SINK.lock().unwrap_or_else(|e| e.into_inner());
        if s.is_none() {
            *s = Some(Sink { dir: d.into(), pid: 0, file: None, buf: Vec::new() });
        }
        // SAFETY: registers plain functions with the C library.
        unsafe {
            libc::atexit(flush_at_exit);
            libc::pthread_atfork(None, None, Some(forked_child));
        }
    }
    let on = dir.is_some();
    STATE.store(if on { ON } else { OFF }, Ordering::Relaxed);
    on
}

extern "C" fn flush_at_exit() {
    flush();
}

/// Set in a forked child: its events go to a file of its own.
static FORKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn forked_child() {
    FORKED.store(true, Ordering::Relaxed);
}

/// CLOCK_MONOTONIC in nanoseconds.
fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The track of this process: its rank when a launcher gave one, else its pid (read
/// once: a forked child keeps its parent's rank).
fn track() -> u64 {
    static TRACK: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TRACK.get_or_init(|| {
        ["PMI_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"]
            .iter()
            .find_map(|k| std::env::var(k).ok().and_then(|v| v.trim().parse().ok()))
            .unwrap_or(std::process::id() as u64)
    })
}

fn tid() -> u64 {
    thread_local!(static TID: std::cell::Cell<u64> = const { std::cell::Cell::new(0) });
    TID.with(|t| {
        if t.get() == 0 {
            // SAFETY: gettid has no preconditions.
            t.set(unsafe { libc::syscall(libc::SYS_gettid) as u64 });
        }
        t.get()
    })
}

/// Up to this many numeric arguments per event.
const MAX_ARGS: usize = 4;

/// A call being traced: recorded as one complete ("X") event when dropped.
pub struct Span {
    cat: &'static str,
    name: &'static str,
    t0: u64,
    args: [(&'static str, u64); MAX_ARGS],
    n: usize,
}

/// Starts a span of `name` (category `cat`), or None when tracing is off.
#[inline]
pub fn span(cat: &'static str, name: &'static str) -> Option<Span> {
    if !enabled() {
        return None;
    }
    Some(Span { cat, name, t0: now_ns(), args: [("", 0); MAX_ARGS], n: 0 })
}

impl Span {
    /// Adds a numeric argument (shown with the event; past [`MAX_ARGS`] ignored).
    pub fn arg(mut self, key: &'static str, v: u64) -> Span {
        self.set(key, v);
        self
    }

    /// Adds or replaces a numeric argument.
    pub fn set(&mut self, key: &'static str, v: u64) {
        if let Some(a) = self.args[..self.n].iter_mut().find(|a| a.0 == key) {
            a.1 = v;
        } else if self.n < MAX_ARGS {
            self.args[self.n] = (key, v);
            self.n += 1;
        }
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        let t1 = now_ns();
        record(self.cat, self.name, "X", self.t0, Some(t1.saturating_sub(self.t0)), &self.args[..self.n]);
    }
}

/// Begins an asynchronous span (a "b" event): an operation from its start (a post) to its
/// completion ([`async_end`] with the same `cat`, `name` and `id`), drawn on a track of its
/// own beside the calls.
pub fn async_begin(cat: &'static str, name: &'static str, id: u64, args: &[(&'static str, u64)]) {
    if enabled() {
        record_async(cat, name, "b", id, args);
    }
}

/// Ends the asynchronous span `id` (an "e" event; see [`async_begin`]).
pub fn async_end(cat: &'static str, name: &'static str, id: u64) {
    if enabled() {
        record_async(cat, name, "e", id, &[]);
    }
}

fn record_async(cat: &str, name: &str, ph: &str, id: u64, args: &[(&str, u64)]) {
    record_with_id(cat, name, ph, now_ns(), None, args, Some(id));
}

/// Records a counter sample (a "C" event: Perfetto draws it as a graph on the track).
pub fn counter(name: &'static str, v: u64) {
    if enabled() {
        record("counter", name, "C", now_ns(), None, &[(name, v)]);
    }
}

/// Records a sample of counter `name` of object `id` (a queue's depth, say): one graph per
/// (name, id) on the rank's track.
pub fn counter_of(name: &'static str, id: u64, v: u64) {
    if enabled() {
        record_with_id("counter", name, "C", now_ns(), None, &[(name, v)], Some(id));
    }
}

/// Records an instant event (something that happened, with no duration).
pub fn instant(cat: &'static str, name: &'static str, args: &[(&'static str, u64)]) {
    if enabled() {
        record(cat, name, "i", now_ns(), None, args);
    }
}

/// An event's line, built without the formatting machinery (a hot path when tracing).
struct Line {
    b: [u8; 512],
    n: usize,
}

impl Line {
    fn s(&mut self, t: &str) {
        let t = &t.as_bytes()[..t.len().min(self.b.len() - self.n)];
        self.b[self.n..self.n + t.len()].copy_from_slice(t);
        self.n += t.len();
    }
    fn u(&mut self, mut v: u64) {
        let mut d = [0u8; 20];
        let mut i = d.len();
        loop {
            i -= 1;
            d[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        // SAFETY: ASCII digits.
        self.s(unsafe { std::str::from_utf8_unchecked(&d[i..]) });
    }
    /// Nanoseconds as microseconds with three decimals (the format's unit).
    fn us(&mut self, ns: u64) {
        self.u(ns / 1000);
        let f = ns % 1000;
        self.s(".");
        self.s(if f < 10 { "00" } else if f < 100 { "0" } else { "" });
        self.u(f);
    }
}

fn record(cat: &str, name: &str, ph: &str, t0: u64, dur: Option<u64>, args: &[(&str, u64)]) {
    record_with_id(cat, name, ph, t0, dur, args, None)
}

fn record_with_id(cat: &str, name: &str, ph: &str, t0: u64, dur: Option<u64>, args: &[(&str, u64)], id: Option<u64>) {
    let pid = track();
    let mut line = Line { b: [0; 512], n: 0 };
    line.s("{\"name\":\"");
    line.s(name);
    line.s("\",\"cat\":\"");
    line.s(cat);
    line.s("\",\"ph\":\"");
    line.s(ph);
    line.s("\",\"ts\":");
    line.us(t0);
    line.s(",\"pid\":");
    line.u(pid);
    line.s(",\"tid\":");
    line.u(tid());
    if let Some(d) = dur {
        line.s(",\"dur\":");
        line.us(d);
    }
    if ph == "i" {
        line.s(",\"s\":\"t\"");
    }
    if let Some(id) = id {
        // Hex as a string: the format's ids are strings or numbers, and 64-bit numbers do
        // not survive a JSON reader's doubles.
        line.s(",\"id\":\"0x");
        let mut d = [0u8; 16];
        for (i, b) in d.iter_mut().enumerate() {
            let n = ((id >> (60 - 4 * i)) & 0xf) as u8;
            *b = if n < 10 { b'0' + n } else { b'a' + n - 10 };
        }
        // SAFETY: ASCII hex digits.
        line.s(unsafe { std::str::from_utf8_unchecked(&d) });
        line.s("\"");
    }
    if !args.is_empty() {
        line.s(",\"args\":{");
        for (i, (k, v)) in args.iter().enumerate() {
            line.s(if i > 0 { ",\"" } else { "\"" });
            line.s(k);
            line.s("\":");
            line.u(*v);
        }
        line.s("}");
    }
    line.s("},\n");
    let mut g = SINK.lock().unwrap_or_else(|e| e.into_inner());
    let Some(s) = g.as_mut() else { return };
    if s.pid == 0 || FORKED.swap(false, Ordering::Relaxed) {
        let me = std::process::id();
        // First event of this process (or of a forked child): its own file, named track.
        s.pid = me;
        s.file = None;
        s.buf.clear();
        s.buf.extend_from_slice(b"[\n");
        let _ = writeln!(
            s.buf,
            "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":0,\"args\":{{\"name\":\"rank {pid} (pid {me})\"}}}},\n\
             {{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":{pid},\"tid\":0,\"args\":{{\"sort_index\":{pid}}}}},"
        );
    }
    s.buf.extend_from_slice(&line.b[..line.n]);
    if s.buf.len() >= 256 << 10 {
        write_out(s);
    }
}

fn write_out(s: &mut Sink) {
    if s.buf.is_empty() {
        return;
    }
    if s.file.is_none() {
        // The rank and a time stamp too: processes in other PID namespaces (virtual
        // hosts) may share a pid.
        let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        let path = s.dir.join(format!("softnic-trace-{}-{}-{:x}.part", track(), s.pid, stamp));
        let _ = std::fs::create_dir_all(&s.dir);
        match std::fs::OpenOptions::new().create(true).truncate(true).write(true).open(&path) {
            Ok(f) => s.file = Some(f),
            Err(e) => {
                crate::sn_warn!("trace", "cannot write {}: {}; events dropped", path.display(), e);
                s.buf.clear();
                return;
            }
        }
    }
    if let Some(f) = s.file.as_mut() {
        let _ = f.write_all(&s.buf);
    }
    s.buf.clear();
}

/// Writes out this process's buffered events (finalize calls and exit do).
pub fn flush() {
    if STATE.load(Ordering::Relaxed) != ON {
        return;
    }
    let mut g = SINK.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = g.as_mut() {
        if s.pid == std::process::id() {
            write_out(s);
        }
    }
}

/// Joins the parts in `dir` into `dir/softnic-trace.json` (and removes them); returns the
/// file written and the number of tracks, or None when there were no parts.  Lines that
/// are not whole events (a process killed in the middle of a write) are left out.
pub fn merge(dir: &std::path::Path) -> std::io::Result<Option<(std::path::PathBuf, usize)>> {
    let mut parts: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("softnic-trace-") && n.ends_with(".part")))
        .collect();
    if parts.is_empty() {
        return Ok(None);
    }
    parts.sort();
    let out_path = dir.join("softnic-trace.json");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&out_path)?);
    out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
    let mut first = true;
    let mut tracks = std::collections::BTreeSet::new();
    for p in &parts {
        let text = std::fs::read_to_string(p)?;
        for line in text.lines() {
            let ev = line.trim().trim_end_matches(',');
            if !(ev.starts_with('{') && ev.ends_with('}')) {
                continue;
            }
            if let Some(pid) = ev.split("\"pid\":").nth(1).and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next()) {
                tracks.insert(pid.to_string());
            }
            if !first {
                out.write_all(b",\n")?;
            }
            first = false;
            out.write_all(ev.as_bytes())?;
        }
    }
    out.write_all(b"\n]}\n")?;
    out.flush()?;
    for p in &parts {
        let _ = std::fs::remove_file(p);
    }
    Ok(Some((out_path, tracks.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keeps_whole_events_only() {
        let dir = std::env::temp_dir().join(format!("sn-trace-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("softnic-trace-1.part"), "[\n{\"name\":\"a\",\"ph\":\"X\",\"ts\":1.000,\"pid\":0,\"tid\":1,\"dur\":2.000},\n").unwrap();
        std::fs::write(dir.join("softnic-trace-2.part"), "[\n{\"name\":\"b\",\"ph\":\"X\",\"ts\":1.000,\"pid\":1,\"tid\":2,\"dur\":0.500},\n{\"name\":\"cut").unwrap();
        let (path, tracks) = merge(&dir).unwrap().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(tracks, 2);
        assert_eq!(text.matches("\"name\"").count(), 2, "{text}");
        assert!(!text.contains("cut"));
        assert!(text.trim_end().ends_with("]}"));
        assert!(merge(&dir).unwrap().is_none(), "parts are removed");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
