//! Injected faults (`SOFTNIC_FAULTS`): failures the hardware can have, made to happen on
//! demand, so that a program's error paths can be run on a laptop.  Each fault point is
//! named by what fails and gives the error the documents name for that failure.
//!
//! Syntax: entries separated by `;`, each `POINT` or `POINT:KEY=VALUE[,KEY=VALUE...]`:
//! - `register`: a memory registration fails for want of resources (uGNI
//!   GNI_RC_ERROR_RESOURCE, DMAPP DMAPP_RC_RESOURCE_ERROR, uTofu UTOFU_ERR_FULL, Portals
//!   PTL_NO_SPACE, SISCI SCI_ERR_NOSPC).
//! - `transfer`: a one-sided operation that passed its checks is lost in the network:
//!   nothing lands at the target and the initiator learns it as the API reports a network
//!   failure (uGNI a transaction error event, recoverable; DMAPP
//!   DMAPP_RC_TRANSACTION_ERROR; Portals PTL_NI_FAIL in the operation's end event, no ack
//!   or reply; uTofu UTOFU_ERR_MRQ_OTHER in the local MRQ notice; SISCI a DMA queue in
//!   SCI_DMAQUEUE_ERROR, SCI_ERR_TRANSFER_FAILED to its callback).  Counted once per
//!   operation (uGNI posts, DMAPP puts, gets and AMOs, Portals puts, gets and get-puts,
//!   uTofu one-sided operations, SISCI DMA transfers), whatever its outcome would have been.
//! - `cq_overrun`: an event a uGNI process queues on one of its own CQs (a local
//!   completion) is lost as on a full CQ: the CQ's next GNI_CqGetEvent returns
//!   GNI_RC_ERROR_RESOURCE once (its later events carry the overrun bit).  Counted per
//!   such event.  Portals: an event about to be taken from an event queue is lost as when
//!   the queue overflowed (overwritten): the next event returned carries PTL_EQ_DROPPED
//!   (its sequence number shows the gap).  Counted per event taken.  uTofu: a notice a
//!   process queues into an MRQ (its own, or a target's) finds it full: the MRQ's owner
//!   ends at its next utofu_poll_mrq with the documented fatal "MRQ Overflow".  Counted
//!   per notice queued.  DMAPP: a dmapp_queue_put finds the target's queue full once: it
//!   waits as on a full queue (DMAPP_RC_NO_SPACE inside a queue callback).  Counted per
//!   put.
//! - `timeout`: a wait given a time limit runs out at once, whatever is queued (uGNI
//!   GNI_CqWaitEvent: GNI_RC_TIMEOUT; Portals PtlEQPoll: PTL_EQ_EMPTY; SISCI
//!   SCIWaitForDMAQueue, SCIWaitForInterrupt, SCIWaitForDataInterrupt,
//!   SCIWaitForLocalSegmentEvent, SCIWaitForRemoteSegmentEvent: SCI_ERR_TIMEOUT); the
//!   events stay for the next call.  Counted per such wait.  (DMAPP and uTofu have no
//!   wait with a time limit.)
//!
//! - `die`: this process dies as if killed (SIGKILL: no exit handlers, nothing cleaned
//!   up), so its partners meet a peer that died: each API's dead-peer errors.  With
//!   `ms=T`, T milliseconds after the process first used the fabric; else at a one-sided
//!   operation (counted as for `transfer`, the fatal one not done).  A line on stderr
//!   says so first.
//! - `net_drop`: a message the network engine sends (a request, a reply, a liveness
//!   probe) is lost.  The transport under it is reliable, so a lost message is a failed
//!   link: nothing retries it, the side waiting for it gives up after
//!   `SOFTNIC_NET_TIMEOUT_MS` and takes the peer as dead (its operations then fail as on
//!   a peer's death).  Counted per message.  (Transfers libfabric's RMA carries are not
//!   messages.)
//! - `net_delay`: such a message leaves `ms=T` milliseconds late (default 100; the
//!   sending thread waits, so later messages of that thread queue behind it, in order).
//! Keys: `after=N` (the first N calls pass), `every=N` (then one call in N fails, the
//! first of them at once; default 1), `times=N` (at most N fail; default no limit),
//! `rank=R` (only in the process whose PMI_RANK is R), `ms=T` (`die`, `net_delay` only).  Counting is per process, in the
//! order of the calls, so a single-threaded program fails at the same calls every run.
//! An entry that cannot be read is reported (SOFTNIC_LOG warning) and ignored.
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::OnceLock;

/// Where a fault can be injected.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Point {
    Register,
    Transfer,
    CqOverrun,
    Timeout,
    Die,
    NetDrop,
    NetDelay,
}

