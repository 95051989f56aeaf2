//! Running envwrap from inside a program: the compile of a policy ([`crate::state::load`])
//! and the check of a multiplexer's server ([`crate::mux::client`]).
//!
//! envwrap is started with libc's own `posix_spawn` (not our hook) and waited for
//! with raw system calls, with every signal blocked meanwhile ([`QuietChild`]): a
//! compile may run on an exec path, possibly in a `vfork` child that shares the
//! program's memory, where nothing may go through libc's lazily bound functions
//! or run one of the program's handlers. The wait is bounded; a signal the program
//! would act on stops envwrap at once.

use core::ffi::{c_char, c_int};

use crate::platform::fs::{PathBuf, PathSpace};
use crate::platform::{real, sys};
use crate::state::sticky::{self, Captured};

/// How often the wait looks for a signal meant for the program.
const SLICE_MS: i64 = 20;

/// How a run of envwrap ended, as far as the shim could see.
pub enum Waited {
    /// envwrap exited, or was killed: its wait status.
    Exited(c_int),
    /// It ended, but someone else collected it (`SIGCHLD` ignored, or another
    /// thread's `wait`).
    Uncollected,
    /// It ran past its limit and was killed.
    TimedOut,
    /// A signal for the program arrived meanwhile: envwrap was killed so that
    /// the program gets its signal now.
    Interrupted,
}

/// Where envwrap is, NUL-terminated.
pub enum Envwrap<'s> {
    /// `$ENVSHIM_ENVWRAP`, as the environment holds it.
    Named(&'static [u8]),
    /// `envwrap` beside libenvshim.so, built in the caller's space.
    Beside(&'s [u8]),
}

impl<'s> Envwrap<'s> {
    /// The path, NUL-terminated.
    pub fn c_path(&self) -> &'s [u8] {
        match *self {
            Envwrap::Named(p) => p,
            Envwrap::Beside(p) => p,
        }
    }
}

/// envwrap: `$ENVSHIM_ENVWRAP`, else `envwrap` beside libenvshim.so, built in
/// `space`. A set-user-ID program ([`crate::platform::fs::secure`]) takes no
/// envwrap from its invoking user's environment: it would run it with its
/// owner's privileges.
pub fn envwrap_path(space: &mut PathSpace) -> Option<Envwrap<'_>> {
    let named = if crate::platform::fs::secure() {
        None
    } else {
        // SAFETY: `environ` is a NULL-terminated array of NUL-terminated strings.
        unsafe {
            sys::env_get(
                sys::environ_ptr(),
                envpolicy_core::shared::ENVWRAP.as_bytes(),
            )
        }
    };
    if let Some(v) = named {
        // SAFETY: `v` points to a NUL-terminated value.
        let n = unsafe { sys::strlen(v) };
        if n > 0 {
            // SAFETY: `n + 1` bytes (the value and its NUL) are readable, and stay
            // so: the shim reads the environment before `main` may change it, and
            // a program that replaces an entry leaves the old string in place.
            return Some(Envwrap::Named(unsafe {
                core::slice::from_raw_parts(v.cast::<u8>(), n + 1)
            }));
        }
    }
    let mut p = PathBuf::new(space);
    if let Captured::Present(own) = sticky::own_path() {
        let own = own.to_bytes();
        if let Some(slash) = own.iter().rposition(|&b| b == b'/') {
            p.push(own.get(..slash).unwrap_or(&[])).push(b"/envwrap");
        }
    }
    p.into_c_bytes()
        .filter(|c| c.len() > 1)
        .map(Envwrap::Beside)
}

/// Run `path` (NUL-terminated) with `argv` and `envp` (NULL-terminated arrays of
/// NUL-terminated strings) and wait for it, at most `limit_ms` (see
/// [`QuietChild`]). `Err` the spawn error.
pub fn run(
    path: &[u8],
    argv: &[*const c_char],
    envp: &[*const c_char],
    limit_ms: i64,
) -> Result<Waited, c_int> {
    let spawn = spawner(argv, envp)?;
    let quiet = QuietChild::begin();
    let result = spawn_only(spawn, path, argv, envp).map(|pid| wait_bounded(pid, limit_ms, &quiet));
    quiet.end();
    result
}

