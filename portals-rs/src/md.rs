//! Memory descriptors: PtlMDAttach (and the 3.2 form PtlMDAttachNoFit), PtlMDBind,
//! PtlMDUnlink, PtlMDUpdate, PtlMEMDPost; the MD rules the target side shares
//! ([`active`], [`unlink_md`]); and the memory registrations behind attached MDs.
//!
//! **Memory.**  An MD that can be a target (attached to an ME) has its memory
//! registered with the fabric (`fabric::mem::register`), so an initiator on this machine
//! deposits into it, or reads from it, with the one-sided engine.  Registrations are
//! shared between MDs over the same pages (a reference-counted cache of page ranges)
//! and released with the last MD using them.  A bound MD is only checked (mapped; and
//! writable, which a get needs): on this machine its owner's process moves its data,
//! across machines its owner does too.
//!
//! **Unlinking by others.**  An MD auto-unlinked by a target-side operation run by
//! another process cannot release its owner's registrations: it becomes a ZOMBIE (its
//! handle stale at once) and the owner's next MD call releases it ([`reap`]).  An MD
//! unlinked while a transfer is in flight (PtlMEUnlink) is DOOMED: freed when the
//! transfer ends.

use crate::eq::OwnEvents;
use crate::handle;
use crate::matchlist;
use crate::objects::{Lib, MdMem, Ni};
use crate::runtime::pd;
use crate::seg::{Guard, MdRow, Seg, LIVE, MDF_DOOMED, MDF_UNLINK_NOFIT, MDF_UNLINK_OP, MDF_WRITABLE, NONE, ZOMBIE};
use crate::status::{done, PResult};
use crate::types::*;
use softnic_fabric::mem::{self, Access, MemKey};
use std::sync::Mutex;

/// A registration shared by the MDs whose memory lies in its pages.
struct CacheEntry {
    start: usize,
    end: usize,
    writable: bool,
    key: MemKey,
    refs: u32,
}

static CACHE: Mutex<Vec<CacheEntry>> = Mutex::new(Vec::new());

/// A registration covering `[addr, addr+len)` (writable if asked), shared when one
/// exists.  `PTL_MD_ILLEGAL` when the memory cannot be registered, `PTL_NO_SPACE` when
/// the registration table is full.
fn acquire(addr: usize, len: usize, writable: bool) -> PResult<MemKey> {
    let ps = softnic_fabric::shm::page_size();
    let start = addr & !(ps - 1);
    let end = addr.checked_add(len).and_then(|e| e.checked_add(ps - 1)).ok_or(PTL_MD_ILLEGAL)? & !(ps - 1);
    let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = c.iter_mut().find(|e| e.start <= start && e.end >= end && (e.writable || !writable)) {
        e.refs += 1;
        return Ok(e.key);
    }
    let access = if writable { Access::ReadWrite } else { Access::ReadOnly };
    let key = mem::register(start, end - start, access, pd()).map_err(|e| if e == softnic_fabric::Error::NoSpace { PTL_NO_SPACE } else { PTL_MD_ILLEGAL })?;
    c.push(CacheEntry { start, end, writable, key, refs: 1 });
    Ok(key)
}

fn release(keys: Vec<MemKey>) {
    if keys.is_empty() {
        return;
    }
    let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    for k in keys {
        if let Some(i) = c.iter().position(|e| e.key == k) {
            c[i].refs -= 1;
            if c[i].refs == 0 {
                let e = c.swap_remove(i);
                let _ = mem::deregister(e.key);
            }
        }
    }
}

/// Is the MD active: threshold not exhausted, and (PTL_MD_MAX_SIZE, local offsets) room
/// for a request of max_size left?
pub fn active(m: &MdRow) -> bool {
    if m.view.threshold == 0 {
        return false;
    }
    if m.view.options & PTL_MD_MAX_SIZE != 0 && m.view.options & PTL_MD_MANAGE_REMOTE == 0 {
        return m.total.saturating_sub(m.local_offset) >= m.view.max_size;
    }
    true
}

