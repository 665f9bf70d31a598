//! The C-side types and constants of sisci_api.h / sisci_types.h / sisci_error.h.
//! Values must match the headers (include/); `consts.rs` exports them as data symbols
//! and a generated C test compares every header macro with its symbol.

#![allow(non_upper_case_globals, non_camel_case_types, dead_code)]

use std::ffi::{c_char, c_uint, c_void};

/// `sci_error_t` (an int-sized enum; two names share 0x4000090C, so it is not a Rust enum).
pub type SciErr = c_uint;

pub const SCI_ERR_OK: SciErr = 0x0000_0000;
pub const SCI_ERR_BUSY: SciErr = 0x4000_0900;
pub const SCI_ERR_FLAG_NOT_IMPLEMENTED: SciErr = 0x4000_0901;
pub const SCI_ERR_ILLEGAL_FLAG: SciErr = 0x4000_0902;
pub const SCI_ERR_NOSPC: SciErr = 0x4000_0904;
pub const SCI_ERR_API_NOSPC: SciErr = 0x4000_0905;
pub const SCI_ERR_HW_NOSPC: SciErr = 0x4000_0906;
pub const SCI_ERR_NOT_IMPLEMENTED: SciErr = 0x4000_0907;
pub const SCI_ERR_ILLEGAL_ADAPTERNO: SciErr = 0x4000_0908;
pub const SCI_ERR_NO_SUCH_ADAPTERNO: SciErr = 0x4000_0909;
pub const SCI_ERR_TIMEOUT: SciErr = 0x4000_090A;
pub const SCI_ERR_OUT_OF_RANGE: SciErr = 0x4000_090B;
pub const SCI_ERR_NO_SUCH_SEGMENT: SciErr = 0x4000_090C;
pub const SCI_ERR_NO_SUCH_INTNO: SciErr = 0x4000_090C;
pub const SCI_ERR_ILLEGAL_NODEID: SciErr = 0x4000_090D;
pub const SCI_ERR_CONNECTION_REFUSED: SciErr = 0x4000_090E;
pub const SCI_ERR_SEGMENT_NOT_CONNECTED: SciErr = 0x4000_090F;
pub const SCI_ERR_SIZE_ALIGNMENT: SciErr = 0x4000_0910;
pub const SCI_ERR_OFFSET_ALIGNMENT: SciErr = 0x4000_0911;
pub const SCI_ERR_ILLEGAL_PARAMETER: SciErr = 0x4000_0912;
pub const SCI_ERR_MAX_ENTRIES: SciErr = 0x4000_0913;
pub const SCI_ERR_SEGMENT_NOT_PREPARED: SciErr = 0x4000_0914;
pub const SCI_ERR_ILLEGAL_ADDRESS: SciErr = 0x4000_0915;
pub const SCI_ERR_ILLEGAL_OPERATION: SciErr = 0x4000_0916;
pub const SCI_ERR_ILLEGAL_QUERY: SciErr = 0x4000_0917;
pub const SCI_ERR_SEGMENTID_USED: SciErr = 0x4000_0918;
pub const SCI_ERR_SYSTEM: SciErr = 0x4000_0919;
pub const SCI_ERR_CANCELLED: SciErr = 0x4000_091A;
pub const SCI_ERR_NOT_CONNECTED: SciErr = 0x4000_091B;
pub const SCI_ERR_NOT_AVAILABLE: SciErr = 0x4000_091C;
pub const SCI_ERR_INCONSISTENT_VERSIONS: SciErr = 0x4000_091D;
pub const SCI_ERR_COND_INT_RACE_PROBLEM: SciErr = 0x4000_091E;
pub const SCI_ERR_OVERFLOW: SciErr = 0x4000_091F;
pub const SCI_ERR_NOT_INITIALIZED: SciErr = 0x4000_0920;
pub const SCI_ERR_ACCESS: SciErr = 0x4000_0921;
pub const SCI_ERR_NOT_SUPPORTED: SciErr = 0x4000_0922;
pub const SCI_ERR_DEPRECATED: SciErr = 0x4000_0923;
pub const SCI_ERR_DMA_NOT_AVAILABLE: SciErr = 0x4000_0924;
pub const SCI_ERR_DMA_DISABLED: SciErr = 0x4000_0925;
pub const SCI_ERR_NO_SUCH_NODEID: SciErr = 0x4000_0A00;
pub const SCI_ERR_NODE_NOT_RESPONDING: SciErr = 0x4000_0A02;
pub const SCI_ERR_NO_REMOTE_LINK_ACCESS: SciErr = 0x4000_0A04;
pub const SCI_ERR_NO_LINK_ACCESS: SciErr = 0x4000_0A05;
pub const SCI_ERR_TRANSFER_FAILED: SciErr = 0x4000_0A06;
pub const SCI_ERR_EWOULD_BLOCK: SciErr = 0x4000_0B01;
pub const SCI_ERR_SEMAPHORE_COUNT_EXCEEDED: SciErr = 0x4000_0B06;
pub const SCI_ERR_IRQL_ILLEGAL: SciErr = 0x4000_0B02;
pub const SCI_ERR_REMOTE_BUSY: SciErr = 0x4000_0B00;
pub const SCI_ERR_LOCAL_BUSY: SciErr = 0x4000_0B03;
pub const SCI_ERR_ALL_BUSY: SciErr = 0x4000_0B04;
pub const SCI_ERR_NO_SUCH_FDID: SciErr = 0x4000_0B05;

