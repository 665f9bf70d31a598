//! The node registry: where the processes of one user on one machine find each other.
//!
//! One named file, `user_dir()/registry.v2` (directory 0700, file 0600), holds:
//! - a header (magic, version, init flag, lock word, "removed" flag),
//! - a process table: pid + start time (defeats pid reuse) + where the process's control
//!   segment is (descriptor number, inode; see [`crate::node`]) + the process's **job tag**
//!   ([`crate::bootstrap::job_tag`], a keyed hash of the job secret),
//! - an endpoint table: (api, key[32]) -> owning process + 64 opaque payload bytes.  Keys
//!   are API-specific names: (ptag, cookie, inst_id) for uGNI, (coords, tni, cq) for uTofu,
//!   (node, segment) for SISCI, (nid, pid) for Portals.
//!
//! **Jobs.**  The file is shared by every job of the user on the machine, but each job sees
//! only its own: a lookup finds only endpoints whose owner has the caller's job tag, a key is
//! taken (`Exists`) only within the job, and a process id ([`ProcId`]) that names another
//! job's process is refused (`ProtectionDomain`).  So two jobs may use the same API names
//! (uTofu coordinates and CQs, SISCI node and segment ids, uGNI instances) side by side and
//! never reach each other's.  The one deliberate crossing is [`claim`]: a name a job holds
//! against every other job (uGNI protection domains).
//!
//! **Lock.**  All table changes and lookups hold one lock word containing the owner's pid
//! and the low 32 bits of its start time.  A lock is fine here: registry operations happen
//! at setup (endpoint creation, connection), never per message, and each holds the lock for
//! a table scan of a few microseconds.  A process that dies holding it is detected (pid gone,
//! zombie, or start time changed) and the lock is stolen.  Entries are written fields-first,
//! `state` last, so a holder killed mid-update leaves at worst an unused half-written slot.
//!
//! **Lifetime.**  The first process creates the file with O_EXCL and sets `init_done` when
//! the header is written; others wait for that.  A process leaves at exit; dead processes
//! are reclaimed (their rows and endpoints freed) when `publish` sweeps, when a lookup hits
//! one, and by [`reclaim_dead`].  Whoever finds no live process left sets `removed` (under
//! the lock), unlinks the file and removes the directory; a process that attached to a file
//! at that moment sees `removed` once it holds the lock and starts over with a new file.

use crate::shm::{self, Fd, Mapping};
use crate::{Error, Result};
use std::ffi::CString;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub const MAGIC: u64 = 0x5346_4e52_4547_0001; // "SFNREG" + layout 1
/// 2 added the job tag to process rows (a new file name too: libraries of layout 1 keep theirs).
pub const VERSION: u32 = 2;
/// Process-table rows: one per process of this user on the machine using the fabric.
pub const NPROC: usize = 512;
/// Endpoint-table rows, shared by all APIs.
pub const NENDP: usize = 4096;
pub const KEY_LEN: usize = 32;
pub const PAYLOAD_LEN: usize = 64;
pub const FILE_NAME: &str = "registry.v2";

/// API identifiers for the endpoint table.
pub mod api {
    pub const UGNI: u32 = 1;
    pub const DMAPP: u32 = 2;
    pub const UTOFU: u32 = 3;
    pub const SISCI: u32 = 4;
    pub const PORTALS: u32 = 5;
    /// uGNI collective engines (VCEs) by (ptag, cookie, NIC address, CE id).
    pub const UGNI_CE: u32 = 6;
    /// uGNI protection domains held by a job ([`super::claim`] of (ptag, cookie)).
    pub const UGNI_DOMAIN: u32 = 7;
    /// For tests and tools.
    pub const TEST: u32 = 0xff;
}

#[repr(C)]
struct Header {
    magic: u64,
    version: u32,
    init_done: AtomicU32,
    lock: AtomicU64,
    removed: AtomicU32,
    nproc: u32,
    nendp: u32,
    creator_pid: i32,
    /// Bumped on every table change (lets callers cache lookups later).
    epoch: AtomicU64,
    _pad: [u8; 16],
}
// One cache line: magic and version must be readable before anything else is trusted.
const _: () = assert!(std::mem::size_of::<Header>() == 64);

const FREE: u32 = 0;
const LIVE: u32 = 1;

