//! The compiled form of a policy: one flat byte buffer that decisions read in place.
//!
//! Why a byte buffer and not a tree of `Vec`s: libenvshim.so is `#![no_std]` without
//! `alloc`, it must decide between fork and exec, and loading it into a process that
//! never spawns must cost about what an empty C library costs. So the shim never
//! parses TOML. It maps a compiled buffer (or uses the built-in one) and reads it
//! where it lies; envwrap and the Rust API read the very same buffer from a `Vec`.
//! One reader, one meaning (see docs/adr/0002-compiled-policy.md).
//!
//! Layout, all integers little-endian:
//!
//! ```text
//! header (HEADER_LEN bytes): magic, format, scalar settings, string refs
//! section table: SECTIONS x (offset u32, length u32)
//! sections: strings, patterns, exact-name table, glob list, programs, matchers,
//!           sets, grants, env files, file-sourced keeps, dependencies, secrets
//! ```
//!
//! Every string in the pool is followed by a NUL byte, so a path or a prebuilt
//! `NAME=VALUE` entry can be handed to the kernel as is. `Policy::from_bytes`
//! validates every offset once; after that, accessors still use checked reads and
//! return `None` rather than panic, because a panic in the shim aborts its host.

use crate::glob::GlobKind;
use core::mem::offset_of;

/// First bytes of every compiled policy.
pub const MAGIC: &[u8; 8] = b"ENVSHIM\0";
/// Bumped whenever the layout changes; a cache of another format is recompiled.
pub const FORMAT: u32 = 3;
/// Size of the fixed header.
pub const HEADER_LEN: usize = 64;
/// Number of sections in the section table.
pub const SECTIONS: usize = 12;
/// A program-scoped pattern's scope when it applies to every program.
pub const GLOBAL: u16 = u16::MAX;
/// At most this many `[program.*]` sections (a program mask is a `u64`).
pub const MAX_PROGRAMS: usize = 64;

/// Section indices.
pub mod sec {
    pub const STRINGS: usize = 0;
    pub const PATTERNS: usize = 1;
    pub const EXACT: usize = 2;
    pub const GLOBS: usize = 3;
    pub const PROGRAMS: usize = 4;
    pub const MATCHERS: usize = 5;
    pub const SETS: usize = 6;
    pub const GRANTS: usize = 7;
    pub const ENV_FILES: usize = 8;
    pub const FILE_KEEPS: usize = 9;
    pub const DEPS: usize = 10;
    pub const SECRETS: usize = 11;
}

/// The records, one `#[repr(C)]` struct per section, defined once: the reader
/// (`Policy`) and the writer (`envpolicy::compiled::Writer`) take each field's
/// place from `offset_of!`, and [`RECORD_LEN`] is their sizes. Every field is a
/// little-endian byte array, so a struct has no padding the compiler chose and no
/// alignment: its layout is the file's, which the assertions below pin.
pub mod layout {
    /// A little-endian integer of 1, 2, 4 or 8 bytes.
    pub type U8 = [u8; 1];
    pub type U16 = [u8; 2];
    pub type U32 = [u8; 4];
    pub type U64 = [u8; 8];
    /// A `StrRef`: offset, then length, both `U32`.
    pub type Str = [u8; 8];

    #[repr(C)]
    pub struct Pattern {
        pub text: Str,
        pub class: U8,
        pub kind: U8,
        pub scope: U16,
        pub specificity: U32,
        pub line: U32,
        pub col: U32,
    }

    /// An entry of the exact-name table, or of the glob list: a pattern index.
    #[repr(C)]
    pub struct Index {
        pub pattern: U32,
    }

    #[repr(C)]
    pub struct Program {
        pub name: Str,
        pub self_scrub: U8,
        pub pairs_base: U8,
        pub _pad: U16,
        pub line: U32,
    }

    #[repr(C)]
    pub struct Matcher {
        pub pattern: Str,
        pub kind: U8,
        pub _pad: [u8; 3],
        pub program: U32,
    }

    #[repr(C)]
    pub struct Set {
        pub scope: U16,
        pub expands: U8,
        pub _pad: U8,
        pub name: Str,
        pub value: Str,
        pub entry: Str,
        pub line: U32,
    }

    #[repr(C)]
    pub struct Grant {
        pub name: Str,
        pub program: Str,
        pub kind: U8,
        pub _pad: [u8; 3],
        pub line: U32,
    }

    #[repr(C)]
    pub struct EnvFile {
        pub path: Str,
        pub role: U8,
        pub values: U8,
        pub _pad: U16,
        pub line: U32,
    }

    #[repr(C)]
    pub struct FileKeep {
        pub name: Str,
        pub file: U32,
        pub pattern: U32,
    }

    /// A `[[secret]]`: `deny` holds its `deny_args` lists, each word followed by
    /// a NUL and each list by one more NUL (no argument can hold a NUL).
    #[repr(C)]
    pub struct Secret {
        pub name: Str,
        pub source: Str,
        pub program: Str,
        pub deny: Str,
        pub source_kind: U8,
        pub kind: U8,
        pub _pad: U16,
        pub line: U32,
    }

    #[repr(C)]
    pub struct Dep {
        pub path: Str,
        pub dev: U64,
        pub ino: U64,
        pub size: U64,
        pub mtime_ns: U64,
    }
}

/// Record sizes, per section (0 = raw bytes), from [`layout`].
pub const RECORD_LEN: [usize; SECTIONS] = {
    use core::mem::size_of;
    use layout::*;
    [
        0,
        size_of::<Pattern>(),
        size_of::<Index>(),
        size_of::<Index>(),
        size_of::<Program>(),
        size_of::<Matcher>(),
        size_of::<Set>(),
        size_of::<Grant>(),
        size_of::<EnvFile>(),
        size_of::<FileKeep>(),
        size_of::<Dep>(),
        size_of::<Secret>(),
    ]
};
// The sizes of FORMAT 3: a change here is a change of format.
const _: () = {
    let expected = [0, 24, 4, 4, 16, 16, 32, 24, 16, 16, 40, 40];
    let mut i = 0;
    while i < SECTIONS {
        assert!(
            RECORD_LEN[i] == expected[i],
            "a record's size changed: bump FORMAT"
        );
        i += 1;
    }
};

/// `mode`: what a front end does with a decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    /// Apply every change.
    Enforce = 0,
    /// Report what enforce would change; change nothing.
    Audit = 1,
}

/// `supervise.changes`: what `envwrap --supervise` does with an exec that the
/// policy would change without refusing it (docs/adr/0016).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum SuperviseChanges {
    /// Fail it with EPERM and say why: the supervisor cannot make the change.
    Refuse = 0,
    /// Let it run unchanged, say so and log it.
    Audit = 1,
}

/// `base`: what a child starts from, before keep and strip.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Base {
    /// Start empty.
    None = 0,
    /// Start from the documented floor (`builtin::FLOOR`).
    Floor = 1,
    /// Inherit everything (what a policy that names no base gets).
    #[default]
    All = 2,
}

impl Base {
    /// The policy's word for it (`base = "..."`).
    pub fn id(self) -> &'static str {
        match self {
            Base::None => "none",
            Base::Floor => "floor",
            Base::All => "all",
        }
    }

    pub fn from_u8(v: u8) -> Option<Base> {
        Some(match v {
            0 => Base::None,
            1 => Base::Floor,
            2 => Base::All,
            _ => return None,
        })
    }
}

