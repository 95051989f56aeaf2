//! Before a tmux client's command reaches its server: have envwrap clean the
//! server's environments (docs/adr/0014-tmux-servers.md).
//!
//! A tmux server gives each pane it starts, and each process it runs for a
//! command, its own global environment and the session's, not the client's. A
//! server started without envshim by a shell that held credentials gives them to
//! every pane, however well the client itself is policed. So, in a tmux client
//! whose command may start a process in its server
//! (`envpolicy_core::tmux::reaches_server_environment`) and whose server's socket
//! exists, the constructor runs
//!
//! ```text
//! envwrap tmux-env --fix --skip-policed --quiet -S SOCKET --tmux OWN_EXE [--policy FILE]
//!     [--warn-server-environ]
//! ```
//!
//! and waits for it before `main`. envwrap leaves a server that runs
//! libenvshim.so alone (its own shim filters every exec it makes), and removes
//! from any other what the policy would not pass to a pane, saying what it
//! removed. A client that starts the server itself has nothing to check: the
//! server is forked from the client, whose own environment is policed.
//!
//! `pipe-pane` is the exception tmux makes: its command gets the server's own
//! process environment, which no client can change. For a client that runs it,
//! envwrap warns when that environment holds what the policy removes.
//!
//! What cannot be done is said once, naming the socket, never a value: no
//! envwrap, or one that did not answer within [`CHECK_LIMIT_MS`]. Under the
//! fail-closed floor nothing runs: the process has already been told that its
//! policy could not be used.

use core::ffi::{c_char, c_int};
use core::mem::MaybeUninit;

use envpolicy_core::pairs::{carrier, Carrier};
use envpolicy_core::{screen, tmux};

use crate::helper::{self, Waited};
use crate::load::{PathBuf, PathSpace, PATH_MAX};
use crate::sys;

/// How long the client waits for the check: envwrap gives each tmux client it
/// runs 5 seconds, and runs a few.
const CHECK_LIMIT_MS: i64 = 20_000;
/// Arguments read from the client's argv; a longer argv counts as reaching its
/// server (its global options, which name the socket, come first).
const MAX_ARGS: usize = 128;

