//! What the shim keeps between processes, changed under it by another process
//! of the same user (issue 47): the compiled cache of a policy file, the
//! managed layer's compiled form (`/etc/envshim/managed.bin`) and the withheld
//! page. Truncated, rewritten with garbage, grown, replaced by a FIFO or by
//! another file: no process dies, the policy a running process loaded stays in
//! force, and a process that loads it afterwards gets the policy (compiled
//! again) or the fail-closed floor, never a credential.
//!
//! The shim reads the cache into memory of its own (shim/src/state/load.rs)
//! and shares the withheld page through a memfd whose size is sealed
//! (shim/src/state/withheld.rs). The shim before that mapped the cache file:
//! truncated to nothing, every process that had it mapped died of `SIGBUS` at
//! its next `fork` or exec, and so did every process that shared a truncated
//! withheld page.
//!
//! Each test seeds the fake credentials; every output, and every environment
//! a child wrote, is checked for them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use envshim_e2e::*;

/// Strips `MARK_A`, keeps `MARK_B`: a child's environment says whether this
/// policy or the floor (which keeps neither) decided it.
const POLICY: &str = "version = 1\nbase = \"all\"\nstrip = [\"MARK_A\"]\n";

/// The policy file, its compiled cache written by a first process under the
/// shim, and that cache's path.
fn compiled_policy(sb: &Sandbox) -> (PathBuf, PathBuf) {
    let policy = sb.write("policy.toml", POLICY);
    sb.cmd("/bin/true")
        .with_shim()
        .with_policy(&policy)
        .expect_success();
    let dir = sb.join(".cache/envshim");
    let caches: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "bin"))
        .collect();
    assert_eq!(caches.len(), 1, "one compiled cache in {}", dir.display());
    (policy, caches[0].clone())
}

/// A bash under the shim with `policy`, the seeded credentials and the markers.
fn shimmed_bash(sb: &Sandbox, policy: &Path, script: &str) -> TestCommand {
    let mut c = sb.cmd("bash");
    c.args(["-c", script])
        .with_shim()
        .with_policy(policy)
        .env_secrets()
        .env("MARK_A", "a")
        .env("MARK_B", "b")
        .env("PYTHON3", python3())
        .timeout(Duration::from_secs(120));
    c
}

/// No process of the run died of a signal, as bash reports one.
#[track_caller]
fn assert_no_process_died(out: &Outcome) {
    let err = out.stderr_str();
    for sign in ["Bus error", "Segmentation fault", "core dumped", "Killed"] {
        if err.contains(sign) {
            out.fail(&format!("a process died: {sign:?} on stderr"));
        }
    }
}

/// The names set in an `env` dump.
fn names(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter_map(|l| l.split_once('=').map(|(n, _)| n.to_string()))
        .collect()
}

/// One change to the cache file, made by the shell under the shim itself
/// after its policy is loaded; then a child of that shell (its policy must
/// still be in force) and a new process that loads the policy again (the
/// policy, compiled again, or the floor) each write their environment.
fn cache_changed(name: &str, change: &str) {
    let sb = Sandbox::new(name);
    let (policy, cache) = compiled_policy(&sb);
    let (kept, fresh) = (sb.join("kept.env"), sb.join("fresh.env"));
    let script = format!(
        "/bin/true\n{change}\nenv > {kept}; echo \"kept=$?\"\nenv -u ENVSHIM_HINT sh -c 'exec env' > {fresh}; echo \"fresh=$?\"\n",
        kept = sh_quote(&kept.to_string_lossy()),
        fresh = sh_quote(&fresh.to_string_lossy()),
    );
    let out = shimmed_bash(&sb, &policy, &script)
        .env("CACHE", &cache)
        .expect_success();
    assert_no_process_died(&out);
    let said = out.stdout_str();
    out.check(
        said.contains("kept=0") && said.contains("fresh=0"),
        "a child of the shell did not run to the end",
    );
    assert_clean_dump(&sb, &kept, "the running shell's child", &[]);
    assert_clean_dump(&sb, &fresh, "a process that loaded the policy again", &[]);
    let kept = names(&sb.read("kept.env"));
    out.check(
        !kept.iter().any(|n| n == "MARK_A") && kept.iter().any(|n| n == "MARK_B"),
        "the running shell's policy is no longer in force",
    );
    let fresh = names(&sb.read("fresh.env"));
    out.check(
        !fresh.iter().any(|n| n == "MARK_A"),
        "a process that loaded the policy again is under neither the policy nor the floor",
    );
}

