//! Owned decisions for std front ends (envwrap, the Rust API, the tools): run the
//! allocation-free core with buffers sized for the input, and describe every
//! change by variable name, action and rule, never by value.

use crate::argv::{ArgAction, ArgRule, ArgVerdict, ValueSource};
use crate::compiled::{sec, Mode, Policy};
use crate::decide::{self, Action, Emit, Rule, Verdict};
use crate::layer::Layer;
use crate::pipeline;
use serde::Serialize;

mod layered;
pub use layered::{decide_layered, Layers, Pass};
/// Rule 8's entries, the same for both passes of an exec.
pub use pipeline::Sticky;

/// What a change is made to. Written by its id ([`Target::id`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// An entry of the environment.
    Env,
    /// An argument.
    Argv,
    /// The program's path (a secret in it refuses the exec).
    Program,
}

/// What a change does: the core's verdict for an entry or an argument, or what
/// only a std front end does. Written by its stable id ([`ChangeAction::id`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeAction {
    /// An environment entry's verdict (never `Keep`).
    Env(Action),
    /// An argument's verdict (never `Keep`).
    Arg(ArgAction),
    /// An entry the policy added (a set value, a file value, the shim's own).
    Set,
    /// The same entries in another order (`--supervise`).
    Reorder,
    /// The command wrapped to run in a shell (`pty.shell`).
    Wrap,
}

impl ChangeAction {
    /// keep, strip, refuse, grant, replace, set, drop, redact, name-only,
    /// reorder, wrap.
    pub fn id(self) -> &'static str {
        match self {
            ChangeAction::Env(a) => a.id(),
            ChangeAction::Arg(a) => a.id(),
            ChangeAction::Set => "set",
            ChangeAction::Reorder => "reorder",
            ChangeAction::Wrap => "wrap",
        }
    }

    /// A refusal, of an entry or of the exec.
    pub fn refuses(self) -> bool {
        matches!(
            self,
            ChangeAction::Env(Action::Refuse) | ChangeAction::Arg(ArgAction::Refuse)
        )
    }
}

/// Which rule decided a change: the core's, or a std front end's own.
/// Written by its stable id ([`ChangeRule::id`]), as docs/policy.md, section 7,
/// lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeRule {
    Env(Rule),
    Arg(ArgRule),
    /// A set value whose `${NAME}` expansion reads a credential or looks like a
    /// token (written as `credential.shape`).
    SetExpansion,
    /// `--supervise`: the same entries in another order.
    Order,
    /// The Rust API's pty: `SHELL` for a shell that runs the command.
    PtyShell,
    /// The Rust API: a command whose program gets a secret runs through
    /// envwrap, or runs without it (`envpolicy::spawn`).
    SecretRoute,
}

impl ChangeRule {
    pub fn id(self) -> &'static str {
        match self {
            ChangeRule::Env(r) => r.id(),
            ChangeRule::Arg(r) => r.id(),
            ChangeRule::SetExpansion => "credential.shape",
            ChangeRule::Order => "order",
            ChangeRule::PtyShell => "pty.shell",
            ChangeRule::SecretRoute => "secret.route",
        }
    }
}

macro_rules! serialize_by_id {
    ($($t:ty),*) => {$(
        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.id())
            }
        }
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.id())
            }
        }
    )*};
}
serialize_by_id!(Target, ChangeAction, ChangeRule);

impl Target {
    pub fn id(self) -> &'static str {
        match self {
            Target::Env => "env",
            Target::Argv => "argv",
            Target::Program => "program",
        }
    }
}

