//! Nodes, coordinates and the id encodings (VCQ ids, VBG ids, path ids).  All pure
//! functions: ids are built and decoded without communication, as the guide requires.
//!
//! Fujitsu's layouts (programs build and decode ids themselves, see utofu.h):
//! ```text
//! VCQ id: 0-5 CQ  6-23 zero  24-26 component  27 set when a component is named
//!         28 path A  29-30 path B  31 path C
//!         32-39 X  40-47 Y  48-55 Z  56 A  57-58 B  59 C  60 zero  61-63 TNI
//! VBG id: 0-5 BG  6-31 zero  32-63 as in a VCQ id
//! ```
//! (coordinates (1,2,3,1,2,1), TNI 1, CQ 6, component 7, the node's own path:
//! 0x2d030201df000006.)

use crate::types::*;

const COORD_SHIFT: u32 = 32;
const TNI_SHIFT: u32 = 61;
const CMP_SHIFT: u32 = 24;
const CMP_NAMED: u64 = 1 << 27;
const PATH_SHIFT_ID: u32 = 28;
const PATH_BITS: u64 = 0xf << PATH_SHIFT_ID;
/// Bits no valid id sets.
const VCQ_RESERVED: u64 = 0x00ff_ffc0 | 1 << 60;
const VBG_RESERVED: u64 = 0xffff_ffc0 | 1 << 60;

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

/// A, B, C as Tofu ids pack them: A in bit 0, B in bits 1-2, C in bit 3.
fn abc_bits(a: u8, b: u8, c: u8) -> u64 {
    a as u64 | (b as u64) << 1 | (c as u64) << 3
}

fn abc_from(v: u64) -> [u8; 3] {
    [(v & 1) as u8, ((v >> 1) & 3) as u8, ((v >> 3) & 1) as u8]
}

/// Coordinates and TNI: the fields VCQ and VBG ids share.
fn place_bits(c: &[u8; 6], tni: u16) -> u64 {
    let xyz = c[0] as u64 | (c[1] as u64) << 8 | (c[2] as u64) << 16;
    (xyz | abc_bits(c[3], c[4], c[5]) << 24) << COORD_SHIFT | (tni as u64) << TNI_SHIFT
}

fn coords_from(id: u64) -> [u8; 6] {
    let abc = abc_from(id >> 56);
    [(id >> 32) as u8, (id >> 40) as u8, (id >> 48) as u8, abc[0], abc[1], abc[2]]
}

fn path_bits(p: &[u8; 3]) -> u64 {
    abc_bits(p[0], p[1], p[2]) << PATH_SHIFT_ID
}

/// Fields of a VCQ id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VcqAddr {
    pub coords: [u8; 6],
    pub tni: u16,
    pub cq: u16,
    /// The component, or None when the id names none (bits 24-27 clear, as in ids a
    /// program builds from coordinates, TNI and CQ alone): then it means the CQ's VCQ.
    pub cmp: Option<u16>,
    pub path: [u8; 3],
}

impl VcqAddr {
    /// The id with the node's own A, B, C as its path (what `query_vcq_id` gives).
    pub fn id(&self) -> u64 {
        let c = &self.coords;
        self.with_path(&[c[3], c[4], c[5]])
    }

    pub fn with_path(&self, p: &[u8; 3]) -> u64 {
        let cmp = self.cmp.map_or(0, |c| CMP_NAMED | (c as u64) << CMP_SHIFT);
        place_bits(&self.coords, self.tni) | self.cq as u64 | cmp | path_bits(p)
    }

    /// Decodes `id`, or None when it is not a well-formed VCQ id.
    pub fn decode(id: u64) -> Option<VcqAddr> {
        if id & VCQ_RESERVED != 0 {
            return None;
        }
        let field = (id >> CMP_SHIFT) & 0xf;
        let a = VcqAddr {
            coords: coords_from(id),
            tni: (id >> TNI_SHIFT) as u16,
            cq: (id & 0x3f) as u16,
            cmp: (field != 0).then_some((field & 7) as u16),
            path: abc_from(id >> PATH_SHIFT_ID),
        };
        (coords_valid(&a.coords) && path_valid(&a.path) && a.tni < NUM_TNIS && a.cq < CQS_PER_TNI).then_some(a)
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
        place_bits(&self.coords, self.tni) | self.bg as u64
    }

