//! The C types of `dmapp.h`, mirrored with `repr(C)`; each proves its size
//! against the ABI fact sheet (x86-64 LP64) with a const assertion.

use std::ffi::{c_int, c_void};

/// `dmapp_return_t` (a C enum: passed as `int`).
pub type Rc = c_int;
pub const DMAPP_RC_SUCCESS: Rc = 0;
pub const DMAPP_RC_INVALID_PARAM: Rc = 1;
pub const DMAPP_RC_ALIGNMENT_ERROR: Rc = 2;
pub const DMAPP_RC_TRANSACTION_ERROR: Rc = 3;
pub const DMAPP_RC_RESOURCE_ERROR: Rc = 4;
pub const DMAPP_RC_PERMISSION_ERROR: Rc = 5;
pub const DMAPP_RC_NO_SPACE: Rc = 6;
pub const DMAPP_RC_NOT_DONE: Rc = 7;
pub const DMAPP_RC_NOT_SUPPORTED: Rc = 8;
pub const DMAPP_RC_NOT_FOUND: Rc = 9;
pub const DMAPP_RC_BUSY: Rc = 10;
pub const DMAPP_RC_NOT_USED: Rc = 11;

/// `dmapp_type_t` values; the largest element type is 0.
pub const DMAPP_DQW: c_int = 0;
pub const DMAPP_QW: c_int = 1;
pub const DMAPP_DW: c_int = 2;
pub const DMAPP_BYTE: c_int = 3;

pub const DMAPP_ROUTING_ADAPTIVE: u8 = 2;
pub const DMAPP_ROUTING_DETERMINISTIC: u8 = 1;
pub const DMAPP_PI_ORDERING_RELAXED: u8 = 2;

pub const DMAPP_OFFLOAD_THRESHOLD: u32 = 4096;
pub const DMAPP_MIN_OUTSTANDING_NB: u32 = 5;
pub const DMAPP_DEF_OUTSTANDING_NB: u32 = 512;
pub const DMAPP_MAX_OUTSTANDING_NB: u32 = 2048;

/// Queue attributes and flags (later DMAPP releases; values chosen here, see dmapp.h).
pub const DMAPP_QUEUE_ASYNC_PROGRESS: u64 = 0x1;
pub const DMAPP_QUEUE_DEFAULT_DEPTH: u32 = 128;
pub const DMAPP_QUEUE_MAX_DEPTH: u32 = 4096;
pub const DMAPP_QUEUE_MAX_NELEMS: u32 = 128;
pub const DMAPP_QUEUE_DEFAULT_NELEMS: u32 = 128;

/// What `dmapp_jobinfo_t.version` reports: DMAPP 3.1 (the documented release) as
/// 0x00MMmmrr, and `hw_version`: `DMAPP_GNI_HW_MAJOR_GEMINI` (both chosen here, see dmapp.h).
pub const DMAPP_JOB_VERSION: c_int = 0x0003_0100;
pub const DMAPP_GNI_HW_MAJOR_GEMINI: c_int = 1;

/// `dmapp_pe_t`.
pub type Pe = c_int;

/// `gni_mem_handle_t`: the words of [`softnic_fabric::mem::CrayHandle`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct GniMemHandle {
    pub qword1: u64,
    pub qword2: u64,
}

/// `dmapp_seg_desc_t`.  `flags` and `reserved` are ours and always 0/NULL: a
/// descriptor must mean the same thing after a byte copy to another PE, so
/// everything that matters is in `addr`, `len` and `memhndl`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SegDesc {
    pub addr: *mut c_void,
    pub len: usize,
    pub memhndl: GniMemHandle,
    pub flags: u16,
    /// The C struct's padding, named so that it is always written as zeros: programs
    /// byte-copy descriptors to other PEs (PMI_Allgather), and a copy of undefined
    /// padding bytes is what memcheck reports.
    pub pad: [u8; 6],
    pub reserved: *mut c_void,
}

impl SegDesc {
    pub const EMPTY: SegDesc = SegDesc::new(std::ptr::null_mut(), 0, GniMemHandle { qword1: 0, qword2: 0 });