const POINTS: [(&str, Point); 7] = [
    ("register", Point::Register),
    ("transfer", Point::Transfer),
    ("cq_overrun", Point::CqOverrun),
    ("timeout", Point::Timeout),
    ("die", Point::Die),
    ("net_drop", Point::NetDrop),
    ("net_delay", Point::NetDelay),
];

struct Rule {
    point: Point,
    after: u64,
    every: u64,
    times: u64,
    /// `ms=T`: when a `die` comes (after the fabric started), how late a `net_delay`.
    ms: Option<u64>,
    /// Calls seen and faults made.
    calls: AtomicU64,
    made: AtomicU64,
}

fn rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        let rs: Vec<Rule> = std::env::var("SOFTNIC_FAULTS").map(|s| parse(&s, my_rank())).unwrap_or_default();
        NONE.store(if rs.is_empty() { YES } else { NO }, Ordering::Relaxed);
        rs
    })
}

/// Whether there are no rules: unknown until [`rules`] first ran.  One load on the
/// operations' paths when faults are off (the rules' lock-free cell is a call away from
/// the API libraries).
static NONE: AtomicU8 = AtomicU8::new(UNKNOWN);
const UNKNOWN: u8 = 0;
const YES: u8 = 1;
const NO: u8 = 2;

/// Are any faults configured (SOFTNIC_FAULTS)?  For fast paths that leave every
/// injection point to their general path.
#[inline]
pub fn any() -> bool {
    !none()
}

/// Known to have no rules?  One load and no call (false also before the rules were first
/// read), for quick paths that leave every other case to their general path.
#[inline(always)]
pub fn surely_none() -> bool {
    NONE.load(Ordering::Relaxed) == YES
}

/// No faults to inject (the common case), decided without a call.
#[inline(always)]
fn none() -> bool {
    match NONE.load(Ordering::Relaxed) {
        YES => true,
        NO => false,
        _ => rules().is_empty(),
    }
}

fn my_rank() -> Option<u64> {
    std::env::var("PMI_RANK").ok().and_then(|r| r.trim().parse().ok())
}

/// The rules of `spec` that apply to the process of rank `rank`.
fn parse(spec: &str, rank: Option<u64>) -> Vec<Rule> {
    let mut out = Vec::new();
    for entry in spec.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, keys) = entry.split_once(':').unwrap_or((entry, ""));
        let Some(&(_, point)) = POINTS.iter().find(|(n, _)| *n == name.trim()) else {
            crate::sn_warn!("fabric", "SOFTNIC_FAULTS: unknown fault point {:?} (known: register, transfer, cq_overrun, timeout, die, net_drop, net_delay); ignored", name);
            continue;
        };
        let mut r = Rule { point, after: 0, every: 1, times: u64::MAX, ms: None, calls: AtomicU64::new(0), made: AtomicU64::new(0) };
        let mut only_rank = None;
        let mut ok = true;
        for kv in keys.split(',').map(str::trim).filter(|k| !k.is_empty()) {
            let v = kv.split_once('=').and_then(|(k, v)| v.trim().parse::<u64>().ok().map(|v| (k.trim(), v)));
            match v {
                Some(("after", v)) => r.after = v,
                Some(("every", v)) if v > 0 => r.every = v,
                Some(("times", v)) => r.times = v,
                Some(("rank", v)) => only_rank = Some(v),
                Some(("ms", v)) if matches!(point, Point::Die | Point::NetDelay) => r.ms = Some(v),
                _ => {
                    crate::sn_warn!("fabric", "SOFTNIC_FAULTS: cannot read {:?} in {:?}; entry ignored", kv, entry);
                    ok = false;
                }
            }
        }
        if ok && only_rank.is_none_or(|want| rank == Some(want)) {
            out.push(r);
        }
    }
    out
}

impl Rule {
    fn fires(&self) -> bool {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        if n < self.after || (n - self.after) % self.every != 0 {
            return false;
        }
        self.made.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |m| (m < self.times).then_some(m + 1)).is_ok()
    }
}

/// Does a fault happen at this call of `point`?  (No rules: one load.)  A one-sided
/// operation (`Transfer`) is also where a counted `die` comes.  Always inlined: on every
/// post and event push, where a call (as `#[inline]` left it) cost more than the test.
#[inline(always)]
pub fn hit(point: Point) -> bool {
    if none() {
        return false;
    }
    hit_some(point)
}

