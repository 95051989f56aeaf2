//! The managed layer under envwrap (issue 33, docs/adr/0020-managed-layer.md):
//! `envwrap` decides every exec with the user's policy, then with
//! `/etc/envshim/managed.toml` over the result; `--policy`, `ENVSHIM_POLICY`,
//! `XDG_CONFIG_HOME` and `--mode audit` reach the user layer only. Also the
//! tools: `compile --managed`, `which`, and `check`, which names both files
//! for a user rule the layer makes dead.
//!
//! Each test runs on a private host (`envshim_e2e::on_private_host`), as root.
//! The values are made up; assertions name variables.

use envshim_e2e::*;

const MANAGED: &str = MANAGED_STRIPS_INTERNAL;

const LAX: &str = r#"version = 1
base = "all"
keep = ["CORP_INTERNAL_URL", "DEPLOY_KEY"]

[credentials]
builtin = false
shapes = false
"#;

/// The layer installed as root, and compiled with `envwrap compile --managed`.
fn managed_setup(sb: &Sandbox, text: &str, mode: &str) -> String {
    let src = sb.write("managed.toml", text);
    format!(
        "{}'{}' compile --managed >&2 || true\n",
        install_line(&src, "/etc/envshim/managed.toml", mode),
        envwrap_bin().display()
    )
}

/// `envwrap ARGS -- printenv` on a private host after `setup`, with the
/// variables the layer takes away; the report and the run.
fn envwrap_printenv(
    sb: &Sandbox,
    setup: &str,
    args: &[String],
    env: &[(&str, String)],
) -> (Outcome, PrintenvReport) {
    let mut c = on_private_host(sb, setup, envwrap_bin());
    c.args(args).arg("--").arg(printenv_bin());
    c.env("CORP_INTERNAL_URL", "https://build.corp.invalid/")
        .env("DEPLOY_KEY", "made-up-deploy-key-8Jd2Kq")
        .env("ENVSHIM_E2E_PLAIN", "kept");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.run();
    let r = PrintenvReport::parse(&out.stdout).unwrap_or_else(|e| out.fail(&e));
    (out, r)
}

#[test]
fn nothing_the_user_controls_removes_the_managed_layer() {
    if no_private_host("envwrap_managed") {
        return;
    }
    let sb = Sandbox::new("envwrap-managed-user");
    let setup = managed_setup(&sb, MANAGED, "0644");
    let lax = sb.write("lax.toml", LAX);
    let xdg = sb.mkdir("xdg");
    std::fs::create_dir_all(xdg.join("envshim")).expect("mkdir");
    std::fs::write(xdg.join("envshim/policy.toml"), LAX).expect("write");
    let policy_arg = vec![format!("--policy={}", lax.display())];
    for (how, args, env) in [
        ("--policy names a lax file", policy_arg.clone(), vec![]),
        (
            "--mode audit",
            [policy_arg.clone(), vec!["--mode=audit".into()]].concat(),
            vec![],
        ),
        (
            "ENVSHIM_POLICY",
            vec![],
            vec![("ENVSHIM_POLICY", lax.display().to_string())],
        ),
        (
            "XDG_CONFIG_HOME",
            vec![],
            vec![("XDG_CONFIG_HOME", xdg.display().to_string())],
        ),
    ] {
        let (out, r) = envwrap_printenv(&sb, &setup, &args, &env);
        out.check(out.status.success(), how);
        out.check(
            !r.has("CORP_INTERNAL_URL"),
            &format!("{how}: the managed strip held"),
        );
        out.check(
            !r.has("DEPLOY_KEY"),
            &format!("{how}: the managed credential held"),
        );
        out.check(
            r.has("ENVSHIM_E2E_PLAIN"),
            &format!("{how}: a plain name passed"),
        );
    }
    // The control: the same lax policy on a host without the layer.
    let (out, r) = envwrap_printenv(&sb, "", &policy_arg, &[]);
    out.check(
        r.has("CORP_INTERNAL_URL") && r.has("DEPLOY_KEY"),
        "without a layer the lax policy decides",
    );
}

