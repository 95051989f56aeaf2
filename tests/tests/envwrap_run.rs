//! envwrap's run mode against real programs: env(1) compatibility (compared with
//! /usr/bin/env byte for byte under a permissive policy), `-S` and shebang lines,
//! credentials given as operands or inherited, refused execs, `--preload`,
//! `--log`, `--mode audit` and `--json`.

use crate::envwrap_util::*;
use envshim_e2e::*;

/// Run `args` through env(1) and through envwrap (permissive policy, no preload),
/// from the same clean environment, and require the same status and stdout.
#[track_caller]
fn same_as_env(sb: &Sandbox, args: &[&str]) {
    let policy = permissive(sb);
    let setup = |c: &mut TestCommand| {
        c.env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("FOO", "bar")
            .env("KEEP", "1");
    };
    let mut env = sb.cmd("env");
    setup(&mut env);
    env.args(args);
    let want = env.run();
    let mut wrap = envwrap(sb);
    setup(&mut wrap);
    wrap.args(["--no-preload", "--policy"])
        .arg(&policy)
        .args(args);
    let got = wrap.run();
    if got.status.code() != want.status.code() || got.stdout != want.stdout {
        got.fail(&format!(
            "envwrap {args:?} differs from env(1): env exited {:?} with stdout {:?}",
            want.status.code(),
            want.stdout_str()
        ));
    }
}

#[test]
fn env_compatible_options_and_operands() {
    let sb = Sandbox::new("envwrap_env_compat");
    let dir = sb.path().to_str().unwrap().to_string();
    for args in [
        &["-i", "A=1", "B=x=y", "env"][..],
        &["-u", "FOO", "env"],
        &["-uFOO", "-uKEEP", "env"],
        &["--unset=FOO", "env"],
        &["-", "A=1", "env"],
        &["-i", "--", "A=1", "env"],
        &["--ignore-environment", "A=1", "A=2", "env"],
        &["-iu", "FOO", "C=3", "env"],
        &["-i", "PATH=/bin", "sh", "-c", "echo ok"],
        &["-C", "/", "pwd"],
        &["--chdir", &dir, "pwd"],
        &["-i", "-S", "A=1 'B=x y' \"C=${FOO}\" env"],
        &["-iS", "A=1\\_B=2 env # a comment"],
        &["--split-string=-i Q=1 env"],
        &["sh", "-c", "exit 7"],
        &["no-such-command-envwrap-test"],
    ] {
        same_as_env(&sb, args);
    }
}

#[test]
fn shebang_line_with_split_string() {
    let sb = Sandbox::new("envwrap_shebang");
    let policy = permissive(&sb);
    let script = sb.write(
        "hello.sh",
        format!(
            "#!{} -S --no-preload --policy {} -i -- GREETING=hi /bin/sh\necho \"$GREETING ${{FOO-unset}} $1\"\n",
            envwrap_bin().display(),
            policy.display()
        ),
    );
    let status = std::process::Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .unwrap();
    assert!(status.success());
    let o = sb
        .cmd(&script)
        .env("FOO", "bar")
        .arg("world")
        .expect_success();
    assert_eq!(o.stdout_str(), "hi unset world\n", "{o:?}");
}

#[test]
fn credential_operand_is_refused_and_named() {
    let sb = Sandbox::new("envwrap_operand");
    let token = sb.secrets().get("GH_TOKEN").assignment();
    let o = envwrap(&sb)
        .args(["--no-preload", "-i", "PLAIN=1", &token])
        .arg(printenv_bin())
        .expect_success();
    let r = PrintenvReport::parse(&o.stdout).unwrap();
    assert!(!r.has("GH_TOKEN"), "{r:?}");
    assert_eq!(r.get("PLAIN"), Some(&b"1"[..]));
    let err = o.stderr_str();
    expect_in(&o, &err, "refused GH_TOKEN for");
    expect_in(&o, &err, "printenv");
    expect_in(&o, &err, "the built-in policy");
}

#[test]
fn inherited_credentials_never_reach_the_child() {
    let sb = Sandbox::new("envwrap_inherited");
    let o = envwrap(&sb)
        .env_secrets()
        .arg("--no-preload")
        .arg(printenv_bin())
        .arg("plain-argument")
        .expect_success();
    let r = PrintenvReport::parse(&o.stdout).unwrap();
    for name in SECRET_NAMES {
        assert!(!r.has(name), "{name} reached the child: {r:?}");
    }
    sb.secrets()
        .assert_absent("the child's argv and environment", &r.all_bytes());
}

