//! A message transport of our own over TCP for the network engine: its default
//! (`SOFTNIC_NET_TRANSPORT=sockets`; `libfabric` has crate::net use a libfabric provider).
//!
//! **Why.**  Per request, libfabric's tcp;ofi_rxm makes the target's progress thread
//! write and read its own wake-up signals (the CQ's wait descriptor, tcp's progress
//! socketpair) around the one receive and the one send the request needs: most of the
//! gap between the engine's small-put round trip and a bare TCP ping-pong (crate::net,
//! "Latency").  Here a message costs the send and the receive: whoever polls reads the
//! sockets themselves, and the sleeping thread sleeps on the sockets (one epoll set).
//!
//! **Shape.**  What the engine needs of a provider, nothing more: reliable, ordered
//! messages between processes, each process named by an 8-byte address (its listening
//! socket: family, port, IPv4 address); no RMA (bulk transfers go as requests).  A
//! process sends on connections it opened (one per peer address, made on first use
//! without blocking, its bytes queued meanwhile) and receives on those others opened to
//! it, so messages from one process to another travel in order on one stream.  A frame
//! is a 4-byte little-endian length and the message.
//!
//! **Threads.**  Any thread may send (a connection's queue under its lock) and poll
//! ([`Sock::poll`]: one epoll_wait without sleeping, then each ready connection read by
//! one thread at a time, the others waiting for its lock), so the engine's leases and
//! waiting threads serve traffic as its progress thread does.  Messages of one
//! connection are handed over in order.  Locks are waited for, never only tried: the set
//! is level-triggered, and a real-time progress thread that skipped a busy connection
//! would find it ready again at once and spin over the thread it preempted (seen: a
//! window of 4 KiB puts 8x slower, the initiator's core all in the progress thread).  The epoll set
//! ([`Sock::wait_fd`]) is level-triggered: a sleeper on it wakes while anything is
//! unread, and nothing needs draining before sleeping.
//!
//! **Failure.**  A connection that cannot be made or breaks fails its address: what was
//! queued is dropped, later sends to it fail, and [`Sock::poll`] reports it once (the
//! engine takes the peers there as dead).  So does a connection whose peer hung up: a
//! process closes the connections others opened to it only when it ends, so its end
//! fails the requests waiting for its replies at once (every connection of ours stays in
//! the epoll set for EPOLLRDHUP), not when their timeout runs out (seen: a program's
//! teardown call to a peer that had just ended waited 10 s).  Bytes on a received connection that do not
//! frame (a length past [`MAX_FRAME`]) close that connection; what it carried is not the
//! engine's protocol, which authenticates every message itself.
use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// Largest message in one frame (the engine's largest request is far below).
pub const MAX_FRAME: usize = 4 << 20;
/// Bytes an address's queue may hold before sends to it are answered `Again`.
const QUEUE_MAX: usize = 64 << 20;
/// Least room a read(2) of a connection is given.
const READ_CHUNK: usize = 64 << 10;
/// A connection's read buffer once it carried a long frame: several of the engine's
/// largest requests.
const READ_BUF: usize = 2 << 20;
/// Most vectors one sendmsg(2) takes (Linux's UIO_MAXIOV).
const IOV_MAX: usize = 1024;
/// Length of an address: family (LE u16), port (BE), IPv4 address.
pub const NAME_LEN: usize = 8;

/// What a send can answer.
#[derive(Debug, PartialEq, Eq)]
pub enum SendError {
    /// The address's queue is full: try again after polling.
    Again,
    /// The address failed (refused, reset, unreachable) or is unknown.
    Failed,
}

