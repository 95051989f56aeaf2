//! Python3 under the shim. Every way CPython starts a
//! program goes through a different libc entry point:
//!
//! - `subprocess.run(close_fds=True)`: `_posixsubprocess`, vfork (or fork) + `execve`
//!   in C, with an error pipe back to the parent;
//! - `subprocess.run(close_fds=False)` with a path: `os.posix_spawn`
//!   (`subprocess._USE_POSIX_SPAWN`);
//! - `os.posix_spawn`, `os.posix_spawnp`: libc's `posix_spawn`/`posix_spawnp`;
//! - `os.system`: libc's `system`;
//! - `os.popen`: `subprocess.Popen(shell=True)`, i.e. `/bin/sh -c` via
//!   `_posixsubprocess`.
//!
//! Each is tried with and without `env=` where it takes one. The child (the printenv
//! helper) must lack every seeded name and value and keep the rest; a child argv that
//! holds GH_TOKEN's value must be refused, and the test asserts what Python really
//! reports for that: `PermissionError` (errno 1) from subprocess, `os.posix_spawn*`
//! and `os.popen`, and -1 from `os.system` (libc's `system` returns -1 with EPERM and
//! CPython passes the number through).

use envshim_e2e::*;

const SCRIPT: &str = r#"
import os, shlex, subprocess, sys

mode, printenv = sys.argv[1], sys.argv[2]
with_token = len(sys.argv) > 3 and sys.argv[3] == "token"
args = [printenv, "a b", "", "x=y"]
if with_token:
    args.append("--token=" + os.environ["GH_TOKEN"])
extra = dict(os.environ, ENVSHIM_E2E_PY_ENV="from-env-arg")

def result(what):
    sys.stderr.write("PY-RESULT %s\n" % what)
    sys.stderr.flush()

def run(**kw):
    sys.stdout.flush()
    try:
        p = subprocess.run(args, **kw)
        result("returncode=%d" % p.returncode)
    except OSError as e:
        result("exception=%s errno=%s" % (type(e).__name__, e.errno))

def spawn(fn, path, env):
    sys.stdout.flush()
    try:
        pid = fn(path, args, env)
        _, st = os.waitpid(pid, 0)
        result("returncode=%d" % os.waitstatus_to_exitcode(st))
    except OSError as e:
        result("exception=%s errno=%s" % (type(e).__name__, e.errno))

if mode == "run-close-fds":
    run(close_fds=True)
elif mode == "run-no-close-fds":
    run(close_fds=False)
elif mode == "run-close-fds-env":
    run(close_fds=True, env=extra)
elif mode == "run-no-close-fds-env":
    run(close_fds=False, env=extra)
elif mode == "run-by-name":
    # subprocess's own PATH search: one execve per directory, in the child.
    path = ["/nonexistent-a", "/nonexistent-b", os.path.dirname(printenv)]
    os.environ["PATH"] = ":".join(path + [os.environ.get("PATH", "")])
    args[0] = os.path.basename(printenv)
    run(close_fds=True)
elif mode == "posix_spawn":
    spawn(os.posix_spawn, printenv, extra)
elif mode == "posix_spawnp":
    os.environ["PATH"] = os.path.dirname(printenv) + ":" + os.environ.get("PATH", "")
    extra["PATH"] = os.environ["PATH"]
    spawn(os.posix_spawnp, os.path.basename(printenv), extra)
elif mode == "system":
    sys.stdout.flush()
    r = os.system(shlex.join(args))
    result("system=%d" % r)
elif mode == "popen":
    sys.stdout.flush()
    try:
        p = os.popen(shlex.join(args))
        data = p.buffer.read()
        rc = p.close()
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        result("close=%r" % (rc,))
    except OSError as e:
        result("exception=%s errno=%s" % (type(e).__name__, e.errno))
else:
    result("unknown mode")
    sys.exit(64)
"#;

/// The modes, and whether the child gets the script's `env=` dict.
const MODES: &[(&str, bool)] = &[
    ("run-close-fds", false),
    ("run-no-close-fds", false),
    ("run-close-fds-env", true),
    ("run-no-close-fds-env", true),
    ("posix_spawn", true),
    ("posix_spawnp", true),
    ("system", false),
    ("popen", false),
];

fn python(sb: &Sandbox, mode: &str, token: bool) -> TestCommand {
    let script = sb.write("spawn.py", SCRIPT);
    let mut c = sb.cmd(python3());
    c.arg(script)
        .arg(mode)
        .arg(printenv_bin())
        .env_secrets()
        .env("ENVSHIM_E2E_KEEP", "kept value");
    if token {
        c.arg("token");
    }
    c
}

fn py_result(o: &Outcome) -> String {
    o.stderr_str()
        .lines()
        .find_map(|l| l.strip_prefix("PY-RESULT ").map(str::to_string))
        .unwrap_or_else(|| o.fail("the script reported no result"))
}

