//! The loop scenario, written once for every terminal multiplexer (ADR 0014): a
//! server started without envshim by a shell holding credentials; a client under
//! envshim (the shim preloaded, or envwrap) has it start a process, by each of its
//! ways; that process holds no token, nor does a window a later foreign client opens.
//! A multiplexer is one `impl Multiplexer`, named in `scenario_tests!`; the control
//! is `every_way_leaks_without_envshim`, the known leaks `known_gaps_are_clean` (ignored).

use envshim_e2e::*;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The credential every check looks for by name and by value.
const TOKEN: &str = "GH_TOKEN";
/// A name that says nothing, holding [`TOKEN`]'s value: found by its shape only.
const INNOCENT: &str = "BUILD_NOTE";

/// A terminal multiplexer whose server starts the processes its clients ask for.
trait Multiplexer: Sized {
    /// The name failures and sandboxes are known by.
    const NAME: &'static str;
    /// What the ways need to know of a running server.
    type Server;
    /// Start a server without envshim, by an environment that holds every seeded
    /// credential and [`TOKEN`]'s value under [`INNOCENT`]; check that it holds them.
    fn start_foreign(sb: &Sandbox) -> Self::Server;
    /// Stop it, on its own socket or session name. Runs in Drop: never panics.
    fn stop(sb: &Sandbox, server: &Self::Server);
    /// The client program, the arguments that reach this sandbox's server, and
    /// its environment (None: removed).
    fn client(sb: &Sandbox) -> Client;
    /// A client's arguments that open a window or pane writing its environment
    /// to `file`: the control's way, and a later client's.
    fn open_window(server: &Self::Server, file: &Path) -> Vec<String>;
    /// Every way a client has the running server start a process.
    fn ways() -> Vec<Way<Self>>;
}

/// How a client of a multiplexer is run, before a way's own arguments.
struct Client {
    program: &'static str,
    args: Vec<String>,
    env: Vec<(&'static str, Option<OsString>)>,
}

/// One way a client has a running server start a process: `run` builds it
/// for a server and the file that process writes its environment to.
struct Way<M: Multiplexer> {
    name: &'static str,
    run: fn(&Sandbox, &M::Server, &Path) -> Run,
    /// Why it leaks under envshim today, for a way kept as a known gap.
    gap: Option<&'static str>,
}

fn way<M: Multiplexer>(name: &'static str, run: fn(&Sandbox, &M::Server, &Path) -> Run) -> Way<M> {
    Way {
        name,
        run,
        gap: None,
    }
}

fn gap<M: Multiplexer>(
    name: &'static str,
    why: &'static str,
    run: fn(&Sandbox, &M::Server, &Path) -> Run,
) -> Way<M> {
    Way {
        name,
        run,
        gap: Some(why),
    }
}

/// A way's client run: its arguments after [`Client`]'s, and what comes first.
#[derive(Default)]
struct Run {
    /// Commands a client without envshim runs first (the server's configuration).
    prepare: Vec<Vec<String>>,
    args: Vec<String>,
    env: Vec<(String, String)>,
    /// How often the client may run before its process has written the file
    /// (tmux kills a command client's format jobs when it leaves, often first).
    attempts: u32,
}

impl Run {
    fn new<S: Into<String>>(args: impl IntoIterator<Item = S>) -> Run {
        Run {
            args: args.into_iter().map(Into::into).collect(),
            attempts: 1,
            ..Run::default()
        }
    }

    /// A client without envshim runs `args` first.
    fn after<S: Into<String>>(mut self, args: impl IntoIterator<Item = S>) -> Run {
        self.prepare
            .push(args.into_iter().map(Into::into).collect());
        self
    }

    fn env(mut self, name: &str, value: impl Into<String>) -> Run {
        self.env.push((name.to_string(), value.into()));
        self
    }

    fn attempts(mut self, n: u32) -> Run {
        self.attempts = n;
        self
    }
}

/// How the client is run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FrontEnd {
    /// No envshim, and no credential in its environment: a foreign client.
    Without,
    /// `LD_PRELOAD=<shim> CLIENT ...`, by a shell that holds the credentials.
    Shim,
    /// `envwrap -- CLIENT ...` (which preloads the shim into the client).
    Envwrap,
    /// `envwrap --no-preload -- CLIENT ...` (envwrap checks the server itself).
    EnvwrapNoPreload,
}

