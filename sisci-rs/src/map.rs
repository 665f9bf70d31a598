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
//! are SCI_ERR_FLAG_NOT_IMPLEMENTED.  A map of a segment on another machine: see
//! crate::shadow.
//!
//! **Ordering.**  Stores through a map of this machine are coherent CPU stores;
//! SCIFlush, SCIStoreBarrier and SCICheckSequence (default flags) are full fences, so
//! data stored before them is visible before anything stored after (a flag that
//! publishes it, an interrupt).  SCIMemCpy and SCIMemWrite complete before returning.
//!
//! **Sequences** report SCI_SEQ_OK while the connection is good; once the owner is gone
//! or withdrew the segment, SCIStartSequence answers SCI_SEQ_PENDING and
//! SCICheckSequence SCI_SEQ_NOT_RETRIABLE.

use crate::desc::Kind;
use crate::handles::Table;
use crate::remote::{self, RemoteSeg};
use crate::segment::{self, LocalSeg};
use crate::shadow::Shadow;
use crate::sisci_export;
use crate::status::*;
use crate::types::*;
use std::ffi::c_void;
use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::sync::Arc;

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
    pub seqs: AtomicU32,
}

// SAFETY: the pointer is into memory this map keeps mapped (its view, or a segment that
// cannot be removed while mapped); access through it is the program's own PIO.
unsafe impl Send for Map {}
unsafe impl Sync for Map {}

impl Drop for Map {
    fn drop(&mut self) {
        if self.shadow.is_some() || self.group().is_some() {
            SHADOWS.fetch_sub(1, Ordering::AcqRel);
        }
        if self.reflective_shadow() {
            REFLECTIVE_SHADOWS.fetch_sub(1, Ordering::AcqRel);
        }
        match &self.of {
            Of::Local(s) => s.maps.fetch_sub(1, Ordering::AcqRel),
            Of::Remote(s) => s.maps.fetch_sub(1, Ordering::AcqRel),
        };
    }
}

pub static MAPS: Table<Map> = Table::new(4);

