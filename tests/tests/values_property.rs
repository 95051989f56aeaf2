//! A credential's value, wherever it stands, reaches no child and no message
//! (issue: values as a property): a copy inside another variable's value
//! (`Bearer $TOKEN`, `x$TOKEN`, `${KEY}Z`), a token shape glued to other text,
//! and a by-name credential in a program's path, through the shim and envwrap.
//!
//! Every output is checked for every seeded value by the harness (`TestCommand`);
//! the children's environments and the log are read and checked here.

use envshim_e2e::rng::Rng;
use envshim_e2e::*;

/// The forms of section 1, as a launcher script writes them.
const COPIES: &str = "export AUTHZ=\"Bearer $JIRA_API_TOKEN\" URL=\"x$GH_TOKEN\" \
     KEYZ=\"${ANTHROPIC_API_KEY}Z\" MID=\"a:${OPENAI_API_KEY}:b\"";

/// Names of the variables that hold a copy.
const COPY_NAMES: [&str; 4] = ["AUTHZ=", "URL=", "KEYZ=", "MID="];

fn child_env(sb: &Sandbox) -> String {
    String::from_utf8_lossy(&sb.read("child.env")).into_owned()
}

#[test]
fn a_copy_inside_another_value_reaches_no_child_under_the_shim() {
    let sb = Sandbox::new("values_copy_shim");
    let script = format!("{COPIES}; sh -c 'env > child.env'");
    let mut c = sb.cmd("/bin/bash");
    c.args(["-c", &script]).with_shim().env_secrets();
    c.expect_success();
    let env = child_env(&sb);
    sb.secrets()
        .assert_absent("the grandchild's environment", env.as_bytes());
    for name in COPY_NAMES {
        assert!(
            !env.lines().any(|l| l.starts_with(name)),
            "{name} reached the grandchild"
        );
    }
    assert!(
        env.contains("PATH="),
        "the grandchild's environment is empty"
    );
}

#[test]
fn a_copy_inside_another_value_reaches_no_child_under_envwrap() {
    let sb = Sandbox::new("values_copy_envwrap");
    let s = sb.secrets();
    let out = sb
        .cmd(envwrap_bin())
        .args(["--", "/bin/sh", "-c", "env > child.env"])
        .env_secrets()
        .env("AUTHZ", format!("Bearer {}", s.value("JIRA_API_TOKEN")))
        .env("URL", format!("x{}", s.value("GH_TOKEN")))
        .env("KEYZ", format!("{}Z", s.value("ANTHROPIC_API_KEY")))
        .env("MID", format!("a:{}:b", s.value("OPENAI_API_KEY")))
        .env("GLUED", format!("x{}Z", s.value("GH_TOKEN")))
        .run();
    assert_eq!(out.status.code(), Some(0), "{}", out.report());
    let env = child_env(&sb);
    sb.secrets()
        .assert_absent("the child's environment", env.as_bytes());
    for name in COPY_NAMES.iter().chain(&["GLUED="]) {
        assert!(
            !env.lines().any(|l| l.starts_with(name)),
            "{name} reached the child"
        );
    }
}

/// A base64 copy, as git's `http.extraheader` and curl's Basic auth carry a
/// token (`AUTHORIZATION: basic base64(x-access-token:TOKEN)`), made by the
/// real `base64` in the launcher script: the header variable reaches no child
/// under the shim, and an argument holding it refuses the exec.
#[test]
fn a_base64_copy_reaches_no_child_and_no_argument_under_the_shim() {
    let sb = Sandbox::new("values_base64_shim");
    let script = "for p in x-access-token: u: ab:; do \
                  export \"HDR_${#p}=AUTHORIZATION: basic $(printf '%s%s' \"$p\" \"$GH_TOKEN\" | base64 -w0)\"; \
                  done; sh -c 'env > child.env'; \
                  /bin/echo \"$HDR_2\" > echoed.txt; echo \"echo: $?\"";
    let mut c = sb.cmd("/bin/bash");
    c.args(["-c", script]).with_shim().env_secrets();
    let o = c.expect_success();
    let env = child_env(&sb);
    for name in ["HDR_15=", "HDR_2=", "HDR_3="] {
        assert!(
            !env.lines().any(|l| l.starts_with(name)),
            "{name} reached the grandchild"
        );
    }
    assert!(
        env.contains("PATH="),
        "the grandchild's environment is empty"
    );
    assert!(
        o.stdout_str().contains("echo: 126"),
        "an argument holding a base64 copy was not refused: {}",
        o.report()
    );
    assert!(
        o.stderr_str().contains("holds the value of GH_TOKEN"),
        "{}",
        o.report()
    );
}

