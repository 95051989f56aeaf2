//! Byte searches: [`memchr`], [`memchr2`], [`memrchr`] and substring search
//! ([`find`], [`Finder`]), and the two splits every rule makes with them: an
//! entry at its first `=` ([`split_entry`]) and a program path at its last `/`
//! ([`basename`]).
//!
//! Why here and not the memchr crate: this crate has no dependencies, so that no
//! feature cargo unifies across the workspace reaches libenvshim.so (memchr's `std`
//! feature, which serde_json and aho-corasick turn on, would link std into it; see
//! the crate docs). What the core searches is short: names, values, argv words and
//! env-file lines, up to the 1 MiB of an argv. So these do what memchr's fallback
//! does, 16 bytes at a time with SSE2 (part of every x86_64 CPU), and a byte at a
//! time on other targets. Substring search compares a needle's first and last
//! bytes at 16 positions at once, then the whole needle only where both match.

/// Split `NAME=VALUE` at the first `=`.
#[inline]
pub fn split_entry(entry: &[u8]) -> Option<(&[u8], &[u8])> {
    let eq = find_eq(entry)?;
    Some((entry.get(..eq)?, entry.get(eq + 1..)?))
}

/// The first `=`, eight bytes at a time (a name is short: memchr's set-up costs
/// more than it saves, and a byte loop is slower than this).
#[inline]
pub(crate) fn find_eq(entry: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut chunks = entry.chunks_exact(8);
    let mut at = 0usize;
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        let x = u64::from_le_bytes(w) ^ (u64::from(b'=') * ONES);
        // A zero byte in `x` is an `=` in the entry (the classic haszero test; its
        // lowest set bit is exact).
        let zero = x.wrapping_sub(ONES) & !x & HIGH;
        if zero != 0 {
            return Some(at + (zero.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b == b'=')
        .map(|i| at + i)
}

/// The basename of a program path.
pub fn basename(program: &[u8]) -> &[u8] {
    match memrchr(b'/', program) {
        Some(i) => program.get(i + 1..).unwrap_or(&[]),
        None => program,
    }
}

/// The space-separated words of a table kept as one string (the core's lists
/// of names and commands are strings of words, not tables of slices: no
/// relocation in libenvshim.so).
pub fn words(list: &'static [u8]) -> impl Iterator<Item = &'static [u8]> + Clone {
    list.split(|&b| b == b' ').filter(|w| !w.is_empty())
}

/// The first index of `needle` in `hay`.
pub fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        sse2::first_match(hay, |chunk| sse2::eq_mask(chunk, needle))
            .or_else(|| tail_position(hay, |b| b == needle))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        hay.iter().position(|&b| b == needle)
    }
}

/// The first index of either byte in `hay`.
pub fn memchr2(a: u8, b: u8, hay: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        sse2::first_match(hay, |chunk| {
            sse2::eq_mask(chunk, a) | sse2::eq_mask(chunk, b)
        })
        .or_else(|| tail_position(hay, |x| x == a || x == b))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        hay.iter().position(|&x| x == a || x == b)
    }
}

/// Does `hay` hold any of the bytes of `set`? One pass, 16 bytes a step, the
/// last step over the last 16 bytes (which may overlap the one before): no
/// byte-by-byte tail for a haystack of 16 bytes or more.
pub fn holds_any<const N: usize>(hay: &[u8], set: [u8; N]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if hay.len() >= 16 {
        let mask = |chunk: &[u8]| set.iter().fold(0, |m, &b| m | sse2::eq_mask(chunk, b));
        let last = hay.get(hay.len() - 16..).unwrap_or(&[]);
        return mask(last) != 0 || sse2::first_match(hay, mask).is_some();
    }
    hay.iter().any(|x| set.contains(x))
}

/// The last index of `needle` in `hay`.
pub fn memrchr(needle: u8, hay: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        let head = hay.get(..hay.len() % 16).unwrap_or(&[]);
        let mut end = hay.len();
        for chunk in hay.rchunks_exact(16) {
            let start = end - 16;
            let mask = sse2::eq_mask(chunk, needle);
            if mask != 0 {
                return Some(start + (31 - mask.leading_zeros()) as usize);
            }
            end = start;
        }
        head.iter().rposition(|&b| b == needle)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        hay.iter().rposition(|&b| b == needle)
    }
}

/// The index of the first byte after the whole 16-byte chunks that matches.
#[cfg(target_arch = "x86_64")]
fn tail_position(hay: &[u8], is: impl Fn(u8) -> bool) -> Option<usize> {
    let start = hay.len() - hay.len() % 16;
    hay.get(start..)?.iter().position(|&b| is(b)).map(|i| start + i)
}

/// The first index at which `needle` occurs in `hay` (0 for an empty needle).
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    Finder::new(needle).find(hay)
}

/// A substring search for one needle, to run over many haystacks.
#[derive(Clone, Copy, Debug)]
pub struct Finder<'n> {
    needle: &'n [u8],
}

impl<'n> Finder<'n> {
    pub fn new(needle: &'n [u8]) -> Finder<'n> {
        Finder { needle }
    }

    pub fn needle(&self) -> &'n [u8] {
        self.needle
    }

