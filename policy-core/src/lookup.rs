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
