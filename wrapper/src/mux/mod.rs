//! `envwrap mux-env` (also `tmux-env`): what terminal multiplexers' servers
//! hold that the policy would not pass to a process they start, and, with
//! `--fix`, removing it from them.
//!
//! Why: a tmux server, or a GNU screen session, builds every pane's or window's
//! environment, and that of every process it runs for a command, from its own
//! environments. A server started without envshim by a shell that held
//! credentials hands them to every new pane, whatever the client that asks for
//! the pane runs under (docs/adr/0014-tmux-servers.md).
//!
//! What a multiplexer is (its programs, how its client reads, which server it
//! talks to) is [`envpolicy::mux`]'s table; how a running server's environments
//! are read and cleared is one implementation of [`Servers`] per multiplexer
//! here ([`tmux`], [`screen`]), listed in [`IMPLEMENTATIONS`]. Everything else
//! (options, judging, reporting, the check before a client, scan's findings) is
//! written once, in this module and [`report`].
//!
//! Per server: its environments are judged as the environment of a process it
//! starts: a name the policy strips or refuses is a finding, and so is a
//! passthrough name whose value differs from its env file's today (stale);
//! `--fix` removes the names, and says what it removed. Stale values are
//! reported, not changed. A server governed by its own shim (one that enforces
//! the very policy this run holds: [`envpolicy::mux::governed`], read by
//! [`server_shim`]) already filters every exec it makes: it is left alone, and
//! is no finding. A server under a shim in audit mode, or on another policy, is
//! read and cleaned like one without a shim, and said to be.
//!
//! libenvshim.so runs `envwrap mux-env --fix --skip-policed --quiet --mux NAME
//! --server SERVER` in a client whose command may start a process in its
//! server, and `envwrap -- tmux ...` does the same ([`fix_before_client`]) when
//! it does not preload the shim into the client. Messages name servers,
//! sessions, panes and variables, never a value.

mod report;
pub mod screen;
pub mod tmux;

use crate::exit::{self, Failure, FINDINGS};
use crate::opts::{tool_args, Spec};
use crate::scan::stale_names;
use crate::tools::ToolDoc;
use crate::{help, source, value};
use envpolicy::bytes::split_entry;
use envpolicy::compiled::Policy;
use envpolicy::decide::{Action, Rule};
use envpolicy::load::Source;
use envpolicy::mux::{Governed, Multiplexer, ServerShim};
use envpolicy::outcome::{self, describe_rule};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// How one multiplexer's running servers are found, read and cleared.
pub(crate) trait Servers: Sync {
    /// Its row of [`envpolicy::mux::MULTIPLEXERS`].
    fn row(&self) -> &'static Multiplexer;
    /// The servers `named` names, as this multiplexer names them (empty: every
    /// one of this user's), by the id [`Servers::examine`] takes. One that is
    /// named but not running is said so unless `quiet`.
    /// Ids are bytes, as the system gives them: a socket's path need not be
    /// UTF-8, and one read lossily would name another file.
    fn find(&self, program: &Path, named: &[OsString], quiet: bool) -> Vec<OsString>;
    /// Read the server `id`: what a process it starts would get, and whether it
    /// runs the shim; with `o.fix`, remove what [`removable`] allows.
    fn examine(&self, judge: &Judge<'_>, program: &Path, id: &OsStr, o: &Options) -> Server;
    /// The kinds of scan's findings for a held and a stale name.
    fn finding_kinds(&self) -> (&'static str, &'static str);
    /// What a message calls [`Place::Global`] in its server.
    fn global_text(&self) -> &'static str;
    /// What a message says gets [`Place::ServerProcess`], the server's own
    /// process environment, which no client can change ("pipe-pane commands").
    fn server_process_users(&self) -> &'static str;
}

/// Every multiplexer envwrap can read, one implementation each.
pub(crate) static IMPLEMENTATIONS: &[&dyn Servers] = &[&tmux::Tmux, &screen::Screen];

/// The implementation for `row`.
fn implementation(row: &Multiplexer) -> Option<&'static dyn Servers> {
    IMPLEMENTATIONS
        .iter()
        .copied()
        .find(|i| std::ptr::eq(i.row(), row))
}

