//! tmux on the sandbox's own socket. Every invocation passes `-L <socket>` (and
//! `-f /dev/null`, so the user's config cannot change behaviour), with `TMUX_TMPDIR` set
//! to the sandbox so the socket lives there, and `TMUX` unset. The default server is
//! never contacted: `TestCommand` refuses to run a `tmux` without `-L`/`-S`.
//!
//! Helpers read the server's PID, a pane's PID, and a session's environment as
//! `tmux show-environment` prints it (`NAME=VALUE`, or `-NAME` for a removed name).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::command::TestCommand;
use crate::procfs::{
    all_pids, pid_alive, proc_comm, proc_ppid, try_proc_cmdline, try_proc_environ_raw,
};
use crate::sandbox::Sandbox;
use crate::wait::wait_for;

/// The directory holding the user's DEFAULT tmux sockets (`$TMUX_TMPDIR` or /tmp, then
/// `tmux-UID`), for checking that tests never created or used one.
pub fn default_tmux_socket_dir() -> PathBuf {
    let base = std::env::var_os("TMUX_TMPDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    base.join(format!("tmux-{}", uid()))
}

fn uid() -> u32 {
    // SAFETY: getuid(2) cannot fail and touches no memory.
    unsafe { libc::getuid() }
}

/// A session's (or the global) environment as tmux reports it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct TmuxEnvironment {
    /// `NAME=VALUE` lines, in order.
    pub set: Vec<(String, String)>,
    /// `-NAME` lines: names marked for removal from new panes.
    pub removed: Vec<String>,
}

impl std::fmt::Debug for TmuxEnvironment {
    /// Names only: values may be secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TmuxEnvironment")
            .field("set", &self.set.iter().map(|(n, _)| n).collect::<Vec<_>>())
            .field("removed", &self.removed)
            .finish()
    }
}

impl TmuxEnvironment {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.set
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn is_set(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    pub fn is_removed(&self, name: &str) -> bool {
        self.removed.iter().any(|n| n == name)
    }
}

/// Parse `tmux show-environment` output.
pub fn parse_show_environment(out: &[u8]) -> TmuxEnvironment {
    let mut env = TmuxEnvironment::default();
    for line in String::from_utf8_lossy(out).lines() {
        if let Some(name) = line.strip_prefix('-') {
            env.removed.push(name.to_string());
        } else if let Some((n, v)) = line.split_once('=') {
            env.set.push((n.to_string(), v.to_string()));
        }
    }
    env
}

impl Sandbox {
    /// The socket name passed with `-L`: `envshim-<pid>-<counter>`.
    pub fn tmux_socket(&self) -> &str {
        self.socket_name()
    }

    /// Where the socket file lives: `<sandbox>/tmux-<uid>/<socket>`.
    pub fn tmux_socket_path(&self) -> PathBuf {
        self.path()
            .join(format!("tmux-{}", uid()))
            .join(self.socket_name())
    }

    /// The global arguments every tmux invocation needs: `-L <socket> -f /dev/null`.
    /// For building a tmux command line behind another program (envwrap, bash -c).
    pub fn tmux_args(&self) -> Vec<String> {
        vec![
            "-L".into(),
            self.socket_name().to_string(),
            "-f".into(),
            "/dev/null".into(),
        ]
    }

    /// The environment changes for tmux: `TMUX_TMPDIR` = sandbox, `TMUX` removed (None).
    pub fn tmux_env(&self) -> Vec<(&'static str, Option<OsString>)> {
        vec![
            ("TMUX_TMPDIR", Some(self.path().as_os_str().to_owned())),
            ("TMUX", None),
        ]
    }

    /// `tmux -L <socket> -f /dev/null`, ready for a subcommand.
    pub fn tmux(&self) -> TestCommand {
        let mut c = self.cmd("tmux");
        c.args(self.tmux_args()).timeout(Duration::from_secs(20));
        c
    }

    /// The PID of this sandbox's tmux server, if one is running with a session.
    pub fn server_pid(&self) -> Option<u32> {
        let o = self.tmux().args(["list-sessions", "-F", "#{pid}"]).run();
        if !o.status.success() {
            return None;
        }
        o.stdout_str().lines().next()?.trim().parse().ok()
    }

    /// The PID of the process in pane `target` (`session`, `session:0.0`, ...).
    #[track_caller]
    pub fn pane_pid(&self, target: &str) -> u32 {
        let o = self
            .tmux()
            .args(["display-message", "-p", "-t", target, "#{pane_pid}"])
            .expect_success();
        match o.stdout_str().trim().parse() {
            Ok(p) => p,
            Err(_) => o.fail(&format!("no pane pid for target {target:?}")),
        }
    }

    /// `tmux show-environment -t SESSION`: the set `(NAME, VALUE)` pairs. The output is
    /// checked for seeded values like any other (a session holding one fails the test).
    #[track_caller]
    pub fn show_environment(&self, session: &str) -> Vec<(String, String)> {
        self.tmux_environment(Some(session), false).set
    }

    /// `show-environment -t SESSION`, or `-g` when `session` is None, with removed names.
    /// `allow_secrets` opts out of the output check (control runs without the shim).
    #[track_caller]
    pub fn tmux_environment(&self, session: Option<&str>, allow_secrets: bool) -> TmuxEnvironment {
        let mut c = self.tmux();
        c.arg("show-environment");
        match session {
            Some(s) => c.args(["-t", s]),
            None => c.arg("-g"),
        };
        if allow_secrets {
            c.allow_secrets_in_stdout();
        }
        parse_show_environment(&c.expect_success().stdout)
    }

