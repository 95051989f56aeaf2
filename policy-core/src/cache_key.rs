//! The compiled-policy cache, as both of its users see it: its file name, its file
//! layout and its freshness rule. `no_std` and allocation-free, because
//! libenvshim.so reads the cache in its constructor and envwrap writes it
//! (`envpolicy::cache`, with std); one module means one name and one meaning.
//!
//! **Name.** The cache of a policy file is `<16 hex digits>.bin`: the 64-bit FNV-1a
//! hash of the policy path's bytes, made absolute by [`absolute_into`] (no other
//! normalisation: `a/../p.toml` and `p.toml` are two caches of one file, which is
//! harmless).
//!
//! **Directory** ([`cache_dir_parts`]): `$ENVSHIM_CACHE_DIR` when it is absolute,
//! else `/run/user/<uid>/envshim` when `/run/user/<uid>` is the user's own runtime
//! directory, else `/tmp/envshim-<uid>`. Never under `HOME` or `XDG_CACHE_HOME`: a
//! program's tests make those their own (git's test suite makes `HOME` a
//! repository), and a cache that appears there changes what the program sees
//! (docs/adr/0012-cache-location.md).
//!
//! **Layout.** A cache file is either
//!
//! * exactly the bytes of a compiled policy (`Compiled::bytes()`), or
//! * a compiled policy followed by *notes* and a 12-byte footer:
//!
//! ```text
//! compiled policy (its header's length)
//! note*:  kind u8, len u32 LE, payload[len]
//! footer: notes length u32 LE, NOTES_MAGIC (8 bytes)
//! ```
//!
//! The two cannot be confused: a compiled policy's header holds its exact length,
//! so a file with notes never validates as a whole. Notes say what the compiled
//! dependencies (`DepRec`) cannot:
//!
//! * [`Note::Failure`]: the policy could not be compiled. The compiled part is then
//!   the fail-closed floor (compiled with the policy's path as its source, so its
//!   first dependency is the policy file), and the payload is the one-line warning
//!   (names a file, a line and a column, never a value). A reader enforces its own
//!   floor and shows the warning once; the marker spares every later process start
//!   a compile that would fail again.
//! * [`Note::Absent`]: a path (an import) that did not exist at compile time; the
//!   cache is stale once it appears (docs/adr/0002-compiled-policy.md: a missing
//!   import has no dependency record).
//! * [`Note::Stat`]: a path with its full stamp, ctime included: an import that
//!   exists but was not read (permissions), or, in a failure marker, the policy and
//!   its imports (a `chmod` that makes the policy readable must retry).
//!
//! Path payloads end with a NUL, so a reader can hand them to `stat(2)` in place.
//!
//! **Freshness** ([`check`]): the compiled policy's source is the policy path; its
//! first dependency is that path; every dependency's device, inode, size and mtime
//! match a fresh stat (a dependency recorded with a zero stat, a file that did not
//! exist at compile time, must still not exist); every note holds.

use crate::compiled::{Policy, Records};

/// FNV-1a 64 offset basis.
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a 64 prime.
const FNV_PRIME: u64 = 0x0100_0000_01b3;

/// 64-bit FNV-1a of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    fnv1a64_more(FNV_OFFSET, bytes)
}

/// 64-bit FNV-1a of what gave `h`, followed by `bytes`.
pub fn fnv1a64_more(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// Length of a cache file name.
pub const FILE_NAME_LEN: usize = 20;

/// The cache file name of the policy at `path` (absolute, see [`absolute_into`]):
/// 16 lowercase hex digits of `fnv1a64(path)`, then `.bin`.
pub fn cache_file_name(path: &[u8]) -> [u8; FILE_NAME_LEN] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let h = fnv1a64(path);
    let mut out = *b"0000000000000000.bin";
    for (i, slot) in out.iter_mut().take(16).enumerate() {
        let nibble = (h >> (60 - 4 * i)) & 0xf;
        *slot = HEX.get(nibble as usize).copied().unwrap_or(b'0');
    }
    out
}

/// The variable that names the cache directory; only an absolute path counts.
pub const CACHE_DIR_VAR: &str = crate::shared::CACHE_DIR;

