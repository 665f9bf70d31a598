//! Maps of memory this process cannot map: a segment whose owner runs on another machine
//! (reached through the network engine), or registered program memory of a peer that the
//! fabric could not make shareable as one piece.
//!
//! A coherent pointer into another machine's memory cannot exist, so such a map is a
//! *shadow*: a private copy of the window, filled from the owner when the map is made,
//! plus a twin of what the owner was last known to hold.  The weaker model, documented in
//! sisci_api.h:
//! - stores through the pointer reach the owner at the next SCIFlush, SCIStoreBarrier,
//!   SCICheckSequence (unless SCI_FLAG_NO_FLUSH and SCI_FLAG_NO_STORE_BARRIER),
//!   SCIStartSequence, SCIUnmapSegment, SCITriggerInterrupt or SCITriggerDataInterrupt:
//!   the 8-byte words that differ from the twin travel as one request, in address
//!   order, each word written whole;
//! - loads see the owner's memory as of the map or the last refresh: at
//!   SCIStartSequence / SCICheckSequence (after shipping the program's own stores);
//! - in the background, every `SOFTNIC_SISCI_SHADOW_US` (more rarely for windows over
//!   100 KB: at most 100 MB a second are fetched for one shadow) a library
//!   thread does the same ship-then-refresh, so a program that stores a flag without a
//!   barrier, or spins on a flag read through such a map, still progresses; a pass is
//!   not ordered with the program's stores, nor atomic, so data behind a flag needs a
//!   barrier before the flag (writer) and a sequence start after seeing it (reader);
//! - a refresh never overwrites a word the program stored and has not shipped yet (each
//!   word is replaced by compare-and-swap against the twin), and its stores are shipped
//!   later: the last writer wins;
//! - SCIMemCpy and SCIMemWrite go to the owner directly (and update the copy), so they
//!   are always exact.

use crate::pool::PD;
use crate::remote::RemoteSeg;
use crate::status::*;
use crate::types::*;
use softnic_fabric::mem::MemKey;
use softnic_fabric::rma::{self, Peer};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

pub struct Shadow {
    owner: Arc<Peer>,
    key: MemKey,
    base: u64,
    size: usize,
    buf: *mut u8,
    maplen: usize,
    twin: Mutex<Vec<u8>>,
    /// When the background thread next synchronises it.
    due: Mutex<Instant>,
}

// SAFETY: `buf` is our own private mapping, alive as long as the shadow; the program
// writes it as PIO, we read it, and replace words with compare-and-swap, under the twin's
// lock.
unsafe impl Send for Shadow {}
unsafe impl Sync for Shadow {}

