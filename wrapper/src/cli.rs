//! The run mode's command line, read with env(1)'s grammar:
//!
//! ```text
//! envwrap [OPTION]... [-] [NAME=VALUE]... [--] COMMAND [ARG]...
//! ```
//!
//! Options come first and stop at the first argument that is not one (or at
//! `--`). Then `-` alone means `-i`, then every operand holding `=` is an
//! assignment, and the first operand without `=` is the command. `-S STRING`
//! splits its string into words that are read as if they stood in its place.

use crate::exit::{Failure, OWN_ERROR};
use crate::opts::{Parser, Spec, Token};
use crate::preload::Want;
use crate::split;
use envpolicy::compiled::Mode;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

/// Where a usage error points.
pub const HELP_HINT: &str = "envwrap --help";

/// The options of the run mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunOpt {
    IgnoreEnvironment,
    Unset,
    Chdir,
    SplitString,
    Policy,
    Mode,
    Log,
    Json,
    Preload,
    NoPreload,
    Supervise,
    JudgeAll,
    Help,
    Version,
    Generate,
    Null,
    Debug,
    DefaultSignal,
    IgnoreSignal,
    BlockSignal,
    ListSignalHandling,
}

/// The run mode's options, as the scanner reads them.
pub const SPECS: &[Spec<RunOpt>] = &[
    Spec::flag(RunOpt::IgnoreEnvironment, "ignore-environment").short(b'i'),
    Spec::with_value(RunOpt::Unset, "unset").short(b'u'),
    Spec::with_value(RunOpt::Chdir, "chdir").short(b'C'),
    Spec::with_value(RunOpt::SplitString, "split-string").short(b'S'),
    Spec::with_value(RunOpt::Policy, "policy"),
    Spec::with_value(RunOpt::Mode, "mode"),
    Spec::with_value(RunOpt::Log, "log"),
    Spec::flag(RunOpt::Json, "json"),
    Spec::flag(RunOpt::Preload, "preload"),
    Spec::flag(RunOpt::NoPreload, "no-preload"),
    Spec::flag(RunOpt::Supervise, "supervise"),
    Spec::flag(RunOpt::JudgeAll, "judge-all"),
    Spec::help(RunOpt::Help),
    Spec::flag(RunOpt::Version, "version"),
    Spec::with_value(RunOpt::Generate, "generate"),
    Spec::flag(RunOpt::Null, "null").short(b'0'),
    Spec::flag(RunOpt::Debug, "debug").short(b'v'),
    Spec::optional_value(RunOpt::DefaultSignal, "default-signal"),
    Spec::optional_value(RunOpt::IgnoreSignal, "ignore-signal"),
    Spec::optional_value(RunOpt::BlockSignal, "block-signal"),
    Spec::flag(RunOpt::ListSignalHandling, "list-signal-handling"),
];

/// A run: what to change, under which policy, and the command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunOptions {
    pub ignore_env: bool,
    /// `-u` names, in order.
    pub unset: Vec<Vec<u8>>,
    pub chdir: Option<PathBuf>,
    pub policy: Option<PathBuf>,
    /// `--mode`: overrides the policy's `mode`.
    pub mode: Option<Mode>,
    pub log: Option<PathBuf>,
    pub json: bool,
    pub preload: Want,
    /// `--supervise`: judge every exec of the tree (supervise/).
    pub supervise: bool,
    /// `--judge-all`: the supervisor judges the execs the shim marks too.
    pub judge_all: bool,
    /// `NAME=VALUE` operands, in order (the name is never empty).
    pub assignments: Vec<Vec<u8>>,
    /// The command and its arguments; empty: print the environment a child
    /// would get, as env(1) does without a command.
    pub command: Vec<OsString>,
    /// `-0`: end each printed entry with NUL, not newline (no command only).
    pub null: bool,
    /// `-v`, `--debug`: say each step on stderr, as GNU env does (names, never
    /// values).
    pub debug: bool,
    /// The signal options, applied before the exec.
    pub signals: crate::signals::Plan,
}

/// What the command line asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed {
    Help,
    Version,
    /// `--generate KIND`: print a completion script.
    Generate(String),
    Run(RunOptions),
}