#[repr(C)]
struct ProcRow {
    state: AtomicU32,
    pid: i32,
    starttime: u64,
    ctl_fd: i32,
    gen: u32,
    ctl_ino: u64,
    ctl_len: u64,
    /// The process's job tag (see the module doc); never 0 for a live row.
    job: u64,
    _pad: [u8; 16],
}
// A cache line per process row so that rows written by different processes do not share lines.
const _: () = assert!(std::mem::size_of::<ProcRow>() == 64);

#[repr(C)]
struct EndpRow {
    state: AtomicU32,
    api: u32,
    owner: u32,
    gen: u32,
    key: [u8; KEY_LEN],
    payload: [u8; PAYLOAD_LEN],
    owner_pid: i32,
    _pad: [u8; 12],
}
// Two cache lines; the fields the scan reads (state, api, key) are in the first.
const _: () = assert!(std::mem::size_of::<EndpRow>() == 128);

const PROC_OFF: usize = 64;
const ENDP_OFF: usize = PROC_OFF + NPROC * 64;
const FILE_LEN: usize = ENDP_OFF + NENDP * 128;

/// How to reach a process: enough to map its control segment without the registry.
/// Plain data; [`PeerRef::to_words`] packs it into three u64 for exchange (PMI, pipes,
/// endpoint payloads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PeerRef {
    pub pid: i32,
    pub ctl_fd: i32,
    pub starttime: u64,
    pub ctl_ino: u64,
}

impl PeerRef {
    pub fn to_words(&self) -> [u64; 3] {
        [(self.pid as u32 as u64) | ((self.ctl_fd as u32 as u64) << 32), self.starttime, self.ctl_ino]
    }
    pub fn from_words(w: [u64; 3]) -> PeerRef {
        PeerRef { pid: w[0] as u32 as i32, ctl_fd: (w[0] >> 32) as u32 as i32, starttime: w[1], ctl_ino: w[2] }
    }
}

/// Names one endpoint row (slot + generation, so an unpublished row's id goes stale).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EndpointId {
    pub slot: u32,
    pub gen: u32,
}

/// A lookup result.
#[derive(Clone, Copy, Debug)]
pub struct Endpoint {
    pub id: EndpointId,
    pub peer: PeerRef,
    /// The owner's registry id (what [`crate::rma::Peer::at`] takes).
    pub owner: ProcId,
    pub payload: [u8; PAYLOAD_LEN],
}

// ---------------------------------------------------------------------------------------
// Process liveness (see [`crate::process`]; kept under these names for the API crates).

pub use crate::process::{pid_alive, proc_starttime, proc_stat};

fn self_ident() -> (i32, u64) {
    // Not cached: a forked child must not present its parent's identity.
    let pid = std::process::id() as i32;
    (pid, proc_starttime(pid).unwrap_or(0))
}

// ---------------------------------------------------------------------------------------
// The file.

/// An open, mapped registry file.
pub struct RegFile {
    _fd: Fd,
    map: Mapping,
    path: std::path::PathBuf,
}

struct Locked<'a> {
    f: &'a RegFile,
    word: u64,
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        let _ = self.f.hdr().lock.compare_exchange(self.word, 0, Ordering::Release, Ordering::Relaxed);
    }
}

fn lock_word_alive(w: u64) -> bool {
    let pid = (w & 0xffff_ffff) as i32;
    match proc_stat(pid) {
        None => false,
        Some((st, t)) => st != b'Z' && st != b'X' && (t as u32) == (w >> 32) as u32,
    }
}

fn ensure_dir() -> Result<std::path::PathBuf> {
    let dir = shm::user_dir();
    let c = CString::new(dir.as_os_str().as_encoded_bytes()).map_err(|_| Error::InvalidArg)?;
    // SAFETY: c is a valid C string.
    if unsafe { libc::mkdir(c.as_ptr(), 0o700) } != 0 {
        let e = Error::last_os();
        if e != Error::Os(libc::EEXIST) {
            return Err(e);
        }
    }
    // Refuse a directory someone else owns or can enter (or a symlink planted there).
    // SAFETY: plain-data out parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::lstat(c.as_ptr(), &mut st) } != 0 {
        return Err(Error::last_os());
    }
    // SAFETY: getuid has no preconditions.
    if (st.st_mode & libc::S_IFMT) != libc::S_IFDIR || st.st_uid != unsafe { libc::getuid() } || (st.st_mode & 0o077) != 0 {
        return Err(Error::Permission);
    }
    Ok(dir)
}

