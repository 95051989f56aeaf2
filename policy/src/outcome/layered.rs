//! The two passes of a host with a managed layer (docs/adr/0020-managed-layer.md,
//! [`crate::layer`]): the user layer decides the exec as on any host, then the
//! managed layer decides over the first decision's *result*, with the caller's
//! environment as its parent environment. One [`Decision`] comes back: the
//! second pass's result, and every change of both passes, each with the
//! [`Layer`] that made it.
//!
//! Composition rather than a merge is what makes "only stricter" hold for every
//! field: every entry and argument the child gets passed both layers, or was
//! added by the managed layer itself.

use super::{decide_delivering, Change, Decision, Sticky, Target};
use crate::compiled::{Mode, Policy};
use crate::layer::{self, Layer};

/// One layer's pass: its policy, its own env files
/// ([`super::read_env_files`]) and the values of its own `[[secret]]`s read for
/// this program (empty: none delivered).
#[derive(Clone, Copy)]
pub struct Pass<'a, 'p> {
    pub policy: &'a Policy<'p>,
    pub env_files: &'a [Option<Vec<u8>>],
    pub secrets: &'a [Option<Vec<u8>>],
}

impl<'a, 'p> Pass<'a, 'p> {
    /// A pass that delivers no secret.
    pub fn new(policy: &'a Policy<'p>, env_files: &'a [Option<Vec<u8>>]) -> Self {
        Pass {
            policy,
            env_files,
            secrets: &[],
        }
    }
}

/// Both layers of one exec, and what the caller asks of them.
#[derive(Clone, Copy)]
pub struct Layers<'a, 'p> {
    /// The policy the lookup found.
    pub user: Pass<'a, 'p>,
    /// The managed layer's pass (its policy, or the floor when its file is
    /// broken); `None` on a host without one.
    pub managed: Option<Pass<'a, 'p>>,
    /// `envwrap --mode`, the library's override: the user pass's mode only
    /// ([`layer::pass_mode`]).
    pub requested_mode: Option<Mode>,
    /// The shim's own entries (rule 8), the same for both passes; each pass
    /// applies its own policy's `sticky`.
    pub sticky: Sticky<'a>,
}

impl Layers<'_, '_> {
    /// [`decide_layered`] with these layers.
    pub fn decide(
        &self,
        program: &[u8],
        argv: &[Vec<u8>],
        env: &[Vec<u8>],
        parent_env: &[Vec<u8>],
    ) -> Decision {
        decide_layered(self, program, argv, env, parent_env)
    }
}

impl Layers<'_, '_> {
    /// The refusal line for `c`, a refusal of this decision, by the layer that
    /// made it ([`super::refusal_line`]).
    pub fn refusal_line(&self, program: &[u8], exec: super::ExecArrays<'_>, c: &Change) -> String {
        let pass = match (c.layer, self.managed) {
            (Layer::Managed, Some(m)) => m,
            _ => self.user,
        };
        super::refusal_line(pass.policy, program, exec, pass.env_files, c)
    }
}

/// Decide one exec of `program` with both layers (`parent_env`: the caller's
/// environment; one equal to `env`, or empty, means the child inherits it, as
/// for [`super::decide()`]).
///
/// The user pass runs in [`layer::pass_mode`] of its own mode and the
/// requested one; in audit it changes nothing (the managed pass gets its
/// input). A refusal of the user pass (enforce) refuses the exec with no
/// managed pass; else the managed pass decides over what the user pass gives
/// the child. The result's [`Decision::mode`] is enforce when either pass
/// enforces; [`Decision::audited`] says of each change whether it was made.
/// Indexes of the managed pass's changes are mapped back to the caller's input
/// when the entry or argument is there unchanged, else `None` (an entry the
/// user layer added).
pub fn decide_layered(
    layers: &Layers<'_, '_>,
    program: &[u8],
    argv: &[Vec<u8>],
    env: &[Vec<u8>],
    parent_env: &[Vec<u8>],
) -> Decision {
    // The same environment on both sides is no parent of its own: each
    // caller (the supervisor's `/proc/PID/environ`, a library's `environ`)
    // may pass it either way.
    let parent_env = if parent_env == env {
        &[][..]
    } else {
        parent_env
    };
    let user = layers.user;
    let mut first = decide_delivering(
        user.policy,
        program,
        argv,
        env,
        parent_env,
        user.env_files,
        layers.sticky,
        user.secrets,
    );
    let own = user.policy.settings().mode;
    first.set_mode(layer::pass_mode(Layer::User, own, layers.requested_mode));
    let Some(managed) = layers.managed else {
        return first;
    };
    if first.refused().is_some() {
        return first;
    }
    let env2 = first.effective_env(env).to_vec();
    let argv2 = first.effective_argv(argv).to_vec();
    let env_refs: Vec<&[u8]> = env.iter().map(Vec::as_slice).collect();
    let parent_refs: Vec<&[u8]> = parent_env.iter().map(Vec::as_slice).collect();
    let parent2: Vec<Vec<u8>> = layer::parent_of_second(&env_refs, &parent_refs)
        .iter()
        .map(|e| e.to_vec())
        .collect();
    // The caller's environment is the second pass's parent unless it is its
    // input as it stands (nothing to find there that the input lacks).
    let parent2: &[Vec<u8>] = if parent2 == env2 { &[] } else { &parent2 };
    let second = decide_delivering(
        managed.policy,
        program,
        &argv2,
        &env2,
        parent2,
        managed.env_files,
        layers.sticky,
        managed.secrets,
    );
    combine(
        first,
        second,
        Inputs {
            env,
            argv,
            env2: &env2,
            argv2: &argv2,
        },
    )
}

