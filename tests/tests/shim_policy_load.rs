//! How libenvshim.so finds the configured policy and its compiled cache
//! (shim/src/state/load.rs, envpolicy::cache, `envwrap compile`).
//!
//! Each test runs real programs under the shim with `ENVSHIM_POLICY` pointing into
//! a sandbox and `ENVSHIM_CACHE_DIR` there (`home/.cache/envshim`); a floor-bound
//! child, whose floor drops `ENVSHIM_CACHE_DIR`, uses the default cache directory.
//! `ENVSHIM_ENVWRAP` is a script that counts its runs and then runs the real
//! envwrap, so a test can tell whether a process start compiled the policy.
//!
//! Which policy is in force is read from a child's environment: `sh -c 'exec env'`
//! under the shim, with `MARK_A` and `MARK_B` in the environment. The test policy
//! strips `MARK_A` only; the built-in default keeps both; the fail-closed floor
//! (base = "floor") keeps neither, but keeps `PATH`.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use envshim_e2e::*;

const POLICY: &str = "version = 1\nbase = \"all\"\nstrip = [\"MARK_A\"]\n";
/// Strips the names that names.env declares.
const IMPORTING: &str =
    "version = 1\nbase = \"all\"\n[[import.env_file]]\npath = \"names.env\"\nrole = \"strip\"\n";
/// Unknown key `bas` on line 2, column 1.
const MALFORMED: &str = "version = 1\nbas = \"none\"\n";

// `ENVSHIM_POLICY` is set directly rather than with `ShimExt::with_policy`, which
// also points `ENVSHIM_CACHE_DIR` elsewhere: these tests choose the cache location.

/// What the child of a shimmed process received.
#[derive(Debug, PartialEq, Eq)]
enum InForce {
    /// MARK_A stripped, MARK_B kept.
    TestPolicy,
    /// Both kept.
    Default,
    /// Neither kept, PATH kept.
    Floor,
    /// MARK_B stripped, MARK_A kept (a second version of the test policy).
    StripsB,
    Other(String),
}

struct World {
    sb: Sandbox,
    cache_home: PathBuf,
    counter: PathBuf,
    count_file: PathBuf,
}

impl World {
    fn new(name: &str) -> World {
        let sb = Sandbox::new(name);
        let cache_home = sb.mkdir("home");
        let count_file = sb.join("envwrap-runs");
        let counter = sb.write_executable(
            "envwrap-counter",
            format!(
                "#!/bin/sh\necho run >> {}\nexec {} \"$@\"\n",
                sh_quote(&count_file.to_string_lossy()),
                sh_quote(&envwrap_bin().to_string_lossy())
            ),
        );
        World {
            sb,
            cache_home,
            counter,
            count_file,
        }
    }

    fn runs(&self) -> usize {
        std::fs::read_to_string(&self.count_file)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    fn cache_dir(&self) -> PathBuf {
        self.cache_home.join(".cache/envshim")
    }

    fn cache_of(&self, policy: &Path) -> PathBuf {
        let dir = self.cache_dir();
        envpolicy::cache::cache_path(
            policy,
            |k| (k == "ENVSHIM_CACHE_DIR").then(|| dir.clone().into_os_string()),
            envpolicy::cache::current_uid(),
        )
    }

    /// A command under the shim with this world's cache, counter and markers.
    fn shimmed(&self, program: impl AsRef<std::ffi::OsStr>) -> TestCommand {
        let mut c = self.sb.cmd(program);
        c.with_shim()
            .env("HOME", &self.cache_home)
            .env("ENVSHIM_CACHE_DIR", self.cache_dir())
            .env_remove("XDG_CONFIG_HOME")
            .env("ENVSHIM_ENVWRAP", &self.counter)
            .env("MARK_A", "a")
            .env("MARK_B", "b")
            .timeout(Duration::from_secs(30));
        c
    }

    /// Run `sh -c 'exec env'` under the shim with `policy`; what was in force, and
    /// the shim's and envwrap's stderr lines.
    fn observe(&self, policy: Option<&Path>) -> (InForce, Vec<String>) {
        let mut c = self.shimmed("/bin/sh");
        c.args(["-c", "exec env"]);
        if let Some(p) = policy {
            c.env("ENVSHIM_POLICY", p);
        }
        let out = c.expect_success();
        let vars: Vec<String> = out.stdout_str().lines().map(str::to_string).collect();
        let has = |n: &str| vars.iter().any(|l| l.starts_with(&format!("{n}=")));
        let state = match (has("MARK_A"), has("MARK_B"), has("PATH")) {
            (false, true, _) => InForce::TestPolicy,
            (true, true, _) => InForce::Default,
            (false, false, true) => InForce::Floor,
            (true, false, _) => InForce::StripsB,
            _ => InForce::Other(vars.join(" ")),
        };
        (state, messages(&out.stderr))
    }
}

/// Lines written by the shim or by envwrap.
fn messages(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| l.starts_with("envshim: ") || l.starts_with("envwrap: "))
        .filter(|l| !is_withheld_line(l))
        .map(str::to_string)
        .collect()
}

fn mtime_ns(p: &Path) -> i128 {
    let md = std::fs::metadata(p).unwrap();
    i128::from(md.mtime()) * 1_000_000_000 + i128::from(md.mtime_nsec())
}

