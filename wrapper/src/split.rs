//! `-S STRING`: split one argument into several, as GNU env's `--split-string`
//! does, so a shebang line can pass options:
//!
//! ```text
//! #!/usr/local/bin/envwrap -S --policy /etc/envshim/loop.toml -- /bin/sh
//! ```
//!
//! The kernel hands everything after the interpreter as ONE argument; `-S` splits
//! it. The rules are env's:
//!
//! - words are separated by spaces, tabs, newlines, `\v`, `\f` and `\r`;
//! - `'...'` is literal, except that `\\` and `\'` are unescaped;
//! - `"..."` unescapes and expands `${NAME}`;
//! - outside single quotes: `\"` `\'` `\\` `\#` `\$` are the character itself,
//!   `\f` `\n` `\r` `\t` `\v` the control character, `\_` a word separator (a
//!   space inside double quotes), `\c` ends the string (not inside double quotes);
//!   any other `\x` is an error;
//! - `#` at the start of a word starts a comment to the end of the string;
//! - `${NAME}` is replaced by NAME's value in envwrap's own environment (empty when
//!   unset); `$` in any other form is an error;
//! - a quote that is not closed is an error.
//!
//! Errors are envwrap's own (exit 125). They give the byte position in the string,
//! never its text: the string may hold a value.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

/// Why a string could not be split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitError(pub String);

/// Split `s`; `getenv` reads a variable for `${NAME}`.
pub fn split(
    s: &[u8],
    getenv: impl Fn(&[u8]) -> Option<Vec<u8>>,
) -> Result<Vec<OsString>, SplitError> {
    let mut words: Vec<Vec<u8>> = Vec::new();
    let mut cur: Vec<u8> = Vec::new();
    // In a word (possibly empty, after `''`).
    let mut in_word = false;
    let mut sq = false;
    let mut dq = false;
    let mut i = 0;
    let err =
        |what: &str, at: usize| Err(SplitError(format!("-S string: {what} at byte {}", at + 1)));
    while i < s.len() {
        let c = s[i];
        match c {
            b'\'' if !dq => {
                sq = !sq;
                in_word = true;
                i += 1;
                continue;
            }
            b'"' if !sq => {
                dq = !dq;
                in_word = true;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' if !sq && !dq => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
                i += 1;
                continue;
            }
            b'#' if !sq && !dq && !in_word => break,
            b'\\' => {
                let next = s.get(i + 1).copied();
                if sq && !matches!(next, Some(b'\\') | Some(b'\'')) {
                    cur.push(c);
                    in_word = true;
                    i += 1;
                    continue;
                }
                let Some(n) = next else {
                    return err("backslash at the end of the string", i);
                };
                let out = match n {
                    b'"' | b'#' | b'$' | b'\'' | b'\\' => n,
                    b'_' if !dq => {
                        if in_word {
                            words.push(std::mem::take(&mut cur));
                            in_word = false;
                        }
                        i += 2;
                        continue;
                    }
                    b'_' => b' ',
                    b'c' if dq => return err("'\\c' inside double quotes", i),
                    b'c' => break,
                    b'f' => 0x0c,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'v' => 0x0b,
                    _ => return err("invalid backslash sequence", i),
                };
                cur.push(out);
                in_word = true;
                i += 2;
                continue;
            }
            b'$' if !sq => {
                let Some((name, end)) = varname(s, i) else {
                    return err("only ${NAME} expansion is supported", i);
                };
                if let Some(v) = getenv(name) {
                    cur.extend_from_slice(&v);
                }
                in_word = true;
                i = end;
                continue;
            }
            _ => {}
        }
        cur.push(c);
        in_word = true;
        i += 1;
    }
    if sq || dq {
        return Err(SplitError(format!(
            "-S string: no terminating {} quote",
            if sq { "single" } else { "double" }
        )));
    }
    if in_word {
        words.push(cur);
    }
    Ok(words.into_iter().map(OsString::from_vec).collect())
}

/// `${NAME}` at `at`: the name and the index after `}`.
fn varname(s: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let rest = s.get(at..)?.strip_prefix(b"${")?;
    let close = rest.iter().position(|&b| b == b'}')?;
    let name = &rest[..close];
    let first = *name.first()?;
    let valid = (first.is_ascii_alphabetic() || first == b'_')
        && name.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_');
    valid.then_some((name, at + 2 + close + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Result<Vec<String>, SplitError> {
        split(s.as_bytes(), |n| {
            (n == b"HOME").then(|| b"/home/u".to_vec())
        })
        .map(|w| w.into_iter().map(|o| o.into_string().unwrap()).collect())
    }

    #[test]
    fn shebang_line() {
        assert_eq!(
            words(" --policy /etc/envshim/loop.toml -- /bin/sh").unwrap(),
            ["--policy", "/etc/envshim/loop.toml", "--", "/bin/sh"]
        );
    }

    #[test]
    fn quotes_escapes_and_expansion() {
        assert_eq!(words(r#"a 'b c' "d e""#).unwrap(), ["a", "b c", "d e"]);
        assert_eq!(words(r#"'' x"#).unwrap(), ["", "x"]);
        assert_eq!(
            words(r#"a\_b "c\_d" e\tf"#).unwrap(),
            ["a", "b", "c d", "e\tf"]
        );
        assert_eq!(words(r#"'it\'s' 'a\b'"#).unwrap(), ["it's", "a\\b"]);
        assert_eq!(
            words(r#"x=${HOME} "${HOME}/y" '${HOME}' ${NOPE}z"#).unwrap(),
            ["x=/home/u", "/home/u/y", "${HOME}", "z"]
        );
        assert_eq!(words("a #comment b").unwrap(), ["a"]);
        assert_eq!(words("a#b").unwrap(), ["a#b"]);
        assert_eq!(words(r"a \c b").unwrap(), ["a"]);
        assert_eq!(words("  ").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn errors() {
        assert!(words("'abc")
            .unwrap_err()
            .0
            .contains("no terminating single quote"));
        assert!(words("\"abc")
            .unwrap_err()
            .0
            .contains("no terminating double quote"));
        assert!(words(r"a\").unwrap_err().0.contains("backslash at the end"));
        assert!(words(r"a\q").unwrap_err().0.contains("invalid backslash"));
        assert!(words("$HOME").unwrap_err().0.contains("${NAME}"));
        assert!(words(r#""\c""#).unwrap_err().0.contains("double quotes"));
    }
}
