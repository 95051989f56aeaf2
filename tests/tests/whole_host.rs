//! The whole-host mode (docs/host.md): libenvshim.so listed in
//! `/etc/ld.so.preload`, where the loader puts it into every dynamically linked
//! program, whether or not `LD_PRELOAD` names it; and `envshim-host`, the
//! switch the Debian package ships (packaging/envshim-host), run from the
//! source tree. Each test runs on a private host (`envshim_e2e::host`: a
//! mount namespace whose `/etc` is an overlay on a tmpfs), so the machine's own
//! `/etc/ld.so.preload` is never written.

use envshim_e2e::*;

/// The switch, as the package installs it at /usr/sbin/envshim-host.
fn envshim_host() -> std::path::PathBuf {
    workspace_root().join("packaging/envshim-host")
}

/// What every command here gets besides the test's own: a HOME of the
/// sandbox's (so that the shim's lookup finds no file of the machine's user
/// and uses the built-in default, which refuses every seeded credential) and a
/// cache directory of its own.
fn on_host(sb: &Sandbox, setup: &str, program: impl AsRef<std::ffi::OsStr>) -> TestCommand {
    let mut c = on_private_host(sb, setup, program);
    c.env("HOME", sb.path())
        .env_remove("XDG_CONFIG_HOME")
        .env("ENVSHIM_CACHE_DIR", sb.mkdir("cache"));
    c
}

#[test]
fn a_program_started_without_ld_preload_is_policed_through_ld_so_preload() {
    if no_private_host("whole_host") {
        return;
    }
    let sb = Sandbox::new("whole-host-preload");
    let shim = shim_so();
    let printenv = printenv_bin();
    let report = sb.join("child.report");
    // The preload file lists the shim, and nothing else names it: `env -u
    // LD_PRELOAD` makes sure no variable does, and the command given to the
    // private host starts before the file is written.
    let setup = format!("printf '%s\\n' '{}' > /etc/ld.so.preload\n", shim.display());
    let o = on_host(&sb, &setup, "/usr/bin/env")
        .args(["-u", "LD_PRELOAD", "/bin/sh", "-c"])
        .arg(format!(
            "exec '{}' --report='{}'",
            printenv.display(),
            report.display()
        ))
        .env_secrets()
        .expect_success();
    let child = PrintenvReport::read(&report);
    // The child received none of the credentials the shell held.
    sb.secrets()
        .assert_absent("the child's environment", &child.all_bytes());
    for name in SECRET_NAMES {
        assert!(
            !child.has(name),
            "{name} reached the child through a host with the shim in /etc/ld.so.preload\n{}",
            o.report()
        );
    }
    // An ordinary variable still passes, and the shim said why the tokens did not.
    assert!(child.has("HOME"), "{:?}\n{}", child, o.report());
    assert!(
        o.stderr_str().contains("GH_TOKEN withheld"),
        "the shim did not say it withheld GH_TOKEN\n{}",
        o.report()
    );
}

/// One private host, one shell script: the switch's three commands and what
/// each leaves in `/etc/ld.so.preload`, with a line of another preload (a
/// comment and `libc.so.6`, which every program loads anyway) that must stay.
#[test]
fn envshim_host_enables_reports_and_disables_keeping_other_lines() {
    if no_private_host("whole_host") {
        return;
    }
    let sb = Sandbox::new("whole-host-switch");
    let shim = shim_so();
    let printenv = printenv_bin();
    let report = sb.join("child.report");
    let setup = "printf '# another preload, kept\\nlibc.so.6\\n' > /etc/ld.so.preload\n";
    let script = format!(
        r#"set -e
host='{host}'; shim='{shim}'
"$host" status --shim "$shim" || echo "status-before=$?"
"$host" enable --shim "$shim"
echo '--- after enable'; cat /etc/ld.so.preload; echo '---'
"$host" status --shim "$shim"; echo "status-on=$?"
env -u LD_PRELOAD /bin/sh -c "exec '{printenv}' --report='{report}'"
"$host" enable --shim "$shim"
"$host" disable --shim "$shim"
echo '--- after disable'; cat /etc/ld.so.preload; echo '---'
"$host" status --shim "$shim" || echo "status-after=$?"
"#,
        host = envshim_host().display(),
        shim = shim.display(),
        printenv = printenv.display(),
        report = report.display(),
    );
    let o = on_host(&sb, setup, "/bin/sh")
        .args(["-c", &script])
        .env_secrets()
        .expect_success();
    let out = o.stdout_str();
    let shim_line = shim.display().to_string();
    let section = |name: &str| -> Vec<String> {
        let start = format!("--- after {name}\n");
        let at = out
            .find(&start)
            .unwrap_or_else(|| o.fail(&format!("no {start}")));
        let rest = &out[at + start.len()..];
        let end = rest
            .find("---\n")
            .unwrap_or_else(|| o.fail("no end of a section"));
        rest[..end].lines().map(str::to_string).collect()
    };
    assert_eq!(
        section("enable"),
        [shim_line.as_str(), "# another preload, kept", "libc.so.6"],
        "{}",
        o.report()
    );
    assert_eq!(
        section("disable"),
        ["# another preload, kept", "libc.so.6"],
        "{}",
        o.report()
    );
    assert!(out.contains("status-before=3"), "{}", o.report());
    assert!(out.contains("envshim-host: on:"), "{}", o.report());
    assert!(out.contains("status-on=0"), "{}", o.report());
    assert!(
        out.contains("already in"),
        "a second enable is not a no-op\n{}",
        o.report()
    );
    assert!(out.contains("status-after=3"), "{}", o.report());
    // While it was on, a program started without LD_PRELOAD was policed.
    let child = PrintenvReport::read(&report);
    sb.secrets()
        .assert_absent("the child's environment", &child.all_bytes());
    assert!(!child.has("GH_TOKEN"), "{}", o.report());
}

#[test]
fn envshim_host_refuses_a_missing_shim_and_leaves_the_preload_file_alone() {
    if no_private_host("whole_host") {
        return;
    }
    let sb = Sandbox::new("whole-host-missing");
    let missing = sb.join("gone/libenvshim.so");
    let setup = "printf '# kept as it is\\n' > /etc/ld.so.preload\n";
    let script = format!(
        r#"before=$(sha256sum /etc/ld.so.preload)
if '{host}' enable --shim '{missing}'; then echo enabled-anyway; fi
after=$(sha256sum /etc/ld.so.preload)
[ "$before" = "$after" ] && echo unchanged
rm /etc/ld.so.preload
if '{host}' enable --shim '{missing}'; then echo enabled-anyway; fi
[ -e /etc/ld.so.preload ] || echo still-absent
"#,
        host = envshim_host().display(),
        missing = missing.display(),
    );
    let o = on_host(&sb, setup, "/bin/sh")
        .args(["-c", &script])
        .expect_success();
    let out = o.stdout_str();
    assert!(!out.contains("enabled-anyway"), "{}", o.report());
    assert!(out.contains("unchanged"), "{}", o.report());
    assert!(out.contains("still-absent"), "{}", o.report());
    assert!(
        o.stderr_str().contains("does not exist: not enabled"),
        "{}",
        o.report()
    );
}
