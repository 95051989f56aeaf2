//! Imported env files under the shim: a file's current value reaches every exec.
//!
//! libenvshim.so keeps the files a policy imports between execs and reads a file
//! again only when its `stat` changes (shim/src/state/env_cache.rs). These tests change
//! the file between execs of ONE process (a python3 script under the shim), the case
//! the cache could get wrong, and check what each child received.

use envshim_e2e::*;

const POLICY: &str = "version = 1
base = \"all\"
keep = [\"HTTPS_PROXY\"]

[[import.env_file]]
path = \"proxy.env\"
role = \"strip\"
values = true
";

/// Runs `script` with python3 under the shim and the test policy, the env file
/// holding `contents` and named by `argv[1]`, and `HTTPS_PROXY` set in the
/// environment to a value the file must override.
fn run_python(name: &str, contents: &str, script: &str) -> Outcome {
    let sb = Sandbox::new(name);
    let policy = sb.write("policy.toml", POLICY);
    let file = sb.write("proxy.env", contents);
    sb.cmd("python3")
        .arg("-c")
        .arg(script)
        .arg(&file)
        .env("HTTPS_PROXY", "http://from-the-environment:1")
        .with_shim()
        .with_policy(&policy)
        .expect_success()
}

/// A python3 script under the shim spawns `printenv HTTPS_PROXY` around changes to
/// the env file, by `subprocess.run` (CPython execs in a `vfork` child, which
/// shares the parent's memory, so the cache lives on in the parent) and by
/// `os.posix_spawn` (the shim decides in the parent), and prints each child's
/// answer. bash would not do: it forks for every command, so each child starts
/// from the parent's copy of the cache.
const SCRIPT: &str = r#"
import os, subprocess, sys
path = sys.argv[1]
# Where python3 is itself a wrapper script (pyenv), the shim already gave this
# process the file's value; a deleted file leaves the process's own value.
print("own: " + os.environ["HTTPS_PROXY"])
def show(label):
    r = subprocess.run(["printenv", "HTTPS_PROXY"], capture_output=True, text=True)
    print(label + ": " + (r.stdout.strip() or "unset"))
    r, w = os.pipe()
    pid = os.posix_spawnp("printenv", ["printenv", "HTTPS_PROXY"], os.environ,
                          file_actions=[(os.POSIX_SPAWN_DUP2, w, 1)])
    os.close(w)
    out = os.read(r, 4096).decode().strip()
    os.close(r)
    os.waitpid(pid, 0)
    print(label + " (posix_spawn): " + (out or "unset"))
def write(text, replace=False):
    target = path + ".new" if replace else path
    with open(target, "w") as f:
        f.write("HTTPS_PROXY=" + text + "\n")
    if replace:
        os.rename(target, path)
show("first")
show("unchanged")
# Same size, same inode: only the times tell the change apart.
write("http://proxy-two:3128")
show("rewritten")
show("again")
# A longer value, through a new inode.
write("http://proxy-three.example:3128", replace=True)
show("replaced")
os.remove(path)
show("deleted")
"#;

#[test]
fn a_changed_env_file_value_reaches_the_next_exec_of_the_same_process() {
    let out = run_python(
        "env-file-reread",
        "HTTPS_PROXY=http://proxy-one:3128\n",
        SCRIPT,
    );
    let stdout = out.stdout_str();
    let own = stdout
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("own: "))
        .unwrap_or("")
        .to_string();
    out.check(
        own == "http://from-the-environment:1" || own == "http://proxy-one:3128",
        "python3's own HTTPS_PROXY is the environment's, or the file's",
    );
    let mut expected = format!("own: {own}\n");
    for (label, value) in [
        ("first", "http://proxy-one:3128"),
        ("unchanged", "http://proxy-one:3128"),
        ("rewritten", "http://proxy-two:3128"),
        ("again", "http://proxy-two:3128"),
        ("replaced", "http://proxy-three.example:3128"),
        ("deleted", own.as_str()),
    ] {
        expected.push_str(&format!(
            "{label}: {value}\n{label} (posix_spawn): {value}\n"
        ));
    }
    out.check(
        stdout == expected,
        &format!("each child should see the env file's value at its exec:\n{expected}"),
    );
}

/// bash forks a child per command, and each child starts from a copy of bash's
/// cache. The shim's `fork` hook brings that cache up to date at most once a tenth
/// of a second (env_cache::refresh), so here, where the file changes between
/// commands a few milliseconds apart, the copies are stale: every child must see
/// the change by its own `stat`. The values differ in length, so the change shows
/// in the file's size too, whatever the file system's timestamp granularity.
const SHELL_SCRIPT: &str = r#"
f=$1
printenv HTTPS_PROXY
printf 'HTTPS_PROXY=http://proxy-two.example:3128\n' > "$f"
printenv HTTPS_PROXY
printf 'HTTPS_PROXY=http://proxy-three.example.org:3128\n' > "$f.new"
mv "$f.new" "$f"
printenv HTTPS_PROXY
printenv HTTPS_PROXY
rm "$f"
printenv HTTPS_PROXY || echo unset
"#;