impl FrontEnd {
    const UNDER_ENVSHIM: [FrontEnd; 3] = [
        FrontEnd::Shim,
        FrontEnd::Envwrap,
        FrontEnd::EnvwrapNoPreload,
    ];

    fn name(self) -> &'static str {
        match self {
            FrontEnd::Without => "a client without envshim",
            FrontEnd::Shim => "LD_PRELOAD=libenvshim.so",
            FrontEnd::Envwrap => "envwrap --",
            FrontEnd::EnvwrapNoPreload => "envwrap --no-preload --",
        }
    }

    fn command<M: Multiplexer>(
        self,
        sb: &Sandbox,
        args: &[String],
        env: &[(String, String)],
    ) -> TestCommand {
        let client = M::client(sb);
        let mut c = match self {
            FrontEnd::Without | FrontEnd::Shim => sb.cmd(client.program),
            FrontEnd::Envwrap | FrontEnd::EnvwrapNoPreload => {
                let mut c = sb.cmd(envwrap_bin());
                if self == FrontEnd::EnvwrapNoPreload {
                    c.arg("--no-preload");
                }
                c.args(["--", client.program]);
                c
            }
        };
        c.args(&client.args).args(args);
        for (name, value) in &client.env {
            match value {
                Some(v) => c.env(name, v),
                None => c.env_remove(name),
            };
        }
        for (name, value) in env {
            c.env(name, value);
        }
        if self != FrontEnd::Without {
            c.env_secrets().env(INNOCENT, sb.secrets().value(TOKEN));
        }
        if self == FrontEnd::Shim {
            c.with_shim();
        }
        c.timeout(Duration::from_secs(30));
        c
    }
}

/// A foreign server, stopped on drop (also when a check fails).
struct Running<'a, M: Multiplexer> {
    sb: &'a Sandbox,
    server: M::Server,
}

impl<'a, M: Multiplexer> Running<'a, M> {
    fn foreign(sb: &'a Sandbox) -> Self {
        Running {
            sb,
            server: M::start_foreign(sb),
        }
    }
}

impl<M: Multiplexer> Drop for Running<'_, M> {
    fn drop(&mut self) {
        M::stop(self.sb, &self.server);
    }
}

/// `way` run through `front` on a fresh foreign server (the first cleaning
/// cleans it for every later way): the client's stderr, and the file.
fn run_way<M: Multiplexer>(
    sb: &Sandbox,
    server: &M::Server,
    way: &Way<M>,
    front: FrontEnd,
) -> (String, PathBuf) {
    let file = sb.join("way.env");
    let run = (way.run)(sb, server, &file);
    for prepare in &run.prepare {
        FrontEnd::Without
            .command::<M>(sb, prepare, &[])
            .allow_secrets_in_output()
            .expect_success();
    }
    let mut said = None;
    for _ in 0..run.attempts.max(1) {
        let mut c = front.command::<M>(sb, &run.args, &run.env);
        if front == FrontEnd::Without {
            c.allow_secrets_in_output();
        }
        let out = c.expect_success();
        said.get_or_insert(out.stderr_str());
        if run.attempts <= 1
            || sb.wait_for(
                || std::fs::metadata(&file).is_ok_and(|m| m.len() > 0),
                Duration::from_millis(300),
            )
        {
            break;
        }
    }
    (said.unwrap_or_default(), file)
}

fn what<M: Multiplexer>(way: &Way<M>, front: FrontEnd) -> String {
    format!("{}: {}, through {}", M::NAME, way.name, front.name())
}

