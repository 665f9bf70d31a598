//! Nodes, coordinates and the id encodings (VCQ ids, VBG ids, path ids).  All pure
//! functions: ids are built and decoded without communication, as the guide requires.
//!
//! ```text
//! VCQ id: 0-7 X  8-15 Y  16-23 Z  24 A  25-26 B  27 C  28-31 TNI  32-37 CQ
//!         38-40 component  41 path A  42-43 path B  44 path C  48-63 VCQ_TAG
//! VBG id: the same coordinate and TNI fields, 32-37 BG, 48-63 VBG_TAG
//! ```

use crate::types::*;

pub const VCQ_TAG: u64 = 0x70f5;
pub const VBG_TAG: u64 = 0x70b6;
const TAG_SHIFT: u32 = 48;
const PATH_BITS: u64 = 0xf << 41;

/// Sizes of the A, B, C axes (fixed by the Tofu-D topology).
pub use tofutop::ABC;

/// This process's node and the coordinates of a node: jTofu's topology (libtofutop).
pub use tofutop::{coords_of, node_at, node_index};

pub fn my_coords() -> [u8; 6] {
    coords_of(node_index())
}

pub fn coords_valid(c: &[u8; 6]) -> bool {
    c[3] < ABC[0] && c[4] < ABC[1] && c[5] < ABC[2]
}

pub fn path_valid(p: &[u8; 3]) -> bool {
    p[0] < ABC[0] && p[1] < ABC[1] && p[2] < ABC[2]
}

fn coord_bits(c: &[u8; 6]) -> u64 {
    c[0] as u64 | (c[1] as u64) << 8 | (c[2] as u64) << 16 | (c[3] as u64) << 24 | (c[4] as u64) << 25 | (c[5] as u64) << 27
}

fn coords_from(id: u64) -> [u8; 6] {
    [id as u8, (id >> 8) as u8, (id >> 16) as u8, ((id >> 24) & 1) as u8, ((id >> 25) & 3) as u8, ((id >> 27) & 1) as u8]
}

fn path_bits(p: &[u8; 3]) -> u64 {
    (p[0] as u64) << 41 | (p[1] as u64) << 42 | (p[2] as u64) << 44
}

/// Fields of a VCQ id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VcqAddr {
    pub coords: [u8; 6],
    pub tni: u16,
    pub cq: u16,
    pub cmp: u16,
    pub path: [u8; 3],
}

impl VcqAddr {
    /// The id with the node's own A, B, C as its path (what `query_vcq_id` gives).
    pub fn id(&self) -> u64 {
        let c = &self.coords;
        self.with_path(&[c[3], c[4], c[5]])
    }

    pub fn with_path(&self, p: &[u8; 3]) -> u64 {
        coord_bits(&self.coords) | (self.tni as u64) << 28 | (self.cq as u64) << 32 | (self.cmp as u64) << 38 | path_bits(p) | VCQ_TAG << TAG_SHIFT
    }

    /// Decodes `id`, or None when it is not a VCQ id of ours.
    pub fn decode(id: u64) -> Option<VcqAddr> {
        if id >> TAG_SHIFT != VCQ_TAG || id & (0x7 << 45) != 0 {
            return None;
        }
        let a = VcqAddr {
            coords: coords_from(id),
            tni: ((id >> 28) & 0xf) as u16,
            cq: ((id >> 32) & 0x3f) as u16,
            cmp: ((id >> 38) & 0x7) as u16,
            path: [((id >> 41) & 1) as u8, ((id >> 42) & 3) as u8, ((id >> 44) & 1) as u8],
        };
        (coords_valid(&a.coords) && path_valid(&a.path) && a.tni < NUM_TNIS && a.cq < CQS_PER_TNI && a.cmp < CMPS_PER_CQ).then_some(a)
    }
}

/// The id with its path bits replaced by the target node's own A, B, C: the identity
/// of a VCQ, whatever path an initiator embedded.
pub fn canonical(id: u64) -> u64 {
    let c = coords_from(id);
    (id & !PATH_BITS) | path_bits(&[c[3], c[4], c[5]])
}

/// Fields of a VBG id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VbgAddr {
    pub coords: [u8; 6],
    pub tni: u16,
    pub bg: u16,
}