/// `argv.secrets`: what happens to an argument that holds a credential value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ArgvSecrets {
    /// The exec fails with EPERM.
    Refuse = 0,
    /// The value is overwritten with `*` in the argument; the exec goes on.
    Redact = 1,
    /// Arguments are not scanned.
    Allow = 2,
}

/// What a pattern is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Class {
    /// `keep`: add the name back.
    Keep = 1,
    /// `strip`: remove the name.
    Strip = 2,
    /// A credential name (built-in or `credentials.names`): refused.
    Credential = 3,
    /// A name declared in an env file imported with `role = "strip"`.
    ImportStrip = 4,
    /// A name declared in an env file with `role = "refuse"`, or found under a
    /// config key suffix: a credential.
    ImportCredential = 5,
    /// `[program.X.pairs] keep`: admits a `NAME=VALUE` pair in X's argv.
    PairKeep = 6,
    /// `[program.X.pairs] strip`.
    PairStrip = 7,
    /// A built-in unsafe name.
    Unsafe = 8,
    /// A floor name (`base = "floor"`).
    Floor = 9,
    /// A name whose value is checked for `/` and `%`.
    CheckedValue = 10,
}

impl Class {
    pub fn from_u8(v: u8) -> Option<Class> {
        Some(match v {
            1 => Class::Keep,
            2 => Class::Strip,
            3 => Class::Credential,
            4 => Class::ImportStrip,
            5 => Class::ImportCredential,
            6 => Class::PairKeep,
            7 => Class::PairStrip,
            8 => Class::Unsafe,
            9 => Class::Floor,
            10 => Class::CheckedValue,
            _ => return None,
        })
    }

    /// Credential names match without regard to ASCII case.
    pub fn folds_case(self) -> bool {
        matches!(self, Class::Credential)
    }
}

/// `role` of an imported env file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Role {
    /// Declared names are stripped unless kept by exact name.
    Strip = 0,
    /// Declared names are credentials: refused even when kept.
    Refuse = 1,
}

/// A string in the pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StrRef {
    pub off: u32,
    pub len: u32,
}

/// The scalar settings of the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    pub mode: Mode,
    pub base: Base,
    /// Rule 5: strip unsafe names (unless kept by exact name).
    pub strip_unsafe: bool,
    /// Rule 8: re-insert the shim's LD_PRELOAD entry and policy variable.
    pub sticky: bool,
    pub argv_secrets: ArgvSecrets,
    /// Filter `NAME=VALUE` pairs carried in argv (tmux -e, docker -e, env, ...).
    pub env_flags: bool,
    /// Default self-scrub for programs with no section that says otherwise.
    pub self_scrub: bool,
    /// Which token shapes are detected (a `ShapeSet` bitmask).
    pub shapes: u16,
    /// Credential values shorter than this are not searched for in argv.
    pub min_value_len: u32,
    /// What `envwrap --supervise` does with an exec it cannot change.
    pub supervise_changes: SuperviseChanges,
    /// `quiet`: say nothing of the credentials withheld from a child
    /// (`decide::Verdict::withheld`). Header byte 26, which older files hold as 0.
    pub quiet: bool,
    /// `mask`: envwrap masks known credential values in every command's
    /// output (`envwrap --mask`). Header byte 27, which older files hold as 0.
    pub mask: bool,
}

/// A pattern record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PatternRec {
    pub text: StrRef,
    pub class: Class,
    pub kind: GlobKind,
    pub scope: u16,
    pub specificity: u32,
    /// Source position in the policy file, 0 for built-in entries.
    pub line: u32,
    pub col: u32,
}

/// A `[program.NAME]` section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgramRec {
    pub name: StrRef,
    /// The section's `self_scrub`, if it says.
    pub self_scrub: Option<bool>,
    /// `pairs.base`, when the section has a `pairs` table.
    pub pairs_base: Option<Base>,
    pub line: u32,
}

impl ProgramRec {
    /// The record's bytes for `self_scrub`: 0 = not said, 1 = off, 2 = on.
    pub fn self_scrub_byte(self) -> u8 {
        match self.self_scrub {
            None => 0,
            Some(false) => 1,
            Some(true) => 2,
        }
    }

    /// The record's byte for `pairs_base`: the base + 1, or 0 without a table.
    pub fn pairs_base_byte(self) -> u8 {
        self.pairs_base.map_or(0, |b| b as u8 + 1)
    }

    fn self_scrub_of(byte: u8) -> Option<Option<bool>> {
        match byte {
            0 => Some(None),
            1 => Some(Some(false)),
            2 => Some(Some(true)),
            _ => None,
        }
    }

    fn pairs_base_of(byte: u8) -> Option<Option<Base>> {
        match byte {
            0 => Some(None),
            b => Base::from_u8(b - 1).map(Some),
        }
    }
}

/// One `match` entry of a program section: a basename, or a path glob when it
/// contains `/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatcherRec {
    pub pattern: StrRef,
    pub kind: GlobKind,
    pub program: u32,
}

/// A `set` entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetRec {
    pub scope: u16,
    /// The value holds `${NAME}` references to expand at decision time.
    pub expands: bool,
    pub name: StrRef,
    pub value: StrRef,
    /// The prebuilt `NAME=VALUE` entry (for values without references).
    pub entry: StrRef,
    pub line: u32,
}

/// A `[[grant]]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrantRec {
    pub name: StrRef,
    pub program: StrRef,
    pub kind: GlobKind,
    pub line: u32,
}

/// At most this many secrets in a policy: a set of them is a `u16`
/// (`crate::secret`'s rules are written for it).
pub const MAX_SECRETS: usize = 16;

/// Where a secret's value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum SourceKind {
    /// `file:PATH`: a file owned by root or the user, that no one else may read.
    File = 0,
    /// `keyring:user:DESCRIPTION`: a `user` key found by the kernel's search of
    /// the process's keyrings (`keyctl search` from the session keyring).
    Keyring = 1,
    /// `credential:NAME`: systemd's `$CREDENTIALS_DIRECTORY/NAME`, under a unit
    /// that loads it; the same trust rule as a file.
    Credential = 2,
    /// `command:PATH ARGS...`: the standard output of a helper (`pass`, `op`,
    /// `secret-tool`), run in the process that becomes the program
    /// ([`crate::secret::helper`]). The source holds each word NUL-terminated.
    Command = 3,
}

impl SourceKind {
    pub fn from_u8(b: u8) -> Option<SourceKind> {
        match b {
            0 => Some(SourceKind::File),
            1 => Some(SourceKind::Keyring),
            2 => Some(SourceKind::Credential),
            3 => Some(SourceKind::Command),
            _ => None,
        }
    }

    /// The prefix the policy file writes before the source.
    pub fn prefix(self) -> &'static str {
        match self {
            SourceKind::File => "file:",
            SourceKind::Keyring => "keyring:user:",
            SourceKind::Credential => "credential:",
            SourceKind::Command => "command:",
        }
    }

    /// Split a `from` value into its kind and the rest.
    pub fn parse(from: &[u8]) -> Option<(SourceKind, &[u8])> {
        [
            SourceKind::File,
            SourceKind::Keyring,
            SourceKind::Credential,
            SourceKind::Command,
        ]
        .into_iter()
        .find_map(|k| {
            from.strip_prefix(k.prefix().as_bytes())
                .map(|rest| (k, rest))
        })
        .filter(|(_, rest)| !rest.is_empty())
    }
}

