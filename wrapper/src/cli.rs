//! The run mode's command line, read with env(1)'s grammar:
//!
//! ```text
//! envwrap [OPTION]... [--] [-] [NAME=VALUE]... COMMAND [ARG]...
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
    RefuseChanges,
    Routed,
    Mask,
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

/// The run mode's options, as the scanner reads them and as the docs show
/// them: the env(1) options, then the policy options ([`GROUPS`]).
pub const SPECS: &[Spec<RunOpt>] = &[
    Spec::flag(RunOpt::IgnoreEnvironment, "ignore-environment")
        .short(b'i')
        .doc("start with an empty environment (a lone '-' too)")
        .doc_long(
            r"Start with an empty environment.
            A lone
            .B \-
            operand does the same.",
        ),
    Spec::with_value(RunOpt::Unset, "unset", "NAME")
        .short(b'u')
        .doc("remove NAME from the environment")
        .doc_long(
            r"Remove every entry named
            .I NAME
            from the environment.
            .I NAME
            must not be empty or hold
            .BR = .",
        ),
    Spec::with_value(RunOpt::Chdir, "chdir", "DIR")
        .short(b'C')
        .doc("change the working directory to DIR first")
        .doc_long(
            r"Change the working directory to
            .I DIR
            before running
            .IR COMMAND .
            A relative
            .I COMMAND
            or
            .B PATH
            entry is then relative to
            .IR DIR .",
        ),
    Spec::with_value(RunOpt::SplitString, "split-string", "STRING")
        .short(b'S')
        .doc("split STRING into arguments, as for a #! line")
        .doc_long(
            r"Split
            .I STRING
            into arguments that are read as if they stood in its place, as GNU env does.
            This is for
            .B #!
            lines, where the kernel passes everything after the interpreter as one argument.
            Words are separated by white space;
            .BI \(aq ... \(aq
            is literal except for
            .B \e\e
            and
            .BR \e\(aq ;
            .BI \(dq ... \(dq
            unescapes and expands
            .BI ${ NAME }\fR;
            outside single quotes
            .BR \e\(dq ,
            .BR \e\(aq ,
            .BR \e\e ,
            .BR \e# ,
            .B \e$
            are the character itself,
            .BR \ef ,
            .BR \en ,
            .BR \er ,
            .BR \et ,
            .B \ev
            the control character,
            .B \e_
            separates words (a space inside double quotes) and
            .B \ec
            ends the string.
            A
            .B #
            at the start of a word begins a comment.
            .BI ${ NAME }
            is replaced by
            .IR NAME 's
            value in envwrap's own environment (empty when unset).
            A quote that is not closed, any other backslash sequence, or another use of
            .B $
            is an error (exit 125).",
        ),
    Spec::flag(RunOpt::Null, "null")
        .short(b'0')
        .doc("without COMMAND: end each entry with NUL, not newline")
        .doc_long(
            r"Without
            .IR COMMAND ,
            end each printed entry with a NUL byte instead of a newline.
            With a command it is an error (exit 125), as in GNU env.",
        ),
    Spec::flag(RunOpt::Debug, "debug")
        .short(b'v')
        .doc(
            "say each step on stderr (names and arguments, as shown in messages: never a \
             credential's value)",
        )
        .doc_long(
            r"Say each step on standard error, as GNU env does: the environment cleaned, each
            name unset or set, the policy, each change it makes (target, action, name, rule),
            the program and each argument.
            Names and arguments are shown as every message shows them: a credential's value,
            or a token's shape, never appears.",
        ),
    Spec::optional_value(RunOpt::DefaultSignal, "default-signal", "SIGS")
        .doc(
            "reset SIGS (names or numbers, comma-separated; without: every signal) to their \
             default handling",
        )
        .doc_long(
            r"Reset the signals
            .I SIGS
            (names, with or without
            .BR SIG ,
            or numbers, separated by commas; without
            .IR SIGS ,
            every signal but
            .B SIGKILL
            and
            .BR SIGSTOP )
            to their default handling before running
            .IR COMMAND .",
        ),
    Spec::optional_value(RunOpt::IgnoreSignal, "ignore-signal", "SIGS")
        .doc("ignore SIGS in COMMAND")
        .doc_long(
            r"Run
            .I COMMAND
            with
            .I SIGS
            ignored.",
        ),
    Spec::optional_value(RunOpt::BlockSignal, "block-signal", "SIGS")
        .doc("block SIGS in COMMAND")
        .doc_long(
            r"Run
            .I COMMAND
            with
            .I SIGS
            blocked.",
        ),
    Spec::flag(RunOpt::ListSignalHandling, "list-signal-handling")
        .doc("say on stderr which signals COMMAND starts with ignored or blocked")
        .doc_long(
            r"Say on standard error which signals
            .I COMMAND
            starts with ignored or blocked.
            The signal options apply in the order given, and are refused with
            .B \-\-supervise
            (exit 125), whose supervisor would run with them too;
            .B SIGKILL
            or
            .B SIGSTOP
            named in one is an error (exit 125).",
        ),
    Spec::with_value(RunOpt::Policy, "policy", "FILE")
        .doc("the policy file (default: see Policy lookup)")
        .doc_long(
            r#"The policy file.
            Default: see
            .BR "POLICY LOOKUP" ."#,
        ),
    Spec::with_value(RunOpt::Mode, "mode", "MODE")
        .doc(
            "'audit': report what the policy would change and change nothing; 'enforce': \
             apply it (default: the policy's own mode)",
        )
        .doc_long(
            r"
            .B audit
            reports what the policy would change and changes nothing: the command gets its
            environment and arguments as given, and no exec is refused.
            .B enforce
            applies the policy.
            Default: the policy's own
            .BR mode .",
        ),
    Spec::with_value(RunOpt::Log, "log", "FILE")
        .doc("append every change to FILE as a JSON line (default: the policy's log)")
        .doc_long(
            r"Append every change to
            .I FILE
            as one JSON object per line (fields
            .BR program ,
            .BR target ,
            .BR index ,
            .BR name ,
            .BR action ,
            .BR rule ,
            .BR why ,
            .BR loud ).
            Default: the policy's
            .B log
            file, if it names one.
            A
            .B \-\-log
            file that cannot be opened is an error (exit 125); the policy's log is only warned about.",
        ),
    Spec::flag(RunOpt::Json, "json")
        .doc("write warnings to stderr as JSON lines")
        .doc_long("Write warnings to standard error as JSON lines instead of text."),
    Spec::flag(RunOpt::Preload, "preload")
        .doc(
            "put libenvshim.so (installed beside envwrap) into COMMAND's LD_PRELOAD and \
             ENVSHIM_POLICY into its environment, so the programs it starts are policed too",
        )
        .doc_long(
            r"Put
            .B libenvshim.so
            (installed in the same directory as envwrap's executable) first into
            .IR COMMAND 's
            .BR LD_PRELOAD ,
            and
            .BI ENVSHIM_POLICY= path
            (the policy file as an absolute path; nothing for the built-in policy) into its
            environment, so that every program it starts is policed by the same policy.
            Without the shim beside envwrap this is an error (exit 125).
            For a program that is not dynamically linked envwrap warns, and adds the shim all the
            same: the dynamically linked programs it starts will load it.",
        ),
    Spec::flag(RunOpt::NoPreload, "no-preload")
        .doc(
            "never do that (default: do it when libenvshim.so is beside envwrap and COMMAND \
             is dynamically linked)",
        )
        .doc_long(
            r"Never add the shim.
            The default, with neither option, is to add it when it is installed beside envwrap and
            .I COMMAND
            (for a script: its interpreter) is dynamically linked.",
        ),
    Spec::flag(RunOpt::Supervise, "supervise")
        .doc(
            "judge every exec of COMMAND's whole tree, static and Go programs and raw system \
             calls included (seccomp user notification): entries the policy withholds or strips \
             are removed where the exec's memory is its own; an exec the policy refuses, or \
             would change otherwise (unless the policy says [supervise] changes = \"audit\"), \
             fails with EPERM and a message; one that lacks a set variable runs without it. An exec the preloaded shim already judged with the same policy is \
             not judged again. As a user who is not root this sets no_new_privs, so setuid \
             programs (sudo) lose their privileges there",
        )
        .doc_long(
            r#"Judge every exec of
            .IR COMMAND 's
            whole tree with the policy, whatever the programs are linked with: static and Go
            programs, raw
            .BR execve (2)
            system calls and the execs libc makes inside itself included.
            A seccomp filter, inherited by every descendant and impossible to remove, turns each
            .BR execve (2)
            and
            .BR execveat (2)
            into a question to a supervisor process, which reads the program, arguments and
            environment and lets the exec run when the policy would change nothing.
            Where the policy would remove entries (a credential it withholds, a name it strips)
            and the exec's memory is its process's own, the supervisor removes them from the
            exec's environment in place and lets it run, saying what the shim would say; in a
            .BR vfork (2)
            or
            .BR posix_spawn (3)
            child, whose memory is its parent's, it does not
            .RB ( \-\-refuse\-changes :
            never).
            An exec the policy refuses (a secret in an argument), or would change otherwise
            (a credential it cannot remove, an argument it redacts, a value it replaces), fails
            with EPERM, and a line naming the program and the variable, never a value, goes to
            the program's stderr; with
            .B [supervise] changes = \(dqaudit\(dq
            in the policy, an exec it would only change runs unchanged and is said and logged,
            unless the change concerns a credential.
            An exec that lacks a variable the policy would set runs without it, said once.
            In audit mode
            .RB ( \-\-mode=audit )
            every exec runs and what enforce would do is said and logged.
            An exec the preloaded shim already decided with the same policy is not judged again:
            the shim makes it as a marked
            .BR execveat (2)
            that the filter lets run (the mark binds a random key of the run, in the tree's
            .B ENVSHIM_SUPERVISOR
            variable, to the policy).
            The supervisor lives as long as any process of the tree, a tmux server included; if it
            is killed, every exec the shim did not make fails with ENOSYS.
            The supervisor is not dumpable: a process of the tree that is not root cannot take its
            seccomp listener, read or write its memory, or trace it.
            A user who is not root installs the filter under no_new_privs, so setuid and setgid
            programs and file capabilities give no privileges anywhere in the tree
            .RB ( "envwrap doctor"
            says which programs this concerns).
            Use it with the shim (the default when the shim is beside envwrap): the shim decides
            the environment of every dynamically linked program, and the supervisor judges what the
            shim cannot see."#,
        ),
    Spec::flag(RunOpt::JudgeAll, "judge-all")
        .doc("with --supervise: judge the execs the shim already judged too (slower; see docs/threat-model.md)")
        .doc_long(
            r"With
            .BR \-\-supervise :
            judge the execs the shim marks too, as every other exec (slower: each is a
            notification and a read of the exec).",
        ),
    Spec::flag(RunOpt::RefuseChanges, "refuse-changes")
        .doc("with --supervise: refuse an exec the policy would change, never remove entries from it")
        .doc_long(
            r"With
            .BR \-\-supervise :
            never write an exec's environment: an exec from which the policy would remove an
            entry (a credential it withholds, a name it strips) is refused, as
            .B \-\-supervise
            did before it could remove entries. Without it, the supervisor removes them in place
            where the exec's memory is its process's own, and refuses only where it is shared
            (a vfork or posix_spawn child).",
        ),
    Spec::flag(RunOpt::Routed, "routed")
        .doc(
            "the environment was already decided by this policy for COMMAND, by libenvshim.so \
             or the Rust API routing a program that gets a [[secret]] through envwrap: a set \
             that expands variables keeps the value that decision gave it",
        )
        .doc_long(
            r#"The environment given is one the same policy already decided for
            .IR COMMAND :
            .B libenvshim.so
            and the Rust API run a program that gets a
            .B [[secret]]
            as
            .B "envwrap \-\-routed \-\-"
            .I COMMAND
            where they cannot read it in the program's own process.
            envwrap decides again with the secret's value; a
            .B set
            that expands variables keeps the value the first decision gave it (the variables it
            read may be stripped by now), and one that decision refused stays out."#,
        ),
    Spec::flag(RunOpt::Mask, "mask")
        .doc(
            "replace every credential value envwrap knows (the caller's, every [[secret]]'s, \
             and their base64 and escaped forms) by <NAME> in COMMAND's output; on a terminal, \
             COMMAND gets a pseudo-terminal of its own, relayed both ways (the policy's \
             mask = true turns this on)",
        )
        .doc_long(
            r#"Replace every credential value envwrap knows in
            .IR COMMAND 's
            output by a marker that names it,
            .BR <GH_TOKEN> :
            the values of the caller's credentials (by name and by shape), of every
            .B [[secret]]
            envwrap can read, and their base64 and escaped forms.
            When standard output or standard error is a terminal,
            .I COMMAND
            runs on a pseudo-terminal of its own that envwrap relays both ways, so it still sees a
            terminal (colours, window size, raw mode, job control); otherwise its output comes
            through pipes, standard output and standard error apart.
            The policy's
            .B mask = true
            turns this on for every run.
            See docs/masking.md for what it cannot reach."#,
        ),
    Spec::help(RunOpt::Help),
    Spec::flag(RunOpt::Version, "version")
        .doc("show the version")
        .doc_long("Show the version and exit."),
    Spec::with_value(RunOpt::Generate, "generate", "KIND")
        .doc(
            "print a shell completion script: complete-bash, complete-zsh or complete-fish; \
             or the man page: man",
        )
        .doc_long(
            r"Print a shell completion script and exit:
            .BR complete\-bash ,
            .B complete\-zsh
            or
            .BR complete\-fish .
            The scripts are made from the same option tables as the parser, and
            .B make install
            installs all three.
            .B man
            prints this manual page, made from the same tables
            (docs/man/envwrap.1 is its output).",
        ),
];

/// An operand that the docs list among the options (`NAME=VALUE`).
pub struct Operand {
    /// As `--help` shows it.
    pub shown: &'static str,
    /// The man page's `.TP` line for it.
    pub roff: &'static str,
    pub doc: &'static str,
    /// The man page's paragraph, roff.
    pub doc_long: &'static str,
}

/// A group of the run mode's options, as the help and the man page show them.
pub struct Group {
    pub title: &'static str,
    /// Its first option in [`SPECS`]: the group runs to the next group's first.
    pub first: RunOpt,
    /// Operands listed after its options.
    pub operands: &'static [Operand],
    /// What `--help` says after its table; may be empty.
    pub after: &'static str,
    /// What envwrap(1) says after its paragraphs (roff); may be empty.
    pub after_man: &'static str,
}

/// The run mode's options in groups: env(1)'s own, then envshim's.
pub const GROUPS: &[Group] = &[
    Group {
        title: "env(1) options",
        first: RunOpt::IgnoreEnvironment,
        operands: &[Operand {
            shown: "NAME=VALUE",
            roff: ".IR NAME = VALUE",
            doc: "set NAME; the policy judges it like any other variable, so a credential \
                  given this way is refused",
            doc_long: r"Set
                .IR NAME .
                The policy judges it like any other variable, so a credential given this way is
                refused, with a warning that names it.
                An empty
                .I NAME
                is an error (exit 125).",
        }],
        after: "\
Without COMMAND, print the environment a child would get under the policy (for
no program in particular), one entry a line, as env(1) prints its own.
",
        after_man: r".PP
            Without
            .IR COMMAND ,
            envwrap prints the environment a child would get under the policy, decided for
            no program in particular (no
            .B [program.*]
            section or grant applies), one entry a line, as
            .BR env (1)
            prints its own: what the policy strips or refuses is not printed.",
    },
    Group {
        title: "Policy options",
        first: RunOpt::Policy,
        operands: &[],
        after: "",
        after_man: "",
    },
];

/// The options of group `i` of [`GROUPS`], without their ids.
pub fn group_options(i: usize) -> Vec<Spec<()>> {
    let at = |id: RunOpt| SPECS.iter().position(|s| s.id == id).unwrap_or(SPECS.len());
    let start = at(GROUPS[i].first);
    let end = GROUPS.get(i + 1).map_or(SPECS.len(), |g| at(g.first));
    SPECS[start..end].iter().map(Spec::erase).collect()
}

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
    /// `--refuse-changes`: the supervisor never writes an exec's environment.
    pub refuse_changes: bool,
    /// `--routed`: the environment is one this policy already decided
    /// (`Layers::decide_routed`).
    pub routed: bool,
    /// `--mask`: mask known values in the command's output (mask/).
    pub mask: bool,
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
        refuse_changes: false,
        routed: false,
        mask: false,
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
            RunOpt::RefuseChanges => o.refuse_changes = true,
            RunOpt::Routed => o.routed = true,
            RunOpt::Mask => o.mask = true,
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
    if o.refuse_changes && !o.supervise {
        return Err(Failure::usage(
            "--refuse-changes is an option of --supervise: give both",
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
