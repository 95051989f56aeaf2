//! Reading a `[[secret]]`'s value from its source, for the std front ends
//! (envwrap's run mode, the command's child under `--supervise`, the tools).
//!
//! Why a module of its own: the core ([`crate::secret`]) holds every rule about
//! a source (the trust rule, the clean-up, the reasons a value is not
//! delivered) but reads nothing, because each front end must read in the
//! process that becomes the program with its own calls. The std front ends
//! share one way of reading, this one, so envwrap, `scan` and `secret list`
//! judge a source alike. The shim reads with its own raw calls.
//!
//! A value read here lives in a [`Value`] (or a [`Values`]): its bytes are
//! wiped when it is dropped, it has no `Debug`, and it is read into a buffer
//! allocated once at its full size, so no copy is left behind by a growing
//! `Vec`.

mod helper;

pub use helper::without_helpers;

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::compiled::{Policy, SecretRec};
use crate::secret::{self, SourceKind, Undelivered, MAX_SECRETS, MAX_VALUE};

/// The most bytes read from a source: a value of [`MAX_VALUE`] bytes and its
/// trailing `\r\n`. One byte more than that is reported as too large.
const READ_AT_MOST: usize = MAX_VALUE + 2;

/// One secret's cleaned value. Wiped on drop; never printed (no `Debug`).
pub struct Value(Vec<u8>);

impl Value {
    /// The value's bytes, to deliver or to search for.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The value held in `raw` (read from somewhere else than a source: the
    /// standard input of `envwrap secret set`), cleaned as a source's bytes
    /// are ([`secret::clean_value`]); `raw` is wiped either way.
    pub fn clean(raw: Vec<u8>) -> Result<Value, Undelivered> {
        let raw = Value(raw);
        secret::clean_value(raw.as_bytes()).map(|v| Value(v.to_vec()))
    }

    /// Give the bytes to a caller that wipes them itself (as [`Values`] does).
    fn into_inner(mut self) -> Vec<u8> {
        std::mem::take(&mut self.0)
    }
}

impl Drop for Value {
    fn drop(&mut self) {
        wipe(&mut self.0);
    }
}

/// The values of a policy's secrets by index, as [`crate::outcome::Pass::secrets`]
/// takes them: `None` for a secret not read. Wiped on drop; never printed.
#[derive(Default)]
pub struct Values(Vec<Option<Vec<u8>>>);

impl Values {
    /// The values by secret index, for `outcome::Pass::secrets`.
    pub fn as_slice(&self) -> &[Option<Vec<u8>>] {
        &self.0
    }

    /// The values read, with the index of their secret.
    pub fn read(&self) -> impl Iterator<Item = (u32, &[u8])> {
        self.0
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.as_deref().map(|v| (i as u32, v)))
    }

    /// No value was read.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(Option::is_none)
    }
}

impl Drop for Values {
    fn drop(&mut self) {
        self.0.iter_mut().flatten().for_each(wipe);
    }
}

/// Overwrite `bytes` with zeros in a way the compiler keeps (volatile writes),
/// then empty it.
fn wipe(bytes: &mut Vec<u8>) {
    for b in bytes.iter_mut() {
        // SAFETY: `b` is a valid, exclusive reference to one byte.
        unsafe { std::ptr::write_volatile(b, 0) };
    }
    std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
    bytes.clear();
}

/// What [`read_wanted`] found: the values read and the secrets not delivered.
pub struct Reading {
    pub values: Values,
    /// Each wanted secret that could not be read, with why.
    pub undelivered: Vec<(u32, Undelivered)>,
}

/// Read secret `i` of `policy` from its source, cleaned
/// ([`secret::clean_value`]). `env` is the environment of the process that
/// becomes the program: `credential:` finds `CREDENTIALS_DIRECTORY` there.
pub fn read(policy: &Policy<'_>, i: u32, env: &[Vec<u8>]) -> Result<Value, Undelivered> {
    let rec = policy.secret(i).ok_or(Undelivered::Missing)?;
    let raw = read_raw(policy, &rec, env)?;
    let value = secret::clean_value(raw.as_bytes())?.to_vec();
    Ok(Value(value))
}

