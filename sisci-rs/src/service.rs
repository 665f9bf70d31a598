//! The SISCI service: everything that happens at the target of a remote operation, as
//! one handler (`serve`) over the target's control blocks (see crate::pool).  On one
//! machine the initiator runs it itself on the owner's shared memory; across machines
//! the owner's network progress thread runs it on its own memory.  Either way it only
//! uses the fabric's one-sided operations on `target`, never waits, and answers with a
//! SISCI status plus the data the initiator needs.
//!
//! Requests (little-endian; the first byte is the operation):
//! ```text
//! SEG_CONNECT     block key, block address, importer (node, fabric node, slot, gen),
//!                 importer event ring (3 words), importer handle, adapter (bit 31: a
//!                 broadcast connection)
//!   -> status, record, record generation, size, data key, data address,
//!      data location (3 words), segment flags
//! SEG_DISCONNECT  block key, block address, record, record generation, node, adapter
//! INT_CONNECT     block key, block address, importer (node, fabric node, slot, gen), counting
//!   -> status, record, record generation, interrupt flags
//! INT_DISCONNECT  block key, block address, record, record generation
//! INT_TRIGGER     block key, block address
//! DATA_TRIGGER    block key, block address, length, payload
//! PING            (block key, block address: ignored)
//! BC_JOIN         copy key, copy header address, copy token, member (6 words)
//! SEG_USE         block key, block address, record, record generation, 1 (a map or a
//!                 transfer begins) or 0 (it ended)
//! ```
//! BC_JOIN adds another machine's copy of a reflective-memory group to the member table
//! of a copy (crate::broadcast; the block is then the copy's header).
//! Segment state word: bit 0 available, 1 prepared, 2 removed, 3 callback armed, 4 shared,
//! 5 creator gone, 6 closing, 32..47 connections.  Interrupt state word: 0..39 pending
//! triggers, 60 counting, 61 removed, 62 callback armed.
//!
//! **Uses.**  An importer's maps and DMA transfers in flight hold the segment (its owner's
//! SCIRemoveSegment is SCI_ERR_BUSY meanwhile); a connection with neither does not.  Each
//! is counted in the connection record's word [`REC_USES`] (SEG_USE), next to the
//! adapter and a tag of the record's generation, so a count never lands in a record that
//! was reused for another connection.  (A quick DMA transfer of an importer that maps the
//! segment is covered by the map's use instead of counting its own: see
//! crate::remote, `RemoteSeg::map_end`, and [`use_covered`].)  Removal sets "closing", then looks at the counts:
//! a use that begins meanwhile sees "closing" and waits until the owner decided (it
//! answers SCI_ERR_EWOULD_BLOCK, the importer asks again), so of the two one always sees
//! the other.

use crate::pool::{self, *};
use crate::types::*;
use softnic_fabric::atomic::{AmoOp, AmoWidth};
use softnic_fabric::mem::{MemKey, RingLoc};
use softnic_fabric::ring::Pod;
use softnic_fabric::rma::{Live, Peer};
use softnic_fabric::{Error as FErr, Result as FResult};
use std::sync::Arc;

pub const SEG_CONNECT: u8 = 1;
pub const SEG_DISCONNECT: u8 = 2;
pub const INT_CONNECT: u8 = 3;
pub const INT_DISCONNECT: u8 = 4;
pub const INT_TRIGGER: u8 = 5;
pub const DATA_TRIGGER: u8 = 6;
/// No operation: answers OK (a liveness probe across machines).
pub const PING: u8 = 7;
/// A reflective-memory copy learns of another machine's copy.
pub const BC_JOIN: u8 = 8;
/// An importer's map or transfer begins or ends (see "Uses" above).
pub const SEG_USE: u8 = 9;

