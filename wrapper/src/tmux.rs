//! `envwrap tmux-env`: what tmux servers hold that the policy would not pass to a
//! pane, and, with `--fix`, removing it from them.
//!
//! Why: a tmux server builds every pane's environment, and that of every process
//! it runs for a command (`run-shell`, `if-shell`, `pipe-pane`), from its global
//! environment and the session's. A server started without envshim by a shell
//! that held credentials hands them to every new pane, whatever the client that
//! asks for the pane runs under (docs/adr/0014-tmux-servers.md).
//!
//! Per server (every socket of the user's tmux directory, or the one `-L` or `-S`
//! names):
//! - its global environment and each session's are judged as the environment of
//!   a pane: a name the policy strips or refuses is a finding, and so is a
//!   passthrough name whose value differs from its env file's today (stale);
//! - each pane's process environment (`/proc/PID/environ`): a pane that holds such
//!   a name needs a restart, since no change to the server reaches a running
//!   process;
//! - `--fix` removes the names with `set-environment -u`, globally and per
//!   session, and says what it removed. Stale values are reported, not changed.
//!
//! A server whose process maps libenvshim.so already filters every exec it makes:
//! it is left alone, and is no finding (`--skip-policed` says so; it is what is
//! always done). libenvshim.so runs
//! `envwrap tmux-env --fix --skip-policed --quiet -S SOCKET` in a tmux client whose
//! command may start a process in its server (`envpolicy::tmux`), and `envwrap --
//! tmux ...` does the same when it does not preload the shim into tmux.
//!
//! The tmux clients this runs get an empty environment and `-S SOCKET`. A server
//! that does not answer within [`ANSWER_LIMIT`] is reported and skipped. Messages
//! name sockets, sessions, panes and variables, never a value.

use crate::exit::{self, Failure, FINDINGS};
use crate::opts::{tool_args, Spec};
use crate::scan::stale_names;
use crate::{help, procfs, source, value};
use envpolicy::compiled::Policy;
use envpolicy::decide::{split_entry, Action, Rule};
use envpolicy::outcome::{self, describe_rule};
use envpolicy::tmux::Socket;
use serde_json::json;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

#[derive(Clone, Copy)]
pub(crate) enum Opt {
    Policy,
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
    Spec::with_value(Opt::Policy, "policy"),
    Spec::with_value(Opt::Label, "socket-name").short(b'L'),
    Spec::with_value(Opt::Path, "socket-path").short(b'S'),
    Spec::flag(Opt::Fix, "fix"),
    Spec::flag(Opt::SkipPoliced, "skip-policed"),
    Spec::flag(Opt::WarnServerEnviron, "warn-server-environ"),
    Spec::flag(Opt::Quiet, "quiet").short(b'q'),
    Spec::with_value(Opt::Tmux, "tmux"),
    Spec::with_value(Opt::Screen, "screen"),
    Spec::with_value(Opt::ScreenProgram, "screen-program"),
    Spec::flag(Opt::Json, "json"),
    Spec::help(Opt::Help),
];

const HINT: &str = "envwrap tmux-env --help";

/// How long one tmux client may take to answer.
pub const ANSWER_LIMIT: Duration = Duration::from_secs(5);

/// What the options asked for.
#[derive(Default)]
struct Options {
    policy: Option<PathBuf>,
    /// The sockets `-L` and `-S` named, in order (empty: every one of the user's).
    named: Vec<PathBuf>,
    fix: bool,
    warn_server_environ: bool,
    quiet: bool,
    tmux: Option<PathBuf>,
    /// The screen sessions `--screen` named ("": every one of the user's).
    screens: Vec<String>,
    screen: Option<PathBuf>,
    json: bool,
    help: bool,
}

/// Where a held name was found.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Place {
    Global,
    /// A session, by id (`$3`) and name.
    Session {
        id: String,
        name: String,
    },
    /// A pane's process, by pane id (`%5`) and PID.
    Pane {
        id: String,
        pid: u32,
    },
    /// The server's own process environment, which `pipe-pane` commands get.
    ServerProcess {
        pid: u32,
    },
}

