//! One test (or more) per rule of docs/adr/0001-rule-order.md, through the public
//! API: compile a policy, decide an environment and argv, check the child.

mod common;
use common::*;

// Rule 1: normalise.

#[test]
fn entries_without_equals_and_empty_names_are_dropped() {
    let c = compile("version = 1\n");
    let d = decide(&c, "/bin/true", &[], &["JUNK", "=empty", "A=1"]);
    assert_eq!(names(&d), ["A"]);
    assert_eq!(d.changes[0].rule.id(), "normalise.no-equals");
    assert_eq!(d.changes[1].rule.id(), "normalise.empty-name");
}

#[test]
fn duplicates_keep_the_first_copy_only() {
    let c = compile("version = 1\n");
    let d = decide(
        &c,
        "/bin/true",
        &[],
        &["A=first", "B=x", "A=second", "A=third"],
    );
    assert_eq!(get(&d, "A").as_deref(), Some("first"));
    assert_eq!(d.env.len(), 2);
    assert_eq!(
        d.changes
            .iter()
            .filter(|c| c.rule.id() == "normalise.duplicate")
            .count(),
        2
    );
}

#[test]
fn a_later_copy_of_a_refused_credential_never_survives() {
    let c = compile("version = 1\n");
    let d = decide(
        &c,
        "/bin/true",
        &[],
        &["GH_TOKEN=first-value-x", "GH_TOKEN=second-value"],
    );
    assert!(get(&d, "GH_TOKEN").is_none());
}

#[test]
fn duplicate_ld_preload_keeps_the_first() {
    let c = compile("version = 1\n");
    let d = decide(
        &c,
        "/bin/true",
        &[],
        &["LD_PRELOAD=/a.so", "LD_PRELOAD=/evil.so"],
    );
    assert_eq!(get(&d, "LD_PRELOAD").as_deref(), Some("/a.so"));
    assert_eq!(d.env.len(), 1);
}

// Rule 2: base.

#[test]
fn base_none_starts_empty() {
    let c = compile("version = 1\nbase = \"none\"\nkeep = [\"A\"]\n");
    let d = decide(&c, "/bin/true", &[], &["PATH=/bin", "A=1", "B=2"]);
    assert_eq!(names(&d), ["A"]);
    assert_eq!(change(&d, "B").unwrap().rule.id(), "base.none");
}

#[test]
fn base_floor_keeps_the_floor_only() {
    let c = compile("version = 1\nbase = \"floor\"\n");
    let d = decide(
        &c,
        "/bin/true",
        &[],
        &[
            "PATH=/bin",
            "HOME=/root",
            "TMPDIR=/tmp",
            "EDITOR=vi",
            "HTTP_PROXY=http://p:1",
        ],
    );
    assert_eq!(names(&d), ["PATH", "HOME", "TMPDIR"]);
    assert_eq!(change(&d, "EDITOR").unwrap().rule.id(), "base.floor");
}

#[test]
fn base_all_keeps_everything_else() {
    let c = compile("version = 1\nbase = \"all\"\n");
    let d = decide(&c, "/bin/true", &[], &["EDITOR=vi", "X=1"]);
    assert_eq!(names(&d), ["EDITOR", "X"]);
    assert!(d.changes.is_empty());
}

// Rule 3: keep and strip.

#[test]
fn an_exact_keep_beats_a_stripped_family() {
    let c = compile("version = 1\nstrip = [\"AGENTMUX_*\"]\nkeep = [\"AGENTMUX_PANE_ID\"]\n");
    let d = decide(
        &c,
        "/bin/sh",
        &[],
        &[
            "AGENTMUX_PANE_ID=3",
            "AGENTMUX_DATA_HOME=/d",
            "AGENTMUX_NEW_THING=x",
        ],
    );
    assert_eq!(names(&d), ["AGENTMUX_PANE_ID"]);
}

#[test]
fn the_more_specific_glob_wins_and_strip_wins_ties() {
    let c = compile("version = 1\nkeep = [\"*\", \"APP_PUBLIC_*\"]\nstrip = [\"APP_*\", \"X*\"]\n[program.t]\nkeep = [\"X*\"]\n");
    let d = decide(
        &c,
        "/usr/bin/t",
        &[],
        &["APP_PUBLIC_URL=u", "APP_DB=d", "OTHER=o", "XY=1"],
    );
    assert_eq!(names(&d), ["APP_PUBLIC_URL", "OTHER"]);
}

#[test]
fn program_sections_add_to_the_global_rules() {
    let c = compile("version = 1\nbase = \"none\"\nkeep = [\"A\"]\n[program.tmux]\nkeep = [\"B\"]\n[program.other]\nmatch = [\"/opt/*/run\"]\nkeep = [\"C\"]\n");
    let env = ["A=1", "B=2", "C=3"];
    assert_eq!(names(&decide(&c, "/usr/bin/tmux", &[], &env)), ["A", "B"]);
    assert_eq!(names(&decide(&c, "tmux", &[], &env)), ["A", "B"]);
    assert_eq!(names(&decide(&c, "/opt/x/run", &[], &env)), ["A", "C"]);
    assert_eq!(names(&decide(&c, "/usr/bin/run", &[], &env)), ["A"]);
}

