//! `envwrap --supervise`: the policy holds on execs that preload cannot see (a Go
//! program, a static C program, a raw system call, glibc's own wordexp), a clean
//! tree runs unchanged, the supervisor outlives the command for a tmux server,
//! and a killed supervisor fails the tree's execs loudly, never silently.
//!
//! Every token is a seeded fake, read by the programs from a file in the
//! sandbox: none is ever on a command line the tests build.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::envwrap_util::*;
use envshim_e2e::*;

/// The message a supervised refusal writes.
const REFUSED: &str = "envwrap: refused to run ";

/// `envwrap --supervise [--no-preload] -- ...` in the sandbox.
fn supervised(sb: &Sandbox, preload: bool) -> TestCommand {
    let mut c = envwrap(sb);
    c.arg("--supervise");
    if !preload {
        c.arg("--no-preload");
    }
    c.timeout(Duration::from_secs(120));
    c
}

/// The GH_TOKEN fake in a file the programs read.
fn token_file(sb: &Sandbox) -> PathBuf {
    sb.write("token", sb.secrets().value("GH_TOKEN"))
}

fn go_tool() -> Option<PathBuf> {
    ["/usr/bin/go", "/usr/lib/go/bin/go", "/usr/local/go/bin/go"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// Build a Go program in the sandbox.
pub(crate) fn go_build(sb: &Sandbox, name: &str, source: &str) -> Option<PathBuf> {
    let Some(go) = go_tool() else {
        require(
            false,
            "go is not installed (ci/install-test-deps installs golang-go)",
        );
        return None;
    };
    sb.write(format!("{name}.go"), source);
    let cache = target_dir().join("tmp").join("envshim-e2e-gocache");
    sb.cmd(go)
        .args(["build", "-o", name])
        .arg(format!("{name}.go"))
        .env("GOCACHE", &cache)
        .env("GOPATH", sb.join("gopath"))
        .env("GO111MODULE", "off")
        .env("GOTOOLCHAIN", "local")
        .env("HOME", sb.path())
        .timeout(Duration::from_secs(300))
        .expect_success();
    Some(sb.join(name))
}

/// What the C programs below share: reading the token from the file named by
/// argv[1], and one exec in a child of its own, returning the errno it failed
/// with (0: it ran).
const C_PRELUDE: &str = r#"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int read_token(const char *path, char *tok, size_t size) {
    FILE *f = fopen(path, "r");
    if (!f || !fgets(tok, (int)size, f)) return -1;
    tok[strcspn(tok, "\n")] = 0;
    fclose(f);
    return 0;
}

static int exec_errno(const char *path, char *const argv[], char *const envp[]) {
    int p[2];
    if (pipe(p) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        execve(path, argv, envp);
        int e = errno;
        (void)!write(p[1], &e, sizeof e);
        _exit(100);
    }
    close(p[1]);
    int e = 0;
    if (read(p[0], &e, sizeof e) != sizeof e) e = 0;
    close(p[0]);
    int st;
    waitpid(pid, &st, 0);
    return e;
}
"#;

/// A C program: the prelude, then `body`.
fn c_program(name: &str, body: &str, flags: &[&str]) -> PathBuf {
    compile_c_with(name, &format!("{C_PRELUDE}{body}"), flags)
}

const GO_SETS_A_TOKEN: &str = r#"package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Sets GH_TOKEN itself, from a file, and runs env: the Go runtime makes the
// execve system call itself, so no preloaded library sees it.
func main() {
	b, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Println("read:", err)
		os.Exit(2)
	}
	os.Setenv("GH_TOKEN", strings.TrimSpace(string(b)))
	out, err := exec.Command("/usr/bin/env").Output()
	if err != nil {
		fmt.Println("exec failed:", err)
		os.Exit(3)
	}
	if strings.Contains(string(out), "GH_TOKEN=") {
		fmt.Println("child got GH_TOKEN")
	}
}
"#;

#[test]
fn a_go_program_that_sets_a_token_is_refused_only_when_supervised() {
    let sb = Sandbox::new("supervise_go");
    let Some(bin) = go_build(&sb, "settoken", GO_SETS_A_TOKEN) else {
        return;
    };
    let tok = token_file(&sb);
    // Unsupervised, even with the shim preloaded: the Go runtime's exec passes.
    let o = envwrap(&sb).arg(&bin).arg(&tok).expect_success();
    expect_in(&o, &o.stdout_str(), "child got GH_TOKEN");

    let o = supervised(&sb, true).arg(&bin).arg(&tok).expect_exit(3);
    expect_in(&o, &o.stdout_str(), "exec failed: ");
    expect_in(&o, &o.stdout_str(), "operation not permitted");
    expect_in(
        &o,
        &o.stderr_str(),
        "envwrap: refused to run env: it would receive GH_TOKEN",
    );
}

const STATIC_EXECS: &str = r#"
int main(int argc, char **argv) {
    char tok[256] = {0};
    if (read_token(argv[1], tok, sizeof tok) != 0) return 2;
    char entry[300];
    snprintf(entry, sizeof entry, "GH_TOKEN=%s", tok);
    char *env_tok[] = {entry, "PATH=/usr/bin:/bin", NULL};
    char *env_clean[] = {"PATH=/usr/bin:/bin", NULL};
    char *run_env[] = {"/bin/true", NULL};
    char *run_arg[] = {"/bin/true", tok, NULL};
    char *run_probe[] = {"/bin/sh", "-c",
        "if test -n \"$GH_TOKEN\"; then echo probe: got GH_TOKEN; else echo probe: none; fi", NULL};
    printf("envp: errno=%d\n", exec_errno("/bin/true", run_env, env_tok));
    fflush(stdout);
    printf("probe: errno=%d\n", exec_errno("/bin/sh", run_probe, env_tok));
    printf("argv: errno=%d\n", exec_errno("/bin/true", run_arg, env_clean));
    printf("clean: errno=%d\n", exec_errno("/bin/true", run_env, env_clean));
    return 0;
}
"#;

