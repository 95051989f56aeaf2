//! Finding the configured policy and copying in its compiled cache, in the constructor
//! (and finishing its check at the first exec).
//!
//! The shim never parses TOML (docs/adr/0002-compiled-policy.md). A policy file is
//! used through its compiled cache, a file envwrap writes (`envwrap compile`,
//! `envpolicy::cache`); the cache's name, layout and freshness rule are in
//! [`envpolicy_core::cache_key`], shared with envwrap, and this module applies them with
//! raw system calls (every libc function imported from Rust costs a symbol lookup
//! at load in every process; see `sys.rs`).
//!
//! What the constructor does, in order:
//!
//! 1. **Which policy** (docs/policy.md, section 2, as `envpolicy::load::locate` finds it): `ENVSHIM_POLICY`
//!    from the initial environment; else `$XDG_CONFIG_HOME/envshim/policy.toml`
//!    (`$HOME/.config/...` when unset), then `/etc/envshim/policy.toml`, each only if
//!    it exists; else the built-in default, with no further system call.
//!    `ENVSHIM_POLICY` naming a missing file means the floor, with a warning. The
//!    path is made absolute with the working directory (`cache_key::absolute_into`),
//!    and that absolute path is the `ENVSHIM_POLICY` entry rule 8 puts back in
//!    every child, also for a policy found by lookup (`sticky::keep_policy`).
//!    When the lookup finds nothing, that entry is `ENVSHIM_POLICY=:builtin`
//!    (`sticky::keep_builtin`), and a process loaded with it
//!    ([`envpolicy_core::lookup::names_builtin`]) takes the built-in default with no
//!    lookup at all: a tree started under the built-in default stays on it.
//! 2. **Where its cache is**: `cache_key::cache_dir_parts` (`$ENVSHIM_CACHE_DIR`,
//!    else `/run/user/<uid>/envshim` when that directory is ours, else
//!    `/tmp/envshim-<uid>`; never under `HOME`, docs/adr/0012-cache-location.md),
//!    then `cache_key::cache_file_name`.
//! 3. **Trust**: the cache file must be a regular file (opened with `O_NOFOLLOW`),
//!    owned by our uid (`AT_UID` of the auxiliary vector) and not writable by group
//!    or others (a cache someone else wrote could weaken the policy); so must the
//!    cache directory, if it exists. An untrusted directory means the floor, without
//!    compiling (envwrap would refuse to write there); an untrusted file is compiled
//!    again (the rename replaces it).
//! 4. **Copy and check**: the file is read whole with `read(2)` into memory of
//!    this process ([`Mapping`]: a static room for the first cache, else an
//!    anonymous mapping), never mapped: any process of the user may truncate,
//!    rewrite or replace the file at any moment, and a mapping of it would then
//!    be a `SIGBUS` in every process that mapped it (docs/adr/0022-private-copies-of-shared-state.md).
//!    A size that changed during the read means the file is not used. Then
//!    `cache_key::open_peek` (the header and section table only: the full
//!    validation waits for the first exec, see [`crate::state::policy`]), then
//!    `cache_key::check`: compiled from this very path, and every dependency and
//!    note unchanged.
//! 5. **Compile when missing or stale**: run `envwrap compile --output CACHE -- POLICY`
//!    with the real `posix_spawn` and wait for it, at most `COMPILE_LIMIT_MS`, and
//!    only until a signal for the program arrives ([`crate::state::helper`]): either way the
//!    compile is killed and the floor applies. envwrap is `$ENVSHIM_ENVWRAP`, else
//!    `envwrap` beside libenvshim.so. Its environment holds only `PATH`, `HOME` (for
//!    `~/` in imports; never `LD_PRELOAD`: a dynamically linked envwrap would load
//!    us again) and `ENVSHIM_COMPILING=1`, which makes a shim loaded into it anyway
//!    (`/etc/ld.so.preload`) skip all of this, so a compile can never recurse. Its
//!    stderr is ours: when the policy is malformed, envwrap's own line
//!    (`envwrap: FILE:LINE:COL: message`) is this process's one warning. Then step 4
//!    again, and the result must be fresh this time.
//!
//! **What waits for the first exec.** Steps 3 and 4 are split when nothing happens at
//! load: the policy keeps no log, does not self-scrub a program of this name, and is
//! not a failure marker (all three read from the cache, once the policy file itself
//! is known to be unchanged). The constructor then checks the cache file's trust and
//! the policy file's `stat` only (`cache_key::check_policy_file`), and [`finish`]
//! does the rest at the first exec, before the policy decides anything: the cache
//! directory, the files the policy imports, the notes, and a compile when they
//! changed. A process that never spawns makes three system calls fewer; one that
//! spawns makes the same ones, later. What the policy file alone says (its
//! settings, the programs it names) is current at every start, so an edit that
//! turns on self-scrub or a log applies at the next start. A compile at the first
//! exec runs inside the program, once per change of an import: every signal is
//! blocked while envwrap runs, and the `SIGCHLD` its exit raises is taken off
//! ([`crate::state::helper`]), so no handler of the program runs for it, in a `vfork` child
//! least of all; another thread's `wait` for any child could still collect it.
//!
//! **Edits and hints.** A process that took the start-up hint runs all of this at
//! its first exec instead ([`load_at`]), and a running process whose policy
//! file changed runs it again ([`reload`]); both are driven by [`crate::state::policy`]
//! (docs/adr/0015-start-up-hint.md).
//!
//! **Failure markers.** A policy that does not compile leaves a failure marker as its
//! cache: the floor, the warning text, and the stamps of the files involved. A later
//! process start finds it fresh and enforces the floor without running envwrap, and
//! carries the warning in [`Loaded::Floor`] so that the filter prints it once, at the
//! first exec (a process that never spawns stays quiet). The floor enforced is always
//! the shim's own, built in; the marker only contributes its source path and warning.
//!
//! **Failing closed.** Anything else that goes wrong with a configured policy (no
//! envwrap, a spawn error, an untrusted directory, a path too long or not UTF-8, a
//! cache still unusable after compiling) means the floor, with a warning naming the
//! file and the reason, never a value.
//!
//! Every copy that is used stays for the life of the process; one that is
//! rejected is given back before the next attempt. No allocation, no panics.

use core::cell::UnsafeCell;
use core::ffi::{c_char, c_int};
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, Ordering};
use envpolicy_core::shown::Piece::{self, Text, Word};

use envpolicy_core::cache_key::{self, Stamp};
use envpolicy_core::lookup::Kind;
use envpolicy_core::Records;

