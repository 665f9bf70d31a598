//! The process-local objects: this process's interface ([`Ni`]) and the library's table
//! of it ([`Lib`]: how every call finds the NI its handle names), with what an NI owns
//! that refers back to it: the owner's side of its event queues ([`EqLocal`], their
//! rings carved from the [`Arena`]), the registrations of its MDs ([`MdMem`]), the
//! targets it has reached ([`Targets`]) and the views of target segments mapped here
//! ([`NiView`]).  One module because these types refer to each other; the calls working
//! on them are above ([`crate::ni`], [`crate::eq`], [`crate::md`], [`crate::ops`],
//! [`crate::service`]).

use crate::evring::{Cursor, EvRing};
use crate::handle;
use crate::runtime::Runtime;
use crate::seg::Seg;
use crate::status::PResult;
use crate::types::*;
use softnic_fabric::mem::{self, MemKey, RingLoc, SharedMem};
use softnic_fabric::registry::EndpointId;
use softnic_fabric::rma::{Peer, RegionView};
use softnic_fabric::spin::SpinLock;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// This process's interface.
pub struct Ni {
    pub handle: u32,
    pub id: ptl_process_id_t,
    pub uid: u32,
    pub jid: u32,
    pub limits: ptl_ni_limits_t,
    /// The job's NIDs (sorted): a target elsewhere names no process.
    pub nodes: Vec<u32>,
    /// The launcher's (nid, pid) of every rank: processes worth waiting for.
    pub job: Vec<(u32, u32)>,
    /// The process that initialised it (a forked child's copy is not its own).
    pub owner_pid: u32,
    pub seg: Seg,
    /// Where peers find the segment, and its instance.
    pub loc: RingLoc,
    pub nonce: u64,
    pub(crate) mem: Mutex<Option<SharedMem>>,
    pub(crate) endpoint: Mutex<Option<EndpointId>>,
    /// Set by PtlNIFini: handles of this NI are refused from then on.
    pub ended: AtomicBool,
    /// Process-local side of the event queues, by row.
    pub eqs: RwLock<Vec<Option<Arc<EqLocal>>>>,
    pub arena: Mutex<Arena>,
    /// Registrations held by each MD row.
    pub md_mem: Mutex<Vec<MdMem>>,
    pub rt: Mutex<Runtime>,
    pub handler_thread: Mutex<bool>,
    /// The target NIs this NI has reached.
    pub targets: Targets,
}

impl Ni {
    /// Is `id` a process of this job, by the runtime's map or the launcher's?
    pub fn in_job(&self, id: ptl_process_id_t) -> bool {
        self.job.contains(&(id.nid, id.pid)) || self.rt.lock().unwrap_or_else(|e| e.into_inner()).names(id)
    }
}

impl Drop for Ni {
    fn drop(&mut self) {
        // The last user is gone (queues and waiters included): give the memory back.
        // Peers that still map the segment keep their mapping.
        if let Some(m) = self.mem.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = mem::free_shared(m);
        }
    }
}

/// The library's state (PtlInit's flag, the NI); see [`Lib`].
pub(crate) struct State {
    pub(crate) init: AtomicBool,
    pub(crate) ni: RwLock<Option<Arc<Ni>>>,
    /// Serialises PtlNIInit/PtlNIFini/PtlFini.
    pub(crate) setup: Mutex<()>,
    pub(crate) ni_gen: AtomicU32,
}

pub(crate) static LIB: State = State { init: AtomicBool::new(false), ni: RwLock::new(None), setup: Mutex::new(()), ni_gen: AtomicU32::new(0) };

thread_local! {
    pub(crate) static CURRENT: std::cell::RefCell<Option<Arc<Ni>>> = const { std::cell::RefCell::new(None) };
}

/// The library's entry points for the other modules.
pub struct Lib;

impl Lib {
    /// `PTL_NO_INIT` before PtlInit / after PtlFini.
    pub fn check_init() -> PResult<()> {
        if LIB.init.load(Ordering::Acquire) {
            Ok(())
        } else {
            Err(PTL_NO_INIT)
        }
    }

    /// The current NI, whatever its handle.
    pub fn current() -> PResult<Arc<Ni>> {
        Self::with_current(|n| Ok(n.clone()))
    }

    /// Runs `f` on the current NI, borrowed from the thread's cache while that NI lives
    /// (no lock and no reference count on the common path: the cache's reference keeps
    /// it alive, and nothing replaces it while `f` runs, see [`Lib::current_slow`]).
    #[inline]
    pub fn with_current<R>(f: impl FnOnce(&Arc<Ni>) -> PResult<R>) -> PResult<R> {
        Self::check_init()?;
        CURRENT.with(|c| {
            let b = c.try_borrow();
            if let Ok(Some(n)) = b.as_deref() {
                if !n.ended.load(Ordering::Acquire) {
                    return f(n);
                }
            }
            drop(b);
            f(&Self::current_slow()?)
        })
    }

