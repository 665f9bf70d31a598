//! Running a job: spawning ranks, the single-threaded poll loop (PMI sockets,
//! the optional PMI_PORT listener, --label pipes, a signalfd), and reaping.

use crate::pmi::{self, ConnState, Effect, Server};
use crate::wire::Mapping;
use std::ffi::OsString;
use std::io;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// Grace between SIGTERM and SIGKILL when tearing a job down.
const KILL_GRACE: Duration = Duration::from_secs(1);
/// After SIGKILL, how long we wait for ranks to be reaped before giving up.
const REAP_GIVEUP: Duration = Duration::from_secs(5);
/// A PMI line longer than this is a broken client.
const MAX_LINE: usize = 64 * 1024;
/// A --label line longer than this is emitted in pieces.
const MAX_LABEL_LINE: usize = 64 * 1024;
/// Replies a PMI connection may leave unread.  A client that reads each reply before its
/// next request has at most a few KiB pending; past this it is flooding us (one that
/// never reads grew snrun by 144 MB in 5 s): it is cut off, and a rank's job ended.
const MAX_PENDING_REPLIES: usize = 1 << 20;
/// --label output waiting for snrun's own stdout (or stderr) to take it, at most; past
/// it the ranks' pipes to that stream are not read, so ranks that write block, as they
/// would writing to the blocked stream themselves.  snrun's loop never blocks on output
/// (signals, --timeout and PMI go on while a reader stalls).
const MAX_PENDING_OUTPUT: usize = 1 << 20;
/// Bytes written per ready event: what a pipe with room takes without blocking.
const OUTPUT_CHUNK: usize = libc::PIPE_BUF;
/// Connections (beyond the ranks') that have not proven they are ranks, at most.
const MAX_UNIDENTIFIED: usize = 64;

/// What to run: snrun's parsed command line (main.rs parses it).
#[derive(Debug, PartialEq)]
pub struct Opts {
    pub n: usize,
    pub per_node: Option<usize>,
    pub label: bool,
    pub timeout: Option<f64>,
    /// `--no-kill`: a failing rank leaves the others running.
    pub no_kill: bool,
    pub prog: Vec<OsString>,
}

static LOG_LEVEL: AtomicU8 = AtomicU8::new(1);

fn log_level() -> u8 {
    LOG_LEVEL.load(Ordering::Relaxed)
}

macro_rules! warn { ($($a:tt)*) => { if log_level() >= 1 { eprintln!("snrun: {}", format!($($a)*)); } } }
macro_rules! debug { ($($a:tt)*) => { if log_level() >= 3 { eprintln!("snrun: {}", format!($($a)*)); } } }

fn init_log() {
    let lvl = match std::env::var("SOFTNIC_LOG").unwrap_or_default().to_ascii_lowercase().as_str() {
        "off" | "none" => 0,
        "error" => 0,
        "info" => 2,
        "debug" => 3,
        "trace" => 4,
        _ => 1,
    };
    LOG_LEVEL.store(lvl, Ordering::Relaxed);
}

struct Conn {
    fd: OwnedFd,
    st: ConnState,
    inbuf: Vec<u8>,
    out: Vec<u8>,
    dead: bool,
}

struct Rank {
    pid: i32,
    /// Exit status in shell form (code, or 128+signal) once reaped.
    status: Option<i32>,
}

struct OutPipe {
    fd: Option<OwnedFd>,
    rank: usize,
    target: RawFd,
    buf: Vec<u8>,
}

/// Output for one of snrun's own streams (stdout, stderr), oldest first.
#[derive(Default)]
struct OutQueue {
    buf: Vec<u8>,
    /// Bytes of `buf` already written.
    head: usize,
    /// The stream failed (closed reader): output is dropped from then on.
    broken: bool,
}