#[derive(Clone, Copy)]
pub(crate) enum Opt {
    Policy,
    Mux,
    Server,
    Program,
    Label,
    Path,
    Fix,
    SkipPoliced,
    WarnServerEnviron,
    Quiet,
    Tmux,
    Screen,
    ScreenProgram,
    Json,
    Help,
}

pub(crate) const SPECS: &[Spec<Opt>] = &[
    Spec::with_value(Opt::Mux, "mux", "NAME")
        .doc("read NAME's servers only: tmux or screen (repeatable)")
        .doc_long(
            r"Read only the servers of multiplexer
            .IR NAME :
            .B tmux
            or
            .BR screen .
            Repeatable.",
        ),
    Spec::with_value(Opt::Server, "server", "SERVER")
        .doc(
            "of the --mux before it, only this server: a tmux socket's path; a screen session \
             (PID.NAME, PID, NAME or a prefix of NAME, as screen -S matches; empty: every \
             session of this user)",
        )
        .doc_long(
            r#"Of the
            .B \-\-mux
            before it, only this server: a tmux socket's path, or a screen session (PID.NAME,
            PID, NAME or a prefix of NAME, as
            .B "screen \-S"
            matches; empty: every session of this user)."#,
        ),
    Spec::with_value(Opt::Program, "program", "PROGRAM")
        .doc("the client of the --mux before it to run (default: its name, from PATH)")
        .doc_long(
            r"The client of the
            .B \-\-mux
            before it to run (default: its name, from
            .BR PATH ).",
        ),
    Spec::with_value(Opt::Label, "socket-name", "NAME")
        .short(b'L')
        .doc("the tmux server of 'tmux -L NAME'")
        .doc_long(
            r#"The tmux server of
            .BI "tmux \-L " NAME\fR."#,
        ),
    Spec::with_value(Opt::Path, "socket-path", "PATH")
        .short(b'S')
        .doc("the tmux server listening on PATH")
        .doc_long(
            r"The tmux server listening on
            .IR PATH .",
        ),
    Spec::flag(Opt::Fix, "fix")
        .doc(
            "remove the variables it reports from the servers (tmux: set-environment -u, \
             globally and per session; screen: -X unsetenv), and say what it removed (panes \
             and stale values are reported only)",
        )
        .doc_long(
            r#"Remove the variables it reports from the servers (tmux:
            .BR "set\-environment \-u" ,
            globally and per session; screen:
            .BR "\-X unsetenv" ),
            and say on standard error what was removed.
            Panes, the server's own environment and stale values are reported only."#,
        ),
    Spec::flag(Opt::SkipPoliced, "skip-policed").doc(
        "leave alone a server whose libenvshim.so enforces this very policy (what is always \
         done: such a server is no finding)",
    ),
    Spec::flag(Opt::WarnServerEnviron, "warn-server-environ")
        .doc(
            "with --quiet, still warn about the server's own environment (for a client that \
             runs pipe-pane)",
        )
        .doc_long(
            r"With
            .BR \-\-quiet ,
            still warn about the server's own environment (for a client that runs
            .BR pipe\-pane ).",
        ),
    Spec::flag(Opt::Quiet, "quiet")
        .short(b'q')
        .doc("print only what --fix removed, and errors")
        .doc_long(
            r"Print only what
            .B \-\-fix
            removed, and errors.",
        ),
    Spec::with_value(Opt::Tmux, "tmux", "PROGRAM")
        .doc("the same as --mux tmux --program PROGRAM")
        .doc_long(
            r#"The same as
            .BI "\-\-mux tmux \-\-program " PROGRAM\fR."#,
        ),
    Spec::with_value(Opt::Screen, "screen", "SESSION")
        .doc("the same as --mux screen --server SESSION")
        .doc_long(
            r#"The same as
            .BI "\-\-mux screen \-\-server " SESSION\fR."#,
        ),
    Spec::with_value(Opt::ScreenProgram, "screen-program", "PROGRAM")
        .doc("the same as --mux screen --program PROGRAM")
        .doc_long(
            r#"The same as
            .BI "\-\-mux screen \-\-program " PROGRAM\fR."#,
        ),
    Spec::policy(Opt::Policy),
    Spec::flag(Opt::Json, "json").doc("print one JSON object"),
    Spec::help(Opt::Help),
];

