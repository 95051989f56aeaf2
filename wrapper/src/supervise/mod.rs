//! `envwrap --supervise`: the policy holds on every exec in the tree, whatever
//! the program is linked with (docs/adr/0016-supervised-exec.md).
//!
//! Three processes:
//!
//! ```text
//! envwrap (foreground)          waits for COMMAND's status and exits with it
//!  └─ supervisor                answers every exec of the tree; a subreaper
//!      └─ COMMAND               installs the filter, passes its listener up, execs
//! ```
//!
//! The command installs the seccomp filter on itself ([`filter`]) and sends the
//! listener to its parent over a socket, then execs: that first exec is already
//! a notification. The supervisor is the command's parent and a child subreaper,
//! so every process of the tree, daemons that double-fork included, stays its
//! descendant: reading their memory needs no privilege beyond ancestry. It
//! lives until the listener reports that no process holds the filter any more,
//! which may be long after the command (a tmux server), and it leaves the
//! terminal's stdin and stdout at once and stderr when the command ends, so that
//! nothing waiting for them waits for it. The foreground envwrap exits with the
//! command's status as soon as the command ends, so a shell sees what it would
//! see without `--supervise`.
//!
//! The supervisor judges what the shim cannot see. With the shim preloaded (and
//! no `--judge-all`), it picks a random run key, puts `ENVSHIM_SUPERVISOR=<key>`
//! in the command's environment, and installs the filter with the mark of that
//! key and its own policy ([`envpolicy::mark`]): an exec the shim decided with the
//! same policy runs without a notification, and every other exec is judged.

mod filter;
mod held;
mod message;
mod notify;
mod remote;
mod seen;
mod serve;
mod status;

use crate::exit::{CANNOT_EXECUTE, NOT_FOUND, OWN_ERROR};
use crate::journal::Journal;
use crate::source::Loaded;
use crate::{exec, value};
use nix::sys::signal::{self, SigHandler, SigSet, SigmaskHow, Signal};
use nix::sys::socket::{self, AddressFamily, ControlMessage, SockFlag, SockType};
use nix::unistd::{self, ForkResult};
use std::io::{IoSlice, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// What the supervisor needs besides the tree: the policy and where to report.
pub struct Setup {
    pub loaded: Loaded,
    pub journal: Journal,
    /// `--mode`, over the policy's own.
    pub mode: Option<envpolicy::compiled::Mode>,
    /// Let the execs the shim marks run unjudged: the shim is preloaded and
    /// `--judge-all` is not given.
    pub trust_marks: bool,
    /// The run's decision to make again with the secrets the command's child
    /// reads after the fork (`None`: the program gets no secret, or audit).
    pub redo: Option<crate::deliver::Redo>,
    /// `--refuse-changes`: never write an exec's environment.
    pub refuse_changes: bool,
}

/// The run key and the filter's mark, for a run that trusts the shim's marks;
/// `None` when the kernel gives no random bytes (then every exec is judged).
fn run_mark(loaded: &Loaded) -> Option<(u64, u64)> {
    let mut key = [0u8; 8];
    // SAFETY: getrandom(2) writes at most `key.len()` bytes into `key`.
    let n = unsafe { libc::getrandom(key.as_mut_ptr().cast(), key.len(), 0) };
    if n != key.len() as isize {
        return None;
    }
    let key = u64::from_le_bytes(key);
    if key == 0 {
        return None;
    }
    Some((key, envpolicy::mark::mark(key, policy_identity(loaded))))
}

/// The identity of the policy as the tree's shims hold it: a policy file
/// compiled from its absolute path (the `ENVSHIM_POLICY` they are given, and the
/// source their cache records), or the built-in default. Compiled again only
/// when envwrap loaded it by another path (relative, or through a symlink).
fn policy_identity(loaded: &Loaded) -> u64 {
    let again = loaded
        .absolute_path()
        .filter(|p| loaded.source.path() != Some(p.as_path()))
        .and_then(|p| envpolicy::load::load(&p).ok());
    let bytes = again.as_ref().unwrap_or(&loaded.compiled).bytes();
    envpolicy::mark::identity(bytes)
}

/// `env` with the run key's entry in place of any inherited one.
fn with_run_key(env: &[Vec<u8>], key: u64) -> Vec<Vec<u8>> {
    let mut out = env.to_vec();
    crate::environ::unset(&mut out, envpolicy::mark::NAME);
    out.push(envpolicy::mark::entry(key).to_vec());
    out
}

/// The signals the supervisor ignores: the terminal's, which reach the whole
/// foreground process group. The command gets their dispositions back.
const TERMINAL_SIGNALS: [Signal; 6] = [
    Signal::SIGINT,
    Signal::SIGQUIT,
    Signal::SIGTSTP,
    Signal::SIGTTIN,
    Signal::SIGTTOU,
    Signal::SIGHUP,
];

/// Run `program` under supervision. Returns the exit code for the foreground
/// envwrap, or does not return (the command died of a signal, which envwrap
/// then dies of too).
pub fn run(program: &Path, argv: &[Vec<u8>], env: &[Vec<u8>], setup: Setup) -> u8 {
    let (up, down) = match socket::socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    ) {
        Ok(p) => p,
        Err(e) => return own_error(&format!("--supervise: cannot make a socket pair: {e}")),
    };
    let (status_r, status_w) = match unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC) {
        Ok(p) => p,
        Err(e) => return own_error(&format!("--supervise: cannot make a pipe: {e}")),
    };
    let marked = if setup.trust_marks {
        run_mark(&setup.loaded)
    } else {
        None
    };
    // SAFETY: envwrap is single-threaded here, so the child may allocate.
    match unsafe { unistd::fork() } {
        Err(e) => own_error(&format!("--supervise: cannot start the supervisor: {e}")),
        Ok(ForkResult::Child) => {
            drop(status_r);
            let ends = Ends { up, down, status_w };
            let code = supervisor(program, argv, env, setup, ends, marked);
            std::process::exit(code)
        }
        Ok(ForkResult::Parent { .. }) => {
            drop((up, down, status_w));
            status::wait_foreground(status_r, marked.is_some())
        }
    }
}