impl RegFile {
    fn hdr(&self) -> &Header {
        // SAFETY: the mapping is FILE_LEN bytes, page aligned; Header is at offset 0.
        unsafe { &*(self.map.ptr() as *const Header) }
    }
    fn proc_row(&self, i: usize) -> &ProcRow {
        debug_assert!(i < NPROC);
        // SAFETY: in bounds (i < NPROC), 64-byte aligned rows.
        unsafe { &*(self.map.ptr().add(PROC_OFF + i * 64) as *const ProcRow) }
    }
    #[allow(clippy::mut_from_ref)]
    fn proc_row_mut(&self, _l: &Locked<'_>, i: usize) -> &mut ProcRow {
        // SAFETY: in bounds; the registry lock (witnessed by `_l`) serialises all writers.
        unsafe { &mut *(self.map.ptr().add(PROC_OFF + i * 64) as *mut ProcRow) }
    }
    fn endp_row(&self, i: usize) -> &EndpRow {
        // SAFETY: in bounds (i < NENDP), 128-byte rows.
        unsafe { &*(self.map.ptr().add(ENDP_OFF + i * 128) as *const EndpRow) }
    }
    #[allow(clippy::mut_from_ref)]
    fn endp_row_mut(&self, _l: &Locked<'_>, i: usize) -> &mut EndpRow {
        // SAFETY: as above; writers hold the lock.
        unsafe { &mut *(self.map.ptr().add(ENDP_OFF + i * 128) as *mut EndpRow) }
    }