/// Is `(idx, gen)` a live MD of `n` (not unlinked, not doomed)?
pub fn md_live(n: &Ni, idx: u32, gen: u32) -> bool {
    let g = n.seg.lock();
    n.seg.md(&g, idx).is_some_and(|r| live_row(&n.seg, r, gen))
}

fn live_row(seg: &Seg, r: &MdRow, gen: u32) -> bool {
    r.state == LIVE && seg.gen_ok(r.gen, gen) && r.flags & MDF_DOOMED == 0
}

/// MD row of handle bits `(idx, gen)` (`PTL_MD_INVALID` unless live).
pub fn row_of(seg: &Seg, g: &Guard<'_>, idx: u32, gen: u32) -> PResult<u32> {
    match seg.md(g, idx) {
        Some(r) if live_row(seg, r, gen) => Ok(idx),
        _ => Err(PTL_MD_INVALID),
    }
}

/// Unlinks MD row `i` (lock held): detaches it from its ME, unlinking the ME too when
/// the ME says so, and hands the row to the owner's reaper ([`reap`]).  With a transfer
/// in flight the row only becomes DOOMED.  `event`: log PTL_EVENT_UNLINK (with this
/// link) on the MD's queue first (automatic unlinks).
pub fn unlink_md(seg: &Seg, g: &Guard<'_>, i: u32, event: bool) {
    unlink_md_with(seg, g, i, event.then_some(0))
}

/// As [`unlink_md`], logging PTL_EVENT_UNLINK with `link` when given.
pub fn unlink_md_with(seg: &Seg, g: &Guard<'_>, i: u32, link: Option<u32>) {
    unlink_md_logged(seg, g, i, link, None)
}

/// As [`unlink_md_with`], the UNLINK event kept aside in `own` for an operation that
/// holds its queues (see crate::eq).
pub fn unlink_md_logged(seg: &Seg, g: &Guard<'_>, i: u32, link: Option<u32>, own: Option<&mut OwnEvents>) {
    let Some(m) = seg.md(g, i) else { return };
    if m.state != LIVE || m.flags & MDF_DOOMED != 0 {
        return;
    }
    if let Some(link) = link {
        let ev = || Packed { link, initiator: ptl_process_id_t { nid: seg.hdr().nid, pid: seg.hdr().pid }, ..Packed::about(PTL_EVENT_UNLINK, seg.handle(handle::MD, m.gen, i), &m.view) };
        crate::eq::deposit(seg, g, m.view.eq_handle, ev, own);
    }
    let m = seg.md(g, i).expect("checked");
    let mei = m.me;
    m.me = NONE;
    if let Some(e) = seg.me(g, mei) {
        if e.md == i {
            e.md = NONE;
            if e.unlink == PTL_UNLINK {
                matchlist::unlink_me(seg, g, mei);
            }
        }
    }
    let m = seg.md(g, i).expect("checked");
    if m.pending > 0 {
        m.flags |= MDF_DOOMED;
        return;
    }
    bury(seg, g, i);
}

/// Makes row `i` a zombie (handle stale) for the owner to release.
pub fn bury(seg: &Seg, g: &Guard<'_>, i: u32) {
    let head = seg.state(g).zombies;
    if let Some(m) = seg.md(g, i) {
        m.gen = m.gen.wrapping_add(1);
        m.state = ZOMBIE;
        m.me = head;
        seg.state(g).zombies = i;
    }
}

/// Releases the zombies' registrations and frees their rows (owner only).
pub fn reap(n: &Ni) {
    let mut mem_t = n.md_mem.lock().unwrap_or_else(|e| e.into_inner());
    let mut keys = Vec::new();
    {
        let g = n.seg.lock();
        let mut i = std::mem::replace(&mut n.seg.state(&g).zombies, NONE);
        let mut steps = 0;
        while i != NONE && steps <= n.seg.lay.lim.mds {
            let next = n.seg.md(&g, i).map_or(NONE, |m| m.me);
            if let Some(m) = mem_t.get_mut(i as usize) {
                keys.append(&mut m.keys);
            }
            n.seg.free_md(&g, i);
            i = next;
            steps += 1;
        }
    }
    drop(mem_t);
    release(keys);
}

