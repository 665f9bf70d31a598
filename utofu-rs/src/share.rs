//! Which TNIs, CQs and BGs this process may use.
//!
//! On Fugaku the job manager gives each process of a node its share of every TNI and
//! exports it as `UTOFU_CQ_MASK_<tni>` / `UTOFU_BG_MASK_<tni>` (bit i = CQ i / BG i).
//! Programs predict their peers' (TNI, CQ) from processes per node (ppn) and local rank
//! r; without the masks the share follows from (ppn, r) as in the table of utofu.h:
//! the node's ranks form TNI groups (all six TNIs up to 4 ppn, then 2, 3 or 6 groups),
//! each TNI's CQs and BGs are cut into as many blocks as the ppn class has slots, and
//! rank r has block `r / groups` on the TNIs of group `r % groups`.  A process's free-mode
//! VCQs on a TNI share the first CQ of its block, so that CQ is what peers compute.

use crate::types::*;
use once_cell::sync::Lazy;

/// What a process may use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Share {
    /// TNIs as `utofu_get_onesided_tnis` lists them (the table's TNI first).
    pub onesided_tnis: Vec<u16>,
    /// TNIs as `utofu_get_barrier_tnis` lists them.
    pub barrier_tnis: Vec<u16>,
    /// CQs per TNI (bit i = CQ i).
    pub cqs: [u16; NUM_TNIS as usize],
    /// BGs per TNI (bit i = BG i; 0-15 start/end gates, 16-47 relays).
    pub bgs: [u64; NUM_TNIS as usize],
    /// Assigned (by the table or the masks), so other processes of the node do not use
    /// it; false when the launcher said nothing or ppn is above 48.
    pub assigned: bool,
}

const ALL_CQS: u16 = (1 << CQS_PER_TNI) - 1;
const ALL_BGS: u64 = (1 << BGS_PER_TNI) - 1;

/// Block starts per ppn class: the CQ of each slot on a TNI.
const FOUR: &[u16] = &[0, 2, 5, 8];

/// (TNI groups, first CQ of each slot) of a ppn, for Fugaku's 1..=48.
fn class(ppn: u32) -> Option<(u32, &'static [u16])> {
    Some(match ppn {
        1 => (1, &[0]),
        2 => (1, &[0, 6]),
        3 => (1, &[0, 4, 8]),
        4 => (1, FOUR),
        5..=8 => (2, FOUR),
        9..=12 => (3, FOUR),
        13..=24 => (6, FOUR),
        25..=30 => (6, &[0, 2, 5, 8, 10]),
        31..=36 => (6, &[0, 2, 5, 8, 9, 10]),
        37..=42 => (6, &[0, 2, 5, 6, 8, 9, 10]),
        43..=48 => (6, &[0, 2, 4, 5, 6, 8, 9, 10]),
        _ => return None,
    })
}

/// Bits `lo..hi` set.
fn span(lo: u32, hi: u32) -> u64 {
    ((1u64 << hi) - 1) & !((1u64 << lo) - 1)
}

/// Everything (one process per node, more than 48, or no launcher to ask): every TNI,
/// CQ and BG, the lowest free ones taken first.
pub fn everything() -> Share {
    let all: Vec<u16> = (0..NUM_TNIS).collect();
    Share { onesided_tnis: all.clone(), barrier_tnis: all, cqs: [ALL_CQS; 6], bgs: [ALL_BGS; 6], assigned: false }
}

