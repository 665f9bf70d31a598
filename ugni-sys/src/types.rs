//! Rust mirror of include/gni_pub.h: the C types, constants and struct
//! layouts the exports are written against.
//!
//! Names are the C names, so code reads like the API it implements.  Each
//! constant has the Rust type matching the C type of its definition: `c_int`
//! for plain integer macros and anonymous enums, `c_uint` for the two macros
//! that overflow `int`, `u64` for the `ULL` macros, and the enum typedef for
//! enumerators.  Every size, alignment and field offset recorded in the ABI
//! sheet is asserted at compile time at the bottom of this file;
//! tests/layout.rs compares them with what a C compiler makes of the header.
//!
//! The bit layout of a `gni_cq_entry_t` is not part of the ABI (programs read
//! entries only through the exported `gni_cq_get_*` functions) and is defined
//! by the CQ implementation, not here.

#![allow(non_camel_case_types, non_upper_case_globals, non_snake_case)]

use libc::{c_char, c_int, c_uint, c_void};
use std::mem::{align_of, offset_of, size_of};

// ---- Version -------------------------------------------------------------

pub const GNI_MAJOR_REV: c_int = 0x00;
pub const GNI_MINOR_REV: c_int = 0x5c;
pub const GNI_CODE_REV: c_int = 0x0000;
pub const GNI_VERSION: c_int = (GNI_MAJOR_REV << 24) | (GNI_MINOR_REV << 16) | GNI_CODE_REV;
pub const GNI_VERSION_FMA_SHARING: c_int = 0x5b0000;

/// `GNI_GET_MAJOR(value)`
pub const fn GNI_GET_MAJOR(value: u32) -> u32 {
    (value >> 24) & 0xFF
}
/// `GNI_GET_MINOR(value)`
pub const fn GNI_GET_MINOR(value: u32) -> u32 {
    (value >> 16) & 0xFF
}
/// `GNI_GET_REV(value)`
pub const fn GNI_GET_REV(value: u32) -> u32 {
    value & 0xFFFF
}
/// `GNI_VERSION_CHECK(maj, min, code)`
pub const fn GNI_VERSION_CHECK(maj: u32, min: u32, code: u32) -> u32 {
    (maj << 24) | (min << 16) | code
}

// ---- Protection tags and keys (anonymous enums, hence c_int) --------------

pub const GNI_PTAG_LND: c_int = 1;
pub const GNI_PTAG_OFED: c_int = 2;
pub const GNI_PTAG_USER_START: c_int = 3;
pub const GNI_PTAG_LND_KNC: c_int = 128;
pub const GNI_PTAG_USER_END: c_int = 253;
pub const GNI_PTAG_HSNBOOT: c_int = 254;
pub const GNI_PTAG_MAX: c_int = 254;
pub const GNI_PTAG_LB: c_int = 255;
pub const GNI_FIND_ALLOC_PTAG: c_int = GNI_PTAG_LB;

pub const GNI_PKEY_INVALID: c_int = 0;
pub const GNI_PKEY_LND: c_int = 1;
pub const GNI_PKEY_OFED: c_int = 2;
pub const GNI_PKEY_USER_START: c_int = 128;
pub const GNI_PKEY_USER_END: c_int = 65407;
pub const GNI_PKEY_HSNBOOT: c_int = 65408;
pub const GNI_PKEY_MAX: c_int = 65534;
pub const GNI_PKEY_LB: c_int = 65535;

pub const GNI_COOKIE_PKEY_MASK: c_int = 0xFFFF;
pub const GNI_COOKIE_PKEY_SHIFT: c_int = 16;
pub const GNI_COOKIE_CBPS_MDD_MASK: c_int = 0x7;
pub const GNI_COOKIE_CBPS_MDD_SHIFT: c_int = 3;

/// `GNI_JOB_CREATE_COOKIE(pkey, cbps_mdd)`
pub const fn GNI_JOB_CREATE_COOKIE(pkey: u32, cbps_mdd: u32) -> u32 {
    (pkey << GNI_COOKIE_PKEY_SHIFT)
        | ((cbps_mdd & GNI_COOKIE_CBPS_MDD_MASK as u32) << GNI_COOKIE_CBPS_MDD_SHIFT)
}

// ---- Short messaging -------------------------------------------------------

pub const GNI_SMSG_ANY_TAG: c_int = 0xFF;
pub const FMA_SMSG_MAX_RETRANS_DEFAULT: c_int = 10;

// ---- CDM modes -------------------------------------------------------------

pub const GNI_CDM_MODE_FORK_NOCOPY: c_int = 0x00000001;
pub const GNI_CDM_MODE_FORK_FULLCOPY: c_int = 0x00000002;
pub const GNI_CDM_MODE_FORK_PARTCOPY: c_int = 0x00000004;
pub const GNI_CDM_MODE_ERR_NO_KILL: c_int = 0x00000008;
pub const GNI_CDM_MODE_ERR_ALL_KILL: c_int = 0x00000010;
pub const GNI_CDM_MODE_FAST_DATAGRAM_POLL: c_int = 0x00000020;
pub const GNI_CDM_MODE_BTE_SINGLE_CHANNEL: c_int = 0x00000040;
pub const GNI_CDM_MODE_USE_PCI_IOMMU: c_int = 0x00000080;
pub const GNI_CDM_MODE_MDD_DEDICATED: c_int = 0x00000100;
pub const GNI_CDM_MODE_MDD_SHARED: c_int = 0x00000200;
pub const GNI_CDM_MODE_DUAL_EVENTS: c_int = 0x00001000;
pub const GNI_CDM_MODE_DLA_ENABLE_FORWARDING: c_int = 0x00004000;
pub const GNI_CDM_MODE_DLA_DISABLE_FORWARDING: c_int = 0x00008000;
pub const GNI_CDM_MODE_FMA_DEDICATED: c_int = 0x00010000;
pub const GNI_CDM_MODE_FMA_SHARED: c_int = 0x00020000;
pub const GNI_CDM_MODE_CACHED_AMO_ENABLED: c_int = 0x00040000;
pub const GNI_CDM_MODE_CQ_NIC_LOCAL_PLACEMENT: c_int = 0x00080000;
pub const GNI_CDM_MODE_FLBTE_DISABLE: c_int = 0x00100000;
pub const GNI_CDM_MODE_FMA_SMALL_WINDOW: c_int = 0x00200000;
pub const GNI_CDM_MODE_MASK: c_int = 0x0FFFFFFF;
pub const GNI_CDM_MODE_PRIV_RESERVED_1: c_int = 0x10000000;
pub const GNI_CDM_MODE_PRIV_RESERVED_2: c_int = 0x20000000;
pub const GNI_CDM_MODE_PRIV_RESERVED_3: c_int = 0x40000000;
pub const GNI_CDM_MODE_PRIV_RESERVED_4: c_uint = 0x80000000;
pub const GNI_CDM_MODE_PRIV_MASK: c_uint = 0xF0000000;