#[test]
fn a_static_program_is_refused_a_token_in_envp_and_in_argv() {
    let sb = Sandbox::new("supervise_static");
    let bin = c_program("supervise_static_execs", STATIC_EXECS, &["-static"]);
    let tok = token_file(&sb);
    let o = envwrap(&sb).arg(&bin).arg(&tok).expect_success();
    let out = o.stdout_str();
    for line in ["envp: errno=0", "argv: errno=0", "clean: errno=0"] {
        expect_in(&o, &out, line);
    }
    expect_in(&o, &out, "probe: got GH_TOKEN");
    // The program forks, so each exec's memory is its child's own: the
    // supervisor removes GH_TOKEN from it, as the shim would, and says so.
    let o = supervised(&sb, true).arg(&bin).arg(&tok).expect_success();
    let out = o.stdout_str();
    for line in [
        "envp: errno=0",
        "probe: none",
        "argv: errno=1",
        "clean: errno=0",
    ] {
        expect_in(&o, &out, line);
    }
    let err = o.stderr_str();
    expect_in(&o, &err, "GH_TOKEN withheld from true and what it starts");
    expect_in(&o, &err, "refused to run true: argument 1 holds");
    // --refuse-changes: the exec is refused instead, as before.
    let o = supervised(&sb, true)
        .arg("--refuse-changes")
        .arg(&bin)
        .arg(&tok)
        .expect_success();
    let out = o.stdout_str();
    for line in [
        "envp: errno=1",
        "probe: errno=1",
        "argv: errno=1",
        "clean: errno=0",
    ] {
        expect_in(&o, &out, line);
    }
    let err = o.stderr_str();
    expect_in(&o, &err, "refused to run true: it would receive GH_TOKEN");
    expect_in(&o, &err, "refused to run true: argument 1 holds");
}

/// One table decides what the supervisor does with a change it cannot make
/// (envpolicy_core::capability): a credential that `base` or a strip removes
/// never runs with an "audit:" line under `[supervise] changes = "audit"`, as
/// it did before: it is removed in place where the exec's memory is its own,
/// and refused with `--refuse-changes`.
#[test]
fn a_credential_the_policy_strips_is_refused_under_either_setting() {
    let sb = Sandbox::new("supervise_strip_credential");
    let bin = c_program("supervise_static_execs", STATIC_EXECS, &["-static"]);
    let tok = token_file(&sb);
    let cases = [("floor", "audit"), ("none", "audit"), ("floor", "refuse")];
    for ((base, setting), refuse) in cases.into_iter().flat_map(|c| [(c, false), (c, true)]) {
        let policy = sb.write(
            "policy.toml",
            format!("version = 1\nbase = \"{base}\"\n[supervise]\nchanges = \"{setting}\"\n"),
        );
        let mut c = supervised(&sb, true);
        if refuse {
            c.arg("--refuse-changes");
        }
        let o = c
            .arg("--policy")
            .arg(&policy)
            .arg(&bin)
            .arg(&tok)
            .expect_success();
        let out = o.stdout_str();
        let err = o.stderr_str();
        if refuse {
            for line in [
                "envp: errno=1",
                "probe: errno=1",
                "argv: errno=1",
                "clean: errno=0",
            ] {
                expect_in(&o, &out, line);
            }
            expect_in(
                &o,
                &err,
                "refused to run true: the policy would strip GH_TOKEN",
            );
        } else {
            // Removed in place: the child runs without it.
            for line in [
                "envp: errno=0",
                "probe: none",
                "argv: errno=1",
                "clean: errno=0",
            ] {
                expect_in(&o, &out, line);
            }
        }
        // (base = "none" strips PATH too: that one may run with an audit line.)
        if err
            .lines()
            .any(|l| l.contains("audit: let") && l.contains("GH_TOKEN"))
        {
            o.fail("a credential ran with an audit line");
        }
    }
}

const SHARED_MEMORY_EXECS: &str = r#"
#include <spawn.h>

extern char **environ;

static int count(char **env) { int n = 0; while (env[n]) n++; return n; }

/* Puts GH_TOKEN in its own environ, then starts a probe with that environ
   from memory it shares with the child: posix_spawn (glibc's clone(CLONE_VM))
   and vfork. Prints each errno and whether its own environ is whole after. */
int main(int argc, char **argv) {
    char tok[256] = {0};
    if (read_token(argv[1], tok, sizeof tok) != 0) return 2;
    setenv("GH_TOKEN", tok, 1);
    int before = count(environ);
    char *probe[] = {"/bin/sh", "-c",
        "if test -n \"$GH_TOKEN\"; then echo probe: got GH_TOKEN; else echo probe: none; fi", NULL};
    pid_t pid;
    int e = posix_spawn(&pid, "/bin/sh", NULL, NULL, probe, environ);
    if (e == 0) { int st; waitpid(pid, &st, 0); }
    printf("spawn: errno=%d\n", e);
    fflush(stdout);
    volatile int err = 0;
    pid = vfork();
    if (pid == 0) { execve("/bin/sh", probe, environ); err = errno; _exit(100); }
    int st;
    waitpid(pid, &st, 0);
    printf("vfork: errno=%d\n", err);
    printf("own environ: %s\n",
        count(environ) == before && getenv("GH_TOKEN") && strcmp(getenv("GH_TOKEN"), tok) == 0
            ? "whole" : "changed");
    return 0;
}
"#;

