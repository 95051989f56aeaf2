//! Applying a policy to the children a Rust program spawns itself, without preload:
//! one call per spawn API (examples/agentmux.toml is the multiplexer this was made for).
//!
//! - [`apply_std`] for [`std::process::Command`];
//! - `apply_tokio` for `tokio::process::Command` (cargo feature `tokio`);
//! - `apply_pty` for `portable_pty::CommandBuilder` (cargo feature `portable-pty`).
//!
//! Each call reads the command (program, argv, environment), asks the policy for
//! the same [`Decision`] libenvshim.so and envwrap reach for that input,
//! and in enforce mode replaces the command's environment with the decided one and
//! its argv with the decided argv. It returns an [`Outcome`]: every change (removed,
//! refused, set, rewritten), by variable name and rule, never by value, for the
//! caller to log. A refused exec is an `Err(`[`Refused`]`)`. In audit mode nothing
//! is changed and nothing is refused; the outcome says what enforce would do.
//!
//! # The environment a command would pass
//!
//! The decision is taken on the environment the child would get without the
//! policy: this process's environment ([`std::env::vars_os`], read when the call is
//! made; entries without `=` are not visible there and so are not reported), with
//! the command's own changes applied over it (`env`, `envs`, `env_remove`, as
//! `Command::get_envs` lists them).
//!
//! `Command::env_clear` cannot be read through std's stable API
//! (`Command::get_env_clear` exists only behind the unstable `command_resolved_envs`
//! feature, rust-lang/rust#149070). [`apply_std`] therefore finds out from the
//! command's alternate `Debug` form, whose `env` field prints `clear: true` after
//! `env_clear` (see [`env_cleared`]; a test pins this). A caller that knows can
//! say so instead, with [`apply_std_from`] and [`Base::Cleared`] or [`Base::Inherit`].
//! If a future std printed something else, [`Base::Detect`] takes the command as
//! inheriting: every variable it then adds still passes the policy.
//!
//! After the call the command has `env_clear` set and exactly the decided
//! variables. `std::process::Command` passes its environment in name order, one copy
//! per name (the decision already keeps only the first copy of a name, as glibc's
//! `getenv` reads it), so the child sees the decided set of variables, sorted.
//!
//! # Argv
//!
//! The decision may rewrite argv: a `NAME=VALUE` pair the policy does not admit is
//! dropped from `tmux -e`, `docker run -e`, `env`, ...; a secret is redacted when the
//! policy says `argv.secrets = "redact"`. A `std::process::Command` cannot drop or
//! replace an argument, so when argv changes the command is rebuilt: a new
//! `Command` with the same program, the decided argv (argv\[0\] through
//! `CommandExt::arg0` when it differs), the same working directory and the decided
//! environment. Settings std does not let anyone read are NOT carried over: stdio,
//! `uid`/`gid`/`groups`, `process_group`, `pre_exec` hooks, and an `arg0` set
//! earlier. [`Outcome::rebuilt`] says when this happened. So: apply the policy
//! right after setting the program, arguments, environment and directory, and
//! configure the rest afterwards, as the examples do. (tokio's `kill_on_drop` is
//! kept: only the inner std command is rebuilt.) A `portable_pty::CommandBuilder`
//! exposes its argv, so there it is replaced in place.
//!
//! # A refused exec
//!
//! When the policy refuses the exec (a credential value or a token in argv, with
//! `argv.secrets = "refuse"`), the call returns [`Refused`], which carries the
//! whole outcome and names the variable (or the token shape) and the program,
//! never a value. The command is also disarmed: its environment is cleared and its
//! program replaced by one that cannot be spawned (the name holds a NUL byte), so a
//! caller that ignores the error starts nothing rather than the refused argv.
//!
//! # portable-pty and `SHELL`
//!
//! portable-pty 0.9 (`cmdbuilder.rs`) seeds a `CommandBuilder` with the whole
//! process environment plus, when `SHELL` is unset, `SHELL` from the password
//! database (`getpwuid(getuid())->pw_shell`, or `/bin/sh` when that is not
//! executable). At spawn, `as_command` clears the std command's environment, then
//! sets `SHELL` to `get_shell()` (the builder's `SHELL` if executable, else the
//! password database's) and only then copies the builder's variables. So a builder
//! that holds `SHELL` passes its own value, but a builder without `SHELL` (after
//! `env_clear`, `env_remove("SHELL")`, or a policy that does not admit it) still
//! gives the child the password database's shell. `apply_pty` makes the policy's
//! decision stand: when the decided environment has no `SHELL`, the command runs
//! through `/usr/bin/env -u SHELL -- PROGRAM ARGS...` (reported as an `argv` change
//! `wrap` by rule `pty.shell`). A builder made with `new_default_prog` runs the
//! login shell itself (argv\[0\] `-bash`), which no wrapper can reproduce: there
//! `SHELL` stays, and the outcome reports it as a loud `set` by rule `pty.shell`.
//! portable-pty exposes its environment as UTF-8 text and by name only: an entry
//! whose name is not UTF-8 and is not in this process's environment, or whose name
//! is not in this process's environment and whose value is not UTF-8, cannot be
//! seen, so it is not decided, but it does not reach the child either (the builder
//! is cleared).
//!
//! # The managed layer
//!
//! On a host with `/etc/envshim/managed.toml` ([`crate::managed`]), every call
//! decides twice, as envwrap and libenvshim.so do: with the policy given, then
//! with the managed layer over that result ([`outcome::decide_layered`]); each
//! change of the [`Outcome`] carries the layer that made it. The managed layer
//! is loaded once per process, at the first call
//! ([`crate::managed::Managed::for_process`]); a broken one gives the
//! fail-closed floor for the second pass, and its one warning is
//! [`crate::managed::Managed::warning`], for the caller to log: this crate
//! prints nothing. The policy's mode is the user pass's; the managed layer's
//! own `mode` governs its pass.
//!
//! # Secrets
//!
//! A command whose program gets a `[[secret]]` runs through envwrap, which
//! reads the value in the program's own process ([`route`] says why and how);
//! without envwrap the program runs without it, and the outcome says so
//! loudly.

