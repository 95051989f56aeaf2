//! GNU screen sessions for `envwrap mux-env`: read through `/proc`, cleared
//! with `screen -X unsetenv`.
//!
//! A screen session's server (`SCREEN`) gives each window it opens its own
//! process environment, as changed by `setenv` and `unsetenv` since it started
//! (docs/adr/0014). So that is what is read ([`crate::live_environ`], with
//! `/proc/PID/environ` when the live one cannot be), judged as a window's
//! environment, and cleared with one `screen -S SESSION -X unsetenv NAME` per
//! name.
//!
//! Sessions are found as `screen -ls` lists them (`PID.NAME`), so wherever
//! this screen keeps its sockets (`SCREENDIR`, which the shim passes on).

use super::{judge_into, not_overwritten, server_shim, Judge, Options, Place, Server, Servers};
use crate::{live_environ, procfs, value};
use envpolicy::mux::Multiplexer;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::process::{Command, Stdio};

/// GNU screen, for [`super::IMPLEMENTATIONS`].
pub(crate) struct Screen;

impl Servers for Screen {
    fn row(&self) -> &'static Multiplexer {
        &envpolicy::mux::screen::MULTIPLEXER
    }

    /// Every session of this user that `named` names (an empty name, or none:
    /// all): by `PID.NAME`, PID, NAME, or a prefix of NAME, as screen matches
    /// `-S`.
    fn find(&self, program: &Path, named: &[OsString], _quiet: bool) -> Vec<OsString> {
        // `-x USER/NAME`: another user's multiuser session, which `-ls` does
        // not list and whose server this user cannot read. Said, as a check
        // that could not be made is (also with --quiet).
        for other in named.iter().filter(|n| n.as_bytes().contains(&b'/')) {
            say!(
                "{}: screen session {}: another user's session, not read: windows it opens may hold what the policy removes",
                super::who(),
                value::word(other.as_bytes())
            );
        }
        let listed = list(program);
        let wanted = |id: &OsStr| {
            let id = id.as_bytes();
            let (pid, name) = split_id(id);
            named.is_empty()
                || named
                    .iter()
                    .map(|w| w.as_bytes())
                    .any(|w| w.is_empty() || w == id || w == pid || name.starts_with(w))
        };
        listed.into_iter().filter(|id| wanted(id)).collect()
    }

    fn examine(&self, judge: &Judge<'_>, program: &Path, id: &OsStr, o: &Options) -> Server {
        let mut s = Server::new(&Screen, id);
        s.pid = pid_of(id.as_bytes());
        let Some(pid) = s.pid else {
            s.unreadable = Some("no process id in its name".to_string());
            return s;
        };
        (s.shim, s.governed) = server_shim(judge, pid);
        // A governed server's shim filters every exec it makes: what its
        // environment holds reaches no window, so it is no finding. One under a
        // shim in audit mode or on another policy is read as a foreign one.
        if s.governed == envpolicy::mux::Governed::Yes {
            return s;
        }
        let entries = not_overwritten(match live_environ::read(pid) {
            Ok(entries) => entries,
            Err(_) => match procfs::read(pid, "environ") {
                Ok(raw) => procfs::split_nul(&raw),
                Err(why) => {
                    s.unreadable = Some(why.describe());
                    return s;
                }
            },
        });
        judge_into(judge, Place::Global, &entries, &mut s.held);
        // What screen keeps is the server's own environment: no env file is
        // read for it afresh, so a stale value is not its finding.
        s.held.retain(|h| h.kind != "stale");
        if o.fix {
            s.removed = settled(pid, unset(program, id, &s.held));
        }
        s
    }

    fn finding_kinds(&self) -> (&'static str, &'static str) {
        ("screen.held", "screen.stale")
    }

    fn global_text(&self) -> &'static str {
        "its environment"
    }

    /// The server's own environment is [`Place::Global`] here, which `--fix`
    /// changes: never reported as this place.
    fn server_process_users(&self) -> &'static str {
        "new windows"
    }
}

/// `PID.NAME` as its PID and NAME (all of it and nothing, without a dot).
fn split_id(id: &[u8]) -> (&[u8], &[u8]) {
    match id.iter().position(|&b| b == b'.') {
        Some(dot) => (&id[..dot], &id[dot + 1..]),
        None => (id, b""),
    }
}

/// The PID of a session `PID.NAME`, when it has one.
fn pid_of(id: &[u8]) -> Option<u32> {
    let dot = id.iter().position(|&b| b == b'.')?;
    std::str::from_utf8(&id[..dot]).ok()?.parse().ok()
}

/// The sessions `screen -ls` lists, as `PID.NAME`.
fn list(program: &Path) -> Vec<OsString> {
    let Ok(out) = Command::new(program)
        .arg("-ls")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
    else {
        return Vec::new();
    };
    out.stdout
        .split(|&b| b == b'\n')
        .filter_map(|l| {
            let start = l.iter().position(|&b| b != b' ' && b != b'\t')?;
            let l = &l[start..];
            let end = l
                .iter()
                .position(|&b| b == b' ' || b == b'\t')
                .unwrap_or(l.len());
            let id = &l[..end];
            pid_of(id)?;
            Some(OsString::from_vec(id.to_vec()))
        })
        .collect()
}

/// How long `--fix` waits for a session to have done its `unsetenv`s.
const UNSET_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// What of `removed` session `pid` no longer holds, once it has had up to
/// [`UNSET_WAIT`] to do the `unsetenv`s. `screen -X` returns once its command
/// is on the session's socket, not once the session has run it, so a fix is
/// only said when the session's environment shows it (a later client's command
/// runs after it either way: the session reads its socket in order).
fn settled(pid: u32, mut removed: Vec<(Place, Vec<u8>)>) -> Vec<(Place, Vec<u8>)> {
    let holds = |entries: &[Vec<u8>], n: &[u8]| {
        entries.iter().any(|e| {
            e.strip_prefix(n)
                .is_some_and(|rest| rest.first() == Some(&b'='))
        })
    };
    let deadline = std::time::Instant::now() + UNSET_WAIT;
    loop {
        // Not readable live: /proc/PID/environ does not change with
        // `unsetenv`, so there is nothing to wait for.
        let Ok(entries) = live_environ::read(pid) else {
            return removed;
        };
        let pending = removed.iter().any(|(_, n)| holds(&entries, n));
        if !pending {
            return removed;
        }
        if std::time::Instant::now() >= deadline {
            removed.retain(|(_, n)| !holds(&entries, n));
            return removed;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `screen -S ID -X unsetenv NAME` for each held name; what was removed.
fn unset(program: &Path, id: &OsStr, held: &[super::Held]) -> Vec<(Place, Vec<u8>)> {
    let mut removed = Vec::new();
    for h in held {
        let Ok(name) = std::str::from_utf8(&h.name) else {
            continue;
        };
        let done = Command::new(program)
            .arg("-S")
            .arg(id)
            .args(["-X", "unsetenv", name])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|st| st.success());
        if done {
            removed.push((Place::Global, h.name.clone()));
        }
    }
    removed
}