    pub fn decode(id: u64) -> Option<VbgAddr> {
        if id & VBG_RESERVED != 0 {
            return None;
        }
        let a = VbgAddr { coords: coords_from(id), tni: (id >> TNI_SHIFT) as u16, bg: (id & 0x3f) as u16 };
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
        out(vcq_id, VcqAddr { coords: c, tni: tni_id, cq: cq_id, cmp: Some(cmp_id), path: [0; 3] }.id())
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
    let r = VcqAddr::decode(vcq_id).ok_or(UTOFU_ERR_INVALID_VCQ_ID).and_then(|a| write_info(coords, &a.coords, tni_id, a.tni, cq_id, a.cq, extra_val, a.cmp.unwrap_or(0)));
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

fn tni_list(list: &[u16], ids: *mut *mut u16, num: *mut usize) -> UResult<()> {
    if ids.is_null() || num.is_null() {
        return Err(UTOFU_ERR_INVALID_POINTER);
    }
    if list.is_empty() {
        out(ids, std::ptr::null_mut())?;
        return out(num, 0);
    }
    // libc malloc, so the caller's free() releases it.
    // SAFETY: plain allocation.
    let p = unsafe { libc::malloc(list.len() * 2) } as *mut u16;
    if p.is_null() {
        return Err(UTOFU_ERR_OUT_OF_MEMORY);
    }
    // SAFETY: the fresh allocation holds list.len() ids.
    unsafe { std::ptr::copy_nonoverlapping(list.as_ptr(), p, list.len()) };
    out(ids, p)?;
    out(num, list.len())
}

#[no_mangle]
pub unsafe extern "C" fn utofu_get_onesided_tnis(ids: *mut *mut u16, num: *mut usize) -> i32 {
    done("utofu_get_onesided_tnis", tni_list(&crate::share::get().onesided_tnis, ids, num))
}

#[no_mangle]
pub unsafe extern "C" fn utofu_get_barrier_tnis(ids: *mut *mut u16, num: *mut usize) -> i32 {
    done("utofu_get_barrier_tnis", tni_list(&crate::share::get().barrier_tnis, ids, num))
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
    fn fujitsus_layout() {
        let a = VcqAddr { coords: [1, 2, 3, 1, 2, 1], tni: 1, cq: 6, cmp: Some(7), path: [1, 2, 1] };
        assert_eq!(a.id(), 0x2d03_0201_df00_0006);
        assert_eq!(VcqAddr::decode(0x2d03_0201_df00_0006), Some(a));
        // Built by a program from coordinates, TNI and CQ alone: no component, path (0,0,0).
        let bare = VcqAddr::decode(0x2d03_0201_0000_0006).unwrap();
        assert_eq!((bare.cmp, bare.path, bare.cq, bare.tni, bare.coords), (None, [0, 0, 0], 6, 1, [1, 2, 3, 1, 2, 1]));
        assert_eq!(VbgAddr { coords: [1, 2, 3, 1, 2, 1], tni: 1, bg: 17 }.id(), 0x2d03_0201_0000_0011);
        // Reserved bits, TNI 6-7, CQ 12+, BG 48+, B = 3 are not ids.
        for bad in [a.id() | 1 << 6, a.id() | 1 << 23, a.id() | 1 << 60, a.id() | 6 << 61, a.id() & !0x3f | 12, a.id() | 3 << 57] {
            assert!(VcqAddr::decode(bad).is_none(), "{bad:#x}");
        }
        let g = VbgAddr { coords: [1, 2, 3, 1, 2, 1], tni: 1, bg: 17 }.id();
        for bad in [g | 1 << 6, g | 1 << 27, g | 1 << 31, g | 1 << 60, g & !0x3f | 48, UTOFU_VBG_ID_NULL] {
            assert!(VbgAddr::decode(bad).is_none(), "{bad:#x}");
        }
    }

    #[test]
    fn ids_round_trip_and_paths() {
        for n in [0u32, 1, 5, 11, 12, 300, 4000] {
            let c = coords_of(n);
            assert!(coords_valid(&c));
            let a = VcqAddr { coords: c, tni: 5, cq: 11, cmp: Some(0), path: [c[3], c[4], c[5]] };
            let id = a.id();
            assert_eq!(VcqAddr::decode(id), Some(a));
            let other = a.with_path(&[(c[3] + 1) % 2, c[4], c[5]]);
            assert_ne!(other, id);
            assert_eq!(canonical(other), id);
            let v = VbgAddr { coords: c, tni: 3, bg: 47 };
            assert_eq!(VbgAddr::decode(v.id()), Some(v));
            // Fujitsu's layouts overlap: a VBG id of a low BG reads as a bare VCQ id.
            assert!(VcqAddr::decode(v.id()).is_none());
            assert_eq!(VcqAddr::decode(VbgAddr { bg: 5, ..v }.id()).map(|x| (x.cq, x.cmp)), Some((5, None)));
            assert!(VbgAddr::decode(id).is_none());
        }
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