/// Where the exec's memory is shared with its parent (a `posix_spawn` or
/// `vfork` child, whose envp is the parent's own `environ`), the supervisor
/// does not write it: the exec is refused, and the parent's environment is
/// left whole.
#[test]
fn an_exec_in_shared_memory_is_refused_and_the_parent_keeps_its_environment() {
    let sb = Sandbox::new("supervise_shared_memory");
    let bin = c_program("supervise_shared_execs", SHARED_MEMORY_EXECS, &["-static"]);
    let tok = token_file(&sb);
    let o = supervised(&sb, true).arg(&bin).arg(&tok).expect_success();
    let out = o.stdout_str();
    for line in ["spawn: errno=1", "vfork: errno=1", "own environ: whole"] {
        expect_in(&o, &out, line);
    }
    assert!(!out.contains("probe: got"), "{}", o.report());
    expect_in(
        &o,
        &o.stderr_str(),
        "refused to run sh: it would receive GH_TOKEN",
    );
}

const STATIC_CLEAN_EXECS: &str = r#"
int main(void) {
    char *env_clean[] = {"PATH=/usr/bin:/bin", NULL};
    char *run[] = {"/usr/bin/env", NULL};
    for (int i = 0; i < 3; i++) printf("exec %d: errno=%d\n", i, exec_errno("/usr/bin/env", run, env_clean));
    return 0;
}
"#;

/// A `set` that a static program's exec lacks (as Codex builds its MCP
/// server's environment from an allowlist) runs without it, said once: the
/// supervisor cannot add it, and a missing variable is no leak. Before, the
/// exec was refused and the program broke.
#[test]
fn an_exec_that_lacks_a_set_runs_without_it_said_once() {
    let sb = Sandbox::new("supervise_missing_set");
    let bin = c_program("supervise_clean_execs", STATIC_CLEAN_EXECS, &["-static"]);
    let policy = sb.write(
        "policy.toml",
        "version = 1\nset = { SUPERVISE_SET_PROBE = \"1\" }\n",
    );
    let o = supervised(&sb, true)
        .arg("--policy")
        .arg(&policy)
        .arg(&bin)
        .expect_success();
    let out = o.stdout_str();
    for i in 0..3 {
        expect_in(&o, &out, &format!("exec {i}: errno=0"));
    }
    let err = o.stderr_str();
    let said = err.matches("ran env without SUPERVISE_SET_PROBE").count();
    if said != 1 {
        o.fail(&format!("said {said} times, not once"));
    }
}

const RAW_SYSCALL: &str = r#"
#include <sys/syscall.h>

/* execve by number, past any libc wrapper a preloaded library interposes. */
int main(int argc, char **argv) {
    char tok[256] = {0};
    if (read_token(argv[1], tok, sizeof tok) != 0) return 2;
    char entry[300];
    snprintf(entry, sizeof entry, "GH_TOKEN=%s", tok);
    char *envp[] = {entry, NULL};
    char *args[] = {"/bin/sh", "-c", "test -n \"$GH_TOKEN\" && echo child got GH_TOKEN", NULL};
    syscall(SYS_execve, "/bin/sh", args, envp);
    perror("raw execve");
    return 3;
}
"#;

#[test]
fn a_raw_execve_under_the_shim_is_refused_when_supervised() {
    let sb = Sandbox::new("supervise_raw");
    let bin = c_program("supervise_raw_execve", RAW_SYSCALL, &[]);
    let tok = token_file(&sb);
    // The shim is preloaded (envwrap puts it there) and does not see it.
    let o = envwrap(&sb)
        .arg("--preload")
        .arg(&bin)
        .arg(&tok)
        .expect_success();
    expect_in(&o, &o.stdout_str(), "child got GH_TOKEN");
    // The program execs in place: its memory is its own, and the supervisor
    // removes the token before the exec continues (`test -n` then fails).
    let o = supervised(&sb, true).arg(&bin).arg(&tok).expect_exit(1);
    assert!(!o.stdout_str().contains("child got"), "{}", o.report());
    expect_in(&o, &o.stderr_str(), "GH_TOKEN withheld from sh");
    let o = supervised(&sb, true)
        .arg("--refuse-changes")
        .arg(&bin)
        .arg(&tok)
        .expect_exit(3);
    expect_in(&o, &o.stderr_str(), "raw execve: Operation not permitted");
    expect_in(
        &o,
        &o.stderr_str(),
        "envwrap: refused to run sh: it would receive GH_TOKEN",
    );
}

const WORDEXP: &str = r#"
#include <wordexp.h>

/* glibc's wordexp runs /bin/sh for a command substitution, with its own
   fork and execve inside libc. */
int main(int argc, char **argv) {
    char tok[256] = {0};
    if (read_token(argv[1], tok, sizeof tok) != 0) return 2;
    setenv("GH_TOKEN", tok, 1);
    wordexp_t w;
    int r = wordexp("$(test -n \"$GH_TOKEN\" && echo child-got-GH_TOKEN)", &w, 0);
    if (r != 0) { printf("wordexp failed: %d\n", r); return 0; }
    for (size_t i = 0; i < w.we_wordc; i++) printf("word: %s\n", w.we_wordv[i]);
    printf("words: %zu\n", w.we_wordc);
    return 0;
}
"#;

#[test]
fn wordexp_command_substitution_is_judged_when_supervised() {
    let sb = Sandbox::new("supervise_wordexp");
    let bin = c_program("supervise_wordexp", WORDEXP, &[]);
    let tok = token_file(&sb);
    let o = envwrap(&sb)
        .arg("--preload")
        .arg(&bin)
        .arg(&tok)
        .expect_success();
    expect_in(&o, &o.stdout_str(), "word: child-got-GH_TOKEN");
    let o = supervised(&sb, true).arg(&bin).arg(&tok).expect_success();
    assert!(
        !o.stdout_str().contains("child-got-GH_TOKEN"),
        "the shell ran with the token: {}",
        o.report()
    );
    expect_in(
        &o,
        &o.stderr_str(),
        "envwrap: refused to run sh: it would receive GH_TOKEN",
    );
}