#[test]
fn a_truncated_cache_kills_no_process_and_the_policy_stays() {
    cache_changed("shared_state_truncated", ": > \"$CACHE\"");
}

#[test]
fn a_cache_rewritten_with_garbage_kills_no_process_and_the_policy_stays() {
    cache_changed(
        "shared_state_garbage",
        "head -c 6000 /dev/urandom > \"$CACHE\"",
    );
}

#[test]
fn a_cache_that_grew_kills_no_process_and_the_policy_stays() {
    cache_changed(
        "shared_state_grown",
        "head -c 100000 /dev/urandom >> \"$CACHE\"",
    );
}

#[test]
fn a_fifo_in_place_of_the_cache_kills_no_process_and_the_policy_stays() {
    cache_changed(
        "shared_state_fifo",
        "rm -f \"$CACHE\" && mkfifo -m 600 \"$CACHE\"",
    );
}

#[test]
fn a_device_linked_in_place_of_the_cache_kills_no_process_and_the_policy_stays() {
    cache_changed(
        "shared_state_device",
        "rm -f \"$CACHE\" && ln -s /dev/zero \"$CACHE\"",
    );
}

#[test]
fn a_cache_replaced_by_another_file_kills_no_process_and_the_policy_stays() {
    cache_changed(
        "shared_state_replaced",
        "printf 'not a policy' > \"$CACHE.new\" && mv -f \"$CACHE.new\" \"$CACHE\"",
    );
}

