//! Whatever the server holds: a tmux server started earlier, without envshim, by a
//! shell that held credentials, gives them to every pane and every command it
//! runs. A tmux client under the shim or under envwrap has that server cleaned
//! before its command runs (`envwrap mux-env --fix --skip-policed`, ADR 0014), so
//! the processes it starts there hold none of them: through envwrap, through a
//! parent under the shim, and as the first process under the shim; for every
//! command that starts a process in the server. And `envwrap tmux-env` (the other
//! name of `mux-env`) reports and fixes such servers by hand. Real tmux on its
//! own `-L` socket, seeded fake tokens; every output is checked for them by the
//! harness.

use envshim_e2e::*;
use std::path::PathBuf;
use std::time::Duration;

/// A name that says nothing, holding a token by its shape only.
const INNOCENT: &str = "BUILD_NOTE";

/// Start the server the way a user's shell did before envshim: with every seeded
/// credential in its environment, and one more under an innocent name.
fn foreign_server(sb: &Sandbox) {
    let mut c = sb.tmux();
    c.args(["new-session", "-d", "-s", "first", "sleep 600"])
        .env_secrets()
        .env(INNOCENT, sb.secrets().value("GH_TOKEN"))
        .allow_secrets_in_output();
    c.expect_success();
    let held = sb.tmux_environment(None, true);
    assert!(
        held.is_set("GH_TOKEN") && held.is_set(INNOCENT),
        "the control server does not hold the credentials"
    );
}

/// Where a pane writes its environment.
fn dump(sb: &Sandbox, name: &str) -> PathBuf {
    sb.join(format!("{name}.env"))
}

/// [`envshim_e2e::assert_clean_dump`], with the innocent name too.
#[track_caller]
fn assert_clean_dump(sb: &Sandbox, file: &std::path::Path, what: &str) {
    envshim_e2e::assert_clean_dump(sb, file, what, &[INNOCENT]);
}

/// A tmux client run by a parent under the shim (a shell that execs it).
fn client_under_shim(sb: &Sandbox, args: &[&str]) -> TestCommand {
    let mut c = sb.cmd("/bin/sh");
    c.args(["-c", "exec \"$@\"", "sh", "tmux"])
        .args(sb.tmux_args())
        .args(args)
        .with_shim();
    c
}

/// A tmux client run by envwrap without the shim in tmux: envwrap checks the
/// server itself.
fn client_under_envwrap(sb: &Sandbox, args: &[&str]) -> TestCommand {
    let mut c = sb.cmd(envwrap_bin());
    c.args(["--no-preload", "--", "tmux"])
        .args(sb.tmux_args())
        .args(args);
    c
}

#[test]
fn envwrap_with_loop_toml_keeps_a_new_session_on_a_foreign_server_clean() {
    let sb = Sandbox::new("tmux_server_envwrap");
    foreign_server(&sb);
    let policy = stage_example(&sb, "loop.toml");
    let file = dump(&sb, "second");
    let mut c = sb.cmd(envwrap_bin());
    c.arg("--policy")
        .arg(&policy)
        .args(["--", "tmux"])
        .args(sb.tmux_args())
        .args(["new-session", "-d", "-s", "second"])
        .arg(format!("env > {}; sleep 600", file.display()));
    let out = c.expect_success();
    assert_clean_dump(&sb, &file, "the second session's pane");
    let said = out.stderr_str();
    assert!(
        said.contains("removed GH_TOKEN from the global environment"),
        "envwrap did not say what it removed:\n{said}"
    );
    assert!(!sb.tmux_environment(None, false).is_set("GH_TOKEN"));
}

#[test]
fn envwrap_without_the_shim_cleans_the_server_itself() {
    let sb = Sandbox::new("tmux_server_envwrap_nopreload");
    foreign_server(&sb);
    let file = dump(&sb, "w");
    let mut c = sb.cmd(envwrap_bin());
    c.args(["--no-preload", "--", "tmux"])
        .args(sb.tmux_args())
        .args(["new-window", "-d", "-t", "first"])
        .arg(format!("env > {}; sleep 600", file.display()));
    c.expect_success();
    assert_clean_dump(&sb, &file, "the new window's pane");
}

#[test]
fn the_headline_command_against_a_foreign_server_as_the_first_process() {
    let sb = Sandbox::new("tmux_server_first");
    foreign_server(&sb);
    let file = dump(&sb, "split");
    let mut c = sb.tmux();
    c.args(["split-window", "-d", "-t", "first"])
        .arg(format!("env > {}; sleep 600", file.display()))
        .with_shim()
        .env_secrets();
    let out = c.expect_success();
    assert_clean_dump(&sb, &file, "the split pane");
    // The user ran tmux under the shim: the lines are the shim's.
    let lines = out.stderr_str();
    assert!(
        lines
            .lines()
            .any(|l| l.starts_with("envshim: ") && l.contains("removed GH_TOKEN")),
        "{lines}"
    );
}