/// Releases every registration (PtlNIFini).
pub fn release_all(n: &Ni) {
    let mut mem_t = n.md_mem.lock().unwrap_or_else(|e| e.into_inner());
    let keys: Vec<MemKey> = mem_t.iter_mut().flat_map(|m| std::mem::take(&mut m.keys)).collect();
    drop(mem_t);
    release(keys);
}

/// A checked `ptl_md_t`, ready to be written into a row: its pieces of memory with
/// their registrations (attached MDs), its flags.
pub struct Prepared {
    view: MdView,
    iov: Vec<(u64, u64, u64)>,
    total: u64,
    key: u64,
    writable: bool,
    keys: Vec<MemKey>,
    /// For an MD attached to a match entry (a target of others' operations).
    attached: bool,
}

impl Drop for Prepared {
    fn drop(&mut self) {
        release(std::mem::take(&mut self.keys));
    }
}

/// Checks `md` for `n` and, for a target MD (`register`), registers its memory.
pub fn prepare(n: &Ni, md: &ptl_md_t, register: bool) -> PResult<Prepared> {
    let v = MdView::from_c(md);
    if v.options & !MD_OPTIONS_KNOWN != 0 || v.threshold < PTL_MD_THRESH_INF {
        return Err(PTL_MD_ILLEGAL);
    }
    crate::eq::check_eq_or_none(n, v.eq_handle)?;
    let mut pieces: Vec<(u64, u64)> = Vec::new();
    if v.options & PTL_MD_IOVEC != 0 {
        if v.length > n.seg.lay.lim.iov as u64 || (v.start == 0 && v.length > 0) {
            return Err(PTL_MD_ILLEGAL);
        }
        if v.length > 0 {
            let bytes = v.length as usize * std::mem::size_of::<ptl_md_iovec_t>();
            if mem::mapped_writable(v.start as usize, bytes).is_none() {
                return Err(PTL_MD_ILLEGAL);
            }
            // SAFETY: the array lies in mapped, readable memory (checked just above).
            let iov = unsafe { std::slice::from_raw_parts(v.start as *const ptl_md_iovec_t, v.length as usize) };
            for e in iov {
                if e.iov_base.is_null() && e.iov_len > 0 {
                    return Err(PTL_MD_ILLEGAL);
                }
                pieces.push((e.iov_base as u64, e.iov_len));
            }
        }
    } else {
        if v.start == 0 && v.length > 0 {
            return Err(PTL_MD_ILLEGAL);
        }
        pieces.push((v.start, v.length));
    }
    let mut total = 0u64;
    let mut writable = true;
    for &(b, l) in &pieces {
        total = total.checked_add(l).ok_or(PTL_MD_ILLEGAL)?;
        if l == 0 {
            continue;
        }
        b.checked_add(l).ok_or(PTL_MD_ILLEGAL)?;
        match mem::mapped_writable(b as usize, l as usize) {
            None => return Err(PTL_MD_ILLEGAL),
            Some(w) => writable &= w,
        }
    }
    if v.options & PTL_MD_OP_PUT != 0 && !writable {
        return Err(PTL_MD_ILLEGAL);
    }
    let mut p = Prepared { view: v, iov: Vec::new(), total, key: 0, writable, keys: Vec::new(), attached: register };
    for &(b, l) in &pieces {
        let key = if register && l > 0 {
            let k = acquire(b as usize, l as usize, writable)?;
            p.keys.push(k);
            k.to_u64()
        } else {
            0
        };
        p.iov.push((b, l, key));
    }
    if v.options & PTL_MD_IOVEC == 0 {
        p.key = p.iov.first().map_or(0, |x| x.2);
        p.iov.clear();
    }
    Ok(p)
}

