//! `envwrap --mask`: the command's output with every credential value envwrap
//! knows replaced by a marker that names it (envpolicy's `mask`).
//!
//! envwrap forks before the exec. The child goes on to run the command as
//! envwrap would have (an exec, or `--supervise`), with its standard output and
//! error on a pseudo-terminal of its own when either was a terminal
//! ([`terminal`]), else on pipes; the parent stays behind as the relay
//! ([`relay`]), passes the output on masked, and ends as the command did. The
//! relay holds the values it masks, so it makes itself undumpable: a process
//! of the tree cannot read them from its memory.
//!
//! What it cannot reach (docs/masking.md): what the command writes to a file, a
//! socket or another terminal, and in pipe mode what it writes to `/dev/tty`.

mod relay;
mod terminal;

use crate::exit::{Failure, OWN_ERROR};
use envpolicy::compiled::Policy;
use envpolicy::mask::Masker;
use nix::unistd::{self, ForkResult};
use std::os::fd::{AsRawFd, OwnedFd};

/// The masker of every value envwrap knows under `policies` (the user layer's,
/// then the managed layer's): the credentials among the entries of `envs` (the
/// caller's environment, the one envwrap built), named by their variable, and
/// every `[[secret]]` envwrap can read, named by the secret. `own`: envwrap's
/// environment, which a `credential:` source reads.
pub fn masker(policies: &[&Policy<'_>], envs: &[&[Vec<u8>]], own: &[Vec<u8>]) -> Masker {
    let mut values: Vec<(Vec<u8>, Vec<u8>)> =
        crate::value::credentials(envs.iter().flat_map(|env| env.iter()), policies)
            .map(|(n, v)| (n.to_vec(), v.to_vec()))
            .collect();
    for p in policies {
        let read = envpolicy::secret_source::read_mask(p, u16::MAX, own);
        for (i, value) in read.values.read() {
            let name = p.secret(i).map(|r| p.str(r.name)).unwrap_or(b"secret");
            values.push((name.to_vec(), value.to_vec()));
        }
    }
    let masker = Masker::new(values.iter().map(|(n, v)| (n.as_slice(), v.as_slice())));
    for (_, v) in &mut values {
        v.fill(0);
    }
    masker
}

/// Where the command's output goes: which of envwrap's standard streams are
/// terminals.
struct Ends {
    stdin_tty: bool,
    stdout_tty: bool,
    stderr_tty: bool,
}

impl Ends {
    fn now() -> Ends {
        // SAFETY: isatty(3) only asks about the descriptor.
        let tty = |fd| unsafe { libc::isatty(fd) } == 1;
        Ends {
            stdin_tty: tty(0),
            stdout_tty: tty(1),
            stderr_tty: tty(2),
        }
    }

    fn terminal(&self) -> bool {
        self.stdout_tty || self.stderr_tty
    }
}

/// What the command's side is given in place of envwrap's streams.
struct Given {
    /// The pseudo-terminal's other end, when the command gets one.
    tty: Option<OwnedFd>,
    stdout: Option<OwnedFd>,
    stderr: Option<OwnedFd>,
}

/// Split off the relay: returns in the child, which goes on to run the
/// command with its output through the relay; the parent relays until the
/// command's output ends, and exits as the command did (or dies of its
/// signal).
pub fn split_off(masker: Masker) -> Result<(), Failure> {
    let ends = Ends::now();
    let pty = if ends.terminal() {
        Some(terminal::open(&ends).map_err(|e| own_failure("cannot open a pseudo-terminal", e))?)
    } else {
        None
    };
    let pipe = |wanted: bool| -> Result<Option<(OwnedFd, OwnedFd)>, Failure> {
        if !wanted {
            return Ok(None);
        }
        unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
            .map(Some)
            .map_err(|e| own_failure("cannot make a pipe", e.into()))
    };
    let out_pipe = pipe(!ends.stdout_tty)?;
    let err_pipe = pipe(!ends.stderr_tty)?;
    let old_mask = relay::hold_signals();
    // SAFETY: envwrap is single-threaded here, so the child may allocate.
    match unsafe { unistd::fork() } {
        Err(e) => Err(own_failure("cannot start the command", e.into())),
        Ok(ForkResult::Child) => {
            let _ = nix::sys::signal::sigprocmask(
                nix::sys::signal::SigmaskHow::SIG_SETMASK,
                Some(&old_mask),
                None,
            );
            drop(masker);
            let given = Given {
                tty: pty.map(|p| p.command_side),
                stdout: out_pipe.map(|(_, w)| w),
                stderr: err_pipe.map(|(_, w)| w),
            };
            take_ends(&ends, given).map_err(|e| own_failure("cannot hand the command its ends", e))
        }
        Ok(ForkResult::Parent { child }) => {
            let _ = nix::sys::prctl::set_dumpable(false);
            let outputs = relay::Outputs {
                terminal: pty.map(|p| p.relay_side),
                stdout: out_pipe.map(|(r, _)| r),
                stderr: err_pipe.map(|(r, _)| r),
            };
            let raw = relay::run(&masker, outputs, &ends, child);
            drop(masker);
            std::process::exit(crate::exit::code_of_wait(raw).into())
        }
    }
}

/// In the command's child: a session of its own on the pseudo-terminal, if
/// any, and the given ends in place of the standard streams.
fn take_ends(ends: &Ends, given: Given) -> std::io::Result<()> {
    if let Some(tty) = &given.tty {
        unistd::setsid()?;
        // SAFETY: TIOCSCTTY takes an int argument; `tty` is an open terminal.
        if unsafe { libc::ioctl(tty.as_raw_fd(), libc::TIOCSCTTY, 0) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if ends.stdin_tty {
            dup_onto(tty, 0)?;
        }
    }
    let onto = |fd: Option<&OwnedFd>, n| fd.map_or(Ok(()), |f| dup_onto(f, n));
    onto(given.stdout.as_ref().or(given.tty.as_ref()), 1)?;
    onto(given.stderr.as_ref().or(given.tty.as_ref()), 2)?;
    Ok(())
}

fn dup_onto(fd: &OwnedFd, n: i32) -> std::io::Result<()> {
    // SAFETY: dup2(2) on a descriptor this function's caller owns, onto one of
    // the standard streams, which the command is meant to get.
    if unsafe { libc::dup2(fd.as_raw_fd(), n) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn own_failure(what: &str, e: std::io::Error) -> Failure {
    Failure::new(
        OWN_ERROR,
        format!("--mask: {what}: {}", envpolicy::error::io_reason(&e)),
    )
}
