//! Cross-process ring stress: a ring in a memfd mapped by several processes (each at its own
//! address), producers and consumers re-executed from the `ring-stress-child` helper.
//! The consumers verify checksums and per-producer order; a shared bitmap catches
//! duplicates and, checked here at the end, losses.

use softnic_fabric::ring::Ring;
use softnic_fabric::Error;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

type Entry = [u64; 4];
const CHILD: &str = env!("CARGO_BIN_EXE_ring-stress-child");

/// A memfd (inherited by children: no CLOEXEC) mapped shared in this process.
struct Shm {
    fd: i32,
    base: *mut u8,
    len: usize,
}

impl Shm {
    fn new(len: usize) -> Shm {
        // SAFETY: plain syscalls, results checked.
        unsafe {
            let fd = libc::memfd_create(c"softnic-ring-stress".as_ptr(), 0);
            assert!(fd >= 0, "memfd_create: {}", std::io::Error::last_os_error());
            assert_eq!(libc::ftruncate(fd, len as libc::off_t), 0);
            let p = libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0);
            assert!(p != libc::MAP_FAILED, "mmap: {}", std::io::Error::last_os_error());
            Shm { fd, base: p as *mut u8, len }
        }
    }
    fn child(&self, role: &str, extra: &[u64]) -> Child {
        let mut c = Command::new(CHILD);
        c.arg(role).arg(self.fd.to_string()).arg(self.len.to_string());
        for a in extra {
            c.arg(a.to_string());
        }
        c.stdout(Stdio::piped()).spawn().expect("spawn ring-stress-child")
    }
}

impl Drop for Shm {
    fn drop(&mut self) {
        // SAFETY: our own mapping and fd.
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, self.len);
            libc::close(self.fd);
        }
    }
}

fn round_up(n: usize, to: usize) -> usize {
    n.div_ceil(to) * to
}

/// Waits for all children; kills the rest (by pid, they are ours) if `budget` runs out.
/// Returns each child's stdout.
fn wait_all(children: Vec<Child>, budget: Duration) -> Vec<String> {
    let t0 = Instant::now();
    let mut children: Vec<Option<Child>> = children.into_iter().map(Some).collect();
    let mut outs = vec![String::new(); children.len()];
    loop {
        let mut running = 0;
        for (i, slot) in children.iter_mut().enumerate() {
            if let Some(c) = slot {
                match c.try_wait().unwrap() {
                    Some(st) => {
                        let c = slot.take().unwrap();
                        let out = c.wait_with_output().unwrap();
                        outs[i] = String::from_utf8_lossy(&out.stdout).into_owned();
                        assert!(st.success(), "child {i} failed: {st} (see stderr above)");
                    }
                    None => running += 1,
                }
            }
        }
        if running == 0 {
            return outs;
        }
        if t0.elapsed() > budget {
            for c in children.iter_mut().flatten() {
                let _ = c.kill();
                let _ = c.wait();
            }
            panic!("children still running after {budget:?}: lost entries or a hang");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn stress(nprod: u64, ncons: u64, per: u64, capacity: u32, budget: Duration) {
    let total = nprod * per;
    let ring_bytes = round_up(Ring::<Entry>::bytes_needed(capacity), 4096);
    let ctl_off = ring_bytes;
    let words = (total as usize).div_ceil(64);
    let shm = Shm::new(round_up(ctl_off + 64 + words * 8, 4096));
    // SAFETY: fresh mapping of `len` bytes, page aligned, nobody else uses it yet.
    let ring = unsafe { Ring::<Entry>::init(shm.base, ring_bytes, capacity) }.unwrap();

    let t0 = Instant::now();
    let mut kids = Vec::new();
    for _ in 0..ncons {
        kids.push(shm.child("consume", &[nprod, per, ctl_off as u64, (ncons == 1) as u64]));
    }
    for id in 0..nprod {
        kids.push(shm.child("produce", &[id, per]));
    }
    let outs = wait_all(kids, budget);
    let secs = t0.elapsed().as_secs_f64();

    // SAFETY: the control block the children used; they have exited.
    let (consumed, bitmap) = unsafe {
        (
            &*(shm.base.add(ctl_off) as *const AtomicU64),
            std::slice::from_raw_parts(shm.base.add(ctl_off + 64) as *const AtomicU64, words),
        )
    };
    assert_eq!(consumed.load(Ordering::Acquire), total);
    let seen: u64 = bitmap.iter().map(|w| w.load(Ordering::Relaxed).count_ones() as u64).sum();
    assert_eq!(seen, total, "entries lost (bitmap has {seen} of {total})");
    assert!(ring.pop().is_none(), "entries left over");
    assert!(ring.is_empty());
    assert_eq!(ring.len(), 0);
    let per_consumer: Vec<&str> = outs[..ncons as usize].iter().map(|s| s.trim()).collect();
    println!(
        "ring stress: {nprod} producer + {ncons} consumer processes, capacity {capacity}, \
         {total} entries in {secs:.3}s = {:.2} M entries/s (incl. process start); {per_consumer:?}",
        total as f64 / secs / 1e6
    );
}

#[test]
fn three_producers_one_consumer_processes() {
    stress(3, 1, 1_000_000, 1024, Duration::from_secs(60));
}

#[test]
fn two_producers_two_consumers_processes() {
    stress(2, 2, 1_000_000, 256, Duration::from_secs(60));
}

#[test]
fn tiny_ring_many_laps_processes() {
    // Capacity 4: constant wrap-around and full/empty transitions.
    stress(3, 2, 200_000, 4, Duration::from_secs(60));
}

#[test]
#[ignore = "long: run by make check-full"]
fn long_stress_processes() {
    stress(4, 1, 10_000_000, 1024, Duration::from_secs(900));
    stress(3, 3, 5_000_000, 8, Duration::from_secs(900));
}

fn small_ring() -> (Shm, Ring<Entry>) {
    let shm = Shm::new(round_up(Ring::<Entry>::bytes_needed(16), 4096));
    // SAFETY: fresh mapping, exclusively ours during init.
    let ring = unsafe { Ring::<Entry>::init(shm.base, shm.len, 16) }.unwrap();
    (shm, ring)
}

#[test]
fn consumer_process_sleeps_and_is_woken() {
    let (shm, ring) = small_ring();
    let kid = shm.child("wait-one", &[]);
    // Wait until the child is really asleep on the futex (registered as a waiter), so the
    // wake-up must cross the process boundary through the shared futex.
    let t0 = Instant::now();
    while ring.sleepers() == 0 {
        assert!(t0.elapsed() < Duration::from_secs(20), "consumer never went to sleep");
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(20));
    ring.push(&[4242, 0, 0, 0]).unwrap();
    let out = wait_all(vec![kid], Duration::from_secs(20));
    assert_eq!(out[0].trim(), "4242");
    assert_eq!(ring.sleepers(), 0);
}

#[test]
fn consumer_process_wait_times_out() {
    let (shm, ring) = small_ring();
    let out = wait_all(vec![shm.child("wait-timeout", &[150])], Duration::from_secs(20));
    let ms: u64 = out[0].trim().parse().unwrap();
    assert!((150..5000).contains(&ms), "timed out after {ms} ms");
    assert_eq!(ring.sleepers(), 0, "a timed-out waiter must deregister");
    // And in this process, on the same shared ring.
    assert_eq!(ring.wait_nonempty(Some(Duration::from_millis(30))), Err(Error::Timeout));
}
