//! Handles: the per-type tables that turn the opaque handles C sees into objects, and
//! the two helpers every module uses ([`GniResult`], [`lock`]).
//!
//! Each handle is a tagged, never-reused id looked up in a per-type [`Table`], so a
//! NULL, forged, wrong-type or destroyed handle is detected and answered with
//! `GNI_RC_INVALID_PARAM` instead of being dereferenced.  The objects themselves are in
//! crate::objects (and crate::ce, crate::errors, crate::msgq for theirs).
//!
//! The hot calls (a post, GNI_CqGetEvent, GNI_GetCompleted) find their object in a
//! per-thread cache ([`Table::with`]) whose entries hold strong references: that is also
//! what keeps an object destroyed by another thread mid-call alive, with no atomic
//! read-modify-write per call.  Considered instead (issue 25, round 5): type-stable slots
//! (handle = tag | slot | generation, slots never freed) checked under the lock the
//! operation takes anyway.  Only a post takes a lock the slot could share (the EP's);
//! GNI_GetCompleted takes none and GNI_CqGetEvent's pop is lock-free, so they would each
//! gain a locked instruction (about 2 ns here), as much as the cache hit costs them now
//! (about 35 instructions, the thread-local access included, see [`cache_word`]).

use crate::types::*;
use once_cell::sync::Lazy;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

/// Result of an internal step: the error is the code the exported function returns.
pub type GniResult<T> = std::result::Result<T, gni_return_t>;

/// Locks a mutex, ignoring poisoning: a panic aborts the process at the C boundary, so a
/// poisoned lock is never observed by a later call.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Handles are unique sequential ids: mixing their bits once is all the hashing the
/// table needs (SipHash showed up in CQ polling profiles).
#[derive(Default, Clone, Copy)]
pub struct IdHash;

impl std::hash::BuildHasher for IdHash {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}

pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        // Fibonacci hashing spreads sequential ids over the table's buckets.
        self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | *b as u64;
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// Live objects of one type, by handle.  Handle value = tag in the top byte, then a
/// 48-bit id that is never reused: a destroyed handle stays invalid forever.
pub struct Table<T> {
    tag: u64,
    next: AtomicU64,
    live: Lazy<RwLock<HashMap<u64, Arc<T>, IdHash>>>,
}

impl<T> Table<T> {
    pub const fn new(tag: u8) -> Table<T> {
        Table { tag: tag as u64, next: AtomicU64::new(1), live: Lazy::new(|| RwLock::new(HashMap::with_hasher(IdHash::default()))) }
    }

    /// The key of handle `h` in this table: INVALID_PARAM for NULL or another table's tag.
    #[inline(always)]
    fn key_of(&self, h: *const c_void) -> GniResult<u64> {
        let k = h as usize as u64;
        if k >> 56 != self.tag {
            return Err(GNI_RC_INVALID_PARAM);
        }
        Ok(k)
    }

    /// Stores `v` and returns its new handle.
    pub fn insert(&self, v: Arc<T>) -> *mut c_void {
        let id = self.next.fetch_add(1, Ordering::Relaxed) & ((1 << 48) - 1);
        let h = (self.tag << 56) | id;
        self.live.write().unwrap_or_else(|e| e.into_inner()).insert(h, v);
        h as usize as *mut c_void
    }

