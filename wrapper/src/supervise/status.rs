//! The command's status, from the supervisor (its parent) to the foreground
//! envwrap, over a pipe: the command's pid when it starts, its wait status when
//! it ends. The foreground envwrap passes `SIGTERM` and `SIGHUP` sent to it on
//! to the command, exits with the command's code, or dies of the command's
//! signal.

use crate::exit::OWN_ERROR;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{self, SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{self, Pid};
use std::os::fd::{AsFd, OwnedFd};

const PID: u8 = b'P';
const STATUS: u8 = b'S';

fn send(w: &OwnedFd, tag: u8, n: i32) {
    let mut rec = [tag, 0, 0, 0, 0];
    rec[1..].copy_from_slice(&n.to_ne_bytes());
    let _ = unistd::write(w, &rec);
}

pub fn send_pid(w: &OwnedFd, child: Pid) {
    send(w, PID, child.as_raw());
}

/// Send the command's end, if `ws` is one. Returns whether it was.
pub fn send_end(w: &OwnedFd, ws: WaitStatus) -> bool {
    match crate::exit::raw_wait_status(ws) {
        Some(r) => {
            send(w, STATUS, r);
            true
        }
        None => false,
    }
}

/// The command ended before it could pass its listener: wait for it and report.
pub fn reap_only(child: Pid, w: OwnedFd) -> i32 {
    loop {
        match waitpid(child, None) {
            Ok(ws) if send_end(&w, ws) => return 0,
            Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return OWN_ERROR.into(),
        }
    }
}

/// The foreground envwrap: wait for the command's status and exit as it did.
/// `marked`: the shim's marked execs run without the supervisor (its line
/// after a supervisor's end says which execs fail).
pub fn wait_foreground(r: OwnedFd, marked: bool) -> u8 {
    let mut forwarded = SigSet::empty();
    for s in [
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGINT,
        Signal::SIGQUIT,
    ] {
        forwarded.add(s);
    }
    let _ = signal::sigprocmask(SigmaskHow::SIG_BLOCK, Some(&forwarded), None);
    let sigfd = SignalFd::with_flags(&forwarded, SfdFlags::SFD_CLOEXEC).ok();
    let mut child: Option<Pid> = None;
    let mut buf = Vec::new();
    loop {
        let mut fds = vec![PollFd::new(r.as_fd(), PollFlags::POLLIN)];
        if let Some(s) = &sigfd {
            fds.push(PollFd::new(s.as_fd(), PollFlags::POLLIN));
        }
        if poll(&mut fds, PollTimeout::NONE).is_err() {
            continue;
        }
        let signalled = fds
            .get(1)
            .and_then(PollFd::revents)
            .is_some_and(|r| r.contains(PollFlags::POLLIN));
        let readable = fds[0].revents().is_some_and(|r| !r.is_empty());
        if signalled {
            if let Some(Ok(Some(info))) = sigfd.as_ref().map(SignalFd::read_signal) {
                forward(info.ssi_signo as i32, child);
            }
        }
        if !readable {
            continue;
        }
        let mut chunk = [0u8; 64];
        let n = match unistd::read(&r, &mut chunk) {
            Ok(n) => n,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => 0,
        };
        if n == 0 {
            let which = if marked {
                " the shim did not judge (a static or Go program's, a raw system call)"
            } else {
                ""
            };
            say!(
                "envwrap: --supervise: the supervisor ended before the command did; every exec \
                 in the command's tree{which} now fails (ENOSYS, 'Function not implemented'){}",
                unless_root_took_it()
            );
            if let Some(c) = child {
                wait_for_end(c);
            }
            return OWN_ERROR;
        }
        buf.extend_from_slice(&chunk[..n]);
        while buf.len() >= 5 {
            let n = i32::from_ne_bytes([buf[1], buf[2], buf[3], buf[4]]);
            match buf[0] {
                PID => child = Some(Pid::from_raw(n)),
                _ => return crate::exit::code_of_wait(n),
            }
            buf.drain(..5);
        }
    }
}

/// Wait until `child` (not envwrap's own child) has ended: its status is lost
/// with the supervisor, but the shell still waits as long as the command runs.
/// What the line after a supervisor's end must add to stay true: a process of
/// a tree that runs as root (CAP_SYS_PTRACE) may have copied the listener
/// before the supervisor ended, and answer the tree's execs itself
/// (docs/threat-model.md). A tree started by another user cannot gain root: the
/// filter sets no_new_privs for it.
fn unless_root_took_it() -> &'static str {
    // SAFETY: geteuid(2) takes nothing and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        ", unless a process of the tree, which runs as root, took the supervisor's listener"
    } else {
        ""
    }
}

fn wait_for_end(child: Pid) {
    let Some(fd) = super::pidfd(child.as_raw()) else {
        return;
    };
    let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
    while let Err(nix::errno::Errno::EINTR) = poll(&mut fds, PollTimeout::NONE) {}
}

/// The terminal sends SIGINT and SIGQUIT to the whole foreground group, the
/// command included; a SIGTERM or SIGHUP sent to envwrap alone is passed on.
fn forward(signo: i32, child: Option<Pid>) {
    let (Ok(sig), Some(child)) = (Signal::try_from(signo), child) else {
        return;
    };
    if matches!(sig, Signal::SIGTERM | Signal::SIGHUP) {
        let _ = signal::kill(child, sig);
    }
}
