//! Loading the managed layer (docs/adr/0020-managed-layer.md; the shared rules
//! are [`crate::layer`]) for the std front ends: envwrap, `--supervise` and the
//! Rust API ([`crate::spawn`]).
//!
//! Why here and in-process: the path is a constant ([`MANAGED_POLICY`]), so no
//! variable, flag, `XDG_CONFIG_HOME`, `ENVSHIM_POLICY` or user file can move,
//! skip or replace it, and these front ends compile its TOML themselves (they
//! never need [`crate::layer::MANAGED_COMPILED`], which is the shim's).
//!
//! What is found there ([`Managed`]):
//! - nothing (`ENOENT`): no managed layer, every exec is decided once;
//! - a file that root alone may write ([`crate::layer::trusted`], symbolic
//!   links followed), that compiles, and whose imports root alone may write:
//!   the managed pass uses it;
//! - anything else (untrusted, not a regular file, unreadable, unparsable, not
//!   compiling, an untrusted import): [`Managed::Broken`], whose pass uses the
//!   fail-closed floor ([`crate::load::builtin_floor`]), with one warning that
//!   names the file and the reason, never a value.

use crate::compiled::Policy;
use crate::layer::{self, Found, MANAGED_POLICY};
use crate::load::{self, Compiled};
use crate::outcome::Pass;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What the managed layer is on this host.
#[derive(Clone, Debug)]
pub enum Managed {
    /// No file at [`MANAGED_POLICY`]: no managed layer.
    Absent,
    /// A trusted file that compiles: the managed pass's policy.
    Usable { compiled: Compiled, path: PathBuf },
    /// A file that cannot be used: the managed pass uses `floor`, the
    /// fail-closed floor, and `warning` says why (once, by the front end).
    Broken { warning: String, floor: Compiled },
}

/// The managed layer's path, as a [`Path`].
pub fn policy_path() -> &'static Path {
    Path::new(OsStr::from_bytes(MANAGED_POLICY))
}

impl Managed {
    /// Load [`MANAGED_POLICY`] now (a front end that decides once: envwrap).
    pub fn load() -> Managed {
        load_at(policy_path())
    }

    /// The managed layer of this process, loaded at the first call and kept
    /// for its life (the Rust API: a change of the file is seen by the next
    /// process, as a user policy a program holds is).
    pub fn for_process() -> &'static Managed {
        static LOADED: std::sync::OnceLock<Managed> = std::sync::OnceLock::new();
        LOADED.get_or_init(Managed::load)
    }

    /// What was found, in the words every front end shares.
    pub fn found(&self) -> Found {
        match self {
            Managed::Absent => Found::Absent,
            Managed::Usable { .. } => Found::Usable,
            Managed::Broken { .. } => Found::Broken,
        }
    }

    /// The compiled policy of the managed pass: the file's, or the floor for a
    /// broken one; `None` without a managed layer.
    pub fn compiled(&self) -> Option<&Compiled> {
        match self {
            Managed::Absent => None,
            Managed::Usable { compiled, .. } => Some(compiled),
            Managed::Broken { floor, .. } => Some(floor),
        }
    }

    /// [`Managed::compiled`], borrowed for decisions.
    pub fn policy(&self) -> Option<Policy<'_>> {
        self.compiled().map(Compiled::policy)
    }

    /// The managed pass as every std front end runs it, its env files read
    /// now; `None` without a managed layer.
    pub fn in_force(&self) -> Option<InForce<'_>> {
        self.policy().map(|policy| InForce {
            env_files: crate::outcome::read_env_files(&policy),
            policy,
        })
    }

    /// Why a broken layer is not used (`managed policy FILE ...; using the
    /// fail-closed floor`): the one warning a front end prints.
    pub fn warning(&self) -> Option<&str> {
        match self {
            Managed::Broken { warning, .. } => Some(warning),
            _ => None,
        }
    }
}

/// The managed pass's policy and its env files' values, read once: what envwrap,
/// `--supervise` and the Rust API hand [`crate::outcome::Layers::managed`], so
/// that the three build it one way.
pub struct InForce<'m> {
    pub policy: Policy<'m>,
    pub env_files: Vec<Option<Vec<u8>>>,
}

