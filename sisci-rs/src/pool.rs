//! Control blocks: the shared memory through which other processes (and, through the
//! network engine, other machines) act on this process's SISCI objects.
//!
//! Every object another process can reach (a local segment, an interrupt, a data
//! interrupt, the event queue of a connected segment) owns one block of [`BLOCK`] bytes
//! of library shared memory (`mem::alloc_shared` chunks of [`PER_CHUNK`] blocks), each
//! block registered on its own with the fabric.  Peers act on a block only through the
//! one-sided engine (`rma::get/atomic/put/post_event` with the block's registration key),
//! so removing an object ends its registration and every later remote access fails
//! validation (`StaleHandle`) instead of touching a block that was reused.  The memory
//! returns to the pool only when the last local reference (a waiter, a callback) is gone.
//!
//! Layout (offsets, never pointers; integers little-endian as the CPU's):
//! ```text
//! 0     magic "snSCIb1\0"
//! 8     state word (object kind specific; atomics only)
//! 16    node id u32, object id u32 (segment id / interrupt number)
//! 24    size u64 (segments)
//! 32    flags u32, kind u32
//! 40    data registration key u64, 48 data address u64, 56 data location (3 words)
//! 80    the owner's doorbell ring (3 words): wakes its callback thread
//! 104   auxiliary location (3 words): a data interrupt's message ring
//! 128   connection count u64, 136 connection generation counter u64
//! 152   location of the object's ring (3 words), 176 attachments of a shared segment
//! 256   the object's ring (events or wake-ups), up to 2048
//! 2048  connection records: 96 x 64 bytes
//!          +0 state: 0 free; claimer<<8|1 being claimed, claimer<<8|3 counted and being
//!             filled (claimer: registry slot and generation of the claiming process,
//!             so the owner frees what a claimer that died left); gen<<8|2 live
//!          +8 importer node, fabric node
//!          +16 importer registry slot, generation  +24 importer event ring (3 words)
//!          +48 importer's handle (echoed in events)  +56 adapter
//! ```
//! Block 0 of the first chunk is the process block: its ring is the doorbell.

use crate::status::*;
use crate::types::*;
use softnic_fabric::mem::{self, Access, MemKey, RingLoc, SharedMem};
use softnic_fabric::ring::{Pod, Ring};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

pub const BLOCK: usize = 8192;
pub const PER_CHUNK: usize = 32;
/// Protection-domain key of every SISCI registration: the job's, derived from the job
/// secret (SISCI has no domains of its own; jobs are kept apart).
pub fn pd() -> u64 {
    static PD: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *PD.get_or_init(|| softnic_fabric::bootstrap::protection_key("sisci"))
}
pub const MAGIC: u64 = u64::from_le_bytes(*b"snSCIb1\0");

pub const H_STATE: usize = 8;
pub const H_NODE: usize = 16;
pub const H_ID: usize = 20;
pub const H_SIZE: usize = 24;
pub const H_FLAGS: usize = 32;
pub const H_DATA_KEY: usize = 40;
pub const H_DATA_ADDR: usize = 48;
pub const H_DATA_LOC: usize = 56;
pub const H_DOORBELL: usize = 80;
pub const H_AUX_LOC: usize = 104;
pub const H_CONNS: usize = 128;
pub const H_CONN_GEN: usize = 136;
pub const H_RING_LOC: usize = 152;
pub const H_ATTACH: usize = 176;
pub const RING_OFF: usize = 256;
pub const RING_MAX: usize = 2048 - RING_OFF;
pub const REC_OFF: usize = 2048;
pub const REC_LEN: usize = 64;
pub const NREC: usize = (BLOCK - REC_OFF) / REC_LEN;

pub const REC_FREE: u64 = 0;
/// Being claimed by the process named in the word (the connection not yet counted).
pub const REC_CLAIMED: u64 = 1;
/// Live: bits 8..55 the connection's generation.
pub const REC_LIVE: u64 = 2;
/// Counted, being filled, by the process named in the word.
pub const REC_COUNTED: u64 = 3;

/// The claimer part of a CLAIMED/COUNTED record word: registry slot (bits 8..23) and
/// generation (bits 32..63) of the process doing the claim.
pub fn rec_claimer(slot: u32, gen: u32) -> u64 {
    ((slot as u64 & 0xffff) << 8) | ((gen as u64) << 32)
}

