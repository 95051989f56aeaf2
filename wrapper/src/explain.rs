//! `envwrap explain`: what the policy decides for one exec, as a table, without
//! running anything.
//!
//! For each variable of the environment (envwrap's own, or an env file's): its
//! name, its decision (kept, stripped, refused, set or granted), its value as
//! `<N bytes, SHAPE>`, and the rule that decided. Then each argument of the
//! command that would change, and why. A value is never printed.

use crate::exit::{self, Failure, OWN_ERROR};
use crate::opts::{tool_args, Spec};
use crate::resolve::{self, Resolved};
use crate::tools::ToolDoc;
use crate::{environ, help, preload, source, value};
use envpolicy::argv::{ArgAction, ArgRule};
use envpolicy::bytes::split_entry;
use envpolicy::compiled::Mode;
use envpolicy::decide::Action;
use envpolicy::envfile;
use envpolicy::outcome::{self, describe_rule, Decision, Target};
use serde_json::json;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Clone, Copy)]
pub(crate) enum Opt {
    Policy,
    Program,
    EnvFile,
    Json,
    Help,
}

pub(crate) const SPECS: &[Spec<Opt>] = &[
    Spec::policy(Opt::Policy),
    Spec::with_value(Opt::Program, "program", "NAME")
        .doc(
            "decide for this program (default: COMMAND; with neither, no [program.*] section \
             applies)",
        )
        .doc_long(
            r"Decide for this program.
            Default:
            .IR COMMAND ;
            with neither, no
            .BI [program. NAME ]
            section applies.",
        ),
    Spec::with_value(Opt::EnvFile, "env-file", "FILE")
        .doc(
            "take the environment from FILE (env-file syntax, see envshim.toml(5)) instead of \
             envwrap's own",
        )
        .doc_long(
            r"Take the environment from
            .I FILE
            (env\-file syntax, see
            .BR envshim.toml (5))
            instead of envwrap's own.
            A line that is not an assignment is reported by number and skipped.",
        ),
    Spec::flag(Opt::Json, "json").doc("print one JSON object"),
    Spec::help(Opt::Help),
];

/// What the docs say of explain.
pub(crate) const DOC: ToolDoc = ToolDoc {
    usage: &[
        "[OPTION]... [-- COMMAND [ARG]...] |",
        "[--policy POLICY] [--json] SECRET",
    ],
    operands: "",
    summary: "each variable's decision and rule, and each argument of COMMAND that would \
              change, for the current environment or an env file; values show as \
              <N bytes, SHAPE>, never in full",
    about: "\
Show what the policy decides for one exec, and run nothing: every variable of
the environment with its decision (kept, stripped, refused, set or granted) and
the rule that decided it, then every argument of COMMAND that would change, and
why. Values never appear: a value shows as its length and the token shape it
has, for example <40 bytes, github token>.

As the run would: the LD_PRELOAD and ENVSHIM_POLICY entries envwrap adds when
it puts libenvshim.so into COMMAND are rows too; a COMMAND that is not found
(exit 127) or cannot be executed (126) is said; and for a program that passes
NAME=VALUE pairs on (env, sudo, tmux, docker, ...), each pair the policy drops
is named as a variable the program it starts will not get. Each [[secret]]
COMMAND gets is said, with whether its source gives a value now.

With the name of a [[secret]] as its one operand, explain says where that
secret goes: its source, the programs that get it, its deny_args, and whether
its source gives a value now. No value is ever read into the output.
",
    after: "Exit status: 0; 125 for a bad option, env file or policy.\n",
    man: r#"Show what the policy decides for one exec, and run nothing.
        For every variable of the environment (envwrap's own, or the env file's): its name,
        its decision
        .RB ( kept ", " stripped ", " refused ", " set " or " granted ),
        its value as
        .BI < N " bytes, " SHAPE >
        (for example
        .BR "<40 bytes, github token>" ),
        and the rule that decided.
        Then every argument of
        .I COMMAND
        that would change, and why, and whether the exec would be refused.
        As the run would: the
        .B LD_PRELOAD
        and
        .B ENVSHIM_POLICY
        entries envwrap adds when it puts the shim into
        .I COMMAND
        are rows too; a
        .I COMMAND
        that is not found (exit 127) or cannot be executed (126) is said; and for a program
        that passes
        .IB NAME = VALUE
        pairs on (env, sudo, tmux, docker, ...), each pair the policy drops is named as a
        variable the program it starts will not get.
        Each
        .B [[secret]]
        that
        .I COMMAND
        gets is said, with whether its source gives a value now.
        With the name of a
        .B [[secret]]
        as its one operand
        .RI ( SECRET ),
        explain says where that secret goes: its source, the programs that get it, its
        .BR deny_args ,
        and whether its source gives a value now.
        Values never appear."#,
    man_after: r".PP
        Exit status: 0; 125 for a bad option, env file or policy.",
};

