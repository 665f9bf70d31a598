//! Remote segments: connections to segments of other nodes (or of this one).
//!
//! SCIConnectSegment finds the segment in the node registry of its node and asks the
//! owner's side (crate::service, SEG_CONNECT) to take a connection: one attempt, no
//! waiting (the timeout argument is ignored as on Dolphin's systems): a segment that
//! does not exist yet or is not available is SCI_ERR_NO_SUCH_SEGMENT at once, and
//! programs retry until the exporter is ready.  The connection names this process and
//! the event ring of the remote segment (a control block of ours), where the owner posts
//! SCI_CB_DISCONNECT when it withdraws the segment with SCI_FLAG_NOTIFY or
//! SCI_FLAG_FORCE_DISCONNECT (or removes it, which it may while the connection has
//! nothing mapped and no transfer in flight: see crate::service, "Uses").  An owner whose
//! process ends is reported once as SCI_CB_LOST.
//!
//! A connection with SCI_FLAG_BROADCAST reaches the group's content (crate::broadcast),
//! not the member it was made through: its maps are shadows of the mirror, its transfers
//! write to the group.

use crate::desc::{self, Desc, Kind};
use crate::events::{self, Armed, SWEEP_EVERY};
use crate::node;
use crate::pool::{self, Block};
use crate::segment::{parse_payload, sleep_on};
use crate::service::{self, *};
use crate::sisci_export;
use crate::status::*;
use crate::handles::Table;
use crate::types::*;
use softnic_fabric::mem::{MemKey, RingLoc};
use softnic_fabric::ring::Ring;
use softnic_fabric::rma::{Peer, Pinned, RegionView};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

pub struct RemoteSeg {
    pub handle: usize,
    pub desc: Arc<Desc>,
    pub owner: Arc<Peer>,
    /// The process whose memory the segment is: the owner, except for a broadcast
    /// segment, whose memory is its group's (see crate::broadcast).
    pub data_owner: Arc<Peer>,
    pub node: u32,
    pub id: u32,
    pub size: usize,
    pub flags: u32,
    pub blk_key: MemKey,
    pub blk_addr: u64,
    pub rec: u32,
    pub rec_gen: u64,
    pub data_key: MemKey,
    pub data_addr: u64,
    pub data_loc: Option<RingLoc>,
    /// A broadcast segment whose memory is this machine's copy of its group.
    pub group: Option<Arc<crate::broadcast::Group>>,
    pub ev: Block,
    /// The owner's block mapped here, when the owner runs on this machine: uses are
    /// counted in it directly (see [`RemoteSeg::begin_use`]).
    blk_view: Option<RegionView>,
    pub ring: Ring<Event>,
    cookie: u64,
    pub maps: AtomicU32,
    /// Transfers of the general path in flight to this segment (SCI_ERR_BUSY at disconnect).
    pub dma: AtomicU32,
    /// Disconnects in progress ([`crate::handles::Removal`]): the quick DMA path, which does
    /// not count itself in `dma`, leaves the segment to the general path meanwhile.
    pub removing: AtomicU32,
    /// The owner told us to disconnect (or forced it).
    pub withdrawn: AtomicBool,
    lost: AtomicBool,
    last_probe: Mutex<Option<std::time::Instant>>,
    pub removed: AtomicBool,
    cb: Mutex<Option<(CbRemoteSegment, usize)>>,
    /// The segment's memory pinned for DMA writes, made at the first one (None when the
    /// fabric cannot pin it: the per-transfer path serves it).
    data_pin: OnceLock<Option<Pinned>>,
    /// The owner's block pinned, made at the first quick transfer a map covers (None when
    /// the fabric cannot pin it: [`Live::check`](softnic_fabric::rma::Live::check) then).
    blk_pin: OnceLock<Option<Pinned>>,
}

pub static RSEGS: Table<RemoteSeg> = Table::new(3);

pub fn rseg(h: usize) -> R<Arc<RemoteSeg>> {
    RSEGS.get(h).ok_or(SCI_ERR_ILLEGAL_PARAMETER)
}

impl RemoteSeg {
    /// Is the connection still good (owner alive, connection not withdrawn)?  A broadcast
    /// connection of a machine with a mirror needs only the mirror, mapped here: not the
    /// member it was made through.
    pub fn healthy(&self) -> bool {
        !self.withdrawn.load(Ordering::Relaxed) && (self.reaches_local_group() || (self.owner.seems_alive() && self.data_owner.seems_alive()))
    }