/// Called by the constructor with `argv[0]`'s bytes and the process's argv.
///
/// # Safety
/// `argv` must be the process's argument vector (`argc` NUL-terminated strings).
pub unsafe fn at_load(prog: &[u8], argc: c_int, argv: *const *const c_char) {
    if argv.is_null() {
        return;
    }
    if is_tmux(prog) {
        // SAFETY: the caller's contract, passed on.
        unsafe { check_server(argc, argv) }
    } else if is_screen(prog) {
        // SAFETY: the caller's contract, passed on.
        unsafe { check_screen_session(argc, argv) }
    }
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

/// [`at_load`] for a GNU screen client: have envwrap clean the session it talks
/// to (`envpolicy_core::screen`), as for a tmux server.
///
/// # Safety
/// As `at_load`.
#[inline(never)]
unsafe fn check_screen_session(argc: c_int, argv: *const *const c_char) {
    let mut args: [&[u8]; MAX_ARGS] = [&[]; MAX_ARGS];
    // SAFETY: the caller's contract, passed on.
    let n_args = unsafe { read_args(argc, argv, &mut args) };
    let read = args.get(..n_args.min(MAX_ARGS)).unwrap_or(&[]);
    let sty = env(b"STY");
    let client = screen::read_client(read);
    if n_args <= MAX_ARGS && !client.reaches_server_environment(sty) {
        return;
    }
    let session = client.session(sty).unwrap_or(b"");
    let mut session_space = [0u8; PATH_MAX + 1];
    let Some(session_c) = session_space.get_mut(..=session.len()) else {
        return;
    };
    if let Some((last, head)) = session_c.split_last_mut() {
        head.copy_from_slice(session);
        *last = 0;
    }
    let session_c: &[u8] = session_c;
    crate::policy::with_active(|active| {
        let Some(active) = active.filter(|a| !a.is_floor()) else {
            return;
        };
        run_check(Target::Screen(session_c), active.source, false);
    });
}

/// Whether the process started as `prog` is tmux, by its name as the pair
/// reading knows it. Every process asks this: the first test costs a compare of
/// four bytes.
pub fn is_tmux(prog: &[u8]) -> bool {
    prog.ends_with(b"tmux") && carrier(prog) == Some(Carrier::Tmux)
}

/// Whether the process started as `prog` is GNU screen, the same way.
pub fn is_screen(prog: &[u8]) -> bool {
    prog.ends_with(b"screen") && carrier(prog) == Some(Carrier::Screen)
}

/// [`at_load`] for a tmux client: in a function of its own so that its buffers are
/// on the stack only in tmux.
///
/// # Safety
/// As `at_load`.
#[inline(never)]
unsafe fn check_server(argc: c_int, argv: *const *const c_char) {
    let mut args: [&[u8]; MAX_ARGS] = [&[]; MAX_ARGS];
    // SAFETY: the caller's contract, passed on.
    let n_args = unsafe { read_args(argc, argv, &mut args) };
    let read = args.get(..n_args.min(MAX_ARGS)).unwrap_or(&[]);
    if n_args <= MAX_ARGS && !tmux::reaches_server_environment(read) {
        return;
    }
    let socket = tmux::socket(read, env(b"TMUX"), env(b"TMUX_TMPDIR"));
    let mut socket_space = [0u8; PATH_MAX + 1];
    let Some(socket_c) = socket_c(&socket, &mut socket_space) else {
        return;
    };
    // No socket: no server yet, or none this client can reach.
    if crate::load::stat_c(socket_c).is_err() {
        return;
    }
    let pipes = n_args > MAX_ARGS || tmux::pipes_a_pane(read);
    crate::policy::with_active(|active| {
        let Some(active) = active.filter(|a| !a.is_floor()) else {
            return;
        };
        run_check(Target::Tmux(socket_c), active.source, pipes);
    });
}

/// The socket's path for this user, NUL-terminated, in `out`.
fn socket_c<'o>(socket: &tmux::Socket<'_>, out: &'o mut [u8]) -> Option<&'o [u8]> {
    let len = socket.write_path(crate::load::getuid(), out)?.len();
    *out.get_mut(len)? = 0;
    out.get(..=len)
}

/// The server a check is for: a tmux server's socket, or a screen session's
/// name (empty: every session of the user), NUL-terminated.
#[derive(Clone, Copy)]
enum Target<'a> {
    Tmux(&'a [u8]),
    Screen(&'a [u8]),
}

/// Run the check and wait for it; say so when it could not run or ended early.
/// `pipes`: the client runs `pipe-pane`, whose command gets the server's own
/// process environment: envwrap warns when that holds what the policy removes.
fn run_check(target: Target<'_>, source: &[u8], pipes: bool) {
    let (Target::Tmux(socket_c) | Target::Screen(socket_c)) = target;
    let mut envwrap_space: PathSpace = [MaybeUninit::uninit(); PATH_MAX + 1];
    let Some(envwrap) = helper::envwrap_path(&mut envwrap_space) else {
        return warn(target, b"envwrap was not found");
    };
    let envwrap = envwrap.c_path();
    let mut exe_space = [0u8; PATH_MAX + 1];
    // The tmux envwrap runs to talk to the server: of the server's own version.
    let Some(exe) = sys::own_exe(&mut exe_space) else {
        return warn(target, b"its own executable could not be read");
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
    let mut argv: [*const c_char; 14] = [core::ptr::null(); 14];
    let (which, program) = match target {
        Target::Tmux(_) => (c"-S", c"--tmux"),
        Target::Screen(_) => (c"--screen", c"--screen-program"),
    };
    let fixed: [*const c_char; 10] = [
        c"envwrap".as_ptr(),
        c"tmux-env".as_ptr(),
        c"--fix".as_ptr(),
        c"--skip-policed".as_ptr(),
        c"--quiet".as_ptr(),
        which.as_ptr(),
        socket_c.as_ptr().cast(),
        program.as_ptr(),
        exe.as_ptr().cast(),
        core::ptr::null(),
    ];
    for (slot, p) in argv.iter_mut().zip(fixed) {
        *slot = p;
    }
    let mut n = fixed.len() - 1;
    let policy_args = policy_c.map(|p| [c"--policy".as_ptr(), p.as_ptr().cast()]);
    let warn_args = pipes.then_some([c"--warn-server-environ".as_ptr()]);
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
    // its lines are the shim's (wrapper/src/tmux.rs, `SHIM_CHECK`).
    // And, for screen, where its sockets are (`SCREENDIR`), which envwrap's
    // `screen -ls` must look in too.
    let screendir = match target {
        Target::Screen(_) => screendir_entry(),
        Target::Tmux(_) => None,
    };
    let envp: [*const c_char; 3] = [
        c"ENVSHIM_TMUX_CHECK=1".as_ptr(),
        screendir.unwrap_or(core::ptr::null()),
        core::ptr::null(),
    ];
    match helper::run(envwrap, argv, &envp, CHECK_LIMIT_MS) {
        Ok(Waited::Exited(0) | Waited::Uncollected | Waited::Interrupted) => {}
        // `--quiet` exits 0 whatever it found: anything else is a check that did
        // not happen (an envwrap too old for this shim, a policy it refused).
        Ok(Waited::Exited(_)) => warn(target, b"envwrap failed"),
        Ok(Waited::TimedOut) => warn(target, b"envwrap did not finish within 20 seconds"),
        Err(_) => warn(target, b"envwrap could not be started"),
    }
}

/// The process's `SCREENDIR=...` entry, when it has one.
fn screendir_entry() -> Option<*const c_char> {
    const NAME: &[u8] = b"SCREENDIR";
    // SAFETY: `environ` is a NULL-terminated array of NUL-terminated strings,
    // not changed before `main`.
    let value = unsafe { sys::env_get(sys::environ_ptr(), NAME) }?;
    // SAFETY: `env_get` returns the value of an entry `SCREENDIR=VALUE`, so the
    // entry starts `NAME.len() + 1` bytes before it, in the same string.
    Some(unsafe { value.sub(NAME.len() + 1) })
}

/// One line on stderr: the server was not checked, and why. Names the socket,
/// as `shown` allows, never a value.
fn warn(target: Target<'_>, why: &[u8]) {
    let (head, c_name, what) = match target {
        Target::Tmux(s) => (&b"envshim: the tmux server at "[..], s, &b"panes"[..]),
        Target::Screen(s) => (&b"envshim: the screen session "[..], s, &b"windows"[..]),
    };
    let name = c_name.strip_suffix(b"\0").unwrap_or(c_name);
    sys::Msg::<1024>::new()
        .push(head)
        .push_word(name)
        .push(b" was not checked (")
        .push(why)
        .push(b"): ")
        .push(what)
        .push(b" it starts may hold what the policy removes; see envwrap tmux-env --help")
        .write_stderr();
}
