//! The managed layer under the shim (issue 33, docs/adr/0020-managed-layer.md):
//! on a host with `/etc/envshim/managed.toml`, every exec the shim decides is
//! decided again by that layer, over what the user's policy decided, and
//! nothing a user or a descendant controls removes it.
//!
//! Each test runs on a private host (`envshim_e2e::on_private_host`: a mount
//! namespace whose `/etc` is an overlay), where it lays down the layer as root
//! and compiles it as an administrator would. The shim is preloaded into the
//! test's launcher (`bash -c ...`) only, after the layer is in place: the shim
//! reads the layer at a process's first exec.
//!
//! The values here are made up for the test; a report holding one is never
//! printed (assertions name variables).

use std::path::PathBuf;

use envshim_e2e::*;

/// The managed layer: internal names stripped, one credential by name.
const MANAGED: &str = MANAGED_STRIPS_INTERNAL;

/// A user policy that keeps everything the managed layer takes away.
const LAX: &str = r#"version = 1
base = "all"
unsafe = "keep"
sticky = false
keep = ["CORP_INTERNAL_URL", "DEPLOY_KEY", "AUTH", "LD_PRELOAD"]

[credentials]
builtin = false
shapes = false

[argv]
secrets = "allow"
"#;

const DEPLOY_VALUE: &str = "made-up-deploy-key-5Tq8Wz3Nc";

/// The variables every test hands the launcher: two the managed layer strips
/// or refuses, a copy of the credential's value, and one nobody touches.
const INPUT: [(&str, &str); 4] = [
    ("CORP_INTERNAL_URL", "https://build.corp.invalid/"),
    ("DEPLOY_KEY", DEPLOY_VALUE),
    ("AUTH", "Bearer made-up-deploy-key-5Tq8Wz3Nc"),
    ("ENVSHIM_E2E_PLAIN", "kept"),
];

/// The setup lines that install `managed` as the layer and compile it as root
/// (what `envwrap compile --managed` does, spelled out), readable by all.
fn managed_setup(sb: &Sandbox, managed: &str) -> String {
    let src = sb.write("managed.toml", managed);
    format!(
        "{}'{}' compile --output /etc/envshim/managed.bin -- /etc/envshim/managed.toml >&2\nchmod 0644 /etc/envshim/managed.bin\n",
        install_line(&src, "/etc/envshim/managed.toml", "0644"),
        envwrap_bin().display()
    )
}

/// `bash -c 'exec PRINTENV'` with the shim preloaded (and `extra` in its
/// environment), on a private host after `setup`; the report printenv wrote.
fn run_launcher(
    sb: &Sandbox,
    setup: &str,
    extra: &[(&str, String)],
    script: &str,
) -> (Outcome, PrintenvReport) {
    let report = sb.join("report");
    let _ = std::fs::remove_file(&report);
    let mut c = on_private_host(sb, setup, "env");
    c.arg(format!("LD_PRELOAD={}", shim_so().display()));
    for (k, v) in INPUT {
        c.arg(format!("{k}={v}"));
    }
    for (k, v) in extra {
        c.arg(format!("{k}={v}"));
    }
    c.args(["bash", "-c", script]);
    c.env(
        "PRINTENV",
        format!("{} --report={}", printenv_bin().display(), report.display()),
    );
    let out = c.run();
    let parsed = PrintenvReport::read(&report);
    (out, parsed)
}

