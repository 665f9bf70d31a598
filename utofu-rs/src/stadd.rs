//! Memory registration and STADDs.
//!
//! ```text
//! STADD: 0-35 offset in the region   36-47 row of the VCQ's table (0-255 = STags)
//!        48-60 check(VCQ id, row, reuse count of the row)   61-63 component id
//! ```
//! The check makes a STADD of another VCQ, or of a row since deregistered and reused,
//! fail resolution (`*_MEMORY`) instead of reaching someone else's memory; for STags the
//! reuse count is always 0, so `query_stadd` is a pure function of (VCQ id, STag).

use crate::status::{done, out, UResult};
use crate::topo::{canonical, VcqAddr};
use crate::types::*;
use crate::vcq::{self, lock, read_row, Row, RowInfo, NROWS, PD};
use softnic_fabric::mem::{self, Access};

const OFF_BITS: u32 = 36;
pub const MAX_REGION: u64 = 1 << OFF_BITS;
const ROW_SHIFT: u32 = 36;
const CHECK_SHIFT: u32 = 48;
const CMP_SHIFT: u32 = 61;

pub fn check_of(vcq_id: u64, row: usize, reuse: u32) -> u16 {
    let mut x = canonical(vcq_id) ^ (row as u64).rotate_left(40) ^ (reuse as u64).rotate_left(20);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    (x & 0x1fff) as u16
}

pub fn make(vcq_id: u64, cmp: u16, row: usize, reuse: u32) -> u64 {
    (row as u64) << ROW_SHIFT | (check_of(vcq_id, row, reuse) as u64) << CHECK_SHIFT | (cmp as u64) << CMP_SHIFT
}

/// (row, offset, check, component) of a STADD.
pub fn split(s: u64) -> (usize, u64, u16, u16) {
    (((s >> ROW_SHIFT) & 0xfff) as usize, s & (MAX_REGION - 1), ((s >> CHECK_SHIFT) & 0x1fff) as u16, (s >> CMP_SHIFT) as u16)
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

/// Resolves `[stadd, stadd+len)` in the table at `blk` of the VCQ `vcq_id`
/// (component `cmp`): the row and the address.
#[inline]
pub fn resolve(blk: *const u8, vcq_id: u64, cmp: u16, stadd: u64, len: usize) -> Result<(Row, u64), Fault> {
    let (row, off, check, c) = split(stadd);
    if c != cmp {
        return Err(Fault::Memory);
    }
    let r = read_row(blk, row).ok_or(Fault::Memory)?;
    // The row holds the check its STADDs carry (derived from the VCQ id, so a STADD
    // of another VCQ fails here).
    let _ = vcq_id;
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
                let reuse = r.reuse.get(&row).copied().unwrap_or(0);
                return Ok(make(v.id, v.addr.cmp, row, reuse));
            }
            let start = r.next_free.max(NUM_STAGS as usize);
            let span = NROWS - NUM_STAGS as usize;
            let row = (0..span).map(|i| NUM_STAGS as usize + (start - NUM_STAGS as usize + i) % span).find(|i| !r.rows.contains_key(i)).ok_or(UTOFU_ERR_FULL)?;
            r.next_free = row + 1;
            row
        }
    };
    let access = if readonly { Access::ReadOnly } else { Access::ReadWrite };
    let key = mem::register(addr, size, access, PD).map_err(|e| match e {
        softnic_fabric::Error::NoSpace => UTOFU_ERR_FULL,
        softnic_fabric::Error::InvalidArg | softnic_fabric::Error::OutOfBounds => UTOFU_ERR_INVALID_ADDRESS,
        _ => UTOFU_ERR_NOT_AVAILABLE,
    })?;
    if softnic_fabric::env::get_bool("UTOFU_SWAP_PROTECT") {
        // Best effort, as documented (RLIMIT_MEMLOCK may refuse).
        // SAFETY: a mapped range (checked above).
        unsafe { libc::mlock(addr as *const libc::c_void, size) };
    }
    let reuse = if stag.is_some() { 0 } else { r.reuse.get(&row).copied().unwrap_or(0) };
    let check = check_of(v.id, row, reuse);
    vcq::write_row_pub(v.blk(), row, Some(Row { key: key.to_u64(), base: addr as u64, len: size as u64, readonly, check }));
    r.rows.insert(row, RowInfo { key, base: addr, len: size, readonly, refs: 1 });
    if stag.is_none() {
        r.by_range.insert((addr, size, readonly), row);
    }
    Ok(make(v.id, v.addr.cmp, row, reuse))
}

fn deregister(h: usize, stadd: u64, flags: u64) -> UResult<()> {
    let v = vcq::get(h)?;
    if flags != 0 {
        return Err(UTOFU_ERR_INVALID_FLAGS);
    }
    let (row, off, check, cmp) = split(stadd);
    if off != 0 || cmp != v.addr.cmp {
        return Err(UTOFU_ERR_INVALID_STADD);
    }
    let mut r = lock(&v.regs);
    let reuse = if row < NUM_STAGS as usize { 0 } else { r.reuse.get(&row).copied().unwrap_or(0) };
    if !r.rows.contains_key(&row) || check_of(v.id, row, reuse) != check {
        return Err(UTOFU_ERR_INVALID_STADD);
    }
    let ri = r.rows.get_mut(&row).expect("checked");
    ri.refs -= 1;
    if ri.refs > 0 {
        return Ok(());
    }
    let ri = r.rows.remove(&row).expect("checked");
    r.by_range.retain(|_, &mut x| x != row);
    if row >= NUM_STAGS as usize {
        *r.reuse.entry(row).or_insert(0) += 1;
    }
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
        let a = VcqAddr::decode(vcq_id).ok_or(UTOFU_ERR_INVALID_VCQ_ID)?;
        if stag >= NUM_STAGS {
            return Err(UTOFU_ERR_INVALID_STAG);
        }
        out(stadd, make(vcq_id, a.cmp, stag as usize, 0))
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
    fn stadd_fields_round_trip() {
        let id = crate::topo::VcqAddr { coords: [1, 2, 3, 1, 2, 1], tni: 2, cq: 3, cmp: 5, path: [0; 3] }.id();
        let s = make(id, 5, 4000, 7);
        assert_eq!(split(s + 12345), (4000, 12345, check_of(id, 4000, 7), 5));
        // Paths do not change a VCQ's STADDs.
        let other_path = crate::topo::VcqAddr::decode(id).unwrap().with_path(&[0, 0, 0]);
        assert_eq!(make(other_path, 5, 10, 0), make(id, 5, 10, 0));
        // Reuse and another VCQ change the check.
        assert_ne!(check_of(id, 4000, 7), check_of(id, 4000, 8));
        let id2 = crate::topo::VcqAddr { coords: [1, 2, 3, 1, 2, 1], tni: 2, cq: 4, cmp: 5, path: [0; 3] }.id();
        assert_ne!(check_of(id, 10, 0), check_of(id2, 10, 0));
    }
}