pub const SEG_AVAILABLE: u64 = 1 << 0;
pub const SEG_PREPARED: u64 = 1 << 1;
pub const SEG_REMOVED: u64 = 1 << 2;
pub const SEG_ARMED: u64 = 1 << 3;
/// SCIShareSegment was called: processes of the node may SCIAttachLocalSegment.
pub const SEG_SHARED: u64 = 1 << 4;
/// The creator of a shared segment removed it while others were attached.
pub const SEG_CREATOR_GONE: u64 = 1 << 5;
/// SCIRemoveSegment is looking whether importers use the segment.
pub const SEG_CLOSING: u64 = 1 << 6;
pub const SEG_CONN_ONE: u64 = 1 << 32;
pub const SEG_CONN_MASK: u64 = 0xffff << 32;

/// The word of a connection record holding its adapter (bits 0..7), whether it is a
/// broadcast connection (bit 8), the low 16 bits of its generation (16..31) and the
/// importer's maps and transfers in flight (32..63).
pub const REC_USES: usize = 56;
pub const REC_USE_ONE: u64 = 1 << 32;
pub const REC_ADAPTER_MASK: u64 = 0xff;
/// A connection made with SCI_FLAG_BROADCAST: it reaches the group, not the member it
/// was made through (see crate::broadcast), so the member's removal neither waits for it
/// nor tells it.
pub const REC_BROADCAST: u64 = 1 << 8;
/// In SEG_CONNECT's adapter word: the connection is a broadcast one.
pub const CONNECT_BROADCAST: u32 = 1 << 31;

/// The tag of generation `gen` in a record's [`REC_USES`] word.
pub fn rec_tag(gen: u64) -> u64 {
    (gen & 0xffff) << 16
}

pub const INT_COUNT_MASK: u64 = (1 << 40) - 1;
pub const INT_COUNTING: u64 = 1 << 60;
pub const INT_REMOVED: u64 = 1 << 61;
pub const INT_ARMED: u64 = 1 << 62;

/// Most payload bytes of a data interrupt (SCI_Q_ADAPTER_DATAINT_MAX_LENGTH).
pub const DATAINT_MAX: usize = 4096;

/// A data-interrupt message as queued in the receiver's ring: length, then the payload.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct DataMsg {
    pub len: u64,
    pub data: [u64; DATAINT_MAX / 8],
}
// SAFETY: repr(C), integers only: every bit pattern is a valid value.
unsafe impl Pod for DataMsg {}

/// An event queued for a segment's owner or importer: [reason | node << 32, adapter |
/// status << 32 (owner) or the importer's handle (importer)].
pub type Event = [u64; 2];
/// Entry that wakes a waiter to tell it the object was removed under it.
pub const EV_CANCEL: u64 = 0xffff;

// ---- encoding ---------------------------------------------------------------------------

#[derive(Default)]
pub struct Msg(pub Vec<u8>);

