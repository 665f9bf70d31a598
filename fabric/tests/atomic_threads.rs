//! Concurrency exactness of `fabric::atomic::apply`: lost updates would show up
//! as wrong totals, duplicated previous values, foreign bits in owned fields or
//! a min/max that moves backwards.  Threads stand in for processes; the word is
//! the same either way (shared mapping = same physical cache line).
//!
//! Sensitivity was checked by making individual ops non-atomic (load; store) on
//! purpose: each such mutation is caught by the test named for that op.  Races
//! run for a minimum wall-clock time rather than a fixed count because on a
//! small, busy machine a fixed count often finishes within one time slice,
//! without the threads ever overlapping.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::{Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use softnic_fabric::atomic::{apply, AmoOp, AmoWidth};

const THREADS: usize = 4;

/// How long each race keeps going (after its minimum step count).  About 20
/// races run one after another, so the whole file stays well under 5 s.
const RACE_TIME: Duration = Duration::from_millis(120);

/// A raw word address that may cross threads.
#[derive(Clone, Copy)]
struct Word(*mut u8);
// SAFETY: the pointee outlives every scoped thread and is only accessed atomically.
unsafe impl Send for Word {}
unsafe impl Sync for Word {}

impl Word {
    fn of64(a: &AtomicU64) -> Word {
        Word(a.as_ptr() as *mut u8)
    }
    fn of32(a: &AtomicU32) -> Word {
        Word(a.as_ptr() as *mut u8)
    }
    fn op(self, width: AmoWidth, op: AmoOp) -> u64 {
        // SAFETY: points into a live atomic (see `of64`/`of32`), aligned by type.
        unsafe { apply(self.0, width, op) }.expect("apply")
    }
}

/// Loop control for one racing thread: at least `min` steps, then on until the
/// deadline, never more than `max`.
#[derive(Clone, Copy)]
struct Steps {
    min: u64,
    max: u64,
    end: Instant,
}

impl Steps {
    /// Whether to do step `k` (0-based).  The clock is read every 1024 steps.
    fn more(self, k: u64) -> bool {
        k < self.min || (k < self.max && (k & 1023 != 0 || Instant::now() < self.end))
    }
}

