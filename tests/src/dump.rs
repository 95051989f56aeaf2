//! The environment a multiplexer's new pane or window wrote to a file (`env >
//! FILE`), checked as a user would check it: no seeded value anywhere in it,
//! and none of the credential names.

use crate::Sandbox;
use std::path::Path;
use std::time::Duration;

/// Wait for `file` to be written, and check that it holds no seeded value, no
/// line `NAME=` for a seeded credential, and none for the `also` names (a token
/// under an innocent name). `what` names the process in a failure.
#[track_caller]
pub fn assert_clean_dump(sb: &Sandbox, file: &Path, what: &str, also: &[&'static str]) {
    let bytes = read_dump(sb, file, what);
    sb.secrets().assert_absent(what, &bytes);
    let text = String::from_utf8_lossy(&bytes);
    for name in sb.secrets().names().chain(also.iter().copied()) {
        assert!(
            !text.lines().any(|l| l.starts_with(&format!("{name}="))),
            "{what}: the process holds {name}"
        );
    }
}

/// Wait for `file` to be written (10 s at most), and read it. `what` names the
/// process in a failure.
#[track_caller]
pub fn read_dump(sb: &Sandbox, file: &Path, what: &str) -> Vec<u8> {
    assert!(
        sb.wait_for(
            || std::fs::metadata(file).is_ok_and(|m| m.len() > 0),
            Duration::from_secs(10)
        ),
        "{what}: the process did not write {}",
        file.display()
    );
    // Written in one go by `env > FILE`; give the shell a moment to finish.
    std::thread::sleep(Duration::from_millis(100));
    std::fs::read(file).expect("read the dump")
}