/// Every command that starts a process in the server, in its forms, by a client
/// whose parent runs under the shim. Each form writes its dump from a process the
/// server started.
#[test]
fn every_command_that_starts_a_process_in_a_foreign_server_gets_a_clean_one() {
    let forms: &[(&str, &[&str])] = &[
        (
            "new-window, one argument",
            &["new-window", "-d", "-t", "first", "env > {f}; sleep 600"],
        ),
        (
            "new-window, many arguments",
            &[
                "new-window",
                "-d",
                "-t",
                "first",
                "sh",
                "-c",
                "env > {f}; sleep 600",
            ],
        ),
        (
            "split-window",
            &["split-window", "-d", "-t", "first", "env > {f}; sleep 600"],
        ),
        (
            "respawn-pane -k",
            &["respawn-pane", "-k", "-t", "first", "env > {f}; sleep 600"],
        ),
        (
            "respawn-window -k",
            &[
                "respawn-window",
                "-k",
                "-t",
                "first",
                "env > {f}; sleep 600",
            ],
        ),
        ("run-shell", &["run-shell", "-t", "first", "env > {f}"]),
        (
            "if-shell",
            &["if-shell", "-t", "first", "env > {f}", "", ""],
        ),
        (
            "set-hook, then a command that fires it",
            &[
                "set-hook",
                "-g",
                "after-rename-window",
                "run-shell 'env > {f}'",
                ";",
                "rename-window",
                "-t",
                "first",
                "renamed",
            ],
        ),
        (
            "a sequence",
            &[
                "display-message",
                "-p",
                "x",
                ";",
                "neww",
                "-d",
                "env > {f}; sleep 600",
            ],
        ),
    ];
    for (what, form) in forms {
        for through_envwrap in [false, true] {
            let sb = Sandbox::new("tmux_server_forms");
            foreign_server(&sb);
            let file = dump(&sb, "form");
            let args: Vec<String> = form
                .iter()
                .map(|a| a.replace("{f}", &file.display().to_string()))
                .collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            if through_envwrap {
                client_under_envwrap(&sb, &args).expect_success();
            } else {
                client_under_shim(&sb, &args).expect_success();
            }
            let how = if through_envwrap {
                "envwrap"
            } else {
                "the shim"
            };
            assert_clean_dump(&sb, &file, &format!("{what}, through {how}"));
        }
    }
}

/// tmux starts a pipe-pane command with the server's own process environment,
/// which no client can change: for a foreign server the client says so, naming
/// the socket and the variables, never a value.
#[test]
fn pipe_pane_on_a_foreign_server_is_said_to_be_out_of_reach() {
    let sb = Sandbox::new("tmux_server_pipe_foreign");
    foreign_server(&sb);
    let out =
        client_under_shim(&sb, &["pipe-pane", "-t", "first", "cat > /dev/null"]).expect_success();
    let said = out.stderr_str();
    assert!(
        said.contains("its own environment holds")
            && said.contains("GH_TOKEN")
            && said.contains("pipe-pane")
            && said.contains(sb.tmux_socket()),
        "no warning about the server's own environment:\n{said}"
    );
}

#[test]
fn pipe_pane_on_a_policed_server_gets_a_clean_process() {
    let sb = Sandbox::new("tmux_server_pipe_policed");
    let mut c = sb.tmux();
    c.args(["new-session", "-d", "-s", "first", "sleep 600"])
        .with_shim()
        .env_secrets();
    c.expect_success();
    let file = dump(&sb, "pipe");
    let arg = format!("env > {}; cat > /dev/null", file.display());
    let out = client_under_shim(&sb, &["pipe-pane", "-t", "first", &arg]).expect_success();
    assert_clean_dump(&sb, &file, "the pipe-pane command");
    assert!(
        !out.stderr_str().contains("envwrap"),
        "{}",
        out.stderr_str()
    );
}

#[test]
fn a_pane_with_no_command_runs_the_default_command_clean() {
    let sb = Sandbox::new("tmux_server_default");
    foreign_server(&sb);
    let file = dump(&sb, "default");
    sb.tmux()
        .args(["set-option", "-g", "default-command"])
        .arg(format!("env > {}; sleep 600", file.display()))
        .expect_success();
    client_under_shim(&sb, &["new-window", "-d", "-t", "first"]).expect_success();
    assert_clean_dump(&sb, &file, "the default command's pane");
}

