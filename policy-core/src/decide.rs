//! Deciding a child's environment: the rule order of docs/adr/0001-rule-order.md,
//! applied to one environment without allocating.
//!
//! # The invariant this module holds
//!
//! `decide_env` runs inside libenvshim.so's exec hooks, which may run in the child of
//! a `fork()` taken by a multithreaded program, or in a `vfork()` child that shares
//! its parent's memory. There, another thread may have held the malloc lock at the
//! moment of the fork, so calling malloc can deadlock, and in a vfork child it would
//! corrupt the parent's heap. So this module never allocates: the caller hands in
//! every buffer (`EnvScratch`), the result is a list of indices into the caller's
//! environment plus entries built into the caller's byte buffer, and a buffer that
//! is too small is reported (`Shortfall`) so the caller can find a larger one and try
//! again, rather than truncate. Nothing here formats, locks or reads the process
//! environment: the caller passes in everything a decision depends on.
//!
//! # Rule order, per entry
//!
//! 1. normalise: an entry without `=` or with an empty name is dropped; a later copy
//!    of a name already seen is dropped, whatever happened to the first;
//! 2. base: `all` keeps, `none` drops, `floor` keeps the floor names;
//! 3. keep and strip: the most specific matching pattern wins, strip on a tie;
//! 4. refuse: a credential (by name, by import, or by the shape of its value) that
//!    is still kept is refused, unless a grant names it and this program;
//! 5. unsafe: loader and interpreter hooks are stripped unless kept by exact name,
//!    and locale, terminal and zone values holding `/` or `%` are stripped;
//! 6. file values: a kept name that an env file imported with `values = true`
//!    declares takes its value from that file's current contents (passed in by
//!    the caller);
//!    6b. secrets: a `[[secret]]` whose program this is delivers the value its
//!    front end read for it (`EnvRequest::secrets`), in place of any inherited
//!    entry of its name; an inherited entry that holds a delivered value is
//!    refused like any copy of a credential ([`crate::secret`]);
//! 7. set: the policy's own values replace any entry of the same name, last;
//! 8. stay: the shim's `LD_PRELOAD` entry and policy variable are put back.
//!
//! The numbers are those of ADR 0001 and of [`Rule`]'s variants.

use crate::compiled::{Base, Class, NameKey, PatternRec, Policy, Settings};
use crate::bytes::split_entry;
use crate::envfile;
use crate::identity::Identity;
use crate::programs::in_scope;
use crate::glob::{self, GlobKind};
use crate::shape::{self, Shape, ShapeSet};

/// What happens to one entry of the input environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Action {
    /// Passed to the child unchanged.
    Keep,
    /// Removed quietly: not admitted by the base, keep, strip or unsafe rules, or
    /// malformed or duplicate.
    Strip,
    /// Removed loudly: a credential that would otherwise have been kept.
    Refuse,
    /// A credential passed on because a grant names it and this program.
    Grant,
    /// Replaced by an entry the policy builds (a set value, a value from an env
    /// file, or the shim's own sticky variables).
    Replace,
}

impl Action {
    /// Does the entry reach the child as it is?
    pub fn passes(self) -> bool {
        matches!(self, Action::Keep | Action::Grant)
    }

    pub fn id(self) -> &'static str {
        match self {
            Action::Keep => "keep",
            Action::Strip => "strip",
            Action::Refuse => "refuse",
            Action::Grant => "grant",
            Action::Replace => "replace",
        }
    }
}

/// Which rule decided. Pattern, set, grant and file-keep payloads are record
/// indices in the compiled policy, so an explanation can name the rule and its
/// line without the decision holding any text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Rule 1: the entry has no `=`.
    NoEquals,
    /// Rule 1: the entry's name is empty.
    EmptyName,
    /// Rule 1: a later copy of a name; the payload is the index of the first copy.
    Duplicate(u32),
    /// Rule 2, `base = "all"`.
    BaseAll,
    /// Rule 2, `base = "none"`.
    BaseNone,
    /// Rule 2, `base = "floor"`, a name outside the floor.
    OutsideFloor,
    /// Rule 2, a floor name.
    Floor(u32),
    /// Rule 3, a keep pattern.
    Keep(u32),
    /// Rule 3, a strip pattern, or a name imported from an env file to strip.
    Strip(u32),
    /// Rules 3 and 4 for a name that env file N declares now but did not when the
    /// policy was compiled: stripped, or refused for `role = "refuse"`.
    FileName(u32),
    /// Rule 4, a credential by name or by import.
    CredentialName(u32),
    /// Rule 4, a credential by the shape of its value.
    CredentialShape(Shape),
    /// Rule 4, a credential by the shape of its name (a token pasted as a name).
    CredentialNameShape(Shape),
    /// Rule 4, a value equal to the value of a credential elsewhere in the
    /// environment; the payload is that entry's index.
    CredentialValue(u32),
    /// Rule 4, a granted entry whose value is the value of a credential under
    /// another name in the calling process's environment (payload: its index
    /// there).
    CredentialParentValue(u32),
    /// Rule 4, a grant let a credential through.
    Grant(u32),
    /// Rule 5, an unsafe name.
    UnsafeName(u32),
    /// Rule 5, an unsafe value of a checked name.
    UnsafeValue(u32),
    /// Rule 6, the value came from an env file (payload: file-keep record).
    FileValue(u32),
    /// Rule 6, the env file now holds a value the policy refuses for this name
    /// (payload: file-keep record): neither it nor the inherited value passes.
    FileValueRefused(u32),
    /// Rule 6b, the value of secret N, read from its source for this program.
    Secret(u32),
    /// Rule 6b, an entry holding the value of secret N (raw or base64) that this
    /// exec delivers.
    SecretValue(u32),
    /// Rule 6b, a loader or interpreter hook (an unsafe name, or `LD_PRELOAD`
    /// beyond the shim) at an exec that delivers secret N: stripped whatever
    /// keeps it, so that no code the program did not bring runs with the secret.
    SecretHooks(u32),
    /// Rule 7, a set value (payload: set record).
    Set(u32),
    /// Rule 8, the shim's own variables.
    Sticky,
}

/// The decision for one input entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub action: Action,
    pub rule: Rule,
    /// The entry is a credential, whatever happened to it: its value must not
    /// appear in argv either.
    pub credential: bool,
    /// Worth a warning even in enforce mode: a keep pattern named a credential
    /// (an operator's mistake the policy caught), or a grant let one through.
    /// A credential that `base = "all"` would merely have inherited is removed
    /// quietly, or every command run from a shell holding a token would warn.
    pub loud: bool,
}

impl Verdict {
    /// A verdict that is not a credential and not loud.
    pub const fn new(action: Action, rule: Rule) -> Verdict {
        Verdict {
            action,
            rule,
            credential: false,
            loud: false,
        }
    }
}

impl Rule {
    /// Stable id of the rule, for JSON lines and tests.
    pub fn id(self) -> &'static str {
        match self {
            Rule::NoEquals => "normalise.no-equals",
            Rule::EmptyName => "normalise.empty-name",
            Rule::Duplicate(_) => "normalise.duplicate",
            Rule::BaseAll => "base.all",
            Rule::BaseNone => "base.none",
            Rule::Floor(_) | Rule::OutsideFloor => "base.floor",
            Rule::Keep(_) => "keep",
            Rule::Strip(_) => "strip",
            Rule::CredentialName(_) => "credential.name",
            Rule::CredentialShape(_) => "credential.shape",
            Rule::CredentialNameShape(_) => "credential.name-shape",
            Rule::CredentialValue(_) | Rule::CredentialParentValue(_) => "credential.value",
            Rule::Grant(_) => "grant",
            Rule::UnsafeName(_) => "unsafe.name",
            Rule::UnsafeValue(_) => "unsafe.value",
            Rule::FileValue(_) => "env-file.value",
            Rule::FileName(_) => "env-file.name",
            Rule::FileValueRefused(_) => "env-file.refused",
            Rule::Secret(_) => "secret",
            Rule::SecretValue(_) => "credential.secret-value",
            Rule::SecretHooks(_) => "secret.hooks",
            Rule::Set(_) => "set",
            Rule::Sticky => "sticky",
        }
    }
}

/// One entry of the child environment, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    /// The input entry at this index, unchanged.
    Input(u32),
    /// An entry built into `EnvScratch::bytes` at `start..start+len`, followed by a NUL.
    Built { start: u32, len: u32, rule: Rule },
    /// A prebuilt entry in the compiled policy's string pool (a literal set value).
    Pooled {
        entry: crate::compiled::StrRef,
        rule: Rule,
    },
}

/// What the caller passes in for one decision.
#[derive(Clone, Copy, Debug)]
pub struct EnvRequest<'r> {
    /// The program about to run: a path, or a bare name before a PATH search.
    /// Secrets are delivered by it.
    pub program: &'r [u8],
    /// The program as grants and `[program.NAME]` sections name it
    /// ([`crate::identity::of`]; `Identity::itself(program)` where no walk
    /// applies).
    pub identity: Identity<'r>,
    /// The environment the caller wants the child to have, as `NAME=VALUE` bytes
    /// (no NUL terminators).
    pub env: &'r [&'r [u8]],
    /// The current contents of each env file the policy imports, by index; `None`
    /// when the file could not be read (its names are still stripped).
    pub env_files: &'r [Option<&'r [u8]>],
    /// Rule 8: the shim's own path, to be present in `LD_PRELOAD` (`None` outside
    /// the shim, or with `sticky = false`).
    pub preload: Option<&'r [u8]>,
    /// Rule 8: the `ENVSHIM_POLICY=...` entry the shim was loaded with.
    pub policy_entry: Option<&'r [u8]>,
    /// Rule 8: the `ENVSHIM_HINT=...` entry for this child ([`crate::hint::entry`]),
    /// or `None`. Every other `ENVSHIM_HINT` in `env` is dropped: only the shim
    /// that starts a child may speak for it.
    pub hint: Option<&'r [u8]>,
    /// [`file_keep_value`] of every `FILE_KEEPS` record, by index, looked up in
    /// advance in the same `env_files` (libenvshim.so keeps them with its cached
    /// files, so that an exec does not parse the files again); `None`: look them up.
    pub file_values: Option<&'r [Option<envfile::Assignment<'r>>]>,
    /// [`file_value_passes_globally`] of every `FILE_KEEPS` record, by index, for
    /// the values in `file_values` (worked out with them, once per read of the
    /// files); used only when no `[program.*]` section applies. `None`: judge them.
    pub file_judged: Option<&'r [Option<bool>]>,
    /// The env files (bit `i` for file `i`) that may declare names the compiled
    /// policy does not know: changed since the compile
    /// (`cache_key::import_changed`). Their current names are stripped or
    /// refused as their role says ([`names_declared_since`]). 0 when the policy
    /// was compiled from the files as they are (envwrap compiles at every run).
    pub renamed_files: u32,
    /// The calling process's own environment, when the program hands the child
    /// another one (empty otherwise): a grant must not deliver the value of a
    /// credential the caller holds under another name (`env -i DEPLOY_TOKEN=$GH_TOKEN
    /// docker`).
    pub parent_env: &'r [&'r [u8]],
    /// Rule 6b: the value of each secret, by index, as its front end read it for
    /// this program ([`crate::secret::clean_value`]), or `None` where it read
    /// none. Only secrets whose program this is are delivered; empty for a front
    /// end that reads none.
    pub secrets: &'r [Option<&'r [u8]>],
    /// The input is an environment another front end already decided for
    /// this program, routed through envwrap to read its secrets (docs/adr/0019):
    /// an expanding `set` is what that decision made of it, the entry of its
    /// name as it stands, since the variables it read may be stripped by now
    /// ([`add_sets`]).
    pub routed: bool,
}

/// Does the value that file-keep record `k` passes on (`assignment`) pass rules 2
/// to 5 where no `[program.*]` section applies? `None` when that depends on the
/// program (the policy grants this name to one) or the value does not fit
/// `buf`. The decision judges every file value at every exec; a caller that keeps
/// the files between execs can work this out once per read instead (see
/// [`EnvRequest::file_judged`]).
pub fn file_value_passes_globally(
    policy: &Policy<'_>,
    k: u32,
    assignment: &envfile::Assignment<'_>,
    buf: &mut [u8],
) -> Option<bool> {
    use crate::compiled::sec;
    let name = policy.str(policy.file_keep(k)?.name);
    // A grant of this name makes the verdict the program's (a secret is one);
    // a grant of another name does not.
    let granted = |g: u32| policy.grant(g).is_none_or(|g| policy.str(g.name) == name);
    if (0..policy.count(sec::GRANTS) as u32).any(granted) {
        return None;
    }
    let len = assignment.write_value(buf)?;
    let value = buf.get(..len)?;
    Some(judge(policy, &Identity::itself(b""), 0, name, value, None).action.passes())
}

/// The assignment that file-keep record `k` passes on: the first assignment of its
/// name in its env file, as the file is now (`env_files`, by file index).
pub fn file_keep_value<'f>(
    policy: &Policy<'_>,
    k: u32,
    env_files: &[Option<&'f [u8]>],
) -> Option<envfile::Assignment<'f>> {
    let fk = policy.file_keep(k)?;
    let contents = (*env_files.get(fk.file as usize)?)?;
    envfile::lookup(contents, policy.str(fk.name))
}

