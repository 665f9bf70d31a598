//! The exported name tables `gni_err_str[]` and `gni_statistic_str[]`.
//!
//! The header declares both as `extern const char *name[]` without a size,
//! so programs index them with a `gni_return_t` / `gni_statistic_t` value.
//! The vendor's strings are not public; ours are the enumerator names
//! ("GNI_RC_INVALID_PARAM", ...), which is what a reader of an error message
//! can look up.

use crate::types::*;
use libc::c_char;
use std::ffi::CStr;

/// An array of C string pointers that can live in a `static`: raw pointers
/// are not `Sync`, but these point at immutable literals.  `transparent`
/// keeps the exported symbol exactly a C `const char *[N]`.
#[repr(transparent)]
pub struct CStrTable<const N: usize>(pub [*const c_char; N]);

// SAFETY: the pointers are never written and point at 'static literals.
unsafe impl<const N: usize> Sync for CStrTable<N> {}

impl<const N: usize> CStrTable<N> {
    /// Entry `i` as a Rust string, if `i` is in range.
    pub fn get(&self, i: usize) -> Option<&'static str> {
        let p = *self.0.get(i)?;
        // SAFETY: every entry is a NUL-terminated ASCII 'static literal.
        unsafe { CStr::from_ptr(p) }.to_str().ok()
    }
}

/// Names of the return codes, indexed by `gni_return_t`.
#[no_mangle]
pub static gni_err_str: CStrTable<GNI_RC_COUNT> = CStrTable([
    c"GNI_RC_SUCCESS".as_ptr(),
    c"GNI_RC_NOT_DONE".as_ptr(),
    c"GNI_RC_INVALID_PARAM".as_ptr(),
    c"GNI_RC_ERROR_RESOURCE".as_ptr(),
    c"GNI_RC_TIMEOUT".as_ptr(),
    c"GNI_RC_PERMISSION_ERROR".as_ptr(),
    c"GNI_RC_DESCRIPTOR_ERROR".as_ptr(),
    c"GNI_RC_ALIGNMENT_ERROR".as_ptr(),
    c"GNI_RC_INVALID_STATE".as_ptr(),
    c"GNI_RC_NO_MATCH".as_ptr(),
    c"GNI_RC_SIZE_ERROR".as_ptr(),
    c"GNI_RC_TRANSACTION_ERROR".as_ptr(),
    c"GNI_RC_ILLEGAL_OP".as_ptr(),
    c"GNI_RC_ERROR_NOMEM".as_ptr(),
]);

/// Names of the NIC statistics, indexed by `gni_statistic_t`.  Sized for
/// the Aries form of the enum (a superset whose first 7 values are the
/// default form's), so a program built against either form can index it.
#[no_mangle]
pub static gni_statistic_str: CStrTable<{ GNI_NUM_STATS_ARIES as usize }> = CStrTable([
    c"GNI_STAT_SMSG_BUFF_CREDITS_STALL".as_ptr(),
    c"GNI_STAT_SMSG_DLA_STALL".as_ptr(),
    c"GNI_STAT_SMSG_MBOX_CREDITS_STALL".as_ptr(),
    c"GNI_STAT_SMSG_REQ_STALL".as_ptr(),
    c"GNI_STAT_SMSG_RETRANS_COUNT".as_ptr(),
    c"GNI_STAT_SMSG_RETRANS_DLA_COUNT".as_ptr(),
    c"GNI_STAT_SMSG_RETRANS_STALL".as_ptr(),
    c"GNI_STAT_DLA_ALLOC_STATUS_STALL".as_ptr(),
    c"GNI_STAT_DLA_ALLOC_STATUS_TIMEOUT".as_ptr(),
    c"GNI_STAT_DLA_BLOCK_ORPHANED".as_ptr(),
    c"GNI_STAT_DLA_BLOCK_RETRANS_COUNT".as_ptr(),
    c"GNI_STAT_DLA_FREE_BLOCKS_STALL".as_ptr(),
    c"GNI_STAT_DLA_FREE_FMAD_BLOCKS_STALL".as_ptr(),
    c"GNI_STAT_DLA_HIGH_RETRANS_COUNT".as_ptr(),
    c"GNI_STAT_DLA_OVERFLOW_RESEND".as_ptr(),
    c"GNI_STAT_DLA_RETRANS_COUNT".as_ptr(),
    c"GNI_STAT_DLA_TOTAL_RETRANS_COUNT".as_ptr(),
    c"GNI_STAT_FLBTE_TXD_CORRUPT".as_ptr(),
    c"GNI_STAT_FLBTE_TXD_NONE".as_ptr(),
]);

/// Name of a return code for log messages ("GNI_RC_?" when out of range).
pub fn rc_name(rc: gni_return_t) -> &'static str {
    gni_err_str.get(rc as usize).unwrap_or("GNI_RC_?")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_enum_order() {
        assert_eq!(rc_name(GNI_RC_SUCCESS), "GNI_RC_SUCCESS");
        assert_eq!(rc_name(GNI_RC_INVALID_PARAM), "GNI_RC_INVALID_PARAM");
        assert_eq!(rc_name(GNI_RC_ERROR_NOMEM), "GNI_RC_ERROR_NOMEM");
        assert_eq!(rc_name(GNI_RC_ERROR_NOMEM + 1), "GNI_RC_?");
        assert_eq!(
            gni_statistic_str.get(GNI_STAT_SMSG_RETRANS_STALL as usize),
            Some("GNI_STAT_SMSG_RETRANS_STALL")
        );
        assert_eq!(
            gni_statistic_str.get(GNI_STAT_FLBTE_TXD_NONE as usize),
            Some("GNI_STAT_FLBTE_TXD_NONE")
        );
    }
}
