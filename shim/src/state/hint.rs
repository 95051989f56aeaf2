//! The start-up hint, as the shim gives and takes it (the rule is
//! [`envpolicy_core::hint`]; the design is docs/adr/0015-start-up-hint.md).
//!
//! - **Giving** ([`for_child`]): at each exec under a policy file, the parent asks
//!   the core for the child's `ENVSHIM_HINT` entry, and backs its word that the
//!   policy it enforces is the file as it is now with the `stat` that
//!   [`crate::state::policy::follow_edit`] made of that file for this exec.
//! - **Taking** ([`taken`]): the constructor of a process whose environment holds a
//!   hint that matches its policy path and `argv[0]` leaves the policy alone; the
//!   policy is mapped and checked in full at the first exec, `fork` or
//!   `posix_spawn` ([`crate::state::policy`]). A process that takes a hint makes no system
//!   call for the policy before `main`.

use envpolicy_core::hint;

use crate::platform::sys;
use crate::state::in_force::Active;
use crate::state::sticky::{self, Captured};

/// The `ENVSHIM_POLICY` entry's value, NUL-terminated, as the constructor captured
/// it (`ENVSHIM_POLICY=<path>` with its NUL).
pub fn captured_policy_c() -> Option<&'static [u8]> {
    match sticky::policy() {
        Captured::Present(c) => c
            .to_bytes_with_nul()
            .strip_prefix(envpolicy_core::shared::POLICY_ENTRY),
        _ => None,
    }
}

/// Does this process's environment hold a hint for it: `ENVSHIM_HINT` matching
/// the `ENVSHIM_POLICY` the constructor captured and `prog` (`argv[0]`)?
/// Constructor only, after `sticky::capture`.
#[inline(always)] // As `real::resolve_all`.
pub fn taken(prog: &[u8]) -> bool {
    // SAFETY: `environ` is the process's NULL-terminated environment, read in the
    // constructor before any other thread can change it.
    let Some(value) = (unsafe { sys::env_get(sys::environ_ptr(), hint::NAME) }) else {
        return false;
    };
    let Some(path_c) = captured_policy_c() else {
        return false;
    };
    let path = path_c.strip_suffix(b"\0").unwrap_or(path_c);
    // SAFETY: `env_get` returns a pointer into a NUL-terminated entry.
    let value = unsafe { sys::cstr_bytes(value) };
    hint::matches(value, path, prog)
}

/// The `ENVSHIM_HINT=...` entry for a child started with `argv0` under `active`,
/// whose `ENVSHIM_POLICY` entry is `policy_entry`; `None` when the child must load
/// the policy at its start (the core's rule), or `active` is not the policy file
/// as it is now (`fresh`, from [`crate::state::policy::follow_edit`]: the floor, the
/// built-in default, or a file that changed and could not be loaded again).
pub fn for_child(
    active: &Active,
    fresh: bool,
    policy_entry: &[u8],
    argv0: &[u8],
) -> Option<[u8; hint::ENTRY_LEN]> {
    let path = policy_entry.strip_prefix(envpolicy_core::shared::POLICY_ENTRY)?;
    hint::entry(&active.policy, path, argv0, || fresh && !active.is_floor())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATH: &[u8] = b"/etc/envshim/unit-test.toml";

    /// `text` compiled, as the policy in force, for the life of the test process.
    fn active(text: &str) -> Active {
        let path = std::path::Path::new("/etc/envshim/unit-test.toml");
        let compiled = Box::leak(Box::new(envpolicy::load::compile_text(text, path).unwrap()));
        Active {
            policy: compiled.policy(),
            source: PATH,
            warning: None,
            retry: None,
        }
    }

    fn entry(active: &Active, fresh: bool, argv0: &[u8]) -> Option<Vec<u8>> {
        let mut policy_entry = b"ENVSHIM_POLICY=".to_vec();
        policy_entry.extend_from_slice(PATH);
        for_child(active, fresh, &policy_entry, argv0).map(|e| e.to_vec())
    }

    /// A parent gives its child the hint only when it speaks for the policy
    /// file as it is now and the child needs nothing of it at load; the hint
    /// matches that policy path and that program alone.
    #[test]
    fn a_child_gets_a_hint_only_for_the_policy_file_as_it_is_now() {
        let plain = active("version = 1\n");
        let given = entry(&plain, true, b"make").expect("a hint for a fresh policy");
        let value = given
            .strip_prefix(b"ENVSHIM_HINT=")
            .expect("the hint's entry");
        assert!(hint::matches(value, PATH, b"make"));
        assert!(
            !hint::matches(value, PATH, b"cc"),
            "a hint for another program"
        );
        assert!(!hint::matches(value, b"/etc/envshim/other.toml", b"make"));

        // An edit the parent did not load: it cannot speak for the file.
        assert_eq!(entry(&plain, false, b"make"), None);
        // A program the policy self-scrubs needs the policy at load.
        let scrubbing = active("version = 1\nself_scrub = true\n");
        assert_eq!(entry(&scrubbing, true, b"make"), None);
        // The floor stands in for a file that failed: no word for that file.
        let floor = Active {
            policy: crate::state::in_force::floor().unwrap(),
            ..plain
        };
        assert_eq!(entry(&floor, true, b"make"), None);
        // A relative ENVSHIM_POLICY names no file a child could check.
        assert_eq!(
            for_child(&plain, true, b"ENVSHIM_POLICY=p.toml", b"make"),
            None
        );
    }
}
