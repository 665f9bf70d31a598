//! Nodes: this process's SISCI node id, the mapping between SISCI node ids and the
//! launcher's (fabric) nodes, the node-wide namespaces in the node registry, and the two
//! ways to reach another node's objects (lookup and service call).
//!
//! **Node ids.**  A SISCI node id names a host (every process on it shares it).  Ours:
//! `SOFTNIC_SISCI_NODE_ID` when set (programs started without a launcher); otherwise
//! 4*(n+1) for the launcher's node n (`SOFTNIC_NODE_ID`, which snrun sets per `-N` group,
//! else PMI's process mapping), skipping 252 (DIS_BROADCAST_NODEID_GROUP_ALL): nodes
//! 0..61 are 4..248, node 62 is 256, and so on, the numbering of Dolphin's PCIe clusters.
//! Ids of that form name fabric node n on every machine of the job; other ids (given by
//! the variable) are reachable on this machine only.
//!
//! **Namespaces.**  Segment ids and interrupt numbers are unique per node across all its
//! processes: each is claimed as a registry key that includes the node id (virtual nodes
//! on one machine share one registry, so the id keeps their namespaces apart).  The key's
//! owner is the creating process; its payload says where the object's control block is.

use crate::status::*;
use crate::types::*;
use once_cell::sync::OnceCell;
use softnic_fabric::registry::api;
use softnic_fabric::rma::Peer;
use softnic_fabric::Result as FResult;
use std::sync::Arc;

/// The launcher's node of this process (the fabric's node numbering).
pub fn my_fabric_node() -> u32 {
    static N: OnceCell<u32> = OnceCell::new();
    *N.get_or_init(|| {
        if let Some(n) = std::env::var("SOFTNIC_NODE_ID").ok().and_then(|v| v.trim().parse().ok()) {
            return n;
        }
        softnic_fabric::bootstrap::rank().and_then(softnic_fabric::bootstrap::node_id).unwrap_or(0)
    })
}

/// The SISCI node id of fabric node `n`.
pub fn sisci_of_fabric(n: u32) -> u32 {
    if n < 62 {
        4 * (n + 1)
    } else {
        4u32.saturating_mul(n.saturating_add(2))
    }
}

/// The fabric node a SISCI node id of the standard form names.
pub fn fabric_of_sisci(id: u32) -> Option<u32> {
    if id % 4 != 0 || id < 4 || id == DIS_BROADCAST_NODEID_GROUP_ALL || id > 0xFFFF {
        return None;
    }
    let k = id / 4;
    Some(if k <= 62 { k - 1 } else { k - 2 })
}

/// This process's SISCI node id (see the module doc).  A value of
/// `SOFTNIC_SISCI_NODE_ID` that is not a legal node id is ignored with a warning.
pub fn my_node() -> u32 {
    static ID: OnceCell<u32> = OnceCell::new();
    *ID.get_or_init(|| {
        let v = softnic_fabric::env::get_str("SOFTNIC_SISCI_NODE_ID").trim();
        if !v.is_empty() {
            match v.parse::<u32>() {
                Ok(id) if legal_node(id) => return id,
                _ => softnic_fabric::sn_warn!("SISCI", "SOFTNIC_SISCI_NODE_ID={} is not a node id (1..65535, not 252); using the launcher's", v),
            }
        }
        sisci_of_fabric(my_fabric_node())
    })
}

/// A node id a host can have.
pub fn legal_node(id: u32) -> bool {
    id != 0 && id <= 0xFFFF && id != DIS_BROADCAST_NODEID_GROUP_ALL
}

/// A node id argument: SCI_LOCAL_HOST means this node; 0, ids above 65535 and the
/// broadcast group id are SCI_ERR_ILLEGAL_NODEID.
pub fn node_arg(id: u32) -> R<u32> {
    if id == SCI_LOCAL_HOST {
        return Ok(my_node());
    }
    if !legal_node(id) {
        return Err(SCI_ERR_ILLEGAL_NODEID);
    }
    Ok(id)
}

/// Is node `id` part of the cluster?  With a launcher the job's nodes are known (this
/// node and nodes 0..num_nodes-1); without one the cluster is open and every legal id may
/// be a host that simply has not started yet.
pub fn node_exists(id: u32) -> bool {
    if id == my_node() {
        return true;
    }
    if !legal_node(id) {
        return false;
    }
    let launched = std::env::var_os("SOFTNIC_NODE_ID").is_some() || std::env::var_os("PMI_FD").is_some() || std::env::var_os("PMI_PORT").is_some();
    if !launched {
        return true;
    }
    let nodes = known_nodes();
    match fabric_of_sisci(id) {
        Some(n) => n < nodes,
        None => std::env::var_os("SOFTNIC_SISCI_NODE_ID").is_some(),
    }
}

/// Every node of the job (this one first), for broadcasts.
pub fn job_nodes() -> Vec<u32> {
    let me = my_node();
    let mut v = vec![me];
    for n in 0..known_nodes() {
        let id = sisci_of_fabric(n);
        if id != me && id <= 0xFFFF {
            v.push(id);
        }
    }
    v
}

