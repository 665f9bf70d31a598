//! libportals.so: Portals 3 (the 3.2 specification's semantics, the 3.3 reference
//! implementation's ABI) over the softnic fabric.
//!
//! The model (decisions in include/portals3.h's top comment): an NI's shared state
//! (portal table, match entries, MDs, event queues, access control, status registers)
//! lives in library-owned shared memory, under one lock that survives a holder's death,
//! published in the node registry so that initiators find it.  The target side of every
//! operation is written once, as the fabric's Portals service: run by the initiator on
//! this machine, by the target's progress thread across machines.
//!
//! The modules, top to bottom (each uses only modules below it):
//! - [`ni`]: the library and its NI: PtlInit/PtlFini, PtlNIInit/PtlNIFini, the identity
//!   calls, status registers, PtlNIDist, PtlNIHandle, PtlNIFailStr.
//! - [`rank`]: the rank runtime calls of p3rt.h (PtlSetRank, the NID/PID maps, PtlSetJID).
//! - [`acl`]: the access control table's call, PtlACEntry.
//! - [`ops`]: the initiator side (PtlPut, PtlGet, PtlGetPut...) and how a target is found.
//! - [`service`]: the target side of every operation: access control, the match, the
//!   deposit or read, the target's events.
//! - [`me`]: the ME calls (PtlMEAttach, PtlMEInsert, PtlMEUnlink, the dumps, PtlNIDebug).
//! - [`md`]: the MD calls, the MD rules the target side shares (activity, unlink), the
//!   memory registrations behind MDs.
//! - [`matchlist`]: a portal's match list of ME rows: link, unlink, create.
//! - [`eq`]: event queues: their calls, the deposit of events, the owner's holds that keep
//!   them in causal order, EQ handlers.
//! - [`objects`]: the process-local objects: the NI and the library's table of it
//!   (`Lib`), the owner's side of its event queues, its MDs' registrations, the targets
//!   it reached, views of target segments.
//! - [`seg`]: an NI's shared state in its segment: layout, rows, per-view caches.
//! - [`evring`]: an event queue's ring (overwrite-oldest, events held back for causal
//!   order).
//! - [`lock`]: the segment's lock, taken over from a holder that died.
//! - [`endpoint`]: an NI's entry in the node registry (key, payload, tombstone).
//! - [`runtime`]: process ids, the rank runtime's state, the job's protection key.
//! - [`prefetch`]: cache-line prefetch hints.
//! - [`status`]: return codes, their names and strings, per-call logging, debug mask.
//! - [`handle`]: handle encoding.
//! - [`types`]: C types and constants.
//!
//! Nothing here is a stub: every function of the fact sheet is implemented.

// The exported functions are `unsafe extern "C"` where they follow the caller's
// pointers; their contract is the C API's, documented in include/portals3.h.
#![allow(clippy::missing_safety_doc)]

pub mod ni;
pub mod rank;
pub mod acl;
pub mod ops;
pub mod service;
pub mod me;
pub mod md;
pub mod matchlist;
pub mod eq;
pub mod objects;
pub mod seg;
pub mod evring;
pub mod lock;
pub mod endpoint;
pub mod runtime;
pub mod prefetch;
pub mod status;
pub mod handle;
pub mod types;

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
