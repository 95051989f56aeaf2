//! Policy-file trust end to end (envpolicy::trust, envpolicy::writers): a policy file,
//! or an env file it imports, that group or others can write, or that another
//! unprivileged user owns, is not used. libenvshim.so then enforces the
//! fail-closed floor and the process's stderr holds one line naming the file and
//! why; envwrap exits 125 with that line.
//!
//! Each test runs `sh -c 'exec env'` under the shim, with the cache in the policy's
//! directory (`ENVSHIM_CACHE_DIR`, from `ShimExt::with_policy`). `MARK` is outside
//! the floor: present under the test policy, gone under the floor.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use envshim_e2e::*;

/// Keeps everything, MARK included.
const POLICY: &str = "version = 1\nbase = \"all\"\n";

/// What the child of a shimmed `sh` received, and the shim's and envwrap's lines.
struct Seen {
    floor: bool,
    vars: Vec<String>,
    messages: Vec<String>,
    stderr: String,
}

fn observe(sb: &Sandbox, policy: &Path) -> Seen {
    let mut c = sb.cmd("/bin/sh");
    c.args(["-c", "exec env"])
        .with_shim()
        .with_policy(policy)
        .env("HOME", policy.parent().unwrap())
        .env_secrets()
        .env("MARK", "m");
    let out = c.expect_success();
    let vars: Vec<String> = out.stdout_str().lines().map(str::to_string).collect();
    let has = |n: &str| vars.iter().any(|l| l.starts_with(&format!("{n}=")));
    let stderr = out.stderr_str();
    let messages = stderr
        .lines()
        .filter(|l| l.starts_with("envshim: ") || l.starts_with("envwrap: "))
        .filter(|l| !is_withheld_line(l))
        .map(str::to_string)
        .collect();
    Seen {
        floor: !has("MARK") && has("PATH"),
        vars,
        messages,
        stderr,
    }
}

