//! libc functions that only `system`, `popen`, `pclose`, rare constructor paths and the
//! `fork` hook's clock use,
//! called through the hidden wrappers in `csrc/cold.c` so that they are bound lazily
//! (on first use) instead of at load time in every process. See `csrc/cold.c` for the
//! measurement behind this. Same names and signatures as in libc; not for the exec
//! path (see [`crate::hooks::exec`]).

use core::ffi::{c_char, c_int, c_short};
use libc::{pid_t, posix_spawn_file_actions_t, posix_spawnattr_t, sigset_t, FILE};

extern "C" {
    #[link_name = "envshim_c_abort"]
    pub fn abort() -> !;
    #[link_name = "envshim_c_fcntl_int"]
    pub fn fcntl(fd: c_int, cmd: c_int, arg: c_int) -> c_int;
    #[link_name = "envshim_c_fdopen"]
    pub fn fdopen(fd: c_int, mode: *const c_char) -> *mut FILE;
    #[link_name = "envshim_c_pipe2"]
    pub fn pipe2(fds: *mut c_int, flags: c_int) -> c_int;
    #[link_name = "envshim_c_waitpid"]
    pub fn waitpid(pid: pid_t, status: *mut c_int, options: c_int) -> pid_t;
    #[link_name = "envshim_c_sched_yield"]
    pub fn sched_yield() -> c_int;
    #[link_name = "envshim_c_realpath"]
    pub fn realpath(path: *const c_char, resolved: *mut c_char) -> *mut c_char;
    /// `gettimeofday` in microseconds, or -1 (csrc/cold.c).
    #[link_name = "envshim_c_now_us"]
    pub fn now_us() -> i64;

    #[link_name = "envshim_c_sigaction"]
    pub fn sigaction(sig: c_int, act: *const libc::sigaction, old: *mut libc::sigaction) -> c_int;
    #[link_name = "envshim_c_sigemptyset"]
    pub fn sigemptyset(set: *mut sigset_t) -> c_int;
    #[link_name = "envshim_c_sigaddset"]
    pub fn sigaddset(set: *mut sigset_t, sig: c_int) -> c_int;
    /// The calling thread's signal mask (`pthread_sigmask`'s meaning; see csrc/cold.c).
    #[link_name = "envshim_c_sigprocmask"]
    pub fn sigprocmask(how: c_int, set: *const sigset_t, old: *mut sigset_t) -> c_int;
    #[link_name = "envshim_c_pthread_setcancelstate"]
    pub fn pthread_setcancelstate(state: c_int, old: *mut c_int) -> c_int;

    #[link_name = "envshim_c_posix_spawnattr_init"]
    pub fn posix_spawnattr_init(a: *mut posix_spawnattr_t) -> c_int;
    #[link_name = "envshim_c_posix_spawnattr_destroy"]
    pub fn posix_spawnattr_destroy(a: *mut posix_spawnattr_t) -> c_int;
    #[link_name = "envshim_c_posix_spawnattr_setflags"]
    pub fn posix_spawnattr_setflags(a: *mut posix_spawnattr_t, flags: c_short) -> c_int;
    #[link_name = "envshim_c_posix_spawnattr_setsigdefault"]
    pub fn posix_spawnattr_setsigdefault(a: *mut posix_spawnattr_t, s: *const sigset_t) -> c_int;
    #[link_name = "envshim_c_posix_spawnattr_setsigmask"]
    pub fn posix_spawnattr_setsigmask(a: *mut posix_spawnattr_t, s: *const sigset_t) -> c_int;

    #[link_name = "envshim_c_posix_spawn_file_actions_init"]
    pub fn posix_spawn_file_actions_init(fa: *mut posix_spawn_file_actions_t) -> c_int;
    #[link_name = "envshim_c_posix_spawn_file_actions_destroy"]
    pub fn posix_spawn_file_actions_destroy(fa: *mut posix_spawn_file_actions_t) -> c_int;
    #[link_name = "envshim_c_posix_spawn_file_actions_adddup2"]
    pub fn posix_spawn_file_actions_adddup2(
        fa: *mut posix_spawn_file_actions_t,
        fd: c_int,
        newfd: c_int,
    ) -> c_int;
    #[link_name = "envshim_c_posix_spawn_file_actions_addclose"]
    pub fn posix_spawn_file_actions_addclose(
        fa: *mut posix_spawn_file_actions_t,
        fd: c_int,
    ) -> c_int;
}
