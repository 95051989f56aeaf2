//! `popen(3)` and `pclose(3)`, rebuilt on the real `posix_spawn` so the child gets the
//! filtered environment (glibc's `popen` calls an internal `__posix_spawn`).
//!
//! `popen(cmd, mode)`: mode is `r` or `w`, optionally with `e` (the parent's end is
//! close-on-exec); anything else is EINVAL. Like glibc 2.36: a `pipe2(O_CLOEXEC)`; the
//! child's end is moved off fd 0/1 first if the pipe landed there; the child gets it
//! as stdin/stdout through a `dup2` file action (which clears close-on-exec on the
//! target only); `/bin/sh -c cmd` runs with the caller's `environ` (filtered); the
//! parent's end is wrapped with `fdopen`. A policy refusal returns NULL with EPERM and
//! creates nothing.
//!
//! POSIX also says a popen child must not keep the parent's ends of earlier popen
//! streams. Those ends are close-on-exec only when opened with `e`, so the child gets
//! an explicit `close` file action for every stream recorded in [`TABLE`] (as glibc
//! does from its own list).
//!
//! The record of our streams is a fixed table of [`POPEN_SLOTS`] atomic slots (no lock,
//! no allocation). 1024 matches the default RLIMIT_NOFILE soft limit, which caps how
//! many popen streams a process can hold open anyway. When every slot is taken, `popen`
//! fails with EMFILE before creating the pipe's child (a stream we could not record
//! could not be `pclose`d correctly, and handing the job to glibc's popen would skip
//! the policy).
//!
//! `pclose(fp)`: if `fp` is one of ours, close it, `waitpid` for the child (retrying
//! on EINTR, with cancellation off) and return its status; otherwise call the real
//! `pclose`. glibc's `fclose` on a popen stream does what `pclose` does, and its
//! `freopen` waits for the child when it closes the stream: so do ours ([`fclose`],
//! [`freopen`]), and a stream closed either way leaves no slot, no zombie and no stale
//! fd number for later popen children to close. Both are a load and a call while no
//! popen stream is open ([`LIVE`]).
//!
//! Threads: as glibc holds its popen lock from reading its list of streams until the
//! new stream is in it, [`SPAWNING`] is held from reading [`TABLE`] for a child's close
//! actions until the new stream is recorded and its fd made inheritable, and while a
//! closing stream leaves the table; so no popen child inherits the parent end of
//! another thread's new stream, and none closes an fd number another thread has just
//! given up and opened again. A `fork` child, where the thread that held it does not
//! exist, starts with it free ([`after_fork_in_child`]).

use core::ffi::{c_char, c_int};
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicUsize, Ordering};

use crate::hooks::exec::with_policy_spawned;
use crate::platform::cold;
use crate::platform::real;
use crate::platform::sys::{self, errno, set_errno};

/// Capacity of the stream table (see the module docs).
pub const POPEN_SLOTS: usize = 1024;

const FREE: u32 = 0;
const BUSY: u32 = 1; // being filled in or being taken by pclose
const ACTIVE: u32 = 2;

struct Slot {
    state: AtomicU32,
    fp: AtomicUsize,
    pid: AtomicI32,
    fd: AtomicI32,
}

impl Slot {
    const fn new() -> Self {
        Slot {
            state: AtomicU32::new(FREE),
            fp: AtomicUsize::new(0),
            pid: AtomicI32::new(0),
            fd: AtomicI32::new(0),
        }
    }
}

/// Our popen streams: (FILE*, child pid, parent-end fd). All-zero, away from the
/// constructor's page, so it costs nothing until a popen touches it;
/// `fd`/`pid`/`fp` are only read in state ACTIVE.
#[link_section = ".data.envshim_zero"]
static TABLE: [Slot; POPEN_SLOTS] = [const { Slot::new() }; POPEN_SLOTS];

