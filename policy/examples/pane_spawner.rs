//! A pane-like child spawned the way a terminal multiplexer does (AgentMux,
//! examples/agentmux.toml): one policy call per spawn API, a nesting sentinel and build info set
//! on every child, and each outcome printed as JSON lines for the log.
//!
//! ```sh
//! cargo run -p envpolicy --example pane_spawner
//! cargo run -p envpolicy --example pane_spawner --features portable-pty
//! cargo run -p envpolicy --example pane_spawner -- --policy examples/agentmux.toml
//! ```
//!
//! Without `--policy` it uses examples/agentmux.toml, compiled into the program:
//! every `AGENTMUX_*` variable is stripped except the keep list, and
//! `AGENTMUX_NESTED` (the sentinel) and `AGENTMUX_BUILD_INFO` are set last. To
//! show the rule at work, the program first gives itself what a launcher would
//! (an instance identity, `AGENTMUX_DATA_DIR` and friends) and a fake
//! `GH_TOKEN`, unless they are already set.
//!
//! Output, one JSON object per line: each change the policy made (`program`,
//! `target`, `index`, `name`, `action`, `rule`, `why`, `loud`: names, never
//! values), a summary per pane, and what the pane's child received: its
//! `AGENTMUX_*` variables with their values, and every other variable by name.

use envpolicy::spawn::{self, Outcome};
use serde_json::json;
use std::error::Error;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// examples/agentmux.toml, the policy used when no `--policy` is given.
const AGENTMUX_POLICY: &str = include_str!("../../examples/agentmux.toml");

/// What AgentMux's launcher puts into its own environment (DataPaths::to_env_vars),
/// and a credential that must not reach a pane.
const LAUNCHER_ENV: &[(&str, &str)] = &[
    ("AGENTMUX_DATA_DIR", "/srv/agentmux/data"),
    ("AGENTMUX_CONFIG_DIR", "/srv/agentmux/config"),
    ("AGENTMUX_CHANNEL", "stable"),
    ("AGENTMUX_LOCAL_URL", "http://127.0.0.1:7070"),
    ("GH_TOKEN", "example-not-a-real-token"),
];

fn main() -> Result<(), Box<dyn Error>> {
    // Before any thread exists: the environment a launcher would have given us.
    for (name, value) in LAUNCHER_ENV {
        if std::env::var_os(name).is_none() {
            std::env::set_var(name, value);
        }
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let compiled = match args.iter().position(|a| a == "--policy") {
        Some(i) => {
            let path = PathBuf::from(args.get(i + 1).ok_or("--policy needs a file")?);
            envpolicy::load::load(&path)?
        }
        None => envpolicy::load::compile_text(AGENTMUX_POLICY, "examples/agentmux.toml".as_ref())?,
    };
    let policy = compiled.policy();

    // An agent pane: std::process::Command (tokio's is the same call, apply_tokio).
    // The pane's own variables are set first; the policy is applied before stdio is
    // configured, since a rebuilt command keeps only program, argv, directory and
    // environment. Its sentinel cannot be shadowed: the policy sets it last.
    let mut cmd = Command::new("env");
    cmd.env("AGENTMUX_PANE_ID", "1").env("AGENTMUX_NESTED", "0");
    match spawn::apply_std(&policy, &mut cmd) {
        Ok(outcome) => {
            report("std", &outcome);
            let out = cmd.stdout(Stdio::piped()).output()?;
            child_view("std", &out.stdout);
        }
        Err(refused) => {
            report("std", refused.outcome());
            eprintln!("pane_spawner: {refused}");
        }
    }

    #[cfg(feature = "portable-pty")]
    pty_pane(&policy)?;
    #[cfg(not(feature = "portable-pty"))]
    println!(
        "{}",
        json!({"pane": "pty", "skipped": "built without the portable-pty feature"})
    );
    Ok(())
}

/// A terminal pane: portable_pty::CommandBuilder, whose environment starts as a
/// full copy of ours (plus SHELL from the password database when we have none).
#[cfg(feature = "portable-pty")]
fn pty_pane(policy: &envpolicy::Policy<'_>) -> Result<(), Box<dyn Error>> {
    use portable_pty::{native_pty_system, CommandBuilder, PtySize};
    use std::io::Read;

    let mut cmd = CommandBuilder::new("env");
    cmd.env("AGENTMUX_PANE_ID", "2");
    let outcome = match spawn::apply_pty(policy, &mut cmd) {
        Ok(outcome) => outcome,
        Err(refused) => {
            report("pty", refused.outcome());
            eprintln!("pane_spawner: {refused}");
            return Ok(());
        }
    };
    report("pty", &outcome);
    let pair = native_pty_system().openpty(PtySize::default())?;
    let mut child = pair.slave.spawn_command(cmd)?;
    drop(pair.slave);
    let mut screen = Vec::new();
    // The read ends with EIO once the child has closed the terminal.
    let _ = pair.master.try_clone_reader()?.read_to_end(&mut screen);
    child.wait()?;
    // The terminal turned each "\n" into "\r\n".
    let text = String::from_utf8_lossy(&screen).replace("\r\n", "\n");
    child_view("pty", text.as_bytes());
    Ok(())
}

/// The outcome as JSON lines: one per change, then a summary.
fn report(pane: &str, outcome: &Outcome) {
    for line in outcome.json_lines() {
        println!("{line}");
    }
    println!(
        "{}",
        json!({
            "pane": pane,
            "program": outcome.program,
            "mode": outcome.mode,
            "removed": outcome.removed().collect::<Vec<_>>(),
            "set": outcome.set().collect::<Vec<_>>(),
            "refused": outcome.refusal.as_ref().map(|c| &c.why),
            "argv_rewritten": outcome.argv_rewritten,
            "rebuilt": outcome.rebuilt,
        })
    );
}

/// What the child printed with `env`: AGENTMUX_* with values, the rest by name.
fn child_view(pane: &str, env_output: &[u8]) {
    let text = String::from_utf8_lossy(env_output);
    let mut agentmux = serde_json::Map::new();
    let mut others = Vec::new();
    for line in text.lines() {
        let (name, value) = line.split_once('=').unwrap_or((line, ""));
        if name.starts_with("AGENTMUX_") {
            agentmux.insert(name.to_string(), value.into());
        } else {
            others.push(name.to_string());
        }
    }
    println!(
        "{}",
        json!({"pane": pane, "child": {"agentmux": agentmux, "other_names": others}})
    );
}
