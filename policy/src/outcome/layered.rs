//! Both layers of an exec (docs/adr/0020-managed-layer.md, [`crate::layer`]),
//! decided by the core's one pipeline ([`pipeline::decide`]: the user pass,
//! then the managed pass over its *result*, with the caller's environment as
//! its parent environment) and made owned here. One [`Decision`] comes back:
//! the child's arrays, and every change of both passes, each with the
//! [`Layer`] that made it.
//!
//! Composition rather than a merge is what makes "only stricter" hold for every
//! field: every entry and argument the child gets passed both layers, or was
//! added by the managed layer itself.

use super::{pass_decision, Change, Decision, PassIo, Sticky, Target};
use crate::compiled::{Mode, Policy};
use crate::layer::{self, Layer};
use crate::pipeline;

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

impl<'a, 'p> Layers<'a, 'p> {
    /// One layer, `user` (no managed layer, the policy's own mode), with rule
    /// 8's entries `sticky`.
    pub fn one(user: Pass<'a, 'p>, sticky: Sticky<'a>) -> Self {
        Layers {
            user,
            managed: None,
            requested_mode: None,
            sticky,
        }
    }

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

    /// [`Layers::decide`] for an exec another front end already decided and
    /// routed through envwrap to read its secrets (`envwrap --routed`,
    /// [`envpolicy_core::decide::EnvRequest::routed`]): an expanding `set` is
    /// what that decision made of it.
    pub fn decide_routed(
        &self,
        program: &[u8],
        argv: &[Vec<u8>],
        env: &[Vec<u8>],
        parent_env: &[Vec<u8>],
    ) -> Decision {
        decide_exec(self, program, argv, env, parent_env, true)
    }
}

/// Decide one exec of `program` with both layers (`parent_env`: the caller's
/// environment; one equal to `env`, or empty, means the child inherits it, as
/// for [`super::decide()`]): the core's pipeline ([`pipeline::decide`]) in
/// buffers grown until it fits, made owned.
///
/// The user pass runs in [`layer::pass_mode`] of its own mode and the
/// requested one. The result's [`Decision::mode`] is enforce when either pass
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
    decide_exec(layers, program, argv, env, parent_env, false)
}

fn decide_exec(
    layers: &Layers<'_, '_>,
    program: &[u8],
    argv: &[Vec<u8>],
    env: &[Vec<u8>],
    parent_env: &[Vec<u8>],
    routed: bool,
) -> Decision {
    // The same environment on both sides is no parent of its own: each
    // caller (the supervisor's `/proc/PID/environ`, a library's `environ`)
    // may pass it either way.
    let parent_env = if parent_env == env {
        &[][..]
    } else {
        parent_env
    };
    let (env_r, argv_r, parent_r) = (slices(env), slices(argv), slices(parent_env));
    let user = Gathered::of(layers.user);
    let managed = layers.managed.map(Gathered::of);
    let user_mode = layer::pass_mode(
        Layer::User,
        layers.user.policy.settings().mode,
        layers.requested_mode,
    );
    let user_pass = user.pass(Layer::User, user_mode, layers.sticky);
    let managed_pass = managed
        .as_ref()
        .map(|m| m.pass(Layer::Managed, m.of.policy.settings().mode, layers.sticky));
    let exec = pipeline::Exec {
        routed,
        ..pipeline::Exec::new(program, &argv_r, &env_r, &parent_r)
    };
    let sizes = pipeline::Sizes::of(&user_pass, &exec);
    let mut plan = pipeline::Plan::first(sizes, managed_pass.is_some());
    let mut slack = 0usize;
    loop {
        let mut buf = vec![0u64; (plan.bytes() + slack) / 8 + 1];
        let arena = pipeline::Bump::new(&mut buf);
        match pipeline::decide(exec, &user_pass, managed_pass.as_ref(), plan, &arena) {
            Ok(o) => return owned(layers, &o, argv, env, parent_env),
            Err(pipeline::Short::Grow(p)) => plan = p,
            // The plan's bytes are what its takes need; more, should they not be.
            Err(pipeline::Short::NoRoom) => slack = slack * 2 + 4096,
        }
    }
}

/// A layer's env files and secrets as the pipeline reads them.
struct Gathered<'a, 'p> {
    of: Pass<'a, 'p>,
    files: Vec<Option<&'a [u8]>>,
    secrets: Vec<Option<&'a [u8]>>,
}

