//! The managed layer: a host's floor that no user policy, variable, flag or
//! descendant can loosen (docs/adr/0020-managed-layer.md, docs/policy.md
//! section 2b).
//!
//! A host that has [`MANAGED_POLICY`] decides every exec twice: first with the
//! policy the lookup found (the user layer), as on any host; then with the
//! managed layer, over the first decision's *result*. What the child receives
//! is the second decision's result. "Only stricter" is then a property of the
//! structure rather than a list of fields: every entry and argument a child
//! receives passed both layers, or was added by the managed layer itself, and
//! no pattern of the user's is ever compared with one of the managed layer's.
//!
//! Every front end (libenvshim.so, envwrap, the library, `--supervise`) runs the
//! two decisions itself, with the decision code it already runs; what they
//! must agree on is decided here, once:
//!
//! - where the layer is: [`MANAGED_POLICY`] and its compiled form
//!   [`MANAGED_COMPILED`], constants that no variable, flag or user file moves;
//! - who may write them: root alone ([`trusted`]);
//! - which mode governs each pass: [`pass_mode`] (`--mode` and `ENVSHIM_*`
//!   reach the user layer only);
//! - what the second pass is handed besides the first one's result: the
//!   caller's environment, as its parent environment ([`parent_of_second`]),
//!   so that a copy of a credential the user layer stripped is still found;
//! - what a layer that is there but cannot be used gives: the fail-closed
//!   floor, for the second pass ([`Found::Broken`]); never no layer.

use crate::compiled::Mode;
use crate::decide::{self, Rule};
use crate::Policy;
use crate::writers::{self, Untrusted};

/// The managed layer's policy file. No variable, flag or user file names or
/// moves it.
pub const MANAGED_POLICY: &[u8] = crate::shared::MANAGED_POLICY;

/// [`MANAGED_POLICY`], NUL-terminated, for a raw `stat`.
pub const MANAGED_POLICY_C: &[u8] = crate::shared::MANAGED_POLICY_C;

/// The managed layer's compiled form, written by root with
/// `envwrap compile --managed`. libenvshim.so never parses TOML and never
/// trusts a compiled form a user could write (its own cache): it enforces this
/// file, checked fresh against [`MANAGED_POLICY`] and the files it imports.
pub const MANAGED_COMPILED: &[u8] = crate::shared::MANAGED_COMPILED;

/// [`MANAGED_COMPILED`], NUL-terminated, for a raw `open`.
pub const MANAGED_COMPILED_C: &[u8] = crate::shared::MANAGED_COMPILED_C;

// The NUL-terminated forms are the same paths.
const _: () = assert!(
    MANAGED_POLICY_C.len() == MANAGED_POLICY.len() + 1
        && MANAGED_COMPILED_C.len() == MANAGED_COMPILED.len() + 1
);

/// Which of the two decisions made a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    /// The policy the lookup found (`--policy`, `ENVSHIM_POLICY`, the user's
    /// file, `/etc/envshim/policy.toml` or the built-in default).
    User,
    /// [`MANAGED_POLICY`].
    Managed,
}

impl Layer {
    /// The name the reports and JSON lines use.
    pub fn id(self) -> &'static str {
        match self {
            Layer::User => "user",
            Layer::Managed => "managed",
        }
    }
}

/// What a front end found at [`MANAGED_POLICY`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// Nothing there (`ENOENT`): the host has no managed layer, and each exec
    /// is decided once.
    Absent,
    /// A file root alone may write, that compiles (its compiled form is fresh,
    /// for the shim).
    Usable,
    /// Something is there that cannot be used: writable by someone other than
    /// root, not a regular file, does not compile, or (for the shim) its
    /// compiled form is missing, stale or untrusted. The second pass decides
    /// with the fail-closed floor, and the front end says why once: a layer an
    /// administrator put there is never dropped for something laxer.
    Broken,
}

/// Whether [`MANAGED_POLICY`] or a file it imports, with this owner, group
/// and mode (symbolic links followed), may decide every user's children:
/// owned by root and writable by no one else. It is the policy-file rule of
/// [`crate::writers`] without its exception for the user's own files.
pub fn trusted(owner: u32, gid: u32, mode: u32) -> Result<(), Untrusted> {
    writers::judge(owner, gid, mode, 0, None)
}

/// The mode that governs a layer's pass: the user layer's is its policy's
/// `mode`, or what the caller asked for (`envwrap --mode`, the library's
/// override); the managed layer's is always its own file's.
pub fn pass_mode(layer: Layer, own: Mode, requested: Option<Mode>) -> Mode {
    match layer {
        Layer::User => requested.unwrap_or(own),
        Layer::Managed => own,
    }
}

