//! Multi-rank tests of the fabric launched the way users launch programs: under
//! `snrun -n N` (or `mpiexec`), bootstrapped through PMI.  `make` stages this binary in
//! build/libexec; c-tests/fabric.list runs it.
//!
//! Modes (argv[1]):
//! - `ring [heap|shared]`: every rank registers a heap (or library-owned) buffer, puts a pattern into its right neighbour's
//!   buffer, fetch-adds a counter on rank 0, gets its left neighbour's tag back; checks all.
//! - `spin`: rank 1 spins on a plain memory word, never calling the library, until rank 0's
//!   put lands; then it stores an acknowledgement that rank 0 reads with gets.
//! - `service`: every rank registers a test service and publishes a shared region under
//!   a key naming its node and rank; every rank finds every rank's region with
//!   `Peer::lookup` by (node, key) and calls the service on it (which counts the call in
//!   the region and answers with the owner's rank), then checks the errors: unknown key,
//!   service not registered, request too long.
//! - `crash segv|exit|abort`: every rank registers memory and publishes an endpoint; then
//!   the last rank fails that way while the others sleep.  snrun must end the job with
//!   that status and nothing may remain in the per-user shared-memory directory.
//!
//! - `netauth DIR` (network engine; c-tests/tools/net-attack runs it with `attack DIR`):
//!   the last rank puts into rank 0's buffer (that request captured, as sent, into DIR); rank 0
//!   overwrites what landed and publishes its endpoint name in DIR; then `attack DIR`, a
//!   process outside the job, sends rank 0 garbage, truncated and forged headers and the
//!   captured request again (and garbage to its provider's port).  Rank 0 checks that each
//!   was dropped and counted as such and its buffer untouched; then every rank puts and
//!   gets as before.
//!
//! - `revoke` (meant for the network engine, two or more ranks): rank 0 registers a
//!   control buffer and 16 target buffers; the other ranks' threads put 64 KiB (RMA) into
//!   the lowest target still registered, going on to the next once it answers
//!   `StaleHandle`, while another thread gets from the control buffer; meanwhile rank 0
//!   ends the targets' registrations one by one.  Every put either lands or is
//!   `StaleHandle`, every get succeeds, and no rank's provider failed a send or an RMA
//!   operation (an RMA meeting a closed registration resets the connection: see
//!   net::forget_registration).  Then the other ranks read the control buffer by RMA
//!   (taking its window) and exit; rank 0 ends its registration after 0.5 s, in less
//!   than half of `SOFTNIC_NET_TIMEOUT_MS` (an exited holder is not waited for).
//!
//! - `hold` (network engine, 2 ranks, each pinned to one core): replies held back and
//!   riding with the next message (net::hold_reply).  First a ping-pong of ROUNDS blocking
//!   puts, each rank spinning on its own memory for the other's: every value checked, and
//!   on the engine's own transport most replies must have ridden in front of a request,
//!   and the last pong, whose reply rank 0 holds as it leaves the library for good,
//!   must complete within BOUND_MS (the progress thread's clock).
//!   Then, in each of 5 rounds, rank 1 polls for events until rank 0's put lands (the
//!   reply held by that poll), and leaves the library: it spins on its memory without any
//!   call until rank 0's next put.  Rank 0's first put must complete within BOUND_MS all
//!   the same (the progress thread's clock sends the reply), and on the own transport a
//!   held reply must have gone by the clock (the progress thread may serve the put itself
//!   in a round, racing the poll: then nothing is held; the count is printed).
//! - `lease` (network engine, 2 ranks): blocking calls made under a lease renew it
//!   (net::Engine::polling).  Rank 0 polls once, then makes blocking puts to rank 1 for
//!   20 ms without polling, ten times; at most half of its puts may find no lease (a
//!   put after a stall of half a lease, or 100 us, polls first).
//! - `bulk` (meant for the network engine): every rank puts 9 MiB and 123 bytes, one
//!   synchronous put of several request pieces, into its right neighbour's buffer at an
//!   odd offset; each checks what landed in its own and that the bytes around it were
//!   not touched; then a put that runs past the end of the neighbour's registration
//!   fails with `OutOfBounds`; the same for gets (what it put comes back whole, a get
//!   past the end fails).  On the engine's own transport, at most 2 MiB were ever queued
//!   for one process (net::Engine::put_pieces, get_pieces).
//! - `gone` (network engine, two or more ranks): rank 0 registers a buffer, and after a
//!   barrier ends (returns from main, as a program that does not finalize); the other
//!   ranks put into its buffer until a put fails.  A process's end closes its
//!   connections: the first put whose reply can no longer come must fail then, not when
//!   the reply's timeout runs out (the list runs it with a timeout far beyond the test's).
//!
//! Exit 0 and one line `fabric-jobtest MODE: rank R ok` per rank on success.

use softnic_fabric::atomic::{AmoOp, AmoWidth};
use softnic_fabric::bootstrap;
use softnic_fabric::mem::{self, Access, MemKey};
use softnic_fabric::node::{self, PeerRef};
use softnic_fabric::registry;
use softnic_fabric::rma::{self, Peer};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BUF: usize = 1 << 20;
/// Protection-domain key the test's registrations use.
const PD: u64 = 0x5eed;

fn die(what: &str, e: impl std::fmt::Debug) -> ! {
    eprintln!("fabric-jobtest: {what}: {e:?}");
    std::process::exit(1)
}

macro_rules! ok {
    ($e:expr, $what:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => die($what, e),
        }
    };
}

/// What each rank publishes: its process reference, the key and base of its buffer.
#[derive(Clone, Copy)]
struct Card {
    peer: PeerRef,
    key: MemKey,
    addr: u64,
}

impl Card {
    fn to_bytes(self) -> [u8; 40] {
        let mut b = [0u8; 40];
        for (i, w) in self.peer.to_words().iter().chain([self.key.to_u64(), self.addr].iter()).enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        b
    }
    fn from_bytes(b: &[u8]) -> Card {
        let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
        Card { peer: PeerRef::from_words([w(0), w(1), w(2)]), key: MemKey::from_u64(w(3)), addr: w(4) }
    }
}

