//! The functions this library does not implement: each checks nothing, touches nothing
//! and reports the reference's code for "not available here".  Nothing else in the
//! library returns these codes for a whole function.  Reasons:
//!
//! - SmartIO (SCIBorrowDevice, SCIReturnDevice, SCIReleaseExclusiveBorrow,
//!   SCIConnectDeviceSegment, SCIConnectDeviceSegmentPath, SCICreateDeviceSegment,
//!   SCIMapLocalSegmentForDevice, SCIUnmapLocalSegmentForDevice,
//!   SCIMapRemoteSegmentForDevice, SCIUnmapRemoteSegmentForDevice,
//!   SCIAttachDeviceInterrupt, SCIDetachDeviceInterrupt): there are no PCIe devices to
//!   borrow; the reference's code for a system without SmartIO is
//!   SCI_ERR_NOT_IMPLEMENTED.  (SCIGetDeviceList answers truthfully: no devices;
//!   SCIGetFabricDeviceId of a device that cannot exist is 0.)
//! - Adapter registers (SCIGetCSRRegister, SCISetCSRRegister, SCIGetLocalCSR,
//!   SCISetLocalCSR) and raw interconnect addresses (SCIConnectSCISpace): there is no
//!   adapter hardware; SCI_ERR_NOT_SUPPORTED.
//! - SISCI 1.10's physical-address DMA (SCIphDmaEnqueue, SCIphDmaStart), conditional
//!   interrupts (SCIRegisterInterruptFlag, SCIEnableConditionalInterrupt,
//!   SCIDisableConditionalInterrupt, SCIGetConditionalInterruptTrigCounter) and
//!   asynchronous block transfers (SCITransferBlockAsync, SCIWaitForBlockTransfer,
//!   SCIAbortBlockTransfer): hardware features of the old SCI adapters, gone from
//!   today's API; SCI_ERR_NOT_SUPPORTED.

use crate::sisci_export;
use crate::status::*;
use crate::types::*;
use std::ffi::c_void;

fn smartio(func: &'static str, error: *mut SciErr) {
    done(func, error, Err(SCI_ERR_NOT_IMPLEMENTED))
}

fn unsupported(func: &'static str, error: *mut SciErr) {
    done(func, error, Err(SCI_ERR_NOT_SUPPORTED))
}

sisci_export! {
    fn SCIBorrowDevice(sd: usize, device: *mut usize, fdid: u64, flags: u32, error: *mut SciErr) {
        let _ = (sd, device, fdid, flags);
        smartio("SCIBorrowDevice", error)
    }
}

sisci_export! {
    fn SCIReturnDevice(device: usize, flags: u32, error: *mut SciErr) {
        let _ = (device, flags);
        smartio("SCIReturnDevice", error)
    }
}

sisci_export! {
    fn SCIReleaseExclusiveBorrow(device: usize, flags: u32, error: *mut SciErr) {
        let _ = (device, flags);
        smartio("SCIReleaseExclusiveBorrow", error)
    }
}

sisci_export! {
    fn SCIConnectDeviceSegment(device: usize, segment: *mut usize, segmentId: u32, segmentType: u32, callback: CbDevice, callbackArg: *mut c_void, flags: u32, error: *mut SciErr) {
        let _ = (device, segment, segmentId, segmentType, callback, callbackArg, flags);
        smartio("SCIConnectDeviceSegment", error)
    }
}

sisci_export! {
    fn SCIConnectDeviceSegmentPath(device: usize, segment: *mut usize, nodeId: u32, segmentId: u32, segmentType: u32, localAdapterNo: u32, callback: CbDevice, callbackArg: *mut c_void, flags: u32, error: *mut SciErr) {
        let _ = (device, segment, nodeId, segmentId, segmentType, localAdapterNo, callback, callbackArg, flags);
        smartio("SCIConnectDeviceSegmentPath", error)
    }
}

sisci_export! {
    fn SCICreateDeviceSegment(device: usize, segmentId: u32, size: usize, type_: u32, accessHints: u32, flags: u32, error: *mut SciErr) {
        let _ = (device, segmentId, size, type_, accessHints, flags);
        smartio("SCICreateDeviceSegment", error)
    }
}

sisci_export! {
    fn SCIMapLocalSegmentForDevice(segment: usize, localAdapterNo: u32, device: usize, remoteAddr: *mut u64, offset: usize, size: usize, callback: CbDevice, callbackArg: *mut c_void, flags: u32, error: *mut SciErr) {
        let _ = (segment, localAdapterNo, device, remoteAddr, offset, size, callback, callbackArg, flags);
        smartio("SCIMapLocalSegmentForDevice", error)
    }
}

sisci_export! {
    fn SCIUnmapLocalSegmentForDevice(segment: usize, localAdapterNo: u32, device: usize, flags: u32, error: *mut SciErr) {
        let _ = (segment, localAdapterNo, device, flags);
        smartio("SCIUnmapLocalSegmentForDevice", error)
    }
}

sisci_export! {
    fn SCIMapRemoteSegmentForDevice(segment: usize, device: usize, remoteAddr: *mut u64, offset: usize, size: usize, callback: CbDevice, callbackArg: *mut c_void, flags: u32, error: *mut SciErr) {
        let _ = (segment, device, remoteAddr, offset, size, callback, callbackArg, flags);
        smartio("SCIMapRemoteSegmentForDevice", error)
    }
}

sisci_export! {
    fn SCIUnmapRemoteSegmentForDevice(segment: usize, device: usize, flags: u32, error: *mut SciErr) {
        let _ = (segment, device, flags);
        smartio("SCIUnmapRemoteSegmentForDevice", error)
    }
}

