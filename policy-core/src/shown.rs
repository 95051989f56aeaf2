//! How a message names something that may hold a secret: a program, a path, an
//! option, a variable name. Each front end builds its own messages (the shim
//! without allocating, envwrap with `format!`), and both ask this module what to
//! write, so that a token that arrives as a program name (`posix_spawnp` of a
//! token), as a directory in a path, or as a variable's name is never printed, by
//! either.
//!
//! A word is shown as it is when it is at most [`PLAIN_MAX`] bytes of printable
//! text with no token shape (every shape, whatever the policy enables: this is for
//! people reading a message). Otherwise only its length and its shape are:
//! `<53 bytes, github token>`, `<3 bytes>`.
//!
//! [`redact`] is the last step of every message: whatever a message was built
//! from, every token shape and every credential value its writer knows
//! ([`Secrets`]) is replaced by its description on the way out, so a value that
//! arrives where no word rule expected it (a by-name credential in a program's
//! path) is never printed either.

use crate::shape::{find_shape, Shape, ShapeSet};

/// Longer words are described, not shown.
pub const PLAIN_MAX: usize = 256;

/// What a message may say about a word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown<'a> {
    /// The word itself.
    Plain(&'a [u8]),
    /// Its length, and the first token shape in it.
    Described { len: usize, shape: Option<Shape> },
}

/// What a message may say about `text` (see the module docs).
pub fn word(text: &[u8]) -> Shown<'_> {
    let shape = find_shape(text, ShapeSet::ALL).map(|m| m.shape);
    let printable = text.iter().all(|&b| (0x20..0x7f).contains(&b) || b >= 0x80);
    if shape.is_none() && printable && text.len() <= PLAIN_MAX {
        Shown::Plain(text)
    } else {
        described(text)
    }
}

/// A piece of a message: the front end's own text, or a word (a name, a path,
/// a program) that may hold a secret and is written as [`word`] says. The shim
/// builds its messages of pieces, with no formatting machinery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    Text(&'a [u8]),
    Word(&'a [u8]),
}

/// Only the length and shape of `value`, whatever it holds.
pub fn described(value: &[u8]) -> Shown<'static> {
    Shown::Described {
        len: value.len(),
        shape: find_shape(value, ShapeSet::ALL).map(|m| m.shape),
    }
}

impl Shown<'_> {
    /// The pieces to write, in order, for a writer without `core::fmt`: `digits`
    /// holds the length's decimal digits.
    pub fn parts<'s>(&'s self, digits: &'s mut [u8; 20]) -> [&'s [u8]; 6] {
        match *self {
            Shown::Plain(text) => [text, b"", b"", b"", b"", b""],
            Shown::Described { len, shape } => {
                let unit: &[u8] = if len == 1 { b" byte" } else { b" bytes" };
                let (comma, what): (&[u8], &[u8]) = match shape {
                    Some(s) => (b", ", s.describe().as_bytes()),
                    None => (b"", b""),
                };
                [b"<", decimal(len as u64, digits), unit, comma, what, b">"]
            }
        }
    }

    /// Is the word shown as it is?
    pub fn is_plain(&self) -> bool {
        matches!(self, Shown::Plain(_))
    }
}

impl core::fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut digits = [0u8; 20];
        let parts = self.parts(&mut digits);
        for part in parts {
            // A plain word may be bytes that are not UTF-8: shown lossily.
            for chunk in part.utf8_chunks() {
                f.write_str(chunk.valid())?;
                if !chunk.invalid().is_empty() {
                    f.write_str("\u{fffd}")?;
                }
            }
        }
        Ok(())
    }
}