impl OutQueue {
    fn pending(&self) -> usize {
        self.buf.len() - self.head
    }
    fn push(&mut self, data: &[u8]) {
        if !self.broken {
            self.buf.extend_from_slice(data);
        }
    }
    /// Writes what `fd` takes now (`block`: everything, waiting as long as it takes).
    fn write_to(&mut self, fd: RawFd, block: bool) {
        while self.pending() > 0 && !self.broken {
            let chunk = if block { self.pending() } else { self.pending().min(OUTPUT_CHUNK) };
            let n = unsafe { libc::write(fd, self.buf[self.head..].as_ptr().cast(), chunk) };
            if n > 0 {
                self.head += n as usize;
            } else if n < 0 && errno() == libc::EINTR {
            } else if n < 0 && errno() == libc::EAGAIN {
                if !block {
                    break;
                }
                let mut p = libc::pollfd { fd, events: libc::POLLOUT, revents: 0 };
                unsafe { libc::poll(&mut p, 1, 1000) };
            } else {
                // Output loss must not kill the job.
                self.broken = true;
            }
            if !block {
                break; // one chunk per ready event: the next may not fit
            }
        }
        if self.pending() == 0 || self.broken {
            self.buf = Vec::new();
            self.head = 0;
        } else if self.head > self.buf.len() / 2 {
            self.buf.drain(..self.head);
            self.head = 0;
        }
    }
}

struct Job {
    server: Server,
    /// --label output for fd 1 and fd 2.
    outq: [OutQueue; 2],
    ranks: Vec<Rank>,
    pgid: i32,
    conns: Vec<Conn>,
    listener: Option<TcpListener>,
    pipes: Vec<OutPipe>,
    sigfd: OwnedFd,
    /// Set once the job is being torn down: the exit status snrun will return.
    exit: Option<i32>,
    kill_at: Option<Instant>,
    giveup_at: Option<Instant>,
    deadline: Option<(Instant, f64)>,
    /// `--no-kill`: the first failure's status, kept for the end instead of ending the job.
    no_kill: bool,
    first_failure: Option<i32>,
}

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn set_nonblock(fd: RawFd) {
    unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        if fl >= 0 {
            libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
        }
    }
}

fn signame(sig: i32) -> String {
    let p = unsafe { libc::strsignal(sig) };
    if p.is_null() {
        return format!("signal {sig}");
    }
    unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn random_hex() -> String {
    use std::io::Read;
    let mut b = [0u8; 4];
    if std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b)).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        b = t.to_le_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Blocks the signals we handle and returns a signalfd for them.  Children
/// get an empty mask back before exec (std::process resets it; we do too).
fn make_signalfd() -> io::Result<OwnedFd> {
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGCHLD, libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

fn make_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

pub fn run(o: Opts) -> i32 {
    init_log();
    let map = Mapping::new(o.n, o.per_node.unwrap_or(o.n));
    let kvsname = format!("snrun-{}-{}", std::process::id(), random_hex());
    // The job secret: only the ranks learn it (their environment, readable by this user
    // only); never derived from the kvsname, pid or time, which others can guess.
    let mut secret = [0u8; 16];
    if let Err(e) = softnic_fabric::pmi::random_bytes(&mut secret) {
        eprintln!("snrun: cannot draw the job secret from the kernel's random source: {e}");
        return 1;
    }
    let port_mode = std::env::var("SNRUN_PMI_MODE").map(|v| v == "port").unwrap_or(false);
    debug!("job {kvsname}: {} ranks on {} virtual node(s)", map.size, map.nodes());

    let sigfd = match make_signalfd() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("snrun: cannot set up signal handling: {e}");
            return 1;
        }
    };
    let listener = if port_mode {
        match TcpListener::bind("127.0.0.1:0") {
            Ok(l) => {
                let _ = l.set_nonblocking(true);
                Some(l)
            }
            Err(e) => {
                eprintln!("snrun: cannot listen for PMI_PORT: {e}");
                return 1;
            }
        }
    } else {
        None
    };

    let mut job = Job {
        server: Server::new(&kvsname, map, secret),
        outq: Default::default(),
        ranks: Vec::with_capacity(o.n),
        pgid: 0,
        conns: Vec::new(),
        listener,
        pipes: Vec::new(),
        sigfd,
        exit: None,
        no_kill: o.no_kill,
        first_failure: None,
        kill_at: None,
        giveup_at: None,
        deadline: o.timeout.map(|t| (Instant::now() + Duration::from_secs_f64(t.min(1e9)), t)),
    };

    if let Err((code, msg)) = job.spawn_all(&o, &map, &kvsname, &softnic_fabric::pmi::to_hex(&secret)) {
        eprintln!("snrun: {msg}");
        job.start_kill(code, None);
    }
    job.event_loop();

    let pids: Vec<i32> = job.ranks.iter().map(|r| r.pid).collect();
    match softnic_fabric::registry::reclaim_dead(&pids) {
        Ok(n) => debug!("reclaimed {n} registry entries of dead ranks"),
        Err(e) => debug!("reclaiming what dead ranks left failed: {e}"),
    }
    merge_trace();
    job.exit.or(job.first_failure).unwrap_or(0)
}