/// Maps alive in this process that are kept in step with other machines: shadows (see
/// crate::shadow) and maps of reflective memory (crate::broadcast).
static SHADOWS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Shadow maps of reflective memory on another machine (a machine without a member).
static REFLECTIVE_SHADOWS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Called when an interrupt is delivered, before the program hears of it: reloads this
/// process's copies of reflective memory that other machines share (this machine's
/// copies of groups, shadows of another machine's), so that data written into the group
/// before the trigger (which shipped it) is seen, as on the hardware, where the data
/// reach every member before the interrupt.  (Maps of another machine's plain segment
/// are reloaded by sequences, as documented.)
pub fn reload_reflective() {
    crate::broadcast::reload_all();
    if REFLECTIVE_SHADOWS.load(Ordering::Acquire) == 0 {
        return;
    }
    for m in MAPS.all() {
        if m.reflective_shadow() {
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
        if m.shadow.is_some() || m.group().is_some() {
            let _ = m.flush();
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
    /// A shadow of another machine's copy of a reflective-memory group.
    fn reflective_shadow(&self) -> bool {
        matches!((&self.shadow, &self.of), (Some(_), Of::Remote(r)) if r.flags & SCI_FLAG_BROADCAST != 0)
    }
    /// The reflective-memory group whose copy on this machine the map points into.
    pub fn group(&self) -> Option<&Arc<crate::broadcast::Group>> {
        match &self.of {
            Of::Local(s) => s.group.as_ref(),
            Of::Remote(r) if self.shadow.is_none() => r.group.as_ref(),
            Of::Remote(_) => None,
        }
    }
    /// Pushes local stores of a shadow map to the owner, and those of a map of
    /// reflective memory towards the other machines (no-op for other mappings).
    pub fn flush(&self) -> R<()> {
        fence(Ordering::SeqCst);
        if let Some(sh) = &self.shadow {
            sh.flush()?;
        } else if let Some(g) = self.group() {
            g.sync(self.offset, self.offset + self.size, false)?;
        }
        Ok(())
    }
    /// Ships local stores and reloads the copy (shadows and reflective memory).
    fn refresh(&self) -> R<()> {
        if let Some(sh) = &self.shadow {
            sh.flush().and_then(|_| sh.refresh())
        } else if let Some(g) = self.group() {
            g.sync(self.offset, self.offset + self.size, true)
        } else {
            Ok(())
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
    let m = Map { handle: 0, of: Of::Local(s), ptr, offset, size, readonly: flags & SCI_FLAG_READONLY_MAP != 0, _view: None, _keep: None, shadow: None, seqs: AtomicU32::new(0) };
    if m.group().is_some() {
        SHADOWS.fetch_add(1, Ordering::AcqRel);
    }
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
    s.maps.fetch_add(1, Ordering::AcqRel);
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
            _ => {
                let sh = Shadow::new(&s, offset, size)?;
                SHADOWS.fetch_add(1, Ordering::AcqRel);
                if s.flags & SCI_FLAG_BROADCAST != 0 {
                    REFLECTIVE_SHADOWS.fetch_add(1, Ordering::AcqRel);
                }
                (sh.ptr(), None, Some(sh))
            }
        };
        let m = Map { handle: 0, of: Of::Remote(s.clone()), ptr, offset, size, readonly, _view: view, _keep: keep, shadow, seqs: AtomicU32::new(0) };
        if m.shadow.is_none() && m.group().is_some() {
            SHADOWS.fetch_add(1, Ordering::AcqRel);
        }
        publish(m, out_map)
    })();
    if r.is_err() {
        s.maps.fetch_sub(1, Ordering::AcqRel);
    }
    r
}

fn unmap(h: usize, flags: u32) -> R<()> {
    check_flags(flags, 0)?;
    let mut busy = false;
    let m = MAPS.remove_if(h, |m| {
        busy = m.seqs.load(Ordering::Acquire) > 0;
        !busy
    });
    if busy {
        return Err(SCI_ERR_BUSY);
    }
    let m = m.ok_or(SCI_ERR_ILLEGAL_PARAMETER)?;
    m.flush()?;
    Ok(())
}

// ---- sequences ----------------------------------------------------------------------

pub struct Seq {
    pub handle: usize,
    pub map: Arc<Map>,
}

impl Drop for Seq {
    fn drop(&mut self) {
        self.map.seqs.fetch_sub(1, Ordering::AcqRel);
        if let Of::Remote(r) = &self.map.of {
            r.desc.release(Kind::Sequence);
        }
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
    m.seqs.fetch_add(1, Ordering::AcqRel);
    let m2 = m.clone();
    let (h, _) = SEQS.insert_with(move |h| Arc::new(Seq { handle: h, map: m2 })).ok_or(SCI_ERR_NOSPC)?;
    out(seq, h)
}

fn start_seq(h: usize, flags: u32) -> R<u32> {
    check_flags(flags, 0)?;
    let s = SEQS.get(h).ok_or(SCI_ERR_ILLEGAL_PARAMETER)?;
    if !s.map.healthy() {
        return Ok(SCI_SEQ_PENDING);
    }
    if s.map.refresh().is_err() {
        return Ok(SCI_SEQ_PENDING);
    }
    Ok(SCI_SEQ_OK)
}

fn check_seq(h: usize, flags: u32) -> R<u32> {
    check_flags(flags, SCI_FLAG_NO_FLUSH | SCI_FLAG_NO_STORE_BARRIER)?;
    let s = SEQS.get(h).ok_or(SCI_ERR_ILLEGAL_PARAMETER)?;
    if flags & (SCI_FLAG_NO_FLUSH | SCI_FLAG_NO_STORE_BARRIER) != (SCI_FLAG_NO_FLUSH | SCI_FLAG_NO_STORE_BARRIER) {
        fence(Ordering::SeqCst);
        if s.map.refresh().is_err() {
            return Ok(SCI_SEQ_NOT_RETRIABLE);
        }
    }
    if !s.map.healthy() {
        return Ok(SCI_SEQ_NOT_RETRIABLE);
    }
    Ok(SCI_SEQ_OK)
}

/// SCIFlush / SCIStoreBarrier: everything stored through the sequence's map before is
/// visible at the owner when it returns.
fn barrier(h: usize) {
    fence(Ordering::SeqCst);
    if let Some(s) = SEQS.get(h) {
        let _ = s.map.flush();
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
    // Reflective memory: read what the group holds now; ship what was written.
    let group = m.group();
    if let (Some(g), true) = (group, read) {
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
    if let (Some(g), false) = (group, read) {
        g.sync(m.offset + off, m.offset + off + size, false)?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn mem_cpy(seq: usize, mem: *mut c_void, h: usize, off: usize, size: usize, flags: u32) -> R<()> {
    check_flags(flags, SCI_FLAG_BLOCK_READ | SCI_FLAG_ERROR_CHECK)?;
    let m = map(h)?;
    let s = if flags & SCI_FLAG_ERROR_CHECK != 0 { Some(SEQS.get(seq).ok_or(SCI_ERR_ILLEGAL_PARAMETER)?) } else { None };
    memcpy(&m, mem as *mut u8, off, size, flags & SCI_FLAG_BLOCK_READ != 0)?;
    if let Some(s) = s {
        if !s.map.healthy() || !m.healthy() {
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
        m.flush()
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
    /// Unmaps; SCI_ERR_BUSY while a sequence of the map exists.
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
    /// An opaque address of the map (never 0 for a valid map; see SCIQuery).
    fn SCIGetMapPhysAddr(map: usize) -> u64 {
        MAPS.get(map).map_or(0, |m| crate::query::map_ioaddr(&m))
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
        finish("SCIStartSequence", error, start_seq(sequence, flags), SCI_SEQ_NOT_RETRIABLE)
    }
}

sisci_export! {
    fn SCICheckSequence(sequence: usize, flags: u32, error: *mut SciErr) -> u32 {
        finish("SCICheckSequence", error, check_seq(sequence, flags), SCI_SEQ_NOT_RETRIABLE)
    }
}

sisci_export! {
    fn SCIStoreBarrier(sequence: usize, flags: u32) {
        let _ = flags;
        barrier(sequence)
    }
}

sisci_export! {
    fn SCIFlush(sequence: usize, flags: u32) {
        let _ = flags;
        barrier(sequence)
    }
}

sisci_export! {
    /// SISCI 1.10: makes later loads see remote stores (a fence here).
    fn SCIFlushReadBuffers(sequence: usize) {
        barrier(sequence)
    }
}

sisci_export! {
    fn SCIMemCpy(sequence: usize, memAddr: *mut c_void, remoteMap: usize, remoteOffset: usize, size: usize, flags: u32, error: *mut SciErr) {
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
        let r = check_flags(flags, SCI_FLAG_BLOCK_READ).and_then(|_| mem_cpy(0, memAddr, remoteMap, remoteOffset as usize, size as usize, flags));
        done("SCIMemCopy", error, r)
    }
}

sisci_export! {
    /// Copies a block from a pointer to memory inside a mapped segment.
    fn SCIMemWrite(memAddr: *mut c_void, remoteAddr: *mut c_void, size: usize, flags: u32, error: *mut SciErr) {
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