/// [`secret::program_trusted`] of the program at `path`, from its `lstat`:
/// `Err(None)` when there is no such file, which the exec will say itself.
pub fn program_trusted(path: &[u8]) -> Result<(), Option<Undelivered>> {
    let ns = std::fs::metadata("/proc/self/ns/user")
        .ok()
        .map(|m| m.ino());
    secret::user_namespace_trusted(ns).map_err(Some)?;
    let p = Path::new(std::ffi::OsStr::from_bytes(path));
    let link = std::fs::symlink_metadata(p).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => None,
        _ => Some(Undelivered::ProgramReplaceable),
    })?;
    let file = secret::FileMode {
        owner: link.uid(),
        mode: link.mode(),
    };
    secret::program_trusted(path, file).map_err(Some)
}

/// Read every secret `program` gets ([`secret::wanted`]), if it is a program
/// that may get one ([`program_trusted`]): else each is undelivered, with why.
pub fn read_wanted(policy: &Policy<'_>, program: &[u8], env: &[Vec<u8>]) -> Reading {
    let wanted = secret::wanted(policy, program);
    match program_trusted(program) {
        _ if wanted == 0 => read_mask(policy, 0, env),
        Ok(()) => read_mask(policy, wanted, env),
        Err(why) => Reading {
            values: Values(vec![None; policy.count(crate::compiled::sec::SECRETS)]),
            undelivered: why
                .map(|why| {
                    (0..MAX_SECRETS as u32)
                        .filter(|i| wanted & (1 << i) != 0)
                        .map(|i| (i, why))
                        .collect()
                })
                .unwrap_or_default(),
        },
    }
}

/// Read the secrets of `mask` (bit `i` for secret `i`).
pub fn read_mask(policy: &Policy<'_>, mask: u16, env: &[Vec<u8>]) -> Reading {
    let count = policy.count(crate::compiled::sec::SECRETS);
    let mut values = Values(vec![None; count]);
    let mut undelivered = Vec::new();
    for i in (0..count as u32).filter(|i| mask & (1 << i) != 0) {
        match read(policy, i, env) {
            Ok(v) => values.0[i as usize] = Some(v.into_inner()),
            Err(why) => undelivered.push((i, why)),
        }
    }
    Reading {
        values,
        undelivered,
    }
}

/// Where secret `i`'s value would be read from, as a message shows it: the
/// file's path, `keyring:user:DESCRIPTION`, `credential:NAME`, or
/// `command:HELPER WORDS...` (each word as [`crate::shown::word`] shows it).
pub fn describe_source(policy: &Policy<'_>, rec: &SecretRec) -> String {
    let source = crate::shown::word(policy.str(rec.source)).to_string();
    match rec.source_kind {
        SourceKind::File => source,
        SourceKind::Command => {
            let words: Vec<String> = secret::helper::words(policy.str(rec.source))
                .map(|w| {
                    let shown = crate::shown::word(w).to_string();
                    if w.is_empty() || w.iter().any(|b| b.is_ascii_whitespace() || *b == b'\'') {
                        format!("'{}'", shown.replace('\'', "'\\''"))
                    } else {
                        shown
                    }
                })
                .collect();
            format!("command:{}", words.join(" "))
        }
        kind => format!("{}{source}", kind.prefix()),
    }
}

/// The source's bytes as read, before clean-up.
fn read_raw(policy: &Policy<'_>, rec: &SecretRec, env: &[Vec<u8>]) -> Result<Value, Undelivered> {
    let source = policy.str(rec.source);
    match rec.source_kind {
        SourceKind::File => read_trusted_file(Path::new(std::ffi::OsStr::from_bytes(source))),
        SourceKind::Credential => read_trusted_file(&credential_path(source, env)?),
        SourceKind::Keyring => keyring::read(source),
        SourceKind::Command => helper::run(source),
    }
}

