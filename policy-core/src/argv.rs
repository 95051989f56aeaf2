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
//!    environment, never argv. A pair that is one of several words of its
//!    argument (`systemd-run -p "Environment=A=1 B=2"`, `env -S "A=1 cmd"`)
//!    cannot be dropped alone: the exec is refused.
//! 2. **Secrets.** Every remaining argument is searched for the value of every
//!    credential (in the child's environment, the parent's, and the env files the
//!    policy imports) and for token shapes. Attached forms (`-uX`, `--token=X`,
//!    `scheme://user:X@host`) are found because the search is for substrings. Per
//!    `argv.secrets`, the exec is refused, or the value is overwritten with `*`.
//!    The program's path is searched too; a secret there always refuses the exec
//!    (a path cannot be rewritten).
//!
//! The search is one memmem pass per credential value over the argument bytes,
//! then one per base64 needle of it ([`crate::encoded`]: an argument holding an
//! encoded copy, `Authorization: Basic <base64 of user:TOKEN>`, is refused the
//! same way) over the arguments long enough for one, plus one shape pass: linear
//! in the argv bytes for a given number of credentials, which is small. Values shorter than `credentials.min_value_len` are not searched
//! (a value that short would match ordinary words; token shapes cover the real
//! formats).

use crate::compiled::{ArgvSecrets, Policy};
use crate::bytes::split_entry;
use crate::decide::{self, Action, Rule, Verdict};
use crate::envfile;
use crate::pairs::{for_each_pair, Carrier, MAX_ESCAPED_NAME};
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
    /// The value of secret N that this exec delivers.
    Secret(u32),
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
    /// The arguments hold the words of list `list` of secret `secret`'s
    /// `deny_args` (this argument completes them): the program would show the
    /// secret. The exec is refused whatever `argv.secrets` says.
    DenyArgs { secret: u16, list: u16 },
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
    /// A cluster of short options cut before the dropped pair's option letter:
    /// its first `n` bytes stay (`-de` becomes `-d`, `-deNAME=V` becomes `-d`).
    Unflag(u16),
}

impl ArgRule {
    /// The rule's stable id, as records and explanations name it: a pair
    /// carries the id of the environment rule that judged it.
    pub fn id(self) -> &'static str {
        match self {
            ArgRule::None => "none",
            ArgRule::Pair { rule, .. } => rule.id(),
            ArgRule::PairFlag => "pair.flag",
            ArgRule::Value(_) => "argv.value",
            ArgRule::Shape(_) => "argv.shape",
            ArgRule::DenyArgs { .. } => "secret.deny-args",
        }
    }
}

/// Is an argument's change worth a warning in enforce mode: a refusal, or a
/// pair whose rule is (a credential's), as [`crate::decide::Verdict::loud`] is
/// for an entry. Every front end's records and warnings ask this.
pub fn loud(v: &ArgVerdict) -> bool {
    match v.rule {
        ArgRule::Pair { loud, .. } => loud,
        _ => v.action == ArgAction::Refuse,
    }
}

