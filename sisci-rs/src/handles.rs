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
//!
//! **Lifetimes.**  Objects are `Arc`s.  [`Table::get`] hands out a clone: a call that
//! looked one up keeps it alive while it runs, even if another thread releases the handle
//! meanwhile.  Hot paths instead borrow objects under a [`Guard`] ([`Table::get_in`]): no
//! reference count is touched, and the table does not let go of a released object (drop
//! its `Arc`) until every guard that may have seen it has ended ([`synchronize`]).
//!
//! **Lookups without locks.**  Slots live in chunks that are allocated once and never
//! move or go away (the tables are statics), so a reader finds a slot with two loads and
//! no lock; inserts and releases are serialised by the table's mutex.  A slot's
//! generation is bumped before its pointer is cleared (release) and before a new pointer
//! is published (reuse), and readers load the pointer first, then the generation: a
//! reader that sees a pointer of a later object sees the later generation too.
//!
//! **Guards** (an epoch scheme with two reader counts, in the manner of sleepable RCU): a
//! guard counts itself in the count of the current epoch, then re-reads the epoch (if it
//! moved meanwhile it retries, so it never counts in an epoch that a releaser already
//! waited for).  A release clears the slot, moves the epoch on and waits until the count
//! of the epoch before is zero: every guard that could have loaded the slot's old pointer
//! counted there, and guards that begin later cannot find it.  New guards count in the
//! other epoch, so a release waits only for guards older than itself.  Guards cost two
//! atomic updates of one shared word; they never wait.  Rules: a guard's holder must not
//! release a handle (it would wait for itself) nor drop the last reference of an object
//! (a drop may release handles); guarded sections are short (no sleeping) but may copy
//! data (a DMA transfer).

use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const TAG_BASE: usize = 0x5C10;
const SLOT_BITS: u32 = 24;
const GEN_BITS: u32 = 24;
/// Slots per chunk (log2) and the number of chunks (enough for 2^24 - 1 slots).
const CHUNK_BITS: u32 = 12;
const CHUNKS: usize = 1 << (SLOT_BITS - CHUNK_BITS);

struct Slot<T> {
    gen: AtomicU32,
    /// From `Arc::into_raw`; null when free.
    obj: AtomicPtr<T>,
}

type Chunk<T> = [Slot<T>; 1 << CHUNK_BITS];

pub struct Table<T> {
    kind: usize,
    chunks: [AtomicPtr<Chunk<T>>; CHUNKS],
    /// Writers only: slots handed out so far and the free ones.
    inner: Mutex<Inner>,
}

struct Inner {
    len: usize,
    free: Vec<u32>,
}

// SAFETY: the table hands out `Arc<T>` clones and `&T` to other threads (as a
// `Mutex<Vec<Arc<T>>>` would): it is Send/Sync exactly when Arc<T> is.
unsafe impl<T: Send + Sync> Sync for Table<T> {}
unsafe impl<T: Send + Sync> Send for Table<T> {}

// ---- guards -------------------------------------------------------------------------

/// The reader counts of the two epochs, each on its own cache line.
#[repr(align(64))]
struct Count(AtomicUsize);
static EPOCH: AtomicU64 = AtomicU64::new(0);
static READERS: [Count; 2] = [Count(AtomicUsize::new(0)), Count(AtomicUsize::new(0))];
/// Serialises the epoch moves of releasers.
static MOVING: Mutex<()> = Mutex::new(());

/// A read-side section: objects borrowed under it stay allocated until it ends.
pub struct Guard {
    idx: usize,
}

/// Begins a guarded section (see the module doc).
#[inline]
pub fn guard() -> Guard {
    loop {
        let e = EPOCH.load(Ordering::SeqCst);
        let idx = (e & 1) as usize;
        READERS[idx].0.fetch_add(1, Ordering::SeqCst);
        if EPOCH.load(Ordering::SeqCst) == e {
            return Guard { idx };
        }
        // A releaser moved the epoch between the two loads: count in the new one.
        READERS[idx].0.fetch_sub(1, Ordering::Release);
    }
}

impl Drop for Guard {
    #[inline]
    fn drop(&mut self) {
        READERS[self.idx].0.fetch_sub(1, Ordering::Release);
    }
}