use crate::platform::fs::{fstat, getuid, stamp_of, stat_at, stat_c, PathBuf, PathSpace, PATH_MAX};
use crate::platform::sys;
use crate::state::helper::{self, Waited};
use crate::state::sticky;

/// Larger cache files are not read: the limit every front end reads a cache
/// file with.
const MAX_CACHE_BYTES: usize = envpolicy_core::readable::CACHE_FILE.bytes as usize;
/// Set in envwrap's environment while it compiles for us (see the module docs).
const COMPILING: &[u8] = envpolicy_core::shared::COMPILING.as_bytes();

/// What the constructor found. (Returned once, by value: the size of `File`'s
/// decoded policy does not matter, and there is no heap to box it on.)
#[derive(Clone, Copy)]
#[allow(clippy::large_enum_variant)]
pub enum Loaded {
    /// No policy file applies: the built-in default. `warning` is set when
    /// `ENVSHIM_POLICY` named a file that does not exist.
    Builtin { warning: Option<&'static [u8]> },
    /// The policy file's compiled cache, copied; `source` is its path. `deferred`:
    /// checked only as far as a process start needs, the rest to do at the first
    /// exec (see [`finish`]).
    File {
        policy: Records<'static>,
        source: &'static [u8],
        deferred: Option<Deferred>,
    },
    /// The fail-closed floor instead of the policy file `source`. `warning` is what
    /// to show once (`None` when envwrap already said it on this process's stderr).
    Floor {
        source: &'static [u8],
        warning: Option<&'static [u8]>,
    },
}

/// A string written once by the constructor, read-only afterwards; its bytes
/// live in [`crate::platform::ctor_arena`], `N` is the longest accepted.
struct CtorBuf<const N: usize> {
    taken: AtomicBool,
}

impl<const N: usize> CtorBuf<N> {
    const fn new() -> Self {
        CtorBuf {
            taken: AtomicBool::new(false),
        }
    }

    /// Copies `src` in (once) and returns the stored bytes; `None` when already
    /// written or too long.
    fn set(&'static self, src: &[u8]) -> Option<&'static [u8]> {
        if src.len() > N || self.taken.swap(true, Ordering::AcqRel) {
            return None;
        }
        crate::platform::ctor_arena::keep(&[src], N)
    }
}

/// The configured policy's absolute path, NUL-terminated.
#[link_section = ".data.envshim_ctor"]
static POLICY_PATH: CtorBuf<{ PATH_MAX + 1 }> = CtorBuf::new();
/// The one warning.
#[link_section = ".data.envshim_ctor"]
static WARNING: CtorBuf<1024> = CtorBuf::new();

/// Room for the usual path: the constructor builds its paths here first and takes a
/// [`PathSpace`] only for a longer one, in a function of its own. (A 4 KiB local
/// costs a stack page fault in every process that loads the shim: functions with a
/// frame over one page probe every page of it.)
type ShortPath = [MaybeUninit<u8>; 256];

/// Why a stat'ed directory or file is not trusted, if it is not.
fn untrusted(st: &libc::stat, uid: u32, want: libc::mode_t) -> Option<&'static [u8]> {
    if st.st_mode & libc::S_IFMT != want {
        return Some(if want == libc::S_IFDIR {
            b"not a directory"
        } else {
            b"not a regular file"
        });
    }
    if st.st_uid != uid {
        return Some(b"owned by another user");
    }
    if st.st_mode & 0o022 != 0 {
        return Some(b"writable by group or others");
    }
    None
}

/// Why a file a policy was compiled from is not trusted now, if it is not: the
/// rule of [`envpolicy_core::writers`] (owner root or us, not writable by others, nor
/// by a group other than our private one, which the compile recorded), without
/// following the symbolic links again (the compiler did).
fn untrusted_dep(st: &libc::stat, uid: u32, private_gid: Option<u32>) -> Option<&'static [u8]> {
    envpolicy_core::writers::judge(st.st_uid, st.st_gid, st.st_mode, uid, private_gid)
        .err()
        .map(envpolicy_core::writers::Untrusted::short)
}

/// The `stat` behind a freshness check of the cache (`cache_key::check` and
/// `check_policy_file`): the stamp of `p`, a file the policy was compiled from,
/// with the first such file found untrusted now noted in `distrust` (its path
/// without the NUL, and why).
fn stamp_noting_distrust(
    p: &'static [u8],
    (uid, private_gid): (u32, Option<u32>),
    distrust: &mut Option<(&'static [u8], &'static [u8])>,
) -> Option<Stamp> {
    let st = stat_c(p).ok()?;
    if distrust.is_none() {
        *distrust = untrusted_dep(&st, uid, private_gid).map(|why| (without_nul(p), why));
    }
    Some(stamp_of(&st))
}

/// The policy file a running process loaded, as it is now ([`crate::state::policy::follow_edit`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum PolicyFileNow {
    /// The stamp it was compiled with: the policy in force is the file.
    Unchanged,
    /// Edited, replaced, or its mode or owner changed (its stamp changed).
    Changed,
    /// Not there: the process keeps the policy it loaded, as one that never
    /// looked would (a file may be missing for a moment while it is rewritten);
    /// processes started now get the floor.
    Gone,
}

/// The policy file `path`, which `policy` was compiled from, now: one `stat`,
/// compared as `cache_key::check_policy_file` compares it.
pub fn policy_file_now(policy: &Records<'_>, path: &[u8]) -> PolicyFileNow {
    let mut gone = false;
    let fresh = cache_key::check_policy_file(policy, path, |p| match stat_c(p) {
        Ok(st) => Some(stamp_of(&st)),
        Err(e) => {
            gone = matches!(e, libc::ENOENT | libc::ENOTDIR);
            None
        }
    });
    match (fresh, gone) {
        (Ok(()), _) => PolicyFileNow::Unchanged,
        (Err(_), true) => PolicyFileNow::Gone,
        (Err(_), false) => PolicyFileNow::Changed,
    }
}

/// Room for the first cache file a process reads: the policy's compiled form
/// is usually a few KiB, and reading it here costs no system call beyond the
/// `read` itself. Larger files, and any read after this room is taken, go into
/// an anonymous mapping of their own ([`Room`]).
///
/// Its pages are in the library's writable segment (away from the
/// constructor's page, shim/layout.ld): once written, a `fork` child inherits
/// their page-table entries and reads the policy without a page fault, which a
/// file mapping that was never written would not give it.
const FIRST_BYTES: usize = 16 << 10;

