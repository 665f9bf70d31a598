//! Interrupts and data interrupts.
//!
//! **Numbers** are node-wide, separate for plain and data interrupts, claimed in the node
//! registry: SCI_FLAG_FIXED_INTNO takes the caller's number (SCI_ERR_SEGMENTID_USED when
//! taken); otherwise the lowest free number from [`AUTO_BASE`], so numbers a program
//! picks itself (small ones) never meet automatic ones.  SCI_FLAG_SHARED_INT lets up to
//! [`SHARERS`] interrupts (of any processes of the node) share a number; a connection
//! made afterwards reaches every sharer that existed when it was made.
//!
//! **Delivery.**  A trigger is one service request to the owner (crate::service): it adds
//! one to the interrupt's pending count and rings the interrupt's wake ring (and the
//! owner's doorbell when a callback is armed).  The receiver takes all pending triggers
//! as one event (coalescing: at least one event per burst, and the last trigger is never
//! lost) or, with SCI_FLAG_COUNTING_INT on either side, one event per trigger.  Data
//! interrupts queue every message (up to [`DATA_QUEUE`] per interrupt, in order; a
//! trigger meeting a full queue is SCI_ERR_NOSPC at once, the message not taken, as on
//! the hardware); a message longer than the waiter's buffer is SCI_ERR_OUT_OF_RANGE
//! with `*length` set to its size, and stays first in line.
//!
//! **Removal** never waits for the triggering side: connections are not resources the
//! receiver's program can release (a peer's SCIDisconnectInterrupt may never come, and
//! the hardware lets the receiver go on), so SCIRemoveInterrupt and
//! SCIRemoveDataInterrupt succeed while peers are connected.  Waiters are woken with
//! SCI_ERR_CANCELLED, the number is free at once, and the connected peers' triggers fail
//! with SCI_ERR_NOT_CONNECTED (their SCIDisconnect* still succeeds).

use crate::desc::{self, Desc, Kind};
use crate::events::{self, Armed};
use crate::handles::Table;
use crate::node;
use crate::pool::{self, Block, *};
use crate::segment::{parse_payload, payload};
use crate::service::{self, *};
use crate::sisci_export;
use crate::status::*;
use crate::types::*;
use softnic_fabric::mem::{self, MemKey, SharedMem};
use softnic_fabric::registry::{self, api, EndpointId};
use softnic_fabric::ring::Ring;
use softnic_fabric::rma::Peer;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// First number given to interrupts created without SCI_FLAG_FIXED_INTNO.
pub const AUTO_BASE: u32 = 0x10000;
/// Creators sharing one number at most (SCI_FLAG_SHARED_INT).
pub const SHARERS: u8 = 8;
/// Messages a data interrupt queues.
pub const DATA_QUEUE: u32 = 32;

const CANCEL_LEN: u64 = u64::MAX;

enum Cb {
    None,
    Plain(CbInterrupt, usize),
    Data(CbDataInterrupt, usize),
}

pub struct LocalInt {
    pub handle: usize,
    desc: Arc<Desc>,
    pub no: u32,
    blk: Block,
    wake: Ring<u64>,
    msgs: Option<(SharedMem, Ring<DataMsg>)>,
    /// A message too long for the last waiter's buffer: first in line for the next one.
    pending: Mutex<Option<Box<DataMsg>>>,
    claim: Mutex<Option<EndpointId>>,
    removed: AtomicBool,
    cb: Mutex<Cb>,
}

pub static INTS: Table<LocalInt> = Table::new(7);
pub static DINTS: Table<LocalInt> = Table::new(9);

impl Drop for LocalInt {
    fn drop(&mut self) {
        if let Some(e) = self.claim.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = registry::unpublish(e);
        }
        if let Some((m, _)) = self.msgs.take() {
            let _ = mem::free_shared(m);
        }
    }
}

