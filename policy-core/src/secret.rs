//! Secrets delivered at exec: the rules of `[[secret]]`, in one place for every
//! front end (docs/adr/0019-secrets-delivered-at-exec.md).
//!
//! Why the rules live here and the reading does not: a secret's value must be
//! read only by the process that becomes the program (the shim in a `fork`
//! child at `execve`, envwrap in the process it execs in place, a library's
//! `pre_exec`), so each front end reads it with its own calls. What a front end
//! must not decide for itself is everything around the read: which secrets a
//! program gets ([`wanted`]), whether a source file may be trusted
//! ([`file_trusted`]), what of its bytes the value is ([`clean_value`]), which
//! arguments refuse the exec ([`denied_args`]), and what a message says when
//! a secret is not delivered ([`Undelivered`]). The decision itself (rule 6b,
//! [`crate::decide`]) then takes the values a front end read as plain bytes.
//!
//! A secret's name is a credential pattern in the compiled policy, and each
//! secret is a grant of its name to its programs, so rule 4 refuses an inherited
//! copy of it at every other program with no code of its own here.

pub mod helper;

use crate::bytes::basename;
pub use crate::compiled::{SourceKind, MAX_SECRETS};
use crate::compiled::{sec, Policy, SecretRec};
use crate::glob;

/// The longest value a source may hold, in bytes (a trailing newline aside).
/// Tokens are well under 1 KiB; a PEM key fits. A front end reads at most
/// `MAX_VALUE + 2` bytes and reports [`Undelivered::TooLarge`] past it.
pub const MAX_VALUE: usize = 4096;

/// Why a secret a program matches was not delivered. Each says what to fix,
/// and none holds a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Undelivered {
    /// The source does not exist (no file, no key, no credential).
    Missing,
    /// The source exists but could not be read (permissions, an I/O error).
    Unreadable,
    /// The file is not a regular file.
    NotRegular,
    /// The file is owned by another user, or others may read or write it.
    Untrusted,
    /// The value is longer than [`MAX_VALUE`].
    TooLarge,
    /// The value is empty.
    Empty,
    /// The value holds a NUL byte, which no environment entry can.
    HasNul,
    /// `credential:` outside a unit that loads credentials.
    NoCredentialsDirectory,
    /// The exec runs where the value would be read into the memory of the
    /// process above the program (a `vfork` child, `posix_spawn`, `system`,
    /// `popen`), and nothing could read it in the program's own process.
    SharedMemory,
    /// The front end cannot run code in the child before its exec (the
    /// supervisor, portable-pty).
    NoReader,
    /// The path given to exec is not plain: relative, or holding a `.` or `..`
    /// component or an empty one, so it may name another file than it reads.
    ProgramPath,
    /// The program is not a regular file owned by root that only root can
    /// write (or the path's last component is a symbolic link): a process of
    /// the user could replace it, and it would get the secret.
    ProgramReplaceable,
    /// The path given to exec is a symbolic link: each link of a chain would
    /// have to be proven root's, so none is followed.
    ProgramLink,
    /// The secret's program does not exist (said by `envwrap check` and
    /// `secret list`: a program of that name elsewhere runs without it).
    ProgramMissing,
    /// The exec runs in a user namespace other than the host's (`unshare -U`),
    /// where a file of the user's can appear root's and be mounted over the
    /// program's path ([`user_namespace_trusted`]).
    UserNamespace,
    /// A `command:` source's helper is not a file that only root or the user
    /// can write, named by a plain absolute path ([`helper::trusted`]).
    HelperUntrusted,
    /// A `command:` source's helper exited with a status other than 0, or was
    /// killed.
    HelperFailed,
    /// A `command:` source's helper ran past [`helper::LIMIT_MS`], or a signal
    /// for the program arrived while it ran; it was killed.
    HelperTimedOut,
}

