//! The policy this process enforces: found at load, validated once, followed
//! through edits, read in place.
//!
//! The shim never parses TOML (docs/adr/0002-compiled-policy.md). The built-in
//! default and the fail-closed floor are compiled into the library at build time;
//! a policy file is used through its compiled cache ([`crate::state::load`]).
//!
//! [`with_active`] is what the filter calls. The constructor records which compiled
//! bytes to enforce; the first exec validates them (see [`CONSTRUCTOR_FOUND`]) and
//! publishes them in [`crate::state::in_force`], where every later reader finds
//! them. Before the constructor ran (another library's constructor spawning), the
//! built-in default is validated on the spot, which needs no allocation.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use envpolicy_core::{Policy, Records};

use crate::state::in_force::{
    self, builtin, floor, validated, Active, Retry, BUSY, DEFAULT, EMPTY, FLOOR, HINTED, PENDING,
    READY, RELOADS,
};
use crate::state::load::{Deferred, Loaded, PolicyFileNow};

impl Retry {
    /// The file at `path_c` as it is now (one `stat`).
    fn now(path_c: &'static [u8]) -> Retry {
        Retry {
            path_c,
            before: crate::platform::fs::stamp_now(path_c),
        }
    }

    /// A policy file that failed to load where its stamp could not be taken
    /// before the load without every load paying for it (at start, and at the
    /// check the constructor deferred): stamped now, after the failure, so an edit
    /// made during the load is followed from the next edit on. Only an absolute
    /// path is followed: a relative one (it could not be made absolute) would name
    /// another file after a `cd`.
    fn after_failure(path_c: &'static [u8]) -> Option<Retry> {
        (path_c.first() == Some(&b'/')).then(|| Retry::now(path_c))
    }

    /// Whether the file changed since the failed load (one `stat`).
    fn file_changed(&self) -> bool {
        crate::platform::fs::stamp_now(self.path_c) != self.before
    }
}

/// What the constructor found: the compiled bytes to enforce, not yet validated.
#[derive(Clone, Copy)]
struct Pending {
    bytes: &'static [u8],
    source: &'static [u8],
    warning: Option<&'static [u8]>,
    /// The part of the cache's check that the constructor left to the first exec
    /// (`load::finish`); `None` once done, or when there was none.
    deferred: Option<Deferred>,
    /// When `bytes` is the floor standing in for a policy file that failed to
    /// load: that file, followed from then on ([`Retry`], [`follow_edit`]).
    retry: Option<Retry>,
}

impl Pending {
    fn of(loaded: Loaded) -> Pending {
        match loaded {
            Loaded::Builtin { warning } => Pending {
                bytes: DEFAULT,
                source: b"<built-in>",
                warning,
                deferred: None,
                retry: None,
            },
            Loaded::File {
                policy,
                source,
                deferred,
            } => Pending {
                bytes: policy.as_bytes(),
                source,
                warning: None,
                deferred,
                retry: None,
            },
            // The shim's own floor, whatever the failure marker holds.
            Loaded::Floor { source, warning } => Pending {
                bytes: FLOOR,
                source,
                warning,
                deferred: None,
                retry: None,
            },
        }
    }

    /// The same, following `retry`'s file when this is the floor standing in for it.
    fn following(self, retry: Option<Retry>) -> Pending {
        Pending {
            retry: retry.filter(|_| core::ptr::eq(self.bytes, FLOOR)),
            ..self
        }
    }
}

/// The constructor records the policy's bytes (`PENDING`: a private copy of the
/// cache file, never a mapping of it, see [`crate::state::load`]); the first exec
/// finishes the cache's check if the constructor deferred part of it
/// (`complete`), validates the bytes (`BUSY`) and publishes them
/// ([`in_force::publish_first`], `READY`), so a process that never spawns never
/// pays for any of it. None of it allocates or takes a lock, so it may run in a
/// `vfork` child, whose writes land in the parent's memory: the parent then finds
/// the policy validated. A thread that finds another one validating validates a
/// private copy on its stack instead of waiting.
///
/// On the constructor's page, with the state word (see [`crate::hooks::init`]).
#[link_section = ".data.envshim_ctor"]
static CONSTRUCTOR_FOUND: PendingCell = PendingCell(UnsafeCell::new(None));

struct PendingCell(UnsafeCell<Option<Pending>>);

// SAFETY: written once, by the constructor, before the state becomes PENDING
// (Release); readers load the state with Acquire and read this only at PENDING
// or later.
unsafe impl Sync for PendingCell {}