/// A `[[secret]]`: where its value comes from, and which programs get it
/// (docs/adr/0019-secrets-delivered-at-exec.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SecretRec {
    pub name: StrRef,
    pub source_kind: SourceKind,
    /// The source after its kind: a path (`~/` expanded by the compile), a key
    /// description, or a credential name.
    pub source: StrRef,
    pub program: StrRef,
    pub kind: GlobKind,
    /// The `deny_args` lists, encoded as [`layout::Secret`] says.
    pub deny: StrRef,
    pub line: u32,
}

/// An imported env file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnvFileRec {
    pub path: StrRef,
    pub role: Role,
    /// Kept names declared in the file take their value from it, re-read per decision.
    pub values: bool,
    pub line: u32,
}

/// A kept exact name that an env file with `values = true` declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileKeepRec {
    pub name: StrRef,
    pub file: u32,
    /// The keep pattern that admits the name (its scope is the keep's scope).
    pub pattern: u32,
}

/// A file the compiled form depends on: the policy and every import, as stat saw
/// them at compile time. A cache whose dependencies changed is recompiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DepRec {
    pub path: StrRef,
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
}

/// Why a buffer is not a usable compiled policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatError {
    TooShort,
    BadMagic,
    OtherFormat(u32),
    BadLength,
    BadSection(usize),
    BadRecord(usize),
}

impl FormatError {
    pub fn describe(self) -> &'static str {
        match self {
            FormatError::TooShort => "compiled policy is truncated",
            FormatError::BadMagic => "not a compiled envshim policy",
            FormatError::OtherFormat(_) => "compiled policy of another format version",
            FormatError::BadLength => "compiled policy length does not match its header",
            FormatError::BadSection(_) => "compiled policy has a section out of bounds",
            FormatError::BadRecord(_) => "compiled policy has a corrupt record",
        }
    }
}

// ---------------------------------------------------------------------------
// Reading

fn u8_at(b: &[u8], at: usize) -> Option<u8> {
    b.get(at).copied()
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    let s = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_le_bytes([*s.first()?, *s.get(1)?]))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    let mut a = [0u8; 4];
    a.copy_from_slice(s);
    Some(u32::from_le_bytes(a))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

fn str_at(b: &[u8], at: usize) -> Option<StrRef> {
    Some(StrRef {
        off: u32_at(b, at)?,
        len: u32_at(b, at.checked_add(4)?)?,
    })
}

/// A compiled policy read as far as its header and section table
/// ([`Policy::peek`]): the settings and every record accessor, but not validated
/// and without the decoded globs that decisions need. It is small (a few hundred
/// bytes), so that libenvshim.so's constructor can read a policy's log path,
/// dependencies and self-scrub programs without a multi-KiB value on its stack
/// (every stack page a process start touches is a page fault; docs/benchmarks.md).
/// A [`Policy`] dereferences to its `Records`.
#[derive(Clone, Copy, Debug)]
pub struct Records<'a> {
    bytes: &'a [u8],
    settings: Settings,
    sections: [(usize, usize); SECTIONS],
}

/// A validated compiled policy, borrowed from wherever its bytes live (a `Vec`, a
/// static, or a read-only mapping).
#[derive(Clone, Copy, Debug)]
pub struct Policy<'a> {
    records: Records<'a>,
    /// The first `FAST_GLOBS` globs, decoded once (see `FastGlob`).
    fast: [FastGlob<'a>; FAST_GLOBS],
    n_fast: usize,
    /// `fast[..group_ends[0]]` are prefix globs, then suffix globs up to
    /// `group_ends[1]`, then the rest up to `group_ends[2]`.
    group_ends: [usize; 3],
    /// One-byte filters over the fast globs, so a name is compared only with the
    /// globs it can match: first bytes of prefix globs and last bytes of suffix
    /// globs (both ASCII cases). Each glob also carries the `name_bits` of its
    /// literal bytes (`FastGlob::need`).
    pub(crate) filters: GlobFilters,
    /// A Bloom filter over the exact names' hashes (one bit each, see
    /// `exact_may_hold`): most names of an environment are in no list, and this
    /// rules them out without probing the table.
    exact_bloom: [u64; BLOOM_WORDS],
    /// What a name must have for some glob to match it ([`Policy::may_match`]).
    gates: NameGates,
    /// False when some glob is not decoded (more than `FAST_GLOBS`): then
    /// `may_match` cannot rule a name out.
    all_fast: bool,
}

/// Two-byte windows in [`NameGates`]: more distinct ones than this and the
/// windows' globs are filtered by their literal bytes (`name_bits`) instead.
pub const GATE_PAIRS: usize = 4;

/// For every decoded glob, one cheap test that every name it matches passes
/// (on byte classes that fold ASCII case, see [`byte_class`]): its first two
/// bytes for a glob that starts with a literal (`LC_*`, `A*B`), else its last two
/// for one that ends with one (`*_TOKEN`, `*A*B`), else its first two literal
/// bytes side by side anywhere in the name (`*SECRET*` needs `SE`). A one-byte
/// literal end tests that byte alone. Most names of an environment fail all of
/// them, and that costs two bit tests and a few word operations instead of a
/// look-up per byte of the name.
#[derive(Clone, Copy, Debug)]
struct NameGates {
    /// Bit `class(b)` of word `class(a)`: some glob starts with `a b`.
    first: [u64; 64],
    /// Bit `class(b)` of word `class(a)`: some glob ends with `a b`.
    last: [u64; 64],
    /// The windows, each byte `| 0x20` (both ASCII cases alike).
    pairs: [[u8; 2]; GATE_PAIRS],
    /// The same, each byte repeated 16 times (the vector compare's operands).
    splat: [[[u8; 16]; 2]; GATE_PAIRS],
    n_pairs: usize,
    /// More windows than `GATE_PAIRS`: the `FastGlob::need` sets of the globs the
    /// windows stand for, without duplicates and without a set that holds another
    /// one (a name that has all of a larger set has all of the smaller one).
    need: [u64; FAST_GLOBS],
    n_need: usize,
    /// Some glob has no gate (`*`, `*X*`): every name must be matched for real.
    open: bool,
}

impl Default for NameGates {
    fn default() -> Self {
        NameGates {
            first: [0; 64],
            last: [0; 64],
            pairs: [[0; 2]; GATE_PAIRS],
            splat: [[[0; 16]; 2]; GATE_PAIRS],
            n_pairs: 0,
            need: [0; FAST_GLOBS],
            n_need: 0,
            open: false,
        }
    }
}

/// The class of a byte for [`NameGates`] and [`name_bits`]: `(b | 0x20) & 63`, the
/// same for both ASCII cases of a letter.
#[inline(always)]
pub fn byte_class(b: u8) -> usize {
    usize::from((b | 0x20) & 63)
}

/// Sets bit `class(b)` of word `class(a)` in `table`, or of every word when `a`
/// is `None` (a one-byte literal end), or every bit of word `class(a)` when `b`
/// is `None`.
fn insert_two(table: &mut [u64; 64], a: Option<u8>, b: Option<u8>) {
    let bits = b.map_or(u64::MAX, |b| 1u64 << byte_class(b));
    match a {
        Some(a) => {
            if let Some(w) = table.get_mut(byte_class(a)) {
                *w |= bits;
            }
        }
        None => table.iter_mut().for_each(|w| *w |= bits),
    }
}