impl Place {
    fn text(&self) -> String {
        match self {
            Place::Global => "the global environment".to_string(),
            Place::Session { name, .. } => format!("session {}", value::word(name.as_bytes())),
            Place::Pane { id, pid } => format!("pane {id} (pid {pid}, {})", procfs::comm(*pid)),
            Place::ServerProcess { .. } => "the server's own environment".to_string(),
        }
    }
}

/// One name a server or a pane holds that the policy would not pass to a pane.
struct Held {
    place: Place,
    name: Vec<u8>,
    /// `refused`, `stripped` or `stale`.
    kind: &'static str,
    why: String,
}

/// One tmux server, as far as it answered.
struct Server {
    socket: PathBuf,
    pid: Option<u32>,
    /// Whether the server maps libenvshim.so (then its shim filters every exec
    /// it makes, and nothing else is read), and which.
    shim: Option<Mapped>,
    held: Vec<Held>,
    /// Names removed by `--fix`, with where from.
    removed: Vec<(Place, Vec<u8>)>,
    /// Why the server could not be read, when it could not.
    unreadable: Option<String>,
}

pub fn main(args: Vec<OsString>) -> ExitCode {
    let mut json_out = false;
    let r = tmux_tool(args, &mut json_out);
    exit::finish_as(r, json_out)
}

fn read_options(args: Vec<OsString>, json_out: &mut bool) -> Result<Options, Failure> {
    let mut o = Options::default();
    let a = tool_args(args, SPECS, HINT, |id, v| {
        let v = v.unwrap_or_default();
        match id {
            Opt::Policy => o.policy = Some(PathBuf::from(v)),
            Opt::Label => o.named.push(label_socket(v.as_bytes())),
            Opt::Path => o.named.push(PathBuf::from(v)),
            Opt::Fix => o.fix = true,
            // What is always done now; kept for the shims that pass it.
            Opt::SkipPoliced => {}
            Opt::WarnServerEnviron => o.warn_server_environ = true,
            Opt::Quiet => o.quiet = true,
            Opt::Tmux => o.tmux = Some(PathBuf::from(v)),
            Opt::Screen => o.screens.push(v.to_string_lossy().into_owned()),
            Opt::ScreenProgram => o.screen = Some(PathBuf::from(v)),
            Opt::Json => {
                o.json = true;
                *json_out = true;
            }
            Opt::Help => o.help = true,
        }
        Ok(())
    })?;
    if !a.operands.is_empty() || a.after.is_some_and(|x| !x.is_empty()) {
        return Err(Failure::usage("tmux takes no operands", HINT));
    }
    Ok(o)
}

