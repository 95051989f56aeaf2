//! Every bad input of envwrap gets a clear message and its exit code: 125 for
//! envwrap's own errors (unknown flags, a missing command, a policy error, an invalid
//! NAME=VALUE operand, a -S string with unbalanced quotes), 126 for a command that
//! cannot be executed, 127 for one that is not found, and scan's handling of a PID
//! that vanished or cannot be read. No message may hold a seeded value (the harness
//! checks every output).

use std::os::unix::fs::PermissionsExt;

use crate::envwrap_util::*;
use envshim_e2e::*;

#[track_caller]
fn fails_with(sb: &Sandbox, args: &[&str], code: i32, needles: &[&str]) -> Outcome {
    let o = envwrap(sb)
        .env_secrets()
        .arg("--no-preload")
        .args(args)
        .expect_exit(code);
    let err = o.stderr_str();
    for n in needles {
        expect_in(&o, &err, n);
    }
    assert!(err.starts_with("envwrap: "), "{o:?}");
    o
}

#[test]
fn unknown_flags() {
    let sb = Sandbox::new("envwrap_bad_flags");
    fails_with(
        &sb,
        &["--bogus", "true"],
        125,
        &["unrecognized option '--bogus'", "envwrap --help"],
    );
    fails_with(&sb, &["-z", "true"], 125, &["invalid option -- 'z'"]);
    fails_with(
        &sb,
        &["--mode", "loud", "true"],
        125,
        &["--mode takes 'enforce' or 'audit'"],
    );
    fails_with(&sb, &["-u"], 125, &["requires an argument"]);
    fails_with(&sb, &["--policy"], 125, &["requires an argument"]);
    fails_with(
        &sb,
        &["--json=yes", "true"],
        125,
        &["doesn't allow an argument"],
    );
    // A value given to a mistyped option is never echoed.
    let value = sb.secrets().value("GH_TOKEN").to_string();
    fails_with(
        &sb,
        &[&format!("--token={value}"), "true"],
        125,
        &["'--token'"],
    );
}

/// Without a command, envwrap prints the environment a child would get, as
/// env(1) prints its own: what the policy refuses is not there; `-0` ends each
/// entry with NUL, and is refused with a command.
#[test]
fn no_command_prints_the_environment_a_child_would_get() {
    let sb = Sandbox::new("envwrap_no_command");
    let o = envwrap(&sb)
        .env_secrets()
        .env("BUILD_NOTE", "plain")
        .expect_success();
    let out = o.stdout_str();
    assert!(out.lines().any(|l| l == "BUILD_NOTE=plain"), "{out}");
    assert!(
        !out.lines().any(|l| l.starts_with("GH_TOKEN=")),
        "GH_TOKEN printed"
    );
    sb.secrets()
        .assert_absent("envwrap's environment listing", &o.stdout);
    let o = envwrap(&sb)
        .args(["-0", "-i", "A=1", "B=x y"])
        .expect_success();
    assert_eq!(o.stdout, b"A=1\0B=x y\0");
    let o = envwrap(&sb).args(["-i", "--", "A=1"]).expect_success();
    assert_eq!(o.stdout, b"A=1\n");
    fails_with(&sb, &["-0", "true"], 125, &["takes no command"]);
}

#[test]
fn not_found_and_not_executable() {
    let sb = Sandbox::new("envwrap_not_exec");
    fails_with(
        &sb,
        &["no-such-command-envwrap-test"],
        127,
        &["no-such-command-envwrap-test: command not found"],
    );
    fails_with(&sb, &["./missing"], 127, &["./missing"]);
    let plain = sb.write("plain.txt", "not a program\n");
    std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
    fails_with(
        &sb,
        &["./plain.txt"],
        126,
        &["plain.txt", "ermission denied"],
    );
    fails_with(&sb, &[sb.path().to_str().unwrap()], 126, &[]);
    // Found on PATH but not executable: 126, as execvp's EACCES.
    sb.mkdir("bin");
    let f = sb.write("bin/tool", "#!/bin/sh\n");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    let path = format!("PATH={}", sb.join("bin").display());
    if !is_root() {
        fails_with(&sb, &["-i", &path, "tool"], 126, &["permission denied"]);
    } else {
        // root may execute any file with an x bit; without one it still may not.
        fails_with(&sb, &["-i", &path, "tool"], 126, &["tool"]);
    }
}

