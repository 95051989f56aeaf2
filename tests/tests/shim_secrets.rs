//! `[[secret]]` under the shim (issue 32, docs/adr/0019-secrets-delivered-at-exec.md):
//! the value is read at the exec of a matching program, in the process that
//! becomes it, and no process above it holds it.
//!
//! The program is a fake `gh`: a bash script that prints `got` when `GH_TOKEN`
//! holds the test's fake token (compared inside the script, so that no output
//! holds the value) and `none` otherwise, and that can start a child (a script
//! of another name) that reports the same way. The token is made up here and
//! never printed; every test also checks that no output holds it.

use std::path::{Path, PathBuf};

use envshim_e2e::*;

/// A made-up token, of a shape no real service issues (and not one the
/// harness's own fake secrets use).
const TOKEN: &str = "envshim-test-token-7Qx2Lr9vKd41ZpWm";

/// What `gh` and its child print: `got` or `none`, from a comparison inside
/// the script.
fn reporter(label: &str) -> String {
    format!(
        "if [ \"${{GH_TOKEN-}}\" = '{TOKEN}' ]; then echo \"{label}: got\"; else echo \"{label}: none\"; fi\n"
    )
}

/// The sandbox's `bin/gh` and `bin/gh-child`: `gh spawn` also runs its child
/// (which is no program of the secret's), `gh auth token` is the command a
/// deny_args list refuses.
fn fake_gh(sb: &Sandbox) -> PathBuf {
    let bin = sb.mkdir("bin");
    sb.write_executable(
        "bin/gh-child",
        format!("#!/bin/bash\n{}", reporter("child")),
    );
    sb.write_executable(
        "bin/gh",
        format!(
            "#!/bin/bash\n{}if [ \"${{1-}}\" = spawn ]; then \"$(dirname \"$0\")/gh-child\"; fi\n",
            reporter("gh")
        ),
    );
    bin
}

/// The policy: `GH_TOKEN` from `from`, for the sandbox's `bin/gh` (a secret's
/// program is a path, and goes only to a file root owns: the tests run as
/// root in CI), refusing `gh auth token`.
fn policy(sb: &Sandbox, from: &str) -> PathBuf {
    sb.write(
        "policy.toml",
        format!(
            "version = 1\n\n[[secret]]\nname = \"GH_TOKEN\"\nfrom = \"{from}\"\nprogram = \"{}\"\ndeny_args = [[\"auth\", \"token\"]]\n",
            sb.join("bin/gh").display()
        ),
    )
}

/// The token in `secrets/gh`, with `mode`.
fn token_file(sb: &Sandbox, mode: u32) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    sb.mkdir("secrets");
    let file = sb.write("secrets/gh", format!("{TOKEN}\n"));
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
    file
}

/// `script` run by bash under the shim with `policy`, the fake gh first in
/// PATH, and no `GH_TOKEN` anywhere in its environment.
fn bash_under_shim(sb: &Sandbox, bin: &Path, policy: &Path, script: &str) -> Outcome {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    sb.cmd("bash")
        .arg("-c")
        .arg(script)
        .env("PATH", path)
        .env_remove("GH_TOKEN")
        .env_remove("ENVSHIM_ENVWRAP")
        .with_shim()
        .with_policy(policy)
        .run()
}

/// No output of `out` holds the token.
fn assert_no_value(out: &Outcome) {
    assert!(
        !out.stdout_str().contains(TOKEN) && !out.stderr_str().contains(TOKEN),
        "an output holds the secret's value (not shown)"
    );
}

/// The lines of stdout, trimmed.
fn lines(out: &Outcome) -> Vec<String> {
    out.stdout_str()
        .lines()
        .map(|l| l.trim().to_string())
        .collect()
}

