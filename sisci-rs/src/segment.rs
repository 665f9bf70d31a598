//! Local segments: memory this process exports under (node id, segment id).
//!
//! **Memory.**  A segment's memory is library shared memory (`mem::alloc_shared`, a
//! memfd) from the start, so a process of another (virtual) node on this machine maps
//! the very pages (SCIMapRemoteSegment returns a pointer into them: plain loads and
//! stores are PIO) and the network engine can serve DMA into them (the memory is also a
//! fabric registration).  SCI_FLAG_EMPTY segments get their memory from
//! SCIRegisterSegmentMemory / SCIAttachPhysicalMemory, which register the program's pages
//! with the fabric (the fabric makes them shareable in place).
//!
//! **State.**  create -> (EMPTY: attach memory) -> prepare(adapter) -> available(adapter)
//! <-> unavailable -> remove.  The state word of the segment's control block holds
//! available/prepared/removed/callback bits and the connection count, so a connecting
//! peer (crate::service) checks "available" and takes a connection in one atomic step.
//! SCIRemoveSegment refuses (SCI_ERR_BUSY) while the segment is mapped or a DMA transfer
//! in flight uses it, here or at an importer (crate::service, "Uses"); connections with
//! nothing mapped and nothing in flight do not hold it, as on the hardware, where a
//! program that leaves an idle connection behind goes on: they are told
//! (SCI_CB_DISCONNECT) and dropped, and their later maps and transfers fail
//! (SCI_ERR_NOT_CONNECTED, a transfer in ERROR).  Connections of processes that died are
//! dropped first, each reported as SCI_CB_DISCONNECT.
//!
//! **Events** (SCI_CB_CONNECT/DISCONNECT with the peer's node id) queue in the block's
//! ring (64 entries; older ones are dropped when nobody takes them): the callback thread
//! delivers them with SCI_FLAG_USE_CALLBACK, SCIWaitForLocalSegmentEvent otherwise.

use crate::desc::{self, Desc, Kind};
use crate::events::{self, Armed, SWEEP_EVERY};
use crate::handles::Table;
use crate::memory::{alloc_data, Data};
use crate::node;
use crate::pool::{self, Block, *};
use crate::service::*;
use crate::sisci_export;
use crate::status::*;
use crate::types::*;
use softnic_fabric::mem::{self, Access, MemKey, RingLoc};
use softnic_fabric::registry::{self, api, EndpointId, ProcId};
use softnic_fabric::ring::Ring;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// One slice of a wait for a segment's connection events: sleeps on `ring` until an
/// event, `deadline` or SWEEP_EVERY (the caller then sweeps for dead peers and looks
/// again).  SCI_ERR_TIMEOUT once the deadline has passed.
pub fn sleep_on(ring: &Ring<Event>, deadline: Option<Instant>) -> R<()> {
    let slice = match deadline {
        None => SWEEP_EVERY,
        Some(d) => {
            let now = Instant::now();
            if now >= d {
                return Err(SCI_ERR_TIMEOUT);
            }
            (d - now).min(SWEEP_EVERY)
        }
    };
    match ring.wait_nonempty(Some(slice)) {
        Ok(()) | Err(softnic_fabric::Error::Timeout) => Ok(()),
        Err(_) => Err(SCI_ERR_SYSTEM),
    }
}
/// Candidates SCI_FLAG_AUTO_ID tries: [id, id + 128].
pub const AUTO_ID_RANGE: u32 = 128;

pub struct LocalSeg {
    pub handle: usize,
    pub desc: Arc<Desc>,
    pub node: u32,
    pub id: AtomicU32,
    pub size: usize,
    pub flags: u32,
    pub blk: Block,
    pub ring: Ring<Event>,
    pub data: OnceLock<Data>,
    /// A broadcast segment's group (its memory is the node's own copy of it).
    pub group: Option<Arc<crate::broadcast::Group>>,
    /// The creator's: its copy in the machine's table, until the segment is removed.
    membership: Option<crate::broadcast::Membership>,
    claim: Mutex<Option<EndpointId>>,
    /// Serialises the lifecycle calls (map, prepare, availability, remove).
    life: Mutex<()>,
    pub maps: AtomicU32,
    /// Transfers of the general path in flight from this segment (SCI_ERR_BUSY at removal).
    pub dma: AtomicU32,
    /// Removals in progress ([`crate::handles::Removal`]): the quick DMA path, which does
    /// not count itself in `dma`, leaves the segment to the general path meanwhile.
    pub removing: AtomicU32,
    pub removed: AtomicBool,
    cb: Mutex<Option<(CbLocalSegment, usize)>>,
    /// SEG_PREPARED was seen in the block's state word (never cleared there): kept here so
    /// that a DMA source's check reads this object, not the shared block's line (which a
    /// 16 KiB copy has evicted from the first-level cache by the next transfer).
    prepared_seen: AtomicBool,
}

pub static SEGS: Table<LocalSeg> = Table::new(2);

pub fn seg(h: usize) -> R<Arc<LocalSeg>> {
    SEGS.get(h).ok_or(SCI_ERR_ILLEGAL_PARAMETER)
}