/// How many slots are ACTIVE: `fclose` and `freopen` look in the table only when
/// some are.
#[link_section = ".data.envshim_zero"]
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// The popen lock (see the module docs): a spin lock that yields, never held across
/// anything that can block for long but the spawn itself.
#[link_section = ".data.envshim_zero"]
static SPAWNING: AtomicBool = AtomicBool::new(false);

/// Holds [`SPAWNING`] until dropped.
struct Spawning;

impl Spawning {
    fn lock() -> Spawning {
        while SPAWNING
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            // SAFETY: sched_yield has no preconditions.
            unsafe { cold::sched_yield() };
        }
        Spawning
    }
}

impl Drop for Spawning {
    fn drop(&mut self) {
        SPAWNING.store(false, Ordering::Release);
    }
}

/// In a `fork` child: the lock is free (the thread that may have held it is not there).
/// Written only when it is held: a write to the page in every fork child is a
/// copy-on-write fault in every command a shell runs (docs/benchmarks.md).
pub fn after_fork_in_child() {
    if SPAWNING.load(Ordering::Relaxed) {
        SPAWNING.store(false, Ordering::Relaxed);
    }
}

fn reserve_slot() -> Option<&'static Slot> {
    TABLE.iter().find(|s| {
        s.state
            .compare_exchange(FREE, BUSY, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    })
}

/// The child of `fp`, if `fp` is a stream of ours, which leaves the table.
fn take_slot(fp: *mut libc::FILE) -> Option<libc::pid_t> {
    if LIVE.load(Ordering::Acquire) == 0 {
        return None;
    }
    let _lock = Spawning::lock();
    for s in TABLE.iter() {
        if s.state.load(Ordering::Acquire) == ACTIVE
            && s.fp.load(Ordering::Relaxed) == fp as usize
            && s.state
                .compare_exchange(ACTIVE, BUSY, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            if s.fp.load(Ordering::Relaxed) != fp as usize {
                s.state.store(ACTIVE, Ordering::Release);
                continue;
            }
            let pid = s.pid.load(Ordering::Relaxed);
            s.state.store(FREE, Ordering::Release);
            LIVE.fetch_sub(1, Ordering::Release);
            return Some(pid);
        }
    }
    None
}

const SHELL: &[u8] = b"/bin/sh\0";
const SH_ARGV0: &[u8] = b"sh\0";
const SH_C: &[u8] = b"-c\0";

/// `popen(3)` with the policy applied.
///
/// # Safety
/// `command` and `mode` must be NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn popen(command: *const c_char, mode: *const c_char) -> *mut libc::FILE {
    let (mut read, mut write, mut cloexec) = (false, false, false);
    let mut m = mode;
    if m.is_null() {
        set_errno(libc::EINVAL);
        return core::ptr::null_mut();
    }
    loop {
        // SAFETY: `mode` is NUL-terminated; we stop at the NUL.
        let c = unsafe { *m } as u8;
        match c {
            0 => break,
            b'r' => read = true,
            b'w' => write = true,
            b'e' => cloexec = true,
            _ => {
                set_errno(libc::EINVAL);
                return core::ptr::null_mut();
            }
        }
        // SAFETY: `c` was not the NUL, so the next byte is in the string.
        m = unsafe { m.add(1) };
    }
    if read == write {
        set_errno(libc::EINVAL);
        return core::ptr::null_mut();
    }

    let argv: [*const c_char; 4] = [
        SH_ARGV0.as_ptr().cast(),
        SH_C.as_ptr().cast(),
        command,
        core::ptr::null(),
    ];
    let mut out: *mut libc::FILE = core::ptr::null_mut();
    let run = |p: *const c_char, a: *const *const c_char, e: *const *const c_char| -> c_int {
        // SAFETY: the shell's path or envwrap's, and valid arrays for the
        // duration of this call.
        out = unsafe { open_stream(p, a, e, read, cloexec) };
        0
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
        Ok(_) => out,
        Err(e) => {
            set_errno(e);
            core::ptr::null_mut()
        }
    }
}