#[test]
fn a_fork_child_that_becomes_gh_gets_the_secret_and_nothing_above_or_beside_it_does() {
    let sb = Sandbox::new("secret_fork");
    let bin = fake_gh(&sb);
    let from = format!("file:{}", token_file(&sb, 0o600).display());
    let policy = policy(&sb, &from);
    // The same bash: gh (fork + exec), its own environment, gh's child, and its
    // own /proc environ, saved for the test to read.
    let out = bash_under_shim(
        &sb,
        &bin,
        &policy,
        "gh spawn; echo \"shell: $(env | grep -c GH_TOKEN || true)\"; tr '\\0' '\\n' < /proc/$$/environ > shell-environ.txt",
    );
    assert_no_value(&out);
    assert_eq!(
        lines(&out),
        ["gh: got", "child: none", "shell: 0"],
        "{}",
        out.report()
    );
    let environ = sb.read("shell-environ.txt");
    assert!(!environ.is_empty(), "bash saved no environ");
    assert!(
        !String::from_utf8_lossy(&environ).contains(TOKEN)
            && !String::from_utf8_lossy(&environ).contains("GH_TOKEN"),
        "the shell's /proc environ holds the secret"
    );
    assert!(shim_lines(&out.stderr).is_empty(), "{}", out.report());
}

#[test]
fn a_source_file_others_may_read_is_not_delivered_and_one_line_says_why() {
    let sb = Sandbox::new("secret_untrusted");
    let bin = fake_gh(&sb);
    let from = format!("file:{}", token_file(&sb, 0o644).display());
    let policy = policy(&sb, &from);
    let out = bash_under_shim(&sb, &bin, &policy, "gh");
    assert_no_value(&out);
    assert_eq!(lines(&out), ["gh: none"], "{}", out.report());
    let said = shim_lines(&out.stderr);
    assert_eq!(said.len(), 1, "{}", out.report());
    assert!(
        said[0].starts_with("envshim: secret GH_TOKEN not delivered to ")
            && said[0].contains("readable by others"),
        "{}",
        out.report()
    );
}

#[test]
fn a_missing_source_is_not_delivered_and_one_line_says_so() {
    let sb = Sandbox::new("secret_missing");
    let bin = fake_gh(&sb);
    let from = format!("file:{}", sb.join("secrets/none").display());
    let policy = policy(&sb, &from);
    let out = bash_under_shim(&sb, &bin, &policy, "gh");
    assert_eq!(lines(&out), ["gh: none"], "{}", out.report());
    let said = shim_lines(&out.stderr);
    assert_eq!(said.len(), 1, "{}", out.report());
    assert!(
        said[0].starts_with("envshim: secret GH_TOKEN not delivered to ")
            && said[0].ends_with("its source does not exist"),
        "{}",
        out.report()
    );
}

#[test]
fn gh_auth_token_is_refused_naming_the_deny_args_rule() {
    let sb = Sandbox::new("secret_deny_args");
    let bin = fake_gh(&sb);
    let from = format!("file:{}", token_file(&sb, 0o600).display());
    let policy = policy(&sb, &from);
    let out = bash_under_shim(&sb, &bin, &policy, "gh auth token");
    assert_no_value(&out);
    assert_eq!(out.status.code(), Some(126), "{}", out.report());
    assert!(lines(&out).is_empty(), "{}", out.report());
    let said = shim_lines(&out.stderr);
    assert!(
        said.iter().any(|l| l.contains(
            "argument 2 completes `auth token`, which deny_args of secret GH_TOKEN refuses"
        )),
        "{}",
        out.report()
    );
}

/// CPython's `subprocess` execs in a `vfork` child, on its parent's memory:
/// the shim routes the exec through envwrap, which reads the value in its own
/// process. Needs envwrap's run mode to deliver secrets (the envwrap branch of
/// issue 32).
#[test]
fn python_subprocess_gets_the_secret_through_envwrap() {
    let sb = Sandbox::new("secret_python");
    let bin = fake_gh(&sb);
    let from = format!("file:{}", token_file(&sb, 0o600).display());
    let policy = policy(&sb, &from);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = sb
        .cmd(python3())
        .arg("-c")
        .arg("import subprocess, os\nsubprocess.run(['gh'])\nprint('python: ' + str(sum(1 for k in os.environ if k == 'GH_TOKEN')))")
        .env("PATH", path)
        .env("ENVSHIM_ENVWRAP", envwrap_bin())
        .env_remove("GH_TOKEN")
        .with_shim()
        .with_policy(&policy)
        .run();
    assert_no_value(&out);
    assert_eq!(lines(&out), ["gh: got", "python: 0"], "{}", out.report());
}

