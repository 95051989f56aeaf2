//! The start-up hint (docs/adr/0015-start-up-hint.md, shim/src/state/hint.rs): a child
//! of a policed parent that needs nothing from the policy before `main` makes no
//! system call for it there, and loads it at its first exec; a program the policy
//! self-scrubs, and the first process, load it at start; an edit of the policy
//! reaches the programs a running process starts after it.
//!
//! What a process did before `main` is read with strace, as a user would check
//! it: the lines of the trace that name the policy file or its cache directory.

use std::path::{Path, PathBuf};
use std::time::Duration;

use envshim_e2e::*;

/// Strips `MARK_A`; keeps everything else.
const POLICY: &str = "version = 1\nbase = \"all\"\nstrip = [\"MARK_A\"]\n";

/// The edit of `POLICY` the edit tests make: `MARK_B` is stripped too.
const STRIPS_A_AND_B: &str = "version = 1\nbase = \"all\"\nstrip = [\"MARK_A\", \"MARK_B\"]\n";

/// Counts `MARK_B` as a credential and self-scrubs `PROGRAM` (replaced by the
/// test): the program removes `MARK_B` from its own environment at load.
const SCRUBS_MARK_B: &str = "version = 1\nbase = \"all\"\nstrip = [\"MARK_A\"]\n[credentials]\nnames = [\"MARK_B\"]\n[program.PROGRAM]\nself_scrub = true\n";

/// A policy file that does not compile: an array left open.
const BROKEN: &str = "version = 1\nbase = \"all\"\nstrip = [\n";

/// A python3 script for the broken-policy tests: `preamble`, then for each step
/// it writes the policy file (when the step has a text), runs `env` through
/// `subprocess`, and prints the step's label and the `MARK_` names `env` got
/// (`-` for none). The texts are ASCII, where Rust's `{:?}` is a Python literal.
fn edit_steps_script(policy: &Path, preamble: &str, steps: &[(&str, Option<&str>)]) -> String {
    let mut script = format!(
        r#"
import os, subprocess
path = {policy:?}
{preamble}
def step(label, text=None):
    if text is not None:
        with open(path, "w") as f:
            f.write(text)
    out = subprocess.run(["env"], stdout=subprocess.PIPE, text=True).stdout
    marks = sorted(l.split("=")[0] for l in out.splitlines() if l.startswith("MARK_"))
    print(label, " ".join(marks) or "-", flush=True)
"#,
        policy = policy.to_string_lossy()
    );
    for (label, text) in steps {
        match text {
            Some(text) => script.push_str(&format!("step({label:?}, {text:?})\n")),
            None => script.push_str(&format!("step({label:?})\n")),
        }
    }
    script
}

struct World {
    sb: Sandbox,
    policy: PathBuf,
}

impl World {
    fn new(name: &str) -> World {
        let sb = Sandbox::new(name);
        let policy = sb.write("policy.toml", POLICY);
        World { sb, policy }
    }

    fn cache_dir(&self) -> PathBuf {
        self.sb.join(".cache/envshim")
    }

    /// `program` under the shim with this world's policy, as a first process.
    fn shimmed(&self, program: impl AsRef<std::ffi::OsStr>) -> TestCommand {
        let mut c = self.sb.cmd(program);
        c.with_shim()
            .with_policy(&self.policy)
            .env("MARK_A", "a")
            .env("MARK_B", "b")
            .timeout(Duration::from_secs(60));
        c
    }

    /// `python3 -c SCRIPT` under the shim as a first process, with `MARK_C` set
    /// too (a mark every policy here keeps), run to success.
    fn python_first(&self, script: &str) -> Outcome {
        self.shimmed(python3())
            .args(["-c", script])
            .env("MARK_C", "c")
            .expect_success()
    }

    /// `sh -c SCRIPT` under the shim, as a first process.
    fn sh(&self, script: &str) -> TestCommand {
        let mut c = self.shimmed("/bin/sh");
        c.args(["-c", script]);
        c
    }

