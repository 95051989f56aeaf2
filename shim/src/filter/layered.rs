//! The managed layer's pass: the second decision of an exec on a host that has
//! one, over the first decision's result (docs/adr/0020-managed-layer.md,
//! [`envpolicy_core::layer`]).
//!
//! The first pass (the user layer) hands back the child's arrays, or the
//! caller's own when it changed nothing (audit mode among them). The second
//! pass is the same [`decide_pass`] with the managed layer's policy, its env
//! files and its secrets, over those arrays, with the caller's environment as
//! the parent environment ([`envpolicy_core::layer::parent_of_second`]): what the
//! child receives passed both. A refusal by either pass refuses the exec, and
//! its line names the policy that refused it. An exec the first pass routes
//! through envwrap (a secret's program, started where its value cannot be read)
//! is not decided again here: envwrap decides both layers in the process that
//! becomes the program.
//!
//! Both passes build in one scratch, reserved once for both: the second pass
//! takes what the first left. When it needs more, the whole try is made again
//! with the sizes it asked for ([`Plan::second`]), as a first pass that needs
//! more is.

use core::ffi::c_char;

use envpolicy_core::Policy;

use super::{decide_pass, delivery_of, scratch_bytes, Attempt, ExecInput, Mark, PassSizes, Plan};
use super::{Prepared, Scratch, Site};
use crate::platform::sys;
use crate::state::env_files::{self, OpenFile, MAX_ENV_FILES};
use crate::state::in_force::Active;
use crate::state::sticky;

/// What the managed layer's pass needs besides the first pass's result, found
/// once per exec (not per try).
pub(super) struct Second<'a> {
    policy: Policy<'a>,
    files: [Option<OpenFile>; MAX_ENV_FILES],
    n_files: usize,
    renamed: u32,
    files_bytes: usize,
    preload: Option<&'a [u8]>,
    policy_entry: Option<&'a [u8]>,
    hint: Option<&'a [u8]>,
    delivery: super::deliver::Delivery,
}

impl<'a> Second<'a> {
    /// The managed layer `managed` for the exec of `first` (its env files
    /// opened; a layer whose env file is no file a policy reads decides with
    /// the floor, as a user layer's does). Rule 8's entries are the tree's
    /// own, put back when the managed layer is sticky, whatever the user
    /// layer says.
    ///
    /// # Safety
    /// `program` is NUL-terminated, and `first.prog` its bytes.
    unsafe fn open(
        managed: &'a Active,
        first: &ExecInput<'a>,
        program: *const c_char,
        site: Site,
    ) -> Second<'a> {
        let mut files = [None; MAX_ENV_FILES];
        let opened = env_files::open_all(&managed.policy, &mut files);
        let mut policy = managed.policy;
        let mut n_files = opened.n;
        if let Some(u) = opened.unusable {
            env_files::close_all(&files, n_files);
            n_files = 0;
            policy = env_files::floor_for(managed, u).map_or(policy, |f| f.policy);
        }
        let sticky = policy.settings().sticky;
        let files_bytes = files
            .iter()
            .take(n_files)
            .map(|f| f.map_or(0, |f| f.size + 1))
            .sum();
        Second {
            policy,
            files,
            n_files,
            renamed: if n_files == 0 { 0 } else { opened.renamed },
            files_bytes,
            preload: if sticky {
                sticky::own_path().bytes()
            } else {
                None
            },
            policy_entry: if sticky {
                sticky::policy().bytes()
            } else {
                None
            },
            hint: first.hint.filter(|_| sticky),
            // SAFETY: the caller's contract.
            delivery: unsafe { delivery_of(&policy, program, first.prog, site) },
        }
    }

    fn close(&self) {
        env_files::close_all(&self.files, self.n_files);
    }
}

/// The tries of an exec on a host with a managed layer: out of line, so that
/// what the second pass keeps ([`Second`]) is not part of the frame of every
/// exec on a host without one.
///
/// # Safety
/// `program` is NUL-terminated, and `x.prog` its bytes.
#[cold]
#[inline(never)]
pub(super) unsafe fn tries(
    managed: &'static Active,
    x: &ExecInput<'_>,
    program: *const c_char,
    site: Site,
    plan: Plan,
    scratch: &mut Scratch<'_>,
) -> Prepared {
    // SAFETY: the caller's contract.
    let second = unsafe { Second::open(managed, x, program, site) };
    let prepared = super::tries(x, Some(&second), plan, scratch);
    second.close();
    prepared
}