/// `$CREDENTIALS_DIRECTORY/NAME`, from the environment of the program.
pub fn credential_path(name: &[u8], env: &[Vec<u8>]) -> Result<PathBuf, Undelivered> {
    let dir = env
        .iter()
        .find_map(|e| e.strip_prefix(b"CREDENTIALS_DIRECTORY="))
        .filter(|d| !d.is_empty())
        .ok_or(Undelivered::NoCredentialsDirectory)?;
    Ok(Path::new(std::ffi::OsStr::from_bytes(dir)).join(std::ffi::OsStr::from_bytes(name)))
}

/// Open `path` without blocking (a FIFO cannot hold the open) and without
/// taking a terminal, judge the descriptor opened by the trust rule
/// ([`secret::file_trusted`]), then read at most [`READ_AT_MOST`] bytes and
/// one more, to tell a value that is too long.
pub fn read_trusted_file(path: &Path) -> Result<Value, Undelivered> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| open_error(&e))?;
    let md = file.metadata().map_err(|_| Undelivered::Unreadable)?;
    secret::file_trusted(md.uid(), md.mode(), current_uid())?;
    read_bounded(file)
}

/// Read `file` into one buffer of its final size; [`Undelivered::TooLarge`]
/// when it holds more than [`READ_AT_MOST`] bytes.
fn read_bounded(mut file: File) -> Result<Value, Undelivered> {
    let mut buf = Value(vec![0u8; READ_AT_MOST + 1]);
    let mut filled = 0;
    while filled < buf.0.len() {
        match file.read(&mut buf.0[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return Err(Undelivered::Unreadable),
        }
    }
    if filled > READ_AT_MOST {
        return Err(Undelivered::TooLarge);
    }
    wipe_tail(&mut buf.0, filled);
    Ok(buf)
}

/// Shorten `bytes` to `len`, wiping what is cut off first.
fn wipe_tail(bytes: &mut Vec<u8>, len: usize) {
    let mut tail = bytes.split_off(len);
    wipe(&mut tail);
}

/// Why a source could not be opened.
fn open_error(e: &io::Error) -> Undelivered {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ENOTDIR) => Undelivered::Missing,
        _ => Undelivered::Unreadable,
    }
}

/// The real user id of this process, which a source file must belong to
/// (or to root).
pub fn current_uid() -> u32 {
    // SAFETY: getuid cannot fail and touches no memory.
    unsafe { libc::getuid() }
}

/// Why a secret's source is not usable now, without keeping its value: for
/// `envwrap check` and `envwrap secret list`. A `command:` source's helper is
/// only looked at (is it there, may it run), not run: `run_helpers` runs it
/// (`secret list --check`).
pub fn usable(
    policy: &Policy<'_>,
    i: u32,
    env: &[Vec<u8>],
    run_helpers: bool,
) -> Result<(), Undelivered> {
    let rec = policy.secret(i).ok_or(Undelivered::Missing)?;
    if rec.source_kind == SourceKind::Command && !run_helpers {
        return helper::usable(policy.str(rec.source));
    }
    read(policy, i, env).map(drop)
}

/// The kernel keyring: a `user` key found by `keyctl search`, read by
/// `keyctl read`, and added by `add_key` (`envwrap secret set`).
pub mod keyring {
    use super::{wipe_tail, Undelivered, Value, READ_AT_MOST};
    use std::ffi::CString;

    const KEYCTL_SEARCH: libc::c_long = 10;
    const KEYCTL_READ: libc::c_long = 11;
    const KEY_SPEC_USER_KEYRING: libc::c_long = -4;
    const KEY_SPEC_SESSION_KEYRING: libc::c_long = -3;

