//! Policy errors: what went wrong, and where, as `file:line:column: message`.
//!
//! Messages never quote the offending text: a policy or an imported file can hold a
//! value that must not be printed, so an error names the key, the line and what was
//! expected instead.

use std::fmt;
use std::path::{Path, PathBuf};

/// An error loading or compiling a policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl PolicyError {
    pub fn plain(path: &Path, message: impl Into<String>) -> PolicyError {
        PolicyError {
            path: path.to_path_buf(),
            line: None,
            column: None,
            message: one_line(&message.into()),
        }
    }

    pub fn at(path: &Path, text: &str, offset: usize, message: impl Into<String>) -> PolicyError {
        let (line, column) = line_col(text, offset);
        PolicyError {
            path: path.to_path_buf(),
            line: Some(line),
            column: Some(column),
            message: one_line(&message.into()),
        }
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", shown(&self.path))?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
            if let Some(c) = self.column {
                write!(f, ":{c}")?;
            }
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for PolicyError {}

/// A message as one line with no token in it. A parser's message can quote what
/// it read (TOML's "unknown field `NAME`", where a key can be a token pasted in
/// the wrong place) and span lines ("invalid array" and "expected `]`"): its lines
/// are joined with "; ", and every token shape in it is described by its length
/// and shape only, as [`crate::shown`] describes a word.
pub fn one_line(message: &str) -> String {
    let joined = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    let bytes = joined.as_bytes();
    let mut out = String::with_capacity(joined.len());
    let mut at = 0;
    for m in crate::shape::find_shapes(bytes, crate::shape::ShapeSet::ALL) {
        let (Some(before), Some(token)) = (joined.get(at..m.start), bytes.get(m.start..m.end))
        else {
            continue;
        };
        out.push_str(before);
        out.push_str(&crate::shown::described(token).to_string());
        at = m.end;
    }
    out.push_str(joined.get(at..).unwrap_or(""));
    out
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let mut end = offset;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// An I/O error's reason, without the path (callers name the path themselves).
pub fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// A path as a message may show it ([`crate::shown`]): a token in a directory name
/// or a file name is never printed.
pub fn shown(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    crate::shown::word(path.as_os_str().as_bytes()).to_string()
}
