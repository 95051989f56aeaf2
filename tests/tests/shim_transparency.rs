//! Transparency. With a policy that refuses nothing (no
//! credential names, no shapes, argv secrets allowed, unsafe names kept, sticky on),
//! the shim must be invisible: `make -j2` of a generated C project (12 sources, a
//! header, a Makefile) and a shell pipeline give byte-identical results with and
//! without it: the same stdout, stderr and exit status, the same object files and
//! program, and the same environment in every child (less `LD_PRELOAD`, which is the
//! shim itself).
//!
//! The environment carries names and values the built-in policy WOULD change (a
//! `*_TOKEN` name, a token-shaped value, an unsafe `LD_LIBRARY_PATH`, `BASH_ENV`),
//! so a shim that ignored the permissive policy, or changed anything it allows,
//! makes the outputs differ.

use std::path::Path;

use envshim_e2e::*;

const SOURCES: usize = 12;

/// Writes the project into `dir`: `f00.c` … `f11.c`, `lib.h`, `main.c`, `Makefile`.
fn write_project(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let mut header = String::from("#ifndef LIB_H\n#define LIB_H\n");
    let mut main = String::from("#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include \"lib.h\"\nint main(void) {\n    long total = 0;\n");
    for i in 0..SOURCES {
        header.push_str(&format!("long f{i:02}(long x);\n"));
        let body = format!(
            "#include \"lib.h\"\n/* source {i} */\nlong f{i:02}(long x) {{\n    long acc = {i};\n    for (long k = 0; k < x; k++) acc = (acc * 31 + k + {i}) % 1000003;\n    return acc;\n}}\n"
        );
        std::fs::write(dir.join(format!("f{i:02}.c")), body).unwrap();
        main.push_str(&format!(
            "    printf(\"f{i:02}=%ld\\n\", f{i:02}({}));\n    total += f{i:02}({});\n",
            100 + i,
            100 + i
        ));
    }
    header.push_str("#endif\n");
    for name in [
        "TRANSPARENCY_MARK",
        "MY_API_TOKEN",
        "LD_LIBRARY_PATH",
        "BASH_ENV",
    ] {
        main.push_str(&format!(
            "    printf(\"{name}=%s\\n\", getenv(\"{name}\") ? getenv(\"{name}\") : \"(unset)\");\n"
        ));
    }
    main.push_str("    printf(\"shaped=%zu\\n\", getenv(\"SHAPED_VALUE\") ? strlen(getenv(\"SHAPED_VALUE\")) : 0);\n    printf(\"total=%ld\\n\", total);\n    return 0;\n}\n");
    std::fs::write(dir.join("lib.h"), header).unwrap();
    std::fs::write(dir.join("main.c"), main).unwrap();
    let objs: Vec<String> = (0..SOURCES).map(|i| format!("f{i:02}.o")).collect();
    let makefile = format!(
        "CC = cc\nCFLAGS = -O1 -Wall\nOBJS = main.o {objs}\n\n\
         all: prog\n\t./prog > prog.out\n\t@echo built and ran prog\n\
         \t@env | grep -c -e '^MY_API_TOKEN=' -e '^SHAPED_VALUE=' -e '^LD_LIBRARY_PATH=' -e '^BASH_ENV='\n\
         \t@/bin/echo \"$$SHAPED_VALUE\" | cut -c1-4\n\n\
         prog: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n\n\
         %.o: %.c lib.h\n\t$(CC) $(CFLAGS) -c -o $@ $<\n\n\
         clean:\n\trm -f prog prog.out $(OBJS)\n\n.PHONY: all clean\n",
        objs = objs.join(" ")
    );
    std::fs::write(dir.join("Makefile"), makefile).unwrap();
}

/// Everything the build produced, by file name, for a byte-for-byte comparison.
fn outputs(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name.ends_with(".o") || name == "prog" || name == "prog.out")
                .then(|| (name, std::fs::read(e.path()).unwrap()))
        })
        .collect();
    v.sort();
    v
}