impl<'a, 'p> Gathered<'a, 'p> {
    fn of(of: Pass<'a, 'p>) -> Self {
        Gathered {
            of,
            files: of.env_files.iter().map(|f| f.as_deref()).collect(),
            secrets: of.secrets.iter().map(|s| s.as_deref()).collect(),
        }
    }

    fn pass<'s>(&'s self, layer: Layer, mode: Mode, sticky: Sticky<'s>) -> pipeline::Pass<'s> {
        pipeline::Pass {
            layer,
            policy: self.of.policy,
            mode,
            files: pipeline::Files {
                contents: &self.files,
                renamed: super::renamed_files(self.of.policy),
                ..pipeline::Files::default()
            },
            sticky,
            secrets: &self.secrets,
        }
    }
}

fn slices(v: &[Vec<u8>]) -> Vec<&[u8]> {
    v.iter().map(Vec::as_slice).collect()
}

fn owned_all(v: &[&[u8]]) -> Vec<Vec<u8>> {
    v.iter().map(|e| e.to_vec()).collect()
}

/// The pipeline's outcome as one owned [`Decision`].
fn owned(
    layers: &Layers<'_, '_>,
    o: &pipeline::Outcome<'_>,
    argv: &[Vec<u8>],
    env: &[Vec<u8>],
    parent_env: &[Vec<u8>],
) -> Decision {
    let first = pass_decision(
        &o.user,
        PassIo {
            policy: layers.user.policy,
            env,
            argv,
            parent_env,
            env_files: layers.user.env_files,
        },
    );
    let (Some(second), Some(managed)) = (&o.managed, layers.managed) else {
        return first;
    };
    let (env2, argv2) = (owned_all(second.exec.env), owned_all(second.exec.argv));
    let parent2 = owned_all(second.exec.parent);
    let second_decision = pass_decision(
        second,
        PassIo {
            policy: managed.policy,
            env: &env2,
            argv: &argv2,
            parent_env: &parent2,
            env_files: managed.env_files,
        },
    );
    let refused_by = o.refusal().map(|(d, _)| d.pass.layer);
    combine(
        first,
        second_decision,
        Inputs {
            env,
            argv,
            env2: &env2,
            argv2: &argv2,
        },
        refused_by,
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
fn combine(
    first: Decision,
    second: Decision,
    i: Inputs<'_>,
    refused_by: Option<Layer>,
) -> Decision {
    let child_env = second.effective_env(i.env2).to_vec();
    let child_argv = second.effective_argv(i.argv2).to_vec();
    let env_at = |k: usize| layer::caller_index(i.env, i.env2, k);
    let arg_at = |k: usize| layer::caller_index(i.argv, i.argv2, k);
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
    // What a pass in audit mode withholds is not withheld: only an
    // enforcing pass's lines are said, as the shim says them.
    let (mut withheld, mut withheld_added) = match first.user_mode {
        Mode::Enforce => (first.withheld, first.withheld_added),
        Mode::Audit => (Vec::new(), Vec::new()),
    };
    let second_withheld = match second.mode {
        Mode::Enforce => &second.withheld[..],
        Mode::Audit => &[],
    };
    for &k in second_withheld {
        match env_at(k) {
            Some(j) => withheld.push(j),
            None => withheld_added.extend(
                i.env2
                    .get(k)
                    .and_then(|e| crate::bytes::split_entry(e))
                    .map(|(n, _)| n.to_vec()),
            ),
        }
    }
    withheld.sort_unstable();
    withheld.dedup();
    // The refusal that stands, or that an audit pass would make
    // (`pipeline::Outcome::refusal`).
    let (refusal, refusal_line) = match refused_by {
        Some(Layer::Managed) => (second.refusal.map(&managed), second.refusal_line),
        Some(Layer::User) => (first.refusal, first.refusal_line),
        None => (None, None),
    };
    let mode = match (first.user_mode, second.mode) {
        (Mode::Audit, Mode::Audit) => Mode::Audit,
        _ => Mode::Enforce,
    };
    Decision {
        program: first.program,
        mode,
        user_mode: first.user_mode,
        managed_mode: Some(second.mode),
        env: child_env,
        argv: child_argv,
        changes,
        refusal,
        refusal_line,
        env_verdicts,
        argv_verdicts,
        withheld,
        withheld_added,
    }
}
