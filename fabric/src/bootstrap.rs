//! Job bootstrap for the API libraries: who am I, where are my peers, and a
//! few out-of-band collectives, all over the process's single PMI connection
//! ([`crate::pmi`]).  Every function connects lazily, so an API library may
//! call them before (or without) the application's `PMI_Init`.
//!
//! Errors: `Bootstrap` when no launcher can be reached or after `PMI_Finalize`,
//! `InvalidArg` for bad keys or ranks, `NotFound` for a key nobody put.
//!
//! Collectives ([`barrier`], [`kvs_fence`], [`allgather`], [`bcast`]) must be
//! called by every rank in the same order, like MPI collectives.

use crate::error::{Error, Result};
use crate::pmi::{self, Client, INTERNAL_PREFIX};

pub use crate::pmi::gni_credentials;

/// This process's rank in the job (0 in a singleton).
pub fn rank() -> Result<u32> {
    pmi::with_client(|c| Ok(c.job.rank))
}

/// Number of ranks in the job.
pub fn size() -> Result<u32> {
    pmi::with_client(|c| Ok(c.job.size))
}

/// Index of this rank among the ranks on its node (0-based, rank order).
pub fn local_rank() -> Result<u32> {
    pmi::with_client(|c| Ok(c.job.local_rank()))
}

/// Number of ranks on this node.
pub fn local_size() -> Result<u32> {
    pmi::with_client(|c| Ok(c.job.clique().len() as u32))
}

/// Ranks on this node, ascending.
pub fn local_ranks() -> Result<Vec<u32>> {
    pmi::with_client(|c| Ok(c.job.clique()))
}

/// Node id (NID) of `rank`, from the launcher's process mapping; 0 for every
/// rank when the launcher gives none.  `InvalidArg` if `rank >= size`.
pub fn node_id(rank: u32) -> Result<u32> {
    pmi::with_client(|c| c.job.node_id(rank).ok_or(Error::InvalidArg))
}

/// This rank's node id as already learnt from the launcher, without connecting (None
/// when no connection was made: see [`crate::pmi::known_job`]).
pub fn known_node() -> Option<u32> {
    pmi::known_job(|j| j.node_id(j.rank)).flatten()
}

/// Number of distinct nodes (highest node id + 1).
pub fn num_nodes() -> Result<u32> {
    pmi::with_client(|c| Ok(c.job.num_nodes()))
}

/// The job's KVS name (identifies the job; input of [`gni_credentials`]).
pub fn job_id() -> Result<String> {
    pmi::with_client(|c| Ok(c.job.kvsname.clone()))
}

/// Whether the process runs without a launcher (1-rank job, local KVS).
pub fn is_singleton() -> Result<bool> {
    pmi::with_client(|c| Ok(c.job.singleton))
}

/// Environment variable through which a launcher hands its ranks the job secret
/// (32 hex digits); snrun sets it.
pub const SECRET_ENV: &str = "SOFTNIC_JOB_SECRET";

/// Job-wide KVS key under which rank 0 publishes the secret where no launcher set
/// [`SECRET_ENV`] (mpiexec, srun, foreign launchers).
const SECRET_KEY: &str = "secret";

/// The job's 128-bit secret, known only to its ranks: from [`SECRET_ENV`] when the
/// launcher set it; else rank 0 draws it from the kernel's random source and publishes it
/// in the job's own PMI KVS and in the launcher's name service (see `secret_service`),
/// which only the job's ranks reach, and the other ranks read it from there (waiting up to SOFTNIC_NET_TIMEOUT_MS for a rank 0 that starts
/// late).  A singleton draws its own.  Every process of a job gets the same value, and
/// two jobs never do (whatever their ids).  `Bootstrap` when it cannot be learnt.
///
/// Rank 0 publishes the first time it asks, so every rank of a job must ask (the
/// libraries do when they set up job-wide objects).  Once learnt it is also put in the
/// process's environment, for the programs it starts.
pub fn job_secret() -> Result<[u8; 16]> {
    static SECRET: std::sync::OnceLock<[u8; 16]> = std::sync::OnceLock::new();
    if let Some(s) = SECRET.get() {
        return Ok(*s);
    }
    let s = learn_secret()?;
    // Put in the environment by the thread that records it, before any other thread can
    // see the value (one that finds it recorded returns at once, and must find it there).
    Ok(*SECRET.get_or_init(|| {
        // Programs the process starts belong to its job, as on the machines whose job
        // containers a rank's children share: they inherit the secret (helpers exec'd by
        // a rank attach to its uGNI domain and reach its memory).  Kept if already set.
        if let Ok(v) = std::ffi::CString::new(pmi::to_hex(&s)) {
            // SAFETY: NUL-terminated strings; overwrite=0 keeps a launcher's value.
            unsafe { libc::setenv(c"SOFTNIC_JOB_SECRET".as_ptr(), v.as_ptr(), 0) };
        }
        s
    }))
}