mod route;

use crate::compiled::{Mode, Policy};
use crate::decide::Action;
use crate::outcome::{self, Change, ChangeAction, Decision, Target};
use serde::Serialize;
use std::ffi::OsStr;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Where a command's environment starts, before its own `env`/`env_remove` changes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Base {
    /// Find out with [`env_cleared`]: a command on which `env_clear` was called
    /// starts empty, any other inherits this process's environment.
    #[default]
    Detect,
    /// This process's environment (`env_clear` was not called).
    Inherit,
    /// Nothing (`env_clear` was called).
    Cleared,
}

/// What one call decided, naming variables, programs and rules, never values.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// The program as rules name it ([`crate::identity`]: the script an
    /// interpreter runs; lossy UTF-8), or `<argv[0] withheld>` when the
    /// policy found a secret in argv\[0\] itself.
    pub program: String,
    /// `enforce` or `audit` (the policy's `mode`).
    pub mode: &'static str,
    /// Every change, env first, then argv. In audit mode: what enforce would do.
    pub changes: Vec<Change>,
    /// The change that refuses the exec, if the policy refuses it. In enforce mode
    /// the call returned [`Refused`]; in audit mode the exec goes on.
    pub refusal: Option<Change>,
    /// The credentials withheld from the command that no loud change names,
    /// once each: a program that runs commands for a user should tell them
    /// ([`Outcome::withheld_lines`]). Empty in audit mode.
    pub withheld: Vec<String>,
    /// The command's argv was changed (in enforce mode).
    pub argv_rewritten: bool,
    /// The std command was rebuilt to change its argv: settings std cannot read
    /// (stdio, uid, gid, process group, pre_exec hooks) were not carried over.
    pub rebuilt: bool,
    /// What [`Outcome::json_lines`] says besides each change: the user
    /// layer's source, and the mode of each layer's pass.
    #[serde(skip)]
    records: Records,
}

