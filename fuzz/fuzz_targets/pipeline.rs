//! pipeline: the core's one exec pipeline (envpolicy_core::pipeline), every
//! pass of an exec, with the fuzzer's bytes as the environment and argv, over
//! a user layer and, picked by a byte, a managed layer, each in enforce or
//! audit mode.
//!
//! Input layout: byte 0 picks the layers (bit 0: a managed layer; bits 1-2:
//! which pass audits; bits 3-4: the user policy); the rest, split at NULs, is
//! the entries, and after an empty piece the arguments. Checks, panicking on
//! a violation:
//! - the pipeline never panics, and a plan that proves short comes back grown
//!   until it fits;
//! - in an arena of exactly the plan's bytes it reaches what it reaches in a
//!   roomy one (the sizes it asks for are the sizes it takes);
//! - the fate is a refusal exactly when an enforcing pass refuses;
//! - a refusing user pass in enforce leaves no managed pass;
//! - the child never receives a variable that an enforcing pass withholds by
//!   name (GH_TOKEN), nor an argument that holds its value.
#![no_main]

use envpolicy::compiled::Mode;
use envpolicy::layer::Layer;
use envpolicy::pipeline::{self, Bump, Exec, Fate, Files, Pass, Plan, Short, Sizes, Sticky};
use libfuzzer_sys::fuzz_target;
use std::path::Path;
use std::sync::OnceLock;

const USER: [&str; 4] = [
    "version = 1\n",
    "version = 1\nbase = \"floor\"\nkeep = [\"A*\", \"GH_TOKEN\"]\n",
    "version = 1\nset = { X = \"1\", Y = \"${A1}-y\" }\nstrip = [\"B*\"]\n[argv]\nsecrets = \"redact\"\n",
    "version = 1\n[[grant]]\nname = \"GH_TOKEN\"\nprogram = \"/usr/bin/gh\"\n",
];
const MANAGED: &str = "version = 1\nstrip = [\"A1\"]\nset = { M = \"managed\" }\n";

fn compiled(text: &'static str) -> &'static envpolicy::Compiled {
    static P: OnceLock<Vec<envpolicy::Compiled>> = OnceLock::new();
    let all = P.get_or_init(|| {
        USER.iter()
            .chain([MANAGED].iter())
            .map(|t| envpolicy::load::compile_text(t, Path::new("fuzz.toml")).expect("compiles"))
            .collect()
    });
    let i = USER.iter().position(|t| *t == text).unwrap_or(USER.len());
    &all[i]
}

fn pass<'a>(layer: Layer, policy: &'a envpolicy::Policy<'a>, audit: bool) -> Pass<'a> {
    Pass {
        layer,
        policy,
        mode: if audit { Mode::Audit } else { Mode::Enforce },
        files: Files::default(),
        sticky: Sticky::default(),
        secrets: &[],
    }
}

/// The outcome's child arrays and fate, owned, in an arena of `slack` bytes
/// beyond each plan's.
fn run(
    exec: Exec<'_>,
    user: &Pass<'_>,
    managed: Option<&Pass<'_>>,
    slack: usize,
) -> (Fate, Vec<Vec<u8>>, Vec<Vec<u8>>, bool) {
    let mut plan = Plan::first(Sizes::of(user, &exec), managed.is_some());
    for _ in 0..16 {
        let mut buf = vec![0u64; (plan.bytes() + slack) / 8 + 1];
        let arena = Bump::new(&mut buf);
        match pipeline::decide(exec, user, managed, plan, &arena) {
            Ok(o) => {
                if o.user.pass.mode == Mode::Enforce && o.user.refusal().is_some() {
                    assert!(
                        o.managed.is_none(),
                        "a refused exec went on to the managed pass"
                    );
                }
                let (env, argv) = match o.child() {
                    Some(d) => envpolicy::outcome::child_arrays(d),
                    None => (
                        exec.env.iter().map(|x| x.to_vec()).collect(),
                        exec.argv.iter().map(|x| x.to_vec()).collect(),
                    ),
                };
                let enforcing_refusal = o
                    .passes()
                    .any(|d| d.pass.mode == Mode::Enforce && d.refusal().is_some());
                assert_eq!(matches!(o.fate(), Fate::Refused { .. }), enforcing_refusal);
                let enforced = o.passes().any(|d| d.pass.mode == Mode::Enforce);
                return (o.fate(), env, argv, enforced);
            }
            Err(Short::Grow(p)) => plan = p,
            Err(Short::NoRoom) => panic!("an arena of the plan's bytes had no room"),
        }
    }
    panic!("the plan never settled");
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let user_text = USER[usize::from(pick >> 3) % USER.len()];
    let user_c = compiled(user_text);
    let managed_c = compiled(MANAGED);
    let (up, mp) = (user_c.policy(), managed_c.policy());
    let user = pass(Layer::User, &up, pick & 2 != 0);
    let managed = pass(Layer::Managed, &mp, pick & 4 != 0);
    let managed = (pick & 1 != 0).then_some(&managed);

    let mut pieces = rest.split(|&b| b == 0);
    let mut env: Vec<Vec<u8>> = pieces
        .by_ref()
        .take_while(|p| !p.is_empty())
        .take(64)
        .map(<[u8]>::to_vec)
        .collect();
    let token = b"ghp_0123456789abcdefghijABCDEFGHIJ012345".to_vec();
    env.push([b"GH_TOKEN=".as_slice(), &token].concat());
    let argv: Vec<Vec<u8>> = pieces.take(32).map(<[u8]>::to_vec).collect();
    let env_r: Vec<&[u8]> = env.iter().map(Vec::as_slice).collect();
    let argv_r: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
    // An environment a front end decided already, routed through envwrap
    // (`EnvRequest::routed`), for an input of odd length.
    let exec = Exec {
        routed: data.len() & 1 == 1,
        ..Exec::new(b"/bin/true", &argv_r, &env_r, &[])
    };

    let tight = run(exec, &user, managed, 0);
    let roomy = run(exec, &user, managed, 1 << 16);
    assert_eq!(
        tight, roomy,
        "the plan's bytes and a roomy arena decided apart"
    );

    let (fate, child_env, child_argv, _) = tight;
    let withholds =
        |p: &Pass<'_>| p.mode == Mode::Enforce && p.policy.settings().mode == Mode::Enforce;
    let user_withholds = withholds(&user) && user_text != USER[1];
    if matches!(fate, Fate::Runs { .. }) && user_withholds {
        assert!(
            !child_env.iter().any(|e| e.starts_with(b"GH_TOKEN=")),
            "GH_TOKEN reached the child past an enforcing pass"
        );
        assert!(
            !child_argv
                .iter()
                .any(|a| a.windows(token.len()).any(|w| w == token.as_slice())),
            "an argument holding GH_TOKEN's value reached the child"
        );
    }
});