/// fork(2) prepare handler (registered at load): a process started by a launcher learns
/// the job secret before it forks, so a child, which cannot use its parent's PMI connection,
/// still belongs to the job (reference-style Portals programs fork ranks).
///
/// Only where that costs no wait: the launcher handed the secret over in the environment,
/// or the process is already connected and no other thread is in a PMI call (a thread
/// blocked in a barrier must not hold up a fork, nor a fork before any PMI use connect).
/// Otherwise the child learns the secret itself if it can.
pub(crate) extern "C" fn learn_before_fork() {
    if std::env::var_os(SECRET_ENV).is_some() || crate::pmi::connected_and_idle() {
        let _ = job_secret();
    }
}

fn learn_secret() -> Result<[u8; 16]> {
    if let Ok(v) = std::env::var(SECRET_ENV) {
        match pmi::parse_secret(&v) {
            Some(s) => return Ok(s),
            None => crate::sn_warn!("bootstrap", "{} is not 32 hex digits; ignored", SECRET_ENV),
        }
    }
    let mut s = [0u8; 16];
    if is_singleton()? {
        pmi::random_bytes(&mut s)?;
        return Ok(s);
    }
    // Two channels, because launchers differ in when a put becomes visible: snrun's KVS
    // serves it at once, hydra's and Slurm's only after a barrier (which cannot be asked
    // of ranks that merely set up the fabric), while their name services answer at once.
    let service = secret_service()?;
    if rank()? == 0 {
        pmi::random_bytes(&mut s)?;
        let by_kvs = kvs_put_global(SECRET_KEY, &s);
        let by_name = pmi::with_client(|c| c.publish_name(&service, &hex_encode(&s)));
        if by_kvs.is_err() && by_name.is_err() {
            crate::sn_warn!("bootstrap", "cannot hand the job secret to the other ranks: {:?}, {:?}", by_kvs, by_name);
            return Err(Error::Bootstrap);
        }
        return Ok(s);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(crate::env::get_u64("SOFTNIC_NET_TIMEOUT_MS"));
    let mut nap = std::time::Duration::from_micros(100);
    loop {
        let got = match kvs_get_global(SECRET_KEY) {
            Err(Error::NotFound) => pmi::with_client(|c| c.lookup_name(&service)).and_then(|h| hex_decode(&h)).map_err(|_| Error::NotFound),
            r => r,
        };
        match got {
            Ok(b) => return <[u8; 16]>::try_from(b).map_err(|_| Error::Bootstrap),
            Err(Error::NotFound) if std::time::Instant::now() < deadline => {
                crate::cancel::nap(nap);
                nap = (nap * 2).min(std::time::Duration::from_millis(10));
            }
            Err(Error::NotFound) => {
                crate::sn_warn!("bootstrap", "rank 0 did not publish the job secret in time");
                return Err(Error::Bootstrap);
            }
            Err(e) => return Err(e),
        }
    }
}

/// A 64-bit key derived from the job secret for one purpose (`label`): SipHash-2-4 of the
/// label keyed by the secret, so names and protection keys that other processes may see
/// (registry rows, memory handles) reveal nothing of the secret, and keys for different
/// purposes are unrelated.  Same value in every process of the job; `Bootstrap` when the
/// secret cannot be learnt (see [`job_secret`]).
pub fn job_key(label: &str) -> Result<u64> {
    Ok(pmi::siphash24(&job_secret()?, label.as_bytes()))
}

/// The protection-domain key of one API's registrations (`label` names the API): [`job_key`],
/// so a handle or address that another job learnt fails the target's key check.  Never
/// fails: a process that cannot learn the secret gets a random key, which matches no
/// peer's (closed, not open).
pub fn protection_key(label: &str) -> u64 {
    job_key(label).unwrap_or_else(|e| {
        crate::sn_warn!("bootstrap", "no job secret ({}): {} registrations get a key no peer holds", e, label);
        let mut s = [0u8; 16];
        pmi::random_bytes(&mut s).map(|_| pmi::siphash24(&s, label.as_bytes())).unwrap_or(u64::MAX)
    })
}

/// The protection key of the uGNI domain (`ptag`, `cookie`) in this job (DMAPP registers
/// under its job's domain, so both APIs validate each other's handles): a
/// [`protection_key`], so the same pair in two jobs gives two keys.
pub fn gni_domain_key(ptag: u8, cookie: u32) -> u64 {
    protection_key(&format!("ugni domain {} {:#x}", ptag, cookie))
}

/// The job's identity in this machine's node fabric: [`job_key`] of the fabric's label,
/// never 0 (0 marks rows of no job).  Two jobs on one machine differ in it (but with
/// probability 2^-64), whatever launched them.
pub fn job_tag() -> Result<u64> {
    Ok(job_key("softnic node-fabric job")?.max(1))
}

/// The launcher name-service entry under which rank 0 also publishes the secret: named
/// after the job's KVS, so jobs sharing a name server do not meet.
fn secret_service() -> Result<String> {
    pmi::with_client(|c| {
        let s = format!("{}secret.{}", INTERNAL_PREFIX, c.job.kvsname);
        Ok(if pmi::check_key(&s, &c.job.maxes).is_ok() { s } else { format!("{}secret", INTERNAL_PREFIX) })
    })
}

// ---- typed KVS -------------------------------------------------------------

fn hex_encode(data: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(data.len() * 2);
    for &b in data {
        s.push(D[(b >> 4) as usize] as char);
        s.push(D[(b & 15) as usize] as char);
    }
    s
}

fn hex_decode(s: &str) -> Result<Vec<u8>> {
    fn nib(c: u8) -> Result<u8> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(Error::Bootstrap),
        }
    }
    let b = s.as_bytes();
    if b.len() % 2 != 0 {
        return Err(Error::Bootstrap);
    }
    b.chunks(2).map(|p| Ok(nib(p[0])? << 4 | nib(p[1])?)).collect()
}

