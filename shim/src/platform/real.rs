//! The real libc functions behind our hooks: what `dlsym(RTLD_NEXT, name)` returns.
//!
//! They are resolved once, by [`resolve_all`] from the library constructor, and stored
//! in atomics; the hooks only load those atomics. The constructor finds them with one
//! walk over the loaded objects ([`crate::platform::next_object`]), which gives what
//! `dlsym(RTLD_NEXT)` gives at a fraction of its cost, and asks `dlsym` for any name
//! the walk does not settle. `dlsym` takes the loader's lock and may allocate, so it
//! must never run between `fork` and `exec`.
//!
//! One exception, on purpose: a hook called *before our constructor ran* resolves the
//! function it needs on demand. That only happens while the dynamic loader is still
//! running other libraries' constructors (a preloaded library is initialised after the
//! libraries the program depends on, so their constructors run first and may spawn).
//! It never happens after `fork` in a running program: by the time `main` (or any code
//! that can fork a multithreaded process) runs, our constructor has completed.
//!
//! Eleven real functions are needed: every `exec*` variant is rebuilt on the real
//! `execve` (glibc's own `execvp`, `execl*` call an internal `__execve` we cannot hook,
//! so calling them would be fine but would hide the PATH search from us), `system`
//! and `popen` are rebuilt on the real `posix_spawn`, `fork` is passed on after
//! the work of [`crate::hooks::fork`], and `fclose` and `freopen` are passed on after
//! [`crate::hooks::popen`] has reaped the child of a stream of ours, as glibc's do.
//! `pidfd_spawn` and `pidfd_spawnp` exist from glibc 2.39 on: on an older C
//! library the walk finds them absent, their slots stay NULL and `dlsym` is not
//! asked, so one library built against glibc 2.36 runs on both.
//!
//! One is not a function: glibc's `__libc_single_threaded` flag
//! ([`crate::state::env_cache`] reads it), which glibc has from 2.32 on. Linked,
//! it would need the version GLIBC_2.32, and the loader refuses a library that
//! needs a version the C library lacks; looked up here, it is NULL on glibc 2.31.
//! What the walk finds is libc's own byte, as `dlsym(RTLD_NEXT)` would. In a
//! program that copied the flag into itself (a copy relocation), glibc 2.35 and
//! later keep libc's byte true as well; 2.32 to 2.34 update only the copy and
//! leave libc's at 0, so the cache is claimed as in a threaded process: slower,
//! never wrong.
//!
//! `dlsym` itself is not linked either: since glibc 2.34 it is `dlsym@GLIBC_2.34` in
//! libc.so.6, a version an older glibc does not have, and the loader refuses to
//! load a library that needs a version the C library lacks (every program would
//! fail to start). So it is found by the same walk, by name, on the paths that
//! need it, which no process start takes: on glibc 2.34 and later in libc.so.6,
//! before that in libdl.so.2 when the program loaded it. Without one, a name the
//! walk did not settle stays NULL, and its hook fails with ENOSYS.
//!
//! A lookup that returns an address inside this library means the loader handed us
//! back to ourselves (the shim is loaded twice, or linked without `RTLD_NEXT`
//! semantics): calling it would recurse forever, so we say so on fd 2 and abort.

use core::ffi::{c_char, c_int, c_void};
use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use crate::platform::next_object::Name;
use crate::platform::sys;

pub type ExecveFn =
    unsafe extern "C" fn(*const c_char, *const *const c_char, *const *const c_char) -> c_int;
pub type FexecveFn =
    unsafe extern "C" fn(c_int, *const *const c_char, *const *const c_char) -> c_int;
pub type ExecveatFn = unsafe extern "C" fn(
    c_int,
    *const c_char,
    *const *const c_char,
    *const *const c_char,
    c_int,
) -> c_int;
pub type PosixSpawnFn = unsafe extern "C" fn(
    *mut libc::pid_t,
    *const c_char,
    *const libc::posix_spawn_file_actions_t,
    *const libc::posix_spawnattr_t,
    *const *const c_char,
    *const *const c_char,
) -> c_int;
pub type PcloseFn = unsafe extern "C" fn(*mut libc::FILE) -> c_int;
pub type FcloseFn = unsafe extern "C" fn(*mut libc::FILE) -> c_int;
pub type FreopenFn =
    unsafe extern "C" fn(*const c_char, *const c_char, *mut libc::FILE) -> *mut libc::FILE;
