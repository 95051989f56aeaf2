//! The `exec*` hooks: `execve`, `execv`, `execvp`, `execvpe`, `fexecve`, `execveat`,
//! and the internal entry points `envshim_execve`, `envshim_execv`, `envshim_execvp`
//! that the variadic `execl`, `execle`, `execlp` (csrc/execl.c) call directly.
//!
//! Each hook applies the policy once ([`with_policy`]) and then calls the real `execve`
//! (or `fexecve`, `execveat`). `execvp`/`execvpe` re-implement glibc's `PATH` search
//! ([`search_exec`]) so that the policy runs once, before the search, and the real
//! `execve` runs once per candidate, with glibc's exact error semantics.
//!
//! This module is also where the rule that governs the whole exec path is enforced;
//! it is explained once, above [`with_policy`].

use core::ffi::{c_char, c_int};

use crate::filter::{self, Inline, Mark, Prepared, Scratch, Site};
use crate::platform::real;
use crate::platform::sys::{self, errno, set_errno};
use envpolicy_core::search;

// We have now reached a special place in the life of a process. The code from here
// to the real `execve` can run in states where almost nothing in libc may be used:
//
//   * After `fork()` in a multithreaded program. Only the forking thread exists in the
//     child, but the child's memory is a snapshot of the parent's, taken while other
//     threads may have held locks. Consider:
//
//         1. Thread A of process 1 takes the malloc arena lock.
//         2. Thread B of process 1 forks, creating process 2 with only thread C.
//         3. Thread C calls execvp(); a hook that calls malloc() waits for the lock.
//         4. The lock is the snapshot of A's, and A does not exist in process 2:
//            thread C waits forever.
//
//     glibc's atfork handlers make malloc itself survive this, but not every lock in
//     the process: the loader lock (dlsym, dladdr), stdio locks, the locale lock,
//     `setenv`'s lock, any Mutex of the host program or of a Rust `std`.
//
//   * In a `vfork()` child, or a `clone(CLONE_VM|CLONE_VFORK)` child (CPython's
//     `_posixsubprocess` does exactly this). The child runs on its parent's memory,
//     its parent's thread-local storage, sometimes its parent's stack. Whatever the
//     child writes, the parent sees; whatever it maps, the parent keeps; a lock it
//     takes and does not release (because `execve` succeeded) stays taken in the
//     parent.
//
//   * In a signal handler: `execve` is async-signal-safe and programs do call it there.
//
// So everything below `with_policy`, the policy included, obeys one rule: **no
// allocation, no lock, no formatting, no dlsym**. Concretely:
//
//   * No `malloc` is possible by construction: the crate is `#![no_std]` without
//     `alloc`. Filtered arrays are built in a `Scratch` on the caller's stack; larger
//     ones in a per-thread reusable `mmap` region designed for `vfork` (see
//     `scratch.rs`). When that fails, the exec is refused with E2BIG: never truncated.
//   * No lock: no `Mutex`, no stdio (`FILE*`), no `getenv`/`setenv` (we read the
//     `environ` array directly, as glibc's own `getenv` does), no `dlsym`/`dladdr`
//     (real functions and sticky strings are resolved in the constructor; the only
//     on-demand dlsym happens before our constructor ran, see `real.rs`).
//   * No `core::fmt` (it can panic and drags in a large machine): messages are byte
//     slices concatenated in a stack buffer and sent with one `write(2)` (`sys::Msg`).
//   * No panicking path: no indexing that can fail, no `unwrap`. A panic would abort
//     the host program.
//   * `errno` is preserved: after the real function fails, nothing we do (unmapping,
//     writing a message) may change the errno the caller sees.
//
// `system`, `popen` and `pclose` are not on this path in that sense: POSIX does not
// allow them in a fork child of a multithreaded program or in a signal handler, and
// they inherently allocate (`fdopen`, `posix_spawn_file_actions_*`). They still only
// reach the policy through `with_policy`, which obeys the rule.

