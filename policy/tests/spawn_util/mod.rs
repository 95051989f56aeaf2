//! Helpers shared by the tests of `envpolicy::spawn` (spawn_std.rs, spawn_tokio.rs,
//! spawn_pty.rs): the policies, a token-shaped fake value, and reading a child's
//! environment as `/proc/self/environ` showed it.
#![allow(dead_code)]

use envpolicy::Compiled;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// AgentMux's rule (examples/agentmux.toml) with the built-in credentials and
/// `argv.secrets = "refuse"`.
pub const POLICY: &str = r#"version = 1
base = "all"
strip = ["AGENTMUX_*"]
keep = ["AGENTMUX_PANE_ID"]

[set]
AGENTMUX_NESTED = "1"
AGENTMUX_BUILD_INFO = "spawn test build"
"#;

/// The same in audit mode.
pub fn audit_policy() -> String {
    POLICY.replace("base = \"all\"", "mode = \"audit\"\nbase = \"all\"")
}

/// The same with `argv.secrets = "redact"`.
pub fn redact_policy() -> String {
    format!("{POLICY}\n[argv]\nsecrets = \"redact\"\n")
}

pub fn compile(text: &str) -> Compiled {
    envpolicy::load::compile_text(text, Path::new("spawn-test.toml"))
        .unwrap_or_else(|e| panic!("policy did not compile: {e}"))
}

/// The value given to `GH_TOKEN` (refused by name).
pub const GH_VALUE: &str = "fake-gh-value-0123456789";

/// A GitHub token shape under an innocent name (refused by shape).
pub fn token() -> String {
    format!("ghp_{}", "a1B2".repeat(9))
}

/// The variables every test command starts from (after `env_clear`).
pub fn input_env() -> Vec<(&'static str, String)> {
    vec![
        ("PATH", "/usr/bin:/bin".into()),
        ("LANG", "C.UTF-8".into()),
        ("GH_TOKEN", GH_VALUE.into()),
        ("INNOCENT_NOTE", token()),
        ("AGENTMUX_PANE_ID", "3".into()),
        ("AGENTMUX_DATA_DIR", "/srv/agentmux".into()),
        ("AGENTMUX_NESTED", "0".into()),
    ]
}

/// What [`POLICY`] gives a child of [`input_env`].
pub fn expected_env() -> BTreeMap<String, String> {
    [
        ("PATH", "/usr/bin:/bin"),
        ("LANG", "C.UTF-8"),
        ("AGENTMUX_PANE_ID", "3"),
        ("AGENTMUX_NESTED", "1"),
        ("AGENTMUX_BUILD_INFO", "spawn test build"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// `NAME=VALUE\0...` (as /proc/PID/environ holds it) as a map; panics on a
/// duplicate name, which no front end may pass.
pub fn parse_environ(bytes: &[u8]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in bytes.split(|&b| b == 0).filter(|e| !e.is_empty()) {
        let e = String::from_utf8_lossy(e);
        let (k, v) = e.split_once('=').unwrap_or((&e, ""));
        assert!(
            out.insert(k.to_string(), v.to_string()).is_none(),
            "{k} passed twice"
        );
    }
    out
}

/// Neither `text` nor the names it could print holds a test value.
#[track_caller]
pub fn assert_no_value(what: &str, text: &str) {
    for v in [GH_VALUE.to_string(), token()] {
        assert!(!text.contains(&v), "{what} holds a value: {text}");
    }
}

/// A fresh, empty directory for one test.
pub fn temp_dir(tag: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let p = std::env::temp_dir().join(format!("envpolicy-spawn-{}-{tag}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}