impl Msg {
    pub fn op(op: u8) -> Msg {
        Msg(vec![op])
    }
    pub fn u32(mut self, v: u32) -> Msg {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn u64(mut self, v: u64) -> Msg {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn loc(self, l: &RingLoc) -> Msg {
        let w = l.to_words();
        self.u64(w[0]).u64(w[1]).u64(w[2])
    }
    pub fn bytes(mut self, b: &[u8]) -> Msg {
        self.0.extend_from_slice(b);
        self
    }
}

pub struct Rd<'a>(&'a [u8]);

impl<'a> Rd<'a> {
    pub fn new(b: &'a [u8]) -> Rd<'a> {
        Rd(b)
    }
    fn take(&mut self, n: usize) -> FResult<&'a [u8]> {
        if self.0.len() < n {
            return Err(FErr::InvalidArg);
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    pub fn u8(&mut self) -> FResult<u8> {
        Ok(self.take(1)?[0])
    }
    pub fn u32(&mut self) -> FResult<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    pub fn u64(&mut self) -> FResult<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    pub fn loc(&mut self) -> FResult<RingLoc> {
        Ok(RingLoc::from_words([self.u64()?, self.u64()?, self.u64()?]))
    }
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }
}

/// Who connects: SISCI node, fabric node, registry slot and generation.
#[derive(Clone, Copy, Debug)]
pub struct Importer {
    pub node: u32,
    pub fnode: u32,
    pub slot: u32,
    pub gen: u32,
}

// ---- the handler ----------------------------------------------------------------------

/// Registers the SISCI service with the fabric (idempotent): from then on this process
/// serves other machines' operations on its objects (and, on this machine, initiators
/// run the same handler themselves).
pub fn register() {
    let _ = softnic_fabric::rma::register_service(softnic_fabric::registry::api::SISCI, serve);
    // Joins the node fabric now (and, in a job spread over machines, starts the network
    // engine, which publishes this process's address): peers of other machines find it
    // from the program's first collective on (PMI_Barrier, MPI_Init, ...) on.
    let _ = softnic_fabric::node::get();
}

/// The service handler (registered for `registry::api::SISCI`).  A malformed request is
/// `InvalidArg`; everything else is answered with a SISCI status as the reply's first
/// word.
pub fn serve(target: &Arc<Peer>, req: &[u8], reply: &mut Vec<u8>) -> FResult<()> {
    let mut r = Rd::new(req);
    let op = r.u8()?;
    let key = MemKey::from_u64(r.u64()?);
    let blk = r.u64()?;
    reply.clear();
    let live = match target.live() {
        Ok(l) => l,
        Err(_) => {
            reply.extend_from_slice(&gone(op).to_le_bytes());
            return Ok(());
        }
    };
    let t = Target { live, key, blk };
    let out = match op {
        SEG_CONNECT => seg_connect(&t, &mut r),
        SEG_DISCONNECT => seg_disconnect(&t, &mut r),
        INT_CONNECT => int_connect(&t, &mut r),
        INT_DISCONNECT => int_disconnect(&t, &mut r),
        INT_TRIGGER => int_trigger(&t),
        DATA_TRIGGER => data_trigger(&t, &mut r),
        PING => Ok(Msg::default()),
        BC_JOIN => bc_join(&t, &mut r),
        SEG_USE => seg_use(&t, &mut r),
        _ => return Err(FErr::InvalidArg),
    };
    match out {
        Ok(m) => {
            reply.extend_from_slice(&SCI_ERR_OK.to_le_bytes());
            reply.extend_from_slice(&m.0);
        }
        Err(Fail::Sci(e)) => reply.extend_from_slice(&e.to_le_bytes()),
        Err(Fail::Fabric(FErr::InvalidArg)) => return Err(FErr::InvalidArg),
        Err(Fail::Fabric(e)) => {
            softnic_fabric::sn_debug!("SISCI", "service op {} at pid {}: {}", op, target.pid(), e);
            reply.extend_from_slice(&gone(op).to_le_bytes());
        }
    }
    Ok(())
}

/// The status when the target object (or its process) is gone.
fn gone(op: u8) -> SciErr {
    match op {
        SEG_CONNECT | BC_JOIN => SCI_ERR_NO_SUCH_SEGMENT,
        INT_CONNECT => SCI_ERR_NO_SUCH_INTNO,
        SEG_DISCONNECT | INT_DISCONNECT => SCI_ERR_OK,
        SEG_USE => SCI_ERR_NOT_CONNECTED,
        _ => SCI_ERR_NOT_CONNECTED,
    }
}

pub enum Fail {
    Sci(SciErr),
    Fabric(FErr),
}

impl From<FErr> for Fail {
    fn from(e: FErr) -> Fail {
        Fail::Fabric(e)
    }
}

type Out = std::result::Result<Msg, Fail>;

/// The target block, reached through the one-sided engine.
pub struct Target<'a> {
    live: Live<'a>,
    key: MemKey,
    blk: u64,
}

impl Target<'_> {
    fn amo(&self, off: usize, op: AmoOp) -> FResult<u64> {
        self.live.atomic(self.key, self.blk + off as u64, AmoWidth::I64, op, pd())
    }
    fn load(&self, off: usize) -> FResult<u64> {
        self.amo(off, AmoOp::Or(0))
    }
    fn add(&self, off: usize, v: i64) -> FResult<u64> {
        self.amo(off, AmoOp::Add(v as u64))
    }
    fn cas(&self, off: usize, old: u64, new: u64) -> FResult<bool> {
        Ok(self.amo(off, AmoOp::CompareSwap { compare: old, swap: new })? == old)
    }
    fn read(&self, off: usize, n: usize) -> FResult<Vec<u8>> {
        let mut v = vec![0u8; n];
        self.live.get(self.key, self.blk + off as u64, &mut v, pd())?;
        Ok(v)
    }
    fn loc(&self, off: usize) -> FResult<RingLoc> {
        let b = self.read(off, 24)?;
        let w = |i: usize| u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        Ok(RingLoc::from_words([w(0), w(1), w(2)]))
    }
    fn check_magic(&self) -> FResult<()> {
        if self.load(0)? != pool::MAGIC {
            return Err(FErr::StaleHandle);
        }
        Ok(())
    }
    /// Wakes the owner's callback thread.
    fn ring_doorbell(&self) {
        if let Ok(l) = self.loc(H_DOORBELL) {
            let _ = self.live.post_event(&l, &1u64, true);
        }
    }
    /// Queues an owner event (best effort: a full queue drops it, as a busy driver would).
    fn owner_event(&self, ev: Event) -> FResult<()> {
        let l = self.loc(H_RING_LOC)?;
        self.live.post_event(&l, &ev, true)?;
        Ok(())
    }
    /// Claims a free connection record in the name of the process running this handler
    /// (the initiator on this machine, the owner itself across machines), then takes the
    /// connection by `count` (which checks the object's state and counts it: an error
    /// gives the record back), then fills the record for `imp` and makes it live; its
    /// index and generation.  Each step leaves the record in a state that says who is
    /// working on it, so a process that dies half-way is cleaned up by the owner's sweep
    /// (crate::segment::sweep_records) instead of leaving a connection for ever.
    fn claim(&self, imp: &Importer, extra: &[u64], count: impl FnOnce() -> std::result::Result<(), Fail>) -> std::result::Result<(usize, u64), Fail> {
        let me = softnic_fabric::node::get()?.proc_id();
        let who = pool::rec_claimer(me.slot, me.gen);
        let Some(i) = (0..NREC).find_map(|i| match self.cas(REC_OFF + i * REC_LEN, REC_FREE, who | REC_CLAIMED) {
            Ok(true) => Some(Ok(i)),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }).transpose()? else {
            return Err(Fail::Sci(SCI_ERR_CONNECTION_REFUSED));
        };
        if let Err(e) = count() {
            self.live.store_u64(self.key, pool::rec_addr(self.blk, i, 0), REC_FREE, pd())?;
            return Err(e);
        }
        self.live.store_u64(self.key, pool::rec_addr(self.blk, i, 0), who | REC_COUNTED, pd())?;
        let gen = self.add(H_CONN_GEN, 1)?.wrapping_add(1) & ((1 << 48) - 1);
        // Words 8..63: importer, then `extra` (the last of them is the uses word: its
        // adapter bits, tagged with the generation, no use yet).
        let mut words = [0u64; 7];
        words[0] = imp.node as u64 | (imp.fnode as u64) << 32;
        words[1] = imp.slot as u64 | (imp.gen as u64) << 32;
        words[2..2 + extra.len()].copy_from_slice(extra);
        words[6] = (words[6] & 0xffff) | rec_tag(gen);
        let mut b = Vec::with_capacity(56);
        for w in words {
            b.extend_from_slice(&w.to_le_bytes());
        }
        self.live.put(self.key, pool::rec_addr(self.blk, i, 8), &b, pd())?;
        self.live.store_u64(self.key, pool::rec_addr(self.blk, i, 0), gen << 8 | REC_LIVE, pd())?;
        Ok((i, gen))
    }
    /// Frees record `i` if it is still the connection of generation `gen`.
    fn release(&self, i: usize, gen: u64) -> FResult<bool> {
        if i >= NREC {
            return Ok(false);
        }
        self.cas(REC_OFF + i * REC_LEN, gen << 8 | REC_LIVE, REC_FREE)
    }
}

