//! Encoded copies of a credential: does a value hold a credential's bytes in
//! base64 (the standard alphabet or the URL-safe one), at any alignment?
//!
//! `Authorization: Basic <base64 of user:TOKEN>` and git's
//! `http.extraheader=AUTHORIZATION: basic <base64 of x-access-token:TOKEN>` hold
//! a credential as surely as `Bearer TOKEN` does, but not its bytes. Base64
//! encodes 3 bytes as 4 characters: if `C` starts at byte `k` of the encoded
//! text, the first group of 3 bytes wholly inside `C` starts at `C[s]`, with
//! `s = (3 - k % 3) % 3`, and from there `C`'s whole groups are encoded exactly,
//! whatever comes before and after them. So three needles, the encodings of
//! `C[s .. s + 3m]` for `s` = 0, 1, 2, find every copy: at most [`MAX_BYTES`] of
//! `C` each ([`NEEDLE_MAX`] characters), and none shorter than [`NEEDLE_MIN`]
//! characters (too few bytes to say anything), so a credential shorter than
//! [`MIN_CREDENTIAL`] (8 bytes, the default `credentials.min_value_len`) is not
//! searched for encoded. Padding never matters: only whole
//! groups of `C` are searched for.
//!
//! The URL-safe alphabet writes `-` and `_` for `+` and `/`: a needle is kept in
//! the standard alphabet and compared with either. Percent-encoding is not
//! searched for: it leaves the unreserved bytes (`A-Z a-z 0-9 - . _ ~`) as they
//! are, which is every byte of most tokens, so the raw search already finds it.
//!
//! No allocation and no panics: the needles are built into a [`Base64Needles`]
//! on the stack (about 100 bytes), once per credential, and searched with
//! [`crate::bytes::Finder`] for their longest run without `+` or `/`, the whole
//! needle compared only there. docs/adr/0017-values-hold-no-credential.md has the
//! reasons and the cost.

use crate::bytes::Finder;

