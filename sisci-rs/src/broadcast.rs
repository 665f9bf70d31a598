//! Reflective memory (SCI_FLAG_BROADCAST segments), on one machine and across machines.
//!
//! **A private copy per node.**  As with PCIe multicast, every broadcast segment (one per
//! node and group id) has its own memory, the node's copy: its local maps (and unicast
//! connections to it) are plain memory, and a store through them stays in that copy.  What
//! is written *to the group* — through a broadcast map (crate::shadow), SCIMemCpy or
//! SCIMemWrite to one, a DMA to a broadcast connection — reaches every member's copy.
//!
//! **The machine's mirror.**  Each machine holds the group's content as broadcast, the
//! *mirror* (made by the first broadcast segment of the group on the machine: a registry
//! key of the machine, "SCIg" + id, owned by its process, whose memory it is), with a
//! table of the machine's copies.  A write to the group ([`Group::write`]) goes, under the
//! mirror's lock, into the mirror and every copy of the machine, so on one machine it is
//! in every member's copy when the writing call returns.  Broadcast maps are buffers whose
//! loads see the mirror (the group's content, never a node's private stores) and whose
//! stores are written to the group at the sync points of crate::shadow.
//!
//! **Across machines: a hub.**  The machines' mirrors are kept in step the way maps of
//! another machine's segment are (crate::twin, the same code): one mirror is the group's
//! *hub*; every other machine ships the 8-byte words written into its mirror to the hub
//! and reloads its mirror from the hub word by word (a word written and not shipped yet
//! keeps its value), when a write to the group is made (before it returns), at its members'
//! sync points (sequences, SCICacheSync with SCI_FLAG_CACHE_INVALIDATE; an interrupt's
//! delivery reloads first) and every SOFTNIC_SISCI_SHADOW_US in the background.  Words that
//! reach a machine's mirror from elsewhere (a reload; on the hub's machine, other
//! machines' writes) are then written into the machine's copies: a third region of the
//! mirror, *applied*, holds what the copies were given, and the words where the mirror
//! differs from it are what is new.  So a write reaches the hub before the writing call
//! returns and the other machines' copies at their next reload; on a word several
//! machines write, the hub's order decides (the last writer wins) and every mirror ends
//! with the hub's value.  Every member machine shipping to every other would save a hop,
//! but a word two machines write at once could then end different on different machines,
//! with nothing to settle it.
//!
//! **Which mirror is the hub.**  A mirror has an epoch: 0 when no other machine had one
//! when it was made, else one more than the highest epoch among them.  The hub is the
//! live mirror of least (epoch, launcher node, token): the first machine (the lowest node
//! among machines that joined at once), and when its process is gone the next oldest, so
//! a machine joining later never replaces the group's content with its empty mirror.  A
//! mirror whose making process has ended is no hub; its machine's members go on syncing
//! with the others' hub.  A machine without a member has no mirror: its broadcast maps
//! are shadows of the hub's mirror, its writes go there.
//!
//! **Membership.**  A mirror's header lists the other machines' mirrors.  A machine making
//! a mirror publishes it, then looks the group up on every other node of the job
//! (`Peer::lookup`), records what it finds and tells each (the service's BC_JOIN adds it
//! to their list): publish first, then look, so of two machines joining at once at least
//! the later looker sees the other, and both learn of each other.  Then the new mirror is
//! filled from the hub.  A node's copy starts as the mirror's content when its segment is
//! made, and leaves the table when the segment is removed (or its process ends).
//!
//! **Shared state**, in the mirror's memory before the data (crate::mirror): magic, size,
//! token, the sync lock (pid of the process syncing; taken over from a process that died
//! holding it), when the machine's next background pass is due, this mirror's epoch and
//! node, a version (counts the writes into the copies, so broadcast maps of a single
//! machine reload only after one), the member table, the table of the machine's copies;
//! after the data, the twin (what the hub held at the last pass), then *applied*.  Any
//! process of the machine that uses the group syncs it: one at a time (the lock), one
//! background pass per period for the whole machine (the due time).  A process that dies
//! in the middle of a pass can leave words recorded as shipped that were not (lost), or
//! shipped and not recorded (shipped again).

use crate::memory::{alloc_data, Data};
use crate::mirror::*;
use crate::node;
use crate::service::{self, Msg, BC_JOIN};
use crate::status::*;
use crate::twin::{self, Kept};
use crate::types::*;
use softnic_fabric::mem::{MemKey, RingLoc};
use softnic_fabric::registry::{self, api, ProcId};
use softnic_fabric::rma::{Peer, RegionView};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// A copy as published in its machine's registry (the 64-byte payload of "SCIg" + id):
/// location of the whole copy, data size, registration key, the node whose segment made
/// it, epoch, header address, token.
struct Card {
    loc: RingLoc,
    size: u64,
    key: MemKey,
    creator: u32,
    epoch: u32,
    base: u64,
    token: u64,
}

