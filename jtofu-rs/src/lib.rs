//! libtofutop.so: jTofu, the job-topology companion of uTofu: ranks <-> node
//! coordinates, paths and hops, and the node topology libtofucom.so builds its ids on.
//!
//! **Nodes and coordinates.**  A process's node is `SOFTNIC_NODE_ID` (snrun sets it per
//! virtual node), else the launcher's node of its rank when libtofucom.so could ask the
//! launcher at load time (a job over several machines), else 0; node `n` has A = n%2, B = (n/2)%3, C = (n/6)%2 and X/Y/Z = the
//! bytes of n/12 (twelve nodes share X, Y, Z as in a Tofu unit).
//!
//! **Mapinfo** (the opaque job map; ours): `u32` magic, `u32` process count, then the
//! node of every rank as `u32`.  `jtofu_create_mapinfo_by_envvars` builds it from the
//! launcher's environment — process count from `PMI_SIZE` (snrun, MPICH),
//! `OMPI_COMM_WORLD_SIZE` or `SLURM_NTASKS`; nodes from `SOFTNIC_NODE_MAP` (a comma list),
//! the launcher's map learnt at load time, or blocks of `SOFTNIC_RANKS_PER_NODE` / `MPI_LOCALNRANKS` /
//! `OMPI_COMM_WORLD_LOCAL_SIZE` ranks (all on one node when none is set) — and
//! `jtofu_initialize` with a NULL mapinfo uses it.
//!
//! **Shapes** (decisions): the system and the job's physical size are the bounding box
//! of the job's nodes from coordinate 0 (A, B, C always 2, 3, 2); B is the one torus
//! axis; logical coordinates are (index of the node among the job's nodes, 0, 0).
//! One-sided paths to a node: all 12 (A, B, C) path coordinates, the node's own first;
//! barrier paths: the node's own only.  Hops: the 6-D distance (B wrapping).

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Mutex, OnceLock};

extern "C" {
    fn malloc(size: usize) -> *mut c_void;
}

pub const JTOFU_SUCCESS: i32 = 0;
pub const JTOFU_ERR_NOT_INITIALIZED: i32 = -1;
pub const JTOFU_ERR_INVALID_ARG: i32 = -3;
pub const JTOFU_ERR_INVALID_POINTER: i32 = -4;
pub const JTOFU_ERR_EXCESS_FINALIZE: i32 = -5;
pub const JTOFU_ERR_OUT_OF_MEMORY: i32 = -6;

const MAP_MAGIC: u32 = 0x4a54_4f46; // "JTOF"

/// Sizes of the A, B, C axes.
pub const ABC: [u8; 3] = [2, 3, 2];

/// The job's nodes as the launcher told libtofucom.so when it was loaded (rank ->
/// node), when the job was started by a launcher it could ask (see utofu.h).
static LAUNCHER_NODES: OnceLock<(u32, Vec<u32>)> = OnceLock::new();

/// Records what the launcher said about the job: this process's rank and the node of
/// every rank.  Called once, by libtofucom.so when it is loaded, before anything asks.
pub fn set_launcher_nodes(rank: u32, nodes: Vec<u32>) {
    let _ = LAUNCHER_NODES.set((rank, nodes));
}

/// (local rank, processes on the node) from the launcher's map, when libtofucom.so
/// learnt it (the ranks of a node in rank order).
pub fn launcher_local_position() -> Option<(u32, u32)> {
    let (rank, nodes) = LAUNCHER_NODES.get()?;
    let mine = *nodes.get(*rank as usize)?;
    let before = nodes[..*rank as usize].iter().filter(|&&n| n == mine).count() as u32;
    Some((before, nodes.iter().filter(|&&n| n == mine).count() as u32))
}

/// This process's node index: `SOFTNIC_NODE_ID`, else the launcher's node of this rank,
/// else 0.
pub fn node_index() -> u32 {
    static NODE: OnceLock<u32> = OnceLock::new();
    *NODE.get_or_init(|| {
        std::env::var("SOFTNIC_NODE_ID")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .or_else(|| LAUNCHER_NODES.get().and_then(|(r, n)| n.get(*r as usize).copied()))
            .unwrap_or(0)
    })
}