/// Applies the policy to one exec and runs `run` with the arrays it chose.
///
/// Returns `Ok(run's result)`, or `Err(errno)` when the policy refused (the message has
/// been written). `errno` as left by `run` survives the cleanup of the scratch space.
/// An exec the filter routes through envwrap (a program that gets a secret, in a
/// `vfork` child: [`Prepared::Route`]) runs envwrap with the real `execve`
/// instead of `run`.
///
/// # Safety
/// Same contract as [`filter::prepare`]; `run` receives either the caller's arrays or
/// arrays that live until `run` returns.
#[inline(always)]
pub(crate) unsafe fn with_policy<F>(
    program: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    run: F,
) -> Result<c_int, c_int>
where
    F: FnOnce(*const *const c_char, *const *const c_char) -> c_int,
{
    // SAFETY: the same contract.
    unsafe { with_policy_marked(program, argv, envp, |a, e, _| run(a, e)) }
}

/// [`with_policy`] for a hook that makes the exec itself (`execve`, the
/// `execvp` search): `run` also gets the supervisor's mark (`Mark`).
///
/// # Safety
/// As [`with_policy`].
#[inline(always)]
pub(crate) unsafe fn with_policy_marked<F>(
    program: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    run: F,
) -> Result<c_int, c_int>
where
    F: FnOnce(*const *const c_char, *const *const c_char, Mark) -> c_int,
{
    // SAFETY: the same contract; a routed exec is an `execve` of envwrap's path
    // with the arrays the filter built for it.
    unsafe {
        with_policy_at(
            program,
            argv,
            envp,
            Site::Exec,
            |routed, a, e, m| match routed {
                Some(envwrap) => call_execve(envwrap, a, e),
                None => run(a, e, m),
            },
        )
    }
}

/// [`with_policy`] for a hook whose decision runs in the parent of the child
/// (`posix_spawn`, `system`, `popen`): `run` gets the path to start, the
/// program's or, for a program that gets a secret, envwrap's, which reads it
/// in the child's own process (`filter::deliver`).
///
/// # Safety
/// As [`with_policy`].
#[inline(always)]
pub(crate) unsafe fn with_policy_spawned<F>(
    program: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    run: F,
) -> Result<c_int, c_int>
where
    F: FnOnce(*const c_char, *const *const c_char, *const *const c_char) -> c_int,
{
    // SAFETY: the same contract.
    unsafe {
        with_policy_at(program, argv, envp, Site::Parent, |routed, a, e, _| {
            run(routed.unwrap_or(program), a, e)
        })
    }
}

/// The body of every `with_policy`: `run` gets envwrap's path when the exec is
/// routed through it, the arrays, and the supervisor's mark.
///
/// # Safety
/// As [`with_policy`].
#[inline(always)]
unsafe fn with_policy_at<F>(
    program: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    site: Site,
    run: F,
) -> Result<c_int, c_int>
where
    F: FnOnce(Option<*const c_char>, *const *const c_char, *const *const c_char, Mark) -> c_int,
{
    let inline = Inline::uninit();
    let mut scratch = Scratch::new(&inline);
    let saved = errno();
    // SAFETY: caller's contract is `prepare`'s.
    let prepared = unsafe { filter::prepare(program, argv, envp, site, &mut scratch) };
    let r = match prepared {
        Prepared::Pass { mark } => {
            set_errno(saved);
            Ok(run(None, argv, envp, mark))
        }
        Prepared::Use { argv, envp, mark } => {
            set_errno(saved);
            Ok(run(None, argv, envp, mark))
        }
        Prepared::Route { path, argv, envp } => {
            set_errno(saved);
            Ok(run(Some(path), argv, envp, Mark(0)))
        }
        Prepared::Refuse { errno } => Err(errno),
    };
    // Dropping `scratch` may unmap a region, and wipes what held a secret's
    // value (the exec failed); `Scratch::drop` preserves errno.
    drop(scratch);
    r
}

/// Turns a `with_policy` result into the exec convention (-1 and errno on refusal).
#[inline]
fn exec_ret(r: Result<c_int, c_int>) -> c_int {
    match r {
        Ok(v) => v,
        Err(e) => {
            set_errno(e);
            -1
        }
    }
}