/// Is bit `class(b)` of word `class(a)` set?
#[inline(always)]
fn has_two(table: &[u64; 64], a: u8, b: u8) -> bool {
    table
        .get(byte_class(a))
        .is_some_and(|w| (w >> byte_class(b)) & 1 == 1)
}

impl<'a> core::ops::Deref for Policy<'a> {
    type Target = Records<'a>;
    fn deref(&self) -> &Records<'a> {
        &self.records
    }
}

/// Size of `Policy::exact_bloom`: 4096 bits, so a few hundred exact names leave
/// most bits clear.
const BLOOM_WORDS: usize = 64;

/// The Bloom bit of a name hash. It uses bits 16 and up: the table's slot comes
/// from the low bits, and the filter should not repeat that choice.
#[inline(always)]
fn bloom_bit(hash: u32) -> (usize, u64) {
    let bit = (hash >> 16) as usize % (BLOOM_WORDS * 64);
    (bit / 64, 1u64 << (bit % 64))
}

/// 256-bit byte sets; see `Policy::filters`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct GlobFilters {
    pub prefix_first: ByteSet,
    pub suffix_last: ByteSet,
    /// A glob that can match any name (`*`, `**`): the filters cannot skip it.
    pub any: bool,
}

/// The set of bytes in `text`, as a 64-bit mask: byte `b` sets bit
/// `(b | 0x20) & 63`, so both ASCII cases of a letter set the same bit (a
/// case-insensitive pattern needs no second mask). Distinct bytes may share a bit;
/// the mask is a filter: a name whose bits do not cover a glob's literal bytes
/// cannot match it, and a name that passes is matched for real.
#[inline]
pub fn name_bits(text: &[u8]) -> u64 {
    let mut bits = 0u64;
    for &b in text {
        bits |= byte_bit(b);
    }
    bits
}

/// The bit of one byte in [`name_bits`]: a table look-up, which keeps the loops
/// over names scalar (a vectorised variable shift costs more on short names).
#[inline(always)]
pub fn byte_bit(b: u8) -> u64 {
    BYTE_BITS.get(usize::from(b)).copied().unwrap_or(0)
}

static BYTE_BITS: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut b = 0usize;
    while b < 256 {
        t[b] = 1u64 << ((b as u8 | 0x20) & 63);
        b += 1;
    }
    t
};

/// A set of bytes.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ByteSet([u64; 4]);

impl ByteSet {
    fn insert_folded(&mut self, b: u8) {
        for c in [b.to_ascii_uppercase(), b.to_ascii_lowercase()] {
            if let Some(w) = self.0.get_mut(usize::from(c >> 6)) {
                *w |= 1u64 << (c & 63);
            }
        }
    }

    #[inline]
    pub fn has(&self, b: u8) -> bool {
        self.0
            .get(usize::from(b >> 6))
            .is_some_and(|w| (w >> (b & 63)) & 1 == 1)
    }
}

/// How many globs are decoded once at load; further globs (rare: the built-in
/// lists hold about 15) are decoded on each use.
pub const FAST_GLOBS: usize = 32;

impl NameGates {
    /// The gates of the decoded globs `fast`.
    fn of(fast: &[FastGlob<'_>]) -> NameGates {
        let mut g = NameGates::default();
        let mut windowed = [false; FAST_GLOBS];
        for (i, glob) in fast.iter().enumerate() {
            let text = glob.text;
            let lit = |b: Option<&u8>| b.copied().filter(|&b| b != b'*');
            let n = text.len();
            match (text.first(), text.last()) {
                (Some(&b), _) if b != b'*' => {
                    insert_two(&mut g.first, Some(b), lit(text.get(1)));
                }
                (_, Some(&b)) if b != b'*' => {
                    let before = n.checked_sub(2).and_then(|i| lit(text.get(i)));
                    insert_two(&mut g.last, before, Some(b));
                }
                _ => {
                    // `*...*`: the first run of two literal bytes.
                    let pair = text
                        .windows(2)
                        .find(|w| w.iter().all(|&b| b != b'*'))
                        .map(|w| w.iter().map(|&b| b | 0x20));
                    let Some(mut pair) = pair else {
                        g.open = true;
                        continue;
                    };
                    let pair = [pair.next().unwrap_or(0), pair.next().unwrap_or(0)];
                    if let Some(flag) = windowed.get_mut(i) {
                        *flag = true;
                    }
                    let known = g.pairs.get(..g.n_pairs).unwrap_or(&[]).contains(&pair);
                    if !known {
                        if let Some(slot) = g.pairs.get_mut(g.n_pairs) {
                            *slot = pair;
                        }
                        if let Some(slot) = g.splat.get_mut(g.n_pairs) {
                            *slot = pair.map(|b| [b; 16]);
                        }
                        g.n_pairs += 1;
                    }
                }
            }
        }
        if g.n_pairs > GATE_PAIRS {
            // Too many windows to test: the need sets of the same globs instead.
            let needs = fast
                .iter()
                .zip(windowed)
                .filter(|(_, w)| *w)
                .map(|(glob, _)| glob.need);
            for need in needs.clone() {
                // Keep `need` unless another set is inside it (equal sets once).
                let covered = needs.clone().any(|o| o & !need == 0 && o != need);
                let known = g.need.get(..g.n_need).unwrap_or(&[]).contains(&need);
                if !covered && !known {
                    if let Some(slot) = g.need.get_mut(g.n_need) {
                        *slot = need;
                        g.n_need += 1;
                    }
                }
            }
        }
        g
    }

    /// Could the name `entry[..len]` hold one of the windows?
    #[inline(always)]
    fn window_may_hold(&self, entry: &[u8], len: usize) -> bool {
        if self.n_pairs > GATE_PAIRS {
            let name = entry.get(..len).unwrap_or(entry);
            let present = name_bits(name);
            let needs = self.need.get(..self.n_need).unwrap_or(&[]);
            return needs.iter().any(|&need| need & !present == 0);
        }
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        if let Some(found) = windows_in_blocks(entry, len, self.splat.get(..self.n_pairs)) {
            return found;
        }
        // Short entries (and other architectures): byte by byte.
        let pairs = self.pairs.get(..self.n_pairs).unwrap_or(&[]);
        let name = entry.get(..len).unwrap_or(entry);
        name.windows(2).any(|w| {
            let (Some(&a), Some(&b)) = (w.first(), w.get(1)) else {
                return false;
            };
            pairs.contains(&[a | 0x20, b | 0x20])
        })
    }
}

/// [`NameGates::window_may_hold`] 16 positions at a time: each window is compared
/// with the block at a position and the block one byte on, folded. `None` when
/// `entry` is too short to read the blocks from (then the caller scans bytes).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn windows_in_blocks(entry: &[u8], len: usize, splat: Option<&[[[u8; 16]; 2]]>) -> Option<bool> {
    use core::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8, _mm_setzero_si128,
    };
    let splat = splat?;
    // A window starts at 0 .. len - 1.
    let starts = len.checked_sub(1)?;
    let mut at = 0usize;
    while at < starts {
        // The blocks at `at` and `at + 1`: 17 bytes of `entry`.
        let bytes = entry.get(at..at.checked_add(17)?)?;
        // SAFETY: the intrinsics need SSE2, which this function is compiled only
        // with (the cfg above); the loads read inside `bytes` (17 bytes long:
        // offsets 0..16 and 1..17) and inside each 16-byte array of `splat`.
        let hits = unsafe {
            let fold = _mm_set1_epi8(0x20);
            let x = _mm_or_si128(_mm_loadu_si128(bytes.as_ptr().cast::<__m128i>()), fold);
            let y = _mm_or_si128(
                _mm_loadu_si128(bytes.as_ptr().add(1).cast::<__m128i>()),
                fold,
            );
            let mut any = _mm_setzero_si128();
            for [a, b] in splat {
                let both = _mm_and_si128(
                    _mm_cmpeq_epi8(x, _mm_loadu_si128(a.as_ptr().cast::<__m128i>())),
                    _mm_cmpeq_epi8(y, _mm_loadu_si128(b.as_ptr().cast::<__m128i>())),
                );
                any = _mm_or_si128(any, both);
            }
            _mm_movemask_epi8(any) as u32 & 0xffff
        };
        let left = starts - at;
        let valid = if left < 16 {
            (1u32 << left) - 1
        } else {
            0xffff
        };
        if hits & valid != 0 {
            return Some(true);
        }
        at += 16;
    }
    Some(false)
}

