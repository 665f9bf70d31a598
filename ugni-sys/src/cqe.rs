//! Our bit layout of `gni_cq_entry_t`, and the exported `gni_cq_get_*`/`gni_cq_set_*`
//! accessors that decode it (the header's `GNI_CQ_*` macros call these functions, so the
//! layout is ours to choose; see ../shared/abi/gni.md, "CQ entry accessors").
//!
//! ```text
//!  63   62..59   58..56   55..54   53..32            31..0
//! +----+--------+--------+--------+-----------------+---------------------------+
//! | OV | status | source |  type  | aux (22 bits)   | data (32 bits)            |
//! +----+--------+--------+--------+-----------------+---------------------------+
//! ```
//! - OV: the CQ overran before this entry was taken (events were lost).
//! - status: 0 = success; otherwise a [`Status`] explaining a transaction error.
//! - source: who produced the entry ([`SRC_LOCAL`], [`SRC_REMOTE`], [`SRC_CQWRITE`]).
//! - type: `GNI_CQ_EVENT_TYPE_*` (POST 0, SMSG 1, DMAPP 2, MSGQ 3).
//! - data / aux, by kind of entry:
//!   - POST at the initiator (source LOCAL): data = event data (the EP's local_event for
//!     LOCAL events, remote_event for GLOBAL ones; by default the bound peer's inst_id or
//!     our own inst_id respectively); aux = the descriptor token `GNI_GetCompleted` uses.
//!   - POST at the target (source REMOTE): data = the initiator's remote_event data (by
//!     default its CDM inst_id); aux = 0.
//!   - CQ write (source CQWRITE): bits 47..0 = the 48 software bits of `cqwrite_value`.
//!   - SMSG at the sender (source LOCAL): data = msg_id; aux = the EP's local_event data,
//!     truncated to 22 bits (documented: `GNI_CQ_GET_INST_ID` of a local SMSG event holds
//!     the low 22 bits of the peer's inst_id).
//!   - SMSG at the receiver (source REMOTE): data = the sender's remote_event data.
//!   - MSGQ at the sender (source LOCAL, type MSGQ; crate::msgq): laid out like a local
//!     SMSG event (data = msg_id, aux = the EP's local_event data).
//!   - A collective engine's completion (source CE, type POST; crate::ce): data = the
//!     CE id (`GNI_CQ_GET_CE_ID`), status [`Status::CeFailed`] when the round failed.
//!
//! `GNI_CQ_GET_INST_ID` therefore reads `data`, except for local SMSG events where it reads
//! `aux`; `GNI_CQ_GET_MSG_ID` reads `data` of SMSG/MSGQ entries and `aux` of POST entries.

use libc::c_uint;

pub type CqEntry = u64;

const OV_SHIFT: u32 = 63;
const STATUS_SHIFT: u32 = 59;
const STATUS_MASK: u64 = 0xf;
const SOURCE_SHIFT: u32 = 56;
const SOURCE_MASK: u64 = 0x7;
const TYPE_SHIFT: u32 = 54;
const TYPE_MASK: u64 = 0x3;
const AUX_SHIFT: u32 = 32;
pub const AUX_MASK: u64 = (1 << 22) - 1;
const DATA_MASK: u64 = 0xffff_ffff;
const CQWRITE_MASK: u64 = (1 << 48) - 1;

/// The entry was produced at the initiator for its own operation.
pub const SRC_LOCAL: u64 = 1;
/// The entry was produced at the target by someone else's operation.
pub const SRC_REMOTE: u64 = 5;
/// A `GNI_PostCqWrite` from a peer.
pub const SRC_CQWRITE: u64 = 6;
/// A collective engine (VCE) finished a reduction (GNI_CE_MODE_CQE_ONCOMP / _ONERR).
pub const SRC_CE: u64 = 2;

pub const TYPE_POST: u64 = 0;
pub const TYPE_SMSG: u64 = 1;
pub const TYPE_DMAPP: u64 = 2;
pub const TYPE_MSGQ: u64 = 3;

