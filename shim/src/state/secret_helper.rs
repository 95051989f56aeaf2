//! A `command:` source read by the shim: the helper run from the process that
//! becomes the program, its standard output taken as the value
//! ([`envpolicy_core::secret::helper`] has the rules: trust, environment,
//! time limit).
//!
//! Why it is shaped so: this runs where every source is read, between a
//! `fork` and its `execve` (or in a program that execs in place), under the
//! rule of [`crate::hooks::exec`]: no allocation, no lock, nothing of libc's
//! that is bound lazily. So the helper is started by
//! [`helper::run_with_own_mask`], libc's own `posix_spawn` resolved at load
//! and a raw wait with every signal held, as the compile is (but spawned with
//! this process's own signal mask, so that an agent the helper leaves behind
//! can still be signalled); its standard streams are handed to it by putting them
//! on this process's descriptors 0, 1 and 2 for the spawn and back after it
//! (file actions would allocate). The argv points into the compiled policy,
//! whose words are NUL-terminated; the environment is a few pointers into this
//! process's own. The value is read into the caller's buffer (the exec's
//! scratch, wiped if the exec fails).

use core::ffi::{c_char, c_int};

use envpolicy_core::secret::helper::{self as rules, MAX_WORDS, PASSED, PATH_ENTRY};

use envpolicy_core::secret::{FileMode, Undelivered, MAX_VALUE};

use crate::platform::sys::{self, sys_call};
use crate::state::helper::{self, Waited};

/// The value printed by the helper of the compiled `source` (its words, each
/// NUL-terminated), read into `buf`: the number of bytes.
pub fn read(source: &[u8], buf: &mut [u8]) -> Result<usize, Undelivered> {
    let mut argv: [*const c_char; MAX_WORDS + 1] = [core::ptr::null(); MAX_WORDS + 1];
    let path = words(source, &mut argv).ok_or(Undelivered::Missing)?;
    let st = crate::platform::fs::stat_c(path).map_err(|e| match e {
        libc::ENOENT | libc::ENOTDIR => Undelivered::Missing,
        _ => Undelivered::Unreadable,
    })?;
    let file = FileMode {
        owner: st.st_uid,
        mode: st.st_mode,
    };
    let bare = path.strip_suffix(&[0]).unwrap_or(path);
    rules::trusted(bare, file, sys::raw_getuid())?;
    let mut envp: [*const c_char; PASSED.len() + 2] = [core::ptr::null(); PASSED.len() + 2];
    passed_env(&mut envp);
    let (out_r, out_w) = pipe().ok_or(Undelivered::Unreadable)?;
    let waited = with_streams(out_w, || {
        helper::run_with_own_mask(path, &argv, &envp, rules::LIMIT_MS)
    });
    sys::close(out_w);
    let read = take(out_r, buf);
    sys::close(out_r);
    match waited {
        Some(Ok(Waited::Exited(status))) => rules::ended(status)?,
        Some(Ok(Waited::Uncollected)) | Some(Err(_)) | None => {
            return Err(Undelivered::HelperFailed)
        }
        Some(Ok(Waited::TimedOut | Waited::Interrupted)) if read.is_none() => {
            return Err(Undelivered::TooLarge)
        }
        Some(Ok(Waited::TimedOut | Waited::Interrupted)) => {
            return Err(Undelivered::HelperTimedOut)
        }
    }
    read.ok_or(Undelivered::TooLarge)
}

/// Point `argv` at each NUL-terminated word of `source` (at most
/// [`MAX_WORDS`]); the first word, with its NUL, is the helper's path.
fn words<'s>(source: &'s [u8], argv: &mut [*const c_char; MAX_WORDS + 1]) -> Option<&'s [u8]> {
    let mut start = 0usize;
    let mut n = 0usize;
    for (i, &b) in source.iter().enumerate() {
        if b != 0 {
            continue;
        }
        let slot = argv.get_mut(n).filter(|_| n < MAX_WORDS)?;
        *slot = source.get(start..)?.as_ptr().cast();
        n += 1;
        start = i + 1;
    }
    let first_end = source.iter().position(|&b| b == 0)?;
    (n > 0).then(|| source.get(..=first_end)).flatten()
}