/// A make -j2 build and python's subprocess: the same output and exit codes with
/// and without the supervisor, under the shim and the example loop policy.
#[test]
fn a_clean_tree_runs_unchanged() {
    let sb = Sandbox::new("supervise_clean");
    let policy = stage_example(&sb, "loop.toml");
    sb.write(
        "Makefile",
        "all: a b c\n\ta=$$(cat a b c | sort | tr -d '\\n'); echo built $$a\n\
         a b c:\n\techo $@ > $@\n\
         fail:\n\tfalse\n",
    );
    sb.write(
        "sub.py",
        "import subprocess, sys\n\
         r = subprocess.run(['sh', '-c', 'echo from-sh; exit 7'], capture_output=True)\n\
         print(r.stdout.decode().strip(), r.returncode)\n\
         print(subprocess.check_output(['git', '--version']).decode().split()[0])\n\
         sys.exit(subprocess.call(['false']))\n",
    );
    let run = |supervise: bool, args: &[&str]| {
        for f in ["a", "b", "c"] {
            let _ = std::fs::remove_file(sb.join(f));
        }
        let mut c = envwrap(&sb);
        if supervise {
            c.arg("--supervise");
        }
        c.arg("--policy").arg(&policy).args(args);
        c.timeout(Duration::from_secs(120)).run()
    };
    for args in [
        &["make", "-j2", "all"][..],
        &["make", "fail"][..],
        &["python3", "sub.py"][..],
    ] {
        let plain = run(false, args);
        let sup = run(true, args);
        assert_eq!(
            plain.status.code(),
            sup.status.code(),
            "{args:?}: {}\n{}",
            plain.report(),
            sup.report()
        );
        assert_eq!(
            plain.stdout_str(),
            sup.stdout_str(),
            "{args:?}: {}",
            sup.report()
        );
        assert!(
            !sup.stderr_str().contains(REFUSED),
            "{args:?}: the supervisor refused an exec of a clean tree: {}",
            sup.report()
        );
    }
}

/// The pid a command wrote (its $PPID: the supervisor, for the command itself).
fn read_pid(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Whether `pid` is the supervisor of the command that wrote its `ppid` file
/// (its PID may have been handed out again since): an envwrap (by its comm)
/// whose command line (the foreground's, which the supervisor forked from)
/// names that file, a path in this sandbox that no other test's process holds,
/// and that is not the foreground envwrap, the test's own child. Only the
/// supervisor is all three: the command was an envwrap only until its exec,
/// and it wrote the file after. Read by `pidfd::hold` after it opened a pidfd.
fn is_the_supervisor(pid: u32, ppid: &Path) -> bool {
    let name = envwrap_bin()
        .file_name()
        .map(|n| n.as_encoded_bytes().to_vec());
    // The kernel's comm: the file's name, cut to 15 bytes.
    let comm = name.map(|mut n| {
        n.truncate(15);
        String::from_utf8_lossy(&n).into_owned()
    });
    comm.is_some_and(|c| pidfd::comm_is(pid, &c))
        && pidfd::cmdline_holds(pid, ppid.as_os_str().as_encoded_bytes())
        && proc_ppid(pid).is_some_and(|parent| parent != std::process::id())
}

#[test]
fn tmux_panes_are_supervised_after_the_client_exits() {
    let sb = Sandbox::new("supervise_tmux");
    let tok = token_file(&sb);
    let ppid = sb.join("ppid");
    let script = format!(
        "echo $PPID > {}; exec sleep 300",
        sh_quote(&ppid.to_string_lossy())
    );
    // Without the shim in tmux, so that the supervisor is what stands in the way.
    let mut c = supervised(&sb, false);
    c.arg("tmux").args(sb.tmux_args());
    c.args(["new-session", "-d", "sh", "-c", &script]);
    c.expect_success();
    // The client has exited; the server (a daemon) still holds the filter.
    assert!(
        sb.wait_for(|| ppid.exists(), Duration::from_secs(10)),
        "the first pane did not start"
    );
    let out = sb.join("out");
    let rc = sb.join("rc");
    let pane = format!(
        "GH_TOKEN=$(cat {}) /usr/bin/env > {} 2>&1; echo $? > {}",
        sh_quote(&tok.to_string_lossy()),
        sh_quote(&out.to_string_lossy()),
        sh_quote(&rc.to_string_lossy()),
    );
    sb.tmux()
        .args(["new-window", "-d", "sh", "-c", &pane])
        .expect_success();
    assert!(
        sb.wait_for(
            || rc.exists() && !sb.read("rc").is_empty(),
            Duration::from_secs(10)
        ),
        "the second pane did not finish"
    );
    let code = String::from_utf8_lossy(&sb.read("rc")).trim().to_string();
    let text = String::from_utf8_lossy(&sb.read("out")).into_owned();
    assert!(
        sb.secrets().is_clean(text.as_bytes()),
        "the token reached env"
    );
    assert_ne!(code, "0", "env ran with the token: {text}");
    assert!(
        text.contains("refused to run env: it would receive GH_TOKEN"),
        "{text}"
    );

    // The supervisor ends with the last process that holds the filter. A pane's
    // parent is the tmux server, and the server's, now that its client has
    // exited, is the supervisor (a subreaper). Held by a pidfd while the pane
    // still holds the filter, so that its PID, handed out again, cannot look
    // alive.
    let server = read_pid(&ppid).expect("the pane wrote its parent's pid");
    let sup = proc_ppid(server).expect("the tmux server runs");
    let held = pidfd::hold(sup, |p| is_the_supervisor(p, &ppid)).unwrap_or_else(|why| {
        panic!("the tmux server's parent ({sup}) is not the supervisor: {why:?}")
    });
    let _ = sb.tmux().arg("kill-server").run();
    assert!(
        sb.wait_for(|| held.has_exited(), Duration::from_secs(10)),
        "the supervisor outlived the tmux server"
    );
}

#[test]
fn a_killed_supervisor_fails_the_next_exec_loudly_and_nothing_hangs() {
    // --judge-all: every exec of the tree waits for the supervisor, so every
    // exec fails once it is gone. By default the shim's marked execs run
    // without it (the shim judged them), and an exec it did not make fails.
    for judge_all in [true, false] {
        let sb = Sandbox::new("supervise_killed");
        let raw = c_program("supervise_raw_execve", RAW_SYSCALL, &[]);
        let tok = token_file(&sb);
        let ppid = sb.join("ppid");
        let fifo = sb.mkfifo("go");
        // Only builtins until the FIFO is opened for writing, then the execs.
        let script = format!(
            "echo $PPID > {p}; read x < {g}; /bin/true; echo rc=$?; {raw} {tok}; echo raw=$?",
            p = sh_quote(&ppid.to_string_lossy()),
            g = sh_quote(&fifo.to_string_lossy()),
            raw = sh_quote(&raw.to_string_lossy()),
            tok = sh_quote(&tok.to_string_lossy()),
        );
        let mut c = supervised(&sb, true);
        if judge_all {
            c.arg("--judge-all");
        }
        c.args(["sh", "-c", &script])
            .timeout(Duration::from_secs(30));
        let o = std::thread::scope(|s| {
            let h = s.spawn(|| c.run());
            assert!(
                sb.wait_for(|| read_pid(&ppid).is_some(), Duration::from_secs(10)),
                "the command did not start"
            );
            let sup = read_pid(&ppid).unwrap();
            // Through a pidfd, and only once proven to be the supervisor.
            let killed = pidfd::signal_if_ours(sup, libc::SIGKILL, |p| is_the_supervisor(p, &ppid));
            std::fs::write(&fifo, "go\n").unwrap();
            let o = h.join().unwrap();
            assert_eq!(
                killed,
                pidfd::Signalled::Sent,
                "the supervisor the command reported ({sup}) was not killed: {}",
                o.report()
            );
            o
        });
        assert!(
            !o.timed_out,
            "envwrap hung after its supervisor died: {}",
            o.report()
        );
        let err = o.stderr_str();
        expect_in(&o, &err, "the supervisor ended before the command did");
        expect_in(&o, &err, "Function not implemented");
        let out = o.stdout_str();
        if judge_all {
            assert!(!out.contains("rc=0"), "{}", o.report());
            assert!(!err.contains("the shim did not judge"), "{}", o.report());
        } else {
            expect_in(&o, &out, "rc=0");
            expect_in(
                &o,
                &err,
                "every exec in the command's tree the shim did not judge",
            );
        }
        // The raw execve (with a token) fails either way, and never runs
        // (under --judge-all, sh cannot even start the program).
        if !judge_all {
            expect_in(&o, &out, "raw=3");
        }
        assert!(!out.contains("child got GH_TOKEN"), "{}", o.report());
        // SAFETY: geteuid(2) cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        assert_eq!(
            err.contains("unless a process of the tree, which runs as root"),
            root,
            "{}",
            o.report()
        );
        assert_eq!(o.status.code(), Some(125), "{}", o.report());
    }
}

