//! Maps, sequences and the PIO calls (SCIMemCpy, SCIMemWrite, barriers).
//!
//! **Maps.**  A map of a local segment points into the segment's memory.  A map of a
//! remote segment whose owner runs on this machine (any virtual node) is a mapping of the
//! owner's memory itself: loads and stores through the pointer are PIO, seen by the owner
//! and every other map at once.  The window [offset, offset+size) must lie in the segment
//! (SCI_ERR_OUT_OF_RANGE); any offset and size are accepted (no alignment is required;
//! size 0 is SCI_ERR_SIZE_ALIGNMENT: there is nothing to map).  SCI_FLAG_READONLY_MAP
//! makes a remote map's pages read-only (a local map is the segment's own memory and stays
//! writable); SCI_FLAG_FIXED_MAP_ADDR's address is a hint we do not take (the reference
//! only promises to try it); the other mapping hints have no effect.  The hardware
//! features LOCK_OPERATION, CONDITIONAL_INTERRUPT_MAP and UNCONDITIONAL_DATA_INTERRUPT_MAP
//! are SCI_ERR_FLAG_NOT_IMPLEMENTED.  A map of a segment on another machine, and a
//! broadcast map of reflective memory: see crate::shadow.  A remote map is one of the
//! importer's uses of the segment (crate::service, "Uses"): the owner cannot remove the
//! segment while it exists; it gives the segment back when unmapped.
//!
//! **Ordering.**  Stores through a map of this machine are coherent CPU stores;
//! SCIFlush, SCIStoreBarrier and SCICheckSequence (default flags) are full fences, so
//! data stored before them is visible before anything stored after (a flag that
//! publishes it, an interrupt).  SCIMemCpy and SCIMemWrite complete before returning.
//! While the process has no map whose stores are shipped, SCIFlush and SCIStoreBarrier
//! are only that (the PIO path: no cancellation point, nothing looked up).
//!
//! **Sequences** report SCI_SEQ_OK while the connection is good; once the owner is gone
//! or withdrew the segment, SCIStartSequence answers SCI_SEQ_PENDING and
//! SCICheckSequence SCI_SEQ_NOT_RETRIABLE.  A map is unmapped also while sequences of it
//! exist (programs rarely remove theirs): they then fail (see [`Seq`]).

use crate::broadcast::Wait;
use crate::desc::{Desc, Kind};
use crate::handles::Table;
use crate::remote::{self, RemoteSeg};
use crate::segment::{self, LocalSeg};
use crate::shadow::Shadow;
use crate::sisci_export;
use crate::status::*;
use crate::types::*;
use std::ffi::c_void;
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::{Arc, Weak};

pub enum Of {
    Local(Arc<LocalSeg>),
    Remote(Arc<RemoteSeg>),
}

pub struct Map {
    pub handle: usize,
    pub of: Of,
    pub ptr: *mut u8,
    pub offset: usize,
    pub size: usize,
    pub readonly: bool,
    _view: Option<softnic_fabric::rma::RegionView>,
    /// Our own segment when we map it through a connection to ourselves (the map points
    /// into its memory, which must outlive the segment's removal like a peer's mapping).
    _keep: Option<Arc<LocalSeg>>,
    pub shadow: Option<Arc<Shadow>>,
    /// The map no longer holds its segment (unmapped, or never made).
    released: AtomicBool,
}

// SAFETY: the pointer is into memory this map keeps mapped (its view, or a segment that
// cannot be removed while mapped); access through it is the program's own PIO.
unsafe impl Send for Map {}
unsafe impl Sync for Map {}

impl Drop for Map {
    fn drop(&mut self) {
        self.release();
    }
}

pub static MAPS: Table<Map> = Table::new(4);

