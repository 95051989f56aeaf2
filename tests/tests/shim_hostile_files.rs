//! No file a policy names can block, stall or exhaust the host (envpolicy::readable,
//! shim/src/state/env_files.rs, the compile wait in shim/src/state/load.rs).
//!
//! Each case plants something that is not a regular file of a sane size where a
//! policy expects one (the policy file itself, an imported env file, at load and
//! under a running process), or a compile that never ends, and checks, with a bound
//! on time, that the host goes on under the fail-closed floor with one warning that
//! names the file, and that `timeout` and `SIGTERM` still end a host that is
//! waiting for a compile.
//!
//! Which policy is in force is read from a child's environment, as in
//! shim_policy_load.rs: the test policy strips `MARK_A`; the floor keeps neither
//! `MARK_A` nor `MARK_B`, but keeps `PATH`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use envshim_e2e::*;

/// Strips `MARK_A` and the names `names.env` declares.
const IMPORTING: &str = "version = 1\nbase = \"all\"\nstrip = [\"MARK_A\"]\n\
     [[import.env_file]]\npath = \"names.env\"\nrole = \"strip\"\n";

/// Longest a host may take in a case that must not block (a compile is
/// milliseconds; this leaves room for a loaded CI machine).
const PROMPT: Duration = Duration::from_secs(5);

#[derive(Debug, PartialEq, Eq)]
enum InForce {
    /// MARK_A stripped, MARK_B kept.
    TestPolicy,
    /// Neither kept, PATH kept.
    Floor,
    Other(String),
}

fn in_force(stdout: &str) -> InForce {
    let has = |n: &str| stdout.lines().any(|l| l.starts_with(&format!("{n}=")));
    match (has("MARK_A"), has("MARK_B"), has("PATH")) {
        (false, true, _) => InForce::TestPolicy,
        (false, false, true) => InForce::Floor,
        _ => InForce::Other(stdout.replace('\n', " ")),
    }
}

struct World {
    sb: Sandbox,
    home: PathBuf,
    policy: PathBuf,
}

impl World {
    fn new(name: &str) -> World {
        let sb = Sandbox::new(name);
        let home = sb.mkdir("home");
        let policy = sb.write("policy.toml", IMPORTING);
        World { sb, home, policy }
    }

    fn env_file(&self) -> PathBuf {
        self.sb.join("names.env")
    }

    /// `program` under the shim with this world's policy and cache.
    fn shimmed(&self, program: impl AsRef<std::ffi::OsStr>) -> TestCommand {
        let mut c = self.sb.cmd(program);
        c.with_shim()
            .env("ENVSHIM_POLICY", &self.policy)
            .env("HOME", &self.home)
            .env("ENVSHIM_CACHE_DIR", self.home.join(".cache/envshim"))
            .env_remove("XDG_CONFIG_HOME")
            .env("ENVSHIM_ENVWRAP", envwrap_bin())
            .env("MARK_A", "a")
            .env("MARK_B", "b")
            .timeout(Duration::from_secs(60));
        c
    }

    /// `sh -c 'exec env'` under the shim: what was in force, the messages, and how
    /// long it took.
    fn observe(&self) -> (InForce, Vec<String>, Duration) {
        let mut c = self.shimmed("/bin/sh");
        c.args(["-c", "exec env"]);
        let start = Instant::now();
        let out = c.expect_success();
        let took = start.elapsed();
        (in_force(&out.stdout_str()), messages(&out.stderr), took)
    }
}

fn messages(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| l.starts_with("envshim: ") || l.starts_with("envwrap: "))
        .map(str::to_string)
        .collect()
}

/// The floor is in force, promptly, and a message names `file` and says `why`.
fn assert_floor_naming(w: &World, file: &Path, why: &str) {
    let (state, msgs, took) = w.observe();
    assert_eq!(state, InForce::Floor, "{msgs:?}");
    assert!(took < PROMPT, "the host waited {took:?}");
    let name = file.to_string_lossy();
    assert!(
        msgs.iter().any(|m| m.contains(&*name) && m.contains(why)),
        "no message names {name} with {why:?}: {msgs:?}"
    );
}

