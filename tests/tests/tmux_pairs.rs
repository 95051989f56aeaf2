//! tmux's `-e NAME=VALUE` pairs in the forms tmux's own getopt reads (clusters
//! such as `-de`, `-dPe`, `-deNAME=V`; commands chained with `;`), through the shim
//! and through envwrap, with real tmux on its own `-L` socket: a credential known
//! only by name (`JIRA_WEBHOOK_SECRET`, `*SECRET*`) reaches neither the server's
//! command line nor any session's environment, and the session is still created
//! detached (src/pairs.rs in envpolicy).

use envshim_e2e::*;

const NAME: &str = "JIRA_WEBHOOK_SECRET";

/// The tmux argv after the global options, for each form: the pair is `{pair}`.
fn forms(pair: &str) -> Vec<Vec<String>> {
    let s = |v: &[&str]| v.iter().map(|a| a.replace("{pair}", pair)).collect();
    vec![
        s(&["new-session", "-de", "{pair}", "-s", "s", "sleep 300"]),
        s(&["new-session", "-dPe", "{pair}", "-s", "s", "sleep 300"]),
        s(&["new-session", "-s", "s", "-de{pair}", "sleep 300"]),
        s(&[
            "new-session",
            "-d",
            "-s",
            "s",
            "sleep 300",
            ";",
            "new-window",
            "-de",
            "{pair}",
            "sleep 300",
        ]),
    ]
}

/// The server's command line and every session's environment hold neither the
/// name nor the value.
fn assert_clean_server(sb: &Sandbox, form: &[String], value: &str) {
    // The form holds the value: shown redacted.
    let form = sb.secrets().redact(format!("{form:?}"));
    let server = sb
        .server_pid()
        .unwrap_or_else(|| panic!("{form:?}: no server"));
    let cmdline = proc_cmdline(server).concat();
    assert!(
        !String::from_utf8_lossy(&cmdline).contains(value),
        "{form:?}: the value is in the server's command line"
    );
    let env = sb.tmux_environment(Some("s"), false);
    assert!(!env.is_set(NAME), "{form:?}: the session holds {NAME}");
    let global = sb.tmux_environment(None, false);
    assert!(
        !global.is_set(NAME),
        "{form:?}: the global environment holds {NAME}"
    );
}

#[test]
fn clustered_pairs_never_reach_the_server_through_the_shim() {
    for k in 0..forms("").len() {
        let sb = Sandbox::new("tmux_pairs_shim");
        let value = sb.secrets().value("JIRA_API_TOKEN").to_string();
        let form = &forms(&format!("{NAME}={value}"))[k];
        let mut c = sb.cmd("/bin/sh");
        c.args(["-c", "exec \"$@\"", "sh", "tmux"])
            .args(sb.tmux_args())
            .args(form)
            .with_shim();
        c.expect_success();
        assert_clean_server(&sb, form, &value);
    }
}

#[test]
fn clustered_pairs_never_reach_the_server_through_envwrap() {
    for k in 0..forms("").len() {
        let sb = Sandbox::new("tmux_pairs_envwrap");
        let value = sb.secrets().value("JIRA_API_TOKEN").to_string();
        let form = &forms(&format!("{NAME}={value}"))[k];
        let mut c = sb.cmd(envwrap_bin());
        c.args(["--", "tmux"]).args(sb.tmux_args()).args(form);
        c.expect_success();
        assert_clean_server(&sb, form, &value);
    }
}

/// tmux as the first process under the shim (the headline command): it scrubs
/// its own argv before `main`, where no argument can be removed. A refused pair
/// loses its `=` and its value there, so tmux sets no variable from it, as when
/// envwrap drops the pair: the session's environment holds neither the name nor
/// the value, and the server's command line not the value.
#[test]
fn a_refused_pair_given_to_tmux_itself_sets_no_variable() {
    for k in 0..forms("").len() {
        let sb = Sandbox::new("tmux_pairs_self");
        let value = sb.secrets().value("JIRA_API_TOKEN").to_string();
        let form = &forms(&format!("{NAME}={value}"))[k];
        sb.cmd("tmux")
            .args(sb.tmux_args())
            .args(form)
            .with_shim()
            .expect_success();
        assert_clean_server(&sb, form, &value);
    }
}