thread_local! {
    /// How many messages this thread is handing over now (see `read_in`).
    static DELIVERING: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Epoll data tags (high 32 bits); the low bits carry the fd or address index.
const TAG_LISTEN: u64 = 0;
const TAG_IN: u64 = 1 << 32;
const TAG_OUT: u64 = 2 << 32;

struct Out {
    sa: libc::sockaddr_in,
    st: Mutex<OutState>,
}

#[derive(Default)]
struct OutState {
    fd: Option<i32>,
    connecting: bool,
    /// Frames not yet written, the first `sent` bytes of the front one written.
    queue: VecDeque<Vec<u8>>,
    sent: usize,
    queued: usize,
    /// The socket is in the epoll set (from its connection on: for EPOLLRDHUP).
    registered: bool,
    /// Watched for EPOLLOUT too (connecting, or bytes queued).
    watched: bool,
    failed: bool,
}

struct In {
    fd: i32,
    buf: Mutex<InBuf>,
}

struct InBuf {
    data: Vec<u8>,
    start: usize,
    end: usize,
    closed: bool,
}

pub struct Sock {
    listen: i32,
    epfd: i32,
    name: [u8; NAME_LEN],
    outs: RwLock<Vec<Arc<Out>>>,
    by_name: Mutex<HashMap<[u8; NAME_LEN], usize>>,
    ins: Mutex<HashMap<i32, Arc<In>>>,
    /// Addresses that failed and were not reported yet (see `poll`).
    failed: Mutex<Vec<u64>>,
    /// Most bytes one address had queued at once (see [`Sock::most_queued`]).
    most_queued: std::sync::atomic::AtomicUsize,
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

fn os_err() -> crate::Error {
    crate::Error::Os(errno())
}

fn set_nodelay(fd: i32) {
    let one: libc::c_int = 1;
    // SAFETY: a socket of ours; a valid option value.
    unsafe { libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, &one as *const _ as *const c_void, std::mem::size_of::<libc::c_int>() as libc::socklen_t) };
}

fn epoll(epfd: i32, op: i32, fd: i32, events: u32, data: u64) -> bool {
    let mut ev = libc::epoll_event { events, u64: data };
    // SAFETY: our epoll set and a socket of ours.
    unsafe { libc::epoll_ctl(epfd, op, fd, &mut ev) == 0 }
}

/// What an outgoing connection shows when its peer is gone: the peer closed it (a process
/// closes its received connections only when it ends, or drops one that spoke no frames),
/// or it broke.
const HUNG_UP: u32 = (libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32;

/// The IPv4 address to listen on: loopback when every rank is on this machine or
/// `FI_TCP_IFACE` names `lo` (as libfabric's tcp provider reads it), else the address of
/// the interface it names, else that of the first interface that is up and not loopback.
fn local_ip(loopback: bool) -> u32 {
    let lo = u32::from_be_bytes([127, 0, 0, 1]);
    let want = crate::env::raw("FI_TCP_IFACE").unwrap_or_default();
    if loopback || want == "lo" {
        return lo;
    }
    let mut ifs: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a list we free below.
    if unsafe { libc::getifaddrs(&mut ifs) } != 0 {
        return lo;
    }
    let mut found = None;
    let mut p = ifs;
    while !p.is_null() {
        // SAFETY: an entry of the list getifaddrs made.
        let i = unsafe { &*p };
        p = i.ifa_next;
        if i.ifa_addr.is_null() || i.ifa_flags & libc::IFF_UP as u32 == 0 {
            continue;
        }
        // SAFETY: ifa_addr points to a sockaddr whose family says its type.
        if unsafe { (*i.ifa_addr).sa_family } as i32 != libc::AF_INET {
            continue;
        }
        // SAFETY: an AF_INET address, and a NUL-terminated name.
        let (ip, name) = unsafe { (u32::from_be((*(i.ifa_addr as *const libc::sockaddr_in)).sin_addr.s_addr), std::ffi::CStr::from_ptr(i.ifa_name).to_string_lossy().into_owned()) };
        if !want.is_empty() {
            if name == want {
                found = Some(ip);
                break;
            }
        } else if i.ifa_flags & libc::IFF_LOOPBACK as u32 == 0 && found.is_none() {
            found = Some(ip);
        }
    }
    // SAFETY: the list getifaddrs made.
    unsafe { libc::freeifaddrs(ifs) };
    found.unwrap_or(lo)
}

fn sockaddr(name: &[u8]) -> Option<libc::sockaddr_in> {
    let n: [u8; NAME_LEN] = name.try_into().ok()?;
    if u16::from_le_bytes([n[0], n[1]]) as i32 != libc::AF_INET {
        return None;
    }
    // SAFETY: all-zero is a valid sockaddr_in.
    let mut sa: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    sa.sin_family = libc::AF_INET as libc::sa_family_t;
    sa.sin_port = u16::from_be_bytes([n[2], n[3]]).to_be();
    sa.sin_addr.s_addr = u32::from_be_bytes([n[4], n[5], n[6], n[7]]).to_be();
    Some(sa)
}

impl Sock {
    /// Listens on an ephemeral port (see [`local_ip`] for the address).
    pub fn open(loopback: bool) -> crate::Result<Sock> {
        // SAFETY: plain socket calls on descriptors we own; each failure closes them.
        unsafe {
            let listen = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0);
            if listen < 0 {
                return Err(os_err());
            }
            let mut sa: libc::sockaddr_in = std::mem::zeroed();
            sa.sin_family = libc::AF_INET as libc::sa_family_t;
            sa.sin_addr.s_addr = local_ip(loopback).to_be();
            let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            if libc::bind(listen, &sa as *const _ as *const libc::sockaddr, len) != 0 || libc::listen(listen, 1024) != 0 {
                let e = os_err();
                libc::close(listen);
                return Err(e);
            }
            let mut got_len = len;
            if libc::getsockname(listen, &mut sa as *mut _ as *mut libc::sockaddr, &mut got_len) != 0 {
                let e = os_err();
                libc::close(listen);
                return Err(e);
            }
            let epfd = libc::epoll_create1(libc::EPOLL_CLOEXEC);
            if epfd < 0 || !epoll(epfd, libc::EPOLL_CTL_ADD, listen, libc::EPOLLIN as u32, TAG_LISTEN) {
                let e = os_err();
                libc::close(listen);
                if epfd >= 0 {
                    libc::close(epfd);
                }
                return Err(e);
            }
            let mut name = [0u8; NAME_LEN];
            name[0..2].copy_from_slice(&(libc::AF_INET as u16).to_le_bytes());
            name[2..4].copy_from_slice(&u16::from_be(sa.sin_port).to_be_bytes());
            name[4..8].copy_from_slice(&u32::from_be(sa.sin_addr.s_addr).to_be_bytes());
            Ok(Sock { listen, epfd, name, outs: RwLock::new(Vec::new()), by_name: Mutex::new(HashMap::new()), ins: Mutex::new(HashMap::new()), failed: Mutex::new(Vec::new()), most_queued: std::sync::atomic::AtomicUsize::new(0) })
        }
    }

    /// Our address, as peers insert it.
    pub fn name(&self) -> Vec<u8> {
        self.name.to_vec()
    }

    /// The level-triggered epoll set a sleeper waits on: readable while anything can be
    /// read, accepted or written.
    pub fn wait_fd(&self) -> i32 {
        self.epfd
    }

    /// The handle of address `name` (the same one for the same name); `InvalidArg` for a
    /// name that is not one of ours.
    pub fn insert(&self, name: &[u8]) -> crate::Result<u64> {
        let sa = sockaddr(name).ok_or(crate::Error::InvalidArg)?;
        let key: [u8; NAME_LEN] = name.try_into().map_err(|_| crate::Error::InvalidArg)?;
        let mut by = self.by_name.lock().unwrap_or_else(|e| e.into_inner());
        let mut outs = self.outs.write().unwrap_or_else(|e| e.into_inner());
        if let Some(&i) = by.get(&key) {
            // A name whose connection failed may be another process's now (its port
            // reused): a new handle, connected afresh; the old one stays failed.
            if !outs[i].st.lock().unwrap_or_else(|e| e.into_inner()).failed {
                return Ok(i as u64);
            }
        }
        outs.push(Arc::new(Out { sa, st: Mutex::new(OutState::default()) }));
        by.insert(key, outs.len() - 1);
        Ok((outs.len() - 1) as u64)
    }

    fn out(&self, addr: u64) -> Option<Arc<Out>> {
        self.outs.read().unwrap_or_else(|e| e.into_inner()).get(addr as usize).cloned()
    }

    /// Bytes queued for `addr` that its socket has not taken yet.
    pub fn backlog(&self, addr: u64) -> usize {
        self.out(addr).map_or(0, |o| o.st.lock().unwrap_or_else(|e| e.into_inner()).queued)
    }

    /// The most bytes one address had queued at once so far (each a copy of ours that
    /// the socket could not take when it was sent).
    pub fn most_queued(&self) -> usize {
        self.most_queued.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sends `msg` to `addr` as one frame: written now as far as the socket takes it,
    /// the rest queued (and written by whoever polls).
    pub fn send(&self, addr: u64, msg: &[u8]) -> Result<(), SendError> {
        self.send_parts(addr, &[msg])
    }

    /// [`Sock::send`] of the message made of `parts` in turn, gathered by the system call
    /// (a bulk put's data goes from the caller's buffer to the socket, no copy of ours
    /// unless the socket cannot take it all now).
    pub fn send_parts(&self, addr: u64, parts: &[&[u8]]) -> Result<(), SendError> {
        self.send_frames(addr, &[parts])
    }

    /// Sends several messages to `addr` in one system call, each its own frame made of
    /// its parts in turn, in this order (the engine's held replies riding in front of a
    /// request: one send instead of several).  All or nothing: a frame too long fails the
    /// whole call before anything is written.
    pub fn send_frames(&self, addr: u64, frames: &[&[&[u8]]]) -> Result<(), SendError> {
        let lens: Vec<usize> = frames.iter().map(|f| f.iter().map(|p| p.len()).sum()).collect();
        if lens.iter().any(|&l| l > MAX_FRAME) {
            return Err(SendError::Failed);
        }
        let total: usize = lens.iter().map(|l| 4 + l).sum();
        let out = self.out(addr).ok_or(SendError::Failed)?;
        let mut st = out.st.lock().unwrap_or_else(|e| e.into_inner());
        if st.failed {
            return Err(SendError::Failed);
        }
        if st.queued > QUEUE_MAX {
            return Err(SendError::Again);
        }
        let fd = match st.fd {
            Some(fd) => fd,
            None => self.connect(addr, &out, &mut st)?,
        };
        let hdrs: Vec<[u8; 4]> = lens.iter().map(|&l| (l as u32).to_le_bytes()).collect();
        // Every piece of every frame in order, length headers included.
        let pieces = || hdrs.iter().zip(frames.iter()).flat_map(|(h, f)| std::iter::once(&h[..]).chain(f.iter().copied()));
        let mut written = 0usize;
        if st.queue.is_empty() && !st.connecting {
            let mut iov: Vec<libc::iovec> = pieces().filter(|p| !p.is_empty()).map(|p| libc::iovec { iov_base: p.as_ptr() as *mut c_void, iov_len: p.len() }).collect();
            // More pieces than one sendmsg takes (IOV_MAX): gathered into one buffer here.
            let joined: Vec<u8>;
            if iov.len() > IOV_MAX {
                joined = pieces().flatten().copied().collect();
                iov = vec![libc::iovec { iov_base: joined.as_ptr() as *mut c_void, iov_len: joined.len() }];
            }
            // SAFETY: a connected socket of ours; every buffer lives across the call.
            let n = unsafe { crate::cancel::sys::send_vectors(fd, iov.as_ptr(), iov.len()) };
            if n < 0 {
                let e = errno();
                if e != libc::EAGAIN && e != libc::EINTR {
                    self.fail(addr, &mut st);
                    return Err(SendError::Failed);
                }
            } else {
                written = n as usize;
            }
            if written == total {
                return Ok(());
            }
        }
        // What the socket did not take, copied: the bytes from `written` on.
        let mut rest = Vec::with_capacity(total - written);
        let mut skip = written;
        for p in pieces() {
            if skip >= p.len() {
                skip -= p.len();
                continue;
            }
            rest.extend_from_slice(&p[skip..]);
            skip = 0;
        }
        st.queued += rest.len();
        self.most_queued.fetch_max(st.queued, std::sync::atomic::Ordering::Relaxed);
        st.queue.push_back(rest);
        if !st.watched {
            self.watch(addr, fd, &mut st, true);
        }
        Ok(())
    }

    /// Sets what the epoll set watches on `addr`'s socket `fd`: its peer hanging up
    /// always (so that a peer that ended fails its address at once, not when a request's
    /// reply times out), room to write when `out`.
    fn watch(&self, addr: u64, fd: i32, st: &mut OutState, out: bool) {
        let events = libc::EPOLLRDHUP as u32 | if out { libc::EPOLLOUT as u32 } else { 0 };
        let op = if st.registered { libc::EPOLL_CTL_MOD } else { libc::EPOLL_CTL_ADD };
        if epoll(self.epfd, op, fd, events, TAG_OUT | addr) {
            st.registered = true;
            st.watched = out;
        }
    }

    /// Starts the connection of `addr` (without waiting for it).
    fn connect(&self, addr: u64, out: &Out, st: &mut OutState) -> Result<i32, SendError> {
        // SAFETY: a socket of ours, connected to a sockaddr_in we built.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0);
            if fd < 0 {
                return Err(SendError::Again);
            }
            set_nodelay(fd);
            let rc = libc::connect(fd, &out.sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t);
            st.fd = Some(fd);
            if rc != 0 {
                let e = errno();
                if e != libc::EINPROGRESS && e != libc::EINTR {
                    self.fail(addr, st);
                    return Err(SendError::Failed);
                }
                st.connecting = true;
            }
            let connecting = st.connecting;
            self.watch(addr, fd, st, connecting);
            Ok(fd)
        }
    }

    /// Marks `addr` failed: its socket closed, its queue dropped, the failure to report.
    fn fail(&self, addr: u64, st: &mut OutState) {
        if let Some(fd) = st.fd.take() {
            // SAFETY: our socket, closed once (taken out of the state).
            unsafe {
                if st.registered {
                    epoll(self.epfd, libc::EPOLL_CTL_DEL, fd, 0, 0);
                }
                libc::close(fd);
            }
        }
        st.registered = false;
        st.watched = false;
        st.connecting = false;
        st.queue.clear();
        st.queued = 0;
        st.sent = 0;
        if !st.failed {
            st.failed = true;
            self.failed.lock().unwrap_or_else(|e| e.into_inner()).push(addr);
        }
    }

    /// Writes what `addr` has queued, as far as its socket takes it (after its
    /// connection completed, or failed).
    fn flush(&self, addr: u64) {
        let Some(out) = self.out(addr) else { return };
        // Waited for, not tried: the set stays ready until the bytes are written, and a
        // progress thread that only tried would spin at real-time priority over the
        // sender it preempted (senders never poll while they hold this lock).
        let mut st = out.st.lock().unwrap_or_else(|e| e.into_inner());
        let Some(fd) = st.fd else { return };
        if st.connecting {
            let mut err: libc::c_int = 0;
            let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
            // SAFETY: our socket; a valid out buffer.
            unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_ERROR, &mut err as *mut _ as *mut c_void, &mut len) };
            if err != 0 {
                self.fail(addr, &mut st);
                return;
            }
            st.connecting = false;
        }
        while let Some(front) = st.queue.front() {
            let off = st.sent;
            // SAFETY: our socket; the bytes live across the call.
            let iov = libc::iovec { iov_base: front[off..].as_ptr() as *mut c_void, iov_len: front.len() - off };
            let n = unsafe { crate::cancel::sys::send_vectors(fd, &iov, 1) };
            if n < 0 {
                let e = errno();
                if e == libc::EAGAIN || e == libc::EINTR {
                    return;
                }
                self.fail(addr, &mut st);
                return;
            }
            let n = n as usize;
            if off + n < front.len() {
                st.sent += n;
                return;
            }
            let len = front.len();
            st.queue.pop_front();
            st.sent = 0;
            st.queued -= len;
        }
        if st.watched {
            self.watch(addr, fd, &mut st, false);
        }
    }

    /// `addr`'s peer hung up its end of our connection: the address fails (its peers are
    /// gone; what was queued for them would never be read).
    fn hung_up(&self, addr: u64) {
        let Some(out) = self.out(addr) else { return };
        let mut st = out.st.lock().unwrap_or_else(|e| e.into_inner());
        if st.fd.is_some() {
            self.fail(addr, &mut st);
        }
    }

    /// Serves what is ready now without sleeping: accepts connections, writes queued
    /// bytes, reads connections and hands each whole message to `deliver` (in order per
    /// connection), and reports each address that failed since the last call to
    /// `failed`.  True when it did anything.
    pub fn poll(&self, mut deliver: impl FnMut(&[u8]), mut failed: impl FnMut(u64)) -> bool {
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 16];
        // SAFETY: our epoll set; events into our buffer.
        let n = unsafe { libc::epoll_wait(self.epfd, evs.as_mut_ptr(), evs.len() as i32, 0) };
        let mut did = false;
        for ev in &evs[..n.max(0) as usize] {
            let data = ev.u64;
            match data & !0xffff_ffff {
                TAG_LISTEN => did |= self.accept(),
                TAG_IN => did |= self.read_in(data as u32 as i32, &mut deliver),
                TAG_OUT if ev.events & HUNG_UP != 0 => {
                    self.hung_up(data & 0xffff_ffff);
                    did = true;
                }
                TAG_OUT => {
                    self.flush(data & 0xffff_ffff);
                    did = true;
                }
                _ => {}
            }
        }
        let gone: Vec<u64> = std::mem::take(&mut *self.failed.lock().unwrap_or_else(|e| e.into_inner()));
        for a in gone {
            failed(a);
            did = true;
        }
        did
    }

    fn accept(&self) -> bool {
        let mut any = false;
        loop {
            // SAFETY: our listening socket; no peer address wanted.
            let fd = unsafe { libc::accept4(self.listen, std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) };
            if fd < 0 {
                return any;
            }
            any = true;
            set_nodelay(fd);
            let c = Arc::new(In { fd, buf: Mutex::new(InBuf { data: Vec::new(), start: 0, end: 0, closed: false }) });
            self.ins.lock().unwrap_or_else(|e| e.into_inner()).insert(fd, c);
            if !epoll(self.epfd, libc::EPOLL_CTL_ADD, fd, libc::EPOLLIN as u32, TAG_IN | fd as u32 as u64) {
                self.close_in(fd);
            }
        }
    }

    fn close_in(&self, fd: i32) {
        if self.ins.lock().unwrap_or_else(|e| e.into_inner()).remove(&fd).is_some() {
            // SAFETY: our socket, removed from the map: closed once.
            unsafe {
                epoll(self.epfd, libc::EPOLL_CTL_DEL, fd, 0, 0);
                libc::close(fd);
            }
        }
    }

    /// Reads connection `fd` (if no other thread is) and hands over its whole messages.
    fn read_in(&self, fd: i32, deliver: &mut impl FnMut(&[u8])) -> bool {
        let Some(c) = self.ins.lock().unwrap_or_else(|e| e.into_inner()).get(&fd).cloned() else { return false };
        // Waited for (as in `flush`: readiness that nobody consumes would make a real-time
        // progress thread spin over the reader it preempted), except by a thread that is
        // itself handing messages over (a handler's send that polls): it skips the
        // connection rather than wait for itself.
        let mut b = if DELIVERING.with(|d| d.get()) > 0 {
            match c.buf.try_lock() {
                Ok(b) => b,
                Err(_) => return false,
            }
        } else {
            c.buf.lock().unwrap_or_else(|e| e.into_inner())
        };
        if b.closed {
            return false;
        }
        let mut got = false;
        loop {
            // Room to read into.  The unread bytes (at most a frame's worth) move to the
            // front only when little room is left behind them: with a buffer of several
            // frames that is once per several frames, not once per read (a bulk put's
            // frames are a little longer than a read, so each read would have moved most
            // of one: a copy of its data more).  It grows when the frame being read would
            // not fit (to READ_BUF at least for a long one): a connection that carries
            // only short messages keeps a buffer of a chunk or two.
            if b.data.len() - b.end < READ_CHUNK {
                let (s, e) = (b.start, b.end);
                b.data.copy_within(s..e, 0);
                b.end -= s;
                b.start = 0;
                let want = (b.end + READ_CHUNK).max(b.data.len());
                if want > b.data.len() {
                    b.data.resize(want, 0);
                }
            }
            let end = b.end;
            let room = b.data.len() - end;
            // SAFETY: our socket; reads into our buffer's free part.
            let n = unsafe { crate::cancel::sys::read(c.fd, b.data[end..].as_mut_ptr() as *mut c_void, room) };
            if n > 0 {
                b.end += n as usize;
                got = true;
            }
            // Less than asked for: the socket is drained (another read would say EAGAIN;
            // the level-triggered set reports what arrives later).
            let drained = n > 0 && (n as usize) < room;
            // Hand over every whole frame now in the buffer.
            loop {
                let avail = b.end - b.start;
                if avail < 4 {
                    break;
                }
                let s = b.start;
                let len = u32::from_le_bytes([b.data[s], b.data[s + 1], b.data[s + 2], b.data[s + 3]]) as usize;
                if len > MAX_FRAME {
                    crate::sn_debug!("network engine", "a connection sent a frame of {} bytes: closed", len);
                    b.closed = true;
                    drop(b);
                    self.close_in(fd);
                    return true;
                }
                if avail < 4 + len {
                    // The whole frame must fit behind its start, with a chunk's room to
                    // spare so that reading it does not move it: moved to the front if
                    // not (once per buffer's worth), the buffer grown if not even there.
                    if b.data.len() < b.start + 4 + len + READ_CHUNK {
                        let e = b.end;
                        b.data.copy_within(s..e, 0);
                        b.end -= s;
                        b.start = 0;
                        if b.data.len() < 4 + len + READ_CHUNK {
                            b.data.resize((4 + len + READ_CHUNK).max(READ_BUF), 0);
                        }
                    }
                    break;
                }
                DELIVERING.with(|d| d.set(d.get() + 1));
                deliver(&b.data[s + 4..s + 4 + len]);
                DELIVERING.with(|d| d.set(d.get() - 1));
                b.start += 4 + len;
            }
            if n == 0 || (n < 0 && errno() != libc::EAGAIN && errno() != libc::EINTR) {
                // The peer closed its side (or the connection broke): nothing more comes.
                b.closed = true;
                drop(b);
                self.close_in(fd);
                return true;
            }
            if n < 0 || drained {
                return got;
            }
        }
    }
}

