//! [`TestCommand`]: a builder over `std::process::Command` that runs a real program with
//! a timeout, captures its output, checks the output for seeded secrets, and on failure
//! panics with a report (command line, cwd, env NAMES, status, stdout, stderr) that has
//! been passed through [`Secrets::redact`], so a failing test can never print a value.
//!
//! Modelled on ripgrep's `tests/util.rs` `TestCommand`.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::secrets::Secrets;

/// How long a command may run before it (and its process group) is killed.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// After the command exits, how long a descendant may keep its stdout/stderr open
/// before the harness stops waiting (and kills the command's process group).
const PIPE_GRACE: Duration = Duration::from_secs(5);

#[derive(Clone, Debug)]
enum EnvOp {
    Set(OsString, OsString),
    Remove(OsString),
    Clear,
}

/// A command to run under test. See the module docs.
#[derive(Clone)]
pub struct TestCommand {
    program: OsString,
    args: Vec<OsString>,
    env_ops: Vec<EnvOp>,
    cwd: Option<PathBuf>,
    stdin: Option<Vec<u8>>,
    timeout: Duration,
    secrets: Option<Secrets>,
    allow_stdout_secrets: bool,
    allow_stderr_secrets: bool,
    planted: bool,
}

impl std::fmt::Debug for TestCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl TestCommand {
    /// A command with no secrets attached: output is not checked and reports are not
    /// redacted. Prefer `Sandbox::cmd`, which attaches the sandbox's secrets.
    pub fn new(program: impl AsRef<OsStr>) -> TestCommand {
        TestCommand {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            env_ops: Vec::new(),
            cwd: None,
            stdin: None,
            timeout: DEFAULT_TIMEOUT,
            secrets: None,
            allow_stdout_secrets: false,
            allow_stderr_secrets: false,
            planted: false,
        }
    }

    /// Attach the secrets used to check the output and to redact reports.
    pub fn secrets(&mut self, secrets: &Secrets) -> &mut Self {
        self.secrets = Some(secrets.clone());
        self
    }

    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    pub fn env(&mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Self {
        self.env_ops.push(EnvOp::Set(
            name.as_ref().to_owned(),
            value.as_ref().to_owned(),
        ));
        self
    }

    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        for (k, v) in vars {
            self.env(k, v);
        }
        self
    }

    /// Put every seeded secret of the attached [`Secrets`] into the child's environment.
    pub fn env_secrets(&mut self) -> &mut Self {
        let secrets = self
            .secrets
            .clone()
            .expect("env_secrets() needs secrets attached");
        for (k, v) in secrets.env_pairs() {
            self.env(k, v);
        }
        self
    }

    pub fn env_remove(&mut self, name: impl AsRef<OsStr>) -> &mut Self {
        self.env_ops.push(EnvOp::Remove(name.as_ref().to_owned()));
        self
    }

