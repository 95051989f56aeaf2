//! The static envwrap (ci/build-static) and the install: `ldd` calls the binary not
//! a dynamic executable, it runs alone in an empty chroot, `ci/install PREFIX` puts
//! it beside libenvshim.so with the man pages and the example policies, and the man
//! pages stay true to `--help` and docs/policy.md.

use std::os::unix::fs::PermissionsExt;

use crate::envwrap_util::*;
use envshim_e2e::*;

#[test]
fn static_binary_is_not_dynamic_and_runs_in_an_empty_chroot() {
    let bin = static_envwrap_bin();
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
    static_envwrap_bin();
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
    // Every path under /usr/local that the README and docs/ name is one that
    // `make install` (this script, PREFIX=/usr/local) puts there.
    let named = envshim_e2e::docs_paths::named_under("/usr/local/");
    assert!(
        named
            .iter()
            .any(|p| p == "share/envshim/examples/loop.toml"),
        "{named:?}"
    );
    for rel in &named {
        assert!(
            prefix.join(rel).exists(),
            "the docs name /usr/local/{rel}, which make install does not install"
        );
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

/// The tool a mention of `envwrap WORD ...` in the docs (README.md, docs/,
/// docs/adr/, the man pages) names, when WORD is not an option: every code span
/// and every code line that starts with `envwrap `.
fn tool_mentions(text: &str) -> Vec<String> {
    let mut spans: Vec<&str> = text.split('`').skip(1).step_by(2).collect();
    // Lines of fenced code blocks.
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if fenced {
            spans.push(line.trim_start());
        }
    }
    // roff: `.B envwrap tmux\-env`.
    let roff: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix(".B "))
        .map(|l| l.replace("\\-", "-").trim_matches('"').to_string())
        .collect();
    spans.extend(roff.iter().map(String::as_str));
    spans
        .iter()
        .filter_map(|s| s.strip_prefix("envwrap "))
        .filter_map(|rest| rest.split_whitespace().next())
        .filter(|w| !w.starts_with('-') && w.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
        .map(str::to_string)
        .collect()
}

/// Every tool name the docs use is one envwrap has: `envwrap WORD --help` prints
/// WORD's own usage (a word that is not a tool would run a program of that
/// name instead, as `envwrap tmux` runs tmux).
#[test]
fn every_tool_the_docs_name_is_a_tool() {
    let sb = Sandbox::new("envwrap_doc_tools");
    let root = workspace_root();
    let mut files = vec![root.join("README.md"), root.join("docs/man/envwrap.1")];
    for dir in ["docs", "docs/adr"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "md") {
                files.push(p);
            }
        }
    }
    // The reading finds a wrong name: `envwrap tmux` is not the tool.
    assert_eq!(tool_mentions("run `envwrap tmux -L x` and"), ["tmux"]);
    assert_eq!(
        tool_mentions("```sh\nenvwrap tmux\n```\nenvwrap runs"),
        ["tmux"]
    );
    let mut checked = std::collections::BTreeSet::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for tool in tool_mentions(&text) {
            if !checked.insert(tool.clone()) {
                continue;
            }
            let o = envwrap(&sb).args([tool.as_str(), "--help"]).run();
            assert!(
                o.stdout_str()
                    .starts_with(&format!("Usage: envwrap {tool}"))
                    || (tool == "tmux-env" && o.stdout_str().contains("envwrap tmux-env ...")),
                "{} names `envwrap {tool}`, which is not one of envwrap's tools",
                f.display()
            );
        }
    }
    assert!(
        checked.contains("mux-env") && checked.contains("scan"),
        "{checked:?}"
    );
}
