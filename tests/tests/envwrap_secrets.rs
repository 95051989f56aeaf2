//! `[[secret]]` delivered by envwrap (docs/adr/0019-secrets-delivered-at-exec.md),
//! against real programs: a fake `gh` (a bash script that says `got` when
//! GH_TOKEN holds the expected fake value, compared inside the script, else
//! `none`) gets the value read from its source while no process above it held
//! it; `env` does not get it, and refuses an inherited copy; an untrusted
//! source is not read, with one line; `deny_args` refuses `gh auth token`;
//! `envwrap secret set` writes a source that `gh` then gets; `secret list`,
//! `check` and `explain` never show a value; `scan` finds the value outside
//! `gh`. No output may hold the value.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::envwrap_util::*;
use envshim_e2e::*;

/// A fake, token-like value: in no real service's format.
const FAKE: &str = "fake-secret-for-envwrap-tests-5e1b7c";

/// The sandbox's fake gh, its token file and its policy.
struct Gh {
    policy: PathBuf,
    source: PathBuf,
    bin: PathBuf,
}

/// A policy whose GH_TOKEN comes from `secrets/gh` (not written yet) for any
/// `gh` one directory down the sandbox, `SANDBOX/*/gh` (a secret's program is a
/// path, and a file root owns: the tests run as root in CI),
/// refusing `gh auth token`; the fake gh in `bin/`.
fn gh_setup(sb: &Sandbox) -> Gh {
    let source = sb.join("secrets/gh");
    let policy = sb.write(
        "policy.toml",
        format!(
            "version = 1\n\n[[secret]]\nname = \"GH_TOKEN\"\nfrom = \"file:{}\"\n\
             program = \"{}\"\ndeny_args = [[\"auth\", \"token\"]]\n",
            source.display(),
            sb.join("*/gh").display()
        ),
    );
    sb.write_executable(
        "bin/gh",
        format!(
            "#!/bin/bash\nif [ \"$GH_TOKEN\" = '{FAKE}' ]; then echo got; else echo none; fi\n"
        ),
    );
    Gh {
        policy,
        source,
        bin: sb.join("bin"),
    }
}