impl LocalInt {
    fn state(&self) -> &std::sync::atomic::AtomicU64 {
        self.blk.word(H_STATE)
    }
    /// Takes one event: one trigger (counting) or all pending ones.
    fn take(&self) -> bool {
        let w = self.state();
        let mut s = w.load(Ordering::Acquire);
        loop {
            if s & INT_COUNT_MASK == 0 {
                return false;
            }
            let new = if s & INT_COUNTING != 0 { s - 1 } else { s & !INT_COUNT_MASK };
            match w.compare_exchange_weak(s, new, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return true,
                Err(x) => s = x,
            }
        }
    }
    fn armed(&self) -> bool {
        !matches!(*self.cb.lock().unwrap_or_else(|e| e.into_inner()), Cb::None)
    }
    fn disarm(&self) {
        *self.cb.lock().unwrap_or_else(|e| e.into_inner()) = Cb::None;
        self.state().fetch_and(!INT_ARMED, Ordering::AcqRel);
    }
    fn next_msg(&self) -> Option<Box<DataMsg>> {
        if let Some(m) = self.pending.lock().unwrap_or_else(|e| e.into_inner()).take() {
            return Some(m);
        }
        self.msgs.as_ref().and_then(|(_, r)| r.pop()).map(Box::new)
    }
}

impl Armed for LocalInt {
    fn dispatch(&self, _sweep: bool) -> bool {
        loop {
            if self.removed.load(Ordering::Acquire) {
                return false;
            }
            let (plain, data) = match *self.cb.lock().unwrap_or_else(|e| e.into_inner()) {
                Cb::None => return false,
                Cb::Plain(f, a) => (Some((f, a)), None),
                Cb::Data(f, a) => (None, Some((f, a))),
            };
            let act = if let Some((Some(f), arg)) = plain {
                while self.wake.pop().is_some() {}
                if !self.take() {
                    return true;
                }
                crate::dma::settle();
                crate::map::reload_reflective();
                // SAFETY: the program's callback and argument, called as documented.
                unsafe { f(arg as *mut c_void, self.handle, SCI_ERR_OK) }
            } else if let Some((Some(f), arg)) = data {
                let Some(mut m) = self.next_msg() else { return true };
                if m.len == CANCEL_LEN {
                    return false;
                }
                crate::dma::settle();
                crate::map::reload_reflective();
                // SAFETY: as above; the message buffer lives for the call.
                unsafe { f(arg as *mut c_void, self.handle, m.data.as_mut_ptr() as *mut c_void, m.len as u32, SCI_ERR_OK) }
            } else {
                return false;
            };
            if act == SCI_CALLBACK_CANCEL {
                self.disarm();
                return false;
            }
        }
    }
}

