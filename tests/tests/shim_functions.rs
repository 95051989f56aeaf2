//! Every exported function, through a real C program.
//!
//! One C program per exported function (`execve`, `execv`, `execvp`, `execvpe`, `execl`,
//! `execlp`, `execle`, `fexecve`, `execveat`, `posix_spawn`, `posix_spawnp`, `system`,
//! `popen`): the same source compiled with `-DFN_<NAME>`, so each binary calls exactly
//! one of them. (`pidfd_spawn` and `pidfd_spawnp` need glibc 2.39, which this host
//! lacks: tests/tests/glibc_roots.rs calls them in a Debian 13 root.) It starts the printenv helper with an environment that holds every
//! seeded token plus two kept names, under `libenvshim.so` with the built-in policy.
//!
//! For each function:
//! - `*_delivers_filtered_env`: the child's /proc/self/environ lacks every seeded name
//!   and value, keeps the kept names (and, for the functions that take an explicit
//!   envp, the marker only that envp holds), has the shim in `LD_PRELOAD`, and gets its
//!   argv byte for byte. A control run without the shim shows the token arriving.
//! - `*_refuses_secret_in_argv`: the same exec with `GH_TOKEN`'s value in one argument
//!   fails: -1/EPERM for the exec family, EPERM as the return value of `posix_spawn*`,
//!   -1/EPERM from `system`, NULL/EPERM from `popen`; nothing runs; stderr names the
//!   program and `GH_TOKEN` and never the value. Without the shim the same exec runs.

use std::path::{Path, PathBuf};

use envshim_e2e::*;

/// The spawner. Usage: `spawner PROG ARGV0 ARGS...` (exactly 10 argv elements for the
/// execl family, whose C call has a fixed arity), or `spawner CMDLINE` for system and
/// popen. A failure prints `spawner: FN failed: errno=N` and exits 71; otherwise the
/// exit status is the child's.
const SPAWNER_C: &str = r#"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* The caller's environment plus a marker that only an explicit envp carries. */
static char **explicit_env(void) {
    size_t n = 0;
    while (environ[n]) n++;
    char **e = calloc(n + 2, sizeof *e);
    if (!e) _exit(70);
    for (size_t i = 0; i < n; i++) e[i] = environ[i];
    e[n] = "ENVSHIM_E2E_EXPLICIT=1";
    return e;
}

static int failed(const char *fn, int err) {
    fprintf(stderr, "spawner: %s failed: errno=%d (%s)\n", fn, err, strerror(err));
    return 71;
}

static int status_of(int st) {
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return 73;
}

static int wait_child(pid_t pid) {
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return failed("waitpid", errno);
    return status_of(st);
}