    /// The current NI from the library's table, cached for the thread when the cache is
    /// not in use (a call nested in `with_current`'s `f` leaves it alone, so that the
    /// NI `f` borrows stays referenced).
    #[cold]
    fn current_slow() -> PResult<Arc<Ni>> {
        let g = LIB.ni.read().unwrap_or_else(|e| e.into_inner());
        let n = g.as_ref().filter(|n| !n.ended.load(Ordering::Relaxed)).cloned().ok_or(PTL_NI_INVALID)?;
        CURRENT.with(|c| {
            if let Ok(mut c) = c.try_borrow_mut() {
                *c = Some(n.clone());
            }
        });
        Ok(n)
    }

    /// The NI named by `h` (`PTL_NO_INIT`, `PTL_NI_INVALID`).
    pub fn ni(h: u32) -> PResult<Arc<Ni>> {
        let n = Self::current()?;
        if n.handle != h {
            return Err(PTL_NI_INVALID);
        }
        Ok(n)
    }

    /// The NI an object handle of `kind` belongs to (its index and generation bits are
    /// the caller's to check), or `bad` for a handle of another kind.
    pub fn of(h: u32, kind: u32, bad: i32) -> PResult<(Arc<Ni>, u32, u32)> {
        Self::with_of(h, kind, bad, |n, idx, gen| Ok((n.clone(), idx, gen)))
    }

    /// [`Lib::of`] with the NI borrowed for `f` (see [`Lib::with_current`]).
    #[inline]
    pub fn with_of<R>(h: u32, kind: u32, bad: i32, f: impl FnOnce(&Arc<Ni>, u32, u32) -> PResult<R>) -> PResult<R> {
        Self::check_init()?;
        let (idx, gen) = handle::index_of(h, kind).ok_or(bad)?;
        Self::with_ni(bad, |n| f(n, idx, gen))
    }

    /// The rest of [`Lib::with_of`], for a caller that made its first checks (PtlInit
    /// done, the handle of its kind): the current NI borrowed for `f`, `bad` when none.
    #[inline]
    pub fn with_ni<R>(bad: i32, f: impl FnOnce(&Arc<Ni>) -> PResult<R>) -> PResult<R> {
        CURRENT.with(|c| {
            let b = c.try_borrow();
            if let Ok(Some(n)) = b.as_deref() {
                if !n.ended.load(Ordering::Acquire) {
                    return f(n);
                }
            }
            drop(b);
            let n = Self::current_slow().map_err(|e| if e == PTL_NI_INVALID { bad } else { e })?;
            f(&n)
        })
    }
}

/// The owner's side of a queue.
pub struct EqLocal {
    pub handle: u32,
    pub idx: u32,
    pub(crate) ring: EvRing,
    pub(crate) chunk: (usize, usize),
    /// Where the consumers are; its lock serialises them (held for a take: a spin lock,
    /// one locked instruction).
    pub(crate) next: SpinLock<Cursor>,
    pub(crate) waiters: AtomicU32,
    pub(crate) ended: AtomicBool,
    pub handler: ptl_eq_handler_t,
    pub(crate) ni: Arc<Ni>,
}

impl Drop for EqLocal {
    fn drop(&mut self) {
        // Nobody uses the ring any more (the row was freed first, so nobody deposits).
        self.ni.arena.lock().unwrap_or_else(|e| e.into_inner()).release(self.chunk.0, self.chunk.1);
    }
}

/// Free space of the event arena (first fit, merged on free).
pub struct Arena {
    free: Vec<(usize, usize)>,
}

impl Arena {
    pub fn new(off: usize, len: usize) -> Arena {
        Arena { free: vec![(off, len)] }
    }
    pub(crate) fn alloc(&mut self, len: usize) -> Option<usize> {
        let len = len.checked_add(63)? & !63;
        let i = self.free.iter().position(|&(_, l)| l >= len)?;
        let (off, l) = self.free[i];
        if l == len {
            self.free.remove(i);
        } else {
            self.free[i] = (off + len, l - len);
        }
        Some(off)
    }
    pub(crate) fn release(&mut self, off: usize, len: usize) {
        let len = (len + 63) & !63;
        let i = self.free.partition_point(|&(o, _)| o < off);
        self.free.insert(i, (off, len));
        // Merge with the neighbours.
        if i + 1 < self.free.len() && self.free[i].0 + self.free[i].1 == self.free[i + 1].0 {
            self.free[i].1 += self.free[i + 1].1;
            self.free.remove(i + 1);
        }
        if i > 0 && self.free[i - 1].0 + self.free[i - 1].1 == self.free[i].0 {
            self.free[i - 1].1 += self.free[i].1;
            self.free.remove(i);
        }
    }
}

/// Registrations an MD row holds (process-local, by row).
#[derive(Default)]
pub struct MdMem {
    pub(crate) keys: Vec<MemKey>,
}

/// A target NI found in a registry.
pub struct Target {
    pub(crate) key: TargetKey,
    pub(crate) peer: Arc<Peer>,
    pub(crate) loc: RingLoc,
    pub(crate) nonce: u64,
    /// Its segment mapped here, for another process on this machine.
    pub(crate) view: Option<Arc<NiView>>,
    /// The NI is our own (its segment is `Ni::seg`).
    pub(crate) own: bool,
    /// Found gone: no longer returned (kept until the NI goes, see [`Targets`]).
    pub(crate) stale: AtomicBool,
}