// sci_segment_cb_reason_t
pub const SCI_CB_CONNECT: c_uint = 1;
pub const SCI_CB_DISCONNECT: c_uint = 2;
pub const SCI_CB_NOT_OPERATIONAL: c_uint = 3;
pub const SCI_CB_OPERATIONAL: c_uint = 4;
pub const SCI_CB_LOST: c_uint = 5;
pub const SCI_CB_FATAL: c_uint = 6;

// sci_dma_queue_state_t
pub const SCI_DMAQUEUE_IDLE: c_uint = 0;
pub const SCI_DMAQUEUE_GATHER: c_uint = 1;
pub const SCI_DMAQUEUE_POSTED: c_uint = 2;
pub const SCI_DMAQUEUE_DONE: c_uint = 3;
pub const SCI_DMAQUEUE_ABORTED: c_uint = 4;
pub const SCI_DMAQUEUE_ERROR: c_uint = 5;

// sci_dma_type_t
pub const SCI_DMA_TYPE_DONTCARE: c_uint = 1;
pub const SCI_DMA_TYPE_ADAPTER: c_uint = 2;
pub const SCI_DMA_TYPE_GLOBAL: c_uint = 3;
pub const SCI_DMA_TYPE_SYSTEM: c_uint = 4;
pub const SCI_DMA_TYPE_TRANSPARENT: c_uint = 5;
pub const SCI_DMA_TYPE_SLAVE: c_uint = 6;

// sci_sequence_status_t
pub const SCI_SEQ_OK: c_uint = 0;
pub const SCI_SEQ_RETRIABLE: c_uint = 1;
pub const SCI_SEQ_NOT_RETRIABLE: c_uint = 2;
pub const SCI_SEQ_PENDING: c_uint = 3;

// sci_callback_action_t
pub const SCI_CALLBACK_CANCEL: c_uint = 1;
pub const SCI_CALLBACK_CONTINUE: c_uint = 2;

pub const MAX_CB_REASON: c_uint = SCI_CB_LOST;
pub const DIS_DMA_MAX_VECLEN: usize = 256;

