//! The network engine: peers on other nodes, reached through libfabric.
//!
//! A peer on this node is reached through shared memory ([`crate::rma`]); a peer on
//! another node through this engine, behind the same [`crate::rma::Peer`] interface, so
//! API crates cannot tell which engine carries an operation.  A process is named on the
//! network by (node address, registry slot): the node address is the launcher's node id
//! (the uGNI NIC address, the DMAPP PE's node), the slot is the [`ProcId`] that memory
//! handles carry.
//!
//! **Transport.**  By default our own (`SOFTNIC_NET_TRANSPORT=sockets`, crate::sock): TCP
//! connections this engine makes itself, with the messages described below (headers,
//! MACs, requests and replies) and no RMA.  `Fi` then holds no libfabric object (libfabric
//! is not even loaded); its wait descriptor is the transport's epoll set, which the
//! progress thread sleeps on as on a provider's, and `progress_once` reads the sockets.
//! Chosen over libfabric (round 7, `make bench` and ad hoc, two virtual hosts): faster for
//! every operation measured, 8 B ping-pongs ~2x, bulk puts in 1 MiB requests 1.0-1.2x its
//! RMA.  Libfabric stays selectable (`SOFTNIC_NET_TRANSPORT=libfabric`: other providers,
//! RMA), and `make check` runs every network test on both.
//!
//! **Endpoint (libfabric).**  One reliable-datagram endpoint per process (`FI_EP_RDM`), provider from
//! `FI_PROVIDER` when set, else `tcp;ofi_rxm` (verbs needs registered message buffers,
//! which this engine does not use yet); libfabric 1.17's `net` is refused with its cause
//! logged (its wait descriptor never quiets: see [`refused_provider`]).  Its address is published in the PMI KVS under
//! this rank, with the node and registry id, when the engine starts, which is when the
//! fabric is first used in a job the launcher spreads over several nodes (or always with
//! `SOFTNIC_ENGINE=net`).  Initiators read the job's records at first use: a process no
//! rank has published is unknown once every rank has published (`StaleHandle`), and is
//! waited for (up to `SOFTNIC_NET_TIMEOUT_MS`) while some rank has not.
//!
//! **Operations are requests served by the target's progress thread.**  Every remote
//! operation (put, get, atomic, 64-bit store, notify-ring lookup, ring push) is one
//! request message; the target's progress thread executes it on its own memory through
//! the shared-memory engine — the same validation (generation, bounds, read-only,
//! protection domain), the same CPU atomics (so remote atomics are atomic with respect to
//! the target's own atomic instructions and its node's other processes), the same ring
//! protocol — and answers with a reply carrying the status and any data.  One thread per
//! process serves requests and replies, spinning `SOFTNIC_NET_SPIN_US` and then sleeping
//! in the provider's wait object, except while an application thread drives the
//! completion queue itself: waiting for a reply ([`Engine::polling`]), or polling for
//! events under a lease ([`Engine::lease`]); it needs no PMI (a request carries the initiator's
//! address), so it can never wait on the application.  Requests from one initiator to one
//! target are executed in issue order (one ordered connection, one serving thread).
//!
//! **Services and lookups.**  A request may also run an API library's service handler on
//! this process as target ([`crate::rma::Peer::call`]: Portals matching, SISCI interrupts)
//! or look a key up in this node's registry for another node ([`Engine::lookup`]); both
//! are served by the progress thread like the rest, so handlers must never wait on
//! another remote operation.
//!
//! **Failure.**  A send that fails, or a reply that does not come within
//! `SOFTNIC_NET_TIMEOUT_MS`, marks the peer dead: its operations then fail with
//! `PeerDead` at once.
//!
//! **Bulk transfers by RMA.**  Puts and gets of at least [`RMA_MIN`] bytes are one
//! fi_writemsg/fi_readmsg each (per [`RMA_CHUNK`]) on the target's memory, which its
//! progress thread registers with the provider when a peer first asks (`SOFTNIC_NET_RMA`;
//! see "bulk RMA" below): no request, no copy at the target.  The rest, and any
//! transfer RMA cannot do, are requests.  Ending such a registration first waits for
//! the peers holding its window to let go ([`forget_registration`], "Revocation"): an RMA
//! meeting a closed registration would reset the connection and lose what else was on it.
//!
//! Decisions: requests carry at most [`MAX_DATA`] bytes of data; longer puts and gets are
//! split into several requests (in order).
//!
//! **Latency, and where it goes** (measured 2026-11-28).  An 8 B put whose target spins on
//! its memory costs ~2.1x a bare TCP ping-pong whose receiver sleeps (make bench, two
//! virtual hosts).  Per request the target's progress thread makes ~12 system calls before
//! the spinning application thread can run again on its core: epoll_wait, recvfrom, two
//! 1-byte writes (libfabric's own signals: tcp's progress socketpair and the CQ's wait
//! descriptor), the reply's sendmsg, the two reads that drain those signals and 3-4
//! epoll_waits inside fi_trywait, then the sleep; the bare floor makes 3.  A signal write
//! and its read cost ~3.9 us together here (the read end sits in a nested epoll set), an
//! epoll_wait(0) 0.16 us: the signals are the cost, and they exist because the CQ has a
//! wait object, which sleeping needs.  A bare-socket prototype of this same design
//! (progress thread, request, reply) measured ~1.4x the floor, ~1.1x with the reply off
//! the target's path: a transport of our own over sockets is what would close most of the
//! gap (since built: crate::sock, the default transport).  Without effect: rxm/tcp environment settings; edge-triggered sleep
//! without fi_trywait saved 2 calls but can miss traffic libfabric holds unannounced.
//!
//! **The reply off the target's path** (round 5).  The progress thread runs at SCHED_FIFO
//! (see `progress_loop`) so that it preempts an application spinning on its memory at
//! once; until it sleeps again that application cannot run.  When its wake-up preempted a
//! thread of ours (the process's involuntary context switches grew since its last wake-up:
//! one getrusage per wake-up) and no lease was on, the reply to a short put it
//! applied is held back ([`Engine::defer_reply`]) and goes out right after the
//! application's next request, when an application thread sleeps on a ring, or after
//! [`DEFER_NS`] (30 us) -- so a target that was idle (blocked anywhere) answers at once.
//! 8 B fma ping-pong, two virtual hosts, system calls per round trip and rank 59 -> ~53
//! (signal writes 5 -> 3, their reads 6 -> 4, progress-thread sleeps 1 -> ~0.5); medians
//! of 6 alternating runs: fma ping-pong 41.7 -> 33.4 us (1.8x the floor), put_event,
//! amo_fadd_lat and a blocking put to an idle target unchanged within noise.  Tried: 15 us (the timer beats the application's request: no
//! gain), 60 us (less gain); holding back every reply, without the preemption test, made
//! a blocking put to an idle target (dmapp put_lat) ~2x slower; holding back under a lease
//! made put_event_pingpong ~1.4x slower (leases then kept running out); skipping the
//! progress thread's CQ reads while the application polls (to avoid the ~1 futex call per
//! round trip of libfabric's locks that the 30 us timer causes) was slower.  Left: the
//! request's own path (recvfrom, libfabric's signals, fi_trywait's epoll calls).
//! Tried in round 6: the held-back reply riding in front of the application's next
//! request to the same peer, in one transfer (a flag in the reply's header saying
//! another message follows, within the inject size): per round trip and rank, sends
//! 2 -> 1.5, but progress-thread wake-ups 0.3-0.8 -> 1.1, libfabric signal pairs 3.1 ->
//! 3.9, context switches 1.2-2.9 -> 2.9-3.2, and the fma ping-pong slower in the same
//! runs (half round trip 38-42 -> 37-56 us; 77-83 -> 88-101 in a slow spell).
//!
//! **Replies riding with requests** (round 7, our own transport only: crate::sock).  There
//! a send is one sendmsg (~4.4 us here) with no signals around it, and several messages
//! go in one: every reply held back (by the progress thread as above, or by an
//! application thread that served a put inside a library call, [`Engine::hold_reply`])
//! goes in front of the next message to the same process, in the same send.  A ping-pong
//! then makes one send per half round trip instead of two, and no thread wakes: each rank
//! reads the reply and the peer's next request together while it waits for the reply.
//! Two virtual hosts, 8 B, same runs: fma ping-pong 31.9 -> 16.3 us (the sleeping TCP
//! floor 21-22), put with its remote event 12.8-13.9 -> 10.9-11.0; fetch-add unchanged.
//! With libfabric nothing changes (each message is its own send there).

use crate::ofi::{self, fi_addr_t, fi_cq_data_entry, fi_info, Lib};
use crate::registry::ProcId;
use crate::{Error, Result};
use once_cell::sync::OnceCell;
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How often a peer that is only watched is probed ([`Engine::probe`]).
const PROBE_EVERY_NS: u64 = 250_000_000;

/// Short asynchronous puts (requests) may have this many times `SOFTNIC_NET_RMA_DEPTH`
/// pieces in flight: they hold no bounce buffer.
const SHORT_DEPTH_FACTOR: usize = 4;

/// Most data bytes in one request or reply (but puts on our own transport: [`SOCK_PUT_PIECE`]).
pub const MAX_DATA: usize = 256 * 1024;
/// Data bytes of one put request on our own transport: a quarter as many requests,
/// replies and wake-ups per byte as [`MAX_DATA`].
const SOCK_PUT_PIECE: usize = 1 << 20;
/// Pieces of a long get (requests of [`MAX_DATA`]) in flight at once: 2 MiB of replies,
/// about what a socket's buffers hold (see `Engine::get_pieces`).
const GET_WINDOW: usize = 8;
/// Puts and gets of at least this many bytes go as RMA (fi_writemsg/fi_readmsg into the
/// target's registered memory) where the provider can; shorter ones as requests, where
/// one round trip carrying the data costs less than the RMA's own completion round trip.
pub const RMA_MIN: usize = 16 * 1024;
/// The [`RMA_MIN`] of asynchronous puts, which are pipelined: no waiting for an RMA's
/// completion, so only the target's cost counts, and RMA's is lower (the provider lands
/// the data; no request to serve, no reply).
pub const ASYNC_RMA_MIN: usize = 4 * 1024;
/// Most bytes in one RMA operation (bounce buffers of this size are kept for reuse).
/// Longer transfers are several operations in turn: on tcp 1 MiB pieces went faster than
/// 4 MiB ones (their copies stay in cache and fit the socket buffers) or 512 KiB ones.
const RMA_CHUNK: usize = 1 << 20;
/// Bounce buffers kept for reuse.
const RMA_POOL: usize = 2;
/// Low bit of an operation context: an RMA operation (an `Arc<Call>`), not a send or
/// receive context (boxes, so at least 8-byte aligned).
const RMA_TAG: usize = 1;
/// Receive buffers kept posted.
const NRECV: usize = 32;
const HDR: usize = 88;
const MAX_ADDR: usize = 64;
const RECV_LEN: usize = HDR + MAX_ADDR + MAX_DATA + 64;
const MAGIC: u16 = 0x534e; // "SN"
/// Bytes before the address in a published record: node, slot, generation (u32 each),
/// incarnation (u64).
const REC_HEAD: usize = 20;

/// Request and reply kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Op {
    Put = 1,
    Get = 2,
    Amo = 3,
    Store = 4,
    Notify = 5,
    Event = 6,
    Reply = 7,
    Check = 8,
    RegionRead = 9,
    RegionWrite = 10,
    RegionCas = 11,
    RegionGather = 12,
    RegionNotify = 13,
    PutCompound = 14,
    /// Expose a registration for RMA: its remote key and extent.
    Expose = 15,
    /// Target to initiator: an exposed registration ended, drop its window; answered once
    /// the initiator's RMA through it is over (see [`forget_registration`]).
    Revoke = 16,
    /// Run a service handler (`a`: its id) on this process as target ([`crate::rma::Peer::call`]).
    Call = 17,
    /// Look a key up in this node's registry (`a`: the API id; body: the key).
    Lookup = 18,
    /// Are you there?  Answered at once, with nothing ([`Engine::probe`]).
    Ping = 19,
}

impl Op {
    fn from_u8(v: u8) -> Option<Op> {
        Some(match v {
            1 => Op::Put,
            2 => Op::Get,
            3 => Op::Amo,
            4 => Op::Store,
            5 => Op::Notify,
            6 => Op::Event,
            7 => Op::Reply,
            8 => Op::Check,
            9 => Op::RegionRead,
            10 => Op::RegionWrite,
            11 => Op::RegionCas,
            12 => Op::RegionGather,
            13 => Op::RegionNotify,
            14 => Op::PutCompound,
            15 => Op::Expose,
            16 => Op::Revoke,
            17 => Op::Call,
            18 => Op::Lookup,
            19 => Op::Ping,
            _ => return None,
        })
    }
}

/// Fixed header of every message (88 bytes, little-endian on the wire by construction:
/// both ends are the same library on the same architecture family).  The last three
/// words authenticate it (see "Authentication" below): the sender's incarnation, the
/// request's sequence number, the MAC.
#[derive(Clone, Copy, Default, Debug)]
#[repr(C)]
struct Hdr {
    magic: u16,
    op: u8,
    _r: u8,
    status: i32,
    req: u64,
    a: u64,
    b: u64,
    c: u64,
    len: u64,
    src_node: u32,
    src_slot: u32,
    src_gen: u32,
    addr_len: u32,
    src_inc: u64,
    seq: u64,
    mac: u64,
}
const _: () = assert!(std::mem::size_of::<Hdr>() == HDR);
/// Where the sequence number and the MAC sit in a header's bytes.
const SEQ_AT: usize = std::mem::offset_of!(Hdr, seq);
const MAC_AT: usize = std::mem::offset_of!(Hdr, mac);
const _: () = assert!(MAC_AT + 8 == HDR && SEQ_AT + 8 == MAC_AT);

impl Hdr {
    fn bytes(&self) -> [u8; HDR] {
        // SAFETY: a repr(C) struct of integers without padding (size asserted above).
        unsafe { std::mem::transmute_copy(self) }
    }
    fn parse(b: &[u8]) -> Option<Hdr> {
        if b.len() < HDR {
            return None;
        }
        // SAFETY: HDR bytes available; every bit pattern is a valid Hdr.
        let h: Hdr = unsafe { std::ptr::read_unaligned(b.as_ptr() as *const Hdr) };
        (h.magic == MAGIC).then_some(h)
    }
}

// ---- authentication ----------------------------------------------------------------
//
// Every message carries the job's key: its header ends in a MAC, SipHash-2-4 (in-house,
// crate::siphash) under a key derived from the job secret ([`crate::bootstrap::job_secret`])
// over the header's first 80 bytes and the receiver's identity (node, slot, generation,
// incarnation).  A receiver serves, or takes as a reply, only a message whose MAC it
// recomputes; anything else (garbage, truncated headers, headers forged without the key,
// headers of another job, messages meant for another process or an earlier process in
// the same slot) is dropped and counted ([`auth_drops`], `SOFTNIC_NET_STATS`) before any
// of it is looked at: no address is inserted for it, no reply sent.
//
// Replay: a request carries a sequence number, counted per target (`Remote::tx_seq`) and
// taken just before the send is posted; the target keeps, per sender incarnation, the
// highest number seen and which of the [`REPLAY_WINDOW`] numbers below it it has served,
// and drops a number seen before or older than the window.  Messages can reach the target
// a little out of order (several threads sending, rendezvous of long messages), hence the
// window rather than "next number only".  Replies need none: each answers a request id
// that this process never reuses and that stops being pending at its first reply, and
// the MAC binds it to this process's incarnation.  A revocation is a request like the
// others (see [`forget_registration`]).  Bulk RMA goes by the provider's remote keys, not by messages: they
// are drawn from a keyed PRF (`Engine::rkey_for`), so an outsider cannot guess one.
//
// Why this mechanism: a MAC over the fixed header costs ~50 ns per message at each end
// and no round trip (per-peer keys agreed at connection would need a handshake on first
// contact for the same protection here, since the secret is already shared by the job).
// What it protects against: a process outside the job that reaches the engine's port
// (forged requests, requests of another job, replays of captured ones).  What it does not:
// an observer on the path reads the traffic (nothing is encrypted) and could alter a
// message's data, which the MAC does not cover (the header it covers says what is
// accessed, where and how much); and a process of the same Unix user can read the secret
// from /proc/PID/environ or the job's memory anyway.  Nor the provider's own parsing below the engine:
// garbage to a `tcp;ofi_rxm` port is refused by the provider (c-tests/net.list netauth
// tests), but libfabric 1.17's `udp;ofi_rxd` crashed (SIGSEGV inside libfabric) on raw
// garbage datagrams sent to its port: use it only where outsiders cannot reach the port.

/// How many request numbers below the highest seen a target still accepts (once each).
/// Wide: providers deliver out of order (`udp;ofi_rxd` retransmits a lost datagram late,
/// under load after thousands of later ones), and a genuine request taken for a replay
/// gets no answer (its sender then takes the target for dead: seen once with 4096 in
/// data_threads over rxd).  8 KiB of bits per sender.
const REPLAY_WINDOW: u64 = 65536;

/// Why a message was dropped (index into `Engine::drops`).
#[derive(Clone, Copy, Debug)]
enum Refused {
    /// Shorter than a header, wrong magic, inconsistent lengths, unknown kind.
    Malformed = 0,
    /// The MAC does not match: no key, another job's key, meant for another process.
    Forged = 1,
    /// A request number served before, or older than the replay window.
    Replayed = 2,
}

/// A process as the MAC names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct PeerId {
    node: u32,
    slot: u32,
    gen: u32,
    inc: u64,
}

impl PeerId {
    fn words(&self) -> [u64; 3] {
        [(self.node as u64) << 32 | self.slot as u64, self.gen as u64, self.inc]
    }
}

/// The MAC of the header `h` (its bytes up to the MAC) for receiver `to`.
fn header_mac(key: &crate::siphash::Key, h: &[u8], to: &PeerId) -> u64 {
    let mut w = [0u64; MAC_AT / 8 + 3];
    for (i, c) in h[..MAC_AT].chunks_exact(8).enumerate() {
        w[i] = u64::from_le_bytes(c.try_into().expect("8 bytes"));
    }
    w[MAC_AT / 8..].copy_from_slice(&to.words());
    crate::siphash::hash_words(key, &w)
}

/// A target's record of one sender's request numbers.
struct Replay {
    top: u64,
    seen: Box<[u64; (REPLAY_WINDOW / 64) as usize]>,
}

impl Replay {
    fn new() -> Replay {
        Replay { top: 0, seen: Box::new([0; (REPLAY_WINDOW / 64) as usize]) }
    }

    /// Takes `seq` if it was not seen and is not too old.
    fn accept(&mut self, seq: u64) -> bool {
        let bit = |s: u64| ((s % REPLAY_WINDOW / 64) as usize, 1u64 << (s % 64));
        if seq > self.top {
            if seq - self.top >= REPLAY_WINDOW {
                self.seen.fill(0);
            } else {
                for s in self.top + 1..seq {
                    let (i, b) = bit(s);
                    self.seen[i] &= !b;
                }
            }
            self.top = seq;
            let (i, b) = bit(seq);
            self.seen[i] |= b;
            return true;
        }
        if seq == 0 || self.top - seq >= REPLAY_WINDOW {
            return false;
        }
        let (i, b) = bit(seq);
        let fresh = self.seen[i] & b == 0;
        self.seen[i] |= b;
        fresh
    }
}

/// A process that sent us requests: where replies go, and its request numbers.
struct Sender {
    addr: fi_addr_t,
    replay: Mutex<Replay>,
}

fn err_code(e: Error) -> i32 {
    match e {
        Error::InvalidArg => 1,
        Error::InvalidHandle => 2,
        Error::StaleHandle => 3,
        Error::OutOfBounds => 4,
        Error::Permission => 5,
        Error::ProtectionDomain => 6,
        Error::Misaligned => 7,
        Error::NoSpace => 8,
        Error::Again => 9,
        Error::Timeout => 10,
        Error::NotFound => 11,
        Error::Exists => 12,
        Error::PeerDead => 13,
        Error::Unsupported => 14,
        Error::Version => 15,
        Error::Bootstrap => 16,
        Error::Os(_) => 17,
    }
}

fn code_err(c: i32) -> Error {
    match c {
        1 => Error::InvalidArg,
        2 => Error::InvalidHandle,
        3 => Error::StaleHandle,
        4 => Error::OutOfBounds,
        5 => Error::Permission,
        6 => Error::ProtectionDomain,
        7 => Error::Misaligned,
        8 => Error::NoSpace,
        9 => Error::Again,
        10 => Error::Timeout,
        11 => Error::NotFound,
        12 => Error::Exists,
        13 => Error::PeerDead,
        14 => Error::Unsupported,
        15 => Error::Version,
        16 => Error::Bootstrap,
        _ => Error::Os(libc::EIO),
    }
}

/// A process on another node (or, with `SOFTNIC_ENGINE=net`, on this one).
pub struct Remote {
    pub node: u32,
    pub id: ProcId,
    /// Its incarnation (random, published with its address): MACs name it.
    inc: u64,
    /// The number of our next request to it (see "Authentication").
    tx_seq: AtomicU64,
    /// Held from taking a request number to posting the request, so that requests
    /// reach the provider (which keeps each peer's messages in order) in number order.
    /// A thread preempted in between would otherwise let thousands of later numbers
    /// pass it (seen with udp;ofi_rxd on a loaded machine) and fall out of the window.
    send_lock: Mutex<()>,
    addr: fi_addr_t,
    dead: AtomicBool,
    /// Its registrations exposed to us for RMA, and our RMA through them.
    windows: Mutex<Windows>,
    /// When the last liveness probe was sent (CLOCK_MONOTONIC_COARSE, ns), and whether
    /// it is still unanswered ([`Engine::probe`]).
    probed_ns: AtomicU64,
    probing: AtomicBool,
    /// When the first probe still unanswered was due (0: the last one was answered).
    silent_since_ns: AtomicU64,
}

/// A peer's registrations exposed to us, as one [`Remote`] keeps them (see "Revocation"
/// at [`forget_registration`]).
#[derive(Default)]
struct Windows {
    /// (key, pd) -> window.
    by_key: HashMap<(u64, u64), Window>,
    /// Our RMA operations in flight per registration key ([`WindowUse`]).
    busy: HashMap<u64, u32>,
    /// Revocations answered once their key's operations are over.
    owed: Vec<OwedAnswer>,
    /// Revocations received so far: a window asked for before one arrived is not kept
    /// (its answer may have been overtaken by the revocation).
    revocations: u64,
}