fn tmux_tool(args: Vec<OsString>, json_out: &mut bool) -> Result<u8, Failure> {
    let o = read_options(args, json_out)?;
    if o.help {
        show!("{}", help::TMUX);
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
    let tmux = o.tmux.clone().unwrap_or_else(|| PathBuf::from("tmux"));
    let (sockets, wanted_sessions) = targets(o);
    let sessions = screen_sessions(o, &wanted_sessions, &policy, &files);
    let mut servers = Vec::new();
    for socket in sockets {
        if !listens(&socket) {
            if !o.named.is_empty() && !o.quiet {
                let shown = value::word(socket.as_os_str().as_bytes());
                showln!("no tmux server listens on {shown}");
            }
            continue;
        }
        servers.push(examine(&policy, &files, &tmux, &socket, o));
    }
    if o.json {
        showln!("{}", servers_json(&servers, &sessions, &loaded.name()));
    } else {
        if !servers.is_empty() || sessions.is_empty() {
            print_servers(&servers, o, &loaded.label());
        }
        crate::screen::print(&sessions, who(), o.quiet, o.fix, &loaded.label());
    }
    let remaining = servers
        .iter()
        .any(|s| s.unreadable.is_some() || s.held.iter().any(|h| !o.fix || !removable(h)))
        || sessions
            .iter()
            .any(|s| s.unreadable.is_some() || s.held.len() > s.removed.len());
    if remaining && !o.quiet {
        FINDINGS
    } else {
        0
    }
}

/// What the options name: tmux sockets (`-L`, `-S`) and screen sessions
/// (`--screen`; `None` for every one of the user's). With neither, every tmux
/// server and every screen session of the user.
fn targets(o: &Options) -> (Vec<PathBuf>, Vec<Option<&str>>) {
    match (o.named.is_empty(), o.screens.is_empty()) {
        (true, true) => (user_sockets(), vec![None]),
        (named, _) => {
            let sockets = if named { Vec::new() } else { o.named.clone() };
            let sessions = o
                .screens
                .iter()
                .map(|s| Some(s.as_str()).filter(|s| !s.is_empty()))
                .collect();
            (sockets, sessions)
        }
    }
}

/// The screen sessions `wanted` names, read, and fixed with `--fix`.
fn screen_sessions(
    o: &Options,
    wanted: &[Option<&str>],
    policy: &Policy<'_>,
    files: &[Option<Vec<u8>>],
) -> Vec<crate::screen::Session> {
    let screen = o.screen.as_ref().map_or_else(
        || "screen".to_string(),
        |p| p.to_string_lossy().into_owned(),
    );
    let mut found: Vec<(String, u32)> = Vec::new();
    for &w in wanted {
        for s in crate::screen::sessions(&screen, w) {
            if !found.contains(&s) {
                found.push(s);
            }
        }
    }
    found
        .into_iter()
        .map(|s| crate::screen::examine(policy, files, &screen, s, o.fix))
        .collect()
}

/// True when a server listens on `socket` (a socket file outlives a server that
/// was killed).
fn listens(socket: &Path) -> bool {
    std::os::unix::net::UnixStream::connect(socket).is_ok()
}

impl Held {
    /// What a held name in the global or a session's environment is, in the words
    /// of both the tool's report and scan's: "holds a stale NAME: ..." or "holds
    /// NAME, which the policy strips (...)".
    fn what(&self) -> String {
        let name = value::word(&self.name);
        if self.kind == "stale" {
            format!("holds a stale {name}: {}", self.why)
        } else {
            format!(
                "holds {name}, which the policy {} ({})",
                past(self.kind),
                self.why
            )
        }
    }
}

/// A finding `--fix` removes: a name a server's or a session's environment holds.
fn removable(h: &Held) -> bool {
    h.kind != "stale" && matches!(h.place, Place::Global | Place::Session { .. })
}

/// `TMUX_TMPDIR/tmux-UID/LABEL`, as tmux makes it: the socket `-L LABEL` names.
pub fn label_socket(label: &[u8]) -> PathBuf {
    let tmpdir = std::env::var_os("TMUX_TMPDIR");
    let s = Socket::Label {
        tmpdir: tmpdir
            .as_deref()
            .map(OsStrExt::as_bytes)
            .filter(|d| !d.is_empty())
            .unwrap_or(b"/tmp"),
        label,
    };
    socket_path(&s)
}

/// The path of a socket tmux would use, for this user.
pub fn socket_path(s: &Socket<'_>) -> PathBuf {
    let mut out = vec![0u8; 4096];
    // SAFETY: getuid cannot fail and has no preconditions.
    let uid = unsafe { libc::getuid() };
    let p = s.write_path(uid, &mut out).unwrap_or_default().to_vec();
    PathBuf::from(OsString::from_vec(p))
}

/// Every socket in this user's tmux directory.
fn user_sockets() -> Vec<PathBuf> {
    let dir = label_socket(b"");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_socket()))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// Read one server, and fix it when asked.
fn examine(
    policy: &Policy<'_>,
    files: &[Option<Vec<u8>>],
    tmux: &Path,
    socket: &Path,
    o: &Options,
) -> Server {
    let mut s = Server {
        socket: socket.to_path_buf(),
        pid: None,
        shim: None,
        held: Vec::new(),
        removed: Vec::new(),
        unreadable: None,
    };
    if let Err(why) = read_server(policy, files, tmux, o, &mut s) {
        s.unreadable = Some(why);
    }
    s
}