/// Write the token file with `mode` (and one trailing newline, as `echo` leaves).
fn write_source(gh: &Gh, mode: u32) {
    std::fs::create_dir_all(gh.source.parent().unwrap()).unwrap();
    std::fs::write(&gh.source, format!("{FAKE}\n")).unwrap();
    std::fs::set_permissions(&gh.source, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `envwrap --no-preload --policy P -- ARGS` with the fake gh first on PATH and
/// no GH_TOKEN in the caller (the sandbox removes it).
fn wrapped(sb: &Sandbox, gh: &Gh, args: &[&str]) -> TestCommand {
    wrapped_with(sb, gh, &[], args)
}

/// [`wrapped`] with envwrap options `opts` before the policy.
fn wrapped_with(sb: &Sandbox, gh: &Gh, opts: &[&str], args: &[&str]) -> TestCommand {
    let mut c = envwrap(sb);
    c.env("PATH", format!("{}:/usr/bin:/bin", gh.bin.display()))
        .arg("--no-preload")
        .args(opts)
        .arg("--policy")
        .arg(&gh.policy)
        .arg("--")
        .args(args);
    c
}

/// No output of `o` holds the fake value.
#[track_caller]
fn assert_no_value(o: &Outcome) {
    if o.stdout_str().contains(FAKE) || o.stderr_str().contains(FAKE) {
        panic!("an output holds the secret's value (not shown here)");
    }
}

#[track_caller]
fn stdout_is(o: &Outcome, want: &str) {
    assert_no_value(o);
    if o.stdout_str() != want {
        o.fail(&format!("expected stdout {want:?}"));
    }
}

#[test]
fn gh_gets_the_secret_env_does_not_and_an_inherited_copy_is_refused() {
    let sb = Sandbox::new("envwrap_secrets_deliver");
    let gh = gh_setup(&sb);
    write_source(&gh, 0o600);
    stdout_is(&wrapped(&sb, &gh, &["gh"]).expect_success(), "got\n");

    let o = wrapped(&sb, &gh, &["env"]).expect_success();
    assert_no_value(&o);
    if o.stdout_str().lines().any(|l| l.starts_with("GH_TOKEN=")) {
        o.fail("env got GH_TOKEN");
    }

    // A caller's own GH_TOKEN: refused to env, replaced by the source's at gh.
    let o = wrapped(&sb, &gh, &["env"])
        .env("GH_TOKEN", "other")
        .expect_success();
    if o.stdout_str().lines().any(|l| l.starts_with("GH_TOKEN=")) {
        o.fail("env got the caller's GH_TOKEN");
    }
    let o = wrapped(&sb, &gh, &["gh"])
        .env("GH_TOKEN", "other")
        .expect_success();
    stdout_is(&o, "got\n");

    // Audit mode delivers nothing.
    let audit = wrapped_with(&sb, &gh, &["--mode", "audit"], &["gh"]);
    stdout_is(&audit.expect_success(), "none\n");
}

#[test]
fn a_source_others_may_read_is_not_delivered_and_one_line_says_why() {
    let sb = Sandbox::new("envwrap_secrets_untrusted");
    let gh = gh_setup(&sb);
    write_source(&gh, 0o644);
    let o = wrapped(&sb, &gh, &["gh"]).expect_success();
    stdout_is(&o, "none\n");
    let line = "envwrap: secret GH_TOKEN not delivered to gh: its source file is owned by \
                another user or readable by others (chmod 600 it)\n";
    if o.stderr_str() != line {
        o.fail(&format!("expected stderr {line:?}"));
    }
    // A missing source says so too.
    std::fs::remove_file(&gh.source).unwrap();
    let o = wrapped(&sb, &gh, &["gh"]).expect_success();
    stdout_is(&o, "none\n");
    expect_in(
        &o,
        &o.stderr_str(),
        "not delivered to gh: its source does not exist",
    );
}

#[test]
fn deny_args_refuses_gh_auth_token_and_names_the_rule() {
    let sb = Sandbox::new("envwrap_secrets_deny");
    let gh = gh_setup(&sb);
    write_source(&gh, 0o600);
    let o = wrapped(&sb, &gh, &["gh", "auth", "--hostname", "h", "token"]).expect_exit(126);
    assert_no_value(&o);
    if !o.stdout.is_empty() {
        o.fail("gh ran");
    }
    expect_in(
        &o,
        &o.stderr_str(),
        "refused to run gh: argument 4 completes `auth token`, which deny_args of secret GH_TOKEN refuses",
    );
    stdout_is(
        &wrapped(&sb, &gh, &["gh", "auth", "status"]).expect_success(),
        "got\n",
    );
}

#[test]
fn secret_set_writes_a_private_source_that_gh_then_gets_and_list_shows_no_value() {
    let sb = Sandbox::new("envwrap_secrets_set");
    let gh = gh_setup(&sb);
    assert!(!gh.source.parent().unwrap().exists());
    let o = envwrap(&sb)
        .args(["secret", "set", "--policy"])
        .arg(&gh.policy)
        .arg("GH_TOKEN")
        .stdin(format!("{FAKE}\n"))
        .expect_success();
    assert_no_value(&o);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&gh.source), 0o600, "the source's mode");
    assert_eq!(
        mode(gh.source.parent().unwrap()),
        0o700,
        "its directory's mode"
    );
    assert!(
        std::fs::read(&gh.source).unwrap() == FAKE.as_bytes(),
        "the source holds the value without its newline"
    );
    stdout_is(&wrapped(&sb, &gh, &["gh"]).expect_success(), "got\n");

    let o = envwrap(&sb)
        .args(["secret", "list", "--policy"])
        .arg(&gh.policy)
        .expect_success();
    assert_no_value(&o);
    let program = format!("  program    {}\n", sb.join("*/gh").display());
    for needle in [
        "GH_TOKEN\n",
        &program,
        "  deny_args  auth token\n",
        "  source     usable\n",
    ] {
        expect_in(&o, &o.stdout_str(), needle);
    }
    let o = envwrap(&sb)
        .args(["secret", "list", "--json", "--policy"])
        .arg(&gh.policy)
        .expect_success();
    assert_no_value(&o);
    expect_in(&o, &o.stdout_str(), "\"usable\":true");

    for tool in [&["check"][..], &["explain", "GH_TOKEN"]] {
        let o = envwrap(&sb)
            .args(tool)
            .arg("--policy")
            .arg(&gh.policy)
            .expect_success();
        assert_no_value(&o);
        expect_in(&o, &o.stdout_str(), "usable");
    }

    // An empty value is refused, and the source is left as it was.
    let o = envwrap(&sb)
        .args(["secret", "set", "--policy"])
        .arg(&gh.policy)
        .arg("GH_TOKEN")
        .stdin("\n")
        .expect_exit(125);
    expect_in(&o, &o.stderr_str(), "is refused: it is empty");
    stdout_is(&wrapped(&sb, &gh, &["gh"]).expect_success(), "got\n");
}

