//! The byte copy of every put and get on this machine.
//!
//! glibc's `memmove` copies blocks above 2 KiB with `rep movsb`, which on the AMD cores
//! we measured moves a cache-resident 4 KiB block in ~42 ns where a plain loop of 32-byte
//! vector loads and stores takes ~35 ns (8 KiB: 78 vs 70 ns; 16 KiB: ~300 vs ~240 ns;
//! at 32 KiB and above, where the copy leaves the first-level cache, both are alike).
//! One-sided transfers of a few KiB are exactly that case (a put's source and target are
//! in cache), so [`copy`] takes the vector loop for non-overlapping blocks between
//! [`LOOP_MIN`] and [`LOOP_MAX`] bytes when the CPU has AVX2, and `memmove` otherwise.
//! Above [`BACK_MIN`] every other copy of a thread runs backward ([`copy_avx2_back`]:
//! a repeated copy that fills the first-level cache then misses far less), its last
//! block still stored last.

/// Smallest block the vector loop copies (below it glibc's own vector code is as fast).
pub const LOOP_MIN: usize = 2048 + 1;
/// Largest block the vector loop copies.
pub const LOOP_MAX: usize = 16384;

/// Copies `n` bytes from `src` to `dst` (the ranges may overlap, as with `memmove`).
/// Inlined into every caller: 4 to 16 bytes (a flag, an 8-byte put) are two loads and
/// two stores there; anything else calls [`copy_other`].
///
/// # Safety
/// `src` is readable and `dst` writable for `n` bytes (as for [`std::ptr::copy`]).
#[inline(always)]
pub unsafe fn copy(src: *const u8, dst: *mut u8, n: usize) {
    // 4 to 16 bytes (a flag, an 8-byte put): two loads, then two stores (they may overlap
    // each other, and the ranges may overlap: every load comes before any store), instead
    // of a call to memmove.
    if (4..=16).contains(&n) {
        // SAFETY: n >= 4 (or >= 8): both words of each range lie inside it; unaligned.
        unsafe {
            if n >= 8 {
                let (a, b) = ((src as *const u64).read_unaligned(), (src.add(n - 8) as *const u64).read_unaligned());
                (dst as *mut u64).write_unaligned(a);
                (dst.add(n - 8) as *mut u64).write_unaligned(b);
            } else {
                let (a, b) = ((src as *const u32).read_unaligned(), (src.add(n - 4) as *const u32).read_unaligned());
                (dst as *mut u32).write_unaligned(a);
                (dst.add(n - 4) as *mut u32).write_unaligned(b);
            }
        }
        return;
    }
    // SAFETY: the caller's contract.
    unsafe { copy_other(src, dst, n) }
}

/// [`copy`] of any length but 4 to 16 bytes (out of line).
///
/// # Safety
/// As for [`copy`].
#[inline(never)]
pub unsafe fn copy_other(src: *const u8, dst: *mut u8, n: usize) {
    #[cfg(target_arch = "x86_64")]
    if (LOOP_MIN..=LOOP_MAX).contains(&n) && apart(src, dst, n) && std::arch::is_x86_feature_detected!("avx2") {
        if n > BACK_MIN && backward_turn() {
            // SAFETY: as below.
            unsafe { copy_avx2_back(src, dst, n) };
            return;
        }
        if n > LAGGED_MIN && (dst as usize).wrapping_sub(src as usize) % 4096 < 64 {
            // SAFETY: as below.
            unsafe { copy_avx2_lagged(src, dst, n) };
            return;
        }
        // SAFETY: the CPU has AVX2 (checked); the ranges are valid (caller) and disjoint.
        unsafe { copy_avx2(src, dst, n) };
        return;
    }
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy(src, dst, n) };
}

/// Blocks above this size are copied backward every other time on a thread (see
/// [`copy_avx2_back`]).
pub const BACK_MIN: usize = 12288;