/// Caller-provided storage. Sizes: `verdicts` and `seen` one per input entry
/// (`seen` is rounded up to a power of two of at least twice that), `emits` one per
/// input entry plus `extra_emits(policy)`, and `bytes` for built entries.
pub struct EnvScratch<'s> {
    pub verdicts: &'s mut [Verdict],
    pub seen: &'s mut [u32],
    pub emits: &'s mut [Emit],
    pub bytes: &'s mut [u8],
}

/// A scratch buffer was too small: these are the sizes that are enough.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shortfall {
    pub verdicts: usize,
    pub seen: usize,
    pub emits: usize,
    pub bytes: usize,
}

/// Sizes of the scratch buffers for `n` entries; `bytes` is a first guess that
/// `decide_env` corrects through `Shortfall` when built entries need more.
pub fn scratch_sizes(policy: &Policy<'_>, n: usize, preload_len: usize) -> Shortfall {
    use crate::compiled::sec;
    Shortfall {
        verdicts: n,
        seen: table_size(n),
        emits: n
            + policy.count(sec::SETS)
            + policy.count(sec::FILE_KEEPS)
            + policy.count(sec::SECRETS)
            + STAY_ENTRIES,
        bytes: 256 + preload_len * 2 + crate::hint::ENTRY_LEN,
    }
}

/// The entries rule 8 may add: `ENVSHIM_POLICY`, `ENVSHIM_HINT` and `LD_PRELOAD`.
const STAY_ENTRIES: usize = 3;

fn table_size(n: usize) -> usize {
    n.saturating_mul(2).max(8).next_power_of_two()
}

/// The result of a decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnvSummary {
    /// `scratch.emits[..emitted]` is the child environment, in order.
    pub emitted: usize,
    /// Bytes of `scratch.bytes` used.
    pub bytes_used: usize,
    /// Which `[program.*]` sections apply, as a bit mask.
    pub programs: u64,
    /// Input entries refused (credentials), and sets refused.
    pub refused: u32,
    /// The set records (bit `s` for record `s`, the first 64) whose `${...}`
    /// expansion read a credential or made a token shape: refused, to be reported
    /// by every front end.
    pub refused_sets: u64,
    /// The file-keep records (bit `k` for record `k`, the first 64) whose env file
    /// now holds a value the policy refuses: that value is not passed, and the
    /// inherited value it stands for is not passed either (the file no longer
    /// vouches for it). Reported by every front end.
    pub refused_file_values: u64,
    /// Input entries not passed unchanged (stripped, refused, replaced).
    pub changed: u32,
    /// Entries added that were not in the input (set, file values, sticky).
    pub added: u32,
    /// The supervisor's run key ([`crate::mark`]), from an `ENVSHIM_SUPERVISOR`
    /// entry that the child receives; 0 when there is none.
    pub supervisor_key: u64,
    /// The secrets delivered (bit `i` for secret `i`), rule 6b.
    pub delivered: u16,
}

/// Each set record in `bits` (`EnvSummary::refused_sets`): its index and the
/// name it sets, for every front end's report.
pub fn refused_set_names<'a, 'p>(
    policy: &'a Policy<'p>,
    bits: u64,
) -> impl Iterator<Item = (u32, &'p [u8])> + 'a {
    use crate::compiled::sec;
    (0..policy.count(sec::SETS).min(64) as u32)
        .filter(move |s| (bits >> s) & 1 == 1)
        .filter_map(move |s| policy.set(s).map(|r| (s, policy.str(r.name))))
}

/// Each file-keep record in `bits` (`EnvSummary::refused_file_values`): its index
/// and the name it keeps, for every front end's report.
pub fn refused_file_value_names<'a, 'p>(
    policy: &'a Policy<'p>,
    bits: u64,
) -> impl Iterator<Item = (u32, &'p [u8])> + 'a {
    use crate::compiled::sec;
    (0..policy.count(sec::FILE_KEEPS).min(64) as u32)
        .filter(move |k| (bits >> k) & 1 == 1)
        .filter_map(move |k| policy.file_keep(k).map(|r| (k, policy.str(r.name))))
}

/// Every pattern of the policy that matches a name, by class, for one program.
#[derive(Clone, Copy, Default, Debug)]
struct Matches {
    keep: Option<(u32, u32)>,
    strip: Option<(u32, u32)>,
    pair_keep: Option<(u32, u32)>,
    pair_strip: Option<(u32, u32)>,
    /// The keep that matched is an exact name.
    keep_exact: bool,
    pair_keep_exact: bool,
    credential: Option<u32>,
    unsafe_name: Option<u32>,
    floor: Option<u32>,
    checked_value: Option<u32>,
}

fn better(cur: Option<(u32, u32)>, spec: u32, idx: u32) -> Option<(u32, u32)> {
    match cur {
        Some((s, _)) if s >= spec => cur,
        _ => Some((spec, idx)),
    }
}

impl Matches {
    fn add(&mut self, p: &PatternRec, idx: u32, pair_scope: Option<u16>) {
        match p.class {
            Class::Keep => {
                if self.keep.is_none_or(|(s, _)| p.specificity > s) {
                    self.keep_exact = p.kind == GlobKind::Exact;
                }
                self.keep = better(self.keep, p.specificity, idx);
            }
            Class::Strip => self.strip = better(self.strip, p.specificity, idx),
            Class::ImportStrip => self.strip = better(self.strip, u32::MAX - 1, idx),
            Class::Credential | Class::ImportCredential => {
                self.credential.get_or_insert(idx);
            }
            Class::PairKeep if Some(p.scope) == pair_scope => {
                if self.pair_keep.is_none_or(|(s, _)| p.specificity > s) {
                    self.pair_keep_exact = p.kind == GlobKind::Exact;
                }
                self.pair_keep = better(self.pair_keep, p.specificity, idx);
            }
            Class::PairStrip if Some(p.scope) == pair_scope => {
                self.pair_strip = better(self.pair_strip, p.specificity, idx)
            }
            Class::PairKeep | Class::PairStrip => {}
            Class::Unsafe => {
                self.unsafe_name.get_or_insert(idx);
            }
            Class::Floor => {
                self.floor.get_or_insert(idx);
            }
            Class::CheckedValue => {
                self.checked_value.get_or_insert(idx);
            }
        }
    }
}

#[inline(never)]
fn collect(
    policy: &Policy<'_>,
    name: &[u8],
    key: NameKey,
    present: u64,
    mask: u64,
    pair_scope: Option<u16>,
) -> Matches {
    let hash = key.hash;
    let mut m = Matches::default();
    // Credential patterns are stored upper-cased; a name with a lower-case letter
    // is folded once, so that every case-insensitive comparison below is a plain
    // byte comparison. The fold buffer is only initialised for such a name (rare).
    let mut buf;
    let upper = if key.has_lower {
        buf = [0u8; UPPER_MAX];
        upper_case(name, true, &mut buf)
    } else {
        Some(name)
    };
    let matches = |p: &PatternRec, text: &[u8]| -> bool {
        let scoped = in_scope(p.scope, mask) || pair_scope == Some(p.scope);
        scoped
            && match (p.class.folds_case(), upper) {
                (true, Some(up)) => glob::matches(p.kind, text, up, false),
                (fold, _) => glob::matches(p.kind, text, name, fold),
            }
    };
    let slots = policy.exact_slots();
    if slots != 0 && policy.exact_may_hold(hash) {
        let mut slot = hash as usize & (slots - 1);
        // Linear probing: every pattern whose folded text hashes like `name` is in
        // this run of occupied slots.
        for _ in 0..slots {
            let Some(idx) = policy.exact_slot(slot) else {
                break;
            };
            if idx == u32::MAX {
                break;
            }
            if let Some(p) = policy.pattern(idx) {
                if matches(&p, policy.str(p.text)) {
                    m.add(&p, idx, pair_scope);
                }
            }
            slot = (slot + 1) & (slots - 1);
        }
    }
    // Skip whole kinds of glob by one byte of the name (see `GlobFilters`), then
    // each glob whose literal bytes the name lacks.
    let f = &policy.filters;
    let prefix = f.any || name.first().is_some_and(|&b| f.prefix_first.has(b));
    let suffix = f.any || name.last().is_some_and(|&b| f.suffix_last.has(b));
    let [prefixes, suffixes, others] = policy.glob_groups();
    for (wanted, group) in [(prefix, prefixes), (suffix, suffixes), (true, others)] {
        if !wanted {
            continue;
        }
        for g in group {
            if g.need & !present == 0 && matches(&g.rec, g.text) {
                m.add(&g.rec, g.idx, pair_scope);
            }
        }
    }
    for idx in policy.slow_globs() {
        if let Some(p) = policy.pattern(idx) {
            if matches(&p, policy.str(p.text)) {
                m.add(&p, idx, pair_scope);
            }
        }
    }
    m
}

/// [`collect`] for a name that `Policy::may_match` let through (`may_match`), and
/// no match without walking the patterns for one it ruled out: most names of an
/// environment match no pattern.
#[inline(always)]
fn matches_of(
    policy: &Policy<'_>,
    name: &[u8],
    key: NameKey,
    mask: u64,
    pair_scope: Option<u16>,
    may_match: bool,
) -> Matches {
    if may_match {
        let present = crate::compiled::name_bits(name);
        collect(policy, name, key, present, mask, pair_scope)
    } else {
        Matches::default()
    }
}

/// Names longer than this are folded on the fly instead (slower, same result).
const UPPER_MAX: usize = 128;

fn upper_case<'b>(
    name: &'b [u8],
    has_lower: bool,
    buf: &'b mut [u8; UPPER_MAX],
) -> Option<&'b [u8]> {
    // Most names are upper case already: no copy then.
    if !has_lower {
        return Some(name);
    }
    let dst = buf.get_mut(..name.len())?;
    for (d, s) in dst.iter_mut().zip(name) {
        *d = s.to_ascii_uppercase();
    }
    Some(dst)
}

/// Is this value unsafe for a checked name (sudo's env_check)?
fn unsafe_value(name: &[u8], value: &[u8]) -> bool {
    if name == b"TZ" {
        return !tz_is_safe(value);
    }
    value.contains(&b'/') || value.contains(&b'%')
}

/// TZ is safe when it is a zone name or a path inside the system zoneinfo tree,
/// without `..` and `%`, and not absurdly long (sudo's tz_is_safe).
fn tz_is_safe(value: &[u8]) -> bool {
    let v = value.strip_prefix(b":").unwrap_or(value);
    if v.len() >= 256 || v.contains(&b'%') {
        return false;
    }
    if v.starts_with(b"/") && !v.starts_with(b"/usr/share/zoneinfo/") {
        return false;
    }
    !v.split(|&b| b == b'/').any(|part| part == b"..")
}

/// The judgement of one (name, value) under the policy, for a program mask.
/// `pairs` selects the `[program.X.pairs]` rules of program section X instead of
/// keep and strip: that is how `NAME=VALUE` pairs carried in argv are judged.
pub fn judge(
    policy: &Policy<'_>,
    program: &Identity<'_>,
    mask: u64,
    name: &[u8],
    value: &[u8],
    pairs: Option<u16>,
) -> Verdict {
    let key = crate::compiled::name_key(name);
    judge_hashed(policy, program, mask, name, name, key, value, pairs)
}

/// Is (name, value) a credential under this policy, by name, import or shape?
pub fn is_credential(policy: &Policy<'_>, name: &[u8], value: &[u8]) -> bool {
    names_credential(policy, name)
        || shape::find_shape(value, ShapeSet::from_bits(policy.settings().shapes)).is_some()
}

/// Does a credential rule of any section (by name, glob or import) name `name`?
/// Rule 4 without the shape test, for callers that test the value themselves.
pub fn names_credential(policy: &Policy<'_>, name: &[u8]) -> bool {
    let key = crate::compiled::name_key(name);
    let may_match = policy.may_match(name, name.len(), key.hash);
    matches_of(policy, name, key, u64::MAX, None, may_match)
        .credential
        .is_some()
}

/// Rule 4 for a credential (by name or shape) whose verdict so far is `v`: a kept
/// one is granted to `program` or refused under `rule`.
#[inline(never)]
fn credential(
    policy: &Policy<'_>,
    name: &[u8],
    program: &Identity<'_>,
    mut v: Verdict,
    rule: Rule,
) -> Verdict {
    v.credential = true;
    if v.action == Action::Keep {
        let kept_by_pattern = matches!(v.rule, Rule::Keep(_));
        match find_grant(policy, name, program) {
            Some(g) => {
                v.action = Action::Grant;
                v.rule = Rule::Grant(g);
                v.loud = true;
            }
            None => {
                v.action = Action::Refuse;
                v.rule = rule;
                v.loud = kept_by_pattern;
            }
        }
    }
    v
}

