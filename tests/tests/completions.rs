//! The shell completions `envwrap --generate complete-SHELL` prints, run in the
//! real shells: every tool and every option of every tool (from the same tables
//! as the scanner, so an option added anywhere must show up here) is completed.

use envshim_e2e::*;
use std::process::Command;

/// Every tool and the options its --help names, from the built binary itself.
fn tools_and_options(sb: &Sandbox) -> Vec<(&'static str, Vec<String>)> {
    let mut out = Vec::new();
    for tool in [
        "", "check", "explain", "scan", "doctor", "mux-env", "tmux-env", "which", "compile",
    ] {
        let mut c = sb.cmd(envwrap_bin());
        if !tool.is_empty() {
            c.arg(tool);
        }
        let help = c.arg("--help").expect_success().stdout_str();
        // The lines that define options: they start with one, after the indent.
        let mut opts: Vec<String> = help
            .lines()
            .filter(|l| l.trim_start().starts_with('-'))
            .flat_map(|l| l.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')))
            .filter(|w| w.starts_with("--") && w.len() > 2)
            .map(str::to_string)
            .collect();
        opts.sort();
        opts.dedup();
        out.push((tool, opts));
    }
    out
}

fn generate(sb: &Sandbox, shell: &str) -> std::path::PathBuf {
    let o = sb
        .cmd(envwrap_bin())
        .args(["--generate", &format!("complete-{shell}")])
        .expect_success();
    sb.write(format!("envwrap.{shell}"), o.stdout)
}

#[test]
fn bash_completes_every_tool_and_option() {
    let sb = Sandbox::new("completions_bash");
    let script = generate(&sb, "bash");
    for (tool, options) in tools_and_options(&sb) {
        let words = if tool.is_empty() {
            "envwrap --".to_string()
        } else {
            format!("envwrap {tool} --")
        };
        let out = sb
            .cmd("bash")
            .args([
                "-c",
                "source \"$1\"; read -ra COMP_WORDS <<<\"$2\"; COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _envwrap; printf '%s\\n' \"${COMPREPLY[@]}\"",
                "bash",
            ])
            .arg(&script)
            .arg(&words)
            .expect_success()
            .stdout_str();
        for o in &options {
            assert!(
                out.lines().any(|l| l == o),
                "bash: {words} does not complete {o}:\n{out}"
            );
        }
    }
    let out = sb
        .cmd("bash")
        .args(["-c", "source \"$1\"; COMP_WORDS=(envwrap t); COMP_CWORD=1; _envwrap; printf '%s\\n' \"${COMPREPLY[@]}\"", "bash"])
        .arg(&script)
        .expect_success()
        .stdout_str();
    assert!(out.lines().any(|l| l == "tmux-env"), "{out}");
}

/// fish answers `complete -C LINE` with what it would complete.
#[test]
fn fish_completes_every_tool_and_option() {
    if Command::new("fish").arg("--version").output().is_err() {
        panic!("fish is not installed: ci/install-test-deps installs it");
    }
    let sb = Sandbox::new("completions_fish");
    let script = generate(&sb, "fish");
    for (tool, options) in tools_and_options(&sb) {
        let line = if tool.is_empty() {
            "envwrap --".to_string()
        } else {
            format!("envwrap {tool} --")
        };
        let out = sb
            .cmd("fish")
            .args(["--no-config", "-c", "source $argv[1]; complete -C $argv[2]"])
            .arg(&script)
            .arg(&line)
            .expect_success()
            .stdout_str();
        for o in &options {
            assert!(
                out.lines()
                    .any(|l| l.split('\t').next() == Some(o.as_str())),
                "fish: {line} does not complete {o}:\n{out}"
            );
        }
    }
}

/// zsh: the script parses, and names every tool and option.
#[test]
fn zsh_script_parses_and_names_every_tool_and_option() {
    if Command::new("zsh").arg("--version").output().is_err() {
        panic!("zsh is not installed: ci/install-test-deps installs it");
    }
    let sb = Sandbox::new("completions_zsh");
    let script = generate(&sb, "zsh");
    sb.cmd("zsh").arg("-n").arg(&script).expect_success();
    let text = std::fs::read_to_string(&script).unwrap();
    for (tool, options) in tools_and_options(&sb) {
        assert!(
            tool.is_empty() || text.contains(&format!("    {tool}) opts=(")),
            "{tool}"
        );
        for o in &options {
            assert!(
                text.contains(&format!(" {o} "))
                    || text.contains(&format!("({o} "))
                    || text.contains(&format!(" {o})")),
                "zsh: {o} of {tool:?}"
            );
        }
    }
}

/// What bash's `_envwrap` offers for the words `line` (split at blanks; the last
/// one, possibly empty, is being completed), with `env` set.
fn bash_offers(
    sb: &Sandbox,
    script: &std::path::Path,
    line: &str,
    env: &[(&str, &str)],
) -> Vec<String> {
    let mut c = sb.cmd("bash");
    c.args([
        "-c",
        "source \"$1\"; read -ra COMP_WORDS <<<\"$2\"; [[ $2 == *' ' ]] && COMP_WORDS+=(''); \
         COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _envwrap; printf '%s\\n' \"${COMPREPLY[@]}\"",
        "bash",
    ])
    .arg(script)
    .arg(line);
    for (k, v) in env {
        c.env(k, v);
    }
    c.expect_success()
        .stdout_str()
        .lines()
        .map(str::to_string)
        .collect()
}

/// A tmux server on its own socket, under a `TMUX_TMPDIR` of the sandbox's, so
/// that `-L` has a real socket name to offer; killed by the sandbox.
fn tmux_socket_dir(sb: &Sandbox) -> std::path::PathBuf {
    let dir = sb.mkdir("tmuxtmp");
    sb.cmd("tmux")
        .env("TMUX_TMPDIR", &dir)
        .args(["-L", "compsock", "new-session", "-d", "sleep 60"])
        .expect_success();
    dir
}

fn kill_socket_server(sb: &Sandbox, dir: &std::path::Path) {
    let _ = sb
        .cmd("tmux")
        .env("TMUX_TMPDIR", dir)
        .args(["-L", "compsock", "kill-server"])
        .run();
}

/// The command after `--` (or after the options and pairs) is completed as a
/// command, and option values as the option takes them: bash.
#[test]
fn bash_completes_the_command_and_option_values() {
    let sb = Sandbox::new("completions_bash_values");
    let script = generate(&sb, "bash");
    let has = |line: &str, want: &str| {
        let got = bash_offers(&sb, &script, line, &[]);
        assert!(
            got.iter().any(|g| g == want),
            "bash: `{line}` does not offer {want}: {got:?}"
        );
    };
    has("envwrap -- tmu", "tmux");
    has("envwrap --policy p.toml -- pyth", "python3");
    has("envwrap -i A=1 tmu", "tmux");
    has("envwrap -u HOME tmu", "tmux");
    has("envwrap --mode ", "audit");
    has("envwrap --mode au", "audit");
    has("envwrap --generate complete-", "complete-fish");
    has("envwrap mux-env --mux s", "screen");
    has("envwrap -u PAT", "PATH");
    // An option's value is not a command: `--mode a` offers the modes only.
    let got = bash_offers(&sb, &script, "envwrap --mode a", &[]);
    assert_eq!(got, ["audit"], "bash: --mode's value");
    let dir = tmux_socket_dir(&sb);
    let dir_s = dir.to_string_lossy().into_owned();
    let got = bash_offers(
        &sb,
        &script,
        "envwrap scan -L comp",
        &[("TMUX_TMPDIR", &dir_s)],
    );
    kill_socket_server(&sb, &dir);
    assert_eq!(got, ["compsock"], "bash: -L's socket names");
}

/// The same in fish, through `complete -C`.
#[test]
fn fish_completes_the_command_and_option_values() {
    let sb = Sandbox::new("completions_fish_values");
    let script = generate(&sb, "fish");
    let offers = |line: &str, env: &[(&str, &str)]| -> Vec<String> {
        let mut c = sb.cmd("fish");
        c.args(["--no-config", "-c", "source $argv[1]; complete -C $argv[2]"])
            .arg(&script)
            .arg(line);
        for (k, v) in env {
            c.env(k, v);
        }
        c.expect_success()
            .stdout_str()
            .lines()
            .map(|l| l.split('\t').next().unwrap_or("").to_string())
            .collect()
    };
    let has = |line: &str, want: &str| {
        let got = offers(line, &[]);
        assert!(
            got.iter().any(|g| g == want),
            "fish: `{line}` does not offer {want}: {got:?}"
        );
    };
    has("envwrap -- tmu", "tmux");
    has("envwrap --policy p.toml -- pyth", "python3");
    has("envwrap --mode ", "audit");
    has("envwrap --generate complete-", "complete-zsh");
    has("envwrap mux-env --mux t", "tmux");
    let dir = tmux_socket_dir(&sb);
    let dir_s = dir.to_string_lossy().into_owned();
    let got = offers("envwrap scan -L comp", &[("TMUX_TMPDIR", &dir_s)]);
    kill_socket_server(&sb, &dir);
    assert!(
        got.iter().any(|g| g == "compsock"),
        "fish: -L's socket names: {got:?}"
    );
}

/// zsh: the value and command branches are in the script (it parses: above).
#[test]
fn zsh_script_completes_the_command_and_option_values() {
    let sb = Sandbox::new("completions_zsh_values");
    let text = std::fs::read_to_string(generate(&sb, "zsh")).unwrap();
    for want in [
        "_command_names -e",
        "_normal",
        "':--mode') compadd -- audit enforce",
        "'mux-env:--mux') compadd -- tmux screen",
        "compset -P '*='",
    ] {
        assert!(text.contains(want), "zsh script lacks {want}");
    }
}
