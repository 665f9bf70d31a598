//! The one-sided engine: put, get, atomics and remote events on a peer's memory.
//!
//! Every operation completes without the target calling the library: the initiator maps
//! the target's memory (backings listed in its control segment, see [`crate::node`]) and
//! uses plain loads/stores and hardware atomics on it.  The target may be asleep or
//! spinning on the very word being written.
//!
//! **Validation first, then act.**  Each operation checks, in this order, and touches
//! nothing when a check fails: the key names a live registration of that generation
//! (`InvalidHandle` for an index out of range, `StaleHandle` otherwise), the access lies
//! inside it (`OutOfBounds`, also for wrapping addresses), a write is allowed
//! (`Permission`), the protection-domain key matches (`ProtectionDomain`).  A peer that has
//! exited gives `PeerDead`.  The registration row is read seqlock-style (generation before
//! and after), so a concurrent deregistration is seen as `StaleHandle`; an operation that
//! already passed validation when the target deregisters completes into the old pages,
//! as it would on a NIC.
//!
//! **Ordering.**  Puts and atomics are synchronous stores issued by the initiator's CPU,
//! so two operations from one initiator to one target are seen by the target in issue
//! order.  A remote event ([`post_event`]) publishes its ring entry with a Release store
//! (inside [`Ring::push`]); a target that takes the entry with the ring's Acquire load sees
//! all data the initiator put before posting.  That is sufficient on one machine.
//!
//! **Peer death.**  A peer's life lock ([`crate::node::LIFE_OFF`]: a robust mutex its
//! setup thread holds for life, whose word the kernel marks when that thread dies) is
//! read on every operation: while it shows a live owner the peer is alive, for the price
//! of one load.  Otherwise (the peer died, or its setup thread ended before it) the peer
//! is probed through a pidfd, at most every [`DEATH_CHECK_NS`] as told by the coarse
//! monotonic clock: an operation issued later than [`death_detect_bound`] after the peer
//! died fails with `PeerDead` (in practice at once: a peer whose lock was clean until it
//! died is probed on the first operation after); one issued sooner completes into the dead process's
//! memory (which we still map), like a packet in flight.  Nothing ever blocks on a dead
//! peer.
//!
//! **Fallback regions** (pages that could not be rebound, see [`crate::mem`]): put/get use
//! `process_vm_writev/readv`; atomics return `Err(Unsupported)`.
//!
//! **Pins.**  A channel that writes the same place again and again (uGNI's SMSG mailboxes
//! and their event ring) validates it once ([`Pinned`], [`PinnedRing`]) and re-checks per
//! use only that the registration and backing rows still carry the pinned generations and
//! the local mapping is the same; any change makes the use fail with `StaleHandle`, and the
//! caller falls back to the per-operation path above, which reports the exact error.

use crate::atomic::{self, AmoOp, AmoWidth};
use crate::mem::{MemKey, RingLoc};
use crate::node::{self, Ctl, PeerRef, CTL_LEN, FREE, LIVE, NO_BACKING};
use crate::net;
use crate::registry::ProcId;
use crate::ring::{Pod, Ring};
use crate::shm::{self, Mapping};
use crate::wait::now_ns;
use crate::{Error, Result};
use std::collections::HashMap;
use std::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Minimum interval between two liveness probes of one peer.
pub const DEATH_CHECK_NS: u64 = 100_000;

/// Where a peer backing of one generation is mapped here.  Published through
/// `Peer::fast` and never freed before the Peer (readers hold plain pointers to it).
struct Cached {
    gen: u32,
    base: u64,
    len: u64,
    ptr: *mut u8,
}

/// The slow-path side of the backing cache (under `Peer::backs`).
#[derive(Default)]
struct Backs {
    /// The mapping of each backing row's current `Cached` (None for our own memory, used
    /// in place); replaced, and the old one unmapped, when the row changes generation.
    maps: Vec<Option<Mapping>>,
    /// Every `Cached` ever published (small; kept until the Peer goes).
    owned: Vec<Box<Cached>>,
    /// The rows of the peer's backing table that are not FREE, in row order, as they were
    /// when its invalidation count read `index_count` ([`Peer::find_backing`]).
    index: Vec<BackRow>,
    index_count: Option<u64>,
}

/// A backing row as [`Peer::find_backing`] needs it.
#[derive(Clone, Copy)]
struct BackRow {
    base: u64,
    len: u64,
    row: u32,
    live: bool,
}

/// A resolved other process (or this one).
pub struct Peer {
    r: PeerRef,
    is_self: bool,
    _ctl_map: Option<Mapping>,
    ctl: Ctl,
    pidfd: i32,
    dead: AtomicBool,
    last_check: AtomicU64,
    /// The peer's life lock showed a dead owner while the peer lived on (its setup thread
    /// ended): liveness is probed by time instead.
    life_lock_useless: AtomicBool,
    /// Mappings of the peer's backings, indexed by backing row: the lock-free read side
    /// (null or a `Cached` owned by `backs`) and the mutex-protected write side.
    fast: Box<[AtomicPtr<Cached>]>,
    backs: Mutex<Backs>,
    /// Set for a process reached through the network engine: every operation is then a
    /// request to it (see [`crate::net`]), and nothing above (`ctl`, backings) is used.
    net: Option<Arc<net::Remote>>,
}

// SAFETY: the raw pointers in the cache point into mappings the Peer owns (or into our
// own registered memory); all mutable state is behind the mutex or atomic.
unsafe impl Send for Peer {}
unsafe impl Sync for Peer {}

impl Drop for Peer {
    fn drop(&mut self) {
        if self.pidfd >= 0 {
            // Our descriptor.
            crate::cancel::sys::close(self.pidfd);
        }
    }
}

fn empty_fast() -> Box<[AtomicPtr<Cached>]> {
    (0..node::NBACK).map(|_| AtomicPtr::new(std::ptr::null_mut())).collect()
}

/// How long after a peer's death operations on it may still be issued successfully:
/// [`DEATH_CHECK_NS`] plus the coarse clock's tick (4 ms at 250 Hz).
pub fn death_detect_bound() -> std::time::Duration {
    let mut res = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid out pointer.
    unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut res) };
    let tick = (res.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(res.tv_nsec as u64);
    std::time::Duration::from_nanos(DEATH_CHECK_NS + tick)
}

static PEERS: once_cell::sync::Lazy<Mutex<HashMap<PeerRef, Arc<Peer>>>> = once_cell::sync::Lazy::new(|| Mutex::new(HashMap::new()));
/// Peers found by registry id ([`Peer::by_id`]), indexed by slot.
static BY_ID: Mutex<Vec<Option<Arc<Peer>>>> = Mutex::new(Vec::new());
/// Peers reached through the network engine, by (node, slot).
static NET_PEERS: once_cell::sync::Lazy<Mutex<HashMap<(u32, u32), Arc<Peer>>>> = once_cell::sync::Lazy::new(|| Mutex::new(HashMap::new()));

/// A validated target: the registration's first backing, or fallback.
struct Target {
    backing: u32,
}

