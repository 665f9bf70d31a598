//! The syncid table: the `_nb` requests of this PE not yet retired, and their outcomes
//! (what the syncids of [`crate::sync`] name; the job holds one).
//!
//! Handle encoding: `generation << 32 | (slot + 1)` as the opaque pointer, so NULL is
//! never a live handle and a retired (or forged) handle is recognised and refused.

use crate::types::*;

struct Slot {
    gen: u32,
    live: bool,
    rc: Rc,
}

pub struct Table {
    slots: Vec<Slot>,
    free: Vec<u32>,
    outstanding: u32,
    max: u32,
}

impl Table {
    pub fn new(max: u32) -> Table {
        Table { slots: Vec::new(), free: Vec::new(), outstanding: 0, max }
    }

    /// Claims a slot for a new request; NO_SPACE at the limit (nothing issued).
    pub fn reserve(&mut self) -> Result<u32, Rc> {
        if self.outstanding >= self.max {
            return Err(DMAPP_RC_NO_SPACE);
        }
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot { gen: 1, live: false, rc: 0 });
                self.slots.len() as u32 - 1
            }
        };
        let s = &mut self.slots[i as usize];
        s.live = true;
        s.rc = DMAPP_RC_SUCCESS;
        self.outstanding += 1;
        Ok(i)
    }

    pub fn complete(&mut self, i: u32, rc: Rc) -> SyncHandle {
        let s = &mut self.slots[i as usize];
        s.rc = rc;
        (((s.gen as u64) << 32) | (i as u64 + 1)) as usize as SyncHandle
    }

    /// Retires a handle: its request's outcome, or INVALID_PARAM for a handle that
    /// is not live.
    pub fn retire(&mut self, h: SyncHandle) -> Rc {
        let v = h as usize as u64;
        let i = (v & 0xffff_ffff).wrapping_sub(1) as usize;
        let gen = (v >> 32) as u32;
        match self.slots.get_mut(i) {
            Some(s) if s.live && s.gen == gen => {
                s.live = false;
                s.gen = s.gen.wrapping_add(1).max(1);
                self.outstanding -= 1;
                self.free.push(i as u32);
                s.rc
            }
            _ => DMAPP_RC_INVALID_PARAM,
        }
    }

    /// finalize: forget every un-retired request (all are complete).
    pub fn clear(&mut self) {
        self.slots.clear();
        self.free.clear();
        self.outstanding = 0;
    }
}
