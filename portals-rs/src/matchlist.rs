//! Match lists: a portal's match list is a doubly linked list of ME rows (indices,
//! NONE-terminated) hanging off its portal-table row, which also counts its length.  A
//! new entry is filled before it is linked, so a walk (by a target-side operation holding
//! the lock, or after a holder died) never meets a half-made entry.  The list operations
//! here are shared by the ME and MD calls ([`crate::me`], [`crate::md`]) and the target
//! side ([`unlink_me`], through an MD's unlink).

use crate::handle;
use crate::objects::Ni;
use crate::seg::{Guard, Seg, LIVE, NONE};
use crate::status::PResult;
use crate::types::*;

/// Is `(idx, gen)` a live ME of `n`?
pub fn me_live(n: &Ni, idx: u32, gen: u32) -> bool {
    let g = n.seg.lock();
    n.seg.me(&g, idx).is_some_and(|r| r.state == LIVE && n.seg.gen_ok(r.gen, gen))
}

/// Links ME row `me` into portal `pt`'s list: at the head (`PTL_INS_BEFORE`) or tail
/// (`PTL_INS_AFTER`) when `anchor` is NONE, else next to `anchor`.
fn link(seg: &Seg, g: &Guard<'_>, pt: u32, me: u32, pos: u32, anchor: u32) {
    let Some(p) = seg.pt(g, pt) else { return };
    let (prev, next) = if anchor == NONE {
        if pos == PTL_INS_BEFORE {
            (NONE, p.head)
        } else {
            (p.tail, NONE)
        }
    } else {
        let a = seg.me(g, anchor).map_or((NONE, NONE), |a| (a.prev, a.next));
        if pos == PTL_INS_BEFORE {
            (a.0, anchor)
        } else {
            (anchor, a.1)
        }
    };
    if let Some(r) = seg.me(g, me) {
        r.pt = pt;
        r.prev = prev;
        r.next = next;
    }
    match seg.me(g, prev) {
        Some(r) => r.next = me,
        None => seg.pt(g, pt).expect("checked").head = me,
    }
    match seg.me(g, next) {
        Some(r) => r.prev = me,
        None => seg.pt(g, pt).expect("checked").tail = me,
    }
    seg.pt(g, pt).expect("checked").len += 1;
}

/// Removes ME row `me` from its list and frees it (its MD, if any, is the caller's).
pub fn unlink_me(seg: &Seg, g: &Guard<'_>, me: u32) {
    let Some(r) = seg.me(g, me) else { return };
    if r.state != LIVE {
        return;
    }
    let (pt, prev, next) = (r.pt, r.prev, r.next);
    match seg.me(g, prev) {
        Some(p) => p.next = next,
        None => {
            if let Some(p) = seg.pt(g, pt) {
                p.head = next;
            }
        }
    }
    match seg.me(g, next) {
        Some(n) => n.prev = prev,
        None => {
            if let Some(p) = seg.pt(g, pt) {
                p.tail = prev;
            }
        }
    }
    if let Some(p) = seg.pt(g, pt) {
        p.len = p.len.saturating_sub(1);
    }
    seg.free_me(g, me);
}

/// Creates an ME and links it (`anchor` NONE: at the list's head or tail).
#[allow(clippy::too_many_arguments)]
pub fn create(n: &Ni, g: &Guard<'_>, pt: u32, id: ptl_process_id_t, bits: u64, ignore: u64, unlink: u32, pos: u32, anchor: u32) -> PResult<u32> {
    let seg = &n.seg;
    let p = seg.pt(g, pt).ok_or(PTL_PT_INDEX_INVALID)?;
    if p.len >= seg.lay.lim.me_list {
        return Err(PTL_ME_LIST_TOO_LONG);
    }
    let i = seg.alloc_me(g).ok_or(PTL_NO_SPACE)?;
    let r = seg.me(g, i).expect("allocated");
    r.nid = id.nid;
    r.pid = id.pid;
    r.match_bits = bits;
    r.ignore_bits = ignore;
    r.unlink = unlink;
    let gen = r.gen;
    link(seg, g, pt, i, pos, anchor);
    Ok(seg.handle(handle::ME, gen, i))
}

/// The ME row `idx` of generation bits `gen`, live (`PTL_ME_INVALID` otherwise).
pub fn row_of(seg: &Seg, g: &Guard<'_>, idx: u32, gen: u32) -> PResult<u32> {
    match seg.me(g, idx) {
        Some(r) if r.state == LIVE && seg.gen_ok(r.gen, gen) => Ok(idx),
        _ => Err(PTL_ME_INVALID),
    }
}
