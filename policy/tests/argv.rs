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

/// An argument holding a base64 copy of a credential is refused like one
/// holding its bytes (`curl -H "Authorization: Basic <base64 of user:TOKEN>"`),
/// and in redact mode the encoded text is overwritten.
#[test]
fn a_base64_copy_of_a_credential_in_an_argument_refuses_the_exec() {
    let c = compile("version = 1\n");
    let secret = "opaque-credential-42";
    let env = format!("JIRA_API_TOKEN={secret}");
    for user in ["", "u", "us", "user"] {
        for url_safe in [false, true] {
            let encoded = base64(format!("{user}:{secret}").as_bytes(), url_safe, true);
            let header = format!("Authorization: Basic {encoded}");
            let d = decide(
                &c,
                "/usr/bin/curl",
                &["-H", &header, "https://h/x"],
                &[&env],
            );
            let r = d
                .refusal
                .as_ref()
                .unwrap_or_else(|| panic!("user of {} bytes not refused", user.len()));
            assert_eq!(r.name.as_deref(), Some("JIRA_API_TOKEN"));
            assert_eq!(r.index, Some(2));
            assert_eq!(r.rule.id(), "argv.value");
            assert_no_value("refusal", &format!("{r:?}"), &encoded);
        }
    }
    let c = compile("version = 1\n[argv]\nsecrets = \"redact\"\n");
    let encoded = base64(format!("user:{secret}").as_bytes(), false, true);
    let header = format!("Authorization: Basic {encoded}");
    let d = decide(&c, "/usr/bin/curl", &["-H", &header], &[&env]);
    assert!(d.refusal.is_none());
    assert_eq!(
        argv(&d),
        [
            "/usr/bin/curl",
            "-H",
            &format!("Authorization: Basic {}", "*".repeat(encoded.len()))
        ]
    );
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
    assert_eq!(r.rule.id(), "argv.shape");
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
        .find(|c| c.target.id() == "argv" && c.name.as_deref() == Some("GH_TOKEN"))
        .expect("reported");
    assert_eq!(gh.action.id(), "drop");
    assert_eq!(gh.rule.id(), "credential.name");
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

/// One row per form each carrier's own parser reads (src/pairs.rs): the argv as
/// given, and as the child gets it. `BASH_ENV` is an unsafe name, so a pair of it
/// is always dropped (with its separate flag); `OK=1` is admitted.
#[test]
fn pair_grammars_read_argv_as_each_program_does() {
    let c = compile("version = 1\n");
    let rows: &[(&str, &[&str], &[&str])] = &[
        // tmux: getopt per command, clusters, valued options, sequences, aliases
        // and prefixes.
        (
            "tmux",
            &["new", "-e", "BASH_ENV=/x", "-e", "OK=1"],
            &["new", "-e", "OK=1"],
        ),
        (
            "tmux",
            &["new-session", "-de", "BASH_ENV=/x"],
            &["new-session", "-d"],
        ),
        (
            "tmux",
            &["new-session", "-dPe", "BASH_ENV=/x", "cmd"],
            &["new-session", "-dP", "cmd"],
        ),
        (
            "tmux",
            &["new-session", "-deBASH_ENV=/x"],
            &["new-session", "-d"],
        ),
        (
            "tmux",
            &["new", "-c", "-e", "OK=1"],
            &["new", "-c", "-e", "OK=1"],
        ),
        (
            "tmux",
            &[
                "new",
                "-s",
                "s",
                "-n",
                "w",
                "-x",
                "80",
                "-y",
                "24",
                "-F",
                "f",
                "-t",
                "t",
                "-eBASH_ENV=/x",
            ],
            &[
                "new", "-s", "s", "-n", "w", "-x", "80", "-y", "24", "-F", "f", "-t", "t",
            ],
        ),
        (
            "tmux",
            &[
                "-L",
                "sock",
                "-f",
                "/dev/null",
                "new",
                "-d",
                ";",
                "neww",
                "-de",
                "BASH_ENV=/x",
            ],
            &[
                "-L",
                "sock",
                "-f",
                "/dev/null",
                "new",
                "-d",
                ";",
                "neww",
                "-d",
            ],
        ),
        (
            "tmux",
            &["new", "-d;", "splitw", "-he", "BASH_ENV=/x"],
            &["new", "-d;", "splitw", "-h"],
        ),
        (
            "tmux",
            &["respawnp", "-ke", "BASH_ENV=/x"],
            &["respawnp", "-k"],
        ),
        (
            "tmux",
            &["respawn-window", "-k", "-eBASH_ENV=/x"],
            &["respawn-window", "-k"],
        ),
        ("tmux", &["popup", "-Ee", "BASH_ENV=/x"], &["popup", "-E"]),
        (
            "tmux",
            &["display-popup", "-d", "/tmp", "-e", "BASH_ENV=/x"],
            &["display-popup", "-d", "/tmp"],
        ),
        ("tmux", &["split", "-e", "BASH_ENV=/x"], &["split"]),
        // docker and podman: clusters, --env and prefixes, any subcommand, past the
        // image, up to `--`.
        (
            "docker",
            &["run", "-de", "BASH_ENV=/x", "img"],
            &["run", "-d", "img"],
        ),
        (
            "docker",
            &["run", "-deBASH_ENV=/x", "img"],
            &["run", "-d", "img"],
        ),
        (
            "docker",
            &["run", "-ue", "OK=1", "img"],
            &["run", "-ue", "OK=1", "img"],
        ),
        (
            "docker",
            &["run", "--env=BASH_ENV=/x", "--en", "BASH_ENV=/y", "img"],
            &["run", "img"],
        ),
        (
            "docker",
            &["container", "run", "-e", "BASH_ENV=/x", "img"],
            &["container", "run", "img"],
        ),
        (
            "docker",
            &["container", "create", "-e", "BASH_ENV=/x", "img"],
            &["container", "create", "img"],
        ),
        (
            "docker",
            &["container", "exec", "-e", "BASH_ENV=/x", "c", "sh"],
            &["container", "exec", "c", "sh"],
        ),
        (
            "docker",
            &["compose", "-f", "c.yml", "run", "-e", "BASH_ENV=/x", "svc"],
            &["compose", "-f", "c.yml", "run", "svc"],
        ),
        (
            "docker",
            &["compose", "exec", "--env", "BASH_ENV=/x", "svc"],
            &["compose", "exec", "svc"],
        ),
        (
            "podman",
            &["container", "create", "--env", "BASH_ENV=/x", "img"],
            &["container", "create", "img"],
        ),
        (
            "docker",
            &["run", "img", "--env", "BASH_ENV=/x"],
            &["run", "img"],
        ),
        (
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
                "OK=1",
                "img",
            ],
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
                "OK=1",
                "img",
            ],
        ),
        // pflag's `-e=N=V`, alone and in a cluster.
        (
            "docker",
            &["run", "-e=BASH_ENV=/x", "-ite=BASH_ENV=/y", "img"],
            &["run", "-it", "img"],
        ),
        // A boolean long option the table does not know does not swallow `-e`.
        (
            "podman",
            &[
                "run",
                "--env-host",
                "-e",
                "BASH_ENV=/x",
                "--rmi",
                "-e",
                "BASH_ENV=/y",
                "img",
            ],
            &["run", "--env-host", "--rmi", "img"],
        ),
        (
            "docker",
            &[
                "compose",
                "run",
                "--use-aliases",
                "--quiet-pull",
                "-e",
                "BASH_ENV=/x",
                "svc",
            ],
            &["compose", "run", "--use-aliases", "--quiet-pull", "svc"],
        ),
        (
            "docker",
            &["run", "img", "--", "-e", "OK=1"],
            &["run", "img", "--", "-e", "OK=1"],
        ),
        // systemd-run: -E, --setenv and its prefixes, -p Environment=, past the
        // command, up to `--`.
        (
            "systemd-run",
            &["-E", "BASH_ENV=/x", "--setenv=OK=1", "cmd"],
            &["--setenv=OK=1", "cmd"],
        ),
        ("systemd-run", &["--seten", "BASH_ENV=/x", "cmd"], &["cmd"]),
        ("systemd-run", &["--set=BASH_ENV=/x", "cmd"], &["cmd"]),
        (
            "systemd-run",
            &["-p", "Environment=BASH_ENV=/x", "-p", "Nice=5", "cmd"],
            &["-p", "Nice=5", "cmd"],
        ),
        // An escaped name, dropped with its flag.
        (
            "systemd-run",
            &["-p", "Environment=BASH\\x5fENV=/x", "-p", "Nice=5", "cmd"],
            &["-p", "Nice=5", "cmd"],
        ),
        (
            "systemd-run",
            &["--property=Environment=BASH_ENV=/x", "cmd"],
            &["cmd"],
        ),
        (
            "systemd-run",
            &["-pEnvironment=BASH_ENV=/x", "cmd"],
            &["cmd"],
        ),
        ("systemd-run", &["cmd", "-E", "BASH_ENV=/x"], &["cmd"]),
        (
            "systemd-run",
            &["--", "cmd", "-E", "OK=1"],
            &["--", "cmd", "-E", "OK=1"],
        ),
        // env and sudo: options (long ones by prefix), then the pairs.
        (
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
            &["-", "--unset", "FOO", "--chdir=/tmp", "OK=1", "cmd"],
        ),
        (
            "env",
            &["--ch", "/tmp", "BASH_ENV=/x", "cmd"],
            &["--ch", "/tmp", "cmd"],
        ),
        (
            "env",
            &["-iu", "X", "BASH_ENV=/x", "cmd", "BASH_ENV=/y"],
            &["-iu", "X", "cmd", "BASH_ENV=/y"],
        ),
        (
            "sudo",
            &["--user", "root", "-E", "BASH_ENV=/x", "cmd"],
            &["--user", "root", "-E", "cmd"],
        ),
        (
            "sudo",
            &["--us", "root", "BASH_ENV=/x", "cmd"],
            &["--us", "root", "cmd"],
        ),
        (
            "sudo",
            &["-nu", "root", "BASH_ENV=/x", "cmd"],
            &["-nu", "root", "cmd"],
        ),
        // sudo's `-a TYPE` takes a value; `-h` takes only an attached one.
        (
            "sudo",
            &["-a", "x", "BASH_ENV=/x", "--auth-type", "y", "cmd"],
            &["-a", "x", "--auth-type", "y", "cmd"],
        ),
        (
            "sudo",
            &["--auth-type", "x", "BASH_ENV=/x", "cmd"],
            &["--auth-type", "x", "cmd"],
        ),
        (
            "sudo",
            &["-hmyhost", "BASH_ENV=/x", "cmd"],
            &["-hmyhost", "cmd"],
        ),
    ];
    for (program, args, want) in rows {
        let d = decide(&c, program, args, &[]);
        assert!(d.refused().is_none(), "{program} {args:?}: refused");
        let got = argv(&d);
        assert_eq!(&got[1..], *want, "{program} {args:?}");
    }
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

