//! Typed, stale-proof handles.  A C handle (`sci_desc_t`, `sci_map_t`, ...) is an opaque
//! pointer-sized value that is never dereferenced:
//!
//! ```text
//! 63..48  tag: 0x5C10 + object kind (non-canonical on x86-64 and arm64, so a program that
//!         dereferences one faults instead of reading our memory)
//! 47..24  generation of the slot (bumped when the object is released)
//! 23..0   slot + 1
//! ```
//! A lookup checks tag, slot and generation, so a NULL handle, a handle of another kind,
//! a released one or a forged one is refused (SCI_ERR_ILLEGAL_PARAMETER at the caller).
//! Objects are `Arc`s: a call that looked one up keeps it alive while it runs, even if
//! another thread releases the handle meanwhile.

use std::sync::{Arc, RwLock};

const TAG_BASE: usize = 0x5C10;
const SLOT_BITS: u32 = 24;
const GEN_BITS: u32 = 24;

pub struct Table<T> {
    kind: usize,
    inner: RwLock<Inner<T>>,
}

struct Inner<T> {
    slots: Vec<(u32, Option<Arc<T>>)>,
    free: Vec<u32>,
}

impl<T> Table<T> {
    pub const fn new(kind: usize) -> Self {
        Table { kind, inner: RwLock::new(Inner { slots: Vec::new(), free: Vec::new() }) }
    }

    fn tag(&self) -> usize {
        (TAG_BASE + self.kind) << 48
    }

    fn decode(&self, h: usize) -> Option<(usize, u32)> {
        if h & !((1 << 48) - 1) != self.tag() {
            return None;
        }
        let slot = h & ((1 << SLOT_BITS) - 1);
        if slot == 0 {
            return None;
        }
        Some((slot - 1, ((h >> SLOT_BITS) & ((1 << GEN_BITS) - 1)) as u32))
    }

    /// Stores the object built by `make(handle)` and returns its handle.  `None` when
    /// 2^24 objects of this kind are alive.
    pub fn insert_with(&self, make: impl FnOnce(usize) -> Arc<T>) -> Option<(usize, Arc<T>)> {
        let mut g = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let slot = match g.free.pop() {
            Some(s) => s as usize,
            None => {
                if g.slots.len() >= (1 << SLOT_BITS) - 1 {
                    return None;
                }
                g.slots.push((1, None));
                g.slots.len() - 1
            }
        };
        let gen = g.slots[slot].0;
        let h = self.tag() | ((gen as usize) << SLOT_BITS) | (slot + 1);
        let obj = make(h);
        g.slots[slot].1 = Some(obj.clone());
        Some((h, obj))
    }

    /// The live object of handle `h`.
    #[inline]
    pub fn get(&self, h: usize) -> Option<Arc<T>> {
        let (slot, gen) = self.decode(h)?;
        let g = self.inner.read().unwrap_or_else(|e| e.into_inner());
        match g.slots.get(slot) {
            Some((sg, Some(o))) if *sg == gen => Some(o.clone()),
            _ => None,
        }
    }

    /// Releases handle `h` when `ok(obj)` holds: the check and the release are one step
    /// under the table lock.  Returns the object when it was released.
    pub fn remove_if(&self, h: usize, ok: impl FnOnce(&Arc<T>) -> bool) -> Option<Arc<T>> {
        let (slot, gen) = self.decode(h)?;
        let mut g = self.inner.write().unwrap_or_else(|e| e.into_inner());
        match g.slots.get(slot) {
            Some((sg, Some(o))) if *sg == gen => {
                if !ok(o) {
                    return None;
                }
            }
            _ => return None,
        }
        let e = &mut g.slots[slot];
        e.0 = (e.0 + 1) & ((1 << GEN_BITS) - 1);
        if e.0 == 0 {
            e.0 = 1;
        }
        let o = e.1.take();
        g.free.push(slot as u32);
        o
    }

    pub fn remove(&self, h: usize) -> Option<Arc<T>> {
        self.remove_if(h, |_| true)
    }

    /// Every live object (a snapshot).
    pub fn all(&self) -> Vec<Arc<T>> {
        let g = self.inner.read().unwrap_or_else(|e| e.into_inner());
        g.slots.iter().filter_map(|(_, o)| o.clone()).collect()
    }

    /// The slot index of a handle (for opaque address tokens).
    pub fn slot_of(&self, h: usize) -> usize {
        self.decode(h).map_or(0, |(s, _)| s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_typed_and_stale_proof() {
        let a: Table<u32> = Table::new(1);
        let b: Table<u32> = Table::new(2);
        let (h, _) = a.insert_with(|_| Arc::new(7)).unwrap();
        assert_eq!(*a.get(h).unwrap(), 7);
        assert!(b.get(h).is_none(), "another kind's table refuses it");
        assert!(a.get(0).is_none());
        assert!(a.get(h + 1).is_none());
        assert!(a.remove(h).is_some());
        assert!(a.get(h).is_none(), "released");
        let (h2, _) = a.insert_with(|_| Arc::new(8)).unwrap();
        assert_ne!(h, h2, "the slot is reused with a new generation");
        assert!(a.get(h).is_none());
        assert_eq!(*a.get(h2).unwrap(), 8);
        assert!(a.remove_if(h2, |_| false).is_none());
        assert!(a.get(h2).is_some());
        assert_eq!(h >> 48, 0x5C11);
    }
}
