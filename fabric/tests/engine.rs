//! Multi-process tests of the node fabric: registration, put/get, atomics, remote events,
//! bad input, dead peers, the registry.  Child processes are `fabric-selftest` (see
//! src/bin/fabric-selftest.rs), driven line by line over pipes.

use softnic_fabric::atomic::{AmoOp, AmoWidth};
use softnic_fabric::mem::{self, Access, MemKey, RingLoc};
use softnic_fabric::node::{self, PeerRef};
use softnic_fabric::registry;
use softnic_fabric::rma::{self, Peer, Pinned, PinnedRing, QuickPinned};
use softnic_fabric::Error;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Registration rebinds pages; other test threads writing the heap meanwhile is the
/// documented unsupported case, so the tests of this file run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());
fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

const SMALL: usize = 64 << 10;
const BIG: usize = (17 << 20) + 3 * 4096;

fn pat(seed: u64, i: usize) -> u8 {
    (((i as u64).wrapping_mul(131) ^ seed.wrapping_mul(0x9e37_79b9) ^ ((i as u64) >> 9)) & 0xff) as u8
}

/// The job secret of the test's child processes (see `Kid::spawn_env`).
const TEST_JOB_SECRET: &str = "00112233445566778899aabbccddeeff";

struct Kid {
    child: Child,
    tx: ChildStdin,
    rx: BufReader<ChildStdout>,
}

impl Kid {
    fn spawn() -> Kid {
        Kid::spawn_env(&[])
    }
    fn spawn_env(env: &[(&str, &str)]) -> Kid {
        let mut c = Command::new(env!("CARGO_BIN_EXE_fabric-selftest"));
        c.stdin(Stdio::piped()).stdout(Stdio::piped());
        // The children form one job (as a launcher's ranks would): they share its secret.
        c.env("SOFTNIC_JOB_SECRET", TEST_JOB_SECRET);
        for (k, v) in env {
            c.env(k, v);
        }
        let mut child = c.spawn().expect("spawn selftest");
        let tx = child.stdin.take().unwrap();
        let rx = BufReader::new(child.stdout.take().unwrap());
        Kid { child, tx, rx }
    }
    fn send(&mut self, cmd: &str) {
        writeln!(self.tx, "{}", cmd).unwrap();
        self.tx.flush().unwrap();
    }
    fn recv(&mut self) -> String {
        let mut s = String::new();
        self.rx.read_line(&mut s).unwrap();
        s.trim().to_string()
    }
    fn cmd(&mut self, cmd: &str) -> String {
        self.send(cmd);
        self.recv()
    }
    /// Sends and expects "ok ..."; returns the numeric fields.
    fn ok(&mut self, cmd: &str) -> Vec<u64> {
        let r = self.cmd(cmd);
        assert!(r.starts_with("ok"), "{} -> {}", cmd, r);
        r.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect()
    }
    fn peer_ref(&mut self) -> PeerRef {
        let w = self.ok("ref");
        PeerRef::from_words([w[0], w[1], w[2]])
    }
    /// reg -> (key, addr, shared)
    fn reg(&mut self, region: &str, off: usize, len: usize, acc: &str, pd: u64) -> (MemKey, u64, bool) {
        let r = self.cmd(&format!("reg {} {} {} {} {}", region, off, len, acc, pd));
        let f: Vec<&str> = r.split_whitespace().collect();
        assert_eq!(f[0], "ok", "reg {}: {}", region, r);
        (MemKey::from_u64(f[1].parse().unwrap()), f[2].parse().unwrap(), f[3] == "true")
    }
    fn finish(mut self) {
        let _ = self.cmd("exit");
        let _ = self.child.wait();
    }
}

