//! The strings the policy re-inserts into a child's environment so that the shim
//! follows the whole process tree ("sticky"), captured once by the constructor:
//!
//! * [`own_path`]: this library's absolute path (the name the loader recorded for it,
//!   found by [`crate::platform::real::resolve_all`]; made absolute with `realpath` if the
//!   loader recorded a relative name);
//! * [`ld_preload`]: `"LD_PRELOAD=<value>"` as it was in the environment at load;
//! * [`policy`]: `"ENVSHIM_POLICY=<value>"` as it was in the environment at load,
//!   or the absolute path the constructor resolved ([`keep_policy`]), or, when the
//!   lookup found no policy file, `"ENVSHIM_POLICY=:builtin"` ([`keep_builtin`]).
//!
//! Each is kept NUL-terminated in the constructor's arena ([`crate::platform::ctor_arena`])
//! (the built-in entry is a static string of `envpolicy_core`),
//! so the filter can point a child's envp entry straight at it with no allocation
//! and no copy. The merge logic (where
//! our entry goes in an `LD_PRELOAD` the program rewrote, `sticky = false`) belongs to
//! the policy, not here.
//!
//! Size limits never truncate: a value longer than its limit is reported as
//! [`Captured::TooLong`], and the policy must then decide (refuse, or not re-insert)
//! instead of inserting a cut string. Limits: own path [`PATH_CAP`] bytes,
//! `LD_PRELOAD` entry [`PRELOAD_CAP`], `ENVSHIM_POLICY` entry [`POLICY_CAP`] (each
//! including the `NAME=` prefix and the NUL).
//!
//! The strings are written only by the constructor, before [`State::Present`] is
//! published with a Release store; readers load the state with Acquire.

use core::cell::UnsafeCell;
use core::ffi::{c_char, CStr};
use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use crate::platform::cold;
use crate::platform::sys;

pub const PATH_CAP: usize = libc::PATH_MAX as usize;
pub const PRELOAD_CAP: usize = 8192;
pub const POLICY_CAP: usize = libc::PATH_MAX as usize + 16;

/// What the constructor found.
#[derive(Clone, Copy, Debug)]
pub enum Captured {
    /// Not set at load (or the constructor has not run yet).
    Absent,
    /// The NUL-terminated string (for env entries, `NAME=VALUE`).
    Present(&'static CStr),
    /// Set, but longer than the buffer: unavailable, deliberately not truncated.
    TooLong,
}

impl Captured {
    /// The captured bytes, without their NUL; `None` when absent or too long.
    pub fn bytes(self) -> Option<&'static [u8]> {
        match self {
            Captured::Present(s) => Some(s.to_bytes()),
            Captured::Absent | Captured::TooLong => None,
        }
    }
}

#[repr(u8)]
enum State {
    Absent = 0,
    Present = 1,
    TooLong = 2,
}

/// One captured string: published once by the constructor, read-only afterwards.
/// The bytes live in [`crate::platform::ctor_arena`]; `N` is the longest accepted.
struct Buf<const N: usize> {
    state: AtomicU8,
    value: UnsafeCell<&'static [u8]>,
}

// SAFETY: `value` is written only by the constructor, before `state` is published
// with Release; afterwards it is only read (after an Acquire load).
unsafe impl<const N: usize> Sync for Buf<N> {}

impl<const N: usize> Buf<N> {
    const fn new() -> Self {
        Buf {
            state: AtomicU8::new(State::Absent as u8),
            value: UnsafeCell::new(&[]),
        }
    }

    fn get(&'static self) -> Captured {
        match self.state.load(Ordering::Acquire) {
            1 => {
                // SAFETY: published with Release after `value` was written, and
                // never written again; it ends with the single NUL.
                let bytes: &'static [u8] = unsafe { *self.value.get() };
                // Not `CStr::from_bytes_with_nul`, which searches the bytes for a
                // NUL at every exec: `set` stored them with exactly one, last.
                if bytes.last() != Some(&0) {
                    return Captured::Absent;
                }
                // SAFETY: as above, NUL-terminated with no NUL inside.
                let c = unsafe { CStr::from_bytes_with_nul_unchecked(bytes) };
                Captured::Present(c)
            }
            2 => Captured::TooLong,
            _ => Captured::Absent,
        }
    }

    /// Stores `prefix` + `value` + NUL. Constructor only.
    ///
    /// # Safety
    /// Must only be called from the constructor, before any reader can run `get`
    /// concurrently on a half-written buffer (readers see `Absent` until the Release).
    unsafe fn set(&'static self, prefix: &[u8], value: &[u8]) {
        let kept = if value.contains(&0) {
            None
        } else {
            crate::platform::ctor_arena::keep(&[prefix, value, b"\0"], N)
        };
        let Some(kept) = kept else {
            self.state.store(State::TooLong as u8, Ordering::Release);
            return;
        };
        // SAFETY: constructor-only writer (caller's contract); state is not Present yet.
        unsafe { *self.value.get() = kept };
        self.state.store(State::Present as u8, Ordering::Release);
    }