    /// The lines of a strace output file, after the traced program's exec, that
    /// name the policy or its cache. (Before it, the parent's exec hook runs in
    /// the traced child.)
    fn policy_io(&self, trace: &Path) -> Vec<String> {
        let text = std::fs::read_to_string(trace)
            .unwrap_or_else(|e| panic!("read {}: {e}", trace.display()));
        let policy = self.policy.to_string_lossy().into_owned();
        let cache = self.cache_dir().to_string_lossy().into_owned();
        text.lines()
            .skip_while(|l| !(l.contains("execve(") && l.ends_with("= 0")))
            .filter(|l| l.contains(&policy) || l.contains(&cache))
            .map(str::to_string)
            .collect()
    }
}

/// A C program that says whether `MARK_B` and `ENVSHIM_HINT` are in its own
/// environment at `main`.
fn reporter(sb: &Sandbox, name: &str) -> PathBuf {
    let built = compile_c(
        "hint_reporter",
        "#include <stdio.h>\n#include <stdlib.h>\nint main(void){printf(\"MARK_B %s HINT %s\\n\",getenv(\"MARK_B\")?\"set\":\"unset\",getenv(\"ENVSHIM_HINT\")?\"set\":\"unset\");return 0;}\n",
    );
    // Under the name the policy gives it (compile_c adds a hash to the file name).
    let prog = sb.join(name);
    std::fs::copy(&built, &prog).unwrap();
    prog
}

#[test]
fn a_policed_parents_child_makes_no_system_call_for_the_policy_before_main() {
    let w = World::new("hint_no_io");
    // The first process: loads the policy at start (and compiles it).
    let first = w.sb.join("first.trace");
    let mut c = w.sb.cmd("strace");
    c.args(["-f", "-o"])
        .arg(&first)
        .args(["-E"])
        .arg(format!("LD_PRELOAD={}", shim_path_string()))
        .args(["-E"])
        .arg(format!("ENVSHIM_POLICY={}", w.policy.display()))
        .args(["-E"])
        .arg(format!("ENVSHIM_CACHE_DIR={}", w.cache_dir().display()))
        .arg("/bin/true")
        .timeout(Duration::from_secs(60))
        .expect_success();
    assert!(
        !w.policy_io(&first).is_empty(),
        "the first process reads the policy at start: {}",
        std::fs::read_to_string(&first).unwrap_or_default()
    );

    // A child of a policed parent: strace is the parent (under the shim, it
    // loads the policy at its first fork) and /bin/true the child.
    let child = w.sb.join("child.trace");
    w.sh(&format!(
        "exec strace -f -o {} /bin/true",
        sh_quote(&child.to_string_lossy())
    ))
    .expect_success();
    let text = std::fs::read_to_string(&child).unwrap();
    assert!(
        text.contains("libenvshim.so"),
        "the child loads the shim: {text}"
    );
    assert_eq!(
        w.policy_io(&child),
        Vec::<String>::new(),
        "a child that needs nothing from the policy at load reads none of it"
    );
    // And it was told so.
    let env = w.sh("exec env").expect_success().stdout_str();
    assert!(
        env.lines().any(|l| l.starts_with("ENVSHIM_HINT=1-")),
        "a hint for env: {env}"
    );
}

#[test]
fn a_child_that_took_the_hint_enforces_the_policy_at_its_first_exec() {
    let w = World::new("hint_first_exec");
    // The inner sh takes the hint; MARK_A, set again for its exec of env, must
    // still be stripped, by the policy it loads there.
    let out = w.sh("/bin/sh -c 'MARK_A=again exec env'").expect_success();
    let env = out.stdout_str();
    assert!(
        !env.lines().any(|l| l.starts_with("MARK_A=")),
        "the policy strips MARK_A at the hinted process's first exec: {env}"
    );
    assert!(env.lines().any(|l| l == "MARK_B=b"), "{env}");
    assert!(
        env.lines().any(|l| l.starts_with("ENVSHIM_HINT=1-")),
        "the hinted sh loaded the policy file and gave env its own hint: {env}"
    );
    assert!(shim_lines(&out.stderr).is_empty(), "{}", out.stderr_str());

    // The same through the first fork: a hinted bash that forks for a pipeline.
    let out = w
        .sh("bash -c 'MARK_A=again env | grep -c ^MARK_A= || true'")
        .expect_success();
    assert_eq!(out.stdout_str().trim(), "0", "{}", out.stderr_str());
}

