//! Shared segments: memfd-backed memory that other processes of the same user map.
//!
//! Nothing here has a name in the file system.  A segment is an anonymous memory file
//! (`memfd_create`); a peer maps it by opening the owner's descriptor through
//! `/proc/<pid>/fd/<fd>`.  The kernel allows that only to processes that may ptrace-read
//! the owner (same uid, or root), which is our isolation from other users.  Because the
//! memory has no name, nothing is left behind even after SIGKILL: the pages go away with
//! the last descriptor/mapping.  Only the node registry is a named file (see
//! [`crate::registry`]); it lives in [`user_dir`].
//!
//! A descriptor number can be reused after the owner closes it, so every peer-side open
//! checks the inode number the owner published (memfd inodes are unique while alive).

use crate::{Error, Result};
use std::ffi::CString;
use std::path::PathBuf;

/// The per-user directory for named shared objects: /dev/shm/softnic-<uid>
/// (mode 0700; objects inside are 0600).  `SOFTNIC_SHM_DIR` overrides the parent.
pub fn user_dir() -> PathBuf {
    let parent = std::env::var_os("SOFTNIC_SHM_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/dev/shm"));
    // SAFETY: getuid has no preconditions.
    parent.join(format!("softnic-{}", unsafe { libc::getuid() }))
}

/// The system page size.
pub fn page_size() -> usize {
    static PS: once_cell::sync::OnceCell<usize> = once_cell::sync::OnceCell::new();
    // SAFETY: sysconf has no preconditions.
    *PS.get_or_init(|| {
        let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if v > 0 { v as usize } else { 4096 }
    })
}

/// Rounds `len` up to a page multiple; `None` on overflow.
pub fn page_round_up(len: usize) -> Option<usize> {
    let ps = page_size();
    len.checked_add(ps - 1).map(|v| v & !(ps - 1))
}

/// An owned descriptor, closed on drop.
#[derive(Debug)]
pub struct Fd(pub i32);

impl Drop for Fd {
    fn drop(&mut self) {
        if self.0 >= 0 {
            // We own this descriptor (raw: never a cancellation point).
            crate::cancel::sys::close(self.0);
        }
    }
}

/// Creates a close-on-exec memfd of `len` bytes.  `name` only shows in /proc/<pid>/maps
/// (`/memfd:<name> (deleted)`), where [`crate::mem`] uses it to recognise our backings.
pub fn memfd(name: &str, len: usize) -> Result<Fd> {
    let cname = CString::new(name).map_err(|_| Error::InvalidArg)?;
    // SAFETY: cname is a valid C string.
    let fd = unsafe { libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(Error::last_os());
    }
    let fd = Fd(fd);
    // SAFETY: fd is a valid descriptor we own.
    if unsafe { libc::ftruncate(fd.0, len as libc::off_t) } != 0 {
        return Err(Error::last_os());
    }
    Ok(fd)
}

/// (device, inode, size) of an open descriptor.
pub fn fd_identity(fd: i32) -> Result<(u64, u64, u64)> {
    // SAFETY: stat is plain data; fstat writes it fully on success.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(Error::last_os());
    }
    Ok((st.st_dev as u64, st.st_ino as u64, st.st_size as u64))
}

/// A shared mapping, unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain shared memory; all access through it is by raw
// pointers whose synchronisation the users of the mapping document.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` from offset 0, read-write, MAP_SHARED.
    pub fn map(fd: i32, len: usize) -> Result<Mapping> {
        if len == 0 {
            return Err(Error::InvalidArg);
        }
        // SAFETY: a fresh mapping at a kernel-chosen address; touches no existing memory.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0)
        };
        if p == libc::MAP_FAILED {
            return Err(Error::last_os());
        }
        Ok(Mapping { ptr: p as *mut u8, len })
    }

    /// Wraps an existing mapping so that it is unmapped on drop.
    ///
    /// # Safety
    /// `ptr..ptr+len` must be a mapping the caller owns and nobody else unmaps.
    pub unsafe fn from_raw(ptr: *mut u8, len: usize) -> Mapping {
        Mapping { ptr, len }
    }

    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Gives up ownership: the memory stays mapped for the life of the process.
    pub fn leak(self) -> *mut u8 {
        let p = self.ptr;
        std::mem::forget(self);
        p
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: we own this mapping (see constructors).
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

/// A memfd segment owned by this process: descriptor + mapping.
#[derive(Debug)]
pub struct Segment {
    pub fd: Fd,
    pub map: Mapping,
    pub ino: u64,
}

impl Segment {
    /// A new zero-filled segment of `len` bytes (rounded up to pages).
    pub fn create(name: &str, len: usize) -> Result<Segment> {
        let len = page_round_up(len).ok_or(Error::InvalidArg)?;
        if len == 0 {
            return Err(Error::InvalidArg);
        }
        let fd = memfd(name, len)?;
        let (_, ino, _) = fd_identity(fd.0)?;
        let map = Mapping::map(fd.0, len)?;
        Ok(Segment { fd, map, ino })
    }
}

/// Opens another process's memfd by `/proc/<pid>/fd/<fd>` and checks that it is still
/// the object the owner published (inode `ino`, at least `min_len` bytes).
///
/// A missing process gives `Err(PeerDead)`; a descriptor that is gone or now names a
/// different object gives `Err(StaleHandle)`.
pub fn open_peer_fd(pid: i32, fd: i32, ino: u64, min_len: u64) -> Result<Fd> {
    let path = CString::new(format!("/proc/{}/fd/{}", pid, fd)).map_err(|_| Error::InvalidArg)?;
    let f = crate::cancel::sys::open(&path, libc::O_RDWR | libc::O_CLOEXEC, 0);
    if f < 0 {
        let e = Error::last_os();
        // ENOENT: either the fd or the whole process is gone; tell the two apart.
        if crate::process::pid_alive(pid, None) {
            return Err(match e {
                Error::Os(libc::ENOENT) => Error::StaleHandle,
                Error::Os(libc::EACCES) | Error::Os(libc::EPERM) => Error::Permission,
                other => other,
            });
        }
        return Err(Error::PeerDead);
    }
    let f = Fd(f);
    let (_, got_ino, size) = fd_identity(f.0)?;
    if got_ino != ino || size < min_len {
        return Err(Error::StaleHandle);
    }
    Ok(f)
}

/// Maps `len` bytes of another process's memfd (see [`open_peer_fd`]).
pub fn map_peer(pid: i32, fd: i32, ino: u64, len: usize) -> Result<Mapping> {
    let f = open_peer_fd(pid, fd, ino, len as u64)?;
    Mapping::map(f.0, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_roundtrip_via_proc() {
        let s = Segment::create("softnic-test", 100).unwrap();
        assert_eq!(s.map.len(), page_size());
        // SAFETY: fresh mapping of at least one page.
        unsafe { *s.map.ptr().add(5) = 42 };
        let pid = std::process::id() as i32;
        let m = map_peer(pid, s.fd.0, s.ino, page_size()).unwrap();
        // SAFETY: the second mapping of the same memfd.
        assert_eq!(unsafe { *m.ptr().add(5) }, 42);
        assert_eq!(map_peer(pid, s.fd.0, s.ino + 1, page_size()).unwrap_err(), Error::StaleHandle);
        assert_eq!(map_peer(pid, s.fd.0, s.ino, 10 * page_size()).unwrap_err(), Error::StaleHandle);
    }
}