#[test]
fn a_control_mode_client_creates_a_clean_session() {
    let sb = Sandbox::new("tmux_server_control");
    foreign_server(&sb);
    let file = dump(&sb, "control");
    // A control client whose stdin ends at once may leave before its command
    // runs (tmux's own race): its stdin stays open for a second.
    let mut c = sb.cmd("/bin/sh");
    c.args(["-c", "sleep 1 | tmux \"$@\"", "sh"])
        .args(sb.tmux_args())
        .args(["-C", "new-session", "-d", "-s", "ctl"])
        .arg(format!("env > {}; sleep 600", file.display()))
        .with_shim();
    c.expect_success();
    assert_clean_dump(&sb, &file, "the control client's session");
}

#[test]
fn a_nested_client_in_a_pane_of_a_policed_server_leaves_it_alone() {
    let sb = Sandbox::new("tmux_server_nested");
    let file = dump(&sb, "nested");
    let ready = sb.join("ready");
    // The server runs the shim (the headline command): its panes do too.
    let inner = format!(
        "tmux new-window -d 'env > {}; sleep 600'; touch {}; sleep 600",
        file.display(),
        ready.display()
    );
    let mut c = sb.tmux();
    c.args(["new-session", "-d", "-s", "outer"])
        .arg(inner)
        .with_shim()
        .env_secrets();
    let out = c.expect_success();
    assert!(
        sb.wait_for(|| ready.exists(), Duration::from_secs(10)),
        "the nested client did not finish"
    );
    assert_clean_dump(&sb, &file, "the nested client's window");
    assert!(
        !out.stderr_str().contains("removed"),
        "a policed server was changed"
    );
}

#[test]
fn the_tool_reports_a_foreign_server_then_fixes_it() {
    let sb = Sandbox::new("tmux_server_tool");
    foreign_server(&sb);
    // A hidden variable (tmux 3.2's `-h`): given to no process, but kept and
    // expanded in the server's commands.
    let hidden = sb.secrets().value("OPENAI_API_KEY").to_string();
    sb.tmux()
        .args(["set-environment", "-gh", "OPENAI_API_KEY", &hidden])
        .allow_secrets_in_output()
        .expect_success();
    let socket = sb.tmux_socket_path();
    let report = sb
        .cmd(envwrap_bin())
        .args(["tmux-env", "-S"])
        .arg(&socket)
        .expect_exit(1);
    let text = report.stdout_str();
    for name in ["GH_TOKEN", "AWS_ACCESS_KEY_ID", INNOCENT, "OPENAI_API_KEY"] {
        assert!(
            text.contains(&format!("the global environment holds {name}")),
            "{name} not reported:\n{text}"
        );
    }
    assert!(
        text.contains("pane %0") && text.contains("restart the pane"),
        "the pane that holds them is not listed:\n{text}"
    );

    let fixed = sb
        .cmd(envwrap_bin())
        .args(["tmux-env", "--fix", "-L", sb.tmux_socket()])
        .expect_exit(1);
    let said = fixed.stderr_str();
    assert!(
        said.contains("removed GH_TOKEN from the global environment"),
        "{said}"
    );
    let global = sb.tmux_environment(None, false);
    for name in sb.secrets().names().chain([INNOCENT]) {
        assert!(
            !global.is_set(name),
            "{name} is still in the global environment"
        );
    }
    let listed = sb.tmux().args(["show-environment", "-gh"]).run();
    assert!(
        !listed.stdout_str().contains("OPENAI_API_KEY"),
        "the hidden variable is still in the global environment"
    );
    // The pane still holds them: only a restart removes them, and it is said.
    assert!(fixed.stdout_str().contains("restart the pane"));

    let json = sb
        .cmd(envwrap_bin())
        .args(["tmux-env", "--json", "-L", sb.tmux_socket()])
        .expect_exit(1);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("one JSON object");
    let held = v["servers"][0]["held"]
        .as_array()
        .expect("a list of findings");
    assert!(held.iter().any(|h| h["place"]["pane"] == "%0"), "{v}");
}

#[test]
fn a_client_that_cannot_check_its_server_says_so_once() {
    let sb = Sandbox::new("tmux_server_no_envwrap");
    foreign_server(&sb);
    let mut c = sb.tmux();
    c.args(["new-window", "-d", "-t", "first", "sleep 600"])
        .with_shim()
        .env("ENVSHIM_ENVWRAP", sb.join("no-envwrap-here"));
    let out = c.expect_success();
    let lines = shim_lines(&out.stderr);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("was not checked") && lines[0].contains(sb.tmux_socket()),
        "{lines:?}"
    );
}