/// A pair that is one of several words of its argument (systemd's
/// `Environment=` list, env's `-S` command line, the shebang form `-S NAME=V
/// cmd`, a tmux shell command) cannot be dropped alone: the exec is refused, naming the pair; pairs
/// the policy passes go through unchanged, and the words after env's command are
/// its arguments, not pairs.
#[test]
fn a_pair_among_other_words_refuses_the_exec() {
    let c = compile("version = 1\n");
    let refused: &[(&str, &[&str])] = &[
        (
            "systemd-run",
            &["-p", "Environment=OK=1 BASH_ENV=/x", "cmd"],
        ),
        (
            "systemd-run",
            &["--property=Environment=\"BASH_ENV=/x\"", "cmd"],
        ),
        (
            "systemd-run",
            &["-p", "Environment='OK=1' 'BASH_ENV=/x'", "cmd"],
        ),
        ("env", &["-S", "BASH_ENV=/x cmd"]),
        ("env", &["-vS", "OK=1 BASH_ENV=/x cmd"]),
        ("env", &["-S BASH_ENV=/x cmd"]),
        ("env", &["--split-string=BASH_ENV=/x cmd"]),
        ("env", &["--sp", "OK=1  BASH_ENV=/x cmd"]),
        // A tmux shell command that begins with assignments.
        ("tmux", &["new", "-d", "GH_TOKEN=/x sleep 1"]),
        (
            "tmux",
            &["-L", "s", "neww", "-d", "-n", "w", "OK=1 GH_TOKEN=/x cmd"],
        ),
        ("tmux", &["new", "-d", ";", "run", "GH_TOKEN=/x cmd"]),
        ("tmux", &["splitw", "-c", "/tmp", "GH_TOKEN=/x"]),
        // GNU screen's setenv NAME VALUE, a window's command line, stuff text.
        ("screen", &["-S", "s", "-X", "setenv", "BASH_ENV", "/x"]),
        ("screen", &["-Ss", "-Q", "setenv", "BASH_ENV", "/x"]),
        ("screen", &["-dmS", "s", "sh", "-c", "GH_TOKEN=/x cmd"]),
        (
            "screen",
            &["-S", "s", "-X", "stuff", "export GH_TOKEN=/x\n"],
        ),
        (
            "screen",
            &[
                "-S",
                "s",
                "-X",
                "eval",
                "setenv A b",
                "screen env GH_TOKEN=/x",
            ],
        ),
        // tmux's set-environment NAME VALUE: a pair in two arguments.
        ("tmux", &["new", "-d", ";", "setenv", "BASH_ENV", "/x"]),
        ("tmux", &["setenv", "-g", "BASH_ENV", "/x"]),
        ("tmux", &["set-environment", "-Ft", "s", "BASH_ENV", "/x"]),
        // `-e` pairs of tmux commands nested in one argument.
        (
            "tmux",
            &[
                "new",
                "-d",
                "sleep 1",
                ";",
                "if-shell",
                "true",
                "neww -e GH_TOKEN=/x 'sleep 1'",
            ],
        ),
        ("tmux", &["confirm-before", "neww -deGH_TOKEN=/x cmd"]),
        (
            "tmux",
            &[
                "set-hook",
                "-g",
                "after-select-pane",
                "splitw -dPe GH_TOKEN=/x",
            ],
        ),
        // Options that change what an operand is (`-F`, `-C`, `-d DELAY`), and `--`.
        ("tmux", &["if-shell", "-F", "1", "neww -e GH_TOKEN=/x"]),
        ("tmux", &["run-shell", "-C", "neww -e GH_TOKEN=/x"]),
        ("tmux", &["run-shell", "-d", "1", "GH_TOKEN=/x cmd"]),
        ("tmux", &["new", "-d", "--", "GH_TOKEN=/x cmd"]),
        ("tmux", &["setenv", "-g", "--", "BASH_ENV", "/x"]),
        // Nested shell commands and set-environment, at any depth of quotes.
        ("tmux", &["if-shell", "true", "setenv -g GH_TOKEN /x"]),
        (
            "tmux",
            &["confirm", "-p", "ok?", "setenv -t s 'GH_TOKEN' /x"],
        ),
        ("tmux", &["if-shell", "true", "new -d 'GH_TOKEN=/x cmd'"]),
        (
            "tmux",
            &[
                "bind-key",
                "x",
                "if-shell",
                "true",
                "\"neww -eGH_TOKEN=/x\"",
            ],
        ),
        ("tmux", &["bind-key", "x", "new-window", "GH_TOKEN=/x cmd"]),
        // Anywhere in a shell command, or in any command's operands (text for
        // send-keys, an option's value), ended by a blank or a `;`.
        ("tmux", &["new", "-d", "sleep 1 GH_TOKEN=/x"]),
        ("tmux", &["new", "-d", "export GH_TOKEN=/x; exec sleep 1"]),
        ("tmux", &["send-keys", "GH_TOKEN=/x cmd"]),
        ("tmux", &["display-message", "-p", "a -x b GH_TOKEN=/x"]),
        ("tmux", &["send-keys", "echo -e GH_TOKEN=/x", "Enter"]),
        (
            "tmux",
            &["set-option", "-g", "default-command", "GH_TOKEN=/x exec sh"],
        ),
        (
            "tmux",
            &["set", "-g", "after-new-window", "setenv -g GH_TOKEN /x"],
        ),
        ("tmux", &["if", "true", "display x;setenv -g GH_TOKEN /x"]),
        ("tmux", &["choose-tree", "setenv -g GH_TOKEN /x"]),
        // Names written with quotes or backslashes the parser removes.
        ("tmux", &["if", "true", "setenv -g GH_\\TOKEN /x"]),
        ("tmux", &["if", "true", "setenv -g G\"H_TOKEN\" /x"]),
        ("tmux", &["if", "true", "setenv -g \\107H_TOKEN /x"]),
        ("tmux", &["if", "true", "setenv -g \\\nGH_TOKEN /x"]),
        ("tmux", &["if", "true", "GH_\\TOKEN=/x"]),
        ("tmux", &["if", "true", "%hidden G'H_TOKEN'=/x"]),
        // Escaped names in systemd's Environment= and env's -S.
        (
            "systemd-run",
            &["-p", "Environment=OK=1 BASH\\x5fENV=/x", "cmd"],
        ),
        ("systemd-run", &["-p", "Environment=BASH_\"ENV\"=/x", "cmd"]),
        (
            "systemd-run",
            &["-p", "Environment=A=1 BASH_\"ENV=/x\"", "cmd"],
        ),
        ("env", &["-S", "BASH_ENV\"=\"/x cmd"]),
        // The command a carrier starts beyond the shim's reach.
        ("systemd-run", &["env", "GH_TOKEN=/x", "cmd"]),
        (
            "systemd-run",
            &["--user", "--", "sh", "-c", "export GH_TOKEN=/x; cmd"],
        ),
        ("sudo", &["-u", "bob", "env", "GH_TOKEN=/x", "cmd"]),
        ("docker", &["run", "img", "sh", "-c", "GH_TOKEN=/x cmd"]),
        ("docker", &["build", "--build-arg", "GH_TOKEN=/x", "."]),
        // tmux's \u and \U escapes, an escaped `=`, a continued line.
        ("tmux", &["if", "true", "setenv -g GH_TOKE\\u004e /x"]),
        ("tmux", &["if", "true", "setenv -g GH_TOKE\\U0000004e /x"]),
        ("tmux", &["if", "true", "set\\u0065nv -g GH_TOKEN /x"]),
        ("tmux", &["if", "true", "GH_TOKEN\\075/x"]),
        ("tmux", &["if", "true", "GH_TOKEN\\u003d/x"]),
        ("tmux", &["if", "true", "setenv -g GH_TOKE\\\nN /x"]),
        ("tmux", &["new", "-d", "export GH_TOKE\\\nN=/x; sleep 1"]),
        // bash's forms of an assignment.
        ("tmux", &["new", "-d", "export GH_TOKEN+=/x; sleep 1"]),
        (
            "docker",
            &["run", "img", "bash", "-c", "export $'GH_TOKEN'=/x; cmd"],
        ),
        (
            "docker",
            &["run", "img", "bash", "-c", "export $'GH_TOKE\\x4e'=/x; cmd"],
        ),
        ("sudo", &["bash", "-c", "declare -x GH_TOKEN+=/x"]),
        (
            "systemd-run",
            &["-p", "Environment=OK=1 BASH_EN\\u0056=/x", "true"],
        ),
        // An option's value, attached or not, and tmux's own options.
        ("docker", &["build", "--build-arg=GH_TOKEN=/x", "."]),
        ("docker", &["run", "-lGH_TOKEN=/x", "img"]),
        ("systemd-run", &["--description=GH_TOKEN=/x", "true"]),
        ("tmux", &["-T", "GH_TOKEN=/x", "new", "-d"]),
        ("tmux", &["new", "-d", "-n", "GH_TOKEN=/x"]),
        // After `--`: the command's own words.
        ("docker", &["run", "img", "--", "-e", "GH_TOKEN=/x"]),
        ("systemd-run", &["--", "cmd", "-E", "GH_TOKEN=/x"]),
        // A command given as an argv (tmux 3.0 and later): the program's own pairs.
        ("tmux", &["new", "-d", "env", "GH_TOKEN=/x", "cmd"]),
        ("tmux", &["new", "-d", "sh", "-c", "GH_TOKEN=/x cmd"]),
        (
            "tmux",
            &["neww", "docker", "run", "--env=GH_TOKEN=/x", "img"],
        ),
    ];
    for (program, args) in refused {
        let d = decide(&c, program, args, &[]);
        let r = d
            .refused()
            .unwrap_or_else(|| panic!("{program} {args:?}: not refused"));
        // An escaped name is shown as written, and judged as read.
        assert!(
            r.why.contains("among other words")
                && (r.why.contains("name `BASH_ENV`") || r.why.contains("credential")),
            "{program} {args:?}: {}",
            r.why
        );
    }
    let passed: &[(&str, &[&str])] = &[
        ("systemd-run", &["-p", "Environment=OK=1 OTHER=2", "cmd"]),
        ("env", &["-S", "OK=1 cmd BASH_ENV=/x"]),
        ("tmux", &["setenv", "-u", "BASH_ENV"]),
        ("tmux", &["setenv", "-g", "OK", "1"]),
        ("tmux", &["set-option", "BASH_ENV", "/x"]),
        ("tmux", &["if-shell", "true", "neww -e OK=1 'sleep 1'"]),
        ("tmux", &["if-shell", "-F", "1", "neww -e OK=1"]),
        ("tmux", &["new", "-d", "--", "OK=1 cmd"]),
        ("tmux", &["new", "-d", "make", "CC=gcc"]),
        ("tmux", &["if-shell", "true", "setenv -g OK 1"]),
        ("tmux", &["new", "-d", "grep -r BASH_ENV= /etc"]),
        // Read loosely, a pair refuses only for a credential's name, written as an
        // environment variable's, with its value in the command line.
        ("tmux", &["new", "-d", "LD_LIBRARY_PATH=/opt/lib ./app"]),
        (
            "tmux",
            &["new", "-d", "while IFS=, read -r a b; do :; done < f"],
        ),
        ("tmux", &["set", "-g", "status-style", "bg=black,fg=white"]),
        ("tmux", &["new", "-d", "cmake -DENABLE_LIBSECRET=ON ."]),
        (
            "tmux",
            &["new", "-d", "ssh -o PasswordAuthentication=no host"],
        ),
        (
            "tmux",
            &["new", "-d", "GH_TOKEN=$(gh auth token) ./release"],
        ),
        ("tmux", &["if", "true", "setenv -g GH_TOKEN \"$T\""]),
        (
            "docker",
            &["run", "img", "sh", "-c", "export NODE_OPTIONS=--inspect; x"],
        ),
        (
            "docker",
            &["run", "img", "curl", "-d", "page_token=abc123", "https://e"],
        ),
        ("sudo", &["bash", "-c", "BASH_ENV=/x cmd"]),
        ("tmux", &["setenv", "-g", "BASH_ENV", ""]),
        ("tmux", &["bind", "x", "setenv -g BASH_ENV ''"]),
        (
            "tmux",
            &["-L", "sock", "-f", "/dev/null", "new", "-d", "-c", "/tmp"],
        ),
        ("docker", &["run", "--name=web", "-p", "80:80", "img"]),
        ("sudo", &["make", "install", "PREFIX=/opt"]),
        (
            "docker",
            &["run", "--label", "a=b", "img", "make", "CC=gcc"],
        ),
        ("systemd-run", &["--", "make", "CC=gcc"]),
        ("tmux", &["send-keys", "BASH_ENV=\"\" cmd"]),
        ("tmux", &["if", "true", "setenv -g O\\K 1"]),
    ];
    for (program, args) in passed {
        let d = decide(&c, program, args, &[]);
        assert!(d.refused().is_none(), "{program} {args:?}");
        assert_eq!(&argv(&d)[1..], *args, "{program} {args:?}");
    }
}