fn importer(r: &mut Rd) -> FResult<Importer> {
    Ok(Importer { node: r.u32()?, fnode: r.u32()?, slot: r.u32()?, gen: r.u32()? })
}

fn seg_connect(t: &Target, r: &mut Rd) -> Out {
    let imp = importer(r)?;
    let ring = r.loc()?;
    let cookie = r.u64()?;
    let word = r.u32()?;
    let adapter = word & REC_ADAPTER_MASK as u32;
    let kind = if word & CONNECT_BROADCAST != 0 { REC_BROADCAST } else { 0 };
    t.check_magic()?;
    let avail = 1u64 << adapter.min(15);
    let mut seen = 0;
    let w = ring.to_words();
    let (rec, gen) = t.claim(&imp, &[w[0], w[1], w[2], cookie, adapter as u64 | kind], || loop {
        let s = t.load(H_STATE)?;
        if s & (SEG_REMOVED | SEG_CLOSING) != 0 || s & avail == 0 {
            return Err(Fail::Sci(SCI_ERR_NO_SUCH_SEGMENT));
        }
        if t.cas(H_STATE, s, s + SEG_CONN_ONE)? {
            seen = s;
            return Ok(());
        }
    })?;
    let s = seen;
    let hdr = t.read(H_SIZE, H_DOORBELL - H_SIZE)?;
    let h = |off: usize| u64::from_le_bytes(hdr[off - H_SIZE..off - H_SIZE + 8].try_into().expect("8 bytes"));
    let flags = h(H_FLAGS) as u32;
    t.owner_event([SCI_CB_CONNECT as u64 | (imp.node as u64) << 32, adapter as u64])?;
    if s & SEG_ARMED != 0 {
        t.ring_doorbell();
    }
    let data_loc = RingLoc::from_words([h(H_DATA_LOC), h(H_DATA_LOC + 8), h(H_DATA_LOC + 16)]);
    Ok(Msg::default().u32(rec as u32).u64(gen).u64(h(H_SIZE)).u64(h(H_DATA_KEY)).u64(h(H_DATA_ADDR)).loc(&data_loc).u32(flags))
}

