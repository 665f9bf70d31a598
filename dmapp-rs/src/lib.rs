//! libdmapp.so.1: Cray DMAPP over the softnic fabric.
//!
//! Each export decodes its C arguments, checks them, calls the fabric and encodes
//! the result as a `dmapp_return_t`; the decisions where the documents are silent
//! are listed in include/dmapp.h.
//!
//! Modules, top to bottom: each uses only modules below it.
//! - this file: init/finalize, attributes, job info, the symmetric heap's exports,
//!   dynamic registration, error strings.
//! - [`unsupported`]: the functions that return DMAPP_RC_NOT_SUPPORTED, with reasons.
//! - [`coll`]: the collectives (psets, barrier, all-reduce) over the fabric's reduction trees.
//! - [`lock`]: locks on descriptors in a PE's segment (MCS queue lock over the remote AMOs).
//! - [`amo`]: the atomic memory operations, over rma's issue path.
//! - [`sync`]: syncid test/wait and gsync (the completion of `_nb` and `_nbi` requests).
//! - [`rma`]: put/get in every shape, and the issue path of every completion class.
//! - [`progress`]: the progress callbacks, called from the library's waits.
//! - [`queue`]: message queues: attach, detach, put, and who delivers when.
//! - [`job`]: the init/finalize window, the symmetric segments of every PE, address
//!   translation; the job holds the tables below.  (Its finalize keeps the queue
//!   draining with a function `dmapp_finalize` passes down from [`queue`].)
//! - [`heap`]: the deterministic symmetric-heap allocator.
//! - [`lock_table`]: a PE's table of lock queue nodes.
//! - [`queue_ring`]: a PE's receive ring (a fabric ring), delivered to the attached callback.
//! - [`sync_table`]: the syncids of `_nb` requests not yet retired.
//! - [`mutex`]: the one way to take a mutex (poison-tolerant).
//! - [`rc`]: the one fabric-error -> DMAPP-code mapping, and error strings.
//! - [`types`]: the C types of dmapp.h.

pub mod amo;
pub mod coll;
pub mod heap;
pub mod job;
pub mod lock;
pub mod lock_table;
pub mod mutex;
pub mod progress;
pub mod queue;
pub mod queue_ring;
pub mod rc;
pub mod rma;
pub mod sync;
pub mod sync_table;
pub mod types;
pub mod unsupported;

use job::{live, maybe_abort};
use mutex::lock;
use softnic_fabric::mem::{self, Access, CrayHandle};
use softnic_fabric::sn_warn;
use std::ffi::{c_char, c_int, c_void};
use types::*;

fn ext_of(a: &RmaAttrs) -> RmaAttrsExt {
    RmaAttrsExt {
        max_outstanding_nb: a.max_outstanding_nb,
        offload_threshold: a.offload_threshold,
        put_relaxed_ordering: a.put_relaxed_ordering,
        get_relaxed_ordering: a.get_relaxed_ordering,
        max_concurrency: a.max_concurrency,
        PI_ordering: 0,
        // 0: the defaults (this struct has no queue fields).
        queue_depth: 0,
        queue_nelems: 0,
        queue_flags: 0,
        reserved: [0; 20],
    }
}

fn base_of(a: &RmaAttrsExt) -> RmaAttrs {
    RmaAttrs {
        max_outstanding_nb: a.max_outstanding_nb,
        offload_threshold: a.offload_threshold,
        put_relaxed_ordering: a.put_relaxed_ordering,
        get_relaxed_ordering: a.get_relaxed_ordering,
        max_concurrency: a.max_concurrency,
    }
}

fn init_common(req: RmaAttrsExt) -> Result<RmaAttrsExt, Rc> {
    job::check_attrs(&req, true)?;
    job::init(&req)
}