fn read_server(
    policy: &Policy<'_>,
    files: &[Option<Vec<u8>>],
    tmux: &Path,
    o: &Options,
    s: &mut Server,
) -> Result<(), String> {
    let client = Client {
        tmux,
        socket: &s.socket,
    };
    let pid = client.run(&["display-message", "-p", "#{pid}"])?;
    s.pid = String::from_utf8_lossy(&pid).trim().parse().ok();
    s.shim = s.pid.and_then(shim_mapped);
    // A policed server's shim filters every exec it makes, pipe-pane's and the
    // panes' included: what its environments and its own process hold (names
    // self-scrub left, with their values overwritten) reach no process, so they
    // are no finding.
    if s.shim.is_some() {
        return Ok(());
    }
    let global = environment(&client, &["-g"])?;
    judge_into(policy, files, Place::Global, &global, &mut s.held);
    for (id, name) in sessions(&client) {
        let env = environment(&client, &["-t", &id])?;
        let place = Place::Session { id, name };
        judge_into(policy, files, place, &env, &mut s.held);
    }
    if let (Some(pid), true) = (s.pid, !o.quiet || o.warn_server_environ) {
        if let Ok(raw) = procfs::read(pid, "environ") {
            let entries = procfs::split_nul(&raw);
            let place = Place::ServerProcess { pid };
            judge_into(policy, files, place, &entries, &mut s.held);
        }
    }
    if !o.quiet {
        for (id, pid) in panes(&client) {
            let Ok(raw) = procfs::read(pid, "environ") else {
                continue;
            };
            let entries = procfs::split_nul(&raw);
            judge_into(
                policy,
                files,
                Place::Pane { id, pid },
                &entries,
                &mut s.held,
            );
        }
    }
    if o.fix {
        s.removed = remove(&client, &s.held)?;
    }
    Ok(())
}

/// A tmux client of one server.
struct Client<'a> {
    tmux: &'a Path,
    socket: &'a Path,
}

impl Client<'_> {
    /// Run `tmux -S SOCKET ARGS...` with an empty environment; its stdout.
    fn run(&self, args: &[&str]) -> Result<Vec<u8>, String> {
        let mut child = Command::new(self.tmux)
            .arg("-S")
            .arg(self.socket)
            .args(args)
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot run {}: {}",
                    value::word(self.tmux.as_os_str().as_bytes()),
                    envpolicy::error::io_reason(&e)
                )
            })?;
        let started = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if started.elapsed() < ANSWER_LIMIT => {
                    std::thread::sleep(Duration::from_millis(2))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("no answer within {} s", ANSWER_LIMIT.as_secs()));
                }
            }
        }
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            // tmux's own message names the socket or the command, never a value
            // of ours: but it is not ours to vouch for, so it is not shown.
            return Err(format!("tmux {} failed ({})", args[0], out.status));
        }
        Ok(out.stdout)
    }
}

/// The entries of one environment of the server (`-g`, or `-t SESSION`): the
/// ones `show-environment` lists, and the hidden ones (`-h`, tmux 3.2 and
/// later), which tmux gives to no process but keeps, and expands in its
/// configuration and commands. A tmux without `-h` has none.
fn environment(client: &Client<'_>, which: &[&str]) -> Result<Vec<Vec<u8>>, String> {
    let shown = [&["show-environment"], which].concat();
    let mut entries = entries_of(&client.run(&shown)?);
    let hidden = [&["show-environment", "-h"], which].concat();
    entries.extend(entries_of(&client.run(&hidden).unwrap_or_default()));
    Ok(entries)
}

/// `NAME=VALUE` lines of `show-environment` (a `-NAME` line is a name marked for
/// removal: not held).
fn entries_of(listing: &[u8]) -> Vec<Vec<u8>> {
    listing
        .split(|&b| b == b'\n')
        .filter(|l| !l.starts_with(b"-") && split_entry(l).is_some())
        .map(<[u8]>::to_vec)
        .collect()
}

