//! GNU screen, governed as tmux is (docs/adr/0014): a screen session's server
//! hands its own environment to every window it opens. A session started without
//! envshim by a shell that held credentials gives them to every window, so a
//! screen client under the shim or envwrap has envwrap clean the session before a
//! command that may open one, deny by default; a session started under the shim
//! scrubs itself. Real screen from Debian's package, each session in the
//! sandbox's own `SCREENDIR` and quit at the end, also on failure.

use envshim_e2e::*;
use std::path::PathBuf;
use std::time::Duration;

/// A name that says nothing, holding a token by its shape only.
const INNOCENT: &str = "BUILD_NOTE";

/// One screen session in the sandbox's own socket directory, quit on drop.
struct Session<'a> {
    sb: &'a Sandbox,
    name: String,
}

impl<'a> Session<'a> {
    fn name_for(sb: &Sandbox) -> String {
        let leaf = sb
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        format!("s{}", leaf.rsplit('-').next().unwrap_or("x"))
    }

    /// `screen` with the sandbox's `SCREENDIR`.
    fn screen(sb: &Sandbox) -> TestCommand {
        Self::in_screendir(sb, "screen")
    }

    /// `program` with the sandbox's `SCREENDIR` (made, mode 0700, as screen
    /// wants it).
    fn in_screendir(sb: &Sandbox, program: impl AsRef<std::ffi::OsStr>) -> TestCommand {
        let dir = sb.join("screen");
        if !dir.exists() {
            std::fs::create_dir(&dir).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        let mut c = sb.cmd(program);
        c.env("SCREENDIR", &dir).timeout(Duration::from_secs(20));
        c
    }

    /// Started the way a user's shell did before envshim: every seeded
    /// credential in its environment, and one more under an innocent name.
    fn foreign(sb: &'a Sandbox) -> Self {
        Self::start(sb, |c| {
            c.env(INNOCENT, sb.secrets().value("GH_TOKEN"));
        })
    }

    /// Started under the shim, with every seeded credential.
    fn policed(sb: &'a Sandbox) -> Self {
        Self::start(sb, |c| {
            c.with_shim();
        })
    }

    /// `screen -dmS NAME sleep 600` with every seeded credential, as `setup`
    /// changes it; waits for the session.
    fn start(sb: &'a Sandbox, setup: impl FnOnce(&mut TestCommand)) -> Self {
        let s = Session {
            sb,
            name: Self::name_for(sb),
        };
        let mut c = Self::screen(sb);
        c.args(["-dmS", &s.name, "sleep", "600"]).env_secrets();
        setup(&mut c);
        c.expect_success();
        s.wait_up();
        s
    }

    fn wait_up(&self) {
        assert!(
            self.sb
                .wait_for(|| self.pid().is_some(), Duration::from_secs(10)),
            "screen session {} did not start",
            self.name
        );
    }

    /// The server's PID, from its socket's name (`PID.NAME`).
    fn pid(&self) -> Option<u32> {
        let dir = self.sb.join("screen");
        std::fs::read_dir(dir).ok()?.find_map(|e| {
            let n = e.ok()?.file_name().to_string_lossy().into_owned();
            let (pid, name) = n.split_once('.')?;
            (name == self.name).then(|| pid.parse().ok())?
        })
    }

    /// A client of this session whose parent runs under the shim.
    fn client_under_shim(&self, args: &[&str]) -> TestCommand {
        let mut c = Self::screen(self.sb);
        c.args(["-S", &self.name]).args(args).with_shim();
        c
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        let _ = Self::screen(self.sb)
            .args(["-S", &self.name, "-X", "quit"])
            .run();
        if let Some(pid) = self.pid() {
            // The socket may be stale and its PID handed out again: through a
            // pidfd, and only to a screen whose environment holds this sandbox's
            // SCREENDIR (a path no other test's process holds).
            let dir = self.sb.join("screen");
            pidfd::signal_if_ours(pid, libc::SIGKILL, |p| {
                pidfd::comm_is(p, "screen") && pidfd::environ_holds(p, "SCREENDIR", dir.as_os_str())
            });
        }
    }
}

fn dump(sb: &Sandbox, name: &str) -> PathBuf {
    sb.join(format!("{name}.env"))
}

/// [`envshim_e2e::assert_clean_dump`], with the innocent name too.
#[track_caller]
fn assert_clean_dump(sb: &Sandbox, file: &std::path::Path, what: &str) {
    envshim_e2e::assert_clean_dump(sb, file, what, &[INNOCENT]);
}

/// The window a command opens, writing its environment to `file`.
fn window(file: &std::path::Path) -> [String; 5] {
    [
        "-X",
        "screen",
        "sh",
        "-c",
        &format!("env > {}; sleep 60", file.display()),
    ]
    .map(String::from)
}

#[test]
fn a_window_a_client_under_the_shim_opens_in_a_foreign_session_is_clean() {
    let sb = Sandbox::new("screen_shim");
    let s = Session::foreign(&sb);
    let file = dump(&sb, "window");
    let w = window(&file);
    let args: Vec<&str> = w.iter().map(String::as_str).collect();
    let out = s.client_under_shim(&args).expect_success();
    assert_clean_dump(&sb, &file, "a window opened through the shim");
    let said = out.stderr_str();
    assert!(
        said.lines()
            .any(|l| l.starts_with("envshim: screen session") && l.contains("removed GH_TOKEN")),
        "the shim did not say what it removed:\n{said}"
    );
}

#[test]
fn a_window_envwrap_opens_in_a_foreign_session_is_clean() {
    let sb = Sandbox::new("screen_envwrap");
    let s = Session::foreign(&sb);
    let file = dump(&sb, "window");
    let mut c = Session::in_screendir(&sb, envwrap_bin());
    c.args(["--no-preload", "--", "screen", "-S", &s.name])
        .args(window(&file));
    c.expect_success();
    assert_clean_dump(&sb, &file, "a window opened through envwrap");
}

/// What a client without envshim set after the session started (`-X setenv`)
/// lives in the server's heap, not in its /proc/PID/environ: it is read where
/// the server keeps it, and removed too.
#[test]
fn what_a_foreign_client_set_later_is_removed_too() {
    let sb = Sandbox::new("screen_setenv");
    let s = Session::foreign(&sb);
    let mut set = Session::screen(&sb);
    set.args([
        "-S",
        &s.name,
        "-X",
        "setenv",
        "LATER_NOTE",
        sb.secrets().value("GH_TOKEN"),
    ]);
    set.expect_success();
    let file = dump(&sb, "window");
    let w = window(&file);
    let args: Vec<&str> = w.iter().map(String::as_str).collect();
    s.client_under_shim(&args).expect_success();
    assert_clean_dump(&sb, &file, "a window after a foreign setenv");
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(!text.contains("LATER_NOTE="), "the window holds LATER_NOTE");
}

/// Deny by default: a command proven harmless leaves the session alone (no
/// check runs), any other has it cleaned, whatever its name.
#[test]
fn only_a_harmless_command_leaves_a_foreign_session_alone() {
    let sb = Sandbox::new("screen_harmless");
    let s = Session::foreign(&sb);
    let report = || {
        let mut c = Session::in_screendir(&sb, envwrap_bin());
        c.args(["tmux-env", "--screen", &s.name]);
        c.run()
    };
    s.client_under_shim(&["-X", "echo", "hi"]).expect_success();
    assert_eq!(
        report().status.code(),
        Some(1),
        "a harmless command had the session cleaned"
    );
    s.client_under_shim(&["-X", "bindkey", "^x", "echo", "x"])
        .expect_success();
    let after = report();
    assert_eq!(
        after.status.code(),
        Some(0),
        "bindkey did not have the session cleaned:\n{}",
        after.stdout_str()
    );
}

/// A session started under the shim scrubs its own environment: the server
/// process holds no seeded value, in /proc/PID/environ or anywhere in it.
#[test]
fn a_session_started_under_the_shim_holds_no_token() {
    let sb = Sandbox::new("screen_scrub");
    let s = Session::policed(&sb);
    let pid = s.pid().expect("the session's pid");
    let environ = std::fs::read(format!("/proc/{pid}/environ")).expect("read its environ");
    sb.secrets()
        .assert_absent("the policed screen server's environ", &environ);
    let file = dump(&sb, "window");
    let w = window(&file);
    let args: Vec<&str> = w.iter().map(String::as_str).collect();
    s.client_under_shim(&args).expect_success();
    assert_clean_dump(&sb, &file, "a window of a policed session");
}

/// `envwrap tmux-env` reports a foreign session's names, and `--fix` removes
/// them: named by `--screen`, and among every server when nothing is named.
#[test]
fn the_tool_reports_a_foreign_session_then_fixes_it() {
    let sb = Sandbox::new("screen_tool");
    let s = Session::foreign(&sb);
    let tool = |args: &[&str]| {
        let mut c = Session::in_screendir(&sb, envwrap_bin());
        c.arg("tmux-env").args(args);
        c.run()
    };
    let all = tool(&[]);
    assert_eq!(all.status.code(), Some(1));
    let said = all.stdout_str();
    assert!(
        said.contains(&format!(".{} ", s.name))
            && said.contains("holds GH_TOKEN")
            && said.contains(INNOCENT),
        "{said}"
    );
    let fixed = tool(&["--screen", &s.name, "--fix"]);
    assert!(
        fixed
            .stderr_str()
            .contains("removed GH_TOKEN from its environment"),
        "{}",
        fixed.stderr_str()
    );
    let after = tool(&["--screen", &s.name]);
    assert_eq!(after.status.code(), Some(0), "{}", after.stdout_str());
    assert!(after.stdout_str().contains("no findings"));
}

/// `envwrap scan` reports what a foreign session would give a new window,
/// and, once the session is fixed, that finding is gone.
#[test]
fn scan_reports_what_a_foreign_session_would_give_new_windows() {
    let sb = Sandbox::new("screen_scan");
    let s = Session::foreign(&sb);
    let scan = || {
        let mut c = Session::in_screendir(&sb, envwrap_bin());
        c.args(["scan", "--json"]);
        c.run()
    };
    let is_ours = |f: &serde_json::Value| {
        f["kind"] == "screen.held"
            && f["why"]
                .as_str()
                .is_some_and(|w| w.contains(&format!(".{}", s.name)))
    };
    // One JSON object per line: each finding, then the summary.
    let findings = |o: &Outcome| -> Vec<serde_json::Value> {
        o.stdout_str()
            .lines()
            .map(|l| serde_json::from_str(l).expect("scan --json line"))
            .collect()
    };
    let before = findings(&scan());
    assert!(
        before
            .iter()
            .any(|f| is_ours(f) && f["variable"] == "GH_TOKEN"),
        "scan does not report the session: {before:?}"
    );
    let mut fix = Session::in_screendir(&sb, envwrap_bin());
    fix.args(["tmux-env", "--fix", "--quiet", "--screen", &s.name]);
    fix.expect_success();
    let after = findings(&scan());
    assert!(
        !after.iter().any(is_ours),
        "still reported after --fix: {after:?}"
    );
}

/// A client attaching to another user's multiuser session (`-x USER/NAME`):
/// that session is neither listed nor readable, and the client says it was not
/// checked rather than passing in silence.
#[test]
fn another_users_session_is_said_to_be_unchecked() {
    let sb = Sandbox::new("screen_other_user");
    let mut c = Session::screen(&sb);
    c.env("LD_PRELOAD", shim_so()).args(["-x", "someone/work"]);
    let o = c.run();
    let said = o.stderr_str();
    assert!(
        said.lines().any(|l| l
            .starts_with("envshim: screen session someone/work: another user's session, not read")),
        "no word that the session was not checked:\n{said}"
    );
}

/// A policy in audit mode (the roll-out's), and one that enforces (the
/// client's): two files in the sandbox.
fn audit_and_enforce_policies(sb: &Sandbox) -> (PathBuf, PathBuf) {
    let audit = sb.write("audit.toml", "version = 1\nmode = \"audit\"\n");
    let enforce = sb.write("enforce.toml", "version = 1\n");
    (audit, enforce)
}

/// `envwrap mux-env --mux screen --server NAME --policy POLICY`: what it says.
fn mux_env_says(sb: &Sandbox, name: &str, policy: &std::path::Path) -> String {
    let mut c = Session::in_screendir(sb, envwrap_bin());
    c.args(["mux-env", "--mux", "screen", "--server", name, "--policy"])
        .arg(policy);
    c.run().stdout_str()
}

/// A session started during an audit roll-out: under the shim, in audit mode,
/// which changes nothing, so its server holds every credential of the shell
/// that started it. It maps libenvshim.so, but it is not governed: a client
/// under an enforcing shim has it cleaned like a foreign session, its new
/// window holds no token, and `envwrap mux-env` says why it is treated as
/// foreign (issue 47, item 2).
#[test]
fn a_session_under_an_audit_mode_shim_is_cleaned_like_a_foreign_one() {
    let sb = Sandbox::new("screen_audit");
    let (audit, enforce) = audit_and_enforce_policies(&sb);
    let s = Session::start(&sb, |c| {
        c.with_shim().with_policy(&audit).allow_secrets_in_output();
    });
    let pid = s.pid().expect("the session's pid");
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    let gh = sb.secrets().value("GH_TOKEN").as_bytes();
    assert!(
        environ.windows(gh.len()).any(|w| w == gh),
        "the audit-mode session does not hold GH_TOKEN: nothing to show"
    );
    let under_audit = mux_env_says(&sb, &s.name, &audit);
    assert!(
        under_audit.contains("in audit mode")
            && under_audit.contains("treated as a session without envshim")
            && !under_audit.contains("which filters every process it starts"),
        "{under_audit}"
    );
    let under_enforce = mux_env_says(&sb, &s.name, &enforce);
    assert!(
        under_enforce.contains("on a policy that is not this run's")
            && under_enforce.contains("its environment holds GH_TOKEN"),
        "{under_enforce}"
    );

    let file = dump(&sb, "window");
    let w = window(&file);
    let args: Vec<&str> = w.iter().map(String::as_str).collect();
    let mut client = s.client_under_shim(&args);
    client.with_policy(&enforce).env_secrets();
    let out = client.expect_success();
    assert_clean_dump(&sb, &file, "a window an enforcing client opened");
    let said = out.stderr_str();
    assert!(
        said.lines()
            .any(|l| l.starts_with("envshim: screen session") && l.contains("removed GH_TOKEN")),
        "the client did not say what it removed:\n{said}"
    );
}

/// A session under a shim that enforces another policy: the client cannot
/// prove it at least as strict as its own, so it is cleaned too.
#[test]
fn a_session_under_a_shim_on_another_policy_is_cleaned_like_a_foreign_one() {
    let sb = Sandbox::new("screen_other_policy");
    let (_, enforce) = audit_and_enforce_policies(&sb);
    let lenient = sb.write("lenient.toml", PERMISSIVE_POLICY);
    let s = Session::start(&sb, |c| {
        c.with_shim()
            .with_policy(&lenient)
            .allow_secrets_in_output();
    });
    let file = dump(&sb, "window");
    let w = window(&file);
    let args: Vec<&str> = w.iter().map(String::as_str).collect();
    let mut client = s.client_under_shim(&args);
    client.with_policy(&enforce);
    client.expect_success();
    assert_clean_dump(&sb, &file, "a window an enforcing client opened");
    let said = mux_env_says(&sb, &s.name, &enforce);
    assert!(
        said.contains("on a policy that is not this run's")
            && !said.contains("which filters every process it starts"),
        "{said}"
    );
}

/// The control: a session under a shim that enforces the client's very policy
/// is still trusted: the client leaves it alone (it says nothing removed), the
/// session's shim keeps every token out of the new window, and `envwrap
/// mux-env` says it filters every process it starts.
#[test]
fn a_session_under_a_shim_enforcing_the_same_policy_is_still_trusted() {
    let sb = Sandbox::new("screen_same_policy");
    let (_, enforce) = audit_and_enforce_policies(&sb);
    let s = Session::start(&sb, |c| {
        c.with_shim().with_policy(&enforce);
    });
    let file = dump(&sb, "window");
    let w = window(&file);
    let args: Vec<&str> = w.iter().map(String::as_str).collect();
    let mut client = s.client_under_shim(&args);
    client.with_policy(&enforce).env_secrets();
    let out = client.expect_success();
    assert_clean_dump(&sb, &file, "a window of a governed session");
    assert!(
        !out.stderr_str().contains("removed"),
        "a governed session was cleaned:\n{}",
        out.stderr_str()
    );
    let said = mux_env_says(&sb, &s.name, &enforce);
    assert!(
        said.contains("runs libenvshim.so, which filters every process it starts"),
        "{said}"
    );
}
