//! Escaped copies of a credential: does a value hold a credential's bytes after
//! one of the decodings that undo what programs write without being asked?
//!
//! A password with an `@`, a `/`, a quote or a `$` rarely travels raw. A shell
//! passes it on through `printf %q` (`p\@ss\ w0rd`) or single quotes
//! (`'it'\''s'`), a database URL percent-encodes it (`postgres://u:p%40ss@h/db`,
//! `?password=p%40ss+w0rd`), and a JSON-valued variable escapes it
//! (`{"password":"p\"ss\\w0rd"}`), sometimes twice (JSON inside JSON). None of
//! these copies holds the credential's bytes, so the raw search of rule 4 (and
//! [`crate::encoded`]'s base64 search) would pass them. Each is found here by
//! decoding the value as it is read, one [`Escape`] at a time, and comparing
//! the decoded bytes with the credential, and with its base64 needles (git's
//! `extraheader` in a JSON config escapes base64's `/` as `\/`).
//!
//! Decoding is canonical where encoding is not: encoders differ in what they
//! escape (`encodeURIComponent` writes `%2F` for `/`, Python's `quote` does
//! not; JSON may write `\/` or `/`), but every one of them decodes to the same
//! bytes. A decoder is a stream over the value from a start position
//! ([`Unescaped`]); a start is tried only where the value holds the
//! credential's first byte or an escape's first byte, and the comparison stops
//! at the first byte that differs. No allocation: the streams are a few words on
//! the stack.
//!
//! What costs nothing: a credential whose bytes no escape changes (letters,
//! digits, `-`, `_`, `.`: every common token alphabet) is never searched for
//! here, raw, and its base64 needles only when they hold `+` or `/`; and a value
//! that holds no `%`, `\`, `'` or `+` ([`may_hold`], one pass at 16 bytes a
//! step) is passed over.
//!
//! Not searched for, because no program makes them by accident: hex, base32,
//! case changes, a value split into pieces, and encodings nested other than
//! backslash escapes twice. docs/threat-model.md says so, and
//! docs/adr/0023-escaped-copies.md has the reasons and the cost.

use core::ops::Range;

use crate::encoded::{shortest_needle, url_safe, Base64Needles};

/// One decoding: undoes what one family of programs writes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Escape {
    /// RFC 3986 percent-encoding: `%40` is `@`, in either case of hex digit.
    Percent,
    /// The query-string form of it (`application/x-www-form-urlencoded`):
    /// percent-encoding, with `+` for a space.
    Form,
    /// A backslash before a byte: shell `printf %q` and double quotes (`\$`,
    /// `\ `, `\!`), C and JSON strings (`\"`, `\\`, `\/`, `\n`, `\t`, `\xHH`,
    /// octal `\NNN`, `\uXXXX`).
    Backslash,
    /// Backslash escapes applied twice: a JSON string inside a JSON string.
    Backslash2,
    /// Shell single quotes around a value that holds a quote: `'\''` or
    /// `'"'"'` for each `'` (bash's `${v@Q}`, Python's `shlex.quote`).
    Quote,
}

impl Escape {
    const ALL: [Escape; 5] = [
        Escape::Percent,
        Escape::Form,
        Escape::Backslash,
        Escape::Backslash2,
        Escape::Quote,
    ];

    const fn bit(self) -> u8 {
        1 << self as u8
    }

    /// Can an escape of this kind start with `b`?
    #[inline]
    const fn starts_with(self, b: u8) -> bool {
        match self {
            Escape::Percent => b == b'%',
            Escape::Form => b == b'%' || b == b'+',
            Escape::Backslash | Escape::Backslash2 => b == b'\\',
            Escape::Quote => b == b'\'',
        }
    }
}

/// Could `value` hold an escaped copy of anything? It must hold the first byte
/// of some escape: `%`, `+`, `\` or `'`. Most values hold none.
#[inline]
pub fn may_hold(value: &[u8]) -> bool {
    crate::bytes::holds_any4(value, [b'%', b'\\', b'\'', b'+'])
}