/// Writes a prepared MD into row `i` (lock held); its registrations go to `mem_t`.
fn install(seg: &Seg, g: &Guard<'_>, i: u32, mut p: Prepared, flags: u32, mem_t: &mut [MdMem]) {
    if p.attached {
        crate::eq::note_targeted(seg, g, p.view.eq_handle);
    }
    let m = seg.md(g, i).expect("allocated row");
    m.view = p.view;
    m.flags = flags | if p.writable { MDF_WRITABLE } else { 0 };
    m.total = p.total;
    m.key = p.key;
    m.local_offset = 0;
    m.niov = p.iov.len() as u32;
    for (k, &(base, len, key)) in p.iov.iter().enumerate() {
        if let Some(r) = seg.iov(g, i, k as u32) {
            *r = crate::seg::IovRow { base, len, key };
        }
    }
    if let Some(slot) = mem_t.get_mut(i as usize) {
        slot.keys.append(&mut p.keys);
    }
}

fn unlink_flags(unlink_op: u32, unlink_nofit: u32) -> PResult<u32> {
    if unlink_op > PTL_UNLINK || unlink_nofit > PTL_UNLINK {
        return Err(PTL_MD_ILLEGAL);
    }
    Ok(if unlink_op == PTL_UNLINK { MDF_UNLINK_OP } else { 0 } | if unlink_nofit == PTL_UNLINK { MDF_UNLINK_NOFIT } else { 0 })
}