impl Card {
    fn encode(&self) -> [u8; 64] {
        let mut p = [0u8; 64];
        for (i, w) in self.loc.to_words().iter().enumerate() {
            p[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
        }
        p[24..32].copy_from_slice(&self.size.to_le_bytes());
        p[32..40].copy_from_slice(&self.key.to_u64().to_le_bytes());
        p[40..44].copy_from_slice(&self.creator.to_le_bytes());
        p[44..48].copy_from_slice(&self.epoch.to_le_bytes());
        p[48..56].copy_from_slice(&self.base.to_le_bytes());
        p[56..64].copy_from_slice(&self.token.to_le_bytes());
        p
    }
    fn decode(p: &[u8; 64]) -> Card {
        let w = |o: usize| u64::from_le_bytes(p[o..o + 8].try_into().expect("8 bytes"));
        let h = |o: usize| u32::from_le_bytes(p[o..o + 4].try_into().expect("4 bytes"));
        Card { loc: RingLoc::from_words([w(0), w(8), w(16)]), size: w(24), key: MemKey::from_u64(w(32)), creator: h(40), epoch: h(44), base: w(48), token: w(56) }
    }
    fn member(&self, enode: u32, proc: ProcId) -> Member {
        Member { enode, epoch: self.epoch, proc, key: self.key, base: self.base, size: self.size, token: self.token }
    }
}

fn round8(n: usize) -> Option<usize> {
    n.checked_add(7).map(|x| x & !7)
}

fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid out pointer; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

/// A token no other copy has (in practice): 64 random bits, never 0.
fn new_token() -> u64 {
    let mut t = 0u64;
    // SAFETY: writes at most 8 bytes into `t`.
    let n = unsafe { libc::getrandom(&mut t as *mut u64 as *mut libc::c_void, 8, 0) };
    if n != 8 {
        t = mono_ns() ^ (std::process::id() as u64) << 32 ^ (&t as *const u64 as u64);
    }
    t.max(1)
}

/// Mirrors this process made (their memory stays for the process's life).
static MINE: Mutex<Vec<(u32, Data)>> = Mutex::new(Vec::new());
/// This process's handles, one per mirror.
static OPEN: Mutex<Vec<Weak<Group>>> = Mutex::new(Vec::new());
/// Handles alive that may have other machines (the network engine ran when made).
static SPANNING: AtomicUsize = AtomicUsize::new(0);

/// How a sync waits for the mirror's lock.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Only when free.
    No,
    Yes,
    /// Yes, and the wait is a cancellation point of the blocking call that makes it
    /// (SCIFlush, SCIStoreBarrier: nothing is written yet while it waits).
    Cancellable,
}

/// This process's handle of its machine's mirror of a group.
pub struct Group {
    pub id: u32,
    pub token: u64,
    base: *mut u8,
    size: usize,
    /// The process whose memory the mirror is.
    pub owner: Arc<Peer>,
    pub key: MemKey,
    addr: u64,
    _view: RegionView,
    /// Hubs this process reached, by token.
    hubs: Mutex<Vec<(u64, Arc<Peer>)>>,
    /// Counted in SPANNING: other machines may write into the mirror (reloads, and on the
    /// hub's machine their writes), so what is new in it goes on into the copies.
    pub spanning: bool,
}

impl Drop for Group {
    fn drop(&mut self) {
        if self.spanning {
            SPANNING.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

// SAFETY: `base` points into the mapping `_view` keeps; the shared words are atomics, the
// data, twin and applied regions are only touched under the mirror's lock (the program
// never sees the mirror's memory).
unsafe impl Send for Group {}
unsafe impl Sync for Group {}

/// The mirror's sync lock, held.
struct Held<'a>(&'a AtomicU64);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Release);
    }
}

/// A node's copy, as the table of its machine's mirror holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Copy {
    pub node: u32,
    pub proc: ProcId,
    pub key: MemKey,
    pub addr: u64,
    pub size: u64,
    pub token: u64,
}

/// A node's copy in its machine's table for as long as its segment lives (see
/// [`join`]); [`Membership::leave`] (or dropping it) takes it out.
pub struct Membership {
    pub group: Arc<Group>,
    token: u64,
}

impl Membership {
    pub fn leave(&self) {
        self.group.forget(self.token);
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        self.leave();
    }
}

/// Runs of bytes (offset in the group's data, bytes) written to the group.
pub type Runs<'a> = [(usize, &'a [u8])];