int main(int argc, char **argv) {
    (void)explicit_env; (void)wait_child;
    if (argc < 2) return 64;
    char **args = argv + 2;
#define A(i) argv[2 + (i)]
#if defined(FN_EXECL) || defined(FN_EXECLP) || defined(FN_EXECLE)
    if (argc != 12) { fprintf(stderr, "spawner: the execl family needs exactly 10 argv elements\n"); return 64; }
#endif
#if defined(FN_EXECVE)
    execve(argv[1], args, explicit_env());
    return failed("execve", errno);
#elif defined(FN_EXECV)
    execv(argv[1], args);
    return failed("execv", errno);
#elif defined(FN_EXECVP)
    execvp(argv[1], args);
    return failed("execvp", errno);
#elif defined(FN_EXECVPE)
    execvpe(argv[1], args, explicit_env());
    return failed("execvpe", errno);
#elif defined(FN_EXECL)
    execl(argv[1], A(0), A(1), A(2), A(3), A(4), A(5), A(6), A(7), A(8), A(9), (char *)NULL);
    return failed("execl", errno);
#elif defined(FN_EXECLP)
    execlp(argv[1], A(0), A(1), A(2), A(3), A(4), A(5), A(6), A(7), A(8), A(9), (char *)NULL);
    return failed("execlp", errno);
#elif defined(FN_EXECLE)
    execle(argv[1], A(0), A(1), A(2), A(3), A(4), A(5), A(6), A(7), A(8), A(9), (char *)NULL,
           explicit_env());
    return failed("execle", errno);
#elif defined(FN_FEXECVE)
    int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
    if (fd < 0) return failed("open", errno);
    fexecve(fd, args, explicit_env());
    return failed("fexecve", errno);
#elif defined(FN_EXECVEAT)
    /* Relative to a directory descriptor: execveat(dirfd, "name", ...). */
    char *dir = strdup(argv[1]);
    char *slash = strrchr(dir, '/');
    if (!slash) return 64;
    *slash = '\0';
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return failed("open", errno);
    execveat(dfd, slash + 1, args, explicit_env(), 0);
    return failed("execveat", errno);
#elif defined(FN_POSIX_SPAWN)
    pid_t pid;
    int r = posix_spawn(&pid, argv[1], NULL, NULL, args, explicit_env());
    if (r != 0) return failed("posix_spawn", r);
    return wait_child(pid);
#elif defined(FN_POSIX_SPAWNP)
    pid_t pid;
    int r = posix_spawnp(&pid, argv[1], NULL, NULL, args, explicit_env());
    if (r != 0) return failed("posix_spawnp", r);
    return wait_child(pid);
#elif defined(FN_SYSTEM)
    fflush(stdout);
    int r = system(argv[1]);
    if (r == -1) return failed("system", errno);
    return status_of(r);
#elif defined(FN_POPEN)
    FILE *f = popen(argv[1], "r");
    if (!f) return failed("popen", errno);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, n, stdout);
    fflush(stdout);
    int r = pclose(f);
    if (r == -1) return failed("pclose", errno);
    return status_of(r);
#else
#error "define one FN_*"
#endif
}
"#;

/// How a function is called, which decides what the test passes and expects.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Call {
    /// An absolute path and an argv array.
    Path,
    /// A bare name, found on PATH.
    Search,
    /// A path opened as a descriptor (`fexecve`): the shim names it `fd N`.
    Fd,
    /// A path relative to a directory descriptor (`execveat`): named by its basename.
    DirRelative,
    /// A shell command line (`system`, `popen`): the shim sees `/bin/sh -c LINE`.
    Shell,
}

struct Func {
    name: &'static str,
    call: Call,
    /// Passes its own envp (the `ENVSHIM_E2E_EXPLICIT` marker must arrive).
    explicit_env: bool,
    /// Variadic: exactly 10 argv elements.
    variadic: bool,
}

const fn f(name: &'static str, call: Call, explicit_env: bool, variadic: bool) -> Func {
    Func {
        name,
        call,
        explicit_env,
        variadic,
    }
}

const EXECVE: Func = f("execve", Call::Path, true, false);
const EXECV: Func = f("execv", Call::Path, false, false);
const EXECVP: Func = f("execvp", Call::Search, false, false);
const EXECVPE: Func = f("execvpe", Call::Search, true, false);
const EXECL: Func = f("execl", Call::Path, false, true);
const EXECLP: Func = f("execlp", Call::Search, false, true);
const EXECLE: Func = f("execle", Call::Path, true, true);
const FEXECVE: Func = f("fexecve", Call::Fd, true, false);
const EXECVEAT: Func = f("execveat", Call::DirRelative, true, false);
const POSIX_SPAWN: Func = f("posix_spawn", Call::Path, true, false);
const POSIX_SPAWNP: Func = f("posix_spawnp", Call::Search, true, false);
const SYSTEM: Func = f("system", Call::Shell, false, false);
const POPEN: Func = f("popen", Call::Shell, false, false);

fn spawner(func: &Func) -> PathBuf {
    let define = format!("-DFN_{}", func.name.to_ascii_uppercase());
    compile_c_with(&format!("spawner-{}", func.name), SPAWNER_C, &[&define])
}