impl VbgAddr {
    pub fn id(&self) -> u64 {
        coord_bits(&self.coords) | (self.tni as u64) << 28 | (self.bg as u64) << 32 | VBG_TAG << TAG_SHIFT
    }

    pub fn decode(id: u64) -> Option<VbgAddr> {
        if id >> TAG_SHIFT != VBG_TAG || id & (0x3ff << 38) != 0 {
            return None;
        }
        let a = VbgAddr { coords: coords_from(id), tni: ((id >> 28) & 0xf) as u16, bg: ((id >> 32) & 0x3f) as u16 };
        (coords_valid(&a.coords) && a.tni < NUM_TNIS && a.bg < BGS_PER_TNI).then_some(a)
    }
}

/// Path ids are 1 + A*6 + B*2 + C, so 0 in the flag field means "no path flag".
pub fn path_id(p: &[u8; 3]) -> u8 {
    1 + p[0] * 6 + p[1] * 2 + p[2]
}

pub fn path_of_id(id: u8) -> Option<[u8; 3]> {
    if id == 0 || id > 12 {
        return None;
    }
    let v = id - 1;
    Some([v / 6, (v % 6) / 2, v % 2])
}

/// Reads `n` bytes from a C array argument.
///
/// # Safety
/// `p` non-NULL and valid for `N` bytes.
pub unsafe fn read_arr<const N: usize>(p: *const u8) -> [u8; N] {
    let mut a = [0u8; N];
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(p, a.as_mut_ptr(), N) };
    a
}

// ---- exported -----------------------------------------------------------------------

use crate::status::{done, out, ret, UResult};

