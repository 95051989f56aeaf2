//! Stickiness. A program that empties or replaces its
//! child's environment does not leave the shim's process tree: after `env -i`,
//! `bash -c 'exec env -i …'`, a C program passing `{NULL}` as envp, and
//! `unsetenv("LD_PRELOAD")` then `system()`, the grandchild still has the shim in
//! `LD_PRELOAD` and `ENVSHIM_POLICY` (the policy file's path, or `:builtin` for the
//! built-in default), and is still policed: a
//! grandchild exec whose argv holds a token is refused.
//!
//! The token a grandchild tries to pass is assembled by a shell from two halves
//! (`ghp_` and the 36 characters after it), so no argv on the way holds it whole: only
//! the shim inside the last shell can see it.

use std::path::PathBuf;

use envshim_e2e::*;

/// `nullenv PATH ARGV0 ARGS...`: execve with envp = {NULL}.
const NULLENV_C: &str = r#"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc < 3) return 64;
    char *empty[] = { NULL };
    execve(argv[1], argv + 2, empty);
    fprintf(stderr, "nullenv: execve failed: errno=%d (%s)\n", errno, strerror(errno));
    return 71;
}
"#;

/// `unset_system CMDLINE`: unsetenv LD_PRELOAD and ENVSHIM_POLICY, then system().
const UNSET_SYSTEM_C: &str = r#"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
int main(int argc, char **argv) {
    if (argc != 2) return 64;
    if (unsetenv("LD_PRELOAD") != 0 || unsetenv("ENVSHIM_POLICY") != 0) return 65;
    if (getenv("LD_PRELOAD") || getenv("ENVSHIM_POLICY")) return 66;
    fflush(stdout);
    int r = system(argv[1]);
    if (r == -1) {
        fprintf(stderr, "unset_system: system failed: errno=%d (%s)\n", errno, strerror(errno));
        return 71;
    }
    return WIFEXITED(r) ? WEXITSTATUS(r) : 128 + WTERMSIG(r);
}
"#;

/// `replace_preload PATH ARGV0 ARGS...`: execve with envp = {"LD_PRELOAD=$PRELOAD_A:$PRELOAD_B",
/// "ENVSHIM_E2E_REPLACED=1"}: the program rewrote LD_PRELOAD without the shim.
const REPLACE_PRELOAD_C: &str = r#"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc < 3) return 64;
    const char *a = getenv("PRELOAD_A"), *b = getenv("PRELOAD_B");
    if (!a || !b) return 65;
    char entry[8192];
    snprintf(entry, sizeof entry, "LD_PRELOAD=%s:%s", a, b);
    char *env[] = { entry, "ENVSHIM_E2E_REPLACED=1", NULL };
    execve(argv[1], argv + 2, env);
    fprintf(stderr, "replace_preload: execve failed: errno=%d (%s)\n", errno, strerror(errno));
    return 71;
}
"#;

/// An empty shared library, for the other entries of LD_PRELOAD.
const EMPTY_LIB_C: &str = "int envshim_e2e_empty_lib_marker_%d;\n";

fn empty_lib(tag: &str) -> PathBuf {
    let src = EMPTY_LIB_C.replace("%d", tag);
    compile_c_with(&format!("emptylib-{tag}"), &src, &["-shared", "-fPIC"])
}

/// The two halves of the sandbox's GH_TOKEN.
fn halves(sb: &Sandbox) -> (String, String) {
    let t = sb.secrets().value("GH_TOKEN");
    (t[..4].to_string(), t[4..].to_string())
}

/// A policy that behaves like the built-in default and marks every child, so a
/// grandchild shows whether it applied THIS file.
const MARKING_POLICY: &str = r#"version = 1
base = "all"

[argv]
secrets = "refuse"

[set]
E2E_POLICY_MARK = "sticky-file"
"#;

fn assert_has_shim(r: &PrintenvReport, what: &str) {
    assert_eq!(
        r.get("LD_PRELOAD"),
        Some(shim_path_string().as_bytes()),
        "{what}: the grandchild lost the shim: {r:?}"
    );
}

/// Under the built-in default, rule 8's `ENVSHIM_POLICY` names it
/// (`:builtin`), so the child cannot pick a policy file by lookup.
fn assert_on_the_built_in_default(r: &PrintenvReport, what: &str) {
    assert_eq!(
        r.get("ENVSHIM_POLICY"),
        Some(&b":builtin"[..]),
        "{what}: the grandchild's ENVSHIM_POLICY: {r:?}"
    );
}

