//! Where a run's changes are reported: warnings on stderr (or JSON lines with
//! `--json`), and every change as a JSON line in the log file (`--log FILE`, else
//! the policy's `log`).
//!
//! Each line names the variable, the program, the rule and the policy, never a
//! value (a `Change` holds no value to print).

use crate::exit::{Failure, OWN_ERROR};
use envpolicy::compiled::Mode;
use envpolicy::outcome::{json_line, Change, Recorder};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The sinks of one run.
pub struct Journal {
    log: Option<File>,
    json: bool,
    /// The user layer's policy, as its records name it.
    source: Vec<u8>,
}

/// Opened without blocking: a FIFO planted as the log fails at once (ENXIO when
/// nobody reads it) instead of holding envwrap until a reader comes.
fn open_log(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
}

impl Journal {
    /// Open the log: `--log` must open (else exit 125); the policy's `log` is
    /// best effort and only warned about.
    /// `source`: the source of the user layer's policy (its file, or `<built-in>`).
    pub fn open(
        explicit: Option<&Path>,
        from_policy: Option<&Path>,
        json: bool,
        source: &[u8],
    ) -> Result<Journal, Failure> {
        let log = match (explicit, from_policy) {
            (Some(p), _) => Some(open_log(p).map_err(|e| {
                Failure::new(
                    OWN_ERROR,
                    format!(
                        "--log: cannot open {}: {}",
                        envpolicy::error::shown(p),
                        envpolicy::error::io_reason(&e)
                    ),
                )
            })?),
            (None, Some(p)) => match open_log(p) {
                Ok(f) => Some(f),
                Err(e) => {
                    say!(
                        "envwrap: warning: cannot open the policy's log {}: {}",
                        envpolicy::error::shown(p),
                        envpolicy::error::io_reason(&e)
                    );
                    None
                }
            },
            (None, None) => None,
        };
        Ok(Journal {
            log,
            json,
            source: source.to_vec(),
        })
    }

    /// The change's record: the core's one JSON line ([`envpolicy::record`]),
    /// by envwrap; `mode`: the mode of the pass that made it.
    fn line(&self, program: &[u8], c: &Change, mode: Mode) -> String {
        let by = Recorder {
            tool: "envwrap",
            user_source: &self.source,
        };
        crate::value::redacted(&json_line(&by, mode, program, c))
    }

    /// Record a change in the log; `mode`: the mode of the pass that made it.
    pub fn record(&mut self, program: &[u8], c: &Change, mode: Mode) {
        if self.log.is_none() {
            return;
        }
        let mut line = self.line(program, c, mode);
        if let Some(f) = &mut self.log {
            line.push('\n');
            // A failing log must not stop the command: the warning goes to stderr.
            if let Err(e) = f.write_all(line.as_bytes()) {
                say!(
                    "envwrap: warning: cannot write the log: {}",
                    envpolicy::error::io_reason(&e)
                );
                self.log = None;
            }
        }
    }

    /// Warn about a change on stderr: `text` for people, or the change's JSON line.
    pub fn warn(&self, program: &[u8], c: &Change, text: &str, mode: Mode) {
        if self.json {
            say!("{}", self.line(program, c, mode));
        } else {
            tell!("envwrap: {text}");
        }
    }

    /// `NAME withheld from PROGRAM and what it starts (...)`: a credential the
    /// child does not get, which no warning names ([`envpolicy::withheld`]).
    /// envwrap runs one exec, so each name is said once per run.
    pub fn withheld(&self, name: &[u8], program: &[u8]) {
        let text = envpolicy::outcome::withheld_line(name, program);
        if self.json {
            say!(
                "{}",
                serde_json::json!({ "withheld": crate::value::word(name), "note": text })
            );
        } else {
            tell!("envwrap: {text}");
        }
    }

    /// `secret NAME not delivered to PROGRAM: WHY`: a secret the program
    /// matches, whose source could not give a value (the run goes on without it).
    pub fn undelivered(
        &self,
        name: &[u8],
        shown_program: &str,
        why: envpolicy::secret::Undelivered,
    ) {
        let name = crate::value::word(name);
        if self.json {
            say!(
                "{}",
                serde_json::json!({
                    "secret": name,
                    "program": shown_program,
                    "undelivered": why.id(),
                    "why": why.text(),
                })
            );
        } else {
            tell!(
                "envwrap: secret {name} not delivered to {shown_program}: {}",
                why.text()
            );
        }
    }

    /// A warning that is not about one change.
    pub fn note(&self, text: &str) {
        if self.json {
            say!("{}", serde_json::json!({ "warning": text }));
        } else {
            say!("envwrap: warning: {text}");
        }
    }
}
