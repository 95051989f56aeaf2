//! The listener's three requests (seccomp_unotify(2)): receive a notification,
//! ask whether it is still valid, and answer it.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// One intercepted system call.
#[derive(Clone, Copy, Debug)]
pub struct Notification {
    pub id: u64,
    pub pid: u32,
    pub arch: u32,
    pub nr: i32,
    pub args: [u64; 6],
}

/// Ask the kernel to wake the supervisor on the CPU of the process that waits
/// for it, and that process on the supervisor's when it answers (Linux 6.6,
/// SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP): an exec and its answer then cost no
/// wake-up of an idle CPU, which on a virtual machine is a trip through the
/// hypervisor each way. Older kernels refuse it; nothing else changes.
pub fn wake_synchronously(listener: BorrowedFd<'_>) {
    const SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP: u64 = 1;
    // SAFETY: NOTIF_SET_FLAGS takes its flags as the integer argument itself.
    unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SET_FLAGS as _,
            SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP,
        );
    }
}

/// Receive the next notification. `Ok(None)`: the target was gone before it
/// could be received (ENOENT), or a signal interrupted the wait.
pub fn receive(listener: BorrowedFd<'_>) -> io::Result<Option<Notification>> {
    // SAFETY: an all-zero `seccomp_notif` is a valid value (plain integers), and
    // the kernel requires it zeroed.
    let mut n: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: NOTIF_RECV writes one `seccomp_notif` into `n`, which it points at.
    let r = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_RECV as _,
            &mut n as *mut libc::seccomp_notif,
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENOENT) | Some(libc::EINTR) => Ok(None),
            _ => Err(e),
        };
    }
    Ok(Some(Notification {
        id: n.id,
        pid: n.pid,
        arch: n.data.arch,
        nr: n.data.nr,
        args: n.data.args,
    }))
}

/// Is the target still blocked in the system call of this notification? A
/// `pid` read before this said yes still names that process.
pub fn still_valid(listener: BorrowedFd<'_>, id: u64) -> bool {
    // SAFETY: NOTIF_ID_VALID reads one u64 from the pointer, which outlives it.
    let r = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID as _,
            &id as *const u64,
        )
    };
    r == 0
}

/// Let the system call run as the target made it.
pub fn allow(listener: BorrowedFd<'_>, id: u64) -> io::Result<()> {
    send(
        listener,
        id,
        0,
        libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
    )
}

/// Fail the system call with `errno`.
pub fn fail(listener: BorrowedFd<'_>, id: u64, errno: i32) -> io::Result<()> {
    send(listener, id, -errno, 0)
}

fn send(listener: BorrowedFd<'_>, id: u64, error: i32, flags: u32) -> io::Result<()> {
    let mut resp = libc::seccomp_notif_resp {
        id,
        val: 0,
        error,
        flags,
    };
    // SAFETY: NOTIF_SEND reads one `seccomp_notif_resp` from the pointer.
    let r = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND as _,
            &mut resp as *mut libc::seccomp_notif_resp,
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        // ENOENT: the target is gone (killed, or its exec interrupted). Nothing
        // waits for the answer any more.
        if e.raw_os_error() == Some(libc::ENOENT) {
            return Ok(());
        }
        return Err(e);
    }
    Ok(())
}
