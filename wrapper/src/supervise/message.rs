//! Where a refusal is said: on the target's own stderr, where the program's
//! errors go, and on the supervisor's stderr (envwrap's, while the command runs)
//! when nobody may read the target's.
//!
//! A terminal is read by a person: a refusal in a tmux pane is said in that pane
//! only, not over the tmux client's screen. Anything else (/dev/null, the pipe
//! Go's os/exec reads a child's stderr into, a log file) may never be read, so
//! the line goes to envwrap's stderr too, unless that is the same file.
//!
//! A stderr that is not ready (a full pipe nobody reads, a terminal on hold)
//! gets its line from a thread of its own: the supervisor, which every exec of
//! the tree waits for, never waits for a reader.

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, FromRawFd};
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

/// Say `line` for the target `pid`.
pub fn tell(pid: u32, line: &str, writers: &mut Vec<std::thread::JoinHandle<()>>) {
    let line = &crate::value::redacted(line);
    let own = std::io::stderr();
    let target = target_stderr(pid);
    let also_own = match &target {
        None => true,
        Some(f) => !is_terminal(f) && !same_file(f, &own.as_fd()),
    };
    if let Some(f) = target {
        write(f, line, writers);
    }
    if also_own {
        if let Ok(fd) = own.as_fd().try_clone_to_owned() {
            write(File::from(fd), line, writers);
        }
    }
}

/// Wait a moment for lines still being written: the supervisor is ending.
pub fn finish(writers: Vec<std::thread::JoinHandle<()>>) {
    let deadline = Instant::now() + Duration::from_secs(1);
    for w in writers {
        while !w.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

fn write(mut f: File, line: &str, writers: &mut Vec<std::thread::JoinHandle<()>>) {
    let mut ready = [PollFd::new(f.as_fd(), PollFlags::POLLOUT)];
    let now = poll(&mut ready, PollTimeout::ZERO).unwrap_or(0) > 0
        && ready[0]
            .revents()
            .is_some_and(|r| r.contains(PollFlags::POLLOUT));
    if now {
        let _ = f.write_all(line.as_bytes());
        return;
    }
    writers.retain(|w| !w.is_finished());
    let line = line.to_string();
    if let Ok(h) = std::thread::Builder::new()
        .name("envwrap-message".into())
        .spawn(move || {
            let _ = f.write_all(line.as_bytes());
        })
    {
        writers.push(h);
    }
}

/// The target's fd 2, the same open file (pidfd_getfd(2)), so a line lands at
/// its offset; `None` when it is /dev/null or cannot be had.
fn target_stderr(target: u32) -> Option<File> {
    let pidfd = super::pidfd(target as i32)?;
    // SAFETY: pidfd_getfd(2) takes a pidfd, a target fd and flags, and returns a
    // new fd (close-on-exec) or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), 2, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: a new fd nothing else owns.
    let f = unsafe { File::from_raw_fd(fd as i32) };
    let null = std::fs::metadata("/dev/null").ok()?;
    let meta = f.metadata().ok()?;
    if meta.rdev() == null.rdev() && meta.dev() == null.dev() {
        return None;
    }
    Some(f)
}

fn is_terminal(f: &File) -> bool {
    std::io::IsTerminal::is_terminal(f)
}

fn same_file(f: &File, other: &std::os::fd::BorrowedFd<'_>) -> bool {
    let Ok(a) = f.metadata() else { return false };
    let Ok(b) = other
        .try_clone_to_owned()
        .map(File::from)
        .and_then(|f| f.metadata())
    else {
        return false;
    };
    a.dev() == b.dev() && a.ino() == b.ino()
}