// Rule 4: refuse.

#[test]
fn credentials_are_refused_by_builtin_name_and_glob_even_when_kept() {
    let c =
        compile("version = 1\nbase = \"none\"\nkeep = [\"GH_TOKEN\", \"DB_PASSWORD\", \"X\"]\n");
    let d = decide(
        &c,
        "/bin/true",
        &[],
        &[
            "GH_TOKEN=aaaaaaaaaa",
            "DB_PASSWORD=bbbbbbbbbb",
            "X=1",
            "JIRA_API_TOKEN=cccccccccc",
        ],
    );
    assert_eq!(names(&d), ["X"]);
    assert_eq!(change(&d, "GH_TOKEN").unwrap().action.id(), "refuse");
    assert_eq!(change(&d, "DB_PASSWORD").unwrap().action.id(), "refuse");
    // Not kept under base none: stripped quietly, not refused.
    assert_eq!(change(&d, "JIRA_API_TOKEN").unwrap().action.id(), "strip");
}

#[test]
fn credential_names_match_without_regard_to_case() {
    let c = compile("version = 1\n");
    let d = decide(
        &c,
        "/bin/true",
        &[],
        &["db_secret=x", "my_password=y", "Gh_Token=z"],
    );
    assert!(d.env.is_empty(), "{:?}", names(&d));
}

#[test]
fn keep_and_strip_match_case_sensitively() {
    let c = compile("version = 1\nstrip = [\"FOO\"]\n");
    let d = decide(&c, "/bin/true", &[], &["foo=1", "FOO=2"]);
    assert_eq!(names(&d), ["foo"]);
}

#[test]
fn credentials_are_refused_by_value_shape_whatever_the_name() {
    let c = compile("version = 1\n");
    let tok = fake_github();
    let url = "https://user:hunter2hunter2@example.invalid/x";
    let d = decide(
        &c,
        "/bin/true",
        &[],
        &[
            &format!("INNOCENT={tok}"),
            &format!("PIP_INDEX_URL={url}"),
            "NOTE=a token here",
        ],
    );
    assert_eq!(names(&d), ["NOTE"]);
    assert_eq!(
        change(&d, "INNOCENT").unwrap().rule.id(),
        "credential.shape"
    );
    assert!(change(&d, "INNOCENT").unwrap().why.contains("github"));
}

#[test]
fn a_copy_of_a_credential_value_under_another_name_is_refused() {
    let c = compile("version = 1\n");
    let d = decide(
        &c,
        "/bin/true",
        &[],
        &[
            "JIRA_API_TOKEN=opaque-value-123",
            "COPY=opaque-value-123",
            "SHORT=abc",
        ],
    );
    assert_eq!(names(&d), ["SHORT"]);
    assert_eq!(change(&d, "COPY").unwrap().rule.id(), "credential.value");
    assert!(change(&d, "COPY").unwrap().why.contains("JIRA_API_TOKEN"));
}

#[test]
fn a_value_holding_a_credential_value_anywhere_is_refused() {
    let c = compile("version = 1\n");
    let token = "opaque-value-123";
    let aws = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    let gh = format!("ghp_{}", "a1B2".repeat(9));
    let env = [
        format!("JIRA_API_TOKEN={token}"),
        format!("AWS_SECRET_ACCESS_KEY={aws}"),
        format!("AUTHZ=Bearer {token}"),
        format!("URL=x{token}"),
        format!("SUFFIXED={aws}Z"),
        format!("MIDDLE=a:{token}:b"),
        // A token shape glued to other text, with no credential entry beside it.
        format!("GLUED=x{gh}Z"),
        // Shorter than min_value_len: never searched for.
        "PASSWORD=x".to_string(),
        "HAS_X=xx".to_string(),
        // Near misses: a prefix of the value, the value cut by one byte.
        format!("PART=Bearer {}", &token[..token.len() - 1]),
    ];
    let env: Vec<&str> = env.iter().map(String::as_str).collect();
    let d = decide(&c, "/bin/true", &[], &env);
    assert_eq!(names(&d), ["HAS_X", "PART"]);
    for (name, source) in [
        ("AUTHZ", "JIRA_API_TOKEN"),
        ("URL", "JIRA_API_TOKEN"),
        ("SUFFIXED", "AWS_SECRET_ACCESS_KEY"),
        ("MIDDLE", "JIRA_API_TOKEN"),
    ] {
        let ch = change(&d, name).unwrap();
        assert_eq!(ch.rule.id(), "credential.value", "{name}");
        assert!(ch.why.contains(source), "{name}: {}", ch.why);
    }
    assert_eq!(change(&d, "GLUED").unwrap().rule.id(), "credential.shape");
}

