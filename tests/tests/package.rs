//! The Debian package as a user meets it: ci/package builds it with cargo-deb, and
//! dpkg installs it into a root of its own (its own admin directory; maintainer
//! scripts run with DPKG_ROOT), where the installed envwrap runs and the
//! installed shim polices an exec; then dpkg removes and purges it, and nothing
//! is left; its prerm takes the whole-host mode's line out of
//! /etc/ld.so.preload (packaging/envshim-host). lintian finds no error and no warning but the ones the package's
//! overrides explain (packaging/debian/lintian-overrides).

use envshim_e2e::*;
use std::path::{Path, PathBuf};

fn build_package(sb: &Sandbox) -> PathBuf {
    // What ci/package packages, built if stale as every test's artifacts are.
    shim_so();
    static_envwrap_bin();
    sb.cmd(workspace_root().join("ci/package"))
        .env("ENVSHIM_INSTALL_NO_BUILD", "1")
        .env("CARGO_TARGET_DIR", target_dir())
        .current_dir(workspace_root())
        .timeout(std::time::Duration::from_secs(600))
        .expect_success();
    let dir = target_dir().join("debian");
    std::fs::read_dir(&dir)
        .expect("target/debian")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "deb"))
        .expect("a .deb")
}

/// `dpkg` acting on a root of its own.
fn dpkg(sb: &Sandbox, root: &Path) -> TestCommand {
    let mut c = sb.cmd("dpkg");
    c.arg(format!(
        "--admindir={}",
        root.join("var/lib/dpkg").display()
    ))
    .arg(format!("--instdir={}", root.display()))
    .args([
        "--force-script-chrootless",
        "--force-not-root",
        "--force-depends",
    ])
    .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
    c
}

/// One test: the build writes one staging directory and one .deb.
#[test]
fn the_package_is_lintian_clean_installs_works_and_goes_away() {
    if std::process::Command::new("dpkg")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("package: not a Debian machine (no dpkg): the package is not built");
        return;
    }
    let sb = Sandbox::new("package");
    let deb = build_package(&sb);
    lintian_has_no_complaint_left_unexplained(&sb, &deb);
    let root = sb.mkdir("root");
    for d in [
        "var/lib/dpkg/info",
        "var/lib/dpkg/updates",
        "var/lib/dpkg/triggers",
    ] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("var/lib/dpkg/status"), "").unwrap();
    dpkg(&sb, &root).arg("-i").arg(&deb).expect_success();

    for rel in [
        "usr/bin/envwrap",
        "usr/lib/envshim/envwrap",
        "usr/lib/envshim/libenvshim.so",
        "usr/share/man/man1/envwrap.1.gz",
        "usr/share/man/man5/envshim.toml.5.gz",
        "usr/share/doc/envshim/examples/loop.toml",
        "usr/share/doc/envshim/examples/loop/env",
        "usr/share/doc/envshim/copyright",
        "usr/sbin/envshim-host",
        "usr/share/man/man8/envshim-host.8.gz",
        "usr/share/bash-completion/completions/envwrap",
        "usr/share/zsh/vendor-completions/_envwrap",
        "usr/share/fish/vendor_completions.d/envwrap.fish",
    ] {
        assert!(root.join(rel).exists(), "{rel} is not installed");
    }
    // Every envshim path under /usr (not /usr/local) that the README and docs/
    // name is one the package installs.
    let named = envshim_e2e::docs_paths::named_under("/usr/");
    let named: Vec<_> = named.iter().filter(|p| !p.starts_with("local/")).collect();
    assert!(
        named.iter().any(|p| *p == "share/doc/envshim/examples"),
        "{named:?}"
    );
    for rel in named {
        assert!(
            root.join("usr").join(rel).exists(),
            "the docs name /usr/{rel}, which the package does not install"
        );
    }
    assert!(
        root.join("etc/envshim").is_dir(),
        "/etc/envshim was not made"
    );
    assert_eq!(
        std::fs::read_dir(root.join("etc/envshim")).unwrap().count(),
        0
    );

    let envwrap = root.join("usr/bin/envwrap");
    let o = sb.cmd(&envwrap).arg("--version").expect_success();
    assert!(o.stdout_str().starts_with("envwrap "), "{}", o.report());
    // One policed exec through the installed shim: sh runs env with the shell's
    // environment, and the shim in sh takes the token out.
    let o = sb
        .cmd("/bin/sh")
        .args(["-c", "env"])
        .env("LD_PRELOAD", root.join("usr/lib/envshim/libenvshim.so"))
        .env_secrets()
        .expect_success();
    assert!(!o.stdout_str().contains("GH_TOKEN="), "{}", o.report());
    // And envwrap puts the installed shim into what it runs.
    let o = sb
        .cmd(&envwrap)
        .args(["--", "/bin/sh", "-c", "echo \"$LD_PRELOAD\""])
        .expect_success();
    assert!(
        o.stdout_str().contains("usr/lib/envshim/libenvshim.so"),
        "{}",
        o.report()
    );

    // The whole-host switch is there and off: the package never enables it.
    let host_tool = root.join("usr/sbin/envshim-host");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&host_tool).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755, "envshim-host is not executable");
    }
    assert!(
        !root.join("etc/ld.so.preload").exists(),
        "installing the package wrote /etc/ld.so.preload"
    );
    let o = sb
        .cmd(&host_tool)
        .args(["status", "--root"])
        .arg(&root)
        .expect_exit(3);
    assert!(o.stdout_str().contains("off:"), "{}", o.report());
    // Removing the package takes the shim's line out of /etc/ld.so.preload
    // (its prerm runs `envshim-host disable`), so that no process is left
    // with a loader error for a shim that is gone; another line stays. Root
    // only: disable writes the file as root's.
    let preload = root.join("etc/ld.so.preload");
    let as_root = private_host_available();
    if as_root {
        std::fs::write(&preload, "/usr/lib/envshim/libenvshim.so\nlibother.so\n").unwrap();
    }

    dpkg(&sb, &root)
        .args(["--purge", "envshim"])
        .expect_success();
    if as_root {
        assert_eq!(
            std::fs::read_to_string(&preload).unwrap(),
            "libother.so\n",
            "removing the package did not take the shim's line out of /etc/ld.so.preload"
        );
        std::fs::remove_file(&preload).unwrap();
    }
    let left: Vec<_> = walk(&root)
        .into_iter()
        .filter(|p| !p.starts_with(root.join("var")))
        .filter(|p| p.is_file() || p.is_symlink())
        .collect();
    assert!(left.is_empty(), "left after purge: {left:?}");
    assert!(
        !root.join("etc/envshim").exists(),
        "/etc/envshim is left after purge"
    );
}