/// What the records of an [`Outcome`] say besides each change.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Records {
    user_source: Vec<u8>,
    /// Each pass's mode, as [`crate::outcome::Decision::pass_mode`] reads them.
    user_mode: Mode,
    managed_mode: Option<Mode>,
}

impl Outcome {
    /// Nothing was (or, in audit mode, would be) changed.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Names of the variables removed from the environment (stripped or refused).
    pub fn removed(&self) -> impl Iterator<Item = &str> {
        self.changes
            .iter()
            .filter(|c| {
                c.target == Target::Env
                    && matches!(c.action, ChangeAction::Env(Action::Strip | Action::Refuse))
            })
            .filter_map(|c| c.name.as_deref())
    }

    /// Names of the variables the policy set or replaced.
    pub fn set(&self) -> impl Iterator<Item = &str> {
        self.changes
            .iter()
            .filter(|c| {
                c.target == Target::Env
                    && matches!(
                        c.action,
                        ChangeAction::Set | ChangeAction::Env(Action::Replace)
                    )
            })
            .filter_map(|c| c.name.as_deref())
    }

    /// One line per [`Outcome::withheld`] name, as envwrap and the shim say it:
    /// `GH_TOKEN withheld from gh and what it starts (a credential; envwrap
    /// explain GH_TOKEN)`. Names and the program's basename only, never a value.
    pub fn withheld_lines(&self) -> Vec<String> {
        self.withheld
            .iter()
            .map(|n| outcome::withheld_line(n.as_bytes(), self.program.as_bytes()))
            .collect()
    }

    /// The changes worth a warning: credentials, grants, refusals.
    pub fn loud(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(|c| c.loud)
    }

    /// One JSON object per change, as every front end writes them (the
    /// shim's log and audit lines, envwrap's `--json` and `--log`): the core's
    /// one record ([`crate::record`]), by `envpolicy`.
    pub fn json_lines(&self) -> Vec<String> {
        let by = outcome::Recorder {
            tool: "envpolicy",
            user_source: &self.records.user_source,
        };
        let mode_of = |layer| match (layer, self.records.managed_mode) {
            (crate::layer::Layer::Managed, Some(m)) => m,
            _ => self.records.user_mode,
        };
        self.changes
            .iter()
            .map(|c| outcome::json_line(&by, mode_of(c.layer), self.program.as_bytes(), c))
            .collect()
    }
}

/// The error of a refused exec. It carries the whole [`Outcome`]; its `Display`
/// names the program, the argument's index, the variable (or token shape) and
/// the rule, never a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused(Box<RefusedInner>);

#[derive(Clone, Debug, PartialEq, Eq)]
struct RefusedInner {
    outcome: Outcome,
    change: Change,
    /// The refusal line every front end writes (envpolicy_core::refusal),
    /// redacted against the exec's credentials.
    line: String,
}

impl Refused {
    /// Everything the policy decided for this exec.
    pub fn outcome(&self) -> &Outcome {
        &self.0.outcome
    }

    /// Take the outcome.
    pub fn into_outcome(self) -> Outcome {
        self.0.outcome
    }

    /// The change that refuses the exec.
    pub fn change(&self) -> &Change {
        &self.0.change
    }

    /// The credential variable whose value was found in argv (`None` when the
    /// argument matched a token shape rather than a known variable's value).
    pub fn name(&self) -> Option<&str> {
        self.change().name.as_deref()
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.line)
    }
}

impl std::error::Error for Refused {}