/// The scenario: by each way, through `front`, the process the foreign
/// server starts holds no token; the client said it removed the token; and
/// a window a later client without envshim opens holds none either.
fn check_every_way_is_clean<M: Multiplexer>(front: FrontEnd) {
    let ways = M::ways();
    assert!(ways.iter().any(|w| w.gap.is_none()), "{}: no ways", M::NAME);
    for way in ways.iter().filter(|w| w.gap.is_none()) {
        let what = what(way, front);
        let sb = Sandbox::new(&format!("mux_loop_{}", M::NAME));
        let server = Running::<M>::foreign(&sb);
        let (said, file) = run_way(&sb, &server.server, way, front);
        assert_clean_dump(&sb, &file, &what, &[INNOCENT]);
        assert!(
            said.contains(&format!("removed {TOKEN}")),
            "{what}: the client did not say it removed {TOKEN}:\n{said}"
        );
        let later = sb.join("later.env");
        FrontEnd::Without
            .command::<M>(&sb, &M::open_window(&server.server, &later), &[])
            .expect_success();
        assert_clean_dump(
            &sb,
            &later,
            &format!("{what}, then a window a later client without envshim opened"),
            &[INNOCENT],
        );
    }
}

/// The control: by each way (the known gaps too), a client without envshim
/// gets a process that holds the token, by value and under the innocent name.
/// This proves the dump shows what the server gives; without it a clean dump
/// proves nothing.
fn check_every_way_leaks_without_envshim<M: Multiplexer>() {
    for way in &M::ways() {
        let what = what(way, FrontEnd::Without);
        let sb = Sandbox::new(&format!("mux_loop_{}_control", M::NAME));
        let server = Running::<M>::foreign(&sb);
        let (_, file) = run_way(&sb, &server.server, way, FrontEnd::Without);
        assert_holds_the_token(&sb, &file, &what);
    }
    // And the window the later clients open, which the scenario finds clean.
    let sb = Sandbox::new(&format!("mux_loop_{}_control", M::NAME));
    let server = Running::<M>::foreign(&sb);
    let file = sb.join("window.env");
    FrontEnd::Without
        .command::<M>(&sb, &M::open_window(&server.server, &file), &[])
        .allow_secrets_in_output()
        .expect_success();
    assert_holds_the_token(
        &sb,
        &file,
        &format!("{}: a window a client without envshim opened", M::NAME),
    );
}

/// The known gaps: ways that leak under envshim today, each with why. Each is
/// expected to be clean, as every other way is; it fails until it is.
fn check_known_gaps<M: Multiplexer>() {
    let mut leaked = Vec::new();
    for way in M::ways().iter().filter(|w| w.gap.is_some()) {
        for front in FrontEnd::UNDER_ENVSHIM {
            let what = what(way, front);
            let sb = Sandbox::new(&format!("mux_loop_{}_gap", M::NAME));
            let server = Running::<M>::foreign(&sb);
            let (_, file) = run_way(&sb, &server.server, way, front);
            let held = held_in_dump(&sb, &file, &what);
            if !held.is_empty() {
                let why = way.gap.unwrap_or_default();
                leaked.push(format!("{what}: the process holds {held:?}; {why}"));
            }
        }
    }
    assert!(leaked.is_empty(), "known gaps leak:\n{}", leaked.join("\n"));
}

/// Wait for `file`, and check that it holds [`TOKEN`]'s value, under its own
/// name and under [`INNOCENT`].
#[track_caller]
fn assert_holds_the_token(sb: &Sandbox, file: &Path, what: &str) {
    let held = held_in_dump(sb, file, what);
    assert!(
        held.contains(&TOKEN) && held.contains(&INNOCENT),
        "{what}: the process holds {held:?}, not {TOKEN} and {INNOCENT}: \
         the dump does not show what the server gives"
    );
}

/// Wait for `file` to be written; the seeded names whose values it holds, and
/// [`INNOCENT`] when it holds [`TOKEN`]'s value under that name. Names only:
/// a failure never shows a value.
#[track_caller]
fn held_in_dump(sb: &Sandbox, file: &Path, what: &str) -> Vec<&'static str> {
    let bytes = read_dump(sb, file, what);
    let mut held: Vec<&'static str> = sb
        .secrets()
        .find_all(&bytes)
        .iter()
        .map(|f| f.name)
        .collect();
    let innocent = format!("{INNOCENT}={}", sb.secrets().value(TOKEN));
    if String::from_utf8_lossy(&bytes)
        .lines()
        .any(|l| l == innocent)
    {
        held.push(INNOCENT);
    }
    held
}