thread_local! {
    static BACKWARD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Is this thread's next large copy a backward one?  (Alternates.)
#[inline]
fn backward_turn() -> bool {
    BACKWARD.with(|b| {
        let v = b.get();
        b.set(!v);
        v
    })
}

/// [`copy_avx2`] from the end to the start, but for its last 128 bytes, stored last.
///
/// Why backward: a 16 KiB copy's source and target fill the 32 KiB first-level cache;
/// the few lines anything else touches between two copies (a library's rows, locks and
/// stack) evict some of them, and with the same order every time each miss evicts the
/// line needed next (least recently used): the whole set misses.  Every other copy runs
/// backward, starting where the last one ended, so a line evicted meanwhile costs one
/// miss.  (A 16 KiB copy with 64 other lines touched between copies: ~275 ns forward
/// every time, ~179 ns alternating; 32 lines: ~220 vs ~158; none: ~141 both ways; 8 and
/// 12 KiB unaffected.  Portals put_bw 16 KiB in alternating runs ~41 -> ~67 GB/s.)
///
/// Why the last block last: a program may learn of a put by polling its last word (the
/// uTofu guide 6.1.3 describes it; DMAPP's IN_ORDER routing promises in-order arrival),
/// and the forward loop stores it last; so does this one.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn copy_avx2_back(src: *const u8, dst: *mut u8, n: usize) {
    // SAFETY: n > BACK_MIN > 256 (the caller's bound): `last` and every step below it lie
    // inside both ranges; the head (under 128 bytes) by copy_nonoverlapping (the ranges
    // are disjoint).
    unsafe {
        let last = n - 128;
        let mut i = last;
        while i >= 128 {
            i -= 128;
            step(src, dst, i);
        }
        if i > 0 {
            std::ptr::copy_nonoverlapping(src, dst, i);
        }
        step(src, dst, last);
    }
}

/// Do `[src, src+n)` and `[dst, dst+n)` not overlap?
#[inline(always)]
fn apart(src: *const u8, dst: *mut u8, n: usize) -> bool {
    let (s, d) = (src as usize, dst as usize);
    s.abs_diff(d) >= n
}

/// Four 32-byte loads, then four stores, per step; the tail (under 128 bytes) by memmove.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn copy_avx2(src: *const u8, dst: *mut u8, n: usize) {
    let mut i = 0;
    while i + 128 <= n {
        // SAFETY: i + 128 <= n: inside both ranges.
        unsafe { step(src, dst, i) };
        i += 128;
    }
    if i < n {
        // SAFETY: the rest of both ranges.
        unsafe { std::ptr::copy_nonoverlapping(src.add(i), dst.add(i), n - i) };
    }
}

/// One step of the vector loops: bytes `[i, i+128)`, four 32-byte loads, then four stores.
///
/// # Safety
/// The CPU has AVX2; `[i, i+128)` lies inside both ranges (unaligned is fine).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn step(src: *const u8, dst: *mut u8, i: usize) {
    use std::arch::x86_64::{__m256i, _mm256_loadu_si256, _mm256_storeu_si256};
    // SAFETY: the caller's contract.
    unsafe {
        let s = src.add(i) as *const __m256i;
        let d = dst.add(i) as *mut __m256i;
        let a = _mm256_loadu_si256(s);
        let b = _mm256_loadu_si256(s.add(1));
        let c = _mm256_loadu_si256(s.add(2));
        let e = _mm256_loadu_si256(s.add(3));
        _mm256_storeu_si256(d, a);
        _mm256_storeu_si256(d.add(1), b);
        _mm256_storeu_si256(d.add(2), c);
        _mm256_storeu_si256(d.add(3), e);
    }
}

/// Blocks above this size whose target sits at the same place in its 4 KiB page as the
/// source, or up to 63 bytes after it, take [`copy_avx2_lagged`].
pub const LAGGED_MIN: usize = 4096;

