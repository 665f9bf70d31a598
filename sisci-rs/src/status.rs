//! Error plumbing shared by every export: the result type, `*error` always written,
//! the per-call log line, the fabric-error mapping, and the macro that exports one
//! implementation under the three names programs reference.

use crate::types::*;
use softnic_fabric::Error as FErr;

pub type R<T> = std::result::Result<T, SciErr>;

/// Exports a function under its plain name (programs that `dlsym("SCIOpen")`), its
/// single-threaded name and its multithreaded name (what sisci_api.h renames calls to,
/// without and with `_REENTRANT`).  The three symbols share one body (the wrappers are
/// merged into it by the compiler).
#[macro_export]
macro_rules! sisci_export {
    // The _ST_/_MT_ names: thin wrappers that forward to the plain export, with its ABI.
    (@aliases $abi:literal $name:ident($($a:ident: $t:ty),*) $(-> $r:ty)?) => {
        #[allow(non_snake_case)]
        pub mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[export_name = concat!("_SISCI_PUBLIC_FUNC_ST_", stringify!($name))]
            #[allow(clippy::too_many_arguments)]
            pub unsafe extern $abi fn st($($a: $t),*) $(-> $r)? {
                // SAFETY: the caller's contract is the exported function's.
                unsafe { super::$name($($a),*) }
            }
            #[export_name = concat!("_SISCI_PUBLIC_FUNC_MT_", stringify!($name))]
            #[allow(clippy::too_many_arguments)]
            pub unsafe extern $abi fn mt($($a: $t),*) $(-> $r)? {
                // SAFETY: as above.
                unsafe { super::$name($($a),*) }
            }
        }
    };
    // A call whose common case never waits: `$now` (an `Option` of the result, run for
    // a caller whose cancellation is deferred; see fabric::cancel::blocking_after) does
    // it or gives None, and then the call is a blocking call as below.
    // (Calls without a result only.)
    ($(#[$m:meta])* blocking fn $name:ident($($a:ident: $t:ty),* $(,)?) now $now:block $body:block) => {
        $(#[$m])*
        #[no_mangle]
        #[allow(non_snake_case, clippy::too_many_arguments)]
        pub unsafe extern "C-unwind" fn $name($($a: $t),*) {
            #[inline(never)]
            #[allow(non_snake_case, unused_variables, clippy::too_many_arguments)]
            unsafe fn now($($a: $t),*) -> Option<()> $now
            #[inline(never)]
            #[allow(non_snake_case, clippy::too_many_arguments)]
            unsafe fn body($($a: $t),*) $body
            // SAFETY: the caller's arguments, forwarded under the export's contract.
            softnic_fabric::cancel::blocking_after(stringify!($name), move || unsafe { now($($a),*) }, move || unsafe { body($($a),*) })
        }

        $crate::sisci_export!(@aliases "C-unwind" $name($($a: $t),*));
    };
    // A call that waits only sometimes: when `$quick` (an expression that holds nothing
    // to drop, checked with cancellation as the caller has it) is true the call is done;
    // otherwise it is a blocking call as below.
    ($(#[$m:meta])* blocking fn $name:ident($($a:ident: $t:ty),* $(,)?) unless $quick:block $body:block) => {
        $(#[$m])*
        #[no_mangle]
        #[allow(non_snake_case, clippy::too_many_arguments)]
        pub unsafe extern "C-unwind" fn $name($($a: $t),*) {
            if $quick {
                return;
            }
            #[inline(never)]
            #[allow(non_snake_case, clippy::too_many_arguments)]
            unsafe fn body($($a: $t),*) $body
            // SAFETY: the caller's arguments, forwarded under the export's contract.
            softnic_fabric::cancel::blocking(stringify!($name), move || unsafe { body($($a),*) })
        }

        $crate::sisci_export!(@aliases "C-unwind" $name($($a: $t),*));
    };
    // A call that waits: a cancellation point (fabric::cancel), its body run through
    // `cancel::blocking` from a frame that holds nothing.
    ($(#[$m:meta])* blocking fn $name:ident($($a:ident: $t:ty),* $(,)?) $(-> $r:ty)? $body:block) => {
        $(#[$m])*
        #[no_mangle]
        #[allow(non_snake_case, clippy::too_many_arguments)]
        pub unsafe extern "C-unwind" fn $name($($a: $t),*) $(-> $r)? {
            #[inline(never)]
            #[allow(non_snake_case, clippy::too_many_arguments)]
            unsafe fn body($($a: $t),*) $(-> $r)? $body
            // SAFETY: the caller's arguments, forwarded under the export's contract.
            softnic_fabric::cancel::blocking(stringify!($name), move || unsafe { body($($a),*) })
        }

        $crate::sisci_export!(@aliases "C-unwind" $name($($a: $t),*) $(-> $r)?);
    };
    ($(#[$m:meta])* fn $name:ident($($a:ident: $t:ty),* $(,)?) $(-> $r:ty)? $body:block) => {
        $(#[$m])*
        #[no_mangle]
        #[allow(non_snake_case, clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name($($a: $t),*) $(-> $r)? $body

        $crate::sisci_export!(@aliases "C" $name($($a: $t),*) $(-> $r)?);
    };
}

/// Writes `e` to `*error` when the caller gave a place for it (a NULL `error` is
/// tolerated: the call still runs, its status is just not reported).
#[inline]
pub fn set_error(error: *mut SciErr, e: SciErr) {
    if !error.is_null() {
        // SAFETY: non-NULL; the caller passes a pointer to a sci_error_t.
        unsafe { error.write_unaligned(e) };
    }
}

/// Ends an export: writes `*error`, logs a failure at debug level, and returns the value
/// (or `fail` on error).
#[inline]
pub fn finish<T>(func: &'static str, error: *mut SciErr, r: R<T>, fail: T) -> T {
    match r {
        Ok(v) => {
            set_error(error, SCI_ERR_OK);
            v
        }
        Err(e) => {
            softnic_fabric::sn_debug!("SISCI", "{} -> {} ({:#x})", func, name(e), e);
            set_error(error, e);
            fail
        }
    }
}

/// `finish` for functions returning void.
#[inline]
pub fn done(func: &'static str, error: *mut SciErr, r: R<()>) {
    finish(func, error, r, ())
}

/// Writes `v` through an out pointer, after a NULL check.
#[inline]
pub fn out<T>(p: *mut T, v: T) -> R<()> {
    if p.is_null() {
        return Err(SCI_ERR_ILLEGAL_PARAMETER);
    }
    // SAFETY: non-NULL; the caller of the API promises it points to a T.
    unsafe { p.write_unaligned(v) };
    Ok(())
}

/// `flags` must be a subset of `allowed` (SCI_ERR_ILLEGAL_FLAG otherwise, also for
/// functions that take no flag: the reference says implementations check it to be 0).
#[inline]
pub fn check_flags(flags: u32, allowed: u32) -> R<()> {
    if flags & !allowed != 0 {
        Err(SCI_ERR_ILLEGAL_FLAG)
    } else {
        Ok(())
    }
}

/// The one adapter every node has: number 0.  Numbers 1..15 are legal but absent
/// (SCI_ERR_NO_SUCH_ADAPTERNO), 16 and above illegal (SCI_ERR_ILLEGAL_ADAPTERNO).
pub const MAX_ADAPTERS: u32 = 16;

/// SOFTNIC_FAULTS=timeout: a wait given a time limit (not SCI_INFINITE_TIMEOUT) runs out
/// at once, whatever is pending; what it waited for stays for the next call.  Counted per
/// such wait, after its arguments were found good.
pub fn injected_timeout(timeout: u32) -> bool {
    timeout != SCI_INFINITE_TIMEOUT && softnic_fabric::faults::hit(softnic_fabric::faults::Point::Timeout)
}

#[inline]
pub fn check_adapter(a: u32) -> R<()> {
    match a {
        0 => Ok(()),
        n if n < MAX_ADAPTERS => Err(SCI_ERR_NO_SUCH_ADAPTERNO),
        _ => Err(SCI_ERR_ILLEGAL_ADAPTERNO),
    }
}

/// A fabric error of a data transfer (DMA, SCIMemCpy) as the SISCI code.
pub fn transfer_err(e: FErr) -> SciErr {
    match e {
        FErr::OutOfBounds => SCI_ERR_OUT_OF_RANGE,
        FErr::NoSpace => SCI_ERR_NOSPC,
        _ => SCI_ERR_TRANSFER_FAILED,
    }
}

/// A fabric error reaching an object of another process (connect, trigger) as the
/// SISCI code: a process that is gone, or an object it removed, leaves nothing to
/// connect to.
pub fn reach_err(e: FErr, missing: SciErr) -> SciErr {
    match e {
        FErr::PeerDead | FErr::StaleHandle | FErr::InvalidHandle | FErr::NotFound => missing,
        FErr::Timeout => SCI_ERR_TIMEOUT,
        FErr::NoSpace => SCI_ERR_NOSPC,
        FErr::Unsupported => SCI_ERR_NO_LINK_ACCESS,
        _ => SCI_ERR_SYSTEM,
    }
}

pub fn name(e: SciErr) -> &'static str {
    match e {
        SCI_ERR_OK => "SCI_ERR_OK",
        SCI_ERR_BUSY => "SCI_ERR_BUSY",
        SCI_ERR_FLAG_NOT_IMPLEMENTED => "SCI_ERR_FLAG_NOT_IMPLEMENTED",
        SCI_ERR_ILLEGAL_FLAG => "SCI_ERR_ILLEGAL_FLAG",
        SCI_ERR_NOSPC => "SCI_ERR_NOSPC",
        SCI_ERR_API_NOSPC => "SCI_ERR_API_NOSPC",
        SCI_ERR_HW_NOSPC => "SCI_ERR_HW_NOSPC",
        SCI_ERR_NOT_IMPLEMENTED => "SCI_ERR_NOT_IMPLEMENTED",
        SCI_ERR_ILLEGAL_ADAPTERNO => "SCI_ERR_ILLEGAL_ADAPTERNO",
        SCI_ERR_NO_SUCH_ADAPTERNO => "SCI_ERR_NO_SUCH_ADAPTERNO",
        SCI_ERR_TIMEOUT => "SCI_ERR_TIMEOUT",
        SCI_ERR_OUT_OF_RANGE => "SCI_ERR_OUT_OF_RANGE",
        SCI_ERR_NO_SUCH_SEGMENT => "SCI_ERR_NO_SUCH_SEGMENT/SCI_ERR_NO_SUCH_INTNO",
        SCI_ERR_ILLEGAL_NODEID => "SCI_ERR_ILLEGAL_NODEID",
        SCI_ERR_CONNECTION_REFUSED => "SCI_ERR_CONNECTION_REFUSED",
        SCI_ERR_SEGMENT_NOT_CONNECTED => "SCI_ERR_SEGMENT_NOT_CONNECTED",
        SCI_ERR_SIZE_ALIGNMENT => "SCI_ERR_SIZE_ALIGNMENT",
        SCI_ERR_OFFSET_ALIGNMENT => "SCI_ERR_OFFSET_ALIGNMENT",
        SCI_ERR_ILLEGAL_PARAMETER => "SCI_ERR_ILLEGAL_PARAMETER",
        SCI_ERR_MAX_ENTRIES => "SCI_ERR_MAX_ENTRIES",
        SCI_ERR_SEGMENT_NOT_PREPARED => "SCI_ERR_SEGMENT_NOT_PREPARED",
        SCI_ERR_ILLEGAL_ADDRESS => "SCI_ERR_ILLEGAL_ADDRESS",
        SCI_ERR_ILLEGAL_OPERATION => "SCI_ERR_ILLEGAL_OPERATION",
        SCI_ERR_ILLEGAL_QUERY => "SCI_ERR_ILLEGAL_QUERY",
        SCI_ERR_SEGMENTID_USED => "SCI_ERR_SEGMENTID_USED",
        SCI_ERR_SYSTEM => "SCI_ERR_SYSTEM",
        SCI_ERR_CANCELLED => "SCI_ERR_CANCELLED",
        SCI_ERR_NOT_CONNECTED => "SCI_ERR_NOT_CONNECTED",
        SCI_ERR_NOT_AVAILABLE => "SCI_ERR_NOT_AVAILABLE",
        SCI_ERR_INCONSISTENT_VERSIONS => "SCI_ERR_INCONSISTENT_VERSIONS",
        SCI_ERR_COND_INT_RACE_PROBLEM => "SCI_ERR_COND_INT_RACE_PROBLEM",
        SCI_ERR_OVERFLOW => "SCI_ERR_OVERFLOW",
        SCI_ERR_NOT_INITIALIZED => "SCI_ERR_NOT_INITIALIZED",
        SCI_ERR_ACCESS => "SCI_ERR_ACCESS",
        SCI_ERR_NOT_SUPPORTED => "SCI_ERR_NOT_SUPPORTED",
        SCI_ERR_DEPRECATED => "SCI_ERR_DEPRECATED",
        SCI_ERR_DMA_NOT_AVAILABLE => "SCI_ERR_DMA_NOT_AVAILABLE",
        SCI_ERR_DMA_DISABLED => "SCI_ERR_DMA_DISABLED",
        SCI_ERR_NO_SUCH_NODEID => "SCI_ERR_NO_SUCH_NODEID",
        SCI_ERR_NODE_NOT_RESPONDING => "SCI_ERR_NODE_NOT_RESPONDING",
        SCI_ERR_NO_REMOTE_LINK_ACCESS => "SCI_ERR_NO_REMOTE_LINK_ACCESS",
        SCI_ERR_NO_LINK_ACCESS => "SCI_ERR_NO_LINK_ACCESS",
        SCI_ERR_TRANSFER_FAILED => "SCI_ERR_TRANSFER_FAILED",
        SCI_ERR_EWOULD_BLOCK => "SCI_ERR_EWOULD_BLOCK",
        SCI_ERR_SEMAPHORE_COUNT_EXCEEDED => "SCI_ERR_SEMAPHORE_COUNT_EXCEEDED",
        SCI_ERR_IRQL_ILLEGAL => "SCI_ERR_IRQL_ILLEGAL",
        SCI_ERR_REMOTE_BUSY => "SCI_ERR_REMOTE_BUSY",
        SCI_ERR_LOCAL_BUSY => "SCI_ERR_LOCAL_BUSY",
        SCI_ERR_ALL_BUSY => "SCI_ERR_ALL_BUSY",
        SCI_ERR_NO_SUCH_FDID => "SCI_ERR_NO_SUCH_FDID",
        _ => "unknown error",
    }
}

/// NUL-terminated description of each code (SCIGetErrorString).
pub fn describe(e: SciErr) -> &'static [u8] {
    match e {
        SCI_ERR_OK => b"Successful operation\0",
        SCI_ERR_BUSY => b"Some resources are busy\0",
        SCI_ERR_FLAG_NOT_IMPLEMENTED => b"Flag option is not implemented\0",
        SCI_ERR_ILLEGAL_FLAG => b"Illegal flag option\0",
        SCI_ERR_NOSPC => b"Out of local resources\0",
        SCI_ERR_API_NOSPC => b"Out of local API resources\0",
        SCI_ERR_HW_NOSPC => b"Out of hardware resources\0",
        SCI_ERR_NOT_IMPLEMENTED => b"The functionality is currently not implemented\0",
        SCI_ERR_ILLEGAL_ADAPTERNO => b"Illegal adapter number\0",
        SCI_ERR_NO_SUCH_ADAPTERNO => b"The adapter number can not be found - check the configuration\0",
        SCI_ERR_TIMEOUT => b"The operation timed out\0",
        SCI_ERR_OUT_OF_RANGE => b"The specified variable is not within the legal range\0",
        SCI_ERR_NO_SUCH_SEGMENT => b"No such segment or interrupt number\0",
        SCI_ERR_ILLEGAL_NODEID => b"Illegal node id - check the configuration\0",
        SCI_ERR_CONNECTION_REFUSED => b"The connection to the remote node was refused\0",
        SCI_ERR_SEGMENT_NOT_CONNECTED => b"No connection to the segment\0",
        SCI_ERR_SIZE_ALIGNMENT => b"The size is not aligned\0",
        SCI_ERR_OFFSET_ALIGNMENT => b"The offset is not aligned\0",
        SCI_ERR_ILLEGAL_PARAMETER => b"Illegal function parameter\0",
        SCI_ERR_MAX_ENTRIES => b"Maximum possible physical mapping is exceeded\0",
        SCI_ERR_SEGMENT_NOT_PREPARED => b"The segment is not prepared - check SCIPrepareSegment\0",
        SCI_ERR_ILLEGAL_ADDRESS => b"Illegal address\0",
        SCI_ERR_ILLEGAL_OPERATION => b"Illegal operation\0",
        SCI_ERR_ILLEGAL_QUERY => b"Illegal query operation - check SCIQuery\0",
        SCI_ERR_SEGMENTID_USED => b"The segment id (or interrupt number) is already used; it must be unique\0",
        SCI_ERR_SYSTEM => b"Could not get the requested resources from the system\0",
        SCI_ERR_CANCELLED => b"The operation was cancelled\0",
        SCI_ERR_NOT_CONNECTED => b"The host is not connected to the remote host\0",
        SCI_ERR_NOT_AVAILABLE => b"The requested operation is not available\0",
        SCI_ERR_INCONSISTENT_VERSIONS => b"Inconsistent driver versions on the local or remote host\0",
        SCI_ERR_COND_INT_RACE_PROBLEM => b"Conditional interrupt race\0",
        SCI_ERR_OVERFLOW => b"Out of local resources (overflow)\0",
        SCI_ERR_NOT_INITIALIZED => b"The host is not initialized - check the configuration\0",
        SCI_ERR_ACCESS => b"No local or remote access for the requested operation\0",
        SCI_ERR_NOT_SUPPORTED => b"The request is not supported\0",
        SCI_ERR_DEPRECATED => b"The function or functionality is deprecated\0",
        SCI_ERR_DMA_NOT_AVAILABLE => b"The requested or required DMA mode is not available\0",
        SCI_ERR_DMA_DISABLED => b"The requested or required DMA mode is disabled\0",
        SCI_ERR_NO_SUCH_NODEID => b"The node id could not be found\0",
        SCI_ERR_NODE_NOT_RESPONDING => b"The node does not respond\0",
        SCI_ERR_NO_REMOTE_LINK_ACCESS => b"The remote link is not operational\0",
        SCI_ERR_NO_LINK_ACCESS => b"The local link is not operational\0",
        SCI_ERR_TRANSFER_FAILED => b"The transfer failed\0",
        SCI_ERR_EWOULD_BLOCK => b"The operation would block\0",
        SCI_ERR_SEMAPHORE_COUNT_EXCEEDED => b"Semaphore count exceeded\0",
        SCI_ERR_IRQL_ILLEGAL => b"Illegal interrupt line\0",
        SCI_ERR_REMOTE_BUSY => b"The remote host is busy\0",
        SCI_ERR_LOCAL_BUSY => b"The local host is busy\0",
        SCI_ERR_ALL_BUSY => b"The system is busy\0",
        SCI_ERR_NO_SUCH_FDID => b"The fabric device identifier is not found\0",
        _ => b"Unknown error code\0",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_a_description_ending_in_nul() {
        for e in [SCI_ERR_OK, SCI_ERR_BUSY, SCI_ERR_NO_SUCH_INTNO, SCI_ERR_NO_SUCH_FDID, 0x1234] {
            let d = describe(e);
            assert_eq!(*d.last().unwrap(), 0);
            assert!(!d[..d.len() - 1].contains(&0));
        }
        assert_eq!(describe(0x1234), b"Unknown error code\0");
    }

    #[test]
    fn adapters() {
        assert_eq!(check_adapter(0), Ok(()));
        assert_eq!(check_adapter(1), Err(SCI_ERR_NO_SUCH_ADAPTERNO));
        assert_eq!(check_adapter(16), Err(SCI_ERR_ILLEGAL_ADAPTERNO));
        assert_eq!(check_flags(0, 0), Ok(()));
        assert_eq!(check_flags(1, 0), Err(SCI_ERR_ILLEGAL_FLAG));
        assert_eq!(check_flags(3, 1), Err(SCI_ERR_ILLEGAL_FLAG));
    }
}
