//! Helper process for the fabric's multi-process tests (fabric/tests/engine.rs).
//!
//! Reads one command per line on stdin, answers one line on stdout ("ok ..." or
//! "err <Error>").  Regions it owns (see `region`): heap_small, heap_big, stack, bss, data,
//! shared (alloc_shared), fallback (a MAP_SHARED anonymous mapping: not rebindable).

use softnic_fabric::atomic::{AmoOp, AmoWidth};
use softnic_fabric::mem::{self, Access, MemKey, RingLoc};
use softnic_fabric::node::{self, PeerRef};
use softnic_fabric::registry;
use softnic_fabric::ring::Ring;
use softnic_fabric::rma::{self, Peer};
use std::io::{BufRead, Write};

const SMALL: usize = 64 << 10;
const BIG: usize = (17 << 20) + 3 * 4096;
static mut BSS: [u8; SMALL] = [0; SMALL];
static mut DATA: [u8; SMALL] = [7; SMALL];

/// The byte pattern shared with the tests.
fn pat(seed: u64, i: usize) -> u8 {
    (((i as u64).wrapping_mul(131) ^ seed.wrapping_mul(0x9e37_79b9) ^ ((i as u64) >> 9)) & 0xff) as u8
}

fn width(s: &str) -> AmoWidth {
    match s {
        "i32" => AmoWidth::I32,
        "i64" => AmoWidth::I64,
        "f32" => AmoWidth::F32,
        _ => AmoWidth::F64,
    }
}

