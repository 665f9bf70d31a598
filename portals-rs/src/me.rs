//! Match entries: PtlMEAttach, PtlMEAttachAny, PtlMEInsert, PtlMEUnlink, PtlMEDump,
//! PtlTblDump and PtlNIDebug, on the match lists of [`crate::matchlist`].

use crate::handle;
use crate::matchlist::{create, row_of, unlink_me};
use crate::md;
use crate::objects::{Lib, Ni};
use crate::seg::{Guard, NONE};
use crate::status::{done, set_debug_mask, PResult};
use crate::types::*;

fn check_args(unlink: u32, pos: u32) -> PResult<()> {
    if unlink > PTL_UNLINK || pos > PTL_INS_AFTER {
        return Err(PTL_ME_INVALID);
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PtlMEAttach(ni_handle: u32, pt_index: u32, match_id: ptl_process_id_t, match_bits: u64, ignore_bits: u64, unlink: u32, position: u32, me_handle: *mut u32) -> i32 {
    let r = (|| {
        let n = Lib::ni(ni_handle)?;
        if me_handle.is_null() {
            return Err(PTL_SEGV);
        }
        check_args(unlink, position)?;
        let g = n.seg.lock();
        let h = create(&n, &g, pt_index, match_id, match_bits, ignore_bits, unlink, position, NONE)?;
        drop(g);
        // SAFETY: checked non-NULL.
        unsafe { me_handle.write_unaligned(h) };
        Ok(())
    })();
    done("PtlMEAttach", r)
}

#[no_mangle]
pub unsafe extern "C" fn PtlMEAttachAny(ni_handle: u32, pt_index: *mut u32, match_id: ptl_process_id_t, match_bits: u64, ignore_bits: u64, unlink: u32, me_handle: *mut u32) -> i32 {
    let r = (|| {
        let n = Lib::ni(ni_handle)?;
        if me_handle.is_null() || pt_index.is_null() {
            return Err(PTL_SEGV);
        }
        check_args(unlink, PTL_INS_AFTER)?;
        let g = n.seg.lock();
        // "Unused" = a portal whose list is empty now.
        let pt = (0..=n.seg.lay.lim.pt).find(|&i| n.seg.pt(&g, i).is_some_and(|p| p.len == 0)).ok_or(PTL_PT_FULL)?;
        let h = create(&n, &g, pt, match_id, match_bits, ignore_bits, unlink, PTL_INS_AFTER, NONE)?;
        drop(g);
        // SAFETY: checked non-NULL.
        unsafe {
            pt_index.write_unaligned(pt);
            me_handle.write_unaligned(h);
        }
        Ok(())
    })();
    done("PtlMEAttachAny", r)
}

#[no_mangle]
pub unsafe extern "C" fn PtlMEInsert(base: u32, match_id: ptl_process_id_t, match_bits: u64, ignore_bits: u64, unlink: u32, position: u32, me_handle: *mut u32) -> i32 {
    let r = (|| {
        let (n, idx, gen) = Lib::of(base, handle::ME, PTL_ME_INVALID)?;
        if me_handle.is_null() {
            return Err(PTL_SEGV);
        }
        check_args(unlink, position)?;
        let g = n.seg.lock();
        let anchor = row_of(&n.seg, &g, idx, gen)?;
        let pt = n.seg.me(&g, anchor).expect("live").pt;
        let h = create(&n, &g, pt, match_id, match_bits, ignore_bits, unlink, position, anchor)?;
        drop(g);
        // SAFETY: checked non-NULL.
        unsafe { me_handle.write_unaligned(h) };
        Ok(())
    })();
    done("PtlMEInsert", r)
}

#[no_mangle]
pub extern "C" fn PtlMEUnlink(me_handle: u32) -> i32 {
    let r = (|| {
        let (n, idx, gen) = Lib::of(me_handle, handle::ME, PTL_ME_INVALID)?;
        let g = n.seg.lock();
        let i = row_of(&n.seg, &g, idx, gen)?;
        let mdi = n.seg.me(&g, i).expect("live").md;
        if mdi != NONE {
            // The MD goes with the ME (no UNLINK event: an explicit unlink); a transfer
            // in flight finishes first and frees it.
            md::unlink_md(&n.seg, &g, mdi, false);
        }
        unlink_me(&n.seg, &g, i);
        drop(g);
        md::reap(&n);
        Ok(())
    })();
    done("PtlMEUnlink", r)
}

/// Prints one ME (and its MD) to stderr.
pub fn dump_me(n: &Ni, g: &Guard<'_>, i: u32) {
    let Some(r) = n.seg.me(g, i) else { return };
    let id = |v: u32| if v == PTL_ANY { "*".to_string() } else { v.to_string() };
    eprintln!(
        "    me {:#x}: match nid {} pid {} bits {:#018x} ignore {:#018x} {}",
        n.seg.handle(handle::ME, r.gen, i),
        id(r.nid),
        id(r.pid),
        r.match_bits,
        r.ignore_bits,
        if r.unlink == PTL_UNLINK { "unlink" } else { "retain" }
    );
    if r.md == NONE {
        eprintln!("      no md");
    } else if let Some(m) = n.seg.md(g, r.md) {
        eprintln!(
            "      md {:#x}: start {:#x} length {} threshold {} options {:#x} offset {} max_size {} eq {:#x}{}",
            n.seg.handle(handle::MD, m.gen, r.md),
            m.view.start,
            m.view.length,
            m.view.threshold,
            m.view.options,
            m.local_offset,
            m.view.max_size,
            m.view.eq_handle,
            if md::active(m) { "" } else { " (inactive)" }
        );
    }
}

#[no_mangle]
pub extern "C" fn PtlMEDump(me_handle: u32) -> i32 {
    let r = (|| {
        let (n, idx, gen) = Lib::of(me_handle, handle::ME, PTL_ME_INVALID)?;
        let g = n.seg.lock();
        let i = row_of(&n.seg, &g, idx, gen)?;
        eprintln!("portals: ME of portal {}:", n.seg.me(&g, i).expect("live").pt);
        dump_me(&n, &g, i);
        Ok(())
    })();
    done("PtlMEDump", r)
}

#[no_mangle]
pub extern "C" fn PtlTblDump(ni: u32, pt_index: i32) -> i32 {
    let r = (|| {
        let n = Lib::ni(ni)?;
        let g = n.seg.lock();
        let max = n.seg.lay.lim.pt;
        let pts: Vec<u32> = if pt_index < 0 {
            (0..=max).filter(|&p| n.seg.pt(&g, p).is_some_and(|r| r.len > 0)).collect()
        } else if pt_index as u32 <= max {
            vec![pt_index as u32]
        } else {
            return Err(PTL_PT_INDEX_INVALID);
        };
        eprintln!("portals: NI {:#x} (nid {} pid {}) portal table:", n.handle, n.id.nid, n.id.pid);
        for p in pts {
            let row = *n.seg.pt(&g, p).expect("in range");
            eprintln!("  portal {}: {} entries", p, row.len);
            let mut i = row.head;
            let mut steps = 0;
            while i != NONE && steps < n.seg.lay.lim.mes {
                dump_me(&n, &g, i);
                i = n.seg.me(&g, i).map_or(NONE, |r| r.next);
                steps += 1;
            }
        }
        Ok(())
    })();
    done("PtlTblDump", r)
}

#[no_mangle]
pub extern "C" fn PtlNIDebug(ni: u32, mask: u32) -> u32 {
    match Lib::ni(ni) {
        Ok(n) => {
            let old = n.seg.hdr().debug.swap(mask, std::sync::atomic::Ordering::Relaxed);
            set_debug_mask(mask);
            old
        }
        Err(_) => 0,
    }
}