    fn reaches_local_group(&self) -> bool {
        self.flags & SCI_FLAG_BROADCAST != 0 && self.group.is_some()
    }

    /// The next event for the program: queued owner events first, then a lost owner
    /// (once).  Events carrying another handle (left by an earlier user of this block)
    /// are skipped.
    fn next_event(&self) -> Option<(u32, SciErr)> {
        while let Some(ev) = self.ring.pop() {
            if ev[0] & 0xffff == EV_CANCEL {
                return Some((EV_CANCEL as u32, SCI_ERR_CANCELLED));
            }
            if ev[1] != self.cookie {
                continue;
            }
            let reason = (ev[0] & 0xffff) as u32;
            if reason == SCI_CB_DISCONNECT {
                self.withdrawn.store(true, Ordering::Relaxed);
            }
            return Some((reason, (ev[0] >> 32) as u32));
        }
        if !self.lost.load(Ordering::Acquire) && !self.reaches_local_group() && !self.owner_alive() && !self.lost.swap(true, Ordering::AcqRel) {
            self.withdrawn.store(true, Ordering::Relaxed);
            return Some((SCI_CB_LOST, SCI_ERR_NOT_CONNECTED));
        }
        None
    }
}

/// How long a use waits for an owner deciding whether to remove its segment.
const CLOSING_WAIT: Duration = Duration::from_secs(2);

impl RemoteSeg {
    /// A map or a DMA transfer begins: counted at the owner, so that the segment is not
    /// removed under it (crate::service, "Uses").  SCI_ERR_NOT_CONNECTED when the
    /// segment (or the connection) is gone.
    pub fn begin_use(&self) -> R<()> {
        if self.flags & SCI_FLAG_BROADCAST != 0 {
            // The group's, not the member's (crate::broadcast): nothing to hold.
            return Ok(());
        }
        let mut start = None;
        let mut nap = Duration::from_micros(20);
        loop {
            match self.use_step(true) {
                Ok(()) => return Ok(()),
                // The owner is deciding whether to remove the segment: ask again.
                Err(SCI_ERR_EWOULD_BLOCK) if start.get_or_insert_with(Instant::now).elapsed() < CLOSING_WAIT => {}
                Err(SCI_ERR_EWOULD_BLOCK) => return Err(SCI_ERR_NOT_CONNECTED),
                Err(e) => return Err(e),
            }
            softnic_fabric::cancel::nap(nap);
            nap = (nap * 2).min(Duration::from_millis(1));
        }
    }

    /// Can a DMA transfer to this segment take the quick path (crate::dma, `start_now`):
    /// the segment's memory and its owner's block are on this machine, and it is no
    /// broadcast connection?
    pub fn dma_local(&self) -> bool {
        self.flags & SCI_FLAG_BROADCAST == 0 && self.group.is_none() && self.blk_view.is_some() && !self.data_owner.is_remote()
    }

    /// [`RemoteSeg::begin_use`] in one attempt (no waiting for a closing owner, nothing
    /// logged): the caller retries the whole call the slow way on an error.
    pub fn try_begin_use(&self) -> R<()> {
        if self.flags & SCI_FLAG_BROADCAST != 0 {
            return Ok(());
        }
        self.use_step(true)
    }

    /// Writes `src` at offset `off` of the segment's memory (inside it: the caller checked)
    /// through the pin of [`RemoteSeg::data_pin`]: one copy, no lookup of the owner's
    /// registration beyond the pin's re-check.  Falls back to the fabric's per-operation
    /// put when the pin does not hold (that put gives the exact error).
    pub fn put(&self, off: usize, src: &[u8]) -> softnic_fabric::Result<()> {
        let addr = self.data_addr + off as u64;
        let pin = self.data_pin.get_or_init(|| Pinned::registration(&self.data_owner, self.data_key, true, pool::pd()).ok());
        if let Some(pin) = pin {
            let live = self.data_owner.live()?;
            if let Ok(r) = pin.check(live) {
                if r.put_at(addr, src).is_ok() {
                    return Ok(());
                }
            }
        }
        softnic_fabric::rma::put(&self.data_owner, self.data_key, addr, src, pool::pd())
    }

