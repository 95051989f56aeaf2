//! Before a multiplexer client's command reaches its server: have envwrap clean
//! the server's environments (docs/adr/0014-tmux-servers.md).
//!
//! A tmux server, or a GNU screen session, gives each pane or window it starts,
//! and each process it runs for a command, its own environment, not the
//! client's. A server started without envshim by a shell that held credentials
//! gives them to every one, however well the client itself is policed. So, in a
//! multiplexer's client ([`envpolicy_core::mux`]: its row says how the client's
//! argv reads) whose command may start a process in its server, and whose
//! server exists, the constructor runs
//!
//! ```text
//! envwrap mux-env --fix --skip-policed --quiet --mux NAME --server SERVER
//!     --program OWN_EXE [--policy FILE] [--warn-server-environ]
//! ```
//!
//! and waits for it before `main`. SERVER is a socket's path or a session's
//! name (empty: every session of the user). envwrap leaves a governed server
//! alone (one whose own libenvshim.so enforces this very policy, and so
//! filters every exec it makes: `envpolicy_core::mux::governed`, the one
//! rule), and removes from any other (one under no shim, under a shim in audit
//! mode, or on another policy) what the policy would not pass to a pane,
//! saying what it removed. The policy is passed as `--policy` for that. A client that starts the server itself has nothing to check: the
//! server is forked from the client, whose own environment is policed.
//!
//! Nothing here is written per multiplexer: each one's row in
//! [`envpolicy_core::mux::MULTIPLEXERS`] is all the shim reads.
//!
//! tmux's `pipe-pane` is the exception: its command gets the server's own
//! process environment, which no client can change. For a client that may run
//! it, envwrap warns when that environment holds what the policy removes.
//!
//! What cannot be done is said once, naming the server, never a value: no
//! envwrap, or one that did not answer within [`CHECK_LIMIT_MS`]. Under the
//! fail-closed floor nothing runs: the process has already been told that its
//! policy could not be used.

use core::ffi::{c_char, c_int};
use core::mem::MaybeUninit;

use envpolicy_core::mux::{Multiplexer, Server};

use crate::platform::fs::{PathBuf, PathSpace, PATH_MAX};
use crate::platform::sys;
use crate::state::helper::{self, Waited};

/// How long the client waits for the check: envwrap gives each client it runs
/// 5 seconds, and runs a few.
const CHECK_LIMIT_MS: i64 = 20_000;
/// Arguments read from the client's argv; a longer argv counts as reaching its
/// server (its global options, which name the server, come first).
const MAX_ARGS: usize = 128;
/// The most [`Multiplexer::helper_vars`] passed on to the check.
const MAX_HELPER_VARS: usize = 4;

/// Called by the constructor with the multiplexer the process is a client of
/// (by `argv[0]`, [`envpolicy_core::mux::by_program`]) and the process's argv.
///
/// # Safety
/// `argv` must be the process's argument vector (`argc` NUL-terminated strings).
#[inline(never)]
pub unsafe fn at_load(mux: &'static Multiplexer, argc: c_int, argv: *const *const c_char) {
    if argv.is_null() {
        return;
    }
    let mut args: [&[u8]; MAX_ARGS] = [&[]; MAX_ARGS];
    // SAFETY: the caller's contract, passed on.
    let n_args = unsafe { read_args(argc, argv, &mut args) };
    let read = args.get(..n_args.min(MAX_ARGS)).unwrap_or(&[]);
    let request = mux.read(read, env);
    if n_args <= MAX_ARGS && !request.reaches_server {
        return;
    }
    let mut server_space = [0u8; PATH_MAX + 1];
    let Some(server_c) = server_c(request.server, &mut server_space) else {
        return;
    };
    let server_process_env = n_args > MAX_ARGS || request.server_process_env;
    crate::state::policy::with_active(|active| {
        let Some(active) = active.filter(|a| !a.is_floor()) else {
            return;
        };
        run_check(mux, server_c, active.source, server_process_env);
    });
}

/// Up to [`MAX_ARGS`] of the process's arguments, as byte strings; how many
/// there are in all.
///
/// # Safety
/// As `at_load`.
unsafe fn read_args(
    argc: c_int,
    argv: *const *const c_char,
    args: &mut [&[u8]; MAX_ARGS],
) -> usize {
    let n_args = usize::try_from(argc).unwrap_or(0);
    for (i, slot) in args.iter_mut().enumerate().take(n_args) {
        // SAFETY: `i < argc`, so `argv[i]` is one of the process's arguments.
        let a = unsafe { *argv.add(i) };
        if a.is_null() {
            break;
        }
        // SAFETY: a NUL-terminated argument, alive for the process's life.
        *slot = unsafe { sys::cstr_bytes(a) };
    }
    n_args
}

/// A variable of the process's environment, before `main`.
fn env(name: &[u8]) -> Option<&'static [u8]> {
    // SAFETY: `environ` is a NULL-terminated array of NUL-terminated strings,
    // not changed before `main`.
    let v = unsafe { sys::env_get(sys::environ_ptr(), name) }?;
    // SAFETY: a NUL-terminated value, alive while the constructor runs.
    Some(unsafe { sys::cstr_bytes(v) })
}

