//! `--preload`: put libenvshim.so into the child so that every program the child
//! starts is policed too, not only the child itself.
//!
//! The shim is found beside envwrap's own executable (an install puts the two in
//! one directory; `PREFIX/bin/envwrap` is a symlink to it). By default it is added
//! when it is there and the target is dynamically linked (for a script: its
//! interpreter), because only then does the loader read `LD_PRELOAD`.
//! `--preload` adds it whatever the target is (a static program's dynamically
//! linked children still load it); `--no-preload` never does.
//!
//! What is added: the shim's path, first in `LD_PRELOAD`, and
//! `ENVSHIM_POLICY=<absolute policy path>` so the shim in every descendant applies
//! the same policy (`ENVSHIM_POLICY=:builtin` for the built-in policy, so that no
//! descendant can name a policy file for its subtree, or have the lookup find one).
//! In enforce mode with `sticky = true` the policy decision already did this (rule
//! 7); [`ensure`] makes it hold in audit mode and with `sticky = false` as well.

use crate::elf::{self, Kind};
use crate::environ;
use crate::exit::{Failure, OWN_ERROR};
use envpolicy::decide;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The file name of the shim.
pub const SHIM_NAME: &str = "libenvshim.so";

/// What the options asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    /// Neither `--preload` nor `--no-preload`.
    Auto,
    On,
    Off,
}

/// libenvshim.so beside envwrap's executable, if it is there.
pub fn shim_beside_envwrap() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let shim = exe.parent()?.join(SHIM_NAME);
    shim.is_file().then_some(shim)
}

/// Is `program` dynamically linked (for a script: its interpreter)?
pub fn is_dynamic(program: &Path) -> bool {
    match elf::probe(program) {
        Ok(Kind::Elf(f)) => f.is_dynamic(),
        Ok(Kind::Script { interpreter }) => {
            matches!(elf::probe(&interpreter), Ok(Kind::Elf(f)) if f.is_dynamic())
        }
        _ => false,
    }
}

/// The shim to add for this run, and a warning to print, if any.
pub fn plan(
    want: Want,
    program: &Path,
    name: &str,
) -> Result<(Option<PathBuf>, Option<String>), Failure> {
    match want {
        Want::Off => Ok((None, None)),
        Want::Auto => Ok((shim_beside_envwrap().filter(|_| is_dynamic(program)), None)),
        Want::On => {
            let Some(shim) = shim_beside_envwrap() else {
                let looked = std::env::current_exe()
                    .ok()
                    .and_then(|e| e.parent().map(|d| d.join(SHIM_NAME).display().to_string()))
                    .unwrap_or_else(|| format!("beside envwrap ({SHIM_NAME})"));
                return Err(Failure::new(
                    OWN_ERROR,
                    format!("--preload: {SHIM_NAME} is not installed beside envwrap (looked for {looked})"),
                ));
            };
            let warning = (!is_dynamic(program)).then(|| {
                format!(
                    "--preload: {name} is not dynamically linked, so the shim cannot load into it; \
                     the dynamically linked programs it starts will load it"
                )
            });
            Ok((Some(shim), warning))
        }
    }
}

/// Make `env` carry the shim: its path first in `LD_PRELOAD` (unless already
/// listed), and `policy_entry` (`ENVSHIM_POLICY=...`) replacing any entry of that
/// name.
pub fn ensure(env: &mut Vec<Vec<u8>>, shim: &Path, policy_entry: Option<&[u8]>) {
    let shim = shim.as_os_str().as_bytes();
    let current = environ::get(env, b"LD_PRELOAD").map(<[u8]>::to_vec);
    if !current
        .as_deref()
        .is_some_and(|v| decide::preload_lists(v, shim))
    {
        let mut value = Vec::new();
        decide::put_preload_with_shim(shim, current.as_deref(), |p| value.extend_from_slice(p));
        environ::set(env, b"LD_PRELOAD", &value);
    }
    if let Some(entry) = policy_entry {
        let name = environ::name(entry);
        let value = &entry[name.len() + 1..];
        environ::set(env, name, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ensure_is_idempotent() {
        let mut env = vec![b"LD_PRELOAD=/x.so".to_vec(), b"A=1".to_vec()];
        ensure(
            &mut env,
            Path::new("/s/libenvshim.so"),
            Some(b"ENVSHIM_POLICY=/p.toml"),
        );
        assert_eq!(env[0], b"LD_PRELOAD=/s/libenvshim.so:/x.so");
        assert_eq!(env[2], b"ENVSHIM_POLICY=/p.toml");
        let again = env.clone();
        ensure(
            &mut env,
            Path::new("/s/libenvshim.so"),
            Some(b"ENVSHIM_POLICY=/p.toml"),
        );
        assert_eq!(env, again);
        let mut empty = Vec::new();
        ensure(&mut empty, Path::new("/s/libenvshim.so"), None);
        assert_eq!(empty, vec![b"LD_PRELOAD=/s/libenvshim.so".to_vec()]);
    }

    #[test]
    fn dynamic_probe() {
        assert!(is_dynamic(Path::new("/bin/sh")));
        assert!(!is_dynamic(Path::new("/nonexistent")));
    }
}
