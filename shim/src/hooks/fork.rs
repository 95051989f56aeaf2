//! `fork(2)`: do in the parent, once, what each child's first exec would otherwise
//! do in every child.
//!
//! A shell or `make` forks a child per command and the child execs. The first exec
//! in a process finishes checking and validates the compiled policy
//! ([`crate::state::policy`]) and, for a policy with env files, reads them
//! ([`crate::state::env_cache`]); in a fork child that work is
//! repeated for every command and dirties pages the child must copy. So the hook
//! does both in the parent before passing the call to the real `fork`: the
//! children inherit a validated policy and fresh env files, and only `stat` them.
//! (The files are looked at here at most once a tenth of a second; a child that
//! finds them changed since reads them itself: see `env_cache::refresh`.)
//!
//! Both steps take no lock and allocate nothing, so this is safe where `fork` is
//! (a signal handler, a multithreaded program); both are skipped when another
//! thread is doing them. `vfork`, `posix_spawn` and `_Fork` are not affected:
//! `vfork` children share the parent's memory anyway, and `posix_spawn` is hooked
//! in the parent. (`pthread_atfork` would do the same job, but registering a
//! handler touches pages of libc that no other part of start-up touches: about
//! 64 KiB more resident memory in every process.)
//!
//! It also maps, once, the page where the children say each withheld credential
//! once between them ([`crate::state::withheld`]).
//!
//! In the child, a tmux client's commands are blanked from its command line
//! ([`crate::mux::server_cmdline`]).

use libc::pid_t;

use crate::platform::sys;

/// `fork(2)`.
///
/// # Safety
/// As for `fork(2)`.
#[no_mangle]
pub unsafe extern "C" fn fork() -> pid_t {
    let saved = sys::errno();
    crate::state::policy::follow_edit_before_fork();
    crate::state::policy::with_active(|active| {
        if let Some(active) = active {
            crate::filter::warn_policy_once(active);
            crate::state::env_cache::refresh(&active.policy);
            if !active.policy.settings().quiet {
                crate::state::withheld::share_before_fork();
            }
        }
    });
    // The managed layer too, so that a shell's children inherit it loaded (and
    // its line said) instead of each looking at it.
    let _ = crate::state::managed::in_force();
    sys::set_errno(saved);
    match crate::platform::real::fork() {
        Some(real) => {
            // SAFETY: libc's own fork, with its own contract, which is ours.
            let pid = unsafe { real() };
            if pid == 0 {
                crate::state::policy::after_fork_in_child();
                crate::state::managed::after_fork_in_child();
                crate::hooks::popen::after_fork_in_child();
                crate::mux::server_cmdline::in_fork_child();
            }
            pid
        }
        None => {
            sys::set_errno(libc::ENOSYS);
            -1
        }
    }
}