/// # Safety
/// NULL or valid pointers.
#[no_mangle]
pub unsafe extern "C" fn dmapp_init(requested_attrs: *mut RmaAttrs, actual_attrs: *mut RmaAttrs) -> Rc {
    let _span = softnic_fabric::trace::span("dmapp", "dmapp_init");
    if requested_attrs.is_null() || actual_attrs.is_null() {
        return maybe_abort("dmapp_init", DMAPP_RC_INVALID_PARAM);
    }
    // SAFETY: non-null.
    let req = ext_of(&unsafe { requested_attrs.read_unaligned() });
    match init_common(req) {
        Ok(a) => {
            // SAFETY: non-null.
            unsafe { actual_attrs.write_unaligned(base_of(&a)) };
            DMAPP_RC_SUCCESS
        }
        Err(rc) => maybe_abort("dmapp_init", rc),
    }
}

/// # Safety
/// NULL or valid pointers.
#[no_mangle]
pub unsafe extern "C" fn dmapp_init_ext(requested_attrs: *mut RmaAttrsExt, actual_attrs: *mut RmaAttrsExt) -> Rc {
    if requested_attrs.is_null() || actual_attrs.is_null() {
        return maybe_abort("dmapp_init_ext", DMAPP_RC_INVALID_PARAM);
    }
    // SAFETY: non-null.
    let mut req = unsafe { requested_attrs.read_unaligned() };
    req.reserved = [0; 20];
    match init_common(req) {
        Ok(a) => {
            // SAFETY: non-null.
            unsafe { actual_attrs.write_unaligned(a) };
            DMAPP_RC_SUCCESS
        }
        Err(rc) => maybe_abort("dmapp_init_ext", rc),
    }
}

#[no_mangle]
pub extern "C" fn dmapp_finalize() -> Rc {
    if softnic_fabric::check::enabled() {
        check_finalize();
    }
    let rc = {
        let _span = softnic_fabric::trace::span("dmapp", "dmapp_finalize");
        // The queue keeps draining while finalize waits for the other PEs (crate::queue).
        job::finalize(queue::drain_during_finalize)
    };
    softnic_fabric::trace::flush();
    rc
}

/// SOFTNIC_CHECK at dmapp_finalize: non-blocking puts and gets never completed (no gsync
/// after an `_nbi` request, no wait or test of an `_nb` request's handle), and regions of
/// dmapp_mem_register never unregistered.
#[cold]
fn check_finalize() {
    use softnic_fabric::check::{caller, outstanding, report};
    let nbi = outstanding(crate::rma::CHECK_NBI);
    if nbi > 0 {
        report("dmapp_finalize", &format!("{nbi} dmapp_put_nbi/dmapp_get_nbi request(s) never completed by dmapp_gsync_wait or _test"), &caller());
    }
    let nb = outstanding(crate::rma::CHECK_NB);
    if nb > 0 {
        report("dmapp_finalize", &format!("{nb} dmapp_put_nb/dmapp_get_nb request(s) whose sync handle was never waited for or tested"), &caller());
    }
    if let Ok(job) = live() {
        let regs = lock(&job.dynregs).len();
        if regs > 0 {
            report("dmapp_mem_unregister", &format!("{regs} dmapp_mem_register region(s) never unregistered before dmapp_finalize"), &caller());
        }
    }
}

/// # Safety
/// NULL or a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn dmapp_get_jobinfo(info: *mut JobInfo) -> Rc {
    let job = match live() {
        Ok(j) => j,
        Err(rc) => return rc,
    };
    if info.is_null() {
        return DMAPP_RC_INVALID_PARAM;
    }
    let v = JobInfo {
        version: DMAPP_JOB_VERSION,
        hw_version: DMAPP_GNI_HW_MAJOR_GEMINI,
        npes: job.npes as c_int,
        pe: job.pe as Pe,
        data_seg: job.local[job::DATA],
        sheap_seg: job.local[job::SHEAP],
    };
    // SAFETY: non-null.
    unsafe { info.write_unaligned(v) };
    DMAPP_RC_SUCCESS
}