// ---- Memory registration flags ----------------------------------------------

pub const GNI_MEM_READWRITE: c_int = 0x00000000;
pub const GNI_MEM_READ_ONLY: c_int = 0x00000001;
pub const GNI_MEM_USE_VMDH: c_int = 0x00000002;
pub const GNI_MEM_USE_GART: c_int = 0x00000004;
pub const GNI_MEM_PHYS_CONT: c_int = 0x00000008;
pub const GNI_MEM_PHYS_SEGMENTS: c_int = 0x00000010;
pub const GNI_MEM_STRICT_PI_ORDERING: c_int = 0x00000020;
pub const GNI_MEM_PI_FLUSH: c_int = 0x00000040;
pub const GNI_MEM_MDD_CLONE: c_int = 0x00000080;
pub const GNI_MEM_RELAXED_PI_ORDERING: c_int = 0x00000100;
pub const GNI_MEM_RESERVE_REGION: c_int = 0x00000200;
pub const GNI_MEM_UPDATE_REGION: c_int = 0x00000400;
pub const GNI_MEM_MDD_SHARED: c_int = 0x00000800;
pub const GNI_MEM_MDD_DEDICATED: c_int = 0x00001000;
pub const GNI_MEM_CUDA: c_int = 0x01000000;

/// `GNI_EXMEM_FLAGS(flag)`: the external-memory selector, bits 31..24.
pub const fn GNI_EXMEM_FLAGS(flag: u32) -> u32 {
    flag >> 24
}
/// `GNI_MEM_IS_EXTERNAL(flag)`
pub const fn GNI_MEM_IS_EXTERNAL(flag: u32) -> bool {
    GNI_EXMEM_FLAGS(flag) != 0
}

// ---- Completion queue modes and event types -----------------------------------

pub const GNI_CQ_NOBLOCK: c_int = 0x00000000;
pub const GNI_CQ_BLOCKING: c_int = 0x00000001;
pub const GNI_CQ_EMULATED: c_int = 0x00000002;
pub const GNI_CQ_EMULATED_INVALID: c_int = GNI_CQ_EMULATED | GNI_CQ_BLOCKING;
pub const GNI_CQ_PHYS_PAGES: c_int = 0x00000004;
pub const GNI_CQ_UNMANAGED: c_int = 0x00000008;

/// `GNI_CQ_IS_BLOCKING(modes)`; `GNI_CQ_IS_NON_BLOCKING` is its negation.
pub const fn GNI_CQ_IS_BLOCKING(modes: gni_cq_mode_t) -> bool {
    modes & GNI_CQ_BLOCKING as u32 != 0
}
/// `GNI_CQ_IS_EMULATED(modes)`; `GNI_CQ_IS_NOT_EMULATED` is its negation.
pub const fn GNI_CQ_IS_EMULATED(modes: gni_cq_mode_t) -> bool {
    modes & GNI_CQ_EMULATED as u32 != 0
}
/// `GNI_CQ_IS_INVALID_EMULATED(modes)`
pub const fn GNI_CQ_IS_INVALID_EMULATED(modes: gni_cq_mode_t) -> bool {
    modes & GNI_CQ_EMULATED_INVALID as u32 == GNI_CQ_EMULATED_INVALID as u32
}
/// `GNI_CQ_USE_PHYS_PAGES(modes)`
pub const fn GNI_CQ_USE_PHYS_PAGES(modes: gni_cq_mode_t) -> bool {
    modes & GNI_CQ_PHYS_PAGES as u32 != 0
}

pub const GNI_CQ_EVENT_TYPE_POST: u64 = 0x0;
pub const GNI_CQ_EVENT_TYPE_SMSG: u64 = 0x1;
pub const GNI_CQ_EVENT_TYPE_DMAPP: u64 = 0x2;
pub const GNI_CQ_EVENT_TYPE_MSGQ: u64 = 0x3;

pub const GNI_FMA_FLAGGED_RESPONSE_SIZE: c_int = 4;

// ---- Collective engine ----------------------------------------------------------

pub const GNI_CE_FPE_OP_INVAL: c_int = 0x1;
pub const GNI_CE_FPE_OFLOW: c_int = 0x2;
pub const GNI_CE_FPE_UFLOW: c_int = 0x4;
pub const GNI_CE_FPE_PRECISION: c_int = 0x8;

pub const GNI_CE_MODE_ROUND_UP: c_int = 0x00000001;
pub const GNI_CE_MODE_ROUND_DOWN: c_int = 0x00000002;
pub const GNI_CE_MODE_ROUND_NEAR: c_int = 0x00000004;
pub const GNI_CE_MODE_ROUND_ZERO: c_int = 0x00000008;
pub const GNI_CE_MODE_CQE_ONCOMP: c_int = 0x00000010;
pub const GNI_CE_MODE_CQE_ONERR: c_int = 0x00000040;
pub const GNI_CE_MODE_RC_NMIN_HASH: c_int = 0x00000080;
pub const GNI_CE_MODE_RC_MIN_HASH: c_int = 0x00000100;
pub const GNI_CE_MODE_RC_MNON_HASH: c_int = 0x00000200;
pub const GNI_CE_MODE_RC_ADAPT: c_int = 0x00000400;
pub const GNI_CE_MAX_CHILDREN: c_int = 32;

pub const GNI_CEMODE_TWO_OP: c_int = 1 << 0;
pub const GNI_CEMODE_FPE_OP_INVAL: c_int = 1 << 1;
pub const GNI_CEMODE_FPE_OFLOW: c_int = 1 << 2;
pub const GNI_CEMODE_FPE_UFLOW: c_int = 1 << 3;
pub const GNI_CEMODE_FPE_PRECISION: c_int = 1 << 4;

// ---- Descriptor modes -------------------------------------------------------------

pub const GNI_CQMODE_SILENT: c_int = 0x0000;
pub const GNI_CQMODE_LOCAL_EVENT: c_int = 0x0001;
pub const GNI_CQMODE_GLOBAL_EVENT: c_int = 0x0002;
pub const GNI_CQMODE_REMOTE_EVENT: c_int = 0x0004;
pub const GNI_CQMODE_DUAL_EVENTS: c_int = GNI_CQMODE_LOCAL_EVENT | GNI_CQMODE_GLOBAL_EVENT;