#[test]
fn a_program_the_policy_self_scrubs_gets_no_hint_and_loads_at_start() {
    let w = World::new("hint_self_scrub");
    w.sb.write(
        "policy.toml",
        format!("{POLICY}[program.hint_scrubbed]\nself_scrub = true\n"),
    );
    let prog = reporter(&w.sb, "hint_scrubbed");
    let plain = reporter(&w.sb, "hint_plain");
    let out = w
        .sh(&format!(
            "{}; {}",
            sh_quote(&prog.to_string_lossy()),
            sh_quote(&plain.to_string_lossy())
        ))
        .expect_success();
    assert_eq!(
        out.stdout_str(),
        "MARK_B set HINT unset\nMARK_B set HINT set\n",
        "{}",
        out.stderr_str()
    );
    // It reads the policy before main, as a first process does.
    let trace = w.sb.join("scrubbed.trace");
    w.sh(&format!(
        "exec strace -f -o {} {}",
        sh_quote(&trace.to_string_lossy()),
        sh_quote(&prog.to_string_lossy())
    ))
    .expect_success();
    assert!(
        !w.policy_io(&trace).is_empty(),
        "a self-scrubbed program loads the policy at start"
    );
}

/// A shell that runs `first`, waits for a line on `fifo`, then runs `then`; the
/// test edits the policy in between.
fn running_shell(w: &World, first: &str, then: &str) -> (Background, PathBuf) {
    let fifo = w.sb.mkfifo("go");
    let script = format!(
        "{first}; touch {ready}; read line < {fifo}; {then}",
        ready = sh_quote(&w.sb.join("ready").to_string_lossy()),
        fifo = sh_quote(&fifo.to_string_lossy()),
    );
    let bg = w.sh(&script).spawn_background();
    wait_until(
        "the shell ran its first command",
        || w.sb.join("ready").exists(),
        Duration::from_secs(30),
    );
    (bg, fifo)
}

fn go_on(fifo: &Path) {
    std::fs::write(fifo, "go\n").unwrap();
}