/// SOFTNIC_TRACE=DIR: the ranks have written their parts of the timeline; join them.
fn merge_trace() {
    let Some(dir) = std::env::var_os("SOFTNIC_TRACE").filter(|d| !d.is_empty()) else { return };
    match softnic_fabric::trace::merge(std::path::Path::new(&dir)) {
        Ok(Some((path, tracks))) => eprintln!("snrun: timeline of {tracks} rank(s) written to {} (open it in Perfetto)", path.display()),
        Ok(None) => eprintln!("snrun: SOFTNIC_TRACE: no rank wrote a timeline into {}", std::path::Path::new(&dir).display()),
        Err(e) => eprintln!("snrun: SOFTNIC_TRACE: cannot join the timeline in {}: {e}", std::path::Path::new(&dir).display()),
    }
}

impl Job {
    /// Starts every rank.  Runs on the main thread, which lives as long as snrun: the ranks'
    /// death signal (PR_SET_PDEATHSIG) fires when the thread that forked them ends.
    fn spawn_all(&mut self, o: &Opts, map: &Mapping, kvsname: &str, secret: &str) -> Result<(), (i32, String)> {
        let (ptag, cookie) = softnic_fabric::bootstrap::gni_credentials(kvsname);
        let has = |k: &str| std::env::var_os(k).is_some();
        let gni_ptag = !has("PMI_GNI_PTAG");
        let gni_cookie = !has("PMI_GNI_COOKIE");
        let gni_dev = !has("PMI_GNI_DEV_ID");
        let gni_loc = !has("PMI_GNI_LOC_ADDR");
        // Every rank of an snrun job runs on this machine: its virtual nodes talk through
        // shared memory, not the network engine (unless the user asks for it).
        let engine_shm = !has("SOFTNIC_ENGINE");
        let port = self.listener.as_ref().and_then(|l| l.local_addr().ok()).map(|a| a.port());
        // The Portals runtime's view of the job (p3rt.h): every rank's NID (its node)
        // and PID (its index on the node), and the job id libportals derives from the
        // job name when these are absent (PMI under mpiexec).
        let nidmap = (0..o.n).map(|r| map.node_of(r).to_string()).collect::<Vec<_>>().join(":");
        let pidmap = (0..o.n).map(|r| map.local_rank(r).to_string()).collect::<Vec<_>>().join(":");
        let ptl_jid = ((ptag as u32) << 16) | (cookie >> 16);
        // Ranks read a terminal only as rank 0 and only when it is not a tty:
        // ranks run in their own process group, so reading a tty would stop them.
        let stdin_tty = unsafe { libc::isatty(0) } == 1;

        for r in 0..o.n {
            let mut cmd = Command::new(&o.prog[0]);
            cmd.args(&o.prog[1..]);
            let node = map.node_of(r);
            cmd.env("PMI_RANK", r.to_string())
                .env("PMI_SIZE", o.n.to_string())
                .env("PMI_JOBID", kvsname)
                .env("SOFTNIC_JOBID", kvsname)
                .env("SOFTNIC_LOCAL_RANK", map.local_rank(r).to_string())
                .env("SOFTNIC_LOCAL_SIZE", map.local_size(r).to_string())
                .env("SOFTNIC_NODE_ID", node.to_string())
                .env("SOFTNIC_RANKS_PER_NODE", map.per_node.to_string())
                .env("ALPS_APP_PE", r.to_string())
                .env("PTL_MY_RID", r.to_string())
                .env("PTL_NIDMAP", &nidmap)
                .env("PTL_PIDMAP", &pidmap)
                .env("PTL_MY_JID", ptl_jid.to_string())
                .env(softnic_fabric::bootstrap::SECRET_ENV, secret);
            if gni_ptag {
                cmd.env("PMI_GNI_PTAG", ptag.to_string());
            }
            if gni_cookie {
                cmd.env("PMI_GNI_COOKIE", cookie.to_string());
            }
            if gni_dev {
                cmd.env("PMI_GNI_DEV_ID", "0");
            }
            if gni_loc {
                cmd.env("PMI_GNI_LOC_ADDR", node.to_string());
            }
            if engine_shm {
                cmd.env("SOFTNIC_ENGINE", "shm");
            }
            if r > 0 || stdin_tty {
                cmd.stdin(Stdio::null());
            }

            let mut child_end: Option<UnixStream> = None;
            if let Some(p) = port {
                cmd.env_remove("PMI_FD")
                    .env("PMI_PORT", format!("127.0.0.1:{p}"))
                    .env("PMI_ID", r.to_string());
            } else {
                let (mine, theirs) =
                    UnixStream::pair().map_err(|e| (1, format!("socketpair failed: {e}")))?;
                cmd.env_remove("PMI_PORT").env_remove("PMI_ID").env("PMI_FD", theirs.as_raw_fd().to_string());
                let _ = mine.set_nonblocking(true);
                let fd: OwnedFd = mine.into();
                self.conns.push(Conn {
                    fd,
                    st: ConnState::for_rank(r),
                    inbuf: Vec::new(),
                    out: Vec::new(),
                    dead: false,
                });
                self.server.bind(r);
                child_end = Some(theirs);
            }

            if o.label {
                for target in [1, 2] {
                    let (rd, wr) = make_pipe().map_err(|e| (1, format!("pipe failed: {e}")))?;
                    set_nonblock(rd.as_raw_fd());
                    if target == 1 {
                        cmd.stdout(Stdio::from(wr));
                    } else {
                        cmd.stderr(Stdio::from(wr));
                    }
                    self.pipes.push(OutPipe { fd: Some(rd), rank: r, target, buf: Vec::new() });
                }
            }

            let pg = self.pgid;
            let keep = child_end.as_ref().map(|s| s.as_raw_fd()).unwrap_or(-1);
            let snrun_pid = std::process::id() as i32;
            // SAFETY: only async-signal-safe calls between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    // The rank dies with snrun, even by kill -9 (the kernel sends SIGKILL
                    // when the forking thread, our main thread, ends; kept across exec).
                    // If snrun died before this line, the signal will never come: go now.
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    if libc::getppid() != snrun_pid {
                        libc::_exit(128 + libc::SIGKILL);
                    }
                    // One process group per job so killing it reaches the
                    // ranks' own children too.
                    if libc::setpgid(0, pg) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    if keep >= 0 {
                        let fl = libc::fcntl(keep, libc::F_GETFD);
                        if fl < 0 || libc::fcntl(keep, libc::F_SETFD, fl & !libc::FD_CLOEXEC) != 0 {
                            return Err(io::Error::last_os_error());
                        }
                    }
                    libc::signal(libc::SIGPIPE, libc::SIG_DFL);
                    let mut set: libc::sigset_t = std::mem::zeroed();
                    libc::sigemptyset(&mut set);
                    libc::pthread_sigmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
                    Ok(())
                });
            }
            match cmd.spawn() {
                Ok(child) => {
                    let pid = child.id() as i32;
                    // Reaping is ours (waitpid on SIGCHLD); dropping Child does not wait.
                    drop(child);
                    if self.pgid == 0 {
                        self.pgid = pid;
                    }
                    self.ranks.push(Rank { pid, status: None });
                    debug!("rank {r}: pid {pid}");
                }
                Err(e) => {
                    let code = if e.kind() == io::ErrorKind::NotFound { 127 } else { 126 };
                    return Err((code, format!("cannot start rank {r} ('{}'): {e}", o.prog[0].to_string_lossy())));
                }
            }
            // `cmd` (holding the pipe write ends) and `child_end` drop here,
            // so EOF on them means the rank side is gone.
        }
        Ok(())
    }

    fn live_ranks(&self) -> usize {
        self.ranks.iter().filter(|r| r.status.is_none()).count()
    }

    fn signal_job(&self, sig: i32) {
        if self.pgid > 0 {
            unsafe { libc::kill(-self.pgid, sig) };
        }
        // Also each rank directly, in case one left the job's group (setsid).
        for r in &self.ranks {
            if r.status.is_none() {
                unsafe { libc::kill(r.pid, sig) };
            }
        }
    }

    /// Starts tearing the job down; the first caller decides the exit status.
    fn start_kill(&mut self, code: i32, msg: Option<String>) {
        if self.exit.is_some() {
            return;
        }
        if let Some(m) = msg {
            eprintln!("snrun: {m}");
        }
        self.exit = Some(code);
        self.signal_job(libc::SIGTERM);
        let now = Instant::now();
        self.kill_at = Some(now + KILL_GRACE);
        self.giveup_at = Some(now + KILL_GRACE + REAP_GIVEUP);
    }

    fn event_loop(&mut self) {
        loop {
            self.reap();
            if self.live_ranks() == 0 {
                break;
            }
            // Also here, not only after poll: a rank reaped just now (its SIGCHLD already
            // read in the previous round) may doom a barrier, and no event would follow.
            self.check_barrier_deadlock();
            let now = Instant::now();
            if let Some((t, secs)) = self.deadline {
                if now >= t {
                    self.deadline = None;
                    self.start_kill(124, Some(format!("job timed out after {secs} s; killing it")));
                }
            }
            if let Some(t) = self.kill_at {
                if now >= t {
                    self.kill_at = None;
                    self.signal_job(libc::SIGKILL);
                }
            }
            if let Some(t) = self.giveup_at {
                if now >= t {
                    eprintln!("snrun: {} rank(s) did not die after SIGKILL; giving up on them", self.live_ranks());
                    break;
                }
            }
            let next = [self.deadline.map(|d| d.0), self.kill_at, self.giveup_at].into_iter().flatten().min();
            let timeout_ms: i32 = match next {
                Some(t) => t.saturating_duration_since(now).as_millis().min(60_000) as i32 + 1,
                None => -1,
            };

            // Poll set: [signalfd, listener?, conns..., pipes...]
            let mut pfds = vec![libc::pollfd { fd: self.sigfd.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
            let lst = self.listener.as_ref().map(|l| l.as_raw_fd());
            if let Some(fd) = lst {
                pfds.push(libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
            }
            let c0 = pfds.len();
            for c in &self.conns {
                let ev = libc::POLLIN | if c.out.is_empty() { 0 } else { libc::POLLOUT };
                pfds.push(libc::pollfd { fd: c.fd.as_raw_fd(), events: ev, revents: 0 });
            }
            let p0 = pfds.len();
            for p in &self.pipes {
                // A closed pipe, or one whose stream has enough waiting, is skipped by
                // poll (negative fd).
                let full = self.outq[p.target as usize - 1].pending() >= MAX_PENDING_OUTPUT;
                let fd = p.fd.as_ref().filter(|_| !full).map(|f| f.as_raw_fd()).unwrap_or(-1);
                pfds.push(libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
            }
            let o0 = pfds.len();
            for (k, q) in self.outq.iter().enumerate() {
                let fd = if q.pending() > 0 { k as RawFd + 1 } else { -1 };
                pfds.push(libc::pollfd { fd, events: libc::POLLOUT, revents: 0 });
            }
            let n = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout_ms) };
            if n < 0 {
                if errno() == libc::EINTR {
                    continue;
                }
                eprintln!("snrun: poll failed: {}", io::Error::last_os_error());
                self.start_kill(1, None);
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            if pfds[0].revents != 0 {
                self.read_signals();
            }
            if lst.is_some() && pfds[1].revents != 0 {
                self.accept();
            }
            for i in 0..(p0 - c0) {
                let re = pfds[c0 + i].revents;
                if re != 0 {
                    self.service_conn(i, re);
                }
            }
            for i in 0..self.pipes.len() {
                if pfds[p0 + i].revents != 0 {
                    self.drain_pipe(i);
                }
            }
            for k in 0..2 {
                if pfds[o0 + k].revents != 0 {
                    self.outq[k].write_to(k as RawFd + 1, false);
                }
            }
            self.conns.retain(|c| !c.dead);
            self.check_barrier_deadlock();
        }
        // Ranks are gone: collect what they wrote, then make sure their
        // leftover children in the job's group die with a failed job.
        for i in 0..self.pipes.len() {
            // What the last ranks left may exceed the queue's bound: write it out.
            while self.drain_pipe(i) {
                self.outq[self.pipes[i].target as usize - 1].write_to(self.pipes[i].target, true);
            }
            self.flush_partial(i);
        }
        for k in 0..2 {
            self.outq[k].write_to(k as RawFd + 1, true);
        }
        if self.exit.is_some() && self.pgid > 0 {
            unsafe { libc::kill(-self.pgid, libc::SIGKILL) };
        }
    }

    fn read_signals(&mut self) {
        loop {
            let mut si: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
            let sz = std::mem::size_of::<libc::signalfd_siginfo>();
            let n = unsafe { libc::read(self.sigfd.as_raw_fd(), (&mut si as *mut libc::signalfd_siginfo).cast(), sz) };
            if n != sz as isize {
                return;
            }
            let sig = si.ssi_signo as i32;
            match sig {
                libc::SIGCHLD => {} // reap() runs every iteration
                _ => {
                    if self.exit.is_some() {
                        // Second interrupt while tearing down: no more grace.
                        self.signal_job(libc::SIGKILL);
                        self.kill_at = None;
                    } else {
                        self.start_kill(128 + sig, Some(format!("got {}; killing the job", signame(sig))));
                    }
                }
            }
        }
    }

    fn reap(&mut self) {
        loop {
            let mut st = 0;
            let pid = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) };
            if pid <= 0 {
                return;
            }
            let Some(r) = self.ranks.iter().position(|x| x.pid == pid) else { continue };
            let (code, what) = if libc::WIFEXITED(st) {
                let c = libc::WEXITSTATUS(st);
                (c, format!("exited with status {c}"))
            } else if libc::WIFSIGNALED(st) {
                let s = libc::WTERMSIG(st);
                (128 + s, format!("was killed by signal {s} ({})", signame(s)))
            } else {
                continue; // stopped/continued: not an exit
            };
            self.ranks[r].status = Some(code);
            debug!("rank {r} (pid {pid}) {what}");
            if code != 0 && self.no_kill {
                warn!("rank {r} (pid {pid}) {what}; the others run on (--no-kill)");
                self.first_failure.get_or_insert(code);
            } else if code != 0 {
                self.start_kill(code, Some(format!("rank {r} (pid {pid}) {what}; killing the job")));
            }
        }
    }

    /// A barrier some ranks wait in can never complete once a rank that has
    /// not entered it is gone: fail the job rather than hang.
    fn check_barrier_deadlock(&mut self) {
        if self.exit.is_some() {
            return;
        }
        let waiters = self.server.barrier_waiters();
        if waiters.is_empty() {
            return;
        }
        if let Some(r) = (0..self.ranks.len()).find(|r| !waiters.contains(r) && self.ranks[*r].status.is_some()) {
            self.start_kill(
                1,
                Some(format!(
                    "rank {r} exited without entering the PMI barrier that {} rank(s) wait in; killing the job",
                    waiters.len()
                )),
            );
        }
    }

    fn accept(&mut self) {
        loop {
            let Some(l) = self.listener.as_ref() else { return };
            match l.accept() {
                Ok((s, addr)) => {
                    // Bound the connections strays can hold: the oldest unidentified one
                    // makes room (a rank proves itself in its first line, so it is never
                    // the oldest for long; refusing newcomers would lock ranks out).
                    let unidentified: Vec<usize> =
                        (0..self.conns.len()).filter(|&i| !self.conns[i].dead && self.conns[i].st.rank.is_none()).collect();
                    if unidentified.len() >= MAX_UNIDENTIFIED {
                        warn!("too many unidentified PMI connections; closing the oldest to accept {addr}");
                        self.close_conn(unidentified[0], "evicted");
                    }
                    let _ = s.set_nonblocking(true);
                    debug!("PMI connection from {addr}");
                    self.conns.push(Conn {
                        fd: OwnedFd::from(s),
                        st: ConnState::default(),
                        inbuf: Vec::new(),
                        out: Vec::new(),
                        dead: false,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    fn who(st: &ConnState) -> String {
        match st.rank {
            Some(r) => format!("rank {r}"),
            None => "unidentified PMI client".into(),
        }
    }

    fn close_conn(&mut self, i: usize, why: &str) {
        let c = &mut self.conns[i];
        if c.dead {
            return;
        }
        c.dead = true;
        c.out = Vec::new();
        c.inbuf = Vec::new();
        debug!("{}: PMI connection closed ({why}){}", Self::who(&c.st), if c.st.finalized { "" } else { " before finalize" });
        self.server.closed(&c.st);
    }

    fn service_conn(&mut self, i: usize, re: i16) {
        if self.conns[i].dead {
            return;
        }
        if re & libc::POLLOUT != 0 {
            self.flush_conn(i);
        }
        if re & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) == 0 {
            return;
        }
        let mut buf = [0u8; 16384];
        loop {
            let fd = self.conns[i].fd.as_raw_fd();
            let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n > 0 {
                self.conns[i].inbuf.extend_from_slice(&buf[..n as usize]);
                self.process_lines(i);
                if self.conns[i].dead {
                    return;
                }
                if self.conns[i].inbuf.len() > MAX_LINE {
                    warn!("{}: PMI line longer than {MAX_LINE} bytes; dropping the connection", Self::who(&self.conns[i].st));
                    self.close_conn(i, "line too long");
                    return;
                }
            } else if n == 0 {
                self.close_conn(i, "EOF");
                return;
            } else {
                match errno() {
                    libc::EINTR => continue,
                    libc::EAGAIN => return,
                    e => {
                        self.close_conn(i, &io::Error::from_raw_os_error(e).to_string());
                        return;
                    }
                }
            }
        }
    }

    fn process_lines(&mut self, i: usize) {
        while let Some(p) = self.conns[i].inbuf.iter().position(|&b| b == b'\n') {
            let raw: Vec<u8> = self.conns[i].inbuf.drain(..=p).collect();
            let mut line = String::from_utf8_lossy(&raw[..raw.len() - 1]).into_owned();
            if line.ends_with('\r') {
                line.pop();
            }
            let who = Self::who(&self.conns[i].st);
            debug!("{who} -> {}", pmi::trunc(&line));
            let effects = self.server.handle(&mut self.conns[i].st, &line);
            for e in effects {
                match e {
                    Effect::Reply(s) => self.send(i, &s),
                    Effect::BarrierOut(ranks) => {
                        for r in ranks {
                            if let Some(j) = self.conns.iter().position(|c| !c.dead && c.st.rank == Some(r)) {
                                self.send(j, "cmd=barrier_out\n");
                            }
                        }
                    }
                    Effect::Abort { code, message } => {
                        let m = if message.is_empty() { String::new() } else { format!(": {message}") };
                        self.start_kill(code, Some(format!("{who} called PMI abort with exit code {code}{m}; killing the job")));
                    }
                    Effect::Drop(why) => {
                        warn!("{who}: {why}; dropping the PMI connection");
                        self.close_conn(i, &why);
                    }
                    Effect::Warn(w) => warn!("{who}: {w}"),
                }
            }
            if self.conns[i].dead {
                return;
            }
        }
    }

    fn send(&mut self, i: usize, s: &str) {
        if self.conns[i].dead {
            return;
        }
        debug!("{} <- {}", Self::who(&self.conns[i].st), pmi::trunc(s.trim_end()));
        self.conns[i].out.extend_from_slice(s.as_bytes());
        self.flush_conn(i);
        let pending = self.conns[i].out.len();
        if !self.conns[i].dead && pending > MAX_PENDING_REPLIES {
            let rank = self.conns[i].st.rank;
            self.close_conn(i, "replies not read");
            match rank {
                Some(r) => self.start_kill(
                    1,
                    Some(format!(
                        "rank {r} does not read its PMI replies ({pending} bytes unsent, limit {MAX_PENDING_REPLIES}); cut it off, killing the job"
                    )),
                ),
                None => warn!("unidentified PMI client does not read its replies; dropped it"),
            }
        }
    }

    fn flush_conn(&mut self, i: usize) {
        while !self.conns[i].out.is_empty() {
            let c = &mut self.conns[i];
            let n = unsafe {
                libc::send(c.fd.as_raw_fd(), c.out.as_ptr().cast(), c.out.len(), libc::MSG_NOSIGNAL)
            };
            if n > 0 {
                c.out.drain(..n as usize);
            } else if n < 0 && errno() == libc::EINTR {
            } else if n < 0 && errno() == libc::EAGAIN {
                return; // POLLOUT will bring us back
            } else {
                self.close_conn(i, "send failed");
                return;
            }
        }
    }

    /// Reads what rank pipe `i` has, up to its stream's output bound; true if it stopped
    /// at that bound (the pipe may hold more).
    fn drain_pipe(&mut self, i: usize) -> bool {
        let mut buf = [0u8; 16384];
        loop {
            let Some(fd) = self.pipes[i].fd.as_ref().map(|f| f.as_raw_fd()) else { return false };
            if self.outq[self.pipes[i].target as usize - 1].pending() >= MAX_PENDING_OUTPUT {
                return true;
            }
            let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n > 0 {
                self.pipes[i].buf.extend_from_slice(&buf[..n as usize]);
                self.emit_lines(i);
            } else if n < 0 && errno() == libc::EINTR {
            } else if n < 0 && errno() == libc::EAGAIN {
                return false;
            } else {
                // EOF or error: nothing more will come.
                self.pipes[i].fd = None;
                self.flush_partial(i);
                return false;
            }
        }
    }

    fn emit_lines(&mut self, i: usize) {
        let p = &mut self.pipes[i];
        let mut out = Vec::new();
        let mut start = 0;
        while let Some(off) = p.buf[start..].iter().position(|&b| b == b'\n') {
            out.extend_from_slice(format!("[{}] ", p.rank).as_bytes());
            out.extend_from_slice(&p.buf[start..start + off + 1]);
            start += off + 1;
        }
        p.buf.drain(..start);
        if p.buf.len() >= MAX_LABEL_LINE {
            out.extend_from_slice(format!("[{}] ", p.rank).as_bytes());
            out.append(&mut p.buf);
            out.push(b'\n');
        }
        if !out.is_empty() {
            self.outq[p.target as usize - 1].push(&out);
        }
    }

    fn flush_partial(&mut self, i: usize) {
        let p = &mut self.pipes[i];
        if p.buf.is_empty() {
            return;
        }
        let mut out = format!("[{}] ", p.rank).into_bytes();
        out.append(&mut p.buf);
        out.push(b'\n');
        self.outq[p.target as usize - 1].push(&out);
    }
}
