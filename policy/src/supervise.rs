//! The verdict of `envwrap --supervise` on an exec it intercepted: the same
//! decision the shim and envwrap make ([`crate::outcome::Layers::decide`]), read as
//! a yes or no.
//!
//! A supervisor sees an exec that is already under way in another process. It
//! can let it continue, fail it with an errno, or, where the exec's arrays are
//! its process's own memory, remove entries from its envp array in place
//! before it continues (`Capabilities::SUPERVISOR_OWN_MEMORY`); it never adds
//! or rewrites (docs/adr/0016-supervised-exec.md and 0021 say why). What it
//! does with each difference between the exec and the decision is the
//! capability table's ([`crate::capability`]), the one every front end reads:
//! - nothing would change: the exec continues;
//! - the policy would remove entries and the memory is the exec's own: they
//!   are removed, and the exec continues;
//! - the policy refuses something that is there (a credential the child would
//!   receive, a secret in argv or in the program's path), or would remove a
//!   credential it cannot remove (a strip, the base, in memory a `vfork`
//!   parent shares): the exec is refused, whatever `[supervise] changes` says;
//! - the policy would remove or rewrite something else (a name it strips, a
//!   redacted argument): refused, with a message that says so, or, under
//!   `[supervise] changes = "audit"`, run unchanged, said and logged;
//! - the policy would add a variable the exec lacks (a `set`): the exec runs
//!   without it, said once (a missing entry is no leak).
//!
//! A process that has libenvshim.so loaded arrives with an environment the shim
//! already decided: its own entries (`LD_PRELOAD`, `ENVSHIM_POLICY`,
//! `ENVSHIM_HINT`, rule 8) are the shim's, not the program's, and are no change,
//! and a `set` that expands variables is taken as the shim made it
//! (`Layers::decide_routed`): expanded again, over an environment the
//! variables it read are stripped from, it would differ, and the exec the
//! shim completed would be refused. What this trusts is what the shim's mark
//! trusts (docs/threat-model.md): a program that names the shim in its
//! child's `LD_PRELOAD` can give an expanding set its own value, one it holds.

use crate::argv::ArgAction;
use crate::capability::{self, Applied, Capabilities, Exec};
use crate::compiled::{Mode, Policy, SuperviseChanges};
use crate::decide::Action;
use crate::outcome::{self, Change, ChangeAction, ChangeRule, Sticky, Target};

/// What the supervisor does with one exec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing would change: the exec continues as it is.
    Unchanged,
    /// The policy refuses the exec (in enforce mode): the change that refuses it.
    Refused(Change),
    /// The policy would change the exec without refusing it: the first change.
    WouldChange(Change),
    /// The same, under `[supervise] changes = "audit"`: the exec runs unchanged.
    UnchangedDespite(Change),
    /// Audit mode: the exec continues; these are the changes enforce would make.
    Audited(Vec<Change>),
    /// The exec lacks an entry the policy would add (a `set`), which the
    /// supervisor cannot add: it runs without it, and that is said once.
    RunsWithout(Change),
    /// Entries to remove in place before the exec continues
    /// (`Capabilities::SUPERVISOR_OWN_MEMORY`).
    Stripped(Stripped),
}

/// The name of the shim's library file, as it appears in `LD_PRELOAD`.
const SHIM_FILE: &[u8] = b"libenvshim.so";

/// Judge one exec of `program` with `argv` and `env`, as the target passed them.
/// `env_files` comes from [`outcome::read_env_files`].
pub fn judge(
    policy: &Policy<'_>,
    program: &[u8],
    argv: &[Vec<u8>],
    env: &[Vec<u8>],
    env_files: &[Option<Vec<u8>>],
) -> Verdict {
    judged(
        policy,
        How::refusing(None),
        program,
        argv,
        env,
        &[],
        env_files,
    )
    .verdict
}

/// What the supervisor knows of an exec besides its arrays: `envwrap --mode`,
/// and whether the exec's arrays are its process's own memory (asked only
/// when the decision would remove an entry: it costs system calls).
#[derive(Clone, Copy)]
pub struct How<'a> {
    /// `--mode`, over the policy's own.
    pub mode: Option<Mode>,
    /// May the supervisor write the envp array in place? No for memory the
    /// target shares with another process (a `vfork` child's), and no when
    /// the user asked for refusals instead (`--refuse-changes`).
    pub own_memory: &'a dyn Fn() -> bool,
}

