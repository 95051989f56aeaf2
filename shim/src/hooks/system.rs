//! `system(3)`, rebuilt on the real `posix_spawn` so that the child gets the filtered
//! environment (glibc's own `system` calls an internal `__posix_spawn` alias that no
//! preload can hook).
//!
//! Behaviour follows POSIX and glibc 2.36: `/bin/sh` runs as `sh -c CMD` with the
//! calling process's `environ` (filtered); while waiting, the caller ignores SIGINT and
//! SIGQUIT and blocks SIGCHLD; the child gets SIGINT and SIGQUIT reset to SIG_DFL (unless
//! they were ignored before the call) and the caller's original signal mask;
//! `waitpid` is retried on EINTR; if the shell cannot be started the result is as if it
//! had exited with 127, with errno set to the reason; `system(NULL)` runs `exit 0` and
//! returns nonzero if that worked, i.e. if `/bin/sh` is usable. A policy refusal
//! returns -1 with errno EPERM and starts nothing.
//!
//! Concurrent calls: as in glibc, the first caller saves and replaces the SIGINT/SIGQUIT
//! dispositions and the last one restores them. That bookkeeping needs mutual
//! exclusion over a few `sigaction` calls, done with a tiny spin lock. This is not
//! the exec path: POSIX does not allow `system` in a fork child of a multithreaded
//! program (glibc's takes a lock here too). Thread cancellation is held off for the
//! duration of the call (see [`crate::platform::sys::NoCancel`]).

use core::cell::UnsafeCell;
use core::ffi::{c_char, c_int};
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, Ordering};

use crate::hooks::exec::with_policy_spawned;
use crate::platform::cold;
use crate::platform::real;
use crate::platform::sys::{self, set_errno};

struct Saved {
    refs: usize,
    intr: MaybeUninit<libc::sigaction>,
    quit: MaybeUninit<libc::sigaction>,
}

struct Shared {
    lock: AtomicBool,
    saved: UnsafeCell<Saved>,
}

// SAFETY: `saved` is only accessed while `lock` is held (see `with_lock`).
unsafe impl Sync for Shared {}

#[link_section = ".data.envshim_zero"]
static SHARED: Shared = Shared {
    lock: AtomicBool::new(false),
    saved: UnsafeCell::new(Saved {
        refs: 0,
        intr: MaybeUninit::uninit(),
        quit: MaybeUninit::uninit(),
    }),
};

fn with_lock<R>(f: impl FnOnce(&mut Saved) -> R) -> R {
    while SHARED
        .lock
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        // SAFETY: sched_yield has no preconditions.
        unsafe { cold::sched_yield() };
    }
    // SAFETY: we hold the lock, so this is the only reference to `saved`.
    let r = f(unsafe { &mut *SHARED.saved.get() });
    SHARED.lock.store(false, Ordering::Release);
    r
}

const SH_ARGV0: &[u8] = b"sh\0";
const SH_C: &[u8] = b"-c\0";
const SHELL: &[u8] = b"/bin/sh\0";

/// `system(3)` with the policy applied.
///
/// # Safety
/// `command` must be NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn system(command: *const c_char) -> c_int {
    let _nc = sys::NoCancel::new();
    if command.is_null() {
        // SAFETY: a NUL-terminated literal.
        let r = unsafe { do_system(c"exit 0".as_ptr()) };
        return (r == 0) as c_int;
    }
    // SAFETY: contract.
    unsafe { do_system(command) }
}

unsafe fn do_system(line: *const c_char) -> c_int {
    let argv: [*const c_char; 4] = [
        SH_ARGV0.as_ptr().cast(),
        SH_C.as_ptr().cast(),
        line,
        core::ptr::null(),
    ];
    let run = |p: *const c_char, a: *const *const c_char, e: *const *const c_char| -> c_int {
        // SAFETY: `p` is the shell's path or envwrap's, NUL-terminated; `a`/`e`
        // are valid arrays (ours or the policy's) for this call.
        unsafe { spawn_and_wait(p, a, e) }
    };
    // SAFETY: `argv` is NULL-terminated with NUL-terminated strings; environ likewise.
    match unsafe {
        with_policy_spawned(
            SHELL.as_ptr().cast(),
            argv.as_ptr(),
            sys::environ_ptr(),
            run,
        )
    } {
        Ok(status) => status,
        Err(e) => {
            set_errno(e);
            -1
        }
    }
}

