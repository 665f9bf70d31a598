//! Datagrams: the per-instance board behind GNI_EpPostData*, GNI_EpPostDataTest*/Wait*/
//! Cancel* and GNI_PostDataProbe* (exported by crate::postdata), and the registry entry
//! of an attached instance ([`InstanceInfo`]), through which peers find its board.
//!
//! # Mechanism
//! Every attached instance (NIC handle) owns a **board**: library-owned shared memory
//! (`mem::alloc_shared`) named in its registry entry (`InstanceInfo::dgram_board`).  A post
//! writes the datagram (payload, the EP's binding, our NIC address and inst_id) into a free
//! **slot** of the poster's *own* board and publishes it PENDING.  Peers map the board
//! (`rma::map_region`) and operate on slots with atomics only.
//!
//! A slot's state word packs `gen:24 | state:8 | claimer pid:32`.  States: FREE, PENDING,
//! CLAIMED (a matcher holds it), DONE (matched; the peer's payload and identity are in the
//! slot).  Only the owner moves FREE->PENDING and DONE->FREE (bumping gen); anyone may
//! claim PENDING->CLAIMED with a CAS on the whole word, so a slot reused meanwhile (new gen)
//! can never be claimed by a stale scan.
//!
//! **Matching** (digest 5.3), within one (ptag, cookie) domain (boards are found through
//! the registry, whose key includes both, so other domains are invisible):
//! - a slot of an EP bound to (addrB, idB) pairs with a PENDING slot of instance B that is
//!   bound to (our address, our inst_id) — preferred — or unbound (wildcard);
//! - two unbound slots never pair (an unbound slot only ever looks at bound slots).
//!
//! Any side may complete a match; nobody is "responsible" alone:
//! - a bound post (and every later Test/Wait/Probe while pending) registers our inst_id as
//!   a **watcher** in B's board, then `fence(SeqCst)`, then scans B's slots;
//! - an unbound post (and later calls) publishes its slot, `fence(SeqCst)`, then scans the
//!   boards of its watchers for bound slots aimed at it.
//! Dekker: of two posts that could pair, at least one sees the other, whatever the timing.
//! A matcher claims the two slots in one global order (inst_id, slot index) — the second
//! claim spins while the slot is CLAIMED by someone else (a short copy; a dead claimer is
//! detected by pid) — so there is no deadlock and no livelock.  With both claimed it swaps
//! the payloads, writes each side's peer identity, marks both DONE (Release) and rings both
//! boards' **bells** (a futex word, `fabric::wait`).  Waits sleep on their own board's bell.
//! When the target of a bound post is not attached yet (no board to watch), waits poll in
//! 10 ms slices until it appears.
//!
//! # Decisions where the digest is silent
//! - A datagram on an unbound EP must carry an id: `GNI_EpPostData` on an unbound EP is
//!   INVALID_PARAM.  `datagram_id == (uint64_t)-1` is INVALID_PARAM.
//! - SIZE_ERROR (our `buf_size` smaller than the peer's `data_len`) is reported by the
//!   Test/Wait that reaps the datagram; the datagram is then finished (the EP may post
//!   again), `out_buf` is not written, `post_state` = COMPLETED and the peer is reported.
//! - Cancel of a pending datagram frees it at once and leaves a TERMINATED record that
//!   Probe shows and Test/Wait reap (remote address/id = the EP's binding, 0/0 when
//!   unbound); the EP may post again right away.  Cancel of a datagram that already
//!   completed (not yet reaped) returns SUCCESS and changes nothing: it reaps as COMPLETED.
//! - A Wait that times out returns GNI_RC_TIMEOUT with post_state PENDING and leaves the
//!   datagram posted.  GNI_POST_TIMEOUT, GNI_POST_ERROR and GNI_POST_REMOTE_DATA are never
//!   produced (an exchange is atomic here: both sides get both payloads or nothing).
//! - A Test/Wait without id reports the EP's oldest finished record first (a cancelled
//!   one, then the current datagram).
//! - `GNI_PostDataProbeWaitById` with timeout 0 is INVALID_PARAM (as for the Wait calls);
//!   `(uint32_t)-1` waits forever.
//! - A board has [`NSLOTS`] slots: more outstanding datagrams per instance give
//!   ERROR_RESOURCE from the post.  It remembers up to [`NWATCH`] watchers; beyond that a
//!   bound post still pairs when the peer posts bound-to-us, or by polling.

use crate::handles::{lock, GniResult};
use crate::types::*;
use softnic_fabric::mem::{self, RingLoc, SharedMem};
use softnic_fabric::node::PeerRef;
use softnic_fabric::registry::{self, ProcId};
use softnic_fabric::rma::{Peer, Region};
use softnic_fabric::wait::WaitWords;
use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Slots per board (outstanding datagrams per instance).
pub const NSLOTS: usize = 1024;
/// Watcher entries per board.
pub const NWATCH: usize = 1024;
pub(crate) const MAXDG: usize = GNI_DATAGRAM_MAXSIZE as usize;
/// Layout 2: watchers name (NIC address, inst_id), free = [`NO_WATCHER`].
const BOARD_MAGIC: u64 = u64::from_le_bytes(*b"snGNIdg2");
/// A free watcher entry.
const NO_WATCHER: u64 = u64::MAX;
/// How long a slot claimed by a matcher on another node (its pid unknown here) may stay
/// claimed before it is taken for abandoned.
const REMOTE_CLAIM_LIMIT: Duration = Duration::from_secs(5);

/// The watcher entry of instance (addr, inst_id).
fn watcher(addr: u32, id: u32) -> u64 {
    ((addr as u64) << 32) | id as u64
}

const FREE: u64 = 0;
const PENDING: u64 = 1;
const CLAIMED: u64 = 2;
const DONE: u64 = 3;

