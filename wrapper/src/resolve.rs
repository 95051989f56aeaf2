//! Finding a command the way env(1) does: through `execvp`'s PATH search.
//!
//! A command holding `/` is used as given. A bare name is looked up in each
//! directory of PATH (an empty entry is the current directory); PATH unset means
//! glibc's default `/bin:/usr/bin`. A file that exists but cannot be executed is
//! remembered and the search goes on; if nothing executable is found, that file
//! makes the result "cannot execute" (126) rather than "not found" (127), as with
//! execvp's EACCES.

use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// glibc's PATH when the variable is unset.
pub const DEFAULT_PATH: &[u8] = b"/bin:/usr/bin";

/// The outcome of a PATH search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// Run this file.
    Found(PathBuf),
    /// Found only files that cannot be executed (the first of them).
    NotExecutable(PathBuf),
    /// Nothing of that name.
    NotFound,
}

/// Resolve `command` against `path` (the PATH value; `None` when unset).
pub fn resolve(command: &[u8], path: Option<&[u8]>) -> Resolved {
    if command.contains(&b'/') {
        return Resolved::Found(PathBuf::from(OsStr::from_bytes(command)));
    }
    if command.is_empty() {
        return Resolved::NotFound;
    }
    let mut denied = None;
    for dir in path.unwrap_or(DEFAULT_PATH).split(|&b| b == b':') {
        let dir = if dir.is_empty() { &b"."[..] } else { dir };
        let candidate = Path::new(OsStr::from_bytes(dir)).join(OsStr::from_bytes(command));
        let Ok(meta) = std::fs::metadata(&candidate) else {
            continue;
        };
        if meta.is_file() && executable(&candidate) {
            return Resolved::Found(candidate);
        }
        denied.get_or_insert(candidate);
    }
    match denied {
        Some(p) => Resolved::NotExecutable(p),
        None => Resolved::NotFound,
    }
}

/// access(2) with X_OK: may this process execute the file?
pub fn executable(path: &Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call; access(2)
    // only reads it.
    unsafe { libc::access(c.as_ptr(), libc::X_OK) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn searches_path() {
        assert_eq!(
            resolve(b"sh", Some(b"/nonexistent::/bin")),
            Resolved::Found(PathBuf::from("/bin/sh"))
        );
        assert_eq!(
            resolve(b"no-such-command-envwrap", Some(b"/bin")),
            Resolved::NotFound
        );
        assert_eq!(resolve(b"./x", None), Resolved::Found(PathBuf::from("./x")));
        assert_eq!(resolve(b"", None), Resolved::NotFound);
    }
}