/// What the docs say of mux-env (and tmux-env).
pub(crate) const DOC: ToolDoc = ToolDoc {
    usage: &[
        "[--fix] [--mux NAME [--server SERVER]... | -L NAME | -S PATH]...",
        "[--policy FILE] [--json]",
    ],
    operands: "",
    summary: "find what tmux servers and screen sessions hold that the policy would not pass \
              to a new pane or window, and remove it with --fix (also 'tmux-env')",
    about: "\
A terminal multiplexer's server (tmux, GNU screen) gives every pane or window it
opens, and every command it runs (tmux's run-shell, if-shell, pipe-pane), its
own environment, not the client's. This reads the servers of every multiplexer
it knows (tmux: every socket in ${TMUX_TMPDIR:-/tmp}/tmux-UID/; screen: every
session screen -ls lists), or the ones the options name, and reports:
  - each variable there that the policy strips or refuses (a server started
    without envshim by a shell that held credentials holds them all);
  - each passthrough variable whose value differs from its env file's today;
  - tmux: each pane whose process holds such a variable (only a restart of the
    pane removes it), and each such variable in the server's own process
    environment, which tmux gives to pipe-pane commands and no client can
    change (only a restart of the server removes it);
  - screen: the server's environment as setenv and unsetenv left it (where the
    server keeps it, not only /proc/PID/environ).
A server whose libenvshim.so enforces this very policy filters every process
it starts; it is said so, and left alone. One under a shim in audit mode, or on
another policy, is read and cleaned like one without a shim, and said to be.
Each finding names the server, the session or pane, and the variable,
never the value. libenvshim.so and envwrap run 'envwrap mux-env --fix
--skip-policed --quiet' themselves before a client's command that may start a
process in a running server.
",
    after: "\
Exit status: 0 when nothing is left to report; 1 when something is (a server
that did not answer included); 125 for a bad option or policy.
",
    man: r#"Also
        .BR "envwrap tmux\-env" ,
        the same tool.
        A terminal multiplexer's server (tmux, GNU screen) gives every pane or window it
        opens, and every command it runs
        .RB ( run\-shell ", " if\-shell ", " display\-popup ),
        its own environment, not the environment of the client that asked.
        A server started without envshim by a shell that held credentials gives them to every
        new pane.
        This reads every server of every multiplexer it knows (tmux: the sockets of the
        user's tmux directory; screen: the sessions
        .B "screen \-ls"
        lists), or the ones the options name, and reports each variable in what a new
        pane or window would get that the policy strips or refuses, and each stale
        passthrough value.
        For tmux, that is its global and each session's environment; it also reports each
        pane whose process holds such a variable (only a restart of the pane removes it),
        and each such variable in the server's own process environment, which tmux gives to
        .B pipe\-pane
        commands and no client can change (only a restart of the server removes it).
        For screen, it is the server's own process environment, as
        .B setenv
        and
        .B unsetenv
        left it, read where the server keeps it (not only
        .IR /proc/PID/environ ).
        A server whose
        .B libenvshim.so
        enforces this very policy filters every process it starts; it is said so, and left
        alone.
        One under a shim in audit mode, or on another policy, is read and cleaned like one
        without a shim, and said to be.
        Each finding names the server, the session or pane, and the variable, never the value.
        .PP
        libenvshim.so in a multiplexer's client whose command may start a process in a
        running server, and
        .B "envwrap \-\- tmux"
        or
        .B "envwrap \-\- screen"
        when it does not preload the shim into the client, run
        .B "envwrap mux\-env \-\-fix \-\-skip\-policed \-\-quiet \-\-mux NAME \-\-server SERVER"
        for that server before the command."#,
    man_after: r".PP
        Exit status: 0 when nothing is left to report; 1 when something is (a server that did
        not answer included); 125 for a bad option or policy.",
};

const HINT: &str = "envwrap mux-env --help";

/// One multiplexer the options chose, with the servers they named (empty:
/// every one of the user's) and the client to talk to them with.
pub(crate) struct Chosen {
    servers: &'static dyn Servers,
    named: Vec<OsString>,
    program: Option<PathBuf>,
}

/// What the options asked for.
#[derive(Default)]
pub(crate) struct Options {
    policy: Option<PathBuf>,
    /// The multiplexers chosen, in order (empty: every one, every server).
    chosen: Vec<Chosen>,
    fix: bool,
    warn_server_environ: bool,
    quiet: bool,
    json: bool,
    help: bool,
}

