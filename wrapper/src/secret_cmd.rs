//! `envwrap secret set NAME` and `envwrap secret list`: put a `[[secret]]`'s
//! value into its source, and say where each secret goes and whether its
//! source can give a value now (docs/adr/0019-secrets-delivered-at-exec.md).
//!
//! Why a tool: a secret's source must be a file no one else may read, or a
//! kernel key, and writing either by hand is easy to get wrong (a file written
//! with the umask's 0644 and then chmodded was readable in between; a token
//! pasted on a command line is in the shell's history and in every process's
//! view of /proc). `set` reads the value from standard input only, never from
//! its arguments, and writes a file through a temporary file created 0600 in
//! the same directory and renamed over the old one, so that the source is
//! always whole and never readable by others. `list` never shows a value.

use crate::exit::{self, Failure, OWN_ERROR};
use crate::help;
use crate::opts::{tool_args, Spec};
use crate::source::{self, Loaded};
use crate::tools::ToolDoc;
use envpolicy::compiled::{sec, Policy, SecretRec};
use envpolicy::secret::{self, SourceKind, MAX_VALUE};
use envpolicy::secret_source::{self, keyring, Value};
use serde_json::json;
use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Clone, Copy)]
pub(crate) enum Opt {
    Policy,
    Json,
    Check,
    Help,
}

pub(crate) const SPECS: &[Spec<Opt>] = &[
    Spec::with_value(Opt::Policy, "policy", "POLICY")
        .doc("the policy whose [[secret]] tables to use (else the policy lookup's)"),
    Spec::flag(Opt::Json, "json").doc("list: print one JSON object"),
    Spec::flag(Opt::Check, "check")
        .doc("list: run each command: source's helper to see that it gives a value (never shown)"),
    Spec::help(Opt::Help),
];

/// What the docs say of secret.
pub(crate) const DOC: ToolDoc = ToolDoc {
    usage: &[
        "set [--policy POLICY] NAME |",
        "list [--json] [--check] [--policy POLICY]",
    ],
    operands: "set NAME | list",
    summary: "store a [[secret]]'s value (read from standard input) in its source, or list \
              the secrets and whether each source is usable, never a value",
    about: "\
secret set NAME reads the value of the [[secret]] NAME from standard input
(never from the command line; not echoed on a terminal), drops one trailing
newline, and stores it in the secret's source: a file: source is written
0600 through a temporary file in the same directory and a rename (its
directory is made 0700 when missing); a keyring:user: source becomes a user
key in the user's keyring. A credential: source is systemd's to set
(LoadCredential= in the unit).

secret list shows each secret's name, source, programs and deny_args, and
whether its source gives a value now (or why not). A command: source's helper
is only looked at (there, and writable by root or you alone); --check runs it.
It never shows a value.
",
    after: "\
Exit status: 0 on success; 125 when the policy has no such secret, the value
is refused (empty, holding a NUL byte, longer than 4096 bytes) or cannot be
stored.
",
    man: r"The first word says what to do.
        .B set
        .I NAME
        reads the value of the
        .B [[secret]]
        .I NAME
        from standard input (never from the command line; not echoed on a
        terminal), drops one trailing newline, and stores it in the secret's
        source: a
        .B file:
        source is written 0600 through a temporary file in the same directory and
        a rename (its directory is made 0700 when missing); a
        .B keyring:user:
        source becomes a
        .B user
        key in the user's keyring.
        A
        .B credential:
        source is systemd's to set
        .RB ( LoadCredential=
        in the unit).
        .B list
        shows each secret's name, source, programs and
        .BR deny_args ,
        and whether its source gives a value now (or why not); never a value.
        A
        .B command:
        source's helper is only looked at (there, and writable by root or you
        alone) unless
        .B \-\-check
        is given, which runs it.",
    man_after: "",
};

/// The command line of the tool, read.
struct Args {
    policy: Option<PathBuf>,
    json: bool,
    /// `--check`: run the helpers of `command:` sources.
    check: bool,
    words: Vec<OsString>,
}

pub fn main(args: Vec<OsString>) -> ExitCode {
    let mut policy = None;
    let mut json_out = false;
    let mut check = false;
    let mut want_help = false;
    let parsed = tool_args(args, SPECS, "envwrap secret --help", |id, v| {
        match id {
            Opt::Policy => policy = v.map(PathBuf::from),
            Opt::Json => json_out = true,
            Opt::Check => check = true,
            Opt::Help => want_help = true,
        }
        Ok(())
    });
    let words = match parsed {
        Ok(a) => a
            .operands
            .into_iter()
            .chain(a.after.unwrap_or_default())
            .collect(),
        Err(f) => return exit::finish_as(Err(f), json_out),
    };
    if want_help {
        show!("{}", help::for_tool("secret"));
        return ExitCode::SUCCESS;
    }
    let args = Args {
        policy,
        json: json_out,
        check,
        words,
    };
    exit::finish_as(run(&args), json_out)
}