impl Peer {
    /// Resolves `r` (cached: the same `Arc` for the same process).  Maps its control
    /// segment and checks its identity.  `PeerDead` if it is gone.
    pub fn open(r: PeerRef) -> Result<Arc<Peer>> {
        let n = node::get()?;
        if let Some(p) = PEERS.lock().unwrap_or_else(|e| e.into_inner()).get(&r) {
            return Ok(p.clone());
        }
        let p = if r == n.peer_ref() {
            Peer { r, is_self: true, _ctl_map: None, ctl: n.ctl(), pidfd: -1, dead: AtomicBool::new(false), last_check: AtomicU64::new(0), life_lock_useless: AtomicBool::new(false), fast: empty_fast(), backs: Mutex::new(Backs::default()), net: None }
        } else {
            if !crate::registry::pid_alive(r.pid, Some(r.starttime)) {
                return Err(Error::PeerDead);
            }
            let map = shm::map_peer(r.pid, r.ctl_fd, r.ctl_ino, CTL_LEN)?;
            let ctl = Ctl { base: map.ptr() };
            ctl.check(r.pid, r.starttime)?;
            // SAFETY: pidfd_open takes a pid and flags; returns a new fd or -1.
            let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, r.pid, 0) } as i32;
            Peer { r, is_self: false, _ctl_map: Some(map), ctl, pidfd, dead: AtomicBool::new(false), last_check: AtomicU64::new(now_ns()), life_lock_useless: AtomicBool::new(false), fast: empty_fast(), backs: Mutex::new(Backs::default()), net: None }
        };
        let p = Arc::new(p);
        let mut peers = PEERS.lock().unwrap_or_else(|e| e.into_inner());
        Ok(peers.entry(r).or_insert(p).clone())
    }

    /// This process as a peer (operations on own registered memory).
    pub fn this() -> Result<Arc<Peer>> {
        Peer::open(node::get()?.peer_ref())
    }

    /// The process a memory handle names by its registry id ([`ProcId`]; the low
    /// `gen_bits` of the generation are compared).  Cached per slot, so a hot path pays a
    /// registry lookup only when the owner changes.  `StaleHandle` when no live process
    /// has that id (it left, or the id was forged), `PeerDead` when it has just died.
    pub fn by_id(id: ProcId, gen_bits: u32) -> Result<Arc<Peer>> {
        let mask = if gen_bits >= 32 { u32::MAX } else { (1u32 << gen_bits) - 1 };
        let n = node::get()?;
        let me = n.proc_id();
        if id.slot == me.slot && id.gen & mask == me.gen & mask {
            return Peer::this();
        }
        let slot = id.slot as usize;
        if slot >= crate::registry::NPROC {
            return Err(Error::InvalidHandle);
        }
        {
            let c = BY_ID.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(Some(p)) = c.get(slot) {
                if p.proc_id().gen & mask == id.gen & mask && !p.dead.load(Ordering::Relaxed) {
                    return Ok(p.clone());
                }
            }
        }
        let r = crate::registry::peer_by_id(id, gen_bits)?;
        let p = Peer::open(r)?;
        if p.proc_id().slot != id.slot || p.proc_id().gen & mask != id.gen & mask {
            // The row changed hands between the lookup and the mapping.
            return Err(Error::StaleHandle);
        }
        let mut c = BY_ID.lock().unwrap_or_else(|e| e.into_inner());
        if c.len() <= slot {
            c.resize(slot + 1, None);
        }
        c[slot] = Some(p.clone());
        Ok(p)
    }

    /// The process `id` of node `node`, through whichever engine reaches it: shared
    /// memory when it runs on this node (as [`Peer::by_id`]), the network engine when it
    /// runs on another one or `SOFTNIC_ENGINE=net` ([`crate::net::carries`]).  Errors as
    /// `by_id`, plus those of the network engine (`PeerDead`, `Unsupported` when it could
    /// not start).
    pub fn at(node: u32, id: ProcId, gen_bits: u32) -> Result<Arc<Peer>> {
        if !net::carries(node, id) {
            return Peer::by_id(id, gen_bits);
        }
        let remote = net::engine()?.remote(node, id, gen_bits)?;
        let mut c = NET_PEERS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = c.get(&(node, id.slot)) {
            if p.net.as_ref().is_some_and(|r| Arc::ptr_eq(r, &remote)) {
                return Ok(p.clone());
            }
        }
        let p = Arc::new(Peer {
            r: PeerRef { pid: 0, ctl_fd: -1, starttime: 0, ctl_ino: 0 },
            is_self: false,
            _ctl_map: None,
            ctl: Ctl { base: std::ptr::null_mut() },
            pidfd: -1,
            dead: AtomicBool::new(false),
            last_check: AtomicU64::new(0),
            life_lock_useless: AtomicBool::new(true),
            fast: Box::new([]),
            backs: Mutex::new(Backs::default()),
            net: Some(remote),
        });
        c.insert((node, id.slot), p.clone());
        Ok(p)
    }

    /// Is this peer this process?
    pub fn is_self(&self) -> bool {
        self.is_self
    }

    /// A put of the `len` bytes at `src` that travels asynchronously through the network
    /// engine (see [`net::Engine::put_async`]): `Ok` when started (`done` runs at
    /// completion), `Err(done)` untouched when the peer is not reached through the
    /// network engine or RMA cannot carry this put (then use the synchronous operations).
    ///
    /// # Safety
    /// `src` stays readable for `len` bytes until `done` has run (it is read in place).
    pub unsafe fn put_async(&self, key: MemKey, addr: u64, src: *const u8, len: usize, pd: u64, done: net::Done) -> std::result::Result<(), net::Done> {
        match (&self.net, net::running()) {
            // SAFETY: passed on from our caller.
            (Some(r), Some(e)) => unsafe { e.put_async(r, key.to_u64(), addr, src, len, pd, done) },
            _ => Err(done),
        }
    }

    /// As [`Peer::put_async`] for a get into `dst_len` bytes at `dst`.
    ///
    /// # Safety
    /// `dst` stays valid for writes of `dst_len` bytes until `done` has run.
    pub unsafe fn get_async(&self, key: MemKey, addr: u64, dst: *mut u8, dst_len: usize, pd: u64, done: net::Done) -> std::result::Result<(), net::Done> {
        match (&self.net, net::running()) {
            // SAFETY: passed on from our caller.
            (Some(r), Some(e)) => unsafe { e.get_async(r, key.to_u64(), addr, dst, dst_len, pd, done) },
            _ => Err(done),
        }
    }

    /// Is this peer reached through the network engine?
    pub fn is_remote(&self) -> bool {
        self.net.is_some()
    }

    /// The peer's registry id, as its control segment states it.
    pub fn proc_id(&self) -> ProcId {
        if let Some(r) = &self.net {
            return r.id;
        }
        let h = self.ctl.hdr();
        ProcId { slot: h.proc_slot, gen: h.proc_gen }
    }

    /// The node address the peer announced ([`node::Node::set_node_addr`]), None before it
    /// did; for a network peer, the node it was reached at.
    pub fn node_addr(&self) -> Option<u32> {
        if let Some(r) = &self.net {
            return Some(r.node);
        }
        match self.ctl.hdr().node_addr.load(Ordering::Acquire) {
            node::NO_NODE_ADDR => None,
            a => Some(a),
        }
    }

    pub fn peer_ref(&self) -> PeerRef {
        self.r
    }
    pub fn pid(&self) -> i32 {
        self.r.pid
    }

    /// Probes the peer now (not rate-limited).
    pub fn is_alive(&self) -> bool {
        if self.is_self {
            return true;
        }
        if let Some(r) = &self.net {
            // Known only from traffic: keep some going while the peer is watched.
            if let Some(e) = net::running() {
                e.probe(r);
            }
            return !r.is_dead();
        }
        if self.dead.load(Ordering::Relaxed) {
            return false;
        }
        let alive = if self.pidfd >= 0 {
            let mut pfd = [libc::pollfd { fd: self.pidfd, events: libc::POLLIN, revents: 0 }];
            let r = crate::cancel::sys::poll(&mut pfd, 0);
            !(r > 0 && pfd[0].revents != 0)
        } else {
            crate::registry::pid_alive(self.r.pid, Some(self.r.starttime))
        };
        if !alive {
            self.dead.store(true, Ordering::Relaxed);
        }
        alive
    }

    /// Liveness for hot paths: the cached verdict, refreshed at most every
    /// [`DEATH_CHECK_NS`] (a pidfd poll costs a system call).
    #[inline]
    pub fn seems_alive(&self) -> bool {
        self.check_alive().is_ok()
    }

    /// Inlined for the common verdict (this process, or a peer on this node whose life
    /// lock shows it alive: a load of a word it never writes while alive); the rest is
    /// out of line.
    #[inline(always)]
    fn check_alive(&self) -> Result<()> {
        if self.surely_alive() {
            return Ok(());
        }
        self.check_alive_slow()
    }

    #[inline(never)]
    fn check_alive_slow(&self) -> Result<()> {
        if let Some(r) = &self.net {
            if let Some(e) = net::running() {
                e.probe(r);
            }
            return if r.is_dead() { Err(Error::PeerDead) } else { Ok(()) };
        }
        if self.dead.load(Ordering::Relaxed) {
            return Err(Error::PeerDead);
        }
        if !self.life_lock_useless.load(Ordering::Relaxed) {
            if self.ctl.surely_alive() {
                return Ok(());
            }
            // The lock's owner thread ended: the process died (see it at once), or only
            // that thread did, and then the lock tells nothing from now on: probe by time.
            if !self.is_alive() {
                return Err(Error::PeerDead);
            }
            self.life_lock_useless.store(true, Ordering::Relaxed);
            self.last_check.store(now_ns(), Ordering::Relaxed);
            return Ok(());
        }
        let now = now_ns();
        if now.wrapping_sub(self.last_check.load(Ordering::Relaxed)) >= DEATH_CHECK_NS {
            self.last_check.store(now, Ordering::Relaxed);
            if !self.is_alive() {
                return Err(Error::PeerDead);
            }
        }
        Ok(())
    }

    /// Liveness checked once for a batch of operations (see [`Live`]).  Inlined: the
    /// common case (this process, or a local peer whose life lock shows a live owner) is
    /// a few loads in the caller.
    #[inline(always)]
    pub fn live(&self) -> Result<Live<'_>> {
        self.check_alive()?;
        Ok(Live(self))
    }

    /// [`Peer::live`] when the verdict needs no probe (this process, or a local peer whose
    /// life lock shows a live owner): a few loads and no call.  None proves nothing: the
    /// caller's general path then calls [`Peer::live`].
    #[inline(always)]
    pub fn live_quick(&self) -> Option<Live<'_>> {
        self.surely_alive().then_some(Live(self))
    }

    /// The first verdicts of [`Peer::check_alive`] that are `Ok` without a probe: false
    /// proves nothing.
    #[inline(always)]
    fn surely_alive(&self) -> bool {
        self.is_self || (self.net.is_none() && !self.dead.load(Ordering::Relaxed) && !self.life_lock_useless.load(Ordering::Relaxed) && self.ctl.surely_alive())
    }

    /// As [`Peer::live`] without reading the clock (only the cached verdict: `PeerDead`
    /// once a probe found the peer gone), for a caller that already ran the rate-limited
    /// probe ([`Peer::seems_alive`]) earlier in the same API call.
    #[inline]
    pub fn live_probed(&self) -> Result<Live<'_>> {
        if !self.is_self && (self.dead.load(Ordering::Relaxed) || self.net.as_ref().is_some_and(|r| r.is_dead())) {
            return Err(Error::PeerDead);
        }
        Ok(Live(self))
    }

    /// The owner's range of live registration `key` (base, length).
    fn registration_range(&self, key: MemKey) -> Result<(u64, u64)> {
        let e = self.ctl.reg(key.index as usize).ok_or(Error::InvalidHandle)?;
        let g = e.gen.load(Ordering::Acquire);
        if g != key.generation || e.state.load(Ordering::Acquire) != LIVE {
            return Err(Error::StaleHandle);
        }
        let range = (e.base.load(Ordering::Relaxed), e.len.load(Ordering::Relaxed));
        // Seqlock reader, as in `validate`.
        fence(Ordering::Acquire);
        if e.gen.load(Ordering::Relaxed) != g || e.state.load(Ordering::Relaxed) != LIVE {
            return Err(Error::StaleHandle);
        }
        Ok(range)
    }

    /// The registration checks of every access (the liveness check is the caller's).
    fn validate(&self, key: MemKey, addr: u64, n: usize, write: bool, pd: u64) -> Result<Target> {
        let e = self.ctl.reg(key.index as usize).ok_or(Error::InvalidHandle)?;
        let g = e.gen.load(Ordering::Acquire);
        if g != key.generation || e.state.load(Ordering::Acquire) != LIVE {
            return Err(Error::StaleHandle);
        }
        let base = e.base.load(Ordering::Relaxed);
        let len = e.len.load(Ordering::Relaxed);
        let writable = e.writable.load(Ordering::Relaxed) != 0;
        let pd_key = e.pd_key.load(Ordering::Relaxed);
        let backing = e.backing.load(Ordering::Relaxed);
        // Seqlock reader: the fields above belong to generation `g` only if it is unchanged.
        fence(Ordering::Acquire);
        if e.gen.load(Ordering::Relaxed) != g || e.state.load(Ordering::Relaxed) != LIVE {
            return Err(Error::StaleHandle);
        }
        let end = addr.checked_add(n as u64).ok_or(Error::OutOfBounds)?;
        if addr < base || end > base + len {
            return Err(Error::OutOfBounds);
        }
        if write && !writable {
            return Err(Error::Permission);
        }
        if pd != pd_key {
            return Err(Error::ProtectionDomain);
        }
        Ok(Target { backing })
    }

    /// Local pointer to peer backing `idx` at owner address `addr`, valid for the bytes up
    /// to the backing's end (returned as the second value).  `want_gen` pins a generation.
    fn backing_ptr(&self, idx: u32, addr: u64, want_gen: Option<u32>) -> Result<(*mut u8, u64)> {
        let e = self.ctl.back(idx as usize).ok_or(Error::InvalidHandle)?;
        let state = e.state.load(Ordering::Acquire);
        let gen = e.gen.load(Ordering::Acquire);
        if state == FREE || want_gen.map_or(false, |w| w != gen) {
            return Err(Error::StaleHandle);
        }
        let slot = idx as usize;
        // Fast path: a cached mapping of this generation, without any lock.
        if let Some(f) = self.fast.get(slot) {
            let p = f.load(Ordering::Acquire);
            if !p.is_null() {
                // SAFETY: published `Cached` are owned by `backs` until the Peer drops.
                let x = unsafe { &*p };
                if x.gen == gen {
                    return Self::locate(x, addr);
                }
            }
        }
        let mut c = self.backs.lock().unwrap_or_else(|e| e.into_inner());
        let cur = self.fast.get(slot).map_or(std::ptr::null_mut(), |f| f.load(Ordering::Acquire));
        // SAFETY: as above.
        let fresh = !cur.is_null() && unsafe { (*cur).gen } == gen;
        if !fresh {
            let base = e.base.load(Ordering::Relaxed);
            let len = e.len.load(Ordering::Relaxed);
            let fd = e.fd.load(Ordering::Relaxed) as i32;
            let ino = e.ino.load(Ordering::Relaxed);
            fence(Ordering::Acquire);
            if e.gen.load(Ordering::Relaxed) != gen || e.state.load(Ordering::Relaxed) == FREE {
                return Err(Error::StaleHandle);
            }
            let map = if self.is_self {
                None // our own memory is at its own address
            } else {
                Some(shm::map_peer(self.r.pid, fd, ino, len as usize).map_err(|e| if e == Error::StaleHandle && !self.is_alive() { Error::PeerDead } else { e })?)
            };
            let ptr = map.as_ref().map_or(base as *mut u8, |m| m.ptr());
            if c.maps.len() <= slot {
                c.maps.resize_with(slot + 1, || None);
            }
            c.maps[slot] = map;
            let mut b = Box::new(Cached { gen, base, len, ptr });
            let p: *mut Cached = &mut *b;
            c.owned.push(b);
            self.fast[slot].store(p, Ordering::Release);
            // SAFETY: just published, owned by `c.owned`.
            return Self::locate(unsafe { &*p }, addr);
        }
        // SAFETY: as above.
        Self::locate(unsafe { &*cur }, addr)
    }

    /// Pointer to owner address `addr` inside a cached backing, and the bytes left in it.
    fn locate(x: &Cached, addr: u64) -> Result<(*mut u8, u64)> {
        if addr < x.base || addr >= x.base + x.len {
            return Err(Error::OutOfBounds);
        }
        // SAFETY: addr - base < len, inside the mapping.
        Ok((unsafe { x.ptr.add((addr - x.base) as usize) }, x.base + x.len - addr))
    }

    /// Finds the backing that covers owner address `addr` (slow path for registrations
    /// spanning several backings): the narrowest live one that spans it (a block backing
    /// spans the library memory inside its block too), else a detached one.  The owner
    /// registers a range in pieces only where this finds each piece's backing (see
    /// `mem::register`).
    fn find_backing(&self, addr: u64) -> Result<u32> {
        // The table changes only with the owner's invalidation count (it counts every
        // backing row published, detached or freed): the rows in use are read again when
        // the count moved, not at every lookup (a scan of all NBACK rows, ~10k
        // instructions, paid by every small access to a registration spanning several
        // backings).  Acquire: pairs with the owner's count, after its row stores.
        let n = self.ctl.invalidations().load(Ordering::Acquire);
        let mut c = self.backs.lock().unwrap_or_else(|e| e.into_inner());
        if c.index_count != Some(n) {
            c.index.clear();
            for i in 0..node::NBACK {
                let e = self.ctl.back(i).expect("in range");
                let st = e.state.load(Ordering::Acquire);
                if st != FREE {
                    c.index.push(BackRow { base: e.base.load(Ordering::Relaxed), len: e.len.load(Ordering::Relaxed), row: i as u32, live: st == LIVE });
                }
            }
            c.index_count = Some(n);
        }
        // The narrowest live row spanning `addr` (the first of equal ones), else the last
        // detached one: what the owner expects its peers to find (mem.rs, peers_resolve).
        let mut live: Option<(u64, u32)> = None;
        let mut detached = None;
        for r in c.index.iter().filter(|r| r.base <= addr && addr - r.base < r.len) {
            if !r.live {
                detached = Some(r.row);
            } else if live.map_or(true, |(l, _)| r.len < l) {
                live = Some((r.len, r.row));
            }
        }
        live.map(|(_, i)| i).or(detached).ok_or(Error::StaleHandle)
    }

    /// Calls `f(ptr, offset, len)` for each piece of `[addr, addr+n)` mapped locally.
    fn for_chunks(&self, first: u32, addr: u64, n: usize, mut f: impl FnMut(*mut u8, usize, usize)) -> Result<()> {
        if self.is_self {
            f(addr as *mut u8, 0, n);
            return Ok(());
        }
        // Resolve everything before touching anything, so errors leave memory untouched.
        let mut pieces: [(*mut u8, usize, usize); 4] = [(std::ptr::null_mut(), 0, 0); 4];
        let mut more: Vec<(*mut u8, usize, usize)> = Vec::new();
        let mut done = 0usize;
        let mut k = 0;
        let mut idx = first;
        while done < n {
            let at = addr + done as u64;
            let (p, avail) = match self.backing_ptr(idx, at, None) {
                Ok(x) => x,
                Err(Error::OutOfBounds) => self.backing_ptr(self.find_backing(at)?, at, None)?,
                Err(e) => return Err(e),
            };
            let take = (avail as usize).min(n - done);
            if k < 4 {
                pieces[k] = (p, done, take);
            } else {
                more.push((p, done, take));
            }
            k += 1;
            done += take;
            idx = u32::MAX; // next piece: search
            if done < n {
                idx = self.find_backing(addr + done as u64)?;
            }
        }
        for &(p, off, len) in pieces.iter().take(k.min(4)).chain(more.iter()) {
            f(p, off, len);
        }
        Ok(())
    }

    fn vm_io(&self, local: *mut u8, remote: u64, n: usize, write: bool) -> Result<()> {
        let mut done = 0usize;
        while done < n {
            let l = libc::iovec { iov_base: (local as usize + done) as *mut libc::c_void, iov_len: n - done };
            let r = libc::iovec { iov_base: (remote as usize + done) as *mut libc::c_void, iov_len: n - done };
            // SAFETY: the local iovec is the caller's buffer of n bytes; the remote one is
            // checked by the kernel against the target's mappings.
            let got = unsafe {
                if write {
                    libc::process_vm_writev(self.r.pid, &l, 1, &r, 1, 0)
                } else {
                    libc::process_vm_readv(self.r.pid, &l, 1, &r, 1, 0)
                }
            };
            if got < 0 {
                return Err(match Error::last_os() {
                    Error::Os(libc::ESRCH) => Error::PeerDead,
                    e => e,
                });
            }
            if got == 0 {
                return Err(Error::Os(libc::EFAULT));
            }
            done += got as usize;
        }
        Ok(())
    }
}

