//! The secret sweep's own tests (`ci/secret-sweep`, tests/src/collect.rs,
//! docs/security.md "Secret hygiene"): the scan finds a planted value and names the
//! file and the variable, never the value; a clean collection passes; a broken one
//! (no values recorded, no outputs) fails; the live filter redacts; and the seeded
//! values cover every shape the policy recognises.

use std::path::{Path, PathBuf};

use envpolicy::shape::{find_shape, Shape as PolicyShape, ShapeSet};
use envshim_e2e::collect::write_secrets_record;
use envshim_e2e::*;

fn sweep(sb: &Sandbox) -> TestCommand {
    let mut c = sb.cmd(python3());
    c.arg(workspace_root().join("ci/secret-sweep"));
    c
}

/// A collection planted in the sandbox: this sandbox's values recorded, a clean
/// command output, and nothing else yet.
fn planted(sb: &Sandbox) -> PathBuf {
    let dir = sb.mkdir("collection");
    write_secrets_record(&dir, sb.secrets());
    let clean = sb.secrets().redact(format!(
        "a report that names GH_TOKEN and holds {} redacted\n",
        sb.secrets().value("GH_TOKEN")
    ));
    sb.write("collection/out/bin/test/1-0.stdout", clean);
    sb.write("collection/out/bin/test/1-0.stderr", "");
    dir
}

#[track_caller]
fn leak_lines(o: &Outcome) -> Vec<String> {
    o.stdout_str()
        .lines()
        .filter(|l| l.starts_with("LEAK: "))
        .map(str::to_string)
        .collect()
}

#[test]
fn scan_of_a_clean_collection_passes() {
    let sb = Sandbox::new("sweep_clean");
    let dir = planted(&sb);
    let o = sweep(&sb).arg("--scan").arg(&dir).expect_success();
    assert!(leak_lines(&o).is_empty(), "{o:?}");
    assert!(o.stderr_str().contains("clean: no seeded value"), "{o:?}");
}

/// The scan must fail on a planted value, in a command output, a log file and the
/// cargo output, delimited or inside a longer run of letters, and name the file,
/// the variable and its shape. The harness checks the sweep's own output for
/// values (sb.cmd attaches the secrets), so a report that printed one fails here.
#[test]
fn scan_reports_planted_values_naming_file_and_variable() {
    let sb = Sandbox::new("sweep_planted");
    let dir = planted(&sb);
    let s = sb.secrets();
    // Delimited.
    sb.write(
        "collection/out/bin/test/2-0.stderr",
        format!("token: {}\n", s.value("SLACK_BOT_TOKEN")),
    );
    // Glued to letters on both sides (no delimiter around the key). Named `.txt`:
    // a `.jsonl` in this sandbox would be collected by the real sweep, and found.
    sb.write(
        "collection/files/bin/test/3-0-changes.txt",
        format!("xx{}yy", s.value("GH_TOKEN")),
    );
    // The password of the URL, alone.
    let url = s.value("PROXY_URL");
    let password = &url["https://user:".len()..url.len() - "@example.invalid/".len()];
    sb.write(
        "collection/cargo-test.out",
        format!("proxy password {password} in a panic message\n"),
    );
    let o = sweep(&sb).arg("--scan").arg(&dir).expect_exit(1);
    let leaks = leak_lines(&o);
    assert_eq!(leaks.len(), 3, "{o:?}");
    for (file, name, shape) in [
        ("out/bin/test/2-0.stderr", "SLACK_BOT_TOKEN", "Slack"),
        (
            "files/bin/test/3-0-changes.txt",
            "GH_TOKEN",
            "GithubClassic",
        ),
        ("cargo-test.out", "PROXY_URL", "UrlPassword"),
    ] {
        let want = format!("LEAK: {file}: the value of {name} (shape {shape}, seeded in secrets/");
        assert!(
            leaks.iter().any(|l| l.starts_with(&want)),
            "no report of {name} in {file}: {leaks:?}"
        );
    }
    assert!(
        !leaks.iter().any(|l| l.contains("1-0.stdout")),
        "the redacted file was reported: {leaks:?}"
    );
    assert!(o.stderr_str().contains("FAILED"), "{o:?}");
}

#[test]
fn scan_of_a_broken_collection_fails() {
    let sb = Sandbox::new("sweep_broken");
    // No values recorded.
    let empty = sb.mkdir("empty");
    sb.write("empty/out/x.stdout", "output\n");
    let o = sweep(&sb).arg("--scan").arg(&empty).expect_exit(2);
    assert!(
        o.stderr_str().contains("no seeded values are recorded"),
        "{o:?}"
    );
    // Values, but no command output.
    let no_out = sb.mkdir("no-out");
    write_secrets_record(&no_out, sb.secrets());
    let o = sweep(&sb).arg("--scan").arg(&no_out).expect_exit(2);
    assert!(
        o.stderr_str().contains("no command output was collected"),
        "{o:?}"
    );
    // Two records that disagree (a sandbox that did not seed every shape).
    let partial = planted(&sb);
    let other = Sandbox::new("sweep_broken_other");
    let rec = write_secrets_record(&partial, other.secrets());
    let text = std::fs::read_to_string(&rec).unwrap();
    let first_line: String = text.lines().next().unwrap().to_string() + "\n";
    std::fs::write(&rec, first_line).unwrap();
    let o = sweep(&sb).arg("--scan").arg(&partial).expect_exit(2);
    assert!(o.stderr_str().contains("disagree"), "{o:?}");
}

/// The live output of cargo test goes through this filter: every recorded value
/// becomes `<NAME value>`.
#[test]
fn filter_redacts_every_recorded_value() {
    let sb = Sandbox::new("sweep_filter");
    let dir = planted(&sb);
    let mut input = String::new();
    for secret in sb.secrets().iter() {
        input.push_str(&format!("{}: {}\n", secret.name(), secret.value()));
    }
    let o = sweep(&sb)
        .arg("--filter")
        .arg(&dir)
        .stdin(input)
        .expect_success();
    let out = o.stdout_str();
    assert_eq!(
        out.lines().count(),
        SECRET_NAMES.len(),
        "{}",
        sb.secrets().redact(&out)
    );
    for n in SECRET_NAMES {
        assert!(out.contains(&format!("<{n} value>")), "{n} not redacted");
    }
    assert!(
        !Path::new(&dir).join("cargo-test.out").exists(),
        "--filter writes nothing into the collection"
    );
}

/// Every shape envpolicy recognises is seeded by every sandbox, and every seeded
/// value that should be caught by its shape is caught by exactly that one.
#[test]
fn seeded_values_cover_every_policy_shape() {
    let sb = Sandbox::new("sweep_shapes");
    for shape in PolicyShape::ALL {
        let hit = sb
            .secrets()
            .iter()
            .find(|s| find_shape(s.value().as_bytes(), ShapeSet::NONE.with(shape)).is_some());
        assert!(
            hit.is_some(),
            "no seeded value has the policy's shape {shape:?}: add one to tests/src/secrets.rs"
        );
    }
    for s in sb.secrets().iter() {
        let m = find_shape(s.value().as_bytes(), ShapeSet::ALL);
        assert_eq!(
            m.is_some(),
            s.shape().detectable_by_value(),
            "{}: shape {:?}",
            s.name(),
            s.shape()
        );
    }
}