    /// The first index at which the needle occurs in `hay`.
    pub fn find(&self, hay: &[u8]) -> Option<usize> {
        let n = self.needle.len();
        let (Some(&first), Some(&last)) = (self.needle.first(), self.needle.last()) else {
            return Some(0);
        };
        // The candidate starts are 0..=last_start.
        let last_start = hay.len().checked_sub(n)?;
        let at = |i: usize| hay.get(i..i + n) == Some(self.needle);
        let mut i = 0;
        #[cfg(target_arch = "x86_64")]
        while i + 16 <= last_start + 1 {
            // The 16 bytes at i and the 16 at i + n - 1 are in `hay`: i + n - 1 + 16
            // <= last_start + n = hay.len().
            let (Some(starts), Some(ends)) = (hay.get(i..i + 16), hay.get(i + n - 1..i + n + 15))
            else {
                break;
            };
            let mut mask = sse2::eq_mask(starts, first) & sse2::eq_mask(ends, last);
            while mask != 0 {
                let j = i + mask.trailing_zeros() as usize;
                if at(j) {
                    return Some(j);
                }
                mask &= mask - 1;
            }
            i += 16;
        }
        // The rest (all of a short haystack): the first and last bytes before
        // the whole needle, as in the vector loop.
        (i..=last_start).find(|&j| {
            hay.get(j) == Some(&first) && hay.get(j + n - 1) == Some(&last) && at(j)
        })
    }
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use core::arch::x86_64::{_mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8};

    /// One bit per byte of the 16-byte `chunk` that equals `b` (bit i for byte i);
    /// 0 when `chunk` is not 16 bytes long.
    #[inline(always)]
    pub fn eq_mask(chunk: &[u8], b: u8) -> u32 {
        if chunk.len() != 16 {
            return 0;
        }
        // SAFETY: SSE2 is part of the x86_64 baseline, so these instructions exist
        // on every CPU this code runs on; `_mm_loadu_si128` reads 16 bytes from a
        // pointer with no alignment requirement, and `chunk` is exactly 16 bytes.
        let mask = unsafe {
            let bytes = _mm_loadu_si128(chunk.as_ptr().cast());
            _mm_movemask_epi8(_mm_cmpeq_epi8(bytes, _mm_set1_epi8(b as i8)))
        };
        mask as u32 & 0xffff
    }

    /// The first index in the whole 16-byte chunks of `hay` whose bit `mask_of`
    /// sets (the bytes after the last whole chunk are the caller's).
    #[inline(always)]
    pub fn first_match(hay: &[u8], mask_of: impl Fn(&[u8]) -> u32) -> Option<usize> {
        for (n, chunk) in hay.chunks_exact(16).enumerate() {
            let mask = mask_of(chunk);
            if mask != 0 {
                return Some(n * 16 + mask.trailing_zeros() as usize);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn find_eq_matches_a_byte_scan() {
        let mut cases: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"=".to_vec(),
            b"A=1".to_vec(),
            b"NO_EQUALS".to_vec(),
        ];
        for len in 0..24 {
            for pos in 0..=len {
                let mut v: Vec<u8> = (0..len).map(|i| b'A' + (i % 26) as u8).collect();
                if pos < len {
                    v[pos] = b'=';
                    // Bytes that differ from '=' by one bit, and a second '=' later.
                    if pos + 1 < len {
                        v[pos + 1] = b'=' ^ 1;
                    }
                }
                v.push(0xff);
                v.push(b'=');
                cases.push(v);
            }
        }
        for c in cases {
            assert_eq!(find_eq(&c), c.iter().position(|&b| b == b'='), "{c:?}");
        }
    }

    use super::*;
    use proptest::prelude::*;

    #[test]
    fn small_cases() {
        assert_eq!(memchr(b'a', b""), None);
        assert_eq!(memchr(b'a', b"xxa"), Some(2));
        assert_eq!(memrchr(b'/', b"/usr/bin/env"), Some(8));
        assert_eq!(memchr2(b'"', b'\\', b"ab\\c\""), Some(2));
        assert_eq!(find(b"hello", b""), Some(0));
        assert_eq!(find(b"", b"a"), None);
        let long = [b"x".repeat(40), b"needle".to_vec(), b"x".repeat(3)].concat();
        assert_eq!(find(&long, b"needle"), Some(40));
        assert_eq!(find(&long, b"needlex"), Some(40));
        assert_eq!(find(&long, b"needlexxxx"), None);
        assert_eq!(memrchr(b'n', &long), Some(40));
        assert_eq!(memchr(b'e', &long), Some(41));
    }

    proptest! {
        #[test]
        fn same_as_the_obvious_search(
            hay in proptest::collection::vec(0u8..4, 0..80),
            needle in proptest::collection::vec(0u8..4, 0..6),
            b in 0u8..4,
            c in 0u8..4,
        ) {
            prop_assert_eq!(memchr(b, &hay), hay.iter().position(|&x| x == b));
            prop_assert_eq!(memrchr(b, &hay), hay.iter().rposition(|&x| x == b));
            prop_assert_eq!(memchr2(b, c, &hay), hay.iter().position(|&x| x == b || x == c));
            let set = [b, c, b ^ 1, 7];
            prop_assert_eq!(holds_any(&hay, set), hay.iter().any(|x| set.contains(x)));
            let obvious = if needle.is_empty() {
                Some(0)
            } else {
                hay.windows(needle.len()).position(|w| w == &needle[..])
            };
            prop_assert_eq!(find(&hay, &needle), obvious);
        }
    }
}