/// The escapes whose copies of `credential` differ from the credential itself:
/// those the raw search cannot find.
fn raw_escapes(credential: &[u8]) -> u8 {
    let mut set = 0u8;
    if credential
        .iter()
        .any(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')))
    {
        set |= Escape::Percent.bit()
            | Escape::Form.bit()
            | Escape::Backslash.bit()
            | Escape::Backslash2.bit();
    }
    if crate::bytes::memchr(b'\'', credential).is_some() {
        set |= Escape::Quote.bit();
    }
    set
}

/// The escapes that change base64 text: a `+` or `/` in it is percent-encoded,
/// and JSON may write `/` as `\/`.
const BASE64_ESCAPES: u8 =
    Escape::Percent.bit() | Escape::Form.bit() | Escape::Backslash.bit() | Escape::Backslash2.bit();

/// What one credential's escaped copies are searched for with: the credential
/// and the escapes that change it, and its base64 needles and the escapes that
/// change them. Built once per credential; about 120 bytes.
pub struct EscapedCopies<'c> {
    credential: &'c [u8],
    raw: u8,
    needles: Option<Base64Needles>,
}

impl<'c> EscapedCopies<'c> {
    /// The searches for `credential`'s escaped copies.
    pub fn of(credential: &'c [u8]) -> EscapedCopies<'c> {
        let needles = shortest_needle(credential.len())
            .map(|_| Base64Needles::of(credential))
            .filter(|n| !n.is_plain());
        EscapedCopies {
            credential,
            raw: raw_escapes(credential),
            needles,
        }
    }

    /// Is there nothing to search for (no escape changes the credential or
    /// its base64)?
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.raw == 0 && self.needles.is_none()
    }

    /// Does `value` hold an escaped copy?
    #[inline]
    pub fn found_in(&self, value: &[u8]) -> bool {
        self.find_in(value).is_some()
    }

    /// Where the first escaped copy in `value` is, as a byte range of `value`:
    /// from the first byte of the copy to the end of the escape that holds its
    /// last byte.
    #[inline(never)]
    pub fn find_in(&self, value: &[u8]) -> Option<Range<usize>> {
        if self.is_empty() || value.len() < self.shortest() || !may_hold(value) {
            return None;
        }
        let present = present_escapes(value);
        for e in Escape::ALL {
            if present & e.bit() == 0 {
                continue;
            }
            if self.raw & e.bit() != 0 {
                if let Some(r) = find_decoded(value, self.credential, e, false) {
                    return Some(r);
                }
            }
            if BASE64_ESCAPES & e.bit() == 0 {
                continue;
            }
            let Some(needles) = &self.needles else {
                continue;
            };
            if let Some(r) = needles.needles().find_map(|n| find_decoded(value, n, e, true)) {
                return Some(r);
            }
        }
        None
    }

    /// The shortest copy there can be: a decoding never makes a value longer.
    fn shortest(&self) -> usize {
        let raw = if self.raw != 0 {
            self.credential.len()
        } else {
            usize::MAX
        };
        let b64 = match self.needles {
            Some(_) => shortest_needle(self.credential.len()).unwrap_or(usize::MAX),
            None => usize::MAX,
        };
        raw.min(b64)
    }
}

/// Does `value` hold `credential` escaped (raw or base64, under one of the
/// [`Escape`]s)?
pub fn holds_escaped(value: &[u8], credential: &[u8]) -> bool {
    value.len() >= credential.len().min(crate::encoded::NEEDLE_MIN)
        && may_hold(value)
        && EscapedCopies::of(credential).found_in(value)
}

/// Does `value` hold a copy of `credential` in any form rule 4 searches for: its
/// bytes, its base64, or either escaped? The one test of a copy, wherever a
/// value is compared with one credential.
pub fn holds_copy(value: &[u8], credential: &[u8]) -> bool {
    crate::bytes::find(value, credential).is_some()
        || crate::encoded::holds_base64(value, credential)
        || holds_escaped(value, credential)
}