#[test]
fn policy_errors() {
    let sb = Sandbox::new("envwrap_bad_policy");
    let bad = sb.write("bad.toml", "version = 1\nbogus = 2\n");
    let o = fails_with(
        &sb,
        &["--policy", bad.to_str().unwrap(), "true"],
        125,
        &["bad.toml:2:1: unknown field `bogus`"],
    );
    assert!(o.stdout.is_empty());
    fails_with(
        &sb,
        &["--policy", "missing.toml", "true"],
        125,
        &["missing.toml", "cannot read policy"],
    );
    let v2 = sb.write("v2.toml", "version = 2\n");
    fails_with(
        &sb,
        &["--policy", v2.to_str().unwrap(), "true"],
        125,
        &["v2.toml:1:11: unsupported policy version 2"],
    );
    // The same error through ENVSHIM_POLICY.
    let o = envwrap(&sb)
        .env("ENVSHIM_POLICY", &bad)
        .arg("true")
        .expect_exit(125);
    expect_in(&o, &o.stderr_str(), "bad.toml:2:1:");
    // check reports it as FILE:LINE:COLUMN at the start of the line.
    let o = envwrap(&sb).args(["check"]).arg(&bad).expect_exit(125);
    assert!(
        o.stderr_str()
            .starts_with(&format!("{}:2:1: unknown field", bad.display())),
        "{o:?}"
    );
}

#[test]
fn invalid_operands() {
    let sb = Sandbox::new("envwrap_bad_operand");
    fails_with(
        &sb,
        &["=value", "true"],
        125,
        &["invalid NAME=VALUE operand 1: the name is empty"],
    );
    fails_with(
        &sb,
        &["A=1", "=x", "true"],
        125,
        &["invalid NAME=VALUE operand 2"],
    );
    fails_with(&sb, &["-u", "A=B", "true"], 125, &["cannot unset"]);
    fails_with(
        &sb,
        &["-C", "/no/such/dir", "true"],
        125,
        &["cannot change directory to /no/such/dir"],
    );
    fails_with(
        &sb,
        &["--log", "/no/such/dir/log.jsonl", "true"],
        125,
        &["--log: cannot open"],
    );
}

#[test]
fn split_string_errors() {
    let sb = Sandbox::new("envwrap_bad_split");
    fails_with(
        &sb,
        &["-S", "'unbalanced", "true"],
        125,
        &["-S string: no terminating single quote"],
    );
    fails_with(
        &sb,
        &["-S", "\"unbalanced", "true"],
        125,
        &["-S string: no terminating double quote"],
    );
    fails_with(
        &sb,
        &["-S", "a\\q", "true"],
        125,
        &["invalid backslash sequence"],
    );
    fails_with(
        &sb,
        &["-S", "$HOME", "true"],
        125,
        &["only ${NAME} expansion"],
    );
    // The same from a #! line.
    let script = sb.write(
        "bad.sh",
        format!(
            "#!{} -S --no-preload 'oops -- /bin/sh\necho never\n",
            envwrap_bin().display()
        ),
    );
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = sb.cmd(&script).expect_exit(125);
    expect_in(&o, &o.stderr_str(), "no terminating single quote");
    assert!(o.stdout.is_empty());
}

#[test]
fn preload_without_the_shim_installed() {
    let sb = Sandbox::new("envwrap_no_shim");
    let alone = sb.join("envwrap");
    std::fs::copy(envwrap_bin(), &alone).unwrap();
    let o = sb.cmd(&alone).args(["--preload", "true"]).expect_exit(125);
    expect_in(
        &o,
        &o.stderr_str(),
        "--preload: libenvshim.so is not installed beside envwrap",
    );
    // Without --preload the same binary runs the command.
    sb.cmd(&alone).arg("true").expect_success();
}

#[test]
fn tool_usage_errors() {
    let sb = Sandbox::new("envwrap_tool_errors");
    let o = envwrap(&sb)
        .args(["check", "a.toml", "b.toml"])
        .expect_exit(125);
    expect_in(&o, &o.stderr_str(), "at most one POLICY");
    let o = envwrap(&sb).args(["explain", "tmux"]).expect_exit(125);
    expect_in(&o, &o.stderr_str(), "put '--' before COMMAND");
    let o = envwrap(&sb).args(["scan", "--pid", "x"]).expect_exit(125);
    expect_in(&o, &o.stderr_str(), "--pid takes a process id");
    let o = envwrap(&sb)
        .args(["scan", "--all", "--pid", "1"])
        .expect_exit(125);
    expect_in(&o, &o.stderr_str(), "exclude each other");
    let o = envwrap(&sb).args(["doctor"]).expect_exit(125);
    expect_in(&o, &o.stderr_str(), "doctor takes one PROGRAM");
    let o = envwrap(&sb)
        .args(["doctor", "no-such-program-envwrap-test"])
        .expect_exit(127);
    expect_in(&o, &o.stderr_str(), "not found");
    let o = envwrap(&sb).args(["explain", "--bogus"]).expect_exit(125);
    expect_in(&o, &o.stderr_str(), "envwrap explain --help");
}

