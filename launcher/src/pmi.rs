//! The PMI-1 server state machine, independent of sockets and processes so it
//! can be unit-tested: feed it one line from a connection, get back effects.
//!
//! Choices where PMI-1 is silent:
//! - `put` of an existing key overwrites it (from any rank); the key keeps its
//!   position for `getbyidx`.  Last writer wins.
//! - Limits are the ones `get_maxes` reports, counted as C buffer sizes (they
//!   include the NUL): keys up to 63 bytes, values up to 1023, kvs names up to 255.
//! - The job's own kvs cannot be destroyed.
//! - Over a `PMI_PORT` connection, a rank is known only after an `initack` that
//!   proves it (`nonce=` and `proof=`, see `softnic_fabric::pmi::initack_proof`:
//!   a MAC under the job secret only the job's ranks were given).  Until then the
//!   connection may send `init` and `initack` only: anything else (queries, `put`,
//!   `barrier_in`, `abort`, garbage) and an initack without a valid, unused proof
//!   get an error reply and the connection is closed.  A process outside the job
//!   that finds the port can thus neither read the kvs name or keys, nor put, nor
//!   abort the job.  Stock PMI clients (MPICH's) cannot prove anything: port mode
//!   serves softnic's libpmi only; fd mode (the default) serves any client.

use crate::wire::{self, Mapping};
use std::collections::HashMap;

pub const KVSNAME_MAX: usize = 256;
pub const KEYLEN_MAX: usize = 64;
pub const VALLEN_MAX: usize = 1024;
/// Maximum number of kvs spaces `create_kvs` may make (abuse guard).
const MAX_KVS: usize = 1024;
/// Maximum number of entries per kvs (abuse guard: 64 Ki * ~1 KiB).
const MAX_KEYS: usize = 65536;
/// Maximum lines of one `mcmd=spawn ... endcmd` block before the client is dropped.
const MAX_MCMD_LINES: usize = 4096;

#[derive(Debug, PartialEq, Eq)]
pub enum Effect {
    /// Send this (newline-terminated) text to the connection that spoke.
    Reply(String),
    /// Send `cmd=barrier_out` to these ranks.
    BarrierOut(Vec<usize>),
    /// Kill the job and exit with `code`.
    Abort { code: i32, message: String },
    /// The connection broke the protocol beyond repair: close it.
    Drop(String),
    /// Something worth logging at warn level (not fatal).
    Warn(String),
}

/// Per-connection protocol state owned by the caller.
#[derive(Debug, Default)]
pub struct ConnState {
    pub rank: Option<usize>,
    pub finalized: bool,
    /// Inside `mcmd=...` until `endcmd`: number of lines seen.
    mcmd: Option<usize>,
}

impl ConnState {
    pub fn for_rank(rank: usize) -> ConnState {
        ConnState { rank: Some(rank), ..Default::default() }
    }
}

#[derive(Default)]
struct Kvs {
    entries: Vec<(String, String)>,
    index: HashMap<String, usize>,
}

impl Kvs {
    fn put(&mut self, k: &str, v: &str) -> bool {
        if let Some(&i) = self.index.get(k) {
            self.entries[i].1 = v.to_string();
            return true;
        }
        if self.entries.len() >= MAX_KEYS {
            return false;
        }
        self.index.insert(k.to_string(), self.entries.len());
        self.entries.push((k.to_string(), v.to_string()));
        true
    }
    fn get(&self, k: &str) -> Option<&str> {
        self.index.get(k).map(|&i| self.entries[i].1.as_str())
    }
}

pub struct Server {
    pub size: usize,
    pub kvsname: String,
    /// The job secret port-mode ranks prove they know.
    secret: [u8; 16],
    /// Nonces of accepted proofs: a proof is good once.
    used_nonces: std::collections::HashSet<String>,
    kvs: HashMap<String, Kvs>,
    published: HashMap<String, String>,
    /// Ranks currently bound to a live connection (one connection per rank).
    bound: Vec<bool>,
    in_barrier: Vec<bool>,
    barrier_count: usize,
    next_kvs: u64,
}

