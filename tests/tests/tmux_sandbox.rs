//! The sandbox's tmux: its own socket inside the sandbox, environment visible through
//! `show_environment`, the server's /proc readable, and everything gone after Drop
//! without the default server ever being contacted.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use envshim_e2e::*;

fn entries(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn session_on_own_socket_is_visible_and_cleaned_up() {
    let default_dir = default_tmux_socket_dir();
    let before = entries(&default_dir);

    let sb = Sandbox::new("tmux_own_socket");
    let dir = sb.path().to_path_buf();
    sb.tmux()
        .args(["new-session", "-d", "-s", "t1", "-x", "80", "-y", "24"])
        .args(["-e", "ENVSHIM_E2E_MARK=hello world"])
        .args(["sleep", "300"])
        .expect_success();

    // The socket lives inside the sandbox, not in the default directory.
    assert!(
        sb.tmux_socket_path().exists(),
        "socket {} missing",
        sb.tmux_socket_path().display()
    );
    assert!(sb.tmux_socket_path().starts_with(&dir));

    let env = sb.show_environment("t1");
    assert!(
        env.iter()
            .any(|(n, v)| n == "ENVSHIM_E2E_MARK" && v == "hello world"),
        "session environment lacks ENVSHIM_E2E_MARK: {:?}",
        env.iter().map(|(n, _)| n).collect::<Vec<_>>()
    );

    // Removed names show up as -NAME.
    sb.tmux()
        .args(["set-environment", "-t", "t1", "-r", "ENVSHIM_E2E_GONE"])
        .expect_success();
    let full = sb.tmux_environment(Some("t1"), false);
    assert!(full.is_removed("ENVSHIM_E2E_GONE"), "{full:?}");
    assert_eq!(full.get("ENVSHIM_E2E_MARK"), Some("hello world"));

    // The server's command line is the first client's argv (tmux forks without exec).
    let server = sb.server_pid().expect("server running");
    assert_eq!(proc_comm(server).as_deref(), Some("tmux: server"));
    let cmdline = proc_cmdline(server);
    assert!(cmdline.iter().any(|a| a == b"-L"));
    assert!(cmdline.iter().any(|a| a == sb.tmux_socket().as_bytes()));
    assert!(cmdline.iter().any(|a| a == b"ENVSHIM_E2E_MARK=hello world"));
    assert_eq!(sb.find_server_processes(), vec![server]);

    let pane = sb.pane_pid("t1");
    assert_eq!(proc_comm(pane).as_deref(), Some("sleep"));
    assert_no_process_holds(sb.secrets());

    let socket_name = sb.tmux_socket().to_string();
    drop(sb);

    assert!(
        !pid_alive(server),
        "tmux server {server} survived the sandbox"
    );
    assert!(
        wait_for(|| !pid_alive(pane), Duration::from_secs(5)),
        "pane process {pane} survived"
    );
    if std::env::var_os(KEEP_ENV).is_none() {
        assert!(!dir.exists(), "sandbox dir {} not removed", dir.display());
    }
    let after = entries(&default_dir);
    assert!(
        !after.contains(&socket_name),
        "our socket appeared in {}",
        default_dir.display()
    );
    let new: Vec<_> = after.difference(&before).collect();
    assert!(
        !new.iter().any(|n| n.as_str() == "default"),
        "a default tmux socket appeared in {} during the test",
        default_dir.display()
    );
}

#[test]
fn nested_tmux_without_socket_flag_stays_in_sandbox() {
    let default_dir = default_tmux_socket_dir();
    let default_existed = default_dir.join("default").exists();
    let sb = Sandbox::new("tmux_nested");
    // A tmux started by a script, without -L: TMUX_TMPDIR keeps it in the sandbox.
    sb.cmd("bash")
        .args(["-c", "tmux -f /dev/null new-session -d -s nested sleep 300"])
        .expect_success();
    let socket = sb
        .path()
        .join(format!("tmux-{}", unsafe_uid()))
        .join("default");
    assert!(socket.exists(), "nested tmux socket not in the sandbox");
    let servers = sb.find_server_processes();
    assert_eq!(
        servers.len(),
        1,
        "expected the nested server to be found: {servers:?}"
    );
    drop(sb);
    assert!(
        !pid_alive(servers[0]),
        "nested tmux server survived the sandbox"
    );
    assert_eq!(default_dir.join("default").exists(), default_existed);
}

#[test]
fn bare_tmux_is_refused() {
    let r = std::panic::catch_unwind(|| {
        TestCommand::new("tmux").arg("list-sessions").run();
    });
    let msg = panic_message(r.expect_err("bare tmux must be refused"));
    assert!(msg.contains("without -L"), "{msg}");
}

#[test]
fn no_server_means_no_pid() {
    let sb = Sandbox::new("tmux_none");
    assert_eq!(sb.server_pid(), None);
}

fn unsafe_uid() -> String {
    // The sandbox's socket directory is named tmux-UID; read UID from /proc.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    line.split_whitespace().nth(1).unwrap().to_string()
}

fn panic_message(e: Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}
