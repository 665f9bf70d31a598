//! One error type for the whole fabric.  Each API crate maps it to its vendor
//! codes in a single `match`.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// An argument is malformed (NULL, bad flag, zero where not allowed, ...).
    InvalidArg,
    /// A handle does not name a live object.
    InvalidHandle,
    /// A handle named an object that has since been released (generation mismatch).
    StaleHandle,
    /// Access outside the bounds of a registered region.
    OutOfBounds,
    /// Write to read-only memory, or other permission failure.
    Permission,
    /// The access carried a protection-domain key that does not match the region's.
    ProtectionDomain,
    /// An address or length has the wrong alignment for the operation.
    Misaligned,
    /// A fixed-size resource is exhausted (ring full, table full).
    NoSpace,
    /// Nothing available right now; try again.
    Again,
    /// A wait ran out of time.
    Timeout,
    /// No such peer/endpoint/key.
    NotFound,
    /// Something with that key already exists.
    Exists,
    /// The peer process has exited.
    PeerDead,
    /// The operation is not supported on this object (listed where it is decided).
    Unsupported,
    /// A shared structure has a version this library does not understand.
    Version,
    /// The bootstrap (PMI) failed or is unavailable.
    Bootstrap,
    /// An operating-system call failed with this errno.
    Os(i32),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The current `errno` as an [`Error::Os`].
    pub fn last_os() -> Error {
        Error::Os(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidArg => f.write_str("invalid argument"),
            Error::InvalidHandle => f.write_str("invalid handle"),
            Error::StaleHandle => f.write_str("stale handle (object was released)"),
            Error::OutOfBounds => f.write_str("access outside the registered region"),
            Error::Permission => f.write_str("access not permitted (read-only region)"),
            Error::ProtectionDomain => f.write_str("protection-domain key mismatch"),
            Error::Misaligned => f.write_str("misaligned address or length"),
            Error::NoSpace => f.write_str("resource exhausted"),
            Error::Again => f.write_str("try again"),
            Error::Timeout => f.write_str("timed out"),
            Error::NotFound => f.write_str("not found"),
            Error::Exists => f.write_str("already exists"),
            Error::PeerDead => f.write_str("peer process has exited"),
            Error::Unsupported => f.write_str("not supported"),
            Error::Version => f.write_str("shared-memory layout version mismatch"),
            Error::Bootstrap => f.write_str("bootstrap (PMI) failure"),
            Error::Os(e) => write!(f, "os error {}: {}", e, std::io::Error::from_raw_os_error(*e)),
        }
    }
}

impl std::error::Error for Error {}