impl Undelivered {
    /// The reason, as a message says it after "not delivered: ".
    pub fn text(self) -> &'static str {
        match self {
            Undelivered::Missing => "its source does not exist",
            Undelivered::Unreadable => "its source could not be read",
            Undelivered::NotRegular => "its source is not a regular file",
            Undelivered::Untrusted => {
                "its source file is owned by another user or readable by others (chmod 600 it)"
            }
            Undelivered::TooLarge => "its value is longer than 4096 bytes",
            Undelivered::Empty => "its source is empty",
            Undelivered::HasNul => "its value holds a NUL byte",
            Undelivered::NoCredentialsDirectory => {
                "CREDENTIALS_DIRECTORY is not set (not under a systemd unit that loads it)"
            }
            Undelivered::SharedMemory => {
                "the program was started by a call that shares memory with its parent (vfork, posix_spawn), and envwrap was not found to read it in the program's own process"
            }
            Undelivered::NoReader => "this front end cannot read a value in the child before its exec",
            Undelivered::ProgramPath => {
                "the program was not named by a plain absolute path (no `.`, `..` or empty component)"
            }
            Undelivered::ProgramReplaceable => {
                "the program is not a regular file that only root can write, so a process of yours could replace it"
            }
            Undelivered::ProgramLink => {
                "the program is named through a symbolic link: name the file itself in the policy and in the exec"
            }
            Undelivered::ProgramMissing => {
                "its program does not exist, so no program gets it (one of that name elsewhere runs without it)"
            }
            Undelivered::UserNamespace => {
                "the program runs in a user namespace of its own, where a file of yours can appear to be root's"
            }
            Undelivered::HelperUntrusted => {
                "its helper command is not a file that only root or you can write, named by its absolute path"
            }
            Undelivered::HelperFailed => "its helper command failed (see what it says when run by hand)",
            Undelivered::HelperTimedOut => {
                "its helper command did not finish within 10 seconds, or a signal came meanwhile"
            }
        }
    }

    /// A stable id, for JSON lines and tests.
    pub fn id(self) -> &'static str {
        match self {
            Undelivered::Missing => "missing",
            Undelivered::Unreadable => "unreadable",
            Undelivered::NotRegular => "not-regular",
            Undelivered::Untrusted => "untrusted",
            Undelivered::TooLarge => "too-large",
            Undelivered::Empty => "empty",
            Undelivered::HasNul => "has-nul",
            Undelivered::NoCredentialsDirectory => "no-credentials-directory",
            Undelivered::SharedMemory => "shared-memory",
            Undelivered::NoReader => "no-reader",
            Undelivered::ProgramPath => "program-path",
            Undelivered::ProgramReplaceable => "program-replaceable",
            Undelivered::ProgramLink => "program-link",
            Undelivered::ProgramMissing => "program-missing",
            Undelivered::UserNamespace => "user-namespace",
            Undelivered::HelperUntrusted => "helper-untrusted",
            Undelivered::HelperFailed => "helper-failed",
            Undelivered::HelperTimedOut => "helper-timed-out",
        }
    }
}

/// Does `program` (a path, or a bare name) match a grant or secret pattern? The
/// pattern is matched against the basename, or against the whole path when it
/// holds a `/`. The one rule for `[[grant]]` and `[[secret]]`.
pub fn program_matches(kind: glob::GlobKind, pattern: &[u8], program: &[u8]) -> bool {
    let target = if pattern.contains(&b'/') {
        program
    } else {
        basename(program)
    };
    glob::matches(kind, pattern, target, false)
}

/// The secrets `program` gets: bit `i` for secret `i`. A policy without secrets
/// pays one count; a program that matches none, one glob match per secret.
#[inline]
pub fn wanted(policy: &Policy<'_>, program: &[u8]) -> u16 {
    let n = policy.count(sec::SECRETS);
    if n == 0 {
        return 0;
    }
    let mut mask = 0u16;
    for i in 0..n.min(MAX_SECRETS) {
        if policy
            .secret(i as u32)
            .is_some_and(|s| program_matches(s.kind, policy.str(s.program), program))
        {
            mask |= 1 << i;
        }
    }
    mask
}

/// What `lstat` says of a program file: owner and mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMode {
    pub owner: u32,
    pub mode: u32,
}