/// Another process changes the cache file over and over: truncated, garbage,
/// the good bytes back, grown, a FIFO, a new file renamed over it.
struct Churn {
    stop: Arc<AtomicBool>,
    rounds: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Churn {
    fn start(cache: PathBuf) -> Churn {
        let good = std::fs::read(&cache).expect("the compiled cache");
        let stop = Arc::new(AtomicBool::new(false));
        let rounds = Arc::new(AtomicUsize::new(0));
        let (s, r) = (stop.clone(), rounds.clone());
        let thread = std::thread::spawn(move || {
            let mut rng = envshim_e2e::rng::Rng::with_seed(0x5eed_0047);
            let pause = || std::thread::sleep(Duration::from_micros(300));
            let next = cache.with_extension("next");
            while !s.load(Ordering::Relaxed) {
                // Every step ignores errors: a compile may be renaming a fresh
                // cache into place at the same moment.
                if let Ok(f) = open_nonblocking(&cache, false, false) {
                    let _ = f.set_len(0);
                }
                pause();
                let garbage: Vec<u8> = (0..good.len()).map(|_| rng.next_u64() as u8).collect();
                put(&cache, &garbage, false);
                pause();
                put(&cache, &good, false);
                pause();
                put(&cache, &garbage, true);
                pause();
                let _ = std::fs::remove_file(&cache);
                fifo_at(&cache);
                pause();
                put(&next, &good, false);
                let _ = std::fs::rename(&next, &cache);
                pause();
                r.fetch_add(1, Ordering::Relaxed);
            }
        });
        Churn {
            stop,
            rounds,
            thread: Some(thread),
        }
    }

    /// Stop; how many rounds ran.
    fn stop(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.rounds.load(Ordering::Relaxed)
    }
}

impl Drop for Churn {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `path` opened for writing without blocking (a FIFO there with no reader is
/// an error, not a wait), created 0600 when missing.
fn open_nonblocking(path: &Path, truncate: bool, append: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(truncate || append)
        .truncate(truncate)
        .append(append)
        .mode(0o600)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// Write `bytes` to `path`: in place from its start (truncated first), or
/// appended. Errors are ignored (see [`Churn`]).
fn put(path: &Path, bytes: &[u8], append: bool) {
    if let Ok(mut f) = open_nonblocking(path, !append, append) {
        let _ = f.write_all(bytes);
    }
}

/// A FIFO at `path`, if one can be made there now.
fn fifo_at(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return;
    };
    // SAFETY: mkfifo(3) reads a NUL-terminated path that outlives the call.
    unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
}

/// 10,000 execs of `/bin/true` by a bash under the shim while another process
/// truncates and rewrites the compiled cache in a loop. Every 50th command is
/// a process that loads the policy again from the changing file (one with the
/// start-up hint at its first exec, then one without it in its constructor);
/// every 500th writes its environment. No process dies, every command exits 0,
/// and no credential reaches a child.
#[test]
fn ten_thousand_execs_while_the_cache_is_rewritten_in_a_loop() {
    let sb = Sandbox::new("shared_state_loop");
    let (policy, cache) = compiled_policy(&sb);
    let dumps = sb.mkdir("dumps");
    let script = format!(
        r#"dumps={dumps}
bad=0
for i in $(seq 10000); do
    /bin/true || bad=$((bad+1))
    if [ $((i % 50)) -eq 0 ]; then
        env -u ENVSHIM_HINT sh -c 'exec /bin/true' || bad=$((bad+1))
    fi
    if [ $((i % 500)) -eq 0 ]; then
        env > "$dumps/child-$i.env" || bad=$((bad+1))
        env -u ENVSHIM_HINT sh -c 'exec env' > "$dumps/loaded-$i.env" || bad=$((bad+1))
    fi
done
echo "bad=$bad"
"#,
        dumps = sh_quote(&dumps.to_string_lossy()),
    );
    let churn = Churn::start(cache);
    let out = shimmed_bash(&sb, &policy, &script).run();
    let rounds = churn.stop();
    assert_no_process_died(&out);
    out.check(out.status.success(), "the shell did not exit 0");
    out.check(
        out.stdout_str().contains("bad=0"),
        "a command of the loop failed",
    );
    out.check(rounds > 0, "the cache was never changed during the loop");
    let mut seen = 0;
    for e in std::fs::read_dir(&dumps).expect("the dumps").flatten() {
        let bytes = std::fs::read(e.path()).expect("a dump");
        sb.secrets()
            .assert_absent(&e.file_name().to_string_lossy(), &bytes);
        let names = names(&bytes);
        for n in sb.secrets().names() {
            assert!(
                !names.iter().any(|x| x == n),
                "{}: holds {n}",
                e.path().display()
            );
        }
        seen += 1;
    }
    assert_eq!(seen, 40, "every dump was written");
}

/// A tmux server under the shim (with a policy file) while its cache is
/// truncated, rewritten and replaced: the server keeps running, and each new
/// pane, opened with a credential given by `-e`, does not get it.
#[test]
fn a_tmux_server_survives_its_cache_truncated_and_its_new_panes_hold_no_credential() {
    let sb = Sandbox::new("shared_state_tmux");
    let (policy, cache) = compiled_policy(&sb);
    sb.tmux()
        .with_shim()
        .with_policy(&policy)
        .env_secrets()
        .args(["new-session", "-d", "-s", "main", "sleep 600"])
        .expect_success();
    let server = sb.server_pid().expect("the tmux server is running");
    let token = format!("GH_TOKEN={}", sb.secrets().value("GH_TOKEN"));
    let window = |n: usize| {
        let file = sb.join(format!("pane-{n}.env"));
        sb.tmux()
            .args(["new-window", "-d", "-t", "main", "-e", &token])
            .arg(format!("env > {}; sleep 600", file.display()))
            .expect_success();
        assert_clean_dump(&sb, &file, &format!("pane {n}"), &[]);
        assert!(pid_alive(server), "the tmux server died (pane {n})");
    };
    // Truncated in place first: the old shim's server died at the next fork.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&cache)
        .and_then(|f| f.set_len(0))
        .expect("truncate the cache");
    window(1);
    std::fs::write(&cache, b"garbage").expect("garbage");
    window(2);
    let churn = Churn::start(cache);
    for n in 3..=6 {
        window(n);
    }
    let rounds = churn.stop();
    assert!(rounds > 0, "the cache was never changed");
    assert!(pid_alive(server), "the tmux server died");
    sb.kill_tmux_server();
}

/// The managed layer's compiled form changed by a root process (`change`, a
/// shell line) while a shell under the shim has the layer loaded: the shell's
/// children are still held to the layer, and a process that loads it
/// afterwards is held to the floor (the layer is broken), with its line (once
/// per process that loads it). On a private host.
fn managed_changed(name: &str, change: &str) {
    if no_private_host(name) {
        return;
    }
    let sb = Sandbox::new(name);
    let src = sb.write("managed.toml", MANAGED_STRIPS_INTERNAL);
    let setup = format!(
        "{}'{}' compile --output /etc/envshim/managed.bin -- /etc/envshim/managed.toml >&2\nchmod 0644 /etc/envshim/managed.bin\n",
        install_line(&src, "/etc/envshim/managed.toml", "0644"),
        envwrap_bin().display()
    );
    let (kept, fresh) = (sb.join("kept.env"), sb.join("fresh.env"));
    let script = format!(
        "/bin/true\n{change}\nenv > {kept}; echo \"kept=$?\"\nenv -u ENVSHIM_HINT sh -c 'exec env' > {fresh}; echo \"fresh=$?\"\n",
        kept = sh_quote(&kept.to_string_lossy()),
        fresh = sh_quote(&fresh.to_string_lossy()),
    );
    let mut c = on_private_host(&sb, &setup, "env");
    c.arg(format!("LD_PRELOAD={}", shim_so().display()))
        .arg("CORP_INTERNAL_URL=https://build.corp.invalid/")
        .arg("ENVSHIM_E2E_PLAIN=kept")
        .args(["bash", "-c", &script])
        .env_secrets();
    let out = c.expect_success();
    assert_no_process_died(&out);
    let said = out.stdout_str();
    out.check(
        said.contains("kept=0") && said.contains("fresh=0"),
        "a child of the shell did not run to the end",
    );
    assert_clean_dump(&sb, &kept, "the running shell's child", &[]);
    assert_clean_dump(&sb, &fresh, "a process that loaded the layer again", &[]);
    let kept = names(&sb.read("kept.env"));
    out.check(
        !kept.iter().any(|n| n == "CORP_INTERNAL_URL")
            && kept.iter().any(|n| n == "ENVSHIM_E2E_PLAIN"),
        "the layer the running shell loaded is no longer in force",
    );
    let fresh = names(&sb.read("fresh.env"));
    out.check(
        !fresh.iter().any(|n| n == "CORP_INTERNAL_URL"),
        "a process that loaded the changed layer is not held to the floor",
    );
    let lines = shim_lines(&out.stderr);
    out.check(
        lines
            .iter()
            .any(|l| l.contains("managed layer") && l.contains("no current compiled form")),
        "no line says the layer has no usable compiled form",
    );
}

#[test]
fn a_truncated_managed_bin_kills_no_process_and_the_layer_stays() {
    managed_changed(
        "a_truncated_managed_bin_kills_no_process_and_the_layer_stays",
        ": > /etc/envshim/managed.bin",
    );
}

#[test]
fn a_device_in_place_of_managed_bin_kills_no_process_and_the_layer_stays() {
    managed_changed(
        "a_device_in_place_of_managed_bin_kills_no_process_and_the_layer_stays",
        "rm -f /etc/envshim/managed.bin && mknod -m 0644 /etc/envshim/managed.bin c 1 5",
    );
}

/// A root process truncates the withheld page of a shell under the shim
/// through `/proc/PID/map_files/`: the kernel refuses it (the memfd's size is
/// sealed). Then it writes garbage over the page through `/proc/PID/mem`, and
/// the shell's next exec that withholds a credential runs. (The shim before
/// that shared an anonymous page, which that truncation made a `SIGBUS` in the
/// shell's next child.)
#[test]
fn the_withheld_page_cannot_be_truncated_under_the_tree() {
    if !private_host_available() {
        eprintln!("the_withheld_page_cannot_be_truncated_under_the_tree: skipped: opening /proc/PID/map_files needs root (CI runs as root)");
        return;
    }
    let sb = Sandbox::new("shared_state_withheld");
    let (policy, _) = compiled_policy(&sb);
    let truncate = sb.write(
        "truncate.py",
        r#"import os, sys
pid = sys.argv[1]
for line in open(f"/proc/{pid}/maps"):
    f = line.split()
    if len(f) >= 6 and f[1].endswith("s") and ("envshim-withheld" in line or "/dev/zero" in line):
        try:
            os.truncate(f"/proc/{pid}/map_files/{f[0]}", 0)
            print("truncated")
        except OSError as e:
            print("refused", e.errno)
        start, end = (int(x, 16) for x in f[0].split("-"))
        try:
            with open(f"/proc/{pid}/mem", "r+b", buffering=0) as mem:
                mem.seek(start)
                mem.write(os.urandom(end - start))
                print("scribbled")
        except OSError as e:
            print("cannot write", e.errno)
"#,
    );
    let script = format!(
        "/bin/true\n\"$PYTHON3\" {} $$\nEXTRA_API_TOKEN=made-up-but-withheld /bin/true; echo \"after=$?\"\n",
        sh_quote(&truncate.to_string_lossy())
    );
    let out = shimmed_bash(&sb, &policy, &script).expect_success();
    assert_no_process_died(&out);
    let said = out.stdout_str();
    out.check(
        said.contains(&format!("refused {}", libc::EPERM)),
        "the withheld page was not found, or its truncation was not refused",
    );
    out.check(
        said.contains("scribbled"),
        "garbage could not be written into the page",
    );
    out.check(
        said.contains("after=0"),
        "the shell's next child did not run",
    );
}

/// An env file the policy reads at every exec (`values = true`), truncated,
/// grown with garbage and rewritten while a shell under the shim runs: the env
/// files are read with `read(2)` at each exec, never mapped, so each child runs
/// and gets the file's value as it is then, and no credential. (A FIFO or a
/// device in its place gives the floor: tests/tests/shim_hostile_files.rs.)
#[test]
fn an_env_file_truncated_grown_or_rewritten_kills_no_process() {
    let sb = Sandbox::new("shared_state_env_file");
    let env_file = sb.write("proxy.env", "PROXY=http://one.invalid:1\nLOOP_ONLY=1\n");
    let policy = sb.write(
        "policy.toml",
        format!(
            "version = 1\nbase = \"all\"\nkeep = [\"PROXY\"]\n\n[[import.env_file]]\npath = \"{}\"\nrole = \"strip\"\nvalues = true\n",
            env_file.display()
        ),
    );
    let dump = |n: &str| sh_quote(&sb.join(format!("{n}.env")).to_string_lossy());
    let script = format!(
        "/bin/true\n: > \"$ENV_FILE\"\nenv > {a}; echo \"a=$?\"\nhead -c 100000 /dev/urandom >> \"$ENV_FILE\"\nenv > {b}; echo \"b=$?\"\nprintf 'PROXY=http://two.invalid:2\\n' > \"$ENV_FILE\"\nsleep 0.2\nenv > {c}; echo \"c=$?\"\n",
        a = dump("a"),
        b = dump("b"),
        c = dump("c"),
    );
    let out = shimmed_bash(&sb, &policy, &script)
        .env("ENV_FILE", &env_file)
        .env("PROXY", "http://inherited.invalid:0")
        .expect_success();
    assert_no_process_died(&out);
    let said = out.stdout_str();
    out.check(
        ["a=0", "b=0", "c=0"].iter().all(|s| said.contains(s)),
        "a child of the shell did not run to the end",
    );
    for n in ["a", "b", "c"] {
        assert_clean_dump(
            &sb,
            &sb.join(format!("{n}.env")),
            &format!("child {n}"),
            &[],
        );
    }
    let c = String::from_utf8_lossy(&sb.read("c.env")).into_owned();
    out.check(
        c.lines().any(|l| l == "PROXY=http://two.invalid:2"),
        "the rewritten env file's value did not reach the next child",
    );
}
