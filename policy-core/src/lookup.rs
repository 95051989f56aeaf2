//! The steps of the policy lookup, as messages name them. The lookup itself is
//! done twice by design (the shim's without allocation in its constructor, in
//! `shim/src/load.rs`; envwrap's in `envpolicy::load::locate`), and both front
//! ends say which step found the policy in the same words, from here.

/// Which step of the lookup found the policy in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// `--policy FILE`, or `check FILE` (envwrap only).
    Explicit,
    /// `ENVSHIM_POLICY`.
    EnvVar,
    /// `$XDG_CONFIG_HOME/envshim/policy.toml`, else `~/.config/envshim/policy.toml`.
    User,
    /// `/etc/envshim/policy.toml`.
    System,
    /// None of those: the built-in default.
    Builtin,
}

/// The system-wide policy file.
pub const SYSTEM_POLICY: &[u8] = b"/etc/envshim/policy.toml";

/// Where the user's policy file is, as a directory and the path to join under
/// it: `$XDG_CONFIG_HOME` and `envshim/policy.toml`, else `$HOME` and
/// `.config/envshim/policy.toml`. A variable that is empty or not an absolute
/// path counts as unset, as the XDG specification says of relative paths: a
/// relative one would find the policy relative to the working directory, so a
/// `cd` into a directory holding `.config/envshim/policy.toml` (a cloned
/// repository) would choose the policy. `None` when both are unset.
pub fn user_policy<'a>(
    xdg_config_home: Option<&'a [u8]>,
    home: Option<&'a [u8]>,
) -> Option<(&'a [u8], &'static [u8])> {
    let absolute = |p: &&[u8]| p.first() == Some(&b'/');
    match (xdg_config_home.filter(absolute), home.filter(absolute)) {
        (Some(x), _) => Some((x, b"envshim/policy.toml")),
        (None, Some(h)) => Some((h, b".config/envshim/policy.toml")),
        (None, None) => None,
    }
}

/// Linux's `ENOENT` and `ENOTDIR` (this crate has no libc).
const ENOENT: i32 = 2;
const ENOTDIR: i32 = 20;

/// Whether the lookup stops at a path where it looks for a policy file, given
/// how `lstat` of it ended (its errno on failure).
///
/// Only a path where nothing is (`ENOENT`, or `ENOTDIR`: a directory on the way
/// is a file) lets the lookup go on to its next, laxer step. A name that is
/// there but cannot be used (a dangling or looping symlink, a file in a
/// directory the user may not search, anything not a regular file) is the
/// policy someone put there: the lookup stops at it, and loading it fails with
/// a warning and the fail-closed floor.
pub fn stops_lookup(lstat: Result<(), i32>) -> bool {
    !matches!(lstat, Err(ENOENT | ENOTDIR))
}

impl Step {
    /// The step, in the words a message uses after "found: ".
    pub fn describe(self) -> &'static str {
        match self {
            Step::Explicit => "named on the command line",
            Step::EnvVar => "ENVSHIM_POLICY",
            Step::User => {
                "the user's configuration ($XDG_CONFIG_HOME/envshim/policy.toml, else \
                 ~/.config/envshim/policy.toml), with no ENVSHIM_POLICY"
            }
            Step::System => "/etc/envshim/policy.toml, with no ENVSHIM_POLICY and no user policy",
            Step::Builtin => {
                "nothing: no ENVSHIM_POLICY, no $XDG_CONFIG_HOME/envshim/policy.toml (or \
                 ~/.config/envshim/policy.toml), no /etc/envshim/policy.toml"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_absolute_variable_names_the_users_policy() {
        let x: &[u8] = b"/x";
        let h: &[u8] = b"/h";
        assert_eq!(user_policy(Some(x), Some(h)), Some((x, &b"envshim/policy.toml"[..])));
        assert_eq!(
            user_policy(None, Some(h)),
            Some((h, &b".config/envshim/policy.toml"[..]))
        );
        // Empty or relative: as if unset.
        assert_eq!(
            user_policy(Some(b""), Some(h)),
            Some((h, &b".config/envshim/policy.toml"[..]))
        );
        assert_eq!(
            user_policy(Some(b".config"), Some(h)),
            Some((h, &b".config/envshim/policy.toml"[..]))
        );
        assert_eq!(user_policy(Some(b"rel"), Some(b".")), None);
        assert_eq!(user_policy(None, Some(b"")), None);
    }

    #[test]
    fn only_nothing_there_goes_on_to_the_next_step() {
        assert!(stops_lookup(Ok(())));
        assert!(!stops_lookup(Err(ENOENT)));
        assert!(!stops_lookup(Err(ENOTDIR)));
        // EACCES, ELOOP: something is there that cannot be used.
        assert!(stops_lookup(Err(13)));
        assert!(stops_lookup(Err(40)));
    }
}
