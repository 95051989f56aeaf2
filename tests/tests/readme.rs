//! README's commands, as a new user types them, in a fresh copy of the tree (the
//! files git tracks, in a temporary directory, with a target directory of its
//! own): the fresh-machine command, the install, and the recipes of "Use" run
//! against the installed files. Each command is taken from README itself, so a
//! README that changes its commands changes what is run, and one whose command
//! no longer works fails here.

use envshim_e2e::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The fenced `sh` blocks of README, in order.
fn sh_blocks(readme: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in readme.lines() {
        match (&mut current, line) {
            (None, "```sh") => current = Some(String::new()),
            (Some(b), "```") => {
                blocks.push(std::mem::take(b));
                current = None;
            }
            (Some(b), l) => {
                b.push_str(l);
                b.push('\n');
            }
            _ => {}
        }
    }
    blocks
}

/// The block that holds `needle`.
#[track_caller]
fn block<'a>(blocks: &'a [String], needle: &str) -> &'a str {
    blocks
        .iter()
        .find(|b| b.contains(needle))
        .unwrap_or_else(|| panic!("README has no sh block with {needle:?}"))
}

/// The tracked files of the working tree, copied: what a clone of it holds.
fn fresh_copy(sb: &Sandbox) -> PathBuf {
    let root = workspace_root();
    let files = sb
        .cmd("git")
        .args(["ls-files", "-z"])
        .current_dir(&root)
        .expect_success()
        .stdout;
    let dest = sb.mkdir("clone");
    for rel in files.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let rel = Path::new(std::str::from_utf8(rel).expect("a UTF-8 path"));
        let (from, to) = (root.join(rel), dest.join(rel));
        if !from.exists() {
            continue; // deleted in the working tree
        }
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&from, &to).unwrap_or_else(|e| panic!("copy {}: {e}", rel.display()));
    }
    dest
}

#[test]
fn readme_commands_work_from_a_fresh_copy() {
    let sb = Sandbox::new("readme");
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let blocks = sh_blocks(&readme);
    let clone = fresh_copy(&sb);
    let run = |line: &str| {
        let mut c = sb.cmd("/bin/sh");
        c.args(["-c", line])
            .current_dir(&clone)
            .env_remove("CARGO_TARGET_DIR")
            .timeout(Duration::from_secs(1200));
        c
    };

    // "On a fresh machine": the main job, under the built-in default, from a shell
    // that holds credentials.
    let main_job = block(&blocks, "cargo run").trim();
    let o = run(main_job).env_secrets().expect_success();
    assert!(o.stdout_str().contains("PATH="), "{}", o.report());
    assert!(!o.stdout_str().contains("GH_TOKEN="), "{}", o.report());

    // "Install", into a DESTDIR (no root): `make`, then `make install`.
    let install = block(&blocks, "make install").trim();
    let (build, rest) = install.split_once("&&").expect("make && sudo make install");
    let (install_cmd, _comment) = rest.split_once('#').unwrap_or((rest, ""));
    let destdir = sb.join("destdir");
    run(build.trim()).expect_success();
    let install_cmd = install_cmd.trim().trim_start_matches("sudo ");
    run(&format!("{install_cmd} DESTDIR={}", destdir.display())).expect_success();
    let prefix = destdir.join("usr/local");
    let shim = prefix.join("lib/envshim/libenvshim.so");
    assert!(shim.exists(), "the install made no {}", shim.display());
    let path = format!("{}:/usr/bin:/bin", prefix.join("bin").display());

    // "A legacy launch script": the recipe, then the script's own command.
    let recipe = block(&blocks, "exec envwrap").replace("# ... the script as it was", "env");
    let script = sb.write_executable("legacy.sh", recipe);
    let o = sb
        .cmd(&script)
        .env("PATH", &path)
        .env_secrets()
        .expect_success();
    assert!(!o.stdout_str().contains("GH_TOKEN="), "{}", o.report());
    assert!(o.stdout_str().contains("libenvshim.so"), "{}", o.report());
    // Started as `sh legacy.sh`, by a relative name that is no command.
    let o = sb
        .cmd("sh")
        .arg("legacy.sh")
        .env("PATH", &path)
        .env_secrets()
        .expect_success();
    assert!(!o.stdout_str().contains("GH_TOKEN="), "{}", o.report());
    assert!(o.stdout_str().contains("libenvshim.so"), "{}", o.report());
    // With envwrap alone (no shim beside it, as `cargo install` leaves it), the
    // recipe stops with envwrap's message instead of running itself again.
    let alone = sb.mkdir("alone");
    std::fs::copy(prefix.join("lib/envshim/envwrap"), alone.join("envwrap")).unwrap();
    let o = sb
        .cmd(&script)
        .env("PATH", format!("{}:/usr/bin:/bin", alone.display()))
        .timeout(Duration::from_secs(20))
        .expect_exit(125);
    assert!(o.stderr_str().contains("libenvshim.so"), "{}", o.report());

    // "The first process": the shim leaves env's own environment alone (it was
    // its parent's), envwrap does not.
    assert!(readme.contains("`LD_PRELOAD=$SHIM env` prints the token"));
    let o = sb
        .cmd("env")
        .env("LD_PRELOAD", &shim)
        .env_secrets()
        .allow_secrets_in_output()
        .expect_success();
    assert!(o.stdout_str().contains("GH_TOKEN="), "{}", o.report());
    assert!(readme.contains("`envwrap -- env` applies the policy to `env`"));
    let o = sb
        .cmd(prefix.join("bin/envwrap"))
        .args(["--", "env"])
        .env_secrets()
        .expect_success();
    assert!(!o.stdout_str().contains("GH_TOKEN="), "{}", o.report());
}

/// README's list of envwrap's tools is envwrap's own (issue 51, 8): the tools
/// `envwrap --help` lists, in its order, are the ones the Status section
/// names, so a tool added or renamed fails here until the README says so.
#[test]
fn readme_names_every_tool_envwrap_has() {
    let sb = Sandbox::new("readme_tools");
    let o = sb.cmd(envwrap_bin()).arg("--help").expect_success();
    let help = o.stdout_str();
    let section = help
        .split_once("\nTools")
        .map(|(_, rest)| rest)
        .expect("envwrap --help has a Tools section");
    let from_help: Vec<&str> = section
        .lines()
        .skip(1)
        .take_while(|l| l.is_empty() || l.starts_with(' '))
        .filter(|l| l.starts_with("  ") && l.as_bytes().get(2).is_some_and(u8::is_ascii_lowercase))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(from_help.contains(&"check"), "{help}");
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let list = readme
        .split_once("envwrap with its tools (")
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(list, _)| list)
        .expect("README's Status names envwrap's tools");
    let in_readme: Vec<&str> = list.split(',').map(str::trim).collect();
    assert_eq!(
        in_readme, from_help,
        "README's Status list of tools differs from envwrap --help"
    );
}