#[test]
fn a_broken_managed_layer_gives_the_floor_and_one_warning() {
    if no_private_host("envwrap_managed") {
        return;
    }
    let sb = Sandbox::new("envwrap-managed-broken");
    for (how, setup) in [
        ("group-writable", managed_setup(&sb, MANAGED, "0664")),
        (
            "does not parse",
            managed_setup(&sb, "version = 1\nkeep = \n", "0644"),
        ),
    ] {
        let (out, r) = envwrap_printenv(&sb, &setup, &[], &[]);
        out.check(out.status.success(), how);
        out.check(
            !r.has("ENVSHIM_E2E_PLAIN"),
            &format!("{how}: the floor strips a plain name"),
        );
        out.check(r.has("PATH"), &format!("{how}: the floor keeps PATH"));
        let warnings = out
            .stderr_str()
            .lines()
            .filter(|l| {
                l.contains("managed policy /etc/envshim/managed.toml")
                    && l.contains("fail-closed floor")
            })
            .count();
        out.check(
            warnings == 1,
            &format!("{how}: one warning naming the layer"),
        );
    }
}

#[test]
fn compile_which_and_check_name_both_layers() {
    if no_private_host("envwrap_managed") {
        return;
    }
    let sb = Sandbox::new("envwrap-managed-tools");
    let src = sb.write("managed.toml", MANAGED);
    let user = sb.write(
        "user.toml",
        "version = 1\nmode = \"audit\"\nkeep = [\"CORP_INTERNAL_URL\", \"HOME\"]\n",
    );
    let envwrap = envwrap_bin();
    let script = format!(
        "set +e\n{install}'{e}' which; echo which-before=$?\n'{e}' compile --managed; echo compiled=$?\nls -l /etc/envshim/managed.bin\n'{e}' which; echo which-after=$?\n'{e}' check '{u}' >/dev/null; echo check=$?\n",
        install = install_line(&src, "/etc/envshim/managed.toml", "0644"),
        e = envwrap.display(),
        u = user.display(),
    );
    let c = on_private_host(&sb, &script, "true");
    let out = c.run();
    let stdout = out.stdout_str();
    out.check(
        stdout.contains("which-before=1"),
        "which says the compiled form is missing (exit 1)",
    );
    out.check(
        stdout.contains("missing: run `envwrap compile --managed` as root"),
        "and what to run",
    );
    out.check(stdout.contains("compiled=0"), "compile --managed wrote it");
    out.check(
        stdout.contains("-rw-r--r-- 1 root root"),
        "root's, readable by all",
    );
    out.check(
        stdout.contains("which-after=0")
            && stdout.contains("compiled form: /etc/envshim/managed.bin: current"),
        "which says it is current",
    );
    out.check(
        stdout.contains("managed layer: /etc/envshim/managed.toml: in force"),
        "which names the managed layer",
    );
    out.check(
        stdout.contains("check=1"),
        "check of a user file the layer makes dead exits 1",
    );
    let stderr = out.stderr_str();
    let user_s = user.display().to_string();
    out.check(
        stderr.contains(&format!("{user_s}:3:9: keep CORP_INTERNAL_URL"))
            && stderr.contains("/etc/envshim/managed.toml:2:10: strips it"),
        "the keep's error names both files, line and column",
    );
    out.check(
        stderr.contains(&format!("{user_s}:2:1: mode = \"audit\"")),
        "the mode's error names the user's line",
    );
}