    /// A descriptor of ours: `flags`, padding and `reserved` zero.
    pub const fn new(addr: *mut c_void, len: usize, memhndl: GniMemHandle) -> SegDesc {
        SegDesc { addr, len, memhndl, flags: 0, pad: [0; 6], reserved: std::ptr::null_mut() }
    }
}

const _: () = assert!(std::mem::size_of::<SegDesc>() == 48 && std::mem::offset_of!(SegDesc, reserved) == 40);

/// `dmapp_jobinfo_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct JobInfo {
    pub version: c_int,
    pub hw_version: c_int,
    pub npes: c_int,
    pub pe: Pe,
    pub data_seg: SegDesc,
    pub sheap_seg: SegDesc,
}

/// `dmapp_rma_attrs_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RmaAttrs {
    pub max_outstanding_nb: u32,
    pub offload_threshold: u32,
    pub put_relaxed_ordering: u8,
    pub get_relaxed_ordering: u8,
    pub max_concurrency: u8,
}

/// `dmapp_rma_attrs_ext_t`.  The queue fields of later DMAPP releases are carved out of
/// the first 12 of the RB-3.1 header's 32 `unused` bytes (dmapp.h overlays them on
/// `unused` in a union), so the size and every older offset stay as they were.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_snake_case)]
pub struct RmaAttrsExt {
    pub max_outstanding_nb: u32,
    pub offload_threshold: u32,
    pub put_relaxed_ordering: u8,
    pub get_relaxed_ordering: u8,
    pub max_concurrency: u8,
    pub PI_ordering: u8,
    pub queue_depth: u32,
    pub queue_nelems: u32,
    pub queue_flags: u32,
    /// The rest of `unused`: always reported as zeros.
    pub reserved: [u8; 20],
}

impl RmaAttrsExt {
    /// What `dmapp_get_rma_attrs*` report before `dmapp_init*` (programs read these,
    /// change a field and pass them to `dmapp_init_ext`): the documented defaults, and
    /// the queue defaults chosen here.
    pub const DEFAULTS: RmaAttrsExt = RmaAttrsExt {
        max_outstanding_nb: DMAPP_DEF_OUTSTANDING_NB,
        offload_threshold: DMAPP_OFFLOAD_THRESHOLD,
        put_relaxed_ordering: DMAPP_ROUTING_DETERMINISTIC,
        get_relaxed_ordering: DMAPP_ROUTING_ADAPTIVE,
        max_concurrency: 1,
        PI_ordering: 0,
        queue_depth: DMAPP_QUEUE_DEFAULT_DEPTH,
        queue_nelems: DMAPP_QUEUE_DEFAULT_NELEMS,
        queue_flags: 0,
        reserved: [0; 20],
    };
}

/// `dmapp_syncid_handle_t`: an opaque pointer-sized token (see `sync.rs`).
pub type SyncHandle = *mut c_void;

const _: () = assert!(std::mem::size_of::<GniMemHandle>() == 16);
const _: () = assert!(std::mem::size_of::<SegDesc>() == 48 && std::mem::align_of::<SegDesc>() == 8);
const _: () = assert!(std::mem::offset_of!(SegDesc, flags) == 32 && std::mem::offset_of!(SegDesc, reserved) == 40);
const _: () = assert!(std::mem::size_of::<JobInfo>() == 112 && std::mem::offset_of!(JobInfo, sheap_seg) == 64);
const _: () = assert!(std::mem::size_of::<RmaAttrs>() == 12 && std::mem::align_of::<RmaAttrs>() == 4);
const _: () = assert!(std::mem::size_of::<RmaAttrsExt>() == 44 && std::mem::align_of::<RmaAttrsExt>() == 4);
const _: () = assert!(std::mem::offset_of!(RmaAttrsExt, PI_ordering) == 11 && std::mem::offset_of!(RmaAttrsExt, queue_depth) == 12);
const _: () = assert!(std::mem::offset_of!(RmaAttrsExt, queue_nelems) == 16 && std::mem::offset_of!(RmaAttrsExt, queue_flags) == 20);

/// Element size of a `dmapp_type_t`, or None for a value outside the enum.
pub fn elem_size(ty: c_int) -> Option<usize> {
    match ty {
        DMAPP_DQW => Some(16),
        DMAPP_QW => Some(8),
        DMAPP_DW => Some(4),
        DMAPP_BYTE => Some(1),
        _ => None,
    }
}