/// Sleeps until an operation is surely later than `rma::death_detect_bound()` after now,
/// by the clock the bound is kept with: the coarse clock can lag real time by more than a
/// tick on a loaded virtual machine (a plain sleep of the bound then saw the dead peer's
/// last probe as too recent to repeat).
fn sleep_past_death_detect_bound() {
    fn coarse() -> Duration {
        let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: a valid out pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut t) };
        Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
    }
    let start = coarse();
    std::thread::sleep(rma::death_detect_bound());
    while coarse() - start <= rma::death_detect_bound() {
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn self_words() -> String {
    let w = node::self_ref().unwrap().to_words();
    format!("{} {} {}", w[0], w[1], w[2])
}

// ---------------------------------------------------------------------------------------

#[test]
fn put_get_all_regions_and_sizes() {
    let _g = serial();
    let mut k = Kid::spawn();
    let peer = Peer::open(k.peer_ref()).unwrap();
    let pd = 77;
    let mut seed = 1;
    for (region, len, sizes) in [
        ("heap_small", SMALL, &[0usize, 1, 7, 4095, 4097][..]),
        ("stack", 256 << 10, &[0, 1, 7, 4095, 4097][..]),
        ("bss", SMALL, &[1, 7, 4095, 4097][..]),
        ("data", SMALL, &[1, 7, 4095, 4097][..]),
        ("fallback", SMALL, &[0, 1, 7, 4095, 4097][..]),
        ("heap_big", BIG, &[1, 4097, (1 << 20) + 3, 16 << 20][..]),
        ("shared", BIG, &[1, 4097, (1 << 20) + 3, 16 << 20][..]),
    ] {
        let (key, base, shared) = k.reg(region, 0, len, "rw", pd);
        assert_eq!(shared, region != "fallback", "{}: shared-ness", region);
        for &n in sizes {
            seed += 1;
            let outer = seed * 1000;
            k.ok(&format!("fill {} {}", region, outer));
            // Odd alignment on both sides: remote offset 3, local offset 1.
            let roff = 3usize;
            let mut src = vec![0u8; n + 2];
            for i in 0..n {
                src[1 + i] = pat(seed, i);
            }
            rma::put(&peer, key, base + roff as u64, &src[1..1 + n], pd).unwrap();
            let r = k.cmd(&format!("verify {} {} {} {} {}", region, roff, n, seed, outer));
            assert_eq!(r, "ok", "{} put {} B", region, n);
            // Get it back into a buffer with guards on both sides, at odd offset 5.
            let mut dst = vec![0xeeu8; n + 69];
            rma::get(&peer, key, base + roff as u64, &mut dst[5..5 + n], pd).unwrap();
            assert!(dst[..5].iter().all(|&b| b == 0xee) && dst[5 + n..].iter().all(|&b| b == 0xee), "{} get {} B: guard", region, n);
            for i in 0..n {
                assert_eq!(dst[5 + i], pat(seed, i), "{} get {} B at {}", region, n, i);
            }
        }
    }
    k.finish();
}

/// The registration table filled up: the next registration is NoSpace; rows freed low,
/// in the middle and at the end are found again (`mem::register` looks from a hint that
/// deregistrations lower, then from the start), exactly as many as were freed.
#[test]
fn a_full_registration_table_reuses_freed_rows() {
    let _g = serial();
    let buf = vec![7u8; 8192];
    let addr = (buf.as_ptr() as usize + 4095) & !4095;
    let reg = || mem::register(addr, 64, Access::ReadWrite, 1);
    let mut keys = Vec::new();
    loop {
        match reg() {
            Ok(k) => keys.push(k),
            Err(Error::NoSpace) => break,
            Err(e) => panic!("register: {e:?}"),
        }
        assert!(keys.len() <= node::NREG, "more registrations than rows");
    }
    assert!(keys.len() > 3, "{} rows free at the start", keys.len());
    let picks = [1, keys.len() / 2, keys.len() - 1];
    let mut want: Vec<u32> = picks.iter().map(|&i| keys[i].index).collect();
    for &i in &picks {
        mem::deregister(keys[i]).unwrap();
    }
    let again: Vec<MemKey> = (0..picks.len()).map(|_| reg().unwrap()).collect();
    assert_eq!(reg(), Err(Error::NoSpace));
    let mut got: Vec<u32> = again.iter().map(|k| k.index).collect();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
    for (i, k) in keys.iter().enumerate() {
        if !picks.contains(&i) {
            mem::deregister(*k).unwrap();
        }
    }
    for k in again {
        mem::deregister(k).unwrap();
    }
    // Every row free again: a registration takes the lowest free one there was at the
    // start (the hint went down with the deregistrations).
    let k = reg().unwrap();
    assert_eq!(k.index, keys.iter().map(|k| k.index).min().unwrap());
    mem::deregister(k).unwrap();
    drop(buf);
}

#[test]
fn local_registration_keeps_contents() {
    let _g = serial();
    static mut STATIC_BUF: [u8; 10000] = [3; 10000];
    let me = Peer::this().unwrap();
    // heap
    let mut heap: Vec<u8> = (0..50_000).map(|i| pat(9, i)).collect();
    let hk = mem::register(heap.as_ptr() as usize + 1, heap.len() - 2, Access::ReadWrite, 1).unwrap();
    assert!(heap.iter().enumerate().all(|(i, &b)| b == pat(9, i)), "heap contents changed by rebind");
    heap[100] = 0x42;
    let mut b = [0u8; 1];
    rma::get(&me, hk, heap.as_ptr() as u64 + 100, &mut b, 1).unwrap();
    assert_eq!(b[0], 0x42);
    // stack (the range includes this frame's neighbourhood: helper-thread path)
    let mut stack = [0u8; 9000];
    for (i, x) in stack.iter_mut().enumerate() {
        *x = pat(4, i);
    }
    let sk = mem::register(stack.as_ptr() as usize, stack.len(), Access::ReadWrite, 1).unwrap();
    assert!(std::hint::black_box(&stack).iter().enumerate().all(|(i, &b)| b == pat(4, i)), "stack contents changed");
    assert!(mem::query(sk).unwrap().shared);
    // static
    let sp = std::ptr::addr_of_mut!(STATIC_BUF) as *mut u8;
    let stk = mem::register(sp as usize, 10000, Access::ReadOnly, 2).unwrap();
    // SAFETY: reading our static.
    assert!((0..10000).all(|i| unsafe { *sp.add(i) } == 3));
    assert_eq!(mem::query(stk).unwrap().access, Access::ReadOnly);
    // Overlapping registration reuses backing: no new memfd.
    let before = mem::backing_count();
    let hk2 = mem::register(heap.as_ptr() as usize + 10, 100, Access::ReadWrite, 1).unwrap();
    // (At most as many: a register also drops backings the program has unmapped since.)
    assert!(mem::backing_count() <= before, "overlapping registration made a new backing");
    // alloc_shared needs no rebind either
    let sm = mem::alloc_shared(5000).unwrap();
    let c = mem::backing_count();
    let smk = mem::register(sm.as_ptr() as usize + 7, 100, Access::ReadWrite, 3).unwrap();
    assert!(mem::backing_count() <= c, "registering alloc_shared memory made a new backing");
    rma::put(&me, smk, sm.as_ptr() as u64 + 7, &[9, 8, 7], 3).unwrap();
    // SAFETY: our shared buffer.
    assert_eq!(unsafe { std::slice::from_raw_parts(sm.as_ptr().add(7), 3) }, &[9, 8, 7]);
    for k in [hk, sk, stk, hk2, smk] {
        mem::deregister(k).unwrap();
    }
    assert_eq!(mem::deregister(hk), Err(Error::StaleHandle));
    assert_eq!(mem::register(0, 10, Access::ReadWrite, 0), Err(Error::InvalidArg));
    assert_eq!(mem::register(heap.as_ptr() as usize, 0, Access::ReadWrite, 0), Err(Error::InvalidArg));
    assert_eq!(mem::register(usize::MAX - 10, 100, Access::ReadWrite, 0), Err(Error::InvalidArg));
    mem::free_shared(sm).unwrap();
    drop(heap);
}

/// Resident kB of the mapping that contains `addr` (/proc/self/smaps).
fn rss_kb_at(addr: usize) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut inside = false;
    for line in smaps.lines() {
        if let Some((range, _)) = line.split_once(' ') {
            if let Some((a, b)) = range.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                    inside = a <= addr && addr < b;
                    continue;
                }
            }
        }
        if inside {
            if let Some(v) = line.strip_prefix("Rss:") {
                return v.trim().trim_end_matches("kB").trim().parse().unwrap();
            }
        }
    }
    panic!("no mapping at {addr:#x}");
}

