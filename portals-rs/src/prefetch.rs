//! CPU cache hints: start fetching a line before it is needed (the lock's line, an
//! event slot), so that the fetch from another core's cache overlaps other work.

/// Starts fetching the cache line at `p` for writing (a hint: reads nothing, cannot
/// fault; PREFETCHW executes as a no-op on processors without it).
#[inline]
pub fn prefetch_write(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch hint (see above).
    unsafe {
        std::arch::asm!("prefetchw byte ptr [{0}]", in(reg) p, options(nostack, preserves_flags, readonly))
    };
}

/// Starts fetching the cache line at `p` for reading (a hint, see [`prefetch_write`]).
#[inline]
pub fn prefetch_read(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch hint: reads nothing architecturally, cannot fault.
    unsafe {
        std::arch::asm!("prefetcht0 byte ptr [{0}]", in(reg) p, options(nostack, preserves_flags, readonly))
    };
}