/// The reply to a peer's Op::Revoke, held back while our RMA through the window runs.
struct OwedAnswer {
    key: u64,
    to: fi_addr_t,
    req: u64,
    who: PeerId,
}

/// One RMA operation of ours through a peer's window (counted in [`Windows::busy`]): the
/// peer closes its provider registration only once none is left (see "Revocation").
struct WindowUse {
    to: Arc<Remote>,
    key: u64,
}

impl Drop for WindowUse {
    fn drop(&mut self) {
        let owed: Vec<OwedAnswer> = {
            let mut w = self.to.windows.lock().unwrap_or_else(|e| e.into_inner());
            let left = w.busy.get_mut(&self.key).map(|n| {
                *n -= 1;
                *n
            });
            if left != Some(0) {
                return;
            }
            w.busy.remove(&self.key);
            let (done, keep) = std::mem::take(&mut w.owed).into_iter().partition(|o| o.key == self.key);
            w.owed = keep;
            done
        };
        if let Some(e) = running() {
            for o in owed {
                e.answer_revoke(o);
            }
        }
    }
}

/// A peer's registration as its RMA target: extent, access and remote key.
#[derive(Clone, Copy, Debug)]
struct Window {
    base: u64,
    len: u64,
    writable: bool,
    rkey: u64,
}

impl Remote {
    pub fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Relaxed)
    }

    fn peer_id(&self) -> PeerId {
        PeerId { node: self.node, slot: self.id.slot, gen: self.id.gen, inc: self.inc }
    }
}

/// A request waiting for its reply, or an RMA operation waiting for its completion.
struct Call {
    to: Arc<Remote>,
    done: Mutex<Option<(i32, Vec<u8>)>>,
    cv: Condvar,
    /// Threads asleep on `cv` (changed and read with `done` locked).  A waiter mostly
    /// polls `done` and takes its own reply (see [`Engine::reply`]): signalling a condvar
    /// nobody sleeps on is a futex system call for nothing.
    sleepers: AtomicUsize,
    /// An RMA operation's bounce buffer: the provider reads or writes it until the
    /// completion, which may come after the waiter gave up (timeout, peer death), so
    /// the call (kept alive by the context the provider holds) owns it, not the caller.
    bounce: Mutex<Vec<u8>>,
    /// A piece of an asynchronous operation: completing it may complete the operation
    /// (nobody waits on `done` then).
    piece: Option<Piece>,
}

impl Call {
    fn new(to: &Arc<Remote>, bounce: Vec<u8>, piece: Option<Piece>) -> Call {
        Call { to: to.clone(), done: Mutex::new(None), cv: Condvar::new(), sleepers: AtomicUsize::new(0), bounce: Mutex::new(bounce), piece }
    }

    /// Completes the call with `status` and its data, waking whoever sleeps on it.
    fn complete(&self, status: i32, data: Vec<u8>) {
        let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        *done = Some((status, data));
        // Read under the lock: a waiter counts itself in under it before it sleeps.
        let asleep = self.sleepers.load(Ordering::Relaxed) > 0;
        drop(done);
        if asleep {
            self.cv.notify_all();
        }
    }
}

/// Completion of an asynchronous operation ([`Engine::put_async`], [`Engine::get_async`]):
/// run once, by whichever thread handles the last piece's completion (or the peer's
/// death), with no engine lock held.  It must not wait for another remote operation.
pub type Done = Box<dyn FnOnce(Result<()>) + Send>;

/// An asynchronous operation in pieces.
struct Async {
    remaining: AtomicUsize,
    /// The first error code (0: none).
    error: std::sync::atomic::AtomicI32,
    done: Mutex<Option<Done>>,
}

/// One piece of an [`Async`] operation.
struct Piece {
    op: Arc<Async>,
    req: u64,
    /// A read's destination in the caller's memory (address, length): the bounce buffer
    /// is copied there when the piece completes.
    read_into: Option<(usize, usize)>,
    /// Set by whoever finishes the piece first (its completion, or the peer's death).
    finished: AtomicBool,
    /// When the peer is taken as dead if the piece has not completed (a frozen peer never
    /// acknowledges it: see [`Engine::expire_async`]).
    deadline: Instant,
}

impl Piece {
    /// Finishes this piece with `status` (0: success); the last piece completes the
    /// operation.  Only the first call counts.
    fn finish(&self, status: i32, bounce: &[u8]) {
        if self.finished.swap(true, Ordering::AcqRel) {
            return;
        }
        // Its place in the depth limit is free now, even if a dead peer's provider never
        // hands the piece back.
        if let Some(e) = running() {
            e.async_in_flight.fetch_sub(1, Ordering::AcqRel);
        }
        if status == 0 {
            if let Some((addr, len)) = self.read_into {
                // SAFETY: the caller of get_async keeps its destination valid until the
                // operation completes, which is not before this piece is done.
                unsafe { std::ptr::copy_nonoverlapping(bounce.as_ptr(), addr as *mut u8, len.min(bounce.len())) };
            }
        } else {
            let _ = self.op.error.compare_exchange(0, status, Ordering::AcqRel, Ordering::Acquire);
        }
        if self.op.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            let done = self.op.done.lock().unwrap_or_else(|e| e.into_inner()).take();
            let err = self.op.error.load(Ordering::Acquire);
            if let Some(d) = done {
                d(if err == 0 { Ok(()) } else { Err(code_err(err)) });
            }
        }
    }
}

/// An RMA operation completed (`err` 0) or failed: completes its call as a reply does,
/// handing the bounce buffer back as the reply's data (a piece of an asynchronous
/// operation finishes that piece instead, and its buffer goes back to the pool).
fn rma_done(ctx: *mut c_void, err: i32) {
    // SAFETY: RMA contexts are `Arc::into_raw(call) | RMA_TAG` (see `Engine::rma_one`), and the
    // provider reports each operation once: this takes back the reference it held.
    let call = unsafe { Arc::from_raw((ctx as usize & !RMA_TAG) as *const Call) };
    let data = std::mem::take(&mut *call.bounce.lock().unwrap_or_else(|e| e.into_inner()));
    let status = if err == 0 { 0 } else { err_code(Error::Os(libc::EIO)) };
    if let Some(p) = &call.piece {
        p.finish(status, &data);
        if let Some(e) = running() {
            e.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&p.req);
            e.give_back(data);
        }
        return;
    }
    call.complete(status, data);
}

/// What a posted send owns until its completion.
struct SendCtx {
    buf: Vec<u8>,
    /// The target of the request it carries (None for replies).
    to: Option<Arc<Remote>>,
}

struct RecvBuf {
    data: Vec<u8>,
}

/// The raw libfabric objects (owned for the life of the process).
struct Objs {
    fabric: *mut ofi::fid_fabric,
    domain: *mut ofi::fid_domain,
    /// The provider does RMA (fi_writemsg/fi_readmsg, fi_mr_reg).
    rma: bool,
    /// RMA target addresses are virtual addresses (FI_MR_VIRT_ADDR), not offsets into
    /// the registration.
    virt_addr: bool,
    /// The completion queue's wait descriptor (FI_WAIT_FD), or -1 (then fi_cq_sread).
    wait_fd: i32,
    info: *mut fi_info,
    ep: *mut ofi::fid_ep,
    av: *mut ofi::fid_av,
    cq: *mut ofi::fid_cq,
}

struct Fi {
    /// libfabric itself; None with our own transport, which never loads it (then only
    /// its error texts are missing from messages).
    lib: Option<Lib>,
    fabric: *mut ofi::fid_fabric,
    domain: *mut ofi::fid_domain,
    rma: bool,
    virt_addr: bool,
    wait_fd: i32,
    info: *mut fi_info,
    ep: *mut ofi::fid_ep,
    av: *mut ofi::fid_av,
    cq: *mut ofi::fid_cq,
}

// SAFETY: libfabric objects opened with FI_THREAD_SAFE may be used from any thread.
unsafe impl Send for Fi {}
unsafe impl Sync for Fi {}

pub struct Engine {
    fi: Fi,
    /// Our own transport (`SOFTNIC_NET_TRANSPORT=sockets`, crate::sock) instead of
    /// libfabric's messages; `fi` then holds no libfabric object (no RMA) and its wait
    /// descriptor is the transport's epoll set.
    sock: Option<crate::sock::Sock>,
    /// Our endpoint name (what peers insert into their address vector).
    name: Vec<u8>,
    pub node: u32,
    me: ProcId,
    provider: String,
    inject_size: usize,
    timeout: Duration,
    spin: Duration,
    /// How long a thread waiting for a reply polls the completion queue itself.
    poll_reply: Duration,
    /// What the progress thread sleeps on: an epoll set holding the provider's wait
    /// descriptor, which application threads take out while they drive the completion
    /// queue themselves ([`Engine::polling`]); -1 without a wait descriptor.
    sleep_fd: i32,
    /// An eventfd in `sleep_fd` (data 1) that wakes the progress thread when a lease
    /// starts ([`Engine::lease`]); -1 without one (no leases then).
    kick_fd: i32,
    /// Who drives the completion queue besides the progress thread: decides whether its
    /// sleep watches the provider's wait descriptor.
    owners: Mutex<CqOwners>,
    /// `SOFTNIC_NET_LEASE_US` in nanoseconds: the longest lease (0: no leases).
    lease_max_ns: u64,
    /// The length of the next lease, adapted between [`LEASE_MIN_NS`] and `lease_max_ns`
    /// ([`Engine::adapt_lease`]).
    lease_len_ns: AtomicU64,
    /// The lease end the progress thread last slept towards (0: none).
    lease_slept_to: AtomicU64,
    /// When traffic last waited for a lease to end (fine clock, ns).
    lease_missed_at: AtomicU64,
    /// Application threads inside an event poll now ([`poll_for_events`]): a lease that
    /// runs out meanwhile is not over (the thread is serving and will poll again).
    in_poll: AtomicUsize,
    /// End of the current lease (CLOCK_MONOTONIC ns), renewed by every event poll.
    lease_until: AtomicU64,
    /// `owners.leased`, readable without the lock (the poll fast path).
    leased: AtomicBool,

    remotes: Mutex<HashMap<(u32, u32), Arc<Remote>>>,
    /// Held while a new peer's address is looked up and inserted (see `remote`).
    first_contact: Mutex<()>,
    /// The job's published endpoints: (node, slot) -> (generation, address), and which
    /// ranks have been read into it.
    directory: Mutex<Directory>,
    /// Initiators seen in authentic requests: their address in our vector, request numbers.
    senders: Mutex<HashMap<PeerId, Arc<Sender>>>,
    /// Our incarnation: random, published with our address, named by the MACs of what
    /// peers send us (so nothing sent to an earlier process in our slot is taken).
    inc: u64,
    /// Key of the headers' MACs, derived from the job secret.
    mac_key: crate::siphash::Key,
    /// Key of the PRF our RMA remote keys come from.
    rkey_key: crate::siphash::Key,
    /// Messages dropped, by [`Refused`] reason.
    drops: [AtomicU64; 3],
    /// Sends and RMA operations the provider failed ([`failed_completions`]).
    failed: AtomicU64,
    pending: Mutex<HashMap<u64, Arc<Call>>>,
    next_req: AtomicU64,
    /// Our registrations exposed for RMA, by key.
    exposed: Mutex<HashMap<u64, Exposed>>,
    next_rkey: AtomicU64,
    /// Most bytes in one RMA operation (the provider's message size, at most RMA_CHUNK).
    max_rma: usize,
    /// RMA bounce buffers kept for reuse (fresh ones would fault their pages in each time).
    bounces: Mutex<Vec<Vec<u8>>>,
    /// Pieces of asynchronous operations in flight (at most `async_max`).
    async_in_flight: AtomicUsize,
    async_max: usize,
    /// Replies the progress thread holds back ([`Engine::defer_reply`]), and their count
    /// (read without the lock on the application's paths).
    deferred: Mutex<Vec<DeferredReply>>,
    deferred_n: AtomicUsize,
    /// How long the progress thread holds a reply back at most ([`DEFER_NS`]).
    defer: Duration,
    /// The progress thread's last wake-up preempted a thread of this process (its
    /// involuntary context switches grew while it slept): the application was running on
    /// its core, so replies are held back for it ([`Engine::defer_reply`]).
    woke_over_app: AtomicBool,
    /// [`involuntary_switches`] after the progress thread's last wake-up.
    switches_seen: std::sync::atomic::AtomicI64,
    /// Until when application threads may have replies held ([`Engine::hold_reply`]):
    /// the progress thread's sleeps last at most [`HOLD_CAP_NS`] till then.
    hold_active_until: AtomicU64,
    /// Application threads hold no replies before this time (one had to be sent by the
    /// progress thread's clock: the program does not answer at once).
    hold_off_until: AtomicU64,
    /// The progress thread is in (or about to start) a sleep longer than [`HOLD_CAP_NS`].
    sleeping_long: AtomicBool,
    /// Held replies by how they went: in front of another message to the same process,
    /// on their own (an idle poll, a sleep, [`HOLD_MAX`]), by the progress thread's clock.
    held_went: [AtomicU64; 3],
    /// Blocking calls that found no lease ([`Engine::polling`]): each turned the progress
    /// thread's watch of the provider off and on again.
    calls_unleased: AtomicU64,
}

/// A reply held back (by the progress thread, or on our own transport by an application
/// thread): its bytes (sealed when sent), whom to, since when, and by which kind of thread.
struct DeferredReply {
    to: fi_addr_t,
    buf: Vec<u8>,
    who: PeerId,
    at_ns: u64,
    by_app: bool,
}

/// Replies an application thread holds for one address before they go at once (in one
/// send): a stream of puts keeps its replies flowing ([`Engine::hold_reply`]).
const HOLD_MAX: usize = 16;
/// Only replies to puts of at most this many bytes are held by application threads: a
/// bulk transfer's pieces stream, their replies are what keeps the stream going.
const HOLD_BYTES_MAX: usize = 4096;
/// While application threads hold replies, the progress thread sleeps at most this long,
/// so a reply whose holder left the library goes within it ([`Engine::hold_reply`]).
const HOLD_CAP_NS: u64 = 1_000_000;
/// How long after the last reply an application thread held the progress thread keeps
/// its sleeps that short.
const HOLD_ACTIVE_NS: u64 = 10_000_000;

/// The longest a reply to a short put waits for the application before the progress
/// thread sends it itself ([`Engine::defer_reply`]).
const DEFER_NS: u64 = 30_000;

thread_local! {
    /// Set on the engine's progress thread.
    static ON_PROGRESS_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// How long a revocation's send is tried again while the provider has no room for it
/// (see [`Engine::revoke_at_holders`]).
const REVOKE_PATIENCE: Duration = Duration::from_millis(2);

/// One of our registrations registered with the provider for peers' RMA.
struct Exposed {
    /// The `fid_mr` (an address: the map must be Send).
    mr: usize,
    rkey: u64,
    /// The initiators given its window, told when it ends.
    holders: Vec<(fi_addr_t, PeerId)>,
}

/// The local side of an RMA operation.
enum Rma<'a> {
    Write(&'a [u8]),
    Read(&'a mut [u8]),
}

impl Rma<'_> {
    fn len(&self) -> usize {
        match self {
            Rma::Write(s) => s.len(),
            Rma::Read(d) => d.len(),
        }
    }
}

#[derive(Default)]
struct Directory {
    /// (node, slot) -> (generation, incarnation, address).
    by_proc: HashMap<(u32, u32), (u32, u64, Vec<u8>)>,
    read: Vec<bool>,
    /// Every rank's record has been read.
    complete: bool,
}

static ENGINE: OnceCell<Engine> = OnceCell::new();
/// 0: not decided, 1: deciding, 2: decided (see [`on_fabric_ready`]).
static STARTING: AtomicU8 = AtomicU8::new(0);

/// The configured engine choice.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    Auto,
    Net,
    Shm,
}

pub fn mode() -> Mode {
    match crate::env::get_str("SOFTNIC_ENGINE").trim().to_ascii_lowercase().as_str() {
        "net" => Mode::Net,
        "shm" => Mode::Shm,
        _ => Mode::Auto,
    }
}

/// Set by an API library whose programs hand the launcher connection to their own MPI
/// (uTofu): the automatic engine choice then never opens PMI (a second client on the
/// same PMI_FD would interleave with MPI's), and the job counts as one node unless
/// `SOFTNIC_ENGINE=net` says otherwise.
static PMI_IS_THE_APPLICATIONS: AtomicBool = AtomicBool::new(false);

/// See [`PMI_IS_THE_APPLICATIONS`]; call before the fabric is first used.
pub fn leave_pmi_to_application() {
    PMI_IS_THE_APPLICATIONS.store(true, Ordering::Relaxed);
}

/// For API libraries whose programs are MPI programs (uTofu), called once when the
/// library is loaded, before the program's `main` and so before its `MPI_Init`.  Where
/// the process has MPI and a launcher connection, the fabric has set up the PMI relay
/// when it was loaded ([`crate::pmi_relay`]), so our libraries and MPI share it.  Then,
/// when the launcher spreads the job over several nodes (or `SOFTNIC_ENGINE=net`), it
/// starts the engine, publishes its address, fences (every rank loads the library, so
/// every rank takes part) and reads every rank's address.  `learnt(rank, node of each
/// rank)` is told the job first.  Without a launcher, or under `SOFTNIC_ENGINE=shm`
/// (snrun), it does nothing; without MPI it leaves PMI to be opened when first needed.
/// A library loaded with dlopen after `MPI_Init` must not call this.
pub fn start_before_application(learnt: impl FnOnce(u32, &[u32])) {
    if mode() == Mode::Shm || !crate::pmi::launcher_present() {
        leave_pmi_to_application();
        return;
    }
    if !crate::pmi_relay::relaying() {
        // No MPI here (or no relay possible): keep away from the connection until a
        // library call needs it, as before.
        leave_pmi_to_application();
        return;
    }
    let nodes = crate::bootstrap::num_nodes().unwrap_or(1);
    if let Some((rank, map)) = crate::pmi::known_job(|j| (j.rank, (0..j.size).map(|r| j.node_id(r).unwrap_or(0)).collect::<Vec<u32>>())) {
        learnt(rank, &map);
    }
    if mode() == Mode::Net || nodes > 1 {
        // The engine needs the job secret, which rank 0 hands out through the KVS unless
        // the launcher set it; hydra's proxies hold puts until a barrier, so rank 0 draws
        // it first and every rank fences (every rank loads the library: collective).
        if std::env::var_os(crate::bootstrap::SECRET_ENV).is_none() {
            if crate::bootstrap::rank() == Ok(0) {
                let _ = crate::bootstrap::job_secret();
            }
            let _ = crate::bootstrap::kvs_fence();
        }
        // Setting the node fabric up starts the engine for such a job (on_fabric_ready).
        if let Err(err) = crate::node::get() {
            crate::sn_warn!("network engine", "no node fabric: {}", err);
            return;
        }
        match running() {
            Some(e) => {
                if let Err(err) = crate::bootstrap::kvs_fence().and_then(|_| e.read_all()) {
                    crate::sn_warn!("network engine", "exchanging addresses at load time failed: {}", err);
                }
            }
            None => crate::sn_warn!("network engine", "not started: other nodes will be unreachable"),
        }
    }
}

/// Sets the hooks the layers below call the engine through (ring, mem, node never name
/// it): run when the library is loaded, before any of them can be called.
extern "C" fn set_hooks() {
    crate::node::ON_READY.set(|()| on_fabric_ready());
    crate::ring::BEFORE_SLEEP.set(|()| stop_polling_for_events());
    crate::mem::ON_DEREGISTER.set(forget_registration);
}

#[used]
#[link_section = ".init_array"]
static SET_HOOKS: extern "C" fn() = set_hooks;

/// Called once the node fabric is up: starts the engine when the job needs it (several
/// nodes, or `SOFTNIC_ENGINE=net`), so that our address is published before peers look.
pub fn on_fabric_ready() {
    if STARTING.load(Ordering::Acquire) != 0 || STARTING.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire).is_err() {
        return;
    }
    let wanted = match mode() {
        Mode::Shm => false,
        Mode::Net => true,
        Mode::Auto if PMI_IS_THE_APPLICATIONS.load(Ordering::Relaxed) => false,
        Mode::Auto => crate::bootstrap::num_nodes().map_or(false, |n| n > 1),
    };
    if wanted {
        if let Err(e) = engine() {
            crate::sn_warn!("network engine", "not started: {}", e);
        }
    }
    STARTING.store(2, Ordering::Release);
}

/// The running engine (started, with its progress thread, on first call).
pub fn engine() -> Result<&'static Engine> {
    let e = ENGINE.get_or_try_init(Engine::start)?;
    e.spawn_progress();
    Ok(e)
}

/// The engine if it runs (never starts it).
pub fn running() -> Option<&'static Engine> {
    ENGINE.get()
}

/// Drives the network engine once from an application thread that polls for events (a
/// CQ poll that found nothing): traffic waiting for this process is served at once
/// instead of when the progress thread wakes.  False when there was nothing (or no
/// engine).
pub fn poll() -> bool {
    running().is_some_and(|e| e.serve_or_flush())
}

/// [`poll`] from a thread that polls for what peers send it (remote events, notices,
/// collective results) and will likely poll again soon: it also takes the completion
/// queue from the progress thread for a while ([`Engine::lease`]).
pub fn poll_for_events() -> bool {
    let Some(e) = running() else { return false };
    // Reached from uTofu's polls, which a thread may be cancelled asynchronously in: held
    // off before any frame with something to drop (the lease's lock, the engine's).
    crate::cancel::masked(|| {
        e.lease();
        e.in_poll.fetch_add(1, Ordering::Relaxed);
        let served = e.serve_or_flush();
        e.in_poll.fetch_sub(1, Ordering::Relaxed);
        served
    })
}

/// The calling thread stops polling for events: it is about to sleep (on a ring, until a
/// peer's event wakes it), so the progress thread must watch the provider again now, not
/// when the lease runs out (see [`Engine::lease`]).  Called by every ring sleep.
pub fn stop_polling_for_events() {
    if let Some(e) = running() {
        e.about_to_sleep();
    }
}