/// The supervisor's ends of the socket pair (the listener comes `up` from the
/// command, which holds `down`) and of the status pipe to the foreground.
struct Ends {
    up: OwnedFd,
    down: OwnedFd,
    status_w: OwnedFd,
}

/// The supervisor: start the command, take its listener, serve until no
/// process holds the filter. `marked`: the run key and the filter's mark.
fn supervisor(
    program: &Path,
    argv: &[Vec<u8>],
    env: &[Vec<u8>],
    setup: Setup,
    ends: Ends,
    marked: Option<(u64, u64)>,
) -> i32 {
    let Ends { up, down, status_w } = ends;
    // Closed to the tree before it holds anything worth taking: a process that
    // is not dumpable has its /proc files owned by root, and a same-UID process
    // can neither ptrace it, read or write its memory, nor copy its listener
    // with pidfd_getfd(2) (all need ptrace access, docs/threat-model.md). Only
    // CAP_SYS_PTRACE (root) still can. The command, forked from here, is made
    // dumpable again once it has passed the listener up.
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        say!(
            "envwrap: --supervise: cannot close the supervisor to the tree (PR_SET_DUMPABLE): {e}"
        );
        return OWN_ERROR.into();
    }
    let saved: Vec<(Signal, SigHandler)> = TERMINAL_SIGNALS
        .iter()
        .filter_map(|&s| {
            // SAFETY: SIG_IGN installs no handler code.
            let old = unsafe { signal::signal(s, SigHandler::SigIgn) }.ok()?;
            Some((s, old))
        })
        .collect();
    let _ = nix::sys::prctl::set_child_subreaper(true);
    let mut chld = SigSet::empty();
    chld.add(Signal::SIGCHLD);
    let mut old_mask = SigSet::empty();
    let _ = signal::sigprocmask(SigmaskHow::SIG_BLOCK, Some(&chld), Some(&mut old_mask));
    // SAFETY: the supervisor is single-threaded, so the child may allocate.
    let child = match unsafe { unistd::fork() } {
        Err(e) => {
            say!("envwrap: --supervise: cannot start the command: {e}");
            return OWN_ERROR.into();
        }
        Ok(ForkResult::Child) => {
            drop((up, status_w));
            let (argv, env) = &delivered(&setup, argv, env);
            let Some((key, mark)) = marked else {
                command(program, argv, env, &saved, &old_mask, down, None)
            };
            let env = with_run_key(env, key);
            command(program, argv, &env, &saved, &old_mask, down, Some(mark))
        }
        Ok(ForkResult::Parent { child }) => child,
    };
    drop(down);
    let listener = match receive_listener(&up) {
        Some(fd) => fd,
        // The command failed before it could send it, and said why.
        None => return status::reap_only(child, status_w),
    };
    drop(up);
    status::send_pid(&status_w, child);
    leave_terminal();
    own_scheduling_group();
    serve::serve(listener, child, status_w, setup)
}

/// In the command's child, before its exec: the argv and environment with the
/// secrets the program gets, read here (the supervisor above never reads a
/// source). A refused exec ends the child with its message.
fn delivered(setup: &Setup, argv: &[Vec<u8>], env: &[Vec<u8>]) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let Some(redo) = &setup.redo else {
        return (argv.to_vec(), env.to_vec());
    };
    let policy = setup.loaded.compiled.policy();
    match redo.deliver(&policy, argv, env, &setup.journal) {
        Ok(both) => both,
        Err(line) => {
            say!("envwrap: {line}");
            std::process::exit(CANNOT_EXECUTE.into())
        }
    }
}