/// Read the run mode's arguments (without `argv[0]`). `getenv` serves `${NAME}` in
/// `-S` strings from envwrap's own environment.
pub fn parse(
    args: Vec<OsString>,
    getenv: impl Fn(&[u8]) -> Option<Vec<u8>>,
) -> Result<Parsed, Failure> {
    let mut o = RunOptions {
        ignore_env: false,
        unset: Vec::new(),
        chdir: None,
        policy: None,
        mode: None,
        log: None,
        json: false,
        preload: Want::Auto,
        supervise: false,
        judge_all: false,
        assignments: Vec::new(),
        command: Vec::new(),
        null: false,
        debug: false,
        signals: crate::signals::Plan::default(),
    };
    let mut p = Parser::new(args, SPECS, HELP_HINT);
    let mut first_operand = None;
    while let Some(t) = p.next_token()? {
        let (id, value) = match t {
            Token::DoubleDash => break,
            Token::Operand(a) => {
                first_operand = Some(a);
                break;
            }
            Token::Opt { id, value } => (id, value),
        };
        let signal_change = match id {
            RunOpt::DefaultSignal => Some(("--default-signal", crate::signals::Change::Default)),
            RunOpt::IgnoreSignal => Some(("--ignore-signal", crate::signals::Change::Ignore)),
            RunOpt::BlockSignal => Some(("--block-signal", crate::signals::Change::Block)),
            _ => None,
        };
        if let Some((option, change)) = signal_change {
            let signals = crate::signals::parse(option, value.as_deref().map(|v| v.as_bytes()))?;
            o.signals.changes.push((change, signals));
            continue;
        }
        let value = value.unwrap_or_default();
        match id {
            RunOpt::IgnoreEnvironment => o.ignore_env = true,
            RunOpt::Unset => {
                let name = value.into_vec();
                if name.is_empty() || name.contains(&b'=') {
                    return Err(Failure::new(
                        OWN_ERROR,
                        "cannot unset a name that is empty or holds '=' (-u takes a variable name)",
                    ));
                }
                o.unset.push(name);
            }
            RunOpt::Chdir => o.chdir = Some(PathBuf::from(value)),
            RunOpt::SplitString => {
                let words = split::split(value.as_bytes(), &getenv)
                    .map_err(|e| Failure::new(OWN_ERROR, e.0))?;
                p.splice(words);
            }
            RunOpt::Policy => o.policy = Some(PathBuf::from(value)),
            RunOpt::Mode => {
                o.mode = Some(match value.as_bytes() {
                    b"enforce" => Mode::Enforce,
                    b"audit" => Mode::Audit,
                    _ => {
                        return Err(Failure::usage(
                            "--mode takes 'enforce' or 'audit'",
                            HELP_HINT,
                        ))
                    }
                })
            }
            RunOpt::Log => o.log = Some(PathBuf::from(value)),
            RunOpt::Json => o.json = true,
            RunOpt::Preload => o.preload = Want::On,
            RunOpt::NoPreload => o.preload = Want::Off,
            RunOpt::Supervise => o.supervise = true,
            RunOpt::JudgeAll => o.judge_all = true,
            RunOpt::Help => return Ok(Parsed::Help),
            RunOpt::Version => return Ok(Parsed::Version),
            RunOpt::Generate => return Ok(Parsed::Generate(value.to_string_lossy().into_owned())),
            RunOpt::Null => o.null = true,
            RunOpt::Debug => o.debug = true,
            RunOpt::ListSignalHandling => o.signals.list = true,
            RunOpt::DefaultSignal | RunOpt::IgnoreSignal | RunOpt::BlockSignal => {}
        }
    }
    if o.supervise && (o.signals.list || !o.signals.changes.is_empty()) {
        return Err(Failure::usage(
            "the signal options are not supported with --supervise: its supervisor would \
             run with them too",
            HELP_HINT,
        ));
    }
    if o.judge_all && !o.supervise {
        return Err(Failure::usage(
            "--judge-all is an option of --supervise: give both",
            HELP_HINT,
        ));
    }
    // `envwrap --policy FILE check`: a tool's name where the command goes. The tools
    // come first; a program of that name goes after `--` (see --help).
    if let Some(tool) = first_operand
        .as_ref()
        .and_then(|a| a.to_str())
        .filter(|a| crate::tools::by_name(a).is_some())
    {
        return Err(Failure::usage(
            format!(
                "'{tool}' is one of envwrap's tools: put it first, with its options after it \
                 (envwrap {tool} --policy FILE), or put '--' before a program named '{tool}'"
            ),
            HELP_HINT,
        ));
    }
    let mut operands: Vec<OsString> = first_operand.into_iter().chain(p.rest()).collect();
    if operands.first().is_some_and(|a| a.as_bytes() == b"-") {
        o.ignore_env = true;
        operands.remove(0);
    }
    let mut operands = operands.into_iter().peekable();
    while let Some(a) = operands.next_if(|a| a.as_bytes().contains(&b'=')) {
        let a = a.into_vec();
        if a.first() == Some(&b'=') {
            return Err(Failure::new(
                OWN_ERROR,
                format!(
                    "invalid NAME=VALUE operand {}: the name is empty",
                    o.assignments.len() + 1
                ),
            ));
        }
        o.assignments.push(a);
    }
    o.command = operands.collect();
    if o.null && !o.command.is_empty() {
        return Err(Failure::usage(
            "-0 (--null) is for printing the environment: it takes no command",
            HELP_HINT,
        ));
    }
    if o.chdir.is_some() && o.command.is_empty() {
        return Err(Failure::usage(
            "must specify command with --chdir (-C)",
            HELP_HINT,
        ));
    }
    Ok(Parsed::Run(o))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<RunOptions, Failure> {
        let args = args.iter().map(OsString::from).collect();
        match parse(args, |n| (n == b"D").then(|| b"/srv".to_vec()))? {
            Parsed::Run(o) => Ok(o),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn env_grammar() {
        let o = run(&[
            "-iu", "HOME", "-C", "/tmp", "A=1", "B==2", "cmd", "X=1", "-i",
        ])
        .unwrap();
        assert!(o.ignore_env);
        assert_eq!(o.unset, vec![b"HOME".to_vec()]);
        assert_eq!(o.chdir, Some(PathBuf::from("/tmp")));
        assert_eq!(o.assignments, vec![b"A=1".to_vec(), b"B==2".to_vec()]);
        assert_eq!(o.command, ["cmd", "X=1", "-i"]);
        let o = run(&["-", "cmd"]).unwrap();
        assert!(o.ignore_env);
        let o = run(&["--", "A=1", "--help"]).unwrap();
        assert_eq!(o.command, ["--help"]);
    }

    #[test]
    fn split_string_splices() {
        let o = run(&["-S --policy p.toml --mode=audit -- sh", "script", "arg"]).unwrap();
        assert_eq!(o.policy, Some(PathBuf::from("p.toml")));
        assert_eq!(o.mode, Some(Mode::Audit));
        assert_eq!(o.command, ["sh", "script", "arg"]);
        let o = run(&["-S", "-i X=${D} env"]).unwrap();
        assert!(o.ignore_env);
        assert_eq!(o.assignments, vec![b"X=/srv".to_vec()]);
        assert_eq!(o.command, ["env"]);
    }

    #[test]
    fn bad_input() {
        // No command prints the environment, as env(1) does.
        assert!(run(&[]).unwrap().command.is_empty());
        assert!(run(&["-0", "-i", "A=1"]).unwrap().null);
        assert!(run(&["-0", "true"])
            .unwrap_err()
            .message
            .contains("takes no command"));
        assert!(run(&["=x", "cmd"])
            .unwrap_err()
            .message
            .contains("name is empty"));
        // As env(1): -C has nothing to run in the directory without a command.
        let e = run(&["-C", "/tmp"]).unwrap_err();
        assert_eq!(e.code, OWN_ERROR);
        assert!(e
            .message
            .starts_with("must specify command with --chdir (-C)\nTry "));
        let e = run(&["-v -S cat"]).unwrap_err();
        assert!(e
            .message
            .contains("\nenvwrap: use -[v]S to pass options in shebang lines\n"));
        assert!(run(&["-u", "A=B", "cmd"])
            .unwrap_err()
            .message
            .contains("cannot unset"));
        assert!(run(&["-S", "'x", "cmd"])
            .unwrap_err()
            .message
            .contains("terminating"));
        assert!(run(&["--mode", "loud", "cmd"])
            .unwrap_err()
            .message
            .contains("--mode"));
        assert!(run(&["--bogus", "cmd"])
            .unwrap_err()
            .message
            .contains("unrecognized"));
        for e in [run(&["-0", "true"]), run(&["--bogus"])] {
            assert_eq!(e.unwrap_err().code, 125);
        }
    }
}