/// Our registration `key` ended (called by [`crate::mem::deregister`] once its generation
/// moved on): if it was exposed for RMA, closes its provider registration, so that an
/// access through a window a peer still holds is refused by the provider (the peer then
/// falls back to a request, which reports `StaleHandle`).
///
/// **Revocation.**  The tcp provider answers an RMA to a closed registration by resetting
/// the connection, and what else was in flight on it is lost: requests, replies, whose
/// waiters then take a live peer for dead after `SOFTNIC_NET_TIMEOUT_MS` (seen as a
/// SISCI importer's transfers racing its owner's SCI_FLAG_FORCE_REMOVE).  So the holders
/// of the window are told first (Op::Revoke, a request): each drops the window at once
/// and answers when its RMA through it is over ([`WindowUse`]); a window asked for
/// before the revocation arrived is not kept ([`Windows::revocations`]).  Only then is the
/// provider registration closed, so no RMA meets a closed key.  Ending an exposed
/// registration costs a round trip per holder, as it returns only when no peer can write
/// it any more.  A holder that exited is not waited for: the provider cannot connect to
/// it and says "try again", and after [`REVOKE_PATIENCE`] of that it is left out.  One
/// that is alive but silent for the timeout is taken as dead, as for any request.  On
/// the progress thread, which must not wait, the registration is closed first and the
/// holders are told without waiting: the race remains there (a service handler ending a
/// registration).  Remote keys are never reused: we request ever-growing ones, and
/// libfabric's own allocator counts up.
pub fn forget_registration(key: crate::mem::MemKey) {
    let Some(e) = running() else { return };
    // libfabric's system calls are cancellation points: not to be unwound halfway.
    let _masked = crate::cancel::Masked::new();
    let Some(x) = e.exposed.lock().unwrap_or_else(|e| e.into_inner()).remove(&key.to_u64()) else { return };
    let wait = !ON_PROGRESS_THREAD.with(|p| p.get());
    if wait {
        e.revoke_at_holders(key.to_u64(), &x.holders, true);
    }
    let mr = x.mr as *mut ofi::fid_mr;
    // SAFETY: an MR fi_mr_reg returned, removed from `exposed`, so closed exactly once.
    let rc = unsafe {
        match (*(*mr).fid.ops).close {
            Some(f) => f(&mut (*mr).fid),
            None => -libc::ENOSYS,
        }
    };
    if rc != 0 {
        crate::sn_warn!("network engine", "closing the memory registration of {:?} failed: {}", key, lib_strerror(e.fi.lib.as_ref(), rc as i64));
    }
    if !wait {
        e.revoke_at_holders(key.to_u64(), &x.holders, false);
    }
}

/// libfabric's text for error `rc` (its number when libfabric is not loaded).
fn lib_strerror(lib: Option<&Lib>, rc: i64) -> String {
    lib.map_or_else(|| format!("error {}", rc.unsigned_abs()), |l| l.strerror(rc))
}

/// Does a peer at `node` (the process `id` there) go through the network engine?
pub fn carries(node: u32, id: ProcId) -> bool {
    let Some(e) = running() else { return false };
    if node != e.node {
        return true;
    }
    mode() == Mode::Net && !(id.slot == e.me.slot && id.gen == e.me.gen)
}

fn to_err(lib: Option<&Lib>, what: &str, rc: i64) -> Error {
    crate::sn_warn!("network engine", "{} failed: {}", what, lib_strerror(lib, rc));
    Error::Os(libc::EIO)
}

impl Engine {
    fn start() -> Result<Engine> {
        let n = crate::node::get()?;
        let me = n.proc_id();
        let rank = crate::bootstrap::rank().unwrap_or(0);
        let node = crate::bootstrap::node_id(rank).unwrap_or(0);
        // Without the job's key nothing could be authenticated: no engine then.
        let secret = crate::bootstrap::job_secret().inspect_err(|e| crate::sn_warn!("network engine", "no job secret: {}", e))?;
        let job_key = crate::siphash::Key::from_bytes(&secret);
        let local = all_ranks_here();
        let (fi, sock, name, provider, inject_size, max_msg) = if own_transport() {
            let sock = crate::sock::Sock::open(local)?;
            let none = std::ptr::null_mut();
            // libfabric is not loaded at all (its providers' constructors probe hardware).
            let fi = Fi { lib: None, fabric: none as _, domain: none as _, rma: false, virt_addr: false, wait_fd: sock.wait_fd(), info: none as _, ep: none as _, av: none as _, cq: none as _ };
            let name = sock.name();
            (fi, Some(sock), name, String::from("sockets"), crate::sock::MAX_FRAME, crate::sock::MAX_FRAME)
        } else {
            let lib = Lib::open().map_err(|m| {
                crate::sn_warn!("network engine", "{}", m);
                Error::Unsupported
            })?;
            // SAFETY: the calls below follow libfabric's documented object life cycle; every
            // pointer passed is either ours or one libfabric returned.
            let o = unsafe { open_endpoint(&lib, local, ofi::FI_MSG | ofi::FI_RMA | ofi::FI_READ | ofi::FI_WRITE | ofi::FI_REMOTE_READ | ofi::FI_REMOTE_WRITE)? };
            // SAFETY: o.info is the fi_info the endpoint was made from, alive with it.
            let provider = unsafe { provider_name(&*o.info) };
            let fi = Fi { lib: Some(lib), fabric: o.fabric, domain: o.domain, rma: o.rma && rma_wanted(&provider), virt_addr: o.virt_addr, wait_fd: o.wait_fd, info: o.info, ep: o.ep, av: o.av, cq: o.cq };
            let mut name = vec![0u8; 256];
            let mut len = name.len();
            // SAFETY: fi.ep is an enabled endpoint; getname writes at most `len` bytes.
            let rc = unsafe {
                let cm = (*fi.ep).cm;
                match (*cm).getname {
                    Some(f) => f(&mut (*fi.ep).fid, name.as_mut_ptr() as *mut c_void, &mut len),
                    None => -libc::ENOSYS,
                }
            };
            if rc != 0 || len > MAX_ADDR {
                return Err(to_err(fi.lib.as_ref(), "fi_getname", rc as i64));
            }
            name.truncate(len);
            // SAFETY: info is the fi_info the endpoint was made from.
            let (inject_size, max_msg) = unsafe {
                let info = &*fi.info;
                let inj = if info.tx_attr.is_null() { 0 } else { (*info.tx_attr).inject_size };
                let max = if info.ep_attr.is_null() { 0 } else { (*info.ep_attr).max_msg_size };
                (inj, max)
            };
            (fi, None, name, provider, inject_size, max_msg)
        };
        let (sleep_fd, kick_fd) = sleep_set(fi.wait_fd);
        let e = Engine {
            fi,
            sock,
            name,
            node,
            me,
            provider,
            inject_size,
            timeout: Duration::from_millis(crate::env::get_u64("SOFTNIC_NET_TIMEOUT_MS").max(1)),
            spin: Duration::from_micros(crate::env::get_u64("SOFTNIC_NET_SPIN_US")),
            poll_reply: Duration::from_micros(crate::env::get_u64("SOFTNIC_NET_POLL_US")),
            sleep_fd,
            kick_fd,
            owners: Mutex::new(CqOwners::default()),
            lease_max_ns: crate::env::get_u64("SOFTNIC_NET_LEASE_US").saturating_mul(1000),
            lease_len_ns: AtomicU64::new(crate::env::get_u64("SOFTNIC_NET_LEASE_US").saturating_mul(1000)),
            lease_slept_to: AtomicU64::new(0),
            lease_missed_at: AtomicU64::new(0),
            in_poll: AtomicUsize::new(0),
            lease_until: AtomicU64::new(0),
            leased: AtomicBool::new(false),

            remotes: Mutex::new(HashMap::new()),
            first_contact: Mutex::new(()),
            directory: Mutex::new(Directory::default()),
            senders: Mutex::new(HashMap::new()),
            inc: random_u64()?,
            mac_key: job_key.derive(b"softnic network engine: header MAC"),
            rkey_key: job_key.derive(b"softnic network engine: RMA keys"),
            drops: Default::default(),
            failed: AtomicU64::new(0),
            pending: Mutex::new(HashMap::new()),
            next_req: AtomicU64::new(1),
            exposed: Mutex::new(HashMap::new()),
            next_rkey: AtomicU64::new(1),
            max_rma: if max_msg == 0 { RMA_CHUNK } else { max_msg.min(RMA_CHUNK) },
            bounces: Mutex::new(Vec::new()),
            async_in_flight: AtomicUsize::new(0),
            async_max: (crate::env::get_u64("SOFTNIC_NET_RMA_DEPTH") as usize).max(1),
            deferred: Mutex::new(Vec::new()),
            deferred_n: AtomicUsize::new(0),
            woke_over_app: AtomicBool::new(false),
            switches_seen: std::sync::atomic::AtomicI64::new(0),
            hold_active_until: AtomicU64::new(0),
            hold_off_until: AtomicU64::new(0),
            sleeping_long: AtomicBool::new(false),
            held_went: Default::default(),
            calls_unleased: AtomicU64::new(0),
            // Only a progress thread that sleeps on its epoll set can sleep that briefly.
            defer: if sleep_fd >= 0 { Duration::from_nanos(DEFER_NS) } else { Duration::ZERO },
        };
        if e.sock.is_none() {
            for _ in 0..NRECV {
                e.post_recv(Box::new(RecvBuf { data: vec![0u8; RECV_LEN] }))?;
            }
        }
        // Publish (node, slot, gen, incarnation, address) under our rank.
        let mut rec = Vec::with_capacity(REC_HEAD + e.name.len());
        for w in [node, me.slot, me.gen] {
            rec.extend_from_slice(&w.to_le_bytes());
        }
        rec.extend_from_slice(&e.inc.to_le_bytes());
        rec.extend_from_slice(&e.name);
        crate::bootstrap::kvs_put("net", &rec)?;
        STATS_RANK.store(rank, Ordering::Relaxed);
        // SAFETY: registers a function without arguments; it only sends what is held back.
        unsafe { libc::atexit(send_deferred_at_exit) };
        if crate::env::get_bool("SOFTNIC_NET_STATS") {
            // SAFETY: registers a function without arguments that only reads atomics.
            unsafe { libc::atexit(print_stats_at_exit) };
        }
        crate::sn_info!("network engine", "provider {} node {} slot {} at {} ({} address bytes, RMA {}, inject {} bytes)", e.provider, node, me.slot, if local { "loopback" } else { "the provider's default address" }, e.name.len(), if e.fi.rma { "on" } else { "off" }, e.inject_size);
        Ok(e)
    }

    /// Starts the progress thread (once, after the engine is stored).
    fn spawn_progress(&'static self) {
        static SPAWNED: AtomicBool = AtomicBool::new(false);
        if SPAWNED.swap(true, Ordering::AcqRel) {
            return;
        }
        let _ = std::thread::Builder::new().name("softnic-net".into()).spawn(move || self.progress_loop());
    }

    pub fn provider(&self) -> &str {
        &self.provider
    }

    fn post_recv(&self, b: Box<RecvBuf>) -> Result<()> {
        // libfabric's system calls are cancellation points: not to be unwound halfway.
        let _masked = crate::cancel::Masked::new();
        let raw = Box::into_raw(b);
        loop {
            // SAFETY: the buffer lives until its completion hands the Box back.
            let rc = unsafe {
                let msg = (*self.fi.ep).msg;
                let f = (*msg).recv.ok_or(Error::Unsupported)?;
                f(self.fi.ep, (*raw).data.as_mut_ptr() as *mut c_void, RECV_LEN, std::ptr::null_mut(), ofi::FI_ADDR_UNSPEC, raw as *mut c_void)
            };
            if rc == 0 {
                return Ok(());
            }
            if rc as isize != -ofi::FI_EAGAIN {
                // SAFETY: not posted: ours again.
                drop(unsafe { Box::from_raw(raw) });
                return Err(to_err(self.fi.lib.as_ref(), "fi_recv", rc as i64));
            }
            self.progress_once();
        }
    }

    /// The remote process (node, id): its address read from the KVS on first use
    /// (retried while it has not published), cached afterwards.
    pub fn remote(&'static self, node: u32, id: ProcId, gen_bits: u32) -> Result<Arc<Remote>> {
        let mask = if gen_bits >= 32 { u32::MAX } else { (1u32 << gen_bits) - 1 };
        if let Some(r) = self.remotes.lock().unwrap_or_else(|e| e.into_inner()).get(&(node, id.slot)) {
            if r.id.gen & mask == id.gen & mask {
                return Ok(r.clone());
            }
        }
        // One first contact at a time: threads that reach a new peer together would insert
        // its address twice, and ofi_rxd's address vector refuses the second (it answered 0
        // addresses inserted, and data_threads over udp failed now and then).
        let _first_contact = self.first_contact.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = self.remotes.lock().unwrap_or_else(|e| e.into_inner()).get(&(node, id.slot)) {
            if r.id.gen & mask == id.gen & mask {
                return Ok(r.clone());
            }
        }
        let deadline = Instant::now() + self.timeout;
        let (gen, inc, name) = loop {
            let (found, pending) = self.read_directory(node, id.slot)?;
            if let Some(f) = found {
                break f;
            }
            // Every rank has published and none is that process: it is not in this job
            // (or has left).  Otherwise a peer that comes up late may still publish it.
            if !pending || Instant::now() >= deadline {
                return Err(Error::StaleHandle);
            }
            crate::cancel::nap(Duration::from_millis(5));
        };
        if gen & mask != id.gen & mask {
            return Err(Error::StaleHandle);
        }
        let addr = self.insert_addr(&name)?;
        let r = Arc::new(Remote { node, id: ProcId { slot: id.slot, gen }, inc, tx_seq: AtomicU64::new(1), send_lock: Mutex::new(()), addr, dead: AtomicBool::new(false), windows: Mutex::new(Windows::default()), probed_ns: AtomicU64::new(crate::wait::now_ns()), probing: AtomicBool::new(false), silent_since_ns: AtomicU64::new(0) });
        self.remotes.lock().unwrap_or_else(|e| e.into_inner()).insert((node, id.slot), r.clone());
        Ok(r)
    }

    /// Reads the records of the ranks not read yet; returns the entry of (node, slot) if
    /// known, and whether some rank has not published yet.
    fn read_directory(&self, node: u32, slot: u32) -> Result<(Option<(u32, u64, Vec<u8>)>, bool)> {
        let mut d = self.directory.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = d.by_proc.get(&(node, slot)) {
            return Ok((Some(f.clone()), false));
        }
        let pending = self.read_records(&mut d)?;
        Ok((d.by_proc.get(&(node, slot)).cloned(), pending))
    }

    /// Reads the records of the ranks not read yet into `d`; true while some rank has not
    /// published.
    fn read_records(&self, d: &mut Directory) -> Result<bool> {
        let size = crate::bootstrap::size().unwrap_or(1) as usize;
        if d.complete {
            return Ok(false);
        }
        d.read.resize(size, false);
        let mut pending = false;
        for r in 0..size {
            if d.read[r] {
                continue;
            }
            match crate::bootstrap::kvs_get(r as u32, "net") {
                Ok(rec) if rec.len() > REC_HEAD => {
                    let w = |i: usize| u32::from_le_bytes(rec[i * 4..i * 4 + 4].try_into().expect("4 bytes"));
                    let inc = u64::from_le_bytes(rec[12..20].try_into().expect("8 bytes"));
                    d.by_proc.insert((w(0), w(1)), (w(2), inc, rec[REC_HEAD..].to_vec()));
                    d.read[r] = true;
                }
                Ok(_) => d.read[r] = true, // malformed: nothing to learn from it
                Err(Error::NotFound) => pending = true,
                Err(e) => return Err(e),
            }
        }
        // Everyone's record is known: never ask the launcher again (it may belong to the
        // application by now).
        d.complete = !pending;
        Ok(pending)
    }

    /// Reads every rank's record (after a fence, all are there), so that nothing need be
    /// asked of the launcher later.
    fn read_all(&self) -> Result<()> {
        let mut d = self.directory.lock().unwrap_or_else(|e| e.into_inner());
        if self.read_records(&mut d)? {
            return Err(Error::Bootstrap); // a rank had not published before the fence
        }
        Ok(())
    }

    /// The published processes of node `node` (by slot), and whether some rank has not
    /// published yet.
    fn procs_on(&self, node: u32) -> Result<(Vec<ProcId>, bool)> {
        let mut d = self.directory.lock().unwrap_or_else(|e| e.into_inner());
        let pending = self.read_records(&mut d)?;
        let mut on: Vec<ProcId> = d.by_proc.iter().filter(|((n, _), _)| *n == node).map(|(&(_, slot), &(gen, _, _))| ProcId { slot, gen }).collect();
        on.sort_by_key(|p| p.slot);
        Ok((on, pending))
    }

    fn insert_addr(&self, name: &[u8]) -> Result<fi_addr_t> {
        if let Some(s) = &self.sock {
            return s.insert(name);
        }
        // libfabric's system calls are cancellation points: not to be unwound halfway.
        let _masked = crate::cancel::Masked::new();
        let mut tries = 0;
        loop {
            let mut a: fi_addr_t = ofi::FI_ADDR_UNSPEC;
            // SAFETY: `name` is an endpoint name of this provider; one address is inserted.
            let rc = unsafe {
                let ops = (*self.fi.av).ops;
                let f = (*ops).insert.ok_or(Error::Unsupported)?;
                f(self.fi.av, name.as_ptr() as *const c_void, 1, &mut a, 0, std::ptr::null_mut())
            };
            if rc == 1 {
                return Ok(a);
            }
            tries += 1;
            crate::sn_info!("network engine", "fi_av_insert answered {} (try {})", rc, tries);
            if tries >= 20 {
                return Err(to_err(self.fi.lib.as_ref(), "fi_av_insert", rc as i64));
            }
            crate::cancel::nap(Duration::from_millis(1));
        }
    }

    /// Sends `buf` (a message whose header `seal` completes) to `addr`.  Small messages
    /// are injected (no completion); larger ones are owned by the send until its
    /// completion frees them.
    fn send(&self, addr: fi_addr_t, buf: Vec<u8>, seal: Seal<'_>) -> Result<()> {
        self.send_within(addr, buf, None, true, false, seal)
    }

    /// [`Engine::send`] (of a request to `to`, if any); not `patient`: one attempt,
    /// `Again` when the provider has no room for it now (a connection being made, say).
    /// `tracked`: sent with a completion even when short (never injected), so that a
    /// failure to deliver it is learnt: `to` is then taken as dead at once.
    #[allow(clippy::too_many_arguments)]
    fn send_within(&self, addr: fi_addr_t, buf: Vec<u8>, to: Option<Arc<Remote>>, patient: bool, tracked: bool, seal: Seal<'_>) -> Result<()> {
        self.send_within_tail(addr, buf, &[], to, patient, tracked, seal)
    }

    /// [`Engine::send_within`] of the message `buf` followed by `tail` (gathered by our
    /// own transport; always empty with libfabric, where the caller copies it into `buf`).
    #[allow(clippy::too_many_arguments)]
    fn send_within_tail(&self, addr: fi_addr_t, mut buf: Vec<u8>, tail: &[&[u8]], to: Option<Arc<Remote>>, patient: bool, tracked: bool, seal: Seal<'_>) -> Result<()> {
        // libfabric's system calls are cancellation points: not to be unwound halfway.
        let _masked = crate::cancel::Masked::new();
        match crate::faults::message() {
            crate::faults::Message::Sent => {}
            // Taken as sent: the side that waits for it learns of the loss by its timeout.
            crate::faults::Message::Lost => return Ok(()),
            crate::faults::Message::Late(d) => std::thread::sleep(d),
        }
        let deadline = Instant::now() + self.timeout;
        if let Some(s) = &self.sock {
            return self.send_sock(s, addr, buf, tail, to, patient, deadline, seal);
        }
        debug_assert!(tail.is_empty(), "libfabric sends take one buffer");
        if buf.len() <= self.inject_size && !tracked {
            loop {
                // Sealed anew for each attempt, the number taken and the request posted
                // under the target's send lock (a refused attempt leaves a gap).
                let in_order = seal.lock();
                self.seal_message(&mut buf, &seal);
                // SAFETY: inject copies the bytes before returning.
                let rc = unsafe {
                    let msg = (*self.fi.ep).msg;
                    let f = (*msg).inject.ok_or(Error::Unsupported)?;
                    f(self.fi.ep, buf.as_ptr() as *const c_void, buf.len(), addr)
                };
                drop(in_order);
                if rc == 0 {
                    self.posted(self.wanted_capture(&buf, &seal));
                    return Ok(());
                }
                if rc as isize == -ofi::FI_EAGAIN && !patient {
                    return Err(Error::Again);
                }
                if rc as isize != -ofi::FI_EAGAIN || Instant::now() > deadline {
                    return Err(to_err(self.fi.lib.as_ref(), "fi_inject", rc as i64));
                }
                self.progress_once();
            }
        }
        let ctx = Box::into_raw(Box::new(SendCtx { buf, to }));
        loop {
            let in_order = seal.lock();
            // SAFETY: not posted yet: the context is ours.
            self.seal_message(unsafe { &mut (*ctx).buf }, &seal);
            // SAFETY: as above (once posted, the completion may free it at once).
            let copy = self.wanted_capture(unsafe { &(*ctx).buf }, &seal);
            // SAFETY: the context (and its buffer) lives until the send's completion.
            let rc = unsafe {
                let msg = (*self.fi.ep).msg;
                let f = (*msg).send.ok_or(Error::Unsupported)?;
                f(self.fi.ep, (*ctx).buf.as_ptr() as *const c_void, (*ctx).buf.len(), std::ptr::null_mut(), addr, ctx as *mut c_void)
            };
            drop(in_order);
            if rc == 0 {
                self.posted(copy);
                return Ok(());
            }
            if rc as isize != -ofi::FI_EAGAIN || Instant::now() > deadline || !patient {
                // SAFETY: not posted: ours again.
                drop(unsafe { Box::from_raw(ctx) });
                if rc as isize == -ofi::FI_EAGAIN && !patient {
                    return Err(Error::Again);
                }
                return Err(to_err(self.fi.lib.as_ref(), "fi_send", rc as i64));
            }
            self.progress_once();
        }
    }

