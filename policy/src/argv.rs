//! Deciding a child's argv: credential values and token shapes inside arguments,
//! and `NAME=VALUE` pairs that some programs carry in argv.
//!
//! Like `decide`, this runs between fork and exec and never allocates: the caller
//! passes every buffer, and a rewritten argument is built into the caller's bytes.
//!
//! Two jobs, in this order:
//!
//! 1. **Pairs.** `tmux -e`, `docker`/`podman -e/--env`, `env NAME=V`, `sudo NAME=V`
//!    and `systemd-run -E/--setenv` put environment into argv, where `ps` shows it.
//!    Each pair goes through the environment rules (`decide::judge`, with the
//!    program section's `pairs` rules when it has them). A pair that is not admitted
//!    is dropped with its flag. A credential granted to docker or podman becomes the
//!    name-only form `-e NAME`, and its `NAME=VALUE` moves to that program's
//!    environment, never argv.
//! 2. **Secrets.** Every remaining argument is searched for the value of every
//!    credential (in the child's environment, the parent's, and the env files the
//!    policy imports) and for token shapes. Attached forms (`-uX`, `--token=X`,
//!    `scheme://user:X@host`) are found because the search is for substrings. Per
//!    `argv.secrets`, the exec is refused, or the value is overwritten with `*`.
//!    The program's path is searched too; a secret there always refuses the exec
//!    (a path cannot be rewritten).
//!
//! The search is one memmem pass per credential value over the argument bytes plus
//! one shape pass: linear in the argv bytes for a given number of credentials,
//! which is small. Values shorter than `credentials.min_value_len` are not searched
//! (a value that short would match ordinary words; token shapes cover the real
//! formats).

use crate::compiled::{ArgvSecrets, Policy};
use crate::decide::{self, basename, split_entry, Action, Rule, Verdict};
use crate::envfile;
use crate::shape::{self, Shape, ShapeSet};

/// Where a credential value found in an argument came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueSource {
    /// The child environment entry at this index.
    ChildEnv(u32),
    /// The parent (calling process) environment entry at this index.
    ParentEnv(u32),
    /// An imported env file (index) at this line.
    EnvFile { file: u32, line: u32 },
}

/// Why an argument changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgRule {
    /// Unchanged.
    None,
    /// A `NAME=VALUE` pair judged by the environment rules; `name_at..name_end` is
    /// the name's byte range in the argument.
    Pair {
        rule: Rule,
        name_at: u16,
        name_end: u16,
        /// As `Verdict::loud`: a pairs keep list named a credential.
        loud: bool,
    },
    /// The flag (`-e`, `--env`, `-E`, `--setenv`) of a pair that was dropped.
    PairFlag,
    /// The argument holds the value of a credential.
    Value(ValueSource),
    /// The argument holds a token shape.
    Shape(Shape),
}

/// What happens to one argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgAction {
    Keep,
    /// Removed (a pair that was not admitted, or its flag).
    Drop,
    /// The whole exec is refused because of this argument.
    Refuse,
    /// Rewritten with the secret overwritten by `*`.
    Redact,
    /// `NAME=VALUE` rewritten to `NAME`; the pair moves to the environment.
    NameOnly,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgVerdict {
    pub action: ArgAction,
    pub rule: ArgRule,
}

/// One argument of the child's argv, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgEmit {
    /// The input argument at this index.
    Input(u32),
    /// An argument built into the caller's bytes (NUL-terminated after `len`).
    Built { start: u32, len: u32 },
}

/// Input of an argv decision.
#[derive(Clone, Copy, Debug)]
pub struct ArgvRequest<'r> {
    pub program: &'r [u8],
    pub argv: &'r [&'r [u8]],
    /// The child environment as passed in, and `decide_env`'s verdicts for it.
    pub env: &'r [&'r [u8]],
    pub env_verdicts: &'r [Verdict],
    /// The calling process's own environment, when it differs from `env` (empty
    /// otherwise): its credentials' values must not reach argv either.
    pub parent_env: &'r [&'r [u8]],
    /// Current contents of each imported env file, by index.
    pub env_files: &'r [Option<&'r [u8]>],
    /// [`file_credentials`] of `env_files`, found in advance (libenvshim.so keeps
    /// them with its cached files, so that an exec does not parse the files
    /// again); `None`: found in `env_files` here.
    pub file_credentials: Option<&'r [FileCredential<'r>]>,
}

