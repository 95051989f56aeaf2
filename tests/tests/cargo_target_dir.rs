//! Cargo's own settings are honoured: the scripts that build or pick up the
//! artifacts (ci/build-static, ci/install, the Makefile) and the harness look
//! for them in the target directory cargo computes (`cargo metadata`'s
//! `target_directory`: `CARGO_TARGET_DIR`, else `build.target-dir` of a
//! .cargo/config.toml, else `target/`), never in `target/` by assumption.
//!
//! Cheap: no test here builds the workspace again in another target
//! directory. ci/build-static runs with a `cargo` first in PATH that passes
//! every command to the real cargo (`cargo metadata` among them) but `build`,
//! which puts the static envwrap the suite built already where cargo's build
//! would put it; what is tested is where the script looks, and what it says.
//! `CARGO_BUILD_TARGET_DIR` is cargo's environment form of `build.target-dir`
//! (a config setting, which `${CARGO_TARGET_DIR:-target}` misses).

use std::path::{Path, PathBuf};

use envshim_e2e::*;

const STATIC_TARGET: &str = "x86_64-unknown-linux-gnu";

/// The real cargo: the one running these tests, else the first in PATH.
fn real_cargo() -> PathBuf {
    if let Some(cargo) = std::env::var_os("CARGO") {
        return PathBuf::from(cargo);
    }
    let o = std::process::Command::new("sh")
        .args(["-c", "command -v cargo"])
        .output()
        .expect("sh runs");
    assert!(o.status.success(), "no cargo in PATH");
    PathBuf::from(String::from_utf8(o.stdout).unwrap().trim())
}