/// Coordinates (X, Y, Z, A, B, C) of node `n`.
pub fn coords_of(n: u32) -> [u8; 6] {
    let rest = n / 12;
    [(rest & 0xff) as u8, ((rest >> 8) & 0xff) as u8, ((rest >> 16) & 0xff) as u8, (n % 2) as u8, ((n / 2) % 3) as u8, ((n / 6) % 2) as u8]
}

/// The node at coordinates `c` (inverse of [`coords_of`]), None when A, B, C are out of range.
pub fn node_at(c: &[u8; 6]) -> Option<u32> {
    if c[3] >= ABC[0] || c[4] >= ABC[1] || c[5] >= ABC[2] {
        return None;
    }
    let rest = c[0] as u32 | (c[1] as u32) << 8 | (c[2] as u32) << 16;
    rest.checked_mul(12).map(|r| r + c[3] as u32 + 2 * c[4] as u32 + 6 * c[5] as u32)
}

fn env_u32(names: &[&str]) -> Option<u32> {
    names.iter().find_map(|n| std::env::var(n).ok().and_then(|v| v.trim().parse().ok()))
}

/// The job's nodes per rank, from the environment.
fn nodes_from_env() -> Vec<u32> {
    let size = env_u32(&["PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"]).unwrap_or(1).max(1);
    if let Ok(m) = std::env::var("SOFTNIC_NODE_MAP") {
        let v: Vec<u32> = m.split(',').filter_map(|s| s.trim().parse().ok()).collect();
        if v.len() == size as usize {
            return v;
        }
    }
    if let Some((_, n)) = LAUNCHER_NODES.get().filter(|(_, n)| n.len() == size as usize) {
        return n.clone();
    }
    let per = env_u32(&["SOFTNIC_RANKS_PER_NODE", "MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE"]).unwrap_or(size).max(1);
    (0..size).map(|r| r / per).collect()
}

fn encode(nodes: &[u32]) -> Vec<u8> {
    let mut b = Vec::with_capacity(8 + 4 * nodes.len());
    b.extend_from_slice(&MAP_MAGIC.to_le_bytes());
    b.extend_from_slice(&(nodes.len() as u32).to_le_bytes());
    for n in nodes {
        b.extend_from_slice(&n.to_le_bytes());
    }
    b
}

/// Reads a mapinfo blob; None when it is not one of ours.
///
/// # Safety
/// `p` points to a mapinfo made by [`jtofu_create_mapinfo_by_envvars`] (its header is
/// checked before the body is read).
unsafe fn decode(p: *const c_void) -> Option<Vec<u32>> {
    let b = p as *const u8;
    let word = |i: usize| {
        let mut w = [0u8; 4];
        // SAFETY: inside the blob (header first, then the checked count).
        unsafe { std::ptr::copy_nonoverlapping(b.add(4 * i), w.as_mut_ptr(), 4) };
        u32::from_le_bytes(w)
    };
    if word(0) != MAP_MAGIC {
        return None;
    }
    let n = word(1) as usize;
    if n == 0 || n > 1 << 24 {
        return None;
    }
    Some((0..n).map(|i| word(2 + i)).collect())
}

struct Jobs {
    inits: u32,
    default: Option<u32>,
    jobs: HashMap<u32, Vec<u32>>,
}

static JOBS: OnceLock<Mutex<Jobs>> = OnceLock::new();

fn jobs() -> std::sync::MutexGuard<'static, Jobs> {
    JOBS.get_or_init(|| Mutex::new(Jobs { inits: 0, default: None, jobs: HashMap::new() })).lock().unwrap_or_else(|e| e.into_inner())
}

fn put<T>(p: *mut T, v: T) -> Result<(), i32> {
    if p.is_null() {
        return Err(JTOFU_ERR_INVALID_POINTER);
    }
    // SAFETY: non-NULL; the caller's object.
    unsafe { p.write_unaligned(v) };
    Ok(())
}

fn rc(r: Result<(), i32>) -> i32 {
    match r {
        Ok(()) => JTOFU_SUCCESS,
        Err(e) => e,
    }
}

/// The nodes of `job` (after initialize).
fn job_nodes(j: &Jobs, job: u32) -> Result<&Vec<u32>, i32> {
    if j.inits == 0 {
        return Err(JTOFU_ERR_NOT_INITIALIZED);
    }
    j.jobs.get(&job).ok_or(JTOFU_ERR_INVALID_ARG)
}

