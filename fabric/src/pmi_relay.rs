//! The PMI relay: one launcher connection shared by our libraries and the application's
//! own PMI client (its MPI).
//!
//! A launcher gives each process one PMI connection (`PMI_FD`), meant for one client.
//! An MPI program that uses one of our libraries has two: MPICH's, inside libmpich, and
//! ours.  Two clients interleaving on one socket corrupt each other's replies, and Slurm
//! refuses a second `init` outright.  So, when the fabric is loaded (before `main`, so
//! before `MPI_Init`) into a process that contains MPI, our client takes the launcher
//! connection and the application's client gets `PMI_FD` pointing at one end of a socket
//! pair, whose other end a library thread serves as a PMI-1 server backed by our client:
//! `init` and the job queries are answered from what our client learnt, `put`, `get`,
//! `barrier_in` and the name service are forwarded (translated to PMI-2 under Slurm).
//! Both clients then share the job's KVS and barriers, one request at a time.
//!
//! `PMI_FD` connections are relayed (hydra's default and Slurm's), and snrun's port mode
//! (`PMI_PORT` with `SOFTNIC_JOB_SECRET`), where MPI's own client could not connect at all
//! (snrun serves only clients that prove they are ranks): our client connects, and the
//! application's gets `PMI_FD` (with `PMI_RANK`/`PMI_SIZE`) instead of `PMI_PORT`/`PMI_ID`.
//! A program started with hydra's `-pmi-port` keeps MPI's own connection, and our
//! libraries then must not use PMI after `MPI_Init` (the documented limitation).  `SOFTNIC_PMI_RELAY=0` turns the
//! relay off.  Dynamic process management (`spawn`) is refused through the relay.

use crate::error::Result;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::FromRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};

static RELAYING: AtomicBool = AtomicBool::new(false);

/// Whether the application's PMI client talks to our relay.
pub fn relaying() -> bool {
    RELAYING.load(Ordering::Relaxed)
}

/// Is MPI linked into this process (its `MPI_Init` resolvable)?
fn mpi_present() -> bool {
    ["MPI_Init", "PMPI_Init"].iter().any(|name| {
        let c = std::ffi::CString::new(*name).expect("no NUL");
        // SAFETY: dlsym with the default handle and a valid C string only looks a name up.
        !unsafe { libc::dlsym(libc::RTLD_DEFAULT, c.as_ptr()) }.is_null()
    })
}

/// Sets the relay up when this process has a launcher connection (`PMI_FD`) and MPI;
/// must run before the application's PMI client starts (at library load) and while the
/// process has one thread (it changes `PMI_FD`).  Returns whether the relay runs.
pub fn share_with_application() -> bool {
    if relaying() {
        return true;
    }
    let fd_mode = std::env::var_os("PMI_FD").is_some();
    let snrun_port = !fd_mode
        && std::env::var_os("PMI_PORT").is_some()
        && crate::pmi::parse_secret(crate::env::get_str("SOFTNIC_JOB_SECRET")).is_some();
    if !(fd_mode || snrun_port) || !crate::env::get_bool("SOFTNIC_PMI_RELAY") || !mpi_present() {
        return false;
    }
    // Our client takes the launcher's connection now (init and job queries).
    let job = match crate::pmi::with_client(|c| Ok((c.job.rank, c.job.size))) {
        Ok(j) => j,
        Err(e) => {
            crate::sn_warn!("PMI", "no relay for the application's MPI: cannot reach the launcher ({})", e);
            return false;
        }
    };
    let mut fds = [-1i32; 2];
    // SAFETY: socketpair writes two descriptors into `fds`.
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) } != 0 {
        crate::sn_warn!("PMI", "no relay for the application's MPI: socketpair failed");
        return false;
    }
    // Ours is close-on-exec; the application's end is what PMI_FD names, as the
    // launcher's was.
    // SAFETY: fds[1] is ours, just created.
    unsafe { libc::fcntl(fds[1], libc::F_SETFD, libc::FD_CLOEXEC) };
    let setenv = |name: &str, val: String| {
        let name = std::ffi::CString::new(name).expect("no NUL");
        let val = std::ffi::CString::new(val).expect("digits");
        // SAFETY: single-threaded (library load); the C strings are valid.
        unsafe { libc::setenv(name.as_ptr(), val.as_ptr(), 1) };
    };
    setenv("PMI_FD", fds[0].to_string());
    if snrun_port {
        // A PMI_FD client learns its place from the environment, not from an initack.
        setenv("PMI_RANK", job.0.to_string());
        setenv("PMI_SIZE", job.1.to_string());
        for name in ["PMI_PORT", "PMI_ID"] {
            let name = std::ffi::CString::new(name).expect("no NUL");
            // SAFETY: as above.
            unsafe { libc::unsetenv(name.as_ptr()) };
        }
    }
    // SAFETY: fds[1] is an open socket we own from here on.
    let ours = unsafe { UnixStream::from_raw_fd(fds[1]) };
    let spawned = std::thread::Builder::new().name("softnic-pmi".into()).spawn(move || serve(ours));
    if spawned.is_err() {
        crate::sn_warn!("PMI", "no relay thread: the application's MPI cannot reach the launcher");
        return false;
    }
    RELAYING.store(true, Ordering::Relaxed);
    crate::sn_info!("PMI", "relaying the application's PMI client (PMI_FD={}) through ours", fds[0]);
    true
}