/// Every session: its id and name. (A server with no session left answers
/// list-sessions with an error: none.)
fn sessions(client: &Client<'_>) -> Vec<(String, String)> {
    let out = client
        .run(&["list-sessions", "-F", "#{session_id} #{session_name}"])
        .unwrap_or_default();
    String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(id, name)| (id.to_string(), name.to_string()))
        .collect()
}

/// Every pane: its id and its process.
fn panes(client: &Client<'_>) -> Vec<(String, u32)> {
    let out = client
        .run(&["list-panes", "-a", "-F", "#{pane_id} #{pane_pid}"])
        .unwrap_or_default();
    String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter_map(|(id, pid)| Some((id.to_string(), pid.parse().ok()?)))
        .collect()
}

/// True when process `pid` maps libenvshim.so: it filters its own execs.
pub(crate) fn maps_the_shim(pid: u32) -> bool {
    shim_mapped(pid).is_some()
}

/// Whether process `pid` maps libenvshim.so, and if so whether the file it maps
/// was replaced since (`(deleted)` in its maps: a reinstall or an upgrade). A
/// replaced shim is still the one in the process, and still filters its execs.
pub(crate) fn shim_mapped(pid: u32) -> Option<Mapped> {
    let maps = procfs::read(pid, "maps").ok()?;
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

/// What [`shim_mapped`] found.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mapped {
    /// The shim file that is on disk now.
    Current,
    /// One that was replaced on disk since the process started.
    Replaced,
}

/// Judge `entries` as a pane's environment: every name the policy strips or
/// refuses, and every stale passthrough value, is added to `held`.
fn judge_into(
    policy: &Policy<'_>,
    files: &[Option<Vec<u8>>],
    place: Place,
    entries: &[Vec<u8>],
    held: &mut Vec<Held>,
) {
    for (name, why, kind) in judge(policy, files, entries) {
        held.push(Held {
            place: place.clone(),
            name,
            kind,
            why,
        });
    }
}

/// The names a pane must not get from `entries`, with why and their kind.
pub fn judge(
    policy: &Policy<'_>,
    files: &[Option<Vec<u8>>],
    entries: &[Vec<u8>],
) -> Vec<(Vec<u8>, String, &'static str)> {
    let mut out = Vec::new();
    let d = outcome::decide(policy, b"", &[], entries, &[], files);
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
        out.push((name.to_vec(), describe_rule(policy, v.rule, entries), kind));
    }
    for (name, path) in stale_names(policy, files, b"", entries) {
        let why = format!("its value differs from env file {path} today");
        out.push((name.to_vec(), why, "stale"));
    }
    out
}

/// Remove every removable held name with one tmux client: `set-environment -u`,
/// globally or in its session. What was removed.
fn remove(client: &Client<'_>, held: &[Held]) -> Result<Vec<(Place, Vec<u8>)>, String> {
    let mut args: Vec<String> = Vec::new();
    let mut removed = Vec::new();
    for h in held.iter().filter(|h| removable(h)) {
        let Ok(name) = std::str::from_utf8(&h.name) else {
            continue;
        };
        if !args.is_empty() {
            args.push(";".into());
        }
        args.push("set-environment".into());
        match &h.place {
            Place::Session { id, .. } => args.extend(["-t".into(), id.clone()]),
            _ => args.push("-g".into()),
        }
        args.extend(["-u".into(), name.to_string()]);
        removed.push((h.place.clone(), h.name.clone()));
    }
    if !removed.is_empty() {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        client.run(&refs)?;
    }
    Ok(removed)
}

/// Who a line on stderr is from: "envshim" when libenvshim.so ran this check in a
/// tmux client (the user ran tmux under the shim, not envwrap), else "envwrap".
pub(crate) fn who() -> &'static str {
    if std::env::var_os(SHIM_CHECK).is_some() {
        "envshim"
    } else {
        "envwrap"
    }
}

/// Set by libenvshim.so in the environment of the check it runs.
pub const SHIM_CHECK: &str = "ENVSHIM_TMUX_CHECK";