/// The one rule for the cache directory (see the module docs), as the pieces to
/// join: `given` is `$ENVSHIM_CACHE_DIR` (`None` when unset), `uid` the user's
/// uid in decimal ([`crate::shown::decimal`]). `runtime_ours` is asked, with the
/// NUL-terminated path `/run/user/<uid>`, whether that is a directory owned by the
/// user that no one else can write (the caller's `stat`: the shim makes its own
/// system calls); it is not asked when `given` is used.
pub fn cache_dir_parts<'a>(
    given: Option<&'a [u8]>,
    uid: &'a [u8],
    runtime_ours: impl FnOnce(&[u8]) -> bool,
) -> [&'a [u8]; 3] {
    if let Some(dir) = given.filter(|d| d.first() == Some(&b'/')) {
        return [dir, b"", b""];
    }
    const RUNTIME: &[u8] = b"/run/user/";
    let mut runtime = [0u8; 40];
    let end = RUNTIME.len().saturating_add(uid.len());
    let built = match runtime.get_mut(..end).map(|r| r.split_at_mut(RUNTIME.len())) {
        Some((head, tail)) if tail.len() == uid.len() => {
            head.copy_from_slice(RUNTIME);
            tail.copy_from_slice(uid);
            // The byte after the path is still 0: the NUL.
            runtime.get(..=end)
        }
        _ => None,
    };
    if built.is_some_and(runtime_ours) {
        [RUNTIME, uid, b"/envshim"]
    } else {
        [b"/tmp/envshim-", uid, b""]
    }
}

/// The one rule that makes a policy path absolute: an absolute path is kept as
/// given; a relative one is `cwd`, a `/` unless `cwd` already ends with one, and
/// the path (what `Path::join` does). Writes into `out` and returns the length, or
/// `None` when `out` is too small or `cwd` is not absolute.
pub fn absolute_into(cwd: &[u8], path: &[u8], out: &mut [u8]) -> Option<usize> {
    let mut n = 0usize;
    let mut put = |bytes: &[u8]| -> Option<()> {
        let end = n.checked_add(bytes.len())?;
        out.get_mut(n..end)?.copy_from_slice(bytes);
        n = end;
        Some(())
    };
    if path.first() == Some(&b'/') {
        put(path)?;
    } else {
        if cwd.first() != Some(&b'/') {
            return None;
        }
        put(cwd)?;
        if cwd.last() != Some(&b'/') {
            put(b"/")?;
        }
        put(path)?;
    }
    Some(n)
}

/// Last 8 bytes of a cache file that carries notes.
pub const NOTES_MAGIC: &[u8; 8] = b"ENVSHIMN";
/// The footer: notes length (u32 LE) and `NOTES_MAGIC`.
pub const FOOTER_LEN: usize = 12;

/// Note kinds.
pub mod kind {
    pub const FAILURE: u8 = 1;
    pub const ABSENT: u8 = 2;
    pub const STAT: u8 = 3;
    pub const PRIVATE_GROUP: u8 = 4;
}

/// Bytes of a stamp in a `Stat` note.
pub const STAMP_LEN: usize = 40;

/// What `stat(2)` says about a file, as far as freshness is concerned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stamp {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
}

impl Stamp {
    /// From `stat` fields, combining seconds and nanoseconds the way the compiler
    /// does for `DepRec::mtime_ns`.
    pub fn new(dev: u64, ino: u64, size: u64, mtime: (i64, i64), ctime: (i64, i64)) -> Stamp {
        let ns = |(s, n): (i64, i64)| s.saturating_mul(1_000_000_000).saturating_add(n);
        Stamp {
            dev,
            ino,
            size,
            mtime_ns: ns(mtime),
            ctime_ns: ns(ctime),
        }
    }

    /// The 40-byte encoding used in a `Stat` note.
    pub fn encode(&self) -> [u8; STAMP_LEN] {
        let mut out = [0u8; STAMP_LEN];
        let fields = [
            self.dev.to_le_bytes(),
            self.ino.to_le_bytes(),
            self.size.to_le_bytes(),
            self.mtime_ns.to_le_bytes(),
            self.ctime_ns.to_le_bytes(),
        ];
        for (chunk, f) in out.chunks_exact_mut(8).zip(fields.iter()) {
            chunk.copy_from_slice(f);
        }
        out
    }

    fn decode(b: &[u8]) -> Option<Stamp> {
        let f = |i: usize| -> Option<[u8; 8]> { b.get(i * 8..i * 8 + 8)?.try_into().ok() };
        Some(Stamp {
            dev: u64::from_le_bytes(f(0)?),
            ino: u64::from_le_bytes(f(1)?),
            size: u64::from_le_bytes(f(2)?),
            mtime_ns: i64::from_le_bytes(f(3)?),
            ctime_ns: i64::from_le_bytes(f(4)?),
        })
    }
}