/// A directory holding a `cargo` that runs the real one for everything but
/// `build`, which copies `static_envwrap` to `DIR/TARGET/release/envwrap`
/// (DIR as cargo picks it from these two settings) and notes the target in
/// `cargo-builds` in the sandbox. Returns the PATH to run the scripts with.
fn stub_cargo_path(sb: &Sandbox, static_envwrap: &Path) -> String {
    let script = format!(
        r#"#!/bin/sh
[ "$1" = build ] || exec '{real}' "$@"
target=
while [ $# -gt 0 ]; do
    [ "$1" = --target ] && {{ target=$2; shift; }}
    shift
done
dir=${{CARGO_TARGET_DIR:-${{CARGO_BUILD_TARGET_DIR:?}}}}
mkdir -p "$dir/$target/release"
cp '{bin}' "$dir/$target/release/envwrap"
echo "$target" >> '{log}'
"#,
        real = real_cargo().display(),
        bin = static_envwrap.display(),
        log = sb.join("cargo-builds").display(),
    );
    sb.write_executable("stub-bin/cargo", script);
    format!(
        "{}:{}",
        sb.join("stub-bin").display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// ci/build-static, run from the workspace with `path` and one target-dir
/// setting (the other removed).
fn build_static(sb: &Sandbox, path: &str, setting: &str, dir: &Path) -> Outcome {
    let mut c = sb.cmd(workspace_root().join("ci/build-static"));
    c.current_dir(workspace_root())
        .env("PATH", path)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR")
        .env(setting, dir);
    c.run()
}

#[test]
fn build_static_looks_for_its_binary_where_cargo_put_it() {
    let real = static_envwrap_bin();
    let sb = Sandbox::new("cargo_target_dir_static");
    let path = stub_cargo_path(&sb, &real);
    for setting in ["CARGO_TARGET_DIR", "CARGO_BUILD_TARGET_DIR"] {
        let dir = sb.join(format!("target-{setting}"));
        let o = build_static(&sb, &path, setting, &dir);
        let bin = dir.join(STATIC_TARGET).join("release").join("envwrap");
        assert!(
            o.status.success(),
            "{setting}: ci/build-static failed:\n{}",
            o.report()
        );
        assert!(
            bin.is_file(),
            "{setting}: cargo's build made no {}",
            bin.display()
        );
        assert!(
            o.stdout_str()
                .lines()
                .any(|l| l == format!("build-static: {}", bin.display())),
            "{setting}: ci/build-static does not name {}:\n{}",
            bin.display(),
            o.report()
        );
    }
    let builds = std::fs::read_to_string(sb.join("cargo-builds")).unwrap_or_default();
    assert!(
        builds.lines().filter(|t| *t == STATIC_TARGET).count() == 2,
        "ci/build-static did not build for {STATIC_TARGET} through cargo: {builds:?}"
    );
    // The target directory printed for the other scripts (the Makefile,
    // ci/install, ci/package) is cargo's too.
    let dir = sb.join("printed");
    let mut c = sb.cmd(workspace_root().join("ci/build-static"));
    let o = c
        .arg("--print-target-dir")
        .current_dir(workspace_root())
        .env_remove("CARGO_TARGET_DIR")
        .env("CARGO_BUILD_TARGET_DIR", &dir)
        .expect_success();
    assert_eq!(o.stdout_str().trim_end(), dir.display().to_string());
}

/// `install` copies bytes: a marker after the end of each artifact (an ELF
/// file runs with bytes after its end) tells which copy was installed.
const MARK: &[u8] = b"\0envshim-e2e: from the target directory cargo names\0";

fn marked_copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    let mut bytes = std::fs::read(from).unwrap();
    bytes.extend_from_slice(MARK);
    std::fs::write(to, bytes).unwrap();
    std::fs::set_permissions(to, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

#[test]
fn install_and_make_take_the_artifacts_from_the_target_dir_cargo_names() {
    let (shim, wrap) = (shim_so(), static_envwrap_bin());
    let sb = Sandbox::new("cargo_target_dir_install");
    // The config form (build.target-dir), which `${CARGO_TARGET_DIR:-target}`
    // misses.
    let dir = sb.join("config-target");
    let (dir_shim, dir_wrap) = (
        dir.join("release").join("libenvshim.so"),
        dir.join(STATIC_TARGET).join("release").join("envwrap"),
    );
    marked_copy(&shim, &dir_shim);
    marked_copy(&wrap, &dir_wrap);
    let prefix = sb.join("prefix");
    sb.cmd(workspace_root().join("ci/install"))
        .arg(&prefix)
        .current_dir(workspace_root())
        .env("ENVSHIM_INSTALL_NO_BUILD", "1")
        .env_remove("CARGO_TARGET_DIR")
        .env("CARGO_BUILD_TARGET_DIR", &dir)
        .expect_success();
    for installed in ["lib/envshim/libenvshim.so", "lib/envshim/envwrap"] {
        let bytes = std::fs::read(prefix.join(installed)).unwrap();
        assert!(
            bytes.ends_with(MARK),
            "{installed} was not taken from {}",
            dir.display()
        );
    }

    // `make install` checks that both are built, then runs ci/install: with
    // -n it only says so (the check runs; both are there, so no build).
    let o = sb
        .cmd("make")
        .args(["-n", "install"])
        .arg(format!("PREFIX={}", prefix.display()))
        .current_dir(workspace_root())
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env("CARGO_BUILD_TARGET_DIR", &dir)
        .expect_success();
    for artifact in [&dir_shim, &dir_wrap] {
        assert!(
            o.stdout_str().contains(&artifact.display().to_string()),
            "make install does not look for {}:\n{}",
            artifact.display(),
            o.report()
        );
    }
    assert!(
        !o.stdout_str().contains("cargo build"),
        "make install would build again:\n{}",
        o.report()
    );
}

/// The harness's target directory is the one `cargo metadata` names for the
/// environment the tests run in (unless a relative CARGO_TARGET_DIR makes it
/// depend on the directory cargo test was started from: the harness then
/// goes by where the test binary is).
#[test]
fn the_harness_uses_the_target_dir_cargo_names() {
    if std::env::var_os("CARGO_TARGET_DIR").is_some_and(|d| !Path::new(&d).is_absolute()) {
        eprintln!("SKIPPED: CARGO_TARGET_DIR is relative");
        return;
    }
    let named = artifacts::cargo_target_directory(&workspace_root())
        .expect("cargo metadata names a target directory");
    assert_eq!(
        target_dir().canonicalize().unwrap(),
        named.canonicalize().unwrap()
    );
    assert!(shim_so().starts_with(target_dir()));
}