#[test]
fn the_supervisor_applies_the_managed_layer_to_a_grandchild() {
    if no_private_host("envwrap_managed") {
        return;
    }
    let sb = Sandbox::new("envwrap-managed-supervise");
    let setup = managed_setup(&sb, MANAGED, "0644");
    let lax = sb.write("lax.toml", LAX);
    // A static program starts the grandchild with the variable set again:
    // only the supervisor sees that exec.
    let launcher = compile_c_with("setenv_exec", SETENV_EXEC_C, &["-static"]);
    let run = |setup: &str, refuse: bool| {
        let mut c = on_private_host(&sb, setup, envwrap_bin());
        c.args([
            "--supervise".to_string(),
            format!("--policy={}", lax.display()),
        ]);
        if refuse {
            c.arg("--refuse-changes");
        }
        c.arg("--").arg(&launcher).arg(printenv_bin());
        c.run()
    };
    // The launcher's memory is its own (it execs in place): the supervisor
    // removes what the managed layer strips, and the grandchild runs
    // without it.
    let out = run(&setup, false);
    out.check(
        out.status.success() && !out.stdout_str().contains("CORP_INTERNAL_TOKEN_URL"),
        "the grandchild runs without what the managed layer strips",
    );
    // With --refuse-changes, the exec is refused instead.
    let out = run(&setup, true);
    out.check(
        !out.status.success(),
        "the grandchild's exec, which the managed layer would change, is refused",
    );
    out.check(
        out.stderr_str().contains("CORP_INTERNAL_TOKEN_URL"),
        "the refusal names the variable",
    );
    out.check(
        out.stderr_str()
            .contains("(policy /etc/envshim/managed.toml)"),
        "the refusal names the policy that refused, the managed layer",
    );
    // The control: no layer, and the lax policy lets the same exec through,
    // with the variable.
    let out = run("", false);
    out.check(
        out.status.success() && out.stdout_str().contains("CORP_INTERNAL_TOKEN_URL"),
        "without a layer the supervisor lets it run as it is",
    );
}

/// [`deploy_setup`], then `managed` as the layer (none when empty).
fn secret_setup(sb: &Sandbox, managed: &str) -> String {
    let mut setup = deploy_setup(sb);
    if !managed.is_empty() {
        setup.push_str(&managed_setup(sb, managed, "0644"));
    }
    setup
}

/// What `/etc/envshim/deploy` said under `envwrap OPTS -- /etc/envshim/deploy`.
fn deploy_says(sb: &Sandbox, setup: &str, opts: &[String]) -> String {
    let mut c = on_private_host(sb, setup, envwrap_bin());
    c.args(opts).args(["--", "/etc/envshim/deploy"]);
    c.expect_success().stdout_str().trim().to_string()
}

#[test]
fn the_managed_layers_own_secret_reaches_its_program_with_and_without_supervise() {
    if no_private_host("envwrap_managed") {
        return;
    }
    let sb = Sandbox::new("envwrap-managed-secret");
    let managed = format!("version = 1\n{A_SECRET_FOR_DEPLOY}");
    let with_layer = secret_setup(&sb, &managed);
    for opts in [vec![], vec!["--supervise".to_string()]] {
        let how = format!("envwrap {}", opts.join(" "));
        assert_eq!(
            deploy_says(&sb, &with_layer, &opts),
            "got",
            "{how}: the managed layer's secret"
        );
        assert_eq!(
            deploy_says(&sb, &secret_setup(&sb, ""), &opts),
            "none",
            "{how}: no layer, no secret"
        );
    }
}

#[test]
fn a_users_secret_the_managed_layer_refuses_is_not_delivered_under_supervise_either() {
    if no_private_host("envwrap_managed") {
        return;
    }
    let sb = Sandbox::new("envwrap-managed-user-secret");
    let user = sb.write("user.toml", format!("version = 1\n{A_SECRET_FOR_DEPLOY}"));
    let with_layer = secret_setup(&sb, MANAGED);
    for extra in [None, Some("--supervise")] {
        let mut opts = vec![format!("--policy={}", user.display())];
        opts.extend(extra.map(String::from));
        let how = format!("envwrap {}", opts.join(" "));
        assert_eq!(
            deploy_says(&sb, &with_layer, &opts),
            "none",
            "{how}: the managed layer refuses DEPLOY_KEY, the user's secret of it included"
        );
        // The control: on a host without the layer the user's secret is delivered.
        assert_eq!(
            deploy_says(&sb, &secret_setup(&sb, ""), &opts),
            "got",
            "{how}: without a layer"
        );
    }
}