fn default_nodes(j: &Jobs) -> Result<&Vec<u32>, i32> {
    let id = j.default.ok_or(JTOFU_ERR_NOT_INITIALIZED)?;
    job_nodes(j, id)
}

fn distinct(nodes: &[u32]) -> Vec<u32> {
    let mut v: Vec<u32> = nodes.to_vec();
    v.sort_unstable();
    v.dedup();
    v
}

fn bbox(nodes: &[u32]) -> ([u8; 6], [u8; 6]) {
    let mut lo = [u8::MAX; 6];
    let mut hi = [0u8; 6];
    for &n in nodes {
        let c = coords_of(n);
        for i in 0..6 {
            lo[i] = lo[i].min(c[i]);
            hi[i] = hi[i].max(c[i]);
        }
    }
    (lo, hi)
}

#[no_mangle]
pub unsafe extern "C" fn jtofu_create_mapinfo_by_envvars(mapinfo: *mut *mut c_void, size: *mut usize, num_proc: *mut u32) -> i32 {
    if mapinfo.is_null() || size.is_null() || num_proc.is_null() {
        return JTOFU_ERR_INVALID_POINTER;
    }
    let nodes = nodes_from_env();
    let b = encode(&nodes);
    // libc malloc: the caller releases it with free().
    // SAFETY: plain allocation of b.len() bytes, then a copy into it.
    let p = unsafe { malloc(b.len()) } as *mut u8;
    if p.is_null() {
        return JTOFU_ERR_OUT_OF_MEMORY;
    }
    // SAFETY: fresh allocation of b.len() bytes.
    unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), p, b.len()) };
    let _ = put(mapinfo, p as *mut c_void);
    let _ = put(size, b.len());
    let _ = put(num_proc, nodes.len() as u32);
    JTOFU_SUCCESS
}

