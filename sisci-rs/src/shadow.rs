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
//!   SCIStartSequence or SCIUnmapSegment: the 8-byte words that differ from the twin
//!   travel as one request, in address order, each word written whole;
//! - loads see the owner's memory as of the map or the last SCIStartSequence /
//!   SCICheckSequence (which first ship the program's own stores, then refresh the copy);
//!   a program that spins on a flag in such a map must call one of them in its loop;
//! - SCIMemCpy and SCIMemWrite go to the owner directly (and update the copy), so they
//!   are always exact.

use crate::pool::PD;
use crate::remote::RemoteSeg;
use crate::status::*;
use crate::types::*;
use softnic_fabric::mem::MemKey;
use softnic_fabric::rma::{self, Peer};
use std::sync::{Arc, Mutex};

pub struct Shadow {
    owner: Arc<Peer>,
    key: MemKey,
    base: u64,
    size: usize,
    buf: *mut u8,
    maplen: usize,
    twin: Mutex<Vec<u8>>,
}

// SAFETY: `buf` is our own private mapping, alive as long as the shadow; the program
// writes it as PIO, we read it under the twin's lock at flush points.
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

impl Shadow {
    pub fn new(s: &RemoteSeg, offset: usize, size: usize) -> R<Shadow> {
        if s.data_key == MemKey::NONE {
            return Err(SCI_ERR_NOT_SUPPORTED);
        }
        let maplen = softnic_fabric::shm::page_round_up(size).ok_or(SCI_ERR_NOSPC)?;
        // SAFETY: a fresh private anonymous mapping.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), maplen, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
        if p == libc::MAP_FAILED {
            return Err(SCI_ERR_NOSPC);
        }
        let sh = Shadow { owner: s.data_owner.clone(), key: s.data_key, base: s.data_addr + offset as u64, size, buf: p as *mut u8, maplen, twin: Mutex::new(vec![0u8; size]) };
        sh.refresh()?;
        Ok(sh)
    }

    pub fn ptr(&self) -> *mut u8 {
        self.buf
    }

    fn bytes(&self) -> &mut [u8] {
        // SAFETY: buf has `size` bytes (at least); the program may write it concurrently,
        // which is its own data race on PIO memory, as with the real hardware.
        unsafe { std::slice::from_raw_parts_mut(self.buf, self.size) }
    }

    /// Ships the words the program changed since the last flush or refresh.
    pub fn flush(&self) -> R<()> {
        let mut twin = self.twin.lock().unwrap_or_else(|e| e.into_inner());
        let cur = self.bytes();
        let mut runs: Vec<(usize, usize)> = Vec::new();
        let mut i = 0;
        while i < self.size {
            let n = 8.min(self.size - i);
            if cur[i..i + n] != twin[i..i + n] {
                match runs.last_mut() {
                    // Joins runs separated by little unchanged data: one piece costs less.
                    Some((s, e)) if i - *e <= 64 && i + n - *s <= PIECE => *e = i + n,
                    _ => runs.push((i, i + n)),
                }
            }
            i += n;
        }
        if runs.is_empty() {
            return Ok(());
        }
        let snap: Vec<(usize, Vec<u8>)> = runs.iter().map(|&(s, e)| (s, cur[s..e].to_vec())).collect();
        let pieces: Vec<(MemKey, u64, &[u8])> = snap.iter().map(|(s, v)| (self.key, self.base + *s as u64, v.as_slice())).collect();
        let live = self.owner.live().map_err(|_| SCI_ERR_TRANSFER_FAILED)?;
        for chunk in pieces.chunks(16) {
            live.put_compound(chunk, None, None, PD).map_err(transfer_err)?;
        }
        for (s, v) in &snap {
            twin[*s..*s + v.len()].copy_from_slice(v);
        }
        Ok(())
    }

    /// Reloads the copy from the owner (stores not yet flushed are lost: callers flush).
    pub fn refresh(&self) -> R<()> {
        let mut twin = self.twin.lock().unwrap_or_else(|e| e.into_inner());
        let mut off = 0;
        while off < self.size {
            let n = (self.size - off).min(1 << 20);
            rma::get(&self.owner, self.key, self.base + off as u64, &mut twin[off..off + n], PD).map_err(transfer_err)?;
            off += n;
        }
        self.bytes().copy_from_slice(&twin);
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
        self.bytes()[off..off + size].copy_from_slice(m);
        Ok(())
    }
}