    pub fn env_clear(&mut self) -> &mut Self {
        self.env_ops.push(EnvOp::Clear);
        self
    }

    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.cwd = Some(dir.as_ref().to_owned());
        self
    }

    /// Bytes written to the child's stdin (otherwise stdin is /dev/null).
    pub fn stdin(&mut self, bytes: impl Into<Vec<u8>>) -> &mut Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// Kill the command's whole process group after this long (default 60 s).
    pub fn timeout(&mut self, timeout: Duration) -> &mut Self {
        self.timeout = timeout;
        self
    }

    /// Opt out of the automatic secret check for both stdout and stderr: for control
    /// runs without the shim, where a value is EXPECTED to show. Reports stay redacted.
    pub fn allow_secrets_in_output(&mut self) -> &mut Self {
        self.allow_stdout_secrets = true;
        self.allow_stderr_secrets = true;
        self
    }

    /// Opt out of the automatic secret check for stdout only.
    pub fn allow_secrets_in_stdout(&mut self) -> &mut Self {
        self.allow_stdout_secrets = true;
        self
    }

    /// Opt out of the automatic secret check for stderr only.
    pub fn allow_secrets_in_stderr(&mut self) -> &mut Self {
        self.allow_stderr_secrets = true;
        self
    }

    /// For the harness's own tests of the leak check only: this command prints a
    /// seeded value ON PURPOSE, to see the check fail. Its output is still checked,
    /// but the secret sweep does not collect it (`collect`; it is listed in
    /// `skipped.tsv` as planted).
    pub fn planted_leak(&mut self) -> &mut Self {
        self.planted = true;
        self
    }

    pub fn get_program(&self) -> &OsStr {
        &self.program
    }

    pub fn get_args(&self) -> &[OsString] {
        &self.args
    }

    /// The command line, cwd and environment changes (NAMES only), REDACTED.
    pub fn describe(&self) -> String {
        let mut s = Vec::new();
        s.extend_from_slice(b"command: ");
        s.extend_from_slice(&shell_quote(self.program.as_bytes()));
        for a in &self.args {
            s.push(b' ');
            s.extend_from_slice(&shell_quote(a.as_bytes()));
        }
        s.extend_from_slice(b"\ncwd: ");
        match &self.cwd {
            Some(d) => s.extend_from_slice(d.as_os_str().as_bytes()),
            None => s.extend_from_slice(b"(inherited)"),
        }
        s.extend_from_slice(b"\nenv: ");
        let cleared = self.env_ops.iter().any(|o| matches!(o, EnvOp::Clear));
        s.extend_from_slice(if cleared {
            b"cleared, then" as &[u8]
        } else {
            b"inherited"
        });
        let mut set: Vec<&[u8]> = Vec::new();
        let mut removed: Vec<&[u8]> = Vec::new();
        for op in &self.env_ops {
            match op {
                EnvOp::Set(k, _) => set.push(k.as_bytes()),
                EnvOp::Remove(k) => removed.push(k.as_bytes()),
                EnvOp::Clear => {}
            }
        }
        for (label, names) in [(&b"; set: "[..], set), (&b"; removed: "[..], removed)] {
            if !names.is_empty() {
                s.extend_from_slice(label);
                s.extend_from_slice(&names.join(&b", "[..]));
            }
        }
        s.extend_from_slice(b" (values not shown)");
        self.redact(&s)
    }

    fn redact(&self, bytes: &[u8]) -> String {
        match &self.secrets {
            Some(secrets) => secrets.redact(bytes),
            None => String::from_utf8_lossy(bytes).into_owned(),
        }
    }

    /// Refuse, loudly, any tmux invocation that could reach the default server.
    fn guard_tmux(&self) {
        let base = Path::new(&self.program)
            .file_name()
            .map(|n| n.as_bytes().to_vec());
        if base.as_deref() != Some(b"tmux") {
            return;
        }
        let has_socket = self.args.iter().any(|a| {
            let a = a.as_bytes();
            a == b"-L" || a == b"-S" || a.starts_with(b"-L") || a.starts_with(b"-S")
        });
        if !has_socket {
            panic!(
                "refusing to run tmux without -L/-S (it would reach the default server); \
                 use Sandbox::tmux()\n{}",
                self.describe()
            );
        }
    }

    fn build(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args);
        for op in &self.env_ops {
            match op {
                EnvOp::Set(k, v) => {
                    cmd.env(k, v);
                }
                EnvOp::Remove(k) => {
                    cmd.env_remove(k);
                }
                EnvOp::Clear => {
                    cmd.env_clear();
                }
            }
        }
        if let Some(d) = &self.cwd {
            cmd.current_dir(d);
        }
        // Own process group, so a timeout can kill everything the command started
        // (except daemons that call setsid, such as a tmux server: Sandbox kills those).
        cmd.process_group(0);
        cmd
    }

    /// Run to completion (or timeout) and capture the output. Panics, with a redacted
    /// report, if the program cannot be started or if a seeded value appears in an
    /// output that was not explicitly allowed to hold one.
    #[track_caller]
    pub fn run(&self) -> Outcome {
        self.guard_tmux();
        let mut cmd = self.build();
        cmd.stdin(if self.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        cmd.stdout(Stdio::piped());
        cmd.stderr(Stdio::piped());
        let start = Instant::now();
        // ETXTBSY: a test that just wrote an executable (fs::copy) can race another
        // test thread's fork, whose child holds the write descriptor until it execs.
        // That is the harness's race, not the program's: try again briefly.
        let mut attempts = 0;
        let mut child = loop {
            match cmd.spawn() {
                Ok(c) => break c,
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && attempts < 50 => {
                    attempts += 1;
                    thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("could not start the command: {e}\n{}", self.describe()),
            }
        };
        // The command leads its own process group (`process_group(0)`), whose ID is
        // its PID. It is reaped only at the end, after every signal to that group:
        // until then no other process can have that PID, so the group is ours (see
        // `pidfd::signal_group_of_child`).

        // stdin writer: a child that never reads must not block us, hence a thread.
        if let (Some(bytes), Some(mut pipe)) = (self.stdin.clone(), child.stdin.take()) {
            thread::spawn(move || {
                let _ = pipe.write_all(&bytes);
            });
        }
        let (tx, rx) = mpsc::channel::<(u8, Vec<u8>)>();
        spawn_reader(1, child.stdout.take().expect("stdout piped"), tx.clone());
        spawn_reader(2, child.stderr.take().expect("stderr piped"), tx);

        let deadline = start + self.timeout;
        let mut timed_out = false;
        loop {
            match crate::pidfd::exit_status_unreaped(&mut child) {
                Ok(Some(_)) => break,
                Ok(None) => {}
                Err(e) => panic!("waiting for the command failed: {e}\n{}", self.describe()),
            }
            if Instant::now() >= deadline {
                timed_out = true;
                crate::pidfd::signal_group_of_child(&mut child, libc::SIGKILL);
                break;
            }
            let elapsed = start.elapsed();
            thread::sleep(if elapsed < Duration::from_millis(50) {
                Duration::from_millis(1)
            } else {
                Duration::from_millis(10)
            });
        }

        let (mut stdout, mut stderr) = (None, None);
        let mut note = None;
        let pipe_deadline = Instant::now()
            + PIPE_GRACE.min(
                deadline
                    .saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(200)),
            );
        let mut collect = |rx: &mpsc::Receiver<(u8, Vec<u8>)>, until: Instant| {
            while stdout.is_none() || stderr.is_none() {
                let left = until.saturating_duration_since(Instant::now());
                match rx.recv_timeout(left) {
                    Ok((1, b)) => stdout = Some(b),
                    Ok((_, b)) => stderr = Some(b),
                    Err(_) => return false,
                }
            }
            true
        };
        if !collect(&rx, pipe_deadline) {
            note = Some(
                "the command exited but a descendant kept stdout/stderr open; \
                 its process group was killed and the output may be incomplete"
                    .to_string(),
            );
            crate::pidfd::signal_group_of_child(&mut child, libc::SIGKILL);
            collect(&rx, Instant::now() + Duration::from_secs(2));
        }
        // Reaped only now, after the last signal to its group.
        let status = match child.wait() {
            Ok(st) => st,
            Err(e) => panic!("waiting for the command failed: {e}\n{}", self.describe()),
        };
        let outcome = Outcome {
            status,
            stdout: stdout.unwrap_or_default(),
            stderr: stderr.unwrap_or_default(),
            timed_out,
            elapsed: start.elapsed(),
            note,
            description: self.describe(),
            secrets: self.secrets.clone(),
        };
        // Collected before the check, so that a leak is also in the sweep's files.
        let skip = |allowed: bool| match (self.planted, allowed) {
            (true, _) => Some("planted"),
            (false, true) => Some("allowed"),
            (false, false) => None,
        };
        crate::collect::record_command(
            &outcome.description,
            [
                ("stdout", &outcome.stdout, skip(self.allow_stdout_secrets)),
                ("stderr", &outcome.stderr, skip(self.allow_stderr_secrets)),
            ],
        );
        self.check_output(&outcome);
        outcome
    }

    #[track_caller]
    fn check_output(&self, outcome: &Outcome) {
        let Some(secrets) = &self.secrets else { return };
        let mut problems = Vec::new();
        for (stream, bytes, allowed) in [
            ("stdout", &outcome.stdout, self.allow_stdout_secrets),
            ("stderr", &outcome.stderr, self.allow_stderr_secrets),
        ] {
            if allowed {
                continue;
            }
            for f in secrets.find_all(bytes) {
                problems.push(format!(
                    "seeded secret leaked: the value of {} was found in the {stream} of the command at byte {}",
                    f.name, f.offset
                ));
            }
        }
        if !problems.is_empty() {
            outcome.fail(&format!(
                "{}\n(no output of our tools may hold a value; for a control run that \
                 expects one, use .allow_secrets_in_output())",
                problems.join("\n")
            ));
        }
    }

    /// Run and require exit status 0 (panics with the redacted report otherwise).
    #[track_caller]
    pub fn expect_success(&self) -> Outcome {
        let o = self.run();
        if o.timed_out || !o.status.success() {
            o.fail("expected the command to succeed");
        }
        o
    }

    /// Run and require exit code `code`.
    #[track_caller]
    pub fn expect_exit(&self, code: i32) -> Outcome {
        let o = self.run();
        if o.timed_out || o.status.code() != Some(code) {
            o.fail(&format!("expected exit code {code}"));
        }
        o
    }

    /// Run and require a non-zero exit (or death by signal), but not a timeout.
    #[track_caller]
    pub fn expect_failure(&self) -> Outcome {
        let o = self.run();
        if o.timed_out || o.status.success() {
            o.fail("expected the command to fail");
        }
        o
    }

    /// Start the command in the background, stdio on /dev/null, and return once its
    /// exec has completed (its /proc/PID/cmdline is readable and non-empty). The returned
    /// handle kills the command's process group and reaps it when dropped.
    #[track_caller]
    pub fn spawn_background(&self) -> Background {
        self.guard_tmux();
        let mut cmd = self.build();
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) => panic!("could not start the command: {e}\n{}", self.describe()),
        };
        // spawn() can return while the kernel is still inside execve: for a moment
        // /proc/PID/cmdline shows our own (pre-exec) argv, then reads empty, then the new
        // argv. Wait for the new one, so a test that scans /proc at once sees it.
        let pid = child.id();
        let ours = crate::procfs::try_proc_cmdline(std::process::id()).unwrap_or_default();
        crate::wait::wait_for(
            || match crate::procfs::try_proc_cmdline(pid) {
                Ok(args) => !args.is_empty() && args != ours,
                Err(_) => true, // already gone
            },
            Duration::from_secs(5),
        );
        Background {
            child: Some(child),
            description: self.describe(),
        }
    }
}