/// May a secret be delivered to the program at `path` (the path given to
/// exec, as every front end has it), whose `lstat` is `file`? Only to a
/// program no process of the user can replace: a plain absolute path
/// ([`plain_path`]) naming a regular file, not a symbolic link, owned by root
/// and writable by neither its group nor others. A secret's `program` is a
/// path pattern (the compile says so), so a program an agent names `gh` in its
/// working directory is not matched; this rule keeps one it could write, or
/// reach through `..` or through a link (`/usr/local/bin/gh ->
/// ~/.local/bin/gh`, whose target the agent can point anywhere), from being
/// delivered to. A chain of links is not walked: one link of it the user owns
/// is enough to choose the program. Asked at delivering execs only, before any
/// source is read.
pub fn program_trusted(path: &[u8], file: FileMode) -> Result<(), Undelivered> {
    const S_IFMT: u32 = 0o170_000;
    const S_IFREG: u32 = 0o100_000;
    const S_IFLNK: u32 = 0o120_000;
    if !plain_path(path) {
        return Err(Undelivered::ProgramPath);
    }
    match file.mode & S_IFMT {
        S_IFLNK => Err(Undelivered::ProgramLink),
        S_IFREG if file.owner == 0 && file.mode & 0o022 == 0 => Ok(()),
        _ => Err(Undelivered::ProgramReplaceable),
    }
}

/// Is `path` absolute, with no `.`, `..` or empty component? Then it names the
/// file its bytes say, and a pattern matched against it means what it says.
pub fn plain_path(path: &[u8]) -> bool {
    match path.strip_prefix(b"/") {
        Some(rest) => rest
            .split(|&b| b == b'/')
            .all(|c| !c.is_empty() && c != b"." && c != b".."),
        None => false,
    }
}

/// The secret named `name`, if the policy has one.
pub fn by_name(policy: &Policy<'_>, name: &[u8]) -> Option<(u32, SecretRec)> {
    (0..policy.count(sec::SECRETS) as u32)
        .filter_map(|i| policy.secret(i).map(|s| (i, s)))
        .find(|(_, s)| policy.str(s.name) == name)
}

/// May a source file with this owner and mode be read for a process of user
/// `uid`? A regular file, owned by root or by `uid`, that neither its group
/// nor others may read or write (`mode & 0o077 == 0`): the rule `ssh` applies
/// to a private key. systemd gives a loaded credential mode 0400 and the
/// service's user, so one rule covers both sources.
pub fn file_trusted(owner: u32, mode: u32, uid: u32) -> Result<(), Undelivered> {
    const S_IFMT: u32 = 0o170_000;
    const S_IFREG: u32 = 0o100_000;
    if mode & S_IFMT != S_IFREG {
        return Err(Undelivered::NotRegular);
    }
    if (owner != 0 && owner != uid) || mode & 0o077 != 0 {
        return Err(Undelivered::Untrusted);
    }
    Ok(())
}

/// The value held in a source's bytes `raw` (as read, at most `MAX_VALUE + 2`
/// of them): one trailing newline (`\n` or `\r\n`) dropped, as `echo` and
/// editors leave one; nothing else changed. Empty, NUL-holding and too-long
/// values are refused.
pub fn clean_value(raw: &[u8]) -> Result<&[u8], Undelivered> {
    let value = match raw {
        [rest @ .., b'\r', b'\n'] => rest,
        [rest @ .., b'\n'] => rest,
        _ => raw,
    };
    if value.len() > MAX_VALUE {
        return Err(Undelivered::TooLarge);
    }
    if value.is_empty() {
        return Err(Undelivered::Empty);
    }
    if value.contains(&0) {
        return Err(Undelivered::HasNul);
    }
    Ok(value)
}

/// The inode of the host's user namespace (`/proc/self/ns/user` in the initial
/// namespace: the kernel's `PROC_USER_INIT_INO`, fixed).
pub const INITIAL_USER_NAMESPACE: u64 = 0xEFFF_FFFD;