impl Options {
    /// The entry for `row`, made when the options first name it.
    fn choose(&mut self, row: &'static Multiplexer) -> Result<&mut Chosen, Failure> {
        let Some(servers) = implementation(row) else {
            return Err(Failure::usage(
                "this envwrap cannot read that multiplexer",
                HINT,
            ));
        };
        let at = match self
            .chosen
            .iter()
            .position(|c| std::ptr::eq(c.servers.row(), row))
        {
            Some(at) => at,
            None => {
                self.chosen.push(Chosen {
                    servers,
                    named: Vec::new(),
                    program: None,
                });
                self.chosen.len() - 1
            }
        };
        Ok(&mut self.chosen[at])
    }

    /// The last multiplexer `--mux` (or an option of one) chose.
    fn last(&mut self, option: &str) -> Result<&mut Chosen, Failure> {
        self.chosen
            .last_mut()
            .ok_or_else(|| Failure::usage(format!("{option} needs a --mux before it"), HINT))
    }
}

/// Where a held name was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// What every process the server starts gets: tmux's global environment, a
    /// screen server's own.
    Global,
    /// A session, by id (`$3`) and name.
    Session { id: String, name: String },
    /// A pane's process, by pane id (`%5`) and PID.
    Pane { id: String, pid: u32 },
    /// The server's own process environment, which only some commands get
    /// (tmux's `pipe-pane`), and no client can change.
    ServerProcess { pid: u32 },
}

/// One name a server or a pane holds that the policy would not pass on.
pub(crate) struct Held {
    place: Place,
    name: Vec<u8>,
    /// `refused`, `stripped` or `stale`.
    kind: &'static str,
    why: String,
}

/// One server, as far as it answered.
pub(crate) struct Server {
    servers: &'static dyn Servers,
    /// Its id: a socket's path, a session's `PID.NAME`.
    id: OsString,
    pid: Option<u32>,
    /// Whether the server maps libenvshim.so, and which.
    shim: Option<Mapped>,
    /// Whether that shim governs it ([`server_shim`]): then it filters every
    /// exec the server makes, and nothing else is read.
    governed: Governed,
    held: Vec<Held>,
    /// Names removed by `--fix`, with where from.
    removed: Vec<(Place, Vec<u8>)>,
    /// Why the server could not be read, when it could not.
    unreadable: Option<String>,
}

impl Server {
    fn new(servers: &'static dyn Servers, id: &OsStr) -> Server {
        Server {
            servers,
            id: id.to_os_string(),
            pid: None,
            shim: None,
            governed: Governed::NoShim,
            held: Vec::new(),
            removed: Vec::new(),
            unreadable: None,
        }
    }

    /// What every line about it starts with: "tmux server /tmp/tmux-0/x (pid 9)".
    fn head(&self) -> String {
        let id = value::word(self.id.as_bytes());
        let row = self.servers.row();
        let (name, noun) = (row.name, row.server);
        match self.pid {
            Some(pid) => format!("{name} {noun} {id} (pid {pid})"),
            None => format!("{name} {noun} {id}"),
        }
    }
}

/// The policy and env files a server's environments are judged by, and where
/// that policy came from (a server's shim governs it only on the same one).
pub(crate) struct Judge<'p> {
    policy: &'p Policy<'p>,
    files: &'p [Option<Vec<u8>>],
    source: &'p Source,
}

pub fn main(args: Vec<OsString>) -> ExitCode {
    let mut json_out = false;
    let r = mux_tool(args, &mut json_out);
    exit::finish_as(r, json_out)
}