fn seg_disconnect(t: &Target, r: &mut Rd) -> Out {
    let rec = r.u32()? as usize;
    let gen = r.u64()?;
    let node = r.u32()?;
    let adapter = r.u32()?;
    if t.release(rec, gen)? {
        let s = t.add(H_STATE, -(SEG_CONN_ONE as i64))?;
        t.owner_event([SCI_CB_DISCONNECT as u64 | (node as u64) << 32, adapter as u64])?;
        if s & SEG_ARMED != 0 {
            t.ring_doorbell();
        }
    }
    Ok(Msg::default())
}

/// The words of a control block a use step reads and changes: through the service (the
/// owner's block reached by the one-sided engine) or, for an owner on this machine, in a
/// mapping of its block (crate::remote).
pub trait BlockWords {
    fn add(&self, off: usize, v: i64) -> FResult<u64>;
    fn load(&self, off: usize) -> FResult<u64>;
}

impl BlockWords for Target<'_> {
    fn add(&self, off: usize, v: i64) -> FResult<u64> {
        Target::add(self, off, v)
    }
    fn load(&self, off: usize) -> FResult<u64> {
        Target::load(self, off)
    }
}

/// One use of connection record `rec` (generation `gen`) begins or ends (see "Uses" in
/// the module doc): SCI_ERR_NOT_CONNECTED when the connection or the segment is gone,
/// SCI_ERR_EWOULD_BLOCK while the owner decides whether to remove the segment (nothing
/// counted then either).
pub fn use_step(w: &impl BlockWords, rec: usize, gen: u64, begins: bool) -> std::result::Result<(), Fail> {
    if rec >= NREC {
        return Err(Fail::Sci(SCI_ERR_NOT_CONNECTED));
    }
    let at = REC_OFF + rec * REC_LEN + REC_USES;
    let one = if begins { REC_USE_ONE as i64 } else { -(REC_USE_ONE as i64) };
    let old = w.add(at, one)?;
    if old & (0xffff << 16) != rec_tag(gen) {
        // The record is another connection's now: ours was dropped.
        w.add(at, -one)?;
        return Err(Fail::Sci(SCI_ERR_NOT_CONNECTED));
    }
    if !begins {
        return Ok(());
    }
    let state = w.load(H_STATE)?;
    let live = w.load(REC_OFF + rec * REC_LEN)? == gen << 8 | REC_LIVE;
    if !live || state & (SEG_REMOVED | SEG_CLOSING) != 0 {
        w.add(at, -one)?;
        return Err(Fail::Sci(if live && state & SEG_REMOVED == 0 { SCI_ERR_EWOULD_BLOCK } else { SCI_ERR_NOT_CONNECTED }));
    }
    Ok(())
}