/// Gives `s` its handle, then arms its callback if it has one (undone on failure).
fn install(mut s: LocalSeg) -> R<Arc<LocalSeg>> {
    let armed = s.cb.get_mut().unwrap_or_else(|e| e.into_inner()).is_some();
    let (_, obj) = SEGS.insert_with(move |h| {
        s.handle = h;
        Arc::new(s)
    }).ok_or(SCI_ERR_NOSPC)?;
    if armed {
        if let Err(e) = events::arm(obj.clone()) {
            SEGS.remove(obj.handle);
            return Err(e);
        }
    }
    Ok(obj)
}

impl LocalSeg {
    /// A handle-less segment object (the owner's, or an attacher's view of the owner's
    /// block), with no maps, transfers or connection claim yet.
    #[allow(clippy::too_many_arguments)]
    fn new(desc: &Arc<Desc>, node: u32, id: u32, size: usize, flags: u32, blk: Block, ring: Ring<Event>, data: OnceLock<Data>, group: Option<Arc<crate::broadcast::Group>>, cb: Option<(CbLocalSegment, usize)>) -> LocalSeg {
        LocalSeg {
            handle: 0,
            desc: desc.clone(),
            node,
            id: AtomicU32::new(id),
            size,
            flags,
            blk,
            ring,
            data,
            group,
            membership: None,
            claim: Mutex::new(None),
            life: Mutex::new(()),
            maps: AtomicU32::new(0),
            dma: AtomicU32::new(0),
            removing: AtomicU32::new(0),
            prepared_seen: AtomicBool::new(false),
            removed: AtomicBool::new(false),
            cb: Mutex::new(cb),
        }
    }

    pub fn state(&self) -> u64 {
        self.blk.word(H_STATE).load(Ordering::Acquire)
    }
    pub fn connections(&self) -> u64 {
        (self.state() & SEG_CONN_MASK) >> 32
    }
    pub fn prepared(&self) -> bool {
        if self.prepared_seen.load(Ordering::Acquire) {
            return true;
        }
        let p = self.state() & SEG_PREPARED != 0;
        if p {
            self.prepared_seen.store(true, Ordering::Release);
        }
        p
    }
    /// The memory, once the segment has some.
    pub fn mem(&self) -> R<&Data> {
        self.data.get().ok_or(SCI_ERR_ILLEGAL_OPERATION)
    }

    fn push_local(&self, ev: Event) {
        self.ring.push_or_overrun(&ev);
        if self.state() & SEG_ARMED != 0 {
            events::kick();
        }
    }

    /// Drops connections whose importer process is gone, reporting each as
    /// SCI_CB_DISCONNECT.
    pub fn sweep_dead(&self) {
        for g in sweep_records(&self.blk) {
            if g.counted {
                self.blk.word(H_STATE).fetch_sub(SEG_CONN_ONE, Ordering::AcqRel);
            }
            if let Some((node, adapter)) = g.live {
                self.push_local([SCI_CB_DISCONNECT as u64 | (node as u64) << 32, adapter as u64]);
            }
        }
    }

    /// Does an importer map the segment or move data with it (a live connection whose
    /// uses are not 0)?
    fn importers_busy(&self) -> bool {
        (0..NREC).any(|i| self.blk.rec(i, 0).load(Ordering::SeqCst) & 0xff == REC_LIVE && self.blk.rec(i, REC_USES).load(Ordering::SeqCst) >> 32 != 0)
    }

    /// Tells every connected importer `reason` (on removal, `removal`, not the broadcast
    /// connections: they reach the group, which goes on); with `drop_them` also ends the
    /// connections (each reported locally as SCI_CB_DISCONNECT).
    fn tell_importers(&self, reason: u32, drop_them: bool, removal: bool) {
        for i in 0..NREC {
            let st = self.blk.rec(i, 0).load(Ordering::Acquire);
            if st & 0xff != REC_LIVE {
                continue;
            }
            let w1 = self.blk.rec(i, 8).load(Ordering::Relaxed);
            let w2 = self.blk.rec(i, 16).load(Ordering::Relaxed);
            let ring = RingLoc::from_words([24, 32, 40].map(|o| self.blk.rec(i, o).load(Ordering::Relaxed)));
            let cookie = self.blk.rec(i, 48).load(Ordering::Relaxed);
            let kind = self.blk.rec(i, REC_USES).load(Ordering::Relaxed);
            let adapter = kind & REC_ADAPTER_MASK;
            let id = ProcId { slot: w2 as u32, gen: (w2 >> 32) as u32 };
            let tell = !(removal && kind & REC_BROADCAST != 0);
            match node::peer_at((w1 >> 32) as u32, id) {
                Ok(p) if tell => {
                    if let Err(e) = softnic_fabric::rma::post_event(&p, &ring, &[reason as u64, cookie], true) {
                        softnic_fabric::sn_debug!("SISCI", "segment {}: could not tell node {}: {}", self.id.load(Ordering::Relaxed), w1 as u32, e);
                    }
                }
                Ok(_) => {}
                Err(e) => softnic_fabric::sn_debug!("SISCI", "segment {}: importer on node {} unreachable: {}", self.id.load(Ordering::Relaxed), w1 as u32, e),
            }
            if drop_them && self.blk.rec(i, 0).compare_exchange(st, REC_FREE, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                self.blk.word(H_STATE).fetch_sub(SEG_CONN_ONE, Ordering::AcqRel);
                self.push_local([SCI_CB_DISCONNECT as u64 | (w1 & 0xffff_ffff) << 32, adapter]);
            }
        }
    }
}

