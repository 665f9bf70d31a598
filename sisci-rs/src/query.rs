//! Queries, node ids, adapter names, strings, PCIe requesters and SmartIO device lists.
//!
//! The adapter every node has (number 0) is a softnic adapter: one link, always up,
//! DMA without alignment rules, data interrupts of up to 4096 bytes, 4 multicast groups.
//! Addresses (SCI_Q_*_IOADDR, _PHYS_ADDR, SCIGetMapPhysAddr) are opaque non-zero tokens:
//! there is no bus behind them.  Adapter names: "node<id>" names node <id>'s adapter
//! (a node of the job; any legal id without a launcher), and this host's name, "local"
//! and "localhost" name this node's.

use crate::desc;
use crate::map::{self, Map, Of};
use crate::node;
use crate::remote;
use crate::segment;
use crate::service::DATAINT_MAX;
use crate::sisci_export;
use crate::status::*;
use crate::types::*;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::Ordering;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

pub const CARD_TYPE: u32 = 0x5C1;
pub const MCAST_GROUPS: u32 = 4;
const VENDOR: &str = "softnic (Dolphin SISCI API over shared memory and libfabric)";
const API_VERSION: &str = "SISCI API version 5.0.0 (softnic)";
const DRIVER_VERSION: &str = "softnic 0.1.0";

fn started() -> Instant {
    static T: OnceLock<Instant> = OnceLock::new();
    *T.get_or_init(Instant::now)
}

/// Opaque address of a local segment's memory.
pub fn seg_ioaddr(node: u32, slot: usize) -> u64 {
    (1u64 << 62) | ((node as u64 & 0x3fff) << 48) | (((slot as u64 + 1) & 0xfff) << 36)
}

/// Opaque address of a map (including its offset).
pub fn map_ioaddr(m: &Map) -> u64 {
    match &m.of {
        Of::Local(s) => seg_ioaddr(s.node, segment::SEGS.slot_of(s.handle)) + m.offset as u64,
        Of::Remote(r) => (1u64 << 63) | ((r.node as u64 & 0x3fff) << 48) | (((remote::RSEGS.slot_of(r.handle) as u64 + 1) & 0xfff) << 36) + m.offset as u64,
    }
}