impl How<'_> {
    /// `mode`, for an exec whose memory the supervisor may not write.
    pub fn refusing(mode: Option<Mode>) -> How<'static> {
        How {
            mode,
            own_memory: &|| false,
        }
    }
}

/// What the supervisor does with an exec, and the loud changes that are no
/// difference it makes (a grant's use, an env file's value or a `set` the
/// policy refuses to add), which every front end says at the exec
/// ([`crate::loud`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judged {
    pub verdict: Verdict,
    /// Empty when the exec is refused or audited: a refused exec is said by
    /// its refusal alone, as the shim says it.
    pub loud_kept: Vec<Change>,
    /// The decision's refusal line (`Decision::refusal_line`), for a refusal
    /// of an argument or of the program's path.
    pub refusal_line: Option<String>,
}

/// [`judge`] in `how.mode` when one is given (`envwrap --mode`), else the
/// policy's, with `parent_env` the environment of the process that makes the
/// exec (its `/proc/PID/environ`; empty when unknown): rule 4 refuses an entry
/// of the child that holds a copy of one of its credentials under another
/// name, as the shim does with the caller's `environ`.
pub fn judged(
    policy: &Policy<'_>,
    how: How<'_>,
    program: &[u8],
    argv: &[Vec<u8>],
    env: &[Vec<u8>],
    parent_env: &[Vec<u8>],
    env_files: &[Option<Vec<u8>>],
) -> Judged {
    let mut loud_kept = Vec::new();
    let mut refusal_line = None;
    let verdict = verdict_of(
        policy,
        how,
        (program, argv, env, parent_env),
        env_files,
        (&mut loud_kept, &mut refusal_line),
    );
    if matches!(
        verdict,
        Verdict::Refused(_) | Verdict::WouldChange(_) | Verdict::Audited(_)
    ) {
        loud_kept.clear();
    }
    Judged {
        verdict,
        loud_kept,
        refusal_line,
    }
}

/// The exec's program, argv, environment and its caller's environment.
type ExecOf<'a> = (&'a [u8], &'a [Vec<u8>], &'a [Vec<u8>], &'a [Vec<u8>]);