/// The exec the policy decided, as the kernel should see it: under a
/// supervisor, a marked `execveat` that its filter lets through unjudged (the
/// decision here was the judgement); otherwise the real `execve`.
///
/// Only an absolute path is marked: the kernel ignores the directory fd then,
/// so the mark can change nothing about which file runs. A relative path takes
/// the notified path, as every exec that is not the shim's does.
///
/// # Safety
/// Arguments as for `execve(2)`.
#[inline]
pub(crate) unsafe fn call_execve_marked(
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    mark: Mark,
) -> c_int {
    // SAFETY: a non-NULL path is NUL-terminated (execve's contract), so its
    // first byte is readable.
    if mark.0 != 0 && !path.is_null() && unsafe { *path } == b'/' as c_char {
        // SAFETY: execveat(2) with an absolute path, the caller's arrays and no
        // flags; the mark travels in the directory fd's register, which the
        // kernel reads as an int and then ignores for an absolute path.
        let r = unsafe {
            crate::platform::sys::sys_call!(libc::SYS_execveat, mark.0, path, argv, envp, 0)
                as c_int
        };
        return r;
    }
    // SAFETY: the caller's arguments.
    unsafe { call_execve(path, argv, envp) }
}

/// The real `execve`, or ENOSYS if libc has none.
///
/// # Safety
/// Arguments as for `execve(2)`.
#[inline]
pub(crate) unsafe fn call_execve(
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    match real::execve() {
        // SAFETY: libc's execve with the caller's arguments.
        Some(f) => unsafe { f(path, argv, envp) },
        None => {
            set_errno(libc::ENOSYS);
            -1
        }
    }
}

/// `execve(2)` with the policy applied.
///
/// # Safety
/// As for `execve(2)`.
#[no_mangle]
pub unsafe extern "C" fn execve(
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    // SAFETY: same contract.
    unsafe { envshim_execve(path, argv, envp) }
}

/// Internal entry point of `execve` (called by `execle` in csrc/execl.c).
///
/// # Safety
/// As for `execve(2)`.
#[no_mangle]
pub unsafe extern "C" fn envshim_execve(
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    // SAFETY: the caller passes execve's arguments, which is prepare's contract.
    exec_ret(unsafe {
        with_policy_marked(path, argv, envp, |a, e, m| {
            call_execve_marked(path, a, e, m)
        })
    })
}

/// `execv(3)`: `execve` with the calling process's `environ`.
///
/// # Safety
/// As for `execv(3)`.
#[no_mangle]
pub unsafe extern "C" fn execv(path: *const c_char, argv: *const *const c_char) -> c_int {
    // SAFETY: same contract.
    unsafe { envshim_execv(path, argv) }
}

/// Internal entry point of `execv` (called by `execl`).
///
/// # Safety
/// As for `execv(3)`.
#[no_mangle]
pub unsafe extern "C" fn envshim_execv(path: *const c_char, argv: *const *const c_char) -> c_int {
    // SAFETY: `environ` is a valid envp.
    unsafe { envshim_execve(path, argv, sys::environ_ptr()) }
}

/// `execvp(3)`: `execvpe` with the calling process's `environ`.
///
/// # Safety
/// As for `execvp(3)`.
#[no_mangle]
pub unsafe extern "C" fn execvp(file: *const c_char, argv: *const *const c_char) -> c_int {
    // SAFETY: same contract.
    unsafe { envshim_execvp(file, argv) }
}

/// Internal entry point of `execvp` (called by `execlp`).
///
/// # Safety
/// As for `execvp(3)`.
#[no_mangle]
pub unsafe extern "C" fn envshim_execvp(file: *const c_char, argv: *const *const c_char) -> c_int {
    // SAFETY: `environ` is a valid envp.
    unsafe { execvpe_impl(file, argv, sys::environ_ptr()) }
}

/// `execvpe(3)`: the policy once, then glibc's PATH search over the real `execve`.
///
/// # Safety
/// As for `execvpe(3)`.
#[no_mangle]
pub unsafe extern "C" fn execvpe(
    file: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    // SAFETY: same contract.
    unsafe { execvpe_impl(file, argv, envp) }
}