/// A credential value that an imported env file holds, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileCredential<'a> {
    pub file: u32,
    pub line: u32,
    /// The value as written (values with escapes are compared raw; files rarely
    /// escape tokens).
    pub value: &'a [u8],
    /// The length of the unescaped value.
    pub value_len: usize,
}

/// Every credential value in the env files (by index, as they are now), in file
/// and line order: the values of a file with `role = "refuse"`, and the values of
/// other files that are credentials by name or shape. Values shorter than the
/// policy's `min_value_len` (no argument is searched for them) or longer than
/// `max_len` are left out before anyone asks whether they are credentials.
/// `f` returns false to stop.
pub fn file_credentials<'a>(
    policy: &Policy<'_>,
    env_files: &[Option<&'a [u8]>],
    max_len: usize,
    mut f: impl FnMut(FileCredential<'a>) -> bool,
) {
    use crate::compiled::{sec, Role};
    let min = policy.settings().min_value_len as usize;
    for fi in 0..policy.count(sec::ENV_FILES) as u32 {
        let Some(rec) = policy.env_file(fi) else {
            continue;
        };
        let Some(Some(contents)) = env_files.get(fi as usize) else {
            continue;
        };
        for a in envfile::assignments(contents).flatten() {
            let value_len = a.value_len();
            if value_len < min || value_len > max_len {
                continue;
            }
            let value = a.raw_value;
            let cred = rec.role == Role::Refuse || is_credential(policy, a.name, value);
            let found = FileCredential {
                file: fi,
                line: a.line,
                value,
                value_len,
            };
            if cred && !f(found) {
                return;
            }
        }
    }
}

/// Caller storage: `verdicts` and `emits` one per argument, `bytes` for rewritten
/// arguments (at most the total argv size plus one NUL per argument).
pub struct ArgvScratch<'s> {
    pub verdicts: &'s mut [ArgVerdict],
    pub emits: &'s mut [ArgEmit],
    pub bytes: &'s mut [u8],
}

/// The result of an argv decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgvSummary {
    /// The first argument that makes the exec refused, if any.
    pub refused: Option<u32>,
    /// The program's path holds a secret: it is searched as an argument is
    /// (step 2), and the exec is refused, whatever `argv.secrets` says of
    /// arguments (a path cannot be redacted, and the kernel passes it on into a
    /// script interpreter's argv, where `ps` shows it).
    pub program: Option<ArgRule>,
    /// `scratch.emits[..emitted]` is the child's argv.
    pub emitted: usize,
    /// Arguments that changed.
    pub changed: u32,
    /// Pairs that moved into the environment (`NameOnly` verdicts).
    pub moved: u32,
}

/// Bytes `ArgvScratch::bytes` needs for this argv.
pub fn bytes_needed(argv: &[&[u8]]) -> usize {
    argv.iter().map(|a| a.len() + 1).sum::<usize>() + 16
}

/// Programs that carry environment in argv.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Carrier {
    Tmux,
    Container,
    Env,
    Sudo,
    SystemdRun,
}

fn carrier(program: &[u8]) -> Option<Carrier> {
    Some(match basename(program) {
        b"tmux" => Carrier::Tmux,
        b"docker" | b"podman" => Carrier::Container,
        b"env" => Carrier::Env,
        b"sudo" => Carrier::Sudo,
        b"systemd-run" => Carrier::SystemdRun,
        _ => return None,
    })
}

fn valid_name(name: &[u8]) -> bool {
    match name.split_first() {
        Some((f, rest)) => {
            (f.is_ascii_alphabetic() || *f == b'_')
                && rest.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
        }
        None => false,
    }
}

/// A `NAME=VALUE` pair located in argv: the argument holding it, where the pair
/// starts in that argument, and the separate flag argument before it, if any.
#[derive(Clone, Copy, Debug)]
struct PairAt {
    arg: usize,
    offset: usize,
    flag: Option<usize>,
}

