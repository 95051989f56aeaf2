//! `envwrap scan` against live processes: a tmux server started the old way (its
//! command line holds `-e GH_TOKEN=...` for its whole life) is found; after a
//! restart under envwrap, scan is clean. Also: refused names and stale passthrough
//! values in a process's environment, and credential values from the policy's
//! imported env files. Findings name the PID, program and variable, never a value.

use std::time::Duration;

use crate::envwrap_util::*;
use envshim_e2e::*;

fn scan(sb: &Sandbox, pid: u32) -> TestCommand {
    let mut c = envwrap(sb);
    c.env_secrets().args(["scan", "--pid", &pid.to_string()]);
    c
}

#[test]
fn tmux_server_started_the_old_way_is_found_and_clean_after_a_restart_under_envwrap() {
    let sb = Sandbox::new("envwrap_scan_tmux");
    let gh = sb.secrets().get("GH_TOKEN").assignment();
    let jira = sb.secrets().get("JIRA_API_TOKEN").assignment();
    // The old way: the token in tmux's argv and environment.
    sb.tmux()
        .env_secrets()
        .args(["new-session", "-d", "-s", "old", "-e", &gh, "-e", &jira])
        .args(["sleep", "300"])
        .expect_success();
    let server = sb.server_pid().expect("tmux server");

    let cmdline = proc_cmdline(server);
    let at = |pair: &str| {
        cmdline
            .iter()
            .position(|a| a == pair.as_bytes())
            .expect("pair in argv")
    };
    let (gh_at, jira_at) = (at(&gh), at(&jira));
    let o = scan(&sb, server).expect_exit(1);
    let out = o.stdout_str();
    let prefix = format!("pid {server} (tmux: server): ");
    for needle in [
        format!("argument {gh_at} holds the value of GH_TOKEN (from scan's environment)"),
        format!("argument {jira_at} holds the value of JIRA_API_TOKEN (from scan's environment)"),
        "its environment holds GH_TOKEN, a credential the policy refuses".to_string(),
    ] {
        expect_in(&o, &out, &format!("{prefix}{needle}"));
    }
    // JSON: one object per finding, then the summary.
    let o = scan(&sb, server).arg("--json").expect_exit(1);
    let out = o.stdout_str();
    expect_in(&o, &out, &format!("{{\"index\":{gh_at},\"kind\":\"argv.value\",\"pid\":{server},\"program\":\"tmux: server\",\"variable\":\"GH_TOKEN\""));
    expect_in(&o, out.lines().last().unwrap_or(""), "\"summary\"");

    // Restart under envwrap, with the same habits: the pairs and the environment.
    sb.tmux().arg("kill-server").expect_success();
    assert!(
        wait_for(|| !pid_alive(server), Duration::from_secs(5)),
        "old server still alive"
    );
    envwrap(&sb)
        .env_secrets()
        .args(["--no-preload", "--", "tmux"])
        .args(sb.tmux_args())
        .args(["new-session", "-d", "-s", "new", "-e", &gh, "-e", &jira])
        .args(["sleep", "300"])
        .expect_success();
    let server = sb.server_pid().expect("tmux server under envwrap");
    let o = scan(&sb, server).expect_success();
    assert!(o.stdout.is_empty(), "{o:?}");
    expect_in(&o, &o.stderr_str(), "1 process scanned under");
    expect_in(&o, &o.stderr_str(), "; no findings\n");
    assert_no_process_holds(sb.secrets());
}

#[test]
fn refused_names_stale_passthrough_and_env_file_values() {
    let sb = Sandbox::new("envwrap_scan_drift");
    let jira_value = sb.secrets().value("JIRA_API_TOKEN").to_string();
    sb.write(
        "daemon.env",
        format!("HTTPS_PROXY=http://proxy.example.invalid:3128\nDEPLOY_KEY={jira_value}\n"),
    );
    let policy = sb.write(
        "p.toml",
        "version = 1\nkeep = [\"HTTPS_PROXY\"]\n\n\
         [[import.env_file]]\npath = \"daemon.env\"\nrole = \"strip\"\nvalues = true\n\n\
         [[import.env_file]]\npath = \"secrets.env\"\nrole = \"refuse\"\n",
    );
    sb.write("secrets.env", format!("DEPLOY_KEY={jira_value}\n"));
    // A process started before the proxy moved, holding a credential and the
    // env file's secret value in its argv.
    let mut stale = sb
        .cmd("bash")
        .env("HTTPS_PROXY", "http://old-proxy.example.invalid:8080")
        .env("GITLAB_TOKEN", sb.secrets().value("GITLAB_TOKEN"))
        .args([
            "-c",
            "sleep 60; true",
            "holder",
            &format!("--key={jira_value}"),
        ])
        .spawn_background();
    let pid = stale.pid();
    // The scanner's own environment holds no credential: the value is known from
    // the policy's env file.
    let o = envwrap(&sb)
        .args(["scan", "--policy"])
        .arg(&policy)
        .args(["--pid", &pid.to_string()])
        .expect_exit(1);
    let out = o.stdout_str();
    let prefix = format!("pid {pid} (bash): ");
    expect_in(
        &o,
        &out,
        &format!("{prefix}argument 4 holds the value of DEPLOY_KEY (from env file"),
    );
    expect_in(
        &o,
        &out,
        &format!("{prefix}its environment holds GITLAB_TOKEN, a credential the policy refuses"),
    );
    expect_in(
        &o,
        &out,
        &format!(
            "{prefix}its environment holds a stale HTTPS_PROXY: its value differs from env file"
        ),
    );
    stale.kill();

    // A process with today's value and nothing else is clean.
    let mut fresh = sb
        .cmd("bash")
        .env("HTTPS_PROXY", "http://proxy.example.invalid:3128")
        .args(["-c", "sleep 60; true"])
        .spawn_background();
    let o = envwrap(&sb)
        .args(["scan", "--policy"])
        .arg(&policy)
        .args(["--pid", &fresh.pid().to_string()])
        .expect_success();
    assert!(o.stdout.is_empty(), "{o:?}");
    fresh.kill();
}