/// `judge` with `name_hash(name)` already computed (the decision loop computes
/// it once for duplicate detection and the exact-name table). `name` is the start
/// of `entry` (the whole `NAME=VALUE`, or the name alone).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn judge_hashed(
    policy: &Policy<'_>,
    program: &Identity<'_>,
    mask: u64,
    entry: &[u8],
    name: &[u8],
    key: NameKey,
    value: &[u8],
    pairs: Option<u16>,
) -> Verdict {
    let settings = policy.settings();
    let may_match = policy.may_match(entry, name.len(), key.hash);
    if pairs.is_none() && !may_match {
        // No pattern can match (most names): rule 2, then rule 4's shape test.
        let v = match settings.base {
            Base::All => Verdict::new(Action::Keep, Rule::BaseAll),
            Base::None => return Verdict::new(Action::Strip, Rule::BaseNone),
            // Without a floor pattern, the floor keeps nothing.
            Base::Floor => return Verdict::new(Action::Strip, Rule::OutsideFloor),
        };
        return match credential_shape(name, value, ShapeSet::from_bits(settings.shapes)) {
            Some(rule) => credential(policy, name, program, v, rule),
            None => v,
        };
    }
    let m = matches_of(policy, name, key, mask, pairs, may_match);
    let base = match pairs.and_then(|p| policy.program(p as u32)) {
        Some(crate::compiled::ProgramRec {
            pairs_base: Some(b),
            ..
        }) => b,
        _ => settings.base,
    };
    let v = rule2_base(base, &m);
    let (v, kept_exactly) = rule3_keep_strip(v, &m, pairs.is_some());
    if let Some(rule) = rule4_credential(settings, &m, v, name, value) {
        return self::credential(policy, name, program, v, rule);
    }
    rule5_unsafe(settings, &m, v, kept_exactly, name, value)
}

/// Rule 2, base: the starting verdict (`all`, `floor` or `none`).
#[inline(always)]
fn rule2_base(base: Base, m: &Matches) -> Verdict {
    match base {
        Base::All => Verdict::new(Action::Keep, Rule::BaseAll),
        Base::None => Verdict::new(Action::Strip, Rule::BaseNone),
        Base::Floor => match m.floor {
            Some(f) => Verdict::new(Action::Keep, Rule::Floor(f)),
            None => Verdict::new(Action::Strip, Rule::OutsideFloor),
        },
    }
}

/// Rule 3, keep and strip: the most specific matching pattern wins, strip on a
/// tie (a program's `pairs` patterns for a pair in argv). Also says whether the
/// keep that won names the entry exactly (rule 5's exception).
#[inline(always)]
fn rule3_keep_strip(mut v: Verdict, m: &Matches, pair: bool) -> (Verdict, bool) {
    let (keep, strip, keep_exact) = if pair {
        (m.pair_keep, m.pair_strip, m.pair_keep_exact)
    } else {
        (m.keep, m.strip, m.keep_exact)
    };
    match (keep, strip) {
        (Some((ks, k)), Some((ss, _))) if ks > ss => v = Verdict::new(Action::Keep, Rule::Keep(k)),
        (_, Some((_, s))) => v = Verdict::new(Action::Strip, Rule::Strip(s)),
        (Some((_, k)), None) => v = Verdict::new(Action::Keep, Rule::Keep(k)),
        (None, None) => {}
    }
    let kept_exactly = keep_exact && matches!(v.rule, Rule::Keep(_));
    (v, kept_exactly)
}

/// Rule 4, refuse: whether the entry is a credential, by name or import, or, if
/// it would pass, by the shape of its value or name ([`credential`] then grants
/// or refuses it). The shape matters only for an entry that would pass: a
/// stripped token-shaped value cannot reach the child, and wherever else it could
/// turn up (argv, a copy under another name, a `${NAME}` expansion) the shape is
/// checked again there.
#[inline(always)]
fn rule4_credential(
    settings: &Settings,
    m: &Matches,
    v: Verdict,
    name: &[u8],
    value: &[u8],
) -> Option<Rule> {
    match m.credential {
        Some(c) => Some(Rule::CredentialName(c)),
        None if v.action == Action::Keep => {
            credential_shape(name, value, ShapeSet::from_bits(settings.shapes))
        }
        None => None,
    }
}

/// Rule 5, unsafe: a kept loader or interpreter hook is stripped unless kept by
/// exact name (the shim's own names excepted), and so is a checked name's value
/// with `/` or `%`.
#[inline(always)]
fn rule5_unsafe(
    settings: &Settings,
    m: &Matches,
    v: Verdict,
    kept_exactly: bool,
    name: &[u8],
    value: &[u8],
) -> Verdict {
    if v.action != Action::Keep {
        return v;
    }
    if let Some(u) = m.unsafe_name {
        if settings.strip_unsafe
            && !kept_exactly
            && !name.starts_with(crate::builtin::OWN_PREFIX)
            && name != crate::builtin::LD_PRELOAD
        {
            return Verdict::new(Action::Strip, Rule::UnsafeName(u));
        }
    }
    if let Some(c) = m.checked_value {
        if unsafe_value(name, value) {
            return Verdict::new(Action::Strip, Rule::UnsafeValue(c));
        }
    }
    v
}

/// Rule 4 by shape: the first token shape in the value or, failing that, in the
/// name. A token pasted as a variable's name (`ghp_...=1`) reaches a child's
/// environment, `/proc/PID/environ` and `ps e` as surely as one in a value.
#[inline(always)]
fn credential_shape(name: &[u8], value: &[u8], shapes: ShapeSet) -> Option<Rule> {
    match shape::find_shape(value, shapes) {
        Some(m) => Some(Rule::CredentialShape(m.shape)),
        // Most names are shorter than any token: answered here, by their length.
        None if name.len() >= shape::MIN_TOKEN_LEN => name_shape(name, shapes),
        None => None,
    }
}

/// The name's shape search, out of line: one copy serves both call sites of
/// [`credential_shape`], and the decision loop stays small.
#[inline(never)]
fn name_shape(name: &[u8], shapes: ShapeSet) -> Option<Rule> {
    if !shape::name_may_hold_shape(name) {
        return None;
    }
    shape::find_shape(name, shapes).map(|m| Rule::CredentialNameShape(m.shape))
}

/// The grant that lets credential `name` reach `program`, if any: a grant
/// matches the program the exec runs or the file it names
/// ([`crate::identity`]: `gemini` for `node /usr/bin/gemini`, and `node`, as
/// before there was a walk); a secret's own grant (the compile makes each
/// secret a grant of its name, and refuses any other grant of that name) the
/// file alone, as its delivery does.
pub fn find_grant(policy: &Policy<'_>, name: &[u8], program: &Identity<'_>) -> Option<u32> {
    use crate::compiled::sec;
    let walked = !core::ptr::eq(program.name, program.path);
    let by_name = walked && crate::secret::by_name(policy, name).is_none();
    (0..policy.count(sec::GRANTS) as u32).find(|&i| {
        policy.grant(i).is_some_and(|g| {
            let (kind, pattern) = (g.kind, policy.str(g.program));
            policy.str(g.name) == name
                && (crate::secret::program_matches(kind, pattern, program.path)
                    || (by_name && crate::secret::program_matches(kind, pattern, program.name)))
        })
    })
}

/// Decide the child environment. See the module docs for the rule order.
pub fn decide_env(
    policy: &Policy<'_>,
    req: &EnvRequest<'_>,
    scratch: &mut EnvScratch<'_>,
) -> Result<EnvSummary, Shortfall> {
    let n = req.env.len();
    let mut need = scratch_sizes(policy, n, req.preload.map_or(0, <[u8]>::len));
    need.bytes = need.bytes.max(scratch.bytes.len());
    if scratch.verdicts.len() < n
        || scratch.seen.len() < need.seen
        || scratch.emits.len() < need.emits
    {
        return Err(need);
    }
    let mask = crate::programs::identity_mask(policy, &req.identity);
    let seen_len = need.seen;
    let seen = scratch.seen.get_mut(..seen_len).ok_or(need)?;
    seen.fill(u32::MAX);
    let verdicts = &mut *scratch.verdicts;

    let own = judge_entries(policy, req, mask, seen, verdicts);
    let wanted = crate::secret::wanted(policy, req.program);
    if wanted != 0 {
        pass_inherited_secrets(policy, req, wanted, seen, verdicts);
    }
    if req.renamed_files != 0 {
        names_declared_since(policy, req, verdicts);
    }
    mark_credential_copies(policy, req, verdicts, n);
    // Where the caller's run key is (rule 8 gives it to a child that lacks it),
    // found by the same walk of the caller's environment.
    let parent_key = if req.parent_env.is_empty() {
        None
    } else {
        mark_parent_copies(policy, req, seen, verdicts, n)
    };
    let delivering = delivering(req, wanted);
    if delivering != 0 {
        mark_secret_copies(policy, req, delivering, verdicts, n);
        strip_hooks_for_secrets(policy, req, mask, delivering, verdicts, n);
    }

    let mut out = Builder {
        emits: &mut *scratch.emits,
        bytes: &mut *scratch.bytes,
        n_emits: 0,
        n_bytes: 0,
        need_bytes: 0,
        need_emits: 0,
    };
    for i in 0..n {
        if verdicts.get(i).is_some_and(|v| v.action.passes()) {
            out.push(Emit::Input(i as u32));
        }
    }
    let seen: &[u32] = seen;
    let files = add_file_values(policy, req, mask, verdicts, seen, &mut out);
    add_secrets(policy, req, delivering, verdicts, seen, &mut out);
    let sets = add_sets(policy, req, mask, verdicts, seen, &mut out);
    let stayed = add_stay_entries(policy, req, own, verdicts, seen, &mut out);
    let inherited_key = match parent_key {
        Some(j) if own.supervisor.is_none() => add_supervisor_key(req, j, &mut out),
        _ => 0,
    };

    if out.need_bytes > out.bytes.len() || out.need_emits > out.emits.len() {
        need.bytes = out.need_bytes.max(need.bytes) + 64;
        need.emits = out.need_emits.max(need.emits);
        return Err(need);
    }
    let mut summary = EnvSummary {
        emitted: 0,
        bytes_used: out.n_bytes,
        programs: mask,
        refused: sets.refused,
        refused_sets: sets.refused_bits,
        refused_file_values: files.refused_bits,
        changed: 0,
        added: files.added
            + sets.added
            + stayed
            + delivering.count_ones()
            + u32::from(inherited_key != 0),
        supervisor_key: 0,
        delivered: delivering,
    };
    let mut replaced = false;
    for v in verdicts.iter().take(n) {
        if v.action == Action::Refuse {
            summary.refused += 1;
        }
        if v.action != Action::Keep {
            summary.changed += 1;
        }
        replaced |= v.action == Action::Replace;
    }
    if replaced || files.dropped {
        drop_replaced_inputs(verdicts, &mut out);
    }
    summary.emitted = out.n_emits;
    summary.supervisor_key = match supervisor_key(verdicts, own.supervisor) {
        0 => inherited_key,
        key => key,
    };
    Ok(summary)
}

/// Rule 8's run key ([`crate::mark`]): a child handed an environment without
/// `ENVSHIM_SUPERVISOR` (`env -i`, an environment built from an allowlist)
/// gets its caller's (entry `j` of the caller's environment), as it gets the
/// shim's other entries, so that the exec and the child's own execs keep the
/// supervisor's mark. Without it the supervisor would judge an exec the shim
/// already decided a second time, over the shim's result, where a `set` that
/// read a name the shim removed comes out otherwise. Whatever the policy's
/// lists say (it holds no secret); the key added, or 0 for a malformed one.
#[inline(never)]
fn add_supervisor_key(req: &EnvRequest<'_>, j: usize, out: &mut Builder<'_, '_>) -> u64 {
    let Some(entry) = req.parent_env.get(j).copied() else {
        return 0;
    };
    let Some(key) = split_entry(entry).and_then(|(_, v)| crate::mark::run_key(v)) else {
        return 0;
    };
    let start = out.n_bytes;
    out.put(entry);
    out.finish_entry(start, Rule::Sticky);
    key
}

/// The run key of the supervisor entry (`OwnEntries::supervisor`), if the
/// child receives it (a credential copy may have refused it since).
fn supervisor_key(verdicts: &[Verdict], supervisor: Option<(usize, u64)>) -> u64 {
    match supervisor {
        Some((i, key)) if verdicts.get(i).is_some_and(|v| v.action.passes()) => key,
        _ => 0,
    }
}

/// Where rule 8's own entries already are in the input, kept as rule 8 would put
/// them (the first copy of their name), so that it need not add them.
#[derive(Clone, Copy, Default)]
struct OwnEntries {
    /// The `ENVSHIM_POLICY=...` entry.
    policy_at: Option<usize>,
    /// The `ENVSHIM_HINT=...` entry (`EnvRequest::hint`).
    hint_at: Option<usize>,
    /// A well-formed `ENVSHIM_SUPERVISOR=...` entry ([`crate::mark`]) and its
    /// run key.
    supervisor: Option<(usize, u64)>,
}

