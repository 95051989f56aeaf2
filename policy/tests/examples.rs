//! The three systems envshim was built from, and the secrets example (docs/policy.md, section 14), as example policies, each checked against
//! its own requirements; and every policy file of the fleet example
//! (examples/fleet/, docs/fleet.md), checked to compile.

mod common;
use common::*;
use std::path::PathBuf;

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(name)
}

fn load(name: &str) -> envpolicy::Compiled {
    envpolicy::load::load(&example(name)).unwrap_or_else(|e| panic!("{e}"))
}

/// A copy of loop.toml and its imports in a fresh directory, so tests can edit
/// the env file.
fn loop_copy() -> Dir {
    let dir = Dir::new("loop");
    dir.write(
        "loop.toml",
        &std::fs::read_to_string(example("loop.toml")).unwrap(),
    );
    dir.write(
        "loop/env",
        &std::fs::read_to_string(example("loop/env")).unwrap(),
    );
    dir.write(
        "loop/config.json",
        &std::fs::read_to_string(example("loop/config.json")).unwrap(),
    );
    dir
}

fn load_in(dir: &Dir, name: &str) -> envpolicy::Compiled {
    let c = envpolicy::load::load(&dir.0.join(name)).unwrap_or_else(|e| panic!("{e}"));
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    c
}

// The loop (examples/loop.toml; R1 to R4 are its header's requirements).

#[test]
fn loop_panes_get_only_the_identifiers_and_the_passthrough() {
    // R1.1, R2.1: the -e pairs tmux receives.
    let c = load("loop.toml");
    let args = [
        "new-session",
        "-d",
        "-s",
        "w1",
        "-e",
        "THE_LOOP_INSTANCE=i1",
        "-e",
        "THE_LOOP_WORK_ITEM=W-1",
        "-e",
        "THE_LOOP_CLI_CONFIG=/c.json",
        "-e",
        "JIRA_BASE_URL=https://jira.example.invalid",
        "-e",
        "SOME_VAR=x",
        "-e",
        "LOOP_TRACKER_URL=https://t.invalid",
        "claude",
    ];
    let d = decide(&c, "/usr/bin/tmux", &args, &[]);
    assert_eq!(
        argv(&d),
        [
            "/usr/bin/tmux",
            "new-session",
            "-d",
            "-s",
            "w1",
            "-e",
            "THE_LOOP_INSTANCE=i1",
            "-e",
            "THE_LOOP_WORK_ITEM=W-1",
            "-e",
            "THE_LOOP_CLI_CONFIG=/c.json",
            "-e",
            "LOOP_TRACKER_URL=https://t.invalid",
            "claude"
        ]
    );
}

#[test]
fn loop_env_file_names_are_never_passed() {
    // R1.2, R1.3, R2.3: tmux itself, and whatever it starts, lose every declared name.
    let c = load("loop.toml");
    let env = [
        "THE_LOOP_GH_TOKEN=v1-opaque-value",
        "JIRA_API_TOKEN=v2-opaque-value",
        "JIRA_BASE_URL=https://j",
        "PATH=/bin",
        "THE_LOOP_INSTANCE=i1",
    ];
    let d = decide(&c, "/usr/bin/tmux", &[], &env);
    assert_eq!(names(&d), ["PATH", "THE_LOOP_INSTANCE", "LOOP_TRACKER_URL"]);
    assert_eq!(change(&d, "JIRA_BASE_URL").unwrap().rule.id(), "strip");
    // Declared in the env file, so stripped before rule 4 is reached; still known
    // as a credential, so its value is searched for in argv.
    assert_eq!(
        change(&d, "THE_LOOP_GH_TOKEN").unwrap().action.id(),
        "strip"
    );
    assert!(d.env_verdicts[0].credential && d.env_verdicts[1].credential);
}

#[test]
fn loop_refuses_gh_token_in_the_passthrough_by_name() {
    // R4.3: GH_TOKEN is listed in the passthrough; it is refused and named.
    let c = load("loop.toml");
    let secret = fake_github();
    let env = [format!("GH_TOKEN={secret}")];
    let d = decide(
        &c,
        "/usr/bin/tmux",
        &["new-session", "-e", &format!("GH_TOKEN={secret}")],
        &[env[0].as_str()],
    );
    assert!(get(&d, "GH_TOKEN").is_none());
    assert!(!argv(&d).iter().any(|a| a.contains(&secret)));
    let loud: Vec<_> = d
        .changes
        .iter()
        .filter(|c| c.name.as_deref() == Some("GH_TOKEN"))
        .collect();
    assert!(loud.iter().any(|c| c.action.id() == "refuse"), "{loud:?}");
    for c in &d.changes {
        assert_no_value("change", &format!("{c:?}"), &secret);
    }
}

