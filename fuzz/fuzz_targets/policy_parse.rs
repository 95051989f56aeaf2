//! policy_parse: arbitrary bytes as policy text.
//!
//! The input is taken as policy text (only when it is valid UTF-8, as
//! `load::read_policy_text` requires) and compiled with `load::compile_text`.
//! Checks:
//! - compiling never panics, whatever the text;
//! - when it compiles, `Policy::from_bytes` accepts the compiled bytes (the shim
//!   maps exactly these bytes from its cache);
//! - a full decision (env and argv, through `outcome::decide`) on a small fixed
//!   environment never panics under that policy, for a few programs.
//!
//! The policy path is in a directory that does not exist, so relative imports
//! resolve to missing files (they are skipped with a warning, or fail when
//! `required`).
#![no_main]

use envpolicy::outcome;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

const ENV: &[&[u8]] = &[
    b"PATH=/usr/bin:/bin",
    b"HOME=/home/u",
    b"LANG=en_US.UTF-8",
    b"TERM=xterm",
    b"GH_TOKEN=ghp_Zz9Zz9Zz9Zz9Zz9Zz9Zz9Zz9Zz9Zz9Zz9Zz9",
    b"DB_PASSWORD=opaque-secret-1",
    b"COPY=opaque-secret-1",
    b"LD_PRELOAD=/tmp/x.so",
    b"AGENTMUX_PANE_ID=3",
    b"X=1",
    b"X=2",
    b"NOEQUALS",
    b"=empty",
];

const PROGRAMS: &[&[u8]] = &[b"/usr/bin/prog", b"tmux", b"docker", b""];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(compiled) =
        envpolicy::load::compile_text(text, Path::new("/nonexistent-envshim-fuzz/policy.toml"))
    else {
        return;
    };
    let policy = match envpolicy::Policy::from_bytes(compiled.bytes()) {
        Ok(p) => p,
        Err(e) => panic!("compiled policy rejected by Policy::from_bytes: {e:?}"),
    };
    let env: Vec<Vec<u8>> = ENV.iter().map(|e| e.to_vec()).collect();
    for program in PROGRAMS {
        let argv = vec![
            program.to_vec(),
            b"-e".to_vec(),
            b"GH_TOKEN=ghp_Zz9Zz9Zz9Zz9Zz9Zz9Zz9Zz9Zz9Zz9Zz9Zz9".to_vec(),
            b"--token=opaque-secret-1".to_vec(),
        ];
        let _ = outcome::decide(&policy, program, &argv, &env, &[], &[]);
    }
});