    /// Stores `entry`, a static string that ends with its only NUL, as it is.
    /// Constructor only.
    ///
    /// # Safety
    /// As [`Buf::set`].
    unsafe fn set_static(&'static self, entry: &'static [u8]) {
        let one_nul = matches!(entry.split_last(), Some((0, rest)) if !rest.contains(&0));
        if !one_nul || entry.len() > N {
            self.state.store(State::TooLong as u8, Ordering::Release);
            return;
        }
        // SAFETY: constructor-only writer (caller's contract); readers see the
        // previous state until the Release below, and a `Present` one only reads.
        unsafe { *self.value.get() = entry };
        self.state.store(State::Present as u8, Ordering::Release);
    }
}

#[link_section = ".data.envshim_ctor"]
static OWN_PATH: Buf<PATH_CAP> = Buf::new();
#[link_section = ".data.envshim_ctor"]
static LD_PRELOAD: Buf<PRELOAD_CAP> = Buf::new();
#[link_section = ".data.envshim_ctor"]
static POLICY: Buf<POLICY_CAP> = Buf::new();
/// [`POLICY`] as captured, once the constructor replaced it ([`policy_at_load`]).
#[link_section = ".data.envshim_ctor"]
static POLICY_AT_LOAD: Buf<POLICY_CAP> = Buf::new();
/// Whether [`POLICY_AT_LOAD`] holds the entry at load (else [`POLICY`] does).
#[link_section = ".data.envshim_ctor"]
static POLICY_REPLACED: AtomicBool = AtomicBool::new(false);

/// This library's absolute path.
pub fn own_path() -> Captured {
    OWN_PATH.get()
}

/// `"LD_PRELOAD=<value>"` from the environment at load.
pub fn ld_preload() -> Captured {
    LD_PRELOAD.get()
}

/// `"ENVSHIM_POLICY=<value>"` from the environment at load.
pub fn policy() -> Captured {
    POLICY.get()
}

/// Makes `"ENVSHIM_POLICY=<path>"` the policy entry, in place of what was
/// captured: the absolute path of the policy file this process resolved, when it
/// was given relative or found by lookup. Constructor only ([`crate::state::load`]).
pub fn keep_policy(path: &[u8]) {
    // SAFETY: called by the constructor only, after `capture` and before any
    // reader can run.
    unsafe {
        remember_policy_at_load();
        POLICY.set(envpolicy_core::shared::POLICY_ENTRY, path);
    }
}

/// Makes `"ENVSHIM_POLICY=:builtin"` the policy entry
/// ([`envpolicy_core::lookup::BUILTIN_POLICY_ENTRY`], a static string, not copied):
/// the lookup found no policy file, so the tree's policy is the built-in default,
/// and rule 8 gives every child this entry in place of whatever it set, so that
/// no descendant picks a policy file for its subtree. Constructor only
/// ([`crate::state::load`]).
pub fn keep_builtin() {
    // SAFETY: called by the constructor only, after `capture` and before any
    // reader can run.
    unsafe {
        remember_policy_at_load();
        POLICY.set_static(envpolicy_core::lookup::BUILTIN_POLICY_ENTRY);
    }
}

/// Keeps the policy entry as captured in [`POLICY_AT_LOAD`], before the
/// constructor replaces it.
///
/// # Safety
/// Constructor only, as [`Buf::set`].
unsafe fn remember_policy_at_load() {
    if let Captured::Present(c) = POLICY.get() {
        // SAFETY: constructor-only writer (caller's contract), before any reader;
        // `c` is a NUL-terminated string in the arena, which lives as long as the
        // library.
        unsafe { *POLICY_AT_LOAD.value.get() = c.to_bytes_with_nul() };
        POLICY_AT_LOAD
            .state
            .store(State::Present as u8, Ordering::Release);
    }
    POLICY_REPLACED.store(true, Ordering::Release);
}

/// `"ENVSHIM_POLICY=<value>"` as it was in the environment at load, when the
/// constructor made another entry the policy entry ([`keep_policy`],
/// [`keep_builtin`]); else [`policy`]. An entry equal to it in a child's
/// environment was inherited, not set by this process ([`crate::filter`]).
pub fn policy_at_load() -> Captured {
    match POLICY_REPLACED.load(Ordering::Acquire) {
        false => POLICY.get(),
        true => POLICY_AT_LOAD.get(),
    }
}