/// A glob pattern decoded once, when the policy is loaded, so that matching every
/// name against every glob does not decode records on the hot path.
#[derive(Clone, Copy, Debug)]
pub struct FastGlob<'a> {
    pub text: &'a [u8],
    pub rec: PatternRec,
    pub idx: u32,
    /// [`name_bits`] of the glob's literal bytes: a name must have all of them.
    pub need: u64,
}

impl FastGlob<'_> {
    const EMPTY: FastGlob<'static> = FastGlob {
        text: &[],
        rec: PatternRec {
            text: StrRef { off: 0, len: 0 },
            class: Class::Keep,
            kind: GlobKind::Exact,
            scope: GLOBAL,
            specificity: 0,
            line: 0,
            col: 0,
        },
        idx: 0,
        need: 0,
    };
}

impl<'a> Policy<'a> {
    /// Validate `bytes` and borrow them as a policy.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Policy<'a>, FormatError> {
        let records = Policy::peek(bytes)?;
        records.validate()?;
        let mut policy = Policy {
            records,
            fast: [FastGlob::EMPTY; FAST_GLOBS],
            n_fast: 0,
            group_ends: [0; 3],
            filters: GlobFilters::default(),
            exact_bloom: [0; BLOOM_WORDS],
            gates: NameGates::default(),
            all_fast: false,
        };
        policy.decode_globs()?;
        Ok(policy)
    }

    /// Check only the header and the section table: enough to read a cache's
    /// dependencies and source cheaply (libenvshim.so does this in every process at
    /// load, and validates fully at the first exec). Every accessor stays
    /// panic-free on a peeked policy, but decisions need [`Policy::from_bytes`].
    pub fn peek(bytes: &'a [u8]) -> Result<Records<'a>, FormatError> {
        if bytes.len() < HEADER_LEN + SECTIONS * 8 {
            return Err(FormatError::TooShort);
        }
        if bytes.get(..8) != Some(&MAGIC[..]) {
            return Err(FormatError::BadMagic);
        }
        let format = u32_at(bytes, 8).ok_or(FormatError::TooShort)?;
        if format != FORMAT {
            return Err(FormatError::OtherFormat(format));
        }
        let total = u32_at(bytes, 12).ok_or(FormatError::TooShort)? as usize;
        if total != bytes.len() {
            return Err(FormatError::BadLength);
        }
        let mut sections = [(0usize, 0usize); SECTIONS];
        for (i, slot) in sections.iter_mut().enumerate() {
            let at = HEADER_LEN + i * 8;
            let off = u32_at(bytes, at).ok_or(FormatError::TooShort)? as usize;
            let len = u32_at(bytes, at + 4).ok_or(FormatError::TooShort)? as usize;
            let end = off.checked_add(len).ok_or(FormatError::BadSection(i))?;
            if end > bytes.len() || off < HEADER_LEN + SECTIONS * 8 {
                return Err(FormatError::BadSection(i));
            }
            let rec = RECORD_LEN.get(i).copied().unwrap_or(0);
            if rec != 0 && len % rec != 0 {
                return Err(FormatError::BadSection(i));
            }
            *slot = (off, len);
        }
        let h = |at: usize| u8_at(bytes, at).ok_or(FormatError::TooShort);
        let settings = Settings {
            mode: if h(16)? == 1 {
                Mode::Audit
            } else {
                Mode::Enforce
            },
            base: Base::from_u8(h(17)?).ok_or(FormatError::BadRecord(0))?,
            strip_unsafe: h(18)? != 0,
            sticky: h(19)? != 0,
            argv_secrets: match h(20)? {
                0 => ArgvSecrets::Refuse,
                1 => ArgvSecrets::Redact,
                2 => ArgvSecrets::Allow,
                _ => return Err(FormatError::BadRecord(0)),
            },
            env_flags: h(21)? != 0,
            self_scrub: h(22)? != 0,
            supervise_changes: match h(23)? {
                0 => SuperviseChanges::Refuse,
                1 => SuperviseChanges::Audit,
                _ => return Err(FormatError::BadRecord(0)),
            },
            shapes: u16_at(bytes, 24).ok_or(FormatError::TooShort)?,
            min_value_len: u32_at(bytes, 28).ok_or(FormatError::TooShort)?,
            quiet: h(26)? != 0,
            mask: h(27)? != 0,
        };
        Ok(Records {
            bytes,
            settings,
            sections,
        })
    }

    /// Decode the globs once (see `FastGlob`, `GlobFilters`).
    fn decode_globs(&mut self) -> Result<(), FormatError> {
        let policy = self;
        for slot in 0..policy.exact_slots() {
            let Some(idx) = policy.exact_slot(slot).filter(|&i| i != u32::MAX) else {
                continue;
            };
            let rec = policy
                .pattern(idx)
                .ok_or(FormatError::BadRecord(sec::EXACT))?;
            let (word, bit) = bloom_bit(name_hash(policy.str(rec.text)));
            if let Some(w) = policy.exact_bloom.get_mut(word) {
                *w |= bit;
            }
        }
        let globs = policy.globs();
        let mut fast = [FastGlob::EMPTY; FAST_GLOBS];
        for (slot, idx) in fast.iter_mut().zip(globs) {
            let rec = policy
                .pattern(idx)
                .ok_or(FormatError::BadRecord(sec::GLOBS))?;
            let text = policy.str(rec.text);
            let need = text
                .iter()
                .filter(|&&b| b != b'*')
                .fold(0u64, |bits, &b| bits | name_bits(&[b]));
            *slot = FastGlob {
                text,
                rec,
                idx,
                need,
            };
            policy.n_fast += 1;
            let f = &mut policy.filters;
            match rec.kind {
                GlobKind::Prefix => match text.first() {
                    Some(&b) if b != b'*' => f.prefix_first.insert_folded(b),
                    _ => f.any = true,
                },
                GlobKind::Suffix => match text.last() {
                    Some(&b) if b != b'*' => f.suffix_last.insert_folded(b),
                    _ => f.any = true,
                },
                GlobKind::Contains | GlobKind::General | GlobKind::Exact => {
                    if !text.iter().any(|&b| b != b'*') {
                        f.any = true;
                    }
                }
            }
        }
        // Group the decoded globs by kind (prefix, suffix, the rest), keeping file
        // order within a group, so that a name only walks the groups its one-byte
        // filters let through. An insertion sort: at most FAST_GLOBS entries, no
        // allocation.
        let n = policy.n_fast;
        let group = |g: &FastGlob<'_>| match g.rec.kind {
            GlobKind::Prefix => 0u8,
            GlobKind::Suffix => 1,
            _ => 2,
        };
        for i in 1..n {
            let mut j = i;
            while j > 0 {
                let (Some(a), Some(b)) = (fast.get(j - 1), fast.get(j)) else {
                    break;
                };
                if group(a) <= group(b) {
                    break;
                }
                fast.swap(j - 1, j);
                j -= 1;
            }
        }
        let count = |k: u8| fast.iter().take(n).filter(|g| group(g) == k).count();
        policy.group_ends = [count(0), count(0) + count(1), n];
        policy.gates = NameGates::of(fast.get(..n).unwrap_or(&[]));
        policy.all_fast = policy.globs().count() <= FAST_GLOBS;
        policy.fast = fast;
        Ok(())
    }
}

