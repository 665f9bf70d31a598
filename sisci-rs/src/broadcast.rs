//! Reflective memory (SCI_FLAG_BROADCAST segments), on one machine and across machines.
//!
//! **One copy per machine.**  Every broadcast segment with one segment id on a machine,
//! whatever its node, is backed by the same memory: the machine's *copy* of the group.
//! The first such segment makes it (a registry key of the machine, "SCIg" + id, owned by
//! its process, whose memory it is); the others map it.  A store through any map of it,
//! or a DMA into it, is seen by every member on the machine at once, the writer's own
//! node included, as PCIe multicast reflects into local memory.  A copy lives as long as
//! the process that made it (members keep their mappings after that; a copy made anew
//! starts from the group's content on the other machines, or zeroed).  A member larger
//! than its machine's copy is SCI_ERR_OUT_OF_RANGE.
//!
//! **Across machines: a hub.**  The machines' copies are kept in step the way maps of
//! another machine's segment are (crate::shadow, the same code): one copy is the group's
//! *hub*; every other machine ships the 8-byte words changed in its copy to the hub and
//! reloads its copy from the hub word by word (a word stored and not shipped yet keeps
//! its value), at the sync points of its members (SCIFlush, SCIStoreBarrier, sequences,
//! triggers, unmaps, SCICacheSync; SCIMemCpy, SCIMemWrite and broadcast DMA ship what they
//! wrote before returning; an interrupt's delivery reloads first) and every
//! SOFTNIC_SISCI_SHADOW_US in the background.  Stores on the hub's
//! machine are in the hub at once.  So a write reaches the hub at the writer's next sync
//! point and the other machines at their next reload; on a word several machines store,
//! the hub's order decides (the last writer wins) and every copy ends with the hub's
//! value.  Every member machine shipping to every other would save a hop, but a word two
//! machines store at once could then end different on different machines, with nothing
//! to settle it.
//!
//! **Which copy is the hub.**  A copy has an epoch: 0 when no other machine had a copy
//! when it was made, else one more than the highest epoch among them.  The hub is the
//! live copy of least (epoch, launcher node, token): the first machine (the lowest node
//! among machines that joined at once), and when its process is gone the next oldest,
//! so a machine joining later never replaces the group's content with its empty copy.  A
//! copy whose making process has ended is no hub; its machine's members go on syncing
//! with the others' hub.
//!
//! **Membership.**  A copy's header lists the other machines' copies.  A machine making a
//! copy publishes it, then looks the group up on every other node of the job
//! (`Peer::lookup`), records what it finds and tells each (the service's BC_JOIN adds it
//! to their list): publish first, then look, so of two machines joining at once at least
//! the later looker sees the other, and both learn of each other.  Then the new copy is
//! filled from the hub.
//!
//! **Shared state**, in the copy's memory before the data (offsets below): magic, size,
//! token, the sync lock (pid of the process syncing; taken over from a process that died
//! holding it), when the machine's next background pass is due, this copy's epoch and
//! node, the member table; after the data, the twin (what the hub held at the last pass).
//! Any process of the machine that uses the group syncs it: one at a time (the lock), one
//! background pass per period for the whole machine (the due time).  A process that dies
//! in the middle of a pass can leave words recorded as shipped that were not (lost), or
//! shipped and not recorded (shipped again).

use crate::node;
use crate::segment::{alloc_data, Data};
use crate::service::{self, Msg, BC_JOIN};
use crate::shadow::{self, Kept};
use crate::status::*;
use crate::types::*;
use softnic_fabric::mem::{MemKey, RingLoc};
use softnic_fabric::registry::{self, api, ProcId};
use softnic_fabric::rma::{Peer, RegionView};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// "SCIgrp01": the header of a copy, version 1.
pub const GROUP_MAGIC: u64 = u64::from_le_bytes(*b"SCIgrp01");
/// Bytes of header before the data.
pub const HDR: usize = 4096;
pub const G_MAGIC: usize = 0;
pub const G_SIZE: usize = 8;
pub const G_TOKEN: usize = 16;
/// Pid of the process syncing the copy (0: none).
pub const G_LOCK: usize = 24;
/// CLOCK_MONOTONIC nanoseconds at which the machine's next background pass is due.
pub const G_DUE: usize = 32;
/// This copy: epoch | launcher node << 32.
pub const G_WHO: usize = 40;
/// The member table: other machines' copies.
pub const M_OFF: usize = 64;
pub const M_LEN: usize = 64;
pub const NMEMBER: usize = (HDR - M_OFF) / M_LEN;
/// Entry words: state, then [`Member::words`].
pub const M_STATE: usize = 0;
pub const M_WHO: usize = 8;
pub const M_TOKEN: usize = 48;
pub const ST_FREE: u64 = 0;
/// Being filled, by the pid in the bits above the low byte.
pub const ST_CLAIMED: u64 = 1;
pub const ST_LIVE: u64 = 2;
/// Its process is gone (or it was made anew): free for reuse.
pub const ST_GONE: u64 = 3;

