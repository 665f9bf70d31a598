//! NIC statistics (`GNI_GetNicStat`, `GNI_ResetNicStat`) and the bandwidth-injection
//! configuration (`GNI_SetBIConfig`, `GNI_GetBIConfig`, `GNI_BISyncWait`).
//!
//! # Statistics
//! Every `gni_statistic_t` of the Aries form of the enum (0..=18; the non-Aries form is its
//! prefix 0..=6) is accepted; a larger value is INVALID_PARAM, as are an invalid or
//! destroyed NIC handle and a NULL `value`.  Counters are per NIC handle, start at 0 and
//! saturate at `u32::MAX`; `GNI_ResetNicStat` sets one back to 0.  What they count here:
//! - `GNI_STAT_SMSG_MBOX_CREDITS_STALL`: `GNI_SmsgSend[WTag]` calls refused with NOT_DONE
//!   because the peer's mailbox had no credit left.
//! - `GNI_STAT_SMSG_BUFF_CREDITS_STALL`: `GNI_MsgqSend` calls refused with NOT_DONE
//!   because the receiver's shared queue was full (crate::msgq).
//! - Everything else is a hardware counter with no equivalent and stays 0: there is no DLA
//!   (`SMSG_DLA_STALL`, every `DLA_*`), no request-credit stall (`SMSG_REQ_STALL`), and the
//!   transport never retransmits (`SMSG_RETRANS_*`, `FLBTE_*`).
//!
//! # Bandwidth injection (BI)
//! The digest does not call these privileged, so they are not PERMISSION_ERROR: there is
//! no injection throttle to program, so the configuration is **recorded and reported**.
//! Only device 0 exists (it may also be named `(uint32_t)-1`, as GNI_CdmAttach accepts;
//! another id: INVALID_PARAM; NULL `desc`: INVALID_PARAM).  The
//! record is per process.  `GNI_SetBIConfig(dev, bw, aot_bw, modes)` stores bw, aot_bw and
//! `modes` (reported as `flags`) and bumps `cle_seqnum`; `GNI_GetBIConfig` reports them
//! with `sys_def_bw`/`sys_def_aot_bw` = [`BI_SYS_DEFAULT`], `current_norbs` = 0 and
//! `hss_seqnum` = 0; before any Set the current values are the system defaults.
//! `GNI_BISyncWait` returns SUCCESS at once: a recorded configuration is in effect
//! immediately.

use crate::handles::{lock, GniResult};
use crate::objects::*;
use crate::types::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// Number of statistics (the Aries enum).
pub const NSTATS: usize = GNI_NUM_STATS_ARIES as usize;
/// System default bandwidth values reported by GNI_GetBIConfig (100 %: unthrottled).
pub const BI_SYS_DEFAULT: u16 = 100;

type Counters = [AtomicU32; NSTATS];

/// Counters by NIC (`Arc::as_ptr`); the Weak keeps the allocation, so an address is never
/// reused for another NIC while its entry exists.
static STATS: Mutex<Option<HashMap<usize, (Weak<Nic>, Arc<Counters>)>>> = Mutex::new(None);

fn counters(nic: &Arc<Nic>) -> Arc<Counters> {
    let mut g = lock(&STATS);
    let m = g.get_or_insert_with(HashMap::new);
    m.retain(|_, (w, _)| w.strong_count() > 0);
    m.entry(Arc::as_ptr(nic) as usize)
        .or_insert_with(|| (Arc::downgrade(nic), Arc::new(std::array::from_fn(|_| AtomicU32::new(0)))))
        .1
        .clone()
}

/// Counts one event of `stat` on `nic`.
pub fn bump(nic: &Arc<Nic>, stat: gni_statistic_t) {
    if let Some(c) = counters(nic).get(stat as usize) {
        let _ = c.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| v.checked_add(1));
    }
}

fn nic_of(h: gni_nic_handle_t) -> GniResult<Arc<Nic>> {
    let nic = NICS.get(h as *const _)?;
    if nic.is_detached() {
        return Err(GNI_RC_INVALID_PARAM);
    }
    Ok(nic)
}

#[no_mangle]
pub unsafe extern "C" fn GNI_GetNicStat(nic_hndl: gni_nic_handle_t, stat: gni_statistic_t, value: *mut u32) -> gni_return_t {
    let Ok(nic) = nic_of(nic_hndl) else { return GNI_RC_INVALID_PARAM };
    if value.is_null() || stat as usize >= NSTATS {
        return GNI_RC_INVALID_PARAM;
    }
    let v = counters(&nic)[stat as usize].load(Ordering::Relaxed);
    // SAFETY: non-NULL out pointer of the caller.
    unsafe { value.write(v) };
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_ResetNicStat(nic_hndl: gni_nic_handle_t, stat: gni_statistic_t) -> gni_return_t {
    let Ok(nic) = nic_of(nic_hndl) else { return GNI_RC_INVALID_PARAM };
    if stat as usize >= NSTATS {
        return GNI_RC_INVALID_PARAM;
    }
    counters(&nic)[stat as usize].store(0, Ordering::Relaxed);
    GNI_RC_SUCCESS
}

static BI: Mutex<Option<gni_bi_desc_t>> = Mutex::new(None);

fn bi_default() -> gni_bi_desc_t {
    gni_bi_desc_t {
        current_bw: BI_SYS_DEFAULT,
        current_aot_bw: BI_SYS_DEFAULT,
        current_norbs: 0,
        flags: 0,
        sys_def_bw: BI_SYS_DEFAULT,
        sys_def_aot_bw: BI_SYS_DEFAULT,
        cle_seqnum: 0,
        hss_seqnum: 0,
    }
}

#[no_mangle]
pub unsafe extern "C" fn GNI_SetBIConfig(device_id: u32, bw: u16, aot_bw: u16, modes: u16) -> gni_return_t {
    if !device_ok(device_id) {
        return GNI_RC_INVALID_PARAM;
    }
    let mut g = lock(&BI);
    let d = g.get_or_insert_with(bi_default);
    d.current_bw = bw;
    d.current_aot_bw = aot_bw;
    d.flags = modes;
    d.cle_seqnum = d.cle_seqnum.wrapping_add(1);
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_GetBIConfig(device_id: u32, desc: *mut gni_bi_desc_t) -> gni_return_t {
    if !device_ok(device_id) || desc.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    let d = lock(&BI).unwrap_or_else(bi_default);
    // SAFETY: non-NULL out pointer of the caller.
    unsafe { desc.write(d) };
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_BISyncWait(device_id: u32, timeout: u32) -> gni_return_t {
    let _ = timeout;
    if !device_ok(device_id) {
        return GNI_RC_INVALID_PARAM;
    }
    GNI_RC_SUCCESS
}

fn device_ok(dev: u32) -> bool {
    dev == 0 || dev == u32::MAX
}