#[test]
fn a_changed_env_file_value_reaches_the_next_command_of_the_same_shell() {
    let sb = Sandbox::new("env-file-shell");
    let policy = sb.write("policy.toml", POLICY);
    let file = sb.write("proxy.env", "HTTPS_PROXY=http://proxy-one:3128\n");
    let out = sb
        .cmd("bash")
        .arg("-c")
        .arg(SHELL_SCRIPT)
        .arg("bash")
        .arg(&file)
        .env("HTTPS_PROXY", "http://from-the-environment:1")
        .with_shim()
        .with_policy(&policy)
        .expect_success();
    // bash itself holds the environment's value (the test starts it without the
    // shim): a child gets that once the file is gone.
    let expected = "http://proxy-one:3128\n\
                    http://proxy-two.example:3128\n\
                    http://proxy-three.example.org:3128\n\
                    http://proxy-three.example.org:3128\n\
                    http://from-the-environment:1\n";
    out.check(
        out.stdout_str() == expected,
        &format!("each command should see the env file's value at its exec:\n{expected}"),
    );
}

/// Four threads spawn at once while the main thread rewrites the file: every
/// child sees one of the file's values, whole.
const THREADS: &str = r#"
import os, subprocess, sys, threading
path = sys.argv[1]
seen = []
def worker():
    for _ in range(40):
        r = subprocess.run(["printenv", "HTTPS_PROXY"], capture_output=True, text=True)
        seen.append(r.stdout.strip())
ts = [threading.Thread(target=worker) for _ in range(4)]
for t in ts: t.start()
for _ in range(100):
    for v in ("bbbb", "aaaa"):
        tmp = path + ".new"
        with open(tmp, "w") as f:
            f.write("HTTPS_PROXY=http://proxy-" + v + ":3128\n")
        os.rename(tmp, path)
for t in ts: t.join()
print("\n".join(seen))
"#;

#[test]
fn threads_racing_a_rewrite_see_whole_values() {
    let out = run_python(
        "env-file-threads",
        "HTTPS_PROXY=http://proxy-aaaa:3128\n",
        THREADS,
    );
    let stdout = out.stdout_str();
    let lines: Vec<&str> = stdout.lines().collect();
    out.check(lines.len() == 160, "160 children should have printed");
    // The file is replaced by rename, so it always holds one whole value.
    let allowed = ["http://proxy-aaaa:3128", "http://proxy-bbbb:3128"];
    out.check(
        lines.iter().all(|l| allowed.contains(l)),
        "every child should see one whole value of the file",
    );
}

/// A file with `role = "refuse"`: its values are credentials, and an argument that
/// holds one is refused. The shim keeps the files' credential values with the
/// cached bytes; after a rewrite, the new value is refused and the old one runs.
const REFUSE_POLICY: &str = "version = 1
base = \"all\"

[[import.env_file]]
path = \"deploy.env\"
role = \"refuse\"
";

const ARGV_SCRIPT: &str = r#"
import os, subprocess, sys
path = sys.argv[1]
# The two values come from a file of their own: in python3's own argv the first
# one would already be refused (where python3 is a wrapper script).
with open(sys.argv[2]) as f:
    one, two = f.read().split()
def run(label, value):
    try:
        subprocess.run(["true", "--flag=" + value], check=True)
        print(label + ": ran")
    except PermissionError:
        print(label + ": refused")
run("one before", one)
run("two before", two)
tmp = path + ".new"
with open(tmp, "w") as f:
    # A line more before the value: it moves in the file.
    f.write("OTHER=x\nDEPLOY_KEY=" + two + "\n")
os.rename(tmp, path)
run("one after", one)
run("two after", two)
"#;