/// A by-name credential (no token shape) in the path of the program to run:
/// refused, and every message, JSON warning and log line shows the path with the
/// value replaced by its description.
#[test]
fn a_by_name_credential_in_a_program_path_is_never_printed() {
    let sb = Sandbox::new("values_path_messages");
    let jira = sb.secrets().value("JIRA_API_TOKEN").to_string();
    let dir = sb.mkdir(format!("opt/{jira}"));
    let rel = format!("opt/{jira}/prog");
    sb.write_executable(&rel, "#!/bin/sh\necho ran > ran.txt\n");
    let prog = dir.join("prog");
    let log = sb.join("envwrap.log");
    // envwrap: people's text, --json and --log.
    for json in [false, true] {
        let mut c = sb.cmd(envwrap_bin());
        c.arg("--log").arg(&log);
        if json {
            c.arg("--json");
        }
        let out = c.arg("--").arg(&prog).env_secrets().run();
        assert_eq!(out.status.code(), Some(126), "{}", out.report());
        assert!(
            out.stderr_str().contains(
                "refused to run prog: the program's path holds the value of JIRA_API_TOKEN"
            ),
            "{}",
            out.report()
        );
    }
    sb.secrets()
        .assert_absent("envwrap's log", &sb.read("envwrap.log"));
    // The shim: its message, and its log under a policy that keeps one.
    let shim_log = sb.join("shim.log");
    let policy = sb.write(
        "log.toml",
        format!("version = 1\nlog = \"{}\"\n", shim_log.display()),
    );
    for with_policy in [false, true] {
        // python3 says nothing of the refused exec itself (a shell would print
        // the path in its own error): what stderr holds is the shim's.
        let mut c = sb.cmd("python3");
        c.args([
            "-c",
            "import os, sys\ntry:\n    os.execv(sys.argv[1], [sys.argv[1]])\nexcept OSError:\n    sys.exit(3)",
        ])
        .arg(&prog)
        .with_shim()
        .env_secrets();
        if with_policy {
            c.with_policy(&policy);
        }
        let out = c.run();
        assert_ne!(out.status.code(), Some(0), "{}", out.report());
        assert!(
            out.stderr_str().contains("refused to run"),
            "{}",
            out.report()
        );
    }
    if shim_log.exists() {
        sb.secrets()
            .assert_absent("the shim's log", &sb.read("shim.log"));
    }
    assert!(!sb.join("ran.txt").exists(), "the program ran");
}

/// Bytes a launcher may write next to a copy: word bytes (which glue to a
/// token), separators and quotes. No newline: the carrier is read with `$(cat)`.
const NEIGHBOURS: &[u8] = b"aZ09_-:/.=@+ ,;'\"";

/// Random text of 0 to 6 neighbouring bytes.
fn around(rng: &mut Rng) -> String {
    let len = rng.below(7) as usize;
    rng.string_from(NEIGHBOURS, len)
}

/// Where a round puts the copy: in another variable's value, or in an argument.
#[derive(Clone, Copy, Debug)]
enum Carrier {
    Variable,
    Argument,
}

/// The three front ends. Under each, a launcher script (bash) reads the
/// credential and the carrier from files (so no command line the test builds
/// holds them), exports them, and starts a grandchild that records its
/// environment and argv: directly under the shim and `--supervise` (no
/// preload: the supervisor alone judges that exec), through `envwrap --` as a
/// drop-in in the script.
#[derive(Clone, Copy, Debug)]
enum FrontEnd {
    Shim,
    Envwrap,
    Supervise,
}