// ---- flags (see sisci_api.h: values are per function) ----
pub const SCI_FLAG_USE_CALLBACK: c_uint = 0x0000_0001;
pub const SCI_FLAG_EMPTY: c_uint = 0x0000_0002;
pub const SCI_FLAG_PRIVATE: c_uint = 0x0000_0004;
pub const SCI_FLAG_DMA_GLOBAL: c_uint = 0x0000_0040;
pub const SCI_FLAG_ALLOW_UNICAST: c_uint = 0x0000_0080;
pub const SCI_FLAG_BROADCAST: c_uint = 0x0004_0000;
pub const SCI_FLAG_AUTO_ID: c_uint = 0x2000_0000;
pub const SCI_FLAG_DMA_SOURCE_ONLY: c_uint = 0x0000_0008;
pub const SCI_FLAG_FORCE_REMOVE: c_uint = 0x0000_0020;
pub const SCI_FLAG_NOTIFY: c_uint = 0x0008_0000;
pub const SCI_FLAG_FORCE_DISCONNECT: c_uint = 0x0040_0000;
pub const SCI_FLAG_ASYNCHRONOUS_CONNECT: c_uint = 0x0002_0000;
pub const SCI_FLAG_FIXED_MAP_ADDR: c_uint = 0x0000_0001;
pub const SCI_FLAG_READONLY_MAP: c_uint = 0x0000_0002;
pub const SCI_FLAG_LOCK_OPERATION: c_uint = 0x0000_0004;
pub const SCI_FLAG_CONDITIONAL_INTERRUPT_MAP: c_uint = 0x0000_0008;
pub const SCI_FLAG_UNCONDITIONAL_DATA_INTERRUPT_MAP: c_uint = 0x0000_0010;
pub const SCI_FLAG_IO_MAP_IOSPACE: c_uint = 0x0000_0080;
pub const SCI_FLAG_READ_PREFETCH_AGGR_HOLD_MAP: c_uint = 0x0000_0100;
pub const SCI_FLAG_READ_PREFETCH_NO_HOLD_MAP: c_uint = 0x0000_0200;
pub const SCI_FLAG_DMOVE_MAP: c_uint = 0x0000_0400;
pub const SCI_FLAG_NO_MEMORY_LOOPBACK: c_uint = 0x0000_0800;
pub const SCI_FLAG_NO_MEMORY_LOOPBACK_MAP: c_uint = 0x0000_0800;
pub const SCI_FLAG_WRITES_DISABLE_GATHER_MAP: c_uint = 0x0000_1000;
pub const SCI_FLAG_SHARED_MAP: c_uint = 0x0000_2000;
pub const SCI_FLAG_DISABLE_128_BYTES_PACKETS: c_uint = 0x0000_4000;
pub const SCI_FLAG_WRITE_BACK_CACHE_MAP: c_uint = 0x0800_0000;
pub const SCI_FLAG_BLOCK_READ: c_uint = 0x0000_8000;
pub const SCI_FLAG_ERROR_CHECK: c_uint = 0x0001_0000;
pub const SCI_FLAG_BLOCK_PAD_UP: c_uint = 0x0002_0000;
pub const SCI_FLAG_NO_FLUSH: c_uint = 0x0080_0000;
pub const SCI_FLAG_NO_STORE_BARRIER: c_uint = 0x4000_0000;
pub const SCI_FLAG_FAST_BARRIER: c_uint = 0x0000_8000;
pub const SCI_FLAG_FLUSH_CPU_BUFFERS_ONLY: c_uint = 0x8000_0000;
pub const SCI_FLAG_DMA_WAIT: c_uint = 0x0000_0004;
pub const SCI_FLAG_DMA_READ: c_uint = 0x0000_0010;
pub const SCI_FLAGSEG: c_uint = 0x0000_0010;
pub const SCI_FLAG_DMA_PHDMA: c_uint = 0x0000_0020;
pub const SCI_FLAG_DMA_SYSDMA: c_uint = 0x0000_0100;
pub const SCI_FLAG_DMA_USER_MEM: c_uint = 0x0000_0200;
pub const SCI_FLAG_DMA_ADAPTER: c_uint = 0x0000_0800;
pub const SCI_FLAG_DMA_IO2MEM: c_uint = 0x0008_0000;
pub const SCI_FLAG_DMA_MEM2IO: c_uint = 0x0040_0000;
pub const SCI_FLAG_DMA_POST: c_uint = 0x0008_0000;
pub const SCI_FLAG_DMA_RESET: c_uint = 0x0040_0000;
pub const SCI_FLAG_DMA_CHANNEL_SHARED: c_uint = 0x0000_0001;
pub const SCI_FLAG_LOCK_USER_MEM: c_uint = 0x0000_0400;
pub const SCI_FLAG_CONTIG_USER_MEM: c_uint = 0x0000_8000;
pub const SCI_FLAG_READONLY_USER_MEM: c_uint = 0x0001_0000;
pub const SCI_FLAG_PHYSICAL: c_uint = 0x0000_1000;
pub const SCI_FLAG_CUDA_BUFFER: c_uint = 0x0000_2000;
pub const SCI_FLAG_SCIF_BUFFER: c_uint = 0x0000_4000;
pub const SCI_FLAG_FIXED_INTNO: c_uint = 0x0000_0002;
pub const SCI_FLAG_SHARED_INT: c_uint = 0x0000_0004;
pub const SCI_FLAG_CONDITIONAL_INTERRUPT: c_uint = 0x0000_0008;
pub const SCI_FLAG_COUNTING_INT: c_uint = 0x0000_0020;
pub const SCI_FLAG_SHARE_EXTERNAL: c_uint = 0x0000_0040;
pub const SCI_FLAG_THREAD_SAFE: c_uint = 0x0080_0000;
pub const SCI_FLAG_PCIE_REQUESTER_GLOBAL: c_uint = 0x0000_0001;
pub const SCI_FLAG_CACHE_FLUSH: c_uint = 0x0010_0000;
pub const SCI_FLAG_CACHE_INVALIDATE: c_uint = 0x0020_0000;
pub const SCI_FLAG_EXCLUSIVE: c_uint = 0x0100_0000;
pub const SCI_FLAG_DEVICE_SIDE_ONLY: c_uint = 0x0200_1000;
pub const SCI_FLAG_LOCAL_ONLY: c_uint = 0x0200_2000;
pub const SCI_FLAG_DEVICE_PREFER_BANDWIDTH: c_uint = 0x0400_0001;
pub const SCI_FLAG_HOST_PREFER_BANDWIDTH: c_uint = 0x0400_0002;
pub const SCI_FLAG_SPECIFY_PATH: c_uint = 0x1000_0000;
pub const SCI_FLAG_SPECIFY_SLOT: c_uint = 0x2000_0000;

