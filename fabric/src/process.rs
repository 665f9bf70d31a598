//! Facts about processes, read from /proc: whether a pid is alive (and still the process
//! that started at a given time), and when it started.  The layers above use them to
//! tell a dead owner (of a registry row, a named object, a lock word) from a live one.

/// (state char, start time in clock ticks) from /proc/<pid>/stat.
pub fn proc_stat(pid: i32) -> Option<(u8, u64)> {
    if pid <= 0 {
        return None;
    }
    let path = std::ffi::CString::new(format!("/proc/{}/stat", pid)).ok()?;
    let s = crate::cancel::sys::read_file(&path).ok()?;
    // comm may contain spaces and ')' — the fields start after the LAST ')'.
    let close = s.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&s[close + 1..]).ok()?;
    let mut it = rest.split_ascii_whitespace();
    let state = it.next()?.as_bytes().first().copied()?;
    // fields 3.. : state is field 3, starttime is field 22 → 19 more after state.
    let start = it.nth(18)?.parse().ok()?;
    Some((state, start))
}

/// Start time of `pid` (clock ticks since boot), `None` if it does not exist.
pub fn proc_starttime(pid: i32) -> Option<u64> {
    proc_stat(pid).map(|s| s.1)
}

/// True when `pid` exists, is not a zombie, and (if given) started at `starttime`.
pub fn pid_alive(pid: i32, starttime: Option<u64>) -> bool {
    match proc_stat(pid) {
        None => false,
        Some((st, t)) => st != b'Z' && st != b'X' && starttime.map_or(true, |s| s == t),
    }
}