/// `chmod`; a mode with group write first gives the file to a group with other
/// members (group write in the user's private group is trusted).
fn chmod(p: &Path, mode: u32) {
    if mode & 0o020 != 0 {
        assert!(give_to_a_shared_group(p), "no group to share the file with");
    }
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Write a file with mode 0644, whatever the umask (0002 would make it untrusted).
fn write(sb: &Sandbox, rel: &str, contents: impl AsRef<[u8]>) -> PathBuf {
    let p = sb.write(rel, contents);
    chmod(&p, 0o644);
    p
}

/// The one line on stderr, naming `file` and saying `why`.
#[track_caller]
fn one_line_naming(seen: &Seen, file: &Path, why: &str) {
    assert_eq!(seen.messages.len(), 1, "{:?}", seen.messages);
    assert_eq!(
        seen.stderr.lines().count(),
        1,
        "nothing else on stderr: {}",
        seen.stderr
    );
    let line = &seen.messages[0];
    assert!(
        line.contains(&file.display().to_string()),
        "names {}: {line}",
        file.display()
    );
    assert!(line.contains(why), "says {why:?}: {line}");
}

#[test]
fn group_writable_policy_gives_the_floor_and_one_warning() {
    let sb = Sandbox::new("trust_policy_mode");
    let policy = write(&sb, "p/policy.toml", POLICY);
    chmod(&policy, 0o620);

    // The process that compiles: the compile's line is the one warning, in the
    // shim's voice.
    let seen = observe(&sb, &policy);
    assert!(seen.floor, "the floor is in force: {:?}", seen.vars);
    one_line_naming(&seen, &policy, "writable");
    assert!(
        seen.messages[0].starts_with("envshim: "),
        "{:?}",
        seen.messages
    );

    // Later processes read the failure marker: still the floor, one line.
    let seen = observe(&sb, &policy);
    assert!(seen.floor, "{:?}", seen.vars);
    one_line_naming(&seen, &policy, "writable by group or others");
    assert!(
        seen.messages[0].ends_with("using the fail-closed floor"),
        "{:?}",
        seen.messages
    );

    // Fixed (a mode change only): the policy is in force again, quietly.
    chmod(&policy, 0o644);
    let seen = observe(&sb, &policy);
    assert!(!seen.floor, "{:?}", seen.vars);
    assert!(seen.vars.iter().any(|v| v == "MARK=m"));
    assert!(seen.messages.is_empty(), "{:?}", seen.messages);
}

#[test]
fn world_writable_env_file_import_gives_the_floor() {
    // The env file's names decide what is stripped: one anyone can write could
    // empty it. Optional or not, it is refused.
    let sb = Sandbox::new("trust_envfile_mode");
    let env = write(&sb, "p/loop.env", sb.secrets().env_file_contents());
    let policy = write(
        &sb,
        "p/policy.toml",
        "version = 1\nbase = \"all\"\n[[import.env_file]]\npath = \"loop.env\"\nrole = \"refuse\"\n",
    );
    chmod(&env, 0o666);
    let seen = observe(&sb, &policy);
    assert!(seen.floor, "{:?}", seen.vars);
    one_line_naming(&seen, &env, "writable by group or others");
    assert!(
        seen.messages[0].contains(&policy.display().to_string()),
        "also names the policy that imports it: {:?}",
        seen.messages
    );
}

#[test]
fn env_file_made_writable_after_compiling_gives_the_floor_at_the_next_start() {
    // An env file whose values are read at each exec: its cache records its ctime,
    // so a chmod alone makes the next process start compile again, and refuse it.
    let sb = Sandbox::new("trust_envfile_later");
    let env = write(&sb, "p/pass.env", "PROXY_HOST=proxy.invalid\n");
    let policy = write(
        &sb,
        "p/policy.toml",
        "version = 1\nbase = \"all\"\nkeep = [\"PROXY_HOST\"]\n[[import.env_file]]\npath = \"pass.env\"\nvalues = true\n",
    );
    let seen = observe(&sb, &policy);
    assert!(!seen.floor, "{:?}", seen.vars);
    assert!(seen.vars.iter().any(|v| v == "PROXY_HOST=proxy.invalid"));
    assert!(seen.messages.is_empty(), "{:?}", seen.messages);

    chmod(&env, 0o620);
    let seen = observe(&sb, &policy);
    assert!(seen.floor, "{:?}", seen.vars);
    one_line_naming(&seen, &env, "writable");
}

#[test]
fn policy_owned_by_another_user_gives_the_floor() {
    if envpolicy::trust::effective_uid() != 0 {
        eprintln!("skipped: chown to uid 65534 needs root");
        return;
    }
    let sb = Sandbox::new("trust_policy_owner");
    let policy = write(&sb, "p/policy.toml", POLICY);
    std::os::unix::fs::chown(&policy, Some(65534), Some(65534)).unwrap();
    let seen = observe(&sb, &policy);
    assert!(seen.floor, "{:?}", seen.vars);
    one_line_naming(&seen, &policy, "owned by uid 65534");
}

#[test]
fn envwrap_refuses_an_untrusted_policy_with_125() {
    let sb = Sandbox::new("trust_envwrap");
    let policy = write(&sb, "policy.toml", POLICY);
    chmod(&policy, 0o666);
    let out = sb
        .cmd(envwrap_bin())
        .arg("--policy")
        .arg(&policy)
        .args(["--", "true"])
        .env_secrets()
        .expect_exit(125);
    assert_eq!(
        out.stderr_str(),
        format!(
            "envwrap: {}: policy file is not trusted: writable by group or others (mode 0666); only its owner and root may write it\n",
            policy.display()
        )
    );
    assert!(out.stdout.is_empty());
    // check says the same.
    let out = sb
        .cmd(envwrap_bin())
        .arg("check")
        .arg(&policy)
        .expect_exit(125);
    assert!(
        out.stderr_str().contains("policy file is not trusted"),
        "{}",
        out.stderr_str()
    );
}

/// A policy file, a config file or a strip-only env file made group-writable AFTER
/// the cache was compiled, its contents unchanged: the cache is still fresh, but the
/// shim checks the trust of every file the policy was compiled from as it is now,
/// so the next process start enforces the floor with one line naming the file.
/// envwrap refuses the file at its next run. Made private again, the policy is back
/// in force without a compile; rewritten while writable, the next start compiles,
/// refuses it, and enforces the floor, naming the file.
#[test]
fn file_made_writable_after_compiling_gives_the_floor() {
    let sb = Sandbox::new("trust_writable_later");
    for (i, which) in ["policy", "config", "env"].into_iter().enumerate() {
        let dir = format!("p{i}");
        let env = write(&sb, &format!("{dir}/strip.env"), "STRIPPED=from-the-file\n");
        let config = write(
            &sb,
            &format!("{dir}/config.json"),
            r#"{"bot": {"ghTokenEnv": "CONFIG_NAMED"}}"#,
        );
        let policy = write(
            &sb,
            &format!("{dir}/policy.toml"),
            "version = 1\nbase = \"all\"\n\
             [[import.env_file]]\npath = \"strip.env\"\nrole = \"strip\"\n\
             [[import.config]]\npath = \"config.json\"\n",
        );
        let file = match which {
            "policy" => &policy,
            "config" => &config,
            _ => &env,
        };
        let look = |what: &str| {
            let mut c = sb.cmd("/bin/sh");
            c.args(["-c", "exec env"])
                .with_shim()
                .with_policy(&policy)
                .env("HOME", policy.parent().unwrap())
                .env_secrets()
                .env("MARK", "m")
                .env("STRIPPED", "s")
                .env("CONFIG_NAMED", "c");
            let out = c.expect_success();
            let stdout = out.stdout_str();
            let has = |n: &str| stdout.lines().any(|l| l.starts_with(&format!("{n}=")));
            let in_force = has("MARK") && !has("STRIPPED") && !has("CONFIG_NAMED");
            let floor = !has("MARK") && has("PATH");
            assert!(
                in_force || floor,
                "{which}, {what}: neither\n{}",
                out.report()
            );
            let lines: Vec<String> = out
                .stderr_str()
                .lines()
                .filter(|l| !is_withheld_line(l))
                .map(str::to_string)
                .collect();
            (floor, lines)
        };

        // The floor in force, with one line naming the file and why.
        let floor_naming_the_file = |what: &str| {
            let (floor, lines) = look(what);
            assert!(floor, "{which}: the floor is not in force ({what})");
            assert_eq!(lines.len(), 1, "{which}, {what}: {lines:?}");
            assert!(
                lines[0].contains(&file.display().to_string())
                    && lines[0].contains("writable by group or others"),
                "{which}, {what}: {lines:?}"
            );
        };

        let (floor, lines) = look("compiled");
        assert!(!floor && lines.is_empty(), "{which}: {lines:?}");

        chmod(file, 0o620);
        floor_naming_the_file("made writable");

        // Private again: the same cache is in force again, quietly.
        chmod(file, 0o644);
        let (floor, lines) = look("private again");
        assert!(!floor && lines.is_empty(), "{which}: {lines:?}");
        chmod(file, 0o620);

        // envwrap compiles at every run: it refuses the file now.
        let marker = sb.join(format!("{dir}/ran"));
        let out = sb
            .cmd(envwrap_bin())
            .arg("--policy")
            .arg(&policy)
            .args(["--no-preload", "touch"])
            .arg(&marker)
            .env_secrets()
            .expect_exit(125);
        let err = out.stderr_str();
        assert!(
            err.contains(&format!("{} is not trusted", file.display()))
                || err.contains(&format!("{}: policy file is not trusted", file.display())),
            "{which}: envwrap does not name the file: {err}"
        );
        assert!(
            err.contains("writable by group or others (mode 0620)"),
            "{err}"
        );
        assert!(!marker.exists(), "{which}: envwrap ran the command");

        // The same contents written again: the file changed, so the next start
        // compiles, refuses it, and enforces the floor.
        let contents = std::fs::read(file).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(file, contents).unwrap();
        floor_naming_the_file("rewritten");
    }
}

/// Under umask 002 (Debian's user private groups) a fresh policy file is 0664 in
/// the user's own group: trusted, as OpenSSH trusts such a `~/.ssh`. The same file
/// in a group with other members gives the floor.
#[test]
fn a_policy_writable_by_the_users_private_group_is_in_force() {
    let Some(gid) = private_group() else {
        eprintln!("skipped: this user has no private group");
        return;
    };
    let sb = Sandbox::new("trust_private_group");
    let policy = write(&sb, "p/policy.toml", POLICY);
    std::os::unix::fs::chown(&policy, None, Some(gid)).unwrap();
    std::fs::set_permissions(&policy, std::fs::Permissions::from_mode(0o664)).unwrap();
    let seen = observe(&sb, &policy);
    assert!(!seen.floor, "{:?} {:?}", seen.vars, seen.messages);
    assert!(seen.messages.is_empty(), "{:?}", seen.messages);
    // Once more, from the cache the first run wrote.
    let seen = observe(&sb, &policy);
    assert!(
        !seen.floor && seen.messages.is_empty(),
        "{:?}",
        seen.messages
    );
    // Another group: refused.
    chmod(&policy, 0o664);
    let seen = observe(&sb, &policy);
    assert!(seen.floor, "{:?}", seen.vars);
    one_line_naming(&seen, &policy, "writable");
}