/// Apply `policy` to a [`std::process::Command`]; see the [module docs](self).
///
/// In enforce mode the command leaves with `env_clear` set and exactly the
/// decided variables, and with the decided argv (rebuilt when argv changed; see
/// [`Outcome::rebuilt`]). In audit mode it is not touched.
///
/// ```
/// use envpolicy::spawn::apply_std;
/// use std::process::Command;
///
/// let compiled = envpolicy::load::compile_text(
///     "version = 1\nstrip = [\"AGENTMUX_*\"]\nkeep = [\"AGENTMUX_PANE_ID\"]\n\
///      [set]\nAGENTMUX_NESTED = \"1\"\n",
///     "inline.toml".as_ref(),
/// )?;
/// let mut cmd = Command::new("sh");
/// cmd.args(["-c", "echo ${GH_TOKEN:-no-token} ${AGENTMUX_DATA_DIR:-no-dir} $AGENTMUX_PANE_ID $AGENTMUX_NESTED"])
///     .env("GH_TOKEN", "not-a-real-token")
///     .env("AGENTMUX_DATA_DIR", "/srv/agentmux")
///     .env("AGENTMUX_PANE_ID", "7")
///     .env("AGENTMUX_NESTED", "0");
///
/// let outcome = apply_std(&compiled.policy(), &mut cmd)?;
/// let removed: Vec<&str> = outcome.removed().collect();
/// assert!(removed.contains(&"GH_TOKEN") && removed.contains(&"AGENTMUX_DATA_DIR"));
/// for line in outcome.json_lines() {
///     eprintln!("{line}"); // names and rules, never values
/// }
///
/// let out = cmd.output()?;
/// assert_eq!(String::from_utf8_lossy(&out.stdout), "no-token no-dir 7 1\n");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A credential's value in argv refuses the exec:
///
/// ```
/// use envpolicy::spawn::apply_std;
/// use std::process::Command;
///
/// let compiled = envpolicy::load::builtin_default();
/// let mut cmd = Command::new("curl");
/// cmd.arg("--header=Authorization: bearer not-a-real-token")
///     .env("GH_TOKEN", "not-a-real-token");
/// let refused = apply_std(&compiled.policy(), &mut cmd).unwrap_err();
/// assert_eq!(refused.name(), Some("GH_TOKEN"));
/// assert!(!refused.to_string().contains("not-a-real-token"));
/// assert!(cmd.spawn().is_err()); // disarmed
/// ```
pub fn apply_std(policy: &Policy<'_>, cmd: &mut Command) -> Result<Outcome, Refused> {
    apply_std_from(policy, cmd, Base::Detect)
}

/// [`apply_std`] with the command's starting environment given: [`Base::Cleared`]
/// for a command on which `env_clear` was called, [`Base::Inherit`] for one that
/// inherits this process's environment.
///
/// ```
/// use envpolicy::spawn::{apply_std_from, Base};
/// use std::process::Command;
///
/// let compiled = envpolicy::load::builtin_default();
/// let mut cmd = Command::new("env");
/// cmd.env_clear().env("PATH", "/usr/bin:/bin").env("GITHUB_TOKEN", "x");
/// let outcome = apply_std_from(&compiled.policy(), &mut cmd, Base::Cleared)?;
/// assert_eq!(outcome.removed().collect::<Vec<_>>(), ["GITHUB_TOKEN"]);
/// let out = cmd.output()?;
/// assert_eq!(out.stdout, b"PATH=/usr/bin:/bin\n");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn apply_std_from(
    policy: &Policy<'_>,
    cmd: &mut Command,
    base: Base,
) -> Result<Outcome, Refused> {
    let program = cmd.get_program().as_bytes().to_vec();
    let mut argv = vec![program.clone()];
    argv.extend(cmd.get_args().map(|a| a.as_bytes().to_vec()));

    let parent = process_env();
    let cleared = match base {
        Base::Cleared => true,
        Base::Inherit => false,
        Base::Detect => env_cleared(cmd).unwrap_or(false),
    };
    let mut env = if cleared { Vec::new() } else { parent.clone() };
    for (name, value) in cmd.get_envs() {
        change_env(&mut env, name.as_bytes(), value.map(OsStr::as_bytes));
    }

    let (d, outcome, line) = decide_for(policy, &program, &argv, &env, &parent);
    let mut outcome = outcome;
    if d.mode == Mode::Audit {
        return Ok(outcome);
    }
    if let Some(change) = d.refused() {
        disarm_std(cmd);
        return Err(Refused(Box::new(RefusedInner {
            change: change.clone(),
            outcome,
            line: line.unwrap_or_default(),
        })));
    }
    let routed = route::take(
        &mut outcome,
        route::route(policy, &program, &d.argv, &d.env),
    );
    if routed.is_some() || d.argv != argv {
        let mut fresh;
        if let Some(routed) = &routed {
            fresh = Command::new(&routed[0]);
            fresh.args(&routed[1..]);
        } else {
            fresh = Command::new(OsStr::from_bytes(&program));
            if let Some((arg0, rest)) = d.argv.split_first() {
                if *arg0 != program {
                    fresh.arg0(OsStr::from_bytes(arg0));
                }
                fresh.args(rest.iter().map(|a| OsStr::from_bytes(a)));
            }
        }
        if let Some(dir) = cmd.get_current_dir() {
            fresh.current_dir(dir);
        }
        *cmd = fresh;
        outcome.argv_rewritten = true;
        outcome.rebuilt = true;
    }
    cmd.env_clear();
    for (name, value) in d.env.iter().filter_map(|e| crate::bytes::split_entry(e)) {
        cmd.env(OsStr::from_bytes(name), OsStr::from_bytes(value));
    }
    Ok(outcome)
}