    /// The object behind `h`, or INVALID_PARAM for NULL/unknown/destroyed/wrong-type handles.
    ///
    /// Hot calls (PostFma, CqGetEvent, GetCompleted) look the same few handles up again and
    /// again, so each thread keeps its last lookups; any removal, in any table, bumps
    /// [`HANDLE_EPOCH`] and so empties every thread's cache before the next lookup.  A
    /// cached entry holds a strong reference: an object destroyed by another thread in the
    /// middle of a call stays valid memory until that call ends.
    pub fn get(&self, h: *const c_void) -> GniResult<Arc<T>>
    where
        T: Send + Sync + 'static,
    {
        let k = self.key_of(h)?;
        let epoch = HANDLE_EPOCH.load(Ordering::Acquire);
        let hit = cache_do(|c| {
            if c.epoch != epoch {
                return None;
            }
            c.slots[cache_index(k)].as_ref().filter(|e| e.key == k).map(|e| e.obj.clone())
        })
        .flatten();
        if let Some(any) = hit {
            if let Ok(v) = any.downcast::<T>() {
                return Ok(v);
            }
        }
        let v = self.live.read().unwrap_or_else(|e| e.into_inner()).get(&k).cloned().ok_or(GNI_RC_INVALID_PARAM)?;
        let entry = Cached {
            key: k,
            #[cfg(debug_assertions)]
            ty: std::any::TypeId::of::<T>(),
            obj: v.clone() as Arc<dyn std::any::Any + Send + Sync>,
        };
        let ptr = Arc::as_ptr(&v) as usize;
        let dropped = cache_do(|c| {
            let mut out = Vec::new();
            if c.epoch != epoch {
                out = c.retire_all();
                c.epoch = epoch;
            }
            let i = cache_index(k);
            c.hot[i] = (k, ptr);
            if let Some(old) = c.slots[i].replace(entry) {
                out.extend(c.retire(old));
            }
            out
        });
        drop(dropped); // outside the cache: a destructor may look handles up
        Ok(v)
    }

    /// Runs `f` on the object behind `h` (errors as [`Table::get`]) without taking a
    /// reference count when the handle is in this thread's cache: the hot calls
    /// (PostFma, CqGetEvent, GetCompleted, SMSG) then do no atomic read-modify-write for
    /// the lookup.  While `f` runs the cache entry is *pinned*: entries this thread drops
    /// from its cache meanwhile (a nested call that misses, a removal, e.g. from an event
    /// handler) are kept alive until the outermost `with` returns.
    ///
    /// Inlined into each exported function (one frame, `f` inlined too); a miss takes a
    /// reference from the table instead ([`Table::get`], out of line).
    #[inline(always)]
    pub fn with<R>(&self, h: *const c_void, f: impl FnOnce(&T) -> R) -> GniResult<R>
    where
        T: Send + Sync + 'static,
    {
        let k = self.key_of(h)?;
        match cache_pin(k) {
            // SAFETY (of the dereference below): the cache entry's Arc keeps the object
            // alive: while pinned (till `_unpin` drops), this thread's cache never drops an
            // entry (it defers it), and other threads never touch it.  It is an Arc<T>: its
            // key carries this table's tag (`key_of`), tags are distinct (test
            // `every_table_has_its_own_tag`) and only this table's `get` caches entries
            // under its tag.
            Some((p, cell)) => {
                debug_assert!(cache_type_is::<T>(k));
                let _unpin = Unpin(cell);
                Ok(f(unsafe { &*(p as *const T) }))
            }
            None => self.with_missed(h, f),
        }
    }

    /// [`Table::with`] after a cache miss: with a reference taken from the table (which
    /// caches it).  Out of line, so that the hit path keeps few registers.
    #[inline(never)]
    fn with_missed<R>(&self, h: *const c_void, f: impl FnOnce(&T) -> R) -> GniResult<R>
    where
        T: Send + Sync + 'static,
    {
        let v = self.get(h)?;
        Ok(f(&v))
    }

    /// The live objects and their handles (the checker's report at exit).
    pub fn live_objects(&self) -> Vec<(u64, Arc<T>)> {
        self.live.read().unwrap_or_else(|e| e.into_inner()).iter().map(|(k, v)| (*k, v.clone())).collect()
    }

    /// Removes `h`; later lookups fail.
    pub fn remove(&self, h: *const c_void) -> GniResult<Arc<T>> {
        let k = self.key_of(h)?;
        let v = self.live.write().unwrap_or_else(|e| e.into_inner()).remove(&k).ok_or(GNI_RC_INVALID_PARAM)?;
        // Release: a thread that sees the new epoch also sees the map without `h`.
        HANDLE_EPOCH.fetch_add(1, Ordering::Release);
        let dead = cache_do(|c| c.retire_all());
        drop(dead);
        Ok(v)
    }
}

/// Bumped by every handle removal; per-thread handle caches are valid for one epoch.
static HANDLE_EPOCH: AtomicU64 = AtomicU64::new(0);
/// Entries of a thread's handle cache: [`CACHE_WAYS`] per table, direct-mapped (see
/// [`cache_index`]).
const HANDLE_CACHE_SLOTS: usize = 8 * CACHE_WAYS;
const CACHE_WAYS: usize = 4;