/// The share of local rank `r` of `ppn` (the table); None outside 1..=48 ppn.
pub fn table(ppn: u32, r: u32) -> Option<Share> {
    let (groups, starts) = class(ppn)?;
    if r >= ppn {
        return None;
    }
    let n = starts.len() as u32;
    let (group, slot) = (r % groups, r / groups);
    let per_group = NUM_TNIS as u32 / groups;
    let mut tnis: Vec<u16> = (group * per_group..(group + 1) * per_group).map(|t| t as u16).collect();
    if groups == 1 {
        // Up to 4 ppn every rank has every TNI; rank r's own is TNI r.
        let count = tnis.len();
        tnis.rotate_left(r as usize % count);
    }
    let lo = starts[slot as usize] as u32;
    let hi = starts.get(slot as usize + 1).map_or(CQS_PER_TNI as u32, |&s| s as u32);
    let (ends, relays) = (START_BGS as u32 / n, (BGS_PER_TNI - START_BGS) as u32 / n);
    let bg = span(slot * ends, (slot + 1) * ends) | span(START_BGS as u32 + slot * relays, START_BGS as u32 + (slot + 1) * relays);
    let mut s = Share { onesided_tnis: tnis.clone(), barrier_tnis: tnis.clone(), cqs: [0; 6], bgs: [0; 6], assigned: true };
    for &t in &tnis {
        s.cqs[t as usize] = span(lo, hi) as u16;
        s.bgs[t as usize] = bg;
    }
    Some(s)
}

/// `UTOFU_<kind>_MASK_0..5`, when any is set (hexadecimal, with or without 0x; unset
/// ones are 0: nothing on that TNI).
fn masks(kind: &str, valid: u64) -> Option<[u64; 6]> {
    let vals: Vec<Option<String>> = (0..NUM_TNIS).map(|t| std::env::var(format!("UTOFU_{kind}_MASK_{t}")).ok()).collect();
    if vals.iter().all(|v| v.is_none()) {
        return None;
    }
    let mut m = [0u64; 6];
    for (t, v) in vals.iter().enumerate() {
        let Some(v) = v else { continue };
        let s = v.trim();
        let digits = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(s);
        match u64::from_str_radix(digits, 16) {
            Ok(x) => {
                if x & !valid != 0 {
                    softnic_fabric::sn_warn!("uTofu", "UTOFU_{}_MASK_{}={}: bits above {} ignored", kind, t, s, valid.count_ones() - 1);
                }
                m[t] = x & valid;
            }
            Err(_) => softnic_fabric::sn_warn!("uTofu", "UTOFU_{}_MASK_{}={} is not a hexadecimal mask; nothing on TNI {}", kind, t, s, t),
        }
    }
    Some(m)
}

/// The share, with the job manager's masks applied over `base` where they are set.
fn with_masks(mut s: Share, cq: Option<[u64; 6]>, bg: Option<[u64; 6]>) -> Share {
    s.assigned |= cq.is_some() || bg.is_some();
    if let Some(m) = cq {
        for t in 0..6 {
            s.cqs[t] = m[t] as u16;
        }
        s.onesided_tnis = (0..NUM_TNIS).filter(|&t| s.cqs[t as usize] != 0).collect();
    }
    if let Some(m) = bg {
        s.bgs = m;
        // A circuit needs a start/end gate.
        s.barrier_tnis = (0..NUM_TNIS).filter(|&t| s.bgs[t as usize] & 0xffff != 0).collect();
    }
    s
}

fn env_u32(name: &str) -> Option<u32> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// (local rank, processes on this node) as the launcher tells, if it does.
pub fn position() -> Option<(u32, u32)> {
    let pair = |r: &str, n: &str| Some((env_u32(r)?, env_u32(n)?));
    pair("SOFTNIC_LOCAL_RANK", "SOFTNIC_LOCAL_SIZE")
        .or_else(|| pair("MPI_LOCALRANKID", "MPI_LOCALNRANKS"))
        .or_else(|| pair("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"))
        .or_else(tofutop::launcher_local_position)
        .filter(|&(r, n)| r < n)
}

/// This process's share (read once).
pub fn get() -> &'static Share {
    static S: Lazy<Share> = Lazy::new(|| {
        // Alone on the node (no launcher) the table's share is everything too.
        let pos = position();
        let base = pos.and_then(|(r, ppn)| table(ppn, r)).unwrap_or_else(everything);
        let s = with_masks(base, masks("CQ", ALL_CQS as u64), masks("BG", ALL_BGS));
        softnic_fabric::sn_debug!("uTofu", "local rank and size {:?}: one-sided TNIs {:?}, CQs {:03x?}, barrier TNIs {:?}, BGs {:012x?}", pos, s.onesided_tnis, s.cqs, s.barrier_tnis, s.bgs);
        s
    });
    &S
}