/// A peer found alive by [`Peer::live`]: the operations below skip the (rate-limited,
/// but clock-reading) liveness check, so a compound operation (payload, flag, event) pays
/// it once.  Keep it for one API call only: the death-check guarantee (module doc) is
/// about when an operation is issued.
#[derive(Clone, Copy)]
pub struct Live<'a>(&'a Peer);

impl<'a> Live<'a> {
    pub fn peer(self) -> &'a Peer {
        self.0
    }

    /// Validates an access without performing it (same checks and errors as [`put`] /
    /// [`get`]): lets an API check every part of a compound operation before moving any byte.
    pub fn check(self, key: MemKey, remote_addr: u64, len: usize, write: bool, pd: u64) -> Result<()> {
        if let Some(r) = &self.0.net {
            return net::engine()?.check(r, key.to_u64(), remote_addr, len, write, pd);
        }
        self.0.validate(key, remote_addr, len, write, pd).map(|_| ())
    }

    /// Writes `src` to `remote_addr` in the peer's registration `key`.
    pub fn put(self, key: MemKey, remote_addr: u64, src: &[u8], pd: u64) -> Result<()> {
        if let Some(r) = &self.0.net {
            return net::engine()?.put(r, key.to_u64(), remote_addr, src, pd);
        }
        let t = self.0.validate(key, remote_addr, src.len(), true, pd)?;
        if src.is_empty() {
            return Ok(());
        }
        if t.backing == NO_BACKING && !self.0.is_self {
            return self.0.vm_io(src.as_ptr() as *mut u8, remote_addr, src.len(), true);
        }
        self.0.for_chunks(t.backing, remote_addr, src.len(), |p, off, len| {
            // SAFETY: p..p+len is mapped (validated above); src has off+len bytes; distinct
            // mappings cannot overlap a Rust slice except for self-copies, hence `copy`.
            unsafe { crate::copy::copy(src.as_ptr().add(off), p, len) }
        })
    }

    /// Reads from `remote_addr` in the peer's registration `key` into `dst`.
    pub fn get(self, key: MemKey, remote_addr: u64, dst: &mut [u8], pd: u64) -> Result<()> {
        if let Some(r) = &self.0.net {
            return net::engine()?.get(r, key.to_u64(), remote_addr, dst, pd);
        }
        let t = self.0.validate(key, remote_addr, dst.len(), false, pd)?;
        if dst.is_empty() {
            return Ok(());
        }
        if t.backing == NO_BACKING && !self.0.is_self {
            return self.0.vm_io(dst.as_mut_ptr(), remote_addr, dst.len(), false);
        }
        let d = dst.as_mut_ptr();
        self.0.for_chunks(t.backing, remote_addr, dst.len(), |p, off, len| {
            // SAFETY: as in put, reversed.
            unsafe { crate::copy::copy(p, d.add(off), len) }
        })
    }

    /// Applies `op` atomically at `remote_addr` and returns the old value.  Atomic with
    /// respect to the target CPU's own atomic instructions on the same word.
    pub fn atomic(self, key: MemKey, remote_addr: u64, width: AmoWidth, op: AmoOp, pd: u64) -> Result<u64> {
        if let Some(r) = &self.0.net {
            return net::engine()?.atomic(r, key.to_u64(), remote_addr, width, op, pd);
        }
        let n = match width {
            AmoWidth::I32 | AmoWidth::F32 => 4,
            AmoWidth::I64 | AmoWidth::F64 => 8,
        };
        let t = self.0.validate(key, remote_addr, n, true, pd)?;
        if remote_addr % n as u64 != 0 {
            return Err(Error::Misaligned);
        }
        if self.0.is_self {
            // SAFETY: validated inside a live registration of our own memory.
            return unsafe { atomic::apply(remote_addr as *mut u8, width, op) };
        }
        if t.backing == NO_BACKING {
            return Err(Error::Unsupported);
        }
        let mut p = std::ptr::null_mut();
        // An aligned word never straddles backings (they are page granular).
        self.0.for_chunks(t.backing, remote_addr, n, |q, _, _| p = q)?;
        // SAFETY: p is inside our mapping of the peer's backing, aligned like remote_addr
        // (mappings are page aligned).
        unsafe { atomic::apply(p, width, op) }
    }

    /// Stores the 64-bit `v` at `remote_addr` with one atomic Release store (a flag or
    /// sequence word the target polls: it never sees a torn value, and sees every byte put
    /// before it once it sees the value).  Checks and errors are those of
    /// [`Live::atomic`] with an I64 swap (`Unsupported` on fallback memory, where the
    /// caller falls back to [`Live::put`]), but costs a plain store instead of a locked
    /// exchange.
    pub fn store_u64(self, key: MemKey, remote_addr: u64, v: u64, pd: u64) -> Result<()> {
        if let Some(r) = &self.0.net {
            return net::engine()?.store_u64(r, key.to_u64(), remote_addr, v, pd);
        }
        let t = self.0.validate(key, remote_addr, 8, true, pd)?;
        if remote_addr % 8 != 0 {
            return Err(Error::Misaligned);
        }
        let p = if self.0.is_self {
            remote_addr as *mut u8
        } else {
            if t.backing == NO_BACKING {
                return Err(Error::Unsupported);
            }
            let mut p = std::ptr::null_mut();
            // An aligned word never straddles backings (they are page granular).
            self.0.for_chunks(t.backing, remote_addr, 8, |q, _, _| p = q)?;
            p
        };
        // SAFETY: validated inside a live registration (mapped here), 8-byte aligned (the
        // mappings are page aligned); other parties access the word atomically.
        unsafe { (*(p as *const AtomicU64)).store(v, Ordering::Release) };
        Ok(())
    }

    /// Appends `v` to the ring at `loc` in the peer's library-owned shared memory.
    /// With `overrun` false a full ring gives `Err(NoSpace)`; with `overrun` true it records
    /// an overrun in the ring and returns `Ok(false)`.  `Ok(true)`: appended.
    pub fn post_event<T: Pod>(self, loc: &RingLoc, v: &T, overrun: bool) -> Result<bool> {
        if let Some(r) = &self.0.net {
            // SAFETY: T is Pod: its bytes are its whole value.
            let bytes = unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()) };
            return net::engine()?.post_event(r, loc.to_words(), bytes, overrun);
        }
        let (p, _) = self.0.backing_ptr(loc.backing, self.0.ring_addr(loc)?, Some(loc.backing_gen))?;
        // SAFETY: p..p+len lies inside the mapped backing (checked above); the ring header
        // there is validated by attach.
        let ring = unsafe { Ring::<T>::attach(p, loc.len as usize)? };
        if overrun {
            Ok(ring.push_or_overrun(v))
        } else {
            ring.push(v).map(|_| true)
        }
    }

    /// A put in one or more pieces, then optionally a 64-bit completion word (a flag or
    /// sequence word the target polls: stored last, with one atomic Release store, or as a
    /// put where the memory cannot take atomics), then optionally a notification: `entry`
    /// pushed into the notify ring of registration `notify.0` (best effort, like an event
    /// a NIC drops when the CQ is full: a missing or full ring is not an error).
    ///
    /// The flag's place is validated before anything moves; a failing piece stops the
    /// rest.  One request on the network engine (the whole sequence runs at the target in
    /// this order), the same steps in place on this node.
    pub fn put_compound(self, pieces: &[(MemKey, u64, &[u8])], flag: Option<(MemKey, u64, u64)>, notify: Option<(MemKey, u64)>, pd: u64) -> Result<()> {
        if let Some(r) = &self.0.net {
            return net::engine()?.put_compound(r, pieces, flag, notify, pd);
        }
        if let Some((k, a, _)) = flag {
            self.check(k, a, 8, true, pd)?;
        }
        for &(k, a, src) in pieces {
            self.put(k, a, src, pd)?;
        }
        if let Some((k, a, v)) = flag {
            match self.store_u64(k, a, v, pd) {
                Err(Error::Unsupported) | Err(Error::Misaligned) => self.put(k, a, &v.to_ne_bytes(), pd)?,
                r => r?,
            }
        }
        if let Some((k, entry)) = notify {
            self.notify(k, entry, pd);
        }
        Ok(())
    }

    /// Pushes `entry` into the notify ring of registration `key`, best effort (see
    /// [`Live::put_compound`]); what happened is logged at debug level.
    pub fn notify(self, key: MemKey, entry: u64, pd: u64) {
        let r = self.notify_ring(key, pd).and_then(|loc| match loc {
            Some(loc) => self.post_event(&loc, &entry, true).map(|pushed| if pushed { "delivered" } else { "dropped: the ring overran" }),
            None => Ok("none: the registration has no notify ring"),
        });
        match r {
            Ok(what) => crate::sn_trace!("one-sided", "notification {}", what),
            Err(e) => crate::sn_debug!("one-sided", "notification not delivered: {}", e),
        }
    }

    /// The notify ring of a peer's registration (see [`crate::mem::set_notify`]), validated
    /// like an access: `InvalidHandle` (index out of range), `StaleHandle` (not live or another
    /// generation), `ProtectionDomain` (pd mismatch), `PeerDead`.  `Ok(None)`: the registration
    /// has no notify ring.
    pub fn notify_ring(self, key: MemKey, pd: u64) -> Result<Option<RingLoc>> {
        if let Some(r) = &self.0.net {
            return Ok(net::engine()?.notify_ring(r, key.to_u64(), pd)?.map(RingLoc::from_words));
        }
        let e = self.0.ctl.reg(key.index as usize).ok_or(Error::InvalidHandle)?;
        let g = e.gen.load(Ordering::Acquire);
        if g != key.generation || e.state.load(Ordering::Acquire) != LIVE {
            return Err(Error::StaleHandle);
        }
        let len = e.notify[2].load(Ordering::Acquire);
        let w = [e.notify[0].load(Ordering::Relaxed), e.notify[1].load(Ordering::Relaxed), len];
        let pd_key = e.pd_key.load(Ordering::Relaxed);
        // Seqlock reader, as in `validate`.
        fence(Ordering::Acquire);
        if e.gen.load(Ordering::Relaxed) != g || e.state.load(Ordering::Relaxed) != LIVE {
            return Err(Error::StaleHandle);
        }
        if pd != pd_key {
            return Err(Error::ProtectionDomain);
        }
        Ok((len != 0).then(|| RingLoc::from_words(w)))
    }
}