const HINT: &str = "envwrap explain --help";

/// One variable's row.
struct EnvRow {
    index: Option<usize>,
    name: String,
    decision: &'static str,
    value: Vec<u8>,
    rule: &'static str,
    why: String,
}

/// One changed argument's row.
struct ArgRow {
    index: usize,
    action: &'static str,
    name: Option<String>,
    argument: String,
    rule: &'static str,
    why: String,
}

pub fn main(args: Vec<OsString>) -> ExitCode {
    let mut json_out = false;
    let r = explain(args, &mut json_out);
    exit::finish_as(r, json_out)
}

/// `json_out` is set as soon as `--json` is read, so that a failure after it is
/// reported as JSON too.
fn explain(args: Vec<OsString>, json_out: &mut bool) -> Result<u8, Failure> {
    let mut policy_path = None;
    let mut program = None;
    let mut env_file = None;
    let mut want_help = false;
    let a = tool_args(args, SPECS, HINT, |id, v| {
        match id {
            Opt::Policy => policy_path = v.map(PathBuf::from),
            Opt::Program => program = v,
            Opt::EnvFile => env_file = v.map(PathBuf::from),
            Opt::Json => *json_out = true,
            Opt::Help => want_help = true,
        }
        Ok(())
    })?;
    if want_help {
        show!("{}", help::for_tool("explain"));
        return Ok(0);
    }
    let loaded = source::load(policy_path.as_deref(), source::own_getenv)?;
    for w in &loaded.compiled.warnings {
        say!("envwrap: warning: {}", w.message);
    }
    let policy = loaded.compiled.policy();
    if let [name] = a.operands.as_slice() {
        if let Some((i, _)) = envpolicy::secret::by_name(&policy, name.as_bytes()) {
            return explain_secret(&loaded, i, *json_out);
        }
    }
    if !a.operands.is_empty() {
        return Err(Failure::usage(
            "explain: put '--' before COMMAND and its arguments (a lone operand may name a \
             [[secret]])",
            HINT,
        ));
    }
    let env = match &env_file {
        Some(path) => read_env_file(path)?,
        None => environ::own(),
    };
    let argv: Vec<Vec<u8>> = a
        .after
        .unwrap_or_default()
        .iter()
        .map(|a| a.as_bytes().to_vec())
        .collect();
    let program: Vec<u8> = match (&program, argv.first()) {
        (Some(p), _) => p.as_bytes().to_vec(),
        (None, Some(c)) => c.clone(),
        (None, None) => Vec::new(),
    };
    let files = outcome::read_env_files(&policy);
    let command = Command::find(&argv, &env);
    let policy_entry = loaded.policy_entry();
    let shim = command.shim.as_ref().map(|s| s.as_os_str().as_bytes());
    let sticky = outcome::Sticky {
        preload: shim,
        policy_entry: shim.and(policy_entry.as_deref()),
        hint: None,
    };
    let user_only = outcome::Layers::one(outcome::Pass::new(&policy, &files), sticky).decide(
        &program,
        &argv,
        &env,
        &[],
    );
    // The host's managed layer decides after the user's policy: a row whose
    // verdict it changed is its, and says so (docs/policy.md, 2b).
    let managed = envpolicy::managed::Managed::load();
    if let Some(w) = managed.warning() {
        say!("envwrap: warning: {w}");
    }
    let managed = managed.in_force();
    let d = match &managed {
        Some(m) => outcome::Layers {
            user: outcome::Pass::new(&policy, &files),
            managed: Some(m.pass(&[])),
            requested_mode: None,
            sticky,
        }
        .decide(&program, &argv, &env, &[]),
        _ => user_only.clone(),
    };
    let layer_of = |i: usize| match (&managed, d.env_verdicts.get(i)) {
        (Some(m), Some(v)) if user_only.env_verdicts.get(i) != Some(v) => Some(&m.policy),
        _ => None,
    };
    let env_rows = env_rows(&policy, &d, &env, layer_of);
    let arg_rows = arg_rows(&d, &argv);
    let mode = match d.mode {
        Mode::Enforce => "enforce",
        Mode::Audit => "audit",
    };
    // The program the exec runs (docs/policy.md, "Which program"): a script
    // its interpreter runs is named, and the file exec'd after it.
    let program_shown = if program.is_empty() {
        "(none: no [program.*] section applies)".to_string()
    } else if d.program != program {
        format!(
            "{} (run through {})",
            value::word(&d.program),
            value::word(envpolicy::bytes::basename(&program))
        )
    } else {
        value::word(&program)
    };
    let delivered = secrets_for(&policy, &program, &env);
    let refusal = d
        .refusal
        .as_ref()
        .map(|r| format!("argument {} {}", r.index.unwrap_or(0), r.why));
    if *json_out {
        let v = json!({
            "policy": loaded.name(),
            "program": value::word(&d.program),
            "exec": value::word(&program),
            "mode": mode,
            "env": env_rows.iter().map(|r| json!({
                "index": r.index,
                "name": r.name,
                "decision": r.decision,
                "bytes": r.value.len(),
                "shape": value::shape(&r.value),
                "rule": r.rule,
                "why": r.why,
            })).collect::<Vec<_>>(),
            "argv": arg_rows.iter().map(|r| json!({
                "index": r.index,
                "action": r.action,
                "name": r.name,
                "argument": r.argument,
                "rule": r.rule,
                "why": r.why,
            })).collect::<Vec<_>>(),
            "refused": refusal,
            "secrets": delivered.iter().map(|l| l.to_json()).collect::<Vec<_>>(),
            "command": command.json(),
            "loses": losses(&arg_rows, &argv),
        });
        showln!("{v}");
        return Ok(0);
    }
    let mut out = String::new();
    out.push_str(&format!("policy   {}\n", loaded.name()));
    out.push_str(&format!("program  {program_shown}\n"));
    out.push_str(&format!("mode     {mode}"));
    if d.mode == Mode::Audit {
        out.push_str(" (nothing is changed: these are what enforce would do)");
    }
    out.push_str("\n\n");
    let table: Vec<[String; 4]> = env_rows
        .iter()
        .map(|r| {
            [
                r.name.clone(),
                r.decision.to_string(),
                value::describe(&r.value),
                format!("{}: {}", r.rule, r.why),
            ]
        })
        .collect();
    out.push_str(&render(["VARIABLE", "DECISION", "VALUE", "RULE"], &table));
    out.push('\n');
    for l in &delivered {
        out.push_str(&format!(
            "secret {} is read from {} at the exec and delivered ({}; explain reads no value)\n",
            l.name,
            l.source,
            l.usability()
        ));
    }
    if argv.is_empty() {
        out.push_str("no command given: no arguments to judge\n");
    } else if arg_rows.is_empty() {
        let all = match argv.len() {
            1 => "the one argument is unchanged".to_string(),
            n => format!("all {n} arguments unchanged"),
        };
        out.push_str(&format!("arguments: {all}\n"));
    } else {
        let table: Vec<[String; 4]> = arg_rows
            .iter()
            .map(|r| {
                [
                    r.index.to_string(),
                    r.action.to_string(),
                    r.argument.clone(),
                    format!("{}: {}", r.rule, r.why),
                ]
            })
            .collect();
        out.push_str(&render(["ARGUMENT", "ACTION", "NOW", "WHY"], &table));
    }
    for line in losses(&arg_rows, &argv) {
        out.push_str(&format!("{line}\n"));
    }
    if let Some(line) = command.text() {
        out.push_str(&format!("\n{line}\n"));
    }
    if let Some(r) = refusal {
        let word = if d.mode == Mode::Audit {
            "would be refused in enforce mode"
        } else {
            "would be refused (envwrap exits 126)"
        };
        out.push_str(&format!("\nthe exec {word}: {r}\n"));
    }
    show!("{out}");
    Ok(0)
}

