//! Exit codes and envwrap's own failures.
//!
//! The codes are env(1)'s, so scripts that already handle `env` failures handle
//! envwrap's: 125 for envwrap's own errors (bad options, a bad policy, a directory
//! it cannot enter), 126 when the command cannot be executed or the policy refuses
//! the exec, 127 when the command is not found. The tools add `scan`'s 1 for
//! findings. A message names options, variables, files and programs; it never
//! quotes a value.

use std::process::ExitCode;

/// envwrap's own error: bad usage, a bad policy, a failed `-C`.
pub const OWN_ERROR: u8 = 125;
/// The command cannot be executed, or the policy refused the exec.
pub const CANNOT_EXECUTE: u8 = 126;
/// The command was not found.
pub const NOT_FOUND: u8 = 127;
/// `scan` found something.
pub const FINDINGS: u8 = 1;

/// A failure: the exit code and the one-line message (without the `envwrap: `
/// prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub code: u8,
    pub message: String,
    /// A line about an exec for the person (the policy refused it), written
    /// as the shim writes its lines (`tell!`: the controlling terminal too).
    pub for_person: bool,
}

impl Failure {
    pub fn new(code: u8, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
            for_person: false,
        }
    }

    /// The policy refused the exec: `message` is the refusal line.
    pub fn refused(code: u8, message: impl Into<String>) -> Failure {
        Failure {
            for_person: true,
            ..Failure::new(code, message)
        }
    }

    /// A usage error: the message, then a pointer to `--help`.
    pub fn usage(message: impl Into<String>, help: &str) -> Failure {
        Failure::new(
            OWN_ERROR,
            format!("{}\nTry '{help}' for more information.", message.into()),
        )
    }
}

/// Print `envwrap: MESSAGE` on stderr and return the code.
pub fn report(f: &Failure) -> ExitCode {
    if f.for_person {
        tell!("envwrap: {}", f.message);
    } else {
        say!("envwrap: {}", f.message);
    }
    ExitCode::from(f.code)
}

/// `Ok(code)` as is; `Err` printed.
pub fn finish(r: Result<u8, Failure>) -> ExitCode {
    match r {
        Ok(code) => ExitCode::from(code),
        Err(f) => report(&f),
    }
}

/// A failure of a tool run with `--json`: one JSON object on stdout, as every
/// other outcome of that run (`{"error": MESSAGE, "exit": CODE}`), nothing on
/// stderr.
pub fn report_json(f: &Failure) -> ExitCode {
    showln!(
        "{}",
        serde_json::json!({ "error": f.message, "exit": f.code })
    );
    ExitCode::from(f.code)
}

/// [`finish`], or with `json` (the run asked for `--json`) [`report_json`].
pub fn finish_as(r: Result<u8, Failure>, json: bool) -> ExitCode {
    match r {
        Err(f) if json => report_json(&f),
        r => finish(r),
    }
}

/// The raw wait status of `ws`, as waitpid(2) would have stored it: `None`
/// for a state that is not an end (stopped, continued, still running).
pub fn raw_wait_status(ws: nix::sys::wait::WaitStatus) -> Option<i32> {
    use nix::sys::wait::WaitStatus;
    match ws {
        WaitStatus::Exited(_, code) => Some((code & 0xff) << 8),
        WaitStatus::Signaled(_, sig, core) => Some(sig as i32 | if core { 0x80 } else { 0 }),
        _ => None,
    }
}

/// The code to exit with for a command's raw wait status, as a shell's `$?`
/// says it: its own exit code; or, when it died of a signal, envwrap dies of
/// the same signal here (without a core dump of its own) and this returns
/// 128 + the signal only if the signal does not kill.
pub fn code_of_wait(raw: i32) -> u8 {
    use nix::sys::signal::{self, SigHandler, SigSet, SigmaskHow, Signal};
    let sig = raw & 0x7f;
    if sig == 0 {
        return ((raw >> 8) & 0xff) as u8;
    }
    let Ok(sig) = Signal::try_from(sig) else {
        return 128u8.wrapping_add(sig as u8);
    };
    let _ = nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_CORE, 0, 0);
    // SAFETY: SIG_DFL installs no handler code.
    let _ = unsafe { signal::signal(sig, SigHandler::SigDfl) };
    let mut only = SigSet::empty();
    only.add(sig);
    let _ = signal::sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&only), None);
    let _ = signal::raise(sig);
    128u8.wrapping_add(sig as u8)
}
