//! tmux servers for `envwrap mux-env`: read with tmux's own client, cleared with
//! `set-environment -u`.
//!
//! A tmux server builds every pane's environment, and that of every process it
//! runs for a command (`run-shell`, `if-shell`, `pipe-pane`), from its global
//! environment and the session's. Per server (every socket of the user's tmux
//! directory, or the ones named):
//! - its global environment and each session's, hidden entries included, are
//!   judged as the environment of a pane;
//! - each pane's process environment (`/proc/PID/environ`): a pane that holds
//!   such a name needs a restart, since no change to the server reaches a
//!   running process;
//! - the server's own process environment, which `pipe-pane` commands get and
//!   no client can change;
//! - `--fix` removes the names from the global and session environments.
//!
//! The tmux clients this runs get an empty environment and `-S SOCKET`. A server
//! that does not answer within [`ANSWER_LIMIT`] is reported and skipped.

use super::{
    judge_into, not_overwritten, removable, server_shim, Held, Judge, Options, Place, Server,
    Servers,
};
use crate::{procfs, value};
use envpolicy::bytes::split_entry;
use envpolicy::mux::{Multiplexer, Socket};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one tmux client may take to answer.
pub const ANSWER_LIMIT: Duration = Duration::from_secs(5);

/// tmux, for [`super::IMPLEMENTATIONS`].
pub(crate) struct Tmux;

impl Servers for Tmux {
    fn row(&self) -> &'static Multiplexer {
        &envpolicy::mux::tmux::MULTIPLEXER
    }

    fn find(&self, _program: &Path, named: &[OsString], quiet: bool) -> Vec<OsString> {
        let sockets: Vec<PathBuf> = if named.is_empty() {
            user_sockets()
        } else {
            named.iter().map(PathBuf::from).collect()
        };
        let mut out = Vec::new();
        for socket in sockets {
            if listens(&socket) {
                out.push(socket.into_os_string());
            } else if !named.is_empty() && !quiet {
                let shown = value::word(socket.as_os_str().as_bytes());
                showln!("no tmux server listens on {shown}");
            }
        }
        out
    }

    fn examine(&self, judge: &Judge<'_>, program: &Path, id: &OsStr, o: &Options) -> Server {
        let mut s = Server::new(&Tmux, id);
        if let Err(why) = read_server(judge, program, o, &mut s) {
            s.unreadable = Some(why);
        }
        s
    }

    fn finding_kinds(&self) -> (&'static str, &'static str) {
        ("tmux.held", "tmux.stale")
    }

    fn global_text(&self) -> &'static str {
        "the global environment"
    }

    fn server_process_users(&self) -> &'static str {
        "pipe-pane commands"
    }
}

/// The process of the tmux server on `socket`, when one answers there.
pub fn server_pid(socket: &Path) -> Option<u32> {
    let client = Client {
        tmux: Path::new("tmux"),
        socket,
    };
    client.pid().ok().flatten()
}

/// True when a server listens on `socket` (a socket file outlives a server that
/// was killed).
fn listens(socket: &Path) -> bool {
    std::os::unix::net::UnixStream::connect(socket).is_ok()
}

/// `TMUX_TMPDIR/tmux-UID/LABEL`, as tmux makes it: the socket `-L LABEL` names.
pub fn label_socket(label: &[u8]) -> PathBuf {
    let tmpdir = std::env::var_os("TMUX_TMPDIR");
    let tmpdir = tmpdir.as_deref().map(OsStrExt::as_bytes);
    socket_path(&envpolicy::mux::tmux::label_socket(tmpdir, label))
}

/// The path of a socket, for this user.
pub fn socket_path(s: &Socket<'_>) -> PathBuf {
    let mut out = vec![0u8; 4096];
    // SAFETY: getuid cannot fail and has no preconditions.
    let uid = unsafe { libc::getuid() };
    let p = s.write_path(uid, &mut out).unwrap_or_default().to_vec();
    PathBuf::from(OsString::from_vec(p))
}

/// Every socket in this user's tmux directory.
fn user_sockets() -> Vec<PathBuf> {
    let dir = label_socket(b"");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_socket()))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