/// One note. Paths include their terminating NUL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Note<'a> {
    /// The policy did not compile: the warning line to show.
    Failure(&'a [u8]),
    /// Stale once this path exists.
    Absent(&'a [u8]),
    /// Stale once this path's stamp differs (or it is gone).
    Stat(Stamp, &'a [u8]),
    /// The user's private group, as the compile found it in the group database
    /// ([`crate::writers`]): a file of the user's in this group may be group-writable.
    /// Written only when a file the policy is built from needed it, with `Stat`
    /// notes of the group and user databases, so that a change to either makes
    /// the cache stale.
    PrivateGroup(u32),
}

/// The notes of a cache file (validated by [`open`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Notes<'a> {
    bytes: &'a [u8],
}

impl<'a> Notes<'a> {
    /// No notes.
    pub const EMPTY: Notes<'static> = Notes { bytes: &[] };

    /// Parse and check every note once.
    fn new(bytes: &'a [u8]) -> Option<Notes<'a>> {
        let mut rest = bytes;
        while !rest.is_empty() {
            let (_, tail) = next_note(rest)?;
            rest = tail;
        }
        Some(Notes { bytes })
    }

    pub fn iter(&self) -> NoteIter<'a> {
        NoteIter { rest: self.bytes }
    }

    /// The user's private group, if the compile recorded one.
    pub fn private_group(&self) -> Option<u32> {
        self.iter().find_map(|n| match n {
            Note::PrivateGroup(g) => Some(g),
            _ => None,
        })
    }

    /// The failure warning, if this cache is a failure marker.
    pub fn failure(&self) -> Option<&'a [u8]> {
        self.iter().find_map(|n| match n {
            Note::Failure(m) => Some(m),
            _ => None,
        })
    }
}

/// Iterator over notes.
pub struct NoteIter<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for NoteIter<'a> {
    type Item = Note<'a>;
    fn next(&mut self) -> Option<Note<'a>> {
        let (note, tail) = next_note(self.rest)?;
        self.rest = tail;
        Some(note)
    }
}

fn next_note(b: &[u8]) -> Option<(Note<'_>, &[u8])> {
    let k = *b.first()?;
    let len = u32::from_le_bytes(b.get(1..5)?.try_into().ok()?) as usize;
    let payload = b.get(5..5usize.checked_add(len)?)?;
    let tail = b.get(5 + len..)?;
    let is_cpath =
        |p: &[u8]| p.len() > 1 && p.last() == Some(&0) && crate::bytes::memchr(0, p) == Some(p.len() - 1);
    let note = match k {
        kind::FAILURE => Note::Failure(payload),
        kind::ABSENT if is_cpath(payload) => Note::Absent(payload),
        kind::STAT => {
            let path = payload.get(STAMP_LEN..)?;
            if !is_cpath(path) {
                return None;
            }
            Note::Stat(Stamp::decode(payload)?, path)
        }
        kind::PRIVATE_GROUP => Note::PrivateGroup(u32::from_le_bytes(payload.try_into().ok()?)),
        _ => return None,
    };
    Some((note, tail))
}

/// Append one note's encoding to `out` (used by the writer; `out` is the caller's
/// growable buffer, so this is a closure over its `extend`).
pub fn encode_note(note: &Note<'_>, mut out: impl FnMut(&[u8])) {
    let (k, head, body): (u8, &[u8], &[u8]) = match note {
        Note::Failure(m) => (kind::FAILURE, &[], m),
        Note::Absent(p) => (kind::ABSENT, &[], p),
        Note::Stat(s, p) => (kind::STAT, &s.encode()[..], p),
        Note::PrivateGroup(g) => (kind::PRIVATE_GROUP, &[], &g.to_le_bytes()[..]),
    };
    // Only the writer (std) calls this, with paths and messages far below 4 GiB.
    let len = (head.len() + body.len()) as u32;
    out(&[k]);
    out(&len.to_le_bytes());
    out(head);
    out(body);
}

/// Split and validate a cache file: the compiled policy and its notes; an error
/// when the file is neither layout (a truncated or foreign file).
pub fn open(file: &[u8]) -> Result<(Policy<'_>, Notes<'_>), OpenError> {
    open_with(file, Policy::from_bytes)
}

/// [`open`] with only the header and section table of the policy checked
/// ([`Policy::peek`]): enough for [`check`]. libenvshim.so opens its cache this way
/// at load and validates fully at the first exec.
pub fn open_peek(file: &[u8]) -> Result<(Records<'_>, Notes<'_>), OpenError> {
    open_with(file, Policy::peek)
}