// Wire layout of one typed value published by `rank` under `key`:
//   _sn.<rank>.<key>      = "<nchunks>:<hex piece 0>"
//   _sn.<rank>.<key>.<i>  = "<hex piece i>"            (i = 1..nchunks-1)
// so a value that fits the server's vallen_max costs one put and one get.

/// Room reserved in the first chunk for "<nchunks>:".
const HEADER_ROOM: usize = 12;
/// Room reserved in keys for ".<chunk index>".
const SUFFIX_ROOM: usize = 11;

/// The wire key of `key`: under a rank (`Some`) or job-wide (`None`, prefix `_sn.g.`).
fn base_key(c: &Client, rank: Option<u32>, key: &str) -> Result<String> {
    let k = match rank {
        Some(r) => format!("{}{}.{}", INTERNAL_PREFIX, r, key),
        None => format!("{}g.{}", INTERNAL_PREFIX, key),
    };
    pmi::check_key(&k, &c.job.maxes)?;
    if k.len() + SUFFIX_ROOM >= c.job.maxes.key {
        return Err(Error::InvalidArg);
    }
    Ok(k)
}

/// Hex characters per chunk (even, so bytes never straddle chunks).
fn piece_len(c: &Client) -> Result<usize> {
    let n = c.job.maxes.val.saturating_sub(1 + HEADER_ROOM) & !1;
    if n == 0 {
        return Err(Error::Bootstrap);
    }
    Ok(n)
}

