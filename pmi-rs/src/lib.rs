//! libpmi.so.0: the PMI-1 C interface and the Cray extensions, over
//! `softnic_fabric::pmi` (the wire client) and `softnic_fabric::bootstrap`
//! (collectives).  Each export decodes its C arguments, calls the fabric and
//! maps the result to a PMI code; the behaviour choices are documented in
//! include/pmi.h.
//!
//! # Safety (all exports)
//! Pointers must be NULL or valid for the access the prototype implies
//! (strings NUL-terminated, output buffers at least `length` bytes/ints).
//! NULL is always detected and reported, never dereferenced.

#![allow(clippy::missing_safety_doc)]

use libc::{c_char, c_int, c_void};
use softnic_fabric::bootstrap;
use softnic_fabric::pmi::{self, Client};
use softnic_fabric::Error;
use std::ffi::CStr;

pub const PMI_SUCCESS: c_int = 0;
pub const PMI_FAIL: c_int = -1;
pub const PMI_ERR_INIT: c_int = 1;
pub const PMI_ERR_NOMEM: c_int = 2;
pub const PMI_ERR_INVALID_ARG: c_int = 3;
pub const PMI_ERR_INVALID_KEY: c_int = 4;
pub const PMI_ERR_INVALID_KEY_LENGTH: c_int = 5;
pub const PMI_ERR_INVALID_VAL: c_int = 6;
pub const PMI_ERR_INVALID_VAL_LENGTH: c_int = 7;
pub const PMI_ERR_INVALID_LENGTH: c_int = 8;
pub const PMI_ERR_INVALID_NUM_ARGS: c_int = 9;
pub const PMI_ERR_INVALID_ARGS: c_int = 10;
pub const PMI_ERR_INVALID_NUM_PARSED: c_int = 11;
pub const PMI_ERR_INVALID_KEYVALP: c_int = 12;
pub const PMI_ERR_INVALID_SIZE: c_int = 13;
pub const PMI_ERR_INVALID_KVS: c_int = 14;
pub const PMI_TRUE: c_int = 1;
pub const PMI_FALSE: c_int = 0;

/// Same layout as the C `PMI_keyval_t` (16 bytes: two pointers).
#[repr(C)]
pub struct PmiKeyval {
    pub key: *mut c_char,
    pub val: *mut c_char,
}

/// Same layout as the C `pmi_mesh_coord_t` (three uint16_t).
#[repr(C)]
pub struct PmiMeshCoord {
    pub mesh_x: u16,
    pub mesh_y: u16,
    pub mesh_z: u16,
}

type R = std::result::Result<(), c_int>;

/// Code for a failure to reach the job: after PMI_Finalize the library is
/// no longer initialised; otherwise the launcher could not be reached.
fn conn_err(_e: Error) -> c_int {
    if pmi::finalized() {
        PMI_ERR_INIT
    } else {
        PMI_FAIL
    }
}

/// Code for an error inside an operation (wire failure, unsupported, ...).
fn op_err(e: Error) -> c_int {
    match e {
        Error::InvalidArg => PMI_ERR_INVALID_ARG,
        Error::NotFound => PMI_ERR_INVALID_KEY,
        _ => PMI_FAIL,
    }
}

/// Runs `f` on the (lazily connected) client and turns the outcome into a PMI code.
fn with(f: impl FnOnce(&mut Client) -> R) -> c_int {
    let mut code = PMI_SUCCESS;
    match pmi::with_client(|c| {
        code = match f(c) {
            Ok(()) => PMI_SUCCESS,
            Err(e) => e,
        };
        Ok(())
    }) {
        Ok(()) => code,
        Err(e) => conn_err(e),
    }
}

/// Borrows a C string; `None` for NULL or non-UTF-8.
unsafe fn cstr<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: caller promises a NUL-terminated string when non-NULL.
    unsafe { CStr::from_ptr(p) }.to_str().ok()
}

/// Copies `s` plus NUL into `dst[..cap]`; false (nothing written) if it does not fit.
unsafe fn copy_out(dst: *mut c_char, cap: c_int, s: &str) -> bool {
    if dst.is_null() || cap <= 0 || s.len() + 1 > cap as usize {
        return false;
    }
    // SAFETY: dst holds cap >= len+1 bytes (caller's contract), ranges do not overlap.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), dst as *mut u8, s.len());
        *dst.add(s.len()) = 0;
    }
    true
}

