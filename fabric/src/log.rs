//! `SOFTNIC_LOG=error|warn|info|debug|trace`: what the library is doing, one line
//! per event on stderr, naming the API call or object:
//!
//! ```text
//! softnic[4242] DEBUG GNI_PostFma: ep 3 -> pe 1, 64 bytes
//! ```
//!
//! Use the exported macros: `sn_error!`, `sn_warn!`, `sn_info!`, `sn_debug!`,
//! `sn_trace!`, e.g. `sn_debug!("GNI_PostFma", "ep {} ...", x)`.  A disabled
//! level costs one relaxed atomic load and a compare; the message arguments are
//! not evaluated.

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// Severity, most severe first.  `Off` disables everything.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Level {
    Off = 0,
    Error = 1,
    Warn = 2,
    Info = 3,
    Debug = 4,
    Trace = 5,
}

/// Default when `SOFTNIC_LOG` is unset or unparsable (matches the env registry).
pub const DEFAULT_LEVEL: Level = Level::Warn;

/// Not yet read from the environment.  It is larger than every level, so the
/// fast-path compare in [`enabled`] always falls through to initialisation.
const UNINIT: u8 = u8::MAX;

static MAX_LEVEL: AtomicU8 = AtomicU8::new(UNINIT);

impl Level {
    /// Name as printed in log lines.
    pub fn name(self) -> &'static str {
        match self {
            Level::Off => "OFF",
            Level::Error => "ERROR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
            Level::Debug => "DEBUG",
            Level::Trace => "TRACE",
        }
    }

    fn from_u8(v: u8) -> Level {
        match v {
            0 => Level::Off,
            1 => Level::Error,
            2 => Level::Warn,
            3 => Level::Info,
            4 => Level::Debug,
            _ => Level::Trace,
        }
    }
}

/// Parses a `SOFTNIC_LOG` value: `error|warn|info|debug|trace` (also `off`/`none`
/// and `warning`), case-insensitive, surrounding blanks ignored.  `None` if
/// unrecognised.
pub fn parse_level(s: &str) -> Option<Level> {
    match s.trim().to_ascii_lowercase().as_str() {
        "off" | "none" => Some(Level::Off),
        "error" => Some(Level::Error),
        "warn" | "warning" => Some(Level::Warn),
        "info" => Some(Level::Info),
        "debug" => Some(Level::Debug),
        "trace" => Some(Level::Trace),
        _ => None,
    }
}

/// True if messages at `level` are printed.  The hot path of every log macro.
#[inline(always)]
pub fn enabled(level: Level) -> bool {
    let max = MAX_LEVEL.load(Relaxed);
    // `level` is a constant at every macro call site, so the `Off` test folds away.
    if level as u8 > max || level == Level::Off {
        return false;
    }
    max != UNINIT || init_enabled(level)
}

#[cold]
#[inline(never)]
fn init_enabled(level: Level) -> bool {
    level <= init()
}

/// Reads `SOFTNIC_LOG` (through the env registry's snapshot) and publishes the level.
/// Races are harmless: every thread computes the same value.
fn init() -> Level {
    let raw = crate::env::raw("SOFTNIC_LOG");
    let lvl = match raw {
        None => DEFAULT_LEVEL,
        Some(s) => match parse_level(s) {
            Some(l) => l,
            None => {
                // Not through the macros: we are initialising them.  Printed once,
                // by whichever thread wins the publication below.
                if MAX_LEVEL.compare_exchange(UNINIT, DEFAULT_LEVEL as u8, Relaxed, Relaxed).is_ok() {
                    emit(
                        Level::Warn,
                        "SOFTNIC_LOG",
                        format_args!("unrecognised value {s:?} (want error|warn|info|debug|trace); using warn"),
                    );
                }
                return DEFAULT_LEVEL;
            }
        },
    };
    MAX_LEVEL.store(lvl as u8, Relaxed);
    lvl
}

/// The current maximum level (reads the environment on first use).
pub fn level() -> Level {
    let v = MAX_LEVEL.load(Relaxed);
    if v == UNINIT { init() } else { Level::from_u8(v) }
}

/// Overrides the level for this process (tests, or a launcher flag).
pub fn set_level(level: Level) {
    MAX_LEVEL.store(level as u8, Relaxed);
}

/// Formats one log line (without printing it).
pub fn format_line(pid: u32, level: Level, api: &str, args: std::fmt::Arguments<'_>) -> String {
    format!("softnic[{pid}] {} {api}: {args}\n", level.name())
}

/// Prints one line unconditionally.  Called by the macros after [`enabled`].
#[cold]
pub fn emit(level: Level, api: &str, args: std::fmt::Arguments<'_>) {
    let line = format_line(std::process::id(), level, api, args);
    write_stderr(line.as_bytes());
}

/// One `write_all` of a whole line so lines from concurrent processes do not
/// interleave mid-line (`eprintln!` writes a formatted line in pieces: seen mixing two
/// ranks' PMI hang-up lines); errors are ignored (logging must never fail the caller,
/// and `eprintln!` would panic on a closed stderr).
///
/// The raw system call, not libc's `write`: that one is a cancellation point, and a log line
/// must not end a thread whose cancellation is pending (see [`crate::cancel`]).
pub fn write_stderr(mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: writes from a live buffer of the given length to fd 2.
        let r = unsafe { libc::syscall(libc::SYS_write, 2, bytes.as_ptr(), bytes.len()) };
        if r > 0 {
            bytes = &bytes[r as usize..];
        } else if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        } else {
            return;
        }
    }
}

