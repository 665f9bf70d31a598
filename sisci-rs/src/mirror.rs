//! The layout of a reflective-memory group's mirror (crate::broadcast): the header
//! words, the member table (other machines' mirrors) and the table of the machine's
//! copies, which precede the data.  Its own module because two sides use it: the
//! mirror's users (crate::broadcast) and the service (crate::service, BC_JOIN), which
//! adds another machine's mirror to the member table at the target.

use softnic_fabric::mem::MemKey;
use softnic_fabric::registry::ProcId;

/// "SCIgrp02": the header of a mirror, version 2 (private copies per node).
pub const GROUP_MAGIC: u64 = u64::from_le_bytes(*b"SCIgrp02");
/// Bytes of header before the data: the member table, then the table of copies.
pub const HDR: usize = 8192;
pub const G_MAGIC: usize = 0;
pub const G_SIZE: usize = 8;
pub const G_TOKEN: usize = 16;
/// Pid of the process syncing the mirror (0: none).
pub const G_LOCK: usize = 24;
/// CLOCK_MONOTONIC nanoseconds at which the machine's next background pass is due.
pub const G_DUE: usize = 32;
/// This mirror: epoch | launcher node << 32.
pub const G_WHO: usize = 40;
/// Incremented after every write into the machine's copies and the mirror.
pub const G_VERSION: usize = 48;
/// The member table: other machines' mirrors.
pub const M_OFF: usize = 64;
pub const M_LEN: usize = 64;
pub const NMEMBER: usize = (4096 - M_OFF) / M_LEN;
/// Entry words: state, then [`Member::words`].
pub const M_STATE: usize = 0;
pub const M_WHO: usize = 8;
pub const M_TOKEN: usize = 48;
/// The table of this machine's copies (one per member node).
pub const L_OFF: usize = 4096;
pub const L_LEN: usize = 64;
pub const NLOCAL: usize = (HDR - L_OFF) / L_LEN;
/// Entry words: state, node id, owner (registry slot | generation << 32), registration
/// key, address in the owner, size, token.
pub const L_NODE: usize = 8;
pub const L_PROC: usize = 16;
pub const L_KEY: usize = 24;
pub const L_ADDR: usize = 32;
pub const L_SIZE: usize = 40;
pub const L_TOKEN: usize = 48;
pub const ST_FREE: u64 = 0;
/// Being filled, by the pid in the bits above the low byte.
pub const ST_CLAIMED: u64 = 1;
pub const ST_LIVE: u64 = 2;
/// Its process is gone (or it was made anew, or left): free for reuse.
pub const ST_GONE: u64 = 3;

/// Another machine's copy of a group, as the member table holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    /// Launcher node of the process whose memory it is.
    pub enode: u32,
    pub epoch: u32,
    pub proc: ProcId,
    pub key: MemKey,
    /// Address of the copy's header in its process (the data follow at +HDR).
    pub base: u64,
    pub size: u64,
    pub token: u64,
}

impl Member {
    /// Who is the hub: the least.
    pub fn rank(&self) -> (u32, u32, u64) {
        (self.epoch, self.enode, self.token)
    }
    /// Entry words 1..7 (after the state).
    pub fn words(&self) -> [u64; 6] {
        [self.epoch as u64 | (self.enode as u64) << 32, self.proc.slot as u64 | (self.proc.gen as u64) << 32, self.key.to_u64(), self.base, self.size, self.token]
    }
    pub fn from_words(w: [u64; 6]) -> Member {
        Member { epoch: w[0] as u32, enode: (w[0] >> 32) as u32, proc: ProcId { slot: w[1] as u32, gen: (w[1] >> 32) as u32 }, key: MemKey::from_u64(w[2]), base: w[3], size: w[4], token: w[5] }
    }
}