    /// A quick DMA transfer that a map's use covers (crate::dma, `start_now`, which saw
    /// `maps` above zero under its handle guard): is the connection still one that
    /// [`RemoteSeg::try_begin_use`] would accept (the owner's block registered and alive as
    /// far as known, our record live, the segment neither removed nor closing)?  Loads
    /// only: no use is counted; [`RemoteSeg::map_end`] keeps the map's use until the
    /// transfer is over.
    #[inline]
    pub fn covered_use_ok(&self) -> bool {
        let Some(v) = &self.blk_view else { return false };
        let Ok(live) = self.owner.live_probed() else { return false };
        // The block still the segment's (as in use_step): through its pin, a few inlined
        // loads, the same verdict as a Live::check of the range for as long as the pin holds.
        let pin = self.blk_pin.get_or_init(|| Pinned::new(&self.owner, self.blk_key, self.blk_addr, pool::BLOCK, true, pool::pd()).ok());
        let registered = match pin {
            Some(p) => p.check(live).is_ok(),
            None => live.check(self.blk_key, self.blk_addr, pool::BLOCK, true, pool::pd()).is_ok(),
        };
        registered && service::use_covered(&MappedBlock(v), self.rec as usize, self.rec_gen).is_ok()
    }

    /// A map of the segment begins: its use at the owner, then the map count that quick
    /// DMA transfers read (a count above zero always stands for a use held).
    pub fn map_begin(&self) -> R<()> {
        self.begin_use()?;
        self.maps.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// A map of the segment ends, in the reverse order of [`RemoteSeg::map_begin`]: the
    /// count first, then (once every handle guard that may have seen the old count has
    /// ended: crate::handles::wait_for_guards) the use.  A quick DMA transfer that saw the
    /// count runs inside its guard, so the use outlives it; one whose guard begins later
    /// reads the lower count and, at zero, counts a use of its own.
    pub fn map_end(&self) {
        self.maps.fetch_sub(1, Ordering::SeqCst);
        crate::handles::wait_for_guards();
        self.end_use();
    }

    /// The map or transfer that [`RemoteSeg::begin_use`] counted ended.
    pub fn end_use(&self) {
        if self.flags & SCI_FLAG_BROADCAST != 0 {
            return;
        }
        if let Err(e) = self.use_step(false) {
            softnic_fabric::sn_debug!("SISCI", "segment {} of node {}: end of a use: {}", self.id, self.node, name(e));
        }
    }

    /// One use step: in the owner's block mapped here (a few atomics, for transfers in a
    /// loop), else through the service.
    fn use_step(&self, begins: bool) -> R<()> {
        let Some(v) = &self.blk_view else {
            let req = Msg::op(SEG_USE).u64(self.blk_key.to_u64()).u64(self.blk_addr).u32(self.rec).u64(self.rec_gen).u32(begins as u32);
            return match service::request(&self.owner, req) {
                Ok((SCI_ERR_OK, _)) => Ok(()),
                Ok((st, _)) => Err(st),
                Err(e) => Err(reach_err(e, SCI_ERR_NOT_CONNECTED)),
            };
        };
        // The block is still the segment's (its registration lives), as a one-sided
        // access would check.  (An owner that died is the transfer's to find: its own
        // access reads the clock for the rate-limited probe; a use counted in a dead
        // process's block harms nobody.)
        let live = self.owner.live_probed().map_err(|e| reach_err(e, SCI_ERR_NOT_CONNECTED))?;
        live.check(self.blk_key, self.blk_addr, pool::BLOCK, true, pool::pd()).map_err(|e| reach_err(e, SCI_ERR_NOT_CONNECTED))?;
        match service::use_step(&MappedBlock(v), self.rec as usize, self.rec_gen, begins) {
            Ok(()) => Ok(()),
            Err(service::Fail::Sci(e)) => Err(e),
            Err(service::Fail::Fabric(e)) => Err(reach_err(e, SCI_ERR_NOT_CONNECTED)),
        }
    }

    /// The owner's liveness, probed at most every SWEEP_EVERY across machines.
    fn owner_alive(&self) -> bool {
        if !self.owner.is_remote() {
            return self.owner.is_alive();
        }
        let now = std::time::Instant::now();
        let mut last = self.last_probe.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|t| now.duration_since(t) < SWEEP_EVERY) {
            return self.owner.is_alive();
        }
        *last = Some(now);
        drop(last);
        service::probe(&self.owner)
    }
}

