//! The steps of the policy lookup, as messages name them. The lookup itself is
//! done twice by design (the shim's without allocation in its constructor, in
//! `shim/src/state/load.rs`; envwrap's in `envpolicy::load::locate`), and both front
//! ends say which step found the policy in the same words, from here.

/// Which step of the lookup found the policy in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// `--policy FILE`, or `check FILE` (envwrap only).
    Explicit,
    /// `ENVSHIM_POLICY`.
    EnvVar,
    /// `ENVSHIM_POLICY` set to [`BUILTIN_POLICY`]: the built-in default, named
    /// (rule 8 gives it to every process of a tree started under the built-in
    /// default).
    EnvBuiltin,
    /// `$XDG_CONFIG_HOME/envshim/policy.toml`, else `~/.config/envshim/policy.toml`.
    User,
    /// `/etc/envshim/policy.toml`.
    System,
    /// None of those: the built-in default.
    Builtin,
}

/// The system-wide policy file.
pub const SYSTEM_POLICY: &[u8] = crate::shared::SYSTEM_POLICY;

/// `ENVSHIM_POLICY` set to [`BUILTIN_POLICY`], NUL-terminated: the entry the
/// shim's rule 8 puts in every child of a tree whose policy is the built-in
/// default, so that no descendant can pick a policy file for its subtree (by
/// `ENVSHIM_POLICY`, or by `XDG_CONFIG_HOME` or `HOME` for the lookup). The
/// shim points a child's envp at it as it is: it is written here once.
pub const BUILTIN_POLICY_ENTRY: &[u8] = crate::shared::BUILTIN_POLICY_ENTRY;

/// The value of `ENVSHIM_POLICY` that names the built-in default rather than a
/// file ([`names_builtin`]). It does not start with `/`, so it is never a path
/// the shim or envwrap writes (theirs are absolute); a file of that name in the
/// working directory is still reached as `./:builtin`.
pub const BUILTIN_POLICY: &[u8] = match BUILTIN_POLICY_ENTRY.split_at_checked(NAME_LEN + 1) {
    Some((_, value)) => match value.split_last() {
        Some((_, value)) => value,
        None => b"",
    },
    None => b"",
};

/// `ENVSHIM_POLICY`'s length.
const NAME_LEN: usize = crate::builtin::POLICY_VAR.len();

// The value is not empty and is no absolute path; that the entry is
// `ENVSHIM_POLICY=` + the value + NUL is a test below.
const _: () = assert!(
    matches!(BUILTIN_POLICY.first(), Some(b) if *b != b'/')
        && BUILTIN_POLICY_ENTRY.len() == NAME_LEN + 1 + BUILTIN_POLICY.len() + 1
);

/// Whether `value`, a value of `ENVSHIM_POLICY` (without a NUL), names the
/// built-in default ([`BUILTIN_POLICY`]) rather than a policy file. Every front
/// end asks this before it reads the value as a path: the shim's constructor,
/// envwrap and `envpolicy::load::locate` then load the built-in default, with
/// no lookup.
pub fn names_builtin(value: &[u8]) -> bool {
    value == BUILTIN_POLICY
}

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

/// What `lstat` (or, following a symlink, `stat`) found at a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Directory,
    Symlink,
    /// A regular file, or anything else that is not a directory.
    Other,
}

/// Whether the lookup stops at the policy file `path`, given how `lstat` of it
/// ended (`at_file`), and, when nothing is there, at the names on the way to
/// it: `probe(prefix, follow)` is `lstat` (or, with `follow`, `stat`) of
/// `path[..prefix]`. `dir` is the directory the lookup starts from, as given
/// (`$XDG_CONFIG_HOME`, `$HOME`, `/etc`); nothing above it is looked at.
///
/// Only a path where nothing is lets the lookup go on to its next, laxer step:
/// the first name on the way that is there is a directory (or a symlink to
/// one), and the rest is absent; or the starting directory itself is absent
/// (`HOME=/nonexistent`). A name that is there but cannot be used is the policy
/// someone put there: the lookup stops at it, and loading it fails with a
/// warning and the fail-closed floor. That is a dangling or looping symlink, a
/// file in a directory the user may not search, anything not a regular file at
/// the file's name, and, on the way, a dangling symlink or a file where a
/// directory should be (`~/.config/envshim` linked into dotfiles that are not
/// mounted).
pub fn stops_lookup(
    path: &[u8],
    dir: &[u8],
    at_file: Result<Kind, i32>,
    mut probe: impl FnMut(usize, bool) -> Result<Kind, i32>,
) -> bool {
    if !matches!(at_file, Err(ENOENT | ENOTDIR)) {
        return true;
    }
    let dir_len = dir.len() - dir.iter().rev().take_while(|&&b| b == b'/').count();
    // Nothing at the file: up to the first name on the way that is there.
    let mut end = path.len();
    while let Some(slash) = path.get(..end).and_then(|p| p.iter().rposition(|&b| b == b'/')) {
        if slash < dir_len || slash == 0 {
            break;
        }
        end = slash;
        match probe(slash, false) {
            Err(ENOENT | ENOTDIR) => {}
            Ok(Kind::Directory) => return false,
            Ok(Kind::Symlink) => return probe(slash, true) != Ok(Kind::Directory),
            Ok(Kind::Other) | Err(_) => return true,
        }
    }
    false
}