#[test]
fn respawn_pane_without_a_command_restarts_it_clean() {
    let sb = Sandbox::new("tmux_server_respawn");
    foreign_server(&sb);
    let before = sb.pane_pid("first");
    client_under_shim(&sb, &["respawn-pane", "-k", "-t", "first"]).expect_success();
    let mut after = before;
    // The new pane's process is the server's fork until it execs the pane's
    // command: until then its environ is the server's own process
    // environment (which a foreign server's is, tokens and all), not what
    // the server gave the pane. Wait for the exec.
    let exec_done = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .is_ok_and(|comm| !comm.trim_end().starts_with("tmux"))
    };
    assert!(
        sb.wait_for(
            || {
                after = sb.pane_pid("first");
                after != before && exec_done(after)
            },
            Duration::from_secs(10)
        ),
        "the pane was not respawned"
    );
    let environ = try_proc_environ_raw(after)
        .expect("the pane's environ")
        .concat();
    sb.secrets()
        .assert_absent("the respawned pane's environ", &environ);
}

/// A popup needs an attached client: one runs under script(1) on a pty.
#[test]
fn display_popup_runs_its_command_clean() {
    let sb = Sandbox::new("tmux_server_popup");
    foreign_server(&sb);
    let attach = format!("tmux {} attach -t first", sb.tmux_args().join(" "));
    let client = sb
        .cmd("script")
        .args(["-qfc", &attach, "/dev/null"])
        .env("TERM", "xterm")
        .spawn_background();
    assert!(
        sb.wait_for(
            || {
                let o = sb.tmux().args(["list-clients", "-F", "x"]).run();
                o.stdout_str().contains('x')
            },
            Duration::from_secs(10)
        ),
        "no client attached"
    );
    let file = dump(&sb, "popup");
    let arg = format!("env > {}", file.display());
    client_under_shim(&sb, &["display-popup", "-t", "first", "-E", &arg]).expect_success();
    assert_clean_dump(&sb, &file, "the popup's command");
    drop(client);
}

#[test]
fn scan_reports_what_a_foreign_server_would_give_new_panes() {
    let sb = Sandbox::new("tmux_server_scan");
    foreign_server(&sb);
    let server = sb.server_pid().expect("a server");
    let out = sb
        .cmd(envwrap_bin())
        .args(["scan", "--pid", &server.to_string(), "-L", sb.tmux_socket()])
        .expect_exit(1);
    let text = out.stdout_str();
    for name in ["GH_TOKEN", INNOCENT] {
        assert!(
            text.lines().any(|l| l
                .contains(&format!("tmux server {}", sb.tmux_socket_path().display()))
                && l.contains(&format!("the global environment holds {name}"))),
            "{name} in the server's global environment is not reported:\n{text}"
        );
    }
}

/// loop.toml strips every name its env file declares and keeps LOOP_TRACKER_URL with
/// the file's value: a server holding an old value holds a stale one, reported and
/// left alone; a declared name is removed.
#[test]
fn the_tool_reports_stale_passthrough_values_and_strips_declared_names() {
    let sb = Sandbox::new("tmux_server_stale");
    let policy = stage_example(&sb, "loop.toml");
    let mut c = sb.tmux();
    c.args(["new-session", "-d", "-s", "first", "sleep 600"])
        .env("LOOP_TRACKER_URL", "https://old.example.invalid/1")
        .env("JIRA_BASE_URL", "https://jira.example.invalid");
    c.expect_success();
    let out = sb
        .cmd(envwrap_bin())
        .args(["tmux-env", "--fix", "--policy"])
        .arg(&policy)
        .args(["-L", sb.tmux_socket()])
        .expect_exit(1);
    let (said, text) = (out.stderr_str(), out.stdout_str());
    assert!(
        said.contains("removed JIRA_BASE_URL from the global environment"),
        "{said}"
    );
    assert!(text.contains("holds a stale LOOP_TRACKER_URL"), "{text}");
    let global = sb.tmux_environment(None, false);
    assert!(!global.is_set("JIRA_BASE_URL"));
    assert_eq!(
        global.get("LOOP_TRACKER_URL"),
        Some("https://old.example.invalid/1"),
        "a stale value is reported, not changed"
    );
}

/// The tool is `tmux-env`, so that `envwrap [OPTION]... tmux ...` still runs tmux,
/// as env(1) would.
#[test]
fn envwrap_runs_tmux_given_without_dashdash() {
    let sb = Sandbox::new("tmux_server_plain");
    let policy = stage_example(&sb, "loop.toml");
    let o = sb
        .cmd(envwrap_bin())
        .arg("--policy")
        .arg(&policy)
        .args(["tmux", "-V"])
        .expect_success();
    assert!(o.stdout_str().starts_with("tmux "), "{}", o.report());
}