/// Serves the application's client until it closes its end.
fn serve(s: UnixStream) {
    let Ok(w) = s.try_clone() else { return };
    let mut out = std::io::BufWriter::new(w);
    for line in BufReader::new(s).lines() {
        let Ok(line) = line else { break };
        let reply = answer(line.trim_end());
        if reply.is_empty() {
            continue;
        }
        if out.write_all(reply.as_bytes()).and_then(|_| out.flush()).is_err() {
            break;
        }
    }
}

/// The reply (with its newline) to one request line of the application's client.
fn answer(line: &str) -> String {
    let words: Vec<(&str, &str)> = line.split_ascii_whitespace().map(|t| t.split_once('=').unwrap_or((t, ""))).collect();
    let arg = |k: &str| words.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
    if arg("mcmd").is_some() || line.trim() == "endcmd" {
        // A spawn request block: only its end is answered.
        return if line.trim() == "endcmd" { "cmd=spawn_result rc=-1 errmsg=spawn_not_supported_through_the_relay\n".into() } else { String::new() };
    }
    let Some(cmd) = arg("cmd") else { return "cmd=error rc=-1 msg=missing_cmd\n".into() };
    let job = |f: &dyn Fn(&crate::pmi::Job) -> String| crate::pmi::with_client(|c| Ok(f(&c.job))).unwrap_or_default();
    let r: Result<String> = match cmd {
        "init" => Ok("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0".into()),
        "get_maxes" => Ok(job(&|j| format!("cmd=maxes kvsname_max={} keylen_max={} vallen_max={} rc=0", j.maxes.kvsname, j.maxes.key, j.maxes.val))),
        "get_appnum" => Ok(job(&|j| format!("cmd=appnum appnum={} rc=0", j.appnum))),
        "get_my_kvsname" => Ok(job(&|j| format!("cmd=my_kvsname kvsname={} rc=0", j.kvsname))),
        "get_universe_size" => Ok(job(&|j| format!("cmd=universe_size size={} rc=0", j.universe))),
        "put" => {
            let (kvs, key, val) = (arg("kvsname").unwrap_or(""), arg("key").unwrap_or(""), arg("value").unwrap_or(""));
            Ok(match crate::pmi::with_client(|c| c.put(kvs, key, val)) {
                Ok(()) => "cmd=put_result rc=0 msg=success".into(),
                Err(e) => format!("cmd=put_result rc=-1 msg={:?}", e),
            })
        }
        "get" => {
            let (kvs, key) = (arg("kvsname").unwrap_or(""), arg("key").unwrap_or(""));
            Ok(match crate::pmi::with_client(|c| c.job_value(kvs, key)) {
                Ok(Some(v)) => format!("cmd=get_result rc=0 msg=success value={}", v),
                Ok(None) => format!("cmd=get_result rc=-1 msg=key_{}_not_found", key),
                Err(e) => format!("cmd=get_result rc=-1 msg={:?}", e),
            })
        }
        "barrier_in" => crate::pmi::with_client(|c| c.barrier()).map(|_| "cmd=barrier_out rc=0".into()),
        // Ours stays connected (and finalizes at exit); the application is done with PMI.
        "finalize" => Ok("cmd=finalize_ack rc=0".into()),
        "abort" => {
            let code = arg("exitcode").and_then(|v| v.parse::<i32>().ok()).unwrap_or(1);
            crate::pmi::with_client(|c| c.abort(code, "abort from the application's PMI client"))
        }
        "publish_name" => {
            let (svc, port) = (arg("service").unwrap_or(""), arg("port").unwrap_or(""));
            Ok(match crate::pmi::with_client(|c| c.publish_name(svc, port)) {
                Ok(()) => "cmd=publish_result rc=0 info=ok".into(),
                Err(_) => "cmd=publish_result rc=-1 info=failed".into(),
            })
        }
        "unpublish_name" => {
            let svc = arg("service").unwrap_or("");
            Ok(match crate::pmi::with_client(|c| c.unpublish_name(svc)) {
                Ok(()) => "cmd=unpublish_result rc=0 info=ok".into(),
                Err(_) => "cmd=unpublish_result rc=-1 info=failed".into(),
            })
        }
        "lookup_name" => {
            let svc = arg("service").unwrap_or("");
            Ok(match crate::pmi::with_client(|c| c.lookup_name(svc)) {
                Ok(p) => format!("cmd=lookup_result rc=0 info=ok port={}", p),
                Err(_) => "cmd=lookup_result rc=-1 info=notfound".into(),
            })
        }
        other => Ok(format!("cmd={}_result rc=-1 msg=unknown_command", other.chars().take(64).collect::<String>())),
    };
    match r {
        Ok(mut s) => {
            s.push('\n');
            s
        }
        // The launcher went away under a blocking request: tell the client so.
        Err(e) => format!("cmd={} rc=-1 msg={:?}\n", if cmd == "barrier_in" { "barrier_out" } else { "error" }, e),
    }
}

