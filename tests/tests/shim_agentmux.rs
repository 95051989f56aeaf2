//! The AgentMux scenario. AgentMux's launcher puts the
//! instance's identity in `AGENTMUX_*` variables; every pane inherited them, so a
//! second AgentMux started from a pane adopted the first one's identity. Under the
//! shim with examples/agentmux.toml, a pane (real tmux, the sandbox's own socket) sees
//! no `AGENTMUX_*` beyond the keep list (`AGENTMUX_PANE_ID`,
//! `AGENTMUX_HELPER_SOCKET`), carries the nesting sentinel `AGENTMUX_NESTED=1` (even
//! though the launcher had `AGENTMUX_NESTED=0`) and the build info, and no token.

use std::time::Duration;

use envshim_e2e::*;

/// The launcher's identity variables. A variable added later (`..._FUTURE_FEATURE`)
/// must be excluded by default: the policy is an allowlist.
const LAUNCHER_ENV: &[(&str, &str)] = &[
    ("AGENTMUX_PANE_ID", "7"),
    ("AGENTMUX_HELPER_SOCKET", "/run/agentmux/helper.sock"),
    ("AGENTMUX_DATA_DIR", "/srv/agentmux/data"),
    ("AGENTMUX_CONFIG_DIR", "/srv/agentmux/config"),
    ("AGENTMUX_CHANNEL", "stable"),
    ("AGENTMUX_INSTANCE", "first"),
    ("AGENTMUX_NESTED", "0"),
    ("AGENTMUX_FUTURE_FEATURE", "on"),
];

const KEEP: &[&str] = &["AGENTMUX_PANE_ID", "AGENTMUX_HELPER_SOCKET"];

#[test]
fn pane_sees_only_the_keep_list_and_the_sentinel() {
    let sb = Sandbox::new("agentmux_pane");
    let policy = stage_example(&sb, "agentmux.toml");
    let report = sb.join("pane-report");
    let script = r#"tmux -L "$1" -f /dev/null new-session -d -s am -x 80 -y 24 \
        /bin/sh -c '"$0" --report="$1"; exec sleep 300' "$2" "$3""#;

    let mut launcher = sb.cmd("bash");
    launcher
        .args(["-c", script, "launcher", sb.tmux_socket()])
        .arg(printenv_bin())
        .arg(&report)
        .envs(LAUNCHER_ENV.iter().copied())
        .env("GH_TOKEN", sb.secrets().value("GH_TOKEN"))
        .env("ANTHROPIC_API_KEY", sb.secrets().value("ANTHROPIC_API_KEY"));

    // Control: without the shim the pane inherits the whole family (the bug).
    launcher.clone().expect_success();
    wait_until(
        "the control pane's report",
        || report.exists(),
        Duration::from_secs(15),
    );
    let r = PrintenvReport::read(&report);
    assert_eq!(r.get("AGENTMUX_DATA_DIR"), Some(&b"/srv/agentmux/data"[..]));
    assert_eq!(r.get("AGENTMUX_NESTED"), Some(&b"0"[..]));
    sb.kill_tmux_server();
    std::fs::remove_file(&report).expect("remove the control report");

    let o = launcher.with_shim().with_policy(&policy).expect_success();
    wait_until(
        "the pane's report",
        || report.exists(),
        Duration::from_secs(15),
    );
    let r = PrintenvReport::read(&report);
    let family: Vec<String> = r
        .names()
        .into_iter()
        .filter(|n| n.starts_with("AGENTMUX_"))
        .collect();
    let extra: Vec<&String> = family
        .iter()
        .filter(|n| {
            !KEEP.contains(&n.as_str())
                && n.as_str() != "AGENTMUX_NESTED"
                && n.as_str() != "AGENTMUX_BUILD_INFO"
        })
        .collect();
    assert!(
        extra.is_empty(),
        "the pane sees AGENTMUX_* beyond the keep list: {extra:?}"
    );
    assert_eq!(r.get("AGENTMUX_PANE_ID"), Some(&b"7"[..]), "{r:?}");
    assert_eq!(
        r.get("AGENTMUX_HELPER_SOCKET"),
        Some(&b"/run/agentmux/helper.sock"[..]),
        "{r:?}"
    );
    assert_eq!(
        r.get("AGENTMUX_NESTED"),
        Some(&b"1"[..]),
        "the nesting sentinel is missing or wrong: {r:?}"
    );
    assert_eq!(
        r.get("AGENTMUX_BUILD_INFO"),
        Some(&b"agentmux example build"[..]),
        "{r:?}"
    );
    assert_eq!(
        family.iter().filter(|n| *n == "AGENTMUX_NESTED").count(),
        1,
        "AGENTMUX_NESTED twice: {family:?}"
    );
    sb.secrets()
        .assert_absent("the AgentMux pane's environment", &r.all_bytes());
    assert!(!r.has("GH_TOKEN") && !r.has("ANTHROPIC_API_KEY"), "{r:?}");

    // The same seen from tmux: the server's global environment was built from a
    // filtered exec, and the pane process's own /proc/PID/environ agrees.
    let global = sb.tmux_environment(None, false);
    for (name, _) in LAUNCHER_ENV {
        if !KEEP.contains(name) && *name != "AGENTMUX_NESTED" {
            assert!(
                !global.is_set(name),
                "show-environment -g holds {name}: {global:?}"
            );
        }
    }
    assert_eq!(global.get("AGENTMUX_NESTED"), Some("1"), "{global:?}");
    let pane = sb.pane_pid("am");
    let env = proc_environ(pane);
    assert!(
        env.iter()
            .any(|(k, v)| k == b"AGENTMUX_NESTED" && v == b"1"),
        "/proc/{pane}/environ lacks the sentinel"
    );
    assert!(
        !env.iter().any(|(k, _)| k == b"AGENTMUX_DATA_DIR"),
        "/proc/{pane}/environ holds AGENTMUX_DATA_DIR"
    );
    assert_no_process_holds(sb.secrets());
    assert!(
        shim_lines(&o.stderr).is_empty(),
        "quiet strips should print nothing\n{}",
        o.report()
    );
}
