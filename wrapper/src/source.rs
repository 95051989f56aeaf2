//! Which policy applies, loaded and named for messages.
//!
//! The lookup order is envpolicy's (`load::locate`): `--policy FILE`, then
//! `ENVSHIM_POLICY`, then `$XDG_CONFIG_HOME/envshim/policy.toml`, then
//! `/etc/envshim/policy.toml`, then the built-in default (which
//! `ENVSHIM_POLICY=:builtin` also names). Unlike the shim, which
//! falls back to the strict floor, envwrap reports a bad policy as its own error
//! (exit 125): the operator is there to read the message.

use crate::exit::{Failure, OWN_ERROR};
use envpolicy::load::{self, Compiled, Source};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A loaded policy and where it came from.
pub struct Loaded {
    pub source: Source,
    pub compiled: Compiled,
}

impl Loaded {
    /// How messages name the policy: its path, or "the built-in policy".
    pub fn name(&self) -> String {
        match self.source.path() {
            Some(p) => envpolicy::error::shown(p),
            None => "the built-in policy".to_string(),
        }
    }

    /// For the end of a warning: "policy FILE", or "the built-in policy".
    pub fn label(&self) -> String {
        match self.source.path() {
            Some(p) => format!("policy {}", envpolicy::error::shown(p)),
            None => self.name(),
        }
    }

    /// The policy file as an absolute path, for `ENVSHIM_POLICY` in a child that
    /// may run in another directory. `None` for the built-in policy.
    pub fn absolute_path(&self) -> Option<PathBuf> {
        let p = self.source.path()?;
        Some(p.canonicalize().unwrap_or_else(|_| absolute(p)))
    }
}

impl Loaded {
    /// `ENVSHIM_POLICY=<absolute path>`, the entry that keeps a preloaded child on
    /// this policy; for the built-in policy, `ENVSHIM_POLICY=:builtin`
    /// ([`envpolicy::lookup::BUILTIN_POLICY_ENTRY`]), which keeps it on the built-in
    /// default whatever policy file a descendant names or its lookup would find.
    pub fn policy_entry(&self) -> Option<Vec<u8>> {
        let Some(p) = self.absolute_path() else {
            let entry = envpolicy::lookup::BUILTIN_POLICY_ENTRY;
            return Some(entry.strip_suffix(b"\0").unwrap_or(entry).to_vec());
        };
        let mut e = envpolicy::shared::POLICY_ENTRY.to_vec();
        e.extend_from_slice(p.as_os_str().as_bytes());
        Some(e)
    }
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        return p.to_path_buf();
    }
    std::env::current_dir()
        .map(|d| d.join(p))
        .unwrap_or_else(|_| p.to_path_buf())
}

/// Locate and load the policy. `getenv` reads envwrap's own environment.
pub fn load(
    explicit: Option<&Path>,
    getenv: impl Fn(&str) -> Option<OsString>,
) -> Result<Loaded, Failure> {
    let source = load::locate(explicit, getenv);
    let compiled =
        load::load_source(&source).map_err(|e| Failure::new(OWN_ERROR, e.to_string()))?;
    Ok(Loaded { source, compiled })
}

/// envwrap's own environment variable, for `load`.
pub fn own_getenv(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}