/// The managed layer's pass over what the first pass decided (`first`), in the
/// rest of the scratch the try reserved.
pub(super) fn second_pass(
    x: &ExecInput<'_>,
    s: &Second<'_>,
    first: Prepared,
    plan: Plan,
    scratch: &Scratch<'_>,
) -> Attempt {
    let (argv, envp) = match first {
        Prepared::Pass { .. } => (x.argv, x.envp),
        Prepared::Use { argv, envp, .. } => (argv, envp),
        // Refused, or routed through envwrap, which decides both layers.
        done => return Attempt::Done(done),
    };
    // The caller's own environment (`layer::parent_of_second`): the first
    // pass's parent environment when the program passed its own, else its input.
    let environ = if x.np > 0 { x.environ } else { x.envp };
    // SAFETY: the first pass's arrays are NULL or NULL-terminated (the caller's,
    // or built NULL-terminated in the scratch), as is `environ`.
    let (na, ne) = unsafe { (sys::count(argv), sys::count(envp)) };
    let np = if envp == environ {
        0
    } else {
        // SAFETY: as above.
        unsafe { sys::count(environ) }
    };
    let x2 = ExecInput {
        policy: &s.policy,
        prog: x.prog,
        argv,
        envp,
        environ,
        na,
        ne,
        np,
        files: &s.files,
        cached: None,
        n_files: s.n_files,
        renamed: s.renamed,
        files_bytes: s.files_bytes,
        preload: s.preload,
        policy_entry: s.policy_entry,
        hint: s.hint,
        delivery: s.delivery,
    };
    let sizes = plan.second.unwrap_or_else(|| first_sizes(&x2));
    let plan2 = Plan {
        env: sizes.env,
        arg_bytes: sizes.arg_bytes,
        retry: plan.retry,
        second: None,
        extra: 0,
    };
    let need = scratch_bytes(&x2, plan2);
    if scratch.remaining() < need {
        return Attempt::Retry(Plan {
            second: Some(sizes),
            extra: plan.extra.saturating_add(need),
            retry: true,
            ..plan
        });
    }
    match decide_pass(&x2, plan2, scratch) {
        Attempt::Retry(p2) => Attempt::Retry(Plan {
            second: Some(PassSizes {
                env: p2.env,
                arg_bytes: p2.arg_bytes,
            }),
            extra: plan.extra.saturating_add(scratch_bytes(&x2, p2)),
            retry: true,
            ..plan
        }),
        // The second pass changed nothing: the first pass's arrays.
        Attempt::Done(Prepared::Pass { .. }) => Attempt::Done(unmarked(first)),
        Attempt::Done(done) => Attempt::Done(unmarked(done)),
    }
}

/// The sizes a first try of the managed layer's pass reserves.
fn first_sizes(x2: &ExecInput<'_>) -> PassSizes {
    let mut arg_total = 0usize;
    for i in 0..x2.na {
        // SAFETY: i < na, each entry NUL-terminated.
        arg_total = arg_total.saturating_add(unsafe { sys::strlen(super::at(x2.argv, i)) } + 1);
    }
    PassSizes {
        env: envpolicy_core::decide::scratch_sizes(
            x2.policy,
            x2.ne,
            x2.preload.map_or(0, <[u8]>::len),
        ),
        arg_bytes: arg_total.saturating_add(16),
    }
}

/// `p` without a supervisor's mark: a mark says that the exec was decided by
/// one policy, which a supervisor of the tree could then skip judging; an exec
/// decided by two layers is judged by the supervisor itself.
fn unmarked(p: Prepared) -> Prepared {
    match p {
        Prepared::Pass { .. } => Prepared::Pass { mark: Mark(0) },
        Prepared::Use { argv, envp, .. } => Prepared::Use {
            argv,
            envp,
            mark: Mark(0),
        },
        other => other,
    }
}
