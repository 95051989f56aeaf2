//! [`Scratch`]: where the policy builds the filtered argv and envp of one exec.
//!
//! A `Scratch` lives on the hook's stack. It is a bump arena: [`Scratch::reserve`]
//! sizes it once for everything the filter will build (pointer arrays and string
//! bytes), then [`Scratch::take_ptrs`] and [`Scratch::take_bytes`] hand out disjoint
//! pieces. Small jobs (up to [`INLINE_BYTES`], i.e. 3 KiB) use an array on the
//! hook's stack. Larger ones use an anonymous `mmap` region; there is no cap
//! that truncates: when the mapping cannot be made, `reserve` fails with `E2BIG` and the
//! filter refuses the exec with `E2BIG`.
//!
//! # The region, and `vfork`
//!
//! A mapping made in a `vfork` child (or any `CLONE_VM` child, such as CPython's
//! `_posixsubprocess`) is made in the *parent's* address space. If the child's exec
//! fails we unmap it as usual, but if the exec *succeeds* nobody is left to unmap it,
//! and a naive design would leak one mapping per large spawn in the parent.
//!
//! So the region is not per call but per thread, reused: each thread has one slot in
//! initial-exec TLS (`csrc/support.c`) holding a cached mapping and an `owner` pid. A
//! `vfork` child runs on its parent thread's TLS while that thread is suspended, so
//! the two never use the slot at the same time. Claiming the slot writes our pid into
//! `owner`; releasing it writes 0. If a `vfork` child exec'd while holding the slot,
//! `owner` is left holding the child's pid: the parent thread, which only resumes
//! after that exec, sees an owner that is not itself and takes the slot back. The
//! mapping is therefore reused, never leaked, and never unmapped under someone.
//! If `owner` equals our own pid, the slot is in use further up this very thread's
//! stack (a signal handler that execs, interrupting a hook): we then use a private
//! mapping for this call and unmap it afterwards.
//!
//! What remains:
//! * one cached region per thread that ever made a large spawn stays mapped until the
//!   thread's process execs or exits (it is at most [`KEEP_MAX`]; larger regions are
//!   unmapped when released, except after a successful exec in a `vfork` child, where
//!   the parent thread keeps it cached and reuses or shrinks it on its next large
//!   spawn); a thread that exits leaves its region mapped (at most [`KEEP_MAX`] each);
//! * a `CLONE_VM` child created *without* `CLONE_VFORK` that runs concurrently with its
//!   parent thread and both spawn with large environments could share the slot; no
//!   known program does this (glibc's `posix_spawn`, CPython and Rust's std all use
//!   `CLONE_VFORK` or `fork`).

use core::cell::{Cell, UnsafeCell};
use core::ffi::{c_char, c_int};
use core::mem::{align_of, size_of, MaybeUninit};
use core::sync::atomic::{compiler_fence, AtomicI32, Ordering};

/// Bytes of the inline (stack) arena: 3 KiB, enough for the filter's arrays of an
/// environment of about 30 variables without a mapping. It is kept under a page
/// on purpose: a frame larger than a page probes every page of it, and in a fork
/// child every stack page an exec touches is a page fault (about 2 us here; a
/// 16 KiB arena made four of them in every child of a shell). Larger jobs use the
/// thread's cached region, which a process that execs often maps once.
pub const INLINE_BYTES: usize = 384 * size_of::<usize>();
/// Regions up to this size stay cached in the thread's slot after use.
pub const KEEP_MAX: usize = 1 << 20;
/// Granularity of region sizes.
const REGION_ROUND: usize = 64 * 1024;

/// Must match `struct envshim_tls_slot` in csrc/support.c.
#[repr(C)]
struct TlsSlot {
    ptr: *mut u8,
    len: usize,
    owner: AtomicI32,
}

extern "C" {
    fn envshim_tls_slot() -> *mut TlsSlot;
}

enum Region {
    None,
    /// The thread's cached region, claimed by us.
    Cached {
        ptr: *mut u8,
        len: usize,
    },
    /// A region only for this call (the slot was busy).
    Private {
        ptr: *mut u8,
        len: usize,
    },
}

/// The inline arena: a separate local of the hook, left uninitialised. (Inside
/// `Scratch` itself, LLVM zeroed all of it at every hook when it initialised the
/// other fields with one `memset`.)
pub struct Inline(UnsafeCell<MaybeUninit<[usize; INLINE_BYTES / size_of::<usize>()]>>);

