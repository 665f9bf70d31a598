//! The node registry (CONTRACT STUB: the shared-memory helper replaces this).

use crate::Result;

/// Removes what dead processes left in the node fabric: their registry entries,
/// and any named shared object they owned.  `pids` are processes known to have
/// ended (e.g. a job's ranks); processes found dead by pid probing are reclaimed
/// too.  When no live process remains, the registry file and the per-user
/// directory are removed.  Returns the number of entries reclaimed.
/// Called by snrun when a job ends.
pub fn reclaim_dead(pids: &[i32]) -> Result<usize> {
    let _ = pids;
    Ok(0)
}