impl<'a> Records<'a> {
    /// The raw bytes (for writing a cache file).
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    fn validate(&self) -> Result<(), FormatError> {
        let strings = self.section(sec::STRINGS);
        let ok_str = |r: StrRef| -> bool {
            let end = (r.off as usize).checked_add(r.len as usize);
            // Every string is followed by its NUL terminator.
            matches!(end, Some(e) if strings.get(e) == Some(&0))
        };
        if !ok_str(self.source_ref()) || !ok_str(self.log_ref()) {
            return Err(FormatError::BadRecord(0));
        }
        let n_patterns = self.count(sec::PATTERNS);
        let n_programs = self.count(sec::PROGRAMS);
        if n_programs > MAX_PROGRAMS {
            return Err(FormatError::BadSection(sec::PROGRAMS));
        }
        let scope_ok = |s: u16| s == GLOBAL || (s as usize) < n_programs;
        for i in 0..n_patterns {
            let p = self
                .pattern(i as u32)
                .ok_or(FormatError::BadRecord(sec::PATTERNS))?;
            if !ok_str(p.text) || !scope_ok(p.scope) {
                return Err(FormatError::BadRecord(sec::PATTERNS));
            }
        }
        let exact = self.count(sec::EXACT);
        if exact != 0 && !exact.is_power_of_two() {
            return Err(FormatError::BadSection(sec::EXACT));
        }
        for i in 0..exact {
            let v = self
                .u32_in(sec::EXACT, i)
                .ok_or(FormatError::BadRecord(sec::EXACT))?;
            if v != u32::MAX && v as usize >= n_patterns {
                return Err(FormatError::BadRecord(sec::EXACT));
            }
        }
        for i in 0..self.count(sec::GLOBS) {
            let v = self
                .u32_in(sec::GLOBS, i)
                .ok_or(FormatError::BadRecord(sec::GLOBS))?;
            if v as usize >= n_patterns {
                return Err(FormatError::BadRecord(sec::GLOBS));
            }
        }
        for i in 0..n_programs {
            let p = self
                .program(i as u32)
                .ok_or(FormatError::BadRecord(sec::PROGRAMS))?;
            if !ok_str(p.name) {
                return Err(FormatError::BadRecord(sec::PROGRAMS));
            }
        }
        for i in 0..self.count(sec::MATCHERS) {
            let m = self
                .matcher(i as u32)
                .ok_or(FormatError::BadRecord(sec::MATCHERS))?;
            if !ok_str(m.pattern) || m.program as usize >= n_programs {
                return Err(FormatError::BadRecord(sec::MATCHERS));
            }
        }
        for i in 0..self.count(sec::SETS) {
            let s = self
                .set(i as u32)
                .ok_or(FormatError::BadRecord(sec::SETS))?;
            if !ok_str(s.name) || !ok_str(s.value) || !ok_str(s.entry) || !scope_ok(s.scope) {
                return Err(FormatError::BadRecord(sec::SETS));
            }
        }
        for i in 0..self.count(sec::GRANTS) {
            let g = self
                .grant(i as u32)
                .ok_or(FormatError::BadRecord(sec::GRANTS))?;
            if !ok_str(g.name) || !ok_str(g.program) {
                return Err(FormatError::BadRecord(sec::GRANTS));
            }
        }
        let n_files = self.count(sec::ENV_FILES);
        for i in 0..n_files {
            let f = self
                .env_file(i as u32)
                .ok_or(FormatError::BadRecord(sec::ENV_FILES))?;
            if !ok_str(f.path) {
                return Err(FormatError::BadRecord(sec::ENV_FILES));
            }
        }
        for i in 0..self.count(sec::FILE_KEEPS) {
            let k = self
                .file_keep(i as u32)
                .ok_or(FormatError::BadRecord(sec::FILE_KEEPS))?;
            if !ok_str(k.name) || k.file as usize >= n_files || k.pattern as usize >= n_patterns {
                return Err(FormatError::BadRecord(sec::FILE_KEEPS));
            }
        }
        for i in 0..self.count(sec::DEPS) {
            let d = self
                .dep(i as u32)
                .ok_or(FormatError::BadRecord(sec::DEPS))?;
            if !ok_str(d.path) {
                return Err(FormatError::BadRecord(sec::DEPS));
            }
        }
        if self.count(sec::SECRETS) > MAX_SECRETS {
            return Err(FormatError::BadRecord(sec::SECRETS));
        }
        for i in 0..self.count(sec::SECRETS) {
            let s = self
                .secret(i as u32)
                .ok_or(FormatError::BadRecord(sec::SECRETS))?;
            if !ok_str(s.name) || !ok_str(s.source) || !ok_str(s.program) || !ok_str(s.deny) {
                return Err(FormatError::BadRecord(sec::SECRETS));
            }
        }
        Ok(())
    }

