//! `envwrap scan`: find the leaks that exist now, in live processes.
//!
//! Per process, from /proc:
//! - `cmdline`: every argument is searched for the value of every credential
//!   known to the scan (its own environment's credentials and the values of the
//!   env files the policy imports; one Aho-Corasick automaton over all of them,
//!   built once and run over every process) and for token shapes;
//! - `environ`: the process's environment at its exec is decided under the policy
//!   for that program; a credential it would not pass (refused, or stripped) is a
//!   finding, and so is a passthrough name (kept, with its value read from an env
//!   file) whose value differs from the file's today: the drift check.
//!
//! A finding names the PID, the program and the variable, never the value. A
//! process that vanishes or cannot be read is counted with the reason and never
//! fails the scan.

use crate::exit::{self, Failure, FINDINGS, OWN_ERROR};
use crate::opts::{tool_args, Spec};
use crate::procfs::{self, Skip};
use crate::tools::ToolDoc;
use crate::{environ, help, source, value};
use aho_corasick::AhoCorasick;
use envpolicy::argv::{for_each_credential_value, ArgvRequest, ValueSource};
use envpolicy::bytes::split_entry;
use envpolicy::compiled::{sec, Policy};
use envpolicy::decide::{self, Action};
use envpolicy::envfile;
use envpolicy::outcome::{self, describe_rule};
use envpolicy::shape::{find_shapes, ShapeSet};
use serde_json::json;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Clone, Copy)]
pub(crate) enum Opt {
    Pid,
    All,
    TmuxLabel,
    TmuxPath,
    Policy,
    Json,
    Help,
}

pub(crate) const SPECS: &[Spec<Opt>] = &[
    Spec::with_value(Opt::Pid, "pid", "N")
        .doc("scan process N (repeatable)")
        .doc_long(
            r"Scan process
            .IR N .
            Repeatable.",
        ),
    Spec::flag(Opt::All, "all").doc("scan every process (the default)"),
    Spec::with_value(Opt::TmuxLabel, "socket-name", "NAME")
        .short(b'L')
        .doc(
            "scan the tmux server of 'tmux -L NAME' and the processes it started (its panes \
             and what they run) instead of every process; with --pid or --all, read that \
             server besides",
        )
        .doc_long(
            r#"Scan the tmux server of
            .BI "tmux \-L " NAME
            and the processes it started (its panes and what they run) instead of every
            process.
            With
            .B \-\-pid
            or
            .BR \-\-all ,
            read that server besides the processes they name."#,
        ),
    Spec::with_value(Opt::TmuxPath, "socket-path", "PATH")
        .short(b'S')
        .doc("the same for the tmux server listening on PATH")
        .doc_long(
            r"The same for the tmux server listening on
            .IR PATH .",
        ),
    Spec::policy(Opt::Policy),
    Spec::flag(Opt::Json, "json").doc("print each finding, then a summary, as JSON lines"),
    Spec::help(Opt::Help),
];