/// The attributes in effect; before `dmapp_init*` the defaults (programs read them,
/// change a field and pass them to `dmapp_init_ext`); after `dmapp_finalize`
/// INVALID_PARAM.
fn get_attrs() -> Result<RmaAttrsExt, Rc> {
    match live() {
        Ok(job) => Ok(*lock(&job.attrs)),
        Err(_) if job::before_init() => Ok(RmaAttrsExt::DEFAULTS),
        Err(rc) => Err(rc),
    }
}

/// `*flag` = 1 between a successful `dmapp_init*` and `dmapp_finalize`, else 0 (later
/// DMAPP releases; callable at any time).
///
/// # Safety
/// NULL or a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn dmapp_initialized(flag: *mut c_int) -> Rc {
    if flag.is_null() {
        return DMAPP_RC_INVALID_PARAM;
    }
    // SAFETY: non-null.
    unsafe { flag.write_unaligned(job::initialized() as c_int) };
    DMAPP_RC_SUCCESS
}

/// Applies the dynamic fields of `req`; the static ones keep their init values.
fn set_attrs(req: &RmaAttrsExt) -> Result<RmaAttrsExt, Rc> {
    let job = live()?;
    job::check_attrs(req, false)?;
    let mut a = lock(&job.attrs);
    a.offload_threshold = req.offload_threshold;
    a.put_relaxed_ordering = req.put_relaxed_ordering;
    a.get_relaxed_ordering = req.get_relaxed_ordering;
    a.PI_ordering = req.PI_ordering;
    Ok(*a)
}

/// # Safety
/// NULL or a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn dmapp_get_rma_attrs(attrs: *mut RmaAttrs) -> Rc {
    match get_attrs() {
        Ok(_) if attrs.is_null() => DMAPP_RC_INVALID_PARAM,
        // SAFETY: non-null.
        Ok(a) => unsafe { attrs.write_unaligned(base_of(&a)); DMAPP_RC_SUCCESS },
        Err(rc) => rc,
    }
}

/// # Safety
/// NULL or a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn dmapp_get_rma_attrs_ext(attrs: *mut RmaAttrsExt) -> Rc {
    match get_attrs() {
        Ok(_) if attrs.is_null() => DMAPP_RC_INVALID_PARAM,
        // SAFETY: non-null.
        Ok(a) => unsafe { attrs.write_unaligned(a); DMAPP_RC_SUCCESS },
        Err(rc) => rc,
    }
}

/// # Safety
/// NULL or valid pointers.
#[no_mangle]
pub unsafe extern "C" fn dmapp_set_rma_attrs(requested_attrs: *mut RmaAttrs, actual_attrs: *mut RmaAttrs) -> Rc {
    if let Err(rc) = live() {
        return rc;
    }
    if requested_attrs.is_null() || actual_attrs.is_null() {
        return DMAPP_RC_INVALID_PARAM;
    }
    // SAFETY: non-null.  PI_ordering is not in this struct: keep the current value.
    let mut req = ext_of(&unsafe { requested_attrs.read_unaligned() });
    req.PI_ordering = get_attrs().map(|a| a.PI_ordering).unwrap_or(0);
    match set_attrs(&req) {
        // SAFETY: non-null.
        Ok(a) => unsafe { actual_attrs.write_unaligned(base_of(&a)); DMAPP_RC_SUCCESS },
        Err(rc) => rc,
    }
}

/// # Safety
/// NULL or valid pointers.
#[no_mangle]
pub unsafe extern "C" fn dmapp_set_rma_attrs_ext(requested_attrs: *mut RmaAttrsExt, actual_attrs: *mut RmaAttrsExt) -> Rc {
    if let Err(rc) = live() {
        return rc;
    }
    if requested_attrs.is_null() || actual_attrs.is_null() {
        return DMAPP_RC_INVALID_PARAM;
    }
    // SAFETY: non-null.
    match set_attrs(&unsafe { requested_attrs.read_unaligned() }) {
        // SAFETY: non-null.
        Ok(a) => unsafe { actual_attrs.write_unaligned(a); DMAPP_RC_SUCCESS },
        Err(rc) => rc,
    }
}