pub const SCI_MEMTYPE_BAR: c_uint = 0x1;
pub const SCI_MEMTYPE_PRIVATE: c_uint = 0x2;
pub const SCI_MEMTYPE_SHARED: c_uint = 0x4;
pub const SCI_MEMACCESS_DEVICE_READ: c_uint = 0x01;
pub const SCI_MEMACCESS_DEVICE_WRITE: c_uint = 0x02;
pub const SCI_MEMACCESS_HOST_READ: c_uint = 0x04;
pub const SCI_MEMACCESS_HOST_WRITE: c_uint = 0x08;
pub const SCI_MEMACCESS_MULTIHOST_READ: c_uint = 0x14;
pub const SCI_MEMACCESS_MULTIHOST_WRITE: c_uint = 0x18;
pub const SCI_MEMACCESS_P2P_READ: c_uint = 0x21;
pub const SCI_MEMACCESS_P2P_WRITE: c_uint = 0x22;

pub const SCI_INFINITE_TIMEOUT: c_uint = 0xFFFF_FFFF;
pub const SCI_LOCAL_HOST: c_uint = 0xFFFF_FFFE;
pub const DIS_BROADCAST_NODEID_GROUP_ALL: c_uint = 252;
pub const SCI_DMA_CHANNEL_ID_DONTCARE: c_uint = 0xFFFF_FFFF;

// ---- SCIQuery ----
pub const SCI_Q_VENDORID: c_uint = 1;
pub const SCI_Q_API: c_uint = 2;
pub const SCI_Q_SISCI_DRIVER_VERSION: c_uint = 3;
pub const SCI_Q_ADAPTER: c_uint = 4;
pub const SCI_Q_SYSTEM: c_uint = 5;
pub const SCI_Q_DMA: c_uint = 6;
pub const SCI_Q_DEVICE: c_uint = 7;
pub const SCI_Q_LOCAL_SEGMENT: c_uint = 8;
pub const SCI_Q_REMOTE_SEGMENT: c_uint = 9;
pub const SCI_Q_MAP: c_uint = 10;

