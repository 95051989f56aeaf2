//! The real agent CLIs from npm (ci/agents installs pinned versions), with
//! fake credentials in the caller's environment and the model's base URL on a
//! closed local port, through each spawn path that needs no model: an MCP
//! server's health check (`gemini mcp list`, `claude mcp list`), Codex's
//! sandboxed command (`codex sandbox linux`), and the agent's own call to its
//! API (`gemini -p`), which shows that it held its key.
//!
//! Each runs with no envshim, under the shim, under envwrap and under
//! `envwrap --supervise`, with the agent's example policy
//! (examples/agents/, docs/agents.md). The child is a probe that records its
//! environment, argv and its parent's environment. In every mode the agent's
//! command exits as it does without envshim, the probe's parent (the agent)
//! holds the agent's own key, and the probe holds no credential; without
//! envshim it holds them all, which is what the test would miss otherwise.

use std::path::{Path, PathBuf};
use std::time::Duration;

use envshim_e2e::*;

use crate::envwrap_util::{envwrap, require};

/// Where ci/agents installed the CLIs.
fn agents_bin() -> Option<PathBuf> {
    let dir = std::env::var_os("ENVSHIM_AGENTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/envshim-agents"));
    let bin = dir.join("node_modules/.bin");
    bin.join("gemini").exists().then_some(bin)
}

/// The probe: a shell script that records what it was given, in files named
/// by its pid under `out`, then exits (an MCP client sees a server that went
/// away, and says so).
fn probe(sb: &Sandbox) -> (PathBuf, PathBuf) {
    let out = sb.mkdir("probe-out");
    let script = format!(
        "#!/bin/sh\nout={}/$$\ncat /proc/$$/environ > \"$out.env\"\n\
         cat /proc/$PPID/environ > \"$out.parent\" 2>/dev/null\n\
         printf '%s\\0' \"$0\" \"$@\" > \"$out.argv\"\n",
        out.display()
    );
    (sb.write_executable("bin/probe", script), out)
}

/// What every probe run recorded: (its environment, argv, its parent's).
fn recorded(out: &Path) -> Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> {
    let mut runs = Vec::new();
    for e in std::fs::read_dir(out).into_iter().flatten().flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "env") {
            let read = |ext: &str| std::fs::read(p.with_extension(ext)).unwrap_or_default();
            runs.push((read("env"), read("argv"), read("parent")));
        }
    }
    runs
}

fn holds(environ: &[u8], name: &str) -> bool {
    environ
        .split(|&b| b == 0)
        .any(|e| e.starts_with(format!("{name}=").as_bytes()))
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    None,
    Shim,
    Envwrap,
    Supervise,
}

const MODES: [Mode; 4] = [Mode::None, Mode::Shim, Mode::Envwrap, Mode::Supervise];