/// A record freed by [`sweep_records`].
pub struct Gone {
    /// The connection had been counted (the object's count must drop by one).
    pub counted: bool,
    /// A live connection: its importer's node and adapter (report SCI_CB_DISCONNECT).
    pub live: Option<(u32, u32)>,
}

/// Frees the records of `blk` whose process is gone: live connections of importers that
/// died, and records a claimer died in the middle of filling (see crate::service).
pub fn sweep_records(blk: &Block) -> Vec<Gone> {
    let mut gone = Vec::new();
    for i in 0..NREC {
        let st = blk.rec(i, 0).load(Ordering::Acquire);
        let g = match st & 0xff {
            REC_LIVE => {
                let w1 = blk.rec(i, 8).load(Ordering::Relaxed);
                let w2 = blk.rec(i, 16).load(Ordering::Relaxed);
                let id = ProcId { slot: w2 as u32, gen: (w2 >> 32) as u32 };
                let alive = match node::peer_at((w1 >> 32) as u32, id) {
                    Ok(p) => crate::service::probe(&p),
                    Err(softnic_fabric::Error::StaleHandle) | Err(softnic_fabric::Error::PeerDead) | Err(softnic_fabric::Error::InvalidHandle) => false,
                    Err(_) => true,
                };
                if alive {
                    continue;
                }
                Gone { counted: true, live: Some((w1 as u32, (blk.rec(i, REC_USES).load(Ordering::Relaxed) & REC_ADAPTER_MASK) as u32)) }
            }
            REC_CLAIMED | REC_COUNTED => {
                // A claimer runs on this machine (the owner's own progress thread claims
                // for other machines): the fabric knows whether it still lives.
                let id = ProcId { slot: ((st >> 8) & 0xffff) as u32, gen: (st >> 32) as u32 };
                match softnic_fabric::rma::Peer::by_id(id, 32) {
                    Ok(p) if p.is_alive() => continue,
                    Ok(_) | Err(softnic_fabric::Error::StaleHandle) | Err(softnic_fabric::Error::PeerDead) | Err(softnic_fabric::Error::InvalidHandle) => {}
                    Err(_) => continue,
                }
                Gone { counted: st & 0xff == REC_COUNTED, live: None }
            }
            _ => continue,
        };
        if blk.rec(i, 0).compare_exchange(st, REC_FREE, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            gone.push(g);
        }
    }
    gone
}

impl Armed for LocalSeg {
    fn dispatch(&self, sweep: bool) -> bool {
        if self.removed.load(Ordering::Acquire) {
            return false;
        }
        if sweep {
            self.sweep_dead();
        }
        loop {
            let Some((Some(f), arg)) = *self.cb.lock().unwrap_or_else(|e| e.into_inner()) else { return false };
            let Some(ev) = self.ring.pop() else { return true };
            if ev[0] & 0xffff == EV_CANCEL || self.removed.load(Ordering::Acquire) {
                return false;
            }
            let reason = (ev[0] & 0xffff) as u32;
            // SAFETY: the program's callback with the program's argument, called as the
            // reference documents (no library lock is held).
            let act = unsafe { f(arg as *mut c_void, self.handle, reason, (ev[0] >> 32) as u32, ev[1] as u32, (ev[1] >> 32) as u32) };
            if act == SCI_CALLBACK_CANCEL {
                self.disarm();
                return false;
            }
        }
    }
    fn watch(&self) -> bool {
        self.connections() > 0
    }
}

impl LocalSeg {
    fn disarm(&self) {
        *self.cb.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.blk.word(H_STATE).fetch_and(!SEG_ARMED, Ordering::AcqRel);
    }
    fn armed(&self) -> bool {
        self.cb.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }
}

/// Largest segment: the machine's memory.
fn max_size() -> usize {
    static M: OnceLock<usize> = OnceLock::new();
    *M.get_or_init(|| {
        // SAFETY: sysinfo fills a plain struct.
        let mut si: libc::sysinfo = unsafe { std::mem::zeroed() };
        if unsafe { libc::sysinfo(&mut si) } == 0 {
            (si.totalram as usize).saturating_mul(si.mem_unit as usize).max(1 << 30)
        } else {
            usize::MAX >> 1
        }
    })
}

/// The registry payload of a published object: its block (key, owner address, flags,
/// location).
pub fn payload(blk: &Block, flags: u32) -> [u8; 48] {
    let mut p = [0u8; 48];
    p[..8].copy_from_slice(&blk.key().to_u64().to_le_bytes());
    p[8..16].copy_from_slice(&blk.addr().to_le_bytes());
    p[16..20].copy_from_slice(&flags.to_le_bytes());
    for (i, w) in blk.loc(0, BLOCK).to_words().iter().enumerate() {
        p[24 + 8 * i..32 + 8 * i].copy_from_slice(&w.to_le_bytes());
    }
    p
}

/// A published object: block key, block address, flags, block location.
pub struct Published {
    pub key: MemKey,
    pub addr: u64,
    pub flags: u32,
    pub loc: RingLoc,
}