/// argv[1..] for the child: 9 elements (with argv[0], the 10 the execl family needs),
/// with spaces, an empty string, `=`, a tab, UTF-8 and a leading dash.
fn child_args(extra: Option<&str>) -> Vec<String> {
    let mut v: Vec<String> = [
        "a b",
        "",
        "x=y",
        "--flag",
        "tab\there",
        "ünïcødé",
        "'quoted'",
        "$HOME",
        "last",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if let Some(x) = extra {
        v[3] = x.to_string();
    }
    v
}

/// The spawner's command line for `func`, running printenv with `args`.
fn spawner_args(func: &Func, printenv: &Path, args: &[String]) -> Vec<String> {
    let path = printenv.to_string_lossy().into_owned();
    let base = printenv
        .file_name()
        .expect("printenv has a name")
        .to_string_lossy()
        .into_owned();
    match func.call {
        Call::Shell => {
            let mut line = format!("exec {}", sh_quote(&path));
            for a in args {
                line.push(' ');
                line.push_str(&sh_quote(a));
            }
            vec![line]
        }
        Call::Search => {
            let mut v = vec![base.clone(), base];
            v.extend(args.iter().cloned());
            v
        }
        _ => {
            let mut v = vec![path, "printenv-argv0".to_string()];
            v.extend(args.iter().cloned());
            v
        }
    }
}

/// What the shim names as the program in its refusal line.
/// The program a refusal names: the file name of what was exec'd (the line
/// every front end writes, envpolicy_core::refusal), for an fd-based exec
/// the file the descriptor was opened from.
fn expected_program(func: &Func, printenv: &Path) -> String {
    match func.call {
        Call::Path | Call::Fd | Call::Search | Call::DirRelative => printenv
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned(),
        Call::Shell => "sh".to_string(),
    }
}

/// The command: the spawner for `func`, with every seeded secret, two kept names and
/// a PATH that finds printenv by name.
fn command(sb: &Sandbox, func: &Func, args: &[String]) -> TestCommand {
    assert!(!func.variadic || args.len() == 9);
    let printenv = printenv_bin();
    let dir = printenv.parent().expect("cache dir").to_owned();
    let path = format!("{}:/usr/bin:/bin", dir.display());
    let mut c = sb.cmd(spawner(func));
    c.args(spawner_args(func, &printenv, args))
        .env_secrets()
        .env("PATH", path)
        .env("ENVSHIM_E2E_KEEP_A", "alpha")
        .env("ENVSHIM_E2E_KEEP_B", "two words=and equals");
    c
}

fn check_delivers_filtered_env(func: Func) {
    let sb = Sandbox::new(&format!("fn_env_{}", func.name));
    let secrets = sb.secrets().clone();
    let args = child_args(None);

    // Control: without the shim the token arrives, so the checks below can fail.
    let o = command(&sb, &func, &args)
        .allow_secrets_in_stdout()
        .expect_success();
    let r = PrintenvReport::parse(&o.stdout).unwrap_or_else(|e| o.fail(&e));
    assert_eq!(
        r.get("GH_TOKEN"),
        Some(secrets.value("GH_TOKEN").as_bytes()),
        "{}: control run without the shim did not deliver GH_TOKEN",
        func.name
    );

    let o = command(&sb, &func, &args).with_shim().expect_success();
    let r = PrintenvReport::parse(&o.stdout).unwrap_or_else(|e| o.fail(&e));
    secrets.assert_absent(
        &format!("what {} delivered under the shim", func.name),
        &r.all_bytes(),
    );
    let names = r.names();
    for s in secrets.iter() {
        assert!(
            !names.iter().any(|n| n == s.name()),
            "{}: the child's /proc/self/environ holds {} (names: {names:?})",
            func.name,
            s.name()
        );
    }
    assert_eq!(
        r.get("ENVSHIM_E2E_KEEP_A"),
        Some(&b"alpha"[..]),
        "{}: {r:?}",
        func.name
    );
    assert_eq!(
        r.get("ENVSHIM_E2E_KEEP_B"),
        Some(&b"two words=and equals"[..]),
        "{}: {r:?}",
        func.name
    );
    if func.explicit_env {
        assert_eq!(
            r.get("ENVSHIM_E2E_EXPLICIT"),
            Some(&b"1"[..]),
            "{}: the explicit envp was not the one used: {r:?}",
            func.name
        );
    }
    assert_eq!(
        r.get("LD_PRELOAD"),
        Some(shim_path_string().as_bytes()),
        "{}: the child lost the shim",
        func.name
    );
    let got: Vec<String> = r.args();
    assert_eq!(
        &got[1..],
        &args[..],
        "{}: argv changed on the way",
        func.name
    );
    if !matches!(func.call, Call::Shell | Call::Search) {
        assert_eq!(got[0], "printenv-argv0", "{}: argv[0] changed", func.name);
    }
    assert!(
        shim_lines(&o.stderr).is_empty(),
        "{}: the shim printed something for a quiet strip:\n{}",
        func.name,
        o.report()
    );
}

fn check_refuses_secret_in_argv(func: Func) {
    let sb = Sandbox::new(&format!("fn_argv_{}", func.name));
    let token = sb.secrets().value("GH_TOKEN").to_string();
    let args = child_args(Some(&format!("--token={token}")));

    // Control: without the shim the exec goes through (and the value reaches argv).
    let o = command(&sb, &func, &args)
        .allow_secrets_in_stdout()
        .expect_success();
    assert!(PrintenvReport::parse(&o.stdout).is_ok(), "{}", o.report());

    let o = command(&sb, &func, &args).with_shim().run();
    assert_eq!(
        o.status.code(),
        Some(71),
        "{}: expected the spawner's failure exit (71)\n{}",
        func.name,
        o.report()
    );
    assert!(
        o.stdout.is_empty(),
        "{}: the child ran anyway\n{}",
        func.name,
        o.report()
    );
    let spawner_line = format!("spawner: {} failed: errno=", func.name);
    assert!(
        o.stderr_str().contains(&spawner_line),
        "{}: no failure line\n{}",
        func.name,
        o.report()
    );
    assert_eq!(
        reported_errno(&o.stderr),
        Some(libc::EPERM),
        "{}: expected EPERM\n{}",
        func.name,
        o.report()
    );
    let lines = shim_lines(&o.stderr);
    assert_eq!(
        lines.len(),
        1,
        "{}: expected exactly one line from the shim\n{}",
        func.name,
        o.report()
    );
    let line = &lines[0];
    assert!(
        line.starts_with("envshim: refused to run "),
        "{}: {line}",
        func.name
    );
    assert!(
        line.contains("GH_TOKEN"),
        "{}: the refusal does not name GH_TOKEN: {line}",
        func.name
    );
    let prog = expected_program(&func, &printenv_bin());
    assert!(
        line.contains(&format!("refused to run {prog}:")),
        "{}: the refusal does not name the program {prog:?}: {line}",
        func.name
    );
    assert!(
        line.ends_with("(the built-in policy)"),
        "{}: the refusal does not name the policy: {line}",
        func.name
    );
    // (The harness already failed the run if stderr held the value.)
    assert!(!o.stderr_str().contains(&token));
}

macro_rules! function_tests {
    ($($func:ident => $env_test:ident, $argv_test:ident;)*) => {
        $(
            #[test]
            fn $env_test() {
                check_delivers_filtered_env($func);
            }

            #[test]
            fn $argv_test() {
                check_refuses_secret_in_argv($func);
            }
        )*
    };
}

function_tests! {
    EXECVE => execve_delivers_filtered_env, execve_refuses_secret_in_argv;
    EXECV => execv_delivers_filtered_env, execv_refuses_secret_in_argv;
    EXECVP => execvp_delivers_filtered_env, execvp_refuses_secret_in_argv;
    EXECVPE => execvpe_delivers_filtered_env, execvpe_refuses_secret_in_argv;
    EXECL => execl_delivers_filtered_env, execl_refuses_secret_in_argv;
    EXECLP => execlp_delivers_filtered_env, execlp_refuses_secret_in_argv;
    EXECLE => execle_delivers_filtered_env, execle_refuses_secret_in_argv;
    FEXECVE => fexecve_delivers_filtered_env, fexecve_refuses_secret_in_argv;
    EXECVEAT => execveat_delivers_filtered_env, execveat_refuses_secret_in_argv;
    POSIX_SPAWN => posix_spawn_delivers_filtered_env, posix_spawn_refuses_secret_in_argv;
    POSIX_SPAWNP => posix_spawnp_delivers_filtered_env, posix_spawnp_refuses_secret_in_argv;
    SYSTEM => system_delivers_filtered_env, system_refuses_secret_in_argv;
    POPEN => popen_delivers_filtered_env, popen_refuses_secret_in_argv;
}

/// A name-only credential (no token shape) in argv is found by its value, and the
/// message names that variable: JIRA_API_TOKEN's value is 24 plain alphanumerics.
#[test]
fn name_only_credential_value_in_argv_is_refused_by_name() {
    let sb = Sandbox::new("fn_argv_name_only");
    let value = sb.secrets().value("JIRA_API_TOKEN").to_string();
    let args = child_args(Some(&value));
    let o = command(&sb, &EXECV, &args).with_shim().run();
    assert_eq!(o.status.code(), Some(71), "{}", o.report());
    assert_eq!(
        reported_errno(&o.stderr),
        Some(libc::EPERM),
        "{}",
        o.report()
    );
    let lines = shim_lines(&o.stderr);
    assert_eq!(lines.len(), 1, "{}", o.report());
    assert!(
        lines[0].contains("holds the value of JIRA_API_TOKEN"),
        "{}",
        lines[0]
    );
}

/// glibc's PATH semantics survive the shim: a missing program is ENOENT, a
/// non-executable one EACCES, for the exec p-variants and posix_spawnp alike.
#[test]
fn path_search_errors_are_glibcs() {
    let sb = Sandbox::new("fn_path_errors");
    let dir = sb.mkdir("bin");
    let noexec = sb.write("bin/not-executable", "#!/bin/sh\n");
    let _ = noexec;
    for func in [EXECVP, EXECVPE, EXECLP, POSIX_SPAWNP] {
        for (name, errno) in [
            ("envshim-e2e-no-such-program", libc::ENOENT),
            ("not-executable", libc::EACCES),
        ] {
            let mut argv = vec![name.to_string(), name.to_string()];
            argv.extend(child_args(None));
            let run = |shim: bool| {
                let mut c = sb.cmd(spawner(&func));
                c.args(&argv)
                    .env("PATH", format!("{}:/usr/bin:/bin", dir.display()));
                if shim {
                    c.with_shim();
                }
                c.run()
            };
            let (plain, shimmed) = (run(false), run(true));
            assert_eq!(
                reported_errno(&plain.stderr),
                Some(errno),
                "{} {name} without the shim\n{}",
                func.name,
                plain.report()
            );
            assert_eq!(
                reported_errno(&shimmed.stderr),
                Some(errno),
                "{} {name} under the shim\n{}",
                func.name,
                shimmed.report()
            );
            assert_eq!(plain.status.code(), shimmed.status.code());
        }
    }
}

/// `fexecve` and `execveat(AT_EMPTY_PATH)` of `/usr/bin/env`: the policy sees the
/// program as `/usr/bin/env`, so a `[program.env]` section applies (it strips
/// `FD_MARK` from env's environment, which env would otherwise pass on to the
/// shell it runs), as it does for `execve` of the same path.
const FD_EXEC_C: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
extern char **environ;
int main(int argc, char **argv) {
    int fd = open("/usr/bin/env", O_RDONLY | O_CLOEXEC);
    if (fd < 0) { perror("open"); return 70; }
    char *args[] = {"env", "/bin/sh", "-c", "tr '\\0' '\\n' < /proc/$$/environ", NULL};
    if (strcmp(argv[1], "fexecve") == 0) fexecve(fd, args, environ);
    else execveat(fd, "", args, environ, AT_EMPTY_PATH);
    perror(argv[1]);
    return 71;
}
"#;

#[test]
fn fd_based_exec_applies_the_program_section_of_its_path() {
    let sb = Sandbox::new("fn_fd_section");
    let prog = compile_c("fd-exec", FD_EXEC_C);
    let policy = sb.write(
        "policy.toml",
        "version = 1\nbase = \"all\"\n[program.env]\nstrip = [\"FD_MARK\"]\n",
    );
    for how in ["fexecve", "execveat"] {
        let out = sb
            .cmd(&prog)
            .arg(how)
            .with_shim()
            .with_policy(&policy)
            .env("FD_MARK", "1")
            .expect_success();
        assert!(
            !out.stdout_str().contains("FD_MARK="),
            "{how}: [program.env] did not apply"
        );
        assert!(
            out.stdout_str().contains("PATH="),
            "{how}: {}",
            out.report()
        );
    }
}