/// Claims interrupt number `no` (or the lowest free one from AUTO_BASE) on this node.
fn claim(data: bool, fixed: Option<u32>, shared: bool, blk: &Block, flags: u32) -> R<(u32, EndpointId)> {
    let node = node::my_node();
    let pay = payload(blk, flags);
    let try_one = |no: u32| -> R<Option<EndpointId>> {
        if data {
            return match registry::publish(api::SISCI, &node::dint_key(node, no), &pay) {
                Ok(e) => Ok(Some(e)),
                Err(softnic_fabric::Error::Exists) => Ok(None),
                Err(_) => Err(SCI_ERR_NOSPC),
            };
        }
        for k in 0..SHARERS {
            match registry::publish(api::SISCI, &node::int_key(node, no, k), &pay) {
                Ok(e) => {
                    // A number is either one creator's or shared by all its creators.
                    let others: Vec<u32> = (0..SHARERS).filter(|&j| j != k).filter_map(|j| registry::lookup(api::SISCI, &node::int_key(node, no, j)).ok()).map(|e| parse_payload(&e.payload).flags).collect();
                    if (!shared && !others.is_empty()) || others.iter().any(|f| f & SCI_FLAG_SHARED_INT == 0) {
                        let _ = registry::unpublish(e);
                        return Ok(None);
                    }
                    return Ok(Some(e));
                }
                Err(softnic_fabric::Error::Exists) if shared => continue,
                Err(softnic_fabric::Error::Exists) => return Ok(None),
                Err(_) => return Err(SCI_ERR_NOSPC),
            }
        }
        Ok(None)
    };
    match fixed {
        Some(no) => try_one(no)?.map(|e| (no, e)).ok_or(SCI_ERR_SEGMENTID_USED),
        None => {
            for no in AUTO_BASE..u32::MAX {
                if let Some(e) = try_one(no)? {
                    return Ok((no, e));
                }
            }
            Err(SCI_ERR_NOSPC)
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn create(data: bool, sd: usize, intr: *mut usize, adapter: u32, intno: *mut u32, cb: Cb, flags: u32) -> R<()> {
    let d = desc::desc(sd)?;
    let allowed = if data { SCI_FLAG_USE_CALLBACK | SCI_FLAG_FIXED_INTNO } else { SCI_FLAG_USE_CALLBACK | SCI_FLAG_FIXED_INTNO | SCI_FLAG_SHARED_INT | SCI_FLAG_COUNTING_INT | SCI_FLAG_CONDITIONAL_INTERRUPT };
    check_flags(flags, allowed)?;
    check_adapter(adapter)?;
    if intr.is_null() || intno.is_null() {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    if flags & SCI_FLAG_CONDITIONAL_INTERRUPT != 0 {
        return Err(SCI_ERR_FLAG_NOT_IMPLEMENTED);
    }
    let use_cb = flags & SCI_FLAG_USE_CALLBACK != 0;
    if use_cb && matches!(cb, Cb::Plain(None, _) | Cb::Data(None, _)) {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    let kind = if data { Kind::LocalDataInterrupt } else { Kind::LocalInterrupt };
    // SAFETY: non-NULL (checked); the caller passes an unsigned int in/out.
    let fixed = (flags & SCI_FLAG_FIXED_INTNO != 0).then(|| unsafe { intno.read_unaligned() });
    d.acquire(kind)?;
    let r = (|| {
        let blk = pool::alloc()?;
        let (wake, _) = blk.init_ring::<u64>(16)?;
        let msgs = if data {
            let len = Ring::<DataMsg>::bytes_needed(DATA_QUEUE);
            let m = mem::alloc_shared(len).map_err(|_| SCI_ERR_NOSPC)?;
            // SAFETY: fresh shared memory of at least `len` bytes, page aligned, ours.
            let r = unsafe { Ring::<DataMsg>::init(m.as_ptr(), len, DATA_QUEUE) }.map_err(|_| SCI_ERR_SYSTEM)?;
            blk.set_loc(H_AUX_LOC, &m.ring_loc(0, len).map_err(|_| SCI_ERR_SYSTEM)?);
            Some((m, r))
        } else {
            None
        };
        let mut st = 0;
        if flags & SCI_FLAG_COUNTING_INT != 0 {
            st |= INT_COUNTING;
        }
        if use_cb {
            st |= INT_ARMED;
        }
        blk.word(H_STATE).store(st, Ordering::Relaxed);
        blk.set_u32(H_NODE, node::my_node());
        blk.word(H_FLAGS).store(flags as u64, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Release);
        let (no, e) = claim(data, fixed, flags & SCI_FLAG_SHARED_INT != 0, &blk, flags)?;
        blk.set_u32(H_ID, no);
        let obj = LocalInt { handle: 0, desc: d.clone(), no, blk, wake, msgs, pending: Mutex::new(None), claim: Mutex::new(Some(e)), removed: AtomicBool::new(false), cb: Mutex::new(if use_cb { cb } else { Cb::None }) };
        let table = if data { &DINTS } else { &INTS };
        let (_, obj) = table.insert_with(move |h| {
            let mut o = obj;
            o.handle = h;
            Arc::new(o)
        }).ok_or(SCI_ERR_NOSPC)?;
        if use_cb {
            if let Err(e) = events::arm(obj.clone()) {
                table.remove(obj.handle);
                return Err(e);
            }
        }
        // SAFETY: checked non-NULL above.
        unsafe { intno.write_unaligned(no) };
        out(intr, obj.handle)
    })();
    if r.is_err() {
        d.release(kind);
    }
    r
}

fn remove(data: bool, h: usize, flags: u32) -> R<()> {
    check_flags(flags, 0)?;
    let table = if data { &DINTS } else { &INTS };
    let i = table.remove(h).ok_or(SCI_ERR_ILLEGAL_PARAMETER)?;
    let connected = i.blk.word(H_CONNS).load(Ordering::Acquire);
    if connected > 0 {
        softnic_fabric::sn_debug!("SISCI", "interrupt {:#x} removed with {} connection(s): their triggers fail from now on", i.no, connected);
    }
    i.state().fetch_or(INT_REMOVED, Ordering::AcqRel);
    i.removed.store(true, Ordering::Release);
    if let Some(e) = i.claim.lock().unwrap_or_else(|e| e.into_inner()).take() {
        let _ = registry::unpublish(e);
    }
    i.blk.retire();
    i.wake.push_or_overrun(&0);
    if let Some((_, r)) = &i.msgs {
        let mut m = DataMsg { len: CANCEL_LEN, data: [0; DATAINT_MAX / 8] };
        m.len = CANCEL_LEN;
        r.push_or_overrun(&m);
    }
    i.disarm();
    events::kick();
    i.desc.release(if data { Kind::LocalDataInterrupt } else { Kind::LocalInterrupt });
    Ok(())
}

fn deadline(timeout: u32) -> Option<Instant> {
    (timeout != SCI_INFINITE_TIMEOUT).then(|| Instant::now() + Duration::from_millis(timeout as u64))
}

fn remaining(d: Option<Instant>) -> R<Option<Duration>> {
    match d {
        None => Ok(None),
        Some(d) => {
            let now = Instant::now();
            if now >= d {
                Err(SCI_ERR_TIMEOUT)
            } else {
                Ok(Some(d - now))
            }
        }
    }
}

fn wait(h: usize, timeout: u32, flags: u32) -> R<()> {
    check_flags(flags, 0)?;
    let i = INTS.get(h).ok_or(SCI_ERR_ILLEGAL_PARAMETER)?;
    if i.armed() {
        return Err(SCI_ERR_ILLEGAL_OPERATION);
    }
    if injected_timeout(timeout) {
        return Err(SCI_ERR_TIMEOUT);
    }
    let d = deadline(timeout);
    loop {
        // Drain first, then look: a trigger after the look leaves an entry that ends the sleep.
        while i.wake.pop().is_some() {}
        if i.removed.load(Ordering::Acquire) {
            return Err(SCI_ERR_CANCELLED);
        }
        if i.take() {
            crate::dma::settle();
            crate::map::reload_reflective();
            return Ok(());
        }
        match i.wake.wait_nonempty(remaining(d)?) {
            Ok(()) => {}
            Err(softnic_fabric::Error::Timeout) => return Err(SCI_ERR_TIMEOUT),
            Err(_) => return Err(SCI_ERR_SYSTEM),
        }
    }
}

fn wait_data(h: usize, data: *mut c_void, length: *mut u32, timeout: u32, flags: u32) -> R<()> {
    check_flags(flags, 0)?;
    let i = DINTS.get(h).ok_or(SCI_ERR_ILLEGAL_PARAMETER)?;
    if length.is_null() {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    // SAFETY: non-NULL; an unsigned int in/out.
    let cap = unsafe { length.read_unaligned() } as u64;
    if data.is_null() && cap > 0 {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    if i.armed() {
        return Err(SCI_ERR_ILLEGAL_OPERATION);
    }
    if injected_timeout(timeout) {
        return Err(SCI_ERR_TIMEOUT);
    }
    let d = deadline(timeout);
    let Some((_, ring)) = &i.msgs else { return Err(SCI_ERR_SYSTEM) };
    loop {
        if i.removed.load(Ordering::Acquire) {
            return Err(SCI_ERR_CANCELLED);
        }
        if let Some(m) = i.next_msg() {
            if m.len == CANCEL_LEN {
                return Err(SCI_ERR_CANCELLED);
            }
            crate::dma::settle();
            if m.len > cap {
                out(length, m.len as u32)?;
                *i.pending.lock().unwrap_or_else(|e| e.into_inner()) = Some(m);
                return Err(SCI_ERR_OUT_OF_RANGE);
            }
            // SAFETY: the program's buffer of `cap` >= len bytes.
            unsafe { std::ptr::copy_nonoverlapping(m.data.as_ptr() as *const u8, data as *mut u8, m.len as usize) };
            crate::map::reload_reflective();
            return out(length, m.len as u32);
        }
        match ring.wait_nonempty(remaining(d)?) {
            Ok(()) => {}
            Err(softnic_fabric::Error::Timeout) => return Err(SCI_ERR_TIMEOUT),
            Err(_) => return Err(SCI_ERR_SYSTEM),
        }
    }
}

// ---- the triggering side ----------------------------------------------------------------

struct Conn {
    owner: Arc<Peer>,
    key: MemKey,
    addr: u64,
    rec: u32,
    gen: u64,
}

pub struct RemoteInt {
    pub handle: usize,
    desc: Arc<Desc>,
    data: bool,
    targets: Vec<Conn>,
}

pub static RINTS: Table<RemoteInt> = Table::new(8);
pub static RDINTS: Table<RemoteInt> = Table::new(10);

impl Drop for RemoteInt {
    fn drop(&mut self) {
        for c in &self.targets {
            let req = Msg::op(INT_DISCONNECT).u64(c.key.to_u64()).u64(c.addr).u32(c.rec).u64(c.gen);
            let _ = service::request(&c.owner, req);
        }
        self.desc.release(if self.data { Kind::RemoteDataInterrupt } else { Kind::RemoteInterrupt });
    }
}

/// Every published interrupt `no` of node `node` (the sharers of a shared number).
fn find(data: bool, node: u32, no: u32) -> Vec<(Arc<Peer>, [u8; 64])> {
    if data {
        return node::lookup(node, &node::dint_key(node, no)).into_iter().collect();
    }
    let mut v = Vec::new();
    for k in 0..SHARERS {
        if let Ok(x) = node::lookup(node, &node::int_key(node, no, k)) {
            let shared = parse_payload(&x.1).flags & SCI_FLAG_SHARED_INT != 0;
            v.push(x);
            if !shared {
                break;
            }
        }
    }
    v
}

#[allow(clippy::too_many_arguments)]
fn connect(data: bool, sd: usize, intr: *mut usize, node_id: u32, adapter: u32, no: u32, flags: u32) -> R<()> {
    let d = desc::desc(sd)?;
    check_flags(flags, if data { SCI_FLAG_BROADCAST } else { SCI_FLAG_COUNTING_INT })?;
    check_adapter(adapter)?;
    if intr.is_null() {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    let nodes: Vec<u32> = if data && flags & SCI_FLAG_BROADCAST != 0 {
        crate::node::job_nodes()
    } else {
        let n = node::node_arg(node_id)?;
        if !node::node_exists(n) {
            return Err(SCI_ERR_NO_SUCH_NODEID);
        }
        vec![n]
    };
    let kind = if data { Kind::RemoteDataInterrupt } else { Kind::RemoteInterrupt };
    d.acquire(kind)?;
    let mut ri = RemoteInt { handle: 0, desc: d.clone(), data, targets: Vec::new() };
    let (fnode, me) = node::me().map_err(|_| SCI_ERR_SYSTEM)?;
    let mut last = SCI_ERR_NO_SUCH_INTNO;
    for n in nodes {
        for (owner, p) in find(data, n, no) {
            let p = parse_payload(&p);
            let req = Msg::op(INT_CONNECT).u64(p.key.to_u64()).u64(p.addr).u32(node::my_node()).u32(fnode).u32(me.slot).u32(me.gen).u32((flags & SCI_FLAG_COUNTING_INT != 0) as u32);
            match service::request(&owner, req) {
                Ok((SCI_ERR_OK, reply)) => {
                    let mut r = Rd::new(&reply);
                    if let (Ok(rec), Ok(gen)) = (r.u32(), r.u64()) {
                        ri.targets.push(Conn { owner, key: p.key, addr: p.addr, rec, gen });
                    }
                }
                Ok((e, _)) => last = e,
                Err(e) => last = reach_err(e, SCI_ERR_NO_SUCH_INTNO),
            }
        }
    }
    if ri.targets.is_empty() {
        // Dropping `ri` gives the resource back.
        return Err(last);
    }
    let table = if data { &RDINTS } else { &RINTS };
    let (h, _) = table.insert_with(move |h| {
        ri.handle = h;
        Arc::new(ri)
    }).ok_or(SCI_ERR_NOSPC)?;
    out(intr, h)
}

fn trigger(h: usize, flags: u32) -> R<()> {
    check_flags(flags, 0)?;
    let ri = RINTS.get(h).ok_or(SCI_ERR_ILLEGAL_PARAMETER)?;
    crate::map::flush_shadows();
    let mut res = Outcome::default();
    for c in &ri.targets {
        let req = Msg::op(INT_TRIGGER).u64(c.key.to_u64()).u64(c.addr);
        res.add(match service::request(&c.owner, req) {
            Ok((st, _)) => st,
            Err(e) => reach_err(e, SCI_ERR_NOT_CONNECTED),
        });
    }
    res.status()
}

/// The status of a trigger that went to every target of a connection (the sharers of a
/// number, the nodes of a broadcast): a target that is gone (removed, or its process
/// ended) is passed over while others took the trigger; any other failure is reported.
#[derive(Default)]
struct Outcome {
    delivered: bool,
    gone: bool,
    failed: Option<SciErr>,
}

impl Outcome {
    fn add(&mut self, st: SciErr) {
        match st {
            SCI_ERR_OK => self.delivered = true,
            SCI_ERR_NOT_CONNECTED => self.gone = true,
            e => {
                self.failed.get_or_insert(e);
            }
        }
    }
    fn status(&self) -> R<()> {
        match (self.failed, self.delivered, self.gone) {
            (Some(e), _, _) => Err(e),
            (None, false, true) => Err(SCI_ERR_NOT_CONNECTED),
            _ => Ok(()),
        }
    }
}

fn trigger_data(h: usize, data: *mut c_void, len: u32, flags: u32) -> R<()> {
    check_flags(flags, 0)?;
    let ri = RDINTS.get(h).ok_or(SCI_ERR_ILLEGAL_PARAMETER)?;
    if len as usize > DATAINT_MAX {
        return Err(SCI_ERR_OUT_OF_RANGE);
    }
    if data.is_null() && len > 0 {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    let payload: &[u8] = if len == 0 {
        &[]
    } else {
        // SAFETY: the program's buffer of `len` bytes.
        unsafe { std::slice::from_raw_parts(data as *const u8, len as usize) }
    };
    crate::map::flush_shadows();
    let mut res = Outcome::default();
    for c in &ri.targets {
        let req = Msg::op(DATA_TRIGGER).u64(c.key.to_u64()).u64(c.addr).u32(len).bytes(payload);
        res.add(match service::request(&c.owner, req) {
            // A full queue: the message is not taken (the hardware answers so at once,
            // and programs send again or go on).
            Ok((SCI_ERR_EWOULD_BLOCK, _)) => SCI_ERR_NOSPC,
            Ok((st, _)) => st,
            Err(e) => reach_err(e, SCI_ERR_NOT_CONNECTED),
        });
    }
    res.status()
}

fn disconnect(data: bool, h: usize, flags: u32) -> R<()> {
    check_flags(flags, 0)?;
    let table = if data { &RDINTS } else { &RINTS };
    table.remove(h).map(|_| ()).ok_or(SCI_ERR_ILLEGAL_PARAMETER)
}

sisci_export! {
    fn SCICreateInterrupt(sd: usize, interrupt: *mut usize, localAdapterNo: u32, interruptNo: *mut u32, callback: CbInterrupt, callbackArg: *mut c_void, flags: u32, error: *mut SciErr) {
        done("SCICreateInterrupt", error, create(false, sd, interrupt, localAdapterNo, interruptNo, Cb::Plain(callback, callbackArg as usize), flags))
    }
}

sisci_export! {
    /// Removes the interrupt, also while peers are connected (see the module doc).
    fn SCIRemoveInterrupt(interrupt: usize, flags: u32, error: *mut SciErr) {
        done("SCIRemoveInterrupt", error, remove(false, interrupt, flags))
    }
}

sisci_export! {
    blocking fn SCIWaitForInterrupt(interrupt: usize, timeout: u32, flags: u32, error: *mut SciErr) {
        let _span = softnic_fabric::trace::span("sisci", "SCIWaitForInterrupt");
        done("SCIWaitForInterrupt", error, wait(interrupt, timeout, flags))
    }
}

sisci_export! {
    fn SCIConnectInterrupt(sd: usize, interrupt: *mut usize, nodeId: u32, localAdapterNo: u32, interruptNo: u32, timeout: u32, flags: u32, error: *mut SciErr) {
        let _ = timeout;
        done("SCIConnectInterrupt", error, connect(false, sd, interrupt, nodeId, localAdapterNo, interruptNo, flags))
    }
}

sisci_export! {
    fn SCIDisconnectInterrupt(interrupt: usize, flags: u32, error: *mut SciErr) {
        done("SCIDisconnectInterrupt", error, disconnect(false, interrupt, flags))
    }
}

sisci_export! {
    /// Triggers the interrupt; SCI_ERR_NOT_CONNECTED once it (or its process) is gone.
    fn SCITriggerInterrupt(interrupt: usize, flags: u32, error: *mut SciErr) {
        let _span = softnic_fabric::trace::span("sisci", "SCITriggerInterrupt");
        done("SCITriggerInterrupt", error, trigger(interrupt, flags))
    }
}

sisci_export! {
    /// The interrupt's number; 0 for an invalid handle.
    fn SCIGetLocalInterruptNo(interrupt: usize) -> u32 {
        INTS.get(interrupt).map_or(0, |i| i.no)
    }
}

sisci_export! {
    fn SCICreateDataInterrupt(sd: usize, interrupt: *mut usize, localAdapterNo: u32, interruptNo: *mut u32, callback: CbDataInterrupt, callbackArg: *mut c_void, flags: u32, error: *mut SciErr) {
        done("SCICreateDataInterrupt", error, create(true, sd, interrupt, localAdapterNo, interruptNo, Cb::Data(callback, callbackArg as usize), flags))
    }
}

sisci_export! {
    fn SCIRemoveDataInterrupt(interrupt: usize, flags: u32, error: *mut SciErr) {
        done("SCIRemoveDataInterrupt", error, remove(true, interrupt, flags))
    }
}

sisci_export! {
    blocking fn SCIWaitForDataInterrupt(interrupt: usize, data: *mut c_void, length: *mut u32, timeout: u32, flags: u32, error: *mut SciErr) {
        let _span = softnic_fabric::trace::span("sisci", "SCIWaitForDataInterrupt");
        done("SCIWaitForDataInterrupt", error, wait_data(interrupt, data, length, timeout, flags))
    }
}

sisci_export! {
    /// SCI_FLAG_BROADCAST: every node of the job that has the number gets the messages.
    fn SCIConnectDataInterrupt(sd: usize, interrupt: *mut usize, nodeId: u32, localAdapterNo: u32, interruptNo: u32, timeout: u32, flags: u32, error: *mut SciErr) {
        let _ = timeout;
        done("SCIConnectDataInterrupt", error, connect(true, sd, interrupt, nodeId, localAdapterNo, interruptNo, flags))
    }
}

sisci_export! {
    fn SCIDisconnectDataInterrupt(interrupt: usize, flags: u32, error: *mut SciErr) {
        done("SCIDisconnectDataInterrupt", error, disconnect(true, interrupt, flags))
    }
}

sisci_export! {
    /// Sends a message of at most 4096 bytes (SCI_ERR_OUT_OF_RANGE beyond).
    fn SCITriggerDataInterrupt(interrupt: usize, data: *mut c_void, length: u32, flags: u32, error: *mut SciErr) {
        let _span = softnic_fabric::trace::span("sisci", "SCITriggerDataInterrupt").map(|s| s.arg("bytes", length as u64));
        done("SCITriggerDataInterrupt", error, trigger_data(interrupt, data, length, flags))
    }
}