    /// Kill this sandbox's tmux servers, if any, and wait for them to be gone. Never
    /// panics (it runs in Drop). Covers: the server on our `-L` socket; a server a nested
    /// `tmux` (without `-L`) started on a socket inside the sandbox; our socket name in
    /// the default directory (when a policy stripped `TMUX_TMPDIR`). Falls back to
    /// SIGKILL of the server processes found by [`Sandbox::find_server_processes`].
    pub fn kill_tmux_server(&self) {
        let mut targets: Vec<u32> = self.find_server_processes();
        let sock_dir = self.path().join(format!("tmux-{}", uid()));
        let in_default = default_tmux_socket_dir().join(self.socket_name()).exists();
        if targets.is_empty() && !sock_dir.exists() && !in_default {
            return; // no tmux was ever started here: skip the kill-server runs
        }
        self.tmux_raw(&self.tmux_args(), &["kill-server"], true);
        if let Ok(rd) = std::fs::read_dir(&sock_dir) {
            for e in rd.flatten() {
                if e.file_name() != self.socket_name() {
                    let path = e.path().to_string_lossy().into_owned();
                    self.tmux_raw(&["-S".to_string(), path], &["kill-server"], true);
                }
            }
        }
        if in_default {
            self.tmux_raw(&self.tmux_args(), &["kill-server"], false);
        }
        let gone = wait_for(
            || targets.iter().all(|&p| !pid_alive(p)),
            Duration::from_secs(5),
        );
        if !gone {
            targets.retain(|&p| pid_alive(p));
            for &p in &targets {
                // Held by a pidfd, then proven again to be a server of this sandbox
                // (its PID may have been handed out again since it was found).
                crate::pidfd::signal_if_ours(p, libc::SIGKILL, |p| self.is_server_process(p));
            }
            wait_for(
                || targets.iter().all(|&p| !pid_alive(p)),
                Duration::from_secs(5),
            );
        }
    }

    /// Live tmux server processes of this sandbox: comm `tmux: server`, and a command
    /// line naming our socket or an environment with `TMUX_TMPDIR` = the sandbox.
    pub fn find_server_processes(&self) -> Vec<u32> {
        let servers = all_pids()
            .into_iter()
            .filter(|&p| self.is_server_process(p))
            .filter(|&p| pid_alive(p))
            .collect::<Vec<u32>>();
        // A server's child between fork and exec (a pane being started) also looks like
        // a server: keep only the processes whose parent is not itself one of them.
        let parents: Vec<Option<u32>> = servers.iter().map(|&p| proc_ppid(p)).collect();
        servers
            .iter()
            .zip(parents)
            .filter(|(_, ppid)| !ppid.is_some_and(|pp| servers.contains(&pp)))
            .map(|(&p, _)| p)
            .collect()
    }

    /// Whether PID is a tmux server of this sandbox (or one's child between fork and
    /// exec): comm `tmux: server`, and a command line naming our socket or
    /// `TMUX_TMPDIR` = the sandbox in its environment. Both are this sandbox's own:
    /// the socket name is matched whole (`envshim-P-1` does not name
    /// `envshim-P-10`), the sandbox's path is unique.
    fn is_server_process(&self, p: u32) -> bool {
        let sock = self.socket_name().as_bytes();
        let names_socket = |a: &[u8]| {
            a.windows(sock.len())
                .enumerate()
                .any(|(i, w)| w == sock && !a.get(i + sock.len()).is_some_and(u8::is_ascii_digit))
        };
        proc_comm(p).is_some_and(|c| c.starts_with("tmux") && c.contains("server"))
            && (try_proc_cmdline(p).is_ok_and(|args| args.iter().any(|a| names_socket(a)))
                || try_proc_environ_raw(p).is_ok_and(|env| {
                    let mut entry = b"TMUX_TMPDIR=".to_vec();
                    entry.extend_from_slice(self.path().as_os_str().as_encoded_bytes());
                    env.contains(&entry)
                }))
    }

    /// Run tmux on our socket without the harness (no panics, bounded time).
    /// `sandbox_tmpdir`: set TMUX_TMPDIR to the sandbox (else leave it as inherited).
    fn tmux_raw(&self, global: &[String], args: &[&str], sandbox_tmpdir: bool) -> bool {
        let mut cmd = Command::new("tmux");
        cmd.args(global)
            .args(args)
            .current_dir(self.path())
            .env_remove("TMUX");
        if sandbox_tmpdir {
            cmd.env("TMUX_TMPDIR", self.path());
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let Ok(mut child) = cmd.spawn() else {
            return false;
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match child.try_wait() {
                Ok(Some(st)) => return st.success(),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return false;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse() {
        let env = parse_show_environment(b"A=1\n-GH_TOKEN\nB=x=y\nEMPTY=\n");
        assert_eq!(env.get("A"), Some("1"));
        assert_eq!(env.get("B"), Some("x=y"));
        assert_eq!(env.get("EMPTY"), Some(""));
        assert!(env.is_removed("GH_TOKEN"));
        assert!(!env.is_set("GH_TOKEN"));
    }
}