fn copy_string(q: *mut QueryString, s: &str) -> R<()> {
    if q.is_null() {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    // SAFETY: non-NULL; the caller passes a sci_query_string_t.
    let q = unsafe { &*q };
    if q.str_.is_null() || q.length == 0 {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    let n = s.len().min(q.length as usize - 1);
    // SAFETY: the caller's buffer of `length` bytes; n + 1 <= length.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), q.str_ as *mut u8, n);
        *q.str_.add(n) = 0;
    }
    Ok(())
}

fn adapter_value(sub: u32, port: u32, flags: u32) -> R<u32> {
    let link = matches!(
        sub,
        SCI_Q_ADAPTER_LINK_OPERATIONAL | SCI_Q_ADAPTER_LINK_WIDTH | SCI_Q_ADAPTER_LINK_SPEED | SCI_Q_ADAPTER_LINK_UPTIME | SCI_Q_ADAPTER_LINK_DOWNTIME | SCI_Q_ADAPTER_LINK_CABLE_INSERTED | SCI_Q_ADAPTER_LINK_ENABLED | SCI_Q_ADAPTER_LINK_PARTNER_PORT_NO
    );
    if link && port != 0 {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    check_flags(flags, if sub == SCI_Q_ADAPTER_DMA_MTU { SCI_FLAG_DMA_SYSDMA } else { 0 })?;
    let me = node::my_node();
    Ok(match sub {
        SCI_Q_ADAPTER_NODEID | SCI_Q_ADAPTER_PHYS_MEM_NODEID | SCI_Q_ADAPTER_PHYS_MBX_NODEID | SCI_Q_ADAPTER_PHYS_LINK_PORT_NODEID => me,
        SCI_Q_ADAPTER_SERIAL_NUMBER => 0x5C1_0000 | me,
        SCI_Q_ADAPTER_CARD_TYPE => CARD_TYPE,
        SCI_Q_ADAPTER_CONFIGURED | SCI_Q_ADAPTER_LINK_OPERATIONAL | SCI_Q_ADAPTER_FIRMWARE_OK | SCI_Q_ADAPTER_LINK_CABLE_INSERTED | SCI_Q_ADAPTER_LINK_ENABLED | SCI_Q_ADAPTER_HW_LINK_STATUS_IS_OK | SCI_Q_ADAPTER_CONNECTED_TO_EXPECTED_SWITCH_PORT => 1,
        SCI_Q_ADAPTER_NUMBER_OF_LINKS => 1,
        SCI_Q_ADAPTER_LINK_WIDTH => 16,
        SCI_Q_ADAPTER_LINK_SPEED => 8,
        SCI_Q_ADAPTER_LINK_UPTIME => started().elapsed().as_secs().min(u32::MAX as u64) as u32,
        SCI_Q_ADAPTER_LINK_DOWNTIME | SCI_Q_ADAPTER_LINK_PARTNER_PORT_NO | SCI_Q_ADAPTER_NUMBER | SCI_Q_ADAPTER_INSTANCE_NUMBER | SCI_Q_ADAPTER_CONNECTED_TO_SWITCH | SCI_Q_ADAPTER_LOCAL_SWITCH_TYPE | SCI_Q_ADAPTER_LOCAL_SWITCH_PORT_NUMBER | SCI_Q_ADAPTER_MODE | SCI_Q_ADAPTER_BDF | SCI_Q_ADAPTER_IO_BUS_FREQUENCY | SCI_Q_ADAPTER_SCI_LINK_FREQUENCY | SCI_Q_ADAPTER_B_LINK_FREQUENCY => 0,
        SCI_Q_ADAPTER_DMA_MTU => crate::dma::CHUNK as u32,
        SCI_Q_ADAPTER_DMA_SIZE_ALIGNMENT | SCI_Q_ADAPTER_DMA_OFFSET_ALIGNMENT => 1,
        SCI_Q_ADAPTER_SUGGESTED_MIN_DMA_SIZE => 8192,
        SCI_Q_ADAPTER_SUGGESTED_MIN_BLOCK_SIZE => 64,
        SCI_Q_ADAPTER_NUMBER_OF_STREAMS => 16,
        SCI_Q_ADAPTER_STREAM_BUFFER_SIZE => 128,
        SCI_Q_ADAPTER_ATT_PAGE_SIZE => softnic_fabric::shm::page_size() as u32,
        SCI_Q_ADAPTER_ATT_NUMBER_OF_ENTRIES | SCI_Q_ADAPTER_ATT_AVAILABLE_ENTRIES => 65536,
        SCI_Q_ADAPTER_DATAINT_MAX_LENGTH => DATAINT_MAX as u32,
        SCI_Q_ADAPTER_MCAST_MAX_GROUPS => MCAST_GROUPS,
        _ => return Err(SCI_ERR_ILLEGAL_PARAMETER),
    })
}

fn dma_mode(flags: u32) -> R<()> {
    let modes = SCI_FLAG_DMA_ADAPTER | SCI_FLAG_DMA_GLOBAL | SCI_FLAG_DMA_SYSDMA;
    check_flags(flags, modes)?;
    if (flags & modes).count_ones() > 1 {
        return Err(SCI_ERR_ILLEGAL_FLAG);
    }
    Ok(())
}

fn query(command: u32, data: *mut c_void, flags: u32) -> R<()> {
    desc::initialized()?;
    // Every query structure starts with a pointer or a 64-bit word.
    if data.is_null() || data as usize % 8 != 0 {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    match command {
        SCI_Q_VENDORID | SCI_Q_API | SCI_Q_SISCI_DRIVER_VERSION => {
            check_flags(flags, 0)?;
            let s = match command {
                SCI_Q_VENDORID => VENDOR,
                SCI_Q_API => API_VERSION,
                _ => DRIVER_VERSION,
            };
            copy_string(data as *mut QueryString, s)
        }
        SCI_Q_ADAPTER => {
            // SAFETY: non-NULL; the caller passes a sci_query_adapter_t.
            let q = unsafe { &*(data as *const QueryAdapter) };
            check_adapter(q.local_adapter_no)?;
            let v = adapter_value(q.subcommand, q.port_no, flags)?;
            out(q.data as *mut u32, v)
        }
        SCI_Q_SYSTEM => {
            check_flags(flags, 0)?;
            // SAFETY: as above, a sci_query_system_t.
            let q = unsafe { &*(data as *const QuerySystem) };
            let v = match q.subcommand {
                SCI_Q_SYSTEM_CPU_CACHE_LINE_SIZE => 64,
                SCI_Q_SYSTEM_HOSTBRIDGE => HOSTBRIDGE_WRITE_POSTING_ENABLED,
                SCI_Q_SYSTEM_WRITE_POSTING_ENABLED | SCI_Q_SYSTEM_WRITE_COMBINING_ENABLED => 1,
                _ => return Err(SCI_ERR_ILLEGAL_PARAMETER),
            };
            out(q.data as *mut u32, v)
        }
        SCI_Q_DMA => {
            dma_mode(flags)?;
            // SAFETY: as above, a sci_query_dma_t.
            let q = unsafe { &*(data as *const QueryDma) };
            check_adapter(q.local_adapter_no)?;
            match q.subcommand {
                SCI_Q_DMA_AVAILABLE => out(q.data as *mut u32, 1),
                SCI_Q_DMA_CAPABILITIES => out(
                    q.data as *mut DmaCapabilities,
                    DmaCapabilities {
                        num_channels: crate::dma::CHANNELS,
                        max_transfer_size: crate::dma::MAX_TRANSFER,
                        max_vector_length: DIS_DMA_MAX_VECLEN as u32,
                        support_mem2io: 0,
                        support_io2mem: 0,
                        support_io2io: 0,
                        min_align_bytes: 1,
                        suggested_align_bytes: 64,
                    },
                ),
                _ => Err(SCI_ERR_ILLEGAL_PARAMETER),
            }
        }
        SCI_Q_LOCAL_SEGMENT => {
            check_flags(flags, 0)?;
            // SAFETY: as above, a sci_query_local_segment_t.
            let q = unsafe { &mut *(data as *mut QuerySegment) };
            let s = segment::seg(q.segment)?;
            let base = seg_ioaddr(s.node, segment::SEGS.slot_of(s.handle));
            q.ioaddr = match q.subcommand {
                SCI_Q_LOCAL_SEGMENT_IOADDR => {
                    if s.prepared() {
                        base
                    } else {
                        0
                    }
                }
                SCI_Q_LOCAL_SEGMENT_VIRTUAL_KERNEL_ADDR => 0,
                SCI_Q_LOCAL_SEGMENT_PHYS_ADDR => base,
                _ => return Err(SCI_ERR_ILLEGAL_PARAMETER),
            };
            Ok(())
        }
        SCI_Q_REMOTE_SEGMENT => {
            check_flags(flags, 0)?;
            // SAFETY: as above, a sci_query_remote_segment_t.
            let q = unsafe { &mut *(data as *mut QuerySegment) };
            let r = remote::rseg(q.segment)?;
            if q.subcommand != SCI_Q_REMOTE_SEGMENT_IOADDR {
                return Err(SCI_ERR_ILLEGAL_PARAMETER);
            }
            if r.maps.load(Ordering::Acquire) == 0 {
                return Err(SCI_ERR_ILLEGAL_OPERATION);
            }
            q.ioaddr = (1u64 << 63) | ((r.node as u64 & 0x3fff) << 48) | (((remote::RSEGS.slot_of(r.handle) as u64 + 1) & 0xfff) << 36);
            Ok(())
        }
        SCI_Q_MAP => {
            check_flags(flags, 0)?;
            // SAFETY: as above, a sci_query_map_t.
            let q = unsafe { &mut *(data as *mut QueryMap) };
            let m = map::map(q.map)?;
            q.data = match q.subcommand {
                SCI_Q_MAP_MAPPED_TO_LOCAL_TARGET | SCI_Q_MAP_QUERY_REMOTE_MAPPED_TO_LOCAL_TARGET => match &m.of {
                    Of::Local(_) => 1,
                    Of::Remote(r) => (r.node == node::my_node()) as u64,
                },
                SCI_Q_MAP_PHYS_ADDR | SCI_Q_MAP_IOADDR => map_ioaddr(&m),
                _ => return Err(SCI_ERR_ILLEGAL_PARAMETER),
            };
            Ok(())
        }
        SCI_Q_DEVICE => {
            check_flags(flags, 0)?;
            // SAFETY: as above, a sci_smartio_query_device_t.
            let q = unsafe { &*(data as *const QueryDevice) };
            if q.subcommand != SCI_Q_DEVICE_INFO {
                return Err(SCI_ERR_ILLEGAL_PARAMETER);
            }
            Err(SCI_ERR_NO_SUCH_FDID)
        }
        _ => Err(SCI_ERR_ILLEGAL_QUERY),
    }
}

/// The node an adapter name denotes.
fn node_of_name(name: *const c_char) -> R<u32> {
    if name.is_null() {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    // SAFETY: a NUL-terminated string from the caller.
    let s = unsafe { CStr::from_ptr(name) }.to_str().map_err(|_| SCI_ERR_ILLEGAL_PARAMETER)?;
    if s == "local" || s == "localhost" || s == hostname() {
        return Ok(node::my_node());
    }
    let id: u32 = s.strip_prefix("node").and_then(|n| n.parse().ok()).ok_or(SCI_ERR_ILLEGAL_PARAMETER)?;
    if !node::legal_node(id) || !node::node_exists(id) {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    Ok(id)
}

fn hostname() -> String {
    let mut b = [0u8; 256];
    // SAFETY: a buffer of 256 bytes.
    if unsafe { libc::gethostname(b.as_mut_ptr() as *mut c_char, b.len()) } != 0 {
        return String::new();
    }
    let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..n]).into_owned()
}

fn node_list(name: *const c_char, list: *mut u32, ty: *mut u32) -> R<()> {
    let id = node_of_name(name)?;
    if list.is_null() {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    let mut l = [0u32; DIS_NODEID_LIST_LEN];
    l[0] = id;
    // SAFETY: the caller's dis_nodeId_list_t (DIS_NODEID_LIST_LEN unsigned ints).
    unsafe { std::ptr::copy_nonoverlapping(l.as_ptr(), list, DIS_NODEID_LIST_LEN) };
    if !ty.is_null() {
        out(ty, DIS_VIRT_ADAPTER_SOFTNIC)?;
    }
    Ok(())
}

sisci_export! {
    fn SCIQuery(command: u32, data: *mut c_void, flags: u32, error: *mut SciErr) {
        done("SCIQuery", error, query(command, data, flags))
    }
}

sisci_export! {
    /// An opaque address of the map (never 0 for a valid map; see SCIQuery).
    fn SCIGetMapPhysAddr(map: usize) -> u64 {
        map::MAPS.get(map).map_or(0, |m| map_ioaddr(&m))
    }
}

sisci_export! {
    /// This node's id (see crate::node).
    fn SCIGetLocalNodeId(adapterNo: u32, nodeId: *mut u32, flags: u32, error: *mut SciErr) {
        let r = (|| {
            desc::initialized()?;
            check_flags(flags, 0)?;
            check_adapter(adapterNo)?;
            out(nodeId, node::my_node())
        })();
        done("SCIGetLocalNodeId", error, r)
    }
}

sisci_export! {
    /// 1 when node `nodeId` belongs to the cluster (see node::node_exists), else 0 with
    /// SCI_ERR_NO_SUCH_NODEID.
    fn SCIProbeNode(sd: usize, localAdapterNo: u32, nodeId: u32, flags: u32, error: *mut SciErr) -> c_int {
        let r = (|| {
            desc::desc(sd)?;
            check_flags(flags, 0)?;
            check_adapter(localAdapterNo)?;
            let id = node::node_arg(nodeId)?;
            if node::node_exists(id) { Ok(1) } else { Err(SCI_ERR_NO_SUCH_NODEID) }
        })();
        finish("SCIProbeNode", error, r, 0)
    }
}

sisci_export! {
    fn SCIGetNodeIdByAdapterName(adaptername: *mut c_char, nodeId: *mut u32, type_: *mut u32, flags: u32, error: *mut SciErr) {
        let r = check_flags(flags, 0).and_then(|_| node_list(adaptername, nodeId, type_));
        done("SCIGetNodeIdByAdapterName", error, r)
    }
}

sisci_export! {
    fn SCIGetNodeInfoByAdapterName(adaptername: *mut c_char, adapterNo: *mut u32, nodeIdlist: *mut u32, type_: *mut u32, flags: u32, error: *mut SciErr) {
        let r = check_flags(flags, 0).and_then(|_| {
            if adapterNo.is_null() {
                return Err(SCI_ERR_ILLEGAL_PARAMETER);
            }
            node_list(adaptername, nodeIdlist, type_)?;
            out(adapterNo, 0)
        });
        done("SCIGetNodeInfoByAdapterName", error, r)
    }
}

sisci_export! {
    fn SCIGetErrorString(error: SciErr) -> *const c_char {
        describe(error).as_ptr() as *const c_char
    }
}

sisci_export! {
    fn SCIGetAdapterTypeString(adapterType: u32) -> *const c_char {
        let s: &'static [u8] = if adapterType == CARD_TYPE { b"softnic adapter\0" } else { b"Unknown adapter type\0" };
        s.as_ptr() as *const c_char
    }
}

sisci_export! {
    fn SCIGetAdapterFamilyString(adapterType: u32) -> *const c_char {
        let s: &'static [u8] = if adapterType == CARD_TYPE { b"softnic\0" } else { b"Unknown adapter family\0" };
        s.as_ptr() as *const c_char
    }
}

sisci_export! {
    /// The routine SCIMemCpy and SCIMemWrite use: 0, "memcpy" (the buffer must hold 7
    /// bytes).  Returns 0, or -1 for NULL arguments.
    fn GetSciMemCopyFunction(functionNo: *mut u32, functionStr: *mut c_char) -> c_int {
        if functionNo.is_null() || functionStr.is_null() {
            return -1;
        }
        // SAFETY: non-NULL; an unsigned int and a buffer the caller sized for the name.
        unsafe {
            functionNo.write_unaligned(0);
            std::ptr::copy_nonoverlapping(b"memcpy\0".as_ptr(), functionStr as *mut u8, 7);
        }
        0
    }
}

sisci_export! {
    /// Only routine 0 exists: 0 for it, -1 for others.
    fn SetSciMemCopyFunction(functionNo: u32) -> c_int {
        if functionNo == 0 { 0 } else { -1 }
    }
}

// ---- PCIe requesters: a registration list (there is no NT function to program) ----------

static REQUESTERS: Mutex<Vec<(usize, u32, u32)>> = Mutex::new(Vec::new());

fn requester(sd: usize, adapter: u32, bus: u32, devfn: u32, flags: u32, register: bool) -> R<()> {
    let d = desc::desc(sd)?;
    check_flags(flags, if register { SCI_FLAG_BROADCAST | SCI_FLAG_PCIE_REQUESTER_GLOBAL } else { 0 })?;
    check_adapter(adapter)?;
    if bus > 0xff || devfn > 0xff {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    let mut l = REQUESTERS.lock().unwrap_or_else(|e| e.into_inner());
    let at = l.iter().position(|&(s, b, f)| s == sd && b == bus && f == devfn);
    match (register, at) {
        (true, Some(_)) => Err(SCI_ERR_NOSPC),
        (true, None) => {
            d.acquire(desc::Kind::Requester)?;
            l.push((sd, bus, devfn));
            Ok(())
        }
        (false, Some(i)) => {
            l.swap_remove(i);
            d.release(desc::Kind::Requester);
            Ok(())
        }
        (false, None) => Err(SCI_ERR_NOSPC),
    }
}

sisci_export! {
    fn SCIRegisterPCIeRequester(sd: usize, localAdapterNo: u32, bus: u32, devfn: u32, flags: u32, error: *mut SciErr) {
        done("SCIRegisterPCIeRequester", error, requester(sd, localAdapterNo, bus, devfn, flags, true))
    }
}

sisci_export! {
    fn SCIUnregisterPCIeRequester(sd: usize, localAdapterNo: u32, bus: u32, devfn: u32, flags: u32, error: *mut SciErr) {
        done("SCIUnregisterPCIeRequester", error, requester(sd, localAdapterNo, bus, devfn, flags, false))
    }
}

// ---- SmartIO: there are no PCIe devices to borrow ---------------------------------------

sisci_export! {
    /// The devices the node discovered: none (0, SCI_ERR_OK).
    fn SCIGetDeviceList(sd: usize, fdids: *mut u64, length: usize, filter: *const SmartioDeviceInfo, flags: u32, error: *mut SciErr) -> usize {
        let r = (|| {
            let _ = (fdids, length, filter);
            desc::desc(sd)?;
            check_flags(flags, SCI_FLAG_SPECIFY_PATH | SCI_FLAG_SPECIFY_SLOT)?;
            Ok(0)
        })();
        finish("SCIGetDeviceList", error, r, 0)
    }
}
