//! `envpolicy::spawn::apply_std` on real children: what `/proc/self/environ` of the
//! child holds after the policy was applied to a `std::process::Command`.

mod spawn_util;

use envpolicy::spawn::{apply_std, apply_std_from, env_cleared, Base};
use spawn_util::*;
use std::collections::BTreeMap;
use std::process::Command;

/// `cat /proc/self/environ`, from an emptied environment holding [`input_env`].
fn environ_cmd() -> Command {
    let mut cmd = Command::new("cat");
    cmd.arg("/proc/self/environ").env_clear();
    for (k, v) in input_env() {
        cmd.env(k, v);
    }
    cmd
}

fn child_env(cmd: &mut Command) -> BTreeMap<String, String> {
    let out = cmd.output().expect("spawn");
    assert!(out.status.success(), "{:?}", out.status);
    parse_environ(&out.stdout)
}

#[test]
fn credentials_go_kept_names_stay_set_values_win() {
    let policy = compile(POLICY);
    let mut cmd = environ_cmd();
    let outcome = apply_std(&policy.policy(), &mut cmd).unwrap();
    assert_eq!(child_env(&mut cmd), expected_env());

    let mut removed: Vec<&str> = outcome.removed().collect();
    removed.sort();
    // The inherited AGENTMUX_NESTED is stripped, and the policy's own is set.
    assert_eq!(
        removed,
        [
            "AGENTMUX_DATA_DIR",
            "AGENTMUX_NESTED",
            "GH_TOKEN",
            "INNOCENT_NOTE"
        ]
    );
    let mut set: Vec<&str> = outcome.set().collect();
    set.sort();
    assert_eq!(set, ["AGENTMUX_BUILD_INFO", "AGENTMUX_NESTED"]);
    let refused: Vec<_> = outcome
        .changes
        .iter()
        .filter(|c| c.action.id() == "refuse")
        .map(|c| (c.name.as_deref(), c.rule.id()))
        .collect();
    assert_eq!(
        refused,
        [
            (Some("GH_TOKEN"), "credential.name"),
            (Some("INNOCENT_NOTE"), "credential.shape")
        ]
    );
    assert!(!outcome.rebuilt && !outcome.argv_rewritten);
    assert_eq!(outcome.mode, "enforce");
    for line in outcome.json_lines() {
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["program"], "cat");
        assert_no_value("a JSON line", &line);
    }
    assert_no_value("the outcome", &format!("{outcome:?}"));
}

#[test]
fn env_clear_is_detected_and_can_be_stated() {
    let policy = compile(POLICY);
    let mut cmd = environ_cmd();
    assert_eq!(env_cleared(&cmd), Some(true));
    // Stated: the same result.
    let mut stated = environ_cmd();
    apply_std_from(&policy.policy(), &mut stated, Base::Cleared).unwrap();
    apply_std(&policy.policy(), &mut cmd).unwrap();
    assert_eq!(child_env(&mut cmd), child_env(&mut stated));

    // Stated wrongly as inheriting: this process's PATH and HOME come back.
    let mut inherit = environ_cmd();
    apply_std_from(&policy.policy(), &mut inherit, Base::Inherit).unwrap();
    let env = child_env(&mut inherit);
    if let Some(home) = std::env::var_os("HOME") {
        assert_eq!(env.get("HOME").map(String::as_str), home.to_str());
    }
}

#[test]
fn an_inheriting_command_starts_from_this_process_environment() {
    let policy = compile(POLICY);
    let mut cmd = Command::new("cat");
    cmd.arg("/proc/self/environ")
        .env("GH_TOKEN", GH_VALUE)
        .env("AGENTMUX_DATA_DIR", "/srv/agentmux")
        .env_remove("LANG");
    assert_eq!(env_cleared(&cmd), Some(false));
    apply_std(&policy.policy(), &mut cmd).unwrap();
    let env = child_env(&mut cmd);
    // Whatever this process holds that the policy admits is there ...
    let path = std::env::var("PATH").expect("tests run with PATH");
    assert_eq!(env.get("PATH"), Some(&path));
    // ... and the command's own changes count.
    assert!(!env.contains_key("LANG"));
    assert!(!env.contains_key("GH_TOKEN") && !env.contains_key("AGENTMUX_DATA_DIR"));
    assert_eq!(env["AGENTMUX_NESTED"], "1");
    for name in env.keys() {
        assert!(
            !name.starts_with("AGENTMUX_")
                || ["AGENTMUX_NESTED", "AGENTMUX_BUILD_INFO", "AGENTMUX_PANE_ID"]
                    .contains(&name.as_str()),
            "{name} crossed"
        );
    }
}