/// The secrets `program` gets, each with whether its source is usable now.
fn secrets_for(
    policy: &envpolicy::Policy<'_>,
    program: &[u8],
    env: &[Vec<u8>],
) -> Vec<crate::secret_cmd::Listed> {
    let wanted = envpolicy::secret::wanted(policy, program);
    crate::secret_cmd::listed(policy, env, false)
        .into_iter()
        .enumerate()
        .filter(|(i, _)| wanted & (1 << i) != 0)
        .map(|(_, l)| l)
        .collect()
}

/// `envwrap explain NAME` for a `[[secret]]`'s name: where its value comes
/// from, which programs get it, which arguments refuse their exec, and
/// whether its source gives a value now. Never the value.
fn explain_secret(loaded: &source::Loaded, i: u32, json_out: bool) -> Result<u8, Failure> {
    let policy = loaded.compiled.policy();
    let env = environ::own();
    let Some(l) = crate::secret_cmd::listed(&policy, &env, false)
        .into_iter()
        .nth(i as usize)
    else {
        return Err(Failure::new(
            OWN_ERROR,
            "the secret is not in the compiled policy",
        ));
    };
    let line = policy.secret(i).map_or(0, |r| r.line);
    if json_out {
        let mut v = l.to_json();
        v["policy"] = json!(loaded.name());
        v["line"] = json!(line);
        showln!("{v}");
        return Ok(0);
    }
    show!(
        "policy     {}\n\
         secret     {} ([[secret]] at line {line})\n\
         from       {}: {}\n\
         goes to    {}: read from its source at the exec of a program that matches, \
         in the process that becomes it; refused to every other program\n\
         deny_args  {}: an exec of those programs whose arguments hold these words, in \
         order, is refused\n",
        loaded.name(),
        l.name,
        l.source,
        l.usability(),
        l.program,
        l.deny_text()
    );
    Ok(0)
}

