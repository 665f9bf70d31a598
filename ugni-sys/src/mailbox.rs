//! An endpoint's short-messaging state ([`SmsgState`], in its `EpState` after
//! GNI_SmsgInit): where its mailbox and the peer's are, their geometry, the send and
//! release counters, and the pinned channel to the peer's mailbox ([`Channel`]).  The
//! mailbox layout and the protocol are described in crate::smsg, which sends and receives
//! through this state.

use crate::memhandle::RemoteMem;
use crate::types::*;
use softnic_fabric::rma::{Peer, Pinned, PinnedRing};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes before slot 0 of a mailbox (the credits word, then reserved).
pub(crate) const MBOX_HDR: u64 = 64;
/// Bytes before a slot's header and data (seq, lengths, tag, msg_id).
pub(crate) const SLOT_HDR: u64 = 32;

/// Per-endpoint SMSG state after GNI_SmsgInit.
pub struct SmsgState {
    /// My mailbox (the peer writes into it): address in this process.
    pub(crate) local: u64,
    pub(crate) local_credits: u32,
    pub(crate) local_slot: u64,
    /// The peer's mailbox: address in the peer, its registration, geometry.
    pub(crate) remote: u64,
    /// The peer's mailbox handle (plain, multi-segment or vMDH; resolved per use).
    pub(crate) remote_h: gni_mem_handle_t,
    pub(crate) remote_credits: u32,
    pub(crate) remote_slot: u64,
    pub(crate) remote_maxsize: u32,
    /// Messages I have sent / released (= received and consumed).
    pub(crate) sent: u64,
    /// The credits word as last read.  It only grows, so while this value still leaves a
    /// credit the shared word need not be read: the sender does not pull the cache line
    /// the peer's every Release writes (one cross-core transfer less per message).
    pub(crate) credits_seen: u64,
    pub(crate) released: u64,
    /// Header pointer of the current message (GetNext succeeded, no Release yet).
    pub(crate) current: Option<u64>,
    /// SOFTNIC_CHECK: the copy of the current message lent to the program instead of its
    /// slot (`softnic_fabric::lent`), taken back at its Release.
    pub(crate) lent: Option<u64>,
    /// Staging buffer for one slot (per-message path).
    pub(crate) buf: Vec<u8>,
    /// The peer's mailbox and event ring, pinned (see [`Channel`]); None until the first
    /// message, after a failed re-check, or when they cannot be pinned.
    pub(crate) chan: Option<Channel>,
    /// While `chan` cannot be built: the `sent + released` count of the next attempt.
    pub(crate) chan_retry: u64,
}

/// The fast path of one endpoint's messages: the peer's whole mailbox (slots and the
/// credits word) and the ring of its dst CQ, validated and mapped once
/// (`softnic_fabric::rma::Pinned`), re-checked with a few loads per message.  Every
/// message and release takes it while it is valid; when a re-check fails (the peer
/// deregistered or re-registered the mailbox, destroyed the CQ) it is dropped and the
/// per-message path, which resolves the handle and reports the exact error, takes over.
/// Only plain (or vMDH-resolved plain) mailbox handles are pinned; segmented ones always
/// take the per-message path.
pub(crate) struct Channel {
    pub(crate) mbox: Pinned,
    pub(crate) events: Option<PinnedRing<u64>>,
}

impl Channel {
    pub(crate) fn open(peer: &Arc<Peer>, words: [u64; 2], sm: &SmsgState, pd: u64) -> softnic_fabric::Result<Channel> {
        let live = peer.live_probed()?;
        let rm = RemoteMem::open(peer, words, pd)?;
        if !rm.is_plain() {
            return Err(softnic_fabric::Error::Unsupported);
        }
        let len = MBOX_HDR + sm.remote_credits as u64 * sm.remote_slot;
        let (key, addr) = rm.word(sm.remote, len)?;
        let mbox = Pinned::new(peer, key, addr, len as usize, true, pd)?;
        let events = match live.notify_ring(rm.notify_key(), pd)? {
            Some(loc) => Some(PinnedRing::new(peer, &loc)?),
            None => None,
        };
        Ok(Channel { mbox, events })
    }
}

// `#[inline]`: read on every message by crate::smsg, another module (and maybe another
// codegen unit).
impl SmsgState {
    /// The credits word of my mailbox (written by the peer).
    #[inline]
    pub(crate) fn credits_returned(&self) -> u64 {
        // SAFETY: `local` is the 64-byte aligned start of my mailbox, checked at init to
        // lie inside a live registration of ours.
        unsafe { (*(self.local as *const AtomicU64)).load(Ordering::Acquire) }
    }

    /// Address of the slot holding my next incoming message, and its expected seq.
    #[inline]
    pub(crate) fn next_slot(&self) -> (u64, u64) {
        let idx = slot_index(self.released, self.local_credits);
        (self.local + MBOX_HDR + idx * self.local_slot, self.released + 1)
    }

    /// The next arrived message: (slot address, tag), or None.
    #[inline]
    pub(crate) fn peek(&self) -> Option<(u64, u8)> {
        let (slot, want) = self.next_slot();
        // SAFETY: the slot lies inside my mailbox (geometry checked at init); 8-aligned.
        let seq = unsafe { (*(slot as *const AtomicU64)).load(Ordering::Acquire) };
        if seq != want {
            return None;
        }
        // SAFETY: as above; the tag byte was written before seq was published.
        let tag = unsafe { std::ptr::read_volatile((slot + 16) as *const u8) };
        Some((slot, tag))
    }
}

/// The mailbox slot of message number `seq` in a mailbox of `credits` slots.  Programs
/// mostly choose a power of two: a mask then, not a division (10-40 cycles, twice per
/// message).  `credits` is never 0 (GNI_SmsgInit refuses it).
#[inline]
pub(crate) fn slot_index(seq: u64, credits: u32) -> u64 {
    let c = credits as u64;
    if c.is_power_of_two() {
        seq & (c - 1)
    } else {
        seq % c.max(1)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn slot_index_is_the_remainder_for_every_mailbox_size() {
        for credits in [1u32, 2, 3, 7, 16, 64, 100, 65535] {
            for seq in [0u64, 1, 2, 15, 16, 17, 1000, u64::MAX - 1, u64::MAX] {
                assert_eq!(super::slot_index(seq, credits), seq % credits as u64, "seq {seq} credits {credits}");
            }
        }
    }
}
