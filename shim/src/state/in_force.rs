//! The policy in force, as published: the cells a validated policy is written
//! to once and read from for the rest of the process's life, and the state word
//! that says which of them may be read.
//!
//! How a policy gets here (found at load, validated at the first exec, loaded
//! again after an edit) is [`crate::state::policy`]'s; this module only keeps what
//! that publishes, so that the writer of messages ([`crate::state::message`]),
//! which redacts against the policy in force, needs nothing that loads or
//! reports. Every store that publishes is a Release, every load that reads an
//! Acquire; no cell is written twice, so a thread (or an interrupted hook) still
//! deciding with an earlier policy reads memory that never changes.

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicU8, Ordering};
use envpolicy_core::cache_key::Stamp;
use envpolicy_core::Policy;

/// The built-in default: inherit all, refuse credentials by name and shape, refuse
/// secrets in argv.
pub static DEFAULT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/default.bin"));
/// The fail-closed floor: used when a configured policy cannot be used.
pub static FLOOR: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/floor.bin"));

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
    /// Set only on a floor that stands in for a policy file that failed to load
    /// (at start, at the check the constructor deferred, at a reload after an
    /// edit, or at the first load of a process that took the start-up hint):
    /// [`crate::state::policy::follow_edit`] loads the file again when it changes.
    pub retry: Option<Retry>,
}

/// A policy file that did not load (it does not compile, say), and how it looked
/// when it was tried: while the floor stands in for it, the next edit of the file
/// is loaded as any edit is ([`crate::state::policy::follow_edit`]).
#[derive(Clone, Copy)]
pub struct Retry {
    /// The file, absolute and NUL-terminated.
    pub path_c: &'static [u8],
    /// Its stamp when it was tried; `None` when it could not be `stat`ed. Taken
    /// before the load at a reload and at a hinted process's first load, so that
    /// an edit made during the load is tried again; after it at start and at the
    /// deferred check, where only the failure path may pay for it.
    pub before: Option<Stamp>,
}

impl Active {
    /// True when the fail-closed floor is in force instead of a configured policy.
    pub fn is_floor(&self) -> bool {
        core::ptr::eq(self.policy.as_bytes(), FLOOR)
    }

    /// True when the built-in default is in force.
    pub fn is_default(&self) -> bool {
        core::ptr::eq(self.policy.as_bytes(), DEFAULT)
    }
}

/// Nothing recorded yet (before the constructor, or a library that was never
/// constructed): the built-in default is validated on the spot.
pub const EMPTY: u8 = 0;
/// The constructor recorded the policy's bytes; nobody has validated them.
pub const PENDING: u8 = 1;
/// One thread is validating (or, after the hint, loading) the policy.
pub const BUSY: u8 = 2;
/// [`validated`] may be read.
pub const READY: u8 = 3;
/// The constructor took the start-up hint ([`crate::state::hint`]) and loaded
/// nothing: the first exec, `fork` or `posix_spawn` loads the policy (then as
/// PENDING).
pub const HINTED: u8 = 4;

/// Which of the states above the process is in. On the constructor's page (see
/// [`crate::hooks::init`]): every hook reads it.
#[link_section = ".data.envshim_ctor"]
static STATE: AtomicU8 = AtomicU8::new(EMPTY);

/// The state, read with Acquire: what it publishes may be read after.
#[inline(always)]
pub fn state() -> u8 {
    STATE.load(Ordering::Acquire)
}

/// The state, read with no ordering: for the `fork` child's look, which only
/// decides whether to store.
pub fn state_relaxed() -> u8 {
    STATE.load(Ordering::Relaxed)
}

/// Publishes `state` (Release): what the caller wrote before is visible to
/// whoever reads it.
pub fn set_state(state: u8) {
    STATE.store(state, Ordering::Release);
}

/// Moves the state from `from` to BUSY; true for the one thread that did.
pub fn claim(from: u8) -> bool {
    STATE
        .compare_exchange(from, BUSY, Ordering::Acquire, Ordering::Acquire)
        .is_ok()
}

/// A policy cell: written once, before the store that publishes it.
struct ActiveCell(UnsafeCell<MaybeUninit<Option<Active>>>);