impl ArgAction {
    /// The action's stable id: a cut cluster of options is a `drop` of the
    /// pair's letter.
    pub fn id(self) -> &'static str {
        match self {
            ArgAction::Keep => "keep",
            ArgAction::Drop | ArgAction::Unflag(_) => "drop",
            ArgAction::Refuse => "refuse",
            ArgAction::Redact => "redact",
            ArgAction::NameOnly => "name-only",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgVerdict {
    pub action: ArgAction,
    pub rule: ArgRule,
}

impl ArgVerdict {
    /// A granted docker/podman pair moves from argv into the child's environment
    /// (`NameOnly` on a `Pair`): the argument's own `NAME=VALUE` bytes become the
    /// entry, in place of an entry of the same name ([`entry_has_name`]), so that
    /// no name is there twice. The name and the entry, for this verdict's
    /// argument `arg`; `None` when nothing moves.
    pub fn moved_pair<'a>(&self, arg: &'a [u8]) -> Option<(&'a [u8], &'a [u8])> {
        let (ArgAction::NameOnly, ArgRule::Pair { name_at, name_end, .. }) =
            (self.action, self.rule)
        else {
            return None;
        };
        Some((
            arg.get(name_at as usize..name_end as usize)?,
            arg.get(name_at as usize..)?,
        ))
    }
}

/// Whether the environment entry `entry` is `name=...`.
pub fn entry_has_name(entry: &[u8], name: &[u8]) -> bool {
    entry.get(name.len()) == Some(&b'=') && entry.starts_with(name)
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
    /// The path given to exec (or the bare name before a `PATH` search): a
    /// secret it holds refuses the exec, and its basename says whether it
    /// carries environment in argv.
    pub program: &'r [u8],
    /// The program as rules name it ([`crate::identity`]): which
    /// `[program.NAME]` sections and grants apply.
    pub identity: crate::identity::Identity<'r>,
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
    /// The values of the secrets this exec delivers, by index, as
    /// [`crate::decide::EnvRequest::secrets`] has them: no argument may hold one.
    pub secrets: &'r [Option<&'r [u8]>],
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
            let cred = rec.role == Role::Refuse || decide::is_credential(policy, a.name, value);
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

/// Decide the child's argv. `env_verdicts` must come from `decide_env` on `env`.
/// The carrier `program` is, by its basename: a multiplexer's by its row of
/// [`crate::mux::MULTIPLEXERS`], any other by [`crate::pairs::carrier_by_name`].
pub fn carrier(program: &[u8]) -> Option<Carrier> {
    let name = crate::bytes::basename(program);
    match crate::mux::by_program(name) {
        Some(m) => m.carrier,
        None => crate::pairs::carrier_by_name(name),
    }
}

/// The steps: pairs (a carrier program's `NAME=VALUE` arguments, judged by the
/// environment rules), secrets (credential values, then token shapes), then the
/// child's arguments.
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
    let mask = crate::programs::identity_mask(policy, &req.identity);
    if settings.env_flags {
        if let Some(c) = carrier(req.program) {
            judge_pairs(policy, req, mask, c, scratch.verdicts);
        }
    }
    deny_args(policy, req, scratch.verdicts);
    let (refused, program) = if settings.argv_secrets == ArgvSecrets::Allow {
        (None, None)
    } else {
        find_secrets(policy, req, scratch.verdicts)
    };
    // A pair among other words of its argument refuses the exec whatever
    // `argv.secrets` says (step 1).
    let refused = refused.or_else(|| {
        scratch
            .verdicts
            .iter()
            .take(n)
            .position(|v| v.action == ArgAction::Refuse)
            .map(|i| i as u32)
    });
    let mut summary = ArgvSummary {
        refused,
        program,
        emitted: 0,
        changed: 0,
        moved: 0,
    };
    let need = emit_arguments(policy, req, scratch, &mut summary);
    if need > scratch.bytes.len() {
        return Err(need + 16);
    }
    Ok(summary)
}