/// Was `env_clear` called on `cmd`? `None` when std's `Debug` output does not
/// show it (a std other than the ones this was written against).
///
/// std's stable API cannot say (`Command::get_env_clear` is unstable,
/// rust-lang/rust#149070). The alternate `Debug` form of a `Command` prints a
/// touched environment as a field `env: CommandEnv {` followed by `clear: BOOL,`,
/// one per line, and leaves the field out while the environment is untouched;
/// every string in it (program, arguments, names, values) is quoted and escaped,
/// so no argument or value can produce those lines. The formatted text holds
/// the command's values; it stays in this process's memory, as the command does.
///
/// ```
/// use envpolicy::spawn::env_cleared;
/// use std::process::Command;
///
/// let mut cmd = Command::new("true");
/// cmd.arg("\n        clear: true,").env("A", "1");
/// assert_eq!(env_cleared(&cmd), Some(false));
/// cmd.env_clear();
/// assert_eq!(env_cleared(&cmd), Some(true));
/// ```
pub fn env_cleared(cmd: &Command) -> Option<bool> {
    let text = format!("{cmd:#?}");
    let mut lines = text.lines().map(str::trim);
    if lines.next() != Some("Command {") {
        return None;
    }
    // std leaves the `env` field out while the environment is untouched.
    if !lines.any(|l| l == "env: CommandEnv {") {
        return Some(false);
    }
    match lines.next() {
        Some("clear: true,") => Some(true),
        Some("clear: false,") => Some(false),
        _ => None,
    }
}

/// Apply `policy` to a `tokio::process::Command`: [`apply_std`] on the inner std
/// command (`as_std_mut`), so `kill_on_drop` survives a rebuild.
///
/// ```
/// use envpolicy::spawn::apply_tokio;
///
/// let compiled = envpolicy::load::compile_text(
///     "version = 1\n[set]\nAGENTMUX_NESTED = \"1\"\n",
///     "inline.toml".as_ref(),
/// )?;
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
/// rt.block_on(async {
///     let mut cmd = tokio::process::Command::new("sh");
///     cmd.args(["-c", "echo ${GH_TOKEN:-no-token} $AGENTMUX_NESTED"])
///         .env("GH_TOKEN", "not-a-real-token")
///         .kill_on_drop(true);
///     let outcome = apply_tokio(&compiled.policy(), &mut cmd)?;
///     assert_eq!(outcome.set().collect::<Vec<_>>(), ["AGENTMUX_NESTED"]);
///     let out = cmd.output().await?;
///     assert_eq!(out.stdout, b"no-token 1\n");
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "tokio")]
pub fn apply_tokio(
    policy: &Policy<'_>,
    cmd: &mut tokio::process::Command,
) -> Result<Outcome, Refused> {
    apply_std_from(policy, cmd.as_std_mut(), Base::Detect)
}

