//! What a memory handle names, whoever holds it: the kind bits of `gni_mem_handle_t`
//! (plain, multi-segment, symmetric vMDH), the segment table of a multi-segment
//! registration, and a remote handle resolved at the initiator ([`RemoteMem`]) into the
//! pieces of an access, paired with the local pieces ([`pair`]).  Making registrations,
//! and the decisions about segments and vMDH, are in crate::memreg.

use softnic_fabric::mem::{CrayHandle, MemKey};
use softnic_fabric::rma::Peer;

/// qword1 flag of a multi-segment handle: qword1 = SEG_FLAG | table address, qword2 = the
/// table registration's key.  (qword1 of a plain handle is a user address, < 2^47.)
pub const SEG_FLAG: u64 = 1 << 63;
/// qword1 flag of a symmetric vMDH handle: qword1 = VMDH_FLAG | index, qword2 = the
/// protection-domain key (ptag, cookie); the same value on every PE of the job.
pub const VMDH_FLAG: u64 = 1 << 62;
// DMAPP tells these handles apart from plain ones by the same bits (fabric CrayHandle).
const _: () = assert!(SEG_FLAG | VMDH_FLAG == softnic_fabric::mem::CrayHandle::KIND_BITS);
/// Most segments in one GNI_MemRegisterSegments call.
pub const MAX_SEGS: usize = 1024;
pub(crate) const SEG_MAGIC: u64 = u64::from_le_bytes(*b"snGNIseg");
/// Segment table: header [magic, count, total length, 0], then per segment
/// [offset, length, key, address] (u64 words).
pub(crate) const SEG_HDR: usize = 32;
pub(crate) const SEG_ENT: usize = 32;

/// One segment of a multi-segment registration.
#[derive(Clone, Copy, Debug)]
pub struct SegEnt {
    pub off: u64,
    pub len: u64,
    pub key: MemKey,
    pub addr: u64,
}

pub(crate) fn parse_table(w: &[u64]) -> Option<Vec<SegEnt>> {
    if w.len() < 4 || w[0] != SEG_MAGIC {
        return None;
    }
    let n = w[1] as usize;
    if n == 0 || n > MAX_SEGS || w.len() < 4 + 4 * n {
        return None;
    }
    // The table is read from the target's memory: check what `pieces` relies on (segments
    // laid end to end from offset 0, none empty, no overflow) instead of trusting it.
    let segs: Vec<SegEnt> = (0..n)
        .map(|i| {
            let e = &w[4 + 4 * i..8 + 4 * i];
            SegEnt { off: e[0], len: e[1], key: MemKey::from_u64(e[2]), addr: e[3] }
        })
        .collect();
    let mut next = 0u64;
    for s in &segs {
        if s.off != next || s.len == 0 || s.addr.checked_add(s.len).is_none() {
            return None;
        }
        next = next.checked_add(s.len)?;
    }
    Some(segs)
}

/// A remote memory handle resolved at the initiator: the real registration (vMDH entries
/// looked up in the target's table) and, for multi-segment ones, the segment table.
pub(crate) struct RemoteMem {
    key: MemKey,
    segs: Option<Vec<SegEnt>>,
}

