//! The argv rules: secrets inside arguments, and NAME=VALUE pairs in the argv of
//! tmux, docker, podman, env, sudo and systemd-run.

mod common;
use common::*;

#[test]
fn a_credential_value_in_any_argument_refuses_the_exec() {
    let c = compile("version = 1\n");
    let secret = "opaque-credential-42";
    let env = [format!("JIRA_API_TOKEN={secret}")];
    for arg in [
        secret.to_string(),
        format!("--token={secret}"),
        format!("-u{secret}"),
        format!("https://bot:{secret}@host/x"),
    ] {
        let d = decide(&c, "/usr/bin/curl", &[arg.as_str()], &[env[0].as_str()]);
        let r = d
            .refusal
            .as_ref()
            .unwrap_or_else(|| panic!("argument form {} not refused", arg.len()));
        assert_eq!(r.name.as_deref(), Some("JIRA_API_TOKEN"));
        assert_eq!(r.index, Some(1));
        assert_no_value("refusal", &format!("{r:?}"), secret);
    }
}

#[test]
fn a_token_shape_in_an_argument_refuses_the_exec() {
    let c = compile("version = 1\n");
    let d = decide(
        &c,
        "/usr/bin/git",
        &[
            "clone",
            &format!("https://x:{}@github.com/o/r", fake_github()),
        ],
        &[],
    );
    let r = d.refusal.expect("refused");
    assert_eq!(r.rule, "argv.shape");
    assert_eq!(r.index, Some(2));
}

#[test]
fn short_values_and_ordinary_words_do_not_refuse() {
    let c = compile("version = 1\n");
    let d = decide(
        &c,
        "/bin/echo",
        &["token", "password", "x"],
        &["GH_TOKEN=x", "SECRET=short"],
    );
    assert!(d.refusal.is_none());
    assert_eq!(argv(&d), ["/bin/echo", "token", "password", "x"]);
}

#[test]
fn redact_mode_overwrites_the_value_and_goes_on() {
    let c = compile("version = 1\n[argv]\nsecrets = \"redact\"\n");
    let secret = "opaque-credential-42";
    let d = decide(
        &c,
        "/usr/bin/curl",
        &[&format!("--token={secret}"), "-v"],
        &[&format!("API_TOKEN={secret}")],
    );
    assert!(d.refusal.is_none());
    assert_eq!(
        argv(&d),
        [
            "/usr/bin/curl",
            &format!("--token={}", "*".repeat(secret.len())),
            "-v"
        ]
    );
}

#[test]
fn values_from_the_parent_and_imported_env_files_count() {
    let dir = Dir::new("argv-files");
    dir.write("daemon.env", "THE_LOOP_GH_TOKEN=daemon-only-value-1\n");
    let c = dir.compile("version = 1\n[[import.env_file]]\npath = \"daemon.env\"\n");
    let d = decide(&c, "/bin/echo", &["daemon-only-value-1"], &[]);
    let r = d.refusal.expect("refused");
    assert_eq!(r.name.as_deref(), Some("THE_LOOP_GH_TOKEN"));
    assert!(r.why.contains("daemon.env"));
    // The parent's credentials, when the child env was replaced (env -i).
    let policy = c.policy();
    let d = envpolicy::outcome::decide(
        &policy,
        b"/bin/echo",
        &bytes(&["echo", "parent-value-123"]),
        &[],
        &bytes(&["MY_SECRET=parent-value-123"]),
        &[],
    );
    assert_eq!(
        d.refusal.expect("refused").name.as_deref(),
        Some("MY_SECRET")
    );
}

#[test]
fn tmux_pairs_go_through_the_policy() {
    let c = compile("version = 1\n[program.tmux.pairs]\nbase = \"none\"\nkeep = [\"THE_LOOP_INSTANCE\", \"GH_TOKEN\"]\n");
    let args = [
        "new-session",
        "-d",
        "-e",
        "THE_LOOP_INSTANCE=i1",
        "-e",
        "OTHER=x",
        "-eATTACHED=y",
        "-e",
        "GH_TOKEN=abcdefghijkl",
        "bash",
    ];
    let d = decide(&c, "/usr/bin/tmux", &args, &["GH_TOKEN=abcdefghijkl"]);
    assert_eq!(
        argv(&d),
        [
            "/usr/bin/tmux",
            "new-session",
            "-d",
            "-e",
            "THE_LOOP_INSTANCE=i1",
            "bash"
        ]
    );
    assert!(d.refusal.is_none(), "a dropped pair is not a refusal");
    let gh = d
        .changes
        .iter()
        .find(|c| c.target == "argv" && c.name.as_deref() == Some("GH_TOKEN"))
        .expect("reported");
    assert_eq!(gh.action, "drop");
    assert_eq!(gh.rule, "credential.name");
}

#[test]
fn tmux_pairs_without_a_pairs_table_use_the_programs_rules() {
    let c = compile("version = 1\nstrip = [\"SECRETISH\"]\n");
    let d = decide(&c, "tmux", &["new", "-e", "SECRETISH=1", "-e", "OK=2"], &[]);
    assert_eq!(argv(&d), ["tmux", "new", "-e", "OK=2"]);
}