/// (job, nid, pid) of a target NI.
pub(crate) type TargetKey = (u32, u32, u32);

/// Slots of [`Targets`]'s lock-free table.
const HOT_TARGETS: usize = 256;

/// The targets an NI has reached.  Each is allocated once and kept as long as the NI
/// (a stale one too), so that an operation borrows it from the NI it runs on: no lock,
/// no reference count, no thread-local lookup per operation.  Found by key in a
/// direct-mapped table of pointers (the common case), else under the mutex.
pub struct Targets {
    hot: [AtomicPtr<Target>; HOT_TARGETS],
    all: Mutex<TargetTable>,
}

#[derive(Default)]
struct TargetTable {
    by_key: HashMap<TargetKey, usize>,
    owned: Vec<Box<Target>>,
    /// Targets found gone (ended, exited, finalised): not waited for.
    gone: HashSet<TargetKey>,
}

impl Default for Targets {
    fn default() -> Targets {
        Targets { hot: [const { AtomicPtr::new(std::ptr::null_mut()) }; HOT_TARGETS], all: Mutex::default() }
    }
}

fn hot_slot((_, nid, pid): TargetKey) -> usize {
    (nid.wrapping_mul(0x9e37_79b9) ^ pid.wrapping_mul(0x85eb_ca6b)) as usize % HOT_TARGETS
}

impl Targets {
    /// The live target `key` if the table has it.
    #[inline]
    pub(crate) fn get(&self, key: TargetKey) -> Option<&Target> {
        // Acquire: pairs with the Release in `insert` (the Target is fully built).
        let p = self.hot[hot_slot(key)].load(Ordering::Acquire);
        // SAFETY: non-null pointers in `hot` are Targets owned by `all`, freed only with
        // `self`, which the caller borrows.
        let t = unsafe { p.as_ref() }?;
        (t.key == key && !t.stale.load(Ordering::Relaxed)).then_some(t)
    }

    /// The live target `key`: from the table's hot slot, else from the whole table.
    #[inline]
    pub(crate) fn lookup(&self, key: TargetKey) -> Option<&Target> {
        self.get(key).or_else(|| self.find(key))
    }

    /// The live target `key` from the whole table (refreshing its hot slot).
    #[cold]
    pub(crate) fn find(&self, key: TargetKey) -> Option<&Target> {
        let all = self.all.lock().unwrap_or_else(|e| e.into_inner());
        let t: &Target = all.owned.get(*all.by_key.get(&key)?)?;
        // SAFETY: boxed, never freed or moved before `self` (see the type's doc).
        let t = unsafe { &*(t as *const Target) };
        self.hot[hot_slot(key)].store(t as *const Target as *mut Target, Ordering::Release);
        Some(t)
    }

    pub(crate) fn insert(&self, t: Target) -> &Target {
        let key = t.key;
        let mut all = self.all.lock().unwrap_or_else(|e| e.into_inner());
        let b = Box::new(t);
        let p = &*b as *const Target as *mut Target;
        all.owned.push(b);
        let at = all.owned.len() - 1;
        all.by_key.insert(key, at);
        all.gone.remove(&key);
        self.hot[hot_slot(key)].store(p, Ordering::Release);
        // SAFETY: as in `find`.
        unsafe { &*p }
    }

    /// Marks target `key` stale (and gone): the next operation looks it up again, and
    /// does not wait for it.
    pub(crate) fn forget(&self, key: TargetKey) {
        let mut all = self.all.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = all.by_key.remove(&key) {
            if let Some(t) = all.owned.get(at) {
                t.stale.store(true, Ordering::Relaxed);
            }
        }
        all.gone.insert(key);
    }

    pub(crate) fn is_gone(&self, key: TargetKey) -> bool {
        self.all.lock().unwrap_or_else(|e| e.into_inner()).gone.contains(&key)
    }
}

/// A target NI's segment as the handler sees it: our own, or a peer's mapped here.
pub struct NiView {
    pub seg: Seg,
    pub(crate) _keep: Keep,
}

/// What keeps a view's segment mapped.
pub(crate) enum Keep {
    Mine(#[allow(dead_code)] Arc<Ni>),
    Mapped(#[allow(dead_code)] RegionView),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arena_first_fit_and_merge() {
        let mut a = Arena::new(4096, 64 * 10);
        let x = a.alloc(64).unwrap();
        let y = a.alloc(100).unwrap();
        let z = a.alloc(64).unwrap();
        assert_eq!((x, y, z), (4096, 4160, 4288));
        assert!(a.alloc(64 * 8).is_none());
        a.release(y, 100);
        a.release(x, 64);
        assert_eq!(a.alloc(192), Some(4096), "freed neighbours merge");
        a.release(4096, 192);
        a.release(z, 64);
        assert_eq!(a.free, vec![(4096, 640)]);
    }
}
