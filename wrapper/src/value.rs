//! How a value is shown: never its bytes, only its length and the credential shape
//! it has, if any: `<40 bytes, github token>`, `<12 bytes>`.
//!
//! Every tool goes through this module to mention a value or an argument that
//! may hold one.

use envpolicy::shape::{find_shape, ShapeSet};
use envpolicy::shown;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::Mutex;

/// `<N bytes>` or `<N bytes, SHAPE>`.
pub fn describe(value: &[u8]) -> String {
    shown::described(value).to_string()
}

/// The description of the first token shape in `value` (every shape is looked
/// for, whatever a policy enables: this is for people reading a report).
pub fn shape(value: &[u8]) -> Option<&'static str> {
    find_shape(value, ShapeSet::ALL).map(|m| m.shape.describe())
}

/// An argument or file name for a message: the text itself when it holds no token
/// shape and looks like a name, else its description ([`envpolicy::shown`], the
/// rule the shim's messages follow too).
pub fn word(text: &[u8]) -> String {
    shown::word(text).to_string()
}

/// What envwrap's messages must not show: the credential values of its own
/// environment and of the environments it builds, judged by the policy in force
/// (the built-in default until `judge_with`). Worked out at the first message
/// after a change, not at every line (envwrap never changes its own
/// environment).
struct Known {
    policy: Option<envpolicy::Compiled>,
    /// Environments envwrap builds for a child besides its own (`NAME=VALUE`
    /// operands, an env file).
    envs: Vec<Vec<u8>>,
    /// The values of `[[secret]]`s envwrap read (`secret_source`): redacted
    /// whatever the policy says of their names.
    secrets: Vec<Vec<u8>>,
    /// The values, once worked out.
    values: Option<Vec<Vec<u8>>>,
    /// The credential values of the exec a supervisor is answering
    /// ([`Answering`]): redacted while it answers, then forgotten.
    answering: Vec<Vec<u8>>,
}

static KNOWN: Mutex<Known> = Mutex::new(Known {
    policy: None,
    envs: Vec::new(),
    secrets: Vec::new(),
    values: None,
    answering: Vec::new(),
});

impl Known {
    /// Every value a message must not show: those worked out (once after a
    /// change), and those of the exec being answered.
    fn values(&mut self) -> Values<'_> {
        let Known {
            policy,
            envs,
            secrets,
            values,
            answering,
        } = self;
        let worked_out = values.get_or_insert_with(|| {
            let compiled = policy.get_or_insert_with(envpolicy::load::builtin_default);
            let own: Vec<Vec<u8>> = std::env::vars_os()
                .map(|(n, v)| [n.as_bytes(), b"=", v.as_bytes()].concat())
                .collect();
            let mut found = credential_values(own.iter().chain(envs.iter()), &[&compiled.policy()]);
            found.extend(secrets.iter().cloned());
            found
        });
        Values(worked_out, answering)
    }
}

/// The values of the entries of `entries` that any of `policies` calls a
/// credential.
fn credential_values<'e>(
    entries: impl Iterator<Item = &'e Vec<u8>>,
    policies: &[&envpolicy::compiled::Policy<'_>],
) -> Vec<Vec<u8>> {
    credentials(entries, policies)
        .map(|(_, v)| v.to_vec())
        .collect()
}

/// The entries of `entries` that any of `policies` calls a credential, as
/// name and value: what envwrap's messages hide, and what `--mask` masks.
pub fn credentials<'e, 'p>(
    entries: impl Iterator<Item = &'e Vec<u8>> + 'p,
    policies: &'p [&'p envpolicy::compiled::Policy<'_>],
) -> impl Iterator<Item = (&'e [u8], &'e [u8])> + 'p
where
    'e: 'p,
{
    entries
        .filter_map(|e| envpolicy::bytes::split_entry(e))
        .filter(|(n, v)| policies.iter().any(|p| shown::is_secret(Some(p), n, v)))
}

/// Lists of values, as `shown::redact` asks for them.
struct Values<'a>(&'a [Vec<u8>], &'a [Vec<u8>]);

impl shown::Secrets for Values<'_> {
    fn each(&self, f: &mut dyn FnMut(&[u8])) {
        for v in self.0.iter().chain(self.1) {
            f(v);
        }
    }
}

/// While it lives, every message also redacts the credential values of
/// environments envwrap neither has nor built: those of an exec another
/// process makes, which `envwrap --supervise` is answering (the child's and
/// its caller's), judged by `policies` (the user layer's and the managed
/// layer's: a value either calls a credential is hidden). A variable *name*
/// that holds such a value is hidden with it.
pub struct Answering(());