impl Armed for RemoteSeg {
    fn dispatch(&self, _sweep: bool) -> bool {
        loop {
            if self.removed.load(Ordering::Acquire) {
                return false;
            }
            let Some((Some(f), arg)) = *self.cb.lock().unwrap_or_else(|e| e.into_inner()) else { return false };
            let Some((reason, status)) = self.next_event() else { return true };
            if reason == EV_CANCEL as u32 {
                return false;
            }
            // SAFETY: the program's callback and argument, called as documented.
            let act = unsafe { f(arg as *mut c_void, self.handle, reason, status) };
            if act == SCI_CALLBACK_CANCEL {
                *self.cb.lock().unwrap_or_else(|e| e.into_inner()) = None;
                return false;
            }
        }
    }
    fn watch(&self) -> bool {
        !self.lost.load(Ordering::Relaxed)
    }
}

/// An owner's control block mapped here.
struct MappedBlock<'a>(&'a RegionView);

impl MappedBlock<'_> {
    fn word(&self, off: usize) -> &AtomicU64 {
        assert!(off % 8 == 0 && off + 8 <= pool::BLOCK.min(self.0.len()));
        // SAFETY: in bounds and aligned (checked; the view is page aligned); every party
        // accesses the block's words atomically.
        unsafe { &*(self.0.as_ptr().add(off) as *const AtomicU64) }
    }
}

impl service::BlockWords for MappedBlock<'_> {
    fn add(&self, off: usize, v: i64) -> softnic_fabric::Result<u64> {
        Ok(self.word(off).fetch_add(v as u64, Ordering::SeqCst))
    }
    fn load(&self, off: usize) -> softnic_fabric::Result<u64> {
        Ok(self.word(off).load(Ordering::SeqCst))
    }
}