impl Group {
    fn word(&self, off: usize) -> &AtomicU64 {
        // SAFETY: off + 8 <= HDR, inside the mapping; 8-aligned (page-aligned base).
        unsafe { &*(self.base.add(off) as *const AtomicU64) }
    }
    fn data(&self) -> *mut u8 {
        // SAFETY: the data follow the header inside the mapping.
        unsafe { self.base.add(HDR) }
    }
    /// The twin (what the hub held), then what the copies were given.
    fn region(&self, k: usize, n: usize) -> &mut [u8] {
        // SAFETY: regions 1 and 2 follow the data (each rounded to words) inside the
        // mapping; n <= size; only used under the lock, so no other process or thread
        // touches them meanwhile.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(HDR + k * round8(self.size).unwrap_or(0)), n) }
    }
    fn twin(&self, n: usize) -> &mut [u8] {
        self.region(1, n)
    }
    fn applied(&self) -> &mut [u8] {
        self.region(2, self.size)
    }
    pub fn size(&self) -> usize {
        self.size
    }
    /// Where the group's content is: the mirror's data, at this address in its owner.
    pub fn data_addr(&self) -> u64 {
        self.addr + HDR as u64
    }
    /// Copies the group's content at `off` into `dst` (as far as the group goes; a read
    /// not ordered with writes, as a load through a mapping is not).
    pub fn read(&self, off: usize, dst: &mut [u8]) {
        let n = dst.len().min(self.size.saturating_sub(off));
        // SAFETY: off + n <= size: inside the mirror's data, mapped while self lives (the
        // same copy a one-sided get on this machine makes).
        unsafe { std::ptr::copy_nonoverlapping(self.data().add(off), dst.as_mut_ptr(), n) };
    }
    /// Changes with every write into the mirror made on this machine.
    pub fn version(&self) -> u64 {
        self.word(G_VERSION).load(Ordering::Acquire)
    }