#[test]
fn scan_finds_the_value_outside_gh_and_not_in_gh() {
    let sb = Sandbox::new("envwrap_secrets_scan");
    let gh = gh_setup(&sb);
    write_source(&gh, 0o600);
    // Started outside envwrap, with the value under another name.
    let outside = sb
        .cmd("env")
        .args(["-i", &format!("FOO={FAKE}"), "sleep", "30"])
        .spawn_background();
    // A program the secret goes to, holding it: no finding.
    let waiting = sb.write_executable("wait/gh", "#!/bin/bash\nsleep 30\n");
    let inside = sb
        .cmd("env")
        .arg("-i")
        .arg(format!("GH_TOKEN={FAKE}"))
        .arg(&waiting)
        .spawn_background();
    let comm = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    assert!(
        sb.wait_for(
            || comm(outside.pid()) == "sleep\n" && comm(inside.pid()) == "gh\n",
            Duration::from_secs(10)
        ),
        "the processes did not start"
    );
    let scan = |pid: u32| {
        let mut c = envwrap(&sb);
        c.args(["scan", "--policy"])
            .arg(&gh.policy)
            .args(["--pid", &pid.to_string()]);
        c
    };
    let o = scan(outside.pid()).expect_exit(1);
    assert_no_value(&o);
    expect_in(
        &o,
        &o.stdout_str(),
        &format!(
            "pid {} (sleep): its environment holds the value of secret GH_TOKEN in FOO",
            outside.pid()
        ),
    );
    let o = scan(inside.pid()).expect_success();
    assert_no_value(&o);
    if !o.stdout.is_empty() {
        o.fail("gh holding its own secret is a finding");
    }
}

#[test]
fn supervised_gh_gets_the_secret_from_the_commands_child() {
    let sb = Sandbox::new("envwrap_secrets_supervise");
    let gh = gh_setup(&sb);
    write_source(&gh, 0o600);
    let mut c = wrapped_with(&sb, &gh, &["--supervise"], &["gh"]);
    c.timeout(Duration::from_secs(120));
    stdout_is(&c.expect_success(), "got\n");
    let mut c = wrapped_with(&sb, &gh, &["--supervise"], &["gh", "auth", "token"]);
    c.timeout(Duration::from_secs(120));
    let o = c.expect_exit(126);
    assert_no_value(&o);
    expect_in(&o, &o.stderr_str(), "deny_args of secret GH_TOKEN refuses");
}

/// The secret's own program is not refused under `--supervise` with a base
/// that does not admit its name: the command's child delivers the secret
/// whatever the base says (as the shim does), and the supervisor takes the
/// delivered entry as a grant (rule 6b). Before, it refused gh ("not admitted
/// by the base").
#[test]
fn supervised_gh_gets_the_secret_under_every_base() {
    let sb = Sandbox::new("envwrap_secrets_supervise_base");
    let gh = gh_setup(&sb);
    write_source(&gh, 0o600);
    let text = std::fs::read_to_string(&gh.policy).unwrap();
    for base in ["floor", "none"] {
        let policy = text.replacen(
            "version = 1\n",
            &format!("version = 1\nbase = \"{base}\"\n"),
            1,
        );
        std::fs::write(&gh.policy, policy).unwrap();
        let mut c = wrapped_with(&sb, &gh, &["--supervise"], &["gh"]);
        c.timeout(Duration::from_secs(120));
        let o = c.expect_success();
        assert_no_value(&o);
        stdout_is(&o, "got\n");
    }
}