/// The checks of a [`use_step`] that begins, without counting a use: for a transfer
/// covered by a use its importer already holds (a map of the segment: crate::dma,
/// `start_now`).  Loads only; the same verdicts (SCI_ERR_NOT_CONNECTED for a dropped
/// record or a removed segment, SCI_ERR_EWOULD_BLOCK while the owner decides).
#[inline]
pub fn use_covered(w: &impl BlockWords, rec: usize, gen: u64) -> std::result::Result<(), Fail> {
    if rec >= NREC {
        return Err(Fail::Sci(SCI_ERR_NOT_CONNECTED));
    }
    let tag = w.load(REC_OFF + rec * REC_LEN + REC_USES)?;
    let live = w.load(REC_OFF + rec * REC_LEN)? == gen << 8 | REC_LIVE;
    if tag & (0xffff << 16) != rec_tag(gen) || !live {
        return Err(Fail::Sci(SCI_ERR_NOT_CONNECTED));
    }
    let state = w.load(H_STATE)?;
    if state & (SEG_REMOVED | SEG_CLOSING) != 0 {
        return Err(Fail::Sci(if state & SEG_REMOVED == 0 { SCI_ERR_EWOULD_BLOCK } else { SCI_ERR_NOT_CONNECTED }));
    }
    Ok(())
}

/// SEG_USE (see "Uses" in the module doc).
fn seg_use(t: &Target, r: &mut Rd) -> Out {
    let rec = r.u32()? as usize;
    let gen = r.u64()?;
    let begins = r.u32()? != 0;
    use_step(t, rec, gen, begins).map(|_| Msg::default())
}

fn int_connect(t: &Target, r: &mut Rd) -> Out {
    let imp = importer(r)?;
    let counting = r.u32()? != 0;
    t.check_magic()?;
    let (rec, gen) = t.claim(&imp, &[], || {
        if t.load(H_STATE)? & INT_REMOVED != 0 {
            return Err(Fail::Sci(SCI_ERR_NO_SUCH_INTNO));
        }
        t.add(H_CONNS, 1)?;
        Ok(())
    })?;
    if counting {
        t.amo(H_STATE, AmoOp::Or(INT_COUNTING))?;
    }
    let flags = t.load(H_FLAGS)? as u32;
    // Removed while we connected: undo, so the owner is not left with a connection.
    if t.load(H_STATE)? & INT_REMOVED != 0 {
        if t.release(rec, gen)? {
            t.add(H_CONNS, -1)?;
        }
        return Err(Fail::Sci(SCI_ERR_NO_SUCH_INTNO));
    }
    Ok(Msg::default().u32(rec as u32).u64(gen).u32(flags))
}

fn int_disconnect(t: &Target, r: &mut Rd) -> Out {
    let rec = r.u32()? as usize;
    let gen = r.u64()?;
    if t.release(rec, gen)? {
        t.add(H_CONNS, -1)?;
    }
    Ok(Msg::default())
}