/// One change a decision makes (or, in audit mode, would make).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Change {
    pub target: Target,
    /// Index in the input environment or argv; `None` for added entries.
    pub index: Option<usize>,
    /// The variable concerned (for argv: the variable whose value or pair it is).
    pub name: Option<String>,
    pub action: ChangeAction,
    /// The deciding rule, written by its stable id, e.g. `credential.name`.
    pub rule: ChangeRule,
    /// Human explanation, e.g. "credential pattern `*_TOKEN` (built-in)".
    pub why: String,
    /// Worth a warning in enforce mode (see `decide::Verdict::loud`); a refused
    /// exec always is.
    pub loud: bool,
    /// Which layer's decision made it ([`decide_layered`]): written in a JSON
    /// line as `"layer":"managed"` for the managed layer, and left out for the
    /// user layer (the only one on a host without a managed layer).
    #[serde(skip_serializing_if = "is_user_layer", serialize_with = "layer_id")]
    pub layer: Layer,
}

fn is_user_layer(layer: &Layer) -> bool {
    *layer == Layer::User
}

fn layer_id<S: serde::Serializer>(layer: &Layer, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(layer.id())
}

/// The whole decision for one exec.
#[derive(Clone, Debug)]
pub struct Decision {
    /// The program as rules and messages name it: the script an interpreter
    /// runs, through launchers ([`crate::identity`]).
    pub program: Vec<u8>,
    /// Whether the child gets [`Decision::env`] and [`Decision::argv`]
    /// (enforce) or its input unchanged (audit). Of a layered decision: enforce
    /// when either pass enforces ([`Decision::pass_mode`] says which).
    pub mode: Mode,
    /// The mode of the managed layer's pass, when one ran ([`decide_layered`]);
    /// the user pass's is [`Decision::user_mode`].
    pub managed_mode: Option<Mode>,
    /// The mode of the user layer's pass (`--mode` or the policy's own).
    pub user_mode: Mode,
    /// The child environment, in order.
    pub env: Vec<Vec<u8>>,
    /// The child argv.
    pub argv: Vec<Vec<u8>>,
    /// Every change, env first.
    pub changes: Vec<Change>,
    /// Set when the exec must be refused: the change that refuses it.
    pub refusal: Option<Change>,
    /// The line (after a front end's prefix) for [`Decision::refusal`], as
    /// every front end writes it ([`envpolicy_core::refusal::of_pass`], the
    /// names looked up where the refusing pass read them).
    pub refusal_line: Option<String>,
    /// Verdict per input env entry.
    pub env_verdicts: Vec<Verdict>,
    /// Verdict per input argument.
    pub argv_verdicts: Vec<ArgVerdict>,
    /// The input entries whose credential is withheld with no warning of its
    /// own, as [`envpolicy_core::withheld::worth_saying`] decides.
    pub withheld: Vec<usize>,
    /// The names of credentials withheld the same way that the caller's
    /// input does not hold: entries a first pass added (a user's secret, a
    /// `set`) that the managed pass refuses.
    pub withheld_added: Vec<Vec<u8>>,
}

impl Decision {
    /// The environment the child really gets: the decided one in enforce mode,
    /// the input unchanged in audit mode.
    pub fn effective_env<'a>(&'a self, input: &'a [Vec<u8>]) -> &'a [Vec<u8>] {
        match self.mode {
            Mode::Enforce => &self.env,
            Mode::Audit => input,
        }
    }

    /// The argv the child really gets (see [`Decision::effective_env`]).
    pub fn effective_argv<'a>(&'a self, input: &'a [Vec<u8>]) -> &'a [Vec<u8>] {
        match self.mode {
            Mode::Enforce => &self.argv,
            Mode::Audit => input,
        }
    }

    /// The mode of `layer`'s pass (the user layer's for a decision with no
    /// managed pass).
    pub fn pass_mode(&self, layer: Layer) -> Mode {
        match (layer, self.managed_mode) {
            (Layer::Managed, Some(m)) => m,
            _ => self.user_mode,
        }
    }

    /// Was `c` only reported, not made: its layer's pass runs in audit mode.
    pub fn audited(&self, c: &Change) -> bool {
        self.pass_mode(c.layer) == Mode::Audit
    }