fn word(gen: u64, st: u64, pid: u32) -> u64 {
    ((gen & 0xff_ffff) << 40) | (st << 32) | pid as u64
}
fn w_gen(w: u64) -> u64 {
    w >> 40
}
fn w_state(w: u64) -> u64 {
    (w >> 32) & 0xff
}
fn w_pid(w: u64) -> u32 {
    w as u32
}

#[repr(C)]
struct Hdr {
    magic: AtomicU64,
    nslots: AtomicU32,
    nwatch: AtomicU32,
    bell: WaitWords,
    _pad: [u8; 40],
    /// [`watcher`]`(addr, inst_id)` of instances that posted bound datagrams aimed at us;
    /// [`NO_WATCHER`] = free.
    watchers: [AtomicU64; NWATCH],
}

#[repr(C)]
struct Slot {
    state: AtomicU64,
    bound: AtomicU32,
    target_addr: AtomicU32,
    target_id: AtomicU32,
    owner_addr: AtomicU32,
    owner_id: AtomicU32,
    in_len: AtomicU32,
    out_len: AtomicU32,
    peer_addr: AtomicU32,
    peer_id: AtomicU32,
    _pad: AtomicU32,
    seq: AtomicU64,
    _pad2: AtomicU64,
    in_data: [u8; MAXDG],
    out_data: [u8; MAXDG],
}
const _: () = assert!(std::mem::size_of::<Hdr>() == 64 + 8 * NWATCH);
const _: () = assert!(std::mem::size_of::<Slot>() == 64 + 2 * MAXDG);
const SLOTS_OFF: usize = std::mem::size_of::<Hdr>();
const SLOT_SIZE: usize = std::mem::size_of::<Slot>();
/// Bytes of a slot's header (everything before the payloads: what a scan reads).
const SLOT_HEAD: usize = std::mem::offset_of!(Slot, in_data);
const _: () = assert!(SLOT_HEAD == 64);
/// The instance's vMDH table follows the slots (crate::memreg): entry i = the two words of
/// the real memory handle registered at vMDH index i (qword1 0 = empty).  Peers read it
/// through their mapping of the board to resolve symmetric vMDH handles.
const VMDH_OFF: usize = SLOTS_OFF + NSLOTS * std::mem::size_of::<Slot>();
/// Entries of the vMDH table (the largest GNI_SetMddResources block).
pub const NVMDH: usize = softnic_fabric::node::NREG;
const BOARD_LEN: usize = VMDH_OFF + NVMDH * 16;

/// A board seen through some mapping (ours or a peer's).
#[derive(Clone, Copy)]
struct View {
    base: *mut u8,
}

impl View {
    fn hdr(&self) -> &Hdr {
        // SAFETY: base maps BOARD_LEN bytes of a board (ours, or validated via magic).
        unsafe { &*(self.base as *const Hdr) }
    }
    fn slot(&self, i: usize) -> &Slot {
        debug_assert!(i < NSLOTS);
        // SAFETY: inside the board; slots are 64-byte aligned.
        unsafe { &*(self.base.add(SLOTS_OFF + i * std::mem::size_of::<Slot>()) as *const Slot) }
    }
    fn vmdh(&self, i: usize) -> &[AtomicU64; 2] {
        debug_assert!(i < NVMDH);
        // SAFETY: inside the board (BOARD_LEN covers NVMDH entries of 16 bytes); 8-aligned.
        unsafe { &*(self.base.add(VMDH_OFF + i * 16) as *const [AtomicU64; 2]) }
    }
    fn read_vmdh(&self, i: usize) -> Option<[u64; 2]> {
        if i >= NVMDH {
            return None;
        }
        let e = self.vmdh(i);
        let w1 = e[0].load(Ordering::Acquire);
        let w2 = e[1].load(Ordering::Acquire);
        (w1 != 0).then_some([w1, w2])
    }
}

/// Registry key of an attached instance: ptag, cookie, inst_id.
pub fn instance_key(ptag: u8, cookie: u32, inst_id: u32) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = ptag;
    k[1..5].copy_from_slice(&cookie.to_le_bytes());
    k[5..9].copy_from_slice(&inst_id.to_le_bytes());
    k
}

/// Job-wide KVS key under which an attached instance publishes where its datagram board
/// is, for instances on other nodes (`GNI_CdmAttach`, when the network engine runs).
pub fn remote_instance_key(ptag: u8, cookie: u32, inst_id: u32) -> String {
    format!("gni.{}.{:x}.{}", ptag, cookie, inst_id)
}

/// What an attached instance publishes in the registry (the payload, 64 bytes max).
#[derive(Clone, Copy, Debug)]
pub struct InstanceInfo {
    pub peer: PeerRef,
    /// Where peers post datagrams for this instance (its [`Board`]).
    pub dgram_board: RingLoc,
    pub nic_addr: u32,
}