fn reply(s: String) -> Vec<Effect> {
    vec![Effect::Reply(s + "\n")]
}

impl Server {
    pub fn new(kvsname: &str, map: Mapping, secret: [u8; 16]) -> Server {
        let mut kvs = HashMap::new();
        let mut job = Kvs::default();
        job.put("PMI_process_mapping", &map.process_mapping());
        kvs.insert(kvsname.to_string(), job);
        Server {
            size: map.size,
            kvsname: kvsname.to_string(),
            secret,
            used_nonces: Default::default(),
            kvs,
            published: HashMap::new(),
            bound: vec![false; map.size],
            in_barrier: vec![false; map.size],
            barrier_count: 0,
            next_kvs: 0,
        }
    }

    /// Marks `rank` as owned by a connection (fd mode binds all up front).
    pub fn bind(&mut self, rank: usize) {
        if rank < self.size {
            self.bound[rank] = true;
        }
    }

    /// The connection of `st` went away.
    pub fn closed(&mut self, st: &ConnState) {
        if let Some(r) = st.rank {
            if r < self.size {
                self.bound[r] = false;
            }
        }
    }

    /// Ranks waiting in the barrier right now.
    pub fn barrier_waiters(&self) -> Vec<usize> {
        (0..self.size).filter(|&r| self.in_barrier[r]).collect()
    }