    /// Override the mode of the user pass of a decision with no managed pass
    /// (`--mode`): [`Decision::mode`] and [`Decision::user_mode`] both.
    pub fn set_mode(&mut self, mode: Mode) {
        self.mode = mode;
        self.user_mode = mode;
    }

    /// Is the exec refused? Never in audit mode.
    pub fn refused(&self) -> Option<&Change> {
        match self.mode {
            Mode::Enforce => self.refusal.as_ref(),
            Mode::Audit => None,
        }
    }

    /// The names of the credentials withheld from the child that no other line
    /// names, once each, in the order of `input`, then those of entries a pass
    /// added that a later one withholds ([`Decision::withheld_added`]); none in
    /// audit mode (nothing is withheld).
    pub fn withheld_names(&self, input: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let mut names: Vec<Vec<u8>> = Vec::new();
        if self.mode == Mode::Audit {
            return names;
        }
        let of_input = self
            .withheld
            .iter()
            .filter_map(|&i| input.get(i).and_then(|e| crate::bytes::split_entry(e)))
            .map(|(name, _)| name);
        for name in of_input.chain(self.withheld_added.iter().map(Vec::as_slice)) {
            if !names.iter().any(|n| n == name) {
                names.push(name.to_vec());
            }
        }
        names
    }

    /// Changes that deserve a warning even in enforce mode: credentials a keep
    /// list named, grants, and refused execs (see `decide::Verdict::loud`).
    pub fn loud(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(|c| c.loud)
    }
}

/// Read the current contents of every env file the policy imports (`None`: not
/// read, as the rule of [`crate::readable`] says).
pub fn read_env_files(policy: &Policy<'_>) -> Vec<Option<Vec<u8>>> {
    (0..policy.count(sec::ENV_FILES) as u32)
        .map(|i| {
            let rec = policy.env_file(i)?;
            let path = String::from_utf8_lossy(policy.str(rec.path)).into_owned();
            crate::read_file::read(std::path::Path::new(&path), crate::readable::ENV_FILE).ok()
        })
        .collect()
}

/// The env files that changed since `policy` was compiled
/// (`EnvRequest::renamed_files`): a policy a program holds for a long time (the
/// Rust API's spawners) sees the names a file declares now, as the shim does.
pub fn renamed_files(policy: &Policy<'_>) -> u32 {
    let n = policy.count(sec::ENV_FILES).min(32) as u32;
    (0..n)
        .filter(|&i| {
            let Some(rec) = policy.env_file(i) else {
                return false;
            };
            let path = String::from_utf8_lossy(policy.str(rec.path)).into_owned();
            let now = crate::cache::stamp(std::path::Path::new(&path));
            crate::cache_key::import_changed(policy, i, now)
        })
        .fold(0, |bits, i| bits | 1 << i)
}

/// Decide env and argv for one exec of `program` with one policy (no managed
/// layer, no secret, no rule 8 entries): [`Layers::decide`] with only `policy`.
///
/// `parent_env` is the calling process's environment when it differs from `env`
/// (pass an empty slice otherwise). `env_files` comes from [`read_env_files`].
pub fn decide(
    policy: &Policy<'_>,
    program: &[u8],
    argv: &[Vec<u8>],
    env: &[Vec<u8>],
    parent_env: &[Vec<u8>],
    env_files: &[Option<Vec<u8>>],
) -> Decision {
    Layers::one(Pass::new(policy, env_files), Sticky::default())
        .decide(program, argv, env, parent_env)
}