impl InstanceInfo {
    pub fn to_payload(&self) -> [u8; 52] {
        let mut p = [0u8; 52];
        for (i, w) in self.peer.to_words().iter().chain(self.dgram_board.to_words().iter()).enumerate() {
            p[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        p[48..52].copy_from_slice(&self.nic_addr.to_le_bytes());
        p
    }
    pub fn from_payload(p: &[u8]) -> InstanceInfo {
        let w = |i: usize| u64::from_le_bytes(p[i * 8..i * 8 + 8].try_into().unwrap());
        InstanceInfo {
            peer: PeerRef::from_words([w(0), w(1), w(2)]),
            dgram_board: RingLoc::from_words([w(3), w(4), w(5)]),
            nic_addr: u32::from_le_bytes(p[48..52].try_into().unwrap()),
        }
    }
}

/// A peer instance's board: mapped when the instance runs on this node, else reached
/// through the network engine (`rma::Region`).
struct PeerBoard {
    peer: Arc<Peer>,
    region: Region,
}

/// A slot's header as a scan sees it.
#[derive(Clone, Copy)]
struct Head {
    state: u64,
    bound: bool,
    target_addr: u32,
    target_id: u32,
    seq: u64,
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes(b[off..off + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_ne_bytes(b[off..off + 8].try_into().expect("8 bytes"))
}

/// A board as the matching code sees it: our own (direct), or a peer's.  Every operation
/// on a peer's board may fail (`None`: the peer or its board went away).
#[derive(Clone, Copy)]
enum B<'a> {
    Own(View),
    Peer(&'a Region),
}

fn slot_off(j: usize) -> usize {
    SLOTS_OFF + j * SLOT_SIZE
}

impl B<'_> {
    fn remote(&self) -> bool {
        matches!(self, B::Peer(r) if r.is_remote())
    }

    fn cas_state(&self, j: usize, old: u64, new: u64) -> Option<Result<u64, u64>> {
        match self {
            B::Own(v) => Some(v.slot(j).state.compare_exchange(old, new, Ordering::AcqRel, Ordering::Acquire)),
            B::Peer(r) => r.cas_u64(slot_off(j), old, new).ok(),
        }
    }

    fn set_state(&self, j: usize, w: u64) -> Option<()> {
        match self {
            B::Own(v) => {
                v.slot(j).state.store(w, Ordering::Release);
                Some(())
            }
            B::Peer(r) => r.store_u64(slot_off(j), w).ok(),
        }
    }

    /// The headers of every slot (one network round trip for a remote board).
    fn heads(&self) -> Option<Vec<Head>> {
        let raw = match self {
            B::Own(v) => {
                let mut out = Vec::with_capacity(NSLOTS * SLOT_HEAD);
                for j in 0..NSLOTS {
                    let s = v.slot(j);
                    // The state first (Acquire): the other fields were written before it.
                    out.extend_from_slice(&s.state.load(Ordering::Acquire).to_ne_bytes());
                    for f in [&s.bound, &s.target_addr, &s.target_id, &s.owner_addr, &s.owner_id, &s.in_len, &s.out_len, &s.peer_addr, &s.peer_id, &s._pad] {
                        out.extend_from_slice(&f.load(Ordering::Relaxed).to_ne_bytes());
                    }
                    out.extend_from_slice(&s.seq.load(Ordering::Relaxed).to_ne_bytes());
                    out.extend_from_slice(&[0u8; 8]);
                }
                out
            }
            B::Peer(r) => r.gather(SLOTS_OFF, SLOT_SIZE, NSLOTS, SLOT_HEAD).ok()?,
        };
        use std::mem::offset_of;
        Some(
            raw.chunks_exact(SLOT_HEAD)
                .map(|h| Head {
                    state: u64_at(h, offset_of!(Slot, state)),
                    bound: u32_at(h, offset_of!(Slot, bound)) != 0,
                    target_addr: u32_at(h, offset_of!(Slot, target_addr)),
                    target_id: u32_at(h, offset_of!(Slot, target_id)),
                    seq: u64_at(h, offset_of!(Slot, seq)),
                })
                .collect(),
        )
    }

    /// (owner address, owner inst_id, payload) of a slot we hold claimed.
    fn read_in(&self, j: usize) -> Option<(u32, u32, Vec<u8>)> {
        match self {
            B::Own(v) => {
                let s = v.slot(j);
                let n = (s.in_len.load(Ordering::Relaxed) as usize).min(MAXDG);
                Some((s.owner_addr.load(Ordering::Relaxed), s.owner_id.load(Ordering::Relaxed), s.in_data[..n].to_vec()))
            }
            B::Peer(r) => {
                use std::mem::offset_of;
                let mut h = [0u8; SLOT_HEAD];
                r.read(slot_off(j), &mut h).ok()?;
                let n = (u32_at(&h, offset_of!(Slot, in_len)) as usize).min(MAXDG);
                let mut d = vec![0u8; n];
                r.read(slot_off(j) + offset_of!(Slot, in_data), &mut d).ok()?;
                Some((u32_at(&h, offset_of!(Slot, owner_addr)), u32_at(&h, offset_of!(Slot, owner_id)), d))
            }
        }
    }

    /// Writes the partner's payload and identity into a slot we hold claimed.
    fn write_out(&self, j: usize, data: &[u8], peer_addr: u32, peer_id: u32) -> Option<()> {
        match self {
            B::Own(v) => {
                let s = v.slot(j);
                // SAFETY: the slot is CLAIMED by us: nobody else writes it.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), s.out_data.as_ptr() as *mut u8, data.len().min(MAXDG)) };
                s.out_len.store(data.len() as u32, Ordering::Relaxed);
                s.peer_addr.store(peer_addr, Ordering::Relaxed);
                s.peer_id.store(peer_id, Ordering::Relaxed);
                Some(())
            }
            B::Peer(r) => {
                use std::mem::offset_of;
                r.write(slot_off(j) + offset_of!(Slot, out_data), &data[..data.len().min(MAXDG)]).ok()?;
                let mut f = [0u8; 12];
                f[0..4].copy_from_slice(&(data.len() as u32).to_ne_bytes());
                f[4..8].copy_from_slice(&peer_addr.to_ne_bytes());
                f[8..12].copy_from_slice(&peer_id.to_ne_bytes());
                r.write(slot_off(j) + offset_of!(Slot, out_len), &f).ok()
            }
        }
    }

    fn ring(&self) {
        match self {
            B::Own(v) => {
                v.hdr().bell.notify();
            }
            B::Peer(r) => {
                let _ = r.notify(std::mem::offset_of!(Hdr, bell));
            }
        }
    }

    fn watchers(&self) -> Vec<u64> {
        let raw = match self {
            B::Own(v) => return v.hdr().watchers.iter().map(|w| w.load(Ordering::Acquire)).filter(|&w| w != NO_WATCHER).collect(),
            B::Peer(r) => r.gather(std::mem::offset_of!(Hdr, watchers), 8, NWATCH, 8).unwrap_or_default(),
        };
        raw.chunks_exact(8).map(|c| u64_at(c, 0)).filter(|&w| w != NO_WATCHER).collect()
    }

    /// Adds `me` to the board's watchers (once).  False when the table is full or the
    /// board cannot be reached.
    fn add_watcher(&self, me: u64) -> bool {
        let off = std::mem::offset_of!(Hdr, watchers);
        match self {
            B::Own(v) => {
                for w in v.hdr().watchers.iter() {
                    let cur = w.load(Ordering::Acquire);
                    if cur == me {
                        return true;
                    }
                    if cur == NO_WATCHER {
                        match w.compare_exchange(NO_WATCHER, me, Ordering::AcqRel, Ordering::Acquire) {
                            Ok(_) => return true,
                            Err(x) if x == me => return true,
                            Err(_) => continue,
                        }
                    }
                }
                false
            }
            B::Peer(r) => {
                let cur: Vec<u64> = match r.gather(off, 8, NWATCH, 8) {
                    Ok(b) => b.chunks_exact(8).map(|c| u64_at(c, 0)).collect(),
                    Err(_) => return false,
                };
                if cur.contains(&me) {
                    return true;
                }
                for (k, &w) in cur.iter().enumerate() {
                    if w == NO_WATCHER {
                        match r.cas_u64(off + 8 * k, NO_WATCHER, me) {
                            Ok(Ok(_)) => return true,
                            Ok(Err(x)) if x == me => return true,
                            Ok(Err(_)) => continue,
                            Err(_) => return false,
                        }
                    }
                }
                false
            }
        }
    }

    fn read_vmdh(&self, i: usize) -> Option<[u64; 2]> {
        if i >= NVMDH {
            return None;
        }
        match self {
            B::Own(v) => v.read_vmdh(i),
            B::Peer(r) => {
                let w1 = r.load_u64(VMDH_OFF + i * 16).ok()?;
                let w2 = r.load_u64(VMDH_OFF + i * 16 + 8).ok()?;
                // Re-read the first word: an entry being replaced is all or nothing.
                (w1 != 0 && r.load_u64(VMDH_OFF + i * 16).ok()? == w1).then_some([w1, w2])
            }
        }
    }
}

impl PeerBoard {
    fn b(&self) -> B<'_> {
        B::Peer(&self.region)
    }
    fn live(&self) -> bool {
        if !self.peer.seems_alive() {
            return false;
        }
        match &self.region {
            Region::Mapped(_) => self.region.load_u64(0).map_or(false, |m| m == BOARD_MAGIC),
            // Checked when opened; a board freed since fails its next operation.
            Region::Remote { .. } => true,
        }
    }
}

/// What the owner remembers about one of its datagrams.
struct Rec {
    ep: u64,
    id: Option<u64>,
    /// (slot index, slot gen) while posted; None once cancelled.
    slot: Option<(usize, u64)>,
    out_buf: usize,
    buf_size: u16,
    bind: Option<(u32, u32)>,
    seq: u64,
    /// Its endpoint was destroyed while it was outstanding: cancelled, and kept only until
    /// a probe reports it (nothing else can collect it any more).
    orphan: bool,
}

/// Per-instance datagram state (owned by the Nic).
pub struct Board {
    mem: ManuallyDrop<SharedMem>,
    /// Where peers find the board (published in the registry).
    pub loc: RingLoc,
    view: View,
    addr: u32,
    inst_id: u32,
    /// The instance's domain: peer boards are looked up in it.
    ptag: u8,
    cookie: u32,
    st: Mutex<BoardState>,
    /// Peer boards by (NIC address, inst_id).
    peers: Mutex<HashMap<(u32, u32), Arc<PeerBoard>>>,
}

struct BoardState {
    free: Vec<usize>,
    recs: Vec<Rec>,
    seq: u64,
}

// SAFETY: the view points into `mem`, which lives as long as the Board.
unsafe impl Send for Board {}
unsafe impl Sync for Board {}

impl Drop for Board {
    fn drop(&mut self) {
        self.view.hdr().magic.store(0, Ordering::Release);
        self.view.hdr().bell.notify();
        // SAFETY: dropped once, here.
        let m = unsafe { ManuallyDrop::take(&mut self.mem) };
        let _ = mem::free_shared(m);
    }
}

/// Per-endpoint datagram state: the endpoint's identity in its board's records.
pub struct EpDgram {
    pub uid: u64,
}

impl Default for EpDgram {
    fn default() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        EpDgram { uid: NEXT.fetch_add(1, Ordering::Relaxed) }
    }
}

/// Result of a Test/Wait: (return code, post state, remote address, remote id).
pub type TestResult = (gni_return_t, gni_post_state_t, u32, u32);

fn my_pid() -> u32 {
    std::process::id()
}

impl Board {
    pub fn new(addr: u32, inst_id: u32, ptag: u8, cookie: u32) -> GniResult<Board> {
        let mem = mem::alloc_shared(BOARD_LEN).map_err(|_| GNI_RC_ERROR_NOMEM)?;
        let loc = mem.ring_loc(0, BOARD_LEN).map_err(|_| GNI_RC_ERROR_RESOURCE)?;
        let view = View { base: mem.as_ptr() };
        let h = view.hdr();
        h.nslots.store(NSLOTS as u32, Ordering::Relaxed);
        h.nwatch.store(NWATCH as u32, Ordering::Relaxed);
        for w in h.watchers.iter() {
            w.store(NO_WATCHER, Ordering::Relaxed);
        }
        h.magic.store(BOARD_MAGIC, Ordering::Release);
        Ok(Board {
            mem: ManuallyDrop::new(mem),
            loc,
            view,
            addr,
            inst_id,
            ptag,
            cookie,
            st: Mutex::new(BoardState { free: (0..NSLOTS).rev().collect(), recs: Vec::new(), seq: 0 }),
            peers: Mutex::new(HashMap::new()),
        })
    }