/// [`run`], for a program that must start with this process's own signal mask
/// (a `command:` secret's helper, which may leave an agent behind that a
/// signal must still reach): spawned before every signal is blocked, then
/// waited for as [`run`] waits. Only where this process is its own (a `fork`
/// child, or a program that execs in place), never in a `vfork` child: a
/// handler of the program may run between the spawn and the block.
pub fn run_with_own_mask(
    path: &[u8],
    argv: &[*const c_char],
    envp: &[*const c_char],
    limit_ms: i64,
) -> Result<Waited, c_int> {
    let pid = spawn_only(spawner(argv, envp)?, path, argv, envp)?;
    let quiet = QuietChild::begin();
    let result = wait_bounded(pid, limit_ms, &quiet);
    quiet.end();
    Ok(result)
}

/// libc's own `posix_spawn`, once both arrays are NULL-terminated.
fn spawner(argv: &[*const c_char], envp: &[*const c_char]) -> Result<real::PosixSpawnFn, c_int> {
    if argv.last().is_none_or(|p| !p.is_null()) || envp.last().is_none_or(|p| !p.is_null()) {
        return Err(libc::EINVAL);
    }
    real::posix_spawn().ok_or(libc::ENOSYS)
}

/// `posix_spawn` `path`: its pid, or the spawn error.
fn spawn_only(
    spawn: real::PosixSpawnFn,
    path: &[u8],
    argv: &[*const c_char],
    envp: &[*const c_char],
) -> Result<libc::pid_t, c_int> {
    let mut pid: libc::pid_t = 0;
    // SAFETY: every string is NUL-terminated (the caller's contract, and `path`'s),
    // both arrays are NULL-terminated (checked by `spawner`), and no file
    // actions or attributes are passed. This is libc's own posix_spawn, not our hook.
    let r = unsafe {
        spawn(
            &mut pid,
            path.as_ptr().cast(),
            core::ptr::null(),
            core::ptr::null(),
            argv.as_ptr(),
            envp.as_ptr(),
        )
    };
    if r != 0 {
        return Err(r);
    }
    Ok(pid)
}

/// Wait for `pid` at most `limit_ms` (see [`Waited`]), stopping it when a
/// signal for the program arrives.
fn wait_bounded(pid: libc::pid_t, limit_ms: i64, quiet: &QuietChild) -> Waited {
    for _ in 0..limit_ms / SLICE_MS {
        if let Some(done) = collect(pid) {
            return done;
        }
        if quiet.signal_for_program() {
            stop(pid);
            return Waited::Interrupted;
        }
        sleep_until_child(SLICE_MS);
    }
    stop(pid);
    Waited::TimedOut
}

/// Collect `pid` if it has ended (`None`: still running). Raw system calls, not
/// libc's lazily bound `waitpid`: this may run on an exec path (see [`crate::state::load::finish`]).
fn collect(pid: libc::pid_t) -> Option<Waited> {
    let mut status: c_int = 0;
    loop {
        // SAFETY: `pid` is our child; `status` is a valid out-pointer; no rusage.
        let w = unsafe {
            crate::platform::sys::sys_call!(
                libc::SYS_wait4,
                pid,
                &mut status as *mut c_int,
                libc::WNOHANG,
                core::ptr::null_mut::<libc::rusage>(),
            )
        } as libc::pid_t;
        if w == pid {
            return Some(Waited::Exited(status));
        }
        if w == 0 {
            return None;
        }
        if sys::errno() != libc::EINTR {
            return Some(Waited::Uncollected);
        }
    }
}

