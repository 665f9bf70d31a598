//! Keeping a copy of another process's memory in step with it through a twin (what the
//! other side was last known to hold): the passes and the background thread of
//! crate::shadow's maps.
//!
//! The two halves of a pass, [`ship`] and [`pull`], work on any copy and twin: a
//! machine's mirror of a reflective-memory group is kept in step with its hub by the same
//! code, with mirror and twin in memory the machine's processes share.  The background
//! thread keeps anything [`Kept`] in step.

use crate::pool::pd;
use crate::status::*;
use crate::types::*;
use softnic_fabric::mem::MemKey;
use softnic_fabric::rma::{self, Peer};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::Duration;

/// Bytes of one request piece at most (the service's message limit leaves room).
const PIECE: usize = 64 * 1024;
/// Bytes read from the owner per refresh request.
const FETCH: usize = 1 << 20;

fn word<'a>(buf: *mut u8, i: usize) -> &'a AtomicU64 {
    // SAFETY: callers pass i with i * 8 + 8 <= the copy's size, and copies are 8-aligned
    // (page-aligned mappings, or a group's data at a page offset); the reference does not
    // outlive the call that made it (the copy outlives the pass).
    unsafe { &*(buf.add(i * 8) as *const AtomicU64) }
}

fn byte(buf: *mut u8, i: usize) -> u8 {
    // SAFETY: i < the copy's size; volatile: the program writes it concurrently.
    unsafe { std::ptr::read_volatile(buf.add(i)) }
}

/// The words of the copy `buf` in [lo, hi) (widened to whole words) that differ from
/// `twin` (as long as the copy), as runs of adjacent ones (offset, bytes), each at most a
/// request piece long.  One load per word: what a run carries is what the twin will
/// record.
pub(crate) fn changes(buf: *mut u8, twin: &[u8], lo: usize, hi: usize) -> Vec<(usize, Vec<u8>)> {
    let size = twin.len();
    let hi = hi.min(size);
    let words = size / 8;
    let mut runs: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut add = |off: usize, bytes: &[u8]| match runs.last_mut() {
        Some((s, v)) if *s + v.len() == off && v.len() + bytes.len() <= PIECE => v.extend_from_slice(bytes),
        _ => runs.push((off, bytes.to_vec())),
    };
    for i in lo / 8..hi.div_ceil(8).min(words) {
        let v = word(buf, i).load(Ordering::Acquire).to_ne_bytes();
        if v[..] != twin[i * 8..i * 8 + 8] {
            add(i * 8, &v);
        }
    }
    for i in (words * 8).max(lo)..hi {
        let b = byte(buf, i);
        if b != twin[i] {
            add(i, &[b]);
        }
    }
    runs
}

/// Writes `runs` (offsets from `base`) into `owner`'s `key`, in address order.
pub(crate) fn send(runs: &[(usize, Vec<u8>)], owner: &Peer, key: MemKey, base: u64) -> R<()> {
    if runs.is_empty() {
        return Ok(());
    }
    let pieces: Vec<(MemKey, u64, &[u8])> = runs.iter().map(|(s, v)| (key, base + *s as u64, v.as_slice())).collect();
    let live = owner.live().map_err(|_| SCI_ERR_TRANSFER_FAILED)?;
    for chunk in pieces.chunks(16) {
        live.put_compound(chunk, None, None, pd()).map_err(transfer_err)?;
    }
    Ok(())
}

/// Records `runs` in the twin: they are what the other side holds now.
pub(crate) fn record(twin: &mut [u8], runs: &[(usize, Vec<u8>)]) {
    for (s, v) in runs {
        twin[*s..*s + v.len()].copy_from_slice(v);
    }
}

/// Ships the words of the copy `buf` in [lo, hi) that differ from `twin` to the memory
/// they copy, `owner`'s `key` at `base`, and records them in the twin.  Only changed words
/// travel: an unchanged word sent along would undo what another writer stored there
/// since.  The caller holds the twin.
pub(crate) fn ship(buf: *mut u8, twin: &mut [u8], lo: usize, hi: usize, owner: &Peer, key: MemKey, base: u64) -> R<()> {
    let runs = changes(buf, twin, lo, hi);
    send(&runs, owner, key, base)?;
    record(twin, &runs);
    Ok(())
}

