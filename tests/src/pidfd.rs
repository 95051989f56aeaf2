//! Signals that reach the process a test means, never whoever has its PID now.
//!
//! A PID is a number the kernel hands out again once its process is reaped, and
//! on a busy machine (a CI runner, other suites beside this one) the numbers wrap
//! quickly: `kill(pid)` of a number a test learned a moment ago can reach a
//! stranger (issue 51: a supervisor outside the suite got a SIGKILL). So every
//! signal the harness and the tests send goes through here:
//!
//! 1. [`Pidfd::open`]: `pidfd_open(2)` takes hold of the process that has the
//!    PID now. The descriptor names that process for good: a signal sent through
//!    it reaches that process or, once it has ended, none.
//! 2. The caller's proof that this process is the one meant, read from
//!    `/proc/PID` AFTER the open ([`hold`], [`signal_if_ours`]). Until the held
//!    process is reaped its PID is not handed out again, so what the proof read
//!    was the held process's unless the held process is reaped by then, and
//!    [`hold`] asks the descriptor after the proof (signal 0) that it is not.
//! 3. `pidfd_send_signal(2)` through the descriptor ([`Pidfd::send_signal`]).
//!
//! If the process is gone, or is not the one meant, nothing is sent, and the
//! caller is told which ([`Signalled`]).
//!
//! A process group cannot be held by a descriptor. [`signal_group_of_child`]
//! signals the group of the test's own child, which the harness makes a group
//! leader at spawn, and only while that child is un-reaped: a group's ID is the
//! PID of the process that made it, and that PID is not handed out again while
//! the child (running or a zombie) still holds it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ExitStatus};

/// What a signal sent through here did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signalled {
    /// Delivered to the process (or group) proven to be the one meant.
    Sent,
    /// No process has that PID any more, or it ended before the signal (or the
    /// child was already reaped): nothing was sent.
    Gone,
    /// A process has that PID, but the proof says it is not the one meant:
    /// nothing was sent.
    NotOurs,
}

/// A process held by a pidfd (`pidfd_open(2)`). Closed on drop.
#[derive(Debug)]
pub struct Pidfd {
    fd: OwnedFd,
    pid: u32,
}

impl Pidfd {
    /// Take hold of the process that has `pid` now. `Err` with `ESRCH` when no
    /// process has it. This proves nothing about WHICH process that is: see
    /// [`hold`].
    pub fn open(pid: u32) -> io::Result<Pidfd> {
        let Ok(raw) = libc::pid_t::try_from(pid) else {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        };
        if raw <= 0 {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        // SAFETY: pidfd_open(2) takes a PID and flags (0) and returns a new
        // descriptor or -1; no memory of ours is involved.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, raw, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a descriptor pidfd_open(2) just returned to us, owned
        // by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        Ok(Pidfd { fd, pid })
    }

    /// The PID the process had when it was opened.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Send `sig` (0: only ask) to the held process. `Ok(false)` when it has
    /// been reaped (`ESRCH`): nothing was sent. A zombie takes the signal and
    /// ignores it.
    pub fn send_signal(&self, sig: libc::c_int) -> io::Result<bool> {
        // SAFETY: pidfd_send_signal(2) with our own open pidfd, a signal number,
        // a null siginfo (the kernel fills in a kill(2)-like one) and flags 0.
        let r = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.fd.as_raw_fd(),
                sig,
                std::ptr::null::<libc::siginfo_t>(),
                0u32,
            )
        };
        if r == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ESRCH) {
            Ok(false)
        } else {
            Err(e)
        }
    }

    /// True once the held process has ended (a zombie counts as ended): the
    /// pidfd polls readable then.
    pub fn has_exited(&self) -> bool {
        let mut p = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll(2) of one pollfd we own, for the length of the call;
        // timeout 0, so it never blocks.
        let n = unsafe { libc::poll(&mut p, 1, 0) };
        n > 0 && p.revents & (libc::POLLIN | libc::POLLHUP) != 0
    }
}

/// Take hold of `pid` if it is the process meant: open a pidfd, THEN run
/// `is_ours(pid)` (which reads `/proc/PID`), then check through the descriptor
/// that the held process is still not reaped, so that what `is_ours` read was
/// the held process's (its PID could not be handed out in between). `Err` with
/// [`Signalled::Gone`] or [`Signalled::NotOurs`] when it is not held.
pub fn hold(pid: u32, is_ours: impl FnOnce(u32) -> bool) -> Result<Pidfd, Signalled> {
    let fd = Pidfd::open(pid).map_err(|_| Signalled::Gone)?;
    if !is_ours(pid) {
        // If the held process was reaped before the proof read /proc, the proof
        // read another process (or none): say which.
        return Err(match fd.send_signal(0) {
            Ok(true) => Signalled::NotOurs,
            _ => Signalled::Gone,
        });
    }
    match fd.send_signal(0) {
        Ok(true) => Ok(fd),
        _ => Err(Signalled::Gone),
    }
}