/// Without an envwrap to route through, a `vfork` child's exec delivers
/// nothing: gh runs without the secret, and one line says why. (envwrap also
/// compiles the policy: a first run with it fills the policy's cache, which the
/// second, with `$ENVSHIM_ENVWRAP` naming nothing, uses.)
#[test]
fn python_subprocess_without_envwrap_runs_gh_without_the_secret_and_says_why() {
    let sb = Sandbox::new("secret_python_no_envwrap");
    let bin = fake_gh(&sb);
    let from = format!("file:{}", token_file(&sb, 0o600).display());
    let policy = policy(&sb, &from);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |envwrap: PathBuf| {
        sb.cmd(python3())
            .arg("-c")
            .arg("import subprocess\nsubprocess.run(['gh'])")
            .env("PATH", &path)
            .env("ENVSHIM_ENVWRAP", envwrap)
            .env_remove("GH_TOKEN")
            .with_shim()
            .with_policy(&policy)
            .run()
    };
    let primed = run(envwrap_bin());
    assert_eq!(lines(&primed), ["gh: got"], "{}", primed.report());
    let out = run(sb.join("no-envwrap-here"));
    assert_no_value(&out);
    assert_eq!(lines(&out), ["gh: none"], "{}", out.report());
    let said = shim_lines(&out.stderr);
    assert_eq!(said.len(), 1, "{}", out.report());
    assert!(
        said[0].starts_with("envshim: secret GH_TOKEN not delivered to ")
            && said[0].contains("envwrap was not found"),
        "{}",
        out.report()
    );
}

/// `os.posix_spawnp` decides in the parent: the shim starts envwrap instead.
#[test]
fn python_posix_spawn_gets_the_secret_through_envwrap() {
    let sb = Sandbox::new("secret_posix_spawn");
    let bin = fake_gh(&sb);
    let from = format!("file:{}", token_file(&sb, 0o600).display());
    let policy = policy(&sb, &from);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = sb
        .cmd(python3())
        .arg("-c")
        .arg("import os\npid = os.posix_spawnp('gh', ['gh'], os.environ)\nos.waitpid(pid, 0)")
        .env("PATH", path)
        .env("ENVSHIM_ENVWRAP", envwrap_bin())
        .env_remove("GH_TOKEN")
        .with_shim()
        .with_policy(&policy)
        .run();
    assert_no_value(&out);
    assert_eq!(lines(&out), ["gh: got"], "{}", out.report());
}

/// The static envwrap (as packaged) runs no preloaded shim of its own: the
/// value reaches gh because envwrap's run mode reads it itself (the dynamic
/// envwrap of the tests above delivers through the shim preloaded into it
/// too).
#[test]
fn python_subprocess_gets_the_secret_through_the_static_envwrap() {
    let sb = Sandbox::new("secret_python_static");
    let bin = fake_gh(&sb);
    let from = format!("file:{}", token_file(&sb, 0o600).display());
    let policy = policy(&sb, &from);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = sb
        .cmd(python3())
        .arg("-c")
        .arg("import subprocess\nsubprocess.run(['gh'])")
        .env("PATH", path)
        .env("ENVSHIM_ENVWRAP", static_envwrap_bin())
        .env_remove("GH_TOKEN")
        .with_shim()
        .with_policy(&policy)
        .run();
    assert_no_value(&out);
    assert_eq!(lines(&out), ["gh: got"], "{}", out.report());
}

/// Joins a new session keyring, adds a `user` key DESCRIPTION with the value in
/// FILE (its trailing newline dropped), and execs the rest of its arguments,
/// which inherit the keyring. Exit 3 when the kernel has no keyrings for us.
const ADD_KEY: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
KEYCTL_JOIN_SESSION_KEYRING, SYS_keyctl, SYS_add_key = 1, 250, 248
if os.uname().machine != "x86_64":
    SYS_keyctl, SYS_add_key = 219, 217