fn read_options(args: Vec<OsString>, json_out: &mut bool) -> Result<Options, Failure> {
    let mut o = Options::default();
    let tmux = &envpolicy::mux::tmux::MULTIPLEXER;
    let screen = &envpolicy::mux::screen::MULTIPLEXER;
    let a = tool_args(args, SPECS, HINT, |id, v| {
        let v = v.unwrap_or_default();
        match id {
            Opt::Policy => o.policy = Some(PathBuf::from(&v)),
            Opt::Mux => {
                let row = envpolicy::mux::by_name(v.as_bytes()).ok_or_else(|| {
                    let names: Vec<&str> = IMPLEMENTATIONS.iter().map(|i| i.row().name).collect();
                    Failure::usage(format!("--mux takes one of: {}", names.join(", ")), HINT)
                })?;
                o.choose(row)?;
            }
            Opt::Server => o.last("--server")?.named.push(v.clone()),
            Opt::Program => o.last("--program")?.program = Some(PathBuf::from(&v)),
            Opt::Label => {
                let socket = tmux::label_socket(v.as_bytes());
                o.choose(tmux)?.named.push(socket.into_os_string());
            }
            Opt::Path => o.choose(tmux)?.named.push(v.clone()),
            Opt::Fix => o.fix = true,
            // What is always done now; kept for the shims that pass it.
            Opt::SkipPoliced => {}
            Opt::WarnServerEnviron => o.warn_server_environ = true,
            Opt::Quiet => o.quiet = true,
            Opt::Tmux => o.choose(tmux)?.program = Some(PathBuf::from(&v)),
            Opt::Screen => o.choose(screen)?.named.push(v.clone()),
            Opt::ScreenProgram => o.choose(screen)?.program = Some(PathBuf::from(&v)),
            Opt::Json => {
                o.json = true;
                *json_out = true;
            }
            Opt::Help => o.help = true,
        }
        Ok(())
    })?;
    if !a.operands.is_empty() || a.after.is_some_and(|x| !x.is_empty()) {
        return Err(Failure::usage("mux-env takes no operands", HINT));
    }
    Ok(o)
}

fn mux_tool(args: Vec<OsString>, json_out: &mut bool) -> Result<u8, Failure> {
    let o = read_options(args, json_out)?;
    if o.help {
        show!("{}", help::for_tool("mux-env"));
        return Ok(0);
    }
    let loaded = source::load(o.policy.as_deref(), source::own_getenv)?;
    Ok(check_servers(&o, &loaded))
}

/// Read (and with `--fix`, fix) the servers the options name, under `loaded`;
/// print what was found; the exit status.
fn check_servers(o: &Options, loaded: &source::Loaded) -> u8 {
    let policy = loaded.compiled.policy();
    let files = outcome::read_env_files(&policy);
    let judge = Judge {
        policy: &policy,
        files: &files,
        source: &loaded.source,
    };
    let every;
    let chosen = if o.chosen.is_empty() {
        every = IMPLEMENTATIONS
            .iter()
            .map(|&servers| Chosen {
                servers,
                named: Vec::new(),
                program: None,
            })
            .collect::<Vec<_>>();
        &every
    } else {
        &o.chosen
    };
    let mut servers = Vec::new();
    for c in chosen {
        let program = c
            .program
            .clone()
            .unwrap_or_else(|| c.servers.row().name.into());
        for id in c.servers.find(&program, &c.named, o.quiet) {
            servers.push(c.servers.examine(&judge, &program, &id, o));
        }
    }
    if o.json {
        showln!("{}", report::json(&servers, &loaded.name()));
    } else {
        report::print(&servers, o, chosen, &loaded.label());
    }
    let remaining = servers
        .iter()
        .any(|s| s.unreadable.is_some() || s.held.iter().any(|h| !o.fix || !removable(h)));
    if remaining && !o.quiet {
        FINDINGS
    } else {
        0
    }
}

impl Held {
    /// What a held name in an environment of the server is, in the words of
    /// both the tool's report and scan's: "holds a stale NAME: ..." or "holds
    /// NAME, which the policy strips (...)".
    fn what(&self) -> String {
        let name = value::word(&self.name);
        if self.kind == "stale" {
            format!("holds a stale {name}: {}", self.why)
        } else {
            let verb = if self.kind == "refused" {
                "refuses"
            } else {
                "strips"
            };
            format!("holds {name}, which the policy {verb} ({})", self.why)
        }
    }
}

/// `entries` but those whose value self-scrub overwrote (a shim that does not
/// govern the server may still have scrubbed it): a name with no value is no
/// leak, as scan counts it.
fn not_overwritten(mut entries: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    entries.retain(|e| split_entry(e).is_none_or(|(_, v)| !crate::scan::is_overwritten(v)));
    entries
}

/// A finding `--fix` removes: a name an environment of the server holds.
fn removable(h: &Held) -> bool {
    h.kind != "stale" && matches!(h.place, Place::Global | Place::Session { .. })
}

