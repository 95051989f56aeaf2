//! The policy a tree starts with is the policy of all of it, the built-in default
//! too (issue 28, section 3). A tree started with no policy file gives every child
//! `ENVSHIM_POLICY=:builtin` (rule 8), so a descendant that sets `ENVSHIM_POLICY`
//! to a lax file, or points `XDG_CONFIG_HOME` at a directory holding one, does not
//! get that policy for its subtree; nor does one under a policy the lookup found.
//! The attempt is said once per process, without the value set.
//!
//! The lax policy grants GH_TOKEN to `env`. The token reaches the grandchild's
//! environment through a shell that reads it from a file (`GH_TOKEN=$(cat token)
//! exec env`), so no argv on the way holds it: only the policy in force in that
//! shell decides whether `env` gets it. No assertion message prints the token or
//! the grandchild's environment.

use std::path::{Path, PathBuf};

use envshim_e2e::*;

/// Grants GH_TOKEN to `env`, which the built-in default would refuse.
const LAX: &str = r#"version = 1
base = "all"

[[grant]]
name = "GH_TOKEN"
program = "env"
"#;

/// A policy for the lookup to find: as the built-in default, with a mark.
const FOUND: &str = r#"version = 1
base = "all"

[argv]
secrets = "refuse"

[set]
E2E_POLICY_MARK = "found-by-lookup"
"#;

/// What the grandchild shell runs: the token from the file, then `env`.
const GRANDCHILD: &str = "sh -c 'GH_TOKEN=$(cat token) exec env'";

struct Tree {
    sb: Sandbox,
    home: PathBuf,
    lax_xdg: PathBuf,
}

impl Tree {
    fn new(name: &str) -> Tree {
        let sb = Sandbox::new(name);
        let home = sb.mkdir("home");
        sb.write("lax.toml", LAX);
        let lax_xdg = sb.mkdir("lax-xdg");
        sb.mkdir("lax-xdg/envshim");
        sb.write("lax-xdg/envshim/policy.toml", LAX);
        sb.write("token", format!("{}\n", sb.secrets().value("GH_TOKEN")));
        Tree { sb, home, lax_xdg }
    }

    /// `program` in the sandbox, with no policy file anywhere the lookup looks
    /// (an empty HOME, no XDG_CONFIG_HOME; the machine has no /etc/envshim), the
    /// caches in the sandbox, and the token allowed in stdout so that the test
    /// itself says what leaked, without printing it.
    fn cmd(&self, program: impl AsRef<std::ffi::OsStr>) -> TestCommand {
        assert!(
            !Path::new("/etc/envshim/policy.toml").exists(),
            "these tests need a machine without /etc/envshim/policy.toml"
        );
        let mut c = self.sb.cmd(program);
        c.env("HOME", &self.home)
            .env_remove("XDG_CONFIG_HOME")
            .env("ENVSHIM_CACHE_DIR", self.sb.join("cache"))
            .env("LAX_XDG", &self.lax_xdg)
            .allow_secrets_in_stdout();
        c
    }

    fn shimmed(&self, script: &str) -> TestCommand {
        let mut c = self.cmd("/bin/bash");
        c.with_shim().args(["-c", script]);
        c
    }

    fn token(&self) -> &str {
        self.sb.secrets().value("GH_TOKEN")
    }
}

/// The grandchild's environment, as `env` printed it: whether it holds the token,
/// and its `ENVSHIM_POLICY` line.
struct Seen {
    has_token: bool,
    policy: Option<String>,
}

fn seen(tree: &Tree, out: &Outcome) -> Seen {
    let stdout = out.stdout_str();
    Seen {
        has_token: stdout.contains(tree.token()),
        policy: stdout
            .lines()
            .find_map(|l| l.strip_prefix("ENVSHIM_POLICY="))
            .map(str::to_string),
    }
}

