//! The managed layer in this process: found, checked and copied in at the first
//! exec, then the same for the rest of the process's life
//! (docs/adr/0020-managed-layer.md, [`envpolicy_core::layer`]).
//!
//! **Where.** Only at the constants [`layer::MANAGED_POLICY`] and
//! [`layer::MANAGED_COMPILED`]: no variable, flag or user file moves them, and
//! nothing here reads the environment.
//!
//! **Whose compiled form.** The shim never parses TOML, and it never enforces a
//! compiled form the user could have written: a user's own cache of
//! `managed.toml` could be forged (the freshness check compares stamps, not
//! contents). So it reads only `/etc/envshim/managed.bin`, which root writes with
//! `envwrap compile --managed`, and checks it as a user's cache is checked
//! ([`envpolicy_core::cache_key::check`]), with root as the only trusted owner
//! of it and of every file it was compiled from ([`layer::trusted`]).
//!
//! **When.** At the first exec, `posix_spawn`, `system` or `popen` of a process,
//! not at load: a process that never starts another pays nothing, and the
//! start-up hint is not slowed. A host without the layer pays one `stat` (that
//! says `ENOENT`) per process that execs. The layer is read once per process:
//! an edit reaches the processes started after `envwrap compile --managed`
//! (a long-lived server keeps the layer it started with; restart it).
//!
//! **Broken.** Anything at `managed.toml` that cannot be used (not root's, a
//! compiled form that is missing, stale, untrusted or corrupt) is
//! [`layer::Found::Broken`]: the second pass decides with the fail-closed
//! floor, and one line per process says why. Never the absence of the layer.
//!
//! Nothing here allocates or locks: it may run in a `vfork` child, whose writes
//! land in its parent (which then finds the layer loaded).

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use envpolicy_core::cache_key;
use envpolicy_core::layer::{self, Found};
use envpolicy_core::Policy;

use crate::platform::fs::{stamp_of, stat_c};
use crate::state::in_force::{self, Active};
use crate::state::load::{map_cache, MapError};

/// Not looked at yet.
const UNKNOWN: u8 = 0;
/// One thread is loading it.
const BUSY: u8 = 1;
/// Looked at: the host has no managed layer.
const ABSENT: u8 = 2;
/// [`CELL`] may be read.
const READY: u8 = 3;

#[link_section = ".data.envshim_zero"]
static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);

struct Cell(UnsafeCell<MaybeUninit<Active>>);

// SAFETY: written once, by the thread that moved STATE from UNKNOWN to BUSY,
// before the Release store of READY; read only after an Acquire load of READY.
unsafe impl Sync for Cell {}

#[link_section = ".data.envshim_zero"]
static CELL: Cell = Cell(UnsafeCell::new(MaybeUninit::uninit()));

/// The layer's one line (why it is broken) was written.
#[link_section = ".data.envshim_zero"]
static WARNED: AtomicBool = AtomicBool::new(false);