/// A pane's shell command that begins with an assignment the policy does not
/// pass (`tmux new -d 'JIRA_WEBHOOK_SECRET=... cmd'`) would keep the value in the
/// server's command line for its life. A policed parent and envwrap refuse the
/// exec, naming the pair (it cannot be dropped alone), and no server starts;
/// tmux under the shim as the first process overwrites the value in its own
/// argv before `main` (with `*`), and the pane still runs.
#[test]
fn an_assignment_in_a_pane_command_never_reaches_the_server() {
    let sb = Sandbox::new("tmux_shell_pair");
    let value = sb.secrets().value("JIRA_API_TOKEN").to_string();
    let out = sb.join("pane.out");
    let command = format!(
        "{NAME}={value} sh -c 'env > {}; exec sleep 300'",
        out.display()
    );
    let new = ["new-session", "-d", "-s", "s"];
    let refused = [
        sb.cmd(envwrap_bin())
            .args(["--", "tmux"])
            .args(sb.tmux_args())
            .args(new)
            .arg(&command)
            .run(),
        sb.cmd("/bin/sh")
            .args(["-c", "exec \"$@\"", "sh", "tmux"])
            .args(sb.tmux_args())
            .args(new)
            .arg(&command)
            .with_shim()
            .run(),
    ];
    for o in refused {
        assert_eq!(o.status.code(), Some(126), "{}", o.report());
        assert!(
            o.stderr_str()
                .contains(&format!("holds the pair {NAME} among other words")),
            "{}",
            o.report()
        );
        assert!(sb.server_pid().is_none(), "a server started");
    }
    sb.cmd("tmux")
        .args(sb.tmux_args())
        .args(new)
        .arg(&command)
        .with_shim()
        .expect_success();
    assert!(
        !server_command_line(&sb).contains(&value),
        "the value is in the server's command line"
    );
    wait_until(
        "the pane's command",
        || std::fs::read_to_string(&out).is_ok_and(|s| s.contains("PATH=")),
        std::time::Duration::from_secs(30),
    );
    let env = std::fs::read_to_string(&out).unwrap();
    assert!(
        !env.contains(&value),
        "the value reached the pane's command"
    );
}

/// The running server's command line, as text.
#[track_caller]
fn server_command_line(sb: &Sandbox) -> String {
    let server = sb.server_pid().expect("the server runs");
    String::from_utf8_lossy(&proc_cmdline(server).concat()).into_owned()
}

/// The words of a tmux argv.
fn words(v: &[&str]) -> Vec<String> {
    v.iter().map(|a| a.to_string()).collect()
}

/// `new-session -d -s s 'sleep 300' ;` and then `command`.
fn after_a_session(command: &[&str]) -> Vec<String> {
    let new = ["new-session", "-d", "-s", "s", "sleep 300", ";"];
    words(&new.iter().chain(command).copied().collect::<Vec<_>>())
}

