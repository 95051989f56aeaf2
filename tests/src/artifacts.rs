//! Where the things under test live: the workspace, its target directory, the built
//! `libenvshim.so` and `envwrap`, and the example policies. Missing artifacts panic with
//! the exact command that builds them.

use std::path::{Path, PathBuf};

/// The workspace root (the parent of this crate's directory).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// Cargo's target directory: `CARGO_TARGET_DIR` if set, else the ancestor of the
/// running test binary that holds cargo's `CACHEDIR.TAG`, else `<workspace>/target`.
pub fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        let dir = PathBuf::from(dir);
        return if dir.is_absolute() {
            dir
        } else {
            workspace_root().join(dir)
        };
    }
    if let Ok(exe) = std::env::current_exe() {
        for anc in exe.ancestors().skip(1) {
            if anc.join("CACHEDIR.TAG").is_file() {
                return anc.to_path_buf();
            }
        }
    }
    workspace_root().join("target")
}

fn locate(what: &str, env_var: &str, file: &str, build: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(env_var) {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "{env_var}={} does not name a file",
            p.display()
        );
        return p;
    }
    let target = target_dir();
    let candidates = [
        target.join("release").join(file),
        target.join("debug").join(file),
    ];
    for c in &candidates {
        if c.is_file() {
            return c.clone();
        }
    }
    panic!(
        "{what} not found; looked at {env_var} and {}.\nBuild it with:\n    {build}\n(or set {env_var} to its path)",
        candidates.iter().map(|c| c.display().to_string()).collect::<Vec<_>>().join(", ")
    );
}

/// `libenvshim.so`: `ENVSHIM_SO`, else target/release, else target/debug.
pub fn shim_so() -> PathBuf {
    locate(
        "libenvshim.so",
        "ENVSHIM_SO",
        "libenvshim.so",
        "cargo build --release -p envshim",
    )
}

/// The `envwrap` binary: `ENVWRAP_BIN`, else target/release, else target/debug.
pub fn envwrap_bin() -> PathBuf {
    locate(
        "envwrap",
        "ENVWRAP_BIN",
        "envwrap",
        "cargo build --release -p envwrap",
    )
}

/// `<workspace>/examples/<name>`; panics if it does not exist.
pub fn example_policy(name: &str) -> PathBuf {
    let p = workspace_root().join("examples").join(name);
    assert!(p.is_file(), "example policy {} does not exist", p.display());
    p
}
