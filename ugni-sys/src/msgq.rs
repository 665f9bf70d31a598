//! Message queues (MSGQ): `GNI_MsgqInit`, `GNI_MsgqRelease`, `GNI_MsgqIdle`,
//! `GNI_MsgqGetConnAttrs`, `GNI_MsgqConnect`, `GNI_MsgqConnRelease`, `GNI_MsgqSend`,
//! `GNI_MsgqProgress`, `GNI_MsgqSize`.
//!
//! MSGQ is the shared-queue variant of SMSG: instead of one mailbox per pair of endpoints,
//! connections are made **per pair of nodes** and shared by the instances of a node (the
//! `nloc_insts` of `gni_msgq_attr_t`): one local instance connects to a remote node and
//! every local instance then sends through that connection; each instance has one receive
//! queue that every connected sender writes into, and its progress call hands arrived
//! messages to its receive callback.  The documents give only the prototypes, the three
//! structs and three constants (`GNI_MSGQ_MSG_SZ_MAX` = 128, `GNI_MSGQ_NODE_INSTS_MAX` =
//! 48, `GNI_MSGQ_MODE_BLOCKING` = 1); everything below is our decision.
//!
//! # Mechanism
//! - **Receive queue** (per instance): a fabric [`Ring`] of [`Entry`] (one message each:
//!   sender id and address, lengths, msg_id, tag, up to 128 bytes of header+data) in
//!   library-owned shared memory, registered with the fabric (READ_ONLY for peers, in the
//!   NIC's protection domain) with the queue itself as the registration's notify ring, so
//!   the queue is named by an ordinary memory handle.  A sender resolves it with
//!   `rma::notify_ring` (which checks the key's generation and the protection domain) and
//!   appends with `rma::post_event`, on this machine or through the network engine; the
//!   receiver pops in `GNI_MsgqProgress`.  After `GNI_MsgqRelease` the registration is
//!   gone, so late senders get a transaction error, never a write into freed memory.
//! - **Node table** (per node = the instances of one (ptag, cookie) with one NIC address
//!   on this machine; under `snrun -N k` a group of k ranks): a memfd segment ([`node`],
//!   offsets only, magic + version) listing the node's member instances (inst_id, queue
//!   handle) and its connections (remote NIC address -> the remote instances: inst_id,
//!   queue handle, max_msg_sz; plus which members hold the connection).  The first member
//!   creates it; every member keeps the memfd open and publishes it in the node registry
//!   under (ptag, cookie, address, member row), so an instance that joins later finds it
//!   through any member still there, whoever created it.  Changes hold the table's lock
//!   (a word with the holder's pid: a dead holder's lock is taken over), and connection
//!   changes bump its epoch; a sender reads connections from a per-process cache that it
//!   refills when the epoch moved, so a send takes no cross-process lock.
//!
//! # Decisions
//! - **One queue per instance, one table per node**: every NIC handle may have one MSGQ (a
//!   second `GNI_MsgqInit` on the same NIC: INVALID_STATE until the first is released).
//!   `GNI_MsgqInit` joins the node's table, creating it when the instance is the first.
//!   A node holds at most `GNI_MSGQ_NODE_INSTS_MAX` instances (one more: INVALID_STATE).
//!   `nloc_insts` (1..=48) is a hint: more instances may join (logged); attributes that
//!   differ from those the table was created with are accepted and logged, and the
//!   table's own (`max_msg_sz`, `smsg_q_sz` in the connection attributes, the
//!   connection limit `num_msgq_eps`) apply.
//! - **GetConnAttrs** describes the whole node as it is at the call: `pe_addr` = our NIC
//!   address, `num_insts` = the instances that have joined (the caller first, then the
//!   others), each with its queue handle (`mdh_off` = 0), `*attrs_size` = `16 + 32 *
//!   num_insts`.  So call it once every local instance has called `GNI_MsgqInit` (after a
//!   barrier); an instance that joins later is reachable from nodes that connect (again)
//!   with attributes taken after it joined.  The `pe_addr` argument (the remote node the
//!   attrs are for) is not checked: the same attrs serve every peer.
//! - **Connections** belong to the node, by remote `pe_addr`: `GNI_MsgqConnect(q, pe,
//!   attrs)` by any local instance records each listed instance (id -> its queue handle)
//!   under `pe`, usable at once by every local instance; connecting again (from any local
//!   instance) adds instances and replaces one already listed (a peer that re-created its
//!   queue).  At most `num_msgq_eps` distinct `pe` per node (one more: ERROR_RESOURCE);
//!   more than 48 instances under one `pe`: ERROR_RESOURCE.  Bad attrs (NULL,
//!   `attrs->pe_addr != pe_addr`, `num_insts` 0 or > 48, `max_msg_sz` 0 or > 128, a NULL
//!   handle in an instance): INVALID_PARAM.
//! - **Holds and teardown**: each local instance that connected `pe` holds the connection.
//!   `GNI_MsgqConnRelease(q, pe)` by a holder drops its hold, and the connection ends with
//!   the last hold (instances that exited do not count); by an instance that holds none
//!   (it never connected `pe`) it ends the connection at once; for a `pe` that is not
//!   connected: INVALID_PARAM.  An instance's `GNI_MsgqRelease` or exit drops its holds but
//!   ends no connection: connections live while any local instance has the MSGQ, and end
//!   with the node's last one.
//! - **Attributes** (`GNI_MsgqInit`, `GNI_MsgqSize`): `max_msg_sz` 1..=128 (header plus data
//!   of one message), `smsg_q_sz` >= 1 (messages per connection), `num_msgq_eps` >= 1
//!   (connections), `nloc_insts` 1..=48, `modes` only `GNI_MSGQ_MODE_BLOCKING`; otherwise
//!   INVALID_PARAM.  An instance's queue holds `max(smsg_q_sz * num_msgq_eps, rcv_pool_sz)`
//!   messages rounded up to a power of two (at least 2, at most [`MAX_ENTRIES`], beyond:
//!   INVALID_PARAM); `rcv_cq_sz` is accepted and unused (the queue is its own CQ).
//!   `GNI_MsgqSize` returns the bytes of that queue, which the library allocates itself.
//! - **Send** (`GNI_MsgqSend(q, ep, hdr, hdr_len, msg, msg_len, msg_id, tag)`): `ep` must be
//!   an endpoint of the queue's NIC; the receiving instance is the one listed under the
//!   EP's bound address with the bound remote_id as inst_id (or the only one listed
//!   there).  Bound to a node that is not connected, or to an instance the connection
//!   does not list: INVALID_STATE; unbound EP or wrong NIC: INVALID_PARAM.
//!   `hdr_len + msg_len` larger than the receiver's `max_msg_sz`: ERROR_RESOURCE (as SMSG).
//!   NULL buffer with non-zero length: INVALID_PARAM.  A full receive queue: NOT_DONE
//!   (nothing sent; counted as `GNI_STAT_SMSG_BUFF_CREDITS_STALL`).  On success the
//!   message is in the receiver's queue when the call returns and, when the queue has a
//!   `snd_cq`, a local event of type `GNI_CQ_EVENT_TYPE_MSGQ` goes there
//!   (`GNI_CQ_GET_MSG_ID` = msg_id).  An unreachable receiver (exited, released its
//!   queue) is reported like SMSG: the local event carries the error status, or the call
//!   returns TRANSACTION_ERROR when there is no `snd_cq`.  Messages from one sender to one
//!   queue arrive in send order.
//! - **Progress** (`GNI_MsgqProgress(q, timeout)`, timeout in ms): calls `rcv_cb(snd_id,
//!   snd_pe, msg, tag, cb_data)` for each message waiting in the calling instance's queue
//!   (what was addressed to it, whichever local instance made the connection), at most
//!   one queue's worth per call; `msg` points to the header bytes followed by the data
//!   bytes and is valid only during the callback; `snd_id` is the sender's inst_id,
//!   `snd_pe` its NIC address.  The callback's return value is ignored (the message is
//!   consumed).  With nothing waiting, timeout 0 returns NOT_DONE at once; otherwise it
//!   sleeps up to `timeout` ms for the first message (`(uint32_t)-1` = forever) and
//!   returns TIMEOUT when none came.  SUCCESS when at least one message was delivered.
//!   The callback may call `GNI_MsgqSend`.
//! - **Idle**: SUCCESS when no message is waiting in the caller's queue, NOT_DONE otherwise.
//! - **Release**: frees the instance's queue at once (waiting messages are dropped) and
//!   leaves the node (see holds above); the handle is invalid afterwards (INVALID_PARAM).
//!   After `GNI_CdmDestroy` of its NIC every call but Release answers INVALID_PARAM.
//! - NULL/unknown/released `msgq_hndl`, NULL `rcv_cb`, NULL out pointers, invalid NIC or
//!   `snd_cq` (or a CQ of another NIC): INVALID_PARAM.