/// What an exec is decided with besides the user layer.
#[derive(Clone, Copy)]
pub enum InForce {
    /// The host has no managed layer.
    Absent,
    /// The managed layer, or the floor that stands in for a broken one.
    Layer(&'static Active),
    /// Another thread, or this one further up its stack (a signal handler
    /// that execs), is loading the layer and did not finish in time: the exec
    /// is refused rather than decided without it.
    Loading,
}

/// The managed layer in force, loaded at the first call.
#[inline]
pub fn in_force() -> InForce {
    match STATE.load(Ordering::Acquire) {
        ABSENT => InForce::Absent,
        // SAFETY: READY publishes the cell, never written again.
        READY => InForce::Layer(unsafe { (*CELL.0.get()).assume_init_ref() }),
        _ => in_force_slow(),
    }
}

/// How many times a thread yields to another one loading the layer (a `stat`
/// and a read: microseconds) before it gives up.
const WAIT_YIELDS: u32 = 10_000;

#[cold]
#[inline(never)]
fn in_force_slow() -> InForce {
    if STATE
        .compare_exchange(UNKNOWN, BUSY, Ordering::Acquire, Ordering::Acquire)
        .is_err()
    {
        return wait_for_loader();
    }
    let saved = crate::platform::sys::errno();
    let loaded = load();
    crate::platform::sys::set_errno(saved);
    match loaded {
        None => {
            STATE.store(ABSENT, Ordering::Release);
            InForce::Absent
        }
        Some(active) => {
            // SAFETY: this thread moved STATE to BUSY; nobody reads the cell
            // before READY, and it is never written again.
            let cell = unsafe { (*CELL.0.get()).write(active) };
            STATE.store(READY, Ordering::Release);
            warn_once(cell);
            InForce::Layer(cell)
        }
    }
}

#[cold]
#[inline(never)]
fn wait_for_loader() -> InForce {
    for _ in 0..WAIT_YIELDS {
        match STATE.load(Ordering::Acquire) {
            BUSY => {
                // SAFETY: sched_yield takes no arguments and touches no memory
                // of ours (a raw system call: nothing is bound lazily here).
                unsafe { crate::platform::sys::sys_call!(libc::SYS_sched_yield) };
            }
            _ => return in_force(),
        }
    }
    InForce::Loading
}

/// In a `fork` child: a thread that was loading the layer is not here, so the
/// child loads it again at its first exec.
pub fn after_fork_in_child() {
    if STATE.load(Ordering::Relaxed) == BUSY {
        STATE.store(UNKNOWN, Ordering::Release);
    }
}

fn warn_once(a: &Active) {
    if let Some(w) = a.warning {
        if !WARNED.swap(true, Ordering::Relaxed) {
            crate::state::message::say(w);
        }
    }
}

/// What is at [`layer::MANAGED_POLICY`], as the layer this process enforces.
fn load() -> Option<Active> {
    match found() {
        Ok(None) => None,
        Ok(Some(policy)) => Some(Active {
            policy,
            source: layer::MANAGED_POLICY,
            warning: None,
            retry: None,
        }),
        // The floor, standing in for a layer that is there and cannot be used.
        Err(line) => Some(Active {
            policy: in_force::floor()?,
            source: layer::MANAGED_POLICY,
            warning: Some(line),
            retry: None,
        }),
    }
}

/// The line that says why the layer is broken: every word of it is a
/// constant (the path is [`layer::MANAGED_POLICY`], checked below), so it is
/// built at compile time and holds nothing a process could have chosen (a
/// test below checks the path against the constant).
macro_rules! broken {
    ($why:literal) => {
        concat!(
            "envshim: the managed layer /etc/envshim/managed.toml",
            $why,
            "; every exec is held to the fail-closed floor"
        )
        .as_bytes()
    };
}

/// A compiled form that must be written again.
const NOT_COMPILED: &[u8] =
    broken!(" has no current compiled form; run `envwrap compile --managed` as root");

/// The layer's policy (`None`: [`Found::Absent`]), or, for [`Found::Broken`],
/// the line that says why.
fn found() -> Result<Option<Policy<'static>>, &'static [u8]> {
    let st = match stat_c(layer::MANAGED_POLICY_C) {
        Ok(st) => st,
        Err(libc::ENOENT | libc::ENOTDIR) => return Ok(None),
        Err(_) => return Err(broken!(" cannot be read")),
    };
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(broken!(" is not a regular file"));
    }
    if layer::trusted(st.st_uid, st.st_gid, st.st_mode).is_err() {
        return Err(broken!(" may be written by someone other than root"));
    }
    let bytes = match map_cache(layer::MANAGED_COMPILED_C, 0) {
        Ok(m) => m.bytes(),
        Err(MapError::Missing | MapError::Unusable(_)) => return Err(NOT_COMPILED),
        Err(MapError::Untrusted(_)) => {
            return Err(broken!(
                ": its compiled form /etc/envshim/managed.bin is not root's alone"
            ))
        }
    };
    // The copy stays for the life of the process, as the layer does. (A copy,
    // not a mapping: a root process truncating managed.bin must not kill every
    // process that loaded the layer; `load::map_cache` reads it whole.)
    fresh(bytes).map(Some)
}

/// The compiled form `bytes`, checked against the files it was compiled from
/// (each still root's alone, and unchanged) and validated in full.
fn fresh(bytes: &'static [u8]) -> Result<Policy<'static>, &'static [u8]> {
    let (records, notes) = cache_key::open_peek(bytes).map_err(|_| NOT_COMPILED)?;
    let mut untrusted = false;
    cache_key::check(&records, &notes, layer::MANAGED_POLICY, |p| {
        let st = stat_c(p).ok()?;
        untrusted |= layer::trusted(st.st_uid, st.st_gid, st.st_mode).is_err();
        Some(stamp_of(&st))
    })
    .map_err(|_| NOT_COMPILED)?;
    if untrusted {
        return Err(broken!(
            ": a file it imports may be written by someone other than root"
        ));
    }
    if notes.failure().is_some() {
        return Err(broken!(
            " does not compile; `envwrap check /etc/envshim/managed.toml` says why"
        ));
    }
    Policy::from_bytes(bytes).map_err(|_| NOT_COMPILED)
}

/// Which of [`Found`] this process's layer is, for `describe` and tests.
pub fn state() -> Found {
    match in_force() {
        InForce::Absent => Found::Absent,
        InForce::Layer(a) if !a.is_floor() => Found::Usable,
        _ => Found::Broken,
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_names_the_managed_file_and_the_floor() {
        let prefix = b"envshim: the managed layer ".len();
        let end = prefix + layer::MANAGED_POLICY.len();
        assert_eq!(&NOT_COMPILED[prefix..end], layer::MANAGED_POLICY);
        assert!(NOT_COMPILED.ends_with(b"the fail-closed floor"));
    }
}