/// Judge `entries` as the environment of a process the server starts: every
/// name the policy strips or refuses, and every stale passthrough value, is
/// added to `held`, found at `place`.
fn judge_into(judge: &Judge<'_>, place: Place, entries: &[Vec<u8>], held: &mut Vec<Held>) {
    let (policy, files) = (judge.policy, judge.files);
    let d = outcome::decide(policy, b"", &[], entries, &[], files);
    let mut add = |name: &[u8], why: String, kind| {
        held.push(Held {
            place: place.clone(),
            name: name.to_vec(),
            kind,
            why,
        })
    };
    for (entry, v) in entries.iter().zip(&d.env_verdicts) {
        let kind = match v.action {
            Action::Refuse => "refused",
            // A later copy of a name is judged by its first; the shim's own
            // variables (`ENVSHIM_HINT`, ...) are the shim's to set afresh at
            // every exec, and hold nothing a pane should not have.
            Action::Strip if !matches!(v.rule, Rule::Duplicate(_) | Rule::Sticky) => "stripped",
            _ => continue,
        };
        let Some((name, _)) = split_entry(entry) else {
            continue;
        };
        add(name, describe_rule(policy, v.rule, entries), kind);
    }
    for (name, path) in stale_names(policy, files, b"", entries) {
        add(
            name,
            format!("its value differs from env file {path} today"),
            "stale",
        );
    }
}

/// Whether process `pid` maps libenvshim.so, and if so whether the file it maps
/// was replaced since (`(deleted)` in its maps: a reinstall or an upgrade). A
/// replaced shim is still the one in the process, and still filters its execs.
pub(crate) fn shim_mapped(pid: u32) -> Option<Mapped> {
    let maps = crate::procfs::read(pid, "maps").ok()?;
    let name = crate::preload::SHIM_NAME.as_bytes();
    let mut found = None;
    for line in maps.split(|&b| b == b'\n') {
        if line.ends_with(name) {
            return Some(Mapped::Current);
        }
        if line
            .strip_suffix(b" (deleted)")
            .is_some_and(|l| l.ends_with(name))
        {
            found = Some(Mapped::Replaced);
        }
    }
    found
}

/// What server `pid`'s shim is, as far as this client can prove it, and
/// whether it governs the server ([`envpolicy::mux::governed`], the one rule):
/// a server that maps libenvshim.so runs the client's very policy when the
/// lookup its own environment gives (`/proc/PID/environ`: `ENVSHIM_POLICY`,
/// else `XDG_CONFIG_HOME`, `HOME`, the system file, as its shim looked it up
/// at start) names the same file as the client's, or the built-in default for
/// both; its mode is then that file's `mode` as compiled now, which both
/// shims follow at every exec.
pub(crate) fn server_shim(judge: &Judge<'_>, pid: u32) -> (Option<Mapped>, Governed) {
    let mapped = shim_mapped(pid);
    let shim = match mapped {
        None => ServerShim::None,
        Some(_) if same_policy(judge.source, pid) => {
            ServerShim::SamePolicy(judge.policy.settings().mode)
        }
        Some(_) => ServerShim::OtherPolicy,
    };
    (mapped, envpolicy::mux::governed(shim))
}

/// Whether process `pid`'s shim found the policy `client` names: the same file
/// (compared as canonical paths; a relative `ENVSHIM_POLICY` from the process's
/// working directory), or the built-in default for both. An environment that
/// cannot be read proves nothing.
fn same_policy(client: &Source, pid: u32) -> bool {
    let Ok(raw) = crate::procfs::read(pid, "environ") else {
        return false;
    };
    let entries = crate::procfs::split_nul(&raw);
    let getenv = |name: &str| {
        crate::environ::get(&entries, name.as_bytes()).map(|v| OsString::from_vec(v.to_vec()))
    };
    let server = envpolicy::load::locate(None, getenv);
    match (client.path(), server.path()) {
        (None, None) => true,
        (Some(mine), Some(theirs)) => {
            let theirs = if theirs.is_relative() {
                Path::new(&format!("/proc/{pid}/cwd")).join(theirs)
            } else {
                theirs.to_path_buf()
            };
            match (mine.canonicalize(), theirs.canonicalize()) {
                (Ok(a), Ok(b)) => a == b,
                _ => false,
            }
        }
        _ => false,
    }
}

/// What [`shim_mapped`] found.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mapped {
    /// The shim file that is on disk now.
    Current,
    /// One that was replaced on disk since the process started.
    Replaced,
}

