//! A tmux server's command line: blank what its first client was told to do.
//!
//! tmux forks its server from the client that starts it, without exec, so the
//! kernel shows that client's whole argv as the server's `/proc/PID/cmdline`,
//! to every user, for the server's life: every command the client was given,
//! with any pair or value in it that the pair reading
//! ([`envpolicy_core::pairs`]) did not find (a name tmux unescapes, a hook, a
//! key binding, `send-keys` text). The server never reads that memory: the
//! client sends its command over the socket. So in the fork children of a tmux
//! client, the shim overwrites the bytes of every argument after tmux's own
//! options with NULs; the server's command line shows `tmux -L NAME` and
//! nothing of the commands.
//!
//! The constructor notes where those bytes are ([`at_load`]); the fork hook's
//! child blanks them ([`in_fork_child`]): a few stores, no lock, no
//! allocation, as a fork child may do. A child that execs loses the blanked
//! copy anyway. The client's own command line is left as it is: it still has
//! to send its command, and an attached client keeps it while attached (see
//! docs/shim.md).

use core::ffi::{c_char, c_int};
use core::sync::atomic::{AtomicUsize, Ordering};

use envpolicy_core::mux::{CommandsStart, Multiplexer};

use crate::platform::sys;

/// The bytes to blank in a fork child, `[FROM, TO)`: the arguments after tmux's
/// options, up to the last one's NUL (kept). Both 0 outside a tmux client. On
/// the constructor's page (see [`crate::hooks::init`]): every fork child reads them, and a
/// page its parent never touched is a page fault at every command.
#[link_section = ".data.envshim_ctor"]
static FROM: AtomicUsize = AtomicUsize::new(0);
#[link_section = ".data.envshim_ctor"]
static TO: AtomicUsize = AtomicUsize::new(0);

/// The options read to find the command; a client with more blanks nothing.
const MAX_OPTIONS: usize = 32;

/// Called by the constructor with the multiplexer the process is a client of
/// and the process's argv: for one whose row says where a client's commands
/// start (tmux's), note them.
///
/// # Safety
/// `argv` must be the process's argument vector (`argc` NUL-terminated strings),
/// as the loader passes it before `main`.
pub unsafe fn at_load(mux: &Multiplexer, argc: c_int, argv: *const *const c_char) {
    let Some(commands_start) = mux.commands_start else {
        return;
    };
    if argv.is_null() {
        return;
    }
    // SAFETY: the caller's contract, passed on.
    unsafe { note_commands(commands_start, argc, argv) }
}

/// [`at_load`] for a client whose commands start where `commands_start` says.
///
/// # Safety
/// As `at_load`.
#[inline(never)]
unsafe fn note_commands(commands_start: CommandsStart, argc: c_int, argv: *const *const c_char) {
    let n_args = usize::try_from(argc).unwrap_or(0);
    // SAFETY: `i < argc`: one of the process's NUL-terminated arguments.
    let arg = |i: usize| unsafe { sys::cstr_bytes(*argv.add(i)) };
    let mut options: [&[u8]; MAX_OPTIONS] = [&[]; MAX_OPTIONS];
    let read = n_args.min(MAX_OPTIONS);
    for (i, slot) in options.iter_mut().enumerate().take(read) {
        *slot = arg(i);
    }
    let start = commands_start(options.get(..read).unwrap_or(&[]));
    if start >= read || start >= n_args {
        return;
    }
    // The kernel lays the arguments out one after another; blank only that.
    let first = arg(start);
    let mut end = first.as_ptr() as usize;
    for i in start..n_args {
        let a = arg(i);
        if a.as_ptr() as usize != end {
            return;
        }
        end += a.len() + 1;
    }
    FROM.store(first.as_ptr() as usize, Ordering::Relaxed);
    TO.store(end - 1, Ordering::Relaxed);
}

/// In a fork child of a tmux client: blank the command's arguments (see the
/// module docs). Nothing in any other process.
pub fn in_fork_child() {
    let (from, to) = (FROM.load(Ordering::Relaxed), TO.load(Ordering::Relaxed));
    if from == 0 || to <= from {
        return;
    }
    // SAFETY: `[from, to)` lies in this process's argument strings (noted by
    // `note_commands` from the kernel's layout, which nothing moves), writable
    // stack memory of the process; a fork child writes its own copy.
    unsafe { core::ptr::write_bytes(from as *mut u8, 0, to - from) };
}