/// Step 1, pairs: each `NAME=VALUE` a carrier program (`c`) reads as environment
/// goes through the environment rules; what they do not keep is dropped with its
/// flag (or cut from its cluster of short options), and a granted docker/podman
/// pair moves into the environment, unless its value is another credential's.
#[inline(always)]
fn judge_pairs(
    policy: &Policy<'_>,
    req: &ArgvRequest<'_>,
    mask: u64,
    c: Carrier,
    verdicts: &mut [ArgVerdict],
) {
    let settings = *policy.settings();
    let pairs_scope = pairs_scope(policy, mask);
    for_each_pair(c, req.argv, |at| {
        let Some((written, value)) = at.name_value(req.argv) else {
            return;
        };
        let mut unescaped = [0; MAX_ESCAPED_NAME];
        let Some(name) = at.judged_name(written, &mut unescaped) else {
            return;
        };
        let v = decide::judge(policy, &req.identity, mask, name, value, pairs_scope);
        let name_at = at.offset as u16;
        let name_end = (at.offset + written.len()).min(u16::MAX as usize) as u16;
        let rule = ArgRule::Pair {
            rule: v.rule,
            name_at,
            name_end,
            loud: v.loud,
        };
        let (action, rule) = match v.action {
            Action::Keep => return,
            // Read from a command line another parser reads: a secret's name only.
            _ if at.loose && !v.credential => return,
            // One of several words of its argument: it cannot be dropped alone,
            // and the argument cannot be passed with it, so the exec is refused.
            _ if at.within => (ArgAction::Refuse, rule),
            Action::Grant if c == Carrier::Container => {
                match launders(policy, req, name, value) {
                    // Another credential's value under the granted name: an
                    // argument that holds a secret (step 2's verdict).
                    Some(source) if settings.argv_secrets == ArgvSecrets::Refuse => {
                        (ArgAction::Refuse, ArgRule::Value(source))
                    }
                    Some(source) => (ArgAction::Drop, ArgRule::Value(source)),
                    None => (ArgAction::NameOnly, rule),
                }
            }
            _ => (ArgAction::Drop, rule),
        };
        // Dropped from a cluster, the options before its letter stay.
        let unflag = at.letter.map(|k| ArgAction::Unflag(k as u16));
        let attached_in_cluster = at.flag.is_none() && action == ArgAction::Drop;
        let action = match unflag {
            Some(u) if attached_in_cluster => u,
            _ => action,
        };
        if let Some(slot) = verdicts.get_mut(at.arg) {
            *slot = ArgVerdict { action, rule };
        }
        if action == ArgAction::Drop {
            if let Some(flag) = at.flag.and_then(|f| verdicts.get_mut(f)) {
                *flag = ArgVerdict {
                    action: unflag.unwrap_or(ArgAction::Drop),
                    rule: ArgRule::PairFlag,
                };
            }
        }
    });
}

/// Step 1b, a secret's `deny_args`: a program that gets a secret, asked to show
/// it (`gh auth token`), is refused, whether or not the secret is delivered
/// this time ([`crate::secret::denied_args`]).
fn deny_args(policy: &Policy<'_>, req: &ArgvRequest<'_>, verdicts: &mut [ArgVerdict]) {
    let wanted = crate::secret::wanted(policy, req.program);
    if wanted == 0 {
        return;
    }
    let args = req.argv.get(1..).unwrap_or(&[]);
    let Some((secret, list, at)) = crate::secret::denied_args(policy, wanted, args) else {
        return;
    };
    if let Some(slot) = verdicts.get_mut(at + 1) {
        *slot = ArgVerdict {
            action: ArgAction::Refuse,
            rule: ArgRule::DenyArgs {
                secret: secret as u16,
                list: list as u16,
            },
        };
    }
}