/// Bytes of a credential one needle encodes, at most (8 groups: 192 bits of
/// the credential, more than any chance match; longer needles cost more to build
/// and to sieve, and find nothing more).
pub const MAX_BYTES: usize = 24;
/// Characters of the longest needle.
pub const NEEDLE_MAX: usize = MAX_BYTES / 3 * 4;
/// Characters of the shortest needle searched for (6 bytes of the credential).
pub const NEEDLE_MIN: usize = 8;

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The byte the URL-safe alphabet writes for a standard one (`+` is `-`, `/` is
/// `_`; every other byte is itself).
#[inline]
pub const fn url_safe(b: u8) -> u8 {
    match b {
        b'+' => b'-',
        b'/' => b'_',
        other => other,
    }
}

/// Is `b` a character of either alphabet?
#[inline]
const fn is_symbol(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_')
}

/// The byte range to overwrite for a needle found at `found` in `text`: the
/// needle, the group before it (which holds up to 2 bytes of the credential),
/// and the base64 text on either side (the rest of a credential longer than
/// [`MAX_BYTES`], its padding). Leftwards past that group the run stops at `-`
/// and `=`, so that `--auth=<copy>` keeps its flag.
pub fn copy_around(text: &[u8], found: core::ops::Range<usize>) -> (usize, usize) {
    let head = text.get(..found.start).unwrap_or(&[]);
    let group = head
        .iter()
        .rev()
        .take(4)
        .take_while(|&&b| is_symbol(b))
        .count();
    let mut start = found.start - group;
    if group == 4 {
        let before = text.get(..start).unwrap_or(&[]);
        start -= before
            .iter()
            .rev()
            .take_while(|&&b| is_symbol(b) && b != b'-')
            .count();
    }
    let tail = text.get(found.end..).unwrap_or(&[]);
    let end = found.end
        + tail
            .iter()
            .take_while(|&&b| is_symbol(b) || b == b'=')
            .count();
    (start, end)
}

/// Bytes of the shortest credential searched for: the shortest whose three needles
/// all have [`NEEDLE_MIN`] characters, so that every copy of it is found, at
/// every alignment (a shorter one would be found at some alignments only).
pub const MIN_CREDENTIAL: usize = NEEDLE_MIN / 4 * 3 + 2;

/// The length of the needle for shift `s` of a credential of `len` bytes (0: no
/// needle).
#[inline]
const fn needle_len(len: usize, s: usize) -> usize {
    if len < MIN_CREDENTIAL {
        return 0;
    }
    let groups = len.saturating_sub(s) / 3;
    let groups = if groups > MAX_BYTES / 3 {
        MAX_BYTES / 3
    } else {
        groups
    };
    let n = groups * 4;
    if n < NEEDLE_MIN {
        0
    } else {
        n
    }
}

/// The shortest needle a credential of `len` bytes has (`None`: it has none, and
/// no encoded copy of it is searched for). Known from the length alone, so that a
/// value too short for any needle is passed over before a needle is built.
#[inline]
pub const fn shortest_needle(len: usize) -> Option<usize> {
    let mut best = usize::MAX;
    let mut s = 0;
    while s < 3 {
        let n = needle_len(len, s);
        if n != 0 && n < best {
            best = n;
        }
        s += 1;
    }
    if best == usize::MAX {
        None
    } else {
        Some(best)
    }
}

/// The three needles of one credential, in the standard alphabet.
#[derive(Clone, Copy)]
pub struct Base64Needles {
    text: [[u8; NEEDLE_MAX]; 3],
    /// Each needle's length (0: none).
    len: [u8; 3],
    /// Each needle's longest run without `+` or `/`: where it starts, its length.
    anchor: [(u8, u8); 3],
    /// No needle has a `+` or `/`: both alphabets write them alike.
    plain: bool,
}

impl Base64Needles {
    /// The needles of `credential`: for `s` = 0, 1, 2, the base64 of its bytes
    /// from `s` in whole groups of 3, at most [`MAX_BYTES`] of them.
    pub fn of(credential: &[u8]) -> Base64Needles {
        let mut n = Base64Needles {
            text: [[0; NEEDLE_MAX]; 3],
            len: [0; 3],
            anchor: [(0, 0); 3],
            plain: true,
        };
        let mut plain = true;
        for (s, ((text, len), anchor)) in n
            .text
            .iter_mut()
            .zip(n.len.iter_mut())
            .zip(n.anchor.iter_mut())
            .enumerate()
        {
            let want = needle_len(credential.len(), s);
            let bytes = want / 4 * 3;
            let Some(src) = credential.get(s..s + bytes) else {
                continue;
            };
            if want == 0 {
                continue;
            }
            encode(src, text);
            *len = want as u8;
            let needle = text.get(..want).unwrap_or(&[]);
            *anchor = if needle.iter().any(|&b| b == b'+' || b == b'/') {
                plain = false;
                longest_plain_run(needle)
            } else {
                (0, want as u8)
            };
        }
        n.plain = plain;
        n
    }

    /// Does no needle hold a `+` or `/` (so that every escape leaves it as it is)?
    #[inline]
    pub fn is_plain(&self) -> bool {
        self.plain
    }

    /// The needles (standard alphabet), shortest first is not promised.
    pub fn needles(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.text
            .iter()
            .zip(self.len.iter())
            .filter(|(_, &l)| l != 0)
            .map(|(t, &l)| t.get(..l as usize).unwrap_or(&[]))
    }

    /// Does `value` hold one of the needles, in either alphabet?
    #[inline]
    pub fn found_in(&self, value: &[u8]) -> bool {
        self.find_in(value).is_some()
    }

    /// Where the first needle found in `value` is (in the order the needles were
    /// built), as a byte range of `value`.
    pub fn find_in(&self, value: &[u8]) -> Option<core::ops::Range<usize>> {
        self.text
            .iter()
            .zip(self.len.iter())
            .zip(self.anchor.iter())
            .filter(|((_, &l), _)| l != 0 && value.len() >= l as usize)
            .find_map(|((t, &l), &a)| find_needle(value, t.get(..l as usize)?, a))
    }
}

/// A sieve over the needles of several credentials, to pass over at once the
/// values that hold none of them: every 4-character run of every needle (in the
/// standard alphabet, and in the URL-safe one when it differs), hashed into 4096
/// bits (512 bytes). A needle at least
/// `shortest` characters long holds a whole run starting at one of the sampled
/// places of a value (every `shortest - 3` characters), so a value none of whose
/// samples is in the sieve holds no needle; one that has a sample in it is
/// searched for each credential's needles ([`Base64Needles::find_in`]). Usually
/// one sample per value (a value shorter than twice the shortest needle).
pub struct Sieve {
    bits: [u64; Sieve::WORDS],
    /// The shortest needle that will be added: only the runs of each needle's
    /// first `shortest` characters are kept (any copy of a needle holds them).
    shortest: usize,
}

impl Sieve {
    const WORDS: usize = 64;

    /// A sieve for needles none shorter than `shortest` characters (the least
    /// [`shortest_needle`] of the credentials to add).
    pub const fn new(shortest: usize) -> Sieve {
        Sieve {
            bits: [0; Sieve::WORDS],
            shortest,
        }
    }

    /// The bit of a run of 4 characters (standard alphabet).
    #[inline]
    fn bit(gram: u32) -> (usize, u64) {
        let h = gram.wrapping_mul(0x9E37_79B1) >> 20;
        ((h >> 6) as usize, 1u64 << (h & 63))
    }

    /// Add the needles of one credential, in both alphabets.
    pub fn add(&mut self, needles: &Base64Needles) {
        for n in needles.needles() {
            let n = n.get(..self.shortest).unwrap_or(n);
            self.add_runs(n, |b| b);
        }
        // The URL-safe alphabet's runs, when it writes a needle otherwise.
        if !needles.plain {
            for n in needles.needles() {
                let n = n.get(..self.shortest).unwrap_or(n);
                self.add_runs(n, url_safe);
            }
        }
    }

    #[inline]
    fn add_runs(&mut self, needle: &[u8], alphabet: impl Fn(u8) -> u8) {
        let mut gram = 0u32;
        for (i, &b) in needle.iter().enumerate() {
            gram = (gram >> 8) | u32::from(alphabet(b)) << 24;
            if i >= 3 {
                let (word, bit) = Sieve::bit(gram);
                if let Some(x) = self.bits.get_mut(word) {
                    *x |= bit;
                }
            }
        }
    }

    /// Might `value` hold a needle added? (No: it holds none.)
    #[inline]
    pub fn may_hold(&self, value: &[u8]) -> bool {
        let n = self.shortest;
        if value.len() < n || n < 4 {
            return false;
        }
        // The needle at p (0 <= p <= len - n) holds the run at q for
        // p <= q <= p + n - 4: q = n - 4, then every n - 3 places.
        let mut q = n - 4;
        while let Some(w) = value.get(q..q + 4) {
            let (word, bit) = Sieve::bit(gram(w));
            if self.bits.get(word).is_some_and(|x| x & bit != 0) {
                return true;
            }
            q += n - 3;
        }
        false
    }
}

/// Four characters as one number.
#[inline]
fn gram(w: &[u8]) -> u32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(w);
    u32::from_le_bytes(x)
}