/// A page more than [`FIRST_BYTES`]: the room starts at its first page boundary
/// ([`first_room`]), so that a usual cache (under 4 KiB) is one page to write,
/// one page fault, where a room that straddled a boundary would cost two. (Not
/// `align(4096)`, which would align the whole output section and move every
/// static above it.)
struct FirstCell(UnsafeCell<[u8; FIRST_BYTES + PAGE]>);

const PAGE: usize = 4096;

/// The start of the room in [`FIRST`]: its first page boundary.
fn first_room() -> *mut u8 {
    let p = FIRST.0.get().cast::<u8>();
    let off = p.align_offset(PAGE).min(PAGE);
    // SAFETY: `off` is at most PAGE, so `p + off` and the FIRST_BYTES after it
    // are inside FIRST (FIRST_BYTES + PAGE bytes long).
    unsafe { p.add(off) }
}
// SAFETY: written only by the holder of `FIRST_TAKEN` (one `read_cache` at a
// time), and read only through the `Mapping` it returns, which lives as long as
// the process unless it is given back by `Mapping::unmap`, after every slice of
// it is dead.
unsafe impl Sync for FirstCell {}

/// In a section of its own, laid out last in the writable segment
/// (shim/layout.ld), where its size moves no static that a process start
/// writes.
#[link_section = ".envshim_first"]
static FIRST: FirstCell = FirstCell(UnsafeCell::new([0; FIRST_BYTES + PAGE]));
/// [`FIRST`] holds a cache (or is being read into). On the constructor's page,
/// which a process start writes anyway.
#[link_section = ".data.envshim_ctor"]
static FIRST_TAKEN: AtomicBool = AtomicBool::new(false);

/// A private copy of a whole cache file: its bytes, read with `read(2)` into
/// memory of this process that nothing else maps.
///
/// Not a mapping of the file: another process of the user (or any child of the
/// tree) may truncate, rewrite or replace the file at any moment, and a mapping
/// of it, `MAP_PRIVATE` or not, would then be a `SIGBUS` at the next read of a
/// page past the new end, in every process that mapped it. A copy never changes
/// under the policy that was validated from it, and what the file becomes after
/// the read is judged by the next process that reads it.
pub(crate) struct Mapping {
    ptr: *mut u8,
    len: usize,
    /// Bytes of the anonymous mapping that holds the copy; 0 for [`FIRST`].
    room: usize,
}

impl Mapping {
    /// The copied bytes, for as long as the copy is not `unmap`ped.
    pub(crate) fn bytes(&self) -> &'static [u8] {
        // SAFETY: `ptr` is `len` initialised bytes of FIRST or of our own
        // anonymous mapping, written once by `read_cache` and never again; it is
        // given back only by `unmap`, which callers use only after every slice of
        // it is dead.
        unsafe { core::slice::from_raw_parts(self.ptr, self.len) }
    }

    fn unmap(self) {
        Room {
            ptr: self.ptr,
            room: self.room,
        }
        .give_back();
    }
}

/// Memory for one copy of a cache file: [`FIRST`] when it is free and large
/// enough, else an anonymous private mapping.
struct Room {
    ptr: *mut u8,
    /// 0 for [`FIRST`].
    room: usize,
}

impl Room {
    /// Room for `len` bytes.
    fn take(len: usize) -> Option<Room> {
        if len <= FIRST_BYTES && !FIRST_TAKEN.swap(true, Ordering::Acquire) {
            return Some(Room {
                ptr: first_room(),
                room: 0,
            });
        }
        let ptr = sys::raw_mmap(len)?;
        Some(Room { ptr, room: len })
    }

    /// The room as a buffer of `len` bytes (no more than it was taken for).
    fn buf(&mut self, len: usize) -> &mut [u8] {
        // SAFETY: the room is at least `len` writable bytes (see `take`), held by
        // this `Room` alone until it becomes a `Mapping` or is given back; an
        // anonymous mapping and FIRST are both initialised (zero-filled).
        unsafe { core::slice::from_raw_parts_mut(self.ptr, len) }
    }

    fn give_back(self) {
        if self.room == 0 {
            FIRST_TAKEN.store(false, Ordering::Release);
        } else {
            // SAFETY: our own mapping, which nothing uses any more.
            unsafe { sys::raw_munmap(self.ptr, self.room) };
        }
    }
}

/// Reads the open file `fd` into `buf`, `len` bytes by its `fstat` and room for
/// one more (a file that grew): the count, or `None` on an error. One `read`
/// when the file is as long as it was, which a regular file gives whole:
/// another one, which would only say the end, is not made. A shorter read
/// (interrupted, or a file cut meanwhile) reads on to the end.
#[inline(always)] // Into `map_cache`, whose text a process start runs (shim/hot_text.ld).
fn read_whole(fd: c_int, buf: &mut [u8], len: usize) -> Option<usize> {
    let first = loop {
        // SAFETY: `buf` is a writable buffer of `buf.len()` bytes.
        let r = unsafe { sys::sys_call!(libc::SYS_read, fd, buf.as_mut_ptr(), buf.len()) };
        if r >= 0 {
            break r as usize;
        }
        if sys::errno() != libc::EINTR {
            return None;
        }
    };
    if first >= len || first == 0 {
        return Some(first);
    }
    let rest = crate::platform::fs::read_all(fd, buf.get_mut(first..)?)?;
    Some(first + rest)
}