/// Pipe, stream, slot, spawn. Returns NULL with errno set on failure, leaving nothing
/// behind (no fd, no slot, no child).
///
/// # Safety
/// `path` (the shell's, or envwrap's when the shell gets a secret)
/// NUL-terminated; `argv`, `envp` valid NULL-terminated arrays.
unsafe fn open_stream(
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    read: bool,
    cloexec: bool,
) -> *mut libc::FILE {
    let mut fds = [-1 as c_int; 2];
    // SAFETY: `fds` has room for two descriptors.
    if unsafe { cold::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return core::ptr::null_mut();
    }
    let [rd, wr] = fds;
    let (parent_fd, mut child_fd, child_std) = if read { (rd, wr, 1) } else { (wr, rd, 0) };
    let close = crate::platform::sys::close;

    if child_fd == child_std {
        // The pipe landed on the very fd the child needs (stdin/stdout was closed): move
        // it, or dup2(fd, fd) would keep close-on-exec set and the child would lose it.
        // SAFETY: fcntl on our own descriptor.
        let tmp = unsafe { cold::fcntl(child_fd, libc::F_DUPFD_CLOEXEC, 0) };
        if tmp < 0 {
            let e = errno();
            close(rd);
            close(wr);
            set_errno(e);
            return core::ptr::null_mut();
        }
        close(child_fd);
        child_fd = tmp;
    }

    let fmode: &[u8] = if read { b"r\0" } else { b"w\0" };
    // SAFETY: our descriptor and a NUL-terminated mode.
    let fp = unsafe { cold::fdopen(parent_fd, fmode.as_ptr().cast()) };
    if fp.is_null() {
        let e = errno();
        close(parent_fd);
        close(child_fd);
        set_errno(e);
        return core::ptr::null_mut();
    }
    let fail = |e: c_int| {
        // SAFETY: `fp` owns `parent_fd` and is not used after this.
        unsafe { real_fclose(fp) };
        close(child_fd);
        set_errno(e);
        core::ptr::null_mut()
    };

    let Some(slot) = reserve_slot() else {
        return fail(libc::EMFILE);
    };

    let lock = Spawning::lock();
    let mut fa = MaybeUninit::<libc::posix_spawn_file_actions_t>::uninit();
    // SAFETY: initialising, filling and destroying a local file-actions object; the
    // fds named are ours (child_fd) or recorded parent ends of other popen streams.
    let ret = unsafe {
        cold::posix_spawn_file_actions_init(fa.as_mut_ptr());
        let mut r = cold::posix_spawn_file_actions_adddup2(fa.as_mut_ptr(), child_fd, child_std);
        if r == 0 {
            for s in TABLE.iter() {
                if s.state.load(Ordering::Acquire) == ACTIVE {
                    let fd = s.fd.load(Ordering::Relaxed);
                    if fd >= 0 && fd != child_std {
                        r = cold::posix_spawn_file_actions_addclose(fa.as_mut_ptr(), fd);
                        if r != 0 {
                            break;
                        }
                    }
                }
            }
        }
        let mut pid: libc::pid_t = 0;
        if r == 0 {
            r = match real::posix_spawn() {
                Some(f) => f(&mut pid, path, fa.as_ptr(), core::ptr::null(), argv, envp),
                None => libc::ENOSYS,
            };
        }
        cold::posix_spawn_file_actions_destroy(fa.as_mut_ptr());
        if r == 0 {
            // Record the stream before its fd can become inheritable.
            slot.fp.store(fp as usize, Ordering::Relaxed);
            slot.pid.store(pid, Ordering::Relaxed);
            slot.fd.store(parent_fd, Ordering::Relaxed);
            slot.state.store(ACTIVE, Ordering::Release);
            LIVE.fetch_add(1, Ordering::Release);
        }
        r
    };
    if ret != 0 {
        slot.state.store(FREE, Ordering::Release);
        drop(lock);
        return fail(ret);
    }
    close(child_fd);
    if !cloexec {
        // SAFETY: our descriptor; undoes pipe2's O_CLOEXEC on the parent end.
        unsafe { cold::fcntl(parent_fd, libc::F_SETFD, 0) };
    }
    drop(lock);
    fp
}