/// The parent environment the managed pass is handed: the caller's own
/// environment (`parent_env` of the first pass, or, when the program passed
/// none of its own, the first pass's input `env`). The managed pass searches
/// it for credentials whose values an entry of the first pass's result still
/// holds under another name (decide.rs, rule 4), so a user policy that strips
/// `GH_TOKEN` and keeps `AUTH="Bearer $GH_TOKEN"` loses the copy.
pub fn parent_of_second<'e>(env: &'e [&'e [u8]], parent_env: &'e [&'e [u8]]) -> &'e [&'e [u8]] {
    if parent_env.is_empty() {
        env
    } else {
        parent_env
    }
}

/// Where entry (or argument) `k` of the managed pass's input, the user pass's
/// result `second`, stands in the caller's `input`: `k` itself where the two
/// line up, else the first equal item; `None` for one the user pass made (a
/// `set`, a secret, an env file's value). Every front end's records and
/// messages give a managed change this index, the one a user reading the
/// exec's arrays can find.
pub fn caller_index<T: AsRef<[u8]>>(input: &[T], second: &[T], k: usize) -> Option<usize> {
    let item = second.get(k)?.as_ref();
    if input.len() == second.len() && input.get(k).map(AsRef::as_ref) == Some(item) {
        return Some(k);
    }
    input.iter().position(|e| e.as_ref() == item)
}

/// A rule of the user layer that the managed layer makes dead: what it asks
/// for cannot happen on this host. `envwrap check` reports each as an error
/// that names both files (the user's rule, and the managed rule in `by`); the
/// shim and envwrap say once, at run time, that the managed layer overrides
/// the user's policy. The stricter rule wins either way: this only tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dead {
    /// `mode = "audit"` under a managed layer in enforce mode: the managed
    /// pass still changes every exec.
    Mode,
    /// `keep` pattern record `pattern` (an exact name), which the managed
    /// layer does not pass (`by`).
    Keep { pattern: u32, by: Rule },
    /// `set` record `set`, whose name the managed layer does not pass.
    Set { set: u32, by: Rule },
    /// `[[grant]]` record `grant`: the managed layer does not pass its name
    /// to its program.
    Grant { grant: u32, by: Rule },
    /// `[[secret]]` record `secret`: likewise.
    Secret { secret: u32, by: Rule },
}

/// Every rule of `user` that `managed` makes dead, in the order of the user
/// file's records. Each is judged as the managed pass would judge the entry it
/// asks for, top level (a `[program.NAME]` rule of the managed layer is not
/// applied to a name the user keeps everywhere), with an empty value: what is
/// decided by name alone.
pub fn dead_rules(user: &Policy<'_>, managed: &Policy<'_>, mut each: impl FnMut(Dead)) {
    use crate::compiled::{sec, Class};
    use crate::glob::GlobKind;
    if user.settings().mode == Mode::Audit && managed.settings().mode == Mode::Enforce {
        each(Dead::Mode);
    }
    let blocked = |program: &[u8], name: &[u8]| {
        let mask = crate::programs::program_mask(managed, program);
        let v = decide::judge(
            managed,
            &crate::identity::Identity::itself(program),
            mask,
            name,
            b"",
            None,
        );
        (!v.action.passes()).then_some(v.rule)
    };
    for i in 0..user.count(sec::PATTERNS) as u32 {
        let Some(p) = user.pattern(i) else { continue };
        if p.class != Class::Keep || p.kind != GlobKind::Exact || p.line == 0 {
            continue;
        }
        if let Some(by) = blocked(b"", user.str(p.text)) {
            each(Dead::Keep { pattern: i, by });
        }
    }
    for i in 0..user.count(sec::SETS) as u32 {
        let Some(r) = user.set(i) else { continue };
        if let Some(by) = blocked(b"", user.str(r.name)) {
            each(Dead::Set { set: i, by });
        }
    }
    for i in 0..user.count(sec::GRANTS) as u32 {
        let Some(g) = user.grant(i) else { continue };
        // A secret's own grant is reported as the secret.
        if crate::secret::by_name(user, user.str(g.name)).is_some() {
            continue;
        }
        if let Some(by) = blocked(user.str(g.program), user.str(g.name)) {
            each(Dead::Grant { grant: i, by });
        }
    }
    for i in 0..user.count(sec::SECRETS) as u32 {
        let Some(r) = user.secret(i) else { continue };
        if let Some(by) = blocked(user.str(r.program), user.str(r.name)) {
            each(Dead::Secret { secret: i, by });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_root_may_write_the_managed_layer() {
        assert!(trusted(0, 0, 0o100644).is_ok());
        assert!(trusted(0, 0, 0o100664).is_err());
        assert!(trusted(0, 0, 0o100646).is_err());
        // The user's own file is no managed layer, whoever the user is.
        assert!(trusted(1000, 1000, 0o100600).is_err());
    }

    #[test]
    fn an_override_reaches_the_user_layer_only() {
        let audit = Some(Mode::Audit);
        assert_eq!(pass_mode(Layer::User, Mode::Enforce, audit), Mode::Audit);
        assert_eq!(pass_mode(Layer::Managed, Mode::Enforce, audit), Mode::Enforce);
        assert_eq!(pass_mode(Layer::Managed, Mode::Audit, None), Mode::Audit);
    }

    #[test]
    fn the_second_pass_sees_the_callers_environment() {
        let env: [&[u8]; 1] = [b"A=1"];
        let parent: [&[u8]; 1] = [b"B=2"];
        assert_eq!(parent_of_second(&env, &[]), &env[..]);
        assert_eq!(parent_of_second(&env, &parent), &parent[..]);
    }
}
