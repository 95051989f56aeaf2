//! Escaped copies of a credential: does a value hold a credential's bytes after
//! one of the decodings that undo what programs write without being asked?
//!
//! A password with an `@`, a `/`, a quote or a `$` rarely travels raw. A shell
//! passes it on through `printf %q` (`p\@ss\ w0rd`) or single quotes
//! (`'it'\''s'`), a database URL percent-encodes it (`postgres://u:p%40ss@h/db`,
//! `?password=p%40ss+w0rd`), a JSON-valued variable escapes it
//! (`{"password":"p\"ss\\w0rd"}`), sometimes twice (JSON inside JSON), an SQL
//! literal or a CSV field doubles its quotes (`'it''s'`), and an XML config
//! writes character references (`p&amp;ss`, `&#39;`). None of
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
//! that holds no `%`, `\`, `'`, `"`, `&` or `+` ([`may_hold`], one pass at 16
//! bytes a step) is passed over.
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
    /// A quote written twice inside quotes: SQL string literals (`'it''s'`),
    /// CSV fields and Windows command lines (`"a""b"`).
    Doubled,
    /// HTML and XML character references: `&amp;`, `&lt;`, `&gt;`, `&quot;`,
    /// `&apos;`, `&#39;`, `&#x2F;` (an XML config, an HTML page).
    Entity,
}

impl Escape {
    const ALL: [Escape; 7] = [
        Escape::Percent,
        Escape::Form,
        Escape::Backslash,
        Escape::Backslash2,
        Escape::Quote,
        Escape::Doubled,
        Escape::Entity,
    ];

    const fn bit(self) -> u8 {
        1 << self as u8
    }

    /// The bytes an escape of this kind starts with (one of them twice when
    /// there is only one): the one table of them.
    const fn starters(self) -> [u8; 2] {
        match self {
            Escape::Percent => [b'%', b'%'],
            Escape::Form => [b'%', b'+'],
            Escape::Backslash | Escape::Backslash2 => [b'\\', b'\\'],
            Escape::Quote => [b'\'', b'\''],
            Escape::Doubled => [b'\'', b'"'],
            Escape::Entity => [b'&', b'&'],
        }
    }

    /// Can an escape of this kind start with `b`?
    #[inline]
    const fn starts_with(self, b: u8) -> bool {
        let [x, y] = self.starters();
        b == x || b == y
    }
}

/// For each byte, the escapes that can start with it ([`Escape::starters`]).
/// Built at compile time: an index out of bounds here fails the build, it
/// cannot panic at run time.
#[allow(clippy::indexing_slicing)]
const STARTING: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut k = 0;
    while k < Escape::ALL.len() {
        let e = Escape::ALL[k];
        let [x, y] = e.starters();
        table[x as usize] |= e.bit();
        table[y as usize] |= e.bit();
        k += 1;
    }
    table
};

/// Every byte an escape starts with (a test holds it to [`STARTING`]).
const STARTERS: [u8; 6] = [b'%', b'\\', b'\'', b'+', b'"', b'&'];

/// Could `value` hold an escaped copy of anything? It must hold the first byte
/// of some escape: `%`, `+`, `\`, `'`, `"` or `&`. Most values hold none.
#[inline]
pub fn may_hold(value: &[u8]) -> bool {
    crate::bytes::holds_any(value, STARTERS)
}

