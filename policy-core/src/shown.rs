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

#[cfg(test)]
mod tests {
    use super::*;

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
