//! The part of libfabric's C API the network engine uses, loaded at run time.
//!
//! libfabric is opened with `libloading` (`libfabric.so.1`) only when the network engine
//! starts, so programs that stay on one machine never need it installed.  Most of its API
//! is `static inline` functions that call through the operation tables of each object
//! (`fid_ep->msg->send`, ...): those tables are declared here, field for field in the
//! order of libfabric 1.x's public headers (they only ever grow at the end, and every
//! table starts with its own size, which [`has_op`] checks before a call).  Only the
//! exported functions (`fi_getinfo`, `fi_freeinfo`, `fi_dupinfo`, `fi_fabric`,
//! `fi_strerror`) are looked up by name.

#![allow(non_camel_case_types, dead_code)]

use libc::{c_char, c_int, c_void, iovec, size_t, ssize_t};

pub const fn fi_version(major: u32, minor: u32) -> u32 {
    (major << 16) | minor
}
/// The API version we ask for (the layouts below are those of 1.x up to at least 1.17).
pub const API_VERSION: u32 = fi_version(1, 9);

pub type fi_addr_t = u64;
pub const FI_ADDR_UNSPEC: fi_addr_t = u64::MAX;

// Capabilities and flags (fabric.h).
pub const FI_MSG: u64 = 1 << 1;
pub const FI_RMA: u64 = 1 << 2;
pub const FI_READ: u64 = 1 << 8;
pub const FI_WRITE: u64 = 1 << 9;
pub const FI_RECV: u64 = 1 << 10;
pub const FI_SEND: u64 = 1 << 11;
pub const FI_TRANSMIT: u64 = FI_SEND;
pub const FI_REMOTE_READ: u64 = 1 << 12;
pub const FI_REMOTE_WRITE: u64 = 1 << 13;
pub const FI_COMPLETION: u64 = 1 << 24;
pub const FI_DELIVERY_COMPLETE: u64 = 1 << 28;
/// fi_getinfo flag: `node`/`service` name the local (source) address.
pub const FI_SOURCE: u64 = 1 << 57;

pub const FI_EP_RDM: c_int = 3;
pub const FI_AV_TABLE: c_int = 2;
pub const FI_THREAD_SAFE: c_int = 1;
pub const FI_PROGRESS_MANUAL: c_int = 2;
pub const FI_MR_LOCAL: c_int = 1 << 2;
pub const FI_MR_VIRT_ADDR: c_int = 1 << 4;
pub const FI_MR_ALLOCATED: c_int = 1 << 5;
pub const FI_MR_PROV_KEY: c_int = 1 << 6;
pub const FI_MR_ENDPOINT: c_int = 1 << 9;
pub const FI_CQ_FORMAT_DATA: c_int = 3;
pub const FI_WAIT_UNSPEC: c_int = 1;
pub const FI_WAIT_NONE: c_int = 0;
pub const FI_WAIT_FD: c_int = 3;
pub const FI_GETWAIT: c_int = 5;
pub const FI_ENABLE: c_int = 6;

pub const FI_EAGAIN: isize = libc::EAGAIN as isize;
pub const FI_EAVAIL: isize = 259;
pub const FI_ENOKEY: i32 = 266;

#[repr(C)]
pub struct fi_tx_attr {
    pub caps: u64,
    pub mode: u64,
    pub op_flags: u64,
    pub msg_order: u64,
    pub comp_order: u64,
    pub inject_size: size_t,
    pub size: size_t,
    pub iov_limit: size_t,
    pub rma_iov_limit: size_t,
    pub tclass: u32,
}

#[repr(C)]
pub struct fi_rx_attr {
    pub caps: u64,
    pub mode: u64,
    pub op_flags: u64,
    pub msg_order: u64,
    pub comp_order: u64,
    pub total_buffered_recv: size_t,
    pub size: size_t,
    pub iov_limit: size_t,
}

#[repr(C)]
pub struct fi_ep_attr {
    pub type_: c_int,
    pub protocol: u32,
    pub protocol_version: u32,
    pub max_msg_size: size_t,
    pub msg_prefix_size: size_t,
    pub max_order_raw_size: size_t,
    pub max_order_war_size: size_t,
    pub max_order_waw_size: size_t,
    pub mem_tag_format: u64,
    pub tx_ctx_cnt: size_t,
    pub rx_ctx_cnt: size_t,
    pub auth_key_size: size_t,
    pub auth_key: *mut u8,
}