impl RemoteMem {
    /// Resolves handle words `w` (a vMDH handle already replaced by the real handle it
    /// stands for, see `Ep::route`) at the target process `peer`.  Errors are fabric errors
    /// (reported as transaction errors): an unreadable segment table is whatever the read
    /// of it gave.
    pub(crate) fn open(peer: &Peer, w: [u64; 2], pd: u64) -> softnic_fabric::Result<RemoteMem> {
        let ch = CrayHandle::from_words([w[0] & !SEG_FLAG, w[1]]);
        if w[0] & SEG_FLAG == 0 {
            return Ok(RemoteMem { key: ch.key, segs: None });
        }
        let mut hdr = [0u8; SEG_HDR];
        softnic_fabric::rma::get(peer, ch.key, ch.base, &mut hdr, pd)?;
        let n = u64::from_ne_bytes(hdr[8..16].try_into().unwrap()) as usize;
        if n == 0 || n > MAX_SEGS {
            return Err(softnic_fabric::Error::InvalidHandle);
        }
        let mut buf = vec![0u8; SEG_HDR + n * SEG_ENT];
        softnic_fabric::rma::get(peer, ch.key, ch.base, &mut buf, pd)?;
        let words: Vec<u64> = buf.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap())).collect();
        let segs = parse_table(&words).ok_or(softnic_fabric::Error::InvalidHandle)?;
        Ok(RemoteMem { key: ch.key, segs: Some(segs) })
    }

    /// A single registration (not a segmented handle).
    pub(crate) fn is_plain(&self) -> bool {
        self.segs.is_none()
    }

    /// The registration whose notify ring gets REMOTE events and CQ writes.
    pub(crate) fn notify_key(&self) -> MemKey {
        self.key
    }

    /// `(key, target address, length)` pieces of the access `[addr, addr+len)`: virtual
    /// addresses for plain registrations (the fabric checks the bounds), offsets split at
    /// segment boundaries for segmented ones (`OutOfBounds` past the total length).
    pub(crate) fn pieces(&self, addr: u64, len: u64) -> softnic_fabric::Result<Pieces> {
        let Some(segs) = &self.segs else { return Ok(Pieces::One([(self.key, addr, len)])) };
        let total: u64 = segs.iter().map(|s| s.len).sum();
        let end = addr.checked_add(len).ok_or(softnic_fabric::Error::OutOfBounds)?;
        if end > total || (len == 0 && addr >= total) {
            return Err(softnic_fabric::Error::OutOfBounds);
        }
        let mut out = Vec::new();
        for s in segs {
            let (a, b) = (addr.max(s.off), end.min(s.off + s.len));
            if a < b {
                out.push((s.key, s.addr + (a - s.off), b - a));
            }
        }
        if len == 0 {
            let s = segs.iter().find(|s| addr >= s.off && addr < s.off + s.len).expect("addr < total");
            out.push((s.key, s.addr + (addr - s.off), 0));
        }
        Ok(Pieces::Many(out))
    }

    /// The one piece of a small access that must not span segments (AMOs, flags).
    /// (`Pieces` keeps the common single-registration case free of allocation.)
    pub(crate) fn word(&self, addr: u64, len: u64) -> softnic_fabric::Result<(MemKey, u64)> {
        match self.pieces(addr, len)?.as_slice() {
            [(k, a, _)] => Ok((*k, *a)),
            _ => Err(softnic_fabric::Error::OutOfBounds),
        }
    }
}

/// One or more pieces of an access: inline when there is one (plain registrations, the
/// hot path, allocate nothing), a list when segments split it.
pub(crate) enum Seq<T> {
    One([T; 1]),
    Many(Vec<T>),
}

impl<T> Seq<T> {
    pub(crate) fn as_slice(&self) -> &[T] {
        match self {
            Seq::One(a) => a,
            Seq::Many(v) => v,
        }
    }

    pub(crate) fn map<U>(self, mut f: impl FnMut(T) -> U) -> Seq<U> {
        match self {
            Seq::One([x]) => Seq::One([f(x)]),
            Seq::Many(v) => Seq::Many(v.into_iter().map(f).collect()),
        }
    }
}

/// The `(key, target address, length)` pieces of one remote access.
pub(crate) type Pieces = Seq<(MemKey, u64, u64)>;
/// The pieces of one remote write with the bytes that go to each.
pub(crate) type Parts<'a> = Seq<(MemKey, u64, &'a [u8])>;

impl RemoteMem {
    /// [`RemoteMem::pieces`] of writing `src` at `addr`, each with its bytes of `src`.
    pub(crate) fn parts<'a>(&self, addr: u64, src: &'a [u8]) -> softnic_fabric::Result<Parts<'a>> {
        let mut done = 0usize;
        Ok(self.pieces(addr, src.len() as u64)?.map(|(k, a, n)| {
            let p = (k, a, &src[done..done + n as usize]);
            done += n as usize;
            p
        }))
    }
}