pub const SCI_Q_ADAPTER_DMA_SIZE_ALIGNMENT: c_uint = 0x101;
pub const SCI_Q_ADAPTER_DMA_OFFSET_ALIGNMENT: c_uint = 0x102;
pub const SCI_Q_ADAPTER_DMA_MTU: c_uint = 0x103;
pub const SCI_Q_ADAPTER_SUGGESTED_MIN_DMA_SIZE: c_uint = 0x104;
pub const SCI_Q_ADAPTER_SUGGESTED_MIN_BLOCK_SIZE: c_uint = 0x105;
pub const SCI_Q_ADAPTER_NODEID: c_uint = 0x106;
pub const SCI_Q_ADAPTER_SERIAL_NUMBER: c_uint = 0x107;
pub const SCI_Q_ADAPTER_CARD_TYPE: c_uint = 0x108;
pub const SCI_Q_ADAPTER_NUMBER_OF_STREAMS: c_uint = 0x109;
pub const SCI_Q_ADAPTER_STREAM_BUFFER_SIZE: c_uint = 0x10A;
pub const SCI_Q_ADAPTER_CONFIGURED: c_uint = 0x10B;
pub const SCI_Q_ADAPTER_NUMBER: c_uint = 0x10C;
pub const SCI_Q_ADAPTER_INSTANCE_NUMBER: c_uint = 0x10D;
pub const SCI_Q_ADAPTER_FIRMWARE_OK: c_uint = 0x10E;
pub const SCI_Q_ADAPTER_CONNECTED_TO_SWITCH: c_uint = 0x10F;
pub const SCI_Q_ADAPTER_LOCAL_SWITCH_TYPE: c_uint = 0x110;
pub const SCI_Q_ADAPTER_LOCAL_SWITCH_PORT_NUMBER: c_uint = 0x111;
pub const SCI_Q_ADAPTER_CONNECTED_TO_EXPECTED_SWITCH_PORT: c_uint = 0x112;
pub const SCI_Q_ADAPTER_ATT_PAGE_SIZE: c_uint = 0x113;
pub const SCI_Q_ADAPTER_ATT_NUMBER_OF_ENTRIES: c_uint = 0x114;
pub const SCI_Q_ADAPTER_ATT_AVAILABLE_ENTRIES: c_uint = 0x115;
pub const SCI_Q_ADAPTER_PHYS_MEM_NODEID: c_uint = 0x116;
pub const SCI_Q_ADAPTER_PHYS_MBX_NODEID: c_uint = 0x117;
pub const SCI_Q_ADAPTER_MODE: c_uint = 0x118;
pub const SCI_Q_ADAPTER_IO_BUS_FREQUENCY: c_uint = 0x119;
pub const SCI_Q_ADAPTER_DATAINT_MAX_LENGTH: c_uint = 0x11A;
pub const SCI_Q_ADAPTER_MCAST_MAX_GROUPS: c_uint = 0x11B;
pub const SCI_Q_ADAPTER_BDF: c_uint = 0x11C;
pub const SCI_Q_ADAPTER_LINK_OPERATIONAL: c_uint = 0x11D;
pub const SCI_Q_ADAPTER_LINK_WIDTH: c_uint = 0x11E;
pub const SCI_Q_ADAPTER_LINK_SPEED: c_uint = 0x11F;
pub const SCI_Q_ADAPTER_LINK_UPTIME: c_uint = 0x120;
pub const SCI_Q_ADAPTER_LINK_DOWNTIME: c_uint = 0x121;
pub const SCI_Q_ADAPTER_LINK_CABLE_INSERTED: c_uint = 0x122;
pub const SCI_Q_ADAPTER_LINK_ENABLED: c_uint = 0x123;
pub const SCI_Q_ADAPTER_LINK_PARTNER_PORT_NO: c_uint = 0x124;
pub const SCI_Q_ADAPTER_NUMBER_OF_LINKS: c_uint = 0x125;
pub const SCI_Q_ADAPTER_HW_LINK_STATUS_IS_OK: c_uint = 0x126;
pub const SCI_Q_ADAPTER_PHYS_LINK_PORT_NODEID: c_uint = 0x127;
pub const SCI_Q_ADAPTER_SCI_LINK_FREQUENCY: c_uint = 0x128;
pub const SCI_Q_ADAPTER_B_LINK_FREQUENCY: c_uint = 0x129;

pub const SCI_Q_SYSTEM_CPU_CACHE_LINE_SIZE: c_uint = 0x201;
pub const SCI_Q_SYSTEM_HOSTBRIDGE: c_uint = 0x202;
pub const SCI_Q_SYSTEM_WRITE_POSTING_ENABLED: c_uint = 0x203;
pub const SCI_Q_SYSTEM_WRITE_COMBINING_ENABLED: c_uint = 0x204;