fn put_bytes(c: &mut Client, rank: Option<u32>, key: &str, data: &[u8]) -> Result<()> {
    let kvs = c.job.kvsname.clone();
    let base = base_key(c, rank, key)?;
    let hex = hex_encode(data);
    let piece = piece_len(c)?;
    let pieces: Vec<&str> = if hex.is_empty() {
        vec![""]
    } else {
        hex.as_bytes().chunks(piece).map(|p| std::str::from_utf8(p).expect("hex is ASCII")).collect()
    };
    c.put(&kvs, &base, &format!("{}:{}", pieces.len(), pieces[0]))?;
    for (i, p) in pieces.iter().enumerate().skip(1) {
        c.put(&kvs, &format!("{}.{}", base, i), p)?;
    }
    Ok(())
}

fn get_bytes(c: &mut Client, rank: Option<u32>, key: &str) -> Result<Vec<u8>> {
    if rank.is_some_and(|r| r >= c.job.size) {
        return Err(Error::InvalidArg);
    }
    let kvs = c.job.kvsname.clone();
    let base = base_key(c, rank, key)?;
    let first = c.get(&kvs, &base)?.ok_or(Error::NotFound)?;
    let (n, p0) = first.split_once(':').ok_or(Error::Bootstrap)?;
    let n: usize = n.parse().map_err(|_| Error::Bootstrap)?;
    let mut hex = String::from(p0);
    for i in 1..n {
        hex.push_str(&c.get(&kvs, &format!("{}.{}", base, i))?.ok_or(Error::Bootstrap)?);
    }
    hex_decode(&hex)
}

/// Publishes `value` (any bytes, any length) under `key` for this rank.
/// Peers can read it with [`kvs_get`]`(my_rank, key)` after a [`kvs_fence`].
/// `key` may use any printable characters except space and `=`, and must
/// leave room for the internal prefix within the server's key limit
/// (about 40 characters under hydra).
pub fn kvs_put(key: &str, value: &[u8]) -> Result<()> {
    pmi::with_client(|c| {
        let r = c.job.rank;
        put_bytes(c, Some(r), key, value)
    })
}

/// Publishes `value` under a job-wide `key` (not tied to a rank; the last put wins).
/// Readers retry [`kvs_get_global`] until it appears (no fence needed with the PMI-1
/// servers of snrun and hydra, which store puts when they arrive).
pub fn kvs_put_global(key: &str, value: &[u8]) -> Result<()> {
    pmi::with_client(|c| put_bytes(c, None, key, value))
}

/// Reads a job-wide key; `NotFound` while nobody has published it.
pub fn kvs_get_global(key: &str) -> Result<Vec<u8>> {
    pmi::with_client(|c| get_bytes(c, None, key))
}

/// Reads what `rank` published under `key`.  `NotFound` if it has not (or
/// not before the last fence).
pub fn kvs_get(rank: u32, key: &str) -> Result<Vec<u8>> {
    pmi::with_client(|c| get_bytes(c, Some(rank), key))
}

/// Makes every rank's earlier [`kvs_put`]s visible to every rank (commit + barrier).
pub fn kvs_fence() -> Result<()> {
    // PMI-1 sends puts immediately; the barrier is what publishes them.
    barrier()
}

/// Waits for all ranks; also a full memory fence.
pub fn barrier() -> Result<()> {
    pmi::with_client(|c| c.barrier())
}

/// Every rank contributes `mine` (the SAME length on every rank); returns the
/// concatenation of all contributions **in rank order** (rank 0's bytes first).
/// The Cray documentation does not promise rank order for PMI_Allgather; we do.
/// `InvalidArg` if some rank contributed a different length.
pub fn allgather(mine: &[u8]) -> Result<Vec<u8>> {
    pmi::with_client(|c| {
        if c.job.size == 1 {
            return Ok(mine.to_vec());
        }
        c.coll_seq += 1;
        let key = format!("ag{}", c.coll_seq);
        let me = c.job.rank;
        put_bytes(c, Some(me), &key, mine)?;
        c.barrier()?;
        let mut out = Vec::with_capacity(mine.len() * c.job.size as usize);
        for r in 0..c.job.size {
            if r == c.job.rank {
                out.extend_from_slice(mine);
                continue;
            }
            let theirs = get_bytes(c, Some(r), &key)?;
            if theirs.len() != mine.len() {
                return Err(Error::InvalidArg);
            }
            out.extend_from_slice(&theirs);
        }
        Ok(out)
    })
}

