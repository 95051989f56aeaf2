//! A password passed on in the forms programs write without being asked
//! (`printf %q`, `${v@Q}`, `shlex.quote`, a percent-encoded URL, a query
//! string, JSON once and twice, an SQL literal, HTML) reaches no child and no argument, under the
//! shim and under the supervisor alone, and no message shows it.
//!
//! bash holds the password by a grant, as a deploy script would, and makes
//! each copy with the real tool that makes it (python3 reads the password from
//! its standard input, which no policy touches). The password is a fake made
//! here, with `@`, `/`, quotes, `$`, `\` and a space in it; it is not one of the
//! harness's seeded values, so this file checks every output for it itself,
//! and a failure prints outputs with each form replaced by `<form N>`.

use envshim_e2e::rng::Rng;
use envshim_e2e::*;

/// The copies, each made by the tool that makes it, into variables named
/// after the form, then one line each into forms.txt.
const MAKE_COPIES: &str = r#"
py() { printf '%s' "$DB_PASSWORD" | python3 -c "import sys, json, shlex, html, urllib.parse as u; p = sys.stdin.read(); print($1)"; }
export PCT="postgres://app:$(py 'u.quote(p, safe="")')@db.internal/app"
export FORM="jdbc:postgresql://db/app?user=app&password=$(py 'u.quote_plus(p)')"
export JSON="$(py 'json.dumps({"password": p})')"
export JSON2="$(py 'json.dumps(json.dumps({"password": p}))')"
export PRINTQ="$(printf %q "$DB_PASSWORD")"
export BASHQ="${DB_PASSWORD@Q}"
export SHLEX="$(py 'shlex.quote(p)')"
export SQL="$(py 'chr(39) + p.replace(chr(39), 2 * chr(39)) + chr(39)')"
export HTML="<password>$(py 'html.escape(p)')</password>"
printf '%s\n' "$PCT" "$FORM" "$JSON" "$JSON2" "$PRINTQ" "$BASHQ" "$SHLEX" "$SQL" "$HTML" > forms.txt
"#;

/// What the launcher does with the copies: a grandchild writes its
/// environment, and each copy is handed to /bin/echo as an argument.
const USE_COPIES: &str = r#"
sh -c 'env > child.env'
for v in PCT FORM JSON JSON2 PRINTQ BASHQ SHLEX SQL HTML; do
  /bin/echo "DB_PASSWORD=${!v} ./migrate" >> echoed.txt
  echo "$v: $?"
done
"#;

const NAMES: [&str; 9] = [
    "PCT", "FORM", "JSON", "JSON2", "PRINTQ", "BASHQ", "SHLEX", "SQL", "HTML",
];

/// A password with a byte of each kind the forms escape.
fn password() -> String {
    let mut rng = Rng::from_entropy();
    format!("p@ss/w0rd'{}\"$x\\y z%&<", rng.alnum(12))
}

const GRANT: &str = "version = 1\n[[grant]]\nname = \"DB_PASSWORD\"\nprogram = \"bash\"\n";

/// `text` with the password and every form of it replaced, for a report.
fn hidden(text: &str, password: &str, forms: &[String]) -> String {
    let mut out = text.replace(password, "<password>");
    for (i, f) in forms.iter().enumerate() {
        out = out.replace(f.as_str(), &format!("<form {i}>"));
    }
    out
}