pub const SCI_Q_LOCAL_SEGMENT_IOADDR: c_uint = 0x301;
pub const SCI_Q_LOCAL_SEGMENT_VIRTUAL_KERNEL_ADDR: c_uint = 0x302;
pub const SCI_Q_LOCAL_SEGMENT_PHYS_ADDR: c_uint = 0x303;
pub const SCI_Q_REMOTE_SEGMENT_IOADDR: c_uint = 0x401;
pub const SCI_Q_MAP_MAPPED_TO_LOCAL_TARGET: c_uint = 0x501;
pub const SCI_Q_MAP_QUERY_REMOTE_MAPPED_TO_LOCAL_TARGET: c_uint = 0x502;
pub const SCI_Q_MAP_PHYS_ADDR: c_uint = 0x503;
pub const SCI_Q_MAP_IOADDR: c_uint = 0x504;
pub const SCI_Q_DMA_AVAILABLE: c_uint = 0x601;
pub const SCI_Q_DMA_CAPABILITIES: c_uint = 0x602;
pub const SCI_Q_DEVICE_INFO: c_uint = 0x701;

pub const HOSTBRIDGE_NOT_AVAILABLE: c_uint = 0;
pub const HOSTBRIDGE_UNKNOWN: c_uint = 1;
pub const HOSTBRIDGE_440FX: c_uint = 2;
pub const HOSTBRIDGE_440LX: c_uint = 3;
pub const HOSTBRIDGE_440BX_A: c_uint = 4;
pub const HOSTBRIDGE_440BX_B: c_uint = 5;
pub const HOSTBRIDGE_440GX: c_uint = 6;
pub const HOSTBRIDGE_450KX: c_uint = 7;
pub const HOSTBRIDGE_430NX: c_uint = 8;
pub const HOSTBRIDGE_450NX: c_uint = 9;
pub const HOSTBRIDGE_450NX_MICO: c_uint = 10;
pub const HOSTBRIDGE_450NX_PXB: c_uint = 11;
pub const HOSTBRIDGE_I810: c_uint = 12;
pub const HOSTBRIDGE_I810_DC100: c_uint = 13;
pub const HOSTBRIDGE_I810E: c_uint = 14;
pub const HOSTBRIDGE_I815: c_uint = 15;
pub const HOSTBRIDGE_I840: c_uint = 16;
pub const HOSTBRIDGE_I850: c_uint = 17;
pub const HOSTBRIDGE_I860: c_uint = 18;
pub const HOSTBRIDGE_VIA_KT133: c_uint = 19;
pub const HOSTBRIDGE_VIA_KX133: c_uint = 20;
pub const HOSTBRIDGE_VIA_APOLLO_PRO_133A: c_uint = 21;
pub const HOSTBRIDGE_VIA_APOLLO_PRO_266: c_uint = 22;
pub const HOSTBRIDGE_AMD_760_MP: c_uint = 23;
pub const HOSTBRIDGE_SERVERWORKS_HE: c_uint = 24;
pub const HOSTBRIDGE_SERVERWORKS_HE_B: c_uint = 25;
pub const HOSTBRIDGE_SERVERWORKS_LE: c_uint = 26;
pub const HOSTBRIDGE_WRITE_POSTING_DISABLED: c_uint = 0x100;
pub const HOSTBRIDGE_WRITE_POSTING_ENABLED: c_uint = 0x101;

// ---- handles: opaque pointer-sized values (see handles.rs) ----
pub type Handle = usize;

// ---- callbacks ----
pub type CbLocalSegment = Option<unsafe extern "C" fn(arg: *mut c_void, segment: Handle, reason: c_uint, node: c_uint, adapter: c_uint, error: SciErr) -> c_uint>;
pub type CbRemoteSegment = Option<unsafe extern "C" fn(arg: *mut c_void, segment: Handle, reason: c_uint, status: SciErr) -> c_uint>;
pub type CbDma = Option<unsafe extern "C" fn(arg: *mut c_void, queue: Handle, status: SciErr) -> c_uint>;
pub type CbInterrupt = Option<unsafe extern "C" fn(arg: *mut c_void, interrupt: Handle, status: SciErr) -> c_uint>;
pub type CbDataInterrupt = Option<unsafe extern "C" fn(arg: *mut c_void, interrupt: Handle, data: *mut c_void, length: c_uint, status: SciErr) -> c_uint>;
pub type CbDevice = Option<unsafe extern "C" fn(arg: *mut c_void, device: Handle, status: SciErr) -> c_uint>;
pub type CbBlockTransfer = Option<unsafe extern "C" fn(arg: *mut c_void, block: Handle, status: SciErr) -> i32>;