/// Waits until every guard that began before this call has ended.
fn synchronize() {
    let _m = MOVING.lock().unwrap_or_else(|e| e.into_inner());
    let e = EPOCH.fetch_add(1, Ordering::SeqCst);
    let old = &READERS[(e & 1) as usize].0;
    let mut spins = 0u32;
    // SeqCst: with the guard's count update and epoch load, a store-buffer pattern (see
    // [`Removal`]): either this load sees a guard's count, or that guard sees the new epoch.
    while old.load(Ordering::SeqCst) != 0 {
        // Guarded sections never sleep: this ends within one of them (a transfer).
        spins += 1;
        if spins < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// Waits until every guard that began before this call has ended (see [`synchronize`]).
/// For a release of something that guarded quick paths rely on without counting
/// themselves in it, made after the release has been published (SeqCst) where those
/// paths look: a map's use of a remote segment (crate::remote, `RemoteSeg::map_end`).
/// Why that suffices is the argument of [`Removal`], with the map count in the place of
/// `removing`: a guard that read the count before its decrement had counted itself
/// before the epoch moved here, and is waited for; a later one reads the decrement.
/// The caller must not hold a guard.
pub fn wait_for_guards() {
    synchronize();
}

/// A removal in progress of an object that guarded quick paths use without counting
/// themselves in it (SCIRemoveSegment and SCIDisconnectSegment against the quick DMA path):
/// [`Removal::begin`] counts itself in the object's `removing` word, then waits until every
/// guard that began before has ended ([`synchronize`]).  A quick path loads the word under
/// its guard (SeqCst) and leaves the object to the general path when it is not zero.
///
/// Why no quick path is still inside the object when `begin` returns, nor enters it later
/// while the removal runs: all the operations named below are SeqCst, so they fall in one
/// total order.  A guard updates its epoch's count, loads the epoch, and (if unchanged)
/// later loads `removing`; the removal updates `removing`, then moves the epoch and loads
/// the old epoch's count.  If the guard's epoch load came before the move, its count update
/// did too, and the removal sees the count and waits for the guard to end.  Otherwise the
/// guard's load of `removing` comes after the removal's update of it, and sees it.  Ending
/// the removal (drop) uncounts it: by then the object is either released from its table
/// (no later guard can find it) or still alive (the removal refused).
pub struct Removal<'a>(&'a AtomicU32);

impl<'a> Removal<'a> {
    pub fn begin(removing: &'a AtomicU32) -> Self {
        removing.fetch_add(1, Ordering::SeqCst);
        synchronize();
        Removal(removing)
    }
}

impl Drop for Removal<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Release);
    }
}

impl<T> Table<T> {
    pub const fn new(kind: usize) -> Self {
        Table { kind, chunks: [const { AtomicPtr::new(std::ptr::null_mut()) }; CHUNKS], inner: Mutex::new(Inner { len: 0, free: Vec::new() }) }
    }

    fn tag(&self) -> usize {
        (TAG_BASE + self.kind) << 48
    }

    #[inline]
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

    #[inline]
    fn slot(&self, i: usize) -> Option<&Slot<T>> {
        let c = self.chunks.get(i >> CHUNK_BITS)?.load(Ordering::Acquire);
        // SAFETY: published chunks are never freed nor moved (the tables are statics).
        (!c.is_null()).then(|| unsafe { &(*c)[i & ((1 << CHUNK_BITS) - 1)] })
    }

    /// Writers (under `inner`): slot `i`, its chunk allocated on first use.
    fn slot_alloc(&self, i: usize) -> &Slot<T> {
        let at = &self.chunks[i >> CHUNK_BITS];
        if at.load(Ordering::Acquire).is_null() {
            // Built on the heap (64 KiB: not through the stack of a program's thread).
            let v: Box<[Slot<T>]> = (0..1 << CHUNK_BITS).map(|_| Slot { gen: AtomicU32::new(1), obj: AtomicPtr::new(std::ptr::null_mut()) }).collect();
            let c: Box<Chunk<T>> = v.try_into().unwrap_or_else(|_| unreachable!("a chunk's length"));
            at.store(Box::into_raw(c), Ordering::Release);
        }
        self.slot(i).expect("chunk just published")
    }

    /// Stores the object built by `make(handle)` and returns its handle.  `None` when
    /// 2^24 objects of this kind are alive.
    pub fn insert_with(&self, make: impl FnOnce(usize) -> Arc<T>) -> Option<(usize, Arc<T>)> {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let slot = match g.free.pop() {
            Some(s) => s as usize,
            None => {
                if g.len >= (1 << SLOT_BITS) - 1 {
                    return None;
                }
                g.len += 1;
                g.len - 1
            }
        };
        let s = self.slot_alloc(slot);
        let gen = s.gen.load(Ordering::Relaxed);
        let h = self.tag() | ((gen as usize) << SLOT_BITS) | (slot + 1);
        let obj = make(h);
        s.obj.store(Arc::into_raw(obj.clone()) as *mut T, Ordering::Release);
        Some((h, obj))
    }