/// `scenario_tests!(module: Type, ...)`: the scenario's tests for each multiplexer.
macro_rules! scenario_tests {
    ($($module:ident: $mux:ty),* $(,)?) => {$(
        mod $module {
            use super::*;

            #[test]
            fn every_way_through_the_shim_is_clean() {
                check_every_way_is_clean::<$mux>(FrontEnd::Shim);
            }

            #[test]
            fn every_way_through_envwrap_is_clean() {
                check_every_way_is_clean::<$mux>(FrontEnd::Envwrap);
            }

            #[test]
            fn every_way_through_envwrap_without_preload_is_clean() {
                check_every_way_is_clean::<$mux>(FrontEnd::EnvwrapNoPreload);
            }

            #[test]
            fn every_way_leaks_without_envshim() {
                check_every_way_leaks_without_envshim::<$mux>();
            }

            #[test]
            #[ignore = "known gaps: ways that leak under envshim today (each Way's gap says why)"]
            fn known_gaps_are_clean() {
                check_known_gaps::<$mux>();
            }
        }
    )*};
}

scenario_tests!(tmux: Tmux, screen: Screen);

/// `env > FILE`.
fn env_to(file: &Path) -> String {
    format!("env > {}", file.display())
}

/// `env > FILE`, then stay: a pane or window that ends at once may be gone
/// before its dump is read.
fn env_and_stay(file: &Path) -> String {
    format!("env > {}; sleep 600", file.display())
}

/// tmux, on the sandbox's own `-L` socket (`Sandbox::tmux_args`).
struct Tmux;

/// A format job that outlives the client whose command started it (tmux
/// sends it SIGTERM when that client leaves).
fn tmux_job(file: &Path) -> String {
    format!("#(trap '' TERM; {})", env_to(file))
}

impl Multiplexer for Tmux {
    const NAME: &'static str = "tmux";
    /// The server is the sandbox's socket; its session is `first`.
    type Server = ();

    fn start_foreign(sb: &Sandbox) {
        sb.tmux()
            .args(["new-session", "-d", "-s", "first", "sleep 600"])
            .env_secrets()
            .env(INNOCENT, sb.secrets().value(TOKEN))
            .allow_secrets_in_output()
            .expect_success();
        let held = sb.tmux_environment(None, true);
        assert!(
            held.is_set(TOKEN) && held.is_set(INNOCENT),
            "the foreign tmux server does not hold the credentials"
        );
    }

    fn stop(sb: &Sandbox, _: &()) {
        sb.kill_tmux_server();
    }

    fn client(sb: &Sandbox) -> Client {
        // Sandbox::cmd sets TMUX_TMPDIR to the sandbox and removes TMUX.
        Client {
            program: "tmux",
            args: sb.tmux_args(),
            env: Vec::new(),
        }
    }

    fn open_window(_: &(), file: &Path) -> Vec<String> {
        ["new-window", "-d", "-t", "first", &env_and_stay(file)]
            .map(String::from)
            .to_vec()
    }