/// COMMAND as envwrap would run it: found on PATH or not, and whether envwrap
/// would put the shim into it (then the decision adds `LD_PRELOAD` and
/// `ENVSHIM_POLICY`, as the run does).
struct Command {
    /// `None` when no command was given.
    resolved: Option<Resolved>,
    shown: String,
    shim: Option<PathBuf>,
}

impl Command {
    fn find(argv: &[Vec<u8>], env: &[Vec<u8>]) -> Command {
        let Some(first) = argv.first() else {
            return Command {
                resolved: None,
                shown: String::new(),
                shim: None,
            };
        };
        let shown = value::word(first);
        let resolved = resolve::resolve(first, environ::get(env, b"PATH"));
        let shim = match &resolved {
            Resolved::Found(p) => preload::plan(preload::Want::Auto, p, &shown)
                .ok()
                .and_then(|(s, _)| s),
            _ => None,
        };
        Command {
            resolved: Some(resolved),
            shown,
            shim,
        }
    }

    /// The line that says what envwrap would do with COMMAND, when that is not
    /// to run it as given.
    fn text(&self) -> Option<String> {
        let shown = &self.shown;
        match self.resolved.as_ref()? {
            Resolved::Found(_) => None,
            Resolved::NotFound => Some(format!(
                "{shown}: command not found in PATH: envwrap would exit 127"
            )),
            Resolved::NotExecutable(p) => Some(format!(
                "{}: permission denied: envwrap would exit 126",
                value::word(p.as_os_str().as_bytes())
            )),
        }
    }

