//! Every name the front ends share: the `ENVSHIM_*` variables that pass
//! between the shim, envwrap, the Rust API and the supervisor, and the fixed
//! paths under `/etc/envshim`, each written once, here, with why it exists (as sudo's `env.c` gives each entry of its
//! tables a reason).
//!
//! A name typed out by hand on one side and taken from a constant on the
//! other drifts apart without a test noticing; tests/tests/architecture.rs
//! rejects a `"ENVSHIM_` literal anywhere else in the code of the four
//! crates (their test modules apart). Where a front end needs an entry
//! (`NAME=`), or a C string for an environment it builds, the form is here
//! too, and a unit test holds it to its name.

use core::ffi::CStr;

/// What every name here starts with. A policy cannot keep, set or grant a
/// name of it (the compiler refuses it); rule 8 alone passes the ones a child
/// needs.
pub const PREFIX: &str = "ENVSHIM_";

/// The policy file a process and its tree are under: set by a user, by
/// `envwrap --preload` or by the shim for a child, and kept in every child by
/// rule 8 (`sticky`), so that a program that clears its environment does not
/// lose its policy.
pub const POLICY: &str = "ENVSHIM_POLICY";
/// [`POLICY`]'s entry, up to its value.
pub const POLICY_ENTRY: &[u8] = b"ENVSHIM_POLICY=";
/// The entry that names the built-in default: what a tree started with no
/// policy file hands its children, NUL-terminated.
pub const BUILTIN_POLICY_ENTRY: &[u8] = b"ENVSHIM_POLICY=:builtin\0";

/// The start-up hint a policed parent gives its child
/// ([`crate::hint`]): the child skips the look-up its parent already made.
pub const HINT: &str = "ENVSHIM_HINT";
/// [`HINT`]'s entry, up to its value.
pub const HINT_ENTRY: &[u8] = b"ENVSHIM_HINT=";

/// The run key of a supervised tree ([`crate::mark`]): in every environment
/// of the tree, so that the shim can mark the execs it decided.
pub const SUPERVISOR: &str = "ENVSHIM_SUPERVISOR";

/// Where compiled policies are cached, when not the default
/// ([`crate::cache_key`]).
pub const CACHE_DIR: &str = "ENVSHIM_CACHE_DIR";

/// Set by the shim in the environment of the `envwrap compile` it runs, so
/// that envwrap knows a shim asked (and the shim in that envwrap does not
/// compile again).
pub const COMPILING: &str = "ENVSHIM_COMPILING";
/// [`COMPILING`]'s entry, as the shim passes it.
pub const COMPILING_ENTRY: &CStr = c"ENVSHIM_COMPILING=1";

/// Set by the shim in a multiplexer client for the `envwrap mux-env` it runs
/// before `main`, so that the shim in that envwrap does not check again.
pub const TMUX_CHECK: &str = "ENVSHIM_TMUX_CHECK";
/// [`TMUX_CHECK`]'s entry, as the shim passes it.
pub const TMUX_CHECK_ENTRY: &CStr = c"ENVSHIM_TMUX_CHECK=1";

/// The envwrap to route a secret's exec through, and to run helpers with,
/// when not the one beside libenvshim.so (or on `PATH`, for the Rust API).
pub const ENVWRAP: &str = "ENVSHIM_ENVWRAP";

/// The system-wide policy file: the lookup's step after the user's own
/// ([`crate::lookup`]).
pub const SYSTEM_POLICY: &[u8] = b"/etc/envshim/policy.toml";
/// [`SYSTEM_POLICY`], NUL-terminated, for a raw `open`.
pub const SYSTEM_POLICY_C: &[u8] = b"/etc/envshim/policy.toml\0";

/// The managed layer's policy file ([`crate::layer`]). No variable, flag or
/// user file names or moves it.
pub const MANAGED_POLICY: &[u8] = b"/etc/envshim/managed.toml";
/// [`MANAGED_POLICY`], NUL-terminated, for a raw `stat`.
pub const MANAGED_POLICY_C: &[u8] = b"/etc/envshim/managed.toml\0";

/// The managed layer's compiled form, written by root with
/// `envwrap compile --managed`: the shim enforces this file, never a compiled
/// form a user could write.
pub const MANAGED_COMPILED: &[u8] = b"/etc/envshim/managed.bin";
/// [`MANAGED_COMPILED`], NUL-terminated, for a raw `open`.
pub const MANAGED_COMPILED_C: &[u8] = b"/etc/envshim/managed.bin\0";

#[cfg(test)]
mod tests {
    use super::*;

    fn entry_of(name: &str, entry: &[u8]) -> bool {
        entry.strip_prefix(name.as_bytes()).is_some_and(|rest| rest.first() == Some(&b'='))
    }

    #[test]
    fn each_entry_is_its_name_and_each_name_has_the_prefix() {
        assert!(entry_of(POLICY, POLICY_ENTRY));
        assert!(entry_of(POLICY, BUILTIN_POLICY_ENTRY));
        assert!(entry_of(HINT, HINT_ENTRY));
        assert!(entry_of(COMPILING, COMPILING_ENTRY.to_bytes()));
        assert!(entry_of(TMUX_CHECK, TMUX_CHECK_ENTRY.to_bytes()));
        for (path, c) in [
            (SYSTEM_POLICY, SYSTEM_POLICY_C),
            (MANAGED_POLICY, MANAGED_POLICY_C),
            (MANAGED_COMPILED, MANAGED_COMPILED_C),
        ] {
            assert_eq!(c.strip_suffix(b"\0"), Some(path));
        }
        for name in [POLICY, HINT, SUPERVISOR, CACHE_DIR, COMPILING, TMUX_CHECK, ENVWRAP] {
            assert!(name.starts_with(PREFIX), "{name}");
        }
    }
}