    /// Publishes (Some) or clears (None) vMDH entry `i` of this instance.
    pub fn set_vmdh(&self, i: usize, words: Option<[u64; 2]>) {
        if i >= NVMDH {
            return;
        }
        let e = self.view.vmdh(i);
        match words {
            Some(w) => {
                e[0].store(0, Ordering::Release);
                e[1].store(w[1], Ordering::Release);
                e[0].store(w[0], Ordering::Release);
            }
            None => e[0].store(0, Ordering::Release),
        }
    }

    /// This instance's vMDH entry `i`.
    pub fn vmdh(&self, i: usize) -> Option<[u64; 2]> {
        self.view.read_vmdh(i)
    }

    /// vMDH entry `i` of instance (addr, id) of our domain, read through its board.
    pub fn peer_vmdh(&self, addr: u32, id: u32, i: usize) -> Option<[u64; 2]> {
        if addr == self.addr && id == self.inst_id {
            return self.view.read_vmdh(i);
        }
        self.peer_board(addr, id)?.b().read_vmdh(i)
    }

    /// The board of instance `id` of our domain at NIC address `addr`, if attached: found
    /// in the node registry when it runs on this node, else in the job's KVS (published
    /// by `GNI_CdmAttach` when the network engine runs).  Cached while it stays usable.
    fn peer_board(&self, addr: u32, id: u32) -> Option<Arc<PeerBoard>> {
        {
            let mut c = lock(&self.peers);
            if let Some(pb) = c.get(&(addr, id)) {
                // Rate-limited liveness (a probe is a system call; vMDH handles are
                // resolved here on every post).
                if pb.live() {
                    return Some(pb.clone());
                }
                c.remove(&(addr, id));
            }
        }
        let pb = Arc::new(self.find_board(addr, id)?);
        lock(&self.peers).insert((addr, id), pb.clone());
        Some(pb)
    }

