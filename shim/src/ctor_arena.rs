//! Bytes the constructor keeps for the life of the process: the captured sticky
//! strings, the configured policy's path, envwrap's path and the one warning.
//!
//! They are packed one after another in a single static arena, so that a process
//! touches one page of it for all of them. (As one fixed-size buffer each, every
//! string dirtied a page of its own: a page fault and 4 KiB of memory per string,
//! in every process.) The arena is in `.bss` and only the bytes written count.
//!
//! Written only by the constructor, before the strings are published to other
//! threads (each user publishes with a Release store of its own); never written
//! again. A string that does not fit is refused, never cut.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicUsize, Ordering};

/// Room for every string at its largest (own path, `LD_PRELOAD` entry,
/// `ENVSHIM_POLICY` entry, policy path, envwrap path, warning).
pub const ARENA_BYTES: usize = 4 * 4096 + 8192 + 1024 + 64;

struct Arena {
    used: AtomicUsize,
    bytes: UnsafeCell<[u8; ARENA_BYTES]>,
}

// SAFETY: each call to `keep` reserves a range no other call gets (`fetch_add`),
// writes it once, and hands out a shared slice only after the write; kept ranges
// are never written again.
unsafe impl Sync for Arena {}

static ARENA: Arena = Arena {
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
    let start = ARENA.used.fetch_add(len, Ordering::Relaxed);
    let end = start.checked_add(len).filter(|&e| e <= ARENA_BYTES)?;
    let base = ARENA.bytes.get().cast::<u8>();
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