impl Inline {
    /// Costs nothing: no byte is written.
    #[inline(always)]
    pub const fn uninit() -> Self {
        Inline(UnsafeCell::new(MaybeUninit::uninit()))
    }
}

/// Storage for the filtered arrays of one exec. See the module docs.
pub struct Scratch<'a> {
    inline: &'a Inline,
    region: Region,
    /// Whether the current arena is `region` (else the inline array).
    on_region: Cell<bool>,
    /// Capacity reserved by the last `reserve` (bytes), in the current arena.
    cap: Cell<usize>,
    /// Bytes handed out so far.
    used: Cell<usize>,
    /// Whether a take since the last `reserve` held a secret's value
    /// ([`Scratch::take_secret_bytes`]): the bytes handed out are then wiped
    /// before the arena is reused or released.
    holds_secret: Cell<bool>,
}

impl<'a> Scratch<'a> {
    /// An empty scratch over `inline`.
    #[inline]
    pub const fn new(inline: &'a Inline) -> Self {
        Scratch {
            inline,
            region: Region::None,
            on_region: Cell::new(false),
            cap: Cell::new(0),
            used: Cell::new(0),
            holds_secret: Cell::new(false),
        }
    }

    /// Makes room for `ptrs` pointers plus `bytes` bytes, and forgets earlier takes.
    /// Err(`E2BIG`) when the size overflows or no memory can be mapped: the caller
    /// must then refuse the exec with `E2BIG`, never truncate.
    pub fn reserve(&mut self, ptrs: usize, bytes: usize) -> Result<(), c_int> {
        let need = ptrs
            .checked_mul(size_of::<*const c_char>())
            .and_then(|p| p.checked_add(bytes))
            .and_then(|t| t.checked_add(align_of::<usize>()))
            .ok_or(libc::E2BIG)?;
        self.wipe_if_secret();
        self.used.set(0);
        if need <= INLINE_BYTES {
            self.on_region.set(false);
            self.cap.set(INLINE_BYTES);
            return Ok(());
        }
        if let Region::Cached { len, .. } | Region::Private { len, .. } = self.region {
            if len >= need {
                self.on_region.set(true);
                self.cap.set(len);
                return Ok(());
            }
        }
        self.release();
        self.region = claim(need)?;
        if let Region::Cached { len, .. } | Region::Private { len, .. } = self.region {
            self.on_region.set(true);
            self.cap.set(len);
        }
        Ok(())
    }

    fn base(&self) -> *mut u8 {
        match self.region {
            Region::Cached { ptr, .. } | Region::Private { ptr, .. } if self.on_region.get() => ptr,
            _ => self.inline.0.get().cast::<u8>(),
        }
    }

    /// Bytes reserved and not handed out yet (before any alignment).
    pub fn remaining(&self) -> usize {
        self.cap.get().saturating_sub(self.used.get())
    }

    /// `n` pointers (set to NULL), or None if that exceeds what was reserved.
    #[allow(clippy::mut_from_ref)]
    pub fn take_ptrs(&self, n: usize) -> Option<&mut [*const c_char]> {
        let align = align_of::<*const c_char>();
        let start = self.used.get().checked_add(align - 1)? & !(align - 1);
        let bytes = n.checked_mul(size_of::<*const c_char>())?;
        let end = start.checked_add(bytes)?;
        if end > self.cap.get() {
            return None;
        }
        self.used.set(end);
        // SAFETY: [start, end) lies inside the current arena (inline array or mapped
        // region, both at least `cap` bytes and pointer-aligned at their base; `start`
        // is aligned), and no other take overlaps it because `used` only grows until
        // the next `reserve`, which needs `&mut self` and so ends every borrow.
        unsafe {
            let p = self.base().add(start).cast::<*const c_char>();
            for i in 0..n {
                p.add(i).write(core::ptr::null());
            }
            Some(core::slice::from_raw_parts_mut(p, n))
        }
    }

    /// `n` bytes (zeroed), or None if that exceeds what was reserved.
    #[allow(clippy::mut_from_ref)]
    pub fn take_bytes(&self, n: usize) -> Option<&mut [u8]> {
        let start = self.used.get();
        let end = start.checked_add(n)?;
        if end > self.cap.get() {
            return None;
        }
        self.used.set(end);
        // SAFETY: as in `take_ptrs`; bytes need no alignment.
        unsafe {
            let p = self.base().add(start);
            core::ptr::write_bytes(p, 0, n);
            Some(core::slice::from_raw_parts_mut(p, n))
        }
    }