pub fn parse_payload(p: &[u8; 64]) -> Published {
    let w = |o: usize| u64::from_le_bytes(p[o..o + 8].try_into().expect("8 bytes"));
    Published { key: MemKey::from_u64(w(0)), addr: w(8), flags: u32::from_le_bytes(p[16..20].try_into().expect("4 bytes")), loc: RingLoc::from_words([w(24), w(32), w(40)]) }
}

fn write_header(s: &LocalSeg) {
    let b = &s.blk;
    b.set_u32(H_NODE, s.node);
    b.set_u32(H_ID, s.id.load(Ordering::Relaxed));
    b.word(H_SIZE).store(s.size as u64, Ordering::Relaxed);
    b.word(H_FLAGS).store(s.flags as u64, Ordering::Relaxed);
    write_data_header(s);
}

fn write_data_header(s: &LocalSeg) {
    let b = &s.blk;
    match s.data.get() {
        Some(d) => {
            b.word(H_DATA_KEY).store(d.key.to_u64(), Ordering::Relaxed);
            b.word(H_DATA_ADDR).store(d.addr, Ordering::Relaxed);
            b.set_loc(H_DATA_LOC, &d.loc.unwrap_or(RingLoc { backing: 0, backing_gen: 0, offset: 0, len: 0 }));
        }
        None => {
            b.word(H_DATA_KEY).store(MemKey::NONE.to_u64(), Ordering::Relaxed);
        }
    }
    std::sync::atomic::fence(Ordering::Release);
}