pub const GNI_DLVMODE_PERFORMANCE: c_int = 0x0000;
pub const GNI_DLVMODE_NO_ADAPT: c_int = 0x0001;
pub const GNI_DLVMODE_NO_HASH: c_int = 0x0002;
pub const GNI_DLVMODE_NO_RADAPT: c_int = 0x0004;
pub const GNI_DLVMODE_IN_ORDER: c_int = GNI_DLVMODE_NO_ADAPT | GNI_DLVMODE_NO_HASH;
pub const GNI_DLVMODE_MNON_HASH: c_int = GNI_DLVMODE_IN_ORDER;
pub const GNI_DLVMODE_NMIN_HASH: c_int = 0x0008;
pub const GNI_DLVMODE_MIN_HASH: c_int = 0x0010;
pub const GNI_DLVMODE_ADAPTIVE0: c_int = GNI_DLVMODE_PERFORMANCE;
pub const GNI_DLVMODE_ADAPTIVE1: c_int = 0x0020;
pub const GNI_DLVMODE_ADAPTIVE2: c_int = 0x0040;
pub const GNI_DLVMODE_ADAPTIVE3: c_int = 0x0080;
pub const GNI_DLVMODE_ORDERED_TAIL: c_int = 0x0100;

pub const GNI_RDMAMODE_PHYS_ADDR: c_int = 0x0001;
pub const GNI_RDMAMODE_FENCE: c_int = 0x0002;
pub const GNI_RDMAMODE_GETWC_DIS: c_int = 0x0004;

// ---- Error subscription ----------------------------------------------------------------

pub const GNI_ERRMASK_CORRECTABLE_MEMORY: c_int = 1 << 0;
pub const GNI_ERRMASK_CRITICAL: c_int = 1 << 1;
pub const GNI_ERRMASK_TRANSACTION: c_int = 1 << 2;
pub const GNI_ERRMASK_ADDRESS_TRANSLATION: c_int = 1 << 3;
pub const GNI_ERRMASK_TRANSIENT: c_int = 1 << 4;
pub const GNI_ERRMASK_INFORMATIONAL: c_int = 1 << 5;
pub const GNI_ERRMASK_DIAG_ONLY: c_int = 1 << 6;
pub const GNI_ERRMASK_UNKNOWN_TRANSACTION: c_int = 1 << 7;

// ---- Sizes and job control -----------------------------------------------------------------

pub const GNI_DATAGRAM_MAXSIZE: c_int = 128;
pub const GNI_SMSG_MAX_SIZE: c_int = 65535;

pub const GNI_JOB_INVALID_LIMIT: c_int = -1;
pub const GNI_JOB_CTRL_NTT_CLEANUP: c_int = 0x01;
pub const GNI_JOB_CTRL_CE0_MASK: c_int = 1 << 0;
pub const GNI_JOB_CTRL_CE1_MASK: c_int = 1 << 1;
pub const GNI_JOB_CTRL_CE2_MASK: c_int = 1 << 2;
pub const GNI_JOB_CTRL_CE3_MASK: c_int = 1 << 3;
pub const GNI_JOB_CTRL_ALL_CE_MASK: c_int =
    GNI_JOB_CTRL_CE0_MASK | GNI_JOB_CTRL_CE1_MASK | GNI_JOB_CTRL_CE2_MASK | GNI_JOB_CTRL_CE3_MASK;

pub const GNI_MSGQ_MSG_SZ_MAX: c_int = 128;
pub const GNI_MSGQ_NODE_INSTS_MAX: c_int = 48;
pub const GNI_MSGQ_MODE_BLOCKING: c_int = 0x01;

pub const MAX_BUILD_STRING_LENGTH: c_int = 80;

pub const GNI_BI_FLAG_APPLY_NOW: c_int = 0x1;
pub const GNI_BI_FLAG_APPLY_AFTER_THROTTLE: c_int = 0x2;
pub const GNI_BI_FLAG_USE_DEFAULT_SETTINGS: c_int = 0x4;
pub const GNI_BI_FLAG_VALUE_IS_NUM_ORB_ENTRIES: c_int = 0x8;
pub const GNI_BI_INJECT_BW_MIN: c_int = 0;
pub const GNI_BI_INJECT_BW_MAX: c_int = 100;
pub const GNI_BI_INJECT_BW_ORB_MIN: c_int = 0;
pub const GNI_BI_INJECT_BW_ORB_MAX: c_int = 992;

// ---- Enumerations ----------------------------------------------------------------------
//
// C enums with only non-negative values are `unsigned int` under gcc; u32
// has the same size and calling convention.

pub type gni_mem_handle_attr_t = u32;
pub const GNI_MEMHNDL_ATTR_READONLY: gni_mem_handle_attr_t = 1;
pub const GNI_MEMHNDL_ATTR_VMDH: gni_mem_handle_attr_t = 2;
pub const GNI_MEMHNDL_ATTR_MRT: gni_mem_handle_attr_t = 3;
pub const GNI_MEMHNDL_ATTR_GART: gni_mem_handle_attr_t = 4;
pub const GNI_MEMHNDL_ATTR_IOMMU: gni_mem_handle_attr_t = 5;
pub const GNI_MEMHNDL_ATTR_PCI_IOMMU: gni_mem_handle_attr_t = 6;
pub const GNI_MEMHNDL_ATTR_CLONE: gni_mem_handle_attr_t = 7;

pub type gni_smsg_type_t = u32;
pub const GNI_SMSG_TYPE_INVALID: gni_smsg_type_t = 0;
pub const GNI_SMSG_TYPE_MBOX: gni_smsg_type_t = 1;
pub const GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT: gni_smsg_type_t = 2;

pub type gni_return_t = u32;
pub const GNI_RC_SUCCESS: gni_return_t = 0;
pub const GNI_RC_NOT_DONE: gni_return_t = 1;
pub const GNI_RC_INVALID_PARAM: gni_return_t = 2;
pub const GNI_RC_ERROR_RESOURCE: gni_return_t = 3;
pub const GNI_RC_TIMEOUT: gni_return_t = 4;
pub const GNI_RC_PERMISSION_ERROR: gni_return_t = 5;
pub const GNI_RC_DESCRIPTOR_ERROR: gni_return_t = 6;
pub const GNI_RC_ALIGNMENT_ERROR: gni_return_t = 7;
pub const GNI_RC_INVALID_STATE: gni_return_t = 8;
pub const GNI_RC_NO_MATCH: gni_return_t = 9;
pub const GNI_RC_SIZE_ERROR: gni_return_t = 10;
pub const GNI_RC_TRANSACTION_ERROR: gni_return_t = 11;
pub const GNI_RC_ILLEGAL_OP: gni_return_t = 12;
pub const GNI_RC_ERROR_NOMEM: gni_return_t = 13;
/// Number of return codes (length of `gni_err_str`); not a C name.
pub const GNI_RC_COUNT: usize = 14;

pub type gni_post_state_t = u32;
pub const GNI_POST_PENDING: gni_post_state_t = 0;
pub const GNI_POST_COMPLETED: gni_post_state_t = 1;
pub const GNI_POST_ERROR: gni_post_state_t = 2;
pub const GNI_POST_TIMEOUT: gni_post_state_t = 3;
pub const GNI_POST_TERMINATED: gni_post_state_t = 4;
pub const GNI_POST_REMOTE_DATA: gni_post_state_t = 5;