/// The POSIX `system` dance around the real `posix_spawn` of `/bin/sh` (or of
/// envwrap, when the shell gets a secret: `path`).
///
/// # Safety
/// `path` NUL-terminated; `argv`, `envp` valid NULL-terminated arrays.
unsafe fn spawn_and_wait(
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    // SAFETY: every libc call below gets valid pointers to initialised local structures
    // (sigaction/sigprocmask/posix_spawnattr_* cannot fail with these inputs); the real
    // posix_spawn gets a NUL-terminated path and the caller's valid arrays.
    unsafe {
        let mut ign: libc::sigaction = core::mem::zeroed();
        ign.sa_sigaction = libc::SIG_IGN;
        cold::sigemptyset(&mut ign.sa_mask);

        let (intr, quit) = with_lock(|s| {
            if s.refs == 0 {
                cold::sigaction(libc::SIGINT, &ign, s.intr.as_mut_ptr());
                cold::sigaction(libc::SIGQUIT, &ign, s.quit.as_mut_ptr());
            }
            s.refs += 1;
            (s.intr.assume_init_read(), s.quit.assume_init_read())
        });

        let mut chld: libc::sigset_t = core::mem::zeroed();
        cold::sigemptyset(&mut chld);
        cold::sigaddset(&mut chld, libc::SIGCHLD);
        let mut omask: libc::sigset_t = core::mem::zeroed();
        cold::sigprocmask(libc::SIG_BLOCK, &chld, &mut omask);

        let mut reset: libc::sigset_t = core::mem::zeroed();
        cold::sigemptyset(&mut reset);
        if intr.sa_sigaction != libc::SIG_IGN {
            cold::sigaddset(&mut reset, libc::SIGINT);
        }
        if quit.sa_sigaction != libc::SIG_IGN {
            cold::sigaddset(&mut reset, libc::SIGQUIT);
        }
        let mut attr = MaybeUninit::<libc::posix_spawnattr_t>::uninit();
        cold::posix_spawnattr_init(attr.as_mut_ptr());
        cold::posix_spawnattr_setsigmask(attr.as_mut_ptr(), &omask);
        cold::posix_spawnattr_setsigdefault(attr.as_mut_ptr(), &reset);
        cold::posix_spawnattr_setflags(
            attr.as_mut_ptr(),
            (libc::POSIX_SPAWN_SETSIGDEF | libc::POSIX_SPAWN_SETSIGMASK) as libc::c_short,
        );

        let mut pid: libc::pid_t = 0;
        let ret = match real::posix_spawn() {
            Some(f) => f(&mut pid, path, core::ptr::null(), attr.as_ptr(), argv, envp),
            None => libc::ENOSYS,
        };
        cold::posix_spawnattr_destroy(attr.as_mut_ptr());

        let mut status: c_int = 0;
        let mut wait_errno = 0;
        if ret == 0 {
            loop {
                let r = cold::waitpid(pid, &mut status, 0);
                if r == pid {
                    break;
                }
                if r == -1 && sys::errno() == libc::EINTR {
                    continue;
                }
                wait_errno = sys::errno();
                status = -1;
                break;
            }
        } else {
            // POSIX: as if the shell had terminated with _exit(127).
            status = 127 << 8;
        }

        with_lock(|s| {
            s.refs -= 1;
            if s.refs == 0 {
                cold::sigaction(libc::SIGINT, s.intr.as_ptr(), core::ptr::null_mut());
                cold::sigaction(libc::SIGQUIT, s.quit.as_ptr(), core::ptr::null_mut());
            }
        });
        cold::sigprocmask(libc::SIG_SETMASK, &omask, core::ptr::null_mut());

        if ret != 0 {
            set_errno(ret);
        } else if status == -1 {
            set_errno(wait_errno);
        }
        status
    }
}