/// Where a pinned range lives in this process: the peer's backing row, its generation and
/// the cache entry whose mapping the pointer points into (re-checked at each use: the
/// mapping is replaced only when the row moves to another generation).
#[derive(Clone, Copy)]
struct PinSite {
    backing: u32,
    backing_gen: u32,
    cached: *const Cached,
}

impl Peer {
    /// The site of owner address `addr` in backing `idx` with at least `len` bytes after it;
    /// `Unsupported` when the range runs past the backing (several backings: use the
    /// per-operation path).
    fn pin_site(&self, idx: u32, addr: u64, len: u64) -> Result<(PinSite, *mut u8)> {
        let e = self.ctl.back(idx as usize).ok_or(Error::InvalidHandle)?;
        let gen = e.gen.load(Ordering::Acquire);
        let (p, avail) = self.backing_ptr(idx, addr, Some(gen))?;
        if avail < len {
            return Err(Error::Unsupported);
        }
        let cached = self.fast[idx as usize].load(Ordering::Acquire) as *const Cached;
        Ok((PinSite { backing: idx, backing_gen: gen, cached }, p))
    }

    /// The owner address of the ring (or region) `loc`, if its backing is live and holds it.
    fn ring_addr(&self, loc: &RingLoc) -> Result<u64> {
        let e = self.ctl.back(loc.backing as usize).ok_or(Error::InvalidHandle)?;
        if e.state.load(Ordering::Acquire) != LIVE {
            return Err(Error::StaleHandle);
        }
        let base = e.base.load(Ordering::Relaxed);
        match loc.offset.checked_add(loc.len) {
            Some(end) if end <= e.len.load(Ordering::Relaxed) && loc.len > 0 => Ok(base + loc.offset),
            _ => Err(Error::OutOfBounds),
        }
    }

    /// Is `s` still where it was pinned (row not freed nor reused, same local mapping)?
    /// `live`: the row must also still be LIVE (rings; a registration's pages stay usable
    /// while the row is only detached, as in [`Peer::backing_ptr`]).
    #[inline(always)]
    fn site_valid(&self, s: &PinSite, live: bool) -> bool {
        let Some(e) = self.ctl.back(s.backing as usize) else { return false };
        let state = e.state.load(Ordering::Acquire);
        (if live { state == LIVE } else { state != FREE })
            && e.gen.load(Ordering::Acquire) == s.backing_gen
            && self.fast[s.backing as usize].load(Ordering::Acquire) as *const Cached == s.cached
    }
}

/// A range of a peer's registration validated once (like [`Live::put`]: generation,
/// bounds, access, protection domain) and resolved to a local pointer, for a channel that
/// writes the same place again and again (a mailbox, a flag word).  Each use re-checks, in
/// a few loads of rows the owner only writes when it (de)registers, that the registration
/// and the backing under it are still those of the pin; when they are not the use fails
/// with `StaleHandle` and the caller goes back to the per-operation path (which then gives
/// the exact error).  Holds the peer, so its mappings outlive the pin.
pub struct Pinned {
    peer: Arc<Peer>,
    key: MemKey,
    /// None when the peer is this process (the range is used at its own address).
    site: Option<PinSite>,
    ptr: *mut u8,
    len: usize,
    /// The owner's address of `ptr`.
    start: u64,
}

// SAFETY: the pointer is into a mapping owned by `peer` (or our own registered memory);
// every access goes through `PinnedRef`, which uses atomics or plain copies that other
// parties synchronise through published words.
unsafe impl Send for Pinned {}
unsafe impl Sync for Pinned {}

impl Pinned {
    /// Pins `[addr, addr+len)` of registration `key` at `peer` for writing (`write`) or
    /// reading.  Errors as [`Live::put`] / [`Live::get`]; `Unsupported` for ranges the
    /// per-operation path must serve (process_vm fallback memory, several backings).
    pub fn new(peer: &Arc<Peer>, key: MemKey, addr: u64, len: usize, write: bool, pd: u64) -> Result<Pinned> {
        Pinned::new_in(peer, key, addr, len, write, pd, false)
    }

    /// [`Pinned::new`]; with `any_backing`, a range inside one backing of a registration
    /// that has several is pinned in the backing that holds it (not only in the
    /// registration's first).
    fn new_in(peer: &Arc<Peer>, key: MemKey, addr: u64, len: usize, write: bool, pd: u64, any_backing: bool) -> Result<Pinned> {
        if peer.net.is_some() {
            return Err(Error::Unsupported); // nothing to map: the per-operation path serves it
        }
        let live = peer.live()?;
        let t = live.0.validate(key, addr, len, write, pd)?;
        if peer.is_self {
            return Ok(Pinned { peer: peer.clone(), key, site: None, ptr: addr as *mut u8, len, start: addr });
        }
        if t.backing == NO_BACKING {
            return Err(Error::Unsupported);
        }
        let site = match peer.pin_site(t.backing, addr, len as u64) {
            Err(Error::OutOfBounds) if any_backing => peer.find_backing(addr).and_then(|b| peer.pin_site(b, addr, len as u64)),
            r => r,
        };
        let (site, ptr) = match site {
            Err(Error::OutOfBounds) => return Err(Error::Unsupported),
            r => r?,
        };
        Ok(Pinned { peer: peer.clone(), key, site: Some(site), ptr, len, start: addr })
    }