/// [`copy_avx2`] with the stores one 128-byte step behind the loads.  When the target is
/// at (nearly) the same offset in its page as the source (two page-aligned buffers: a put
/// from the start of one segment to the start of another), the plain loop's loads run
/// just ahead of its stores at the same page offsets, and a 16 KiB copy took ~10% longer
/// (a C loop on this machine: 155 vs 140 ns; a SISCI 16 KiB DMA from offset 0 to offset 0,
/// best of 9 in 6 alternating runs: ~290 vs ~257 ns with this loop); with the stores a
/// step behind, the offsets the two streams touch at once differ.  (Measured at other
/// distances the lag is no better or worse, and at 4 KiB no better: hence the bounds.)
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn copy_avx2_lagged(src: *const u8, dst: *mut u8, n: usize) {
    use std::arch::x86_64::{__m256i, _mm256_loadu_si256, _mm256_storeu_si256};
    // SAFETY: n > 128 (the caller's bound): the first step and every step with i + 128 <= n
    // lie inside both ranges (unaligned loads and stores); the rest by copy_nonoverlapping
    // (the ranges are disjoint).
    unsafe {
        let ld = |i: usize| {
            let s = src.add(i) as *const __m256i;
            [_mm256_loadu_si256(s), _mm256_loadu_si256(s.add(1)), _mm256_loadu_si256(s.add(2)), _mm256_loadu_si256(s.add(3))]
        };
        let st = |i: usize, v: [__m256i; 4]| {
            let d = dst.add(i) as *mut __m256i;
            _mm256_storeu_si256(d, v[0]);
            _mm256_storeu_si256(d.add(1), v[1]);
            _mm256_storeu_si256(d.add(2), v[2]);
            _mm256_storeu_si256(d.add(3), v[3]);
        };
        // Two steps in flight, in two register sets that take turns (no moves).
        let mut a = ld(0);
        let mut i = 128;
        while i + 256 <= n {
            let b = ld(i);
            st(i - 128, a);
            a = ld(i + 128);
            st(i, b);
            i += 256;
        }
        if i + 128 <= n {
            let b = ld(i);
            st(i - 128, a);
            st(i, b);
            i += 128;
        } else {
            st(i - 128, a);
        }
        if i < n {
            std::ptr::copy_nonoverlapping(src.add(i), dst.add(i), n - i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every size around the loop's bounds and tails, at odd offsets, and overlapping
    /// ranges both ways (memmove's result).
    #[test]
    fn copies_like_memmove() {
        let pattern: Vec<u8> = (0..40000u32).map(|i| (i * 7 + 3) as u8).collect();
        for &n in &[0, 1, 127, 2048, 2049, 2050, 4096, 4097, 4223, 8191, 16383, 16384, 16385, 20000] {
            for &(so, dof) in &[(0usize, 0usize), (1, 3), (5, 64)] {
                let mut dst = vec![0u8; n + 128];
                // SAFETY: both ranges inside their buffers.
                unsafe { copy(pattern.as_ptr().add(so), dst.as_mut_ptr().add(dof), n) };
                assert_eq!(&dst[dof..dof + n], &pattern[so..so + n], "n {n} offsets {so} {dof}");
                assert!(dst[..dof].iter().all(|&b| b == 0) && dst[dof + n..].iter().all(|&b| b == 0));
            }
        }
        // The lagged loop: targets at 0..63 bytes after the source's page offset.
        let mut buf = vec![0u8; 3 * 16384 + 8192];
        let base = buf.as_ptr() as usize;
        let src_off = (4096 - base % 4096) % 4096;
        for &n in &[4097usize, 4223, 8191, 8192, 16383, 16384] {
            for &delta in &[0usize, 1, 63, 64] {
                let dst_off = src_off + 16384 + 4096 + delta;
                buf[src_off..src_off + n].copy_from_slice(&pattern[..n]);
                buf[dst_off - 1..dst_off + n + 1].fill(0);
                let p = buf.as_mut_ptr();
                // SAFETY: both ranges inside `buf`, disjoint.
                unsafe { copy(p.add(src_off), p.add(dst_off), n) };
                assert_eq!(&buf[dst_off..dst_off + n], &pattern[..n], "lagged n {n} delta {delta}");
                assert!(buf[dst_off - 1] == 0 && buf[dst_off + n] == 0, "lagged n {n} delta {delta}: outside");
            }
        }
        // Large blocks alternate direction: each size twice in a row takes both loops.
        for &n in &[12289usize, 16000, 16383, 16384] {
            for round in 0..2 {
                let mut dst = vec![0u8; n + 2];
                // SAFETY: both ranges inside their buffers, disjoint.
                unsafe { copy(pattern.as_ptr().add(3), dst.as_mut_ptr().add(1), n) };
                assert_eq!(&dst[1..1 + n], &pattern[3..3 + n], "back n {n} round {round}");
                assert!(dst[0] == 0 && dst[n + 1] == 0, "back n {n} round {round}: outside");
            }
        }
        // The small sizes' two-word path, overlapping both ways too.
        for n in 0..=20usize {
            for shift in 0..=n {
                let mut buf = pattern[..n + shift + 2].to_vec();
                let p = buf.as_mut_ptr();
                // SAFETY: inside `buf`; overlapping when shift < n, as memmove allows.
                unsafe { copy(p.add(1), p.add(1 + shift), n) };
                assert_eq!(&buf[1 + shift..1 + shift + n], &pattern[1..1 + n], "small n {n} shift {shift}");
                assert_eq!(buf[0], pattern[0]);
                assert_eq!(buf[1 + shift + n], pattern[1 + shift + n], "small n {n} shift {shift}: after");
                let mut buf = pattern[..n + shift + 2].to_vec();
                let p = buf.as_mut_ptr();
                // SAFETY: as above.
                unsafe { copy(p.add(1 + shift), p.add(1), n) };
                assert_eq!(&buf[1..1 + n], &pattern[1 + shift..1 + shift + n], "small back n {n} shift {shift}");
                assert_eq!(buf[0], pattern[0]);
                assert_eq!(buf[1 + n], pattern[1 + n], "small back n {n}: after");
            }
        }
        for &shift in &[1usize, 31, 2048, 4095] {
            let n = 4096;
            let mut buf = pattern[..n + shift].to_vec();
            let p = buf.as_mut_ptr();
            // SAFETY: inside `buf`; overlapping, as memmove allows.
            unsafe { copy(p, p.add(shift), n) };
            assert_eq!(&buf[shift..shift + n], &pattern[..n]);
            let mut buf = pattern[..n + shift].to_vec();
            let p = buf.as_mut_ptr();
            // SAFETY: as above.
            unsafe { copy(p.add(shift), p, n) };
            assert_eq!(&buf[..n], &pattern[shift..shift + n]);
        }
    }

    /// A reader that polls the last word of the target sees the whole copy once that word
    /// changed, whichever direction the copy ran (the last block is stored last: see
    /// [`copy_avx2_back`]).  Copies of every size the backward loop takes alternate
    /// direction on the writing thread.
    #[test]
    fn last_word_lands_last() {
        use std::sync::atomic::{AtomicU64, Ordering};
        use std::sync::Arc;
        const WORDS: usize = 16384 / 8;
        let dst: Arc<Vec<AtomicU64>> = Arc::new((0..WORDS).map(|_| AtomicU64::new(0)).collect());
        let acked = Arc::new(AtomicU64::new(0));
        let rounds = 400u64;
        let reader = {
            let (dst, acked) = (dst.clone(), acked.clone());
            std::thread::spawn(move || {
                for g in 1..=rounds {
                    let n = [12296usize, 16384][g as usize % 2] / 8;
                    // Spins (a yield between two loads would let the copy finish unseen),
                    // yielding now and then on a busy machine.
                    let mut spins = 0u32;
                    while dst[n - 1].load(Ordering::Acquire) != g {
                        spins = spins.wrapping_add(1);
                        if spins % 4096 == 0 {
                            std::thread::yield_now();
                        }
                        std::hint::spin_loop();
                    }
                    let stale = (0..n).filter(|&w| dst[w].load(Ordering::Relaxed) != g).count();
                    assert_eq!(stale, 0, "round {g}: {stale} of {n} words not yet copied when the last one was");
                    acked.store(g, Ordering::Release);
                }
            })
        };
        let mut src = vec![0u64; WORDS];
        for g in 1..=rounds {
            let n = [12296usize, 16384][g as usize % 2] / 8;
            src[..n].fill(g);
            // SAFETY: both ranges hold n words; the reader only loads the target (atomics of
            // the same size and alignment as the words stored).
            unsafe { copy(src.as_ptr() as *const u8, dst.as_ptr() as *mut u8, n * 8) };
            while acked.load(Ordering::Acquire) != g {
                if reader.is_finished() {
                    break; // it failed: its panic is reported below
                }
                std::thread::yield_now();
            }
        }
        reader.join().expect("reader");
    }
}