    fn find_board(&self, addr: u32, id: u32) -> Option<PeerBoard> {
        let key = instance_key(self.ptag, self.cookie, id);
        if let Ok(ep) = registry::lookup(registry::api::UGNI, &key) {
            let info = InstanceInfo::from_payload(&ep.payload);
            if info.nic_addr == addr {
                let peer = Peer::open(info.peer).ok()?;
                let region = Region::open(&peer, &info.dgram_board).ok()?;
                if region.len() < BOARD_LEN || region.load_u64(0).ok()? != BOARD_MAGIC {
                    return None;
                }
                return Some(PeerBoard { peer, region });
            }
        }
        // Another node: the instance directory in the KVS.
        let rec = softnic_fabric::bootstrap::kvs_get_global(&remote_instance_key(self.ptag, self.cookie, id)).ok()?;
        let w = |i: usize| rec.get(i * 8..i * 8 + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
        let (node, proc_id) = (w(0)?, w(1)?);
        if node as u32 != addr {
            return None;
        }
        let peer = Peer::at(addr, ProcId { slot: proc_id as u32, gen: (proc_id >> 32) as u32 }, 32).ok()?;
        let region = Region::open(&peer, &RingLoc::from_words([w(2)?, w(3)?, w(4)?])).ok()?;
        if region.len() < BOARD_LEN || region.load_u64(0).ok()? != BOARD_MAGIC {
            return None;
        }
        Some(PeerBoard { peer, region })
    }

    /// The board of (addr, id) as the matching code sees it (ours, or a peer's).
    fn board_of<'a>(&self, addr: u32, id: u32, keep: &'a mut Option<Arc<PeerBoard>>) -> Option<B<'a>> {
        if addr == self.addr && id == self.inst_id {
            return Some(B::Own(self.view));
        }
        *keep = Some(self.peer_board(addr, id)?);
        keep.as_ref().map(|pb| pb.b())
    }

    /// Pairs our pending slot `i` (state word `w`) with the first candidate slot `(index,
    /// state word)` of board `theirs` (owned by instance `owner` = (addr, inst_id)) that is
    /// still there, ringing both bells on success.  True when our slot is settled (paired,
    /// or taken meanwhile by someone else).
    fn pair_first(&self, i: usize, w: u64, theirs: B<'_>, owner: (u32, u32), cands: impl Iterator<Item = (usize, u64)>) -> bool {
        let mine = (B::Own(self.view), (self.addr, self.inst_id, i), w);
        for (j, sw) in cands {
            match pair(mine, (theirs, (owner.0, owner.1, j), sw)) {
                Pair::Done => {
                    theirs.ring();
                    self.view.hdr().bell.notify();
                    return true;
                }
                Pair::MineGone => return true,
                Pair::TheirsGone => continue,
            }
        }
        false
    }

