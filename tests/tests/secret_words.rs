//! A secret that arrives where a word is expected: as a variable's name, as the
//! program to run, or inside the program's path (envpolicy::shown,
//! `decide::credential_shape`, `ArgvSummary::program`).
//!
//! Each case runs the built artifacts with the sandbox's seeded fake tokens, and
//! the harness greps every output for them (a test fails on any seeded value in
//! stdout or stderr); logs and files are read and grepped here too.

use std::path::Path;

use envshim_e2e::*;

/// A token as a variable's name, with a harmless value.
fn token_name(sb: &Sandbox) -> String {
    sb.secrets().value("GH_TOKEN").to_string()
}

/// A policy that keeps every name by pattern (so a credential among them is
/// refused loudly, naming it) and logs every change.
fn loud_policy(sb: &Sandbox) -> std::path::PathBuf {
    let log = sb.join("shim.log");
    sb.write(
        "loud.toml",
        format!(
            "version = 1\nbase = \"none\"\nkeep = [\"*\"]\nlog = \"{}\"\n",
            log.display()
        ),
    )
}

fn assert_clean(sb: &Sandbox, what: &str, bytes: &[u8]) {
    sb.secrets().assert_absent(what, bytes);
}

#[test]
fn a_token_as_a_name_reaches_no_child_under_any_policy() {
    let sb = Sandbox::new("words_name_shim");
    let name = token_name(&sb);
    let loud = loud_policy(&sb);
    // (Staged in the sandbox: its compiled cache goes beside it, not in examples/.)
    let loop_toml = stage_example(&sb, "loop.toml");
    let policies: [Option<&Path>; 3] = [None, Some(&loud), Some(&loop_toml)];
    for policy in policies {
        let mut c = sb.cmd("/bin/sh");
        c.args(["-c", "exec cat /proc/self/environ"])
            .with_shim()
            .env(&name, "1");
        if let Some(p) = policy {
            c.with_policy(p);
        }
        let out = c.expect_success();
        assert!(
            !out.stdout
                .split(|&b| b == 0)
                .any(|e| e.starts_with(b"ghp_")),
            "a token-shaped name reached the child under {policy:?}"
        );
    }
    // Loudly refused under the keep-all policy: the message shows its shape only.
    let mut c = sb.cmd("/bin/sh");
    c.args(["-c", "exec true"])
        .with_shim()
        .with_policy(&loud)
        .env(&name, "1");
    let out = c.expect_success();
    assert!(
        out.stderr_str()
            .contains("refused <40 bytes, github token> for "),
        "{}",
        out.report()
    );
    assert_clean(&sb, "the shim's log", &sb.read("shim.log"));
}

#[test]
fn a_token_as_a_name_is_refused_by_envwrap() {
    let sb = Sandbox::new("words_name_envwrap");
    let name = token_name(&sb);
    let loud = loud_policy(&sb);
    let out = sb
        .cmd(envwrap_bin())
        .arg("--policy")
        .arg(&loud)
        .args(["--", "cat", "/proc/self/environ"])
        .env(&name, "1")
        .expect_success();
    assert!(!out.stdout.windows(4).any(|w| w == b"ghp_"));
    assert!(
        out.stderr_str().contains("<40 bytes, github token>"),
        "{}",
        out.report()
    );
    // The explanation names it by its shape too.
    let out = sb
        .cmd(envwrap_bin())
        .arg("explain")
        .arg("--policy")
        .arg(&loud)
        .args(["--", "true"])
        .env(&name, "1")
        .run();
    assert!(
        out.stdout_str().contains("name looks like a github token"),
        "{}",
        out.report()
    );
}

/// `os.posix_spawnp(TOKEN, [TOKEN], {})`: ENOENT, as without the shim, and no
/// line at all; a token inside the path of a program that exists: EPERM, and the
/// program is named by its shape.
const SPAWN_PY: &str = r##"
import os, sys
tok, d = sys.argv[1], sys.argv[2]
try:
    os.posix_spawnp(tok, [tok], {})
    print("spawned")
