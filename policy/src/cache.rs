//! The compiled-policy cache on disk: where it lives, how it is built and replaced,
//! and when it may be trusted. The file name, the layout and the freshness rule
//! are in [`crate::cache_key`], shared with libenvshim.so, which reads the cache in
//! its constructor instead of parsing TOML (docs/adr/0002-compiled-policy.md).
//!
//! **Where** ([`cache_path`]): the directory of [`cache_key::cache_dir_parts`]
//! (`$ENVSHIM_CACHE_DIR` when absolute, else `/run/user/<uid>/envshim` when that
//! runtime directory is the user's own, else `/tmp/envshim-<uid>`; never under
//! `HOME`), then `cache_file_name` of the absolute policy path.
//!
//! **Writing** ([`store`]): the directory is created with mode 0700 if missing; the
//! bytes go to a temporary file (mode 0600) in the same directory, which is then
//! renamed over the cache, so a reader sees the old file or the new one, never a
//! part. Concurrent writers (several processes finding the cache stale at once)
//! each rename a complete file; the last one wins, and all are equal.
//!
//! **Trust** ([`trust_dir`], [`trust_file`]): a cache decides what every process
//! of the user passes to its children, so a cache someone else could have written
//! could weaken the policy. A cache directory or file that is not owned by the
//! current uid, or that is writable by group or others, is refused: [`store`] will
//! not write into such a directory, and libenvshim.so will not read from it (it
//! falls back to the fail-closed floor with a warning). The file must also be a
//! regular file. Directories above the cache directory (`~/.cache` itself) are not
//! checked: whoever can replace those can replace `~/.bashrc` as well.
//!
//! **Building** ([`build`]): the cache of a policy that compiles is its compiled
//! form, plus notes for imports that were missing or unreadable (so that their
//! appearing makes the cache stale) and for env files whose values are read again
//! at each exec (their full stamp, so that a `chmod` or `chown` that makes one
//! untrusted, see [`crate::trust`], makes the cache stale). The cache of a policy
//! that does not compile is a *failure marker*: the fail-closed floor, compiled
//! with the policy's path (so its first dependency is the policy file), a note
//! with the one-line warning, and stamps of the policy and of its imports. Every
//! process start until the policy changes then reads the marker and enforces the
//! floor, instead of running the compiler again; the warning is shown once per
//! process, at its first exec.

use crate::cache_key::{self, Note, Stale, Stamp};
use crate::compile::Warning;
use crate::error::{io_reason, PolicyError};
use crate::load::{self, Compiled};
use crate::schema::PolicyFile;
use std::ffi::OsString;
use std::fmt;
use std::io::{self, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Largest cache file a reader accepts (policies are at most 1 MiB of text).
pub const MAX_CACHE_BYTES: u64 = crate::readable::CACHE_FILE.bytes;

extern "C" {
    fn getuid() -> u32;
}

/// The real uid of this process.
pub fn current_uid() -> u32 {
    // SAFETY: getuid(2) has no preconditions and cannot fail; std links libc.
    unsafe { getuid() }
}

/// `policy` made absolute by the rule of [`cache_key::absolute_into`] (the shim
/// applies the same rule with its own working directory).
pub fn absolute(policy: &Path) -> io::Result<PathBuf> {
    if policy.is_absolute() {
        return Ok(policy.to_path_buf());
    }
    let cwd = std::env::current_dir()?;
    let (cwd, rel) = (cwd.as_os_str().as_bytes(), policy.as_os_str().as_bytes());
    let mut out = vec![0u8; cwd.len() + 1 + rel.len()];
    let n = cache_key::absolute_into(cwd, rel, &mut out)
        .ok_or_else(|| io::Error::other("the working directory is not absolute"))?;
    out.truncate(n);
    Ok(PathBuf::from(OsString::from_vec(out)))
}

/// The cache directory, by the rule of [`cache_key::cache_dir_parts`]:
/// `$ENVSHIM_CACHE_DIR` when absolute, else `/run/user/<uid>/envshim` when that
/// runtime directory is `uid`'s own, else `/tmp/envshim-<uid>`.
pub fn cache_dir(getenv: impl Fn(&str) -> Option<OsString>, uid: u32) -> PathBuf {
    let given = getenv(cache_key::CACHE_DIR_VAR);
    let mut digits = [0u8; 20];
    let uid_digits = crate::shown::decimal(u64::from(uid), &mut digits);
    let runtime_ours = |nul_terminated: &[u8]| {
        let path = nul_terminated.strip_suffix(b"\0").unwrap_or(nul_terminated);
        std::fs::metadata(std::ffi::OsStr::from_bytes(path))
            .is_ok_and(|md| trust_dir(&md, uid).is_ok())
    };
    let given = given.as_deref().map(OsStrExt::as_bytes);
    let parts = cache_key::cache_dir_parts(given, uid_digits, runtime_ours);
    PathBuf::from(OsString::from_vec(parts.concat()))
}

/// Where the compiled cache of the policy file `policy` lives. A relative
/// `policy` is made absolute first ([`absolute`]; as given if the working
/// directory is unknown).
pub fn cache_path(policy: &Path, getenv: impl Fn(&str) -> Option<OsString>, uid: u32) -> PathBuf {
    let abs = absolute(policy).unwrap_or_else(|_| policy.to_path_buf());
    let name = cache_key::cache_file_name(abs.as_os_str().as_bytes());
    cache_dir(getenv, uid).join(std::ffi::OsStr::from_bytes(&name))
}

/// Why a cache directory or file is not trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Untrusted {
    OtherOwner,
    Writable,
    NotADirectory,
    NotAFile,
    TooLarge,
}

