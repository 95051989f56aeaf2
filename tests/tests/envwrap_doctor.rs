//! `envwrap doctor PROGRAM` on real binaries: a dynamically linked C program (the
//! shim can police it), one linked statically in the test, a setuid copy, a setgid
//! copy, a copy with file capabilities, a `#!` script, and a Go binary built in the
//! sandbox (envwrap only: Go starts programs with raw system calls).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::envwrap_util::*;
use envshim_e2e::*;

const HELLO_C: &str = "#include <stdio.h>\nint main(void) { puts(\"hello\"); return 0; }\n";

#[track_caller]
fn doctor(sb: &Sandbox, program: &Path) -> Outcome {
    envwrap(sb).arg("doctor").arg(program).expect_success()
}

#[track_caller]
fn line<'a>(o: &Outcome, out: &'a str, label: &str) -> &'a str {
    out.lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| o.fail(&format!("no {label} line")))
}

#[test]
fn dynamic_binary_can_be_policed_by_the_shim() {
    let sb = Sandbox::new("envwrap_doctor_dynamic");
    let bin = compile_c("hello_dynamic", HELLO_C);
    let o = doctor(&sb, &bin);
    let out = o.stdout_str();
    assert!(
        line(&o, &out, "linkage:").contains("dynamic, interpreter /lib"),
        "{out}"
    );
    assert!(
        line(&o, &out, "format:").contains("ELF 64-bit x86-64"),
        "{out}"
    );
    assert!(line(&o, &out, "go binary:").ends_with("no"), "{out}");
    assert!(
        line(&o, &out, "elf class:").ends_with("the shim's"),
        "{out}"
    );
    assert!(
        line(&o, &out, "policed by:").contains("libenvshim.so (LD_PRELOAD) and envwrap"),
        "{out}"
    );
    // A bare name is looked up in PATH, a script is judged by its interpreter.
    let o = envwrap(&sb).args(["doctor", "sh"]).expect_success();
    expect_in(&o, &o.stdout_str(), "policed by:    libenvshim.so");
    let script = sb.write("s.sh", "#!/bin/sh\necho hi\n");
    let o = doctor(&sb, &script);
    let out = o.stdout_str();
    expect_in(&o, &out, "#! script, interpreter /bin/sh");
    expect_in(&o, &out, "interpreter /bin/sh:");
    let o = envwrap(&sb)
        .args(["doctor", "--json"])
        .arg(&bin)
        .expect_success();
    expect_in(&o, &o.stdout_str(), r#""front_end":"shim""#);
}

#[test]
fn static_binary_is_envwrap_only() {
    let sb = Sandbox::new("envwrap_doctor_static");
    let bin = compile_c_with("hello_static", HELLO_C, &["-static"]);
    let o = doctor(&sb, &bin);
    let out = o.stdout_str();
    assert!(line(&o, &out, "linkage:").ends_with("static"), "{out}");
    expect_in(&o, &out, "policed by:    envwrap only");
    // Only the supervisor sees what it starts.
    expect_in(&o, &out, "--supervise:   judges what it starts");
    expect_in(
        &o,
        &out,
        "static: no dynamic loader runs, so nothing reads LD_PRELOAD",
    );
}

#[test]
fn setuid_setgid_and_capabilities_are_envwrap_only() {
    let sb = Sandbox::new("envwrap_doctor_setuid");
    let bin = compile_c("hello_dynamic", HELLO_C);
    for (name, mode, label) in [("suid", 0o4755, "setuid:"), ("sgid", 0o2755, "setgid:")] {
        let copy = sb.join(name);
        std::fs::copy(&bin, &copy).unwrap();
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(mode)).unwrap();
        let o = doctor(&sb, &copy);
        let out = o.stdout_str();
        assert!(line(&o, &out, label).ends_with("yes"), "{out}");
        expect_in(&o, &out, "policed by:    envwrap only");
        expect_in(
            &o,
            &out,
            "the loader ignores LD_PRELOAD in secure-execution mode",
        );
        // --supervise as a user sets no_new_privs for the whole tree.
        expect_in(&o, &out, "--supervise:   runs without its privileges");
    }
    // File capabilities: a v2 security.capability attribute with cap_net_raw.
    let copy = sb.join("caps");
    std::fs::copy(&bin, &copy).unwrap();
    let mut data = Vec::new();
    for word in [0x0200_0001u32, 1 << 13, 0, 0, 0] {
        data.extend_from_slice(&word.to_le_bytes());
    }
    let path = std::ffi::CString::new(copy.to_str().unwrap()).unwrap();
    // SAFETY: both strings are NUL-terminated and `data` is a valid buffer of its length.
    let rc = unsafe {
        libc::setxattr(
            path.as_ptr(),
            c"security.capability".as_ptr(),
            data.as_ptr().cast(),
            data.len(),
            0,
        )
    };
    if rc != 0 {
        // Setting file capabilities needs CAP_SETFCAP and a file system that keeps them.
        eprintln!(
            "SKIPPED (capabilities part): setxattr security.capability: {}",
            std::io::Error::last_os_error()
        );
        return;
    }
    let o = doctor(&sb, &copy);
    let out = o.stdout_str();
    assert!(
        line(&o, &out, "capabilities:").contains("cap_net_raw"),
        "{out}"
    );
    expect_in(&o, &out, "file capabilities: the loader ignores LD_PRELOAD");
}

#[test]
fn go_binary_is_envwrap_only() {
    let sb = Sandbox::new("envwrap_doctor_go");
    let go = ["/usr/bin/go", "/usr/lib/go/bin/go", "/usr/local/go/bin/go"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.is_file());
    let Some(go) = go else {
        require(
            false,
            "go is not installed (ci/install-test-deps installs golang-go)",
        );
        return;
    };
    sb.write(
        "hello.go",
        "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n",
    );
    // A cache that outlives the sandbox: the standard library compiles once.
    let cache = target_dir().join("tmp").join("envshim-e2e-gocache");
    sb.cmd(go)
        .args(["build", "-o", "hello-go", "hello.go"])
        .env("GOCACHE", &cache)
        .env("GOPATH", sb.join("gopath"))
        .env("GOFLAGS", "-mod=mod")
        .env("GO111MODULE", "off")
        .env("GOTOOLCHAIN", "local")
        .env("HOME", sb.path())
        .timeout(std::time::Duration::from_secs(300))
        .expect_success();
    let bin = sb.join("hello-go");
    let o = doctor(&sb, &bin);
    let out = o.stdout_str();
    assert!(line(&o, &out, "go binary:").ends_with("yes"), "{out}");
    expect_in(&o, &out, "policed by:    envwrap only");
    expect_in(
        &o,
        &out,
        "Go binary: Go starts programs with raw system calls",
    );
    let o = envwrap(&sb)
        .args(["doctor", "--json"])
        .arg(&bin)
        .expect_success();
    let out = o.stdout_str();
    expect_in(&o, &out, r#""go":true"#);
    expect_in(&o, &out, r#""front_end":"envwrap-only""#);
}
