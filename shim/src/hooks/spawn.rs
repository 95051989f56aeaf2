//! The `posix_spawn` and `posix_spawnp` hooks, and glibc 2.39's `pidfd_spawn` and
//! `pidfd_spawnp`, which take the same arguments but write a pidfd where the others
//! write a pid, and which are decided in the same way.
//!
//! All four apply the policy once (through [`crate::hooks::exec::with_policy`], so the exec-path
//! rule holds) and call the real function with the chosen arrays. A refusal is
//! returned as the error number (`posix_spawn` reports errors by return value, not
//! `errno`), and no child is created.
//!
//! `posix_spawnp` hands the name to the real `posix_spawnp` rather than searching PATH
//! here and calling the real `posix_spawn` per candidate. glibc searches PATH *in the
//! child*, after the file actions ran, reading the caller's PATH (the child shares the
//! caller's memory). A search in the parent would start one child per failed
//! candidate and run the file actions once per candidate: an `addopen` with
//! `O_CREAT|O_EXCL` would then fail on the second candidate with EEXIST, an `O_APPEND`
//! open would be repeated, and the caller would receive one spurious SIGCHLD per
//! missed directory. Delegating keeps glibc's semantics exactly (ENOENT/EACCES, no
//! ENOEXEC fallback, the caller's PATH, default "/bin:/usr/bin"), while the policy still
//! runs once, with the name as given. glibc's child calls its internal `__execvpex`,
//! so the real function does not come back into our hooks.
//!
//! The decision runs in the parent, so a program that gets a secret is started
//! as envwrap, which reads it in the child's own process (`filter::deliver`).
//!
//! `pidfd_spawn` and `pidfd_spawnp` are exported whatever the C library: a program
//! linked against an older glibc cannot name them, so on an older one nobody calls
//! them; one that finds them with `dlsym` gets ENOSYS, and no child, as it would
//! from a C library that had them but a kernel without `clone3`. glibc's own
//! `pidfd_spawnp` searches PATH in the child, as `posix_spawnp` does.

use core::ffi::{c_char, c_int};

use crate::hooks::exec::with_policy_spawned;
use crate::platform::real::{self, PosixSpawnFn};

/// `posix_spawn(3)` with the policy applied.
///
/// # Safety
/// As for `posix_spawn(3)`.
#[no_mangle]
pub unsafe extern "C" fn posix_spawn(
    pid: *mut libc::pid_t,
    path: *const c_char,
    file_actions: *const libc::posix_spawn_file_actions_t,
    attrp: *const libc::posix_spawnattr_t,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    // SAFETY: posix_spawn's arguments.
    unsafe {
        spawn_path(
            real::posix_spawn,
            pid,
            path,
            file_actions,
            attrp,
            argv,
            envp,
        )
    }
}

/// `posix_spawnp(3)` with the policy applied (see the module docs for the search).
///
/// # Safety
/// As for `posix_spawnp(3)`.
#[no_mangle]
pub unsafe extern "C" fn posix_spawnp(
    pid: *mut libc::pid_t,
    file: *const c_char,
    file_actions: *const libc::posix_spawn_file_actions_t,
    attrp: *const libc::posix_spawnattr_t,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    // SAFETY: posix_spawnp's arguments.
    unsafe {
        spawn_search(
            real::posix_spawnp,
            posix_spawn,
            pid,
            file,
            file_actions,
            attrp,
            argv,
            envp,
        )
    }
}

/// `pidfd_spawn(3)` (glibc 2.39) with the policy applied, as `posix_spawn`; ENOSYS,
/// and no decision, when the C library has none.
///
/// # Safety
/// As for `pidfd_spawn(3)`.
#[no_mangle]
pub unsafe extern "C" fn pidfd_spawn(
    pidfd: *mut c_int,
    path: *const c_char,
    file_actions: *const libc::posix_spawn_file_actions_t,
    attrp: *const libc::posix_spawnattr_t,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    if real::pidfd_spawn().is_none() {
        return libc::ENOSYS;
    }
    // SAFETY: pidfd_spawn's arguments, which are posix_spawn's with a pidfd for a
    // pid (an `int` both).
    unsafe {
        spawn_path(
            real::pidfd_spawn,
            pidfd,
            path,
            file_actions,
            attrp,
            argv,
            envp,
        )
    }
}