pub(crate) enum MapError {
    /// No cache file (or not openable): compile.
    Missing,
    /// A cache file we must not read: compile (the rename replaces it).
    Untrusted(&'static [u8]),
    /// A cache file we cannot use as it is now (not a regular file, empty, too
    /// large, changed while it was read): compile.
    Unusable(&'static [u8]),
}

/// Open, check and copy the cache file at `path` (NUL-terminated).
pub(crate) fn map_cache(path: &[u8], uid: u32) -> Result<Mapping, MapError> {
    // SAFETY: `path` is NUL-terminated (callers build it with `c_bytes`).
    let fd = unsafe {
        crate::platform::sys::sys_call!(
            libc::SYS_openat,
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW | libc::O_NOCTTY | libc::O_NONBLOCK,
            0 as c_int,
        )
    } as c_int;
    if fd < 0 {
        return match sys::errno() {
            libc::ELOOP => Err(MapError::Untrusted(b"a symbolic link")),
            _ => Err(MapError::Missing),
        };
    }
    let result = read_cache(fd, uid);
    sys::close(fd);
    result
}

/// The open cache file `fd`, checked on its `fstat` (a regular file, ours, not
/// writable by others: a FIFO or a device is never read) and copied whole. A
/// file whose size changed between the `fstat` and the end of the read (one
/// byte more is asked for, to see it grow) is not used: the caller compiles
/// again, or enforces the floor.
fn read_cache(fd: c_int, uid: u32) -> Result<Mapping, MapError> {
    let st = fstat(fd).map_err(|_| MapError::Missing)?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        // A FIFO, a device, a socket, a directory: never read.
        return Err(MapError::Unusable(b"not a regular file"));
    }
    if let Some(why) = untrusted(&st, uid, libc::S_IFREG) {
        return Err(MapError::Untrusted(why));
    }
    let len = usize::try_from(st.st_size).unwrap_or(usize::MAX);
    if len == 0 || len > MAX_CACHE_BYTES {
        return Err(MapError::Unusable(b"empty or too large"));
    }
    let mut room = Room::take(len + 1).ok_or(MapError::Missing)?;
    let got = read_whole(fd, room.buf(len + 1), len);
    if got != Some(len) {
        room.give_back();
        return Err(MapError::Unusable(b"changed while it was read"));
    }
    Ok(Mapping {
        ptr: room.ptr,
        len,
        room: room.room,
    })
}

// ---------------------------------------------------------------------------
// The lookup.

/// A value of the initial environment, if set and not empty (with its NUL).
fn env_c(name: &[u8]) -> Option<&'static [u8]> {
    // SAFETY: `environ` is a NULL-terminated array of NUL-terminated strings; the
    // constructor runs before the program can change it.
    let p = unsafe { sys::env_get(sys::environ_ptr(), name) }?;
    // SAFETY: `p` points to a NUL-terminated value; it stays valid while we use it
    // (the constructor only; nothing here keeps it past `load`'s return except
    // through copies).
    let n = unsafe { sys::strlen(p) };
    if n == 0 {
        return None;
    }
    // SAFETY: `n + 1` bytes (the value and its NUL) are readable.
    Some(unsafe { core::slice::from_raw_parts(p.cast::<u8>(), n + 1) })
}

fn without_nul(c: &[u8]) -> &[u8] {
    c.strip_suffix(b"\0").unwrap_or(c)
}

/// Pointer to the `NAME=VALUE` entry of `name` in the initial environment.
fn env_entry(name: &[u8]) -> Option<*const c_char> {
    // SAFETY: as in `env_c`.
    let v = unsafe { sys::env_get(sys::environ_ptr(), name) }?;
    // SAFETY: `env_get` returned a pointer `name.len() + 1` bytes into the entry.
    Some(unsafe { v.sub(name.len() + 1) })
}

/// A warning, built in a stack buffer of [`Piece`]s (a path or name may hold
/// a secret: a token can arrive as a directory name) and then stored once.
fn warn(parts: &[Piece<'_>]) -> Option<&'static [u8]> {
    let mut m = crate::state::message::Msg::<1024>::new();
    m.push_pieces(parts);
    WARNING.set(m.as_bytes())
}

fn floor(source: &'static [u8], parts: &[Piece<'_>]) -> Loaded {
    Loaded::Floor {
        source,
        warning: warn(parts),
    }
}

/// Whether this process is the envwrap the shim runs to compile a policy
/// (`ENVSHIM_COMPILING`), in which a shim loaded anyway enforces the floor.
pub fn compiling() -> bool {
    env_c(COMPILING).is_some()
}

/// Finds the policy in force. Called once, by the constructor, with `argv[0]`.
///
/// The common case, no policy anywhere, stays in this small frame: the larger path
/// buffers are in `find_config_long`, `load_file` and `absolute_policy_path`.
#[inline(never)]
pub fn load(prog: &[u8]) -> Loaded {
    if compiling() {
        // A shim inside the envwrap we run to compile: no lookups, no spawn.
        return Loaded::Floor {
            source: b"<fail-closed floor>",
            warning: None,
        };
    }
    if crate::platform::fs::secure() {
        // A set-user-ID program: the invoking user's environment chooses no
        // policy file (and so no compile, which would run as the program's
        // owner). The built-in default, then the managed layer, decide.
        return nothing_found();
    }
    if let Some(given_c) = env_c(envpolicy_core::shared::POLICY.as_bytes()) {
        if envpolicy_core::lookup::names_builtin(without_nul(given_c)) {
            // The tree's policy is the built-in default, named (rule 8 gave this
            // entry): no lookup, and the captured entry is already the one every
            // child gets.
            return Loaded::Builtin { warning: None };
        }
        return load_file(given_c, true, prog);
    }
    let mut space: ShortPath = [MaybeUninit::uninit(); 256];
    match find_config(&mut space) {
        Config::Found(c) => load_file(c, false, prog),
        Config::TooLong => find_config_long(prog),
        Config::None => nothing_found(),
    }
}

/// The lookup found no policy file: the built-in default, and the subtree keeps
/// it (rule 8 puts `ENVSHIM_POLICY=:builtin` in every child, so that a child's
/// `ENVSHIM_POLICY` or `XDG_CONFIG_HOME` does not choose a policy file for it).
fn nothing_found() -> Loaded {
    sticky::keep_builtin();
    Loaded::Builtin { warning: None }
}

/// Where [`find_config`] looked.
enum Config<'b> {
    /// The user's or the system's policy file, NUL-terminated.
    Found(&'b [u8]),
    /// The user's path did not fit the buffer.
    TooLong,
    None,
}

/// The system-wide policy file, NUL-terminated.
/// [`envpolicy_core::lookup::SYSTEM_POLICY`], NUL-terminated.
const ETC_POLICY: &[u8] = envpolicy_core::shared::SYSTEM_POLICY_C;
const _: () = assert!(
    ETC_POLICY.len() == envpolicy_core::lookup::SYSTEM_POLICY.len() + 1,
    "ETC_POLICY is SYSTEM_POLICY with a NUL"
);

/// `$XDG_CONFIG_HOME/envshim/policy.toml` (or under `$HOME/.config`) if it exists,
/// else `/etc/envshim/policy.toml` if that does; built in `space`. `TooLong` only
/// when `space` is shorter than a `PathSpace`: a user path too long even for that
/// is not usable, and the system file is looked for instead.
fn find_config(space: &mut [MaybeUninit<u8>]) -> Config<'_> {
    let short = space.len() < PATH_MAX + 1;
    let mut buf = PathBuf::new(space);
    let user = envpolicy_core::lookup::user_policy(
        env_c(b"XDG_CONFIG_HOME").map(without_nul),
        env_c(b"HOME").map(without_nul),
    );
    if let Some((dir, under)) = user {
        buf.push(dir).join(under);
        if !buf.fits() && short {
            return Config::TooLong;
        }
    }
    match (buf.into_c_bytes(), user) {
        (Some(c), Some((dir, _))) if stops_lookup(c, dir) => Config::Found(c),
        _ if stops_lookup(ETC_POLICY, b"/etc") => Config::Found(ETC_POLICY),
        _ => Config::None,
    }
}