/// `pclose(3)`: ours are closed and waited for here; others go to the real `pclose`.
///
/// # Safety
/// `stream` must be a stream returned by `popen` and not yet closed.
#[no_mangle]
pub unsafe extern "C" fn pclose(stream: *mut libc::FILE) -> c_int {
    if let Some(pid) = take_slot(stream) {
        // SAFETY: ours, out of the table: closed exactly once, here.
        return unsafe { close_and_wait(stream, pid) };
    }
    match real::pclose() {
        // SAFETY: not ours: the caller's stream goes to libc unchanged.
        Some(f) => unsafe { f(stream) },
        None => {
            set_errno(libc::ENOSYS);
            -1
        }
    }
}

/// `fclose(3)`: on a stream of ours, what glibc's `fclose` does on a popen stream,
/// which is what `pclose` does; any other stream goes to the real `fclose`.
///
/// # Safety
/// As for `fclose(3)`.
#[no_mangle]
pub unsafe extern "C" fn fclose(stream: *mut libc::FILE) -> c_int {
    match take_slot(stream) {
        // SAFETY: ours, out of the table: closed exactly once, here.
        Some(pid) => unsafe { close_and_wait(stream, pid) },
        // SAFETY: not ours: the caller's stream goes to libc unchanged.
        None => unsafe { real_fclose(stream) },
    }
}

/// `freopen(3)`: the real `freopen`, and then, for a stream of ours, the wait for
/// its child that glibc's makes when it closes a popen stream.
///
/// # Safety
/// As for `freopen(3)`.
#[no_mangle]
pub unsafe extern "C" fn freopen(
    path: *const c_char,
    mode: *const c_char,
    stream: *mut libc::FILE,
) -> *mut libc::FILE {
    let ours = take_slot(stream);
    let reopened = match real::freopen() {
        // SAFETY: the caller's arguments, unchanged.
        Some(f) => unsafe { f(path, mode, stream) },
        None => {
            set_errno(libc::ENOSYS);
            core::ptr::null_mut()
        }
    };
    if let Some(pid) = ours {
        let saved = errno();
        let _ = wait_for(pid);
        set_errno(saved);
    }
    reopened
}

/// The real `fclose`.
///
/// # Safety
/// As for `fclose(3)`.
unsafe fn real_fclose(stream: *mut libc::FILE) -> c_int {
    match real::fclose() {
        // SAFETY: the caller's contract.
        Some(f) => unsafe { f(stream) },
        None => {
            set_errno(libc::ENOSYS);
            -1
        }
    }
}

/// Close a stream of ours and wait for its child: its status, or -1.
///
/// # Safety
/// `stream` is a FILE `open_stream` created, already out of the table, not used
/// after this.
unsafe fn close_and_wait(stream: *mut libc::FILE, pid: libc::pid_t) -> c_int {
    let _nc = sys::NoCancel::new();
    // SAFETY: the caller's contract. Its close also closes our end of the pipe, so
    // the child sees EOF (mode "w") or SIGPIPE/EPIPE (mode "r").
    let closed = unsafe { real_fclose(stream) };
    let status = wait_for(pid);
    // glibc's `fclose` gives the child's status, or the flush's -1 when that is 0.
    if closed != 0 && status == 0 {
        -1
    } else {
        status
    }
}

/// `waitpid` for our child, again on EINTR: its status, or -1.
fn wait_for(pid: libc::pid_t) -> c_int {
    let mut status: c_int = 0;
    loop {
        // SAFETY: waiting for our own child.
        let r = unsafe { cold::waitpid(pid, &mut status, 0) };
        if r == pid {
            return status;
        }
        if r == -1 && errno() == libc::EINTR {
            continue;
        }
        return -1;
    }
}
