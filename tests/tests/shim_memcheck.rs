//! The fork/vfork storm of shim_threads.rs, smaller, under
//! valgrind's memcheck and with the C program built with AddressSanitizer. Both
//! watch the shim's code from inside the host process: any invalid read or write,
//! use of uninitialised memory in a branch, or a crash in the hooks is reported
//! against the run, which must then fail.

use std::time::Duration;

use envshim_e2e::*;

fn have(program: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn the_storm_is_clean_under_memcheck() {
    if !have("valgrind") {
        assert!(
            std::env::var_os("CI").is_none(),
            "valgrind is missing in CI (ci/install-test-deps installs it)"
        );
        eprintln!("skipped: valgrind is not installed");
        return;
    }
    let sb = Sandbox::new("memcheck_storm");
    let forker = compile_c_with("forker", FORKER_C, &["-pthread", "-g"]);
    let report = sb.join("child-report");
    let o = sb
        .cmd("valgrind")
        .args([
            "--tool=memcheck",
            "--error-exitcode=99",
            "--track-origins=no",
            "-q",
        ])
        .arg(&forker)
        .arg("60")
        .arg(printenv_bin())
        .arg(&report)
        .env_secrets()
        .with_shim()
        .timeout(Duration::from_secs(400))
        .run();
    assert!(!o.timed_out, "memcheck run did not finish\n{}", o.report());
    assert!(
        o.status.success(),
        "memcheck reported errors, or the run failed\n{}",
        o.report()
    );
    assert!(
        o.stdout_str().starts_with(
            "fork=60 fork_failures=0 vfork=60 vfork_failures=0 spawn=60 spawn_failures=0 report=1 "
        ),
        "{}",
        o.report()
    );
    let r = PrintenvReport::read(&report);
    for n in SECRET_NAMES {
        assert!(!r.has(n), "a child holds {n}");
    }
}

#[test]
fn the_storm_is_clean_under_address_sanitizer() {
    let sb = Sandbox::new("asan_storm");
    let forker = compile_c_with(
        "forker_asan",
        FORKER_C,
        &[
            "-pthread",
            "-g",
            "-fsanitize=address",
            "-fno-omit-frame-pointer",
        ],
    );
    let report = sb.join("child-report");
    let o = sb
        .cmd(&forker)
        .arg("500")
        .arg(printenv_bin())
        .arg(&report)
        .env_secrets()
        .with_shim()
        // The shim is preloaded ahead of ASan's runtime: tell ASan that is intended.
        .env(
            "ASAN_OPTIONS",
            "verify_asan_link_order=0:detect_leaks=0:abort_on_error=0",
        )
        .timeout(Duration::from_secs(300))
        .run();
    assert!(!o.timed_out, "the run did not finish\n{}", o.report());
    assert!(
        !o.stderr_str().contains("AddressSanitizer"),
        "ASan reported an error\n{}",
        o.report()
    );
    assert!(o.status.success(), "the run failed\n{}", o.report());
    assert!(
        o.stdout_str()
            .starts_with("fork=500 fork_failures=0 vfork=500 vfork_failures=0 spawn=500 spawn_failures=0 report=1 "),
        "{}",
        o.report()
    );
}