/// Maps alive in this process whose stores are shipped (crate::shadow: maps of another
/// machine's memory, broadcast maps): SCIFlush and SCIStoreBarrier have nothing to wait
/// for while there is none.
pub static SHADOWS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Broadcast maps (reloaded when an interrupt is delivered).
static REFLECTIVE_SHADOWS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Called when an interrupt is delivered, before the program hears of it: reloads this
/// process's mirrors of reflective memory that other machines share (and the machine's
/// copies with them) and its broadcast maps, so that data written into the group before
/// the trigger (which shipped it) is seen, as on the hardware, where the data reach every
/// member before the interrupt.  (Maps of another machine's plain segment are reloaded by
/// sequences, as documented.)
pub fn reload_reflective() {
    crate::broadcast::reload_all();
    if REFLECTIVE_SHADOWS.load(Ordering::Acquire) == 0 {
        return;
    }
    for m in MAPS.all() {
        if m.reflective() {
            let _ = m.refresh();
        }
    }
}

/// Ships what the program stored through shadow maps: a trigger must not overtake the
/// data stored before it (on the hardware the interrupt write follows the data writes).
pub fn flush_shadows() {
    if SHADOWS.load(Ordering::Acquire) == 0 {
        return;
    }
    for m in MAPS.all() {
        if m.shadow.is_some() {
            let _ = m.flush(Wait::Yes);
        }
    }
}

pub fn map(h: usize) -> R<Arc<Map>> {
    MAPS.get(h).ok_or(SCI_ERR_ILLEGAL_PARAMETER)
}

impl Map {
    /// Is the memory behind the map still served (owner alive, not withdrawn)?
    pub fn healthy(&self) -> bool {
        match &self.of {
            Of::Local(_) => true,
            Of::Remote(r) => r.healthy(),
        }
    }
    pub fn is_remote(&self) -> bool {
        matches!(self.of, Of::Remote(_))
    }
    /// The map's bytes [off, off+n) (bounds checked).
    pub fn range(&self, off: usize, n: usize) -> R<*mut u8> {
        match off.checked_add(n) {
            Some(e) if e <= self.size => {}
            _ => return Err(SCI_ERR_OUT_OF_RANGE),
        }
        // SAFETY: off + n <= size: inside the window.
        Ok(unsafe { self.ptr.add(off) })
    }
    /// A broadcast map.
    fn reflective(&self) -> bool {
        matches!((&self.shadow, &self.of), (Some(_), Of::Remote(r)) if r.flags & SCI_FLAG_BROADCAST != 0)
    }
    /// The reflective-memory group of a member's local map (its memory is the node's own
    /// copy).
    pub fn group(&self) -> Option<&Arc<crate::broadcast::Group>> {
        match &self.of {
            Of::Local(s) => s.group.as_ref(),
            Of::Remote(_) => None,
        }
    }
    /// Pushes the program's stores through a shadow map to the owner (or, through a
    /// broadcast map, to the group); a fence for other maps (a store through a member's
    /// local map stays in its copy).
    pub fn flush(&self, wait: Wait) -> R<()> {
        fence(Ordering::SeqCst);
        match &self.shadow {
            Some(sh) => sh.flush(wait),
            None => Ok(()),
        }
    }
    /// Ships local stores and reloads the copy (shadows and broadcast maps); a member's
    /// local map gets what other machines wrote to the group.
    fn refresh(&self) -> R<()> {
        if let Some(sh) = &self.shadow {
            sh.flush(Wait::Yes).and_then(|_| sh.refresh())
        } else if let Some(g) = self.group() {
            g.sync(self.offset, self.offset + self.size, true)
        } else {
            Ok(())
        }
    }
    /// Lets go of the segment (once): its map count, the importer's use at the owner,
    /// the counters above.
    fn release(&self) {
        if self.released.swap(true, Ordering::AcqRel) {
            return;
        }
        if self.shadow.is_some() {
            SHADOWS.fetch_sub(1, Ordering::AcqRel);
        }
        if self.reflective() {
            REFLECTIVE_SHADOWS.fetch_sub(1, Ordering::AcqRel);
        }
        match &self.of {
            Of::Local(s) => {
                s.maps.fetch_sub(1, Ordering::AcqRel);
            }
            Of::Remote(s) => s.map_end(),
        }
    }
}

