//! argv_scan: arbitrary argv with a credential in the environment.
//!
//! Input layout: byte 0 picks the policy (`argv.secrets` = redact or refuse, with
//! or without a docker grant and a shorter `min_value_len`) and the program
//! (plain, tmux, docker, env); byte 1 is the secret's length; then the secret's
//! bytes; byte after that says whether and where to splice the secret into the
//! argv; the rest, split on NUL, is the argv. The environment holds
//! `API_TOKEN=<secret>` (a credential by the built-in `*_TOKEN`) and a few plain
//! entries. Secrets containing `*` are skipped (redaction writes `*`, so a secret
//! such as `a*******` can reappear out of an overwritten neighbour).
//!
//! Checks, panicking on a violation:
//! - `outcome::decide` never panics;
//! - redact: the exec is not refused and no output argument contains the secret;
//! - refuse: either the exec is refused, or no output argument contains the
//!   secret; with a program that carries no `NAME=VALUE` pairs, an input argument
//!   holding the secret always refuses the exec.
#![no_main]

use envpolicy::outcome;
use libfuzzer_sys::fuzz_target;
use std::path::Path;
use std::sync::OnceLock;

const POLICIES: &[(&str, bool)] = &[
    ("version = 1\n[argv]\nsecrets = \"redact\"\n", false),
    ("version = 1\n[argv]\nsecrets = \"refuse\"\n", true),
    (
        "version = 1\nkeep = [\"API_TOKEN\"]\n[credentials]\nmin_value_len = 4\n[argv]\nsecrets = \"redact\"\n[[grant]]\nname = \"API_TOKEN\"\nprogram = \"docker\"\n",
        false,
    ),
    (
        "version = 1\nkeep = [\"API_TOKEN\"]\n[credentials]\nmin_value_len = 4\n[argv]\nsecrets = \"refuse\"\n[[grant]]\nname = \"API_TOKEN\"\nprogram = \"docker\"\n",
        true,
    ),
];

/// Programs, and whether envpolicy reads `NAME=VALUE` pairs in their argv.
const PROGRAMS: &[(&[u8], bool)] = &[
    (b"/usr/bin/prog", false),
    (b"/usr/bin/tmux", true),
    (b"docker", true),
    (b"env", true),
];

fn compiled() -> &'static Vec<envpolicy::Compiled> {
    static C: OnceLock<Vec<envpolicy::Compiled>> = OnceLock::new();
    C.get_or_init(|| {
        POLICIES
            .iter()
            .map(|(t, _)| {
                envpolicy::load::compile_text(t, Path::new("/nonexistent-envshim-fuzz/p.toml"))
                    .expect("fixed policy compiles")
            })
            .collect()
    })
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fuzz_target!(|data: &[u8]| {
    let [sel, len, rest @ ..] = data else {
        return;
    };
    let (ptext_refuse, compiled) = {
        let i = (*sel as usize) % POLICIES.len();
        (POLICIES[i].1, &compiled()[i])
    };
    let (program, pairs) = PROGRAMS[(*sel as usize / POLICIES.len()) % PROGRAMS.len()];
    let len = *len as usize;
    if rest.len() < len + 1 {
        return;
    }
    let (secret, rest) = rest.split_at(len);
    let (splice, argv_bytes) = (rest[0], &rest[1..]);
    let policy = compiled.policy();
    let min = policy.settings().min_value_len as usize;
    if secret.len() < min || secret.contains(&0) || secret.contains(&b'*') {
        return;
    }

    let mut argv: Vec<Vec<u8>> = vec![program.to_vec()];
    if !argv_bytes.is_empty() {
        argv.extend(argv_bytes.split(|&b| b == 0).map(<[u8]>::to_vec));
    }
    // Splice the secret in (bit 7 set: do), at argument `splice % n`, with an
    // attached prefix chosen by bits 4..6.
    if splice & 0x80 != 0 {
        const PREFIX: &[&[u8]] = &[
            b"",
            b"--token=",
            b"-u",
            b"https://bot:",
            b"API_TOKEN=",
            b"X=",
            b"Authorization: Bearer ",
            b"",
        ];
        let at = 1 + (splice as usize & 0x0f) % argv.len();
        let mut a = PREFIX[(splice as usize >> 4) & 7].to_vec();
        a.extend_from_slice(secret);
        if splice & 0x01 != 0 {
            a.extend_from_slice(b"@host/x");
        }
        if at >= argv.len() {
            argv.push(a);
        } else {
            argv.insert(at, a);
        }
    }

    let mut token = b"API_TOKEN=".to_vec();
    token.extend_from_slice(secret);
    let env = vec![
        b"PATH=/usr/bin:/bin".to_vec(),
        b"HOME=/home/u".to_vec(),
        token,
        b"LANG=C.UTF-8".to_vec(),
    ];
    let d = outcome::decide(&policy, program, &argv, &env, &[], &[]);
    let out = d.effective_argv(&argv);
    let leaked = out.iter().any(|a| contains(a, secret));
    if ptext_refuse {
        if d.refused().is_none() {
            assert!(!leaked, "secret left in argv (refuse mode, exec not refused)");
            if !pairs {
                assert!(
                    !argv.iter().any(|a| contains(a, secret)),
                    "argv held the secret but the exec was not refused"
                );
            }
        }
    } else {
        assert!(d.refused().is_none(), "redact mode refused the exec");
        assert!(!leaked, "secret left in argv (redact mode)");
    }
});
