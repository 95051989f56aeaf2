//! The env files a policy imports, kept between execs and re-read only when they
//! change.
//!
//! Rule 4 and the passthrough of file values need each imported env file's current
//! contents at every exec (docs/policy.md: an env file is read as it is at each exec). Opening,
//! sizing, reading and closing each file costs five system calls per exec. This
//! cache keeps the bytes of every file in one static buffer with the file's
//! `stat` stamp (device, inode, size, mtime and ctime to the nanosecond), so an exec
//! costs one `stat` per file; a file whose stamp changed is read again, so a value
//! written to the file reaches the next exec, as before.
//!
//! # No lock, and fork
//!
//! The cache is used only inside [`crate::filter::prepare`], never across the real
//! exec (file values are copied into the exec's scratch before it runs). It is
//! claimed with one compare-and-swap of [`STATE`] and released by the guard's drop;
//! whoever fails to claim it (another thread is using it, a signal handler
//! interrupted a hook that holds it, or a `fork` child inherited it held) reads the
//! files into its own scratch instead, as an exec without the cache does.
//! No one ever waits, so `fork`, `vfork` and signals cannot deadlock on it; the
//! worst case is a process that pays the five system calls per exec.
//!
//! A single-threaded process (glibc's `__libc_single_threaded`) claims it in a
//! thread-local flag instead, and only reads `STATE` (which must be free: a `fork`
//! child may have inherited it held). No other thread exists to race it, and a
//! signal handler that execs finds the flag set, as it would find `STATE` held.
//! That is for the `fork` child of a shell or `make`: writing `STATE` there is a
//! copy-on-write page fault at every exec, while the thread's own TLS page has
//! already been written by `fork` itself. (In a `vfork` child the flag is the
//! parent thread's, which is suspended; the claim ends before the real exec.)
//!
//! The buffer is zero-initialised and away from the constructor's page
//! (shim/layout.ld), so it costs no memory until a policy with env files execs;
//! files that do not fit (together more than [`CACHE_BYTES`]) are not cached.
//!
//! With the bytes, the cache keeps what the decision would otherwise parse out of
//! them at every exec, found once per read: the assignment each of the policy's
//! file-keep records passes on ([`envpolicy_core::decide::file_keep_value`]), whether
//! that value passes where no program section applies
//! ([`envpolicy_core::decide::file_value_passes_globally`]), and the credential values
//! argv is searched for ([`envpolicy_core::argv::file_credentials`]).

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};

use envpolicy_core::argv::{file_credentials, FileCredential};
use envpolicy_core::cache_key::Stamp;
use envpolicy_core::compiled::sec;
use envpolicy_core::decide::{file_keep_value, file_value_passes_globally};
use envpolicy_core::envfile::Assignment;
use envpolicy_core::Policy;

use crate::state::env_files::{self, NotOpened, Unusable, MAX_ENV_FILES};

/// Bytes of all cached env files together.
pub const CACHE_BYTES: usize = 64 * 1024;
/// File-keep records whose assignments are kept; a policy with more has them
/// looked up at every exec, as without the cache.
pub const MAX_KEEPS: usize = 32;
/// Credential values kept; files with more are parsed at every exec.
pub const MAX_CREDENTIALS: usize = 64;
/// Longest file-keep value judged once per read (see `Data::judged`).
const JUDGED_VALUE_MAX: usize = 512;

const FREE: u8 = 0;
const BUSY: u8 = 1;
/// Free, or held by one `prepare` (which may be in another thread, or in the
/// process a `fork` copied this one from).
#[link_section = ".data.envshim_zero"]
static STATE: AtomicU8 = AtomicU8::new(FREE);

