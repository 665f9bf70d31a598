//! An NI's entry in the node registry (`fabric::registry`, service PORTALS): its key
//! (job, nid, pid), its payload (where the NI's segment is, the NI's instance, its uid),
//! and the tombstone an ended NI leaves in its place.  Written by [`crate::ni`], read by
//! initiators looking for a target ([`crate::ops`]).

use softnic_fabric::mem::RingLoc;

/// The registry key of NI (jid, nid, pid).
pub fn endpoint_key(jid: u32, nid: u32, pid: u32) -> [u8; 14] {
    let mut k = [0u8; 14];
    k[..2].copy_from_slice(b"P3");
    k[2..6].copy_from_slice(&jid.to_le_bytes());
    k[6..10].copy_from_slice(&nid.to_le_bytes());
    k[10..14].copy_from_slice(&pid.to_le_bytes());
    k
}

/// What the registry entry carries: the segment's location, its instance, the uid.
pub fn endpoint_payload(loc: &RingLoc, nonce: u64, uid: u32) -> [u8; 40] {
    let mut p = [0u8; 40];
    for (i, w) in loc.to_words().iter().enumerate() {
        p[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
    }
    p[24..32].copy_from_slice(&nonce.to_le_bytes());
    p[32..36].copy_from_slice(&uid.to_le_bytes());
    p
}

/// The payload of an ended NI's tombstone: no segment, and this mark.
const TOMBSTONE: [u8; 4] = *b"DEAD";

pub fn tombstone_payload() -> [u8; 40] {
    let mut p = [0u8; 40];
    p[36..40].copy_from_slice(&TOMBSTONE);
    p
}

/// Is a registry payload an ended NI's tombstone?
pub fn is_tombstone(p: &[u8]) -> bool {
    p.get(36..40) == Some(&TOMBSTONE[..])
}

pub fn parse_payload(p: &[u8]) -> (RingLoc, u64) {
    let w = |i: usize| u64::from_le_bytes(p[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    (RingLoc::from_words([w(0), w(1), w(2)]), w(3))
}