    /// [`Engine::send_within`] on our own transport: the frame is written (or queued) at
    /// once, so every send is tracked: an address that failed fails the send, and `to`
    /// is taken as dead.
    #[allow(clippy::too_many_arguments)]
    fn send_sock(&self, s: &crate::sock::Sock, addr: fi_addr_t, mut buf: Vec<u8>, tail: &[&[u8]], to: Option<Arc<Remote>>, patient: bool, deadline: Instant, seal: Seal<'_>) -> Result<()> {
        // Replies held for this process ride in front, in the same send (see
        // `hold_reply`): they are sealed once, and go back to the held ones if it fails
        // for now.
        let mut held = self.take_held(addr);
        let riders: Vec<Vec<u8>> = held
            .iter_mut()
            .map(|r| {
                let mut b = std::mem::take(&mut r.buf);
                self.seal(&mut b, &r.who, 0);
                b
            })
            .collect();
        loop {
            let in_order = seal.lock();
            self.seal_message(&mut buf, &seal);
            let r = if riders.is_empty() && tail.is_empty() {
                s.send(addr, &buf)
            } else {
                let mut parts: Vec<&[u8]> = Vec::with_capacity(1 + tail.len());
                parts.push(&buf);
                parts.extend_from_slice(tail);
                let ride: Vec<[&[u8]; 1]> = riders.iter().map(|b| [&b[..]]).collect();
                let mut frames: Vec<&[&[u8]]> = ride.iter().map(|p| &p[..]).collect();
                frames.push(&parts);
                s.send_frames(addr, &frames)
            };
            drop(in_order);
            // One clock reading decides both: put the replies back, or try again.
            let retry = patient && Instant::now() <= deadline;
            if matches!(r, Err(crate::sock::SendError::Again)) && !riders.is_empty() && !retry {
                // Not sent: the replies wait for the next chance (sealed again then).
                let mut d = self.deferred.lock().unwrap_or_else(|e| e.into_inner());
                for (mut h, b) in held.drain(..).zip(riders.iter()) {
                    h.buf = b.clone();
                    d.push(h);
                }
                self.deferred_n.store(d.len(), Ordering::Relaxed);
            }
            match r {
                Ok(()) => {
                    self.held_went[0].fetch_add(riders.len() as u64, Ordering::Relaxed);
                    let copy = self.wanted_capture(&buf, &seal).map(|mut c| {
                        tail.iter().for_each(|t| c.extend_from_slice(t));
                        c
                    });
                    self.posted(copy);
                    return Ok(());
                }
                Err(crate::sock::SendError::Again) if retry => {
                    self.progress_once();
                }
                Err(crate::sock::SendError::Again) => return Err(Error::Again),
                Err(crate::sock::SendError::Failed) => {
                    self.failed.fetch_add(1, Ordering::Relaxed);
                    if let Some(to) = &to {
                        self.mark_dead(to);
                    }
                    return Err(Error::PeerDead);
                }
            }
        }
    }

    /// Our own transport lost the connection to `addr`: the peers there are dead.
    fn addr_failed(&self, addr: fi_addr_t) {
        let gone: Vec<Arc<Remote>> = self.remotes.lock().unwrap_or_else(|e| e.into_inner()).values().filter(|r| r.addr == addr && !r.is_dead()).cloned().collect();
        for r in gone {
            crate::sn_debug!("network engine", "connection to node {} slot {} failed: peer taken as dead", r.node, r.id.slot);
            self.mark_dead(&r);
        }
    }

    /// Completes the header at the start of `buf` for its receiver: the request number
    /// (the next of the target's sequence; 0 for a reply) and the MAC.
    fn seal_message(&self, buf: &mut [u8], seal: &Seal<'_>) {
        let (to, seq) = match seal {
            Seal::Request(r) => (r.peer_id(), r.tx_seq.fetch_add(1, Ordering::Relaxed)),
            Seal::Reply(p) => (*p, 0),
        };
        self.seal(buf, &to, seq);
    }

    /// A copy of `buf` if it is the put request [`capture_next_put`] waits for.
    fn wanted_capture(&self, buf: &[u8], seal: &Seal<'_>) -> Option<Vec<u8>> {
        (matches!(seal, Seal::Request(_)) && CAPTURE_PUT.load(Ordering::Relaxed) && buf.get(2) == Some(&(Op::Put as u8))).then(|| buf.to_vec())
    }

    /// The copy [`Engine::wanted_capture`] made was posted: it is the captured request.
    fn posted(&self, copy: Option<Vec<u8>>) {
        if copy.is_some() && CAPTURE_PUT.swap(false, Ordering::AcqRel) {
            *CAPTURED.lock().unwrap_or_else(|e| e.into_inner()) = copy;
        }
    }

    /// Writes `seq` and the MAC for receiver `to` into the header at the start of `buf`.
    fn seal(&self, buf: &mut [u8], to: &PeerId, seq: u64) {
        buf[SEQ_AT..SEQ_AT + 8].copy_from_slice(&seq.to_le_bytes());
        let mac = header_mac(&self.mac_key, buf, to);
        buf[MAC_AT..MAC_AT + 8].copy_from_slice(&mac.to_le_bytes());
    }

    /// Our own identity, as the MACs of messages to us name it.
    fn peer_id(&self) -> PeerId {
        PeerId { node: self.node, slot: self.me.slot, gen: self.me.gen, inc: self.inc }
    }

    /// Counts a message dropped for `why` (the first of each kind is a warning).
    fn refuse(&self, why: Refused, m: &[u8], h: Option<&Hdr>) {
        let n = self.drops[why as usize].fetch_add(1, Ordering::Relaxed);
        let from = h.map_or(String::from("?"), |h| format!("node {} slot {}", h.src_node, h.src_slot));
        if n == 0 {
            crate::sn_warn!("network engine", "dropped a message ({:?}, {} bytes, claims to be from {}); later ones are counted (SOFTNIC_NET_STATS=1 prints the counts at exit)", why, m.len(), from);
        } else {
            crate::sn_debug!("network engine", "dropped a message ({:?}, {} bytes, claims to be from {}): {} so far", why, m.len(), from, n + 1);
        }
    }

    /// One request to `to`; waits for its reply (status, data).
    fn call(&self, to: &Arc<Remote>, op: Op, a: u64, b: u64, c: u64, data: &[&[u8]]) -> Result<Vec<u8>> {
        // Reached from exports that are no cancellation points, whose caller may have
        // asynchronous cancellation on: held off for the whole round trip, whose frames hold
        // locks and whose libfabric calls take the provider's (a thread cancelled inside
        // one left it locked, and every other thread of the process hung on it).
        let _masked = crate::cancel::Masked::new();
        // The timeline: a request and its reply, with the operation, bytes and target node.
        let _span = crate::trace::span("net", "network request").map(|s| s.arg("op", op as u64).arg("bytes", data.iter().map(|d| d.len() as u64).sum()).arg("node", to.node as u64));
        let polling = self.polling();
        let (req, call) = self.issue(to, op, a, b, c, data)?;
        self.reply(to, req, &call, polling)
    }

    /// Sends one request; [`Engine::reply`] collects its reply.
    fn issue(&self, to: &Arc<Remote>, op: Op, a: u64, b: u64, c: u64, data: &[&[u8]]) -> Result<(u64, Arc<Call>)> {
        let req = self.next_req.fetch_add(1, Ordering::Relaxed);
        self.issue_as(req, None, to, op, a, b, c, data)
    }

    /// [`Engine::issue`] of request `req`, which may be a piece of an asynchronous
    /// operation: its reply then finishes the piece (see [`Engine::message`]), and so
    /// does the error when the request cannot be sent.
    #[allow(clippy::too_many_arguments)]
    fn issue_as(&self, req: u64, piece: Option<Piece>, to: &Arc<Remote>, op: Op, a: u64, b: u64, c: u64, data: &[&[u8]]) -> Result<(u64, Arc<Call>)> {
        self.issue_with(req, piece, to, op, a, b, c, data, true)
    }