if libc.syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, None) < 0:
    sys.exit(3)
value = open(sys.argv[2], "rb").read().rstrip(b"\n")
if libc.syscall(SYS_add_key, b"user", sys.argv[1].encode(), value, len(value), ctypes.c_long(-3)) < 0:
    sys.exit(3)
os.execvp(sys.argv[3], sys.argv[3:])
"#;

#[test]
fn a_keyring_secret_is_read_from_the_session_keyring() {
    let sb = Sandbox::new("secret_keyring");
    let bin = fake_gh(&sb);
    let file = token_file(&sb, 0o600);
    let policy = policy(&sb, "keyring:user:envshim-test:gh");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |description: &str| {
        sb.cmd(python3())
            .arg("-c")
            .arg(ADD_KEY)
            .arg(description)
            .arg(&file)
            .arg("bash")
            .arg("-c")
            .arg("gh")
            .env("PATH", &path)
            .env_remove("GH_TOKEN")
            .with_shim()
            .with_policy(&policy)
            .run()
    };
    let out = run("envshim-test:gh");
    if out.status.code() == Some(3) {
        eprintln!(
            "skipped: this kernel gives the test no keyring ({})",
            out.report()
        );
        return;
    }
    assert_no_value(&out);
    assert_eq!(lines(&out), ["gh: got"], "{}", out.report());
    let other = run("envshim-test:another");
    assert_eq!(lines(&other), ["gh: none"], "{}", other.report());
    let said = shim_lines(&other.stderr);
    assert!(
        said.len() == 1 && said[0].ends_with("its source does not exist"),
        "{}",
        other.report()
    );
}

#[test]
fn a_credential_secret_is_read_from_the_credentials_directory() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new("secret_credential");
    let bin = fake_gh(&sb);
    let dir = sb.mkdir("credentials");
    let file = sb.write("credentials/gh-token", format!("{TOKEN}\n"));
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o400)).unwrap();
    let policy = policy(&sb, "credential:gh-token");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |credentials: Option<&Path>| {
        let mut c = sb.cmd("bash");
        c.arg("-c")
            .arg("gh")
            .env("PATH", &path)
            .env_remove("GH_TOKEN")
            .env_remove("CREDENTIALS_DIRECTORY");
        if let Some(d) = credentials {
            c.env("CREDENTIALS_DIRECTORY", d);
        }
        c.with_shim().with_policy(&policy).run()
    };
    let out = run(Some(&dir));
    assert_no_value(&out);
    assert_eq!(lines(&out), ["gh: got"], "{}", out.report());
    let outside = run(None);
    assert_eq!(lines(&outside), ["gh: none"], "{}", outside.report());
    let said = shim_lines(&outside.stderr);
    assert!(
        said.len() == 1 && said[0].contains("CREDENTIALS_DIRECTORY is not set"),
        "{}",
        outside.report()
    );
}

/// `system` and `popen` decide in the parent: a secret whose program is the
/// shell itself reaches it through envwrap. (The commands a shell runs are its
/// own fork children, which read for themselves: the first test.) The shell
/// sources the reporter, so that the comparison runs in `sh`, the secret's
/// program.
#[test]
fn system_and_popen_route_a_shell_that_gets_a_secret_through_envwrap() {
    let sb = Sandbox::new("secret_system_popen");
    let from = format!("file:{}", token_file(&sb, 0o600).display());
    let policy = sb.write(
        "policy.toml",
        format!(
            "version = 1\n\n[[secret]]\nname = \"GH_TOKEN\"\nfrom = \"{from}\"\nprogram = \"/bin/sh\"\n"
        ),
    );
    sb.write("report.sh", reporter("sh"));
    let script = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None)
