//! Reading other processes through /proc for `scan`, with every failure
//! classified: a process that exited between listing and reading (or while being
//! read) has vanished; one owned by another user, or under `hidepid`, is denied.
//! Neither is an error of the scan: it is counted and reported.

use std::io;

/// Why a /proc file could not be read.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Skip {
    /// The process exited before or while it was read.
    Vanished,
    /// Not permitted (another user's process, or hidepid).
    Denied,
    /// Anything else, with the reason.
    Other(String),
}

impl Skip {
    pub fn describe(&self) -> String {
        match self {
            Skip::Vanished => "vanished (the process exited)".into(),
            Skip::Denied => "permission denied".into(),
            Skip::Other(r) => r.clone(),
        }
    }
}

fn classify(e: &io::Error) -> Skip {
    match (e.kind(), e.raw_os_error()) {
        (io::ErrorKind::NotFound, _) | (_, Some(libc::ESRCH)) => Skip::Vanished,
        (io::ErrorKind::PermissionDenied, _) | (_, Some(libc::EPERM)) => Skip::Denied,
        _ => Skip::Other(envpolicy::error::io_reason(e)),
    }
}

/// `/proc/PID/FILE`, whole.
pub fn read(pid: u32, file: &str) -> Result<Vec<u8>, Skip> {
    std::fs::read(format!("/proc/{pid}/{file}")).map_err(|e| classify(&e))
}

/// `/proc/PID/comm` without its newline, or `?`.
pub fn comm(pid: u32) -> String {
    read(pid, "comm")
        .map(|b| String::from_utf8_lossy(b.strip_suffix(b"\n").unwrap_or(&b)).into_owned())
        .unwrap_or_else(|_| "?".into())
}

/// Every PID in /proc, ascending.
pub fn pids() -> io::Result<Vec<u32>> {
    let mut out: Vec<u32> = std::fs::read_dir("/proc")?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    out.sort_unstable();
    Ok(out)
}

/// The fields of /proc/PID/stat after its command name (which may hold spaces
/// and parentheses: they follow the LAST `)`): state, parent, ...
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = read(pid, "stat").ok()?;
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = String::from_utf8_lossy(stat.get(close + 1..)?).into_owned();
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// The processes of the trees that `roots` start: each root and every process
/// whose chain of parents reaches one, ascending. A process that vanishes
/// meanwhile is left out.
pub fn trees(roots: &[u32]) -> io::Result<Vec<u32>> {
    let parent: Vec<(u32, u32)> = pids()?
        .into_iter()
        .filter_map(|pid| {
            let ppid = stat_fields(pid)?.get(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut out: Vec<u32> = roots.to_vec();
    let mut grew = true;
    while grew {
        grew = false;
        for &(pid, ppid) in &parent {
            if out.contains(&ppid) && !out.contains(&pid) {
                out.push(pid);
                grew = true;
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// A process with no user memory to read: a kernel thread, or a zombie. Its
/// `environ` reads fail with ESRCH although the process is there.
pub fn has_no_memory(pid: u32) -> bool {
    /// `PF_KTHREAD` in the flags field of /proc/PID/stat.
    const PF_KTHREAD: u64 = 0x0020_0000;
    let Some(fields) = stat_fields(pid) else {
        return false;
    };
    let zombie = matches!(fields.first().map(String::as_str), Some("Z" | "X"));
    let flags: u64 = fields.get(6).and_then(|f| f.parse().ok()).unwrap_or(0);
    zombie || flags & PF_KTHREAD != 0
}

/// NUL-separated records; a missing last NUL still ends the last record.
pub fn split_nul(bytes: &[u8]) -> Vec<Vec<u8>> {
    if bytes.is_empty() {
        return Vec::new();
    }
    let body = bytes.strip_suffix(b"\0").unwrap_or(bytes);
    body.split(|&b| b == 0).map(<[u8]>::to_vec).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_and_a_vanished_one() {
        let me = std::process::id();
        assert!(pids().unwrap().contains(&me));
        assert!(!split_nul(&read(me, "cmdline").unwrap()).is_empty());
        assert_eq!(read(u32::MAX - 1, "cmdline"), Err(Skip::Vanished));
        assert!(!has_no_memory(me));
        assert_eq!(
            split_nul(b"a\0\0b"),
            vec![b"a".to_vec(), vec![], b"b".to_vec()]
        );
    }
}