impl fmt::Display for Untrusted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Untrusted::OtherOwner => "owned by another user",
            Untrusted::Writable => "writable by group or others",
            Untrusted::NotADirectory => "not a directory",
            Untrusted::NotAFile => "not a regular file",
            Untrusted::TooLarge => "too large",
        })
    }
}

fn trust(md: &std::fs::Metadata, uid: u32) -> Result<(), Untrusted> {
    if md.uid() != uid {
        return Err(Untrusted::OtherOwner);
    }
    if md.mode() & 0o022 != 0 {
        return Err(Untrusted::Writable);
    }
    Ok(())
}

/// A cache directory may be used: a directory owned by `uid`, not writable by
/// group or others.
pub fn trust_dir(md: &std::fs::Metadata, uid: u32) -> Result<(), Untrusted> {
    if !md.is_dir() {
        return Err(Untrusted::NotADirectory);
    }
    trust(md, uid)
}

/// A cache file may be read: a regular file owned by `uid`, not writable by group
/// or others, at most [`MAX_CACHE_BYTES`].
pub fn trust_file(md: &std::fs::Metadata, uid: u32) -> Result<(), Untrusted> {
    if !md.is_file() {
        return Err(Untrusted::NotAFile);
    }
    if md.len() > MAX_CACHE_BYTES {
        return Err(Untrusted::TooLarge);
    }
    trust(md, uid)
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Write a compiled policy as the cache file `out` (see the module docs).
pub fn store(compiled: &Compiled, out: &Path) -> io::Result<()> {
    store_bytes(compiled.bytes(), out)
}

/// Write cache file bytes (a compiled policy, with or without notes) to `out`:
/// directory 0700 if missing and trusted, a 0600 temporary file, an atomic rename.
pub fn store_bytes(bytes: &[u8], out: &Path) -> io::Result<()> {
    let name = out
        .file_name()
        .ok_or_else(|| io::Error::other("the cache path names no file"))?;
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let md = std::fs::metadata(dir)?;
    trust_dir(&md, current_uid()).map_err(|why| {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "cache directory {} is not trusted: {why}",
                crate::error::shown(dir)
            ),
        )
    })?;
    let mut tmp_name = OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(
        ".tmp.{}.{}",
        std::process::id(),
        TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let tmp = dir.join(tmp_name);
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        drop(f);
        std::fs::rename(&tmp, out)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The stamp of a file, or `None` when it cannot be stat'ed.
pub fn stamp(path: &Path) -> Option<Stamp> {
    let md = std::fs::metadata(path).ok()?;
    Some(Stamp::new(
        md.dev(),
        md.ino(),
        md.size(),
        (md.mtime(), md.mtime_nsec()),
        (md.ctime(), md.ctime_nsec()),
    ))
}

fn stamp_cpath(p: &[u8]) -> Option<Stamp> {
    let p = p.strip_suffix(b"\0").unwrap_or(p);
    stamp(Path::new(std::ffi::OsStr::from_bytes(p)))
}

/// Why a cache file cannot be used for a policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unusable {
    Open(cache_key::OpenError),
    Stale(Stale),
}