/// Whether the lookup stops at `path_c` under the directory `dir`
/// ([`envpolicy_core::lookup::stops_lookup`]): something is there, usable or not,
/// at the file or on the way to it.
fn stops_lookup(path_c: &[u8], dir: &[u8]) -> bool {
    let path = without_nul(path_c);
    let at_file = kind_at(path_c, libc::AT_SYMLINK_NOFOLLOW);
    envpolicy_core::lookup::stops_lookup(path, dir, at_file, |end, follow| {
        let prefix = path.get(..end).unwrap_or(path);
        let flags = if follow { 0 } else { libc::AT_SYMLINK_NOFOLLOW };
        let mut space: ShortPath = [MaybeUninit::uninit(); 256];
        let mut buf = PathBuf::new(&mut space);
        buf.push(prefix);
        match buf.into_c_bytes() {
            Some(c) => kind_at(c, flags),
            None => kind_at_long(prefix, flags),
        }
    })
}

/// [`kind_at`] of a path longer than a [`ShortPath`].
#[inline(never)]
fn kind_at_long(path: &[u8], flags: c_int) -> Result<Kind, c_int> {
    let mut space: PathSpace = [MaybeUninit::uninit(); PATH_MAX + 1];
    let mut buf = PathBuf::new(&mut space);
    buf.push(path);
    kind_at(buf.into_c_bytes().ok_or(libc::ENAMETOOLONG)?, flags)
}

/// What `fstatat(path_c, flags)` finds: a directory, a symlink, or another kind.
fn kind_at(path_c: &[u8], flags: c_int) -> Result<Kind, c_int> {
    stat_at(path_c, flags).map(|st| match st.st_mode & libc::S_IFMT {
        libc::S_IFDIR => Kind::Directory,
        libc::S_IFLNK => Kind::Symlink,
        _ => Kind::Other,
    })
}

/// `find_config` for a user path longer than `ShortPath`.
#[inline(never)]
fn find_config_long(prog: &[u8]) -> Loaded {
    let mut space: PathSpace = [MaybeUninit::uninit(); PATH_MAX + 1];
    match find_config(&mut space) {
        Config::Found(c) => load_file(c, false, prog),
        Config::TooLong | Config::None => nothing_found(),
    }
}

/// `given_c` (NUL-terminated), made absolute in the constructor's arena.
///
/// A working directory that was removed has no path (`getcwd` fails): the
/// kernel's name for it, `/proc/self/cwd`'s target (`/old/path (deleted)`), is
/// used instead. No policy file can be in a removed directory, so the process
/// gets the floor, with "not found", and so does every child it starts: rule 8
/// gives them that absolute path, which no `cd` changes. (Before, the relative
/// path went to the children as it was, and after a `cd` named another file.)
#[inline(never)]
fn absolute_policy_path(given_c: &[u8]) -> Result<Option<&'static [u8]>, ()> {
    let given_b = without_nul(given_c);
    let mut cwd = [0u8; PATH_MAX + 1];
    let mut out = [0u8; PATH_MAX + 1];
    // SAFETY: `cwd` is a writable buffer of the length passed.
    let r =
        unsafe { crate::platform::sys::sys_call!(libc::SYS_getcwd, cwd.as_mut_ptr(), cwd.len()) };
    // getcwd returns the length including the NUL; readlink, without it.
    let len = if r > 0 {
        r as usize - 1
    } else {
        // SAFETY: a NUL-terminated path and a writable buffer of the length
        // passed (one byte short, so the result stays NUL-terminated).
        let n = unsafe {
            crate::platform::sys::sys_call!(
                libc::SYS_readlink,
                c"/proc/self/cwd".as_ptr(),
                cwd.as_mut_ptr(),
                cwd.len() - 1
            )
        };
        n.max(0) as usize
    };
    let cwd = cwd.get(..len).unwrap_or(&[]);
    // Leave room for the NUL.
    let made = cache_key::absolute_into(cwd, given_b, out.get_mut(..PATH_MAX).unwrap_or(&mut []));
    let n = made.ok_or(())?;
    // `out` was zeroed: byte `n` is the NUL.
    Ok(out.get(..n + 1).and_then(|c| POLICY_PATH.set(c)))
}

/// Where a configured policy and its cache are, for the checks of [`load_file`]
/// and, when the constructor deferred part of them, of [`finish`].
#[derive(Clone, Copy)]
pub struct Ctx<'c> {
    /// The policy's absolute path, NUL-terminated (in [`POLICY_PATH`]).
    path_c: &'static [u8],
    /// The cache file's path, NUL-terminated; its directory is the first `dir_len`
    /// bytes.
    cache_c: &'c [u8],
    dir_len: usize,
    uid: u32,
    /// `ENVSHIM_POLICY` named the policy (a missing file then means the built-in
    /// default, with a warning).
    explicit: bool,
}

/// The rest of the check of a policy's cache, deferred by the constructor to the
/// first exec (see [`finish`]).
#[derive(Clone, Copy)]
pub struct Deferred {
    /// The whole cache file, as the constructor copied it (policy, notes, footer).
    file: &'static [u8],
    ctx: Ctx<'static>,
}

impl Deferred {
    /// The policy file whose cache this is, NUL-terminated: absolute, unless the
    /// working directory could not be found when a relative `ENVSHIM_POLICY` was
    /// made absolute.
    pub fn policy_path_c(&self) -> &'static [u8] {
        self.ctx.path_c
    }
}