fn run(args: &Args) -> Result<u8, Failure> {
    let words: Vec<&[u8]> = args.words.iter().map(|w| w.as_bytes()).collect();
    let loaded = source::load(args.policy.as_deref(), source::own_getenv)?;
    crate::value::judge_with(&loaded.compiled);
    match words.as_slice() {
        [b"set", name] => set(&loaded, name),
        [b"list"] => list(&loaded, args.json, args.check),
        _ => Err(Failure::usage(
            "secret takes `set NAME` or `list`",
            "envwrap secret --help",
        )),
    }
}

/// `secret set NAME`.
fn set(loaded: &Loaded, name: &[u8]) -> Result<u8, Failure> {
    let policy = loaded.compiled.policy();
    let shown = crate::value::word(name);
    let Some((_, rec)) = secret::by_name(&policy, name) else {
        return Err(Failure::new(
            OWN_ERROR,
            format!(
                "{} has no [[secret]] named {}{}",
                loaded.label(),
                unknown_name(name),
                secret_names(&policy)
            ),
        ));
    };
    let where_ = secret_source::describe_source(&policy, &rec);
    if rec.source_kind == SourceKind::Credential {
        return Err(Failure::new(
            OWN_ERROR,
            format!(
                "secret {shown} comes from {where_}, which systemd sets: LoadCredential= (or \
                 SetCredentialEncrypted=) in the unit that runs the program, not envwrap"
            ),
        ));
    }
    if rec.source_kind == SourceKind::Command {
        return Err(Failure::new(
            OWN_ERROR,
            format!(
                "secret {shown} comes from {where_}: store it where that helper reads it \
                 (pass insert, op item create, secret-tool store), not with envwrap"
            ),
        ));
    }
    let value = read_value_from_stdin(&shown)?;
    let source = policy.str(rec.source);
    let stored = match rec.source_kind {
        SourceKind::File => write_file_source(Path::new(OsStr::from_bytes(source)), &value),
        _ => keyring::add(source, value.as_bytes()),
    };
    stored.map_err(|e| {
        Failure::new(
            OWN_ERROR,
            format!(
                "cannot store secret {shown} in {where_}: {}",
                envpolicy::error::io_reason(&e)
            ),
        )
    })?;
    say!("envwrap: secret {shown} stored in {where_}");
    Ok(0)
}

/// A name no `[[secret]]` has, as the error shows it: as it is when it reads as
/// a variable name in capitals (`GH_TOKN`), else only its length. A value typed
/// where the name goes (`secret set p@ss`) is never echoed.
fn unknown_name(name: &[u8]) -> String {
    let variable = name.len() <= 64
        && name
            .first()
            .is_some_and(|b| b.is_ascii_uppercase() || *b == b'_')
        && name
            .iter()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_');
    if variable {
        crate::value::word(name)
    } else {
        envpolicy::shown::described(name).to_string()
    }
}

/// "; its secrets: A, B", or "; it has none".
fn secret_names(policy: &envpolicy::Policy<'_>) -> String {
    use envpolicy::compiled::sec;
    let names: Vec<String> = (0..policy.count(sec::SECRETS) as u32)
        .filter_map(|i| policy.secret(i))
        .map(|s| crate::value::word(policy.str(s.name)))
        .collect();
    if names.is_empty() {
        "; it has none".to_string()
    } else {
        format!("; its secrets: {}", names.join(", "))
    }
}

/// The value on standard input, cleaned; not echoed when it is a terminal.
fn read_value_from_stdin(shown: &str) -> Result<Value, Failure> {
    let echo = NoEcho::on_terminal(&format!("value of secret {shown} (not shown): "));
    let mut raw = vec![0u8; MAX_VALUE + 3];
    let mut filled = 0;
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    while filled < raw.len() {
        match input.read(&mut raw[filled..]) {
            Ok(0) => break,
            // A terminal gives one line a read: the value ends there.
            Ok(n) if echo.is_some() && raw[filled + n - 1] == b'\n' => {
                filled += n;
                break;
            }
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(Failure::new(
                    OWN_ERROR,
                    format!("cannot read the value: {}", envpolicy::error::io_reason(&e)),
                ))
            }
        }
    }
    drop(echo);
    let mut tail = raw.split_off(filled);
    tail.fill(0);
    Value::clean(raw).map_err(|why| {
        Failure::new(
            OWN_ERROR,
            format!(
                "the value given for secret {shown} is refused: {}",
                reason(why)
            ),
        )
    })
}

/// What [`secret::Undelivered`] says of a source, said of a value given.
fn reason(why: secret::Undelivered) -> &'static str {
    match why {
        secret::Undelivered::Empty => "it is empty",
        other => other.text(),
    }
}

/// The terminal's echo, turned off while a value is typed; back on when dropped.
struct NoEcho {
    saved: libc::termios,
}