pub type gni_post_type_t = u32;
pub const GNI_POST_RDMA_PUT: gni_post_type_t = 1;
pub const GNI_POST_RDMA_GET: gni_post_type_t = 2;
pub const GNI_POST_FMA_PUT: gni_post_type_t = 3;
pub const GNI_POST_FMA_PUT_W_SYNCFLAG: gni_post_type_t = 4;
pub const GNI_POST_FMA_GET: gni_post_type_t = 5;
pub const GNI_POST_AMO: gni_post_type_t = 6;
pub const GNI_POST_CQWRITE: gni_post_type_t = 7;
pub const GNI_POST_CE: gni_post_type_t = 8;
pub const GNI_POST_FMA_GET_W_FLAG: gni_post_type_t = 9;
pub const GNI_POST_AMO_W_FLAG: gni_post_type_t = 10;

pub type gni_fma_cmd_type_t = u32;
pub const GNI_FMA_ATOMIC_FADD: gni_fma_cmd_type_t = 0x008;
pub const GNI_FMA_ATOMIC_FADD_C: gni_fma_cmd_type_t = 0x018;
pub const GNI_FMA_ATOMIC_FAND: gni_fma_cmd_type_t = 0x009;
pub const GNI_FMA_ATOMIC_FAND_C: gni_fma_cmd_type_t = 0x019;
pub const GNI_FMA_ATOMIC_FOR: gni_fma_cmd_type_t = 0x00A;
pub const GNI_FMA_ATOMIC_FOR_C: gni_fma_cmd_type_t = 0x01A;
pub const GNI_FMA_ATOMIC_FXOR: gni_fma_cmd_type_t = 0x00B;
pub const GNI_FMA_ATOMIC_FXOR_C: gni_fma_cmd_type_t = 0x01B;
pub const GNI_FMA_ATOMIC_FAX: gni_fma_cmd_type_t = 0x00C;
pub const GNI_FMA_ATOMIC_FAX_C: gni_fma_cmd_type_t = 0x01C;
pub const GNI_FMA_ATOMIC_CSWAP: gni_fma_cmd_type_t = 0x00D;
pub const GNI_FMA_ATOMIC_CSWAP_C: gni_fma_cmd_type_t = 0x01D;
pub const GNI_FMA_ATOMIC2_FAND_S: gni_fma_cmd_type_t = 0x240;
pub const GNI_FMA_ATOMIC2_FAND: gni_fma_cmd_type_t = 0x041;
pub const GNI_FMA_ATOMIC2_FAND_SC: gni_fma_cmd_type_t = 0x260;
pub const GNI_FMA_ATOMIC2_FAND_C: gni_fma_cmd_type_t = 0x061;
pub const GNI_FMA_ATOMIC2_FOR_S: gni_fma_cmd_type_t = 0x242;
pub const GNI_FMA_ATOMIC2_FOR: gni_fma_cmd_type_t = 0x043;
pub const GNI_FMA_ATOMIC2_FOR_SC: gni_fma_cmd_type_t = 0x262;
pub const GNI_FMA_ATOMIC2_FOR_C: gni_fma_cmd_type_t = 0x063;
pub const GNI_FMA_ATOMIC2_FXOR_S: gni_fma_cmd_type_t = 0x244;
pub const GNI_FMA_ATOMIC2_FXOR: gni_fma_cmd_type_t = 0x045;
pub const GNI_FMA_ATOMIC2_FXOR_SC: gni_fma_cmd_type_t = 0x264;
pub const GNI_FMA_ATOMIC2_FXOR_C: gni_fma_cmd_type_t = 0x065;
pub const GNI_FMA_ATOMIC2_FSWAP_S: gni_fma_cmd_type_t = 0x246;
pub const GNI_FMA_ATOMIC2_FSWAP: gni_fma_cmd_type_t = 0x047;
pub const GNI_FMA_ATOMIC2_FSWAP_SC: gni_fma_cmd_type_t = 0x266;
pub const GNI_FMA_ATOMIC2_FSWAP_C: gni_fma_cmd_type_t = 0x067;
pub const GNI_FMA_ATOMIC2_FAX_S: gni_fma_cmd_type_t = 0x248;
pub const GNI_FMA_ATOMIC2_FAX: gni_fma_cmd_type_t = 0x049;
pub const GNI_FMA_ATOMIC2_FAX_SC: gni_fma_cmd_type_t = 0x268;
pub const GNI_FMA_ATOMIC2_FAX_C: gni_fma_cmd_type_t = 0x069;
pub const GNI_FMA_ATOMIC2_FCSWAP_S: gni_fma_cmd_type_t = 0x24A;
pub const GNI_FMA_ATOMIC2_FCSWAP: gni_fma_cmd_type_t = 0x04B;
pub const GNI_FMA_ATOMIC2_FCSWAP_SC: gni_fma_cmd_type_t = 0x26A;
pub const GNI_FMA_ATOMIC2_FCSWAP_C: gni_fma_cmd_type_t = 0x06B;
pub const GNI_FMA_ATOMIC2_FIMIN_S: gni_fma_cmd_type_t = 0x250;
pub const GNI_FMA_ATOMIC2_FIMIN: gni_fma_cmd_type_t = 0x051;
pub const GNI_FMA_ATOMIC2_FIMIN_SC: gni_fma_cmd_type_t = 0x270;
pub const GNI_FMA_ATOMIC2_FIMIN_C: gni_fma_cmd_type_t = 0x071;
pub const GNI_FMA_ATOMIC2_FIMAX_S: gni_fma_cmd_type_t = 0x252;
pub const GNI_FMA_ATOMIC2_FIMAX: gni_fma_cmd_type_t = 0x053;
pub const GNI_FMA_ATOMIC2_FIMAX_SC: gni_fma_cmd_type_t = 0x272;
pub const GNI_FMA_ATOMIC2_FIMAX_C: gni_fma_cmd_type_t = 0x073;
pub const GNI_FMA_ATOMIC2_FIADD_S: gni_fma_cmd_type_t = 0x254;
pub const GNI_FMA_ATOMIC2_FIADD: gni_fma_cmd_type_t = 0x055;
pub const GNI_FMA_ATOMIC2_FIADD_SC: gni_fma_cmd_type_t = 0x274;
pub const GNI_FMA_ATOMIC2_FIADD_C: gni_fma_cmd_type_t = 0x075;
pub const GNI_FMA_ATOMIC2_FFPMIN_S: gni_fma_cmd_type_t = 0x258;
pub const GNI_FMA_ATOMIC2_FFPMIN: gni_fma_cmd_type_t = 0x059;
pub const GNI_FMA_ATOMIC2_FFPMIN_SC: gni_fma_cmd_type_t = 0x278;
pub const GNI_FMA_ATOMIC2_FFPMIN_C: gni_fma_cmd_type_t = 0x079;
pub const GNI_FMA_ATOMIC2_FFPMAX_S: gni_fma_cmd_type_t = 0x25A;
pub const GNI_FMA_ATOMIC2_FFPMAX: gni_fma_cmd_type_t = 0x05B;
pub const GNI_FMA_ATOMIC2_FFPMAX_SC: gni_fma_cmd_type_t = 0x27A;
pub const GNI_FMA_ATOMIC2_FFPMAX_C: gni_fma_cmd_type_t = 0x07B;
pub const GNI_FMA_ATOMIC2_FFPADD_S: gni_fma_cmd_type_t = 0x25C;
pub const GNI_FMA_ATOMIC2_FFPADD: gni_fma_cmd_type_t = 0x05D;
pub const GNI_FMA_ATOMIC2_FFPADD_SC: gni_fma_cmd_type_t = 0x27C;
pub const GNI_FMA_ATOMIC2_FFPADD_C: gni_fma_cmd_type_t = 0x07D;
pub const GNI_FMA_ATOMIC_ADD: gni_fma_cmd_type_t = 0x108;
pub const GNI_FMA_ATOMIC_ADD_C: gni_fma_cmd_type_t = 0x118;
pub const GNI_FMA_ATOMIC_AND: gni_fma_cmd_type_t = 0x109;
pub const GNI_FMA_ATOMIC_AND_C: gni_fma_cmd_type_t = 0x119;
pub const GNI_FMA_ATOMIC_OR: gni_fma_cmd_type_t = 0x10A;
pub const GNI_FMA_ATOMIC_OR_C: gni_fma_cmd_type_t = 0x11A;
pub const GNI_FMA_ATOMIC_XOR: gni_fma_cmd_type_t = 0x10B;
pub const GNI_FMA_ATOMIC_XOR_C: gni_fma_cmd_type_t = 0x11B;
pub const GNI_FMA_ATOMIC_AX: gni_fma_cmd_type_t = 0x10C;
pub const GNI_FMA_ATOMIC_AX_C: gni_fma_cmd_type_t = 0x11C;
pub const GNI_FMA_ATOMIC2_AND_S: gni_fma_cmd_type_t = 0x340;
pub const GNI_FMA_ATOMIC2_AND: gni_fma_cmd_type_t = 0x141;
pub const GNI_FMA_ATOMIC2_AND_SC: gni_fma_cmd_type_t = 0x360;
pub const GNI_FMA_ATOMIC2_AND_C: gni_fma_cmd_type_t = 0x161;
pub const GNI_FMA_ATOMIC2_OR_S: gni_fma_cmd_type_t = 0x342;
pub const GNI_FMA_ATOMIC2_OR: gni_fma_cmd_type_t = 0x143;
pub const GNI_FMA_ATOMIC2_OR_SC: gni_fma_cmd_type_t = 0x362;
pub const GNI_FMA_ATOMIC2_OR_C: gni_fma_cmd_type_t = 0x163;
pub const GNI_FMA_ATOMIC2_XOR_S: gni_fma_cmd_type_t = 0x344;
pub const GNI_FMA_ATOMIC2_XOR: gni_fma_cmd_type_t = 0x145;
pub const GNI_FMA_ATOMIC2_XOR_SC: gni_fma_cmd_type_t = 0x364;
pub const GNI_FMA_ATOMIC2_XOR_C: gni_fma_cmd_type_t = 0x165;
pub const GNI_FMA_ATOMIC2_SWAP_S: gni_fma_cmd_type_t = 0x346;
pub const GNI_FMA_ATOMIC2_SWAP: gni_fma_cmd_type_t = 0x147;
pub const GNI_FMA_ATOMIC2_SWAP_SC: gni_fma_cmd_type_t = 0x366;
pub const GNI_FMA_ATOMIC2_SWAP_C: gni_fma_cmd_type_t = 0x167;
pub const GNI_FMA_ATOMIC2_AX_S: gni_fma_cmd_type_t = 0x348;
pub const GNI_FMA_ATOMIC2_AX: gni_fma_cmd_type_t = 0x149;
pub const GNI_FMA_ATOMIC2_AX_SC: gni_fma_cmd_type_t = 0x368;
pub const GNI_FMA_ATOMIC2_AX_C: gni_fma_cmd_type_t = 0x169;
pub const GNI_FMA_ATOMIC2_CSWAP_S: gni_fma_cmd_type_t = 0x34A;
pub const GNI_FMA_ATOMIC2_CSWAP: gni_fma_cmd_type_t = 0x14B;
pub const GNI_FMA_ATOMIC2_CSWAP_SC: gni_fma_cmd_type_t = 0x36A;
pub const GNI_FMA_ATOMIC2_CSWAP_C: gni_fma_cmd_type_t = 0x16B;
pub const GNI_FMA_ATOMIC2_IMIN_S: gni_fma_cmd_type_t = 0x350;
pub const GNI_FMA_ATOMIC2_IMIN: gni_fma_cmd_type_t = 0x151;
pub const GNI_FMA_ATOMIC2_IMIN_SC: gni_fma_cmd_type_t = 0x370;
pub const GNI_FMA_ATOMIC2_IMIN_C: gni_fma_cmd_type_t = 0x171;
pub const GNI_FMA_ATOMIC2_IMAX_S: gni_fma_cmd_type_t = 0x352;
pub const GNI_FMA_ATOMIC2_IMAX: gni_fma_cmd_type_t = 0x153;
pub const GNI_FMA_ATOMIC2_IMAX_SC: gni_fma_cmd_type_t = 0x372;
pub const GNI_FMA_ATOMIC2_IMAX_C: gni_fma_cmd_type_t = 0x173;
pub const GNI_FMA_ATOMIC2_IADD_S: gni_fma_cmd_type_t = 0x354;
pub const GNI_FMA_ATOMIC2_IADD: gni_fma_cmd_type_t = 0x155;
pub const GNI_FMA_ATOMIC2_IADD_SC: gni_fma_cmd_type_t = 0x374;
pub const GNI_FMA_ATOMIC2_IADD_C: gni_fma_cmd_type_t = 0x175;
pub const GNI_FMA_ATOMIC2_FPMIN_S: gni_fma_cmd_type_t = 0x358;
pub const GNI_FMA_ATOMIC2_FPMIN: gni_fma_cmd_type_t = 0x159;
pub const GNI_FMA_ATOMIC2_FPMIN_SC: gni_fma_cmd_type_t = 0x378;
pub const GNI_FMA_ATOMIC2_FPMIN_C: gni_fma_cmd_type_t = 0x179;
pub const GNI_FMA_ATOMIC2_FPMAX_S: gni_fma_cmd_type_t = 0x35A;
pub const GNI_FMA_ATOMIC2_FPMAX: gni_fma_cmd_type_t = 0x15B;
pub const GNI_FMA_ATOMIC2_FPMAX_SC: gni_fma_cmd_type_t = 0x37A;
pub const GNI_FMA_ATOMIC2_FPMAX_C: gni_fma_cmd_type_t = 0x17B;
pub const GNI_FMA_ATOMIC2_FPADD_S: gni_fma_cmd_type_t = 0x35C;
pub const GNI_FMA_ATOMIC2_FPADD: gni_fma_cmd_type_t = 0x15D;
pub const GNI_FMA_ATOMIC2_FPADD_SC: gni_fma_cmd_type_t = 0x37C;
pub const GNI_FMA_ATOMIC2_FPADD_C: gni_fma_cmd_type_t = 0x17D;