/// The supervisor's `voluntary_ctxt_switches` across `n` execs: it blocks
/// after each notification it answers, unless the next one is already there
/// (on a loaded machine), so about one per judged exec.
fn switches_script(n: usize) -> String {
    format!(
        "s() {{ sed -n 's/^voluntary_ctxt_switches:[[:space:]]*//p' /proc/$PPID/status; }}; \
         a=$(s); i=0; while [ $i -lt {n} ]; do /bin/true; i=$((i+1)); done; b=$(s); \
         echo judged=$((b-a))"
    )
}

fn judged(o: &Outcome) -> usize {
    let out = o.stdout_str();
    out.lines()
        .find_map(|l| l.strip_prefix("judged="))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| o.fail("no count of the supervisor's wake-ups"))
}

/// The mark (docs/adr/0016, "The mark"): an exec the shim made with the
/// supervisor's policy runs without waking the supervisor; with --judge-all,
/// or without the shim, each wakes it. Read from the supervisor's own
/// context switches, which the command (its child) reads in /proc.
#[test]
fn the_shims_execs_are_not_judged_twice_unless_judge_all() {
    let sb = Sandbox::new("supervise_marks");
    let n = 60;
    let policy = sb.write("policy.toml", "version = 1\n");
    sb.write(
        "rel.toml",
        "version = 1\n[credentials]\nnames = [\"REL_X\"]\n",
    );
    let run = |extra: &[&str], preload: bool| {
        let mut c = supervised(&sb, preload);
        c.args(extra).args(["sh", "-c", &switches_script(n)]);
        let o = c.expect_success();
        judged(&o)
    };
    // The built-in default, a policy file by absolute path, and by relative path.
    let abs = policy.to_string_lossy().into_owned();
    for policy_args in [
        &[][..],
        &["--policy", abs.as_str()][..],
        &["--policy", "rel.toml"][..],
    ] {
        let marked = run(policy_args, true);
        let all: Vec<&str> = policy_args.iter().copied().chain(["--judge-all"]).collect();
        let judged_all = run(&all, true);
        assert!(
            marked < n / 4,
            "{policy_args:?}: {marked} wake-ups of the supervisor for {n} execs the shim made"
        );
        assert!(
            judged_all >= n / 2,
            "{policy_args:?}: --judge-all woke the supervisor {judged_all} times for {n} execs"
        );
    }
    assert!(
        run(&[], false) >= n / 2,
        "without the shim every exec is judged"
    );
}