fn print_servers(servers: &[Server], o: &Options, label: &str) {
    for s in servers {
        let socket = value::word(s.socket.as_os_str().as_bytes());
        let head = match s.pid {
            Some(pid) => format!("tmux server {socket} (pid {pid})"),
            None => format!("tmux server {socket}"),
        };
        if let Some(why) = &s.unreadable {
            say!("{}: {head}: not read: {why}", who());
            continue;
        }
        for (place, name) in &s.removed {
            say!(
                "{}: {head}: removed {} from {} ({label})",
                who(),
                value::word(name),
                place.text()
            );
        }
        if o.quiet {
            warn_server_process(&head, &s.held);
            continue;
        }
        if let Some(mapped) = s.shim {
            let shim = match mapped {
                Mapped::Replaced => {
                    "an older libenvshim.so (replaced on disk since the server started)"
                }
                Mapped::Current => "libenvshim.so",
            };
            showln!("{head}: runs {shim}, which filters every process it starts");
        }
        let shown: Vec<&Held> = s.held.iter().filter(|h| !o.fix || !removable(h)).collect();
        for h in &shown {
            let name = value::word(&h.name);
            let what = match (&h.place, h.kind) {
                (Place::Pane { .. }, _) => format!("holds {name} ({}): restart the pane", h.why),
                (Place::ServerProcess { .. }, _) => format!(
                    "holds {name} ({}), which pipe-pane commands get: restart the server under envshim",
                    h.why
                ),
                _ => h.what(),
            };
            showln!("{head}: {} {what}", h.place.text());
        }
        if shown.is_empty() && s.removed.is_empty() && s.shim.is_none() {
            showln!("{head}: no findings");
        }
    }
    if servers.is_empty() && !o.quiet && o.named.is_empty() {
        showln!("no tmux server found");
    }
}

/// In a client's check (`--quiet --warn-server-environ`): one line naming what the
/// server's own environment holds, which no client can change.
fn warn_server_process(head: &str, held: &[Held]) {
    let names: Vec<String> = held
        .iter()
        .filter(|h| matches!(h.place, Place::ServerProcess { .. }) && h.kind != "stale")
        .map(|h| value::word(&h.name))
        .collect();
    if !names.is_empty() {
        say!(
            "{}: {head}: its own environment holds {}, which pipe-pane commands get and \
             no client can remove: restart the server under envshim",
            who(),
            names.join(", ")
        );
    }
}

/// The policy's verb for a held name of `kind` (`refused` or `stripped`).
pub(crate) fn past(kind: &str) -> &'static str {
    if kind == "refused" {
        "refuses"
    } else {
        "strips"
    }
}

fn servers_json(servers: &[Server], sessions: &[crate::screen::Session], policy: &str) -> String {
    let list: Vec<_> = servers
        .iter()
        .map(|s| {
            let held: Vec<_> = s
                .held
                .iter()
                .map(|h| {
                    json!({
                        "place": place_json(&h.place),
                        "variable": value::word(&h.name),
                        "kind": h.kind,
                        "why": h.why,
                    })
                })
                .collect();
            let removed: Vec<_> = s
                .removed
                .iter()
                .map(|(p, n)| json!({"place": place_json(p), "variable": value::word(n)}))
                .collect();
            json!({
                "socket": value::word(s.socket.as_os_str().as_bytes()),
                "pid": s.pid,
                "policed": s.shim.is_some(),
                "held": held,
                "removed": removed,
                "unreadable": s.unreadable,
            })
        })
        .collect();
    let screens: Vec<_> = sessions.iter().map(crate::screen::Session::json).collect();
    json!({"policy": policy, "servers": list, "screen_sessions": screens}).to_string()
}

fn place_json(p: &Place) -> serde_json::Value {
    match p {
        Place::Global => json!({"global": true}),
        Place::Session { id, name } => json!({"session": id, "name": value::word(name.as_bytes())}),
        Place::Pane { id, pid } => json!({"pane": id, "pid": pid}),
        Place::ServerProcess { pid } => json!({"server_process": pid}),
    }
}