/// An encoded copy is a copy (docs/adr/0017, "Encoded copies"): git's
/// `http.extraheader=AUTHORIZATION: basic <base64 of x-access-token:TOKEN>` and
/// curl's `Authorization: Basic <base64 of user:TOKEN>` hold the token. At every
/// alignment of the token in the encoded text (a prefix of 0, 1 or 2 bytes mod
/// 3), in the standard and the URL-safe alphabet, padded or not.
#[test]
fn a_value_holding_a_base64_copy_of_a_credential_is_refused() {
    let c = compile("version = 1\n");
    let token = fake_github();
    // '~' and '?' encode as '+' and '/' in every group, at every alignment: the
    // two alphabets differ for this one.
    let password: String = "s3~?x".repeat(4);
    let differs = |p: &str| base64(p.as_bytes(), false, true) != base64(p.as_bytes(), true, true);
    assert!(["", "x", "xy"]
        .iter()
        .all(|pre| differs(&format!("{pre}{password}"))));
    for (name, secret) in [("GH_TOKEN", &token), ("DB_PASSWORD", &password)] {
        for prefix in ["", "x", "xy", "bot:", "user:", "x-access-token:"] {
            for suffix in ["", ":", "\n"] {
                for (url_safe, padded) in
                    [(false, true), (false, false), (true, true), (true, false)]
                {
                    let plain = format!("{prefix}{secret}{suffix}");
                    let encoded = base64(plain.as_bytes(), url_safe, padded);
                    let env = [
                        format!("{name}={secret}"),
                        format!("GIT_AUTH=AUTHORIZATION: basic {encoded}"),
                        format!("BARE={encoded}"),
                        "OTHER=1".to_string(),
                    ];
                    let env: Vec<&str> = env.iter().map(String::as_str).collect();
                    let d = decide(&c, "/bin/true", &[], &env);
                    let case = format!(
                        "{name}, prefix of {} bytes, suffix of {}, url_safe {url_safe}, padded {padded}",
                        prefix.len(),
                        suffix.len()
                    );
                    assert_eq!(names(&d), ["OTHER"], "{case}");
                    for copy in ["GIT_AUTH", "BARE"] {
                        let ch = change(&d, copy).unwrap_or_else(|| panic!("{copy}: {case}"));
                        assert_eq!(ch.rule.id(), "credential.value", "{copy}: {case}");
                        assert_eq!(ch.action.id(), "refuse", "{copy}: {case}");
                        assert!(ch.why.contains(name), "{copy}: {case}");
                        assert_no_value(copy, &ch.why, secret);
                    }
                }
            }
        }
    }
}

/// The encoded search finds copies, not base64: an unrelated base64 value
/// passes, and a credential shorter than `credentials.min_value_len` is not
/// searched for, encoded or not.
#[test]
fn unrelated_base64_and_short_credentials_pass_the_encoded_search() {
    let c = compile("version = 1\n");
    let token = fake_github();
    let short = "abcdefg"; // 7 bytes, under the default 8
    let env = [
        format!("GH_TOKEN={token}"),
        format!("PASSWORD={short}"),
        format!(
            "DATA={}",
            base64(
                b"an unrelated configuration blob, 48 bytes long..",
                false,
                true
            )
        ),
        format!(
            "AUTH=Basic {}",
            base64(format!("user:{short}").as_bytes(), false, true)
        ),
        // The token's encoding cut to its first 4 bytes: no needle.
        format!("CUT={}", base64(&token.as_bytes()[..4], false, false)),
    ];
    let env: Vec<&str> = env.iter().map(String::as_str).collect();
    let d = decide(&c, "/bin/true", &[], &env);
    assert_eq!(names(&d), ["DATA", "AUTH", "CUT"]);
}

#[test]
fn env_file_names_are_imported_to_strip_or_to_refuse() {
    let dir = Dir::new("import");
    dir.write("strip.env", "A=1\nexport B=\"two\"\n");
    dir.write("refuse.env", "C=3\n");
    let c = dir.compile(
        "version = 1\nkeep = [\"B\", \"C\"]\n[[import.env_file]]\npath = \"strip.env\"\n[[import.env_file]]\npath = \"refuse.env\"\nrole = \"refuse\"\n",
    );
    let d = decide(&c, "/bin/true", &[], &["A=x", "B=y", "C=z", "D=w"]);
    assert_eq!(names(&d), ["B", "D"]);
    assert_eq!(change(&d, "A").unwrap().action.id(), "strip");
    assert_eq!(change(&d, "C").unwrap().action.id(), "refuse");
}