/// Who a line on stderr is from: "envshim" when libenvshim.so ran this check in a
/// client (the user ran tmux under the shim, not envwrap), else "envwrap".
pub(crate) fn who() -> &'static str {
    if std::env::var_os(SHIM_CHECK).is_some() {
        "envshim"
    } else {
        "envwrap"
    }
}

/// Set by libenvshim.so in the environment of the check it runs.
pub const SHIM_CHECK: &str = envpolicy::shared::TMUX_CHECK;

/// For `envwrap scan`: what the servers of every multiplexer hold in the
/// environments they give new processes, as scan findings; for tmux only the
/// servers on `tmux_sockets` when given. Panes and the servers' own process
/// environments are processes, which scan reads anyway.
pub fn scan_findings(
    policy: &Policy<'_>,
    files: &[Option<Vec<u8>>],
    source: &Source,
    tmux_sockets: Option<Vec<PathBuf>>,
) -> Vec<crate::scan::Finding> {
    let o = Options {
        quiet: true,
        ..Options::default()
    };
    let judge = Judge {
        policy,
        files,
        source,
    };
    let mut out = Vec::new();
    for &servers in IMPLEMENTATIONS {
        let row = servers.row();
        let is_tmux = std::ptr::eq(row, &envpolicy::mux::tmux::MULTIPLEXER);
        let named: Vec<OsString> = match (&tmux_sockets, is_tmux) {
            (Some(sockets), true) => sockets.iter().map(|s| s.clone().into_os_string()).collect(),
            (Some(_), false) => continue,
            (None, _) => Vec::new(),
        };
        let program = PathBuf::from(row.name);
        let (held_kind, stale_kind) = servers.finding_kinds();
        for id in servers.find(&program, &named, true) {
            let s = servers.examine(&judge, &program, &id, &o);
            let shown = value::word(s.id.as_bytes());
            if let Some(why) = &s.unreadable {
                say!("envwrap: scan: {}: not read: {why}", s.head());
            }
            for h in s.held.iter().filter(|h| removable(h) || h.kind == "stale") {
                let stale = h.kind == "stale";
                out.push(crate::scan::Finding {
                    pid: s.pid.unwrap_or(0),
                    program: format!("{} {}", row.name, row.server),
                    kind: if stale { stale_kind } else { held_kind },
                    variable: Some(value::word(&h.name)),
                    index: None,
                    why: format!(
                        "{} {} {shown}: {} {}; envwrap mux-env --fix --mux {} --server {shown} removes it from the {}",
                        row.name,
                        row.server,
                        report::place_text(&s, &h.place),
                        h.what(),
                        row.name,
                        row.server,
                    ),
                });
            }
        }
    }
    out
}

/// For `envwrap -- CLIENT ...` without the shim in the client: when `program`
/// is a multiplexer's client whose command may start a process in its server,
/// fix that server before it runs, under the policy the run loaded, as the
/// shim's check does. `env` is the client's environment. What it finds is
/// reported, never fatal: the client runs, as it would have.
pub fn fix_before_client(
    loaded: &source::Loaded,
    program: &Path,
    argv: &[Vec<u8>],
    env: &[Vec<u8>],
) {
    let Some(row) = envpolicy::mux::by_program(program.as_os_str().as_bytes()) else {
        return;
    };
    let Some(servers) = implementation(row) else {
        return;
    };
    let args: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
    let request = row.read(&args, |n| crate::environ::get(env, n));
    if !request.reaches_server {
        return;
    }
    let server = match request.server {
        envpolicy::mux::Server::Socket(socket) => {
            let path = tmux::socket_path(&socket);
            if !path.exists() {
                return;
            }
            path.into_os_string()
        }
        envpolicy::mux::Server::Session(name) => {
            OsString::from_vec(name.unwrap_or_default().to_vec())
        }
    };
    // What the shim's check runs: `--fix --skip-policed --quiet --mux NAME
    // --server SERVER --program PROGRAM [--warn-server-environ]`.
    let o = Options {
        chosen: vec![Chosen {
            servers,
            named: vec![server],
            program: Some(program.to_path_buf()),
        }],
        fix: true,
        warn_server_environ: request.server_process_env,
        quiet: true,
        ..Options::default()
    };
    check_servers(&o, loaded);
}