    /// Pins the whole of registration `key` at `peer` (as [`Pinned::new`] over its full
    /// range), for a channel whose accesses fall anywhere in one registration (a uGNI
    /// remote memory handle): [`PinnedRef::put_at`] then addresses it as the owner does.
    pub fn registration(peer: &Arc<Peer>, key: MemKey, write: bool, pd: u64) -> Result<Pinned> {
        if peer.net.is_some() {
            return Err(Error::Unsupported);
        }
        let (base, len) = peer.registration_range(key)?;
        Pinned::new(peer, key, base, usize::try_from(len).map_err(|_| Error::Unsupported)?, write, pd)
    }

    /// Pins the part of registration `key` at `peer` that lies in the `block`-aligned
    /// block (`block` a power of two) holding the owner's address `addr`: for a
    /// registration that [`Pinned::registration`] refuses because it spans several
    /// backings, the block its accesses fall in usually lies in one.  `OutOfBounds` when
    /// `addr` is outside the registration; other errors as [`Pinned::new`].
    pub fn registration_block(peer: &Arc<Peer>, key: MemKey, addr: u64, block: u64, write: bool, pd: u64) -> Result<Pinned> {
        if peer.net.is_some() {
            return Err(Error::Unsupported);
        }
        let (base, len) = peer.registration_range(key)?;
        let start = addr & !(block.wrapping_sub(1));
        let lo = start.max(base);
        let hi = start.saturating_add(block).min(base.saturating_add(len));
        if addr < base || addr >= hi {
            return Err(Error::OutOfBounds);
        }
        Pinned::new_in(peer, key, lo, usize::try_from(hi - lo).map_err(|_| Error::Unsupported)?, write, pd, true)
    }

    /// The pinned range: the owner's start address and length.
    #[inline]
    pub fn range(&self) -> (u64, usize) {
        (self.start, self.len)
    }

    /// The pinned registration.
    pub fn key(&self) -> MemKey {
        self.key
    }

    /// The process whose memory is pinned.
    pub fn peer(&self) -> &Arc<Peer> {
        &self.peer
    }

    /// Re-checks the pin for one use by `live` (which must be the pinned peer).  Always
    /// inlined: a few loads, on the fast path of every pinned access.
    #[inline(always)]
    pub fn check<'p>(&'p self, live: Live<'_>) -> Result<PinnedRef<'p>> {
        if !std::ptr::eq(live.0, &*self.peer) {
            return Err(Error::StaleHandle);
        }
        let e = self.peer.ctl.reg(self.key.index as usize).ok_or(Error::InvalidHandle)?;
        if e.gen.load(Ordering::Acquire) != self.key.generation || e.state.load(Ordering::Acquire) != LIVE {
            return Err(Error::StaleHandle);
        }
        if let Some(s) = &self.site {
            if !self.peer.site_valid(s, false) {
                return Err(Error::StaleHandle);
            }
        }
        Ok(PinnedRef(self))
    }
}

/// A [`Pinned`] range for a path that uses it on every call (the uTofu quick paths): the
/// words that [`Peer::live`] and [`Pinned::check`] read are resolved to their addresses
/// once, so a use loads each word straight from this record instead of walking peer ->
/// control segment -> row with a bound test per step.  Only addresses are kept, of rows
/// inside the mappings of the pin's peer (which the pin holds): every value is read again
/// on each use, so nothing here can go stale unchecked.
pub struct QuickPinned {
    pin: Pinned,
    /// The peer's control segment (its life lock; unused when the peer is this process).
    ctl: Ctl,
    /// The pinned registration's row; null when its index is outside the table (a pin
    /// that can never be valid: `InvalidHandle`, as `Pinned::check` says).
    reg: *const node::RegEntry,
    /// The row and the mapping slot of the site's backing (null without a site; a FREE
    /// row, [`NO_BACK`], when its index is outside the tables: `StaleHandle`, as
    /// `Peer::site_valid` says).
    back: *const node::BackEntry,
    fast: *const AtomicPtr<Cached>,
    /// The owner's invalidation count ([`node::INVAL_OFF`]) when the rows were last found
    /// valid; `NOT_SEEN` before that.
    seen: AtomicU64,
}

/// [`QuickPinned::seen`] before the first check (no count reaches it).
const NOT_SEEN: u64 = u64::MAX;

/// The backing row of a [`QuickPinned`] whose site's index is outside the tables: all
/// zero, so FREE (a `BackEntry` is 64 bytes of atomics, `repr(C)`).
#[repr(C, align(64))]
struct NoBack([AtomicU64; 8]);
static NO_BACK: NoBack = NoBack([const { AtomicU64::new(0) }; 8]);
static NO_FAST: AtomicPtr<Cached> = AtomicPtr::new(std::ptr::null_mut());

// SAFETY: the pointers are into the control segment and mapping table of the pin's peer,
// which the pin's `Arc<Peer>` keeps alive, or to the statics above; they are only read,
// atomically.
unsafe impl Send for QuickPinned {}
unsafe impl Sync for QuickPinned {}

impl QuickPinned {
    pub fn new(pin: Pinned) -> QuickPinned {
        let peer = &*pin.peer;
        let reg = peer.ctl.reg(pin.key.index as usize).map_or(std::ptr::null(), |e| e as *const node::RegEntry);
        let (mut back, mut fast) = (std::ptr::null(), std::ptr::null());
        if let Some(s) = &pin.site {
            (back, fast) = match (peer.ctl.back(s.backing as usize), peer.fast.get(s.backing as usize)) {
                (Some(b), Some(f)) => (b as *const node::BackEntry, f as *const AtomicPtr<Cached>),
                _ => (NO_BACK.0.as_ptr() as *const node::BackEntry, &NO_FAST as *const AtomicPtr<Cached>),
            };
        }
        QuickPinned { ctl: peer.ctl, pin, reg, back, fast, seen: AtomicU64::new(NOT_SEEN) }
    }

    pub fn pinned(&self) -> &Pinned {
        &self.pin
    }

    /// [`Peer::live`] of the pinned peer and [`Pinned::check`] by it, in one: the same
    /// words read in the same order, the same errors.
    #[inline(always)]
    pub fn check(&self) -> Result<PinnedRef<'_>> {
        if !self.surely_alive() {
            self.pin.peer.check_alive_slow()?;
        }
        self.rows_valid_since()?;
        Ok(PinnedRef(&self.pin))
    }

    /// [`QuickPinned::check`] when the liveness verdict needs no probe; None proves
    /// nothing (the caller's general path then makes the full check).  No call: a hot
    /// path keeps its values in registers around it.
    #[inline(always)]
    pub fn check_quick(&self) -> Option<PinnedRef<'_>> {
        (self.surely_alive() && self.rows_valid_since().is_ok()).then_some(PinnedRef(&self.pin))
    }

    /// [`Peer::surely_alive`] of the pinned peer.  A pin's peer is never reached through
    /// the network ([`Pinned::new`] refuses one), so `net` needs no test.
    #[inline(always)]
    fn surely_alive(&self) -> bool {
        let peer = &*self.pin.peer;
        peer.is_self || (!peer.dead.load(Ordering::Relaxed) && !peer.life_lock_useless.load(Ordering::Relaxed) && self.ctl.surely_alive())
    }

    /// [`QuickPinned::rows_valid`], made only when the owner's invalidation count moved
    /// since the rows were last found valid: nothing that can end the pin's validity
    /// happened then (the owner counts after the rows show the change, so a count read
    /// before the rows that still reads the same proves them unchanged).
    #[inline(always)]
    fn rows_valid_since(&self) -> Result<()> {
        // Acquire: pairs with the owner's count (after its row stores).
        let n = self.ctl.invalidations().load(Ordering::Acquire);
        if n != self.seen.load(Ordering::Relaxed) {
            self.rows_changed(n)?;
        }
        Ok(())
    }

    /// The rows checked again after the count moved to `n`; valid, `n` is remembered.
    #[cold]
    #[inline(never)]
    fn rows_changed(&self, n: u64) -> Result<()> {
        self.rows_valid()?;
        self.seen.store(n, Ordering::Relaxed);
        Ok(())
    }

    /// The row tests of [`Pinned::check`] (registration, then the site's backing).
    #[inline(always)]
    fn rows_valid(&self) -> Result<()> {
        // SAFETY: null or a row of the peer's control segment (see the type).
        let Some(e) = (unsafe { self.reg.as_ref() }) else { return Err(Error::InvalidHandle) };
        if e.gen.load(Ordering::Acquire) != self.pin.key.generation || e.state.load(Ordering::Acquire) != LIVE {
            return Err(Error::StaleHandle);
        }
        if let Some(s) = &self.pin.site {
            // SAFETY: with a site, `back` and `fast` are its rows (or the FREE stand-ins).
            let (b, f) = unsafe { (&*self.back, &*self.fast) };
            if b.state.load(Ordering::Acquire) == FREE || b.gen.load(Ordering::Acquire) != s.backing_gen || f.load(Ordering::Acquire) as *const Cached != s.cached {
                return Err(Error::StaleHandle);
            }
        }
        Ok(())
    }
}

/// A word of a pinned range checked for an atomic ([`PinnedRef::atomic_place`]).
pub struct AtomicPlace<'p> {
    p: *mut u8,
    width: AmoWidth,
    _pin: std::marker::PhantomData<&'p Pinned>,
}

impl AtomicPlace<'_> {
    /// Applies `op` (as [`PinnedRef::atomic`]) and returns the old value.
    #[inline(always)]
    pub fn apply(self, op: AmoOp) -> Result<u64> {
        // SAFETY: aligned, inside the pinned range (checked by `atomic_place`), mapped
        // for the life of the pin, which this place borrows.
        unsafe { atomic::apply(self.p, self.width, op) }
    }
}

/// One checked use of a [`Pinned`] range; offsets are from its start, bounds-checked.
#[derive(Clone, Copy)]
pub struct PinnedRef<'p>(&'p Pinned);