#[test]
fn compiled_on_first_use_then_reused() {
    let w = World::new("load_first_use");
    let policy = w.sb.write("policy.toml", POLICY);
    let cache = w.cache_of(&policy);
    assert!(!cache.exists());

    let (state, msgs) = w.observe(Some(&policy));
    assert_eq!(state, InForce::TestPolicy);
    assert!(msgs.is_empty(), "{msgs:?}");
    assert_eq!(w.runs(), 1, "the first process start compiles");
    let md = std::fs::metadata(&cache).expect("the cache was written");
    assert_eq!(md.mode() & 0o777, 0o600, "cache file is owner-only");
    assert_eq!(md.uid(), envpolicy::cache::current_uid());
    let dir = std::fs::metadata(cache.parent().unwrap()).unwrap();
    assert_eq!(dir.mode() & 0o777, 0o700, "cache directory is owner-only");
    let first = mtime_ns(&cache);

    // Later starts map the cache: no compile, same file.
    for _ in 0..3 {
        let (state, msgs) = w.observe(Some(&policy));
        assert_eq!(state, InForce::TestPolicy);
        assert!(msgs.is_empty(), "{msgs:?}");
    }
    assert_eq!(w.runs(), 1, "a fresh cache is not compiled again");
    assert_eq!(mtime_ns(&cache), first);

    // A relative ENVSHIM_POLICY names the same cache (the path is made absolute).
    let mut c = w.shimmed("/bin/sh");
    c.args(["-c", "exec env"])
        .env("ENVSHIM_POLICY", "policy.toml");
    let out = c.expect_success();
    assert!(!out.stdout_str().contains("MARK_A="));
    assert_eq!(w.runs(), 1);
}

#[test]
fn recompiled_when_the_policy_changes() {
    let w = World::new("load_policy_changes");
    let policy = w.sb.write("policy.toml", POLICY);
    assert_eq!(w.observe(Some(&policy)).0, InForce::TestPolicy);
    assert_eq!(w.runs(), 1);

    w.sb.write(
        "policy.toml",
        "version = 1\nbase = \"all\"\nstrip = [\"MARK_B\"]\n",
    );
    let (state, msgs) = w.observe(Some(&policy));
    assert_eq!(state, InForce::StripsB, "the edited policy is in force");
    assert!(msgs.is_empty(), "{msgs:?}");
    assert_eq!(w.runs(), 2);
    assert_eq!(w.observe(Some(&policy)).0, InForce::StripsB);
    assert_eq!(w.runs(), 2);
}

#[test]
fn recompiled_when_an_imported_env_file_changes() {
    let w = World::new("load_import_changes");
    let policy = w.sb.write("policy.toml", IMPORTING);
    // The import is missing at first: nothing is stripped.
    assert_eq!(w.observe(Some(&policy)).0, InForce::Default);
    assert_eq!(w.runs(), 1);
    assert_eq!(w.observe(Some(&policy)).0, InForce::Default);
    assert_eq!(w.runs(), 1);

    // It appears: the names it declares are stripped.
    w.sb.write("names.env", "MARK_A=x\n");
    assert_eq!(w.observe(Some(&policy)).0, InForce::TestPolicy);
    assert_eq!(w.runs(), 2);
    assert_eq!(w.observe(Some(&policy)).0, InForce::TestPolicy);
    assert_eq!(w.runs(), 2);

    // It changes.
    w.sb.write("names.env", "MARK_B=yy\n");
    assert_eq!(w.observe(Some(&policy)).0, InForce::StripsB);
    assert_eq!(w.runs(), 3);
}

/// A program that never spawns prints whether `MARK_A` and `MARK_B` are set.
const MARKS_C: &str = "#include <stdio.h>\n#include <stdlib.h>\nint main(void){printf(\"%s %s\\n\",getenv(\"MARK_A\")?\"A\":\"-\",getenv(\"MARK_B\")?\"B\":\"-\");return 0;}\n";

/// A world whose policy (`IMPORTING`) was compiled while names.env declared
/// `MARK_A`, and whose names.env now declares `MARK_B`: its cache is stale by the
/// import alone.
fn stale_by_its_import(name: &str) -> (World, PathBuf) {
    let w = World::new(name);
    let policy = w.sb.write("policy.toml", IMPORTING);
    w.sb.write("names.env", "MARK_A=x\n");
    assert_eq!(w.observe(Some(&policy)).0, InForce::TestPolicy);
    assert_eq!(w.runs(), 1);
    w.sb.write("names.env", "MARK_B=yy\n");
    (w, policy)
}

/// A process start checks the policy file itself (a `stat`), and leaves the files
/// it imports to its first exec: a process that never spawns does not compile
/// after an import changed, the next one that execs does, and an edit of the
/// policy file is compiled at the next start, spawning or not.
#[test]
fn imports_are_checked_at_the_first_exec_the_policy_file_at_every_start() {
    let (w, policy) = stale_by_its_import("load_deferred_imports");
    let quiet = compile_c("load_marks", MARKS_C);
    let run_quiet = || {
        let out = w
            .shimmed(&quiet)
            .env("ENVSHIM_POLICY", &policy)
            .expect_success();
        assert_eq!(
            out.stdout_str(),
            "A B\n",
            "the shim leaves its host's environment alone"
        );
        assert!(out.stderr.is_empty(), "{}", out.stderr_str());
    };

    // The import changed. A process that never spawns does not compile.
    run_quiet();
    assert_eq!(
        w.runs(),
        1,
        "a process that never spawns compiled the policy"
    );
    // The next exec does, and enforces the change.
    let (state, msgs) = w.observe(Some(&policy));
    assert_eq!(
        state,
        InForce::StripsB,
        "the changed import is in force at the first exec"
    );
    assert!(msgs.is_empty(), "{msgs:?}");
    assert_eq!(w.runs(), 2);

    // The policy file itself changes: compiled at the next start, spawning or not.
    w.sb.write("policy.toml", POLICY);
    run_quiet();
    assert_eq!(w.runs(), 3, "a start after a policy edit compiles it");
    assert_eq!(w.observe(Some(&policy)).0, InForce::TestPolicy);
    assert_eq!(w.runs(), 3);
}