/// Run `cmd` (whose last program assembles the token and execs printenv with it) and
/// check the shim inside the grandchild refused it.
#[track_caller]
fn assert_grandchild_refused(cmd: &mut TestCommand, what: &str) {
    let printenv = printenv_bin();
    let o = cmd.run();
    assert!(
        !o.status.success(),
        "{what}: the grandchild ran with a token in argv\n{}",
        o.report()
    );
    assert!(
        o.stdout.is_empty(),
        "{what}: printenv ran with a token in argv\n{}",
        o.report()
    );
    let lines = shim_lines(&o.stderr);
    let expected = format!(
        "envshim: refused to run {}:",
        printenv.file_name().unwrap().to_string_lossy()
    );
    assert!(
        lines.iter().any(|l| l.starts_with(&expected)),
        "{what}: no refusal for printenv from the shim in the grandchild\n{}",
        o.report()
    );
}

/// `sh -c 'exec "$0" "$1$2"' PRINTENV ghp_ REST`: the last shell joins the halves.
fn sh_join_exec(sb: &Sandbox) -> Vec<String> {
    let (a, b) = halves(sb);
    vec![
        "/bin/sh".into(),
        "-c".into(),
        r#"exec "$0" "$1$2""#.into(),
        printenv_bin().to_string_lossy().into_owned(),
        a,
        b,
    ]
}

#[test]
fn env_i_grandchild_keeps_the_shim() {
    let sb = Sandbox::new("sticky_env_i");
    let o = sb
        .cmd("env")
        .arg("-i")
        .arg(printenv_bin())
        .env_secrets()
        .with_shim()
        .expect_success();
    let r = PrintenvReport::parse(&o.stdout).unwrap_or_else(|e| o.fail(&e));
    assert_has_shim(&r, "env -i");
    assert_eq!(
        r.names(),
        ["ENVSHIM_POLICY", "LD_PRELOAD"],
        "env -i: the child holds more than the shim's entries"
    );
    assert_on_the_built_in_default(&r, "env -i");

    // Control: without the shim, env -i really empties the environment.
    let o = sb.cmd("env").arg("-i").arg(printenv_bin()).expect_success();
    let r = PrintenvReport::parse(&o.stdout).unwrap_or_else(|e| o.fail(&e));
    assert!(r.names().is_empty(), "{r:?}");
}

#[test]
fn env_i_grandchild_is_policed() {
    let sb = Sandbox::new("sticky_env_i_argv");
    let mut c = sb.cmd("env");
    c.arg("-i").args(sh_join_exec(&sb)).with_shim();
    assert_grandchild_refused(&mut c, "env -i sh");

    // Control: without the shim the grandchild runs with the token.
    let o = sb
        .cmd("env")
        .arg("-i")
        .args(sh_join_exec(&sb))
        .allow_secrets_in_stdout()
        .expect_success();
    assert!(!sb.secrets().is_clean(&o.stdout));
}