/// Reloads the copy `buf` (as long as `twin`) from `owner`'s `key` at `base`, word by
/// word: a word stored in the copy since the last pass keeps its value (it will be
/// shipped).  The caller holds the twin, across the fetch: a ship in between would make
/// the fetched data older than the twin.
pub(crate) fn pull(buf: *mut u8, twin: &mut [u8], owner: &Peer, key: MemKey, base: u64) -> R<()> {
    let size = twin.len();
    let mut fresh = vec![0u8; size];
    let mut off = 0;
    while off < size {
        let n = (size - off).min(FETCH);
        rma::get(owner, key, base + off as u64, &mut fresh[off..off + n], pd()).map_err(transfer_err)?;
        off += n;
    }
    take(buf, twin, &fresh);
    Ok(())
}

/// Puts `fresh`, what the other side holds now, into the copy `buf` word by word where
/// the program has not stored since the last pass (see [`pull`]), and into the twin.
pub(crate) fn take(buf: *mut u8, twin: &mut [u8], fresh: &[u8]) {
    let size = twin.len();
    let words = size / 8;
    for i in 0..words {
        let old = u64::from_ne_bytes(twin[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        let new = u64::from_ne_bytes(fresh[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        if old != new && word(buf, i).compare_exchange(old, new, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            twin[i * 8..i * 8 + 8].copy_from_slice(&fresh[i * 8..i * 8 + 8]);
        }
    }
    for i in words * 8..size {
        if twin[i] != fresh[i] && byte(buf, i) == twin[i] {
            // SAFETY: i < size; the tail is at most 7 bytes the program rarely shares.
            unsafe { std::ptr::write_volatile(buf.add(i), fresh[i]) };
            twin[i] = fresh[i];
        }
    }
}

// ---- the background thread -----------------------------------------------------------

/// Bytes a second one copy's background refreshes fetch at most.
const RATE: f64 = 100e6;

/// The shortest interval between two background passes over a copy of `size` bytes.
pub fn rate_limit(size: usize) -> Duration {
    Duration::from_secs_f64(size as f64 / RATE)
}

/// Something the background thread keeps in step.
pub trait Kept: Send + Sync {
    /// One background pass, if one is due (`period`: SOFTNIC_SISCI_SHADOW_US).
    fn keep(&self, period: Duration);
}

/// What the background thread keeps in step.
static LIVE: Mutex<Vec<Weak<dyn Kept>>> = Mutex::new(Vec::new());
static WAKE: Condvar = Condvar::new();

/// The period of background synchronisation (SOFTNIC_SISCI_SHADOW_US; 0: none).
pub fn period() -> Option<Duration> {
    static P: OnceLock<u64> = OnceLock::new();
    let us = *P.get_or_init(|| softnic_fabric::env::get_u64("SOFTNIC_SISCI_SHADOW_US"));
    (us > 0).then(|| Duration::from_micros(us))
}

/// Has the background thread pass over `k` while it lives (nothing when the period is 0).
pub fn keep_in_step(k: Weak<dyn Kept>) {
    if period().is_none() {
        return;
    }
    static STARTED: OnceLock<bool> = OnceLock::new();
    STARTED.get_or_init(|| std::thread::Builder::new().name("sisci-shadow".into()).spawn(run).is_ok());
    LIVE.lock().unwrap_or_else(|e| e.into_inner()).push(k);
    WAKE.notify_one();
}

fn run() {
    let Some(p) = period() else { return };
    loop {
        let kept: Vec<Arc<dyn Kept>> = {
            let mut l = LIVE.lock().unwrap_or_else(|e| e.into_inner());
            l.retain(|w| w.strong_count() > 0);
            while l.is_empty() {
                l = WAKE.wait(l).unwrap_or_else(|e| e.into_inner());
                l.retain(|w| w.strong_count() > 0);
            }
            l.iter().filter_map(|w| w.upgrade()).collect()
        };
        for k in &kept {
            k.keep(p);
        }
        drop(kept);
        softnic_fabric::cancel::nap(p);
    }
}
