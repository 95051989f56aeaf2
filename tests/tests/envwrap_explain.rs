//! `envwrap explain` and `envwrap check`: the decision table for the current
//! environment or an env file, the arguments that would change, and a policy's
//! summary. Every output is checked by the harness for seeded values: values must
//! show only as `<N bytes, SHAPE>`.

use crate::envwrap_util::*;
use envshim_e2e::*;

/// The table line of `name` in explain's output.
#[track_caller]
fn row<'a>(o: &Outcome, out: &'a str, name: &str) -> &'a str {
    out.lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| o.fail(&format!("no row for {name}")))
}

#[test]
fn explain_current_environment_never_shows_a_value() {
    let sb = Sandbox::new("envwrap_explain_env");
    let o = envwrap(&sb)
        .env_secrets()
        .env("PLAIN_SETTING", "hello")
        .args(["explain", "--policy"])
        .arg(example_policy("loop.toml"))
        .args(["--program", "tmux"])
        .expect_success();
    let out = o.stdout_str();
    expect_in(&o, &out, "program  tmux");
    let gh = row(&o, &out, "GH_TOKEN");
    assert!(
        gh.contains("refused") && gh.contains("<40 bytes, github token>"),
        "{gh}"
    );
    assert!(gh.contains("credential.name"), "{gh}");
    let jira = row(&o, &out, "JIRA_API_TOKEN");
    // Declared in the loop's env file: stripped before the credential rule.
    assert!(
        jira.contains("stripped") && jira.contains("<24 bytes>"),
        "{jira}"
    );
    assert!(
        jira.contains("name declared in an imported env file"),
        "{jira}"
    );
    let url = row(&o, &out, "PROXY_URL");
    assert!(url.contains("URL with user:password@"), "{url}");
    let plain = row(&o, &out, "PLAIN_SETTING");
    assert!(
        plain.contains("kept") && plain.contains("<5 bytes>") && plain.contains("base.all"),
        "{plain}"
    );
    // The loop's passthrough value comes from its env file.
    let proxy = row(&o, &out, "LOOP_TRACKER_URL");
    assert!(
        proxy.contains("set") && proxy.contains("env-file.value"),
        "{proxy}"
    );
    for name in SECRET_NAMES {
        row(&o, &out, name);
    }
}

#[test]
fn explain_arguments_that_would_change() {
    let sb = Sandbox::new("envwrap_explain_argv");
    let gh = sb.secrets().get("GH_TOKEN").assignment();
    let o = envwrap(&sb)
        .env_secrets()
        .args(["explain", "--policy"])
        .arg(example_policy("loop.toml"))
        .args([
            "--",
            "tmux",
            "new-session",
            "-e",
            &gh,
            "-e",
            "THE_LOOP_INSTANCE=7",
            "-e",
            "OTHER=1",
        ])
        .expect_success();
    let out = o.stdout_str();
    expect_in(&o, &out, "GH_TOKEN=<40 bytes, github token>");
    expect_in(&o, &out, "OTHER=<1 byte>");
    let dropped = out.lines().filter(|l| l.contains("dropped")).count();
    assert_eq!(dropped, 4, "two pairs and their flags: {out}");
    assert!(
        !out.contains("THE_LOOP_INSTANCE=<"),
        "an admitted pair is unchanged: {out}"
    );

    // A secret outside a pair: the exec would be refused.
    let value = sb.secrets().value("OPENAI_API_KEY").to_string();
    let o = envwrap(&sb)
        .env_secrets()
        .args([
            "explain",
            "--",
            "curl",
            &format!("--header=Authorization: {value}"),
        ])
        .expect_success();
    let out = o.stdout_str();
    expect_in(&o, &out, "refused");
    expect_in(&o, &out, "openai project key");
    expect_in(&o, &out, "the exec would be refused (envwrap exits 126): argument 1 holds the value of credential OPENAI_API_KEY");
}