/// Why a transaction failed (the CQE status field).  Order is part of the layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    Ok = 0,
    /// The remote address range is outside the registered region.
    OutOfBounds = 1,
    /// A write or atomic to a region registered read-only.
    ReadOnly = 2,
    /// The memory handle does not name a live registration (deregistered or forged).
    BadHandle = 3,
    /// The registration belongs to another protection domain (ptag/cookie).
    Protection = 4,
    /// The target process has exited.
    PeerDead = 5,
    /// The target could not be resolved (no such instance in this domain).
    NoTarget = 6,
    /// The operation is not possible on that memory (e.g. atomics on fallback memory).
    Unsupported = 7,
    /// A collective engine's reduction failed (contributions disagreed).
    CeFailed = 8,
    /// The network lost the transaction (a fault injected by SOFTNIC_FAULTS=transfer):
    /// nothing reached the target; a retry can succeed.
    Network = 9,
}

impl Status {
    pub fn from_bits(b: u64) -> Option<Status> {
        Some(match b {
            0 => Status::Ok,
            1 => Status::OutOfBounds,
            2 => Status::ReadOnly,
            3 => Status::BadHandle,
            4 => Status::Protection,
            5 => Status::PeerDead,
            6 => Status::NoTarget,
            7 => Status::Unsupported,
            8 => Status::CeFailed,
            9 => Status::Network,
            _ => return None,
        })
    }

    /// Text for `GNI_CqErrorStr`.
    pub fn describe(self) -> &'static str {
        match self {
            Status::Ok => "no error",
            Status::OutOfBounds => "transaction error: remote address range outside the registered memory region",
            Status::ReadOnly => "transaction error: write or atomic to memory registered GNI_MEM_READ_ONLY",
            Status::BadHandle => "transaction error: memory handle is invalid or was deregistered",
            Status::Protection => "transaction error: protection tag/cookie mismatch with the target's registration",
            Status::PeerDead => "transaction error: target process has exited",
            Status::NoTarget => "transaction error: no such remote instance in this communication domain",
            Status::Unsupported => "transaction error: operation not possible on the target memory",
            Status::CeFailed => "collective engine error: the contributions of a reduction disagreed",
            Status::Network => "transaction error: the network lost the request (nothing reached the target)",
        }
    }

    /// For `GNI_CqErrorRecoverable`: a retry can succeed only if the target may still
    /// appear (it had not attached its CDM yet) or the network lost the request.
    pub fn recoverable(self) -> bool {
        matches!(self, Status::NoTarget | Status::Network)
    }

    pub fn from_fabric(e: softnic_fabric::Error) -> Status {
        use softnic_fabric::Error as E;
        match e {
            E::OutOfBounds => Status::OutOfBounds,
            E::Permission => Status::ReadOnly,
            E::InvalidHandle | E::StaleHandle => Status::BadHandle,
            E::ProtectionDomain => Status::Protection,
            E::PeerDead => Status::PeerDead,
            E::NotFound => Status::NoTarget,
            _ => Status::Unsupported,
        }
    }
}

/// Builds an entry.  `data` keeps 32 bits, `aux` 22 bits.
pub fn make(source: u64, ty: u64, status: Status, aux: u64, data: u64) -> CqEntry {
    ((status as u64 & STATUS_MASK) << STATUS_SHIFT)
        | ((source & SOURCE_MASK) << SOURCE_SHIFT)
        | ((ty & TYPE_MASK) << TYPE_SHIFT)
        | ((aux & AUX_MASK) << AUX_SHIFT)
        | (data & DATA_MASK)
}

/// A CQ-write entry: the low 48 bits of `value`.
pub fn make_cqwrite(value: u64) -> CqEntry {
    (SRC_CQWRITE << SOURCE_SHIFT) | (TYPE_POST << TYPE_SHIFT) | (value & CQWRITE_MASK)
}

pub fn with_overrun(e: CqEntry) -> CqEntry {
    e | (1 << OV_SHIFT)
}

pub fn status(e: CqEntry) -> u64 {
    (e >> STATUS_SHIFT) & STATUS_MASK
}
pub fn source(e: CqEntry) -> u64 {
    (e >> SOURCE_SHIFT) & SOURCE_MASK
}
pub fn ty(e: CqEntry) -> u64 {
    (e >> TYPE_SHIFT) & TYPE_MASK
}
pub fn aux(e: CqEntry) -> u64 {
    (e >> AUX_SHIFT) & AUX_MASK
}
pub fn data(e: CqEntry) -> u64 {
    if source(e) == SRC_CQWRITE {
        e & CQWRITE_MASK
    } else {
        e & DATA_MASK
    }
}
pub fn overrun(e: CqEntry) -> bool {
    e >> OV_SHIFT != 0
}

fn is_local_smsg(e: CqEntry) -> bool {
    source(e) == SRC_LOCAL && (ty(e) == TYPE_SMSG || ty(e) == TYPE_MSGQ)
}

