//! Every line the shim writes goes through [`envpolicy_core::shown::redact`], the
//! one writer of every front end: a token shape, and the value of every
//! credential the shim knows of, never leave the process in a message or a log
//! line, whatever the message was built from (a program's path holding a
//! by-name credential, an option, a name).
//!
//! What the shim knows of: the process's own environment (`environ`), judged by
//! the policy in force (the built-in default before one is validated), and, for
//! the lines about one exec, the decision's credentials in the environment that
//! exec hands its child (`shown::Decided`).
//!
//! The writer runs between fork and exec: it reads `environ` in place, allocates
//! nothing and takes no lock.

use core::ffi::{c_char, c_int};

use envpolicy_core::shown::{self, Secrets};

/// The credentials of the process's environment at this moment.
pub struct EnvironSecrets;

impl Secrets for EnvironSecrets {
    fn each(&self, f: &mut dyn FnMut(&[u8])) {
        let env = crate::sys::environ_ptr();
        if env.is_null() {
            return;
        }
        crate::policy::with_ready(|policy| {
            let mut i = 0usize;
            loop {
                // SAFETY: `environ` is a NULL-terminated array of NUL-terminated
                // strings (read as glibc's getenv reads it); `i` stops at its NULL.
                let entry: *const c_char = unsafe { *env.add(i) };
                if entry.is_null() {
                    break;
                }
                // SAFETY: a NUL-terminated entry of the environment.
                let bytes = unsafe { crate::sys::cstr_bytes(entry) };
                if let Some((name, value)) = envpolicy_core::bytes::split_entry(bytes) {
                    if shown::is_secret(policy, name, value) {
                        f(value);
                    }
                }
                i += 1;
            }
        });
    }
}

/// Room for a redacted line: a description can be longer than the value it
/// stands for (`<8 bytes>` for 8 bytes), so twice the longest message.
const OUT: usize = 2048;

/// Writes `line` to `fd` with one `write(2)`, redacted against `known` and the
/// process's environment; a line that grows past [`OUT`] bytes is cut, never
/// written raw.
#[cold]
#[inline(never)]
pub fn write_line(fd: c_int, line: &[u8], known: &dyn Secrets) {
    let mut out = [0u8; OUT];
    let mut len = 0usize;
    let mut cut = false;
    let both = shown::Both(known, &EnvironSecrets);
    shown::redact(line, &both, &mut |part| {
        for &b in part {
            match out.get_mut(len) {
                Some(slot) if len < OUT - 4 => {
                    *slot = b;
                    len += 1;
                }
                _ => cut = true,
            }
        }
    });
    if cut {
        for &b in b"..." {
            if let Some(slot) = out.get_mut(len) {
                *slot = b;
                len += 1;
            }
        }
    }
    if let Some(slot) = out.get_mut(len) {
        *slot = b'\n';
        len += 1;
    }
    crate::sys::raw_write(fd, out.get(..len).unwrap_or(&[]));
}
