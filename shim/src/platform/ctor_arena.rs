//! Bytes the constructor keeps for the life of the process: the captured sticky
//! strings, the configured policy's path and its cache's, envwrap's path and the
//! one warning.
//!
//! They are packed one after another in a static arena, so that a process touches
//! one page of it for all of them. (As one fixed-size buffer each, every string
//! dirtied a page of its own: a page fault and 4 KiB of memory per string, in every
//! process.) The usual strings fit in the first [`HOT_BYTES`], which lie in `.data`
//! with the constructor's other statics, on the page the loader has already
//! written (see [`crate::hooks::init`]); longer ones go to a zero-initialised arena further
//! on (shim/layout.ld), where only the pages written count.
//!
//! Written by the constructor, and by the first exec when it finishes the check
//! the constructor deferred (the one warning, see [`crate::state::load::finish`]), before
//! the strings are published to other threads (each user publishes with a Release
//! store of its own); a kept string is never written again. A string that does not
//! fit is refused, never cut.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicUsize, Ordering};

/// Room for every string at its largest (own path, `LD_PRELOAD` entry,
/// `ENVSHIM_POLICY` entry, policy path, envwrap path, warning).
pub const ARENA_BYTES: usize = 4 * 4096 + 8192 + 1024 + 64;
/// Room for the usual strings, on the constructor's page.
pub const HOT_BYTES: usize = 640;

struct Arena<const N: usize> {
    used: AtomicUsize,
    bytes: UnsafeCell<[u8; N]>,
}

// SAFETY: each call to `keep_in` reserves a range no other call gets (`fetch_add`),
// writes it once, and hands out a shared slice only after the write; kept ranges
// are never written again.
unsafe impl<const N: usize> Sync for Arena<N> {}

#[link_section = ".data.envshim_ctor"]
static HOT: Arena<HOT_BYTES> = Arena {
    used: AtomicUsize::new(0),
    bytes: UnsafeCell::new([0; HOT_BYTES]),
};

#[link_section = ".data.envshim_zero"]
static ARENA: Arena<ARENA_BYTES> = Arena {
    used: AtomicUsize::new(0),
    bytes: UnsafeCell::new([0; ARENA_BYTES]),
};

/// Copies the concatenation of `parts` into the arena and returns it; `None` when
/// it is longer than `cap` or the arena is full.
pub fn keep(parts: &[&[u8]], cap: usize) -> Option<&'static [u8]> {
    let len = parts.iter().map(|p| p.len()).sum::<usize>();
    if len > cap {
        return None;
    }
    keep_in(&HOT, parts, len).or_else(|| keep_in(&ARENA, parts, len))
}

fn keep_in<const N: usize>(
    arena: &'static Arena<N>,
    parts: &[&[u8]],
    len: usize,
) -> Option<&'static [u8]> {
    // Reserve only if it fits (a failed reservation must not use up the room).
    let start = arena
        .used
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
            used.checked_add(len).filter(|&e| e <= N)
        })
        .ok()?;
    let end = start.checked_add(len)?;
    let base = arena.bytes.get().cast::<u8>();
    let mut at = start;
    for part in parts {
        // SAFETY: [start, end) lies inside the arena (checked above) and was
        // reserved by this call alone; `part` is a separate object.
        unsafe { core::ptr::copy_nonoverlapping(part.as_ptr(), base.add(at), part.len()) };
        at += part.len();
    }
    // SAFETY: the range is inside the arena, fully written above, and never
    // written again.
    Some(unsafe { core::slice::from_raw_parts(base.add(start), end - start) })
}