/// Another machine's copy of a group, as the member table holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    /// Launcher node of the process whose memory it is.
    pub enode: u32,
    pub epoch: u32,
    pub proc: ProcId,
    pub key: MemKey,
    /// Address of the copy's header in its process (the data follow at +HDR).
    pub base: u64,
    pub size: u64,
    pub token: u64,
}

impl Member {
    /// Who is the hub: the least.
    fn rank(&self) -> (u32, u32, u64) {
        (self.epoch, self.enode, self.token)
    }
    /// Entry words 1..7 (after the state).
    pub fn words(&self) -> [u64; 6] {
        [self.epoch as u64 | (self.enode as u64) << 32, self.proc.slot as u64 | (self.proc.gen as u64) << 32, self.key.to_u64(), self.base, self.size, self.token]
    }
    pub fn from_words(w: [u64; 6]) -> Member {
        Member { epoch: w[0] as u32, enode: (w[0] >> 32) as u32, proc: ProcId { slot: w[1] as u32, gen: (w[1] >> 32) as u32 }, key: MemKey::from_u64(w[2]), base: w[3], size: w[4], token: w[5] }
    }
}

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

/// Copies this process made (their memory stays for the process's life).
static MINE: Mutex<Vec<(u32, Data)>> = Mutex::new(Vec::new());
/// This process's handles, one per copy.
static OPEN: Mutex<Vec<Weak<Group>>> = Mutex::new(Vec::new());
/// Handles alive that may have other machines (the network engine ran when made).
static SPANNING: AtomicUsize = AtomicUsize::new(0);

/// This process's handle of its machine's copy of a group.
pub struct Group {
    pub id: u32,
    pub token: u64,
    base: *mut u8,
    size: usize,
    /// The process whose memory the copy is.
    pub owner: Arc<Peer>,
    loc: RingLoc,
    key: MemKey,
    addr: u64,
    _view: RegionView,
    /// Hubs this process reached, by token.
    hubs: Mutex<Vec<(u64, Arc<Peer>)>>,
    /// Counted in SPANNING.
    spanning: bool,
}

impl Drop for Group {
    fn drop(&mut self) {
        if self.spanning {
            SPANNING.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

// SAFETY: `base` points into the mapping `_view` keeps; the shared words are atomics, the
// data is the program's, the twin is only touched under the copy's lock.
unsafe impl Send for Group {}
unsafe impl Sync for Group {}

/// The copy's sync lock, held.
struct Held<'a>(&'a AtomicU64);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Release);
    }
}

impl Group {
    fn word(&self, off: usize) -> &AtomicU64 {
        // SAFETY: off + 8 <= HDR, inside the mapping; 8-aligned (page-aligned base).
        unsafe { &*(self.base.add(off) as *const AtomicU64) }
    }
    fn data(&self) -> *mut u8 {
        // SAFETY: the data follow the header inside the mapping.
        unsafe { self.base.add(HDR) }
    }
    fn twin(&self, n: usize) -> &mut [u8] {
        // SAFETY: the twin follows the data (rounded to words) inside the mapping; n <=
        // size; only used under the lock, so no other process or thread touches it.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(HDR + round8(self.size).unwrap_or(0)), n) }
    }
    pub fn size(&self) -> usize {
        self.size
    }