except OSError as e:
    print("spawnp", e.errno)
os.makedirs(os.path.join(d, tok), exist_ok=True)
script = os.path.join(d, tok, "show.sh")
with open(script, "w") as f:
    f.write("#!/bin/sh\ntr '\\0' ' ' < /proc/$$/cmdline > " + os.path.join(d, "cmdline.out") + "\n")
os.chmod(script, 0o755)
pid = os.fork()
if pid == 0:
    try:
        os.execv(script, ["show.sh"])
    except OSError as e:
        os._exit(100 + e.errno)
_, status = os.waitpid(pid, 0)
print("execv", os.waitstatus_to_exitcode(status))
"##;

#[test]
fn a_token_as_the_program_or_in_its_path() {
    let sb = Sandbox::new("words_program");
    let tok = sb.secrets().value("GH_TOKEN").to_string();
    let py = sb.write("spawn.py", SPAWN_PY);
    let log_policy = loud_policy(&sb);
    for shim in [false, true] {
        let mut c = sb.cmd("/usr/bin/python3");
        c.arg(&py).arg(&tok).arg(sb.path());
        if shim {
            c.with_shim()
                .with_policy(&log_policy)
                .env("PATH", "/usr/bin:/bin");
        }
        // The control run without the shim shows what is at stake: the kernel
        // puts the path into the interpreter's argv.
        let out = c.run();
        let stdout = out.stdout_str();
        assert!(stdout.contains("spawnp 2"), "shim={shim}: {}", out.report());
        let cmdline = std::fs::read(sb.join("cmdline.out")).unwrap_or_default();
        let _ = std::fs::remove_file(sb.join("cmdline.out"));
        if shim {
            assert!(
                stdout.contains("execv 101"),
                "EPERM expected: {}",
                out.report()
            );
            assert!(cmdline.is_empty(), "the script ran");
            assert!(
                out.stderr_str().contains("refused to run show.sh:")
                    && out
                        .stderr_str()
                        .contains("the program's path holds a github token"),
                "{}",
                out.report()
            );
            assert_clean(&sb, "the shim's log", &sb.read("shim.log"));
        } else {
            assert!(stdout.contains("execv 0"), "{}", out.report());
            assert!(
                String::from_utf8_lossy(&cmdline).contains(&tok),
                "the control run did not show the path in argv"
            );
        }
        std::fs::remove_dir_all(sb.join(&tok)).unwrap();
    }
}