/// One pass of the core pipeline made owned: the child's arrays, and a change
/// for each entry and argument it does not pass as it is. `io` holds the
/// pass's input as the change descriptions read it.
fn pass_decision(d: &pipeline::Decided<'_>, io: PassIo<'_, '_>) -> Decision {
    let PassIo {
        policy,
        env,
        argv,
        parent_env,
        env_files,
    } = io;
    let (child_env, child_argv) = child_arrays(d);
    let mut changes = env_changes(policy, env, d.verdicts);
    changes.extend(added_changes(policy, d));
    changes.extend(refused_additions(policy, env, &d.env));
    let ctx = ArgContext {
        policy,
        env,
        parent_env,
        env_files,
    };
    let mut refusal = None;
    if let Some(rule) = d.argv.program {
        // The path given to exec holds a secret: judged as an argument is, and
        // refused (a path cannot be redacted).
        let v = ArgVerdict {
            action: ArgAction::Refuse,
            rule,
        };
        let mut c = ctx.change(0, &v, d.exec.program);
        c.target = Target::Program;
        c.index = None;
        refusal = Some(c.clone());
        changes.push(c);
    }
    for (i, v) in d.arg_verdicts.iter().enumerate() {
        if v.action == ArgAction::Keep {
            continue;
        }
        let c = ctx.change(i, v, &argv[i]);
        if v.action == ArgAction::Refuse && refusal.is_none() {
            refusal = Some(c.clone());
        }
        changes.push(c);
    }
    let withheld = d
        .verdicts
        .iter()
        .enumerate()
        .filter(|(_, v)| crate::withheld::worth_saying(policy.settings(), v))
        .map(|(i, _)| i)
        .collect();
    let refusal_line = d.refusal().map(|what| {
        let mut text = String::new();
        crate::refusal::of_pass(d, d.exec.identity.name, what, &mut |p| {
            pieces_into(&mut text, &[p]);
        });
        text
    });
    Decision {
        program: d.exec.identity.name.to_vec(),
        refusal_line,
        withheld_added: Vec::new(),
        mode: d.pass.mode,
        user_mode: d.pass.mode,
        managed_mode: None,
        withheld,
        env: child_env,
        argv: child_argv,
        changes,
        refusal,
        env_verdicts: d.verdicts.to_vec(),
        argv_verdicts: d.arg_verdicts.to_vec(),
    }
}

/// The environment and argv pass `d` builds for the child, owned
/// ([`pipeline::Decided::fill_env`], `fill_argv`).
pub fn child_arrays(d: &pipeline::Decided<'_>) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut env: Vec<&[u8]> = vec![&[]; d.env_len()];
    let n = d.fill_env(&mut env, |e| e, |e| e);
    let mut argv: Vec<&[u8]> = vec![&[]; d.arg_emits.len()];
    let k = d.fill_argv(&mut argv, |a| a);
    let owned = |v: &[&[u8]]| v.iter().map(|e| e.to_vec()).collect();
    (owned(&env[..n]), owned(&argv[..k]))
}

/// A pass's input, as the change descriptions read it.
#[derive(Clone, Copy)]
struct PassIo<'a, 'p> {
    policy: &'a Policy<'p>,
    env: &'a [Vec<u8>],
    argv: &'a [Vec<u8>],
    parent_env: &'a [Vec<u8>],
    env_files: &'a [Option<Vec<u8>>],
}

/// A change for each entry the pass added (set, file values, sticky).
fn added_changes(policy: &Policy<'_>, d: &pipeline::Decided<'_>) -> Vec<Change> {
    d.emits
        .iter()
        .filter_map(|e| match *e {
            Emit::Input(_) => None,
            Emit::Built { start, len, rule } => {
                let entry = d.env_bytes.get(start as usize..(start + len) as usize)?;
                Some(added_change(policy, entry, rule))
            }
            Emit::Pooled { entry, rule } => Some(added_change(policy, policy.str(entry), rule)),
        })
        .collect()
}

/// A change for each input entry that does not pass as it is.
fn env_changes(policy: &Policy<'_>, env: &[Vec<u8>], verdicts: &[Verdict]) -> Vec<Change> {
    let mut changes = Vec::new();
    for (i, v) in verdicts.iter().enumerate() {
        if v.action == Action::Keep {
            continue;
        }
        let name = crate::bytes::split_entry(&env[i]).map(|(n, _)| lossy(n));
        changes.push(Change {
            target: Target::Env,
            index: Some(i),
            name,
            action: ChangeAction::Env(v.action),
            rule: ChangeRule::Env(v.rule),
            why: describe_rule(policy, v.rule, env),
            loud: v.loud,
            layer: Layer::User,
        });
    }
    changes
}