/// Rules 1 to 5, entry by entry, into `verdicts`: returns where the shim's own
/// entries are kept as rule 8 would put them.
#[inline(always)]
fn judge_entries(
    policy: &Policy<'_>,
    req: &EnvRequest<'_>,
    mask: u64,
    seen: &mut [u32],
    verdicts: &mut [Verdict],
) -> OwnEntries {
    // The shim's own entries, which rule 8 puts back whatever rules 1 to 5 say of
    // them.
    let sticky = policy.settings().sticky;
    let own_entry = req.policy_entry.filter(|_| sticky).unwrap_or(&[]);
    let own_hint = req.hint.filter(|_| sticky).unwrap_or(&[]);
    // Compared per entry by hash first: a name compare at every entry costs the
    // decision more than the rest of rule 8.
    let hint_hash = crate::compiled::name_hash(crate::hint::NAME);
    let supervisor_hash = crate::compiled::name_hash(crate::mark::NAME);
    let mut own = OwnEntries::default();
    for (i, entry) in req.env.iter().enumerate() {
        let verdict = match split_entry(entry) {
            None => Verdict::new(Action::Strip, Rule::NoEquals),
            Some((b"", _)) => Verdict::new(Action::Strip, Rule::EmptyName),
            Some((name, value)) => {
                let key = crate::compiled::name_key_in(entry, name.len());
                match first_copy(seen, req.env, name, key.hash, i as u32) {
                    Some(first) => {
                        let mut v = Verdict::new(Action::Strip, Rule::Duplicate(first));
                        // A later copy of a credential name is a credential too.
                        v.credential = verdicts.get(first as usize).is_some_and(|f| f.credential);
                        v
                    }
                    // Rule 8's entry as rule 8 would put it: kept where it is.
                    // (Inherited from a parent under the shim, it is in nearly
                    // every environment; judged, a path can look like a token's
                    // start and cost the full shape search.)
                    None if entry.len() == own_entry.len() && *entry == own_entry => {
                        own.policy_at = Some(i);
                        Verdict::new(Action::Keep, Rule::Sticky)
                    }
                    // A hint speaks for one child only: this one's is kept where
                    // it is, any other dropped (and never judged as a value).
                    None if key.hash == hint_hash && name == crate::hint::NAME => {
                        if *entry == own_hint {
                            own.hint_at = Some(i);
                            Verdict::new(Action::Keep, Rule::Sticky)
                        } else {
                            Verdict::new(Action::Strip, Rule::Sticky)
                        }
                    }
                    // The supervisor's run key stays with the tree whatever
                    // the policy's lists say (it holds no secret, and a tree
                    // without it is only judged twice); a malformed one is
                    // dropped, and neither is judged as a value.
                    None if key.hash == supervisor_hash && name == crate::mark::NAME => {
                        match crate::mark::run_key(value) {
                            Some(key) => {
                                own.supervisor = Some((i, key));
                                Verdict::new(Action::Keep, Rule::Sticky)
                            }
                            None => Verdict::new(Action::Strip, Rule::Sticky),
                        }
                    }
                    None => {
                        let v =
                            judge_hashed(policy, &req.identity, mask, entry, name, key, value, None);
                        if sticky && keeps_cache_dir(name, &v) {
                            Verdict::new(Action::Keep, Rule::Sticky)
                        } else {
                            v
                        }
                    }
                }
            }
        };
        if let Some(slot) = verdicts.get_mut(i) {
            *slot = verdict;
        }
    }
    own
}

/// What [`add_file_values`] added and refused.
struct FileValuesAdded {
    added: u32,
    /// Bit k: file keep k's value was refused (`EnvSummary::refused_file_values`).
    refused_bits: u64,
    /// An inherited entry was dropped because its file's value was refused.
    dropped: bool,
}

/// Rule 6, file values (`values = true`), for kept names the file declares: each
/// goes through rules 2 to 5 like any other value, and replaces the inherited
/// entry; a refused one also drops the inherited entry, which its file no longer
/// vouches for.
#[inline(always)]
fn add_file_values(
    policy: &Policy<'_>,
    req: &EnvRequest<'_>,
    mask: u64,
    verdicts: &mut [Verdict],
    seen: &[u32],
    out: &mut Builder<'_, '_>,
) -> FileValuesAdded {
    use crate::compiled::sec;
    let mut done = FileValuesAdded {
        added: 0,
        refused_bits: 0,
        dropped: false,
    };
    for k in 0..policy.count(sec::FILE_KEEPS) as u32 {
        let Some(fk) = policy.file_keep(k) else {
            continue;
        };
        let Some(p) = policy.pattern(fk.pattern) else {
            continue;
        };
        if !in_scope(p.scope, mask) {
            continue;
        }
        let name = policy.str(fk.name);
        // A global and a program keep of the same name: the first record decides.
        let earlier = (0..k).any(|j| {
            policy.file_keep(j).is_some_and(|o| {
                policy.str(o.name) == name
                    && policy
                        .pattern(o.pattern)
                        .is_some_and(|op| in_scope(op.scope, mask))
            })
        });
        if earlier || set_applies(policy, mask, name).is_some() {
            continue; // rule 7 wins anyway
        }
        let given = req.file_values.and_then(|v| v.get(k as usize).copied());
        let Some(assignment) = given.unwrap_or_else(|| file_keep_value(policy, k, req.env_files))
        else {
            continue;
        };
        let start = out.n_bytes;
        out.put(name);
        out.put(b"=");
        let vstart = out.n_bytes;
        out.put_value(&assignment);
        let value = out.bytes.get(vstart..out.n_bytes).unwrap_or(&[]);
        // The file's value goes through rules 2 to 5 like any other.
        // (A judgement is of the looked-up value: only with it.)
        let judged = given
            .and(req.file_judged)
            .and_then(|j| j.get(k as usize).copied().flatten());
        let passes = match judged {
            Some(passes) if mask == 0 => passes,
            _ => judge(policy, &req.identity, mask, name, value, None)
                .action
                .passes(),
        };
        if !passes {
            out.n_bytes = start;
            out.need_bytes = out
                .need_bytes
                .saturating_sub(name.len() + 1 + assignment.value_len());
            // The inherited value is stale: the file no longer vouches for it.
            drop_input(verdicts, req.env, seen, name, Rule::FileValueRefused(k));
            if let Some(bit) = 1u64.checked_shl(k) {
                done.refused_bits |= bit;
            }
            done.dropped = true;
            continue;
        }
        out.finish_entry(start, Rule::FileValue(k));
        replace_input(verdicts, req.env, seen, name, Rule::FileValue(k));
        done.added += 1;
    }
    done
}

/// What [`add_sets`] added and refused.
/// Rule 6b at a secret's program: an inherited entry of the secret's name
/// passes as a grant would, whatever the base and the strips say, because the
/// secret is delivered there whatever they say. A value read replaces it
/// ([`add_secrets`]); where none was read, it is what a front end below
/// delivered (`envwrap --supervise` sees the exec the shim or the command's
/// child completed), or the caller's own value for the program it is for.
/// Every front end decides this alike, so that none refuses the secret's own
/// program where another delivers to it.
#[inline(never)]
fn pass_inherited_secrets(
    policy: &Policy<'_>,
    req: &EnvRequest<'_>,
    wanted: u16,
    seen: &[u32],
    verdicts: &mut [Verdict],
) {
    for s in 0..crate::secret::MAX_SECRETS {
        let Some(rec) = policy.secret(s as u32).filter(|_| wanted & (1 << s) != 0) else {
            continue;
        };
        let name = policy.str(rec.name);
        let Some(g) = find_grant(policy, name, &Identity::itself(req.program)) else {
            continue;
        };
        let Some(v) = first_index(seen, req.env, name).and_then(|i| verdicts.get_mut(i)) else {
            continue;
        };
        // Quiet, as a delivery is: a front end that reads the source replaces
        // the entry without a warning (`add_secrets`), and one that cannot
        // (the supervisor, which sees what the shim or the command's child
        // delivered) must not warn where it does not.
        if v.action == Action::Strip && matches!(v.rule, Rule::BaseNone | Rule::OutsideFloor | Rule::Strip(_)) {
            *v = Verdict {
                action: Action::Grant,
                rule: Rule::Grant(g),
                credential: true,
                loud: false,
            };
        } else if v.action == Action::Grant {
            v.loud = false;
        }
    }
}

/// Rule 6b's secrets: those this program gets whose value the front end read.
/// `wanted` is [`crate::secret::wanted`] of the program.
fn delivering(req: &EnvRequest<'_>, wanted: u16) -> u16 {
    if req.secrets.is_empty() {
        return 0;
    }
    let mut read = 0u16;
    for (i, v) in req.secrets.iter().enumerate().take(crate::secret::MAX_SECRETS) {
        if v.is_some() {
            read |= 1 << i;
        }
    }
    wanted & read
}

/// The value secret `i` delivers.
fn secret_value<'r>(req: &EnvRequest<'r>, i: usize) -> Option<&'r [u8]> {
    req.secrets.get(i).copied().flatten()
}

/// Rule 6b's copies: an input entry whose value holds a delivered secret's
/// value, raw or in base64, is refused as any credential's copy is. Only the
/// program's own process holds the value, so only its exec can look for it.
/// An inherited entry of the secret's own name is not a copy: rule 6b replaces it.
#[inline(never)]
fn mark_secret_copies(
    policy: &Policy<'_>,
    req: &EnvRequest<'_>,
    delivering: u16,
    verdicts: &mut [Verdict],
    n: usize,
) {
    for s in 0..crate::secret::MAX_SECRETS {
        let (Some(secret), Some(rec)) = (
            secret_value(req, s).filter(|_| delivering & (1 << s) != 0),
            policy.secret(s as u32),
        ) else {
            continue;
        };
        let own = policy.str(rec.name);
        for i in 0..n {
            if req.env.get(i).and_then(|e| split_entry(e)).is_some_and(|(name, _)| name == own) {
                continue;
            }
            let Some(value) = copy_candidate(req.env, verdicts, i, false).map(|(v, _)| v) else {
                continue;
            };
            if crate::escaped::holds_copy(value, secret) {
                mark_copy(verdicts, i, Rule::SecretValue(s as u32));
            }
        }
    }
}

/// Rule 6b's guard: a program that gets a secret runs no code that its caller
/// chose. Every loader and interpreter hook (the unsafe names of rule 5) and
/// every interpreter search path ([`crate::builtin::SECRET_PATH_HOOKS`]) is
/// stripped, even one a keep names exactly, and so is the inherited
/// `LD_PRELOAD`: rule 8 then lists the shim alone (with `sticky = true`).
/// `LD_PRELOAD=/tmp/x.so /usr/bin/gh` would otherwise run the caller's code
/// with the token in its environment.
#[inline(never)]
fn strip_hooks_for_secrets(
    policy: &Policy<'_>,
    req: &EnvRequest<'_>,
    mask: u64,
    delivering: u16,
    verdicts: &mut [Verdict],
    n: usize,
) {
    let rule = Rule::SecretHooks(delivering.trailing_zeros());
    for i in 0..n {
        let Some(v) = verdicts.get(i).copied().filter(|v| v.action.passes()) else {
            continue;
        };
        let Some((name, _)) = req.env.get(i).and_then(|e| split_entry(e)) else {
            continue;
        };
        let hook = name == crate::builtin::LD_PRELOAD
            || crate::builtin::is_secret_path_hook(name)
            || {
            let key = crate::compiled::name_key(name);
            collect(policy, name, key, crate::compiled::name_bits(name), mask, None)
                .unsafe_name
                .is_some()
        };
        if hook {
            if let Some(slot) = verdicts.get_mut(i) {
                *slot = Verdict {
                    action: Action::Strip,
                    rule,
                    ..v
                };
            }
        }
    }
}

/// Rule 6b: each delivered secret as `NAME=value`, in place of an inherited
/// entry of its name (which reaches this far only at one of its programs).
#[inline(never)]
fn add_secrets(
    policy: &Policy<'_>,
    req: &EnvRequest<'_>,
    delivering: u16,
    verdicts: &mut [Verdict],
    seen: &[u32],
    out: &mut Builder<'_, '_>,
) {
    for s in 0..crate::secret::MAX_SECRETS {
        let (Some(value), Some(rec)) = (
            secret_value(req, s).filter(|_| delivering & (1 << s) != 0),
            policy.secret(s as u32),
        ) else {
            continue;
        };
        let name = policy.str(rec.name);
        let start = out.n_bytes;
        out.put(name);
        out.put(b"=");
        out.put(value);
        out.finish_entry(start, Rule::Secret(s as u32));
        replace_input(verdicts, req.env, seen, name, Rule::Secret(s as u32));
        // The inherited entry was let through as a grant, which is loud; replaced
        // by the secret's own value, there is nothing to warn about.
        if let Some(v) = first_index(seen, req.env, name).and_then(|i| verdicts.get_mut(i)) {
            if v.rule == Rule::Secret(s as u32) {
                v.loud = false;
            }
        }
    }
}

struct SetsAdded {
    added: u32,
    refused: u32,
    /// Bit s: set s was refused (`EnvSummary::refused_sets`).
    refused_bits: u64,
}