/// A pipeline through several exec'd programs (and pipes, a subshell, a here-string,
/// xargs), printing the environment it ran with, less the shim's own entries
/// (`LD_PRELOAD`, and the start-up hint each child of a policed parent gets).
const PIPELINE: &str = r#"
set -o pipefail
printf '%s\n' delta alpha charlie bravo alpha | sort | uniq -c | awk '{print $2 ":" $1}' | tr a-z A-Z
/bin/echo "$SHAPED_VALUE" | cut -c1-4
seq 1 200 | xargs -n 50 echo | wc -l
( cd / && /bin/pwd ) | sed 's/^/cwd=/'
env | grep -v -e '^LD_PRELOAD=' -e '^ENVSHIM_HINT=' -e '^_=' | LC_ALL=C sort | sha256sum
env | grep -c -e '^MY_API_TOKEN=' -e '^SHAPED_VALUE=' -e '^LD_LIBRARY_PATH=' -e '^BASH_ENV='
/usr/bin/env -i /usr/bin/env | grep -v -e '^LD_PRELOAD=' -e '^ENVSHIM_POLICY=' -e '^ENVSHIM_HINT=' | wc -l
exit 3
"#;

fn shaped_value() -> String {
    // Token-shaped, but not one of the sandbox's seeded values (which must never be
    // printed): ghp_ + 36 alphanumerics.
    format!("ghp_{}", "Zz09".repeat(9))
}

fn command(sb: &Sandbox, program: &str, shim: Option<&Path>) -> TestCommand {
    let mut c = sb.cmd(program);
    c.env("MY_API_TOKEN", "named-like-a-token-but-harmless")
        .env("SHAPED_VALUE", shaped_value())
        .env("LD_LIBRARY_PATH", "/nonexistent/lib")
        .env("BASH_ENV", "/dev/null")
        .env("TRANSPARENCY_MARK", "same-either-way")
        .env("LC_ALL", "C");
    if let Some(policy) = shim {
        c.with_shim().with_policy(policy);
    } else {
        // The same variable without a shim to read it: only LD_PRELOAD differs.
        c.with_policy(sb.join("permissive.toml"));
    }
    c
}

#[test]
fn make_j2_is_byte_identical_with_and_without_the_shim() {
    let sb = Sandbox::new("transparency_make");
    let policy = sb.write("permissive.toml", PERMISSIVE_POLICY);
    let dir = sb.join("project");
    write_project(&dir);

    let build = |shim: Option<&Path>| {
        let o = command(&sb, "make", shim)
            .args(["-j2", "--no-print-directory", "-C"])
            .arg(&dir)
            .expect_success();
        let files = outputs(&dir);
        command(&sb, "make", None)
            .args(["-s", "-C"])
            .arg(&dir)
            .arg("clean")
            .expect_success();
        (o, files)
    };
    let (plain, plain_files) = build(None);
    let (shimmed, shim_files) = build(Some(&policy));

    assert_eq!(
        plain_files.len(),
        SOURCES + 1 + 2,
        "objects, prog, prog.out"
    );
    assert!(
        String::from_utf8_lossy(&plain_files.iter().find(|(n, _)| n == "prog.out").unwrap().1)
            .contains(
                "TRANSPARENCY_MARK=same-either-way\nMY_API_TOKEN=named-like-a-token-but-harmless\n"
            )
    );
    assert_eq!(
        plain.stdout_str(),
        shimmed.stdout_str(),
        "make's stdout differs\n--- without ---\n{}\n--- with ---\n{}",
        plain.report(),
        shimmed.report()
    );
    assert_eq!(
        plain.stderr_str(),
        shimmed.stderr_str(),
        "make's stderr differs\n{}",
        shimmed.report()
    );
    assert_eq!(plain.status.code(), shimmed.status.code());
    for ((name, a), (name2, b)) in plain_files.iter().zip(&shim_files) {
        assert_eq!(name, name2);
        assert!(a == b, "{name} differs with the shim");
    }
    assert_eq!(plain_files.len(), shim_files.len());
}

#[test]
fn shell_pipeline_is_byte_identical_with_and_without_the_shim() {
    let sb = Sandbox::new("transparency_pipeline");
    let policy = sb.write("permissive.toml", PERMISSIVE_POLICY);
    let plain = command(&sb, "bash", None)
        .args(["-c", PIPELINE])
        .expect_exit(3);
    let shimmed = command(&sb, "bash", Some(&policy))
        .args(["-c", PIPELINE])
        .expect_exit(3);
    assert_eq!(
        plain.stdout_str(),
        shimmed.stdout_str(),
        "the pipeline's stdout differs\n--- without ---\n{}\n--- with ---\n{}",
        plain.report(),
        shimmed.report()
    );
    assert_eq!(plain.stderr, shimmed.stderr, "{}", shimmed.report());
    // The pipeline saw all four names the built-in policy would have changed.
    assert!(plain.stdout_str().contains("\n4\n"), "{}", plain.report());
}