#[test]
fn registering_mostly_untouched_memory_copies_what_was_written() {
    let _g = serial();
    const LEN: usize = 64 << 20;
    // SAFETY: a fresh private anonymous mapping, ours until the munmap below.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), LEN, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) } as *mut u8;
    assert_ne!(p as *mut libc::c_void, libc::MAP_FAILED);
    // SAFETY: inside the mapping.
    let buf = unsafe { std::slice::from_raw_parts_mut(p, LEN) };
    let written = [0usize, 5, 1000, LEN / 4096 - 1];
    for &pg in &written {
        for i in 0..4096 {
            buf[pg * 4096 + i] = pat(pg as u64, i);
        }
    }
    let key = mem::register(p as usize, LEN, Access::ReadWrite, 4).unwrap();
    assert!(mem::query(key).unwrap().shared);
    // Only the written pages (and whatever huge pages hold them) were copied in.
    let rss = rss_kb_at(p as usize);
    assert!(rss < 16 << 10, "{rss} kB resident after registering 64 MiB with 4 pages written");
    for &pg in &written {
        assert!((0..4096).all(|i| buf[pg * 4096 + i] == pat(pg as u64, i)), "page {pg} lost its contents");
    }
    assert!(buf[4096..5 * 4096].iter().all(|&b| b == 0) && buf[LEN / 2..LEN / 2 + 4096].iter().all(|&b| b == 0), "untouched pages read as zeros");
    // Untouched pages are ordinary registered memory afterwards.
    let me = Peer::this().unwrap();
    rma::put(&me, key, p as u64 + (LEN / 2) as u64 + 8, &[1, 2, 3], 4).unwrap();
    assert_eq!(&buf[LEN / 2 + 8..LEN / 2 + 11], &[1, 2, 3]);
    mem::deregister(key).unwrap();
    // SAFETY: our mapping (now the rebound memfd pages), no longer registered.
    unsafe { libc::munmap(p as *mut libc::c_void, LEN) };
}

/// The permission letters ("rwxp") of the mapping that contains `addr`.
fn perms_at(addr: usize) -> String {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (range, perms) = (f.next().unwrap(), f.next().unwrap());
        let (a, b) = range.split_once('-').unwrap();
        if usize::from_str_radix(a, 16).unwrap() <= addr && addr < usize::from_str_radix(b, 16).unwrap() {
            return perms.to_string();
        }
    }
    panic!("no mapping at {addr:#x}");
}

#[test]
fn anonymous_executable_memory_is_rebound_with_exec_kept() {
    // valgrind's client heap is such a mapping; so is a JIT buffer.
    let _g = serial();
    const LEN: usize = 8 * 4096;
    // SAFETY: a fresh private anonymous mapping, ours until the munmap below.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), LEN, libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) } as *mut u8;
    assert_ne!(p as *mut libc::c_void, libc::MAP_FAILED);
    // SAFETY: inside the mapping.
    let buf = unsafe { std::slice::from_raw_parts_mut(p, LEN) };
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pat(31, i);
    }
    let key = mem::register(p as usize + 100, LEN - 200, Access::ReadWrite, 6).unwrap();
    assert!(mem::query(key).unwrap().shared, "rebound, not the process_vm fallback");
    assert_eq!(perms_at(p as usize), "rwxs", "still executable, now our shared backing");
    assert!(buf.iter().enumerate().all(|(i, &b)| b == pat(31, i)), "contents kept");
    let me = Peer::this().unwrap();
    let a = (p as u64 + 4096) & !7;
    let before = u64::from_ne_bytes(buf[4096..4104].try_into().unwrap());
    assert_eq!(rma::atomic(&me, key, a, AmoWidth::I64, AmoOp::Add(5), 6), Ok(before), "atomics work: not fallback memory");
    assert_eq!(u64::from_ne_bytes(buf[4096..4104].try_into().unwrap()), before.wrapping_add(5));
    mem::deregister(key).unwrap();
    // SAFETY: our mapping, no longer registered.
    unsafe { libc::munmap(p as *mut libc::c_void, LEN) };
}

/// Another thread writes a trail of words into a range while the range is registered (a
/// few ms of copying): none of its writes may be lost to the copy-and-swap.  Two trails:
/// word after word on a page written before, and one word per page on pages never
/// touched before (their first write may come before, between or after the scans).
#[test]
fn concurrent_writer_on_pages_being_registered_loses_nothing() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let _g = serial();
    if !mem::register_guard_available() {
        eprintln!("SKIP concurrent_writer_on_pages_being_registered_loses_nothing: no userfaultfd write protection here (kernel before 6.4, seccomp, or SOFTNIC_REGISTER_GUARD=0); registrations copy unguarded");
        return;
    }
    const LEN: usize = 4 << 20;
    const WORDS: usize = 512;
    static TRAIL: AtomicUsize = AtomicUsize::new(0);
    static STRIDE: AtomicUsize = AtomicUsize::new(0);
    static STOP: AtomicBool = AtomicBool::new(false);
    let rounds = 20;
    for stride in [8usize, 4096] {
        let mut lost = 0usize;
        let mut total = 0usize;
        for _ in 0..rounds {
            // SAFETY: a fresh private anonymous mapping, ours until the munmap below.
            let p = unsafe { libc::mmap(std::ptr::null_mut(), LEN, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) } as *mut u8;
            assert_ne!(p as *mut libc::c_void, libc::MAP_FAILED);
            // Pages the trail does not use hold data, so the copy takes a while.
            let trail_end = if stride == 8 { 4096 } else { WORDS * 4096 };
            // SAFETY: inside the mapping.
            unsafe { std::ptr::write_bytes(p.add(trail_end), 0x11, LEN - trail_end) };
            if stride == 8 {
                // SAFETY: inside the mapping.
                unsafe { std::ptr::write_bytes(p, 0, 4096) };
            }
            TRAIL.store(p as usize, Ordering::Release);
            STRIDE.store(stride, Ordering::Release);
            STOP.store(false, Ordering::Release);
            let writer = std::thread::spawn(|| {
                let (w, step) = (TRAIL.load(Ordering::Acquire), STRIDE.load(Ordering::Acquire));
                let mut n = 0;
                while n < WORDS && !STOP.load(Ordering::Acquire) {
                    // SAFETY: inside the mapping, which outlives this thread.
                    unsafe { std::ptr::write_volatile((w + n * step) as *mut u64, 0x5eed_0000 + n as u64) };
                    n += 1;
                    let t = Instant::now();
                    while t.elapsed() < Duration::from_micros(10) {}
                }
                n
            });
            std::thread::sleep(Duration::from_micros(300));
            let key = mem::register(p as usize, LEN, Access::ReadWrite, 8).unwrap();
            STOP.store(true, Ordering::Release);
            let written = writer.join().unwrap();
            total += written;
            // SAFETY: the writer has finished; inside our mapping.
            lost += (0..written).filter(|&n| unsafe { std::ptr::read_volatile((p as usize + n * stride) as *const u64) } != 0x5eed_0000 + n as u64).count();
            mem::deregister(key).unwrap();
            // SAFETY: ours, no longer registered or used.
            unsafe { libc::munmap(p as *mut libc::c_void, LEN) };
        }
        assert_eq!(lost, 0, "stride {stride}: {lost} of {total} writes lost over {rounds} registrations");
    }
}