/// Pairs the remote pieces of a transfer with its local pieces (the same bytes, split
/// where either side's segments end): `(key, remote address, local address, length)`
/// spans, each contiguous on both sides.  A zero-length transfer (one piece each side)
/// keeps its one span.
pub(crate) fn pair(remote: &[(MemKey, u64, u64)], local: &[(u64, u64)]) -> Seq<(MemKey, u64, u64, u64)> {
    if let (&[(k, ra, n)], &[(la, _)]) = (remote, local) {
        return Seq::One([(k, ra, la, n)]);
    }
    let mut out = Vec::with_capacity(remote.len() + local.len());
    let (mut i, mut j, mut ri, mut lj) = (0, 0, 0u64, 0u64);
    while i < remote.len() && j < local.len() {
        let ((k, ra, rn), (la, ln)) = (remote[i], local[j]);
        let n = (rn - ri).min(ln - lj);
        if n > 0 {
            out.push((k, ra + ri, la + lj, n));
        }
        ri += n;
        lj += n;
        if ri == rn {
            (i, ri) = (i + 1, 0);
        }
        if lj == ln {
            (j, lj) = (j + 1, 0);
        }
    }
    Seq::Many(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(segs: &[[u64; 4]]) -> Vec<u64> {
        // Wrapping: some tables here have ends that overflow on purpose.
        let total = segs.iter().fold(0u64, |t, s| t.wrapping_add(s[1]));
        let mut w = vec![SEG_MAGIC, segs.len() as u64, total, 0];
        for s in segs {
            w.extend_from_slice(s);
        }
        w
    }

    #[test]
    fn transfers_split_where_either_side_has_a_segment_boundary() {
        let (k1, k2) = (MemKey { index: 1, generation: 1 }, MemKey { index: 2, generation: 1 });
        let got = pair(&[(k1, 100, 10), (k2, 200, 20)], &[(1000, 5), (2000, 25)]);
        assert_eq!(got.as_slice(), &[(k1, 100, 1000, 5), (k1, 105, 2000, 5), (k2, 200, 2005, 20)]);
        // Both sides in one piece: one span, no list; zero lengths keep their one span.
        assert!(matches!(pair(&[(k1, 100, 8)], &[(1000, 8)]), Seq::One([(_, 100, 1000, 8)])));
        assert_eq!(pair(&[(k1, 100, 0)], &[(1000, 0)]).as_slice(), &[(k1, 100, 1000, 0)]);
        // Boundaries at the same place on both sides: no empty span.
        let got = pair(&[(k1, 0, 4), (k2, 50, 4)], &[(10, 4), (90, 4)]);
        assert_eq!(got.as_slice(), &[(k1, 0, 10, 4), (k2, 50, 90, 4)]);
    }

    #[test]
    fn segment_tables_from_a_target_are_checked() {
        let ok = parse_table(&table(&[[0, 4096, 1, 0x10000], [4096, 8192, 3, 0x40000]])).unwrap();
        assert_eq!(ok.len(), 2);
        assert_eq!((ok[1].off, ok[1].len, ok[1].addr), (4096, 8192, 0x40000));
        // A gap, an overlap, an empty segment, a non-zero start, overflowing ends: refused.
        assert!(parse_table(&table(&[[0, 4096, 1, 0x10000], [8192, 4096, 3, 0x40000]])).is_none());
        assert!(parse_table(&table(&[[0, 4096, 1, 0x10000], [100, 4096, 3, 0x40000]])).is_none());
        assert!(parse_table(&table(&[[0, 0, 1, 0x10000]])).is_none());
        assert!(parse_table(&table(&[[4096, 4096, 1, 0x10000]])).is_none());
        assert!(parse_table(&table(&[[0, u64::MAX, 1, 0x10000]])).is_none());
        assert!(parse_table(&table(&[[0, 1 << 63, 1, 0], [1 << 63, 1 << 63, 3, 0]])).is_none());
        // Truncated, wrong magic, zero or too many segments.
        let mut w = table(&[[0, 4096, 1, 0x10000]]);
        w.pop();
        assert!(parse_table(&w).is_none());
        let mut w = table(&[[0, 4096, 1, 0x10000]]);
        w[0] ^= 1;
        assert!(parse_table(&w).is_none());
        assert!(parse_table(&[SEG_MAGIC, 0, 0, 0]).is_none());
        assert!(parse_table(&[SEG_MAGIC, MAX_SEGS as u64 + 1, 0, 0]).is_none());
    }
}