/// Runs `f(t, steps)` on `n` threads released together by a barrier, returning
/// the results in thread order.
///
/// Races run one at a time: the harness runs tests in parallel, and two tests'
/// threads would then time-share the cores instead of contending.
fn race<R: Send>(n: usize, min: u64, max: u64, f: impl Fn(usize, Steps) -> R + Sync) -> Vec<R> {
    static SERIAL: Mutex<()> = Mutex::new(());
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let start = Barrier::new(n);
    let (start, f) = (&start, &f);
    thread::scope(|s| {
        let hs: Vec<_> = (0..n)
            .map(|t| {
                s.spawn(move || {
                    start.wait();
                    f(t, Steps { min, max, end: Instant::now() + RACE_TIME })
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn fetch_add_exact_total_and_unique_previous_values() {
    let word = AtomicU64::new(0);
    let w = Word::of64(&word);
    // Capped so the previous values (kept for the uniqueness check) fit easily.
    let mut prevs: Vec<u64> = race(THREADS, 50_000, 250_000, |_, steps| {
        let mut v = Vec::new();
        let mut k = 0;
        while steps.more(k) {
            v.push(w.op(AmoWidth::I64, AmoOp::Add(1)));
            k += 1;
        }
        v
    })
    .concat();
    let total = prevs.len() as u64;
    assert_eq!(word.load(SeqCst), total);
    // Every increment saw a distinct predecessor: exactly 0..total, each once.
    prevs.sort_unstable();
    assert!(prevs.iter().copied().eq(0..total), "duplicated or missing previous values");
}

#[test]
fn adjacent_32bit_words_do_not_interfere() {
    // Four u32 counters in one 16-byte block (same cache line), one per thread,
    // each hammered concurrently with wrapping adds.  A 32-bit op implemented as
    // a wider RMW would corrupt neighbours; wrapping must not carry across.
    #[repr(C, align(16))]
    struct Block([AtomicU32; 4]);
    let start = u32::MAX - 1000;
    let block = Block([AtomicU32::new(start), AtomicU32::new(start), AtomicU32::new(start), AtomicU32::new(start)]);
    let words: Vec<Word> = block.0.iter().map(Word::of32).collect();
    let counts = race(4, 20_000, u64::MAX, |t, steps| {
        let mut k = 0;
        while steps.more(k) {
            words[t].op(AmoWidth::I32, AmoOp::Add(t as u64 + 1));
            k += 1;
        }
        k
    });
    for (t, (word, &n)) in block.0.iter().zip(&counts).enumerate() {
        let expect = start.wrapping_add((n as u32).wrapping_mul(t as u32 + 1));
        assert_eq!(word.load(SeqCst), expect, "counter {t}");
    }
}

#[test]
fn cas_increment_loops_exact() {
    let word = AtomicU64::new(0);
    let w = Word::of64(&word);
    let per_thread = race(THREADS, 20_000, u64::MAX, |_, steps| {
        let (mut k, mut failed, mut seen) = (0u64, 0u64, 0u64);
        while steps.more(k) {
            loop {
                let old = w.op(AmoWidth::I64, AmoOp::CompareSwap { compare: seen, swap: seen + 1 });
                if old == seen {
                    seen += 1;
                    break;
                }
                failed += 1;
                seen = old; // a failed CAS returns the current value
            }
            k += 1;
        }
        (k, failed)
    });
    let total: u64 = per_thread.iter().map(|p| p.0).sum();
    assert_eq!(word.load(SeqCst), total);
    // Not a correctness requirement; shows (with --nocapture) that threads contended.
    let failed: u64 = per_thread.iter().map(|p| p.1).sum();
    eprintln!("cas_increment_loops_exact: {total} increments, {failed} failed CAS attempts");
}

#[test]
fn cas_increment_loops_exact_32bit() {
    let word = AtomicU32::new(0);
    let w = Word::of32(&word);
    // Capped below 2^32 / THREADS so the counter cannot wrap.
    let counts = race(THREADS, 20_000, 100_000_000, |_, steps| {
        let (mut k, mut seen) = (0u64, 0u64);
        while steps.more(k) {
            loop {
                let old = w.op(AmoWidth::I32, AmoOp::CompareSwap { compare: seen, swap: seen + 1 });
                if old == seen {
                    seen += 1;
                    break;
                }
                seen = old;
            }
            k += 1;
        }
        k
    });
    assert_eq!(word.load(SeqCst) as u64, counts.iter().sum::<u64>());
}

/// Each thread owns one byte of the word and writes a sequence number into it
/// with a bit-field op; it must always read back its own last value (no other
/// thread's update may clobber it), and the final word holds each thread's last
/// number with the unowned bytes still zero.
fn owned_byte_fields(width: AmoWidth, make: fn(shift: u32, val: u64) -> AmoOp) {
    let word = AtomicU64::new(0);
    let w = Word::of64(&word);
    // 4 threads: every byte of an I32, every other byte of an I64.
    let stride = if width == AmoWidth::I32 { 8 } else { 16 };
    let lasts = race(THREADS, 20_000, u64::MAX, |t, steps| {
        let shift = stride * t as u32;
        let (mut k, mut mine) = (0u64, 0u64);
        while steps.more(k) {
            let v = (k + 1) & 0xFF;
            let prev = w.op(width, make(shift, v));
            assert_eq!((prev >> shift) & 0xFF, mine, "thread {t} lost its byte at step {k}");
            mine = v;
            k += 1;
        }
        mine
    });
    let expect = (0..THREADS).fold(0u64, |acc, t| acc | (lasts[t] << (stride * t as u32)));
    // The 32-bit word is the low half of the u64 (little-endian), so comparing
    // the whole u64 also checks that the high half stayed zero.
    #[cfg(target_endian = "little")]
    assert_eq!(word.load(SeqCst), expect);
    #[cfg(target_endian = "big")]
    assert_eq!(if width == AmoWidth::I32 { word.load(SeqCst) >> 32 } else { word.load(SeqCst) }, expect);
}

#[test]
fn masked_swap_owned_bytes_64() {
    owned_byte_fields(AmoWidth::I64, |sh, v| AmoOp::MaskedSwap { mask: 0xFF << sh, value: v << sh });
}

#[test]
fn masked_swap_owned_bytes_32() {
    // `value` carries junk outside the mask, which must be ignored.
    owned_byte_fields(AmoWidth::I32, |sh, v| AmoOp::MaskedSwap { mask: 0xFF << sh, value: (v << sh) | !(0xFF << sh) });
}

#[test]
fn and_xor_owned_bytes_64() {
    owned_byte_fields(AmoWidth::I64, |sh, v| AmoOp::AndXor { and: !(0xFF << sh), xor: v << sh });
}

#[test]
fn and_xor_owned_bytes_32() {
    owned_byte_fields(AmoWidth::I32, |sh, v| AmoOp::AndXor { and: !(0xFF << sh), xor: v << sh });
}

#[test]
fn xor_and_or_toggles_predictable() {
    // Threads 0..4 toggle bit t, alternating AndXor{and: !0} and Xor, and report
    // whether they toggled an odd number of times; threads 4..8 repeatedly set
    // bit t+32 with Or and clear bit t+40 with And.  The final value is determined.
    let word = AtomicU64::new(0xFF << 40);
    let w = Word::of64(&word);
    let toggles = race(8, 20_000, u64::MAX, |t, steps| {
        let mut k = 0u64;
        if t < 4 {
            while steps.more(k) {
                let op = if k & 1 == 0 { AmoOp::AndXor { and: !0, xor: 1 << t } } else { AmoOp::Xor(1 << t) };
                w.op(AmoWidth::I64, op);
                k += 1;
            }
        } else {
            let b = t as u64 - 4;
            while steps.more(k) {
                w.op(AmoWidth::I64, AmoOp::Or(1 << (b + 32)));
                w.op(AmoWidth::I64, AmoOp::And(!(1 << (b + 40))));
                k += 1;
            }
        }
        k
    });
    let low = (0..4).fold(0u64, |acc, t| acc | ((toggles[t] & 1) << t));
    assert_eq!(word.load(SeqCst), low | (0xF << 32) | (0xF0 << 40));
}

#[test]
fn float_add_of_exact_halves() {
    let f64w = AtomicU64::new(0f64.to_bits());
    let f32w = AtomicU32::new(0f32.to_bits());
    let (a, b) = (Word::of64(&f64w), Word::of32(&f32w));
    // f32 keeps 24 significant bits: the cap keeps the f32 sum (halves) exact.
    let counts = race(THREADS, 20_000, (1 << 24) / THREADS as u64, |_, steps| {
        let mut k = 0;
        while steps.more(k) {
            a.op(AmoWidth::F64, AmoOp::Add(0.5f64.to_bits()));
            b.op(AmoWidth::F32, AmoOp::Add(0.5f32.to_bits() as u64));
            k += 1;
        }
        k
    });
    let total: u64 = counts.iter().sum();
    assert_eq!(f64::from_bits(f64w.load(SeqCst)), 0.5 * total as f64);
    assert_eq!(f32::from_bits(f32w.load(SeqCst)), 0.5 * total as f32);
}

/// Deterministic pseudo-random sequence (xorshift) so the data are reproducible.
fn xorshift(mut x: u64) -> impl Iterator<Item = u64> {
    std::iter::from_fn(move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        Some(x)
    })
}

#[test]
fn min_max_random_races_end_at_true_extremes() {
    const N: usize = 20_000;
    let imin = AtomicU64::new(0);
    let imax = AtomicU64::new(0);
    let i32min = AtomicU32::new(0);
    let fmax = AtomicU64::new(f64::NAN.to_bits()); // a NaN in memory loses to the first number
    let (wmin, wmax, w32, wf) = (Word::of64(&imin), Word::of64(&imax), Word::of32(&i32min), Word::of64(&fmax));
    let per_thread = race(THREADS, 0, 0, |t, _| {
        let (mut lo, mut hi, mut lo32, mut fhi) = (0i64, 0i64, 0i32, f64::NEG_INFINITY);
        for r in xorshift(0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1)).take(N) {
            let v = r as i64;
            lo = lo.min(v);
            hi = hi.max(v);
            wmin.op(AmoWidth::I64, AmoOp::Min(v as u64));
            wmax.op(AmoWidth::I64, AmoOp::Max(v as u64));
            let v32 = (r >> 17) as u32 as i32;
            lo32 = lo32.min(v32);
            w32.op(AmoWidth::I32, AmoOp::Min(v32 as u32 as u64));
            let f = (r >> 11) as f64 * if r & 1 == 1 { -1.0 } else { 1.0 };
            fhi = fhi.max(f);
            wf.op(AmoWidth::F64, AmoOp::Max(f.to_bits()));
            // NaN operands interleaved must never win.
            wf.op(AmoWidth::F64, AmoOp::Max(f64::NAN.to_bits()));
        }
        (lo, hi, lo32, fhi)
    });
    let lo = per_thread.iter().map(|p| p.0).min().unwrap();
    let hi = per_thread.iter().map(|p| p.1).max().unwrap();
    let lo32 = per_thread.iter().map(|p| p.2).min().unwrap();
    let fhi = per_thread.iter().map(|p| p.3).fold(f64::NEG_INFINITY, f64::max);
    assert!(lo < 0 && hi > 0 && lo32 < 0, "test data must have both signs");
    assert_eq!(imin.load(SeqCst) as i64, lo);
    assert_eq!(imax.load(SeqCst) as i64, hi);
    assert_eq!(i32min.load(SeqCst) as i32, lo32);
    assert_eq!(f64::from_bits(fmax.load(SeqCst)), fhi);
}

/// Every thread applies an ever-more-extreme value each step, interleaved with
/// the other threads' values, so nearly every op is an update and updates race.
/// With a correct atomic min, memory only ever decreases, so the previous value
/// a thread reads back can never exceed a value it applied itself earlier (a
/// lost update would make memory move backwards).  Same for max.
fn monotone_min_max(width: AmoWidth) {
    let word = AtomicU64::new(0);
    let w = Word::of64(&word);
    // Step values stay below 2^24 (cap below), so they are exact in f32 too.
    let enc = move |x: i64| -> u64 {
        match width {
            AmoWidth::I32 => x as i32 as u32 as u64,
            AmoWidth::I64 => x as u64,
            AmoWidth::F32 => (x as f32).to_bits() as u64,
            AmoWidth::F64 => (x as f64).to_bits(),
        }
    };
    let dec = move |b: u64| -> i64 {
        match width {
            AmoWidth::I32 => b as u32 as i32 as i64,
            AmoWidth::I64 => b as i64,
            AmoWidth::F32 => f32::from_bits(b as u32) as i64,
            AmoWidth::F64 => f64::from_bits(b) as i64,
        }
    };
    for is_min in [true, false] {
        word.store(0, SeqCst); // all-zero bits are 0 / +0.0 for every width
        let lasts = race(THREADS, 20_000, (1 << 24) / THREADS as u64 - 1, |t, steps| {
            let (mut k, mut own_extreme) = (0u64, 0i64);
            while steps.more(k) {
                let mag = ((k + 1) * THREADS as u64 + t as u64) as i64;
                let x = if is_min { -mag } else { mag };
                let op = if is_min { AmoOp::Min(enc(x)) } else { AmoOp::Max(enc(x)) };
                let prev = dec(w.op(width, op));
                if is_min {
                    assert!(prev <= own_extreme, "{width:?} min moved backwards: read {prev} after applying {own_extreme}");
                } else {
                    assert!(prev >= own_extreme, "{width:?} max moved backwards: read {prev} after applying {own_extreme}");
                }
                own_extreme = x;
                k += 1;
            }
            own_extreme
        });
        let expect = if is_min { *lasts.iter().min().unwrap() } else { *lasts.iter().max().unwrap() };
        let bits = if matches!(width, AmoWidth::I32 | AmoWidth::F32) { word.load(SeqCst) & 0xFFFF_FFFF } else { word.load(SeqCst) };
        assert_eq!(dec(bits), expect, "{width:?} final");
    }
}

#[test]
fn monotone_min_max_i32() {
    monotone_min_max(AmoWidth::I32);
}

#[test]
fn monotone_min_max_i64() {
    monotone_min_max(AmoWidth::I64);
}

#[test]
fn monotone_min_max_f32() {
    monotone_min_max(AmoWidth::F32);
}

#[test]
fn monotone_min_max_f64() {
    monotone_min_max(AmoWidth::F64);
}

#[test]
fn mixed_with_native_rust_atomics() {
    // Two threads use our remote atomics (add 1; CAS loop adding 3), two act as
    // the target CPU using plain std atomics on the same word (fetch_add 5;
    // native CAS loop adding 7).  The total must be exact.
    let word = AtomicU64::new(0);
    let w = Word::of64(&word);
    let counts = race(4, 20_000, u64::MAX, |t, steps| {
        let (mut k, mut seen) = (0u64, 0u64);
        while steps.more(k) {
            match t {
                0 => {
                    w.op(AmoWidth::I64, AmoOp::Add(1));
                }
                1 => loop {
                    let old = w.op(AmoWidth::I64, AmoOp::CompareSwap { compare: seen, swap: seen + 3 });
                    if old == seen {
                        seen += 3;
                        break;
                    }
                    seen = old;
                },
                2 => {
                    word.fetch_add(5, SeqCst);
                }
                _ => {
                    let _ = word.fetch_update(SeqCst, SeqCst, |v| Some(v + 7));
                }
            }
            k += 1;
        }
        k
    });
    assert_eq!(word.load(SeqCst), counts[0] + 3 * counts[1] + 5 * counts[2] + 7 * counts[3]);
}