/// A name an env file declares twice (dotenv files do: a default, then an
/// override) does not end the reading of the file: every name after it is
/// declared too, and a kept one still takes its value from the file.
#[test]
fn an_env_file_that_declares_a_name_twice_declares_every_name_after_it() {
    let dir = Dir::new("import-twice");
    dir.write("twice.env", "A=1\nA=2\nLATER_NAME=3\nKEPT=from-file\n");
    let c = dir.compile(
        "version = 1\nkeep = [\"KEPT\"]\n[[import.env_file]]\npath = \"twice.env\"\nvalues = true\n",
    );
    let d = decide(&c, "/bin/true", &[], &["A=x", "LATER_NAME=y", "OTHER=z"]);
    let mut passed = names(&d);
    passed.sort();
    assert_eq!(passed, ["KEPT", "OTHER"]);
    assert_eq!(change(&d, "LATER_NAME").unwrap().action.id(), "strip");
    assert_eq!(get(&d, "KEPT").as_deref(), Some("from-file"));
}

#[test]
fn config_key_suffixes_name_credentials_at_any_depth() {
    let dir = Dir::new("config");
    dir.write("c.toml", "[a.b]\nbotTokenEnv = \"DEEP_NAME\"\n[[x]]\nkeys = { signingSecretEnv = [\"LIST_ONE\", \"LIST_TWO\"] }\n");
    dir.write(
        "c.json",
        r#"{"svc": [{"apiTokenEnv": "JSON_NAME"}], "notTokenEnvHere": "NOT_ME"}"#,
    );
    let c = dir.compile("version = 1\nkeep = [\"DEEP_NAME\"]\n[[import.config]]\npath = \"c.toml\"\n[[import.config]]\npath = \"c.json\"\n");
    let d = decide(
        &c,
        "/bin/true",
        &[],
        &[
            "DEEP_NAME=1",
            "LIST_ONE=2",
            "LIST_TWO=3",
            "JSON_NAME=4",
            "NOT_ME=5",
        ],
    );
    assert_eq!(names(&d), ["NOT_ME"]);
    assert_eq!(change(&d, "DEEP_NAME").unwrap().action.id(), "refuse");
}

#[test]
fn a_grant_lets_one_credential_through_to_one_program() {
    let c = compile("version = 1\n[[grant]]\nname = \"REGISTRY_TOKEN\"\nprogram = \"docker\"\n");
    let env = ["REGISTRY_TOKEN=abcdefghij", "GH_TOKEN=klmnopqrst"];
    let d = decide(&c, "/usr/bin/docker", &[], &env);
    assert_eq!(names(&d), ["REGISTRY_TOKEN"]);
    assert_eq!(change(&d, "REGISTRY_TOKEN").unwrap().action.id(), "grant");
    assert!(d
        .loud()
        .any(|c| c.name.as_deref() == Some("REGISTRY_TOKEN")));
    let d = decide(&c, "/usr/bin/podman", &[], &env);
    assert!(d.env.is_empty());
}

#[test]
fn a_grant_delivers_only_its_own_value() {
    let c = compile(
        "version = 1\nkeep = [\"DEPLOY_TOKEN\"]\n[[grant]]\nname = \"DEPLOY_TOKEN\"\nprogram = \"docker\"\n",
    );
    let gh = fake_github();
    // The environment path: the granted name carries another credential's value.
    let laundered = format!("DEPLOY_TOKEN={gh}");
    let gh_entry = format!("GH_TOKEN={gh}");
    let d = decide(&c, "/usr/bin/docker", &[], &[&gh_entry, &laundered]);
    assert!(names(&d).is_empty(), "{:?}", names(&d));
    let ch = change(&d, "DEPLOY_TOKEN").unwrap();
    assert_eq!(
        (ch.action.id(), ch.rule.id()),
        ("refuse", "credential.value")
    );
    assert!(ch.why.contains("GH_TOKEN") && ch.loud, "{ch:?}");
    // The credential is only in the caller's environment (`env -i
    // DEPLOY_TOKEN=$GH_TOKEN docker`): refused all the same.
    let policy = c.policy();
    let d = envpolicy::outcome::decide(
        &policy,
        b"/usr/bin/docker",
        &bytes(&["/usr/bin/docker"]),
        &bytes(&[&laundered]),
        &bytes(&[&gh_entry, "HOME=/root"]),
        &[],
    );
    assert!(names(&d).is_empty(), "{:?}", names(&d));
    assert_eq!(
        change(&d, "DEPLOY_TOKEN").unwrap().rule.id(),
        "credential.value"
    );
    // Its own value still passes.
    let d = decide(
        &c,
        "/usr/bin/docker",
        &[],
        &[&gh_entry, "DEPLOY_TOKEN=own-value-12345"],
    );
    assert_eq!(names(&d), ["DEPLOY_TOKEN"]);
    // The argv path: `docker run -e DEPLOY_TOKEN=$GH_TOKEN img` is refused, and
    // the value never moves into docker's environment.
    let d = decide(
        &c,
        "/usr/bin/docker",
        &["run", "-e", &laundered, "img"],
        &[&gh_entry],
    );
    let r = d.refused().expect("the exec is refused");
    assert_eq!((r.target.id(), r.rule.id()), ("argv", "argv.value"));
    assert!(r.why.contains("GH_TOKEN"), "{r:?}");
    assert!(d.env.iter().all(|e| !e.starts_with(b"DEPLOY_TOKEN")));
    // Its own value still moves, name-only.
    let own = "DEPLOY_TOKEN=own-value-12345";
    let d = decide(
        &c,
        "/usr/bin/docker",
        &["run", "-e", own, "img"],
        &[&gh_entry],
    );
    assert!(d.refused().is_none());
    assert_eq!(
        argv(&d),
        ["/usr/bin/docker", "run", "-e", "DEPLOY_TOKEN", "img"]
    );
    assert_eq!(get(&d, "DEPLOY_TOKEN").as_deref(), Some("own-value-12345"));
}

