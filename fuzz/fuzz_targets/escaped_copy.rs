//! escaped_copy: a credential's escaped copies (docs/adr/0023-escaped-copies.md),
//! with the fuzzer's bytes as the password and as the text around the copy,
//! without a list of forms on the checking side.
//!
//! Input layout: byte 0 picks the family that writes the copy (percent, the
//! query form, JSON once or twice, `printf %q`, `${v@Q}`, an SQL literal,
//! HTML); the rest, split at the first NUL, is the password (NULs and `=`
//! dropped, a `@` added so that every family changes it) and the text the copy
//! is placed in the middle of. Checks, panicking on a violation:
//! - the search never panics, and a range it returns lies in the value;
//! - what the decision's search (one decoding for all credentials) finds,
//!   the streams' search (which every message's redaction uses) finds too;
//! - the carrier variable never reaches the child.
#![no_main]

use envpolicy::escaped::{each_decoding, EscapedCopies};
use envpolicy::outcome;
use libfuzzer_sys::fuzz_target;
use std::path::Path;
use std::sync::OnceLock;

fn policy() -> &'static envpolicy::Compiled {
    static P: OnceLock<envpolicy::Compiled> = OnceLock::new();
    P.get_or_init(|| {
        envpolicy::load::compile_text("version = 1\n", Path::new("fuzz.toml")).expect("compiles")
    })
}

fn written(value: &[u8], family: u8) -> Vec<u8> {
    let pct = |plus: bool| -> Vec<u8> {
        value
            .iter()
            .flat_map(|&b| {
                if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                    vec![b]
                } else if plus && b == b' ' {
                    vec![b'+']
                } else {
                    format!("%{b:02X}").into_bytes()
                }
            })
            .collect()
    };
    let json = |v: &[u8]| -> Vec<u8> {
        let mut out = vec![b'"'];
        for &b in v {
            match b {
                b'"' | b'\\' => out.extend([b'\\', b]),
                b'\n' => out.extend(b"\\n"),
                c if c < 0x20 => out.extend(format!("\\u{c:04x}").bytes()),
                c => out.push(c),
            }
        }
        out.push(b'"');
        out
    };
    let quoted = |q: u8, close: &[u8]| -> Vec<u8> {
        let mut out = vec![q];
        for &b in value {
            if b == q {
                out.extend(close);
            } else {
                out.push(b);
            }
        }
        out.push(q);
        out
    };
    match family % 8 {
        0 => pct(false),
        1 => pct(true),
        2 => json(value),
        3 => json(&json(value)),
        4 => value
            .iter()
            .flat_map(|&b| {
                if b.is_ascii_alphanumeric() || b"-_./@%+=:,".contains(&b) {
                    vec![b]
                } else {
                    vec![b'\\', b]
                }
            })
            .collect(),
        5 => quoted(b'\'', b"'\\''"),
        6 => quoted(b'\'', b"''"),
        _ => value
            .iter()
            .flat_map(|&b| match b {
                b'&' => b"&amp;".to_vec(),
                b'<' => b"&lt;".to_vec(),
                b'>' => b"&gt;".to_vec(),
                b'"' => b"&quot;".to_vec(),
                b'\'' => b"&#39;".to_vec(),
                _ => vec![b],
            })
            .collect(),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&family, rest)) = data.split_first() else {
        return;
    };
    let (password, around) = match rest.iter().position(|&b| b == 0) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &b""[..]),
    };
    let mut password: Vec<u8> = password
        .iter()
        .copied()
        .filter(|&b| b != b'=' && b != b'\n')
        .collect();
    password.push(b'@');
    if password.len() < 8 || password.len() > 200 {
        return;
    }
    let copies = EscapedCopies::of(&password);
    // Any bytes at all: no panic, ranges in bounds, both searches agree.
    if let Some(r) = copies.find_in(around) {
        assert!(r.start < r.end && r.end <= around.len(), "a range outside the value");
    }
    let mut buf = [0u8; 1024];
    // What the decision finds, a message can hide: the streams (which start
    // anywhere, and so may find more) find it too.
    if let Some(true) = each_decoding(around, copies.wanted(), &mut buf, |e, d| {
        copies.found_decoded(d, e, true)
    }) {
        assert!(copies.found_in(around), "the decision found a copy the streams miss");
    }
    let (before, after) = around.split_at(around.len() / 2);
    let carrier = [before, &written(&password, family), after].concat();
    if carrier.contains(&0) {
        return;
    }
    let c = policy();
    let p = c.policy();
    let env = vec![
        [b"DB_PASSWORD=".as_slice(), &password].concat(),
        [b"CARRIER=".as_slice(), &carrier].concat(),
    ];
    let argv = vec![b"prog".to_vec()];
    let d = outcome::decide(&p, b"prog", &argv, &env, &[], &[]);
    assert!(
        !d.env.iter().any(|e| e.starts_with(b"CARRIER=")),
        "an escaped copy reached the child"
    );
});