/// The user policy `text`, written into the sandbox, and the variables that
/// make it the user layer by `ENVSHIM_POLICY`.
fn user_policy(sb: &Sandbox, name: &str, text: &str) -> (PathBuf, Vec<(&'static str, String)>) {
    let path = sb.write(name, text);
    let cache = sb.join(".cache/envshim");
    let vars = vec![
        ("ENVSHIM_POLICY", path.display().to_string()),
        ("ENVSHIM_CACHE_DIR", cache.display().to_string()),
    ];
    (path, vars)
}

#[track_caller]
fn assert_held(r: &PrintenvReport, out: &Outcome, how: &str) {
    for name in ["CORP_INTERNAL_URL", "DEPLOY_KEY", "AUTH"] {
        if r.has(name) {
            out.fail(&format!(
                "{how}: {name} reached the child, which the managed layer forbids"
            ));
        }
    }
    if !r.has("ENVSHIM_E2E_PLAIN") {
        out.fail(&format!(
            "{how}: ENVSHIM_E2E_PLAIN, which no layer strips, is gone"
        ));
    }
    let all = r.all_bytes();
    if all
        .windows(DEPLOY_VALUE.len())
        .any(|w| w == DEPLOY_VALUE.as_bytes())
    {
        out.fail(&format!("{how}: the credential's value reached the child"));
    }
}

#[test]
fn no_user_policy_loosens_the_managed_layer() {
    if no_private_host("shim_managed") {
        return;
    }
    let sb = Sandbox::new("managed-user-policies");
    let setup = managed_setup(&sb, MANAGED);
    let (_, by_var) = user_policy(&sb, "lax.toml", LAX);
    let xdg = sb.mkdir("xdg");
    std::fs::create_dir_all(xdg.join("envshim")).expect("mkdir");
    std::fs::write(xdg.join("envshim/policy.toml"), LAX).expect("write");
    let by_xdg = vec![
        ("XDG_CONFIG_HOME", xdg.display().to_string()),
        (
            "ENVSHIM_CACHE_DIR",
            sb.join(".cache/envshim").display().to_string(),
        ),
    ];
    let audit = LAX.replace("version = 1\n", "version = 1\nmode = \"audit\"\n");
    let (_, by_audit) = user_policy(&sb, "audit.toml", &audit);
    // The user layer strips the credential itself and keeps its copy: the
    // managed pass finds the copy in the caller's environment.
    let strips = LAX.replacen(
        "keep = [\"CORP_INTERNAL_URL\", \"DEPLOY_KEY\",",
        "strip = [\"DEPLOY_KEY\"]\nkeep = [\"CORP_INTERNAL_URL\",",
        1,
    );
    assert_ne!(strips, LAX);
    let (_, by_strip) = user_policy(&sb, "strips.toml", &strips);
    for (how, vars) in [
        ("ENVSHIM_POLICY names a lax file", by_var),
        ("XDG_CONFIG_HOME holds a lax file", by_xdg),
        ("the user policy is in audit mode", by_audit),
        (
            "the user policy strips the credential and keeps its copy",
            by_strip,
        ),
        ("the built-in default", vec![]),
    ] {
        let user_file = !vars.is_empty();
        let (out, r) = run_launcher(&sb, &setup, &vars, "/bin/true; /bin/true; exec $PRINTENV");
        out.check(out.status.success(), how);
        assert_held(&r, &out, how);
        // Each of these files asks for what the layer forbids: the shim says
        // so once, when it compiles the file, not at each of the three execs.
        let said = out.stderr_str().matches("overrides").count();
        out.check(
            said == usize::from(user_file),
            &format!(
                "{how}: {said} lines say the managed layer overrides rules of the user's file"
            ),
        );
    }
}

#[test]
fn without_a_managed_layer_the_lax_policy_decides_alone() {
    if no_private_host("shim_managed") {
        return;
    }
    // The control of the test above: the same launcher and policy, no layer.
    let sb = Sandbox::new("managed-absent");
    let (_, vars) = user_policy(&sb, "lax.toml", LAX);
    let (out, r) = run_launcher(&sb, "", &vars, "exec $PRINTENV");
    out.check(out.status.success(), "the launcher ran");
    out.check(
        r.has("CORP_INTERNAL_URL") && r.has("DEPLOY_KEY"),
        "the lax policy kept both",
    );
    out.check(
        !out.stderr_str().contains("managed layer"),
        "no line about a layer that is not there",
    );
}

#[test]
fn a_descendant_cannot_leave_the_managed_layer() {
    if no_private_host("shim_managed") {
        return;
    }
    let sb = Sandbox::new("managed-descendant");
    let setup = managed_setup(&sb, MANAGED);
    let lax = sb.write("lax.toml", LAX);
    // Under the built-in default, a grandchild picks a lax policy for its own
    // subtree and drops LD_PRELOAD on the way (the lax policy is not sticky):
    // the managed layer, sticky by default, puts the shim back, and decides.
    let script = format!(
        "ENVSHIM_POLICY='{}' ENVSHIM_CACHE_DIR='{}' bash -c 'env -u LD_PRELOAD bash -c \"exec \\$PRINTENV\"'",
        lax.display(),
        sb.join(".cache/envshim").display()
    );
    let (out, r) = run_launcher(&sb, &setup, &[], &script);
    out.check(out.status.success(), "the launcher ran");
    assert_held(
        &r,
        &out,
        "a grandchild chose a lax policy and dropped LD_PRELOAD",
    );
    let preload = r
        .get("LD_PRELOAD")
        .map(|v| String::from_utf8_lossy(v).into_owned());
    out.check(
        preload.is_some_and(|p| p.contains(&shim_path_string())),
        "the managed layer put the shim back in LD_PRELOAD",
    );
}

#[test]
fn every_user_of_the_host_is_held() {
    if no_private_host("shim_managed") {
        return;
    }
    let sb = Sandbox::new("managed-nobody");
    let setup = managed_setup(&sb, MANAGED);
    // nobody reads the shim and runs printenv from the sandbox: the build's
    // own directories may be closed to other users (a clone under a 0700
    // temporary directory, as CI's plain-cargo phase makes).
    let shim = sb.join("libenvshim.so");
    let printenv = sb.join("printenv");
    std::fs::copy(shim_so(), &shim).expect("copy the shim");
    std::fs::copy(printenv_bin(), &printenv).expect("copy printenv");
    open_to_every_user(sb.path());
    let mut c = on_private_host(&sb, &setup, "setpriv");
    c.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "env",
        "HOME=/nonexistent",
    ]);
    c.arg(format!("LD_PRELOAD={}", shim.display()));
    for (k, v) in INPUT {
        c.arg(format!("{k}={v}"));
    }
    c.args(["bash", "-c", "exec $PRINTENV"]);
    c.env("PRINTENV", &printenv);
    let out = c.run();
    out.check(out.status.success(), "nobody's launcher ran");
    let r = PrintenvReport::parse(&out.stdout).unwrap_or_else(|e| out.fail(&e));
    assert_held(&r, &out, "a user other than root");
}

