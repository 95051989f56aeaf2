//! GNU env's signal options: `--default-signal[=SIGS]`, `--ignore-signal[=SIGS]`,
//! `--block-signal[=SIGS]` and `--list-signal-handling`, applied to envwrap's own
//! process right before it execs the command, which inherits ignored and blocked
//! signals across the exec (a handled signal becomes default there anyway).
//!
//! SIGS is a comma-separated list of names (`INT`, `SIGINT`) or numbers; without
//! one, every signal. `SIGKILL` and `SIGSTOP` cannot be changed: a named one is
//! an error, as in GNU env, and "every signal" leaves them out.

use crate::exit::Failure;
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, SigmaskHow, Signal};

/// What to do to a signal's handling before the exec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    Default,
    Ignore,
    Block,
}

/// The changes the options asked for, in order, each with its signals.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub changes: Vec<(Change, Vec<Signal>)>,
    /// `--list-signal-handling`.
    pub list: bool,
}

/// The signals `value` names (`None`: every one that can be changed).
pub fn parse(option: &str, value: Option<&[u8]>) -> Result<Vec<Signal>, Failure> {
    let Some(value) = value else {
        return Ok(Signal::iterator()
            .filter(|s| !matches!(s, Signal::SIGKILL | Signal::SIGSTOP))
            .collect());
    };
    let text = std::str::from_utf8(value).unwrap_or("");
    let mut out = Vec::new();
    for word in text.split(',') {
        let signal = match word.parse::<i32>() {
            Ok(n) => Signal::try_from(n).ok(),
            Err(_) => {
                let name = word.strip_prefix("SIG").unwrap_or(word);
                Signal::iterator().find(|s| s.as_str().strip_prefix("SIG") == Some(name))
            }
        };
        match signal {
            Some(Signal::SIGKILL | Signal::SIGSTOP) | None => {
                return Err(Failure::new(
                    crate::exit::OWN_ERROR,
                    format!(
                        "{option}: not a signal that can be changed: {}",
                        crate::value::word(word.as_bytes())
                    ),
                ))
            }
            Some(s) => out.push(s),
        }
    }
    Ok(out)
}

impl Plan {
    /// Apply the plan to this process; with `list`, say on stderr how each
    /// signal is handled now, where that is not the default.
    pub fn apply(&self) -> Result<(), Failure> {
        for (change, signals) in &self.changes {
            match change {
                Change::Block => {
                    let mut set = SigSet::empty();
                    signals.iter().for_each(|&s| set.add(s));
                    set.thread_block().map_err(|e| fail("--block-signal", e))?;
                }
                Change::Default | Change::Ignore => {
                    let handler = if *change == Change::Ignore {
                        SigHandler::SigIgn
                    } else {
                        SigHandler::SigDfl
                    };
                    let action = SigAction::new(handler, SaFlags::empty(), SigSet::empty());
                    for &s in signals {
                        // SAFETY: SIG_DFL and SIG_IGN run no code of this process,
                        // so no handler of ours can see a half-changed state.
                        unsafe { sigaction(s, &action) }.map_err(|e| fail("a signal option", e))?;
                    }
                }
            }
        }
        if self.list {
            self.list_handling();
        }
        Ok(())
    }

    /// One line per signal whose handling is not the default: `INT (2): IGNORE`.
    fn list_handling(&self) {
        let mut blocked = SigSet::empty();
        let _ = nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, None, Some(&mut blocked));
        for s in Signal::iterator() {
            let ignored = is_ignored(s);
            let block = blocked.contains(s);
            if !ignored && !block {
                continue;
            }
            let what: Vec<&str> = [(block, "BLOCK"), (ignored, "IGNORE")]
                .iter()
                .filter(|(on, _)| *on)
                .map(|(_, w)| *w)
                .collect();
            let name = s.as_str().strip_prefix("SIG").unwrap_or(s.as_str());
            say!("{name:<10} ({:2}): {}", s as i32, what.join(" "));
        }
    }
}

/// Whether `signal` is ignored now, read without changing its handling (a
/// momentary SIG_DFL would let a signal arriving then kill envwrap).
fn is_ignored(signal: Signal) -> bool {
    let mut old = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: a null new action only reads the current one into `old`, which
    // is valid, writable memory of the right type.
    let read =
        unsafe { libc::sigaction(signal as libc::c_int, std::ptr::null(), old.as_mut_ptr()) };
    // SAFETY: zero-initialised, and filled in by a sigaction that succeeded.
    read == 0 && unsafe { old.assume_init() }.sa_sigaction == libc::SIG_IGN
}

fn fail(option: &str, e: nix::Error) -> Failure {
    Failure::new(crate::exit::OWN_ERROR, format!("{option}: {}", e.desc()))
}
