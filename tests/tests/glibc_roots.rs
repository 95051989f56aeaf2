//! The shim built here, on other C libraries: inside Debian roots that
//! ci/debian-roots builds, Debian 11 "bullseye" (glibc 2.31, the oldest glibc
//! envshim supports) and Debian 13 "trixie" (glibc 2.41, which has glibc 2.39's
//! `pidfd_spawn`). Each test copies the host's libenvshim.so (and the static
//! envwrap) into the root, runs a scenario there with `chroot` in a private mount
//! namespace (its own /proc, the host's /dev), and checks that the seeded
//! credentials (`GH_TOKEN=ghp_...` among them) do not reach the child while a plain
//! variable does. The C programs are compiled inside the root, by its own gcc,
//! against its own glibc.
//!
//! A root that is not there (or a test run that is not root) skips the test with a
//! loud line on stderr, outside CI; under CI (`CI` set, and not `false` or `0`) it
//! fails: ci/test builds the roots before it runs the tests.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use envshim_e2e::*;

pub(crate) const BULLSEYE: &str = "bullseye";
pub(crate) const TRIXIE: &str = "trixie";

/// The plain variable every child must get.
pub(crate) const PLAIN: &str = "ROOTS_PLAIN_VAR=kept-as-is";

const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

pub(crate) fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// The root of `suite`, or `None` (after saying so, loudly) when there is none or
/// this process cannot chroot into it. Under CI a missing root fails the test.
pub(crate) fn root_of(suite: &str, test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("ENVSHIM_ROOTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/envshim-roots"));
    let root = dir.join(suite);
    // SAFETY: geteuid has no preconditions.
    let is_root = unsafe { libc::geteuid() } == 0;
    let why = if !root.join(".envshim-root").is_file() {
        format!(
            "there is no Debian {suite} root at {} (build it with ci/debian-roots, as root)",
            root.display()
        )
    } else if !is_root {
        "chroot needs root".to_string()
    } else {
        return Some(root);
    };
    if under_ci() {
        panic!("{test}: {why}; CI is set, so this is a failure, not a skip");
    }
    eprintln!(
        "!!!!! SKIPPED {test}: {why}. The shim is NOT tested on {suite}'s glibc in this run. !!!!!"
    );
    None
}

static STAGES: AtomicUsize = AtomicUsize::new(0);

/// A directory inside a root, `/envshim-e2e/PID-N` as the root sees it (root's
/// own, written by no one else: a secret's program must be), with the host's
/// shim in it; removed on drop.
struct Stage {
    root: PathBuf,
    /// The directory as the host sees it.
    host: PathBuf,
    /// The directory as the root sees it.
    inside: String,
}

impl Stage {
    fn new(root: &Path) -> Stage {
        let n = STAGES.fetch_add(1, Ordering::Relaxed);
        let inside = format!("/envshim-e2e/{}-{n}", std::process::id());
        let host = root.join(inside.trim_start_matches('/'));
        let _ = std::fs::remove_dir_all(&host);
        std::fs::create_dir_all(&host).expect("create the stage in the root");
        for dir in [
            host.as_path(),
            host.parent().expect("the stage has a parent"),
        ] {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
                .expect("chmod the stage");
        }
        std::fs::copy(shim_so(), host.join("libenvshim.so")).expect("copy the shim into the root");
        Stage {
            root: root.to_path_buf(),
            host,
            inside,
        }
    }

    fn write(&self, name: &str, contents: &str) {
        std::fs::write(self.host.join(name), contents).expect("write into the stage");
    }

    /// Runs `script` with `sh` inside the root, in the stage directory, with the
    /// sandbox's seeded credentials and the plain variable, and `$SHIM` naming
    /// the shim there. Nothing runs under the shim but what the script starts
    /// with `LD_PRELOAD=$SHIM`: that program is the first process, which holds
    /// the credentials, as a user's shell would, and the shim polices what it
    /// starts.
    fn run(&self, sb: &Sandbox, script: &str) -> Outcome {
        self.write(
            "script.sh",
            &format!("SHIM={}/libenvshim.so\n{script}", self.inside),
        );
        let inner = format!(
            "mount -t proc proc {root}/proc && mount --rbind /dev {root}/dev && \
             exec chroot {root} /bin/sh -c 'cd {stage} && exec /bin/sh ./script.sh'",
            root = sh_quote(&self.root.to_string_lossy()),
            stage = self.inside,
        );
        let (name, value) = PLAIN.split_once('=').expect("NAME=VALUE");
        let mut c = sb.cmd("unshare");
        c.args(["--mount", "--propagation", "private", "/bin/sh", "-c"])
            .arg(inner)
            .env_clear()
            .env("PATH", PATH)
            .env("HOME", &self.inside)
            .env("LANG", "C")
            .env("TMPDIR", &self.inside)
            .env(name, value)
            .env_secrets()
            .timeout(Duration::from_secs(120));
        c.run()
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.host);
    }
}