#[test]
fn atomics_three_updaters_every_op_and_width() {
    let _g = serial();
    let mut kids: Vec<Kid> = (0..3).map(|_| Kid::spawn()).collect();
    let mut words = vec![0u64; 16];
    let pd = 5;
    let key = mem::register(words.as_mut_ptr() as usize, 16 * 8, Access::ReadWrite, pd).unwrap();
    let me = self_words();
    let slot = &mut words[4] as *mut u64;
    let addr = slot as u64;
    let ops = ["add", "and", "or", "xor", "swap", "cswap", "mswap", "andxor", "min", "max"];
    for w in ["i32", "i64", "f32", "f64"] {
        let float = w.starts_with('f');
        let narrow = w.ends_with("32");
        for op in ops {
            let float_bad = matches!(op, "and" | "or" | "xor" | "mswap" | "andxor");
            if float && op == "cswap" {
                continue; // the cswap driver counts with integer arithmetic
            }
            let n: u64 = match op {
                "add" => 100_000,
                _ => 20_008, // 8 * odd: each xor bit toggles an odd number of times
            };
            // Initial value; for 32-bit widths the upper half is a guard.
            let guard: u64 = if narrow { 0xdead_beef_0000_0000 } else { 0 };
            let init: u64 = match op {
                "and" => if narrow { 0xffff_ffff } else { u64::MAX },
                "mswap" => if narrow { 0x5555_5555 } else { 0x5555_5555_5555_5555 },
                _ => 0,
            };
            // SAFETY: our registered word; no updater is running.
            unsafe { std::ptr::write_volatile(slot, guard | init) };
            for (i, kid) in kids.iter_mut().enumerate() {
                kid.send(&format!("amo {} {} {} {} {} {} {} {}", me, key.to_u64(), addr, w, op, i, n, pd));
            }
            let replies: Vec<String> = kids.iter_mut().map(|k| k.recv()).collect();
            if float && float_bad {
                for r in &replies {
                    assert_eq!(r, "err Unsupported", "{} {}", w, op);
                }
                continue;
            }
            let mut sum_old = 0u64;
            let mut succ = 0u64;
            for r in &replies {
                let f: Vec<&str> = r.split_whitespace().collect();
                assert_eq!(f[0], "ok", "{} {}: {}", w, op, r);
                sum_old = sum_old.wrapping_add(f[1].parse::<u64>().unwrap());
                succ += f[2].parse::<u64>().unwrap();
            }
            // SAFETY: updaters are done.
            let v = unsafe { std::ptr::read_volatile(slot) };
            assert_eq!(v & !0xffff_ffff, guard & !0xffff_ffff | if narrow { 0 } else { v & !0xffff_ffff }, "{} {}: guard half changed", w, op);
            let lo = if narrow { v & 0xffff_ffff } else { v };
            let fval = |x: f64| if narrow { (x as f32).to_bits() as u64 } else { x.to_bits() };
            let m = |x: u64| if narrow { x & 0xffff_ffff } else { x };
            let expect: Option<u64> = match op {
                "add" if float => Some(fval((3 * n) as f64)),
                "add" => Some(3 * n),
                "and" => Some(m(!0xff_ffffu64)),
                "or" | "xor" | "andxor" => Some(0xff_ffff),
                "cswap" => {
                    assert_eq!(succ, 3 * n, "{} cswap successes (final {:#x}) {:?}", w, lo, replies);
                    Some(3 * n)
                }
                "mswap" => Some(m(0x5555_5555_5555_5555 & !0xff_ffff) | ((n - 1) & 0xff) * 0x01_0101),
                "min" if float => Some(fval(-((3 * n - 1) as f64))),
                "min" => Some(m((-((3 * n - 1) as i64)) as u64)),
                "max" if float => Some(fval((3 * n - 1) as f64)),
                "max" => Some(3 * n - 1),
                "swap" => {
                    // Every value swapped in is either returned as someone's old value or final.
                    let all: u64 = (0..3u64).map(|i| (0..n).map(|k| i * 1_000_000 + k + 1).sum::<u64>()).sum();
                    assert_eq!(sum_old.wrapping_add(lo), all, "{} swap conservation", w);
                    None
                }
                _ => unreachable!(),
            };
            if let Some(e) = expect {
                assert_eq!(lo, e, "{} {}: final {:#x} want {:#x}", w, op, lo, e);
            }
        }
    }
    mem::deregister(key).unwrap();
    for k in kids {
        k.finish();
    }
}

#[test]
fn target_spinning_on_plain_word_sees_put_and_acks() {
    let _g = serial();
    let mut k = Kid::spawn();
    let peer = Peer::open(k.peer_ref()).unwrap();
    let (key, base, _) = k.reg("heap_small", 0, SMALL, "rw", 9);
    k.ok("fill heap_small 0");
    // Word at +64 is 0 after "fill" with seed 0? Not necessarily: zero it by put.
    rma::put(&peer, key, base + 64, &0u64.to_le_bytes(), 9).unwrap();
    rma::put(&peer, key, base + 128, &0u64.to_le_bytes(), 9).unwrap();
    k.send(&format!("spin {} {} {}", base + 64, 12345, base + 128));
    std::thread::sleep(Duration::from_millis(20)); // let it start spinning
    rma::put(&peer, key, base + 64, &12345u64.to_le_bytes(), 9).unwrap();
    let t = Instant::now();
    loop {
        let mut b = [0u8; 8];
        rma::get(&peer, key, base + 128, &mut b, 9).unwrap();
        if u64::from_le_bytes(b) == 12346 {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "no ack from spinning target");
    }
    assert_eq!(k.recv(), "ok");
    k.finish();
}