impl Ctx<'_> {
    fn path(&self) -> &'static [u8] {
        without_nul(self.path_c)
    }

    /// The floor, with its warning, when `ENVSHIM_POLICY` names a file that does
    /// not exist: the policy a user named is missing, and nothing laxer takes its
    /// place (docs/policy.md, section 2; envwrap exits 125). Asked only when the
    /// cache cannot be used: a fresh cache proves the file exists (its first
    /// dependency is the policy's own `stat`).
    fn not_found(&self) -> Option<Loaded> {
        (self.explicit && matches!(stat_c(self.path_c), Err(libc::ENOENT | libc::ENOTDIR))).then(
            || {
                floor(
                    self.path(),
                    &[
                        Text(b"envshim: policy "),
                        Word(self.path()),
                        Text(b" not found; using the fail-closed floor"),
                    ],
                )
            },
        )
    }

    /// This context with its cache path, built in `buf` as
    /// `envpolicy::cache::cache_path` builds it; `None` when it does not fit
    /// (then [`Ctx::cache_path_too_long`]).
    fn with_cache_path<'b>(&self, buf: &'b mut PathBuf<'_>) -> Option<Ctx<'b>> {
        buf.clear();
        let given = env_c(cache_key::CACHE_DIR_VAR.as_bytes()).map(without_nul);
        let mut digits = [0u8; 20];
        let uid_digits = envpolicy_core::shown::decimal(u64::from(self.uid), &mut digits);
        let uid = self.uid;
        let runtime_ours = |dir_c: &[u8]| {
            stat_c(dir_c).is_ok_and(|st| untrusted(&st, uid, libc::S_IFDIR).is_none())
        };
        for part in cache_key::cache_dir_parts(given, uid_digits, runtime_ours) {
            buf.push(part);
        }
        let dir_len = buf.len();
        buf.join(&cache_key::cache_file_name(self.path()));
        let cache_c = buf.c_bytes().filter(|_| dir_len != 0)?;
        Some(Ctx {
            path_c: self.path_c,
            cache_c,
            dir_len,
            uid,
            explicit: self.explicit,
        })
    }

    /// The floor when [`Ctx::with_cache_path`] found no room for the cache path.
    fn cache_path_too_long(&self) -> Loaded {
        self.floor_unless_missing(&[
            Text(b"envshim: cache path for policy "),
            Word(self.path()),
            Text(b" is too long; using the fail-closed floor"),
        ])
    }

    /// The floor, with the reason in `parts`, unless the policy is missing.
    fn floor_unless_missing(&self, parts: &[Piece<'_>]) -> Loaded {
        self.not_found()
            .unwrap_or_else(|| floor(self.path(), parts))
    }

    /// The floor when the cache directory exists and is not ours (a compile could
    /// not write there, and a cache someone else can replace is not used).
    #[inline(never)] // Its buffer is on the stack only when it runs.
    fn untrusted_dir(&self) -> Option<Loaded> {
        let dir = self.cache_c.get(..self.dir_len)?;
        let mut space: PathSpace = [MaybeUninit::uninit(); PATH_MAX + 1];
        let mut buf = PathBuf::new(&mut space);
        let st = stat_c(buf.push(dir).c_bytes()?).ok()?;
        let why = untrusted(&st, self.uid, libc::S_IFDIR)?;
        Some(self.floor_unless_missing(&[
            Text(b"envshim: cache directory "),
            Word(dir),
            Text(b" is not trusted ("),
            Text(why),
            Text(b"); policy "),
            Word(self.path()),
            Text(b" not used; using the fail-closed floor"),
        ]))
    }
}

/// The policy file `given_c` (NUL-terminated; `explicit` when `ENVSHIM_POLICY`
/// named it): its compiled cache, compiled first if missing or stale. `prog` is
/// this process's `argv[0]`.
///
/// A process start checks only what it needs: when nothing happens at load (the
/// policy keeps no log, self-scrubs no program of this name, and is not a failure
/// marker), the cache must be for this policy file and the file unchanged (one
/// `stat`), and the rest of the check (the cache directory, the files the policy
/// imports, the notes) waits for the first exec ([`finish`]). A process that never
/// spawns then makes three system calls fewer; the policy it would enforce is
/// still checked in full before it decides anything.
#[inline(never)]
fn load_file(given_c: &[u8], explicit: bool, prog: &[u8]) -> Loaded {
    // One path buffer, for the cache path.
    let mut space: PathSpace = [MaybeUninit::uninit(); PATH_MAX + 1];
    let mut buf = PathBuf::new(&mut space);
    // Absolute, in the static buffer that messages and Active.source point to.
    let set = if given_c.first() == Some(&b'/') {
        POLICY_PATH.set(given_c)
    } else {
        match absolute_policy_path(given_c) {
            Ok(set) => set,
            Err(()) => {
                return floor(
                    b"<policy>",
                    &[
                        Text(b"envshim: cannot make the policy path "),
                        Word(without_nul(given_c)),
                        Text(b" absolute; using the fail-closed floor"),
                    ],
                )
            }
        }
    };
    let Some(path_c) = set else {
        return floor(
            b"<policy>",
            &[Text(
                b"envshim: policy path is too long; using the fail-closed floor",
            )],
        );
    };
    let path = without_nul(path_c);
    // The subtree keeps the policy this process resolved: a relative path would
    // name another file after a `cd`, and a policy found by lookup another one
    // under another `HOME` (rule 8 puts this entry back in every child).
    if !explicit || given_c.first() != Some(&b'/') {
        sticky::keep_policy(path);
    }
    let uid = getuid();
    let ctx = Ctx {
        path_c,
        cache_c: &[],
        dir_len: 0,
        uid,
        explicit,
    };
    if core::str::from_utf8(path).is_err() {
        // The compiler records paths as UTF-8 (lossily): a cache could never match.
        return ctx.floor_unless_missing(&[
            Text(b"envshim: policy path "),
            Word(path),
            Text(b" is not UTF-8; using the fail-closed floor"),
        ]);
    }

    let Some(ctx) = ctx.with_cache_path(&mut buf) else {
        return ctx.cache_path_too_long();
    };

    // A fresh cache: the common case.
    let mapped = match map_cache(ctx.cache_c, uid) {
        Ok(m) => match quick(m, &ctx, prog) {
            Ok(deferred) => return deferred,
            Err(m) => Some(m),
        },
        Err(_) => None,
    };
    if let Some(floor) = ctx.untrusted_dir() {
        if let Some(m) = mapped {
            m.unmap();
        }
        return floor;
    }
    checked(&ctx, mapped)
}