/// `n` in decimal, in `digits` (the one number formatter of the no_std front
/// ends: the shim's messages use it too).
pub fn decimal(mut n: u64, digits: &mut [u8; 20]) -> &[u8] {
    let mut at = digits.len();
    loop {
        at -= 1;
        if let Some(d) = digits.get_mut(at) {
            *d = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 || at == 0 {
            break;
        }
    }
    digits.get(at..).unwrap_or(&[])
}

/// The credential values a message must not show, as its writer knows them: the
/// entries of an environment that are credentials under a policy (by name, by an
/// imported config key, by shape), and whatever else the writer holds.
pub trait Secrets {
    /// Calls `f` with each value (values shorter than the policy's
    /// `min_value_len` may be left out: they are not searched for elsewhere
    /// either).
    fn each(&self, f: &mut dyn FnMut(&[u8]));
}

/// No value known: only token shapes are redacted.
pub struct NoSecrets;

impl Secrets for NoSecrets {
    fn each(&self, _: &mut dyn FnMut(&[u8])) {}
}

/// The credentials of an environment of `NAME=VALUE` entries, judged by
/// `policy` ([`crate::decide::is_credential`]) when there is one; with none, every
/// entry whose value has a token shape.
pub struct EnvSecrets<'a, 'p> {
    pub policy: Option<&'a crate::Policy<'p>>,
    pub env: &'a [&'a [u8]],
}

impl Secrets for EnvSecrets<'_, '_> {
    fn each(&self, f: &mut dyn FnMut(&[u8])) {
        for entry in self.env {
            if let Some((name, value)) = crate::bytes::split_entry(entry) {
                if is_secret(self.policy, name, value) {
                    f(value);
                }
            }
        }
    }
}

/// The credentials a decision found in the environment it judged: every entry
/// whose verdict is a credential (by name, import, shape, or a copy), with a
/// value of at least `min` bytes.
pub struct Decided<'a> {
    pub env: &'a [&'a [u8]],
    pub verdicts: &'a [crate::decide::Verdict],
    pub min: usize,
}

impl Secrets for Decided<'_> {
    fn each(&self, f: &mut dyn FnMut(&[u8])) {
        for (entry, v) in self.env.iter().zip(self.verdicts) {
            if !v.credential {
                continue;
            }
            if let Some((_, value)) = crate::bytes::split_entry(entry) {
                if value.len() >= self.min {
                    f(value);
                }
            }
        }
    }
}

/// Both sets of secrets.
pub struct Both<'a>(pub &'a dyn Secrets, pub &'a dyn Secrets);

impl Secrets for Both<'_> {
    fn each(&self, f: &mut dyn FnMut(&[u8])) {
        self.0.each(f);
        self.1.each(f);
    }
}

/// Is `NAME=VALUE` a credential a message must not show? Under a policy: a
/// credential by name, import or shape, at least `min_value_len` bytes long;
/// without one: a value with any token shape.
pub fn is_secret(policy: Option<&crate::Policy<'_>>, name: &[u8], value: &[u8]) -> bool {
    match policy {
        Some(p) => {
            value.len() >= p.settings().min_value_len as usize
                && crate::decide::is_credential(p, name, value)
        }
        None => find_shape(value, ShapeSet::ALL).is_some(),
    }
}

/// The one writer of every byte the front ends show a person or write to a log:
/// `text` goes to `out` with every token shape (every shape, whatever the policy
/// enables) and every value of `secrets` that it holds replaced by that
/// secret's description (`<40 bytes, github token>`, `<16 bytes>`), wherever it
/// stands: alone, in a path, glued to other text, in base64 or escaped
/// ([`crate::encoded`], [`crate::escaped`]). Allocation-free: the shim
/// writes its messages through it between fork and exec.
pub fn redact(text: &[u8], secrets: &dyn Secrets, out: &mut dyn FnMut(&[u8])) {
    let mut pos = 0usize;
    while let Some(rest) = text.get(pos..).filter(|r| !r.is_empty()) {
        let mut first: Option<(usize, usize)> =
            find_shape(rest, ShapeSet::ALL).map(|m| (m.start, m.end));
        secrets.each(&mut |value| {
            if value.is_empty() {
                return;
            }
            let raw = crate::bytes::find(rest, value).map(|at| (at, at + value.len()));
            let escaped = crate::escaped::EscapedCopies::of(value)
                .find_in(rest)
                .map(|r| (r.start, r.end));
            let copies = raw.into_iter().chain(base64_copy(rest, value)).chain(escaped);
            for (at, end) in copies {
                let better = match first {
                    None => true,
                    Some((s, e)) => at < s || (at == s && end > e),
                };
                if better {
                    first = Some((at, end));
                }
            }
        });
        let Some((start, end)) = first else {
            out(rest);
            return;
        };
        out(rest.get(..start).unwrap_or(&[]));
        let mut digits = [0u8; 20];
        let hidden = described(rest.get(start..end).unwrap_or(&[]));
        for part in hidden.parts(&mut digits) {
            out(part);
        }
        pos += end.max(1);
    }
}

