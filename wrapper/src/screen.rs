//! GNU screen sessions for `envwrap tmux-env`: what a session's server holds
//! that the policy would not pass to a window, and, with `--fix`, removing it.
//!
//! A screen session's server (`SCREEN`) gives each window it opens its own
//! process environment, as changed by `setenv` and `unsetenv` since it started
//! (docs/adr/0014). So that is what is read ([`crate::live_environ`], with
//! `/proc/PID/environ` when the live one cannot be), judged as a window's
//! environment (as a tmux pane's, [`crate::tmux::judge`]), and cleared with one
//! `screen -S SESSION -X unsetenv NAME` per name. A server that maps
//! libenvshim.so filters every exec it makes: it is left alone, and is no
//! finding.
//!
//! Sessions are found as `screen -ls` lists them (`PID.NAME`), so wherever
//! this screen keeps its sockets. Messages name sessions and variables, never a
//! value.

use crate::{live_environ, procfs, tmux, value};
use envpolicy::compiled::Policy;
use serde_json::json;
use std::process::{Command, Stdio};

/// One screen session, as far as it was read.
pub struct Session {
    /// `PID.NAME`, as `screen -ls` shows it.
    pub id: String,
    pub pid: u32,
    pub policed: bool,
    /// Names the server holds that a window must not get: name, why, kind.
    pub held: Vec<(Vec<u8>, String, &'static str)>,
    pub removed: Vec<Vec<u8>>,
    pub unreadable: Option<String>,
}

impl Session {
    /// As `envwrap tmux-env --json` lists it, beside the tmux servers: what it
    /// holds (name, kind, why) and what `--fix` removed, never a value.
    pub fn json(&self) -> serde_json::Value {
        let held: Vec<_> = self
            .held
            .iter()
            .map(|(n, why, kind)| json!({"variable": value::word(n), "kind": kind, "why": why}))
            .collect();
        let removed: Vec<_> = self.removed.iter().map(|n| value::word(n)).collect();
        json!({
            "session": value::word(self.id.as_bytes()),
            "pid": self.pid,
            "policed": self.policed,
            "held": held,
            "removed": removed,
            "unreadable": self.unreadable,
        })
    }
}

/// Every session of this user that `wanted` names (`None`: all): by `PID.NAME`,
/// PID, NAME, or a prefix of NAME, as screen matches `-S`.
pub fn sessions(screen: &str, wanted: Option<&str>) -> Vec<(String, u32)> {
    let Ok(out) = Command::new(screen)
        .arg("-ls")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
    else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let id = l.trim_start().split(['\t', ' ']).next()?;
            let (pid, name) = id.split_once('.')?;
            let pid: u32 = pid.parse().ok()?;
            let matches =
                wanted.is_none_or(|w| w == id || w == pid.to_string() || name.starts_with(w));
            matches.then(|| (id.to_string(), pid))
        })
        .collect()
}

/// Read one session's server, and with `fix` clear what it holds.
pub fn examine(
    policy: &Policy<'_>,
    files: &[Option<Vec<u8>>],
    screen: &str,
    (id, pid): (String, u32),
    fix: bool,
) -> Session {
    let mut s = Session {
        id,
        pid,
        policed: tmux::maps_the_shim(pid),
        held: Vec::new(),
        removed: Vec::new(),
        unreadable: None,
    };
    // A policed server's shim filters every exec it makes: what its
    // environment holds reaches no window, so it is no finding.
    if s.policed {
        return s;
    }
    let entries = match live_environ::read(pid) {
        Ok(entries) => entries,
        Err(_) => match procfs::read(pid, "environ") {
            Ok(raw) => procfs::split_nul(&raw),
            Err(why) => {
                s.unreadable = Some(why.describe());
                return s;
            }
        },
    };
    s.held = tmux::judge(policy, files, &entries)
        .into_iter()
        .filter(|(_, _, kind)| *kind != "stale")
        .collect();
    if fix {
        for (name, _, _) in &s.held {
            let Ok(name_str) = std::str::from_utf8(name) else {
                continue;
            };
            let done = Command::new(screen)
                .args(["-S", &s.id, "-X", "unsetenv", name_str])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|st| st.success());
            if done {
                s.removed.push(name.clone());
            }
        }
    }
    s
}

/// Say what was removed from, or is held by, each session.
pub fn print(sessions: &[Session], who: &str, quiet: bool, fix: bool, label: &str) {
    for s in sessions {
        let head = format!(
            "screen session {} (pid {})",
            value::word(s.id.as_bytes()),
            s.pid
        );
        if let Some(why) = &s.unreadable {
            say!("{who}: {head}: not read: {why}");
            continue;
        }
        for name in &s.removed {
            say!(
                "{who}: {head}: removed {} from its environment ({label})",
                value::word(name)
            );
        }
        if quiet {
            continue;
        }
        if s.policed {
            showln!("{head}: runs libenvshim.so, which filters every process it starts");
        }
        let left: Vec<_> = s
            .held
            .iter()
            .filter(|(n, _, _)| !fix || !s.removed.contains(n))
            .collect();
        for (name, why, kind) in &left {
            let verb = tmux::past(kind);
            showln!(
                "{head}: its environment holds {}, which the policy {verb} ({why}); windows it opens get it",
                value::word(name)
            );
        }
        if left.is_empty() && s.removed.is_empty() && !s.policed {
            showln!("{head}: no findings");
        }
    }
}

/// For `envwrap scan`: what every screen session of this user would give a
/// window it opens, as scan findings.
pub fn scan_findings(policy: &Policy<'_>, files: &[Option<Vec<u8>>]) -> Vec<crate::scan::Finding> {
    let mut out = Vec::new();
    for found in sessions("screen", None) {
        let s = examine(policy, files, "screen", found, false);
        let id = value::word(s.id.as_bytes());
        if let Some(why) = &s.unreadable {
            say!("envwrap: scan: screen session {id}: not read: {why}");
        }
        for (name, why, kind) in &s.held {
            let verb = tmux::past(kind);
            out.push(crate::scan::Finding {
                pid: s.pid,
                program: "screen session".to_string(),
                kind: "screen.held",
                variable: Some(value::word(name)),
                index: None,
                why: format!(
                    "session {id}: its environment holds {}, which the policy {verb} ({why}), and windows it opens get it; envwrap tmux-env --fix --screen {id} removes it",
                    value::word(name)
                ),
            });
        }
    }
    out
}
