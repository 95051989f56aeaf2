//! Where the things under test live: the workspace, its target directory, the built
//! `libenvshim.so` and `envwrap`, and the example policies.
//!
//! The tests build what they run, as ripgrep's tests get their binary: the first
//! test of a process that needs an artifact runs the README's build command for it
//! (`cargo build --release -p envshim`, `-p envwrap`, and `ci/build-static` for
//! the static envwrap) when the artifact is missing or older than a source it is
//! built from, so a plain `cargo test` on a fresh clone works. Cargo's own lock on the target directory serialises test processes
//! that build at once. `ENVSHIM_SO` and `ENVWRAP_BIN` name other builds, which are
//! used as they are.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;

/// The workspace root (the parent of this crate's directory).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// Cargo's target directory, as cargo computed it for these tests: the
/// ancestor of the running test binary that holds cargo's `CACHEDIR.TAG` (the
/// directory cargo built this very binary in, whatever chose it:
/// `CARGO_TARGET_DIR`, `build.target-dir` of a .cargo/config.toml, or the
/// default; a relative `CARGO_TARGET_DIR` is relative to where cargo test was
/// started, which this process cannot know). Else, for a test binary run from
/// elsewhere, the one `cargo metadata` names ([`cargo_target_directory`]),
/// else `<workspace>/target`. Computed once per process.
pub fn target_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Ok(exe) = std::env::current_exe() {
            for anc in exe.ancestors().skip(1) {
                if anc.join("CACHEDIR.TAG").is_file() {
                    return anc.to_path_buf();
                }
            }
        }
        let root = workspace_root();
        cargo_target_directory(&root).unwrap_or_else(|| root.join("target"))
    })
    .clone()
}

/// The target directory that `cargo metadata` names for the workspace at
/// `root`, in this process's environment (`target_directory`: it honours
/// `CARGO_TARGET_DIR` and `build.target-dir`, as ci/build-static
/// `--print-target-dir` does); `None` when cargo cannot say.
pub fn cargo_target_directory(root: &Path) -> Option<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    // No JSON parser in the harness: the field is a plain string in one line;
    // a path holding `"` or `\` (escaped in JSON) is not read.
    let text = String::from_utf8(out.stdout).ok()?;
    let (_, rest) = text.split_once("\"target_directory\":\"")?;
    let (dir, _) = rest.split_once('"')?;
    (!dir.contains('\\')).then(|| PathBuf::from(dir))
}

fn locate(what: &str, env_var: &str, file: &str, package: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(env_var) {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "{env_var}={} does not name a file",
            p.display()
        );
        return p;
    }
    let built = target_dir().join("release").join(file);
    build_if_stale(package, &built);
    assert!(
        built.is_file(),
        "{what} not found at {} after building it",
        built.display()
    );
    built
}

/// The artifacts built in this process so far (each is checked once).
static CHECKED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Runs `cargo build --release -p PACKAGE` when `artifact` is missing or older than
/// a source file of the workspace's crates; once per package and process.
fn build_if_stale(package: &str, artifact: &Path) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = std::process::Command::new(&cargo);
    build.args(["build", "--release", "-p", package]);
    run_if_stale(
        &format!("cargo build --release -p {package}"),
        build,
        artifact,
    );
}

/// Runs `build` (named `what`, in the workspace, with this target directory)
/// when `artifact` is missing or older than a source file of the workspace's
/// crates; once per artifact and process.
fn run_if_stale(what: &str, mut build: std::process::Command, artifact: &Path) {
    let mut checked = CHECKED.lock().unwrap_or_else(|e| e.into_inner());
    let key = artifact.display().to_string();
    if checked.contains(&key) {
        return;
    }
    let built_at = std::fs::metadata(artifact).and_then(|m| m.modified()).ok();
    if built_at.is_none_or(|t| newest_source().is_some_and(|s| s > t)) {
        let status = build
            .current_dir(workspace_root())
            .env("CARGO_TARGET_DIR", target_dir())
            .status()
            .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
        assert!(status.success(), "{what} failed ({status})");
    }
    checked.push(key);
}

/// The newest modification time among the sources the artifacts are built from.
fn newest_source() -> Option<SystemTime> {
    let root = workspace_root();
    let roots = [
        "Cargo.toml",
        "Cargo.lock",
        "policy-core",
        "policy",
        "shim",
        "wrapper",
    ];
    crate::walk::files_under(roots.iter().map(|r| root.join(r)).collect(), |_| true)
        .iter()
        .filter_map(|(_, md)| md.modified().ok())
        .max()
}

/// `libenvshim.so`: `ENVSHIM_SO`, else target/release (built if stale).
pub fn shim_so() -> PathBuf {
    locate("libenvshim.so", "ENVSHIM_SO", "libenvshim.so", "envshim")
}

/// The `envwrap` binary: `ENVWRAP_BIN`, else target/release (built if stale).
pub fn envwrap_bin() -> PathBuf {
    locate("envwrap", "ENVWRAP_BIN", "envwrap", "envwrap")
}

/// The static envwrap (`ci/build-static`, which makes only envwrap static), at
/// `TARGET/x86_64-unknown-linux-gnu/release/envwrap` (TARGET: [`target_dir`],
/// which ci/build-static is given as `CARGO_TARGET_DIR`): built if stale, as the
/// other artifacts are, so the tests that need it (the static binary's own,
/// the package's) run on a fresh clone too.
pub fn static_envwrap_bin() -> PathBuf {
    let built = target_dir()
        .join("x86_64-unknown-linux-gnu")
        .join("release")
        .join("envwrap");
    let build = std::process::Command::new(workspace_root().join("ci/build-static"));
    run_if_stale("ci/build-static", build, &built);
    assert!(
        built.is_file(),
        "the static envwrap not found at {} after building it",
        built.display()
    );
    built
}

/// `<workspace>/examples/<name>`; panics if it does not exist.
pub fn example_policy(name: &str) -> PathBuf {
    let p = workspace_root().join("examples").join(name);
    assert!(p.is_file(), "example policy {} does not exist", p.display());
    p
}