#[test]
fn scan_all_reports_and_counts() {
    let sb = Sandbox::new("envwrap_scan_all");
    let token = sb.secrets().value("ANTHROPIC_API_KEY").to_string();
    let mut holder = sb
        .cmd("bash")
        .args(["-c", "sleep 60; true", "holder", &token])
        .spawn_background();
    let pid = holder.pid();
    let o = envwrap(&sb).args(["scan", "--all"]).run();
    if o.status.code() != Some(1) {
        o.fail("scan --all must find the holder");
    }
    expect_in(
        &o,
        &o.stdout_str(),
        &format!("pid {pid} (bash): argument 4 holds an anthropic API key"),
    );
    expect_in(&o, &o.stderr_str(), "scanned under");
    holder.kill();
}

/// A tmux server started as the README says (the shim preloaded, the shell's
/// credentials in its environment) keeps their names with values self-scrub
/// overwrote: scan reports nothing there, and tmux-env says the server runs
/// the shim. After the shim file is replaced on disk (a reinstall), tmux-env
/// says the server runs an older shim, which still filters what it starts.
#[test]
fn a_server_under_the_shim_is_no_leak_before_and_after_the_shim_is_replaced() {
    let sb = Sandbox::new("envwrap_scan_scrubbed");
    let shim = sb.join("libenvshim.so");
    std::fs::copy(shim_so(), &shim).expect("copy the shim");
    sb.tmux()
        .env_secrets()
        .env("LD_PRELOAD", &shim)
        .args(["new-session", "-d", "-s", "s", "sleep 300"])
        .expect_success();
    let server = sb.server_pid().expect("tmux server");
    let environ = proc_environ(server);
    assert!(
        environ
            .iter()
            .any(|(n, v)| n == b"GH_TOKEN" && !v.is_empty() && v.iter().all(|&b| b == b'*')),
        "self-scrub did not overwrite GH_TOKEN in the server"
    );
    let o = scan(&sb, server).expect_success();
    assert!(o.stdout.is_empty(), "scan reports a scrubbed server: {o:?}");
    let tool = || {
        let mut c = envwrap(&sb);
        c.args(["tmux-env", "-L"]).arg(sb.tmux_socket());
        c.expect_success()
    };
    let before = tool().stdout_str();
    assert!(
        before.contains(": runs libenvshim.so, which filters"),
        "{before}"
    );
    // A reinstall: a new file in the old one's place.
    let fresh = sb.join("libenvshim.so.new");
    std::fs::copy(shim_so(), &fresh).expect("copy the shim again");
    std::fs::rename(&fresh, &shim).expect("replace the shim");
    let after = tool().stdout_str();
    assert!(
        after.contains(": runs an older libenvshim.so (replaced on disk since the server started), which filters"),
        "{after}"
    );
    assert!(!after.contains("restart"), "{after}");
}

/// `scan -L NAME` alone scans that server and what it started, not every
/// process: a pane holding a token is found, a process outside the server
/// holding one is not scanned.
#[test]
fn scan_with_a_socket_scans_that_server_and_its_panes_only() {
    let sb = Sandbox::new("envwrap_scan_socket");
    let gh = sb.secrets().get("GH_TOKEN").assignment();
    sb.tmux()
        .env_secrets()
        .args(["new-session", "-d", "-s", "w", "env", &gh, "sleep", "300"])
        .expect_success();
    let server = sb.server_pid().expect("tmux server");
    let mut outside = sb.cmd("sleep");
    outside.env_secrets().arg("300");
    let outside = outside.spawn_background();
    let o = envwrap(&sb)
        .env_remove("LD_LIBRARY_PATH")
        .args(["scan", "--json", "-L", sb.tmux_socket()])
        .expect_exit(1);
    let lines: Vec<serde_json::Value> = o
        .stdout_str()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let pids: Vec<u64> = lines.iter().filter_map(|f| f["pid"].as_u64()).collect();
    let pane: u64 = sb
        .tmux()
        .args(["list-panes", "-F", "#{pane_pid}"])
        .expect_success()
        .stdout_str()
        .trim()
        .parse()
        .expect("the pane's pid");
    assert!(
        pane != u64::from(server),
        "the pane is a process of its own"
    );
    assert!(
        pids.contains(&pane),
        "the pane's GH_TOKEN is not reported: {lines:?}"
    );
    assert!(
        !pids.contains(&u64::from(outside.pid())),
        "a process outside the server was scanned: {lines:?}"
    );
}