use crate::cqe::{self, Status};
use crate::handles::{lock, GniResult, Table};
use crate::objects::*;
use crate::types::*;
use libc::c_void;
use node::{JoinError, Member, RemInst};
use softnic_fabric::mem::{self, Access, CrayHandle, MemKey, SharedMem};
use softnic_fabric::registry::{self, EndpointId};
use softnic_fabric::ring::{Pod, Ring};
use softnic_fabric::rma;
use softnic_fabric::shm::{self, Fd, Mapping};
use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// Largest queue, in messages.
pub const MAX_ENTRIES: u64 = 1 << 16;
const MSG_MAX: usize = GNI_MSGQ_MSG_SZ_MAX as usize;
const INSTS_MAX: u32 = GNI_MSGQ_NODE_INSTS_MAX as u32;
/// Bytes of `gni_msgq_ep_attr_t` before `insts`, and of one `gni_msgq_rem_inst_t`.
const EP_ATTR_HDR: u32 = 16;
const REM_INST: u32 = 32;
/// How long `GNI_MsgqInit` keeps trying to join a node table that its last member is
/// leaving at that moment before it gives up (ERROR_RESOURCE).
const JOIN_PATIENCE: Duration = Duration::from_secs(10);

/// One message in a receive queue.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Entry {
    snd_id: u32,
    snd_pe: u32,
    hdr_len: u32,
    msg_len: u32,
    msg_id: u32,
    tag: u32,
    /// Header bytes, then data bytes.
    data: [u8; MSG_MAX],
}
// SAFETY: repr(C), integers and byte arrays only, no padding-sensitive invariants.
unsafe impl Pod for Entry {}

/// The MSGQ table of one node in shared memory, and the operations on it.  Everything
/// here runs on a mapped segment and this process's identity only, so unit tests drive it
/// on ordinary memory.
pub mod node {
    use super::INSTS_MAX;
    use crate::types::*;
    use softnic_fabric::registry;
    use std::mem::size_of;
    use std::ptr::{addr_of, addr_of_mut};
    use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
    use std::time::{Duration, Instant};

    /// "snGNImqN": a node table.
    pub const MAGIC: u64 = u64::from_le_bytes(*b"snGNImqN");
    /// Layout version of everything below; tables of another version are not joined.
    pub const VERSION: u32 = 1;
    /// Member rows (instances of one node).
    pub const MEMBERS: usize = INSTS_MAX as usize;
    const FREE: u32 = 0;
    const LIVE: u32 = 1;
    /// Table states: members may join an OPEN table; GONE once its last member left.
    const OPEN: u32 = 1;
    const GONE: u32 = 2;
    /// How long a lock may stay taken by a live process before we give up.
    const LOCK_PATIENCE: Duration = Duration::from_secs(10);

    /// The table's first bytes.  Fields without atomics are written once, before `magic`.
    #[repr(C)]
    pub struct Header {
        magic: AtomicU64,
        version: AtomicU32,
        state: AtomicU32,
        /// 0 = free, else the holder's pid (low half) and a per-acquisition nonce.
        lock: AtomicU64,
        /// Bumped (under the lock) on every change of the connections.
        epoch: AtomicU64,
        len: u64,
        members_off: u32,
        conns_off: u32,
        nconns: u32,
        /// Connection rows in use lie below this (rows are taken lowest first).
        conns_hw: AtomicU32,
        pub ptag: u32,
        pub cookie: u32,
        pub addr: u32,
        pub max_msg_sz: u32,
        pub smsg_q_sz: u32,
        pub num_eps: u32,
        pub nloc_insts: u32,
        _pad: [u32; 3],
    }
    const _: () = assert!(size_of::<Header>() == 96);