/// Shared body of `execvp` and `execvpe` (a private function, so `execvp` never calls
/// whatever `execvpe` the global scope would bind first).
///
/// # Safety
/// As for `execvpe(3)`.
unsafe fn execvpe_impl(
    file: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    // SAFETY: `file` is NULL or NUL-terminated (execvpe's contract).
    if unsafe { crate::filter::deliver::bare_name_under_secrets(file) } {
        // SAFETY: execvpe's arguments.
        return unsafe { search_deciding_each(file, argv, envp) };
    }
    // SAFETY: execvpe's arguments satisfy prepare's contract; search_exec's too.
    exec_ret(unsafe {
        with_policy_marked(file, argv, envp, |a, e, m| search_exec(file, a, e, true, m))
    })
}

/// The `execvp` search under a policy with secrets: each candidate is decided
/// as the `execve` of its path, as glibc's own `execvp` would call `execve`
/// for it. A secret's program is a path, so a decision on the bare name
/// could never deliver one (`env gh`, `xargs gh`). Out of line: policies
/// without secrets never come here.
///
/// # Safety
/// As for `execvpe(3)`, `file` not NULL.
#[cold]
#[inline(never)]
unsafe fn search_deciding_each(
    file: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    // SAFETY: `file` is NUL-terminated (contract).
    let (name, path) = unsafe { name_and_path(file) };
    let mut buf = [0u8; search::CANDIDATE_BUF];
    let e = search::search(name, path, true, &mut buf, |cand, run| {
        let cand = cand.as_ptr().cast::<c_char>();
        // SAFETY: `cand` is NUL-terminated (`search` builds it so); the arrays
        // are the caller's, as for `execve`.
        let r = unsafe {
            match run {
                search::Run::Direct => with_policy_marked(cand, argv, envp, |a, e, m| {
                    call_execve_marked(cand, a, e, m)
                }),
                search::Run::Script => with_policy_marked(cand, argv, envp, |a, e, _| {
                    script_exec(cand, a, e);
                    -1
                }),
            }
        };
        match r {
            Err(e) => e,
            Ok(_) => errno(),
        }
    });
    set_errno(e);
    -1
}

/// `fexecve(3)`; the policy sees the program as the path the descriptor was
/// opened from (see [`fd_program`]).
///
/// # Safety
/// As for `fexecve(3)`.
#[no_mangle]
pub unsafe extern "C" fn fexecve(
    fd: c_int,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    let mut buf = [0u8; PROGRAM_BUF];
    let name = fd_program(fd, &[], &mut buf);
    let run = |a, e| match real::fexecve() {
        // SAFETY: libc's fexecve with the caller's fd and the chosen arrays.
        Some(f) => unsafe { f(fd, a, e) },
        None => {
            set_errno(libc::ENOSYS);
            -1
        }
    };
    // SAFETY: `name` is NUL-terminated; arrays as given by the caller.
    exec_ret(unsafe { with_policy(name, argv, envp, run) })
}

/// `execveat(2)`; the policy sees `pathname`, made a path from the directory
/// `dirfd` was opened from when it is relative to it, or the path `dirfd` was
/// opened from for an empty pathname (`AT_EMPTY_PATH`); see [`fd_program`].
///
/// # Safety
/// As for `execveat(2)`.
#[no_mangle]
pub unsafe extern "C" fn execveat(
    dirfd: c_int,
    pathname: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    flags: c_int,
) -> c_int {
    let mut buf = [0u8; PROGRAM_BUF];
    let program = if pathname.is_null() {
        pathname
    } else {
        // SAFETY: a non-NULL pathname is NUL-terminated (execveat's contract).
        let name = unsafe { sys::cstr_bytes(pathname) };
        if name.first() == Some(&b'/') || (dirfd == libc::AT_FDCWD && !name.is_empty()) {
            pathname
        } else {
            fd_program(dirfd, name, &mut buf)
        }
    };
    let run = |a: *const *const c_char, e: *const *const c_char| match real::execveat() {
        // SAFETY: libc's execveat with the caller's arguments and the chosen arrays.
        Some(f) => unsafe { f(dirfd, pathname, a, e, flags) },
        // SAFETY: the raw system call takes exactly these arguments (libc < 2.34).
        None => unsafe {
            crate::platform::sys::sys_call!(libc::SYS_execveat, dirfd, pathname, a, e, flags)
                as c_int
        },
    };
    // SAFETY: `program` is NULL or NUL-terminated; arrays as given by the caller.
    exec_ret(unsafe { with_policy(program, argv, envp, run) })
}