fn attach(me_handle: u32, md: ptl_md_t, unlink_op: u32, unlink_nofit: u32, md_handle: *mut u32) -> PResult<()> {
    let (n, idx, gen) = Lib::of(me_handle, handle::ME, PTL_ME_INVALID)?;
    let flags = unlink_flags(unlink_op, unlink_nofit)?;
    reap(&n);
    let p = prepare(&n, &md, true)?;
    let mut mem_t = n.md_mem.lock().unwrap_or_else(|e| e.into_inner());
    let g = n.seg.lock();
    let mi = matchlist::row_of(&n.seg, &g, idx, gen)?;
    if n.seg.me(&g, mi).expect("live").md != NONE {
        return Err(PTL_ME_IN_USE);
    }
    let i = n.seg.alloc_md(&g).ok_or(PTL_NO_SPACE)?;
    install(&n.seg, &g, i, p, flags, &mut mem_t);
    let m = n.seg.md(&g, i).expect("allocated");
    m.me = mi;
    let h = n.seg.handle(handle::MD, m.gen, i);
    n.seg.me(&g, mi).expect("live").md = i;
    drop(g);
    if !md_handle.is_null() {
        // SAFETY: non-NULL; a NULL handle pointer is allowed (the handle is not returned).
        unsafe { md_handle.write_unaligned(h) };
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PtlMDAttach(me_handle: u32, md: ptl_md_t, unlink_op: u32, md_handle: *mut u32) -> i32 {
    done("PtlMDAttach", attach(me_handle, md, unlink_op, PTL_RETAIN, md_handle))
}

#[no_mangle]
pub unsafe extern "C" fn PtlMDAttachNoFit(me_handle: u32, md: ptl_md_t, unlink_op: u32, unlink_nofit: u32, md_handle: *mut u32) -> i32 {
    done("PtlMDAttachNoFit", attach(me_handle, md, unlink_op, unlink_nofit, md_handle))
}

#[no_mangle]
pub unsafe extern "C" fn PtlMDBind(ni_handle: u32, md: ptl_md_t, unlink_op: u32, md_handle: *mut u32) -> i32 {
    let r = (|| {
        let n = Lib::ni(ni_handle)?;
        if md_handle.is_null() {
            return Err(PTL_SEGV);
        }
        let flags = unlink_flags(unlink_op, PTL_RETAIN)?;
        reap(&n);
        let p = prepare(&n, &md, false)?;
        let mut mem_t = n.md_mem.lock().unwrap_or_else(|e| e.into_inner());
        let g = n.seg.lock();
        let i = n.seg.alloc_md(&g).ok_or(PTL_NO_SPACE)?;
        install(&n.seg, &g, i, p, flags, &mut mem_t);
        let h = n.seg.handle(handle::MD, n.seg.md(&g, i).expect("allocated").gen, i);
        drop(g);
        // SAFETY: checked non-NULL.
        unsafe { md_handle.write_unaligned(h) };
        Ok(())
    })();
    done("PtlMDBind", r)
}

/// A transfer that has been in flight this long lost its initiator (another machine's
/// process that died between the match and the completion): it no longer holds the MD.
fn abandoned(m: &MdRow) -> bool {
    let limit = softnic_fabric::env::get_u64("SOFTNIC_NET_TIMEOUT_MS").max(1000).saturating_mul(3_000_000);
    now_ns().saturating_sub(m.pending_since) > limit
}

/// CLOCK_MONOTONIC_COARSE in nanoseconds.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

#[no_mangle]
pub extern "C" fn PtlMDUnlink(md_handle: u32) -> i32 {
    let r = (|| {
        let (n, idx, gen) = Lib::of(md_handle, handle::MD, PTL_MD_INVALID)?;
        let g = n.seg.lock();
        let i = row_of(&n.seg, &g, idx, gen)?;
        let m = n.seg.md(&g, i).expect("live");
        if m.pending > 0 {
            if !abandoned(m) {
                return Err(PTL_MD_IN_USE);
            }
            m.pending = 0;
        }
        unlink_md(&n.seg, &g, i, false);
        drop(g);
        reap(&n);
        Ok(())
    })();
    done("PtlMDUnlink", r)
}

#[no_mangle]
pub unsafe extern "C" fn PtlMDUpdate(md_handle: u32, old_md: *mut ptl_md_t, new_md: *mut ptl_md_t, eq_handle: u32) -> i32 {
    let r = (|| {
        let (n, idx, gen) = Lib::of(md_handle, handle::MD, PTL_MD_INVALID)?;
        let testq = if eq_handle != PTL_EQ_NONE { Some(crate::eq::eq_local(&n, eq_handle)?) } else { None };
        reap(&n);
        // SAFETY: NULL or the caller's MD.
        let new = unsafe { new_md.as_ref() }.copied();
        // Check (and register) the new values before taking the lock.
        let p = match new {
            Some(md) => {
                let attached = {
                    let g = n.seg.lock();
                    let i = row_of(&n.seg, &g, idx, gen)?;
                    n.seg.md(&g, i).expect("live").me != NONE
                };
                Some(prepare(&n, &md, attached)?)
            }
            None => None,
        };
        let mut mem_t = n.md_mem.lock().unwrap_or_else(|e| e.into_inner());
        let g = n.seg.lock();
        let i = row_of(&n.seg, &g, idx, gen)?;
        let m = n.seg.md(&g, i).expect("live");
        if !old_md.is_null() {
            // SAFETY: non-NULL; the caller's MD.
            unsafe { old_md.write_unaligned(m.view.to_c()) };
        }
        let Some(p) = p else { return Ok(()) };
        if m.pending > 0 && !abandoned(m) {
            return Err(PTL_MD_NO_UPDATE);
        }
        // Atomic with respect to arriving messages: they deposit under this lock.  Events
        // held back for an operation in flight count.
        if testq.as_ref().is_some_and(|q| q.holds_events()) {
            return Err(PTL_MD_NO_UPDATE);
        }
        let flags = m.flags & (MDF_UNLINK_OP | MDF_UNLINK_NOFIT);
        let me_idx = m.me;
        let old_keys = mem_t.get_mut(i as usize).map(|s| std::mem::take(&mut s.keys)).unwrap_or_default();
        install(&n.seg, &g, i, p, flags, &mut mem_t);
        let m = n.seg.md(&g, i).expect("live");
        m.me = me_idx;
        m.pending = 0;
        drop(g);
        drop(mem_t);
        release(old_keys);
        Ok(())
    })();
    done("PtlMDUpdate", r)
}

#[no_mangle]
pub unsafe extern "C" fn PtlMEMDPost(
    ni_handle: u32,
    base: u32,
    match_id: ptl_process_id_t,
    match_bits: u64,
    ignore_bits: u64,
    unlink: u32,
    position: u32,
    md: ptl_md_t,
    unlink_op: u32,
    me_handle: *mut u32,
    md_handle: *mut u32,
    eq_handle: u32,
) -> i32 {
    let r = (|| {
        let n = Lib::ni(ni_handle)?;
        let (bidx, bgen) = handle::index_of(base, handle::ME).ok_or(PTL_ME_INVALID)?;
        if me_handle.is_null() || md_handle.is_null() {
            return Err(PTL_SEGV);
        }
        if unlink > PTL_UNLINK || position > PTL_INS_AFTER {
            return Err(PTL_ME_INVALID);
        }
        let flags = unlink_flags(unlink_op, PTL_RETAIN)?;
        let testq = if eq_handle != PTL_EQ_NONE { Some(crate::eq::eq_local(&n, eq_handle)?) } else { None };
        reap(&n);
        let p = prepare(&n, &md, true)?;
        let mut mem_t = n.md_mem.lock().unwrap_or_else(|e| e.into_inner());
        let g = n.seg.lock();
        let anchor = matchlist::row_of(&n.seg, &g, bidx, bgen)?;
        if testq.as_ref().is_some_and(|q| q.holds_events()) {
            return Err(PTL_MD_NO_UPDATE);
        }
        // Both objects, or neither: the MD row first, the ME (which links) last.
        let i = n.seg.alloc_md(&g).ok_or(PTL_NO_SPACE)?;
        let pt = n.seg.me(&g, anchor).expect("live").pt;
        let meh = match matchlist::create(&n, &g, pt, match_id, match_bits, ignore_bits, unlink, position, anchor) {
            Ok(h) => h,
            Err(e) => {
                bury(&n.seg, &g, i);
                return Err(e);
            }
        };
        let (mi, _) = handle::index_of(meh, handle::ME).expect("an ME handle");
        install(&n.seg, &g, i, p, flags, &mut mem_t);
        let m = n.seg.md(&g, i).expect("allocated");
        m.me = mi;
        let mdh = n.seg.handle(handle::MD, m.gen, i);
        n.seg.me(&g, mi).expect("live").md = i;
        drop(g);
        // SAFETY: checked non-NULL.
        unsafe {
            me_handle.write_unaligned(meh);
            md_handle.write_unaligned(mdh);
        }
        Ok(())
    })();
    done("PtlMEMDPost", r)
}

/// An MD's memory as (registration, address, length) pieces, in order: the one piece
/// of a contiguous MD without a heap allocation (this is on every operation's path).
pub enum Pieces {
    One([(u64, u64, u64); 1]),
    Many(Vec<(u64, u64, u64)>),
}

impl std::ops::Deref for Pieces {
    type Target = [(u64, u64, u64)];
    fn deref(&self) -> &Self::Target {
        match self {
            Pieces::One(a) => a,
            Pieces::Many(v) => v,
        }
    }
}

/// The pieces of MD row `i`'s memory.
#[inline]
pub fn pieces(seg: &Seg, g: &Guard<'_>, i: u32) -> Pieces {
    let Some(m) = seg.md(g, i) else { return Pieces::Many(Vec::new()) };
    if m.niov == 0 {
        return Pieces::One([(m.key, m.view.start, m.view.length)]);
    }
    let n = m.niov.min(seg.lay.lim.iov);
    Pieces::Many((0..n).filter_map(|k| seg.iov(g, i, k).map(|r| (r.key, r.base, r.len))).collect())
}