/// Internal invariant violated: print `softnic[pid] FATAL in <api>: <msg>` and abort.
pub fn fatal(api: &str, msg: &str) -> ! {
    let line = format!("softnic[{}] FATAL in {api}: {msg}\n", std::process::id());
    write_stderr(line.as_bytes());
    std::process::abort()
}

#[doc(hidden)]
#[macro_export]
macro_rules! sn_log {
    ($lvl:expr, $api:expr, $($arg:tt)+) => {{
        let lvl = $lvl;
        if $crate::log::enabled(lvl) {
            $crate::log::emit(lvl, $api, ::std::format_args!($($arg)+));
        }
    }};
}

/// `sn_error!("API", "fmt", args...)`: logs at error level.
#[macro_export]
macro_rules! sn_error {
    ($api:expr, $($arg:tt)+) => { $crate::sn_log!($crate::log::Level::Error, $api, $($arg)+) };
}

/// `sn_warn!("API", "fmt", args...)`: logs at warn level.
#[macro_export]
macro_rules! sn_warn {
    ($api:expr, $($arg:tt)+) => { $crate::sn_log!($crate::log::Level::Warn, $api, $($arg)+) };
}

/// `sn_info!("API", "fmt", args...)`: logs at info level.
#[macro_export]
macro_rules! sn_info {
    ($api:expr, $($arg:tt)+) => { $crate::sn_log!($crate::log::Level::Info, $api, $($arg)+) };
}

/// `sn_debug!("API", "fmt", args...)`: logs at debug level.
#[macro_export]
macro_rules! sn_debug {
    ($api:expr, $($arg:tt)+) => { $crate::sn_log!($crate::log::Level::Debug, $api, $($arg)+) };
}

/// `sn_trace!("API", "fmt", args...)`: logs at trace level.
#[macro_export]
macro_rules! sn_trace {
    ($api:expr, $($arg:tt)+) => { $crate::sn_log!($crate::log::Level::Trace, $api, $($arg)+) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_levels() {
        assert_eq!(parse_level("error"), Some(Level::Error));
        assert_eq!(parse_level("warn"), Some(Level::Warn));
        assert_eq!(parse_level("warning"), Some(Level::Warn));
        assert_eq!(parse_level("info"), Some(Level::Info));
        assert_eq!(parse_level("debug"), Some(Level::Debug));
        assert_eq!(parse_level("trace"), Some(Level::Trace));
        assert_eq!(parse_level("off"), Some(Level::Off));
        assert_eq!(parse_level(" DEBUG\n"), Some(Level::Debug));
        assert_eq!(parse_level("Trace"), Some(Level::Trace));
        assert_eq!(parse_level(""), None);
        assert_eq!(parse_level("verbose"), None);
        assert_eq!(parse_level("3"), None);
        assert_eq!(parse_level("debugx"), None);
    }

    #[test]
    fn levels_are_ordered_by_verbosity() {
        assert!(Level::Error < Level::Warn && Level::Warn < Level::Info);
        assert!(Level::Info < Level::Debug && Level::Debug < Level::Trace);
        for v in 0..=5u8 {
            assert_eq!(Level::from_u8(v) as u8, v);
        }
    }

    #[test]
    fn line_format() {
        let l = format_line(42, Level::Debug, "GNI_PostFma", format_args!("ep {} len {}", 3, 64));
        assert_eq!(l, "softnic[42] DEBUG GNI_PostFma: ep 3 len 64\n");
        let l = format_line(7, Level::Error, "dmapp_put", format_args!("x"));
        assert_eq!(l, "softnic[7] ERROR dmapp_put: x\n");
    }

    /// Child half of `fatal_prints_and_aborts`; does nothing unless run by it.
    #[test]
    #[ignore = "run as a child process by fatal_prints_and_aborts"]
    fn fatal_child() {
        if std::env::var_os("SOFTNIC_TEST_FATAL_CHILD").is_some() {
            fatal("GNI_Test", "boom");
        }
    }

    #[test]
    fn fatal_prints_and_aborts() {
        use std::os::unix::process::ExitStatusExt;
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "log::tests::fatal_child", "--nocapture", "--test-threads=1"])
            .env("SOFTNIC_TEST_FATAL_CHILD", "1")
            .output()
            .unwrap();
        assert_eq!(out.status.signal(), Some(libc::SIGABRT), "status {:?}", out.status);
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err.lines().find(|l| l.contains("FATAL")).unwrap_or_else(|| panic!("no FATAL line in {err:?}"));
        let rest = line.strip_prefix("softnic[").unwrap_or_else(|| panic!("{line:?}"));
        let (pid, msg) = rest.split_once(']').unwrap();
        assert!(pid.parse::<u32>().is_ok(), "{line:?}");
        assert_eq!(msg, " FATAL in GNI_Test: boom");
    }

    // The only test that changes the process-wide level; other tests in this
    // binary only log at levels whose output does not matter.
    #[test]
    fn enabled_follows_level_and_skips_arguments_when_disabled() {
        set_level(Level::Info);
        assert!(enabled(Level::Error) && enabled(Level::Warn) && enabled(Level::Info));
        assert!(!enabled(Level::Debug) && !enabled(Level::Trace));
        assert_eq!(level(), Level::Info);

        let mut evaluated = false;
        crate::sn_debug!("test", "{}", {
            evaluated = true;
            1
        });
        assert!(!evaluated, "arguments of a disabled message were evaluated");

        set_level(Level::Off);
        assert!(!enabled(Level::Error));
        crate::sn_error!("test", "{}", {
            evaluated = true;
            1
        });
        assert!(!evaluated);
        set_level(DEFAULT_LEVEL);
    }
}