#[cold]
#[inline(never)]
fn hit_some(point: Point) -> bool {
    let rs = rules();
    if point == Point::Transfer && rs.iter().any(|r| r.point == Point::Die && r.ms.is_none() && r.fires()) {
        die_now("at a one-sided operation");
    }
    let fired = rs.iter().filter(|r| r.point == point).fold(false, |any, r| r.fires() || any);
    if fired {
        crate::sn_debug!("fabric", "SOFTNIC_FAULTS: injected a {:?} fault", point);
    }
    fired
}

/// What happens to a message the network engine is about to send.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Message {
    Sent,
    Lost,
    Late(std::time::Duration),
}

/// [`hit`] for a network message: `net_drop`, then `net_delay`.
#[inline]
pub fn message() -> Message {
    if none() {
        return Message::Sent;
    }
    let rs = rules();
    if hit(Point::NetDrop) {
        return Message::Lost;
    }
    let late = rs.iter().filter(|r| r.point == Point::NetDelay).fold(None, |late, r| if r.fires() { Some(r.ms.unwrap_or(100)) } else { late });
    match late {
        Some(ms) => {
            crate::sn_debug!("fabric", "SOFTNIC_FAULTS: injected a NetDelay fault ({} ms)", ms);
            Message::Late(std::time::Duration::from_millis(ms))
        }
        None => Message::Sent,
    }
}

/// Starts the clocks of `die:ms=T` entries; called once, when the process first uses the
/// fabric.
pub fn start_clocks() {
    for r in rules().iter().filter(|r| r.point == Point::Die) {
        if let Some(ms) = r.ms {
            let spawned = std::thread::Builder::new().name("softnic-die".into()).spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(ms));
                die_now("on its clock");
            });
            if spawned.is_err() {
                crate::sn_warn!("fabric", "SOFTNIC_FAULTS: cannot start the clock of a die entry; ignored");
            }
        }
    }
}

/// Ends this process as a crash would: no exit handlers, nothing released.
fn die_now(when: &str) -> ! {
    let rank = my_rank().map_or(String::new(), |r| format!(" (rank {r})"));
    crate::log::write_stderr(format!("softnic: SOFTNIC_FAULTS: process {}{} dies now, {}\n", std::process::id(), rank, when).as_bytes());
    // SAFETY: signalling ourselves.
    unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    // SIGKILL cannot be caught or blocked; should it be delayed, leave all the same.
    // SAFETY: ends the process without running anything more.
    unsafe { libc::_exit(137) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(spec: &str, rank: Option<u64>, n: usize) -> String {
        let rs = parse(spec, rank);
        (0..n).map(|_| if rs.iter().any(|r| r.fires()) { 'F' } else { '.' }).collect()
    }

    #[test]
    fn after_every_times_and_rank() {
        assert_eq!(pattern("register", None, 4), "FFFF");
        assert_eq!(pattern("register:after=2", None, 5), "..FFF");
        assert_eq!(pattern("register:after=1,every=3", None, 8), ".F..F..F");
        assert_eq!(pattern("register:after=2,times=1", None, 5), "..F..");
        assert_eq!(pattern("register:rank=1", Some(0), 3), "...");
        assert_eq!(pattern("register:rank=1", Some(1), 3), "FFF");
    }

    #[test]
    fn points_count_apart() {
        let rs = parse("register:after=1; transfer:every=2", None);
        let seq = |p: Point| rs.iter().filter(|r| r.point == p).fold(false, |any, r| r.fires() || any);
        let got: String = [Point::Transfer, Point::Register, Point::Transfer, Point::Register, Point::Transfer]
            .iter()
            .map(|&p| if seq(p) { 'F' } else { '.' })
            .collect();
        assert_eq!(got, "F..FF");
    }

    #[test]
    fn die_and_network_entries() {
        let rs = parse("die:ms=250,rank=2; net_delay:ms=7,after=1; net_drop:every=3; die:after=4", Some(2));
        assert_eq!(rs.len(), 4);
        assert_eq!((rs[0].point, rs[0].ms), (Point::Die, Some(250)));
        assert_eq!((rs[1].point, rs[1].ms, rs[1].after), (Point::NetDelay, Some(7), 1));
        assert_eq!((rs[3].point, rs[3].ms, rs[3].after), (Point::Die, None, 4));
        // ms belongs to die and net_delay only.
        assert!(parse("transfer:ms=5", None).is_empty());
        assert!(parse("die:ms=5,rank=1", Some(0)).is_empty());
    }

    #[test]
    fn unreadable_entries_are_ignored() {
        assert_eq!(pattern("bogus; register:every=0", None, 3), "...");
        assert_eq!(pattern("register:after=x", None, 3), "...");
        assert_eq!(pattern(" ; register:times=2 ;", None, 3), "FF.");
    }
}
