//! The one registry of tunable environment variables (cf. libfabric's
//! `fi_param_define`).  Every `SOFTNIC_*` variable the libraries read is declared
//! once in [`TUNABLES`] with its default and help text, and read only through
//! the typed getters here, so `snrun --help-env` ([`describe`]) lists them all.
//!
//! The environment is read once, on first use, for all registered names at
//! once; later `setenv` calls by the program are not seen (the vendor libraries
//! likewise read their environment at init).
//!
//! Refusals: asking for a name that is not in the table is a bug in our code,
//! logged at error level, and yields the type's zero value.  A value the user
//! set that does not parse is logged once at warn level (the user asked for
//! something and is not getting it) and the default is used.  An empty value is
//! treated as unset.
//!
//! To add a tunable: add a row to [`TUNABLES`]; read it with `get_u64` /
//! `get_bool` / `get_str`.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use once_cell::sync::Lazy;

/// One tunable environment variable.
#[derive(Debug)]
pub struct Tunable {
    pub name: &'static str,
    /// The default as it would be written in the environment.
    pub default: &'static str,
    /// One or two sentences for `--help-env`.
    pub help: &'static str,
}

/// Every tunable, in the order `describe` lists them.
pub static TUNABLES: &[Tunable] = &[
    Tunable {
        name: "SOFTNIC_LOG",
        default: "warn",
        help: "Log level on stderr: error|warn|info|debug|trace (or off). \
               Lines read `softnic[pid] LEVEL api: message`.",
    },
    Tunable {
        name: "SOFTNIC_SHM_DIR",
        default: "/dev/shm",
        help: "Parent directory of the per-user directory that holds the node \
               fabric's shared objects.",
    },
    Tunable {
        name: "SOFTNIC_SPIN_NS",
        default: "4000",
        help: "Nanoseconds to spin on a shared word before sleeping on a futex \
               in blocking waits (0 = sleep at once).",
    },
    Tunable {
        name: "SOFTNIC_RMA_FALLBACK",
        default: "1",
        help: "Allow process_vm_readv/writev for put/get on memory whose pages \
               cannot be shared (shared file mappings, hugetlbfs). 0 = such \
               registrations fail instead.",
    },
    Tunable {
        name: "SOFTNIC_REGISTER_GUARD",
        default: "1",
        help: "While a registration copies pages to shared memory, hold other threads' \
               writes to them (userfaultfd write-protection) so none is lost. 0 = copy \
               unguarded (then another thread's write to those pages during the call \
               can be lost).",
    },
    Tunable {
        name: "SOFTNIC_REGISTER_GUARD_KERNEL",
        default: "1",
        help: "Let the registration write guard hold the kernel's writes for other \
               threads too (a read(2) into pages being registered waits instead of \
               failing with EFAULT), where the process may (CAP_SYS_PTRACE or \
               vm.unprivileged_userfaultfd=1). 0 = user mode only, as for an \
               unprivileged process (for tests).",
    },
    Tunable {
        name: "SOFTNIC_FAULTS",
        default: "",
        help: "Injected faults, e.g. register:after=10,every=5,times=3,rank=1 (entries \
               separated by ';'): the named operation fails with the error the API \
               documents for it (see fabric faults.rs and the README).",
    },
    Tunable {
        name: "SOFTNIC_CHECK",
        default: "",
        help: "1: report the bugs the hardware keeps silent (a source buffer changed before its completion, events never reaped, objects never released), one line each on stderr; abort: stop at the first.",
    },
    Tunable {
        name: "SOFTNIC_CHECK_FILE",
        default: "",
        help: "File the checker's findings are appended to as well (SOFTNIC_CHECK).",
    },
    Tunable {
        name: "SOFTNIC_TRACE",
        default: "",
        help: "Directory for the timeline: every rank's traced calls as Chrome trace events (softnic-trace-<rank>-<pid>-<time>.part, joined into softnic-trace.json by snrun at the end of the job, or by sn-trace-merge DIR); open it in Perfetto.",
    },
    Tunable {
        name: "SOFTNIC_STOP_SIGNAL",
        default: "0",
        help: "Real-time signal that parks the other threads of a process for the moment \
               a registration copies pages no write guard protects (initialised statics, \
               or any memory where userfaultfd is unavailable), so that none of their \
               writes is lost. 0 = SIGRTMAX - 7. Not used if the program handles it.",
    },
    Tunable {
        name: "SOFTNIC_REGISTER_WINDOW",
        default: "262144",
        help: "Bytes of the aligned window a registration makes shareable around the \
               pages it covers, within the same anonymous mapping, so that neighbouring \
               registrations find their pages shared already. Only where the write \
               guard holds the kernel's writes too (see SOFTNIC_REGISTER_GUARD_KERNEL), \
               the registering thread is the process's only one, or the others can be \
               parked (SOFTNIC_STOP_SIGNAL); 0 = exactly the pages registered.",
    },
    Tunable {
        name: "XT_SYMMETRIC_HEAP_SIZE",
        default: "0",
        help: "DMAPP symmetric heap size per PE in bytes, with an optional K/M/G \
               suffix (powers of 1024), e.g. 64M. The documented default is 0: \
               dmapp_sheap_malloc fails until it is set. Memory is committed only \
               when touched.",
    },
    Tunable {
        name: "UTOFU_NUM_MRQ_ENTRIES",
        default: "131072",
        help: "uTofu: MRQ entries of each VCQ: 2048, 8192, 32768, 131072, 524288 or \
               2097152 (or 2Ki..2Mi); other values round to the nearest, ties upward. \
               An MRQ that overflows ends its process, as documented.",
    },
    Tunable {
        name: "UTOFU_NUM_EXCLUSIVE_CQS",
        default: "0",
        help: "uTofu: CQs per TNI reserved for CQ-exclusive VCQs (accepted; any free CQ \
               of the process's own share can serve an exclusive VCQ here).",
    },
    Tunable {
        name: "UTOFU_CQ_MASK_<tni>",
        default: "",
        help: "uTofu: the CQs of TNI <tni> (0-5) this process may use, a hexadecimal mask \
               (bit i = CQ i), as Fugaku's job manager exports it; unset: the share that \
               utofu.h's table gives for the processes per node and the local rank.",
    },
    Tunable {
        name: "UTOFU_BG_MASK_<tni>",
        default: "",
        help: "uTofu: the barrier gates of TNI <tni> (0-5) this process may use, a \
               hexadecimal mask (bit i = BG i); unset: the share of utofu.h's table.",
    },
    Tunable {
        name: "UTOFU_NUM_SESSION_MODE_CQS",
        default: "3",
        help: "uTofu: CQs per TNI reserved for session-mode VCQs (accepted; session mode \
               is not offered).",
    },
    Tunable {
        name: "UTOFU_NUM_MRQ_ENTRIES_SESSION",
        default: "131072",
        help: "uTofu: MRQ entries of session-mode VCQs (accepted; session mode is not offered).",
    },
    Tunable {
        name: "UTOFU_SWAP_PROTECT",
        default: "0",
        help: "uTofu: 1 = lock registered memory in RAM (mlock, best effort, within \
               RLIMIT_MEMLOCK).",
    },
    Tunable {
        name: "SOFTNIC_JOB_SECRET",
        default: "",
        help: "The job's secret, 32 hex digits, set by snrun for its ranks. Unset under other \
               launchers: rank 0 draws one and hands it to its job's ranks through the PMI KVS \
               and name service. Processes started by hand without a launcher are one job each; \
               give them the same value to make them one job (SISCI client and server); \
               processes with one secret can reach each other's objects.",
    },
    Tunable {
        name: "PMI_GNI_PTAG",
        default: "",
        help: "uGNI job contract (set by snrun or PMI_Init, colon-separated): the job's \
               ptags. With PMI_GNI_COOKIE, GNI_CdmAttach accepts only these (ptag, cookie) \
               pairs (plus GNI_ConfigureJob ones); unset = any. Read at call time.",
    },
    Tunable {
        name: "PMI_GNI_COOKIE",
        default: "",
        help: "uGNI job contract: the job's cookies, paired position by position with \
               PMI_GNI_PTAG. Read at call time.",
    },
    Tunable {
        name: "PMI_GNI_LOC_ADDR",
        default: "",
        help: "uGNI job contract: this node's NIC address(es); the first is what \
               GNI_CdmAttach and GNI_CdmGetNicAddress report (unset = the launcher's node id). \
               Read at call time.",
    },
    Tunable {
        name: "SOFTNIC_PMI_VERSION",
        default: "auto",
        help: "PMI wire protocol over PMI_FD: 1, 2, or auto (PMI-2 under Slurm's srun, \
               where SLURM_STEP_ID is set; PMI-1 under snrun and MPICH's mpiexec).",
    },
    Tunable {
        name: "SOFTNIC_PMI_RELAY",
        default: "1",
        help: "1: in an MPI program started with PMI_FD (or by snrun in port mode), a library loaded before main gives \
               MPI's own PMI client a socket to an in-process relay and keeps the \
               launcher connection for itself (two clients on one connection corrupt each \
               other; Slurm refuses a second init).  0: no relay.",
    },
    Tunable {
        name: "SOFTNIC_ENGINE",
        default: "auto",
        help: "Which engine reaches other processes: auto (shared memory on this node, the \
               network engine for ranks the launcher places on other nodes), net (the \
               network engine for every process but this one, even on this node: for \
               tests and benchmarks), shm (never the network engine).",
    },
    Tunable {
        name: "SOFTNIC_LIBFABRIC",
        default: "libfabric.so.1",
        help: "The libfabric library the network engine loads (dlopen name or path). The \
               provider comes from FI_PROVIDER when set, else tcp;ofi_rxm; FI_TCP_IFACE \
               picks the TCP interface.",
    },
    Tunable {
        name: "SOFTNIC_NET_TIMEOUT_MS",
        default: "10000",
        help: "Milliseconds a network-engine request waits for its reply before the \
               operation fails as if the target had died (a dead peer gives errors, \
               not hangs).",
    },
    Tunable {
        name: "SOFTNIC_NET_POLL_US",
        default: "200",
        help: "Microseconds a thread waiting for a network-engine reply polls the \
               completion queue itself before it sleeps until the progress thread \
               delivers the reply.",
    },
    Tunable {
        name: "SOFTNIC_NET_LEASE_US",
        default: "1000",
        help: "Longest time (microseconds) for which a thread that polls for what peers send \
               it (an empty GNI_CqGetEvent on a CQ that receives remote events, \
               utofu_poll_mrq, a collective's test, PtlEQWait before it sleeps) serves \
               network traffic itself after each poll, without the progress thread being \
               woken. Leases shrink (to 50) when traffic waited for one to end, and grow \
               back while a thread keeps polling; a thread that sleeps ends its lease. 0: \
               the progress thread serves everything.",
    },
    Tunable {
        name: "SOFTNIC_NET_STATS",
        default: "0",
        help: "1: at exit, every process with a network engine prints on stderr how many \
               messages it dropped unserved (malformed, without the job's key, replayed), \
               how many of its sends and RMA operations the provider failed, how its held \
               replies went, and (own transport) the most bytes it queued for one process.",
    },
    Tunable {
        name: "SOFTNIC_NET_SPIN_US",
        default: "0",
        help: "Microseconds the network engine's progress thread polls for traffic \
               before it sleeps in the provider's wait object.",
    },
    Tunable {
        name: "SOFTNIC_NET_TRANSPORT",
        default: "sockets",
        help: "How the network engine carries its messages: sockets (TCP connections of \
               its own; no libfabric needed), or libfabric (its provider, FI_PROVIDER; \
               RMA for bulk transfers).  Every process of a job must use the same.",
    },
    Tunable {
        name: "SOFTNIC_NET_RMA_DEPTH",
        default: "16",
        help: "Pieces (of up to 1 MiB) of asynchronous network-engine RMA in flight per \
               process: transfers to other machines (uGNI RDMA) are pipelined this deep \
               (four times as deep for puts shorter than the RMA threshold, which go as \
               requests); a get's piece holds a bounce buffer, kept for reuse.",
    },
    Tunable {
        name: "SOFTNIC_NET_RMA",
        default: "1",
        help: "0 turns off RMA in the network engine (libfabric writes and reads straight \
               into the target's memory): puts and gets of 16 KiB or more then travel as \
               request messages like smaller ones. Both ends must allow it (a target with 0 \
               refuses to expose its memory). Unset: on, except with the ofi_rxd provider \
               (udp), whose RMA stalled when several threads used it at once.",
    },
    Tunable {
        name: "SOFTNIC_SISCI_NODE_ID",
        default: "",
        help: "SISCI node id of the process (1..65535, not 252), for SISCI programs started \
               without a launcher, e.g. SOFTNIC_SISCI_NODE_ID=8 ./client 4. Unset: 4*(n+1) \
               for the launcher's node n (SOFTNIC_NODE_ID, set per -N group by snrun, or \
               PMI's process mapping), skipping 252; 4 without a launcher.",
    },
    Tunable {
        name: "SOFTNIC_SISCI_SHADOW_US",
        default: "1000",
        help: "Microseconds between background passes over SISCI maps of memory on another \
               machine (shadow copies) and over a machine's copies of reflective memory \
               groups spanning machines: each pass ships the program's stores and reloads the \
               copy, so flags polled or stored without SCIFlush/sequence calls still move. \
               Windows over 100 KB are passed over less often (100 MB/s each at most). 0: \
               only at SCIFlush, SCIStoreBarrier, sequences, triggers and SCIUnmapSegment.",
    },
    Tunable {
        name: "SOFTNIC_PTL_WAIT_TIMEOUT_MS",
        default: "1000",
        help: "Portals: milliseconds PtlEQWait_timeout waits for an event before it \
               returns PTL_EQ_EMPTY.",
    },
    Tunable {
        name: "SOFTNIC_PTL_SPIN_NS",
        default: "100000",
        help: "Portals: nanoseconds PtlEQWait (and PtlEQPoll) spin on an empty event queue, \
               checking it after every pause instruction, before they sleep on its futex.",
    },
    Tunable {
        name: "SOFTNIC_PTL_EQ_MEM",
        default: "67108864",
        help: "Portals: bytes of shared memory per network interface for the event \
               queues (128 bytes per event of capacity, plus 256 per queue); PtlEQAlloc \
               gives PTL_NO_SPACE beyond it. Only the pages queues touch are allocated.",
    },
    Tunable {
        name: "SOFTNIC_PTL_CONNECT_TIMEOUT_MS",
        default: "60000",
        help: "Portals: milliseconds a put or get waits for a target of its job (a process \
               id of the rank maps) that has not initialised its interface yet, before its \
               END event reports PTL_NI_FAIL. A target that finalised, or that this process \
               reached before and has exited since, fails at once. 0: never wait.",
    },
    Tunable {
        name: "DMAPP_ABORT_ON_ERROR",
        default: "0",
        help: "If true, DMAPP aborts (dumping core) instead of returning an error \
               from dmapp_init, memory registration and the symmetric-heap calls.",
    },
    Tunable {
        name: "DMAPP_MAX_LOCKS",
        default: "128",
        help: "DMAPP: locks one PE can hold or be waiting for at once (its lock queue \
               nodes), 1..1023; dmapp_lock_acquire beyond it returns DMAPP_RC_NO_SPACE.",
    },
];