/// How a carrier's options are spelled, enough to find where its options end.
struct Grammar {
    /// Short options that take a value (`-e VALUE`, `-eVALUE`).
    short_value: &'static [u8],
    /// Long options that take a value when written without `=`.
    long_value: &'static [&'static [u8]],
    /// When set, every long option not in `long_bool` takes a value (docker's
    /// option set is large and mostly valued).
    long_valued_by_default: bool,
    long_bool: &'static [&'static [u8]],
    /// The short and long spellings of the option whose value is a pair.
    pair_short: &'static [u8],
    pair_long: &'static [u8],
}

const DOCKER_RUN: Grammar = Grammar {
    short_value: b"acehlmpuvw",
    long_value: &[],
    long_valued_by_default: true,
    long_bool: &[
        b"--detach",
        b"--interactive",
        b"--tty",
        b"--rm",
        b"--init",
        b"--privileged",
        b"--read-only",
        b"--publish-all",
        b"--no-healthcheck",
        b"--oom-kill-disable",
        b"--quiet",
        b"--help",
        b"--sig-proxy",
        b"--disable-content-trust",
        b"--use-api-socket",
        b"--replace",
        b"--http-proxy",
    ],
    pair_short: b"-e",
    pair_long: b"--env",
};

const SYSTEMD_RUN: Grammar = Grammar {
    short_value: b"upHME",
    long_value: &[
        b"--unit",
        b"--property",
        b"--description",
        b"--slice",
        b"--host",
        b"--machine",
        b"--uid",
        b"--gid",
        b"--nice",
        b"--working-directory",
        b"--setenv",
        b"--path-property",
        b"--socket-property",
        b"--timer-property",
        b"--on-active",
        b"--on-boot",
        b"--on-startup",
        b"--on-unit-active",
        b"--on-unit-inactive",
        b"--on-calendar",
        b"--on-timezone-change",
        b"--on-clock-change",
        b"--service-type",
        b"--slice-inherit",
    ],
    long_valued_by_default: false,
    long_bool: &[],
    pair_short: b"-E",
    pair_long: b"--setenv",
};

const ENV: Grammar = Grammar {
    short_value: b"uCS",
    long_value: &[b"--unset", b"--chdir", b"--split-string"],
    long_valued_by_default: false,
    long_bool: &[],
    pair_short: b"",
    pair_long: b"",
};

const SUDO: Grammar = Grammar {
    short_value: b"ugChprtUDRTc",
    long_value: &[
        b"--user",
        b"--group",
        b"--host",
        b"--prompt",
        b"--role",
        b"--type",
        b"--other-user",
        b"--chdir",
        b"--chroot",
        b"--close-from",
        b"--command-timeout",
        b"--login-class",
    ],
    long_valued_by_default: false,
    long_bool: &[],
    pair_short: b"",
    pair_long: b"",
};