fn wait_for_output(path: &Path) -> String {
    wait_until(
        "the shell's second command",
        || std::fs::read_to_string(path).is_ok_and(|s| s.ends_with('\n')),
        Duration::from_secs(30),
    );
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn an_edit_that_self_scrubs_a_program_reaches_it_when_a_running_shell_starts_it() {
    let w = World::new("hint_edit_scrub");
    let prog = reporter(&w.sb, "hint_edited");
    let q = |p: &Path| sh_quote(&p.to_string_lossy());
    let (out1, out2) = (w.sb.join("out1"), w.sb.join("out2"));
    let (mut bg, fifo) = running_shell(
        &w,
        &format!("{} > {}", q(&prog), q(&out1)),
        &format!("{} > {}", q(&prog), q(&out2)),
    );
    assert_eq!(
        std::fs::read_to_string(&out1).unwrap(),
        "MARK_B set HINT set\n",
        "before the edit: a hint, nothing scrubbed"
    );
    // The edit: MARK_B is a credential, and the program self-scrubs.
    w.sb.write(
        "policy.toml",
        SCRUBS_MARK_B.replace("PROGRAM", "hint_edited"),
    );
    go_on(&fifo);
    // The running shell follows the edit at its next exec: MARK_B is now a
    // credential it keeps from the program, and the program, which the edited
    // policy self-scrubs, gets no hint and loads the policy at start.
    assert_eq!(
        wait_for_output(&out2),
        "MARK_B unset HINT unset\n",
        "after the edit: no hint, and the program self-scrubs"
    );
    bg.wait_timeout(Duration::from_secs(30));
}

#[test]
fn a_process_that_took_the_hint_enforces_an_edit_made_before_its_first_exec() {
    let w = World::new("hint_edit_exec");
    let out = w.sb.join("out");
    let fifo = w.sb.join("go");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let ready = w.sb.join("ready");
    // The inner sh takes the hint under the first version, and execs env only
    // after the edit.
    let inner = format!(
        ": > {ready}; read line < {fifo}; MARK_B=again exec env > {out}",
        ready = sh_quote(&ready.to_string_lossy()),
        fifo = sh_quote(&fifo.to_string_lossy()),
        out = sh_quote(&out.to_string_lossy()),
    );
    let mut bg = w
        .sh(&format!("exec /bin/sh -c {}", sh_quote(&inner)))
        .spawn_background();
    wait_until(
        "the inner shell started",
        || ready.exists(),
        Duration::from_secs(30),
    );
    w.sb.write("policy.toml", STRIPS_A_AND_B);
    go_on(&fifo);
    let env = wait_for_output(&out);
    assert!(
        !env.lines().any(|l| l.starts_with("MARK_B=")),
        "the edited policy strips MARK_B at the hinted process's first exec: {env}"
    );
    bg.wait_timeout(Duration::from_secs(30));
}

#[test]
fn a_forged_or_foreign_hint_is_no_hint() {
    let w = World::new("hint_forged");
    w.sb.write(
        "policy.toml",
        SCRUBS_MARK_B.replace("PROGRAM", "hint_forged"),
    );
    let prog = reporter(&w.sb, "hint_forged");
    // A hint for another program, copied from a real one, and malformed ones: the
    // program self-scrubs MARK_B as without them.
    let env = w.sh("exec env").expect_success().stdout_str();
    let for_env = env
        .lines()
        .find(|l| l.starts_with("ENVSHIM_HINT="))
        .unwrap_or_else(|| panic!("a hint for env: {env}"))
        .to_string();
    for forged in [for_env.as_str(), "ENVSHIM_HINT=1-", "ENVSHIM_HINT=junk"] {
        let (name, value) = forged.split_once('=').unwrap();
        let out = w.shimmed(&prog).env(name, value).expect_success();
        assert!(
            out.stdout_str().starts_with("MARK_B unset "),
            "a first process with {forged:?} self-scrubs as without it: {}",
            out.stdout_str()
        );
    }
}

#[test]
fn an_edit_reaches_the_next_exec_of_a_running_shell() {
    let w = World::new("hint_edit_running");
    let (out1, out2) = (w.sb.join("out1"), w.sb.join("out2"));
    let q = |p: &Path| sh_quote(&p.to_string_lossy());
    let (mut bg, fifo) = running_shell(
        &w,
        &format!("env > {}", q(&out1)),
        &format!("env > {}", q(&out2)),
    );
    let before = std::fs::read_to_string(&out1).unwrap();
    assert!(before.lines().any(|l| l == "MARK_B=b"), "{before}");
    w.sb.write("policy.toml", STRIPS_A_AND_B);
    go_on(&fifo);
    let after = wait_for_output(&out2);
    assert!(
        !after.lines().any(|l| l.starts_with("MARK_B=")),
        "the running shell's next exec is decided by the edited policy: {after}"
    );
    assert!(
        after.lines().any(|l| l.starts_with("ENVSHIM_HINT=")),
        "{after}"
    );
    bg.wait_timeout(Duration::from_secs(30));
}

/// A process whose policy file keeps changing is followed 15 times, then its
/// children get the fail-closed floor, with one warning, never the last policy
/// it loaded.
#[test]
fn a_policy_that_keeps_changing_is_followed_then_floored() {
    let w = World::new("hint_edit_often");
    let script = format!(
        r#"
import subprocess, time
path = {policy:?}
for i in range(18):
    names = ", ".join('"MARK_X%d"' % j for j in range(i + 1))
    with open(path, "w") as f:
        f.write('version = 1\nbase = "all"\nstrip = ["MARK_A", %s]\n' % names)
    # stderr is not captured: the shim's warning goes where python's goes.
    out = subprocess.run(["env"], stdout=subprocess.PIPE, text=True).stdout
    marks = sorted(l.split("=")[0] for l in out.splitlines() if l.startswith("MARK_"))
    print(i, " ".join(marks), "PATH" if any(l.startswith("PATH=") for l in out.splitlines()) else "-", flush=True)
"#,
        policy = w.policy.to_string_lossy()
    );
    let out = w
        .shimmed(python3())
        .args(["-c", &script])
        .env("MARK_X3", "x3")
        .expect_success();
    let lines: Vec<String> = out.stdout_str().lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 18, "{}", out.stderr_str());
    // The first policy is loaded at start (i = 0), and 15 edits are followed: each
    // child sees the policy as just written (MARK_X3 is stripped from edit 3 on).
    for (i, line) in lines.iter().enumerate().take(15) {
        let want = if i < 3 {
            "MARK_B MARK_X3 PATH"
        } else {
            "MARK_B PATH"
        };
        assert_eq!(line, &format!("{i} {want}"), "{}", out.stdout_str());
    }
    // Then the floor, which keeps neither mark.
    for (i, line) in lines.iter().enumerate().skip(15) {
        assert_eq!(line, &format!("{i}  PATH"), "{}", out.stdout_str());
    }
    let warned: Vec<String> = shim_lines(&out.stderr);
    assert_eq!(
        warned,
        ["envshim: the policy file changed too often in this process's life: its children are judged under the fail-closed floor until it restarts"],
        "{}",
        out.stderr_str()
    );
}