/// The escapes whose copies of `credential` differ from the credential itself:
/// those the raw search cannot find.
fn raw_escapes(credential: &[u8]) -> u8 {
    let mut set = 0u8;
    if credential
        .iter()
        .any(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')))
    {
        set |= Escape::Percent.bit() | Escape::Backslash.bit() | Escape::Backslash2.bit();
    }
    // The form's decoding differs from percent-decoding only where a `+` is
    // a space: it finds nothing more in a credential without one.
    if crate::bytes::memchr(b' ', credential).is_some() {
        set |= Escape::Form.bit();
    }
    if crate::bytes::memchr(b'\'', credential).is_some() {
        set |= Escape::Quote.bit() | Escape::Doubled.bit();
    }
    if crate::bytes::memchr(b'"', credential).is_some() {
        set |= Escape::Doubled.bit();
    }
    if credential.iter().any(|b| b"&<>\"'".contains(b)) {
        set |= Escape::Entity.bit();
    }
    set
}

/// The escapes that change base64 text: a `+` or `/` in it is percent-encoded
/// (the form's decoding finds nothing more: base64 holds no space), and JSON
/// may write `/` as `\/`.
const BASE64_ESCAPES: u8 =
    Escape::Percent.bit() | Escape::Backslash.bit() | Escape::Backslash2.bit();

/// What one credential's escaped copies are searched for with: the credential
/// and the escapes that change it, and its base64 needles and the escapes that
/// change them. Built once per credential; about 120 bytes.
#[derive(Clone, Copy)]
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

    /// The escapes whose decodings this credential's copies are searched in
    /// (a set for [`each_decoding`]).
    pub fn wanted(&self) -> u8 {
        self.raw | if self.needles.is_some() { BASE64_ESCAPES } else { 0 }
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

    /// Does `decoded` (a value as `escape` decodes it, whole: [`each_decoding`])
    /// hold the credential, or one of its base64 needles? The decision's
    /// search: a value is decoded once for all credentials.
    /// `base64` says whether to search for the needles at all (a sieve of
    /// every credential's needles, [`crate::encoded::Sieve`], kept `decoded`).
    pub fn found_decoded(&self, decoded: &[u8], escape: Escape, base64: bool) -> bool {
        (self.raw & escape.bit() != 0 && crate::bytes::find(decoded, self.credential).is_some())
            || (base64
                && BASE64_ESCAPES & escape.bit() != 0
                && self.needles.is_some_and(|n| n.found_in(decoded)))
    }

    /// The base64 needles searched for under an escape, if any (to build a
    /// sieve of them).
    pub fn needles(&self) -> Option<&Base64Needles> {
        self.needles.as_ref()
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

/// Each decoding of `value` that changes it, whole, into `buf` (which must
/// hold twice the value: [`Escape::Backslash2`] decodes the first half into the
/// second): `f(escape, decoded)` until `f` says it found something. `None`: the
/// value is too long for `buf` (the caller searches with
/// [`EscapedCopies::find_in`], which needs no buffer); `Some(found)` else.
pub fn each_decoding(
    value: &[u8],
    wanted: u8,
    buf: &mut [u8],
    mut f: impl FnMut(Escape, &[u8]) -> bool,
) -> Option<bool> {
    let half = buf.len() / 2;
    if value.len() > half {
        return None;
    }
    let (first, second) = buf.split_at_mut(half);
    // Backslash2 is decoded from Backslash's decoding: that one is made
    // when either is wanted.
    let b2 = wanted & Escape::Backslash2.bit() != 0;
    let present = present_escapes(value) & (wanted | if b2 { Escape::Backslash.bit() } else { 0 });
    let plus = crate::bytes::memchr(b'+', value).is_some();
    for e in [
        Escape::Percent,
        Escape::Form,
        Escape::Quote,
        Escape::Doubled,
        Escape::Entity,
        Escape::Backslash,
    ] {
        // Without a `+`, the form's decoding is percent-decoding's.
        if present & e.bit() == 0 || (e == Escape::Form && !plus) {
            continue;
        }
        let decoded = decode_into(value, e, first);
        // `+` for a space keeps the length: compare the bytes.
        if wanted & e.bit() != 0 && decoded != value && f(e, decoded) {
            return Some(true);
        }
        if e != Escape::Backslash || !b2 || crate::bytes::memchr(b'\\', decoded).is_none() {
            continue;
        }
        let once = decoded.len();
        let value = first.get(..once).unwrap_or(&[]);
        let twice = decode_into(value, Escape::Backslash, second);
        // A backslash escape always shortens: a length kept is no change.
        if twice.len() != once && f(Escape::Backslash2, twice) {
            return Some(true);
        }
    }
    Some(false)
}

/// `value` as `escape` decodes it, whole, into `out` (a decoding never
/// lengthens its value, so a buffer as long as the value holds it). The runs
/// between escapes are copied as they are; each escape is decoded by the
/// same stream the search reads ([`Unescaped`]).
fn decode_into<'o>(value: &[u8], escape: Escape, out: &'o mut [u8]) -> &'o [u8] {
    let [a, b] = escape.starters();
    let mut n = 0usize;
    let mut at = 0usize;
    let mut put = |bytes: &[u8], n: &mut usize| {
        if let Some(dst) = out.get_mut(*n..*n + bytes.len()) {
            dst.copy_from_slice(bytes);
            *n += bytes.len();
        }
    };
    while let Some(rest) = value.get(at..).filter(|r| !r.is_empty()) {
        let run = crate::bytes::memchr2(a, b, rest).unwrap_or(rest.len());
        put(rest.get(..run).unwrap_or(&[]), &mut n);
        at += run;
        if at >= value.len() {
            break;
        }
        let mut unit = Unescaped::new(Raw { value, at }, escape);
        while let Some(byte) = unit.next_byte() {
            put(&[byte], &mut n);
            if unit.next >= unit.len {
                break;
            }
        }
        at = unit.at().max(at + 1);
    }
    out.get(..n).unwrap_or(&[])
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

/// The escapes whose first byte `value` holds, in one pass.
fn present_escapes(value: &[u8]) -> u8 {
    value
        .iter()
        .fold(0, |set, &b| set | STARTING.get(b as usize).copied().unwrap_or(0))
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

    /// After a quote `q`: a second one is the same quote, written once.
    fn doubled(&mut self, q: u8) -> u8 {
        let mut look = self.inner.clone();
        if look.next_byte() == Some(q) {
            self.inner = look;
        }
        q
    }

    /// After a `&`: a named reference of the five XML has, or a numeric one
    /// (`&#39;`, `&#x2F;`), then `;`.
    fn entity(&mut self) -> u8 {
        const NAMED: [(&[u8], u8); 5] = [
            (b"amp;", b'&'),
            (b"lt;", b'<'),
            (b"gt;", b'>'),
            (b"quot;", b'"'),
            (b"apos;", b'\''),
        ];
        for (name, byte) in NAMED {
            let mut look = self.inner.clone();
            if name.iter().all(|&c| look.next_byte() == Some(c)) {
                self.inner = look;
                return byte;
            }
        }
        let mut look = self.inner.clone();
        if look.next_byte() == Some(b'#') {
            let mut probe = look.clone();
            let (radix, mut digits_left) = if probe.next_byte().is_some_and(|b| b == b'x' || b == b'X') {
                look = probe;
                (16, 6)
            } else {
                (10, 7)
            };
            let mut cp = 0u32;
            let mut any = false;
            loop {
                let mut next = look.clone();
                match next.next_byte() {
                    Some(b';') if any => {
                        if let Some(b) = self.utf8(cp) {
                            self.inner = next;
                            return b;
                        }
                        break;
                    }
                    Some(d) if digits_left > 0 => match (d as char).to_digit(radix) {
                        Some(v) => {
                            cp = cp * radix + v;
                            any = true;
                            digits_left -= 1;
                            look = next;
                        }
                        None => break,
                    },
                    _ => break,
                }
            }
        }
        b'&'
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
            (Escape::Doubled, b'\'' | b'"') => self.doubled(b),
            (Escape::Entity, b'&') => self.entity(),
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
    const PASSWORD: &[u8] = b"p@ss/w0rd 'it\"s' $HOME\\x! <&>";

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

    fn doubled(s: &[u8], q: u8) -> Vec<u8> {
        let mut out = vec![q];
        for &b in s {
            out.push(b);
            if b == q {
                out.push(q);
            }
        }
        out.push(q);
        out
    }

    fn html(s: &[u8], numeric: bool) -> Vec<u8> {
        let mut out = Vec::new();
        for &b in s {
            match (b, numeric) {
                (b'&', false) => out.extend(b"&amp;"),
                (b'<', false) => out.extend(b"&lt;"),
                (b'"', false) => out.extend(b"&quot;"),
                (b'\'', false) => out.extend(b"&#39;"),
                (b'&' | b'<' | b'"' | b'\'' | b'/', true) => {
                    out.extend(format!("&#x{b:X};").bytes())
                }
                _ => out.push(b),
            }
        }
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
            ("sql literal", doubled(PASSWORD, b'\'')),
            ("csv field", doubled(PASSWORD, b'"')),
            ("html", html(PASSWORD, false)),
            ("xml numeric", html(PASSWORD, true)),
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
    fn the_decision_search_finds_what_the_stream_search_finds() {
        let copies = EscapedCopies::of(PASSWORD);
        let forms = [
            percent(PASSWORD, b"", true),
            json(&json(PASSWORD, false), false),
            single_quoted(PASSWORD, b"'\\''"),
            printf_q(PASSWORD),
            b"plain%zz\\'+".to_vec(),
        ];
        for form in forms {
            let value = wrapped(&form);
            let mut buf = [0u8; 512];
            let found =
                each_decoding(&value, copies.wanted(), &mut buf, |e, d| copies.found_decoded(d, e, true));
            assert_eq!(found, Some(copies.found_in(&value)));
        }
        let mut small = [0u8; 8];
        assert_eq!(each_decoding(b"0123456789", 0xff, &mut small, |_, _| true), None);
        // `+` for a space keeps the length, and is a change.
        let spaced = EscapedCopies::of(b"correct horse battery");
        let mut buf = [0u8; 128];
        let found = each_decoding(b"pw=correct+horse+battery", spaced.wanted(), &mut buf, |e, d| {
            spaced.found_decoded(d, e, true)
        });
        assert_eq!(found, Some(true));
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
    fn the_sieve_holds_every_byte_an_escape_starts_with() {
        for b in 0..=255u8 {
            assert_eq!(STARTING[b as usize] != 0, STARTERS.contains(&b), "byte {b}");
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
        fn the_whole_value_decoding_is_the_streams(
            value in proptest::collection::vec(
                proptest::sample::select(b"%+\\'\"2FfAu0xnq/ ".to_vec()), 0..48),
        ) {
            for e in Escape::ALL {
                let mut out = [0u8; 64];
                let fast = decode_into(&value, e, &mut out).to_vec();
                let mut stream = Unescaped::new(Raw { value: &value, at: 0 }, e);
                let mut slow = Vec::new();
                while let Some(b) = stream.next_byte() {
                    slow.push(b);
                }
                proptest::prop_assert_eq!(fast, slow, "{:?}", e);
            }
        }

        #[test]
        fn what_the_decision_finds_the_streams_find(
            value in proptest::collection::vec(
                proptest::sample::select(b"%+\\'\"2FfAu0xnq/ &#;amp@4".to_vec()), 0..64),
            credential in proptest::collection::vec(
                proptest::sample::select(b"ab@/ '\\\"&q".to_vec()), 8..12),
        ) {
            let copies = EscapedCopies::of(&credential);
            let mut buf = [0u8; 256];
            let found = each_decoding(&value, copies.wanted(), &mut buf, |e, d| {
                copies.found_decoded(d, e, true)
            });
            if found == Some(true) {
                proptest::prop_assert!(copies.found_in(&value));
            }
        }

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