/// Walk the options of `argv` from `i`; call `f` for each pair carried by the pair
/// option; return the index of the first operand (or `argv.len()`).
fn walk_options(g: &Grammar, argv: &[&[u8]], mut i: usize, f: &mut impl FnMut(PairAt)) -> usize {
    let is_pair = |s: &[u8]| split_entry(s).is_some_and(|(n, _)| valid_name(n));
    while let Some(&arg) = argv.get(i) {
        if arg == b"--" {
            return i + 1;
        }
        if arg == b"-" || arg.first() != Some(&b'-') || arg.len() < 2 {
            // An operand (`env -` is the old spelling of `-i`, an option).
            if arg == b"-" {
                i += 1;
                continue;
            }
            return i;
        }
        if arg.starts_with(b"--") {
            let (flag, attached) = match memchr::memchr(b'=', arg) {
                Some(eq) => (arg.get(..eq).unwrap_or(arg), arg.get(eq + 1..)),
                None => (arg, None),
            };
            let is_pair_flag = !g.pair_long.is_empty() && flag == g.pair_long;
            match attached {
                Some(v) => {
                    if is_pair_flag && is_pair(v) {
                        f(PairAt {
                            arg: i,
                            offset: flag.len() + 1,
                            flag: None,
                        });
                    }
                    i += 1;
                }
                None => {
                    let takes = if g.long_valued_by_default {
                        !g.long_bool.contains(&flag)
                    } else {
                        g.long_value.contains(&flag)
                    };
                    if takes {
                        if is_pair_flag && argv.get(i + 1).is_some_and(|v| is_pair(v)) {
                            f(PairAt {
                                arg: i + 1,
                                offset: 0,
                                flag: Some(i),
                            });
                        }
                        i += 2;
                    } else {
                        i += 1;
                    }
                }
            }
            continue;
        }
        // A cluster of short options: the first one that takes a value ends it,
        // with the rest of the argument or the next argument as its value.
        let mut consumed_next = false;
        for (k, &o) in arg.iter().enumerate().skip(1) {
            if g.short_value.contains(&o) {
                let rest = arg.get(k + 1..).unwrap_or(&[]);
                let is_pair_flag = g.pair_short.get(1) == Some(&o);
                if rest.is_empty() {
                    if is_pair_flag && argv.get(i + 1).is_some_and(|v| is_pair(v)) {
                        f(PairAt {
                            arg: i + 1,
                            offset: 0,
                            flag: Some(i),
                        });
                    }
                    consumed_next = true;
                } else if is_pair_flag && k == 1 && is_pair(rest) {
                    f(PairAt {
                        arg: i,
                        offset: 2,
                        flag: None,
                    });
                }
                break;
            }
        }
        i += if consumed_next { 2 } else { 1 };
    }
    argv.len()
}

/// Call `f` for each pair a carrier program has in its argv.
///
/// The parsers know where each program's options end, so an argument of the
/// command a program runs (`docker run IMAGE cmd -e X=1`) is never taken for one
/// of the program's own pairs. tmux is the exception: its pairs follow a command
/// name anywhere in a command sequence, so every `-e NAME=VALUE` counts.
fn for_each_pair(c: Carrier, argv: &[&[u8]], mut f: impl FnMut(PairAt)) {
    let is_pair = |s: &[u8]| split_entry(s).is_some_and(|(n, _)| valid_name(n));
    match c {
        Carrier::Tmux => {
            let mut i = 1;
            while let Some(&arg) = argv.get(i) {
                if arg == b"-e" {
                    if argv.get(i + 1).is_some_and(|v| is_pair(v)) {
                        f(PairAt {
                            arg: i + 1,
                            offset: 0,
                            flag: Some(i),
                        });
                    }
                    i += 2;
                    continue;
                }
                if arg.strip_prefix(b"-e").is_some_and(is_pair) {
                    f(PairAt {
                        arg: i,
                        offset: 2,
                        flag: None,
                    });
                }
                i += 1;
            }
        }
        Carrier::Container => {
            // Global options, then the subcommand; only run, create and exec
            // take -e.
            let sub = walk_options(&DOCKER_GLOBAL, argv, 1, &mut |_| {});
            if matches!(argv.get(sub).copied(), Some(b"run" | b"create" | b"exec")) {
                walk_options(&DOCKER_RUN, argv, sub + 1, &mut f);
            }
        }
        Carrier::SystemdRun => {
            walk_options(&SYSTEMD_RUN, argv, 1, &mut f);
        }
        Carrier::Env | Carrier::Sudo => {
            // Options, then pairs up to the first operand that is not a pair.
            let g = if c == Carrier::Env { &ENV } else { &SUDO };
            let mut i = walk_options(g, argv, 1, &mut f);
            while let Some(arg) = argv.get(i) {
                if !is_pair(arg) {
                    break;
                }
                f(PairAt {
                    arg: i,
                    offset: 0,
                    flag: None,
                });
                i += 1;
            }
        }
    }
}

/// docker's and podman's global options (before the subcommand).
const DOCKER_GLOBAL: Grammar = Grammar {
    short_value: b"Hcl",
    long_value: &[
        b"--host",
        b"--context",
        b"--log-level",
        b"--config",
        b"--tlscacert",
        b"--tlscert",
        b"--tlskey",
        b"--connection",
        b"--url",
        b"--identity",
        b"--root",
        b"--runroot",
        b"--storage-driver",
        b"--cgroup-manager",
        b"--events-backend",
        b"--network-cmd-path",
        b"--tmpdir",
    ],
    long_valued_by_default: false,
    long_bool: &[],
    pair_short: b"",
    pair_long: b"",
};