pub type ForkFn = unsafe extern "C" fn() -> libc::pid_t;
type DlsymFn = unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void;

/// Which real function.
#[derive(Clone, Copy)]
#[repr(usize)]
pub enum Func {
    Execve = 0,
    Fexecve,
    Execveat,
    PosixSpawn,
    PosixSpawnp,
    Pclose,
    Fork,
    Fclose,
    Freopen,
    PidfdSpawn,
    PidfdSpawnp,
    SingleThreaded,
}
const COUNT: usize = 12;

/// NUL-terminated names, indexed by `Func`, with their hashes.
const NAMES: [Name; COUNT] = [
    Name::new(b"execve\0"),
    Name::new(b"fexecve\0"),
    Name::new(b"execveat\0"),
    Name::new(b"posix_spawn\0"),
    Name::new(b"posix_spawnp\0"),
    Name::new(b"pclose\0"),
    Name::new(b"fork\0"),
    Name::new(b"fclose\0"),
    Name::new(b"freopen\0"),
    Name::new(b"pidfd_spawn\0"),
    Name::new(b"pidfd_spawnp\0"),
    Name::new(b"__libc_single_threaded\0"),
];

#[link_section = ".data.envshim_ctor"]
static REAL: [AtomicPtr<c_void>; COUNT] = [const { AtomicPtr::new(core::ptr::null_mut()) }; COUNT];
/// Set (Release) once the constructor has resolved everything.
#[link_section = ".data.envshim_ctor"]
static RESOLVED: AtomicBool = AtomicBool::new(false);

extern "C" {
    /// Linker-defined: this object's ELF header (the start of its image) and the end
    /// of its image. Hidden, so they bind to this object's own definitions.
    static __ehdr_start: u8;
    static _end: u8;
}

/// Looks one name up with `dlsym(RTLD_NEXT)`; aborts if it names ourselves. NULL
/// when there is no `dlsym` to ask (see the module docs).
#[cold]
#[inline(never)]
fn lookup(f: Func) -> *mut c_void {
    let name = NAMES.get(f as usize).map_or(&b"\0"[..], |n| n.bytes);
    let Some(dlsym) = find_dlsym() else {
        return core::ptr::null_mut();
    };
    // SAFETY: `name` is NUL-terminated; dlsym is called from code inside this library
    // (it finds its caller by the return address, which is here), so RTLD_NEXT means
    // "the next object after libenvshim.so". Not on an exec path.
    let p = unsafe { dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) };
    not_ours(name, p)
}

/// The C library's `dlsym`, found by the walk over the loaded objects (see the
/// module docs for why it is not linked).
fn find_dlsym() -> Option<DlsymFn> {
    let [addr] = crate::platform::next_object::find(&[Name::new(b"dlsym\0")]).addrs;
    let p = not_ours(b"dlsym\0", addr);
    if p.is_null() {
        None
    } else {
        // SAFETY: the default definition of `dlsym` in a loaded object, whose C
        // signature is `DlsymFn`.
        Some(unsafe { core::mem::transmute::<*mut c_void, DlsymFn>(p) })
    }
}

/// `p`, unless it lies inside this library: then the lookup for `name` found our own
/// hook, and calling it would recurse forever, so say so on fd 2 and abort.
fn not_ours(name: &'static [u8], p: *mut c_void) -> *mut c_void {
    // Only the addresses of the linker-defined symbols are taken, never read.
    let (lo, hi) = (&raw const __ehdr_start, &raw const _end);
    if !p.is_null() && (p as usize) >= lo as usize && (p as usize) < hi as usize {
        sys::abort_saying(&[
            b"envshim: dlsym(RTLD_NEXT, \"",
            name.split_last().map(|(_, s)| s).unwrap_or(&[]),
            b"\") returned libenvshim.so's own symbol; refusing to recurse",
        ]);
    }
    p
}