impl Answering {
    pub fn new(envs: &[&[Vec<u8>]], policies: &[&envpolicy::compiled::Policy<'_>]) -> Answering {
        let values = credential_values(envs.iter().flat_map(|env| env.iter()), policies);
        let mut k = KNOWN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        k.answering = values;
        Answering(())
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        let mut k = KNOWN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        k.answering.clear();
    }
}

/// Judge what messages must not show with `policy` from now on.
pub fn judge_with(policy: &envpolicy::Compiled) {
    let mut k = KNOWN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    k.policy = Some(policy.clone());
    k.values = None;
}

/// Entries of an environment envwrap builds, to redact in its messages too.
pub fn learn_env(env: &[Vec<u8>]) {
    let mut k = KNOWN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    k.envs.extend(env.iter().cloned());
    k.values = None;
}

/// Values of secrets envwrap read from their sources, to redact in its
/// messages from now on (a secret's value is in no environment envwrap was
/// given, so [`learn_env`] cannot find it).
pub fn learn_secret_values<'v>(values: impl Iterator<Item = &'v [u8]>) {
    let mut k = KNOWN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    k.secrets.extend(values.map(<[u8]>::to_vec));
    k.values = None;
}

/// `text` as every message of envwrap writes it: through `shown::redact`, the
/// one writer of every front end, with every token shape and the value of every
/// credential envwrap knows of ([`Known`]) replaced by its description.
pub fn redacted(text: &str) -> String {
    let mut k = KNOWN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    envpolicy::outcome::redacted_by(text.as_bytes(), &k.values())
}

/// One line on stderr, [`redacted`]: every message envwrap writes goes through
/// this (the `say!` macro), never through `eprintln!` (clippy.toml disallows it).
pub fn say_line(text: &str) {
    use std::io::Write;
    let mut line = redacted(text);
    line.push('\n');
    if let Err(e) = std::io::stderr().write_all(line.as_bytes()) {
        failed_write(&e);
    }
}

/// The first write to stdout or stderr that failed (other than a closed pipe,
/// which ends the process at once: [`end_by_sigpipe`]), as its reason.
static WRITE_FAILED: Mutex<Option<String>> = Mutex::new(None);

/// Something was written to stdout: Rust's stdout reports success on a closed
/// descriptor (EBADF is treated as a sink), so [`finish_output`] asks the
/// descriptor itself.
static WROTE_STDOUT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Was stdout closed when envwrap started (`envwrap --help >&-`)? The Rust
/// runtime opens `/dev/null` in place of a closed standard descriptor before
/// `main`, so every write to it "succeeds"; [`note_closed_stdout`] looks
/// first, from `.init_array`, which runs before the runtime's start.
fn stdout_was_closed() -> bool {
    STDOUT_CLOSED_AT_START.load(std::sync::atomic::Ordering::Relaxed)
}

static STDOUT_CLOSED_AT_START: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