#[test]
fn a_credential_value_in_argv_is_refused_by_name_without_its_value() {
    let policy = compile(POLICY);
    let mut cmd = environ_cmd();
    cmd.arg(format!("--auth=bearer {GH_VALUE}"));
    let refused = apply_std(&policy.policy(), &mut cmd).unwrap_err();
    assert_eq!(refused.name(), Some("GH_TOKEN"));
    assert_eq!(refused.change().rule.id(), "argv.value");
    assert_eq!(refused.change().index, Some(2));
    assert_eq!(refused.outcome().refusal.as_ref(), Some(refused.change()));
    let shown = refused.to_string();
    assert!(
        shown.contains("GH_TOKEN") && shown.contains("cat"),
        "{shown}"
    );
    assert_no_value("Display", &shown);
    assert_no_value("Debug", &format!("{refused:?}"));
    // Disarmed: a caller that ignores the error starts nothing.
    assert!(cmd.spawn().is_err());

    // A token shape, whoever's value it is.
    let mut cmd = Command::new("echo");
    cmd.arg(token());
    let refused = apply_std(&policy.policy(), &mut cmd).unwrap_err();
    assert_eq!(refused.name(), None);
    assert_eq!(refused.change().rule.id(), "argv.shape");
    assert_no_value("Display", &refused.to_string());
}

#[test]
fn audit_mode_changes_nothing_and_reports_everything() {
    let policy = compile(&audit_policy());
    // sh ignores the extra argument; cat reports what sh was given.
    let audited = || {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "exec cat /proc/self/environ", "sh"])
            .arg(format!("--auth={GH_VALUE}"))
            .env_clear();
        for (k, v) in input_env() {
            cmd.env(k, v);
        }
        cmd
    };
    let mut cmd = audited();
    let outcome = apply_std(&policy.policy(), &mut cmd).unwrap();
    assert_eq!(outcome.mode, "audit");
    assert!(outcome.refusal.is_some(), "audit reports the refusal");
    assert!(outcome.removed().any(|n| n == "GH_TOKEN"));
    assert!(outcome.set().any(|n| n == "AGENTMUX_BUILD_INFO"));
    assert!(
        format!("{cmd:?}") == format!("{:?}", audited()),
        "audit must not touch the command"
    );
    let out = cmd.output().unwrap();
    let want: BTreeMap<String, String> = input_env()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let mut got = parse_environ(&out.stdout);
    got.remove("PWD"); // dash exports it
    assert!(got == want, "audit changed the child");
}

#[test]
fn argv_rewrites_rebuild_the_command_keeping_its_directory() {
    // Redaction.
    let policy = compile(&redact_policy());
    let dir = temp_dir("redact");
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "pwd; printf '%s\\n' \"$@\"", "sh"])
        .arg(format!("--auth={GH_VALUE}"))
        .env("GH_TOKEN", GH_VALUE)
        .current_dir(&dir);
    let outcome = apply_std(&policy.policy(), &mut cmd).unwrap();
    assert!(outcome.rebuilt && outcome.argv_rewritten);
    assert!(outcome.changes.iter().any(|c| c.target.id() == "argv"
        && c.action.id() == "redact"
        && c.name.as_deref() == Some("GH_TOKEN")));
    let out = cmd.output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_no_value("the child's output", &text);
    let mut lines = text.lines();
    assert_eq!(
        std::path::Path::new(lines.next().unwrap()),
        dir.canonicalize().unwrap()
    );
    assert_eq!(
        lines.next().unwrap(),
        format!("--auth={}", "*".repeat(GH_VALUE.len()))
    );
    let _ = std::fs::remove_dir_all(&dir);

    // `env NAME=VALUE` pairs go through the environment policy: a credential's
    // pair is dropped, an admitted one stays.
    let policy = compile(POLICY);
    let mut cmd = Command::new("env");
    cmd.args([
        "GH_TOKEN=pair-value-0123456789",
        "PLAIN=1",
        "AGENTMUX_DATA_DIR=/x",
        "cat",
        "/proc/self/environ",
    ])
    .env_clear()
    .env("PATH", "/usr/bin:/bin");
    let outcome = apply_std(&policy.policy(), &mut cmd).unwrap();
    assert!(outcome.rebuilt);
    let dropped: Vec<_> = outcome
        .changes
        .iter()
        .filter(|c| c.target.id() == "argv" && c.action.id() == "drop")
        .map(|c| c.name.as_deref())
        .collect();
    assert_eq!(dropped, [Some("GH_TOKEN"), Some("AGENTMUX_DATA_DIR")]);
    let env = child_env(&mut cmd);
    assert_eq!(env.get("PLAIN").map(String::as_str), Some("1"));
    assert!(!env.contains_key("GH_TOKEN") && !env.contains_key("AGENTMUX_DATA_DIR"));
    assert_eq!(env["AGENTMUX_NESTED"], "1");
}

#[test]
fn nothing_to_change_leaves_argv_alone() {
    let policy = compile(POLICY);
    let mut cmd = Command::new("true");
    cmd.env_clear().env("PATH", "/usr/bin:/bin");
    let outcome = apply_std(&policy.policy(), &mut cmd).unwrap();
    assert!(!outcome.rebuilt);
    assert_eq!(outcome.set().count(), 2);
    assert!(cmd.status().unwrap().success());
}