fn launcher_script(front: FrontEnd, name: Option<&str>, carrier: Carrier) -> String {
    let mut script = String::new();
    if let Some(name) = name {
        script.push_str(&format!("export {name}=\"$(cat secret)\"; "));
    }
    if let Carrier::Variable = carrier {
        script.push_str("export CARRIER=\"$(cat carrier)\"; ");
    }
    if let FrontEnd::Envwrap = front {
        script.push_str("\"$ENVWRAP\" -- ");
    }
    script.push_str("sh -c 'env > child.env; printf %s \"$0\" > child.arg'");
    if let Carrier::Argument = carrier {
        script.push_str(" \"$(cat carrier)\"");
    }
    script
}

fn front_end_command(sb: &Sandbox, front: FrontEnd, script: &str) -> TestCommand {
    let mut c = match front {
        FrontEnd::Shim => {
            let mut c = sb.cmd("/bin/bash");
            c.with_shim();
            c
        }
        FrontEnd::Envwrap => {
            let mut c = sb.cmd("/bin/bash");
            c.env("ENVWRAP", envwrap_bin());
            c
        }
        FrontEnd::Supervise => {
            let mut c = sb.cmd(envwrap_bin());
            c.args(["--supervise", "--no-preload", "--", "/bin/bash"])
                .timeout(std::time::Duration::from_secs(120));
            c
        }
    };
    c.arg("-c").arg(script);
    c
}

/// Section 4 through the real front ends: a seeded credential (by name, or by
/// shape alone with its variable unset) between random neighbouring bytes, in
/// another variable or an argument, under the shim, envwrap and `--supervise`.
/// Whatever each front end does (strip, refuse), the grandchild's environment
/// and argv hold no seeded value, and neither does any output (the harness).
#[test]
fn a_credential_between_random_bytes_reaches_no_grandchild_under_any_front_end() {
    let mut rng = Rng::from_entropy();
    for round in 0..6 {
        let sb = Sandbox::new("values_random");
        let secrets = sb.secrets();
        let secret = secrets
            .iter()
            .nth(rng.below(secrets.iter().count() as u64) as usize)
            .expect("a secret");
        // A shaped token is found by its shape even when its own variable is
        // not set; a by-name one only when it is.
        let by_name = !secret.shape().detectable_by_value() || rng.below(2) == 0;
        let carrier = if rng.below(2) == 0 {
            Carrier::Variable
        } else {
            Carrier::Argument
        };
        let (before, after) = (around(&mut rng), around(&mut rng));
        sb.write("secret", secret.value());
        sb.write("carrier", format!("{before}{}{after}", secret.value()));
        for front in [FrontEnd::Shim, FrontEnd::Envwrap, FrontEnd::Supervise] {
            let _ = std::fs::remove_file(sb.join("child.env"));
            let _ = std::fs::remove_file(sb.join("child.arg"));
            let script = launcher_script(front, by_name.then(|| secret.name()), carrier);
            let out = front_end_command(&sb, front, &script).run();
            let what =
                format!(
                "round {round}: {front:?}, {carrier:?}, {} ({}), between {before:?} and {after:?}",
                secret.name(),
                if by_name { "its variable set" } else { "by shape alone" },
            );
            for file in ["child.env", "child.arg"] {
                if sb.join(file).exists() {
                    secrets.assert_absent(&format!("{what}: {file}"), &sb.read(file));
                }
            }
            // The grandchild ran, or a front end said why not.
            assert!(
                sb.join("child.env").exists() || out.stderr_str().contains("refused"),
                "{what}: no grandchild and no refusal\n{}",
                out.report()
            );
        }
    }
}

