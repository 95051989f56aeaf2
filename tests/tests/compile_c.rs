//! `compile_c` builds C helpers at test time (cached by source hash, with extra flags),
//! and the printenv helper reports exactly the argv and environment it was given.

use envshim_e2e::*;

fn panic_message(e: Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn printenv_helper_reports_argv_and_environment() {
    let bin = printenv_bin();
    assert!(
        bin.starts_with(cc_cache_dir()),
        "{} not in the cache",
        bin.display()
    );
    assert_eq!(
        printenv_bin(),
        bin,
        "unchanged source must reuse the binary"
    );

    let sb = Sandbox::new("printenv_stdout");
    let o = sb
        .cmd(&bin)
        .args(["a b", "", "c\nd"])
        .env_clear()
        .env("FOO", "bar=baz")
        .env("EMPTY", "")
        .expect_success();
    let r = PrintenvReport::parse(&o.stdout).expect("parseable report");
    assert_eq!(
        &r.argv[1..],
        &[b"a b".to_vec(), b"".to_vec(), b"c\nd".to_vec()]
    );
    assert_eq!(r.get("FOO"), Some(&b"bar=baz"[..]));
    assert_eq!(r.get("EMPTY"), Some(&b""[..]));
    let mut names = r.names();
    names.sort();
    assert_eq!(names, ["EMPTY", "FOO"]);
    assert_eq!(
        r.proc_environ, r.environ,
        "no preload: libc environ equals what execve gave"
    );
}

#[test]
fn printenv_report_file_and_control_run_with_secrets() {
    let sb = Sandbox::new("printenv_file");
    let report = sb.join("report.bin");
    let o = sb
        .cmd(printenv_bin())
        .arg(format!("--report={}", report.display()))
        .env_secrets()
        .expect_success();
    assert!(o.stdout.is_empty());
    let r = PrintenvReport::read(&report);
    // Control run without the shim: every seeded value arrives.
    for s in sb.secrets().iter() {
        assert_eq!(
            r.get(s.name()),
            Some(s.value().as_bytes()),
            "{} not delivered",
            s.name()
        );
    }
    assert!(!sb.secrets().is_clean(&r.all_bytes()));
    assert!(!format!("{r:?}").contains(sb.secrets().value("GH_TOKEN")));
}

#[test]
fn extra_flags_static_and_pthread() {
    let src = r#"
        #include <pthread.h>
        #include <stdio.h>
        static void *run(void *arg) { (void)arg; puts("thread ran"); return NULL; }
        int main(void) { pthread_t t; pthread_create(&t, NULL, run, NULL); pthread_join(t, NULL); return 7; }
    "#;
    let dynamic = compile_c_with("threads", src, &["-pthread"]);
    let stat = compile_c_with("threads", src, &["-pthread", "-static"]);
    assert_ne!(dynamic, stat, "flags are part of the cache key");
    let sb = Sandbox::new("cc_flags");
    for bin in [&dynamic, &stat] {
        let o = sb.cmd(bin).expect_exit(7);
        assert_eq!(o.stdout_str(), "thread ran\n");
    }
    // A static binary has no PT_INTERP: /proc/PID/maps of it shows no ld.so.
    let o = sb
        .cmd("sh")
        .args(["-c", "exec \"$1\" >/dev/null; :", "sh"])
        .arg(&stat)
        .expect_exit(7);
    drop(o);
    let elf = std::fs::read(&stat).unwrap();
    assert!(
        !elf.windows(b"/lib64/ld-linux".len())
            .any(|w| w == b"/lib64/ld-linux"),
        "static binary names the dynamic loader"
    );
}

#[test]
fn changed_source_recompiles_and_errors_are_reported() {
    let a = compile_c("variant", "int main(void) { return 1; }\n");
    let b = compile_c("variant", "int main(void) { return 2; }\n");
    assert_ne!(a, b);
    let sb = Sandbox::new("cc_variant");
    sb.cmd(&a).expect_exit(1);
    sb.cmd(&b).expect_exit(2);

    let own = compile_c_in(
        sb.path(),
        "insandbox",
        "int main(void) { return 0; }\n",
        &[],
    );
    assert!(own.starts_with(sb.path()));
    sb.cmd(&own).expect_success();

    let r = std::panic::catch_unwind(|| {
        compile_c("broken", "int main(void) { return undeclared_thing; }\n")
    });
    let msg = panic_message(r.expect_err("must not compile"));
    assert!(
        msg.contains("compiling broken failed") && msg.contains("undeclared_thing"),
        "{msg}"
    );
}

#[test]
fn artifact_paths() {
    let root = workspace_root();
    assert!(root.join("Cargo.toml").is_file());
    assert!(root.join("tests").join("Cargo.toml").is_file());
    assert!(
        target_dir().join("CACHEDIR.TAG").is_file()
            || std::env::var_os("CARGO_TARGET_DIR").is_some()
    );
    // The shim and envwrap are built on demand, and are newer than their sources.
    for artifact in [shim_so(), envwrap_bin()] {
        assert!(artifact.is_file(), "{}", artifact.display());
    }
}