/// Allgathers every rank's card (rank order).
fn exchange(mine: Card) -> Vec<Card> {
    let all = ok!(bootstrap::allgather(&mine.to_bytes()), "allgather");
    all.chunks(40).map(Card::from_bytes).collect()
}

fn open(c: &Card) -> Arc<Peer> {
    ok!(Peer::open(c.peer), "Peer::open")
}

fn pattern(rank: u32, i: usize) -> u8 {
    (i as u32).wrapping_mul(31).wrapping_add(rank.wrapping_mul(97)) as u8
}

fn ring(rank: u32, size: u32, memory: &str) {
    // Layout of each buffer: [0..8) counter (used on rank 0), [64..64+BUF/2) landing zone
    // for the left neighbour's put, [BUF-8..BUF) this rank's tag.
    // `shared`: library-owned memory (alloc_shared) instead of the heap; under valgrind,
    // whose own memory management keeps heap pages from being rebound (they take the
    // process_vm fallback, which has no atomics), that is the variant that can run.
    let mut heap;
    let shared;
    let buf: &mut [u8] = if memory == "shared" {
        shared = ok!(mem::alloc_shared(BUF), "alloc_shared");
        // SAFETY: BUF bytes of fresh zeroed memory we own until the end of the function.
        unsafe { std::slice::from_raw_parts_mut(shared.as_ptr(), BUF) }
    } else {
        heap = vec![0u8; BUF];
        &mut heap
    };
    let tag = 0x7a6_0000 + rank as u64;
    buf[BUF - 8..].copy_from_slice(&tag.to_le_bytes());
    let key = ok!(mem::register(buf.as_ptr() as usize, BUF, Access::ReadWrite, PD), "register");
    let me = Card { peer: ok!(node::self_ref(), "self_ref"), key, addr: buf.as_ptr() as u64 };
    let cards = exchange(me);
    ok!(bootstrap::barrier(), "barrier");

    let right = &cards[((rank + 1) % size) as usize];
    let left = &cards[((rank + size - 1) % size) as usize];
    // An odd length at an odd offset: alignment must not matter.
    let len = BUF / 2 - 3;
    let src: Vec<u8> = (0..len).map(|i| pattern(rank, i)).collect();
    ok!(rma::put(&open(right), right.key, right.addr + 65, &src, PD), "put");
    let old = ok!(rma::atomic(&open(&cards[0]), cards[0].key, cards[0].addr, AmoWidth::I64, AmoOp::Add(1), PD), "fetch-add");
    if old >= size as u64 {
        die("fetch-add returned", old);
    }
    let mut got = [0u8; 8];
    ok!(rma::get(&open(left), left.key, left.addr + BUF as u64 - 8, &mut got, PD), "get");
    let want = 0x7a6_0000 + ((rank + size - 1) % size) as u64;
    if u64::from_le_bytes(got) != want {
        die("left neighbour's tag", u64::from_le_bytes(got));
    }
    ok!(bootstrap::barrier(), "barrier");

    let from = (rank + size - 1) % size;
    for i in 0..len {
        if buf[65 + i] != pattern(from, i) {
            die("byte from the left neighbour", (i, buf[65 + i], pattern(from, i)));
        }
    }
    if buf[64] != 0 || buf[65 + len] != 0 {
        die("guard bytes around the put were touched", (buf[64], buf[65 + len]));
    }
    if rank == 0 {
        let counter = u64::from_le_bytes(buf[..8].try_into().unwrap());
        if counter != size as u64 {
            die("counter after every rank's fetch-add", counter);
        }
    }
    ok!(mem::deregister(key), "deregister");
    ok!(bootstrap::barrier(), "barrier");
}

fn spin(rank: u32, size: u32) {
    if size < 2 {
        eprintln!("SKIP: spin needs 2 ranks");
        std::process::exit(77);
    }
    // words[0]: the flag rank 0 writes; words[1]: rank 1's acknowledgement.
    let words: Box<[AtomicU64; 8]> = Box::new(Default::default());
    let key = ok!(mem::register(words.as_ptr() as usize, 64, Access::ReadWrite, PD), "register");
    let me = Card { peer: ok!(node::self_ref(), "self_ref"), key, addr: words.as_ptr() as u64 };
    let cards = exchange(me);
    ok!(bootstrap::barrier(), "barrier");
    const MAGIC: u64 = 0xfeed_f00d_1234_5678;
    match rank {
        1 => {
            // Plain loads in a loop; this rank makes no library call until the flag lands.
            let start = Instant::now();
            while words[0].load(Ordering::Acquire) != MAGIC {
                std::hint::spin_loop();
                if start.elapsed() > Duration::from_secs(20) {
                    die("spinning rank never saw the put", words[0].load(Ordering::Relaxed));
                }
            }
            words[1].store(MAGIC ^ 1, Ordering::Release);
        }
        0 => {
            let t = &cards[1];
            let peer = open(t);
            // Give rank 1 time to be deep in its loop.
            std::thread::sleep(Duration::from_millis(50));
            ok!(rma::put(&peer, t.key, t.addr, &MAGIC.to_le_bytes(), PD), "put");
            let start = Instant::now();
            loop {
                let mut ack = [0u8; 8];
                ok!(rma::get(&peer, t.key, t.addr + 8, &mut ack, PD), "get");
                if u64::from_le_bytes(ack) == MAGIC ^ 1 {
                    break;
                }
                if start.elapsed() > Duration::from_secs(20) {
                    die("no acknowledgement from the spinning rank", u64::from_le_bytes(ack));
                }
                std::thread::yield_now();
            }
        }
        _ => {}
    }
    ok!(bootstrap::barrier(), "barrier");
}