    fn ways() -> Vec<Way<Self>> {
        vec![
            way("new-window", |_, _, f| {
                Run::new(["new-window", "-d", "-t", "first", &env_and_stay(f)])
            }),
            way("neww", |_, _, f| {
                Run::new(["neww", "-d", "-t", "first", &env_and_stay(f)])
            }),
            way("split-window", |_, _, f| {
                Run::new(["split-window", "-d", "-t", "first", &env_and_stay(f)])
            }),
            way("splitp (a stock command-alias)", |_, _, f| {
                Run::new(["splitp", "-d", "-t", "first", &env_and_stay(f)])
            }),
            way("split-w (a unique prefix)", |_, _, f| {
                Run::new(["split-w", "-d", "-t", "first", &env_and_stay(f)])
            }),
            way("new-session -d, into the running server", |_, _, f| {
                Run::new(["new-session", "-d", "-s", "second", &env_and_stay(f)])
            }),
            way("respawn-pane -k", |_, _, f| {
                Run::new(["respawn-pane", "-k", "-t", "first", &env_and_stay(f)])
            }),
            way("respawn-window -k", |_, _, f| {
                Run::new(["respawn-window", "-k", "-t", "first", &env_and_stay(f)])
            }),
            way("run-shell", |_, _, f| {
                Run::new(["run-shell", "-t", "first", &env_to(f)])
            }),
            way("if-shell", |_, _, f| {
                Run::new(["if-shell", "-t", "first", &env_to(f), "", ""])
            }),
            way("display -p '#(…)'", |_, _, f| {
                Run::new(["display", "-p", &format!("x {}", tmux_job(f))]).attempts(40)
            }),
            way("ls -F '#(…)'", |_, _, f| {
                Run::new(["ls", "-F", &tmux_job(f)]).attempts(40)
            }),
            way(
                "display -p '#{E:@job}', a job a foreign client put in an option",
                |_, _, f| {
                    Run::new(["display", "-p", "#{E:@job}"])
                        .after(["set-option", "-g", "@job", &tmux_job(f)])
                        .attempts(40)
                },
            ),
            way("a command-alias a foreign client set", |_, _, f| {
                Run::new(["spawn", "-t", "first", &env_and_stay(f)]).after([
                    "set-option",
                    "-s",
                    "command-alias[90]",
                    "spawn=new-window -d",
                ])
            }),
            way("a sequence: display -p x ; neww", |_, _, f| {
                Run::new(["display", "-p", "x", ";", "neww", "-d", &env_and_stay(f)])
            }),
            way("set-hook, then a command that fires it", |_, _, f| {
                Run::new([
                    "set-hook",
                    "-g",
                    "after-rename-window",
                    &format!("run-shell '{}'", env_to(f)),
                    ";",
                    "rename-window",
                    "-t",
                    "first",
                    "renamed",
                ])
            }),
            way("source-file", |sb, _, f| {
                let rc = sb.write(
                    "way.tmux.conf",
                    format!("new-window -d -t first '{}'\n", env_and_stay(f)),
                );
                Run::new(["source-file".to_string(), rc.display().to_string()])
            }),
            way(
                "new-window without a command: a default-command a foreign client set",
                |_, _, f| {
                    Run::new(["new-window", "-d", "-t", "first"]).after([
                        "set-option",
                        "-g",
                        "default-command",
                        &env_and_stay(f),
                    ])
                },
            ),
            way(
                "send-keys -X copy-pipe, in a pane a foreign client put in copy mode",
                |_, _, f| {
                    Run::new(["send-keys", "-X", "-t", "first", "copy-pipe", &env_to(f)]).after([
                        "copy-mode",
                        "-t",
                        "first",
                    ])
                },
            ),
            // Not here: display-popup, command-prompt and confirm-before need an
            // attached client (tmux_server.rs attaches one under script(1) for
            // display-popup), as does a status line's #() job; pipe-pane commands
            // get the server's own process environment, which no client can change
            // (ADR 0014; tmux_server.rs checks the warning); a control-mode client
            // (-C) needs its stdin held open (tmux_server.rs).
            gap(
                "a command-alias a foreign client set that takes a harmless command's name",
                "ADR 0014 accepts it: tmux reads command-alias before its command table, \
                 and the client judges `display` harmless by its name",
                |_, _, f| {
                    Run::new(["display", &env_and_stay(f)]).after([
                        "set-option",
                        "-s",
                        "command-alias[91]",
                        "display=new-window -d -t first",
                    ])
                },
            ),
            gap(
                "a hook a foreign client set, fired by a harmless command",
                "ADR 0014 accepts it: the server's own hooks run with what it holds, \
                 whoever's harmless command fires them (select-window here)",
                |_, _, f| {
                    Run::new(["select-window", "-t", "first:0"]).after([
                        "set-hook",
                        "-g",
                        "after-select-window",
                        &format!("run-shell '{}'", env_to(f)),
                    ])
                },
            ),
        ]
    }
}

/// GNU screen, each session in the sandbox's own `SCREENDIR`.
struct Screen;

/// A running screen session: its name and its server's PID.
struct ScreenSession {
    name: String,
    pid: u32,
}

/// The sandbox's `SCREENDIR` (made, mode 0700, as screen wants it).
fn screendir(sb: &Sandbox) -> PathBuf {
    let dir = sb.join("screen");
    if !dir.exists() {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .expect("make SCREENDIR");
    }
    dir
}