    /// Takes the sync lock; without `wait`, only when free (or held by a dead process).
    fn lock(&self, wait: bool) -> Option<Held<'_>> {
        let me = std::process::id() as u64;
        let w = self.word(G_LOCK);
        let mut tries = 0u32;
        loop {
            let holder = match w.compare_exchange(0, me, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Some(Held(w)),
                Err(h) => h,
            };
            if (!wait || tries % 512 == 511) && holder != me && !registry::pid_alive(holder as i32, None) {
                // Its holder died in the middle of a pass: take it over.
                if w.compare_exchange(holder, me, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                    return Some(Held(w));
                }
            }
            if !wait {
                return None;
            }
            tries = tries.wrapping_add(1);
            if tries < 64 {
                std::hint::spin_loop();
            } else {
                softnic_fabric::cancel::nap(Duration::from_micros(20));
            }
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

    /// Other machines' copies this copy knows (live as far as it knows).
    pub fn members(&self) -> Vec<Member> {
        (0..NMEMBER).filter_map(|i| self.entry(i)).filter(|m| m.token != self.token).collect()
    }

    /// The copy to keep in step with: None when this copy is the hub (or alone).
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

    /// Brings the copy in step with the hub: ships the words changed in [lo, hi) of the
    /// data and, with `reload`, reloads the whole copy.  Nothing to do on the hub's
    /// machine.  A hub that is gone is marked so, and the next one used.
    pub fn sync(&self, lo: usize, hi: usize, reload: bool) -> R<()> {
        if self.members().is_empty() {
            return Ok(());
        }
        let _held = self.lock(true);
        self.sync_locked(lo, hi, reload)
    }

    fn sync_locked(&self, lo: usize, hi: usize, reload: bool) -> R<()> {
        for _ in 0..=NMEMBER {
            let Some((i, m)) = self.hub() else { return Ok(()) };
            let n = self.size.min(m.size as usize);
            let at = m.base + HDR as u64;
            let r = match self.peer(&m) {
                Ok(p) => {
                    let twin = self.twin(n);
                    shadow::ship(self.data(), twin, lo.min(n), hi.min(n), &p, m.key, at)
                        .and_then(|_| if reload { shadow::pull(self.data(), twin, &p, m.key, at) } else { Ok(()) })
                        .map_err(|e| (e, p.is_alive()))
                }
                Err(_) => Err((SCI_ERR_TRANSFER_FAILED, false)),
            };
            match r {
                Ok(()) => return Ok(()),
                Err((_, false)) => {
                    softnic_fabric::sn_info!("SISCI", "reflective memory {}: the copy of node {} is gone; the next oldest copy is the hub", self.id, m.enode);
                    self.mark_gone(i, m.token);
                }
                Err((e, true)) => return Err(e),
            }
        }
        Err(SCI_ERR_TRANSFER_FAILED)
    }

    /// The data of a member of `size` bytes, as a segment's memory.
    fn data_for(&self, size: usize) -> R<Data> {
        if size > self.size {
            return Err(SCI_ERR_OUT_OF_RANGE);
        }
        let loc = RingLoc { backing: self.loc.backing, backing_gen: self.loc.backing_gen, offset: self.loc.offset + HDR as u64, len: self.size as u64 };
        let view = softnic_fabric::rma::map_region(&self.owner, &loc).map_err(|_| SCI_ERR_NOSPC)?;
        Ok(Data::mapped(view, size, self.key, self.addr + HDR as u64, loc))
    }

    /// This copy as the member tables of other machines hold it.
    fn as_member(&self) -> Member {
        let who = self.word(G_WHO).load(Ordering::Acquire);
        Member { enode: (who >> 32) as u32, epoch: who as u32, proc: self.owner.proc_id(), key: self.key, base: self.addr, size: self.size as u64, token: self.token }
    }

    /// Meets the other machines' copies: records each in our table and ours in theirs.
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
        if mono_ns() < self.word(G_DUE).load(Ordering::Relaxed) || self.members().is_empty() {
            return;
        }
        let Some(_held) = self.lock(false) else { return };
        if mono_ns() < self.word(G_DUE).load(Ordering::Relaxed) {
            return;
        }
        let _ = self.sync_locked(0, self.size, true);
        let next = period.max(shadow::rate_limit(self.size)).as_nanos() as u64;
        self.word(G_DUE).store(mono_ns().saturating_add(next), Ordering::Relaxed);
    }
}

/// Adds `m` to the member table of the copy `token` (header at `base` under `key`) of
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

/// The copies of group `id` on the other nodes of the job (launcher node, owner, card),
/// leaving out the copy `token` (this machine's, found again through another node of it).
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

