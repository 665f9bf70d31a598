//! snrun: starts the ranks of a job, serves them the PMI-1 wire protocol, and
//! reaps the whole job when any rank fails.  See `snrun --help`.
//!
//! Modules, top to bottom (each uses only those below it):
//! - this file: parsing the command line into an `Opts`, and `main`;
//! - [`job`]: running a job (spawning ranks, the poll loop, reaping) and `Opts`, what it runs;
//! - [`pmi`]: the PMI-1 server state machine, free of sockets and processes;
//! - [`wire`]: the PMI-1 wire format and the process-mapping encoding.
//!
//! (`trace_merge.rs` is another program, sn-trace-merge, sharing no module.)

mod job;
mod pmi;
mod wire;

use job::Opts;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

const USAGE: &str = "\
usage: snrun -n N [-N ranks-per-node] [--label] [--timeout S] [--no-kill] [--] prog [args...]

  -n N, -np N          number of ranks to start
  -N K, --ppn K        ranks per (virtual) node, block mapping; default N (one node)
  -l, --label          prefix every output line with \"[rank] \"
  --timeout S          kill the job after S seconds and exit 124
  -K, --no-kill        a rank that fails does not end the job: the others run on
                       (to see their partner die, as srun --kill-on-bad-exit=0);
                       the exit status is still the first failure's
  -h, --help           this text
  --help-env           every environment variable the libraries read, with help