/// An edit that does not load gives the floor, and the process still follows the
/// file: the edit that mends it reaches the next exec, as any edit does. While the
/// file stays broken it is not loaded again at every exec (one warning).
#[test]
fn an_edit_that_mends_a_broken_policy_reaches_the_next_exec() {
    let w = World::new("hint_edit_mends");
    let script = edit_steps_script(
        &w.policy,
        "",
        &[
            ("loaded", None),
            ("broken", Some(BROKEN)),
            ("still-broken", None),
            ("mended", Some(STRIPS_A_AND_B)),
        ],
    );
    let out = w.python_first(&script);
    assert_eq!(
        out.stdout_str(),
        "loaded MARK_B MARK_C\nbroken -\nstill-broken -\nmended MARK_C\n",
        "the broken edit gives the floor (no mark), the mending one is followed; stderr: {}",
        out.stderr_str()
    );
    // The compiler's message, naming the file and the line, once.
    let said = shim_lines(&out.stderr);
    assert!(
        said.len() == 1 && said[0].contains("policy.toml:4:1: invalid array"),
        "one warning for the broken edit: {}",
        out.stderr_str()
    );
}

/// The same in a process that took the start-up hint and finds the file broken at
/// its first exec, where it loads the policy: the floor, then the mended file.
#[test]
fn a_hinted_process_that_finds_the_policy_broken_follows_the_edit_that_mends_it() {
    let w = World::new("hint_load_mends");
    let script = edit_steps_script(
        &w.policy,
        r#"print("hinted" if "ENVSHIM_HINT" in os.environ else "not hinted", flush=True)"#,
        &[("broken", Some(BROKEN)), ("mended", Some(STRIPS_A_AND_B))],
    );
    let out = w
        .sh(&format!(
            "exec {} -c {}",
            python3().display(),
            sh_quote(&script)
        ))
        .env("MARK_C", "c")
        .expect_success();
    assert_eq!(
        out.stdout_str(),
        "hinted\nbroken -\nmended MARK_C\n",
        "stderr: {}",
        out.stderr_str()
    );
}

/// And in a process that loads a broken policy file at its start (a first
/// process; tmux, which self-scrubs, is one): the floor, then the mended file at
/// the exec after the edit.
#[test]
fn a_process_started_under_a_broken_policy_follows_the_edit_that_mends_it() {
    let w = World::new("hint_start_mends");
    w.sb.write("policy.toml", BROKEN);
    let script = edit_steps_script(
        &w.policy,
        "",
        &[("broken", None), ("mended", Some(STRIPS_A_AND_B))],
    );
    let out = w.python_first(&script);
    assert_eq!(
        out.stdout_str(),
        "broken -\nmended MARK_C\n",
        "stderr: {}",
        out.stderr_str()
    );
}