/// The loud reports of what the policy would have added and refused: env-file
/// values (the inherited value, if any, is marked with the entries) and sets whose
/// `${NAME}` expansion read a credential or looked like a token.
fn refused_additions(
    policy: &Policy<'_>,
    env: &[Vec<u8>],
    summary: &decide::EnvSummary,
) -> Vec<Change> {
    let mut changes = Vec::new();
    for (k, name) in decide::refused_file_value_names(policy, summary.refused_file_values) {
        changes.push(Change {
            target: Target::Env,
            index: None,
            name: Some(lossy(name)),
            action: ChangeAction::Env(Action::Refuse),
            rule: ChangeRule::Env(Rule::FileValueRefused(k)),
            why: describe_rule(policy, Rule::FileValueRefused(k), env),
            loud: true,
            layer: Layer::User,
        });
    }
    for (_, name) in decide::refused_set_names(policy, summary.refused_sets) {
        changes.push(Change {
            target: Target::Env,
            index: None,
            name: Some(lossy(name)),
            action: ChangeAction::Env(Action::Refuse),
            rule: ChangeRule::SetExpansion,
            why: crate::reason::REFUSED_SET.into(),
            loud: true,
            layer: Layer::User,
        });
    }
    changes
}

/// `text` with every token shape and every credential of `envs` (judged by
/// `policy`) replaced by its description: `shown::redact`, for the messages
/// this crate builds with `format!`.
pub fn redacted(policy: &Policy<'_>, text: &[u8], envs: &[&[Vec<u8>]]) -> String {
    let entries: Vec<&[u8]> = envs
        .iter()
        .flat_map(|e| e.iter().map(Vec::as_slice))
        .collect();
    let secrets = crate::shown::EnvSecrets {
        policy: Some(policy),
        env: &entries,
    };
    redacted_by(text, &secrets)
}

/// `text` through `shown::redact` against `secrets`, as a `String` (bytes that
/// are not UTF-8 shown lossily).
pub fn redacted_by(text: &[u8], secrets: &dyn crate::shown::Secrets) -> String {
    let mut out = Vec::with_capacity(text.len());
    crate::shown::redact(text, secrets, &mut |b| out.extend_from_slice(b));
    String::from_utf8_lossy(&out).into_owned()
}

/// A name, program, path or pattern as a message may show it ([`crate::shown`]):
/// a token that arrives as a variable's name or a program is never printed.
fn lossy(b: &[u8]) -> String {
    crate::shown::word(b).to_string()
}

fn added_change(policy: &Policy<'_>, entry: &[u8], rule: Rule) -> Change {
    let name = crate::bytes::split_entry(entry).map(|(n, _)| lossy(n));
    Change {
        target: Target::Env,
        index: None,
        name,
        action: ChangeAction::Set,
        rule: ChangeRule::Env(rule),
        why: describe_rule(policy, rule, &[]),
        loud: false,
        layer: Layer::User,
    }
}

/// What an argument's change is described with: the policy and the inputs a
/// credential's value may have come from.
struct ArgContext<'a, 'p> {
    policy: &'a Policy<'p>,
    env: &'a [Vec<u8>],
    parent_env: &'a [Vec<u8>],
    env_files: &'a [Option<Vec<u8>>],
}

impl ArgContext<'_, '_> {
    fn change(&self, i: usize, v: &ArgVerdict, arg: &[u8]) -> Change {
        arg_change(
            self.policy,
            i,
            v,
            arg,
            self.env,
            self.parent_env,
            self.env_files,
        )
    }
}

