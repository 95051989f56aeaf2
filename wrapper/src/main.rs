//! envwrap: apply the envshim policy to one exec.
//!
//! This is the first cut: `envwrap [--policy FILE] [--] COMMAND [ARGS...]` decides
//! the child's environment and argv with the envpolicy crate and execs the
//! command. The env(1)-compatible options, the static build and the tools (check,
//! explain, scan, doctor) come with their own issue.
//!
//! Exit codes: 125 for envwrap's own errors (a bad policy included), 126 when the
//! command cannot be executed or the policy refuses the exec, 127 when it is not
//! found. Messages name variables and programs, never values.

use envpolicy::load::{self, Source};
use envpolicy::outcome;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const EXIT_OWN_ERROR: u8 = 125;
const EXIT_CANNOT_EXECUTE: u8 = 126;
const EXIT_NOT_FOUND: u8 = 127;

fn usage() -> &'static str {
    "usage: envwrap [--policy FILE] [--] COMMAND [ARGS...]"
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let mut policy_path: Option<PathBuf> = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_bytes();
        if a == b"--" {
            i += 1;
            break;
        } else if a == b"--policy" {
            match args.get(i + 1) {
                Some(p) => policy_path = Some(PathBuf::from(p)),
                None => return fail(EXIT_OWN_ERROR, "--policy needs a FILE"),
            }
            i += 2;
        } else if let Some(p) = a.strip_prefix(b"--policy=") {
            policy_path = Some(PathBuf::from(OsStr::from_bytes(p)));
            i += 1;
        } else if a == b"-h" || a == b"--help" {
            println!("{}", usage());
            return ExitCode::SUCCESS;
        } else if a.starts_with(b"-") {
            return fail(
                EXIT_OWN_ERROR,
                &format!("unknown option {}\n{}", String::from_utf8_lossy(a), usage()),
            );
        } else {
            break;
        }
    }
    let Some(command) = args.get(i) else {
        return fail(EXIT_OWN_ERROR, &format!("no command given\n{}", usage()));
    };
    let source = load::locate(policy_path.as_deref(), |k| std::env::var_os(k));
    let compiled = match load::load_source(&source) {
        Ok(c) => c,
        Err(e) => return fail(EXIT_OWN_ERROR, &e.to_string()),
    };
    for w in &compiled.warnings {
        eprintln!("envwrap: warning: {}", w.message);
    }
    let policy = compiled.policy();
    let program = match resolve(Path::new(command)) {
        Some(p) => p,
        None => {
            return fail(
                EXIT_NOT_FOUND,
                &format!("{}: command not found", command.to_string_lossy()),
            )
        }
    };
    let env: Vec<Vec<u8>> = std::env::vars_os()
        .map(|(k, v)| {
            let mut e = k.into_vec();
            e.push(b'=');
            e.extend(v.into_vec());
            e
        })
        .collect();
    let argv: Vec<Vec<u8>> = args[i..].iter().map(|a| a.as_bytes().to_vec()).collect();
    let files = outcome::read_env_files(&policy);
    let d = outcome::decide(
        &policy,
        program.as_os_str().as_bytes(),
        &argv,
        &env,
        &[],
        &files,
    );
    let name = program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let policy_name = match &source {
        Source::Builtin => "the built-in policy".to_string(),
        other => other
            .path()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
    };
    for c in d.loud().filter(|c| c.target == "env") {
        let verb = if c.action == "grant" {
            "granted"
        } else {
            "refused"
        };
        eprintln!(
            "envwrap: {verb} {} for {name} ({}; policy {policy_name})",
            c.name.as_deref().unwrap_or("?"),
            c.why
        );
    }
    if let Some(r) = d.refused() {
        return fail(
            EXIT_CANNOT_EXECUTE,
            &format!(
                "refused to run {name}: argument {} {} ({policy_name})",
                r.index.unwrap_or(0),
                r.why
            ),
        );
    }
    let child_env = d.effective_env(&env);
    let child_argv = d.effective_argv(&argv);
    let mut cmd = Command::new(&program);
    cmd.env_clear();
    for e in child_env {
        if let Some(eq) = e.iter().position(|&b| b == b'=') {
            cmd.env(OsStr::from_bytes(&e[..eq]), OsStr::from_bytes(&e[eq + 1..]));
        }
    }
    if let Some((first, rest)) = child_argv.split_first() {
        cmd.arg0(OsStr::from_bytes(first));
        cmd.args(rest.iter().map(|a| OsStr::from_bytes(a)));
    }
    let err = cmd.exec();
    let code = if err.kind() == std::io::ErrorKind::NotFound {
        EXIT_NOT_FOUND
    } else {
        EXIT_CANNOT_EXECUTE
    };
    fail(
        code,
        &format!(
            "{}: {}",
            program.display(),
            envpolicy::error::io_reason(&err)
        ),
    )
}

/// Find `command` on envwrap's own PATH, as env(1) does.
fn resolve(command: &Path) -> Option<PathBuf> {
    if command.as_os_str().as_bytes().contains(&b'/') {
        return Some(command.to_path_buf());
    }
    let path =
        std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
    std::env::split_paths(&path)
        .map(|dir| dir.join(command))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

fn fail(code: u8, message: &str) -> ExitCode {
    eprintln!("envwrap: {message}");
    ExitCode::from(code)
}