fn main() {
    if std::env::var_os("SELFTEST_SETUP_THREAD").is_some() {
        // The fabric set up by a thread that then ends (its life lock is left marked
        // "owner died" while the process goes on).
        std::thread::spawn(|| node::get().map(|_| ()).expect("fabric setup")).join().expect("setup thread");
    }
    let mut stack = [0u8; 256 << 10];
    let heap_small = vec![0u8; SMALL];
    let heap_big = vec![0u8; BIG];
    let shared = mem::alloc_shared(BIG).expect("alloc_shared");
    // SAFETY: a fresh anonymous shared mapping.
    let fallback = unsafe {
        libc::mmap(std::ptr::null_mut(), SMALL, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED | libc::MAP_ANONYMOUS, -1, 0)
    } as *mut u8;
    let stack_ptr = stack.as_mut_ptr();
    let region = |name: &str| -> (usize, usize) {
        match name {
            "heap_small" => (heap_small.as_ptr() as usize, SMALL),
            "heap_big" => (heap_big.as_ptr() as usize, BIG),
            "stack" => (stack_ptr as usize, 256 << 10),
            // Addresses only; accesses go through raw pointers.
            "bss" => (std::ptr::addr_of_mut!(BSS) as usize, SMALL),
            "data" => (std::ptr::addr_of_mut!(DATA) as usize, SMALL),
            "shared" => (shared.as_ptr() as usize, BIG),
            "fallback" => (fallback as usize, SMALL),
            _ => (0, 0),
        }
    };
    let mut rings: Vec<(Ring<[u64; 2]>, RingLoc)> = Vec::new();
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let a: Vec<&str> = line.split_whitespace().collect();
        if a.is_empty() {
            continue;
        }
        let n = |i: usize| -> u64 { a.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0) };
        let peer = |i: usize| -> PeerRef { PeerRef::from_words([n(i), n(i + 1), n(i + 2)]) };
        let reply: String = match a[0] {
            "ref" => {
                let w = node::self_ref().expect("self_ref").to_words();
                format!("ok {} {} {}", w[0], w[1], w[2])
            }
            // base <region> -> address, length
            "base" => {
                let (b, l) = region(a[1]);
                format!("ok {} {}", b, l)
            }
            // reg <region> <off> <len> <rw|ro> <pd> -> key addr
            "reg" => {
                let (b, _) = region(a[1]);
                let addr = b + n(2) as usize;
                let acc = if a[4] == "ro" { Access::ReadOnly } else { Access::ReadWrite };
                match mem::register(addr, n(3) as usize, acc, n(5)) {
                    Ok(k) => format!("ok {} {} {}", k.to_u64(), addr, mem::query(k).map(|r| r.shared).unwrap_or(false)),
                    Err(e) => format!("err {:?}", e),
                }
            }
            "dereg" => match mem::deregister(MemKey::from_u64(n(1))) {
                Ok(()) => "ok".into(),
                Err(e) => format!("err {:?}", e),
            },
            // fill <region> <seed>: whole region with pattern
            "fill" => {
                let (b, l) = region(a[1]);
                for i in 0..l {
                    // SAFETY: inside the region.
                    unsafe { *((b + i) as *mut u8) = pat(n(2), i) };
                }
                "ok".into()
            }
            // verify <region> <off> <len> <seed_in> <seed_out>: [off,off+len) has pattern
            // seed_in at index i-off, everything else in the region has seed_out at i.
            "verify" => {
                let (b, l) = region(a[1]);
                let (off, len) = (n(2) as usize, n(3) as usize);
                let mut bad = 0usize;
                let mut first = usize::MAX;
                for i in 0..l {
                    // SAFETY: inside the region.
                    let v = unsafe { std::ptr::read_volatile((b + i) as *const u8) };
                    let want = if i >= off && i < off + len { pat(n(4), i - off) } else { pat(n(5), i) };
                    if v != want {
                        bad += 1;
                        first = first.min(i);
                    }
                }
                if bad == 0 { "ok".into() } else { format!("bad {} first {}", bad, first) }
            }
            // peek <addr>: u64 at an address
            "peek" => {
                // SAFETY: test-provided address inside one of our regions.
                format!("ok {}", unsafe { std::ptr::read_volatile(n(1) as *const u64) })
            }
            // spin <addr> <value> <ack_addr>: wait (no library calls) for the word to equal
            // value, then store value+1 at ack_addr.
            "spin" => {
                let (p, v, ack) = (n(1) as *const u64, n(2), n(3) as *mut u64);
                // SAFETY: test-provided addresses of registered words in our regions.
                unsafe {
                    while std::ptr::read_volatile(p) != v {
                        std::hint::spin_loop();
                    }
                    std::ptr::write_volatile(ack, v + 1);
                }
                "ok".into()
            }
            // ring <offset> <cap>: a ring in the shared region -> loc words
            "ring" => {
                let off = n(1) as usize;
                let len = Ring::<[u64; 2]>::bytes_needed(n(2) as u32);
                // SAFETY: inside the shared region, which nobody else uses yet.
                match unsafe { Ring::<[u64; 2]>::init(shared.as_ptr().add(off), len, n(2) as u32) } {
                    Ok(r) => {
                        let loc = shared.ring_loc(off, len).expect("ring_loc");
                        rings.push((r, loc));
                        let w = loc.to_words();
                        format!("ok {} {} {}", w[0], w[1], w[2])
                    }
                    Err(e) => format!("err {:?}", e),
                }
            }
            // pop <ring#> <timeout_ms>: wait for one entry [addr, len]; check the data the
            // entry describes has pattern seed at that moment -> "ok v0 v1 datagood"
            "pop" => {
                let r = &rings[n(1) as usize].0;
                match r.wait_nonempty(Some(std::time::Duration::from_millis(n(2)))) {
                    Ok(()) => match r.pop() {
                        Some(v) => {
                            let (addr, len, seed) = (v[0] as usize, (v[1] & 0xffff_ffff) as usize, v[1] >> 32);
                            // SAFETY: the initiator put data at addr (inside our region).
                            let good = (0..len).all(|i| unsafe { std::ptr::read_volatile((addr + i) as *const u8) } == pat(seed, i));
                            format!("ok {} {} {}", v[0], v[1], good)
                        }
                        None => "err empty".into(),
                    },
                    Err(e) => format!("err {:?}", e),
                }
            }
            // amo <peer w0 w1 w2> <key> <addr> <width> <op> <idx> <count> <pd>
            // -> "ok <sum of olds> <successes>"
            "amo" => {
                let p = match Peer::open(peer(1)) {
                    Ok(p) => p,
                    Err(e) => {
                        let _ = writeln!(out, "err {:?}", e);
                        continue;
                    }
                };
                let key = MemKey::from_u64(n(4));
                let addr = n(5);
                let w = width(a[6]);
                let op = a[7];
                let idx = n(8);
                let count = n(9);
                let pd = n(10);
                let mut sum = 0u64;
                let mut succ = 0u64;
                let mut guess = 0u64;
                let mut err = None;
                let mut i = 0;
                while i < count {
                    let fbits = |x: f64| if w == AmoWidth::F32 { (x as f32).to_bits() as u64 } else { x.to_bits() };
                    let o = match op {
                        "add" => AmoOp::Add(if matches!(w, AmoWidth::F32 | AmoWidth::F64) { fbits(1.0) } else { 1 }),
                        "and" => AmoOp::And(!(1u64 << (idx * 8 + i % 8))),
                        "or" => AmoOp::Or(1u64 << (idx * 8 + i % 8)),
                        "xor" => AmoOp::Xor(1u64 << (idx * 8 + i % 8)),
                        "swap" => AmoOp::Swap(idx * 1_000_000 + i + 1),
                        "cswap" => AmoOp::CompareSwap { compare: guess, swap: guess.wrapping_add(1) },
                        "mswap" => AmoOp::MaskedSwap { mask: 0xffu64 << (idx * 8), value: (i & 0xff) << (idx * 8) },
                        "andxor" => AmoOp::AndXor { and: u64::MAX, xor: 1u64 << (idx * 8 + i % 8) },
                        "min" => AmoOp::Min(if matches!(w, AmoWidth::F32 | AmoWidth::F64) { fbits(-((idx * count + i) as f64)) } else { (-((idx * count + i) as i64)) as u64 }),
                        _ => AmoOp::Max(if matches!(w, AmoWidth::F32 | AmoWidth::F64) { fbits((idx * count + i) as f64) } else { idx * count + i }),
                    };
                    match rma::atomic(&p, key, addr, w, o, pd) {
                        Ok(old) => {
                            sum = sum.wrapping_add(old);
                            if op == "cswap" {
                                if old == guess {
                                    succ += 1;
                                    guess = guess.wrapping_add(1);
                                } else {
                                    guess = old;
                                    continue; // retry: `count` successful increments each
                                }
                                if w == AmoWidth::I32 {
                                    guess &= 0xffff_ffff;
                                }
                            }
                            i += 1;
                        }
                        Err(e) => {
                            err = Some(e);
                            break;
                        }
                    }
                }
                match err {
                    None => format!("ok {} {}", sum, succ),
                    Some(e) => format!("err {:?}", e),
                }
            }
            // put <peer w0 w1 w2> <key> <addr> <len> <seed> <pd>
            "put" => {
                let r = Peer::open(peer(1)).and_then(|p| {
                    let src: Vec<u8> = (0..n(6) as usize).map(|i| pat(n(7), i)).collect();
                    rma::put(&p, MemKey::from_u64(n(4)), n(5), &src, n(8))
                });
                match r {
                    Ok(()) => "ok".into(),
                    Err(e) => format!("err {:?}", e),
                }
            }
            // publish <key string> <payload u64>
            "publish" => match registry::publish(registry::api::TEST, a[1].as_bytes(), &n(2).to_le_bytes()) {
                Ok(id) => format!("ok {} {}", id.slot, id.gen),
                Err(e) => format!("err {:?}", e),
            },
            "lookup" => match registry::lookup(registry::api::TEST, a[1].as_bytes()) {
                Ok(e) => format!("ok {} {}", e.peer.pid, u64::from_le_bytes(e.payload[..8].try_into().expect("8 bytes"))),
                Err(e) => format!("err {:?}", e),
            },
            // claim <key string>: hold the name against other jobs (registry::claim)
            "claim" => match registry::claim(registry::api::TEST, a[1].as_bytes()) {
                Ok(id) => format!("ok {} {}", id.slot, id.gen),
                Err(e) => format!("err {:?}", e),
            },
            // procid -> slot gen: this process's registry id
            "procid" => match node::get() {
                Ok(nd) => format!("ok {} {}", nd.proc_id().slot, nd.proc_id().gen),
                Err(e) => format!("err {:?}", e),
            },
            // byid <slot> <gen>: resolve a registry id as a memory handle would -> pid
            "byid" => match Peer::by_id(registry::ProcId { slot: n(1) as u32, gen: n(2) as u32 }, 32) {
                Ok(p) => format!("ok {}", p.peer_ref().pid),
                Err(e) => format!("err {:?}", e),
            },
            "unpublish" => match registry::unpublish(registry::EndpointId { slot: n(1) as u32, gen: n(2) as u32 }) {
                Ok(()) => "ok".into(),
                Err(e) => format!("err {:?}", e),
            },
            // pong <peer w0 w1 w2> <key> <peer_addr> <local_addr> <iters> <pd>: wait for the
            // local word to reach i, then put i into the peer's word; i = 1..=iters.
            "pong" => {
                let r = Peer::open(peer(1)).and_then(|p| {
                    let local = n(6) as *const u64;
                    for i in 1..=n(7) {
                        // SAFETY: a registered word in our region.
                        while unsafe { std::ptr::read_volatile(local) } != i {
                            std::hint::spin_loop();
                        }
                        rma::put(&p, MemKey::from_u64(n(4)), n(5), &i.to_le_bytes(), n(8))?;
                    }
                    Ok(())
                });
                match r {
                    Ok(()) => "ok".into(),
                    Err(e) => format!("err {:?}", e),
                }
            }
            "exit" => {
                let _ = writeln!(out, "ok");
                let _ = out.flush();
                std::process::exit(0);
            }
            "pid" => format!("ok {}", std::process::id()),
            _ => "err unknown".into(),
        };
        let _ = writeln!(out, "{}", reply);
        let _ = out.flush();
    }
    // Keep the stack buffer alive (and in place) for the whole loop.
    std::hint::black_box(&mut stack);
}