const FORGED_MARK: &str = r#"
#include <sys/syscall.h>

/* execveat with a mark in the fd register that is not the run's (the key
   itself, read from the environment), and a token in the child's environment. */
int main(int argc, char **argv) {
    char tok[256] = {0};
    if (read_token(argv[1], tok, sizeof tok) != 0) return 2;
    const char *key = getenv("ENVSHIM_SUPERVISOR");
    if (!key) { fprintf(stderr, "no run key\n"); return 4; }
    unsigned long long mark = strtoull(key, NULL, 16);
    char entry[300];
    snprintf(entry, sizeof entry, "GH_TOKEN=%s", tok);
    char *envp[] = {entry, NULL};
    char *args[] = {"/bin/sh", "-c", "test -n \"$GH_TOKEN\" && echo child got GH_TOKEN", NULL};
    syscall(SYS_execveat, mark, "/bin/sh", args, envp, 0);
    perror("marked execveat");
    return 3;
}
"#;

/// A mark that is not the run's, in a program that bypasses the shim, is
/// judged like any other exec: the token is removed (or, with
/// `--refuse-changes`, the exec refused).
#[test]
fn a_forged_mark_is_judged() {
    let sb = Sandbox::new("supervise_forged");
    let bin = c_program("supervise_forged_mark", FORGED_MARK, &[]);
    let tok = token_file(&sb);
    let o = supervised(&sb, true).arg(&bin).arg(&tok).expect_exit(1);
    assert!(!o.stdout_str().contains("child got"), "{}", o.report());
    expect_in(&o, &o.stderr_str(), "GH_TOKEN withheld from sh");
    let o = supervised(&sb, true)
        .arg("--refuse-changes")
        .arg(&bin)
        .arg(&tok)
        .expect_exit(3);
    expect_in(
        &o,
        &o.stderr_str(),
        "marked execveat: Operation not permitted",
    );
    expect_in(
        &o,
        &o.stderr_str(),
        "envwrap: refused to run sh: it would receive GH_TOKEN",
    );
    assert!(!o.stdout_str().contains("child got"), "{}", o.report());
}

const STORM: &str = r#"
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
static int failures;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* 250 starts of /bin/true per thread, fork+exec and posix_spawn in turn. */
static void *run(void *arg) {
    char *argv[] = {"/bin/true", NULL};
    for (int i = 0; i < 250; i++) {
        pid_t pid;
        int ok;
        if (i % 2) {
            ok = posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ) == 0;
        } else {
            pid = fork();
            if (pid == 0) { execve("/bin/true", argv, environ); _exit(127); }
            ok = pid > 0;
        }
        int st = 1;
        if (ok) waitpid(pid, &st, 0);
        if (!ok || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            pthread_mutex_lock(&lock);
            failures++;
            pthread_mutex_unlock(&lock);
        }
    }
    return arg;
}

int main(void) {
    pthread_t t[8];
    for (int i = 0; i < 8; i++) pthread_create(&t[i], NULL, run, NULL);
    for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
    printf("failures=%d\n", failures);
    return failures != 0;
}
"#;

/// 8 threads start 2,000 processes: every notification is answered, none is
/// lost, nothing deadlocks, within the test's time bound.
#[test]
fn a_storm_of_starts_is_answered_in_full() {
    let sb = Sandbox::new("supervise_storm");
    let bin = compile_c_with("supervise_storm", STORM, &["-pthread"]);
    let o = supervised(&sb, true)
        .arg(&bin)
        .timeout(Duration::from_secs(120))
        .expect_success();
    expect_in(&o, &o.stdout_str(), "failures=0");
}

const BAD_INPUT: &str = r#"
int main(void) {
    char *argv[] = {"/bin/true", NULL};
    char *envp[] = {"A=1", NULL};
    printf("bad argv: %d\n", exec_errno("/bin/true", (char **)8, envp));
    char *bad_entry[] = {"/bin/true", (char *)16, NULL};
    printf("bad string: %d\n", exec_errno("/bin/true", bad_entry, envp));
    printf("bad envp: %d\n", exec_errno("/bin/true", argv, (char **)8));
    printf("bad path: %d\n", exec_errno((char *)8, argv, envp));
    /* Near the kernel's limits: 1,500 entries of 1,000 bytes pass, one string
       of 200 KiB is E2BIG. */
    size_t n = 1500;
    char **big = calloc(n + 1, sizeof *big);
    for (size_t i = 0; i < n; i++) {
        big[i] = malloc(1001);
        snprintf(big[i], 1001, "V%zu=", i);
        memset(big[i] + strlen(big[i]), 'x', 1000 - strlen(big[i]));
        big[i][1000] = 0;
    }
    printf("big env: %d\n", exec_errno("/bin/true", argv, big));
    char *huge = malloc(200 * 1024 + 1);
    memset(huge, 'y', 200 * 1024);
    huge[200 * 1024] = 0;
    char *huge_argv[] = {"/bin/true", huge, NULL};
    printf("huge string: %d\n", exec_errno("/bin/true", huge_argv, envp));
    printf("missing: %d\n", exec_errno("/nonexistent/true", argv, envp));
    return 0;
}
"#;