/// Does `value` hold `credential` in base64, in either alphabet, at any
/// alignment? (Every needle of [`Base64Needles::of`]; a credential too short for
/// one is never found.)
pub fn holds_base64(value: &[u8], credential: &[u8]) -> bool {
    match shortest_needle(credential.len()) {
        Some(n) if value.len() >= n => Base64Needles::of(credential).found_in(value),
        _ => false,
    }
}

/// The base64 of `src` (a whole number of 3-byte groups; a last partial group
/// is left out) into `out`, 4 characters per group, as far as `out` holds them.
#[inline]
pub fn encode(src: &[u8], out: &mut [u8]) {
    let sym = |x: u32| ALPHABET.get((x & 63) as usize).copied().unwrap_or(b'A');
    for (group, quad) in src.chunks_exact(3).zip(out.chunks_exact_mut(4)) {
        let mut g = [0u8; 3];
        g.copy_from_slice(group);
        let x = u32::from(g[0]) << 16 | u32::from(g[1]) << 8 | u32::from(g[2]);
        let q = [sym(x >> 18), sym(x >> 12), sym(x >> 6), sym(x)];
        quad.copy_from_slice(&q);
    }
}

/// The longest run of `needle` without `+` or `/` (the bytes both alphabets
/// write alike): where it starts, its length.
fn longest_plain_run(needle: &[u8]) -> (u8, u8) {
    let (mut best, mut start) = ((0usize, 0usize), 0usize);
    for (i, &b) in needle.iter().enumerate() {
        if b == b'+' || b == b'/' {
            start = i + 1;
        } else if i + 1 - start > best.1 {
            best = (start, i + 1 - start);
        }
    }
    (best.0 as u8, best.1 as u8)
}