    /// Opens (creating if needed) the registry.  `Ok(None)` when `create` is false and
    /// there is no registry.
    fn open(create: bool) -> Result<Option<RegFile>> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if Instant::now() > deadline {
                return Err(Error::Timeout);
            }
            let dir = if create {
                ensure_dir()?
            } else {
                shm::user_dir()
            };
            let path = dir.join(FILE_NAME);
            let c = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| Error::InvalidArg)?;
            let mut created = false;
            let mut fd = -1;
            if create {
                // SAFETY: valid C string.
                fd = crate::cancel::sys::open(&c, libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC | libc::O_NOFOLLOW, 0o600);
                if fd >= 0 {
                    created = true;
                } else if Error::last_os() == Error::Os(libc::ENOENT) {
                    continue; // directory removed under us by a leaving process
                } else if Error::last_os() != Error::Os(libc::EEXIST) {
                    return Err(Error::last_os());
                }
            }
            if fd < 0 {
                // SAFETY: valid C string.
                fd = crate::cancel::sys::open(&c, libc::O_RDWR | libc::O_CLOEXEC | libc::O_NOFOLLOW, 0);
                if fd < 0 {
                    let e = Error::last_os();
                    if e == Error::Os(libc::ENOENT) {
                        if create {
                            continue;
                        }
                        return Ok(None);
                    }
                    return Err(e);
                }
            }
            let fd = Fd(fd);
            if created {
                // SAFETY: our descriptor.
                if unsafe { libc::ftruncate(fd.0, FILE_LEN as libc::off_t) } != 0 {
                    let e = Error::last_os();
                    // SAFETY: valid C string; we created it and nobody can use it uninitialised.
                    unsafe { libc::unlink(c.as_ptr()) };
                    return Err(e);
                }
                let map = Mapping::map(fd.0, FILE_LEN)?;
                // SAFETY: fresh zeroed file of FILE_LEN bytes; nobody reads before init_done.
                let h = unsafe { &mut *(map.ptr() as *mut Header) };
                h.magic = MAGIC;
                h.version = VERSION;
                h.nproc = NPROC as u32;
                h.nendp = NENDP as u32;
                h.creator_pid = std::process::id() as i32;
                h.init_done.store(1, Ordering::Release);
                return Ok(Some(RegFile { _fd: fd, map, path }));
            }
            // Joiner: wait for the creator's ftruncate and header.
            let (_, _, mut size) = shm::fd_identity(fd.0)?;
            while size < FILE_LEN as u64 && Instant::now() < deadline {
                crate::cancel::nap(Duration::from_micros(200));
                size = shm::fd_identity(fd.0)?.2;
            }
            if size < FILE_LEN as u64 {
                if size == 0 {
                    // A creator died between open and ftruncate: the file is garbage.
                    // SAFETY: valid C string.
                    unsafe { libc::unlink(c.as_ptr()) };
                    continue;
                }
                return Err(Error::Version);
            }
            let map = Mapping::map(fd.0, FILE_LEN)?;
            let f = RegFile { _fd: fd, map, path };
            while f.hdr().init_done.load(Ordering::Acquire) == 0 {
                if Instant::now() > deadline {
                    return Err(Error::Timeout);
                }
                crate::cancel::nap(Duration::from_micros(200));
            }
            if f.hdr().magic != MAGIC || f.hdr().version != VERSION || f.hdr().nproc != NPROC as u32 || f.hdr().nendp != NENDP as u32 {
                return Err(Error::Version);
            }
            return Ok(Some(f));
        }
    }

    fn lock(&self) -> Result<Locked<'_>> {
        let (pid, st) = self_ident();
        let me = (pid as u32 as u64) | ((st as u32 as u64) << 32);
        let lock = &self.hdr().lock;
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut spins = 0u32;
        loop {
            match lock.compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return Ok(Locked { f: self, word: me }),
                Err(owner) => {
                    if owner != me && !lock_word_alive(owner) && lock.compare_exchange(owner, me, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                        crate::sn_debug!("fabric", "registry: stole lock from dead pid {}", owner as u32);
                        return Ok(Locked { f: self, word: me });
                    }
                }
            }
            spins += 1;
            if spins < 50 {
                std::thread::yield_now();
            } else {
                if Instant::now() > deadline {
                    return Err(Error::Timeout);
                }
                crate::cancel::nap(Duration::from_micros(100));
            }
        }
    }

    fn bump(&self) {
        self.hdr().epoch.fetch_add(1, Ordering::Relaxed);
    }

    /// Frees process row `i` and every endpoint it owns.  Returns rows freed.
    fn free_proc(&self, l: &Locked<'_>, i: usize) -> usize {
        let mut n = 0;
        for e in 0..NENDP {
            let r = self.endp_row(e);
            if r.state.load(Ordering::Relaxed) == LIVE && r.owner == i as u32 {
                let r = self.endp_row_mut(l, e);
                r.gen = r.gen.wrapping_add(1);
                r.state.store(FREE, Ordering::Release);
                n += 1;
            }
        }
        let p = self.proc_row_mut(l, i);
        p.gen = p.gen.wrapping_add(1);
        p.state.store(FREE, Ordering::Release);
        self.bump();
        n + 1
    }

    /// Reclaims dead processes (and those in `ended`); returns (rows freed, live rows left).
    fn sweep(&self, l: &Locked<'_>, ended: &[i32]) -> (usize, usize) {
        let mut freed = 0;
        let mut live = 0;
        for i in 0..NPROC {
            let p = self.proc_row(i);
            if p.state.load(Ordering::Acquire) != LIVE {
                continue;
            }
            if ended.contains(&p.pid) || !pid_alive(p.pid, Some(p.starttime)) {
                crate::sn_debug!("fabric", "registry: reclaiming pid {}", p.pid);
                freed += self.free_proc(l, i);
            } else {
                live += 1;
            }
        }
        (freed, live)
    }

    /// Marks the file removed and unlinks it and the directory.  Lock held.
    fn remove(&self, _l: &Locked<'_>) {
        self.hdr().removed.store(1, Ordering::Release);
        if let Ok(c) = CString::new(self.path.as_os_str().as_encoded_bytes()) {
            // SAFETY: valid C string.
            unsafe { libc::unlink(c.as_ptr()) };
        }
        if let Some(dir) = self.path.parent() {
            if let Ok(c) = CString::new(dir.as_os_str().as_encoded_bytes()) {
                // Fails harmlessly (ENOTEMPTY) if someone already made a new registry.
                // SAFETY: valid C string.
                unsafe { libc::rmdir(c.as_ptr()) };
            }
        }
    }
}

fn pack_key(key: &[u8]) -> Result<[u8; KEY_LEN]> {
    if key.len() > KEY_LEN {
        return Err(Error::InvalidArg);
    }
    let mut k = [0u8; KEY_LEN];
    k[..key.len()].copy_from_slice(key);
    Ok(k)
}

// ---------------------------------------------------------------------------------------
// This process's attachment (owned by crate::node).

/// This process's row in an open registry.
pub struct Attached {
    file: RegFile,
    slot: u32,
    gen: u32,
    job: u64,
}