/// The grandchild ran, without the token, on the tree's policy `want`.
#[track_caller]
fn assert_kept(tree: &Tree, out: &Outcome, want: &str, what: &str) {
    assert!(
        !out.stdout.is_empty(),
        "{what}: the grandchild printed nothing\n{}",
        out.report()
    );
    let s = seen(tree, out);
    assert!(
        !s.has_token,
        "{what}: the grandchild got GH_TOKEN: a descendant chose the lax policy (value not shown)"
    );
    assert_eq!(
        s.policy.as_deref(),
        Some(want),
        "{what}: the grandchild's ENVSHIM_POLICY"
    );
}

/// Control: the lax policy, when the tree starts on it, does give `env` the token,
/// so the tests below would see a descendant that got it.
#[test]
fn shim_sticky_builtin_control_the_lax_policy_grants_the_token() {
    let t = Tree::new("sticky_builtin_control");
    let out = t
        .shimmed(&format!("exec {GRANDCHILD}"))
        .env("ENVSHIM_POLICY", t.sb.join("lax.toml"))
        .expect_success();
    assert!(
        seen(&t, &out).has_token,
        "the lax policy did not grant GH_TOKEN to env: the tests below prove nothing"
    );
}

#[test]
fn shim_sticky_builtin_a_child_setting_envshim_policy_keeps_the_built_in_default() {
    let t = Tree::new("sticky_builtin_envvar");
    let out = t
        .shimmed(&format!("export ENVSHIM_POLICY=lax.toml; {GRANDCHILD}"))
        .expect_success();
    assert_kept(
        &t,
        &out,
        ":builtin",
        "ENVSHIM_POLICY=lax.toml set by the child",
    );
}

#[test]
fn shim_sticky_builtin_a_child_pointing_xdg_config_home_at_a_lax_policy_keeps_the_built_in_default()
{
    let t = Tree::new("sticky_builtin_xdg");
    let out = t
        .shimmed(&format!(
            "export XDG_CONFIG_HOME=\"$LAX_XDG\"; {GRANDCHILD}"
        ))
        .expect_success();
    assert_kept(&t, &out, ":builtin", "XDG_CONFIG_HOME set by the child");
}

#[test]
fn shim_sticky_builtin_envwrap_preload_keeps_the_built_in_default() {
    let t = Tree::new("sticky_builtin_envwrap");
    for (script, what) in [
        (
            format!("export ENVSHIM_POLICY=lax.toml; {GRANDCHILD}"),
            "envwrap --preload, ENVSHIM_POLICY set by the child",
        ),
        (
            format!("export XDG_CONFIG_HOME=\"$LAX_XDG\"; {GRANDCHILD}"),
            "envwrap --preload, XDG_CONFIG_HOME set by the child",
        ),
    ] {
        let out = t
            .cmd(envwrap_bin())
            .args(["--preload", "--", "/bin/bash", "-c", &script])
            .expect_success();
        assert_kept(&t, &out, ":builtin", what);
    }
}

/// A tree whose policy the lookup found (`$XDG_CONFIG_HOME/envshim/policy.toml`)
/// stays on it: its absolute path is every child's `ENVSHIM_POLICY`.
#[test]
fn shim_sticky_builtin_a_policy_found_by_lookup_stays_when_a_child_sets_envshim_policy() {
    let t = Tree::new("sticky_builtin_lookup");
    let config = t.sb.mkdir("config");
    t.sb.mkdir("config/envshim");
    let found = t.sb.write("config/envshim/policy.toml", FOUND);
    let out = t
        .shimmed(&format!("export ENVSHIM_POLICY=lax.toml; {GRANDCHILD}"))
        .env("XDG_CONFIG_HOME", &config)
        .expect_success();
    let want = found.to_string_lossy().into_owned();
    assert_kept(
        &t,
        &out,
        &want,
        "a lookup-found policy, ENVSHIM_POLICY set by the child",
    );
    assert!(
        out.stdout_str()
            .lines()
            .any(|l| l == "E2E_POLICY_MARK=found-by-lookup"),
        "the grandchild is not under the policy the lookup found\n{}",
        out.report()
    );
}