const MAP_FLAGS: u32 = SCI_FLAG_FIXED_MAP_ADDR
    | SCI_FLAG_READONLY_MAP
    | SCI_FLAG_LOCK_OPERATION
    | SCI_FLAG_CONDITIONAL_INTERRUPT_MAP
    | SCI_FLAG_UNCONDITIONAL_DATA_INTERRUPT_MAP
    | SCI_FLAG_IO_MAP_IOSPACE
    | SCI_FLAG_READ_PREFETCH_AGGR_HOLD_MAP
    | SCI_FLAG_READ_PREFETCH_NO_HOLD_MAP
    | SCI_FLAG_DMOVE_MAP
    | SCI_FLAG_NO_MEMORY_LOOPBACK_MAP
    | SCI_FLAG_WRITES_DISABLE_GATHER_MAP
    | SCI_FLAG_SHARED_MAP
    | SCI_FLAG_DISABLE_128_BYTES_PACKETS
    | SCI_FLAG_WRITE_BACK_CACHE_MAP
    | SCI_FLAG_BROADCAST;

fn map_flags(flags: u32) -> R<()> {
    check_flags(flags, MAP_FLAGS)?;
    if flags & (SCI_FLAG_LOCK_OPERATION | SCI_FLAG_CONDITIONAL_INTERRUPT_MAP | SCI_FLAG_UNCONDITIONAL_DATA_INTERRUPT_MAP) != 0 {
        return Err(SCI_ERR_FLAG_NOT_IMPLEMENTED);
    }
    Ok(())
}

fn window(seg_size: usize, offset: usize, size: usize) -> R<()> {
    if size == 0 {
        return Err(SCI_ERR_SIZE_ALIGNMENT);
    }
    match offset.checked_add(size) {
        Some(e) if e <= seg_size => Ok(()),
        _ => Err(SCI_ERR_OUT_OF_RANGE),
    }
}

fn publish(m: Map, out_map: *mut usize) -> R<*mut u8> {
    let (_, m) = MAPS.insert_with(move |h| {
        let mut m = m;
        m.handle = h;
        Arc::new(m)
    }).ok_or(SCI_ERR_NOSPC)?;
    out(out_map, m.handle)?;
    Ok(m.ptr)
}