#[test]
fn a_value_read_is_redacted_in_every_message() {
    let sb = Sandbox::new("envwrap_secrets_redact");
    let gh = gh_setup(&sb);
    write_source(&gh, 0o600);
    // The value in gh's own arguments: refused, and the message does not show it.
    let o = wrapped(&sb, &gh, &["gh", "api", FAKE]).expect_exit(126);
    assert_no_value(&o);
    expect_in(&o, &o.stderr_str(), "refused to run gh: argument 2");
    // Where argv may hold it, --debug prints the arguments: through the redaction.
    let text = std::fs::read_to_string(&gh.policy).unwrap();
    sb.write(
        "policy.toml",
        text.replacen(
            "version = 1\n",
            "version = 1\n[argv]\nsecrets = \"allow\"\n",
            1,
        ),
    );
    let o = wrapped_with(&sb, &gh, &["--debug"], &["gh", "api", FAKE]).expect_success();
    stdout_is(&o, "got\n");
    expect_in(&o, &o.stderr_str(), "arg[2]= '<");
}

#[test]
fn a_run_the_shim_routes_keeps_the_shim_and_its_policy_and_delivers() {
    let sb = Sandbox::new("envwrap_secrets_routed");
    let gh = gh_setup(&sb);
    write_source(&gh, 0o600);
    if !require(
        shim_beside_envwrap().is_some(),
        "libenvshim.so is not beside the envwrap under test",
    ) {
        return;
    }
    // As the shim routes a delivering spawn: `envwrap -- PATH ARGS...`, with
    // the environment it decided, its own entries (LD_PRELOAD, ENVSHIM_POLICY)
    // in it, and no --policy.
    let program = sb.write_executable(
        "routed/gh",
        format!(
            "#!/bin/bash\n[ \"$GH_TOKEN\" = '{FAKE}' ] && echo got || echo none\n\
             case \"$LD_PRELOAD\" in *libenvshim.so*) echo shim;; *) echo no-shim;; esac\n\
             [ \"$ENVSHIM_POLICY\" = '{}' ] && echo policy || echo other-policy\n",
            gh.policy.display()
        ),
    );
    let mut c = envwrap(&sb);
    c.with_shim()
        .with_policy(&gh.policy)
        .arg("--")
        .arg(&program);
    stdout_is(&c.expect_success(), "got\nshim\npolicy\n");
}

/// The library (`envpolicy::spawn`): a command whose program gets a secret
/// runs through envwrap, which reads it in the program's own process; with no
/// envwrap to find, the program runs without it and the outcome says so.
#[test]
fn the_library_runs_a_program_that_gets_a_secret_through_envwrap() {
    let sb = Sandbox::new("envwrap_secrets_library");
    let gh = gh_setup(&sb);
    write_source(&gh, 0o600);
    let compiled = envpolicy::load::load(&gh.policy).unwrap_or_else(|e| panic!("{e}"));
    let envwrap_dir = envwrap_bin().parent().unwrap().to_path_buf();
    let run = |path: String| {
        let mut cmd = std::process::Command::new("gh");
        cmd.env("PATH", path)
            .env("ENVSHIM_CACHE_DIR", sb.join(".cache/envshim"))
            .env_remove("GH_TOKEN")
            .env_remove("LD_PRELOAD")
            .env_remove("ENVSHIM_POLICY");
        let outcome = envpolicy::spawn::apply_std(&compiled.policy(), &mut cmd)
            .unwrap_or_else(|r| panic!("refused: {r}"));
        let out = cmd.output().expect("spawn");
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains(FAKE)
                && !String::from_utf8_lossy(&out.stderr).contains(FAKE),
            "an output holds the value (not shown)"
        );
        let routes: Vec<(String, bool)> = outcome
            .changes
            .iter()
            .filter(|c| c.rule.id() == "secret.route")
            .map(|c| (c.action.id().to_string(), c.loud))
            .collect();
        (String::from_utf8_lossy(&out.stdout).into_owned(), routes)
    };
    let (stdout, routes) = run(format!(
        "{}:{}:/usr/bin:/bin",
        envwrap_dir.display(),
        gh.bin.display()
    ));
    assert_eq!(stdout, "got\n");
    assert_eq!(routes, [("wrap".to_string(), false)]);
    let (stdout, routes) = run(format!("{}:/usr/bin:/bin", gh.bin.display()));
    assert_eq!(stdout, "none\n");
    assert_eq!(routes, [("strip".to_string(), true)]);
}