    /// A member instance of the node.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    pub struct Member {
        state: u32,
        pub inst_id: u32,
        pub pid: i32,
        pub max_msg_sz: u32,
        pub starttime: u64,
        /// Handle of the member's receive queue.
        pub mdh: [u64; 2],
        _pad: [u64; 3],
    }
    const _: () = assert!(size_of::<Member>() == 64);

    impl Member {
        pub fn new(inst_id: u32, pid: i32, starttime: u64, max_msg_sz: u32, mdh: [u64; 2]) -> Member {
            Member { state: LIVE, inst_id, pid, max_msg_sz, starttime, mdh, _pad: [0; 3] }
        }
    }

    /// An instance of a remote node, as its connection attributes listed it.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    pub struct RemInst {
        pub id: u32,
        pub max_msg_sz: u32,
        pub mdh: [u64; 2],
    }

    /// A connection to a remote node.
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Conn {
        state: u32,
        pe_addr: u32,
        /// Bit i: member row i connected it and has not released it.
        holds: u64,
        ninst: u32,
        _pad: u32,
        insts: [RemInst; MEMBERS],
    }
    const _: () = assert!(MEMBERS <= 64, "holds is a 64-bit mask of member rows");

    const MEMBERS_OFF: usize = 128;
    const CONNS_OFF: usize = MEMBERS_OFF + MEMBERS * size_of::<Member>();

    /// Bytes of a table with `nconns` connection rows.
    pub fn bytes_needed(nconns: usize) -> usize {
        CONNS_OFF + nconns * size_of::<Conn>()
    }

    /// Why a join failed.
    #[derive(Debug, PartialEq, Eq)]
    pub enum JoinError {
        /// The table's last member left: find or create another one.
        Gone,
        /// All member rows are taken by live instances.
        Full,
    }

    /// A mapped table.
    pub struct View {
        base: *mut u8,
        len: usize,
    }

    // SAFETY: plain shared memory; every access below is atomic or made under the lock.
    unsafe impl Send for View {}
    unsafe impl Sync for View {}

    /// Is member `m` (a LIVE row) still running?  Our own process is, whatever its pid
    /// says in tests.  A start time of 0 (it could not be read) checks the pid only.
    fn member_alive(m: &Member, my_pid: i32) -> bool {
        m.pid == my_pid || registry::pid_alive(m.pid, (m.starttime != 0).then_some(m.starttime))
    }

    impl View {
        /// # Safety
        /// `base..base+len` is mapped read-write, 8-aligned, for as long as the View is
        /// used, and is only ever written through Views.
        pub unsafe fn new(base: *mut u8, len: usize) -> View {
            View { base, len }
        }

        pub fn hdr(&self) -> &Header {
            // SAFETY: the mapping starts with a Header (checked by `check`, or written by
            // `init`) and lives as long as self.
            unsafe { &*(self.base as *const Header) }
        }

        /// Writes a new table into zeroed memory: `nconns` connection rows, the node's
        /// identity and attributes, `first` in member row 0.  The table is usable (magic
        /// set) when this returns.
        pub fn init(&self, id: (u8, u32, u32), a: &gni_msgq_attr_t, nconns: usize, first: Member) -> bool {
            if self.len < bytes_needed(nconns) || nconns > u32::MAX as usize {
                return false;
            }
            // SAFETY: nobody else sees the memory before `magic` is stored (Release).
            unsafe {
                let h = self.base as *mut Header;
                (*h).len = self.len as u64;
                (*h).members_off = MEMBERS_OFF as u32;
                (*h).conns_off = CONNS_OFF as u32;
                (*h).nconns = nconns as u32;
                (*h).ptag = id.0 as u32;
                (*h).cookie = id.1;
                (*h).addr = id.2;
                (*h).max_msg_sz = a.max_msg_sz;
                (*h).smsg_q_sz = a.smsg_q_sz;
                (*h).num_eps = a.num_msgq_eps;
                (*h).nloc_insts = a.nloc_insts;
                self.member_ptr(0).write(first);
            }
            let h = self.hdr();
            h.version.store(VERSION, Ordering::Relaxed);
            h.state.store(OPEN, Ordering::Relaxed);
            h.magic.store(MAGIC, Ordering::Release);
            true
        }

        /// Is this the table of node `id`, of our layout, fitting the mapping?
        pub fn check(&self, id: (u8, u32, u32)) -> Result<(), String> {
            if self.len < size_of::<Header>() {
                return Err(format!("{} bytes is too short", self.len));
            }
            let h = self.hdr();
            if h.magic.load(Ordering::Acquire) != MAGIC {
                return Err("not a node table".into());
            }
            let v = h.version.load(Ordering::Relaxed);
            if v != VERSION {
                return Err(format!("layout version {} (this library: {})", v, VERSION));
            }
            if h.members_off as usize != MEMBERS_OFF || h.conns_off as usize != CONNS_OFF || bytes_needed(h.nconns as usize) > self.len {
                return Err("inconsistent layout".into());
            }
            if (h.ptag, h.cookie, h.addr) != (id.0 as u32, id.1, id.2) {
                return Err("table of another node".into());
            }
            Ok(())
        }

        /// Changes since the last connection change (see [`Locked::insts`]).
        pub fn epoch(&self) -> u64 {
            self.hdr().epoch.load(Ordering::Acquire)
        }

        /// Takes the table's lock (a dead holder's is taken over).  None when a live
        /// process kept it for [`LOCK_PATIENCE`].
        pub fn lock(&self) -> Option<Locked<'_>> {
            static NONCE: AtomicU32 = AtomicU32::new(1);
            let pid = std::process::id() as i32;
            let mine = pid as u32 as u64 | (((NONCE.fetch_add(1, Ordering::Relaxed) | 1) as u64) << 32);
            let word = &self.hdr().lock;
            let deadline = Instant::now() + LOCK_PATIENCE;
            let mut spins = 0u32;
            loop {
                match word.compare_exchange(0, mine, Ordering::Acquire, Ordering::Relaxed) {
                    Ok(_) => return Some(Locked { v: self, mine, my_pid: pid }),
                    Err(owner) => {
                        let holder = owner as u32 as i32;
                        // Probing costs a /proc read: only now and then.
                        if spins % 64 == 63 && holder != pid && !registry::pid_alive(holder, None) && word.compare_exchange(owner, mine, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                            softnic_fabric::sn_debug!("GNI_Msgq", "node table lock taken over from exited pid {}", holder);
                            return Some(Locked { v: self, mine, my_pid: pid });
                        }
                    }
                }
                spins += 1;
                softnic_fabric::spin::relax(spins);
                if spins > 96 && Instant::now() > deadline {
                    softnic_fabric::sn_warn!("GNI_Msgq", "node table lock held by pid {} for {:?}", word.load(Ordering::Relaxed) as u32, LOCK_PATIENCE);
                    return None;
                }
            }
        }

        fn member_ptr(&self, i: usize) -> *mut Member {
            debug_assert!(i < MEMBERS);
            // SAFETY: member rows lie inside the mapping (checked by `check`/`init`).
            unsafe { self.base.add(MEMBERS_OFF + i * size_of::<Member>()) as *mut Member }
        }

        fn conn_ptr(&self, i: usize) -> *mut Conn {
            debug_assert!(i < self.hdr().nconns as usize);
            // SAFETY: connection rows lie inside the mapping (checked by `check`/`init`).
            unsafe { self.base.add(CONNS_OFF + i * size_of::<Conn>()) as *mut Conn }
        }
    }

    /// The table, locked.  Rows are only read and written through this.
    pub struct Locked<'a> {
        v: &'a View,
        mine: u64,
        my_pid: i32,
    }

    impl Drop for Locked<'_> {
        fn drop(&mut self) {
            let _ = self.v.hdr().lock.compare_exchange(self.mine, 0, Ordering::Release, Ordering::Relaxed);
        }
    }

    impl Locked<'_> {
        fn member(&self, i: usize) -> Member {
            // SAFETY: a row inside the mapping, written only under the lock, which we hold.
            unsafe { self.v.member_ptr(i).read() }
        }

        fn set_member(&mut self, i: usize, m: Member) {
            // SAFETY: as `member`.
            unsafe { self.v.member_ptr(i).write(m) }
        }

        fn conn_state(&self, i: usize) -> (u32, u32) {
            let p = self.v.conn_ptr(i);
            // SAFETY: as `member`; only the two words are read.
            unsafe { (addr_of!((*p).state).read(), addr_of!((*p).pe_addr).read()) }
        }

        fn hw(&self) -> usize {
            (self.v.hdr().conns_hw.load(Ordering::Relaxed) as usize).min(self.v.hdr().nconns as usize)
        }

        fn find(&self, pe: u32) -> Option<usize> {
            (0..self.hw()).find(|&i| self.conn_state(i) == (LIVE, pe))
        }

        fn bump(&self) {
            self.v.hdr().epoch.fetch_add(1, Ordering::Release);
        }

        /// Clears member row `i`'s holds (it left or exited).
        fn drop_holds(&mut self, i: usize) {
            for c in 0..self.hw() {
                let p = self.v.conn_ptr(c);
                // SAFETY: as `member`.
                unsafe { *addr_of_mut!((*p).holds) &= !(1u64 << i) };
            }
        }

        /// Frees the rows of members whose process has exited.
        pub fn sweep(&mut self) {
            for i in 0..MEMBERS {
                let m = self.member(i);
                if m.state == LIVE && !member_alive(&m, self.my_pid) {
                    softnic_fabric::sn_debug!("GNI_Msgq", "inst_id {} (pid {}) left the node's MSGQ by exiting", m.inst_id, m.pid);
                    self.set_member(i, Member::default());
                    self.drop_holds(i);
                }
            }
        }

        /// Members in rows (after a [`sweep`](Self::sweep), the live ones).
        pub fn members(&self) -> usize {
            (0..MEMBERS).filter(|&i| self.member(i).state == LIVE).count()
        }

        /// Adds `m` in the lowest free row, which is returned.
        pub fn join(&mut self, m: Member) -> Result<usize, JoinError> {
            if self.v.hdr().state.load(Ordering::Relaxed) != OPEN {
                return Err(JoinError::Gone);
            }
            self.sweep();
            let i = (0..MEMBERS).find(|&i| self.member(i).state != LIVE).ok_or(JoinError::Full)?;
            self.set_member(i, Member { state: LIVE, ..m });
            Ok(i)
        }

        /// Member row `i` leaves: its holds go, its connections stay.  True when it was
        /// the last: the table is GONE (nobody joins it any more).
        pub fn leave(&mut self, i: usize) -> bool {
            self.set_member(i, Member::default());
            self.drop_holds(i);
            self.sweep();
            if self.members() == 0 {
                self.v.hdr().state.store(GONE, Ordering::Relaxed);
                return true;
            }
            false
        }

        /// The live members, row `first` first.
        pub fn listing(&mut self, first: usize) -> Vec<Member> {
            self.sweep();
            let mut v: Vec<Member> = std::iter::once(first).chain((0..MEMBERS).filter(|&i| i != first)).map(|i| self.member(i)).filter(|m| m.state == LIVE).collect();
            v.truncate(MEMBERS);
            v
        }

        /// Member row `member` connects `pe`: new connection (within `num_eps`) or
        /// instances added to / replaced in the existing one; either way `member` holds it.
        pub fn connect(&mut self, member: usize, pe: u32, insts: &[RemInst]) -> Result<(), gni_return_t> {
            let nconns = self.v.hdr().nconns as usize;
            let limit = (self.v.hdr().num_eps as usize).min(nconns);
            let (row, mut c) = match self.find(pe) {
                // SAFETY: as `member`.
                Some(r) => (r, unsafe { self.v.conn_ptr(r).read() }),
                None => {
                    if (0..self.hw()).filter(|&i| self.conn_state(i).0 == LIVE).count() >= limit {
                        return Err(GNI_RC_ERROR_RESOURCE);
                    }
                    let r = (0..nconns).find(|&i| self.conn_state(i).0 != LIVE).ok_or(GNI_RC_ERROR_RESOURCE)?;
                    // SAFETY: as `member`; a free row (its old contents are ignored).
                    let mut c = unsafe { self.v.conn_ptr(r).read() };
                    c.pe_addr = pe;
                    c.holds = 0;
                    c.ninst = 0;
                    (r, c)
                }
            };
            let mut n = c.ninst as usize;
            for i in insts {
                match c.insts[..n].iter_mut().find(|x| x.id == i.id) {
                    Some(x) => *x = *i,
                    None if n < MEMBERS => {
                        c.insts[n] = *i;
                        n += 1;
                    }
                    None => return Err(GNI_RC_ERROR_RESOURCE),
                }
            }
            c.ninst = n as u32;
            c.holds |= 1u64 << member;
            c.state = LIVE;
            // SAFETY: as `member`.
            unsafe { self.v.conn_ptr(row).write(c) };
            let h = self.v.hdr();
            if row >= h.conns_hw.load(Ordering::Relaxed) as usize {
                h.conns_hw.store(row as u32 + 1, Ordering::Relaxed);
            }
            self.bump();
            Ok(())
        }

        /// Member row `member` releases `pe` (see the module comment: a holder drops its
        /// hold, the last live hold ends it; anyone else ends it at once).
        pub fn release(&mut self, member: usize, pe: u32) -> Result<(), gni_return_t> {
            let row = self.find(pe).ok_or(GNI_RC_INVALID_PARAM)?;
            let p = self.v.conn_ptr(row);
            // SAFETY: as `member`.
            let holds = unsafe { addr_of!((*p).holds).read() };
            let bit = 1u64 << member;
            let rest = if holds & bit == 0 {
                0
            } else {
                (0..MEMBERS).filter(|&i| holds & !bit & (1 << i) != 0).filter(|&i| {
                    let m = self.member(i);
                    m.state == LIVE && member_alive(&m, self.my_pid)
                }).fold(0u64, |acc, i| acc | 1 << i)
            };
            // SAFETY: as `member`.
            unsafe {
                *addr_of_mut!((*p).holds) = rest;
                if rest == 0 {
                    *addr_of_mut!((*p).state) = FREE;
                }
            }
            if rest == 0 {
                let h = self.v.hdr();
                let hw = (0..self.hw()).rev().find(|&i| self.conn_state(i).0 == LIVE).map_or(0, |i| i + 1);
                h.conns_hw.store(hw as u32, Ordering::Relaxed);
            }
            self.bump();
            Ok(())
        }

        /// The instances connected at `pe`; None when `pe` is not connected.
        pub fn insts(&self, pe: u32) -> Option<Vec<RemInst>> {
            let r = self.find(pe)?;
            // SAFETY: as `member`.
            let c = unsafe { self.v.conn_ptr(r).read() };
            Some(c.insts[..(c.ninst as usize).min(MEMBERS)].to_vec())
        }

        /// Which member rows hold `pe` (tests and logs).
        pub fn holds(&self, pe: u32) -> Option<u64> {
            let r = self.find(pe)?;
            // SAFETY: as `member`.
            Some(unsafe { addr_of!((*self.v.conn_ptr(r)).holds).read() })
        }
    }
}