impl Drop for Shadow {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`.
        unsafe { libc::munmap(self.buf as *mut libc::c_void, self.maplen) };
    }
}

/// Bytes of one request piece at most (the service's message limit leaves room).
const PIECE: usize = 64 * 1024;
/// Bytes read from the owner per refresh request.
const FETCH: usize = 1 << 20;

impl Shadow {
    pub fn new(s: &RemoteSeg, offset: usize, size: usize) -> R<Arc<Shadow>> {
        if s.data_key == MemKey::NONE {
            return Err(SCI_ERR_NOT_SUPPORTED);
        }
        let maplen = softnic_fabric::shm::page_round_up(size).ok_or(SCI_ERR_NOSPC)?;
        // SAFETY: a fresh private anonymous mapping.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), maplen, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
        if p == libc::MAP_FAILED {
            return Err(SCI_ERR_NOSPC);
        }
        let sh = Arc::new(Shadow {
            owner: s.data_owner.clone(),
            key: s.data_key,
            base: s.data_addr + offset as u64,
            size,
            buf: p as *mut u8,
            maplen,
            twin: Mutex::new(vec![0u8; size]),
            due: Mutex::new(Instant::now()),
        });
        sh.refresh()?;
        background(&sh);
        Ok(sh)
    }

    pub fn ptr(&self) -> *mut u8 {
        self.buf
    }

    fn word(&self, i: usize) -> &AtomicU64 {
        // SAFETY: i * 8 + 8 <= size <= maplen (callers), and the mapping is page aligned.
        unsafe { &*(self.buf.add(i * 8) as *const AtomicU64) }
    }

    fn byte(&self, i: usize) -> u8 {
        // SAFETY: i < size; volatile: the program writes it concurrently.
        unsafe { std::ptr::read_volatile(self.buf.add(i)) }
    }

    /// Ships the words the program changed since the last flush or refresh.  Only changed
    /// words travel (runs of adjacent ones joined): an unchanged word sent along would
    /// undo what another writer stored there since.
    pub fn flush(&self) -> R<()> {
        let mut twin = self.twin.lock().unwrap_or_else(|e| e.into_inner());
        let words = self.size / 8;
        let mut runs: Vec<(usize, Vec<u8>)> = Vec::new();
        let mut add = |off: usize, bytes: &[u8]| match runs.last_mut() {
            Some((s, v)) if *s + v.len() == off && v.len() + bytes.len() <= PIECE => v.extend_from_slice(bytes),
            _ => runs.push((off, bytes.to_vec())),
        };
        for i in 0..words {
            // One load per word: what is shipped is what the twin records.
            let v = self.word(i).load(Ordering::Acquire).to_ne_bytes();
            if v[..] != twin[i * 8..i * 8 + 8] {
                add(i * 8, &v);
            }
        }
        for i in words * 8..self.size {
            let b = self.byte(i);
            if b != twin[i] {
                add(i, &[b]);
            }
        }
        if runs.is_empty() {
            return Ok(());
        }
        let pieces: Vec<(MemKey, u64, &[u8])> = runs.iter().map(|(s, v)| (self.key, self.base + *s as u64, v.as_slice())).collect();
        let live = self.owner.live().map_err(|_| SCI_ERR_TRANSFER_FAILED)?;
        for chunk in pieces.chunks(16) {
            live.put_compound(chunk, None, None, PD).map_err(transfer_err)?;
        }
        for (s, v) in &runs {
            twin[*s..*s + v.len()].copy_from_slice(v);
        }
        Ok(())
    }

    /// Reloads the copy from the owner, word by word: a word the program changed since
    /// the last sync keeps its value (it will be shipped).
    pub fn refresh(&self) -> R<()> {
        // Locked across the fetch: a flush in between would make the fetched data older
        // than the twin.
        let mut twin = self.twin.lock().unwrap_or_else(|e| e.into_inner());
        let mut fresh = vec![0u8; self.size];
        let mut off = 0;
        while off < self.size {
            let n = (self.size - off).min(FETCH);
            rma::get(&self.owner, self.key, self.base + off as u64, &mut fresh[off..off + n], PD).map_err(transfer_err)?;
            off += n;
        }
        let words = self.size / 8;
        for i in 0..words {
            let old = u64::from_ne_bytes(twin[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
            let new = u64::from_ne_bytes(fresh[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
            if old != new && self.word(i).compare_exchange(old, new, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                twin[i * 8..i * 8 + 8].copy_from_slice(&fresh[i * 8..i * 8 + 8]);
            }
        }
        for i in words * 8..self.size {
            if twin[i] != fresh[i] && self.byte(i) == twin[i] {
                // SAFETY: i < size; the tail is at most 7 bytes the program rarely shares.
                unsafe { std::ptr::write_volatile(self.buf.add(i), fresh[i]) };
                twin[i] = fresh[i];
            }
        }
        Ok(())
    }

    /// SCIMemCpy through the shadow: straight to (or from) the owner, copy kept in step.
    pub fn copy(&self, mem: *mut u8, off: usize, size: usize, read: bool) -> R<()> {
        let mut twin = self.twin.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the program's buffer of `size` bytes (its contract).
        let m = unsafe { std::slice::from_raw_parts_mut(mem, size) };
        if read {
            rma::get(&self.owner, self.key, self.base + off as u64, m, PD).map_err(transfer_err)?;
        } else {
            rma::put(&self.owner, self.key, self.base + off as u64, m, PD).map_err(transfer_err)?;
        }
        twin[off..off + size].copy_from_slice(m);
        // SAFETY: off + size <= self.size (the caller checked the window).
        unsafe { std::ptr::copy_nonoverlapping(m.as_ptr(), self.buf.add(off), size) };
        Ok(())
    }
}

// ---- the background thread -----------------------------------------------------------

/// Bytes a second one shadow's background refreshes fetch at most.
const RATE: f64 = 100e6;

/// Shadows the background thread keeps in step.
static LIVE: Mutex<Vec<Weak<Shadow>>> = Mutex::new(Vec::new());
static WAKE: Condvar = Condvar::new();

/// The period of background synchronisation (SOFTNIC_SISCI_SHADOW_US; 0: none).
fn period() -> Option<Duration> {
    static P: OnceLock<u64> = OnceLock::new();
    let us = *P.get_or_init(|| softnic_fabric::env::get_u64("SOFTNIC_SISCI_SHADOW_US"));
    (us > 0).then(|| Duration::from_micros(us))
}

fn background(sh: &Arc<Shadow>) {
    if period().is_none() {
        return;
    }
    static STARTED: OnceLock<bool> = OnceLock::new();
    STARTED.get_or_init(|| std::thread::Builder::new().name("sisci-shadow".into()).spawn(run).is_ok());
    LIVE.lock().unwrap_or_else(|e| e.into_inner()).push(Arc::downgrade(sh));
    WAKE.notify_one();
}

fn run() {
    let Some(p) = period() else { return };
    loop {
        let shadows: Vec<Arc<Shadow>> = {
            let mut l = LIVE.lock().unwrap_or_else(|e| e.into_inner());
            l.retain(|w| w.strong_count() > 0);
            while l.is_empty() {
                l = WAKE.wait(l).unwrap_or_else(|e| e.into_inner());
                l.retain(|w| w.strong_count() > 0);
            }
            l.iter().filter_map(|w| w.upgrade()).collect()
        };
        let now = Instant::now();
        for sh in &shadows {
            let mut due = sh.due.lock().unwrap_or_else(|e| e.into_inner());
            if now < *due {
                continue;
            }
            let ok = sh.owner.seems_alive() && sh.flush().and_then(|_| sh.refresh()).is_ok();
            // A large window at most RATE bytes a second; a dead owner is left alone.
            let rate = Duration::from_secs_f64(sh.size as f64 / RATE);
            *due = Instant::now() + if ok { p.max(rate) } else { Duration::from_secs(3600) };
        }
        drop(shadows);
        std::thread::sleep(p);
    }
}
