//! Opt-in collection for the secret sweep (`ci/secret-sweep`, docs/security.md,
//! "Secret hygiene").
//!
//! When `ENVSHIM_E2E_COLLECT` names a directory, the harness also writes there:
//!
//! - `secrets/<pid>-<n>.tsv`: every seeded value of every [`Secrets::generate`], one
//!   line per needle, `NAME<TAB>SHAPE<TAB>NEEDLE` (the values are fake and random; the
//!   files are mode 0600 in a 0700 directory);
//! - `out/<test binary>/<test>/<pid>-<n>.{cmd,stdout,stderr}`: the (redacted)
//!   description of every [`TestCommand`](crate::TestCommand) run, and its stdout
//!   and stderr, unless the test opted out for that stream (a control run that must
//!   see a value, or the harness's own test of the leak check, which prints one on
//!   purpose); an opted-out stream is listed in `skipped.tsv` instead, with
//!   `allowed` or `planted`;
//! - `files/<test binary>/<test>/<pid>-<n>-<name>`: the files envshim's tools wrote
//!   in a sandbox, copied when the sandbox is dropped: every `*.log` and `*.jsonl`
//!   file (envwrap's `--log`), and every file in a directory named `envshim` (the
//!   compiled policy caches and failure markers), plus any file a test hands to
//!   [`collect_file`].
//!
//! The sweep then searches every collected file, and the output of `cargo test`
//! itself, for every recorded value. Without the variable, nothing here does
//! anything.

use std::fs::{DirBuilder, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::secrets::Secrets;

/// The variable that turns collection on: a directory (created if missing).
pub const COLLECT_ENV: &str = "ENVSHIM_E2E_COLLECT";

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// The collection directory, when collection is on.
pub fn collect_dir() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = PathBuf::from(std::env::var_os(COLLECT_ENV).filter(|v| !v.is_empty())?);
        mkdir(&dir);
        Some(dir)
    })
    .as_deref()
}

/// A collection that cannot be written is a failure (the sweep would miss files),
/// except while a test is already failing, where a panic in a drop would abort.
fn broken(msg: String) {
    if std::thread::panicking() {
        eprintln!("{COLLECT_ENV}: {msg}");
    } else {
        panic!("{COLLECT_ENV}: {msg}");
    }
}

fn mkdir(dir: &Path) {
    if let Err(e) = DirBuilder::new().recursive(true).mode(0o700).create(dir) {
        broken(format!("cannot create {}: {e}", dir.display()));
    }
}

/// Write `bytes` to a new file `path`, mode 0600 (parents 0700).
fn write_private(path: &Path, bytes: &[u8]) {
    if let Some(parent) = path.parent() {
        mkdir(parent);
    }
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(bytes));
    if let Err(e) = written {
        broken(format!("cannot write {}: {e}", path.display()));
    }
}

/// A name unique in this collection: `<pid>-<n>`.
fn unique() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Keep `[A-Za-z0-9_.-]`, replace the rest with `_` (for path components).
fn component(s: &str) -> String {
    let c: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    if c.is_empty() || c.starts_with('.') {
        format!("_{c}")
    } else {
        c
    }
}

/// `<test binary>/<test>`: the running test binary's name without cargo's hash,
/// and the current thread's name (libtest names it after the test).
fn origin() -> PathBuf {
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "unknown".into());
    let exe = match exe.rsplit_once('-') {
        Some((stem, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            stem.to_string()
        }
        _ => exe,
    };
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("unnamed-thread");
    Path::new(&component(&exe)).join(component(test))
}

/// The record of one set of secrets: `NAME<TAB>SHAPE<TAB>NEEDLE` per needle.
pub fn secrets_record(secrets: &Secrets) -> String {
    let mut s = String::new();
    for secret in secrets.iter() {
        for needle in secret.needles() {
            s.push_str(&format!(
                "{}\t{:?}\t{needle}\n",
                secret.name(),
                secret.shape()
            ));
        }
    }
    s
}