    /// `n` values of `T`, each set to `init`, or None if that exceeds what was
    /// reserved. `T` is `Copy`, so nothing is ever dropped.
    #[allow(clippy::mut_from_ref)]
    pub fn take_init<T: Copy>(&self, n: usize, init: T) -> Option<&mut [T]> {
        self.take_with(n, |_| init)
    }

    /// `n` values of `T`, value `i` being `f(i)`, or None if that exceeds what was
    /// reserved: [`Scratch::take_init`] without writing every value twice.
    #[allow(clippy::mut_from_ref)]
    pub fn take_with<T: Copy>(&self, n: usize, mut f: impl FnMut(usize) -> T) -> Option<&mut [T]> {
        let align = align_of::<T>();
        let start = self.used.get().checked_add(align - 1)? & !(align - 1);
        let bytes = n.checked_mul(size_of::<T>())?;
        let end = start.checked_add(bytes)?;
        if end > self.cap.get() {
            return None;
        }
        self.used.set(end);
        // SAFETY: [start, end) lies inside the current arena and overlaps no other
        // take (as in `take_ptrs`); the arena base is aligned to `usize`, and
        // `start` is rounded up to `align_of::<T>()`, which for the types the filter
        // uses is at most that; every element is written before the slice is made.
        unsafe {
            let p = self.base().add(start).cast::<T>();
            for i in 0..n {
                p.add(i).write(f(i));
            }
            Some(core::slice::from_raw_parts_mut(p, n))
        }
    }

    /// `n` bytes (zeroed) that will hold a secret's value: like
    /// [`Scratch::take_bytes`], and everything handed out since the last
    /// `reserve` is wiped when the arena is reserved again or released (an exec
    /// that failed, a refusal). After a successful exec the memory is gone.
    #[allow(clippy::mut_from_ref)]
    pub fn take_secret_bytes(&self, n: usize) -> Option<&mut [u8]> {
        self.holds_secret.set(true);
        self.take_bytes(n)
    }

    /// Zero, with volatile writes the compiler cannot drop, every byte handed
    /// out since the last `reserve`, when one take held a secret (the values
    /// themselves, and the entries the decision built from them).
    #[inline]
    fn wipe_if_secret(&self) {
        if !self.holds_secret.get() {
            return;
        }
        let base = self.base();
        let used = self.used.get();
        let words = used / size_of::<usize>();
        for i in 0..words {
            // SAFETY: [0, used) lies inside the current arena (every take checked
            // it against `cap`), whose base is aligned to `usize`; no borrow of it
            // is alive: `reserve` and `release` hold `&mut self`.
            unsafe { core::ptr::write_volatile(base.cast::<usize>().add(i), 0) };
        }
        for i in words * size_of::<usize>()..used {
            // SAFETY: as above, byte by byte for the tail.
            unsafe { core::ptr::write_volatile(base.add(i), 0) };
        }
        compiler_fence(Ordering::SeqCst);
        self.holds_secret.set(false);
    }

    fn release(&mut self) {
        self.wipe_if_secret();
        match core::mem::replace(&mut self.region, Region::None) {
            Region::None => {}
            Region::Private { ptr, len } => unmap(ptr, len),
            Region::Cached { ptr, len } => {
                // SAFETY: the slot pointer is this thread's TLS; we own it (owner ==
                // our pid) until the store of 0 below.
                unsafe {
                    let slot = envshim_tls_slot();
                    if len > KEEP_MAX {
                        unmap(ptr, len);
                        (*slot).ptr = core::ptr::null_mut();
                        (*slot).len = 0;
                    }
                    compiler_fence(Ordering::SeqCst);
                    (*slot).owner.store(0, Ordering::Relaxed);
                }
            }
        }
        self.on_region.set(false);
        self.cap.set(0);
        self.used.set(0);
    }
}

impl Drop for Scratch<'_> {
    fn drop(&mut self) {
        let saved = crate::platform::sys::errno();
        self.release();
        crate::platform::sys::set_errno(saved);
    }
}

fn round_up(n: usize) -> Option<usize> {
    Some(n.checked_add(REGION_ROUND - 1)? & !(REGION_ROUND - 1))
}

fn map(len: usize) -> Option<*mut u8> {
    crate::platform::sys::raw_mmap(len)
}

fn unmap(ptr: *mut u8, len: usize) {
    // SAFETY: (ptr, len) is a mapping this module made and nobody uses any more.
    unsafe { crate::platform::sys::raw_munmap(ptr, len) };
}