/// Bytes of a C string (without the NUL).
///
/// # Safety
/// `p` must be NUL-terminated and outlive the returned slice's use.
unsafe fn bytes_of<'a>(p: *const c_char) -> &'a [u8] {
    // SAFETY: caller's contract.
    unsafe { sys::cstr_bytes(p) }
}

/// Captures everything. Called once from the constructor, with this library's name
/// as the loader recorded it (NULL if unknown).
#[inline(always)] // As `real::resolve_all`.
pub fn capture(own_name: *const c_char) {
    let env = sys::environ_ptr();
    // SAFETY: `environ` is a NULL-terminated array of NUL-terminated strings, and
    // the values stay valid while we copy them (single-threaded constructor context,
    // or the loader lock held during dlopen). `set` is called from the constructor.
    unsafe {
        if let Some(v) = sys::env_get(env, b"LD_PRELOAD") {
            LD_PRELOAD.set(b"LD_PRELOAD=", bytes_of(v));
        }
        if let Some(v) = sys::env_get(env, envpolicy_core::shared::POLICY.as_bytes()) {
            POLICY.set(envpolicy_core::shared::POLICY_ENTRY, bytes_of(v));
        }
    }
    capture_own_path(own_name);
}

fn capture_own_path(own_name: *const c_char) {
    if own_name.is_null() {
        return;
    }
    // SAFETY: the loader's NUL-terminated name for this library (lives as long as
    // the library is loaded).
    let name = unsafe { bytes_of(own_name) };
    if name.first() == Some(&b'/') {
        // SAFETY: constructor context.
        unsafe { OWN_PATH.set(b"", name) };
        return;
    }
    // A relative name (LD_PRELOAD=./libenvshim.so): a child that changed directory
    // could not find it, so make it absolute now.
    // SAFETY: `own_name` is the NUL-terminated name `name` views.
    unsafe { capture_absolute(own_name, name) };
}

/// The rare relative-name case of [`capture_own_path`], in a function of its own so
/// that its 4 KiB buffer is on the stack only when it is needed (a large frame
/// touches its stack pages even if unused).
///
/// # Safety
/// Constructor only; `fname` must be the NUL-terminated name `name` views.
#[inline(never)]
unsafe fn capture_absolute(fname: *const c_char, name: &[u8]) {
    let mut buf = [0u8; PATH_CAP];
    // SAFETY: `buf` has PATH_MAX bytes as realpath requires; not on an exec path.
    let r = unsafe { cold::realpath(fname, buf.as_mut_ptr().cast()) };
    if r.is_null() {
        // SAFETY: constructor context.
        unsafe { OWN_PATH.set(b"", name) };
    } else {
        // SAFETY: realpath wrote a NUL-terminated path into `buf`.
        let abs = unsafe { bytes_of(buf.as_ptr().cast()) };
        // SAFETY: constructor context.
        unsafe { OWN_PATH.set(b"", abs) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buf<const N: usize>() -> &'static Buf<N> {
        Box::leak(Box::new(Buf::<N>::new()))
    }

    fn present(c: Captured) -> Vec<u8> {
        match c {
            Captured::Present(s) => s.to_bytes().to_vec(),
            other => panic!("not captured: {other:?}"),
        }
    }

    /// What a child is to get back is kept whole or not at all: a value too
    /// long for its buffer, or one holding a NUL, is `TooLong`, never a cut
    /// string a child would take for the shim's path or policy.
    #[test]
    fn a_captured_entry_is_kept_whole_or_reported_too_long() {
        let b = buf::<64>();
        assert!(matches!(b.get(), Captured::Absent));
        // SAFETY: this test is the buffer's only writer and reader.
        unsafe { b.set(b"LD_PRELOAD=", b"/usr/lib/envshim/libenvshim.so") };
        assert_eq!(
            present(b.get()),
            b"LD_PRELOAD=/usr/lib/envshim/libenvshim.so"
        );

        let long = buf::<32>();
        // SAFETY: as above.
        unsafe {
            long.set(
                b"ENVSHIM_POLICY=",
                b"/a/path/longer/than/the/buffer/holds.toml",
            )
        };
        assert!(matches!(long.get(), Captured::TooLong));

        let nul = buf::<64>();
        // SAFETY: as above.
        unsafe { nul.set(b"ENVSHIM_POLICY=", b"/etc/envshim/p.toml\0/tmp/lax.toml") };
        assert!(matches!(nul.get(), Captured::TooLong));

        let builtin = buf::<64>();
        // SAFETY: as above.
        unsafe { builtin.set_static(envpolicy_core::lookup::BUILTIN_POLICY_ENTRY) };
        assert_eq!(present(builtin.get()), b"ENVSHIM_POLICY=:builtin");
    }
}