/// And where the constructor found a fresh cache and left the check of the files
/// the policy imports to the first exec (docs/adr/0009): an import made
/// world-writable before that exec fails the check (the floor), and once the
/// policy file is mended (the import dropped), the next exec gets it.
#[test]
fn a_process_whose_deferred_check_fails_follows_the_edit_that_mends_it() {
    let w = World::new("hint_deferred_mends");
    let names = w.sb.write("names.env", "MARK_B=\n");
    w.sb.write(
        "policy.toml",
        format!(
            "{POLICY}[[import.env_file]]\npath = {:?}\n",
            names.to_string_lossy()
        ),
    );
    // Compiles the cache, so that python3 finds it fresh at start and defers.
    w.sh("true").expect_success();
    let script = edit_steps_script(
        &w.policy,
        &format!("os.chmod({:?}, 0o666)", names.to_string_lossy()),
        &[("broken", None), ("mended", Some(STRIPS_A_AND_B))],
    );
    let out = w.python_first(&script);
    assert_eq!(
        out.stdout_str(),
        "broken -\nmended MARK_C\n",
        "stderr: {}",
        out.stderr_str()
    );
}

/// The case that matters most: a tmux server started while the policy file is
/// broken (tmux self-scrubs, so it loads the policy at its start) gives its first
/// pane the floor, and once the file is mended, a new window gets the mended
/// policy: the server follows the edit at its next exec. Real tmux on the
/// sandbox's own `-L` socket, which the sandbox kills at the end.
#[test]
fn a_tmux_server_started_under_a_broken_policy_follows_the_edit_that_mends_it() {
    let w = World::new("hint_tmux_mends");
    w.sb.write("policy.toml", BROKEN);
    let (out1, out2) = (w.sb.join("out1"), w.sb.join("out2"));
    let pane = |out: &Path| format!("env > {}; exec sleep 300", sh_quote(&out.to_string_lossy()));
    w.shimmed("tmux")
        .args(w.sb.tmux_args())
        .args(["new-session", "-d", "-s", "s", "-x", "80", "-y", "24"])
        .arg(pane(&out1))
        .env("MARK_C", "c")
        .expect_success();
    let first = wait_for_output(&out1);
    assert!(
        !first.lines().any(|l| l.starts_with("MARK_")),
        "the first pane is judged by the floor: {first}"
    );
    w.sb.write("policy.toml", STRIPS_A_AND_B);
    w.sb.tmux()
        .args(["new-window", "-t", "s:"])
        .arg(pane(&out2))
        .expect_success();
    let second = wait_for_output(&out2);
    let marks: Vec<&str> = second.lines().filter(|l| l.starts_with("MARK_")).collect();
    assert_eq!(
        marks,
        ["MARK_C=c"],
        "a new window after the mend is judged by the mended policy: {second}"
    );
}

/// A relative policy path given in a working directory that was removed: the
/// directory has no path, and the shim names it as the kernel does
/// (`/proc/self/cwd`: `PATH (deleted)`), where no policy file can be. The floor,
/// with "not found"; after a `cd` into a directory that holds a file of that
/// relative name, neither the process nor a child that loads the shim anew (a
/// `sh`, which gets the absolute path by rule 8) loads it.
#[test]
fn a_relative_policy_path_in_a_removed_directory_stays_the_floor_after_cd() {
    let w = World::new("hint_relative_gone");
    std::fs::create_dir(w.sb.join("gone")).unwrap();
    let mut script = edit_steps_script(
        &w.policy,
        &format!(
            "os.chdir({:?})\nos.utime('policy.toml')",
            w.sb.path().to_string_lossy()
        ),
        &[("after-cd", None)],
    );
    script.push_str(
        "out = subprocess.run(['sh', '-c', 'exec env'], stdout=subprocess.PIPE, text=True).stdout\n\
         print('grandchild', ' '.join(sorted(l.split('=')[0] for l in out.splitlines() if l.startswith('MARK_'))) or '-')\n",
    );
    // A plain sh removes its working directory, then starts python3 under the shim
    // with ENVSHIM_POLICY=policy.toml, relative, as the first process.
    let inner = format!(
        "cd gone && rmdir \"$PWD\" && exec env LD_PRELOAD={} ENVSHIM_POLICY=policy.toml {} -c {}",
        sh_quote(&shim_so().to_string_lossy()),
        sh_quote(&python3().to_string_lossy()),
        sh_quote(&script)
    );
    let out =
        w.sb.cmd("/bin/sh")
            .args(["-c", &inner])
            .env("MARK_C", "c")
            .expect_success();
    assert_eq!(
        out.stdout_str(),
        "after-cd -\ngrandchild -\n",
        "the floor stays after the cd: stderr: {}",
        out.stderr_str()
    );
    assert!(
        out.stderr_str()
            .contains("gone (deleted)/policy.toml not found; using the fail-closed floor"),
        "{}",
        out.stderr_str()
    );
}

