//! env_filter: arbitrary envp bytes under a choice of policies.
//!
//! Input layout: byte 0 picks the policy (one of the fixed texts below, or, when
//! it is past the end of that list, a fuzzed policy text: the bytes up to the first
//! NUL, compiled as UTF-8-lossy text); byte 1 picks the program; the rest, split on
//! NUL, is the environment (any bytes: entries without `=`, empty names,
//! duplicates, non-UTF-8). The decision is `outcome::decide`.
//!
//! Checks (the invariants that hold at library level), panicking on a
//! violation:
//! - audit mode: the effective environment is the input, and nothing is refused;
//! - enforce mode, for every entry of the output:
//!   - it has `=` and a non-empty name, and no name occurs twice;
//!   - it is not a credential (`decide::is_credential`: by name, import or token
//!     shape), unless a grant admits that name for this program;
//!   - its value is not the value (of length >= `credentials.min_value_len`) of a
//!     credential in the input, unless the entry is a granted credential, or the
//!     policy's own `set` produced it and the policy is fuzzed (a fuzzed template
//!     such as `${A}${B}` can concatenate harmless values into a credential's
//!     value; the fixed policies only use single `${NAME}` expansions, where a
//!     match would be a leak), or it is one of the policy's literal sets;
//! - set variables win: each literal set of a fixed policy is in the output.
#![no_main]

use envpolicy::compiled::Mode;
use envpolicy::bytes::split_entry;
use envpolicy::decide::find_grant;
use envpolicy::outcome;
use libfuzzer_sys::fuzz_target;
use std::path::Path;
use std::sync::OnceLock;

struct Fixed {
    text: &'static str,
    /// Literal sets that apply to every program: they must be in the output.
    sets: &'static [(&'static str, &'static str)],
}

const FIXED: &[Fixed] = &[
    // examples/loop.toml (its imports resolve to missing files: skipped).
    Fixed {
        text: include_str!("../../examples/loop.toml"),
        sets: &[],
    },
    Fixed {
        text: include_str!("../../examples/agentmux.toml"),
        sets: &[
            ("AGENTMUX_NESTED", "1"),
            ("AGENTMUX_BUILD_INFO", "agentmux example build"),
        ],
    },
    Fixed {
        text: include_str!("../../examples/exec-unit.toml"),
        sets: &[
            ("AKM_RUN_ID", "run-42"),
            ("AKM_STEP_ID", "build"),
            ("AKM_UNIT", "exec"),
        ],
    },
    // Grants, keep of credentials (refused unless granted), strip globs.
    Fixed {
        text: r#"version = 1
base = "all"
keep = ["*_TOKEN", "DB_PASSWORD", "LD_LIBRARY_PATH"]
strip = ["AWS_*", "LC_*"]
[credentials]
names = ["DB_PASSWORD", "*_KEY"]
[set]
MODE = "safe"
[[grant]]
name = "GH_TOKEN"
program = "gh"
[[grant]]
name = "DB_PASSWORD"
program = "/usr/bin/psql"
[[grant]]
name = "API_KEY"
program = "docker"
[program.tmux.pairs]
base = "none"
keep = ["LANG", "GH_TOKEN"]
"#,
        sets: &[("MODE", "safe")],
    },
    // base none, a keep list that names credentials, single-name expansions.
    Fixed {
        text: r#"version = 1
base = "none"
keep = ["PATH", "HOME", "LC_*", "*_TOKEN", "*SECRET*", "X", "TZ", "BASH_ENV"]
[set]
PATH = "/usr/bin"
HOMECOPY = "${HOME}"
XCOPY = "${X}"
[program.gh]
keep = ["GH_*", "EDITOR"]
[program.gh.set]
GH_PROMPT_DISABLED = "1"
"#,
        sets: &[("PATH", "/usr/bin")],
    },
    // floor, shorter min_value_len, unsafe names kept, argv refusal.
    Fixed {
        text: r#"version = 1
base = "floor"
keep = ["X", "Y", "LD_PRELOAD", "AGENTMUX_*"]
strip = ["AGENTMUX_DATA_*"]
unsafe = "keep"
[credentials]
names = ["*PASS*", "X"]
min_value_len = 4
[argv]
secrets = "refuse"
[set]
Y = "${LANG}"
"#,
        sets: &[],
    },
    // audit mode: nothing changes.
    Fixed {
        text: r#"version = 1
mode = "audit"
base = "none"
keep = ["PATH"]
[set]
MODE = "audit"
"#,
        sets: &[],
    },
    // no built-in credentials, shapes off.
    Fixed {
        text: r#"version = 1
base = "all"
[credentials]
builtin = false
shapes = false
names = ["MY_SECRET"]
"#,
        sets: &[],
    },
];