fn arg_change(
    policy: &Policy<'_>,
    i: usize,
    v: &ArgVerdict,
    arg: &[u8],
    env: &[Vec<u8>],
    parent: &[Vec<u8>],
    files: &[Option<Vec<u8>>],
) -> Change {
    // The name at line `line` of env file `file`, as the file reads now.
    let file_name = |file: u32, line: u32| {
        let contents = files.get(file as usize)?.as_deref()?;
        crate::envfile::assignments(contents)
            .flatten()
            .find(|a| a.line == line)
            .map(|a| a.name)
    };
    // The variable an argument's change concerns, for the record.
    let name = match v.rule {
        ArgRule::None | ArgRule::PairFlag | ArgRule::Shape(_) => None,
        ArgRule::Pair {
            name_at, name_end, ..
        } => Some(lossy(
            arg.get(name_at as usize..name_end as usize).unwrap_or(&[]),
        )),
        ArgRule::DenyArgs { secret, .. } => Some(secret_name(policy, secret as u32)),
        ArgRule::Value(ValueSource::Secret(s)) => Some(secret_name(policy, s)),
        ArgRule::Value(ValueSource::ChildEnv(i)) => env_names(env)(i).map(lossy),
        ArgRule::Value(ValueSource::ParentEnv(i)) => env_names(parent)(i).map(lossy),
        ArgRule::Value(ValueSource::EnvFile { file, line }) => file_name(file, line).map(lossy),
    };
    let names = crate::reason::Names {
        env: env_names(env),
        parent: env_names(parent),
        file: file_name,
    };
    let mut why = String::new();
    crate::reason::argument(policy, v, arg, &names, &mut |p| pieces_into(&mut why, &[p]));
    let loud = crate::argv::loud(v);
    Change {
        target: Target::Argv,
        index: Some(i),
        name,
        action: ChangeAction::Arg(v.action),
        rule: ChangeRule::Arg(v.rule),
        why,
        loud,
        layer: Layer::User,
    }
}

/// A human explanation of a rule, naming variables and patterns, never values.
pub fn describe_rule(policy: &Policy<'_>, rule: Rule, env: &[Vec<u8>]) -> String {
    let mut text = String::new();
    crate::reason::pieces(policy, rule, env_names(env), &mut |p| {
        pieces_into(&mut text, &[p])
    });
    text
}

/// The name of `env`'s entry `i`, for a reason that names it.
fn env_names<'e>(env: &'e [Vec<u8>]) -> impl Fn(u32) -> Option<&'e [u8]> {
    |i| {
        env.get(i as usize)
            .and_then(|e| crate::bytes::split_entry(e))
            .map(|(n, _)| n)
    }
}

/// The name of secret `i`, for a message.
fn secret_name(policy: &Policy<'_>, i: u32) -> String {
    policy
        .secret(i)
        .map_or_else(|| format!("secret {i}"), |r| lossy(policy.str(r.name)))
}

/// The line (after a front end's `envwrap: `) saying that the credential `name`
/// was withheld from `program` and what it starts, written as
/// [`envpolicy_core::withheld::line`] lays it out.
pub fn withheld_line(name: &[u8], program: &[u8]) -> String {
    let mut text = String::new();
    pieces_into(&mut text, &crate::withheld::line(name, program));
    text
}

/// The line (after a front end's prefix) for `c`, a change worth a warning in
/// enforce mode, at the exec of `program`, with `reason` after the colon, by
/// the policy whose source is `source` ([`crate::loud`]); `None` for a change
/// that line does not say (an argument's change other than a credential's
/// pair, an addition the policy made).
pub fn loud_line(c: &Change, program: &[u8], reason: &str, source: &[u8]) -> Option<String> {
    use crate::loud::Said;
    let said = match (c.target, c.action, c.rule) {
        (Target::Env, ChangeAction::Env(action), ChangeRule::Env(rule)) => {
            Said::of_entry(action, rule)
        }
        (Target::Env, ChangeAction::Env(Action::Refuse), ChangeRule::SetExpansion) => Said::Refused,
        (Target::Argv, ChangeAction::Arg(_), ChangeRule::Arg(ArgRule::Pair { loud: true, .. })) => {
            Said::RefusedInArgv
        }
        _ => return None,
    };
    let name = c.name.as_deref().unwrap_or("an entry").as_bytes();
    let mut text = String::new();
    let reason = |o: &mut dyn FnMut(crate::shown::Piece<'_>)| {
        o(crate::shown::Piece::Text(reason.as_bytes()))
    };
    crate::loud::line(said, name, program, &reason, source, &mut |p| {
        pieces_into(&mut text, &[p]);
    });
    Some(text)
}