/// A grant delivers only its own variable's value: with `DEPLOY_TOKEN` kept and
/// granted to docker, `docker run -e DEPLOY_TOKEN=$GH_TOKEN` is refused, and
/// `DEPLOY_TOKEN=$GH_TOKEN docker ...` reaches docker without it, through the shim
/// and through envwrap. (`docker` is a script that writes its argv and
/// environment: only its name matters to the policy.)
#[test]
fn a_grant_does_not_launder_another_credential() {
    let sb = Sandbox::new("words_grant_laundering");
    let bin = sb.mkdir("bin");
    sb.write_executable(
        "bin/docker",
        "#!/bin/sh\necho \"$@\" > docker.argv\nenv > docker.env\n",
    );
    let policy = sb.write(
        "grant.toml",
        "version = 1\nkeep = [\"DEPLOY_TOKEN\"]\n[[grant]]\nname = \"DEPLOY_TOKEN\"\nprogram = \"docker\"\n",
    );
    let gh = sb.secrets().value("GH_TOKEN").to_string();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let ran = || sb.join("docker.argv").exists();
    let reset = || {
        let _ = std::fs::remove_file(sb.join("docker.argv"));
        let _ = std::fs::remove_file(sb.join("docker.env"));
    };
    // Through argv, under the shim and through envwrap: refused, naming GH_TOKEN.
    let pair = "exec docker run -e DEPLOY_TOKEN=\"$GH_TOKEN\" img";
    let mut c = sb.cmd("/bin/sh");
    c.args(["-c", pair])
        .with_shim()
        .with_policy(&policy)
        .env("PATH", &path)
        .env("GH_TOKEN", &gh);
    let out = c.run();
    assert!(!ran(), "docker ran: {}", out.report());
    assert!(
        out.stderr_str().contains("holds the value of GH_TOKEN"),
        "{}",
        out.report()
    );
    reset();
    let out = sb
        .cmd(envwrap_bin())
        .arg("--policy")
        .arg(&policy)
        .args(["--", "docker", "run", "-e"])
        .arg(format!("DEPLOY_TOKEN={gh}"))
        .arg("img")
        .env("PATH", &path)
        .env("GH_TOKEN", &gh)
        .run();
    assert_eq!(out.status.code(), Some(126), "{}", out.report());
    assert!(!ran(), "docker ran: {}", out.report());
    reset();
    // Through the environment: docker runs, without DEPLOY_TOKEN.
    let mut c = sb.cmd("/bin/sh");
    c.args(["-c", "exec docker ps"])
        .with_shim()
        .with_policy(&policy)
        .env("PATH", &path)
        .env("GH_TOKEN", &gh)
        .env("DEPLOY_TOKEN", &gh);
    let out = c.expect_success();
    assert!(ran(), "{}", out.report());
    assert!(
        !String::from_utf8_lossy(&sb.read("docker.env")).contains("DEPLOY_TOKEN="),
        "a laundered DEPLOY_TOKEN reached docker"
    );
    assert!(
        out.stderr_str().contains("refused DEPLOY_TOKEN for"),
        "{}",
        out.report()
    );
    reset();
}

/// A `set` whose `${...}` reads a credential is refused, and both front ends say
/// so: a line on stderr naming the variable, and a log record (the shim used to
/// drop it without a word).
#[test]
fn a_refused_set_is_reported_by_both_front_ends() {
    let sb = Sandbox::new("words_refused_set");
    let log = sb.join("set.log");
    let policy = sb.write(
        "set.toml",
        format!(
            "version = 1\nlog = \"{}\"\n[set]\nGREETING = \"hello ${{MY_VAR}}\"\n",
            log.display()
        ),
    );
    let tok = sb.secrets().value("GH_TOKEN").to_string();
    let mut c = sb.cmd("/bin/sh");
    c.args(["-c", "exec env"])
        .with_shim()
        .with_policy(&policy)
        .env("MY_VAR", &tok);
    let out = c.expect_success();
    assert!(!out.stdout_str().contains("GREETING="), "{}", out.report());
    assert!(
        out.stderr_str().contains("refused GREETING for "),
        "the shim said nothing: {}",
        out.report()
    );
    let logged = String::from_utf8_lossy(&sb.read("set.log")).into_owned();
    assert!(
        logged.contains("\"name\":\"GREETING\""),
        "no log record: {logged}"
    );
    assert_clean(&sb, "the shim's log", logged.as_bytes());
    let out = sb
        .cmd(envwrap_bin())
        .arg("--policy")
        .arg(&policy)
        .args(["--", "env"])
        .env("MY_VAR", &tok)
        .expect_success();
    assert!(!out.stdout_str().contains("GREETING="));
    assert!(out.stderr_str().contains("GREETING"), "{}", out.report());
}

