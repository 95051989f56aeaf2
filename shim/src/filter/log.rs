//! The policy's log: opened once, by the constructor, and written by every
//! exec's report ([`crate::filter::report`]) through the one writer of messages.

use core::ffi::c_int;
use core::sync::atomic::{AtomicI32, Ordering};

use envpolicy_core::Records;

/// The audit and warning log, opened once at load (`O_APPEND|O_CLOEXEC`); -1 = none.
/// On the constructor's page (see [`crate::hooks::init`]): every exec reads it, and in a
/// `fork` child a page its parent never touched is a page fault at every command.
#[link_section = ".data.envshim_ctor"]
static LOG_FD: AtomicI32 = AtomicI32::new(-1);
/// Opens the policy's log file, if it names one. Called by the constructor with
/// the peeked policy (see [`crate::state::policy::with_peeked`]).
pub fn open_log(policy: Option<&Records<'_>>) {
    let Some(path) = policy.and_then(|p| p.log_path()) else {
        return;
    };
    if path.last() != Some(&0) {
        return;
    }
    // SAFETY: `path` is NUL-terminated (checked above) and lives in the mapped
    // policy for the life of the process; openat has no other preconditions.
    let fd = unsafe {
        crate::platform::sys::sys_call!(
            libc::SYS_openat,
            libc::AT_FDCWD,
            path.as_ptr(),
            // Without blocking: a FIFO planted as the log fails at once (ENXIO
            // when nobody reads it) instead of holding the constructor.
            libc::O_WRONLY
                | libc::O_APPEND
                | libc::O_CREAT
                | libc::O_CLOEXEC
                | libc::O_NONBLOCK
                | libc::O_NOCTTY,
            0o600 as libc::c_uint,
        )
    };
    if fd >= 0 {
        LOG_FD.store(fd as c_int, Ordering::Relaxed);
    }
}

/// The log's descriptor, when the policy keeps one.
pub fn fd() -> Option<c_int> {
    Some(LOG_FD.load(Ordering::Relaxed)).filter(|&fd| fd >= 0)
}

/// Where audit records go: the policy's log, else stderr.
pub fn audit_fd() -> c_int {
    fd().unwrap_or(2)
}