/// [`apply_tokio`] with the command's starting environment given (see
/// [`apply_std_from`]).
///
/// ```
/// use envpolicy::spawn::{apply_tokio_from, Base};
///
/// let compiled = envpolicy::load::builtin_default();
/// let mut cmd = tokio::process::Command::new("env");
/// cmd.env_clear().env("GH_TOKEN", "x").env("LANG", "C.UTF-8");
/// let outcome = apply_tokio_from(&compiled.policy(), &mut cmd, Base::Cleared)?;
/// assert_eq!(outcome.removed().collect::<Vec<_>>(), ["GH_TOKEN"]);
/// # Ok::<(), envpolicy::spawn::Refused>(())
/// ```
#[cfg(feature = "tokio")]
pub fn apply_tokio_from(
    policy: &Policy<'_>,
    cmd: &mut tokio::process::Command,
    base: Base,
) -> Result<Outcome, Refused> {
    apply_std_from(policy, cmd.as_std_mut(), base)
}

/// Where `env` lives, for running a PTY command without `SHELL` (see the
/// [module docs](self)).
#[cfg(feature = "portable-pty")]
pub const ENV_PROGRAM: &str = "/usr/bin/env";

/// Apply `policy` to a `portable_pty::CommandBuilder`; see the [module docs](self),
/// in particular for `SHELL`.
///
/// The builder's environment is a full copy (portable-pty seeds it from this
/// process's environment when the builder is made), so there is no [`Base`] to
/// give: `env_clear` on a builder empties it, and that is what is decided on.
///
/// ```
/// use envpolicy::spawn::apply_pty;
/// use portable_pty::{native_pty_system, CommandBuilder, PtySize};
/// use std::io::Read;
///
/// let compiled = envpolicy::load::compile_text(
///     "version = 1\nbase = \"none\"\nkeep = [\"PATH\"]\n[set]\nAGENTMUX_NESTED = \"1\"\n",
///     "inline.toml".as_ref(),
/// )?;
/// let mut cmd = CommandBuilder::new("sh");
/// cmd.args(["-c", "echo ${SHELL:-no-shell} ${GH_TOKEN:-no-token} $AGENTMUX_NESTED"]);
/// cmd.env("GH_TOKEN", "not-a-real-token");
/// let outcome = apply_pty(&compiled.policy(), &mut cmd)?;
/// assert!(outcome.removed().any(|n| n == "GH_TOKEN"));
///
/// let pair = native_pty_system().openpty(PtySize::default())?;
/// let mut child = pair.slave.spawn_command(cmd)?;
/// drop(pair.slave);
/// let mut reader = pair.master.try_clone_reader()?;
/// let mut out = Vec::new();
/// let _ = reader.read_to_end(&mut out); // ends with EIO once the child is gone
/// child.wait()?;
/// assert_eq!(String::from_utf8_lossy(&out).trim_end(), "no-shell no-token 1");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "portable-pty")]
pub fn apply_pty(
    policy: &Policy<'_>,
    cmd: &mut portable_pty::CommandBuilder,
) -> Result<Outcome, Refused> {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;

    let default_prog = cmd.is_default_prog();
    let argv: Vec<Vec<u8>> = if default_prog {
        // portable-pty runs the login shell: decide for that program.
        vec![cmd.get_shell().into_bytes()]
    } else {
        cmd.get_argv()
            .iter()
            .map(|a| a.as_bytes().to_vec())
            .collect()
    };
    let program = argv.first().cloned().unwrap_or_default();

    // Every name the builder can be asked about: this process's environment (the
    // builder's seed) and whatever it shows as UTF-8. In name order, as it holds them.
    let parent = process_env();
    let mut names: Vec<OsString> = parent
        .iter()
        .filter_map(|e| crate::bytes::split_entry(e))
        .map(|(n, _)| OsString::from_vec(n.to_vec()))
        .chain(cmd.iter_full_env_as_str().map(|(n, _)| OsString::from(n)))
        .collect();
    names.sort();
    names.dedup();
    let env: Vec<Vec<u8>> = names
        .iter()
        .filter_map(|n| {
            let v = cmd.get_env(n)?;
            Some(entry(n.as_bytes(), v.as_bytes()))
        })
        .collect();

    let (d, mut outcome, line) = decide_for(policy, &program, &argv, &env, &parent);
    if d.mode == Mode::Audit {
        return Ok(outcome);
    }
    if let Some(change) = d.refused() {
        cmd.env_clear();
        *cmd.get_argv_mut() = vec![OsString::from("\0refused by envshim policy")];
        return Err(Refused(Box::new(RefusedInner {
            change: change.clone(),
            outcome,
            line: line.unwrap_or_default(),
        })));
    }
    cmd.env_clear();
    let mut has_shell = false;
    for (name, value) in d.env.iter().filter_map(|e| crate::bytes::split_entry(e)) {
        has_shell |= name == b"SHELL";
        cmd.env(OsStr::from_bytes(name), OsStr::from_bytes(value));
    }
    let mut new_argv: Vec<OsString> = d
        .argv
        .iter()
        .map(|a| OsString::from_vec(a.clone()))
        .collect();
    if !default_prog {
        if let Some(routed) = route::take(
            &mut outcome,
            route::route(policy, &program, &d.argv, &d.env),
        ) {
            new_argv = routed;
            outcome.argv_rewritten = true;
        }
    }
    if !default_prog && d.argv != argv {
        outcome.argv_rewritten = true;
    }
    if !has_shell {
        let wrappable = !default_prog
            && std::path::Path::new(ENV_PROGRAM).exists()
            && !d.argv.first().is_some_and(|a| a.contains(&b'='));
        if wrappable {
            let mut wrapped: Vec<OsString> = [ENV_PROGRAM, "-u", "SHELL", "--"]
                .iter()
                .map(OsString::from)
                .collect();
            wrapped.append(&mut new_argv);
            new_argv = wrapped;
            outcome.argv_rewritten = true;
            outcome.changes.push(shell_change(
                ChangeAction::Wrap,
                false,
                "portable-pty sets SHELL from the password database when the builder has \
                 none: the command runs through `/usr/bin/env -u SHELL --` so the child has no SHELL",
            ));
        } else {
            outcome.changes.push(shell_change(
                ChangeAction::Set,
                true,
                if default_prog {
                    "portable-pty runs the login shell of a default-program builder and sets \
                     SHELL to it: the policy's removal of SHELL cannot apply to it"
                } else {
                    "portable-pty sets SHELL from the password database when the builder has \
                     none, and the command cannot run through `/usr/bin/env -u SHELL`"
                },
            ));
        }
    }
    if outcome.argv_rewritten {
        *cmd.get_argv_mut() = new_argv;
    }
    Ok(outcome)
}