    fn json(&self) -> serde_json::Value {
        match &self.resolved {
            None => serde_json::Value::Null,
            Some(Resolved::Found(p)) => json!({
                "found": value::word(p.as_os_str().as_bytes()),
                "shim": self.shim.as_ref().map(|s| s.display().to_string()),
            }),
            Some(Resolved::NotFound) => json!({"found": null, "exit": 127}),
            Some(Resolved::NotExecutable(_)) => json!({"found": null, "exit": 126}),
        }
    }
}

/// For each pair a carrier program (env, sudo, tmux, docker, ...) would pass on
/// and the policy drops: the variable the program it starts will not get.
fn losses(rows: &[ArgRow], argv: &[Vec<u8>]) -> Vec<String> {
    let Some(carrier) = argv
        .first()
        .filter(|p| envpolicy::argv::carrier(p).is_some())
    else {
        return Vec::new();
    };
    let carrier = value::word(envpolicy::bytes::basename(carrier));
    rows.iter()
        .filter(|r| {
            matches!(
                r.action,
                "dropped" | "refused" | "cut before the pair's option"
            )
        })
        .filter_map(|r| r.name.as_ref())
        .map(|name| {
            format!("{name}: {carrier} will not set it: what {carrier} starts runs without {name}")
        })
        .collect()
}

/// The entries of an env file, with values unescaped.
fn read_env_file(path: &std::path::Path) -> Result<Vec<Vec<u8>>, Failure> {
    let contents =
        envpolicy::read_file::read(path, envpolicy::readable::ENV_FILE).map_err(|e| {
            Failure::new(
                OWN_ERROR,
                format!(
                    "cannot read env file {}: {e}",
                    envpolicy::error::shown(path)
                ),
            )
        })?;
    let mut env = Vec::new();
    for a in envfile::assignments(&contents) {
        match a {
            Ok(a) => {
                let mut value = vec![0u8; a.value_len()];
                let n = a.write_value(&mut value).unwrap_or(0);
                value.truncate(n);
                let mut e = a.name.to_vec();
                e.push(b'=');
                e.extend(value);
                env.push(e);
            }
            Err(e) => say!(
                "envwrap: warning: {}: line {}: {} (line skipped)",
                envpolicy::error::shown(path),
                e.line,
                e.reason
            ),
        }
    }
    Ok(env)
}

fn decision_word(a: Action) -> &'static str {
    match a {
        Action::Keep => "kept",
        Action::Strip => "stripped",
        Action::Refuse => "refused",
        Action::Grant => "granted",
        Action::Replace => "set",
    }
}