// ---- symmetric heap -------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn dmapp_sheap_malloc(size: usize) -> *mut c_void {
    let Ok(job) = live() else { return std::ptr::null_mut() };
    let Some(base) = job.heap_base() else {
        sn_warn!("dmapp_sheap_malloc", "the symmetric heap is empty: set XT_SYMMETRIC_HEAP_SIZE (e.g. 64M); the default is 0 bytes");
        maybe_abort("dmapp_sheap_malloc", DMAPP_RC_RESOURCE_ERROR);
        return std::ptr::null_mut();
    };
    let got = lock(&job.heap).malloc(size);
    match got {
        Some(off) => (base + off) as *mut c_void,
        None => {
            maybe_abort("dmapp_sheap_malloc", DMAPP_RC_RESOURCE_ERROR);
            std::ptr::null_mut()
        }
    }
}

/// # Safety
/// `ptr` is NULL or was returned by dmapp_sheap_malloc/realloc and not freed.
#[no_mangle]
pub unsafe extern "C" fn dmapp_sheap_realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    if ptr.is_null() {
        return dmapp_sheap_malloc(size);
    }
    let Ok(job) = live() else { return std::ptr::null_mut() };
    let Some(base) = job.heap_base() else { return std::ptr::null_mut() };
    let Some(off) = (ptr as usize).checked_sub(base) else { return std::ptr::null_mut() };
    let mut h = lock(&job.heap);
    let Some(cur) = h.block(off) else { return std::ptr::null_mut() };
    if size == 0 {
        h.free(off);
        return std::ptr::null_mut();
    }
    match h.resize_in_place(off, size) {
        Some(true) => ptr,
        Some(false) => match h.malloc(size) {
            Some(new) => {
                // SAFETY: two distinct live blocks inside the heap mapping.
                unsafe { std::ptr::copy_nonoverlapping((base + off) as *const u8, (base + new) as *mut u8, cur.min(size)) };
                h.free(off);
                (base + new) as *mut c_void
            }
            None => {
                drop(h);
                maybe_abort("dmapp_sheap_realloc", DMAPP_RC_RESOURCE_ERROR);
                std::ptr::null_mut() // the old block is unchanged
            }
        },
        None => std::ptr::null_mut(),
    }
}

/// # Safety
/// `ptr` is NULL or was returned by dmapp_sheap_malloc/realloc.
#[no_mangle]
pub unsafe extern "C" fn dmapp_sheap_free(ptr: *mut c_void) {
    if ptr.is_null() {
        return;
    }
    let Ok(job) = live() else { return };
    let Some(base) = job.heap_base() else { return };
    let freed = (ptr as usize).checked_sub(base).is_some_and(|off| lock(&job.heap).free(off));
    if !freed {
        sn_warn!("dmapp_sheap_free", "{:p} is not a live symmetric-heap block; ignored", ptr);
        maybe_abort("dmapp_sheap_free", DMAPP_RC_INVALID_PARAM);
    }
}

// ---- dynamic registration ---------------------------------------------------------------

