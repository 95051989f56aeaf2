//! The loop's tmux scenario, with real tmux on the
//! sandbox's own `-L` socket.
//!
//! The loop (an agent-session daemon) starts every agent in a tmux pane. Its launcher
//! holds the daemon's credentials (`GH_TOKEN`, `JIRA_API_TOKEN`) in its environment
//! and used to hand them on as `tmux new-session -e GH_TOKEN=<value>`, so the token
//! sat in tmux's argv, and in the tmux server's command line for the server's life.
//!
//! Under the shim, with examples/loop.toml (copied into the sandbox with its loop/
//! directory), a user checks:
//! - the pane's environment (`tmux show-environment` and the pane process's
//!   /proc/PID/environ) has `THE_LOOP_INSTANCE` and neither token;
//! - no process's cmdline, the tmux server's included, holds either value;
//! - the launcher's stderr names `GH_TOKEN` and never its value.
//!
//! Three runs: the launcher under the shim with the built-in policy; the same with
//! loop.toml (which also shows the loop's own rules: the env file's names stripped,
//! a passthrough name taking its value from the file); and the shim loaded straight
//! into tmux, with the token already in tmux's own argv and environment, where only
//! the shim inside tmux (self-scrub, `[program.tmux] self_scrub = true`) can help.

use std::path::{Path, PathBuf};
use std::time::Duration;

use envshim_e2e::*;

/// The launcher: `launcher.sh SOCKET PRINTENV REPORT`. The pane runs printenv (the
/// report shows the pane's environment), then stays as `sleep`.
const LAUNCHER: &str = r#"#!/bin/bash
sock=$1 printenv=$2 report=$3
tmux -L "$sock" -f /dev/null new-session -d -s loop -x 80 -y 24 \
    -e "GH_TOKEN=$GH_TOKEN" -e THE_LOOP_INSTANCE=i1 \
    /bin/sh -c '"$0" --report="$1"; exec sleep 300' "$printenv" "$report"
echo "launcher: tmux exited $?"
"#;

/// The passthrough value examples/loop/env declares (loop.toml keeps LOOP_TRACKER_URL
/// by exact name and imports the file with `values = true`).
const LOOP_ENV_TRACKER_URL: &str = "https://tracker.example.invalid/loop";

const TOKENS: [&str; 2] = ["GH_TOKEN", "JIRA_API_TOKEN"];

enum Policy {
    Builtin,
    Loop(PathBuf),
}

/// What the pane received, read from its report.
#[track_caller]
fn pane_report(report: &Path) -> PrintenvReport {
    wait_until(
        "the pane's printenv report",
        || report.exists(),
        Duration::from_secs(15),
    );
    PrintenvReport::read(report)
}

/// The checks every run shares, once the pane is up.
#[track_caller]
fn check_pane_and_processes(sb: &Sandbox, report: &PrintenvReport) -> (u32, u32) {
    let secrets = sb.secrets();
    secrets.assert_absent(
        "the pane's environment (printenv report)",
        &report.all_bytes(),
    );
    for name in TOKENS {
        assert!(!report.has(name), "the pane holds {name}: {report:?}");
    }
    assert_eq!(
        report.get("THE_LOOP_INSTANCE"),
        Some(&b"i1"[..]),
        "the pane lacks THE_LOOP_INSTANCE: {report:?}"
    );

    // tmux show-environment for the session (the harness fails on a value in it).
    let session = sb.tmux_environment(Some("loop"), false);
    assert_eq!(
        session.get("THE_LOOP_INSTANCE"),
        Some("i1"),
        "show-environment -t loop: {session:?}"
    );
    for name in TOKENS {
        if let Some(v) = session.get(name) {
            assert_ne!(v, secrets.value(name), "show-environment holds {name}");
        }
    }

    // The pane process's /proc/PID/environ.
    let pane = sb.pane_pid("loop");
    wait_until(
        "the pane to settle in sleep",
        || proc_comm(pane).as_deref() == Some("sleep"),
        Duration::from_secs(10),
    );
    let env = proc_environ(pane);
    let has = |n: &str| env.iter().any(|(k, _)| k == n.as_bytes());
    assert!(
        env.iter()
            .any(|(k, v)| k == b"THE_LOOP_INSTANCE" && v == b"i1"),
        "/proc/{pane}/environ lacks THE_LOOP_INSTANCE=i1"
    );
    for name in TOKENS {
        assert!(!has(name), "/proc/{pane}/environ holds {name}");
    }
    ProcScan::new(secrets)
        .with_environ()
        .only([pane])
        .assert_clean();

    // No process's command line, the server's included.
    let server = sb.server_pid().expect("a tmux server");
    assert_eq!(proc_comm(server).as_deref(), Some("tmux: server"));
    assert_no_process_holds(secrets);
    (server, pane)
}