/// Send `sig` to `pid` if `is_ours(pid)` proves it is the process meant, through
/// a pidfd opened before the proof (see [`hold`]); else send nothing.
pub fn signal_if_ours(pid: u32, sig: libc::c_int, is_ours: impl FnOnce(u32) -> bool) -> Signalled {
    match hold(pid, is_ours) {
        Ok(fd) => match fd.send_signal(sig) {
            Ok(true) => Signalled::Sent,
            _ => Signalled::Gone,
        },
        Err(why) => why,
    }
}

/// Send `sig` to the process group that `leader`, a child of this process made
/// a group leader at spawn (`process_group(0)`), leads; only while `leader` is
/// un-reaped. Its PID is the group's ID, and no other process can get that PID,
/// and so make a group with that ID, until the child is reaped; `&mut Child`
/// keeps anyone else from reaping it meanwhile (the harness never waits for
/// "any child"). Processes that left the group (`setsid`, as a tmux server
/// does) are not reached. [`Signalled::Gone`] when the child was reaped.
pub fn signal_group_of_child(leader: &mut Child, sig: libc::c_int) -> Signalled {
    if !unreaped(leader) {
        return Signalled::Gone;
    }
    let pgid = leader.id() as libc::pid_t;
    if pgid <= 0 {
        return Signalled::Gone;
    }
    // SAFETY: kill(2) of the group -pgid: pgid > 0, so never our own group (0)
    // nor every process (-1), and it is the group of our un-reaped child (see
    // above), which no other process can have made. No memory involved.
    if unsafe { libc::kill(-pgid, sig) } == 0 {
        Signalled::Sent
    } else {
        Signalled::Gone
    }
}

/// True while `child` has not been reaped (it may have ended: a zombie).
fn unreaped(child: &mut Child) -> bool {
    // SAFETY: siginfo_t is plain data; all zeroes is a valid value.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid(2) writes only into `info`; WNOWAIT leaves the child
    // waitable, WNOHANG never blocks. It fails (ECHILD) once the child is reaped.
    unsafe {
        libc::waitid(
            libc::P_PID,
            child.id() as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        ) == 0
    }
}

/// How `child` ended, without reaping it (so that its PID, and the ID of the
/// process group it leads, stays its own until `wait`): `None` while it runs.
/// A child already reaped by `Child::try_wait` or `wait` gives the status std
/// kept.
pub fn exit_status_unreaped(child: &mut Child) -> io::Result<Option<ExitStatus>> {
    // SAFETY: siginfo_t is plain data; all zeroes is a valid value (si_pid 0:
    // no child has ended, when WNOHANG returns at once).
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid(2) writes only into `info`; WNOWAIT leaves the child
    // waitable, WNOHANG never blocks.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            child.id() as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    if r != 0 {
        let e = io::Error::last_os_error();
        return if e.raw_os_error() == Some(libc::ECHILD) {
            child.try_wait()
        } else {
            Err(e)
        };
    }
    // SAFETY: waitid(2) returned 0 and filled in (or left zeroed) a siginfo of
    // SIGCHLD, whose union member holds si_pid and si_status.
    let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
    if pid == 0 {
        return Ok(None);
    }
    // The status as wait(2) encodes it, which ExitStatus reads.
    let raw = match info.si_code {
        libc::CLD_EXITED => (status & 0xff) << 8,
        libc::CLD_KILLED => status & 0x7f,
        libc::CLD_DUMPED => (status & 0x7f) | 0x80,
        _ => return Ok(None),
    };
    Ok(Some(ExitStatus::from_raw(raw)))
}

/// Proof helper: `/proc/PID/comm` is `comm`.
pub fn comm_is(pid: u32, comm: &str) -> bool {
    crate::procfs::proc_comm(pid).as_deref() == Some(comm)
}

/// Proof helper: one argument of `/proc/PID/cmdline` holds `needle`.
pub fn cmdline_holds(pid: u32, needle: &[u8]) -> bool {
    !needle.is_empty()
        && crate::procfs::try_proc_cmdline(pid).is_ok_and(|args| {
            args.iter()
                .any(|a| a.windows(needle.len()).any(|w| w == needle))
        })
}