/// Kill `pid` and collect it, waiting at most a second for the kernel to end it
/// (a process blocked on a hung mount may take that long to die; it is left to
/// the program's own `wait` after that).
fn stop(pid: libc::pid_t) {
    // SAFETY: `pid` is our own child, not yet collected.
    unsafe { crate::platform::sys::sys_call!(libc::SYS_kill, pid, libc::SIGKILL) };
    for _ in 0..1000 / SLICE_MS {
        if collect(pid).is_some() {
            return;
        }
        sleep_until_child(SLICE_MS);
    }
}

/// Sleep `ms` milliseconds (0: not at all), or until a `SIGCHLD` (blocked by
/// [`QuietChild`]) is pending; takes it off.
fn sleep_until_child(ms: i64) {
    let chld: u64 = CHLD_BIT;
    let slice = libc::timespec {
        tv_sec: 0,
        tv_nsec: ms * 1_000_000,
    };
    // SAFETY: `chld` is a valid kernel sigset and `slice` a valid timeout; no
    // siginfo out-pointer. Waits for SIGCHLD only, which is blocked.
    unsafe {
        crate::platform::sys::sys_call!(
            libc::SYS_rt_sigtimedwait,
            &chld as *const u64,
            core::ptr::null_mut::<libc::siginfo_t>(),
            &slice as *const libc::timespec,
            SIGSET_BYTES,
        );
    }
}

/// The program's signal handlers kept out of a compile, and the program's signals
/// not kept from it.
///
/// A compile can run on an exec path (see [`crate::state::load::finish`]), possibly in a `vfork` child
/// of the program, which shares its memory: a handler run there (for the
/// `SIGCHLD` that envwrap's exit raises) would change the parent's state from the
/// wrong process. So every signal is blocked while envwrap runs (as glibc's
/// `posix_spawn` does in its own child), and the `SIGCHLD` that envwrap caused is
/// taken off before the mask is restored, unless one was pending already or
/// another child of this process has a state change to report, in which case the
/// program gets its `SIGCHLD` as it would have.
///
/// Blocked is not deaf: the wait looks every [`SLICE_MS`] for a signal that the
/// program would act on (`SIGTERM`, `SIGINT`, a handler's signal; not one ignored
/// or whose default is to ignore or stop), and when one arrives it stops the
/// compile, which then means the floor, and restores the mask, so that `timeout`,
/// Ctrl-C and `kill` work as they do without the shim. Raw system calls: nothing here may go through libc's
/// lazily bound functions on an exec path.
struct QuietChild {
    /// The mask to restore (the kernel's 64-bit set).
    old: u64,
    /// The signals pending before the compile (a program may keep one blocked
    /// and pending for as long as it likes: that one does not stop a compile).
    pending_before: u64,
}

const CHLD_BIT: u64 = 1 << (libc::SIGCHLD - 1);
/// Bytes of the kernel's signal set on this architecture.
const SIGSET_BYTES: usize = 8;
/// Signals whose default action is to ignore them or to stop the process: a
/// compile goes on when one of these is pending with its default action.
const DEFAULT_QUIET: u64 = bit(libc::SIGCHLD)
    | bit(libc::SIGCONT)
    | bit(libc::SIGURG)
    | bit(libc::SIGWINCH)
    | bit(libc::SIGTSTP)
    | bit(libc::SIGTTIN)
    | bit(libc::SIGTTOU)
    | bit(libc::SIGSTOP);

const fn bit(sig: c_int) -> u64 {
    1 << (sig - 1)
}

/// The kernel's `struct sigaction` on x86_64 and aarch64 (`rt_sigaction`).
#[repr(C)]
struct KernelSigaction {
    handler: usize,
    flags: u64,
    restorer: usize,
    mask: u64,
}

impl QuietChild {
    fn begin() -> QuietChild {
        let all: u64 = !0;
        let mut old: u64 = 0;
        // SAFETY: both sets are valid 8-byte kernel sigsets; blocking signals has
        // no other effect (the kernel leaves SIGKILL and SIGSTOP alone).
        unsafe {
            crate::platform::sys::sys_call!(
                libc::SYS_rt_sigprocmask,
                libc::SIG_BLOCK,
                &all as *const u64,
                &mut old as *mut u64,
                SIGSET_BYTES,
            );
        }
        QuietChild {
            old,
            pending_before: pending(),
        }
    }

