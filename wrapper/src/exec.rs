//! The exec itself: execve(2) with the decided argv and environment, byte for
//! byte and in order, falling back to `/bin/sh` for a file without a `#!` line as
//! execvp does (env(1) runs such a file too).

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Rust starts every program with SIGPIPE ignored, and an ignored signal stays
/// ignored across exec: give the command the default back, as env(1) would.
/// Called before [`exec`], and before the signal options, which may ignore it
/// again (`--ignore-signal=PIPE`).
pub fn restore_sigpipe() {
    // SAFETY: signal(2) with SIG_DFL changes a disposition; no memory is involved.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Replace this process with `program`. Returns only on failure; call
/// [`restore_sigpipe`] first.
pub fn exec(program: &Path, argv: &[Vec<u8>], env: &[Vec<u8>]) -> io::Error {
    let Some(path) = cstring(program.as_os_str().as_bytes()) else {
        return io::Error::from(io::ErrorKind::InvalidInput);
    };
    let argv_c: Option<Vec<CString>> = argv.iter().map(|a| cstring(a)).collect();
    let env_c: Option<Vec<CString>> = env.iter().map(|e| cstring(e)).collect();
    let (Some(argv_c), Some(env_c)) = (argv_c, env_c) else {
        return io::Error::from(io::ErrorKind::InvalidInput);
    };
    let err = execve(&path, &argv_c, &env_c);
    if err.raw_os_error() != Some(libc::ENOEXEC) {
        return err;
    }
    // execvp's fallback: run it with the shell, argv[0] becoming the file's path.
    let (Some(sh), Some(arg0)) = (cstring(b"/bin/sh"), cstring(b"sh")) else {
        return err;
    };
    let mut sh_argv = vec![arg0, path.clone()];
    sh_argv.extend(argv_c.into_iter().skip(1));
    execve(&sh, &sh_argv, &env_c)
}

fn cstring(b: &[u8]) -> Option<CString> {
    CString::new(b.to_vec()).ok()
}

fn execve(path: &CString, argv: &[CString], env: &[CString]) -> io::Error {
    let mut argv_p: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_p.push(std::ptr::null());
    let mut env_p: Vec<*const libc::c_char> = env.iter().map(|e| e.as_ptr()).collect();
    env_p.push(std::ptr::null());
    // SAFETY: every pointer is a NUL-terminated string owned by `path`, `argv` or
    // `env`, which outlive the call, and both arrays end with a null pointer, as
    // execve(2) requires. On success the call does not return.
    unsafe {
        libc::execve(path.as_ptr(), argv_p.as_ptr(), env_p.as_ptr());
    }
    io::Error::last_os_error()
}