pub type gni_ce_cmd_type_t = u32;
pub const GNI_FMA_CE_AND_S: gni_ce_cmd_type_t = 0x00;
pub const GNI_FMA_CE_AND: gni_ce_cmd_type_t = 0x01;
pub const GNI_FMA_CE_OR_S: gni_ce_cmd_type_t = 0x02;
pub const GNI_FMA_CE_OR: gni_ce_cmd_type_t = 0x03;
pub const GNI_FMA_CE_XOR_S: gni_ce_cmd_type_t = 0x04;
pub const GNI_FMA_CE_XOR: gni_ce_cmd_type_t = 0x05;
pub const GNI_FMA_CE_IMIN_LIDX_S: gni_ce_cmd_type_t = 0x10;
pub const GNI_FMA_CE_IMIN_LIDX: gni_ce_cmd_type_t = 0x11;
pub const GNI_FMA_CE_IMAX_LIDX_S: gni_ce_cmd_type_t = 0x12;
pub const GNI_FMA_CE_IMAX_LIDX: gni_ce_cmd_type_t = 0x13;
pub const GNI_FMA_CE_IADD_S: gni_ce_cmd_type_t = 0x14;
pub const GNI_FMA_CE_IADD: gni_ce_cmd_type_t = 0x15;
pub const GNI_FMA_CE_FPMIN_LIDX_S: gni_ce_cmd_type_t = 0x18;
pub const GNI_FMA_CE_FPMIN_LIDX: gni_ce_cmd_type_t = 0x19;
pub const GNI_FMA_CE_FPMAX_LIDX_S: gni_ce_cmd_type_t = 0x1A;
pub const GNI_FMA_CE_FPMAX_LIDX: gni_ce_cmd_type_t = 0x1B;
pub const GNI_FMA_CE_FPADD_S: gni_ce_cmd_type_t = 0x1C;
pub const GNI_FMA_CE_FPADD: gni_ce_cmd_type_t = 0x1D;
pub const GNI_FMA_CE_IMIN_GIDX_S: gni_ce_cmd_type_t = 0x30;
pub const GNI_FMA_CE_IMIN_GIDX: gni_ce_cmd_type_t = 0x31;
pub const GNI_FMA_CE_IMAX_GIDX_S: gni_ce_cmd_type_t = 0x32;
pub const GNI_FMA_CE_IMAX_GIDX: gni_ce_cmd_type_t = 0x33;
pub const GNI_FMA_CE_FPMIN_GIDX_S: gni_ce_cmd_type_t = 0x38;
pub const GNI_FMA_CE_FPMIN_GIDX: gni_ce_cmd_type_t = 0x39;
pub const GNI_FMA_CE_FPMAX_GIDX_S: gni_ce_cmd_type_t = 0x3A;
pub const GNI_FMA_CE_FPMAX_GIDX: gni_ce_cmd_type_t = 0x3B;