/// Invalid pointers, huge arguments and a missing file fail exactly as they do
/// without the supervisor: the same errno for each.
#[test]
fn bad_input_fails_as_the_kernel_fails_it() {
    let sb = Sandbox::new("supervise_bad_input");
    let bin = c_program("supervise_bad_input", BAD_INPUT, &[]);
    let plain = envwrap(&sb).arg("--no-preload").arg(&bin).expect_success();
    let sup = supervised(&sb, false).arg(&bin).expect_success();
    assert_eq!(plain.stdout_str(), sup.stdout_str(), "{}", sup.report());
    let out = sup.stdout_str();
    for line in [
        "bad argv: 14",
        "bad string: 14",
        "bad envp: 14",
        "bad path: 14",
        "big env: 0",
        "huge string: 7",
        "missing: 2",
    ] {
        expect_in(&sup, &out, line);
    }
}

const EXITS_MID_EXEC: &str = r#"
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

/* One thread execs while another ends the whole process at once: the target is
   gone between its notification and the supervisor's read, or its answer. */
static void *exec_it(void *arg) {
    char *argv[] = {"/bin/true", NULL};
    char *envp[] = {NULL};
    execve("/bin/true", argv, envp);
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, exec_it, NULL);
    usleep(atoi(getenv("DELAY_US")));
    _exit(0);
}
"#;

/// Targets that vanish mid-exec leave the supervisor serving: a later exec of
/// the same tree still runs.
#[test]
fn a_target_that_exits_mid_exec_leaves_the_supervisor_serving() {
    let sb = Sandbox::new("supervise_vanish");
    let bin = compile_c_with("supervise_exits_mid_exec", EXITS_MID_EXEC, &["-pthread"]);
    let script = format!(
        "for d in 0 10 50 100 200 0 10 50 100 200 0 5 20 80 150; do DELAY_US=$d {}; done; \
         /bin/echo still-served",
        sh_quote(&bin.to_string_lossy())
    );
    let o = supervised(&sb, false)
        .args(["sh", "-c", &script])
        .timeout(Duration::from_secs(60))
        .expect_success();
    expect_in(&o, &o.stdout_str(), "still-served");
}

/// An edit of the policy applies at the next exec of a supervised tree: the
/// supervisor of a long-lived tree follows its file, as the shim does.
#[test]
fn a_policy_edit_applies_at_the_next_supervised_exec() {
    let sb = Sandbox::new("supervise_edit");
    let tok = token_file(&sb);
    let policy = sb.write("policy.toml", PERMISSIVE);
    let fifo = sb.mkfifo("go");
    let run_env = format!(
        "GH_TOKEN=$(cat {}) /usr/bin/env >/dev/null",
        sh_quote(&tok.to_string_lossy())
    );
    let first = sb.join("first");
    let script = format!(
        "{run_env}; echo first=$? > {f}; read x < {g}; {run_env}; echo second=$?",
        f = sh_quote(&first.to_string_lossy()),
        g = sh_quote(&fifo.to_string_lossy()),
    );
    let mut c = supervised(&sb, false);
    c.arg("--policy").arg(&policy).args(["sh", "-c", &script]);
    let o = std::thread::scope(|s| {
        let h = s.spawn(|| c.run());
        assert!(
            sb.wait_for(|| first.exists(), Duration::from_secs(20)),
            "the first exec did not run"
        );
        // The built-in lists are back on: GH_TOKEN is a credential again.
        sb.write("policy.toml", "version = 1\n");
        std::fs::write(&fifo, "go\n").unwrap();
        h.join().unwrap()
    });
    assert_eq!(String::from_utf8_lossy(&sb.read("first")).trim(), "first=0");
    expect_in(&o, &o.stdout_str(), "second=126");
    expect_in(
        &o,
        &o.stderr_str(),
        "refused to run env: it would receive GH_TOKEN",
    );
}

/// An exec the policy would only change (here: a name it strips, which a shell
/// without the shim passes on) is refused by default, and runs unchanged, said
/// and logged, under `[supervise] changes = "audit"`.
#[test]
fn an_exec_the_policy_would_only_change_is_refused_or_audited_as_the_policy_says() {
    let sb = Sandbox::new("supervise_changes");
    let script = "FOO_X=1 /usr/bin/env >/dev/null; echo rc=$?";
    let run = |policy: &str| {
        let path = sb.write("policy.toml", policy);
        let log = sb.join("log.jsonl");
        let _ = std::fs::remove_file(&log);
        let mut c = supervised(&sb, false);
        c.arg("--policy").arg(&path).arg("--log").arg(&log);
        c.args(["sh", "-c", script]);
        let o = c.expect_success();
        let logged = std::fs::read_to_string(&log).unwrap_or_default();
        (o, logged)
    };
    let (o, logged) = run("version = 1\nstrip = [\"FOO_*\"]\n");
    expect_in(&o, &o.stdout_str(), "rc=126");
    expect_in(
        &o,
        &o.stderr_str(),
        "refused to run env: the policy would strip FOO_X",
    );
    assert!(logged.contains("FOO_X"), "not logged: {logged}");
    // --mode=audit reaches the supervisor: every exec runs, and is said.
    let policy = sb.write("policy.toml", "version = 1\nstrip = [\"FOO_*\"]\n");
    let o = supervised(&sb, false)
        .arg("--mode=audit")
        .arg("--policy")
        .arg(&policy)
        .args(["sh", "-c", script])
        .expect_success();
    expect_in(&o, &o.stdout_str(), "rc=0");
    expect_in(&o, &o.stderr_str(), "audit: let env run: enforce would ");
    let (o, logged) = run("version = 1\nstrip = [\"FOO_*\"]\n[supervise]\nchanges = \"audit\"\n");
    expect_in(&o, &o.stdout_str(), "rc=0");
    expect_in(
        &o,
        &o.stderr_str(),
        "audit: let env run unchanged: the policy would strip FOO_X",
    );
    assert!(logged.contains("FOO_X"), "not logged: {logged}");
}

const REACH_SUPERVISOR: &str = r#"
#include <dirent.h>
#include <fcntl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>