fn read_server(judge: &Judge<'_>, tmux: &Path, o: &Options, s: &mut Server) -> Result<(), String> {
    let socket = PathBuf::from(&s.id);
    let client = Client {
        tmux,
        socket: &socket,
    };
    s.pid = client.pid()?;
    if let Some(pid) = s.pid {
        (s.shim, s.governed) = server_shim(judge, pid);
    }
    // A governed server's shim filters every exec it makes, pipe-pane's and the
    // panes' included: what its environments and its own process hold (names
    // self-scrub left, with their values overwritten) reach no process, so they
    // are no finding. One under a shim in audit mode or on another policy is
    // read as a foreign one.
    if s.governed == envpolicy::mux::Governed::Yes {
        return Ok(());
    }
    let global = environment(&client, &["-g"])?;
    judge_into(judge, Place::Global, &global, &mut s.held);
    for (id, name) in sessions(&client) {
        let env = environment(&client, &["-t", &id])?;
        judge_into(judge, Place::Session { id, name }, &env, &mut s.held);
    }
    if let (Some(pid), true) = (s.pid, !o.quiet || o.warn_server_environ) {
        if let Ok(raw) = procfs::read(pid, "environ") {
            let entries = not_overwritten(procfs::split_nul(&raw));
            judge_into(judge, Place::ServerProcess { pid }, &entries, &mut s.held);
        }
    }
    if !o.quiet {
        for (id, pid) in panes(&client) {
            let Ok(raw) = procfs::read(pid, "environ") else {
                continue;
            };
            let entries = procfs::split_nul(&raw);
            judge_into(judge, Place::Pane { id, pid }, &entries, &mut s.held);
        }
    }
    if o.fix {
        s.removed = remove(&client, &s.held)?;
    }
    Ok(())
}

/// A tmux client of one server.
struct Client<'a> {
    tmux: &'a Path,
    socket: &'a Path,
}

impl Client<'_> {
    /// The server's process, as it says it (`None`: an answer that is no PID).
    fn pid(&self) -> Result<Option<u32>, String> {
        let out = self.run(&["display-message", "-p", "#{pid}"])?;
        Ok(String::from_utf8_lossy(&out).trim().parse().ok())
    }

    /// Run `tmux -S SOCKET ARGS...` with an empty environment; its stdout.
    fn run(&self, args: &[&str]) -> Result<Vec<u8>, String> {
        let mut child = Command::new(self.tmux)
            .arg("-S")
            .arg(self.socket)
            .args(args)
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot run {}: {}",
                    value::word(self.tmux.as_os_str().as_bytes()),
                    envpolicy::error::io_reason(&e)
                )
            })?;
        let started = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if started.elapsed() < ANSWER_LIMIT => {
                    std::thread::sleep(Duration::from_millis(2))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("no answer within {} s", ANSWER_LIMIT.as_secs()));
                }
            }
        }
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            // tmux's own message names the socket or the command, never a value
            // of ours: but it is not ours to vouch for, so it is not shown.
            return Err(format!("tmux {} failed ({})", args[0], out.status));
        }
        Ok(out.stdout)
    }
}

/// The entries of one environment of the server (`-g`, or `-t SESSION`): the
/// ones `show-environment` lists, and the hidden ones (`-h`, tmux 3.2 and
/// later), which tmux gives to no process but keeps, and expands in its
/// configuration and commands. A tmux without `-h` has none.
fn environment(client: &Client<'_>, which: &[&str]) -> Result<Vec<Vec<u8>>, String> {
    let shown = [&["show-environment"], which].concat();
    let mut entries = entries_of(&client.run(&shown)?);
    let hidden = [&["show-environment", "-h"], which].concat();
    entries.extend(entries_of(&client.run(&hidden).unwrap_or_default()));
    Ok(entries)
}

/// `NAME=VALUE` lines of `show-environment` (a `-NAME` line is a name marked for
/// removal: not held).
fn entries_of(listing: &[u8]) -> Vec<Vec<u8>> {
    listing
        .split(|&b| b == b'\n')
        .filter(|l| !l.starts_with(b"-") && split_entry(l).is_some())
        .map(<[u8]>::to_vec)
        .collect()
}

/// Every session: its id and name. (A server with no session left answers
/// list-sessions with an error: none.)
fn sessions(client: &Client<'_>) -> Vec<(String, String)> {
    let out = client
        .run(&["list-sessions", "-F", "#{session_id} #{session_name}"])
        .unwrap_or_default();
    String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(id, name)| (id.to_string(), name.to_string()))
        .collect()
}

/// Every pane: its id and its process.
fn panes(client: &Client<'_>) -> Vec<(String, u32)> {
    let out = client
        .run(&["list-panes", "-a", "-F", "#{pane_id} #{pane_pid}"])
        .unwrap_or_default();
    String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter_map(|(id, pid)| Some((id.to_string(), pid.parse().ok()?)))
        .collect()
}

/// Remove every removable held name with one tmux client: `set-environment -u`,
/// globally or in its session. What was removed.
fn remove(client: &Client<'_>, held: &[Held]) -> Result<Vec<(Place, Vec<u8>)>, String> {
    let mut args: Vec<String> = Vec::new();
    let mut removed = Vec::new();
    for h in held.iter().filter(|h| removable(h)) {
        let Ok(name) = std::str::from_utf8(&h.name) else {
            continue;
        };
        if !args.is_empty() {
            args.push(";".into());
        }
        args.push("set-environment".into());
        match &h.place {
            Place::Session { id, .. } => args.extend(["-t".into(), id.clone()]),
            _ => args.push("-g".into()),
        }
        args.extend(["-u".into(), name.to_string()]);
        removed.push((h.place.clone(), h.name.clone()));
    }
    if !removed.is_empty() {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        client.run(&refs)?;
    }
    Ok(removed)
}
