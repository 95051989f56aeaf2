//! Helpers for the end-to-end tests of `libenvshim.so` (tests/tests/shim_*.rs):
//! preloading the shim into a [`TestCommand`], pointing it at a policy, staging an
//! example policy (with the files it imports) inside a sandbox, reading the shim's
//! one-line messages from stderr, and a few policies and programs the tests share.

use std::path::{Path, PathBuf};

use crate::artifacts::{shim_so, workspace_root};
use crate::command::TestCommand;
use crate::sandbox::Sandbox;

/// A policy that refuses nothing: no credential names, no shapes, argv secrets
/// allowed, unsafe names kept, sticky on. With it the shim must be invisible.
pub const PERMISSIVE_POLICY: &str = r#"version = 1
base = "all"
unsafe = "keep"
sticky = true

[credentials]
builtin = false
shapes = false

[argv]
secrets = "allow"
"#;

/// The shim's program name in its messages: every line it writes starts with this.
pub const SHIM_PREFIX: &str = "envshim: ";

/// Preloading the shim (and choosing its policy) on a [`TestCommand`].
pub trait ShimExt {
    /// `LD_PRELOAD=<libenvshim.so>` (absolute path).
    fn with_shim(&mut self) -> &mut Self;
    /// `ENVSHIM_POLICY=<path>`, and `ENVSHIM_CACHE_DIR=<policy's directory>/.cache/envshim`,
    /// so the compiled cache the shim keeps for the policy lives beside it (in the
    /// sandbox) rather than in the user's cache directory.
    fn with_policy(&mut self, policy: impl AsRef<Path>) -> &mut Self;
}

impl ShimExt for TestCommand {
    fn with_shim(&mut self) -> &mut Self {
        self.env("LD_PRELOAD", shim_so())
    }

    fn with_policy(&mut self, policy: impl AsRef<Path>) -> &mut Self {
        // The shim compiles a policy file through the envwrap beside it: on a
        // fresh clone, a test that runs before any other built envwrap would
        // otherwise get the fail-closed floor.
        let _ = crate::artifacts::envwrap_bin();
        let policy = policy.as_ref();
        if let Some(dir) = policy.parent() {
            self.env("ENVSHIM_CACHE_DIR", dir.join(".cache/envshim"));
        }
        self.env("ENVSHIM_POLICY", policy)
    }
}

/// The shim's path as a child should see it in `LD_PRELOAD`.
pub fn shim_path_string() -> String {
    shim_so().to_string_lossy().into_owned()
}

/// The lines of `stderr` the shim wrote (they start with `envshim: `), but for
/// the once-per-tree line that a credential was withheld ([`withheld_lines`]),
/// which tests/tests/withheld.rs tests: the other tests check the shim's other
/// messages, and a child that a credential was withheld from has that line.
pub fn shim_lines(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| l.starts_with(SHIM_PREFIX) && !is_withheld_line(l))
        .map(str::to_string)
        .collect()
}

/// Says a line that a credential was withheld
/// (`NAME withheld from PROGRAM and what it starts (...)`)?
pub fn is_withheld_line(line: &str) -> bool {
    line.contains(" withheld from ")
        && line.contains(" and what it starts (a credential; envwrap explain ")
}

/// The withheld lines of `stderr` that start with `prefix` (`envshim: ` or
/// `envwrap: `).
pub fn withheld_lines(stderr: &[u8], prefix: &str) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| l.starts_with(prefix) && is_withheld_line(l))
        .map(str::to_string)
        .collect()
}

/// Copy `examples/<name>` into the sandbox, with the `examples/<stem>/` directory of
/// files it imports when there is one (loop.toml imports loop/env and
/// loop/config.json); returns the copied policy's path.
#[track_caller]
pub fn stage_example(sb: &Sandbox, name: &str) -> PathBuf {
    let examples = workspace_root().join("examples");
    let src = examples.join(name);
    let dst = sb.write(
        name,
        std::fs::read(&src).unwrap_or_else(|e| panic!("read {}: {e}", src.display())),
    );
    let stem = Path::new(name)
        .file_stem()
        .expect("example has a name")
        .to_owned();
    let dir = examples.join(&stem);
    if dir.is_dir() {
        copy_dir(&dir, &sb.join(&stem));
    }
    dst
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("mkdir {}: {e}", to.display()));
    for e in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let e = e.expect("dir entry");
        let target = to.join(e.file_name());
        if e.file_type().expect("file type").is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target)
                .unwrap_or_else(|err| panic!("copy {}: {err}", e.path().display()));
        }
    }
}

/// A python3 to run: `/usr/bin/python3` when present (a real binary, not a pyenv
/// shell shim), else the first `python3` on PATH.
pub fn python3() -> PathBuf {
    let system = PathBuf::from("/usr/bin/python3");
    if system.exists() {
        return system;
    }
    PathBuf::from("python3")
}

/// Quote one argument for `/bin/sh`: always single quotes (safe for any bytes but NUL).
pub fn sh_quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', r"'\''"))
}

/// The first `errno=N` a test C program printed on stderr (`... failed: errno=N`).
pub fn reported_errno(stderr: &[u8]) -> Option<i32> {
    let s = String::from_utf8_lossy(stderr);
    let at = s.find("errno=")?;
    s[at + 6..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect::<String>()
        .parse()
        .ok()
}

/// Give `path` to a group other than the user's private one, so that group write
/// means someone else may write it (`envpolicy::writers`): as root, `nogroup`;
/// otherwise a supplementary group of this process. False when there is none.
pub fn give_to_a_shared_group(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: geteuid and getgroups have no preconditions; the buffer is as long
    // as the count passed.
    let (euid, groups) = unsafe {
        let mut g = [0 as libc::gid_t; 64];
        let n = libc::getgroups(g.len() as i32, g.as_mut_ptr());
        (libc::geteuid(), g[..n.max(0) as usize].to_vec())
    };
    let private = private_group();
    let candidates = if euid == 0 { vec![65534, 100] } else { groups };
    let Some(gid) = candidates.into_iter().find(|&g| Some(g) != private) else {
        return false;
    };
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; uid -1 leaves the owner alone.
    unsafe { libc::chown(c.as_ptr(), u32::MAX, gid) == 0 }
}

/// The user's private group as envpolicy sees it (`getent group`: the user's
/// primary group, named after the user, with no other member).
pub fn private_group() -> Option<u32> {
    let out = std::process::Command::new("id").arg("-gn").output().ok()?;
    let user = std::process::Command::new("id").arg("-un").output().ok()?;
    let (group, user) = (
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
        String::from_utf8_lossy(&user.stdout).trim().to_string(),
    );
    let entry = std::process::Command::new("getent")
        .args(["group", &group])
        .output()
        .ok()?;
    let entry = String::from_utf8_lossy(&entry.stdout).trim().to_string();
    let fields: Vec<&str> = entry.split(':').collect();
    let members = fields.get(3).copied().unwrap_or("");
    let private = group == user && members.split(',').all(|m| m.is_empty() || m == user);
    private.then(|| fields.get(2)?.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(sh_quote("a'b"), r"'a'\''b'");
        assert_eq!(
            reported_errno(b"x\nspawner: execve failed: errno=7 (E2BIG)\n"),
            Some(7)
        );
        assert_eq!(reported_errno(b"nothing"), None);
        assert_eq!(
            shim_lines(b"a\nenvshim: refused to run x\nb: envshim: no\n"),
            ["envshim: refused to run x"]
        );
    }
}