/// Decide the child's argv. `env_verdicts` must come from `decide_env` on `env`.
#[inline(never)] // One copy, out of the shim's exec hook (shim/hot_text.ld).
pub fn decide_argv(
    policy: &Policy<'_>,
    req: &ArgvRequest<'_>,
    scratch: &mut ArgvScratch<'_>,
) -> Result<ArgvSummary, usize> {
    let n = req.argv.len();
    if scratch.verdicts.len() < n || scratch.emits.len() < n {
        return Err(bytes_needed(req.argv));
    }
    let keep = ArgVerdict {
        action: ArgAction::Keep,
        rule: ArgRule::None,
    };
    for v in scratch.verdicts.iter_mut().take(n) {
        *v = keep;
    }
    let settings = *policy.settings();
    let mask = decide::program_mask(policy, req.program);

    // 1. Pairs.
    if settings.env_flags {
        if let Some(c) = carrier(req.program) {
            let pairs_scope = (0..crate::compiled::MAX_PROGRAMS as u16).find(|&p| {
                (mask >> p) & 1 == 1 && policy.program(p as u32).is_some_and(|r| r.pairs_base != 0)
            });
            let verdicts = &mut *scratch.verdicts;
            for_each_pair(c, req.argv, |at| {
                let Some(arg) = req.argv.get(at.arg) else {
                    return;
                };
                let Some((name, value)) = arg.get(at.offset..).and_then(split_entry) else {
                    return;
                };
                let v = decide::judge(policy, req.program, mask, name, value, pairs_scope);
                let name_at = at.offset as u16;
                let name_end = (at.offset + name.len()).min(u16::MAX as usize) as u16;
                let rule = ArgRule::Pair {
                    rule: v.rule,
                    name_at,
                    name_end,
                    loud: v.loud,
                };
                let (action, rule) = match v.action {
                    Action::Keep => return,
                    Action::Grant if c == Carrier::Container => {
                        match launders(policy, req, name, value) {
                            // Another credential's value under the granted name:
                            // an argument that holds a secret (step 2's verdict).
                            Some(source) if settings.argv_secrets == ArgvSecrets::Refuse => {
                                (ArgAction::Refuse, ArgRule::Value(source))
                            }
                            Some(source) => (ArgAction::Drop, ArgRule::Value(source)),
                            None => (ArgAction::NameOnly, rule),
                        }
                    }
                    _ => (ArgAction::Drop, rule),
                };
                if let Some(slot) = verdicts.get_mut(at.arg) {
                    *slot = ArgVerdict { action, rule };
                }
                if action == ArgAction::Drop {
                    if let Some(flag) = at.flag.and_then(|f| verdicts.get_mut(f)) {
                        *flag = ArgVerdict {
                            action: ArgAction::Drop,
                            rule: ArgRule::PairFlag,
                        };
                    }
                }
            });
        }
    }

    // 2. Secrets, in every argument still passed (argv[0] included): every
    // credential value once against all arguments (so the parent's environment is
    // judged once per exec, not once per argument), then token shapes in the
    // arguments no value matched.
    let mut refused = None;
    let mut program = None;
    if settings.argv_secrets != ArgvSecrets::Allow {
        let action = if settings.argv_secrets == ArgvSecrets::Refuse {
            ArgAction::Refuse
        } else {
            ArgAction::Redact
        };
        let verdicts = &mut *scratch.verdicts;
        let longest = req
            .argv
            .iter()
            .zip(verdicts.iter())
            .filter_map(|(arg, v)| searched_part(v, arg).map(<[u8]>::len))
            .max()
            .unwrap_or(0)
            .max(req.program.len());
        for_each_credential_value_up_to(policy, req, longest, |value, source| {
            let finder = memchr::memmem::Finder::new(value);
            if program.is_none() && finder.find(req.program).is_some() {
                program = Some(ArgRule::Value(source));
            }
            for (i, arg) in req.argv.iter().enumerate() {
                let Some(slot) = verdicts.get_mut(i) else {
                    break;
                };
                if let Some(hay) = searched_part(slot, arg) {
                    if finder.find(hay).is_some() {
                        *slot = ArgVerdict {
                            action,
                            rule: ArgRule::Value(source),
                        };
                    }
                }
            }
            true
        });
        let shapes = ShapeSet::from_bits(settings.shapes);
        if program.is_none() {
            program = shape::find_shape(req.program, shapes).map(|m| ArgRule::Shape(m.shape));
        }
        for (i, arg) in req.argv.iter().enumerate() {
            let Some(slot) = verdicts.get_mut(i) else {
                break;
            };
            if let Some(m) = searched_part(slot, arg).and_then(|hay| shape::find_shape(hay, shapes))
            {
                *slot = ArgVerdict {
                    action,
                    rule: ArgRule::Shape(m.shape),
                };
            }
        }
        if action == ArgAction::Refuse {
            refused = verdicts
                .iter()
                .take(n)
                .position(|v| v.action == ArgAction::Refuse)
                .map(|i| i as u32);
        }
    }

    // Emit.
    let mut summary = ArgvSummary {
        refused,
        program,
        emitted: 0,
        changed: 0,
        moved: 0,
    };
    let mut used = 0usize;
    let mut need = 0usize;
    for i in 0..n {
        let Some(v) = scratch.verdicts.get(i).copied() else {
            continue;
        };
        let Some(arg) = req.argv.get(i) else { continue };
        if v.action != ArgAction::Keep {
            summary.changed += 1;
        }
        let emit = match v.action {
            ArgAction::Keep | ArgAction::Refuse => ArgEmit::Input(i as u32),
            ArgAction::Drop => continue,
            ArgAction::NameOnly => {
                summary.moved += 1;
                let ArgRule::Pair { name_end, .. } = v.rule else {
                    continue;
                };
                let head = arg.get(..name_end as usize).unwrap_or(&[]);
                need += head.len() + 1;
                match put(scratch.bytes, &mut used, head) {
                    Some(e) => e,
                    None => continue,
                }
            }
            ArgAction::Redact => {
                need += arg.len() + 1;
                let start = used;
                let Some(e) = put(scratch.bytes, &mut used, arg) else {
                    continue;
                };
                if let Some(dst) = scratch.bytes.get_mut(start..start + arg.len()) {
                    redact_in_place(policy, req, dst);
                }
                e
            }
        };
        if let Some(slot) = scratch.emits.get_mut(summary.emitted) {
            *slot = emit;
            summary.emitted += 1;
        }
    }
    if need > scratch.bytes.len() {
        return Err(need + 16);
    }
    Ok(summary)
}