/// A node's table as this process has it: the memfd (kept open, so instances that join
/// later can map it through us after its creator is gone), its mapping, and the
/// connections this process has read from it.
struct NodeQ {
    id: (u8, u32, u32),
    fd: Fd,
    ino: u64,
    view: node::View,
    map: Mapping,
    cache: Mutex<ConnCache>,
}

/// Connections by remote address (None: known not to be connected), valid while the
/// table's epoch is `epoch`.
#[derive(Default)]
struct ConnCache {
    epoch: u64,
    by_pe: HashMap<u32, Option<Vec<RemInst>>>,
}

/// Node tables this process is a member of.
static NODES: Mutex<Vec<Weak<NodeQ>>> = Mutex::new(Vec::new());

impl NodeQ {
    /// Registry key under which the member in row `row` publishes the table.  The
    /// trailing marker keeps it apart from instance keys (9 bytes, zero-padded).
    fn key(id: (u8, u32, u32), row: usize) -> [u8; 32] {
        let mut k = [0u8; 32];
        k[0] = id.0;
        k[1..5].copy_from_slice(&id.1.to_le_bytes());
        k[5..9].copy_from_slice(&id.2.to_le_bytes());
        k[9] = row as u8;
        k[28..].copy_from_slice(b"MSGQ");
        k
    }

    /// Where we keep the table: (pid, fd, inode, length).
    fn payload(&self) -> [u8; 28] {
        let mut p = [0u8; 28];
        p[0..4].copy_from_slice(&(std::process::id()).to_le_bytes());
        p[4..8].copy_from_slice(&(self.fd.0 as u32).to_le_bytes());
        p[8..16].copy_from_slice(&self.ino.to_le_bytes());
        p[16..24].copy_from_slice(&(self.map.len() as u64).to_le_bytes());
        p
    }

    /// Maps the table another member keeps (see [`NodeQ::payload`]).  Ok(None) when that
    /// member is gone meanwhile; Err for a table we must not join.
    fn open(id: (u8, u32, u32), p: &[u8]) -> GniResult<Option<NodeQ>> {
        let w32 = |o: usize| u32::from_le_bytes(p[o..o + 4].try_into().expect("4 bytes"));
        let w64 = |o: usize| u64::from_le_bytes(p[o..o + 8].try_into().expect("8 bytes"));
        let (pid, fd, ino, len) = (w32(0) as i32, w32(4) as i32, w64(8), w64(16) as usize);
        let Ok(fd) = shm::open_peer_fd(pid, fd, ino, len as u64) else { return Ok(None) };
        let Ok(map) = Mapping::map(fd.0, len) else { return Ok(None) };
        // SAFETY: a fresh read-write mapping of `len` bytes, page aligned, owned below.
        let view = unsafe { node::View::new(map.ptr(), len) };
        if let Err(why) = view.check(id) {
            softnic_fabric::sn_warn!("GNI_MsgqInit", "the node's MSGQ table (kept by pid {}) cannot be joined: {}", pid, why);
            return Err(GNI_RC_ERROR_RESOURCE);
        }
        Ok(Some(NodeQ { id, fd, ino, view, map, cache: Mutex::default() }))
    }

