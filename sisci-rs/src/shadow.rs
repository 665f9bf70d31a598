//! Maps of memory this process cannot map: a segment whose owner runs on another machine
//! (reached through the network engine), registered program memory of a peer that the
//! fabric could not make shareable as one piece, and broadcast maps of reflective memory
//! (a store through one must reach every member's copy, which no single mapping can).
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
//!
//! A broadcast map (crate::broadcast) is a shadow of the group's content, its machine's
//! mirror (or, on a machine without a member, the hub's mirror), whose stores are written
//! to the group rather than shipped to one owner: the changed words as runs, through
//! [`Group::write`], into every member's copy, at the same points and in the background.
//!
//! The passes (ship, then refresh) and the background thread are crate::twin's, shared
//! with the mirrors of reflective-memory groups.

use crate::broadcast::{Group, Wait};
use crate::pool::pd;
use crate::remote::RemoteSeg;
use crate::status::*;
use crate::twin::{changes, keep_in_step, pull, rate_limit, record, ship, take, Kept};
use crate::types::*;
use softnic_fabric::mem::MemKey;
use softnic_fabric::rma::{self, Peer};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Shadow {
    source: Source,
    size: usize,
    buf: *mut u8,
    maplen: usize,
    twin: Mutex<Vec<u8>>,
    /// When the background thread next synchronises it.
    due: Mutex<Instant>,
}

/// What a shadow copies.
enum Source {
    /// Memory of another process (another machine's segment, or a machine without a
    /// member's broadcast map: the hub's mirror), at `base` of its registration `key`:
    /// loads come from it, stores are shipped to it.
    Owner { owner: Arc<Peer>, key: MemKey, base: u64 },
    /// A broadcast map on a machine with a mirror: loads come from the mirror (mapped in
    /// this process), at offset `at` of the group; stores are written to the group.
    /// `seen`: the mirror's version at the last reload (one machine: none while it is
    /// unchanged).
    Group { group: Arc<Group>, at: usize, seen: AtomicU64 },
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

impl Shadow {
    pub fn new(s: &RemoteSeg, offset: usize, size: usize) -> R<Arc<Shadow>> {
        let source = match &s.group {
            Some(g) => Source::Group { group: g.clone(), at: offset, seen: AtomicU64::new(u64::MAX) },
            None if s.data_key == MemKey::NONE => return Err(SCI_ERR_NOT_SUPPORTED),
            None => Source::Owner { owner: s.data_owner.clone(), key: s.data_key, base: s.data_addr + offset as u64 },
        };
        let maplen = softnic_fabric::shm::page_round_up(size).ok_or(SCI_ERR_NOSPC)?;
        // SAFETY: a fresh private anonymous mapping.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), maplen, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
        if p == libc::MAP_FAILED {
            return Err(SCI_ERR_NOSPC);
        }
        let sh = Arc::new(Shadow { source, size, buf: p as *mut u8, maplen, twin: Mutex::new(vec![0u8; size]), due: Mutex::new(Instant::now()) });
        sh.refresh()?;
        let kept: Arc<dyn Kept> = sh.clone();
        keep_in_step(Arc::downgrade(&kept));
        Ok(sh)
    }

    pub fn ptr(&self) -> *mut u8 {
        self.buf
    }

    /// Ships the words the program changed since the last flush or refresh: to the owner,
    /// or as a write to the group.
    pub fn flush(&self, wait: Wait) -> R<()> {
        let mut twin = self.twin.lock().unwrap_or_else(|e| e.into_inner());
        match &self.source {
            Source::Owner { owner, key, base } => ship(self.buf, &mut twin, 0, self.size, owner, *key, *base),
            Source::Group { group, at, .. } => {
                let runs = changes(self.buf, &twin, 0, self.size);
                if runs.is_empty() {
                    return Ok(());
                }
                let w: Vec<(usize, &[u8])> = runs.iter().map(|(o, v)| (at + o, v.as_slice())).collect();
                group.write(&w, wait)?;
                record(&mut twin, &runs);
                Ok(())
            }
        }
    }

    /// Reloads the copy (a word the program changed since the last sync keeps its value:
    /// it will be shipped): from the owner, or from the mirror after the mirror was
    /// reloaded (when other machines share the group; on one machine only after a write
    /// to the group).
    pub fn refresh(&self) -> R<()> {
        match &self.source {
            Source::Owner { owner, key, base } => {
                let mut twin = self.twin.lock().unwrap_or_else(|e| e.into_inner());
                pull(self.buf, &mut twin, owner, *key, *base)
            }
            Source::Group { group, at, seen } => {
                group.sync(*at, at + self.size, true)?;
                // The mirror is read and applied under the twin's lock, its version read
                // first: two refreshes at once (the background pass and an interrupt's
                // delivery) each read the mirror, and the one that read it first could
                // otherwise apply its older snapshot after the newer one, taking back
                // words the newer one brought (a replica's answer read as the request
                // before, seen in sisci_reflect over three machines).
                let mut twin = self.twin.lock().unwrap_or_else(|e| e.into_inner());
                let v = group.version();
                if !group.spanning && v == seen.load(Ordering::Acquire) {
                    return Ok(());
                }
                let mut fresh = vec![0u8; self.size];
                group.read(*at, &mut fresh);
                take(self.buf, &mut twin, &fresh);
                seen.store(v, Ordering::Release);
                Ok(())
            }
        }
    }

