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
    // SAFETY: posix_spawnp's arguments satisfy prepare's contract.
    match unsafe { with_policy_spawned(file, argv, envp, run) } {
        Ok(r) => r,
        Err(e) => e,
    }
}