    /// The live object of handle `h`, borrowed for the life of guard `_g`.  (Always
    /// inlined: a quick path looks up several handles per call.)
    #[inline(always)]
    pub fn get_in<'g>(&self, _g: &'g Guard, h: usize) -> Option<&'g T> {
        let (slot, gen) = self.decode(h)?;
        let s = self.slot(slot)?;
        let p = s.obj.load(Ordering::Acquire);
        if p.is_null() || s.gen.load(Ordering::Acquire) != gen {
            return None;
        }
        // SAFETY: the slot held `p` (of generation `gen`) after the guard began: the
        // table keeps its Arc until every such guard has ended (`remove_if`).
        Some(unsafe { &*p })
    }

    /// The live object of handle `h`.
    #[inline]
    pub fn get(&self, h: usize) -> Option<Arc<T>> {
        let g = guard();
        let o = self.get_in(&g, h)?;
        // SAFETY: `o` came from `Arc::into_raw` and is kept by the table under the guard;
        // the new count is ours.
        unsafe {
            Arc::increment_strong_count(o);
            Some(Arc::from_raw(o))
        }
    }

    /// Releases handle `h` when `ok(obj)` holds: the check and the release are one step
    /// under the table lock.  Returns the object when it was released; it is no longer
    /// borrowed by any guarded section then.
    pub fn remove_if(&self, h: usize, ok: impl FnOnce(&Arc<T>) -> bool) -> Option<Arc<T>> {
        let (slot, gen) = self.decode(h)?;
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let s = self.slot(slot)?;
        let p = s.obj.load(Ordering::Acquire);
        if p.is_null() || s.gen.load(Ordering::Relaxed) != gen {
            return None;
        }
        // SAFETY: the table's own reference, still held (its count is the table's).
        let o = std::mem::ManuallyDrop::new(unsafe { Arc::from_raw(p) });
        if !ok(&o) {
            return None;
        }
        let next = (gen + 1) & ((1 << GEN_BITS) - 1);
        s.gen.store(if next == 0 { 1 } else { next }, Ordering::Release);
        s.obj.store(std::ptr::null_mut(), Ordering::Release);
        g.free.push(slot as u32);
        drop(g);
        synchronize();
        Some(std::mem::ManuallyDrop::into_inner(o))
    }

    pub fn remove(&self, h: usize) -> Option<Arc<T>> {
        self.remove_if(h, |_| true)
    }

    /// Does `pred` hold for a live object?  (No snapshot taken: objects are borrowed
    /// under a guard.)
    pub fn any(&self, mut pred: impl FnMut(&T) -> bool) -> bool {
        let len = self.inner.lock().unwrap_or_else(|e| e.into_inner()).len;
        let _g = guard();
        (0..len).any(|i| {
            let Some(s) = self.slot(i) else { return false };
            let p = s.obj.load(Ordering::Acquire);
            // SAFETY: as in `get_in` (the guard keeps an object the slot held alive).
            !p.is_null() && pred(unsafe { &*p })
        })
    }

    /// Every live object (a snapshot).
    pub fn all(&self) -> Vec<Arc<T>> {
        let len = self.inner.lock().unwrap_or_else(|e| e.into_inner()).len;
        let _g = guard();
        (0..len)
            .filter_map(|i| {
                let p = self.slot(i)?.obj.load(Ordering::Acquire);
                // SAFETY: as in `get`.
                (!p.is_null()).then(|| unsafe {
                    Arc::increment_strong_count(p);
                    Arc::from_raw(p)
                })
            })
            .collect()
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

    /// An object borrowed under a guard stays allocated until the guard ends, even when
    /// another thread releases its handle meanwhile; lookups after the release fail.
    #[test]
    fn a_release_waits_for_guards() {
        use std::sync::atomic::AtomicBool;
        static T: Table<u64> = Table::new(12);
        let (h, obj) = T.insert_with(|_| Arc::new(42)).unwrap();
        let weak = Arc::downgrade(&obj);
        drop(obj);
        let g = guard();
        let borrowed = T.get_in(&g, h).unwrap();
        let released = Arc::new(AtomicBool::new(false));
        let r = released.clone();
        let t = std::thread::spawn(move || {
            let o = T.remove(h).expect("released");
            r.store(true, Ordering::SeqCst);
            drop(o);
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!released.load(Ordering::SeqCst), "the release waits for the guard");
        assert!(T.get(h).is_none(), "but the handle is gone at once");
        assert_eq!(*borrowed, 42);
        drop(g);
        t.join().unwrap();
        assert!(released.load(Ordering::SeqCst));
        assert!(weak.upgrade().is_none(), "freed once the guard ended");
        assert!(T.get_in(&guard(), h).is_none());
    }

    /// A removal waits for the guards that began before it, and guards that begin while
    /// it runs see its mark (what the quick DMA path relies on).
    #[test]
    fn a_removal_waits_for_guards_and_is_seen_by_later_ones() {
        use std::sync::atomic::AtomicBool;
        static REMOVING: AtomicU32 = AtomicU32::new(0);
        static BEGUN: AtomicBool = AtomicBool::new(false);
        let g = guard();
        assert_eq!(REMOVING.load(Ordering::SeqCst), 0);
        let t = std::thread::spawn(|| {
            let r = Removal::begin(&REMOVING);
            BEGUN.store(true, Ordering::SeqCst);
            let later = guard();
            assert_ne!(REMOVING.load(Ordering::SeqCst), 0, "a later guard sees the removal");
            drop(later);
            drop(r);
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!BEGUN.load(Ordering::SeqCst), "the removal waits for the earlier guard");
        drop(g);
        t.join().unwrap();
        assert_eq!(REMOVING.load(Ordering::SeqCst), 0, "uncounted when it ends");
    }
}