    /// Tries to pair our pending slot `i` (gen `g`).  Returns (matched or finished, whether
    /// a later event will wake us: the peer board exists and we watch it).
    fn try_match(&self, i: usize, g: u64) -> (bool, bool) {
        let me = self.view.slot(i);
        let w = me.state.load(Ordering::Acquire);
        if w_gen(w) != g || w_state(w) != PENDING {
            return (true, true);
        }
        let pending = word(g, PENDING, 0);
        if me.bound.load(Ordering::Relaxed) != 0 {
            let ta = me.target_addr.load(Ordering::Relaxed);
            let tid = me.target_id.load(Ordering::Relaxed);
            let same = tid == self.inst_id && ta == self.addr;
            let mut keep = None;
            let Some(b) = self.board_of(ta, tid, &mut keep) else { return (false, false) };
            let watching = b.add_watcher(watcher(self.addr, self.inst_id));
            fence(Ordering::SeqCst);
            let Some(heads) = b.heads() else { return (false, false) };
            // Candidates: bound to us first, then unbound; oldest first.
            let mut cands: Vec<(bool, u64, usize, u64)> = heads
                .iter()
                .enumerate()
                .filter(|&(j, h)| !(same && j == i) && w_state(h.state) == PENDING && (!h.bound || (h.target_id == self.inst_id && h.target_addr == self.addr)))
                .map(|(j, h)| (!h.bound, h.seq, j, h.state))
                .collect();
            cands.sort();
            if self.pair_first(i, pending, b, (ta, tid), cands.into_iter().map(|(_, _, j, sw)| (j, sw))) {
                return (true, true);
            }
            (false, watching)
        } else {
            fence(Ordering::SeqCst);
            for wv in B::Own(self.view).watchers() {
                let (waddr, wid) = ((wv >> 32) as u32, wv as u32);
                let mut keep = None;
                let Some(b) = self.board_of(waddr, wid, &mut keep) else { continue };
                let Some(heads) = b.heads() else { continue };
                let mut cands: Vec<(u64, usize, u64)> = heads
                    .iter()
                    .enumerate()
                    .filter(|(_, h)| w_state(h.state) == PENDING && h.bound && h.target_id == self.inst_id && h.target_addr == self.addr)
                    .map(|(j, h)| (h.seq, j, h.state))
                    .collect();
                cands.sort();
                if self.pair_first(i, pending, b, (waddr, wid), cands.into_iter().map(|(_, j, sw)| (j, sw))) {
                    return (true, true);
                }
            }
            (false, true)
        }
    }

    /// Posts a datagram for the endpoint whose [`EpDgram::uid`] is `uid`, bound to `bind`
    /// = (NIC address, remote_id), or unbound (None).
    #[allow(clippy::too_many_arguments)]
    pub fn post(&self, uid: u64, bind: Option<(u32, u32)>, input: &[u8], out_buf: usize, buf_size: u16, id: Option<u64>) -> gni_return_t {
        if bind.is_none() && id.is_none() {
            return GNI_RC_INVALID_PARAM;
        }
        let (i, g) = {
            let mut st = lock(&self.st);
            if st.recs.iter().any(|r| r.ep == uid && r.slot.is_some()) {
                return GNI_RC_ERROR_RESOURCE;
            }
            let Some(i) = st.free.pop() else { return GNI_RC_ERROR_RESOURCE };
            st.seq += 1;
            let seq = st.seq;
            let s = self.view.slot(i);
            let g = w_gen(s.state.load(Ordering::Relaxed));
            s.bound.store(bind.is_some() as u32, Ordering::Relaxed);
            s.target_addr.store(bind.map_or(0, |b| b.0), Ordering::Relaxed);
            s.target_id.store(bind.map_or(0, |b| b.1), Ordering::Relaxed);
            s.owner_addr.store(self.addr, Ordering::Relaxed);
            s.owner_id.store(self.inst_id, Ordering::Relaxed);
            s.in_len.store(input.len() as u32, Ordering::Relaxed);
            s.out_len.store(0, Ordering::Relaxed);
            s.seq.store(seq, Ordering::Relaxed);
            // SAFETY: the slot is FREE, so only we touch its payload; input <= MAXDG.
            unsafe { std::ptr::copy_nonoverlapping(input.as_ptr(), s.in_data.as_ptr() as *mut u8, input.len()) };
            // Release: a peer that sees PENDING sees the fields.
            s.state.store(word(g, PENDING, 0), Ordering::Release);
            st.recs.push(Rec { ep: uid, id, slot: Some((i, g)), out_buf, buf_size, bind, seq, orphan: false });
            (i, g)
        };
        sn_dbg(&format!("posted slot {} (ep {}, bound {:?}, id {:?})", i, uid, bind, id));
        self.try_match(i, g);
        GNI_RC_SUCCESS
    }