#[test]
fn loop_passthrough_values_come_from_the_file_re_read_per_decision() {
    // R4.4: a passthrough name declared in the env file takes its value from the
    // file, re-read at every spawn; otherwise from the environment.
    let dir = loop_copy();
    let c = load_in(&dir, "loop.toml");
    let d = decide(
        &c,
        "/bin/bash",
        &[],
        &["LOOP_TRACKER_URL=https://stale.invalid", "LANG=C.UTF-8"],
    );
    assert_eq!(
        get(&d, "LOOP_TRACKER_URL").as_deref(),
        Some("https://tracker.example.invalid/loop")
    );
    assert_eq!(get(&d, "LANG").as_deref(), Some("C.UTF-8"));
    assert_eq!(
        names(&d)
            .iter()
            .filter(|n| *n == "LOOP_TRACKER_URL")
            .count(),
        1
    );
    // Edit the file: the next decision sees the new value without recompiling.
    dir.write(
        "loop/env",
        "THE_LOOP_GH_TOKEN=x\nJIRA_API_TOKEN=y\nJIRA_BASE_URL=z\nLOOP_TRACKER_URL=https://fresh.invalid\n",
    );
    let d = decide(&c, "/bin/bash", &[], &[]);
    assert_eq!(
        get(&d, "LOOP_TRACKER_URL").as_deref(),
        Some("https://fresh.invalid")
    );
    // The file lost the name: the environment's value is used.
    dir.write("loop/env", "JIRA_API_TOKEN=y\n");
    let d = decide(
        &c,
        "/bin/bash",
        &[],
        &["LOOP_TRACKER_URL=https://env.invalid"],
    );
    assert_eq!(
        get(&d, "LOOP_TRACKER_URL").as_deref(),
        Some("https://env.invalid")
    );
}

#[test]
fn loop_is_safe_to_try_as_is() {
    // Tried in a real session, the example sets nothing a program acts on: no proxy,
    // no locale, no path; only its own sample passthrough.
    let c = load("loop.toml");
    let d = decide(
        &c,
        "/bin/bash",
        &[],
        &["PATH=/usr/bin:/bin", "LANG=C.UTF-8"],
    );
    let added: Vec<String> = names(&d)
        .into_iter()
        .filter(|n| n != "PATH" && n != "LANG")
        .collect();
    assert_eq!(added, ["LOOP_TRACKER_URL"]);
    assert_eq!(get(&d, "PATH").as_deref(), Some("/usr/bin:/bin"));
    assert_eq!(get(&d, "LANG").as_deref(), Some("C.UTF-8"));
}

#[test]
fn loop_refuses_the_config_files_credential_names() {
    // R4.2: strings under *TokenEnv / *SecretEnv keys at any depth.
    let c = load("loop.toml");
    let d = decide(
        &c,
        "/bin/bash",
        &[],
        &[
            "JIRA_WEBHOOK_SECRET=w",
            "SLACK_BOT_TOKEN=s",
            "THE_LOOP_GH_TOKEN=t",
        ],
    );
    // Only the passthrough value read from the env file remains.
    assert_eq!(names(&d), ["LOOP_TRACKER_URL"]);
    for name in ["JIRA_WEBHOOK_SECRET", "SLACK_BOT_TOKEN"] {
        assert_eq!(change(&d, name).unwrap().action.id(), "refuse", "{name}");
    }
    assert!(d.env_verdicts.iter().all(|v| v.credential));
}

#[test]
fn loop_finds_the_daemons_token_value_in_argv_even_when_the_launcher_lacks_it() {
    // R2.1: the value of an env-file credential, found by value in any argument.
    let dir = loop_copy();
    let c = load_in(&dir, "loop.toml");
    let d = decide(
        &c,
        "/usr/bin/tmux",
        &["new-session", "echo replace-with-the-daemon-token"],
        &[],
    );
    assert_eq!(
        d.refusal.expect("refused").name.as_deref(),
        Some("THE_LOOP_GH_TOKEN")
    );
}

// AgentMux (examples/agentmux.toml).

#[test]
fn agentmux_strips_its_family_except_the_keep_list_and_marks_children() {
    let c = load("agentmux.toml");
    let env = [
        "AGENTMUX_DATA_HOME=/d",
        "AGENTMUX_CHANNEL=stable",
        "AGENTMUX_ADDED_LATER=x",
        "AGENTMUX_PANE_ID=7",
        "AGENTMUX_NESTED=0",
        "HOME=/h",
    ];
    let d = decide(&c, "/bin/zsh", &[], &env);
    let mut got = names(&d);
    got.sort();
    assert_eq!(
        got,
        [
            "AGENTMUX_BUILD_INFO",
            "AGENTMUX_NESTED",
            "AGENTMUX_PANE_ID",
            "HOME"
        ]
    );
    assert_eq!(get(&d, "AGENTMUX_NESTED").as_deref(), Some("1"));
    // The sentinel and build info are on every child, whatever the program.
    let d = decide(&c, "/usr/local/bin/agentmux", &[], &[]);
    assert_eq!(get(&d, "AGENTMUX_NESTED").as_deref(), Some("1"));
    assert!(get(&d, "AGENTMUX_BUILD_INFO").is_some());
}

// The exec unit (examples/exec-unit.toml).