/// envwrap's own errors name a path or an option through [`envpolicy::shown`]: a
/// token pasted as `--log PATH`, `--policy PATH`, `check PATH`, `compile PATH` or
/// as an option is shown as its length and shape. (The harness fails any command
/// whose output holds a seeded value.)
#[test]
fn envwrap_errors_never_print_a_token_given_as_a_word() {
    let sb = Sandbox::new("words_envwrap_errors");
    let tok = sb.secrets().value("GH_TOKEN").to_string();
    let path = format!("/nonexistent/{tok}/p.toml");
    let forms: Vec<Vec<String>> = vec![
        vec!["--log".into(), path.clone(), "--".into(), "true".into()],
        vec!["--policy".into(), path.clone(), "--".into(), "true".into()],
        vec![format!("--policy={path}"), "--".into(), "true".into()],
        vec!["check".into(), path.clone()],
        vec!["compile".into(), path.clone()],
        vec!["compile".into(), format!("--{tok}"), path.clone()],
        vec![
            "explain".into(),
            "--policy".into(),
            path.clone(),
            "--".into(),
            "true".into(),
        ],
        vec![format!("--{tok}")],
        vec!["scan".into(), format!("--{tok}")],
        vec![tok.clone()],
    ];
    for form in forms {
        let out = sb.cmd(envwrap_bin()).args(&form).run();
        assert_ne!(out.status.code(), Some(0), "{}", out.report());
        assert!(
            out.stderr_str().contains("github token>"),
            "the word is not described: {}",
            out.report()
        );
    }
}