/// This process's handle of the copy `c`, owned by `owner` (one per copy and process).
fn handle(id: u32, c: &Card, owner: Arc<Peer>) -> R<Arc<Group>> {
    let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    open.retain(|w| w.strong_count() > 0);
    if let Some(g) = open.iter().filter_map(|w| w.upgrade()).find(|g| g.token == c.token) {
        return Ok(g);
    }
    let view = softnic_fabric::rma::map_region(&owner, &c.loc).map_err(|_| SCI_ERR_NO_SUCH_SEGMENT)?;
    let size = usize::try_from(c.size).map_err(|_| SCI_ERR_NOSPC)?;
    let need = round8(size).and_then(|r| r.checked_mul(2)).and_then(|r| r.checked_add(HDR));
    if need.map_or(true, |n| n > view.len()) {
        return Err(SCI_ERR_NO_SUCH_SEGMENT);
    }
    // Other machines can only be there when the network engine runs (a job of one
    // machine, e.g. under snrun, has no background pass nor reload for it).
    let spanning = softnic_fabric::net::running().is_some();
    // SAFETY: the first words of the mapping (at least HDR + data + twin bytes, checked).
    let hw = |off: usize| unsafe { &*(view.as_ptr().add(off) as *const AtomicU64) };
    if hw(G_MAGIC).load(Ordering::Acquire) != GROUP_MAGIC || hw(G_TOKEN).load(Ordering::Acquire) != c.token {
        return Err(SCI_ERR_NO_SUCH_SEGMENT);
    }
    if spanning {
        SPANNING.fetch_add(1, Ordering::AcqRel);
    }
    let g = Arc::new(Group { id, token: c.token, base: view.as_ptr(), size, owner, loc: c.loc, key: c.key, addr: c.base, _view: view, hubs: Mutex::new(Vec::new()), spanning });
    open.push(Arc::downgrade(&g));
    drop(open);
    if spanning {
        let kept: Arc<dyn Kept> = g.clone();
        shadow::keep_in_step(Arc::downgrade(&kept));
    }
    Ok(g)
}

/// Makes this machine's copy of group `id` for a first member of `size` bytes.
/// `Ok(None)`: another process of the machine made it first.
fn make(id: u32, size: usize) -> R<Option<(Data, Arc<Group>)>> {
    // One more than the highest epoch among the copies that exist (0: none).
    let epoch = scan(id, 0).iter().map(|(_, _, c)| c.epoch.saturating_add(1)).max().unwrap_or(0);
    let len = round8(size).and_then(|r| r.checked_mul(2)).and_then(|r| r.checked_add(HDR)).ok_or(SCI_ERR_NOSPC)?;
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
    // Filled from the hub (nothing when this copy is the hub).
    if let Err(e) = g.sync(0, size, true) {
        softnic_fabric::sn_debug!("SISCI", "reflective memory {}: first fill: {}", id, name(e));
    }
    Ok(Some((g.data_for(size)?, g)))
}

/// The memory of group `id` for a member of `size` bytes on this machine (making this
/// machine's copy if needed), and this process's handle of the copy.
pub fn join(id: u32, size: usize) -> R<(Data, Arc<Group>)> {
    for _ in 0..100 {
        match registry::lookup(api::SISCI, &node::group_key(id)) {
            Ok(e) => {
                let c = Card::decode(&e.payload);
                if size as u64 > c.size {
                    return Err(SCI_ERR_OUT_OF_RANGE);
                }
                let Ok(owner) = Peer::open(e.peer) else { continue };
                let Ok(g) = handle(id, &c, owner) else { continue };
                return Ok((g.data_for(size)?, g));
            }
            Err(softnic_fabric::Error::NotFound) => {
                if let Some(x) = make(id, size)? {
                    return Ok(x);
                }
            }
            Err(_) => return Err(SCI_ERR_NOSPC),
        }
    }
    Err(SCI_ERR_NOSPC)
}

/// Reloads every copy this process uses that other machines share, from their hubs
/// (when an interrupt is delivered: crate::map::reload_reflective).
pub fn reload_all() {
    if SPANNING.load(Ordering::Acquire) == 0 {
        return;
    }
    let open: Vec<Arc<Group>> = OPEN.lock().unwrap_or_else(|e| e.into_inner()).iter().filter_map(|w| w.upgrade()).collect();
    for g in open {
        let _ = g.sync(0, g.size, true);
    }
}

