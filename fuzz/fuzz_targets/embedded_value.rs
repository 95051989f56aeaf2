//! embedded_value: a credential value placed anywhere, between any bytes
//! (docs/adr/0017-values-hold-no-credential.md), without a list of forms.
//!
//! Input layout: byte 0 picks where the copy goes (bits 1-2: another variable's
//! value, an argument, the program's path), which credential (bit 0: a by-name
//! `JIRA_API_TOKEN` with the fuzzer's bytes as its value, or a GitHub token with
//! a fixed body) and, for the token, whether its variable is set (bit 3); the
//! rest, split at the first NUL, is the text before and after the copy (split at
//! its middle). Checks, panicking on a violation:
//! - no entry of the child's environment holds the value;
//! - unless the exec is refused, no argument of the child's argv holds it;
//! - no change's `why`, JSON line, or the program as `outcome::redacted` shows
//!   it, holds it.
#![no_main]

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

fn holds(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let (around, value) = match rest.iter().position(|&b| b == 0) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &b""[..]),
    };
    let (name, secret): (&str, Vec<u8>) = if pick & 1 == 0 {
        let v: Vec<u8> = value.iter().copied().filter(|&b| b != 0 && b != b'=').collect();
        if v.len() < 8 {
            return;
        }
        ("JIRA_API_TOKEN", v)
    } else {
        ("GH_TOKEN", b"ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fGh".to_vec())
    };
    let (before, after) = around.split_at(around.len() / 2);
    let copy = [before, &secret, after].concat();
    let c = policy();
    let p = c.policy();
    let mut env = vec![b"PATH=/usr/bin:/bin".to_vec()];
    // The token is found by its shape alone, its variable unset (bit 3); the
    // by-name value only when its variable is set.
    if pick & 1 == 0 || pick & 8 == 0 {
        env.push([name.as_bytes(), b"=", &secret].concat());
    }
    let mut program = b"/bin/true".to_vec();
    let mut argv = vec![program.clone()];
    match ((pick >> 1) & 3) % 3 {
        0 => env.push([b"CARRIER=".as_slice(), &copy].concat()),
        1 => argv.push(copy.clone()),
        _ => {
            program = [b"/opt/".as_slice(), &copy, b"/prog"].concat();
            argv[0] = program.clone();
        }
    }
    let files = outcome::read_env_files(&p);
    let d = outcome::decide(&p, &program, &argv, &env, &[], &files);
    for e in &d.env {
        assert!(!holds(e, &secret), "the child's environment holds the value");
    }
    if d.refusal.is_none() {
        for a in &d.argv {
            assert!(!holds(a, &secret), "the child's argv holds the value");
        }
    }
    let shown = outcome::redacted(&p, &program, &[&env]);
    assert!(!holds(shown.as_bytes(), &secret), "the shown program holds the value");
    for ch in &d.changes {
        assert!(!holds(ch.why.as_bytes(), &secret), "a why holds the value");
        let by = outcome::Recorder {
            tool: "envpolicy",
            user_source: p.source(),
        };
        let line = outcome::json_line(&by, d.pass_mode(ch.layer), shown.as_bytes(), ch);
        assert!(!holds(line.as_bytes(), &secret), "a JSON line holds the value");
    }
});