/// Rule 7: each set that applies to this program, last among the policy's own
/// rules, replacing an inherited entry of its name. A set whose `${NAME}` pulls a
/// credential or a token-shaped value in is refused, and the entry it meant to
/// replace does not pass either.
#[inline(always)]
fn add_sets(
    policy: &Policy<'_>,
    req: &EnvRequest<'_>,
    mask: u64,
    verdicts: &mut [Verdict],
    seen: &[u32],
    out: &mut Builder<'_, '_>,
) -> SetsAdded {
    use crate::compiled::sec;
    let mut done = SetsAdded {
        added: 0,
        refused: 0,
        refused_bits: 0,
    };
    for s in 0..policy.count(sec::SETS) as u32 {
        let Some(rec) = policy.set(s) else { continue };
        if !in_scope(rec.scope, mask) {
            continue;
        }
        let name = policy.str(rec.name);
        if set_applies(policy, mask, name) != Some(s) {
            continue; // a later set of the same name wins
        }
        if rec.expands {
            if req.routed {
                match routed_set(policy, req, verdicts, seen, name, s, out) {
                    true => done.added += 1,
                    false => done.refused += 1,
                }
                continue;
            }
            let start = out.n_bytes;
            out.put(name);
            out.put(b"=");
            let vstart = out.n_bytes;
            let pulled = expand(policy.str(rec.value), req.env, verdicts, out);
            let value = out.bytes.get(vstart..out.n_bytes).unwrap_or(&[]);
            if pulled
                || shape::find_shape(value, ShapeSet::from_bits(policy.settings().shapes)).is_some()
            {
                out.need_bytes = out
                    .need_bytes
                    .saturating_sub(out.n_bytes.saturating_sub(start));
                out.n_bytes = start;
                replace_input(verdicts, req.env, seen, name, Rule::Set(s));
                done.refused += 1;
                if let Some(bit) = 1u64.checked_shl(s) {
                    done.refused_bits |= bit;
                }
                continue;
            }
            out.finish_entry(start, Rule::Set(s));
        } else {
            out.push(Emit::Pooled {
                entry: rec.entry,
                rule: Rule::Set(s),
            });
        }
        replace_input(verdicts, req.env, seen, name, Rule::Set(s));
        done.added += 1;
    }
    done
}

/// An expanding `set` of a routed exec ([`EnvRequest::routed`]): the entry of
/// its name as the first decision made it passes as the set's result, unless
/// it is a credential or holds a token's shape; one the first decision
/// refused is not there, and nothing is added. True when it passes.
#[cold]
#[inline(never)]
fn routed_set(
    policy: &Policy<'_>,
    req: &EnvRequest<'_>,
    verdicts: &mut [Verdict],
    seen: &[u32],
    name: &[u8],
    s: u32,
    out: &mut Builder<'_, '_>,
) -> bool {
    let Some(i) = first_index(seen, req.env, name) else {
        return false;
    };
    let entry = req.env.get(i).copied().unwrap_or(&[]);
    let value = split_entry(entry).map_or(&[][..], |(_, v)| v);
    let credential = verdicts.get(i).is_none_or(|v| v.credential);
    let shapes = ShapeSet::from_bits(policy.settings().shapes);
    if credential || shape::find_shape(value, shapes).is_some() {
        return false;
    }
    let start = out.n_bytes;
    out.put(entry);
    out.finish_entry(start, Rule::Set(s));
    replace_input(verdicts, req.env, seen, name, Rule::Set(s));
    true
}

/// Rule 8, stay (with `sticky = true`): the shim's `ENVSHIM_POLICY` entry and the
/// child's start-up hint, each unless it is already there and passing (`own`), and
/// the shim in `LD_PRELOAD`. Returns how many entries it added.
#[inline(always)]
fn add_stay_entries(
    policy: &Policy<'_>,
    req: &EnvRequest<'_>,
    own: OwnEntries,
    verdicts: &mut [Verdict],
    seen: &[u32],
    out: &mut Builder<'_, '_>,
) -> u32 {
    if !policy.settings().sticky {
        return 0;
    }
    let mut added = 0;
    for (entry, at) in [
        (req.policy_entry, own.policy_at),
        (req.hint, own.hint_at),
    ] {
        let Some(entry) = entry else { continue };
        // Already there and passing (kept above, and not replaced by a set):
        // nothing to add, and nothing changes.
        let there = at
            .and_then(|i| verdicts.get(i))
            .is_some_and(|v| v.action.passes());
        if let Some((name, _)) = split_entry(entry).filter(|_| !there) {
            let start = out.n_bytes;
            out.put(entry);
            out.finish_entry(start, Rule::Sticky);
            replace_input(verdicts, req.env, seen, name, Rule::Sticky);
            added += 1;
        }
    }
    if let Some(path) = req.preload {
        added += sticky_preload(req, verdicts, seen, out, path);
    }
    added
}

/// Drop the emits of inputs that a later rule replaced, or whose env file no longer
/// vouches for them (the only ways an input emitted in the first pass stops
/// passing).
#[inline(always)]
fn drop_replaced_inputs(verdicts: &[Verdict], out: &mut Builder<'_, '_>) {
    let mut kept = 0usize;
    for i in 0..out.n_emits {
        let Some(e) = out.emits.get(i).copied() else {
            break;
        };
        if let Emit::Input(i) = e {
            if !verdicts.get(i as usize).is_some_and(|v| v.action.passes()) {
                continue;
            }
        }
        if let Some(slot) = out.emits.get_mut(kept) {
            *slot = e;
        }
        kept += 1;
    }
    out.n_emits = kept;
}

/// The index of an earlier entry with the same name, recording this one otherwise.
fn first_copy(seen: &mut [u32], env: &[&[u8]], name: &[u8], hash: u32, i: u32) -> Option<u32> {
    let slots = seen.len();
    if slots == 0 {
        return None;
    }
    let mut slot = hash as usize & (slots - 1);
    for _ in 0..slots {
        let cur = *seen.get(slot)?;
        if cur == u32::MAX {
            if let Some(s) = seen.get_mut(slot) {
                *s = i;
            }
            return None;
        }
        let other = env
            .get(cur as usize)
            .and_then(|e| split_entry(e))
            .map(|(n, _)| n);
        if other == Some(name) {
            return Some(cur);
        }
        slot = (slot + 1) & (slots - 1);
    }
    None
}

/// Rules 3 and 4 for the names an env file declares now, when it changed since
/// the policy was compiled (`EnvRequest::renamed_files`): a long-running process
/// (a tmux server, a daemon) strips or refuses a name added to the file, as a
/// new process would. The compiled order holds: an exact keep still beats a name
/// to strip, and only a grant lets a name to refuse through.
fn names_declared_since(policy: &Policy<'_>, req: &EnvRequest<'_>, verdicts: &mut [Verdict]) {
    use crate::compiled::Role;
    for (i, entry) in req.env.iter().enumerate() {
        let Some(v) = verdicts.get_mut(i) else { break };
        if matches!(
            v.rule,
            Rule::Duplicate(_) | Rule::NoEquals | Rule::EmptyName
        ) {
            continue;
        }
        let Some((name, _)) = split_entry(entry) else {
            continue;
        };
        let declared = req
            .env_files
            .iter()
            .enumerate()
            .filter(|(f, _)| (req.renamed_files >> f) & 1 == 1);
        let mut found: Option<(u32, Role)> = None;
        for (f, contents) in declared {
            let Some(contents) = contents else { continue };
            if envfile::lookup(contents, name).is_none() {
                continue;
            }
            let role = policy.env_file(f as u32).map_or(Role::Strip, |r| r.role);
            if found.is_none() || role == Role::Refuse {
                found = Some((f as u32, role));
            }
        }
        let Some((f, role)) = found else { continue };
        match role {
            Role::Refuse if !v.credential => {
                *v = credential(policy, name, &req.identity, *v, Rule::FileName(f));
            }
            Role::Strip if v.action == Action::Keep && !kept_exactly(policy, v.rule) => {
                *v = Verdict::new(Action::Strip, Rule::FileName(f));
            }
            _ => {}
        }
    }
}

/// Did an exact keep pattern decide `rule`?
fn kept_exactly(policy: &Policy<'_>, rule: Rule) -> bool {
    match rule {
        Rule::Keep(k) => policy.pattern(k).is_some_and(|p| p.kind == GlobKind::Exact),
        _ => false,
    }
}

/// A value that holds a credential's value is a credential too, whatever its name
/// and whatever surrounds the copy (`COPY=$GH_TOKEN`, `AUTHZ=Bearer $GH_TOKEN`,
/// `URL=x${GH_TOKEN}Z`). Credential values shorter than `min_value_len` are not
/// searched for, so that `PASSWORD=x` does not refuse every value holding an `x`.
///
/// A grant delivers only its own variable's value: a granted entry whose value
/// holds the value of a credential that is not delivered (`DEPLOY_TOKEN=$GH_TOKEN`,
/// with `DEPLOY_TOKEN` granted) is refused too, loudly, so that a grant cannot
/// launder another credential under its name (the pairs of argv follow the same
/// rule: `argv::launders`).
///
/// Cost: one substring search per credential value in each value at least as
/// long as the shortest of them (`bytes::Finder`, which compares a needle's first
/// and last bytes 16 positions at a time); a value shorter than that is passed
/// over by its length. docs/adr/0017-values-hold-no-credential.md says why the
/// search is this and not a multi-pattern automaton.
fn mark_credential_copies(
    policy: &Policy<'_>,
    req: &EnvRequest<'_>,
    verdicts: &mut [Verdict],
    n: usize,
) {
    let min = policy.settings().min_value_len as usize;
    let sources = CredentialValues::of(req.env, verdicts, n, min);
    if sources.shortest == usize::MAX {
        return;
    }
    // A removed entry is marked only for a `${NAME}` expansion to see: without
    // sets, nothing reads it back (argv is searched for the credential itself,
    // which any copy holds).
    let mark_removed = policy.count(crate::compiled::sec::SETS) != 0;
    // The values the encoded search looks in, gathered on the way: those still
    // unmarked after the raw search, long enough for a needle.
    let mut encoded = Candidates::new();
    // And those the escaped search looks in: the same, when they hold a byte
    // that starts an escape (most values hold none).
    let mut escaped = Candidates::new();
    let mut unfound = |i: usize, value: &[u8], encoded: &mut Candidates, needle: bool| {
        if needle {
            encoded.push(i);
        }
        if crate::escaped::may_hold(value) {
            escaped.push(i);
        }
    };
    let reach = sources.shortest.min(sources.shortest_needle);
    for i in 0..n {
        let Some((value, granted)) = copy_candidate(req.env, verdicts, i, mark_removed) else {
            continue;
        };
        if value.len() < reach {
            continue;
        }
        let delivered = |j: usize| verdicts.get(j).is_some_and(|w| w.action == Action::Grant);
        let holds = |j: usize| {
            j != i
                && !(granted && delivered(j))
                && value_at(req.env, j).is_some_and(|c| holds_value(value, c))
        };
        if value.len() < sources.shortest {
            // Too short for the raw search; maybe not for a needle.
            let needle = value.len() >= sources.shortest_needle || granted;
            unfound(i, value, &mut encoded, needle);
            continue;
        }
        let rule = match sources.find(verdicts, n, holds) {
            Some(s) => Rule::CredentialValue(s as u32),
            None if granted => match parent_credential(policy, req, i, value, holds_value) {
                Some(j) => Rule::CredentialParentValue(j),
                None => {
                    unfound(i, value, &mut encoded, true);
                    continue;
                }
            },
            None => {
                unfound(i, value, &mut encoded, value.len() >= sources.shortest_needle);
                continue;
            }
        };
        mark_copy(verdicts, i, rule);
    }
    if !encoded.is_empty() {
        mark_encoded_copies(policy, req, verdicts, n, &sources, &encoded, mark_removed);
    }
    if !escaped.is_empty() {
        mark_escaped_copies(policy, req, verdicts, n, &sources, &escaped, mark_removed);
    }
}