    /// SCIMemCpy through the shadow: straight to (or from) the owner, or the group; the
    /// copy kept in step.
    pub fn copy(&self, mem: *mut u8, off: usize, size: usize, read: bool) -> R<()> {
        if let (Source::Group { group, at, .. }, true) = (&self.source, read) {
            group.sync(at + off, at + off + size, true)?;
        }
        let mut twin = self.twin.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the program's buffer of `size` bytes (its contract).
        let m = unsafe { std::slice::from_raw_parts_mut(mem, size) };
        match (&self.source, read) {
            (Source::Owner { owner, key, base }, true) => rma::get(owner, *key, base + off as u64, m, pd()).map_err(transfer_err)?,
            (Source::Owner { owner, key, base }, false) => rma::put(owner, *key, base + off as u64, m, pd()).map_err(transfer_err)?,
            (Source::Group { group, at, .. }, true) => group.read(at + off, m),
            (Source::Group { group, at, .. }, false) => group.write(&[(at + off, &*m)], Wait::Yes)?,
        }
        twin[off..off + size].copy_from_slice(m);
        // SAFETY: off + size <= self.size (the caller checked the window).
        unsafe { std::ptr::copy_nonoverlapping(m.as_ptr(), self.buf.add(off), size) };
        Ok(())
    }

    /// Is its source still there?
    fn source_alive(&self) -> bool {
        match &self.source {
            Source::Owner { owner, .. } => owner.seems_alive(),
            Source::Group { .. } => true,
        }
    }
}

impl Kept for Shadow {
    fn keep(&self, period: Duration) {
        let mut due = self.due.lock().unwrap_or_else(|e| e.into_inner());
        if Instant::now() < *due {
            return;
        }
        let ok = self.source_alive() && self.flush(Wait::Yes).and_then(|_| self.refresh()).is_ok();
        // A large window at most RATE bytes a second; a dead owner is left alone.
        *due = Instant::now() + if ok { period.max(rate_limit(self.size)) } else { Duration::from_secs(3600) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broadcast::join;

    /// A broadcast map refreshed by two threads at once (the background pass and a
    /// program's sync point) while the group's word only grows: after a refresh returns,
    /// the map holds at least what the last write that had returned when it began wrote.  Reading the mirror
    /// outside the twin's lock let one refresh apply its older snapshot over the newer one
    /// the other had just applied.
    #[test]
    fn refreshes_at_once_never_take_back_a_newer_word() {
        crate::service::register();
        let id = 0x7e58_0000 + std::process::id() % 0x10000;
        let (_data, member) = join(id, 4096).unwrap();
        let group = member.group.clone();
        let maplen = 4096;
        // SAFETY: a fresh private anonymous mapping, owned by the shadow from here.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), maplen, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
        assert_ne!(p, libc::MAP_FAILED);
        let sh = Arc::new(Shadow {
            source: Source::Group { group: group.clone(), at: 0, seen: AtomicU64::new(u64::MAX) },
            size: 4096,
            buf: p as *mut u8,
            maplen,
            twin: Mutex::new(vec![0u8; 4096]),
            due: Mutex::new(Instant::now()),
        });
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        // The last value whose write to the group has returned.
        let written = Arc::new(AtomicU64::new(0));
        let writer = {
            let (g, stop, written) = (group.clone(), stop.clone(), written.clone());
            std::thread::spawn(move || {
                let mut v = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    v += 1;
                    g.write(&[(8, &v.to_ne_bytes())], Wait::Yes).unwrap();
                    written.store(v, Ordering::Release);
                }
            })
        };
        let refresher = |sh: Arc<Shadow>, written: Arc<AtomicU64>| {
            std::thread::spawn(move || {
                // Refreshes for as long as the writer makes its first 50,000 writes (and
                // at least 20,000), so that the two threads overlap whatever the load.
                let mut n = 0;
                while n < 20_000 || written.load(Ordering::Relaxed) < 50_000 {
                    n += 1;
                    let before = written.load(Ordering::Acquire);
                    sh.refresh().unwrap();
                    // SAFETY: word 1 of the shadow's buffer.
                    let now = unsafe { &*(sh.ptr().add(8) as *const AtomicU64) }.load(Ordering::Acquire);
                    if now < before {
                        return Some((before, now));
                    }
                }
                None
            })
        };
        let a = refresher(sh.clone(), written.clone());
        let b = refresher(sh.clone(), written.clone());
        let (ra, rb) = (a.join().unwrap(), b.join().unwrap());
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        assert_eq!((ra, rb), (None, None), "a refresh left the map older than a write that had returned before it began (written, map)");
    }
}