/// A thread is loading the policy again. On the constructor's page: every `fork`
/// child reads it (`after_fork_in_child`), and a page the parent never touched
/// would be a page fault in each of them.
#[link_section = ".data.envshim_ctor"]
static RELOADING: AtomicBool = AtomicBool::new(false);
/// When the `fork` hook last looked at the policy file, in microseconds.
#[link_section = ".data.envshim_zero"]
static LAST_LOOK_US: AtomicU64 = AtomicU64::new(0);
/// The `fork` hook looks at the policy file at most this often: each child looks
/// at its exec anyway (see [`follow_edit`]).
const LOOK_EVERY_US: u64 = 100_000;

/// Keeps the policy in force equal to the policy file as it is now, at an exec,
/// `fork` or `posix_spawn`: one `stat` of the file; when it changed since this
/// process loaded it, the file is loaded again (compiled first when needed, as at
/// a start) and enforced from this call on; when it is gone, the process keeps the
/// policy it loaded (`load::PolicyFileNow::Gone`). Returns whether the policy in
/// force is the policy file as it is now, which the start-up hint needs
/// ([`crate::state::hint`]).
///
/// Nothing is replaced in place: each reload publishes a new cell, so a thread
/// (or an interrupted hook) still deciding with the previous policy is not
/// disturbed. An edit that does not load gives the floor, with the loader's
/// warning, and the file is still followed: its next edit is loaded as any edit
/// is ([`Retry`]). After `RELOADS - 1` reloads the last cell holds the fail-closed
/// floor, with a warning: a process whose policy keeps changing is not followed
/// further, nor left laxer. A thread that finds another one reloading decides
/// with the policy in force.
pub fn follow_edit() -> bool {
    with_active(|active| {
        let Some(a) = active else { return false };
        if let Some(retry) = a.retry {
            return retry.file_changed() && reload(a);
        }
        if a.is_floor() || a.is_default() {
            return false;
        }
        match crate::state::load::policy_file_now(&a.policy, a.source) {
            PolicyFileNow::Unchanged => true,
            PolicyFileNow::Gone => false,
            PolicyFileNow::Changed => reload(a),
        }
    })
}

/// [`follow_edit`] in the `fork` hook: at most once per [`LOOK_EVERY_US`], so that a
/// shell's children inherit the edited policy instead of each loading it.
pub fn follow_edit_before_fork() {
    // SAFETY: gettimeofday through its wrapper has no preconditions; glibc's reads
    // the vDSO's clock and takes no lock.
    let Ok(now) = u64::try_from(unsafe { crate::platform::cold::now_us() }) else {
        return;
    };
    if now.wrapping_sub(LAST_LOOK_US.load(Ordering::Relaxed)) < LOOK_EVERY_US {
        return;
    }
    LAST_LOOK_US.store(now, Ordering::Relaxed);
    follow_edit();
}

/// The reload of [`follow_edit`]: true when the policy now in force is the file.
#[cold]
#[inline(never)]
fn reload(stale: &Active) -> bool {
    if RELOADING.swap(true, Ordering::Acquire) {
        return false;
    }
    let g = in_force::generation();
    let fresh = g < RELOADS
        && {
            let saved = crate::platform::sys::errno();
            let active = if g + 1 < RELOADS {
                load_again(stale)
            } else {
                floor().map(|policy| Active {
                policy,
                source: stale.source,
                warning: Some(
                    b"envshim: the policy file changed too often in this process's life: its children are judged under the fail-closed floor until it restarts",
                ),
                retry: None,
            })
            };
            crate::platform::sys::set_errno(saved);
            if let Some(w) = active.as_ref().and_then(|a| a.warning) {
                crate::state::message::say(w);
            }
            let fresh = active.as_ref().is_some_and(|a| !a.is_floor());
            // SAFETY: this thread alone holds RELOADING, under which `g` was read.
            let published = unsafe {
                in_force::publish_reload(g, active.map(|a| Active { warning: None, ..a }))
            };
            published && fresh
        };
    RELOADING.store(false, Ordering::Release);
    fresh
}

/// The policy file `stale` came from (or, on the floor of a failed reload, the
/// file that failed), loaded again: a floor that stands in for it carries the
/// [`Retry`] that lets the next edit be tried.
fn load_again(stale: &Active) -> Option<Active> {
    let path_c = match stale.retry {
        Some(retry) => Some(retry.path_c),
        None => crate::state::load::source_path(&stale.policy),
    };
    let retry = path_c.map(Retry::now);
    validate(complete(
        Pending::of(crate::state::load::reload(path_c)).following(retry),
    ))
}