/// A process named by its registry row: the process-table slot and the row's generation
/// at the time (bumped whenever a row is freed, so the id of a process that has left goes
/// stale).  Memory handles carry it so that a handle alone names its owner on the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProcId {
    pub slot: u32,
    pub gen: u32,
}

/// What a process publishes about itself.
pub(crate) struct SelfInfo {
    pub pid: i32,
    pub starttime: u64,
    pub ctl_fd: i32,
    pub ctl_ino: u64,
    pub ctl_len: u64,
    pub job: u64,
}

/// Attaches this process (creating the registry if needed).  `named` learns the row's
/// [`ProcId`] before the row goes live, so whoever finds the process can rely on it.
pub(crate) fn attach(me: &SelfInfo, named: &dyn Fn(ProcId)) -> Result<Attached> {
    loop {
        let file = RegFile::open(true)?.ok_or(Error::NotFound)?;
        let l = file.lock()?;
        if file.hdr().removed.load(Ordering::Acquire) != 0 {
            drop(l);
            continue; // raced with the last process leaving; use a fresh file
        }
        let mut slot = None;
        for i in 0..NPROC {
            let p = file.proc_row(i);
            if p.state.load(Ordering::Relaxed) == LIVE && (p.pid == me.pid || !pid_alive(p.pid, Some(p.starttime))) {
                // our own stale row (pid reuse after a crash) or a dead process: reclaim
                file.free_proc(&l, i);
            }
            if slot.is_none() && p.state.load(Ordering::Relaxed) == FREE {
                slot = Some(i);
            }
        }
        let i = slot.ok_or(Error::NoSpace)?;
        let p = file.proc_row_mut(&l, i);
        p.pid = me.pid;
        p.starttime = me.starttime;
        p.ctl_fd = me.ctl_fd;
        p.ctl_ino = me.ctl_ino;
        p.ctl_len = me.ctl_len;
        p.job = me.job;
        // A new generation for every attachment, so an id minted by the row's previous
        // owner never names this process.
        p.gen = p.gen.wrapping_add(1);
        let gen = p.gen;
        named(ProcId { slot: i as u32, gen });
        p.state.store(LIVE, Ordering::Release);
        file.bump();
        drop(l);
        return Ok(Attached { file, slot: i as u32, gen, job: me.job });
    }
}

impl Attached {
    /// Leaves the registry; the last process removes the file and directory.
    pub(crate) fn detach(&self) {
        let Ok(l) = self.file.lock() else { return };
        let p = self.file.proc_row(self.slot as usize);
        if p.state.load(Ordering::Relaxed) == LIVE && p.pid == std::process::id() as i32 {
            self.file.free_proc(&l, self.slot as usize);
        }
        let (_, live) = self.file.sweep(&l, &[]);
        if live == 0 {
            self.file.remove(&l);
        }
    }

    pub(crate) fn proc_id(&self) -> ProcId {
        ProcId { slot: self.slot, gen: self.gen }
    }

    /// The live process named by `id`; `gen_bits` of the generation are compared (ids
    /// carried in memory handles keep only the low bits).  `StaleHandle` when the row is
    /// free or has another generation, `PeerDead` when its process has exited.
    pub(crate) fn peer_by_id(&self, id: ProcId, gen_bits: u32) -> Result<PeerRef> {
        if id.slot as usize >= NPROC {
            return Err(Error::InvalidHandle);
        }
        let mask = if gen_bits >= 32 { u32::MAX } else { (1u32 << gen_bits) - 1 };
        let f = &self.file;
        let _l = f.lock()?;
        let p = f.proc_row(id.slot as usize);
        if p.state.load(Ordering::Relaxed) != LIVE || p.gen & mask != id.gen & mask {
            return Err(Error::StaleHandle);
        }
        if p.job != self.job {
            crate::sn_debug!("fabric", "registry: process id {}:{} names a process of another job; refused", id.slot, id.gen);
            return Err(Error::ProtectionDomain);
        }
        if !pid_alive(p.pid, Some(p.starttime)) {
            return Err(Error::PeerDead);
        }
        Ok(self.peer_of(id.slot as usize))
    }

    fn peer_of(&self, i: usize) -> PeerRef {
        let p = self.file.proc_row(i);
        PeerRef { pid: p.pid, ctl_fd: p.ctl_fd, starttime: p.starttime, ctl_ino: p.ctl_ino }
    }

