//! The table of this PE's lock queue nodes (the MCS nodes of [`crate::lock`], where the
//! algorithm is): the shared memory peers write into, and which node is in use.  The job
//! holds one, made at `dmapp_init`.

use crate::mutex::lock;
use crate::types::*;
use softnic_fabric::mem::{self, MemKey, RingLoc, SharedMem};
use softnic_fabric::rma::Peer;
use softnic_fabric::wait::WaitWords;
use softnic_fabric::{env, sn_warn, Error};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

/// DMAPP_MAX_LOCKS: default and largest value.
pub const DEFAULT_MAX_LOCKS: u32 = 128;
pub const LIMIT_MAX_LOCKS: u32 = 1023;

/// One queue node per cache line: locked, next, wait words.
pub const NODE: usize = 64;
pub const LOCKED: usize = 0;
pub const NEXT: usize = 8;
pub const WAKE: usize = 16;

/// The number of queue nodes per PE, from DMAPP_MAX_LOCKS.
pub fn max_locks() -> u32 {
    let v = env::get_u64("DMAPP_MAX_LOCKS");
    if v == 0 || v > LIMIT_MAX_LOCKS as u64 {
        let n = if v == 0 { 1 } else { LIMIT_MAX_LOCKS };
        sn_warn!("dmapp_init", "DMAPP_MAX_LOCKS={} is outside 1..={}; using {}", v, LIMIT_MAX_LOCKS, n);
        return n;
    }
    v as u32
}

/// Where a held lock's tail word is.
#[derive(Clone)]
pub struct Tail {
    pub peer: Arc<Peer>,
    pub key: MemKey,
    pub addr: u64,
}

pub enum State {
    Free,
    /// Between the start of acquire and the end of release (not releasable).
    Busy,
    Held(Tail),
}

pub struct Slot {
    pub gen: u16,
    pub state: State,
}

/// This PE's queue nodes.
pub struct Table {
    mem: SharedMem,
    pub loc: RingLoc,
    pub count: u32,
    pub slots: Mutex<Vec<Slot>>,
}

impl Table {
    pub fn new(count: u32) -> Result<Table, Error> {
        let bytes = count as usize * NODE;
        let m = mem::alloc_shared(bytes)?;
        let loc = m.ring_loc(0, bytes)?;
        let slots = (0..count).map(|_| Slot { gen: 0, state: State::Free }).collect();
        Ok(Table { mem: m, loc, count, slots: Mutex::new(slots) })
    }

    pub fn word(&self, idx: u32, off: usize) -> &AtomicU64 {
        // SAFETY: idx < count (callers take idx from the slot table), so the node lies
        // inside the mapping; 8-aligned; peers access it atomically.
        unsafe { &*(self.mem.as_ptr().add(idx as usize * NODE + off) as *const AtomicU64) }
    }

    pub fn wake(&self, idx: u32) -> &WaitWords {
        // SAFETY: as in `word`; WaitWords is two atomics, all-zero is its initial state.
        unsafe { &*(self.mem.as_ptr().add(idx as usize * NODE + WAKE) as *const WaitWords) }
    }

    /// Claims a free node (NO_SPACE when all are in use).
    pub fn claim(&self) -> Result<(u32, u16), Rc> {
        let mut s = lock(&self.slots);
        let i = s.iter().position(|x| matches!(x.state, State::Free)).ok_or(DMAPP_RC_NO_SPACE)?;
        s[i].gen = s[i].gen.wrapping_add(1);
        s[i].state = State::Busy;
        Ok((i as u32, s[i].gen))
    }

    pub fn free(&self, idx: u32) {
        lock(&self.slots)[idx as usize].state = State::Free;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_default_is_the_documented_one() {
        assert_eq!(env::lookup("DMAPP_MAX_LOCKS").map(|t| t.default), Some("128"));
        assert_eq!(DEFAULT_MAX_LOCKS, 128);
    }
}