    /// Handles one line (without newline) from a connection.
    pub fn handle(&mut self, st: &mut ConnState, line: &str) -> Vec<Effect> {
        if st.rank.is_none() {
            return self.unidentified(st, line);
        }
        if let Some(n) = st.mcmd {
            if line.trim() == "endcmd" {
                st.mcmd = None;
                // Spawning needs a resource manager we do not have.
                return reply("cmd=spawn_result rc=-1 errmsg=spawn_not_supported".into());
            }
            if n >= MAX_MCMD_LINES {
                return vec![Effect::Drop("mcmd block without endcmd".into())];
            }
            st.mcmd = Some(n + 1);
            return vec![];
        }
        let words = wire::parse(line);
        if words.is_empty() {
            return vec![]; // blank lines are harmless
        }
        if let Some(m) = wire::get(&words, "mcmd") {
            if m == "spawn" {
                st.mcmd = Some(1);
                return vec![];
            }
            return reply(format!("cmd={}_result rc=-1 msg=unknown_command", m));
        }
        let Some(cmd) = wire::get(&words, "cmd") else {
            return vec![
                Effect::Warn(format!("PMI line without cmd: {:?}", trunc(line))),
                Effect::Reply("cmd=error rc=-1 msg=missing_cmd\n".into()),
            ];
        };
        let arg = |k: &str| wire::get(&words, k);
        match cmd {
            "init" => response_to_init(&words),
            "initack" => self.initack(st, &words),
            "get_maxes" => reply(format!(
                "cmd=maxes kvsname_max={} keylen_max={} vallen_max={} rc=0",
                KVSNAME_MAX, KEYLEN_MAX, VALLEN_MAX
            )),
            "get_appnum" => reply("cmd=appnum appnum=0 rc=0".into()),
            "get_my_kvsname" => reply(format!("cmd=my_kvsname kvsname={} rc=0", self.kvsname)),
            "get_universe_size" => reply(format!("cmd=universe_size size={} rc=0", self.size)),
            "put" => self.put(arg("kvsname"), arg("key"), arg("value")),
            "get" => self.get(arg("kvsname"), arg("key")),
            "getbyidx" => self.getbyidx(arg("kvsname"), arg("idx")),
            "barrier_in" => self.barrier_in(st),
            "finalize" => {
                st.finalized = true;
                reply("cmd=finalize_ack rc=0".into())
            }
            "abort" => {
                let code = arg("exitcode").and_then(|v| v.trim().parse::<i64>().ok()).unwrap_or(1);
                vec![Effect::Abort { code: (code & 0xff) as i32, message: abort_message(line) }]
            }
            "publish_name" => match (arg("service"), arg("port")) {
                (Some(s), Some(p)) if !s.is_empty() => {
                    if self.published.contains_key(s) {
                        reply("cmd=publish_result rc=-1 info=service_already_published".into())
                    } else if self.published.len() >= MAX_KEYS {
                        reply("cmd=publish_result rc=-1 info=too_many_services".into())
                    } else {
                        self.published.insert(s.to_string(), p.to_string());
                        reply("cmd=publish_result rc=0 info=ok".into())
                    }
                }
                _ => reply("cmd=publish_result rc=-1 info=missing_service_or_port".into()),
            },
            "unpublish_name" => match arg("service") {
                Some(s) if self.published.remove(s).is_some() => {
                    reply("cmd=unpublish_result rc=0 info=ok".into())
                }
                Some(_) => reply("cmd=unpublish_result rc=-1 info=service_not_found".into()),
                None => reply("cmd=unpublish_result rc=-1 info=missing_service".into()),
            },
            "lookup_name" => match arg("service").and_then(|s| self.published.get(s)) {
                Some(p) => reply(format!("cmd=lookup_result rc=0 info=ok port={}", p)),
                None => reply("cmd=lookup_result rc=-1 info=notfound".into()),
            },
            "create_kvs" => {
                if self.kvs.len() >= MAX_KVS {
                    return reply("cmd=newkvs rc=-1 msg=too_many_kvs".into());
                }
                self.next_kvs += 1;
                let name = format!("{}-{}", self.kvsname, self.next_kvs);
                self.kvs.insert(name.clone(), Kvs::default());
                reply(format!("cmd=newkvs kvsname={} rc=0", name))
            }
            "destroy_kvs" => match arg("kvsname") {
                Some(k) if k == self.kvsname => {
                    reply("cmd=kvs_destroyed rc=-1 msg=cannot_destroy_job_kvs".into())
                }
                Some(k) if self.kvs.remove(k).is_some() => reply("cmd=kvs_destroyed rc=0".into()),
                _ => reply("cmd=kvs_destroyed rc=-1 msg=kvs_not_found".into()),
            },
            other => {
                let name: String = other.chars().take(64).collect();
                vec![
                    Effect::Warn(format!("unknown PMI command {:?}", trunc(line))),
                    Effect::Reply(format!("cmd={}_result rc=-1 msg=unknown_command\n", name)),
                ]
            }
        }
    }

    /// A line from a connection that has not proven it is a rank: `init` is answered,
    /// an `initack` is checked, anything else closes the connection.
    fn unidentified(&mut self, st: &mut ConnState, line: &str) -> Vec<Effect> {
        let words = wire::parse(line);
        match wire::get(&words, "cmd") {
            _ if words.is_empty() => vec![],
            // `init` reveals nothing about the job.
            Some("init") => response_to_init(&words),
            Some("initack") => {
                let r = self.initack(st, &words);
                if st.rank.is_none() {
                    let why = r.iter().find_map(|e| match e {
                        Effect::Reply(m) => Some(m.trim().to_string()),
                        _ => None,
                    });
                    let mut r = r;
                    r.push(Effect::Drop(format!(
                        "initack refused ({}); port mode serves only softnic's libpmi, whose initack proves the rank (other PMI clients: use the default fd mode)",
                        why.unwrap_or_default()
                    )));
                    return r;
                }
                r
            }
            _ => vec![
                Effect::Reply("cmd=error rc=-1 msg=unidentified_connection_send_initack_with_proof_first\n".into()),
                Effect::Drop(format!("sent {:?} before proving it is a rank", trunc(line))),
            ],
        }
    }