/// Write [`secrets_record`] as `<dir>/secrets/<pid>-<n>.tsv` (0600). Public so that
/// the sweep's own test can plant a collection anywhere.
pub fn write_secrets_record(dir: &Path, secrets: &Secrets) -> PathBuf {
    let path = dir.join("secrets").join(format!("{}.tsv", unique()));
    write_private(&path, secrets_record(secrets).as_bytes());
    path
}

/// Record a fresh set of secrets (called by [`Secrets::generate`]).
pub(crate) fn record_secrets(secrets: &Secrets) {
    if let Some(dir) = collect_dir() {
        write_secrets_record(dir, secrets);
    }
}

/// Record a finished command: its redacted description, and each stream unless
/// the test expects a value there: `Some("allowed")` for a control run
/// (`allow_secrets_in_*`), `Some("planted")` for the harness's own test of the
/// leak check (`planted_leak`).
pub(crate) fn record_command(description: &str, streams: [(&str, &[u8], Option<&str>); 2]) {
    let Some(dir) = collect_dir() else { return };
    let base = dir.join("out").join(origin()).join(unique());
    let with = |ext: &str| {
        let mut p = base.clone().into_os_string();
        p.push(".");
        p.push(ext);
        PathBuf::from(p)
    };
    write_private(&with("cmd"), description.as_bytes());
    for (stream, bytes, skip) in streams {
        if let Some(reason) = skip {
            let line = format!(
                "{}\t{reason}\t{} bytes\n",
                with(stream).strip_prefix(dir).unwrap_or(&base).display(),
                bytes.len()
            );
            append_private(&dir.join("skipped.tsv"), line.as_bytes());
        } else {
            write_private(&with(stream), bytes);
        }
    }
}

fn append_private(path: &Path, bytes: &[u8]) {
    // One write per line with O_APPEND: lines of parallel tests do not interleave.
    let written = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(bytes));
    if let Err(e) = written {
        broken(format!("cannot write {}: {e}", path.display()));
    }
}

/// Copy a file a test read or a tool wrote into the collection (no-op when
/// collection is off, or when the file cannot be read).
pub fn collect_file(path: &Path) {
    let Some(dir) = collect_dir() else { return };
    let Ok(bytes) = std::fs::read(path) else {
        return;
    };
    let name = path
        .file_name()
        .map(|n| component(&n.to_string_lossy()))
        .unwrap_or_else(|| "file".into());
    let dst = dir
        .join("files")
        .join(origin())
        .join(format!("{}-{name}", unique()));
    write_private(&dst, &bytes);
}

/// Collect, from a sandbox about to be removed, the files envshim's tools wrote
/// there: `*.log`, `*.jsonl`, and every file under a directory named `envshim`.
pub(crate) fn collect_sandbox(root: &Path) {
    if collect_dir().is_none() {
        return;
    }
    fn walk(dir: &Path, in_envshim: bool, depth: usize) {
        if depth > 12 {
            return;
        }
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            let path = e.path();
            let name = e.file_name();
            let name = name.to_string_lossy();
            if ft.is_dir() {
                walk(&path, in_envshim || name == "envshim", depth + 1);
            } else if ft.is_file()
                && (in_envshim || name.ends_with(".log") || name.ends_with(".jsonl"))
            {
                collect_file(&path);
            }
        }
    }
    walk(root, false, 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_are_tame() {
        assert_eq!(component("a::b c"), "a__b_c");
        assert_eq!(component(".."), "_..");
        assert_eq!(component(""), "_");
    }

    #[test]
    fn record_has_every_needle() {
        let s = Secrets::from_rng(&mut crate::rng::Rng::with_seed(7));
        let rec = secrets_record(&s);
        assert_eq!(rec.lines().count(), crate::secrets::SECRET_NAMES.len());
        assert!(rec.contains(&format!(
            "GH_TOKEN\tGithubClassic\t{}\n",
            s.value("GH_TOKEN")
        )));
        // For the URL, the password is the needle.
        assert!(!rec.contains("https://"));
    }
}
