//! Output masking: every credential value a front end knows, replaced in a
//! program's output by a marker that names it (`<GH_TOKEN>`), as the output
//! streams past (`envwrap --mask`).
//!
//! Why a stream and not lines: a terminal program writes whatever it likes
//! when it likes (a progress bar never ends its line, a prompt waits for a
//! key), so output is passed on as soon as it can be, and only the bytes that
//! may be the start of a value are held back ([`Stream`]). A value split across
//! two writes is still found; a held partial match is at most one byte shorter
//! than the longest form searched for, and its holder lets it go when the
//! output pauses ([`Stream::hold_time`]).
//!
//! What is searched for is each value's [`forms`]: its bytes and the encodings
//! that the copies rule finds in argv ([`crate::encoded`], [`crate::escaped`]),
//! in one Aho-Corasick automaton over all of them, so the cost per byte does not
//! grow with the number of values.

pub mod forms;
mod sieve;
mod stream;

pub use stream::Stream;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};

/// The values to mask, each with its marker, and the automaton over their forms.
pub struct Masker {
    automaton: Option<AhoCorasick>,
    /// Per pattern of the automaton: the index of its marker.
    marker_of: Vec<usize>,
    markers: Vec<Vec<u8>>,
    /// Every pattern, sorted: the held-back tail is the longest one that some
    /// pattern starts with.
    sorted: Vec<Vec<u8>>,
    /// Where the automaton need not run ([`sieve`]); `None` when a form is
    /// too short to sample.
    sieve: Option<sieve::Sieve>,
    /// Bytes that start a pattern.
    starts: [bool; 256],
    longest: usize,
}

impl Masker {
    /// A masker of `values`: each a name and a value. The marker is `<NAME>`,
    /// or `<credential>` when the name itself is not shown (it holds a token,
    /// or is not printable: [`crate::shown::word`]). Empty values are left out.
    pub fn new<'v>(values: impl IntoIterator<Item = (&'v [u8], &'v [u8])>) -> Masker {
        let mut markers: Vec<Vec<u8>> = Vec::new();
        let mut patterns: Vec<Vec<u8>> = Vec::new();
        let mut marker_of = Vec::new();
        for (name, value) in values {
            if value.is_empty() {
                continue;
            }
            let marker = marker(name);
            let m = match markers.iter().position(|x| *x == marker) {
                Some(m) => m,
                None => {
                    markers.push(marker);
                    markers.len() - 1
                }
            };
            for form in forms::of(value) {
                if !patterns.contains(&form) {
                    patterns.push(form);
                    marker_of.push(m);
                }
            }
        }
        let automaton = (!patterns.is_empty())
            .then(|| {
                // A contiguous NFA: a DFA of a hundred forms took about 5 ms to
                // build at every start, and the sieve leaves the automaton
                // little to search.
                AhoCorasickBuilder::new()
                    .match_kind(MatchKind::Standard)
                    .kind(Some(AhoCorasickKind::ContiguousNFA))
                    .build(&patterns)
                    .ok()
            })
            .flatten();
        let mut starts = [false; 256];
        for p in &patterns {
            if let Some(&b) = p.first() {
                starts[usize::from(b)] = true;
            }
        }
        let longest = patterns.iter().map(Vec::len).max().unwrap_or(0);
        let sieve = sieve::Sieve::of(&patterns);
        let mut sorted = patterns;
        sorted.sort();
        Masker {
            automaton,
            marker_of,
            markers,
            sorted,
            sieve,
            starts,
            longest,
        }
    }

    /// No value to mask: output passes unchanged.
    pub fn is_empty(&self) -> bool {
        self.automaton.is_none()
    }

    /// How many forms are searched for.
    pub fn patterns(&self) -> usize {
        self.sorted.len()
    }

    /// Does some pattern start with `tail` (and is longer than it)?
    fn starts_some(&self, tail: &[u8]) -> bool {
        let at = self.sorted.partition_point(|p| p.as_slice() < tail);
        self.sorted
            .get(at..)
            .unwrap_or(&[])
            .iter()
            .take_while(|p| p.starts_with(tail))
            .any(|p| p.len() > tail.len())
    }
}

/// `<NAME>`, or `<credential>` for a name that is not shown as it is.
fn marker(name: &[u8]) -> Vec<u8> {
    match crate::shown::word(name) {
        crate::shown::Shown::Plain(n)
            if !n.is_empty() && !n.contains(&b'<') && !n.contains(&b'>') =>
        {
            [b"<", n, b">"].concat()
        }
        _ => b"<credential>".to_vec(),
    }
}