/// The bits of `m` in ascending order.
pub fn bits(m: u64) -> impl Iterator<Item = u16> {
    (0..64u16).filter(move |&i| m >> i & 1 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The issue's table: (TNI, CQ) of local rank r.
    fn expected(ppn: u32, r: u32) -> (u16, u16) {
        let q = |i: u32| FOUR[i as usize];
        match ppn {
            1 => (0, 0),
            2 => (r as u16, 6 * r as u16),
            3 => (r as u16, 4 * r as u16),
            4 => (r as u16, q(r)),
            5..=8 => ((r % 2 * 3) as u16, q(r / 2)),
            9..=12 => ((r % 3 * 2) as u16, q(r / 3)),
            13..=24 => ((r % 6) as u16, q(r / 6)),
            25..=30 => ((r % 6) as u16, [0, 2, 5, 8, 10][(r / 6) as usize]),
            31..=36 => ((r % 6) as u16, [0, 2, 5, 8, 9, 10][(r / 6) as usize]),
            37..=42 => ((r % 6) as u16, [0, 2, 5, 6, 8, 9, 10][(r / 6) as usize]),
            _ => ((r % 6) as u16, if r <= 5 { 0 } else if r <= 11 { 2 } else if r <= 29 { (r / 6 + 2) as u16 } else { (r / 6 + 3) as u16 }),
        }
    }

    #[test]
    fn table_gives_the_issue_table_and_disjoint_shares() {
        for ppn in 1..=48 {
            let mut cq_owner = [[None; 16]; 6];
            let mut bg_owner = vec![[None; 48]; 6];
            for r in 0..ppn {
                let s = table(ppn, r).unwrap();
                let (t, c) = expected(ppn, r);
                assert_eq!(s.onesided_tnis[0], t, "ppn {ppn} rank {r}");
                assert_eq!(bits(s.cqs[t as usize] as u64).next(), Some(c), "ppn {ppn} rank {r}");
                assert_eq!(s.onesided_tnis, s.barrier_tnis);
                for tni in 0..6usize {
                    assert_eq!(s.cqs[tni] != 0, s.onesided_tnis.contains(&(tni as u16)));
                    for c in bits(s.cqs[tni] as u64) {
                        assert!(cq_owner[tni][c as usize].replace(r).is_none(), "ppn {ppn}: CQ {c} of TNI {tni} twice");
                    }
                    for b in bits(s.bgs[tni]) {
                        assert!(bg_owner[tni][b as usize].replace(r).is_none(), "ppn {ppn}: BG {b} of TNI {tni} twice");
                    }
                    if s.cqs[tni] != 0 {
                        assert!(s.bgs[tni] & 0xffff != 0 && s.bgs[tni] >> 16 != 0, "ppn {ppn} rank {r}: gates on TNI {tni}");
                    }
                }
            }
        }
        assert!(table(49, 0).is_none() && table(0, 0).is_none() && table(4, 4).is_none());
        assert_eq!(table(1, 0).unwrap(), Share { assigned: true, ..everything() });
    }

    #[test]
    fn masks_replace_the_table() {
        let base = table(8, 3).unwrap();
        let mut cq = [0u64; 6];
        cq[2] = 0x30;
        cq[5] = 0x1;
        let s = with_masks(base.clone(), Some(cq), None);
        assert_eq!(s.onesided_tnis, vec![2, 5]);
        assert_eq!((s.cqs[2], s.cqs[5], s.cqs[0]), (0x30, 1, 0));
        assert_eq!(s.barrier_tnis, base.barrier_tnis);
        let mut bg = [0u64; 6];
        bg[1] = 0x3_0000; // relays only: no circuit can start there
        bg[4] = 0x1_0001;
        let s = with_masks(base, None, Some(bg));
        assert_eq!(s.barrier_tnis, vec![4]);
    }
}
