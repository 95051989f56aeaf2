//! The shim leaves no trace in a program's `HOME` (docs/adr/0012-cache-location.md).
//!
//! The compiled policy is kept outside `HOME` and `XDG_CACHE_HOME`, so a `HOME` that
//! is a git repository (as git's test suite makes it) stays clean, a `HOME` that does
//! not exist is not created, and a `HOME` that cannot be written, or that changes
//! between parent and child, changes nothing: no message, and the policy applies.
//!
//! These tests leave `ENVSHIM_CACHE_DIR` unset, so the cache goes where a user's
//! goes. Which policy is in force is read from `env` under the shim: the test
//! policy strips `MARK_A` and keeps `MARK_B`; the fail-closed floor keeps neither.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use envshim_e2e::*;

const POLICY: &str = "version = 1\nbase = \"all\"\nstrip = [\"MARK_A\"]\n";

/// `program` under the shim and the sandbox's policy, with `HOME` at `home`.
fn shimmed(sb: &Sandbox, home: &Path, program: &str) -> TestCommand {
    let policy = sb.join("policy.toml");
    if !policy.exists() {
        sb.write("policy.toml", POLICY);
    }
    let mut c = sb.cmd(program);
    c.with_shim()
        .env("ENVSHIM_POLICY", &policy)
        .env("ENVSHIM_ENVWRAP", envwrap_bin())
        .env("HOME", home)
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env("MARK_A", "a")
        .env("MARK_B", "b");
    c
}

/// The test policy was in force for the `env` whose output is `out`, and neither
/// the shim nor envwrap said anything.
fn policy_applied_quietly(out: &Outcome) {
    let stdout = out.stdout_str();
    let has = |n: &str| stdout.lines().any(|l| l.starts_with(&format!("{n}=")));
    out.check(
        !has("MARK_A") && has("MARK_B"),
        "the test policy applies (MARK_A stripped, MARK_B kept)",
    );
    out.check(
        shim_lines(&out.stderr).is_empty() && !out.stderr_str().contains("envwrap: "),
        "no message from the shim or envwrap",
    );
}

#[test]
fn a_home_that_is_a_git_repository_stays_clean() {
    let sb = Sandbox::new("home_git");
    let repo = sb.mkdir("repo");
    shimmed(&sb, &repo, "git")
        .args(["init", "-q"])
        .current_dir(&repo)
        .expect_success();
    let status = shimmed(&sb, &repo, "git")
        .args(["status", "--porcelain", "--untracked-files=all"])
        .current_dir(&repo)
        .expect_success();
    status.check(
        status.stdout_str().is_empty(),
        "git status in a HOME that is the repository is clean",
    );
    let env = shimmed(&sb, &repo, "/bin/sh")
        .args(["-c", "exec env"])
        .current_dir(&repo)
        .expect_success();
    policy_applied_quietly(&env);
    assert!(!repo.join(".cache").exists(), "nothing made in HOME");
}

#[test]
fn mkdir_of_home_works() {
    let sb = Sandbox::new("home_mkdir");
    let home = sb.join("D");
    let out = shimmed(&sb, &home, "/bin/sh")
        .args(["-c", "mkdir \"$HOME\" && exec env"])
        .expect_success();
    policy_applied_quietly(&out);
    let entries = std::fs::read_dir(&home).unwrap().count();
    assert_eq!(entries, 0, "HOME holds only what the program made");
}

#[test]
fn a_missing_home_is_not_created() {
    let sb = Sandbox::new("home_missing");
    let home = sb.join("nonexistent");
    let out = shimmed(&sb, &home, "/bin/sh")
        .args(["-c", "/bin/true; exec env"])
        .expect_success();
    policy_applied_quietly(&out);
    assert!(!home.exists(), "HOME was created");
}

#[test]
fn a_home_changed_between_parent_and_child_changes_nothing() {
    let sb = Sandbox::new("home_changed");
    let first = sb.mkdir("first");
    let second = sb.join("second");
    let out = shimmed(&sb, &first, "/bin/sh")
        .arg("-c")
        .arg(format!(
            "HOME={} exec /bin/sh -c 'exec env'",
            sh_quote(&second.to_string_lossy())
        ))
        .expect_success();
    policy_applied_quietly(&out);
    assert!(!second.exists(), "the child's HOME was created");
    assert_eq!(
        std::fs::read_dir(&first).unwrap().count(),
        0,
        "nothing in HOME"
    );
}

/// As an unprivileged user (root runs the test as `nobody` through `setpriv`), with
/// a `HOME` that user cannot write: quiet, and the policy applies. The shim and
/// envwrap are copied into the sandbox, where that user can read them.
#[test]
fn a_read_only_home_changes_nothing() {
    let sb = Sandbox::new("home_read_only");
    let bin = sb.mkdir("bin");
    let shim = bin.join("libenvshim.so");
    let envwrap = bin.join("envwrap");
    std::fs::copy(shim_so(), &shim).unwrap();
    std::fs::copy(envwrap_bin(), &envwrap).unwrap();
    let home = sb.mkdir("home");
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o555)).unwrap();
    for dir in [sb.path(), bin.as_path()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // SAFETY: getuid has no preconditions.
    let root = unsafe { libc::getuid() } == 0;
    let mut c = if root {
        let mut c = shimmed(&sb, &home, "setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            "/bin/sh",
        ]);
        c
    } else {
        shimmed(&sb, &home, "/bin/sh")
    };
    let out = c
        .env("LD_PRELOAD", &shim)
        .env("ENVSHIM_ENVWRAP", &envwrap)
        .args(["-c", "/bin/true; exec env"])
        .expect_success();
    policy_applied_quietly(&out);
    assert_eq!(
        std::fs::read_dir(&home).unwrap().count(),
        0,
        "nothing in HOME"
    );
}
