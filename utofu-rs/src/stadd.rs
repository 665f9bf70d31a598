//! Memory registration and STADDs.
//!
//! ```text
//! STag form (reg_mem_with_stag, query_stadd):
//!        0-39 offset   40-47 STag   48-51 0xf   52-63 zero        (STag 13: 0xf0d0000000000)
//! reg_mem form:
//!        0-35 offset   36-47 row of the VCQ's table (256-4095)   48-62 check   63 set
//! ```
//! A STag's STADD is a function of the STag alone, as Fujitsu's: the same on every VCQ,
//! so a program uses its own STADD of a STag as the peer's.  What such an address
//! reaches is decided at the target: the row must be live there (registered on that
//! VCQ), the range inside it, and the fabric checks the row's registration generation on
//! every access (a region deregistered meanwhile is refused, a STag registered again
//! serves its new region, as on hardware).
//!
//! The check of the reg_mem form, bits no program computes, is drawn from the VCQ id,
//! the row and the registration's fabric key (its generation), and is kept in the row:
//! a STADD of another VCQ, or of a region since deregistered (the row reused, the VCQ
//! freed and made again), fails resolution (`*_MEMORY`) instead of reaching someone
//! else's memory.

use crate::status::{done, out, UResult};
use crate::topo::{canonical, VcqAddr};
use crate::types::*;
use crate::vcq::{self, lock, read_row, Row, RowInfo, NROWS, pd};
use softnic_fabric::mem::{self, Access};

/// Largest region (both forms): offsets fit 36 bits.
pub const MAX_REGION: u64 = 1 << 36;
const STAG_OFF_BITS: u32 = 40;
const STAG_MARK: u64 = 0xf;
const STAG_MARK_SHIFT: u32 = 48;
const ROW_SHIFT: u32 = 36;
const CHECK_SHIFT: u32 = 48;
const CHECK_MASK: u64 = 0x7fff;
const REG_FORM: u64 = 1 << 63;

/// The STADD of `stag` (offset 0).
pub fn of_stag(stag: u32) -> u64 {
    STAG_MARK << STAG_MARK_SHIFT | (stag as u64) << STAG_OFF_BITS
}

/// The check of a reg_mem row (never 0, so a STag row's 0 never matches).
pub fn check_of(vcq_id: u64, row: usize, key: u64) -> u16 {
    let mut x = canonical(vcq_id) ^ (row as u64).rotate_left(40) ^ key.rotate_left(17);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    ((x % CHECK_MASK) + 1) as u16
}

/// The STADD of row `row` (offset 0): the STag form below 256, else the reg_mem form.
pub fn make(row: usize, check: u16) -> u64 {
    if row < NUM_STAGS as usize {
        of_stag(row as u32)
    } else {
        REG_FORM | (check as u64) << CHECK_SHIFT | (row as u64) << ROW_SHIFT
    }
}

/// (row, offset, check: 0 for the STag form) of a STADD; None for no form of ours.
#[inline]
pub fn split(s: u64) -> Option<(usize, u64, u16)> {
    if s >> STAG_MARK_SHIFT == STAG_MARK {
        Some((((s >> STAG_OFF_BITS) & 0xff) as usize, s & ((1 << STAG_OFF_BITS) - 1), 0))
    } else if s & REG_FORM != 0 {
        let row = ((s >> ROW_SHIFT) & 0xfff) as usize;
        (row >= NUM_STAGS as usize).then_some((row, s & (MAX_REGION - 1), ((s >> CHECK_SHIFT) & CHECK_MASK) as u16))
    } else {
        None
    }
}

/// Why a STADD range does not resolve (mapped to TCQ/MRQ codes by the caller).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Unknown, stale or foreign STADD.
    Memory,
    /// The STADD lies outside its region.
    Stadd,
    /// The STADD is inside but the range runs past the end.
    Length,
}

/// Resolves `[stadd, stadd+len)` in the STADD table at `blk` (a VCQ's block): the row
/// and the address.
#[inline]
pub fn resolve(blk: *const u8, stadd: u64, len: usize) -> Result<(Row, u64), Fault> {
    resolve_inline(blk, stadd, len)
}