/// The shim's warnings name a path through [`envpolicy::shown`]: a token inside the
/// policy's path, the cache directory's or envwrap's is described, never printed.
#[test]
fn shim_warnings_never_print_a_token_inside_a_path() {
    let sb = Sandbox::new("words_shim_paths");
    let tok = sb.secrets().value("GH_TOKEN").to_string();
    let policy = sb.write("p.toml", "version = 1\n");
    let run = |c: &mut TestCommand, says: &str| {
        let out = c.args(["-c", "exec true"]).with_shim().expect_success();
        assert!(out.stderr_str().contains(says), "{}", out.report());
        assert!(
            out.stderr_str().contains("github token>"),
            "{}",
            out.report()
        );
    };
    // A policy that is missing.
    run(
        sb.cmd("/bin/sh")
            .env("ENVSHIM_POLICY", format!("/nonexistent/{tok}/p.toml")),
        "not found; using the fail-closed floor",
    );
    // A cache directory anyone may write.
    let cache = sb.join(&tok).join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::set_permissions(&cache, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    run(
        sb.cmd("/bin/sh")
            .env("ENVSHIM_POLICY", &policy)
            .env("ENVSHIM_CACHE_DIR", &cache),
        "is not trusted",
    );
    // An envwrap that is not there, to compile a policy with no cache yet.
    run(
        sb.cmd("/bin/sh")
            .with_policy(&policy)
            .env("ENVSHIM_ENVWRAP", format!("/nonexistent/{tok}/envwrap")),
        "to compile policy",
    );
}

/// `envwrap check` summarises a policy through [`envpolicy::shown`] too: a token
/// pasted as a name to keep, to set or to grant, as a program, as a log's or an
/// import's directory, or as a key the parser does not know, is described.
#[test]
fn envwrap_check_never_prints_a_token_from_the_policy() {
    let sb = Sandbox::new("words_check");
    let tok = sb.secrets().value("GH_TOKEN").to_string();
    let dir = sb.join(&tok);
    std::fs::create_dir_all(&dir).unwrap();
    let good = sb.write(
        "good.toml",
        format!(
            "version = 1\nkeep = [\"{tok}\"]\nlog = \"{log}\"\n[set]\n{tok} = \"1\"\n\
             [[import.env_file]]\npath = \"{env}\"\n[program.{tok}]\nmatch = [\"{tok}\"]\n\
             [[grant]]\nname = \"{tok}\"\nprogram = \"{tok}\"\n",
            log = dir.join("x.log").display(),
            env = dir.join("names.env").display(),
        ),
    );
    let out = sb
        .cmd(envwrap_bin())
        .arg("check")
        .arg(&good)
        .expect_success();
    for line in ["keeps", "sets", "grants", "imports", "program", "log"] {
        let shown = out
            .stdout_str()
            .lines()
            .any(|l| l.trim_start().starts_with(line) && l.contains("github token>"));
        assert!(shown, "{line}: {}", out.report());
    }
    let bad = sb.write("bad.toml", format!("version = 1\n{tok} = 1\n"));
    let out = sb.cmd(envwrap_bin()).arg("check").arg(&bad).run();
    assert_eq!(out.status.code(), Some(125), "{}", out.report());
    assert!(
        out.stderr_str()
            .contains("unknown field `<40 bytes, github token>`"),
        "{}",
        out.report()
    );
}

/// A base64 copy of a by-name credential in the program's path (no token
/// shape: only the value the caller holds tells it) is refused, and no
/// message, `--json` record or `--log` line of envwrap shows it: the one
/// writer (`shown::redact`) hides an encoded copy as it hides the value.
#[test]
fn a_base64_copy_in_the_programs_path_is_never_printed() {
    let sb = Sandbox::new("words_base64_path");
    let value = sb.secrets().value("JIRA_API_TOKEN").to_string();
    let b64 = sb
        .cmd("/bin/sh")
        .args(["-c", "printf %s \"$1\" | base64 -w0", "sh", &value])
        .expect_success()
        .stdout_str();
    let prog = sb.write_executable(format!("{b64}/prog"), "#!/bin/sh\necho ran\n");
    let log = sb.join("envwrap.log");
    for extra in [&[][..], &["--json"][..]] {
        let out = sb
            .cmd(envwrap_bin())
            .env("JIRA_API_TOKEN", &value)
            .arg("--log")
            .arg(&log)
            .args(extra)
            .arg("--")
            .arg(&prog)
            .run();
        assert_ne!(out.status.code(), Some(0), "{}", out.report());
        for (what, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            if holds(bytes, b64.as_bytes()) {
                panic!("the base64 copy is in envwrap's {what}");
            }
        }
        assert!(
            out.stderr_str().contains("refused to run"),
            "{}",
            out.report()
        );
    }
    let logged = std::fs::read(&log).unwrap_or_default();
    assert!(
        !holds(&logged, b64.as_bytes()),
        "the base64 copy is in the log"
    );
}

fn holds(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A by-name credential's value pasted where TOML reads a key: the compile
/// that the shim runs (with `PATH` and `HOME` alone) says so on the stderr of
/// the process that runs the shim, and hides the value as `envwrap check`,
/// run where the credential is, hides it. A later start, which finds the
/// failure marker, says it through the shim's own writer: hidden too.
#[test]
fn the_shims_compile_error_never_prints_a_pasted_credential() {
    let sb = Sandbox::new("words_shim_compile");
    let value = sb.secrets().value("JIRA_API_TOKEN").to_string();
    let bad = sb.write("bad.toml", format!("version = 1\n{value} = 1\n"));
    let check = sb
        .cmd(envwrap_bin())
        .env("JIRA_API_TOKEN", &value)
        .arg("check")
        .arg(&bad)
        .run();
    assert!(
        check.stderr_str().contains("unknown field `<"),
        "{}",
        check.report()
    );
    for round in ["compiles", "finds the marker"] {
        let out = sb
            .cmd("/bin/sh")
            .args(["-c", "exec true"])
            .with_shim()
            .with_policy(&bad)
            .env("JIRA_API_TOKEN", &value)
            .expect_success();
        assert!(
            out.stderr_str().contains("using the fail-closed floor"),
            "{round}: {}",
            out.report()
        );
        assert!(
            !holds(&out.stderr, value.as_bytes()),
            "{round}: the pasted value is on the shim's stderr"
        );
    }
    // The failure marker, which keeps the warning for later starts, holds the
    // warning as it was said.
    let cache = sb.join(".cache/envshim");
    let mut markers = 0;
    for f in std::fs::read_dir(&cache).unwrap().flatten() {
        markers += 1;
        let bytes = std::fs::read(f.path()).unwrap_or_default();
        assert!(
            !holds(&bytes, value.as_bytes()),
            "the failure marker holds the value"
        );
    }
    assert!(markers > 0, "no failure marker in {}", cache.display());
}