#[test]
fn a_refused_env_file_value_takes_the_inherited_value_with_it() {
    let dir = Dir::new("refused_file_value");
    dir.write("vals.env", &format!("PROXY={}\n", fake_github()));
    let c = dir.compile(
        "version = 1\nkeep = [\"PROXY\"]\n[[import.env_file]]\npath = \"vals.env\"\nvalues = true\n",
    );
    let d = decide(
        &c,
        "/bin/true",
        &[],
        &["PROXY=http://stale.example:3128", "OTHER=1"],
    );
    assert_eq!(
        names(&d),
        ["OTHER"],
        "the stale inherited value passed: {:?}",
        d.changes
    );
    let loud: Vec<_> = d.loud().collect();
    assert!(
        loud.iter()
            .any(|c| c.name.as_deref() == Some("PROXY") && c.rule.id() == "env-file.refused"),
        "{loud:?}"
    );
    // The explanation of the inherited entry says why it went.
    let inherited = d.changes.iter().find(|c| c.index == Some(0)).unwrap();
    assert!(inherited.why.contains("vals.env"), "{inherited:?}");
    // With no inherited value, the refusal is still reported.
    let d = decide(&c, "/bin/true", &[], &["OTHER=1"]);
    assert!(d.loud().any(|c| c.rule.id() == "env-file.refused"));
    // A value the policy admits is passed, from the file.
    dir.write("vals.env", "PROXY=http://proxy.example:3128\n");
    let d = decide(&c, "/bin/true", &[], &["PROXY=http://stale.example:3128"]);
    assert_eq!(
        get(&d, "PROXY").as_deref(),
        Some("http://proxy.example:3128")
    );
}

#[test]
fn names_added_to_an_env_file_after_the_compile_count() {
    // A program that holds a compiled policy for a long time (the Rust API's
    // spawners, the shim in a tmux server) sees the names a file declares now.
    let dir = Dir::new("renamed");
    dir.write("strip.env", "OLD_NAME=1\n");
    let c = dir.compile(
        "version = 1\nkeep = [\"EXACT\", \"GLOB_*\"]\n[[import.env_file]]\npath = \"strip.env\"\n",
    );
    let env = ["OLD_NAME=1", "NEW_NAME=2", "EXACT=3", "GLOB_X=4", "OTHER=5"];
    let d = decide(&c, "/bin/true", &[], &env);
    assert_eq!(names(&d), ["NEW_NAME", "EXACT", "GLOB_X", "OTHER"]);
    std::thread::sleep(std::time::Duration::from_millis(10));
    dir.write("strip.env", "OLD_NAME=1\nNEW_NAME=1\nEXACT=1\nGLOB_X=1\n");
    let d = decide(&c, "/bin/true", &[], &env);
    // An exact keep still beats a name to strip; a glob keep does not.
    assert_eq!(names(&d), ["EXACT", "OTHER"]);
    assert_eq!(change(&d, "NEW_NAME").unwrap().rule.id(), "env-file.name");
}

// Rule 5: unsafe names and values.

#[test]
fn loader_and_interpreter_hooks_are_stripped() {
    let c = compile("version = 1\n");
    let env = [
        "LD_LIBRARY_PATH=/x",
        "LD_AUDIT=/a.so",
        "BASH_ENV=/e",
        "ENV=/e",
        "IFS=x",
        "BASH_FUNC_f%%=() { :; }",
        "PYTHONSTARTUP=/s",
        "PERL5OPT=-d",
        "NODE_OPTIONS=--require=/x",
        "GCONV_PATH=/g",
        "OK=1",
    ];
    let d = decide(&c, "/bin/true", &[], &env);
    assert_eq!(names(&d), ["OK"]);
    assert_eq!(change(&d, "BASH_ENV").unwrap().rule.id(), "unsafe.name");
}