#[test]
fn secret_in_argv_refuses_the_exec_with_126() {
    let sb = Sandbox::new("envwrap_refuse");
    let value = sb.secrets().value("JIRA_API_TOKEN").to_string();
    // By value: JIRA_API_TOKEN has no token shape; its name makes it a credential.
    let o = envwrap(&sb)
        .env_secrets()
        .arg("--no-preload")
        .arg(printenv_bin())
        .arg(format!("--token={value}"))
        .expect_exit(126);
    assert!(o.stdout.is_empty(), "{o:?}");
    let err = o.stderr_str();
    expect_in(&o, &err, "refused to run");
    expect_in(&o, &err, "printenv");
    expect_in(&o, &err, "JIRA_API_TOKEN");
    // By shape, with nothing in the environment.
    let slack = sb.secrets().value("SLACK_BOT_TOKEN").to_string();
    let o = envwrap(&sb)
        .args(["--no-preload", "-i"])
        .arg(printenv_bin())
        .arg(&slack)
        .expect_exit(126);
    expect_in(&o, &o.stderr_str(), "slack token");
}

#[test]
fn audit_mode_changes_nothing_and_reports_everything() {
    let sb = Sandbox::new("envwrap_audit");
    let o = envwrap(&sb)
        .env_secrets()
        .allow_secrets_in_stdout()
        .args(["--no-preload", "--mode", "audit"])
        .arg(printenv_bin())
        .expect_success();
    let r = PrintenvReport::parse(&o.stdout).unwrap();
    assert!(
        r.has("GH_TOKEN"),
        "audit mode must not change the environment"
    );
    let err = o.stderr_str();
    expect_in(&o, &err, "audit: would refuse GH_TOKEN for");
    expect_in(&o, &err, "audit: would refuse SESSION_JWT for");
}

#[test]
fn log_file_holds_every_change_as_json_without_values() {
    let sb = Sandbox::new("envwrap_log");
    let log = sb.join("changes.jsonl");
    envwrap(&sb)
        .env_secrets()
        .args(["--no-preload", "--log"])
        .arg(&log)
        .arg(printenv_bin())
        .expect_success();
    let text = String::from_utf8(sb.read("changes.jsonl")).unwrap();
    sb.secrets()
        .assert_absent("the --log file", text.as_bytes());
    for name in ["GH_TOKEN", "PROXY_URL", "AWS_ACCESS_KEY_ID"] {
        let line = text
            .lines()
            .find(|l| l.contains(&format!("\"name\":\"{name}\"")))
            .unwrap_or_else(|| panic!("no log line for {name}:\n{text}"));
        assert!(line.starts_with('{') && line.ends_with('}'), "{line}");
        assert!(line.contains("\"action\":\"refuse\""), "{line}");
        assert!(line.contains("\"program\":"), "{line}");
    }
}

#[test]
fn json_warnings() {
    let sb = Sandbox::new("envwrap_json");
    let token = sb.secrets().get("GITLAB_TOKEN").assignment();
    let o = envwrap(&sb)
        .args(["--no-preload", "--json", &token, "true"])
        .expect_success();
    let err = o.stderr_str();
    let line = err
        .lines()
        .find(|l| l.contains("\"name\":\"GITLAB_TOKEN\""))
        .unwrap_or_else(|| o.fail("no JSON warning for GITLAB_TOKEN"));
    assert!(
        line.starts_with('{') && line.contains("\"action\":\"refuse\""),
        "{line}"
    );
}

#[test]
fn policy_from_envshim_policy_and_chdir() {
    let sb = Sandbox::new("envwrap_envvar_policy");
    let policy = sb.write(
        "p.toml",
        "version = 1\nbase = \"none\"\nkeep = [\"ONLY\"]\n",
    );
    sb.mkdir("sub");
    sb.write(
        "sub/show.sh",
        "#!/bin/sh\necho \"${ONLY-} ${OTHER-unset}\"\n",
    );
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(sb.join("sub/show.sh"))
        .status()
        .unwrap();
    let o = envwrap(&sb)
        .env("ENVSHIM_POLICY", &policy)
        .env("ONLY", "yes")
        .env("OTHER", "x")
        .args(["--no-preload", "-C", "sub", "./show.sh"])
        .expect_success();
    assert_eq!(o.stdout_str(), "yes unset\n", "{o:?}");
}