#[test]
fn an_env_file_that_is_a_fifo_gives_the_floor_at_once() {
    let w = World::new("hostile_fifo_env");
    mkfifo(&w.env_file());
    assert_floor_naming(&w, &w.env_file(), "is a FIFO, not a regular file");
    // envwrap says the same, and exits 125.
    let out =
        w.sb.cmd(envwrap_bin())
            .args(["--policy"])
            .arg(&w.policy)
            .args(["--", "true"])
            .timeout(Duration::from_secs(60))
            .expect_exit(125);
    assert!(
        out.stderr_str().contains("is a FIFO, not a regular file"),
        "{}",
        out.report()
    );
}

#[test]
fn a_policy_file_that_is_a_fifo_gives_the_floor_at_once() {
    let w = World::new("hostile_fifo_policy");
    std::fs::remove_file(&w.policy).unwrap();
    mkfifo(&w.policy);
    assert_floor_naming(&w, &w.policy, "is a FIFO, not a regular file");
}

#[test]
fn an_env_file_that_is_a_socket_gives_the_floor_at_once() {
    let w = World::new("hostile_socket_env");
    let _listener = std::os::unix::net::UnixListener::bind(w.env_file()).unwrap();
    assert_floor_naming(&w, &w.env_file(), "is a socket, not a regular file");
}

#[test]
fn a_sparse_env_file_of_three_gigabytes_is_not_read() {
    let w = World::new("hostile_sparse_env");
    let f = std::fs::File::create(w.env_file()).unwrap();
    f.set_len(3 << 30).unwrap();
    assert_floor_naming(&w, &w.env_file(), "is larger than 1048576 bytes");
}

#[test]
fn an_env_file_over_the_limit_gives_the_floor_in_both_front_ends() {
    let w = World::new("hostile_big_env");
    let mut big = Vec::new();
    while big.len() <= 1 << 20 {
        big.extend_from_slice(b"SOME_NAME_OF_A_FILE=some value of a line\n");
    }
    w.sb.write("names.env", &big);
    assert_floor_naming(&w, &w.env_file(), "is larger than 1048576 bytes");
    let out =
        w.sb.cmd(envwrap_bin())
            .arg("check")
            .arg(&w.policy)
            .timeout(Duration::from_secs(60))
            .run();
    assert_ne!(
        out.status.code(),
        Some(0),
        "check calls it valid: {}",
        out.report()
    );
    assert!(
        out.stderr_str().contains("larger than 1048576 bytes"),
        "{}",
        out.report()
    );
}

#[test]
fn a_device_as_an_env_file_gives_the_floor_at_once() {
    let w = World::new("hostile_device_env");
    std::os::unix::fs::symlink("/dev/zero", w.env_file()).unwrap();
    // /dev/zero is writable by others: refused as untrusted before it is read.
    let (state, msgs, took) = w.observe();
    assert_eq!(state, InForce::Floor, "{msgs:?}");
    assert!(took < PROMPT, "the host waited {took:?}");
    assert!(msgs.iter().any(|m| m.contains("names.env")), "{msgs:?}");
}

