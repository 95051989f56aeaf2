//! The shim under musl: a C program linked against musl (Debian's musl-gcc),
//! with the shim preloaded. musl's loader takes the shim's `libc.so.6` for
//! itself and does not check symbol versions, so the shim loads and interposes
//! what the program calls: the exec family, posix_spawn, system and popen are
//! checked here, as in the Debian roots (tests/tests/glibc_roots.rs): no seeded
//! credential reaches the child, a plain variable does. docs/shim.md ("C
//! libraries") says what this does and does not cover.
//!
//! Without musl-gcc (package musl-tools, which ci/install-test-deps installs) the
//! tests skip with a loud line, outside CI; under CI they fail.

use envshim_e2e::*;

use crate::glibc_roots::{expect_sections, under_ci, EXEC_C, PLAIN, SPAWN_C, SYSTEM_POPEN_C};

fn musl_gcc(test: &str) -> bool {
    let found = std::process::Command::new("musl-gcc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        if under_ci() {
            panic!("{test}: musl-gcc is not installed (ci/install-test-deps installs musl-tools); CI is set, so this is a failure, not a skip");
        }
        eprintln!("!!!!! SKIPPED {test}: musl-gcc is not installed (package musl-tools). The shim is NOT tested under musl in this run. !!!!!");
    }
    found
}

fn musl_scenario(test: &str, source: &str, modes: &[&str]) {
    if !musl_gcc(test) {
        return;
    }
    let sb = Sandbox::new(test);
    let src = sb.write("prog.c", source);
    let prog = sb.join("prog");
    sb.cmd("musl-gcc")
        .arg("-O1")
        .arg("-o")
        .arg(&prog)
        .arg(&src)
        .expect_success();
    // The program is musl's: its interpreter is musl's loader.
    let o = sb.cmd("readelf").args(["-l"]).arg(&prog).expect_success();
    o.check(
        o.stdout_str().contains("ld-musl"),
        "the program is linked against musl",
    );
    let mut script = String::new();
    for m in modes {
        script.push_str(&format!(
            "echo '== {m}'\nLD_PRELOAD={} {} {m}\n",
            sh_quote(&shim_path_string()),
            sh_quote(&prog.to_string_lossy())
        ));
    }
    let (name, value) = PLAIN.split_once('=').expect("NAME=VALUE");
    let o = sb
        .cmd("/bin/sh")
        .args(["-ec", &script])
        .env_secrets()
        .env(name, value)
        .run();
    expect_sections(&o, modes);
}

#[test]
fn exec_family_under_musl() {
    musl_scenario(
        "shim_musl::exec_family_under_musl",
        EXEC_C,
        &["execve", "execvp"],
    );
}

#[test]
fn posix_spawn_under_musl() {
    musl_scenario(
        "shim_musl::posix_spawn_under_musl",
        SPAWN_C,
        &["posix_spawn", "posix_spawnp"],
    );
}

#[test]
fn system_and_popen_under_musl() {
    musl_scenario(
        "shim_musl::system_and_popen_under_musl",
        SYSTEM_POPEN_C,
        &["system", "popen"],
    );
}