fn int_trigger(t: &Target) -> Out {
    let prev = t.add(H_STATE, 1)?;
    if prev & INT_REMOVED != 0 {
        return Err(Fail::Sci(SCI_ERR_NOT_CONNECTED));
    }
    let wake = t.loc(H_RING_LOC)?;
    t.live.post_event(&wake, &1u64, true)?;
    if prev & INT_ARMED != 0 {
        t.ring_doorbell();
    }
    Ok(Msg::default())
}

fn data_trigger(t: &Target, r: &mut Rd) -> Out {
    let len = r.u32()? as usize;
    let payload = r.rest();
    if len > DATAINT_MAX || payload.len() != len {
        return Err(Fail::Fabric(FErr::InvalidArg));
    }
    let s = t.load(H_STATE)?;
    if s & INT_REMOVED != 0 {
        return Err(Fail::Sci(SCI_ERR_NOT_CONNECTED));
    }
    let mut m = DataMsg { len: len as u64, data: [0; DATAINT_MAX / 8] };
    // SAFETY: data has DATAINT_MAX >= len bytes; a plain byte copy into integers.
    unsafe { std::ptr::copy_nonoverlapping(payload.as_ptr(), m.data.as_mut_ptr() as *mut u8, len) };
    let l = t.loc(H_AUX_LOC)?;
    match t.live.post_event(&l, &m, false) {
        Ok(_) => {}
        Err(FErr::NoSpace) => return Err(Fail::Sci(SCI_ERR_EWOULD_BLOCK)),
        Err(e) => return Err(e.into()),
    }
    if s & INT_ARMED != 0 {
        t.ring_doorbell();
    }
    Ok(Msg::default())
}

/// Adds member `m` to the table of a reflective-memory copy (see crate::broadcast; the
/// table's layout: crate::mirror): once (a copy already listed answers OK), replacing an
/// older copy of the same node (that copy's process is gone, or the new one could not
/// have been made).  Entries are claimed by compare-and-swap in the name of the process
/// running this (a claim whose process died is free again), filled, then made live.
fn bc_join(t: &Target, r: &mut Rd) -> Out {
    use crate::mirror::*;
    let token = r.u64()?;
    let mut w = [0u64; 6];
    for x in w.iter_mut() {
        *x = r.u64()?;
    }
    let m = Member::from_words(w);
    if t.load(G_MAGIC)? != GROUP_MAGIC || t.load(G_TOKEN)? != token || m.token == token {
        return Err(Fail::Sci(SCI_ERR_NO_SUCH_SEGMENT));
    }
    for i in 0..NMEMBER {
        let e = M_OFF + i * M_LEN;
        if t.load(e + M_STATE)? != ST_LIVE {
            continue;
        }
        let tok = t.load(e + M_TOKEN)?;
        if tok == m.token {
            return Ok(Msg::default());
        }
        if (t.load(e + M_WHO)? >> 32) as u32 == m.enode {
            t.cas(e + M_STATE, ST_LIVE, ST_GONE)?;
        }
    }
    let me = std::process::id() as u64;
    for i in 0..NMEMBER {
        let e = M_OFF + i * M_LEN;
        let st = t.load(e + M_STATE)?;
        let free = st == ST_FREE || st == ST_GONE || (st & 0xff == ST_CLAIMED && !softnic_fabric::registry::pid_alive((st >> 8) as i32, None));
        if !free || !t.cas(e + M_STATE, st, ST_CLAIMED | me << 8)? {
            continue;
        }
        let mut b = Vec::with_capacity(48);
        for x in w {
            b.extend_from_slice(&x.to_le_bytes());
        }
        t.live.put(t.key, t.blk + (e + 8) as u64, &b, pd())?;
        t.live.store_u64(t.key, t.blk + e as u64, ST_LIVE, pd())?;
        return Ok(Msg::default());
    }
    Err(Fail::Sci(SCI_ERR_NOSPC))
}

/// Calls the service on `target` and splits the reply into status and payload.
pub fn request(target: &Arc<Peer>, req: Msg) -> FResult<(SciErr, Vec<u8>)> {
    let mut reply = Vec::new();
    crate::node::call(target, &req.0, &mut reply)?;
    if reply.len() < 4 {
        return Err(FErr::InvalidArg);
    }
    let st = u32::from_le_bytes(reply[..4].try_into().expect("4 bytes"));
    reply.drain(..4);
    Ok((st, reply))
}