/// Room for a program path an fd-based exec resolves, and its NUL.
const PROGRAM_BUF: usize = libc::PATH_MAX as usize + 1;

/// The program an fd-based exec runs, as a path, so that `[program.*]` sections,
/// pair carriers and the program-path judgement apply as they do to `execve`:
/// the path descriptor `fd` was opened from (`/proc/self/fd/N`), joined with
/// `rel` when `rel` is not empty. `"fd N"` when the kernel knows no path for it
/// (a deleted file, a memfd, a path that does not fit).
#[cold]
#[inline(never)]
fn fd_program(fd: c_int, rel: &[u8], buf: &mut [u8; PROGRAM_BUF]) -> *const c_char {
    let mut link = [0u8; 40];
    let mut tmp = [0u8; 24];
    let digits = sys::fmt_i64(fd as i64, &mut tmp);
    for (slot, &b) in link
        .iter_mut()
        .zip(b"/proc/self/fd/".iter().chain(digits.iter()))
    {
        *slot = b;
    }
    // SAFETY: `link` is NUL-terminated ("/proc/self/fd/" and at most 20 digits
    // leave its last bytes zero); `buf` is writable for the length passed.
    let got = unsafe {
        crate::platform::sys::sys_call!(
            libc::SYS_readlinkat,
            libc::AT_FDCWD,
            link.as_ptr(),
            buf.as_mut_ptr(),
            buf.len() - 1,
        )
    };
    let len = usize::try_from(got).unwrap_or(0);
    let target = buf.get(..len).unwrap_or(&[]);
    let usable = target.first() == Some(&b'/') && !target.ends_with(b" (deleted)");
    let joined = len + usize::from(!rel.is_empty()) + rel.len();
    if !usable || joined >= buf.len() {
        return fd_name(fd, buf);
    }
    if !rel.is_empty() {
        if let Some(dst) = buf.get_mut(len..joined) {
            let (slash, rest) = dst.split_at_mut(1);
            slash.copy_from_slice(b"/");
            rest.copy_from_slice(rel);
        }
    }
    if let Some(nul) = buf.get_mut(joined) {
        *nul = 0;
    }
    buf.as_ptr().cast()
}

/// Writes `"fd N\0"` into `buf` and returns it as a C string.
fn fd_name(fd: c_int, buf: &mut [u8]) -> *const c_char {
    let mut tmp = [0u8; 24];
    let digits = sys::fmt_i64(fd as i64, &mut tmp);
    let mut i = 0;
    for &b in b"fd ".iter().chain(digits.iter()) {
        if let Some(s) = buf.get_mut(i) {
            *s = b;
        }
        i += 1;
    }
    // "fd " + at most 11 digits and a sign: always < 31, so the NUL fits.
    if let Some(s) = buf.get_mut(i) {
        *s = 0;
    }
    buf.as_ptr().cast()
}

/// The shell a script runs with (glibc's `maybe_script_execute`).
const SHELL: &[u8] = b"/bin/sh\0";