/// The first exec of a process may be in a `vfork` child: the deferred check, and
/// the compile it finds needed, run there, and land in the parent's memory, so the
/// parent's next child neither compiles again nor sees the old policy.
#[test]
fn a_vfork_child_completes_the_check_for_its_parent() {
    let (w, policy) = stale_by_its_import("load_deferred_vfork");
    let twice = compile_c(
        "load_vfork_twice",
        r#"#define _GNU_SOURCE
#include <stdio.h>
#include <unistd.h>
#include <sys/wait.h>
extern char **environ;
int main(void) {
    for (int i = 0; i < 2; i++) {
        char *argv[] = {"sh", "-c", "echo child: ${MARK_A:+A} ${MARK_B:+B}.", NULL};
        pid_t p = vfork();
        if (p == 0) { execve("/bin/sh", argv, environ); _exit(127); }
        int st;
        if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
        fflush(stdout);
    }
    return 0;
}
"#,
    );
    let out = w
        .shimmed(&twice)
        .env("ENVSHIM_POLICY", &policy)
        .expect_success();
    assert_eq!(
        out.stdout_str(),
        "child: A .\nchild: A .\n",
        "both children of the vfork parent have the changed import in force"
    );
    assert!(messages(&out.stderr).is_empty(), "{}", out.stderr_str());
    assert_eq!(w.runs(), 2, "the first child compiled, and only it");
}

/// A compile on an exec path runs no handler of the program in the wrong process:
/// the first exec is in a `vfork` child, which shares the parent's memory, and
/// envwrap's exit raises `SIGCHLD` there. The program's handler must not run in the
/// child (it would act on the parent's state from another process), and the parent
/// is not told of a child it never had.
#[test]
fn a_compile_in_a_vfork_child_runs_no_signal_handler_there() {
    let (w, policy) = stale_by_its_import("load_deferred_sigchld");
    let prog = compile_c(
        "load_vfork_sigchld",
        r#"#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
extern char **environ;
static volatile sig_atomic_t in_child, in_parent;
static pid_t parent;
static void on_chld(int sig) { (void)sig; if (getpid() != parent) in_child++; else in_parent++; }
int main(void) {
    parent = getpid();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_chld;
    sigaction(SIGCHLD, &sa, NULL);
    char *argv[] = {"sh", "-c", "echo child: ${MARK_A:+A} ${MARK_B:+B}.", NULL};
    pid_t p = vfork();
    if (p == 0) { execve("/bin/sh", argv, environ); _exit(127); }
    int st;
    while (waitpid(p, &st, 0) < 0) {}
    printf("handler in the vfork child: %d, in the parent: %d\n", (int)in_child, (int)in_parent);
    return 0;
}
"#,
    );
    let out = w
        .shimmed(&prog)
        .env("ENVSHIM_POLICY", &policy)
        .expect_success();
    assert_eq!(w.runs(), 2, "the vfork child compiled");
    assert_eq!(
        out.stdout_str(),
        "child: A .\nhandler in the vfork child: 0, in the parent: 1\n",
        "SIGCHLD: only the parent's own child, in the parent"
    );
}

/// A thread forks while another one is finishing the deferred check (a compile
/// slowed to half a second): the child does not inherit that half-done state, it
/// finishes the check itself, and its exec has the changed import in force.
#[test]
fn a_fork_during_the_first_exec_of_another_thread_checks_again() {
    let (w, policy) = stale_by_its_import("load_deferred_fork_busy");
    let slow = w.sb.write_executable(
        "envwrap-slow",
        format!(
            "#!/bin/sh\nsleep 0.5\nexec {} \"$@\"\n",
            sh_quote(&w.counter.to_string_lossy())
        ),
    );
    let prog = compile_c_with(
        "load_fork_while_busy",
        r#"#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/wait.h>
extern char **environ;
static void *first_exec(void *unused) {
    (void)unused;
    char *argv[] = {"absent", NULL};
    execve("/nonexistent/absent", argv, environ);
    return NULL;
}
int main(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, first_exec, NULL) != 0) return 1;
    usleep(200000);
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        char *argv[] = {"sh", "-c", "echo child: ${MARK_A:+A} ${MARK_B:+B}.", NULL};
        execve("/bin/sh", argv, environ);
        _exit(127);
    }
    int st;
    if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
    pthread_join(t, NULL);
    return 0;
}
"#,
        &["-pthread"],
    );
    let out = w
        .shimmed(&prog)
        .env("ENVSHIM_POLICY", &policy)
        .env("ENVSHIM_ENVWRAP", &slow)
        .expect_success();
    assert_eq!(
        out.stdout_str(),
        "child: A .\n",
        "the fork child enforces the changed import"
    );
    assert!(messages(&out.stderr).is_empty(), "{}", out.stderr_str());
}

/// Self-scrub is decided at load from the policy file, which every start checks: a
/// policy edited to self-scrub a program, not yet compiled, is compiled when that
/// program starts, and the program starts scrubbed.
#[test]
fn a_policy_edited_to_self_scrub_a_program_applies_at_its_next_start() {
    let w = World::new("load_edit_self_scrub");
    let policy = w.sb.write("policy.toml", POLICY);
    assert_eq!(w.observe(Some(&policy)).0, InForce::TestPolicy);
    assert_eq!(w.runs(), 1);
    let built = compile_c(
        "load_scrubbed",
        "#include <stdio.h>\n#include <stdlib.h>\nint main(void){printf(\"GH_TOKEN %s\\n\",getenv(\"GH_TOKEN\")?\"set\":\"unset\");return 0;}\n",
    );
    // Under the name the policy gives it (compile_c adds a hash to the file name).
    let prog = w.sb.join("load_scrubbed");
    std::fs::copy(&built, &prog).unwrap();
    let token = w.sb.secrets().value("GH_TOKEN").to_string();
    let run = || {
        w.shimmed(&prog)
            .env("ENVSHIM_POLICY", &policy)
            .env("GH_TOKEN", &token)
            .expect_success()
            .stdout_str()
            .to_string()
    };
    assert_eq!(run(), "GH_TOKEN set\n", "no self-scrub yet");
    w.sb.write(
        "policy.toml",
        format!("{POLICY}[program.load_scrubbed]\nself_scrub = true\n"),
    );
    assert_eq!(
        run(),
        "GH_TOKEN unset\n",
        "the edited policy's self-scrub applies at the next start"
    );
    assert_eq!(w.runs(), 2);
}