/// A copy of the entries' stamps that [`refresh`] reads without claiming the cache:
/// the policy key (0 while a refill runs) and, per file, whether it was there and
/// its stamp's five fields. Claiming writes `STATE`, and in the parent of a fork
/// that is a page fault at every fork (the page is copy-on-write again after each
/// one); reading these atomics is not. A torn read only makes `refresh` claim the
/// cache when it need not, or skip a refresh that the child then does itself: the
/// child's own claim decides what it uses.
#[link_section = ".data.envshim_zero"]
static SHADOW_KEY: AtomicUsize = AtomicUsize::new(0);
#[link_section = ".data.envshim_zero"]
static SHADOW: [[AtomicU64; 6]; MAX_ENV_FILES] =
    [const { [const { AtomicU64::new(0) }; 6] }; MAX_ENV_FILES];

/// The shadow words of a stamp (`None`: the file was not there).
fn shadow_words(stamp: Option<Stamp>) -> [u64; 6] {
    match stamp {
        None => [0; 6],
        Some(s) => [
            1,
            s.dev,
            s.ino,
            s.size,
            s.mtime_ns as u64,
            s.ctime_ns as u64,
        ],
    }
}

/// One cached file: where its bytes are, and the stamp they were read under.
#[derive(Clone, Copy)]
struct Entry {
    /// `None`: the file could not be read (its contents are then `None`, as for
    /// the uncached path) or was never read.
    stamp: Option<Stamp>,
    start: usize,
    len: usize,
    readable: bool,
    /// The file is there but is no file a policy reads ([`envpolicy_core::readable`]):
    /// its `st_mode` and size, to say why. (Plain numbers, all zero when unset,
    /// so that `DATA` stays in zero-filled memory.)
    refused: bool,
    mode: u32,
    size: u64,
    /// Changed since the policy was compiled: its current names count
    /// (`EnvRequest::renamed_files`).
    renamed: bool,
}

const EMPTY: Entry = Entry {
    stamp: None,
    start: 0,
    len: 0,
    readable: false,
    refused: false,
    mode: 0,
    size: 0,
    renamed: false,
};

struct Data {
    /// The compiled policy these entries belong to (its address): the policy is
    /// loaded once per process, but a stale cache must never serve another one.
    policy: usize,
    entries: [Entry; MAX_ENV_FILES],
    /// `file_keep_value` of each file-keep record (`None`: not in its file), when
    /// the policy has at most `MAX_KEEPS` of them (`keeps_known`). They point into
    /// `buf` and are rewritten with it.
    keeps: [Option<Assignment<'static>>; MAX_KEEPS],
    keeps_known: bool,
    /// `file_value_passes_globally` of each of `keeps` (valid with them).
    judged: [Option<bool>; MAX_KEEPS],
    /// `file_credentials` of the files (the first `n_credentials`), when they
    /// hold at most `MAX_CREDENTIALS` (`credentials_known`). Also into `buf`.
    credentials: [FileCredential<'static>; MAX_CREDENTIALS],
    n_credentials: usize,
    credentials_known: bool,
    buf: [u8; CACHE_BYTES],
}

const NO_CREDENTIAL: FileCredential<'static> = FileCredential {
    file: 0,
    line: 0,
    value: NO_VALUE,
    value_len: 0,
};

/// An empty value that the loader need not relocate. `&[]` in a static's initialiser
/// is the address of a constant, so `DATA` would hold addresses the loader writes at
/// every process start (a page fault, shim/layout.ld); a dangling pointer is a
/// plain number.
const NO_VALUE: &[u8] = {
    // SAFETY: a slice of length zero reads nothing; it needs only a non-null,
    // aligned pointer, which `dangling` is.
    unsafe { core::slice::from_raw_parts(core::ptr::NonNull::<u8>::dangling().as_ptr(), 0) }
};

struct Shared(UnsafeCell<Data>);
// SAFETY: `Data` is only touched by the holder of the claim (see the module docs):
// one `prepare` at a time, in any thread.
unsafe impl Sync for Shared {}

static DATA: Shared = Shared(UnsafeCell::new(Data {
    policy: 0,
    entries: [EMPTY; MAX_ENV_FILES],
    keeps: [None; MAX_KEEPS],
    keeps_known: false,
    judged: [None; MAX_KEEPS],
    credentials: [NO_CREDENTIAL; MAX_CREDENTIALS],
    n_credentials: 0,
    credentials_known: false,
    buf: [0; CACHE_BYTES],
}));

/// The claimed cache; dropping it releases the claim.
pub struct Held {
    /// Current contents of each env file, by index; `None` for one that cannot be
    /// read.
    pub contents: [Option<&'static [u8]>; MAX_ENV_FILES],
    pub n: usize,
    /// The first file that is there but is no file a policy reads.
    pub unusable: Option<Unusable>,
    /// The files changed since the policy was compiled (bit `i` for file `i`).
    pub renamed: u32,
    /// `file_keep_value` of each file-keep record, in these contents, if known.
    keeps: Option<&'static [Option<Assignment<'static>>]>,
    /// `file_value_passes_globally` of each of `keeps`, with them.
    judged: Option<&'static [Option<bool>]>,
    /// `file_credentials` of these contents, if known.
    credentials: Option<&'static [FileCredential<'static>]>,
    /// Claimed by this thread's flag, not `STATE` (see the module docs).
    by_thread: bool,
}