/// Runs the launcher under `front` and checks what a user would: no copy in
/// the grandchild's environment, every argument refused, no form anywhere.
fn check(front: &str) {
    let sb = Sandbox::new(&format!("escaped_{front}"));
    let pw = password();
    let policy = sb.write("grant.toml", GRANT);
    let script = format!("{MAKE_COPIES}{USE_COPIES}");
    let mut c = match front {
        "shim" => {
            let mut c = sb.cmd("/bin/bash");
            c.with_shim().with_policy(&policy);
            c
        }
        _ => {
            let mut c = sb.cmd(envwrap_bin());
            c.arg("--policy").arg(&policy);
            c.args(["--supervise", "--no-preload", "--"]);
            c.arg("/bin/bash");
            c
        }
    };
    c.args(["-c", &script]).env("DB_PASSWORD", &pw);
    let out = c.run();
    let forms: Vec<String> = String::from_utf8_lossy(&sb.read("forms.txt"))
        .lines()
        .map(str::to_string)
        .collect();
    let report = || {
        format!(
            "exit {:?}\nstdout:\n{}\nstderr:\n{}",
            out.status.code(),
            hidden(&out.stdout_str(), &pw, &forms),
            hidden(&out.stderr_str(), &pw, &forms)
        )
    };
    assert_eq!(forms.len(), NAMES.len(), "{}", report());
    for (name, form) in NAMES.iter().zip(&forms) {
        assert_ne!(form, &pw, "{name} is the password as it is");
        assert!(
            !form.contains(pw.as_str()),
            "{name} holds the password's bytes"
        );
    }
    let env = String::from_utf8_lossy(&sb.read("child.env")).into_owned();
    assert!(
        env.contains("PATH="),
        "the grandchild's environment is empty"
    );
    let echoed = if sb.join("echoed.txt").exists() {
        String::from_utf8_lossy(&sb.read("echoed.txt")).into_owned()
    } else {
        String::new()
    };
    for name in NAMES {
        assert!(
            !env.lines().any(|l| l.starts_with(&format!("{name}="))),
            "{front}: {name} reached the grandchild"
        );
        assert!(
            out.stdout_str().contains(&format!("{name}: 126")),
            "{front}: an argument holding {name} was not refused\n{}",
            report()
        );
    }
    let outputs = [
        ("the grandchild's environment", env.as_str()),
        ("what echo wrote", echoed.as_str()),
        ("stdout", &out.stdout_str()),
        ("stderr", &out.stderr_str()),
    ];
    for (what, text) in outputs {
        for (name, form) in
            std::iter::once(("the password", &pw)).chain(NAMES.iter().copied().zip(&forms))
        {
            assert!(
                !text.contains(form.as_str()),
                "{front}: {name} is in {what}"
            );
        }
    }
    assert!(
        out.stderr_str().contains("holds the value of DB_PASSWORD"),
        "{front}: the refusal does not name the password\n{}",
        report()
    );
}

#[test]
fn escaped_copies_reach_no_child_and_no_argument_under_the_shim() {
    check("shim");
}

#[test]
fn escaped_copies_reach_no_child_and_no_argument_under_the_supervisor() {
    check("supervisor");
}

/// A program path that holds the password percent-encoded (a directory named
/// after a URL-quoted value): refused, and every message shows the path with
/// the copy replaced by its description, in envwrap's text and JSON and in the
/// shim's line.
#[test]
fn an_escaped_copy_in_a_program_path_is_never_printed() {
    let sb = Sandbox::new("escaped_path");
    let pw = password();
    let mut make = std::process::Command::new("python3");
    make.args([
        "-c",
        "import sys, urllib.parse as u; print(u.quote(sys.stdin.read(), safe=''), end='')",
    ]);
    let quoted = {
        use std::io::Write;
        let mut child = make
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs");
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(pw.as_bytes()).expect("python3 reads");
        }
        let out = child.wait_with_output().expect("python3 ends");
        String::from_utf8(out.stdout).expect("quoted text is ASCII")
    };
    assert!(quoted.contains("%40"));
    let dir = sb.mkdir(format!("opt/{quoted}"));
    sb.write_executable(
        format!("opt/{quoted}/prog"),
        "#!/bin/sh\necho ran > ran.txt\n",
    );
    let prog = dir.join("prog");
    let forms = vec![quoted.clone()];
    for json in [false, true] {
        let mut c = sb.cmd(envwrap_bin());
        if json {
            c.arg("--json");
        }
        let out = c.arg("--").arg(&prog).env("DB_PASSWORD", &pw).run();
        let err = out.stderr_str();
        assert_eq!(
            out.status.code(),
            Some(126),
            "{}",
            hidden(&err, &pw, &forms)
        );
        assert!(
            !err.contains(&quoted),
            "envwrap printed the path: {}",
            hidden(&err, &pw, &forms)
        );
        assert!(
            err.contains("holds the value of DB_PASSWORD"),
            "{}",
            hidden(&err, &pw, &forms)
        );
    }
    let mut c = sb.cmd("python3");
    c.args([
        "-c",
        "import os, sys\ntry:\n    os.execv(sys.argv[1], [sys.argv[1]])\nexcept OSError:\n    sys.exit(3)",
    ])
    .arg(&prog)
    .with_shim()
    .env("DB_PASSWORD", &pw);
    let out = c.run();
    let err = out.stderr_str();
    assert_ne!(out.status.code(), Some(0), "{}", hidden(&err, &pw, &forms));
    assert!(
        err.contains("refused to run"),
        "{}",
        hidden(&err, &pw, &forms)
    );
    assert!(
        !err.contains(&quoted),
        "the shim printed the path: {}",
        hidden(&err, &pw, &forms)
    );
    assert!(!sb.join("ran.txt").exists(), "the program ran");
}
