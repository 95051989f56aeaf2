//! The project's own scripts as a newcomer meets them: ci/install-test-deps on a
//! machine that is not Debian says which programs the tests need and where to get
//! them, instead of failing on `apt-get`; ci/debian-roots builds its roots once
//! and then only finds them.

use envshim_e2e::*;
use std::os::unix::fs::symlink;

#[test]
fn install_test_deps_off_debian_names_what_is_missing() {
    let sb = Sandbox::new("ci_install_deps");
    // A PATH with a shell and a few programs, and no dpkg, apt-get or tmux.
    let bin = sb.mkdir("bin");
    for tool in ["bash", "env", "make"] {
        let real = std::path::Path::new("/usr/bin").join(tool);
        symlink(&real, bin.join(tool)).expect("symlink");
    }
    let script = workspace_root().join("ci/install-test-deps");
    let o = sb.cmd(&script).env("PATH", &bin).expect_exit(1);
    let said = o.stderr_str();
    for needle in [
        "this is not a Debian machine",
        "tmux: Debian/Ubuntu: tmux, Fedora: tmux",
        "go: Debian/Ubuntu: golang-go",
        "python3's own test suite",
    ] {
        assert!(said.contains(needle), "missing {needle:?} in:\n{said}");
    }
    assert!(!said.contains("make:"), "make is there:\n{said}");
}

/// A second run of ci/debian-roots finds the roots that ci/test built and
/// builds nothing (docs/benchmarks.md has the time it takes then).
#[test]
fn debian_roots_are_built_once_and_then_reused() {
    let sb = Sandbox::new("ci_debian_roots");
    let script = workspace_root().join("ci/debian-roots");
    let o = sb.cmd(&script).arg("--bogus").expect_exit(2);
    assert!(o.stderr_str().contains("usage: ci/debian-roots"), "{o:?}");
    let test = "ci_scripts::debian_roots_are_built_once_and_then_reused";
    let roots = [crate::glibc_roots::BULLSEYE, crate::glibc_roots::TRIXIE];
    if roots
        .iter()
        .any(|suite| crate::glibc_roots::root_of(suite, test).is_none())
    {
        return;
    }
    let o = sb.cmd(&script).expect_success();
    let said = o.stdout_str();
    for suite in roots {
        assert!(
            said.contains(&format!("{suite} is complete (cached)")),
            "{suite} not reused:\n{said}"
        );
    }
    assert!(
        !said.contains("building"),
        "a root was built again:\n{said}"
    );
}