impl Held {
    /// The looked-up file-keep values, for `EnvRequest::file_values`.
    pub fn file_values(&self) -> Option<&[Option<Assignment<'static>>]> {
        self.keeps
    }

    /// Their judgements, for `EnvRequest::file_judged`.
    pub fn file_judged(&self) -> Option<&[Option<bool>]> {
        self.judged
    }

    /// The files' credential values, for `ArgvRequest::file_credentials`.
    pub fn file_credentials(&self) -> Option<&[FileCredential<'static>]> {
        self.credentials
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.by_thread {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: this thread's own flag (see `held_flag`).
            unsafe {
                *held_flag() = 0;
            }
        } else {
            STATE.store(FREE, Ordering::Release);
        }
    }
}

/// This thread's claim flag (`envshim_cache_held` in csrc/support.c). Only this
/// thread, or a signal handler on it that runs to completion first, reads or
/// writes it.
#[cfg(target_arch = "x86_64")]
fn held_flag() -> *mut u8 {
    crate::platform::sys::tls_addr!("envshim_cache_held")
}

/// Take the claim: this thread's own flag in a single-threaded process, else
/// `STATE`. `Some(by_thread)` when taken.
fn take_claim() -> Option<bool> {
    // glibc's `__libc_single_threaded` (nonzero while the process has never
    // created a thread, and again in a `fork` child), or NULL before glibc 2.32.
    #[cfg(target_arch = "x86_64")]
    let single = crate::platform::real::libc_single_threaded();
    #[cfg(target_arch = "x86_64")]
    // SAFETY: read only when not NULL: a plain byte that glibc writes only when
    // this process creates a thread or forks; reading it races with neither in
    // a single-threaded process.
    let single = !single.is_null() && unsafe { core::ptr::read_volatile(single) } != 0;
    #[cfg(target_arch = "x86_64")]
    if single && STATE.load(Ordering::Acquire) == FREE {
        let flag = held_flag();
        // SAFETY: this thread's own flag (see `held_flag`).
        unsafe {
            if *flag != 0 {
                return None;
            }
            *flag = 1;
        }
        return Some(true);
    }
    STATE
        .compare_exchange(FREE, BUSY, Ordering::Acquire, Ordering::Relaxed)
        .is_ok()
        .then_some(false)
}