    pub(crate) fn publish(&self, api: u32, key: &[u8], payload: &[u8]) -> Result<EndpointId> {
        let k = pack_key(key)?;
        if payload.len() > PAYLOAD_LEN {
            return Err(Error::InvalidArg);
        }
        let f = &self.file;
        let l = f.lock()?;
        f.sweep(&l, &[]);
        let mut free = None;
        for e in 0..NENDP {
            let r = f.endp_row(e);
            if r.state.load(Ordering::Relaxed) == LIVE {
                if r.api == api && r.key == k && self.ours(r) {
                    return Err(Error::Exists);
                }
            } else if free.is_none() {
                free = Some(e);
            }
        }
        self.insert(&l, free.ok_or(Error::NoSpace)?, api, k, payload)
    }

    /// Fills free endpoint row `e` as ours (fields first, state last).
    fn insert(&self, l: &Locked<'_>, e: usize, api: u32, k: [u8; KEY_LEN], payload: &[u8]) -> Result<EndpointId> {
        let f = &self.file;
        let r = f.endp_row_mut(l, e);
        r.api = api;
        r.key = k;
        r.payload = [0; PAYLOAD_LEN];
        r.payload[..payload.len()].copy_from_slice(payload);
        r.owner = self.slot;
        r.owner_pid = std::process::id() as i32;
        r.gen = r.gen.wrapping_add(1);
        r.state.store(LIVE, Ordering::Release);
        f.bump();
        Ok(EndpointId { slot: e as u32, gen: r.gen })
    }

    pub(crate) fn lookup(&self, api: u32, key: &[u8]) -> Result<Endpoint> {
        let k = pack_key(key)?;
        let f = &self.file;
        let l = f.lock()?;
        for e in 0..NENDP {
            let r = f.endp_row(e);
            if r.state.load(Ordering::Relaxed) == LIVE && r.api == api && r.key == k && self.ours(r) {
                let owner = r.owner as usize;
                let p = f.proc_row(owner);
                if owner >= NPROC || p.state.load(Ordering::Relaxed) != LIVE || !pid_alive(p.pid, Some(p.starttime)) {
                    if owner < NPROC && p.state.load(Ordering::Relaxed) == LIVE {
                        f.free_proc(&l, owner);
                    } else {
                        let r = f.endp_row_mut(&l, e);
                        r.gen = r.gen.wrapping_add(1);
                        r.state.store(FREE, Ordering::Release);
                    }
                    return Err(Error::NotFound);
                }
                let owner_id = ProcId { slot: owner as u32, gen: p.gen };
                return Ok(Endpoint { id: EndpointId { slot: e as u32, gen: r.gen }, peer: self.peer_of(owner), owner: owner_id, payload: r.payload });
            }
        }
        Err(Error::NotFound)
    }

    /// Whether endpoint row `r` belongs to a process of this job.
    fn ours(&self, r: &EndpRow) -> bool {
        (r.owner as usize) < NPROC && self.file.proc_row(r.owner as usize).job == self.job
    }

    /// See [`claim`].
    pub(crate) fn claim(&self, api: u32, key: &[u8]) -> Result<EndpointId> {
        let k = pack_key(key)?;
        let f = &self.file;
        let l = f.lock()?;
        f.sweep(&l, &[]);
        let mut free = None;
        for e in 0..NENDP {
            let r = f.endp_row(e);
            if r.state.load(Ordering::Relaxed) == LIVE {
                if r.api == api && r.key == k {
                    if !self.ours(r) {
                        return Err(Error::Permission);
                    }
                    if r.owner == self.slot {
                        return Ok(EndpointId { slot: e as u32, gen: r.gen });
                    }
                }
            } else if free.is_none() {
                free = Some(e);
            }
        }
        self.insert(&l, free.ok_or(Error::NoSpace)?, api, k, &[])
    }

    pub(crate) fn unpublish(&self, id: EndpointId) -> Result<()> {
        if id.slot as usize >= NENDP {
            return Err(Error::InvalidHandle);
        }
        let f = &self.file;
        let l = f.lock()?;
        let r = f.endp_row(id.slot as usize);
        if r.state.load(Ordering::Relaxed) != LIVE || r.gen != id.gen {
            return Err(Error::StaleHandle);
        }
        if r.owner != self.slot {
            return Err(Error::Permission);
        }
        let r = f.endp_row_mut(&l, id.slot as usize);
        r.gen = r.gen.wrapping_add(1);
        r.state.store(FREE, Ordering::Release);
        f.bump();
        Ok(())
    }