extern "C" fn note_closed_stdout() {
    // SAFETY: F_GETFD on a descriptor number reads its flags and nothing else;
    // it fails with EBADF when the descriptor is not open.
    if unsafe { libc::fcntl(1, libc::F_GETFD) } == -1 {
        STDOUT_CLOSED_AT_START.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Run before the Rust runtime's start (and so before it fills a closed fd 1).
#[used]
#[link_section = ".init_array"]
static NOTE_CLOSED_STDOUT: extern "C" fn() = note_closed_stdout;

fn wrote_stdout() {
    WROTE_STDOUT.store(true, std::sync::atomic::Ordering::Relaxed);
}

fn failed_write(e: &std::io::Error) {
    let mut first = WRITE_FAILED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if first.is_none() {
        *first = Some(envpolicy::error::io_reason(e));
    }
}

/// The end of every tool and of the run mode that exits (not one that execs):
/// stdout flushed, and a write that failed (a full disk, a closed descriptor,
/// EIO) made the exit status 125 with one message, as GNU env does, where the
/// tool would have reported success. A reader that went away ends the
/// process by SIGPIPE, as before. A status that is not success stands.
pub fn finish_output(code: std::process::ExitCode) -> std::process::ExitCode {
    use std::io::Write;
    match std::io::stdout().flush() {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => end_by_sigpipe(),
        Err(e) => failed_write(&e),
        Ok(()) => {}
    }
    if WROTE_STDOUT.load(std::sync::atomic::Ordering::Relaxed) && stdout_was_closed() {
        failed_write(&std::io::Error::from_raw_os_error(libc::EBADF));
    }
    let failed = WRITE_FAILED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    match failed {
        Some(reason) if code == std::process::ExitCode::SUCCESS => {
            let mut line = format!("envwrap: write error: {reason}\n").into_bytes();
            line.truncate(512);
            let _ = std::io::stderr().write_all(&line);
            std::process::ExitCode::from(crate::exit::OWN_ERROR)
        }
        _ => code,
    }
}

/// A line about an exec for the person (a refusal, a withheld credential, a
/// grant's use, a secret not delivered): [`say_line`], and the controlling
/// terminal too when stderr is not a terminal ([`envpolicy::seen`]), as the
/// shim writes its lines: a spawner that discards envwrap's stderr (an agent's
/// hook) must not hide them. The `tell!` macro.
pub fn tell_line(text: &str) {
    use std::io::{IsTerminal, Write};
    say_line(text);
    let stderr_is_terminal = std::io::stderr().is_terminal();
    if !envpolicy::seen::may_copy(stderr_is_terminal) {
        return;
    }
    let Ok(mut tty) = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
        .open("/dev/tty")
    else {
        return;
    };
    let stops_background = nix::sys::termios::tcgetattr(&tty).map_or(true, |t| {
        t.local_flags
            .contains(nix::sys::termios::LocalFlags::TOSTOP)
    });
    let in_foreground = nix::unistd::tcgetpgrp(&tty).is_ok_and(|g| g == nix::unistd::getpgrp());
    let t = envpolicy::seen::Terminal {
        stderr_is_terminal,
        stops_background,
        in_foreground,
    };
    if envpolicy::seen::copy_to_terminal(t) {
        let mut line = redacted(text);
        line.push('\n');
        let _ = tty.write_all(line.as_bytes());
    }
}

/// Text on stdout, [`redacted`]: a tool's report (the `show!` and `showln!`
/// macros), never through `print!` (clippy.toml disallows it). A closed stdout
/// ends the tool at once, quietly, as it ends coreutils' (`envwrap scan | head
/// -1`): [`end_by_sigpipe`].
pub fn show_text(text: &str) {
    use std::io::Write;
    wrote_stdout();
    match std::io::stdout().write_all(redacted(text).as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => end_by_sigpipe(),
        Err(e) => failed_write(&e),
        Ok(()) => {}
    }
}

/// One record on stdout, then `end`: its bytes as they are (an environment entry
/// need not be UTF-8), [`redacted`] when they are text. A closed stdout ends the
/// tool as [`show_text`] does.
pub fn show_record(record: &[u8], end: u8) {
    use std::io::Write;
    let mut out = match std::str::from_utf8(record) {
        Ok(text) => redacted(text).into_bytes(),
        Err(_) => record.to_vec(),
    };
    out.push(end);
    wrote_stdout();
    match std::io::stdout().write_all(&out) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => end_by_sigpipe(),
        Err(e) => failed_write(&e),
        Ok(()) => {}
    }
}

/// End the process as a program that never ignored `SIGPIPE` would end when its
/// reader went away: killed by it, which a shell reports as 141 and a pipeline
/// with `head` expects. (The Rust runtime ignores `SIGPIPE`, so a write fails
/// with `EPIPE` instead.)
pub fn end_by_sigpipe() -> ! {
    use nix::sys::signal::{raise, signal, SigHandler, Signal};
    // SAFETY: restores the default action, which runs no code of this process;
    // nothing else in envwrap changes SIGPIPE's action.
    let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigDfl) };
    let _ = raise(Signal::SIGPIPE);
    std::process::exit(128 + libc::SIGPIPE)
}

/// `print!`, through [`show_text`].
#[macro_export]
macro_rules! show {
    ($($arg:tt)*) => {
        $crate::value::show_text(&format!($($arg)*))
    };
}

/// `println!`, through [`show_text`].
#[macro_export]
macro_rules! showln {
    ($($arg:tt)*) => {
        $crate::value::show_text(&(format!($($arg)*) + "\n"))
    };
}

/// `eprintln!`, through [`say_line`].
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::value::say_line(&format!($($arg)*))
    };
}

/// A line about an exec for the person: [`tell_line`].
macro_rules! tell {
    ($($arg:tt)*) => {
        $crate::value::tell_line(&format!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_the_value() {
        let tok = format!("ghp_{}", "a1B2".repeat(9));
        assert_eq!(describe(tok.as_bytes()), "<40 bytes, github token>");
        assert_eq!(describe(b"hello"), "<5 bytes>");
        assert_eq!(describe(b"x"), "<1 byte>");
        assert_eq!(word(b"tmux"), "tmux");
        assert_eq!(
            word(format!("--t={tok}").as_bytes()),
            "<44 bytes, github token>"
        );
        assert_eq!(word(b"a\nb"), "<3 bytes>");
    }
}