#[test]
fn an_unsafe_name_comes_back_only_by_exact_keep() {
    let c = compile("version = 1\nkeep = [\"LD_LIBRARY_PATH\", \"PERL*\"]\n");
    let d = decide(&c, "/bin/true", &[], &["LD_LIBRARY_PATH=/x", "PERL5OPT=-d"]);
    assert_eq!(names(&d), ["LD_LIBRARY_PATH"]);
    let c = compile("version = 1\nunsafe = \"keep\"\n");
    let d = decide(&c, "/bin/true", &[], &["LD_LIBRARY_PATH=/x", "PERL5OPT=-d"]);
    assert_eq!(d.env.len(), 2);
}

#[test]
fn the_shims_own_variables_are_not_unsafe() {
    let c = compile("version = 1\n");
    let d = decide(
        &c,
        "/bin/true",
        &[],
        &[
            "LD_PRELOAD=/lib/libenvshim.so",
            "ENVSHIM_POLICY=/etc/p.toml",
        ],
    );
    assert_eq!(d.env.len(), 2);
}

#[test]
fn locale_terminal_and_zone_values_are_checked() {
    let c = compile("version = 1\nkeep = [\"TERM\"]\n");
    let env = [
        "TERM=../../evil",
        "LANG=en_US.UTF-8",
        "LC_ALL=%n%n",
        "TZ=Europe/Berlin",
        "LC_CTYPE=C.UTF-8",
    ];
    let d = decide(&c, "/bin/true", &[], &env);
    assert_eq!(names(&d), ["LANG", "TZ", "LC_CTYPE"]);
    for (tz, ok) in [
        (":/usr/share/zoneinfo/UTC", true),
        ("/etc/shadow", false),
        ("Europe/../../x", false),
        ("UTC", true),
    ] {
        let env = [format!("TZ={tz}")];
        let d = decide(&c, "/bin/true", &[], &[env[0].as_str()]);
        assert_eq!(d.env.len() == 1, ok, "TZ={tz}");
    }
}

// Rule 7: set.

#[test]
fn set_values_win_over_anything_inherited() {
    let c = compile("version = 1\nbase = \"none\"\nkeep = [\"MODE\"]\n[set]\nMODE = \"safe\"\nCOPY = \"${USER}-x\"\nLIT = \"$$1\"\n");
    let d = decide(&c, "/bin/true", &[], &["MODE=spoofed", "USER=ann"]);
    assert_eq!(get(&d, "MODE").as_deref(), Some("safe"));
    assert_eq!(get(&d, "COPY").as_deref(), Some("ann-x"));
    assert_eq!(get(&d, "LIT").as_deref(), Some("$1"));
    assert_eq!(names(&d).iter().filter(|n| *n == "MODE").count(), 1);
}

#[test]
fn a_programs_set_wins_over_the_global_set() {
    let c = compile("version = 1\n[set]\nX = \"global\"\n[program.tmux.set]\nX = \"tmux\"\n");
    assert_eq!(
        get(&decide(&c, "tmux", &[], &[]), "X").as_deref(),
        Some("tmux")
    );
    assert_eq!(
        get(&decide(&c, "bash", &[], &[]), "X").as_deref(),
        Some("global")
    );
}

#[test]
fn set_cannot_copy_a_credential_or_hold_a_secret() {
    let e = envpolicy::load::compile_text(
        "version = 1\n[set]\nX = \"${GH_TOKEN}\"\n",
        std::path::Path::new("p.toml"),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("p.toml:3:5: X would copy credential GH_TOKEN"),
        "{e}"
    );
    let text = format!("version = 1\n[set]\nX = \"{}\"\n", fake_github());
    let e = envpolicy::load::compile_text(&text, std::path::Path::new("p.toml")).unwrap_err();
    assert!(e.to_string().contains("looks like a github token"), "{e}");
    assert_no_value("error", &e.to_string(), &fake_github());
}

// Rule 8: stay.