/// One block.  Dropping it ends its registration (if [`Block::retire`] has not) and
/// returns the memory, zeroed, to the pool.
pub struct Block {
    ptr: *mut u8,
    key: AtomicU64,
    loc: RingLoc,
    chunk: u32,
    idx: u32,
    /// Set for another process's block mapped here (an attached shared segment): it is
    /// neither retired nor returned by us.
    foreign: Option<softnic_fabric::rma::RegionView>,
}

// SAFETY: the block is plain shared memory, accessed through atomics and rings; the key
// is atomic.
unsafe impl Send for Block {}
unsafe impl Sync for Block {}

const NO_KEY: u64 = u64::MAX;

impl Block {
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }
    pub fn addr(&self) -> u64 {
        self.ptr as u64
    }
    /// The registration peers use (MemKey::NONE once retired).
    pub fn key(&self) -> MemKey {
        match self.key.load(Ordering::Acquire) {
            NO_KEY => MemKey::NONE,
            k => MemKey::from_u64(k),
        }
    }
    /// `len` bytes at `off` named for peers.
    pub fn loc(&self, off: usize, len: usize) -> RingLoc {
        RingLoc { backing: self.loc.backing, backing_gen: self.loc.backing_gen, offset: self.loc.offset + off as u64, len: len as u64 }
    }
    /// The 64-bit word at `off` (8-aligned, inside the block).
    pub fn word(&self, off: usize) -> &AtomicU64 {
        assert!(off % 8 == 0 && off + 8 <= BLOCK);
        // SAFETY: in bounds and aligned (checked); the block lives as long as self; every
        // party accesses these words atomically.
        unsafe { &*(self.ptr.add(off) as *const AtomicU64) }
    }
    pub fn set_u32(&self, off: usize, v: u32) {
        assert!(off % 4 == 0 && off + 4 <= BLOCK);
        // SAFETY: in bounds, aligned; written before the block is published.
        unsafe { (self.ptr.add(off) as *mut u32).write_volatile(v) }
    }
    pub fn set_loc(&self, off: usize, l: &RingLoc) {
        for (i, w) in l.to_words().iter().enumerate() {
            self.word(off + 8 * i).store(*w, Ordering::Relaxed);
        }
    }
    pub fn get_loc(&self, off: usize) -> RingLoc {
        RingLoc::from_words([0, 1, 2].map(|i| self.word(off + 8 * i).load(Ordering::Relaxed)))
    }
    /// Formats a ring of `cap` entries at RING_OFF.
    pub fn init_ring<T: Pod>(&self, cap: u32) -> R<(Ring<T>, RingLoc)> {
        let len = Ring::<T>::bytes_needed(cap);
        if len == 0 || len > RING_MAX {
            return Err(SCI_ERR_SYSTEM);
        }
        // SAFETY: RING_OFF..RING_OFF+len lies in the block (len <= RING_MAX), 64-aligned
        // (blocks are page aligned); nobody else uses it before the block is published.
        let r = unsafe { Ring::<T>::init(self.ptr.add(RING_OFF), len, cap) }.map_err(|_| SCI_ERR_SYSTEM)?;
        let loc = self.loc(RING_OFF, len);
        self.set_loc(H_RING_LOC, &loc);
        Ok((r, loc))
    }
    /// Another process's block, mapped (`key` and `loc` are the owner's).
    pub fn foreign(view: softnic_fabric::rma::RegionView, key: MemKey, loc: RingLoc) -> R<Block> {
        if view.len() < BLOCK || view.as_ptr() as usize % 64 != 0 {
            return Err(SCI_ERR_SYSTEM);
        }
        Ok(Block { ptr: view.as_ptr(), key: AtomicU64::new(key.to_u64()), loc, chunk: 0, idx: 0, foreign: Some(view) })
    }
    pub fn is_foreign(&self) -> bool {
        self.foreign.is_some()
    }
    /// Attaches to the ring another process formatted at RING_OFF.
    pub fn attach_ring<T: Pod>(&self, cap: u32) -> R<Ring<T>> {
        let len = Ring::<T>::bytes_needed(cap);
        if len == 0 || len > RING_MAX {
            return Err(SCI_ERR_SYSTEM);
        }
        // SAFETY: RING_OFF..+len lies in the mapped block; attach validates the header.
        unsafe { Ring::<T>::attach(self.ptr.add(RING_OFF), len) }.map_err(|_| SCI_ERR_SYSTEM)
    }
    /// Ends the registration now: peers' accesses fail from here on.
    pub fn retire(&self) {
        if self.foreign.is_some() {
            return;
        }
        let k = self.key.swap(NO_KEY, Ordering::AcqRel);
        if k != NO_KEY {
            let _ = mem::deregister(MemKey::from_u64(k));
        }
    }
    /// Connection record `i`'s word at `off` within the record.
    pub fn rec(&self, i: usize, off: usize) -> &AtomicU64 {
        self.word(REC_OFF + i * REC_LEN + off)
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        if self.foreign.is_some() {
            return;
        }
        self.retire();
        // SAFETY: our block, no longer reachable by peers (retired) nor by us.
        unsafe { std::ptr::write_bytes(self.ptr, 0, BLOCK) };
        pool().lock().unwrap_or_else(|e| e.into_inner()).free.push((self.chunk, self.idx));
    }
}