    fn initack(&mut self, st: &mut ConnState, words: &[(&str, &str)]) -> Vec<Effect> {
        let Some(r) = wire::get(words, "pmiid").and_then(|v| v.parse::<usize>().ok()).filter(|&r| r < self.size) else {
            return reply("cmd=initack rc=-1 msg=bad_pmiid".into());
        };
        let (Some(nonce), Some(proof)) = (wire::get(words, "nonce"), wire::get(words, "proof")) else {
            return reply("cmd=initack rc=-1 msg=proof_required".into());
        };
        // Nonces are what our client sends (32 hex digits); bound what we keep.
        if !(16..=64).contains(&nonce.len()) || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
            return reply("cmd=initack rc=-1 msg=bad_nonce".into());
        }
        let want = softnic_fabric::pmi::initack_proof(&self.secret, r as u64, nonce);
        if !constant_time_eq(want.as_bytes(), proof.as_bytes()) {
            return reply("cmd=initack rc=-1 msg=bad_proof".into());
        }
        if self.used_nonces.contains(nonce) {
            return reply("cmd=initack rc=-1 msg=proof_already_used".into());
        }
        if st.rank != Some(r) {
            if self.bound[r] {
                return reply("cmd=initack rc=-1 msg=pmiid_in_use".into());
            }
            self.closed(st); // rebinding releases any earlier rank
            self.bound[r] = true;
            st.rank = Some(r);
        }
        self.used_nonces.insert(nonce.to_string());
        vec![Effect::Reply(format!(
            "cmd=initack rc=0\ncmd=set size={}\ncmd=set rank={}\ncmd=set debug=0\n",
            self.size, r
        ))]
    }

    fn put(&mut self, kvs: Option<&str>, key: Option<&str>, val: Option<&str>) -> Vec<Effect> {
        let (Some(kn), Some(k), Some(v)) = (kvs, key, val) else {
            return reply("cmd=put_result rc=-1 msg=missing_kvsname_key_or_value".into());
        };
        if k.is_empty() || k.len() >= KEYLEN_MAX {
            return reply("cmd=put_result rc=-1 msg=bad_key_length".into());
        }
        if v.len() >= VALLEN_MAX {
            return reply("cmd=put_result rc=-1 msg=value_too_long".into());
        }
        match self.kvs.get_mut(kn).map(|s| s.put(k, v)) {
            None => reply(format!("cmd=put_result rc=-1 msg=kvs_{}_not_found", trunc(kn))),
            Some(true) => reply("cmd=put_result rc=0 msg=success".into()),
            Some(false) => reply("cmd=put_result rc=-1 msg=kvs_full".into()),
        }
    }

    fn get(&self, kvs: Option<&str>, key: Option<&str>) -> Vec<Effect> {
        let (Some(kn), Some(k)) = (kvs, key) else {
            return reply("cmd=get_result rc=-1 msg=missing_kvsname_or_key".into());
        };
        match self.kvs.get(kn) {
            None => reply(format!("cmd=get_result rc=-1 msg=kvs_{}_not_found", trunc(kn))),
            Some(s) => match s.get(k) {
                Some(v) => reply(format!("cmd=get_result rc=0 msg=success value={}", v)),
                None => reply(format!("cmd=get_result rc=-1 msg=key_{}_not_found", trunc(k))),
            },
        }
    }

    fn getbyidx(&self, kvs: Option<&str>, idx: Option<&str>) -> Vec<Effect> {
        let Some(s) = kvs.and_then(|k| self.kvs.get(k)) else {
            return reply("cmd=getbyidx_results rc=-1 reason=kvs_not_found".into());
        };
        let Some(i) = idx.and_then(|v| v.parse::<usize>().ok()) else {
            return reply("cmd=getbyidx_results rc=-1 reason=bad_idx".into());
        };
        match s.entries.get(i) {
            Some((k, v)) => reply(format!(
                "cmd=getbyidx_results rc=0 nextidx={} key={} val={}",
                i + 1,
                k,
                v
            )),
            None => reply("cmd=getbyidx_results rc=-1 reason=no_more_keyvals".into()),
        }
    }

    fn barrier_in(&mut self, st: &ConnState) -> Vec<Effect> {
        let Some(r) = st.rank.filter(|&r| r < self.size) else {
            return reply("cmd=barrier_out rc=-1 msg=rank_unknown_send_initack_first".into());
        };
        if !self.in_barrier[r] {
            self.in_barrier[r] = true;
            self.barrier_count += 1;
        }
        if self.barrier_count == self.size {
            let all: Vec<usize> = (0..self.size).collect();
            self.in_barrier.iter_mut().for_each(|b| *b = false);
            self.barrier_count = 0;
            return vec![Effect::BarrierOut(all)];
        }
        vec![]
    }
}

