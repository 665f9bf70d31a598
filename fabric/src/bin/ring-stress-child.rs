//! Helper process for `tests/ring_stress.rs`: attaches to a ring in an inherited memfd and
//! plays one role.  Not installed; exits non-zero (with a message on stderr) on any
//! violation so the parent test fails.
//!
//! Usage: `ring-stress-child ROLE FD LEN ARGS...`
//! - `produce FD LEN ID COUNT`: push COUNT entries (ID, seq, checksums).
//! - `consume FD LEN NPROD PER CTL_OFF EXACT`: pop until the shared counter at CTL_OFF
//!   reaches NPROD*PER; mark each entry in the shared bitmap after it (duplicates fail);
//!   per-producer order must increase (EXACT=1: by exactly one, single consumer).
//! - `wait-one FD LEN`: block in `wait_nonempty(None)`, pop, print the entry's word 0.
//! - `wait-timeout FD LEN MS`: `wait_nonempty(MS)` on an empty ring must time out.

use softnic_fabric::ring::Ring;
use softnic_fabric::Error;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

type Entry = [u64; 4];

/// Checksum words for (id, seq), so torn or mixed-up payloads are detected.
fn check(id: u64, seq: u64) -> (u64, u64) {
    let mut z = (id << 40) ^ seq ^ 0x9E37_79B9_7F4A_7C15;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z, z.rotate_left(23) ^ !seq)
}

fn die(msg: String) -> ! {
    eprintln!("ring-stress-child[{}]: {msg}", std::process::id());
    std::process::exit(2)
}

fn arg(args: &[String], i: usize) -> u64 {
    args.get(i).and_then(|s| s.parse().ok()).unwrap_or_else(|| die(format!("bad argument {i}: {args:?}")))
}

fn map(fd: i32, len: usize) -> *mut u8 {
    // SAFETY: maps an inherited fd; failure is checked.
    let p = unsafe {
        libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0)
    };
    if p == libc::MAP_FAILED {
        die(format!("mmap: {}", std::io::Error::last_os_error()));
    }
    p as *mut u8
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let role = args.get(1).cloned().unwrap_or_default();
    let fd = arg(&args, 2) as i32;
    let len = arg(&args, 3) as usize;
    let base = map(fd, len);
    // SAFETY: the mapping is `len` bytes and lives until exit.
    let ring = unsafe { Ring::<Entry>::attach(base, len) }.unwrap_or_else(|e| die(format!("attach: {e}")));
    match role.as_str() {
        "produce" => {
            let id = arg(&args, 4);
            let count = arg(&args, 5);
            for seq in 0..count {
                let (c1, c2) = check(id, seq);
                let e = [id, seq, c1, c2];
                let mut spins = 0u32;
                loop {
                    match ring.push(&e) {
                        Ok(()) => break,
                        Err(Error::NoSpace) => {
                            spins += 1;
                            if spins < 64 {
                                std::hint::spin_loop();
                            } else {
                                // 2 cores, >= 4 processes: let the consumer run.
                                std::thread::yield_now();
                            }
                        }
                        Err(e) => die(format!("push: {e}")),
                    }
                }
            }
        }
        "consume" => {
            let nprod = arg(&args, 4);
            let per = arg(&args, 5);
            let ctl_off = arg(&args, 6) as usize;
            let exact = arg(&args, 7) == 1;
            let total = nprod * per;
            // SAFETY: the parent laid out [counter, pad, bitmap] at ctl_off inside the mapping.
            let (consumed, bitmap) = unsafe {
                let c = &*(base.add(ctl_off) as *const AtomicU64);
                let words = (total as usize).div_ceil(64);
                let b = std::slice::from_raw_parts(base.add(ctl_off + 64) as *const AtomicU64, words);
                (c, b)
            };
            let mut next = vec![0u64; nprod as usize];
            let mut mine = 0u64;
            let t0 = Instant::now();
            loop {
                match ring.pop() {
                    Some([id, seq, c1, c2]) => {
                        if id >= nprod || seq >= per {
                            die(format!("entry out of range: id {id} seq {seq}"));
                        }
                        if (c1, c2) != check(id, seq) {
                            die(format!("checksum mismatch: id {id} seq {seq}"));
                        }
                        let n = &mut next[id as usize];
                        if (exact && seq != *n) || seq < *n {
                            die(format!("order: producer {id} gave seq {seq}, expected {}{}", if exact { "" } else { ">= " }, *n));
                        }
                        *n = seq + 1;
                        let bit = id * per + seq;
                        let prev = bitmap[(bit / 64) as usize].fetch_or(1 << (bit % 64), Ordering::Relaxed);
                        if prev & (1 << (bit % 64)) != 0 {
                            die(format!("duplicate: producer {id} seq {seq}"));
                        }
                        mine += 1;
                        if consumed.fetch_add(1, Ordering::AcqRel) + 1 == total {
                            break;
                        }
                    }
                    None => {
                        if consumed.load(Ordering::Acquire) >= total {
                            break;
                        }
                        // Bounded wait: another consumer may take the last entries.
                        match ring.wait_nonempty(Some(Duration::from_millis(20))) {
                            Ok(()) | Err(Error::Timeout) => {}
                            Err(e) => die(format!("wait_nonempty: {e}")),
                        }
                    }
                }
            }
            if exact && next.iter().any(|&n| n != per) {
                die(format!("single consumer ended with per-producer counts {next:?}, want {per}"));
            }
            println!("consumed {mine} in {:.3}s", t0.elapsed().as_secs_f64());
        }
        "wait-one" => {
            if let Err(e) = ring.wait_nonempty(None) {
                die(format!("wait_nonempty: {e}"));
            }
            match ring.pop() {
                Some(e) => println!("{}", e[0]),
                None => die("woken but the ring is empty".into()),
            }
        }
        "wait-timeout" => {
            let ms = arg(&args, 4);
            let t0 = Instant::now();
            match ring.wait_nonempty(Some(Duration::from_millis(ms))) {
                Err(Error::Timeout) => {}
                other => die(format!("expected Timeout, got {other:?}")),
            }
            let el = t0.elapsed();
            if el < Duration::from_millis(ms) {
                die(format!("timed out early after {el:?}"));
            }
            println!("{}", el.as_millis());
        }
        _ => die(format!("unknown role {role:?}")),
    }
}