/// The server as the check names it, NUL-terminated, in `out`: a socket's path
/// for this user, or a session's name (empty: every session). `None` when there
/// is nothing to check (no socket: no server yet, or none this client can
/// reach) or it does not fit.
fn server_c<'o>(server: Server<'_>, out: &'o mut [u8]) -> Option<&'o [u8]> {
    let len = match server {
        Server::Socket(socket) => socket.write_path(crate::platform::fs::getuid(), out)?.len(),
        Server::Session(name) => {
            let name = name.unwrap_or(b"");
            out.get_mut(..name.len())?.copy_from_slice(name);
            name.len()
        }
    };
    *out.get_mut(len)? = 0;
    let server_c = out.get(..=len)?;
    if matches!(server, Server::Socket(_)) && crate::platform::fs::stat_c(server_c).is_err() {
        return None;
    }
    Some(server_c)
}

/// Run the check and wait for it; say so when it could not run or ended early.
/// `server_process_env`: the client may run a command that gets the server's
/// own process environment: envwrap warns when that holds what the policy
/// removes.
fn run_check(mux: &Multiplexer, server_c: &[u8], source: &[u8], server_process_env: bool) {
    let mut envwrap_space: PathSpace = [MaybeUninit::uninit(); PATH_MAX + 1];
    let Some(envwrap) = helper::envwrap_path(&mut envwrap_space) else {
        return warn(mux, server_c, b"envwrap was not found");
    };
    let envwrap = envwrap.c_path();
    let mut exe_space = [0u8; PATH_MAX + 1];
    // The client envwrap runs to talk to the server: of the server's own version.
    let Some(exe) = sys::own_exe(&mut exe_space) else {
        return warn(mux, server_c, b"its own executable could not be read");
    };
    let mut policy_space: PathSpace = [MaybeUninit::uninit(); PATH_MAX + 1];
    let mut policy = PathBuf::new(&mut policy_space);
    let source = source.strip_suffix(b"\0").unwrap_or(source);
    policy.push(source);
    let policy_c = if source == b"<built-in>" {
        None
    } else {
        policy.into_c_bytes()
    };
    let fixed: [*const c_char; 12] = [
        c"envwrap".as_ptr(),
        c"mux-env".as_ptr(),
        c"--fix".as_ptr(),
        c"--skip-policed".as_ptr(),
        c"--quiet".as_ptr(),
        c"--mux".as_ptr(),
        mux.c_name.as_ptr(),
        c"--server".as_ptr(),
        server_c.as_ptr().cast(),
        c"--program".as_ptr(),
        exe.as_ptr().cast(),
        core::ptr::null(),
    ];
    let mut argv: [*const c_char; 16] = [core::ptr::null(); 16];
    for (slot, p) in argv.iter_mut().zip(fixed) {
        *slot = p;
    }
    let mut n = fixed.len() - 1;
    let policy_args = policy_c.map(|p| [c"--policy".as_ptr(), p.as_ptr().cast()]);
    let warn_args = server_process_env.then_some([c"--warn-server-environ".as_ptr()]);
    for s in policy_args
        .iter()
        .flatten()
        .chain(warn_args.iter().flatten())
    {
        if let Some(slot) = argv.get_mut(n) {
            *slot = *s;
            n += 1;
        }
    }
    let argv = argv.get(..=n).unwrap_or(&argv);
    // Nothing of the client's environment (envwrap reads the server's), but that
    // its lines are the shim's (wrapper/src/mux/mod.rs, `SHIM_CHECK`), and what
    // the multiplexer's row says the helper needs to find the same server.
    let mut envp: [*const c_char; MAX_HELPER_VARS + 2] = [core::ptr::null(); MAX_HELPER_VARS + 2];
    let passed = mux.helper_vars.iter().filter_map(|name| entry(name));
    let entries = core::iter::once(envpolicy_core::shared::TMUX_CHECK_ENTRY.as_ptr()).chain(passed);
    for (slot, e) in envp.iter_mut().take(MAX_HELPER_VARS + 1).zip(entries) {
        *slot = e;
    }
    match helper::run(envwrap, argv, &envp, CHECK_LIMIT_MS) {
        Ok(Waited::Exited(0) | Waited::Uncollected | Waited::Interrupted) => {}
        // `--quiet` exits 0 whatever it found: anything else is a check that did
        // not happen (an envwrap too old for this shim, a policy it refused).
        Ok(Waited::Exited(_)) => warn(mux, server_c, b"envwrap failed"),
        Ok(Waited::TimedOut) => warn(mux, server_c, b"envwrap did not finish within 20 seconds"),
        Err(_) => warn(mux, server_c, b"envwrap could not be started"),
    }
}

/// The process's `NAME=...` entry, when it has one.
fn entry(name: &[u8]) -> Option<*const c_char> {
    // SAFETY: `environ` is a NULL-terminated array of NUL-terminated strings,
    // not changed before `main`.
    let value = unsafe { sys::env_get(sys::environ_ptr(), name) }?;
    // SAFETY: `env_get` returns the value of an entry `NAME=VALUE`, so the
    // entry starts `name.len() + 1` bytes before it, in the same string.
    Some(unsafe { value.sub(name.len() + 1) })
}

/// One line on stderr: the server was not checked, and why. Names the server
/// (a socket's path or a session's name, as `shown` allows), never a value.
fn warn(mux: &Multiplexer, server_c: &[u8], why: &[u8]) {
    let name = server_c.strip_suffix(b"\0").unwrap_or(server_c);
    crate::state::message::Msg::<1024>::new()
        .push(b"envshim: the ")
        .push(mux.name.as_bytes())
        .push(b" ")
        .push(mux.server.as_bytes())
        .push(b" ")
        .push_word(if name.is_empty() {
            b"(every session)"
        } else {
            name
        })
        .push(b" was not checked (")
        .push(why)
        .push(b"): ")
        .push(mux.windows.as_bytes())
        .push(b" it starts may hold what the policy removes; see envwrap mux-env --help")
        .write_stderr();
}
