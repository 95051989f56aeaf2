//! The managed layer's inputs: what the second pass of an exec on a host that
//! has one reads (docs/adr/0020-managed-layer.md, [`envpolicy_core::layer`]).
//!
//! The core's pipeline ([`envpolicy_core::pipeline::decide`]) runs the pass,
//! over what the user pass gives the child, with the caller's environment as
//! the parent environment: what the child receives passed both. This module
//! only gathers the layer's own inputs once per exec ([`Second::open`]: its
//! env files opened, or the floor when one is no file a policy reads; rule 8's
//! entries; how its secrets reach the program) and, at each try, reads them
//! into the scratch ([`Second::gather`]). An exec the user pass routes through
//! envwrap (a secret's program, started where its value cannot be read) gets
//! no managed pass here: envwrap decides both layers in the process that
//! becomes the program.

use core::ffi::c_char;
use core::mem::size_of;

use envpolicy_core::Policy;

use envpolicy_core::layer::Layer;
use envpolicy_core::pipeline;

use super::deliver::{delivered, delivery_bytes};
use super::{delivery_of, file_contents, ExecInput, Plan, Prepared, Scratch, Site};
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

    /// Bytes of scratch the layer's own inputs take (its env files, its
    /// secrets), for an exec of `na` arguments.
    pub(super) fn bytes(&self, na: usize) -> usize {
        let words = self.n_files.saturating_mul(size_of::<Option<&[u8]>>());
        self.files_bytes
            .saturating_add(words)
            .saturating_add(delivery_bytes(self.delivery, na))
            .saturating_add(64)
    }

    /// The managed layer's pass for the exec of `x`: its env files read into
    /// the scratch, its secrets read (or, where they cannot be, envwrap's path
    /// to route the exec through), or `None` when the scratch has no room.
    pub(super) fn gather<'s>(
        &'s self,
        x: &ExecInput<'_>,
        plan: Plan,
        scratch: &'s Scratch<'_>,
    ) -> Option<(pipeline::Pass<'s>, Option<&'s [u8]>)> {
        let files = self.files.get(..self.n_files).unwrap_or(&[]);
        let contents = file_contents(files, None, plan.retry, scratch)?;
        let (secrets, route) = delivered(&self.policy, self.delivery, x, plan, scratch)?;
        let pass = pipeline::Pass {
            layer: Layer::Managed,
            policy: &self.policy,
            mode: self.policy.settings().mode,
            files: pipeline::Files {
                contents,
                renamed: self.renamed,
                ..pipeline::Files::default()
            },
            sticky: pipeline::Sticky {
                preload: self.preload,
                policy_entry: self.policy_entry,
                hint: self.hint,
            },
            secrets,
        };
        Some((pass, route))
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