/// The cache entry handle key `k` may occupy: the table's group (low three bits of its
/// tag: the tables' tags differ there) and, within it, the id's low bits, so that a
/// program's few endpoints or CQs of consecutive ids (one per peer) each keep their own
/// entry.  One compare decides a hit (no search); entries of another table that share
/// the index only evict each other (the whole key, tag included, is compared).
#[inline(always)]
fn cache_index(k: u64) -> usize {
    ((((k >> 56) & 7) as usize) * CACHE_WAYS) | (k as usize & (CACHE_WAYS - 1))
}

/// One cached lookup: the handle, the object's type, and the reference that keeps it
/// alive (its address is in [`HandleCache::hot`]).
struct Cached {
    key: u64,
    /// Debug builds only (the key's tag implies the type: see [`Table::with`]).
    #[cfg(debug_assertions)]
    ty: std::any::TypeId,
    obj: Arc<dyn std::any::Any + Send + Sync>,
}

struct HandleCache {
    epoch: u64,
    /// By [`cache_index`] of their keys.
    slots: [Option<Cached>; HANDLE_CACHE_SLOTS],
    /// (key, object address) of each entry of `slots`, (0, 0) for none: what a hit reads
    /// (16 bytes per entry, no discriminant to test; keys are never 0: they carry a tag).
    hot: [(u64, usize); HANDLE_CACHE_SLOTS],
    /// Active [`Table::with`] calls of this thread, and the entries dropped meanwhile.
    pinned: u32,
    deferred: Vec<Cached>,
}

impl HandleCache {
    /// Drops `e` from the cache: kept in `deferred` while pinned, else handed back for
    /// the caller to drop once it has left the cache.
    fn retire(&mut self, e: Cached) -> Option<Cached> {
        if self.pinned > 0 {
            self.deferred.push(e);
            None
        } else {
            Some(e)
        }
    }
    /// Empties the cache (as `retire` for every entry).
    fn retire_all(&mut self) -> Vec<Cached> {
        self.hot = [(0, 0); HANDLE_CACHE_SLOTS];
        let mut v: Vec<Cached> = self.slots.iter_mut().filter_map(Option::take).collect();
        if self.pinned > 0 {
            self.deferred.append(&mut v);
        }
        v
    }
}

/// This thread's cache, reached through one word of thread-local storage:
/// null until the thread's first lookup, [`CACHE_GONE`] once the thread's destructors
/// dropped it (lookups then go to the tables), else the cache, owned by the thread's
/// [`CacheOwner`].
///
/// Why not a `thread_local!`: this library is a dylib, so every access to one is a call
/// to `__tls_get_addr` (general-dynamic model) plus a registration test: about 18
/// instructions, three times per put with its event.  The word is in the static TLS
/// block instead (initial-exec model, on x86-64 Linux): two loads.  A library loaded by
/// `dlopen` takes its static TLS from the block glibc keeps in reserve for that (an
/// 8-byte word is what it is meant for).  Other targets use a `thread_local!` word.
mod cache_word {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    std::arch::global_asm!(
        ".pushsection .tbss.ugni_handle_cache_word,\"awT\",@nobits",
        ".p2align 3",
        ".globl ugni_handle_cache_word",
        ".hidden ugni_handle_cache_word",
        ".type ugni_handle_cache_word,@object",
        ".size ugni_handle_cache_word,8",
        "ugni_handle_cache_word:",
        ".zero 8",
        ".popsection",
    );

    /// The address of this thread's word (the same for the whole life of the thread).
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    #[inline(always)]
    pub fn addr() -> *mut *mut super::HandleCache {
        let p: usize;
        // SAFETY: reads the thread pointer (`%fs:0` holds the TCB's own address on x86-64
        // Linux) and the word's offset from it (its GOT entry, relocated at load time);
        // their sum is this thread's copy of the word.  No side effects.
        unsafe {
            std::arch::asm!(
                "mov {p}, qword ptr fs:[0]",
                "add {p}, qword ptr [rip + ugni_handle_cache_word@GOTTPOFF]",
                p = out(reg) p,
                options(pure, readonly, nostack),
            )
        };
        p as *mut *mut super::HandleCache
    }

    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    thread_local! {
        static WORD: std::cell::Cell<*mut super::HandleCache> = const { std::cell::Cell::new(std::ptr::null_mut()) };
    }

    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    #[inline(always)]
    pub fn addr() -> *mut *mut super::HandleCache {
        WORD.with(|w| w.as_ptr())
    }
}

