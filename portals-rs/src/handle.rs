//! Handle encoding: `ptl_handle_*_t` are 32-bit integers.
//!
//! ```text
//! 31..30 kind (NI 0, ME 1, MD 2, EQ 3)   29..16 generation (low 14 bits)   15..0 index
//! ```
//! Object handles carry their row's generation plus the NI's random `hbase`
//! ([`crate::seg::Seg::handle`]), so a handle of an earlier NI does not name a row of a
//! later one that happens to have the same generation.
//! Index 0xffff is never allocated, so PTL_INVALID_HANDLE (EQ kind), PTL_HANDLE_NONE (ME
//! kind) and PTL_EQ_NONE (MD kind), whose low 30 bits are all ones, never name an object;
//! the NI generation starts at 1, so 0 is never a handle either.  A handle is valid while
//! its row is live with the same generation: an unlinked or freed object's handle is
//! stale and refused.

pub const NI: u32 = 0;
pub const ME: u32 = 1;
pub const MD: u32 = 2;
pub const EQ: u32 = 3;
pub const GEN_MASK: u32 = 0x3fff;
/// Rows per table at most (index 0xffff is reserved, see above).
pub const MAX_ROWS: u32 = 0xfffe;

pub fn make(kind: u32, gen: u32, idx: u32) -> u32 {
    debug_assert!(kind < 4 && idx <= MAX_ROWS);
    (kind << 30) | ((gen & GEN_MASK) << 16) | (idx & 0xffff)
}

/// (kind, generation bits, index).
pub fn split(h: u32) -> (u32, u32, u32) {
    (h >> 30, (h >> 16) & GEN_MASK, h & 0xffff)
}

/// The index of `h` if it is of `kind`.
pub fn index_of(h: u32, kind: u32) -> Option<(u32, u32)> {
    let (k, g, i) = split(h);
    (k == kind && i <= MAX_ROWS).then_some((i, g))
}

/// Does a row generation match a handle's generation bits?
pub fn gen_matches(row_gen: u32, h_gen: u32) -> bool {
    row_gen & GEN_MASK == h_gen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_values_never_decode_to_rows() {
        for v in [0xffff_ffffu32, 0x7fff_ffff, 0xbfff_ffff] {
            let (_, _, i) = split(v);
            assert!(i > MAX_ROWS);
        }
        let h = make(MD, 0x12345, 77);
        assert_eq!(index_of(h, MD), Some((77, 0x2345)));
        assert_eq!(index_of(h, ME), None);
        assert!(gen_matches(0x12345, 0x2345));
    }
}