/// Checks a scenario's output: every section (`== NAME` then a child's
/// environment) holds the plain variable and none of the seeded names; the
/// seeded values are absent from every output (the command checks that itself).
pub(crate) fn expect_sections(o: &Outcome, sections: &[&str]) {
    if !o.status.success() {
        o.fail("the scenario failed in the root");
    }
    let out = o.stdout_str();
    let mut parts = out.split("== ").skip(1);
    for want in sections {
        let part = parts
            .next()
            .unwrap_or_else(|| o.fail(&format!("no section {want:?}")));
        let (title, body) = part.split_once('\n').unwrap_or((part, ""));
        if title.trim() != *want {
            o.fail(&format!("section {want:?} expected, found {title:?}"));
        }
        if !body.lines().any(|l| l == PLAIN) {
            o.fail(&format!("{want}: the child did not get the plain variable"));
        }
        for name in SECRET_NAMES {
            if body.lines().any(|l| l.starts_with(&format!("{name}="))) {
                o.fail(&format!("{want}: the child got {name}"));
            }
        }
    }
    if parts.next().is_some() {
        o.fail("more sections than expected");
    }
}

/// Compiles `source` with the root's gcc (in the script), then runs it once per
/// mode; each mode's run prints its section.
fn c_scenario(suite: &str, test: &str, source: &str, flags: &str, modes: &[&str]) {
    let Some(root) = root_of(suite, test) else {
        return;
    };
    let sb = Sandbox::new(test);
    let stage = Stage::new(&root);
    stage.write("prog.c", source);
    // The root's gcc, against the root's glibc.
    let mut script = format!("set -e\ngcc -O1 -o prog prog.c {flags}\n");
    for m in modes {
        script.push_str(&format!("echo '== {m}'\nLD_PRELOAD=$SHIM ./prog {m}\n"));
    }
    let o = stage.run(&sb, &script);
    expect_sections(&o, modes);
}

/// What each C program's child runs: `env`, which prints its environment.
pub(crate) const EXEC_C: &str = r#"
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
extern char **environ;
int main(int argc, char **argv) {
    char *args[] = {"env", NULL};
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (strcmp(argv[1], "execve") == 0) execve("/usr/bin/env", args, environ);
        else execvp("env", args);
        perror("exec");
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
    return 0;
}
"#;

pub(crate) const SPAWN_C: &str = r#"
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
extern char **environ;
int main(int argc, char **argv) {
    char *args[] = {"env", NULL};
    pid_t pid;
    fflush(stdout);
    int r = strcmp(argv[1], "posix_spawn") == 0
        ? posix_spawn(&pid, "/usr/bin/env", NULL, NULL, args, environ)
        : posix_spawnp(&pid, "env", NULL, NULL, args, environ);
    if (r != 0) { fprintf(stderr, "%s: %s\n", argv[1], strerror(r)); return 1; }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
    return 0;
}
"#;

/// glibc 2.39's pidfd_spawn and pidfd_spawnp, called directly; the child is
/// waited for through its pidfd.
const PIDFD_SPAWN_C: &str = r#"
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
extern char **environ;
int main(int argc, char **argv) {
    char *args[] = {"env", NULL};
    int pidfd = -1;
    fflush(stdout);
    int r = strcmp(argv[1], "pidfd_spawn") == 0
        ? pidfd_spawn(&pidfd, "/usr/bin/env", NULL, NULL, args, environ)
        : pidfd_spawnp(&pidfd, "env", NULL, NULL, args, environ);
    if (r != 0) { fprintf(stderr, "%s: %s\n", argv[1], strerror(r)); return 1; }
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PIDFD, pidfd, &si, WEXITED) != 0) { perror("waitid"); return 1; }
    return si.si_code == CLD_EXITED && si.si_status == 0 ? 0 : 1;
}
"#;

