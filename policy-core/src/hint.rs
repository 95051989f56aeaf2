//! The start-up hint: what a policed parent tells its child so that the child's
//! library constructor need not read the policy (docs/adr/0015-start-up-hint.md).
//!
//! libenvshim.so needs the policy before `main` for two things only: the log file
//! a policy may keep, and self-scrub of the programs it names
//! ([`needed_at_load`]). Everything else waits for the first exec. A parent under
//! the shim has the policy at hand when it execs: when the policy file is
//! unchanged since it was loaded, keeps no log, and does not self-scrub the
//! program about to start, the parent adds `ENVSHIM_HINT=1-<digest>` to the
//! child's environment ([`entry`]). A child whose hint matches its own policy path
//! and `argv[0]` ([`matches()`]) maps and checks the policy at its first exec, `fork`
//! or `posix_spawn` instead of at load, as every child did before the hint for the
//! rest of the check (docs/adr/0009-deferred-cache-check.md).
//!
//! The hint can only make a child skip work whose result would have been "nothing
//! to do". A hint that is missing, malformed, for another policy path, another
//! program or another build of the library does not match, and the child loads the
//! policy at load as before. A process that forges one could as well have removed
//! `LD_PRELOAD`: the hint adds no power to drop the policy.

use crate::cache_key::{fnv1a64, fnv1a64_more};
use crate::Records;

/// The variable's name.
pub const NAME: &[u8] = crate::shared::HINT.as_bytes();

/// What the digest is bound to besides the policy path and the program: the
/// library's version and the compiled format, so that a hint from another build
/// (whose rules for [`needed_at_load`] may differ) never matches.
const BUILD: &[u8] = concat!(
    "envshim-hint-1/",
    env!("CARGO_PKG_VERSION"),
    "/format-"
)
.as_bytes();

/// `ENVSHIM_HINT=1-` and 16 hex digits.
pub const ENTRY_LEN: usize = NAME.len() + 1 + 2 + 16;

/// Does the library need the policy before `main` in a process whose `argv[0]` is
/// `program`? When the policy keeps a log (opened at load) or self-scrubs the
/// program (decided at load, docs/policy.md, `self_scrub`). A failure marker in
/// the cache is the loader's own concern: it never becomes a policy a parent can
/// hint from.
pub fn needed_at_load(policy: &Records<'_>, program: &[u8]) -> bool {
    policy.log_path().is_some() || crate::programs::self_scrub(policy, program)
}

/// The digest of a hint for the policy at `policy_path` (absolute, as the shim's
/// `ENVSHIM_POLICY` entry holds it) and a program started with `argv0`.
fn digest(policy_path: &[u8], argv0: &[u8]) -> u64 {
    let mut h = fnv1a64(BUILD);
    h = fnv1a64_more(h, &crate::compiled::FORMAT.to_le_bytes());
    h = fnv1a64_more(h, &(policy_path.len() as u64).to_le_bytes());
    h = fnv1a64_more(h, policy_path);
    fnv1a64_more(h, argv0)
}

/// `ENVSHIM_HINT=1-<digest>` for a child started with `argv0` under the policy at
/// `policy_path`, or `None` when the child needs the policy at load (then it gets
/// no hint, and loads as every process without one).
///
/// `fresh` is asked last, only when a hint would otherwise be given: the caller's
/// word that the policy in force is the policy file as it is now (its `stat`
/// unchanged since it was compiled, [`crate::cache_key::check_policy_file`]). A
/// parent whose policy was edited since it loaded it must not speak for the edit.
pub fn entry(
    policy: &Records<'_>,
    policy_path: &[u8],
    argv0: &[u8],
    fresh: impl FnOnce() -> bool,
) -> Option<[u8; ENTRY_LEN]> {
    if policy_path.first() != Some(&b'/') || needed_at_load(policy, argv0) || !fresh() {
        return None;
    }
    let mut out = [0u8; ENTRY_LEN];
    let (head, hex) = out.split_at_mut(NAME.len() + 3);
    let (name, rest) = head.split_at_mut(NAME.len());
    name.copy_from_slice(NAME);
    rest.copy_from_slice(b"=1-");
    crate::hex::put(digest(policy_path, argv0), hex);
    Some(out)
}

/// Does the hint `value` (what follows `ENVSHIM_HINT=`) speak for the policy at
/// `policy_path` and a process started with `argv0`? Anything else, malformed
/// included, is no hint.
pub fn matches(value: &[u8], policy_path: &[u8], argv0: &[u8]) -> bool {
    let Some(hex) = value.strip_prefix(b"1-") else {
        return false;
    };
    let mut want = [0u8; 16];
    crate::hex::put(digest(policy_path, argv0), &mut want);
    policy_path.first() == Some(&b'/') && hex == want
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A policy compiled by the std crate (a dev-dependency), as bytes this
    /// crate's reader opens.
    fn compiled(text: &str) -> Vec<u8> {
        envpolicy::load::compile_text(text, std::path::Path::new("/p/policy.toml"))
            .expect("test policy compiles")
            .bytes()
            .to_vec()
    }

    const SCRUBS_TMUX: &str = "version = 1\n[program.tmux]\nself_scrub = true\n";

    #[test]
    fn a_hint_matches_only_its_own_policy_and_program() {
        let bytes = compiled(SCRUBS_TMUX);
        let p = crate::Policy::from_bytes(&bytes).expect("valid");
        let e = entry(&p, b"/p/policy.toml", b"cat", || true).expect("a hint");
        let (name, value) = e.split_at(NAME.len() + 1);
        assert_eq!(name, b"ENVSHIM_HINT=");
        assert!(matches(value, b"/p/policy.toml", b"cat"));
        assert!(!matches(value, b"/p/other.toml", b"cat"));
        assert!(!matches(value, b"/p/policy.toml", b"/bin/cat"));
        assert!(!matches(b"", b"/p/policy.toml", b"cat"));
        assert!(!matches(&value[..value.len() - 1], b"/p/policy.toml", b"cat"));
        assert!(!matches(b"2-0000000000000000", b"/p/policy.toml", b"cat"));
    }

    #[test]
    fn no_hint_when_the_program_needs_the_policy_at_load_or_it_is_stale() {
        let bytes = compiled(SCRUBS_TMUX);
        let p = crate::Policy::from_bytes(&bytes).expect("valid");
        assert!(entry(&p, b"/p/policy.toml", b"tmux", || true).is_none());
        assert!(entry(&p, b"/p/policy.toml", b"/usr/bin/tmux", || true).is_none());
        assert!(entry(&p, b"/p/policy.toml", b"cat", || false).is_none());
        assert!(entry(&p, b"p/policy.toml", b"cat", || true).is_none());
        let logs = compiled("version = 1\nlog = \"/tmp/x.log\"\n");
        let p = crate::Policy::from_bytes(&logs).expect("valid");
        assert!(entry(&p, b"/p/policy.toml", b"cat", || true).is_none());
    }
}