fn spawn_reader(tag: u8, mut pipe: impl Read + Send + 'static, tx: mpsc::Sender<(u8, Vec<u8>)>) {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        let _ = tx.send((tag, buf));
    });
}

/// Quote one argument for display the way a POSIX shell would read it back.
fn shell_quote(arg: &[u8]) -> Vec<u8> {
    let safe = !arg.is_empty()
        && arg
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%^".contains(b));
    if safe {
        return arg.to_vec();
    }
    let mut out = vec![b'\''];
    for &b in arg {
        if b == b'\'' {
            out.extend_from_slice(b"'\\''");
        } else {
            out.push(b);
        }
    }
    out.push(b'\'');
    out
}

/// What a finished [`TestCommand`] did.
pub struct Outcome {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// True when the harness killed the command at its timeout.
    pub timed_out: bool,
    pub elapsed: Duration,
    /// Anything unusual the harness noticed (a descendant holding the pipes open).
    pub note: Option<String>,
    description: String,
    secrets: Option<Secrets>,
}

impl std::fmt::Debug for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.report())
    }
}

impl Outcome {
    /// stdout, lossily decoded. May hold values when the check was opted out of: do
    /// not print it; use [`Outcome::fail`] or [`Outcome::report`].
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// The full report (command, cwd, env names, status, stdout, stderr), REDACTED.
    pub fn report(&self) -> String {
        let status = if self.timed_out {
            format!(
                "killed after timeout ({:?}); {}",
                self.elapsed,
                describe_status(self.status)
            )
        } else {
            format!("{} after {:?}", describe_status(self.status), self.elapsed)
        };
        let mut raw = Vec::new();
        raw.extend_from_slice(self.description.as_bytes());
        raw.extend_from_slice(format!("\nstatus: {status}\n").as_bytes());
        if let Some(n) = &self.note {
            raw.extend_from_slice(format!("note: {n}\n").as_bytes());
        }
        for (name, bytes) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            raw.extend_from_slice(format!("--- {name} ({} bytes) ---\n", bytes.len()).as_bytes());
            raw.extend_from_slice(bytes);
            if !bytes.is_empty() && !bytes.ends_with(b"\n") {
                raw.push(b'\n');
            }
        }
        raw.extend_from_slice(b"--- end ---");
        match &self.secrets {
            Some(s) => s.redact(&raw),
            None => String::from_utf8_lossy(&raw).into_owned(),
        }
    }

    /// Panic with `why` and the redacted report.
    #[track_caller]
    pub fn fail(&self, why: &str) -> ! {
        let why = match &self.secrets {
            Some(s) => s.redact(why.as_bytes()),
            None => why.to_string(),
        };
        panic!("\n{why}\n{}\n", self.report())
    }

    /// Assert a condition about the outcome, with the redacted report on failure.
    #[track_caller]
    pub fn check(&self, cond: bool, why: &str) -> &Self {
        if !cond {
            self.fail(why);
        }
        self
    }
}

