//! How a value is shown: never its bytes, only its length and the credential shape
//! it has, if any: `<40 bytes, github token>`, `<12 bytes>`.
//!
//! Every tool goes through this module to mention a value or an argument that
//! may hold one.

use envpolicy::shape::{find_shape, ShapeSet};
use envpolicy::shown;

/// `<N bytes>` or `<N bytes, SHAPE>`.
pub fn describe(value: &[u8]) -> String {
    shown::described(value).to_string()
}

/// The description of the first token shape in `value` (every shape is looked
/// for, whatever a policy enables: this is for people reading a report).
pub fn shape(value: &[u8]) -> Option<&'static str> {
    find_shape(value, ShapeSet::ALL).map(|m| m.shape.describe())
}

/// An argument or file name for a message: the text itself when it holds no token
/// shape and looks like a name, else its description (`envpolicy::shown`, the
/// rule the shim's messages follow too).
pub fn word(text: &[u8]) -> String {
    shown::word(text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_the_value() {
        let tok = format!("ghp_{}", "a1B2".repeat(9));
        assert_eq!(describe(tok.as_bytes()), "<40 bytes, github token>");
        assert_eq!(describe(b"hello"), "<5 bytes>");
        assert_eq!(describe(b"x"), "<1 byte>");
        assert_eq!(word(b"tmux"), "tmux");
        assert_eq!(
            word(format!("--t={tok}").as_bytes()),
            "<44 bytes, github token>"
        );
        assert_eq!(word(b"a\nb"), "<3 bytes>");
    }
}