/// A static program that sets `CORP_INTERNAL_TOKEN_URL` and execs its
/// arguments: an exec only the supervisor sees.
const SETENV_EXEC_C: &str = r#"
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
    setenv("CORP_INTERNAL_TOKEN_URL", "https://again.corp.invalid/", 1);
    execv(argv[1], argv + 1);
    return 71;
}
"#;

/// A user policy's `[supervise] changes = "audit"` governs the user layer's
/// changes only: a change the managed layer makes is still made (the
/// supervisor removes the entry in place) or, with `--refuse-changes`,
/// refused.
#[test]
fn a_users_supervise_audit_does_not_let_a_managed_strip_pass() {
    if no_private_host("envwrap_managed") {
        return;
    }
    let sb = Sandbox::new("envwrap-managed-supervise-audit");
    let setup = managed_setup(&sb, MANAGED, "0644");
    let audit = sb.write(
        "audit.toml",
        "version = 1\n[supervise]\nchanges = \"audit\"\n",
    );
    let launcher = compile_c_with("setenv_exec", SETENV_EXEC_C, &["-static"]);
    for refuse in [false, true] {
        let mut c = on_private_host(&sb, &setup, envwrap_bin());
        c.args([
            "--supervise".to_string(),
            format!("--policy={}", audit.display()),
        ]);
        if refuse {
            c.arg("--refuse-changes");
        }
        c.arg("--")
            .arg(&launcher)
            .args(["/usr/bin/printenv", "CORP_INTERNAL_TOKEN_URL"]);
        let out = c.run();
        out.check(
            !out.status.success() && !out.stdout_str().contains("again.corp.invalid"),
            "the managed strip is made or refused, not let through by the user's audit",
        );
        if refuse {
            out.check(
                out.stderr_str()
                    .contains("(policy /etc/envshim/managed.toml)"),
                "the refusal names the managed layer",
            );
        }
    }
}

/// A static program that copies the value of variable argv[1] into argv[2],
/// drops argv[1] and execs the rest: a secret's program handing its secret on
/// under another name.
const COPY_EXEC_C: &str = r#"
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc < 4) return 2;
    const char *v = getenv(argv[1]);
    if (!v) return 3;
    setenv(argv[2], v, 1);
    unsetenv(argv[1]);
    execv(argv[3], argv + 3);
    return 71;
}
"#;

/// Under `--supervise`, a program that got the managed layer's secret cannot
/// give a copy of it to a program the secret is not for (rule 4 with the
/// caller's environment, as the shim decides it).
#[test]
fn under_supervise_a_secrets_program_cannot_pass_a_copy_on() {
    if no_private_host("envwrap_managed") {
        return;
    }
    let sb = Sandbox::new("envwrap-managed-secret-copy");
    let copier = sb.join("copy_exec");
    std::fs::copy(
        compile_c_with("copy_exec", COPY_EXEC_C, &["-static"]),
        &copier,
    )
    .expect("copy");
    let managed = "version = 1\n[[secret]]\nname = \"DEPLOY_KEY\"\nfrom = \"file:/etc/envshim/deploy-key\"\nprogram = \"/etc/envshim/sdeploy\"\n";
    let mut setup = deploy_setup(&sb);
    setup.push_str(&install_line(&copier, "/etc/envshim/sdeploy", "0755"));
    setup.push_str(&managed_setup(&sb, managed, "0644"));
    let mut c = on_private_host(&sb, &setup, envwrap_bin());
    c.args([
        "--supervise",
        "--",
        "/etc/envshim/sdeploy",
        "DEPLOY_KEY",
        "COPIED",
        "/usr/bin/printenv",
        "COPIED",
    ]);
    let out = c.run();
    out.check(
        !out.stdout_str().contains("made-up-deploy-key"),
        "the secret's copy reached a program it is not for",
    );
    out.check(!out.status.success(), "the exec with the copy is refused");
}