#[no_mangle]
pub unsafe extern "C" fn utofu_query_my_coords(coords: *mut u8) -> i32 {
    if coords.is_null() {
        return ret("utofu_query_my_coords", UTOFU_ERR_INVALID_POINTER);
    }
    // SAFETY: the guide's contract: an array of at least 6 bytes.
    unsafe { std::ptr::copy_nonoverlapping(my_coords().as_ptr(), coords, 6) };
    UTOFU_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn utofu_construct_vcq_id(coords: *mut u8, tni_id: u16, cq_id: u16, cmp_id: u16, vcq_id: *mut u64) -> i32 {
    let r = (|| -> UResult<()> {
        if coords.is_null() || vcq_id.is_null() {
            return Err(UTOFU_ERR_INVALID_POINTER);
        }
        // SAFETY: non-NULL, 6 coordinates by contract.
        let c: [u8; 6] = unsafe { read_arr(coords) };
        if !coords_valid(&c) {
            return Err(UTOFU_ERR_INVALID_COORDS);
        }
        if tni_id >= NUM_TNIS {
            return Err(UTOFU_ERR_INVALID_TNI_ID);
        }
        if cq_id >= CQS_PER_TNI {
            return Err(UTOFU_ERR_INVALID_CQ_ID);
        }
        if cmp_id >= CMPS_PER_CQ {
            return Err(UTOFU_ERR_INVALID_CMP_ID);
        }
        out(vcq_id, VcqAddr { coords: c, tni: tni_id, cq: cq_id, cmp: cmp_id, path: [0; 3] }.id())
    })();
    done("utofu_construct_vcq_id", r)
}

/// Path coordinates given by the caller, or NULL for the target node's own A, B, C
/// (what "choose a suitable path" means here).
fn path_arg(a: &VcqAddr, path_coords: *mut u8) -> UResult<[u8; 3]> {
    if path_coords.is_null() {
        return Ok([a.coords[3], a.coords[4], a.coords[5]]);
    }
    // SAFETY: 3 path coordinates by contract.
    let p: [u8; 3] = unsafe { read_arr(path_coords) };
    if !path_valid(&p) {
        return Err(UTOFU_ERR_INVALID_PATH);
    }
    Ok(p)
}

#[no_mangle]
pub unsafe extern "C" fn utofu_set_vcq_id_path(vcq_id: *mut u64, path_coords: *mut u8) -> i32 {
    let r = (|| -> UResult<()> {
        if vcq_id.is_null() {
            return Err(UTOFU_ERR_INVALID_POINTER);
        }
        // SAFETY: non-NULL.
        let id = unsafe { vcq_id.read_unaligned() };
        let a = VcqAddr::decode(id).ok_or(UTOFU_ERR_INVALID_VCQ_ID)?;
        out(vcq_id, a.with_path(&path_arg(&a, path_coords)?))
    })();
    done("utofu_set_vcq_id_path", r)
}

/// Writes the decoded fields of a VCQ or VBG id (`extra` only when asked for).
#[allow(clippy::too_many_arguments)]
fn write_info(coords: *mut u8, c: &[u8; 6], tni_out: *mut u16, tni: u16, idx_out: *mut u16, idx: u16, extra_out: *mut u16, extra: u16) -> UResult<()> {
    if coords.is_null() || tni_out.is_null() || idx_out.is_null() {
        return Err(UTOFU_ERR_INVALID_POINTER);
    }
    // SAFETY: at least 6 bytes by contract.
    unsafe { std::ptr::copy_nonoverlapping(c.as_ptr(), coords, 6) };
    out(tni_out, tni)?;
    out(idx_out, idx)?;
    if !extra_out.is_null() {
        out(extra_out, extra)?;
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn utofu_query_vcq_info(vcq_id: u64, coords: *mut u8, tni_id: *mut u16, cq_id: *mut u16, extra_val: *mut u16) -> i32 {
    let r = VcqAddr::decode(vcq_id).ok_or(UTOFU_ERR_INVALID_VCQ_ID).and_then(|a| write_info(coords, &a.coords, tni_id, a.tni, cq_id, a.cq, extra_val, a.cmp));
    done("utofu_query_vcq_info", r)
}

#[no_mangle]
pub unsafe extern "C" fn utofu_query_vbg_info(vbg_id: u64, coords: *mut u8, tni_id: *mut u16, bg_id: *mut u16, extra_val: *mut u16) -> i32 {
    let r = VbgAddr::decode(vbg_id).ok_or(UTOFU_ERR_INVALID_VBG_ID).and_then(|a| write_info(coords, &a.coords, tni_id, a.tni, bg_id, a.bg, extra_val, 0));
    done("utofu_query_vbg_info", r)
}

#[no_mangle]
pub unsafe extern "C" fn utofu_get_path_id(vcq_id: u64, path_coords: *mut u8, path_id_out: *mut u8) -> i32 {
    let r = (|| -> UResult<()> {
        let a = VcqAddr::decode(vcq_id).ok_or(UTOFU_ERR_INVALID_VCQ_ID)?;
        if path_id_out.is_null() {
            return Err(UTOFU_ERR_INVALID_POINTER);
        }
        out(path_id_out, path_id(&path_arg(&a, path_coords)?))
    })();
    done("utofu_get_path_id", r)
}

#[no_mangle]
pub unsafe extern "C" fn utofu_get_path_coords(vcq_id: u64, path_id_in: u8, path_coords: *mut u8) -> i32 {
    let r = (|| -> UResult<()> {
        VcqAddr::decode(vcq_id).ok_or(UTOFU_ERR_INVALID_VCQ_ID)?;
        let p = path_of_id(path_id_in).ok_or(UTOFU_ERR_INVALID_PATH_ID)?;
        if path_coords.is_null() {
            return Err(UTOFU_ERR_INVALID_POINTER);
        }
        // SAFETY: at least 3 bytes by contract.
        unsafe { std::ptr::copy_nonoverlapping(p.as_ptr(), path_coords, 3) };
        Ok(())
    })();
    done("utofu_get_path_coords", r)
}

#[no_mangle]
pub unsafe extern "C" fn utofu_query_tofu_version(major: *mut i32, minor: *mut i32) {
    let _ = out(major, 3);
    let _ = out(minor, 0);
}

#[no_mangle]
pub unsafe extern "C" fn utofu_query_utofu_version(major: *mut i32, minor: *mut i32) {
    let _ = out(major, 1);
    let _ = out(minor, 0);
}

fn tni_list(ids: *mut *mut u16, num: *mut usize) -> UResult<()> {
    if ids.is_null() || num.is_null() {
        return Err(UTOFU_ERR_INVALID_POINTER);
    }
    // libc malloc, so the caller's free() releases it.
    // SAFETY: plain allocation.
    let p = unsafe { libc::malloc(NUM_TNIS as usize * 2) } as *mut u16;
    if p.is_null() {
        return Err(UTOFU_ERR_OUT_OF_MEMORY);
    }
    for t in 0..NUM_TNIS {
        // SAFETY: inside the fresh allocation.
        unsafe { p.add(t as usize).write(t) };
    }
    out(ids, p)?;
    out(num, NUM_TNIS as usize)
}

#[no_mangle]
pub unsafe extern "C" fn utofu_get_onesided_tnis(ids: *mut *mut u16, num: *mut usize) -> i32 {
    done("utofu_get_onesided_tnis", tni_list(ids, num))
}

#[no_mangle]
pub unsafe extern "C" fn utofu_get_barrier_tnis(ids: *mut *mut u16, num: *mut usize) -> i32 {
    done("utofu_get_barrier_tnis", tni_list(ids, num))
}

static ONESIDED_CAPS: utofu_onesided_caps = utofu_onesided_caps {
    flags: UTOFU_ONESIDED_CAP_FLAG_ARMW,
    armw_ops: UTOFU_ONESIDED_CAP_ARMW_ALL,
    num_cmp_ids: CMPS_PER_CQ as u32,
    num_reserved_stags: NUM_STAGS,
    cache_line_size: 256,
    stag_address_alignment: STAG_ALIGN,
    max_toq_desc_size: MAX_TOQ_DESC,
    max_putget_size: MAX_PUTGET,
    max_piggyback_size: MAX_PIGGYBACK,
    max_edata_size: 1,
    max_mtu: MAX_MTU,
    max_gap: MAX_GAP,
};

static BARRIER_CAPS: utofu_barrier_caps = utofu_barrier_caps { flags: 0, reduce_ops: UTOFU_BARRIER_CAP_REDUCE_ALL, max_uint64_reduction: MAX_U64_REDUCTION, max_double_reduction: MAX_DOUBLE_REDUCTION };

#[no_mangle]
pub unsafe extern "C" fn utofu_query_onesided_caps(tni_id: u16, caps: *mut *const utofu_onesided_caps) -> i32 {
    let r = if tni_id >= NUM_TNIS { Err(UTOFU_ERR_INVALID_TNI_ID) } else { out(caps, &ONESIDED_CAPS as *const _) };
    done("utofu_query_onesided_caps", r)
}

#[no_mangle]
pub unsafe extern "C" fn utofu_query_barrier_caps(tni_id: u16, caps: *mut *const utofu_barrier_caps) -> i32 {
    let r = if tni_id >= NUM_TNIS { Err(UTOFU_ERR_INVALID_TNI_ID) } else { out(caps, &BARRIER_CAPS as *const _) };
    done("utofu_query_barrier_caps", r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_paths() {
        for n in [0u32, 1, 5, 11, 12, 300, 4000] {
            let c = coords_of(n);
            assert!(coords_valid(&c));
            let a = VcqAddr { coords: c, tni: 5, cq: 8, cmp: 7, path: [c[3], c[4], c[5]] };
            let id = a.id();
            assert_eq!(VcqAddr::decode(id), Some(a));
            let other = a.with_path(&[(c[3] + 1) % 2, c[4], c[5]]);
            assert_ne!(other, id);
            assert_eq!(canonical(other), id);
            let v = VbgAddr { coords: c, tni: 3, bg: 47 };
            assert_eq!(VbgAddr::decode(v.id()), Some(v));
            assert!(VcqAddr::decode(v.id()).is_none());
            assert!(VbgAddr::decode(id).is_none());
        }
        assert!(VbgAddr::decode(UTOFU_VBG_ID_NULL).is_none());
        for id in 1..=12u8 {
            assert_eq!(path_id(&path_of_id(id).unwrap()), id);
        }
        assert!(path_of_id(0).is_none() && path_of_id(13).is_none());
        // Distinct nodes, distinct coordinates.
        let mut seen = std::collections::HashSet::new();
        for n in 0..2000 {
            assert!(seen.insert(coords_of(n)));
        }
    }
}
