//! libenvshim.so run as a program says what it is and the policy it would apply
//! in this environment, with where that came from, and exits 0 (as glibc's
//! libc.so.6 does), instead of crashing; `envwrap check` with no POLICY names the
//! lookup step too.

use envshim_e2e::*;

#[test]
fn the_shim_run_as_a_program_says_what_it_is() {
    let sb = Sandbox::new("shim_describe");
    let o = sb.cmd(shim_so()).expect_success();
    let out = o.stdout_str();
    // The version is the shim crate's (shim/Cargo.toml).
    let manifest = std::fs::read_to_string(workspace_root().join("shim/Cargo.toml")).unwrap();
    let version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .expect("the shim's version");
    assert!(
        out.starts_with(&format!("libenvshim.so {version}: ")),
        "{}",
        o.report()
    );
    assert!(
        out.contains("policy: the built-in default"),
        "{}",
        o.report()
    );

    let policy = stage_example(&sb, "loop.toml");
    let o = sb.cmd(shim_so()).with_policy(&policy).expect_success();
    let out = o.stdout_str();
    assert!(
        out.contains(&format!("policy: {}", policy.display()))
            && out.contains("found by: ENVSHIM_POLICY"),
        "{}",
        o.report()
    );

    // envwrap says the same of itself: `check` with no POLICY names the step.
    let o = sb
        .cmd(envwrap_bin())
        .arg("check")
        .env("ENVSHIM_POLICY", &policy)
        .expect_success();
    assert!(
        o.stdout_str().contains("found by    ENVSHIM_POLICY"),
        "{}",
        o.report()
    );
}
