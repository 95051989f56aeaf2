//! A host of its own for one test: a private mount namespace in which `/etc`
//! is an overlay on a tmpfs, so that a test can lay down
//! `/etc/envshim/managed.toml` (the managed layer, docs/adr/0020-managed-layer.md)
//! or `/etc/ld.so.preload` as an administrator would, as root, with nothing
//! written to the machine's own `/etc` and nothing left behind: the namespace
//! and its mounts end with the test's last process.
//!
//! It needs root (CI runs as root) and `unshare` from util-linux.
//! [`private_host_available`] says whether this machine can; a test that
//! cannot run says so on stderr and returns, and CI, which can, runs it.

use std::ffi::OsStr;
use std::path::Path;

use crate::command::TestCommand;
use crate::sandbox::Sandbox;

/// Whether this process may make a private host (it is root).
pub fn private_host_available() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// True where this machine cannot make a private host, after a line on stderr
/// that says `test` was skipped and why: a test that needs one returns.
pub fn no_private_host(test: &str) -> bool {
    if private_host_available() {
        return false;
    }
    eprintln!("{test}: skipped: a private host needs root (CI runs these as root)");
    true
}

/// The managed layer the tests lay down: internal names stripped, one
/// credential by name (`DEPLOY_KEY`).
pub const MANAGED_STRIPS_INTERNAL: &str = r#"version = 1
strip = ["CORP_INTERNAL_*"]

[credentials]
names = ["DEPLOY_KEY"]
"#;

/// A secret's program, `/etc/envshim/deploy` on a private host, laid down as
/// root where no user can replace it: it says whether it got `DEPLOY_KEY`,
/// never its value.
const DEPLOY_PROGRAM: &str =
    "#!/bin/sh\nif [ -n \"$DEPLOY_KEY\" ]; then echo got; else echo none; fi\n";

/// A `[[secret]]` that gives `DEPLOY_KEY` to `/etc/envshim/deploy`, from the
/// file [`deploy_setup`] lays down.
pub const A_SECRET_FOR_DEPLOY: &str = "[[secret]]\nname = \"DEPLOY_KEY\"\nfrom = \"file:/etc/envshim/deploy-key\"\nprogram = \"/etc/envshim/deploy\"\n";

/// The setup lines that lay down the secret's program at
/// `/etc/envshim/deploy` and its source at `/etc/envshim/deploy-key` (root's,
/// 0600, a made-up value).
pub fn deploy_setup(sb: &Sandbox) -> String {
    let program = sb.write("deploy", DEPLOY_PROGRAM);
    let key = sb.write("deploy-key", "made-up-deploy-key-7Rt3Vb9Q");
    let mut setup = install_line(&program, "/etc/envshim/deploy", "0755");
    setup.push_str(&install_line(&key, "/etc/envshim/deploy-key", "0600"));
    setup
}

/// The shell that makes the private host, then runs the test's `setup` (as
/// root, inside the namespace, with `/etc` writable), then execs the command
/// given after it. `$1` onwards is the command.
const MAKE_HOST: &str = r#"set -e
upper=$(mktemp -d)
mount -t tmpfs envshim-test-etc "$upper"
mkdir "$upper/u" "$upper/w"
mount -t overlay envshim-test-etc -o "lowerdir=/etc,upperdir=$upper/u,workdir=$upper/w" /etc
mkdir -p /etc/envshim
"#;

/// A command that runs `program` (with the arguments and environment the test
/// adds to the returned command) on a private host, after `setup`, a shell
/// script run as root inside the namespace (`set -e`: a failing step fails
/// the command). The sandbox's secrets are attached, as with
/// [`Sandbox::cmd`].
pub fn on_private_host(sb: &Sandbox, setup: &str, program: impl AsRef<OsStr>) -> TestCommand {
    let script = format!("{MAKE_HOST}{setup}\nexec \"$@\"\n");
    let mut c = sb.cmd("unshare");
    c.args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(script)
        .arg("sh")
        .arg(program);
    c
}

/// A `setup` line that installs `source` (a file of the sandbox) at `dest`
/// under `/etc`, owned by root, with `mode` (octal, as chmod takes it).
pub fn install_line(source: &Path, dest: &str, mode: &str) -> String {
    format!(
        "install -o root -g root -m {mode} '{}' '{dest}'\n",
        source.display()
    )
}

/// Let every user reach `dir` (search and read, for each directory on the way
/// up): for a test that runs a program as an unprivileged user.
pub fn open_to_every_user(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    for d in dir.ancestors().filter(|d| *d != Path::new("/")) {
        if let Ok(m) = std::fs::metadata(d) {
            let mut perm = m.permissions();
            perm.set_mode(perm.mode() | 0o005);
            let _ = std::fs::set_permissions(d, perm);
        }
    }
}