/// Rule 4's third pass: the values the raw and base64 searches passed that
/// hold a credential escaped ([`crate::escaped`]: percent-encoded,
/// backslash-escaped, shell-quoted), with the same rules and verdicts. Only
/// the `candidates` the raw pass found a byte that starts an escape in are
/// looked at (in the overflow, every entry, checked again). Each credential's
/// searches are built once, and each value is decoded once for all of them
/// ([`crate::escaped::each_decoding`], on the stack); a value too long for
/// that, or more credentials than [`CredentialValues::SMALL`], are searched
/// with the streams, slower, same result.
#[cold]
#[inline(never)]
fn mark_escaped_copies(
    policy: &Policy<'_>,
    req: &EnvRequest<'_>,
    verdicts: &mut [Verdict],
    n: usize,
    sources: &CredentialValues,
    candidates: &Candidates,
    mark_removed: bool,
) {
    use crate::escaped::EscapedCopies;
    let mut copies: [Option<EscapedCopies<'_>>; CredentialValues::SMALL] =
        [None; CredentialValues::SMALL];
    if !sources.overflow {
        for (slot, &j) in copies.iter_mut().zip(sources.idx.iter().take(sources.k)) {
            *slot = value_at(req.env, j as usize)
                .map(EscapedCopies::of)
                .filter(|c| !c.is_empty());
        }
    }
    // One sieve of every credential's needles: a decoded value that has no
    // sample in it is not searched for any.
    let mut sieve = crate::encoded::Sieve::new(sources.shortest_needle);
    for c in copies.iter().flatten() {
        if let Some(needles) = c.needles() {
            sieve.add(needles);
        }
    }
    let wanted = copies.iter().flatten().fold(0u8, |w, c| w | c.wanted());
    let reach = sources.shortest.min(sources.shortest_needle);
    let mut buf = [0u8; 2048];
    candidates.each(n, |i| {
        let Some((value, granted)) = copy_candidate(req.env, verdicts, i, mark_removed) else {
            return;
        };
        if value.len() < reach || !crate::escaped::may_hold(value) {
            return;
        }
        let entry = (i, value, granted);
        let decoded = if sources.overflow {
            None
        } else {
            decoded_copy_of(sources, (&copies, &sieve, wanted), verdicts, entry, &mut buf)
        };
        let rule = match decoded {
            Some(Some(j)) => Some(Rule::CredentialValue(j as u32)),
            Some(None) if granted => {
                parent_credential(policy, req, i, value, crate::escaped::holds_escaped)
                    .map(Rule::CredentialParentValue)
            }
            Some(None) => None,
            None => escaped_copy_of(policy, req, verdicts, n, sources, entry),
        };
        if let Some(rule) = rule {
            mark_copy(verdicts, i, rule);
        }
    });
}

/// The environment's credential (its index) whose escaped copy entry `i`
/// holds, each decoding of its value made once into `buf` and searched for
/// every credential's `copies` (in `sources`' order). `None`: the value is
/// too long for `buf`.
fn decoded_copy_of(
    sources: &CredentialValues,
    (copies, sieve, wanted): (
        &[Option<crate::escaped::EscapedCopies<'_>>],
        &crate::encoded::Sieve,
        u8,
    ),
    verdicts: &[Verdict],
    (i, value, granted): (usize, &[u8], bool),
    buf: &mut [u8],
) -> Option<Option<usize>> {
    let usable = |j: usize| {
        j != i && !(granted && verdicts.get(j).is_some_and(|w| w.action == Action::Grant))
    };
    let mut found = None;
    crate::escaped::each_decoding(value, wanted, buf, |escape, decoded| {
        let base64 = sieve.may_hold(decoded);
        found = sources
            .idx
            .iter()
            .take(sources.k)
            .zip(copies)
            .find(|(&j, c)| {
                usable(j as usize) && c.is_some_and(|c| c.found_decoded(decoded, escape, base64))
            })
            .map(|(&j, _)| j as usize);
        found.is_some()
    })?;
    Some(found)
}

/// The credential whose escaped copy entry `i` (its value, whether granted)
/// holds: one of the environment's, or (for a granted value) the caller's.
/// The streams' search, for what [`decoded_copy_of`] cannot take.
#[cold]
#[inline(never)]
fn escaped_copy_of(
    policy: &Policy<'_>,
    req: &EnvRequest<'_>,
    verdicts: &mut [Verdict],
    n: usize,
    sources: &CredentialValues,
    (i, value, granted): (usize, &[u8], bool),
) -> Option<Rule> {
    let delivered = |verdicts: &[Verdict], j: usize| {
        verdicts.get(j).is_some_and(|w| w.action == Action::Grant)
    };
    let holds = |j: usize| {
        j != i
            && !(granted && delivered(verdicts, j))
            && value_at(req.env, j).is_some_and(|c| crate::escaped::holds_escaped(value, c))
    };
    if let Some(j) = sources.find(verdicts, n, holds) {
        return Some(Rule::CredentialValue(j as u32));
    }
    if !granted {
        return None;
    }
    parent_credential(policy, req, i, value, crate::escaped::holds_escaped)
        .map(Rule::CredentialParentValue)
}

/// Rule 4's second pass: the values the raw search passed that hold a
/// credential in base64 ([`crate::encoded`]), with the same rules and the same
/// verdicts. Each credential's needles are built for a sieve that passes over
/// most values at one sample each, and built again only if the sieve kept one.
#[inline(never)]
fn mark_encoded_copies(
    policy: &Policy<'_>,
    req: &EnvRequest<'_>,
    verdicts: &mut [Verdict],
    n: usize,
    sources: &CredentialValues,
    candidates: &Candidates,
    mark_removed: bool,
) {
    use crate::encoded::{shortest_needle, Base64Needles, Sieve};
    // One sieve of every credential's needles passes over most values at one
    // sample each; what it keeps is searched for each credential's needles.
    let mut sieve = Sieve::new(sources.shortest_needle);
    sources.each(verdicts, n, |_, j| {
        if let Some(c) = value_at(req.env, j).filter(|c| shortest_needle(c.len()).is_some()) {
            sieve.add(&Base64Needles::of(c));
        }
    });
    // Nothing is marked since the candidates were chosen: their values as they
    // are (in the overflow, every entry, chosen again).
    let mut kept = Candidates::new();
    candidates.each(n, |i| {
        let value = if candidates.overflow {
            copy_candidate(req.env, verdicts, i, mark_removed).map(|(v, _)| v)
        } else {
            value_at(req.env, i)
        };
        if value.is_some_and(|v| sieve.may_hold(v)) {
            kept.push(i);
        }
    });
    if !kept.is_empty() {
        sources.each(verdicts, n, |verdicts, j| {
            let Some(c) = value_at(req.env, j) else {
                return;
            };
            let Some(shortest) = shortest_needle(c.len()) else {
                return;
            };
            let delivered = verdicts.get(j).is_some_and(|w| w.action == Action::Grant);
            let mut needles = None;
            kept.each(n, |i| {
                let Some((value, granted)) = copy_candidate(req.env, verdicts, i, mark_removed) else {
                    return;
                };
                if i == j || value.len() < shortest || (granted && delivered) {
                    return;
                }
                let needles = needles.get_or_insert_with(|| Base64Needles::of(c));
                if needles.found_in(value) {
                    mark_copy(verdicts, i, Rule::CredentialValue(j as u32));
                }
            });
        });
    }
    // A granted value that holds none of the environment's: the caller's.
    candidates.each(n, |i| {
        let Some((value, true)) = copy_candidate(req.env, verdicts, i, mark_removed) else {
            return;
        };
        if let Some(j) = parent_credential(policy, req, i, value, crate::encoded::holds_base64) {
            mark_copy(verdicts, i, Rule::CredentialParentValue(j));
        }
    });
}

/// Entry `i` as rule 4's copy search looks at it: its value and whether it is
/// granted, unless it is a credential of its own (not granted) or already
/// removed with no `${NAME}` expansion to read it back. Both passes choose by it,
/// and the encoded pass asks again for an entry the raw pass may have marked.
fn copy_candidate<'e>(
    env: &[&'e [u8]],
    verdicts: &[Verdict],
    i: usize,
    mark_removed: bool,
) -> Option<(&'e [u8], bool)> {
    let v = verdicts.get(i)?;
    let granted = v.action == Action::Grant;
    if (v.credential && !granted) || (!mark_removed && !v.action.passes()) {
        return None;
    }
    Some((value_at(env, i)?, granted))
}

/// Mark entry `i` a copy of a credential: refused if it would have passed (loudly
/// when granted); flagged either way, so a `${NAME}` expansion cannot read it
/// back.
fn mark_copy(verdicts: &mut [Verdict], i: usize, rule: Rule) {
    if let Some(slot) = verdicts.get_mut(i) {
        let v = *slot;
        *slot = if v.action.passes() {
            Verdict {
                action: Action::Refuse,
                rule,
                credential: true,
                loud: v.action == Action::Grant,
            }
        } else {
            Verdict {
                credential: true,
                ..v
            }
        };
    }
}

/// The entries the encoded search looks in: up to `SMALL` indices on the stack;
/// past that (or past index 65535), every entry (each checked again, slower,
/// same result).
struct Candidates {
    idx: [u16; Candidates::SMALL],
    k: usize,
    overflow: bool,
}

impl Candidates {
    const SMALL: usize = 64;

    fn new() -> Candidates {
        Candidates {
            idx: [0; Self::SMALL],
            k: 0,
            overflow: false,
        }
    }

    fn push(&mut self, i: usize) {
        match (self.idx.get_mut(self.k), u16::try_from(i)) {
            (Some(slot), Ok(i)) => {
                *slot = i;
                self.k += 1;
            }
            _ => self.overflow = true,
        }
    }

    fn is_empty(&self) -> bool {
        self.k == 0 && !self.overflow
    }

    fn each(&self, n: usize, mut f: impl FnMut(usize)) {
        if self.overflow {
            (0..n).for_each(f);
        } else {
            self.idx.iter().take(self.k).for_each(|&i| f(i as usize));
        }
    }
}

/// Does `value` hold `credential`'s bytes anywhere? The one test of rule 4's raw
/// copies, for the environment and (through [`parent_credential`]) the caller's;
/// [`crate::encoded::holds_base64`] is the one test of its encoded copies.
#[inline]
pub fn holds_value(value: &[u8], credential: &[u8]) -> bool {
    // `find` answers a shorter value at once, and an equal-length one with one
    // compare.
    crate::bytes::find(value, credential).is_some()
}

/// The value of entry `i` of `env`.
#[inline]
fn value_at<'e>(env: &[&'e [u8]], i: usize) -> Option<&'e [u8]> {
    env.get(i).and_then(|e| split_entry(e)).map(|(_, v)| v)
}

/// The entries whose values rule 4's copy search looks for: credentials with a
/// value of at least `min_value_len` bytes. Up to `SMALL` of their indices are
/// kept on the stack (more is rare; then every credential entry is tried, slower,
/// same result).
struct CredentialValues {
    idx: [u32; CredentialValues::SMALL],
    k: usize,
    overflow: bool,
    /// The shortest of their values (`usize::MAX`: none).
    shortest: usize,
    /// The shortest base64 needle of their values (`usize::MAX`: none).
    shortest_needle: usize,
}

impl CredentialValues {
    const SMALL: usize = 32;

    fn of(env: &[&[u8]], verdicts: &[Verdict], n: usize, min: usize) -> CredentialValues {
        let mut s = CredentialValues {
            idx: [0; Self::SMALL],
            k: 0,
            overflow: false,
            shortest: usize::MAX,
            shortest_needle: usize::MAX,
        };
        for i in 0..n {
            if !verdicts.get(i).is_some_and(|v| v.credential) {
                continue;
            }
            let Some(value) = value_at(env, i).filter(|v| v.len() >= min) else {
                continue;
            };
            s.shortest = s.shortest.min(value.len());
            if let Some(needle) = crate::encoded::shortest_needle(value.len()) {
                s.shortest_needle = s.shortest_needle.min(needle);
            }
            match s.idx.get_mut(s.k) {
                Some(slot) => {
                    *slot = i as u32;
                    s.k += 1;
                }
                None => s.overflow = true,
            }
        }
        s
    }

    /// Every credential entry `j`, in order, with the verdicts to read and mark.
    fn each(&self, verdicts: &mut [Verdict], n: usize, mut f: impl FnMut(&mut [Verdict], usize)) {
        if self.overflow {
            for j in 0..n {
                if verdicts.get(j).is_some_and(|w| w.credential) {
                    f(verdicts, j);
                }
            }
        } else {
            for &j in self.idx.iter().take(self.k) {
                f(verdicts, j as usize);
            }
        }
    }

    /// The first credential entry `j` for which `holds(j)`.
    fn find(&self, verdicts: &[Verdict], n: usize, holds: impl Fn(usize) -> bool) -> Option<usize> {
        if self.overflow {
            (0..n).find(|&j| verdicts.get(j).is_some_and(|w| w.credential) && holds(j))
        } else {
            self.idx.iter().take(self.k).map(|&j| j as usize).find(|&j| holds(j))
        }
    }
}

/// The index of a credential in the caller's environment whose value `value`
/// holds (as `holds(value, credential)` says: raw or encoded), under another name
/// than entry `i`'s.
fn parent_credential(
    policy: &Policy<'_>,
    req: &EnvRequest<'_>,
    i: usize,
    value: &[u8],
    holds: fn(&[u8], &[u8]) -> bool,
) -> Option<u32> {
    let name = req.env.get(i).and_then(|e| split_entry(e)).map(|(n, _)| n)?;
    let min = policy.settings().min_value_len as usize;
    req.parent_env.iter().position(|e| {
        split_entry(e).is_some_and(|(n, v)| {
            n != name
                && v.len() >= min
                && holds(value, v)
                && is_credential(policy, n, v)
        })
    }).map(|j| j as u32)
}