/// Sends `msg` to the process at `name` on a connection of its own and closes it (for
/// tests that play a process outside the job); waits up to `within` for the connection.
pub fn send_once(name: &[u8], msg: &[u8], within: Duration) -> crate::Result<()> {
    let sa = sockaddr(name).ok_or(crate::Error::InvalidArg)?;
    // SAFETY: a blocking socket of ours, closed before returning.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(os_err());
        }
        let deadline = Instant::now() + within;
        let r = loop {
            if libc::connect(fd, &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t) == 0 {
                break Ok(());
            }
            if Instant::now() >= deadline {
                break Err(os_err());
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let r = r.and_then(|()| {
            let mut frame = (msg.len() as u32).to_le_bytes().to_vec();
            frame.extend_from_slice(msg);
            let mut off = 0;
            while off < frame.len() {
                let n = libc::send(fd, frame[off..].as_ptr() as *const c_void, frame.len() - off, libc::MSG_NOSIGNAL);
                if n <= 0 {
                    return Err(os_err());
                }
                off += n as usize;
            }
            Ok(())
        });
        libc::close(fd);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Polls `s` (and the senders `also`, whose queued bytes their polls write; nothing
    /// may arrive for them) until `s` received `want` messages.
    fn drain(s: &Sock, also: &[&Sock], want: usize, out: &mut Vec<Vec<u8>>) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while out.len() < want {
            assert!(Instant::now() < deadline, "only {} of {} messages", out.len(), want);
            for o in also {
                o.poll(|_| panic!("a sender received something"), |a| panic!("address {a} failed"));
            }
            s.poll(|m| out.push(m.to_vec()), |a| panic!("address {a} failed"));
        }
    }

    #[test]
    fn messages_arrive_whole_and_in_order() {
        let a = Sock::open(true).unwrap();
        let b = Sock::open(true).unwrap();
        let to_b = a.insert(&b.name()).unwrap();
        assert_eq!(a.insert(&b.name()).unwrap(), to_b, "one handle per name");
        // Sizes from empty to larger than a socket takes at once (queued, then written
        // by polling), each with its own pattern.
        let sizes = [0usize, 1, 7, 4096, 300_000, 3 << 20, 5, 65_536];
        for (k, &n) in sizes.iter().enumerate() {
            let m: Vec<u8> = (0..n).map(|i| (i * 31 + k * 7) as u8).collect();
            loop {
                match a.send(to_b, &m) {
                    Ok(()) => break,
                    Err(SendError::Again) => {
                        a.poll(|_| {}, |_| {});
                    }
                    Err(e) => panic!("{e:?}"),
                }
            }
        }
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        while got.len() < sizes.len() {
            assert!(Instant::now() < deadline);
            a.poll(|_| panic!("a received something"), |x| panic!("{x} failed"));
            b.poll(|m| got.push(m.to_vec()), |x| panic!("{x} failed"));
        }
        for (k, &n) in sizes.iter().enumerate() {
            assert_eq!(got[k].len(), n, "message {k}");
            assert!(got[k].iter().enumerate().all(|(i, &v)| v == (i * 31 + k * 7) as u8), "message {k} bytes");
        }
    }

    #[test]
    fn both_directions_and_a_third_process() {
        let a = Sock::open(true).unwrap();
        let b = Sock::open(true).unwrap();
        let c = Sock::open(true).unwrap();
        let ab = a.insert(&b.name()).unwrap();
        let ba = b.insert(&a.name()).unwrap();
        let cb = c.insert(&b.name()).unwrap();
        a.send(ab, b"from a").unwrap();
        c.send(cb, b"from c").unwrap();
        b.send(ba, b"to a").unwrap();
        let (mut at_a, mut at_b) = (Vec::new(), Vec::new());
        let deadline = Instant::now() + Duration::from_secs(10);
        while at_a.len() + at_b.len() < 3 {
            assert!(Instant::now() < deadline, "{} at a, {} at b", at_a.len(), at_b.len());
            a.poll(|m| at_a.push(m.to_vec()), |x| panic!("{x} failed"));
            b.poll(|m| at_b.push(m.to_vec()), |x| panic!("{x} failed"));
            c.poll(|_| panic!("c received something"), |x| panic!("{x} failed"));
        }
        at_b.sort();
        assert_eq!(at_b, vec![b"from a".to_vec(), b"from c".to_vec()]);
        assert_eq!(at_a, vec![b"to a".to_vec()]);
    }

    #[test]
    fn a_closed_peer_fails_its_address_once() {
        let a = Sock::open(true).unwrap();
        let name = {
            let b = Sock::open(true).unwrap();
            let n = b.name();
            // SAFETY: closing b's listening socket (b is dropped right after; its fds leak).
            unsafe { libc::close(b.listen) };
            n
        };
        let to = a.insert(&name).unwrap();
        // Refused at once or when the connection completes.
        let first = a.send(to, b"x");
        let mut failed = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while failed.is_empty() && Instant::now() < deadline {
            a.poll(|_| {}, |x| failed.push(x));
        }
        assert!(first == Err(SendError::Failed) || first.is_ok());
        assert_eq!(failed, vec![to]);
        assert_eq!(a.send(to, b"y"), Err(SendError::Failed));
        a.poll(|_| {}, |x| panic!("{x} reported twice"));
        // The name inserted again (a new process may listen there now): a new handle.
        let again = a.insert(&name).unwrap();
        assert_ne!(again, to);
        assert_eq!(a.send(to, b"z"), Err(SendError::Failed), "the old handle stays failed");
    }

    #[test]
    fn garbage_closes_only_its_connection() {
        let b = Sock::open(true).unwrap();
        let a = Sock::open(true).unwrap();
        let ab = a.insert(&b.name()).unwrap();
        // A frame claiming more than MAX_FRAME bytes, from outside.
        send_once(&b.name(), &[], Duration::from_secs(5)).unwrap();
        let mut bad = ((MAX_FRAME + 1) as u32).to_le_bytes().to_vec();
        bad.extend_from_slice(&[0u8; 16]);
        // SAFETY: a blocking socket written once and closed.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
            let sa = sockaddr(&b.name()).unwrap();
            assert_eq!(libc::connect(fd, &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t), 0);
            libc::write(fd, bad.as_ptr() as *const c_void, bad.len());
            libc::close(fd);
        }
        a.send(ab, b"still fine").unwrap();
        let mut got = Vec::new();
        drain(&b, &[&a], 2, &mut got);
        assert!(got.contains(&Vec::new()), "send_once's empty message");
        assert!(got.contains(&b"still fine".to_vec()));
    }

    #[test]
    fn a_message_in_parts_arrives_as_one() {
        let a = Sock::open(true).unwrap();
        let b = Sock::open(true).unwrap();
        let ab = a.insert(&b.name()).unwrap();
        let big: Vec<u8> = (0..(2 << 20)).map(|i| (i % 251) as u8).collect();
        a.send_parts(ab, &[b"head", &[], &big, b"tail"]).unwrap();
        a.send_parts(ab, &[b"x", b"y"]).unwrap();
        let mut got = Vec::new();
        drain(&b, &[&a], 2, &mut got);
        let mut want = b"head".to_vec();
        want.extend_from_slice(&big);
        want.extend_from_slice(b"tail");
        assert!(got[0] == want, "the gathered message, {} bytes", got[0].len());
        assert_eq!(got[1], b"xy".to_vec());
    }

    /// Several messages in one send arrive as they would one send each, in order: a
    /// few (the engine's held replies in front of a request), more pieces than one
    /// sendmsg takes (gathered into one buffer then), and a frame too long refuses the
    /// whole call before anything is written.
    #[test]
    fn frames_of_one_send_arrive_as_messages_in_order() {
        let a = Sock::open(true).unwrap();
        let b = Sock::open(true).unwrap();
        let ab = a.insert(&b.name()).unwrap();
        a.send_frames(ab, &[&[b"r1"], &[b"r2", b"!"], &[b"req", &[], b"uest"]]).unwrap();
        let many: Vec<Vec<u8>> = (0..3 * IOV_MAX as u32).map(|i| i.to_le_bytes().to_vec()).collect();
        let parts: Vec<[&[u8]; 1]> = many.iter().map(|m| [&m[..]]).collect();
        let frames: Vec<&[&[u8]]> = parts.iter().map(|p| &p[..]).collect();
        a.send_frames(ab, &frames).unwrap();
        let huge = vec![0u8; MAX_FRAME + 1];
        assert_eq!(a.send_frames(ab, &[&[b"never"], &[&huge]]), Err(SendError::Failed));
        a.send(ab, b"last").unwrap();
        let mut got = Vec::new();
        drain(&b, &[&a], 3 + many.len() + 1, &mut got);
        assert_eq!(got[..3], [b"r1".to_vec(), b"r2!".to_vec(), b"request".to_vec()]);
        assert!(got[3..3 + many.len()] == many[..], "the many frames, in order");
        assert_eq!(got[3 + many.len()], b"last".to_vec());
    }

    /// A poll that finds a connection ready while another thread reads it waits for
    /// that thread instead of returning at once: a real-time progress thread that
    /// returned would find the set ready again and spin over the reader it preempted.
    #[test]
    fn a_poll_waits_for_the_reader_of_a_busy_connection() {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let a = Sock::open(true).unwrap();
        let b = Arc::new(Sock::open(true).unwrap());
        let ab = a.insert(&b.name()).unwrap();
        a.send(ab, b"first").unwrap();
        let inside = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let reader = {
            let (b, inside, done) = (b.clone(), inside.clone(), done.clone());
            std::thread::spawn(move || {
                let mut got = Vec::new();
                let deadline = Instant::now() + Duration::from_secs(10);
                while got.is_empty() && Instant::now() < deadline {
                    b.poll(
                        |m| {
                            got.push(m.to_vec());
                            inside.store(true, Ordering::SeqCst);
                            std::thread::sleep(Duration::from_millis(400)); // holding the connection
                            done.store(true, Ordering::SeqCst);
                        },
                        |_| {},
                    );
                }
                got
            })
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !inside.load(Ordering::SeqCst) {
            assert!(Instant::now() < deadline, "the reader never got the first message");
            a.poll(|_| {}, |_| {});
        }
        // More for the busy connection while its reader holds it.
        a.send(ab, b"second").unwrap();
        let polls = AtomicUsize::new(0);
        let mut second = Vec::new();
        while !done.load(Ordering::SeqCst) {
            a.poll(|_| {}, |_| {});
            b.poll(|m| second.push(m.to_vec()), |_| {});
            polls.fetch_add(1, Ordering::SeqCst);
        }
        assert_eq!(reader.join().unwrap(), vec![b"first".to_vec()]);
        assert!(polls.load(Ordering::SeqCst) <= 3, "{} polls returned while the connection was busy", polls.load(Ordering::SeqCst));
        let deadline = Instant::now() + Duration::from_secs(10);
        while second.is_empty() && Instant::now() < deadline {
            a.poll(|_| {}, |_| {});
            b.poll(|m| second.push(m.to_vec()), |_| {});
        }
        assert_eq!(second, vec![b"second".to_vec()]);
    }

    #[test]
    fn names_that_are_not_addresses_are_refused() {
        let a = Sock::open(true).unwrap();
        assert_eq!(a.insert(b"short"), Err(crate::Error::InvalidArg));
        assert_eq!(a.insert(&[9u8; NAME_LEN]), Err(crate::Error::InvalidArg));
        assert_eq!(a.send(99, b"x"), Err(SendError::Failed));
    }
}