pub type gni_ce_child_t = u32;
pub const GNI_CE_CHILD_UNUSED: gni_ce_child_t = 0;
pub const GNI_CE_CHILD_VCE: gni_ce_child_t = 1;
pub const GNI_CE_CHILD_PE: gni_ce_child_t = 2;

pub type gni_nic_device_t = u32;
pub const GNI_DEVICE_GEMINI: gni_nic_device_t = 0;
pub const GNI_DEVICE_ARIES: gni_nic_device_t = 1;
pub const GNI_DEVICE_PISCES: gni_nic_device_t = 2;
pub const GNI_DEVICE_LAST: gni_nic_device_t = 3;

pub type gni_dev_res_t = u32;
pub const GNI_DEV_RES_FIRST: gni_dev_res_t = 0;
pub const GNI_DEV_RES_MDD: gni_dev_res_t = 1;
pub const GNI_DEV_RES_MRT: gni_dev_res_t = 2;
pub const GNI_DEV_RES_CQ: gni_dev_res_t = 3;
pub const GNI_DEV_RES_FMA: gni_dev_res_t = 4;
pub const GNI_DEV_RES_CE: gni_dev_res_t = 5;
pub const GNI_DEV_RES_DLA: gni_dev_res_t = 6;
pub const GNI_DEV_RES_LAST: gni_dev_res_t = 7;

pub type gni_job_res_t = u32;
pub const GNI_JOB_RES_FIRST: gni_job_res_t = 0;
pub const GNI_JOB_RES_MDD: gni_job_res_t = 1;
pub const GNI_JOB_RES_MRT: gni_job_res_t = 2;
pub const GNI_JOB_RES_IOMMU: gni_job_res_t = 3;
pub const GNI_JOB_RES_GART: gni_job_res_t = 4;
pub const GNI_JOB_RES_CQ: gni_job_res_t = 5;
pub const GNI_JOB_RES_FMA: gni_job_res_t = 6;
pub const GNI_JOB_RES_RMDA: gni_job_res_t = 7;
pub const GNI_JOB_RES_CE: gni_job_res_t = 8;
pub const GNI_JOB_RES_DLA: gni_job_res_t = 9;
pub const GNI_JOB_RES_SFMA: gni_job_res_t = 10;
pub const GNI_JOB_RES_LAST: gni_job_res_t = 11;