#[test]
fn the_shim_entry_and_policy_variable_stay() {
    let c = compile("version = 1\nbase = \"none\"\n");
    let policy = c.policy();
    let env = bytes(&["LD_PRELOAD=/other.so", "ENVSHIM_POLICY=/tmp/lax.toml"]);
    let keep_all = compile("version = 1\n");
    let d = sticky_decide(
        &policy,
        b"/bin/true",
        &[],
        &env,
        &[],
        &[],
        Some(b"/lib/libenvshim.so"),
        Some(b"ENVSHIM_POLICY=/etc/strict.toml"),
    );
    assert_eq!(
        get(&d, "ENVSHIM_POLICY").as_deref(),
        Some("/etc/strict.toml")
    );
    assert_eq!(get(&d, "LD_PRELOAD").as_deref(), Some("/lib/libenvshim.so"));
    // With the other entry kept, the shim goes first and the rest keeps its order.
    let p2 = keep_all.policy();
    let env = bytes(&["LD_PRELOAD=/a.so:/b.so"]);
    let d = sticky_decide(
        &p2,
        b"/bin/true",
        &[],
        &env,
        &[],
        &[],
        Some(b"/lib/libenvshim.so"),
        None,
    );
    assert_eq!(
        get(&d, "LD_PRELOAD").as_deref(),
        Some("/lib/libenvshim.so:/a.so:/b.so")
    );
    // Already present anywhere: unchanged.
    let env = bytes(&["LD_PRELOAD=/a.so /lib/libenvshim.so"]);
    let d = sticky_decide(
        &p2,
        b"/bin/true",
        &[],
        &env,
        &[],
        &[],
        Some(b"/lib/libenvshim.so"),
        None,
    );
    assert_eq!(
        get(&d, "LD_PRELOAD").as_deref(),
        Some("/a.so /lib/libenvshim.so")
    );
    // sticky = false turns it off.
    let off = compile("version = 1\nsticky = false\n");
    let d = sticky_decide(
        &off.policy(),
        b"/bin/true",
        &[],
        &[],
        &[],
        &[],
        Some(b"/lib/libenvshim.so"),
        Some(b"ENVSHIM_POLICY=/p"),
    );
    assert!(d.env.is_empty());
}

/// An environment that already holds the shim's `ENVSHIM_POLICY` entry, as every
/// child of a process under the shim does: the entry stays where it is, and
/// nothing is reported changed. A different value is replaced, and under
/// `base = "none"` the entry is there all the same.
#[test]
fn an_inherited_policy_entry_stays_in_place_unchanged() {
    let entry: &[u8] = b"ENVSHIM_POLICY=/etc/envshim/examples/loop.toml";
    let with_entry = |policy: &str, env: &[Vec<u8>]| {
        let c = compile(policy);
        let p = c.policy();
        sticky_decide(&p, b"/bin/true", &[], env, &[], &[], None, Some(entry))
    };
    let env = bytes(&[
        "A=1",
        "ENVSHIM_POLICY=/etc/envshim/examples/loop.toml",
        "B=2",
    ]);
    let d = with_entry("version = 1\n", &env);
    assert_eq!(d.env, env);
    assert!(d.changes.is_empty(), "{:?}", d.changes);

    let other = bytes(&["A=1", "ENVSHIM_POLICY=/tmp/lax.toml", "B=2"]);
    let d = with_entry("version = 1\n", &other);
    assert_eq!(
        get(&d, "ENVSHIM_POLICY").as_deref(),
        Some("/etc/envshim/examples/loop.toml")
    );
    assert_eq!(d.env.len(), 3);

    let d = with_entry("version = 1\nbase = \"none\"\n", &env);
    assert_eq!(d.env, vec![entry.to_vec()]);
}

// Modes.

#[test]
fn audit_mode_reports_the_same_changes() {
    let enforce = compile("version = 1\n");
    let audit = compile("version = 1\nmode = \"audit\"\n");
    let env = ["GH_TOKEN=abcdefghijkl", "X=1"];
    let a = decide(&audit, "/bin/true", &[], &env);
    let e = decide(&enforce, "/bin/true", &[], &env);
    assert_eq!(a.mode, envpolicy::compiled::Mode::Audit);
    assert_eq!(a.changes, e.changes);
}

// Bytes, not strings.

#[test]
fn environment_entries_are_bytes() {
    let c = compile("version = 1\n");
    let policy = c.policy();
    let big = format!("BIG={}", "v".repeat(1 << 20));
    let env: Vec<Vec<u8>> = vec![
        b"RAW=\xff\xfe=\x00x".to_vec(),
        b"EQ=a=b=c".to_vec(),
        big.into_bytes(),
        b"\xc3(=1".to_vec(),
    ];
    let d = envpolicy::outcome::decide(&policy, b"/bin/true", &[], &env, &[], &[]);
    assert_eq!(d.env, env);
}

// Which changes deserve a warning.

#[test]
fn only_credentials_a_keep_list_named_are_loud() {
    let c = compile("version = 1\nkeep = [\"GH_TOKEN\"]\n");
    let d = decide(
        &c,
        "/bin/true",
        &[],
        &["GH_TOKEN=abcdefghijkl", "JIRA_API_TOKEN=mnopqrstuvwx"],
    );
    let loud: Vec<_> = d.loud().map(|c| c.name.clone().unwrap()).collect();
    assert_eq!(
        loud,
        ["GH_TOKEN"],
        "an inherited credential is removed quietly"
    );
    assert!(d.env.is_empty());
}