    /// Has a signal arrived that the program would act on once it unblocks it?
    /// Signals the program itself blocked count too: bash blocks `SIGINT` and
    /// `SIGTERM` around `fork`, whose hook may compile, and acts on them right
    /// after.
    fn signal_for_program(&self) -> bool {
        let mut waiting = pending() & !self.pending_before & !CHLD_BIT;
        while waiting != 0 {
            let sig = waiting.trailing_zeros() as c_int + 1;
            waiting &= waiting - 1;
            if acts_on(sig) {
                return true;
            }
        }
        false
    }

    fn end(self) {
        // Takes off a pending SIGCHLD, if any, without waiting.
        sleep_until_child(0);
        if self.pending_before & CHLD_BIT != 0 || another_child_to_report() {
            // SAFETY: signals ourselves; it stays pending until the mask is
            // restored below, and is then delivered as the program expects.
            unsafe {
                let pid = crate::platform::sys::sys_call!(libc::SYS_getpid);
                crate::platform::sys::sys_call!(libc::SYS_kill, pid, libc::SIGCHLD);
            }
        }
        // SAFETY: restores the mask saved by `begin`, a valid kernel sigset.
        unsafe {
            crate::platform::sys::sys_call!(
                libc::SYS_rt_sigprocmask,
                libc::SIG_SETMASK,
                &self.old as *const u64,
                core::ptr::null_mut::<u64>(),
                SIGSET_BYTES,
            );
        }
    }
}

/// The signals pending for this thread or process.
fn pending() -> u64 {
    let mut set: u64 = 0;
    // SAFETY: `set` is a valid 8-byte kernel sigset out-pointer.
    unsafe {
        crate::platform::sys::sys_call!(libc::SYS_rt_sigpending, &mut set as *mut u64, SIGSET_BYTES)
    };
    set
}

/// Would the program act on `sig`: a handler, or a default action that ends it?
fn acts_on(sig: c_int) -> bool {
    let mut act = KernelSigaction {
        handler: 0,
        flags: 0,
        restorer: 0,
        mask: 0,
    };
    // SAFETY: a query only (no new action); `act` is a valid out-pointer of the
    // kernel's layout and size.
    let r = unsafe {
        crate::platform::sys::sys_call!(
            libc::SYS_rt_sigaction,
            sig,
            core::ptr::null::<KernelSigaction>(),
            &mut act as *mut KernelSigaction,
            SIGSET_BYTES,
        )
    };
    if r != 0 || act.handler == libc::SIG_IGN {
        return false;
    }
    act.handler != libc::SIG_DFL || bit(sig) & DEFAULT_QUIET == 0
}

/// Has a child of this process (other than envwrap, already collected) exited,
/// stopped or continued without being waited for? Asked without collecting it.
fn another_child_to_report() -> bool {
    // SAFETY: `siginfo_t` is plain data; all-zero is valid (and `si_pid` 0 means
    // "none" for WNOHANG).
    let mut info: libc::siginfo_t = unsafe { core::mem::zeroed() };
    // SAFETY: `info` is a valid out-pointer; WNOWAIT leaves the child waitable.
    let r = unsafe {
        crate::platform::sys::sys_call!(
            libc::SYS_waitid,
            libc::P_ALL,
            0 as c_int,
            &mut info as *mut libc::siginfo_t,
            libc::WEXITED | libc::WSTOPPED | libc::WCONTINUED | libc::WNOHANG | libc::WNOWAIT,
            core::ptr::null_mut::<libc::rusage>(),
        )
    };
    // SAFETY: filled by the kernel for a child state change (zero otherwise).
    r == 0 && unsafe { info.si_pid() } != 0
}