impl fmt::Display for Unusable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unusable::Open(e) => e.describe(),
            Unusable::Stale(s) => s.describe(),
        })
    }
}

/// Check cache file bytes against the policy file `policy` (absolute): valid, for
/// this policy, and fresh. On success, the failure warning if it is a failure
/// marker.
pub fn check_fresh<'a>(file: &'a [u8], policy: &Path) -> Result<Option<&'a [u8]>, Unusable> {
    let (p, notes) = cache_key::open(file).map_err(Unusable::Open)?;
    cache_key::check(&p, &notes, policy.as_os_str().as_bytes(), stamp_cpath)
        .map_err(Unusable::Stale)?;
    Ok(notes.failure())
}

/// The contents of a policy's cache file, and what compiling said.
#[derive(Debug)]
pub struct Built {
    /// The cache file's bytes: the compiled policy (with notes), or a failure marker.
    pub bytes: Vec<u8>,
    /// The compiler's warnings, or the error that made this a failure marker.
    pub outcome: Result<Vec<Warning>, PolicyError>,
}

/// Build the cache file of the policy at `policy` (absolute). Never fails: a
/// policy that does not compile gives a failure marker (see the module docs).
pub fn build(policy: &Path) -> Built {
    build_redacting(policy, &|message| message.to_string())
}

/// [`build`], with the warning a failure marker keeps passed through `redact`
/// first: the marker is a file, and what the policy's text says may hold a
/// credential's value pasted where a key goes (`envwrap compile` hides the
/// credentials it knows, the host's included, as its messages do).
pub fn build_redacting(policy: &Path, redact: &dyn Fn(&str) -> String) -> Built {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let text = load::read_policy_text(policy);
    let compiled = text
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|t| load::compile_text(t, policy));
    let parsed = text.as_ref().ok().and_then(|t| load::parse(t, policy).ok());
    let imports = parsed
        .as_ref()
        .map(|f| import_paths(f, policy, home.as_deref()))
        .unwrap_or_default();
    match compiled {
        Ok(c) => {
            let deps: Vec<&[u8]> = {
                let p = c.policy();
                (0..p.count(crate::compiled::sec::DEPS) as u32)
                    .filter_map(|i| p.dep(i).map(|d| p.str(d.path)))
                    .collect()
            };
            // Env files whose values are read again at each exec get their full
            // stamp, ctime included: a chmod or chown that makes one untrusted
            // (crate::trust) changes no field of its dependency record.
            let reread = parsed
                .as_ref()
                .map(|f| reread_paths(f, policy, home.as_deref()))
                .unwrap_or_default();
            let mut notes = Vec::new();
            for path in &imports {
                let bytes = path.to_string_lossy();
                if deps.contains(&bytes.as_bytes()) && !reread.contains(path) {
                    continue;
                }
                push_watch(&mut notes, path);
            }
            note_private_group(&mut notes, &deps);
            let bytes = with_notes(c.bytes(), &notes);
            Built {
                bytes,
                outcome: Ok(c.warnings),
            }
        }
        Err(e) => {
            let floor = load::compile_text(load::FLOOR_POLICY, policy)
                .unwrap_or_else(|_| load::builtin_floor());
            let message = redact(&failure_message(&e));
            let mut notes = Vec::new();
            cache_key::encode_note(&Note::Failure(message.as_bytes()), |b| {
                notes.extend_from_slice(b)
            });
            push_watch(&mut notes, policy);
            for path in &imports {
                push_watch(&mut notes, path);
            }
            Built {
                bytes: with_notes(floor.bytes(), &notes),
                outcome: Err(e),
            }
        }
    }
}

/// The warning a failure marker carries: `envshim: FILE:LINE:COL: message; ...`.
pub fn failure_message(e: &PolicyError) -> String {
    format!("envshim: {e}; using the fail-closed floor")
}

/// A note that makes the cache stale when `path` changes, appears or disappears.
/// When a file the policy is built from is trusted only because its group is the
/// user's private group ([`crate::writers`]), record that group for the shim, which
/// cannot ask the group database, and watch the databases it came from.
fn note_private_group(notes: &mut Vec<u8>, deps: &[&[u8]]) {
    use std::os::unix::ffi::OsStrExt;
    let euid = crate::trust::effective_uid();
    let needed = deps.iter().any(|d| {
        std::fs::metadata(std::ffi::OsStr::from_bytes(d))
            .is_ok_and(|md| crate::writers::needs_private_group(md.uid(), md.mode(), euid))
    });
    let Some(gid) = needed.then(|| crate::trust::private_group(euid)).flatten() else {
        return;
    };
    cache_key::encode_note(&Note::PrivateGroup(gid), |b| notes.extend_from_slice(b));
    push_watch(notes, Path::new("/etc/group"));
    push_watch(notes, Path::new("/etc/passwd"));
}