/// A server started the headline way runs the shim: its own environment may keep
/// names whose values self-scrub overwrote, and its shim filters every exec, so
/// the tool reports no credential there; and it reads every server -L and -S name.
#[test]
fn a_server_under_the_shim_is_no_finding_and_every_named_server_is_read() {
    let sb = Sandbox::new("tmux_server_policed_report");
    let mut c = sb.tmux();
    c.args(["new-session", "-d", "-s", "work", "sleep 600"])
        .with_shim()
        .env_secrets();
    c.expect_success();
    // (It may still list a name the policy strips from its global environment:
    // LD_LIBRARY_PATH, which cargo sets for the tests, is one.)
    let o = sb
        .cmd(envwrap_bin())
        .args(["tmux-env", "-L", sb.tmux_socket()])
        .run();
    let text = o.stdout_str();
    assert!(text.contains("runs libenvshim.so"), "{text}");
    for name in sb.secrets().names() {
        assert!(
            !text.contains(name),
            "{name} reported on a policed server:\n{text}"
        );
    }
    assert!(!text.contains("own environment"), "a false alarm:\n{text}");

    // Two servers named at once: both are read.
    let other = sb.join("other.sock");
    sb.cmd("tmux")
        .arg("-S")
        .arg(&other)
        .args(["-f", "/dev/null", "new-session", "-d", "sleep 600"])
        .expect_success();
    let o = sb
        .cmd(envwrap_bin())
        .args(["tmux-env", "-L", sb.tmux_socket(), "-S"])
        .arg(&other)
        .run();
    let text = o.stdout_str();
    assert!(
        text.contains(&sb.tmux_socket_path().display().to_string())
            && text.contains(&other.display().to_string()),
        "{text}"
    );
    sb.cmd("tmux")
        .arg("-S")
        .arg(&other)
        .arg("kill-server")
        .run();
}

/// Run `form` (with `{f}` standing for the dump's path) by a client whose parent
/// runs under the shim, on a new foreign server, and check what the server
/// started. `prepare` runs first, as a client without envshim.
#[track_caller]
fn assert_form_is_clean(what: &str, prepare: &[&str], form: &[&str]) {
    let sb = Sandbox::new("tmux_server_denied");
    foreign_server(&sb);
    let file = dump(&sb, "form");
    let with_file = |form: &[&str]| -> Vec<String> {
        form.iter()
            .map(|a| a.replace("{f}", &file.display().to_string()))
            .collect()
    };
    if !prepare.is_empty() {
        sb.tmux().args(with_file(prepare)).expect_success();
    }
    let args = with_file(form);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    client_under_shim(&sb, &args).expect_success();
    assert_clean_dump(&sb, &file, what);
}

/// The aliases of the commands that open a pane, as the tmux under test names
/// them: its command table (`list-commands`) and its default `command-alias`.
fn pane_opening_aliases() -> Vec<String> {
    let sb = Sandbox::new("tmux_server_aliases");
    sb.tmux()
        .args(["new-session", "-d", "sleep 60"])
        .expect_success();
    let table = sb
        .tmux()
        .args([
            "list-commands",
            "-F",
            "#{command_list_name} #{command_list_alias}",
        ])
        .expect_success()
        .stdout_str();
    let aliases = sb
        .tmux()
        .args(["show-options", "-sv", "command-alias"])
        .expect_success()
        .stdout_str();
    let opens = |command: &str| command == "split-window" || command == "new-window";
    let mut found: Vec<String> = table
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(name, alias)| opens(name) && !alias.is_empty())
        .map(|(_, alias)| alias.to_string())
        .collect();
    found.extend(
        aliases
            .lines()
            .filter_map(|l| l.split_once('='))
            .filter(|(_, to)| opens(to.split(' ').next().unwrap_or("")))
            .map(|(alias, _)| alias.to_string()),
    );
    assert!(
        found.iter().any(|a| a == "splitp") && found.iter().any(|a| a == "neww"),
        "the tmux under test names no aliases: {found:?}"
    );
    found
}

/// Deny by default: a command that is not proven harmless has the server
/// cleaned, whatever it is called. Every alias the real tmux gives the commands
/// that open a pane, a unique prefix, and a `command-alias` set by a client
/// without envshim.
#[test]
fn every_alias_prefix_and_command_alias_of_a_pane_gets_a_clean_one() {
    for alias in pane_opening_aliases() {
        let what = format!("tmux {alias}");
        assert_form_is_clean(
            &what,
            &[],
            &[&alias, "-d", "-t", "first", "env > {f}; sleep 600"],
        );
    }
    assert_form_is_clean(
        "a unique prefix",
        &[],
        &["split-w", "-d", "-t", "first", "env > {f}; sleep 600"],
    );
    assert_form_is_clean(
        "a command-alias",
        &[
            "set-option",
            "-s",
            "command-alias[90]",
            "spawn=new-window -d",
        ],
        &["spawn", "-t", "first", "env > {f}; sleep 600"],
    );
}