sys.stdout.flush()
libc.system(b". ./report.sh")
libc.popen.restype = ctypes.c_void_p
stream = libc.popen(b". ./report.sh", b"r")
buf = ctypes.create_string_buffer(256)
libc.fgets.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p]
libc.fgets(buf, 256, ctypes.c_void_p(stream))
libc.pclose.argtypes = [ctypes.c_void_p]
libc.pclose(ctypes.c_void_p(stream))
print("popen " + buf.value.decode().strip())
"#;
    let out = sb
        .cmd(python3())
        .arg("-c")
        .arg(script)
        .env("ENVSHIM_ENVWRAP", envwrap_bin())
        .env_remove("GH_TOKEN")
        .with_shim()
        .with_policy(&policy)
        .run();
    assert_no_value(&out);
    // Where /bin/sh is a link (Debian's, to dash), no secret goes through it:
    // each link of a chain would have to be proven root's.
    let linked = std::fs::symlink_metadata("/bin/sh").is_ok_and(|m| m.file_type().is_symlink());
    if linked {
        assert_eq!(
            lines(&out),
            ["sh: none", "popen sh: none"],
            "{}",
            out.report()
        );
        let said = shim_lines(&out.stderr);
        assert!(
            !said.is_empty()
                && said
                    .iter()
                    .all(|l| l.contains("named through a symbolic link")),
            "{}",
            out.report()
        );
    } else {
        assert_eq!(
            lines(&out),
            ["sh: got", "popen sh: got"],
            "{}",
            out.report()
        );
    }
}

/// `env gh` and `xargs gh`: execvp with a bare name. A secret's program is a
/// path, so the shim decides each PATH candidate as the execve of its path.
#[test]
fn a_program_found_by_execvp_gets_the_secret() {
    let sb = Sandbox::new("secret_execvp");
    let bin = fake_gh(&sb);
    let from = format!("file:{}", token_file(&sb, 0o600).display());
    let policy = policy(&sb, &from);
    let out = bash_under_shim(&sb, &bin, &policy, "env gh; echo | xargs gh");
    assert_no_value(&out);
    assert_eq!(lines(&out), ["gh: got", "gh: got"], "{}", out.report());
}