/// The agent's command in `mode`: HOME in the sandbox, the agents' bin and
/// the sandbox's first in PATH, the seeded credentials and `key`.
fn agent(sb: &Sandbox, mode: Mode, policy: &Path, key: (&str, &str), cmd: &[&str]) -> TestCommand {
    let bin = agents_bin().expect("agents installed");
    let path = format!(
        "{}:{}:{}",
        sb.join("bin").display(),
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = match mode {
        Mode::None | Mode::Shim => sb.cmd(cmd[0]),
        Mode::Envwrap => {
            let mut c = envwrap(sb);
            c.arg("--policy").arg(policy).arg("--").arg(cmd[0]);
            c
        }
        Mode::Supervise => {
            let mut c = envwrap(sb);
            c.args(["--supervise", "--policy"])
                .arg(policy)
                .arg("--")
                .arg(cmd[0]);
            c
        }
    };
    c.args(&cmd[1..])
        .env_secrets()
        .env(key.0, key.1)
        .env("HOME", sb.join("home"))
        .env("PATH", path)
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        .env("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")
        .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .env("NO_COLOR", "1")
        .timeout(Duration::from_secs(120))
        .allow_secrets_in_output();
    if mode == Mode::Shim {
        c.with_shim().with_policy(policy);
    }
    c
}

/// Output without envshim's own lines, for comparing a mode with none.
fn without_envshim_lines(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with("envshim: ") && !l.starts_with("envwrap: "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every probe run of `mode`: no credential, the agent's key included, and
/// the agent above it holding its key. Without envshim (`Mode::None`), an agent
/// that `scrubs` nothing of its own hands the probe the credentials: the control
/// that shows the probe would see a leak (Gemini CLI cleans its MCP servers'
/// environment itself, so it has none).
#[track_caller]
fn check_probes(mode: Mode, out: &Path, key: &str, scrubs: bool) {
    check_probes_of(mode, out, key, scrubs, true);
}

/// [`check_probes`], where the probe's parent is the agent (`parent_is_agent`)
/// or a shell it ran the probe with (a hook's command line).
#[track_caller]
fn check_probes_of(mode: Mode, out: &Path, key: &str, scrubs: bool, parent_is_agent: bool) {
    let runs = recorded(out);
    assert!(!runs.is_empty(), "{mode:?}: the probe never ran");
    for (env, argv, parent) in &runs {
        let all: Vec<&str> = SECRET_NAMES.iter().copied().chain([key]).collect();
        let held: Vec<&&str> = all.iter().filter(|n| holds(env, n)).collect();
        if mode == Mode::None {
            assert!(
                scrubs || held.len() >= SECRET_NAMES.len() / 2,
                "control: the probe got no credential without envshim"
            );
            continue;
        }
        assert!(held.is_empty(), "{mode:?}: the probe holds {held:?}");
        assert!(
            !String::from_utf8_lossy(argv).contains("ghp_"),
            "{mode:?}: a token in the probe's argv"
        );
        if parent_is_agent && !parent.is_empty() {
            assert!(holds(parent, key), "{mode:?}: the agent lost {key}");
        }
    }
    let _ = std::fs::remove_dir_all(out);
    let _ = std::fs::create_dir(out);
}

/// The agents are there, or the test is skipped (a failure in CI).
fn installed() -> bool {
    require(
        agents_bin().is_some(),
        "the agents are not installed (ci/agents)",
    )
}

/// `cmd` (an agent's MCP health check) in every mode: its exit and output as
/// without envshim, and its probe server checked ([`check_probes`]).
fn mcp_list_in_every_mode(
    sb: &Sandbox,
    policy: &Path,
    key: (&str, &str),
    cmd: &[&str],
    out: &Path,
    scrubs: bool,
) {
    let mut baseline = None;
    for mode in MODES {
        let o = agent(sb, mode, policy, key, cmd).run();
        let shown = (o.status.code(), without_envshim_lines(&o.stdout_str()));
        match &baseline {
            None => baseline = Some(shown),
            Some(b) => assert_eq!(
                &shown,
                b,
                "{mode:?}: {cmd:?} differs from no envshim\n{}",
                o.report()
            ),
        }
        check_probes(mode, out, key.0, scrubs);
    }
}

fn example(name: &str) -> PathBuf {
    workspace_root().join("examples/agents").join(name)
}

const GEMINI_KEY: (&str, &str) = ("GEMINI_API_KEY", "AIzaSyA0fakeFAKEfake0123456789abcdefghij");

#[test]
fn gemini_cli_keeps_its_key_and_its_mcp_server_gets_no_credential() {
    if !installed() {
        return;
    }
    let sb = Sandbox::new("agents_gemini");
    let (probe, out) = probe(&sb);
    let settings = format!(
        r#"{{"security": {{"auth": {{"selectedType": "gemini-api-key"}}}},
            "mcpServers": {{"probe": {{"command": "{}", "args": ["mcp"]}}}}}}"#,
        probe.display()
    );
    sb.write("home/.gemini/settings.json", settings);
    let policy = example("gemini-cli.toml");
    let cmd = ["gemini", "mcp", "list"];
    mcp_list_in_every_mode(&sb, &policy, GEMINI_KEY, &cmd, &out, true);
    // The agent's own call to its API: it holds its key (else it exits 41
    // with "you must specify the GEMINI_API_KEY environment variable") and
    // tries the closed port.
    for mode in MODES {
        let o = agent(
            &sb,
            mode,
            &policy,
            GEMINI_KEY,
            &["timeout", "10", "gemini", "-p", "hi"],
        )
        .run();
        let text = format!("{}{}", o.stdout_str(), o.stderr_str());
        assert!(
            text.contains("fetch failed") && !text.contains("GEMINI_API_KEY environment variable"),
            "{mode:?}: gemini did not hold its key\n{}",
            o.report()
        );
    }
}

const CLAUDE_KEY: &str = "ANTHROPIC_API_KEY";

#[test]
fn claude_code_keeps_its_key_and_its_mcp_server_gets_no_credential() {
    if !installed() {
        return;
    }
    let sb = Sandbox::new("agents_claude");
    let (probe, out) = probe(&sb);
    let config = format!(
        r#"{{"hasCompletedOnboarding": true,
            "mcpServers": {{"probe": {{"type": "stdio", "command": "{}", "args": ["mcp"], "env": {{}}}}}}}}"#,
        probe.display()
    );
    sb.write("home/.claude.json", config);
    let policy = example("claude-code.toml");
    let key_value = sb.secrets().value(CLAUDE_KEY).to_string();
    let cmd = ["claude", "mcp", "list"];
    mcp_list_in_every_mode(&sb, &policy, (CLAUDE_KEY, &key_value), &cmd, &out, false);
}