/// Step 2, secrets, in every argument still passed (`argv[0]` included) and in the
/// program's path: every credential value once against all arguments (so the
/// parent's environment is judged once per exec, not once per argument), then
/// token shapes in the arguments no value matched. Returns the first refused
/// argument (`argv.secrets = "refuse"`) and why the path is refused, if it is.
fn find_secrets(
    policy: &Policy<'_>,
    req: &ArgvRequest<'_>,
    verdicts: &mut [ArgVerdict],
) -> (Option<u32>, Option<ArgRule>) {
    let settings = *policy.settings();
    let action = if settings.argv_secrets == ArgvSecrets::Refuse {
        ArgAction::Refuse
    } else {
        ArgAction::Redact
    };
    let mut program = None;
    let longest = req
        .argv
        .iter()
        .zip(verdicts.iter())
        .filter_map(|(arg, v)| searched_part(v, arg).map(<[u8]>::len))
        .max()
        .unwrap_or(0)
        .max(req.program.len());
    // Does anything searched hold a byte that starts an escape? One scan for
    // all credentials; most execs hold none.
    let escapes = crate::escaped::may_hold(req.program)
        || req
            .argv
            .iter()
            .zip(verdicts.iter())
            .any(|(arg, v)| searched_part(v, arg).is_some_and(crate::escaped::may_hold));
    for_each_credential_value_up_to(policy, req, longest, |value, source| {
        let finder = crate::bytes::Finder::new(value);
        let found = Found { action, source };
        found.mark(req, verdicts, &mut program, |hay| finder.find(hay).is_some());
        // Its base64 copies, in what the raw search left, with needles built only
        // if something is long enough to hold one.
        let Some(shortest) = crate::encoded::shortest_needle(value.len()) else {
            return true;
        };
        // A sieve first: a long argument (up to the 1 MiB of an argv) is passed
        // over at one sample per needle's length, not searched three times.
        let mut built = None;
        let holds = |hay: &[u8]| {
            hay.len() >= shortest && {
                let (needles, sieve) = built.get_or_insert_with(|| {
                    let needles = crate::encoded::Base64Needles::of(value);
                    let mut sieve = crate::encoded::Sieve::new(shortest);
                    sieve.add(&needles);
                    (needles, sieve)
                });
                sieve.may_hold(hay) && needles.found_in(hay)
            }
        };
        found.mark(req, verdicts, &mut program, holds);
        if escapes {
            mark_escaped(value, found, req, verdicts, &mut program);
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
        if let Some(m) = searched_part(slot, arg).and_then(|hay| shape::find_shape(hay, shapes)) {
            *slot = ArgVerdict {
                action,
                rule: ArgRule::Shape(m.shape),
            };
        }
    }
    let refused = (action == ArgAction::Refuse)
        .then(|| {
            verdicts
                .iter()
                .take(req.argv.len())
                .position(|v| v.action == ArgAction::Refuse)
                .map(|i| i as u32)
        })
        .flatten();
    (refused, program)
}

/// Step 3, the child's arguments, into `scratch.emits` (and `summary`): kept ones
/// as they are, dropped ones not at all, the rest built into `scratch.bytes`.
/// Returns the bytes that needed (more than `scratch.bytes` holds: try again).
#[inline(always)]
fn emit_arguments(
    policy: &Policy<'_>,
    req: &ArgvRequest<'_>,
    scratch: &mut ArgvScratch<'_>,
    summary: &mut ArgvSummary,
) -> usize {
    let mut used = 0usize;
    let mut need = 0usize;
    for i in 0..req.argv.len() {
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
            ArgAction::Unflag(n) => {
                let head = arg.get(..n as usize).unwrap_or(arg);
                need += head.len() + 1;
                match put(scratch.bytes, &mut used, head) {
                    Some(e) => e,
                    None => continue,
                }
            }
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
    need
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

/// The program section whose `[program.NAME.pairs]` rules judge this program's
/// pairs: the first that applies and has them.
fn pairs_scope(policy: &Policy<'_>, mask: u64) -> Option<u16> {
    (0..crate::compiled::MAX_PROGRAMS as u16).find(|&p| {
        (mask >> p) & 1 == 1 && policy.program(p as u32).is_some_and(|r| r.pairs_base.is_some())
    })
}

/// Every pair `program` carries in `argv` that the policy would not pass as it is
/// (step 1 of [`decide_argv`]): `f(argument, the value's byte range, whether the
/// pair is one of several words of its argument)`. For self-scrub, which can
/// only overwrite a process's own argv in place.
pub fn each_refused_pair(
    policy: &Policy<'_>,
    program: &[u8],
    argv: &[&[u8]],
    mut f: impl FnMut(usize, core::ops::Range<usize>, bool),
) {
    let Some(c) = carrier(program) else { return };
    if !policy.settings().env_flags {
        return;
    }
    let mask = crate::programs::program_mask(policy, program);
    let pairs_scope = pairs_scope(policy, mask);
    for_each_pair(c, argv, |at| {
        let Some((written, value)) = at.name_value(argv) else {
            return;
        };
        let mut unescaped = [0; MAX_ESCAPED_NAME];
        let Some(name) = at.judged_name(written, &mut unescaped) else {
            return;
        };
        let v = decide::judge(
            policy,
            &crate::identity::Identity::itself(program),
            mask,
            name,
            value,
            pairs_scope,
        );
        if v.action != Action::Keep && (v.credential || !at.loose) {
            match at.value_in {
                Some((v, start)) => f(v, start..start + value.len(), true),
                None => {
                    // Where the value lies in its argument (after an `=` that may
                    // be written as an escape).
                    let arg = argv.get(at.arg).map_or(0, |a| a.as_ptr() as usize);
                    let start = (value.as_ptr() as usize).wrapping_sub(arg);
                    f(at.arg, start..start + value.len(), at.within);
                }
            }
        }
    });
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
        let from = source_name(req.env, req.parent_env, req.env_files, source);
        if v == value && from != Some(name) {
            found = Some(source);
        }
        found.is_none()
    });
    found
}

/// The name of the variable a credential value came from: in the child's
/// environment, the caller's, or an env file (the fields of an [`ArgvRequest`]).
pub fn source_name<'r>(
    env: &[&'r [u8]],
    parent_env: &[&'r [u8]],
    env_files: &[Option<&'r [u8]>],
    source: ValueSource,
) -> Option<&'r [u8]> {
    let entry_name = |e: &'r [u8]| split_entry(e).map(|(n, _)| n);
    match source {
        ValueSource::ChildEnv(i) => env.get(i as usize).and_then(|e| entry_name(e)),
        ValueSource::ParentEnv(i) => parent_env.get(i as usize).and_then(|e| entry_name(e)),
        ValueSource::EnvFile { file, line } => env_files
            .get(file as usize)
            .copied()
            .flatten()
            .and_then(|c| envfile::assignments(c).flatten().find(|a| a.line == line))
            .map(|a| a.name),
        // Named by the policy, not by these arrays: see `crate::secret`.
        ValueSource::Secret(_) => None,
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
    for (i, value) in req.secrets.iter().enumerate() {
        if let Some(value) = value.filter(|v| v.len() <= max_len) {
            if !f(value, ValueSource::Secret(i as u32)) {
                return;
            }
        }
    }
    for (i, v) in req.env_verdicts.iter().enumerate() {
        // A copy of another credential (bash's `_` holding the path of the
        // program it runs) is not searched for: whatever holds it holds the
        // credential it copies, which is searched for here and is the one a
        // message names.
        if !v.credential || is_copy(v.rule) {
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
            && decide::is_credential(policy, name, value)
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

/// Overwrite every escaped copy of `value` in `arg` with `*` (the escapes that
/// hold its bytes, whole).
#[cold]
#[inline(never)]
fn overwrite_escaped(value: &[u8], arg: &mut [u8]) {
    let copies = crate::escaped::EscapedCopies::of(value);
    while let Some(r) = copies.find_in(arg) {
        match arg.get_mut(r) {
            // `*` starts no escape: the next search cannot find it again.
            Some(dst) if !dst.is_empty() => dst.fill(b'*'),
            _ => break,
        }
    }
}

/// Does `rule` mark a copy of a credential that [`for_each_credential_value_up_to`]
/// visits on its own (the environment's, the caller's, or a secret)?
fn is_copy(rule: Rule) -> bool {
    matches!(
        rule,
        Rule::CredentialValue(_) | Rule::CredentialParentValue(_) | Rule::SecretValue(_)
    )
}

/// The arguments (and the program) that hold `value` escaped
/// ([`crate::escaped`]): a password passed on through `printf %q`, in a URL or
/// in a JSON argument. An argument with no byte that starts an escape costs one
/// scan; the searches are built only for one that has. Out of line: most execs
/// hold no escape, and a start's self-scrub and a fork child's exec touch this
/// code's pages only when one does.
#[inline(never)]
fn mark_escaped(
    value: &[u8],
    found: Found,
    req: &ArgvRequest<'_>,
    verdicts: &mut [ArgVerdict],
    program: &mut Option<ArgRule>,
) {
    let mut built = None;
    found.mark(req, verdicts, program, |hay| {
        crate::escaped::may_hold(hay)
            && built
                .get_or_insert_with(|| crate::escaped::EscapedCopies::of(value))
                .found_in(hay)
    });
}

/// What a credential value found in argv makes of the argument that holds it
/// (`argv.secrets`' action), and whose value it is.
#[derive(Clone, Copy)]
struct Found {
    action: ArgAction,
    source: ValueSource,
}

impl Found {
    /// The program, unless something already refused it, and every argument
    /// still searched ([`searched_part`]), marked where `holds`: the one
    /// marking of the three searches for a value (raw, base64, escaped).
    #[inline(always)]
    fn mark(
        self,
        req: &ArgvRequest<'_>,
        verdicts: &mut [ArgVerdict],
        program: &mut Option<ArgRule>,
        mut holds: impl FnMut(&[u8]) -> bool,
    ) {
        if program.is_none() && holds(req.program) {
            *program = Some(ArgRule::Value(self.source));
        }
        for (i, arg) in req.argv.iter().enumerate() {
            let Some(slot) = verdicts.get_mut(i) else {
                break;
            };
            if searched_part(slot, arg).is_some_and(&mut holds) {
                *slot = ArgVerdict {
                    action: self.action,
                    rule: ArgRule::Value(self.source),
                };
            }
        }
    }
}

/// The part of an argument still to search for secrets: all of it, or the name of a
/// granted pair whose value moves to the environment; `None` when the argument is
/// already dropped or refused.
fn searched_part<'a>(v: &ArgVerdict, arg: &'a [u8]) -> Option<&'a [u8]> {
    match (v.action, v.rule) {
        (ArgAction::NameOnly, ArgRule::Pair { name_end, .. }) => {
            Some(arg.get(..name_end as usize).unwrap_or(&[]))
        }
        (ArgAction::Unflag(n), _) => Some(arg.get(..n as usize).unwrap_or(&[])),
        (ArgAction::Keep, _) => Some(arg),
        _ => None,
    }
}

/// Overwrite every credential value and token shape in `arg` with `*`, in place
/// (also what libenvshim.so's self-scrub does to its own argv memory). A base64
/// copy of a credential is overwritten with the base64 text around it (a needle
/// is only part of the copy: [`crate::encoded::copy_around`]).
pub fn redact_in_place(policy: &Policy<'_>, req: &ArgvRequest<'_>, arg: &mut [u8]) {
    for_each_credential_value_up_to(policy, req, arg.len(), |value, _| {
        let mut from = 0;
        while let Some(pos) = arg.get(from..).and_then(|h| crate::bytes::find(h, value)) {
            let at = from + pos;
            if let Some(dst) = arg.get_mut(at..at + value.len()) {
                dst.fill(b'*');
            }
            from = at + value.len().max(1);
        }
        if crate::encoded::shortest_needle(value.len()).is_some_and(|n| arg.len() >= n) {
            let needles = crate::encoded::Base64Needles::of(value);
            while let Some(r) = needles.find_in(arg) {
                let (start, end) = crate::encoded::copy_around(arg, r);
                match arg.get_mut(start..end) {
                    // `*` is no base64 byte: the next search cannot find it again.
                    Some(dst) if !dst.is_empty() => dst.fill(b'*'),
                    _ => break,
                }
            }
        }
        if crate::escaped::may_hold(arg) {
            overwrite_escaped(value, arg);
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