/// This process's handle of this machine's copy of group `id`, if the machine has one.
pub fn local(id: u32) -> Option<Arc<Group>> {
    let e = registry::lookup(api::SISCI, &node::group_key(id)).ok()?;
    let owner = Peer::open(e.peer).ok()?;
    handle(id, &Card::decode(&e.payload), owner).ok()
}

/// The node whose broadcast segment made this machine's copy of group `id`.
pub fn creator_node(id: u32) -> Option<u32> {
    let e = registry::lookup(api::SISCI, &node::group_key(id)).ok()?;
    Some(Card::decode(&e.payload).creator)
}

/// For a connection from a machine without a copy of group `id`: the copy that is the
/// hub as far as the published cards tell (least epoch, then node), as (the SISCI node
/// whose segment made it, its launcher node).
pub fn find(id: u32) -> Option<(u32, u32)> {
    scan(id, 0).into_iter().min_by_key(|(n, _, c)| (c.epoch, *n, c.token)).map(|(n, _, c)| (c.creator, n))
}

/// Where a broadcast segment `id` of a process on launcher node `enode` keeps its data:
/// this machine's copy (its owner, and this process's handle), or another machine's (its
/// owner; the connection's maps are then shadows).  None when there is no copy there.
pub fn backing(id: u32, enode: u32) -> Option<(Arc<Peer>, Option<Arc<Group>>)> {
    let mine = local(id);
    if enode == node::my_fabric_node() {
        return mine.map(|g| (g.owner.clone(), Some(g)));
    }
    let (peer, p) = node::lookup_at(enode, &node::group_key(id)).ok()?;
    let token = Card::decode(&p).token;
    match mine {
        Some(g) if g.token == token => Some((g.owner.clone(), Some(g))),
        _ => Some((peer, None)),
    }
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

    /// A copy made in this process, another "machine's" copy (memory of this process
    /// named as a member) as its hub: membership through the service, the hub chosen by
    /// epoch, words shipped and reloaded, a word stored and not shipped kept, a hub whose
    /// process is gone passed over, the table's limit.
    #[test]
    fn a_copy_keeps_in_step_with_its_hub() {
        crate::service_init();
        let id = 0x7e57_0000 + std::process::id() % 0x10000;
        let (data, g) = join(id, 4000).unwrap();
        assert_eq!(data.len, 4000);
        assert!(g.members().is_empty() && g.hub().is_none());
        g.sync(0, 4000, true).unwrap();
        // A hub: memory laid out as a copy, older (epoch 1) than ours (made 5 here).
        let len = HDR + 2 * 4000;
        let h = alloc_data(len).unwrap();
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
        // SAFETY: words inside both copies' data.
        let mine = |i: usize| unsafe { &*(g.data().add(8 * i) as *const AtomicU64) };
        let theirs = |i: usize| unsafe { &*(h.ptr.add(HDR + 8 * i) as *const AtomicU64) };
        theirs(3).store(0x33, Ordering::Relaxed);
        mine(5).store(0x55, Ordering::Relaxed);
        g.sync(0, 4000, true).unwrap();
        assert_eq!((theirs(5).load(Ordering::Relaxed), mine(3).load(Ordering::Relaxed)), (0x55, 0x33));
        // Stored here and not shipped (outside the shipped range): kept over the reload;
        // shipped at the next full pass, it is the hub's too (the last writer wins).
        mine(7).store(1, Ordering::Relaxed);
        theirs(7).store(2, Ordering::Relaxed);
        g.sync(0, 8, true).unwrap();
        assert_eq!(mine(7).load(Ordering::Relaxed), 1);
        g.sync(0, 4000, true).unwrap();
        assert_eq!(theirs(7).load(Ordering::Relaxed), 1);
        // An older copy whose process is gone: tried, marked gone, the next one used.
        // (Another node: a copy of the same node replaces that node's older one.)
        let dead = Member { epoch: 0, enode: enode + 1, proc: ProcId { slot: 500, gen: 0xdead_beef }, token: 0x1, ..hub };
        add_member(&g.owner, g.key, g.addr, g.token, &dead).unwrap();
        assert_eq!(g.hub().map(|(_, m)| m.token), Some(0x1));
        mine(9).store(0x99, Ordering::Relaxed);
        g.sync(0, 4000, false).unwrap();
        assert_eq!(theirs(9).load(Ordering::Relaxed), 0x99);
        assert_eq!(g.hub().map(|(_, m)| m), Some(hub));
        // Wrong copy: refused.  A full table: SCI_ERR_NOSPC.
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