/// A copy of gh that the user owns, or a link the user made to it, gets
/// nothing: a process of the user could have put anything there.
#[test]
fn a_program_the_user_could_replace_gets_nothing_and_one_line_says_why() {
    let sb = Sandbox::new("secret_replaceable");
    let bin = fake_gh(&sb);
    let from = format!("file:{}", token_file(&sb, 0o600).display());
    let policy = policy(&sb, &from);
    let gh = bin.join("gh");
    // Writable by its group: as good as the user's own.
    std::fs::set_permissions(&gh, std::os::unix::fs::PermissionsExt::from_mode(0o775)).unwrap();
    let out = bash_under_shim(&sb, &bin, &policy, "gh");
    assert_no_value(&out);
    assert_eq!(lines(&out), ["gh: none"], "{}", out.report());
    let said = shim_lines(&out.stderr);
    assert!(
        said.len() == 1 && said[0].contains("a process of yours could replace it"),
        "{}",
        out.report()
    );
    // A link where the program was, to a program root owns: not followed.
    std::fs::set_permissions(&gh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::rename(&gh, bin.join("gh-real")).unwrap();
    std::os::unix::fs::symlink(bin.join("gh-real"), &gh).unwrap();
    let out = bash_under_shim(&sb, &bin, &policy, "gh");
    assert_no_value(&out);
    assert_eq!(lines(&out), ["gh: none"], "{}", out.report());
    assert!(
        shim_lines(&out.stderr)
            .iter()
            .any(|l| l.contains("named through a symbolic link")),
        "{}",
        out.report()
    );
}

/// `deny_args` options match as gh parses them: `--show-token=true` and `-t`
/// inside a cluster of short options are refused as `--show-token` and `-t`
/// are; `--show-tokens` and `-h` alone are not (the fake gh runs and gets its
/// token).
#[test]
fn deny_args_options_match_as_the_program_parses_them() {
    let sb = Sandbox::new("secret_deny_options");
    let bin = fake_gh(&sb);
    let from = format!("file:{}", token_file(&sb, 0o600).display());
    let policy = sb.write(
        "policy.toml",
        format!(
            "version = 1\n\n[[secret]]\nname = \"GH_TOKEN\"\nfrom = \"{from}\"\nprogram = \"{}\"\n\
             deny_args = [[\"auth\", \"status\", \"--show-token\"], [\"auth\", \"status\", \"-t\"]]\n",
            sb.join("bin/gh").display()
        ),
    );
    let script = "for a in --show-token=true -ht -th -t=1 --show-tokens -h; do \
                  gh auth status \"$a\" >/dev/null; echo \"$a: $?\"; done";
    let out = bash_under_shim(&sb, &bin, &policy, script);
    assert_no_value(&out);
    let stdout = out.stdout_str();
    for (arg, code) in [
        ("--show-token=true", 126),
        ("-ht", 126),
        ("-th", 126),
        ("-t=1", 126),
        ("--show-tokens", 0),
        ("-h", 0),
    ] {
        assert!(
            stdout.lines().any(|l| l == format!("{arg}: {code}")),
            "gh auth status {arg}: expected exit {code}\n{}",
            out.report()
        );
    }
    let said = shim_lines(&out.stderr);
    assert!(
        said.iter()
            .any(|l| l.contains("which deny_args of secret GH_TOKEN refuses")),
        "{}",
        out.report()
    );
}

/// Inside a user namespace of its own (`unshare -Ur`), a file of the user's
/// appears root's and a mount of the user's can cover the program's path: the
/// secret is not delivered there, with one line that says why. The same gh
/// outside gets it.
#[test]
fn a_secret_is_not_delivered_inside_a_user_namespace() {
    let sb = Sandbox::new("secret_userns");
    let bin = fake_gh(&sb);
    let from = format!("file:{}", token_file(&sb, 0o600).display());
    let policy = policy(&sb, &from);
    let out = bash_under_shim(
        &sb,
        &bin,
        &policy,
        "gh; unshare -Ur bash -c 'gh' || echo \"unshare: $?\"",
    );
    assert_no_value(&out);
    assert_eq!(lines(&out), ["gh: got", "gh: none"], "{}", out.report());
    let said = shim_lines(&out.stderr);
    assert!(
        said.iter()
            .any(|l| l.contains("secret GH_TOKEN not delivered to")
                && l.ends_with("the program runs in a user namespace of its own, where a file of yours can appear to be root's")),
        "{}",
        out.report()
    );
}

/// A secret delivered to a program the shim cannot load into (static) says
/// so once: nothing keeps the secret from that program's children. The same
/// delivery to a dynamic program (the fake gh, a bash script) says nothing.
#[test]
fn a_secret_delivered_to_a_static_program_says_its_children_inherit_it() {
    let sb = Sandbox::new("secret_static_gh");
    let bin = fake_gh(&sb);
    let from = format!("file:{}", token_file(&sb, 0o600).display());
    let policy = policy(&sb, &from);
    let line = "envshim: GH_TOKEN delivered to gh; it is statically linked, so no shim loads \
                into it, and nothing supervises it: its children inherit GH_TOKEN; use envwrap \
                --supervise";
    let out = bash_under_shim(&sb, &bin, &policy, "gh");
    assert_eq!(lines(&out), ["gh: got"], "{}", out.report());
    assert!(
        !out.stderr_str().contains("delivered to gh"),
        "{}",
        out.report()
    );
    let built = compile_c_with(
        "static_gh_shim",
        "#include <stdio.h>\n#include <stdlib.h>\nint main(void) { puts(getenv(\"GH_TOKEN\") ? \"gh: got\" : \"gh: none\"); return 0; }\n",
        &["-static"],
    );
    std::fs::remove_file(sb.join("bin/gh")).expect("remove the script gh");
    std::fs::copy(&built, sb.join("bin/gh")).expect("copy the static gh");
    let out = bash_under_shim(&sb, &bin, &policy, "gh");
    assert_no_value(&out);
    assert_eq!(lines(&out), ["gh: got"], "{}", out.report());
    let said = shim_lines(&out.stderr);
    assert_eq!(said, [line], "{}", out.report());
}
