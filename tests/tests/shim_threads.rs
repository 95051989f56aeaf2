//! Fork, vfork and posix_spawn
//! under threads. A C program runs 8 threads that malloc, free and take a mutex in a
//! tight loop while its main thread does 3,334 fork+execve, 3,334 vfork+execve and
//! 3,334 posix_spawn of /bin/true (10,003 execs in all) under the shim, with an
//! environment that holds a token (so every exec takes the filtering path, not the
//! pass-through one). Between fork/vfork and exec the shim must take no lock and call
//! no malloc: a lock held by one of the other threads at fork time would never be
//! released in the child, and a vfork child runs on its parent's memory. The run must
//! finish within a bound, every child must exit 0, and nothing may crash.

use std::time::Duration;

use envshim_e2e::*;

/// 3 x 3,334 + 1 = 10,003 execs.
const ITERATIONS: u32 = 3334;
const BOUND: Duration = Duration::from_secs(120);

#[test]
fn fork_vfork_and_posix_spawn_under_eight_busy_threads() {
    let sb = Sandbox::new("threads_fork_vfork");
    let forker = compile_c_with("forker", FORKER_C, &["-pthread"]);
    let report = sb.join("child-report");
    let o = sb
        .cmd(&forker)
        .arg(ITERATIONS.to_string())
        .arg(printenv_bin())
        .arg(&report)
        .env_secrets()
        .with_shim()
        .timeout(BOUND)
        .run();
    assert!(
        !o.timed_out,
        "no result within {BOUND:?}: deadlock or starvation\n{}",
        o.report()
    );
    assert!(
        o.status.success(),
        "the run failed or crashed\n{}",
        o.report()
    );
    let summary = o.stdout_str();
    let expected =
        format!("fork={ITERATIONS} fork_failures=0 vfork={ITERATIONS} vfork_failures=0 spawn={ITERATIONS} spawn_failures=0 report=1 ");
    assert!(summary.starts_with(&expected), "{}", o.report());
    assert!(
        !summary.contains("worker_ops=0\n"),
        "the threads never ran\n{}",
        o.report()
    );
    assert!(
        shim_lines(&o.stderr).is_empty(),
        "the shim complained\n{}",
        o.report()
    );
    eprintln!(
        "fork/vfork under threads: {} execs in {:?}",
        3 * ITERATIONS + 1,
        o.elapsed
    );

    // What the children received: the filtering path ran (no token, the shim kept).
    let r = PrintenvReport::read(&report);
    sb.secrets()
        .assert_absent("a vfork child's environment", &r.all_bytes());
    for n in SECRET_NAMES {
        assert!(!r.has(n), "a vfork child holds {n}");
    }
    assert_eq!(
        r.get("LD_PRELOAD"),
        Some(shim_path_string().as_bytes()),
        "{r:?}"
    );
}