pub type gni_statistic_t = u32;
pub const GNI_STAT_SMSG_BUFF_CREDITS_STALL: gni_statistic_t = 0;
pub const GNI_STAT_SMSG_DLA_STALL: gni_statistic_t = 1;
pub const GNI_STAT_SMSG_MBOX_CREDITS_STALL: gni_statistic_t = 2;
pub const GNI_STAT_SMSG_REQ_STALL: gni_statistic_t = 3;
pub const GNI_STAT_SMSG_RETRANS_COUNT: gni_statistic_t = 4;
pub const GNI_STAT_SMSG_RETRANS_DLA_COUNT: gni_statistic_t = 5;
pub const GNI_STAT_SMSG_RETRANS_STALL: gni_statistic_t = 6;
/// Value in our header (the default, non-Aries form of the enum).
pub const GNI_NUM_STATS: gni_statistic_t = 7;
// Statistics that only a program built against the Aries form of the vendor
// header (CRAY_CONFIG_GHAL_ARIES) can name.  They follow the common ones, so
// the library accepts both forms: values 7..=18 are these.
pub const GNI_STAT_DLA_ALLOC_STATUS_STALL: gni_statistic_t = 7;
pub const GNI_STAT_DLA_ALLOC_STATUS_TIMEOUT: gni_statistic_t = 8;
pub const GNI_STAT_DLA_BLOCK_ORPHANED: gni_statistic_t = 9;
pub const GNI_STAT_DLA_BLOCK_RETRANS_COUNT: gni_statistic_t = 10;
pub const GNI_STAT_DLA_FREE_BLOCKS_STALL: gni_statistic_t = 11;
pub const GNI_STAT_DLA_FREE_FMAD_BLOCKS_STALL: gni_statistic_t = 12;
pub const GNI_STAT_DLA_HIGH_RETRANS_COUNT: gni_statistic_t = 13;
pub const GNI_STAT_DLA_OVERFLOW_RESEND: gni_statistic_t = 14;
pub const GNI_STAT_DLA_RETRANS_COUNT: gni_statistic_t = 15;
pub const GNI_STAT_DLA_TOTAL_RETRANS_COUNT: gni_statistic_t = 16;
pub const GNI_STAT_FLBTE_TXD_CORRUPT: gni_statistic_t = 17;
pub const GNI_STAT_FLBTE_TXD_NONE: gni_statistic_t = 18;
/// `GNI_NUM_STATS` of the Aries form; length of `gni_statistic_str`.
pub const GNI_NUM_STATS_ARIES: gni_statistic_t = 19;

// ---- Scalar typedefs ------------------------------------------------------------------------

pub type gni_cq_mode_t = u32;
pub type gni_cq_entry_t = u64;
pub type gni_error_mask_t = u8;

// ---- Opaque handles ---------------------------------------------------------------------------
//
// The C header declares each handle as a pointer to an incomplete struct.
// Distinct zero-sized types keep the handle kinds apart in Rust; the
// implementation casts them to its own object types.

macro_rules! opaque {
    ($($tag:ident => $handle:ident),* $(,)?) => {$(
        #[repr(C)]
        pub struct $tag {
            _private: [u8; 0],
        }
        pub type $handle = *mut $tag;
    )*};
}

opaque! {
    gni_nic => gni_nic_handle_t,
    gni_cdm => gni_cdm_handle_t,
    gni_ep => gni_ep_handle_t,
    gni_cq => gni_cq_handle_t,
    gni_err => gni_err_handle_t,
    gni_msgq => gni_msgq_handle_t,
    gni_ce => gni_ce_handle_t,
}

// ---- Callbacks --------------------------------------------------------------------------------

/// The `handler` parameter of `GNI_CqCreate` (NULL allowed).
pub type gni_cq_handler_t = Option<unsafe extern "C" fn(*mut gni_cq_entry_t, *mut c_void)>;

/// `gni_msgq_rcv_cb_func` is a function type in C; parameters of type
/// `gni_msgq_rcv_cb_func *` are `Option<gni_msgq_rcv_cb_func>` here.
pub type gni_msgq_rcv_cb_func = unsafe extern "C" fn(
    snd_id: u32,
    snd_pe: u32,
    msg: *mut c_void,
    msg_tag: u8,
    cb_data: *mut c_void,
) -> c_int;

