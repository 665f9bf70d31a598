//! DMA: queues, transfers (single, program memory, vector, SISCI 1.10's enqueue/post),
//! waits, aborts, callbacks, and DMA channels.
//!
//! **Engine.**  A transfer moves its data with the fabric's one-sided engine
//! (`rma::put`, or `rma::get` for SCI_FLAG_DMA_READ) into the segment's memory at its
//! owner: a copy between the two mappings on this machine, libfabric RMA or requests
//! across machines.  Without SCI_FLAG_USE_CALLBACK the transfer runs in the starting
//! call (POSTED while it runs, DONE or ERROR when the call returns; SCIWaitForDMAQueue
//! then answers at once); with it, on the library's DMA thread (one per process, started
//! by the first such transfer), which then calls the callback with SCI_ERR_OK,
//! SCI_ERR_TRANSFER_FAILED or, after SCIAbortDMAQueue, SCI_ERR_CANCELLED.  The queue is
//! in its final state before the callback runs, so the callback may start the next
//! transfer.  Data is moved in pieces of [`CHUNK`] bytes; an abort takes effect between
//! pieces (SCIAbortDMAQueue returns once the queue has left POSTED).
//!
//! **Rules** (SCI_ERR_ILLEGAL_OPERATION otherwise): one transfer per queue at a time;
//! start from IDLE, DONE, ERROR or ABORTED; wait and abort only after a start; remove
//! only when no transfer is POSTED.  The local segment must be prepared
//! (SCI_ERR_SEGMENT_NOT_PREPARED); every piece must lie inside both segments
//! (SCI_ERR_OUT_OF_RANGE); a vector has 1..=DIS_DMA_MAX_VECLEN entries
//! (SCI_ERR_ILLEGAL_PARAMETER), whose `flags` are ignored (none is defined for an entry,
//! and programs leave them uninitialised).  The remote segment need not be mapped (every mode is
//! "global" here).  No alignment is required (the capabilities say 1).  A transfer is a
//! use of each remote segment it touches (crate::service, "Uses"), from its start to its
//! end: the owner cannot remove the segment meanwhile; a transfer started on a segment
//! that is gone ends in ERROR.  A transfer to a broadcast connection is a write to the
//! group (crate::broadcast).

use crate::broadcast::Wait;
use crate::desc::{self, Desc, Kind};
use crate::handles::{self, Table};
use crate::pool::pd;
use crate::remote::{self, RemoteSeg};
use crate::segment::{self, LocalSeg};
use crate::sisci_export;
use crate::status::*;
use crate::types::*;
use softnic_fabric::wait::WaitWords;
use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::Duration;

/// Bytes moved between two looks at the abort flag.
pub const CHUNK: usize = 1 << 20;
/// Largest transfer a mode reports (sci_dma_capabilities_t.max_transfer_size).
pub const MAX_TRANSFER: u32 = u32::MAX;

/// One transfer's last data may already be visible at its target while its queue does
/// not show its end yet (set in [`Queue::landing`]).  **Events are causal**: a target
/// that sees the data may answer at once (an interrupt, a data interrupt), and the
/// program must not see the answer before the transfer's end, which its thread moving
/// the data (or the engine's reply, across machines) records a moment later.  So every
/// delivery of an interrupt waits, after taking it, until no queue is landing
/// ([`settle`]).  Set from the last [`CHUNK`] of a write (a target reacting to earlier
/// data sees a transfer in progress, as on the hardware) until the final state is set,
/// before the callback runs (a callback may wait for the answer).  Reads are not marked
/// (a target cannot see them).  A flag per queue, stored plainly: the transfer's path
/// takes no locked instruction for it (a process-wide counter cost 2-4% of a 4-16 KiB
/// DMA's bandwidth); the rare interrupt delivery scans the queues instead.
struct Landing<'q>(&'q AtomicBool);