#[test]
fn copies_of_credential_values_are_found_past_the_small_table() {
    // More credential values than the decision keeps on its stack (32).
    let c = compile("version = 1\n");
    let mut env: Vec<String> = (0..40)
        .map(|i| format!("SVC{i}_TOKEN=opaque-value-number-{i:03}"))
        .collect();
    env.push("LATE_COPY=opaque-value-number-039".to_string());
    env.push("EARLY_COPY=opaque-value-number-000".to_string());
    env.push("PLAIN=opaque-value-number-999".to_string());
    let refs: Vec<&str> = env.iter().map(String::as_str).collect();
    let d = decide(&c, "/bin/true", &[], &refs);
    assert_eq!(names(&d), ["PLAIN"]);
    assert_eq!(
        change(&d, "LATE_COPY").unwrap().rule.id(),
        "credential.value"
    );
    assert_eq!(
        change(&d, "EARLY_COPY").unwrap().rule.id(),
        "credential.value"
    );
}

/// One pass of `p` with rule 8's entries (`preload`, `policy_entry`).
#[allow(clippy::too_many_arguments)]
fn sticky_decide(
    p: &envpolicy::Policy<'_>,
    program: &[u8],
    argv: &[Vec<u8>],
    env: &[Vec<u8>],
    parent_env: &[Vec<u8>],
    files: &[Option<Vec<u8>>],
    preload: Option<&[u8]>,
    policy_entry: Option<&[u8]>,
) -> envpolicy::outcome::Decision {
    let sticky = envpolicy::outcome::Sticky {
        preload,
        policy_entry,
        hint: None,
    };
    envpolicy::outcome::Layers::one(envpolicy::outcome::Pass::new(p, files), sticky)
        .decide(program, argv, env, parent_env)
}

// Which program: through launchers and interpreters (docs/policy.md, section 4).

/// A grant to a script reaches it through its interpreter and launchers, a
/// grant to the interpreter still reaches its scripts, a secret's own grant
/// only the file exec'd, and a program section of the launcher still applies.
#[test]
fn grants_and_sections_match_the_program_run_and_the_file_named() {
    let c = compile(
        "version = 1\n\
         [[grant]]\nname = \"OPENAI_API_KEY\"\nprogram = \"fake-agent\"\n\
         [[grant]]\nname = \"NPM_TOKEN\"\nprogram = \"node\"\n\
         [program.env]\nstrip = [\"FD_MARK\"]\n",
    );
    let env = [
        "OPENAI_API_KEY=sk-one",
        "NPM_TOKEN=npm-two",
        "FD_MARK=1",
        "PATH=/bin",
    ];
    let d = decide(
        &c,
        "/usr/bin/env",
        &["node", "/opt/bin/fake-agent", "-p"],
        &env,
    );
    assert_eq!(d.program, b"/opt/bin/fake-agent");
    assert_eq!(get(&d, "OPENAI_API_KEY").as_deref(), Some("sk-one"));
    // node is a step between: neither the file named nor the program run.
    assert_eq!(get(&d, "NPM_TOKEN"), None);
    assert_eq!(
        get(&d, "FD_MARK"),
        None,
        "[program.env] did not apply to env"
    );
    let d = decide(&c, "/usr/bin/node", &["/opt/bin/fake-agent", "-p"], &env);
    assert_eq!(get(&d, "OPENAI_API_KEY").as_deref(), Some("sk-one"));
    assert_eq!(
        get(&d, "NPM_TOKEN").as_deref(),
        Some("npm-two"),
        "node's grant"
    );
    // Code of the caller's choosing first: the program is node.
    let d = decide(
        &c,
        "node",
        &["--require", "/tmp/x.js", "/opt/bin/fake-agent"],
        &env,
    );
    assert_eq!(d.program, b"node");
    assert_eq!(get(&d, "OPENAI_API_KEY"), None);
    // Another script gets the interpreter's grant only.
    let d = decide(&c, "node", &["/opt/bin/mcp-server.js"], &env);
    assert_eq!(get(&d, "OPENAI_API_KEY"), None);
    assert_eq!(get(&d, "NPM_TOKEN").as_deref(), Some("npm-two"));
}

#[test]
fn a_secret_is_not_reached_through_an_interpreter() {
    let c = compile(
        "version = 1\n\
         [[secret]]\nname = \"GH_TOKEN\"\nfrom = \"file:/nonexistent/gh\"\nprogram = \"/usr/local/bin/gh-tool\"\n",
    );
    let env = ["GH_TOKEN=ghp_inherited_value_not_delivered_here"];
    // The file itself: the secret's program (an inherited copy passes, rule 6b).
    let d = decide(&c, "/usr/local/bin/gh-tool", &[], &env);
    assert!(get(&d, "GH_TOKEN").is_some());
    // Through an interpreter found by PATH: not the secret's program.
    let d = decide(&c, "/home/u/bin/node", &["/usr/local/bin/gh-tool"], &env);
    assert_eq!(d.program, b"/usr/local/bin/gh-tool");
    assert_eq!(get(&d, "GH_TOKEN"), None);
}
