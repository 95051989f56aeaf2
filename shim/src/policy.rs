//! The policy this process enforces: compiled, validated once, read in place.
//!
//! The shim never parses TOML (docs/adr/0002-compiled-policy.md). The built-in
//! default and the fail-closed floor are compiled into the library at build time;
//! a policy file is used through its compiled cache (see `load`).
//!
//! [`with_active`] is what the filter calls. It is set by the constructor and read-only
//! afterwards; before the constructor ran (another library's constructor spawning),
//! it validates the built-in default on the spot, which needs no allocation.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, Ordering};
use envpolicy::Policy;

use crate::load::Loaded;

/// The built-in default: inherit all, refuse credentials by name and shape, refuse
/// secrets in argv.
static DEFAULT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/default.bin"));
/// The fail-closed floor: used when a configured policy cannot be used.
static FLOOR: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/floor.bin"));

/// The policy in force and where it came from.
#[derive(Clone, Copy)]
pub struct Active {
    pub policy: Policy<'static>,
    /// The policy file's path, or `<built-in>`, for messages.
    pub source: &'static [u8],
    /// The one warning to print, at the first exec (names the file and why, never a
    /// value): set when a configured policy could not be used and the floor is in
    /// force, or when `ENVSHIM_POLICY` names a missing file and the built-in default
    /// is. `None` when envwrap already printed it while compiling in this process.
    pub warning: Option<&'static [u8]>,
}

struct Slot {
    ready: AtomicBool,
    active: UnsafeCell<Option<Active>>,
}

// SAFETY: `active` is written once, by the constructor, before `ready` is published
// with Release; readers load `ready` with Acquire and only read afterwards.
unsafe impl Sync for Slot {}

static SLOT: Slot = Slot {
    ready: AtomicBool::new(false),
    active: UnsafeCell::new(None),
};

/// Called once by the constructor: finds the configured policy and maps its compiled
/// cache, compiling it first when it is missing or stale (see `load`).
pub fn init() {
    let saved = crate::sys::errno();
    let active = match crate::load::load() {
        Loaded::Builtin { warning } => builtin().map(|a| Active { warning, ..a }),
        Loaded::File { policy, source } => Some(Active {
            policy,
            source,
            warning: None,
        }),
        // The shim's own floor, whatever the failure marker holds.
        Loaded::Floor { source, warning } => floor().map(|policy| Active {
            policy,
            source,
            warning,
        }),
    };
    crate::sys::set_errno(saved);
    // SAFETY: the constructor runs once, before any other thread of this library
    // reads SLOT (`ready` is still false, so readers do not touch `active`).
    unsafe { *SLOT.active.get() = active };
    SLOT.ready.store(true, Ordering::Release);
}

/// Run `f` with the policy in force (`None` only if even the built-in policy
/// failed validation, which a test of the build rules out).
pub fn with_active<R>(f: impl FnOnce(Option<&Active>) -> R) -> R {
    if SLOT.ready.load(Ordering::Acquire) {
        // SAFETY: published by `init` with Release; never written again.
        return f(unsafe { (*SLOT.active.get()).as_ref() });
    }
    // Before our constructor: validate the built-in policy on the stack.
    f(builtin().as_ref())
}

fn builtin() -> Option<Active> {
    let policy = Policy::from_bytes(DEFAULT).ok()?;
    Some(Active {
        policy,
        source: b"<built-in>",
        warning: None,
    })
}

/// The fail-closed floor.
pub fn floor() -> Option<Policy<'static>> {
    Policy::from_bytes(FLOOR).ok()
}
