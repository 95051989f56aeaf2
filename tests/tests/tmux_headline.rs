//! The headline command under the built-in default:
//! `LD_PRELOAD=/abs/libenvshim.so tmux ...` from a shell that holds credentials.
//! tmux is self-scrubbed by the built-in default, so the server it forks holds no
//! credential in its global environment, its `/proc/PID/environ` or its
//! `/proc/PID/cmdline`, and no tmux command run from a pane can print one.
//! Real tmux on its own `-L` socket, with the sandbox's seeded fake tokens.

use envshim_e2e::*;

/// Both credentials the issue names, and one known by its name only.
const NAMES: [&str; 3] = ["GH_TOKEN", "AWS_ACCESS_KEY_ID", "JIRA_API_TOKEN"];

fn server_bytes(sb: &Sandbox) -> (Vec<u8>, Vec<u8>) {
    let pid = sb.server_pid().expect("a server runs");
    let cmdline = proc_cmdline(pid).concat();
    let environ = try_proc_environ_raw(pid).expect("environ").concat();
    (cmdline, environ)
}

#[test]
fn the_headline_command_keeps_the_server_clean_under_the_built_in_default() {
    let sb = Sandbox::new("tmux_headline");
    let gh = sb.secrets().value("GH_TOKEN").to_string();
    let mut c = sb.cmd("tmux");
    c.args(sb.tmux_args())
        .args(["new-session", "-d", "-s", "s", "-e"])
        .arg(format!("GH_TOKEN={gh}"))
        .arg("sleep 600")
        .with_shim()
        .env_secrets();
    c.expect_success();

    let (cmdline, environ) = server_bytes(&sb);
    sb.secrets().assert_absent("the server's cmdline", &cmdline);
    sb.secrets().assert_absent("the server's environ", &environ);
    let global = sb.tmux_environment(None, false);
    let session = sb.tmux_environment(Some("s"), false);
    for name in NAMES {
        assert!(!global.is_set(name), "the global environment holds {name}");
    }
    // From inside the pane: tmux itself cannot print it.
    let out = sb.tmux().args(["show-environment", "-g", "GH_TOKEN"]).run();
    assert!(!out.status.success() || !out.stdout_str().contains("GH_TOKEN="));
    assert!(
        session
            .get("GH_TOKEN")
            .is_none_or(|v| v.chars().all(|c| c == '*')),
        "the session's -e pair kept its value"
    );
}

/// tmux takes the last copy of a name; the first copy is what the rules judged:
/// self-scrub drops every later copy.
const DUP_EXEC_C: &str = r#"
#include <stdio.h>
#include <string.h>
#include <unistd.h>
/* dup-exec ENTRY... -- PROGRAM ARG...: exec PROGRAM with exactly these entries. */
int main(int argc, char **argv) {
    char *envp[64];
    int i = 1, n = 0;
    for (; i < argc && strcmp(argv[i], "--") != 0 && n < 63; i++) envp[n++] = argv[i];
    envp[n] = NULL;
    execve(argv[i + 1], argv + i + 1, envp);
    perror("execve");
    return 71;
}
"#;

#[test]
fn a_later_copy_of_a_name_never_reaches_the_server() {
    let sb = Sandbox::new("tmux_headline_dup");
    let gh = sb.secrets().value("GH_TOKEN").to_string();
    let prog = compile_c("dup-exec", DUP_EXEC_C);
    let tmux = which("tmux");
    let mut c = sb.cmd(&prog);
    c.arg("FOO=harmless")
        .arg(format!("FOO={gh}"))
        .arg(format!("LD_PRELOAD={}", shim_path_string()))
        .arg(format!("TMUX_TMPDIR={}", sb.path().display()))
        .arg("--")
        .arg(&tmux)
        .args(sb.tmux_args())
        .args(["new-session", "-d", "-s", "s", "sleep 600"])
        .env("TMUX_TMPDIR", sb.path());
    c.expect_success();
    let global = sb.tmux_environment(None, false);
    assert_eq!(global.get("FOO"), Some("harmless"));
    let (_, environ) = server_bytes(&sb);
    sb.secrets().assert_absent("the server's environ", &environ);
}

fn which(program: &str) -> String {
    let out = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .expect("sh");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