    /// Index of the record a Test/Wait/Cancel on (ep, id filter) addresses.
    fn find(st: &BoardState, uid: u64, id: Option<u64>, want_active: bool) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (k, r) in st.recs.iter().enumerate() {
            if r.ep != uid || (id.is_some() && r.id != id) || (want_active && r.slot.is_none()) {
                continue;
            }
            // Cancelled (finished) records first, then by age.
            let key = (r.slot.is_some(), r.seq);
            if best.map_or(true, |b| key < (st.recs[b].slot.is_some(), st.recs[b].seq)) {
                best = Some(k);
            }
        }
        best
    }

    /// One non-blocking test (with progress).  NO_MATCH when nothing is posted.
    pub fn test(&self, uid: u64, id: Option<u64>) -> TestResult {
        let pending = {
            let st = lock(&self.st);
            match Self::find(&st, uid, id, false) {
                None => return (GNI_RC_NO_MATCH, GNI_POST_PENDING, 0, 0),
                Some(k) => st.recs[k].slot,
            }
        };
        if let Some((i, g)) = pending {
            self.try_match(i, g);
        }
        let mut st = lock(&self.st);
        let Some(k) = Self::find(&st, uid, id, false) else { return (GNI_RC_NO_MATCH, GNI_POST_PENDING, 0, 0) };
        let r = &st.recs[k];
        match r.slot {
            None => {
                let (a, p) = r.bind.unwrap_or((0, 0));
                st.recs.remove(k);
                (GNI_RC_SUCCESS, GNI_POST_TERMINATED, a, p)
            }
            Some((i, g)) => {
                let s = self.view.slot(i);
                let w = s.state.load(Ordering::Acquire);
                if w_gen(w) != g || w_state(w) != DONE {
                    return (GNI_RC_SUCCESS, GNI_POST_PENDING, 0, 0);
                }
                let n = s.out_len.load(Ordering::Relaxed) as usize;
                let (a, p) = (s.peer_addr.load(Ordering::Relaxed), s.peer_id.load(Ordering::Relaxed));
                let rc = if n > r.buf_size as usize {
                    GNI_RC_SIZE_ERROR
                } else {
                    // SAFETY: the user's out_buf has buf_size >= n bytes (post contract);
                    // the slot is DONE, so nobody writes its payload any more.
                    unsafe { std::ptr::copy_nonoverlapping(s.out_data.as_ptr(), r.out_buf as *mut u8, n) };
                    GNI_RC_SUCCESS
                };
                s.state.store(word(g + 1, FREE, 0), Ordering::Release);
                st.free.push(i);
                st.recs.remove(k);
                (rc, GNI_POST_COMPLETED, a, p)
            }
        }
    }

    /// Blocking test.  `timeout_ms == u32::MAX` waits forever.
    pub fn wait(&self, uid: u64, id: Option<u64>, timeout_ms: u32) -> TestResult {
        let deadline = (timeout_ms != u32::MAX).then(|| Instant::now() + Duration::from_millis(timeout_ms as u64));
        loop {
            let r = self.test(uid, id);
            if !(r.0 == GNI_RC_SUCCESS && r.1 == GNI_POST_PENDING) {
                return r;
            }
            let slot = {
                let st = lock(&self.st);
                Self::find(&st, uid, id, false).and_then(|k| st.recs[k].slot)
            };
            let Some((i, g)) = slot else { continue };
            let (_, woken) = self.try_match(i, g);
            // Sleep until our slot changes; poll when nobody will ring us (target not there yet).
            let slice = if woken { Duration::from_millis(500) } else { Duration::from_millis(10) };
            let left = match deadline {
                None => slice,
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(l) if !l.is_zero() => l.min(slice),
                    _ => return (GNI_RC_TIMEOUT, GNI_POST_PENDING, 0, 0),
                },
            };
            let s = self.view.slot(i);
            // The call's cancellation point (nothing held here).
            let _ = softnic_fabric::cancel::point(|| self.view.hdr().bell.wait_until(|| s.state.load(Ordering::Acquire) != word(g, PENDING, 0), Some(left)));
        }
    }

    /// Cancels the active datagram of (ep, id filter).
    pub fn cancel(&self, uid: u64, id: Option<u64>) -> gni_return_t {
        let mut st = lock(&self.st);
        let Some(k) = Self::find(&st, uid, id, true) else { return GNI_RC_NO_MATCH };
        let (i, g) = st.recs[k].slot.expect("active");
        let s = self.view.slot(i);
        let mut spins = 0u32;
        let start = Instant::now();
        loop {
            let w = s.state.load(Ordering::Acquire);
            match w_state(w) {
                PENDING => {
                    if s.state.compare_exchange(w, word(g + 1, FREE, 0), Ordering::AcqRel, Ordering::Acquire).is_ok() {
                        st.free.push(i);
                        st.recs[k].slot = None;
                        return GNI_RC_SUCCESS;
                    }
                }
                CLAIMED => {
                    spins += 1;
                    // A matcher on another node records pid 0: it is given a bounded time.
                    let holder_gone = |pid: u32| if pid == 0 { start.elapsed() > REMOTE_CLAIM_LIMIT } else { !registry::pid_alive(pid as i32, None) };
                    if spins % 1024 == 0 && holder_gone(w_pid(w)) {
                        // The matcher died holding our slot: take it back.
                        let _ = s.state.compare_exchange(w, word(g, PENDING, 0), Ordering::AcqRel, Ordering::Acquire);
                    }
                    softnic_fabric::spin::relax(spins);
                }
                _ => return GNI_RC_SUCCESS, // completed meanwhile: reaps as COMPLETED
            }
        }
    }

    /// Settles the datagrams of an endpoint being destroyed.  Outstanding ones are
    /// cancelled and stay visible to `GNI_PostDataProbe(ById)` and
    /// `GNI_PostdataProbeWaitById` in the cancelled state until a probe reports them (real
    /// clients wake their datagram thread, asleep in ProbeWaitById, exactly this way: post
    /// to self, destroy the endpoint, join).  Completed ones nobody reaped are dropped.
    pub fn forget_ep(&self, uid: u64) {
        while self.cancel(uid, None) == GNI_RC_SUCCESS {
            let st = lock(&self.st);
            if Self::find(&st, uid, None, true).is_none() {
                break;
            }
            // Completed but not reaped: free it below.
            drop(st);
            let _ = self.free_done(uid);
        }
        let _ = self.free_done(uid);
        {
            let mut st = lock(&self.st);
            for r in st.recs.iter_mut().filter(|r| r.ep == uid) {
                r.orphan = true;
            }
        }
        // Wake sleepers in ProbeWaitById: there may be something new to report.
        self.view.hdr().bell.notify();
    }

    fn free_done(&self, uid: u64) -> bool {
        let mut st = lock(&self.st);
        let mut any = false;
        let mut k = 0;
        while k < st.recs.len() {
            if st.recs[k].ep == uid {
                if let Some((i, g)) = st.recs[k].slot {
                    let s = self.view.slot(i);
                    if s.state.load(Ordering::Acquire) == word(g, DONE, 0) {
                        s.state.store(word(g + 1, FREE, 0), Ordering::Release);
                        st.free.push(i);
                        st.recs.remove(k);
                        any = true;
                        continue;
                    }
                }
            }
            k += 1;
        }
        any
    }

    /// True while the endpoint has a posted datagram (EpUnbind answers NOT_DONE).
    pub fn has_active(&self, uid: u64) -> bool {
        let st = lock(&self.st);
        st.recs.iter().any(|r| r.ep == uid && r.slot.is_some())
    }

    /// Probe: the oldest finished datagram (completed or cancelled), with progress on
    /// pending ones first.  `by_id`: only datagrams posted with an id.  A cancelled
    /// datagram of a destroyed endpoint is collected by the probe that reports it.
    /// Returns (remote address, remote id, datagram id).
    pub fn probe(&self, by_id: bool) -> Option<(u32, u32, u64)> {
        let pending: Vec<(usize, u64)> = lock(&self.st).recs.iter().filter_map(|r| r.slot).collect();
        for (i, g) in pending {
            self.try_match(i, g);
        }
        let mut st = lock(&self.st);
        let mut best: Option<(u64, usize, (u32, u32, u64))> = None;
        for (k, r) in st.recs.iter().enumerate() {
            if by_id && r.id.is_none() {
                continue;
            }
            let hit = match r.slot {
                None => Some(r.bind.unwrap_or((0, 0))),
                Some((i, g)) => {
                    let s = self.view.slot(i);
                    (s.state.load(Ordering::Acquire) == word(g, DONE, 0))
                        .then(|| (s.peer_addr.load(Ordering::Relaxed), s.peer_id.load(Ordering::Relaxed)))
                }
            };
            if let Some((a, p)) = hit {
                if best.map_or(true, |b| r.seq < b.0) {
                    best = Some((r.seq, k, (a, p, r.id.unwrap_or(0))));
                }
            }
        }
        let (_, k, found) = best?;
        if st.recs[k].orphan {
            st.recs.remove(k);
        }
        Some(found)
    }

    /// Blocking ProbeById.  `timeout_ms == u32::MAX` waits forever.
    pub fn probe_wait(&self, timeout_ms: u32) -> Option<u64> {
        let deadline = (timeout_ms != u32::MAX).then(|| Instant::now() + Duration::from_millis(timeout_ms as u64));
        loop {
            let seen = self.view.hdr().bell.seq.load(Ordering::Acquire);
            if let Some((_, _, id)) = self.probe(true) {
                return Some(id);
            }
            let left = match deadline {
                None => Duration::from_millis(20),
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(l) if !l.is_zero() => l.min(Duration::from_millis(20)),
                    _ => return None,
                },
            };
            // Wake on any bell ring (a match on this board), or poll every 20 ms.
            let h = self.view.hdr();
            // The call's cancellation point (nothing held here).
            let _ = softnic_fabric::cancel::point(|| h.bell.wait_until(|| h.bell.seq.load(Ordering::Acquire) != seen, Some(left)));
        }
    }
}