    /// The keyrings searched, in order: the session's (which links the user's
    /// in a login session), then the user's itself (a session without it).
    const SEARCHED: [libc::c_long; 2] = [KEY_SPEC_SESSION_KEYRING, KEY_SPEC_USER_KEYRING];

    /// The value of the `user` key described by `description`.
    pub fn read(description: &[u8]) -> Result<Value, Undelivered> {
        let key = find(description)?;
        read_key(key)
    }

    /// The serial of the `user` key described by `description`.
    pub fn find(description: &[u8]) -> Result<libc::c_long, Undelivered> {
        let desc = CString::new(description).map_err(|_| Undelivered::Missing)?;
        let mut why = Undelivered::Missing;
        for ring in SEARCHED {
            // SAFETY: both strings are NUL-terminated and outlive the call.
            let key = unsafe {
                libc::syscall(
                    libc::SYS_keyctl,
                    KEYCTL_SEARCH,
                    ring,
                    c"user".as_ptr(),
                    desc.as_ptr(),
                    0 as libc::c_long,
                )
            };
            if key >= 0 {
                return Ok(key);
            }
            why = search_error(std::io::Error::last_os_error().raw_os_error());
        }
        Err(why)
    }

    fn search_error(errno: Option<i32>) -> Undelivered {
        match errno {
            Some(libc::ENOKEY) | Some(libc::EKEYEXPIRED) | Some(libc::EKEYREVOKED) => {
                Undelivered::Missing
            }
            _ => Undelivered::Unreadable,
        }
    }

    /// `keyctl read` into one buffer of its final size.
    fn read_key(key: libc::c_long) -> Result<Value, Undelivered> {
        let mut buf = Value(vec![0u8; READ_AT_MOST + 1]);
        // SAFETY: the buffer is valid for writes of its length.
        let len = unsafe {
            libc::syscall(
                libc::SYS_keyctl,
                KEYCTL_READ,
                key,
                buf.0.as_mut_ptr(),
                buf.0.len(),
            )
        };
        if len < 0 {
            return Err(Undelivered::Unreadable);
        }
        // The key's whole length, even when the buffer held less of it.
        let len = len as usize;
        if len > READ_AT_MOST {
            return Err(Undelivered::TooLarge);
        }
        wipe_tail(&mut buf.0, len);
        Ok(buf)
    }

    /// Add (or update) the `user` key `description` with `value` in the user's
    /// keyring, where [`find`] finds it from any session of the user.
    pub fn add(description: &[u8], value: &[u8]) -> std::io::Result<()> {
        let desc = CString::new(description)
            .map_err(|_| std::io::Error::other("the key's description holds a NUL byte"))?;
        // SAFETY: the strings are NUL-terminated; the payload is valid for its length.
        let key = unsafe {
            libc::syscall(
                libc::SYS_add_key,
                c"user".as_ptr(),
                desc.as_ptr(),
                value.as_ptr(),
                value.len(),
                KEY_SPEC_USER_KEYRING,
            )
        };
        if key < 0 {
            return Err(std::io::Error::last_os_error());
        }
        set_user_readable(key)
    }

    /// Let the key's user, and not only a process that possesses it, view,
    /// read and search it: a process whose session keyring does not link the
    /// user's keyring finds it by searching the user's keyring.
    fn set_user_readable(key: libc::c_long) -> std::io::Result<()> {
        const KEYCTL_SETPERM: libc::c_long = 5;
        const POSSESSOR_ALL: libc::c_long = 0x3f00_0000;
        const USER_VIEW_READ_SEARCH: libc::c_long = 0x0001_0000 | 0x0002_0000 | 0x0008_0000;
        // SAFETY: plain integers.
        let r = unsafe {
            libc::syscall(
                libc::SYS_keyctl,
                KEYCTL_SETPERM,
                key,
                POSSESSOR_ALL | USER_VIEW_READ_SEARCH,
            )
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}