#[test]
fn every_spawn_path_delivers_a_filtered_env() {
    let sb = Sandbox::new("py_env");
    let secrets = sb.secrets().clone();
    for &(mode, env_arg) in MODES {
        // Control: without the shim the token arrives.
        let o = python(&sb, mode, false)
            .allow_secrets_in_stdout()
            .expect_success();
        let r = PrintenvReport::parse(&o.stdout).unwrap_or_else(|e| o.fail(&e));
        assert_eq!(
            r.get("GH_TOKEN"),
            Some(secrets.value("GH_TOKEN").as_bytes()),
            "{mode}: control run without the shim did not deliver GH_TOKEN"
        );

        let o = python(&sb, mode, false).with_shim().expect_success();
        let result = py_result(&o);
        assert!(
            matches!(result.as_str(), "returncode=0" | "system=0" | "close=None"),
            "{mode}: {result}\n{}",
            o.report()
        );
        let r = PrintenvReport::parse(&o.stdout).unwrap_or_else(|e| o.fail(&e));
        secrets.assert_absent(&format!("the child of python {mode}"), &r.all_bytes());
        for n in SECRET_NAMES {
            assert!(!r.has(n), "{mode}: the child holds {n}");
        }
        assert_eq!(
            r.get("ENVSHIM_E2E_KEEP"),
            Some(&b"kept value"[..]),
            "{mode}: {r:?}"
        );
        if env_arg {
            assert_eq!(
                r.get("ENVSHIM_E2E_PY_ENV"),
                Some(&b"from-env-arg"[..]),
                "{mode}: the env= dict was not used: {r:?}"
            );
        }
        assert_eq!(
            r.get("LD_PRELOAD"),
            Some(shim_path_string().as_bytes()),
            "{mode}: the child lost the shim"
        );
        assert_eq!(&r.args()[1..], ["a b", "", "x=y"], "{mode}: argv changed");
        assert!(
            shim_lines(&o.stderr).is_empty(),
            "{mode}: unexpected shim output\n{}",
            o.report()
        );
    }
}

/// subprocess searches `PATH` itself, with one `execve` per directory until one
/// runs. A refused program is reported once, for the file that exists: the
/// directories where it does not exist give ENOENT, as they would without the shim,
/// and no line.
#[test]
fn a_path_search_reports_one_refusal() {
    let sb = Sandbox::new("py_path_search");
    let o = python(&sb, "run-by-name", true).with_shim().run();
    assert_eq!(
        py_result(&o),
        "exception=PermissionError errno=1",
        "{}",
        o.report()
    );
    let lines = shim_lines(&o.stderr);
    assert_eq!(
        lines.len(),
        1,
        "one refusal line for one program\n{}",
        o.report()
    );
    let program = printenv_bin()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(
        lines[0].contains(&format!("refused to run {program}:")),
        "the refusal names the file that exists: {}",
        lines[0]
    );
}

#[test]
fn every_spawn_path_refuses_a_token_in_argv() {
    let sb = Sandbox::new("py_argv");
    for &(mode, _) in MODES {
        // Control: without the shim the child runs (and gets the token in argv).
        let o = python(&sb, mode, true)
            .allow_secrets_in_stdout()
            .expect_success();
        assert!(
            PrintenvReport::parse(&o.stdout).is_ok(),
            "{mode}: control\n{}",
            o.report()
        );

        let o = python(&sb, mode, true).with_shim().run();
        let result = py_result(&o);
        let expected = match mode {
            "system" => "system=-1",
            _ => "exception=PermissionError errno=1",
        };
        assert_eq!(result, expected, "{mode}\n{}", o.report());
        assert!(o.stdout.is_empty(), "{mode}: the child ran\n{}", o.report());
        let lines = shim_lines(&o.stderr);
        assert_eq!(lines.len(), 1, "{mode}: one refusal line\n{}", o.report());
        assert!(
            lines[0].starts_with("envshim: refused to run ") && lines[0].contains("GH_TOKEN"),
            "{mode}: {}",
            lines[0]
        );
        // The file name of what was exec'd (envpolicy_core::refusal).
        let program = match mode {
            "system" | "popen" => "sh".to_string(),
            _ => printenv_bin()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned(),
        };
        assert!(
            lines[0].contains(&format!("refused to run {program}:")),
            "{mode}: the refusal does not name {program}: {}",
            lines[0]
        );
    }
}

/// What a policy adds to an environment the caller emptied (`env={}`, as CPython's
/// `test_empty_env` asks for; docs/policy.md, "An empty environment"): the shim's
/// sticky `LD_PRELOAD` and `ENVSHIM_POLICY` (the file's path, or `:builtin` for the
/// built-in default; without them the child would leave the policy, or find
/// another by lookup), and the policy's own `set` entries. Nothing that
/// the parent held.
#[test]
fn an_empty_environment_gets_only_what_the_policy_adds() {
    // LC_CTYPE is Python's own (locale coercion), as test_empty_env allows.
    const CHILD: &str =
        "import os; print(' '.join(sorted(n for n in os.environ if n != 'LC_CTYPE')))";
    let run = |sb: &Sandbox, policy: Option<&std::path::Path>| {
        let script = format!(
            "import subprocess, sys\n\
             out = subprocess.run([sys.executable, '-c', {CHILD:?}], env={{}},\n\
             \x20                    capture_output=True, text=True)\n\
             print(out.stdout.strip())\n"
        );
        let mut c = sb.cmd(python3());
        c.arg("-c")
            .arg(script)
            .with_shim()
            .env("ENVSHIM_E2E_KEEP", "x");
        if let Some(p) = policy {
            c.with_policy(p);
        }
        c.expect_success().stdout_str().trim().to_string()
    };
    let sb = Sandbox::new("py_empty_env");
    assert_eq!(
        run(&sb, None),
        "ENVSHIM_POLICY LD_PRELOAD",
        "the built-in default: the shim's own entries (rule 8, ENVSHIM_POLICY=:builtin)"
    );
    let policy = sb.write(
        "policy.toml",
        "version = 1\nbase = \"all\"\n[set]\nTZ = \"UTC\"\n",
    );
    assert_eq!(
        run(&sb, Some(&policy)),
        "ENVSHIM_HINT ENVSHIM_POLICY LD_PRELOAD TZ",
        "a policy file with a set: the shim's own entries (rule 8) and TZ"
    );
}