/// A value typed where the secret's name goes (`secret set --policy P VALUE`)
/// is never echoed: the error shows its length and the policy's secrets. A
/// name in capitals (a typo of one) is shown as it is.
#[test]
fn secret_set_never_echoes_a_value_typed_as_the_name() {
    let sb = Sandbox::new("envwrap_secrets_set_value");
    let gh = gh_setup(&sb);
    let typed = "p@ss-opaque-value-19";
    let mut c = envwrap(&sb);
    c.args(["secret", "set", "--policy"])
        .arg(&gh.policy)
        .arg(typed);
    let o = c.run();
    assert_eq!(
        o.status.code(),
        Some(125),
        "{}",
        o.report().replace(typed, "<typed>")
    );
    let err = o.stderr_str();
    assert!(!err.contains(typed), "the typed value was echoed");
    expect_in(
        &o,
        &err,
        "has no [[secret]] named <20 bytes>; its secrets: GH_TOKEN",
    );
    let mut c = envwrap(&sb);
    c.args(["secret", "set", "--policy"])
        .arg(&gh.policy)
        .arg("GH_TOKN");
    let o = c.run();
    expect_in(
        &o,
        &o.stderr_str(),
        "has no [[secret]] named GH_TOKN; its secrets: GH_TOKEN",
    );
}

/// The line a delivery says when nothing keeps the secret from gh's children.
const UNGUARDED: &str = "envwrap: GH_TOKEN delivered to gh; ";

/// A secret delivered where nothing can keep it from the program's children
/// says so, once: with `--no-preload` (no shim in gh), and for a static gh,
/// which no shim loads into; not with the shim in a dynamic program's
/// interpreter, and not under `--supervise`.
#[test]
fn a_delivery_nothing_guards_says_so_once() {
    let sb = Sandbox::new("envwrap_secrets_unguarded");
    let gh = gh_setup(&sb);
    write_source(&gh, 0o600);
    let o = wrapped(&sb, &gh, &["gh"]).expect_success();
    stdout_is(&o, "got\n");
    let said: Vec<String> = o
        .stderr_str()
        .lines()
        .filter(|l| l.starts_with(UNGUARDED))
        .map(str::to_string)
        .collect();
    assert_eq!(
        said,
        [
            "envwrap: GH_TOKEN delivered to gh; no shim loads into it and nothing supervises it: \
          its children inherit GH_TOKEN; use envwrap --supervise"
        ],
        "{}",
        o.report()
    );
    // The shim in bash (gh's interpreter), from envwrap's own default.
    let mut c = envwrap(&sb);
    c.env("PATH", format!("{}:/usr/bin:/bin", gh.bin.display()))
        .arg("--policy")
        .arg(&gh.policy)
        .args(["--", "gh"]);
    let o = c.expect_success();
    stdout_is(&o, "got\n");
    assert!(!o.stderr_str().contains(UNGUARDED), "{}", o.report());
    let mut c = wrapped_with(&sb, &gh, &["--supervise"], &["gh"]);
    c.timeout(Duration::from_secs(120));
    let o = c.expect_success();
    assert!(!o.stderr_str().contains(UNGUARDED), "{}", o.report());
    // A static gh: the shim cannot load into it, whatever envwrap preloads.
    let dir = sb.mkdir("static");
    let built = compile_c_with(
        "static_gh",
        "#include <stdio.h>\n#include <stdlib.h>\nint main(void) { puts(getenv(\"GH_TOKEN\") ? \"got\" : \"none\"); return 0; }\n",
        &["-static"],
    );
    std::fs::copy(&built, dir.join("gh")).expect("copy the static gh");
    let mut c = envwrap(&sb);
    c.env("PATH", format!("{}:/usr/bin:/bin", dir.display()))
        .arg("--policy")
        .arg(&gh.policy)
        .args(["--", "gh"]);
    let o = c.expect_success();
    stdout_is(&o, "got\n");
    assert!(
        o.stderr_str().contains(
            "envwrap: GH_TOKEN delivered to gh; it is statically linked, so no shim loads into it, \
             and nothing supervises it: its children inherit GH_TOKEN; use envwrap --supervise"
        ),
        "{}",
        o.report()
    );
    // A Go gh: the shim may load, but sees none of its execs.
    let source = "package main\nimport (\"fmt\"; \"os\")\nfunc main() { if os.Getenv(\"GH_TOKEN\") != \"\" { fmt.Println(\"got\") } else { fmt.Println(\"none\") } }\n";
    let Some(built) = crate::envwrap_supervise::go_build(&sb, "go_gh", source) else {
        return;
    };
    let dir = sb.mkdir("gobin");
    std::fs::copy(&built, dir.join("gh")).expect("copy the Go gh");
    let mut c = envwrap(&sb);
    c.env("PATH", format!("{}:/usr/bin:/bin", dir.display()))
        .arg("--policy")
        .arg(&gh.policy)
        .args(["--", "gh"]);
    let o = c.expect_success();
    stdout_is(&o, "got\n");
    assert!(
        o.stderr_str().contains(
            "envwrap: GH_TOKEN delivered to gh; it is a Go program, whose execs no shim sees, \
             and nothing supervises it: its children inherit GH_TOKEN; use envwrap --supervise"
        ),
        "{}",
        o.report()
    );
}

