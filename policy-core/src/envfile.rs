//! Reading env files (`NAME=value` lines) without allocating.
//!
//! A policy can import env files of the kind read by systemd's
//! `EnvironmentFile=`, `docker run --env-file` and dotenv. envshim strips (or
//! refuses) every name such a file declares, and may pass the file's value for
//! an allowlisted name. libenvshim.so runs this code between `fork` and `exec`,
//! so the module uses only `core` and `memchr`: it never allocates and never
//! panics (no panicking indexing, no `unwrap`, no overflowing arithmetic).
//!
//! # Accepted syntax
//!
//! * Lines are separated by `\n`; one trailing `\r` on a line is removed
//!   (CRLF files). A UTF-8 byte order mark at the very start of the file is
//!   ignored. Line numbers are 1-based.
//! * A line that is empty or holds only spaces and tabs is skipped, and so is
//!   a line whose first non-blank byte is `#` (a comment).
//! * An assignment is, in order: optional spaces/tabs; optionally `export`
//!   followed by one or more spaces/tabs; a name matching
//!   `[A-Za-z_][A-Za-z0-9_]*`; optional spaces/tabs; `=`; optional
//!   spaces/tabs; a value. (`export=1` assigns the variable `export`.)
//! * Values come in three forms:
//!   * **unquoted**: the rest of the line with leading and trailing spaces/tabs
//!     removed. A `#` preceded by a space or tab (including the blanks right
//!     after `=`) starts a comment that is dropped, so `A=b #c` is `b` and
//!     `A= #c` is empty, while `A=b#c` is `b#c`. No escapes: every other byte,
//!     quotes and backslashes included, is kept as written.
//!   * **single-quoted** `'…'`: taken literally, up to the next `'`.
//!   * **double-quoted** `"…"`: backslash escapes `\"`, `\\`, `\n` (newline),
//!     `\t` (tab), `\$` and `` \` `` are replaced by the byte they stand for;
//!     any other `\x` is kept as the two bytes `\x`.
//!
//!   A quoted value must close on the same line, and after the closing quote
//!   only spaces/tabs and an optional `#` comment may follow.
//!   `A=` (nothing after `=`) assigns the empty value.
//! * Values are bytes: non-UTF-8 bytes are allowed and kept. A NUL byte is
//!   refused anywhere in a line, since no environment entry can hold one.
//! * Anything else is an error line: a name with no `=`, a name with a byte
//!   outside `[A-Za-z0-9_]` (or starting with a digit), an unclosed quote, or
//!   text after a closing quote. The iterator reports the error and goes on
//!   with the next line.
//!
//! [`LineError`] carries only the line number and a static reason: never any
//! byte of the line, which could hold a secret.
//!
//! A name may be assigned more than once; [`lookup`] returns the first
//! assignment, as glibc's `getenv` reads the first copy of a duplicated entry.

use crate::bytes::{memchr, memchr2};

/// How a value was quoted in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quote {
    /// Unquoted: the trimmed rest of the line, without escapes.
    None,
    /// `'…'`: literal.
    Single,
    /// `"…"`: with backslash escapes.
    Double,
}

/// One assignment. `raw_value` is the bytes between the quotes (or the trimmed unquoted value), before unescaping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Assignment<'a> {
    /// The variable name, `[A-Za-z_][A-Za-z0-9_]*`.
    pub name: &'a [u8],
    /// The value as written, without its quotes and before unescaping.
    pub raw_value: &'a [u8],
    /// How the value was quoted.
    pub quote: Quote,
    /// 1-based line number.
    pub line: u32,
}

/// A line that is neither blank, a comment, nor a valid assignment. Carries only the 1-based line number and a static reason (NEVER any bytes of the line: it could hold a secret).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineError {
    /// 1-based line number.
    pub line: u32,
    /// What is wrong with the line; a fixed text that quotes nothing from it.
    pub reason: &'static str,
}

const MISSING_EQUALS: &str = "missing '=' after the variable name";
const BAD_NAME: &str = "invalid variable name (expected [A-Za-z_][A-Za-z0-9_]*)";
const UNCLOSED_SINGLE: &str = "single-quoted value is not closed on the same line";
const UNCLOSED_DOUBLE: &str = "double-quoted value is not closed on the same line";
const AFTER_QUOTE: &str = "unexpected text after the closing quote";
const NUL_BYTE: &str = "line contains a NUL byte";

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Iterator over the assignments of an env file; see [`assignments`].
#[derive(Clone, Debug)]
pub struct Assignments<'a> {
    rest: &'a [u8],
    line: u32,
}