impl<'q> Landing<'q> {
    fn begin(q: &'q Queue) -> Landing<'q> {
        q.landing.store(true, Ordering::Relaxed);
        // Marked before any of the data it covers can be seen (stores stay in order).
        std::sync::atomic::fence(Ordering::Release);
        Landing(&q.landing)
    }
}

impl Drop for Landing<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// Called by every delivery of an interrupt, after it took the interrupt and before the
/// program sees it: waits while a transfer of ours is landing (see [`Landing`]): at most
/// the copy of one chunk on this machine, or the wake-up of the thread that received the
/// reply across machines.
pub fn settle() {
    let mut spins = 0;
    while QUEUES.any(|q| q.landing.load(Ordering::Acquire)) {
        spins += 1;
        softnic_fabric::spin::relax(spins);
    }
}

/// The program's side of a piece.
enum Local {
    Seg(Arc<LocalSeg>),
    Mem(*mut u8),
}

struct Piece {
    local: Local,
    rseg: Arc<RemoteSeg>,
    loff: usize,
    roff: usize,
    size: usize,
    read: bool,
}

struct Job {
    pieces: Vec<Piece>,
    /// The API call that started it (what the checker names).
    api: &'static str,
    cb: Option<(CbDma, usize)>,
    /// The pieces whose remote segment this transfer counts as a use at its owner (each
    /// segment once; given back at the end): the first piece's, and `more`.
    held_first: bool,
    more: Vec<usize>,
    /// A segment was gone when the transfer was started: it ends in ERROR.
    doomed: bool,
}

impl Job {
    fn new(pieces: Vec<Piece>, cb: Option<(CbDma, usize)>, api: &'static str) -> Job {
        // Each remote segment once: its owner does not remove it while this is in flight
        // (crate::service, "Uses").  Most transfers have one segment (no list is made).
        let mut job = Job { pieces, api, cb, held_first: false, more: Vec::new(), doomed: false };
        for i in 0..job.pieces.len() {
            let r = &job.pieces[i].rseg;
            if i > 0 && (Arc::ptr_eq(&job.pieces[0].rseg, r) || job.more.iter().any(|&k| Arc::ptr_eq(&job.pieces[k].rseg, r))) {
                continue;
            }
            if let Err(e) = r.begin_use() {
                softnic_fabric::sn_debug!("SISCI", "DMA to node {} segment {}: {}", r.node, r.id, name(e));
                job.doomed = true;
                break;
            }
            if i == 0 {
                job.held_first = true;
            } else {
                job.more.push(i);
            }
        }
        job
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        let first = self.held_first.then_some(0);
        for i in first.into_iter().chain(self.more.iter().copied()) {
            self.pieces[i].rseg.end_use();
        }
    }
}

// SAFETY: the raw pointer of a Mem piece is the program's buffer, which it promises to
// keep valid until the transfer completes (as with the real DMA engine); it is only read
// or written by the one thread that runs the transfer.
unsafe impl Send for Piece {}
unsafe impl Sync for Piece {}

impl Drop for Piece {
    fn drop(&mut self) {
        if let Local::Seg(s) = &self.local {
            s.dma.fetch_sub(1, Ordering::AcqRel);
        }
        self.rseg.dma.fetch_sub(1, Ordering::AcqRel);
    }
}

pub struct Queue {
    pub handle: usize,
    desc: Arc<Desc>,
    max_entries: u32,
    state: AtomicU32,
    abort: AtomicBool,
    /// The transfer in flight (or last) was started with a callback.
    with_cb: AtomicBool,
    /// The timeline's span of the transfer in flight is open.
    traced: AtomicBool,
    /// The transfer's last data may be visible before its end is ([`Landing`]).
    landing: AtomicBool,
    wake: WaitWords,
    gather: Mutex<Vec<Piece>>,
}

pub static QUEUES: Table<Queue> = Table::new(6);

fn queue(h: usize) -> R<Arc<Queue>> {
    QUEUES.get(h).ok_or(SCI_ERR_ILLEGAL_PARAMETER)
}

impl Drop for Queue {
    fn drop(&mut self) {
        self.desc.release(Kind::DmaQueue);
    }
}

impl Queue {
    pub fn state(&self) -> u32 {
        self.state.load(Ordering::Acquire)
    }
    fn set(&self, s: u32) {
        self.state.store(s, Ordering::Release);
        self.wake.notify();
    }
    /// IDLE/DONE/ERROR/ABORTED (or GATHER when `gather`) -> POSTED.
    fn post(&self, gather: bool) -> R<()> {
        let mut s = self.state();
        loop {
            let ok = match s {
                SCI_DMAQUEUE_IDLE | SCI_DMAQUEUE_DONE | SCI_DMAQUEUE_ERROR | SCI_DMAQUEUE_ABORTED => !gather,
                SCI_DMAQUEUE_GATHER => gather,
                _ => false,
            };
            if !ok {
                return Err(SCI_ERR_ILLEGAL_OPERATION);
            }
            match self.state.compare_exchange(s, SCI_DMAQUEUE_POSTED, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    self.abort.store(false, Ordering::Release);
                    return Ok(());
                }
                Err(x) => s = x,
            }
        }
    }
}

/// Moves the data of `job`; the final state.  `landing` is set before the last
/// [`CHUNK`] of written data moves (see [`Landing`]); the caller drops it once the final
/// state is set.
fn run<'q>(q: &'q Queue, job: &Job, landing: &mut Option<Landing<'q>>) -> (u32, SciErr) {
    let _span = softnic_fabric::trace::span("sisci", "DMA transfer").map(|s| s.arg("bytes", job.pieces.iter().map(|p| p.size as u64).sum()));
    // SOFTNIC_FAULTS=transfer: the transfer is lost in the network (nothing lands).
    if job.doomed || softnic_fabric::faults::hit(softnic_fabric::faults::Point::Transfer) {
        return (SCI_DMAQUEUE_ERROR, SCI_ERR_TRANSFER_FAILED);
    }
    let mut unwritten: usize = job.pieces.iter().filter(|p| !p.read).map(|p| p.size).sum();
    for p in &job.pieces {
        let base = match &p.local {
            Local::Seg(s) => match s.mem() {
                Ok(d) => d.ptr,
                Err(_) => return (SCI_DMAQUEUE_ERROR, SCI_ERR_TRANSFER_FAILED),
            },
            Local::Mem(ptr) => *ptr,
        };
        // Reflective memory: a read sees what the group holds now (other machines' writes
        // included); a write goes to every member.
        let group = p.rseg.group.as_ref();
        if let (true, Some(g)) = (p.read, group) {
            if g.sync(p.roff, p.roff + p.size, true).is_err() {
                return (SCI_DMAQUEUE_ERROR, SCI_ERR_TRANSFER_FAILED);
            }
        }
        let mut done = 0;
        while done < p.size {
            if q.abort.load(Ordering::Acquire) {
                return (SCI_DMAQUEUE_ABORTED, SCI_ERR_CANCELLED);
            }
            let n = (p.size - done).min(CHUNK);
            if !p.read {
                if landing.is_none() && unwritten <= CHUNK {
                    *landing = Some(Landing::begin(q));
                }
                unwritten -= n;
            }
            // SAFETY: loff + size was checked against the local memory's length (segment)
            // or is the program's buffer (Mem); the piece keeps the segment alive.
            let buf = unsafe { std::slice::from_raw_parts_mut(base.add(p.loff + done), n) };
            let raddr = p.rseg.data_addr + (p.roff + done) as u64;
            let r = match (p.read, group) {
                (false, Some(g)) => g.write(&[(p.roff + done, &*buf)], Wait::Yes).map_err(|_| softnic_fabric::Error::PeerDead),
                (true, Some(g)) => {
                    g.read(p.roff + done, buf);
                    Ok(())
                }
                (true, None) => softnic_fabric::rma::get(&p.rseg.data_owner, p.rseg.data_key, raddr, buf, pd()),
                (false, None) => softnic_fabric::rma::put(&p.rseg.data_owner, p.rseg.data_key, raddr, buf, pd()),
            };
            if let Err(e) = r {
                softnic_fabric::sn_debug!("SISCI", "DMA to node {} segment {}: {}", p.rseg.node, p.rseg.id, e);
                return (SCI_DMAQUEUE_ERROR, SCI_ERR_TRANSFER_FAILED);
            }
            done += n;
        }
    }
    (SCI_DMAQUEUE_DONE, SCI_ERR_OK)
}

/// SOFTNIC_CHECK: the checker's id space of the DMA sources of queue `dq`.
fn check_kind(dq: usize) -> u64 {
    0x5c15_0000_0000_0000 | dq as u64
}