/// `python3 -c SCRIPT`, which starts `sh -c 'exec /bin/true'` twice with
/// `posix_spawn` (in the process itself, so both are its own execs), its
/// `ENVSHIM_POLICY` set to `value` in the children's environment.
fn spawn_twice(value: &str) -> String {
    format!(
        "import os\n\
         env = dict(os.environ)\n\
         env['ENVSHIM_POLICY'] = {value:?}\n\
         for _ in range(2):\n\
         \x20   pid = os.posix_spawn('/bin/sh', ['sh', '-c', 'exec /bin/true'], env)\n\
         \x20   os.waitpid(pid, 0)\n"
    )
}

const SAID: &str = "ENVSHIM_POLICY set by this process is ignored";

fn said(out: &Outcome) -> Vec<String> {
    out.stderr_str()
        .lines()
        .filter(|l| l.contains(SAID))
        .map(str::to_string)
        .collect()
}

/// The attempt is said once per process, naming the tree's policy and never the
/// value set (here a path that holds the token); the same under a policy file.
/// A process that inherited its tree's `ENVSHIM_POLICY` as it was given (relative)
/// set nothing, and is not told it did.
#[test]
fn shim_sticky_builtin_the_attempt_is_said_once_without_the_value() {
    let t = Tree::new("sticky_builtin_said");
    let value = format!("/tmp/{}.toml", t.token());
    // The token is in the script: the runner's argv, which nothing checks here.
    let script = spawn_twice(&value);

    let out = t
        .cmd(python3())
        .with_shim()
        .args(["-c", &script])
        .expect_success();
    assert_eq!(
        said(&out),
        vec![format!(
            "envshim: {SAID}: the tree keeps the built-in default policy"
        )],
        "under the built-in default (stderr holds no token: the harness checks)"
    );

    let strict = t.sb.write("strict.toml", FOUND);
    let out = t
        .cmd(python3())
        .with_shim()
        .with_policy(&strict)
        .args(["-c", &script])
        .expect_success();
    assert_eq!(
        said(&out),
        vec![format!(
            "envshim: {SAID}: the tree keeps the policy {}",
            strict.display()
        )],
        "under a policy file"
    );

    // Started with a relative ENVSHIM_POLICY: the children inherit it as given,
    // and rule 8 makes it absolute, quietly.
    let out = t
        .shimmed("/bin/true; sh -c 'exec /bin/true'")
        .env("ENVSHIM_POLICY", "strict.toml")
        .expect_success();
    assert_eq!(
        said(&out),
        Vec::<String>::new(),
        "an inherited ENVSHIM_POLICY"
    );
}

/// `ENVSHIM_POLICY=:builtin` given at the start is the built-in default, with no
/// lookup: a policy file at `$XDG_CONFIG_HOME` is not used, by the shim or by
/// envwrap.
#[test]
fn shim_sticky_builtin_the_reserved_value_names_the_built_in_default() {
    let t = Tree::new("sticky_builtin_reserved");
    let out = t
        .shimmed(&format!("exec {GRANDCHILD}"))
        .env("ENVSHIM_POLICY", ":builtin")
        .env("XDG_CONFIG_HOME", &t.lax_xdg)
        .expect_success();
    assert_kept(&t, &out, ":builtin", "ENVSHIM_POLICY=:builtin at the start");
    let out = t
        .cmd(shim_so())
        .env("ENVSHIM_POLICY", ":builtin")
        .expect_success();
    assert!(
        out.stdout_str()
            .contains("found by: ENVSHIM_POLICY=:builtin"),
        "{}",
        out.report()
    );
    // envwrap reads it the same way, and says so.
    let out = t
        .cmd(envwrap_bin())
        .arg("check")
        .env("ENVSHIM_POLICY", ":builtin")
        .env("XDG_CONFIG_HOME", &t.lax_xdg)
        .expect_success();
    let text = out.stdout_str();
    assert!(
        text.starts_with("the built-in policy: valid")
            && text.contains("found by    ENVSHIM_POLICY=:builtin"),
        "{}",
        out.report()
    );
}