#[allow(clippy::too_many_arguments)]
fn connect(sd: usize, segment: *mut usize, node_id: u32, id: u32, adapter: u32, cb: CbRemoteSegment, arg: *mut c_void, flags: u32) -> R<()> {
    let d = desc::desc(sd)?;
    check_flags(flags, SCI_FLAG_USE_CALLBACK | SCI_FLAG_ASYNCHRONOUS_CONNECT | SCI_FLAG_BROADCAST)?;
    if segment.is_null() || (flags & SCI_FLAG_USE_CALLBACK != 0 && cb.is_none()) {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    check_adapter(adapter)?;
    if flags & SCI_FLAG_ASYNCHRONOUS_CONNECT != 0 {
        return Err(SCI_ERR_FLAG_NOT_IMPLEMENTED);
    }
    let broadcast = flags & SCI_FLAG_BROADCAST != 0;
    let (node_id, at) = if broadcast {
        if node_id != DIS_BROADCAST_NODEID_GROUP_ALL {
            return Err(SCI_ERR_ILLEGAL_NODEID);
        }
        // The connection is made to a member: this node's, else another node's of this
        // machine, else (a machine without one) the node whose segment made the hub's
        // mirror.  This node's segment with the id may be an ordinary one: not a member.
        let me = node::my_node();
        let here = node::my_fabric_node();
        let member_here = node::lookup(me, &node::seg_key(me, id)).is_ok_and(|(_, p)| parse_payload(&p).flags & SCI_FLAG_BROADCAST != 0);
        if member_here {
            (me, here)
        } else if let Some(n) = crate::broadcast::member_here(id, me) {
            (n, node::launcher_node_of(n))
        } else {
            crate::broadcast::find(id).ok_or(SCI_ERR_NO_SUCH_SEGMENT)?
        }
    } else {
        let n = node::node_arg(node_id)?;
        (n, node::launcher_node_of(n))
    };
    if !broadcast && !node::node_exists(node_id) {
        return Err(SCI_ERR_NO_SUCH_NODEID);
    }
    d.acquire(Kind::RemoteSegment)?;
    let r = connect_in(&d, segment, node_id, at, id, adapter, cb, arg, flags);
    if r.is_err() {
        d.release(Kind::RemoteSegment);
    }
    r
}

#[allow(clippy::too_many_arguments)]
fn connect_in(d: &Arc<Desc>, segment: *mut usize, node_id: u32, at: u32, id: u32, adapter: u32, cb: CbRemoteSegment, arg: *mut c_void, flags: u32) -> R<()> {
    crate::segment::sweep_orphans();
    let (owner, p) = node::lookup_at(at, &node::seg_key(node_id, id)).map_err(|e| {
        softnic_fabric::sn_debug!("SISCI", "SCIConnectSegment: segment {} of node {}: {}", id, node_id, e);
        reach_err(e, SCI_ERR_NO_SUCH_SEGMENT)
    })?;
    let p = parse_payload(&p);
    if (flags & SCI_FLAG_BROADCAST != 0) && p.flags & SCI_FLAG_BROADCAST == 0 {
        return Err(SCI_ERR_NO_SUCH_SEGMENT);
    }
    let ev = pool::alloc()?;
    let (ring, ring_loc) = ev.init_ring::<Event>(16)?;
    let (fnode, me) = node::me().map_err(|_| SCI_ERR_SYSTEM)?;
    let mut obj = RemoteSeg {
        handle: 0,
        desc: d.clone(),
        owner: owner.clone(),
        data_owner: owner.clone(),
        node: node_id,
        id,
        size: 0,
        flags,
        blk_key: p.key,
        blk_addr: p.addr,
        rec: 0,
        rec_gen: 0,
        data_key: MemKey::NONE,
        data_addr: 0,
        data_loc: None,
        group: None,
        ev,
        // The owner's block, to count uses in it directly (not for another machine's).
        blk_view: softnic_fabric::rma::map_region(&owner, &p.loc).ok().filter(|v| v.len() >= pool::BLOCK),
        ring,
        cookie: next_cookie(),
        maps: AtomicU32::new(0),
        dma: AtomicU32::new(0),
        removing: AtomicU32::new(0),
        withdrawn: AtomicBool::new(false),
        lost: AtomicBool::new(false),
        last_probe: Mutex::new(None),
        removed: AtomicBool::new(false),
        cb: Mutex::new(None),
        data_pin: OnceLock::new(),
        blk_pin: OnceLock::new(),
    };
    if flags & SCI_FLAG_USE_CALLBACK != 0 {
        *obj.cb.get_mut().unwrap_or_else(|e| e.into_inner()) = Some((cb, arg as usize));
    }
    let req = Msg::op(SEG_CONNECT)
        .u64(p.key.to_u64())
        .u64(p.addr)
        .u32(node::my_node())
        .u32(fnode)
        .u32(me.slot)
        .u32(me.gen)
        .loc(&ring_loc)
        .u64(obj.cookie)
        .u32(adapter | if flags & SCI_FLAG_BROADCAST != 0 { CONNECT_BROADCAST } else { 0 });
    let (st, reply) = service::request(&owner, req).map_err(|e| {
        softnic_fabric::sn_debug!("SISCI", "SCIConnectSegment: node {} segment {}: {}", node_id, id, e);
        reach_err(e, SCI_ERR_NO_SUCH_SEGMENT)
    })?;
    if st != SCI_ERR_OK {
        return Err(st);
    }
    let mut r = Rd::new(&reply);
    let parsed = (|| -> softnic_fabric::Result<()> {
        obj.rec = r.u32()?;
        obj.rec_gen = r.u64()?;
        obj.size = r.u64()? as usize;
        obj.data_key = MemKey::from_u64(r.u64()?);
        obj.data_addr = r.u64()?;
        let l = r.loc()?;
        obj.data_loc = (l.len > 0).then_some(l);
        // A broadcast connection reaches the group; a plain connection to a broadcast
        // segment (SCI_FLAG_ALLOW_UNICAST's use) reaches that node's copy only.
        obj.flags = (r.u32()? & flags & SCI_FLAG_BROADCAST) | (flags & SCI_FLAG_USE_CALLBACK);
        Ok(())
    })();
    if parsed.is_ok() && obj.flags & SCI_FLAG_BROADCAST != 0 {
        match crate::broadcast::content(id, at) {
            Some((p, key, addr, g)) => {
                // Its maps are shadows of the group's content (crate::shadow).
                obj.data_owner = p;
                obj.data_key = key;
                obj.data_addr = addr;
                obj.data_loc = None;
                obj.group = g;
            }
            None => {
                disconnect_now(&obj);
                return Err(SCI_ERR_NO_SUCH_SEGMENT);
            }
        }
    }
    if parsed.is_err() {
        disconnect_now(&obj);
        return Err(SCI_ERR_SYSTEM);
    }
    let Some((_, obj)) = RSEGS.insert_with(move |h| {
        obj.handle = h;
        Arc::new(obj)
    }) else {
        return Err(SCI_ERR_NOSPC);
    };
    if flags & SCI_FLAG_USE_CALLBACK != 0 {
        if let Err(e) = events::arm(obj.clone()) {
            disconnect_now(&obj);
            RSEGS.remove(obj.handle);
            return Err(e);
        }
    }
    out(segment, obj.handle)
}

/// A value no other remote segment of this process has had: the owner echoes it in the
/// events it posts, so an event meant for an earlier user of the event block is ignored.
fn next_cookie() -> u64 {
    static C: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    C.fetch_add(1, Ordering::Relaxed)
}

fn disconnect_now(s: &RemoteSeg) {
    let req = Msg::op(SEG_DISCONNECT).u64(s.blk_key.to_u64()).u64(s.blk_addr).u32(s.rec).u64(s.rec_gen).u32(node::my_node()).u32(0);
    if let Err(e) = service::request(&s.owner, req) {
        softnic_fabric::sn_debug!("SISCI", "disconnect from node {} segment {}: {}", s.node, s.id, e);
    }
}

fn disconnect(h: usize, flags: u32) -> R<()> {
    check_flags(flags, 0)?;
    let s = rseg(h)?;
    // Quick DMA transfers to the segment (not counted in `dma`) have ended, and later ones
    // take the general path, which counts itself, until this call returns.
    let _removal = crate::handles::Removal::begin(&s.removing);
    let mut busy = false;
    let gone = RSEGS.remove_if(h, |s| {
        busy = s.maps.load(Ordering::Acquire) > 0 || s.dma.load(Ordering::Acquire) > 0;
        !busy
    });
    if busy {
        return Err(SCI_ERR_BUSY);
    }
    gone.ok_or(SCI_ERR_ILLEGAL_PARAMETER)?;
    s.removed.store(true, Ordering::Release);
    s.ring.push_or_overrun(&[EV_CANCEL, 0]);
    events::kick();
    if !s.lost.load(Ordering::Relaxed) {
        disconnect_now(&s);
    }
    s.desc.release(Kind::RemoteSegment);
    Ok(())
}

fn wait_event(h: usize, status: *mut SciErr, timeout: u32, flags: u32) -> R<u32> {
    check_flags(flags, 0)?;
    let s = rseg(h)?;
    if s.cb.lock().unwrap_or_else(|e| e.into_inner()).is_some() {
        return Err(SCI_ERR_ILLEGAL_OPERATION);
    }
    if injected_timeout(timeout) {
        return Err(SCI_ERR_TIMEOUT);
    }
    let deadline = (timeout != SCI_INFINITE_TIMEOUT).then(|| Instant::now() + Duration::from_millis(timeout as u64));
    loop {
        if let Some((reason, st)) = s.next_event() {
            if reason == EV_CANCEL as u32 {
                return Err(SCI_ERR_CANCELLED);
            }
            if !status.is_null() {
                out(status, st)?;
            }
            return Ok(reason);
        }
        if s.removed.load(Ordering::Acquire) {
            return Err(SCI_ERR_CANCELLED);
        }
        sleep_on(&s.ring, deadline)?;
    }
}

sisci_export! {
    /// Connects to segment `segmentId` of node `nodeId` (see the module doc).
    fn SCIConnectSegment(sd: usize, segment: *mut usize, nodeId: u32, segmentId: u32, localAdapterNo: u32, callback: CbRemoteSegment, callbackArg: *mut c_void, timeout: u32, flags: u32, error: *mut SciErr) {
        let _ = timeout;
        done("SCIConnectSegment", error, connect(sd, segment, nodeId, segmentId, localAdapterNo, callback, callbackArg, flags))
    }
}

sisci_export! {
    /// Ends a connection; SCI_ERR_BUSY while it is mapped or a DMA transfer uses it.
    fn SCIDisconnectSegment(segment: usize, flags: u32, error: *mut SciErr) {
        done("SCIDisconnectSegment", error, disconnect(segment, flags))
    }
}

sisci_export! {
    /// Size in bytes; 0 for an invalid handle.
    fn SCIGetRemoteSegmentSize(segment: usize) -> usize {
        RSEGS.get(segment).map_or(0, |s| s.size)
    }
}

sisci_export! {
    /// Segment id; 0 for an invalid handle.
    fn SCIGetRemoteSegmentId(segment: usize) -> u32 {
        RSEGS.get(segment).map_or(0, |s| s.id)
    }
}

sisci_export! {
    /// Node id of the owner; 0 for an invalid handle.
    fn SCIGetRemoteSegmentNodeId(segment: usize) -> u32 {
        RSEGS.get(segment).map_or(0, |s| s.node)
    }
}

sisci_export! {
    blocking fn SCIWaitForRemoteSegmentEvent(segment: usize, status: *mut SciErr, timeout: u32, flags: u32, error: *mut SciErr) -> u32 {
        finish("SCIWaitForRemoteSegmentEvent", error, wait_event(segment, status, timeout, flags), 0)
    }
}