/// The word's value after the thread's cache was dropped (never an address).
const CACHE_GONE: usize = 1;

/// Owns this thread's cache: its destructor (a `thread_local!` one, registered with the
/// cache's creation) drops the cache at thread exit and leaves [`CACHE_GONE`] behind.
struct CacheOwner;

thread_local! {
    static CACHE_OWNER: CacheOwner = const { CacheOwner };
}

impl Drop for CacheOwner {
    fn drop(&mut self) {
        let w = cache_word::addr();
        // SAFETY: this thread's word; the cache it names was made by `cache_new` (a Box)
        // and only this destructor frees it.  The word is marked first, so destructors of
        // the cached objects that look handles up go to the tables.
        unsafe {
            let c = *w;
            *w = CACHE_GONE as *mut HandleCache;
            if c as usize > CACHE_GONE {
                drop(Box::from_raw(c));
            }
        }
    }
}

/// This thread's cache, made on first use; None once the thread is being torn down.
#[inline(always)]
fn cache_get() -> Option<*mut HandleCache> {
    // SAFETY: this thread's word, read.
    let c = unsafe { *cache_word::addr() };
    if c as usize > CACHE_GONE {
        return Some(c);
    }
    cache_new(c)
}

/// The cache of a thread that has none yet (`c` null): made and its owner registered;
/// None if the thread is being torn down (`c` is [`CACHE_GONE`], or the owner's
/// destructor can no longer be registered).
#[cold]
#[inline(never)]
fn cache_new(c: *mut HandleCache) -> Option<*mut HandleCache> {
    if !c.is_null() || CACHE_OWNER.try_with(|_| ()).is_err() {
        return None;
    }
    let c = Box::into_raw(Box::new(HandleCache { epoch: 0, slots: [const { None }; HANDLE_CACHE_SLOTS], hot: [(0, 0); HANDLE_CACHE_SLOTS], pinned: 0, deferred: Vec::new() }));
    // SAFETY: this thread's word, which held null.
    unsafe { *cache_word::addr() = c };
    Some(c)
}

/// Runs `g` on this thread's handle cache; None while the thread is being torn down (its
/// cache is gone: lookups then go to the tables).  `g` must neither call anything that
/// uses the cache nor drop a cached object (hand it back; the caller drops it after).
fn cache_do<R>(g: impl FnOnce(&mut HandleCache) -> R) -> Option<R> {
    let c = cache_get()?;
    // SAFETY: this thread's cache (alive until the thread's owner destructor, which runs
    // after every call of this thread); the only reference to it while `g` runs, since
    // `g` does not re-enter (contract above).
    Some(g(unsafe { &mut *c }))
}

/// Unpins this thread's handle cache when a [`Table::with`] call ends.
struct Unpin(*mut HandleCache);

impl Drop for Unpin {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the pinning call's thread, its cache still alive (it lives as long as the
        // thread); no other reference to it exists while this runs.
        let c = unsafe { &mut *self.0 };
        c.pinned -= 1;
        if c.pinned == 0 && !c.deferred.is_empty() {
            drop_deferred(self.0);
        }
    }
}

/// Drops what the cache deferred while pinned (rare: an entry replaced meanwhile).
#[cold]
fn drop_deferred(c: *mut HandleCache) {
    // SAFETY: as in `Unpin::drop`; the reference ends before the entries are dropped.
    let dead = std::mem::take(unsafe { &mut (*c).deferred });
    drop(dead); // outside the cache: a destructor may look handles up
}

/// Debug builds: is the cached object of key `k` of type `T`?  (What the tag implies.)
#[cfg(debug_assertions)]
fn cache_type_is<T: 'static>(k: u64) -> bool {
    cache_do(|c| c.slots[cache_index(k)].as_ref().filter(|e| e.key == k).is_none_or(|e| e.ty == std::any::TypeId::of::<T>())).unwrap_or(true)
}
#[cfg(not(debug_assertions))]
#[inline(always)]
fn cache_type_is<T: 'static>(_k: u64) -> bool {
    true
}

