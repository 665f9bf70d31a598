//! Exports of the uGNI functions that are not implemented yet.
//!
//! This is the one sanctioned place for placeholders: every function the
//! header declares is exported from the start, so programs link and the ABI
//! check can hold the symbol list to the fact sheet while the library grows.
//! Implementing a function means deleting its line here and writing it in
//! the module that owns its group; nothing else refers to these entries.
//!
//! Until then a `GNI_*` call returns `GNI_RC_ILLEGAL_OP` (the "operation not
//! possible" code) and logs one warning per function naming it, so a program
//! that depends on it fails visibly instead of silently.  The CQ entry and CE
//! result accessors return 0 and the setters do nothing; they are silent
//! because programs call them in polling loops.

use crate::types::*;
use libc::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Shared body of the placeholders: warn once per function, then refuse.
fn not_yet(api: &'static str, warned: &AtomicBool) -> gni_return_t {
    if !warned.swap(true, Relaxed) {
        softnic_fabric::sn_warn!(api, "not implemented yet in softnic; returning GNI_RC_ILLEGAL_OP");
    }
    GNI_RC_ILLEGAL_OP
}

/// `name(args);` lines -> `#[no_mangle] extern "C" fn name(args) -> gni_return_t`.
macro_rules! pending {
    ($($name:ident($($arg:ident: $ty:ty),* $(,)?);)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> gni_return_t {
            $(let _ = $arg;)*
            static WARNED: AtomicBool = AtomicBool::new(false);
            not_yet(stringify!($name), &WARNED)
        }
    )*};
}

/// Accessors: `name(args) -> ret;` returning the type's zero.
macro_rules! pending_accessor {
    ($($name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) $(-> $ret)? {
            $(let _ = $arg;)*
            $(<$ret>::default())?
        }
    )*};
}

// CQ entry accessors live in cqe.rs (our CQE bit layout).

// Collective engine result accessors (the GNI_CE_RES_* macros).
pending_accessor! {
    gni_ce_res_get_status(res: *mut gni_ce_result_t) -> u64;
    gni_ce_res_status_ok(res: *mut gni_ce_result_t) -> u64;
    gni_ce_res_get_fpe(res: *mut gni_ce_result_t) -> u64;
    gni_ce_res_get_red_id(res: *mut gni_ce_result_t) -> u64;
}