    /// Takes the sync lock (without waiting: only when free, or held by a dead process).
    fn lock(&self, wait: Wait) -> Option<Held<'_>> {
        let me = std::process::id() as u64;
        let w = self.word(G_LOCK);
        let mut tries = 0u32;
        loop {
            let holder = match w.compare_exchange(0, me, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Some(Held(w)),
                Err(h) => h,
            };
            if (wait == Wait::No || tries % 512 == 511) && holder != me && !registry::pid_alive(holder as i32, None) {
                // Its holder died in the middle of a pass: take it over.
                if w.compare_exchange(holder, me, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                    return Some(Held(w));
                }
            }
            match wait {
                Wait::No => return None,
                _ if tries < 64 => std::hint::spin_loop(),
                Wait::Cancellable => softnic_fabric::cancel::point(|| softnic_fabric::cancel::sleep(Duration::from_micros(20))),
                Wait::Yes => softnic_fabric::cancel::nap(Duration::from_micros(20)),
            }
            tries = tries.wrapping_add(1);
        }
    }

    fn entry(&self, i: usize) -> Option<Member> {
        let e = M_OFF + i * M_LEN;
        if self.word(e + M_STATE).load(Ordering::Acquire) != ST_LIVE {
            return None;
        }
        let mut w = [0u64; 6];
        for (k, x) in w.iter_mut().enumerate() {
            *x = self.word(e + 8 + 8 * k).load(Ordering::Relaxed);
        }
        // Entries are never changed while live: a reuse goes through GONE and CLAIMED.
        (self.word(e + M_STATE).load(Ordering::Acquire) == ST_LIVE).then(|| Member::from_words(w))
    }

    /// Other machines' mirrors this mirror knows (live as far as it knows).
    pub fn members(&self) -> Vec<Member> {
        (0..NMEMBER).filter_map(|i| self.entry(i)).filter(|m| m.token != self.token).collect()
    }

    /// The mirror to keep in step with: None when this mirror is the hub (or alone).
    fn hub(&self) -> Option<(usize, Member)> {
        let who = self.word(G_WHO).load(Ordering::Acquire);
        let mine = (who as u32, (who >> 32) as u32, self.token);
        let best = (0..NMEMBER).filter_map(|i| self.entry(i).map(|m| (i, m))).filter(|(_, m)| m.token != self.token).min_by_key(|(_, m)| m.rank())?;
        if best.1.rank() > mine && self.owner.seems_alive() {
            return None;
        }
        Some(best)
    }

    fn mark_gone(&self, i: usize, token: u64) {
        let e = M_OFF + i * M_LEN;
        if self.word(e + M_TOKEN).load(Ordering::Acquire) == token {
            let _ = self.word(e + M_STATE).compare_exchange(ST_LIVE, ST_GONE, Ordering::AcqRel, Ordering::Relaxed);
        }
    }

    fn peer(&self, m: &Member) -> softnic_fabric::Result<Arc<Peer>> {
        let mut h = self.hubs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, p)) = h.iter().find(|(t, _)| *t == m.token) {
            return Ok(p.clone());
        }
        let p = Peer::at(m.enode, m.proc, 32)?;
        h.push((m.token, p.clone()));
        Ok(p)
    }

    // ---- the machine's copies ---------------------------------------------------------

    fn copy_at(&self, i: usize) -> Option<Copy> {
        let e = L_OFF + i * L_LEN;
        if self.word(e).load(Ordering::Acquire) != ST_LIVE {
            return None;
        }
        let w = |o: usize| self.word(e + o).load(Ordering::Relaxed);
        let p = w(L_PROC);
        let c = Copy { node: w(L_NODE) as u32, proc: ProcId { slot: p as u32, gen: (p >> 32) as u32 }, key: MemKey::from_u64(w(L_KEY)), addr: w(L_ADDR), size: w(L_SIZE), token: w(L_TOKEN) };
        (self.word(e).load(Ordering::Acquire) == ST_LIVE).then_some(c)
    }

    /// The machine's copies (live as far as the table knows).
    pub fn copies(&self) -> Vec<Copy> {
        (0..NLOCAL).filter_map(|i| self.copy_at(i)).collect()
    }

    /// Enters `c` in the table (an entry is claimed in the name of this process, filled,
    /// then made live).
    fn enter(&self, c: &Copy) -> R<()> {
        let me = std::process::id() as u64;
        for i in 0..NLOCAL {
            let e = L_OFF + i * L_LEN;
            let st = self.word(e).load(Ordering::Acquire);
            let free = st == ST_FREE || st == ST_GONE || (st & 0xff == ST_CLAIMED && !registry::pid_alive((st >> 8) as i32, None));
            if !free || self.word(e).compare_exchange(st, ST_CLAIMED | me << 8, Ordering::AcqRel, Ordering::Relaxed).is_err() {
                continue;
            }
            let put = |o: usize, v: u64| self.word(e + o).store(v, Ordering::Relaxed);
            put(L_NODE, c.node as u64);
            put(L_PROC, c.proc.slot as u64 | (c.proc.gen as u64) << 32);
            put(L_KEY, c.key.to_u64());
            put(L_ADDR, c.addr);
            put(L_SIZE, c.size);
            put(L_TOKEN, c.token);
            self.word(e).store(ST_LIVE, Ordering::Release);
            return Ok(());
        }
        Err(SCI_ERR_NOSPC)
    }

    /// Takes copy `token` out of the table.
    fn forget(&self, token: u64) {
        for i in 0..NLOCAL {
            let e = L_OFF + i * L_LEN;
            if self.word(e + L_TOKEN).load(Ordering::Acquire) == token {
                let _ = self.word(e).compare_exchange(ST_LIVE, ST_GONE, Ordering::AcqRel, Ordering::Relaxed);
            }
        }
    }

    /// Writes `runs` into every copy of the machine (each as far as its size); a copy
    /// whose process is gone leaves the table.  Under the lock.
    fn into_copies(&self, runs: &Runs) {
        for c in self.copies() {
            let pieces: Vec<(MemKey, u64, &[u8])> = runs
                .iter()
                .filter(|(off, _)| (*off as u64) < c.size)
                .map(|&(off, b)| (c.key, c.addr + off as u64, &b[..b.len().min((c.size - off as u64) as usize)]))
                .collect();
            if pieces.is_empty() {
                continue;
            }
            let r = Peer::by_id(c.proc, 32).and_then(|p| {
                let live = p.live()?;
                pieces.chunks(16).try_for_each(|ch| live.put_compound(ch, None, None, crate::pool::pd()))
            });
            if let Err(e) = r {
                softnic_fabric::sn_debug!("SISCI", "reflective memory {}: the copy of node {} is gone ({})", self.id, c.node, e);
                self.forget(c.token);
            }
        }
        self.word(G_VERSION).fetch_add(1, Ordering::AcqRel);
    }

    /// Writes to the group: `runs` go into the mirror and every copy of the machine and,
    /// when other machines share the group, on to the hub before this returns.  A run
    /// beyond the group's size is cut.
    pub fn write(&self, runs: &Runs, wait: Wait) -> R<()> {
        let runs: Vec<(usize, &[u8])> = runs.iter().filter(|(o, _)| *o < self.size).map(|&(o, b)| (o, &b[..b.len().min(self.size - o)])).collect();
        let (Some(lo), Some(hi)) = (runs.iter().map(|r| r.0).min(), runs.iter().map(|r| r.0 + r.1.len()).max()) else { return Ok(()) };
        let Some(_held) = self.lock(wait) else { return Err(SCI_ERR_TRANSFER_FAILED) };
        let applied = self.applied();
        for &(off, b) in &runs {
            // SAFETY: off + len <= size: inside the mirror's data.
            unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), self.data().add(off), b.len()) };
            applied[off..off + b.len()].copy_from_slice(b);
        }
        self.into_copies(&runs);
        if self.spanning {
            self.sync_locked(lo, hi, false)?;
        }
        Ok(())
    }

    /// Writes what is new in the mirror (other machines' words) into the machine's copies.
    /// Under the lock.
    fn propagate(&self) {
        let applied = self.applied();
        let runs = twin::changes(self.data(), applied, 0, self.size);
        if runs.is_empty() {
            return;
        }
        let r: Vec<(usize, &[u8])> = runs.iter().map(|(o, v)| (*o, v.as_slice())).collect();
        self.into_copies(&r);
        twin::record(applied, &runs);
    }

    /// Brings the mirror in step with the hub (when other machines may share the group):
    /// ships the words written in [lo, hi) and, with `reload`, reloads the whole mirror
    /// and writes what is new into the machine's copies.  On one machine every write is in
    /// every copy already: nothing to do.
    pub fn sync(&self, lo: usize, hi: usize, reload: bool) -> R<()> {
        if !self.spanning {
            return Ok(());
        }
        let _held = self.lock(Wait::Yes);
        let r = self.sync_locked(lo, hi, reload);
        if reload {
            self.propagate();
        }
        r
    }

    /// A hub that is gone is marked so, and the next one used.  Nothing to do on the
    /// hub's machine.
    fn sync_locked(&self, lo: usize, hi: usize, reload: bool) -> R<()> {
        for _ in 0..=NMEMBER {
            let Some((i, m)) = self.hub() else { return Ok(()) };
            let n = self.size.min(m.size as usize);
            let at = m.base + HDR as u64;
            let r = match self.peer(&m) {
                Ok(p) => {
                    let twin = self.twin(n);
                    twin::ship(self.data(), twin, lo.min(n), hi.min(n), &p, m.key, at)
                        .and_then(|_| if reload { twin::pull(self.data(), twin, &p, m.key, at) } else { Ok(()) })
                        .map_err(|e| (e, p.is_alive()))
                }
                Err(_) => Err((SCI_ERR_TRANSFER_FAILED, false)),
            };
            match r {
                Ok(()) => return Ok(()),
                Err((_, false)) => {
                    softnic_fabric::sn_info!("SISCI", "reflective memory {}: the mirror of node {} is gone; the next oldest one is the hub", self.id, m.enode);
                    self.mark_gone(i, m.token);
                }
                Err((e, true)) => return Err(e),
            }
        }
        Err(SCI_ERR_TRANSFER_FAILED)
    }

    /// This mirror as the member tables of other machines hold it.
    fn as_member(&self) -> Member {
        let who = self.word(G_WHO).load(Ordering::Acquire);
        Member { enode: (who >> 32) as u32, epoch: who as u32, proc: self.owner.proc_id(), key: self.key, base: self.addr, size: self.size as u64, token: self.token }
    }

    /// Meets the other machines' mirrors: records each in our table and ours in theirs.
    fn meet(&self) {
        let me = self.as_member();
        for (enode, peer, c) in scan(self.id, self.token) {
            let m = c.member(enode, peer.proc_id());
            let _ = add_member(&self.owner, self.key, self.addr, self.token, &m);
            if let Err(e) = add_member(&peer, c.key, c.base, c.token, &me) {
                softnic_fabric::sn_debug!("SISCI", "reflective memory {}: telling node {}: {}", self.id, enode, name(e));
            }
        }
    }
}