fn map_local(h: usize, out_map: *mut usize, offset: usize, size: usize, flags: u32) -> R<*mut u8> {
    map_flags(flags)?;
    let s = segment::seg(h)?;
    if out_map.is_null() {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    if flags & SCI_FLAG_BROADCAST != 0 && s.flags & SCI_FLAG_BROADCAST == 0 {
        return Err(SCI_ERR_ILLEGAL_FLAG);
    }
    if s.flags & SCI_FLAG_DMA_GLOBAL != 0 {
        return Err(SCI_ERR_ILLEGAL_OPERATION);
    }
    let d = s.mem()?;
    window(d.len, offset, size)?;
    s.maps.fetch_add(1, Ordering::AcqRel);
    if s.removed.load(Ordering::Acquire) {
        s.maps.fetch_sub(1, Ordering::AcqRel);
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    // SAFETY: offset + size <= len: inside the segment's memory.
    let ptr = unsafe { d.ptr.add(offset) };
    let m = Map { handle: 0, of: Of::Local(s), ptr, offset, size, readonly: flags & SCI_FLAG_READONLY_MAP != 0, _view: None, _keep: None, shadow: None, released: AtomicBool::new(false) };
    publish(m, out_map)
}

fn map_remote(h: usize, out_map: *mut usize, offset: usize, size: usize, flags: u32) -> R<*mut u8> {
    map_flags(flags)?;
    let s = remote::rseg(h)?;
    if out_map.is_null() {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    if flags & SCI_FLAG_BROADCAST != 0 && s.flags & SCI_FLAG_BROADCAST == 0 {
        return Err(SCI_ERR_ILLEGAL_FLAG);
    }
    window(s.size, offset, size)?;
    if !s.healthy() {
        return Err(SCI_ERR_NOT_CONNECTED);
    }
    // The owner's segment is not removed while mapped (crate::service, "Uses").
    s.map_begin()?;
    // Until the map is made, a failure gives the use back here; after, the map does.
    let mut made = false;
    let r = (|| {
        let readonly = flags & SCI_FLAG_READONLY_MAP != 0;
        let keep = if s.data_owner.pid() == std::process::id() as i32 { s.data_loc.as_ref().and_then(segment::by_loc) } else { None };
        let (ptr, view, shadow) = match s.data_loc {
            Some(loc) if !s.data_owner.is_remote() => {
                let v = softnic_fabric::rma::map_region(&s.data_owner, &loc).map_err(|e| reach_err(e, SCI_ERR_NOT_CONNECTED))?;
                if (v.len() as u64) < (offset + size) as u64 {
                    return Err(SCI_ERR_OUT_OF_RANGE);
                }
                if readonly && s.data_owner.pid() != std::process::id() as i32 {
                    // SAFETY: the whole view is our own mapping of the owner's memfd.
                    unsafe { libc::mprotect(v.as_ptr() as *mut c_void, v.len(), libc::PROT_READ) };
                }
                // SAFETY: offset + size <= view length (checked).
                let p = unsafe { v.as_ptr().add(offset) };
                (p, Some(v), None)
            }
            // Another machine's memory, or a broadcast map: a shadow.
            _ => {
                let sh = Shadow::new(&s, offset, size)?;
                (sh.ptr(), None, Some(sh))
            }
        };
        let m = Map { handle: 0, of: Of::Remote(s.clone()), ptr, offset, size, readonly, _view: view, _keep: keep, shadow, released: AtomicBool::new(true) };
        if m.shadow.is_some() {
            SHADOWS.fetch_add(1, Ordering::AcqRel);
        }
        if m.reflective() {
            REFLECTIVE_SHADOWS.fetch_add(1, Ordering::AcqRel);
        }
        // From here the map holds the segment (and gives it back when released).
        m.released.store(false, Ordering::Release);
        made = true;
        publish(m, out_map)
    })();
    if r.is_err() && !made {
        s.map_end();
    }
    r
}

fn unmap(h: usize, flags: u32) -> R<()> {
    check_flags(flags, 0)?;
    let m = MAPS.remove(h).ok_or(SCI_ERR_ILLEGAL_PARAMETER)?;
    let shipped = m.flush(Wait::Yes);
    m.release();
    // Sequences of the map stay (programs rarely remove them), holding nothing: their
    // calls fail from now on (see Seq).
    for q in SEQS.all() {
        if q.map.as_ptr() == Arc::as_ptr(&m) {
            q.uncount();
        }
    }
    shipped
}

// ---- sequences ----------------------------------------------------------------------

/// A sequence: error checking of a remote map.  After its map is unmapped it holds
/// nothing (no resource of its virtual device either) and its calls answer
/// SCI_ERR_ILLEGAL_OPERATION (SCIStartSequence SCI_SEQ_PENDING, SCICheckSequence
/// SCI_SEQ_NOT_RETRIABLE), until SCIRemoveSequence.
pub struct Seq {
    pub handle: usize,
    pub map: Weak<Map>,
    desc: Arc<Desc>,
    counted: AtomicBool,
}

impl Seq {
    /// Its map, while mapped.
    fn live_map(&self) -> R<Arc<Map>> {
        self.map.upgrade().filter(|m| !m.released.load(Ordering::Acquire)).ok_or(SCI_ERR_ILLEGAL_OPERATION)
    }
    /// No longer a resource of its virtual device.
    fn uncount(&self) {
        if self.counted.swap(false, Ordering::AcqRel) {
            self.desc.release(Kind::Sequence);
        }
    }
}

impl Drop for Seq {
    fn drop(&mut self) {
        self.uncount();
    }
}

pub static SEQS: Table<Seq> = Table::new(5);

fn create_seq(h: usize, seq: *mut usize, flags: u32) -> R<()> {
    check_flags(flags, 0)?;
    let m = map(h)?;
    if seq.is_null() {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    let Of::Remote(r) = &m.of else { return Err(SCI_ERR_ILLEGAL_PARAMETER) };
    r.desc.acquire(Kind::Sequence)?;
    let (map, desc) = (Arc::downgrade(&m), r.desc.clone());
    let (h, _) = SEQS.insert_with(move |h| Arc::new(Seq { handle: h, map, desc, counted: AtomicBool::new(true) })).ok_or(SCI_ERR_NOSPC)?;
    out(seq, h)
}

fn start_seq(h: usize, flags: u32) -> R<u32> {
    check_flags(flags, 0)?;
    let s = SEQS.get(h).ok_or(SCI_ERR_ILLEGAL_PARAMETER)?;
    let m = s.live_map()?;
    if !m.healthy() {
        return Ok(SCI_SEQ_PENDING);
    }
    if m.refresh().is_err() {
        return Ok(SCI_SEQ_PENDING);
    }
    Ok(SCI_SEQ_OK)
}

fn check_seq(h: usize, flags: u32) -> R<u32> {
    check_flags(flags, SCI_FLAG_NO_FLUSH | SCI_FLAG_NO_STORE_BARRIER)?;
    let s = SEQS.get(h).ok_or(SCI_ERR_ILLEGAL_PARAMETER)?;
    let m = s.live_map()?;
    if flags & (SCI_FLAG_NO_FLUSH | SCI_FLAG_NO_STORE_BARRIER) != (SCI_FLAG_NO_FLUSH | SCI_FLAG_NO_STORE_BARRIER) {
        fence(Ordering::SeqCst);
        if m.refresh().is_err() {
            return Ok(SCI_SEQ_NOT_RETRIABLE);
        }
    }
    if !m.healthy() {
        return Ok(SCI_SEQ_NOT_RETRIABLE);
    }
    Ok(SCI_SEQ_OK)
}

/// SCIFlush / SCIStoreBarrier: everything stored through the sequence's map before is
/// visible at the owner (or, through a broadcast map, in every member's copy) when it
/// returns.  The wait for another process's pass over the group is the call's
/// cancellation point (nothing is written yet then).
fn barrier(h: usize) {
    fence(Ordering::SeqCst);
    if let Some(m) = SEQS.get(h).and_then(|s| s.live_map().ok()) {
        let _ = m.flush(Wait::Cancellable);
    }
}

// ---- block copies -------------------------------------------------------------------

/// Copies between program memory `mem` and the map's window at `off`.
pub fn memcpy(m: &Map, mem: *mut u8, off: usize, size: usize, read: bool) -> R<()> {
    let p = m.range(off, size)?;
    if size == 0 {
        return Ok(());
    }
    if mem.is_null() {
        return Err(SCI_ERR_ILLEGAL_ADDRESS);
    }
    if !read && m.readonly {
        return Err(SCI_ERR_ACCESS);
    }
    if let Some(sh) = &m.shadow {
        return sh.copy(mem, off, size, read);
    }
    // A member's local map: what other machines wrote to the group first (what is
    // written through it stays in the node's copy).
    if let (Some(g), true) = (m.group(), read) {
        g.sync(m.offset + off, m.offset + off + size, true)?;
    }
    // SAFETY: p..p+size is inside the map (checked); `mem` is the program's buffer of
    // `size` bytes (its contract, as for memcpy); `copy` tolerates overlap.
    unsafe {
        if read {
            std::ptr::copy(p, mem, size);
        } else {
            std::ptr::copy(mem, p, size);
        }
    }
    fence(Ordering::SeqCst);
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn mem_cpy(seq: usize, mem: *mut c_void, h: usize, off: usize, size: usize, flags: u32) -> R<()> {
    check_flags(flags, SCI_FLAG_BLOCK_READ | SCI_FLAG_ERROR_CHECK)?;
    let m = map(h)?;
    let checked = if flags & SCI_FLAG_ERROR_CHECK != 0 { Some(SEQS.get(seq).ok_or(SCI_ERR_ILLEGAL_PARAMETER)?.live_map()?) } else { None };
    memcpy(&m, mem as *mut u8, off, size, flags & SCI_FLAG_BLOCK_READ != 0)?;
    if let Some(s) = checked {
        if !s.healthy() || !m.healthy() {
            return Err(SCI_ERR_TRANSFER_FAILED);
        }
    }
    Ok(())
}

fn mem_write(mem: *mut c_void, remote: *mut c_void, size: usize, flags: u32) -> R<()> {
    check_flags(flags, SCI_FLAG_WRITE_BACK_CACHE_MAP)?;
    if remote.is_null() {
        return Err(SCI_ERR_ILLEGAL_ADDRESS);
    }
    let a = remote as usize;
    let m = MAPS
        .all()
        .into_iter()
        .find(|m| {
            let p = m.ptr as usize;
            a >= p && a < p + m.size
        })
        .ok_or(SCI_ERR_ILLEGAL_ADDRESS)?;
    memcpy(&m, mem as *mut u8, a - m.ptr as usize, size, false)
}

fn cache_sync(h: usize, addr: *mut c_void, len: usize, flags: u32) -> R<()> {
    let m = map(h)?;
    if flags & !(SCI_FLAG_CACHE_FLUSH | SCI_FLAG_CACHE_INVALIDATE) != 0 || flags == 0 {
        return Err(SCI_ERR_ILLEGAL_OPERATION);
    }
    if addr.is_null() {
        return Err(SCI_ERR_ILLEGAL_ADDRESS);
    }
    let a = addr as usize;
    let p = m.ptr as usize;
    if a < p || a.checked_add(len).map_or(true, |e| e > p + m.size) {
        return Err(SCI_ERR_OUT_OF_RANGE);
    }
    fence(Ordering::SeqCst);
    // A copy kept in step with another machine (a shadow, reflective memory): flushing
    // ships the stores, invalidating also reloads it.
    if flags & SCI_FLAG_CACHE_INVALIDATE != 0 {
        m.refresh()
    } else {
        m.flush(Wait::Yes)
    }
}

sisci_export! {
    fn SCIMapLocalSegment(segment: usize, map: *mut usize, offset: usize, size: usize, addr: *mut c_void, flags: u32, error: *mut SciErr) -> *mut c_void {
        let _ = addr;
        finish("SCIMapLocalSegment", error, map_local(segment, map, offset, size, flags), std::ptr::null_mut()) as *mut c_void
    }
}

sisci_export! {
    fn SCIMapRemoteSegment(segment: usize, map: *mut usize, offset: usize, size: usize, addr: *mut c_void, flags: u32, error: *mut SciErr) -> *mut c_void {
        let _ = addr;
        finish("SCIMapRemoteSegment", error, map_remote(segment, map, offset, size, flags), std::ptr::null_mut()) as *mut c_void
    }
}

sisci_export! {
    /// Unmaps, also while sequences of the map exist (see Seq).
    fn SCIUnmapSegment(map: usize, flags: u32, error: *mut SciErr) {
        done("SCIUnmapSegment", error, unmap(map, flags))
    }
}

sisci_export! {
    /// The pointer the map call returned; NULL for an invalid handle.
    fn SCIGetMapPointer(map: usize) -> *mut c_void {
        MAPS.get(map).map_or(std::ptr::null_mut(), |m| m.ptr as *mut c_void)
    }
}

sisci_export! {
    fn SCICreateMapSequence(map: usize, sequence: *mut usize, flags: u32, error: *mut SciErr) {
        done("SCICreateMapSequence", error, create_seq(map, sequence, flags))
    }
}

sisci_export! {
    fn SCIRemoveSequence(sequence: usize, flags: u32, error: *mut SciErr) {
        let r = check_flags(flags, 0).and_then(|_| SEQS.remove(sequence).map(|_| ()).ok_or(SCI_ERR_ILLEGAL_PARAMETER));
        done("SCIRemoveSequence", error, r)
    }
}

sisci_export! {
    fn SCIStartSequence(sequence: usize, flags: u32, error: *mut SciErr) -> u32 {
        finish("SCIStartSequence", error, start_seq(sequence, flags), SCI_SEQ_PENDING)
    }
}

sisci_export! {
    fn SCICheckSequence(sequence: usize, flags: u32, error: *mut SciErr) -> u32 {
        finish("SCICheckSequence", error, check_seq(sequence, flags), SCI_SEQ_NOT_RETRIABLE)
    }
}

sisci_export! {
    /// A fence; with maps whose stores are shipped (crate::shadow) in the process, a
    /// blocking call that ships the sequence's map.
    blocking fn SCIStoreBarrier(sequence: usize, flags: u32) unless { no_shipping() } {
        let _ = flags;
        barrier(sequence)
    }
}

sisci_export! {
    /// As SCIStoreBarrier.
    blocking fn SCIFlush(sequence: usize, flags: u32) unless { no_shipping() } {
        let _ = flags;
        barrier(sequence)
    }
}

sisci_export! {
    /// SISCI 1.10: makes later loads see remote stores (as SCIFlush here).
    blocking fn SCIFlushReadBuffers(sequence: usize) unless { no_shipping() } {
        barrier(sequence)
    }
}

/// The fast path of SCIFlush and SCIStoreBarrier: a fence, and whether that is all (no map
/// of the process ships its stores).  Holds nothing: an asynchronous cancellation may
/// arrive while it runs (see fabric::cancel).
#[inline(always)]
fn no_shipping() -> bool {
    fence(Ordering::SeqCst);
    SHADOWS.load(Ordering::Acquire) == 0
}

sisci_export! {
    fn SCIMemCpy(sequence: usize, memAddr: *mut c_void, remoteMap: usize, remoteOffset: usize, size: usize, flags: u32, error: *mut SciErr) {
        let _span = softnic_fabric::trace::span("sisci", "SCIMemCpy").map(|s| s.arg("bytes", size as u64));
        done("SCIMemCpy", error, mem_cpy(sequence, memAddr, remoteMap, remoteOffset, size, flags))
    }
}

sisci_export! {
    /// SCIMemCpy to two maps (a redundant write); the first failure is reported.
    fn SCIMemCpy_dual(sequence1: usize, sequence2: usize, memAddr: *mut c_void, remoteMap1: usize, remoteMap2: usize, remoteOffset: usize, size: usize, flags: u32, error: *mut SciErr) {
        let r = mem_cpy(sequence1, memAddr, remoteMap1, remoteOffset, size, flags).and_then(|_| mem_cpy(sequence2, memAddr, remoteMap2, remoteOffset, size, flags));
        done("SCIMemCpy_dual", error, r)
    }
}

sisci_export! {
    /// SISCI 1.10: SCIMemCpy without a sequence.
    fn SCIMemCopy(memAddr: *mut c_void, remoteMap: usize, remoteOffset: u32, size: u32, flags: u32, error: *mut SciErr) {
        let _span = softnic_fabric::trace::span("sisci", "SCIMemCopy").map(|s| s.arg("bytes", size as u64));
        let r = check_flags(flags, SCI_FLAG_BLOCK_READ).and_then(|_| mem_cpy(0, memAddr, remoteMap, remoteOffset as usize, size as usize, flags));
        done("SCIMemCopy", error, r)
    }
}

sisci_export! {
    /// Copies a block from a pointer to memory inside a mapped segment.
    fn SCIMemWrite(memAddr: *mut c_void, remoteAddr: *mut c_void, size: usize, flags: u32, error: *mut SciErr) {
        let _span = softnic_fabric::trace::span("sisci", "SCIMemWrite").map(|s| s.arg("bytes", size as u64));
        done("SCIMemWrite", error, mem_write(memAddr, remoteAddr, size, flags))
    }
}

sisci_export! {
    /// SISCI 1.10: copies between two maps (synchronously).
    fn SCITransferBlock(sourceMap: usize, sourceOffset: u32, destinationMap: usize, destinationOffset: u32, size: u32, flags: u32, error: *mut SciErr) {
        let r = (|| {
            check_flags(flags, 0)?;
            let s = map(sourceMap)?;
            let d = map(destinationMap)?;
            let sp = s.range(sourceOffset as usize, size as usize)?;
            d.range(destinationOffset as usize, size as usize)?;
            if size == 0 {
                return Ok(());
            }
            let mut tmp = vec![0u8; size as usize];
            memcpy(&s, tmp.as_mut_ptr(), sourceOffset as usize, size as usize, true)?;
            let _ = sp;
            memcpy(&d, tmp.as_mut_ptr(), destinationOffset as usize, size as usize, false)
        })();
        done("SCITransferBlock", error, r)
    }
}

sisci_export! {
    /// Cache control: x86 and arm64 servers are IO-coherent, so after the checks this
    /// is a fence; on a copy kept in step with another machine, SCI_FLAG_CACHE_FLUSH
    /// ships the stores and SCI_FLAG_CACHE_INVALIDATE also reloads the copy.
    fn SCICacheSync(map: usize, addr: *mut c_void, length: usize, flags: u32, error: *mut SciErr) {
        done("SCICacheSync", error, cache_sync(map, addr, length, flags))
    }
}
