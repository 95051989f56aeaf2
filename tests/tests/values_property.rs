//! A credential's value, wherever it stands, reaches no child and no message
//! (issue: values as a property): a copy inside another variable's value
//! (`Bearer $TOKEN`, `x$TOKEN`, `${KEY}Z`), a token shape glued to other text,
//! and a by-name credential in a program's path, through the shim and envwrap.
//!
//! Every output is checked for every seeded value by the harness (`TestCommand`);
//! the children's environments and the log are read and checked here.

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
            out.stderr_str().contains("opt/<24 bytes>/prog"),
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