    /// [`Engine::issue_as`]; not `patient`: one attempt to send, and a provider without
    /// room for it now fails the request with `Again` (the peer is not taken as dead).
    #[allow(clippy::too_many_arguments)]
    fn issue_with(&self, req: u64, piece: Option<Piece>, to: &Arc<Remote>, op: Op, a: u64, b: u64, c: u64, data: &[&[u8]], patient: bool) -> Result<(u64, Arc<Call>)> {
        if to.is_dead() {
            if let Some(p) = piece {
                p.finish(err_code(Error::PeerDead), &[]);
            }
            return Err(Error::PeerDead);
        }
        let len: usize = data.iter().map(|d| d.len()).sum();
        let h = Hdr {
            magic: MAGIC,
            op: op as u8,
            req,
            a,
            b,
            c,
            len: len as u64,
            src_node: self.node,
            src_slot: self.me.slot,
            src_gen: self.me.gen,
            addr_len: self.name.len() as u32,
            src_inc: self.inc,
            ..Default::default()
        };
        // Our own transport gathers the data from the caller's buffers (no copy here).
        let gather = self.sock.is_some();
        let mut buf = Vec::with_capacity(HDR + self.name.len() + if gather { 0 } else { len });
        buf.extend_from_slice(&h.bytes());
        buf.extend_from_slice(&self.name);
        if !gather {
            for d in data {
                buf.extend_from_slice(d);
            }
        }
        let tail = if gather { data } else { &[] };
        let call = Arc::new(Call::new(to, Vec::new(), piece));
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).insert(req, call.clone());
        // A revocation's holder may have exited: its send's failure says so at once,
        // where an injected request would be waited for until the timeout.
        let tracked = op == Op::Revoke;
        if let Err(e) = self.send_within_tail(to.addr, buf, tail, Some(to.clone()), patient, tracked, Seal::Request(to)) {
            self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&req);
            if e == Error::Again {
                if let Some(p) = &call.piece {
                    p.finish(err_code(e), &[]);
                }
                return Err(e);
            }
            self.mark_dead(to);
            let e = if e == Error::Unsupported { e } else { Error::PeerDead };
            if let Some(p) = &call.piece {
                p.finish(err_code(e), &[]);
            }
            return Err(e);
        }
        // Our request is out: replies held back for it go now.
        self.flush_deferred();
        Ok((req, call))
    }

    /// Watches a peer that we only wait on (a program polling for a result or an event
    /// that the peer would send): a peer that exits or freezes while nothing of ours is
    /// in flight to it would otherwise never be found dead.  At most every
    /// [`PROBE_EVERY_NS`], one `Op::Ping` without waiting for it: its reply (any status)
    /// clears the probe; no reply within `SOFTNIC_NET_TIMEOUT_MS` takes the peer as dead,
    /// as for any other unanswered request (the progress thread's `expire_async`).
    /// Called from liveness checks ([`crate::rma::Peer::seems_alive`]): costs a clock read
    /// when a probe is not due.
    pub fn probe(&self, r: &Arc<Remote>) {
        let now = crate::wait::now_ns();
        if r.is_dead() || now.wrapping_sub(r.probed_ns.load(Ordering::Relaxed)) < PROBE_EVERY_NS {
            return;
        }
        r.probed_ns.store(now, Ordering::Relaxed);
        // Silent since the first probe that got no answer (a peer that never lets a probe
        // out, its connection refused, is as silent as one that never answers).
        let since = r.silent_since_ns.load(Ordering::Relaxed);
        if since == 0 {
            r.silent_since_ns.store(now, Ordering::Relaxed);
        } else if now.wrapping_sub(since) > self.timeout.as_nanos() as u64 {
            crate::sn_warn!("network engine", "node {} slot {} silent for {:?}: peer taken as dead", r.node, r.id.slot, self.timeout);
            self.mark_dead(r);
            return;
        }
        if r.probing.swap(true, Ordering::AcqRel) {
            return; // one in flight: its reply or its expiry decides
        }
        let answered = r.clone();
        let done: Done = Box::new(move |res| {
            if res.is_ok() {
                answered.silent_since_ns.store(0, Ordering::Relaxed);
            }
            answered.probing.store(false, Ordering::Release);
        });
        let op = Arc::new(Async { remaining: AtomicUsize::new(1), error: std::sync::atomic::AtomicI32::new(0), done: Mutex::new(Some(done)) });
        let req = self.next_req.fetch_add(1, Ordering::Relaxed);
        let piece = Piece { op, req, read_into: None, finished: AtomicBool::new(false), deadline: Instant::now() + self.timeout };
        self.async_in_flight.fetch_add(1, Ordering::AcqRel);
        // Never a wait: a probe the provider cannot take now is tried again later.
        let _ = self.issue_with(req, Some(piece), r, Op::Ping, 0, 0, 0, &[], false);
    }

    /// Waits for the reply to request `req` (or the completion of RMA operation `req`):
    /// its data, or its status as an error.  No reply within the timeout: the peer is
    /// taken as dead.  `polling` (taken before the request went out) ends with our own
    /// polling, before we sleep.
    fn reply(&self, to: &Arc<Remote>, req: u64, call: &Arc<Call>, polling: Polling<'_>) -> Result<Vec<u8>> {
        let start = Instant::now();
        let deadline = start + self.timeout;
        // Drive the completion queue ourselves while the reply is likely to come soon (a
        // round trip costs less than waking a sleeping thread twice), then sleep.
        while start.elapsed() < self.poll_reply {
            if let Some((status, data)) = call.done.lock().unwrap_or_else(|e| e.into_inner()).take() {
                return if status == 0 { Ok(data) } else { Err(code_err(status)) };
            }
            if !self.serve_or_flush() {
                std::hint::spin_loop();
            }
        }
        drop(polling);
        // Asleep, the thread serves nothing: the progress thread must read the reply now,
        // not when a lease this thread holds runs out.
        self.about_to_sleep();
        let mut g = call.done.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some((status, data)) = g.take() {
                return if status == 0 { Ok(data) } else { Err(code_err(status)) };
            }
            let now = Instant::now();
            if now >= deadline {
                drop(g);
                self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&req);
                crate::sn_warn!("network engine", "no reply from node {} slot {} within {:?}: peer taken as dead", to.node, to.id.slot, self.timeout);
                self.mark_dead(to);
                return Err(Error::PeerDead);
            }
            call.sleepers.fetch_add(1, Ordering::Relaxed);
            g = call.cv.wait_timeout(g, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
            call.sleepers.fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn mark_dead(&self, r: &Arc<Remote>) {
        r.dead.store(true, Ordering::Relaxed);
        let failed: Vec<Arc<Call>> = {
            let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            let ids: Vec<u64> = p.iter().filter(|(_, c)| Arc::ptr_eq(&c.to, r)).map(|(k, _)| *k).collect();
            ids.iter().filter_map(|k| p.remove(k)).collect()
        };
        for c in failed {
            if let Some(p) = &c.piece {
                // The provider may still hold the piece's bounce buffer (the call owns it).
                p.finish(err_code(Error::PeerDead), &[]);
                continue;
            }
            c.complete(err_code(Error::PeerDead), Vec::new());
        }
    }

    /// [`Engine::progress_once`] on an application thread: when nothing came, the thread
    /// waits and will not answer now, so the replies it held go (see `hold_reply`).
    fn serve_or_flush(&self) -> bool {
        let served = self.progress_once();
        if !served && self.sock.is_some() {
            self.flush_deferred();
        }
        served
    }

    /// Reads and handles what the completion queue holds; false when it was empty.
    fn progress_once(&self) -> bool {
        // libfabric's system calls are cancellation points: not to be unwound halfway.
        let _masked = crate::cancel::Masked::new();
        if let Some(s) = &self.sock {
            return s.poll(|m| self.message(m), |a| self.addr_failed(a));
        }
        let mut ents = [fi_cq_data_entry { op_context: std::ptr::null_mut(), flags: 0, len: 0, buf: std::ptr::null_mut(), data: 0 }; 16];
        // SAFETY: reads up to 16 entries of the format the CQ was opened with.
        let n = unsafe {
            let ops = (*self.fi.cq).ops;
            match (*ops).read {
                Some(f) => f(self.fi.cq, ents.as_mut_ptr() as *mut c_void, ents.len()),
                None => return false,
            }
        };
        if n > 0 {
            for e in &ents[..n as usize] {
                self.completion(e);
            }
            return true;
        }
        if n as isize == -ofi::FI_EAVAIL {
            self.error_completion();
            return true;
        }
        false
    }

    fn completion(&self, e: &fi_cq_data_entry) {
        if e.op_context as usize & RMA_TAG != 0 {
            rma_done(e.op_context, 0);
        } else if e.flags & ofi::FI_RECV != 0 {
            // SAFETY: every receive is posted with a leaked Box<RecvBuf> as context.
            let b = unsafe { Box::from_raw(e.op_context as *mut RecvBuf) };
            self.message(&b.data[..e.len.min(RECV_LEN)]);
            if let Err(err) = self.post_recv(b) {
                crate::sn_error!("network engine", "cannot repost a receive buffer: {}", err);
            }
        } else if e.flags & ofi::FI_SEND != 0 && !e.op_context.is_null() {
            // SAFETY: every completing send was posted with a leaked Box<SendCtx>.
            drop(unsafe { Box::from_raw(e.op_context as *mut SendCtx) });
        }
    }

    fn error_completion(&self) {
        // SAFETY: zeroed is a valid fi_cq_err_entry; readerr fills it.
        let mut ee: ofi::fi_cq_err_entry = unsafe { std::mem::zeroed() };
        // SAFETY: one error entry into our buffer.
        let n = unsafe {
            let ops = (*self.fi.cq).ops;
            match (*ops).readerr {
                Some(f) => f(self.fi.cq, &mut ee, 0),
                None => return,
            }
        };
        if n != 1 || ee.op_context.is_null() {
            return;
        }
        if ee.flags & ofi::FI_RECV == 0 {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
        if ee.op_context as usize & RMA_TAG != 0 {
            crate::sn_debug!("network engine", "RMA failed: {}", lib_strerror(self.fi.lib.as_ref(), ee.err as i64));
            rma_done(ee.op_context, ee.err.max(1));
        } else if ee.flags & ofi::FI_RECV != 0 {
            // SAFETY: as in `completion`.
            let b = unsafe { Box::from_raw(ee.op_context as *mut RecvBuf) };
            let _ = self.post_recv(b);
        } else {
            // SAFETY: as in `completion`.
            let ctx = unsafe { Box::from_raw(ee.op_context as *mut SendCtx) };
            crate::sn_debug!("network engine", "send failed: {}", lib_strerror(self.fi.lib.as_ref(), ee.err as i64));
            if let Some(to) = &ctx.to {
                self.mark_dead(to);
            }
        }
    }

    /// Takes the peers of asynchronous pieces past their deadline as dead (which fails
    /// their operations): nobody waits on such a piece with a timeout of its own.
    fn expire_async(&self) {
        let now = Instant::now();
        let late: Vec<Arc<Remote>> = {
            let p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            p.values().filter(|c| c.piece.as_ref().is_some_and(|pc| pc.deadline <= now)).map(|c| c.to.clone()).collect()
        };
        for r in late {
            if !r.is_dead() {
                crate::sn_warn!("network engine", "RMA to node {} slot {} not completed within {:?}: peer taken as dead", r.node, r.id.slot, self.timeout);
                self.mark_dead(&r);
            }
        }
    }

    fn progress_loop(&'static self) {
        ON_PROGRESS_THREAD.with(|p| p.set(true));
        // Real-time priority when allowed: a target that spins on its memory (as one-sided
        // programs do) keeps its core busy, and only a thread that preempts it at once can
        // land the data that it waits for.  Mostly asleep, so it takes little from anyone.
        let param = libc::sched_param { sched_priority: 1 };
        // SAFETY: changes this thread's policy (pid 0 = the calling thread); harmless if refused.
        let rt = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0;
        crate::sn_debug!("network engine", "progress thread {}", if rt { "at real-time priority" } else { "at normal priority" });
        let mut last = Instant::now();
        let mut expired = Instant::now();
        loop {
            if expired.elapsed() >= Duration::from_millis(50) {
                expired = Instant::now();
                if self.async_in_flight.load(Ordering::Relaxed) > 0 {
                    self.expire_async();
                }
            }
            if self.progress_once() {
                last = Instant::now();
                continue;
            }
            if self.deferred_n.load(Ordering::Relaxed) > 0 {
                // Replies held back: the application runs first (see `defer_reply`); they
                // go when its next request does, or when this sleep ends, whichever first.
                self.sleep_for_traffic(self.defer.as_nanos() as u64);
                self.flush_deferred_by_clock();
                continue;
            }
            if last.elapsed() < self.spin {
                std::hint::spin_loop();
                continue;
            }
            // Application threads that hold replies rely on this thread's clock.
            self.sleeping_long.store(true, Ordering::SeqCst);
            let cap = if fine_now_ns() < self.hold_active_until.load(Ordering::SeqCst) {
                self.sleeping_long.store(false, Ordering::Relaxed);
                HOLD_CAP_NS
            } else {
                100_000_000
            };
            self.sleep_for_traffic(cap);
            self.sleeping_long.store(false, Ordering::Relaxed);
        }
    }

    /// Blocks until the completion queue may have something (at most 100 ms), or while
    /// an application thread holds a lease, until the lease may have run out.
    fn sleep_for_traffic(&self, at_most_ns: u64) {
        let mut timeout_ns = at_most_ns;
        self.woke_over_app.store(false, Ordering::Relaxed);
        let was_leased = self.leased.load(Ordering::Acquire);
        if was_leased {
            let mut until = self.lease_until.load(Ordering::Relaxed);
            let now = fine_now_ns();
            if until <= now {
                if self.in_poll.load(Ordering::Relaxed) == 0 {
                    self.lease_ran_out();
                    return; // serve the rest, then sleep watching the provider
                }
                // The poller is serving traffic: it polls again right after.
                until = now + self.lease_len_ns.load(Ordering::Relaxed);
            }
            let slept_to = self.lease_slept_to.swap(until, Ordering::Relaxed);
            if slept_to != 0 && now >= slept_to && until > slept_to {
                self.adapt_lease(true); // renewed for a whole lease: a steady poller
            }
            timeout_ns = (until - now).min(timeout_ns);
        }
        if self.fi.wait_fd >= 0 {
            if self.trywait() {
                // SAFETY: events into a valid buffer; `sleep_fd` is our epoll set, and the
                // provider's descriptor itself when there is none.
                unsafe {
                    if self.sleep_fd >= 0 {
                        let mut ev = [libc::epoll_event { events: 0, u64: 0 }; 2];
                        let ts = libc::timespec { tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t, tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long };
                        let mut n = libc::syscall(libc::SYS_epoll_pwait2, self.sleep_fd, ev.as_mut_ptr(), 2, &ts as *const libc::timespec, std::ptr::null::<libc::sigset_t>(), 0usize) as i32;
                        if n < 0 && *libc::__errno_location() == libc::ENOSYS {
                            // Before Linux 5.11: whole milliseconds, rounded up.
                            n = libc::epoll_wait(self.sleep_fd, ev.as_mut_ptr(), 2, timeout_ns.div_ceil(1_000_000) as i32);
                        }
                        // Not under a lease: its poller serves the traffic itself, and
                        // when a lease ends it is not waiting for our reply to go.
                        // The count grows when the wake-up switches a running thread out; it
                        // was read after the last wake-up (nothing of ours preempts us since).
                        let now = involuntary_switches();
                        let before = self.switches_seen.swap(now, Ordering::Relaxed);
                        self.woke_over_app.store(!was_leased && now != before, Ordering::Relaxed);
                        if ev[..n.max(0) as usize].iter().any(|e| e.u64 == KICK) {
                            let mut v = 0u64;
                            libc::read(self.kick_fd, &mut v as *mut u64 as *mut c_void, 8);
                        }
                        if self.leased.load(Ordering::Acquire) && self.lease_until.load(Ordering::Relaxed) <= fine_now_ns() && self.in_poll.load(Ordering::Relaxed) == 0 {
                            self.lease_ran_out();
                        }
                    } else {
                        let mut pfd = libc::pollfd { fd: self.fi.wait_fd, events: libc::POLLIN, revents: 0 };
                        libc::poll(&mut pfd, 1, 100);
                    }
                }
            }
            return;
        }
        let mut e = fi_cq_data_entry { op_context: std::ptr::null_mut(), flags: 0, len: 0, buf: std::ptr::null_mut(), data: 0 };
        // SAFETY: blocks up to 100 ms for one entry of the CQ's format.
        let n = unsafe {
            let ops = (*self.fi.cq).ops;
            match (*ops).sread {
                Some(f) => f(self.fi.cq, &mut e as *mut _ as *mut c_void, 1, std::ptr::null(), 100),
                None => {
                    crate::cancel::nap(Duration::from_micros(50));
                    0
                }
            }
        };
        if n > 0 {
            self.completion(&e);
        } else if n as isize == -ofi::FI_EAVAIL {
            self.error_completion();
        }
    }

    /// fi_trywait on our completion queue: true when nothing is pending and the wait
    /// descriptor will signal new traffic (so sleeping on it misses nothing).  It also
    /// takes the provider's pending wake-up signals.
    fn trywait(&self) -> bool {
        if self.sock.is_some() {
            return true; // a level-triggered set: nothing to drain, nothing missed
        }
        // libfabric takes its locks here: not to be unwound halfway (see `Engine::call`).
        let _masked = crate::cancel::Masked::new();
        let mut fids = [&mut unsafe { &mut *self.fi.cq }.fid as *mut ofi::fid];
        // SAFETY: trywait with our one CQ.
        unsafe {
            match (*(*self.fi.fabric).ops).trywait {
                Some(f) => f(self.fi.fabric, fids.as_mut_ptr(), 1) == 0,
                None => false,
            }
        }
    }

    /// Hands the completion queue to the calling application thread for a short while:
    /// it is about to send a request and poll for the reply itself (a blocking put, get
    /// or atomic), so the traffic of that round trip must not wake the progress thread,
    /// which would preempt it on its own core (the provider signals its wait descriptor
    /// for every send and completion as well as for arriving data).  While any thread
    /// holds a [`Polling`], the progress thread's sleep does not watch the provider's
    /// descriptor; the last one to let go takes the provider's pending signals (the
    /// traffic it served itself) and watches it again, so that anything still unserved
    /// wakes the progress thread at once.  Measured over two virtual hosts: 4 progress-
    /// thread wake-ups per round trip -> 1, remote fetch-add 100 -> 50 us.
    ///
    /// A call made under a lease renews it, when it starts and when it ends, as a poll
    /// that finds nothing does: the thread keeps calling the library.  In a ping-pong of
    /// puts with events its CQ polls never find the CQ empty (the peer's put arrives with
    /// the reply, read in the post's own reply loop), so the lease would run out and
    /// every post turn the progress thread's watch off and on again (2 epoll_ctl,
    /// measured 0.8 per round trip per rank).
    fn polling(&self) -> Polling<'_> {
        if self.sleep_fd < 0 {
            return Polling(None);
        }
        self.renew_lease();
        let mut o = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        if o.watching() {
            self.calls_unleased.fetch_add(1, Ordering::Relaxed);
            self.watch_provider(false);
        }
        o.pollers += 1;
        Polling(Some(self))
    }

    /// An application thread polls for events (an event poll that found nothing, see
    /// [`poll_for_events`]): it is taken to keep polling for a while (a lease, at most
    /// `SOFTNIC_NET_LEASE_US`, see [`Engine::adapt_lease`]), serving arriving traffic
    /// itself, and meanwhile the progress thread does not watch the provider (whose
    /// every signal would wake it to preempt the poller on its own core, only to find
    /// the work done).  Every such poll renews the lease; once it runs out the progress
    /// thread watches again, so a program that stops polling (to compute, or to spin on
    /// its memory for a put) has what arrives served at most one lease late, and one
    /// that goes to sleep on a ring ends the lease at once ([`stop_polling_for_events`]).
    /// Measured over two virtual hosts, 8 B half round trips: uGNI put with a remote
    /// event, each side polling its destination CQ, 50-71 us -> 15-21; SMSG 118-138 ->
    /// 33-50; Portals put ping-pong (PtlEQWait) 58-70 -> 20-27.  Fixed 200 us leases
    /// gave only 27-47 on the first: the progress thread's wake-up at each lease's end
    /// preempts the poller.
    fn lease(&self) {
        if self.lease_max_ns == 0 || self.kick_fd < 0 {
            return;
        }
        self.lease_until.store(fine_now_ns() + self.lease_len_ns.load(Ordering::Relaxed), Ordering::Relaxed);
        if self.leased.load(Ordering::Relaxed) {
            return;
        }
        let mut o = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        if o.leased {
            return;
        }
        if o.watching() {
            self.watch_provider(false);
        }
        o.leased = true;
        self.leased.store(true, Ordering::Release);
        drop(o);
        // The progress thread may be asleep for up to 100 ms: it must sleep by the lease's
        // clock instead.
        self.kick();
    }

    /// A lease in force lasts a whole lease from now ([`Engine::polling`]).
    fn renew_lease(&self) {
        if self.leased.load(Ordering::Relaxed) {
            self.lease_until.store(fine_now_ns() + self.lease_len_ns.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    /// The calling application thread is about to sleep: what it holds back goes, and a
    /// lease ends at once (the progress thread watches the provider again).
    fn about_to_sleep(&self) {
        self.flush_deferred();
        if self.leased.load(Ordering::Relaxed) {
            self.lease_until.store(0, Ordering::Relaxed);
            self.end_lease();
        }
    }

    /// Wakes the progress thread: its sleep returns at once (no-op without a kick fd).
    fn kick(&self) {
        if self.kick_fd < 0 {
            return;
        }
        let one = 1u64;
        // SAFETY: 8 bytes into our eventfd.
        unsafe { crate::cancel::sys::write(self.kick_fd, &one as *const u64 as *const c_void, 8) };
    }

    /// Gives the provider's descriptor back to the progress thread's sleep, after the
    /// application threads served the traffic themselves (a [`Polling`] dropped, a lease
    /// ended).  When fi_trywait refuses (traffic arrived that nobody read yet: the
    /// descriptor need not signal it again), the progress thread, which may be asleep
    /// for up to 100 ms without watching the descriptor, is woken to serve it.
    fn rewatch_provider(&self) {
        if !self.trywait() {
            self.kick();
        }
        self.watch_provider(true);
    }

    /// The lease ran out (unless a poll renewed it meanwhile): the progress thread
    /// watches the provider again, after taking the signals of what the poller served.
    /// True when this call ended it and no thread waits for a reply ([`Polling`]), i.e.
    /// nobody but the progress thread serves traffic now.
    fn end_lease(&self) -> bool {
        let mut o = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        if !o.leased || self.lease_until.load(Ordering::Relaxed) > fine_now_ns() {
            return false;
        }
        o.leased = false;
        self.leased.store(false, Ordering::Release);
        self.lease_slept_to.store(0, Ordering::Relaxed);
        if !o.watching() {
            return false;
        }
        self.rewatch_provider();
        true
    }

    /// The progress thread found the lease over: ends it and serves what waited.
    fn lease_ran_out(&self) {
        if self.end_lease() && self.progress_once() {
            // Traffic waited for the lease to end with nobody polling: the poller had
            // stopped (and may be spinning on its memory for what came).
            self.adapt_lease(false);
        }
    }

    /// Leases adapt to how the program polls.  Traffic found waiting when a lease ran
    /// out (the thread had turned to its memory or its work) makes them four times
    /// shorter (down to [`LEASE_MIN_NS`]), so that a program that alternates the two
    /// waits little; a thread that keeps polling for whole leases gets twice as long a
    /// one (fewer progress-thread wake-ups to check on it, up to `SOFTNIC_NET_LEASE_US`),
    /// but only once [`LEASE_CALM_NS`] went by without such a wait: an alternating
    /// program also polls for whole short leases.
    fn adapt_lease(&self, grow: bool) {
        let now = fine_now_ns();
        let cur = self.lease_len_ns.load(Ordering::Relaxed);
        let next = if grow {
            if now.saturating_sub(self.lease_missed_at.load(Ordering::Relaxed)) < LEASE_CALM_NS {
                return;
            }
            cur.saturating_mul(2).min(self.lease_max_ns)
        } else {
            self.lease_missed_at.store(now, Ordering::Relaxed);
            (cur / 4).max(LEASE_MIN_NS.min(self.lease_max_ns))
        };
        self.lease_len_ns.store(next, Ordering::Relaxed);
    }

    /// Whether the progress thread's sleep watches the provider's wait descriptor.
    fn watch_provider(&self, on: bool) {
        let mut ev = libc::epoll_event { events: if on { libc::EPOLLIN as u32 } else { 0 }, u64: 0 };
        // SAFETY: our epoll set, holding the provider's descriptor since the start.
        unsafe { libc::epoll_ctl(self.sleep_fd, libc::EPOLL_CTL_MOD, self.fi.wait_fd, &mut ev) };
    }

    /// A message arrived: a request to serve or a reply to deliver, if it proves it comes
    /// from this job (see "Authentication"); else it is dropped and counted.
    fn message(&self, m: &[u8]) {
        let Some(h) = Hdr::parse(m) else {
            self.refuse(Refused::Malformed, m, None);
            return;
        };
        if u64::from_le_bytes(m[MAC_AT..HDR].try_into().expect("8 bytes")) != header_mac(&self.mac_key, m, &self.peer_id()) {
            self.refuse(Refused::Forged, m, Some(&h));
            return;
        }
        let Some(op) = Op::from_u8(h.op) else {
            self.refuse(Refused::Malformed, m, Some(&h));
            return;
        };
        let src = PeerId { node: h.src_node, slot: h.src_slot, gen: h.src_gen, inc: h.src_inc };
        if op == Op::Reply {
            let body = (h.len as usize).checked_add(HDR).and_then(|end| m.get(HDR..end)).unwrap_or(&[]);
            let call = {
                let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
                // Only the process asked answers (a reply is bound to the asker by its MAC,
                // and to the one asked by this).
                match p.get(&h.req) {
                    Some(c) if c.to.peer_id() == src => p.remove(&h.req),
                    _ => None,
                }
            };
            if let Some(c) = call {
                if let Some(p) = &c.piece {
                    p.finish(h.status, &[]);
                    return;
                }
                c.complete(h.status, body.to_vec());
            }
            return;
        }
        // The timeline: serving a request of another process (whichever thread polls).
        let _span = crate::trace::span("net", "network request served").map(|s| s.arg("op", h.op as u64).arg("bytes", h.len as u64).arg("node", h.src_node as u64));
        let alen = h.addr_len as usize;
        let addr = alen.checked_add(HDR).and_then(|end| m.get(HDR..end));
        let body = alen.checked_add(HDR).and_then(|start| Some((start, start.checked_add(h.len as usize)?))).and_then(|(start, end)| m.get(start..end));
        let (Some(addr), Some(body)) = (addr, body) else {
            self.refuse(Refused::Malformed, m, Some(&h));
            return;
        };
        let known = self.senders.lock().unwrap_or_else(|e| e.into_inner()).get(&src).cloned();
        let sender = match known {
            Some(s) => s,
            None => match self.insert_addr(addr) {
                Ok(a) => self.senders.lock().unwrap_or_else(|e| e.into_inner()).entry(src).or_insert_with(|| Arc::new(Sender { addr: a, replay: Mutex::new(Replay::new()) })).clone(),
                Err(_) => return,
            },
        };
        let top = {
            let mut r = sender.replay.lock().unwrap_or_else(|e| e.into_inner());
            (!r.accept(h.seq)).then_some(r.top)
        };
        if let Some(top) = top {
            crate::sn_debug!("network engine", "request number {} from node {} slot {} seen before or older than {} (highest {})", h.seq, h.src_node, h.src_slot, REPLAY_WINDOW, top);
            self.refuse(Refused::Replayed, m, Some(&h));
            return;
        }
        let from = sender.addr;
        let served = match op {
            Op::Expose => self.expose(h.a, h.c, from, src),
            Op::Revoke => match self.revoked(src, h.a, from, h.req) {
                Some(()) => Ok(Vec::new()),
                None => return, // answered when our RMA through the window is over
            },
            _ => serve(op, &h, body),
        };
        let (status, data) = match served {
            Ok(d) => (0, d),
            Err(e) => (err_code(e), Vec::new()),
        };
        let r = Hdr { magic: MAGIC, op: Op::Reply as u8, status, req: h.req, len: data.len() as u64, src_node: self.node, src_slot: self.me.slot, src_gen: self.me.gen, src_inc: self.inc, ..Default::default() };
        let mut buf = Vec::with_capacity(HDR + data.len());
        buf.extend_from_slice(&r.bytes());
        buf.extend_from_slice(&data);
        if matches!(op, Op::Put | Op::Store | Op::PutCompound) && data.is_empty() && !self.defer.is_zero() {
            if ON_PROGRESS_THREAD.with(|p| p.get()) {
                if self.woke_over_app.load(Ordering::Relaxed) {
                    self.defer_reply(from, buf, src, false);
                    return;
                }
            } else if self.sock.is_some() && body.len() <= HOLD_BYTES_MAX && self.hold_reply() {
                self.defer_reply(from, buf, src, true);
                return;
            }
        }
        if let Err(e) = self.send(from, buf, Seal::Reply(src)) {
            crate::sn_debug!("network engine", "reply to node {} slot {} lost: {}", h.src_node, h.src_slot, e);
        }
    }
}

impl Engine {
    /// Holds back the reply to a put the progress thread just applied.  This thread runs
    /// at real-time priority on the application's core (see `progress_loop`) and has
    /// preempted it: a program spinning on its memory sees the data as soon as this
    /// thread sleeps, and the reply's send (and the provider's signals it sets off) would
    /// otherwise come first.  It goes out right after the application's next request
    /// leaves (a ping-pong's answer), when an application thread sleeps in the library,
    /// or after at most `defer` (an idle or busy application), whichever comes first.
    /// Causal: the data is in place before the reply exists, and the initiator's
    /// completion waits for the reply.
    fn defer_reply(&self, to: fi_addr_t, buf: Vec<u8>, who: PeerId, by_app: bool) {
        let full = {
            let mut d = self.deferred.lock().unwrap_or_else(|e| e.into_inner());
            d.push(DeferredReply { to, buf, who, at_ns: if by_app { fine_now_ns() } else { 0 }, by_app });
            self.deferred_n.store(d.len(), Ordering::Relaxed);
            by_app && d.iter().filter(|r| r.to == to).count() >= HOLD_MAX
        };
        if full {
            self.send_held(to, self.take_held(to), 1);
        }
    }

    /// Whether an application thread that just applied a short put (on our own transport)
    /// holds its reply back.  **Replies riding with requests.**  A program that answers
    /// a put with a put of its own (a ping-pong, a put-with-event exchange, a blocking
    /// put whose target is blocked in a put of its own) made two sends per half round
    /// trip, the reply and its request, a system call of ~4.4 us each here.  Held, the
    /// reply goes in front of the next message to the same process in one send (see
    /// [`Engine::send_sock`]): causal, since it arrives and is handled first.  Otherwise
    /// it goes when this process polls and finds nothing (the thread waits, it will not
    /// answer now), when a thread sleeps in the library, when [`HOLD_MAX`] wait for one
    /// process, or by the progress thread's clock: it sleeps at most [`HOLD_CAP_NS`]
    /// while threads hold replies (kicked if it was asleep for longer), then gives the
    /// application [`DEFER_NS`] more.  A reply that had to go by that clock means the
    /// program does not answer at once: none is held for [`LEASE_CALM_NS`].
    fn hold_reply(&self) -> bool {
        let now = fine_now_ns();
        if now < self.hold_off_until.load(Ordering::Relaxed) {
            return false;
        }
        // Paired with the progress thread's store before a long sleep and its read after
        // (SeqCst both sides): either it sees this, or this sees it going to sleep long.
        self.hold_active_until.store(now + HOLD_ACTIVE_NS, Ordering::SeqCst);
        if self.sleeping_long.load(Ordering::SeqCst) {
            self.sleeping_long.store(false, Ordering::Relaxed);
            self.kick();
        }
        true
    }

    /// Takes the replies held for `addr` (none: no allocation, one relaxed load).
    fn take_held(&self, addr: fi_addr_t) -> Vec<DeferredReply> {
        if self.deferred_n.load(Ordering::Relaxed) == 0 {
            return Vec::new();
        }
        let mut d = self.deferred.lock().unwrap_or_else(|e| e.into_inner());
        let (mine, rest): (Vec<DeferredReply>, Vec<DeferredReply>) = std::mem::take(&mut *d).into_iter().partition(|r| r.to == addr);
        *d = rest;
        self.deferred_n.store(d.len(), Ordering::Relaxed);
        mine
    }

    /// Sends replies held for `addr`: on our own transport in one send, else in turn;
    /// counted as going `how` (an index of `held_went`).
    fn send_held(&self, addr: fi_addr_t, held: Vec<DeferredReply>, how: usize) {
        if held.is_empty() {
            return;
        }
        self.held_went[how].fetch_add(held.len() as u64, Ordering::Relaxed);
        if let Some(s) = &self.sock {
            let bufs: Vec<Vec<u8>> = held
                .into_iter()
                .map(|mut r| {
                    self.seal(&mut r.buf, &r.who, 0);
                    r.buf
                })
                .collect();
            let parts: Vec<[&[u8]; 1]> = bufs.iter().map(|b| [&b[..]]).collect();
            let frames: Vec<&[&[u8]]> = parts.iter().map(|p| &p[..]).collect();
            let deadline = Instant::now() + self.timeout;
            loop {
                match s.send_frames(addr, &frames) {
                    Err(crate::sock::SendError::Again) if Instant::now() <= deadline => {
                        self.progress_once();
                    }
                    Err(e) => {
                        crate::sn_debug!("network engine", "{} held replies lost: {:?}", frames.len(), e);
                        return;
                    }
                    Ok(()) => return,
                }
            }
        }
        for r in held {
            if let Err(e) = self.send(r.to, r.buf, Seal::Reply(r.who)) {
                crate::sn_debug!("network engine", "reply to node {} slot {} lost: {}", r.who.node, r.who.slot, e);
            }
        }
    }

    /// Sends the replies held back (one relaxed load when there are none).
    fn flush_deferred(&self) {
        self.flush_deferred_as(1);
    }

    fn flush_deferred_as(&self, how: usize) {
        if self.deferred_n.load(Ordering::Relaxed) == 0 {
            return;
        }
        let held = {
            let mut d = self.deferred.lock().unwrap_or_else(|e| e.into_inner());
            self.deferred_n.store(0, Ordering::Relaxed);
            std::mem::take(&mut *d)
        };
        // One send per address, in the order they were held.
        let mut by_addr: Vec<(fi_addr_t, Vec<DeferredReply>)> = Vec::new();
        for r in held {
            match by_addr.iter_mut().find(|(a, _)| *a == r.to) {
                Some((_, v)) => v.push(r),
                None => by_addr.push((r.to, vec![r])),
            }
        }
        for (a, v) in by_addr {
            self.send_held(a, v, how);
        }
    }

    /// The progress thread's clock ran out with replies held: sends them, and when an
    /// application thread's waited longer than [`DEFER_NS`], holds none for a while.
    fn flush_deferred_by_clock(&self) {
        if self.deferred_n.load(Ordering::Relaxed) == 0 {
            return;
        }
        let now = fine_now_ns();
        let stale = self.deferred.lock().unwrap_or_else(|e| e.into_inner()).iter().any(|r| r.by_app && now.saturating_sub(r.at_ns) > DEFER_NS);
        if stale {
            self.hold_off_until.store(now + LEASE_CALM_NS, Ordering::Relaxed);
        }
        self.flush_deferred_as(2);
    }
}

/// Whom a message is sealed for (see "Authentication").
enum Seal<'a> {
    /// A request to this peer: the next number of its sequence.
    Request(&'a Remote),
    /// A reply or notice (number 0) to this process.
    Reply(PeerId),
}

impl Seal<'_> {
    /// A request's target's send lock (never held while the provider is driven).
    fn lock(&self) -> Option<std::sync::MutexGuard<'_, ()>> {
        match self {
            Seal::Request(r) => Some(r.send_lock.lock().unwrap_or_else(|e| e.into_inner())),
            Seal::Reply(_) => None,
        }
    }
}

/// An application thread polling the completion queue itself ([`Engine::polling`]).
struct Polling<'a>(Option<&'a Engine>);

/// Application threads driving the completion queue: those waiting for a reply
/// ([`Polling`]) and a thread polling for events under a lease ([`Engine::lease`]).  The
/// progress thread's sleep watches the provider only when there are none.
#[derive(Default)]
struct CqOwners {
    pollers: usize,
    leased: bool,
}

impl CqOwners {
    fn watching(&self) -> bool {
        self.pollers == 0 && !self.leased
    }
}

/// The epoll-set token of the lease eventfd ([`Engine::lease`]); the provider's is 0.
const KICK: u64 = 1;

/// The shortest lease ([`Engine::adapt_lease`]).
const LEASE_MIN_NS: u64 = 50_000;

/// How long leases stay short after traffic waited for one to end ([`Engine::adapt_lease`]).
const LEASE_CALM_NS: u64 = 20_000_000;

/// Involuntary context switches of this process's threads so far (getrusage: one system
/// call).  A thread that wakes and sees it grew since it went to sleep has preempted a
/// running thread of ours (or another process did meanwhile).
fn involuntary_switches() -> i64 {
    // (RUSAGE_SELF sums every thread's count: the application's switches are what counts.)
    // SAFETY: zeroed is a valid rusage; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid out pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru.ru_nivcsw as i64
}

/// CLOCK_MONOTONIC in nanoseconds (leases are far shorter than the coarse clock's tick).
fn fine_now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid out pointer; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

impl Drop for Polling<'_> {
    fn drop(&mut self) {
        let Some(e) = self.0 else { return };
        e.renew_lease();
        let mut o = e.owners.lock().unwrap_or_else(|e| e.into_inner());
        o.pollers -= 1;
        if o.watching() {
            e.rewatch_provider();
        }
    }
}