#[test]
fn a_managed_layer_that_cannot_be_used_holds_every_exec_to_the_floor() {
    if no_private_host("shim_managed") {
        return;
    }
    let sb = Sandbox::new("managed-broken");
    let compiled = managed_setup(&sb, MANAGED);
    let src = sb.write("managed-only.toml", MANAGED);
    for (how, setup, says) in [
        (
            "writable by its group",
            format!("{compiled}chmod 0664 /etc/envshim/managed.toml\n"),
            "may be written by someone other than root",
        ),
        (
            "never compiled",
            install_line(&src, "/etc/envshim/managed.toml", "0644"),
            "envwrap compile --managed",
        ),
        (
            "edited after its compile",
            format!("{compiled}echo '# edited' >> /etc/envshim/managed.toml\n"),
            "envwrap compile --managed",
        ),
    ] {
        let (_, vars) = user_policy(&sb, "lax.toml", LAX);
        let (out, r) = run_launcher(&sb, &setup, &vars, "exec $PRINTENV");
        out.check(out.status.success(), how);
        out.check(
            !r.has("ENVSHIM_E2E_PLAIN"),
            &format!("{how}: the floor strips a plain name"),
        );
        out.check(r.has("PATH"), &format!("{how}: the floor keeps PATH"));
        let lines: Vec<String> = shim_lines(&out.stderr)
            .into_iter()
            .filter(|l| l.contains("managed layer /etc/envshim/managed.toml"))
            // The user's file asks for what the layer forbids: the compile of
            // it says so in a line of its own (its rules are counted against
            // managed.toml, which envwrap reads as TOML).
            .filter(|l| !l.contains(" overrides "))
            .collect();
        out.check(
            lines.len() == 1,
            &format!("{how}: one line about the layer"),
        );
        out.check(
            lines[0].contains(says) && lines[0].contains("fail-closed floor"),
            how,
        );
    }
}

/// The managed layer's own `[[secret]]` under the shim: a shell's `fork`
/// child reads it in place, and a Python `subprocess` (a `vfork`-like spawn,
/// whose memory is its parent's) is routed through envwrap, which reads it in
/// the program's own process; the shell above holds nothing.
#[test]
fn the_managed_layers_own_secret_reaches_its_program_under_the_shim() {
    if no_private_host("shim_managed") {
        return;
    }
    let sb = Sandbox::new("managed-secret-shim");
    let script = "/etc/envshim/deploy; \
        python3 -c 'import subprocess; subprocess.run([\"/etc/envshim/deploy\"])'; \
        if [ -n \"$DEPLOY_KEY\" ]; then echo shell-holds; fi";
    // A user policy with a rule the layer makes dead: the shim's compile
    // says so once; the run it routes through envwrap does not say it again.
    let (_, user) = user_policy(
        &sb,
        "keeps.toml",
        "version = 1\nkeep = [\"CORP_INTERNAL_URL\"]\n",
    );
    let run = |with_layer: bool| {
        let _ = std::fs::remove_dir_all(sb.join(".cache/envshim"));
        let mut setup = deploy_setup(&sb);
        if with_layer {
            setup.push_str(&managed_setup(
                &sb,
                &format!("{MANAGED}{A_SECRET_FOR_DEPLOY}"),
            ));
        }
        let mut c = on_private_host(&sb, &setup, "env");
        c.arg(format!("LD_PRELOAD={}", shim_so().display()));
        for (k, v) in &user {
            c.arg(format!("{k}={v}"));
        }
        c.args(["bash", "-c", script]);
        let out = c.run();
        out.check(out.status.success(), "the launcher runs");
        out
    };
    let out = run(true);
    out.check(
        out.stdout_str() == "got\ngot\n",
        "the fork child and the routed subprocess get the managed layer's secret, the shell does not",
    );
    let said = out.stderr_str().matches(" overrides ").count();
    out.check(
        said == 1,
        &format!("{said} lines say the layer overrides a rule of the user's file"),
    );
    // The control: the same tree on a host without the layer.
    let out = run(false);
    out.check(out.stdout_str() == "none\nnone\n", "no layer, no secret");
}