fn create(sd: usize, segment: *mut usize, id: u32, size: usize, cb: CbLocalSegment, arg: *mut c_void, flags: u32) -> R<()> {
    let d = desc::desc(sd)?;
    check_flags(flags, SCI_FLAG_USE_CALLBACK | SCI_FLAG_EMPTY | SCI_FLAG_PRIVATE | SCI_FLAG_DMA_GLOBAL | SCI_FLAG_ALLOW_UNICAST | SCI_FLAG_BROADCAST | SCI_FLAG_AUTO_ID)?;
    if segment.is_null() || (flags & SCI_FLAG_USE_CALLBACK != 0 && cb.is_none()) {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    if flags & SCI_FLAG_PRIVATE != 0 && flags & (SCI_FLAG_BROADCAST | SCI_FLAG_ALLOW_UNICAST) != 0 {
        return Err(SCI_ERR_ILLEGAL_FLAG);
    }
    if flags & SCI_FLAG_ALLOW_UNICAST != 0 && flags & SCI_FLAG_BROADCAST == 0 {
        return Err(SCI_ERR_ILLEGAL_FLAG);
    }
    if flags & SCI_FLAG_BROADCAST != 0 && flags & SCI_FLAG_EMPTY != 0 {
        return Err(SCI_ERR_ILLEGAL_FLAG);
    }
    if size == 0 {
        return Err(SCI_ERR_SIZE_ALIGNMENT);
    }
    if size > max_size() {
        return Err(SCI_ERR_NOSPC);
    }
    d.acquire(Kind::LocalSegment)?;
    let r = create_in(&d, segment, id, size, cb, arg, flags);
    if r.is_err() {
        d.release(Kind::LocalSegment);
    }
    r
}

fn create_in(d: &Arc<Desc>, segment: *mut usize, id: u32, size: usize, cb: CbLocalSegment, arg: *mut c_void, flags: u32) -> R<()> {
    let blk = pool::alloc()?;
    let (ring, _) = blk.init_ring::<Event>(64)?;
    let data = OnceLock::new();
    let mut membership = None;
    if flags & SCI_FLAG_BROADCAST != 0 {
        let (d, m) = crate::broadcast::join(id, size)?;
        let _ = data.set(d);
        membership = Some(m);
    } else if flags & SCI_FLAG_EMPTY == 0 {
        let _ = data.set(alloc_data(size)?);
    }
    let node = node::my_node();
    let group = membership.as_ref().map(|m| m.group.clone());
    let mut s = LocalSeg::new(d, node, id, size, flags, blk, ring, data, group, (flags & SCI_FLAG_USE_CALLBACK != 0).then_some((cb, arg as usize)));
    s.membership = membership;
    if flags & SCI_FLAG_USE_CALLBACK != 0 {
        s.blk.word(H_STATE).fetch_or(SEG_ARMED, Ordering::Relaxed);
    }
    write_header(&s);
    if flags & SCI_FLAG_PRIVATE == 0 {
        let last = if flags & SCI_FLAG_AUTO_ID != 0 { id.saturating_add(AUTO_ID_RANGE) } else { id };
        let mut got = None;
        for cand in id..=last {
            s.id.store(cand, Ordering::Relaxed);
            s.blk.set_u32(H_ID, cand);
            match registry::publish(api::SISCI, &node::seg_key(node, cand), &payload(&s.blk, flags)) {
                Ok(e) => {
                    got = Some(e);
                    break;
                }
                Err(softnic_fabric::Error::Exists) => continue,
                Err(_) => return Err(SCI_ERR_NOSPC),
            }
        }
        match got {
            Some(e) => *s.claim.get_mut().unwrap_or_else(|e| e.into_inner()) = Some(e),
            None => return Err(SCI_ERR_SEGMENTID_USED),
        }
    }
    let obj = install(s)?;
    out(segment, obj.handle)
}

impl Drop for LocalSeg {
    fn drop(&mut self) {
        unpublish(self);
    }
}

fn unpublish(s: &LocalSeg) {
    if let Some(e) = s.claim.lock().unwrap_or_else(|e| e.into_inner()).take() {
        let _ = registry::unpublish(e);
    }
}

sisci_export! {
    /// Creates a local segment (see the module doc).
    fn SCICreateSegment(sd: usize, segment: *mut usize, segmentId: u32, size: usize, callback: CbLocalSegment, callbackArg: *mut c_void, flags: u32, error: *mut SciErr) {
        done("SCICreateSegment", error, create(sd, segment, segmentId, size, callback, callbackArg, flags))
    }
}

impl LocalSeg {
    /// The segment's size: the registered memory's once SCI_FLAG_EMPTY memory is attached.
    pub fn seg_size(&self) -> usize {
        self.data.get().map_or(self.size, |d| d.len)
    }
    pub fn is_attacher(&self) -> bool {
        self.blk.is_foreign()
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.life.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Creators of shared segments that removed theirs while others were still attached:
/// the memory and the id stay until the last attacher leaves (checked at every lifecycle
/// call of this process).
static ORPHANS: Mutex<Vec<Arc<LocalSeg>>> = Mutex::new(Vec::new());

/// This process's segment whose memory is at `loc` (a connection of ours to our own
/// segment maps it in place, so the map must keep the segment's memory alive).
pub fn by_loc(loc: &RingLoc) -> Option<Arc<LocalSeg>> {
    let hit = |s: &Arc<LocalSeg>| s.data.get().is_some_and(|d| d.loc.as_ref() == Some(loc));
    SEGS.all().into_iter().find(hit).or_else(|| ORPHANS.lock().unwrap_or_else(|e| e.into_inner()).iter().find(|s| hit(s)).cloned())
}

pub fn sweep_orphans() {
    let mut o = ORPHANS.lock().unwrap_or_else(|e| e.into_inner());
    o.retain(|s| {
        if s.blk.word(H_ATTACH).load(Ordering::Acquire) > 0 {
            return true;
        }
        finish_remove(s);
        false
    });
}

/// The last step of a removal: no new connection, no remote access, waiters cancelled.
fn finish_remove(s: &LocalSeg) {
    s.blk.word(H_STATE).fetch_and(!SEG_AVAILABLE, Ordering::AcqRel);
    s.blk.word(H_STATE).fetch_or(SEG_REMOVED, Ordering::AcqRel);
    s.removed.store(true, Ordering::Release);
    unpublish(s);
    if let Some(m) = &s.membership {
        m.leave();
    }
    s.blk.retire();
    s.ring.push_or_overrun(&[EV_CANCEL, 0]);
    s.disarm();
    events::kick();
}

fn prepare(h: usize, adapter: u32, flags: u32) -> R<()> {
    check_flags(flags, SCI_FLAG_DMA_SOURCE_ONLY)?;
    let s = seg(h)?;
    check_adapter(adapter)?;
    let _l = s.lock();
    if s.data.get().is_none() {
        return Err(SCI_ERR_ILLEGAL_OPERATION);
    }
    s.blk.word(H_STATE).fetch_or(SEG_PREPARED, Ordering::AcqRel);
    Ok(())
}

fn set_available(h: usize, adapter: u32, flags: u32) -> R<()> {
    check_flags(flags, 0)?;
    let s = seg(h)?;
    check_adapter(adapter)?;
    let _l = s.lock();
    if s.flags & SCI_FLAG_PRIVATE != 0 {
        return Err(SCI_ERR_ILLEGAL_OPERATION);
    }
    if !s.prepared() {
        return Err(SCI_ERR_SEGMENT_NOT_PREPARED);
    }
    s.blk.word(H_STATE).fetch_or(SEG_AVAILABLE, Ordering::AcqRel);
    Ok(())
}

fn set_unavailable(h: usize, adapter: u32, flags: u32) -> R<()> {
    check_flags(flags, SCI_FLAG_NOTIFY | SCI_FLAG_FORCE_DISCONNECT)?;
    let s = seg(h)?;
    check_adapter(adapter)?;
    let _l = s.lock();
    if s.flags & SCI_FLAG_PRIVATE != 0 {
        return Err(SCI_ERR_ILLEGAL_OPERATION);
    }
    let prev = s.blk.word(H_STATE).fetch_and(!SEG_AVAILABLE, Ordering::AcqRel);
    if prev & SEG_AVAILABLE == 0 {
        return Err(SCI_ERR_ILLEGAL_OPERATION);
    }
    if flags != 0 {
        s.tell_importers(SCI_CB_DISCONNECT, flags & SCI_FLAG_FORCE_DISCONNECT != 0, false);
    }
    Ok(())
}

fn remove(h: usize, flags: u32) -> R<()> {
    check_flags(flags, SCI_FLAG_FORCE_REMOVE)?;
    sweep_orphans();
    let s = seg(h)?;
    // Quick DMA transfers from the segment (not counted in `dma`) have ended, and later
    // ones take the general path, which counts itself, until this call returns.
    let removal = crate::handles::Removal::begin(&s.removing);
    let l = s.lock();
    if s.maps.load(Ordering::Acquire) > 0 || s.dma.load(Ordering::Acquire) > 0 {
        return Err(SCI_ERR_BUSY);
    }
    if s.is_attacher() {
        // A detach: the memory belongs to everyone still attached.
        SEGS.remove(h).ok_or(SCI_ERR_ILLEGAL_PARAMETER)?;
        s.removed.store(true, Ordering::Release);
        let left = s.blk.word(H_ATTACH).fetch_sub(1, Ordering::AcqRel) - 1;
        if left == 0 && s.state() & SEG_CREATOR_GONE != 0 {
            s.blk.word(H_STATE).fetch_and(!SEG_AVAILABLE, Ordering::AcqRel);
            s.blk.word(H_STATE).fetch_or(SEG_REMOVED, Ordering::AcqRel);
        }
        s.ring.push_or_overrun(&[EV_CANCEL, 0]);
        s.disarm();
        s.desc.release(Kind::LocalSegment);
        return Ok(());
    }
    if s.blk.word(H_ATTACH).load(Ordering::Acquire) > 0 {
        // Others are attached: this is the creator's detach; the segment lives on, its
        // importers with it.
        SEGS.remove(h).ok_or(SCI_ERR_ILLEGAL_PARAMETER)?;
        s.desc.release(Kind::LocalSegment);
        s.blk.word(H_STATE).fetch_or(SEG_CREATOR_GONE, Ordering::AcqRel);
        s.disarm();
        drop(l);
        drop(removal);
        ORPHANS.lock().unwrap_or_else(|e| e.into_inner()).push(s);
        return Ok(());
    }
    s.sweep_dead();
    if flags & SCI_FLAG_FORCE_REMOVE == 0 {
        // Importers' maps and transfers in flight hold the segment; a connection with
        // neither does not (see crate::service, "Uses"): it is told, and dropped below.
        s.blk.word(H_STATE).fetch_or(SEG_CLOSING, Ordering::SeqCst);
        if s.importers_busy() {
            s.blk.word(H_STATE).fetch_and(!SEG_CLOSING, Ordering::SeqCst);
            return Err(SCI_ERR_BUSY);
        }
    }
    if s.connections() > 0 {
        s.tell_importers(SCI_CB_DISCONNECT, true, true);
    }
    SEGS.remove(h).ok_or(SCI_ERR_ILLEGAL_PARAMETER)?;
    s.desc.release(Kind::LocalSegment);
    finish_remove(&s);
    Ok(())
}

fn wait_event(h: usize, node_out: *mut u32, adapter_out: *mut u32, timeout: u32, flags: u32) -> R<u32> {
    check_flags(flags, 0)?;
    let s = seg(h)?;
    if s.armed() {
        return Err(SCI_ERR_ILLEGAL_OPERATION);
    }
    if injected_timeout(timeout) {
        return Err(SCI_ERR_TIMEOUT);
    }
    let deadline = (timeout != SCI_INFINITE_TIMEOUT).then(|| Instant::now() + Duration::from_millis(timeout as u64));
    loop {
        if let Some(ev) = s.ring.pop() {
            if ev[0] & 0xffff == EV_CANCEL {
                return Err(SCI_ERR_CANCELLED);
            }
            if !node_out.is_null() {
                out(node_out, (ev[0] >> 32) as u32)?;
            }
            if !adapter_out.is_null() {
                out(adapter_out, ev[1] as u32)?;
            }
            return Ok((ev[0] & 0xffff) as u32);
        }
        if s.removed.load(Ordering::Acquire) {
            return Err(SCI_ERR_CANCELLED);
        }
        s.sweep_dead();
        if !s.ring.is_empty() {
            continue;
        }
        sleep_on(&s.ring, deadline)?;
    }
}

/// Attaches program memory to a SCI_FLAG_EMPTY segment (SCIRegisterSegmentMemory and
/// SCIAttachPhysicalMemory with a CPU address).
fn attach_memory(addr: *mut c_void, size: usize, h: usize, readonly: bool) -> R<()> {
    let s = seg(h)?;
    if addr.is_null() || addr as usize % 4 != 0 {
        return Err(SCI_ERR_ILLEGAL_ADDRESS);
    }
    if size == 0 {
        return Err(SCI_ERR_SIZE_ALIGNMENT);
    }
    if size > s.size {
        return Err(SCI_ERR_OUT_OF_RANGE);
    }
    let _l = s.lock();
    if s.flags & SCI_FLAG_EMPTY == 0 || s.data.get().is_some() {
        return Err(SCI_ERR_ILLEGAL_OPERATION);
    }
    match mem::mapped_writable(addr as usize, size) {
        None => return Err(SCI_ERR_ILLEGAL_ADDRESS),
        Some(false) if !readonly => return Err(SCI_ERR_ILLEGAL_ADDRESS),
        _ => {}
    }
    let private = s.flags & SCI_FLAG_PRIVATE != 0;
    let (key, registered) = if private {
        (MemKey::NONE, false)
    } else {
        let access = if readonly { Access::ReadOnly } else { Access::ReadWrite };
        (mem::register(addr as usize, size, access, pd()).map_err(|e| match e {
            softnic_fabric::Error::Unsupported => SCI_ERR_NOT_SUPPORTED,
            softnic_fabric::Error::InvalidArg => SCI_ERR_ILLEGAL_ADDRESS,
            _ => SCI_ERR_NOSPC,
        })?, true)
    };
    let loc = if registered { crate::usermem::loc_of(key) } else { None };
    let d = Data::program(addr as *mut u8, size, key, loc, registered);
    if s.data.set(d).is_err() {
        return Err(SCI_ERR_ILLEGAL_OPERATION);
    }
    s.blk.word(H_SIZE).store(size as u64, Ordering::Relaxed);
    write_data_header(&s);
    Ok(())
}

fn share(h: usize, flags: u32) -> R<()> {
    check_flags(flags, 0)?;
    let s = seg(h)?;
    if s.flags & SCI_FLAG_PRIVATE != 0 {
        return Err(SCI_ERR_ILLEGAL_OPERATION);
    }
    s.blk.word(H_STATE).fetch_or(SEG_SHARED, Ordering::AcqRel);
    Ok(())
}

fn attach(sd: usize, segment: *mut usize, id: u32, size_out: *mut usize, cb: CbLocalSegment, arg: *mut c_void, flags: u32) -> R<()> {
    let d = desc::desc(sd)?;
    check_flags(flags, SCI_FLAG_USE_CALLBACK | SCI_FLAG_BROADCAST)?;
    if segment.is_null() || (flags & SCI_FLAG_USE_CALLBACK != 0 && cb.is_none()) {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    sweep_orphans();
    let node = node::my_node();
    let (peer, p) = node::lookup(node, &node::seg_key(node, id)).map_err(|_| SCI_ERR_NO_SUCH_SEGMENT)?;
    let p = parse_payload(&p);
    if (flags & SCI_FLAG_BROADCAST != 0) != (p.flags & SCI_FLAG_BROADCAST != 0) {
        return Err(SCI_ERR_NO_SUCH_SEGMENT);
    }
    let view = softnic_fabric::rma::map_region(&peer, &p.loc).map_err(|_| SCI_ERR_NO_SUCH_SEGMENT)?;
    let blk = Block::foreign(view, p.key, p.loc)?;
    if blk.word(0).load(Ordering::Acquire) != pool::MAGIC {
        return Err(SCI_ERR_NO_SUCH_SEGMENT);
    }
    let st = blk.word(H_STATE).load(Ordering::Acquire);
    if st & SEG_REMOVED != 0 {
        return Err(SCI_ERR_NO_SUCH_SEGMENT);
    }
    if st & SEG_SHARED == 0 {
        return Err(SCI_ERR_ACCESS);
    }
    d.acquire(Kind::LocalSegment)?;
    blk.word(H_ATTACH).fetch_add(1, Ordering::AcqRel);
    let r = (|| {
        if blk.word(H_STATE).load(Ordering::Acquire) & SEG_REMOVED != 0 {
            return Err(SCI_ERR_NO_SUCH_SEGMENT);
        }
        let size = blk.word(H_SIZE).load(Ordering::Relaxed) as usize;
        let data_loc = blk.get_loc(H_DATA_LOC);
        let dview = softnic_fabric::rma::map_region(&peer, &data_loc).map_err(|_| SCI_ERR_NO_SUCH_SEGMENT)?;
        let data = Data::mapped(dview, size, MemKey::from_u64(blk.word(H_DATA_KEY).load(Ordering::Relaxed)), blk.word(H_DATA_ADDR).load(Ordering::Relaxed), data_loc);
        let ring = blk.attach_ring::<Event>(64)?;
        let owner_flags = blk.word(H_FLAGS).load(Ordering::Relaxed) as u32;
        let cell = OnceLock::new();
        let _ = cell.set(data);
        let group = if owner_flags & SCI_FLAG_BROADCAST != 0 { crate::broadcast::local(id) } else { None };
        let s = LocalSeg::new(&d, node, id, size, owner_flags, blk, ring, cell, group, (flags & SCI_FLAG_USE_CALLBACK != 0).then_some((cb, arg as usize)));
        let obj = install(s)?;
        if !size_out.is_null() {
            out(size_out, size)?;
        }
        out(segment, obj.handle)
    })();
    if r.is_err() {
        d.release(Kind::LocalSegment);
    }
    r
}

sisci_export! {
    /// Blocks until an event of the local segment arrives (not with a callback armed).
    blocking fn SCIWaitForLocalSegmentEvent(segment: usize, sourcenodeId: *mut u32, localAdapterNo: *mut u32, timeout: u32, flags: u32, error: *mut SciErr) -> u32 {
        finish("SCIWaitForLocalSegmentEvent", error, wait_event(segment, sourcenodeId, localAdapterNo, timeout, flags), 0)
    }
}

sisci_export! {
    fn SCIPrepareSegment(segment: usize, localAdapterNo: u32, flags: u32, error: *mut SciErr) {
        done("SCIPrepareSegment", error, prepare(segment, localAdapterNo, flags))
    }
}

sisci_export! {
    fn SCIRemoveSegment(segment: usize, flags: u32, error: *mut SciErr) {
        done("SCIRemoveSegment", error, remove(segment, flags))
    }
}

sisci_export! {
    /// Size in bytes; 0 for an invalid handle.
    fn SCIGetLocalSegmentSize(segment: usize) -> usize {
        SEGS.get(segment).map_or(0, |s| s.seg_size())
    }
}

sisci_export! {
    /// Segment id (the one SCI_FLAG_AUTO_ID chose); 0 for an invalid handle.
    fn SCIGetLocalSegmentId(segment: usize) -> u32 {
        SEGS.get(segment).map_or(0, |s| s.id.load(Ordering::Relaxed))
    }
}

sisci_export! {
    fn SCISetSegmentAvailable(segment: usize, localAdapterNo: u32, flags: u32, error: *mut SciErr) {
        done("SCISetSegmentAvailable", error, set_available(segment, localAdapterNo, flags))
    }
}

sisci_export! {
    fn SCISetSegmentUnavailable(segment: usize, localAdapterNo: u32, flags: u32, error: *mut SciErr) {
        done("SCISetSegmentUnavailable", error, set_unavailable(segment, localAdapterNo, flags))
    }
}

sisci_export! {
    fn SCIRegisterSegmentMemory(address: *mut c_void, size: usize, segment: usize, flags: u32, error: *mut SciErr) {
        let r = check_flags(flags, SCI_FLAG_LOCK_USER_MEM | SCI_FLAG_CONTIG_USER_MEM | SCI_FLAG_READONLY_USER_MEM)
            .and_then(|_| attach_memory(address, size, segment, flags & SCI_FLAG_READONLY_USER_MEM != 0));
        done("SCIRegisterSegmentMemory", error, r)
    }
}

sisci_export! {
    /// With a CPU address: as SCIRegisterSegmentMemory.  Without one (device memory only
    /// a bus master reaches), and for CUDA/SCIF buffers: not available without hardware.
    fn SCIAttachPhysicalMemory(ioaddress: u64, address: *mut c_void, busNo: u32, size: usize, segment: usize, flags: u32, error: *mut SciErr) {
        let r = (|| {
            let _ = ioaddress;
            check_flags(flags, SCI_FLAG_CUDA_BUFFER | SCI_FLAG_SCIF_BUFFER | SCI_FLAG_PHYSICAL)?;
            seg(segment)?;
            if flags & (SCI_FLAG_CUDA_BUFFER | SCI_FLAG_SCIF_BUFFER) != 0 {
                return Err(SCI_ERR_FLAG_NOT_IMPLEMENTED);
            }
            if busNo != 0 {
                return Err(SCI_ERR_ILLEGAL_PARAMETER);
            }
            if address.is_null() {
                return Err(SCI_ERR_NOT_SUPPORTED);
            }
            attach_memory(address, size, segment, false)
        })();
        done("SCIAttachPhysicalMemory", error, r)
    }
}

sisci_export! {
    fn SCIShareSegment(segment: usize, flags: u32, error: *mut SciErr) {
        done("SCIShareSegment", error, share(segment, flags))
    }
}

sisci_export! {
    fn SCIAttachLocalSegment(sd: usize, segment: *mut usize, segmentId: u32, size: *mut usize, callback: CbLocalSegment, callbackArg: *mut c_void, flags: u32, error: *mut SciErr) {
        done("SCIAttachLocalSegment", error, attach(sd, segment, segmentId, size, callback, callbackArg, flags))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The owner's sweep frees what dead processes left: a live connection of a dead
    /// importer (counted, reported), a record a claimer died filling (counted or not);
    /// it keeps what live processes hold.
    #[test]
    fn sweep_frees_what_the_dead_left() {
        let blk = pool::alloc().unwrap();
        let me = softnic_fabric::node::get().unwrap().proc_id();
        let fnode = node::my_fabric_node();
        let dead = ProcId { slot: 500, gen: 0xdead_beef };
        let set = |i: usize, st: u64, imp: ProcId| {
            blk.rec(i, 8).store(7 | (fnode as u64) << 32, Ordering::Relaxed);
            blk.rec(i, 16).store(imp.slot as u64 | (imp.gen as u64) << 32, Ordering::Relaxed);
            blk.rec(i, 0).store(st, Ordering::Release);
        };
        set(0, pool::rec_claimer(dead.slot, dead.gen) | REC_CLAIMED, me);
        set(1, pool::rec_claimer(me.slot, me.gen) | REC_COUNTED, me);
        set(2, 5 << 8 | REC_LIVE, me);
        set(3, 6 << 8 | REC_LIVE, dead);
        set(4, pool::rec_claimer(dead.slot, dead.gen) | REC_COUNTED, me);
        let g = sweep_records(&blk);
        assert_eq!(g.len(), 3);
        assert!(!g[0].counted && g[0].live.is_none());
        assert!(g[1].counted && g[1].live == Some((7, 0)));
        assert!(g[2].counted && g[2].live.is_none());
        for (i, free) in [(0, true), (1, false), (2, false), (3, true), (4, true)] {
            assert_eq!(blk.rec(i, 0).load(Ordering::Relaxed) == REC_FREE, free, "record {i}");
        }
    }
}
