//! "GH_TOKEN withheld from gh and what it starts": the one line each front end
//! says when a credential does not reach a child (envpolicy_core::withheld).
//!
//! The promise is once per name and tree. A shell forks a child for every
//! command and `make -j` runs several at once; both must say each name once
//! between all their children, not at every exec. A `quiet = true` policy says
//! nothing, and the line names the variable and the program, never a value (the
//! harness fails any test whose output holds a seeded secret).

use envshim_e2e::*;

use crate::envwrap_util::envwrap;

const WITHHELD: &str = " withheld from ";

/// How many of `lines` say that `name` was withheld.
fn said(lines: &[String], name: &str) -> usize {
    let start = format!("{name}{WITHHELD}");
    lines.iter().filter(|l| l.contains(&start)).count()
}

/// Every name said at most once, and `GH_TOKEN` (a credential of the built-in
/// policy, refused without a warning of its own) exactly once.
#[track_caller]
fn each_name_once(out: &Outcome, prefix: &str) {
    let lines = withheld_lines(&out.stderr, prefix);
    for name in SECRET_NAMES {
        out.check(
            said(&lines, name) <= 1,
            &format!("{name} was said more than once"),
        );
    }
    out.check(
        said(&lines, "GH_TOKEN") == 1,
        "GH_TOKEN was not said exactly once",
    );
}

#[test]
fn a_shell_loop_of_ten_thousand_execs_says_each_name_once() {
    let sb = Sandbox::new("withheld-loop");
    let out = sb
        .cmd("bash")
        .arg("-c")
        .arg("for ((i = 0; i < 10000; i++)); do /bin/true; done; printenv GH_TOKEN || echo none")
        .env_secrets()
        .with_shim()
        .timeout(std::time::Duration::from_secs(300))
        .expect_success();
    out.check(out.stdout_str() == "none\n", "a child got GH_TOKEN");
    each_name_once(&out, "envshim: ");
    let lines = withheld_lines(&out.stderr, "envshim: ");
    out.check(
        lines.iter().any(|l| {
            l == "envshim: GH_TOKEN withheld from true and what it starts \
                  (a credential; envwrap explain GH_TOKEN)"
        }),
        "the line does not name GH_TOKEN, the program and the way to learn more",
    );
}

#[test]
fn make_dash_j_says_each_name_once_between_its_jobs() {
    let sb = Sandbox::new("withheld-make");
    let targets: Vec<String> = (0..64).map(|i| format!("t{i}")).collect();
    let mut makefile = format!(".PHONY: all {0}\nall: {0}\n", targets.join(" "));
    for t in &targets {
        // A simple command: make execs it itself (no shell), from parallel jobs.
        makefile.push_str(&format!("{t}:\n\t@printenv -0 PATH\n"));
    }
    sb.write("Makefile", makefile);
    let out = sb
        .cmd("make")
        .args(["-s", "-j8", "all"])
        .env_secrets()
        .with_shim()
        .expect_success();
    each_name_once(&out, "envshim: ");
}

#[test]
fn a_quiet_policy_says_nothing_and_still_withholds() {
    let sb = Sandbox::new("withheld-quiet");
    let policy = sb.write("quiet.toml", "version = 1\nbase = \"all\"\nquiet = true\n");
    let out = sb
        .cmd("bash")
        .arg("-c")
        .arg("/bin/true; printenv GH_TOKEN || echo none")
        .env_secrets()
        .with_shim()
        .with_policy(&policy)
        .expect_success();
    out.check(out.stdout_str() == "none\n", "a child got GH_TOKEN");
    out.check(
        withheld_lines(&out.stderr, "envshim: ").is_empty(),
        "a quiet policy said a withheld credential",
    );

    let out = envwrap(&sb)
        .arg("--policy")
        .arg(&policy)
        .args(["--", "printenv", "GH_TOKEN"])
        .env_secrets()
        .expect_exit(1);
    out.check(
        withheld_lines(&out.stderr, "envwrap: ").is_empty(),
        "a quiet policy said a withheld credential (envwrap)",
    );
}

#[test]
fn envwrap_says_each_name_once_and_audit_mode_says_nothing_was_withheld() {
    let sb = Sandbox::new("withheld-envwrap");
    let out = envwrap(&sb)
        .args([
            "--",
            "sh",
            "-c",
            "true; true; printenv GH_TOKEN || echo none",
        ])
        .env_secrets()
        .expect_success();
    out.check(out.stdout_str() == "none\n", "the child got GH_TOKEN");
    each_name_once(&out, "envwrap: ");
    out.check(
        withheld_lines(&out.stderr, "envwrap: ")
            .iter()
            .any(|l| l.starts_with("envwrap: GH_TOKEN withheld from sh and what it starts")),
        "envwrap's line does not name GH_TOKEN and sh",
    );

    // In audit mode the child gets everything: nothing is withheld, and the
    // audit lines already say what enforce would do.
    let out = envwrap(&sb)
        .args(["--mode", "audit", "--", "true"])
        .env_secrets()
        .expect_success();
    out.check(
        withheld_lines(&out.stderr, "envwrap: ").is_empty(),
        "audit mode said a credential was withheld",
    );
}

#[test]
fn a_granted_or_warned_credential_is_not_said_as_withheld() {
    let sb = Sandbox::new("withheld-granted");
    let policy = sb.write(
        "grant.toml",
        "version = 1\nbase = \"all\"\n\n[[grant]]\nname = \"GH_TOKEN\"\nprogram = \"printenv\"\n",
    );
    let out = sb
        .cmd("bash")
        .arg("-c")
        .arg("printenv GH_TOKEN >/dev/null && echo granted")
        .env_secrets()
        .with_shim()
        .with_policy(&policy)
        .expect_success();
    out.check(out.stdout_str() == "granted\n", "the grant did not hold");
    let lines = withheld_lines(&out.stderr, "envshim: ");
    out.check(
        said(&lines, "GH_TOKEN") == 0,
        "a granted credential was said as withheld",
    );
    out.check(
        said(&lines, "GITHUB_TOKEN") == 1,
        "GITHUB_TOKEN was not said once",
    );
}