/// pidfd_spawn and pidfd_spawnp asked to pass the parent's own `GH_TOKEN` in
/// argv: the policy refuses, the error number is returned (EPERM), as
/// posix_spawn's is, and no child is made.
const PIDFD_REFUSED_C: &str = r#"
#define _GNU_SOURCE
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
extern char **environ;
int main(void) {
    char *token = getenv("GH_TOKEN");
    if (!token) { printf("no GH_TOKEN to pass\n"); return 1; }
    char *args[] = {"env", token, NULL};
    int pidfd = -1;
    int r = pidfd_spawn(&pidfd, "/usr/bin/env", NULL, NULL, args, environ);
    printf("pidfd_spawn: %s%s\n", r == EPERM ? "EPERM" : "not EPERM", pidfd == -1 ? "" : ", a pidfd");
    int r2 = pidfd_spawnp(&pidfd, "env", NULL, NULL, args, environ);
    printf("pidfd_spawnp: %s%s\n", r2 == EPERM ? "EPERM" : "not EPERM", pidfd == -1 ? "" : ", a pidfd");
    return r == EPERM && r2 == EPERM && pidfd == -1 ? 0 : 1;
}
"#;

pub(crate) const SYSTEM_POPEN_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    fflush(stdout);
    if (strcmp(argv[1], "system") == 0) return system("env") == 0 ? 0 : 1;
    FILE *f = popen("env", "r");
    if (!f) { perror("popen"); return 1; }
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, n, stdout);
    return pclose(f) == 0 ? 0 : 1;
}
"#;

/// A program linked against the root's glibc that looks `pidfd_spawn` up at run
/// time, as a program that probes for it does: before glibc 2.39 the only
/// definition is the shim's, which must answer ENOSYS and start nothing.
const PIDFD_PROBE_C: &str = r#"
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
extern char **environ;
typedef int (*spawn_fn)(int *, const char *, const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[], char *const[]);
int main(void) {
    const char *names[] = {"pidfd_spawn", "pidfd_spawnp"};
    for (int i = 0; i < 2; i++) {
        spawn_fn f = (spawn_fn)dlsym(RTLD_DEFAULT, names[i]);
        if (!f) { printf("%s: not found\n", names[i]); return 1; }
        char *args[] = {"env", NULL};
        int pidfd = -1;
        int r = f(&pidfd, i == 0 ? "/usr/bin/env" : "env", NULL, NULL, args, environ);
        printf("%s: %s\n", names[i], r == ENOSYS ? "ENOSYS" : "not ENOSYS");
        if (r != ENOSYS || pidfd != -1) return 1;
    }
    return 0;
}
"#;