#[test]
fn malformed_policy_gives_the_floor_and_one_warning() {
    let w = World::new("load_malformed");
    let policy = w.sb.write("bad.toml", MALFORMED);
    let at = format!("{}:2:1: ", policy.display());

    // The compiling process: the compile's line is the one warning, in the
    // shim's voice (the user ran the shim).
    let (state, msgs) = w.observe(Some(&policy));
    assert_eq!(state, InForce::Floor);
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert!(msgs[0].starts_with(&format!("envshim: {at}")), "{msgs:?}");
    assert!(
        msgs[0].ends_with("; using the fail-closed floor"),
        "{msgs:?}"
    );
    assert!(msgs[0].contains("unknown field `bas`"), "{msgs:?}");
    assert_eq!(w.runs(), 1);

    // Later processes read the failure marker: the floor, no compile, and the
    // warning once, at the first exec.
    let (state, msgs) = w.observe(Some(&policy));
    assert_eq!(state, InForce::Floor);
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert!(msgs[0].starts_with(&format!("envshim: {at}")), "{msgs:?}");
    assert!(msgs[0].ends_with("using the fail-closed floor"), "{msgs:?}");
    assert_eq!(w.runs(), 1, "the failure marker spares the compile");

    // A process that never spawns says nothing.
    let out = w
        .shimmed("/bin/true")
        .env("ENVSHIM_POLICY", &policy)
        .expect_success();
    assert!(messages(&out.stderr).is_empty(), "{}", out.stderr_str());
    assert_eq!(w.runs(), 1);

    // Fixed: the policy is in force again.
    w.sb.write("bad.toml", POLICY);
    let (state, msgs) = w.observe(Some(&policy));
    assert_eq!(state, InForce::TestPolicy);
    assert!(msgs.is_empty(), "{msgs:?}");
    assert_eq!(w.runs(), 2);
}

#[test]
fn missing_policy_gives_the_floor_with_a_warning() {
    let w = World::new("load_missing");
    let missing = w.sb.join("nope.toml");
    let (state, msgs) = w.observe(Some(&missing));
    assert_eq!(state, InForce::Floor);
    assert_eq!(
        msgs,
        [format!(
            "envshim: policy {} not found; using the fail-closed floor",
            missing.display()
        )]
    );
    assert_eq!(w.runs(), 0, "nothing to compile");
    assert!(
        !w.cache_home.join(".cache").exists(),
        "no cache for a missing policy"
    );
}

#[test]
fn policy_in_the_config_home_is_found() {
    let w = World::new("load_config_home");
    let policy = w.sb.write("config/envshim/policy.toml", POLICY);
    let mut c = w.shimmed("/bin/sh");
    c.args(["-c", "exec env"])
        .env_remove("ENVSHIM_POLICY")
        .env("XDG_CONFIG_HOME", w.sb.join("config"));
    let out = c.expect_success();
    assert!(!out.stdout_str().contains("MARK_A="));
    assert!(out.stdout_str().contains("MARK_B="));
    assert_eq!(w.runs(), 1);
    assert!(w.cache_of(&policy).is_file());

    // No config file (and no /etc/envshim/policy.toml): the built-in default,
    // silently, with nothing compiled.
    if !Path::new("/etc/envshim/policy.toml").exists() {
        let mut c = w.shimmed("/bin/sh");
        c.args(["-c", "exec env"])
            .env_remove("ENVSHIM_POLICY")
            .env("XDG_CONFIG_HOME", w.sb.join("empty"));
        let out = c.expect_success();
        assert!(out.stdout_str().contains("MARK_A="));
        assert!(messages(&out.stderr).is_empty(), "{}", out.stderr_str());
        assert_eq!(w.runs(), 1);
    }
}

/// A name at the lookup path that cannot be used (a dangling symlink, a symlink
/// loop), or on the way to it (`$XDG_CONFIG_HOME/envshim` a dangling symlink, a
/// symlink to a file, or a file; `$XDG_CONFIG_HOME` itself a dangling symlink,
/// as with dotfiles that are not mounted), is not "no policy": the shim gives the
/// floor with a warning and envwrap exits 125, where both once went on to the
/// laxer built-in default without a word.
#[test]
fn a_config_home_policy_that_cannot_be_read_gives_the_floor() {
    let w = World::new("load_config_home_unusable");
    fn link(target: &Path, at: &Path) {
        std::os::unix::fs::symlink(target, at).unwrap();
    }
    type Setup = fn(&Path);
    let setups: [(&str, Setup); 6] = [
        ("a dangling policy.toml", |home| {
            std::fs::create_dir_all(home.join("envshim")).unwrap();
            link(
                &home.join("envshim/gone.toml"),
                &home.join("envshim/policy.toml"),
            );
        }),
        ("a looping policy.toml", |home| {
            std::fs::create_dir_all(home.join("envshim")).unwrap();
            let at = home.join("envshim/policy.toml");
            link(&at, &at);
        }),
        ("a dangling envshim directory", |home| {
            std::fs::create_dir_all(home).unwrap();
            link(&home.join("gone"), &home.join("envshim"));
        }),
        ("an envshim directory linked to a file", |home| {
            std::fs::create_dir_all(home).unwrap();
            std::fs::write(home.join("file"), "").unwrap();
            link(&home.join("file"), &home.join("envshim"));
        }),
        ("a file for the envshim directory", |home| {
            std::fs::create_dir_all(home).unwrap();
            std::fs::write(home.join("envshim"), "").unwrap();
        }),
        ("a dangling configuration directory", |home| {
            link(&home.with_extension("gone"), home);
        }),
    ];
    for (n, (what, setup)) in setups.into_iter().enumerate() {
        let home = w.sb.join(format!("config{n}"));
        setup(&home);
        let mut c = w.shimmed("/bin/sh");
        c.args(["-c", "exec env"])
            .env_remove("ENVSHIM_POLICY")
            .env("XDG_CONFIG_HOME", &home);
        let out = c.expect_success();
        assert!(
            !out.stdout_str().contains("MARK_A=") && !out.stdout_str().contains("MARK_B="),
            "{what}: the floor is in force: {}",
            out.report()
        );
        assert!(
            out.stderr_str().contains("using the fail-closed floor"),
            "{what}: {}",
            out.report()
        );
        let out =
            w.sb.cmd(envwrap_bin())
                .args(["--", "true"])
                .env_remove("ENVSHIM_POLICY")
                .env("XDG_CONFIG_HOME", &home)
                .run();
        assert_eq!(out.status.code(), Some(125), "{what}: {}", out.report());
    }
    // Nothing there at all goes on, as before: no configuration directory, or
    // one without envshim's.
    for home in [w.sb.join("absent"), w.sb.mkdir("plain")] {
        let mut c = w.shimmed("/bin/sh");
        c.args(["-c", "exec env"])
            .env_remove("ENVSHIM_POLICY")
            .env("XDG_CONFIG_HOME", &home);
        let out = c.expect_success();
        assert!(out.stdout_str().contains("MARK_A="), "{}", out.report());
        assert!(messages(&out.stderr).is_empty(), "{}", out.stderr_str());
    }
}

