//! Where peers on this machine map registered program memory (SCIRegisterSegmentMemory
//! of a segment others connect to): the fabric made its pages shareable in place; when
//! they lie in one backing, a connected peer maps them like library memory (a real
//! pointer, PIO).  Otherwise (pages registered piecemeal earlier) peers get a shadow map.

use softnic_fabric::mem::{self, MemKey, RingLoc};

pub fn loc_of(key: MemKey) -> Option<RingLoc> {
    mem::region_loc(key).ok().flatten()
}