macro_rules! in_both_roots {
    ($($name:ident => $body:expr;)*) => {
        mod bullseye {
            use super::*;
            $(#[test] fn $name() { ($body)(BULLSEYE, concat!("glibc_roots::bullseye::", stringify!($name))) })*
        }
        mod trixie {
            use super::*;
            $(#[test] fn $name() { ($body)(TRIXIE, concat!("glibc_roots::trixie::", stringify!($name))) })*
        }
    };
}

in_both_roots! {
    exec_family => |suite, test| c_scenario(suite, test, EXEC_C, "", &["execve", "execvp"]);
    posix_spawn => |suite, test| c_scenario(suite, test, SPAWN_C, "", &["posix_spawn", "posix_spawnp"]);
    system_and_popen => |suite, test| c_scenario(suite, test, SYSTEM_POPEN_C, "", &["system", "popen"]);
    bash_and_python3_children => bash_and_python3_in;
    a_tmux_pane => tmux_pane_in;
    static_envwrap => static_envwrap_in;
    the_shim_loads => shim_loads_in;
    a_secret_reaches_its_program_through_envwrap => secret_spawn_in;
}

#[test]
fn trixie_pidfd_spawn_called_directly() {
    c_scenario(
        TRIXIE,
        "glibc_roots::trixie_pidfd_spawn_called_directly",
        PIDFD_SPAWN_C,
        "",
        &["pidfd_spawn", "pidfd_spawnp"],
    );
}

#[test]
fn trixie_pidfd_spawn_refuses_a_token_in_argv() {
    let test = "glibc_roots::trixie_pidfd_spawn_refuses_a_token_in_argv";
    let Some(root) = root_of(TRIXIE, test) else {
        return;
    };
    let sb = Sandbox::new(test);
    let stage = Stage::new(&root);
    stage.write("prog.c", PIDFD_REFUSED_C);
    let o = stage.run(
        &sb,
        "set -e\ngcc -O1 -o prog prog.c\nLD_PRELOAD=$SHIM ./prog\n",
    );
    o.check(o.status.success(), "pidfd_spawn(p) did not return EPERM");
    let out = o.stdout_str();
    o.check(
        out.contains("pidfd_spawn: EPERM\n") && out.contains("pidfd_spawnp: EPERM\n"),
        "both refused with EPERM, no pidfd",
    );
    o.check(
        o.stderr_str().contains("envshim: refused to run"),
        "the refusal is said on stderr",
    );
}

#[test]
fn bullseye_pidfd_spawn_is_enosys_without_glibcs() {
    let test = "glibc_roots::bullseye_pidfd_spawn_is_enosys_without_glibcs";
    let Some(root) = root_of(BULLSEYE, test) else {
        return;
    };
    let sb = Sandbox::new(test);
    let stage = Stage::new(&root);
    stage.write("prog.c", PIDFD_PROBE_C);
    let o = stage.run(
        &sb,
        "set -e\ngcc -O1 -o prog prog.c -ldl\nLD_PRELOAD=$SHIM ./prog\n",
    );
    o.check(o.status.success(), "the probe failed");
    let out = o.stdout_str();
    o.check(
        out.contains("pidfd_spawn: ENOSYS") && out.contains("pidfd_spawnp: ENOSYS"),
        "pidfd_spawn and pidfd_spawnp answer ENOSYS on glibc 2.31",
    );
}

/// A `[[secret]]` whose program is started by `posix_spawn` (and, in trixie,
/// `pidfd_spawn`, `pidfd_spawnp`): the decision runs in the parent, so the
/// program is started through the static envwrap beside the shim, which reads
/// the value in the program's own process. The program gets the value; the
/// parent never held it, and no output shows it.
const SECRET_SPAWN_C: &str = r#"
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
extern char **environ;
int main(int argc, char **argv) {
    char *args[] = {"gh", NULL};
    int out = -1, r;
    fflush(stdout);
    if (strcmp(argv[1], "posix_spawn") == 0) r = posix_spawn(&out, argv[2], NULL, NULL, args, environ);
    else if (strcmp(argv[1], "posix_spawnp") == 0) r = posix_spawnp(&out, "gh", NULL, NULL, args, environ);
#ifdef PIDFD
    else if (strcmp(argv[1], "pidfd_spawn") == 0) r = pidfd_spawn(&out, argv[2], NULL, NULL, args, environ);
    else r = pidfd_spawnp(&out, "gh", NULL, NULL, args, environ);
#else
    else return 2;
#endif
    if (r != 0) { fprintf(stderr, "%s: %s\n", argv[1], strerror(r)); return 1; }
#ifdef PIDFD
    if (strncmp(argv[1], "pidfd", 5) == 0) {
        siginfo_t si;
        return waitid(P_PIDFD, out, &si, WEXITED) == 0 && si.si_status == 0 ? 0 : 1;
    }
#endif
    int st;
    return waitpid(out, &st, 0) == out && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
"#;

/// A made-up token, of a shape no real service issues.
const SECRET_TOKEN: &str = "envshim-roots-token-Q7x2Lr9vKd41ZpWm";

fn secret_spawn_in(suite: &str, test: &str) {
    let Some(root) = root_of(suite, test) else {
        return;
    };
    let sb = Sandbox::new(test);
    let stage = Stage::new(&root);
    std::fs::copy(static_envwrap_bin(), stage.host.join("envwrap")).expect("copy envwrap");
    std::fs::create_dir_all(stage.host.join("bin")).expect("mkdir bin");
    stage.write(
        "bin/gh",
        &format!(
            "#!/bin/sh\nif [ \"${{GH_TOKEN-}}\" = '{SECRET_TOKEN}' ]; then echo 'gh: got'; else echo 'gh: none'; fi\n"
        ),
    );
    stage.write("gh-token", &format!("{SECRET_TOKEN}\n"));
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |f: &str, m: u32| {
            std::fs::set_permissions(stage.host.join(f), std::fs::Permissions::from_mode(m))
                .expect("chmod");
        };
        mode("bin/gh", 0o755);
        mode("gh-token", 0o600);
    }
    stage.write(
        "policy.toml",
        &format!(
            "version = 1\n\n[[secret]]\nname = \"GH_TOKEN\"\nfrom = \"file:{s}/gh-token\"\nprogram = \"{s}/bin/gh\"\n",
            s = stage.inside
        ),
    );
    stage.write("prog.c", SECRET_SPAWN_C);
    let mut modes = vec!["posix_spawn", "posix_spawnp"];
    let mut flags = "";
    if suite == TRIXIE {
        modes.extend(["pidfd_spawn", "pidfd_spawnp"]);
        flags = "-DPIDFD";
    }
    let mut script = format!(
        "set -e\ngcc -O1 {flags} -o prog prog.c\nmkdir -m 700 cache\n\
         export PATH=\"$PWD/bin:$PATH\" ENVSHIM_POLICY=\"$PWD/policy.toml\" ENVSHIM_CACHE_DIR=\"$PWD/cache\"\n"
    );
    for m in &modes {
        script.push_str(&format!("LD_PRELOAD=$SHIM ./prog {m} \"$PWD/bin/gh\"\n"));
    }
    let o = stage.run(&sb, &script);
    o.check(o.status.success(), "a spawn of the secret's program failed");
    let out = o.stdout_str();
    let got: Vec<&str> = out.lines().collect();
    o.check(
        got == vec!["gh: got"; modes.len()],
        &format!("each of {modes:?} starts gh with the secret"),
    );
    o.check(
        !out.contains(SECRET_TOKEN) && !o.stderr_str().contains(SECRET_TOKEN),
        "no output holds the secret's value",
    );
}

/// `bash` and `python3` (its `subprocess`, which spawns through a `vfork`
/// child, and `os.posix_spawn`) as the parents.
fn bash_and_python3_in(suite: &str, test: &str) {
    let Some(root) = root_of(suite, test) else {
        return;
    };
    let sb = Sandbox::new(test);
    let stage = Stage::new(&root);
    let script = r#"set -e
echo '== bash'
LD_PRELOAD=$SHIM bash -c 'env; true'
echo '== python3 subprocess'
LD_PRELOAD=$SHIM python3 -c 'import subprocess, sys; sys.stdout.flush(); subprocess.run(["env"], check=True)'
echo '== python3 os.posix_spawn'
LD_PRELOAD=$SHIM python3 -c '
import os, sys
sys.stdout.flush()
pid = os.posix_spawn("/usr/bin/env", ["env"], os.environ)
_, st = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(st) if hasattr(os, "waitstatus_to_exitcode") else st >> 8)
'
"#;
    let o = stage.run(&sb, script);
    expect_sections(
        &o,
        &["bash", "python3 subprocess", "python3 os.posix_spawn"],
    );
}

/// A tmux server on its own socket, started under the shim: its pane's
/// environment. The server is killed at the end, whatever happened.
fn tmux_pane_in(suite: &str, test: &str) {
    let Some(root) = root_of(suite, test) else {
        return;
    };
    let sb = Sandbox::new(test);
    let stage = Stage::new(&root);
    let script = r#"
sock="$PWD/tmux.sock"
trap 'tmux -S "$sock" kill-server 2>/dev/null' EXIT
LD_PRELOAD=$SHIM tmux -S "$sock" -f /dev/null new-session -d -x 80 -y 24 'env > pane.tmp && mv pane.tmp pane.out; sleep 60' || exit 1
i=0
while [ ! -s pane.out ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
echo '== tmux pane'
cat pane.out
"#;
    let o = stage.run(&sb, script);
    expect_sections(&o, &["tmux pane"]);
}

/// The static envwrap, run in the root without the shim, as the root of a
/// tree: the program it runs, and what that program starts (the shim beside
/// envwrap is put into it).
fn static_envwrap_in(suite: &str, test: &str) {
    let Some(root) = root_of(suite, test) else {
        return;
    };
    let sb = Sandbox::new(test);
    let stage = Stage::new(&root);
    std::fs::copy(static_envwrap_bin(), stage.host.join("envwrap")).expect("copy envwrap");
    let script = r#"set -e
echo '== envwrap'
./envwrap -- env
echo '== envwrap, a grandchild'
./envwrap -- sh -c 'env; true'
"#;
    let o = stage.run(&sb, script);
    expect_sections(&o, &["envwrap", "envwrap, a grandchild"]);
}

/// The shim loads into the root's programs (it needs no symbol version the
/// root's glibc lacks) and the program runs.
fn shim_loads_in(suite: &str, test: &str) {
    let Some(root) = root_of(suite, test) else {
        return;
    };
    let sb = Sandbox::new(test);
    let stage = Stage::new(&root);
    let o = stage.run(
        &sb,
        "set -e\nLD_PRELOAD=$SHIM /bin/true\nldd --version | head -n 1\n\
         LD_PRELOAD=$SHIM sh -c 'echo loaded'\n",
    );
    o.check(o.status.success(), "a program under the shim failed");
    o.check(
        !o.stderr_str().contains("not found"),
        "the loader found a version or symbol missing",
    );
    o.check(o.stdout_str().contains("loaded"), "sh under the shim ran");
}