fn push_watch(notes: &mut Vec<u8>, path: &Path) {
    let mut cpath = path.to_string_lossy().into_owned().into_bytes();
    if cpath.contains(&0) {
        return;
    }
    cpath.push(0);
    let note = match stamp(path) {
        Some(s) => Note::Stat(s, &cpath),
        None => Note::Absent(&cpath),
    };
    cache_key::encode_note(&note, |b| notes.extend_from_slice(b));
}

fn with_notes(compiled: &[u8], notes: &[u8]) -> Vec<u8> {
    if notes.is_empty() {
        return compiled.to_vec();
    }
    let mut out = Vec::with_capacity(compiled.len() + notes.len() + cache_key::FOOTER_LEN);
    out.extend_from_slice(compiled);
    out.extend_from_slice(notes);
    out.extend_from_slice(&(notes.len() as u32).to_le_bytes());
    out.extend_from_slice(cache_key::NOTES_MAGIC);
    out
}

/// An import's path resolved as the compiler resolves it (`~/` against `home`,
/// relative paths against the policy's directory).
fn resolve_import(p: &str, policy: &Path, home: Option<&Path>) -> PathBuf {
    if let (Some(rest), Some(home)) = (p.strip_prefix("~/"), home) {
        return home.join(rest);
    }
    let path = Path::new(p);
    if path.is_absolute() {
        return path.to_path_buf();
    }
    match policy.parent() {
        Some(dir) => dir.join(path),
        None => path.to_path_buf(),
    }
}

/// Every imported file a policy names.
fn import_paths(f: &PolicyFile, policy: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let resolve = |p: &str| resolve_import(p, policy, home);
    let env = f.import.env_file.iter().map(|i| resolve(i.path.get_ref()));
    let config = f.import.config.iter().map(|i| resolve(i.path.get_ref()));
    env.chain(config).collect()
}

/// The env files a policy reads again at each exec (`values = true`).
fn reread_paths(f: &PolicyFile, policy: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    f.import
        .env_file
        .iter()
        .filter(|i| i.values == Some(true))
        .map(|i| resolve_import(i.path.get_ref(), policy, home))
        .collect()
}