#[cfg(feature = "portable-pty")]
fn shell_change(action: ChangeAction, loud: bool, why: &str) -> Change {
    Change {
        target: if action == ChangeAction::Wrap {
            Target::Argv
        } else {
            Target::Env
        },
        index: None,
        name: Some("SHELL".into()),
        action,
        rule: outcome::ChangeRule::PtyShell,
        why: why.into(),
        loud,
        layer: crate::layer::Layer::User,
    }
}

/// Decide, and describe the decision by names only.
/// The decision, its outcome, and the refusal line when it refuses.
fn decide_for(
    policy: &Policy<'_>,
    program: &[u8],
    argv: &[Vec<u8>],
    env: &[Vec<u8>],
    parent: &[Vec<u8>],
) -> (Decision, Outcome, Option<String>) {
    let files = outcome::read_env_files(policy);
    // The caller's own credentials must not reach argv either, even when the
    // command does not inherit them.
    let parent: &[Vec<u8>] = if env == parent { &[] } else { parent };
    let managed = crate::managed::Managed::for_process().in_force();
    let layers = outcome::Layers {
        user: outcome::Pass::new(policy, &files),
        managed: managed.as_ref().map(|m| m.pass(&[])),
        requested_mode: None,
        sticky: outcome::Sticky::default(),
    };
    let d = layers.decide(program, argv, env, parent);
    let line = d.refused().map(|_| {
        let line = d.refusal_line.as_deref().unwrap_or_default();
        outcome::redacted(policy, line.as_bytes(), &[env, parent])
    });
    // A secret in argv[0], or in the script an interpreter runs, is a secret
    // in the program's name: do not repeat it.
    let withheld = d.changes.iter().any(|c| {
        c.target == Target::Argv
            && c.index
                .is_some_and(|i| i == 0 || argv.get(i).is_some_and(|a| *a == d.program))
    });
    let outcome = Outcome {
        program: if withheld {
            "<argv[0] withheld>".into()
        } else {
            outcome::redacted(policy, &d.program, &[env, parent])
        },
        mode: match d.mode {
            Mode::Enforce => "enforce",
            Mode::Audit => "audit",
        },
        changes: d.changes.clone(),
        refusal: d.refusal.clone(),
        withheld: d
            .withheld_names(env)
            .into_iter()
            .map(|n| String::from_utf8_lossy(&n).into_owned())
            .collect(),
        argv_rewritten: false,
        rebuilt: false,
        records: Records {
            user_source: policy.source().to_vec(),
            user_mode: d.user_mode,
            managed_mode: d.managed_mode,
        },
    };
    (d, outcome, line)
}