// ---- exported accessors (the header's GNI_CQ_* macros expand to these) ----------------

#[no_mangle]
pub extern "C" fn gni_cq_get_data(e: CqEntry) -> u64 {
    data(e)
}
#[no_mangle]
pub extern "C" fn gni_cq_get_source(e: CqEntry) -> u64 {
    source(e)
}
#[no_mangle]
pub extern "C" fn gni_cq_get_status(e: CqEntry) -> u64 {
    status(e)
}
/// No hardware info field is emulated: the status says everything.
#[no_mangle]
pub extern "C" fn gni_cq_get_info(_e: CqEntry) -> u64 {
    0
}
#[no_mangle]
pub extern "C" fn gni_cq_overrun(e: CqEntry) -> u64 {
    overrun(e) as u64
}
/// Remote overrun (a peer's CQ overran because of our traffic) is not reported in our
/// entries: the peer's own CQ carries its overrun.
#[no_mangle]
pub extern "C" fn gni_cq_rem_overrun(_e: CqEntry) -> u64 {
    0
}
#[no_mangle]
pub extern "C" fn gni_cq_get_inst_id(e: CqEntry) -> u64 {
    if is_local_smsg(e) {
        aux(e)
    } else {
        e & DATA_MASK
    }
}
#[no_mangle]
pub extern "C" fn gni_cq_get_rem_inst_id(e: CqEntry) -> u64 {
    e & DATA_MASK
}
/// Transaction ids are an Aries hardware detail; we report none.
#[no_mangle]
pub extern "C" fn gni_cq_get_tid(_e: CqEntry) -> u64 {
    0
}
#[no_mangle]
pub extern "C" fn gni_cq_get_msg_id(e: CqEntry) -> u64 {
    if ty(e) == TYPE_SMSG || ty(e) == TYPE_MSGQ {
        e & DATA_MASK
    } else {
        aux(e)
    }
}
#[no_mangle]
pub extern "C" fn gni_cq_get_type(e: CqEntry) -> u64 {
    ty(e)
}
#[no_mangle]
pub extern "C" fn gni_cq_get_block_id(_e: CqEntry) -> u64 {
    0
}
#[no_mangle]
pub extern "C" fn gni_cq_get_unsuccessful_cnt(_e: CqEntry) -> u64 {
    0
}
#[no_mangle]
pub extern "C" fn gni_cq_get_marker_id(_e: CqEntry) -> u64 {
    0
}
#[no_mangle]
pub extern "C" fn gni_cq_get_failed_enqueue_cnt(_e: CqEntry) -> u64 {
    0
}
/// The CE id of a collective engine's completion event (0 for other entries).
#[no_mangle]
pub extern "C" fn gni_cq_get_ce_id(e: CqEntry) -> u64 {
    if source(e) == SRC_CE {
        e & DATA_MASK
    } else {
        0
    }
}
#[no_mangle]
pub extern "C" fn gni_cq_get_reductn_id(_e: CqEntry) -> u64 {
    0
}
#[no_mangle]
pub extern "C" fn gni_cq_get_trans_type(_e: CqEntry) -> u64 {
    0
}