    /// The scalar settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    fn section(&self, i: usize) -> &'a [u8] {
        match self.sections.get(i) {
            Some(&(off, len)) => self.bytes.get(off..off.saturating_add(len)).unwrap_or(&[]),
            None => &[],
        }
    }

    /// Number of records in section `i`.
    pub fn count(&self, i: usize) -> usize {
        let rec = RECORD_LEN.get(i).copied().unwrap_or(0);
        self.section(i).len().checked_div(rec).unwrap_or(0)
    }

    fn record(&self, i: usize, n: u32) -> Option<&'a [u8]> {
        let rec = RECORD_LEN.get(i).copied()?;
        let start = (n as usize).checked_mul(rec)?;
        self.section(i).get(start..start.checked_add(rec)?)
    }

    fn u32_in(&self, i: usize, n: usize) -> Option<u32> {
        u32_at(self.section(i), n.checked_mul(4)?)
    }

    /// The bytes of a pooled string (without its NUL).
    pub fn str(&self, r: StrRef) -> &'a [u8] {
        let off = r.off as usize;
        self.section(sec::STRINGS)
            .get(off..off.saturating_add(r.len as usize))
            .unwrap_or(&[])
    }

    /// The bytes of a pooled string including its NUL terminator.
    pub fn c_str(&self, r: StrRef) -> &'a [u8] {
        let off = r.off as usize;
        self.section(sec::STRINGS)
            .get(off..off.saturating_add(r.len as usize).saturating_add(1))
            .unwrap_or(&[0])
    }

    fn source_ref(&self) -> StrRef {
        str_at(self.bytes, 32).unwrap_or_default()
    }

    fn log_ref(&self) -> StrRef {
        str_at(self.bytes, 40).unwrap_or_default()
    }

    /// The policy file this was compiled from (`<built-in>` for the default).
    pub fn source(&self) -> &'a [u8] {
        self.str(self.source_ref())
    }

    /// The audit and warning log file, if the policy names one (NUL-terminated).
    pub fn log_path(&self) -> Option<&'a [u8]> {
        let r = self.log_ref();
        (r.len > 0).then(|| self.c_str(r))
    }

    pub fn pattern(&self, n: u32) -> Option<PatternRec> {
        use layout::Pattern as L;
        let r = self.record(sec::PATTERNS, n)?;
        Some(PatternRec {
            text: str_at(r, offset_of!(L, text))?,
            class: Class::from_u8(u8_at(r, offset_of!(L, class))?)?,
            kind: GlobKind::from_u8(u8_at(r, offset_of!(L, kind))?)?,
            scope: u16_at(r, offset_of!(L, scope))?,
            specificity: u32_at(r, offset_of!(L, specificity))?,
            line: u32_at(r, offset_of!(L, line))?,
            col: u32_at(r, offset_of!(L, col))?,
        })
    }

    /// Slot `n` of the exact-name hash table (`u32::MAX` = empty).
    pub fn exact_slot(&self, n: usize) -> Option<u32> {
        self.u32_in(sec::EXACT, n)
    }

    /// Number of slots in the exact-name hash table (a power of two, or 0).
    pub fn exact_slots(&self) -> usize {
        self.count(sec::EXACT)
    }

    /// Pattern indices of every glob, in file order.
    pub fn globs(&self) -> impl Iterator<Item = u32> + 'a {
        self.section(sec::GLOBS)
            .chunks_exact(4)
            .map(|c| u32_at(c, 0).unwrap_or(0))
    }

    pub fn program(&self, n: u32) -> Option<ProgramRec> {
        use layout::Program as L;
        let r = self.record(sec::PROGRAMS, n)?;
        Some(ProgramRec {
            name: str_at(r, offset_of!(L, name))?,
            self_scrub: ProgramRec::self_scrub_of(u8_at(r, offset_of!(L, self_scrub))?)?,
            pairs_base: ProgramRec::pairs_base_of(u8_at(r, offset_of!(L, pairs_base))?)?,
            line: u32_at(r, offset_of!(L, line))?,
        })
    }

    pub fn matcher(&self, n: u32) -> Option<MatcherRec> {
        use layout::Matcher as L;
        let r = self.record(sec::MATCHERS, n)?;
        Some(MatcherRec {
            pattern: str_at(r, offset_of!(L, pattern))?,
            kind: GlobKind::from_u8(u8_at(r, offset_of!(L, kind))?)?,
            program: u32_at(r, offset_of!(L, program))?,
        })
    }

    pub fn set(&self, n: u32) -> Option<SetRec> {
        use layout::Set as L;
        let r = self.record(sec::SETS, n)?;
        Some(SetRec {
            scope: u16_at(r, offset_of!(L, scope))?,
            expands: u8_at(r, offset_of!(L, expands))? != 0,
            name: str_at(r, offset_of!(L, name))?,
            value: str_at(r, offset_of!(L, value))?,
            entry: str_at(r, offset_of!(L, entry))?,
            line: u32_at(r, offset_of!(L, line))?,
        })
    }

    pub fn grant(&self, n: u32) -> Option<GrantRec> {
        use layout::Grant as L;
        let r = self.record(sec::GRANTS, n)?;
        Some(GrantRec {
            name: str_at(r, offset_of!(L, name))?,
            program: str_at(r, offset_of!(L, program))?,
            kind: GlobKind::from_u8(u8_at(r, offset_of!(L, kind))?)?,
            line: u32_at(r, offset_of!(L, line))?,
        })
    }

    pub fn secret(&self, n: u32) -> Option<SecretRec> {
        use layout::Secret as L;
        let r = self.record(sec::SECRETS, n)?;
        Some(SecretRec {
            name: str_at(r, offset_of!(L, name))?,
            source_kind: SourceKind::from_u8(u8_at(r, offset_of!(L, source_kind))?)?,
            source: str_at(r, offset_of!(L, source))?,
            program: str_at(r, offset_of!(L, program))?,
            kind: GlobKind::from_u8(u8_at(r, offset_of!(L, kind))?)?,
            deny: str_at(r, offset_of!(L, deny))?,
            line: u32_at(r, offset_of!(L, line))?,
        })
    }

    pub fn env_file(&self, n: u32) -> Option<EnvFileRec> {
        use layout::EnvFile as L;
        let r = self.record(sec::ENV_FILES, n)?;
        Some(EnvFileRec {
            path: str_at(r, offset_of!(L, path))?,
            role: if u8_at(r, offset_of!(L, role))? == 1 {
                Role::Refuse
            } else {
                Role::Strip
            },
            values: u8_at(r, offset_of!(L, values))? != 0,
            line: u32_at(r, offset_of!(L, line))?,
        })
    }

    pub fn file_keep(&self, n: u32) -> Option<FileKeepRec> {
        use layout::FileKeep as L;
        let r = self.record(sec::FILE_KEEPS, n)?;
        Some(FileKeepRec {
            name: str_at(r, offset_of!(L, name))?,
            file: u32_at(r, offset_of!(L, file))?,
            pattern: u32_at(r, offset_of!(L, pattern))?,
        })
    }

    pub fn dep(&self, n: u32) -> Option<DepRec> {
        use layout::Dep as L;
        let r = self.record(sec::DEPS, n)?;
        Some(DepRec {
            path: str_at(r, offset_of!(L, path))?,
            dev: u64_at(r, offset_of!(L, dev))?,
            ino: u64_at(r, offset_of!(L, ino))?,
            size: u64_at(r, offset_of!(L, size))?,
            mtime_ns: u64_at(r, offset_of!(L, mtime_ns))? as i64,
        })
    }
}

impl<'a> Policy<'a> {
    /// False when no exact name of the policy has this `name_hash`: then the
    /// table needs no probe. (True may be a false positive.)
    #[inline]
    pub fn exact_may_hold(&self, hash: u32) -> bool {
        let (word, bit) = bloom_bit(hash);
        self.exact_bloom.get(word).is_some_and(|w| w & bit != 0)
    }

    /// False when no pattern of the policy, in any section, can match the name
    /// `entry[..len]` (whose [`name_hash`] is `hash`): the common case, decided
    /// without walking the patterns (see `NameGates`). True may be a false
    /// positive. `entry` may go on past the name (a `NAME=VALUE` entry): the
    /// windows are then read in whole blocks.
    #[inline(always)]
    pub fn may_match(&self, entry: &[u8], len: usize, hash: u32) -> bool {
        let name = entry.get(..len).unwrap_or(entry);
        let g = &self.gates;
        let (Some(&a), Some(&b), Some(&y), Some(&z)) = (
            name.first(),
            name.get(1),
            name.len().checked_sub(2).and_then(|i| name.get(i)),
            name.last(),
        ) else {
            // Names under two bytes are matched for real.
            return true;
        };
        !self.all_fast
            || g.open
            || self.exact_may_hold(hash)
            || has_two(&g.first, a, b)
            || has_two(&g.last, y, z)
            || (g.n_pairs != 0 && g.window_may_hold(entry, name.len()))
    }