/// The caller's input, and the second pass's.
struct Inputs<'a> {
    env: &'a [Vec<u8>],
    argv: &'a [Vec<u8>],
    env2: &'a [Vec<u8>],
    argv2: &'a [Vec<u8>],
}

/// One decision from the two passes' (the second over the first's result).
fn combine(first: Decision, second: Decision, i: Inputs<'_>) -> Decision {
    let child_env = second.effective_env(i.env2).to_vec();
    let child_argv = second.effective_argv(i.argv2).to_vec();
    let env_at = |k: usize| at_input(i.env, i.env2, k);
    let arg_at = |k: usize| at_input(i.argv, i.argv2, k);
    let managed = |mut c: Change| {
        c.layer = Layer::Managed;
        c.index = match (c.target, c.index) {
            (Target::Env, Some(k)) => env_at(k),
            (Target::Argv, Some(k)) => arg_at(k).or(Some(k)),
            (_, index) => index,
        };
        c
    };
    let mut changes = first.changes;
    changes.extend(second.changes.into_iter().map(&managed));
    let mut env_verdicts = first.env_verdicts;
    for (k, v) in second.env_verdicts.iter().enumerate() {
        if v.action == crate::decide::Action::Keep {
            continue;
        }
        if let Some(slot) = env_at(k).and_then(|j| env_verdicts.get_mut(j)) {
            *slot = *v;
        }
    }
    let mut argv_verdicts = first.argv_verdicts;
    for (k, v) in second.argv_verdicts.iter().enumerate() {
        if v.action == crate::argv::ArgAction::Keep {
            continue;
        }
        if let Some(slot) = arg_at(k).and_then(|j| argv_verdicts.get_mut(j)) {
            *slot = *v;
        }
    }
    let mut withheld = first.withheld;
    withheld.extend(second.withheld.iter().filter_map(|&k| env_at(k)));
    withheld.sort_unstable();
    withheld.dedup();
    let refusal = refusal_of(
        first.refusal,
        first.user_mode,
        second.refusal.map(&managed),
        second.mode,
    );
    let mode = match (first.user_mode, second.mode) {
        (Mode::Audit, Mode::Audit) => Mode::Audit,
        _ => Mode::Enforce,
    };
    Decision {
        mode,
        user_mode: first.user_mode,
        managed_mode: Some(second.mode),
        env: child_env,
        argv: child_argv,
        changes,
        refusal,
        env_verdicts,
        argv_verdicts,
        withheld,
    }
}

/// The refusal that stands: an enforcing pass's (the user's first); when
/// neither pass enforces, the one either would make, for an audit report.
fn refusal_of(
    first: Option<Change>,
    first_mode: Mode,
    second: Option<Change>,
    second_mode: Mode,
) -> Option<Change> {
    match (first_mode, second_mode) {
        (Mode::Enforce, _) if first.is_some() => first,
        (_, Mode::Enforce) => second,
        (Mode::Audit, Mode::Audit) => first.or(second),
        _ => None,
    }
}

/// The index in the caller's input of item `k` of the second pass's input:
/// `k` itself when the first pass passed the input unchanged, else the first
/// item equal to it, or `None` (an item the first pass built).
fn at_input(input: &[Vec<u8>], second: &[Vec<u8>], k: usize) -> Option<usize> {
    let item = second.get(k)?;
    if input.len() == second.len() && input.get(k) == Some(item) {
        return Some(k);
    }
    input.iter().position(|e| e == item)
}
