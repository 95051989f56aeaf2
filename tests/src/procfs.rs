//! Reading other processes through /proc: argv (`cmdline`), initial environment
//! (`environ`), `comm`, liveness; and [`ProcScan`] / [`assert_no_process_holds`], the
//! check that no live process on the machine holds a seeded value in its command line
//! (or, optionally, its environment) — what `ps` would show any local user.
//!
//! Reports name the PID, the program (`comm`) and the VARIABLE, never the value.

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::secrets::Secrets;

fn proc_path(pid: u32, file: &str) -> PathBuf {
    PathBuf::from(format!("/proc/{pid}/{file}"))
}

/// Split NUL-terminated records (a missing final NUL still ends the last record).
fn split_nul(bytes: &[u8]) -> Vec<Vec<u8>> {
    if bytes.is_empty() {
        return Vec::new();
    }
    let body = bytes.strip_suffix(b"\0").unwrap_or(bytes);
    body.split(|&b| b == 0).map(|s| s.to_vec()).collect()
}

/// `/proc/PID/cmdline` split into arguments.
pub fn try_proc_cmdline(pid: u32) -> io::Result<Vec<Vec<u8>>> {
    std::fs::read(proc_path(pid, "cmdline")).map(|b| split_nul(&b))
}

/// `/proc/PID/cmdline` split into arguments; panics if unreadable.
#[track_caller]
pub fn proc_cmdline(pid: u32) -> Vec<Vec<u8>> {
    try_proc_cmdline(pid).unwrap_or_else(|e| panic!("cannot read /proc/{pid}/cmdline: {e}"))
}

/// `/proc/PID/environ` as raw entries (an entry may lack `=`).
pub fn try_proc_environ_raw(pid: u32) -> io::Result<Vec<Vec<u8>>> {
    std::fs::read(proc_path(pid, "environ")).map(|b| split_nul(&b))
}

/// `/proc/PID/environ` as `(NAME, VALUE)`; an entry without `=` gives `(entry, "")`.
/// Panics if unreadable.
#[track_caller]
pub fn proc_environ(pid: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
    try_proc_environ_raw(pid)
        .unwrap_or_else(|e| panic!("cannot read /proc/{pid}/environ: {e}"))
        .into_iter()
        .map(|e| match e.iter().position(|&b| b == b'=') {
            Some(i) => (e[..i].to_vec(), e[i + 1..].to_vec()),
            None => (e, Vec::new()),
        })
        .collect()
}

/// `/proc/PID/comm` without the newline.
pub fn proc_comm(pid: u32) -> Option<String> {
    std::fs::read_to_string(proc_path(pid, "comm"))
        .ok()
        .map(|s| s.trim_end_matches('\n').to_string())
}

/// The process state letter from `/proc/PID/stat` (`R`, `S`, `Z`, ...).
pub fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read(proc_path(pid, "stat")).ok()?;
    // comm may hold spaces and parentheses: the state follows the LAST ')'.
    let close = stat.iter().rposition(|&b| b == b')')?;
    stat.get(close + 2).map(|&b| b as char)
}

/// The parent PID from `/proc/PID/stat`.
pub fn proc_ppid(pid: u32) -> Option<u32> {
    let stat = std::fs::read(proc_path(pid, "stat")).ok()?;
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// True when PID exists and is not a zombie (a killed daemon whose parent has not
/// reaped it yet counts as gone).
pub fn pid_alive(pid: u32) -> bool {
    matches!(proc_state(pid), Some(s) if s != 'Z' && s != 'X')
}

/// Every PID currently listed in /proc, ascending.
pub fn all_pids() -> Vec<u32> {
    let mut pids: Vec<u32> = std::fs::read_dir("/proc")
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    pids.sort_unstable();
    pids
}

/// Where in a process a value was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// In argument number `index` of `/proc/PID/cmdline`.
    Cmdline { index: usize },
    /// In the environment entry whose name is `entry` (redacted, in case the name
    /// itself holds a value).
    Environ { entry: String },
}

/// One seeded value found in one process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcFinding {
    pub pid: u32,
    pub comm: String,
    /// The variable whose value was found.
    pub name: &'static str,
    pub place: Place,
}