/// A relative `XDG_CONFIG_HOME` (or `HOME`) does not name the user's policy: it
/// would be found relative to the working directory, so a `cd` into a directory
/// that holds `.config/envshim/policy.toml` (a cloned repository) would choose
/// the policy of the processes started there. It counts as unset, as the XDG
/// specification says.
#[test]
fn a_relative_config_home_never_finds_a_policy_after_cd() {
    let w = World::new("load_relative_xdg");
    w.sb.mkdir("repo/.config/envshim");
    w.sb.write(
        "repo/.config/envshim/policy.toml",
        "version = 1\nbase = \"all\"\nstrip = [\"MARK_B\"]\n",
    );
    let out = w
        .shimmed("/bin/sh")
        .args(["-c", "cd repo && exec sh -c 'exec env'"])
        .env_remove("ENVSHIM_POLICY")
        .env("XDG_CONFIG_HOME", ".config")
        .expect_success();
    assert!(
        out.stdout_str().contains("MARK_B=b"),
        "the repository's policy was loaded: {}",
        out.report()
    );
}

/// A compile that fails without a word (an `ENVSHIM_ENVWRAP` that exits 3; only
/// envwrap's own exit 125 comes with its message) gives the floor with the
/// shim's own warning, never silently.
#[test]
fn a_compile_that_fails_without_a_word_is_said() {
    let w = World::new("load_silent_compile_failure");
    let policy = w.sb.write("policy.toml", POLICY);
    let fail = w.sb.write_executable("fail-envwrap", "#!/bin/sh\nexit 3\n");
    let out = w
        .shimmed("/bin/sh")
        .args(["-c", "exec env"])
        .env("ENVSHIM_POLICY", &policy)
        .env("ENVSHIM_ENVWRAP", &fail)
        .expect_success();
    let env = out.stdout_str();
    assert!(
        !env.contains("MARK_A=") && !env.contains("MARK_B="),
        "the floor is in force: {}",
        out.report()
    );
    assert!(
        out.stderr_str()
            .contains("no compiled cache was written); using the fail-closed floor"),
        "{}",
        out.report()
    );
}

/// A cache holding a weaker policy, compiled for the very same path (so it is
/// "fresh"): only the trust check stands between it and every process.
fn plant_weak_cache(w: &World, policy: &Path) -> PathBuf {
    let weak = envpolicy::load::compile_text("version = 1\nbase = \"all\"\n", policy).unwrap();
    let cache = w.cache_of(policy);
    envpolicy::cache::store(&weak, &cache).unwrap();
    cache
}

#[test]
fn group_or_world_writable_cache_is_refused() {
    let w = World::new("load_writable_cache");
    let policy = w.sb.write("policy.toml", POLICY);

    // Control: owned by us and 0600, the planted cache is used (it is fresh).
    let cache = plant_weak_cache(&w, &policy);
    assert_eq!(w.observe(Some(&policy)).0, InForce::Default);
    assert_eq!(w.runs(), 0);

    // World-writable: refused and compiled again; the new file is owner-only.
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert_eq!(w.observe(Some(&policy)).0, InForce::TestPolicy);
    assert_eq!(w.runs(), 1);
    assert_eq!(std::fs::metadata(&cache).unwrap().mode() & 0o777, 0o600);

    // Group-writable, the same.
    let cache = plant_weak_cache(&w, &policy);
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o620)).unwrap();
    assert_eq!(w.observe(Some(&policy)).0, InForce::TestPolicy);
    assert_eq!(w.runs(), 2);
}

#[test]
fn cache_owned_by_another_user_is_refused() {
    let w = World::new("load_other_owner");
    if envpolicy::cache::current_uid() != 0 {
        eprintln!("skipped: chown to another user needs root");
        return;
    }
    let policy = w.sb.write("policy.toml", POLICY);
    let cache = plant_weak_cache(&w, &policy);
    std::os::unix::fs::chown(&cache, Some(65534), Some(65534)).unwrap();
    assert_eq!(w.observe(Some(&policy)).0, InForce::TestPolicy);
    assert_eq!(w.runs(), 1, "compiled again, replacing the file");
    assert_eq!(std::fs::metadata(&cache).unwrap().uid(), 0);
}