impl<'m> InForce<'m> {
    /// This layer's pass, delivering `secrets` (the values of its own
    /// `[[secret]]`s read for this program; empty: none).
    pub fn pass<'a>(&'a self, secrets: &'a [Option<Vec<u8>>]) -> Pass<'a, 'm> {
        Pass {
            policy: &self.policy,
            env_files: &self.env_files,
            secrets,
        }
    }
}

/// [`Managed::load`] of the file at `path`: the one loader, which unit tests
/// call with a file of their own. No flag or variable reaches it.
pub(crate) fn load_at(path: &Path) -> Managed {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Managed::Absent,
        _ => {}
    }
    match usable(path) {
        Ok(compiled) => Managed::Usable {
            compiled,
            path: path.to_path_buf(),
        },
        Err(why) => Managed::Broken {
            warning: format!(
                "managed policy {}: {why}; using the fail-closed floor for the managed layer",
                crate::error::shown(path)
            ),
            floor: load::builtin_floor(),
        },
    }
}

/// The compiled managed layer, or why it cannot be used (no value in it: the
/// compiler's messages name keys and places only).
pub fn usable(path: &Path) -> Result<Compiled, String> {
    check_trusted(path, false)?;
    let text = load::read_policy_text(path).map_err(|e| e.to_string())?;
    let compiled = load::compile_text(&text, path).map_err(|e| e.to_string())?;
    for dep in deps(&compiled.policy()) {
        if dep != path {
            check_trusted(&dep, true)
                .map_err(|why| format!("{} ({})", why, crate::error::shown(&dep)))?;
        }
    }
    Ok(compiled)
}

/// Every file a compiled policy was built from: the policy and its imports.
pub fn deps(policy: &Policy<'_>) -> Vec<PathBuf> {
    (0..policy.count(crate::compiled::sec::DEPS) as u32)
        .filter_map(|i| policy.dep(i))
        .map(|d| {
            let p = policy.str(d.path);
            PathBuf::from(OsStr::from_bytes(p.strip_suffix(b"\0").unwrap_or(p)))
        })
        .collect()
}

/// `path` (symbolic links followed) passes [`layer::trusted`]; a path that
/// is not there passes (an optional import that is missing: its read says so).
fn check_trusted(path: &Path, import: bool) -> Result<(), String> {
    let what = if import {
        "imports a file that is"
    } else {
        "is"
    };
    let md = match std::fs::metadata(path) {
        Ok(md) => md,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && import => return Ok(()),
        Err(e) => return Err(format!("cannot stat: {}", crate::error::io_reason(&e))),
    };
    if !import && !md.is_file() {
        return Err("is not a regular file".into());
    }
    layer::trusted(md.uid(), md.gid(), md.mode()).map_err(|why| match why {
        crate::writers::Untrusted::Writable { mode } => format!(
            "{what} not trusted: writable by group or others (mode {:04o}); only root may write it",
            mode & 0o7777
        ),
        _ => format!(
            "{what} not trusted: not owned by root (uid {}); only root may write it",
            md.uid()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn temp(name: &str, text: &str, mode: u32) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("managed-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("managed.toml");
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    #[test]
    fn a_missing_file_is_no_layer() {
        let p = std::env::temp_dir().join("managed-none/managed.toml");
        assert!(matches!(load_at(&p), Managed::Absent));
    }

    #[test]
    fn a_usable_file_or_the_floor_with_one_reason() {
        let text = "version = 1\nstrip = [\"AWS_*\"]\n";
        // Root-owned temp files are the managed layer's owner; run as another
        // user, the same file is untrusted (owner).
        let root = crate::trust::effective_uid() == 0;
        let ok = load_at(&temp("ok", text, 0o644));
        assert_eq!(ok.found(), if root { Found::Usable } else { Found::Broken });
        let group = load_at(&temp("group", text, 0o664));
        assert_eq!(group.found(), Found::Broken);
        let w = group.warning().unwrap();
        assert!(
            w.contains("managed.toml") && w.contains("not trusted"),
            "{w}"
        );
        let bad = load_at(&temp("bad", "version = 1\nkeep = \"TOKEN_x\"\n", 0o644));
        assert_eq!(bad.found(), Found::Broken);
        assert!(!bad.warning().unwrap().contains("TOKEN_x"));
        assert!(bad.policy().is_some());
    }
}