/// glibc's `__execvpe_common` over the real `execve`, with the arrays the policy
/// already chose: the search is [`envpolicy_core::search`] (its rules, and its unit
/// tests, are there); this runs each candidate, and `/bin/sh` for a script when
/// `exec_script`. `PATH` comes from the *calling process's* environment, not
/// `envp`. Each absolute candidate is run with the supervisor's `mark`
/// (`call_execve_marked`); a script's `/bin/sh` is not, and is judged. Returns
/// -1 with errno set (it returns only on failure).
///
/// # Safety
/// `file` NULL or NUL-terminated; `argv`, `envp` as for `execve`.
pub(crate) unsafe fn search_exec(
    file: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    exec_script: bool,
    mark: Mark,
) -> c_int {
    if file.is_null() {
        // glibc would crash here; the kernel's answer for a bad pointer is EFAULT.
        set_errno(libc::EFAULT);
        return -1;
    }
    // SAFETY: `file` is NUL-terminated (contract).
    let (name, path) = unsafe { name_and_path(file) };
    let mut buf = [0u8; search::CANDIDATE_BUF];
    let e = search::search(name, path, exec_script, &mut buf, |cand, run| {
        let cand = cand.as_ptr().cast::<c_char>();
        match run {
            search::Run::Direct => {
                // SAFETY: `cand` is NUL-terminated (`search` builds it so); the
                // arrays are the caller's, as for `execve`.
                unsafe { call_execve_marked(cand, argv, envp, mark) };
            }
            // SAFETY: as above.
            search::Run::Script => unsafe { script_exec(cand, argv, envp) },
        }
        errno()
    });
    set_errno(e);
    -1
}

/// What an `execvp`-like search reads: the name (at most the search's bound:
/// a longer one is too long for any candidate anyway) and `PATH` from the
/// *calling process's* environment, not `envp`, or glibc's default.
///
/// # Safety
/// `file` is NUL-terminated.
pub(crate) unsafe fn name_and_path<'a>(file: *const c_char) -> (&'a [u8], &'static [u8]) {
    // SAFETY: `file` is NUL-terminated (contract); at most the bound is read.
    let name = unsafe {
        core::slice::from_raw_parts(file.cast::<u8>(), sys::strnlen(file, search::CANDIDATE_BUF))
    };
    // SAFETY: `environ` is the caller's NULL-terminated environment, and a value
    // in it is NUL-terminated (and stays: a program that replaces an entry
    // leaves the old string in place).
    let path = match unsafe { sys::env_get(sys::environ_ptr(), b"PATH") } {
        // SAFETY: as above.
        Some(v) => unsafe { sys::cstr_bytes(v) },
        None => search::DEFAULT_PATH,
    };
    (name, path)
}

/// glibc's `maybe_script_execute`: runs `/bin/sh FILE ARGS...` for a file the kernel
/// could not execute (ENOEXEC). The new argv is `{"/bin/sh", file, argv[1..], NULL}`.
/// Kept out of line so its scratch space is on the stack only when needed.
///
/// # Safety
/// As for `search_exec`.
#[inline(never)]
unsafe fn script_exec(file: *const c_char, argv: *const *const c_char, envp: *const *const c_char) {
    // SAFETY: NULL or NULL-terminated (contract).
    let argc = unsafe { sys::count(argv) };
    if argc >= c_int::MAX as usize - 1 {
        set_errno(libc::E2BIG);
        return;
    }
    let n = if argc > 1 { argc + 2 } else { 3 };
    let inline = Inline::uninit();
    let mut scratch = Scratch::new(&inline);
    let arr = match scratch.reserve(n, 0) {
        Ok(()) => scratch.take_ptrs(n),
        Err(_) => None,
    };
    let Some(arr) = arr else {
        set_errno(libc::E2BIG);
        return;
    };
    let mut it = arr.iter_mut();
    if let Some(s) = it.next() {
        *s = SHELL.as_ptr().cast();
    }
    if let Some(s) = it.next() {
        *s = file;
    }
    for i in 1..argc {
        if let Some(s) = it.next() {
            // SAFETY: 1 <= i < argc, inside argv.
            *s = unsafe { *argv.add(i) };
        }
    }
    // The remaining slot (the terminator) was set to NULL by take_ptrs.
    let new_argv = arr.as_ptr();
    // SAFETY: NUL-terminated shell path, NULL-terminated argv built above.
    unsafe { call_execve(SHELL.as_ptr().cast(), new_argv, envp) };
    // `scratch` drops here, preserving errno.
}