// ---- Structures -----------------------------------------------------------------------------

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct gni_mem_handle_t {
    pub qword1: u64,
    pub qword2: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct gni_smsg_attr_t {
    pub msg_type: gni_smsg_type_t,
    pub msg_buffer: *mut c_void,
    pub buff_size: u32,
    pub mem_hndl: gni_mem_handle_t,
    pub mbox_offset: u32,
    pub mbox_maxcredit: u16,
    pub msg_maxsize: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct gni_mem_segment_t {
    pub address: u64,
    pub length: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct gni_ce_result_t {
    pub control: u64,
    pub result1: u64,
    pub result2: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct gni_post_descriptor_t {
    pub next_descr: *mut c_void,
    pub prev_descr: *mut c_void,
    pub post_id: u64,
    pub status: u64,
    pub cq_mode_complete: u16,
    /// C field `type` (a Rust keyword).
    pub type_: gni_post_type_t,
    pub cq_mode: u16,
    pub dlvr_mode: u16,
    pub local_addr: u64,
    pub local_mem_hndl: gni_mem_handle_t,
    pub remote_addr: u64,
    pub remote_mem_hndl: gni_mem_handle_t,
    pub length: u64,
    pub rdma_mode: u16,
    pub src_cq_hndl: gni_cq_handle_t,
    pub sync_flag_value: u64,
    pub sync_flag_addr: u64,
    pub amo_cmd: gni_fma_cmd_type_t,
    pub first_operand: u64,
    pub second_operand: u64,
    pub cqwrite_value: u64,
    pub ce_cmd: gni_ce_cmd_type_t,
    pub ce_mode: u32,
    pub ce_red_id: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct gni_ntt_entry_t {
    pub blck_addr: u32,
    pub rplc_addr: u32,
    pub rplc_size: u8,
}

/// The unnamed union `u` of `gni_ntt_descriptor_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union gni_ntt_descriptor_u {
    pub table: *mut u32,
    pub table_v2: *mut gni_ntt_entry_t,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct gni_ntt_descriptor_t {
    pub group_size: u32,
    pub granularity: u8,
    pub u: gni_ntt_descriptor_u,
    pub flags: u8,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct gni_error_event_t {
    pub error_code: u16,
    pub error_category: u8,
    pub ptag: u8,
    pub serial_number: u32,
    pub timestamp: u64,
    pub info_mmrs: [u64; 4],
}

/// The unnamed struct `a.m` of `gni_job_limits_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct gni_job_limits_m {
    pub ce_limit: u8,
    pub iommu_limit: u8,
    pub res_byte2: u8,
    pub res_byte3: u8,
}

/// The unnamed union `a` of `gni_job_limits_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union gni_job_limits_a {
    pub mrt_limit: i32,
    pub m: gni_job_limits_m,
}

/// The unnamed union `b` of `gni_job_limits_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union gni_job_limits_b {
    pub gart_limit: i32,
    pub dla_limit: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct gni_job_limits_t {
    pub mdd_limit: i32,
    pub a: gni_job_limits_a,
    pub b: gni_job_limits_b,
    pub fma_limit: i32,
    pub bte_limit: i32,
    pub cq_limit: i32,
    pub ntt_ctrl: i32,
    pub ntt_base: i32,
    pub ntt_size: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct gni_dev_res_desc_t {
    pub available: u64,
    pub reserved: u64,
    pub held: u64,
    pub total: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct gni_job_res_desc_t {
    pub used: u64,
    pub limit: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct gni_msgq_attr_t {
    pub max_msg_sz: u32,
    pub smsg_q_sz: u32,
    pub rcv_pool_sz: u32,
    pub num_msgq_eps: u32,
    pub nloc_insts: u32,
    pub modes: u8,
    pub rcv_cq_sz: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct gni_msgq_rem_inst_t {
    pub id: u32,
    pub mdh: gni_mem_handle_t,
    pub mdh_off: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct gni_msgq_ep_attr_t {
    pub pe_addr: u32,
    pub max_msg_sz: u32,
    pub smsg_q_sz: u32,
    pub num_insts: u32,
    pub insts: [gni_msgq_rem_inst_t; GNI_MSGQ_NODE_INSTS_MAX as usize],
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct gni_version_info_t {
    pub ugni_version: u32,
    pub ugni_svn_revision: u32,
    pub ugni_build_string: [c_char; MAX_BUILD_STRING_LENGTH as usize],
    pub kgni_version: u32,
    pub kgni_svn_revision: u32,
    pub kgni_build_string: [c_char; MAX_BUILD_STRING_LENGTH as usize],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct gni_bi_desc_t {
    pub current_bw: u16,
    pub current_aot_bw: u16,
    pub current_norbs: u16,
    pub flags: u16,
    pub sys_def_bw: u16,
    pub sys_def_aot_bw: u16,
    pub cle_seqnum: u16,
    pub hss_seqnum: u16,
}

// ---- Layout assertions (values from the ABI sheet, x86-64 LP64) ------------------------------

macro_rules! layout {
    ($t:ty, size $s:expr, align $a:expr $(, $($f:tt).+ @ $o:expr)* $(,)?) => {
        const _: () = assert!(size_of::<$t>() == $s, concat!("sizeof ", stringify!($t)));
        const _: () = assert!(align_of::<$t>() == $a, concat!("alignof ", stringify!($t)));
        $(const _: () = assert!(
            offset_of!($t, $($f).+) == $o,
            concat!("offsetof ", stringify!($t), ".", stringify!($($f).+))
        );)*
    };
}

layout!(gni_mem_handle_t, size 16, align 8, qword1 @ 0, qword2 @ 8);
layout!(gni_smsg_attr_t, size 56, align 8,
    msg_type @ 0, msg_buffer @ 8, buff_size @ 16, mem_hndl @ 24, mbox_offset @ 40,
    mbox_maxcredit @ 44, msg_maxsize @ 48);
layout!(gni_mem_segment_t, size 16, align 8, address @ 0, length @ 8);
layout!(gni_ce_result_t, size 24, align 8, control @ 0, result1 @ 8, result2 @ 16);
layout!(gni_post_descriptor_t, size 184, align 8,
    next_descr @ 0, prev_descr @ 8, post_id @ 16, status @ 24, cq_mode_complete @ 32,
    type_ @ 36, cq_mode @ 40, dlvr_mode @ 42, local_addr @ 48, local_mem_hndl @ 56,
    remote_addr @ 72, remote_mem_hndl @ 80, length @ 96, rdma_mode @ 104, src_cq_hndl @ 112,
    sync_flag_value @ 120, sync_flag_addr @ 128, amo_cmd @ 136, first_operand @ 144,
    second_operand @ 152, cqwrite_value @ 160, ce_cmd @ 168, ce_mode @ 172, ce_red_id @ 176);
layout!(gni_ntt_entry_t, size 12, align 4, blck_addr @ 0, rplc_addr @ 4, rplc_size @ 8);
layout!(gni_ntt_descriptor_t, size 24, align 8,
    group_size @ 0, granularity @ 4, u @ 8, u.table @ 8, u.table_v2 @ 8, flags @ 16);
layout!(gni_error_event_t, size 48, align 8,
    error_code @ 0, error_category @ 2, ptag @ 3, serial_number @ 4, timestamp @ 8,
    info_mmrs @ 16);
layout!(gni_job_limits_t, size 36, align 4,
    mdd_limit @ 0, a @ 4, a.mrt_limit @ 4, a.m @ 4, b @ 8, b.gart_limit @ 8, b.dla_limit @ 8,
    fma_limit @ 12, bte_limit @ 16, cq_limit @ 20, ntt_ctrl @ 24, ntt_base @ 28, ntt_size @ 32);
layout!(gni_job_limits_m, size 4, align 1,
    ce_limit @ 0, iommu_limit @ 1, res_byte2 @ 2, res_byte3 @ 3);
layout!(gni_dev_res_desc_t, size 32, align 8, available @ 0, reserved @ 8, held @ 16, total @ 24);
layout!(gni_job_res_desc_t, size 16, align 8, used @ 0, limit @ 8);
layout!(gni_msgq_attr_t, size 28, align 4,
    max_msg_sz @ 0, smsg_q_sz @ 4, rcv_pool_sz @ 8, num_msgq_eps @ 12, nloc_insts @ 16,
    modes @ 20, rcv_cq_sz @ 24);
layout!(gni_msgq_rem_inst_t, size 32, align 8, id @ 0, mdh @ 8, mdh_off @ 24);
layout!(gni_msgq_ep_attr_t, size 1552, align 8,
    pe_addr @ 0, max_msg_sz @ 4, smsg_q_sz @ 8, num_insts @ 12, insts @ 16);
layout!(gni_version_info_t, size 176, align 4,
    ugni_version @ 0, ugni_svn_revision @ 4, ugni_build_string @ 8, kgni_version @ 88,
    kgni_svn_revision @ 92, kgni_build_string @ 96);
layout!(gni_bi_desc_t, size 16, align 2,
    current_bw @ 0, current_aot_bw @ 2, current_norbs @ 4, flags @ 6, sys_def_bw @ 8,
    sys_def_aot_bw @ 10, cle_seqnum @ 12, hss_seqnum @ 14);

// Scalar typedefs and handles.
layout!(gni_return_t, size 4, align 4);
layout!(gni_cq_mode_t, size 4, align 4);
layout!(gni_cq_entry_t, size 8, align 8);
layout!(gni_error_mask_t, size 1, align 1);
layout!(gni_nic_handle_t, size 8, align 8);
layout!(gni_cdm_handle_t, size 8, align 8);
layout!(gni_ep_handle_t, size 8, align 8);
layout!(gni_cq_handle_t, size 8, align 8);
layout!(gni_err_handle_t, size 8, align 8);
layout!(gni_msgq_handle_t, size 8, align 8);
layout!(gni_ce_handle_t, size 8, align 8);
layout!(gni_cq_handler_t, size 8, align 8);
layout!(Option<gni_msgq_rcv_cb_func>, size 8, align 8);