/// A format's `#()` job runs in the server, with its global environment: in a
/// command that prints, in a message, through an option a format expands. A
/// client under the shim has the server cleaned before such a command.
#[test]
fn a_job_in_a_format_of_a_harmless_command_has_the_server_cleaned_first() {
    let forms: &[(&str, &[&str], &[&str])] = &[
        ("ls -F", &[], &["list-sessions", "-F", "#(true)"]),
        ("display -p", &[], &["display", "-p", "x #(true)"]),
        (
            "display #{E:}",
            &["set-option", "-g", "@job", "#(true)"],
            &["display-message", "-p", "#{E:@job}"],
        ),
    ];
    for (what, prepare, form) in forms {
        let sb = Sandbox::new("tmux_server_format_job");
        foreign_server(&sb);
        if !prepare.is_empty() {
            sb.tmux().args(*prepare).expect_success();
        }
        let out = client_under_shim(&sb, form).expect_success();
        assert!(
            !sb.tmux_environment(None, false).is_set("GH_TOKEN"),
            "{what}: the server was not cleaned"
        );
        assert!(
            out.stderr_str().contains("removed GH_TOKEN"),
            "{what}: {}",
            out.stderr_str()
        );
    }
}

/// And the job itself holds nothing. tmux kills a command client's format jobs
/// when the client leaves, often before they run: the job ignores the signal,
/// and the client runs until one has written its dump.
#[test]
fn a_format_job_of_a_client_under_the_shim_holds_no_token() {
    let sb = Sandbox::new("tmux_server_format_job_dump");
    foreign_server(&sb);
    let file = dump(&sb, "job");
    let job = format!("#(trap '' TERM; env > {})", file.display());
    let written = (0..40).any(|_| {
        client_under_shim(&sb, &["list-sessions", "-F", &job]).expect_success();
        sb.wait_for(
            || std::fs::metadata(&file).is_ok_and(|m| m.len() > 0),
            Duration::from_millis(300),
        )
    });
    assert!(written, "no format job wrote its dump in 40 runs");
    assert_clean_dump(&sb, &file, "a format job");
}

/// The other side of deny by default: a command proven harmless leaves the
/// server alone (no check runs, so the foreign server still holds what it held),
/// which is what keeps a status line's `tmux display` cheap.
#[test]
fn a_harmless_command_leaves_a_foreign_server_alone() {
    let sb = Sandbox::new("tmux_server_harmless");
    foreign_server(&sb);
    let out =
        client_under_shim(&sb, &["display-message", "-p", "#{session_name}"]).expect_success();
    assert_eq!(out.stdout_str().trim(), "first");
    assert!(
        sb.tmux_environment(None, true).is_set("GH_TOKEN"),
        "a harmless command had the server cleaned"
    );
    client_under_shim(&sb, &["splitp", "-d", "-t", "first", "sleep 60"]).expect_success();
    assert!(
        !sb.tmux_environment(None, false).is_set("GH_TOKEN"),
        "splitp did not have the server cleaned"
    );
}

/// The shim's own variables are the shim's to set afresh at every exec: a
/// server that holds them (a pane's shell exported them, a user copied them)
/// is not told to lose them, and `--fix` leaves them, `LD_PRELOAD` with them.
#[test]
fn the_shims_own_variables_are_no_finding() {
    let sb = Sandbox::new("tmux_server_own_vars");
    // cargo's own LD_LIBRARY_PATH would be a finding of its own.
    sb.tmux()
        .env_remove("LD_LIBRARY_PATH")
        .args(["new-session", "-d", "-s", "s", "sleep 300"])
        .expect_success();
    let shim = shim_so();
    let own = [
        ("ENVSHIM_HINT", "1-0123456789abcdef".to_string()),
        ("ENVSHIM_POLICY", ":builtin".to_string()),
        ("LD_PRELOAD", shim.display().to_string()),
    ];
    for (name, value) in &own {
        sb.tmux()
            .args(["set-environment", "-g", name, value])
            .expect_success();
    }
    let mut c = sb.cmd(envwrap_bin());
    c.args(["tmux-env", "--fix", "-L", sb.tmux_socket()]);
    let out = c.expect_success();
    let said = format!("{}{}", out.stdout_str(), out.stderr_str());
    for (name, _) in &own {
        assert!(!said.contains(name), "{name} reported:\n{said}");
        assert!(
            sb.tmux_environment(None, false).is_set(name),
            "{name} removed"
        );
    }
}