fn sn_dbg(msg: &str) {
    softnic_fabric::sn_debug!("GNI_EpPostData", "{}", msg);
}

enum Pair {
    Done,
    /// Our slot is no longer pending (matched by someone else, or cancelled).
    MineGone,
    /// The candidate is no longer pending.
    TheirsGone,
}

enum Claim {
    Ok,
    Gone,
}

/// Claims slot `j` of board `b` expected in state word `w` (PENDING of some gen).  Spins
/// while someone else holds it CLAIMED: a holder on this node that died counts as gone;
/// one on another node (pid 0: unknown here) after [`REMOTE_CLAIM_LIMIT`].
fn claim(b: B<'_>, j: usize, w: u64) -> Claim {
    // A claim on another node's board records no pid: ours means nothing there.
    let me = if b.remote() { 0 } else { my_pid() };
    let want = word(w_gen(w), CLAIMED, me);
    let start = Instant::now();
    let mut spins = 0u32;
    loop {
        match b.cas_state(j, w, want) {
            None => return Claim::Gone,
            Some(Ok(_)) => return Claim::Ok,
            Some(Err(cur)) => {
                if w_gen(cur) != w_gen(w) || w_state(cur) != CLAIMED {
                    return Claim::Gone;
                }
                spins += 1;
                if spins % 1024 == 0 {
                    let holder = w_pid(cur);
                    let gone = if holder == 0 { start.elapsed() > REMOTE_CLAIM_LIMIT } else { !b.remote() && !registry::pid_alive(holder as i32, None) };
                    if gone {
                        return Claim::Gone;
                    }
                }
                softnic_fabric::spin::relax(spins);
            }
        }
    }
}

/// Pairs slot `a` (ours) with slot `b`, claiming them in one global order (NIC address,
/// inst_id, slot index), then swapping payloads and identities and marking both DONE.
/// A board that cannot be reached half-way (its owner died) leaves our slot PENDING.
fn pair(a: (B<'_>, (u32, u32, usize), u64), b: (B<'_>, (u32, u32, usize), u64)) -> Pair {
    let (first, second, mine_first) = if a.1 <= b.1 { (a, b, true) } else { (b, a, false) };
    if let Claim::Gone = claim(first.0, first.1 .2, first.2) {
        return if mine_first { Pair::MineGone } else { Pair::TheirsGone };
    }
    if let Claim::Gone = claim(second.0, second.1 .2, second.2) {
        let _ = first.0.set_state(first.1 .2, first.2);
        return if mine_first { Pair::TheirsGone } else { Pair::MineGone };
    }
    // Both held: swap payloads and identities.
    let swapped = (|| {
        let (aa, ai, ad) = a.0.read_in(a.1 .2)?;
        let (ba, bi, bd) = b.0.read_in(b.1 .2)?;
        b.0.write_out(b.1 .2, &ad, aa, ai)?;
        a.0.write_out(a.1 .2, &bd, ba, bi)
    })();
    if swapped.is_none() {
        let _ = a.0.set_state(a.1 .2, a.2);
        let _ = b.0.set_state(b.1 .2, b.2);
        return Pair::TheirsGone;
    }
    // Release: the owner that sees DONE sees the payload.
    let _ = a.0.set_state(a.1 .2, word(w_gen(a.2), DONE, 0));
    let _ = b.0.set_state(b.1 .2, word(w_gen(b.2), DONE, 0));
    Pair::Done
}