/// Iterator over the file's lines, yielding Ok(Assignment) or Err(LineError).
pub fn assignments(contents: &[u8]) -> Assignments<'_> {
    let rest = contents.strip_prefix(BOM).unwrap_or(contents);
    Assignments { rest, line: 0 }
}

impl<'a> Iterator for Assignments<'a> {
    type Item = Result<Assignment<'a>, LineError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.rest.is_empty() {
            let line = match memchr(b'\n', self.rest) {
                Some(i) => {
                    let (line, tail) = split_at(self.rest, i);
                    self.rest = tail.get(1..).unwrap_or_default();
                    line
                }
                None => core::mem::take(&mut self.rest),
            };
            self.line = self.line.saturating_add(1);
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if let Some(item) = parse_line(line, self.line) {
                return Some(item);
            }
        }
        None
    }
}

impl core::iter::FusedIterator for Assignments<'_> {}

/// The first assignment of `name` (first wins, as glibc getenv reads the first copy), or None.
///
/// Error lines are skipped: they assign nothing.
pub fn lookup<'a>(contents: &'a [u8], name: &[u8]) -> Option<Assignment<'a>> {
    assignments(contents)
        .flatten()
        .find(|assignment| assignment.name == name)
}

impl<'a> Assignment<'a> {
    /// Length of the unescaped value.
    pub fn value_len(&self) -> usize {
        self.chunks()
            .fold(0usize, |len, chunk| len.saturating_add(chunk.len()))
    }

    /// Write the unescaped value into `out`; returns the number of bytes written, or None if `out` is too short (writes nothing useful then).
    ///
    /// When `out` is too short nothing is written at all.
    pub fn write_value(&self, out: &mut [u8]) -> Option<usize> {
        // Unescaping never lengthens a value, so a buffer as long as the raw
        // value is always enough; only shorter buffers need the exact length.
        if out.len() < self.raw_value.len() && out.len() < self.value_len() {
            return None;
        }
        let mut written = 0usize;
        for chunk in self.chunks() {
            let end = written.checked_add(chunk.len())?;
            out.get_mut(written..end)?.copy_from_slice(chunk);
            written = end;
        }
        Some(written)
    }

    /// Compare the unescaped value with `other` without allocating.
    pub fn value_eq(&self, other: &[u8]) -> bool {
        let mut rest = other;
        for chunk in self.chunks() {
            match rest.strip_prefix(chunk) {
                Some(tail) => rest = tail,
                None => return false,
            }
        }
        rest.is_empty()
    }

    /// The unescaped value as consecutive byte slices.
    fn chunks(&self) -> Chunks<'a> {
        Chunks {
            rest: self.raw_value,
            escapes: self.quote == Quote::Double,
        }
    }
}

/// Splits a raw value into slices whose concatenation is the unescaped value.
struct Chunks<'a> {
    rest: &'a [u8],
    escapes: bool,
}

impl<'a> Iterator for Chunks<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.rest.is_empty() {
            return None;
        }
        if !self.escapes {
            return Some(core::mem::take(&mut self.rest));
        }
        match memchr(b'\\', self.rest) {
            None => Some(core::mem::take(&mut self.rest)),
            Some(0) => {
                let (chunk, consumed): (&'a [u8], usize) = match self.rest.get(1) {
                    Some(b'n') => (b"\n", 2),
                    Some(b't') => (b"\t", 2),
                    Some(b'"' | b'\\' | b'$' | b'`') => {
                        (self.rest.get(1..2).unwrap_or_default(), 2)
                    }
                    // Any other `\x` stays as the two bytes; a lone trailing
                    // backslash (not produced by the parser) stays as itself.
                    Some(_) => (self.rest.get(..2).unwrap_or_default(), 2),
                    None => (self.rest, 1),
                };
                self.rest = self.rest.get(consumed..).unwrap_or_default();
                Some(chunk)
            }
            Some(i) => {
                let (chunk, tail) = split_at(self.rest, i);
                self.rest = tail;
                Some(chunk)
            }
        }
    }
}

/// `slice.split_at(mid)` that cannot panic (an out-of-range `mid` splits at the end).
fn split_at(slice: &[u8], mid: usize) -> (&[u8], &[u8]) {
    match (slice.get(..mid), slice.get(mid..)) {
        (Some(head), Some(tail)) => (head, tail),
        _ => (slice, &[]),
    }
}

