//! One JSON record of a change, for every front end: the shim's audit lines
//! and log, envwrap's `--json`, `--log` and the policy's `log`, the
//! supervisor's log and the Rust API's `json_lines` (docs/policy.md, section
//! 7, lists the fields).
//!
//! Before, the shim wrote its records by hand (`tool`, `mode`, `pid`,
//! `policy`, an index of 0 for an added entry) and the std side through serde
//! (`why`, `loud`, `layer`, a `null` index), so one `log` file held two
//! formats, depending on which front end decided the exec. Here one function
//! writes every record, field by field, into a callback: the shim fills a
//! stack buffer between `fork` and `exec`, the std side a `String`.
//!
//! Every word a record shows that may hold a secret (the program, the
//! variable's name, the policy's file) goes through [`crate::shown::word`],
//! as every message shows it; `why` is text the std side built from names
//! and patterns, and the caller redacts the whole line against the values in
//! view. Nothing here allocates or formats.

use crate::compiled::Mode;
use crate::layer::Layer;
use crate::shown;

/// One change, as a record shows it.
#[derive(Clone, Copy, Debug)]
pub struct Record<'a> {
    /// The front end that wrote it: `envshim`, `envwrap` or `envpolicy`.
    pub tool: &'a str,
    /// The mode of the pass that made the change: in audit it was not made.
    pub mode: Mode,
    /// The process that wrote it.
    pub pid: u32,
    /// The program being executed.
    pub program: &'a [u8],
    /// `env`, `argv` or `program`.
    pub target: &'a str,
    /// The position in the input environment or argv; `None` for an entry the
    /// policy adds or refuses to add, and for the program's path.
    pub index: Option<usize>,
    /// The variable concerned, when there is one.
    pub name: Option<&'a [u8]>,
    pub action: &'a str,
    pub rule: &'a str,
    /// The layer whose pass made it; written only for the managed layer.
    pub layer: Layer,
    /// Why, as every front end says it ([`crate::reason`]): the pattern and
    /// where it is written, the grant and its line.
    pub why: Option<&'a [u8]>,
    /// Worth a warning in enforce mode.
    pub loud: bool,
    /// The policy, as every message names it (its file, or "the built-in
    /// policy").
    pub policy: &'a [u8],
}

/// `r` as one line of JSON (no newline), into `out`.
pub fn write(r: &Record<'_>, out: &mut dyn FnMut(&[u8])) {
    let mut digits = [0u8; 20];
    out(b"{\"tool\":");
    string(out, r.tool.as_bytes());
    out(b",\"mode\":");
    string(
        out,
        match r.mode {
            Mode::Enforce => b"enforce",
            Mode::Audit => b"audit",
        },
    );
    out(b",\"pid\":");
    out(shown::decimal(u64::from(r.pid), &mut digits));
    out(b",\"program\":");
    word(out, r.program);
    out(b",\"target\":");
    string(out, r.target.as_bytes());
    out(b",\"index\":");
    match r.index {
        Some(i) => out(shown::decimal(i as u64, &mut digits)),
        None => out(b"null"),
    }
    out(b",\"name\":");
    match r.name {
        Some(n) => word(out, n),
        None => out(b"null"),
    }
    out(b",\"action\":");
    string(out, r.action.as_bytes());
    out(b",\"rule\":");
    string(out, r.rule.as_bytes());
    if r.layer == Layer::Managed {
        out(b",\"layer\":");
        string(out, r.layer.id().as_bytes());
    }
    if let Some(why) = r.why {
        out(b",\"why\":");
        string(out, why);
    }
    out(if r.loud {
        b",\"loud\":true"
    } else {
        b",\"loud\":false"
    });
    out(b",\"policy\":");
    word(out, r.policy);
    out(b"}");
}

/// A word that may hold a secret, as a JSON string ([`shown::word`]).
fn word(out: &mut dyn FnMut(&[u8]), text: &[u8]) {
    let mut digits = [0u8; 20];
    out(b"\"");
    for part in shown::word(text).parts(&mut digits) {
        escaped(out, part);
    }
    out(b"\"");
}

/// `text` as a JSON string.
fn string(out: &mut dyn FnMut(&[u8]), text: &[u8]) {
    out(b"\"");
    escaped(out, text);
    out(b"\"");
}

/// `text` escaped for a JSON string: `"` and `\` escaped, control bytes as
/// `\u00XX`; other bytes as they are (UTF-8 passes; a byte that is not valid
/// UTF-8 is the caller's to show lossily, as every message does).
fn escaped(out: &mut dyn FnMut(&[u8]), text: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut start = 0usize;
    for (i, &b) in text.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\t' => b"\\t",
            0..=0x1f | 0x7f => b"",
            _ => continue,
        };
        out(text.get(start..i).unwrap_or(&[]));
        if esc.is_empty() {
            let hi = HEX.get(usize::from(b >> 4)).copied().unwrap_or(b'0');
            let lo = HEX.get(usize::from(b & 15)).copied().unwrap_or(b'0');
            out(b"\\u00");
            out(&[hi, lo]);
        } else {
            out(esc);
        }
        start = i + 1;
    }
    out(text.get(start..).unwrap_or(&[]));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(r: &Record<'_>) -> String {
        let mut v = Vec::new();
        write(r, &mut |b| v.extend_from_slice(b));
        String::from_utf8(v).unwrap()
    }

    fn record() -> Record<'static> {
        Record {
            tool: "envshim",
            mode: Mode::Enforce,
            pid: 42,
            program: b"/usr/bin/gh",
            target: "env",
            index: Some(3),
            name: Some(b"GH_TOKEN"),
            action: "refuse",
            rule: "credential.name",
            layer: Layer::User,
            why: None,
            loud: true,
            policy: b"the built-in policy",
        }
    }

    #[test]
    fn a_record_is_one_json_object_with_every_field() {
        let l = line(&record());
        assert_eq!(
            l,
            "{\"tool\":\"envshim\",\"mode\":\"enforce\",\"pid\":42,\"program\":\"/usr/bin/gh\",\
             \"target\":\"env\",\"index\":3,\"name\":\"GH_TOKEN\",\"action\":\"refuse\",\
             \"rule\":\"credential.name\",\"loud\":true,\"policy\":\"the built-in policy\"}"
        );
        let managed = Record {
            layer: Layer::Managed,
            index: None,
            name: None,
            why: Some(b"strip pattern `A\"B` at p.toml:3:10\n"),
            ..record()
        };
        let l = line(&managed);
        assert!(l.contains("\"index\":null,\"name\":null"), "{l}");
        assert!(l.contains("\"layer\":\"managed\""), "{l}");
        assert!(l.contains("\"why\":\"strip pattern `A\\\"B` at p.toml:3:10\\n\""), "{l}");
    }

    #[test]
    fn a_word_that_holds_a_token_is_shown_by_its_length() {
        let token = b"ghp_0123456789abcdefghijABCDEFGHIJ012345";
        let r = Record {
            program: token,
            name: Some(token),
            ..record()
        };
        let l = line(&r);
        assert!(!l.contains("ghp_0123456789"), "{l}");
        assert!(l.contains("\"program\":\"<40 bytes, github token>\""), "{l}");
    }

    #[test]
    fn control_bytes_are_escaped() {
        let r = Record {
            why: Some(b"a\x01b\"c\\"),
            ..record()
        };
        let l = line(&r);
        assert!(l.contains("\"why\":\"a\\u0001b\\\"c\\\\\""), "{l}");
    }
}