fn verdict_of(
    policy: &Policy<'_>,
    how: How<'_>,
    (program, argv, env, parent_env): ExecOf<'_>,
    env_files: &[Option<Vec<u8>>],
    (loud_kept, refusal_line): (&mut Vec<Change>, &mut Option<String>),
) -> Verdict {
    let shim = shim_of(env);
    let sticky = Sticky {
        preload: shim,
        policy_entry: shim.and_then(|_| entry(env, crate::shared::POLICY.as_bytes())),
        hint: shim.and_then(|_| entry(env, crate::shared::HINT.as_bytes())),
    };
    // The managed layer, as every front end applies it (loaded once per
    // supervisor: docs/adr/0020-managed-layer.md).
    let managed = crate::managed::Managed::for_process().in_force();
    let layers = outcome::Layers {
        user: outcome::Pass::new(policy, env_files),
        managed: managed.as_ref().map(|m| m.pass(&[])),
        requested_mode: how.mode,
        sticky,
    };
    // An exec the shim made (unmarked: decided by two layers, or judged
    // with --judge-all) arrives with an environment the policy already
    // decided: a `set` that expands variables is what that decision made of
    // it, since the variables it read may be stripped by now (as for a
    // secret's exec routed through envwrap).
    let d = if shim.is_some() {
        layers.decide_routed(program, argv, env, parent_env)
    } else {
        layers.decide(program, argv, env, parent_env)
    };
    refusal_line.clone_from(&d.refusal_line);
    loud_kept.extend(
        d.changes
            .iter()
            .filter(|c| c.loud && !changes_the_exec(c) && !d.audited(c))
            .cloned(),
    );
    let changes: Vec<Change> = d
        .changes
        .iter()
        .filter(|c| changes_the_exec(c))
        .cloned()
        .collect();
    if d.mode == Mode::Audit {
        return if same_entries(&d.env, env) && d.argv == argv {
            Verdict::Unchanged
        } else {
            Verdict::Audited(changes)
        };
    }
    if let Some(r) = d.refusal {
        return Verdict::Refused(r);
    }
    // Each layer's `[supervise] changes` governs its own changes only
    // (docs/policy.md, 2b): a change the managed layer makes runs unchanged
    // only where the managed layer says "audit", whatever the user's says.
    let setting = |layer: crate::layer::Layer| match layer {
        crate::layer::Layer::Managed => managed.as_ref().map_or(SuperviseChanges::Refuse, |m| {
            m.policy.settings().supervise_changes
        }),
        crate::layer::Layer::User => policy.settings().supervise_changes,
    };
    // What the exec as it stands lacks of the decision, each difference
    // with the change that names it; the capability table decides what the
    // supervisor does with each (crate::capability).
    let unmade = unmade(&d, &changes, env, argv);
    let strips = unmade
        .iter()
        .any(|(k, _)| matches!(k, capability::Change::Strip { .. }));
    let can = if strips && (how.own_memory)() {
        Capabilities::SUPERVISOR_OWN_MEMORY
    } else {
        Capabilities::SUPERVISOR
    };
    let applied: Vec<Applied> = unmade
        .iter()
        .map(|(kind, c)| capability::apply(*kind, can, setting(c.layer)))
        .collect();
    let then = match capability::in_mode(Mode::Enforce, applied.iter().copied()) {
        Exec::Runs | Exec::Audited => Verdict::Unchanged,
        Exec::Refused(i) => {
            let c = unmade[i].1.clone();
            // A credential the exec would hand on: said as the policy's
            // refusal of it ("it would receive GH_TOKEN"), as before.
            return if is_refused_entry(&c) {
                Verdict::Refused(c)
            } else {
                Verdict::WouldChange(c)
            };
        }
        Exec::RunsNoting(i) => match unmade[i].0 {
            capability::Change::Add => Verdict::RunsWithout(unmade[i].1.clone()),
            _ => Verdict::UnchangedDespite(unmade[i].1.clone()),
        },
    };
    let removed: Vec<Removed> = unmade
        .iter()
        .zip(&applied)
        .filter_map(|((kind, c), a)| match (kind, a, c.index) {
            (capability::Change::Strip { .. }, Applied::Made, Some(index)) => Some(Removed {
                index,
                withheld: d.withheld.contains(&index) && !c.loud,
                change: c.clone(),
            }),
            _ => None,
        })
        .collect();
    if removed.is_empty() {
        return then;
    }
    Verdict::Stripped(Stripped {
        removed,
        then: Box::new(then),
    })
}

/// What a supervisor that owns the exec's memory removes from its
/// environment before it lets the exec continue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stripped {
    /// The entries of the target's envp to remove, in order (never empty).
    pub removed: Vec<Removed>,
    /// What else the exec comes to: `Unchanged`, `RunsWithout` or
    /// `UnchangedDespite`.
    pub then: Box<Verdict>,
}

/// One entry the supervisor removes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removed {
    /// Its index in the target's envp.
    pub index: usize,
    /// The change that removes it (a refusal of a credential is loud).
    pub change: Change,
    /// A credential withheld with no warning of its own, worth the withheld
    /// line ([`crate::withheld`]).
    pub withheld: bool,
}