/// Stores `v` through an out-pointer, or reports PMI_ERR_INVALID_ARG for NULL.
unsafe fn out<T>(p: *mut T, v: T) -> R {
    if p.is_null() {
        return Err(PMI_ERR_INVALID_ARG);
    }
    // SAFETY: non-NULL, caller promises it is valid for writes.
    unsafe { p.write(v) };
    Ok(())
}

/// Decodes a KVS name argument: NULL → INVALID_ARG, unknown → INVALID_KVS.
unsafe fn kvs_arg<'a>(c: &Client, p: *const c_char) -> Result<&'a str, c_int> {
    if p.is_null() {
        return Err(PMI_ERR_INVALID_ARG);
    }
    // SAFETY: forwarded caller contract.
    let k = unsafe { cstr(p) }.ok_or(PMI_ERR_INVALID_KVS)?;
    if c.knows_kvs(k) {
        Ok(k)
    } else {
        Err(PMI_ERR_INVALID_KVS)
    }
}

/// Decodes a key argument against the server's limits.
unsafe fn key_arg<'a>(c: &Client, p: *const c_char) -> Result<&'a str, c_int> {
    // SAFETY: forwarded caller contract.
    let k = unsafe { cstr(p) }.ok_or(PMI_ERR_INVALID_KEY)?;
    if k.len() >= c.job.maxes.key {
        return Err(PMI_ERR_INVALID_KEY_LENGTH);
    }
    pmi::check_key(k, &c.job.maxes).map_err(|_| PMI_ERR_INVALID_KEY)?;
    Ok(k)
}

/// Decodes a value argument against the server's limits.
unsafe fn val_arg<'a>(c: &Client, p: *const c_char) -> Result<&'a str, c_int> {
    // SAFETY: forwarded caller contract.
    let v = unsafe { cstr(p) }.ok_or(PMI_ERR_INVALID_VAL)?;
    if v.len() >= c.job.maxes.val {
        return Err(PMI_ERR_INVALID_VAL_LENGTH);
    }
    pmi::check_val(v, &c.job.maxes).map_err(|_| PMI_ERR_INVALID_VAL)?;
    Ok(v)
}

