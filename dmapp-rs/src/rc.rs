//! The one place where fabric errors become `dmapp_return_t` codes, and the
//! error strings of `dmapp_explain_error`.
//!
//! | fabric error | data motion (put/get/AMO/sync) | setup (init, mem_register) |
//! |---|---|---|
//! | InvalidArg | INVALID_PARAM | INVALID_PARAM (init) / RESOURCE_ERROR (register) |
//! | Misaligned | ALIGNMENT_ERROR | RESOURCE_ERROR |
//! | InvalidHandle, StaleHandle, OutOfBounds, Permission, ProtectionDomain, PeerDead, NotFound, Unsupported, Timeout, Again | TRANSACTION_ERROR | RESOURCE_ERROR |
//! | NoSpace, Os, Version, Bootstrap, Exists | RESOURCE_ERROR | RESOURCE_ERROR |
//!
//! Why TRANSACTION_ERROR for remote-side refusals: the digest (5.10) maps a dead peer, a
//! remote bounds violation or a stale registration to a failed transaction, which is
//! what the hardware reports when the target NIC rejects a request.  Violations we can
//! see locally (outside the descriptor, bad PE, bad type) never reach the fabric: they
//! are INVALID_PARAM, decided by the caller before any data moves.

use crate::types::*;
use softnic_fabric::Error;

/// For operations that move data.
pub fn from_rma(e: Error) -> Rc {
    match e {
        Error::InvalidArg => DMAPP_RC_INVALID_PARAM,
        Error::Misaligned => DMAPP_RC_ALIGNMENT_ERROR,
        Error::InvalidHandle
        | Error::StaleHandle
        | Error::OutOfBounds
        | Error::Permission
        | Error::ProtectionDomain
        | Error::PeerDead
        | Error::NotFound
        | Error::Unsupported
        | Error::Timeout
        | Error::Again => DMAPP_RC_TRANSACTION_ERROR,
        Error::NoSpace | Error::Os(_) | Error::Version | Error::Bootstrap | Error::Exists => DMAPP_RC_RESOURCE_ERROR,
    }
}

/// For `dmapp_init` and `dmapp_mem_register`: the document's RESOURCE_ERROR is
/// "an error during initialization" / "unsuccessful memory registration".
pub fn from_setup(_e: Error) -> Rc {
    DMAPP_RC_RESOURCE_ERROR
}

/// NUL-terminated description of each code (for `dmapp_explain_error`).
pub fn text(rc: Rc) -> Option<&'static [u8]> {
    Some(match rc {
        DMAPP_RC_SUCCESS => b"DMAPP_RC_SUCCESS: the operation completed successfully\0",
        DMAPP_RC_INVALID_PARAM => b"DMAPP_RC_INVALID_PARAM: one or more input parameters is invalid\0",
        DMAPP_RC_ALIGNMENT_ERROR => b"DMAPP_RC_ALIGNMENT_ERROR: buffer or length not properly aligned\0",
        DMAPP_RC_TRANSACTION_ERROR => b"DMAPP_RC_TRANSACTION_ERROR: a transaction error has occurred\0",
        DMAPP_RC_RESOURCE_ERROR => b"DMAPP_RC_RESOURCE_ERROR: a resource error occurred\0",
        DMAPP_RC_PERMISSION_ERROR => b"DMAPP_RC_PERMISSION_ERROR: permission denied\0",
        DMAPP_RC_NO_SPACE => b"DMAPP_RC_NO_SPACE: too many outstanding requests; synchronize more often or raise max_outstanding_nb\0",
        DMAPP_RC_NOT_DONE => b"DMAPP_RC_NOT_DONE: the operation has not completed\0",
        DMAPP_RC_NOT_SUPPORTED => b"DMAPP_RC_NOT_SUPPORTED: not supported by this implementation\0",
        DMAPP_RC_NOT_FOUND => b"DMAPP_RC_NOT_FOUND: not found\0",
        DMAPP_RC_BUSY => b"DMAPP_RC_BUSY: resource busy\0",
        DMAPP_RC_NOT_USED => b"DMAPP_RC_NOT_USED: not used\0",
        _ => return None,
    })
}