impl Step {
    /// The step, in the words a message uses after "found: ".
    pub fn describe(self) -> &'static str {
        match self {
            Step::Explicit => "named on the command line",
            Step::EnvVar => crate::shared::POLICY,
            Step::EnvBuiltin => {
                "ENVSHIM_POLICY=:builtin, which names the built-in default (the policy of \
                 a tree started with no policy file)"
            }
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
    fn the_reserved_value_names_the_built_in_default_and_nothing_else() {
        assert_eq!(BUILTIN_POLICY, b":builtin");
        assert_eq!(BUILTIN_POLICY_ENTRY, b"ENVSHIM_POLICY=:builtin\0");
        let mut entry = crate::builtin::POLICY_VAR.to_vec();
        entry.push(b'=');
        entry.extend_from_slice(BUILTIN_POLICY);
        entry.push(0);
        assert_eq!(entry, BUILTIN_POLICY_ENTRY);
        assert!(names_builtin(b":builtin"));
        for other in [&b""[..], b"./:builtin", b"/:builtin", b":builtin\0", b":BUILTIN", b"builtin"] {
            assert!(!names_builtin(other), "{other:?}");
        }
        assert!(Step::EnvBuiltin.describe().contains(":builtin"));
    }

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

    /// A file system of a few names, for [`stops_lookup`]'s probe: each name
    /// with what `lstat` finds there and, for a symlink, what `stat` does.
    fn probe_in<'a>(
        path: &'a [u8],
        names: &'a Names<'a>,
    ) -> impl FnMut(usize, bool) -> Result<Kind, i32> + 'a {
        move |prefix, follow| {
            let name = core::str::from_utf8(&path[..prefix]).unwrap();
            match names.iter().find(|(n, _, _)| *n == name) {
                Some((_, lstat, stat)) => match follow {
                    false => *lstat,
                    true => *stat,
                },
                None => Err(ENOENT),
            }
        }
    }

    const PATH: &[u8] = b"/h/.config/envshim/policy.toml";

    /// Names, each with what `lstat` and `stat` find there.
    type Names<'a> = [(&'a str, Result<Kind, i32>, Result<Kind, i32>)];

    #[test]
    fn only_nothing_there_goes_on_to_the_next_step() {
        let path = PATH;
        let dir = Ok(Kind::Directory);
        let link = Ok(Kind::Symlink);
        let file = Ok(Kind::Other);
        fn at(at_file: Result<Kind, i32>, names: &Names<'_>) -> bool {
            stops_lookup(PATH, b"/h", at_file, probe_in(PATH, names))
        }
        // At the file: something there stops the lookup, usable or not.
        assert!(at(Ok(Kind::Other), &[]));
        assert!(at(link, &[]));
        assert!(at(Err(13), &[])); // EACCES
        assert!(at(Err(40), &[])); // ELOOP
        // Nothing at the file: the first name on the way that is there decides.
        let home = ("/h", dir, dir);
        let config = ("/h/.config", dir, dir);
        assert!(!at(Err(ENOENT), &[home, config]));
        assert!(!at(Err(ENOENT), &[home]));
        assert!(!at(Err(ENOENT), &[])); // HOME=/nonexistent
        assert!(!at(Err(ENOENT), &[home, config, ("/h/.config/envshim", dir, dir)]));
        let linked_dir = ("/h/.config/envshim", link, dir);
        assert!(!at(Err(ENOENT), &[home, config, linked_dir]));
        let dangling = ("/h/.config/envshim", link, Err(ENOENT));
        assert!(at(Err(ENOENT), &[home, config, dangling]));
        let to_a_file = ("/h/.config/envshim", link, file);
        assert!(at(Err(ENOTDIR), &[home, config, to_a_file]));
        let a_file = ("/h/.config/envshim", file, file);
        assert!(at(Err(ENOTDIR), &[home, config, a_file]));
        let dangling_config = ("/h/.config", link, Err(ENOENT));
        assert!(at(Err(ENOENT), &[home, dangling_config]));
        assert!(at(Err(ENOENT), &[("/h", link, Err(ENOENT))]));
        let unsearchable = ("/h/.config", Err(13), Err(13));
        assert!(at(Err(ENOENT), &[home, unsearchable]));
        // Above the starting directory, nothing is looked at.
        let dangling_home = ("/h", link, Err(ENOENT));
        assert!(!stops_lookup(path, b"/h/.config/", Err(ENOENT), probe_in(path, &[dangling_home])));
        assert!(stops_lookup(path, b"/h/.config", Err(ENOENT), probe_in(path, &[dangling_config])));
    }
}
