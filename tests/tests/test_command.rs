//! `TestCommand`: outputs are checked for seeded values automatically, every failure
//! report is redacted, timeouts kill, and control runs can opt out explicitly.

use std::time::{Duration, Instant};

use envshim_e2e::*;

fn panic_message(e: Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

const LEAKY: &str = r#"echo "out: $1"; echo "err: $GH_TOKEN" >&2; exit 3"#;

#[test]
fn failure_report_is_redacted() {
    let sb = Sandbox::new("cmd_redacted");
    let token = sb.secrets().value("GH_TOKEN").to_string();
    let jwt = sb.secrets().value("SESSION_JWT").to_string();
    let mut cmd = sb.cmd("sh");
    cmd.args(["-c", LEAKY, "sh", &jwt])
        .env("GH_TOKEN", &token)
        .allow_secrets_in_output();

    let r = std::panic::catch_unwind(|| {
        cmd.expect_success();
    });
    let msg = panic_message(r.expect_err("exit 3 is not success"));
    assert!(
        !msg.contains(&token) && !msg.contains(&jwt),
        "report holds a value"
    );
    assert!(sb.secrets().is_clean(msg.as_bytes()));
    assert!(msg.contains("expected the command to succeed"), "{msg}");
    assert!(msg.contains("exit code 3"), "{msg}");
    assert!(msg.contains("out: <SESSION_JWT value>"), "{msg}");
    assert!(msg.contains("err: <GH_TOKEN value>"), "{msg}");
    assert!(
        msg.contains("<SESSION_JWT value>"),
        "argv not redacted: {msg}"
    );
    assert!(
        msg.contains("set: TMUX_TMPDIR, GH_TOKEN"),
        "env names missing: {msg}"
    );
    assert!(
        msg.contains(&format!("cwd: {}", sb.path().display())),
        "{msg}"
    );

    // The same command, expecting its real exit code, succeeds, and a control run
    // gets the values back.
    let o = cmd.expect_exit(3);
    assert!(o.stdout_str().contains(&jwt));
    assert!(o.stderr_str().contains(&token));
    assert!(!o.report().contains(&token));
}

#[test]
fn output_holding_a_value_fails_unless_allowed() {
    let sb = Sandbox::new("cmd_autocheck");
    let token = sb.secrets().value("AWS_ACCESS_KEY_ID").to_string();
    let r = std::panic::catch_unwind(|| {
        // planted_leak: this output holds a value on purpose; the secret sweep
        // does not collect it (the check itself still runs).
        sb.cmd("sh")
            .args(["-c", "printf 'key=%s\\n' \"$1\"", "sh", &token])
            .planted_leak()
            .run();
    });
    let msg = panic_message(r.expect_err("a value on stdout must fail the run"));
    assert!(
        msg.contains("value of AWS_ACCESS_KEY_ID was found in the stdout"),
        "{msg}"
    );
    assert!(msg.contains("key=<AWS_ACCESS_KEY_ID value>"), "{msg}");
    assert!(!msg.contains(&token));

    // stderr alone allowed: stdout still checked.
    let r = std::panic::catch_unwind(|| {
        sb.cmd("sh")
            .args(["-c", "echo \"$1\"", "sh", &token])
            .allow_secrets_in_stderr()
            .planted_leak()
            .run();
    });
    assert!(r.is_err());
    // stdout allowed: passes.
    sb.cmd("sh")
        .args(["-c", "echo \"$1\"", "sh", &token])
        .allow_secrets_in_stdout()
        .expect_success();
    // Seeded secrets in the env of a clean program are fine: only output is checked.
    sb.cmd("true").env_secrets().expect_success();
}

#[test]
fn assert_absent_names_variable_and_place() {
    let secrets = Secrets::generate();
    let text = format!(
        "header\nAuthorization: Bearer {}\n",
        secrets.value("ANTHROPIC_API_KEY")
    );
    secrets.assert_absent("clean text", b"nothing here");
    let r = std::panic::catch_unwind(|| secrets.assert_absent("the audit log", text.as_bytes()));
    let msg = panic_message(r.expect_err("must fail"));
    assert!(
        msg.contains("ANTHROPIC_API_KEY") && msg.contains("the audit log"),
        "{msg}"
    );
    assert!(msg.contains("Bearer <ANTHROPIC_API_KEY value>"), "{msg}");
    assert!(secrets.is_clean(msg.as_bytes()));
}

#[test]
fn inherited_real_credentials_are_removed() {
    // Whatever the outer environment holds under seeded names never reaches a child.
    let sb = Sandbox::new("cmd_inherit");
    let o = sb.cmd("env").expect_success();
    for name in SECRET_NAMES {
        assert!(
            !o.stdout_str()
                .lines()
                .any(|l| l.starts_with(&format!("{name}="))),
            "{name} inherited"
        );
    }
    assert!(o
        .stdout_str()
        .lines()
        .any(|l| l == format!("TMUX_TMPDIR={}", sb.path().display())));
    assert!(!o.stdout_str().lines().any(|l| l.starts_with("TMUX=")));
}

#[test]
fn stdin_and_cwd() {
    let sb = Sandbox::new("cmd_stdin");
    let o = sb
        .cmd("sh")
        .args(["-c", "cat; pwd"])
        .stdin("piped in\n")
        .expect_success();
    assert_eq!(
        o.stdout_str(),
        format!("piped in\n{}\n", sb.path().display())
    );
}

#[test]
fn timeout_kills_the_process_group() {
    let sb = Sandbox::new("cmd_timeout");
    let start = Instant::now();
    let o = sb
        .cmd("sh")
        .args(["-c", "sleep 30 & sleep 30"])
        .timeout(Duration::from_millis(300))
        .run();
    assert!(o.timed_out);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "took {:?}",
        start.elapsed()
    );
    let r = std::panic::catch_unwind(|| {
        sb.cmd("sleep")
            .arg("30")
            .timeout(Duration::from_millis(100))
            .expect_success();
    });
    assert!(panic_message(r.expect_err("timeout is failure")).contains("killed after timeout"));
}

#[test]
fn descendant_holding_the_pipe_does_not_hang() {
    let sb = Sandbox::new("cmd_pipe_held");
    let start = Instant::now();
    let o = sb
        .cmd("sh")
        .args(["-c", "sleep 60 & echo started"])
        .expect_success();
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(o.stdout_str(), "started\n");
    assert!(o.note.is_some());
}

#[test]
fn missing_program_panics_with_description() {
    let sb = Sandbox::new("cmd_missing");
    let r = std::panic::catch_unwind(|| {
        sb.cmd("/nonexistent/envshim-e2e-program")
            .arg(sb.secrets().value("GH_TOKEN"))
            .run();
    });
    let msg = panic_message(r.expect_err("must fail"));
    assert!(
        msg.contains("could not start") && msg.contains("<GH_TOKEN value>"),
        "{msg}"
    );
    assert!(sb.secrets().is_clean(msg.as_bytes()));
}