/// Called once by the constructor, with `argv[0]`: finds the configured policy and
/// maps its compiled cache, compiling it first when it is missing or stale (see
/// `load`). Only the header of the compiled form is read here.
///
/// A process that takes the start-up hint ([`crate::state::hint::taken`]) does none of it:
/// returns false, and the policy is loaded where it is first needed. True when the
/// policy was loaded, and the constructor may look at it (`with_peeked`).
#[inline(always)] // As `real::resolve_all`.
pub fn init(prog: &[u8]) -> bool {
    if crate::state::hint::taken(prog) {
        in_force::set_state(HINTED);
        return false;
    }
    let saved = crate::platform::sys::errno();
    let loaded = crate::state::load::load(prog);
    // A policy file that does not load at start is followed as after a failed
    // reload (its stamp taken on this failure path only).
    let retry = match loaded {
        Loaded::Floor { .. } if !crate::state::load::compiling() => {
            crate::state::hint::captured_policy_c().and_then(Retry::after_failure)
        }
        _ => None,
    };
    let pending = Pending::of(loaded).following(retry);
    crate::platform::sys::set_errno(saved);
    // SAFETY: the constructor runs once, before any reader (state is still EMPTY,
    // so readers do not touch `pending`).
    unsafe { *CONSTRUCTOR_FOUND.0.get() = Some(pending) };
    in_force::set_state(PENDING);
    true
}

/// The thread loading the policy of a process that took the start-up hint (its
/// thread id), so that a signal handler that interrupted it does not wait for it.
#[link_section = ".data.envshim_ctor"]
static LOADER: AtomicI32 = AtomicI32::new(0);
/// How long a thread waits for another one's load ([`wait_for_loader`]): longer
/// than a compile may take (10 s, [`crate::state::load`]).
const WAIT_FOR_LOADER_US: i64 = 12_000_000;

fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { crate::platform::sys::sys_call!(libc::SYS_gettid) as i32 }
}

/// In a process that took the start-up hint, another thread is loading the policy
/// (the state is BUSY): wait for it, yielding, and return the policy it
/// published. `None` when this thread is the one loading (a signal handler
/// interrupted it), when the load ended otherwise (a `fork` child), or when it
/// takes longer than a compile may: then the caller loads for itself.
///
/// The one wait on an exec path (docs/adr/0015): without it each racing exec
/// would map and check the policy again, once per candidate of a `PATH` search.
/// It is bounded, and it never waits for its own thread.
#[cold]
#[inline(never)]
fn wait_for_loader() -> Option<Option<&'static Active>> {
    if LOADER.load(Ordering::Acquire) == gettid() {
        return None;
    }
    // SAFETY: gettimeofday through its wrapper has no preconditions.
    let start = unsafe { crate::platform::cold::now_us() };
    loop {
        match in_force::state() {
            // SAFETY: READY publishes `active`.
            READY => return Some(unsafe { validated() }),
            BUSY => {}
            _ => return None,
        }
        // SAFETY: as above.
        if unsafe { crate::platform::cold::now_us() } - start > WAIT_FOR_LOADER_US {
            return None;
        }
        // SAFETY: sched_yield has no preconditions.
        unsafe { crate::platform::cold::sched_yield() };
    }
}

/// The load the constructor left to the first exec, `fork` or `posix_spawn` of a
/// process that took the start-up hint: the policy file the hint was for, checked
/// in full (compiled first when stale), as the constructor of a process without a
/// hint would have found it (`load::load_at`).
///
/// The thread that moved the state from HINTED to BUSY publishes what this
/// returns. Another thread that execs meanwhile waits for it
/// ([`wait_for_loader`]); a signal handler that interrupted the load, or a thread
/// that waited too long, runs it too, for itself, and decides with a policy on its
/// stack, keeping its copy of that cache. No exec is judged under anything but the
/// policy.
///
/// A file that does not load now is followed, as after a failed reload
/// ([`Pending::following`]).
fn load_hinted() -> Option<Pending> {
    let path_c = crate::state::hint::captured_policy_c()?;
    let saved = crate::platform::sys::errno();
    let retry = Retry::now(path_c);
    let loaded = Pending::of(crate::state::load::load_at(path_c)).following(Some(retry));
    crate::platform::sys::set_errno(saved);
    Some(loaded)
}

fn validate(p: Pending) -> Option<Active> {
    match Policy::from_bytes(p.bytes) {
        Ok(policy) => Some(Active {
            policy,
            source: p.source,
            warning: p.warning,
            retry: p.retry,
        }),
        // A cache that passed the header check but not the full one: fail closed.
        Err(_) => floor().map(|policy| Active {
            policy,
            source: p.source,
            warning: Some(
                b"envshim: the compiled policy cache is corrupt: using the fail-closed floor",
            ),
            retry: None,
        }),
    }
}