/// What the docs say of scan.
pub(crate) const DOC: ToolDoc = ToolDoc {
    usage: &[
        "[--pid N]... [--all] [-L NAME | -S PATH]... [--policy FILE]",
        "[--json]",
    ],
    operands: "",
    summary: "find leaks in live processes: credential values or token shapes in their \
              arguments, refused variables or stale passthrough values in their environments",
    about: "\
Find leaks that exist now, in live processes, from /proc/PID/cmdline and
/proc/PID/environ where they can be read. It reports:
  - a process whose arguments hold the value of a credential (from scan's own
    environment and from the env files the policy imports) or a token shape;
  - a process whose environment holds a variable the policy refuses;
  - a process whose arguments hold the value of a [[secret]] (each source
    scan's user can read is read), or whose environment does when it is not
    one of the programs that get that secret;
  - a process whose environment holds a passthrough variable (kept by name and
    read from an env file imported with values = true) whose value differs from
    the file's value today: the drift check to run after changing a policy;
  - a tmux server whose global or session environment holds a variable the
    policy strips or refuses, or a stale passthrough value: every new pane
    would get it ('envwrap mux-env --fix' removes it). The servers are this
    user's (the sockets in ${TMUX_TMPDIR:-/tmp}/tmux-UID/), and those -L and -S
    name;
  - a GNU screen session whose server's environment (as setenv left it) holds
    such a variable: every new window would get it (without --pid, -L or -S).
Each finding names the PID, the program and the variable, never the value. A
process that vanishes or cannot be read is skipped; scan says how many were
skipped, and why.
",
    after: "\
Exit status: 0 when nothing was found; 1 when something was; 125 for a bad
option or policy, or when a process named with --pid could not be read in full
(it vanished, or its environment is not readable): such a process cannot be
called clean.
",
    man: r#"Find the leaks that exist now, in live processes, by reading
        .BI /proc/ PID /cmdline
        and
        .BI /proc/ PID /environ
        where they can be read.
        It reports every process whose arguments hold the value of a credential (from scan's
        own environment and from the env files the policy imports) or a token shape; every
        process whose environment holds a credential the policy refuses (or strips); every
        process whose arguments hold the value of a
        .B [[secret]]
        (each source the user running scan can read is read), or whose environment does when
        it is not one of the programs that get that secret; and every
        process whose environment holds a passthrough variable (kept by exact name and read
        from an env file imported with
        .BR "values = true" )
        whose value differs from the file's value today: the drift check to run after changing
        a policy.
        It also reads every tmux server of the user (the sockets in
        .BI ${TMUX_TMPDIR:\-/tmp}/tmux\- UID /\fR)
        and reports each one whose global or session environment holds a variable the policy
        strips or refuses, or a stale passthrough value: every new pane would get it
        (see
        .BR mux\-env ),
        and every GNU screen session whose server's environment, as
        .B setenv
        left it, holds such a variable: every new window would get it.
        Each finding names the PID, the program and the variable, never the value.
        A process that vanishes or cannot be read is skipped; scan counts the skipped
        processes and says why."#,
    man_after: r".PP
        Exit status: 0 when nothing was found, 1 when something was, 125 for a bad option or
        policy, or when a process named with
        .B \-\-pid
        could not be read in full (it vanished, or its environment is not readable): such a
        process cannot be called clean.
        With
        .B \-\-all
        an unreadable process never changes the exit status.",
};

const HINT: &str = "envwrap scan --help";

/// One leak in one process.
#[derive(Clone, Debug)]
pub struct Finding {
    pub pid: u32,
    pub program: String,
    /// `argv.value`, `argv.shape`, `environ.refused`, `environ.stale`, and a
    /// multiplexer's `NAME.held`, `NAME.stale` (`tmux.held`, `screen.held`).
    pub kind: &'static str,
    /// The variable, when one is known (for a bare token shape it is not).
    pub variable: Option<String>,
    /// The argument's index, for argv findings.
    pub index: Option<usize>,
    pub why: String,
}

impl Finding {
    fn text(&self) -> String {
        let what = match (self.kind, self.index) {
            ("argv.value" | "argv.shape", Some(i)) => format!("argument {i} "),
            (kind, _) if is_server_kind(kind) => String::new(),
            _ => "its environment ".to_string(),
        };
        format!("pid {} ({}): {what}{}", self.pid, self.program, self.why)
    }
}

/// A finding about a multiplexer's server (`tmux.held`, `screen.held`, ...),
/// whose text names its own place.
fn is_server_kind(kind: &str) -> bool {
    kind.split_once('.')
        .is_some_and(|(mux, _)| envpolicy::mux::by_name(mux.as_bytes()).is_some())
}

/// The credential values the scan looks for, and whose they are.
struct Needles {
    automaton: Option<AhoCorasick>,
    /// Per pattern: "NAME (from WHERE)" labels, and the bare names.
    owners: Vec<Vec<(String, String)>>,
    /// The patterns, and which of them are values (not base64 needles): an
    /// argument that holds none is searched for their escaped copies
    /// (`envpolicy::escaped`).
    values: Vec<Vec<u8>>,
    raw: Vec<usize>,
}

pub fn main(args: Vec<OsString>) -> ExitCode {
    let mut json_out = false;
    let r = scan(args, &mut json_out);
    exit::finish_as(r, json_out)
}

/// `json_out` is set as soon as `--json` is read, so that a failure after it is
/// reported as JSON too.
fn scan(args: Vec<OsString>, json_out: &mut bool) -> Result<u8, Failure> {
    let mut pids: Vec<u32> = Vec::new();
    let mut all = false;
    let mut policy_path = None;
    let mut want_help = false;
    let mut tmux_sockets: Vec<PathBuf> = Vec::new();
    let a = tool_args(args, SPECS, HINT, |id, v| {
        match id {
            Opt::Pid => {
                let v = v.unwrap_or_default();
                match v
                    .to_str()
                    .and_then(|s| s.parse::<u32>().ok())
                    .filter(|&p| p > 0)
                {
                    Some(p) => pids.push(p),
                    None => {
                        return Err(Failure::usage(
                            "--pid takes a process id (a positive number)",
                            HINT,
                        ))
                    }
                }
            }
            Opt::All => all = true,
            Opt::TmuxLabel => tmux_sockets.push(crate::mux::tmux::label_socket(
                v.unwrap_or_default().as_encoded_bytes(),
            )),
            Opt::TmuxPath => tmux_sockets.push(PathBuf::from(v.unwrap_or_default())),
            Opt::Policy => policy_path = v.map(PathBuf::from),
            Opt::Json => *json_out = true,
            Opt::Help => want_help = true,
        }
        Ok(())
    })?;
    if want_help {
        show!("{}", help::for_tool("scan"));
        return Ok(0);
    }
    if !a.operands.is_empty() || a.after.is_some_and(|v| !v.is_empty()) {
        return Err(Failure::usage("scan takes no operands (use --pid N)", HINT));
    }
    if all && !pids.is_empty() {
        return Err(Failure::usage("--all and --pid exclude each other", HINT));
    }
    let loaded = source::load(policy_path.as_deref(), source::own_getenv)?;
    for w in &loaded.compiled.warnings {
        say!("envwrap: warning: {}", w.message);
    }
    let policy = loaded.compiled.policy();
    let files = outcome::read_env_files(&policy);
    let own = environ::own();
    let secrets = crate::scan_secrets::SecretNeedles::read(&policy, &own);
    let needles = needles(&policy, &own, &files, &secrets);

    let explicit = !pids.is_empty();
    let me = std::process::id();
    let cannot_list = |e: std::io::Error| {
        Failure::new(
            OWN_ERROR,
            format!("cannot list /proc: {}", envpolicy::error::io_reason(&e)),
        )
    };
    let targets = if explicit {
        pids
    } else if !all && !tmux_sockets.is_empty() {
        // `-L`/`-S` alone: the servers named and what they started (their
        // panes, and what those run), not every process.
        let roots: Vec<u32> = tmux_sockets
            .iter()
            .filter_map(|s| crate::mux::tmux::server_pid(s))
            .collect();
        procfs::trees(&roots).map_err(cannot_list)?
    } else {
        procfs::pids().map_err(cannot_list)?
    };
    let mut findings = Vec::new();
    let mut scanned = 0usize;
    // (what, why) -> count; and the explicit PIDs that were not read in full.
    let mut skipped: BTreeMap<(&'static str, Skip), usize> = BTreeMap::new();
    let mut incomplete: Vec<(u32, &'static str, Skip)> = Vec::new();
    for pid in targets.into_iter().filter(|&p| p != me) {
        let program = value::word(procfs::comm(pid).as_bytes());
        let args = match procfs::read(pid, "cmdline") {
            Ok(b) => procfs::split_nul(&b),
            Err(why) => {
                *skipped.entry(("cmdline", why.clone())).or_default() += 1;
                incomplete.push((pid, "cmdline", why));
                continue;
            }
        };
        scan_argv(&policy, &needles, pid, &program, &args, &mut findings);
        match procfs::read(pid, "environ") {
            Ok(b) => {
                let entries = procfs::split_nul(&b);
                let name = args
                    .first()
                    .cloned()
                    .unwrap_or_else(|| procfs::comm(pid).into_bytes());
                scan_environ(
                    &policy,
                    &files,
                    pid,
                    &program,
                    &name,
                    &entries,
                    &mut findings,
                );
                let names = crate::scan_secrets::process_names(pid, &args);
                crate::scan_secrets::forgive_secret_programs(&policy, pid, &names, &mut findings);
                secrets.scan_environ(&policy, pid, &program, &names, &entries, &mut findings);
            }
            // A kernel thread or a zombie has no environment to read.
            Err(Skip::Vanished) if procfs::has_no_memory(pid) => {}
            Err(why) => {
                *skipped.entry(("environ", why.clone())).or_default() += 1;
                incomplete.push((pid, "environ", why));
            }
        }
        scanned += 1;
    }

    // Multiplexers' servers: what each would give a new pane or window (a
    // screen server's live environment, which /proc/PID/environ does not show
    // after setenv). Every one of this user's, or only the tmux servers -L and
    // -S name (with --pid, only those).
    let sockets = (!tmux_sockets.is_empty()).then_some(tmux_sockets);
    if !explicit || sockets.is_some() {
        findings.extend(crate::mux::scan_findings(
            &policy,
            &files,
            &loaded.source,
            sockets,
        ));
    }

    let processes: std::collections::BTreeSet<u32> = findings.iter().map(|f| f.pid).collect();
    let skipped_text: Vec<String> = skipped
        .iter()
        .map(|((what, why), n)| format!("{n} {}", skip_text(what, why)))
        .collect();
    if *json_out {
        for f in &findings {
            showln!(
                "{}",
                json!({
                    "pid": f.pid,
                    "program": f.program,
                    "kind": f.kind,
                    "variable": f.variable,
                    "index": f.index,
                    "why": f.why,
                })
            );
        }
        showln!(
            "{}",
            json!({
                "summary": {
                    "policy": loaded.name(),
                    "scanned": scanned,
                    "findings": findings.len(),
                    "processes_with_findings": processes.len(),
                    "skipped": skipped.iter().map(|((what, why), n)| json!({
                        "read": what, "why": why.describe(), "count": n, "text": skip_text(what, why)
                    })).collect::<Vec<_>>(),
                }
            })
        );
    } else {
        for f in &findings {
            showln!("{}", f.text());
        }
        let count =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let found = if findings.is_empty() {
            "no findings".to_string()
        } else {
            format!(
                "{} in {}",
                count(findings.len(), "finding", "findings"),
                count(processes.len(), "process", "processes"),
            )
        };
        let mut summary = format!(
            "scan: {} scanned under {}; {found}",
            count(scanned, "process", "processes"),
            loaded.name(),
        );
        if !skipped_text.is_empty() {
            summary.push_str(&format!("; skipped: {}", skipped_text.join(", ")));
        }
        say!("{summary}");
    }
    if explicit {
        for (pid, what, why) in &incomplete {
            say!("envwrap: scan: pid {pid}: {}", skip_text(what, why));
        }
    }
    if !findings.is_empty() {
        return Ok(FINDINGS);
    }
    if explicit && !incomplete.is_empty() {
        return Err(Failure::new(
            OWN_ERROR,
            "scan: not every process named with --pid could be read in full, so it cannot be called clean",
        ));
    }
    Ok(0)
}

/// Why a process was (partly) skipped, for people.
fn skip_text(what: &str, why: &Skip) -> String {
    match (what, why) {
        ("cmdline", Skip::Vanished) => "vanished before it could be read".into(),
        ("cmdline", Skip::Denied) => "command line not readable (permission denied)".into(),
        ("cmdline", other) => format!("command line not readable ({})", other.describe()),
        (_, Skip::Vanished) => "vanished while it was read (environment not read)".into(),
        (_, Skip::Denied) => "environment not readable (permission denied)".into(),
        (_, other) => format!("environment not readable ({})", other.describe()),
    }
}

/// The scan's credential values: its own environment's credentials and the
/// imported env files' credential values, deduplicated, in one automaton, with
/// the needles of their base64 copies (standard and URL-safe alphabets), so that
/// an argument holding `Basic <base64 of user:TOKEN>` is found too.
fn needles(
    policy: &Policy<'_>,
    own: &[Vec<u8>],
    files: &[Option<Vec<u8>>],
    secrets: &crate::scan_secrets::SecretNeedles,
) -> Needles {
    let own_refs: Vec<&[u8]> = own.iter().map(Vec::as_slice).collect();
    let file_refs: Vec<Option<&[u8]>> = files.iter().map(|f| f.as_deref()).collect();
    let req = ArgvRequest {
        program: b"",
        identity: envpolicy::identity::Identity::itself(b""),
        argv: &[],
        env: &[],
        env_verdicts: &[],
        parent_env: &own_refs,
        env_files: &file_refs,
        file_credentials: None,
        secrets: &[],
    };
    let mut values: Vec<Vec<u8>> = Vec::new();
    let mut owners: Vec<Vec<(String, String)>> = Vec::new();
    let mut raw: Vec<usize> = Vec::new();
    for_each_credential_value(policy, &req, |value, source| {
        let (name, from) = match source {
            ValueSource::ParentEnv(i) | ValueSource::ChildEnv(i) => (
                own.get(i as usize)
                    .and_then(|e| split_entry(e))
                    .map(|(n, _)| value::word(n))
                    .unwrap_or_else(|| "?".into()),
                "scan's environment".to_string(),
            ),
            ValueSource::EnvFile { file, line } => {
                let path = policy
                    .env_file(file)
                    .map(|r| String::from_utf8_lossy(policy.str(r.path)).into_owned())
                    .unwrap_or_default();
                let name = files
                    .get(file as usize)
                    .and_then(|f| f.as_deref())
                    .and_then(|c| envfile::assignments(c).flatten().find(|a| a.line == line))
                    .map(|a| value::word(a.name))
                    .unwrap_or_else(|| "?".into());
                (name, format!("env file {path}"))
            }
            // scan's request carries no secret values.
            ValueSource::Secret(_) => return true,
        };
        add_needles(&mut values, &mut owners, value, (name, from));
        raw.push(values.iter().position(|v| v == value).unwrap_or(0));
        true
    });
    for (name, value) in secrets.owned(policy) {
        let from = format!("secret {name}");
        add_needles(&mut values, &mut owners, value, (name, from));
        raw.push(values.iter().position(|v| v == value).unwrap_or(0));
    }
    raw.sort_unstable();
    raw.dedup();
    let automaton = (!values.is_empty())
        .then(|| AhoCorasick::new(&values).ok())
        .flatten();
    Needles {
        automaton,
        owners,
        values,
        raw,
    }
}

/// The patterns of `needles` whose escaped copy `arg` holds.
fn escaped_in(needles: &Needles, arg: &[u8]) -> Vec<usize> {
    if !envpolicy::escaped::may_hold(arg) {
        return Vec::new();
    }
    needles
        .raw
        .iter()
        .copied()
        .filter(|&k| {
            needles
                .values
                .get(k)
                .is_some_and(|v| envpolicy::escaped::EscapedCopies::of(v).found_in(arg))
        })
        .collect()
}

/// `value`, and its base64 copies' needles in both alphabets (docs/adr/0017,
/// "Encoded copies"): each a pattern of `owner`, added to `values` once.
fn add_needles(
    values: &mut Vec<Vec<u8>>,
    owners: &mut Vec<Vec<(String, String)>>,
    value: &[u8],
    owner: (String, String),
) {
    let needles = envpolicy::encoded::Base64Needles::of(value);
    let encoded = needles.needles().flat_map(|n| {
        let url: Vec<u8> = n.iter().map(|&b| envpolicy::encoded::url_safe(b)).collect();
        [n.to_vec(), url]
    });
    let searched = envpolicy::encoded::shortest_needle(value.len()).is_some();
    let patterns: Vec<Vec<u8>> = std::iter::once(value.to_vec())
        .chain(encoded.filter(|_| searched))
        .collect();
    for pattern in patterns {
        match values.iter().position(|v| *v == pattern) {
            Some(k) if !owners[k].contains(&owner) => owners[k].push(owner.clone()),
            Some(_) => {}
            None => {
                values.push(pattern);
                owners.push(vec![owner.clone()]);
            }
        }
    }
}

fn scan_argv(
    policy: &Policy<'_>,
    needles: &Needles,
    pid: u32,
    program: &str,
    args: &[Vec<u8>],
    out: &mut Vec<Finding>,
) {
    let shapes = ShapeSet::from_bits(policy.settings().shapes);
    for (i, arg) in args.iter().enumerate() {
        let mut seen: Vec<usize> = Vec::new();
        // An owner once per argument: its value and an encoded copy are one
        // finding.
        let mut reported: Vec<&(String, String)> = Vec::new();
        if let Some(ac) = &needles.automaton {
            let found = ac
                .find_overlapping_iter(arg)
                .map(|m| m.pattern().as_usize());
            let found: Vec<usize> = found.collect();
            let found = if found.is_empty() {
                escaped_in(needles, arg)
            } else {
                found
            };
            for k in found {
                if seen.contains(&k) {
                    continue;
                }
                seen.push(k);
                for owner @ (name, from) in &needles.owners[k] {
                    if reported.contains(&owner) {
                        continue;
                    }
                    reported.push(owner);
                    out.push(Finding {
                        pid,
                        program: program.to_string(),
                        kind: "argv.value",
                        variable: Some(name.clone()),
                        index: Some(i),
                        why: format!("holds the value of {name} (from {from})"),
                    });
                }
            }
        }
        if !seen.is_empty() {
            continue;
        }
        let mut shown: Vec<&str> = Vec::new();
        for m in find_shapes(arg, shapes) {
            let d = m.shape.describe();
            if !shown.contains(&d) {
                shown.push(d);
                out.push(Finding {
                    pid,
                    program: program.to_string(),
                    kind: "argv.shape",
                    variable: None,
                    index: Some(i),
                    why: format!("holds {}", m.shape.describe_with_article()),
                });
            }
        }
    }
}

/// A value self-scrub overwrote: not empty, and every byte `*`.
pub(crate) fn is_overwritten(value: &[u8]) -> bool {
    !value.is_empty() && value.iter().all(|&b| b == b'*')
}

fn scan_environ(
    policy: &Policy<'_>,
    files: &[Option<Vec<u8>>],
    pid: u32,
    program: &str,
    exe: &[u8],
    entries: &[Vec<u8>],
    out: &mut Vec<Finding>,
) {
    let d = outcome::decide(policy, exe, &[], entries, &[], files);
    for (i, v) in d.env_verdicts.iter().enumerate() {
        if !v.credential || v.action == Action::Grant {
            continue;
        }
        // A later copy of a name is judged through its first copy.
        if matches!(v.rule, decide::Rule::Duplicate(_)) {
            continue;
        }
        let Some((name, value)) = split_entry(&entries[i]) else {
            continue;
        };
        // Self-scrub overwrote this value with `*` in a process under the shim
        // (a tmux or screen server): a name with no value is no leak.
        if is_overwritten(value) {
            continue;
        }
        let name = value::word(name);
        let how = if v.action == Action::Refuse {
            "refuses"
        } else {
            "removes"
        };
        out.push(Finding {
            pid,
            program: program.to_string(),
            kind: "environ.refused",
            variable: Some(name.clone()),
            index: None,
            why: format!(
                "holds {name}, a credential the policy {how} ({})",
                describe_rule(policy, v.rule, entries)
            ),
        });
    }
    for (name, path) in stale_names(policy, files, exe, entries) {
        let name = value::word(name);
        out.push(Finding {
            pid,
            program: program.to_string(),
            kind: "environ.stale",
            variable: Some(name.clone()),
            index: None,
            why: format!("holds a stale {name}: its value differs from env file {path} today"),
        });
    }
}

/// The passthrough names in `entries` (kept, with their value read from an env
/// file) whose value is no longer the file's today: the drift check. Each with
/// the env file's path.
pub fn stale_names<'e>(
    policy: &Policy<'_>,
    files: &[Option<Vec<u8>>],
    exe: &[u8],
    entries: &'e [Vec<u8>],
) -> Vec<(&'e [u8], String)> {
    let mut stale = Vec::new();
    let mask = envpolicy::programs::program_mask(policy, exe);
    for k in 0..policy.count(sec::FILE_KEEPS) as u32 {
        let Some(fk) = policy.file_keep(k) else {
            continue;
        };
        let in_scope = policy
            .pattern(fk.pattern)
            .is_some_and(|p| envpolicy::programs::in_scope(p.scope, mask));
        if !in_scope {
            continue;
        }
        let name = policy.str(fk.name);
        let Some(Some(contents)) = files.get(fk.file as usize) else {
            continue;
        };
        let Some(today) = envfile::lookup(contents, name) else {
            continue;
        };
        let Some((held_name, held)) = entries
            .iter()
            .filter_map(|e| split_entry(e))
            .find(|(n, _)| *n == name)
        else {
            continue;
        };
        if !today.value_eq(held) {
            let path = policy
                .env_file(fk.file)
                .map(|r| String::from_utf8_lossy(policy.str(r.path)).into_owned())
                .unwrap_or_default();
            stale.push((held_name, path));
        }
    }
    stale
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Base64 (standard alphabet, padded) as coreutils' `base64` writes it: a
    /// real encoder, apart from the core's needle builder.
    fn base64(src: &[u8]) -> String {
        use std::io::Write;
        let mut child = std::process::Command::new("base64")
            .arg("-w0")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("coreutils' base64 runs");
        child
            .stdin
            .take()
            .expect("a pipe")
            .write_all(src)
            .expect("base64 reads");
        let out = child.wait_with_output().expect("base64 ends");
        assert!(out.status.success(), "base64 failed");
        String::from_utf8(out.stdout).expect("base64 writes ASCII")
    }

    #[test]
    fn an_argument_holding_a_base64_copy_of_a_credential_is_found_once() {
        let compiled = envpolicy::load::builtin_default();
        let policy = compiled.policy();
        let token = format!("opaque-{}", "k3Y".repeat(8));
        let own = vec![format!("JIRA_API_TOKEN={token}").into_bytes()];
        let none = crate::scan_secrets::SecretNeedles::read(&policy, &[]);
        let needles = needles(&policy, &own, &[], &none);
        for user in ["", "u", "us", "user"] {
            let header = format!(
                "Authorization: Basic {}",
                base64(format!("{user}:{token}").as_bytes())
            );
            let args = vec![b"curl".to_vec(), b"-H".to_vec(), header.into_bytes()];
            let mut found = Vec::new();
            scan_argv(&policy, &needles, 1, "curl", &args, &mut found);
            let kinds: Vec<_> = found
                .iter()
                .map(|f| (f.kind, f.variable.as_deref(), f.index))
                .collect();
            assert_eq!(
                kinds,
                [("argv.value", Some("JIRA_API_TOKEN"), Some(2))],
                "user of {} bytes",
                user.len()
            );
        }
    }
}