/// Every difference between the exec as the target made it and as the
/// decision `d` would make it, as a change the capability table knows, with
/// the change that names it: the entries the child would lose (in the
/// target's order), the arguments it would get otherwise, then the entries it
/// lacks. An entry whose value the decision replaces is lost, and its new
/// value is no addition.
fn unmade(
    d: &crate::outcome::Decision,
    changes: &[Change],
    env: &[Vec<u8>],
    argv: &[Vec<u8>],
) -> Vec<(capability::Change, Change)> {
    let mut out = Vec::new();
    let named = |target: Target, i: usize| {
        changes
            .iter()
            .find(|c| c.target == target && c.index == Some(i) && !d.audited(c))
            .cloned()
    };
    let child_names: Vec<&[u8]> = d
        .env
        .iter()
        .filter_map(|e| crate::bytes::split_entry(e).map(|(n, _)| n))
        .collect();
    for (i, e) in env.iter().enumerate() {
        if d.env.contains(e) {
            continue;
        }
        let credential = d.env_verdicts.get(i).is_some_and(|v| v.credential);
        let c = named(Target::Env, i).unwrap_or_else(|| Change {
            index: Some(i),
            ..order_change(e)
        });
        // The child gets the name with another value: a rewrite, not a removal.
        let replaced = crate::bytes::split_entry(e).is_some_and(|(n, _)| child_names.contains(&n));
        let kind = if replaced {
            capability::Change::Rewrite { credential }
        } else {
            capability::Change::Strip { credential }
        };
        out.push((kind, c));
    }
    if d.argv != argv {
        for (i, v) in d.argv_verdicts.iter().enumerate() {
            if v.action == ArgAction::Keep {
                continue;
            }
            if let Some(c) = named(Target::Argv, i) {
                let credential = arg_holds_credential(v);
                out.push((capability::Change::Argv { credential }, c));
            }
        }
    }
    let names: Vec<&[u8]> = env
        .iter()
        .filter_map(|e| crate::bytes::split_entry(e).map(|(n, _)| n))
        .collect();
    for e in &d.env {
        let Some((name, _)) = crate::bytes::split_entry(e) else {
            continue;
        };
        // Rule 8's own entries (the run key a child handed an environment
        // without it gets from its caller) are the shim's, not the program's:
        // no change of the exec.
        if env.contains(e) || names.contains(&name) || name.starts_with(crate::builtin::OWN_PREFIX)
        {
            continue;
        }
        let shown = crate::shown::word(name).to_string();
        let c = changes
            .iter()
            .find(|c| c.index.is_none() && c.name.as_deref() == Some(shown.as_str()))
            .cloned()
            .unwrap_or_else(|| order_change(e));
        out.push((capability::Change::Add, c));
    }
    out
}

/// The change that names a difference no change of the decision names.
fn order_change(entry: &[u8]) -> Change {
    Change {
        target: Target::Env,
        index: None,
        name: crate::bytes::split_entry(entry).map(|(n, _)| crate::shown::word(n).to_string()),
        action: ChangeAction::Reorder,
        rule: ChangeRule::Order,
        why: "the entries in another order".to_string(),
        loud: false,
        layer: crate::layer::Layer::User,
    }
}

/// Does an argument's verdict concern a credential: a value, a shape, a
/// secret's words, or the pair of a credential?
fn arg_holds_credential(v: &crate::argv::ArgVerdict) -> bool {
    use crate::argv::ArgRule;
    use crate::decide::Rule;
    match v.rule {
        ArgRule::Value(_) | ArgRule::Shape(_) | ArgRule::DenyArgs { .. } => true,
        ArgRule::Pair { rule, .. } => matches!(
            rule,
            Rule::CredentialName(_)
                | Rule::CredentialShape(_)
                | Rule::CredentialNameShape(_)
                | Rule::CredentialValue(_)
                | Rule::CredentialParentValue(_)
                | Rule::SecretValue(_)
                | Rule::Grant(_)
                | Rule::Secret(_)
        ),
        ArgRule::None | ArgRule::PairFlag => v.action == ArgAction::Redact,
    }
}

/// The same entries, in any order: the shim and envwrap may place what they
/// add elsewhere than the target did, and order never changes what getenv(3)
/// finds when no name is there twice.
fn same_entries(a: &[Vec<u8>], b: &[Vec<u8>]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut a: Vec<&Vec<u8>> = a.iter().collect();
    let mut b: Vec<&Vec<u8>> = b.iter().collect();
    a.sort_unstable();
    b.sort_unstable();
    a == b
}

/// A change that makes the child's exec differ from what the target asked for.
/// A grant keeps what is there; a refused addition was never there.
fn changes_the_exec(c: &Change) -> bool {
    match c.action {
        ChangeAction::Env(Action::Keep | Action::Grant) | ChangeAction::Arg(ArgAction::Keep) => {
            false
        }
        ChangeAction::Env(Action::Refuse) => c.index.is_some(),
        _ => true,
    }
}

/// An entry of the target's environment that the policy refuses (a credential).
fn is_refused_entry(c: &Change) -> bool {
    c.action == ChangeAction::Env(Action::Refuse) && c.index.is_some()
}