#[test]
fn a_server_on_a_socket_path_that_is_not_utf8_is_read_and_fixed() {
    use std::os::unix::ffi::OsStringExt;
    let sb = Sandbox::new("tmux_server_bytes_socket");
    // A path is bytes: one read lossily (U+FFFD for the 0xff) names another file.
    let socket = sb.join(std::ffi::OsString::from_vec(b"sock-\xff".to_vec()));
    let tmux = |c: &mut TestCommand| {
        c.arg("-S").arg(&socket).args(["-f", "/dev/null"]);
    };
    let mut start = sb.cmd("tmux");
    tmux(&mut start);
    start
        .args(["new-session", "-d", "sleep 600"])
        .env_secrets()
        .allow_secrets_in_output();
    start.expect_success();
    let report = sb
        .cmd(envwrap_bin())
        .args(["tmux-env", "-S"])
        .arg(&socket)
        .expect_exit(1);
    let text = report.stdout_str();
    let kill = || {
        let mut k = sb.cmd("tmux");
        tmux(&mut k);
        k.arg("kill-server").run();
    };
    if !text.contains("the global environment holds GH_TOKEN") {
        kill();
        report.fail("the server on the socket was not read");
    }
    let fixed = sb
        .cmd(envwrap_bin())
        .args(["tmux-env", "--fix", "-S"])
        .arg(&socket)
        .run();
    let mut show = sb.cmd("tmux");
    tmux(&mut show);
    let global = show.args(["show-environment", "-g", "GH_TOKEN"]).run();
    kill();
    fixed.check(
        global.stdout_str().trim() == "-GH_TOKEN" || !global.status.success(),
        "GH_TOKEN is still in the global environment",
    );
}

/// A policy in audit mode (the roll-out's), and one that enforces (the
/// client's): two files in the sandbox.
fn audit_and_enforce_policies(sb: &Sandbox) -> (PathBuf, PathBuf) {
    let audit = sb.write("audit.toml", "version = 1\nmode = \"audit\"\n");
    let enforce = sb.write("enforce.toml", "version = 1\n");
    (audit, enforce)
}

/// `envwrap mux-env -L SOCKET --policy POLICY`: what it says of the server.
fn mux_env_says(sb: &Sandbox, policy: &std::path::Path) -> String {
    let out = sb
        .cmd(envwrap_bin())
        .args(["mux-env", "-L", sb.tmux_socket(), "--policy"])
        .arg(policy)
        .run();
    out.stdout_str()
}

/// A server started during an audit roll-out: under the shim, in audit mode,
/// which changes nothing, so it holds every credential of the shell that
/// started it. It maps libenvshim.so, but it is not governed: a client under
/// an enforcing shim has it cleaned like a foreign server, and its new pane
/// holds no token; `envwrap mux-env` says why it is treated as foreign
/// (issue 47, item 2).
#[test]
fn a_server_under_an_audit_mode_shim_is_cleaned_like_a_foreign_one() {
    let sb = Sandbox::new("tmux_server_audit");
    let (audit, enforce) = audit_and_enforce_policies(&sb);
    let mut c = sb.tmux();
    c.args(["new-session", "-d", "-s", "first", "sleep 600"])
        .with_shim()
        .with_policy(&audit)
        .env_secrets()
        .allow_secrets_in_output();
    c.expect_success();
    assert!(
        sb.tmux_environment(None, true).is_set("GH_TOKEN"),
        "the audit-mode server does not hold GH_TOKEN: nothing to show"
    );
    // envwrap mux-env tells the truth about it, under either policy.
    let under_audit = mux_env_says(&sb, &audit);
    assert!(
        under_audit.contains("in audit mode")
            && under_audit.contains("treated as a server without envshim")
            && !under_audit.contains("which filters every process it starts"),
        "{under_audit}"
    );
    let under_enforce = mux_env_says(&sb, &enforce);
    assert!(
        under_enforce.contains("on a policy that is not this run's")
            && under_enforce.contains("treated as a server without envshim")
            && under_enforce.contains("the global environment holds GH_TOKEN"),
        "{under_enforce}"
    );

    let file = dump(&sb, "window");
    let mut client = client_under_shim(
        &sb,
        &[
            "new-window",
            "-d",
            "-t",
            "first",
            &format!("env > {}; sleep 600", file.display()),
        ],
    );
    client.with_policy(&enforce).env_secrets();
    let out = client.expect_success();
    assert_clean_dump(&sb, &file, "a pane an enforcing client opened");
    let said = out.stderr_str();
    assert!(
        said.lines()
            .any(|l| l.starts_with("envshim: ") && l.contains("removed GH_TOKEN")),
        "the client did not say what it removed:\n{said}"
    );
    // The pane's own process, read by /proc too.
    let pane = sb.pane_pid("first:1");
    let environ = try_proc_environ_raw(pane)
        .expect("the pane's environ")
        .concat();
    sb.secrets()
        .assert_absent("the new pane's environ", &environ);
}