fn put(bytes: &mut [u8], used: &mut usize, s: &[u8]) -> Option<ArgEmit> {
    let start = *used;
    let dst = bytes.get_mut(start..start + s.len() + 1)?;
    let (body, nul) = dst.split_at_mut(s.len());
    body.copy_from_slice(s);
    nul.fill(0);
    *used = start + s.len() + 1;
    Some(ArgEmit::Built {
        start: start as u32,
        len: s.len() as u32,
    })
}

/// Would the granted pair `name=value` deliver the value of another credential?
/// A grant delivers only its own variable's value (as `decide_env` rules for the
/// environment): the source of the first credential value equal to `value` whose
/// variable has another name.
fn launders(
    policy: &Policy<'_>,
    req: &ArgvRequest<'_>,
    name: &[u8],
    value: &[u8],
) -> Option<ValueSource> {
    let mut found = None;
    for_each_credential_value_up_to(policy, req, value.len(), |v, source| {
        if v == value && source_name(req, source) != Some(name) {
            found = Some(source);
        }
        found.is_none()
    });
    found
}

/// The name of the variable a credential value came from.
pub fn source_name<'r>(req: &ArgvRequest<'r>, source: ValueSource) -> Option<&'r [u8]> {
    let entry_name = |e: &'r [u8]| split_entry(e).map(|(n, _)| n);
    match source {
        ValueSource::ChildEnv(i) => req.env.get(i as usize).and_then(|e| entry_name(e)),
        ValueSource::ParentEnv(i) => req.parent_env.get(i as usize).and_then(|e| entry_name(e)),
        ValueSource::EnvFile { file, line } => req
            .env_files
            .get(file as usize)
            .copied()
            .flatten()
            .and_then(|c| envfile::assignments(c).flatten().find(|a| a.line == line))
            .map(|a| a.name),
    }
}