#[test]
fn untrusted_cache_directory_gives_the_floor() {
    let w = World::new("load_open_dir");
    let policy = w.sb.write("policy.toml", POLICY);
    let dir = w.cache_dir();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (state, msgs) = w.observe(Some(&policy));
    assert_eq!(state, InForce::Floor);
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert!(
        msgs[0].starts_with(&format!(
            "envshim: cache directory {} is not trusted (writable by group or others)",
            dir.display()
        )),
        "{msgs:?}"
    );
    assert_eq!(
        w.runs(),
        0,
        "nothing is compiled into a directory we do not trust"
    );

    // `envwrap compile` refuses to write there too.
    let out =
        w.sb.cmd(envwrap_bin())
            .args(["compile", "--output"])
            .arg(dir.join("x.bin"))
            .arg(&policy)
            .expect_exit(125);
    assert!(
        out.stderr_str()
            .contains("is not trusted: writable by group or others"),
        "{}",
        out.stderr_str()
    );
}

#[test]
fn no_envwrap_gives_the_floor_with_a_warning() {
    let w = World::new("load_no_envwrap");
    let policy = w.sb.write("policy.toml", POLICY);
    let mut c = w.shimmed("/bin/sh");
    c.args(["-c", "exec env"])
        .env("ENVSHIM_POLICY", &policy)
        .env("ENVSHIM_ENVWRAP", "/nonexistent/envwrap");
    let out = c.expect_success();
    assert!(
        !out.stdout_str().contains("MARK_B="),
        "the floor is in force"
    );
    assert!(out.stdout_str().contains("PATH="));
    let msgs = messages(&out.stderr);
    assert_eq!(
        msgs,
        [format!(
            "envshim: cannot run /nonexistent/envwrap to compile policy {}: not found; using the fail-closed floor",
            policy.display()
        )]
    );
}

#[test]
fn envwrap_compile_command() {
    let sb = Sandbox::new("envwrap_compile");
    let policy = sb.write("policy.toml", POLICY);
    let out_file = sb.join("out/compiled.bin");
    sb.cmd(envwrap_bin())
        .args(["compile", "--output"])
        .arg(&out_file)
        .arg("policy.toml")
        .expect_success();
    let bytes = std::fs::read(&out_file).unwrap();
    assert_eq!(envpolicy::cache::check_fresh(&bytes, &policy), Ok(None));

    // Default output: the cache path, which it names.
    let home = sb.join("cache-home");
    let said = sb
        .cmd(envwrap_bin())
        .args(["compile"])
        .arg(&policy)
        .env("ENVSHIM_CACHE_DIR", &home)
        .expect_success();
    let cache = envpolicy::cache::cache_path(
        &policy,
        |k| (k == "ENVSHIM_CACHE_DIR").then(|| home.clone().into_os_string()),
        envpolicy::cache::current_uid(),
    );
    assert!(cache.is_file(), "{}", cache.display());
    assert_eq!(
        said.stdout_str(),
        format!("compiled {} into {}\n", policy.display(), cache.display())
    );
    let help = sb
        .cmd(envwrap_bin())
        .args(["compile", "--help"])
        .expect_success();
    assert!(
        help.stdout_str()
            .starts_with("Usage: envwrap compile [--output FILE] POLICY | --managed\n\n"),
        "{}",
        help.report()
    );
    assert!(
        help.stdout_str().contains("Exit status:"),
        "{}",
        help.report()
    );

    // A malformed policy: FILE:LINE:COL on stderr, exit 125, a failure marker.
    let bad = sb.write("bad.toml", MALFORMED);
    let out = sb
        .cmd(envwrap_bin())
        .args(["compile", "--output"])
        .arg(&out_file)
        .arg(&bad)
        .expect_exit(125);
    let err = out.stderr_str();
    assert!(
        err.starts_with(&format!(
            "envwrap: {}:2:1: unknown field `bas`",
            bad.display()
        )),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    let bytes = std::fs::read(&out_file).unwrap();
    let warning = envpolicy::cache::check_fresh(&bytes, &bad)
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(warning).contains("bad.toml:2:1:"));

    // Usage errors.
    sb.cmd(envwrap_bin()).args(["compile"]).expect_exit(125);
    sb.cmd(envwrap_bin())
        .args(["compile", "--bogus", "x"])
        .expect_exit(125);
}

/// A C program that never spawns, under the shim with a fresh cache: quiet, and
/// its own environment untouched.
#[test]
fn c_program_under_the_shim() {
    let w = World::new("load_c_program");
    let policy = w.sb.write("policy.toml", POLICY);
    let bin = compile_c(
        "load_getenv",
        "#include <stdio.h>\n#include <stdlib.h>\nint main(void){const char*a=getenv(\"MARK_A\");printf(\"%s\\n\",a?a:\"(unset)\");return 0;}\n",
    );
    let out = w
        .shimmed(&bin)
        .env("ENVSHIM_POLICY", &policy)
        .expect_success();
    assert_eq!(
        out.stdout_str(),
        "a\n",
        "the shim does not change its host's environment"
    );
    assert!(out.stderr.is_empty(), "{}", out.stderr_str());
    assert_eq!(w.runs(), 1);
    let out = w
        .shimmed(&bin)
        .env("ENVSHIM_POLICY", &policy)
        .expect_success();
    assert!(out.stderr.is_empty());
    assert_eq!(w.runs(), 1);
}

/// A policy file that cannot be read as one: over 1 MiB, a symbolic link loop, or a
/// directory. Under the shim: the fail-closed floor and one warning naming the file
/// and the reason, in the process that compiles and in every later one; nothing on
/// stderr besides. Never the built-in default, which a missing file would give.
#[track_caller]
fn unreadable_policy_gives_the_floor(w: &World, policy: &Path, reason: &str) {
    for round in ["the compiling process", "a later process"] {
        let mut c = w.shimmed("/bin/sh");
        c.args(["-c", "exec env"])
            .env("ENVSHIM_POLICY", policy)
            .env_secrets();
        let out = c.expect_success();
        let stdout = out.stdout_str();
        let has = |n: &str| stdout.lines().any(|l| l.starts_with(&format!("{n}=")));
        assert!(
            !has("MARK_A") && !has("MARK_B") && has("PATH"),
            "{round}: the floor is not in force\n{}",
            out.report()
        );
        for n in SECRET_NAMES {
            assert!(!has(n), "{round}: {n} reached the child");
        }
        let msgs = messages(&out.stderr);
        assert_eq!(msgs.len(), 1, "{round}: one warning\n{}", out.report());
        assert_eq!(
            out.stderr_str().lines().count(),
            1,
            "{round}: nothing else on stderr\n{}",
            out.report()
        );
        let want = format!("{}: {reason}", policy.display());
        assert!(
            msgs[0].contains(&want),
            "{round}: the warning names the file and says {reason:?}: {msgs:?}"
        );
    }
}