/// A server under a shim that enforces another policy: the client cannot
/// prove it at least as strict as its own, so it is cleaned too.
#[test]
fn a_server_under_a_shim_on_another_policy_is_cleaned_like_a_foreign_one() {
    let sb = Sandbox::new("tmux_server_other_policy");
    let (_, enforce) = audit_and_enforce_policies(&sb);
    // Another policy that keeps what the client's refuses.
    let lenient = sb.write("lenient.toml", PERMISSIVE_POLICY);
    let mut c = sb.tmux();
    c.args(["new-session", "-d", "-s", "first", "sleep 600"])
        .with_shim()
        .with_policy(&lenient)
        .env_secrets()
        .allow_secrets_in_output();
    c.expect_success();
    let file = dump(&sb, "window");
    let mut client = client_under_shim(
        &sb,
        &[
            "new-window",
            "-d",
            "-t",
            "first",
            &format!("env > {}; sleep 600", file.display()),
        ],
    );
    client.with_policy(&enforce);
    client.expect_success();
    assert_clean_dump(&sb, &file, "a pane an enforcing client opened");
    let said = mux_env_says(&sb, &enforce);
    assert!(
        said.contains("on a policy that is not this run's")
            && !said.contains("which filters every process it starts"),
        "{said}"
    );
}

/// The control: a server under a shim that enforces the client's very policy
/// is still trusted. The client leaves it alone (a name the policy strips,
/// set in its global environment by a client without envshim, stays there:
/// nothing was cleaned), its shim keeps that name and every token out of the
/// new pane, and `envwrap mux-env` says it filters every process it starts.
#[test]
fn a_server_under_a_shim_enforcing_the_same_policy_is_still_trusted() {
    let sb = Sandbox::new("tmux_server_same_policy");
    let (_, enforce) = audit_and_enforce_policies(&sb);
    let mut c = sb.tmux();
    c.args(["new-session", "-d", "-s", "first", "sleep 600"])
        .with_shim()
        .with_policy(&enforce)
        .env_secrets();
    c.expect_success();
    sb.tmux()
        .args(["set-environment", "-g", "LD_AUDIT", "/nonexistent/audit.so"])
        .expect_success();
    let file = dump(&sb, "window");
    let mut client = client_under_shim(
        &sb,
        &[
            "new-window",
            "-d",
            "-t",
            "first",
            &format!("env > {}; sleep 600", file.display()),
        ],
    );
    client.with_policy(&enforce).env_secrets();
    let out = client.expect_success();
    assert_clean_dump(&sb, &file, "a pane of a governed server");
    let pane = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(!pane.contains("LD_AUDIT="), "the pane holds LD_AUDIT");
    assert!(
        !out.stderr_str().contains("removed"),
        "a governed server was cleaned:\n{}",
        out.stderr_str()
    );
    // (The policy does not self-scrub tmux: the server's global environment
    // still holds the tokens, which its shim keeps out of every pane.)
    assert!(
        sb.tmux_environment(None, true).is_set("LD_AUDIT"),
        "a governed server was cleaned"
    );
    let said = mux_env_says(&sb, &enforce);
    assert!(
        said.contains("runs libenvshim.so, which filters every process it starts"),
        "{said}"
    );
}

/// The same through envwrap without the shim in tmux (`--no-preload`): envwrap
/// checks the server itself, by the same rule.
#[test]
fn envwrap_cleans_a_server_under_an_audit_mode_shim_too() {
    let sb = Sandbox::new("tmux_server_audit_envwrap");
    let (audit, enforce) = audit_and_enforce_policies(&sb);
    let mut c = sb.tmux();
    c.args(["new-session", "-d", "-s", "first", "sleep 600"])
        .with_shim()
        .with_policy(&audit)
        .env_secrets()
        .allow_secrets_in_output();
    c.expect_success();
    let file = dump(&sb, "window");
    let mut client = sb.cmd(envwrap_bin());
    client
        .arg("--policy")
        .arg(&enforce)
        .args(["--no-preload", "--", "tmux"])
        .args(sb.tmux_args())
        .args(["new-window", "-d", "-t", "first"])
        .arg(format!("env > {}; sleep 600", file.display()));
    let out = client.expect_success();
    assert_clean_dump(&sb, &file, "a pane envwrap opened");
    assert!(
        out.stderr_str()
            .contains("removed GH_TOKEN from the global environment"),
        "{}",
        out.stderr_str()
    );
}