#[repr(C)]
pub struct fi_domain_attr {
    pub domain: *mut fid_domain,
    pub name: *mut c_char,
    pub threading: c_int,
    pub control_progress: c_int,
    pub data_progress: c_int,
    pub resource_mgmt: c_int,
    pub av_type: c_int,
    pub mr_mode: c_int,
    pub mr_key_size: size_t,
    pub cq_data_size: size_t,
    // (more fields follow; never read or written here)
}

#[repr(C)]
pub struct fi_fabric_attr {
    pub fabric: *mut fid_fabric,
    pub name: *mut c_char,
    pub prov_name: *mut c_char,
    pub prov_version: u32,
    pub api_version: u32,
}

#[repr(C)]
pub struct fi_info {
    pub next: *mut fi_info,
    pub caps: u64,
    pub mode: u64,
    pub addr_format: u32,
    pub src_addrlen: size_t,
    pub dest_addrlen: size_t,
    pub src_addr: *mut c_void,
    pub dest_addr: *mut c_void,
    pub handle: *mut fid,
    pub tx_attr: *mut fi_tx_attr,
    pub rx_attr: *mut fi_rx_attr,
    pub ep_attr: *mut fi_ep_attr,
    pub domain_attr: *mut fi_domain_attr,
    pub fabric_attr: *mut fi_fabric_attr,
    pub nic: *mut c_void,
}

#[repr(C)]
pub struct fi_ops {
    pub size: size_t,
    pub close: Option<unsafe extern "C" fn(*mut fid) -> c_int>,
    pub bind: Option<unsafe extern "C" fn(*mut fid, *mut fid, u64) -> c_int>,
    pub control: Option<unsafe extern "C" fn(*mut fid, c_int, *mut c_void) -> c_int>,
}

#[repr(C)]
pub struct fid {
    pub fclass: size_t,
    pub context: *mut c_void,
    pub ops: *mut fi_ops,
}

#[repr(C)]
pub struct fi_ops_fabric {
    pub size: size_t,
    pub domain: Option<unsafe extern "C" fn(*mut fid_fabric, *mut fi_info, *mut *mut fid_domain, *mut c_void) -> c_int>,
    pub passive_ep: Option<unsafe extern "C" fn()>,
    pub eq_open: Option<unsafe extern "C" fn()>,
    pub wait_open: Option<unsafe extern "C" fn()>,
    pub trywait: Option<unsafe extern "C" fn(*mut fid_fabric, *mut *mut fid, c_int) -> c_int>,
}

#[repr(C)]
pub struct fid_fabric {
    pub fid: fid,
    pub ops: *mut fi_ops_fabric,
    pub api_version: u32,
}

#[repr(C)]
pub struct fi_ops_domain {
    pub size: size_t,
    pub av_open: Option<unsafe extern "C" fn(*mut fid_domain, *mut fi_av_attr, *mut *mut fid_av, *mut c_void) -> c_int>,
    pub cq_open: Option<unsafe extern "C" fn(*mut fid_domain, *mut fi_cq_attr, *mut *mut fid_cq, *mut c_void) -> c_int>,
    pub endpoint: Option<unsafe extern "C" fn(*mut fid_domain, *mut fi_info, *mut *mut fid_ep, *mut c_void) -> c_int>,
}

#[repr(C)]
pub struct fi_ops_mr {
    pub size: size_t,
    pub reg: Option<unsafe extern "C" fn(*mut fid, *const c_void, size_t, u64, u64, u64, u64, *mut *mut fid_mr, *mut c_void) -> c_int>,
}

#[repr(C)]
pub struct fid_domain {
    pub fid: fid,
    pub ops: *mut fi_ops_domain,
    pub mr: *mut fi_ops_mr,
}

#[repr(C)]
pub struct fid_mr {
    pub fid: fid,
    pub mem_desc: *mut c_void,
    pub key: u64,
}

#[repr(C)]
pub struct fi_av_attr {
    pub type_: c_int,
    pub rx_ctx_bits: c_int,
    pub count: size_t,
    pub ep_per_node: size_t,
    pub name: *const c_char,
    pub map_addr: *mut c_void,
    pub flags: u64,
}