/// The reply to `cmd=init`: we speak PMI 1.1 only.
fn response_to_init(words: &[(&str, &str)]) -> Vec<Effect> {
    let num = |k: &str| wire::get(words, k).and_then(|v| v.parse::<i32>().ok());
    let (v, sv) = (num("pmi_version"), num("pmi_subversion"));
    if v == Some(1) {
        reply("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0".into())
    } else {
        reply(format!(
            "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1 msg=unsupported_version_{}.{}",
            v.unwrap_or(-1),
            sv.unwrap_or(-1)
        ))
    }
}

/// Compares without stopping at the first difference: how long a wrong proof takes to
/// refuse says nothing about how much of it was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The human message of an abort line: `message=...` to the end of the line
/// (MPICH's form), otherwise any words besides `cmd` and `exitcode`.
fn abort_message(line: &str) -> String {
    if let Some(i) = line.find("message=") {
        return line[i + "message=".len()..].trim().to_string();
    }
    line.split_ascii_whitespace()
        .filter(|w| !w.starts_with("cmd=") && !w.starts_with("exitcode="))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Bounds what we echo back or log from untrusted input.
pub fn trunc(s: &str) -> String {
    if s.len() <= 200 {
        return s.to_string();
    }
    let mut end = 200;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: [u8; 16] = *b"0123456789abcdef";

    fn srv(n: usize) -> Server {
        let mut s = Server::new("kvs0", Mapping::new(n, n), SECRET);
        for r in 0..n {
            s.bind(r);
        }
        s
    }
    fn one(s: &mut Server, st: &mut ConnState, line: &str) -> String {
        match s.handle(st, line).as_slice() {
            [Effect::Reply(r)] => r.clone(),
            other => panic!("{line}: expected one reply, got {other:?}"),
        }
    }

    #[test]
    fn init_and_queries() {
        let mut s = srv(3);
        let mut c = ConnState::for_rank(0);
        assert_eq!(
            one(&mut s, &mut c, "cmd=init pmi_version=1 pmi_subversion=1"),
            "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n"
        );
        assert!(one(&mut s, &mut c, "cmd=init pmi_version=2 pmi_subversion=0").contains("rc=-1"));
        assert_eq!(one(&mut s, &mut c, "cmd=get_universe_size"), "cmd=universe_size size=3 rc=0\n");
        assert_eq!(one(&mut s, &mut c, "cmd=get_my_kvsname"), "cmd=my_kvsname kvsname=kvs0 rc=0\n");
        assert_eq!(
            one(&mut s, &mut c, "cmd=get_maxes"),
            "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024 rc=0\n"
        );
        assert_eq!(
            one(&mut s, &mut c, "cmd=get kvsname=kvs0 key=PMI_process_mapping"),
            "cmd=get_result rc=0 msg=success value=(vector,(0,1,3))\n"
        );
    }

    #[test]
    fn put_get_limits() {
        let mut s = srv(2);
        let mut c = ConnState::for_rank(1);
        assert_eq!(one(&mut s, &mut c, "cmd=put kvsname=kvs0 key=a value=1"), "cmd=put_result rc=0 msg=success\n");
        assert_eq!(one(&mut s, &mut c, "cmd=put kvsname=kvs0 key=a value=2"), "cmd=put_result rc=0 msg=success\n");
        assert_eq!(one(&mut s, &mut c, "cmd=get kvsname=kvs0 key=a"), "cmd=get_result rc=0 msg=success value=2\n");
        assert_eq!(one(&mut s, &mut c, "cmd=get kvsname=kvs0 key=zz"), "cmd=get_result rc=-1 msg=key_zz_not_found\n");
        assert!(one(&mut s, &mut c, "cmd=put kvsname=nokvs key=a value=1").contains("rc=-1"));
        assert!(one(&mut s, &mut c, "cmd=get kvsname=nokvs key=a").contains("rc=-1"));
        assert!(one(&mut s, &mut c, "cmd=put kvsname=kvs0 key=a").contains("rc=-1"));
        let k63 = "k".repeat(63);
        let k64 = "k".repeat(64);
        assert!(one(&mut s, &mut c, &format!("cmd=put kvsname=kvs0 key={k63} value=x")).contains("rc=0"));
        assert!(one(&mut s, &mut c, &format!("cmd=put kvsname=kvs0 key={k64} value=x")).contains("rc=-1"));
        let v1023 = "v".repeat(1023);
        let v1024 = "v".repeat(1024);
        assert!(one(&mut s, &mut c, &format!("cmd=put kvsname=kvs0 key=b value={v1023}")).contains("rc=0"));
        assert!(one(&mut s, &mut c, &format!("cmd=put kvsname=kvs0 key=b value={v1024}")).contains("rc=-1"));
        // empty values are legal
        assert!(one(&mut s, &mut c, "cmd=put kvsname=kvs0 key=e value=").contains("rc=0"));
        assert_eq!(one(&mut s, &mut c, "cmd=get kvsname=kvs0 key=e"), "cmd=get_result rc=0 msg=success value=\n");
    }

    #[test]
    fn getbyidx_walks_in_order() {
        let mut s = srv(1);
        let mut c = ConnState::for_rank(0);
        one(&mut s, &mut c, "cmd=put kvsname=kvs0 key=x value=1");
        one(&mut s, &mut c, "cmd=put kvsname=kvs0 key=y value=2");
        assert_eq!(
            one(&mut s, &mut c, "cmd=getbyidx kvsname=kvs0 idx=0"),
            "cmd=getbyidx_results rc=0 nextidx=1 key=PMI_process_mapping val=(vector,(0,1,1))\n"
        );
        assert_eq!(one(&mut s, &mut c, "cmd=getbyidx kvsname=kvs0 idx=2"), "cmd=getbyidx_results rc=0 nextidx=3 key=y val=2\n");
        assert_eq!(
            one(&mut s, &mut c, "cmd=getbyidx kvsname=kvs0 idx=3"),
            "cmd=getbyidx_results rc=-1 reason=no_more_keyvals\n"
        );
        assert!(one(&mut s, &mut c, "cmd=getbyidx kvsname=kvs0 idx=-1").contains("rc=-1"));
        assert!(one(&mut s, &mut c, "cmd=getbyidx kvsname=kvs0").contains("rc=-1"));
    }

    #[test]
    fn barrier_releases_all_once() {
        let mut s = srv(3);
        let mut c: Vec<ConnState> = (0..3).map(ConnState::for_rank).collect();
        assert!(s.handle(&mut c[0], "cmd=barrier_in").is_empty());
        assert!(s.handle(&mut c[0], "cmd=barrier_in").is_empty()); // duplicate does not count twice
        assert!(s.handle(&mut c[2], "cmd=barrier_in").is_empty());
        assert_eq!(s.barrier_waiters(), vec![0, 2]);
        assert_eq!(s.handle(&mut c[1], "cmd=barrier_in"), vec![Effect::BarrierOut(vec![0, 1, 2])]);
        assert!(s.barrier_waiters().is_empty());
        // a second barrier starts from scratch
        assert!(s.handle(&mut c[1], "cmd=barrier_in").is_empty());
    }

    #[test]
    fn abort_and_unknown() {
        let mut s = srv(2);
        let mut c = ConnState::for_rank(1);
        assert_eq!(
            s.handle(&mut c, "cmd=abort exitcode=7 message=it broke badly"),
            vec![Effect::Abort { code: 7, message: "it broke badly".into() }]
        );
        assert_eq!(
            s.handle(&mut c, "cmd=abort exitcode=300 oops"),
            vec![Effect::Abort { code: 300 & 0xff, message: "oops".into() }]
        );
        assert_eq!(s.handle(&mut c, "cmd=abort"), vec![Effect::Abort { code: 1, message: String::new() }]);
        let r = s.handle(&mut c, "cmd=frobnicate x=1");
        assert!(r.contains(&Effect::Reply("cmd=frobnicate_result rc=-1 msg=unknown_command\n".into())));
        let r = s.handle(&mut c, "garbage without equals");
        assert!(r.iter().any(|e| matches!(e, Effect::Reply(x) if x.contains("rc=-1"))));
        assert!(s.handle(&mut c, "").is_empty());
    }

    #[test]
    fn spawn_multiline_refused() {
        let mut s = srv(1);
        let mut c = ConnState::for_rank(0);
        assert!(s.handle(&mut c, "mcmd=spawn").is_empty());
        assert!(s.handle(&mut c, "nprocs=2").is_empty());
        assert!(s.handle(&mut c, "execname=/bin/true").is_empty());
        assert!(one(&mut s, &mut c, "endcmd").starts_with("cmd=spawn_result rc=-1"));
        // back to normal commands
        assert!(one(&mut s, &mut c, "cmd=get_appnum").contains("appnum=0 rc=0"));
    }

    fn initack(id: usize, nonce: &str) -> String {
        format!("cmd=initack pmiid={id} nonce={nonce} proof={}", softnic_fabric::pmi::initack_proof(&SECRET, id as u64, nonce))
    }

    #[test]
    fn initack_binds_once() {
        let mut s = Server::new("kvs0", Mapping::new(2, 2), SECRET);
        let mut a = ConnState::default();
        let mut b = ConnState::default();
        assert_eq!(
            one(&mut s, &mut a, &initack(1, "00000000000000000000000000000001")),
            "cmd=initack rc=0\ncmd=set size=2\ncmd=set rank=1\ncmd=set debug=0\n"
        );
        assert!(s.handle(&mut b, &initack(1, "00000000000000000000000000000002"))[0] == Effect::Reply("cmd=initack rc=-1 msg=pmiid_in_use\n".into()));
        s.closed(&a);
        let mut c = ConnState::default();
        assert!(one(&mut s, &mut c, &initack(1, "00000000000000000000000000000003")).contains("rc=0"));
        assert_eq!(c.rank, Some(1));
    }

    /// Every effect of a line from an unidentified connection: an error reply, then Drop.
    fn refused(s: &mut Server, line: &str) -> String {
        let mut st = ConnState::default();
        let e = s.handle(&mut st, line);
        assert_eq!(st.rank, None, "{line}");
        match e.as_slice() {
            [Effect::Reply(r), Effect::Drop(_)] if r.contains("rc=-1") => r.clone(),
            other => panic!("{line}: expected an error reply and a drop, got {other:?}"),
        }
    }

    #[test]
    fn unidentified_connections_get_nothing() {
        let mut s = Server::new("kvs0", Mapping::new(2, 2), SECRET);
        for line in [
            "cmd=get_my_kvsname",
            "cmd=abort exitcode=9",
            "cmd=put kvsname=kvs0 key=x value=1",
            "cmd=get kvsname=kvs0 key=PMI_process_mapping",
            "cmd=getbyidx kvsname=kvs0 idx=0",
            "cmd=barrier_in",
            "cmd=get_maxes",
            "cmd=create_kvs",
            "cmd=publish_name service=a port=b",
            "mcmd=spawn",
            "no command here",
            "cmd=\u{fffd}\u{1}",
        ] {
            let r = refused(&mut s, line);
            assert!(!r.contains("kvs0"), "{line}: {r}");
        }
        // A stock client's initack, a wrong proof, a proof for another rank, a proof
        // under another secret, a malformed nonce.
        let n = "0123456789abcdef0123456789abcdef";
        assert!(refused(&mut s, "cmd=initack pmiid=0").contains("proof_required"));
        assert!(refused(&mut s, &format!("cmd=initack pmiid=0 nonce={n} proof=0000000000000000")).contains("bad_proof"));
        let p1 = softnic_fabric::pmi::initack_proof(&SECRET, 1, n);
        assert!(refused(&mut s, &format!("cmd=initack pmiid=0 nonce={n} proof={p1}")).contains("bad_proof"));
        let other = softnic_fabric::pmi::initack_proof(b"0123456789abcdeF", 0, n);
        assert!(refused(&mut s, &format!("cmd=initack pmiid=0 nonce={n} proof={other}")).contains("bad_proof"));
        assert!(refused(&mut s, &format!("cmd=initack pmiid=0 nonce=xyz proof={p1}")).contains("bad_nonce"));
        assert!(refused(&mut s, &format!("cmd=initack pmiid=7 nonce={n} proof={p1}")).contains("bad_pmiid"));
        // `init` and blank lines are harmless and answered.
        let mut st = ConnState::default();
        assert!(one(&mut s, &mut st, "cmd=init pmi_version=1 pmi_subversion=1").contains("rc=0"));
        assert!(s.handle(&mut st, "  ").is_empty());
        // Nothing above bound a rank, put a key or aborted.
        assert_eq!(s.kvs["kvs0"].entries.len(), 1);
        assert!(!s.bound.iter().any(|&b| b));
        // A good proof works once; its replay is refused.
        let good = initack(0, n);
        assert!(one(&mut s, &mut st, &good).contains("rc=0"));
        s.closed(&st);
        assert!(refused(&mut s, &good).contains("proof_already_used"));
    }

    #[test]
    fn names_and_kvs_spaces() {
        let mut s = srv(1);
        let mut c = ConnState::for_rank(0);
        assert_eq!(one(&mut s, &mut c, "cmd=lookup_name service=svc"), "cmd=lookup_result rc=-1 info=notfound\n");
        assert!(one(&mut s, &mut c, "cmd=publish_name service=svc port=p1").contains("info=ok"));
        assert!(one(&mut s, &mut c, "cmd=publish_name service=svc port=p2").contains("rc=-1"));
        assert_eq!(one(&mut s, &mut c, "cmd=lookup_name service=svc"), "cmd=lookup_result rc=0 info=ok port=p1\n");
        assert!(one(&mut s, &mut c, "cmd=unpublish_name service=svc").contains("info=ok"));
        assert!(one(&mut s, &mut c, "cmd=unpublish_name service=svc").contains("rc=-1"));
        let r = one(&mut s, &mut c, "cmd=create_kvs");
        let name = wire::get(&wire::parse(r.trim()), "kvsname").unwrap().to_string();
        assert!(one(&mut s, &mut c, &format!("cmd=put kvsname={name} key=q value=1")).contains("rc=0"));
        assert_eq!(one(&mut s, &mut c, &format!("cmd=destroy_kvs kvsname={name}")), "cmd=kvs_destroyed rc=0\n");
        assert!(one(&mut s, &mut c, &format!("cmd=get kvsname={name} key=q")).contains("rc=-1"));
        assert!(one(&mut s, &mut c, "cmd=destroy_kvs kvsname=kvs0").contains("rc=-1"));
    }
}