/// The line (after `envwrap: `) for `c`, a change `--supervise` cannot make,
/// at the exec of `program`, by the policy whose source is `source`
/// ([`crate::unmade`]: `unmade` says what became of it).
pub fn unmade_line(
    unmade: crate::unmade::Unmade,
    c: &Change,
    program: &[u8],
    source: &[u8],
) -> String {
    use crate::unmade::What;
    let what = match (c.target, c.index, c.name.as_deref()) {
        (Target::Argv, Some(i), _) => What::Argument(i),
        (_, _, Some(n)) => What::Name(n.as_bytes()),
        _ => What::Entry,
    };
    let reason =
        |o: &mut dyn FnMut(crate::shown::Piece<'_>)| o(crate::shown::Piece::Text(c.why.as_bytes()));
    let mut text = String::new();
    let verb = c.action.id().as_bytes();
    crate::unmade::line(unmade, program, verb, what, &reason, source, &mut |p| {
        pieces_into(&mut text, &[p]);
    });
    text
}

/// [`crate::shown::Piece`]s as text: a word as [`crate::shown::word`] shows it.
fn pieces_into(text: &mut String, pieces: &[crate::shown::Piece<'_>]) {
    use crate::shown::Piece;
    for piece in pieces {
        match piece {
            Piece::Text(t) => text.push_str(&String::from_utf8_lossy(t)),
            Piece::Word(w) => text.push_str(&crate::shown::word(w).to_string()),
        }
    }
}

/// The source of `layer`'s policy, as a change's record and line name it:
/// the managed layer's file, or `user_source`.
pub fn source_of(layer: Layer, user_source: &[u8]) -> &[u8] {
    match layer {
        Layer::Managed => crate::managed::policy_path().as_os_str().as_encoded_bytes(),
        Layer::User => user_source,
    }
}

/// Who writes records of changes, and of which policies: what a record
/// says besides the change ([`crate::record`]).
#[derive(Clone, Copy, Debug)]
pub struct Recorder<'a> {
    /// `envwrap` or `envpolicy` (the shim writes `envshim`).
    pub tool: &'a str,
    /// The source of the user layer's policy (its file, or `<built-in>`).
    pub user_source: &'a [u8],
}

/// One change as a JSON line (no newline): the core's one record
/// ([`crate::record`]), as the shim writes it too. `mode` is the mode of the
/// pass that made it ([`Decision::pass_mode`]). Names that may hold a secret
/// are shown as every message shows them; the caller redacts the line
/// against the values in view ([`redacted`]).
pub fn json_line(by: &Recorder<'_>, mode: Mode, program: &[u8], c: &Change) -> String {
    let record = crate::record::Record {
        tool: by.tool,
        mode,
        pid: std::process::id(),
        program,
        target: c.target.id(),
        index: c.index,
        name: c.name.as_deref().map(str::as_bytes),
        action: c.action.id(),
        rule: c.rule.id(),
        layer: c.layer,
        why: Some(c.why.as_bytes()).filter(|w| !w.is_empty()),
        loud: c.loud,
        policy: source_of(c.layer, by.user_source),
    };
    let mut out = Vec::new();
    crate::record::write(&record, &mut |b| out.extend_from_slice(b));
    String::from_utf8_lossy(&out).into_owned()
}