impl Kept for Group {
    fn keep(&self, period: Duration) {
        if mono_ns() < self.word(G_DUE).load(Ordering::Relaxed) {
            return;
        }
        let Some(_held) = self.lock(Wait::No) else { return };
        if mono_ns() < self.word(G_DUE).load(Ordering::Relaxed) {
            return;
        }
        let _ = self.sync_locked(0, self.size, true);
        self.propagate();
        let next = period.max(twin::rate_limit(self.size)).as_nanos() as u64;
        self.word(G_DUE).store(mono_ns().saturating_add(next), Ordering::Relaxed);
    }
}

/// Adds `m` to the member table of the mirror `token` (header at `base` under `key`) of
/// `target` (the process whose memory it is), through the service (BC_JOIN).
fn add_member(target: &Arc<Peer>, key: MemKey, base: u64, token: u64, m: &Member) -> R<()> {
    let mut req = Msg::op(BC_JOIN).u64(key.to_u64()).u64(base).u64(token);
    for w in m.words() {
        req = req.u64(w);
    }
    match service::request(target, req) {
        Ok((SCI_ERR_OK, _)) => Ok(()),
        Ok((st, _)) => Err(st),
        Err(e) => Err(reach_err(e, SCI_ERR_NO_SUCH_SEGMENT)),
    }
}

/// The mirrors of group `id` on the other nodes of the job (launcher node, owner, card),
/// leaving out the mirror `token` (this machine's, found again through another node of it).
fn scan(id: u32, token: u64) -> Vec<(u32, Arc<Peer>, Card)> {
    let me = node::my_fabric_node();
    (0..node::known_nodes())
        .filter(|&n| n != me)
        .filter_map(|n| {
            let (peer, p) = node::lookup_at(n, &node::group_key(id)).ok()?;
            let c = Card::decode(&p);
            (c.token != token && c.token != 0).then_some((n, peer, c))
        })
        .collect()
}

/// Bytes of a mirror of `size` bytes of data: header, data, twin, applied.
fn mirror_len(size: usize) -> Option<usize> {
    round8(size).and_then(|r| r.checked_mul(3)).and_then(|r| r.checked_add(HDR))
}