#[test]
fn scan_of_a_vanished_pid() {
    let sb = Sandbox::new("envwrap_scan_vanished");
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    let o = envwrap(&sb)
        .args(["scan", "--pid", &pid.to_string()])
        .expect_exit(125);
    let err = o.stderr_str();
    expect_in(
        &o,
        &err,
        &format!("pid {pid}: vanished before it could be read"),
    );
    expect_in(&o, &err, "skipped: 1 vanished");
}

#[test]
fn scan_of_an_unreadable_pid() {
    let sb = Sandbox::new("envwrap_scan_unreadable");
    // A process of ours, scanned by another user: its environ is not readable.
    let mut holder = sb.cmd("sleep").arg("60").spawn_background();
    let pid = holder.pid().to_string();
    let base = if is_root() {
        if !require(
            std::path::Path::new("/usr/bin/setpriv").exists(),
            "setpriv (util-linux) is needed to scan as another user",
        ) {
            return;
        }
        // nobody must be able to reach the binary: a world-readable copy.
        std::fs::set_permissions(sb.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let copy = sb.join("envwrap-copy");
        std::fs::copy(envwrap_bin(), &copy).unwrap();
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut c = sb.cmd("/usr/bin/setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(&copy)
            .env("HOME", "/nonexistent");
        c
    } else {
        // Not root: pid 1 belongs to root, whose environ we may not read.
        holder.kill();
        let mut c = envwrap(&sb);
        c.env("HOME", "/nonexistent");
        return check_unreadable(c, "1");
    };
    check_unreadable(base, &pid);
    holder.kill();
}

fn check_unreadable(base: TestCommand, pid: &str) {
    let o = base.clone().args(["scan", "--pid", pid]).expect_exit(125);
    let err = o.stderr_str();
    expect_in(
        &o,
        &err,
        &format!("pid {pid}: environment not readable (permission denied)"),
    );
    expect_in(
        &o,
        &err,
        "skipped: 1 environment not readable (permission denied)",
    );
    // --all never fails because of such processes: it counts them and goes on.
    let o = base.clone().args(["scan", "--all"]).run();
    if o.timed_out || !matches!(o.status.code(), Some(0) | Some(1)) {
        o.fail("scan --all must not fail because some processes cannot be read");
    }
    expect_in(
        &o,
        &o.stderr_str(),
        "environment not readable (permission denied)",
    );
}

/// A policy file that cannot be read as one: over 1 MiB, a symbolic link loop, a
/// directory. envwrap exits 125 with one line naming the file and the reason, and
/// runs nothing.
#[test]
fn policy_files_that_cannot_be_read() {
    let sb = Sandbox::new("envwrap_unreadable_policy");
    let mut text = String::from("version = 1\n");
    while text.len() <= 1 << 20 {
        text.push_str("# padding padding padding padding padding padding padding\n");
    }
    let huge = sb.write("huge.toml", text);
    let (a, b) = (sb.join("a.toml"), sb.join("b.toml"));
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    let dir = sb.mkdir("dir.toml");
    let marker = sb.join("ran");
    for (policy, reason) in [
        (&huge, "policy file is larger than 1048576 bytes"),
        (&a, "cannot read policy: Too many levels of symbolic links"),
        (&dir, "cannot read policy: it is a directory"),
    ] {
        let want = format!("envwrap: {}: {reason}\n", policy.display());
        // As --policy, and through ENVSHIM_POLICY.
        for through_env in [false, true] {
            let mut c = envwrap(&sb);
            c.env_secrets().arg("--no-preload");
            if through_env {
                c.env("ENVSHIM_POLICY", policy);
            } else {
                c.arg("--policy").arg(policy);
            }
            let o = c.args(["touch"]).arg(&marker).expect_exit(125);
            assert_eq!(o.stderr_str(), want, "{o:?}");
            assert!(o.stdout.is_empty(), "{o:?}");
            assert!(!marker.exists(), "envwrap ran the command: {o:?}");
        }
        // check says the same, as FILE: reason.
        let o = envwrap(&sb).arg("check").arg(policy).expect_exit(125);
        assert!(
            o.stderr_str()
                .contains(&format!("{}: {reason}", policy.display())),
            "{o:?}"
        );
    }
}

/// A #! line passes everything after the program as one argument: envwrap says
/// to put -S first, and with it the script runs under the policy.
#[test]
fn a_shebang_line_without_s_gets_a_hint() {
    let sb = Sandbox::new("envwrap_shebang");
    let policy = sb.write("p.toml", "version = 1\n");
    let line = |s: &str| {
        format!(
            "#!{} {s}--policy {} -- /bin/sh\necho ran under envwrap\n",
            envwrap_bin().display(),
            policy.display()
        )
    };
    let without = sb.write_executable("without.sh", line(""));
    let o = sb.cmd(&without).expect_exit(125);
    expect_in(&o, &o.stderr_str(), "put -S first");
    let with = sb.write_executable("with.sh", line("-S "));
    let o = sb.cmd(&with).expect_success();
    expect_in(&o, &o.stdout_str(), "ran under envwrap");
}

/// `-v` (`--debug`) says each step on stderr, as GNU env does, with names and
/// arguments as messages show them: never a seeded value (the harness checks
/// every output for them).
#[test]
fn debug_says_each_step_without_a_value() {
    let sb = Sandbox::new("envwrap_debug");
    let o = envwrap(&sb)
        .env_secrets()
        .args(["--no-preload", "-v", "-u", "HOME", "A=1", "echo", "hi"])
        .expect_success();
    let said = o.stderr_str();
    for want in [
        "envwrap: debug: unset:    HOME",
        "envwrap: debug: setenv:   A",
        "envwrap: debug: env refuse GH_TOKEN (credential.name)",
        "envwrap: debug:    arg[1]= 'hi'",
    ] {
        assert!(said.lines().any(|l| l == want), "no line {want:?}:\n{said}");
    }
    assert!(
        said.lines()
            .any(|l| l.starts_with("envwrap: debug: executing: /") && l.ends_with("/echo")),
        "no executing line:\n{said}"
    );
    assert_eq!(o.stdout_str(), "hi\n");
}

/// One mask line of the command's /proc/self/status (`SigIgn`, `SigBlk`), run
/// through envwrap with `args` before it.
fn signal_mask(sb: &Sandbox, args: &[&str], line: &str) -> u64 {
    let o = envwrap(sb)
        .arg("--no-preload")
        .args(args)
        .args(["--", "grep", &format!("^{line}:"), "/proc/self/status"])
        .expect_success();
    let text = o.stdout_str();
    let hex = text.split_whitespace().nth(1).unwrap_or("");
    // The standard signals only: the real-time ones are the C library's and the
    // harness's business.
    u64::from_str_radix(hex, 16).unwrap_or_else(|_| panic!("no {line} in {text:?}")) & 0x7fff_ffff
}

/// GNU env's signal options: the command starts with the signals named
/// ignored, blocked or back at their default; KILL and STOP cannot be named;
/// --supervise refuses them.
#[test]
fn signal_options_set_what_the_command_starts_with() {
    let sb = Sandbox::new("envwrap_signals");
    let bit = |n: u32| 1u64 << (n - 1);
    // What the command inherits from the test's own parent (a runner under
    // nohup ignores SIGHUP): the options change what they name on top of it.
    let ignored = signal_mask(&sb, &[], "SigIgn");
    let blocked = signal_mask(&sb, &[], "SigBlk");
    assert_eq!(ignored & bit(13), 0, "SIGPIPE is back at its default");
    assert_eq!(
        signal_mask(&sb, &["--ignore-signal=INT,SIGTERM"], "SigIgn"),
        ignored | bit(2) | bit(15)
    );
    assert_eq!(
        signal_mask(&sb, &["--ignore-signal=PIPE"], "SigIgn"),
        ignored | bit(13)
    );
    assert_eq!(
        signal_mask(&sb, &["--block-signal=USR1"], "SigBlk"),
        blocked | bit(10)
    );
    assert_eq!(
        signal_mask(&sb, &["--default-signal"], "SigIgn"),
        0,
        "every signal back at its default"
    );
    let all = signal_mask(&sb, &["--ignore-signal"], "SigIgn");
    assert!(
        all & bit(15) != 0 && all & bit(9) == 0 && all & bit(19) == 0,
        "{all:#x}"
    );
    assert_eq!(
        signal_mask(&sb, &["--ignore-signal", "--default-signal=TERM"], "SigIgn"),
        all & !bit(15)
    );
    let o = envwrap(&sb)
        .args([
            "--no-preload",
            "--block-signal=2",
            "--list-signal-handling",
            "true",
        ])
        .expect_success();
    assert!(
        o.stderr_str()
            .lines()
            // INT blocked, on top of what it inherits (a background job
            // starts with INT ignored).
            .any(|l| l.starts_with("INT")
                && l.rsplit(':')
                    .next()
                    .is_some_and(|h| h.split_whitespace().any(|w| w == "BLOCK"))),
        "{}",
        o.stderr_str()
    );
    fails_with(
        &sb,
        &["--ignore-signal=KILL", "true"],
        125,
        &["not a signal that can be changed"],
    );
    fails_with(
        &sb,
        &["--supervise", "--ignore-signal=INT", "true"],
        125,
        &["--supervise"],
    );
}

/// Write errors are errors (issue 51): every tool and the run mode that
/// prints exit 125 with one message when stdout is full or closed, as GNU env
/// does, where they used to report success. A `/dev/null` stdout is no error.
#[test]
fn a_failed_write_to_stdout_is_an_error() {
    let sb = Sandbox::new("envwrap_write_errors");
    let policy = permissive(&sb);
    let bin = envwrap_bin().display().to_string();
    let policy = policy.display().to_string();
    let commands = [
        String::new(),
        "--version".into(),
        "--help".into(),
        format!("check --policy {policy}"),
        format!("explain --policy {policy} -- true"),
        "which".into(),
        "doctor /bin/true".into(),
        "secret list".into(),
    ];
    for args in &commands {
        for (how, redirect, rc) in [
            ("full", ">/dev/full", 125),
            ("closed", ">&-", 125),
            ("/dev/null", ">/dev/null", 0),
        ] {
            let o = sb
                .cmd("sh")
                .arg("-c")
                .arg(format!("{bin} {args} {redirect}; echo \"rc=$?\" >&2"))
                .run();
            let err = o.stderr_str();
            o.check(
                err.contains(&format!("rc={rc}")),
                &format!("envwrap {args} with stdout {how}: not {rc}"),
            );
            if rc == 125 {
                o.check(
                    err.contains("envwrap: write error: "),
                    &format!("envwrap {args} with stdout {how}: no message"),
                );
            }
        }
    }
}

/// The usage line is true (issue 51): `--` ends the options, before any
/// NAME=VALUE, as env(1)'s grammar has it; after them it is a command named
/// `--`, which fails as env's does, with a pointer to the right order.
#[test]
fn the_usage_line_says_where_the_double_dash_goes() {
    let sb = Sandbox::new("envwrap_usage_dashes");
    let o = envwrap(&sb).arg("--help").expect_success();
    expect_in(
        &o,
        &o.stdout_str(),
        "envwrap [OPTION]... [--] [-] [NAME=VALUE]... [COMMAND [ARG]...]",
    );
    let o = envwrap(&sb)
        .args(["--no-preload", "--", "A=1", "printenv", "A"])
        .expect_success();
    o.check(o.stdout_str() == "1\n", "the documented order did not run");
    fails_with(
        &sb,
        &["A=1", "--", "printenv", "A"],
        127,
        &["--: command not found", "`--` goes before NAME=VALUE"],
    );
}

/// A tool's name or an option misspelt gets the one meant (issue 51, 5).
#[test]
fn a_misspelt_tool_is_suggested() {
    let sb = Sandbox::new("envwrap_tool_typo");
    fails_with(
        &sb,
        &["chek", "x.toml"],
        127,
        &["chek: command not found (did you mean `envwrap check`?)"],
    );
    fails_with(
        &sb,
        &["--polcy", "p.toml", "--", "true"],
        125,
        &["unrecognized option '--polcy' (did you mean '--policy'?)"],
    );
    let o = envwrap(&sb)
        .args(["check", "--jsn", "p.toml"])
        .expect_exit(125);
    expect_in(
        &o,
        &o.stderr_str(),
        "unrecognized option '--jsn' (did you mean '--json'?)",
    );
}