/// Where a base64 copy of `value` stands in `text` (the copy and the base64
/// text around it, as the copies rule finds it: [`crate::encoded`]), if it
/// does: a message hides an encoded copy as it hides the value.
fn base64_copy(text: &[u8], value: &[u8]) -> Option<(usize, usize)> {
    if value.len() < crate::encoded::MIN_CREDENTIAL || text.len() < crate::encoded::NEEDLE_MIN {
        return None;
    }
    let found = crate::encoded::Base64Needles::of(value).find_in(text)?;
    Some(crate::encoded::copy_around(text, found))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct List<'a>(&'a [&'a [u8]]);
    impl Secrets for List<'_> {
        fn each(&self, f: &mut dyn FnMut(&[u8])) {
            for v in self.0 {
                f(v);
            }
        }
    }

    fn redacted(text: &[u8], values: &[&[u8]]) -> String {
        let mut out = Vec::new();
        redact(text, &List(values), &mut |b| out.extend_from_slice(b));
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn redact_hides_every_known_value_and_shape_wherever_it_stands() {
        let by_name: &[u8] = b"opaque-jira-value-123";
        let tok = format!("ghp_{}", "a1B2".repeat(9));
        assert_eq!(
            redacted(b"refused to run /opt/opaque-jira-value-123/prog: x", &[by_name]),
            "refused to run /opt/<21 bytes>/prog: x"
        );
        assert_eq!(
            redacted(format!("a x{tok}Z b").as_bytes(), &[]),
            "a x<41 bytes, github token> b"
        );
        assert_eq!(
            redacted(b"opaque-jira-value-123opaque-jira-value-123", &[by_name]),
            "<21 bytes><21 bytes>"
        );
        assert_eq!(redacted(b"nothing here", &[by_name]), "nothing here");
        // A base64 copy, in a path as in a header, is hidden as the value is
        // (with the base64 text around it: `/` is one of its symbols).
        // The base64 of by_name (21 bytes: its first needle is all of it),
        // made here so that no encoded value stands in the source.
        let needles = crate::encoded::Base64Needles::of(by_name);
        let b64 = core::str::from_utf8(needles.needles().next().unwrap()).unwrap();
        assert_eq!(b64.len(), 28);
        assert_eq!(
            redacted(format!("refused to run /opt/{b64}/prog").as_bytes(), &[by_name]),
            "refused to run <38 bytes>"
        );
        assert_eq!(
            redacted(format!("Authorization: Basic {b64}").as_bytes(), &[by_name]),
            "Authorization: Basic <28 bytes>"
        );
        assert_eq!(redacted(b"", &[by_name]), "");
    }

    #[test]
    fn never_a_token() {
        let tok = format!("ghp_{}", "a1B2".repeat(9));
        assert_eq!(word(tok.as_bytes()).to_string(), "<40 bytes, github token>");
        let path = format!("/tmp/d/{tok}/show.sh");
        assert_eq!(
            word(path.as_bytes()).to_string(),
            "<55 bytes, github token>"
        );
        assert_eq!(word(b"tmux").to_string(), "tmux");
        assert_eq!(word(b"a\nb").to_string(), "<3 bytes>");
        assert_eq!(word(b"x\x01").to_string(), "<2 bytes>");
        assert_eq!(described(b"x").to_string(), "<1 byte>");
        assert_eq!(word(&[b'a'; 300]).to_string(), "<300 bytes>");
    }
}