#[repr(C)]
pub struct fi_ops_av {
    pub size: size_t,
    pub insert: Option<unsafe extern "C" fn(*mut fid_av, *const c_void, size_t, *mut fi_addr_t, u64, *mut c_void) -> c_int>,
}

#[repr(C)]
pub struct fid_av {
    pub fid: fid,
    pub ops: *mut fi_ops_av,
}

#[repr(C)]
pub struct fi_cq_attr {
    pub size: size_t,
    pub flags: u64,
    pub format: c_int,
    pub wait_obj: c_int,
    pub signaling_vector: c_int,
    pub wait_cond: c_int,
    pub wait_set: *mut c_void,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_cq_data_entry {
    pub op_context: *mut c_void,
    pub flags: u64,
    pub len: size_t,
    pub buf: *mut c_void,
    pub data: u64,
}

#[repr(C)]
pub struct fi_cq_err_entry {
    pub op_context: *mut c_void,
    pub flags: u64,
    pub len: size_t,
    pub buf: *mut c_void,
    pub data: u64,
    pub tag: u64,
    pub olen: size_t,
    pub err: c_int,
    pub prov_errno: c_int,
    pub err_data: *mut c_void,
    pub err_data_size: size_t,
}

#[repr(C)]
pub struct fi_ops_cq {
    pub size: size_t,
    pub read: Option<unsafe extern "C" fn(*mut fid_cq, *mut c_void, size_t) -> ssize_t>,
    pub readfrom: Option<unsafe extern "C" fn(*mut fid_cq, *mut c_void, size_t, *mut fi_addr_t) -> ssize_t>,
    pub readerr: Option<unsafe extern "C" fn(*mut fid_cq, *mut fi_cq_err_entry, u64) -> ssize_t>,
    pub sread: Option<unsafe extern "C" fn(*mut fid_cq, *mut c_void, size_t, *const c_void, c_int) -> ssize_t>,
    pub sreadfrom: Option<unsafe extern "C" fn(*mut fid_cq, *mut c_void, size_t, *mut fi_addr_t, *const c_void, c_int) -> ssize_t>,
    pub signal: Option<unsafe extern "C" fn(*mut fid_cq) -> c_int>,
}

#[repr(C)]
pub struct fid_cq {
    pub fid: fid,
    pub ops: *mut fi_ops_cq,
}

#[repr(C)]
pub struct fi_ops_cm {
    pub size: size_t,
    pub setname: Option<unsafe extern "C" fn(*mut fid, *mut c_void, size_t) -> c_int>,
    pub getname: Option<unsafe extern "C" fn(*mut fid, *mut c_void, *mut size_t) -> c_int>,
}

#[repr(C)]
pub struct fi_ops_msg {
    pub size: size_t,
    pub recv: Option<unsafe extern "C" fn(*mut fid_ep, *mut c_void, size_t, *mut c_void, fi_addr_t, *mut c_void) -> ssize_t>,
    pub recvv: Option<unsafe extern "C" fn(*mut fid_ep, *const iovec, *mut *mut c_void, size_t, fi_addr_t, *mut c_void) -> ssize_t>,
    pub recvmsg: Option<unsafe extern "C" fn(*mut fid_ep, *const c_void, u64) -> ssize_t>,
    pub send: Option<unsafe extern "C" fn(*mut fid_ep, *const c_void, size_t, *mut c_void, fi_addr_t, *mut c_void) -> ssize_t>,
    pub sendv: Option<unsafe extern "C" fn(*mut fid_ep, *const iovec, *mut *mut c_void, size_t, fi_addr_t, *mut c_void) -> ssize_t>,
    pub sendmsg: Option<unsafe extern "C" fn(*mut fid_ep, *const c_void, u64) -> ssize_t>,
    pub inject: Option<unsafe extern "C" fn(*mut fid_ep, *const c_void, size_t, fi_addr_t) -> ssize_t>,
}

#[repr(C)]
pub struct fi_ops_rma {
    pub size: size_t,
    pub read: Option<unsafe extern "C" fn(*mut fid_ep, *mut c_void, size_t, *mut c_void, fi_addr_t, u64, u64, *mut c_void) -> ssize_t>,
    pub readv: Option<unsafe extern "C" fn(*mut fid_ep, *const iovec, *mut *mut c_void, size_t, fi_addr_t, u64, u64, *mut c_void) -> ssize_t>,
    pub readmsg: Option<unsafe extern "C" fn(*mut fid_ep, *const fi_msg_rma, u64) -> ssize_t>,
    pub write: Option<unsafe extern "C" fn(*mut fid_ep, *const c_void, size_t, *mut c_void, fi_addr_t, u64, u64, *mut c_void) -> ssize_t>,
    pub writev: Option<unsafe extern "C" fn()>,
    pub writemsg: Option<unsafe extern "C" fn(*mut fid_ep, *const fi_msg_rma, u64) -> ssize_t>,
}

/// One remote buffer of an RMA message.
#[repr(C)]
pub struct fi_rma_iov {
    pub addr: u64,
    pub len: size_t,
    pub key: u64,
}

#[repr(C)]
pub struct fi_msg_rma {
    pub msg_iov: *const iovec,
    pub desc: *mut *mut c_void,
    pub iov_count: size_t,
    pub addr: fi_addr_t,
    pub rma_iov: *const fi_rma_iov,
    pub rma_iov_count: size_t,
    pub context: *mut c_void,
    pub data: u64,
}

#[repr(C)]
pub struct fid_ep {
    pub fid: fid,
    pub ops: *mut c_void,
    pub cm: *mut fi_ops_cm,
    pub msg: *mut fi_ops_msg,
    pub rma: *mut fi_ops_rma,
}

/// Does the operation table at `table` (first field: its size in bytes) reach the
/// function pointer at byte offset `field_offset`?  Providers may hand out shorter,
/// older tables.
///
/// # Safety
/// `table` points to a libfabric operation table.
pub unsafe fn has_op(table: *const c_void, field_offset: usize) -> bool {
    // SAFETY: every libfabric operation table starts with its size.
    !table.is_null() && unsafe { *(table as *const size_t) } > field_offset
}

type GetInfoFn = unsafe extern "C" fn(u32, *const c_char, *const c_char, u64, *const fi_info, *mut *mut fi_info) -> c_int;
type FreeInfoFn = unsafe extern "C" fn(*mut fi_info);
type DupInfoFn = unsafe extern "C" fn(*const fi_info) -> *mut fi_info;
type FabricFn = unsafe extern "C" fn(*mut fi_fabric_attr, *mut *mut fid_fabric, *mut c_void) -> c_int;
type StrErrorFn = unsafe extern "C" fn(c_int) -> *const c_char;

/// The loaded library and its exported entry points.
pub struct Lib {
    _lib: libloading::Library,
    pub getinfo: GetInfoFn,
    pub freeinfo: FreeInfoFn,
    pub dupinfo: DupInfoFn,
    pub fabric: FabricFn,
    strerror: StrErrorFn,
}

impl Lib {
    /// Opens libfabric (`SOFTNIC_LIBFABRIC` names another file).
    pub fn open() -> Result<Lib, String> {
        let name = crate::env::get_str("SOFTNIC_LIBFABRIC");
        // SAFETY: loading libfabric runs its constructors, which only initialise the
        // library itself.
        let lib = unsafe { libloading::Library::new(&name) }.map_err(|e| format!("cannot load {}: {}", name, e))?;
        // SAFETY: the symbols are libfabric's exported functions with these C prototypes.
        unsafe {
            let getinfo = *lib.get::<GetInfoFn>(b"fi_getinfo\0").map_err(|e| e.to_string())?;
            let freeinfo = *lib.get::<FreeInfoFn>(b"fi_freeinfo\0").map_err(|e| e.to_string())?;
            let dupinfo = *lib.get::<DupInfoFn>(b"fi_dupinfo\0").map_err(|e| e.to_string())?;
            let fabric = *lib.get::<FabricFn>(b"fi_fabric\0").map_err(|e| e.to_string())?;
            let strerror = *lib.get::<StrErrorFn>(b"fi_strerror\0").map_err(|e| e.to_string())?;
            Ok(Lib { _lib: lib, getinfo, freeinfo, dupinfo, fabric, strerror })
        }
    }

    /// libfabric's text for a (positive) error number.
    pub fn strerror(&self, err: i64) -> String {
        // SAFETY: fi_strerror returns a static string for any number.
        let p = unsafe { (self.strerror)(err.unsigned_abs() as c_int) };
        if p.is_null() {
            return format!("error {}", err);
        }
        // SAFETY: a NUL-terminated static string.
        unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}