/// This process's handle of the mirror `c`, owned by `owner` (one per mirror and process).
fn handle(id: u32, c: &Card, owner: Arc<Peer>) -> R<Arc<Group>> {
    let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    open.retain(|w| w.strong_count() > 0);
    if let Some(g) = open.iter().filter_map(|w| w.upgrade()).find(|g| g.token == c.token) {
        return Ok(g);
    }
    let view = softnic_fabric::rma::map_region(&owner, &c.loc).map_err(|_| SCI_ERR_NO_SUCH_SEGMENT)?;
    let size = usize::try_from(c.size).map_err(|_| SCI_ERR_NOSPC)?;
    if mirror_len(size).map_or(true, |n| n > view.len()) {
        return Err(SCI_ERR_NO_SUCH_SEGMENT);
    }
    // Other machines can only be there when the network engine runs (a job of one
    // machine, e.g. under snrun, has no background pass nor reload for it).
    let spanning = softnic_fabric::net::running().is_some();
    // SAFETY: the first words of the mapping (at least the mirror's length, checked).
    let hw = |off: usize| unsafe { &*(view.as_ptr().add(off) as *const AtomicU64) };
    if hw(G_MAGIC).load(Ordering::Acquire) != GROUP_MAGIC || hw(G_TOKEN).load(Ordering::Acquire) != c.token {
        return Err(SCI_ERR_NO_SUCH_SEGMENT);
    }
    if spanning {
        SPANNING.fetch_add(1, Ordering::AcqRel);
    }
    let g = Arc::new(Group { id, token: c.token, base: view.as_ptr(), size, owner, key: c.key, addr: c.base, _view: view, hubs: Mutex::new(Vec::new()), spanning });
    open.push(Arc::downgrade(&g));
    drop(open);
    if spanning {
        let kept: Arc<dyn Kept> = g.clone();
        twin::keep_in_step(Arc::downgrade(&kept));
    }
    Ok(g)
}

/// Makes this machine's mirror of group `id` for a first member of `size` bytes.
/// `Ok(None)`: another process of the machine made it first.
fn make(id: u32, size: usize) -> R<Option<Arc<Group>>> {
    // One more than the highest epoch among the mirrors that exist (0: none).
    let epoch = scan(id, 0).iter().map(|(_, _, c)| c.epoch.saturating_add(1)).max().unwrap_or(0);
    let len = mirror_len(size).ok_or(SCI_ERR_NOSPC)?;
    let d = alloc_data(len)?;
    let token = new_token();
    let loc = d.loc.ok_or(SCI_ERR_NOSPC)?;
    // SAFETY: the header words of our fresh, zeroed, page-aligned memory.
    let w = |off: usize| unsafe { &*(d.ptr.add(off) as *const AtomicU64) };
    w(G_SIZE).store(size as u64, Ordering::Relaxed);
    w(G_TOKEN).store(token, Ordering::Relaxed);
    w(G_WHO).store(epoch as u64 | (node::my_fabric_node() as u64) << 32, Ordering::Relaxed);
    w(G_MAGIC).store(GROUP_MAGIC, Ordering::Release);
    let c = Card { loc, size: size as u64, key: d.key, creator: node::my_node(), epoch, base: d.addr, token };
    match registry::publish(api::SISCI, &node::group_key(id), &c.encode()) {
        Ok(_) => {}
        Err(softnic_fabric::Error::Exists) => return Ok(None),
        Err(_) => return Err(SCI_ERR_NOSPC),
    }
    MINE.lock().unwrap_or_else(|e| e.into_inner()).push((id, d));
    let g = handle(id, &c, Peer::this().map_err(|_| SCI_ERR_SYSTEM)?)?;
    g.meet();
    // Filled from the hub (nothing when this mirror is the hub).
    if let Err(e) = g.sync(0, size, true) {
        softnic_fabric::sn_debug!("SISCI", "reflective memory {}: first fill: {}", id, name(e));
    }
    Ok(Some(g))
}

/// This machine's mirror of group `id`, made for a first member of `size` bytes if there
/// is none.
fn mirror(id: u32, size: usize) -> R<Arc<Group>> {
    for _ in 0..100 {
        match registry::lookup(api::SISCI, &node::group_key(id)) {
            Ok(e) => {
                let c = Card::decode(&e.payload);
                let Ok(owner) = Peer::open(e.peer) else { continue };
                let Ok(g) = handle(id, &c, owner) else { continue };
                return Ok(g);
            }
            Err(softnic_fabric::Error::NotFound) => {
                if let Some(g) = make(id, size)? {
                    return Ok(g);
                }
            }
            Err(_) => return Err(SCI_ERR_NOSPC),
        }
    }
    Err(SCI_ERR_NOSPC)
}

/// The memory of a new member of group `id`, of `size` bytes, on this node: the node's
/// own copy, starting as the group's content and entered in the machine's table.
pub fn join(id: u32, size: usize) -> R<(Data, Membership)> {
    let g = mirror(id, size)?;
    if size > g.size {
        return Err(SCI_ERR_OUT_OF_RANGE);
    }
    // What other machines wrote last, for the copy's start.
    let _ = g.sync(0, g.size, true);
    let d = alloc_data(size)?;
    let me = softnic_fabric::node::get().map_err(|_| SCI_ERR_SYSTEM)?.proc_id();
    let c = Copy { node: node::my_node(), proc: me, key: d.key, addr: d.addr, size: size as u64, token: new_token() };
    {
        let _held = g.lock(Wait::Yes);
        // SAFETY: our fresh memory of `size` bytes, and the mirror's data (size <= its size).
        unsafe { std::ptr::copy_nonoverlapping(g.data(), d.ptr, size) };
        g.enter(&c)?;
    }
    Ok((d, Membership { group: g, token: c.token }))
}