#[test]
fn remote_events_arrive_after_data() {
    let _g = serial();
    let mut k = Kid::spawn();
    let peer = Peer::open(k.peer_ref()).unwrap();
    let w = k.ok("ring 0 64");
    let loc = RingLoc::from_words([w[0], w[1], w[2]]);
    let (key, base, _) = k.reg("shared", 65536, 1 << 20, "rw", 3);
    for round in 0..20u64 {
        k.send("pop 0 5000"); // the child is waiting before data and event are sent
        std::thread::sleep(Duration::from_millis(1));
        let len = 1000 + round as usize * 977;
        let addr = base + round * 4096;
        let data: Vec<u8> = (0..len).map(|i| pat(round + 50, i)).collect();
        rma::put(&peer, key, addr, &data, 3).unwrap();
        assert!(rma::post_event(&peer, &loc, &[addr, len as u64 | ((round + 50) << 32)], false).unwrap());
        let r = k.recv();
        assert_eq!(r, format!("ok {} {} true", addr, len as u64 | ((round + 50) << 32)), "round {}", round);
    }
    // Full ring: 64 entries fit; the 65th is NoSpace, or an overrun when asked for.
    for i in 0..64u64 {
        rma::post_event(&peer, &loc, &[i, 0], false).unwrap();
    }
    assert_eq!(rma::post_event(&peer, &loc, &[0, 0], false), Err(Error::NoSpace));
    assert_eq!(rma::post_event(&peer, &loc, &[0, 0], true), Ok(false));
    let bad = RingLoc { backing: loc.backing, backing_gen: loc.backing_gen.wrapping_add(1), ..loc };
    assert_eq!(rma::post_event(&peer, &bad, &[0, 0], false), Err(Error::StaleHandle));
    let oob = RingLoc { offset: BIG as u64, ..loc };
    assert_eq!(rma::post_event(&peer, &oob, &[0, 0], false), Err(Error::OutOfBounds));
    k.finish();
}

#[test]
fn bad_accesses_fail_and_touch_nothing() {
    let _g = serial();
    let mut k = Kid::spawn();
    let peer = Peer::open(k.peer_ref()).unwrap();
    let (rw, a, _) = k.reg("heap_small", 1000, 1000, "rw", 5);
    let (ro, b, _) = k.reg("heap_small", 5000, 1000, "ro", 5);
    let (fb, c, shared) = k.reg("fallback", 64, 64, "rw", 5);
    assert!(!shared);
    k.ok("fill heap_small 11");
    let d = [0xabu8; 16];
    let mut g = [0u8; 16];
    assert_eq!(rma::put(&peer, rw, a + 1000 - 7, &d[..8], 5), Err(Error::OutOfBounds), "one byte past the end");
    assert_eq!(rma::get(&peer, rw, a + 1000 - 7, &mut g[..8], 5), Err(Error::OutOfBounds));
    assert_eq!(rma::put(&peer, rw, a - 1, &d[..1], 5), Err(Error::OutOfBounds), "one byte before");
    assert_eq!(rma::put(&peer, rw, u64::MAX - 3, &d[..8], 5), Err(Error::OutOfBounds), "wrapping");
    assert_eq!(rma::put(&peer, rw, a + 1000, &d[..0], 5), Ok(()), "0 bytes at the end is a no-op");
    assert_eq!(rma::put(&peer, ro, b, &d[..8], 5), Err(Error::Permission));
    assert_eq!(rma::atomic(&peer, ro, b, AmoWidth::I64, AmoOp::Add(1), 5), Err(Error::Permission));
    assert_eq!(rma::get(&peer, ro, b, &mut g[..8], 5), Ok(()), "reading read-only memory is fine");
    assert_eq!(rma::put(&peer, rw, a, &d[..8], 6), Err(Error::ProtectionDomain));
    assert_eq!(rma::atomic(&peer, rw, a, AmoWidth::I64, AmoOp::Add(1), 6), Err(Error::ProtectionDomain));
    let a8 = (a + 7) & !7;
    assert_eq!(rma::atomic(&peer, rw, a8 + 1, AmoWidth::I64, AmoOp::Add(1), 5), Err(Error::Misaligned));
    assert_eq!(rma::atomic(&peer, rw, a + 1000 - 4, AmoWidth::I64, AmoOp::Add(1), 5), Err(Error::OutOfBounds));
    assert_eq!(rma::put(&peer, MemKey { index: 1 << 30, generation: 0 }, a, &d[..1], 5), Err(Error::InvalidHandle));
    assert_eq!(rma::put(&peer, MemKey { generation: rw.generation ^ 1, ..rw }, a, &d[..1], 5), Err(Error::StaleHandle));
    assert_eq!(rma::atomic(&peer, fb, c, AmoWidth::I64, AmoOp::Add(1), 5), Err(Error::Unsupported), "atomics on fallback memory");
    k.ok(&format!("dereg {}", rw.to_u64()));
    assert_eq!(rma::put(&peer, rw, a, &d[..8], 5), Err(Error::StaleHandle), "deregistered");
    assert_eq!(rma::get(&peer, rw, a, &mut g[..8], 5), Err(Error::StaleHandle));
    assert_eq!(k.cmd(&format!("dereg {}", rw.to_u64())), "err StaleHandle");
    // Nothing was written anywhere in the region.
    assert_eq!(k.cmd("verify heap_small 0 0 0 11"), "ok");
    k.finish();
}