/// [`resolve`] always inlined, for the put quick path (out of line, its result comes back
/// through memory).
#[inline(always)]
pub fn resolve_inline(blk: *const u8, stadd: u64, len: usize) -> Result<(Row, u64), Fault> {
    let (row, off, check) = split(stadd).ok_or(Fault::Memory)?;
    let r = read_row(blk, row).ok_or(Fault::Memory)?;
    // The row holds the check its STADDs carry (0 for a STag).
    if r.check != check {
        return Err(Fault::Memory);
    }
    if off > r.len || (off == r.len && len > 0) {
        return Err(Fault::Stadd);
    }
    if off + len as u64 > r.len {
        return Err(Fault::Length);
    }
    Ok((r, r.base + off))
}

fn register(h: usize, addr: usize, size: usize, stag: Option<u32>, flags: u64) -> UResult<u64> {
    let v = vcq::get(h)?;
    if addr == 0 {
        return Err(UTOFU_ERR_INVALID_POINTER);
    }
    if flags & !UTOFU_REG_MEM_FLAG_READ_ONLY != 0 {
        return Err(UTOFU_ERR_INVALID_FLAGS);
    }
    if size == 0 || size as u64 > MAX_REGION {
        return Err(UTOFU_ERR_INVALID_SIZE);
    }
    if let Some(s) = stag {
        if s >= NUM_STAGS {
            return Err(UTOFU_ERR_INVALID_STAG);
        }
        if addr % STAG_ALIGN != 0 {
            return Err(UTOFU_ERR_INVALID_ADDRESS);
        }
        if size % STAG_ALIGN != 0 {
            return Err(UTOFU_ERR_INVALID_SIZE);
        }
    }
    let readonly = flags & UTOFU_REG_MEM_FLAG_READ_ONLY != 0;
    match mem::mapped_writable(addr, size) {
        None => return Err(UTOFU_ERR_INVALID_ADDRESS),
        Some(false) if !readonly => return Err(UTOFU_ERR_INVALID_ADDRESS),
        _ => {}
    }
    let mut r = lock(&v.regs);
    let row = match stag {
        Some(s) => {
            if r.rows.contains_key(&(s as usize)) {
                return Err(UTOFU_ERR_USED);
            }
            s as usize
        }
        None => {
            if let Some(&row) = r.by_range.get(&(addr, size, readonly)) {
                let ri = r.rows.get_mut(&row).expect("indexed rows exist");
                ri.refs += 1;
                return Ok(make(row, ri.check));
            }
            let start = r.next_free.max(NUM_STAGS as usize);
            let span = NROWS - NUM_STAGS as usize;
            let row = (0..span).map(|i| NUM_STAGS as usize + (start - NUM_STAGS as usize + i) % span).find(|i| !r.rows.contains_key(i)).ok_or(UTOFU_ERR_FULL)?;
            r.next_free = row + 1;
            row
        }
    };
    let access = if readonly { Access::ReadOnly } else { Access::ReadWrite };
    let key = mem::register(addr, size, access, pd()).map_err(|e| match e {
        softnic_fabric::Error::NoSpace => UTOFU_ERR_FULL,
        softnic_fabric::Error::InvalidArg | softnic_fabric::Error::OutOfBounds => UTOFU_ERR_INVALID_ADDRESS,
        _ => UTOFU_ERR_NOT_AVAILABLE,
    })?;
    if softnic_fabric::env::get_bool("UTOFU_SWAP_PROTECT") {
        // Best effort, as documented (RLIMIT_MEMLOCK may refuse).
        // SAFETY: a mapped range (checked above).
        unsafe { libc::mlock(addr as *const libc::c_void, size) };
    }
    let check = if stag.is_some() { 0 } else { check_of(v.id, row, key.to_u64()) };
    vcq::write_row_pub(v.blk(), row, Some(Row { key: key.to_u64(), base: addr as u64, len: size as u64, readonly, check }));
    r.rows.insert(row, RowInfo { key, base: addr, len: size, readonly, refs: 1, check });
    if stag.is_none() {
        r.by_range.insert((addr, size, readonly), row);
    }
    softnic_fabric::check::at_exit(check_at_exit);
    Ok(make(row, check))
}

/// SOFTNIC_CHECK at exit: registrations of VCQs still live that were never deregistered
/// (utofu_dereg_mem; freeing a VCQ releases its own).
fn check_at_exit() {
    let (n, one) = vcq::live_registrations();
    if n > 0 {
        let example = one.map_or(String::new(), |(b, l)| format!(", among them [{b:#x}, +{l})"));
        softnic_fabric::check::report("utofu_dereg_mem", &format!("{n} memory registration(s) never deregistered{example}"), "exit");
    }
}