/// Reloads every mirror this process uses that other machines share, from their hubs,
/// and the machine's copies with it (when an interrupt is delivered:
/// crate::map::reload_reflective).
pub fn reload_all() {
    if SPANNING.load(Ordering::Acquire) == 0 {
        return;
    }
    let open: Vec<Arc<Group>> = OPEN.lock().unwrap_or_else(|e| e.into_inner()).iter().filter_map(|w| w.upgrade()).collect();
    for g in open {
        let _ = g.sync(0, g.size, true);
    }
}

/// This process's handle of this machine's mirror of group `id`, if the machine has one.
pub fn local(id: u32) -> Option<Arc<Group>> {
    let e = registry::lookup(api::SISCI, &node::group_key(id)).ok()?;
    let owner = Peer::open(e.peer).ok()?;
    handle(id, &Card::decode(&e.payload), owner).ok()
}

/// A node of this machine with a member of group `id` (its copy is in the mirror's table),
/// other than `except`.
pub fn member_here(id: u32, except: u32) -> Option<u32> {
    local(id)?.copies().into_iter().map(|c| c.node).find(|&n| n != except)
}

/// For a connection from a machine without a mirror of group `id`: the mirror that is
/// the hub as far as the published cards tell (least epoch, then node), as (the SISCI
/// node whose segment made it, its launcher node).
pub fn find(id: u32) -> Option<(u32, u32)> {
    scan(id, 0).into_iter().min_by_key(|(n, _, c)| (c.epoch, *n, c.token)).map(|(n, _, c)| (c.creator, n))
}