struct Pool {
    chunks: Vec<SharedMem>,
    free: Vec<(u32, u32)>,
}

fn pool() -> &'static Mutex<Pool> {
    static P: OnceLock<Mutex<Pool>> = OnceLock::new();
    P.get_or_init(|| Mutex::new(Pool { chunks: Vec::new(), free: Vec::new() }))
}

fn grow(p: &mut Pool) -> R<()> {
    let m = mem::alloc_shared(BLOCK * PER_CHUNK).map_err(|_| SCI_ERR_NOSPC)?;
    let c = p.chunks.len() as u32;
    p.chunks.push(m);
    // Reversed, so blocks are handed out in address order.
    for i in (0..PER_CHUNK as u32).rev() {
        if c == 0 && i == 0 {
            continue; // the process block
        }
        p.free.push((c, i));
    }
    Ok(())
}

/// A fresh, zeroed, registered block with the magic written.
pub fn alloc() -> R<Block> {
    process_block()?;
    let (ptr, loc, chunk, idx) = {
        let mut p = pool().lock().unwrap_or_else(|e| e.into_inner());
        if p.free.is_empty() {
            grow(&mut p)?;
        }
        let (c, i) = p.free.pop().expect("grown");
        let m = &p.chunks[c as usize];
        // SAFETY: i < PER_CHUNK: inside the chunk.
        let ptr = unsafe { m.as_ptr().add(i as usize * BLOCK) };
        (ptr, m.ring_loc(i as usize * BLOCK, BLOCK).map_err(|_| SCI_ERR_SYSTEM)?, c, i)
    };
    let b = Block { ptr, key: AtomicU64::new(NO_KEY), loc, chunk, idx, foreign: None };
    let key = mem::register(ptr as usize, BLOCK, Access::ReadWrite, pd()).map_err(|_| SCI_ERR_NOSPC)?;
    b.key.store(key.to_u64(), Ordering::Release);
    b.word(0).store(MAGIC, Ordering::Relaxed);
    b.set_loc(H_DOORBELL, &process_block()?.1);
    Ok(b)
}

/// The process block and its doorbell ring (a wake-up for the callback thread: entries
/// carry nothing, the thread looks at every armed object).
pub fn process_block() -> R<&'static (Ring<u64>, RingLoc)> {
    static PB: OnceLock<(Ring<u64>, RingLoc)> = OnceLock::new();
    if let Some(pb) = PB.get() {
        return Ok(pb);
    }
    let mut p = pool().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(pb) = PB.get() {
        return Ok(pb);
    }
    if p.chunks.is_empty() {
        grow(&mut p)?;
    }
    let m = &p.chunks[0];
    // SAFETY: block 0 of chunk 0, reserved for this ring (grow never hands it out).
    let ring = unsafe { Ring::<u64>::init(m.as_ptr().add(RING_OFF), Ring::<u64>::bytes_needed(64), 64) }.map_err(|_| SCI_ERR_SYSTEM)?;
    let loc = m.ring_loc(RING_OFF, Ring::<u64>::bytes_needed(64)).map_err(|_| SCI_ERR_SYSTEM)?;
    let _ = PB.set((ring, loc));
    Ok(PB.get().expect("just set"))
}

/// The owner address of word `off` of connection record `i` in the block at `blk_addr`.
pub fn rec_addr(blk_addr: u64, i: usize, off: usize) -> u64 {
    blk_addr + (REC_OFF + i * REC_LEN + off) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_fits() {
        assert_eq!(NREC, 96);
        assert!(Ring::<[u64; 2]>::bytes_needed(64) <= RING_MAX);
        assert!(H_ATTACH + 8 <= RING_OFF);
        assert_eq!(BLOCK % 4096, 0);
    }
}