/// envwrap and the shim in its child name the policy one way: a relative
/// `--policy` is named by the path the child's shim is handed (the canonical
/// one), in envwrap's own lines as in the shim's.
#[test]
fn envwrap_and_its_child_s_shim_name_a_relative_policy_alike() {
    let sb = Sandbox::new("envwrap_policy_label");
    if shim_beside_envwrap().is_none() {
        require(
            false,
            "libenvshim.so is not beside envwrap (cargo build --release -p envshim)",
        );
        return;
    }
    let policy = sb.write("kept.toml", "version = 1\nkeep = [\"GH_TOKEN\"]\n");
    let canonical = policy.canonicalize().unwrap();
    let o = envwrap(&sb)
        .env_secrets()
        .args([
            "--policy",
            "kept.toml",
            "--",
            "sh",
            "-c",
            "GH_TOKEN=x /usr/bin/true",
        ])
        .expect_success();
    let err = o.stderr_str();
    let label = format!("(policy {})", canonical.display());
    let by_envwrap = err
        .lines()
        .find(|l| l.starts_with("envwrap: warning: refused GH_TOKEN for sh: "));
    let by_shim = err
        .lines()
        .find(|l| l.starts_with("envshim: refused GH_TOKEN for true: "));
    for (who, line) in [("envwrap", by_envwrap), ("the shim", by_shim)] {
        match line {
            Some(l) => assert!(
                l.ends_with(&label),
                "{who} names the policy otherwise: {l}\n{}",
                o.report()
            ),
            None => o.fail(&format!("{who} did not say it refused GH_TOKEN")),
        }
    }
}

#[test]
fn preload_adds_the_shim_and_the_policy_for_dynamic_programs() {
    let sb = Sandbox::new("envwrap_preload");
    let Some(shim) = shim_beside_envwrap() else {
        require(
            false,
            "libenvshim.so is not beside envwrap (cargo build --release -p envshim)",
        );
        return;
    };
    let policy = permissive(&sb);
    let canonical = policy.canonicalize().unwrap();
    // Default: printenv is dynamically linked, so the shim is added. The policy
    // path is given relative, and -C moves elsewhere: ENVSHIM_POLICY is absolute.
    sb.mkdir("elsewhere");
    for flags in [&["-C", "elsewhere"][..], &["--preload"]] {
        let o = envwrap(&sb)
            .args(flags)
            .args(["--policy", "permissive.toml"])
            .arg(printenv_bin())
            .expect_success();
        let r = PrintenvReport::parse(&o.stdout).unwrap();
        let preload = String::from_utf8_lossy(r.get("LD_PRELOAD").unwrap_or_default()).into_owned();
        assert!(
            preload.split(':').next() == Some(shim.to_str().unwrap()),
            "LD_PRELOAD {preload:?} does not start with {}",
            shim.display()
        );
        assert_eq!(
            r.get("ENVSHIM_POLICY"),
            Some(canonical.as_os_str().as_encoded_bytes()),
            "{r:?}"
        );
    }
    // --no-preload: nothing added.
    let o = envwrap(&sb)
        .args(["--no-preload", "--policy"])
        .arg(&policy)
        .arg(printenv_bin())
        .expect_success();
    let r = PrintenvReport::parse(&o.stdout).unwrap();
    assert!(!r.has("LD_PRELOAD") && !r.has("ENVSHIM_POLICY"), "{r:?}");
    // A static target: not by default; --preload adds it anyway, with a warning.
    let static_printenv = compile_c_with("printenv_static", PRINTENV_C, &["-static"]);
    let o = envwrap(&sb)
        .arg("--policy")
        .arg(&policy)
        .arg(&static_printenv)
        .expect_success();
    assert!(!PrintenvReport::parse(&o.stdout).unwrap().has("LD_PRELOAD"));
    let o = envwrap(&sb)
        .args(["--preload", "--policy"])
        .arg(&policy)
        .arg(&static_printenv)
        .expect_success();
    assert!(PrintenvReport::parse(&o.stdout).unwrap().has("LD_PRELOAD"));
    expect_in(&o, &o.stderr_str(), "not dynamically linked");
}

/// `env -S 'NAME=VALUE cmd'` (and a shebang line `#!/usr/bin/env -S NAME=V cmd`)
/// carries the pair inside one argument, where it cannot be dropped alone: a
/// pair the policy does not pass refuses the exec, named, in both front ends,
/// and never reaches the command.
#[test]
fn a_pair_inside_env_split_string_is_refused_by_both_front_ends() {
    let sb = Sandbox::new("envwrap_split_pair");
    let value = sb.secrets().value("JIRA_API_TOKEN").to_string();
    let split = format!("JIRA_API_TOKEN={value} {}", printenv_bin().display());
    let o = envwrap(&sb)
        .args(["--no-preload", "--", "/usr/bin/env", "-S"])
        .arg(&split)
        .expect_exit(126);
    assert!(o.stdout.is_empty(), "{o:?}");
    expect_in(
        &o,
        &o.stderr_str(),
        "holds the pair JIRA_API_TOKEN among other words",
    );
    let o = sb
        .cmd("/bin/sh")
        .args(["-c", "/usr/bin/env -S \"$1\"; echo \"exit $?\"", "sh"])
        .arg(&split)
        .with_shim()
        .expect_success();
    assert_eq!(o.stdout_str(), "exit 126\n", "{o:?}");
    expect_in(
        &o,
        &o.stderr_str(),
        "holds the pair JIRA_API_TOKEN among other words",
    );
}