/// SOFTNIC_CHECK: a DMA write reads its local memory until the program learns the
/// transfer is over (SCIWaitForDMAQueue, SCIDMAQueueState, the callback, and the calls
/// that succeed only once it is: see [`check_release`]); a DMA read has filled its local
/// memory when the queue turns DONE, and the program owns the data only once it learns
/// that (a write of the program's before then may be undone on the hardware by data
/// landing after it).  The checker watches those bytes till then: the writes' (`reads`
/// false) at the start, the reads' when their data landed.
#[cold]
fn check_watch(dq: usize, pieces: &[Piece], reads: bool, api: &'static str) {
    for (i, p) in pieces.iter().enumerate().filter(|(_, p)| p.read == reads && p.size > 0) {
        let base = match &p.local {
            Local::Seg(s) => match s.mem() {
                Ok(d) => d.ptr,
                Err(_) => continue,
            },
            Local::Mem(ptr) => *ptr,
        };
        let (node, id, size) = (p.rseg.node, p.rseg.id, p.size);
        let at = base as usize + p.loff;
        if reads {
            softnic_fabric::check::watch_filled(check_kind(dq), i, api, || format!("a DMA read of {size} bytes from node {node} segment {id}"), at, size);
        } else {
            // SAFETY: the local memory of the transfer, checked against its length at the start.
            unsafe { softnic_fabric::check::watch(check_kind(dq), i, api, || format!("a DMA of {size} bytes to node {node} segment {id}"), at, size) };
        }
    }
}

/// SOFTNIC_CHECK: the spaces of SISCI's targets in the race table: the memory of a
/// process of this machine (named by its registry id, which every process here reads
/// alike), or of a process reached over the network (the node it is reached at added, as
/// registry ids are per machine).
const CHECK_RACE_HERE: u64 = 0x5c15 << 40;
const CHECK_RACE_NET: u64 = 0x5c16 << 40;

/// SOFTNIC_CHECK: data races between initiators (fabric check.rs, "Races").  Each piece
/// of a DMA transfer writes (or, with SCI_FLAG_DMA_READ, reads) bytes of a remote
/// segment from its start until the program learns the queue's transfer is over (the
/// same points that end the watches of [`check_watch`]: [`check_release`]); another
/// process's transfer to overlapping bytes started meanwhile, one of the two a write, is
/// a data race, reported by the second starter.
///
/// **The target** is the segment's memory where it really is: the process that holds
/// its registration (`data_owner`: the exporter, or for a broadcast connection the
/// machine's mirror of the group) and the bytes' address there (`data_addr`, the
/// registration's address in that process, plus the offset), not the (node id, segment
/// id) the program connected to.  Two segments made over the same program memory
/// (SCIRegisterSegmentMemory, SCIAttachPhysicalMemory) then name the same bytes alike,
/// and two segments never share a name while both exist.  (Memory of a removed segment
/// that a new one reuses at the same address is named alike: a finding there needs an
/// access to the old segment whose end its initiator never learned, itself a hazard on
/// the hardware.)  A broadcast connection and a plain one to a member's copy name different
/// memory (the group's mirror, the member's copy): a race between the two is missed,
/// never invented.
///
/// **Not tracked:** SCIMemCpy/SCIMemWrite and PIO loads and stores through maps
/// (complete inside the call or the instruction: nothing in flight to overlap), data
/// interrupts (a message, not an access to a segment's bytes), transfers to memory
/// without a fabric registration (they fail), and local-segment accesses of the
/// segment's owner itself (plain memory accesses).
#[cold]
fn check_race(dq: usize, pieces: &[Piece], api: &'static str) {
    for (i, p) in pieces.iter().enumerate() {
        let r = &p.rseg;
        if p.size == 0 || r.data_key == softnic_fabric::mem::MemKey::NONE {
            continue;
        }
        let owner = &r.data_owner;
        let space = if owner.is_remote() { CHECK_RACE_NET | owner.node_addr().unwrap_or(u32::MAX) as u64 } else { CHECK_RACE_HERE };
        let pid = owner.proc_id();
        let to = softnic_fabric::check::Target { space, target: (pid.slot as u64) << 32 | pid.gen as u64, addr: r.data_addr + p.roff as u64, len: p.size as u64 };
        let (node, id, roff, size, write) = (r.node, r.id, p.roff, p.size, !p.read);
        let what = || format!("a DMA {} of {size} bytes {} node {node} segment {id} at offset {roff}", if write { "write" } else { "read" }, if write { "to" } else { "from" });
        softnic_fabric::check::remote_access(check_kind(dq), i, api, what, to, write);
    }
}

/// SOFTNIC_CHECK: the program learned (through `how`) that queue `dq`'s transfer is over:
/// SCIWaitForDMAQueue, SCIDMAQueueState showing a final state, the callback, a start with
/// SCI_FLAG_DMA_WAIT returning, and the calls that succeed only when no transfer is
/// POSTED (a new transfer started or gathered on the queue, SCIAbortDMAQueue,
/// SCIResetDMAQueue, SCIRemoveDMAQueue).  Its watches are checked and its accesses are
/// no longer in flight.
fn check_release(dq: usize, how: &str) {
    softnic_fabric::check::release_all(check_kind(dq), how);
    if softnic_fabric::trace::enabled() {
        if let Some(q) = QUEUES.get(dq) {
            trace_end(&q);
        }
    }
}

/// The timeline: a queue's transfer from its start to the moment the program learns it
/// ended (an asynchronous span named by the queue's handle).
const TRACE_DMA: &str = "DMA in flight";

#[cold]
fn trace_begin(q: &Queue, bytes: u64) {
    if q.traced.swap(true, Ordering::Relaxed) {
        // The program restarted the queue without looking at how the last transfer ended.
        softnic_fabric::trace::async_end("sisci", TRACE_DMA, q.handle as u64);
    }
    softnic_fabric::trace::async_begin("sisci", TRACE_DMA, q.handle as u64, &[("bytes", bytes)]);
}

#[cold]
fn trace_end(q: &Queue) {
    if q.traced.swap(false, Ordering::Relaxed) {
        softnic_fabric::trace::async_end("sisci", TRACE_DMA, q.handle as u64);
    }
}