fn add(j: &mut Jobs, job: u32, mapinfo: *const c_void) -> Result<(), i32> {
    let nodes = if mapinfo.is_null() {
        nodes_from_env()
    } else {
        // SAFETY: the caller's mapinfo (header validated first).
        unsafe { decode(mapinfo) }.ok_or(JTOFU_ERR_INVALID_ARG)?
    };
    j.jobs.insert(job, nodes);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn jtofu_initialize(job_id: u32, rank: u32, mapinfo: *const c_void) -> i32 {
    let mut j = jobs();
    if j.inits > 0 {
        // Nested initialisation: counted; the job stays the first one's.
        j.inits += 1;
        return JTOFU_SUCCESS;
    }
    let r = add(&mut j, job_id, mapinfo).and_then(|_| {
        if rank as usize >= j.jobs[&job_id].len() {
            j.jobs.remove(&job_id);
            return Err(JTOFU_ERR_INVALID_ARG);
        }
        Ok(())
    });
    if r.is_ok() {
        j.inits = 1;
        j.default = Some(job_id);
    }
    rc(r)
}

#[no_mangle]
pub extern "C" fn jtofu_finalize() -> i32 {
    let mut j = jobs();
    if j.inits == 0 {
        return JTOFU_ERR_EXCESS_FINALIZE;
    }
    j.inits -= 1;
    if j.inits == 0 {
        j.jobs.clear();
        j.default = None;
    }
    JTOFU_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn jtofu_add_job(job_id: u32, mapinfo: *const c_void) -> i32 {
    let mut j = jobs();
    if j.inits == 0 {
        return JTOFU_ERR_NOT_INITIALIZED;
    }
    if mapinfo.is_null() {
        return JTOFU_ERR_INVALID_POINTER;
    }
    if j.jobs.contains_key(&job_id) {
        return JTOFU_ERR_INVALID_ARG;
    }
    rc(add(&mut j, job_id, mapinfo))
}

#[no_mangle]
pub extern "C" fn jtofu_delete_job(job_id: u32) -> i32 {
    let mut j = jobs();
    if j.inits == 0 {
        return JTOFU_ERR_NOT_INITIALIZED;
    }
    if j.default == Some(job_id) || j.jobs.remove(&job_id).is_none() {
        return JTOFU_ERR_INVALID_ARG; // the job of jtofu_initialize stays
    }
    JTOFU_SUCCESS
}

fn with_default(out: *mut [u8; 6], f: impl FnOnce(&[u32]) -> [u8; 6]) -> i32 {
    let j = jobs();
    rc(default_nodes(&j).and_then(|n| put(out, f(n))))
}

#[no_mangle]
pub unsafe extern "C" fn jtofu_query_sys_size(out: *mut [u8; 6]) -> i32 {
    with_default(out, |n| {
        let (_, hi) = bbox(n);
        [hi[0] + 1, hi[1] + 1, hi[2] + 1, ABC[0], ABC[1], ABC[2]]
    })
}

#[no_mangle]
pub unsafe extern "C" fn jtofu_query_sys_torus(out: *mut [u8; 6]) -> i32 {
    with_default(out, |_| [0, 0, 0, 0, 1, 0])
}

#[no_mangle]
pub unsafe extern "C" fn jtofu_query_ref_coords(out: *mut [u8; 6]) -> i32 {
    with_default(out, |n| bbox(n).0)
}

#[no_mangle]
pub unsafe extern "C" fn jtofu_query_phys_size(out: *mut [u8; 6]) -> i32 {
    with_default(out, |n| {
        let (lo, hi) = bbox(n);
        let mut s = [0u8; 6];
        for i in 0..6 {
            s[i] = hi[i] - lo[i] + 1;
        }
        s
    })
}

#[no_mangle]
pub unsafe extern "C" fn jtofu_query_log_size(out: *mut [u32; 3]) -> i32 {
    let j = jobs();
    rc(default_nodes(&j).and_then(|n| put(out, [distinct(n).len() as u32, 1, 1])))
}

#[no_mangle]
pub unsafe extern "C" fn jtofu_query_phys_coords(job: u32, rank: u32, out: *mut [u8; 6]) -> i32 {
    let j = jobs();
    rc(job_nodes(&j, job).and_then(|n| n.get(rank as usize).copied().ok_or(JTOFU_ERR_INVALID_ARG)).and_then(|node| put(out, coords_of(node))))
}

#[no_mangle]
pub unsafe extern "C" fn jtofu_query_log_coords(job: u32, rank: u32, out: *mut [u32; 3]) -> i32 {
    let j = jobs();
    rc(job_nodes(&j, job).and_then(|n| {
        let node = *n.get(rank as usize).ok_or(JTOFU_ERR_INVALID_ARG)?;
        let x = distinct(n).iter().position(|&d| d == node).expect("the rank's node is a job node") as u32;
        put(out, [x, 0, 0])
    }))
}

#[no_mangle]
pub extern "C" fn jtofu_query_max_proc_per_node() -> i32 {
    let j = jobs();
    match default_nodes(&j) {
        Ok(n) => {
            let mut count: HashMap<u32, i32> = HashMap::new();
            for &x in n {
                *count.entry(x).or_insert(0) += 1;
            }
            count.values().copied().max().unwrap_or(0)
        }
        Err(e) => e,
    }
}

fn ranks_where(job: u32, max: usize, ranks: *mut u32, num: *mut usize, want: impl Fn(&[u32], u32) -> bool) -> i32 {
    let j = jobs();
    rc(job_nodes(&j, job).and_then(|n| {
        if num.is_null() || (max > 0 && ranks.is_null()) {
            return Err(JTOFU_ERR_INVALID_POINTER);
        }
        let found: Vec<u32> = (0..n.len() as u32).filter(|&r| want(n, n[r as usize])).collect();
        for (i, r) in found.iter().take(max).enumerate() {
            // SAFETY: the caller's array of max_ranks entries.
            unsafe { ranks.add(i).write_unaligned(*r) };
        }
        put(num, found.len().min(max))
    }))
}

#[no_mangle]
pub unsafe extern "C" fn jtofu_query_ranks_from_phys_coords(job: u32, c: *const [u8; 6], max: usize, ranks: *mut u32, num: *mut usize) -> i32 {
    if c.is_null() {
        return JTOFU_ERR_INVALID_POINTER;
    }
    // SAFETY: non-NULL, 6 bytes.
    let Some(node) = node_at(&unsafe { c.read_unaligned() }) else { return JTOFU_ERR_INVALID_ARG };
    ranks_where(job, max, ranks, num, |_, n| n == node)
}

#[no_mangle]
pub unsafe extern "C" fn jtofu_query_ranks_from_log_coords(job: u32, c: *const [u32; 3], max: usize, ranks: *mut u32, num: *mut usize) -> i32 {
    if c.is_null() {
        return JTOFU_ERR_INVALID_POINTER;
    }
    // SAFETY: non-NULL, 12 bytes.
    let l = unsafe { c.read_unaligned() };
    if l[1] != 0 || l[2] != 0 {
        return ranks_where(job, max, ranks, num, |_, _| false);
    }
    ranks_where(job, max, ranks, num, |all, n| distinct(all).get(l[0] as usize) == Some(&n))
}

fn paths(c: *const [u8; 6], max: usize, out: *mut [u8; 3], num: *mut usize, all: bool) -> i32 {
    if c.is_null() || num.is_null() || (max > 0 && out.is_null()) {
        return JTOFU_ERR_INVALID_POINTER;
    }
    // SAFETY: non-NULL, 6 bytes.
    let c = unsafe { c.read_unaligned() };
    if node_at(&c).is_none() {
        return JTOFU_ERR_INVALID_ARG;
    }
    let own = [c[3], c[4], c[5]];
    let mut v = vec![own];
    if all {
        for a in 0..ABC[0] {
            for b in 0..ABC[1] {
                for cc in 0..ABC[2] {
                    if [a, b, cc] != own {
                        v.push([a, b, cc]);
                    }
                }
            }
        }
    }
    for (i, p) in v.iter().take(max).enumerate() {
        // SAFETY: the caller's array of max_paths entries.
        unsafe { out.add(i).write_unaligned(*p) };
    }
    rc(put(num, v.len().min(max)))
}

#[no_mangle]
pub unsafe extern "C" fn jtofu_query_onesided_paths(c: *const [u8; 6], max: usize, out: *mut [u8; 3], num: *mut usize) -> i32 {
    paths(c, max, out, num, true)
}

#[no_mangle]
pub unsafe extern "C" fn jtofu_query_barrier_paths(c: *const [u8; 6], max: usize, out: *mut [u8; 3], num: *mut usize) -> i32 {
    paths(c, max, out, num, false)
}

fn hops(c: *const [u8; 6], num: *mut usize) -> i32 {
    if c.is_null() {
        return JTOFU_ERR_INVALID_POINTER;
    }
    // SAFETY: non-NULL, 6 bytes.
    let c = unsafe { c.read_unaligned() };
    if node_at(&c).is_none() {
        return JTOFU_ERR_INVALID_ARG;
    }
    let me = coords_of(node_index());
    let mut h = 0usize;
    for i in 0..6 {
        let d = (me[i] as i32 - c[i] as i32).unsigned_abs() as usize;
        h += if i == 4 { d.min(3 - d) } else { d };
    }
    rc(put(num, h))
}

#[no_mangle]
pub unsafe extern "C" fn jtofu_query_onesided_hops(c: *const [u8; 6], num: *mut usize) -> i32 {
    hops(c, num)
}

#[no_mangle]
pub unsafe extern "C" fn jtofu_query_barrier_hops(c: *const [u8; 6], num: *mut usize) -> i32 {
    hops(c, num)
}

#[no_mangle]
pub unsafe extern "C" fn jtofu_query_jtofu_version(major: *mut i32, minor: *mut i32) {
    let _ = put(major, 0);
    let _ = put(minor, 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinates_invert() {
        for n in [0u32, 1, 7, 11, 12, 13, 1000, 70000] {
            assert_eq!(node_at(&coords_of(n)), Some(n));
        }
        assert_eq!(node_at(&[0, 0, 0, 2, 0, 0]), None);
    }

    #[test]
    fn mapinfo_round_trip() {
        let b = encode(&[0, 0, 1, 1, 2]);
        // SAFETY: a blob from encode.
        assert_eq!(unsafe { decode(b.as_ptr() as *const c_void) }, Some(vec![0, 0, 1, 1, 2]));
        let junk = [0u8; 16];
        // SAFETY: 16 readable bytes; the magic check fails first.
        assert_eq!(unsafe { decode(junk.as_ptr() as *const c_void) }, None);
    }
}