/// # Safety
/// `e` must be NULL or point to a writable entry.
#[no_mangle]
pub unsafe extern "C" fn gni_cq_set_inst_id(e: *mut CqEntry, v: u64) {
    // SAFETY: caller's contract; NULL is ignored.
    if let Some(e) = unsafe { e.as_mut() } {
        if is_local_smsg(*e) {
            *e = (*e & !(AUX_MASK << AUX_SHIFT)) | ((v & AUX_MASK) << AUX_SHIFT);
        } else {
            *e = (*e & !DATA_MASK) | (v & DATA_MASK);
        }
    }
}
/// # Safety
/// `e` must be NULL or point to a writable entry.
#[no_mangle]
pub unsafe extern "C" fn gni_cq_set_rem_inst_id(e: *mut CqEntry, v: u64) {
    // SAFETY: caller's contract; NULL is ignored.
    if let Some(e) = unsafe { e.as_mut() } {
        *e = (*e & !DATA_MASK) | (v & DATA_MASK);
    }
}
/// # Safety
/// `e` must be NULL or point to a writable entry.
#[no_mangle]
pub unsafe extern "C" fn gni_cq_set_tid(_e: *mut CqEntry, _v: u64) {}
/// # Safety
/// `e` must be NULL or point to a writable entry.
#[no_mangle]
pub unsafe extern "C" fn gni_cq_set_msg_id(e: *mut CqEntry, v: u64) {
    // SAFETY: caller's contract; NULL is ignored.
    if let Some(e) = unsafe { e.as_mut() } {
        if ty(*e) == TYPE_SMSG {
            *e = (*e & !DATA_MASK) | (v & DATA_MASK);
        } else {
            *e = (*e & !(AUX_MASK << AUX_SHIFT)) | ((v & AUX_MASK) << AUX_SHIFT);
        }
    }
}
/// # Safety
/// `e` must be NULL or point to a writable entry.
#[no_mangle]
pub unsafe extern "C" fn gni_cq_set_type(e: *mut CqEntry, v: u64) {
    // SAFETY: caller's contract; NULL is ignored.
    if let Some(e) = unsafe { e.as_mut() } {
        *e = (*e & !(TYPE_MASK << TYPE_SHIFT)) | ((v & TYPE_MASK) << TYPE_SHIFT);
    }
}
/// # Safety
/// `e` must be NULL or point to a writable entry.
#[no_mangle]
pub unsafe extern "C" fn gni_cq_clr_status(e: *mut CqEntry) {
    // SAFETY: caller's contract; NULL is ignored.
    if let Some(e) = unsafe { e.as_mut() } {
        *e &= !(STATUS_MASK << STATUS_SHIFT);
    }
}
#[no_mangle]
pub extern "C" fn gni_cq_status_dla_overflow(_e: CqEntry) -> c_uint {
    0
}
#[no_mangle]
pub extern "C" fn gni_cq_bte_enq_status(_e: CqEntry) -> c_uint {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_without_overlap() {
        let e = make(SRC_LOCAL, TYPE_POST, Status::ReadOnly, 0x2a_bcde, 0xdead_beef);
        assert_eq!(source(e), SRC_LOCAL);
        assert_eq!(ty(e), TYPE_POST);
        assert_eq!(status(e), Status::ReadOnly as u64);
        assert_eq!(aux(e), 0x2a_bcde & AUX_MASK);
        assert_eq!(gni_cq_get_inst_id(e), 0xdead_beef);
        assert_eq!(gni_cq_get_msg_id(e), 0x2a_bcde & AUX_MASK);
        assert!(!overrun(e));
        assert!(overrun(with_overrun(e)));
        assert_eq!(status(with_overrun(e)), Status::ReadOnly as u64);
    }

    #[test]
    fn smsg_local_entry_keeps_msg_id_and_inst_id() {
        let e = make(SRC_LOCAL, TYPE_SMSG, Status::Ok, 77, 0xffff_fff0);
        assert_eq!(gni_cq_get_msg_id(e), 0xffff_fff0);
        assert_eq!(gni_cq_get_inst_id(e), 77);
        let r = make(SRC_REMOTE, TYPE_SMSG, Status::Ok, 0, 123_456);
        assert_eq!(gni_cq_get_inst_id(r), 123_456);
    }

    #[test]
    fn cqwrite_carries_48_bits() {
        let e = make_cqwrite(0xffff_1234_5678_9abc);
        assert_eq!(gni_cq_get_data(e), 0x1234_5678_9abc);
        assert_eq!(gni_cq_get_source(e), SRC_CQWRITE);
        assert_eq!(status(e), 0);
    }

    #[test]
    fn setters_touch_only_their_field() {
        let mut e = make(SRC_REMOTE, TYPE_POST, Status::OutOfBounds, 5, 6);
        unsafe { gni_cq_set_inst_id(&mut e, 99) };
        assert_eq!(gni_cq_get_inst_id(e), 99);
        assert_eq!(aux(e), 5);
        unsafe { gni_cq_clr_status(&mut e) };
        assert_eq!(status(e), 0);
        assert_eq!(source(e), SRC_REMOTE);
        unsafe { gni_cq_set_type(&mut e, TYPE_SMSG) };
        assert_eq!(ty(e), TYPE_SMSG);
        unsafe { gni_cq_set_inst_id(std::ptr::null_mut(), 1) };
    }

    #[test]
    fn every_status_decodes() {
        for b in 0..10 {
            let s = Status::from_bits(b).unwrap();
            assert_eq!(s as u64, b);
            assert!(!s.describe().is_empty());
        }
        assert_eq!(Status::from_bits(10), None);
        assert!(Status::Network.recoverable() && !Status::PeerDead.recoverable());
    }
}