/// Runs `job` to its end: state, then (if any) the callback.
fn complete(q: &Arc<Queue>, job: Job) {
    let mut landing = None;
    let (state, status) = run(q, &job, &mut landing);
    if state == SCI_DMAQUEUE_DONE && softnic_fabric::check::enabled() {
        check_watch(q.handle, &job.pieces, true, job.api);
    }
    let cb = job.cb;
    drop(job);
    if cb.is_some() {
        // Before the state shows the end: the program learns it from the state or the
        // callback, and may start the next transfer at once (whose watches and accesses
        // this must not end).
        check_release(q.handle, "the DMA callback");
    }
    q.set(state);
    drop(landing);
    if let Some((Some(f), arg)) = cb {
        // SAFETY: the program's callback and argument, called as documented, on the DMA
        // thread with no library lock held.
        unsafe { f(arg as *mut c_void, q.handle, status) };
    }
}

// ---- the DMA thread -----------------------------------------------------------------

struct Engine {
    jobs: Mutex<VecDeque<(Arc<Queue>, Job)>>,
    cv: Condvar,
}

fn engine() -> R<&'static Engine> {
    static E: OnceLock<Option<&'static Engine>> = OnceLock::new();
    let e = E.get_or_init(|| {
        let e: &'static Engine = Box::leak(Box::new(Engine { jobs: Mutex::new(VecDeque::new()), cv: Condvar::new() }));
        std::thread::Builder::new().name("sisci-dma".into()).spawn(move || loop {
            let (q, job) = {
                let mut j = e.jobs.lock().unwrap_or_else(|x| x.into_inner());
                loop {
                    if let Some(x) = j.pop_front() {
                        break x;
                    }
                    j = e.cv.wait(j).unwrap_or_else(|x| x.into_inner());
                }
            };
            complete(&q, job);
        }).ok().map(|_| e)
    });
    e.ok_or(SCI_ERR_SYSTEM)
}

// ---- starting transfers ---------------------------------------------------------------

const START_FLAGS: u32 = SCI_FLAG_USE_CALLBACK | SCI_FLAG_DMA_READ | SCI_FLAG_BROADCAST | SCI_FLAG_DMA_GLOBAL | SCI_FLAG_DMA_SYSDMA | SCI_FLAG_DMA_WAIT | SCI_FLAG_DMA_USER_MEM | SCI_FLAG_DMA_ADAPTER;

fn start_flags(flags: u32, rs: &RemoteSeg) -> R<()> {
    check_flags(flags, START_FLAGS)?;
    if flags & SCI_FLAG_DMA_SYSDMA != 0 && flags & SCI_FLAG_DMA_GLOBAL != 0 {
        return Err(SCI_ERR_ILLEGAL_FLAG);
    }
    if flags & SCI_FLAG_BROADCAST != 0 && rs.flags & SCI_FLAG_BROADCAST == 0 {
        return Err(SCI_ERR_ILLEGAL_FLAG);
    }
    Ok(())
}

fn inside(off: usize, size: usize, len: usize) -> R<()> {
    match off.checked_add(size) {
        Some(e) if e <= len => Ok(()),
        _ => Err(SCI_ERR_OUT_OF_RANGE),
    }
}

/// A piece of `ls` (or program memory at `mem`) and `rs`; takes the DMA references that
/// keep both from being removed while it is in flight.
fn piece(ls: Option<&Arc<LocalSeg>>, mem: *mut u8, rs: &Arc<RemoteSeg>, loff: usize, roff: usize, size: usize, read: bool) -> R<Piece> {
    inside(roff, size, rs.size)?;
    let local = match ls {
        Some(s) => {
            if !s.prepared() {
                return Err(SCI_ERR_SEGMENT_NOT_PREPARED);
            }
            inside(loff, size, s.mem()?.len)?;
            s.dma.fetch_add(1, Ordering::AcqRel);
            Local::Seg(s.clone())
        }
        None => Local::Mem(mem),
    };
    rs.dma.fetch_add(1, Ordering::AcqRel);
    Ok(Piece { local, rseg: rs.clone(), loff, roff, size, read })
}