#[test]
fn explain_env_file_and_json() {
    let sb = Sandbox::new("envwrap_explain_file");
    let file = sb.write(
        "daemon.env",
        sb.secrets().env_file_contents() + "NOT A LINE\nPLAIN=1\n",
    );
    let o = envwrap(&sb)
        .args(["explain", "--json", "--env-file"])
        .arg(&file)
        .expect_success();
    let out = o.stdout_str();
    assert!(
        out.starts_with('{') && out.trim_end().ends_with('}'),
        "{o:?}"
    );
    expect_in(&o, &out, r#""name":"GH_TOKEN""#);
    expect_in(&o, &out, r#""decision":"refused""#);
    expect_in(&o, &out, r#""shape":"github token""#);
    expect_in(&o, &out, r#""name":"PLAIN","rule":"base.all""#);
    // The bad line is reported by number, never by its text.
    expect_in(
        &o,
        &o.stderr_str(),
        "line 12: missing '=' after the variable name (line skipped)",
    );
}

#[test]
fn check_summaries_and_errors() {
    let sb = Sandbox::new("envwrap_check");
    let o = envwrap(&sb)
        .arg("check")
        .arg(example_policy("loop.toml"))
        .expect_success();
    let out = o.stdout_str();
    expect_in(&o, &out, "loop.toml: valid");
    expect_in(
        &o,
        &out,
        "GH_TOKEN named a credential: refused all the same",
    );
    expect_in(&o, &out, "imported: THE_LOOP_GH_TOKEN");
    expect_in(&o, &out, "[program.tmux] match tmux");
    let o = envwrap(&sb)
        .arg("check")
        .arg(example_policy("agentmux.toml"))
        .expect_success();
    expect_in(
        &o,
        &o.stdout_str(),
        "sets        AGENTMUX_BUILD_INFO, AGENTMUX_NESTED",
    );
    let o = envwrap(&sb)
        .arg("check")
        .arg(example_policy("exec-unit.toml"))
        .expect_success();
    expect_in(&o, &o.stdout_str(), "the floor (PATH, HOME");
    let o = envwrap(&sb)
        .args(["check", "--json"])
        .arg(example_policy("agentmux.toml"))
        .expect_success();
    expect_in(&o, &o.stdout_str(), r#""strip":["AGENTMUX_*"]"#);
    // A policy that starts from nothing says what it keeps in one phrase.
    let none = sb.write(
        "none.toml",
        "version = 1\nbase = \"none\"\nkeep = [\"PATH\", \"HOME\"]\n",
    );
    let o = envwrap(&sb).arg("check").arg(&none).expect_success();
    expect_in(
        &o,
        &o.stdout_str(),
        "keeps       nothing inherited but PATH, HOME\n",
    );
    // A list given as a string: the error says what the policy wants.
    let string = sb.write("string.toml", "version = 1\nkeep = \"PATH\"\n");
    let o = envwrap(&sb).arg("check").arg(&string).expect_exit(125);
    expect_in(
        &o,
        &o.stderr_str(),
        "expected an array of patterns, such as",
    );
    // --policy FILE, as explain and scan take it.
    let o = envwrap(&sb)
        .args(["check", "--policy"])
        .arg(example_policy("agentmux.toml"))
        .expect_success();
    expect_in(&o, &o.stdout_str(), "agentmux.toml: valid");
    // The tool's name after the run mode's options: what to type instead.
    let o = envwrap(&sb)
        .arg("--policy")
        .arg(example_policy("agentmux.toml"))
        .arg("check")
        .expect_exit(125);
    expect_in(&o, &o.stderr_str(), "(envwrap check --policy FILE)");
    // Without a file: the lookup order; with ENVSHIM_POLICY unset and no user or
    // system policy, the built-in default.
    let o = envwrap(&sb)
        .env("HOME", sb.path())
        .env("XDG_CONFIG_HOME", sb.join("none"))
        .arg("check")
        .run();
    if !std::path::Path::new("/etc/envshim/policy.toml").exists() {
        o.check(o.status.success(), "check of the built-in policy");
        expect_in(&o, &o.stdout_str(), "the built-in policy: valid");
    }
    // A policy error: FILE:LINE:COLUMN, exit 125; an import warning does not fail.
    let bad = sb.write("bad.toml", "version = 1\n[argv]\nsecret = \"refuse\"\n");
    let o = envwrap(&sb).arg("check").arg(&bad).expect_exit(125);
    expect_in(
        &o,
        &o.stderr_str(),
        &format!("{}:3:1: unknown field `secret`", bad.display()),
    );
    // With --json, the error is JSON too, on stdout, in every tool.
    let o = envwrap(&sb)
        .args(["check", "--json"])
        .arg(&bad)
        .expect_exit(125);
    let v: serde_json::Value = serde_json::from_str(o.stdout_str().trim())
        .unwrap_or_else(|e| o.fail(&format!("check --json error is not JSON: {e}")));
    assert_eq!(v["valid"], serde_json::json!(false), "{}", o.report());
    let error = v["error"].as_str().unwrap_or_default();
    assert!(error.contains("bad.toml:3:1:"), "{}", o.report());
    assert!(o.stderr.is_empty(), "{}", o.report());
    for tool in ["explain", "scan"] {
        let o = envwrap(&sb)
            .args([tool, "--json", "--policy"])
            .arg(sb.join("missing.toml"))
            .expect_exit(125);
        let v: serde_json::Value = serde_json::from_str(o.stdout_str().trim())
            .unwrap_or_else(|e| o.fail(&format!("{tool} --json error is not JSON: {e}")));
        assert_eq!(v["exit"], serde_json::json!(125), "{}", o.report());
        assert!(v["error"]
            .as_str()
            .is_some_and(|m| m.contains("missing.toml")));
    }
    let warn = sb.write(
        "warn.toml",
        "version = 1\n[[import.env_file]]\npath = \"missing.env\"\n",
    );
    let o = envwrap(&sb).arg("check").arg(&warn).expect_success();
    expect_in(&o, &o.stderr_str(), "warning: ");
    expect_in(&o, &o.stderr_str(), "missing.env");
}

/// A grant acts on a credential the earlier rules kept: `check` warns about one
/// that a base or strip rule removes first, and about one that names no credential.
#[test]
fn check_warns_about_grants_that_can_never_act() {
    let sb = Sandbox::new("envwrap_check_grants");
    let policy = sb.write(
        "grants.toml",
        "version = 1\nbase = \"none\"\nkeep = [\"PATH\", \"GITLAB_TOKEN\"]\n\n\
         [[grant]]\nname = \"GH_TOKEN\"\nprogram = \"gh\"\n\n\
         [[grant]]\nname = \"GITLAB_TOKEN\"\nprogram = \"glab\"\n\n\
         [[grant]]\nname = \"PATH\"\nprogram = \"gh*\"\n",
    );
    let o = envwrap(&sb).arg("check").arg(&policy).expect_success();
    let err = o.stderr_str();
    expect_in(
        &o,
        &err,
        "grants.toml:6:8: [[grant]] GH_TOKEN for gh can never act",
    );
    expect_in(&o, &err, "keep it by name, then grant it");
    expect_in(
        &o,
        &err,
        "[[grant]] PATH for gh* can never act: PATH is not a credential",
    );
    assert!(!err.contains("GITLAB_TOKEN for glab"), "{err}");
}

/// explain shows what the run would add (the shim and its policy), says when
/// COMMAND does not exist, and says which variable a dropped pair takes away from
/// the program a carrier starts.
#[test]
fn explain_shows_the_preload_a_missing_command_and_lost_pairs() {
    let sb = Sandbox::new("envwrap_explain_more");
    let policy = stage_example(&sb, "loop.toml");
    let o = envwrap(&sb)
        .args(["explain", "--policy"])
        .arg(&policy)
        .args(["--", "tmux", "new-session"])
        .expect_success();
    let out = o.stdout_str();
    for name in ["LD_PRELOAD", "ENVSHIM_POLICY"] {
        let r = row(&o, &out, name);
        assert!(r.contains("set"), "{r}");
    }

    let o = envwrap(&sb)
        .args(["explain", "--", "no-such-command-here"])
        .expect_success();
    expect_in(
        &o,
        &o.stdout_str(),
        "no-such-command-here: command not found in PATH: envwrap would exit 127",
    );

    let pairs = sb.write(
        "pairs.toml",
        "version = 1\n[program.env.pairs]\nbase = \"none\"\nkeep = [\"LANG\"]\n",
    );
    let o = envwrap(&sb)
        .args(["explain", "--policy"])
        .arg(&pairs)
        .args(["--", "env", "FOO=1", "LANG=C", "printenv", "FOO"])
        .expect_success();
    expect_in(
        &o,
        &o.stdout_str(),
        "FOO: env will not set it: what env starts runs without FOO",
    );
    assert!(
        !o.stdout_str().contains("LANG: env will not"),
        "{}",
        o.report()
    );
}