#[test]
fn pinned_ranges_and_rings_follow_their_registration() {
    let _g = serial();
    let mut k = Kid::spawn();
    let peer = Peer::open(k.peer_ref()).unwrap();
    let (key, base, _) = k.reg("heap_small", 0, 8192, "rw", 9);
    let (ro, rbase, _) = k.reg("heap_small", 16384, 4096, "ro", 9);
    let (fb, fbase, _) = k.reg("fallback", 0, 4096, "rw", 9);
    k.ok("fill heap_small 21");
    // Pinning validates like a put.
    assert_eq!(Pinned::new(&peer, key, base + 64, 256, true, 10).err(), Some(Error::ProtectionDomain));
    assert_eq!(Pinned::new(&peer, ro, rbase, 64, true, 9).err(), Some(Error::Permission));
    assert!(Pinned::new(&peer, ro, rbase, 64, false, 9).is_ok(), "read pin of read-only memory");
    assert_eq!(Pinned::new(&peer, key, base + 8192 - 8, 16, true, 9).err(), Some(Error::OutOfBounds));
    assert_eq!(Pinned::new(&peer, fb, fbase, 64, true, 9).err(), Some(Error::Unsupported), "fallback memory");
    // Writes land, in bounds only.
    let pin = Pinned::new(&peer, key, base + 64, 256, true, 9).unwrap();
    let data: Vec<u8> = (0..200).map(|i| pat(22, i)).collect();
    let w = pin.check(peer.live().unwrap()).unwrap();
    w.put(0, &data).unwrap();
    assert_eq!(w.put(250, &data[..7]), Err(Error::OutOfBounds));
    assert_eq!(w.store_u64(252, 1), Err(Error::OutOfBounds));
    assert_eq!(w.store_u64(204, 1), Err(Error::Misaligned));
    assert_eq!(k.cmd("verify heap_small 64 200 22 21"), "ok");
    w.store_u64(248, 0x1122_3344_5566_7788).unwrap();
    assert_eq!(k.ok(&format!("peek {}", base + 64 + 248)), vec![0x1122_3344_5566_7788]);
    k.ok("fill heap_small 23");
    // A whole-registration pin addresses it as the owner does: in bounds only.
    assert_eq!(Pinned::registration(&peer, ro, true, 9).err(), Some(Error::Permission));
    assert_eq!(Pinned::registration(&peer, key, true, 10).err(), Some(Error::ProtectionDomain));
    let whole = Pinned::registration(&peer, key, true, 9).unwrap();
    let r = whole.check(peer.live().unwrap()).unwrap();
    r.put_at(base + 8192 - 16, &data[..16]).unwrap();
    assert_eq!(r.put_at(base + 8192 - 8, &data[..16]), Err(Error::OutOfBounds));
    assert_eq!(r.put_at(base - 8, &data[..16]), Err(Error::OutOfBounds));
    assert!(r.can_store_u64_at(base + 8192 - 8) && !r.can_store_u64_at(base + 8192) && !r.can_store_u64_at(base + 4) && !r.can_store_u64_at(base - 8));
    assert!(r.covers(base, 8192) && r.covers(base + 8192, 0) && !r.covers(base, 8193) && !r.covers(base - 1, 1) && !r.covers(base + 8, u64::MAX));
    assert_eq!(k.cmd("verify heap_small 8176 16 22 23"), "ok");
    r.store_u64_at(base + 1024, 0x99).unwrap();
    assert_eq!(k.ok(&format!("peek {}", base + 1024)), vec![0x99]);
    k.ok("fill heap_small 23");
    // A pin used with another peer's token is refused.
    let me = Peer::this().unwrap();
    assert_eq!(pin.check(me.live().unwrap()).err(), Some(Error::StaleHandle));
    // Deregistered: every use fails and nothing is written; a new registration of the
    // same memory is a new pin.
    k.ok(&format!("dereg {}", key.to_u64()));
    assert_eq!(pin.check(peer.live().unwrap()).err(), Some(Error::StaleHandle));
    assert_eq!(k.cmd("verify heap_small 0 0 0 23"), "ok");
    let (key2, base2, _) = k.reg("heap_small", 0, 8192, "rw", 9);
    assert_eq!(pin.check(peer.live().unwrap()).err(), Some(Error::StaleHandle), "old pin stays stale");
    let pin2 = Pinned::new(&peer, key2, base2 + 64, 256, true, 9).unwrap();
    pin2.check(peer.live().unwrap()).unwrap().put(0, &data).unwrap();
    assert_eq!(k.cmd("verify heap_small 64 200 22 23"), "ok");
    // Rings: attached once, validated like post_event.
    let rw = k.ok("ring 0 64");
    let loc = RingLoc::from_words([rw[0], rw[1], rw[2]]);
    let bad = RingLoc { backing_gen: loc.backing_gen.wrapping_add(1), ..loc };
    assert_eq!(PinnedRing::<[u64; 2]>::new(&peer, &bad).err(), Some(Error::StaleHandle));
    let oob = RingLoc { offset: BIG as u64, ..loc };
    assert_eq!(PinnedRing::<[u64; 2]>::new(&peer, &oob).err(), Some(Error::OutOfBounds));
    let ring = PinnedRing::<[u64; 2]>::new(&peer, &loc).unwrap();
    assert_eq!(ring.check(me.live().unwrap()).err(), Some(Error::StaleHandle));
    let (shk, shb, _) = k.reg("shared", 65536, 4096, "rw", 9);
    let payload: Vec<u8> = (0..100).map(|i| pat(24, i)).collect();
    rma::put(&peer, shk, shb, &payload, 9).unwrap();
    k.send("pop 0 5000");
    assert!(ring.check(peer.live().unwrap()).unwrap().push(&[shb, 100 | (24 << 32)]).is_ok());
    assert_eq!(k.recv(), format!("ok {} {} true", shb, 100u64 | (24 << 32)));
    k.finish();
}