/// The shim's path in the target's `LD_PRELOAD`, when the shim is there.
fn shim_of(env: &[Vec<u8>]) -> Option<&[u8]> {
    shim_in_preload(value(env, b"LD_PRELOAD")?)
}

/// The shim's path in the value of an `LD_PRELOAD`, when the shim is there.
pub fn shim_in_preload(value: &[u8]) -> Option<&[u8]> {
    value.split(|&b| b == b':' || b == b' ').find(|p| {
        p.ends_with(SHIM_FILE)
            && (p.len() == SHIM_FILE.len() || p[p.len() - SHIM_FILE.len() - 1] == b'/')
    })
}

/// The whole `NAME=value` entry for `name`, the first one.
fn entry<'e>(env: &'e [Vec<u8>], name: &[u8]) -> Option<&'e [u8]> {
    env.iter()
        .find(|e| crate::argv::entry_has_name(e, name))
        .map(Vec::as_slice)
}

/// The value of `name`, the first one.
fn value<'e>(env: &'e [Vec<u8>], name: &[u8]) -> Option<&'e [u8]> {
    entry(env, name).map(|e| &e[name.len() + 1..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Compiled;

    fn builtin() -> Compiled {
        crate::load::builtin_default()
    }

    fn v(s: &str) -> Vec<u8> {
        s.as_bytes().to_vec()
    }

    #[test]
    fn a_clean_exec_is_unchanged() {
        let c = builtin();
        let p = c.policy();
        let env = [v("PATH=/bin"), v("HOME=/root")];
        assert_eq!(
            judge(&p, b"/bin/env", &[v("env")], &env, &[]),
            Verdict::Unchanged
        );
    }

    #[test]
    fn a_credential_in_the_environment_is_refused_by_name() {
        let c = builtin();
        let p = c.policy();
        let env = [v("PATH=/bin"), v("GH_TOKEN=not-a-real-one")];
        match judge(&p, b"/bin/env", &[v("env")], &env, &[]) {
            Verdict::Refused(c) => assert_eq!(c.name.as_deref(), Some("GH_TOKEN")),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn a_token_in_argv_is_refused() {
        let c = builtin();
        let p = c.policy();
        let env = [v("PATH=/bin")];
        // A fake in the github shape, built here so that no token-shaped literal
        // sits in the source.
        let token = format!("ghp_{}", "a".repeat(36));
        let argv = [v("curl"), v(&token)];
        assert!(matches!(
            judge(&p, b"/bin/curl", &argv, &env, &[]),
            Verdict::Refused(_)
        ));
    }

    #[test]
    fn the_shims_own_entries_are_no_change() {
        let c = builtin();
        let p = c.policy();
        let env = [
            v("LD_PRELOAD=/usr/lib/envshim/libenvshim.so"),
            v("ENVSHIM_POLICY=/etc/envshim/policy.toml"),
            v("ENVSHIM_HINT=1-0123456789abcdef"),
            v("PATH=/bin"),
        ];
        assert_eq!(
            judge(&p, b"/bin/true", &[v("true")], &env, &[]),
            Verdict::Unchanged
        );
    }

    #[test]
    fn a_hint_without_the_shim_would_be_dropped() {
        let c = builtin();
        let p = c.policy();
        let env = [v("ENVSHIM_HINT=1-0123456789abcdef"), v("PATH=/bin")];
        assert!(matches!(
            judge(&p, b"/bin/true", &[v("true")], &env, &[]),
            Verdict::WouldChange(_)
        ));
    }

    #[test]
    fn a_change_is_refused_or_let_through_as_the_policy_says() {
        let env = [v("ENVSHIM_HINT=1-0123456789abcdef"), v("PATH=/bin")];
        for (text, audit) in [
            ("version = 1\n", false),
            ("version = 1\n[supervise]\nchanges = \"refuse\"\n", false),
            ("version = 1\n[supervise]\nchanges = \"audit\"\n", true),
        ] {
            let c = crate::load::compile_text(text, std::path::Path::new("/p.toml")).unwrap();
            let got = judge(&c.policy(), b"/bin/true", &[v("true")], &env, &[]);
            match got {
                Verdict::UnchangedDespite(_) if audit => {}
                Verdict::WouldChange(_) if !audit => {}
                other => panic!("{text}: {other:?}"),
            }
        }
        assert!(crate::load::compile_text(
            "version = 1\n[supervise]\nchanges = \"allow\"\n",
            std::path::Path::new("/p.toml")
        )
        .is_err());
    }

    fn compiled(text: &str) -> crate::load::Compiled {
        crate::load::compile_text(text, std::path::Path::new("/p.toml")).unwrap()
    }

    /// A credential that the base or a strip removes is refused, whatever
    /// `[supervise] changes` says: no setting lets a credential pass where
    /// enforce would have refused it (crate::capability).
    #[test]
    fn a_credential_the_policy_strips_is_refused_under_either_setting() {
        let env = [v("PATH=/bin"), v("GH_TOKEN=not-a-real-one")];
        for base in ["floor", "none"] {
            for setting in ["refuse", "audit"] {
                let text = format!("version = 1\nbase = \"{base}\"\nkeep = [\"PATH\"]\n[supervise]\nchanges = \"{setting}\"\n");
                let c = compiled(&text);
                match judge(&c.policy(), b"/bin/env", &[v("env")], &env, &[]) {
                    Verdict::WouldChange(c) => assert_eq!(c.name.as_deref(), Some("GH_TOKEN")),
                    other => panic!("{text}: {other:?}"),
                }
            }
        }
        let c = compiled("version = 1\nstrip = [\"GH_*\"]\n[supervise]\nchanges = \"audit\"\n");
        assert!(matches!(
            judge(&c.policy(), b"/bin/env", &[v("env")], &env, &[]),
            Verdict::WouldChange(_)
        ));
    }

    /// A `set` the exec lacks runs without it (said once), in either setting:
    /// the supervisor cannot add it, and a missing entry is no leak.
    #[test]
    fn a_set_the_exec_lacks_runs_without_it() {
        let env = [v("PATH=/bin")];
        for setting in ["refuse", "audit"] {
            let text = format!(
                "version = 1\nset = {{ EDITOR = \"vi\" }}\n[supervise]\nchanges = \"{setting}\"\n"
            );
            let c = compiled(&text);
            match judge(&c.policy(), b"/bin/env", &[v("env")], &env, &[]) {
                Verdict::RunsWithout(c) => assert_eq!(c.name.as_deref(), Some("EDITOR")),
                other => panic!("{text}: {other:?}"),
            }
            let with = [v("PATH=/bin"), v("EDITOR=vi")];
            assert_eq!(
                judge(&c.policy(), b"/bin/env", &[v("env")], &with, &[]),
                Verdict::Unchanged
            );
        }
    }

    /// The secret's own program, holding the secret that a front end below
    /// delivered, runs under every base: the shim delivers it whatever the
    /// base says, so the supervisor must not refuse it.
    #[test]
    fn a_secrets_own_program_is_not_refused_under_any_base() {
        // The supervisor never reads the source: it need not exist.
        let src = std::path::Path::new("/nonexistent/envshim-test/tok");
        let env = [v("PATH=/bin"), v("GH_TOKEN=delivered-below")];
        for base in ["all", "floor", "none"] {
            let text = format!(
                "version = 1\nbase = \"{base}\"\nkeep = [\"PATH\"]\n[[secret]]\nname = \"GH_TOKEN\"\nprogram = \"/usr/bin/gh\"\nfrom = \"file:{}\"\n",
                src.display()
            );
            let c = compiled(&text);
            assert_eq!(
                judge(&c.policy(), b"/usr/bin/gh", &[v("gh")], &env, &[]),
                Verdict::Unchanged,
                "{base}"
            );
            // At any other program the name is refused.
            assert!(!matches!(
                judge(&c.policy(), b"/usr/bin/env", &[v("env")], &env, &[]),
                Verdict::Unchanged | Verdict::RunsWithout(_) | Verdict::UnchangedDespite(_)
            ));
        }
    }

    #[test]
    fn the_shim_is_found_only_by_its_file_name() {
        assert_eq!(
            shim_of(&[v("LD_PRELOAD=/a/libx.so:/b/libenvshim.so")]),
            Some(&b"/b/libenvshim.so"[..])
        );
        assert_eq!(shim_of(&[v("LD_PRELOAD=/b/notlibenvshim.so")]), None);
        assert_eq!(shim_of(&[v("LD_PRELOADX=/b/libenvshim.so")]), None);
    }
}