/// The object of handle key `k` in this thread's cache, pinned (see [`Table::with`]), with
/// the cache's address for the unpinning; None on a miss, after a removal anywhere (epoch)
/// or while the thread is being torn down.  One thread-local access and one compare;
/// the key alone decides (its tag names the table, so the type).
#[inline(always)]
fn cache_pin(k: u64) -> Option<(usize, *mut HandleCache)> {
    let epoch = HANDLE_EPOCH.load(Ordering::Acquire);
    // SAFETY: this thread's word, read.  A thread with no cache yet misses (the miss path
    // makes it).
    let cell = unsafe { *cache_word::addr() };
    if cell as usize <= CACHE_GONE {
        return None;
    }
    // SAFETY: this thread's cache, alive for the whole call; the only reference to it in
    // this block, which calls nothing that uses the cache.
    let c = unsafe { &mut *cell };
    if c.epoch != epoch {
        return None;
    }
    let (key, p) = c.hot[cache_index(k)];
    if key != k {
        return None;
    }
    c.pinned += 1;
    Some((p, cell))
}

#[cfg(test)]
mod handle_cache_tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// An object whose destructor looks another handle up, as a destroyed EP's or CQ's
    /// clean-up may.
    struct LooksUp;
    static OTHER: Table<u64> = Table::new(0xd1);
    static LOOKERS: Table<LooksUp> = Table::new(0xd2);
    static OTHER_H: AtomicUsize = AtomicUsize::new(0);
    static LOOKUPS_IN_DROP: AtomicUsize = AtomicUsize::new(0);

    impl Drop for LooksUp {
        fn drop(&mut self) {
            let h = OTHER_H.load(Ordering::Relaxed) as *const c_void;
            assert_eq!(OTHER.with(h, |v| *v), Ok(7));
            LOOKUPS_IN_DROP.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A handle of one type given where another is expected must not be found: every
    /// table has a tag of its own.
    #[test]
    fn every_table_has_its_own_tag() {
        let tags = [
            crate::objects::CDMS.tag,
            crate::objects::NICS.tag,
            crate::objects::CQS.tag,
            crate::objects::EPS.tag,
            crate::ce::CES.tag,
            crate::errors::ERRS.tag,
            crate::msgq::MSGQS.tag,
            OTHER.tag,
            LOOKERS.tag,
        ];
        let distinct: std::collections::HashSet<u64> = tags.iter().copied().collect();
        assert_eq!(distinct.len(), tags.len(), "tags {tags:x?}");
    }

    #[test]
    fn cached_objects_die_outside_the_cache() {
        OTHER_H.store(OTHER.insert(Arc::new(7)) as usize, Ordering::Relaxed);
        // 1. Removed by another thread while this thread's cache holds the last
        //    reference: the next lookup here empties the cache and the destructor runs.
        let h = LOOKERS.insert(Arc::new(LooksUp)) as usize;
        assert!(LOOKERS.with(h as *const c_void, |_| ()).is_ok());
        std::thread::spawn(move || drop(LOOKERS.remove(h as *const c_void).unwrap())).join().unwrap();
        assert_eq!(LOOKUPS_IN_DROP.load(Ordering::Relaxed), 0, "this thread's cache still holds it");
        assert_eq!(OTHER.with(OTHER_H.load(Ordering::Relaxed) as *const c_void, |v| *v), Ok(7));
        assert_eq!(LOOKUPS_IN_DROP.load(Ordering::Relaxed), 1);
        // 2. Removed from inside a `with` on it: kept alive (deferred) until the call ends.
        let h2 = LOOKERS.insert(Arc::new(LooksUp));
        let r = LOOKERS.with(h2, |_| {
            drop(LOOKERS.remove(h2).unwrap());
            LOOKUPS_IN_DROP.load(Ordering::Relaxed)
        });
        assert_eq!(r, Ok(1), "not dropped while in use");
        assert_eq!(LOOKUPS_IN_DROP.load(Ordering::Relaxed), 2);
        assert_eq!(LOOKERS.with(h2, |_| ()), Err(GNI_RC_INVALID_PARAM));
        // 3. Wrong table / unknown handles.
        assert_eq!(OTHER.with(h2, |_| ()), Err(GNI_RC_INVALID_PARAM));
        assert_eq!(LOOKERS.with(std::ptr::null(), |_| ()), Err(GNI_RC_INVALID_PARAM));
    }
}
