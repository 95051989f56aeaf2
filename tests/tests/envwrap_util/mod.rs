//! Helpers shared by the `envwrap_*` tests: the envwrap command in a sandbox, a
//! permissive policy (so envwrap can be compared with env(1) byte for byte), the
//! static build's path, and the CI rule for skipping (a missing tool skips a test
//! with a message on a developer's machine, and fails it in CI).
#![allow(dead_code)]

use std::path::PathBuf;

use envshim_e2e::*;

/// A policy that changes nothing: no credential names or shapes, unsafe names kept,
/// argv neither searched nor rewritten. Under it envwrap must behave exactly like env(1).
pub const PERMISSIVE: &str = r#"version = 1
base = "all"
unsafe = "keep"

[credentials]
builtin = false
shapes = false

[argv]
secrets = "allow"
env_flags = false
"#;

/// `envwrap` in the sandbox, with its secrets attached.
pub fn envwrap(sb: &Sandbox) -> TestCommand {
    let mut c = sb.cmd(envwrap_bin());
    // A shim the child loads keeps its compiled policy cache in the sandbox.
    c.env("ENVSHIM_CACHE_DIR", sb.join(".cache/envshim"));
    c
}

/// Write the permissive policy into the sandbox; returns its path.
pub fn permissive(sb: &Sandbox) -> PathBuf {
    sb.write("permissive.toml", PERMISSIVE)
}

/// True in CI (`CI` is set), where a missing prerequisite is a failure.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty())
}

/// Proceed when `ok`; otherwise skip with `why` (return false), or fail in CI.
#[track_caller]
pub fn require(ok: bool, why: &str) -> bool {
    if ok {
        return true;
    }
    if in_ci() {
        panic!("{why} (required in CI)");
    }
    eprintln!("SKIPPED: {why}");
    false
}

/// libenvshim.so beside the envwrap under test (where `--preload` looks).
pub fn shim_beside_envwrap() -> Option<PathBuf> {
    let p = envwrap_bin().parent()?.join("libenvshim.so");
    p.is_file().then_some(p)
}

/// Are we root (chroot, setuid copies of other users, reading as another user)?
pub fn is_root() -> bool {
    // SAFETY: geteuid(2) cannot fail and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

/// stdout and stderr of an outcome, lossily, for assertions.
pub fn both(o: &Outcome) -> String {
    format!("{}{}", o.stdout_str(), o.stderr_str())
}

/// Assert that `text` contains `needle`, with the (redacted) report on failure.
#[track_caller]
pub fn expect_in(o: &Outcome, text: &str, needle: &str) {
    if !text.contains(needle) {
        o.fail(&format!("expected the output to contain {needle:?}"));
    }
}