/// Pins the calling thread (and the threads it starts later: the engine's progress
/// thread) to one core, so that a progress thread's wake-up preempts its spinning rank.
fn pin_to_core(rank: u32) {
    // SAFETY: a zeroed cpu_set_t is empty; the calls only read and write it.
    unsafe {
        let n = libc::sysconf(libc::_SC_NPROCESSORS_ONLN).max(1) as usize;
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(rank as usize % n, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Spins on `w` (plain loads, no library call) until it holds `want`; dies after 20 s.
fn spin_for(w: &AtomicU64, want: u64, what: &str) {
    let start = Instant::now();
    while w.load(Ordering::Acquire) != want {
        std::hint::spin_loop();
        if start.elapsed() > Duration::from_secs(20) {
            die(what, (w.load(Ordering::Relaxed), want));
        }
    }
}

fn hold(rank: u32, size: u32) {
    const ROUNDS: u64 = 500;
    // The reply goes within HOLD_CAP_NS (1 ms) and DEFER_NS; a progress thread that slept
    // its usual 100 ms instead would miss this.
    const BOUND_MS: u128 = 50;
    if size != 2 {
        eprintln!("SKIP: hold needs 2 ranks");
        std::process::exit(77);
    }
    pin_to_core(rank);
    // words[0]: the ping-pong's word; words[1]: what rank 1 polls for; words[2]: the word
    // rank 1 spins on after leaving the library.
    let words: Box<[AtomicU64; 8]> = Box::new(Default::default());
    let (key, peer, their_key, their_addr) = partner_of_two(rank, words.as_ptr() as usize, 64);
    let other = &Card { peer: ok!(node::self_ref(), "self_ref"), key: their_key, addr: their_addr };
    ok!(bootstrap::barrier(), "barrier");
    for i in 1..=ROUNDS {
        if rank == 0 {
            ok!(rma::put(&peer, other.key, other.addr, &i.to_le_bytes(), PD), "ping");
            spin_for(&words[0], i, "no pong");
        } else {
            spin_for(&words[0], i, "no ping");
            let t0 = Instant::now();
            ok!(rma::put(&peer, other.key, other.addr, &i.to_le_bytes(), PD), "pong");
            // The last pong's reply is held by rank 0, which then leaves the library for
            // good (PMI barriers from here on): only the progress thread's clock sends it.
            let ms = t0.elapsed().as_millis();
            if i == ROUNDS && ms > BOUND_MS {
                die("the last pong waited for rank 0 to call the library again (ms)", ms);
            }
        }
    }
    let before = softnic_fabric::net::held_replies().unwrap_or_default();
    let own = softnic_fabric::net::own_transport_running();
    if own && before[0] < ROUNDS / 10 {
        die("replies of the ping-pong did not ride with requests (rode, alone, by the clock)", before);
    }
    println!("fabric-jobtest hold: rank {rank} ping-pong of {ROUNDS}: replies rode {}, went alone {}, by the clock {}", before[0], before[1], before[2]);
    ok!(bootstrap::barrier(), "barrier");
    // Rounds of the second part: every round's put must complete in time.
    const PHASE2_ROUNDS: u64 = 5;
    let mut clocked = 0;
    for k in 0..PHASE2_ROUNDS {
        // Past any pause in holding that a clock-sent reply (the ping-pong's, the last
        // round's) started.
        std::thread::sleep(Duration::from_millis(50));
        ok!(bootstrap::barrier(), "barrier");
        let (first, second) = (7 + 2 * k, 8 + 2 * k);
        if rank == 1 {
            let was = softnic_fabric::net::held_replies().unwrap_or_default();
            let start = Instant::now();
            while words[1].load(Ordering::Acquire) != first {
                softnic_fabric::net::poll_for_events();
                if start.elapsed() > Duration::from_secs(20) {
                    die("rank 0's put never landed", words[1].load(Ordering::Relaxed));
                }
            }
            // Out of the library until rank 0's second put.
            spin_for(&words[2], second, "rank 0's second put never landed");
            let now = softnic_fabric::net::held_replies().unwrap_or_default();
            // Held (by the poll, or by the progress thread that served it instead), the
            // reply can only have gone by the clock: nothing else was sent or polled.
            if own && (now[0] > was[0] || now[1] > was[1]) {
                die("a held reply went otherwise than by the clock (before, after)", (was, now));
            }
            clocked += (now[2] > was[2]) as u32;
        } else {
            std::thread::sleep(Duration::from_millis(20));
            let t0 = Instant::now();
            ok!(rma::put(&peer, other.key, other.addr + 8, &first.to_le_bytes(), PD), "put to the polling rank");
            let ms = t0.elapsed().as_millis();
            if ms > BOUND_MS {
                die("the put's completion waited for its target to call the library again (ms)", ms);
            }
            println!("fabric-jobtest hold: rank 0 put to a rank that left the library completed in {ms} ms");
            ok!(rma::put(&peer, other.key, other.addr + 16, &second.to_le_bytes(), PD), "second put");
        }
    }
    if rank == 1 {
        // A loaded machine may have the progress thread serve every round's put (the
        // poller preempted, its lease run out): then no reply was held, which the first
        // part's counts already checked happens.
        println!("fabric-jobtest hold: rank 1 left the library after a poll served a put: its reply went by the clock in {clocked} of {PHASE2_ROUNDS} rounds");
    }
    ok!(bootstrap::barrier(), "barrier");
    ok!(mem::deregister(key), "deregister");
}

/// For a job of two ranks: registers our `len` bytes at `addr` and swaps cards with the
/// other rank (node, registry slot and generation, key, address).  Our key, the other
/// rank as a peer, its key and its address.
fn partner_of_two(rank: u32, addr: usize, len: usize) -> (MemKey, Arc<Peer>, MemKey, u64) {
    let key = ok!(mem::register(addr, len, Access::ReadWrite, PD), "register");
    let id = ok!(node::get(), "node").proc_id();
    let card = [ok!(bootstrap::node_id(rank), "node_id") as u64, id.slot as u64, id.gen as u64, key.to_u64(), addr as u64];
    let all = ok!(bootstrap::allgather(&card.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>()), "allgather");
    let w = |i: usize| u64::from_le_bytes(all[(1 - rank as usize) * 40 + i * 8..][..8].try_into().unwrap());
    let peer = ok!(Peer::at(w(0) as u32, registry::ProcId { slot: w(1) as u32, gen: w(2) as u32 }, 32), "Peer::at");
    (key, peer, MemKey::from_u64(w(3)), w(4))
}

/// Blocking calls made under a lease keep it (net::Engine::polling): rank 0 starts a
/// lease with a poll that finds nothing, then makes blocking puts to rank 1 for 20 ms
/// without polling again, ten times.  A lease lasts at most SOFTNIC_NET_LEASE_US (1 ms):
/// if the puts did not renew it, it would run out early in every block and nearly every
/// put after that would find none (each turning the progress thread's watch off and on).
/// Renewed, a put finds none only after rank 0 was kept off its core for a whole lease
/// (a loaded machine), or slept for a reply: after a stall of half a lease (or 100 us)
/// rank 0 polls again, as a program would, and the bound of half the puts holds unless
/// stalls were so frequent that no lease could run out anyway.
fn lease(rank: u32, size: u32) {
    const BLOCKS: u32 = 10;
    const BLOCK: Duration = Duration::from_millis(20);
    if size != 2 {
        eprintln!("SKIP: lease needs 2 ranks");
        std::process::exit(77);
    }
    pin_to_core(rank);
    let word: Box<AtomicU64> = Box::default();
    let (key, peer, target, addr) = partner_of_two(rank, &*word as *const AtomicU64 as usize, 8);
    ok!(bootstrap::barrier(), "barrier");
    if rank == 0 {
        // The first contact (connections, the peer's registration) before the count.
        ok!(rma::put(&peer, target, addr, &0u64.to_le_bytes(), PD), "first put");
        let before = softnic_fabric::net::calls_unleased().unwrap_or_else(|| die("no network engine runs", ()));
        let (mut puts, mut polls) = (0u64, 0u64);
        for _ in 0..BLOCKS {
            softnic_fabric::net::poll_for_events();
            let start = Instant::now();
            let (mut begun, mut ended) = (start, start);
            while start.elapsed() < BLOCK {
                // Kept off its core (in the last put or since) for half a lease (leases
                // adapt: shorter on a loaded machine), or a put so slow that it slept for
                // its reply (SOFTNIC_NET_POLL_US, 200 us; asleep, a thread ends its lease):
                // the lease may rightly have ended; a poll begins another.
                let now = Instant::now();
                let stall = Duration::from_nanos((softnic_fabric::net::lease_ns().unwrap_or(0) / 2).min(100_000));
                if ended - begun > stall || now - ended > stall {
                    softnic_fabric::net::poll_for_events();
                    polls += 1;
                }
                begun = Instant::now();
                puts += 1;
                ok!(rma::put(&peer, target, addr, &puts.to_le_bytes(), PD), "put");
                ended = Instant::now();
            }
        }
        if puts < 20 * BLOCKS as u64 {
            die("too few puts to tell (puts)", puts);
        }
        let unleased = softnic_fabric::net::calls_unleased().unwrap_or(0) - before;
        println!("fabric-jobtest lease: rank 0 made {puts} blocking puts in {BLOCKS} blocks of {} ms, {unleased} of them outside a lease ({polls} polls after a stall)", BLOCK.as_millis());
        // Unless stalls made polls so frequent that no lease could run out anyway.
        if polls * 2 < puts && unleased * 2 > puts {
            die("blocking calls did not keep the lease they were made under (puts, outside a lease)", (puts, unleased));
        }
    }
    ok!(bootstrap::barrier(), "barrier");
    ok!(mem::deregister(key), "deregister");
}

const SVC_RANK: usize = 8;

/// The test service: counts the call in the target's region and answers with the words
/// [old count, owner's rank, tag ^ 0x5a5a].  Request: [region location (3 words), tag].
fn test_service(target: &Arc<Peer>, req: &[u8], reply: &mut Vec<u8>) -> softnic_fabric::Result<()> {
    let w = |i: usize| req.get(i * 8..i * 8 + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap())).ok_or(softnic_fabric::Error::InvalidArg);
    let loc = mem::RingLoc::from_words([w(0)?, w(1)?, w(2)?]);
    let region = rma::Region::open(target, &loc)?;
    if region.is_remote() {
        die("a service handler was given a target it must reach through the network", ());
    }
    let mut old = region.load_u64(0)?;
    while let Err(cur) = region.cas_u64(0, old, old + 1)? {
        old = cur;
    }
    for v in [old, region.load_u64(SVC_RANK)?, w(3)? ^ 0x5a5a] {
        reply.extend_from_slice(&v.to_le_bytes());
    }
    Ok(())
}

fn service(rank: u32, size: u32) {
    use softnic_fabric::Error;
    ok!(rma::register_service(registry::api::TEST, test_service), "register_service");
    let shared = ok!(mem::alloc_shared(4096), "alloc_shared");
    // SAFETY: 4096 fresh bytes we own; the counter word is only touched atomically.
    unsafe { std::ptr::write_volatile(shared.as_ptr().add(SVC_RANK) as *mut u64, rank as u64) };
    let loc = ok!(shared.ring_loc(0, 64), "ring_loc");
    let words: Vec<u8> = loc.to_words().iter().flat_map(|w| w.to_le_bytes()).collect();
    let node = ok!(bootstrap::node_id(rank), "node_id");
    ok!(registry::publish(registry::api::TEST, format!("svc-{node}-{rank}").as_bytes(), &words), "publish");
    ok!(bootstrap::barrier(), "barrier");
    for p in 0..size {
        let pn = ok!(bootstrap::node_id(p), "node_id");
        let (peer, payload) = ok!(Peer::lookup(pn, registry::api::TEST, format!("svc-{pn}-{p}").as_bytes()), "Peer::lookup");
        let mut req = payload[..24].to_vec();
        let tag = 1000 + rank as u64 * 10 + p as u64;
        req.extend_from_slice(&tag.to_le_bytes());
        let mut reply = Vec::new();
        ok!(peer.call(registry::api::TEST, &req, &mut reply), "call");
        let r = |i: usize| u64::from_le_bytes(reply[i * 8..i * 8 + 8].try_into().unwrap());
        if reply.len() != 24 || r(0) >= size as u64 || r(1) != p as u64 || r(2) != tag ^ 0x5a5a {
            die("service reply", (p, reply));
        }
        // Through the network engine exactly when it carries the job and the peer is on
        // another node (another machine: virtual nodes of one machine share memory), or
        // when SOFTNIC_ENGINE=net sends everything but ourselves through it.
        let via_net = match (softnic_fabric::net::mode(), softnic_fabric::net::running()) {
            (softnic_fabric::net::Mode::Net, _) => p != rank,
            (_, Some(_)) => pn != node,
            (_, None) => false,
        };
        if peer.is_remote() != via_net {
            die("engine of the looked-up peer", (p, peer.is_remote()));
        }
        match peer.call(0xfe, &req, &mut reply) {
            Err(Error::Unsupported) => {}
            r => die("call of a service nobody registered", r),
        }
        match peer.call(registry::api::TEST, &vec![0u8; rma::MAX_CALL + 1], &mut reply) {
            Err(Error::InvalidArg) => {}
            r => die("call with a request over MAX_CALL", r),
        }
    }
    let nowhere = format!("svc-{node}-none");
    match Peer::lookup(node, registry::api::TEST, nowhere.as_bytes()) {
        Err(Error::NotFound) => {}
        r => die("lookup of a key nobody published", r.map(|_| ())),
    }
    ok!(bootstrap::barrier(), "barrier");
    // SAFETY: the counter word, written only atomically by the callers (all done: barrier).
    let count = unsafe { (*(shared.as_ptr() as *const AtomicU64)).load(Ordering::Acquire) };
    if count != size as u64 {
        die("calls counted in this rank's region", count);
    }
    ok!(bootstrap::barrier(), "barrier");
}

fn crash(rank: u32, size: u32, how: &str) {
    let buf = vec![0u8; 1 << 16];
    ok!(mem::register(buf.as_ptr() as usize, buf.len(), Access::ReadWrite, PD), "register");
    let shared = ok!(mem::alloc_shared(1 << 16), "alloc_shared");
    ok!(registry::publish(registry::api::TEST, format!("jobtest-{rank}").as_bytes(), &[rank as u8]), "publish");
    ok!(bootstrap::barrier(), "barrier");
    // The "nothing left behind" check after the job means something only if the job
    // really created its shared objects where the check looks.
    let dir = softnic_fabric::shm::user_dir();
    let entries = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
    if entries == 0 {
        die("no shared objects in the per-user directory during the job", dir);
    }
    println!("fabric-jobtest crash: rank {rank} registered ({} objects in {})", entries, dir.display());
    if rank == size - 1 {
        match how {
            // SAFETY: a deliberate invalid write to provoke SIGSEGV.
            "segv" => unsafe { std::ptr::write_volatile(8 as *mut u64, 1) },
            "exit" => std::process::exit(3),
            "abort" => bootstrap::abort(5, "fabric-jobtest deliberate abort"),
            _ => die("unknown crash mode", how),
        }
    }
    std::thread::sleep(Duration::from_secs(60));
    drop(shared);
    die("the job was not torn down", rank);
}

fn bulk(rank: u32, size: u32) {
    const LEN: usize = (9 << 20) + 123;
    const AT: usize = 4096 + 77;
    const SPAN: usize = AT + LEN + 4096;
    let src: Vec<u8> = (0..LEN).map(|i| pattern(rank, i)).collect();
    let mut buf = vec![0xa5u8; SPAN];
    let key = ok!(mem::register(buf.as_mut_ptr() as usize, SPAN, Access::ReadWrite, PD), "register");
    // Node, registry slot and generation, key, address (a peer on another machine is
    // named by its node: see `partner_of_two`).
    let id = ok!(node::get(), "node").proc_id();
    let card = [ok!(bootstrap::node_id(rank), "node_id") as u64, id.slot as u64, id.gen as u64, key.to_u64(), buf.as_ptr() as u64];
    let all = ok!(bootstrap::allgather(&card.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>()), "allgather");
    let r = ((rank + 1) % size) as usize;
    let w = |i: usize| u64::from_le_bytes(all[r * 40 + i * 8..][..8].try_into().unwrap());
    let peer = ok!(Peer::at(w(0) as u32, registry::ProcId { slot: w(1) as u32, gen: w(2) as u32 }, 32), "Peer::at");
    let (rkey, raddr) = (MemKey::from_u64(w(3)), w(4));
    ok!(bootstrap::barrier(), "barrier");
    ok!(rma::put(&peer, rkey, raddr + AT as u64, &src, PD), "bulk put");
    ok!(bootstrap::barrier(), "barrier");
    let left = (rank + size - 1) % size;
    let got = &buf[..];
    if let Some(i) = (0..LEN).find(|&i| got[AT + i] != pattern(left, i)) {
        die("bulk put: byte differs", (i, got[AT + i], pattern(left, i)));
    }
    if got[..AT].iter().chain(&got[AT + LEN..]).any(|&b| b != 0xa5) {
        die("bulk put: bytes outside the put changed", ());
    }
    // Once every rank has checked its buffer: what we put comes back whole in one get
    // (several pieces too).
    ok!(bootstrap::barrier(), "barrier");
    let mut back = vec![0u8; LEN];
    ok!(rma::get(&peer, rkey, raddr + AT as u64, &mut back, PD), "bulk get");
    if let Some(i) = (0..LEN).find(|&i| back[i] != src[i]) {
        die("bulk get: byte differs", (i, back[i], src[i]));
    }
    // Past the end of the neighbour's registration (its first piece would fit).
    match rma::put(&peer, rkey, raddr + (SPAN - (1 << 20)) as u64, &src[..3 << 20], PD) {
        Err(softnic_fabric::Error::OutOfBounds) => {}
        r => die("bulk put past the end: not OutOfBounds", r),
    }
    // A get past the end fails too.
    match rma::get(&peer, rkey, raddr + (SPAN - (1 << 20)) as u64, &mut back[..3 << 20], PD) {
        Err(softnic_fabric::Error::OutOfBounds) => {}
        r => die("bulk get past the end: not OutOfBounds", r),
    }
    if let Some(q) = softnic_fabric::net::most_queued() {
        if q > 2 << 20 {
            die("bulk put: bytes queued for one process at once", q);
        }
    }
    ok!(bootstrap::barrier(), "barrier");
    drop(buf);
}

fn gone(rank: u32, size: u32) {
    if size < 2 {
        eprintln!("SKIP: gone needs 2 ranks");
        std::process::exit(77);
    }
    ok!(node::get(), "node");
    // Never freed: the others' puts may land in it until this process is gone.
    let buf: &'static mut [u8] = Vec::leak(vec![0u8; 4096]);
    let mut mine = [0u64; 5];
    if rank == 0 {
        let me = ok!(node::get(), "node").proc_id();
        let key = ok!(mem::register(buf.as_ptr() as usize, buf.len(), Access::ReadWrite, PD), "register");
        mine = [ok!(bootstrap::node_id(rank), "node_id") as u64, me.slot as u64, me.gen as u64, key.to_u64(), buf.as_ptr() as u64];
    }
    let bytes: Vec<u8> = mine.iter().flat_map(|w| w.to_le_bytes()).collect();
    let all = ok!(bootstrap::allgather(&bytes), "allgather");
    let w = |i: usize| u64::from_le_bytes(all[i * 8..i * 8 + 8].try_into().unwrap());
    ok!(bootstrap::barrier(), "barrier");
    if rank == 0 {
        return; // ends the process, registration and connections with it
    }
    // Rank 0 may be gone already: then it cannot be reached at all.
    let peer = match Peer::at(w(0) as u32, registry::ProcId { slot: w(1) as u32, gen: w(2) as u32 }, 32) {
        Ok(p) => p,
        Err(softnic_fabric::Error::PeerDead | softnic_fabric::Error::StaleHandle) => {
            println!("fabric-jobtest gone: rank {rank}: rank 0's end seen before any put");
            return;
        }
        Err(e) => die("Peer::at rank 0", e),
    };
    let (key, addr) = (MemKey::from_u64(w(3)), w(4));
    let mut puts = 0u64;
    loop {
        match rma::put(&peer, key, addr, &[rank as u8; 8], PD) {
            Ok(()) => puts += 1,
            Err(softnic_fabric::Error::PeerDead) => break,
            Err(e) => die("a put to the ended rank 0 failed otherwise than PeerDead", e),
        }
    }
    println!("fabric-jobtest gone: rank {rank}: rank 0's end seen after {puts} puts");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("");
    if mode == "attack" {
        // A process outside any job: no PMI, no secret.
        attack(args.get(2).map(String::as_str).unwrap_or_else(|| die("usage", "attack DIR")));
        return;
    }
    let rank = ok!(bootstrap::rank(), "rank");
    let size = ok!(bootstrap::size(), "size");
    match mode {
        "ring" => ring(rank, size, args.get(2).map(String::as_str).unwrap_or("heap")),
        "spin" => spin(rank, size),
        "service" => service(rank, size),
        "crash" => crash(rank, size, args.get(2).map(String::as_str).unwrap_or("")),
        "revoke" => revoke(rank, size),
        "netauth" => netauth(rank, size, args.get(2).map(String::as_str).unwrap_or_else(|| die("usage", "netauth DIR"))),
        "hold" => hold(rank, size),
        "lease" => lease(rank, size),
        "gone" => gone(rank, size),
        "bulk" => bulk(rank, size),
        _ => die("usage: fabric-jobtest ring|spin|service|revoke|hold|lease|gone|crash segv|exit|abort|netauth DIR|attack DIR", mode),
    }
    println!("fabric-jobtest {mode}: rank {rank} ok");
}

/// Canary byte `i` of the netauth buffer.
fn canary(i: usize) -> u8 {
    (i as u8).wrapping_mul(7) ^ 0xa5
}

fn write_file(dir: &str, name: &str, data: &[u8]) {
    let tmp = format!("{dir}/.{name}.tmp");
    ok!(std::fs::write(&tmp, data), "write");
    ok!(std::fs::rename(&tmp, format!("{dir}/{name}")), "rename");
}

fn wait_file(dir: &str, name: &str, secs: u64) -> Vec<u8> {
    let start = Instant::now();
    loop {
        if let Ok(b) = std::fs::read(format!("{dir}/{name}")) {
            return b;
        }
        if start.elapsed() > Duration::from_secs(secs) {
            die("waiting for a file", (dir, name));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn netauth(rank: u32, size: u32, dir: &str) {
    use softnic_fabric::net;
    const LEN: usize = 4096;
    let buf: Vec<u8> = (0..LEN).map(canary).collect();
    let key = ok!(mem::register(buf.as_ptr() as usize, LEN, Access::ReadWrite, PD), "register");
    let cards = exchange(Card { peer: ok!(node::self_ref(), "self_ref"), key, addr: buf.as_ptr() as u64 });
    if net::running().is_none() || size < 2 {
        die("netauth needs the network engine and 2 ranks", size);
    }
    // Rank 0 as the network engine reaches it (by node and process id).
    let me = ok!(node::get(), "node").proc_id();
    let ids = ok!(bootstrap::allgather(&[ok!(bootstrap::node_id(rank), "node_id"), me.slot, me.gen].iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>()), "allgather");
    let w = |i: usize| u32::from_le_bytes(ids[i * 4..i * 4 + 4].try_into().unwrap());
    let target = ok!(Peer::at(w(0), registry::ProcId { slot: w(1), gen: w(2) }, 32), "Peer::at rank 0");
    ok!(bootstrap::barrier(), "barrier");
    // The initiator: the last rank (on the last virtual host, away from rank 0).
    let initiator = size - 1;
    if rank == initiator {
        if !target.is_remote() {
            die("rank 0 is not reached through the network engine", ());
        }
        net::capture_next_put();
        ok!(rma::put(&target, cards[0].key, cards[0].addr + 64, b"GENUINE!", PD), "put");
        let req = net::take_captured_put().unwrap_or_else(|| die("no put request captured", ()));
        write_file(dir, "replay.req", &req);
    }
    ok!(bootstrap::barrier(), "barrier");
    if rank == 0 {
        let p = buf.as_ptr() as *mut u8;
        // SAFETY: our registered buffer; peers write it only through the engine, and
        // nobody does during this phase but the attacker (whose writes must not land).
        let read = || (0..LEN).map(|i| unsafe { std::ptr::read_volatile(p.add(i)) }).collect::<Vec<u8>>();
        if &read()[64..72] != b"GENUINE!" {
            die("the initiator's put did not land", ());
        }
        for (i, b) in b"CHANGED!".iter().enumerate() {
            // SAFETY: as above.
            unsafe { std::ptr::write_volatile(p.add(64 + i), *b) };
        }
        write_file(dir, "target.name", &net::endpoint_name().unwrap_or_default());
        write_file(dir, "ready", b"");
        let report = String::from_utf8_lossy(&wait_file(dir, "attacked", 120)).into_owned();
        let want: Vec<u64> = report.split_whitespace().filter_map(|w| w.parse().ok()).collect();
        if want.len() != 3 {
            die("attacker's report", report);
        }
        // Its messages were delivered to our provider; give the engine time to read them.
        let start = Instant::now();
        let mut got = net::auth_drops().unwrap_or_default();
        while (0..3).any(|i| got[i] < want[i]) && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
            got = net::auth_drops().unwrap_or_default();
        }
        println!("fabric-jobtest netauth: dropped {} malformed, {} unauthenticated, {} replayed (attacker sent {} {} {})", got[0], got[1], got[2], want[0], want[1], want[2]);
        if got[1] != want[1] || got[2] != want[2] || got[0] < want[0] {
            die("drop counts", (got, want));
        }
        let now = read();
        for i in 0..LEN {
            let expect = if (64..72).contains(&i) { b"CHANGED!"[i - 64] } else { canary(i) };
            if now[i] != expect {
                die("byte of the target's buffer changed by the attack", (i, now[i], expect));
            }
        }
    }
    ok!(bootstrap::barrier(), "barrier");
    // The job goes on: every other rank puts its tag into rank 0's buffer and reads it back.
    if rank != 0 {
        let at = cards[0].addr + 256 + 8 * rank as u64;
        let tag = 0x7e57_0000_0000u64 + rank as u64;
        ok!(rma::put(&target, cards[0].key, at, &tag.to_le_bytes(), PD), "put after the attack");
        let mut back = [0u8; 8];
        ok!(rma::get(&target, cards[0].key, at, &mut back, PD), "get after the attack");
        if u64::from_le_bytes(back) != tag {
            die("get after the attack", u64::from_le_bytes(back));
        }
    }
    ok!(bootstrap::barrier(), "barrier");
    if rank == 0 {
        for r in 1..size as usize {
            let v = u64::from_le_bytes(buf[256 + 8 * r..264 + 8 * r].try_into().unwrap());
            if v != 0x7e57_0000_0000u64 + r as u64 {
                die("tag put after the attack", (r, v));
            }
        }
    }
    ok!(bootstrap::barrier(), "barrier");
    drop(buf);
}

/// Plays a process outside the job: see `netauth`.  Writes DIR/attacked with the number of
/// messages it sent that the target must count as malformed (at least), unauthenticated
/// and replayed (exactly).
fn attack(dir: &str) {
    use softnic_fabric::net::RawEndpoint;
    wait_file(dir, "ready", 120);
    let name = wait_file(dir, "target.name", 1);
    let genuine = wait_file(dir, "replay.req", 1);
    const HDR: usize = 88; // fabric/src/net.rs: the header, its MAC in the last 8 bytes
    if genuine.len() < HDR {
        die("captured request shorter than a header", genuine.len());
    }
    let ep = ok!(RawEndpoint::open(), "RawEndpoint::open");
    let mut seed = 0x243f_6a88_85a3_08d3u64 ^ std::process::id() as u64;
    let mut noise = |n: usize| -> Vec<u8> {
        (0..n)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect()
    };
    let mut malformed = 0;
    let mut forged = 0;
    let mut replayed = 0;
    // Garbage of every size around the header's, and truncated headers.
    for n in [1usize, 7, 63, 87, 88, 200, 5000, 70000] {
        let mut g = noise(n);
        if n >= 2 {
            g[0] = 0; // not the magic: malformed whatever the rest says
        }
        ok!(ep.send_to(&name, &g), "send garbage");
        malformed += 1;
    }
    for n in [2usize, 40, HDR - 1] {
        ok!(ep.send_to(&name, &genuine[..n]), "send a truncated header");
        malformed += 1;
    }
    // Well-formed headers without the key: no MAC, a random one, the genuine request
    // retargeted (key, address, length changed under its old MAC), and one sealed with
    // another job's key.
    let mut no_mac = genuine.clone();
    no_mac[HDR - 8..HDR].fill(0);
    let mut random_mac = genuine.clone();
    random_mac[HDR - 8..HDR].copy_from_slice(&noise(8));
    let mut moved = genuine.clone();
    let elsewhere = u64::from_le_bytes(genuine[24..32].try_into().unwrap()) + 512;
    moved[24..32].copy_from_slice(&elsewhere.to_le_bytes()); // b: the address
    let mut renumbered = genuine.clone();
    renumbered[HDR - 16] ^= 0x40; // a fresh request number under the old MAC
    let k = noise(16);
    let other_key = softnic_fabric::siphash::Key::from_bytes(k[..16].try_into().unwrap());
    let mut other_job = genuine.clone();
    let mac = softnic_fabric::siphash::hash_words(&other_key, &other_job[..HDR - 8].chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect::<Vec<_>>());
    other_job[HDR - 8..HDR].copy_from_slice(&mac.to_le_bytes());
    for m in [&no_mac, &random_mac, &moved, &renumbered, &other_job] {
        ok!(ep.send_to(&name, m), "send a forged request");
        forged += 1;
    }
    // The genuine request, again and again.
    for _ in 0..3 {
        ok!(ep.send_to(&name, &genuine), "replay");
        replayed += 1;
    }
    // Garbage straight to the provider's port, below its protocol (IPv4 names only).
    if name.len() >= 8 && u16::from_ne_bytes([name[0], name[1]]) == libc::AF_INET as u16 {
        let addr = std::net::SocketAddr::from(([name[4], name[5], name[6], name[7]], u16::from_be_bytes([name[2], name[3]])));
        if let Ok(mut s) = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
            use std::io::Write;
            let _ = s.write_all(&noise(4096));
            std::thread::sleep(Duration::from_millis(100));
        }
        if let Ok(s) = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        // Not to udp;ofi_rxd's port: libfabric 1.17's rxd takes any datagram there as its
        // own packet, and a garbage one crashed the target inside libfabric (SIGSEGV).
        // ATTACK_RAW_UDP=1 sends them anyway.
        let rxd = std::env::var("FI_PROVIDER").is_ok_and(|p| p.contains("udp"));
        let raw_udp = !rxd || std::env::var("ATTACK_RAW_UDP").is_ok_and(|v| v == "1");
        if let Some(s) = std::net::UdpSocket::bind("127.0.0.1:0").ok().filter(|_| raw_udp) {
            for n in [1usize, 64, 1400] {
                let _ = s.send_to(&noise(n), addr);
            }
        }
    }
    ep.linger(Duration::from_millis(500));
    write_file(dir, "attacked", format!("{malformed} {forged} {replayed}").as_bytes());
    // Our endpoint (and connection) stays while the target counts what we sent.
    ep.linger(Duration::from_secs(2));
    println!("fabric-jobtest attack: sent {malformed} malformed, {forged} forged, {replayed} replayed messages");
}

/// See the module doc, `revoke`.
fn revoke(rank: u32, size: u32) {
    const TARGETS: usize = 16;
    const LEN: usize = 64 << 10;
    if size < 2 {
        eprintln!("SKIP: revoke needs 2 ranks");
        std::process::exit(77);
    }
    // The node fabric first (which starts the network engine in a job over several
    // nodes), as every API's initialisation does: Peer::at tells peers apart by it.
    ok!(node::get(), "node");
    // Rank 0's card: its node and process id (as the network engine reaches it), then
    // (key, address) of the control buffer and of each target.
    let words = 3 + 2 * (1 + TARGETS);
    let mut mine = vec![0u8; words * 8];
    let mut bufs: Vec<Vec<u8>> = Vec::new();
    let mut keys = Vec::new();
    if rank == 0 {
        let me = ok!(node::get(), "node").proc_id();
        let mut w = vec![ok!(bootstrap::node_id(rank), "node_id") as u64, me.slot as u64, me.gen as u64];
        for _ in 0..=TARGETS {
            let b = vec![0u8; LEN];
            let key = ok!(mem::register(b.as_ptr() as usize, b.len(), Access::ReadWrite, PD), "register");
            w.extend([key.to_u64(), b.as_ptr() as u64]);
            keys.push(key);
            bufs.push(b);
        }
        for (i, x) in w.iter().enumerate() {
            mine[i * 8..i * 8 + 8].copy_from_slice(&x.to_le_bytes());
        }
    }
    let all = ok!(bootstrap::allgather(&mine), "allgather");
    let w = |i: usize| u64::from_le_bytes(all[i * 8..i * 8 + 8].try_into().unwrap());
    let at = |i: usize| (MemKey::from_u64(w(3 + 2 * i)), w(4 + 2 * i));
    ok!(bootstrap::barrier(), "barrier");
    if rank == 0 {
        // The other ranks are putting into target 1 by now; end the targets' registrations
        // in order, each while they put into it.
        for key in &keys[1..] {
            std::thread::sleep(Duration::from_millis(15));
            ok!(mem::deregister(*key), "deregister");
        }
    } else {
        let peer = ok!(Peer::at(w(0) as u32, registry::ProcId { slot: w(1) as u32, gen: w(2) as u32 }, 32), "Peer::at rank 0");
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let lowest = Arc::new(AtomicU64::new(1));
        let landed = Arc::new(AtomicU64::new(0));
        let mut threads = Vec::new();
        for t in 0..2 {
            let (peer, stop, lowest, landed) = (peer.clone(), stop.clone(), lowest.clone(), landed.clone());
            let targets: Vec<(MemKey, u64)> = (1..=TARGETS).map(at).collect();
            threads.push(std::thread::spawn(move || {
                let src = vec![t as u8 + 1; LEN];
                while !stop.load(Ordering::Acquire) {
                    let i = lowest.load(Ordering::Acquire) as usize;
                    if i > TARGETS {
                        std::thread::sleep(Duration::from_millis(1));
                        continue;
                    }
                    let (key, addr) = targets[i - 1];
                    match rma::put(&peer, key, addr, &src, PD) {
                        Ok(()) => {
                            landed.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(softnic_fabric::Error::StaleHandle) => {
                            let _ = lowest.compare_exchange(i as u64, i as u64 + 1, Ordering::AcqRel, Ordering::Acquire);
                        }
                        Err(e) => die(&format!("put into target {i}"), e),
                    }
                }
            }));
        }
        let (ctl_key, ctl_addr) = at(0);
        let mut gets = 0u64;
        while lowest.load(Ordering::Acquire) as usize <= TARGETS {
            let mut b = [0u8; 8];
            ok!(rma::get(&peer, ctl_key, ctl_addr, &mut b, PD), "get from the control buffer");
            gets += 1;
        }
        stop.store(true, Ordering::Release);
        for t in threads {
            ok!(t.join().map_err(|_| "panic"), "put thread");
        }
        eprintln!("fabric-jobtest revoke: rank {rank}: {} puts landed, {gets} gets", landed.load(Ordering::Relaxed));
        // The control buffer's window, held by a process that exits.
        let mut b = vec![0u8; LEN];
        ok!(rma::get(&peer, ctl_key, ctl_addr, &mut b, PD), "get of the control buffer");
    }
    ok!(bootstrap::barrier(), "barrier");
    if let Some(n) = softnic_fabric::net::failed_completions() {
        if n != 0 {
            die("sends or RMA operations the provider failed", n);
        }
    }
    ok!(bootstrap::barrier(), "barrier");
    if rank == 0 {
        std::thread::sleep(Duration::from_millis(500));
        let t = Instant::now();
        ok!(mem::deregister(keys[0]), "deregister");
        let limit = softnic_fabric::env::get_u64("SOFTNIC_NET_TIMEOUT_MS") / 2;
        if t.elapsed() > Duration::from_millis(limit) {
            die("ending a registration whose holders exited took (ms)", t.elapsed().as_millis());
        }
        eprintln!("fabric-jobtest revoke: ending a registration whose holders exited took {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
    }
    drop(bufs);
}