#[test]
fn exec_unit_starts_from_the_floor_then_extras_then_bindings_then_context() {
    let c = load("exec-unit.toml");
    let env = [
        "PATH=/usr/bin",
        "HOME=/h",
        "TERM=xterm",
        "EDITOR=vi",
        "GH_TOKEN=abcdefghijkl",
        "HTTP_PROXY=http://u:p@proxy:1",
        "AKM_EVENT_SOURCE=workflow",
        "NODE_ENV=production",
        "AKM_BINDING_DEPLOY_TARGET=staging",
        "AKM_RUN_ID=spoofed-by-the-environment",
        "AKM_STEP_ID=spoofed",
    ];
    let d = decide(&c, "/bin/sh", &["-c", "make deploy"], &env);
    let mut got = names(&d);
    got.sort();
    assert_eq!(
        got,
        [
            "AKM_EVENT_SOURCE",
            "AKM_RUN_ID",
            "AKM_STEP_ID",
            "AKM_UNIT",
            "DEPLOY_TARGET",
            "HOME",
            "NODE_ENV",
            "PATH",
            "TERM"
        ]
    );
    assert_eq!(get(&d, "DEPLOY_TARGET").as_deref(), Some("staging"));
    // The engine's context wins over the environment and over the bindings.
    assert_eq!(get(&d, "AKM_RUN_ID").as_deref(), Some("run-42"));
    assert_eq!(get(&d, "AKM_STEP_ID").as_deref(), Some("build"));
    // The order: floor and extras (in input order), then bindings, then context.
    let order = names(&d);
    let pos = |n: &str| order.iter().position(|x| x == n).unwrap();
    assert!(pos("NODE_ENV") < pos("DEPLOY_TARGET"));
    assert!(pos("DEPLOY_TARGET") < pos("AKM_RUN_ID"));
}

// Secrets (examples/secrets.toml).

#[test]
fn secrets_example_gives_gh_its_token_and_refuses_what_would_print_it() {
    let c = load("secrets.toml");
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let p = c.policy();
    let value = fake_github();
    let secrets = [Some(value.as_bytes().to_vec())];
    let decide = |program: &str, args: &[&str]| {
        let mut argv = vec![program.as_bytes().to_vec()];
        argv.extend(args.iter().map(|a| a.as_bytes().to_vec()));
        let pass = envpolicy::outcome::Pass {
            policy: &p,
            env_files: &[],
            secrets: &secrets,
        };
        envpolicy::outcome::Layers::one(pass, Default::default()).decide(
            program.as_bytes(),
            &argv,
            &[b"PATH=/usr/bin".to_vec()],
            &[],
        )
    };
    let d = decide("/usr/bin/gh", &["pr", "list"]);
    assert!(
        get(&d, "GH_TOKEN").is_some_and(|v| v == value),
        "gh did not get GH_TOKEN"
    );
    let d = decide("/usr/bin/env", &[]);
    assert!(get(&d, "GH_TOKEN").is_none());
    for args in [&["auth", "token"][..], &["auth", "status", "--show-token"]] {
        let d = decide("/usr/bin/gh", args);
        let r = d.refusal.as_ref().expect("refused");
        assert_eq!(r.rule.id(), "secret.deny-args");
        assert_no_value("refusal", &r.why, &value);
    }
}

// The fleet example (examples/fleet/, docs/fleet.md): every policy file under
// it, the managed layer and the system policy its Ansible role lays down,
// compiles with no warning.

fn toml_files_under(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            toml_files_under(&path, out);
        } else if path.extension().is_some_and(|x| x == "toml") {
            out.push(path);
        }
    }
}

#[test]
fn every_fleet_policy_compiles_without_a_warning() {
    let mut files = Vec::new();
    toml_files_under(&example("fleet"), &mut files);
    files.sort();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for expected in ["managed.toml", "policy.toml"] {
        assert!(
            names.iter().any(|n| n == expected),
            "no {expected} under examples/fleet: {names:?}"
        );
    }
    for file in &files {
        let c = envpolicy::load::load(file).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            c.warnings.is_empty(),
            "{}: {:?}",
            file.display(),
            c.warnings
        );
    }
}

#[test]
fn the_fleet_managed_layer_refuses_what_no_user_policy_may_pass() {
    let c = load("fleet/ansible/roles/envshim/files/managed.toml");
    let env = [
        "PATH=/usr/bin",
        "AWS_REGION=eu-west-1",
        "DEPLOY_KEY=0123456789abcdef",
        "GH_TOKEN=abcdefgh12345678",
    ];
    let d = decide(&c, "/usr/bin/make", &["make"], &env);
    let child = names(&d);
    assert!(child.contains(&"PATH".to_string()), "{child:?}");
    for gone in ["AWS_REGION", "DEPLOY_KEY", "GH_TOKEN"] {
        assert!(
            !child.contains(&gone.to_string()),
            "{gone} reached make: {child:?}"
        );
    }
    // gh, by its path, gets GH_TOKEN.
    let d = decide(&c, "/usr/bin/gh", &["gh"], &env);
    assert!(names(&d).contains(&"GH_TOKEN".to_string()));
}
