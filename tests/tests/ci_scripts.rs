//! The project's own scripts as a newcomer meets them: ci/install-test-deps on a
//! machine that is not Debian says which programs the tests need and where to get
//! them, instead of failing on `apt-get`.

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