fn is_blank(byte: u8) -> bool {
    byte == b' ' || byte == b'\t'
}

fn is_name_start(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'_'
}

fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

fn trim_start(mut bytes: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = bytes {
        if !is_blank(*first) {
            break;
        }
        bytes = rest;
    }
    bytes
}

fn trim_end(mut bytes: &[u8]) -> &[u8] {
    while let [rest @ .., last] = bytes {
        if !is_blank(*last) {
            break;
        }
        bytes = rest;
    }
    bytes
}

/// Parses one line (without its `\n` and `\r`): None for a blank or comment line.
fn parse_line(line: &[u8], number: u32) -> Option<Result<Assignment<'_>, LineError>> {
    let body = trim_start(line);
    match body.first() {
        None | Some(b'#') => return None,
        Some(_) => {}
    }
    let error = |reason| {
        Some(Err(LineError {
            line: number,
            reason,
        }))
    };
    if memchr(0, line).is_some() {
        return error(NUL_BYTE);
    }
    let body = match body.strip_prefix(b"export") {
        Some(tail) if tail.first().copied().is_some_and(is_blank) => trim_start(tail),
        _ => body,
    };

    let name_len = body
        .iter()
        .position(|byte| !is_name_byte(*byte))
        .unwrap_or(body.len());
    let (name, after_name) = split_at(body, name_len);
    let after_name = trim_start(after_name);
    let name_ok = name.first().copied().is_some_and(is_name_start);
    let Some(value_part) = after_name.strip_prefix(b"=").filter(|_| name_ok) else {
        return if memchr(b'=', body).is_none() {
            error(MISSING_EQUALS)
        } else {
            error(BAD_NAME)
        };
    };

    let (raw_value, quote) = match parse_value(value_part) {
        Ok(value) => value,
        Err(reason) => return error(reason),
    };
    Some(Ok(Assignment {
        name,
        raw_value,
        quote,
        line: number,
    }))
}

/// Parses everything after the `=`.
fn parse_value(value_part: &[u8]) -> Result<(&[u8], Quote), &'static str> {
    let value = trim_start(value_part);
    let (quote, inner) = match value.split_first() {
        Some((b'\'', inner)) => (Quote::Single, inner),
        Some((b'"', inner)) => (Quote::Double, inner),
        _ => return Ok((unquoted(value_part), Quote::None)),
    };
    let close = match quote {
        Quote::Single => memchr(b'\'', inner).ok_or(UNCLOSED_SINGLE)?,
        _ => closing_double_quote(inner).ok_or(UNCLOSED_DOUBLE)?,
    };
    let (raw, tail) = split_at(inner, close);
    let after = trim_start(tail.get(1..).unwrap_or_default());
    match after.first() {
        None | Some(b'#') => Ok((raw, quote)),
        Some(_) => Err(AFTER_QUOTE),
    }
}

/// The unquoted value in `value_part` (everything after `=`): comment dropped, trimmed.
fn unquoted(value_part: &[u8]) -> &[u8] {
    let mut from = 0usize;
    let mut end = value_part.len();
    while let Some(found) = value_part.get(from..).and_then(|rest| memchr(b'#', rest)) {
        let Some(hash) = from.checked_add(found) else {
            break;
        };
        let preceded_by_blank = hash
            .checked_sub(1)
            .and_then(|i| value_part.get(i))
            .copied()
            .is_some_and(is_blank);
        if preceded_by_blank {
            end = hash;
            break;
        }
        match hash.checked_add(1) {
            Some(next) => from = next,
            None => break,
        }
    }
    trim_end(trim_start(split_at(value_part, end).0))
}