/// Copies `root`'s `buf` into every other rank's `buf` (same length everywhere).
/// `InvalidArg` if `root >= size` or the root's length differs from ours.
pub fn bcast(buf: &mut [u8], root: u32) -> Result<()> {
    pmi::with_client(|c| {
        if root >= c.job.size {
            return Err(Error::InvalidArg);
        }
        if c.job.size == 1 {
            return Ok(());
        }
        c.coll_seq += 1;
        let key = format!("bc{}", c.coll_seq);
        if c.job.rank == root {
            put_bytes(c, Some(root), &key, buf)?;
        }
        c.barrier()?;
        if c.job.rank != root {
            let data = get_bytes(c, Some(root), &key)?;
            if data.len() != buf.len() {
                return Err(Error::InvalidArg);
            }
            buf.copy_from_slice(&data);
        }
        Ok(())
    })
}

/// Ends the whole job with `code` (the launcher kills every rank); prints `msg`.
/// Without a launcher (or if it cannot be reached) the process exits with `code`.
pub fn abort(code: i32, msg: &str) -> ! {
    match pmi::with_client(|c| -> Result<()> { c.abort(code, msg) }) {
        Ok(()) | Err(_) => {
            crate::log::write_stderr(format!("softnic abort, exit code {}: {}\n", code, msg).as_bytes());
            std::process::exit(code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let data: Vec<u8> = (0..=255u8).collect();
        let h = hex_encode(&data);
        assert_eq!(h.len(), 512);
        assert_eq!(&h[..6], "000102");
        assert_eq!(hex_decode(&h).unwrap(), data);
        assert!(hex_decode("abc").is_err());
        assert!(hex_decode("zz").is_err());
    }

    #[test]
    fn secret_is_stable_and_random() {
        let given = std::env::var_os(SECRET_ENV).is_some();
        let a = job_secret().unwrap();
        assert_eq!(a, job_secret().unwrap());
        if !given {
            assert_ne!(a, [0u8; 16]);
        }
        // Handed on to the programs this process starts.
        assert_eq!(std::env::var(SECRET_ENV).ok().and_then(|v| pmi::parse_secret(&v)), Some(a));
    }

    #[test]
    fn job_keys_are_stable_and_distinct() {
        let a = job_key("a").unwrap();
        assert_eq!(a, job_key("a").unwrap());
        assert_ne!(a, job_key("b").unwrap());
        assert_ne!(job_tag().unwrap(), 0);
    }

    #[test]
    fn credentials_are_stable_and_in_range() {
        let (p, c) = gni_credentials("kvs_1234_0");
        assert_eq!((p, c), gni_credentials("kvs_1234_0"));
        assert!((16..=239).contains(&p));
        assert!(c != 0 && c & 0xffff == 0);
    }

    // Singleton mode (no PMI_FD/PMI_PORT under `cargo test`): collectives are
    // local, typed KVS values round-trip through chunking.
    #[test]
    fn singleton_collectives_and_chunked_kvs() {
        if std::env::var_os("PMI_FD").is_some() || std::env::var_os("PMI_PORT").is_some() {
            return;
        }
        assert_eq!(size().unwrap(), 1);
        assert_eq!(rank().unwrap(), 0);
        assert_eq!(local_size().unwrap(), 1);
        assert_eq!(node_id(0).unwrap(), 0);
        assert_eq!(node_id(1), Err(Error::InvalidArg));
        let big: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
        kvs_put("big", &big).unwrap();
        kvs_put("empty", &[]).unwrap();
        kvs_fence().unwrap();
        assert_eq!(kvs_get(0, "big").unwrap(), big);
        assert_eq!(kvs_get(0, "empty").unwrap(), Vec::<u8>::new());
        assert_eq!(kvs_get(0, "missing"), Err(Error::NotFound));
        assert_eq!(kvs_get(1, "big"), Err(Error::InvalidArg));
        assert_eq!(allgather(b"abc").unwrap(), b"abc");
        let mut b = [1u8, 2, 3];
        bcast(&mut b, 0).unwrap();
        assert_eq!(b, [1, 2, 3]);
        assert_eq!(bcast(&mut b, 1), Err(Error::InvalidArg));
    }
}