/// The env files of `policy`, fresh, from the cache; `None` when the policy imports
/// none, the cache is in use, or the files do not fit: the caller then reads them
/// itself.
pub fn claim(policy: &Policy<'_>) -> Option<Held> {
    let n = policy.count(sec::ENV_FILES).min(MAX_ENV_FILES);
    if n == 0 {
        return None;
    }
    let by_thread = take_claim()?;
    // From here on, returning drops `held`, which releases the claim.
    let mut held = Held {
        contents: [None; MAX_ENV_FILES],
        n,
        unusable: None,
        renamed: 0,
        keeps: None,
        judged: None,
        credentials: None,
        by_thread,
    };
    let key = policy.as_bytes().as_ptr() as usize;
    {
        // SAFETY: we hold the claim, so no one else reads or writes `DATA` until
        // `held` is dropped, and this is the only reference to it until the end of
        // this block.
        let data = unsafe { &mut *DATA.0.get() };
        if !is_fresh(policy, n, data, key) && !refill(policy, n, data, key) {
            return None;
        }
    }
    // SAFETY: as above; from here on `DATA` is only read, through this shared
    // reference and the slices of `held.contents`, which the caller stops using
    // before it drops `held` (and with it the claim).
    let data: &'static Data = unsafe { &*DATA.0.get() };
    held.contents = contents(&data.entries, n, &data.buf);
    held.unusable = unusable(&data.entries, n);
    held.renamed = data
        .entries
        .iter()
        .take(n)
        .enumerate()
        .filter(|(_, e)| e.renamed)
        .fold(0, |bits, (i, _)| bits | 1 << i);
    if data.keeps_known {
        let n_keeps = policy.count(sec::FILE_KEEPS).min(MAX_KEEPS);
        held.keeps = data.keeps.get(..n_keeps);
        held.judged = data.judged.get(..n_keeps);
    }
    if data.credentials_known {
        held.credentials = data.credentials.get(..data.n_credentials);
    }
    Some(held)
}

/// The bytes of each of the first `n` entries in `buf` (`None`: not readable).
fn contents<'b>(entries: &[Entry], n: usize, buf: &'b [u8]) -> [Option<&'b [u8]>; MAX_ENV_FILES] {
    let mut out = [None; MAX_ENV_FILES];
    for (slot, e) in out.iter_mut().zip(entries.iter()).take(n) {
        if e.readable {
            *slot = buf.get(e.start..e.start.saturating_add(e.len));
        }
    }
    out
}

/// The first of the first `n` entries that the rule refused, and why.
fn unusable(entries: &[Entry], n: usize) -> Option<Unusable> {
    let (index, e) = entries
        .iter()
        .take(n)
        .enumerate()
        .find(|(_, e)| e.refused)?;
    let why = envpolicy_core::readable::judge(e.mode, e.size, envpolicy_core::readable::ENV_FILE)
        .err()?;
    Some(Unusable { index, why })
}

/// Does every cached entry still describe its file (one `stat` each)? A file that
/// was not there before must still not be there.
fn is_fresh(policy: &Policy<'_>, n: usize, data: &Data, key: usize) -> bool {
    data.policy == key
        && data
            .entries
            .iter()
            .enumerate()
            .take(n)
            .all(|(i, e)| stamp_now(policy, i) == e.stamp)
}

/// The stamp of env file `i` as it is now (`None`: it cannot be `stat`ed).
fn stamp_now(policy: &Policy<'_>, i: usize) -> Option<Stamp> {
    crate::platform::fs::stamp_now(path_of(policy, i)?)
}

/// The NUL-terminated path of env file `i`.
fn path_of<'p>(policy: &Policy<'p>, i: usize) -> Option<&'p [u8]> {
    let rec = policy.env_file(i as u32)?;
    let path = policy.c_str(rec.path);
    (path.last() == Some(&0)).then_some(path)
}