/// Claims the thread's cached region (growing it if needed), or a private one.
fn claim(need: usize) -> Result<Region, c_int> {
    let len = round_up(need).ok_or(libc::E2BIG)?;
    // A plain system call: correct in a vfork child, where it returns the child's pid.
    let me = crate::platform::sys::raw_getpid();
    // This thread's TLS slot, accessed through the raw pointer only (a signal handler
    // on this thread may touch it too; see the module docs for who else can).
    // SAFETY: envshim_tls_slot() returns this thread's slot, valid for the thread's life.
    let slot = unsafe { envshim_tls_slot() };
    // The blocks below rely on: `slot` is valid (above) and, once `owner` holds our
    // pid, no one else reads or writes `ptr`/`len` until we store 0 again.
    // SAFETY: see above.
    if unsafe { (*slot).owner.load(Ordering::Relaxed) } == me {
        // In use further up this thread's stack (we interrupted a hook).
        return map(len)
            .map(|ptr| Region::Private { ptr, len })
            .ok_or(libc::E2BIG);
    }
    // SAFETY: see above.
    unsafe { (*slot).owner.store(me, Ordering::Relaxed) };
    // A signal handler that runs after this point sees the slot as ours; one that ran
    // before it has finished, so the fields read below are current.
    compiler_fence(Ordering::SeqCst);
    // SAFETY: see above.
    let (cur, cur_len) = unsafe { ((*slot).ptr, (*slot).len) };
    if !cur.is_null() && cur_len >= need {
        return Ok(Region::Cached {
            ptr: cur,
            len: cur_len,
        });
    }
    if !cur.is_null() {
        unmap(cur, cur_len);
        // SAFETY: see above.
        unsafe {
            (*slot).ptr = core::ptr::null_mut();
            (*slot).len = 0;
        }
    }
    match map(len) {
        Some(ptr) => {
            // SAFETY: see above.
            unsafe {
                (*slot).ptr = ptr;
                (*slot).len = len;
            }
            Ok(Region::Cached { ptr, len })
        }
        None => {
            compiler_fence(Ordering::SeqCst);
            // SAFETY: see above.
            unsafe { (*slot).owner.store(0, Ordering::Relaxed) };
            Err(libc::E2BIG)
        }
    }
}

/// The core's pipeline builds in the scratch ([`envpolicy_core::pipeline`]).
impl envpolicy_core::pipeline::Arena for Scratch<'_> {
    #[inline]
    fn take_with<T: Copy>(&self, n: usize, f: impl FnMut(usize) -> T) -> Option<&mut [T]> {
        Scratch::take_with(self, n, f)
    }

    #[inline]
    fn take_bytes(&self, n: usize) -> Option<&mut [u8]> {
        Scratch::take_bytes(self, n)
    }

    #[inline]
    fn remaining(&self) -> usize {
        Scratch::remaining(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inline arena's first `n` bytes, read after the scratch over it is gone.
    fn inline_bytes(inline: &Inline, n: usize) -> Vec<u8> {
        // SAFETY: the arena is `INLINE_BYTES` long, `n` is below that, and the
        // bytes read were written by the test (then wiped, or not).
        unsafe { core::slice::from_raw_parts(inline.0.get().cast::<u8>(), n).to_vec() }
    }

    const VALUE: &[u8] = b"not-a-real-token-0123456789";

    #[test]
    fn a_secret_taken_is_wiped_when_the_scratch_is_dropped_or_reserved_again() {
        for again in [false, true] {
            let inline = Inline::uninit();
            {
                let mut scratch = Scratch::new(&inline);
                scratch.reserve(0, 256).unwrap();
                let plain = scratch.take_bytes(8).unwrap();
                plain.copy_from_slice(b"ordinary");
                let held = scratch.take_secret_bytes(VALUE.len()).unwrap();
                held.copy_from_slice(VALUE);
                if again {
                    scratch.reserve(0, 256).unwrap();
                }
            }
            let after = inline_bytes(&inline, 8 + VALUE.len());
            assert!(
                after.iter().all(|&b| b == 0),
                "not wiped (reserved again: {again})"
            );
        }
    }

    #[test]
    fn a_scratch_that_held_no_secret_is_not_wiped() {
        let inline = Inline::uninit();
        {
            let mut scratch = Scratch::new(&inline);
            scratch.reserve(0, 256).unwrap();
            scratch.take_bytes(8).unwrap().copy_from_slice(b"ordinary");
        }
        assert_eq!(inline_bytes(&inline, 8), b"ordinary");
    }
}