Each rank gets PMI_FD/PMI_RANK/PMI_SIZE (or PMI_PORT/PMI_ID when
SNRUN_PMI_MODE=port), SOFTNIC_JOB_SECRET (128 bits from the kernel's random
source, new for every job), PMI_JOBID, SOFTNIC_JOBID, SOFTNIC_LOCAL_RANK,
SOFTNIC_LOCAL_SIZE, SOFTNIC_NODE_ID, SOFTNIC_RANKS_PER_NODE, ALPS_APP_PE and, unless already set,
PMI_GNI_PTAG, PMI_GNI_COOKIE, PMI_GNI_DEV_ID, PMI_GNI_LOC_ADDR, and
SOFTNIC_ENGINE=shm (all ranks run on this machine; set SOFTNIC_ENGINE=net to
send even virtual nodes' traffic through the network engine).
PMI connections: fd mode (default) hands each rank a private socket and serves
any PMI-1 client (MPICH's too).  Port mode listens on a localhost TCP port and
serves only connections whose initack proves, with a MAC under
SOFTNIC_JOB_SECRET, that they are ranks (softnic's libpmi does; stock PMI
clients cannot: use fd mode for them); any other command closes the connection.
A connection with more than 1 MiB of unread replies is cut off and the job
ended.  Ranks get SIGKILL when snrun dies (PR_SET_PDEATHSIG; processes they
fork do not), and softnic's libpmi exits when the launcher hangs up.
Exit status: 0 when every rank exits 0; otherwise the first failing rank's
status (128+signal when killed), the PMI_Abort exit code, 124 on --timeout,
128+signal when snrun itself is interrupted.
Environment: SOFTNIC_LOG=debug prints the PMI traffic.";

#[derive(Debug, PartialEq)]
enum Parsed {
    Run(Opts),
    Help,
    HelpEnv,
}

fn parse_count(flag: &str, v: Option<&OsString>) -> Result<usize, String> {
    let v = v.ok_or_else(|| format!("{flag} needs a value"))?;
    let s = v.to_str().ok_or_else(|| format!("{flag}: not a number"))?;
    match s.parse::<usize>() {
        Ok(n) if (1..=1 << 20).contains(&n) => Ok(n),
        _ => Err(format!("{flag}: expected a positive count, got '{s}'")),
    }
}

fn parse_args(args: &[OsString]) -> Result<Parsed, String> {
    let mut n = None;
    let mut per_node = None;
    let mut label = false;
    let mut no_kill = false;
    let mut timeout = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_bytes();
        // `--flag=value` forms
        let (flag, inline): (&[u8], Option<OsString>) = match a.iter().position(|&c| c == b'=') {
            Some(p) if a.starts_with(b"-") => {
                (&a[..p], Some(OsString::from(std::ffi::OsStr::from_bytes(&a[p + 1..]))))
            }
            _ => (a, None),
        };
        let take = |i: &mut usize| -> Option<OsString> {
            if inline.is_some() {
                return inline.clone();
            }
            *i += 1;
            args.get(*i).cloned()
        };
        match flag {
            b"-h" | b"--help" => return Ok(Parsed::Help),
            b"--help-env" => return Ok(Parsed::HelpEnv),
            b"-n" | b"-np" | b"--np" => n = Some(parse_count("-n", take(&mut i).as_ref())?),
            b"-N" | b"--ppn" | b"-ppn" => per_node = Some(parse_count("-N", take(&mut i).as_ref())?),
            b"-l" | b"--label" => label = true,
            b"-K" | b"--no-kill" => no_kill = true,
            b"--timeout" | b"-t" => {
                let v = take(&mut i).ok_or("--timeout needs a value")?;
                let s = v.to_str().unwrap_or("");
                match s.parse::<f64>() {
                    Ok(t) if t.is_finite() && t >= 0.0 => timeout = if t > 0.0 { Some(t) } else { None },
                    _ => return Err(format!("--timeout: expected seconds, got '{s}'")),
                }
            }
            b"--" => {
                i += 1;
                break;
            }
            f if f.starts_with(b"-n") && f.len() > 2 && f[2..].iter().all(u8::is_ascii_digit) => {
                // -n4
                n = Some(parse_count("-n", Some(&OsString::from(std::ffi::OsStr::from_bytes(&f[2..]))))?);
            }
            f if f.starts_with(b"-") && f.len() > 1 => {
                return Err(format!("unknown option '{}'", String::from_utf8_lossy(f)))
            }
            _ => break,
        }
        i += 1;
    }
    let prog: Vec<OsString> = args[i.min(args.len())..].to_vec();
    if prog.is_empty() {
        return Err("no program given".into());
    }
    let n = n.ok_or("-n N is required")?;
    Ok(Parsed::Run(Opts { n, per_node, label, timeout, no_kill, prog }))
}

fn main() {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    match parse_args(&args) {
        Ok(Parsed::Help) => {
            println!("{USAGE}");
        }
        Ok(Parsed::HelpEnv) => {
            print!("{}", softnic_fabric::env::describe());
        }
        Ok(Parsed::Run(o)) => std::process::exit(job::run(o)),
        Err(e) => {
            eprintln!("snrun: {e}\n{USAGE}");
            std::process::exit(2);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Parsed, String> {
        let v: Vec<OsString> = s.split_whitespace().map(OsString::from).collect();
        parse_args(&v)
    }

    #[test]
    fn args_basic() {
        let Ok(Parsed::Run(o)) = p("-n 4 -N 2 --label --timeout 1.5 -- ./a.out -n 9") else { panic!() };
        assert_eq!(o.n, 4);
        assert_eq!(o.per_node, Some(2));
        assert!(o.label);
        assert_eq!(o.timeout, Some(1.5));
        assert_eq!(o.prog, vec!["./a.out", "-n", "9"]);
    }

    #[test]
    fn args_forms() {
        let Ok(Parsed::Run(o)) = p("-np 3 prog x") else { panic!() };
        assert_eq!((o.n, o.prog.len()), (3, 2));
        let Ok(Parsed::Run(o)) = p("-n5 --timeout=2 prog") else { panic!() };
        assert_eq!((o.n, o.timeout), (5, Some(2.0)));
        let Ok(Parsed::Run(o)) = p("-n 2 -K prog") else { panic!() };
        assert!(o.no_kill);
        let Ok(Parsed::Run(o)) = p("-n 2 --no-kill prog") else { panic!() };
        assert!(o.no_kill);
        assert_eq!(p("--help"), Ok(Parsed::Help));
        assert_eq!(p("--help-env"), Ok(Parsed::HelpEnv));
    }

    #[test]
    fn args_errors() {
        assert!(p("-n 0 prog").is_err());
        assert!(p("-n x prog").is_err());
        assert!(p("-n").is_err());
        assert!(p("-n 2").is_err());
        assert!(p("prog").is_err());
        assert!(p("-n 2 --bogus prog").is_err());
        assert!(p("-n 2 --timeout -1 prog").is_err());
    }
}