/// Fill `envp` with this process's entries that a helper gets (the first of
/// each name), then `PATH` and the NULL.
fn passed_env(envp: &mut [*const c_char; PASSED.len() + 2]) {
    let mut k = 0usize;
    for name in rules::passed_names() {
        // SAFETY: `environ` is NULL or the process's NULL-terminated
        // environment of NUL-terminated strings.
        if let Some(value) = unsafe { sys::env_get(sys::environ_ptr(), name) } {
            // SAFETY: `value` is `name.len() + 1` bytes into its entry.
            let entry = unsafe { value.sub(name.len() + 1) };
            if let Some(slot) = envp.get_mut(k) {
                *slot = entry;
                k += 1;
            }
        }
    }
    if let Some(slot) = envp.get_mut(k) {
        *slot = PATH_ENTRY.as_ptr().cast();
    }
}

/// A pipe, both ends close-on-exec.
fn pipe() -> Option<(c_int, c_int)> {
    let mut fds: [c_int; 2] = [-1; 2];
    // SAFETY: `fds` is a valid out-array of two ints.
    let r = unsafe { sys_call!(libc::SYS_pipe2, fds.as_mut_ptr(), libc::O_CLOEXEC) };
    (r == 0).then_some((fds[0], fds[1]))
}

/// Run `spawn` with this process's descriptor 1 on `out`, and 0 and 2 on
/// `/dev/null`, so that the helper it starts inherits them; every descriptor
/// is put back after. `None` when they could not be put in place (nothing
/// was run). A program that execs in place with other threads writing to
/// its standard output would lose those writes to the helper for as long as
/// it runs: its exec ends those threads right after.
fn with_streams<T>(out: c_int, spawn: impl FnOnce() -> T) -> Option<T> {
    // SAFETY: a NUL-terminated path; no memory is passed to the kernel besides it.
    let null = unsafe {
        sys_call!(
            libc::SYS_openat,
            libc::AT_FDCWD,
            c"/dev/null".as_ptr(),
            libc::O_RDWR | libc::O_CLOEXEC
        )
    } as c_int;
    if null < 0 {
        return None;
    }
    let mut saved: [c_int; 3] = [-1; 3];
    for (fd, slot) in saved.iter_mut().enumerate() {
        // SAFETY: F_DUPFD_CLOEXEC copies descriptor `fd` if it is open.
        *slot = unsafe { sys_call!(libc::SYS_fcntl, fd, libc::F_DUPFD_CLOEXEC, 3) } as c_int;
    }
    let given = [null, out, null];
    let placed = given
        .iter()
        .enumerate()
        // SAFETY: dup3(2) of descriptors this function opened onto 0, 1, 2.
        .all(|(fd, &from)| unsafe { sys_call!(libc::SYS_dup3, from, fd, 0) } >= 0);
    let result = placed.then(spawn);
    for (fd, &copy) in saved.iter().enumerate() {
        if copy >= 0 {
            // SAFETY: put back the descriptor that was there, then drop the copy.
            unsafe { sys_call!(libc::SYS_dup3, copy, fd, 0) };
            sys::close(copy);
        } else {
            sys::close(fd as c_int);
        }
    }
    sys::close(null);
    result
}

/// Read what the helper left in the pipe `fd`, at most `MAX_VALUE + 2` bytes:
/// `None` when there was more. Without waiting: the helper has ended, and a
/// process it left behind (an agent it started) may hold the pipe open.
fn take(fd: c_int, buf: &mut [u8]) -> Option<usize> {
    // SAFETY: F_SETFL on a descriptor this module opened.
    unsafe { sys_call!(libc::SYS_fcntl, fd, libc::F_SETFL, libc::O_NONBLOCK) };
    let room = buf.get_mut(..MAX_VALUE + 2)?;
    let filled = read_into(fd, room);
    let mut more = [0u8; 1];
    (read_into(fd, &mut more) == 0).then_some(filled)
}

/// Read `fd` until `room` is full or the pipe is empty: the bytes read.
fn read_into(fd: c_int, room: &mut [u8]) -> usize {
    let mut filled = 0usize;
    while let Some(rest) = room.get_mut(filled..).filter(|r| !r.is_empty()) {
        // SAFETY: `rest` is writable for its length; the descriptor does not
        // block, so the read returns at once when the pipe is empty.
        let n = unsafe { sys_call!(libc::SYS_read, fd, rest.as_mut_ptr(), rest.len()) };
        match n {
            0 => break,
            n if n > 0 => filled += n as usize,
            _ if sys::errno() == libc::EINTR => continue,
            _ => break,
        }
    }
    filled
}
