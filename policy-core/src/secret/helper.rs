//! `command:` sources: a secret's value as the standard output of a helper
//! command (`pass show github/token`, `op read op://dev/gh/token`,
//! `secret-tool lookup service gh`), for users whose tokens live in a password
//! manager or the desktop keyring rather than in a file.
//!
//! The helper runs where every source is read: in the process that becomes
//! the program, at its exec, so the value passes through no process above the
//! program. What each front end must do alike is here: which helper may run
//! ([`trusted`]), with which environment ([`PASSED`], [`PATH_ENTRY`]), for how
//! long ([`LIMIT_MS`]), and how its words are kept ([`words`]). The value is
//! what it prints on standard output, cleaned as every source's is
//! ([`super::clean_value`]); its standard input and error are `/dev/null`, so
//! nothing it says reaches a terminal, a log or a person.

use super::{plain_path, FileMode, Undelivered};

/// How long a helper may run, in milliseconds, before it is killed and the
/// program runs without the value: long enough for `gpg` to start its agent
/// and for a password manager to answer, short enough that a hung helper does
/// not hold the exec for long. A helper that needs a person (a passphrase
/// prompt) must have its answer cached beforehand.
pub const LIMIT_MS: i64 = 10_000;

/// Words a `command:` source may have, the helper's path included.
pub const MAX_WORDS: usize = 16;

/// The helper's `PATH`, whatever the caller's: a helper that is a script
/// (`pass` is one) finds `gpg` and the tools it runs where the system keeps
/// them, never in a directory the caller chose.
pub const PATH_ENTRY: &[u8] = b"PATH=/usr/local/bin:/usr/bin:/bin\0";

/// The variables a helper gets from the environment of the exec that reads it,
/// each for the reason given; nothing else (not the program's credentials, not
/// a loader or interpreter hook).
pub const PASSED: &[(&str, &str)] = &[
    ("HOME", "where the user's stores are: ~/.password-store, ~/.gnupg, ~/.config/op"),
    ("USER", "who the user is, for helpers that name their store by it"),
    ("LOGNAME", "the same, as POSIX names it"),
    ("LANG", "the language of a helper's messages (never shown)"),
    ("LC_ALL", "the same"),
    ("LC_CTYPE", "the encoding of a helper's input and output"),
    ("XDG_RUNTIME_DIR", "where gpg-agent's and the keyring's sockets are"),
    ("DBUS_SESSION_BUS_ADDRESS", "the Secret Service (secret-tool, gh's keyring) is on the session bus"),
    ("GNUPGHOME", "gpg's home, when not ~/.gnupg"),
    ("GPG_TTY", "the terminal gpg-agent asks a passphrase on"),
    ("PASSWORD_STORE_DIR", "pass's store, when not ~/.password-store"),
    ("OP_ACCOUNT", "1Password's account, when the CLI has several"),
    ("VAULT_ADDR", "Vault's address"),
];

/// The names of [`PASSED`], each NUL-terminated, in one string: what the shim
/// walks (a table of string pointers would be data the loader relocates in
/// every process, docs/adr/0008). A test holds it to [`PASSED`].
pub const PASSED_NAMES: &[u8] = b"HOME\0USER\0LOGNAME\0LANG\0LC_ALL\0LC_CTYPE\0XDG_RUNTIME_DIR\0\
DBUS_SESSION_BUS_ADDRESS\0GNUPGHOME\0GPG_TTY\0PASSWORD_STORE_DIR\0OP_ACCOUNT\0VAULT_ADDR\0";

/// The names a helper gets, from [`PASSED_NAMES`].
pub fn passed_names() -> impl Iterator<Item = &'static [u8]> {
    words(PASSED_NAMES)
}

/// Does the helper get the entry named `name` from the exec's environment?
pub fn passed(name: &[u8]) -> bool {
    passed_names().any(|n| n == name)
}

/// The words of a compiled `command:` source: each NUL-terminated in `source`
/// (the compile writes them so, so that a front end can point an argv at
/// them), returned without their NUL. The first is the helper's path.
pub fn words(source: &[u8]) -> impl Iterator<Item = &[u8]> + '_ {
    source
        .split(|&b| b == 0)
        .take(source.iter().filter(|&&b| b == 0).count())
}

/// May the helper at `path`, whose `stat` (links followed) is `file`, run for
/// a process of user `uid`? Named by a plain absolute path ([`plain_path`]);
/// a regular file owned by root or by `uid` that neither its group nor others
/// may write: the rule a policy file is held to, since whoever can write the
/// helper chooses the value a program gets.
pub fn trusted(path: &[u8], file: FileMode, uid: u32) -> Result<(), Undelivered> {
    const S_IFMT: u32 = 0o170_000;
    const S_IFREG: u32 = 0o100_000;
    if !plain_path(path) {
        return Err(Undelivered::HelperUntrusted);
    }
    if file.mode & S_IFMT != S_IFREG || (file.owner != 0 && file.owner != uid) || file.mode & 0o022 != 0 {
        return Err(Undelivered::HelperUntrusted);
    }
    Ok(())
}

/// What a helper's end says of its value, given its raw wait status (as
/// `wait4` stores it): `Ok` only for exit status 0.
pub fn ended(status: i32) -> Result<(), Undelivered> {
    if status == 0 {
        Ok(())
    } else {
        Err(Undelivered::HelperFailed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_each_nul_terminated() {
        let w: Vec<&[u8]> = words(b"/usr/bin/pass\0show\0gh token\0").collect();
        assert_eq!(w, [&b"/usr/bin/pass"[..], b"show", b"gh token"]);
        assert_eq!(words(b"").count(), 0);
    }

    #[test]
    fn a_helper_is_trusted_as_a_policy_file_is() {
        let file = |owner, mode: u32| FileMode {
            owner,
            mode: 0o100_000 | mode,
        };
        assert_eq!(trusted(b"/usr/bin/pass", file(0, 0o755), 1000), Ok(()));
        assert_eq!(trusted(b"/home/u/bin/tok", file(1000, 0o700), 1000), Ok(()));
        for (path, f) in [
            (&b"bin/tok"[..], file(1000, 0o700)),
            (b"/home/u/../u/bin/tok", file(1000, 0o700)),
            (b"/tmp/tok", file(1001, 0o755)),
            (b"/tmp/tok", file(1000, 0o775)),
            (b"/tmp/tok", file(0, 0o757)),
            (b"/tmp/dir", FileMode { owner: 0, mode: 0o040_755 }),
        ] {
            assert_eq!(trusted(path, f, 1000), Err(Undelivered::HelperUntrusted));
        }
    }

    #[test]
    fn the_names_string_is_the_table() {
        let names: Vec<&[u8]> = passed_names().collect();
        let table: Vec<&[u8]> = PASSED.iter().map(|(n, _)| n.as_bytes()).collect();
        assert_eq!(names, table);
    }

    #[test]
    fn only_the_named_variables_pass() {
        assert!(passed(b"HOME") && passed(b"DBUS_SESSION_BUS_ADDRESS"));
        assert!(!passed(b"GH_TOKEN") && !passed(b"LD_PRELOAD") && !passed(b"PATH"));
    }
}