fn describe_status(st: ExitStatus) -> String {
    match (st.code(), st.signal()) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(sig)) => format!(
            "killed by signal {sig}{}",
            if st.core_dumped() {
                " (core dumped)"
            } else {
                ""
            }
        ),
        _ => format!("{st}"),
    }
}

/// A command running in the background. Dropping it kills its process group.
pub struct Background {
    child: Option<Child>,
    description: String,
}

impl Background {
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(0)
    }

    /// Redacted description of the command.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Wait up to `timeout` for the command to exit by itself. It is not reaped
    /// (see [`Background::kill`]).
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let child = self.child.as_mut()?;
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(st)) = crate::pidfd::exit_status_unreaped(child) {
                return Some(st);
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// Kill the process group and reap the command. The command leads the group
    /// and is reaped only here, after the signal, so the group's ID is still its
    /// own (`pidfd::signal_group_of_child`).
    pub fn kill(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        crate::pidfd::signal_group_of_child(&mut child, libc::SIGKILL);
        child.wait().ok()
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(shell_quote(b"abc"), b"abc");
        assert_eq!(shell_quote(b"a b"), b"'a b'");
        assert_eq!(shell_quote(b"it's"), b"'it'\\''s'");
        assert_eq!(shell_quote(b""), b"''");
    }
}
