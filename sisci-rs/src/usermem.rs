//! Where peers on this machine map registered program memory (SCIRegisterSegmentMemory
//! of a segment others connect to).

use softnic_fabric::mem::RingLoc;

/// The location of `[addr, addr+len)` inside one fabric backing, if the registration
/// made it shareable as one piece.
pub fn loc_of(addr: usize, len: usize) -> Option<RingLoc> {
    let _ = (addr, len);
    None
}