/// The PID of session `name`, from its socket's name (`PID.NAME`).
fn screen_pid(sb: &Sandbox, name: &str) -> Option<u32> {
    std::fs::read_dir(screendir(sb)).ok()?.find_map(|e| {
        let n = e.ok()?.file_name().to_string_lossy().into_owned();
        let (pid, rest) = n.split_once('.')?;
        (rest == name).then(|| pid.parse().ok())?
    })
}

/// A window's command: `sh -c 'env > FILE; sleep 600'`.
fn screen_window(file: &Path) -> [String; 3] {
    ["sh".into(), "-c".into(), env_and_stay(file)]
}

/// `-S SESSION -X ARGS...`.
fn screen_x(s: &ScreenSession, args: &[&str]) -> Vec<String> {
    let mut v = vec!["-S".to_string(), s.name.clone(), "-X".into()];
    v.extend(args.iter().map(|a| a.to_string()));
    v
}

impl Multiplexer for Screen {
    const NAME: &'static str = "screen";
    type Server = ScreenSession;

    fn start_foreign(sb: &Sandbox) -> ScreenSession {
        let name = "foreign".to_string();
        let mut c = sb.cmd("screen");
        c.env("SCREENDIR", screendir(sb))
            .env_remove("STY")
            .args(["-dmS", &name, "sleep", "600"])
            .env_secrets()
            .env(INNOCENT, sb.secrets().value(TOKEN))
            .allow_secrets_in_output()
            .timeout(Duration::from_secs(20));
        c.expect_success();
        let mut pid = None;
        assert!(
            sb.wait_for(
                || {
                    pid = screen_pid(sb, &name);
                    pid.is_some()
                },
                Duration::from_secs(10)
            ),
            "the foreign screen session did not start"
        );
        let session = ScreenSession {
            name,
            pid: pid.unwrap(),
        };
        let environ = try_proc_environ_raw(session.pid)
            .expect("the screen server's environ")
            .concat();
        assert!(
            sb.secrets()
                .find_all(&environ)
                .iter()
                .any(|f| f.name == TOKEN)
                && environ
                    .windows(INNOCENT.len() + 1)
                    .any(|w| w == format!("{INNOCENT}=").as_bytes()),
            "the foreign screen session does not hold the credentials"
        );
        session
    }

