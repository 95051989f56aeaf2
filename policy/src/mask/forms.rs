//! The forms a credential's value takes in a program's output without anyone
//! asking for them: the bytes themselves, and the encodings that the copies rule
//! searches argv and values for ([`crate::encoded`]: base64 in either alphabet,
//! at any alignment; [`crate::escaped`]: percent-encoding, backslash escapes,
//! shell and SQL quoting, XML character references).
//!
//! The copies rule decodes what it reads, so one decoder finds every encoder's
//! output. Output masking cannot decode a stream it must pass on unchanged, so it
//! searches for the encoded forms instead: each escape's common writers, and
//! only the forms that differ from the raw bytes (a token of letters, digits,
//! `-`, `_` and `.` has one form besides its base64s).

use crate::encoded::{encode, url_safe, MIN_CREDENTIAL};

/// Every form of `value` to search output for, the raw bytes first, each once.
pub fn of(value: &[u8]) -> Vec<Vec<u8>> {
    let mut forms: Vec<Vec<u8>> = vec![value.to_vec()];
    let mut add = |form: Vec<u8>| {
        if !form.is_empty() && !forms.contains(&form) {
            forms.push(form);
        }
    };
    for b64 in base64(value) {
        let url: Vec<u8> = b64.iter().map(|&b| url_safe(b)).collect();
        add(b64);
        add(url);
    }
    add(percent(value, false, false));
    add(percent(value, true, false));
    add(percent(value, false, true));
    add(backslashed(value, b"\"\\"));
    add(backslashed(value, b"\"\\/"));
    add(backslashed(value, b" !\"#$&'()*,;<>?[\\]^`{|}~"));
    add(replaced(value, b'\'', b"'\\''"));
    add(replaced(value, b'\'', b"'\"'\"'"));
    add(replaced(value, b'\'', b"''"));
    add(replaced(value, b'"', b"\"\""));
    add(xml(value));
    forms
}

/// The base64 of `value`'s whole 3-byte groups from each of its first three
/// bytes: whatever precedes the value in the encoded text, one of them is in
/// it, exactly ([`crate::encoded`]'s module docs). None for a value shorter
/// than [`MIN_CREDENTIAL`], whose groups say too little.
fn base64(value: &[u8]) -> Vec<Vec<u8>> {
    if value.len() < MIN_CREDENTIAL {
        return Vec::new();
    }
    (0..3)
        .filter_map(|s| {
            let groups = value.get(s..)?.len() / 3;
            let mut out = vec![0u8; groups * 4];
            encode(value.get(s..s + groups * 3)?, &mut out);
            Some(out)
        })
        .collect()
}

/// Bytes percent-encoding leaves as they are (RFC 3986's unreserved).
fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// `value` percent-encoded (`lower`: lower-case hex digits; `form`: a space as
/// `+`, as a query string writes it).
fn percent(value: &[u8], lower: bool, form: bool) -> Vec<u8> {
    let digits: &[u8; 16] = if lower {
        b"0123456789abcdef"
    } else {
        b"0123456789ABCDEF"
    };
    let mut out = Vec::with_capacity(value.len() * 3);
    for &b in value {
        if unreserved(b) {
            out.push(b);
        } else if form && b == b' ' {
            out.push(b'+');
        } else {
            out.push(b'%');
            out.push(digits[usize::from(b >> 4)]);
            out.push(digits[usize::from(b & 15)]);
        }
    }
    out
}

/// `value` with a backslash before each byte of `escaped` (a JSON or C string
/// writes `\"` and `\\`, some JSON writers `\/`; a shell's `printf %q` escapes
/// its metacharacters).
fn backslashed(value: &[u8], escaped: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() * 2);
    for &b in value {
        if escaped.contains(&b) {
            out.push(b'\\');
        }
        out.push(b);
    }
    out
}

/// `value` with each `from` written as `to` (shell single quotes: `'\''`,
/// `'"'"'`; SQL and CSV: a doubled quote).
fn replaced(value: &[u8], from: u8, to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() * 2);
    for &b in value {
        if b == from {
            out.extend_from_slice(to);
        } else {
            out.push(b);
        }
    }
    out
}

/// `value` as XML text writes it: `&amp;`, `&lt;`, `&gt;`, `&quot;`, `&#39;`.
fn xml(value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() * 2);
    for &b in value {
        match b {
            b'&' => out.extend_from_slice(b"&amp;"),
            b'<' => out.extend_from_slice(b"&lt;"),
            b'>' => out.extend_from_slice(b"&gt;"),
            b'"' => out.extend_from_slice(b"&quot;"),
            b'\'' => out.extend_from_slice(b"&#39;"),
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::of;

    #[test]
    fn a_token_of_plain_letters_has_its_bytes_and_base64s() {
        let forms = of(b"ghp_abcdefghijklmnop");
        assert_eq!(forms[0], b"ghp_abcdefghijklmnop");
        assert!(forms.contains(&b"Z2hwX2FiY2RlZmdoaWprbG1u".to_vec()));
        // Base64 at each of three alignments; percent and quotes change nothing.
        assert_eq!(forms.len(), 4);
    }

    #[test]
    fn a_password_with_specials_has_its_escaped_forms() {
        let forms = of(b"p@ss w0rd'\"/");
        for form in [
            &b"p%40ss%20w0rd%27%22%2F"[..],
            b"p%40ss+w0rd%27%22%2F",
            b"p@ss w0rd'\\\"/",
            b"p@ss w0rd'\\\"\\/",
            b"p@ss w0rd'\\''\"/",
            b"p@ss w0rd&#39;&quot;/",
        ] {
            assert!(
                forms.contains(&form.to_vec()),
                "{}",
                String::from_utf8_lossy(form)
            );
        }
    }
}