/// The command's side: install the filter (with the run's mark, if any), send
/// the listener up, exec.
fn command(
    program: &Path,
    argv: &[Vec<u8>],
    env: &[Vec<u8>],
    saved: &[(Signal, SigHandler)],
    mask: &SigSet,
    down: OwnedFd,
    mark: Option<u64>,
) -> ! {
    for &(s, h) in saved {
        // SAFETY: the dispositions the foreground envwrap had, handed back.
        unsafe {
            let _ = signal::signal(s, h);
        }
    }
    let _ = signal::sigprocmask(SigmaskHow::SIG_SETMASK, Some(mask), None);
    let listener = match filter::install(mark) {
        Ok(fd) => fd,
        Err(e) => {
            say!(
                "envwrap: --supervise: cannot install the seccomp filter: {} (the kernel needs \
                 seccomp user notification, Linux 5.5 or later)",
                envpolicy::error::io_reason(&e)
            );
            std::process::exit(OWN_ERROR.into());
        }
    };
    let fds = [listener.as_raw_fd()];
    let sent = socket::sendmsg::<()>(
        down.as_raw_fd(),
        &[IoSlice::new(b"L")],
        &[ControlMessage::ScmRights(&fds)],
        socket::MsgFlags::empty(),
        None,
    );
    if let Err(e) = sent {
        say!("envwrap: --supervise: cannot pass the listener to the supervisor: {e}");
        std::process::exit(OWN_ERROR.into());
    }
    drop(listener);
    drop(down);
    // Dumpable again now that it holds no listener: the supervisor reads this
    // exec from its memory before the kernel performs it (which would reset it).
    let _ = nix::sys::prctl::set_dumpable(true);
    exec::restore_sigpipe();
    let err = exec::exec(program, argv, env);
    let code = if err.kind() == std::io::ErrorKind::NotFound {
        NOT_FOUND
    } else {
        CANNOT_EXECUTE
    };
    let _ = writeln!(
        std::io::stderr(),
        "envwrap: {}: {}",
        value::word(program.as_os_str().as_bytes()),
        envpolicy::error::io_reason(&err)
    );
    std::process::exit(code.into())
}

/// The listener the command sent, or `None` when it ended first.
fn receive_listener(up: &OwnedFd) -> Option<OwnedFd> {
    let mut byte = [0u8; 1];
    let mut iov = [std::io::IoSliceMut::new(&mut byte)];
    let mut space = nix::cmsg_space!([std::os::fd::RawFd; 1]);
    let msg = socket::recvmsg::<()>(
        up.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        socket::MsgFlags::MSG_CMSG_CLOEXEC,
    )
    .ok()?;
    for c in msg.cmsgs().ok()? {
        if let socket::ControlMessageOwned::ScmRights(fds) = c {
            if let Some(&fd) = fds.first() {
                use std::os::fd::FromRawFd;
                // SAFETY: SCM_RIGHTS gave this process a new fd nothing else owns.
                return Some(unsafe { OwnedFd::from_raw_fd(fd) });
            }
        }
    }
    None
}

/// Stop holding the terminal's stdin and stdout: a pipe the command's caller
/// reads must end when the command does, not when the last daemon does.
fn leave_terminal() {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        let _ = unistd::dup2_stdin(&null);
        let _ = unistd::dup2_stdout(&null);
    }
}

/// A session of its own, made after the command was forked (which stays in
/// envwrap's session and process group): where the kernel groups the
/// scheduling of processes by session (`/proc/sys/kernel/sched_autogroup_enabled`,
/// a task outside any cpu cgroup), the supervisor is then a group of its
/// own, which the CPU time the tree spends does not put behind. An answer
/// then wakes the exec without its preempting the supervisor, which ends
/// its turn and sleeps before the exec runs on: the kernel's exec balancing
/// (`sched_exec`) and the wake-ups that follow find the CPU free instead of
/// moving the new program to the other one (docs/benchmarks.md,
/// 2026-12-07). The supervisor ignores the terminal's signals and holds no
/// terminal already ([`leave_terminal`]); what it leaves is the job's
/// process group, so a signal to the whole job no longer reaches it: it
/// ends when no process holds the filter, as it does when the command ends
/// first. A supervisor that is a group leader cannot (nothing changes then).
fn own_scheduling_group() {
    let _ = unistd::setsid();
}

/// Give stderr up too (when the command has ended).
fn leave_stderr() {
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        let _ = unistd::dup2_stderr(&null);
    }
}

/// pidfd_open(2): a handle on process `pid` that stays its, whatever pid the
/// kernel hands out later; `None` when it has ended.
fn pidfd(pid: i32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open(2) takes a pid and flags, and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: a new fd nothing else owns.
    Some(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd as i32) })
}

fn own_error(message: &str) -> u8 {
    say!("envwrap: {message}");
    OWN_ERROR
}