const PROGRAMS: &[&[u8]] = &[
    b"/usr/bin/prog",
    b"gh",
    b"/usr/bin/psql",
    b"docker",
    b"/usr/bin/tmux",
    b"",
];

fn compiled() -> &'static Vec<envpolicy::Compiled> {
    static C: OnceLock<Vec<envpolicy::Compiled>> = OnceLock::new();
    C.get_or_init(|| {
        FIXED
            .iter()
            .map(|f| {
                envpolicy::load::compile_text(f.text, Path::new("/nonexistent-envshim-fuzz/p.toml"))
                    .unwrap_or_else(|e| panic!("fixed policy does not compile: {e}"))
            })
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let [pick, prog, rest @ ..] = data else {
        return;
    };
    let program = PROGRAMS[*prog as usize % PROGRAMS.len()];
    let fixed = compiled();
    let (owned, fixed_case, env_bytes);
    let idx = *pick as usize;
    if idx < FIXED.len() {
        owned = None;
        fixed_case = Some(&FIXED[idx]);
        env_bytes = rest;
    } else {
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        let text = String::from_utf8_lossy(&rest[..end]).into_owned();
        let Ok(c) = envpolicy::load::compile_text(&text, Path::new("/nonexistent-envshim-fuzz/p.toml"))
        else {
            return;
        };
        owned = Some((c, text));
        fixed_case = None;
        env_bytes = rest.get(end + 1..).unwrap_or(&[]);
    }
    let (compiled, text): (&envpolicy::Compiled, &str) = match (&owned, fixed_case) {
        (Some((c, t)), _) => (c, t.as_str()),
        (None, Some(f)) => (&fixed[idx], f.text),
        (None, None) => unreachable!(),
    };
    let _ = text;
    let policy = compiled.policy();

    let env: Vec<Vec<u8>> = if env_bytes.is_empty() {
        Vec::new()
    } else {
        env_bytes.split(|&b| b == 0).map(<[u8]>::to_vec).collect()
    };
    let argv = vec![program.to_vec()];
    let d = outcome::decide(&policy, program, &argv, &env, &[], &[]);
    let out = d.effective_env(&env);

    if d.mode == Mode::Audit {
        assert_eq!(out, &env[..], "audit mode changed the environment");
        assert!(d.refused().is_none(), "audit mode refused an exec");
        return;
    }

    let min = policy.settings().min_value_len as usize;
    // Values of input credentials (every copy), except granted ones that pass.
    let mut cred_values: Vec<&[u8]> = Vec::new();
    for (i, v) in d.env_verdicts.iter().enumerate() {
        if v.credential {
            if let Some((_, val)) = split_entry(&env[i]) {
                if val.len() >= min {
                    cred_values.push(val);
                }
            }
        }
    }
    // Names the policy's `set` added (their values come from the policy).
    let set_names: Vec<&str> = d
        .changes
        .iter()
        .filter(|c| c.index.is_none() && c.action == envpolicy::outcome::ChangeAction::Set)
        .filter_map(|c| c.name.as_deref())
        .collect();

    let mut names: Vec<&[u8]> = Vec::new();
    for e in out {
        let (name, val) = split_entry(e).unwrap_or_else(|| {
            panic!("output entry without '=': {:?}", String::from_utf8_lossy(e))
        });
        let shown = String::from_utf8_lossy(name);
        assert!(!name.is_empty(), "empty name in output");
        assert!(!names.contains(&name), "duplicate name in output: {shown}");
        names.push(name);
        let granted = find_grant(
            &policy,
            name,
            &envpolicy::identity::Identity::itself(program),
        )
        .is_some();
        let credential = envpolicy::decide::is_credential(&policy, name, val);
        assert!(
            !credential || granted,
            "credential {shown} in output for program {:?}",
            String::from_utf8_lossy(program)
        );
        if cred_values.contains(&val) && !(credential && granted) {
            let literal = fixed_case.is_some_and(|f| {
                f.sets
                    .iter()
                    .any(|(n, v)| n.as_bytes() == name && v.as_bytes() == val)
            });
            let fuzzed_set = fixed_case.is_none()
                && std::str::from_utf8(name).is_ok_and(|n| set_names.contains(&n));
            assert!(
                literal || fuzzed_set,
                "a credential value of the input is in the output under {shown}"
            );
        }
    }
    if let Some(f) = fixed_case {
        for (n, v) in f.sets {
            let want = format!("{n}={v}");
            assert!(
                out.iter().any(|e| e == want.as_bytes()),
                "literal set {n} lost"
            );
        }
    }
});