// ---- initialisation and job shape --------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn PMI_Init(spawned: *mut c_int) -> c_int {
    if spawned.is_null() {
        return PMI_ERR_INVALID_ARG;
    }
    match pmi::init() {
        // SAFETY: checked non-NULL above.
        Ok(s) => unsafe { out(spawned, s as c_int) }.err().unwrap_or(PMI_SUCCESS),
        Err(_) => PMI_FAIL,
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Initialized(initialized: *mut c_int) -> c_int {
    let v = if pmi::initialized() { PMI_TRUE } else { PMI_FALSE };
    // SAFETY: out() checks NULL.
    unsafe { out(initialized, v) }.err().unwrap_or(PMI_SUCCESS)
}

#[no_mangle]
pub extern "C" fn PMI_Finalize() -> c_int {
    match pmi::finalize() {
        Ok(()) => PMI_SUCCESS,
        Err(_) => PMI_FAIL,
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Get_size(size: *mut c_int) -> c_int {
    // SAFETY (all closures below): out() checks NULL.
    with(|c| unsafe { out(size, c.job.size as c_int) })
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Get_rank(rank: *mut c_int) -> c_int {
    with(|c| unsafe { out(rank, c.job.rank as c_int) })
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Get_universe_size(size: *mut c_int) -> c_int {
    with(|c| unsafe { out(size, c.job.universe) })
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Get_appnum(appnum: *mut c_int) -> c_int {
    with(|c| unsafe { out(appnum, c.job.appnum) })
}

// ---- name publishing ------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn PMI_Publish_name(service_name: *const c_char, port: *const c_char) -> c_int {
    if service_name.is_null() || port.is_null() {
        return PMI_ERR_INVALID_ARG;
    }
    with(|c| {
        // SAFETY: non-NULL, caller's string contract.
        let (s, p) = unsafe { (cstr(service_name), cstr(port)) };
        let (s, p) = (s.ok_or(PMI_ERR_INVALID_ARG)?, p.ok_or(PMI_ERR_INVALID_ARG)?);
        c.publish_name(s, p).map_err(op_err_fail)
    })
}

/// For calls whose only failure is "the server said no".
fn op_err_fail(e: Error) -> c_int {
    match e {
        Error::InvalidArg => PMI_ERR_INVALID_ARG,
        _ => PMI_FAIL,
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Unpublish_name(service_name: *const c_char) -> c_int {
    if service_name.is_null() {
        return PMI_ERR_INVALID_ARG;
    }
    with(|c| {
        // SAFETY: non-NULL, caller's string contract.
        let s = unsafe { cstr(service_name) }.ok_or(PMI_ERR_INVALID_ARG)?;
        c.unpublish_name(s).map_err(op_err_fail)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Lookup_name(service_name: *const c_char, port: *mut c_char) -> c_int {
    if service_name.is_null() || port.is_null() {
        return PMI_ERR_INVALID_ARG;
    }
    with(|c| {
        // SAFETY: non-NULL, caller's string contract.
        let s = unsafe { cstr(service_name) }.ok_or(PMI_ERR_INVALID_ARG)?;
        let p = c.lookup_name(s).map_err(op_err_fail)?;
        // The documented capacity of `port` is the value length limit.
        let cap = c.job.maxes.val.min(c_int::MAX as usize) as c_int;
        // SAFETY: caller provides vallen_max bytes.
        if unsafe { copy_out(port, cap, &p) } { Ok(()) } else { Err(PMI_FAIL) }
    })
}

// ---- identity, barrier, cliques, abort ---------------------------------------------

unsafe fn copy_kvsname(dst: *mut c_char, length: c_int) -> c_int {
    if dst.is_null() {
        return PMI_ERR_INVALID_ARG;
    }
    if length <= 0 {
        return PMI_ERR_INVALID_LENGTH;
    }
    // SAFETY: dst valid for `length` bytes (caller's contract).
    with(|c| if unsafe { copy_out(dst, length, &c.job.kvsname) } { Ok(()) } else { Err(PMI_ERR_INVALID_LENGTH) })
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Get_id(id_str: *mut c_char, length: c_int) -> c_int {
    // SAFETY: forwarded.
    unsafe { copy_kvsname(id_str, length) }
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Get_kvs_domain_id(id_str: *mut c_char, length: c_int) -> c_int {
    // SAFETY: forwarded.
    unsafe { copy_kvsname(id_str, length) }
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Get_id_length_max(length: *mut c_int) -> c_int {
    with(|c| unsafe { out(length, c.job.maxes.kvsname as c_int) })
}

softnic_fabric::blocking_export! {
    pub fn PMI_Barrier() -> c_int {
        let _span = softnic_fabric::trace::span("pmi", "PMI_Barrier");
        with(|c| c.barrier().map_err(|_| PMI_FAIL))
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Get_clique_size(size: *mut c_int) -> c_int {
    with(|c| unsafe { out(size, c.job.clique().len() as c_int) })
}

/// Copies the ranks of this node into `ranks[..length]`.
unsafe fn copy_clique(ranks: *mut c_int, length: c_int) -> c_int {
    if ranks.is_null() {
        return PMI_ERR_INVALID_ARG;
    }
    with(|c| {
        let clique = c.job.clique();
        if length < 0 || (length as usize) < clique.len() {
            return Err(PMI_ERR_INVALID_LENGTH);
        }
        for (i, r) in clique.iter().enumerate() {
            // SAFETY: i < clique.len() <= length, caller provides `length` ints.
            unsafe { *ranks.add(i) = *r as c_int };
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Get_clique_ranks(ranks: *mut c_int, length: c_int) -> c_int {
    // SAFETY: forwarded.
    unsafe { copy_clique(ranks, length) }
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Abort(exit_code: c_int, error_msg: *const c_char) -> c_int {
    let msg = if error_msg.is_null() {
        String::new()
    } else {
        // SAFETY: caller's string contract.
        unsafe { CStr::from_ptr(error_msg) }.to_string_lossy().into_owned()
    };
    bootstrap::abort(exit_code, &msg)
}

// ---- key-value spaces ----------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn PMI_KVS_Get_my_name(kvsname: *mut c_char, length: c_int) -> c_int {
    // SAFETY: forwarded.
    unsafe { copy_kvsname(kvsname, length) }
}

#[no_mangle]
pub unsafe extern "C" fn PMI_KVS_Get_name_length_max(length: *mut c_int) -> c_int {
    with(|c| unsafe { out(length, c.job.maxes.kvsname as c_int) })
}

#[no_mangle]
pub unsafe extern "C" fn PMI_KVS_Get_key_length_max(length: *mut c_int) -> c_int {
    with(|c| unsafe { out(length, c.job.maxes.key as c_int) })
}

#[no_mangle]
pub unsafe extern "C" fn PMI_KVS_Get_value_length_max(length: *mut c_int) -> c_int {
    with(|c| unsafe { out(length, c.job.maxes.val as c_int) })
}

#[no_mangle]
pub unsafe extern "C" fn PMI_KVS_Create(kvsname: *mut c_char, length: c_int) -> c_int {
    if kvsname.is_null() {
        return PMI_ERR_INVALID_ARG;
    }
    if length <= 0 {
        return PMI_ERR_INVALID_LENGTH;
    }
    with(|c| {
        let name = c.create_kvs().map_err(|_| PMI_FAIL)?;
        // SAFETY: caller provides `length` bytes.
        if unsafe { copy_out(kvsname, length, &name) } {
            Ok(())
        } else {
            // The caller cannot learn the name, so do not leak the space.
            let _ = c.destroy_kvs(&name);
            Err(PMI_ERR_INVALID_LENGTH)
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMI_KVS_Destroy(kvsname: *const c_char) -> c_int {
    with(|c| {
        // SAFETY: caller's string contract.
        let k = unsafe { kvs_arg(c, kvsname) }?;
        c.destroy_kvs(k).map_err(|e| match e {
            Error::InvalidArg | Error::NotFound => PMI_ERR_INVALID_KVS,
            _ => PMI_FAIL,
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMI_KVS_Put(kvsname: *const c_char, key: *const c_char, value: *const c_char) -> c_int {
    with(|c| {
        // SAFETY: caller's string contracts.
        let (k, key, val) = unsafe { (kvs_arg(c, kvsname)?, key_arg(c, key)?, val_arg(c, value)?) };
        c.put(k, key, val).map_err(op_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMI_KVS_Commit(kvsname: *const c_char) -> c_int {
    // Puts are sent to the server as they are made; PMI_Barrier publishes them.
    // SAFETY: caller's string contract.
    with(|c| unsafe { kvs_arg(c, kvsname) }.map(|_| ()))
}

#[no_mangle]
pub unsafe extern "C" fn PMI_KVS_Get(
    kvsname: *const c_char,
    key: *const c_char,
    value: *mut c_char,
    length: c_int,
) -> c_int {
    with(|c| {
        // SAFETY: caller's string contracts.
        let (k, key) = unsafe { (kvs_arg(c, kvsname)?, key_arg(c, key)?) };
        if value.is_null() {
            return Err(PMI_ERR_INVALID_VAL);
        }
        if length <= 0 {
            return Err(PMI_ERR_INVALID_VAL_LENGTH);
        }
        let v = c.get(k, key).map_err(op_err)?.ok_or(PMI_ERR_INVALID_KEY)?;
        // SAFETY: caller provides `length` bytes.
        if unsafe { copy_out(value, length, &v) } { Ok(()) } else { Err(PMI_ERR_INVALID_VAL_LENGTH) }
    })
}

unsafe fn kvs_iter(
    restart: bool,
    kvsname: *const c_char,
    key: *mut c_char,
    key_len: c_int,
    val: *mut c_char,
    val_len: c_int,
) -> c_int {
    with(|c| {
        // SAFETY: caller's string contract.
        let k = unsafe { kvs_arg(c, kvsname) }?;
        if key.is_null() || val.is_null() {
            return Err(PMI_ERR_INVALID_ARG);
        }
        if key_len <= 0 {
            return Err(PMI_ERR_INVALID_KEY_LENGTH);
        }
        if val_len <= 0 {
            return Err(PMI_ERR_INVALID_VAL_LENGTH);
        }
        let (ks, vs) = c.iter(k, restart).map_err(|_| PMI_FAIL)?.unwrap_or_default();
        // SAFETY: buffers of key_len/val_len bytes (caller's contract).
        unsafe {
            if !copy_out(key, key_len, &ks) {
                return Err(PMI_ERR_INVALID_KEY_LENGTH);
            }
            if !copy_out(val, val_len, &vs) {
                return Err(PMI_ERR_INVALID_VAL_LENGTH);
            }
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMI_KVS_Iter_first(
    kvsname: *const c_char,
    key: *mut c_char,
    key_len: c_int,
    val: *mut c_char,
    val_len: c_int,
) -> c_int {
    // SAFETY: forwarded.
    unsafe { kvs_iter(true, kvsname, key, key_len, val, val_len) }
}

#[no_mangle]
pub unsafe extern "C" fn PMI_KVS_Iter_next(
    kvsname: *const c_char,
    key: *mut c_char,
    key_len: c_int,
    val: *mut c_char,
    val_len: c_int,
) -> c_int {
    // SAFETY: forwarded.
    unsafe { kvs_iter(false, kvsname, key, key_len, val, val_len) }
}

// ---- spawning and launcher options -----------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn PMI_Spawn_multiple(
    count: c_int,
    _cmds: *const *const c_char,
    _argvs: *const *const *const c_char,
    _maxprocs: *const c_int,
    _info_keyval_sizesp: *const c_int,
    _info_keyval_vectors: *const *const PmiKeyval,
    _preput_keyval_size: c_int,
    _preput_keyval_vector: *const PmiKeyval,
    errors: *mut c_int,
) -> c_int {
    // Not supported: tell the caller about every command it asked for.
    if !errors.is_null() {
        for i in 0..count.max(0) as usize {
            // SAFETY: errors holds `count` ints (caller's contract).
            unsafe { *errors.add(i) = PMI_FAIL };
        }
    }
    PMI_FAIL
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Parse_option(
    num_args: c_int,
    args: *mut *mut c_char,
    num_parsed: *mut c_int,
    keyvalp: *mut *mut PmiKeyval,
    size: *mut c_int,
) -> c_int {
    if num_args < 0 {
        return PMI_ERR_INVALID_NUM_ARGS;
    }
    if num_args > 0 && args.is_null() {
        return PMI_ERR_INVALID_ARGS;
    }
    if num_parsed.is_null() {
        return PMI_ERR_INVALID_NUM_PARSED;
    }
    // No launcher options are recognised (see pmi.h).
    // SAFETY: the caller's pointers (NULL checked there).
    let rc = unsafe { no_keyvals(keyvalp, size) };
    if rc == PMI_SUCCESS {
        // SAFETY: checked non-NULL above.
        unsafe { *num_parsed = 0 };
    }
    rc
}

/// The empty key-value list of the option parsers: INVALID_KEYVALP / INVALID_SIZE for NULL
/// out-pointers, else both set to "none".
///
/// # Safety
/// Each pointer NULL or valid for a write.
unsafe fn no_keyvals(keyvalp: *mut *mut PmiKeyval, size: *mut c_int) -> c_int {
    if keyvalp.is_null() {
        return PMI_ERR_INVALID_KEYVALP;
    }
    if size.is_null() {
        return PMI_ERR_INVALID_SIZE;
    }
    // SAFETY: both checked non-NULL.
    unsafe {
        *keyvalp = std::ptr::null_mut();
        *size = 0;
    }
    PMI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Args_to_keyval(
    argcp: *mut c_int,
    argvp: *mut *mut *mut c_char,
    keyvalp: *mut *mut PmiKeyval,
    size: *mut c_int,
) -> c_int {
    if argcp.is_null() || argvp.is_null() {
        return PMI_ERR_INVALID_ARGS;
    }
    // SAFETY: argcp checked non-NULL.
    if unsafe { *argcp } < 0 {
        return PMI_ERR_INVALID_NUM_ARGS;
    }
    // The arguments are left untouched: none of them is a launcher option.
    // SAFETY: the caller's pointers (NULL checked there).
    unsafe { no_keyvals(keyvalp, size) }
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Free_keyvals(keyvalp: *mut PmiKeyval, size: c_int) -> c_int {
    if size < 0 {
        return PMI_ERR_INVALID_SIZE;
    }
    if size > 0 && keyvalp.is_null() {
        return PMI_ERR_INVALID_KEYVALP;
    }
    // This library never hands out keyval arrays (Parse_option and
    // Args_to_keyval return none), so there is nothing of ours to free.
    PMI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Get_options(str_: *mut c_char, length: *mut c_int) -> c_int {
    if str_.is_null() || length.is_null() {
        return PMI_ERR_INVALID_ARG;
    }
    // SAFETY: checked non-NULL; *length is the buffer size on input.
    unsafe {
        if *length < 1 {
            return PMI_ERR_INVALID_LENGTH;
        }
        *str_ = 0;
        *length = 0;
    }
    PMI_SUCCESS
}

// ---- Cray extensions ---------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn PMI_Get_nid(rank: c_int, nid: *mut c_int) -> c_int {
    with(|c| {
        let n = if rank < 0 { None } else { c.job.node_id(rank as u32) };
        let n = n.ok_or(PMI_ERR_INVALID_ARG)?;
        // SAFETY: out() checks NULL.
        unsafe { out(nid, n as c_int) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Allgather(in_: *mut c_void, out_: *mut c_void, len: c_int) -> c_int {
    if len < 0 {
        return PMI_ERR_INVALID_LENGTH;
    }
    if len > 0 && (in_.is_null() || out_.is_null()) {
        return PMI_ERR_INVALID_ARG;
    }
    let mine: &[u8] = if len == 0 {
        &[]
    } else {
        // SAFETY: `in` holds len bytes (caller's contract).
        unsafe { std::slice::from_raw_parts(in_ as *const u8, len as usize) }
    };
    match bootstrap::allgather(mine) {
        Ok(all) => {
            if !all.is_empty() {
                // SAFETY: `out` holds size*len bytes (caller's contract); the
                // copy is made from our own buffer, so in/out may alias.
                unsafe { std::ptr::copy_nonoverlapping(all.as_ptr(), out_ as *mut u8, all.len()) };
            }
            PMI_SUCCESS
        }
        Err(Error::InvalidArg) => PMI_ERR_INVALID_LENGTH, // ranks disagreed on len
        Err(e) => conn_err(e),
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Bcast(buf: *mut c_void, len: c_int) -> c_int {
    if len < 0 {
        return PMI_ERR_INVALID_LENGTH;
    }
    if len > 0 && buf.is_null() {
        return PMI_ERR_INVALID_ARG;
    }
    let slice: &mut [u8] = if len == 0 {
        &mut []
    } else {
        // SAFETY: buf holds len bytes (caller's contract).
        unsafe { std::slice::from_raw_parts_mut(buf as *mut u8, len as usize) }
    };
    match bootstrap::bcast(slice, 0) {
        Ok(()) => PMI_SUCCESS,
        Err(Error::InvalidArg) => PMI_ERR_INVALID_LENGTH, // root's len differs
        Err(e) => conn_err(e),
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Get_numpes_on_smp(num: *mut c_int) -> c_int {
    with(|c| unsafe { out(num, c.job.clique().len() as c_int) })
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Get_pes_on_smp(pes: *mut c_int, length: c_int) -> c_int {
    // SAFETY: forwarded.
    unsafe { copy_clique(pes, length) }
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Get_rank_in_app(rank: *mut c_int) -> c_int {
    with(|c| unsafe { out(rank, c.job.rank as c_int) })
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Get_app_size(appnum: c_int, size: *mut c_int) -> c_int {
    with(|c| {
        if appnum != c.job.appnum {
            return Err(PMI_ERR_INVALID_ARG);
        }
        // SAFETY: out() checks NULL.
        unsafe { out(size, c.job.size as c_int) }
    })
}

/// The library-owned nid list, built once and never freed (the pointer
/// handed out stays valid for the life of the process).
static NIDLIST: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

#[no_mangle]
pub unsafe extern "C" fn PMI_Get_nidlist_ptr(nidlist: *mut *mut c_void) -> c_int {
    if nidlist.is_null() {
        return PMI_ERR_INVALID_ARG;
    }
    with(|c| {
        let p = *NIDLIST.get_or_init(|| {
            let v: Vec<c_int> = c.job.node_of.iter().map(|&n| n as c_int).collect();
            Box::leak(v.into_boxed_slice()).as_mut_ptr() as usize
        });
        // SAFETY: checked non-NULL above.
        unsafe { *nidlist = p as *mut c_void };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Get_meshcoord(nid: u16, xyz: *mut PmiMeshCoord) -> c_int {
    with(|c| {
        if nid as u32 >= c.job.num_nodes() {
            return Err(PMI_ERR_INVALID_ARG);
        }
        // SAFETY: out() checks NULL.
        unsafe { out(xyz, PmiMeshCoord { mesh_x: nid, mesh_y: 0, mesh_z: 0 }) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMI_Get_max_dimension(max: *mut PmiMeshCoord) -> c_int {
    with(|c| {
        let x = (c.job.num_nodes() - 1).min(u16::MAX as u32) as u16;
        // SAFETY: out() checks NULL.
        unsafe { out(max, PmiMeshCoord { mesh_x: x, mesh_y: 0, mesh_z: 0 }) }
    })
}

softnic_fabric::blocking_export! {
    pub fn PMI_Ibarrier() -> c_int {
        // Completing the barrier now is a valid non-blocking barrier: PMI_Wait has nothing left.
        PMI_Barrier()
    }
}

#[no_mangle]
pub extern "C" fn PMI_Wait() -> c_int {
    with(|_| Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_layouts() {
        assert_eq!(std::mem::size_of::<PmiKeyval>(), 16);
        assert_eq!(std::mem::align_of::<PmiKeyval>(), 8);
        assert_eq!(std::mem::size_of::<PmiMeshCoord>(), 6);
    }
}