/// Resolves every real function. Called once, from the constructor; returns this
/// library's name as the loader recorded it (NULL if unknown), which the walk over
/// the loaded objects finds on the way ([`crate::platform::next_object`]). A name the walk
/// does not settle is asked of `dlsym`.
// Inlined into both callers (the constructor, and `describe` for the library run
// as a program), so that the constructor's code is what it is with one caller.
#[inline(always)]
pub fn resolve_all() -> *const c_char {
    let saved = sys::errno();
    let found = crate::platform::next_object::find(&NAMES);
    for (i, (slot, &addr)) in REAL.iter().zip(found.addrs.iter()).enumerate() {
        let f = match i {
            0 => Func::Execve,
            1 => Func::Fexecve,
            2 => Func::Execveat,
            3 => Func::PosixSpawn,
            4 => Func::PosixSpawnp,
            5 => Func::Pclose,
            6 => Func::Fork,
            7 => Func::Fclose,
            8 => Func::Freopen,
            9 => Func::PidfdSpawn,
            10 => Func::PidfdSpawnp,
            _ => Func::SingleThreaded,
        };
        let name = NAMES.get(i).map_or(&b"\0"[..], |n| n.bytes);
        let absent = found.absent.get(i).copied().unwrap_or(false);
        let p = if !addr.is_null() {
            not_ours(name, addr)
        } else if absent {
            core::ptr::null_mut()
        } else {
            lookup(f)
        };
        slot.store(p, Ordering::Relaxed);
    }
    RESOLVED.store(true, Ordering::Release);
    sys::set_errno(saved);
    found.own_name
}

/// The real function's address, or NULL when libc lacks it.
#[inline]
fn get(f: Func) -> *mut c_void {
    let slot = match REAL.get(f as usize) {
        Some(s) => s,
        None => return core::ptr::null_mut(),
    };
    let p = slot.load(Ordering::Acquire);
    if !p.is_null() || RESOLVED.load(Ordering::Acquire) {
        return p;
    }
    // Before our constructor: another library's constructor is spawning. See the
    // module docs for why this dlsym can never run after fork.
    let saved = sys::errno();
    let p = lookup(f);
    slot.store(p, Ordering::Release);
    sys::set_errno(saved);
    p
}

macro_rules! getter {
    ($name:ident, $f:expr, $ty:ty) => {
        /// The real function, if libc has it.
        #[inline]
        pub fn $name() -> Option<$ty> {
            let p = get($f);
            if p.is_null() {
                None
            } else {
                // SAFETY: dlsym returned the address of libc's function of this name,
                // whose C signature is exactly `$ty`.
                Some(unsafe { core::mem::transmute::<*mut c_void, $ty>(p) })
            }
        }
    };
}

getter!(execve, Func::Execve, ExecveFn);
getter!(fexecve, Func::Fexecve, FexecveFn);
getter!(execveat, Func::Execveat, ExecveatFn);
getter!(posix_spawn, Func::PosixSpawn, PosixSpawnFn);
// posix_spawnp has the same C signature as posix_spawn.
getter!(posix_spawnp, Func::PosixSpawnp, PosixSpawnFn);
getter!(pclose, Func::Pclose, PcloseFn);
getter!(fork, Func::Fork, ForkFn);
getter!(fclose, Func::Fclose, FcloseFn);
getter!(freopen, Func::Freopen, FreopenFn);
// pidfd_spawn(int *pidfd, ...) has posix_spawn's C signature: its first argument is
// where the pidfd goes, an `int` as `pid_t` is. NULL before glibc 2.39.
getter!(pidfd_spawn, Func::PidfdSpawn, PosixSpawnFn);
getter!(pidfd_spawnp, Func::PidfdSpawnp, PosixSpawnFn);

/// glibc's `__libc_single_threaded` flag (a byte), or NULL before glibc 2.32.
#[inline]
pub fn libc_single_threaded() -> *const c_char {
    get(Func::SingleThreaded).cast_const().cast()
}