#[test]
fn bash_exec_env_i_grandchild_keeps_the_shim_and_is_policed() {
    let sb = Sandbox::new("sticky_bash_exec_env_i");
    let printenv = printenv_bin();
    let o = sb
        .cmd("bash")
        .args(["-c", r#"exec env -i "$0""#])
        .arg(&printenv)
        .env_secrets()
        .with_shim()
        .expect_success();
    let r = PrintenvReport::parse(&o.stdout).unwrap_or_else(|e| o.fail(&e));
    assert_has_shim(&r, "bash -c 'exec env -i'");
    secrets_absent(&sb, &r, "bash -c 'exec env -i'");

    let (a, b) = halves(&sb);
    let mut c = sb.cmd("bash");
    c.args([
        "-c",
        r#"exec env -i /bin/sh -c 'exec "$0" "$1$2"' "$0" "$1" "$2""#,
    ])
    .arg(&printenv)
    .args([a, b])
    .env_secrets()
    .with_shim();
    assert_grandchild_refused(&mut c, "bash -c 'exec env -i sh -c …'");
}

#[test]
fn null_envp_from_c_keeps_the_shim_and_is_policed() {
    let sb = Sandbox::new("sticky_null_envp");
    let nullenv = compile_c("nullenv", NULLENV_C);
    let printenv = printenv_bin();
    let o = sb
        .cmd(&nullenv)
        .arg(&printenv)
        .arg("printenv")
        .env_secrets()
        .with_shim()
        .expect_success();
    let r = PrintenvReport::parse(&o.stdout).unwrap_or_else(|e| o.fail(&e));
    assert_has_shim(&r, "envp {NULL}");
    assert_eq!(r.names(), ["ENVSHIM_POLICY", "LD_PRELOAD"]);
    assert_on_the_built_in_default(&r, "envp {NULL}");

    let mut c = sb.cmd(&nullenv);
    c.args(sh_join_exec(&sb).iter().take(1))
        .args(sh_join_exec(&sb))
        .with_shim();
    assert_grandchild_refused(&mut c, "envp {NULL} then sh");
}

#[test]
fn unsetenv_then_system_keeps_the_shim_and_is_policed() {
    let sb = Sandbox::new("sticky_unset_system");
    let prog = compile_c("unset_system", UNSET_SYSTEM_C);
    let printenv = printenv_bin();
    let o = sb
        .cmd(&prog)
        .arg(format!("exec {}", sh_quote(&printenv.to_string_lossy())))
        .env_secrets()
        .with_shim()
        .expect_success();
    let r = PrintenvReport::parse(&o.stdout).unwrap_or_else(|e| o.fail(&e));
    assert_has_shim(&r, "unsetenv then system");
    secrets_absent(&sb, &r, "unsetenv then system");

    // The command line holds the halves apart; the shell inside system() joins them.
    let (a, b) = halves(&sb);
    let line = format!(
        "h={a}; exec {} \"${{h}}{b}\"",
        sh_quote(&printenv.to_string_lossy())
    );
    let mut c = sb.cmd(&prog);
    c.arg(&line).with_shim();
    assert_grandchild_refused(&mut c, "unsetenv then system");

    // Control: without the shim that line really passes the token.
    let o = sb.cmd(&prog).arg(&line).allow_secrets_in_stdout().run();
    assert!(
        o.status.success() && !sb.secrets().is_clean(&o.stdout),
        "{}",
        o.report()
    );
}

/// A program that rewrote LD_PRELOAD without the shim: the shim goes first, the
/// program's entries follow in their order.
#[test]
fn replaced_ld_preload_keeps_the_shim_first_and_the_rest_in_order() {
    let sb = Sandbox::new("sticky_replaced_preload");
    let prog = compile_c("replace_preload", REPLACE_PRELOAD_C);
    let (a, b) = (empty_lib("a"), empty_lib("b"));
    let o = sb
        .cmd(&prog)
        .arg(printenv_bin())
        .arg("printenv")
        .env("PRELOAD_A", &a)
        .env("PRELOAD_B", &b)
        .with_shim()
        .expect_success();
    let r = PrintenvReport::parse(&o.stdout).unwrap_or_else(|e| o.fail(&e));
    let expected = format!("{}:{}:{}", shim_path_string(), a.display(), b.display());
    assert_eq!(
        r.get("LD_PRELOAD").map(String::from_utf8_lossy).as_deref(),
        Some(expected.as_str()),
        "{r:?}"
    );
    assert_eq!(r.get("ENVSHIM_E2E_REPLACED"), Some(&b"1"[..]));
    assert_eq!(
        r.names().iter().filter(|n| *n == "LD_PRELOAD").count(),
        1,
        "LD_PRELOAD twice: {r:?}"
    );
}

/// An LD_PRELOAD that already lists the shim (after other libraries) is left as is.
#[test]
fn ld_preload_already_holding_the_shim_is_unchanged() {
    let sb = Sandbox::new("sticky_preload_order");
    let a = empty_lib("a");
    let value = format!("{} {}", a.display(), shim_path_string());
    let o = sb
        .cmd("env")
        .arg(printenv_bin())
        .env("LD_PRELOAD", &value)
        .expect_success();
    let r = PrintenvReport::parse(&o.stdout).unwrap_or_else(|e| o.fail(&e));
    assert_eq!(r.get("LD_PRELOAD"), Some(value.as_bytes()), "{r:?}");
}

fn secrets_absent(sb: &Sandbox, r: &PrintenvReport, what: &str) {
    sb.secrets()
        .assert_absent(&format!("the grandchild of {what}"), &r.all_bytes());
    for n in SECRET_NAMES {
        assert!(!r.has(n), "{what}: the grandchild holds {n}");
    }
}

// ---- With a policy file (needs ENVSHIM_POLICY to be honoured by the shim) ----

/// `ENVSHIM_POLICY` is sticky too, and the grandchild applies that file (its `set`
/// marker arrives), after `env -i` and after `unsetenv` + `system()`.
#[test]
fn policy_file_follows_env_i_and_unsetenv_system() {
    let sb = Sandbox::new("sticky_policy_file");
    let policy = sb.write("marking.toml", MARKING_POLICY);
    let printenv = printenv_bin();

    let o = sb
        .cmd("env")
        .arg("-i")
        .arg(&printenv)
        .with_shim()
        .with_policy(&policy)
        .expect_success();
    let r = PrintenvReport::parse(&o.stdout).unwrap_or_else(|e| o.fail(&e));
    assert_has_shim(&r, "env -i with ENVSHIM_POLICY");
    assert_eq!(
        r.get("ENVSHIM_POLICY"),
        Some(policy.as_os_str().as_encoded_bytes()),
        "env -i: ENVSHIM_POLICY did not follow: {r:?}"
    );
    assert_eq!(
        r.get("E2E_POLICY_MARK"),
        Some(&b"sticky-file"[..]),
        "env -i: the child was not under {} (its [set] marker is missing): {r:?}",
        policy.display()
    );

    let prog = compile_c("unset_system", UNSET_SYSTEM_C);
    let o = sb
        .cmd(&prog)
        .arg(format!("exec {}", sh_quote(&printenv.to_string_lossy())))
        .with_shim()
        .with_policy(&policy)
        .expect_success();
    let r = PrintenvReport::parse(&o.stdout).unwrap_or_else(|e| o.fail(&e));
    assert_has_shim(&r, "unsetenv then system with ENVSHIM_POLICY");
    assert_eq!(
        r.get("ENVSHIM_POLICY"),
        Some(policy.as_os_str().as_encoded_bytes()),
        "{r:?}"
    );
    assert_eq!(r.get("E2E_POLICY_MARK"), Some(&b"sticky-file"[..]), "{r:?}");
}

/// `sticky = false`: `env -i` leaves the shim's tree (documented opt-out). The file's
/// `[set]` marker shows the file, not the floor, is in force.
#[test]
fn sticky_false_lets_env_i_leave() {
    let sb = Sandbox::new("sticky_false");
    let policy = sb.write(
        "unsticky.toml",
        "version = 1\nsticky = false\n\n[argv]\nsecrets = \"refuse\"\n\n[set]\nE2E_POLICY_MARK = \"unsticky\"\n",
    );
    let o = sb
        .cmd("env")
        .arg("-i")
        .arg(printenv_bin())
        .with_shim()
        .with_policy(&policy)
        .expect_success();
    let r = PrintenvReport::parse(&o.stdout).unwrap_or_else(|e| o.fail(&e));
    assert_eq!(
        r.names(),
        ["E2E_POLICY_MARK"],
        "sticky = false: env -i's child should get only the policy's [set] entry"
    );
}

// ---- A library ahead of the shim that defines execve itself ----

/// `exec_environ PATH ARGV0 ARGS...`: execve with the process's own environ.
const EXEC_ENVIRON_C: &str = r#"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
extern char **environ;
int main(int argc, char **argv) {
    if (argc < 3) return 64;
    execve(argv[1], argv + 2, environ);
    fprintf(stderr, "exec_environ: execve failed: errno=%d (%s)\n", errno, strerror(errno));
    return 71;
}
"#;

/// A preload library that defines execve, says so on stderr, and passes the call
/// on to the next definition in the lookup order (the shim's).
const FORWARDING_EXECVE_C: &str = r#"
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <unistd.h>
typedef int (*execve_fn)(const char *, char *const[], char *const[]);
int execve(const char *path, char *const argv[], char *const envp[]) {
    static const char msg[] = "hooklib: execve, passed on with RTLD_NEXT\n";
    (void)!write(2, msg, sizeof msg - 1);
    execve_fn next = (execve_fn)dlsym(RTLD_NEXT, "execve");
    if (!next) { errno = ENOSYS; return -1; }
    return next(path, argv, envp);
}
"#;

/// A preload library that defines execve and makes the system call itself.
const RAW_SYSCALL_EXECVE_C: &str = r#"
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>
int execve(const char *path, char *const argv[], char *const envp[]) {
    static const char msg[] = "hooklib: execve, raw system call\n";
    (void)!write(2, msg, sizeof msg - 1);
    return (int)syscall(SYS_execve, path, argv, envp);
}
"#;

/// A name the built-in policy refuses (`*_TOKEN`), with a value that is not seeded:
/// the one credential a test may let through to show what escapes.
const UNSEEDED_CREDENTIAL: (&str, &str) = ("E2E_PLACEHOLDER_TOKEN", "placeholder-not-a-secret");

/// Run `exec_environ printenv` with `LD_PRELOAD=<lib>:<shim>`.
fn run_behind(sb: &Sandbox, lib: &std::path::Path, seeded: bool) -> Outcome {
    let prog = compile_c("exec_environ", EXEC_ENVIRON_C);
    let preload = format!("{}:{}", lib.display(), shim_path_string());
    let mut c = sb.cmd(prog);
    c.arg(printenv_bin())
        .arg("printenv")
        .env("LD_PRELOAD", &preload)
        .env(UNSEEDED_CREDENTIAL.0, UNSEEDED_CREDENTIAL.1);
    if seeded {
        c.env_secrets();
    }
    c.expect_success()
}

/// The library finds execve first, and passes it on with `dlsym(RTLD_NEXT)`: the
/// call reaches the shim, which filters it as usual.
#[test]
fn library_ahead_of_the_shim_that_forwards_execve_is_still_filtered() {
    let sb = Sandbox::new("sticky_forwarding_lib");
    let lib = compile_c_with(
        "forwarding_execve",
        FORWARDING_EXECVE_C,
        &["-shared", "-fPIC", "-ldl"],
    );
    let o = run_behind(&sb, &lib, true);
    assert!(
        o.stderr_str()
            .contains("hooklib: execve, passed on with RTLD_NEXT"),
        "the library ahead of the shim did not see the exec\n{}",
        o.report()
    );
    let r = PrintenvReport::parse(&o.stdout).unwrap_or_else(|e| o.fail(&e));
    secrets_absent(&sb, &r, "a forwarding library");
    assert!(
        !r.has(UNSEEDED_CREDENTIAL.0),
        "the shim did not filter an exec passed on to it: {r:?}"
    );
    // The order the program chose is kept (the shim is already in the value).
    let preload = format!("{}:{}", lib.display(), shim_path_string());
    assert_eq!(r.get("LD_PRELOAD"), Some(preload.as_bytes()), "{r:?}");
}

/// The library makes the execve system call itself: the shim never sees the exec,
/// and a credential in the environment reaches the child. This is the documented
/// limit (docs/shim.md, "What it cannot reach"); the credential used here is not a
/// seeded value, so nothing secret is printed.
#[test]
fn library_ahead_of_the_shim_that_makes_the_system_call_escapes_it() {
    let sb = Sandbox::new("sticky_raw_syscall_lib");
    let lib = compile_c_with(
        "raw_syscall_execve",
        RAW_SYSCALL_EXECVE_C,
        &["-shared", "-fPIC"],
    );
    let o = run_behind(&sb, &lib, false);
    assert!(
        o.stderr_str().contains("hooklib: execve, raw system call"),
        "{}",
        o.report()
    );
    assert!(
        shim_lines(&o.stderr).is_empty(),
        "the shim said something about an exec it cannot see\n{}",
        o.report()
    );
    let r = PrintenvReport::parse(&o.stdout).unwrap_or_else(|e| o.fail(&e));
    assert_eq!(
        r.get(UNSEEDED_CREDENTIAL.0),
        Some(UNSEEDED_CREDENTIAL.1.as_bytes()),
        "the credential was removed: the shim now reaches raw execve system calls; \
         update docs/security.md and docs/shim.md"
    );
    // Control: the same program and variable behind the forwarding library.
    let fwd = compile_c_with(
        "forwarding_execve",
        FORWARDING_EXECVE_C,
        &["-shared", "-fPIC", "-ldl"],
    );
    let o = run_behind(&sb, &fwd, false);
    let r = PrintenvReport::parse(&o.stdout).unwrap_or_else(|e| o.fail(&e));
    assert!(!r.has(UNSEEDED_CREDENTIAL.0), "{r:?}");
}