/// Leave a refused command unable to start anything.
fn disarm_std(cmd: &mut Command) {
    let mut dead = Command::new("\0refused by envshim policy");
    dead.env_clear();
    *cmd = dead;
}

/// This process's environment as `NAME=VALUE` entries, in order, duplicates kept.
fn process_env() -> Vec<Vec<u8>> {
    std::env::vars_os()
        .map(|(n, v)| entry(n.as_bytes(), v.as_bytes()))
        .collect()
}

fn entry(name: &[u8], value: &[u8]) -> Vec<u8> {
    let mut e = Vec::with_capacity(name.len() + 1 + value.len());
    e.extend_from_slice(name);
    e.push(b'=');
    e.extend_from_slice(value);
    e
}

/// One `env`/`env_remove` of a command over an environment: a set replaces the
/// first copy of the name in place and drops the others; a removal drops them all.
fn change_env(env: &mut Vec<Vec<u8>>, name: &[u8], value: Option<&[u8]>) {
    let named = |e: &Vec<u8>| crate::bytes::split_entry(e).is_some_and(|(n, _)| n == name);
    match value {
        None => env.retain(|e| !named(e)),
        Some(v) => match env.iter().position(named) {
            Some(i) => {
                env[i] = entry(name, v);
                let mut k = 0;
                env.retain(|e| {
                    k += 1;
                    k - 1 <= i || !named(e)
                });
            }
            None => env.push(entry(name, v)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn change_env_sets_in_place_and_removes_all_copies() {
        let mut env: Vec<Vec<u8>> = vec![
            b"A=1".to_vec(),
            b"B=2".to_vec(),
            b"A=3".to_vec(),
            b"C=4".to_vec(),
        ];
        change_env(&mut env, b"A", Some(b"x=y"));
        assert_eq!(env, [&b"A=x=y"[..], b"B=2", b"C=4"]);
        change_env(&mut env, b"D", Some(b""));
        assert_eq!(env.last().unwrap(), b"D=");
        env.push(b"B=5".to_vec());
        change_env(&mut env, b"B", None);
        assert_eq!(env, [&b"A=x=y"[..], b"C=4", b"D="]);
    }

    #[test]
    fn env_clear_is_detected_through_debug() {
        let mut cmd = Command::new("prog");
        assert_eq!(env_cleared(&cmd), Some(false));
        cmd.env("A", "1").env_remove("B").arg("clear: true,");
        assert_eq!(env_cleared(&cmd), Some(false));
        cmd.env_clear();
        assert_eq!(env_cleared(&cmd), Some(true));
        cmd.env("A", "1");
        assert_eq!(env_cleared(&cmd), Some(true));
    }
}