/// Rule 4 for a child handed another environment than the caller's own
/// (`env -i X="Bearer $TOKEN" prog`, or the managed layer's pass over what the
/// user layer decided, docs/adr/0020-managed-layer.md): an entry that still
/// passes and holds, raw or in base64, the value of a credential of the
/// caller's environment under another name is refused. The caller's
/// credentials are found first (at most [`PARENT_CREDENTIALS`] are searched
/// for, then every parent entry is tried, slower, same result).
///
/// A parent entry that the child's environment holds as it is was judged as
/// one of its entries, and rule 4's own search looks for its copies: only the
/// entries the program (or the user layer) took away are judged here. So a
/// shell, which hands every child an array of its own with its own
/// environment's entries in it, pays one lookup per entry. Where the caller's
/// run key is, if it holds one ([`add_supervisor_key`]).
#[cold]
#[inline(never)]
fn mark_parent_copies(
    policy: &Policy<'_>,
    req: &EnvRequest<'_>,
    seen: &[u32],
    verdicts: &mut [Verdict],
    n: usize,
) -> Option<usize> {
    let min = policy.settings().min_value_len as usize;
    let mut found = [0u32; PARENT_CREDENTIALS];
    let mut count = 0usize;
    let mut overflow = false;
    let mut run_key = None;
    for (j, e) in req.parent_env.iter().enumerate() {
        let Some((name, value)) = split_entry(e) else { continue };
        if name == crate::mark::NAME {
            run_key = run_key.or(Some(j));
        }
        if value.len() < min {
            continue;
        }
        // The same entry at the same place (a caller that copied its
        // environment's pointers first), else the child's entry of this name.
        let same_place = req.env.get(j).is_some_and(|c| core::ptr::eq(*c, *e));
        if same_place
            || first_index(seen, req.env, name).and_then(|i| value_at(req.env, i)) == Some(value)
        {
            continue;
        }
        if is_credential(policy, name, value) {
            match found.get_mut(count) {
                Some(slot) => *slot = j as u32,
                None => overflow = true,
            }
            count += 1;
        }
    }
    if count == 0 {
        return run_key;
    }
    let credentials = found.get(..count.min(PARENT_CREDENTIALS)).unwrap_or(&[]);
    for i in 0..n {
        if !verdicts.get(i).is_some_and(|v| v.action.passes()) {
            continue;
        }
        let Some((name, value)) = req.env.get(i).and_then(|e| split_entry(e)) else {
            continue;
        };
        let copied = |j: u32| {
            req.parent_env
                .get(j as usize)
                .and_then(|e| split_entry(e))
                .is_some_and(|(n, v)| n != name && crate::escaped::holds_copy(value, v))
        };
        let hit = if overflow {
            parent_credential(policy, req, i, value, crate::escaped::holds_copy)
        } else {
            credentials.iter().copied().find(|&j| copied(j))
        };
        if let Some(j) = hit {
            mark_copy(verdicts, i, Rule::CredentialParentValue(j));
        }
    }
    run_key
}

/// How many of the caller's credentials [`mark_parent_copies`] keeps on the stack.
const PARENT_CREDENTIALS: usize = 32;

/// The index of the set record that decides `name` for this mask: the last one.
fn set_applies(policy: &Policy<'_>, mask: u64, name: &[u8]) -> Option<u32> {
    use crate::compiled::sec;
    (0..policy.count(sec::SETS) as u32).rev().find(|&s| {
        policy
            .set(s)
            .is_some_and(|r| in_scope(r.scope, mask) && policy.str(r.name) == name)
    })
}

/// Mark every passing input entry named `name` as replaced, and drop its emit.
/// The first copy of `name` in the input does not pass: stripped under `rule`.
fn drop_input(verdicts: &mut [Verdict], env: &[&[u8]], seen: &[u32], name: &[u8], rule: Rule) {
    let Some(i) = first_index(seen, env, name) else {
        return;
    };
    if let Some(v) = verdicts.get_mut(i) {
        if v.action.passes() {
            v.action = Action::Strip;
            v.rule = rule;
        }
    }
}

fn replace_input(verdicts: &mut [Verdict], env: &[&[u8]], seen: &[u32], name: &[u8], rule: Rule) {
    // Only the first copy of a name can pass (later copies are stripped), and the
    // duplicate table knows where it is. Its emit is dropped at the end of
    // `decide_env`, where inputs that no longer pass are left out.
    let Some(i) = first_index(seen, env, name) else {
        return;
    };
    if let Some(v) = verdicts.get_mut(i) {
        if v.action.passes() {
            v.action = Action::Replace;
            v.rule = rule;
        }
    }
}

/// The index of the first entry named `name`, from the duplicate table.
fn first_index(seen: &[u32], env: &[&[u8]], name: &[u8]) -> Option<usize> {
    let slots = seen.len();
    if slots == 0 {
        return None;
    }
    let mut slot = crate::compiled::name_hash(name) as usize & (slots - 1);
    for _ in 0..slots {
        let cur = *seen.get(slot)?;
        if cur == u32::MAX {
            return None;
        }
        if env
            .get(cur as usize)
            .and_then(|e| split_entry(e))
            .map(|(n, _)| n)
            == Some(name)
        {
            return Some(cur as usize);
        }
        slot = (slot + 1) & (slots - 1);
    }
    None
}

/// Expand `${NAME}` references from the input environment (first copy; an absent
/// name expands to nothing). `$$` is a literal `$`.
///
/// Returns true when a reference reads an entry that is a credential (by name,
/// shape or value): the caller must not emit the result.
fn expand(template: &[u8], env: &[&[u8]], verdicts: &[Verdict], out: &mut Builder<'_, '_>) -> bool {
    let mut pulled_credential = false;
    let mut rest = template;
    while let Some(d) = crate::bytes::memchr(b'$', rest) {
        out.put(rest.get(..d).unwrap_or(&[]));
        let after = rest.get(d + 1..).unwrap_or(&[]);
        if after.first() == Some(&b'$') {
            out.put(b"$");
            rest = after.get(1..).unwrap_or(&[]);
        } else if after.first() == Some(&b'{') {
            match crate::bytes::memchr(b'}', after) {
                Some(close) => {
                    let name = after.get(1..close).unwrap_or(&[]);
                    let first = env
                        .iter()
                        .position(|e| split_entry(e).is_some_and(|(n, _)| n == name));
                    if let Some((i, (_, v))) =
                        first.and_then(|i| Some((i, split_entry(env.get(i)?)?)))
                    {
                        pulled_credential |= verdicts.get(i).is_some_and(|v| v.credential);
                        out.put(v);
                    }
                    rest = after.get(close + 1..).unwrap_or(&[]);
                }
                None => {
                    out.put(b"$");
                    rest = after;
                }
            }
        } else {
            out.put(b"$");
            rest = after;
        }
    }
    out.put(rest);
    pulled_credential
}

/// The first value of `name` in `env`.
pub fn lookup<'e>(env: &[&'e [u8]], name: &[u8]) -> Option<&'e [u8]> {
    env.iter().find_map(|e| match split_entry(e) {
        Some((n, v)) if n == name => Some(v),
        _ => None,
    })
}

/// Rule 8 for the shim's cache directory: an inherited `ENVSHIM_CACHE_DIR` that
/// rules 1 to 5 strip stays (one they refuse does not), so that the child's shim
/// finds the compiled policy where its parent's did (docs/adr/0012-cache-location.md).
fn keeps_cache_dir(name: &[u8], v: &Verdict) -> bool {
    v.action == Action::Strip && name == crate::cache_key::CACHE_DIR_VAR.as_bytes()
}

/// Rule 8: whether an `LD_PRELOAD` value lists the shim at `path` (entries are
/// separated by `:` or a space, as the loader reads them). Inlined: out of line,
/// it cost 600 instructions an exec more (callgrind, section 4's driver).
#[inline(always)]
pub fn preload_lists(value: &[u8], path: &[u8]) -> bool {
    value.split(|&b| b == b':' || b == b' ').any(|e| e == path)
}

/// Rule 8: the `LD_PRELOAD` value that puts the shim at `path` first and keeps
/// every entry of `current` after it, in order, handed to `put` piece by piece.
#[inline(always)]
pub fn put_preload_with_shim(path: &[u8], current: Option<&[u8]>, mut put: impl FnMut(&[u8])) {
    put(path);
    if let Some(cur) = current.filter(|c| !c.is_empty()) {
        put(b":");
        put(cur);
    }
}

/// Rule 8 for `LD_PRELOAD`: if the child's `LD_PRELOAD` does not name the shim,
/// put the shim first and keep every other entry, in order.
fn sticky_preload(
    req: &EnvRequest<'_>,
    verdicts: &mut [Verdict],
    seen: &[u32],
    out: &mut Builder<'_, '_>,
    path: &[u8],
) -> u32 {
    let current = first_index(seen, req.env, crate::builtin::LD_PRELOAD)
        .filter(|&i| verdicts.get(i).is_some_and(|v| v.action.passes()))
        .and_then(|i| req.env.get(i))
        .and_then(|e| split_entry(e))
        .map(|(_, v)| v);
    if current.is_some_and(|cur| preload_lists(cur, path)) {
        return 0;
    }
    let start = out.n_bytes;
    out.put(crate::builtin::LD_PRELOAD);
    out.put(b"=");
    put_preload_with_shim(path, current, |piece| out.put(piece));
    out.finish_entry(start, Rule::Sticky);
    replace_input(
        verdicts,
        req.env,
        seen,
        crate::builtin::LD_PRELOAD,
        Rule::Sticky,
    );
    1
}

/// Appends emits and built entries; counts what would be needed when the byte
/// buffer runs out, so the caller learns the size in one pass.
struct Builder<'e, 'b> {
    emits: &'e mut [Emit],
    bytes: &'b mut [u8],
    n_emits: usize,
    n_bytes: usize,
    need_bytes: usize,
    /// Emits pushed, whether or not they fitted: the decision is retried with
    /// room for all of them rather than losing one.
    need_emits: usize,
}

impl Builder<'_, '_> {
    fn push(&mut self, e: Emit) {
        self.need_emits += 1;
        if let Some(slot) = self.emits.get_mut(self.n_emits) {
            *slot = e;
            self.n_emits += 1;
        }
    }

    fn put(&mut self, s: &[u8]) {
        self.need_bytes = self.need_bytes.saturating_add(s.len());
        if let Some(dst) = self.bytes.get_mut(self.n_bytes..self.n_bytes + s.len()) {
            dst.copy_from_slice(s);
            self.n_bytes += s.len();
        } else {
            // Out of room: stop writing but keep counting.
            self.n_bytes = self.bytes.len();
        }
    }

    fn put_value(&mut self, a: &envfile::Assignment<'_>) {
        let len = a.value_len();
        self.need_bytes = self.need_bytes.saturating_add(len);
        match self
            .bytes
            .get_mut(self.n_bytes..)
            .and_then(|rest| a.write_value(rest))
        {
            Some(w) => self.n_bytes += w,
            None => self.n_bytes = self.bytes.len(),
        }
    }

    /// Terminate the entry that started at `start` with a NUL and emit it.
    fn finish_entry(&mut self, start: usize, rule: Rule) {
        self.need_bytes = self.need_bytes.saturating_add(1);
        let len = self.n_bytes.saturating_sub(start);
        if let Some(b) = self.bytes.get_mut(self.n_bytes) {
            *b = 0;
            self.n_bytes += 1;
            self.push(Emit::Built {
                start: start as u32,
                len: len as u32,
                rule,
            });
        } else {
            self.n_bytes = self.bytes.len();
        }
    }
}

#[cfg(test)]
mod tests {

    /// A policy text compiled by the std crate (a dev-dependency), as bytes that
    /// this crate's own reader opens: the two crates' `Policy` types differ in a
    /// test build.
    fn compiled(text: &str, path: &str) -> Vec<u8> {
        envpolicy::load::compile_text(text, std::path::Path::new(path))
            .expect("test policy compiles")
            .bytes()
            .to_vec()
    }

