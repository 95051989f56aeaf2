//! The one place where a hook asks the policy what an exec should do.
//!
//! Every hook calls [`prepare`] exactly once per exec (for the `p` variants: once,
//! before the `PATH` search, with the name as given), then does what the returned
//! [`Prepared`] says. `prepare` runs on the exec path, so it obeys the rule explained
//! in [`crate::exec`]: no allocation, no lock, no formatting; filtered arrays are built
//! in the caller's [`Scratch`], messages with [`crate::sys::Msg`].
//!
//! For now this is a pass-through stub; the policy engine (crate `envpolicy`) fills it
//! in. With the `stub-copy` feature (tests only), the stub instead copies argv and
//! envp into `Scratch` and returns [`Prepared::Use`], so the hooks' `Use` path and the
//! scratch region are exercised; and it refuses (EPERM) any exec whose argv contains
//! the marker `ENVSHIM_TEST_REFUSE`, so the `Refuse` path of every hook is too.

use core::ffi::{c_char, c_int};

pub use crate::scratch::Scratch;

/// What one exec should do after the policy has been applied.
pub enum Prepared {
    /// Call the real function with the original argv/envp.
    Pass,
    /// Call the real function with these arrays (NULL-terminated, live as long as
    /// `scratch`).
    Use {
        argv: *const *const c_char,
        envp: *const *const c_char,
    },
    /// Do not exec: fail with this errno (EPERM for a refusal, E2BIG when the shim
    /// cannot proceed). A one-line message has already been written to stderr.
    Refuse { errno: c_int },
}

/// Applies the policy to one exec.
///
/// `program` is the path (or name, for the p-variants before the search; called once
/// before the PATH search with the name as given) of what is about to run. `argv` and
/// `envp` may be NULL (Linux accepts both).
///
/// # Safety
/// `program` must be NULL or NUL-terminated; `argv` and `envp` must be NULL or
/// NULL-terminated arrays of NUL-terminated strings, valid for the whole call.
#[allow(unused_variables)]
pub unsafe fn prepare(
    program: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    scratch: &mut Scratch,
) -> Prepared {
    #[cfg(feature = "stub-copy")]
    // SAFETY: same contract as ours.
    let prepared = unsafe { test_copy(program, argv, envp, scratch) };
    #[cfg(not(feature = "stub-copy"))]
    let prepared = Prepared::Pass;
    prepared
}

/// Test stub: copies both arrays into `scratch` (or refuses on the test marker).
#[cfg(feature = "stub-copy")]
unsafe fn test_copy(
    program: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    scratch: &mut Scratch,
) -> Prepared {
    use crate::sys;
    // SAFETY: NULL-terminated arrays (caller's contract).
    let (na, ne) = unsafe { (sys::count(argv), sys::count(envp)) };
    for i in 0..na {
        // SAFETY: i < na, inside the array; each entry is NUL-terminated.
        let a = unsafe { *argv.add(i) };
        // SAFETY: NUL-terminated marker and argument.
        if unsafe { !libc::strstr(a, c"ENVSHIM_TEST_REFUSE".as_ptr()).is_null() } {
            let mut m = sys::Msg::<512>::new();
            m.push(b"envshim: refused ");
            // SAFETY: `program` is NULL or NUL-terminated.
            unsafe { m.push_cstr(program) };
            m.push(b": test marker ENVSHIM_TEST_REFUSE in argv");
            m.write_stderr();
            return Prepared::Refuse { errno: libc::EPERM };
        }
    }
    let total = match (na.checked_add(1), ne.checked_add(1)) {
        (Some(a), Some(e)) => a.checked_add(e),
        _ => None,
    };
    let reserved = match total {
        Some(t) => scratch.reserve(t, 0),
        None => Err(libc::E2BIG),
    };
    if let Err(e) = reserved {
        let mut m = sys::Msg::<512>::new();
        m.push(b"envshim: cannot filter the environment of ");
        // SAFETY: as above.
        unsafe { m.push_cstr(program) };
        m.push(b": no memory for the filtered arrays");
        m.write_stderr();
        return Prepared::Refuse { errno: e };
    }
    let copy = |src: *const *const c_char, n: usize| -> Option<*const *const c_char> {
        if src.is_null() {
            return Some(core::ptr::null());
        }
        let dst = scratch.take_ptrs(n + 1)?;
        for (i, d) in dst.iter_mut().enumerate().take(n) {
            // SAFETY: i < n, inside the source array.
            *d = unsafe { *src.add(i) };
        }
        Some(dst.as_ptr())
    };
    match (copy(argv, na), copy(envp, ne)) {
        (Some(a), Some(e)) => Prepared::Use { argv: a, envp: e },
        _ => {
            // Cannot happen: `reserve` sized the arena for both arrays.
            let mut m = sys::Msg::<512>::new();
            m.push(b"envshim: internal error: scratch too small for ");
            // SAFETY: as above.
            unsafe { m.push_cstr(program) };
            m.write_stderr();
            Prepared::Refuse { errno: libc::E2BIG }
        }
    }
}