/// The rows of the environment; `managed_of(i)` is the managed layer's policy
/// when its pass decided entry `i` (its rule is then described with that
/// policy, and the row names the layer).
fn env_rows<'m>(
    policy: &envpolicy::Policy<'_>,
    d: &Decision,
    env: &[Vec<u8>],
    managed_of: impl Fn(usize) -> Option<&'m envpolicy::Policy<'m>>,
) -> Vec<EnvRow> {
    let new_value = |name: &[u8]| -> Vec<u8> {
        d.env
            .iter()
            .filter_map(|e| split_entry(e))
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.to_vec())
            .unwrap_or_default()
    };
    let mut rows = Vec::new();
    let mut replaced: Vec<Vec<u8>> = Vec::new();
    for (i, (entry, v)) in env.iter().zip(&d.env_verdicts).enumerate() {
        let (name, val) = match split_entry(entry) {
            Some((n, val)) => (n, val.to_vec()),
            None => (&b""[..], entry.clone()),
        };
        let shown_name = if entry.contains(&b'=') {
            value::word(name)
        } else {
            "(an entry without '=')".to_string()
        };
        let value = if v.action == Action::Replace {
            replaced.push(name.to_vec());
            new_value(name)
        } else {
            val
        };
        let (by, layer) = match managed_of(i) {
            Some(m) => (m, envpolicy::layer::Layer::Managed),
            None => (policy, envpolicy::layer::Layer::User),
        };
        let mut why = describe_rule(by, v.rule, env);
        if layer == envpolicy::layer::Layer::Managed {
            why = format!("{why} (the managed layer, {})", crate::run::managed_label());
        }
        rows.push(EnvRow {
            index: Some(i),
            name: shown_name,
            decision: decision_word(v.action),
            value,
            rule: v.rule.id(),
            why,
        });
    }
    for c in d
        .changes
        .iter()
        .filter(|c| c.target == Target::Env && c.index.is_none())
    {
        let name = c.name.clone().unwrap_or_default();
        if replaced.contains(&name.as_bytes().to_vec()) {
            continue;
        }
        let refused = c.action.refuses();
        rows.push(EnvRow {
            index: None,
            name: value::word(name.as_bytes()),
            decision: if refused { "refused" } else { "set" },
            value: if refused {
                Vec::new()
            } else {
                new_value(name.as_bytes())
            },
            rule: c.rule.id(),
            why: match c.layer {
                envpolicy::layer::Layer::Managed => {
                    format!(
                        "{} (the managed layer, {})",
                        c.why,
                        crate::run::managed_label()
                    )
                }
                envpolicy::layer::Layer::User => c.why.clone(),
            },
        });
    }
    rows
}

fn arg_rows(d: &Decision, argv: &[Vec<u8>]) -> Vec<ArgRow> {
    let mut rows = Vec::new();
    for (i, v) in d.argv_verdicts.iter().enumerate() {
        if v.action == ArgAction::Keep {
            continue;
        }
        let Some(c) = d
            .changes
            .iter()
            .find(|c| c.target == Target::Argv && c.index == Some(i))
        else {
            continue;
        };
        let arg = &argv[i];
        let argument = match v.rule {
            ArgRule::Pair {
                name_at, name_end, ..
            } => {
                let (head, rest) = arg.split_at((name_end as usize).min(arg.len()));
                let name = head.get(name_at as usize..).unwrap_or(head);
                format!(
                    "{}{}={}",
                    value::word(&head[..(name_at as usize).min(head.len())]),
                    value::word(name),
                    value::describe(rest.strip_prefix(b"=").unwrap_or(rest))
                )
            }
            ArgRule::PairFlag => value::word(arg),
            _ => value::describe(arg),
        };
        let action = match v.action {
            ArgAction::Keep => "kept",
            ArgAction::Drop => "dropped",
            ArgAction::Refuse => "refused",
            ArgAction::Redact => "redacted",
            ArgAction::NameOnly => "name only",
            ArgAction::Unflag(_) => "cut before the pair's option",
        };
        rows.push(ArgRow {
            index: i,
            action,
            name: c.name.clone(),
            argument,
            rule: c.rule.id(),
            why: c.why.clone(),
        });
    }
    rows
}

/// Left-aligned columns; the last one is not padded.
fn render<const N: usize>(head: [&str; N], rows: &[[String; N]]) -> String {
    let mut width = [0usize; N];
    for (k, h) in head.iter().enumerate() {
        width[k] = h.chars().count();
    }
    for r in rows {
        for (k, cell) in r.iter().enumerate() {
            width[k] = width[k].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        for (k, cell) in cells.iter().enumerate() {
            if k + 1 == N {
                out.push_str(cell);
            } else {
                out.push_str(cell);
                out.push_str(&" ".repeat(width[k] - cell.chars().count() + 2));
            }
        }
        out.push('\n');
    };
    line(head.to_vec());
    for r in rows {
        line(r.iter().map(String::as_str).collect());
    }
    out
}