/// The escapes whose first byte `value` holds.
fn present_escapes(value: &[u8]) -> u8 {
    let mut set = 0u8;
    for e in Escape::ALL {
        let first: &[u8] = match e {
            Escape::Percent => b"%",
            Escape::Form => b"%+",
            Escape::Backslash | Escape::Backslash2 => b"\\",
            Escape::Quote => b"'",
        };
        if first
            .iter()
            .any(|&b| crate::bytes::memchr(b, value).is_some())
        {
            set |= e.bit();
        }
    }
    set
}

/// The first start in `value` from which `escape`'s decoding reads `needle`
/// (with `base64`, in either alphabet), as the range of `value` it read.
fn find_decoded(value: &[u8], needle: &[u8], escape: Escape, base64: bool) -> Option<Range<usize>> {
    let &first = needle.first()?;
    let same = |d: u8, n: u8| d == n || (base64 && d == url_safe(n));
    for (start, &b) in value.iter().enumerate() {
        if !same(b, first) && !escape.starts_with(b) {
            continue;
        }
        let end = match escape {
            Escape::Backslash2 => {
                let inner = Unescaped::new(Raw { value, at: start }, Escape::Backslash);
                reads(Unescaped::new(inner, Escape::Backslash), needle, same)
            }
            _ => reads(Unescaped::new(Raw { value, at: start }, escape), needle, same),
        };
        if let Some(end) = end {
            return Some(start..end);
        }
    }
    None
}

/// Does `stream` read `needle`, byte for byte as `same` compares? Where it
/// stopped reading, if so.
#[inline]
fn reads<S: Stream>(mut stream: S, needle: &[u8], same: impl Fn(u8, u8) -> bool) -> Option<usize> {
    for &n in needle {
        match stream.next_byte() {
            Some(d) if same(d, n) => {}
            _ => return None,
        }
    }
    Some(stream.at())
}

/// A stream of bytes read from a value, that can be copied to look ahead.
trait Stream: Clone {
    fn next_byte(&mut self) -> Option<u8>;
    /// Where in the value the next byte would be read from.
    fn at(&self) -> usize;
}

/// The value's own bytes, from a start.
#[derive(Clone)]
struct Raw<'v> {
    value: &'v [u8],
    at: usize,
}

impl Stream for Raw<'_> {
    #[inline]
    fn next_byte(&mut self) -> Option<u8> {
        let b = *self.value.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn at(&self) -> usize {
        self.at
    }
}

/// The bytes of `inner` with one escape decoded. An escape that decodes to
/// more than one byte (`\u00e9` is UTF-8's two) hands them out one by one.
#[derive(Clone)]
struct Unescaped<S> {
    inner: S,
    escape: Escape,
    out: [u8; 4],
    next: u8,
    len: u8,
}

impl<S: Stream> Unescaped<S> {
    fn new(inner: S, escape: Escape) -> Self {
        Unescaped {
            inner,
            escape,
            out: [0; 4],
            next: 0,
            len: 0,
        }
    }

    /// After a `%`: two hex digits are one byte.
    fn percent(&mut self) -> u8 {
        let mut look = self.inner.clone();
        match (look.next_byte().and_then(hex), look.next_byte().and_then(hex)) {
            (Some(h), Some(l)) => {
                self.inner = look;
                h << 4 | l
            }
            _ => b'%',
        }
    }

    /// After a `'`: `\''` or `"'"'` close the quotes, write a quote, and open
    /// them again.
    fn quote(&mut self) -> u8 {
        for rest in [&b"\\''"[..], &b"\"'\"'"[..]] {
            let mut look = self.inner.clone();
            if rest.iter().all(|&r| look.next_byte() == Some(r)) {
                self.inner = look;
                break;
            }
        }
        b'\''
    }