fn open_with<'a, T>(
    file: &'a [u8],
    read: fn(&'a [u8]) -> Result<T, crate::compiled::FormatError>,
) -> Result<(T, Notes<'a>), OpenError> {
    let whole = match read(file) {
        Ok(p) => return Ok((p, Notes::EMPTY)),
        Err(e) => e,
    };
    let Some(split) = file.len().checked_sub(FOOTER_LEN) else {
        return Err(OpenError::Format(whole));
    };
    let (body, footer) = file.split_at(split);
    if footer.get(4..) != Some(&NOTES_MAGIC[..]) {
        return Err(OpenError::Format(whole));
    }
    let notes_len = footer
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_le_bytes)
        .ok_or(OpenError::BadNotes)? as usize;
    let at = body
        .len()
        .checked_sub(notes_len)
        .ok_or(OpenError::BadNotes)?;
    let (compiled, notes) = body.split_at(at);
    let policy = read(compiled).map_err(OpenError::Format)?;
    let notes = Notes::new(notes).ok_or(OpenError::BadNotes)?;
    Ok((policy, notes))
}

/// Why a cache file could not be opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenError {
    Format(crate::compiled::FormatError),
    BadNotes,
}

impl OpenError {
    pub fn describe(self) -> &'static str {
        match self {
            OpenError::Format(e) => e.describe(),
            OpenError::BadNotes => "compiled policy cache has corrupt notes",
        }
    }
}

/// Why a cache is not the fresh compiled form of a policy file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stale {
    /// Compiled from another path (a hash collision, or a copied file).
    OtherPolicy,
    /// The policy itself is not its first dependency.
    NoPolicyDep,
    /// A dependency or a noted file changed, appeared or disappeared.
    Changed,
}

impl Stale {
    pub fn describe(self) -> &'static str {
        match self {
            Stale::OtherPolicy => "the cache was compiled from another policy file",
            Stale::NoPolicyDep => "the cache does not record the policy file",
            Stale::Changed => "the policy or a file it imports changed",
        }
    }
}