    /// A new table for node `id`, with `first` as its member in row 0.
    fn create(id: (u8, u32, u32), a: &gni_msgq_attr_t, first: Member) -> GniResult<NodeQ> {
        let nconns = a.num_msgq_eps as usize;
        let seg = shm::Segment::create("softnic-gni-msgq", node::bytes_needed(nconns)).map_err(|_| GNI_RC_ERROR_NOMEM)?;
        let shm::Segment { fd, map, ino } = seg;
        // SAFETY: a fresh zeroed mapping of map.len() bytes, owned below.
        let view = unsafe { node::View::new(map.ptr(), map.len()) };
        if !view.init(id, a, nconns, first) {
            return Err(GNI_RC_ERROR_RESOURCE);
        }
        Ok(NodeQ { id, fd, ino, view, map, cache: Mutex::default() })
    }

    /// A table of node `id` this process already maps.
    fn local(id: (u8, u32, u32)) -> Option<Arc<NodeQ>> {
        let mut nodes = lock(&NODES);
        nodes.retain(|w| w.strong_count() > 0);
        nodes.iter().filter_map(Weak::upgrade).find(|n| n.id == id)
    }

    /// The table of node `id` kept by some member, found through the registry.
    fn find(id: (u8, u32, u32)) -> GniResult<Option<Arc<NodeQ>>> {
        for row in 0..node::MEMBERS {
            let Ok(e) = registry::lookup(registry::api::UGNI, &NodeQ::key(id, row)) else { continue };
            if let Some(n) = NodeQ::open(id, &e.payload)? {
                return Ok(Some(Arc::new(n)));
            }
        }
        Ok(None)
    }

    /// Joins (or creates) the table of `nic`'s node as `me`.  Returns the table, our
    /// member row and our registry entry.
    fn join(nic: &Nic, a: &gni_msgq_attr_t, me: Member) -> GniResult<(Arc<NodeQ>, usize, Option<EndpointId>)> {
        const API: &str = "GNI_MsgqInit";
        let id = (nic.cdm.ptag, nic.cdm.cookie, nic.address);
        let deadline = Instant::now() + JOIN_PATIENCE;
        loop {
            let found = match NodeQ::local(id) {
                Some(n) => Some(n),
                None => NodeQ::find(id)?,
            };
            if let Some(n) = found {
                let joined = n.view.lock().ok_or(GNI_RC_ERROR_RESOURCE)?.join(me);
                match joined {
                    Ok(row) => {
                        let h = n.view.hdr();
                        if (h.max_msg_sz, h.smsg_q_sz, h.num_eps) != (a.max_msg_sz, a.smsg_q_sz, a.num_msgq_eps) {
                            softnic_fabric::sn_warn!(API, "inst_id {}: attributes (max_msg_sz {}, smsg_q_sz {}, num_msgq_eps {}) differ from the node's MSGQ ({}, {}, {}); the node's apply", me.inst_id, a.max_msg_sz, a.smsg_q_sz, a.num_msgq_eps, h.max_msg_sz, h.smsg_q_sz, h.num_eps);
                        }
                        // Once per process: a program that undercounts does it everywhere.
                        static WARNED: AtomicBool = AtomicBool::new(false);
                        if row as u32 >= a.nloc_insts.min(h.nloc_insts) && !WARNED.swap(true, Ordering::Relaxed) {
                            softnic_fabric::sn_warn!(API, "inst_id {} is local instance {} of the node's MSGQ, more than nloc_insts {}", me.inst_id, row + 1, a.nloc_insts.min(h.nloc_insts));
                        }
                        let published = match registry::publish(registry::api::UGNI, &NodeQ::key(id, row), &n.payload()) {
                            Ok(e) => Some(e),
                            Err(e) => {
                                softnic_fabric::sn_debug!(API, "node MSGQ row {} not published: {}", row, e);
                                None
                            }
                        };
                        lock(&NODES).push(Arc::downgrade(&n));
                        return Ok((n, row, published));
                    }
                    Err(JoinError::Full) => {
                        softnic_fabric::sn_warn!(API, "the node's MSGQ already has {} local instances", node::MEMBERS);
                        return Err(GNI_RC_INVALID_STATE);
                    }
                    // Its last member left meanwhile: forget it, look again.
                    Err(JoinError::Gone) => lock(&NODES).retain(|w| !std::ptr::eq(w.as_ptr(), Arc::as_ptr(&n))),
                }
            } else {
                let n = Arc::new(NodeQ::create(id, a, me)?);
                // Row 0's key decides between instances creating a table at the same time.
                // (A second table for the node could only come from members joining and
                // leaving so that every row a joiner looked up was empty at that moment
                // while the table lived on in rows it had already passed: not a pattern
                // of programs, which join at start-up.)
                match registry::publish(registry::api::UGNI, &NodeQ::key(id, 0), &n.payload()) {
                    Ok(e) => {
                        lock(&NODES).push(Arc::downgrade(&n));
                        return Ok((n, 0, Some(e)));
                    }
                    Err(softnic_fabric::Error::Exists) => {}
                    Err(e) => {
                        softnic_fabric::sn_warn!(API, "node MSGQ table not published: {}", e);
                        return Err(GNI_RC_ERROR_RESOURCE);
                    }
                }
            }
            if Instant::now() > deadline {
                softnic_fabric::sn_warn!(API, "could not join the node's MSGQ within {:?}", JOIN_PATIENCE);
                return Err(GNI_RC_ERROR_RESOURCE);
            }
            softnic_fabric::cancel::nap(Duration::from_millis(1));
        }
    }

    /// (queue handle, max_msg_sz) of instance `rid` connected at `pe` (or of the only
    /// instance connected there); None when there is none.
    fn route(&self, pe: u32, rid: u32) -> Option<([u64; 2], u32)> {
        let epoch = self.view.epoch();
        let mut c = lock(&self.cache);
        if c.epoch != epoch {
            c.by_pe.clear();
            c.epoch = epoch;
        }
        if !c.by_pe.contains_key(&pe) {
            let insts = self.view.lock()?.insts(pe);
            c.by_pe.insert(pe, insts);
        }
        let insts = c.by_pe.get(&pe)?.as_ref()?;
        let i = insts.iter().find(|i| i.id == rid).or_else(|| (insts.len() == 1).then(|| &insts[0]))?;
        Some((i.mdh, i.max_msg_sz))
    }
}

pub static MSGQS: Table<Msgq> = Table::new(0xc6);

pub struct Msgq {
    nic: Arc<Nic>,
    rcv_cb: gni_msgq_rcv_cb_func,
    cb_data: usize,
    snd_cq: Option<Arc<Cq>>,
    mem: ManuallyDrop<SharedMem>,
    ring: Ring<Entry>,
    key: MemKey,
    node: Arc<NodeQ>,
    /// Our row in the node table, and its registry entry.
    member: usize,
    published: Option<EndpointId>,
    left: AtomicBool,
}

impl Msgq {
    /// Leaves the node table (once): unpublished first, so a row's key is never taken by
    /// an entry of a row already freed.
    fn leave(&self) {
        if self.left.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(e) = self.published {
            let _ = registry::unpublish(e);
        }
        if let Some(mut l) = self.node.view.lock() {
            if l.leave(self.member) {
                softnic_fabric::sn_debug!("GNI_MsgqRelease", "last local instance left the node's MSGQ: its connections end");
            }
        }
    }
}

impl Drop for Msgq {
    fn drop(&mut self) {
        self.leave();
        let _ = mem::deregister(self.key);
        // SAFETY: dropped once, here; the ring view is not used after this.
        let m = unsafe { ManuallyDrop::take(&mut self.mem) };
        let _ = mem::free_shared(m);
    }
}

/// NICs that have a MSGQ (`Arc::as_ptr` of the Nic -> msgq handle).
static BY_NIC: Mutex<Option<HashMap<usize, usize>>> = Mutex::new(None);