/// `pidfd_spawnp(3)` (glibc 2.39) with the policy applied, as `posix_spawnp`;
/// ENOSYS, and no decision, when the C library has none.
///
/// # Safety
/// As for `pidfd_spawnp(3)`.
#[no_mangle]
pub unsafe extern "C" fn pidfd_spawnp(
    pidfd: *mut c_int,
    file: *const c_char,
    file_actions: *const libc::posix_spawn_file_actions_t,
    attrp: *const libc::posix_spawnattr_t,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    if real::pidfd_spawnp().is_none() {
        return libc::ENOSYS;
    }
    // SAFETY: pidfd_spawnp's arguments (see `pidfd_spawn`).
    unsafe {
        spawn_search(
            real::pidfd_spawnp,
            pidfd_spawn,
            pidfd,
            file,
            file_actions,
            attrp,
            argv,
            envp,
        )
    }
}

/// The body of `posix_spawn` and `pidfd_spawn`: the policy once, then the real
/// function `real` with the chosen path and arrays. A refusal is returned as the
/// error number, and no child is created.
///
/// # Safety
/// As for `posix_spawn(3)`; `out` is where `real` writes the pid or pidfd.
#[inline(always)]
unsafe fn spawn_path(
    real: fn() -> Option<PosixSpawnFn>,
    out: *mut c_int,
    path: *const c_char,
    file_actions: *const libc::posix_spawn_file_actions_t,
    attrp: *const libc::posix_spawnattr_t,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    let run = |p, a, e| match real() {
        // SAFETY: libc's function with the caller's arguments, the chosen
        // path (the caller's, or envwrap's) and arrays.
        Some(f) => unsafe { f(out, p, file_actions, attrp, a, e) },
        None => libc::ENOSYS,
    };
    // SAFETY: posix_spawn's arguments satisfy prepare's contract.
    match unsafe { with_policy_spawned(path, argv, envp, run) } {
        Ok(r) => r,
        Err(e) => e,
    }
}

/// The hook a program found by a search is spawned through: `posix_spawn` or
/// `pidfd_spawn`.
type ByPath = unsafe extern "C" fn(
    *mut c_int,
    *const c_char,
    *const libc::posix_spawn_file_actions_t,
    *const libc::posix_spawnattr_t,
    *const *const c_char,
    *const *const c_char,
) -> c_int;

/// The body of `posix_spawnp` and `pidfd_spawnp`: `real` searches PATH in the
/// child (see the module docs), except for a secret's program, which is
/// spawned by its path through `by_path`.
///
/// # Safety
/// As for `posix_spawnp(3)`; `out` is where `real` writes the pid or pidfd.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn spawn_search(
    real: fn() -> Option<PosixSpawnFn>,
    by_path: ByPath,
    out: *mut c_int,
    file: *const c_char,
    file_actions: *const libc::posix_spawn_file_actions_t,
    attrp: *const libc::posix_spawnattr_t,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    // SAFETY: `file` is NULL or NUL-terminated (posix_spawnp's contract).
    if unsafe { crate::filter::deliver::bare_name_under_secrets(file) } {
        // SAFETY: posix_spawnp's arguments, `file` not NULL (it is a bare name).
        let spawned =
            unsafe { spawn_secret_program(by_path, out, file, file_actions, attrp, argv, envp) };
        if let Some(r) = spawned {
            return r;
        }
    }
    // SAFETY: posix_spawnp's arguments.
    unsafe { spawn_path(real, out, file, file_actions, attrp, argv, envp) }
}

/// Under a policy with secrets, a bare name that the caller's `PATH` resolves
/// to a secret's program (a path: a decision on the name could never deliver
/// it) is spawned by that path, through `by_path`'s policy (`posix_spawn` or
/// `pidfd_spawn`). `None`: the first executable candidate is no secret's
/// program, or there is none, and glibc's own search runs as the module docs
/// say. The search here only looks (`faccessat`), so no child is made per
/// candidate.
///
/// # Safety
/// As for `posix_spawnp(3)`, `file` not NULL.
#[cold]
#[inline(never)]
unsafe fn spawn_secret_program(
    by_path: ByPath,
    out: *mut c_int,
    file: *const c_char,
    file_actions: *const libc::posix_spawn_file_actions_t,
    attrp: *const libc::posix_spawnattr_t,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> Option<c_int> {
    use envpolicy_core::search;
    // SAFETY: `file` is NUL-terminated (contract).
    let (name, path) = unsafe { crate::hooks::exec::name_and_path(file) };
    let mut buf = [0u8; search::CANDIDATE_BUF];
    let mut spawned = None;
    search::search(name, path, false, &mut buf, |cand, _| {
        if !crate::filter::deliver::executable(cand) {
            return libc::ENOENT;
        }
        if crate::filter::deliver::wanted_now(cand.split_last().map_or(&[][..], |(_, p)| p)) != 0 {
            // SAFETY: `cand` is NUL-terminated; the rest are the caller's.
            spawned = Some(unsafe {
                by_path(out, cand.as_ptr().cast(), file_actions, attrp, argv, envp)
            });
        }
        0
    });
    spawned
}