#[test]
fn huge_policy_gives_the_floor_and_one_warning() {
    let w = World::new("load_huge");
    // Valid TOML throughout: only the size is wrong.
    let mut text = String::from(POLICY);
    while text.len() <= 1 << 20 {
        text.push_str("# padding padding padding padding padding padding padding\n");
    }
    let policy = w.sb.write("huge.toml", text);
    unreadable_policy_gives_the_floor(&w, &policy, "policy file is larger than 1048576 bytes");
}

#[test]
fn symlink_loop_policy_gives_the_floor_and_one_warning() {
    let w = World::new("load_symlink_loop");
    let a = w.sb.join("a.toml");
    let b = w.sb.join("b.toml");
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    unreadable_policy_gives_the_floor(
        &w,
        &a,
        "cannot read policy: Too many levels of symbolic links",
    );
}

#[test]
fn directory_as_policy_gives_the_floor_and_one_warning() {
    let w = World::new("load_directory");
    let dir = w.sb.mkdir("policy.toml");
    unreadable_policy_gives_the_floor(&w, &dir, "cannot read policy: it is a directory");
}

/// A process that keeps running after its policy file is deleted keeps enforcing
/// the policy it loaded (the mapped compiled cache); a process started afterwards
/// gets the built-in default with a warning.
///
/// The long-running process is a bash under the shim that blocks in the builtin
/// `read` on a FIFO (so it spawns nothing while it waits), then execs `env`.
#[test]
fn policy_deleted_while_a_process_runs_stays_in_force_there() {
    let w = World::new("load_deleted_while_running");
    let policy = w.sb.write("policy.toml", POLICY);
    let fifo = w.sb.mkfifo("go");
    let started = w.sb.join("started");
    // `.log`: the secret sweep collects it (tests/src/collect.rs).
    let out_file = w.sb.join("env.log");
    let script = format!(
        ": > {started}; read -r line < {fifo}; exec env > {out} 2>&1",
        started = sh_quote(&started.to_string_lossy()),
        fifo = sh_quote(&fifo.to_string_lossy()),
        out = sh_quote(&out_file.to_string_lossy()),
    );
    let mut c = w.shimmed("/bin/bash");
    c.args(["-c", &script])
        .env("ENVSHIM_POLICY", &policy)
        .env_secrets();
    let mut bg = c.spawn_background();
    assert!(
        w.sb.wait_for(|| started.exists(), Duration::from_secs(10)),
        "bash did not start: {}",
        bg.description()
    );
    assert_eq!(w.runs(), 1, "bash compiled the policy at its start");
    let cache = w.cache_of(&policy);
    assert!(cache.is_file());

    // The file goes, and its compiled cache with it: bash has the cache mapped.
    std::fs::remove_file(&policy).unwrap();
    std::fs::remove_file(&cache).unwrap();
    // A process started now does not find the file.
    let (state, msgs) = w.observe(Some(&policy));
    assert_eq!(state, InForce::Floor, "a new process after the deletion");
    assert_eq!(
        msgs,
        [format!(
            "envshim: policy {} not found; using the fail-closed floor",
            policy.display()
        )]
    );

    // Let bash go on: its exec is judged by the policy it loaded.
    // Opened without blocking: if bash is gone (or not yet reading), retry, and
    // give up after a while instead of hanging.
    let opened = (0..1000).find_map(|_| {
        use std::os::unix::fs::OpenOptionsExt;
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
        {
            Ok(f) => Some(f),
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                std::thread::sleep(Duration::from_millis(10));
                None
            }
            Err(e) => panic!("open {}: {e}", fifo.display()),
        }
    });
    let mut writer =
        opened.unwrap_or_else(|| panic!("bash never read the FIFO: {}", bg.description()));
    std::io::Write::write_all(&mut writer, b"go\n").unwrap();
    drop(writer);
    let status = bg
        .wait_timeout(Duration::from_secs(20))
        .unwrap_or_else(|| panic!("bash did not finish: {}", bg.description()));
    assert!(status.success(), "{status:?}");
    let output = std::fs::read(&out_file).unwrap();
    w.sb.secrets()
        .assert_absent("the env output of the long-running process", &output);
    let text = String::from_utf8_lossy(&output);
    let has = |n: &str| text.lines().any(|l| l.starts_with(&format!("{n}=")));
    assert!(
        !has("MARK_A") && has("MARK_B"),
        "the running process did not keep the policy it loaded (MARK_A {}, MARK_B {})",
        has("MARK_A"),
        has("MARK_B")
    );
    for n in SECRET_NAMES {
        assert!(!has(n), "{n} reached the child");
    }
    // bash's own shim says nothing (it loaded its policy before the deletion); the
    // child `env` loads the shim afresh, finds no file, and, never spawning, is quiet.
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with("envshim: ") && !is_withheld_line(l)),
        "unexpected shim lines: {}",
        w.sb.secrets().redact(&output)
    );
    assert_eq!(w.runs(), 1, "nothing was compiled again");
}

