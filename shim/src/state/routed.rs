//! Whether this process is envwrap running an exec that libenvshim.so or the
//! Rust API routed through it to read a secret (`envwrap --routed -- PROGRAM`,
//! [`crate::filter`]'s `deliver::routed`; docs/adr/0019-secrets-delivered-at-exec.md).
//!
//! envwrap decides the exec again with the secret's value, over an
//! environment the same policy already decided; the shim in envwrap's own
//! process then decides envwrap's exec of the program once more. Both must
//! take an expanding `set` as that first decision made it
//! ([`envpolicy_core::decide::EnvRequest::routed`]): the variables it read may
//! be stripped by now, and expanding it again would give the program another
//! value than every other front end gives it.
//!
//! What this trusts: a program named envwrap run with `--routed` first gets
//! its expanding sets from its input. That is a value the program already
//! holds, passed to a child it makes, the class docs/threat-model.md accepts
//! for the shim (a program that means to can skip libc's exec altogether).

use core::ffi::{c_char, c_int};
use core::sync::atomic::{AtomicBool, Ordering};

static ROUTED: AtomicBool = AtomicBool::new(false);

/// Note, at load, whether this process is `envwrap --routed`: `prog` is its
/// `argv[0]`.
///
/// # Safety
/// `argv` holds `argc` NUL-terminated strings, as the loader passes them to
/// `.init_array` functions.
pub unsafe fn at_load(prog: &[u8], argc: c_int, argv: *const *const c_char) {
    if argc < 2 || argv.is_null() {
        return;
    }
    // SAFETY: argc >= 2, so argv[1] is one of the loader's strings.
    let first = unsafe { *argv.add(1) };
    // (The first byte alone, in every other process: most start no option.)
    // SAFETY: as above; each is NUL-terminated, so its first byte is readable.
    if first.is_null() || unsafe { *first } != b'-' as c_char {
        return;
    }
    // SAFETY: as above.
    let option = unsafe { crate::platform::sys::cstr_bytes(first) };
    if option == b"--routed" && envpolicy_core::bytes::basename(prog) == b"envwrap" {
        ROUTED.store(true, Ordering::Relaxed);
    }
}

/// This process is `envwrap --routed`.
pub fn is() -> bool {
    ROUTED.load(Ordering::Relaxed)
}