/// The check of the cache that the constructor deferred, if any (`load::finish`,
/// which may compile the policy again and so change what is enforced).
///
/// Called only by the thread that moved the state from PENDING to BUSY. Another
/// thread that execs meanwhile validates the constructor's bytes (see `Slot`),
/// not yet checked against the files the policy imports; that window is one
/// compile long, at most, once per process.
fn complete(p: Pending) -> Pending {
    let Some(deferred) = p.deferred else {
        return p;
    };
    let saved = crate::platform::sys::errno();
    let done = Pending::of(crate::state::load::finish(deferred));
    // A policy file whose deferred check fails is followed as one that failed at
    // start (its stamp taken on this failure path only).
    let retry = core::ptr::eq(done.bytes, FLOOR)
        .then(|| Retry::after_failure(deferred.policy_path_c()))
        .flatten();
    let done = done.following(retry);
    crate::platform::sys::set_errno(saved);
    done
}

/// In a `fork` child: the thread that was finishing the policy (BUSY) when another
/// thread forked does not exist here, so the state goes back to PENDING and this
/// process's first exec does the work itself. (Otherwise every exec of the child
/// would validate a private copy, of bytes whose deferred check never ran.) A
/// load, and a write only in that rare case: a compare-and-swap always writes on
/// x86, which in a fork child is a copy-on-write fault.
pub fn after_fork_in_child() {
    // The thread that was loading the policy again is not in this process.
    if RELOADING.load(Ordering::Relaxed) {
        RELOADING.store(false, Ordering::Release);
    }
    if in_force::state_relaxed() == BUSY {
        // The constructor's policy, or (it took the hint) none yet.
        let back = if pending().is_some() { PENDING } else { HINTED };
        in_force::set_state(back);
    }
}

fn pending() -> Option<Pending> {
    // SAFETY: called only after `state` was seen (Acquire) at PENDING or later,
    // which publishes `pending`; never written again.
    unsafe { *CONSTRUCTOR_FOUND.0.get() }
}

/// Run `f` with the policy in force (`None` only if even the built-in policy
/// failed validation, which a test of the build rules out).
///
/// The usual case, a policy already validated, is a load and a call: the paths
/// that validate hold a whole `Policy` on the stack and are in
/// `with_active_slow`, so that the hooks' frames stay small. (In a fork child
/// every stack page an exec touches is a page fault: a frame over one page probes,
/// and so faults, every page of it.)
#[inline(always)]
pub fn with_active<R>(f: impl FnOnce(Option<&Active>) -> R) -> R {
    match in_force::state() {
        // SAFETY: READY publishes `active`, which is never written again.
        READY => f(unsafe { validated() }),
        state => with_active_slow(state, f),
    }
}

/// [`with_active`] when the policy is not validated yet (`state` is not READY).
#[inline(never)]
#[cold]
fn with_active_slow<R>(state: u8, f: impl FnOnce(Option<&Active>) -> R) -> R {
    match state {
        PENDING | HINTED => {
            if in_force::claim(state) {
                let first = if state == HINTED {
                    LOADER.store(gettid(), Ordering::Release);
                    load_hinted()
                } else {
                    pending()
                };
                let active = first.map(complete).and_then(validate);
                // SAFETY: this thread moved the state to BUSY, just now.
                unsafe { in_force::publish_first(active) };
                // SAFETY: as for READY in `with_active`.
                return f(unsafe { validated() });
            }
            // Another thread moved it first.
            with_active_slow(in_force::state(), f)
        }
        // SAFETY: READY publishes `active` (a thread moved the state since the
        // caller's load).
        READY => f(unsafe { validated() }),
        BUSY => match pending() {
            Some(p) => f(validate(p).as_ref()),
            // The constructor took the hint: another thread is loading the policy.
            None => match wait_for_loader() {
                Some(ready) => f(ready),
                None => f(load_hinted().map(complete).and_then(validate).as_ref()),
            },
        },
        // Before our constructor: validate the built-in policy on the stack.
        _ => f(builtin().as_ref()),
    }
}

/// Run `f` with the policy's compiled form checked only as far as its header
/// (`Policy::peek`), without validating it: for the constructor's own questions
/// (is there a log file, does self-scrub apply), which must not make every process
/// pay for a full validation.
pub fn with_peeked<R>(f: impl FnOnce(Option<&Records<'static>>) -> R) -> R {
    let bytes = match in_force::state() {
        EMPTY | HINTED => DEFAULT,
        _ => pending().map_or(DEFAULT, |p| p.bytes),
    };
    f(Policy::peek(bytes).ok().as_ref())
}