/// Index of the `"` closing a double-quoted value (`inner` starts after the opening quote).
fn closing_double_quote(inner: &[u8]) -> Option<usize> {
    let mut from = 0usize;
    loop {
        let found = memchr2(b'"', b'\\', inner.get(from..)?)?;
        let at = from.checked_add(found)?;
        if inner.get(at) == Some(&b'"') {
            return Some(at);
        }
        // A backslash: the next byte is escaped, whatever it is.
        from = at.checked_add(2)?;
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::vec;
    use std::vec::Vec;

    fn all(contents: &[u8]) -> Vec<Result<Assignment<'_>, LineError>> {
        assignments(contents).collect()
    }

    fn one(contents: &[u8]) -> Assignment<'_> {
        let items = all(contents);
        assert_eq!(items.len(), 1, "{items:?}");
        match items.first() {
            Some(Ok(assignment)) => *assignment,
            other => panic!("expected one assignment, got {other:?}"),
        }
    }

    fn value(assignment: &Assignment<'_>) -> Vec<u8> {
        let mut out = vec![0u8; assignment.value_len()];
        let written = assignment.write_value(&mut out).expect("buffer fits");
        assert_eq!(written, out.len());
        assert!(assignment.value_eq(&out));
        out
    }

    fn err(line: u32, reason: &'static str) -> Result<Assignment<'static>, LineError> {
        Err(LineError { line, reason })
    }

    #[test]
    fn unquoted_value() {
        let a = one(b"FOO=bar baz");
        assert_eq!(a.name, b"FOO");
        assert_eq!(a.raw_value, b"bar baz");
        assert_eq!(a.quote, Quote::None);
        assert_eq!(a.line, 1);
        assert_eq!(value(&a), b"bar baz");
    }

    #[test]
    fn unquoted_value_is_trimmed_and_keeps_backslashes_and_quotes() {
        let a = one(b"A=  \t a\\nb 'c\" \t ");
        assert_eq!(a.raw_value, b"a\\nb 'c\"");
        assert_eq!(value(&a), b"a\\nb 'c\"");
    }

    #[test]
    fn unquoted_comments() {
        assert_eq!(one(b"A=b #c").raw_value, b"b");
        assert_eq!(one(b"A=b\t# c d").raw_value, b"b");
        assert_eq!(one(b"A=b#c").raw_value, b"b#c");
        assert_eq!(one(b"A=#c").raw_value, b"#c");
        assert_eq!(one(b"A= #c").raw_value, b"");
        assert_eq!(one(b"A=a#b c #d").raw_value, b"a#b c");
        assert_eq!(one(b"A=x##y #z").raw_value, b"x##y");
    }

    #[test]
    fn single_quoted_value_is_literal() {
        let a = one(b"A='x \\n \"y\" #z'");
        assert_eq!(a.quote, Quote::Single);
        assert_eq!(a.raw_value, b"x \\n \"y\" #z");
        assert_eq!(value(&a), b"x \\n \"y\" #z");
        assert_eq!(a.value_len(), a.raw_value.len());
    }

    #[test]
    fn single_quoted_with_trailing_comment_and_blanks() {
        assert_eq!(one(b"A='v'   ").raw_value, b"v");
        assert_eq!(one(b"A='v' # comment").raw_value, b"v");
        assert_eq!(one(b"A='v'#comment").raw_value, b"v");
        assert_eq!(one(b"A=''").raw_value, b"");
        assert_eq!(one(b"A=  'v'").quote, Quote::Single);
    }

    #[test]
    fn double_quoted_escapes() {
        let a = one(br#"A="q\" b\\ n\n t\t d\$ g\` x\x y\'""#);
        assert_eq!(a.quote, Quote::Double);
        assert_eq!(a.raw_value, br#"q\" b\\ n\n t\t d\$ g\` x\x y\'"#);
        assert_eq!(value(&a), b"q\" b\\ n\n t\t d$ g` x\\x y\\'");
        assert_eq!(a.value_len(), 25);
    }

    #[test]
    fn double_quoted_edge_cases() {
        let a = one(br#"A="""#);
        assert_eq!((a.raw_value, value(&a)), (&b""[..], vec![]));
        let a = one(br#"A="ends with backslash\\" # c"#);
        assert_eq!(value(&a), b"ends with backslash\\");
        let a = one(br##"A="#not a comment 'x'""##);
        assert_eq!(value(&a), b"#not a comment 'x'");
        let a = one(br#"A="\\\"""#);
        assert_eq!(value(&a), b"\\\"");
    }

    #[test]
    fn export_prefix() {
        assert_eq!(one(b"export A=1").name, b"A");
        assert_eq!(one(b"  export \t  A=1").name, b"A");
        assert_eq!(one(b"export\tA=1").name, b"A");
        assert_eq!(one(b"export=1").name, b"export");
        assert_eq!(one(b"exportA=1").name, b"exportA");
        assert_eq!(all(b"export A"), vec![err(1, MISSING_EQUALS)]);
        assert_eq!(all(b"export"), vec![err(1, MISSING_EQUALS)]);
    }

    #[test]
    fn spaces_around_equals() {
        let a = one(b"  A \t=\t 1 ");
        assert_eq!((a.name, a.raw_value), (&b"A"[..], &b"1"[..]));
        assert_eq!(one(b"A = \"x y\"").raw_value, b"x y");
    }

    #[test]
    fn equals_inside_values() {
        assert_eq!(
            one(b"URL=https://h/?a=b&c=d").raw_value,
            b"https://h/?a=b&c=d"
        );
        assert_eq!(one(b"A==").raw_value, b"=");
        assert_eq!(one(b"A=\"=x=\"").raw_value, b"=x=");
    }

    #[test]
    fn empty_values() {
        let a = one(b"A=");
        assert_eq!(
            (a.raw_value, a.quote, a.value_len()),
            (&b""[..], Quote::None, 0)
        );
        assert_eq!(a.write_value(&mut []), Some(0));
        assert!(a.value_eq(b""));
        assert!(!a.value_eq(b"x"));
        assert_eq!(one(b"A=   ").raw_value, b"");
    }

    #[test]
    fn blank_lines_comments_and_line_numbers() {
        let file = b"# comment\n\n   \n\t# indented comment\nA=1\n  \t\nB=2\n#C=3\n";
        let items = all(file);
        let names: Vec<(&[u8], u32)> = items
            .iter()
            .map(|item| item.map(|a| (a.name, a.line)).expect("assignment"))
            .collect();
        assert_eq!(names, vec![(&b"A"[..], 5), (&b"B"[..], 7)]);
    }

    #[test]
    fn crlf_lines() {
        let file = b"A=1\r\nB='two'\r\n# c\r\n\r\nC=\"3\"  \r\nD=x #c\r\n";
        let items: Vec<Assignment<'_>> = assignments(file).map(|i| i.expect("ok")).collect();
        let got: Vec<(&[u8], &[u8], u32)> = items
            .iter()
            .map(|a| (a.name, a.raw_value, a.line))
            .collect();
        assert_eq!(
            got,
            vec![
                (&b"A"[..], &b"1"[..], 1),
                (&b"B"[..], &b"two"[..], 2),
                (&b"C"[..], &b"3"[..], 5),
                (&b"D"[..], &b"x"[..], 6),
            ]
        );
        // Only one trailing `\r` is removed; a `\r` inside a value stays.
        assert_eq!(one(b"A=a\rb\r").raw_value, b"a\rb");
    }

    #[test]
    fn last_line_without_newline_and_empty_file() {
        assert!(all(b"").is_empty());
        assert!(all(b"\n\n").is_empty());
        assert_eq!(one(b"\nA=1").line, 2);
    }

    #[test]
    fn byte_order_mark_is_ignored() {
        assert_eq!(one(b"\xEF\xBB\xBFA=1").name, b"A");
    }

    #[test]
    fn duplicates_lookup_returns_first() {
        let file = b"A=first\nB=b\nA=second\n";
        assert_eq!(all(file).len(), 3);
        let a = lookup(file, b"A").expect("found");
        assert_eq!((a.raw_value, a.line), (&b"first"[..], 1));
        assert_eq!(lookup(file, b"B").map(|a| a.line), Some(2));
        assert_eq!(lookup(file, b"C"), None);
        assert_eq!(lookup(file, b"a"), None);
        assert_eq!(lookup(file, b""), None);
    }

    #[test]
    fn lookup_skips_error_lines() {
        let file = b"A\nA='unclosed\nA=ok\n";
        assert_eq!(lookup(file, b"A").map(|a| a.line), Some(3));
    }

    #[test]
    fn non_utf8_values() {
        let a = one(b"A=\xff\xfe\x80 x");
        assert_eq!(value(&a), b"\xff\xfe\x80 x");
        let a = one(b"A='\xc3\x28'");
        assert_eq!(value(&a), b"\xc3\x28");
        let a = one(b"A=\"\xff\\n\xfe\"");
        assert_eq!(value(&a), b"\xff\n\xfe");
    }

    #[test]
    fn one_mebibyte_values() {
        let big = vec![b'x'; 1 << 20];
        for (open, close) in [(&b""[..], &b""[..]), (b"'", b"'"), (b"\"", b"\"")] {
            let mut file = b"BIG=".to_vec();
            file.extend_from_slice(open);
            file.extend_from_slice(&big);
            file.extend_from_slice(close);
            file.extend_from_slice(b"\nNEXT=1\n");
            let a = lookup(&file, b"BIG").expect("found");
            assert_eq!(a.value_len(), 1 << 20);
            assert!(a.value_eq(&big));
            assert_eq!(value(&a), big);
            assert_eq!(lookup(&file, b"NEXT").map(|a| a.line), Some(2));
        }
        // Escapes spread through a large double-quoted value.
        let mut file = b"E=\"".to_vec();
        for _ in 0..(1 << 18) {
            file.extend_from_slice(b"ab\\n");
        }
        file.push(b'"');
        let a = one(&file);
        assert_eq!(a.value_len(), 3 << 18);
        assert_eq!(value(&a), b"ab\n".repeat(1 << 18));
    }

    #[test]
    fn write_value_buffer_sizes() {
        let a = one(br#"A="a\nb""#);
        assert_eq!(a.value_len(), 3);
        let mut exact = [0u8; 3];
        assert_eq!(a.write_value(&mut exact), Some(3));
        assert_eq!(&exact, b"a\nb");
        let mut short = [7u8; 2];
        assert_eq!(a.write_value(&mut short), None);
        assert_eq!(short, [7, 7], "nothing written when the buffer is short");
        let mut long = [0u8; 10];
        assert_eq!(a.write_value(&mut long), Some(3));
        assert_eq!(long.get(..3), Some(&b"a\nb"[..]));
    }

    #[test]
    fn value_eq_compares_unescaped_bytes() {
        let a = one(br#"A="x\ty\$""#);
        assert!(a.value_eq(b"x\ty$"));
        assert!(!a.value_eq(b"x\\ty\\$"));
        assert!(!a.value_eq(b"x\ty"));
        assert!(!a.value_eq(b"x\ty$$"));
        assert!(!a.value_eq(b""));
    }

    #[test]
    fn lone_trailing_backslash_in_hand_built_assignment() {
        let a = Assignment {
            name: b"A",
            raw_value: b"x\\",
            quote: Quote::Double,
            line: 1,
        };
        assert_eq!(a.value_len(), 2);
        assert!(a.value_eq(b"x\\"));
    }

    #[test]
    fn error_lines_have_line_numbers_and_reasons() {
        let file = b"OK=1\nNOEQUALS\n1BAD=x\nBAD-NAME=x\nA='open\nB=\"open\nC=\"x\" y\nD='x'y\n\
                     E=\"trailing\\\"\n=value\nF G=1\nH=\"a\\\\\"\n";
        let items = all(file);
        assert_eq!(
            items.iter().skip(1).copied().collect::<Vec<_>>(),
            vec![
                err(2, MISSING_EQUALS),
                err(3, BAD_NAME),
                err(4, BAD_NAME),
                err(5, UNCLOSED_SINGLE),
                err(6, UNCLOSED_DOUBLE),
                err(7, AFTER_QUOTE),
                err(8, AFTER_QUOTE),
                err(9, UNCLOSED_DOUBLE),
                err(10, BAD_NAME),
                err(11, BAD_NAME),
                Ok(Assignment {
                    name: b"H",
                    raw_value: b"a\\\\",
                    quote: Quote::Double,
                    line: 12
                }),
            ]
        );
    }

    #[test]
    fn quote_must_close_on_the_same_line() {
        let items = all(b"A=\"multi\nline\"\nB=1");
        assert_eq!(
            items,
            vec![
                err(1, UNCLOSED_DOUBLE),
                err(2, MISSING_EQUALS),
                Ok(Assignment {
                    name: b"B",
                    raw_value: b"1",
                    quote: Quote::None,
                    line: 3
                }),
            ]
        );
    }

    #[test]
    fn nul_bytes_are_refused() {
        assert_eq!(all(b"A=x\0y\nB=1").first().copied(), Some(err(1, NUL_BYTE)));
        assert_eq!(all(b"A='x\0'").first().copied(), Some(err(1, NUL_BYTE)));
        // A NUL inside a comment line is harmless.
        assert!(all(b"# \0").is_empty());
    }

    #[test]
    fn errors_never_carry_line_bytes() {
        // LineError has no field that could hold bytes: only a number and a static reason.
        let secret = b"xoxb-SECRET";
        let mut file = b"A='".to_vec();
        file.extend_from_slice(secret);
        let item = all(&file);
        let Some(Err(e)) = item.first() else {
            panic!("expected an error")
        };
        let shown = std::format!("{e:?}");
        assert!(!shown.contains("SECRET"), "{shown}");
    }

    #[test]
    fn iterator_is_fused() {
        let mut it = assignments(b"A=1");
        assert!(it.next().is_some());
        assert!(it.next().is_none());
        assert!(it.next().is_none());
    }
}