/// A relative `ENVSHIM_POLICY` stays the file the root resolved: after a `cd`
/// into a directory that holds a file of the same name (a cloned repository's),
/// the subtree still runs under the first one, and its children's
/// `ENVSHIM_POLICY` is the absolute path.
#[test]
fn a_relative_policy_path_stays_the_same_file_after_cd() {
    let w = World::new("load_relative_sticky");
    let policy = w.sb.write("policy.toml", POLICY);
    w.sb.mkdir("repo");
    w.sb.write(
        "repo/policy.toml",
        "version = 1\nbase = \"all\"\nstrip = [\"MARK_B\"]\n",
    );
    let mut c = w.shimmed("/bin/sh");
    c.args(["-c", "cd repo && exec env"])
        .env("ENVSHIM_POLICY", "policy.toml");
    let out = c.expect_success();
    let env = out.stdout_str();
    assert!(
        !env.contains("MARK_A="),
        "the first policy strips MARK_A: {env}"
    );
    assert!(
        env.contains("MARK_B=b"),
        "the repository's policy was loaded: {env}"
    );
    let want = format!("ENVSHIM_POLICY={}", policy.display());
    assert!(env.lines().any(|l| l == want), "no {want}: {env}");
}

/// `~/` in an import needs an absolute `HOME`: with `HOME=.` it would name the
/// file in whatever directory a compile ran, and be checked against the
/// directory each process is in (a later compile after a `cd` would strip
/// another file's names). Both front ends refuse it: the floor under the shim,
/// exit 125 from envwrap, each with the reason.
#[test]
fn a_relative_home_never_resolves_an_import() {
    let w = World::new("load_relative_home");
    let policy = w.sb.write(
        "policy.toml",
        "version = 1\nbase = \"all\"\n[[import.env_file]]\npath = \"~/names.env\"\n",
    );
    w.sb.write("names.env", "MARK_A=\n");
    let out = w
        .shimmed("/bin/sh")
        .args(["-c", "exec env"])
        .current_dir(w.sb.path())
        .env("HOME", ".")
        .env("ENVSHIM_POLICY", &policy)
        .expect_success();
    let env = out.stdout_str();
    assert!(
        !env.contains("MARK_A=") && !env.contains("MARK_B="),
        "the floor is in force: {}",
        out.report()
    );
    assert!(
        out.stderr_str()
            .contains("needs HOME to be an absolute path"),
        "{}",
        out.report()
    );
    let out =
        w.sb.cmd(envwrap_bin())
            .arg("--policy")
            .arg(&policy)
            .args(["--", "true"])
            .current_dir(w.sb.path())
            .env("HOME", ".")
            .run();
    assert_eq!(out.status.code(), Some(125), "{}", out.report());
    assert!(
        out.stderr_str()
            .contains("needs HOME to be an absolute path"),
        "{}",
        out.report()
    );
}

/// A policy found by lookup (`$XDG_CONFIG_HOME/envshim/policy.toml`) is the
/// subtree's: a child started with another `HOME` and no `XDG_CONFIG_HOME` still
/// runs under it, not under the built-in default.
#[test]
fn a_policy_found_by_lookup_stays_for_a_child_with_another_home() {
    let w = World::new("load_lookup_sticky");
    let config = w.sb.mkdir("config");
    w.sb.mkdir("config/envshim");
    let policy = w.sb.write("config/envshim/policy.toml", POLICY);
    let elsewhere = w.sb.mkdir("elsewhere");
    let mut c = w.shimmed("/bin/sh");
    c.args([
        "-c",
        "exec env -u XDG_CONFIG_HOME HOME=\"$ELSEWHERE\" sh -c 'exec env'",
    ])
    .env("XDG_CONFIG_HOME", &config)
    .env("ELSEWHERE", &elsewhere);
    let out = c.expect_success();
    let env = out.stdout_str();
    assert!(
        !env.contains("MARK_A="),
        "the looked-up policy strips MARK_A: {env}"
    );
    assert!(env.contains("MARK_B=b"), "{env}");
    let want = format!("ENVSHIM_POLICY={}", policy.display());
    assert!(env.lines().any(|l| l == want), "no {want}: {env}");
}

/// A broken policy warns once per process: a shell's forked commands share their
/// shell's warning (the `fork` hook prints it in the parent), and only a process
/// that loads the shim anew (`sh -c`) says it again.
#[test]
fn a_broken_policy_warns_once_per_process_not_once_per_command() {
    let w = World::new("load_warn_once");
    let policy = w.sb.write("bad.toml", MALFORMED);
    // The first run compiles and leaves the failure marker.
    w.observe(Some(&policy));
    let mut c = w.shimmed("/bin/bash");
    c.args([
        "-c",
        "/bin/true; /bin/true; /bin/true; sh -c /bin/true; /bin/true",
    ])
    .env("ENVSHIM_POLICY", &policy);
    let out = c.expect_success();
    let msgs = messages(&out.stderr);
    assert_eq!(msgs.len(), 2, "bash once, and sh once: {msgs:?}");
}

/// `envwrap --preload --policy P`: envwrap compiles P and says its warnings; the
/// shim in the child finds the cache envwrap wrote for it and says nothing more,
/// instead of compiling and warning a second time.
#[test]
fn envwrap_with_the_shim_warns_once_about_a_missing_optional_import() {
    let w = World::new("load_envwrap_preload_once");
    let policy = w.sb.write(
        "opt.toml",
        "version = 1\n[[import.env_file]]\npath = \"missing.env\"\n",
    );
    let out =
        w.sb.cmd(envwrap_bin())
            .args(["--preload", "--policy"])
            .arg(&policy)
            .args(["--", "/bin/sh", "-c", "exec /bin/true"])
            .env("HOME", &w.cache_home)
            .env("ENVSHIM_CACHE_DIR", w.cache_dir())
            .env("ENVSHIM_ENVWRAP", &w.counter)
            .expect_success();
    let notes = out
        .stderr_str()
        .lines()
        .filter(|l| l.contains("missing.env not read"))
        .count();
    assert_eq!(notes, 1, "{}", out.report());
    assert_eq!(w.runs(), 0, "the child compiled the policy again");
}