fn deregister(h: usize, stadd: u64, flags: u64) -> UResult<()> {
    let v = vcq::get(h)?;
    if flags != 0 {
        return Err(UTOFU_ERR_INVALID_FLAGS);
    }
    let (row, off, check) = split(stadd).ok_or(UTOFU_ERR_INVALID_STADD)?;
    if off != 0 {
        return Err(UTOFU_ERR_INVALID_STADD);
    }
    let mut r = lock(&v.regs);
    if r.rows.get(&row).map_or(true, |ri| ri.check != check) {
        return Err(UTOFU_ERR_INVALID_STADD);
    }
    let ri = r.rows.get_mut(&row).expect("checked");
    ri.refs -= 1;
    if ri.refs > 0 {
        return Ok(());
    }
    let ri = r.rows.remove(&row).expect("checked");
    r.by_range.retain(|_, &mut x| x != row);
    vcq::write_row_pub(v.blk(), row, None);
    drop(r);
    let _ = mem::deregister(ri.key);
    if softnic_fabric::env::get_bool("UTOFU_SWAP_PROTECT") {
        // SAFETY: the range was mapped when registered; munlock of unmapped pages fails harmlessly.
        unsafe { libc::munlock(ri.base as *const libc::c_void, ri.len) };
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn utofu_reg_mem(vcq_hdl: usize, addr: *mut libc::c_void, size: usize, flags: u64, stadd: *mut u64) -> i32 {
    let r = if stadd.is_null() { Err(UTOFU_ERR_INVALID_POINTER) } else { register(vcq_hdl, addr as usize, size, None, flags).and_then(|s| out(stadd, s)) };
    done("utofu_reg_mem", r)
}

#[no_mangle]
pub unsafe extern "C" fn utofu_reg_mem_with_stag(vcq_hdl: usize, addr: *mut libc::c_void, size: usize, stag: u32, flags: u64, stadd: *mut u64) -> i32 {
    let r = if stadd.is_null() { Err(UTOFU_ERR_INVALID_POINTER) } else { register(vcq_hdl, addr as usize, size, Some(stag), flags).and_then(|s| out(stadd, s)) };
    done("utofu_reg_mem_with_stag", r)
}

#[no_mangle]
pub unsafe extern "C" fn utofu_query_stadd(vcq_id: u64, stag: u32, stadd: *mut u64) -> i32 {
    let r = (|| {
        // The same on every VCQ (the id is only checked).
        VcqAddr::decode(vcq_id).ok_or(UTOFU_ERR_INVALID_VCQ_ID)?;
        if stag >= NUM_STAGS {
            return Err(UTOFU_ERR_INVALID_STAG);
        }
        out(stadd, of_stag(stag))
    })();
    done("utofu_query_stadd", r)
}

#[no_mangle]
pub extern "C" fn utofu_dereg_mem(vcq_hdl: usize, stadd: u64, flags: u64) -> i32 {
    done("utofu_dereg_mem", deregister(vcq_hdl, stadd, flags))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stag_stadds_are_fujitsus_and_the_forms_apart() {
        assert_eq!(of_stag(13), 0xf_0d00_0000_0000);
        assert_eq!(make(13, 0), of_stag(13));
        assert_eq!(split(of_stag(255) + 4096), Some((255, 4096, 0)));
        let id = crate::topo::VcqAddr { coords: [1, 2, 3, 1, 2, 1], tni: 2, cq: 3, cmp: Some(5), path: [0; 3] }.id();
        let c = check_of(id, 4000, 77);
        let s = make(4000, c);
        assert_eq!(split(s + 12345), Some((4000, 12345, c)));
        assert!(s >> 48 != 0xf && c != 0);
        // Paths do not change a VCQ's checks; another VCQ, row or registration does.
        let other_path = crate::topo::VcqAddr::decode(id).unwrap().with_path(&[0, 0, 0]);
        assert_eq!(check_of(other_path, 4000, 77), c);
        assert_ne!(check_of(id, 4000, 79), c);
        let id2 = crate::topo::VcqAddr { coords: [1, 2, 3, 1, 2, 1], tni: 2, cq: 4, cmp: Some(5), path: [0; 3] }.id();
        assert_ne!(check_of(id2, 4000, 77), c);
        // Neither form: plain addresses, a reg_mem form naming a STag row.
        for bad in [0u64, 0x7fff_1234_5678, 0x1f_0d00_0000_0000, REG_FORM | 5 << ROW_SHIFT] {
            assert_eq!(split(bad), None, "{bad:#x}");
        }
    }
}
