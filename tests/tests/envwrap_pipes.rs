//! A closed stdout ends every tool quietly, as it ends coreutils' (`envwrap scan
//! | head -1`): killed by SIGPIPE, never a panic, never an error message. Each
//! tool and each help text writes into a pipe whose reader is gone before it
//! starts, and into `head -c1`.

use envshim_e2e::*;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

/// Every tool and help text, as a user would pipe it.
const FORMS: &[&[&str]] = &[
    &["--help"],
    &["--version"],
    &["--generate", "complete-bash"],
    &["check", "--help"],
    &[
        "check",
        concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/loop.toml"),
    ],
    &["explain", "--", "gh", "auth", "status"],
    &["explain", "--help"],
    &["scan"],
    &["scan", "--json"],
    &["scan", "--help"],
    &["doctor", "/bin/true"],
    &["doctor", "--help"],
    &["tmux-env"],
    &["tmux-env", "--help"],
    &["mux-env", "--json"],
    &["mux-env", "--help"],
    &["compile", "--help"],
];

#[test]
fn a_closed_stdout_ends_every_tool_by_sigpipe() {
    for form in FORMS {
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        let out = Command::new(envwrap_bin())
            .args(*form)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .expect("run envwrap");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            !said.contains("panicked") && !said.contains("Broken pipe"),
            "envwrap {form:?} into a closed pipe said:\n{said}"
        );
        // `scan` without findings writes its summary to stderr only: it has
        // nothing to write where the pipe was, and ends as it would.
        let writes_stdout = *form != ["scan"];
        assert!(
            out.status.signal() == Some(libc::SIGPIPE)
                || (!writes_stdout && out.status.signal().is_none()),
            "envwrap {form:?} into a closed pipe ended with {:?}",
            out.status
        );
    }
}

#[test]
fn every_tool_into_head_ends_quietly() {
    for form in FORMS {
        let script = "\"$0\" \"$@\" | head -c1 >/dev/null; echo \"${PIPESTATUS[0]}\"";
        let out = Command::new("bash")
            .args(["-c", script])
            .arg(envwrap_bin())
            .args(*form)
            .stdin(Stdio::null())
            .output()
            .expect("run bash");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            !said.contains("panicked"),
            "envwrap {form:?} | head -c1 said:\n{said}"
        );
        let status = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(
            ["0", "1", "141"].contains(&status.as_str()),
            "envwrap {form:?} | head -c1 ended with {status}"
        );
    }
}