impl PinnedRef<'_> {
    #[inline(always)]
    fn at(&self, off: usize, n: usize, align: usize) -> Result<*mut u8> {
        match off.checked_add(n) {
            Some(end) if end <= self.0.len => {}
            _ => return Err(Error::OutOfBounds),
        }
        // SAFETY: off + n <= len: inside the pinned range.
        let p = unsafe { self.0.ptr.add(off) };
        if misaligned(p, align) {
            return Err(Error::Misaligned);
        }
        Ok(p)
    }

    /// Would an access of `n` bytes at offset `off`, aligned to `align`, succeed?  Lets a
    /// caller commit to an operation (claim its completion's place) before moving data.
    #[inline(always)]
    pub fn holds(&self, off: usize, n: usize, align: usize) -> bool {
        self.at(off, n, align).is_ok()
    }

    /// The checked place of an atomic of `width` at offset `off` (None: out of the range
    /// or misaligned), applied later ([`AtomicPlace::apply`]): a caller commits to the
    /// operation (claims its completion's place) in between, with one bounds test.
    #[inline(always)]
    pub fn atomic_place(&self, off: usize, width: AmoWidth) -> Option<AtomicPlace<'_>> {
        let n = width.bytes();
        self.at(off, n, n).ok().map(|p| AtomicPlace { p, width, _pin: std::marker::PhantomData })
    }

    /// The offset of the owner's address `addr` (`OutOfBounds` before the pinned range).
    #[inline]
    fn offset_of(&self, addr: u64) -> Result<usize> {
        addr.checked_sub(self.0.start).and_then(|o| usize::try_from(o).ok()).ok_or(Error::OutOfBounds)
    }

    /// Copies `src` to the owner's address `addr`.
    #[inline]
    pub fn put_at(&self, addr: u64, src: &[u8]) -> Result<()> {
        self.put(self.offset_of(addr)?, src)
    }

    /// Copies the bytes at the owner's address `addr` into `dst`.
    #[inline]
    pub fn get_at(&self, addr: u64, dst: &mut [u8]) -> Result<()> {
        self.get(self.offset_of(addr)?, dst)
    }

    /// Does the pinned range hold `[addr, addr+n)` (owner's addresses)?
    #[inline]
    pub fn covers(&self, addr: u64, n: u64) -> bool {
        self.offset_of(addr).ok().zip(usize::try_from(n).ok()).is_some_and(|(o, n)| self.at(o, n, 1).is_ok())
    }

    /// Would an aligned 8-byte store at the owner's address `addr` succeed?
    #[inline]
    pub fn can_store_u64_at(&self, addr: u64) -> bool {
        self.can_store_at(addr, 8)
    }

    /// Would an aligned `n`-byte store at the owner's address `addr` succeed?
    #[inline]
    pub fn can_store_at(&self, addr: u64, n: usize) -> bool {
        self.offset_of(addr).and_then(|o| self.at(o, n, n)).is_ok()
    }

    /// [`PinnedRef::store_u64`] at the owner's address `addr`.
    #[inline]
    pub fn store_u64_at(&self, addr: u64, v: u64) -> Result<()> {
        self.store_u64(self.offset_of(addr)?, v)
    }

    /// Applies `op` atomically at the owner's address `addr` (as [`Live::atomic`]) and
    /// returns the old value.
    #[inline]
    pub fn atomic_at(&self, addr: u64, width: AmoWidth, op: AmoOp) -> Result<u64> {
        self.atomic(self.offset_of(addr)?, width, op)
    }

    /// [`PinnedRef::atomic_at`] at offset `off` of the pinned range.  Always inlined: a
    /// bounds test and the atomic (see [`atomic::apply`]), so that a constant width and
    /// operation fold.
    #[inline(always)]
    pub fn atomic(&self, off: usize, width: AmoWidth, op: AmoOp) -> Result<u64> {
        let n = width.bytes();
        let p = self.at(off, n, n)?;
        // SAFETY: aligned, inside the pinned range, mapped for the life of the pin.
        unsafe { atomic::apply(p, width, op) }
    }

    /// Stores the low `n` (4 or 8) bytes of `v` at the owner's address `addr` with one
    /// atomic Release store.
    #[inline]
    pub fn store_word_at(&self, addr: u64, v: u64, n: usize) -> Result<()> {
        let p = self.at(self.offset_of(addr)?, n, n)?;
        // SAFETY: aligned, inside the pinned range; other parties access it atomically.
        unsafe {
            match n {
                4 => (*(p as *const std::sync::atomic::AtomicU32)).store(v as u32, Ordering::Release),
                8 => (*(p as *const AtomicU64)).store(v, Ordering::Release),
                _ => return Err(Error::InvalidArg),
            }
        }
        Ok(())
    }

    /// Loads the `n` (4 or 8) bytes at the owner's address `addr` with one atomic Acquire
    /// load (the reading side of [`PinnedRef::store_word_at`]).
    #[inline]
    pub fn load_word_at(&self, addr: u64, n: usize) -> Result<u64> {
        let p = self.at(self.offset_of(addr)?, n, n)?;
        // SAFETY: aligned, inside the pinned range; other parties access it atomically.
        unsafe {
            match n {
                4 => Ok((*(p as *const std::sync::atomic::AtomicU32)).load(Ordering::Acquire) as u64),
                8 => Ok((*(p as *const AtomicU64)).load(Ordering::Acquire)),
                _ => Err(Error::InvalidArg),
            }
        }
    }

    /// Copies `src` to offset `off`.
    #[inline]
    pub fn put(&self, off: usize, src: &[u8]) -> Result<()> {
        let p = self.at(off, src.len(), 1)?;
        // SAFETY: inside the pinned range (checked), mapped for the life of the pin; `copy`
        // because a self-pin may overlap the source.
        unsafe { crate::copy::copy(src.as_ptr(), p, src.len()) };
        Ok(())
    }

    /// Copies the bytes at offset `off` into `dst` (a pin's check covers reads too: a
    /// range pinned for writing is readable).
    #[inline]
    pub fn get(&self, off: usize, dst: &mut [u8]) -> Result<()> {
        let p = self.at(off, dst.len(), 1)?;
        // SAFETY: inside the pinned range (checked), mapped for the life of the pin; `copy`
        // because a self-pin may overlap the destination.
        unsafe { crate::copy::copy(p, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// Stores the 64-bit `v` at offset `off` with one atomic Release store (as
    /// [`Live::store_u64`]).
    #[inline]
    pub fn store_u64(&self, off: usize, v: u64) -> Result<()> {
        let p = self.at(off, 8, 8)?;
        // SAFETY: aligned, inside the pinned range; other parties access it atomically.
        unsafe { (*(p as *const AtomicU64)).store(v, Ordering::Release) };
        Ok(())
    }
}

/// A peer's ring (see [`Live::post_event`]) attached once and re-checked per push like a
/// [`Pinned`] range (the backing still live, of the pinned generation, same mapping).
pub struct PinnedRing<T: Pod> {
    peer: Arc<Peer>,
    site: PinSite,
    ring: Ring<T>,
}

// SAFETY: as for `Pinned`; the ring itself is Send + Sync.
unsafe impl<T: Pod> Send for PinnedRing<T> {}
unsafe impl<T: Pod> Sync for PinnedRing<T> {}

impl<T: Pod> PinnedRing<T> {
    /// Attaches the ring at `loc` of `peer`; errors as [`Live::post_event`].
    pub fn new(peer: &Arc<Peer>, loc: &RingLoc) -> Result<PinnedRing<T>> {
        if peer.net.is_some() {
            return Err(Error::Unsupported);
        }
        peer.check_alive()?;
        let (site, p) = peer.pin_site(loc.backing, peer.ring_addr(loc)?, loc.len)?;
        if site.backing_gen != loc.backing_gen {
            return Err(Error::StaleHandle);
        }
        // SAFETY: p..p+len lies inside the mapped backing (checked above); attach validates
        // the header.
        let ring = unsafe { Ring::<T>::attach(p, loc.len as usize)? };
        Ok(PinnedRing { peer: peer.clone(), site, ring })
    }

    /// The ring for one push by `live` (which must be the pinned peer), or `StaleHandle`.
    #[inline]
    pub fn check(&self, live: Live<'_>) -> Result<&Ring<T>> {
        if std::ptr::eq(live.0, &*self.peer) && self.peer.site_valid(&self.site, true) {
            Ok(&self.ring)
        } else {
            Err(Error::StaleHandle)
        }
    }
}

/// Validates an access without performing it (same checks and errors as [`put`] /
/// [`get`]): lets an API check every part of a compound operation before moving any byte.
pub fn check(peer: &Peer, key: MemKey, remote_addr: u64, len: usize, write: bool, pd: u64) -> Result<()> {
    peer.live()?.check(key, remote_addr, len, write, pd)
}

/// Writes `src` to `remote_addr` in the peer's registration `key`.
pub fn put(peer: &Peer, key: MemKey, remote_addr: u64, src: &[u8], pd: u64) -> Result<()> {
    peer.live()?.put(key, remote_addr, src, pd)
}

/// Reads from `remote_addr` in the peer's registration `key` into `dst`.
pub fn get(peer: &Peer, key: MemKey, remote_addr: u64, dst: &mut [u8], pd: u64) -> Result<()> {
    peer.live()?.get(key, remote_addr, dst, pd)
}

/// Applies `op` atomically at `remote_addr` and returns the old value (see [`Live::atomic`]).
pub fn atomic(peer: &Peer, key: MemKey, remote_addr: u64, width: AmoWidth, op: AmoOp, pd: u64) -> Result<u64> {
    peer.live()?.atomic(key, remote_addr, width, op, pd)
}

/// Appends `v` to the ring at `loc` in the peer's library-owned shared memory (see
/// [`Live::post_event`]).
pub fn post_event<T: Pod>(peer: &Peer, loc: &RingLoc, v: &T, overrun: bool) -> Result<bool> {
    peer.live()?.post_event(loc, v, overrun)
}

/// Appends an entry given as its bytes to the ring at `loc` of `peer`, whatever the ring's
/// entry type (the network engine's target side; see [`crate::ring::push_bytes`]).
pub fn post_event_bytes(peer: &Peer, loc: &RingLoc, bytes: &[u8], overrun: bool) -> Result<bool> {
    if peer.net.is_some() {
        return Err(Error::Unsupported);
    }
    peer.check_alive()?;
    let (p, _) = peer.backing_ptr(loc.backing, peer.ring_addr(loc)?, Some(loc.backing_gen))?;
    // SAFETY: p..p+len lies inside the mapped backing (checked above); push_bytes validates
    // the header against len.
    unsafe { crate::ring::push_bytes(p, loc.len as usize, bytes, overrun) }
}

/// The notify ring of a peer's registration (see [`Live::notify_ring`]).
pub fn notify_ring(peer: &Peer, key: MemKey, pd: u64) -> Result<Option<RingLoc>> {
    peer.live()?.notify_ring(key, pd)
}

/// A view of `loc.len` bytes of a peer's library-owned shared memory (from
/// [`crate::mem::alloc_shared`], named by a [`RingLoc`]), for structures other than rings
/// that peers operate on with atomics (e.g. uGNI's datagram boards).  Owns its mapping, so
/// it stays valid (the memfd stays alive) even after the owner frees the memory or exits;
/// the owner's later frees are detected through its registry entry, not through this view.
pub struct RegionView {
    ptr: *mut u8,
    len: usize,
    _map: Option<Mapping>,
}

// SAFETY: plain shared memory; users synchronise through atomics in it.
unsafe impl Send for RegionView {}
unsafe impl Sync for RegionView {}

impl RegionView {
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Maps the region `loc` of `peer` (its own memory in place when `peer` is this process).
/// Validated like [`post_event`]: `InvalidHandle`, `StaleHandle` (backing freed or of
/// another generation), `OutOfBounds`, `PeerDead`.
pub fn map_region(peer: &Peer, loc: &RingLoc) -> Result<RegionView> {
    if peer.net.is_some() {
        return Err(Error::Unsupported); // another machine's memory cannot be mapped
    }
    peer.check_alive()?;
    let e = peer.ctl.back(loc.backing as usize).ok_or(Error::InvalidHandle)?;
    let gen = e.gen.load(Ordering::Acquire);
    if e.state.load(Ordering::Acquire) != LIVE || gen != loc.backing_gen {
        return Err(Error::StaleHandle);
    }
    let base = e.base.load(Ordering::Relaxed);
    let blen = e.len.load(Ordering::Relaxed);
    let fd = e.fd.load(Ordering::Relaxed) as i32;
    let ino = e.ino.load(Ordering::Relaxed);
    fence(Ordering::Acquire);
    if e.gen.load(Ordering::Relaxed) != gen || e.state.load(Ordering::Relaxed) != LIVE {
        return Err(Error::StaleHandle);
    }
    match loc.offset.checked_add(loc.len) {
        Some(end) if end <= blen && loc.len > 0 => {}
        _ => return Err(Error::OutOfBounds),
    }
    if peer.is_self {
        // SAFETY: inside our own live backing (checked above).
        return Ok(RegionView { ptr: (base + loc.offset) as *mut u8, len: loc.len as usize, _map: None });
    }
    let map = shm::map_peer(peer.r.pid, fd, ino, blen as usize).map_err(|e| if e == Error::StaleHandle && !peer.is_alive() { Error::PeerDead } else { e })?;
    // SAFETY: offset + len <= blen, the mapping's length.
    let ptr = unsafe { map.ptr().add(loc.offset as usize) };
    Ok(RegionView { ptr, len: loc.len as usize, _map: Some(map) })
}

/// A peer's library-owned region (a [`RingLoc`]) that several processes operate on with
/// word-sized atomics and copies (uGNI's datagram boards): mapped here when the owner is
/// on this node, else reached through the network engine, where the owner's progress
/// thread performs each operation on its own mapping.  Offsets are from the region's
/// start; every access is bounds-checked (`OutOfBounds`), words must be 8-aligned
/// (`Misaligned`).
pub enum Region {
    Mapped(RegionView),
    Remote { peer: Arc<Peer>, loc: RingLoc },
}

impl Region {
    /// Opens `loc` of `peer` (see [`map_region`] for the errors).
    pub fn open(peer: &Arc<Peer>, loc: &RingLoc) -> Result<Region> {
        match &peer.net {
            Some(_) => Ok(Region::Remote { peer: peer.clone(), loc: *loc }),
            None => map_region(peer, loc).map(Region::Mapped),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Region::Mapped(v) => v.len,
            Region::Remote { loc, .. } => loc.len as usize,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Is the owner reached through the network engine?
    pub fn is_remote(&self) -> bool {
        matches!(self, Region::Remote { .. })
    }

    fn remote(&self) -> Option<(&Arc<net::Remote>, [u64; 3])> {
        match self {
            Region::Remote { peer, loc } => peer.net.as_ref().map(|r| (r, loc.to_words())),
            Region::Mapped(_) => None,
        }
    }

    fn at(&self, off: usize, n: usize, align: usize) -> Result<*mut u8> {
        let Region::Mapped(v) = self else { return Err(Error::Unsupported) };
        region_ptr(v.ptr, v.len, off, n, align)
    }

    /// Acquire load of the u64 at `off`.
    pub fn load_u64(&self, off: usize) -> Result<u64> {
        let mut b = [0u8; 8];
        if let Some((r, loc)) = self.remote() {
            net::engine()?.region_read(r, loc, off, &mut b)?;
            return Ok(u64::from_ne_bytes(b));
        }
        // SAFETY: in bounds and aligned (checked); shared words are accessed atomically.
        Ok(unsafe { (*(self.at(off, 8, 8)? as *const AtomicU64)).load(Ordering::Acquire) })
    }

    /// Release store of `v` at `off`.
    pub fn store_u64(&self, off: usize, v: u64) -> Result<()> {
        if let Some((r, loc)) = self.remote() {
            return net::engine()?.region_write(r, loc, off, &v.to_ne_bytes(), true);
        }
        // SAFETY: as in load_u64.
        unsafe { (*(self.at(off, 8, 8)? as *const AtomicU64)).store(v, Ordering::Release) };
        Ok(())
    }

    /// Compare-exchange (AcqRel) of the u64 at `off`: `Ok(old)` when it held `old` and now
    /// holds `new`, `Err(current)` otherwise (wrapped in the outer `Ok`).
    pub fn cas_u64(&self, off: usize, old: u64, new: u64) -> Result<std::result::Result<u64, u64>> {
        if let Some((r, loc)) = self.remote() {
            let cur = net::engine()?.region_cas(r, loc, off, old, new)?;
            return Ok(if cur == old { Ok(cur) } else { Err(cur) });
        }
        // SAFETY: as in load_u64.
        let a = unsafe { &*(self.at(off, 8, 8)? as *const AtomicU64) };
        Ok(a.compare_exchange(old, new, Ordering::AcqRel, Ordering::Acquire))
    }

    /// Copies `dst.len()` bytes from `off`.
    pub fn read(&self, off: usize, dst: &mut [u8]) -> Result<()> {
        if let Some((r, loc)) = self.remote() {
            return net::engine()?.region_read(r, loc, off, dst);
        }
        let p = self.at(off, dst.len(), 1)?;
        // SAFETY: in bounds (checked); the bytes are published by words the caller read.
        unsafe { std::ptr::copy_nonoverlapping(p, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// Copies `src` to `off` (plain stores; publish with a later [`Region::store_u64`]).
    pub fn write(&self, off: usize, src: &[u8]) -> Result<()> {
        if let Some((r, loc)) = self.remote() {
            return net::engine()?.region_write(r, loc, off, src, false);
        }
        let p = self.at(off, src.len(), 1)?;
        // SAFETY: in bounds (checked); the slot is owned by the caller's claim.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), p, src.len()) };
        Ok(())
    }

    /// `count` pieces of `n` bytes, the i-th at `off + i * stride`, concatenated (one
    /// network round trip for a scan of a whole table).
    pub fn gather(&self, off: usize, stride: usize, count: usize, n: usize) -> Result<Vec<u8>> {
        if let Some((r, loc)) = self.remote() {
            return net::engine()?.region_gather(r, loc, off, stride, count, n);
        }
        let Region::Mapped(v) = self else { return Err(Error::Unsupported) };
        gather_mapped(v.ptr, v.len, off, stride, count, n)
    }

    /// Wakes whoever sleeps on the [`crate::wait::WaitWords`] at `off`.
    pub fn notify(&self, off: usize) -> Result<()> {
        if let Some((r, loc)) = self.remote() {
            return net::engine()?.region_notify(r, loc, off);
        }
        // SAFETY: in bounds, 4-aligned (checked); WaitWords is two atomics.
        let w = unsafe { &*(self.at(off, std::mem::size_of::<crate::wait::WaitWords>(), 4)? as *const crate::wait::WaitWords) };
        w.notify();
        Ok(())
    }
}

/// `ptr + off` when `[off, off+n)` lies in a region of `len` bytes and is `align`-aligned.
fn region_ptr(ptr: *mut u8, len: usize, off: usize, n: usize, align: usize) -> Result<*mut u8> {
    match off.checked_add(n) {
        Some(end) if end <= len => {}
        _ => return Err(Error::OutOfBounds),
    }
    // SAFETY: off + n <= len: inside the region.
    let p = unsafe { ptr.add(off) };
    if misaligned(p, align) {
        return Err(Error::Misaligned);
    }
    Ok(p)
}

/// Is `p` off an `align` boundary?  Alignments are widths (1, 4, 8, a word size): a mask
/// tests a power of two (a division, which a width read at run time would compile to,
/// costs 10-40 cycles on an AMO's path); any other `align`, 0 included, is misaligned.
#[inline(always)]
fn misaligned(p: *mut u8, align: usize) -> bool {
    !align.is_power_of_two() || p as usize & (align - 1) != 0
}

fn gather_mapped(ptr: *mut u8, len: usize, off: usize, stride: usize, count: usize, n: usize) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(count.saturating_mul(n).min(1 << 24));
    for i in 0..count {
        let o = stride.checked_mul(i).and_then(|v| v.checked_add(off)).ok_or(Error::OutOfBounds)?;
        let p = region_ptr(ptr, len, o, n, 1)?;
        // SAFETY: in bounds (checked).
        out.extend_from_slice(unsafe { std::slice::from_raw_parts(p, n) });
    }
    Ok(out)
}

/// Executes a peer's request, carried by the network engine, on this process's own memory
/// through the shared-memory paths (see [`net::SERVE_ON_MEMORY`]).  `a`, `b`, `c`: the
/// request header's argument words.
fn serve_on_memory(op: net::Op, [a, b, c]: [u64; 3], body: &[u8]) -> Result<Vec<u8>> {
    use net::{Op, MAX_DATA};
    let me = Peer::this()?;
    let live = me.live()?;
    let key = MemKey::from_u64(a);
    let word = |i: usize| -> Result<u64> { body.get(i * 8..i * 8 + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).ok_or(Error::InvalidArg) };
    match op {
        Op::Put => live.put(key, b, body, c).map(|_| Vec::new()),
        Op::Get => {
            let n = word(0)? as usize;
            if n > MAX_DATA {
                return Err(Error::InvalidArg);
            }
            let mut out = vec![0u8; n];
            live.get(key, b, &mut out, c)?;
            Ok(out)
        }
        Op::Amo => {
            let (width, amo) = net::decode_amo(word(0)?, word(1)?, word(2)?)?;
            live.atomic(key, b, width, amo, c).map(|old| old.to_le_bytes().to_vec())
        }
        Op::Store => live.store_u64(key, b, word(0)?, c).map(|_| Vec::new()),
        Op::Notify => match live.notify_ring(key, c)? {
            Some(loc) => Ok([1u64, loc.to_words()[0], loc.to_words()[1], loc.to_words()[2]].iter().flat_map(|w| w.to_le_bytes()).collect()),
            None => Ok(vec![0u8; 32]),
        },
        Op::Event => {
            let loc = RingLoc::from_words([word(0)?, word(1)?, word(2)?]);
            let overrun = word(3)? != 0;
            let entry = body.get(32..).ok_or(Error::InvalidArg)?;
            let pushed = post_event_bytes(&me, &loc, entry, overrun)?;
            Ok((pushed as u64).to_le_bytes().to_vec())
        }
        Op::Check => live.check(key, b, word(0)? as usize, word(1)? != 0, c).map(|_| Vec::new()),
        // Region operations: a = location word 0, b = word 1, c = word 2 (the RingLoc);
        // the body starts with the offset.
        Op::RegionRead | Op::RegionWrite | Op::RegionCas | Op::RegionGather | Op::RegionNotify => {
            use region_serve as rs;
            let loc = RingLoc::from_words([a, b, c]);
            let off = word(0)? as usize;
            match op {
                Op::RegionRead => rs::read(&loc, off, (word(1)? as usize).min(MAX_DATA)),
                Op::RegionWrite => rs::write(&loc, off, body.get(16..).ok_or(Error::InvalidArg)?, word(1)? != 0).map(|_| Vec::new()),
                Op::RegionCas => rs::cas(&loc, off, word(1)?, word(2)?).map(|v| v.to_le_bytes().to_vec()),
                Op::RegionGather => {
                    let (stride, count, n) = (word(1)? as usize, word(2)? as usize, word(3)? as usize);
                    if count.saturating_mul(n) > MAX_DATA {
                        return Err(Error::InvalidArg);
                    }
                    rs::gather(&loc, off, stride, count, n)
                }
                _ => rs::notify(&loc, off).map(|_| Vec::new()),
            }
        }
        Op::PutCompound => {
            // [npieces, has_flag, flag key, flag addr, flag value, has_notify, notify key,
            //  entry], then per piece [key, addr, len] and its bytes, padded to 8.
            let n = word(0)? as usize;
            let flag = (word(1)? != 0).then(|| Ok::<_, Error>((MemKey::from_u64(word(2)?), word(3)?, word(4)?))).transpose()?;
            let notify = (word(5)? != 0).then(|| Ok::<_, Error>((MemKey::from_u64(word(6)?), word(7)?))).transpose()?;
            let mut off = 64;
            let mut pieces = Vec::with_capacity(n.min(64));
            for _ in 0..n {
                let w = |o: usize| body.get(o..o + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).ok_or(Error::InvalidArg);
                let (k, a, len) = (MemKey::from_u64(w(off)?), w(off + 8)?, w(off + 16)? as usize);
                let data = body.get(off + 24..off + 24 + len).ok_or(Error::InvalidArg)?;
                pieces.push((k, a, data));
                off += 24 + ((len + 7) & !7);
            }
            live.put_compound(&pieces, flag, notify, c).map(|_| Vec::new())
        }
        Op::Call => {
            let f = service(a as u32).ok_or(Error::Unsupported)?;
            let mut reply = Vec::new();
            f(&me, body, &mut reply)?;
            if reply.len() > MAX_DATA {
                return Err(Error::InvalidArg);
            }
            Ok(reply)
        }
        // The engine answers the other kinds itself.
        _ => Err(Error::InvalidArg),
    }
}

/// Tells the network engine how to execute its peers' requests (set when the library is
/// loaded, before any request can arrive).
extern "C" fn set_engine_hooks() {
    let _ = net::SERVE_ON_MEMORY.set(serve_on_memory);
}

#[used]
#[link_section = ".init_array"]
static SET_ENGINE_HOOKS: extern "C" fn() = set_engine_hooks;

/// The network engine's target side of the [`Region`] operations, on this process's own
/// region `loc`.
pub(crate) mod region_serve {
    use super::*;

    fn mine(loc: &RingLoc) -> Result<RegionView> {
        map_region(&*Peer::this()?, loc)
    }

    pub fn read(loc: &RingLoc, off: usize, n: usize) -> Result<Vec<u8>> {
        let v = mine(loc)?;
        let p = region_ptr(v.ptr, v.len, off, n, 1)?;
        // SAFETY: in bounds (checked).
        Ok(unsafe { std::slice::from_raw_parts(p, n) }.to_vec())
    }

    /// `publish`: an 8-byte write done as one Release store (a state word).
    pub fn write(loc: &RingLoc, off: usize, src: &[u8], publish: bool) -> Result<()> {
        let v = mine(loc)?;
        if publish {
            let p = region_ptr(v.ptr, v.len, off, 8, 8)?;
            let w = u64::from_ne_bytes(src.try_into().map_err(|_| Error::InvalidArg)?);
            // SAFETY: in bounds and aligned (checked).
            unsafe { (*(p as *const AtomicU64)).store(w, Ordering::Release) };
            return Ok(());
        }
        let p = region_ptr(v.ptr, v.len, off, src.len(), 1)?;
        // SAFETY: in bounds (checked).
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), p, src.len()) };
        Ok(())
    }

    pub fn cas(loc: &RingLoc, off: usize, old: u64, new: u64) -> Result<u64> {
        let v = mine(loc)?;
        let p = region_ptr(v.ptr, v.len, off, 8, 8)?;
        // SAFETY: in bounds and aligned (checked).
        let a = unsafe { &*(p as *const AtomicU64) };
        Ok(match a.compare_exchange(old, new, Ordering::AcqRel, Ordering::Acquire) {
            Ok(x) | Err(x) => x,
        })
    }

    pub fn gather(loc: &RingLoc, off: usize, stride: usize, count: usize, n: usize) -> Result<Vec<u8>> {
        let v = mine(loc)?;
        gather_mapped(v.ptr, v.len, off, stride, count, n)
    }

    pub fn notify(loc: &RingLoc, off: usize) -> Result<()> {
        let v = mine(loc)?;
        let p = region_ptr(v.ptr, v.len, off, std::mem::size_of::<crate::wait::WaitWords>(), 4)?;
        // SAFETY: in bounds, aligned (checked).
        unsafe { &*(p as *const crate::wait::WaitWords) }.notify();
        Ok(())
    }
}

// ---- services ------------------------------------------------------------------------
//
// Some target-side work is more than a put or an atomic: Portals walks the target's match
// list and deposits into the entry it picks, SISCI triggers an interrupt.  An API library
// writes such work once, as a service handler operating on a target Peer's memory, and
// runs it with [`Peer::call`]: in the calling process when the target is on this node
// (the handler maps the target's shared memory, so the target takes no part, as with
// every one-sided operation), and in the target's network progress thread, with the
// target as itself, when the target is reached through the network engine.  The handler
// is the same code either way; it cannot tell who runs it.
//
// A handler must be short and must never wait for another remote operation: two progress
// threads waiting on each other's handlers would deadlock.  Work the initiator must do
// afterwards (its own completion event, copying reply data) it does after `call` returns.

/// A service handler: operates on `target`'s memory for the request `req` and appends its
/// answer to `reply` (at most [`MAX_CALL`] bytes).
pub type Service = fn(target: &Arc<Peer>, req: &[u8], reply: &mut Vec<u8>) -> Result<()>;

/// Most bytes in a service request or reply.
pub const MAX_CALL: usize = net::MAX_DATA;

/// Service ids are small (the API ids of [`crate::registry::api`]).
const NSERVICE: usize = 256;

/// Registered handlers by id (a `Service` as usize; 0 = none).  A plain table: `call`
/// reads it without a lock on every operation.
static SERVICES: [std::sync::atomic::AtomicUsize; NSERVICE] = [const { std::sync::atomic::AtomicUsize::new(0) }; NSERVICE];

/// Registers the handler of service `id` (an id of [`crate::registry::api`], < 256) in
/// this process; a later registration replaces it.  `InvalidArg` for an id out of range.
pub fn register_service(id: u32, f: Service) -> Result<()> {
    let slot = SERVICES.get(id as usize).ok_or(Error::InvalidArg)?;
    slot.store(f as usize, Ordering::Release);
    Ok(())
}

/// The handler of service `id` registered in this process.
pub(crate) fn service(id: u32) -> Option<Service> {
    let f = SERVICES.get(id as usize)?.load(Ordering::Acquire);
    // SAFETY: non-zero values are `Service` function pointers stored by register_service.
    (f != 0).then(|| unsafe { std::mem::transmute::<usize, Service>(f) })
}

impl Peer {
    /// Runs service `id` with this peer as its target (see the section comment above):
    /// here when the peer is on this node, in the peer's progress thread when it is
    /// reached through the network engine.  Errors: `InvalidArg` (a request over
    /// [`MAX_CALL`]), `Unsupported` (no handler for `id` where it must run), `PeerDead`
    /// (gone, or no answer within `SOFTNIC_NET_TIMEOUT_MS`), and the handler's own.
    pub fn call(self: &Arc<Self>, id: u32, req: &[u8], reply: &mut Vec<u8>) -> Result<()> {
        if req.len() > MAX_CALL {
            return Err(Error::InvalidArg);
        }
        if let Some(r) = &self.net {
            let d = net::engine()?.call_service(r, id, req)?;
            reply.extend_from_slice(&d);
            return Ok(());
        }
        self.check_alive()?;
        let f = service(id).ok_or(Error::Unsupported)?;
        let start = reply.len();
        f(self, req, reply)?;
        if reply.len() - start > MAX_CALL {
            // The same limit as across nodes, so that a program cannot depend on one engine.
            reply.truncate(start);
            return Err(Error::InvalidArg);
        }
        Ok(())
    }

    /// The endpoint published under (`api`, `key`) in the node registry of node `node`, and
    /// its owner reached through the right engine.  The registry asked is this machine's
    /// when `node` is on it (virtual nodes of one machine share one registry, so their
    /// keys must name the node), else that of `node`, through one of its processes the
    /// network engine knows.  `NotFound` when nothing is published under the key (or no
    /// process of `node` is known once every rank of the job has published), `PeerDead`.
    pub fn lookup(node: u32, api: u32, key: &[u8]) -> Result<(Arc<Peer>, [u8; crate::registry::PAYLOAD_LEN])> {
        match net::running() {
            Some(e) if e.node != node => {
                let (id, payload) = e.lookup(node, api, key)?;
                Ok((Peer::at(node, id, 32)?, payload))
            }
            _ => {
                let ep = crate::registry::lookup(api, key)?;
                Ok((Peer::at(node, ep.owner, 32)?, ep.payload))
            }
        }
    }
}

#[cfg(test)]
mod alignment_tests {
    #[test]
    fn misaligned_takes_widths_and_refuses_the_rest() {
        let p = 0x1000 as *mut u8;
        for align in [1usize, 2, 4, 8, 16, 4096] {
            assert!(!super::misaligned(p, align), "{align}");
            assert_eq!(super::misaligned(p.wrapping_add(4), align), align > 4, "{align}");
        }
        // Not a width: misaligned, never a division by zero.
        assert!(super::misaligned(p, 0));
        assert!(super::misaligned(p, 3));
    }
}
