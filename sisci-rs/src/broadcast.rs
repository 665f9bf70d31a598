//! Reflective memory (SCI_FLAG_BROADCAST segments) on one machine.
//!
//! Every broadcast segment with one segment id on this machine, whatever its node, is
//! backed by the same memory: the group's.  The first such segment creates the group (a
//! registry key of the machine, "SCIg" + id, owned by its process); the others map it.
//! A write through any map of the group, or a DMA with SCI_FLAG_BROADCAST, is therefore
//! seen by every member at once, the writer's own node included, as with PCIe multicast
//! reflecting into local memory.  The group's memory lives as long as its creating
//! process (members keep their mappings after that; a group created anew then starts
//! with fresh memory).  A member larger than the group is SCI_ERR_OUT_OF_RANGE.

use crate::node;
use crate::segment::{alloc_data, Data};
use crate::status::*;
use crate::types::*;
use softnic_fabric::mem::{MemKey, RingLoc};
use softnic_fabric::registry::{self, api};
use softnic_fabric::rma::Peer;
use std::sync::Mutex;

/// Groups this process created (their memory stays for the process's life).
static MINE: Mutex<Vec<(u32, Data)>> = Mutex::new(Vec::new());

fn payload(creator_node: u32, size: usize, d: &Data) -> [u8; 56] {
    let mut p = [0u8; 56];
    let loc = d.loc.unwrap_or(RingLoc { backing: 0, backing_gen: 0, offset: 0, len: 0 });
    for (i, w) in loc.to_words().iter().enumerate() {
        p[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
    }
    p[24..32].copy_from_slice(&(size as u64).to_le_bytes());
    p[32..40].copy_from_slice(&d.key.to_u64().to_le_bytes());
    p[40..44].copy_from_slice(&creator_node.to_le_bytes());
    p[48..56].copy_from_slice(&d.addr.to_le_bytes());
    p
}

/// The memory of group `id` for a member of `size` bytes (creating the group if needed).
pub fn join(id: u32, size: usize) -> R<Data> {
    for _ in 0..100 {
        match registry::lookup(api::SISCI, &node::group_key(id)) {
            Ok(e) => {
                let w = |o: usize| u64::from_le_bytes(e.payload[o..o + 8].try_into().expect("8 bytes"));
                let loc = RingLoc::from_words([w(0), w(8), w(16)]);
                if size as u64 > w(24) {
                    return Err(SCI_ERR_OUT_OF_RANGE);
                }
                let peer = Peer::open(e.peer).map_err(|_| SCI_ERR_NOSPC)?;
                let view = match softnic_fabric::rma::map_region(&peer, &loc) {
                    Ok(v) => v,
                    Err(_) => continue,
                };
                return Ok(Data::mapped(view, size, MemKey::from_u64(w(32)), w(48), loc));
            }
            Err(softnic_fabric::Error::NotFound) => {
                let d = alloc_data(size)?;
                match registry::publish(api::SISCI, &node::group_key(id), &payload(node::my_node(), size, &d)) {
                    Ok(_) => {
                        let view = Data::alias(&d);
                        MINE.lock().unwrap_or_else(|e| e.into_inner()).push((id, d));
                        return Ok(view);
                    }
                    Err(softnic_fabric::Error::Exists) => continue,
                    Err(_) => return Err(SCI_ERR_NOSPC),
                }
            }
            Err(_) => return Err(SCI_ERR_NOSPC),
        }
    }
    Err(SCI_ERR_NOSPC)
}

/// The process holding group `id`'s memory on this machine.
pub fn group_owner(id: u32) -> Option<std::sync::Arc<Peer>> {
    let e = registry::lookup(api::SISCI, &node::group_key(id)).ok()?;
    Peer::open(e.peer).ok()
}

/// The node whose broadcast segment created group `id` on this machine.
pub fn creator_node(id: u32) -> Option<u32> {
    let e = registry::lookup(api::SISCI, &node::group_key(id)).ok()?;
    Some(u32::from_le_bytes(e.payload[40..44].try_into().expect("4 bytes")))
}