fn launch(q: &Arc<Queue>, pieces: Vec<Piece>, cb: CbDma, arg: *mut c_void, flags: u32, gather: bool, api: &'static str) -> R<()> {
    let use_cb = flags & SCI_FLAG_USE_CALLBACK != 0;
    if use_cb && cb.is_none() {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    let eng = if use_cb { Some(engine()?) } else { None };
    q.post(gather)?;
    q.with_cb.store(use_cb, Ordering::Release);
    if !gather && softnic_fabric::check::enabled() {
        // A start succeeds only when the last transfer is over (a gathered one was told
        // at its first SCIEnqueueDMATransfer).
        check_release(q.handle, api);
    }
    if softnic_fabric::trace::enabled() {
        trace_begin(q, pieces.iter().map(|p| p.size as u64).sum());
    }
    if softnic_fabric::check::enabled() {
        check_watch(q.handle, &pieces, false, api);
        check_race(q.handle, &pieces, api);
    }
    let job = Job::new(pieces, use_cb.then_some((cb, arg as usize)), api);
    match eng {
        None => {
            complete(q, job);
            if flags & SCI_FLAG_DMA_WAIT != 0 {
                // The call returns once the transfer is over (with a callback, the DMA
                // thread released it before the state changed).
                check_release(q.handle, api);
            }
        }
        Some(e) => {
            e.jobs.lock().unwrap_or_else(|x| x.into_inner()).push_back((q.clone(), job));
            e.cv.notify_one();
            if flags & SCI_FLAG_DMA_WAIT != 0 {
                // The call's cancellation point (the transfer goes on without us).
                let _ = softnic_fabric::cancel::point(|| q.wake.wait_until(|| q.state() != SCI_DMAQUEUE_POSTED, None));
            }
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn start(api: &'static str, dq: usize, lseg: usize, mem: *mut u8, rseg: usize, loff: usize, size: usize, roff: usize, cb: CbDma, arg: *mut c_void, flags: u32) -> R<()> {
    let q = queue(dq)?;
    let rs = remote::rseg(rseg)?;
    start_flags(flags, &rs)?;
    let ls = if mem.is_null() { Some(segment::seg(lseg)?) } else { None };
    if size == 0 {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    if ls.is_none() {
        let write_local = flags & SCI_FLAG_DMA_READ != 0;
        match softnic_fabric::mem::mapped_writable(mem as usize, size) {
            None => return Err(SCI_ERR_ILLEGAL_ADDRESS),
            Some(false) if write_local => return Err(SCI_ERR_ILLEGAL_ADDRESS),
            _ => {}
        }
    }
    let p = piece(ls.as_ref(), mem, &rs, loff, roff, size, flags & SCI_FLAG_DMA_READ != 0)?;
    launch(&q, vec![p], cb, arg, flags, false, api)
}

/// The flags a transfer may carry on the quick path: those that change nothing here.
const NOW_FLAGS: u32 = SCI_FLAG_DMA_GLOBAL | SCI_FLAG_DMA_ADAPTER;

/// The quick path of SCIStartDmaTransfer (a write from a local segment, no callback, no
/// wait): what [`start`] and [`launch`] do for it, with the objects borrowed under a
/// handle guard instead of counted, and no job built.  None, having changed nothing, for
/// anything else: a hook on (checker, trace, faults, debug log), another flag, a segment
/// on another machine or a broadcast one, any error, or a use the owner does not grant
/// at once; [`start`] then does the call (and gives the exact error).  It calls no
/// cancellation point, prints nothing, and never waits (the handle guard's rule).
#[allow(clippy::too_many_arguments)]
fn start_now(dq: usize, lseg: usize, rseg: usize, loff: usize, size: usize, roff: usize, flags: u32) -> Option<()> {
    if flags & !NOW_FLAGS != 0
        || softnic_fabric::check::enabled()
        || softnic_fabric::trace::enabled()
        || softnic_fabric::faults::any()
        || softnic_fabric::log::enabled(softnic_fabric::log::Level::Debug)
    {
        return None;
    }
    let g = handles::guard();
    // The checks of `start` and `piece`, in their order.
    let q = QUEUES.get_in(&g, dq)?;
    let rs = remote::RSEGS.get_in(&g, rseg)?;
    let ls = segment::SEGS.get_in(&g, lseg)?;
    // Not counted in `dma` (the counts' locked updates after the copy wait for its stores
    // to drain): a removal or disconnect in progress sends us to the general path, and
    // one that begins later waits for this guard to end (handles::Removal), so neither
    // segment is taken apart under the copy; SCI_ERR_BUSY stays for general transfers.
    if ls.removing.load(Ordering::SeqCst) != 0 || rs.removing.load(Ordering::SeqCst) != 0 {
        return None;
    }
    if size == 0 || inside(roff, size, rs.size).is_err() || !ls.prepared() {
        return None;
    }
    let src = ls.mem().ok()?;
    if inside(loff, size, src.len).is_err() || !rs.dma_local() {
        return None;
    }
    // The transfer's use of the segment at its owner (Job::new), then the queue (launch);
    // a queue that cannot start gives its use back.  While this process maps the segment
    // the map's use covers the transfer (as the hardware's mapping keeps the segment): a
    // map ends by uncounting itself from `maps` and then waiting for every guard that may
    // have seen it before giving its use back (RemoteSeg::map_end), so a count above zero
    // read here stands for a use held until this guard ends.  Only the verdicts of a
    // beginning use are taken then (loads: removed, closing or withdrawn sends the call to
    // the general path), not its two locked updates of the owner's shared record.
    let covered = rs.maps.load(Ordering::SeqCst) > 0;
    if covered {
        if !rs.covered_use_ok() {
            return None;
        }
    } else {
        rs.try_begin_use().ok()?;
    }
    if q.post(false).is_err() {
        if !covered {
            rs.end_use();
        }
        return None;
    }
    q.with_cb.store(false, Ordering::Release);
    let mut state = SCI_DMAQUEUE_DONE;
    let mut done = 0;
    let mut landing = None;
    while done < size {
        if q.abort.load(Ordering::Acquire) {
            state = SCI_DMAQUEUE_ABORTED;
            break;
        }
        let n = (size - done).min(CHUNK);
        if landing.is_none() && size - done <= CHUNK {
            landing = Some(Landing::begin(q));
        }
        // SAFETY: loff + size lies inside the local segment's memory (checked above),
        // which the guard keeps allocated and no removal takes apart (see above).
        let buf = unsafe { std::slice::from_raw_parts(src.ptr.add(loff + done), n) };
        if rs.put(roff + done, buf).is_err() {
            state = SCI_DMAQUEUE_ERROR;
            break;
        }
        done += n;
    }
    if !covered {
        rs.end_use();
    }
    q.set(state);
    drop(landing);
    drop(g);
    Some(())
}

#[allow(clippy::too_many_arguments)]
fn start_vec(api: &'static str, dq: usize, lseg: usize, rseg: usize, len: usize, vec: *const DisDmaVec, cb: CbDma, arg: *mut c_void, flags: u32) -> R<()> {
    let q = queue(dq)?;
    let rs = remote::rseg(rseg)?;
    start_flags(flags, &rs)?;
    let ls = segment::seg(lseg)?;
    if len == 0 || len > DIS_DMA_MAX_VECLEN || vec.is_null() || vec as usize % std::mem::align_of::<DisDmaVec>() != 0 {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    // SAFETY: the program's array of `len` entries.
    let v = unsafe { std::slice::from_raw_parts(vec, len) };
    let read = flags & SCI_FLAG_DMA_READ != 0;
    let mut pieces = Vec::with_capacity(len);
    if v.iter().any(|e| e.flags != 0) {
        // Programs leave the entries' flags uninitialised (the hardware does not look at
        // them), so they are not checked either.
        softnic_fabric::sn_debug!("SISCI", "SCIStartDmaTransferVec: entry flags ignored");
    }
    for e in v {
        pieces.push(piece(Some(&ls), std::ptr::null_mut(), &rs, e.local_offset as usize, e.remote_offset as usize, e.size as usize, read)?);
    }
    launch(&q, pieces, cb, arg, flags, false, api)
}

fn create(sd: usize, dq: *mut usize, adapter: u32, max_entries: u32, flags: u32) -> R<()> {
    let d = desc::desc(sd)?;
    check_flags(flags, SCI_FLAG_DMA_PHDMA)?;
    check_adapter(adapter)?;
    if dq.is_null() || max_entries == 0 {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    d.acquire(Kind::DmaQueue)?;
    let q = Queue { handle: 0, desc: d.clone(), max_entries, state: AtomicU32::new(SCI_DMAQUEUE_IDLE), abort: AtomicBool::new(false), with_cb: AtomicBool::new(false), traced: AtomicBool::new(false), landing: AtomicBool::new(false), wake: WaitWords::new(), gather: Mutex::new(Vec::new()) };
    let (h, _) = QUEUES.insert_with(move |h| {
        let mut q = q;
        q.handle = h;
        Arc::new(q)
    }).ok_or(SCI_ERR_NOSPC)?;
    out(dq, h)
}

fn remove(dq: usize, flags: u32) -> R<()> {
    check_flags(flags, 0)?;
    let mut illegal = false;
    let q = QUEUES.remove_if(dq, |q| {
        illegal = matches!(q.state(), SCI_DMAQUEUE_POSTED | SCI_DMAQUEUE_GATHER);
        !illegal
    });
    if illegal {
        return Err(SCI_ERR_ILLEGAL_OPERATION);
    }
    let q = q.ok_or(SCI_ERR_ILLEGAL_PARAMETER)?;
    // Removed only when no transfer is POSTED: the last one is over.
    softnic_fabric::check::release_all(check_kind(dq), "SCIRemoveDMAQueue");
    if softnic_fabric::trace::enabled() {
        trace_end(&q);
    }
    Ok(())
}

fn abort(dq: usize, flags: u32) -> R<()> {
    check_flags(flags, 0)?;
    let q = queue(dq)?;
    match q.state() {
        SCI_DMAQUEUE_POSTED => {
            q.abort.store(true, Ordering::Release);
            let _ = q.wake.wait_until(|| q.state() != SCI_DMAQUEUE_POSTED, None);
        }
        SCI_DMAQUEUE_DONE | SCI_DMAQUEUE_ERROR | SCI_DMAQUEUE_ABORTED => {}
        _ => return Err(SCI_ERR_ILLEGAL_OPERATION),
    }
    // The transfer has ended (aborted between pieces, or before).  One with a callback
    // was released by the DMA thread before its state changed (here, a next transfer its
    // callback started may be in flight already).
    if !q.with_cb.load(Ordering::Acquire) {
        check_release(dq, "SCIAbortDMAQueue");
    }
    Ok(())
}

fn wait(dq: usize, timeout: u32, flags: u32) -> R<u32> {
    check_flags(flags, 0)?;
    let q = queue(dq)?;
    match q.state() {
        SCI_DMAQUEUE_IDLE | SCI_DMAQUEUE_GATHER => return Err(SCI_ERR_ILLEGAL_OPERATION),
        SCI_DMAQUEUE_POSTED if q.with_cb.load(Ordering::Acquire) => return Err(SCI_ERR_ILLEGAL_OPERATION),
        _ => {}
    }
    if injected_timeout(timeout) {
        return Err(SCI_ERR_TIMEOUT);
    }
    match q.state() {
        SCI_DMAQUEUE_POSTED => {}
        s => {
            check_release(dq, "SCIWaitForDMAQueue");
            return Ok(s);
        }
    }
    let t = (timeout != SCI_INFINITE_TIMEOUT).then(|| Duration::from_millis(timeout as u64));
    match softnic_fabric::cancel::point(|| q.wake.wait_until(|| q.state() != SCI_DMAQUEUE_POSTED, t)) {
        Ok(()) => {
            check_release(dq, "SCIWaitForDMAQueue");
            Ok(q.state())
        }
        Err(softnic_fabric::Error::Timeout) => Err(SCI_ERR_TIMEOUT),
        Err(_) => Err(SCI_ERR_SYSTEM),
    }
}

// ---- SISCI 1.10: enqueue, post, reset ---------------------------------------------------

#[allow(clippy::too_many_arguments)]
fn enqueue(dq: usize, lseg: usize, rseg: usize, loff: u32, roff: u32, size: u32, flags: u32) -> R<u32> {
    check_flags(flags, SCI_FLAG_DMA_READ | SCI_FLAG_DMA_POST)?;
    let q = queue(dq)?;
    let ls = segment::seg(lseg)?;
    let rs = remote::rseg(rseg)?;
    if size == 0 {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    let mut g = q.gather.lock().unwrap_or_else(|e| e.into_inner());
    let s = q.state();
    match s {
        SCI_DMAQUEUE_POSTED => return Err(SCI_ERR_ILLEGAL_OPERATION),
        SCI_DMAQUEUE_GATHER => {}
        _ => {
            g.clear();
            if q.state.compare_exchange(s, SCI_DMAQUEUE_GATHER, Ordering::AcqRel, Ordering::Acquire).is_err() {
                return Err(SCI_ERR_ILLEGAL_OPERATION);
            }
            // Gathering begins only when the last transfer is over.
            if softnic_fabric::check::enabled() {
                check_release(dq, "SCIEnqueueDMATransfer");
            }
        }
    }
    if g.len() >= q.max_entries as usize {
        return Err(SCI_ERR_MAX_ENTRIES);
    }
    g.push(piece(Some(&ls), std::ptr::null_mut(), &rs, loff as usize, roff as usize, size as usize, flags & SCI_FLAG_DMA_READ != 0)?);
    if flags & SCI_FLAG_DMA_POST != 0 {
        let pieces = std::mem::take(&mut *g);
        drop(g);
        launch(&q, pieces, None, std::ptr::null_mut(), 0, true, "SCIEnqueueDMATransfer")?;
    }
    Ok(q.state())
}

fn post(dq: usize, cb: CbDma, arg: *mut c_void, flags: u32) -> R<()> {
    check_flags(flags, SCI_FLAG_USE_CALLBACK)?;
    let q = queue(dq)?;
    let mut g = q.gather.lock().unwrap_or_else(|e| e.into_inner());
    if q.state() != SCI_DMAQUEUE_GATHER {
        return Err(SCI_ERR_ILLEGAL_OPERATION);
    }
    let pieces = std::mem::take(&mut *g);
    drop(g);
    launch(&q, pieces, cb, arg, flags, true, "SCIPostDMAQueue")
}

fn reset(dq: usize, flags: u32) -> R<()> {
    check_flags(flags, 0)?;
    let q = queue(dq)?;
    let mut g = q.gather.lock().unwrap_or_else(|e| e.into_inner());
    if q.state() == SCI_DMAQUEUE_POSTED {
        return Err(SCI_ERR_ILLEGAL_OPERATION);
    }
    g.clear();
    q.set(SCI_DMAQUEUE_IDLE);
    drop(g);
    // Reset only when no transfer is POSTED: the last one is over.
    check_release(dq, "SCIResetDMAQueue");
    Ok(())
}

sisci_export! {
    fn SCICreateDMAQueue(sd: usize, dq: *mut usize, localAdapterNo: u32, maxEntries: u32, flags: u32, error: *mut SciErr) {
        done("SCICreateDMAQueue", error, create(sd, dq, localAdapterNo, maxEntries, flags))
    }
}

sisci_export! {
    fn SCIRemoveDMAQueue(dq: usize, flags: u32, error: *mut SciErr) {
        done("SCIRemoveDMAQueue", error, remove(dq, flags))
    }
}

sisci_export! {
    fn SCIAbortDMAQueue(dq: usize, flags: u32, error: *mut SciErr) {
        done("SCIAbortDMAQueue", error, abort(dq, flags))
    }
}

sisci_export! {
    /// The queue's state (SCI_DMAQUEUE_ERROR for an invalid handle).
    fn SCIDMAQueueState(dq: usize) -> u32 {
        let st = QUEUES.get(dq).map_or(SCI_DMAQUEUE_ERROR, |q| q.state());
        if matches!(st, SCI_DMAQUEUE_DONE | SCI_DMAQUEUE_ERROR | SCI_DMAQUEUE_ABORTED) {
            check_release(dq, "SCIDMAQueueState");
        }
        st
    }
}

sisci_export! {
    blocking fn SCIWaitForDMAQueue(dq: usize, timeout: u32, flags: u32, error: *mut SciErr) -> u32 {
        let r = wait(dq, timeout, flags);
        let fail = QUEUES.get(dq).map_or(SCI_DMAQUEUE_ERROR, |q| q.state());
        finish("SCIWaitForDMAQueue", error, r, fail)
    }
}

sisci_export! {
    blocking fn SCIStartDmaTransfer(dq: usize, localSegment: usize, remoteSegment: usize, localOffset: usize, size: usize, remoteOffset: usize, callback: CbDma, callbackArg: *mut c_void, flags: u32, error: *mut SciErr) now {
        start_now(dq, localSegment, remoteSegment, localOffset, size, remoteOffset, flags).map(|()| set_error(error, SCI_ERR_OK))
    } {
        done("SCIStartDmaTransfer", error, start("SCIStartDmaTransfer", dq, localSegment, std::ptr::null_mut(), remoteSegment, localOffset, size, remoteOffset, callback, callbackArg, flags))
    }
}

sisci_export! {
    blocking fn DISStartDmaTransfer(dq: usize, localSegment: usize, remoteSegment: usize, localOffset: usize, size: usize, remoteOffset: usize, callback: CbDma, callbackArg: *mut c_void, flags: u32, error: *mut SciErr) {
        done("DISStartDmaTransfer", error, start("DISStartDmaTransfer", dq, localSegment, std::ptr::null_mut(), remoteSegment, localOffset, size, remoteOffset, callback, callbackArg, flags))
    }
}

sisci_export! {
    blocking fn SCIStartDmaTransferMem(dq: usize, localAddress: *mut c_void, remoteSegment: usize, size: usize, remoteOffset: usize, callback: CbDma, callbackArg: *mut c_void, flags: u32, error: *mut SciErr) {
        let r = if localAddress.is_null() { Err(SCI_ERR_ILLEGAL_ADDRESS) } else { start("SCIStartDmaTransferMem", dq, 0, localAddress as *mut u8, remoteSegment, 0, size, remoteOffset, callback, callbackArg, flags) };
        done("SCIStartDmaTransferMem", error, r)
    }
}

sisci_export! {
    blocking fn SCIStartDmaTransferVec(dq: usize, localSegment: usize, remoteSegment: usize, vecLength: usize, disDmaVec: *const DisDmaVec, callback: CbDma, callbackArg: *mut c_void, flags: u32, error: *mut SciErr) {
        done("SCIStartDmaTransferVec", error, start_vec("SCIStartDmaTransferVec", dq, localSegment, remoteSegment, vecLength, disDmaVec, callback, callbackArg, flags))
    }
}

sisci_export! {
    blocking fn DISStartDmaTransferVec(dq: usize, localSegment: usize, remoteSegment: usize, vecLength: usize, disDmaVec: *const DisDmaVec, callback: CbDma, callbackArg: *mut c_void, flags: u32, error: *mut SciErr) {
        done("DISStartDmaTransferVec", error, start_vec("DISStartDmaTransferVec", dq, localSegment, remoteSegment, vecLength, disDmaVec, callback, callbackArg, flags))
    }
}

sisci_export! {
    /// SISCI 1.10: adds a transfer to the queue's gather list (state GATHER).
    fn SCIEnqueueDMATransfer(dq: usize, localSegment: usize, remoteSegment: usize, localOffset: u32, remoteOffset: u32, size: u32, flags: u32, error: *mut SciErr) -> u32 {
        let r = enqueue(dq, localSegment, remoteSegment, localOffset, remoteOffset, size, flags);
        let fail = QUEUES.get(dq).map_or(SCI_DMAQUEUE_ERROR, |q| q.state());
        finish("SCIEnqueueDMATransfer", error, r, fail)
    }
}

sisci_export! {
    /// SISCI 1.10: starts the gathered transfers.
    blocking fn SCIPostDMAQueue(dq: usize, callback: CbDma, callbackArg: *mut c_void, flags: u32, error: *mut SciErr) {
        done("SCIPostDMAQueue", error, post(dq, callback, callbackArg, flags))
    }
}

sisci_export! {
    /// SISCI 1.10: back to IDLE, dropping gathered transfers.
    fn SCIResetDMAQueue(dq: usize, flags: u32, error: *mut SciErr) {
        done("SCIResetDMAQueue", error, reset(dq, flags))
    }
}

// ---- DMA channels -------------------------------------------------------------------------

/// Channels of each type per adapter (ids 0..CHANNELS-1).
pub const CHANNELS: u32 = 4;

pub struct Channel {
    pub handle: usize,
    desc: Arc<Desc>,
    ty: u32,
    id: u32,
    shared: bool,
    queues: Mutex<Vec<Weak<Queue>>>,
    prepared: Mutex<Vec<usize>>,
}

pub static CHANS: Table<Channel> = Table::new(11);

impl Drop for Channel {
    fn drop(&mut self) {
        self.desc.release(Kind::DmaChannel);
    }
}

fn request_channel(sd: usize, ch: *mut usize, adapter: u32, ty: u32, id: u32, flags: u32) -> R<()> {
    let d = desc::desc(sd)?;
    check_flags(flags, SCI_FLAG_DMA_CHANNEL_SHARED)?;
    check_adapter(adapter)?;
    if ch.is_null() || !(SCI_DMA_TYPE_DONTCARE..=SCI_DMA_TYPE_SLAVE).contains(&ty) {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    let ty = if ty == SCI_DMA_TYPE_DONTCARE { SCI_DMA_TYPE_ADAPTER } else { ty };
    if matches!(ty, SCI_DMA_TYPE_SLAVE | SCI_DMA_TYPE_TRANSPARENT) {
        return Err(SCI_ERR_DMA_NOT_AVAILABLE);
    }
    let shared = flags & SCI_FLAG_DMA_CHANNEL_SHARED != 0;
    let taken: Vec<(u32, bool)> = CHANS.all().iter().filter(|c| c.ty == ty).map(|c| (c.id, c.shared)).collect();
    let usable = |i: u32| taken.iter().all(|&(j, s)| j != i || (shared && s));
    let id = if id == SCI_DMA_CHANNEL_ID_DONTCARE {
        (0..CHANNELS).find(|&i| usable(i)).ok_or(SCI_ERR_DMA_NOT_AVAILABLE)?
    } else if id < CHANNELS && usable(id) {
        id
    } else {
        return Err(SCI_ERR_DMA_NOT_AVAILABLE);
    };
    d.acquire(Kind::DmaChannel)?;
    let c = Channel { handle: 0, desc: d.clone(), ty, id, shared, queues: Mutex::new(Vec::new()), prepared: Mutex::new(Vec::new()) };
    let (h, _) = CHANS.insert_with(move |h| {
        let mut c = c;
        c.handle = h;
        Arc::new(c)
    }).ok_or(SCI_ERR_NOSPC)?;
    out(ch, h)
}

fn return_channel(ch: usize) -> R<()> {
    let mut busy = false;
    let c = CHANS.remove_if(ch, |c| {
        busy = c.queues.lock().unwrap_or_else(|e| e.into_inner()).iter().filter_map(|q| q.upgrade()).any(|q| q.state() == SCI_DMAQUEUE_POSTED);
        !busy
    });
    if busy {
        return Err(SCI_ERR_BUSY);
    }
    c.map(|_| ()).ok_or(SCI_ERR_ILLEGAL_PARAMETER)
}

fn assign(ch: usize, dq: usize, flags: u32) -> R<()> {
    check_flags(flags, 0)?;
    let c = CHANS.get(ch).ok_or(SCI_ERR_ILLEGAL_PARAMETER)?;
    let q = queue(dq)?;
    if q.state() == SCI_DMAQUEUE_POSTED {
        return Err(SCI_ERR_ILLEGAL_OPERATION);
    }
    c.queues.lock().unwrap_or_else(|e| e.into_inner()).push(Arc::downgrade(&q));
    Ok(())
}

/// SCIPrepare/Unprepare{Local,Remote}SegmentForDMA: bookkeeping for system DMA
/// channels (the only ones that need it); other channel types are
/// SCI_ERR_ILLEGAL_OPERATION, as is unpreparing what was not prepared.
fn prepare_for_dma(ch: usize, seg_handle: usize, remote: bool, prepare: bool, flags: u32) -> R<()> {
    check_flags(flags, 0)?;
    let c = CHANS.get(ch).ok_or(SCI_ERR_ILLEGAL_PARAMETER)?;
    if remote {
        let r = remote::rseg(seg_handle)?;
        if prepare && r.maps.load(Ordering::Acquire) == 0 {
            return Err(SCI_ERR_ILLEGAL_OPERATION);
        }
    } else {
        segment::seg(seg_handle)?;
    }
    if c.ty != SCI_DMA_TYPE_SYSTEM {
        return Err(SCI_ERR_ILLEGAL_OPERATION);
    }
    let mut p = c.prepared.lock().unwrap_or_else(|e| e.into_inner());
    let at = p.iter().position(|&h| h == seg_handle);
    match (prepare, at) {
        (true, None) => p.push(seg_handle),
        (true, Some(_)) => {}
        (false, Some(i)) => {
            p.swap_remove(i);
        }
        (false, None) => return Err(SCI_ERR_ILLEGAL_OPERATION),
    }
    Ok(())
}

sisci_export! {
    fn SCIRequestDMAChannel(sd: usize, channel: *mut usize, localAdapterNo: u32, type_: u32, channelId: u32, flags: u32, error: *mut SciErr) {
        done("SCIRequestDMAChannel", error, request_channel(sd, channel, localAdapterNo, type_, channelId, flags))
    }
}

sisci_export! {
    fn SCIReturnDMAChannel(channel: usize, error: *mut SciErr) {
        done("SCIReturnDMAChannel", error, return_channel(channel))
    }
}

sisci_export! {
    fn SCIAssignDMAChannel(channel: usize, dq: usize, flags: u32, error: *mut SciErr) {
        done("SCIAssignDMAChannel", error, assign(channel, dq, flags))
    }
}

sisci_export! {
    /// The channel's type (SCI_DMA_TYPE_DONTCARE for an invalid handle).
    fn SCIGetDMAChannelType(channel: usize) -> u32 {
        CHANS.get(channel).map_or(SCI_DMA_TYPE_DONTCARE, |c| c.ty)
    }
}

sisci_export! {
    fn SCIPrepareLocalSegmentForDMA(channel: usize, local_segment: usize, flags: u32, error: *mut SciErr) {
        done("SCIPrepareLocalSegmentForDMA", error, prepare_for_dma(channel, local_segment, false, true, flags))
    }
}

sisci_export! {
    fn SCIUnprepareLocalSegmentForDMA(channel: usize, local_segment: usize, flags: u32, error: *mut SciErr) {
        done("SCIUnprepareLocalSegmentForDMA", error, prepare_for_dma(channel, local_segment, false, false, flags))
    }
}

sisci_export! {
    fn SCIPrepareRemoteSegmentForDMA(channel: usize, remote_segment: usize, flags: u32, error: *mut SciErr) {
        done("SCIPrepareRemoteSegmentForDMA", error, prepare_for_dma(channel, remote_segment, true, true, flags))
    }
}

sisci_export! {
    fn SCIUnprepareRemoteSegmentForDMA(channel: usize, remote_segment: usize, flags: u32, error: *mut SciErr) {
        done("SCIUnprepareRemoteSegmentForDMA", error, prepare_for_dma(channel, remote_segment, true, false, flags))
    }
}