/// For `envwrap scan`: what the servers on `sockets` (every socket of this
/// user's tmux directory when `None`) hold in their global and session
/// environments, as scan findings. Panes and the servers' own environments are
/// processes, which scan reads anyway.
pub fn scan_findings(
    policy: &Policy<'_>,
    files: &[Option<Vec<u8>>],
    sockets: Option<Vec<PathBuf>>,
) -> Vec<crate::scan::Finding> {
    let o = Options {
        quiet: true,
        ..Options::default()
    };
    let tmux = PathBuf::from("tmux");
    let mut out = Vec::new();
    for socket in sockets.unwrap_or_else(user_sockets) {
        if !listens(&socket) {
            continue;
        }
        let s = examine(policy, files, &tmux, &socket, &o);
        let shown = value::word(socket.as_os_str().as_bytes());
        if let Some(why) = &s.unreadable {
            say!("envwrap: scan: tmux server {shown}: not read: {why}");
        }
        for h in s.held.iter().filter(|h| removable(h) || h.kind == "stale") {
            out.push(crate::scan::Finding {
                pid: s.pid.unwrap_or(0),
                program: "tmux server".to_string(),
                kind: if h.kind == "stale" { "tmux.stale" } else { "tmux.held" },
                variable: Some(value::word(&h.name)),
                index: None,
                why: format!(
                    "socket {shown}: {} {}; envwrap tmux-env --fix -S {shown} removes it from the server",
                    h.place.text(),
                    h.what()
                ),
            });
        }
    }
    out
}

/// For `envwrap -- screen ...` without the shim in screen: clean the session the
/// client `argv` talks to before it runs, when it may start a process there
/// (`envpolicy::screen`). As [`fix_before_client`] for tmux.
pub fn fix_before_screen_client(
    loaded: &source::Loaded,
    screen: &Path,
    argv: &[Vec<u8>],
    env: &[Vec<u8>],
) {
    let args: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
    let sty = crate::environ::get(env, b"STY");
    let client = envpolicy::screen::read_client(&args);
    let is_screen = envpolicy::pairs::carrier(screen.as_os_str().as_bytes())
        == Some(envpolicy::pairs::Carrier::Screen);
    if !is_screen || !client.reaches_server_environment(sty) {
        return;
    }
    let session = client.session(sty).unwrap_or_default();
    let o = Options {
        screens: vec![String::from_utf8_lossy(session).into_owned()],
        fix: true,
        quiet: true,
        screen: Some(screen.to_path_buf()),
        ..Options::default()
    };
    check_servers(&o, loaded);
}

/// For `envwrap -- tmux ...` without the shim in tmux: fix the server the client
/// `argv` talks to before it runs, when its command may start a process there,
/// under the policy the run loaded. `env` is the client's environment. What it
/// finds is reported, never fatal: the client runs, as it would have.
pub fn fix_before_client(loaded: &source::Loaded, tmux: &Path, argv: &[Vec<u8>], env: &[Vec<u8>]) {
    let args: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
    let is_tmux = envpolicy::pairs::carrier(tmux.as_os_str().as_bytes())
        == Some(envpolicy::pairs::Carrier::Tmux);
    if !is_tmux || !envpolicy::tmux::reaches_server_environment(&args) {
        return;
    }
    let get = |n: &[u8]| crate::environ::get(env, n);
    let socket = socket_path(&envpolicy::tmux::socket(
        &args,
        get(b"TMUX"),
        get(b"TMUX_TMPDIR"),
    ));
    // What the shim's check runs: `--fix --skip-policed --quiet -S SOCKET
    // --tmux TMUX [--warn-server-environ]`.
    let o = Options {
        named: vec![socket],
        fix: true,
        warn_server_environ: envpolicy::tmux::pipes_a_pane(&args),
        quiet: true,
        tmux: Some(tmux.to_path_buf()),
        ..Options::default()
    };
    check_servers(&o, loaded);
}
