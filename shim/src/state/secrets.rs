//! Reading a `[[secret]]`'s value from its source, at the exec of one of its
//! programs (docs/adr/0019-secrets-delivered-at-exec.md).
//!
//! Why a module of its own, and why so small: the value must be read only by
//! the process that becomes the program, so this runs in a `fork` child between
//! its `fork` and its `execve`, under the rule of [`crate::hooks::exec`] (raw
//! system calls, no allocation, no lock). Whether this process is that one, and
//! what to do with the value, is the filter's business; the rules around the
//! read (which files are trusted, what of the bytes the value is, what a reason
//! says) are the core's ([`envpolicy_core::secret`]). This module only turns a
//! source into bytes, in a buffer the caller owns (the exec's scratch, wiped if
//! the exec fails), never on the stack.

use core::ffi::c_int;

use envpolicy_core::compiled::{Policy, SecretRec};
use envpolicy_core::secret::{clean_value, file_trusted, SourceKind, Undelivered, MAX_VALUE};

use crate::platform::sys::{self, keyctl};

/// Bytes a caller gives [`read`] for one secret: the longest value and a
/// `\r\n`, or a path and its NUL (`PATH_MAX + 1`), whichever is longer. The
/// path of a file source is built in the same buffer the value is then read
/// into, so that no path buffer sits in a stack frame.
pub const READ_BYTES: usize = if MAX_VALUE + 2 > libc::PATH_MAX as usize + 1 {
    MAX_VALUE + 2
} else {
    libc::PATH_MAX as usize + 1
};

/// The value of secret `rec` of `policy`, read from its source into `buf` (at
/// least [`READ_BYTES`] long) and cleaned ([`clean_value`]), or why it was not.
pub fn read<'b>(
    policy: &Policy<'_>,
    rec: &SecretRec,
    buf: &'b mut [u8],
) -> Result<&'b [u8], Undelivered> {
    let source = policy.str(rec.source);
    let n = match rec.source_kind {
        SourceKind::File => {
            put_c_path(buf, &[source])?;
            read_file(buf)?
        }
        SourceKind::Credential => {
            let dir = credentials_directory().ok_or(Undelivered::NoCredentialsDirectory)?;
            put_c_path(buf, &[dir, b"/", source])?;
            read_file(buf)?
        }
        SourceKind::Keyring => {
            put_c_path(buf, &[source])?;
            read_key(buf)?
        }
        SourceKind::Command => crate::state::secret_helper::read(source, buf)?,
    };
    clean_value(buf.get(..n).unwrap_or(&[]))
}

/// `$CREDENTIALS_DIRECTORY` of this process, as its `environ` holds it (raw, as
/// glibc's `getenv` reads it, with no lock); `None` when unset or empty, and in
/// a set-user-ID program, whose invoking user would choose the directory it
/// reads with its owner's privileges ([`crate::platform::fs::secure`]).
fn credentials_directory() -> Option<&'static [u8]> {
    if crate::platform::fs::secure() {
        return None;
    }
    // SAFETY: `environ` is NULL or the process's NULL-terminated environment,
    // and a value in it is NUL-terminated and outlives this exec.
    let v = unsafe { sys::env_get(sys::environ_ptr(), b"CREDENTIALS_DIRECTORY") }?;
    // SAFETY: as above.
    let dir = unsafe { sys::cstr_bytes(v) };
    (!dir.is_empty()).then_some(dir)
}

/// Writes `parts` and a NUL at the start of `buf`; a path that does not fit
/// names no file there could be.
fn put_c_path(buf: &mut [u8], parts: &[&[u8]]) -> Result<(), Undelivered> {
    let mut at = 0usize;
    for part in parts {
        let end = at + part.len();
        buf.get_mut(at..end)
            .ok_or(Undelivered::Missing)?
            .copy_from_slice(part);
        at = end;
    }
    *buf.get_mut(at).ok_or(Undelivered::Missing)? = 0;
    Ok(())
}

/// Reads the file whose NUL-terminated path starts `buf` into `buf` (the path
/// is overwritten): the number of bytes read, after the trust rule
/// ([`file_trusted`]) passed on the open descriptor's `fstat`.
fn read_file(buf: &mut [u8]) -> Result<usize, Undelivered> {
    // SAFETY: `buf` starts with a NUL-terminated path (`put_c_path`). O_NONBLOCK:
    // a FIFO put where the file was does not hold the exec; O_NOCTTY: a
    // terminal does not become this process's.
    let fd = unsafe {
        sys::sys_call!(
            libc::SYS_openat,
            libc::AT_FDCWD,
            buf.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY,
        )
    };
    if fd < 0 {
        return Err(open_failure(sys::errno()));
    }
    let fd = fd as c_int;
    let read = read_trusted(fd, buf);
    sys::close(fd);
    read
}

/// [`read_file`] on the open descriptor `fd`.
fn read_trusted(fd: c_int, buf: &mut [u8]) -> Result<usize, Undelivered> {
    let st = crate::platform::fs::fstat(fd).map_err(|_| Undelivered::Unreadable)?;
    file_trusted(st.st_uid, st.st_mode, sys::raw_getuid())?;
    if u64::try_from(st.st_size).unwrap_or(u64::MAX) > (MAX_VALUE + 2) as u64 {
        return Err(Undelivered::TooLarge);
    }
    let room = buf
        .get_mut(..MAX_VALUE + 2)
        .ok_or(Undelivered::Unreadable)?;
    crate::state::env_files::read_all(fd, room).ok_or(Undelivered::Unreadable)
}

/// What a failed `open` says of a source.
fn open_failure(errno: c_int) -> Undelivered {
    match errno {
        libc::ENOENT | libc::ENOTDIR => Undelivered::Missing,
        _ => Undelivered::Unreadable,
    }
}

/// Reads the `user` key whose NUL-terminated description starts `buf` into
/// `buf`: searched from the session keyring, then from the user keyring (a
/// login without a session keyring, a `su` shell).
fn read_key(buf: &mut [u8]) -> Result<usize, Undelivered> {
    let key = find_key(buf.as_ptr()).map_err(key_failure)?;
    let room = buf
        .get_mut(..MAX_VALUE + 2)
        .ok_or(Undelivered::Unreadable)?;
    let len = sys::key_read(key, room).map_err(key_failure)?;
    if len > room.len() {
        return Err(Undelivered::TooLarge);
    }
    Ok(len)
}

/// The serial of the `user` key with the NUL-terminated `description`, from
/// the session keyring, then from the user keyring; else the first error that
/// is not "no such key", or that one.
fn find_key(description: *const u8) -> Result<i32, c_int> {
    let mut failure = libc::ENOKEY;
    for ring in [keyctl::SESSION_KEYRING, keyctl::USER_KEYRING] {
        // SAFETY: `description` is NUL-terminated (the caller's `put_c_path`).
        match unsafe { sys::key_search(ring, description) } {
            Ok(key) => return Ok(key),
            Err(e) if failure == libc::ENOKEY => failure = e,
            Err(_) => {}
        }
    }
    Err(failure)
}

/// What a failed `keyctl` says of a key.
fn key_failure(errno: c_int) -> Undelivered {
    match errno {
        libc::ENOKEY | libc::EKEYEXPIRED | libc::EKEYREVOKED | libc::ENOENT => Undelivered::Missing,
        _ => Undelivered::Unreadable,
    }
}