#[test]
fn docker_granted_credentials_become_name_only() {
    let c = compile("version = 1\n[[grant]]\nname = \"REGISTRY_TOKEN\"\nprogram = \"docker\"\n");
    let secret = "registry-secret-99";
    let args = [
        "run",
        "-e",
        &format!("REGISTRY_TOKEN={secret}"),
        &format!("--env=GH_TOKEN={secret}x"),
        "--env",
        "PLAIN=1",
        "img",
    ];
    let d = decide(&c, "/usr/bin/docker", &args, &[]);
    assert!(d.refusal.is_none(), "{:?}", d.refusal);
    assert_eq!(
        argv(&d),
        [
            "/usr/bin/docker",
            "run",
            "-e",
            "REGISTRY_TOKEN",
            "--env",
            "PLAIN=1",
            "img"
        ]
    );
    assert_eq!(get(&d, "REGISTRY_TOKEN").as_deref(), Some(secret));
}

#[test]
fn env_sudo_and_systemd_run_pairs() {
    let c = compile("version = 1\n");
    let d = decide(
        &c,
        "/usr/bin/env",
        &[
            "-i",
            "-u",
            "X",
            "GH_TOKEN=abcdefghijkl",
            "OK=1",
            "prog",
            "NOT_A_PAIR=1",
        ],
        &[],
    );
    assert_eq!(
        argv(&d),
        [
            "/usr/bin/env",
            "-i",
            "-u",
            "X",
            "OK=1",
            "prog",
            "NOT_A_PAIR=1"
        ]
    );
    let d = decide(
        &c,
        "sudo",
        &["-u", "root", "BASH_ENV=/x", "OK=1", "cmd"],
        &[],
    );
    assert_eq!(argv(&d), ["sudo", "-u", "root", "OK=1", "cmd"]);
    let d = decide(
        &c,
        "systemd-run",
        &[
            "-E",
            "LD_AUDIT=/x",
            "--setenv=OK=1",
            "-ELD_PRELOAD=/y",
            "cmd",
        ],
        &[],
    );
    assert_eq!(
        argv(&d),
        ["systemd-run", "--setenv=OK=1", "-ELD_PRELOAD=/y", "cmd"]
    );
}

#[test]
fn pairs_are_left_alone_when_env_flags_is_off() {
    let c = compile("version = 1\n[argv]\nenv_flags = false\n");
    let d = decide(&c, "tmux", &["new", "-e", "BASH_ENV=/x"], &[]);
    assert_eq!(argv(&d), ["tmux", "new", "-e", "BASH_ENV=/x"]);
}

#[test]
fn pair_parsers_stop_where_the_programs_options_end() {
    let c = compile("version = 1\n");
    // docker: the container's own command keeps its arguments.
    let d = decide(
        &c,
        "docker",
        &[
            "--host",
            "unix:///x",
            "run",
            "--rm",
            "-it",
            "-v",
            "/a:/b",
            "--name",
            "n",
            "-e",
            "BASH_ENV=/x",
            "image",
            "cmd",
            "-e",
            "BASH_ENV=/y",
        ],
        &[],
    );
    assert_eq!(
        argv(&d),
        [
            "docker",
            "--host",
            "unix:///x",
            "run",
            "--rm",
            "-it",
            "-v",
            "/a:/b",
            "--name",
            "n",
            "image",
            "cmd",
            "-e",
            "BASH_ENV=/y"
        ]
    );
    // docker subcommands other than run, create and exec carry no pairs.
    let d = decide(&c, "docker", &["build", "-e", "BASH_ENV=/x", "."], &[]);
    assert_eq!(argv(&d).len(), 5);
    // systemd-run: -p takes a value; the command's own -E is left alone.
    let d = decide(
        &c,
        "systemd-run",
        &[
            "-p",
            "Nice=5",
            "-E",
            "LD_AUDIT=/x",
            "cmd",
            "-E",
            "LD_AUDIT=/y",
        ],
        &[],
    );
    assert_eq!(
        argv(&d),
        ["systemd-run", "-p", "Nice=5", "cmd", "-E", "LD_AUDIT=/y"]
    );
    // env: `-` and long options with a separate value.
    let d = decide(
        &c,
        "env",
        &[
            "-",
            "--unset",
            "FOO",
            "--chdir=/tmp",
            "BASH_ENV=/x",
            "OK=1",
            "cmd",
        ],
        &[],
    );
    assert_eq!(
        argv(&d),
        ["env", "-", "--unset", "FOO", "--chdir=/tmp", "OK=1", "cmd"]
    );
    // sudo: long options with a separate value.
    let d = decide(
        &c,
        "sudo",
        &["--user", "root", "-E", "BASH_ENV=/x", "cmd"],
        &[],
    );
    assert_eq!(argv(&d), ["sudo", "--user", "root", "-E", "cmd"]);
}

#[test]
fn a_granted_pair_replaces_the_same_name_in_the_environment() {
    let c = compile("version = 1\n[[grant]]\nname = \"REGISTRY_TOKEN\"\nprogram = \"docker\"\n");
    let d = decide(
        &c,
        "docker",
        &["run", "-e", "REGISTRY_TOKEN=from-argv-123", "img"],
        &["REGISTRY_TOKEN=from-env-4567"],
    );
    let copies: Vec<_> = d
        .env
        .iter()
        .filter(|e| e.starts_with(b"REGISTRY_TOKEN="))
        .collect();
    assert_eq!(copies, [&b"REGISTRY_TOKEN=from-argv-123".to_vec()]);
}