impl NoEcho {
    /// When standard input is a terminal: say `prompt` on stderr and stop the
    /// echo. `None` when it is not a terminal (a file, a pipe).
    fn on_terminal(prompt: &str) -> Option<NoEcho> {
        // SAFETY: tcgetattr writes a termios into the zeroed one it is given.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(0, &mut saved) } != 0 {
            return None;
        }
        let mut quiet = saved;
        quiet.c_lflag &= !libc::ECHO;
        // SAFETY: a termios read from this terminal, with ECHO cleared.
        unsafe { libc::tcsetattr(0, libc::TCSAFLUSH, &quiet) };
        let _ = write!(std::io::stderr(), "{prompt}");
        Some(NoEcho { saved })
    }
}

impl Drop for NoEcho {
    fn drop(&mut self) {
        // SAFETY: the termios this terminal had.
        unsafe { libc::tcsetattr(0, libc::TCSAFLUSH, &self.saved) };
        let _ = writeln!(std::io::stderr());
    }
}

/// Write `value` to `path`: a temporary file created 0600 beside it (its
/// directory made 0700 when missing), written, synced, renamed over `path`.
fn write_file_source(path: &Path, value: &Value) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let file_name = path.file_name().unwrap_or(OsStr::new("secret"));
    let temp = dir.join(format!(
        ".{}.envwrap-{}.tmp",
        file_name.to_string_lossy(),
        std::process::id()
    ));
    let written =
        write_new_private(&temp, value.as_bytes()).and_then(|()| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Create `path` (which must not exist) 0600, write `bytes` (no newline: the
/// file holds the value alone), sync.
fn write_new_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// One secret as `list` and `check` show it: never its value.
pub struct Listed {
    pub name: String,
    pub source: String,
    pub program: String,
    pub deny_args: Vec<Vec<String>>,
    /// `None` when the source gives a value now; else why not.
    pub unusable: Option<secret::Undelivered>,
}

impl Listed {
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "name": self.name,
            "source": self.source,
            "program": self.program,
            "deny_args": self.deny_args,
            "usable": self.unusable.is_none(),
            "reason": self.unusable.map(|u| u.id()),
            "why": self.unusable.map(|u| u.text()),
        })
    }

    /// `usable`, or `not usable: WHY`.
    pub fn usability(&self) -> String {
        match self.unusable {
            None => "usable".into(),
            Some(u) => format!("not usable: {}", u.text()),
        }
    }

    /// `auth token; repo view`, or `none`.
    pub fn deny_text(&self) -> String {
        if self.deny_args.is_empty() {
            return "none".into();
        }
        let lists: Vec<String> = self.deny_args.iter().map(|l| l.join(" ")).collect();
        lists.join("; ")
    }
}

/// Every secret of `policy`, its source tried as the program would find it
/// with the environment `env` (for `credential:`); a `command:` source's
/// helper run only when `run_helpers`.
pub fn listed(policy: &Policy<'_>, env: &[Vec<u8>], run_helpers: bool) -> Vec<Listed> {
    (0..policy.count(sec::SECRETS) as u32)
        .filter_map(|i| policy.secret(i).map(|r| (i, r)))
        .map(|(i, r)| Listed {
            name: crate::value::word(policy.str(r.name)),
            source: secret_source::describe_source(policy, &r),
            program: crate::value::word(policy.str(r.program)),
            deny_args: deny_words(policy, &r),
            unusable: secret_source::usable(policy, i, env, run_helpers)
                .err()
                .or_else(|| program_unusable(policy.str(r.program))),
        })
        .collect()
}

/// Why a secret's program cannot get it, as its exec would find it
/// ([`secret_source::program_trusted`]): not there, or a file a process of
/// the user could replace. A pattern with `*` names no one file: not asked.
pub(crate) fn program_unusable(program: &[u8]) -> Option<secret::Undelivered> {
    if program.contains(&b'*') {
        return None;
    }
    match secret_source::program_trusted(program) {
        Ok(()) => None,
        Err(None) => Some(secret::Undelivered::ProgramMissing),
        Err(Some(why)) => Some(why),
    }
}

fn deny_words(policy: &Policy<'_>, r: &SecretRec) -> Vec<Vec<String>> {
    secret::deny_lists(policy, r)
        .map(|words| words.iter().map(crate::value::word).collect())
        .collect()
}

/// envwrap's own environment, as the programs it starts would have it.
pub fn own_env() -> Vec<Vec<u8>> {
    crate::environ::own()
}

/// `secret list`.
fn list(loaded: &Loaded, json_out: bool, run_helpers: bool) -> Result<u8, Failure> {
    let policy = loaded.compiled.policy();
    let secrets = listed(&policy, &own_env(), run_helpers);
    if json_out {
        let all: Vec<_> = secrets.iter().map(Listed::to_json).collect();
        showln!("{}", json!({ "policy": loaded.name(), "secrets": all }));
        return Ok(0);
    }
    if secrets.is_empty() {
        showln!("{} has no [[secret]]", loaded.name());
        return Ok(0);
    }
    for s in &secrets {
        showln!(
            "{}\n  from       {}\n  program    {}\n  deny_args  {}\n  source     {}",
            s.name,
            s.source,
            s.program,
            s.deny_text(),
            s.usability()
        );
    }
    Ok(0)
}