// ---- structs ----
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DisDmaVec {
    pub size: c_uint,
    pub local_offset: c_uint,
    pub remote_offset: c_uint,
    pub flags: c_uint,
}
const _: () = assert!(std::mem::size_of::<DisDmaVec>() == 16);

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SciAddress {
    pub node_id: u16,
    pub offs_hi: u16,
    pub offs_lo: c_uint,
}
const _: () = assert!(std::mem::size_of::<SciAddress>() == 8);

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DmaCapabilities {
    pub num_channels: c_uint,
    pub max_transfer_size: c_uint,
    pub max_vector_length: c_uint,
    pub support_mem2io: c_uint,
    pub support_io2mem: c_uint,
    pub support_io2io: c_uint,
    pub min_align_bytes: c_uint,
    pub suggested_align_bytes: c_uint,
}
const _: () = assert!(std::mem::size_of::<DmaCapabilities>() == 32);

#[repr(C)]
pub struct QueryString {
    pub str_: *mut c_char,
    pub length: c_uint,
}
const _: () = assert!(std::mem::size_of::<QueryString>() == 16);

#[repr(C)]
pub struct QueryAdapter {
    pub local_adapter_no: c_uint,
    pub port_no: c_uint,
    pub subcommand: c_uint,
    pub data: *mut c_void,
}
const _: () = assert!(std::mem::size_of::<QueryAdapter>() == 24 && std::mem::offset_of!(QueryAdapter, data) == 16);

#[repr(C)]
pub struct QuerySystem {
    pub subcommand: c_uint,
    pub data: *mut c_void,
}
const _: () = assert!(std::mem::size_of::<QuerySystem>() == 16);

#[repr(C)]
pub struct QueryDma {
    pub local_adapter_no: c_uint,
    pub subcommand: c_uint,
    pub data: *mut c_void,
}
const _: () = assert!(std::mem::size_of::<QueryDma>() == 16 && std::mem::offset_of!(QueryDma, data) == 8);

/// `sci_query_local_segment_t` and `sci_query_remote_segment_t` (same layout).
#[repr(C)]
pub struct QuerySegment {
    pub segment: Handle,
    pub subcommand: c_uint,
    pub ioaddr: u64,
}
const _: () = assert!(std::mem::size_of::<QuerySegment>() == 24 && std::mem::offset_of!(QuerySegment, ioaddr) == 16);

#[repr(C)]
pub struct QueryMap {
    pub map: Handle,
    pub subcommand: c_uint,
    pub data: u64,
}
const _: () = assert!(std::mem::size_of::<QueryMap>() == 24 && std::mem::offset_of!(QueryMap, data) == 16);

#[repr(C)]
pub struct QueryDevice {
    pub fdid: u64,
    pub subcommand: c_uint,
    pub data: *mut c_void,
}
const _: () = assert!(std::mem::size_of::<QueryDevice>() == 24);

#[repr(C)]
pub struct SmartioDeviceInfo {
    pub fdid: u64,
    pub pci_device_id: u16,
    pub pci_vendor_id: u16,
    pub pci_class: c_uint,
    pub pci_subsystem_device_id: u16,
    pub pci_subsystem_vendor_id: u16,
    pub pci_serial_number: u64,
    pub remote_bdf: u16,
    pub local_bdf: u16,
    pub adapter: c_uint,
    pub nodeid: c_uint,
    pub physical_slot: i32,
    pub user_name: [c_char; 64],
    pub uuid: [c_char; 37],
}

/// `dis_nodeId_list_t` (dis_types.h): DIS_NODEID_LIST_LEN node ids, 0-terminated.
pub const DIS_NODEID_LIST_LEN: usize = 8;
pub const DIS_VIRT_ADAPTER_SOFTNIC: c_uint = 3;