    fn stop(sb: &Sandbox, s: &ScreenSession) {
        let mut quit = std::process::Command::new("screen");
        quit.args(["-S", &s.name, "-X", "quit"])
            .env("SCREENDIR", sb.join("screen"))
            .env_remove("STY")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        if let Ok(mut child) = quit.spawn() {
            let deadline = Instant::now() + Duration::from_secs(10);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        if !wait_for(|| !pid_alive(s.pid), Duration::from_secs(5))
            && screen_pid(sb, &s.name) == Some(s.pid)
        {
            // A stale socket names a PID that may have been handed out again:
            // through a pidfd, and only to a screen whose environment holds this
            // sandbox's SCREENDIR (a path no other test's process holds).
            pidfd::signal_if_ours(s.pid, libc::SIGKILL, |p| {
                pidfd::comm_is(p, "screen")
                    && pidfd::environ_holds(p, "SCREENDIR", sb.join("screen").as_os_str())
            });
            wait_for(|| !pid_alive(s.pid), Duration::from_secs(5));
        }
    }

    fn client(sb: &Sandbox) -> Client {
        Client {
            program: "screen",
            args: Vec::new(),
            env: vec![
                ("SCREENDIR", Some(screendir(sb).into_os_string())),
                // A test run inside screen: no client may reach the outer session.
                ("STY", None),
            ],
        }
    }

    fn open_window(s: &ScreenSession, file: &Path) -> Vec<String> {
        let w = screen_window(file);
        screen_x(s, &["screen", &w[0], &w[1], &w[2]])
    }

    fn ways() -> Vec<Way<Self>> {
        vec![
            way("-X screen", |_, s: &ScreenSession, f| {
                Run::new(Screen::open_window(s, f))
            }),
            way("-p 0 -X exec, in window 0", |_, s: &ScreenSession, f| {
                Run::new([
                    "-S",
                    &s.name,
                    "-p",
                    "0",
                    "-X",
                    "exec",
                    "sh",
                    "-c",
                    &env_to(f),
                ])
            }),
            way("-X eval 'screen …'", |_, s: &ScreenSession, f| {
                Run::new(screen_x(
                    s,
                    &["eval", &format!("screen sh -c \"{}\"", env_and_stay(f))],
                ))
            }),
            way(
                "-X eval 'echo hi' 'screen …', a harmless command first",
                |_, s: &ScreenSession, f| {
                    Run::new(screen_x(
                        s,
                        &[
                            "eval",
                            "echo hi",
                            &format!("screen sh -c \"{}\"", env_and_stay(f)),
                        ],
                    ))
                },
            ),
            way(
                "-X source RCFILE, whose file holds a screen command",
                |sb, s: &ScreenSession, f| {
                    let rc = sb.write(
                        "way.screenrc",
                        format!("screen sh -c \"{}\"\n", env_and_stay(f)),
                    );
                    Run::new(screen_x(s, &["source", &rc.display().to_string()]))
                },
            ),
            way("-X at 0 screen …", |_, s: &ScreenSession, f| {
                let w = screen_window(f);
                Run::new(screen_x(s, &["at", "0", "screen", &w[0], &w[1], &w[2]]))
            }),
            way(
                "-X backtick ID 0 0 CMD, run at once",
                |_, s: &ScreenSession, f| {
                    Run::new(screen_x(
                        s,
                        &["backtick", "1", "0", "0", "sh", "-c", &env_to(f)],
                    ))
                },
            ),
            way(
                "-X screen without a command: the shell a foreign client set",
                |sb, s: &ScreenSession, f| {
                    let shell = sb
                        .write_executable("way-shell", format!("#!/bin/sh\n{}\n", env_and_stay(f)));
                    Run::new(screen_x(s, &["screen"]))
                        .after(screen_x(s, &["shell", &shell.display().to_string()]))
                },
            ),
            way("-r SESSION -X screen", |_, s: &ScreenSession, f| {
                let w = screen_window(f);
                let mut args = vec![
                    "-r".to_string(),
                    s.name.clone(),
                    "-X".into(),
                    "screen".into(),
                ];
                args.extend(w);
                Run::new(args)
            }),
            way(
                "a new window from inside the session ($STY, no -X)",
                |_, s: &ScreenSession, f| {
                    Run::new(screen_window(f)).env("STY", format!("{}.{}", s.pid, s.name))
                },
            ),
            // Not here, because a detached session cannot be made to run them:
            // `idle`, `blanker`, `lockscreen`, `process`, `command` and `colon` need
            // a display; so do key bindings (`bind`, `bindkey`: a key press),
            // `hardstatus` and `caption` (a backtick's %` is expanded when a
            // display is drawn), `zmodem catch` (a window's request, towards a
            // display), and the zombie keys' resurrect (`zombie_timeout`
            // resurrects on the server's own timer, no client command);
            // `time '%1`'` does not run the backtick detached; `-Q screen` (and
            // the other commands that open a window) "cannot be queried"; `stuff`
            // writes into a window whose process runs already (ADR 0014: out of
            // reach).
            // echo is harmless by name, but -p expands string escapes, and %`
            // runs a backtick's command with the session's environment: an
            // argument with a backtick cleans first (as tmux's `#{E:}`).
            way(
                "-X echo -p '%1`': a backtick a foreign client set, run by a harmless command",
                |_, s: &ScreenSession, f| {
                    Run::new(screen_x(s, &["echo", "-p", "%1`"])).after(screen_x(
                        s,
                        &[
                            "backtick",
                            "1",
                            "1",
                            "0",
                            "sh",
                            "-c",
                            &format!("{}; echo x", env_to(f)),
                        ],
                    ))
                },
            ),
            way(
                "-X windows '%1`': a backtick a foreign client set, run by a harmless command",
                |_, s: &ScreenSession, f| {
                    Run::new(screen_x(s, &["windows", "%1`"])).after(screen_x(
                        s,
                        &[
                            "backtick",
                            "1",
                            "1",
                            "0",
                            "sh",
                            "-c",
                            &format!("{}; echo x", env_to(f)),
                        ],
                    ))
                },
            ),
        ]
    }
}