/* Run as the supervised command: its parent is the supervisor. Try each way a
   same-user process reaches another's fds or memory; print one line per way
   ("blocked NAME" or "reached NAME") and exit 0 only when all are blocked. */
int main(void) {
    pid_t sup = getppid();
    int reached = 0;
    char path[64];
    int pidfd = (int)syscall(SYS_pidfd_open, sup, 0);
    int took = -1;
    for (int fd = 0; pidfd >= 0 && fd < 64 && took < 0; fd++) {
        int got = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
        if (got >= 0) took = fd;
    }
    if (took >= 0) { printf("reached pidfd_getfd %d\n", took); reached = 1; }
    else printf("blocked pidfd_getfd\n");
    snprintf(path, sizeof path, "/proc/%d/fd", sup);
    DIR *d = opendir(path);
    if (d) { printf("reached /proc/PID/fd\n"); reached = 1; closedir(d); }
    else printf("blocked /proc/PID/fd\n");
    snprintf(path, sizeof path, "/proc/%d/mem", sup);
    int mem = open(path, O_RDWR);
    if (mem >= 0) { printf("reached /proc/PID/mem\n"); reached = 1; close(mem); }
    else printf("blocked /proc/PID/mem\n");
    char buf[8] = {0};
    struct iovec local = {buf, sizeof buf}, remote = {(void *)&buf, sizeof buf};
    if (syscall(SYS_process_vm_writev, sup, &local, 1, &remote, 1, 0) >= 0 || errno == EFAULT) {
        printf("reached process_vm_writev\n"); reached = 1;
    } else printf("blocked process_vm_writev\n");
    if (ptrace(PTRACE_SEIZE, sup, 0, 0) == 0) {
        printf("reached ptrace\n"); reached = 1; ptrace(PTRACE_DETACH, sup, 0, 0);
    } else printf("blocked ptrace\n");
    return reached;
}
"#;

/// Closed to the tree (docs/threat-model.md, "Closed to the tree"): a process
/// of the supervised tree that runs as the same user as the supervisor cannot
/// copy its listener, open its fds or memory, write its memory or ptrace it.
/// As root (CAP_SYS_PTRACE) it can, which the threat model says: run as root,
/// the same program reaches it, which shows the attempts are real ones.
#[test]
fn a_process_of_the_tree_cannot_reach_the_supervisor() {
    let sb = Sandbox::new("supervise_closed");
    let bin = c_program("supervise_reach", REACH_SUPERVISOR, &[]);
    // A directory and a copy that another user can read and run.
    let dir = std::env::temp_dir().join(format!("envshim-reach-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prog = dir.join("reach");
    std::fs::copy(&bin, &prog).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
    // SAFETY: geteuid(2) cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let mut c = if root {
        // As an unprivileged user: nobody.
        let mut c = sb.cmd("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(envwrap_bin());
        c
    } else {
        sb.cmd(envwrap_bin())
    };
    // The built-in default: the policy files of the user running the tests are
    // not another user's to read.
    c.args(["--supervise", "--no-preload", "--"])
        .arg(&prog)
        .current_dir(&dir)
        .env("ENVSHIM_POLICY", ":builtin")
        .timeout(Duration::from_secs(60));
    let o = c.run();
    for way in [
        "pidfd_getfd",
        "/proc/PID/fd",
        "/proc/PID/mem",
        "process_vm_writev",
        "ptrace",
    ] {
        expect_in(&o, &o.stdout_str(), &format!("blocked {way}"));
    }
    assert_eq!(o.status.code(), Some(0), "{}", o.report());
    if root {
        let o = sb
            .cmd(envwrap_bin())
            .args(["--supervise", "--no-preload", "--"])
            .arg(&prog)
            .env("ENVSHIM_POLICY", ":builtin")
            .timeout(Duration::from_secs(60))
            .run();
        expect_in(&o, &o.stdout_str(), "reached pidfd_getfd");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A static program that sets each `NAME=VALUE` argument before `--` in its
/// own environment and execs the program after it.
const SETS_AND_EXECS: &str = r#"
int main(int argc, char **argv) {
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) putenv(argv[i]);
    if (i + 1 >= argc) return 2;
    execv(argv[i + 1], argv + i + 1);
    return 71;
}
"#;

/// A credential's value that stands in a variable's *name* is never shown:
/// not in the supervisor's refusal, not in its log.
#[test]
fn a_credential_value_in_a_variable_name_is_not_shown_by_the_supervisor() {
    let sb = Sandbox::new("supervise-value-in-name");
    let launcher = c_program("sets_and_execs", SETS_AND_EXECS, &["-static"]);
    let value = "made-up-mgr-Ab3dE5gH7jK9";
    let log = sb.join("supervise.log");
    for refuse in [true, false] {
        let _ = std::fs::remove_file(&log);
        let mut c = supervised(&sb, false);
        if refuse {
            c.arg("--refuse-changes");
        }
        let out = c
            .arg(format!("--log={}", log.display()))
            .arg("--")
            .arg(&launcher)
            .arg(format!("{value}_TOKEN=1"))
            .arg(format!("MGR_TOKEN={value}"))
            .arg("--")
            .arg("/bin/true")
            .run();
        if refuse {
            out.check(!out.status.success(), "the exec is refused");
            out.check(out.stderr_str().contains(REFUSED), "the refusal is said");
        } else {
            out.check(out.status.success(), "the exec runs without them");
            out.check(
                out.stderr_str().contains("withheld"),
                "the withholding is said",
            );
        }
        let logged = std::fs::read_to_string(&log).unwrap_or_default();
        out.check(!logged.is_empty(), "the change is logged");
        out.check(
            !out.stderr_str().contains(value) && !logged.contains(value),
            "the credential's value, in a variable's name, is shown (stderr or log)",
        );
    }
}