    /// The globs decoded at load (all of them, unless a policy has more than
    /// `FAST_GLOBS`).
    pub fn fast_globs(&self) -> &[FastGlob<'a>] {
        self.fast.get(..self.n_fast).unwrap_or(&[])
    }

    /// The decoded prefix globs, suffix globs, and the rest.
    pub fn glob_groups(&self) -> [&[FastGlob<'a>]; 3] {
        let [a, b, c] = self.group_ends;
        [
            self.fast.get(..a).unwrap_or(&[]),
            self.fast.get(a..b).unwrap_or(&[]),
            self.fast.get(b..c).unwrap_or(&[]),
        ]
    }

    /// Pattern indices of the globs that `fast_globs` does not hold.
    pub fn slow_globs(&self) -> impl Iterator<Item = u32> + 'a {
        // Sliced, not `globs().skip(..)`: skipping would decode every fast glob's
        // index again, for every name.
        self.section(sec::GLOBS)
            .get(FAST_GLOBS * 4..)
            .unwrap_or(&[])
            .chunks_exact(4)
            .map(|c| u32_at(c, 0).unwrap_or(0))
    }
}

/// The hash used by the exact-name table and by duplicate detection, over the
/// ASCII-uppercased bytes, so that case-folding credential names land in the same
/// probe run as their exact spellings.
///
/// It reads eight bytes at a time and folds case in the word (the classic SWAR
/// range test), because it runs once or twice for every variable of every exec.
/// Changing it changes the compiled format: bump `FORMAT`.
#[inline]
pub fn name_hash(name: &[u8]) -> u32 {
    name_key(name).hash
}

/// What the decision needs to know of a name before matching it: its
/// [`name_hash`], and whether it holds an ASCII lower-case letter (then
/// case-insensitive patterns compare against an upper-cased copy). Both come
/// from one pass over the name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NameKey {
    pub hash: u32,
    pub has_lower: bool,
}

/// [`NameKey`] of `name`.
#[inline]
pub fn name_key(name: &[u8]) -> NameKey {
    name_key_in(name, name.len())
}

/// [`NameKey`] of `entry[..len]`, reading the name's last partial word from
/// `entry` in one load where `entry` goes on past it (a `NAME=VALUE` entry always
/// does): a byte loop over a name's tail was a tenth of the per-variable cost.
/// The result is the same as `name_key(&entry[..len])`.
#[inline]
pub fn name_key_in(entry: &[u8], len: usize) -> NameKey {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let name = entry.get(..len).unwrap_or(entry);
    let len = name.len();
    let mut h: u64 = len as u64;
    let mut lower = 0u64;
    let mut chunks = name.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        let (up, low) = upper_word(u64::from_le_bytes(w));
        lower |= low;
        h = (h.rotate_left(5) ^ up).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let full = len - rest.len();
        let word = |b: &[u8]| b.first_chunk::<8>().map(|c| u64::from_le_bytes(*c));
        // The tail as a zero-padded little-endian word: the eight bytes from the
        // tail on, masked, or the eight bytes ending at the tail, shifted down.
        let w = match (entry.get(full..).and_then(word), len.checked_sub(8)) {
            (Some(w), _) => w & ((1u64 << (8 * rest.len())) - 1),
            (None, Some(start)) => name
                .get(start..)
                .and_then(word)
                .map_or(0, |w| w >> (8 * (8 - rest.len()))),
            // Built in a register: a byte-wise copy into memory followed by an
            // 8-byte load stalls the CPU (the load cannot be forwarded).
            (None, None) => rest
                .iter()
                .enumerate()
                .fold(0u64, |w, (i, &b)| w | u64::from(b) << (8 * i)),
        };
        let (up, low) = upper_word(w);
        lower |= low;
        h = (h.rotate_left(5) ^ up).wrapping_mul(K);
    }
    // Finish with a full avalanche (murmur3's fmix64): the table indexes by the
    // low bits, which the multiplications above leave weak.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    NameKey {
        hash: h as u32,
        has_lower: lower != 0,
    }
}

/// ASCII-uppercase eight bytes at once; bytes >= 0x80 are left alone. Also
/// returns the high bit of each byte that was a lower-case letter.
#[inline(always)]
fn upper_word(x: u64) -> (u64, u64) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let low7 = x & !HIGH;
    // High bit set in each byte whose low seven bits are >= 'a', resp. > 'z'.
    let ge_a = low7.wrapping_add((0x80 - u64::from(b'a')) * ONES);
    let gt_z = low7.wrapping_add((0x80 - u64::from(b'z') - 1) * ONES);
    let lower = ge_a & !gt_z & !x & HIGH;
    (x - (lower >> 2), lower)
}

// ---------------------------------------------------------------------------
// Writing: `envpolicy::compiled::Writer`, in the std crate (it allocates).

#[cfg(test)]
mod tests {
    use super::name_hash;

    /// The definition of `name_key`: eight-byte words, the last one zero-padded.
    fn reference_key(name: &[u8]) -> super::NameKey {
        let mut h = name.len() as u64;
        let mut lower = 0;
        for c in name.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            let (up, low) = super::upper_word(u64::from_le_bytes(w));
            lower |= low;
            h = (h.rotate_left(5) ^ up).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        super::NameKey {
            hash: h as u32,
            has_lower: lower != 0,
        }
    }

    #[test]
    fn name_key_in_reads_the_tail_from_the_entry_with_the_same_result() {
        let entry = b"Some_Name_With_Every_Length=value and more bytes after it";
        for len in 0..=entry.len() {
            let want = reference_key(&entry[..len]);
            // The tail read past the name, from the name alone (a word ending at
            // the tail, or bytes for a name under eight), and at the end of an
            // entry that stops right after the name.
            assert_eq!(super::name_key_in(entry, len), want, "len {len}");
            assert_eq!(super::name_key(&entry[..len]), want, "len {len}");
            for extra in 0..8 {
                let end = (len + extra).min(entry.len());
                assert_eq!(
                    super::name_key_in(&entry[..end], len),
                    want,
                    "len {len}+{extra}"
                );
            }
        }
    }

    #[test]
    fn name_hash_folds_ascii_case_only() {
        for (a, b) in [
            ("GH_TOKEN", "gh_token"),
            ("a", "A"),
            (
                "Mixed_Case_Name_Longer_Than_8",
                "MIXED_CASE_NAME_LONGER_THAN_8",
            ),
            ("z{`@[", "Z{`@["),
        ] {
            assert_eq!(name_hash(a.as_bytes()), name_hash(b.as_bytes()), "{a} {b}");
        }
        // Bytes next to the letter ranges and non-ASCII bytes are not folded.
        for (a, b) in [("`", "@"), ("{", "["), ("\u{e9}", "\u{c9}")] {
            assert_ne!(name_hash(a.as_bytes()), name_hash(b.as_bytes()), "{a} {b}");
        }
        // Every byte value against the scalar definition, in every lane.
        for lane in 0..8 {
            for b in 0..=255u8 {
                let mut x = [b'_'; 8];
                x[lane] = b;
                let mut y = x;
                y[lane] = b.to_ascii_uppercase();
                assert_eq!(name_hash(&x), name_hash(&y));
                assert_eq!(
                    super::upper_word(u64::from_le_bytes(x)).0,
                    u64::from_le_bytes(y),
                    "byte {b} lane {lane}"
                );
                assert_eq!(
                    super::name_key(&x).has_lower,
                    b.is_ascii_lowercase(),
                    "byte {b} lane {lane}"
                );
            }
        }
    }
}