/// The policy file that `policy` was compiled from (absolute, NUL-terminated): its
/// first dependency.
pub fn source_path(policy: &Records<'static>) -> Option<&'static [u8]> {
    policy.dep(0).map(|d| policy.c_str(d.path))
}

/// The policy file at `path_c` ([`source_path`] of the policy in force), loaded
/// again because it changed since this process loaded it
/// ([`crate::state::policy::follow_edit`]), by [`load_at`].
#[inline(never)]
pub fn reload(path_c: Option<&'static [u8]>) -> Loaded {
    match path_c {
        Some(path_c) => load_at(path_c),
        None => floor(
            b"<policy>",
            &[Text(b"envshim: the policy changed and cannot be found again; using the fail-closed floor")],
        ),
    }
}

/// The policy file at `path_c` (absolute and NUL-terminated, in memory that lives
/// as long as the process) loaded in full, at an exec or a `fork`: its cache
/// checked in full, and compiled first when stale, as at a process start. A
/// failure means the floor; envwrap's own message, when it compiled, is the one
/// said. It writes none of the constructor's buffers, so any thread may run it,
/// as often as it needs to: for a process that took the start-up hint
/// ([`crate::state::policy`]), and to follow an edit ([`reload`]).
///
/// Allocates nothing and takes no lock, as [`finish`].
#[inline(never)]
pub fn load_at(path_c: &'static [u8]) -> Loaded {
    let ctx = Ctx {
        path_c,
        cache_c: &[],
        dir_len: 0,
        uid: getuid(),
        explicit: true,
    };
    let mut space: PathSpace = [MaybeUninit::uninit(); PATH_MAX + 1];
    let mut buf = PathBuf::new(&mut space);
    let Some(ctx) = ctx.with_cache_path(&mut buf) else {
        return ctx.cache_path_too_long();
    };
    ctx.untrusted_dir().unwrap_or_else(|| checked(&ctx, None))
}

/// The constructor's check of a copied cache, when it may defer the rest (see
/// [`load_file`]): the cache, with the check deferred, or the copy back for the
/// full check.
fn quick(m: Mapping, ctx: &Ctx<'_>, prog: &[u8]) -> Result<Loaded, Mapping> {
    let file = m.bytes();
    let Ok((policy, notes)) = cache_key::open_peek(file) else {
        return Err(m);
    };
    let at_load = notes.failure().is_some() || envpolicy_core::hint::needed_at_load(&policy, prog);
    if at_load {
        return Err(m);
    }
    let mut distrust = None;
    let fresh = cache_key::check_policy_file(&policy, ctx.path(), |p| {
        stamp_noting_distrust(p, (ctx.uid, notes.private_group()), &mut distrust)
    });
    // Stale, or the policy file is not trusted now: the full check says what to do.
    if fresh.is_err() || distrust.is_some() {
        return Err(m);
    }
    // The first exec needs the cache path again.
    let Some(cache_c) = CACHE_PATH.set(ctx.cache_c) else {
        return Err(m);
    };
    Ok(Loaded::File {
        policy,
        source: policy.source(),
        deferred: Some(Deferred {
            file,
            ctx: Ctx { cache_c, ..*ctx },
        }),
    })
}

/// The cache path kept for [`finish`], NUL-terminated.
#[link_section = ".data.envshim_ctor"]
static CACHE_PATH: CtorBuf<{ PATH_MAX + 1 }> = CtorBuf::new();

/// The check the constructor deferred (see [`load_file`]), at the first exec,
/// before the policy decides anything: the cache directory's trust, then the whole
/// check of the cache the constructor copied. A cache found stale is compiled
/// again here, as the constructor would have (envwrap runs, and is waited for),
/// and a failure means the floor, with its warning.
///
/// Runs once per process, in the thread that validates the policy: allocates
/// nothing and takes no lock (envwrap is started with the real `posix_spawn` and
/// waited for with `wait4`), so it may run in a `vfork` child, whose writes land
/// in the parent's memory.
pub fn finish(d: Deferred) -> Loaded {
    let ctx = &d.ctx;
    if let Some(floor) = ctx.untrusted_dir() {
        return floor;
    }
    match judge_bytes(d.file, ctx.path(), ctx.uid) {
        Ok(loaded) => loaded,
        // Compiled again since? Else compile.
        Err(_) => checked(ctx, None),
    }
}

/// The full check (the cache directory already checked): `mapped` (else the cache
/// file, copied now) judged in full; when it is missing, untrusted or stale, compile
/// it and judge it again.
fn checked(ctx: &Ctx<'_>, mapped: Option<Mapping>) -> Loaded {
    let (path, uid, cache_c) = (ctx.path(), ctx.uid, ctx.cache_c);
    if let Some(m) = mapped.or_else(|| map_cache(cache_c, uid).ok()) {
        if let Ok(loaded) = judge(m, path, uid) {
            return loaded;
        }
    }
    if let Some(builtin) = ctx.not_found() {
        return builtin;
    }
    // Missing, untrusted or stale: compile, then the cache must be usable.
    let status = match compile(cache_c, ctx.path_c) {
        Ok(Waited::Exited(s)) => Some(s),
        Ok(Waited::Uncollected) => None,
        Ok(Waited::TimedOut) => {
            return floor(
                path,
                &[
                    Text(b"envshim: compiling policy "),
                    Word(path),
                    Text(b" did not finish within "),
                    Text(COMPILE_LIMIT_TEXT),
                    Text(b"; using the fail-closed floor"),
                ],
            )
        }
        Ok(Waited::Interrupted) => {
            return floor(
                path,
                &[
                    Text(b"envshim: compiling policy "),
                    Word(path),
                    Text(b" was interrupted by a signal; using the fail-closed floor"),
                ],
            )
        }
        Err((envwrap, errno)) => {
            let reason: &[u8] = match errno {
                libc::ENOENT => b"not found",
                libc::EACCES => b"permission denied",
                libc::ENOEXEC => b"not an executable",
                _ => b"cannot spawn",
            };
            return floor(
                path,
                &[
                    Text(b"envshim: cannot run "),
                    Word(envwrap),
                    Text(b" to compile policy "),
                    Word(path),
                    Text(b": "),
                    Text(reason),
                    Text(b"; using the fail-closed floor"),
                ],
            );
        }
    };
    // envwrap explained its own failure on our stderr (exit 125): a failure
    // marker it wrote then carries that message, which is not said twice. Any
    // other exit, and a compile that left no usable cache, is said here.
    let reported = matches!(status, Some(s) if libc::WIFEXITED(s) && libc::WEXITSTATUS(s) == 125);
    let why: &[u8] = match map_cache(cache_c, uid) {
        Ok(m) => match judge(m, path, uid) {
            Ok(Loaded::Floor { source, warning }) => {
                return Loaded::Floor {
                    source,
                    warning: if reported { None } else { warning },
                }
            }
            Ok(loaded) => return loaded,
            Err(why) => why,
        },
        Err(MapError::Missing) => b"no compiled cache was written",
        Err(MapError::Untrusted(why) | MapError::Unusable(why)) => why,
    };
    floor(
        path,
        &[
            Text(b"envshim: policy "),
            Word(path),
            Text(b": compiled cache unusable ("),
            Text(why),
            Text(b"); using the fail-closed floor"),
        ],
    )
}

/// Use a copied cache for the policy at `path`, or give the copy back and say why not.
fn judge(m: Mapping, path: &'static [u8], uid: u32) -> Result<Loaded, &'static [u8]> {
    let verdict = judge_bytes(m.bytes(), path, uid);
    if verdict.is_err() {
        // Nothing borrowed from the copy outlives `verdict` (an error is static).
        m.unmap();
    }
    verdict
}

/// Use the cache file `file` for the policy at `path`, or say why not.
///
/// The files the policy was compiled from are also checked for trust as they are
/// now (the same `stat` as the freshness check): a file made group- or
/// other-writable, or given to another user, after the cache was compiled does
/// not change its contents or mtime, so the cache would stay fresh; instead the
/// floor is enforced, with one warning naming the file, until the file is
/// trusted again.
fn judge_bytes(
    file: &'static [u8],
    path: &'static [u8],
    uid: u32,
) -> Result<Loaded, &'static [u8]> {
    let (policy, notes) = cache_key::open_peek(file).map_err(|e| e.describe().as_bytes())?;
    let mut distrust = None;
    cache_key::check(&policy, &notes, path, |p| {
        stamp_noting_distrust(p, (uid, notes.private_group()), &mut distrust)
    })
    .map_err(|s| s.describe().as_bytes())?;
    if let Some(w) = notes.failure() {
        return Ok(Loaded::Floor {
            source: policy.source(),
            warning: Some(w),
        });
    }
    if let Some((file, why)) = distrust {
        return Ok(floor(
            policy.source(),
            &[
                Text(b"envshim: "),
                Word(file),
                Text(b": not trusted: "),
                Text(why),
                Text(b"; only its owner and root may write it; using the fail-closed floor"),
            ],
        ));
    }
    Ok(Loaded::File {
        policy,
        source: policy.source(),
        deferred: None,
    })
}

/// How long the shim waits for a compile before it stops it and enforces the
/// floor. A compile reads a few small files and takes milliseconds; the limit is
/// for a file on a network mount that stopped answering (envwrap itself never
/// blocks on a FIFO, a socket or a device: [`envpolicy_core::readable`]).
const COMPILE_LIMIT_MS: i64 = 10_000;
const COMPILE_LIMIT_TEXT: &[u8] = b"10 seconds";
/// Runs `envwrap compile --output CACHE -- POLICY` and waits for it, at most
/// [`COMPILE_LIMIT_MS`] (see [`helper`]). `Err` holds the envwrap path and the
/// spawn error.
#[inline(never)] // Its buffers are on the stack only when a compile runs.
fn compile(cache_c: &[u8], policy_c: &[u8]) -> Result<Waited, (&'static [u8], c_int)> {
    #[link_section = ".data.envshim_ctor"]
    static ENVWRAP: CtorBuf<{ PATH_MAX + 1 }> = CtorBuf::new();
    let mut space: PathSpace = [MaybeUninit::uninit(); PATH_MAX + 1];
    // The path to name in a message: it must outlive this frame. A fork child
    // whose parent already kept it (the slot is taken) says "envwrap".
    let (envwrap, name): (&[u8], &'static [u8]) = match helper::envwrap_path(&mut space) {
        Some(helper::Envwrap::Named(p)) => (p, without_nul(p)),
        Some(helper::Envwrap::Beside(p)) => (p, ENVWRAP.set(p).map_or(b"envwrap", without_nul)),
        None => return Err((b"envwrap", libc::ENOENT)),
    };
    let argv: [*const c_char; 7] = [
        c"envwrap".as_ptr(),
        c"compile".as_ptr(),
        c"--output".as_ptr(),
        cache_c.as_ptr().cast(),
        c"--".as_ptr(),
        policy_c.as_ptr().cast(),
        core::ptr::null(),
    ];
    let mut envp: [*const c_char; 4] = [core::ptr::null(); 4];
    envp[0] = envpolicy_core::shared::COMPILING_ENTRY.as_ptr();
    let mut n = 1;
    for var in [&b"PATH"[..], b"HOME"] {
        if let (Some(e), Some(slot)) = (env_entry(var), envp.get_mut(n)) {
            *slot = e;
            n += 1;
        }
    }
    let envp = envp.get(..n + 1).unwrap_or(&envp);
    helper::run(envwrap, &argv, envp, COMPILE_LIMIT_MS).map_err(|r| (name, r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// `path` NUL-terminated, for the life of the test process.
    fn path_c(path: &std::path::Path) -> &'static [u8] {
        let mut bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()).to_vec();
        bytes.push(0);
        Vec::leak(bytes)
    }

    /// The source of a floor (the policy file it stands in for), and its
    /// warning when this is the first one of the process (a warning is kept
    /// once, for the process to say once: `WARNING`).
    fn floor_of(loaded: Loaded) -> (String, Option<String>) {
        match loaded {
            Loaded::Floor { source, warning } => (
                String::from_utf8_lossy(source).into_owned(),
                warning.map(|w| String::from_utf8_lossy(w).into_owned()),
            ),
            Loaded::Builtin { .. } => panic!("the built-in default, not the floor"),
            Loaded::File { .. } => panic!("the policy, not the floor"),
        }
    }

    /// A policy file named but not there gives the fail-closed floor for that
    /// file, never the built-in default or no policy, with a warning that names
    /// the file and why. (A file that is there but cannot be used is judged by
    /// the envwrap that compiles it, which says why itself:
    /// tests/tests/shim_trust.rs.)
    #[test]
    fn a_policy_file_that_is_not_there_gives_the_floor_and_says_so() {
        let dir = std::env::temp_dir().join(format!("envshim-unit-{}-load", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();

        let missing = dir.join("missing.toml");
        let (source, said) = floor_of(load_at(path_c(&missing)));
        assert_eq!(source, missing.display().to_string());
        // The first floor of the process keeps its warning, to be said once.
        if let Some(said) = said {
            assert!(
                said.contains(&source) && said.ends_with("not found; using the fail-closed floor"),
                "{said}"
            );
        }

        let _ = std::fs::remove_dir_all(&dir);
    }
}