// SAFETY: a cell is written only by the one thread that claimed it (the state
// moved to BUSY, or the reload flag of `crate::state::policy`), before the
// Release store that publishes it (READY, or a generation); readers load that
// with Acquire and read only what it publishes.
unsafe impl Sync for ActiveCell {}

impl ActiveCell {
    const fn new() -> Self {
        ActiveCell(UnsafeCell::new(MaybeUninit::uninit()))
    }
}

/// The policy validated at the first exec. Not written by the constructor: it lies
/// away from the constructor's page and costs a process that never spawns nothing.
#[link_section = ".data.envshim_zero"]
static ACTIVE: ActiveCell = ActiveCell::new();

/// How many times a process loads its policy file again after an edit; the last
/// cell holds the floor (see [`crate::state::policy::follow_edit`]).
pub const RELOADS: usize = 16;

/// The policies loaded again after an edit.
#[link_section = ".data.envshim_zero"]
static RELOADED: [ActiveCell; RELOADS] = [const { ActiveCell::new() }; RELOADS];
/// 0: `ACTIVE` is in force; g: `RELOADED[g - 1]` is. On the constructor's page,
/// which every hook reads anyway (see [`crate::hooks::init`]).
#[link_section = ".data.envshim_ctor"]
static GENERATION: AtomicU8 = AtomicU8::new(0);

/// Writes the first validated policy and publishes it (READY).
///
/// # Safety
/// Only by the thread that moved the state to BUSY ([`claim`]), once per process.
pub unsafe fn publish_first(active: Option<Active>) {
    // SAFETY: this thread alone moved the state to BUSY; nobody reads `ACTIVE`
    // before READY is stored below, and it is never written again.
    unsafe { (*ACTIVE.0.get()).write(active) };
    set_state(READY);
}

/// The generation in force: how many reloads were published.
pub fn generation() -> usize {
    GENERATION.load(Ordering::Acquire) as usize
}

/// Writes reload number `g` (the [`generation`] the caller read) and publishes it;
/// false, writing nothing, when the process has used up its [`RELOADS`].
///
/// # Safety
/// Only by the one thread that holds the reload flag, with `g` read under it.
pub unsafe fn publish_reload(g: usize, active: Option<Active>) -> bool {
    let Some(cell) = RELOADED.get(g) else {
        return false;
    };
    // SAFETY: the caller alone holds the reload flag, and cell `g` was never
    // published (GENERATION is `g`): nobody reads it before the store below.
    unsafe { (*cell.0.get()).write(active) };
    GENERATION.store(g as u8 + 1, Ordering::Release);
    true
}

/// The validated policy: the first one, or the latest the process loaded again
/// after an edit.
///
/// # Safety
/// Only after the state was seen READY (Acquire), which publishes it.
pub unsafe fn validated() -> Option<&'static Active> {
    let cell = match generation() {
        0 => &ACTIVE,
        // A generation is published (Release) only after its cell was written.
        g => RELOADED.get(g - 1)?,
    };
    // SAFETY: READY is stored only after `ACTIVE` was written (caller's contract),
    // and a generation only after its cell was; no cell is written twice.
    unsafe { (*cell.0.get()).assume_init_ref().as_ref() }
}

/// `f` with the policy already validated for this process, else the built-in
/// default (`None` if even that fails validation): for the writer of messages
/// ([`crate::state::message`]), which must neither load nor wait for a policy.
pub fn with_ready<R>(f: impl FnOnce(Option<&Policy<'_>>) -> R) -> R {
    if state() == READY {
        // SAFETY: READY publishes `active`, which is never written again.
        if let Some(a) = unsafe { validated() } {
            return f(Some(&a.policy));
        }
    }
    f(builtin().as_ref().map(|a| &a.policy))
}

/// The built-in default, validated on the caller's stack.
pub fn builtin() -> Option<Active> {
    let policy = Policy::from_bytes(DEFAULT).ok()?;
    Some(Active {
        policy,
        source: b"<built-in>",
        warning: None,
        retry: None,
    })
}

/// The fail-closed floor.
pub fn floor() -> Option<Policy<'static>> {
    Policy::from_bytes(FLOOR).ok()
}