/// May a secret be delivered in the user namespace whose `/proc/self/ns/user`
/// has inode `ino` (`None`: it could not be read)? Only in the host's: inside
/// another (`unshare -Urm`), the user is root, a file of the user's appears
/// root's, and a mount of the user's can put one over the program's path, so
/// [`program_trusted`] proves nothing there. A `/proc` that is not there fails
/// closed.
pub fn user_namespace_trusted(ino: Option<u64>) -> Result<(), Undelivered> {
    match ino {
        Some(INITIAL_USER_NAMESPACE) => Ok(()),
        _ => Err(Undelivered::UserNamespace),
    }
}

/// Why nothing keeps a delivered secret from its program's children: no shim
/// loads into the program to police the execs it makes, and no supervisor
/// judges them. The secret still reaches its program (it asked for it); the
/// front end says so once, with [`crate::refusal::unguarded_line`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unguarded {
    /// No shim is preloaded into the program (`envwrap --no-preload`, or no
    /// libenvshim.so beside envwrap).
    NoShim,
    /// The program is statically linked: no loader reads `LD_PRELOAD`.
    Static,
    /// A Go program: its runtime makes the exec system call itself.
    Go,
}

impl Unguarded {
    /// What the line says after "delivered to PROGRAM; ".
    pub fn text(self) -> &'static [u8] {
        match self {
            Unguarded::NoShim => b"no shim loads into it and nothing supervises it",
            Unguarded::Static => {
                b"it is statically linked, so no shim loads into it, and nothing supervises it"
            }
            Unguarded::Go => {
                b"it is a Go program, whose execs no shim sees, and nothing supervises it"
            }
        }
    }
}

/// The `deny_args` lists of a secret, one at a time.
pub fn deny_lists<'p>(policy: &Policy<'p>, s: &SecretRec) -> DenyLists<'p> {
    DenyLists {
        rest: policy.str(s.deny),
    }
}

/// The words of one `deny_args` list.
#[derive(Clone, Copy, Debug)]
pub struct Words<'p>(&'p [u8]);

impl<'p> Words<'p> {
    pub fn iter(self) -> impl Iterator<Item = &'p [u8]> {
        self.0.split(|&b| b == 0).filter(|w| !w.is_empty())
    }

    /// Where `args` hold these words in order, with any arguments between
    /// them: the index of the argument that completes them. `gh auth --hostname
    /// h token` holds `auth token`; so does `gh issue create --title auth --body
    /// token`, which is refused too, naming the rule (a refusal that says why is
    /// better than a token on a screen).
    ///
    /// An option word is matched as programs parse options: `--show-token`
    /// also in `--show-token=true`, and `-t` also inside a cluster of short
    /// options (`-tv`, `-vt`) ([`option_holds`]).
    pub fn found_in(self, args: &[&[u8]]) -> Option<usize> {
        let mut words = self.iter().peekable();
        words.peek()?;
        for (i, arg) in args.iter().enumerate() {
            if words.peek().is_some_and(|w| option_holds(arg, w)) {
                words.next();
                if words.peek().is_none() {
                    return Some(i);
                }
            }
        }
        None
    }
}

/// Does argument `arg` give `word`, as a program's option parser reads it? A
/// word that is no option (`auth`) is the whole argument; a long option
/// (`--show-token`) is also the argument's part before a `=`
/// (`--show-token=true`); a short one (`-t`) is also any letter of a cluster of
/// short options (`-vt`, and `-tHOST` too: the cluster's letters cannot be
/// told from an option's value without the program's table, so a refusal errs
/// towards the word). A single-dash long option of Go's `flag` package
/// (`-token`) is read as a cluster too: a deny word `-t` refuses it.
pub fn option_holds(arg: &[u8], word: &[u8]) -> bool {
    if arg == word {
        return true;
    }
    match word {
        [b'-', b'-', name @ ..] if !name.is_empty() => arg
            .strip_prefix(word)
            .is_some_and(|rest| rest.first() == Some(&b'=')),
        [b'-', letter] if *letter != b'-' => match arg {
            [b'-', cluster @ ..] if cluster.first().is_some_and(|&c| c != b'-') => {
                cluster.iter().take_while(|&&c| c != b'=').any(|c| c == letter)
            }
            _ => false,
        },
        _ => false,
    }
}