/// The provider's name in `info` (e.g. `tcp;ofi_rxm`), "?" when it has none.
///
/// # Safety
/// `info` must be an fi_info libfabric returned (its attribute pointers null or valid).
unsafe fn provider_name(info: &fi_info) -> String {
    // SAFETY: the caller's promise: attribute pointers null or valid, names NUL-terminated.
    unsafe {
        if info.fabric_attr.is_null() || (*info.fabric_attr).prov_name.is_null() {
            String::from("?")
        } else {
            std::ffi::CStr::from_ptr((*info.fabric_attr).prov_name).to_string_lossy().into_owned()
        }
    }
}

/// Our own transport (crate::sock) unless `SOFTNIC_NET_TRANSPORT=libfabric`; a value that
/// names neither is logged and taken as the default.
fn own_transport() -> bool {
    let v = crate::env::get_str("SOFTNIC_NET_TRANSPORT");
    let v = v.trim();
    if v.eq_ignore_ascii_case("libfabric") {
        return false;
    }
    if !v.is_empty() && !v.eq_ignore_ascii_case("sockets") {
        crate::sn_warn!("network engine", "SOFTNIC_NET_TRANSPORT={:?} is neither sockets nor libfabric: sockets used", v);
    }
    true
}

/// Whether bulk transfers use the provider's RMA: `SOFTNIC_NET_RMA` when it is set; unset,
/// on for every provider but `ofi_rxd`.  libfabric 1.17's rxd (reliable datagrams over
/// udp) stalled for good when several threads ran large RMA at once (c-tests/net.list
/// under `FI_PROVIDER=udp;ofi_rxd`: two tests hung), and passes everything with its bulk
/// carried by request messages.  Both ends decide alike, as they run the same provider.
fn rma_wanted(provider: &str) -> bool {
    if crate::env::raw("SOFTNIC_NET_RMA").is_some() {
        return crate::env::get_bool("SOFTNIC_NET_RMA");
    }
    let wanted = !provider.contains("ofi_rxd");
    if !wanted {
        crate::sn_debug!("network engine", "provider {}: bulk transfers as messages (no RMA; SOFTNIC_NET_RMA=1 forces it)", provider);
    }
    wanted
}

/// The progress thread's epoll set, holding the provider's wait descriptor `wait_fd`
/// (-1 when there is none or the set cannot be made: it then sleeps on `wait_fd` itself,
/// and application threads never take the descriptor out), and the lease eventfd
/// ([`KICK`]; -1 when it cannot be made: no leases).
fn sleep_set(wait_fd: i32) -> (i32, i32) {
    if wait_fd < 0 {
        return (-1, -1);
    }
    // SAFETY: a new epoll set; the provider's descriptor and a new eventfd added for input.
    unsafe {
        let ep = libc::epoll_create1(libc::EPOLL_CLOEXEC);
        if ep < 0 {
            return (-1, -1);
        }
        let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: 0 };
        if libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, wait_fd, &mut ev) != 0 {
            libc::close(ep);
            return (-1, -1);
        }
        let kick = libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK);
        let mut kev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: KICK };
        if kick >= 0 && libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, kick, &mut kev) != 0 {
            libc::close(kick);
            return (ep, -1);
        }
        (ep, kick)
    }
}

/// Executes a request of a peer on this process: the engine's own kinds here, those on
/// this process's memory through the layer above ([`SERVE_ON_MEMORY`]).
fn serve(op: Op, h: &Hdr, body: &[u8]) -> Result<Vec<u8>> {
    match op {
        Op::Lookup => {
            let ep = crate::registry::lookup(h.a as u32, body)?;
            let mut out = Vec::with_capacity(8 + ep.payload.len());
            out.extend_from_slice(&ep.owner.slot.to_le_bytes());
            out.extend_from_slice(&ep.owner.gen.to_le_bytes());
            out.extend_from_slice(&ep.payload);
            Ok(out)
        }
        // Handled by the engine before `serve`.
        Op::Ping => Ok(Vec::new()),
        Op::Reply | Op::Expose | Op::Revoke => Err(Error::InvalidArg),
        _ => match SERVE_ON_MEMORY.get() {
            Some(f) => f(op, [h.a, h.b, h.c], body),
            None => Err(Error::Unsupported),
        },
    }
}

/// How a request on this process's memory (a put, an AMO, an event, a region operation,
/// a service call: the kinds [`serve`] does not answer itself) is executed, with the
/// header's three argument words and the body.  Set by the operations layer
/// ([`crate::rma`]) when the library is loaded: the engine carries requests and never
/// names the layer that executes them.
pub(crate) type ServeOnMemory = fn(Op, [u64; 3], &[u8]) -> Result<Vec<u8>>;
pub(crate) static SERVE_ON_MEMORY: std::sync::OnceLock<ServeOnMemory> = std::sync::OnceLock::new();

use crate::atomic::{AmoOp, AmoWidth};

fn encode_amo(width: AmoWidth, op: AmoOp) -> [u64; 3] {
    let w = match width {
        AmoWidth::I32 => 0,
        AmoWidth::I64 => 1,
        AmoWidth::F32 => 2,
        AmoWidth::F64 => 3,
    };
    let (k, x, y) = match op {
        AmoOp::Add(v) => (0, v, 0),
        AmoOp::And(v) => (1, v, 0),
        AmoOp::Or(v) => (2, v, 0),
        AmoOp::Xor(v) => (3, v, 0),
        AmoOp::Swap(v) => (4, v, 0),
        AmoOp::CompareSwap { compare, swap } => (5, compare, swap),
        AmoOp::MaskedSwap { mask, value } => (6, mask, value),
        AmoOp::AndXor { and, xor } => (7, and, xor),
        AmoOp::Min(v) => (8, v, 0),
        AmoOp::Max(v) => (9, v, 0),
    };
    [w | (k << 8), x, y]
}

pub(crate) fn decode_amo(code: u64, x: u64, y: u64) -> Result<(AmoWidth, AmoOp)> {
    let width = match code & 0xff {
        0 => AmoWidth::I32,
        1 => AmoWidth::I64,
        2 => AmoWidth::F32,
        3 => AmoWidth::F64,
        _ => return Err(Error::InvalidArg),
    };
    let op = match code >> 8 {
        0 => AmoOp::Add(x),
        1 => AmoOp::And(x),
        2 => AmoOp::Or(x),
        3 => AmoOp::Xor(x),
        4 => AmoOp::Swap(x),
        5 => AmoOp::CompareSwap { compare: x, swap: y },
        6 => AmoOp::MaskedSwap { mask: x, value: y },
        7 => AmoOp::AndXor { and: x, xor: y },
        8 => AmoOp::Min(x),
        9 => AmoOp::Max(x),
        _ => return Err(Error::InvalidArg),
    };
    Ok((width, op))
}

/// Whether every rank of the job runs on this machine: one node in the launcher's map, or
/// snrun's job (snrun starts ranks on its own machine only; its `-N` nodes are virtual).
/// The engine then listens on loopback, unreachable from other machines.
fn all_ranks_here() -> bool {
    std::env::var_os("SOFTNIC_JOBID").is_some() || crate::bootstrap::num_nodes().is_ok_and(|n| n <= 1)
}

/// 8 bytes from the kernel's random source.
fn random_u64() -> Result<u64> {
    let mut b = [0u8; 8];
    let mut got = 0;
    while got < b.len() {
        // SAFETY: writes at most the rest of `b`.
        let r = unsafe { libc::getrandom(b[got..].as_mut_ptr() as *mut c_void, b.len() - got, 0) };
        if r < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(Error::Os(libc::EIO));
        }
        got += r as usize;
    }
    Ok(u64::from_le_bytes(b))
}

/// Messages the engine dropped without serving them: [malformed, without the job's key
/// (forged, another job's, meant for another process), replayed].  None without an engine.
pub fn auth_drops() -> Option<[u64; 3]> {
    running().map(|e| std::array::from_fn(|i| e.drops[i].load(Ordering::Relaxed)))
}

/// How many of our sends and RMA operations the provider failed so far: the connection
/// to a live peer was reset, or a peer died (SOFTNIC_NET_STATS prints it at exit).
pub fn failed_completions() -> Option<u64> {
    running().map(|e| e.failed.load(Ordering::Relaxed))
}

/// Our endpoint's name (provider address bytes), as published in the job's KVS.
pub fn endpoint_name() -> Option<Vec<u8>> {
    running().map(|e| e.name.clone())
}

/// The rank the stats line names (learnt when the engine started).
static STATS_RANK: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// `SOFTNIC_NET_STATS`: one line on stderr at exit.
/// A process that exits within [`DEFER_NS`] of applying a put must not take its reply
/// along: its initiator would wait for the timeout and take it for dead.
extern "C" fn send_deferred_at_exit() {
    if let Some(e) = running() {
        e.flush_deferred();
    }
}

/// Whether the running engine uses our own transport (`SOFTNIC_NET_TRANSPORT=sockets`).
pub fn own_transport_running() -> bool {
    running().is_some_and(|e| e.sock.is_some())
}

/// The length of the next lease (adapted to how the program polls: [`Engine::adapt_lease`]).
pub fn lease_ns() -> Option<u64> {
    running().map(|e| e.lease_len_ns.load(Ordering::Relaxed))
}

/// Blocking calls so far that found no lease and so turned the progress thread's watch
/// of the provider off and on ([`Engine::polling`]).
pub fn calls_unleased() -> Option<u64> {
    running().map(|e| e.calls_unleased.load(Ordering::Relaxed))
}

/// Replies held back so far ([`Engine::hold_reply`]), by how they went: in front of
/// another message to the same process, on their own, by the progress thread's clock.
pub fn held_replies() -> Option<[u64; 3]> {
    running().map(|e| e.held_went.each_ref().map(|c| c.load(Ordering::Relaxed)))
}

/// The most bytes our own transport had queued for one process at once (what its
/// sockets could not take when sent, copied): None without it.
pub fn most_queued() -> Option<usize> {
    running().and_then(|e| e.sock.as_ref().map(|s| s.most_queued()))
}

extern "C" fn print_stats_at_exit() {
    if let Some(d) = auth_drops() {
        let rank = STATS_RANK.load(Ordering::Relaxed);
        let failed = failed_completions().unwrap_or(0);
        let h = held_replies().unwrap_or_default();
        let unleased = calls_unleased().unwrap_or(0);
        let queued = most_queued().map_or(String::new(), |q| format!("; at most {} KiB queued for one process", q.div_ceil(1024)));
        let line = format!("softnic network engine: rank {} dropped {} malformed, {} unauthenticated, {} replayed messages; {} sends or RMA operations failed; replies held back: {} rode with a message, {} went alone, {} by the clock; {} blocking calls outside a lease{}\n", rank, d[0], d[1], d[2], failed, h[0], h[1], h[2], unleased, queued);
        // SAFETY: writes our own bytes to stderr.
        unsafe { libc::write(2, line.as_ptr() as *const c_void, line.len()) };
    }
}

/// Test hook: the next put request this process sends is kept, as sent (header sealed),
/// for [`take_captured_put`], so that a test can replay a genuine request from outside.
static CAPTURE_PUT: AtomicBool = AtomicBool::new(false);
static CAPTURED: Mutex<Option<Vec<u8>>> = Mutex::new(None);

/// See [`CAPTURE_PUT`].
pub fn capture_next_put() {
    CAPTURE_PUT.store(true, Ordering::Release);
}

/// The put request captured after [`capture_next_put`], if one was sent since.
pub fn take_captured_put() -> Option<Vec<u8>> {
    CAPTURED.lock().unwrap_or_else(|e| e.into_inner()).take()
}

/// A bare endpoint of the engine's provider that speaks nothing of the engine's protocol:
/// for tests that play a process outside the job sending what it likes to an engine.
pub struct RawEndpoint {
    /// None with our own transport (each send a connection of its own).
    fi: Option<Fi>,
}

impl RawEndpoint {
    /// Opens one (messages only).
    pub fn open() -> Result<RawEndpoint> {
        if own_transport() {
            return Ok(RawEndpoint { fi: None });
        }
        let lib = Lib::open().map_err(|_| Error::Unsupported)?;
        // SAFETY: as in Engine::start.
        let o = unsafe { open_endpoint(&lib, false, ofi::FI_MSG)? };
        Ok(RawEndpoint { fi: Some(Fi { lib: Some(lib), fabric: o.fabric, domain: o.domain, rma: false, virt_addr: o.virt_addr, wait_fd: o.wait_fd, info: o.info, ep: o.ep, av: o.av, cq: o.cq }) })
    }