fn launch(sb: &Sandbox, policy: &Policy) -> (Outcome, PrintenvReport) {
    let launcher = sb.write("launcher.sh", LAUNCHER);
    let report = sb.join("pane-report");
    let mut c = sb.cmd("bash");
    c.arg(&launcher)
        .arg(sb.tmux_socket())
        .arg(printenv_bin())
        .arg(&report)
        .env("GH_TOKEN", sb.secrets().value("GH_TOKEN"))
        .env("JIRA_API_TOKEN", sb.secrets().value("JIRA_API_TOKEN"))
        .env(
            "JIRA_BASE_URL",
            "https://jira.example.invalid/from-the-launcher",
        )
        .env("LOOP_TRACKER_URL", "https://launcher.invalid/tracker")
        .with_shim();
    if let Policy::Loop(p) = policy {
        c.with_policy(p);
    }
    let o = c.expect_success();
    assert_eq!(
        o.stdout_str(),
        "launcher: tmux exited 0\n",
        "{}",
        o.report()
    );
    let r = pane_report(&report);
    (o, r)
}

#[test]
fn launcher_under_the_shim_builtin_policy() {
    let sb = Sandbox::new("tmux_loop_builtin");
    let (o, report) = launch(&sb, &Policy::Builtin);
    let (server, _) = check_pane_and_processes(&sb, &report);
    // The server was started from a filtered exec: its environment is clean too, and
    // so is the global environment it built from it.
    ProcScan::new(sb.secrets())
        .with_environ()
        .only([server])
        .assert_clean();
    let global = sb.tmux_environment(None, false);
    for name in TOKENS {
        assert!(!global.is_set(name), "show-environment -g holds {name}");
    }
    // Under the built-in policy the dropped pair is quiet (only a credential that a
    // keep list named is refused loudly); the harness checked stderr holds no value.
    drop(o);
}

#[test]
fn launcher_under_the_shim_loop_policy() {
    let sb = Sandbox::new("tmux_loop_policy");
    let policy = stage_example(&sb, "loop.toml");
    let (o, report) = launch(&sb, &Policy::Loop(policy.clone()));
    let (server, _) = check_pane_and_processes(&sb, &report);
    ProcScan::new(sb.secrets())
        .with_environ()
        .only([server])
        .assert_clean();
    let global = sb.tmux_environment(None, false);
    for name in TOKENS {
        assert!(!global.is_set(name), "show-environment -g holds {name}");
    }

    // stderr names GH_TOKEN (a credential on the passthrough list: refused loudly),
    // and the harness already checked that it never holds the value.
    let lines = shim_lines(&o.stderr);
    assert!(
        lines.iter().any(|l| l.contains("GH_TOKEN")),
        "stderr does not name GH_TOKEN\n{}",
        o.report()
    );
    assert!(
        lines
            .iter()
            .all(|l| l.contains(&policy.display().to_string())),
        "a shim line does not name the policy file\n{}",
        o.report()
    );

    // The loop's own rules (R1.2, R4.4): the env file's names stay out of panes, and
    // the passthrough LOOP_TRACKER_URL takes its value from the file.
    assert!(
        !report.has("JIRA_BASE_URL"),
        "the pane holds JIRA_BASE_URL, a name loop/env declares: {report:?}"
    );
    assert_eq!(
        report.get("LOOP_TRACKER_URL"),
        Some(LOOP_ENV_TRACKER_URL.as_bytes()),
        "LOOP_TRACKER_URL should come from loop/env: {report:?}"
    );
}

#[test]
fn shim_loaded_into_tmux_itself_self_scrub() {
    let sb = Sandbox::new("tmux_loop_self_scrub");
    let policy = stage_example(&sb, "loop.toml");
    let report = sb.join("pane-report");
    let token = sb.secrets().value("GH_TOKEN").to_string();
    // No launcher: tmux itself gets the token in argv and both tokens in its
    // environment, and the shim is loaded into it.
    let o = sb
        .tmux()
        .args(["new-session", "-d", "-s", "loop", "-x", "80", "-y", "24"])
        .args(["-e", &format!("GH_TOKEN={token}")])
        .args(["-e", "THE_LOOP_INSTANCE=i1"])
        .args(["/bin/sh", "-c", r#""$0" --report="$1"; exec sleep 300"#])
        .arg(printenv_bin())
        .arg(&report)
        .env("GH_TOKEN", &token)
        .env("JIRA_API_TOKEN", sb.secrets().value("JIRA_API_TOKEN"))
        .with_shim()
        .with_policy(&policy)
        .expect_success();
    drop(o);
    let r = pane_report(&report);
    check_pane_and_processes(&sb, &r);
    // Self-scrub removed the refused names from tmux's own environ, so the server's
    // global environment never had them.
    let global = sb.tmux_environment(None, false);
    for name in TOKENS {
        assert!(
            !global.is_set(name),
            "show-environment -g holds {name}: self-scrub did not remove it"
        );
    }
}