    /// After a `\`: the escaped byte, or what the escape stands for.
    fn backslash(&mut self) -> u8 {
        let mut look = self.inner.clone();
        let Some(c) = look.next_byte() else {
            return b'\\';
        };
        let single = match c {
            b'n' => Some(b'\n'),
            b't' => Some(b'\t'),
            b'r' => Some(b'\r'),
            b'b' => Some(0x08),
            b'f' => Some(0x0c),
            b'v' => Some(0x0b),
            b'a' => Some(0x07),
            b'e' => Some(0x1b),
            b'u' | b'x' | b'0'..=b'7' => None,
            other => Some(other),
        };
        if let Some(b) = single {
            self.inner = look;
            return b;
        }
        let decoded = match c {
            b'u' => digits(&mut look, 4, 16).and_then(|cp| self.utf8(cp)),
            b'x' => digits(&mut look, 2, 16).map(|b| b as u8),
            _ => octal(c, &mut look),
        };
        match decoded {
            Some(b) => {
                self.inner = look;
                b
            }
            None => b'\\',
        }
    }

    /// Code point `cp` as UTF-8: its first byte, the rest kept for later
    /// (`None` for a surrogate, which is no character on its own).
    fn utf8(&mut self, cp: u32) -> Option<u8> {
        let ch = char::from_u32(cp)?;
        let mut buf = [0u8; 4];
        let n = ch.encode_utf8(&mut buf).len();
        self.out = buf;
        self.next = 1;
        self.len = n as u8;
        buf.first().copied()
    }
}

impl<S: Stream> Stream for Unescaped<S> {
    fn next_byte(&mut self) -> Option<u8> {
        if self.next < self.len {
            let b = self.out.get(self.next as usize).copied();
            self.next += 1;
            return b;
        }
        let b = self.inner.next_byte()?;
        Some(match (self.escape, b) {
            (Escape::Percent | Escape::Form, b'%') => self.percent(),
            (Escape::Form, b'+') => b' ',
            (Escape::Backslash | Escape::Backslash2, b'\\') => self.backslash(),
            (Escape::Quote, b'\'') => self.quote(),
            _ => b,
        })
    }

    fn at(&self) -> usize {
        self.inner.at()
    }
}

/// The value of a hex digit.
#[inline]
const fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Exactly `n` digits of base `radix` (16 here), as one number.
fn digits<S: Stream>(s: &mut S, n: usize, radix: u32) -> Option<u32> {
    let mut x = 0u32;
    for _ in 0..n {
        let d = (s.next_byte()? as char).to_digit(radix)?;
        x = x * radix + d;
    }
    Some(x)
}

