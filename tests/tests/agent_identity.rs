//! An npm-installed agent keeps its own key: program identity through
//! interpreters (envpolicy_core::identity, docs/policy.md "Which program").
//!
//! npm installs an agent as a `#!/usr/bin/env node` script: the shell execs
//! the script, the kernel runs `env node SCRIPT`, and `env` (with the shim in
//! it) execs `node`. A grant that names the agent must hold at that second
//! exec, and nothing the agent starts may get the key. The fake agent here is
//! a real Node (or Python) script that reports whether it holds its key and
//! runs `sh -c` to see whether its child does; it prints no value.

use envshim_e2e::*;

use crate::envwrap_util::envwrap;

/// The agent's key is a credential of the built-in list; the policy grants
/// it to the agent by name, and refuses every other credential as usual.
const POLICY: &str = r#"version = 1

[[grant]]
name = "OPENAI_API_KEY"
program = "fake-agent"
"#;

/// The agent: says whether it holds OPENAI_API_KEY, then whether a child it
/// starts does (through libuv's spawn, as every Node agent starts its tools).
const NODE_AGENT: &str = r#"#!/usr/bin/env node
const { execFileSync } = require("child_process");
const has = (n) => (process.env[n] ? "yes" : "no");
process.stdout.write(`agent key=${has("OPENAI_API_KEY")} gh=${has("GH_TOKEN")}\n`);
process.stdout.write(execFileSync("/bin/sh", ["-c",
  'test -n "$OPENAI_API_KEY" && k=yes || k=no; test -n "$GH_TOKEN" && g=yes || g=no; echo "child key=$k gh=$g"'],
  { encoding: "utf8" }));
"#;

const PYTHON_AGENT: &str = r#"#!/usr/bin/env python3
import os, subprocess, sys
has = lambda n: "yes" if os.environ.get(n) else "no"
print(f"agent key={has('OPENAI_API_KEY')} gh={has('GH_TOKEN')}", flush=True)
out = subprocess.run(["/bin/sh", "-c",
    'test -n "$OPENAI_API_KEY" && k=yes || k=no; test -n "$GH_TOKEN" && g=yes || g=no; echo "child key=$k gh=$g"'],
    capture_output=True, text=True).stdout
sys.stdout.write(out)
"#;

/// A sandbox with the policy, and the agent installed as `bin/fake-agent`
/// (and the same script again as `bin/other-tool`, which the policy does not
/// name).
fn staged(tag: &str, agent: &str) -> (Sandbox, std::path::PathBuf) {
    let sb = Sandbox::new(tag);
    let policy = sb.write("policy.toml", POLICY);
    for name in ["fake-agent", "other-tool"] {
        sb.write_executable(format!("bin/{name}"), agent);
    }
    (sb, policy)
}

/// `bash -c SCRIPT` under the shim and the policy, with the seeded
/// credentials and `bin/` first in PATH.
fn under_shim(sb: &Sandbox, policy: &std::path::Path, script: &str) -> Outcome {
    let path = format!(
        "{}:{}",
        sb.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    sb.cmd("bash")
        .arg("-c")
        .arg(script)
        .env_secrets()
        .env("PATH", path)
        .with_shim()
        .with_policy(policy)
        .run()
}

#[track_caller]
fn says(o: &Outcome, agent: &str, child: &str) {
    let out = o.stdout_str();
    o.check(
        out == format!("{agent}\n{child}\n"),
        &format!("expected {agent:?} then {child:?}"),
    );
}

fn have_node() -> bool {
    std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn an_npm_installed_node_agent_keeps_its_key_and_its_tools_get_none() {
    if !have_node() {
        assert!(!crate::envwrap_util::in_ci(), "node is missing in CI");
        eprintln!("skipped: no node");
        return;
    }
    let (sb, policy) = staged("agent_node", NODE_AGENT);
    // As the user types it: the shell finds the script by PATH.
    let o = under_shim(&sb, &policy, "fake-agent");
    says(&o, "agent key=yes gh=no", "child key=no gh=no");
    // Run by its interpreter, with a harmless option, and through launchers.
    for how in [
        "node bin/fake-agent",
        "node --no-warnings bin/fake-agent",
        "nice -n 5 env node bin/fake-agent",
        "timeout 60 node -- bin/fake-agent",
    ] {
        let o = under_shim(
            &sb,
            &policy,
            &format!("cd {} && {how}", sh_quote(&sb.path().display().to_string())),
        );
        says(&o, "agent key=yes gh=no", "child key=no gh=no");
    }
    // A script the policy does not name gets nothing, and the line names it,
    // not node.
    let o = under_shim(&sb, &policy, "node bin/other-tool");
    says(&o, "agent key=no gh=no", "child key=no gh=no");
    let lines = withheld_lines(&o.stderr, SHIM_PREFIX);
    o.check(
        lines
            .iter()
            .any(|l| l.contains("OPENAI_API_KEY withheld from other-tool")),
        "the withheld line does not name the script",
    );
    // Code of the caller's choosing before the script: node is the program,
    // and node is not granted the key.
    let hook = sb.write("hook.js", "");
    let o = under_shim(
        &sb,
        &policy,
        &format!(
            "node --require {} {}",
            hook.display(),
            sb.join("bin/fake-agent").display()
        ),
    );
    says(&o, "agent key=no gh=no", "child key=no gh=no");
}

#[test]
fn a_python_agent_keeps_its_key_under_the_shim_and_under_envwrap() {
    let (sb, policy) = staged("agent_python", PYTHON_AGENT);
    let o = under_shim(&sb, &policy, "fake-agent");
    says(&o, "agent key=yes gh=no", "child key=no gh=no");
    let o = under_shim(&sb, &policy, "python3 -u bin/other-tool");
    says(&o, "agent key=no gh=no", "child key=no gh=no");
    // envwrap decides for the script too, whichever way it is named.
    let agent = sb.join("bin/fake-agent");
    // explain names the program the exec runs, and what runs it.
    let o = envwrap(&sb)
        .args(["explain", "--policy"])
        .arg(&policy)
        .args(["--", "python3", "-u"])
        .arg(&agent)
        .expect_success();
    let want = format!("program  {} (run through python3)", agent.display());
    o.check(o.stdout_str().contains(&want), &want);
    let by_interpreter: Vec<std::ffi::OsString> = vec!["python3".into(), agent.clone().into()];
    let by_path: Vec<std::ffi::OsString> = vec![agent.into()];
    for program in [by_interpreter, by_path] {
        let o = envwrap(&sb)
            .arg("--policy")
            .arg(&policy)
            .arg("--")
            .args(&program)
            .env_secrets()
            .run();
        says(&o, "agent key=yes gh=no", "child key=no gh=no");
    }
}
