//! `libenvshim.so` run as a program: what it is, and the policy it would apply in
//! this environment, with where that came from; then exit 0 (csrc/entry.c is the
//! entry point the loader jumps to).
//!
//! Nothing here runs when the library is preloaded.

use envpolicy_core::lookup::{Step, SYSTEM_POLICY};

use crate::platform::sys;
use crate::state::message::Msg;

/// Print the description and exit. Called by `envshim_entry` once the loader has
/// mapped the library.
#[no_mangle]
pub extern "C" fn envshim_describe() -> ! {
    // The constructor's first steps: the loader does not run a program's own
    // constructor. The loader names the program's object "", so this library's
    // path is taken from /proc/self/exe instead: envwrap is found beside it.
    crate::platform::real::resolve_all();
    let mut space = [0u8; 4097];
    let exe = sys::own_exe(&mut space).map_or(core::ptr::null(), |e| e.as_ptr().cast());
    crate::state::sticky::capture(exe);
    crate::state::policy::init(b"libenvshim.so");
    let mut m = Msg::<4096>::new();
    m.push(b"libenvshim.so ")
        .push(env!("CARGO_PKG_VERSION").as_bytes())
        .push(b": an LD_PRELOAD library that applies an envshim policy to every exec\n");
    crate::state::policy::with_active(|active| match active {
        Some(a) if a.is_floor() => {
            m.push(b"policy: the fail-closed floor, instead of ")
                .push_word(a.source)
                .push(b"\n");
            if let Some(w) = a.warning {
                m.push(b"because: ").push(w).push(b"\n");
            }
        }
        Some(a) if a.source == b"<built-in>" => {
            m.push(b"policy: the built-in default\n")
                .push(b"found by: ")
                .push(builtin_found_by().describe().as_bytes())
                .push(b"\n");
        }
        Some(a) => {
            m.push(b"policy: ").push_word(a.source).push(b"\n");
            m.push(b"found by: ")
                .push(found_by(a.source).describe().as_bytes())
                .push(b"\n");
        }
        None => {
            m.push(b"policy: none could be validated\n");
        }
    });
    m.push(
        b"use: LD_PRELOAD=/absolute/path/to/libenvshim.so COMMAND; envwrap --help for the tools",
    );
    m.write_fd(1);
    // SAFETY: exit_group ends the process; nothing is left to run.
    unsafe { sys::sys_call!(libc::SYS_exit_group, 0) };
    #[allow(clippy::empty_loop)]
    loop {}
}

/// Which step gave the built-in default: `ENVSHIM_POLICY=:builtin`, or the lookup
/// finding nothing.
fn builtin_found_by() -> Step {
    // SAFETY: `environ` is a NULL-terminated array of NUL-terminated strings, and
    // `env_get` returns a pointer to a NUL-terminated value in it.
    let value = unsafe {
        sys::env_get(
            sys::environ_ptr(),
            envpolicy_core::shared::POLICY.as_bytes(),
        )
        .map(|v| sys::cstr_bytes(v))
    };
    match value {
        Some(v) if envpolicy_core::lookup::names_builtin(v) => Step::EnvBuiltin,
        _ => Step::Builtin,
    }
}

/// Which step of the lookup gave `source` (a file).
fn found_by(source: &[u8]) -> Step {
    // SAFETY: `environ` is a NULL-terminated array of NUL-terminated strings.
    if unsafe {
        sys::env_get(
            sys::environ_ptr(),
            envpolicy_core::shared::POLICY.as_bytes(),
        )
    }
    .is_some()
    {
        Step::EnvVar
    } else if source.strip_suffix(b"\0").unwrap_or(source) == SYSTEM_POLICY {
        Step::System
    } else {
        Step::User
    }
}