    fn open_policy(bytes: &[u8]) -> crate::Policy<'_> {
        crate::Policy::from_bytes(bytes).expect("a compiled policy")
    }

    /// `decide_env` with scratch of the sizes `scratch_sizes` gives and room to
    /// spare for built entries (these tests' environments are small).
    fn decide_env_roomy(
        policy: &crate::Policy<'_>,
        req: &super::EnvRequest<'_>,
    ) -> (super::EnvSummary, Vec<super::Emit>, Vec<u8>) {
        use super::*;
        let sizes = scratch_sizes(policy, req.env.len(), req.preload.map_or(0, <[u8]>::len));
        let mut verdicts = vec![Verdict::new(Action::Keep, Rule::BaseAll); sizes.verdicts];
        let mut seen = vec![0u32; sizes.seen];
        let mut emits = vec![Emit::Input(0); sizes.emits];
        let mut bytes = vec![0u8; sizes.bytes + (1 << 16)];
        let mut scratch = EnvScratch {
            verdicts: &mut verdicts,
            seen: &mut seen,
            emits: &mut emits,
            bytes: &mut bytes,
        };
        let summary = decide_env(policy, req, &mut scratch).expect("scratch large enough");
        (summary, emits, bytes)
    }

    /// `Policy::may_match` is a filter in front of `collect`: it may let a name
    /// through that no pattern matches, but must never rule out one that some
    /// pattern does, for any kind of glob, in any case, with any bytes after the
    /// name (as in a `NAME=VALUE` entry).
    #[test]
    fn the_name_gates_never_hide_a_match() {
        use proptest::prelude::*;
        let text = r#"
version = 1
keep = ["KEEP_EXACT", "LC_*", "*_HOME", "A*B", "*MID*DLE*", "X*", "*Z"]
strip = ["*SE*", "Ab*cD"]
[credentials]
names = ["*SECRET*", "*PASSWORD*", "*_TOKEN", "token_*", "*pass*wd*"]
"#;
        let compile = |text: &str| compiled(text, "/gates.toml");
        // The same with a glob that has no gate (`*Q*`), and with more windows
        // than `GATE_PAIRS` (the need sets decide).
        let open = text.replace(r#""*SE*","#, r#""*SE*", "*Q*","#);
        let many = text.replace(r#""*SE*","#, r#""*SE*", "*WD*", "*OR*", "*KE*", "*EC*","#);
        let policies = [
            compile(text),
            compile(&open),
            compile(&many),
            envpolicy::load::builtin_default().bytes().to_vec(),
        ];
        // Names built from the patterns' literals (in both cases) and random bytes,
        // so that every kind of glob matches often.
        let fragments: Vec<&[u8]> = vec![
            b"SECRET",
            b"secret",
            b"PASSWORD",
            b"pass",
            b"WD",
            b"wd",
            b"_TOKEN",
            b"token_",
            b"MID",
            b"DLE",
            b"LC_",
            b"lc_",
            b"_HOME",
            b"A",
            b"B",
            b"X",
            b"Z",
            b"Q",
            b"q",
            b"SE",
            b"Ab",
            b"cD",
            b"KEEP_EXACT",
            b"LD_",
            b"BASH_FUNC_",
            b"_API_KEY",
            b"GH_",
        ];
        let alphabet: Vec<u8> = b"ABCDEKLOPSTWXYZabcdeklopstwxyz_09.-\xc3".to_vec();
        let part = proptest::prop_oneof![
            proptest::sample::select(fragments).prop_map(<[u8]>::to_vec),
            proptest::collection::vec(proptest::sample::select(alphabet), 0..4),
        ];
        proptest!(ProptestConfig::with_cases(6000), |(
            parts in proptest::collection::vec(part, 0..5),
            rest in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..12),
            which in 0..4usize,
        )| {
            let name: Vec<u8> = parts.concat().into_iter().filter(|&b| b != b'=').collect();
            let mut entry = name.clone();
            entry.push(b'=');
            entry.extend_from_slice(&rest);
            let policy = open_policy(&policies[which]);
            let key = crate::compiled::name_key(&name);
            let present = crate::compiled::name_bits(&name);
            let m = super::collect(&policy, &name, key, present, u64::MAX, None);
            let matched = m.keep.is_some() || m.strip.is_some() || m.credential.is_some()
                || m.unsafe_name.is_some() || m.floor.is_some() || m.checked_value.is_some();
            if matched {
                prop_assert!(policy.may_match(&entry, name.len(), key.hash),
                    "gates hid a match for {:?}", String::from_utf8_lossy(&name));
                prop_assert!(policy.may_match(&name, name.len(), key.hash));
            }
        });
    }

    /// The child environment `decide_env` builds, with the file-keep values looked
    /// up and judged in advance as libenvshim.so's cache does (`cached`), or not.
    fn child_env(
        policy: &crate::Policy<'_>,
        program: &[u8],
        env: &[&[u8]],
        files: &[Option<&[u8]>],
        cached: bool,
    ) -> Vec<Vec<u8>> {
        use super::*;
        use crate::compiled::sec;
        let n_keeps = policy.count(sec::FILE_KEEPS) as u32;
        let values: Vec<_> = (0..n_keeps)
            .map(|k| file_keep_value(policy, k, files))
            .collect();
        let mut buf = [0u8; 512];
        let judged: Vec<_> = (0..n_keeps)
            .map(|k| {
                let a = values[k as usize]?;
                file_value_passes_globally(policy, k, &a, &mut buf)
            })
            .collect();
        let req = EnvRequest {
            program,
            identity: crate::identity::Identity::itself(program),
            env,
            env_files: files,
            preload: None,
            policy_entry: None,
            hint: None,
            file_values: cached.then_some(&values[..]),
            file_judged: cached.then_some(&judged[..]),
            renamed_files: 0,
            parent_env: &[],
            secrets: &[],
            routed: false,
        };
        let (summary, emits, bytes) = decide_env_roomy(policy, &req);
        entries_of(policy, env, &emits[..summary.emitted], &bytes)
    }

    /// The child's entries that `emits` stand for.
    fn entries_of(
        policy: &crate::Policy<'_>,
        env: &[&[u8]],
        emits: &[super::Emit],
        bytes: &[u8],
    ) -> Vec<Vec<u8>> {
        use super::Emit;
        emits
            .iter()
            .map(|e| match *e {
                Emit::Input(i) => env[i as usize].to_vec(),
                Emit::Built { start, len, .. } => {
                    bytes[start as usize..(start + len) as usize].to_vec()
                }
                Emit::Pooled { entry, .. } => policy.str(entry).to_vec(),
            })
            .collect()
    }

    /// The file-keep values judged once per read of the files (for the cache of
    /// libenvshim.so) decide as the decision's own judgement does: where no
    /// program section applies, and, where one does (which can refuse what passes
    /// elsewhere), because the decision then judges again.
    #[test]
    fn file_values_judged_in_advance_decide_as_judged_at_each_exec() {
        let text = r#"
version = 1
keep = ["HTTPS_PROXY", "LANG", "TOOL_TOKEN", "PLAIN"]

[[import.env_file]]
path = "/nonexistent/loop.env"
values = true

[program.deploy]
strip = ["PLAIN"]
"#;
        // The compiler reads the file for the names it declares.
        let file: &[u8] = b"HTTPS_PROXY=http://user:hunter2@proxy:3128\n\
            LANG=C.UTF-8\nTOOL_TOKEN=abc\nPLAIN=just-a-value\n";
        let path =
            std::env::temp_dir().join(format!("envpolicy-judged-{}.env", std::process::id()));
        std::fs::write(&path, file).expect("temp file");
        let text = text.replace("/nonexistent/loop.env", &path.to_string_lossy());
        let c = compiled(&text, "/judged.toml");
        std::fs::remove_file(&path).ok();
        let policy = open_policy(&c);
        let files = [Some(file)];
        let env: [&[u8]; 3] = [b"PATH=/bin", b"PLAIN=inherited", b"LANG=fr_FR"];
        for program in [&b"/bin/true"[..], b"/usr/bin/deploy"] {
            let judged = child_env(&policy, program, &env, &files, true);
            let plain = child_env(&policy, program, &env, &files, false);
            assert_eq!(judged, plain, "{}", String::from_utf8_lossy(program));
        }
        // What the judgements say: the URL with a password and the credential name
        // are refused, the rest passes; and PLAIN is stripped for deploy alone.
        let outside = child_env(&policy, b"/bin/true", &env, &files, true);
        let has = |env: &[Vec<u8>], e: &[u8]| env.iter().any(|x| x == e);
        assert!(has(&outside, b"LANG=C.UTF-8") && has(&outside, b"PLAIN=just-a-value"));
        assert!(!outside.iter().any(|e| e.starts_with(b"HTTPS_PROXY=")));
        assert!(!outside.iter().any(|e| e.starts_with(b"TOOL_TOKEN=")));
        let deploy = child_env(&policy, b"/usr/bin/deploy", &env, &files, true);
        assert!(!deploy.iter().any(|e| e.starts_with(b"PLAIN=")));
    }

    /// A grant makes a judgement depend on the program: none is made in advance.
    #[test]
    fn no_file_value_is_judged_in_advance_under_a_grant() {
        let text = r#"
version = 1
keep = ["TOOL_TOKEN"]

[[import.env_file]]
path = "/nonexistent/loop.env"
values = true

[[grant]]
name = "TOOL_TOKEN"
program = "tool"
"#;
        let path = std::env::temp_dir().join(format!("envpolicy-grant-{}.env", std::process::id()));
        std::fs::write(&path, "TOOL_TOKEN=abc\n").expect("temp file");
        let text = text.replace("/nonexistent/loop.env", &path.to_string_lossy());
        let c = compiled(&text, "/grant.toml");
        std::fs::remove_file(&path).ok();
        let policy = open_policy(&c);
        let a = crate::envfile::lookup(b"TOOL_TOKEN=abc\n", b"TOOL_TOKEN").expect("assigned");
        let mut buf = [0u8; 64];
        assert_eq!(
            super::file_value_passes_globally(&policy, 0, &a, &mut buf),
            None
        );
    }

    /// Rule 8's hint: the one the caller gives is added or kept where it is; any
    /// other `ENVSHIM_HINT` is dropped, and never judged as a value; with no
    /// emit room to spare, the decision asks for more rather than losing one.
    #[test]
    fn only_the_callers_hint_reaches_the_child() {
        use super::*;
        let c = compiled("version = 1\n", "/hint.toml");
        let policy = open_policy(&c);
        let run = |env: &[&[u8]], hint: Option<&[u8]>| -> Vec<Vec<u8>> {
            let req = EnvRequest {
                program: b"/bin/true",
                identity: crate::identity::Identity::itself(b"/bin/true"),
                env,
                env_files: &[],
                preload: Some(b"/lib/libenvshim.so"),
                policy_entry: Some(b"ENVSHIM_POLICY=/hint.toml"),
                hint,
                file_values: None,
                file_judged: None,
                renamed_files: 0,
                parent_env: &[],
                secrets: &[],
                routed: false,
            };
            let (summary, emits, bytes) = decide_env_roomy(&policy, &req);
            entries_of(&policy, env, &emits[..summary.emitted], &bytes)
        };
        let ours: &[u8] = b"ENVSHIM_HINT=1-0123456789abcdef";
        let hints = |env: &[Vec<u8>]| -> Vec<Vec<u8>> {
            env.iter()
                .filter(|e| e.starts_with(b"ENVSHIM_HINT="))
                .cloned()
                .collect()
        };
        // Forged, and a token-shaped value that rule 4 would refuse.
        let forged: &[&[u8]] = &[
            b"PATH=/bin",
            b"ENVSHIM_HINT=ghp_0123456789abcdefghijklmnopqrstuvwxyz",
        ];
        assert_eq!(hints(&run(forged, Some(ours))), vec![ours.to_vec()]);
        assert_eq!(hints(&run(forged, None)), Vec::<Vec<u8>>::new());
        // Already there: kept in place, nothing else added.
        let there: &[&[u8]] = &[b"PATH=/bin", ours];
        let child = run(there, Some(ours));
        assert_eq!(child[1], ours);
        assert_eq!(hints(&child).len(), 1);
        // An empty environment gets all three of rule 8's entries.
        let empty = run(&[], Some(ours));
        assert_eq!(empty.len(), 3, "{empty:?}");
    }

    /// The supervisor's run key ([`crate::mark`]) stays in the child under a
    /// policy that keeps nothing else, is reported, and is never judged as a
    /// value; a malformed one is dropped, and one the child does not receive
    /// reports no key.
    #[test]
    fn the_supervisor_entry_stays_and_is_reported() {
        let run = |text: &str, env: &[&[u8]]| supervisor_key_and_child(text, env, &[]);
        let entry = crate::mark::entry(0x0123_4567_89ab_cdef);
        let env: &[&[u8]] = &[b"PATH=/bin", &entry];
        let (key, child) = run("version = 1\nbase = \"none\"\n", env);
        assert_eq!(key, 0x0123_4567_89ab_cdef);
        assert!(child.iter().any(|e| e[..] == entry[..]), "{child:?}");
        let (key, child) = run("version = 1\n", &[b"ENVSHIM_SUPERVISOR=0123456789ABCDEF"]);
        assert_eq!((key, child.len()), (0, 0));
        // A credential's value inside it: refused as a copy, and no key.
        let cred = b"GH_TOKEN=23456789ab";
        let (key, child) = run("version = 1\n", &[cred, &entry]);
        assert_eq!((key, child.len()), (0, 0), "{child:?}");
    }

    /// The run key a decision reports and the child's entries, for an exec of
    /// `/bin/true` with `env` under the policy `text`, from a caller holding
    /// `parent`.
    fn supervisor_key_and_child(
        text: &str,
        env: &[&[u8]],
        parent: &[&[u8]],
    ) -> (u64, Vec<Vec<u8>>) {
        use super::*;
        let c = compiled(text, "/p.toml");
        let policy = open_policy(&c);
        let req = EnvRequest {
            program: b"/bin/true",
            identity: crate::identity::Identity::itself(b"/bin/true"),
            env,
            env_files: &[],
            preload: None,
            policy_entry: None,
            hint: None,
            file_values: None,
            file_judged: None,
            renamed_files: 0,
            parent_env: parent,
            secrets: &[],
            routed: false,
        };
        let (summary, emits, bytes) = decide_env_roomy(&policy, &req);
        let child = entries_of(&policy, env, &emits[..summary.emitted], &bytes);
        (summary.supervisor_key, child)
    }

    /// A child handed an environment without the run key (`env -i`) gets its
    /// caller's, whatever the policy keeps, and the exec keeps its mark; a
    /// malformed one in the caller gives none.
    #[test]
    fn a_child_without_the_run_key_gets_its_callers() {
        let run = |parent: &[&[u8]]| {
            supervisor_key_and_child("version = 1\nbase = \"none\"\n", &[b"PATH=/bin"], parent)
        };
        let entry = crate::mark::entry(0x0123_4567_89ab_cdef);
        let (key, child) = run(&[b"HOME=/root", &entry]);
        assert_eq!(key, 0x0123_4567_89ab_cdef);
        assert_eq!(child, vec![entry.to_vec()]);
        let (key, child) = run(&[b"ENVSHIM_SUPERVISOR=0123456789ABCDEF"]);
        assert_eq!((key, child.len()), (0, 0));
        let (key, child) = run(&[]);
        assert_eq!((key, child.len()), (0, 0));
    }
}
