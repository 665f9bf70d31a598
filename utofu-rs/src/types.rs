//! C-visible types and constants (values from the ABI fact sheet).
#![allow(non_camel_case_types)]

pub type utofu_tni_id_t = u16;
pub type utofu_cq_id_t = u16;
pub type utofu_bg_id_t = u16;
pub type utofu_cmp_id_t = u16;
pub type utofu_vcq_hdl_t = usize;
pub type utofu_vcq_id_t = u64;
pub type utofu_vbg_id_t = u64;
pub type utofu_path_id_t = u8;
pub type utofu_stadd_t = u64;

pub const UTOFU_SUCCESS: i32 = 0;
pub const UTOFU_ERR_NOT_FOUND: i32 = -1;
pub const UTOFU_ERR_NOT_COMPLETED: i32 = -2;
pub const UTOFU_ERR_BUSY: i32 = -4;
pub const UTOFU_ERR_USED: i32 = -5;
pub const UTOFU_ERR_FULL: i32 = -6;
pub const UTOFU_ERR_NOT_AVAILABLE: i32 = -7;
pub const UTOFU_ERR_NOT_SUPPORTED: i32 = -8;
pub const UTOFU_ERR_TCQ_MEMORY: i32 = -130;
pub const UTOFU_ERR_TCQ_STADD: i32 = -131;
pub const UTOFU_ERR_TCQ_LENGTH: i32 = -132;
pub const UTOFU_ERR_MRQ_OTHER: i32 = -192;
pub const UTOFU_ERR_MRQ_PEER: i32 = -193;
pub const UTOFU_ERR_MRQ_LCL_MEMORY: i32 = -194;
pub const UTOFU_ERR_MRQ_RMT_MEMORY: i32 = -195;
pub const UTOFU_ERR_MRQ_LCL_STADD: i32 = -196;
pub const UTOFU_ERR_MRQ_RMT_STADD: i32 = -197;
pub const UTOFU_ERR_MRQ_LCL_LENGTH: i32 = -198;
pub const UTOFU_ERR_MRQ_RMT_LENGTH: i32 = -199;
pub const UTOFU_ERR_BARRIER_OTHER: i32 = -256;
pub const UTOFU_ERR_BARRIER_MISMATCH: i32 = -257;
pub const UTOFU_ERR_INVALID_ARG: i32 = -512;
pub const UTOFU_ERR_INVALID_POINTER: i32 = -513;
pub const UTOFU_ERR_INVALID_FLAGS: i32 = -514;
pub const UTOFU_ERR_INVALID_COORDS: i32 = -515;
pub const UTOFU_ERR_INVALID_PATH: i32 = -516;
pub const UTOFU_ERR_INVALID_TNI_ID: i32 = -517;
pub const UTOFU_ERR_INVALID_CQ_ID: i32 = -518;
pub const UTOFU_ERR_INVALID_BG_ID: i32 = -519;
pub const UTOFU_ERR_INVALID_CMP_ID: i32 = -520;
pub const UTOFU_ERR_INVALID_VCQ_HDL: i32 = -521;
pub const UTOFU_ERR_INVALID_VCQ_ID: i32 = -522;
pub const UTOFU_ERR_INVALID_VBG_ID: i32 = -523;
pub const UTOFU_ERR_INVALID_PATH_ID: i32 = -524;
pub const UTOFU_ERR_INVALID_STADD: i32 = -525;
pub const UTOFU_ERR_INVALID_ADDRESS: i32 = -526;
pub const UTOFU_ERR_INVALID_SIZE: i32 = -527;
pub const UTOFU_ERR_INVALID_STAG: i32 = -528;
pub const UTOFU_ERR_INVALID_EDATA: i32 = -529;
pub const UTOFU_ERR_INVALID_NUMBER: i32 = -530;
pub const UTOFU_ERR_INVALID_OP: i32 = -531;
pub const UTOFU_ERR_INVALID_DESC: i32 = -532;
pub const UTOFU_ERR_INVALID_DATA: i32 = -533;
pub const UTOFU_ERR_OUT_OF_RESOURCE: i32 = -640;
pub const UTOFU_ERR_OUT_OF_MEMORY: i32 = -641;
pub const UTOFU_ERR_FATAL: i32 = -768;

pub const UTOFU_ONESIDED_CAP_FLAG_ARMW: u64 = 1 << 1;
pub const UTOFU_ONESIDED_CAP_ARMW_ALL: u64 = 0x3f;
pub const UTOFU_BARRIER_CAP_REDUCE_ALL: u64 = 0x1fe;

pub const UTOFU_VCQ_FLAG_THREAD_SAFE: u64 = 1 << 0;
pub const UTOFU_VCQ_FLAG_EXCLUSIVE: u64 = 1 << 1;
pub const UTOFU_VCQ_FLAG_SESSION_MODE: u64 = 1 << 2;
pub const UTOFU_VBG_FLAG_THREAD_SAFE: u64 = 1 << 0;
pub const UTOFU_REG_MEM_FLAG_READ_ONLY: u64 = 1 << 0;