/// Read every file again into the buffer. False (cache left empty) when they do
/// not fit.
fn refill(policy: &Policy<'_>, n: usize, data: &mut Data, key: usize) -> bool {
    data.policy = 0;
    SHADOW_KEY.store(0, Ordering::Release);
    let mut used = 0usize;
    for i in 0..n {
        let Some(entry) = data.entries.get_mut(i) else {
            return false;
        };
        *entry = EMPTY;
        let Some(path) = path_of(policy, i) else {
            continue;
        };
        let (fd, st) = match env_files::open(path) {
            Ok(opened) => opened,
            Err(NotOpened::Absent) => {
                entry.renamed = envpolicy_core::cache_key::import_changed(policy, i as u32, None);
                continue;
            }
            Err(NotOpened::Refused(_, stamp, mode)) => {
                // Its stamp, so that the next exec looks again only if it changes.
                *entry = Entry {
                    stamp: Some(stamp),
                    refused: true,
                    mode,
                    size: stamp.size,
                    ..EMPTY
                };
                continue;
            }
        };
        let size = usize::try_from(st.st_size).unwrap_or(usize::MAX);
        let end = used.saturating_add(size);
        let got = if end <= CACHE_BYTES {
            data.buf
                .get_mut(used..end)
                .and_then(|dst| env_files::read_all(fd, dst))
        } else {
            None
        };
        crate::platform::sys::close(fd);
        let Some(got) = got else {
            if end > CACHE_BYTES {
                return false;
            }
            // Unreadable or too large to use: as the uncached path, no contents;
            // the stamp makes the next exec look again only if the file changes.
            entry.stamp = Some(crate::platform::fs::stamp_of(&st));
            continue;
        };
        let stamp = crate::platform::fs::stamp_of(&st);
        *entry = Entry {
            stamp: Some(stamp),
            start: used,
            len: got,
            readable: true,
            renamed: envpolicy_core::cache_key::import_changed(policy, i as u32, Some(stamp)),
            ..EMPTY
        };
        used = end;
    }
    keep_values(policy, n, data);
    data.policy = key;
    for (shadow, e) in SHADOW.iter().zip(data.entries.iter()).take(n) {
        for (w, v) in shadow.iter().zip(shadow_words(e.stamp)) {
            w.store(v, Ordering::Relaxed);
        }
    }
    SHADOW_KEY.store(key, Ordering::Release);
    true
}

/// Find what the decision takes from the files just read: every file-keep
/// record's value (see `Data::keeps`) and the credential values (see
/// `Data::credentials`).
fn keep_values(policy: &Policy<'_>, n: usize, data: &mut Data) {
    // SAFETY: `DATA.buf` is a static, just written by `refill`. The slices made
    // from it here, and the assignments that point into them, are read only by the
    // holder of the claim, and the bytes change only in a later `refill`, which
    // runs under the claim and replaces these assignments too.
    let buf: &'static [u8] = unsafe { core::slice::from_raw_parts(data.buf.as_ptr(), CACHE_BYTES) };
    let files = contents(&data.entries, n, buf);
    let n_keeps = policy.count(sec::FILE_KEEPS);
    data.keeps_known = n_keeps <= MAX_KEEPS;
    if data.keeps_known {
        // The judgement needs the value unescaped; a longer one is judged at
        // every exec, as without the cache.
        let mut value = [0u8; JUDGED_VALUE_MAX];
        let slots = data.keeps.iter_mut().zip(data.judged.iter_mut());
        for (k, (slot, judged)) in slots.enumerate().take(n_keeps) {
            *slot = file_keep_value(policy, k as u32, &files);
            *judged = slot
                .as_ref()
                .and_then(|a| file_value_passes_globally(policy, k as u32, a, &mut value));
        }
    }
    let mut count = 0usize;
    let slots = &mut data.credentials;
    file_credentials(policy, &files, usize::MAX, |c| {
        if let Some(slot) = slots.get_mut(count) {
            *slot = c;
        }
        count += 1;
        count <= MAX_CREDENTIALS
    });
    data.n_credentials = count.min(MAX_CREDENTIALS);
    data.credentials_known = count <= MAX_CREDENTIALS;
}

/// When [`refresh`] last looked at the files, in microseconds.
#[link_section = ".data.envshim_zero"]
static LAST_LOOK: AtomicU64 = AtomicU64::new(0);

/// Microseconds between two looks of [`refresh`] at the files.
const LOOK_EVERY_US: u64 = 100_000;