/// Section 2 through every tool that reports on a setup: a by-name credential,
/// a shaped token and copies of both inside longer values, in a tmux server's
/// argv and environment, in the environment the tools read, in a program's
/// path and in an argument. Each tool finds them (its output names them), and
/// no output holds a seeded value (the harness checks every byte of it).
#[test]
fn every_tool_reports_every_form_without_a_value() {
    let sb = Sandbox::new("values_tools");
    let s = sb.secrets();
    let (jira, gh) = (s.value("JIRA_API_TOKEN"), s.value("GH_TOKEN"));
    let authz = format!("Bearer {jira}");
    let glued = format!("x{gh}Z");
    let copies = [("AUTHZ", authz.as_str()), ("GLUED", glued.as_str())];
    // A server started the old way: copies in its environment and argv.
    sb.tmux()
        .env_secrets()
        .envs(copies)
        .args(["new-session", "-d", "-s", "old", "-e"])
        .arg(format!("MID=a:{jira}:b"))
        .args(["sleep", "300"])
        .expect_success();
    let server = sb.server_pid().expect("tmux server");
    let dir = sb.mkdir(format!("opt/{jira}"));
    sb.write_executable(format!("opt/{jira}/prog"), "#!/bin/sh\n");
    let prog = dir.join("prog");
    let tool = |args: &[&str], json: bool| {
        let mut c = sb.cmd(envwrap_bin());
        c.args(args).env_secrets().envs(copies);
        if json {
            c.arg("--json");
        }
        c
    };
    for json in [false, true] {
        let pid = server.to_string();
        let o = tool(&["scan", "--pid", &pid], json).expect_exit(1);
        assert!(o.stdout_str().contains("AUTHZ"), "scan:\n{}", o.report());
        let o = tool(&["tmux-env", "-L", sb.tmux_socket()], json).run();
        assert!(
            o.stdout_str().contains("AUTHZ"),
            "tmux-env:\n{}",
            o.report()
        );
        let mut c = tool(&["explain"], json);
        c.arg("--").arg(&prog).arg(format!("--auth={authz}"));
        let o = c.run();
        let text = o.stdout_str();
        for name in ["AUTHZ", "GLUED", "JIRA_API_TOKEN", "GH_TOKEN"] {
            assert!(
                text.contains(name),
                "explain does not name {name}:\n{}",
                o.report()
            );
        }
        let mut c = tool(&["doctor"], json);
        c.arg(&prog);
        let o = c.run();
        assert!(!o.stdout.is_empty(), "doctor:\n{}", o.report());
    }
}

/// bash hands the program it runs a `_` that holds the program's path: a path
/// that holds a credential makes `_` a copy of it. The refusal names the
/// credential (JIRA_API_TOKEN), not `_`, which only carries it.
#[test]
fn a_refused_path_names_the_credential_not_bashs_underscore() {
    let sb = Sandbox::new("values_path_underscore");
    let jira = sb.secrets().value("JIRA_API_TOKEN").to_string();
    sb.mkdir(format!("opt/{jira}"));
    let prog = sb.write_executable(format!("opt/{jira}/prog"), "#!/bin/sh\necho ran\n");
    let mut c = sb.cmd("/bin/bash");
    c.args(["-c", "\"$(cat prog.path)\"; echo \"exit: $?\""])
        .with_shim()
        .env_secrets()
        // bash's own error line prints the path it ran: the lines checked
        // here are the shim's.
        .allow_secrets_in_stderr();
    sb.write("prog.path", prog.as_os_str().as_encoded_bytes());
    let out = c.run();
    let err: String = out
        .stderr_str()
        .lines()
        .filter(|l| l.starts_with("envshim:"))
        .map(|l| format!("{l}\n"))
        .collect();
    sb.secrets()
        .assert_absent("the shim's lines", err.as_bytes());
    let report = || sb.secrets().redact(out.report());
    assert!(
        out.stdout_str().contains("exit: 126"),
        "the program was not refused\n{}",
        report()
    );
    assert!(
        err.contains("the program's path holds the value of JIRA_API_TOKEN"),
        "{}",
        report()
    );
    assert!(!err.contains("value of _ "), "{}", report());
}