/// The lists of an encoded `deny` string: each list's words end with a NUL,
/// and the list with one more.
pub struct DenyLists<'p> {
    rest: &'p [u8],
}

impl<'p> Iterator for DenyLists<'p> {
    type Item = Words<'p>;
    fn next(&mut self) -> Option<Words<'p>> {
        if self.rest.is_empty() {
            return None;
        }
        let end = self
            .rest
            .windows(2)
            .position(|w| w == [0, 0])
            .map_or(self.rest.len(), |i| i + 2);
        let list = self.rest.get(..end).unwrap_or(self.rest);
        self.rest = self.rest.get(end..).unwrap_or(&[]);
        Some(Words(list))
    }
}

/// Encode `deny_args` lists as the compiled policy holds them.
pub fn encode_deny<'w>(lists: impl IntoIterator<Item = &'w [&'w [u8]]>, mut put: impl FnMut(&[u8])) {
    for list in lists {
        for w in list {
            put(w);
            put(&[0]);
        }
        put(&[0]);
    }
}

/// The first secret among `wanted` (a [`wanted`] mask) whose `deny_args`
/// `args` (the arguments after the program name) hold: its index, the list's,
/// and the index in `args` of the argument that completes the list.
pub fn denied_args(policy: &Policy<'_>, wanted: u16, args: &[&[u8]]) -> Option<(u32, u32, usize)> {
    (0..MAX_SECRETS as u32)
        .filter(|i| wanted & (1 << i) != 0)
        .filter_map(|i| policy.secret(i).map(|s| (i, s)))
        .find_map(|(i, s)| {
            deny_lists(policy, &s)
                .enumerate()
                .find_map(|(k, words)| words.found_in(args).map(|at| (i, k as u32, at)))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_loses_one_trailing_newline_and_nothing_else() {
        assert_eq!(clean_value(b"tok\n"), Ok(&b"tok"[..]));
        assert_eq!(clean_value(b"tok\r\n"), Ok(&b"tok"[..]));
        assert_eq!(clean_value(b"tok\n\n"), Ok(&b"tok\n"[..]));
        assert_eq!(clean_value(b" tok "), Ok(&b" tok "[..]));
        assert_eq!(clean_value(b"\n"), Err(Undelivered::Empty));
        assert_eq!(clean_value(b"a\0b"), Err(Undelivered::HasNul));
        assert_eq!(clean_value(&[b'a'; MAX_VALUE + 1]), Err(Undelivered::TooLarge));
        assert!(clean_value(&[b'a'; MAX_VALUE]).is_ok());
    }

    #[test]
    fn a_source_file_is_trusted_as_a_private_key_is() {
        let reg = 0o100_000;
        assert_eq!(file_trusted(1000, reg | 0o600, 1000), Ok(()));
        assert_eq!(file_trusted(0, reg | 0o400, 1000), Ok(()));
        assert_eq!(file_trusted(1001, reg | 0o600, 1000), Err(Undelivered::Untrusted));
        assert_eq!(file_trusted(1000, reg | 0o640, 1000), Err(Undelivered::Untrusted));
        assert_eq!(file_trusted(1000, reg | 0o604, 1000), Err(Undelivered::Untrusted));
        assert_eq!(file_trusted(1000, 0o040_000 | 0o700, 1000), Err(Undelivered::NotRegular));
    }

    #[test]
    fn only_a_program_no_process_of_the_user_can_replace_gets_a_secret() {
        let f = |owner, mode| FileMode { owner, mode };
        let reg = 0o100_000;
        assert_eq!(program_trusted(b"/usr/bin/gh", f(0, reg | 0o755)), Ok(()));
        let replaceable = Err(Undelivered::ProgramReplaceable);
        assert_eq!(program_trusted(b"/usr/bin/gh", f(1000, reg | 0o755)), replaceable);
        assert_eq!(program_trusted(b"/usr/bin/gh", f(0, reg | 0o775)), replaceable);
        assert_eq!(program_trusted(b"/usr/bin/gh", f(0, reg | 0o757)), replaceable);
        // Any link, root's or not: a chain may pass through one the user owns.
        assert_eq!(program_trusted(b"/bin/sh", f(0, 0o120_777)), Err(Undelivered::ProgramLink));
        assert_eq!(program_trusted(b"/home/u/gh", f(1000, 0o120_777)), Err(Undelivered::ProgramLink));
        for path in [&b"gh"[..], b"./gh", b"/usr/bin/../../tmp/gh", b"/usr//bin/gh", b"/usr/bin/./gh", b"/usr/bin/gh/"] {
            assert_eq!(program_trusted(path, f(0, reg | 0o755)), Err(Undelivered::ProgramPath));
        }
    }

    #[test]
    fn sources_parse_by_their_prefix() {
        assert_eq!(SourceKind::parse(b"file:/a"), Some((SourceKind::File, &b"/a"[..])));
        assert_eq!(SourceKind::parse(b"keyring:user:gh"), Some((SourceKind::Keyring, &b"gh"[..])));
        assert_eq!(SourceKind::parse(b"credential:gh"), Some((SourceKind::Credential, &b"gh"[..])));
        assert_eq!(SourceKind::parse(b"keyring:session:gh"), None);
        assert_eq!(SourceKind::parse(b"file:"), None);
    }

    #[test]
    fn deny_lists_round_trip_and_match_in_order() {
        let mut enc = [0u8; 64];
        let mut n = 0;
        encode_deny([&[&b"auth"[..], b"token"][..], &[b"x"]], |b| {
            enc[n..n + b.len()].copy_from_slice(b);
            n += b.len();
        });
        let mut lists = DenyLists { rest: &enc[..n] };
        let first = lists.next().unwrap();
        assert_eq!(first.iter().collect::<Vec<_>>(), [&b"auth"[..], b"token"]);
        assert_eq!(first.found_in(&[b"auth", b"-h", b"token"]), Some(2));
        assert_eq!(first.found_in(&[b"token", b"auth"]), None);
        // Options as programs parse them.
        let status = |args: &[&[u8]]| {
            let mut enc = [0u8; 64];
            let mut n = 0;
            encode_deny([&[&b"auth"[..], b"status", b"--show-token"][..]], |b| {
                enc[n..n + b.len()].copy_from_slice(b);
                n += b.len();
            });
            let t = [&b"auth"[..], b"status", b"-t"];
            let short = {
                let mut e2 = [0u8; 64];
                let mut m = 0;
                encode_deny([&t[..]], |b| {
                    e2[m..m + b.len()].copy_from_slice(b);
                    m += b.len();
                });
                DenyLists { rest: &e2[..m] }.next().unwrap().found_in(args)
            };
            (DenyLists { rest: &enc[..n] }.next().unwrap().found_in(args), short)
        };
        assert_eq!(status(&[b"auth", b"status", b"--show-token=true"]).0, Some(2));
        assert_eq!(status(&[b"auth", b"status", b"--show-tokens"]).0, None);
        assert_eq!(status(&[b"auth", b"status", b"-vt"]).1, Some(2));
        assert_eq!(status(&[b"auth", b"status", b"-t=true"]).1, Some(2));
        assert_eq!(status(&[b"auth", b"status", b"--token"]).1, None);
        assert_eq!(status(&[b"auth", b"status", b"-v"]).1, None);
        assert_eq!(status(&[b"auth", b"status", b"-h=t"]).1, None);
        assert!(option_holds(b"auth", b"auth"));
        assert!(!option_holds(b"author", b"auth"));
        assert!(!option_holds(b"-", b"-t"));
        assert_eq!(lists.next().unwrap().found_in(&[b"a", b"x"]), Some(1));
        assert!(lists.next().is_none());
    }
}
