//! The memory of a segment (crate::segment) or of a reflective-memory mirror
//! (crate::broadcast): library shared memory registered with the fabric, program memory
//! registered in place, or another process's memory mapped here.

use crate::pool::pd;
use crate::status::*;
use crate::types::*;
use softnic_fabric::mem::{self, Access, MemKey, RingLoc, SharedMem};

/// A segment's memory.
pub struct Data {
    pub ptr: *mut u8,
    pub len: usize,
    pub key: MemKey,
    /// The memory's address in the process that registered it under `key` (differs from
    /// `ptr` for memory of another process mapped here).
    pub addr: u64,
    /// Where peers on this machine map it (None: registered user memory that spans
    /// several fabric backings, which only DMA and SCIMemCpy can reach).
    pub loc: Option<RingLoc>,
    own: Option<SharedMem>,
    registered: bool,
    /// Another process's memory mapped here (attached and broadcast segments).
    _view: Option<softnic_fabric::rma::RegionView>,
}

// SAFETY: plain memory; access is synchronised by the program (as on the hardware).
unsafe impl Send for Data {}
unsafe impl Sync for Data {}

impl Data {
    /// Another process's memory mapped here.
    pub fn mapped(view: softnic_fabric::rma::RegionView, len: usize, key: MemKey, addr: u64, loc: RingLoc) -> Data {
        Data { ptr: view.as_ptr(), len, key, addr, loc: Some(loc), own: None, registered: false, _view: Some(view) }
    }
    /// Program memory (SCIRegisterSegmentMemory), registered under `key` when
    /// `registered` (and deregistered with it), never freed by us.
    pub fn program(ptr: *mut u8, len: usize, key: MemKey, loc: Option<RingLoc>, registered: bool) -> Data {
        Data { ptr, len, key, addr: ptr as u64, loc, own: None, registered, _view: None }
    }
    /// A non-owning twin of `d` (whose owner keeps the memory).
    pub fn alias(d: &Data) -> Data {
        Data { ptr: d.ptr, len: d.len, key: d.key, addr: d.addr, loc: d.loc, own: None, registered: false, _view: None }
    }
}

impl Drop for Data {
    fn drop(&mut self) {
        if self.registered {
            let _ = mem::deregister(self.key);
        }
        if let Some(m) = self.own.take() {
            let _ = mem::free_shared(m);
        }
    }
}

/// Library memory for a segment of `size` bytes, registered.
pub fn alloc_data(size: usize) -> R<Data> {
    let m = mem::alloc_shared(size).map_err(|_| SCI_ERR_NOSPC)?;
    let key = mem::register(m.as_ptr() as usize, m.len(), Access::ReadWrite, pd()).map_err(|_| SCI_ERR_NOSPC);
    let key = match key {
        Ok(k) => k,
        Err(e) => {
            let _ = mem::free_shared(m);
            return Err(e);
        }
    };
    let loc = m.ring_loc(0, m.len()).ok();
    Ok(Data { ptr: m.as_ptr(), len: size, key, addr: m.as_ptr() as u64, loc, own: Some(m), registered: true, _view: None })
}