pub const UTOFU_ONESIDED_FLAG_STRONG_ORDER: u64 = 1 << 0;
pub const UTOFU_ONESIDED_FLAG_PACKET_RESPONSE: u64 = 1 << 1;
pub const UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE: u64 = 1 << 2;
pub const UTOFU_ONESIDED_FLAG_PADDING: u64 = 1 << 3;
pub const UTOFU_ONESIDED_FLAG_CACHE_INJECTION: u64 = 1 << 5;
pub const UTOFU_ONESIDED_FLAG_DELAY_START: u64 = 1 << 8;
pub const UTOFU_ONESIDED_FLAG_TCQ_NOTICE: u64 = 1 << 14;
pub const UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE: u64 = 1 << 15;
/// SPS (bits 24-27) and path id (bits 28-35) fields.
pub const SPS_SHIFT: u32 = 24;
pub const PATH_SHIFT: u32 = 28;
pub const ONESIDED_FLAGS_KNOWN: u64 = UTOFU_ONESIDED_FLAG_STRONG_ORDER
    | UTOFU_ONESIDED_FLAG_PACKET_RESPONSE
    | UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE
    | UTOFU_ONESIDED_FLAG_PADDING
    | UTOFU_ONESIDED_FLAG_CACHE_INJECTION
    | UTOFU_ONESIDED_FLAG_DELAY_START
    | UTOFU_ONESIDED_FLAG_TCQ_NOTICE
    | UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE
    | (0xf << SPS_SHIFT)
    | (0xff << PATH_SHIFT);

pub const UTOFU_ARMW_OP_SWAP: i32 = 1;
pub const UTOFU_ARMW_OP_ADD: i32 = 2;
pub const UTOFU_ARMW_OP_XOR: i32 = 3;
pub const UTOFU_ARMW_OP_AND: i32 = 4;
pub const UTOFU_ARMW_OP_OR: i32 = 5;

pub const UTOFU_REDUCE_OP_BARRIER: i32 = 1;
pub const UTOFU_REDUCE_OP_BAND: i32 = 2;
pub const UTOFU_REDUCE_OP_BOR: i32 = 3;
pub const UTOFU_REDUCE_OP_BXOR: i32 = 4;
pub const UTOFU_REDUCE_OP_MAX: i32 = 5;
pub const UTOFU_REDUCE_OP_MAXLOC: i32 = 6;
pub const UTOFU_REDUCE_OP_SUM: i32 = 7;
pub const UTOFU_REDUCE_OP_BFPSUM: i32 = 8;

pub const UTOFU_MRQ_TYPE_LCL_PUT: u8 = 0;
pub const UTOFU_MRQ_TYPE_RMT_PUT: u8 = 1;
pub const UTOFU_MRQ_TYPE_LCL_GET: u8 = 2;
pub const UTOFU_MRQ_TYPE_RMT_GET: u8 = 3;
pub const UTOFU_MRQ_TYPE_LCL_ARMW: u8 = 4;
pub const UTOFU_MRQ_TYPE_RMT_ARMW: u8 = 5;

pub const UTOFU_VBG_ID_NULL: u64 = u64::MAX;
pub const UTOFU_PATH_COORD_NULL: u8 = 0xff;

#[repr(C)]
pub struct utofu_onesided_caps {
    pub flags: u64,
    pub armw_ops: u64,
    pub num_cmp_ids: u32,
    pub num_reserved_stags: u32,
    pub cache_line_size: usize,
    pub stag_address_alignment: usize,
    pub max_toq_desc_size: usize,
    pub max_putget_size: usize,
    pub max_piggyback_size: usize,
    pub max_edata_size: usize,
    pub max_mtu: usize,
    pub max_gap: usize,
}

#[repr(C)]
pub struct utofu_barrier_caps {
    pub flags: u64,
    pub reduce_ops: u64,
    pub max_uint64_reduction: usize,
    pub max_double_reduction: usize,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct utofu_vbg_setting {
    pub vbg_id: u64,
    pub src_lcl_vbg_id: u64,
    pub src_rmt_vbg_id: u64,
    pub dst_lcl_vbg_id: u64,
    pub dst_rmt_vbg_id: u64,
    pub dst_path_coords: [u8; 3],
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct utofu_mrq_notice {
    pub notice_type: u8,
    pub padding1: [u8; 7],
    pub vcq_id: u64,
    pub edata: u64,
    pub rmt_value: u64,
    pub lcl_stadd: u64,
    pub rmt_stadd: u64,
    pub reserved: [u64; 2],
}

const _: () = assert!(std::mem::size_of::<utofu_onesided_caps>() == 88);
const _: () = assert!(std::mem::size_of::<utofu_barrier_caps>() == 32);
const _: () = assert!(std::mem::size_of::<utofu_vbg_setting>() == 48);
const _: () = assert!(std::mem::size_of::<utofu_mrq_notice>() == 64);

/// The machine presented (the guide's chapter 6 values).
pub const NUM_TNIS: u16 = 6;
/// CQ ids per TNI: 0-11 (Fugaku's assignment uses CQ numbers up to 10).
pub const CQS_PER_TNI: u16 = 12;
pub const CMPS_PER_CQ: u16 = 8;
pub const START_BGS: u16 = 16;
pub const BGS_PER_TNI: u16 = 48;
pub const NUM_STAGS: u32 = 256;
pub const STAG_ALIGN: usize = 256;
pub const MAX_TOQ_DESC: usize = 64;
pub const MAX_PUTGET: usize = (1 << 24) - 1;
pub const MAX_PIGGYBACK: usize = 32;
pub const MAX_EDATA: u64 = 255;
pub const MAX_MTU: usize = 1920;
pub const MAX_GAP: usize = 255;
pub const MAX_U64_REDUCTION: usize = 6;
pub const MAX_DOUBLE_REDUCTION: usize = 3;
/// TOQ (= TCQ) depth of one VCQ.
pub const TOQ_DEPTH: usize = 1024;