/// Up to three octal digits, the first already read (`\0`, `\101`), as one
/// byte; more than 255 is no byte.
fn octal<S: Stream>(first: u8, s: &mut S) -> Option<u8> {
    let mut x = u32::from(first - b'0');
    for _ in 0..2 {
        let mut look = s.clone();
        match look.next_byte() {
            Some(d @ b'0'..=b'7') => {
                x = x * 8 + u32::from(d - b'0');
                *s = look;
            }
            _ => break,
        }
    }
    u8::try_from(x).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The credentials below are fakes made for these tests.
    const PASSWORD: &[u8] = b"p@ss/w0rd 'it\"s' $HOME\\x!";

    fn percent(s: &[u8], safe: &[u8], plus: bool) -> Vec<u8> {
        let mut out = Vec::new();
        for &b in s {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || safe.contains(&b) {
                out.push(b);
            } else if plus && b == b' ' {
                out.push(b'+');
            } else {
                out.extend(format!("%{b:02X}").bytes());
            }
        }
        out
    }

    fn json(s: &[u8], slash: bool) -> Vec<u8> {
        let mut out = Vec::new();
        for &b in s {
            match b {
                b'"' => out.extend(b"\\\""),
                b'\\' => out.extend(b"\\\\"),
                b'/' if slash => out.extend(b"\\/"),
                b'\n' => out.extend(b"\\n"),
                c if c < 0x20 => out.extend(format!("\\u{c:04x}").bytes()),
                c => out.push(c),
            }
        }
        out
    }

    fn printf_q(s: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for &b in s {
            if !(b.is_ascii_alphanumeric() || b"-_./@%+=:,".contains(&b)) {
                out.push(b'\\');
            }
            out.push(b);
        }
        out
    }

    fn single_quoted(s: &[u8], close: &[u8]) -> Vec<u8> {
        let mut out = vec![b'\''];
        for &b in s {
            if b == b'\'' {
                out.extend(close);
            } else {
                out.push(b);
            }
        }
        out.push(b'\'');
        out
    }

    fn wrapped(copy: &[u8]) -> Vec<u8> {
        [&b"prefix x="[..], copy, b"&rest"].concat()
    }

    #[test]
    fn every_form_a_program_writes_is_found() {
        let forms: Vec<(&str, Vec<u8>)> = vec![
            ("percent, all", percent(PASSWORD, b"", false)),
            ("percent, path-safe", percent(PASSWORD, b"/@", false)),
            ("form", percent(PASSWORD, b"", true)),
            ("json", json(PASSWORD, false)),
            ("json with \\/", json(PASSWORD, true)),
            ("json twice", json(&json(PASSWORD, false), false)),
            ("printf %q", printf_q(PASSWORD)),
            ("${v@Q}", single_quoted(PASSWORD, b"'\\''")),
            ("shlex.quote", single_quoted(PASSWORD, b"'\"'\"'")),
        ];
        let copies = EscapedCopies::of(PASSWORD);
        for (name, form) in forms {
            let value = wrapped(&form);
            let found = copies.find_in(&value);
            assert!(found.is_some(), "{name}: not found");
            let r = found.unwrap_or(0..0);
            assert!(r.start >= b"prefix x=".len() - 1, "{name}: starts early");
            assert!(holds_copy(&value, PASSWORD), "{name}");
        }
    }

    #[test]
    fn escaped_base64_is_found() {
        // A credential whose base64 holds `/` and `+`: 0xff bytes encode to `/`.
        let credential = b"\xfb\xff\xbf\xfb\xff\xbftoken-ish";
        let needles = Base64Needles::of(credential);
        assert!(!needles.is_plain());
        let n = needles.needles().next().map(<[u8]>::to_vec).unwrap_or_default();
        for form in [json(&n, true), percent(&n, b"", false)] {
            assert!(form != n);
            assert!(EscapedCopies::of(credential).found_in(&wrapped(&form)));
        }
    }

    #[test]
    fn a_token_alphabet_costs_nothing_and_misses_nothing() {
        let token = b"abcDEF0123456789_xyz-ABC.def";
        let copies = EscapedCopies::of(token);
        assert_eq!(copies.raw, 0);
        // Escapes of bytes that need none (an encoder that writes every byte)
        // are made on purpose only.
        assert!(!copies.found_in(&percent(token, b"", false)));
    }

    #[test]
    fn near_misses_are_not_copies() {
        let copies = EscapedCopies::of(PASSWORD);
        let mut form = percent(PASSWORD, b"", false);
        form.pop();
        assert!(!copies.found_in(&form));
        assert!(!copies.found_in(b"%%%\\\\\\'''+++"));
        assert!(!copies.found_in(b""));
        // Bad escapes decode as themselves.
        assert!(!EscapedCopies::of(b"p@ss%zz!").found_in(b"p%40ss%zz%2"));
        assert!(EscapedCopies::of(b"p@ss%zz!").found_in(b"p%40ss%zz%21"));
        assert!(EscapedCopies::of(b"caf\xc3\xa9 s3cret").found_in(b"\"caf\\u00e9 s3cret\""));
        assert!(EscapedCopies::of(b"a\x01b s3cret").found_in(b"a\\001b\\ s3cret"));
        assert!(EscapedCopies::of(b"a\x01b s3cret").found_in(b"a\\x01b\\ s3cret"));
    }

    proptest::proptest! {
        #[test]
        fn never_panics_and_finds_the_raw_bytes_of_a_special(
            value in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
            credential in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..16),
        ) {
            let copies = EscapedCopies::of(&credential);
            if let Some(r) = copies.find_in(&value) {
                proptest::prop_assert!(r.start < r.end && r.end <= value.len());
            }
            let mut c = credential.clone();
            c.push(b'@');
            let encoded = percent(&c, b"", false);
            proptest::prop_assert!(EscapedCopies::of(&c).found_in(&encoded));
        }
    }
}