/// Counts the opens of one file while it is watched (inotify `IN_OPEN`).
struct OpenCounter {
    fd: i32,
}

impl OpenCounter {
    fn watch(path: &Path) -> OpenCounter {
        use std::os::unix::ffi::OsStrExt;
        // SAFETY: inotify_init1 has no preconditions.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        assert!(fd >= 0, "inotify_init1");
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        // With the closes too: inotify merges an event with an identical one
        // queued just before it, so two opens in a row would count as one.
        let mask = libc::IN_OPEN | libc::IN_CLOSE_NOWRITE;
        // SAFETY: a NUL-terminated path that outlives the call, and our descriptor.
        let wd = unsafe { libc::inotify_add_watch(fd, c.as_ptr(), mask) };
        assert!(wd >= 0, "inotify_add_watch {}", path.display());
        OpenCounter { fd }
    }

    /// The opens seen so far.
    fn opens(&self) -> usize {
        let mut n = 0;
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: our descriptor, and a writable buffer of its length.
            let r = unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), buf.len()) };
            if r <= 0 {
                return n;
            }
            let mut at = 0usize;
            while at + 16 <= r as usize {
                let len = u32::from_ne_bytes(buf[at + 12..at + 16].try_into().unwrap()) as usize;
                let mask = u32::from_ne_bytes(buf[at + 4..at + 8].try_into().unwrap());
                if mask & libc::IN_OPEN != 0 {
                    n += 1;
                }
                at += 16 + len;
            }
        }
    }
}

impl Drop for OpenCounter {
    fn drop(&mut self) {
        // SAFETY: our own descriptor.
        unsafe { libc::close(self.fd) };
    }
}

/// A hinted process whose threads all spawn at once, before any of them has
/// loaded the policy: each exec is judged by the policy file; one thread loads
/// it, and the others wait for that load instead of each loading it again. The
/// cache is opened twice in all, by the shell's constructor and by that one
/// load, and mapped by none (it is read, adr/0022).
#[test]
fn threads_of_a_hinted_process_that_spawn_at_once_all_get_the_policy() {
    let w = World::new("hint_threads");
    // The cache, compiled first, so that the run below only reads it.
    w.sh("true").expect_success();
    let cache = std::fs::read_dir(w.cache_dir())
        .expect("the cache directory")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "bin"))
        .expect("the compiled cache");
    let counter = OpenCounter::watch(&cache);
    let script = r#"
import subprocess, threading
barrier = threading.Barrier(8)
seen = []
def run():
    barrier.wait()
    out = subprocess.run(["env"], stdout=subprocess.PIPE, text=True).stdout
    seen.append(" ".join(sorted(l.split("=")[0] for l in out.splitlines() if l.startswith("MARK_"))))
threads = [threading.Thread(target=run) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print("\n".join(seen))
print("cache mappings:", open("/proc/self/maps").read().count(".bin"))
"#;
    let out = w
        .sh(&format!(
            "exec {} -c {}",
            sh_quote(&python3().to_string_lossy()),
            sh_quote(script)
        ))
        .expect_success();
    // One load, which the other threads waited for; no mapping of the cache.
    assert_eq!(
        out.stdout_str(),
        format!("{}cache mappings: 0\n", "MARK_B\n".repeat(8)),
        "{}",
        out.stderr_str()
    );
    assert_eq!(
        counter.opens(),
        2,
        "the cache was not opened once by the shell and once by the python3 it became"
    );
    assert!(shim_lines(&out.stderr).is_empty(), "{}", out.stderr_str());
}