/// Every credential value this decision knows of, with where it came from.
pub fn for_each_credential_value(
    policy: &Policy<'_>,
    req: &ArgvRequest<'_>,
    f: impl FnMut(&[u8], ValueSource) -> bool,
) {
    for_each_credential_value_up_to(policy, req, usize::MAX, f);
}

/// [`for_each_credential_value`], skipping values longer than `max_len` before
/// asking whether they are credentials: a value longer than every argument cannot
/// be inside one, and most commands' arguments are shorter than a token.
pub fn for_each_credential_value_up_to(
    policy: &Policy<'_>,
    req: &ArgvRequest<'_>,
    max_len: usize,
    mut f: impl FnMut(&[u8], ValueSource) -> bool,
) {
    let min = policy.settings().min_value_len as usize;
    let wanted = |len: usize| len >= min && len <= max_len;
    for (i, v) in req.env_verdicts.iter().enumerate() {
        if !v.credential {
            continue;
        }
        if let Some((_, value)) = req.env.get(i).and_then(|e| split_entry(e)) {
            if wanted(value.len()) && !f(value, ValueSource::ChildEnv(i as u32)) {
                return;
            }
        }
    }
    for (i, e) in req.parent_env.iter().enumerate() {
        let Some((name, value)) = split_entry(e) else {
            continue;
        };
        if wanted(value.len())
            && is_credential(policy, name, value)
            && !f(value, ValueSource::ParentEnv(i as u32))
        {
            return;
        }
    }
    let mut each = |c: FileCredential<'_>| {
        !wanted(c.value_len)
            || f(
                c.value,
                ValueSource::EnvFile {
                    file: c.file,
                    line: c.line,
                },
            )
    };
    match req.file_credentials {
        Some(found) => {
            for &c in found {
                if !each(c) {
                    return;
                }
            }
        }
        None => file_credentials(policy, req.env_files, max_len, each),
    }
}

/// Is (name, value) a credential under this policy, by name, import or shape?
pub fn is_credential(policy: &Policy<'_>, name: &[u8], value: &[u8]) -> bool {
    decide::names_credential(policy, name)
        || shape::find_shape(value, ShapeSet::from_bits(policy.settings().shapes)).is_some()
}

/// The part of an argument still to search for secrets: all of it, or the name of a
/// granted pair whose value moves to the environment; `None` when the argument is
/// already dropped or refused.
fn searched_part<'a>(v: &ArgVerdict, arg: &'a [u8]) -> Option<&'a [u8]> {
    match (v.action, v.rule) {
        (ArgAction::NameOnly, ArgRule::Pair { name_end, .. }) => {
            Some(arg.get(..name_end as usize).unwrap_or(&[]))
        }
        (ArgAction::Keep, _) => Some(arg),
        _ => None,
    }
}

/// Overwrite every credential value and token shape in `arg` with `*`, in place
/// (also what libenvshim.so's self-scrub does to its own argv memory).
pub fn redact_in_place(policy: &Policy<'_>, req: &ArgvRequest<'_>, arg: &mut [u8]) {
    for_each_credential_value_up_to(policy, req, arg.len(), |value, _| {
        let mut from = 0;
        while let Some(pos) = arg.get(from..).and_then(|h| memchr::memmem::find(h, value)) {
            let at = from + pos;
            if let Some(dst) = arg.get_mut(at..at + value.len()) {
                dst.fill(b'*');
            }
            from = at + value.len().max(1);
        }
        true
    });
    let shapes = ShapeSet::from_bits(policy.settings().shapes);
    let mut from = 0;
    while let Some(m) = arg.get(from..).and_then(|h| shape::find_shape(h, shapes)) {
        if let Some(dst) = arg.get_mut(from + m.start..from + m.end) {
            dst.fill(b'*');
        }
        from += m.end.max(1);
    }
}