#[test]
fn an_argument_holding_a_value_of_a_refused_file_is_refused_after_a_rewrite_too() {
    let sb = Sandbox::new("env-file-argv");
    let policy = sb.write("policy.toml", REFUSE_POLICY);
    // Plain values (no token shape): only the file makes them credentials. Of
    // different lengths, so that a value kept from before the rewrite would not
    // still fit the new bytes.
    let (one, two) = (
        "plain-deploy-value-one-4711",
        "plain-deploy-value-number-two-0815",
    );
    let file = sb.write("deploy.env", format!("DEPLOY_KEY={one}\n"));
    let values = sb.write("values", format!("{one} {two}\n"));
    let out = sb
        .cmd("python3")
        .arg("-c")
        .arg(ARGV_SCRIPT)
        .arg(&file)
        .arg(&values)
        .with_shim()
        .with_policy(&policy)
        .expect_success();
    out.check(
        out.stdout_str()
            == "one before: refused\ntwo before: ran\none after: ran\ntwo after: refused\n",
        "the file's current value is refused in argv, before and after the rewrite",
    );
    let stderr = out.stderr_str();
    out.check(
        stderr.contains("DEPLOY_KEY") && !stderr.contains(one) && !stderr.contains(two),
        "the refusal names DEPLOY_KEY and never its value",
    );
}

/// The file now holds a value the policy refuses (a token's shape): neither it nor
/// the stale inherited value reaches the child, and both front ends say so, under
/// the shim on stderr and in the log, naming the variable, never the value.
#[test]
fn a_refused_file_value_takes_the_inherited_value_with_it() {
    let sb = Sandbox::new("env_files_refused_value");
    let log = sb.join("audit.log");
    // POLICY with a log, which must come before its tables.
    let policy = sb.write(
        "policy.toml",
        POLICY.replace(
            "[[import.env_file]]",
            &format!("log = \"{}\"\n\n[[import.env_file]]", log.display()),
        ),
    );
    let tok = sb.secrets().value("GH_TOKEN").to_string();
    sb.write("proxy.env", format!("HTTPS_PROXY={tok}\n"));
    let mut c = sb.cmd("/bin/sh");
    c.args(["-c", "exec env"])
        .with_shim()
        .with_policy(&policy)
        .env("HTTPS_PROXY", "http://stale.example:3128");
    let out = c.expect_success();
    assert!(
        !out.stdout_str().contains("HTTPS_PROXY="),
        "a value the file no longer vouches for passed: {}",
        out.report()
    );
    assert!(
        out.stderr_str()
            .contains("refused HTTPS_PROXY (its env file's value) for "),
        "{}",
        out.report()
    );
    let logged = sb.read("audit.log");
    sb.secrets().assert_absent("the log", &logged);
    assert!(String::from_utf8_lossy(&logged).contains("env-file.refused"));
    let out = sb
        .cmd(envwrap_bin())
        .arg("--policy")
        .arg(&policy)
        .args(["--", "env"])
        .env("HTTPS_PROXY", "http://stale.example:3128")
        .expect_success();
    assert!(
        !out.stdout_str().contains("HTTPS_PROXY="),
        "{}",
        out.report()
    );
    assert!(out.stderr_str().contains("HTTPS_PROXY"), "{}", out.report());
}

/// A name added to an imported env file while a process runs (a tmux server, a
/// daemon) is stripped, or refused for `role = "refuse"`, at that process's next
/// exec, as it is for a new process: the file is read as it is at each exec.
#[test]
fn a_name_added_to_an_env_file_counts_in_a_running_process() {
    let sb = Sandbox::new("env_files_new_names");
    let policy = sb.write(
        "policy.toml",
        "version = 1\nbase = \"all\"\n\
         [[import.env_file]]\npath = \"strip.env\"\nrole = \"strip\"\n\
         [[import.env_file]]\npath = \"refuse.env\"\nrole = \"refuse\"\n",
    );
    sb.write("strip.env", "OLD_NAME=1\n");
    sb.write("refuse.env", "OLD_REFUSED=1\n");
    let script = "env > before.out\n\
         printf 'NEW_NAME=1\\n' >> strip.env\n\
         printf 'NEW_REFUSED=1\\n' >> refuse.env\n\
         env > after.out\n";
    let mut c = sb.cmd("/bin/bash");
    c.args(["-c", script])
        .with_shim()
        .with_policy(&policy)
        .env("OLD_NAME", "a")
        .env("NEW_NAME", "b")
        .env("NEW_REFUSED", "c")
        .env("KEPT", "d");
    c.expect_success();
    let read = |f: &str| String::from_utf8_lossy(&sb.read(f)).into_owned();
    let (before, after) = (read("before.out"), read("after.out"));
    assert!(
        !before.contains("OLD_NAME=") && before.contains("NEW_NAME=b"),
        "{before}"
    );
    assert!(before.contains("NEW_REFUSED=c"), "{before}");
    assert!(
        !after.contains("NEW_NAME="),
        "a name added to strip.env passed: {after}"
    );
    assert!(
        !after.contains("NEW_REFUSED="),
        "a name added to refuse.env passed: {after}"
    );
    assert!(after.contains("KEPT=d"), "{after}");
}
