//! `assert_no_process_holds` can FAIL: a seeded value in a live process's argv (or,
//! when asked, its environ) is found, and the report names the PID, the program and
//! the variable, never the value.

use std::time::Duration;

use envshim_e2e::*;

fn panic_message(e: Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn detects_token_in_argv_and_names_only_the_variable() {
    let sb = Sandbox::new("proc_argv");
    let secrets = sb.secrets().clone();
    let token = secrets.value("GH_TOKEN").to_string();
    // bash stays the parent (the `; true` defeats exec of the last command), so its
    // argv keeps the token for as long as sleep runs.
    let mut holder = sb
        .cmd("bash")
        .args(["-c", "sleep 30; true", "envshim-holder", &token])
        .spawn_background();
    let pid = holder.pid();

    let findings = ProcScan::new(&secrets).only([pid]).findings();
    assert_eq!(
        findings,
        vec![ProcFinding {
            pid,
            comm: "bash".into(),
            name: "GH_TOKEN",
            place: Place::Cmdline { index: 4 }
        }]
    );

    let r = std::panic::catch_unwind(|| assert_no_process_holds(&secrets));
    let msg = panic_message(r.expect_err("the check must fail while the holder runs"));
    assert!(
        msg.contains("GH_TOKEN"),
        "message does not name the variable: {msg}"
    );
    assert!(
        msg.contains(&format!("pid {pid} (bash)")),
        "message does not name pid/program: {msg}"
    );
    assert!(!msg.contains(&token), "message holds the value");
    assert!(secrets.is_clean(msg.as_bytes()));

    holder.kill();
    assert!(
        wait_for(
            || ProcScan::new(&secrets).findings().is_empty(),
            Duration::from_secs(5)
        ),
        "still found after the holder was killed"
    );
    assert_no_process_holds(&secrets);
}

#[test]
fn detects_url_password_and_environ_when_asked() {
    let sb = Sandbox::new("proc_environ");
    let secrets = sb.secrets().clone();
    // The URL's password alone, as an attached form, counts.
    let pw_arg = format!("--proxy={}", secrets.value("PROXY_URL"));
    let holder = sb
        .cmd("bash")
        .args(["-c", "(sleep 30; true); true", "envshim-holder", &pw_arg])
        .env("GITLAB_TOKEN", secrets.value("GITLAB_TOKEN"))
        .spawn_background();
    let pid = holder.pid();
    // The subshell is a forked bash that keeps the holder's cmdline.
    assert!(
        wait_for(
            || all_pids().into_iter().any(|p| proc_ppid(p) == Some(pid)),
            Duration::from_secs(5)
        ),
        "the holder's subshell did not start"
    );

    let argv_only = ProcScan::new(&secrets).only([pid]).findings();
    assert_eq!(argv_only.len(), 1);
    assert_eq!(argv_only[0].name, "PROXY_URL");

    let with_env = ProcScan::new(&secrets)
        .only([pid])
        .with_environ()
        .findings();
    assert!(with_env.iter().any(|f| f.name == "GITLAB_TOKEN"
        && f.place
            == Place::Environ {
                entry: "GITLAB_TOKEN".into()
            }));

    let r = std::panic::catch_unwind(|| {
        ProcScan::new(&secrets)
            .with_environ()
            .only([pid])
            .assert_clean()
    });
    let msg = panic_message(r.expect_err("must fail"));
    assert!(
        msg.contains("GITLAB_TOKEN") && msg.contains("PROXY_URL"),
        "{msg}"
    );
    assert!(secrets.is_clean(msg.as_bytes()), "message holds a value");

    // Excluding the holder's tree makes the argv scan clean, also while its child is
    // between fork and exec and still shows bash's argv.
    ProcScan::new(&secrets).exclude_tree(pid).assert_clean();
    drop(holder);
}

#[test]
fn proc_readers_see_a_known_child() {
    let sb = Sandbox::new("proc_read");
    let holder = sb
        .cmd("sleep")
        .arg("30")
        .env_clear()
        .env("ENVSHIM_E2E_X", "1")
        .env("NOEQ_OK", "")
        .spawn_background();
    let pid = holder.pid();
    assert!(all_pids().contains(&pid));
    assert!(pid_alive(pid));
    assert_eq!(proc_cmdline(pid), vec![b"sleep".to_vec(), b"30".to_vec()]);
    let env = proc_environ(pid);
    assert!(env.contains(&(b"ENVSHIM_E2E_X".to_vec(), b"1".to_vec())));
    assert_eq!(proc_comm(pid).as_deref(), Some("sleep"));
    drop(holder);
    assert!(!pid_alive(pid));
}
