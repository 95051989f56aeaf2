//! The command's pseudo-terminal, and envwrap's own terminal while it relays:
//! the command's terminal starts as a copy of envwrap's (modes and window
//! size); envwrap's stdin goes raw, so that every key, Ctrl-C and Ctrl-Z
//! included, reaches the command's terminal, which acts on it as envwrap's
//! would have.

use super::Ends;
use nix::sys::termios::{self, SetArg, Termios};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

/// Both ends of the command's pseudo-terminal.
pub struct Pty {
    /// The end the relay reads output from and writes keys to.
    pub relay_side: OwnedFd,
    /// The end that becomes the command's terminal.
    pub command_side: OwnedFd,
}

/// The terminal envwrap copies from: stdin if it is one, else stdout, else
/// stderr.
pub fn own(ends: &Ends) -> Option<BorrowedFd<'static>> {
    let fd = if ends.stdin_tty {
        0
    } else if ends.stdout_tty {
        1
    } else if ends.stderr_tty {
        2
    } else {
        return None;
    };
    // SAFETY: the standard streams stay open for the life of envwrap.
    Some(unsafe { BorrowedFd::borrow_raw(fd) })
}

/// A new pseudo-terminal with the modes and window size of envwrap's own.
pub fn open(ends: &Ends) -> std::io::Result<Pty> {
    let own = own(ends);
    let modes = own.and_then(|fd| termios::tcgetattr(fd).ok());
    let size = own.and_then(window_size);
    let pair = nix::pty::openpty(size.as_ref(), modes.as_ref())?;
    for fd in [&pair.master, &pair.slave] {
        nix::fcntl::fcntl(
            fd.as_fd(),
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
        )?;
    }
    Ok(Pty {
        relay_side: pair.master,
        command_side: pair.slave,
    })
}

/// The window size of terminal `fd`.
pub fn window_size(fd: BorrowedFd<'_>) -> Option<nix::pty::Winsize> {
    let mut ws = nix::pty::Winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one winsize into `ws`, which outlives the call.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCGWINSZ, &mut ws) };
    (r == 0).then_some(ws)
}

/// Give the command's terminal the window size of envwrap's own (the kernel
/// then sends SIGWINCH to its foreground process group).
pub fn copy_window_size(from: BorrowedFd<'_>, to: BorrowedFd<'_>) {
    if let Some(ws) = window_size(from) {
        // SAFETY: TIOCSWINSZ reads one winsize from `ws`, which outlives the call.
        unsafe { libc::ioctl(to.as_raw_fd(), libc::TIOCSWINSZ, &ws) };
    }
}

/// envwrap's stdin in raw mode while the guard lives, and as it was after.
pub struct Raw {
    saved: Option<Termios>,
}

impl Raw {
    /// Raw mode on stdin, if it is a terminal.
    pub fn enter(ends: &Ends) -> Raw {
        if !ends.stdin_tty {
            return Raw { saved: None };
        }
        let stdin = std::io::stdin();
        let Ok(saved) = termios::tcgetattr(stdin.as_fd()) else {
            return Raw { saved: None };
        };
        let mut raw = saved.clone();
        termios::cfmakeraw(&mut raw);
        let _ = termios::tcsetattr(stdin.as_fd(), SetArg::TCSADRAIN, &raw);
        Raw { saved: Some(saved) }
    }

    /// Back to the saved modes now (before envwrap stops or dies); raw again
    /// with [`Raw::again`].
    pub fn leave(&self) {
        if let Some(saved) = &self.saved {
            let _ = termios::tcsetattr(std::io::stdin().as_fd(), SetArg::TCSADRAIN, saved);
        }
    }

    /// Raw again, after [`Raw::leave`] (envwrap continued after a stop).
    pub fn again(&self) {
        if let Some(saved) = &self.saved {
            let mut raw = saved.clone();
            termios::cfmakeraw(&mut raw);
            let _ = termios::tcsetattr(std::io::stdin().as_fd(), SetArg::TCSADRAIN, &raw);
        }
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        self.leave();
    }
}