/// Number of nodes in the job as the launcher tells it.
pub fn known_nodes() -> u32 {
    static N: OnceCell<u32> = OnceCell::new();
    *N.get_or_init(|| {
        let env = |k: &str| std::env::var(k).ok().and_then(|v| v.trim().parse::<u32>().ok());
        if let (Some(size), Some(per)) = (env("PMI_SIZE"), env("SOFTNIC_RANKS_PER_NODE")) {
            return size.div_ceil(per.max(1)).max(1);
        }
        softnic_fabric::bootstrap::num_nodes().unwrap_or(1).max(1)
    })
}

// ---- registry keys ------------------------------------------------------------------

pub fn seg_key(node: u32, id: u32) -> [u8; 12] {
    let mut k = [0u8; 12];
    k[..4].copy_from_slice(b"SCIs");
    k[4..8].copy_from_slice(&node.to_le_bytes());
    k[8..].copy_from_slice(&id.to_le_bytes());
    k
}

/// Plain interrupts: `sharer` is 0 for an interrupt of one creator, 0..SHARERS-1 for a
/// SCI_FLAG_SHARED_INT number.
pub fn int_key(node: u32, no: u32, sharer: u8) -> [u8; 13] {
    let mut k = [0u8; 13];
    k[..4].copy_from_slice(b"SCIi");
    k[4..8].copy_from_slice(&node.to_le_bytes());
    k[8..12].copy_from_slice(&no.to_le_bytes());
    k[12] = sharer;
    k
}

pub fn dint_key(node: u32, no: u32) -> [u8; 12] {
    let mut k = [0u8; 12];
    k[..4].copy_from_slice(b"SCId");
    k[4..8].copy_from_slice(&node.to_le_bytes());
    k[8..].copy_from_slice(&no.to_le_bytes());
    k
}

/// A reflective-memory group of this machine (all broadcast segments with one id share
/// its memory).
pub fn group_key(id: u32) -> [u8; 8] {
    let mut k = [0u8; 8];
    k[..4].copy_from_slice(b"SCIg");
    k[4..].copy_from_slice(&id.to_le_bytes());
    k
}

// ---- reaching another node's objects ----------------------------------------------------

/// The object published under `key` by node `node`, and its owner as a peer (through
/// the network engine when the node is another machine).  `NotFound` when none.  A node
/// id outside the launcher's numbering (given by SOFTNIC_SISCI_NODE_ID) is looked for on
/// this machine.
pub fn lookup(node: u32, key: &[u8]) -> FResult<(Arc<Peer>, [u8; 64])> {
    lookup_at(launcher_node_of(node), key)
}

/// The launcher node where objects of SISCI node `node` are looked for: the node its id
/// names, or this one (this node, and ids outside the launcher's numbering).
pub fn launcher_node_of(node: u32) -> u32 {
    if node == my_node() {
        my_fabric_node()
    } else {
        fabric_of_sisci(node).unwrap_or(my_fabric_node())
    }
}

/// The object published under `key` in the registry of launcher node `fnode`.
pub fn lookup_at(fnode: u32, key: &[u8]) -> FResult<(Arc<Peer>, [u8; 64])> {
    Peer::lookup(fnode, api::SISCI, key)
}

/// Runs the SISCI service (crate::service) with `target` as its target: here on its
/// shared memory when it is on this machine, in its progress thread otherwise.
pub fn call(target: &Arc<Peer>, req: &[u8], reply: &mut Vec<u8>) -> FResult<()> {
    target.call(api::SISCI, req, reply)
}

/// This process as an importer names itself to owners: fabric node and registry id.
pub fn me() -> FResult<(u32, softnic_fabric::registry::ProcId)> {
    Ok((my_fabric_node(), softnic_fabric::node::get()?.proc_id()))
}

/// The peer an owner notifies: the importer `id` on fabric node `fnode`.
pub fn peer_at(fnode: u32, id: softnic_fabric::registry::ProcId) -> FResult<Arc<Peer>> {
    Peer::at(fnode, id, 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_numbering_round_trips_and_skips_the_broadcast_id() {
        assert_eq!(sisci_of_fabric(0), 4);
        assert_eq!(sisci_of_fabric(1), 8);
        assert_eq!(sisci_of_fabric(61), 248);
        assert_eq!(sisci_of_fabric(62), 256);
        for n in 0..5000 {
            let id = sisci_of_fabric(n);
            assert_ne!(id, 252);
            if id <= 0xFFFF {
                assert_eq!(fabric_of_sisci(id), Some(n), "node {n}");
            }
        }
        assert_eq!(fabric_of_sisci(252), None);
        assert_eq!(fabric_of_sisci(5), None);
        assert_eq!(fabric_of_sisci(0), None);
        assert!(!legal_node(0) && !legal_node(252) && !legal_node(0x10000) && legal_node(7));
    }
}
