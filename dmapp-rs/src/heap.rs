//! The symmetric-heap allocator: a deterministic first-fit allocator over
//! offsets.  Its result depends only on the sequence of calls, so every PE that
//! makes the same malloc/realloc/free calls with the same sizes gets the same
//! offsets (DMAPP's symmetry rule, 4.9.3), and a local sheap address translates to
//! the same object on any PE.  Book-keeping lives outside the heap, so a stray
//! remote write into the heap cannot corrupt the allocator.

use std::collections::BTreeMap;

/// Block granularity and alignment: a cache line (16-byte DQW alignment is the
/// documented minimum; 64 keeps blocks of different PEs' writers apart).
pub const ALIGN: usize = 64;

pub struct Heap {
    len: usize,
    /// offset -> length, free blocks, coalesced.
    free: BTreeMap<usize, usize>,
    /// offset -> length (rounded), live blocks.
    used: BTreeMap<usize, usize>,
}

fn round(size: usize) -> Option<usize> {
    // malloc(0) gets a unique minimal block, so symmetric sequences stay identical.
    size.max(1).checked_add(ALIGN - 1).map(|s| s & !(ALIGN - 1))
}

impl Heap {
    pub fn new(len: usize) -> Heap {
        let len = len & !(ALIGN - 1);
        let mut free = BTreeMap::new();
        if len > 0 {
            free.insert(0, len);
        }
        Heap { len, free, used: BTreeMap::new() }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Lowest-offset free block that fits.
    pub fn malloc(&mut self, size: usize) -> Option<usize> {
        let need = round(size)?;
        let (&off, &flen) = self.free.iter().find(|(_, &l)| l >= need)?;
        self.free.remove(&off);
        if flen > need {
            self.free.insert(off + need, flen - need);
        }
        self.used.insert(off, need);
        Some(off)
    }

    /// Size of the live block at `off`.
    pub fn block(&self, off: usize) -> Option<usize> {
        self.used.get(&off).copied()
    }

    /// Frees the live block at `off`; false if there is none.
    pub fn free(&mut self, off: usize) -> bool {
        let Some(len) = self.used.remove(&off) else { return false };
        self.insert_free(off, len);
        true
    }

    fn insert_free(&mut self, mut off: usize, mut len: usize) {
        if let Some((&p, &pl)) = self.free.range(..off).next_back() {
            if p + pl == off {
                self.free.remove(&p);
                off = p;
                len += pl;
            }
        }
        if let Some(&nl) = self.free.get(&(off + len)) {
            self.free.remove(&(off + len));
            len += nl;
        }
        self.free.insert(off, len);
    }

    /// Resizes the live block at `off` in place if possible.  Returns Some(true)
    /// when done in place, Some(false) when the caller must move it, None if `off`
    /// is not a live block or the size overflows.
    pub fn resize_in_place(&mut self, off: usize, size: usize) -> Option<bool> {
        let cur = self.block(off)?;
        let need = round(size)?;
        if need <= cur {
            if need < cur {
                self.used.insert(off, need);
                self.insert_free(off + need, cur - need);
            }
            return Some(true);
        }
        let next = off + cur;
        match self.free.get(&next).copied() {
            Some(nl) if cur + nl >= need => {
                self.free.remove(&next);
                if cur + nl > need {
                    self.free.insert(off + need, cur + nl - need);
                }
                self.used.insert(off, need);
                Some(true)
            }
            _ => Some(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_sequence_same_offsets() {
        let run = || {
            let mut h = Heap::new(1 << 20);
            let a = h.malloc(100).unwrap();
            let b = h.malloc(0).unwrap();
            let c = h.malloc(5000).unwrap();
            assert!(h.free(b));
            let d = h.malloc(10).unwrap();
            assert_eq!(h.resize_in_place(a, 40), Some(true));
            assert_eq!(h.resize_in_place(c, 9000), Some(true));
            (a, b, c, d, h.malloc(64).unwrap())
        };
        assert_eq!(run(), run());
        let (a, b, c, d, _) = run();
        assert_eq!((a, b, c, d), (0, 128, 192, 128));
    }

    #[test]
    fn exhaustion_and_coalescing() {
        let mut h = Heap::new(256);
        let a = h.malloc(128).unwrap();
        let b = h.malloc(128).unwrap();
        assert_eq!(h.malloc(1), None);
        assert!(h.free(a) && h.free(b));
        assert!(!h.free(b));
        assert_eq!(h.malloc(256), Some(0));
        assert_eq!(Heap::new(0).malloc(0), None);
        assert_eq!(h.malloc(usize::MAX), None);
    }
}