sisci_export! {
    fn SCIAttachDeviceInterrupt(device: usize, interrupt: usize, deviceInterruptNo: u32, flags: u32, error: *mut SciErr) {
        let _ = (device, interrupt, deviceInterruptNo, flags);
        smartio("SCIAttachDeviceInterrupt", error)
    }
}

sisci_export! {
    fn SCIDetachDeviceInterrupt(device: usize, interrupt: usize, deviceInterruptNo: u32, flags: u32, error: *mut SciErr) {
        let _ = (device, interrupt, deviceInterruptNo, flags);
        smartio("SCIDetachDeviceInterrupt", error)
    }
}

sisci_export! {
    /// The fabric device id of a borrowed device: none can be borrowed, so 0.
    fn SCIGetFabricDeviceId(device: usize) -> u64 {
        let _ = device;
        0
    }
}

sisci_export! {
    fn SCIGetCSRRegister(sd: usize, localAdapterNo: u32, SCINodeId: u32, CSROffset: u32, flags: u32, error: *mut SciErr) -> u32 {
        let _ = (sd, localAdapterNo, SCINodeId, CSROffset, flags);
        unsupported("SCIGetCSRRegister", error);
        0
    }
}

sisci_export! {
    fn SCISetCSRRegister(sd: usize, localAdapterNo: u32, SCINodeId: u32, CSROffset: u32, CSRValue: u32, flags: u32, error: *mut SciErr) {
        let _ = (sd, localAdapterNo, SCINodeId, CSROffset, CSRValue, flags);
        unsupported("SCISetCSRRegister", error)
    }
}

sisci_export! {
    fn SCIGetLocalCSR(sd: usize, localAdapterNo: u32, CSROffset: u32, flags: u32, error: *mut SciErr) -> u32 {
        let _ = (sd, localAdapterNo, CSROffset, flags);
        unsupported("SCIGetLocalCSR", error);
        0
    }
}

sisci_export! {
    fn SCISetLocalCSR(sd: usize, localAdapterNo: u32, CSROffset: u32, CSRValue: u32, flags: u32, error: *mut SciErr) {
        let _ = (sd, localAdapterNo, CSROffset, CSRValue, flags);
        unsupported("SCISetLocalCSR", error)
    }
}

sisci_export! {
    fn SCIConnectSCISpace(sd: usize, localAdapterNo: u32, segment: *mut usize, address: SciAddress, size: usize, flags: u32, error: *mut SciErr) {
        let _ = (sd, localAdapterNo, segment, address, size, flags);
        unsupported("SCIConnectSCISpace", error)
    }
}

sisci_export! {
    fn SCIphDmaEnqueue(dmaqueue: usize, size: u32, localBusAddr: u64, remote_nodeid: u32, remote_highaddr: u32, remote_lowaddr: u32, flags: u32, error: *mut SciErr) {
        let _ = (dmaqueue, size, localBusAddr, remote_nodeid, remote_highaddr, remote_lowaddr, flags);
        unsupported("SCIphDmaEnqueue", error)
    }
}

sisci_export! {
    fn SCIphDmaStart(dmaqueue: usize, callback: CbDma, callbackArg: *mut c_void, flags: u32, error: *mut SciErr) -> u32 {
        let _ = (dmaqueue, callback, callbackArg, flags);
        unsupported("SCIphDmaStart", error);
        SCI_DMAQUEUE_ERROR
    }
}

sisci_export! {
    fn SCIRegisterInterruptFlag(localAdapterNo: u32, interrupt: *mut usize, segment: usize, offset: u32, callback: CbInterrupt, callbackArg: *mut c_void, flags: u32, error: *mut SciErr) {
        let _ = (localAdapterNo, interrupt, segment, offset, callback, callbackArg, flags);
        unsupported("SCIRegisterInterruptFlag", error)
    }
}

sisci_export! {
    fn SCIEnableConditionalInterrupt(interrupt: usize, flags: u32, error: *mut SciErr) {
        let _ = (interrupt, flags);
        unsupported("SCIEnableConditionalInterrupt", error)
    }
}

sisci_export! {
    fn SCIDisableConditionalInterrupt(interrupt: usize, flags: u32, error: *mut SciErr) {
        let _ = (interrupt, flags);
        unsupported("SCIDisableConditionalInterrupt", error)
    }
}

sisci_export! {
    fn SCIGetConditionalInterruptTrigCounter(interrupt: usize, interruptTrigCounter: *mut u32, flags: u32, error: *mut SciErr) {
        let _ = (interrupt, interruptTrigCounter, flags);
        unsupported("SCIGetConditionalInterruptTrigCounter", error)
    }
}

sisci_export! {
    fn SCITransferBlockAsync(sourceMap: usize, sourceOffset: u32, destinationMap: usize, destinationOffset: u32, size: u32, block: *mut usize, callback: CbBlockTransfer, callbackArg: *mut c_void, flags: u32, error: *mut SciErr) {
        let _ = (sourceMap, sourceOffset, destinationMap, destinationOffset, size, block, callback, callbackArg, flags);
        unsupported("SCITransferBlockAsync", error)
    }
}

sisci_export! {
    fn SCIWaitForBlockTransfer(block: usize, timeout: u32, flags: u32, error: *mut SciErr) {
        let _ = (block, timeout, flags);
        unsupported("SCIWaitForBlockTransfer", error)
    }
}

sisci_export! {
    fn SCIAbortBlockTransfer(block: usize, flags: u32, error: *mut SciErr) {
        let _ = (block, flags);
        unsupported("SCIAbortBlockTransfer", error)
    }
}
