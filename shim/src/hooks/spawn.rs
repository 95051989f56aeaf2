//! The `posix_spawn` and `posix_spawnp` hooks.
//!
//! Both apply the policy once (through [`crate::hooks::exec::with_policy`], so the exec-path
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

use core::ffi::{c_char, c_int};

use crate::hooks::exec::with_policy_spawned;
use crate::platform::real;

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
    let run = |p, a, e| match real::posix_spawn() {
        // SAFETY: libc's posix_spawn with the caller's arguments, the chosen
        // path (the caller's, or envwrap's) and arrays.
        Some(f) => unsafe { f(pid, p, file_actions, attrp, a, e) },
        None => libc::ENOSYS,
    };
    // SAFETY: posix_spawn's arguments satisfy prepare's contract.
    match unsafe { with_policy_spawned(path, argv, envp, run) } {
        Ok(r) => r,
        Err(e) => e,
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
    let run = |p, a, e| match real::posix_spawnp() {
        // SAFETY: libc's posix_spawnp with the caller's arguments, the chosen
        // name (the caller's, or envwrap's path, which it runs as a path) and
        // arrays.
        Some(f) => unsafe { f(pid, p, file_actions, attrp, a, e) },
        None => libc::ENOSYS,
    };
    // SAFETY: `file` is NULL or NUL-terminated (posix_spawnp's contract).
    if unsafe { crate::filter::deliver::bare_name_under_secrets(file) } {
        // SAFETY: posix_spawnp's arguments.
        if let Some(r) = unsafe { spawn_secret_program(pid, file, file_actions, attrp, argv, envp) }
        {
            return r;
        }
    }
    // SAFETY: posix_spawnp's arguments satisfy prepare's contract.
    match unsafe { with_policy_spawned(file, argv, envp, run) } {
        Ok(r) => r,
        Err(e) => e,
    }
}

/// Under a policy with secrets, a bare name that the caller's `PATH` resolves
/// to a secret's program (a path: a decision on the name could never deliver
/// it) is spawned by that path, through [`posix_spawn`]'s policy. `None`: the
/// first executable candidate is no secret's program, or there is none, and
/// glibc's own search runs as the module docs say. The search here only looks
/// (`faccessat`), so no child is made per candidate.
///
/// # Safety
/// As for `posix_spawnp(3)`, `file` not NULL.
#[cold]
#[inline(never)]
unsafe fn spawn_secret_program(
    pid: *mut libc::pid_t,
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
                posix_spawn(pid, cand.as_ptr().cast(), file_actions, attrp, argv, envp)
            });
        }
        0
    });
    spawned
}
