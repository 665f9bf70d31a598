//! libportals.so: Portals 3 (the 3.2 specification's semantics, the 3.3 reference
//! implementation's ABI) over the softnic fabric.
//!
//! The model (decisions in include/portals3.h's top comment):
//! - [`ni`]: the library and its one network interface; [`runtime`]: process ids and
//!   the rank runtime of p3rt.h.
//! - [`seg`]: an NI's shared state (portal table, match entries, MDs, event queues,
//!   access control, status registers) in library-owned shared memory, under one lock
//!   ([`lock`]) that survives a holder's death; published in the node registry so that
//!   initiators find it.
//! - [`me`], [`md`], [`eq`], [`acl`]: the object calls, on that state; [`evring`]: an
//!   event queue's ring (overwrite-oldest, events held back for causal order).
//! - [`service`]: the target side of every operation, written once as the fabric's
//!   Portals service: run by the initiator on this machine, by the target's progress
//!   thread across machines.  [`ops`]: the initiator side (PtlPut, PtlGet, PtlGetPut...).
//! - [`handle`], [`types`], [`status`]: handles, C types, codes and strings.
//!
//! Nothing here is a stub: every function of the fact sheet is implemented.

// The exported functions are `unsafe extern "C"` where they follow the caller's
// pointers; their contract is the C API's, documented in include/portals3.h.
#![allow(clippy::missing_safety_doc)]

pub mod types;
pub mod status;
pub mod handle;
pub mod lock;
pub mod seg;
pub mod runtime;
pub mod ni;
pub mod evring;
pub mod eq;
pub mod me;
pub mod md;
pub mod acl;
pub mod service;
pub mod ops;

extern "C" {
    /// glibc's standard error stream object (what `stderr` points at).
    static mut _IO_2_1_stderr_: u8;
}

/// `p3_out`: the reference library's debug stream, which its test programs name; here
/// the process's standard error (a program may point it elsewhere).  An address known
/// at load time, so that a copy in the executable (a copy relocation) starts right.
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static mut p3_out: *mut std::ffi::c_void = &raw mut _IO_2_1_stderr_ as *mut std::ffi::c_void;
