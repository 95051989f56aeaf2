//! `envpolicy::spawn::apply_pty` on real children in a pseudo-terminal (cargo
//! feature `portable-pty`), including portable-pty's `SHELL` from the password
//! database. The child copies its `/proc/self/environ` into a file with dd.
#![cfg(feature = "portable-pty")]

mod spawn_util;

use envpolicy::spawn::apply_pty;
use portable_pty::{native_pty_system, CommandBuilder, PtySize};
use spawn_util::*;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// `dd if=/proc/self/environ of=<dir>/environ`, from an emptied builder holding
/// [`input_env`]. Returns the builder and where the report goes.
fn environ_cmd(dir: &Path) -> (CommandBuilder, PathBuf) {
    let report = dir.join("environ");
    let mut cmd = CommandBuilder::new("dd");
    cmd.arg("if=/proc/self/environ");
    cmd.arg(format!("of={}", report.display()));
    cmd.arg("status=none");
    cmd.env_clear();
    for (k, v) in input_env() {
        cmd.env(k, v);
    }
    (cmd, report)
}

/// Spawn in a fresh pty, as a terminal pane is; wait for the child.
fn run_in_pty(cmd: CommandBuilder) {
    let pair = native_pty_system().openpty(PtySize::default()).unwrap();
    let mut child = pair.slave.spawn_command(cmd).expect("spawn in a pty");
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().unwrap();
    let mut screen = Vec::new();
    // Ends with EIO once the child has closed the terminal.
    let _ = reader.read_to_end(&mut screen);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

fn child_env(cmd: CommandBuilder, report: &Path) -> BTreeMap<String, String> {
    run_in_pty(cmd);
    parse_environ(&std::fs::read(report).expect("the child wrote its environment"))
}

#[test]
fn portable_pty_sets_shell_from_the_password_database_after_env_clear() {
    // The finding, without the policy: a builder with no SHELL still passes one.
    let dir = temp_dir("pty-control");
    let (mut cmd, report) = environ_cmd(&dir);
    cmd.env_remove("SHELL");
    let passwd_shell = cmd.get_shell();
    assert!(cmd.get_env("SHELL").is_none());
    let env = child_env(cmd, &report);
    assert_eq!(env.get("SHELL"), Some(&passwd_shell));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn credentials_go_kept_names_stay_set_values_win_and_no_shell_appears() {
    let policy = compile(POLICY);
    let dir = temp_dir("pty");
    let (mut cmd, report) = environ_cmd(&dir);
    let outcome = apply_pty(&policy.policy(), &mut cmd).unwrap();
    let removed: Vec<&str> = outcome.removed().collect();
    assert!(removed.contains(&"GH_TOKEN") && removed.contains(&"INNOCENT_NOTE"));
    assert_no_value("the outcome", &format!("{outcome:?}"));
    // No SHELL was decided, so the command runs through `env -u SHELL`.
    let wrap = outcome
        .changes
        .iter()
        .find(|c| c.rule.id() == "pty.shell")
        .expect("the SHELL guard is reported");
    assert_eq!((wrap.action.id(), wrap.loud), ("wrap", false));
    assert_eq!(cmd.get_argv()[..4], ["/usr/bin/env", "-u", "SHELL", "--"]);
    // The same child environment as through std::process::Command.
    assert_eq!(child_env(cmd, &report), expected_env());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_kept_or_set_shell_is_the_one_the_child_gets() {
    // Kept from the builder.
    let policy = compile(POLICY);
    let dir = temp_dir("pty-shell");
    let (mut cmd, report) = environ_cmd(&dir);
    cmd.env("SHELL", "/bin/sh");
    let outcome = apply_pty(&policy.policy(), &mut cmd).unwrap();
    assert!(outcome.changes.iter().all(|c| c.rule.id() != "pty.shell"));
    assert_eq!(cmd.get_argv()[0], "dd", "no wrapper needed");
    let env = child_env(cmd, &report);
    assert_eq!(env.get("SHELL").map(String::as_str), Some("/bin/sh"));

    // Set by the policy: it wins over the builder's and the password database's,
    // even when it names no executable (portable-pty then looks the shell up, but
    // still passes the builder's value).
    let policy = compile(&format!("{POLICY}SHELL = \"/nonexistent/policy-shell\"\n"));
    let (mut cmd, report) = environ_cmd(&dir);
    cmd.env("SHELL", "/bin/sh");
    apply_pty(&policy.policy(), &mut cmd).unwrap();
    let env = child_env(cmd, &report);
    assert_eq!(
        env.get("SHELL").map(String::as_str),
        Some("/nonexistent/policy-shell")
    );

    // Stripped by the policy: gone, although the builder had one.
    let policy = compile(&POLICY.replace("strip = [", "strip = [\"SHELL\", "));
    let (mut cmd, report) = environ_cmd(&dir);
    cmd.env("SHELL", "/bin/sh");
    let outcome = apply_pty(&policy.policy(), &mut cmd).unwrap();
    assert!(outcome.removed().any(|n| n == "SHELL"));
    let env = child_env(cmd, &report);
    assert_eq!(env.get("SHELL"), None);
    assert_eq!(env, expected_env());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_default_program_builder_keeps_its_login_shell_loudly() {
    let policy = compile(&POLICY.replace("strip = [", "strip = [\"SHELL\", "));
    let mut cmd = CommandBuilder::new_default_prog();
    let outcome = apply_pty(&policy.policy(), &mut cmd).unwrap();
    assert!(cmd.is_default_prog());
    let note = outcome
        .loud()
        .find(|c| c.rule.id() == "pty.shell")
        .expect("reported");
    assert_eq!(note.action.id(), "set");
    assert!(cmd.get_env("SHELL").is_none());
}

#[test]
fn a_credential_value_in_argv_is_refused_by_name_without_its_value() {
    let policy = compile(POLICY);
    let dir = temp_dir("pty-refuse");
    let (mut cmd, _) = environ_cmd(&dir);
    cmd.arg(format!("--auth={GH_VALUE}"));
    let refused = apply_pty(&policy.policy(), &mut cmd).unwrap_err();
    assert_eq!(refused.name(), Some("GH_TOKEN"));
    assert_eq!(refused.change().index, Some(4));
    assert_no_value("Display", &refused.to_string());
    assert_no_value("Debug", &format!("{refused:?}"));
    // Disarmed.
    let pair = native_pty_system().openpty(PtySize::default()).unwrap();
    assert!(pair.slave.spawn_command(cmd).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn audit_mode_changes_nothing() {
    let policy = compile(&audit_policy());
    let dir = temp_dir("pty-audit");
    let (mut cmd, report) = environ_cmd(&dir);
    let before = cmd.clone();
    let outcome = apply_pty(&policy.policy(), &mut cmd).unwrap();
    assert!(outcome.removed().any(|n| n == "GH_TOKEN"));
    assert!(cmd == before, "audit must not touch the builder");
    let mut env = child_env(cmd, &report);
    // portable-pty's own SHELL still arrives: audit changes nothing.
    assert!(env.remove("SHELL").is_some());
    let want: BTreeMap<String, String> = input_env()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    assert!(env == want, "audit changed the child");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn env_pairs_are_rewritten_in_place() {
    let policy = compile(POLICY);
    let dir = temp_dir("pty-pairs");
    let report = dir.join("environ");
    let mut cmd = CommandBuilder::new("env");
    cmd.args([
        "GH_TOKEN=pair-value-0123456789",
        "PLAIN=1",
        "dd",
        "if=/proc/self/environ",
    ]);
    cmd.arg(format!("of={}", report.display()));
    cmd.arg("status=none");
    cmd.env("SHELL", "/bin/sh");
    cmd.cwd(&dir);
    let outcome = apply_pty(&policy.policy(), &mut cmd).unwrap();
    assert!(outcome.argv_rewritten && !outcome.rebuilt);
    assert_eq!(cmd.get_argv()[1], "PLAIN=1");
    assert_eq!(cmd.get_cwd().map(PathBuf::from), Some(dir.clone()));
    let env = child_env(cmd, &report);
    assert_eq!(env.get("PLAIN").map(String::as_str), Some("1"));
    assert!(!env.contains_key("GH_TOKEN"));
    let _ = std::fs::remove_dir_all(&dir);
}