/// Proof helper: `/proc/PID/environ` holds the entry `NAME=VALUE`, exactly.
pub fn environ_holds(pid: u32, name: &str, value: &std::ffi::OsStr) -> bool {
    let mut entry = name.as_bytes().to_vec();
    entry.push(b'=');
    entry.extend_from_slice(value.as_encoded_bytes());
    crate::procfs::try_proc_environ_raw(pid).is_ok_and(|env| env.contains(&entry))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};
    use std::time::Duration;

    fn sleeper() -> Child {
        let mut c = Command::new("sleep");
        c.arg("60").stdin(Stdio::null());
        std::os::unix::process::CommandExt::process_group(&mut c, 0);
        c.spawn().expect("sleep")
    }

    fn ours(pid: u32) -> bool {
        crate::procfs::proc_ppid(pid) == Some(std::process::id())
    }

    #[test]
    fn a_proven_process_is_signalled_and_another_is_not() {
        let mut child = sleeper();
        let pid = child.id();
        assert_eq!(
            signal_if_ours(pid, libc::SIGKILL, |_| false),
            Signalled::NotOurs
        );
        assert_eq!(exit_status_unreaped(&mut child).unwrap(), None);
        let held = hold(pid, ours).expect("our own child");
        assert!(!held.has_exited());
        assert_eq!(signal_if_ours(pid, libc::SIGKILL, ours), Signalled::Sent);
        assert!(crate::wait::wait_for(
            || held.has_exited(),
            Duration::from_secs(5)
        ));
        // Ended, not reaped: the status is there, and still is after.
        let st = exit_status_unreaped(&mut child).unwrap().expect("ended");
        assert_eq!(st.signal(), Some(libc::SIGKILL));
        assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
        assert!(!held.send_signal(0).unwrap());
        assert_eq!(
            signal_if_ours(pid, libc::SIGKILL, |_| true),
            Signalled::Gone
        );
    }

    #[test]
    fn a_group_is_signalled_only_while_its_leader_is_unreaped() {
        let mut child = sleeper();
        assert_eq!(
            signal_group_of_child(&mut child, libc::SIGKILL),
            Signalled::Sent
        );
        assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
        assert_eq!(
            signal_group_of_child(&mut child, libc::SIGKILL),
            Signalled::Gone
        );
        let mut exits = Command::new("sh").args(["-c", "exit 3"]).spawn().unwrap();
        let mut st = None;
        crate::wait::wait_for(
            || {
                st = exit_status_unreaped(&mut exits).unwrap();
                st.is_some()
            },
            Duration::from_secs(5),
        );
        assert_eq!(st.and_then(|s| s.code()), Some(3));
        assert_eq!(exits.wait().unwrap().code(), Some(3));
    }

    /// The ways to signal a process by its number alone. Only this file may
    /// name them (in these patterns and [`signal_group_of_child`]).
    const BY_NUMBER: &[&str] = &[
        "libc::kill(",
        "libc::killpg(",
        "libc::tgkill(",
        "libc::sigqueue(",
        "signal::kill(",
        "signal::killpg(",
        "SYS_kill",
        "SYS_tkill",
        "SYS_tgkill",
        "Command::new(\"kill\")",
        "Command::new(\"pkill\")",
        "Command::new(\"killall\")",
    ];

    #[test]
    fn no_file_of_the_tests_signals_a_process_by_its_number() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let files = crate::walk::files_under(vec![root.join("src"), root.join("tests")], |_| true);
        let this = root.join("src/pidfd.rs");
        let mut found = Vec::new();
        let mut read = 0;
        for (path, _) in files {
            if path == this || path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            read += 1;
            for (n, line) in text.lines().enumerate() {
                if line.trim_start().starts_with("//") {
                    continue;
                }
                for pat in BY_NUMBER {
                    if line.contains(pat) {
                        found.push(format!(
                            "{}:{}: {pat}",
                            path.strip_prefix(root).unwrap_or(&path).display(),
                            n + 1
                        ));
                    }
                }
            }
        }
        assert!(read > 20, "the test files were not found under {root:?}");
        assert!(
            found.is_empty(),
            "signals by PID number (a PID can be handed out again: use \
             envshim_e2e::pidfd, which holds the process by a pidfd and proves it is \
             the one meant):\n{}",
            found.join("\n")
        );
    }
}