/// # Safety
/// NULL or valid pointers; [addr, addr+length) mapped.
#[no_mangle]
pub unsafe extern "C" fn dmapp_mem_register(addr: *mut c_void, length: u64, seg_desc: *mut SegDesc) -> Rc {
    let job = match live() {
        Ok(j) => j,
        Err(rc) => return maybe_abort("dmapp_mem_register", rc),
    };
    if addr.is_null() || length == 0 || seg_desc.is_null() {
        return maybe_abort("dmapp_mem_register", DMAPP_RC_INVALID_PARAM);
    }
    let Ok(len) = usize::try_from(length) else { return maybe_abort("dmapp_mem_register", DMAPP_RC_INVALID_PARAM) };
    // Peers will write it: every page must be mapped writable (dmapp.h).
    if mem::mapped_writable(addr as usize, len) != Some(true) {
        sn_warn!("dmapp_mem_register", "{:p}+{}: not all mapped readable and writable", addr, length);
        return maybe_abort("dmapp_mem_register", DMAPP_RC_RESOURCE_ERROR);
    }
    match mem::register(addr as usize, len, Access::ReadWrite, job.pd) {
        Ok(key) => {
            let Ok(h) = CrayHandle::mine(addr as u64, key) else {
                let _ = mem::deregister(key);
                return maybe_abort("dmapp_mem_register", DMAPP_RC_INVALID_PARAM);
            };
            let w = h.to_words();
            lock(&job.dynregs).insert(w, key);
            let d = SegDesc::new(addr, len, GniMemHandle { qword1: w[0], qword2: w[1] });
            // SAFETY: non-null.
            unsafe { seg_desc.write_unaligned(d) };
            DMAPP_RC_SUCCESS
        }
        Err(e) => {
            sn_warn!("dmapp_mem_register", "{:p}+{}: {}", addr, length, e);
            maybe_abort("dmapp_mem_register", rc::from_setup(e))
        }
    }
}

/// # Safety
/// NULL or a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn dmapp_mem_unregister(seg_desc: *mut SegDesc) -> Rc {
    let job = match live() {
        Ok(j) => j,
        Err(rc) => return maybe_abort("dmapp_mem_unregister", rc),
    };
    if seg_desc.is_null() {
        return maybe_abort("dmapp_mem_unregister", DMAPP_RC_INVALID_PARAM);
    }
    // SAFETY: non-null.
    let d = unsafe { seg_desc.read_unaligned() };
    // Only what dmapp_mem_register made here: never the data segment or the heap.
    let Some(key) = lock(&job.dynregs).remove(&[d.memhndl.qword1, d.memhndl.qword2]) else {
        return maybe_abort("dmapp_mem_unregister", DMAPP_RC_INVALID_PARAM);
    };
    match mem::deregister(key) {
        Ok(()) => DMAPP_RC_SUCCESS,
        Err(_) => maybe_abort("dmapp_mem_unregister", DMAPP_RC_INVALID_PARAM),
    }
}

/// Same region = same address, length and handle (flags/reserved are ignored).
///
/// # Safety
/// NULL or valid pointers.
#[no_mangle]
pub unsafe extern "C" fn dmapp_segdesc_compare(seg_desc1: *mut SegDesc, seg_desc2: *mut SegDesc, flag: *mut c_int) -> Rc {
    if let Err(rc) = live() {
        return rc;
    }
    if seg_desc1.is_null() || seg_desc2.is_null() || flag.is_null() {
        return DMAPP_RC_INVALID_PARAM;
    }
    // SAFETY: non-null.
    let (a, b) = unsafe { (seg_desc1.read_unaligned(), seg_desc2.read_unaligned()) };
    let same = a.addr == b.addr && a.len == b.len && a.memhndl == b.memhndl;
    // SAFETY: non-null.
    unsafe { flag.write_unaligned(same as c_int) };
    DMAPP_RC_SUCCESS
}

/// Text for a return code (later DMAPP releases; used by SHMEM ports, GA, foMPI).
/// Works at any time, also outside init/finalize.
///
/// # Safety
/// `msg` is NULL or a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn dmapp_explain_error(rc: Rc, msg: *mut *const c_char) -> Rc {
    if msg.is_null() {
        return DMAPP_RC_INVALID_PARAM;
    }
    match rc::text(rc) {
        Some(t) => {
            // SAFETY: non-null; static NUL-terminated text.
            unsafe { msg.write_unaligned(t.as_ptr() as *const c_char) };
            DMAPP_RC_SUCCESS
        }
        None => DMAPP_RC_INVALID_PARAM,
    }
}