/// `tmux set-environment NAME VALUE` is a pair in two arguments, `if-shell`
/// holds a tmux command with an `-e` pair in one (or, with `-F`, a nested
/// `set-environment`, its name escaped), a pane command given as an argv holds
/// the program's pair, `--` comes before a shell command, and an assignment
/// follows another command: for a credential, envwrap
/// refuses the exec, naming it, and tmux under the shim as the first process
/// overwrites the value in its own argv before `main`, so neither the server's
/// command line nor its global environment holds it.
#[test]
fn set_environment_of_a_credential_never_reaches_the_server() {
    let forms: [fn(&str) -> Vec<String>; 8] = [
        |value| after_a_session(&["set-environment", "-g", NAME, value]),
        |value| {
            let nested = format!("new-window -d -e {NAME}={value} 'sleep 300'");
            after_a_session(&["if-shell", "true", &nested])
        },
        // `-F` makes the first operand a format, which moved the command.
        |value| {
            let nested = format!("set-environment -g {NAME} '{value}'");
            after_a_session(&["if-shell", "-F", "1", &nested])
        },
        // A pane command given as an argv: the program's own pair.
        |value| {
            let pair = format!("{NAME}={value}");
            words(&["new-session", "-d", "-s", "s", "env", &pair, "sleep", "300"])
        },
        // `--` before the shell command.
        |value| {
            let command = format!("{NAME}={value} sleep 300");
            words(&["new-session", "-d", "-s", "s", "--", &command])
        },
        // An assignment that does not lead the shell command.
        |value| {
            let command = format!("export {NAME}={value}; exec sleep 300");
            words(&["new-session", "-d", "-s", "s", &command])
        },
        // A name tmux unescapes (`JIRA_\WEBHOOK_SECRET`), after a `;` in a word.
        |value| {
            let escaped = NAME.replacen('_', "_\\", 1);
            let nested = format!("display-message x;set-environment -g {escaped} '{value}'");
            after_a_session(&["if-shell", "true", &nested])
        },
        // A name with tmux's \u escape (`JIRA_W\u0045BHOOK_SECRET`), and the
        // command's too.
        |value| {
            let escaped = NAME.replacen('E', "\\u0045", 1);
            let nested = format!("s\\u0065tenv -g {escaped} '{value}'");
            after_a_session(&["if-shell", "true", &nested])
        },
    ];
    for form in forms {
        let sb = Sandbox::new("tmux_setenv_pair");
        let value = sb.secrets().value("JIRA_API_TOKEN").to_string();
        let form = form(&value);
        let o = sb
            .cmd(envwrap_bin())
            .args(["--", "tmux"])
            .args(sb.tmux_args())
            .args(&form)
            .run();
        assert_eq!(o.status.code(), Some(126), "{}", o.report());
        // The name as written: escaped in one form.
        let escapes = [
            NAME.replacen('_', "_\\", 1),
            NAME.replacen('E', "\\u0045", 1),
        ];
        let written = escapes
            .into_iter()
            .find(|w| form.iter().any(|a| a.contains(w.as_str())))
            .unwrap_or_else(|| NAME.to_string());
        assert!(
            o.stderr_str()
                .contains(&format!("holds the pair {} among other words", written)),
            "{}",
            o.report()
        );
        sb.cmd("tmux")
            .args(sb.tmux_args())
            .args(&form)
            .with_shim()
            .expect_success();
        assert!(
            !server_command_line(&sb).contains(&value),
            "the value is in the server's command line"
        );
        let global = sb.tmux_environment(None, false);
        assert!(
            global.get(NAME).is_none_or(|v| !v.contains(&value)),
            "the global environment holds the value"
        );
    }
}

/// A tmux server's command line is its first client's argv, for the server's
/// life: under the shim it holds tmux's own options and none of the commands,
/// so a value in a form no pair reading finds (a user option, a name tmux
/// unescapes inside `if-shell`) is not in it, and the commands still ran.
#[test]
fn a_servers_command_line_holds_none_of_its_first_clients_commands() {
    let sb = Sandbox::new("tmux_server_cmdline");
    let value = sb.secrets().value("JIRA_API_TOKEN").to_string();
    let nested = format!("set-option -g @hidden '{value}'");
    sb.cmd("tmux")
        .args(sb.tmux_args())
        .args(["new-session", "-d", "-s", "s", "sleep 300", ";"])
        .args(["set-option", "-g", "@note", &value, ";"])
        .args(["if-shell", "true", &nested])
        .with_shim()
        .expect_success();
    let server = sb.server_pid().expect("the server runs");
    let cmdline = proc_cmdline(server);
    let shown = String::from_utf8_lossy(&cmdline.concat()).into_owned();
    assert!(
        !shown.contains(&value),
        "the value is in the server's command line"
    );
    assert!(
        cmdline.first().is_some_and(|a| a.ends_with(b"tmux"))
            && cmdline.get(1).is_some_and(|a| a == b"-L")
            && !shown.contains("set-option"),
        "{}",
        sb.secrets().redact(format!("{cmdline:?}"))
    );
    // The commands reached the server whole: both options hold the value.
    let length = format!("{}\n", value.len());
    for option in ["@note", "@hidden"] {
        let format = format!("#{{n:{option}}}");
        let o = sb.tmux().args(["display-message", "-p", &format]).run();
        assert_eq!(o.stdout_str(), length, "{option}: {}", o.report());
    }
}
