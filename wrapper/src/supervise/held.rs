//! The policy the supervisor holds, and how it follows an edit.
//!
//! A supervisor may live as long as a tmux server. Like the shim in a running
//! process, it looks at the policy file once per exec (one `stat`) and loads it
//! again when it changed, so an edit applies at the next exec of the tree. A
//! file that no longer loads gives the strict floor, with a warning, never the
//! last policy that loaded; a file that is gone is not followed, and the policy
//! stays in force (the shim does the same, tests/tests/shim_policy_load.rs).

use crate::source::Loaded;
use envpolicy::cache_key::Stamp;
use envpolicy::compiled::Policy;
use envpolicy::load::{self, Compiled};
use std::path::PathBuf;

pub struct Held {
    /// `compiled`'s policy, validated once per load instead of at every exec
    /// (validation was the largest part of a remembered exec's cost).
    policy: Policy<'static>,
    compiled: Compiled,
    /// `--mode`, over the policy's own.
    pub mode: Option<envpolicy::compiled::Mode>,
    /// The file, for a policy that is one; `None` for the built-in default.
    path: Option<PathBuf>,
    stamp: Option<Stamp>,
}

impl Held {
    pub fn new(loaded: Loaded, mode: Option<envpolicy::compiled::Mode>) -> Held {
        let path = loaded.absolute_path();
        let stamp = path.as_deref().and_then(envpolicy::cache::stamp);
        let compiled = loaded.compiled;
        Held {
            policy: validated(&compiled),
            compiled,
            mode,
            path,
            stamp,
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> &Policy<'_> {
        &self.policy
    }

    /// Put `compiled` in force, with its policy.
    fn hold(&mut self, compiled: Compiled) {
        self.policy = validated(&compiled);
        self.compiled = compiled;
    }

    /// Load the policy again if its file changed. True when the policy did.
    pub fn follow_edit(&mut self) -> bool {
        let Some(path) = &self.path else {
            return false;
        };
        let now = envpolicy::cache::stamp(path);
        if now.is_none() || now == self.stamp {
            return false;
        }
        self.stamp = now;
        match load::load(path) {
            Ok(c) => self.hold(c),
            Err(e) => {
                say!(
                    "envwrap: --supervise: the edited policy does not load, so the tree's execs \
                     are judged by the strict floor until it does: {e}"
                );
                self.hold(load::builtin_floor());
            }
        }
        true
    }
}

/// `compiled`'s policy, borrowed for as long as the `Held` that keeps both.
fn validated(compiled: &Compiled) -> Policy<'static> {
    let policy = compiled.policy();
    // SAFETY: the policy borrows the bytes `Compiled` keeps on the heap, which
    // do not move when the `Compiled` does and are never changed. `Held` keeps
    // the two together and replaces them together (`hold`), and hands the
    // policy out only for the life of a borrow of itself (`Held::policy`), so
    // no copy outlives the bytes.
    unsafe { core::mem::transmute::<Policy<'_>, Policy<'static>>(policy) }
}