/// Is `hay` the `needle` (standard alphabet) in either alphabet?
#[inline]
fn same_text(hay: &[u8], needle: &[u8]) -> bool {
    hay.len() == needle.len()
        && hay
            .iter()
            .zip(needle)
            .all(|(&h, &n)| h == n || h == url_safe(n))
}

/// The first place `needle` is in `value`, searched for by its `anchor` (a run
/// both alphabets write alike), the whole needle compared where the anchor is.
fn find_needle(value: &[u8], needle: &[u8], anchor: (u8, u8)) -> Option<core::ops::Range<usize>> {
    let (o, a) = (anchor.0 as usize, anchor.1 as usize);
    let finder = Finder::new(needle.get(o..o + a)?);
    // The anchor starts at o or later and at last + o or earlier.
    let last = value.len().checked_sub(needle.len())? + o;
    let mut from = o;
    while from <= last {
        let p = from + finder.find(value.get(from..last + a)?)?;
        let start = p - o;
        if value
            .get(start..start + needle.len())
            .is_some_and(|h| same_text(h, needle))
        {
            return Some(start..start + needle.len());
        }
        from = p + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain base64 encoder (with padding), to check against.
    fn b64(src: &[u8]) -> String {
        let mut out = String::new();
        for g in src.chunks(3) {
            let x = (u32::from(g[0]) << 16)
                | (u32::from(*g.get(1).unwrap_or(&0)) << 8)
                | u32::from(*g.get(2).unwrap_or(&0));
            for i in 0..4 {
                if i <= g.len() {
                    out.push(ALPHABET[((x >> (18 - 6 * i)) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    fn needles_of(c: &[u8]) -> Vec<String> {
        Base64Needles::of(c)
            .needles()
            .map(|n| String::from_utf8(n.to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn the_three_needles_of_a_small_input() {
        // "abcdefghij": s = 0 encodes "abcdefghi", s = 1 "bcdefghij", s = 2
        // "cdefgh" (two whole groups).
        assert_eq!(b64(b"abcdefghi"), "YWJjZGVmZ2hp");
        assert_eq!(
            needles_of(b"abcdefghij"),
            ["YWJjZGVmZ2hp", "YmNkZWZnaGlq", "Y2RlZmdo"]
        );
        // Eight bytes: every shift has two groups. Seven: the last shift would
        // have one (4 characters, too short), so none is searched for.
        assert_eq!(MIN_CREDENTIAL, 8);
        assert_eq!(needles_of(b"abcdefgh"), ["YWJjZGVm", "YmNkZWZn", "Y2RlZmdo"]);
        assert_eq!(shortest_needle(8), Some(8));
        assert_eq!(shortest_needle(7), None);
        assert!(needles_of(b"abcdefg").is_empty());
        // 24 bytes at most, 32 characters.
        let long = [b'x'; 100];
        let n = needles_of(&long);
        assert_eq!(n.len(), 3);
        assert!(n.iter().all(|n| n.len() == NEEDLE_MAX));
        assert_eq!(n[0], b64(&long[..MAX_BYTES]));
    }

    #[test]
    fn the_standard_and_url_safe_alphabets_both_match() {
        // 0xfb 0xff 0xbf encodes as "+/+/": all of it differs between alphabets.
        let c = [0xfbu8, 0xff, 0xbf, b'a', b'b', b'c', 0xfb, 0xff, 0xbf];
        let std = b64(&c);
        assert!(std.contains('+') && std.contains('/'));
        let url: String = std.bytes().map(|b| url_safe(b) as char).collect();
        for text in [&std, &url] {
            assert!(holds_base64(format!("Basic {text}").as_bytes(), &c));
        }
        assert!(!holds_base64(b"Basic unrelated+text/here==", &c));
    }

    #[test]
    fn every_alignment_with_or_without_padding_is_found() {
        let token: Vec<u8> = (0..40).map(|i| b"A1b2_c3D"[i % 8] ^ (i as u8 & 7)).collect();
        for prefix in ["", "u", "us", "user:", "x-access-token:"] {
            for suffix in ["", "\n", ":x", ":xy"] {
                let plain = [prefix.as_bytes(), &token, suffix.as_bytes()].concat();
                let enc = b64(&plain);
                let unpadded = enc.trim_end_matches('=');
                for text in [enc.as_str(), unpadded] {
                    let value = format!("AUTHORIZATION: basic {text}");
                    assert!(holds_base64(value.as_bytes(), &token), "{prefix:?} {suffix:?}");
                    let r = Base64Needles::of(&token).find_in(value.as_bytes()).unwrap();
                    assert!(r.start >= "AUTHORIZATION: basic ".len());
                }
            }
        }
        // The encoding of the first 5 bytes only holds no needle.
        assert!(!holds_base64(b64(&token[..5]).as_bytes(), &token));
    }

    #[test]
    fn the_sieve_passes_every_value_that_holds_a_needle() {
        let a: Vec<u8> = (0..40u8).map(|i| b'A' + i % 26).collect();
        let b: Vec<u8> = (0..9u8).map(|i| 0xf0 ^ i).collect();
        let mut sieve = Sieve::new(shortest_needle(9).unwrap());
        for c in [&a, &b] {
            sieve.add(&Base64Needles::of(c));
        }
        for c in [&a, &b] {
            for pre in 0..40usize {
                for post in 0..5usize {
                    let text = [vec![b'.'; pre], b64(c).into_bytes(), vec![b'.'; post]].concat();
                    assert!(sieve.may_hold(&text), "{pre} {post}");
                    let url: Vec<u8> = text.iter().map(|&x| url_safe(x)).collect();
                    assert!(sieve.may_hold(&url), "{pre} {post}");
                }
            }
        }
        assert!(!Sieve::new(8).may_hold(b"anything at all, long enough for a needle"));
        assert!(!sieve.may_hold(b"short"));
    }

    proptest::proptest! {
        #[test]
        fn found_exactly_where_the_encoded_text_holds_a_needle(
            prefix in proptest::collection::vec(proptest::num::u8::ANY, 0..6),
            c in proptest::collection::vec(proptest::num::u8::ANY, 0..70),
            other in proptest::collection::vec(proptest::num::u8::ANY, 0..70),
        ) {
            let value = b64(&[prefix.as_slice(), &c].concat());
            // Every credential of 8 bytes or more is found in its own encoded
            // copy, at every alignment; no shorter one is searched for.
            proptest::prop_assert_eq!(holds_base64(value.as_bytes(), &c), c.len() >= MIN_CREDENTIAL);
            // And the answer is the obvious search's for another.
            let obvious = Base64Needles::of(&other).needles().any(|n| {
                value.as_bytes().windows(n.len()).any(|w| same_text(w, n))
            });
            proptest::prop_assert_eq!(holds_base64(value.as_bytes(), &other), obvious);
            // The sieve passes every value that holds a needle.
            let shortest = [&other, &c].iter().filter_map(|x| shortest_needle(x.len())).min();
            let mut sieve = Sieve::new(shortest.unwrap_or(usize::MAX));
            sieve.add(&Base64Needles::of(&other));
            sieve.add(&Base64Needles::of(&c));
            if obvious || c.len() >= MIN_CREDENTIAL {
                proptest::prop_assert!(sieve.may_hold(value.as_bytes()));
            }
        }
    }
}