    /// Drives the provider for `d` (what it still holds goes out) before the caller exits.
    pub fn linger(&self, d: Duration) {
        let Some(fi) = &self.fi else { return };
        let end = Instant::now() + d;
        while Instant::now() < end {
            let mut ents = [fi_cq_data_entry { op_context: std::ptr::null_mut(), flags: 0, len: 0, buf: std::ptr::null_mut(), data: 0 }; 4];
            // SAFETY: our open completion queue; up to 4 entries into our buffer.
            unsafe {
                if let Some(read) = (*(*fi.cq).ops).read {
                    read(fi.cq, ents.as_mut_ptr() as *mut c_void, ents.len());
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Sends `bytes` to the endpoint named `name` (an [`endpoint_name`]); waits up to 5 s
    /// for the provider to take and complete it.
    pub fn send_to(&self, name: &[u8], bytes: &[u8]) -> Result<()> {
        let Some(fi) = &self.fi else { return crate::sock::send_once(name, bytes, Duration::from_secs(5)) };
        // SAFETY: our open objects; the buffer outlives the send (we wait for its
        // completion or give up with the process about to exit).
        unsafe {
            let mut a: fi_addr_t = ofi::FI_ADDR_UNSPEC;
            let insert = (*(*fi.av).ops).insert.ok_or(Error::Unsupported)?;
            if insert(fi.av, name.as_ptr() as *const c_void, 1, &mut a, 0, std::ptr::null_mut()) != 1 {
                return Err(Error::InvalidArg);
            }
            let buf = bytes.to_vec();
            let send = (*(*fi.ep).msg).send.ok_or(Error::Unsupported)?;
            let read = (*(*fi.cq).ops).read.ok_or(Error::Unsupported)?;
            // Our send's own completion (its context: the buffer's address), not an
            // earlier one's: the process may exit right after.
            let ctx = buf.as_ptr() as *mut c_void;
            let deadline = Instant::now() + Duration::from_secs(5);
            let mut posted = false;
            while Instant::now() < deadline {
                if !posted {
                    let rc = send(fi.ep, buf.as_ptr() as *const c_void, buf.len(), std::ptr::null_mut(), a, ctx);
                    if rc == 0 {
                        posted = true;
                    } else if rc as isize != -ofi::FI_EAGAIN {
                        return Err(to_err(fi.lib.as_ref(), "fi_send", rc as i64));
                    }
                }
                let mut ents = [fi_cq_data_entry { op_context: std::ptr::null_mut(), flags: 0, len: 0, buf: std::ptr::null_mut(), data: 0 }; 4];
                let n = read(fi.cq, ents.as_mut_ptr() as *mut c_void, ents.len());
                if n > 0 && ents[..n as usize].iter().any(|e| e.op_context == ctx) {
                    return Ok(());
                }
                if n as isize == -ofi::FI_EAVAIL {
                    return Err(Error::Os(libc::EIO));
                }
                if n <= 0 {
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
            Err(Error::Timeout)
        }
    }
}

// ---- bulk RMA --------------------------------------------------------------------------
//
// A put or get of at least RMA_MIN bytes goes as fi_writemsg/fi_readmsg into the target's
// memory, registered with the provider when a peer first asks for it (Op::Expose, served
// by the target's progress thread: same lookup and protection-domain check as a request)
// and cached by the initiator as a window (extent, access, remote key).  The initiator
// checks bounds and access against the window; anything it cannot do this way (no RMA
// on either side, outside the window, read-only, a provider error, a timeout) falls back
// to requests, whose target-side validation reports exactly the error it always did.
// Data goes through a bounce buffer owned by the operation: a waiter that gives up
// (timeout, peer death) returns while the provider may still read or write it.  Target
// memory is registered by virtual address range (mr_mode 0 admits only providers that
// need neither FI_MR_LOCAL nor FI_MR_ALLOCATED, which reach it through the process's
// mappings), so pages that mem.rs later rebinds in place stay reachable.
//
// Bandwidth, and what limits it (round 6; two virtual hosts, 1 MiB RDMA puts in windows
// of 64, counted with perf's syscall tracepoints).  The pipe is the sender's copy into
// one TCP stream: at each post 0-3 pieces of the 16 allowed were in flight (the post's
// sendmsg copies the whole MiB into the socket, and the target's progress thread drains
// faster, sleeping 4-5 times per MiB), so depth, piece size and registration are not the
// limit.  Per MiB the initiator makes ~11 system calls and ~2 context switches (its
// progress thread woken by the target's delivery ack, 0.5 per MiB), the target ~35 (9
// recvfrom, 4-5 sleeps); the bare TCP floor ~14 for both ends.  libfabric's own fi_write
// (`fi_bench write_bw`) busy-polls its target; with a sleeping target (`fi_bench
// sleep_write_bw`) it moved 1.1-4.6 GB/s, in the same minutes as ours 1.3-4.3 and the
// floor 1.0-5.2.  No effect on bandwidth: Polling around every asynchronous RMA post
// (initiator futex calls 1.7 -> 0 and context switches 2.3 -> 1.4 per MiB, for 2
// epoll_ctl and a trywait more), a lease taken by asynchronous RMA (leases churned: 5.5
// context switches per MiB), depths 2, 4 and 64, FI_TCP_ZEROCOPY_SIZE=64 KiB (loopback
// copies anyway), memfd-backed buffers under fi_bench.

impl Engine {
    /// Serves Op::Expose from `from`: registers our registration `key` with the provider
    /// (once) so that peers in protection domain `pd` can reach it by RMA.  Reply: [remote
    /// key, base, length, writable].  Errors: those of the registration lookup
    /// (`InvalidHandle`, `StaleHandle`), `ProtectionDomain`, `Unsupported` (no RMA here).
    fn expose(&self, key: u64, pd: u64, from: fi_addr_t, who: PeerId) -> Result<Vec<u8>> {
        if !self.fi.rma {
            return Err(Error::Unsupported);
        }
        // Held from the lookup to the insertion: `forget_registration` (which runs after the
        // registration's generation moved on) cannot slip in between, so an ended
        // registration never stays exposed.
        let mut ex = self.exposed.lock().unwrap_or_else(|e| e.into_inner());
        let r = crate::mem::query(crate::mem::MemKey::from_u64(key))?;
        if r.pd_key != pd {
            return Err(Error::ProtectionDomain);
        }
        let writable = r.access == crate::mem::Access::ReadWrite;
        let x = match ex.entry(key) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let (mr, rkey) = self.mr_reg(r.base, r.len, writable)?;
                v.insert(Exposed { mr: mr as usize, rkey, holders: Vec::new() })
            }
        };
        if !x.holders.contains(&(from, who)) {
            x.holders.push((from, who));
        }
        let rkey = x.rkey;
        Ok([rkey, r.base, r.len, writable as u64].iter().flat_map(|w| w.to_le_bytes()).collect())
    }

    /// Serves Op::Revoke of `who` (at `from`, request `req`): its registration `key` ended,
    /// so its windows are dropped.  `Some` when no RMA of ours runs through them (the
    /// answer goes now); else the answer is owed, and the last [`WindowUse`] to end
    /// sends it ([`Engine::answer_revoke`]).
    fn revoked(&self, who: PeerId, key: u64, from: fi_addr_t, req: u64) -> Option<()> {
        let r = self.remotes.lock().unwrap_or_else(|e| e.into_inner()).get(&(who.node, who.slot)).cloned();
        // No such peer known here: we hold none of its windows.
        let Some(r) = r.filter(|r| r.peer_id() == who) else { return Some(()) };
        let mut ws = r.windows.lock().unwrap_or_else(|e| e.into_inner());
        ws.revocations += 1;
        ws.by_key.retain(|&(k, _), _| k != key);
        if ws.busy.get(&key).is_some_and(|&n| n > 0) {
            ws.owed.push(OwedAnswer { key, to: from, req, who });
            return None;
        }
        Some(())
    }

    /// Sends an answer to Op::Revoke that [`Engine::revoked`] held back.
    fn answer_revoke(&self, o: OwedAnswer) {
        let r = Hdr { magic: MAGIC, op: Op::Reply as u8, status: 0, req: o.req, src_node: self.node, src_slot: self.me.slot, src_gen: self.me.gen, src_inc: self.inc, ..Default::default() };
        if let Err(e) = self.send(o.to, r.bytes().to_vec(), Seal::Reply(o.who)) {
            crate::sn_debug!("network engine", "answer to a revocation of node {} slot {} lost: {}", o.who.node, o.who.slot, e);
        }
    }

    /// Tells the holders of our registration `key`'s window that it ended (Op::Revoke).
    /// With `wait`, returns once each has answered (its RMA through the window is over),
    /// died, or stayed silent for the timeout (then taken as dead, as for any request);
    /// one holder after the other, each round trip polled for as [`Engine::call`] does.
    /// Else only sends the requests, whose answers then complete nobody.
    fn revoke_at_holders(&'static self, key: u64, holders: &[(fi_addr_t, PeerId)], wait: bool) {
        for &(_, who) in holders {
            let id = ProcId { slot: who.slot, gen: who.gen };
            let r = if wait {
                self.remote(who.node, id, 32).ok()
            } else {
                self.remotes.lock().unwrap_or_else(|e| e.into_inner()).get(&(who.node, who.slot)).cloned()
            };
            // Another process in that slot now, or none: nobody holds the window.
            let Some(r) = r.filter(|r| r.peer_id() == who && !r.is_dead()) else { continue };
            let polling = if wait { self.polling() } else { Polling(None) };
            // Not patient: a holder that exited cannot be connected to, and the provider
            // answers "try again" until the timeout (tcp;ofi_rxm).  A live holder's
            // connection exists (it asked for the window over it).
            let until = Instant::now() + REVOKE_PATIENCE;
            let asked = loop {
                let req = self.next_req.fetch_add(1, Ordering::Relaxed);
                match self.issue_with(req, None, &r, Op::Revoke, key, 0, 0, &[], false) {
                    Err(Error::Again) if Instant::now() < until => {
                        self.progress_once();
                    }
                    x => break x,
                }
            };
            match asked {
                Ok((req, call)) if wait => {
                    if let Err(e) = self.reply(&r, req, &call, polling) {
                        crate::sn_debug!("network engine", "revocation of {:#x} at node {} slot {}: {}", key, r.node, r.id.slot, e);
                    }
                }
                Ok(_) => {}
                Err(e) => crate::sn_debug!("network engine", "revocation of {:#x} not sent to node {} slot {}: {}", key, r.node, r.id.slot, e),
            }
        }
    }

    /// The `n`th remote key we ask the provider for: a keyed PRF of `n`, so that keys
    /// never repeat in practice and a process outside the job cannot guess one (RMA is
    /// checked by the provider's key alone).  Cut to the provider's key size.
    fn rkey_for(&self, n: u64) -> u64 {
        let k = crate::siphash::hash_words(&self.rkey_key, &[n]);
        // SAFETY: info is the fi_info the endpoint was made from.
        let size = unsafe { if (*self.fi.info).domain_attr.is_null() { 8 } else { (*(*self.fi.info).domain_attr).mr_key_size } };
        if size >= 8 || size == 0 {
            k
        } else {
            k & ((1u64 << (size * 8)) - 1)
        }
    }

    /// fi_mr_reg of [base, base+len) for remote reads (and writes): (MR, remote key).
    fn mr_reg(&self, base: u64, len: u64, writable: bool) -> Result<(*mut ofi::fid_mr, u64)> {
        // libfabric's system calls are cancellation points: not to be unwound halfway.
        let _masked = crate::cancel::Masked::new();
        let access = ofi::FI_REMOTE_READ | if writable { ofi::FI_REMOTE_WRITE } else { 0 };
        // A requested key the provider already uses (FI_ENOKEY) is skipped.
        for _ in 0..16 {
            let want = self.rkey_for(self.next_rkey.fetch_add(1, Ordering::Relaxed));
            let mut mr: *mut ofi::fid_mr = std::ptr::null_mut();
            // SAFETY: our open domain; the range is a live registration of this process.
            let rc = unsafe {
                let d = self.fi.domain;
                match (*(*d).mr).reg {
                    Some(f) => f(&mut (*d).fid, base as *const c_void, len as usize, access, 0, want, 0, &mut mr, std::ptr::null_mut()),
                    None => -libc::ENOSYS,
                }
            };
            if rc == 0 && !mr.is_null() {
                // SAFETY: a registration fi_mr_reg just returned.
                return Ok((mr, unsafe { (*mr).key }));
            }
            if rc != -ofi::FI_ENOKEY {
                crate::sn_debug!("network engine", "fi_mr_reg of {:#x}+{} failed: {}", base, len, lib_strerror(self.fi.lib.as_ref(), rc as i64));
                break;
            }
        }
        Err(Error::Unsupported)
    }

    /// `to`'s registration `key` as seen from protection domain `pd` (one Expose round trip
    /// the first time), with a use of it counted (given back when the use is dropped).  A
    /// target without RMA gives an empty window, kept so that it is not asked again;
    /// other errors are the target's validation, not kept.  A window whose answer came
    /// after a revocation from `to` is not kept nor used (`Unsupported`: requests then).
    fn window(&self, to: &Arc<Remote>, key: u64, pd: u64) -> Result<(Window, WindowUse)> {
        let use_of = |ws: &mut Windows| {
            *ws.busy.entry(key).or_insert(0) += 1;
            WindowUse { to: to.clone(), key }
        };
        let asked_at = {
            let mut ws = to.windows.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(w) = ws.by_key.get(&(key, pd)).copied() {
                return Ok((w, use_of(&mut ws)));
            }
            ws.revocations
        };
        let w = match self.call(to, Op::Expose, key, 0, pd, &[]) {
            Ok(d) => {
                let word = |i: usize| d.get(i * 8..i * 8 + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).ok_or(Error::Os(libc::EIO));
                Window { rkey: word(0)?, base: word(1)?, len: word(2)?, writable: word(3)? != 0 }
            }
            Err(Error::Unsupported) => Window { base: 0, len: 0, writable: false, rkey: 0 },
            Err(e) => return Err(e),
        };
        let mut ws = to.windows.lock().unwrap_or_else(|e| e.into_inner());
        if ws.revocations != asked_at {
            return Err(Error::Unsupported);
        }
        ws.by_key.insert((key, pd), w);
        Ok((w, use_of(&mut ws)))
    }

    /// Can `len` bytes at `addr` in `to`'s registration `key` go by RMA (asks for the
    /// window if needed)?  The window, with a use of it that the operation holds until
    /// it is over.
    fn rma_fits(&self, to: &Arc<Remote>, key: u64, addr: u64, len: usize, write: bool, pd: u64) -> Option<(Window, WindowUse)> {
        if !self.fi.rma || to.is_dead() {
            return None;
        }
        // Handle what has arrived: it may revoke the window.
        self.progress_once();
        let (w, u) = self.window(to, key, pd).ok()?;
        let end = addr.checked_add(len as u64)?;
        (addr >= w.base && end <= w.base.saturating_add(w.len) && (w.writable || !write)).then_some((w, u))
    }

    /// Moves the bytes of `io` to or from `addr` in `to`'s registration `key` by RMA.  Any
    /// error means "use requests" (which report the exact error); after a failed operation
    /// the window is dropped, so a stale one (the registration ended and its provider
    /// registration was closed) is asked for again.
    fn rma(&self, to: &Arc<Remote>, key: u64, addr: u64, mut io: Rma<'_>, pd: u64) -> Result<()> {
        let write = matches!(io, Rma::Write(_));
        let (w, _use) = self.rma_fits(to, key, addr, io.len(), write, pd).ok_or(Error::Unsupported)?;
        let mut done = 0;
        while done < io.len() {
            let n = (io.len() - done).min(self.max_rma);
            let a = addr + done as u64; // inside the window: cannot overflow
            let r = match &mut io {
                Rma::Write(s) => self.rma_one(to, &w, a, Rma::Write(&s[done..done + n])),
                Rma::Read(d) => self.rma_one(to, &w, a, Rma::Read(&mut d[done..done + n])),
            };
            if let Err(e) = r {
                to.windows.lock().unwrap_or_else(|e| e.into_inner()).by_key.remove(&(key, pd));
                return Err(e);
            }
            done += n;
        }
        Ok(())
    }

    /// One RMA operation (at most `max_rma` bytes) through window `w`; waits for its
    /// completion (delivery at the target for a write) like a request waits for its reply.
    fn rma_one(&self, to: &Arc<Remote>, w: &Window, addr: u64, io: Rma<'_>) -> Result<()> {
        let len = io.len();
        let mut bounce = self.bounces.lock().unwrap_or_else(|e| e.into_inner()).pop().unwrap_or_default();
        match &io {
            Rma::Write(s) => {
                bounce.clear();
                bounce.extend_from_slice(s);
            }
            // Only grown parts are zeroed: the pooled buffer is reused as it is.
            Rma::Read(_) => bounce.resize(len, 0),
        }
        let iov = libc::iovec { iov_base: bounce.as_mut_ptr() as *mut c_void, iov_len: len };
        // Moving the Vec into the call keeps its heap buffer (and `iov`) where it is.
        let call = Arc::new(Call::new(to, bounce, None));
        let req = self.next_req.fetch_add(1, Ordering::Relaxed);
        // Pending like a request, so that `mark_dead` wakes the waiter too.
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).insert(req, call.clone());
        let polling = self.polling();
        if let Err(e) = self.post_rma(to, w, addr, &iov, write_op(&io), &call) {
            self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&req);
            return Err(e);
        }
        let r = self.reply(to, req, &call, polling);
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&req);
        let data = r?;
        if let Rma::Read(d) = io {
            d.copy_from_slice(data.get(..len).ok_or(Error::Os(libc::EIO))?);
        }
        self.give_back(data);
        Ok(())
    }

    /// Keeps a bounce buffer for reuse (up to one per asynchronous piece in flight).
    fn give_back(&self, b: Vec<u8>) {
        let mut pool = self.bounces.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < RMA_POOL.max(self.async_max) && b.capacity() > 0 {
            pool.push(b);
        }
    }

    /// Starts a put of the `len` bytes at `src` into `to`'s registration `key` at `addr`
    /// as RMA pieces that travel together (up to `SOFTNIC_NET_RMA_DEPTH` pieces in flight
    /// per process), and returns; `done` runs once every piece has arrived (or one
    /// failed, or the peer died).  The provider reads the source in place (no copy: the
    /// copy cost a third of the initiator's core at 1 MiB).  `Err(done)` when RMA cannot
    /// carry it (no RMA, outside the window the target exposed, read-only): nothing
    /// started, and the caller uses the synchronous path, which reports the exact error.
    ///
    /// # Safety
    /// `src` is readable for `len` bytes until `done` has run.  If the peer dies, `done`
    /// may run while the provider still holds the piece; it then only reads the source
    /// (through the kernel's socket copy with the tcp provider, where a vanished page
    /// gives EFAULT, not a fault) and sends it nowhere useful.
    ///
    /// A put shorter than [`ASYNC_RMA_MIN`] goes as put requests that the caller does not wait
    /// for (their data copied into the messages before this returns): their replies
    /// finish it, bounds and access errors included, as the synchronous path would
    /// report them.
    pub unsafe fn put_async(&self, to: &Arc<Remote>, key: u64, addr: u64, src: *const u8, len: usize, pd: u64, done: Done) -> std::result::Result<(), Done> {
        if len > 0 && (len < ASYNC_RMA_MIN || !self.fi.rma) {
            // SAFETY: the caller's contract; read (copied into the requests) before we return.
            let bytes = unsafe { std::slice::from_raw_parts(src, len) };
            self.put_requests_async(to, key, addr, bytes, pd, done);
            return Ok(());
        }
        match self.rma_fits(to, key, addr, len, true, pd) {
            Some((w, u)) if len > 0 => {
                // The window's use ends with the operation (after its last piece arrived).
                let done: Done = Box::new(move |r| {
                    drop(u);
                    done(r)
                });
                self.rma_async(to, &w, addr, len, Ok(src as usize), done);
                Ok(())
            }
            _ => Err(done),
        }
    }

    /// The data of one put request: [`MAX_DATA`] (a receive buffer's worth) with
    /// libfabric; on our own transport, which reads frames of any length up to
    /// [`crate::sock::MAX_FRAME`] and takes the data from the caller's buffer, [`SOCK_PUT_PIECE`].
    fn put_piece(&self) -> usize {
        if self.sock.is_some() {
            SOCK_PUT_PIECE
        } else {
            MAX_DATA
        }
    }

    /// A short asynchronous put as requests of at most [`Engine::put_piece`] bytes, each a piece
    /// of one operation (see [`Engine::put_async`]).  Requests to one target are served
    /// in issue order, so its pieces land in order too.
    fn put_requests_async(&self, to: &Arc<Remote>, key: u64, addr: u64, src: &[u8], pd: u64, done: Done) {
        let piece_len = self.put_piece();
        let n = src.len().div_ceil(piece_len);
        // Several pieces: this thread sends them and reads their replies while it waits
        // for room in the pipeline; they must not wake the progress thread meanwhile
        // (see `polling`).
        let _polling = if n > 1 { self.polling() } else { Polling(None) };
        let op = Arc::new(Async { remaining: AtomicUsize::new(n), error: std::sync::atomic::AtomicI32::new(0), done: Mutex::new(Some(done)) });
        for (i, chunk) in src.chunks(piece_len).enumerate() {
            // Short pieces hold no buffer of ours while in flight: a deeper pipeline.
            self.wait_for_depth(to, self.async_max * SHORT_DEPTH_FACTOR);
            let req = self.next_req.fetch_add(1, Ordering::Relaxed);
            let piece = Piece { op: op.clone(), req, read_into: None, finished: AtomicBool::new(false), deadline: Instant::now() + self.timeout };
            self.async_in_flight.fetch_add(1, Ordering::AcqRel);
            let Some(a) = addr.checked_add((i * piece_len) as u64) else {
                piece.finish(err_code(Error::OutOfBounds), &[]);
                continue;
            };
            // A request that cannot be sent finishes its piece with the error.
            let _ = self.issue_as(req, Some(piece), to, Op::Put, key, a, pd, &[chunk]);
        }
    }

    /// Drives the provider until fewer than `limit` asynchronous pieces are in flight
    /// (or the peer died) and, on our own transport, until `to`'s socket took every
    /// byte queued for it (while a piece is in flight: its deadline bounds the wait).
    ///
    /// Why the second condition: what a socket cannot take is copied into the
    /// transport's queue (crate::sock), so a pipeline deeper than the kernel's socket
    /// buffers (64 pieces of 1 MiB against 4 MiB) copied most of a bulk put's bytes once
    /// more at the initiator, into freshly mapped buffers (page faults, and unmappings by
    /// whichever thread wrote them out), and kept tens of MiB in flight, out of cache by
    /// the time the target read them.  Waiting instead leaves the pipelining to the
    /// kernel, which does it anyway.  RDMA puts of 16 MiB, two virtual hosts,
    /// alternating runs: 1.07-1.34 -> 2.80-3.18 GB/s; 4 MiB 1.86-2.23 -> 2.22-3.16.
    fn wait_for_depth(&self, to: &Arc<Remote>, limit: usize) {
        let backlog = |e: &Self| e.sock.as_ref().is_some_and(|s| s.backlog(to.addr) > 0) && e.async_in_flight.load(Ordering::Acquire) > 0;
        if self.async_in_flight.load(Ordering::Acquire) < limit && !backlog(self) {
            return;
        }
        // We drive the provider ourselves meanwhile: its signals (our sends, the pieces'
        // completions) must not wake the progress thread, which would preempt us on our
        // core and contend for the provider's locks only to find the work done (as for a
        // reply, see `polling`).  With the pipeline full (SOFTNIC_NET_RMA_DEPTH=1, 1 MiB
        // RDMA puts, two virtual hosts), per piece at the initiator: context switches
        // 5.4 -> 0.2, futex calls 3.0 -> 0.1, system calls 67-76 -> 22-30.
        let _polling = self.polling();
        while (self.async_in_flight.load(Ordering::Acquire) >= limit || backlog(self)) && !to.is_dead() {
            if !self.serve_or_flush() {
                std::hint::spin_loop();
            }
        }
    }

    /// As [`Engine::put_async`] for a get into `dst` (`dst_len` bytes at that address),
    /// which the caller keeps valid until `done` runs.
    ///
    /// # Safety
    /// `dst` is valid for writes of `dst_len` bytes until `done` has run.
    pub unsafe fn get_async(&self, to: &Arc<Remote>, key: u64, addr: u64, dst: *mut u8, dst_len: usize, pd: u64, done: Done) -> std::result::Result<(), Done> {
        if dst_len < RMA_MIN {
            // A short get is one round trip anyway: the synchronous request.
            return Err(done);
        }
        match self.rma_fits(to, key, addr, dst_len, false, pd) {
            Some((w, u)) => {
                let done: Done = Box::new(move |r| {
                    drop(u);
                    done(r)
                });
                self.rma_async(to, &w, addr, dst_len, Err(dst as usize), done);
                Ok(())
            }
            _ => Err(done),
        }
    }

    /// Issues the pieces of an asynchronous operation (`io`: the address of the bytes to
    /// write, which the provider reads in place, or the address to read into, through a
    /// bounce buffer: a get's destination must never be written after `done` ran).
    fn rma_async(&self, to: &Arc<Remote>, w: &Window, addr: u64, len: usize, io: std::result::Result<usize, usize>, done: Done) {
        let n = len.div_ceil(self.max_rma);
        let op = Arc::new(Async { remaining: AtomicUsize::new(n), error: std::sync::atomic::AtomicI32::new(0), done: Mutex::new(Some(done)) });
        for i in 0..n {
            let off = i * self.max_rma;
            let k = (len - off).min(self.max_rma);
            // Bounded depth: wait for earlier pieces (driving the provider ourselves).
            self.wait_for_depth(to, self.async_max);
            let req = self.next_req.fetch_add(1, Ordering::Relaxed);
            let piece = Piece { op: op.clone(), req, read_into: io.err().map(|d| (d + off, k)), finished: AtomicBool::new(false), deadline: Instant::now() + self.timeout };
            let (bounce, iov) = match io {
                Ok(src) => (Vec::new(), libc::iovec { iov_base: (src + off) as *mut c_void, iov_len: k }),
                Err(_) => {
                    let mut b = self.bounces.lock().unwrap_or_else(|e| e.into_inner()).pop().unwrap_or_default();
                    b.resize(k, 0);
                    let iov = libc::iovec { iov_base: b.as_mut_ptr() as *mut c_void, iov_len: k };
                    (b, iov)
                }
            };
            let call = Arc::new(Call::new(to, bounce, Some(piece)));
            // Counted from here; finishing the piece (whoever does it) uncounts it.
            self.async_in_flight.fetch_add(1, Ordering::AcqRel);
            if to.is_dead() {
                call.piece.as_ref().expect("set").finish(err_code(Error::PeerDead), &[]);
                continue;
            }
            self.pending.lock().unwrap_or_else(|e| e.into_inner()).insert(req, call.clone());
            let a = addr + off as u64; // inside the window: cannot overflow
            if let Err(e) = self.post_rma(to, w, a, &iov, io.is_ok(), &call) {
                self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&req);
                call.piece.as_ref().expect("set").finish(err_code(e), &[]);
            }
        }
    }

    /// Posts one RMA operation for `call` (whose context reference the provider then
    /// holds until the completion).
    fn post_rma(&self, to: &Arc<Remote>, w: &Window, addr: u64, iov: &libc::iovec, write: bool, call: &Arc<Call>) -> Result<()> {
        // libfabric's system calls are cancellation points: not to be unwound halfway.
        let _masked = crate::cancel::Masked::new();
        let raw = Arc::into_raw(call.clone());
        let rma_iov = ofi::fi_rma_iov { addr: if self.fi.virt_addr { addr } else { addr - w.base }, len: iov.iov_len, key: w.rkey };
        let msg = ofi::fi_msg_rma {
            msg_iov: iov,
            desc: std::ptr::null_mut(),
            iov_count: 1,
            addr: to.addr,
            rma_iov: &rma_iov,
            rma_iov_count: 1,
            context: (raw as usize | RMA_TAG) as *mut c_void,
            data: 0,
        };
        let deadline = Instant::now() + self.timeout;
        loop {
            // SAFETY: as in `rma_one`: the descriptors live across the call, the buffer
            // until the completion (owned by the call whose reference the context holds).
            let rc = unsafe {
                let ops = (*self.fi.ep).rma;
                let f = if write { (*ops).writemsg } else { (*ops).readmsg };
                let flags = if write { ofi::FI_COMPLETION | ofi::FI_DELIVERY_COMPLETE } else { ofi::FI_COMPLETION };
                match f {
                    Some(f) => f(self.fi.ep, &msg, flags),
                    None => -libc::ENOSYS as isize,
                }
            };
            if rc == 0 {
                return Ok(());
            }
            if rc as isize != -ofi::FI_EAGAIN || Instant::now() > deadline {
                // SAFETY: not posted: the context's reference is ours again.
                drop(unsafe { Arc::from_raw(raw) });
                crate::sn_debug!("network engine", "RMA to node {} slot {} not posted: {}", to.node, to.id.slot, lib_strerror(self.fi.lib.as_ref(), rc as i64));
                return Err(Error::Os(libc::EIO));
            }
            self.progress_once();
        }
    }
}

fn write_op(io: &Rma<'_>) -> bool {
    matches!(io, Rma::Write(_))
}

// ---- the operations, as the rma module calls them ----------------------------------

impl Engine {
    pub fn put(&self, to: &Arc<Remote>, key: u64, addr: u64, src: &[u8], pd: u64) -> Result<()> {
        if src.is_empty() {
            // Validation only: an empty put still names a region.
            return self.call(to, Op::Put, key, addr, pd, &[]).map(|_| ());
        }
        if src.len() >= RMA_MIN && self.rma(to, key, addr, Rma::Write(src), pd).is_ok() {
            return Ok(());
        }
        let piece = self.put_piece();
        if src.len() <= piece {
            return self.call(to, Op::Put, key, addr, pd, &[src]).map(|_| ());
        }
        self.put_pieces(to, key, addr, src, pd, piece)
    }