/// Is `peer` alive?  On this machine the fabric knows at once; a process reached
/// through the network engine is asked (a no-op service call, answered by its progress
/// thread; one that is gone fails within SOFTNIC_NET_TIMEOUT_MS).
pub fn probe(peer: &Arc<Peer>) -> bool {
    if !peer.is_remote() {
        return peer.is_alive();
    }
    if !peer.is_alive() {
        return false;
    }
    let mut reply = Vec::new();
    !matches!(crate::node::call(peer, &Msg::op(PING).u64(0).u64(0).0, &mut reply), Err(softnic_fabric::Error::PeerDead))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    struct Words(Vec<AtomicU64>);

    impl BlockWords for Words {
        fn add(&self, off: usize, v: i64) -> FResult<u64> {
            Ok(self.0[off / 8].fetch_add(v as u64, Ordering::SeqCst))
        }
        fn load(&self, off: usize) -> FResult<u64> {
            Ok(self.0[off / 8].load(Ordering::SeqCst))
        }
    }

    fn err(r: std::result::Result<(), Fail>) -> SciErr {
        match r {
            Ok(()) => SCI_ERR_OK,
            Err(Fail::Sci(e)) => e,
            Err(Fail::Fabric(_)) => SCI_ERR_SYSTEM,
        }
    }

    /// Uses are counted in the record of a live connection of an available segment; a
    /// record reused for another connection, a connection dropped, a segment removed
    /// refuse (and count nothing); a segment closing asks to come again.
    #[test]
    fn uses_count_only_where_they_belong() {
        let w = Words((0..pool::BLOCK / 8).map(|_| AtomicU64::new(0)).collect());
        let (rec, gen) = (3usize, 0x1_0005u64);
        let state = REC_OFF + rec * REC_LEN;
        let uses = state + REC_USES;
        w.0[state / 8].store(gen << 8 | REC_LIVE, Ordering::SeqCst);
        w.0[uses / 8].store(2 | rec_tag(gen), Ordering::SeqCst);
        let count = || w.0[uses / 8].load(Ordering::SeqCst) >> 32;
        assert_eq!(err(use_step(&w, rec, gen, true)), SCI_ERR_OK);
        assert_eq!(err(use_step(&w, rec, gen, true)), SCI_ERR_OK);
        assert_eq!(count(), 2);
        assert_eq!(err(use_step(&w, rec, gen, false)), SCI_ERR_OK);
        assert_eq!(count(), 1);
        assert_eq!(w.0[uses / 8].load(Ordering::SeqCst) & REC_ADAPTER_MASK, 2);
        // Another generation (the record was reused): nothing counted, either way.
        assert_eq!(err(use_step(&w, rec, gen + 1, true)), SCI_ERR_NOT_CONNECTED);
        assert_eq!(err(use_step(&w, rec, gen + 1, false)), SCI_ERR_NOT_CONNECTED);
        assert_eq!(count(), 1);
        assert_eq!(err(use_step(&w, NREC, gen, true)), SCI_ERR_NOT_CONNECTED);
        // Closing: come again; removed or dropped: gone.
        w.0[H_STATE / 8].store(SEG_CLOSING, Ordering::SeqCst);
        assert_eq!(err(use_step(&w, rec, gen, true)), SCI_ERR_EWOULD_BLOCK);
        w.0[H_STATE / 8].store(SEG_REMOVED, Ordering::SeqCst);
        assert_eq!(err(use_step(&w, rec, gen, true)), SCI_ERR_NOT_CONNECTED);
        w.0[H_STATE / 8].store(SEG_AVAILABLE, Ordering::SeqCst);
        w.0[state / 8].store(REC_FREE, Ordering::SeqCst);
        assert_eq!(err(use_step(&w, rec, gen, true)), SCI_ERR_NOT_CONNECTED);
        assert_eq!(count(), 1);
    }
}
