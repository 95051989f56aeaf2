//! The static envwrap (ci/build-static) and the install: `ldd` calls the binary not
//! a dynamic executable, it runs alone in an empty chroot, `ci/install PREFIX` puts
//! it beside libenvshim.so with the man pages and the example policies, and the man
//! pages stay true to `--help` and docs/policy.md.

use std::os::unix::fs::PermissionsExt;

use crate::envwrap_util::*;
use envshim_e2e::*;

#[test]
fn static_binary_is_not_dynamic_and_runs_in_an_empty_chroot() {
    let Some(bin) = static_envwrap() else {
        require(
            false,
            "the static envwrap is not built (run ci/build-static)",
        );
        return;
    };
    let sb = Sandbox::new("envwrap_static");
    let o = sb.cmd("ldd").arg(&bin).run();
    expect_in(&o, &both(&o), "not a dynamic executable");

    if !is_root() {
        eprintln!("SKIPPED (chroot part): chroot needs root");
        return;
    }
    let root = sb.mkdir("root");
    std::fs::copy(&bin, root.join("envwrap")).unwrap();
    let entries: Vec<_> = std::fs::read_dir(&root).unwrap().collect();
    assert_eq!(entries.len(), 1, "the chroot holds envwrap alone");
    let chroot = |args: &[&str]| {
        let mut c = sb.cmd("chroot");
        c.arg(&root).arg("/envwrap").args(args);
        c
    };
    let o = chroot(&["--help"]).expect_success();
    assert!(o.stdout_str().starts_with("Usage: envwrap"), "{o:?}");
    // The built-in policy, and an exec (of itself) with nothing else in the tree.
    let o = chroot(&["check"]).expect_success();
    expect_in(&o, &o.stdout_str(), "the built-in policy: valid");
    let o = chroot(&["-i", "A=1", "/envwrap", "--version"]).expect_success();
    assert!(o.stdout_str().starts_with("envwrap "), "{o:?}");
    let o = chroot(&["no-such-program"]).expect_exit(127);
    expect_in(&o, &o.stderr_str(), "command not found");
}

#[test]
fn install_puts_everything_in_place() {
    let Some(_) = static_envwrap() else {
        require(
            false,
            "the static envwrap is not built (run ci/build-static)",
        );
        return;
    };
    let shim = shim_so();
    let sb = Sandbox::new("envwrap_install");
    let prefix = sb.join("prefix");
    sb.cmd(workspace_root().join("ci/install"))
        .arg(&prefix)
        .env("ENVSHIM_INSTALL_NO_BUILD", "1")
        .env("CARGO_TARGET_DIR", target_dir())
        .current_dir(workspace_root())
        .expect_success();
    for rel in [
        "bin/envwrap",
        "lib/envshim/envwrap",
        "lib/envshim/libenvshim.so",
        "share/man/man1/envwrap.1",
        "share/man/man5/envshim.toml.5",
        "share/envshim/examples/loop.toml",
        "share/envshim/examples/agentmux.toml",
        "share/envshim/examples/exec-unit.toml",
        "share/envshim/examples/loop/env",
        "share/envshim/examples/loop/config.json",
        "share/bash-completion/completions/envwrap",
        "share/zsh/vendor-completions/_envwrap",
        "share/fish/vendor_completions.d/envwrap.fish",
    ] {
        assert!(prefix.join(rel).exists(), "{rel} was not installed");
    }
    assert!(std::fs::symlink_metadata(prefix.join("bin/envwrap"))
        .unwrap()
        .file_type()
        .is_symlink());
    let mode = std::fs::metadata(prefix.join("lib/envshim/envwrap"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    assert_eq!(
        std::fs::read(prefix.join("lib/envshim/libenvshim.so")).unwrap(),
        std::fs::read(&shim).unwrap()
    );
    // Through the symlink, envwrap finds the shim beside its real executable.
    let installed = prefix.join("bin/envwrap");
    let o = sb.cmd(&installed).args(["doctor", "sh"]).expect_success();
    expect_in(
        &o,
        &o.stdout_str(),
        &format!(
            "{} (beside envwrap)",
            prefix.join("lib/envshim/libenvshim.so").display()
        ),
    );
    // The installed example policy works with its imports.
    let o = sb
        .cmd(&installed)
        .arg("check")
        .arg(prefix.join("share/envshim/examples/loop.toml"))
        .expect_success();
    expect_in(&o, &o.stdout_str(), "imported: THE_LOOP_GH_TOKEN");
}

/// Every long option the help texts name appears in envwrap.1 (as `\-\-name`).
#[test]
fn man_pages_are_true_to_help_and_policy_reference() {
    let sb = Sandbox::new("envwrap_man");
    let man1 = std::fs::read_to_string(workspace_root().join("docs/man/envwrap.1")).unwrap();
    for tool in [
        &[][..],
        &["check"],
        &["explain"],
        &["scan"],
        &["doctor"],
        &["mux-env"],
    ] {
        let o = envwrap(&sb).args(tool).arg("--help").expect_success();
        let help = o.stdout_str();
        for word in help.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
            if let Some(name) = word.strip_prefix("--").filter(|n| !n.is_empty()) {
                let roff = format!("\\-\\-{}", name.replace('-', "\\-"));
                assert!(
                    man1.contains(&roff),
                    "envwrap.1 does not document --{name} ({tool:?} help)"
                );
            }
        }
    }
    let man5 = std::fs::read_to_string(workspace_root().join("docs/man/envshim.toml.5")).unwrap();
    let reference = std::fs::read_to_string(workspace_root().join("docs/policy.md")).unwrap();
    let table = reference
        .split("### Summary")
        .nth(1)
        .and_then(|s| s.split("\n### ").next())
        .expect("policy.md has a summary table");
    let mut keys = 0;
    for line in table.lines().filter(|l| l.starts_with("| `")) {
        // "| `credentials.names` | ..." or "| `[[grant]]` `name` | ...": the last key word.
        let cell = line.split('|').nth(1).unwrap_or("");
        let key = cell
            .split('`')
            .rfind(|s| !s.trim().is_empty())
            .unwrap_or("")
            .trim();
        let key = key.rsplit(['.', ' ']).next().unwrap_or(key);
        assert!(
            man5.contains(&key.replace('-', "\\-")),
            "envshim.toml.5 does not mention key {key} ({cell})"
        );
        keys += 1;
    }
    assert!(keys > 20, "read only {keys} keys from policy.md");
}