/// The sandboxed command's probe: prints the names of the credentials it
/// holds (Codex's sandbox mounts the file system read-only, so it cannot
/// write them down).
const NAMES_PROBE: &str = "#!/bin/sh\n\
    printf 'probe holds:'\n\
    tr '\\0' '\\n' < /proc/$$/environ | cut -d= -f1 | while read -r n; do printf ' %s' \"$n\"; done\n\
    echo\n";

#[test]
fn codex_sandboxed_command_gets_no_credential_under_the_supervisor() {
    if !installed() {
        return;
    }
    let sb = Sandbox::new("agents_codex");
    let probe = sb.write_executable("bin/names-probe", NAMES_PROBE);
    let probe = probe.display().to_string();
    let policy = example("codex.toml");
    let key = (
        "OPENAI_API_KEY",
        sb.secrets().value("OPENAI_API_KEY").to_string(),
    );
    for mode in MODES {
        let o = agent(
            &sb,
            mode,
            &policy,
            (key.0, &key.1),
            &["codex", "sandbox", "--", &probe],
        )
        .run();
        o.check(
            o.status.code() == Some(0),
            &format!("{mode:?}: codex sandbox failed"),
        );
        let line = o
            .stdout_str()
            .lines()
            .find_map(|l| l.strip_prefix("probe holds:").map(str::to_string))
            .unwrap_or_else(|| o.fail(&format!("{mode:?}: the probe did not run")));
        let names: Vec<&str> = line.split_whitespace().collect();
        let held: Vec<&&str> = SECRET_NAMES.iter().filter(|n| names.contains(n)).collect();
        match mode {
            // The control: Codex hands its sandbox the caller's tokens.
            Mode::None => o.check(held.len() >= 2, "control: the probe got no credential"),
            // Codex's binary is static: no shim loads into it, so what it
            // starts inherits what it got, its own key (docs/agents.md).
            // The person is told, once per exec of the binary.
            Mode::Shim | Mode::Envwrap => o
                .check(
                    held.iter().all(|n| **n == key.0),
                    &format!("{mode:?}: the probe holds {held:?}"),
                )
                .check(
                    o.stderr_str().contains(
                        "OPENAI_API_KEY granted to codex; it is statically linked, so no shim \
                         loads into it, and nothing supervises it: its children inherit \
                         OPENAI_API_KEY; use envwrap --supervise",
                    ),
                    &format!("{mode:?}: nothing said that Codex is not policed"),
                ),
            Mode::Supervise => o.check(
                held.is_empty(),
                &format!("{mode:?}: the probe holds {held:?}"),
            ),
        };
    }
}

/// Claude Code's hooks (SessionStart, UserPromptSubmit) and its
/// `apiKeyHelper`, which it runs before it calls the model (here a closed
/// port, so `claude -p` goes on retrying until `timeout` ends it): without
/// envshim they get every credential of the caller.
#[test]
fn claude_code_hooks_and_key_helper_get_no_credential() {
    if !installed() {
        return;
    }
    let sb = Sandbox::new("agents_claude_hooks");
    let (probe, out) = probe(&sb);
    let settings = format!(
        r#"{{"apiKeyHelper": "{p} key-helper",
            "hooks": {{
              "SessionStart": [{{"hooks": [{{"type": "command", "command": "{p} session"}}]}}],
              "UserPromptSubmit": [{{"hooks": [{{"type": "command", "command": "{p} prompt"}}]}}]}}}}"#,
        p = probe.display()
    );
    sb.write("home/.claude/settings.json", settings);
    sb.write("home/.claude.json", r#"{"hasCompletedOnboarding": true}"#);
    let policy = example("claude-code.toml");
    let key_value = sb.secrets().value(CLAUDE_KEY).to_string();
    for mode in MODES {
        let cmd = ["timeout", "8", "claude", "-p", "hi"];
        let o = agent(&sb, mode, &policy, (CLAUDE_KEY, &key_value), &cmd).run();
        let argvs: Vec<String> = recorded(&out)
            .iter()
            .map(|(_, argv, _)| String::from_utf8_lossy(argv).replace('\0', " "))
            .collect();
        for what in ["session", "prompt", "key-helper"] {
            o.check(
                argvs.iter().any(|a| a.contains(what)),
                &format!("{mode:?}: the {what} hook did not run: {argvs:?}"),
            );
        }
        check_probes_of(mode, &out, CLAUDE_KEY, false, false);
    }
}