impl fmt::Display for ProcFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "pid {} ({}) holds the value of {} in ",
            self.pid, self.comm, self.name
        )?;
        match &self.place {
            Place::Cmdline { index } => write!(f, "its cmdline, argument {index}"),
            Place::Environ { entry } => write!(f, "its environ, entry {entry}"),
        }
    }
}

/// A scan of live processes for seeded values. By default: every PID, cmdline only.
pub struct ProcScan<'a> {
    secrets: &'a Secrets,
    environ: bool,
    only: Option<Vec<u32>>,
    exclude: Vec<u32>,
}

impl<'a> ProcScan<'a> {
    pub fn new(secrets: &'a Secrets) -> ProcScan<'a> {
        ProcScan {
            secrets,
            environ: false,
            only: None,
            exclude: Vec::new(),
        }
    }

    /// Also scan `/proc/PID/environ` where readable. Off by default: a test often puts
    /// values into a parent's environment on purpose, to see that a child lacks them.
    pub fn with_environ(mut self) -> Self {
        self.environ = true;
        self
    }

    /// Scan only these PIDs.
    pub fn only(mut self, pids: impl IntoIterator<Item = u32>) -> Self {
        self.only = Some(pids.into_iter().collect());
        self
    }

    /// Skip this PID and every process below it (for example a control process that
    /// holds a value on purpose). Its children count too: a child between fork and
    /// exec still shows the parent's cmdline.
    pub fn exclude_tree(mut self, pid: u32) -> Self {
        self.exclude.push(pid);
        self
    }

    /// True when PID or one of its ancestors was excluded.
    fn is_excluded(&self, pid: u32) -> bool {
        let mut at = pid;
        for _ in 0..64 {
            if self.exclude.contains(&at) {
                return true;
            }
            match proc_ppid(at) {
                Some(parent) if parent > 1 => at = parent,
                _ => return false,
            }
        }
        false
    }

    /// Every finding. Unreadable and vanished processes are skipped.
    pub fn findings(&self) -> Vec<ProcFinding> {
        let pids = self.only.clone().unwrap_or_else(all_pids);
        let mut out = Vec::new();
        for pid in pids.into_iter().filter(|&p| !self.is_excluded(p)) {
            let comm = || proc_comm(pid).unwrap_or_else(|| "?".into());
            if let Ok(args) = try_proc_cmdline(pid) {
                for (index, arg) in args.iter().enumerate() {
                    for f in self.secrets.find_all(arg) {
                        out.push(ProcFinding {
                            pid,
                            comm: comm(),
                            name: f.name,
                            place: Place::Cmdline { index },
                        });
                    }
                }
                // A value split across arguments by NULs is not a value; but a process
                // that rewrote its argv area (setproctitle) may have joined them.
            }
            if self.environ {
                if let Ok(entries) = try_proc_environ_raw(pid) {
                    for e in &entries {
                        for f in self.secrets.find_all(e) {
                            let name = e.split(|&b| b == b'=').next().unwrap_or_default();
                            out.push(ProcFinding {
                                pid,
                                comm: comm(),
                                name: f.name,
                                place: Place::Environ {
                                    entry: self.secrets.redact(name),
                                },
                            });
                        }
                    }
                }
            }
        }
        out
    }

    /// Panic, listing every finding, if any process holds a seeded value.
    #[track_caller]
    pub fn assert_clean(&self) {
        let findings = self.findings();
        if findings.is_empty() {
            return;
        }
        let lines: Vec<String> = findings
            .iter()
            .map(|f| self.secrets.redact(f.to_string()))
            .collect();
        panic!(
            "seeded secret held by a live process:\n  {}",
            lines.join("\n  ")
        );
    }
}

/// Panic if any live process's command line holds a seeded value (see [`ProcScan`]).
#[track_caller]
pub fn assert_no_process_holds(secrets: &Secrets) {
    ProcScan::new(secrets).assert_clean();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split() {
        assert_eq!(
            split_nul(b"a\0\0b\0"),
            vec![b"a".to_vec(), vec![], b"b".to_vec()]
        );
        assert_eq!(split_nul(b"a\0b"), vec![b"a".to_vec(), b"b".to_vec()]);
        assert!(split_nul(b"").is_empty());
    }

    #[test]
    fn self_is_visible() {
        let me = std::process::id();
        assert!(all_pids().contains(&me));
        assert!(pid_alive(me));
        assert!(!proc_cmdline(me).is_empty());
        assert!(proc_comm(me).is_some());
    }
}
