//! `envpolicy::spawn::apply_tokio` on real children (cargo feature `tokio`): the
//! same cases as spawn_std.rs, and the same child environment as the std builder.
#![cfg(feature = "tokio")]

mod spawn_util;

use envpolicy::spawn::{apply_std, apply_tokio, apply_tokio_from, Base};
use spawn_util::*;
use std::collections::BTreeMap;
use tokio::process::Command;

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn environ_cmd() -> Command {
    let mut cmd = Command::new("cat");
    cmd.arg("/proc/self/environ").env_clear();
    for (k, v) in input_env() {
        cmd.env(k, v);
    }
    cmd
}

fn child_env(cmd: &mut Command) -> BTreeMap<String, String> {
    let out = block_on(async { cmd.output().await }).expect("spawn");
    assert!(out.status.success(), "{:?}", out.status);
    parse_environ(&out.stdout)
}

#[test]
fn credentials_go_kept_names_stay_set_values_win() {
    let policy = compile(POLICY);
    let mut cmd = environ_cmd();
    let outcome = apply_tokio(&policy.policy(), &mut cmd).unwrap();
    assert_eq!(child_env(&mut cmd), expected_env());
    let removed: Vec<&str> = outcome.removed().collect();
    assert!(removed.contains(&"GH_TOKEN") && removed.contains(&"INNOCENT_NOTE"));
    assert_no_value("the outcome", &format!("{outcome:?}"));

    // The same decision and the same child as through std.
    let mut std_cmd = std::process::Command::new("cat");
    std_cmd.arg("/proc/self/environ").env_clear();
    for (k, v) in input_env() {
        std_cmd.env(k, v);
    }
    let std_outcome = apply_std(&policy.policy(), &mut std_cmd).unwrap();
    assert_eq!(outcome, std_outcome);
    let out = std_cmd.output().unwrap();
    assert_eq!(parse_environ(&out.stdout), expected_env());
}

#[test]
fn env_clear_can_be_stated() {
    let policy = compile(POLICY);
    let mut cmd = environ_cmd();
    apply_tokio_from(&policy.policy(), &mut cmd, Base::Cleared).unwrap();
    assert_eq!(child_env(&mut cmd), expected_env());
}

#[test]
fn a_credential_value_in_argv_is_refused_by_name_without_its_value() {
    let policy = compile(POLICY);
    let mut cmd = environ_cmd();
    cmd.arg(format!("--auth={GH_VALUE}"));
    let refused = apply_tokio(&policy.policy(), &mut cmd).unwrap_err();
    assert_eq!(refused.name(), Some("GH_TOKEN"));
    assert_no_value("Display", &refused.to_string());
    assert_no_value("Debug", &format!("{refused:?}"));
    assert!(block_on(async { cmd.spawn().map(|_| ()) }).is_err());
}

#[test]
fn audit_mode_changes_nothing() {
    let policy = compile(&audit_policy());
    let mut cmd = environ_cmd();
    cmd.arg("--").arg(format!("/nonexistent/{GH_VALUE}"));
    let before = format!("{cmd:?}");
    let outcome = apply_tokio(&policy.policy(), &mut cmd).unwrap();
    assert!(outcome.refusal.is_some() && outcome.removed().any(|n| n == "GH_TOKEN"));
    assert!(
        format!("{cmd:?}") == before,
        "audit must not touch the command"
    );
    // cat fails on the missing file, after printing its environment.
    let out = block_on(async { cmd.output().await }).unwrap();
    let want: BTreeMap<String, String> = input_env()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    assert!(
        parse_environ(&out.stdout) == want,
        "audit changed the child"
    );
}

#[test]
fn a_rebuild_keeps_kill_on_drop() {
    let policy = compile(&redact_policy());
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "printf '%s\\n' \"$1\"", "sh"])
        .arg(format!("--auth={GH_VALUE}"))
        .env("GH_TOKEN", GH_VALUE)
        .kill_on_drop(true);
    let outcome = apply_tokio(&policy.policy(), &mut cmd).unwrap();
    assert!(outcome.rebuilt);
    assert!(cmd.get_kill_on_drop());
    let out = block_on(async { cmd.output().await }).unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("--auth={}\n", "*".repeat(GH_VALUE.len()))
    );
}