/// lintian reads the overrides the package ships (each one explained there).
fn lintian_has_no_complaint_left_unexplained(sb: &Sandbox, deb: &Path) {
    if std::process::Command::new("lintian")
        .arg("--version")
        .output()
        .is_err()
    {
        panic!("lintian is not installed: ci/install-test-deps installs it");
    }
    // Pedantic and informational tags too: each is fixed or explained in the
    // overrides.
    let o = sb
        .cmd("lintian")
        .args(["--fail-on", "none", "--pedantic", "--display-info"])
        .arg(deb)
        .expect_success();
    let out = o.stdout_str();
    let complaints: Vec<&str> = out
        .lines()
        .filter(|l| {
            ["E: ", "W: ", "I: ", "P: "]
                .iter()
                .any(|t| l.starts_with(t))
        })
        .collect();
    assert!(complaints.is_empty(), "lintian:\n{}", complaints.join("\n"));
    // The summary is one line, as `apt search` shows it.
    let o = sb
        .cmd("dpkg-deb")
        .args(["-f"])
        .arg(deb)
        .arg("Description")
        .expect_success();
    let summary = o
        .stdout_str()
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    assert!(
        !summary.is_empty() && summary.len() <= 72 && !summary.contains('('),
        "the package's summary is not one short line: {summary:?}"
    );
    // The maintainer scripts: postinst makes /etc/envshim and recompiles a
    // managed layer; prerm disables the whole-host mode on removal; postrm
    // removes /etc/envshim on purge.
    for script in ["postinst", "prerm", "postrm"] {
        let o = sb
            .cmd("dpkg-deb")
            .args(["-I"])
            .arg(deb)
            .arg(script)
            .expect_success();
        assert!(
            o.stdout_str().starts_with("#!/bin/sh"),
            "{script}: {}",
            o.report()
        );
    }
    let md5sums = sb
        .cmd("dpkg-deb")
        .args(["-I"])
        .arg(deb)
        .arg("md5sums")
        .expect_success();
    assert!(
        md5sums
            .stdout_str()
            .contains("usr/lib/envshim/libenvshim.so"),
        "no md5sums for the installed files"
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() && !p.is_symlink() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}