#[test]
fn quick_pins_check_what_pins_check() {
    let _g = serial();
    let mut k = Kid::spawn();
    let peer = Peer::open(k.peer_ref()).unwrap();
    let (key, base, _) = k.reg("heap_small", 0, 8192, "rw", 9);
    k.ok("fill heap_small 21");
    let q = QuickPinned::new(Pinned::new(&peer, key, base + 64, 256, true, 9).unwrap());
    q.check().unwrap().store_u64(0, 0x55).unwrap();
    assert_eq!(k.ok(&format!("peek {}", base + 64)), vec![0x55]);
    q.check_quick().expect("a live peer's live registration").store_u64(8, 0x66).unwrap();
    assert_eq!(k.ok(&format!("peek {}", base + 72)), vec![0x66]);
    assert_eq!(q.pinned().key(), key);
    // Another registration of the peer ends: its invalidation count moves, and the pin,
    // whose rows are read again then, still serves (its own rows did not change).
    let (other, _, _) = k.reg("heap_small", 4096, 4096, "rw", 9);
    k.ok(&format!("dereg {}", other.to_u64()));
    q.check_quick().expect("still valid after another registration ended").store_u64(16, 0x77).unwrap();
    q.check().unwrap().store_u64(24, 0x88).unwrap();
    assert_eq!(k.ok(&format!("peek {}", base + 80)), vec![0x77]);
    assert_eq!(k.ok(&format!("peek {}", base + 88)), vec![0x88]);
    // Deregistered: both refuse, and a new registration of the same memory does not
    // revive the old pin.
    k.ok(&format!("dereg {}", key.to_u64()));
    assert_eq!(q.check().err(), Some(Error::StaleHandle));
    assert!(q.check_quick().is_none());
    let (key2, base2, _) = k.reg("heap_small", 0, 8192, "rw", 9);
    assert_eq!(q.check().err(), Some(Error::StaleHandle), "old pin stays stale");
    assert!(q.check_quick().is_none());
    let q2 = QuickPinned::new(Pinned::new(&peer, key2, base2, 64, true, 9).unwrap());
    assert!(q2.check_quick().is_some() && q2.check().is_ok());
    // The peer's death is seen at once (its life lock), by both.
    k.child.kill().unwrap();
    k.child.wait().unwrap();
    assert!(q2.check_quick().is_none(), "a dead peer is never surely alive");
    assert_eq!(q2.check().err(), Some(Error::PeerDead));
}

#[test]
fn dead_peer_is_an_error_not_a_hang() {
    let _g = serial();
    let mut k = Kid::spawn();
    let r = k.peer_ref();
    let peer = Peer::open(r).unwrap();
    let (key, a, _) = k.reg("heap_small", 0, 4096, "rw", 1);
    rma::put(&peer, key, a, &[1, 2, 3], 1).unwrap();
    k.finish(); // exits and is reaped
    sleep_past_death_detect_bound();
    let t = Instant::now();
    assert_eq!(rma::put(&peer, key, a, &[1, 2, 3], 1), Err(Error::PeerDead));
    assert_eq!(rma::atomic(&peer, key, a, AmoWidth::I64, AmoOp::Add(1), 1), Err(Error::PeerDead));
    assert!(t.elapsed() < Duration::from_secs(1));
    // A fresh resolve of the dead process fails too (the cache may hold the old Peer,
    // so use a ref that differs only in the fd: still the dead pid).
    let r2 = PeerRef { ctl_fd: r.ctl_fd + 1000, ..r };
    assert_eq!(Peer::open(r2).err(), Some(Error::PeerDead));
}

#[test]
fn death_is_seen_at_once_through_the_life_lock() {
    let _g = serial();
    let mut k = Kid::spawn();
    let peer = Peer::open(k.peer_ref()).unwrap();
    let (key, a, _) = k.reg("heap_small", 0, 4096, "rw", 1);
    rma::put(&peer, key, a, &[1, 2, 3], 1).unwrap();
    assert!(peer.seems_alive());
    k.child.kill().unwrap();
    k.child.wait().unwrap();
    // No waiting for a probe interval: the kernel marked the life lock when the process
    // died, so the very next operation looks at the process itself.
    assert_eq!(rma::put(&peer, key, a, &[1, 2, 3], 1), Err(Error::PeerDead));
}

#[test]
fn a_process_whose_setup_thread_ended_is_still_alive() {
    let _g = serial();
    let mut k = Kid::spawn_env(&[("SELFTEST_SETUP_THREAD", "1")]);
    let peer = Peer::open(k.peer_ref()).unwrap();
    let (key, a, _) = k.reg("heap_small", 0, 4096, "rw", 1);
    // Across several probe intervals: its life lock proves nothing, the probes say alive.
    let t = Instant::now();
    while t.elapsed() < rma::death_detect_bound() * 3 {
        rma::put(&peer, key, a, &[4, 5, 6], 1).unwrap();
        std::thread::sleep(Duration::from_micros(50));
    }
    assert_eq!(k.ok(&format!("peek {}", a)), vec![0x06_05_04]);
    k.finish();
    sleep_past_death_detect_bound();
    assert_eq!(rma::put(&peer, key, a, &[1], 1), Err(Error::PeerDead));
}

fn uniq_dir(tag: &str) -> String {
    format!("/tmp/softnic-test-{}-{}", tag, std::process::id())
}

#[test]
fn registry_publish_lookup_exists_unpublish() {
    let _g = serial();
    let dir = uniq_dir("reg");
    std::fs::create_dir_all(&dir).unwrap();
    let env = [("SOFTNIC_SHM_DIR", dir.as_str())];
    let mut a = Kid::spawn_env(&env);
    let mut b = Kid::spawn_env(&env);
    let apid = a.ok("pid")[0];
    let id = a.ok("publish foo 42");
    assert_eq!(b.cmd("publish foo 43"), "err Exists");
    assert_eq!(b.ok("lookup foo"), vec![apid, 42]);
    assert_eq!(b.cmd("lookup nothing"), "err NotFound");
    assert_eq!(b.cmd(&format!("unpublish {} {}", id[0], id[1])), "err Permission", "only the owner unpublishes");
    a.ok(&format!("unpublish {} {}", id[0], id[1]));
    assert_eq!(a.cmd(&format!("unpublish {} {}", id[0], id[1])), "err StaleHandle");
    assert_eq!(b.cmd("lookup foo"), "err NotFound");
    b.ok("publish foo 43");
    let user = format!("{}/softnic-{}", dir, unsafe { libc::getuid() });
    assert!(std::path::Path::new(&user).join(registry::FILE_NAME).exists());
    a.finish();
    b.finish();
    assert!(!std::path::Path::new(&user).exists(), "user dir left behind after the last process exited");
    let _ = std::fs::remove_dir(&dir);

    // In this process (default directory): own endpoint resolves to own PeerRef.
    let key = format!("self-{}", std::process::id());
    let id = registry::publish(registry::api::TEST, key.as_bytes(), b"hello").unwrap();
    let e = registry::lookup(registry::api::TEST, key.as_bytes()).unwrap();
    assert_eq!(e.peer, node::self_ref().unwrap());
    assert_eq!(&e.payload[..5], b"hello");
    assert_eq!(registry::publish(registry::api::TEST, &[0u8; 33], b""), Err(Error::InvalidArg));
    assert_eq!(registry::publish(registry::api::TEST, b"x", &[0u8; 65]), Err(Error::InvalidArg));
    registry::unpublish(id).unwrap();
}