/// Queue capacity (messages) of valid attributes; None when they are unusable.
fn capacity(a: &gni_msgq_attr_t) -> Option<u32> {
    if a.max_msg_sz == 0 || a.max_msg_sz as usize > MSG_MAX || a.smsg_q_sz == 0 || a.num_msgq_eps == 0 {
        return None;
    }
    if a.nloc_insts == 0 || a.nloc_insts > INSTS_MAX || a.modes as i32 & !GNI_MSGQ_MODE_BLOCKING != 0 {
        return None;
    }
    let n = (a.smsg_q_sz as u64 * a.num_msgq_eps as u64).max(a.rcv_pool_sz as u64).max(2).next_power_of_two();
    (n <= MAX_ENTRIES).then_some(n as u32)
}

fn size_of_queue(a: &gni_msgq_attr_t) -> Option<usize> {
    let n = Ring::<Entry>::bytes_needed(capacity(a)?);
    (n > 0).then_some(n)
}

fn msgq_of(h: gni_msgq_handle_t) -> GniResult<Arc<Msgq>> {
    let q = MSGQS.get(h as *const c_void)?;
    if q.nic.is_detached() {
        return Err(GNI_RC_INVALID_PARAM);
    }
    Ok(q)
}

#[no_mangle]
pub unsafe extern "C" fn GNI_MsgqSize(attrs: *mut gni_msgq_attr_t, size: *mut u32) -> gni_return_t {
    // SAFETY: NULL or the caller's struct.
    let Some(a) = (unsafe { attrs.as_ref() }) else { return GNI_RC_INVALID_PARAM };
    if size.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    match size_of_queue(a) {
        Some(n) if n <= u32::MAX as usize => {
            // SAFETY: non-NULL out pointer.
            unsafe { size.write(n as u32) };
            GNI_RC_SUCCESS
        }
        _ => GNI_RC_INVALID_PARAM,
    }
}