/// The environment as seen at first use: one entry per row of `TUNABLES`.
static SNAPSHOT: Lazy<Vec<Option<String>>> = Lazy::new(|| {
    TUNABLES
        .iter()
        .map(|t| std::env::var_os(t.name).map(|v| v.to_string_lossy().into_owned()))
        .collect()
});

/// One "already warned about a bad value" flag per row, so a getter called in a
/// loop warns once.
static WARNED: Lazy<Vec<AtomicBool>> = Lazy::new(|| TUNABLES.iter().map(|_| AtomicBool::new(false)).collect());

fn index(name: &str) -> Option<usize> {
    TUNABLES.iter().position(|t| t.name == name)
}

/// The registry row for `name`, if registered.
pub fn lookup(name: &str) -> Option<&'static Tunable> {
    index(name).map(|i| &TUNABLES[i])
}

/// The raw value from the environment snapshot (`None` if unset, empty or
/// unregistered).  Does not log, so the logger itself can use it.
pub fn raw(name: &str) -> Option<&'static str> {
    let i = index(name)?;
    SNAPSHOT[i].as_deref().filter(|s| !s.trim().is_empty())
}

/// Parses an unsigned integer: decimal, or hexadecimal with `0x`.
pub fn parse_u64(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Parses a boolean: `1|true|yes|on` and `0|false|no|off`, case-insensitive.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Resolves a typed value from the registry row `i` and the raw setting `set`.
/// Separate from the snapshot so it can be tested without touching the process
/// environment.
fn resolve<T>(i: usize, set: Option<&str>, parse: fn(&str) -> Option<T>, zero: T, kind: &str) -> T {
    let t = &TUNABLES[i];
    if let Some(s) = set.filter(|s| !s.trim().is_empty()) {
        match parse(s) {
            Some(v) => return v,
            None => {
                if !WARNED[i].swap(true, Relaxed) {
                    crate::sn_warn!(
                        t.name,
                        "value {s:?} is not a valid {kind}; using the default {:?}",
                        t.default
                    );
                }
            }
        }
    }
    match parse(t.default) {
        Some(v) => v,
        None => {
            // A bad default is a bug in the table; the registry test catches the seeded rows.
            crate::sn_error!(t.name, "registered default {:?} is not a valid {kind}", t.default);
            zero
        }
    }
}

fn unregistered(name: &str) {
    crate::sn_error!("env", "internal: tunable {name} is not registered in fabric::env::TUNABLES");
}

/// The value of a registered unsigned-integer tunable (decimal or `0x` hex).
pub fn get_u64(name: &str) -> u64 {
    match index(name) {
        Some(i) => resolve(i, SNAPSHOT[i].as_deref(), parse_u64, 0, "unsigned integer"),
        None => {
            unregistered(name);
            0
        }
    }
}

/// The value of a registered boolean tunable (`1|true|yes|on`, `0|false|no|off`).
pub fn get_bool(name: &str) -> bool {
    match index(name) {
        Some(i) => resolve(i, SNAPSHOT[i].as_deref(), parse_bool, false, "boolean (1/0, true/false, yes/no, on/off)"),
        None => {
            unregistered(name);
            false
        }
    }
}

/// The value of a registered string tunable (the default if unset or empty).
pub fn get_str(name: &str) -> &'static str {
    match index(name) {
        Some(i) => raw(name).unwrap_or(TUNABLES[i].default),
        None => {
            unregistered(name);
            ""
        }
    }
}