/// Processes of two jobs (two secrets) in one registry: neither finds, takes or reaches
/// what the other published; a claimed name is held against the other job only.
#[test]
fn registry_jobs_do_not_see_each_other() {
    let _g = serial();
    let dir = uniq_dir("jobs");
    std::fs::create_dir_all(&dir).unwrap();
    let job_a = [("SOFTNIC_SHM_DIR", dir.as_str())];
    let job_b = [("SOFTNIC_SHM_DIR", dir.as_str()), ("SOFTNIC_JOB_SECRET", "ffeeddccbbaa99887766554433221100")];
    let mut a = Kid::spawn_env(&job_a);
    let mut a2 = Kid::spawn_env(&job_a);
    let mut b = Kid::spawn_env(&job_b);
    let apid = a.ok("pid")[0];
    let bpid = b.ok("pid")[0];
    a.ok("publish seg 1");
    assert_eq!(b.cmd("lookup seg"), "err NotFound", "another job's endpoint");
    b.ok("publish seg 2");
    assert_eq!(a2.ok("lookup seg"), vec![apid, 1]);
    assert_eq!(b.ok("lookup seg"), vec![bpid, 2]);
    let ida = a.ok("procid");
    assert_eq!(a2.ok(&format!("byid {} {}", ida[0], ida[1])), vec![apid]);
    assert_eq!(b.cmd(&format!("byid {} {}", ida[0], ida[1])), "err ProtectionDomain");
    a.ok("claim dom");
    assert_eq!(b.cmd("claim dom"), "err Permission");
    a2.ok("claim dom");
    a.finish();
    assert_eq!(b.cmd("claim dom"), "err Permission", "held while a process of the job holds it");
    a2.finish();
    b.ok("claim dom");
    b.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn registry_reclaims_killed_process() {
    let _g = serial();
    let dir = uniq_dir("kill");
    std::fs::create_dir_all(&dir).unwrap();
    let env = [("SOFTNIC_SHM_DIR", dir.as_str())];
    let user = format!("{}/softnic-{}", dir, unsafe { libc::getuid() });
    // A publishes and is SIGKILLed; B then takes the key over (dead entry reclaimed).
    let mut a = Kid::spawn_env(&env);
    let mut b = Kid::spawn_env(&env);
    a.ok("publish bar 1");
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    assert_eq!(b.cmd("lookup bar"), "err NotFound", "entry of a killed process");
    b.ok("publish bar 2");
    // C publishes and is SIGKILLed while B leaves normally: C's row remains until reclaim.
    let mut c = Kid::spawn_env(&env);
    c.ok("publish baz 3");
    let cpid = c.ok("pid")[0] as i32;
    b.finish();
    // C is still alive: the file must still be there.
    assert!(std::path::Path::new(&user).join(registry::FILE_NAME).exists());
    c.child.kill().unwrap();
    c.child.wait().unwrap();
    std::env::set_var("SOFTNIC_SHM_DIR", &dir);
    let n = registry::reclaim_dead(&[cpid]);
    std::env::remove_var("SOFTNIC_SHM_DIR");
    assert_eq!(n, Ok(2), "C's process row and its endpoint");
    assert!(!std::path::Path::new(&user).exists(), "reclaim_dead must remove the registry when nobody is left");
    let _ = std::fs::remove_dir(&dir);
}

/// Put 8 B and fetch-add latency between two processes (printed, not asserted).
#[test]
fn latency_put8_and_fetch_add() {
    let _g = serial();
    let mut k = Kid::spawn();
    let peer = Peer::open(k.peer_ref()).unwrap();
    let (ck, caddr, _) = k.reg("heap_small", 0, 4096, "rw", 1);
    rma::put(&peer, ck, caddr, &0u64.to_le_bytes(), 1).unwrap();
    let mut mine = Box::new([0u64; 8]);
    let mk = mem::register(mine.as_mut_ptr() as usize, 64, Access::ReadWrite, 1).unwrap();
    let word = &mut mine[0] as *mut u64;
    let iters = 20_000u64;
    k.send(&format!("pong {} {} {} {} {} {}", self_words(), mk.to_u64(), word as u64, caddr, iters, 1));
    let mut rtt = Vec::with_capacity(iters as usize);
    for i in 1..=iters {
        let t = Instant::now();
        rma::put(&peer, ck, caddr, &i.to_le_bytes(), 1).unwrap();
        // SAFETY: our registered word, written by the child.
        while unsafe { std::ptr::read_volatile(word) } != i {
            std::hint::spin_loop();
        }
        rtt.push(t.elapsed().as_nanos() as u64);
    }
    assert_eq!(k.recv(), "ok");
    rtt.sort();
    let mut fa = Vec::with_capacity(iters as usize);
    for _ in 0..iters {
        let t = Instant::now();
        rma::atomic(&peer, ck, caddr + 8, AmoWidth::I64, AmoOp::Add(1), 1).unwrap();
        fa.push(t.elapsed().as_nanos() as u64);
    }
    fa.sort();
    let mut b = [0u8; 8];
    rma::get(&peer, ck, caddr + 8, &mut b, 1).unwrap();
    assert_eq!(u64::from_le_bytes(b), iters);
    println!(
        "LATENCY put 8 B one-way (ping-pong rtt/2): median {} ns, p99 {} ns; fetch-add 8 B: median {} ns, p99 {} ns",
        rtt[rtt.len() / 2] / 2,
        rtt[rtt.len() * 99 / 100] / 2,
        fa[fa.len() / 2],
        fa[fa.len() * 99 / 100]
    );
    mem::deregister(mk).unwrap();
    k.finish();
    let _ = Arc::new(());
}