    pub(crate) fn peer_by_pid(&self, pid: i32) -> Result<PeerRef> {
        let f = &self.file;
        let _l = f.lock()?;
        for i in 0..NPROC {
            let p = f.proc_row(i);
            if p.state.load(Ordering::Relaxed) == LIVE && p.pid == pid && p.job == self.job {
                if !pid_alive(p.pid, Some(p.starttime)) {
                    return Err(Error::PeerDead);
                }
                return Ok(self.peer_of(i));
            }
        }
        Err(Error::NotFound)
    }
}

// ---------------------------------------------------------------------------------------
// Public entry points (attach this process on first use).

/// How the entry points below find this process's attachment: through the node layer
/// above, which attaches on first use (and refuses a forked child its parent's).  Set by
/// it when the library is loaded.
pub(crate) static THIS_PROCESS: std::sync::OnceLock<fn() -> Result<&'static Attached>> = std::sync::OnceLock::new();

fn attached() -> Result<&'static Attached> {
    THIS_PROCESS.get().ok_or(Error::Unsupported)?()
}

/// Publishes an endpoint under (api, key).  `key` is at most 32 bytes (zero-padded),
/// `payload` at most 64.  `Err(Exists)` when a live entry has that key.
pub fn publish(api: u32, key: &[u8], payload: &[u8]) -> Result<EndpointId> {
    attached()?.publish(api, key, payload)
}

/// Claims (api, key) for this job against every other job of the user on this machine: each
/// process of the job that claims gets its own row (the same one on a repeated claim), and
/// the job holds the name until its last claiming process leaves.  `Err(Permission)` while
/// a live process of another job holds it.  Used for names that a real system gives to one
/// job only (uGNI protection domains).
pub fn claim(api: u32, key: &[u8]) -> Result<EndpointId> {
    attached()?.claim(api, key)
}

/// Finds the live endpoint published under (api, key).  `Err(NotFound)` if none (an
/// entry whose owner has died is reclaimed on the spot).
pub fn lookup(api: u32, key: &[u8]) -> Result<Endpoint> {
    attached()?.lookup(api, key)
}

/// Removes an endpoint this process published.
pub fn unpublish(id: EndpointId) -> Result<()> {
    attached()?.unpublish(id)
}

/// The live fabric process named by a [`ProcId`] (see [`Attached::peer_by_id`]).
pub fn peer_by_id(id: ProcId, gen_bits: u32) -> Result<PeerRef> {
    attached()?.peer_by_id(id, gen_bits)
}

/// The live fabric process with this pid.
pub fn peer_by_pid(pid: i32) -> Result<PeerRef> {
    attached()?.peer_by_pid(pid)
}

/// Removes what dead processes left in the node fabric: their registry entries,
/// and any named shared object they owned.  `pids` are processes known to have
/// ended (e.g. a job's ranks); processes found dead by pid probing are reclaimed
/// too.  When no live process remains, the registry file and the per-user
/// directory are removed.  Returns the number of entries reclaimed (process rows
/// plus endpoint rows).  Called by snrun when a job ends; does not attach the caller.
///
/// The fabric's only named object is the registry itself (segments are memfds, which
/// vanish with their owner), so "objects they owned" are exactly their registry rows.
pub fn reclaim_dead(pids: &[i32]) -> Result<usize> {
    let me = std::process::id() as i32;
    // Never let a caller reclaim itself by listing its own pid.
    let ended: Vec<i32> = pids.iter().copied().filter(|&p| p != me).collect();
    let Some(file) = RegFile::open(false)? else {
        // No registry: tidy an empty directory left by a crash, if any.
        if let Ok(c) = CString::new(shm::user_dir().as_os_str().as_encoded_bytes()) {
            // SAFETY: valid C string; rmdir only removes an empty directory.
            unsafe { libc::rmdir(c.as_ptr()) };
        }
        return Ok(0);
    };
    let l = file.lock()?;
    if file.hdr().removed.load(Ordering::Acquire) != 0 {
        return Ok(0);
    }
    let (freed, live) = file.sweep(&l, &ended);
    if live == 0 {
        file.remove(&l);
    }
    Ok(freed)
}