/// A help listing of every tunable, with its default and current setting.
pub fn describe() -> String {
    let mut out = String::from("softnic environment variables:\n");
    for (i, t) in TUNABLES.iter().enumerate() {
        out.push_str(&format!("  {}  (default: {})", t.name, t.default));
        if let Some(v) = SNAPSHOT[i].as_deref() {
            out.push_str(&format!("  [set: {v}]"));
        }
        out.push('\n');
        // Collapse the continuation-line whitespace of the table literals.
        let help = t.help.split_whitespace().collect::<Vec<_>>().join(" ");
        out.push_str(&format!("      {help}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_is_well_formed() {
        for (i, t) in TUNABLES.iter().enumerate() {
            // Vendor variables that real programs set are read under their own names.
            let vendor = ["XT_SYMMETRIC_HEAP_SIZE", "DMAPP_ABORT_ON_ERROR", "DMAPP_MAX_LOCKS", "PMI_GNI_PTAG", "PMI_GNI_COOKIE", "PMI_GNI_LOC_ADDR", "UTOFU_NUM_MRQ_ENTRIES", "UTOFU_NUM_EXCLUSIVE_CQS", "UTOFU_NUM_SESSION_MODE_CQS", "UTOFU_NUM_MRQ_ENTRIES_SESSION", "UTOFU_SWAP_PROTECT", "UTOFU_CQ_MASK_<tni>", "UTOFU_BG_MASK_<tni>"];
            assert!(t.name.starts_with("SOFTNIC_") || vendor.contains(&t.name), "{}", t.name);
            // A family of variables is one entry, its varying part as <tni>.
            let stem = t.name.strip_suffix("_<tni>").unwrap_or(t.name);
            assert!(stem.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'), "{}", t.name);
            assert!(!t.help.trim().is_empty(), "{} has no help", t.name);
            assert_eq!(index(t.name), Some(i), "{} registered twice", t.name);
        }
    }

    #[test]
    fn seeded_rows_and_typed_defaults() {
        let i = |n| index(n).unwrap();
        assert_eq!(resolve(i("SOFTNIC_SPIN_NS"), None, parse_u64, 0, "u64"), crate::wait::SPIN_NS_DEFAULT);
        assert!(resolve(i("SOFTNIC_RMA_FALLBACK"), None, parse_bool, false, "bool"));
        assert_eq!(lookup("SOFTNIC_SHM_DIR").unwrap().default, "/dev/shm");
        assert_eq!(crate::log::parse_level(lookup("SOFTNIC_LOG").unwrap().default), Some(crate::log::DEFAULT_LEVEL));
    }

    #[test]
    fn set_values_parse_or_fall_back_to_default() {
        let spin = index("SOFTNIC_SPIN_NS").unwrap();
        assert_eq!(resolve(spin, Some("500"), parse_u64, 0, "u64"), 500);
        assert_eq!(resolve(spin, Some(" 0x10 "), parse_u64, 0, "u64"), 16);
        assert_eq!(resolve(spin, Some("0"), parse_u64, 0, "u64"), 0);
        assert_eq!(resolve(spin, Some("lots"), parse_u64, 0, "u64"), crate::wait::SPIN_NS_DEFAULT);
        assert_eq!(resolve(spin, Some("-5"), parse_u64, 0, "u64"), crate::wait::SPIN_NS_DEFAULT);
        assert_eq!(resolve(spin, Some("18446744073709551616"), parse_u64, 0, "u64"), crate::wait::SPIN_NS_DEFAULT, "overflow");
        assert_eq!(resolve(spin, Some(""), parse_u64, 0, "u64"), crate::wait::SPIN_NS_DEFAULT, "empty = unset");
        let fb = index("SOFTNIC_RMA_FALLBACK").unwrap();
        assert!(!resolve(fb, Some("0"), parse_bool, true, "bool"));
        assert!(!resolve(fb, Some("Off"), parse_bool, true, "bool"));
        assert!(resolve(fb, Some("maybe"), parse_bool, false, "bool"));
    }

    #[test]
    fn parsers() {
        assert_eq!(parse_u64("123"), Some(123));
        assert_eq!(parse_u64("0XfF"), Some(255));
        assert_eq!(parse_u64("18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64("1e3"), None);
        assert_eq!(parse_u64("0x"), None);
        assert_eq!(parse_u64(""), None);
        for t in ["1", "true", "YES", "on"] {
            assert_eq!(parse_bool(t), Some(true), "{t}");
        }
        for f in ["0", "false", "No", "OFF"] {
            assert_eq!(parse_bool(f), Some(false), "{f}");
        }
        assert_eq!(parse_bool("2"), None);
    }

    #[test]
    fn unregistered_names_are_refused() {
        assert_eq!(get_u64("SOFTNIC_NO_SUCH_THING"), 0);
        assert!(!get_bool("SOFTNIC_NO_SUCH_THING"));
        assert_eq!(get_str("SOFTNIC_NO_SUCH_THING"), "");
        assert_eq!(raw("PATH"), None, "unregistered names are not read even if set");
        assert!(lookup("SOFTNIC_NO_SUCH_THING").is_none());
    }

    #[test]
    fn getters_agree_with_the_snapshot() {
        // Whatever the test environment sets, the getters must equal resolving
        // the snapshot value; with nothing set they are the defaults.
        let spin = index("SOFTNIC_SPIN_NS").unwrap();
        assert_eq!(get_u64("SOFTNIC_SPIN_NS"), resolve(spin, SNAPSHOT[spin].as_deref(), parse_u64, 0, "u64"));
        let dir = index("SOFTNIC_SHM_DIR").unwrap();
        match SNAPSHOT[dir].as_deref().filter(|s| !s.trim().is_empty()) {
            Some(v) => assert_eq!(get_str("SOFTNIC_SHM_DIR"), v),
            None => assert_eq!(get_str("SOFTNIC_SHM_DIR"), "/dev/shm"),
        }
    }

    #[test]
    fn describe_lists_every_tunable() {
        let d = describe();
        for t in TUNABLES {
            // The whole name (SOFTNIC_NET_RMA is a prefix of SOFTNIC_NET_RMA_DEPTH).
            let line = d.lines().find(|l| l.split_whitespace().next() == Some(t.name)).unwrap_or_else(|| panic!("{} missing", t.name));
            assert!(line.contains(&format!("(default: {})", t.default)), "{line}");
        }
        assert!(d.contains("Nanoseconds to spin on a shared word"), "help text is printed");
    }
}