/// A running bash whose env file is replaced by a FIFO, and then by a sparse file
/// of 3 GB: its next commands run under the floor, promptly, with a warning.
#[test]
fn an_env_file_replaced_under_a_running_process_gives_the_floor_at_its_next_exec() {
    let w = World::new("hostile_replaced_env");
    let file = w.env_file();
    w.sb.write("names.env", "MARK_C=1\n");
    let script = "env > before.out\n\
         rm names.env && mkfifo names.env\n\
         env > fifo.out\n\
         rm names.env && truncate -s 3G names.env\n\
         env > sparse.out\n";
    let mut c = w.shimmed("/bin/bash");
    c.args(["-c", script]);
    let start = Instant::now();
    let out = c.expect_success();
    assert!(
        start.elapsed() < PROMPT * 2,
        "bash waited {:?}",
        start.elapsed()
    );
    let read = |f: &str| String::from_utf8_lossy(&w.sb.read(f)).into_owned();
    assert_eq!(in_force(&read("before.out")), InForce::TestPolicy);
    assert_eq!(
        in_force(&read("fifo.out")),
        InForce::Floor,
        "{}",
        out.report()
    );
    assert_eq!(
        in_force(&read("sparse.out")),
        InForce::Floor,
        "{}",
        out.report()
    );
    let msgs = messages(&out.stderr);
    let name = file.to_string_lossy();
    assert!(
        msgs.iter()
            .any(|m| m.contains(&*name) && m.contains("is a FIFO, not a regular file")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter()
            .any(|m| m.contains(&*name) && m.contains("is larger than 1048576 bytes")),
        "{msgs:?}"
    );
}

/// The warning about an unusable env file is said once, by the shell that runs
/// the commands, not once by each command it forks: the shell's `fork` hook
/// looks at the files (at most once a tenth of a second) and says it, and its
/// children inherit that it was said. Only the children forked before that look
/// (within a tenth of a second, here at most two) say it themselves.
#[test]
fn an_unusable_env_file_is_said_by_the_shell_not_by_each_command() {
    let w = World::new("hostile_env_said_once");
    w.sb.write("names.env", "MARK_C=1\n");
    let script = "rm names.env && mkfifo names.env\n\
         for i in 1 2 3 4 5 6 7 8 9 10; do /bin/true; sleep 0.15; done\n";
    let out = w.shimmed("/bin/bash").args(["-c", script]).expect_success();
    let said = messages(&out.stderr)
        .iter()
        .filter(|m| m.contains("is a FIFO, not a regular file"))
        .count();
    assert!(
        (1..=3).contains(&said),
        "said {said} times for 20 commands: {}",
        out.report()
    );
}

/// An envwrap that never finishes (a compile stuck on a hung mount looks the same
/// to the host).
/// Its `sleep` has an argument of its own, to look for afterwards.
fn hanging_envwrap(sb: &Sandbox) -> (PathBuf, String) {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let sleep = format!("sleep 600.{nanos:09}");
    let p = sb.write_executable("envwrap-hangs", format!("#!/bin/sh\nexec {sleep}\n"));
    (p, sleep)
}

#[test]
fn a_compile_that_never_ends_gives_the_floor_after_the_limit() {
    let w = World::new("hostile_compile_hangs");
    w.sb.write("names.env", "MARK_C=1\n");
    let mut c = w.shimmed("/bin/sh");
    c.args(["-c", "exec env"])
        .env("ENVSHIM_ENVWRAP", hanging_envwrap(&w.sb).0);
    let start = Instant::now();
    let out = c.expect_success();
    let took = start.elapsed();
    assert!(took >= Duration::from_secs(9), "gave up after {took:?}");
    assert!(took < Duration::from_secs(20), "waited {took:?}");
    assert_eq!(in_force(&out.stdout_str()), InForce::Floor);
    let msgs = messages(&out.stderr);
    assert!(
        msgs.iter()
            .any(|m| m.contains("did not finish within 10 seconds")
                && m.contains(&*w.policy.to_string_lossy())),
        "{msgs:?}"
    );
}

/// `timeout -s SIG 1` ends a host that waits for a compile, in its constructor
/// and in bash's `fork` (which blocks SIGINT and SIGTERM itself).
#[test]
fn signals_end_a_host_that_waits_for_a_compile() {
    let w = World::new("hostile_compile_signal");
    w.sb.write("names.env", "MARK_C=1\n");
    let (hangs, sleep) = hanging_envwrap(&w.sb);
    for (signal, program, script) in [
        ("TERM", "/bin/sh", "exec env"),
        ("INT", "/bin/sh", "exec env"),
        ("TERM", "/bin/bash", "env; env"),
    ] {
        if program == "/bin/bash" {
            // A fresh cache, then a changed import: the constructor defers the
            // check, and bash's first fork compiles.
            let c = w.shimmed("/bin/true");
            c.expect_success();
            std::thread::sleep(Duration::from_millis(20));
            w.sb.write("names.env", "MARK_C=1\nMARK_D=2\n");
        }
        // Only the host is under the shim, not `timeout` itself.
        let mut c = w.sb.cmd("timeout");
        c.args(["-s", signal, "1", "env"])
            .arg(format!("LD_PRELOAD={}", shim_path_string()))
            .arg(format!("ENVSHIM_POLICY={}", w.policy.display()))
            .arg(format!("ENVSHIM_ENVWRAP={}", hangs.display()))
            .arg(format!("HOME={}", w.home.display()))
            .args([program, "-c", script])
            .timeout(Duration::from_secs(60));
        let start = Instant::now();
        let out = c.run();
        let took = start.elapsed();
        assert_eq!(
            out.status.code(),
            Some(124),
            "{signal} {program}: {}",
            out.report()
        );
        assert!(took < PROMPT, "{signal} {program}: ended after {took:?}");
    }
    // No compile is left behind.
    std::thread::sleep(Duration::from_millis(200));
    let ps = std::process::Command::new("pgrep")
        .args(["-f", &sleep])
        .output()
        .unwrap();
    assert!(ps.stdout.is_empty(), "a compile outlived its host");
}

/// A FIFO named as the policy's log, or as envwrap's `--log`: opened without
/// blocking, so nothing waits for a reader that never comes.
#[test]
fn a_log_that_is_a_fifo_blocks_nothing() {
    let w = World::new("hostile_fifo_log");
    let log = w.sb.join("audit.log");
    mkfifo(&log);
    std::fs::write(
        &w.policy,
        format!(
            "version = 1\nbase = \"all\"\nstrip = [\"MARK_A\"]\nlog = \"{}\"\n",
            log.display()
        ),
    )
    .unwrap();
    let (state, _, took) = w.observe();
    assert_eq!(state, InForce::TestPolicy);
    assert!(took < PROMPT, "the host waited {took:?}");
    let start = Instant::now();
    let out =
        w.sb.cmd(envwrap_bin())
            .arg("--log")
            .arg(&log)
            .args(["--", "true"])
            .timeout(Duration::from_secs(60))
            .run();
    assert!(
        start.elapsed() < PROMPT,
        "envwrap waited {:?}",
        start.elapsed()
    );
    assert_eq!(out.status.code(), Some(125), "{}", out.report());
}

/// envwrap reads a program to say what it is (`doctor`, and the headers for
/// `--preload`): a FIFO, a device or a sparse file of gigabytes named as the
/// program is an error that names it, at once, never a wait or gigabytes read.
#[test]
fn a_fifo_or_a_device_named_as_a_program_never_blocks_envwrap() {
    let sb = Sandbox::new("hostile_program_files");
    let fifo = sb.mkfifo("prog-fifo");
    let zero = sb.join("prog-zero");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let sparse = sb.join("prog-sparse");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    for (program, says) in [
        (&fifo, "is a FIFO, not a regular file"),
        (&zero, "is a character device, not a regular file"),
        (&sparse, "is larger than 1073741824 bytes"),
    ] {
        let out = sb
            .cmd(envwrap_bin())
            .arg("doctor")
            .arg(program)
            .timeout(Duration::from_secs(20))
            .run();
        assert_eq!(out.status.code(), Some(125), "{}", out.report());
        assert!(out.stderr_str().contains(says), "{}", out.report());
    }
    // Run: the exec fails as it would without envwrap (a FIFO is not executable).
    let out = sb
        .cmd(envwrap_bin())
        .arg("--")
        .arg(&fifo)
        .timeout(Duration::from_secs(20))
        .run();
    assert_eq!(out.status.code(), Some(126), "{}", out.report());
}