/// Is `policy` (with `notes`) the fresh compiled form of the policy at
/// `policy_path` (absolute, without NUL)? `stat` stats a NUL-terminated path and
/// returns `None` when it cannot (missing, or not reachable).
pub fn check<'a>(
    policy: &Records<'a>,
    notes: &Notes<'a>,
    policy_path: &[u8],
    mut stat: impl FnMut(&'a [u8]) -> Option<Stamp>,
) -> Result<(), Stale> {
    own_path(policy, policy_path)?;
    let n = policy.count(crate::compiled::sec::DEPS) as u32;
    // A file can be both a dependency and a note (an imported env file): it is
    // stat'ed once. (Every process start under the shim runs this check.)
    let mut seen: [(&'a [u8], Option<Stamp>); 8] = [(&[], None); 8];
    let mut n_seen = 0usize;
    let mut stat = |p: &'a [u8]| -> Option<Stamp> {
        if let Some((_, st)) = seen.iter().take(n_seen).find(|(q, _)| *q == p) {
            return *st;
        }
        let st = stat(p);
        if let Some(slot) = seen.get_mut(n_seen) {
            *slot = (p, st);
            n_seen += 1;
        }
        st
    };
    for i in 0..n {
        let d = policy.dep(i).ok_or(Stale::Changed)?;
        if !dep_fresh(&d, stat(policy.c_str(d.path))) {
            return Err(Stale::Changed);
        }
    }
    for note in notes.iter() {
        let ok = match note {
            Note::Failure(_) => true,
            Note::Absent(p) => stat(p).is_none(),
            Note::Stat(s, p) => stat(p) == Some(s),
            Note::PrivateGroup(_) => true,
        };
        if !ok {
            return Err(Stale::Changed);
        }
    }
    Ok(())
}

/// The first part of [`check`]: compiled from `policy_path`, and the policy file
/// itself (its first dependency) unchanged; one `stat`. What the policy file alone
/// says (its settings, which programs it names) is then current, but not what it
/// takes from the files it imports: [`check`] must still pass before it decides
/// anything. (libenvshim.so asks only this at a process start that needs nothing
/// more, and the rest at the first exec.)
pub fn check_policy_file<'a>(
    policy: &Records<'a>,
    policy_path: &[u8],
    stat: impl FnOnce(&'a [u8]) -> Option<Stamp>,
) -> Result<(), Stale> {
    let first = own_path(policy, policy_path)?;
    if dep_fresh(&first, stat(policy.c_str(first.path))) {
        Ok(())
    } else {
        Err(Stale::Changed)
    }
}

/// Compiled from `policy_path`, which is recorded as the first dependency: that
/// record.
fn own_path(policy: &Records<'_>, policy_path: &[u8]) -> Result<crate::compiled::DepRec, Stale> {
    if policy.source() != policy_path {
        return Err(Stale::OtherPolicy);
    }
    let first = policy.dep(0).ok_or(Stale::NoPolicyDep)?;
    if policy.str(first.path) != policy_path {
        return Err(Stale::NoPolicyDep);
    }
    Ok(first)
}

/// Does the file of dependency record `d` still have the stamp recorded (`now` is
/// its `stat` now, `None` when it cannot be)?
/// Has env file `file` of `policy` changed since the policy was compiled, so that
/// it may declare names the compiled policy does not know? `now` is its stamp as
/// it is now (`None`: not there). A file that was not there at compile time has
/// no dependency record: it changed once it appears.
pub fn import_changed(policy: &Records<'_>, file: u32, now: Option<Stamp>) -> bool {
    let Some(path) = policy.env_file(file).map(|r| policy.str(r.path)) else {
        return false;
    };
    let n = policy.count(crate::compiled::sec::DEPS) as u32;
    match (0..n)
        .filter_map(|i| policy.dep(i))
        .find(|d| policy.str(d.path) == path)
    {
        Some(d) => !dep_fresh(&d, now),
        None => now.is_some(),
    }
}

fn dep_fresh(d: &crate::compiled::DepRec, now: Option<Stamp>) -> bool {
    match now {
        // A zero record: the file did not exist at compile time.
        None => d.dev == 0 && d.ino == 0,
        Some(s) => (s.dev, s.ino, s.size, s.mtime_ns) == (d.dev, d.ino, d.size, d.mtime_ns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_known_values() {
        // Reference values of FNV-1a 64.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(&cache_file_name(b""), b"cbf29ce484222325.bin");
    }

    #[test]
    fn cache_dir_rule() {
        let dir = |given: Option<&[u8]>, ours: bool| {
            let mut asked = Vec::new();
            let parts = cache_dir_parts(given, b"1000", |p| {
                asked.extend_from_slice(p);
                ours
            });
            (String::from_utf8(parts.concat()).unwrap(), asked)
        };
        assert_eq!(dir(Some(b"/c"), false).0, "/c");
        assert!(dir(Some(b"/c"), true).1.is_empty(), "no stat when given");
        let (d, asked) = dir(None, true);
        assert_eq!(d, "/run/user/1000/envshim");
        assert_eq!(asked, b"/run/user/1000\0");
        assert_eq!(dir(None, false).0, "/tmp/envshim-1000");
        // A relative directory would move with the working directory: not used.
        assert_eq!(dir(Some(b"rel"), false).0, "/tmp/envshim-1000");
        assert_eq!(dir(Some(b""), true).0, "/run/user/1000/envshim");
    }

    #[test]
    fn absolute_rule() {
        let mut out = [0u8; 64];
        let n = absolute_into(b"/w", b"p.toml", &mut out).unwrap();
        assert_eq!(&out[..n], b"/w/p.toml");
        let n = absolute_into(b"/", b"p.toml", &mut out).unwrap();
        assert_eq!(&out[..n], b"/p.toml");
        let n = absolute_into(b"/w", b"/etc/p.toml", &mut out).unwrap();
        assert_eq!(&out[..n], b"/etc/p.toml");
        assert_eq!(absolute_into(b"rel", b"p", &mut out), None);
        assert_eq!(absolute_into(b"/w", b"p", &mut out[..3]), None);
    }

    #[test]
    fn notes_round_trip() {
        let mut buf = Vec::new();
        let s = Stamp::new(1, 2, 3, (4, 5), (6, 7));
        for n in [
            Note::Failure(b"envshim: p.toml:1:2: bad"),
            Note::Absent(b"/x\0"),
            Note::Stat(s, b"/y\0"),
        ] {
            encode_note(&n, |b| buf.extend_from_slice(b));
        }
        let notes = Notes::new(&buf).unwrap();
        let all: Vec<_> = notes.iter().collect();
        assert_eq!(all.len(), 3);
        assert_eq!(all[2], Note::Stat(s, b"/y\0"));
        assert_eq!(notes.failure(), Some(&b"envshim: p.toml:1:2: bad"[..]));
        // A path without its NUL, a truncated note, an unknown kind.
        assert!(Notes::new(&[kind::ABSENT, 2, 0, 0, 0, b'/', b'x']).is_none());
        assert!(Notes::new(&buf[..buf.len() - 1]).is_none());
        assert!(Notes::new(&[9, 0, 0, 0, 0]).is_none());
    }
}