/// Bring the cache up to date now, outside any exec (see [`crate::hooks::fork`]): a `fork`
/// child then finds the files fresh and only `stat`s them. Claims the cache only
/// when a file looks changed (see `SHADOW`); does nothing when it is in use.
///
/// Looks at the files at most once per [`LOOK_EVERY_US`] once the cache holds
/// them. A shell forks a child per command: a `stat` in the parent at every fork
/// would double the system calls the policy's env files cost, and each child
/// `stat`s them anyway, at its exec, before it uses them. So a file changed since
/// the last look costs the children of the next tenth of a second a read of their
/// own, never a stale value. `LAST_LOOK` is written only when the parent looks:
/// a write at every fork would be a page fault at every fork (see `SHADOW`).
pub fn refresh(policy: &Policy<'_>) {
    let n = policy.count(sec::ENV_FILES).min(MAX_ENV_FILES);
    if n == 0 {
        return;
    }
    let key = policy.as_bytes().as_ptr() as usize;
    // SAFETY: gettimeofday through its wrapper has no preconditions. glibc's reads
    // the vDSO's clock and takes no lock, so a signal handler that forks may run it.
    let now = unsafe { crate::platform::cold::now_us() };
    if let Ok(now) = u64::try_from(now) {
        // A clock set back makes the difference huge: then the files are looked at.
        if SHADOW_KEY.load(Ordering::Acquire) == key
            && now.wrapping_sub(LAST_LOOK.load(Ordering::Relaxed)) < LOOK_EVERY_US
        {
            return;
        }
        LAST_LOOK.store(now, Ordering::Relaxed);
    }
    let unchanged = SHADOW_KEY.load(Ordering::Acquire) == key
        && SHADOW.iter().enumerate().take(n).all(|(i, shadow)| {
            let now = shadow_words(stamp_now(policy, i));
            shadow
                .iter()
                .zip(now)
                .all(|(w, v)| w.load(Ordering::Relaxed) == v)
        });
    if !unchanged {
        // A file found unusable is said here, once: the children inherit that it
        // was (`env_files::warn_unusable`), and their execs get the floor.
        if let Some(u) = claim(policy).and_then(|held| held.unusable) {
            crate::state::env_files::warn_unusable(policy, u);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};

    /// A directory of its own for one test, removed at the end.
    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str) -> Dir {
            let d =
                std::env::temp_dir().join(format!("envshim-unit-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir(&d).unwrap();
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
            Dir(d)
        }

        fn write(&self, name: &str, text: &str) -> PathBuf {
            let p = self.0.join(name);
            std::fs::write(&p, text).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
            p
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn first_file(policy: &Policy<'_>) -> Option<Vec<u8>> {
        let held = claim(policy).expect("the cache is free and the file fits");
        held.contents[0].map(<[u8]>::to_vec)
    }

    fn compiled(dir: &Dir, file: &Path) -> envpolicy::Compiled {
        let text = format!(
            "version = 1\nkeep = [\"PROXY\"]\n\n[[import.env_file]]\npath = \"{}\"\nrole = \"strip\"\nvalues = true\n",
            file.display()
        );
        envpolicy::load::compile_text(&text, &dir.0.join("policy.toml"))
            .expect("the policy compiles")
    }

    /// What the cache hands an exec is the file as it is now: the same bytes
    /// while the file is unchanged, and its new bytes after a rewrite in
    /// place (same inode, same size: only the times differ), after a rename
    /// over it (another inode), and none after it is removed.
    #[test]
    fn each_claim_sees_the_env_file_as_it_is_now() {
        let dir = Dir::new("env-cache");
        let file = dir.write("proxy.env", "PROXY=http://one:1\n");
        let compiled = compiled(&dir, &file);
        let policy = compiled.policy();
        assert_eq!(
            first_file(&policy).as_deref(),
            Some(&b"PROXY=http://one:1\n"[..])
        );
        assert_eq!(
            first_file(&policy).as_deref(),
            Some(&b"PROXY=http://one:1\n"[..])
        );

        std::thread::sleep(std::time::Duration::from_millis(5));
        std::fs::write(&file, "PROXY=http://two:2\n").unwrap();
        assert_eq!(
            first_file(&policy).as_deref(),
            Some(&b"PROXY=http://two:2\n"[..])
        );

        let next = dir.write("proxy.env.new", "PROXY=http://three.example:3\n");
        std::fs::rename(&next, &file).unwrap();
        assert_eq!(
            first_file(&policy).as_deref(),
            Some(&b"PROXY=http://three.example:3\n"[..])
        );

        std::fs::remove_file(&file).unwrap();
        assert_eq!(first_file(&policy), None);
    }
}