/// Where the group's content is for a broadcast connection made through launcher node
/// `enode`: this machine's mirror (with this process's handle), or, on a machine without
/// one, the mirror of `enode`'s machine (its maps are then shadows of it): owner,
/// registration key, address of the data.
pub fn content(id: u32, enode: u32) -> Option<(Arc<Peer>, MemKey, u64, Option<Arc<Group>>)> {
    if let Some(g) = local(id) {
        return Some((g.owner.clone(), g.key, g.data_addr(), Some(g)));
    }
    let (peer, p) = node::lookup_at(enode, &node::group_key(id)).ok()?;
    let c = Card::decode(&p);
    Some((peer, c.key, c.base + HDR as u64, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cards_and_members_round_trip() {
        let c = Card { loc: RingLoc { backing: 3, backing_gen: 9, offset: 4096, len: 12288 }, size: 4000, key: MemKey::from_u64(0x1234_5678_9abc), creator: 8, epoch: 2, base: 0x7f00_0000_1000, token: 0xfeed_beef };
        let d = Card::decode(&c.encode());
        assert_eq!((d.loc, d.size, d.key, d.creator, d.epoch, d.base, d.token), (c.loc, c.size, c.key, c.creator, c.epoch, c.base, c.token));
        let m = d.member(5, ProcId { slot: 17, gen: 0xabcd });
        assert_eq!(Member::from_words(m.words()), m);
        assert_eq!(m.enode, 5);
    }

    /// Two nodes' copies of a group made in this process: private stores stay in their
    /// copy, writes to the group reach both (as far as each is long) and the mirror, a copy
    /// that left gets nothing more.  Then another "machine's" mirror (memory of this
    /// process named as a member) as the hub: membership through the service, the hub
    /// chosen by epoch, words shipped and reloaded and what is new written into the copies,
    /// a word written and not shipped kept, a hub whose process is gone passed over, the
    /// table's limit.
    #[test]
    fn copies_are_private_and_the_mirror_keeps_in_step_with_its_hub() {
        crate::service::register();
        let id = 0x7e57_0000 + std::process::id() % 0x10000;
        let (d1, m1) = join(id, 4000).unwrap();
        let (d2, m2) = join(id, 2000).unwrap();
        let g = m1.group.clone();
        assert!(Arc::ptr_eq(&g, &m2.group));
        assert_eq!((d1.len, d2.len, g.copies().len()), (4000, 2000, 2));
        assert!(matches!(join(id, 4001), Err(SCI_ERR_OUT_OF_RANGE)));
        // SAFETY: words inside the copies' and the mirror's data.
        let one = |i: usize| unsafe { &*(d1.ptr.add(8 * i) as *const AtomicU64) };
        let two = |i: usize| unsafe { &*(d2.ptr.add(8 * i) as *const AtomicU64) };
        let mine = |i: usize| unsafe { &*(g.data().add(8 * i) as *const AtomicU64) };
        one(4).store(0x44, Ordering::Relaxed);
        let v = 0x11u64.to_ne_bytes();
        let far = 0x22u64.to_ne_bytes();
        let version = g.version();
        g.write(&[(8, &v), (2400, &far)], Wait::Yes).unwrap();
        assert!(g.version() > version);
        assert_eq!((one(1).load(Ordering::Relaxed), two(1).load(Ordering::Relaxed), mine(1).load(Ordering::Relaxed)), (0x11, 0x11, 0x11));
        assert_eq!((one(300).load(Ordering::Relaxed), mine(300).load(Ordering::Relaxed)), (0x22, 0x22));
        assert_eq!((two(4).load(Ordering::Relaxed), mine(4).load(Ordering::Relaxed)), (0, 0));
        m2.leave();
        assert_eq!(g.copies().len(), 1);
        g.write(&[(8, &0x12u64.to_ne_bytes())], Wait::Yes).unwrap();
        assert_eq!((one(1).load(Ordering::Relaxed), two(1).load(Ordering::Relaxed)), (0x12, 0x11));
        let (d3, _m3) = join(id, 800).unwrap();
        // SAFETY: a word inside the new copy.
        assert_eq!(unsafe { &*(d3.ptr.add(8) as *const AtomicU64) }.load(Ordering::Relaxed), 0x12);
        assert!(g.members().is_empty() && g.hub().is_none());
        // A hub: memory laid out as a mirror, older (epoch 1) than ours (made 5 here).
        let h = alloc_data(mirror_len(4000).unwrap()).unwrap();
        // SAFETY: the header words of our fresh, zeroed, page-aligned memory.
        let hw = |off: usize| unsafe { &*(h.ptr.add(off) as *const AtomicU64) };
        hw(G_TOKEN).store(0x4b, Ordering::Relaxed);
        hw(G_MAGIC).store(GROUP_MAGIC, Ordering::Release);
        let me = softnic_fabric::node::get().unwrap().proc_id();
        let enode = node::my_fabric_node();
        let hub = Member { enode, epoch: 1, proc: me, key: h.key, base: h.addr, size: 4000, token: 0x4b };
        g.word(G_WHO).store(5 | (enode as u64) << 32, Ordering::Relaxed);
        add_member(&g.owner, g.key, g.addr, g.token, &hub).unwrap();
        add_member(&g.owner, g.key, g.addr, g.token, &hub).unwrap();
        assert_eq!(g.members(), vec![hub]);
        assert_eq!(g.hub().map(|(_, m)| m), Some(hub));
        // The passes the background thread and the sync points make when other machines
        // share the group (this process's handle is of one machine).
        let pass = |lo: usize, hi: usize, reload: bool| {
            let _held = g.lock(Wait::Yes);
            let r = g.sync_locked(lo, hi, reload);
            if reload {
                g.propagate();
            }
            r
        };
        // SAFETY: a word inside the hub's data.
        let theirs = |i: usize| unsafe { &*(h.ptr.add(HDR + 8 * i) as *const AtomicU64) };
        theirs(3).store(0x33, Ordering::Relaxed);
        g.write(&[(40, &0x55u64.to_ne_bytes())], Wait::Yes).unwrap();
        pass(0, 4000, true).unwrap();
        assert_eq!((theirs(5).load(Ordering::Relaxed), mine(3).load(Ordering::Relaxed)), (0x55, 0x33));
        // What came from the hub is in the copies; private stores elsewhere stay.
        assert_eq!((one(3).load(Ordering::Relaxed), one(4).load(Ordering::Relaxed)), (0x33, 0x44));
        assert_eq!(theirs(4).load(Ordering::Relaxed), 0);
        // Written here and not shipped (outside the shipped range): kept over the reload;
        // shipped at the next full pass, it is the hub's too (the last writer wins).
        mine(7).store(1, Ordering::Relaxed);
        theirs(7).store(2, Ordering::Relaxed);
        pass(0, 8, true).unwrap();
        assert_eq!(mine(7).load(Ordering::Relaxed), 1);
        pass(0, 4000, true).unwrap();
        assert_eq!(theirs(7).load(Ordering::Relaxed), 1);
        // An older mirror whose process is gone: tried, marked gone, the next one used.
        // (Another node: a mirror of the same node replaces that node's older one.)
        let dead = Member { epoch: 0, enode: enode + 1, proc: ProcId { slot: 500, gen: 0xdead_beef }, token: 0x1, ..hub };
        add_member(&g.owner, g.key, g.addr, g.token, &dead).unwrap();
        assert_eq!(g.hub().map(|(_, m)| m.token), Some(0x1));
        mine(9).store(0x99, Ordering::Relaxed);
        pass(0, 4000, false).unwrap();
        assert_eq!(theirs(9).load(Ordering::Relaxed), 0x99);
        assert_eq!(g.hub().map(|(_, m)| m), Some(hub));
        // Wrong mirror: refused.  A full table: SCI_ERR_NOSPC.
        assert_eq!(add_member(&g.owner, g.key, g.addr, g.token ^ 1, &Member { token: 0x77, ..hub }), Err(SCI_ERR_NO_SUCH_SEGMENT));
        let mut added = 1;
        let r = loop {
            let m = Member { token: 0x1000 + added, enode: 1000 + added as u32, ..hub };
            match add_member(&g.owner, g.key, g.addr, g.token, &m) {
                Ok(()) => added += 1,
                Err(e) => break e,
            }
        };
        assert_eq!((r, added as usize), (SCI_ERR_NOSPC, NMEMBER));
    }
}