/// `check` finds a grant whose program is not the file that will run (issue
/// 51, 4), each at FILE:LINE:COLUMN of the program's value: a path that does
/// not exist, a file others may write (it could be replaced with anything,
/// which would get the credential), and a program that PATH finds another file
/// of the same name before. An import of the policy file itself as an env
/// file is warned of too. A grant to a root's file that PATH finds is not.
#[test]
fn check_warns_of_a_grant_whose_program_is_not_the_one_that_runs() {
    let sb = Sandbox::new("grant_program_checked");
    let theirs = sb.write("their-tool", "#!/bin/sh\n");
    // Anyone may write it: any process could put another program there.
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o777)).unwrap();
    let shadow = sb.write("bin/env", "#!/bin/sh\n");
    std::fs::set_permissions(&shadow, std::fs::Permissions::from_mode(0o755)).unwrap();
    let policy = sb.write(
        "policy.toml",
        format!(
            "version = 1\n\n[[grant]]\nname = \"GH_TOKEN\"\nprogram = \"/usr/bin/envshim-no-such-gh\"\n\n\
             [[grant]]\nname = \"NPM_TOKEN\"\nprogram = \"{}\"\n\n\
             [[grant]]\nname = \"AWS_SECRET_ACCESS_KEY\"\nprogram = \"/usr/bin/env\"\n\n\
             [[grant]]\nname = \"OPENAI_API_KEY\"\nprogram = \"/usr/bin/true\"\n\n\
             [[import.env_file]]\npath = \"policy.toml\"\n",
            theirs.display()
        ),
    );
    let o = envwrap(&sb)
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", sb.path().join("bin").display()),
        )
        .args(["check", "--policy"])
        .arg(&policy)
        .expect_success();
    let err = o.stderr_str();
    let at = policy.display();
    for line in [
        format!("warning: {at}:5:11: grant GH_TOKEN to /usr/bin/envshim-no-such-gh: its program does not exist"),
        format!("warning: {at}:9:11: grant NPM_TOKEN to {}: the program is not a regular file that only root can write", theirs.display()),
        format!("warning: {at}:13:11: grant AWS_SECRET_ACCESS_KEY to /usr/bin/env: a command run by its name finds {} first on PATH, which runs without it", shadow.display()),
        format!("warning: {at}:20:8: env file {at} is this policy file itself"),
    ] {
        expect_in(&o, &err, &line);
    }
    assert!(!err.contains("OPENAI_API_KEY"), "{}", o.report());
}

/// `check` finds a secret that can do nothing (issue 51, 4): its program is
/// not there, so a program of that name elsewhere would run without it and
/// nothing would say so until then. A warning at the secret's line, and
/// `secret list` says why it is not usable.
#[test]
fn check_warns_of_a_secret_whose_program_is_missing() {
    let sb = Sandbox::new("secret_program_missing");
    let source = sb.write("gh-token", "token-value-for-the-test\n");
    std::fs::set_permissions(&source, std::fs::Permissions::from_mode(0o600)).unwrap();
    let policy = sb.write(
        "policy.toml",
        format!(
            "version = 1\n\n[[secret]]\nname = \"GH_TOKEN\"\nfrom = \"file:{}\"\nprogram = \"/usr/bin/envshim-no-such-gh\"\n",
            source.display()
        ),
    );
    let o = envwrap(&sb)
        .args(["check", "--policy"])
        .arg(&policy)
        .expect_success();
    expect_in(
        &o,
        &o.stderr_str(),
        &format!(
            "warning: {}:6:11: secret GH_TOKEN to /usr/bin/envshim-no-such-gh: its program does not exist",
            policy.display()
        ),
    );
    let o = envwrap(&sb)
        .args(["secret", "list", "--policy"])
        .arg(&policy)
        .expect_success();
    expect_in(
        &o,
        &o.stdout_str(),
        "not usable: its program does not exist",
    );
}
