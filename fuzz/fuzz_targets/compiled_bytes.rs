//! compiled_bytes: arbitrary bytes as a compiled policy (the cache file the shim
//! maps from disk).
//!
//! Checks: `Policy::from_bytes` never panics; when it accepts the bytes, a full
//! decision (env and argv, `outcome::decide`) on a small fixed environment and
//! argv never panics, for a few programs; neither do `Policy::peek` and the
//! accessors the shim uses before validating (`settings`, `source`, `log_path`).
//! The corpus is seeded with the compiled bytes of the example policies.
#![no_main]

use envpolicy::outcome;
use envpolicy::Policy;
use libfuzzer_sys::fuzz_target;

const ENV: &[&[u8]] = &[
    b"PATH=/usr/bin:/bin",
    b"HOME=/home/u",
    b"LANG=en_US.UTF-8",
    b"GH_TOKEN=ghp_Zz9Zz9Zz9Zz9Zz9Zz9Zz9Zz9Zz9Zz9Zz9Zz9",
    b"DB_PASSWORD=opaque-secret-1",
    b"COPY=opaque-secret-1",
    b"AGENTMUX_PANE_ID=3",
    b"AKM_BINDING_DEPLOY_TARGET=prod",
    b"X=1",
    b"X=2",
    b"NOEQUALS",
];

const PROGRAMS: &[&[u8]] = &[b"/usr/bin/prog", b"tmux", b"docker", b""];

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = Policy::peek(data) {
        let _ = p.settings();
        let _ = p.source();
        let _ = p.log_path();
    }
    let Ok(policy) = Policy::from_bytes(data) else {
        return;
    };
    let env: Vec<Vec<u8>> = ENV.iter().map(|e| e.to_vec()).collect();
    for program in PROGRAMS {
        let argv = vec![
            program.to_vec(),
            b"-e".to_vec(),
            b"GH_TOKEN=x".to_vec(),
            b"--pw=opaque-secret-1".to_vec(),
        ];
        let _ = outcome::decide(&policy, program, &argv, &env, &[], &[Some(b"A=1\n".to_vec())]);
    }
});