/// Read a cache file if it is trusted (see [`trust_file`]).
pub fn read_trusted(path: &Path, uid: u32) -> io::Result<Vec<u8>> {
    let md = std::fs::symlink_metadata(path)?;
    trust_file(&md, uid).map_err(|why| {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "cache file {} is not trusted: {why}",
                crate::error::shown(path)
            ),
        )
    })?;
    crate::read_file::read(path, crate::readable::CACHE_FILE).map_err(|e| match e {
        crate::read_file::ReadError::Io(e) => io::Error::new(e.kind(), io_reason(&e)),
        e => io::Error::new(io::ErrorKind::InvalidData, e.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn tempdir(tag: &str) -> PathBuf {
        static N: AtomicU64 = AtomicU64::new(0);
        let d = std::env::temp_dir().join(format!(
            "envpolicy-cache-{}-{}-{tag}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::DirBuilder::new().mode(0o700).create(&d).unwrap();
        d
    }

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn cache_path_rule() {
        let p = Path::new("/etc/envshim/policy.toml");
        let name =
            String::from_utf8(cache_key::cache_file_name(b"/etc/envshim/policy.toml").to_vec())
                .unwrap();
        assert_eq!(
            cache_path(p, env(&[("ENVSHIM_CACHE_DIR", "/x"), ("HOME", "/h")]), 7),
            Path::new("/x").join(&name)
        );
        // HOME and XDG_CACHE_HOME are never the cache's place; uid 7's runtime
        // directory does not exist (or is not 7's).
        let default = cache_path(p, env(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")]), 7);
        assert_eq!(default, Path::new("/tmp/envshim-7").join(&name));
        assert_eq!(
            cache_path(p, env(&[("ENVSHIM_CACHE_DIR", "x")]), 7),
            default
        );
        // A relative policy path is hashed as cwd/path.
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            cache_path(Path::new("p.toml"), env(&[]), 7),
            cache_path(&cwd.join("p.toml"), env(&[]), 7)
        );
    }

    #[test]
    fn store_build_and_freshness() {
        let d = tempdir("fresh");
        let policy = d.join("policy.toml");
        let envfile = d.join("missing.env");
        std::fs::write(
            &policy,
            format!(
                "version = 1\nbase = \"none\"\n[[import.env_file]]\npath = \"{}\"\n",
                envfile.display()
            ),
        )
        .unwrap();
        let built = build(&policy);
        assert!(built.outcome.is_ok());
        let out = d.join("cache/x.bin");
        store_bytes(&built.bytes, &out).unwrap();
        let md = std::fs::metadata(&out).unwrap();
        assert_eq!(md.mode() & 0o777, 0o600);
        assert_eq!(
            std::fs::metadata(out.parent().unwrap()).unwrap().mode() & 0o777,
            0o700
        );
        let bytes = read_trusted(&out, current_uid()).unwrap();
        assert_eq!(check_fresh(&bytes, &policy), Ok(None));
        // Another policy path: refused.
        assert_eq!(
            check_fresh(&bytes, &d.join("other.toml")),
            Err(Unusable::Stale(Stale::OtherPolicy))
        );
        let policy_file_only = |bytes: &[u8], path: &Path| {
            let (p, _) = cache_key::open_peek(bytes).unwrap();
            cache_key::check_policy_file(&p, path.as_os_str().as_bytes(), stamp_cpath)
        };
        assert_eq!(policy_file_only(&bytes, &policy), Ok(()));
        assert_eq!(
            policy_file_only(&bytes, &d.join("other.toml")),
            Err(Stale::OtherPolicy)
        );
        // The missing import appears: stale, though the policy file is as it was.
        std::fs::write(&envfile, "A=1\n").unwrap();
        assert_eq!(
            check_fresh(&bytes, &policy),
            Err(Unusable::Stale(Stale::Changed))
        );
        assert_eq!(policy_file_only(&bytes, &policy), Ok(()));
        // Recompiled: fresh again, and the import is now a dependency.
        let bytes = build(&policy).bytes;
        assert_eq!(check_fresh(&bytes, &policy), Ok(None));
        std::fs::write(&envfile, "A=1\nB=2\n").unwrap();
        assert!(check_fresh(&bytes, &policy).is_err());
        // The policy changes: stale, for both checks.
        let bytes = build(&policy).bytes;
        std::fs::write(&policy, "version = 1\n").unwrap();
        assert!(check_fresh(&bytes, &policy).is_err());
        assert_eq!(policy_file_only(&bytes, &policy), Err(Stale::Changed));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn failure_marker() {
        let d = tempdir("marker");
        let policy = d.join("policy.toml");
        std::fs::write(&policy, "version = 1\nbas = \"none\"\n").unwrap();
        let built = build(&policy);
        let e = built.outcome.as_ref().unwrap_err();
        assert_eq!(e.line, Some(2));
        let warning = check_fresh(&built.bytes, &policy).unwrap().unwrap();
        let w = std::str::from_utf8(warning).unwrap();
        assert!(
            w.starts_with(&format!("envshim: {}:2:1: ", policy.display())),
            "{w}"
        );
        // The compiled part is the floor.
        let (p, _) = cache_key::open(&built.bytes).unwrap();
        assert_eq!(
            p.settings().base,
            crate::compiled::Base::Floor,
            "a failure marker holds the floor"
        );
        // Fixing the policy makes the marker stale.
        std::fs::write(&policy, "version = 1\nbase = \"none\"\n").unwrap();
        assert!(check_fresh(&built.bytes, &policy).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn untrusted_directory_refused() {
        let d = tempdir("trust");
        let open = d.join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = store_bytes(b"x", &open.join("a.bin")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
        assert!(err.to_string().contains("writable by group or others"));
        // A group-writable cache file is refused by readers.
        let f = d.join("f.bin");
        std::fs::write(&f, b"x").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o620)).unwrap();
        assert!(read_trusted(&f, current_uid()).is_err());
        // Another owner.
        let md = std::fs::metadata(&d).unwrap();
        assert_eq!(
            trust_dir(&md, current_uid().wrapping_add(1)),
            Err(Untrusted::OtherOwner)
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}