pending! {
    // Communication domains, NIC attach.
    GNI_CdmCreate(inst_id: u32, ptag: u8, cookie: u32, modes: u32, cdm_hndl: *mut gni_cdm_handle_t);
    GNI_CdmDestroy(cdm_hndl: gni_cdm_handle_t);
    GNI_CdmGetNicAddress(device_id: u32, address: *mut u32, cpu_id: *mut u32);
    GNI_CdmAttach(cdm_hndl: gni_cdm_handle_t, device_id: u32, local_addr: *mut u32,
                  nic_hndl: *mut gni_nic_handle_t);
    GNI_CdmCheckpoint(cdm_handle: gni_cdm_handle_t);
    GNI_CdmResume(cdm_handle: gni_cdm_handle_t);

    // Job control and NTT (privileged on a Cray).
    GNI_SuspendJob(device_id: u32, job_id: u64, ptag: u8, cookie: u32, timeout: u32);
    GNI_ResumeJob(device_id: u32, job_id: u64, ptag: u8, cookie: u32);
    GNI_ConfigureNTT(device_id: c_int, ntt_desc: *mut gni_ntt_descriptor_t, ntt_base: *mut u32);
    GNI_ConfigureJob(device_id: u32, job_id: u64, ptag: u8, cookie: u32,
                     limits: *mut gni_job_limits_t);
    GNI_ConfigureNTTandJob(device_id: c_int, job_id: u64, ptag: u8, cookie: u32,
                           limits: *mut gni_job_limits_t, ntt_desc: *mut gni_ntt_descriptor_t,
                           ntt_base: *mut u32);

    // Endpoints.
    GNI_EpCreate(nic_hndl: gni_nic_handle_t, src_cq_hndl: gni_cq_handle_t,
                 ep_hndl: *mut gni_ep_handle_t);
    GNI_EpSetEventData(ep_hndl: gni_ep_handle_t, local_event: u32, remote_event: u32);
    GNI_EpBind(ep_hndl: gni_ep_handle_t, remote_addr: u32, remote_id: u32);
    GNI_EpUnbind(ep_hndl: gni_ep_handle_t);
    GNI_EpIdle(ep_hndl: gni_ep_handle_t);
    GNI_EpDestroy(ep_hndl: gni_ep_handle_t);

    // Datagrams.
    GNI_EpPostData(ep_hndl: gni_ep_handle_t, in_data: *mut c_void, data_len: u16,
                   out_buf: *mut c_void, buf_size: u16);
    GNI_EpPostDataWId(ep_hndl: gni_ep_handle_t, in_data: *mut c_void, data_len: u16,
                      out_buf: *mut c_void, buf_size: u16, datagram_id: u64);
    GNI_EpPostDataTest(ep_hndl: gni_ep_handle_t, post_state: *mut gni_post_state_t,
                       remote_addr: *mut u32, remote_id: *mut u32);
    GNI_EpPostDataTestById(ep_hndl: gni_ep_handle_t, datagram_id: u64,
                           post_state: *mut gni_post_state_t, remote_addr: *mut u32,
                           remote_id: *mut u32);
    GNI_EpPostDataWait(ep_hndl: gni_ep_handle_t, timeout: u32, post_state: *mut gni_post_state_t,
                       remote_addr: *mut u32, remote_id: *mut u32);
    GNI_EpPostDataWaitById(ep_hndl: gni_ep_handle_t, datagram_id: u64, timeout: u32,
                           post_state: *mut gni_post_state_t, remote_addr: *mut u32,
                           remote_id: *mut u32);
    GNI_PostDataProbe(nic_hndl: gni_nic_handle_t, remote_addr: *mut u32, remote_id: *mut u32);
    GNI_PostDataProbeById(nic_hndl: gni_nic_handle_t, datagram_id: *mut u64);
    GNI_PostdataProbeWaitById(nic_hndl: gni_nic_handle_t, timeout: u32, datagram_id: *mut u64);
    // The 2010 manual's spelling of the previous function; move both together.
    GNI_PostDataProbeWaitById(nic_hndl: gni_nic_handle_t, timeout: u32, datagram_id: *mut u64);
    GNI_EpPostDataCancel(ep_hndl: gni_ep_handle_t);
    GNI_EpPostDataCancelById(ep_hndl: gni_ep_handle_t, datagram_id: u64);

    // Memory registration.
    GNI_MemRegister(nic_hndl: gni_nic_handle_t, address: u64, length: u64,
                    dst_cq_hndl: gni_cq_handle_t, flags: u32, vmdh_index: u32,
                    mem_hndl: *mut gni_mem_handle_t);
    GNI_MemRegisterSegments(nic_hndl: gni_nic_handle_t, mem_segments: *mut gni_mem_segment_t,
                            segments_cnt: u32, dst_cq_hndl: gni_cq_handle_t, flags: u32,
                            vmdh_index: u32, mem_hndl: *mut gni_mem_handle_t);
    GNI_SetMddResources(nic_hndl: gni_nic_handle_t, num_entries: u32);
    GNI_MemDeregister(nic_hndl: gni_nic_handle_t, mem_hndl: *mut gni_mem_handle_t);
    GNI_MemHndlQueryAttr(mem_hndl: *mut gni_mem_handle_t, attr: gni_mem_handle_attr_t,
                         yesno: *mut c_int);
    GNI_RebuildMemHndl(src_mem_hndl: *mut gni_mem_handle_t, vmdh_index: u32,
                       dst_mem_hndl: *mut gni_mem_handle_t);
    GNI_MemQueryHndls(nic_hndl: gni_nic_handle_t, fd: c_int, mem_hndl: *mut gni_mem_handle_t,
                      address: *mut u64, length: *mut u64);

    // Completion queues.
    GNI_CqCreate(nic_hndl: gni_nic_handle_t, entry_count: u32, delay_count: u32,
                 mode: gni_cq_mode_t, handler: gni_cq_handler_t, context: *mut c_void,
                 cq_hndl: *mut gni_cq_handle_t);
    GNI_CqDestroy(cq_hndl: gni_cq_handle_t);
    GNI_GetCompleted(cq_hndl: gni_cq_handle_t, event_data: gni_cq_entry_t,
                     post_descr: *mut *mut gni_post_descriptor_t);
    GNI_CqGetEvent(cq_hndl: gni_cq_handle_t, event_data: *mut gni_cq_entry_t);
    GNI_CqWaitEvent(cq_hndl: gni_cq_handle_t, timeout: u64, event_data: *mut gni_cq_entry_t);
    GNI_CqVectorWaitEvent(cq_hndls: *mut gni_cq_handle_t, num_cqs: u32, timeout: u64,
                          event_data: *mut gni_cq_entry_t, which: *mut u32);
    GNI_CqVectorMonitor(cq_hndls: *mut gni_cq_handle_t, num_cqs: u32, timeout: u64,
                        which: *mut u32);
    GNI_CqInterruptMask(cq_hndl: gni_cq_handle_t);
    GNI_CqInterruptUnmask(cq_hndl: gni_cq_handle_t);
    GNI_CqTestEvent(cq_hndl: gni_cq_handle_t);
    GNI_CqErrorStr(entry: gni_cq_entry_t, buffer: *mut c_void, len: u32);
    GNI_CqErrorRecoverable(entry: gni_cq_entry_t, recoverable: *mut u32);

    // RDMA, FMA, AMO, CQ write.
    GNI_PostRdma(ep_hndl: gni_ep_handle_t, post_descr: *mut gni_post_descriptor_t);
    GNI_PostFma(ep_hndl: gni_ep_handle_t, post_descr: *mut gni_post_descriptor_t);
    GNI_PostCqWrite(ep_hndl: gni_ep_handle_t, post_descr: *mut gni_post_descriptor_t);

    // Short messaging.
    GNI_SmsgBufferSizeNeeded(smsg_attr: *mut gni_smsg_attr_t, size: *mut c_uint);
    GNI_SmsgInit(ep_hndl: gni_ep_handle_t, local_smsg_attr: *mut gni_smsg_attr_t,
                 remote_smsg_attr: *mut gni_smsg_attr_t);
    GNI_SmsgSetDeliveryMode(nic_handle: gni_nic_handle_t, dlvr_mode: u16);
    GNI_SmsgSend(ep_hndl: gni_ep_handle_t, header: *mut c_void, header_length: u32,
                 data: *mut c_void, data_length: u32, msg_id: u32);
    GNI_SmsgSendWTag(ep_hndl: gni_ep_handle_t, header: *mut c_void, header_length: u32,
                     data: *mut c_void, data_length: u32, msg_id: u32, tag: u8);
    GNI_SmsgGetNext(ep_hndl: gni_ep_handle_t, header: *mut *mut c_void);
    GNI_SmsgGetNextWTag(ep_hndl: gni_ep_handle_t, header: *mut *mut c_void, tag: *mut u8);
    GNI_SmsgRelease(ep_hndl: gni_ep_handle_t);
    GNI_SmsgSetMaxRetrans(nic_handle: gni_nic_handle_t, max_retrans: u16);

    // Message queues.
    GNI_MsgqInit(nic_hndl: gni_nic_handle_t, rcv_cb: Option<gni_msgq_rcv_cb_func>,
                 cb_data: *mut c_void, snd_cq: gni_cq_handle_t, attrs: *mut gni_msgq_attr_t,
                 msgq_hndl: *mut gni_msgq_handle_t);
    GNI_MsgqRelease(msgq_hndl: gni_msgq_handle_t);
    GNI_MsgqIdle(msgq_hndl: gni_msgq_handle_t);
    GNI_MsgqGetConnAttrs(msgq_hndl: gni_msgq_handle_t, pe_addr: u32,
                         attrs: *mut gni_msgq_ep_attr_t, attrs_size: *mut u32);
    GNI_MsgqConnect(msgq_hndl: gni_msgq_handle_t, pe_addr: u32, attrs: *mut gni_msgq_ep_attr_t);
    GNI_MsgqConnRelease(msgq_hndl: gni_msgq_handle_t, pe_addr: u32);
    GNI_MsgqSend(msgq_hndl: gni_msgq_handle_t, ep_hndl: gni_ep_handle_t, hdr: *mut c_void,
                 hdr_len: u32, msg: *mut c_void, msg_len: u32, msg_id: u32, msg_tag: u8);
    GNI_MsgqProgress(msgq_hndl: gni_msgq_handle_t, timeout: u32);
    GNI_MsgqSize(attrs: *mut gni_msgq_attr_t, size: *mut u32);

    // Error events.
    GNI_SubscribeErrors(nic_handle: gni_nic_handle_t, device_id: u32, mask: gni_error_mask_t,
                        eeq_size: u32, err_handle: *mut gni_err_handle_t);
    GNI_ReleaseErrors(err_handle: gni_err_handle_t);
    GNI_GetErrorMask(err_handle: gni_err_handle_t, mask: *mut gni_error_mask_t);
    GNI_SetErrorMask(err_handle: gni_err_handle_t, mask_in: gni_error_mask_t,
                     mask_out: *mut gni_error_mask_t);
    GNI_GetErrorEvent(err_handle: gni_err_handle_t, event: *mut gni_error_event_t);
    GNI_WaitErrorEvents(err_handle: gni_err_handle_t, events: *mut gni_error_event_t,
                        events_size: u32, timeout: u32, num_events: *mut u32);
    GNI_SetErrorPtag(err_handle: gni_err_handle_t, ptag: u8);

    // Devices, version, resources.
    GNI_GetNumLocalDevices(num_devices: *mut c_int);
    GNI_GetLocalDeviceIds(len: c_int, device_ids: *mut c_int);
    GNI_GetVersion(version: *mut u32);
    GNI_GetVersionInformation(version_info: *mut gni_version_info_t);
    GNI_GetDeviceType(dev_type: *mut gni_nic_device_t);
    GNI_GetDevResInfo(device_id: u32, res_type: gni_dev_res_t, res_desc: *mut gni_dev_res_desc_t);
    GNI_GetJobResInfo(device_id: u32, ptag: u8, res_type: gni_job_res_t,
                      res_desc: *mut gni_job_res_desc_t);
    GNI_GetNttGran(device_id: u32, ntt_gran: *mut u32);
    GNI_GetPtag(device_id: u32, cookie: u32, ptag: *mut u8);

    // Collective engine.
    GNI_CeCreate(nic_hndl: gni_nic_handle_t, ce_hndl: *mut gni_ce_handle_t);
    GNI_CeGetId(ce_hndl: gni_ce_handle_t, ce_id: *mut u32);
    GNI_EpSetCeAttr(ep_hndl: gni_ep_handle_t, ce_id: u32, child_id: u32,
                    child_type: gni_ce_child_t);
    GNI_CeConfigure(ce_hndl: gni_ce_handle_t, child_eps: *mut gni_ep_handle_t,
                    num_child_eps: u32, parent_ep: gni_ep_handle_t, cq_hndl: gni_cq_handle_t,
                    modes: u32);
    GNI_CeCheckResult(result: *mut gni_ce_result_t, length: u32);
    GNI_CeDestroy(ce_hndl: gni_ce_handle_t);

    // Bandwidth throttling and NIC statistics.
    GNI_SetBIConfig(device_id: u32, bw: u16, aot_bw: u16, modes: u16);
    GNI_GetBIConfig(device_id: u32, desc: *mut gni_bi_desc_t);
    GNI_BISyncWait(device_id: u32, timeout: u32);
    GNI_GetNicStat(nic_hndl: gni_nic_handle_t, stat: gni_statistic_t, value: *mut u32);
    GNI_ResetNicStat(nic_hndl: gni_nic_handle_t, stat: gni_statistic_t);
}