/// The receive queue of a new MSGQ: shared memory holding the ring, registered with the
/// ring as its notify ring.  Returns (memory, ring, registration, handle words).
fn new_queue(nic: &Nic, len: usize, cap: u32) -> GniResult<(SharedMem, Ring<Entry>, MemKey, [u64; 2])> {
    let shm = mem::alloc_shared(len).map_err(|_| GNI_RC_ERROR_NOMEM)?;
    // SAFETY: fresh zeroed shared memory of `len` bytes, owned by the Msgq from here.
    let ring = match unsafe { Ring::<Entry>::init(shm.as_ptr(), len, cap) } {
        Ok(r) => r,
        Err(_) => {
            let _ = mem::free_shared(shm);
            return Err(GNI_RC_ERROR_RESOURCE);
        }
    };
    let key = match mem::register(shm.as_ptr() as usize, len, Access::ReadOnly, nic.pd_key()) {
        Ok(k) => k,
        Err(_) => {
            let _ = mem::free_shared(shm);
            return Err(GNI_RC_ERROR_RESOURCE);
        }
    };
    let words = shm.ring_loc(0, len).ok().filter(|loc| mem::set_notify(key, Some(*loc)).is_ok()).and_then(|_| CrayHandle::mine(shm.as_ptr() as u64, key).ok());
    match words {
        Some(h) => Ok((shm, ring, key, h.to_words())),
        None => {
            let _ = mem::deregister(key);
            let _ = mem::free_shared(shm);
            Err(GNI_RC_ERROR_RESOURCE)
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn GNI_MsgqInit(
    nic_hndl: gni_nic_handle_t,
    rcv_cb: Option<gni_msgq_rcv_cb_func>,
    cb_data: *mut c_void,
    snd_cq: gni_cq_handle_t,
    attrs: *mut gni_msgq_attr_t,
    msgq_hndl: *mut gni_msgq_handle_t,
) -> gni_return_t {
    let Ok(nic) = NICS.get(nic_hndl as *const c_void) else { return GNI_RC_INVALID_PARAM };
    if nic.is_detached() || msgq_hndl.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    let Some(rcv_cb) = rcv_cb else { return GNI_RC_INVALID_PARAM };
    // SAFETY: NULL or the caller's struct.
    let Some(a) = (unsafe { attrs.as_ref() }) else { return GNI_RC_INVALID_PARAM };
    let (Some(cap), Some(len)) = (capacity(a), size_of_queue(a)) else { return GNI_RC_INVALID_PARAM };
    let snd_cq = if snd_cq.is_null() {
        None
    } else {
        match CQS.get(snd_cq as *const c_void) {
            Ok(c) if Arc::ptr_eq(&c.nic, &nic) => Some(c),
            _ => return GNI_RC_INVALID_PARAM,
        }
    };
    let mut by_nic = lock(&BY_NIC);
    let by_nic = by_nic.get_or_insert_with(HashMap::new);
    let nic_key = Arc::as_ptr(&nic) as usize;
    if let Some(&h) = by_nic.get(&nic_key) {
        if MSGQS.get(h as *const c_void).is_ok() {
            return GNI_RC_INVALID_STATE;
        }
    }
    let (shm, ring, key, mdh) = match new_queue(&nic, len, cap) {
        Ok(q) => q,
        Err(rc) => return rc,
    };
    let pid = std::process::id() as i32;
    let me = Member::new(nic.inst_id(), pid, registry::proc_starttime(pid).unwrap_or(0), a.max_msg_sz, mdh);
    let (node, member, published) = match NodeQ::join(&nic, a, me) {
        Ok(j) => j,
        Err(rc) => {
            let _ = mem::deregister(key);
            let _ = mem::free_shared(shm);
            return rc;
        }
    };
    let q = Arc::new(Msgq {
        nic: nic.clone(),
        rcv_cb,
        cb_data: cb_data as usize,
        snd_cq,
        mem: ManuallyDrop::new(shm),
        ring,
        key,
        node,
        member,
        published,
        left: AtomicBool::new(false),
    });
    let h = MSGQS.insert(q);
    by_nic.insert(nic_key, h as usize);
    // SAFETY: checked non-NULL.
    unsafe { msgq_hndl.write(h as gni_msgq_handle_t) };
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_MsgqRelease(msgq_hndl: gni_msgq_handle_t) -> gni_return_t {
    match MSGQS.remove(msgq_hndl as *const c_void) {
        Ok(q) => {
            if let Some(m) = lock(&BY_NIC).as_mut() {
                m.remove(&(Arc::as_ptr(&q.nic) as usize));
            }
            // At once, whoever still holds a reference to the object.
            q.leave();
            GNI_RC_SUCCESS
        }
        Err(rc) => rc,
    }
}

#[no_mangle]
pub unsafe extern "C" fn GNI_MsgqIdle(msgq_hndl: gni_msgq_handle_t) -> gni_return_t {
    match msgq_of(msgq_hndl) {
        Ok(q) if q.ring.is_empty() => GNI_RC_SUCCESS,
        Ok(_) => GNI_RC_NOT_DONE,
        Err(rc) => rc,
    }
}

#[no_mangle]
pub unsafe extern "C" fn GNI_MsgqGetConnAttrs(msgq_hndl: gni_msgq_handle_t, pe_addr: u32, attrs: *mut gni_msgq_ep_attr_t, attrs_size: *mut u32) -> gni_return_t {
    let _ = pe_addr;
    let Ok(q) = msgq_of(msgq_hndl) else { return GNI_RC_INVALID_PARAM };
    if attrs.is_null() || attrs_size.is_null() {
        return GNI_RC_INVALID_PARAM;
    }
    let Some(members) = q.node.view.lock().map(|mut l| l.listing(q.member)) else { return GNI_RC_ERROR_RESOURCE };
    let h = q.node.view.hdr();
    // SAFETY: the caller's struct; we write the fields we define, then the size.
    unsafe {
        let a = &mut *attrs;
        a.pe_addr = q.nic.address;
        a.max_msg_sz = h.max_msg_sz;
        a.smsg_q_sz = h.smsg_q_sz;
        a.num_insts = members.len() as u32;
        for (slot, m) in a.insts.iter_mut().zip(members.iter()) {
            *slot = gni_msgq_rem_inst_t { id: m.inst_id, mdh: gni_mem_handle_t { qword1: m.mdh[0], qword2: m.mdh[1] }, mdh_off: 0 };
        }
        attrs_size.write(EP_ATTR_HDR + REM_INST * members.len() as u32);
    }
    GNI_RC_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn GNI_MsgqConnect(msgq_hndl: gni_msgq_handle_t, pe_addr: u32, attrs: *mut gni_msgq_ep_attr_t) -> gni_return_t {
    let Ok(q) = msgq_of(msgq_hndl) else { return GNI_RC_INVALID_PARAM };
    // SAFETY: NULL or the caller's struct.
    let Some(a) = (unsafe { attrs.as_ref() }) else { return GNI_RC_INVALID_PARAM };
    if a.pe_addr != pe_addr || a.num_insts == 0 || a.num_insts > INSTS_MAX || a.max_msg_sz == 0 || a.max_msg_sz as usize > MSG_MAX {
        return GNI_RC_INVALID_PARAM;
    }
    let listed = &a.insts[..a.num_insts as usize];
    if listed.iter().any(|i| i.mdh.qword1 == 0 && i.mdh.qword2 == 0) {
        return GNI_RC_INVALID_PARAM;
    }
    let insts: Vec<RemInst> = listed.iter().map(|i| RemInst { id: i.id, max_msg_sz: a.max_msg_sz, mdh: [i.mdh.qword1, i.mdh.qword2] }).collect();
    let Some(mut l) = q.node.view.lock() else { return GNI_RC_ERROR_RESOURCE };
    match l.connect(q.member, pe_addr, &insts) {
        Ok(()) => GNI_RC_SUCCESS,
        Err(rc) => rc,
    }
}

#[no_mangle]
pub unsafe extern "C" fn GNI_MsgqConnRelease(msgq_hndl: gni_msgq_handle_t, pe_addr: u32) -> gni_return_t {
    let Ok(q) = msgq_of(msgq_hndl) else { return GNI_RC_INVALID_PARAM };
    let Some(mut l) = q.node.view.lock() else { return GNI_RC_ERROR_RESOURCE };
    match l.release(q.member, pe_addr) {
        Ok(()) => GNI_RC_SUCCESS,
        Err(rc) => rc,
    }
}

#[no_mangle]
pub unsafe extern "C" fn GNI_MsgqSend(
    msgq_hndl: gni_msgq_handle_t,
    ep_hndl: gni_ep_handle_t,
    hdr: *mut c_void,
    hdr_len: u32,
    msg: *mut c_void,
    msg_len: u32,
    msg_id: u32,
    msg_tag: u8,
) -> gni_return_t {
    const API: &str = "GNI_MsgqSend";
    let Ok(q) = msgq_of(msgq_hndl) else { return GNI_RC_INVALID_PARAM };
    let Ok(ep) = EPS.get(ep_hndl as *const c_void) else { return GNI_RC_INVALID_PARAM };
    if !Arc::ptr_eq(&ep.nic, &q.nic) || (hdr.is_null() && hdr_len > 0) || (msg.is_null() && msg_len > 0) {
        return GNI_RC_INVALID_PARAM;
    }
    let mut st = ep.state();
    let Some(b) = st.binding.as_ref() else { return GNI_RC_INVALID_PARAM };
    let (raddr, rid) = (b.remote_addr, b.remote_id);
    // The receiving instance: the one listed under the bound remote_id, or the only one
    // connected at that node (remote_id is a user value that need not be an inst_id).
    let Some((qh, max)) = q.node.route(raddr, rid) else {
        return GNI_RC_INVALID_STATE;
    };
    let total = hdr_len as u64 + msg_len as u64;
    if total > max as u64 {
        return GNI_RC_ERROR_RESOURCE;
    }
    let mut e = Entry { snd_id: q.nic.inst_id(), snd_pe: q.nic.address, hdr_len, msg_len, msg_id, tag: msg_tag as u32, data: [0; MSG_MAX] };
    // SAFETY: the caller's buffers of the given lengths (NULL only with length 0); total
    // <= max_msg_sz <= MSG_MAX.
    unsafe {
        if hdr_len > 0 {
            std::ptr::copy_nonoverlapping(hdr as *const u8, e.data.as_mut_ptr(), hdr_len as usize);
        }
        if msg_len > 0 {
            std::ptr::copy_nonoverlapping(msg as *const u8, e.data.as_mut_ptr().add(hdr_len as usize), msg_len as usize);
        }
    }
    let local_data = Ep::local_event(&st);
    let pd = q.nic.pd_key();
    let key = CrayHandle::from_words(qh).key;
    let qh = gni_mem_handle_t { qword1: qh[0], qword2: qh[1] };
    // The queue's handle names the receiving process (see Ep::route).
    let routed = ep.route(&mut st, &qh).map(|_| st.binding.as_ref().and_then(|b| b.route.as_ref()).expect("route() caches the peer").1.clone());
    let result: Result<(), Status> = match routed {
        Err(None) => return GNI_RC_INVALID_PARAM,
        Err(Some(s)) => Err(s),
        Ok(peer) => match rma::notify_ring(&peer, key, pd) {
            Ok(Some(loc)) => match rma::post_event(&peer, &loc, &e, false) {
                Ok(_) => Ok(()),
                Err(softnic_fabric::Error::NoSpace) => {
                    drop(st);
                    crate::stats::bump(&q.nic, GNI_STAT_SMSG_BUFF_CREDITS_STALL);
                    return GNI_RC_NOT_DONE;
                }
                Err(err) => Err(Status::from_fabric(err)),
            },
            Ok(None) => Err(Status::from_fabric(softnic_fabric::Error::Unsupported)),
            Err(err) => Err(Status::from_fabric(err)),
        },
    };
    drop(st);
    let status = match result {
        Ok(()) => Status::Ok,
        Err(s) => {
            softnic_fabric::sn_debug!(API, "message not delivered: {}", s.describe());
            crate::errors::report_transaction_error(&q.nic, s, [0, total, 0, 0]);
            s
        }
    };
    match &q.snd_cq {
        Some(cq) => cq.push(cqe::make(cqe::SRC_LOCAL, cqe::TYPE_MSGQ, status, local_data as u64, msg_id as u64)),
        None if status != Status::Ok => return GNI_RC_TRANSACTION_ERROR,
        None => {}
    }
    GNI_RC_SUCCESS
}

softnic_fabric::blocking_export! {
    pub unsafe fn GNI_MsgqProgress(msgq_hndl: gni_msgq_handle_t, timeout: u32) -> gni_return_t {
        let Ok(q) = msgq_of(msgq_hndl) else { return GNI_RC_INVALID_PARAM };
        if q.ring.is_empty() && timeout != 0 {
            let t = (timeout != u32::MAX).then(|| Duration::from_millis(timeout as u64));
            if q.ring.wait_nonempty(t).is_err() && q.ring.is_empty() {
                return GNI_RC_TIMEOUT;
            }
        }
        let mut n = 0u32;
        while n < q.ring.capacity() {
            let Some(mut e) = q.ring.pop() else { break };
            n += 1;
            // SAFETY: the program's callback, called with a message copy valid for the call.
            unsafe { (q.rcv_cb)(e.snd_id, e.snd_pe, e.data.as_mut_ptr() as *mut c_void, e.tag as u8, q.cb_data as *mut c_void) };
        }
        if n == 0 {
            return if timeout == 0 { GNI_RC_NOT_DONE } else { GNI_RC_TIMEOUT };
        }
        GNI_RC_SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(max: u32, q: u32, eps: u32) -> gni_msgq_attr_t {
        gni_msgq_attr_t { max_msg_sz: max, smsg_q_sz: q, rcv_pool_sz: 0, num_msgq_eps: eps, nloc_insts: 1, modes: 0, rcv_cq_sz: 0 }
    }

    #[test]
    fn capacities() {
        assert_eq!(capacity(&attrs(128, 4, 3)), Some(16));
        assert_eq!(capacity(&attrs(1, 1, 1)), Some(2));
        assert_eq!(capacity(&attrs(129, 4, 3)), None);
        assert_eq!(capacity(&attrs(0, 4, 3)), None);
        assert_eq!(capacity(&attrs(64, 0, 3)), None);
        assert_eq!(capacity(&attrs(64, 4, 0)), None);
        assert_eq!(capacity(&attrs(64, 1 << 16, 2)), None);
        let mut a = attrs(64, 4, 4);
        a.rcv_pool_sz = 100;
        assert_eq!(capacity(&a), Some(128));
        a.modes = 2;
        assert_eq!(capacity(&a), None);
        a.modes = 1;
        a.nloc_insts = 49;
        assert_eq!(capacity(&a), None);
        assert!(size_of_queue(&attrs(128, 4, 3)).unwrap() >= 16 * std::mem::size_of::<Entry>());
        assert_eq!(std::mem::size_of::<Entry>(), 24 + MSG_MAX);
    }

    /// A node table on ordinary memory (the vector owns what the view points into).
    #[allow(dead_code)]
    struct Table8(Vec<u64>, node::View);

    fn table(nconns: usize, a: &gni_msgq_attr_t, first: Member) -> Table8 {
        let mut mem = vec![0u64; node::bytes_needed(nconns).div_ceil(8)];
        // SAFETY: the vector's buffer, 8-aligned, kept beside the view.
        let v = unsafe { node::View::new(mem.as_mut_ptr() as *mut u8, mem.len() * 8) };
        assert!(v.init((5, 0x1234, 7), a, nconns, first));
        Table8(mem, v)
    }

    fn me(id: u32) -> Member {
        Member::new(id, std::process::id() as i32, 0, 64, [id as u64 + 1, 99])
    }

    /// A member whose process does not exist.
    fn dead(id: u32) -> Member {
        Member::new(id, i32::MAX - 1, 1, 64, [id as u64 + 1, 99])
    }

    fn inst(id: u32) -> RemInst {
        RemInst { id, max_msg_sz: 64, mdh: [id as u64 + 100, 7] }
    }

    #[test]
    fn table_members_and_layout_checks() {
        let t = table(3, &attrs(64, 4, 3), me(10));
        assert_eq!(t.1.check((5, 0x1234, 7)), Ok(()));
        assert!(t.1.check((5, 0x1234, 8)).is_err(), "another node's table");
        let mut l = t.1.lock().unwrap();
        assert_eq!(l.join(me(11)), Ok(1));
        assert_eq!(l.join(dead(12)), Ok(2));
        // The caller first, then the others; exited members are not listed (swept).
        let ids: Vec<u32> = l.listing(1).iter().map(|m| m.inst_id).collect();
        assert_eq!(ids, vec![11, 10]);
        assert_eq!(l.join(me(13)), Ok(2), "the exited member's row is reused");
        for i in 3..node::MEMBERS as u32 {
            assert!(l.join(me(20 + i)).is_ok());
        }
        assert_eq!(l.join(me(99)), Err(JoinError::Full));
        for r in 1..node::MEMBERS {
            assert!(!l.leave(r));
        }
        assert!(l.leave(0), "the last member leaves");
        assert_eq!(l.join(me(1)), Err(JoinError::Gone));
    }

    #[test]
    fn connections_are_shared_and_held() {
        let t = table(2, &attrs(64, 4, 2), me(0));
        let mut l = t.1.lock().unwrap();
        assert_eq!(l.join(me(1)), Ok(1));
        assert_eq!(l.insts(50), None);
        // Row 0 connects node 50 with two instances; row 1 sees them.
        assert_eq!(l.connect(0, 50, &[inst(4), inst(5)]), Ok(()));
        let e0 = t.1.epoch();
        assert_eq!(l.insts(50), Some(vec![inst(4), inst(5)]));
        assert_eq!(l.holds(50), Some(1));
        // Row 1 connects it too: merged, replaced by id, held by both.
        let mut new5 = inst(5);
        new5.mdh = [555, 7];
        assert_eq!(l.connect(1, 50, &[new5, inst(6)]), Ok(()));
        assert!(t.1.epoch() > e0);
        assert_eq!(l.insts(50), Some(vec![inst(4), new5, inst(6)]));
        assert_eq!(l.holds(50), Some(3));
        // The connection limit (num_msgq_eps = 2).
        assert_eq!(l.connect(0, 51, &[inst(1)]), Ok(()));
        assert_eq!(l.connect(1, 52, &[inst(1)]), Err(GNI_RC_ERROR_RESOURCE));
        // More than 48 instances under one node.
        let many: Vec<RemInst> = (100..100 + node::MEMBERS as u32).map(inst).collect();
        assert_eq!(l.connect(0, 51, &many), Err(GNI_RC_ERROR_RESOURCE));
        // Holders release one by one; the last hold ends it.
        assert_eq!(l.release(0, 50), Ok(()));
        assert_eq!(l.holds(50), Some(2));
        assert!(l.insts(50).is_some(), "still held by row 1");
        assert_eq!(l.release(1, 50), Ok(()));
        assert_eq!(l.insts(50), None);
        assert_eq!(l.release(1, 50), Err(GNI_RC_INVALID_PARAM));
        // A member that does not hold a connection ends it at once.
        assert_eq!(l.holds(51), Some(1));
        assert_eq!(l.release(1, 51), Ok(()));
        assert_eq!(l.insts(51), None);
        // A connecting member that leaves drops its hold, the connection stays; the next
        // release by anyone ends it.
        assert_eq!(l.connect(1, 60, &[inst(2)]), Ok(()));
        assert!(!l.leave(1));
        assert_eq!(l.holds(60), Some(0));
        assert!(l.insts(60).is_some());
        assert_eq!(l.release(0, 60), Ok(()));
        assert_eq!(l.insts(60), None);
    }

    #[test]
    fn holds_of_exited_members_do_not_count() {
        let t = table(2, &attrs(64, 4, 2), me(0));
        let mut l = t.1.lock().unwrap();
        assert_eq!(l.join(dead(1)), Ok(1));
        assert_eq!(l.connect(1, 70, &[inst(3)]), Ok(()));
        assert_eq!(l.connect(0, 70, &[inst(3)]), Ok(()));
        assert_eq!(l.holds(70), Some(3));
        assert_eq!(l.release(0, 70), Ok(()));
        assert_eq!(l.insts(70), None, "the other holder has exited");
    }

    #[test]
    fn dead_lock_holder_is_taken_over() {
        let t = table(1, &attrs(64, 4, 1), me(0));
        // A lock word naming a process that does not exist.
        let word = t.1.hdr() as *const node::Header as *const std::sync::atomic::AtomicU64;
        // SAFETY: the header's lock word is its third 8-byte word.
        let lockw = unsafe { &*word.add(2) };
        lockw.store((i32::MAX - 1) as u32 as u64 | 1 << 32, Ordering::Relaxed);
        let l = t.1.lock();
        assert!(l.is_some());
        drop(l);
        assert_eq!(lockw.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn registry_keys_never_match_instance_keys() {
        let k = NodeQ::key((1, 2, 3), 0);
        let i = crate::datagram::instance_key(1, 2, 3);
        assert_ne!(&k[..], &[&i[..], &[0u8; 23][..]].concat()[..]);
        assert_eq!(&k[28..], b"MSGQ");
    }
}
