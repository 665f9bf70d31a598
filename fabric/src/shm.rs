//! Shared segments (CONTRACT STUB: the shared-memory helper replaces this, keeping `user_dir`).

use std::path::PathBuf;

/// The per-user directory for named shared objects: /dev/shm/softnic-<uid>
/// (mode 0700; objects inside are 0600).  `SOFTNIC_SHM_DIR` overrides the parent.
pub fn user_dir() -> PathBuf {
    let parent = std::env::var_os("SOFTNIC_SHM_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/dev/shm"));
    parent.join(format!("softnic-{}", unsafe { libc::getuid() }))
}