    /// A put of several request pieces: all of them sent, then all their replies
    /// collected (the target serves one initiator's requests in order, so the pieces land
    /// in order); the first error is the put's.  Before: one round trip per piece, the
    /// link idle while each reply travelled back and the next piece was sent (a Portals
    /// put of 64 MiB over two virtual hosts moved ~1 GB/s that way).  On our own
    /// transport each piece waits for the target's socket to take what was queued before
    /// it (see `wait_for_depth`), so nothing is copied twice.
    fn put_pieces(&self, to: &Arc<Remote>, key: u64, addr: u64, src: &[u8], pd: u64, piece: usize) -> Result<()> {
        // As in `call`: held off for the whole operation.
        let _masked = crate::cancel::Masked::new();
        let _span = crate::trace::span("net", "network request").map(|s| s.arg("op", Op::Put as u64).arg("bytes", src.len() as u64).arg("node", to.node as u64));
        let mut polling = Some(self.polling());
        let deadline = Instant::now() + self.timeout;
        let mut sent = Vec::with_capacity(src.len().div_ceil(piece));
        let mut first_err = None;
        for (i, chunk) in src.chunks(piece).enumerate() {
            let Some(a) = addr.checked_add((i * piece) as u64) else {
                first_err = Some(Error::OutOfBounds);
                break;
            };
            self.drain_backlog(to, deadline);
            match self.issue(to, Op::Put, key, a, pd, &[chunk]) {
                Ok(x) => sent.push(x),
                Err(e) => {
                    first_err = Some(e);
                    break;
                }
            }
        }
        for (req, call) in sent {
            let p = polling.take().unwrap_or_else(|| self.polling());
            if let Err(e) = self.reply(to, req, &call, p) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Drives the provider until our own transport's socket to `to` took every byte
    /// queued for it (see `wait_for_depth`), the peer died, or `deadline` passed (the
    /// peer is then taken as dead, as for a reply that does not come).
    fn drain_backlog(&self, to: &Arc<Remote>, deadline: Instant) {
        let Some(s) = &self.sock else { return };
        while s.backlog(to.addr) > 0 && !to.is_dead() {
            if Instant::now() >= deadline {
                crate::sn_warn!("network engine", "node {} slot {} took nothing sent to it within {:?}: peer taken as dead", to.node, to.id.slot, self.timeout);
                self.mark_dead(to);
                return;
            }
            if !self.serve_or_flush() {
                std::hint::spin_loop();
            }
        }
    }

    pub fn get(&self, to: &Arc<Remote>, key: u64, addr: u64, dst: &mut [u8], pd: u64) -> Result<()> {
        if dst.is_empty() {
            return self.call(to, Op::Get, key, addr, pd, &[&0u64.to_le_bytes()]).map(|_| ());
        }
        if dst.len() >= RMA_MIN && self.rma(to, key, addr, Rma::Read(&mut *dst), pd).is_ok() {
            return Ok(());
        }
        if dst.len() <= MAX_DATA {
            let d = self.call(to, Op::Get, key, addr, pd, &[&(dst.len() as u64).to_le_bytes()])?;
            if d.len() != dst.len() {
                return Err(Error::Os(libc::EIO));
            }
            dst.copy_from_slice(&d);
            return Ok(());
        }
        self.get_pieces(to, key, addr, dst, pd)
    }

    /// A get of several request pieces ([`MAX_DATA`] each), up to [`GET_WINDOW`] of them
    /// in flight (instead of one round trip per piece, as `put_pieces`); the first error
    /// is the get's.  The window, not every piece at once: the replies carry the data,
    /// and what the target's socket cannot take the target copies into its queue.
    fn get_pieces(&self, to: &Arc<Remote>, key: u64, addr: u64, dst: &mut [u8], pd: u64) -> Result<()> {
        // As in `call`: held off for the whole operation.
        let _masked = crate::cancel::Masked::new();
        let _span = crate::trace::span("net", "network request").map(|s| s.arg("op", Op::Get as u64).arg("bytes", dst.len() as u64).arg("node", to.node as u64));
        let mut polling = Some(self.polling());
        let n = dst.len().div_ceil(MAX_DATA);
        let mut in_flight = std::collections::VecDeque::with_capacity(GET_WINDOW);
        let (mut next, mut first_err) = (0usize, None);
        loop {
            while first_err.is_none() && next < n && in_flight.len() < GET_WINDOW {
                let (off, len) = (next * MAX_DATA, (dst.len() - next * MAX_DATA).min(MAX_DATA));
                match addr.checked_add(off as u64).ok_or(Error::OutOfBounds).and_then(|a| self.issue(to, Op::Get, key, a, pd, &[&(len as u64).to_le_bytes()])) {
                    Ok((req, call)) => in_flight.push_back((off, len, req, call)),
                    Err(e) => first_err = Some(e),
                }
                next += 1;
            }
            let Some((off, len, req, call)) = in_flight.pop_front() else { break };
            let p = polling.take().unwrap_or_else(|| self.polling());
            match self.reply(to, req, &call, p) {
                Ok(d) if d.len() == len => dst[off..off + len].copy_from_slice(&d),
                Ok(_) => {
                    first_err.get_or_insert(Error::Os(libc::EIO));
                }
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    pub fn atomic(&self, to: &Arc<Remote>, key: u64, addr: u64, width: AmoWidth, op: AmoOp, pd: u64) -> Result<u64> {
        let w = encode_amo(width, op);
        let b: Vec<u8> = w.iter().flat_map(|v| v.to_le_bytes()).collect();
        let d = self.call(to, Op::Amo, key, addr, pd, &[&b])?;
        d.get(..8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).ok_or(Error::Os(libc::EIO))
    }

    pub fn check(&self, to: &Arc<Remote>, key: u64, addr: u64, len: usize, write: bool, pd: u64) -> Result<()> {
        let b: Vec<u8> = [len as u64, write as u64].iter().flat_map(|v| v.to_le_bytes()).collect();
        self.call(to, Op::Check, key, addr, pd, &[&b]).map(|_| ())
    }

    pub fn store_u64(&self, to: &Arc<Remote>, key: u64, addr: u64, v: u64, pd: u64) -> Result<()> {
        self.call(to, Op::Store, key, addr, pd, &[&v.to_le_bytes()]).map(|_| ())
    }

    pub fn notify_ring(&self, to: &Arc<Remote>, key: u64, pd: u64) -> Result<Option<[u64; 3]>> {
        let d = self.call(to, Op::Notify, key, 0, pd, &[])?;
        let w = |i: usize| d.get(i * 8..i * 8 + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).ok_or(Error::Os(libc::EIO));
        Ok((w(0)? != 0).then(|| [w(1).unwrap_or(0), w(2).unwrap_or(0), w(3).unwrap_or(0)]))
    }

    /// See [`crate::rma::Live::put_compound`]: one request when it fits, else the pieces
    /// first and the flag and notification with the last one.  Pieces that can go by RMA
    /// do, in order between requests carrying the others, once the flag's place is
    /// validated; the flag and notification come after all of them.
    pub fn put_compound(&self, to: &Arc<Remote>, pieces: &[(crate::mem::MemKey, u64, &[u8])], flag: Option<(crate::mem::MemKey, u64, u64)>, notify: Option<(crate::mem::MemKey, u64)>, pd: u64) -> Result<()> {
        let total: usize = pieces.iter().map(|p| 24 + ((p.2.len() + 7) & !7)).sum();
        if total + 64 > MAX_DATA {
            // Too big for one message: validate the flag, move the bulk, then finish with a
            // compound request that carries only the flag and the notification.
            if let Some((k, a, _)) = flag {
                self.check(to, k.to_u64(), a, 8, true, pd)?;
            }
            for &(k, a, src) in pieces {
                self.put(to, k.to_u64(), a, src, pd)?;
            }
            if flag.is_none() && notify.is_none() {
                return Ok(()); // the final request would carry nothing
            }
            return self.put_compound(to, &[], flag, notify, pd);
        }
        let by_rma = |&(k, a, src): &(crate::mem::MemKey, u64, &[u8])| src.len() >= RMA_MIN && self.rma_fits(to, k.to_u64(), a, src.len(), true, pd).is_some();
        if pieces.iter().any(by_rma) {
            if let Some((k, a, _)) = flag {
                self.check(to, k.to_u64(), a, 8, true, pd)?;
            }
            let mut start = 0;
            for (i, p) in pieces.iter().enumerate() {
                if by_rma(p) {
                    // The pieces before it first: a failing piece stops the rest.
                    if start < i {
                        self.put_compound(to, &pieces[start..i], None, None, pd)?;
                    }
                    self.put(to, p.0.to_u64(), p.1, p.2, pd)?;
                    start = i + 1;
                }
            }
            if start == pieces.len() && flag.is_none() && notify.is_none() {
                return Ok(());
            }
            // Smaller than this call's pieces, and none goes by RMA: one plain request.
            return self.put_compound(to, &pieces[start..], flag, notify, pd);
        }
        let mut b = Vec::with_capacity(64 + total);
        let (fk, fa, fv) = flag.map_or((0, 0, 0), |(k, a, v)| (k.to_u64(), a, v));
        let (nk, ne) = notify.map_or((0, 0), |(k, e)| (k.to_u64(), e));
        for w in [pieces.len() as u64, flag.is_some() as u64, fk, fa, fv, notify.is_some() as u64, nk, ne] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        for &(k, a, src) in pieces {
            for w in [k.to_u64(), a, src.len() as u64] {
                b.extend_from_slice(&w.to_le_bytes());
            }
            b.extend_from_slice(src);
            b.resize((b.len() + 7) & !7, 0);
        }
        self.call(to, Op::PutCompound, 0, 0, pd, &[&b]).map(|_| ())
    }

    pub fn region_read(&self, to: &Arc<Remote>, loc: [u64; 3], off: usize, dst: &mut [u8]) -> Result<()> {
        for (i, chunk) in dst.chunks_mut(MAX_DATA).enumerate() {
            let o = (off + i * MAX_DATA) as u64;
            let b: Vec<u8> = [o, chunk.len() as u64].iter().flat_map(|v| v.to_le_bytes()).collect();
            let d = self.call(to, Op::RegionRead, loc[0], loc[1], loc[2], &[&b])?;
            if d.len() != chunk.len() {
                return Err(Error::Os(libc::EIO));
            }
            chunk.copy_from_slice(&d);
        }
        Ok(())
    }

    /// `publish`: `src` is one u64 stored with Release (a state word).
    pub fn region_write(&self, to: &Arc<Remote>, loc: [u64; 3], off: usize, src: &[u8], publish: bool) -> Result<()> {
        for (i, chunk) in src.chunks(MAX_DATA).enumerate() {
            let o = (off + i * MAX_DATA) as u64;
            let b: Vec<u8> = [o, publish as u64].iter().flat_map(|v| v.to_le_bytes()).collect();
            self.call(to, Op::RegionWrite, loc[0], loc[1], loc[2], &[&b, chunk])?;
        }
        Ok(())
    }

    /// Returns the value found (the swap happened when it equals `old`).
    pub fn region_cas(&self, to: &Arc<Remote>, loc: [u64; 3], off: usize, old: u64, new: u64) -> Result<u64> {
        let b: Vec<u8> = [off as u64, old, new].iter().flat_map(|v| v.to_le_bytes()).collect();
        let d = self.call(to, Op::RegionCas, loc[0], loc[1], loc[2], &[&b])?;
        d.get(..8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).ok_or(Error::Os(libc::EIO))
    }

    pub fn region_gather(&self, to: &Arc<Remote>, loc: [u64; 3], off: usize, stride: usize, count: usize, n: usize) -> Result<Vec<u8>> {
        let per = (MAX_DATA / n.max(1)).max(1);
        let mut out = Vec::with_capacity(count * n);
        let mut i = 0;
        while i < count {
            let c = per.min(count - i);
            let b: Vec<u8> = [(off + i * stride) as u64, stride as u64, c as u64, n as u64].iter().flat_map(|v| v.to_le_bytes()).collect();
            out.extend_from_slice(&self.call(to, Op::RegionGather, loc[0], loc[1], loc[2], &[&b])?);
            i += c;
        }
        Ok(out)
    }

    pub fn region_notify(&self, to: &Arc<Remote>, loc: [u64; 3], off: usize) -> Result<()> {
        self.call(to, Op::RegionNotify, loc[0], loc[1], loc[2], &[&(off as u64).to_le_bytes()]).map(|_| ())
    }

    /// Runs service `id` at `to` (see [`crate::rma::Peer::call`]); its reply.
    pub fn call_service(&self, to: &Arc<Remote>, id: u32, req: &[u8]) -> Result<Vec<u8>> {
        self.call(to, Op::Call, id as u64, 0, 0, &[req])
    }

    /// Looks (`api`, `key`) up in the registry of node `node`, asking its processes this
    /// engine knows in turn until one answers (they share that registry, so one answer is
    /// the node's).  Waits, up to the timeout, while the node has no known process and
    /// some rank has not published yet.  `NotFound`, `PeerDead` (none answered).
    pub fn lookup(&'static self, node: u32, api: u32, key: &[u8]) -> Result<(ProcId, [u8; crate::registry::PAYLOAD_LEN])> {
        let deadline = Instant::now() + self.timeout;
        let procs = loop {
            let (on, pending) = self.procs_on(node)?;
            if !on.is_empty() {
                break on;
            }
            if !pending || Instant::now() >= deadline {
                return Err(Error::NotFound);
            }
            crate::cancel::nap(Duration::from_millis(5));
        };
        let mut last = Error::PeerDead;
        for id in procs {
            let r = match self.remote(node, id, 32) {
                Ok(r) if !r.is_dead() => r,
                Ok(_) => continue,
                Err(e) => {
                    last = e;
                    continue;
                }
            };
            match self.call(&r, Op::Lookup, api as u64, 0, 0, &[key]) {
                Ok(d) if d.len() >= 8 + crate::registry::PAYLOAD_LEN => {
                    let w = |i: usize| u32::from_le_bytes(d[i..i + 4].try_into().expect("4 bytes"));
                    let mut payload = [0u8; crate::registry::PAYLOAD_LEN];
                    payload.copy_from_slice(&d[8..8 + crate::registry::PAYLOAD_LEN]);
                    return Ok((ProcId { slot: w(0), gen: w(4) }, payload));
                }
                Ok(_) => return Err(Error::Os(libc::EIO)),
                Err(Error::PeerDead) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    pub fn post_event(&self, to: &Arc<Remote>, loc: [u64; 3], entry: &[u8], overrun: bool) -> Result<bool> {
        let mut b = Vec::with_capacity(32 + entry.len());
        for w in [loc[0], loc[1], loc[2], overrun as u64] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        b.extend_from_slice(entry);
        let d = self.call(to, Op::Event, 0, 0, 0, &[&b])?;
        Ok(d.first().copied().unwrap_or(0) != 0)
    }
}

/// Why the engine cannot run over provider `name` (None: it can).
///
/// libfabric 1.16-1.17's `net` provider (alone or under `ofi_rxm`; 1.18 replaced it with
/// the new `tcp`) leaves its completion queue's wait descriptor readable once a message
/// went through, with the queue empty and after fi_trywait answered FI_SUCCESS: the
/// documented "fi_trywait, then block on the descriptor" loop never blocks.  Our progress
/// thread would spin at real-time priority on the application's core and starve it (a
/// put ping-pong made no progress in 60 s, both cores busy).  Reproduction without the
/// engine: c-tests/tools/trywait-stuck.  Refused, with this reason, rather than hang.
fn refused_provider(name: &str) -> Option<String> {
    let core = name.split(';').next().unwrap_or(name);
    (core == "net").then(|| {
        format!(
            "provider {} refused: its completion queue's wait descriptor stays readable after fi_trywait succeeds (libfabric 1.17's net provider), so the progress thread could never sleep and would starve the application; use tcp;ofi_rxm (FI_PROVIDER unset) or udp;ofi_rxd",
            name
        )
    })
}

/// The inject size asked of the provider: a header and up to 168 bytes of payload.
const INJECT_WANTED: usize = HDR + 168;

/// Opens fabric, domain, completion queue, address vector and an enabled endpoint with
/// capabilities `caps` (falling back to messages alone), on the loopback address when
/// `loopback` and the provider can (else where the provider puts it: its first
/// interface, or `FI_TCP_IFACE`'s).
///
/// # Safety
/// `lib` is a loaded libfabric.
unsafe fn open_endpoint(lib: &Lib, loopback: bool, caps: u64) -> Result<Objs> {
    // SAFETY (whole function): the libfabric object life cycle with pointers it returned.
    unsafe {
        let hints = (lib.dupinfo)(std::ptr::null());
        if hints.is_null() {
            return Err(Error::NoSpace);
        }
        // RMA for bulk transfers where the provider has it; messages alone otherwise.
        (*hints).caps = caps;
        (*(*hints).ep_attr).type_ = ofi::FI_EP_RDM;
        (*(*hints).domain_attr).threading = ofi::FI_THREAD_SAFE;
        (*(*hints).domain_attr).mr_mode = 0;
        (*(*hints).tx_attr).msg_order = 1 << 8; // FI_ORDER_SAS
        (*(*hints).rx_attr).msg_order = 1 << 8;
        if std::env::var_os("FI_PROVIDER").is_none() {
            // fi_freeinfo frees this with free(3): allocate it with strdup.
            let p = CString::new("tcp;ofi_rxm").expect("no NUL");
            (*(*hints).fabric_attr).prov_name = libc::strdup(p.as_ptr());
        }
        let mut info: *mut fi_info = std::ptr::null_mut();
        let lo = CString::new("127.0.0.1").expect("no NUL");
        let getinfo = |hints: *mut fi_info, info: &mut *mut fi_info| {
            if loopback {
                // The provider's source address on loopback (FI_SOURCE: `node` names us).
                let rc = (lib.getinfo)(ofi::API_VERSION, lo.as_ptr(), std::ptr::null(), ofi::FI_SOURCE, hints, info);
                if rc == 0 && !info.is_null() {
                    return rc;
                }
                crate::sn_debug!("network engine", "no endpoint on loopback ({}): the provider's default address", lib.strerror(rc as i64));
            }
            (lib.getinfo)(ofi::API_VERSION, std::ptr::null(), std::ptr::null(), 0, hints, info)
        };
        // Room to inject a header-only message (a reply, an ack) and a small payload: the
        // header with its MAC is HDR bytes, past the 64 that tcp;ofi_rxm offers unasked
        // (a message past the inject size is sent with a completion to reap: dearer).
        (*(*hints).tx_attr).inject_size = INJECT_WANTED;
        let mut rc = getinfo(hints, &mut info);
        if rc != 0 || info.is_null() {
            (*(*hints).tx_attr).inject_size = 0;
            rc = getinfo(hints, &mut info);
        }
        let mut rma = caps & ofi::FI_RMA != 0;
        if rc != 0 || info.is_null() {
            (*hints).caps = ofi::FI_MSG;
            rma = false;
            rc = getinfo(hints, &mut info);
        }
        (lib.freeinfo)(hints);
        if rc != 0 || info.is_null() {
            return Err(to_err(Some(lib), "fi_getinfo", rc as i64));
        }
        if let Some(why) = refused_provider(&provider_name(&*info)) {
            crate::sn_error!("network engine", "{}", why);
            (lib.freeinfo)(info);
            return Err(Error::Unsupported);
        }
        let mut fabric: *mut ofi::fid_fabric = std::ptr::null_mut();
        let rc = (lib.fabric)((*info).fabric_attr, &mut fabric, std::ptr::null_mut());
        if rc != 0 {
            return Err(to_err(Some(lib), "fi_fabric", rc as i64));
        }
        let mut domain: *mut ofi::fid_domain = std::ptr::null_mut();
        let rc = match (*(*fabric).ops).domain {
            Some(f) => f(fabric, info, &mut domain, std::ptr::null_mut()),
            None => -libc::ENOSYS,
        };
        if rc != 0 {
            return Err(to_err(Some(lib), "fi_domain", rc as i64));
        }
        let dops = (*domain).ops;
        // A file descriptor to sleep on where the provider offers one (we poll it with
        // fi_trywait, which wakes faster than fi_cq_sread), else its own wait object.
        let mut cq: *mut ofi::fid_cq = std::ptr::null_mut();
        let mut wait_fd = -1;
        for wait_obj in [ofi::FI_WAIT_FD, ofi::FI_WAIT_UNSPEC] {
            let mut cq_attr = ofi::fi_cq_attr { size: 4096, flags: 0, format: ofi::FI_CQ_FORMAT_DATA, wait_obj, signaling_vector: 0, wait_cond: 0, wait_set: std::ptr::null_mut() };
            let rc = match (*dops).cq_open {
                Some(f) => f(domain, &mut cq_attr, &mut cq, std::ptr::null_mut()),
                None => -libc::ENOSYS,
            };
            if rc != 0 {
                if wait_obj == ofi::FI_WAIT_FD {
                    continue;
                }
                return Err(to_err(Some(lib), "fi_cq_open", rc as i64));
            }
            if wait_obj == ofi::FI_WAIT_FD {
                let control = (*(*cq).fid.ops).control;
                let mut fd: libc::c_int = -1;
                if let Some(c) = control {
                    if c(&mut (*cq).fid, ofi::FI_GETWAIT, &mut fd as *mut libc::c_int as *mut c_void) == 0 {
                        wait_fd = fd;
                    }
                }
            }
            break;
        }
        let mut av_attr = ofi::fi_av_attr { type_: ofi::FI_AV_TABLE, rx_ctx_bits: 0, count: 256, ep_per_node: 0, name: std::ptr::null(), map_addr: std::ptr::null_mut(), flags: 0 };
        let mut av: *mut ofi::fid_av = std::ptr::null_mut();
        let rc = match (*dops).av_open {
            Some(f) => f(domain, &mut av_attr, &mut av, std::ptr::null_mut()),
            None => -libc::ENOSYS,
        };
        if rc != 0 {
            return Err(to_err(Some(lib), "fi_av_open", rc as i64));
        }
        let mut ep: *mut ofi::fid_ep = std::ptr::null_mut();
        let rc = match (*dops).endpoint {
            Some(f) => f(domain, info, &mut ep, std::ptr::null_mut()),
            None => -libc::ENOSYS,
        };
        if rc != 0 {
            return Err(to_err(Some(lib), "fi_endpoint", rc as i64));
        }
        let eops = (*ep).fid.ops;
        let bind = (*eops).bind.ok_or(Error::Unsupported)?;
        let rc = bind(&mut (*ep).fid, &mut (*cq).fid, ofi::FI_TRANSMIT | ofi::FI_RECV);
        if rc != 0 {
            return Err(to_err(Some(lib), "fi_ep_bind(cq)", rc as i64));
        }
        let rc = bind(&mut (*ep).fid, &mut (*av).fid, 0);
        if rc != 0 {
            return Err(to_err(Some(lib), "fi_ep_bind(av)", rc as i64));
        }
        let control = (*eops).control.ok_or(Error::Unsupported)?;
        let rc = control(&mut (*ep).fid, ofi::FI_ENABLE, std::ptr::null_mut());
        if rc != 0 {
            return Err(to_err(Some(lib), "fi_enable", rc as i64));
        }
        let virt_addr = !(*info).domain_attr.is_null() && (*(*info).domain_attr).mr_mode & ofi::FI_MR_VIRT_ADDR != 0;
        let rma = rma
            && ofi::has_op((*ep).rma as *const c_void, std::mem::offset_of!(ofi::fi_ops_rma, writemsg))
            && ofi::has_op((*domain).mr as *const c_void, std::mem::offset_of!(ofi::fi_ops_mr, reg));
        Ok(Objs { fabric, domain, rma, virt_addr, wait_fd, info, ep, av, cq })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_window_takes_each_number_once() {
        let mut r = Replay::new();
        assert!(!r.accept(0), "0 is never a request number");
        assert!(r.accept(1));
        assert!(!r.accept(1));
        assert!(r.accept(3));
        assert!(r.accept(2), "a little out of order is fine");
        assert!(!r.accept(2) && !r.accept(3));
        assert!(r.accept(3 + REPLAY_WINDOW));
        assert!(!r.accept(3), "older than the window");
        assert!(r.accept(4), "inside the window, not seen");
        assert!(r.accept(10 * REPLAY_WINDOW));
        assert!(!r.accept(10 * REPLAY_WINDOW));
        assert!(r.accept(10 * REPLAY_WINDOW - 5));
        assert!(!r.accept(9 * REPLAY_WINDOW), "exactly the window's width behind");
        assert!(r.accept(9 * REPLAY_WINDOW + 1));
    }

    #[test]
    fn mac_binds_header_and_receiver() {
        let k = crate::siphash::Key([1, 2]);
        let h = Hdr { magic: MAGIC, op: Op::Put as u8, a: 7, seq: 9, ..Default::default() }.bytes();
        let to = PeerId { node: 1, slot: 2, gen: 3, inc: 4 };
        let m = header_mac(&k, &h, &to);
        assert_eq!(m, header_mac(&k, &h, &to));
        assert_ne!(m, header_mac(&k, &h, &PeerId { inc: 5, ..to }));
        assert_ne!(m, header_mac(&crate::siphash::Key([1, 3]), &h, &to));
        let mut h2 = h;
        h2[SEQ_AT] ^= 1;
        assert_ne!(m, header_mac(&k, &h2, &to));
    }
}
