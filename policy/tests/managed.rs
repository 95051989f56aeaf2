//! "Only stricter", pairwise (docs/policy.md, section 2b): for every field of
//! a user policy, a managed layer and a user policy that tries to loosen it
//! through that field, decided with both layers as every front end decides
//! them (`outcome::decide_layered`). In each case the child lacks what the
//! managed layer takes away, or the exec is refused; and a control (the user
//! policy alone) shows that the user policy does let it through.
//!
//! Values are made up for the tests; assertions name variables only.

mod common;
use common::*;
use envpolicy::compiled::Mode;
use envpolicy::layer::Layer;
use envpolicy::outcome::{self, Decision, Layers, Pass, Sticky};

const TOKEN: &str = "made-up-deploy-key-4Wq9Zx2Lp";

/// One attempt to loosen the managed layer.
struct Case {
    field: &'static str,
    managed: &'static str,
    user: &'static str,
    program: &'static str,
    argv: &'static [&'static str],
    env: &'static [&'static str],
    /// Names the child must not get under both layers (and gets under the
    /// user policy alone, unless `refused`).
    withheld: &'static [&'static str],
    /// The exec is refused under both layers (and not under the user's alone).
    refused: bool,
    /// The requested mode of the user pass (`--mode`).
    requested: Option<Mode>,
    /// The value the user pass delivers for the user policy's one
    /// `[[secret]]`, as a front end reads it for that secret's program.
    user_secret: Option<&'static str>,
}

fn cases() -> Vec<Case> {
    let base = Case {
        field: "",
        managed: "version = 1\nstrip = [\"CORP_*\"]\n",
        user: "version = 1\n",
        program: "/usr/bin/prog",
        argv: &["prog"],
        env: &["PATH=/usr/bin", "CORP_URL=https://corp.invalid/"],
        withheld: &["CORP_URL"],
        refused: false,
        requested: None,
        user_secret: None,
    };
    vec![
        Case { field: "keep (exact)", user: "version = 1\nkeep = [\"CORP_URL\"]\n", ..base },
        Case { field: "keep (glob)", user: "version = 1\nkeep = [\"CORP_U*\"]\n", ..base },
        Case { field: "base = all", user: "version = 1\nbase = \"all\"\n", ..base },
        Case {
            field: "[program.NAME] keep",
            user: "version = 1\n[program.prog]\nkeep = [\"CORP_URL\"]\n",
            ..base
        },
        Case {
            field: "unsafe = keep, keep LD_AUDIT",
            managed: "version = 1\n",
            user: "version = 1\nunsafe = \"keep\"\nkeep = [\"LD_AUDIT\"]\n",
            env: &["PATH=/usr/bin", "LD_AUDIT=/tmp/audit.so"],
            withheld: &["LD_AUDIT"],
            ..base
        },
        Case {
            field: "credentials off, keep",
            managed: "version = 1\n[credentials]\nnames = [\"DEPLOY_KEY\"]\n",
            user: "version = 1\nkeep = [\"DEPLOY_KEY\"]\n[credentials]\nbuiltin = false\nshapes = false\n",
            env: &["PATH=/usr/bin", "DEPLOY_KEY=made-up-deploy-key-4Wq9Zx2Lp"],
            withheld: &["DEPLOY_KEY"],
            ..base
        },
        Case {
            field: "[[grant]]",
            managed: "version = 1\n[credentials]\nnames = [\"DEPLOY_KEY\"]\n",
            user: "version = 1\n[credentials]\nnames = [\"DEPLOY_KEY\"]\n[[grant]]\nname = \"DEPLOY_KEY\"\nprogram = \"prog\"\n",
            env: &["PATH=/usr/bin", "DEPLOY_KEY=made-up-deploy-key-4Wq9Zx2Lp"],
            withheld: &["DEPLOY_KEY"],
            ..base
        },
        Case {
            field: "strip the credential, keep its copy",
            managed: "version = 1\n[credentials]\nnames = [\"DEPLOY_KEY\"]\n",
            user: "version = 1\nstrip = [\"DEPLOY_KEY\"]\n[credentials]\nbuiltin = false\nshapes = false\n",
            env: &["PATH=/usr/bin", "DEPLOY_KEY=made-up-deploy-key-4Wq9Zx2Lp", "AUTH=Bearer made-up-deploy-key-4Wq9Zx2Lp"],
            withheld: &["AUTH"],
            ..base
        },
        Case { field: "set a stripped name", user: "version = 1\nset = { CORP_URL = \"https://lax.invalid/\" }\n", env: &["PATH=/usr/bin"], ..base },
        Case {
            field: "set a credential's copy",
            managed: "version = 1\n[credentials]\nnames = [\"DEPLOY_KEY\"]\n",
            user: "version = 1\nset = { AUTH = \"Bearer ${DEPLOY_KEY}\" }\n[credentials]\nbuiltin = false\nshapes = false\n",
            env: &["PATH=/usr/bin", "DEPLOY_KEY=made-up-deploy-key-4Wq9Zx2Lp"],
            withheld: &["AUTH", "DEPLOY_KEY"],
            ..base
        },
        Case {
            field: "argv.secrets = allow",
            managed: "version = 1\n[credentials]\nnames = [\"DEPLOY_KEY\"]\n",
            user: "version = 1\n[argv]\nsecrets = \"allow\"\n[credentials]\nbuiltin = false\nshapes = false\n",
            argv: &["prog", "--token=made-up-deploy-key-4Wq9Zx2Lp"],
            env: &["PATH=/usr/bin", "DEPLOY_KEY=made-up-deploy-key-4Wq9Zx2Lp"],
            withheld: &[],
            refused: true,
            ..base
        },
        Case {
            field: "[[secret]] of a name the managed layer refuses",
            managed: "version = 1\n[credentials]\nnames = [\"DEPLOY_KEY\"]\n",
            user: USER_SECRET,
            env: &["PATH=/usr/bin"],
            withheld: &["DEPLOY_KEY"],
            user_secret: Some(TOKEN),
            ..base
        },
        Case { field: "mode = audit", user: "version = 1\nmode = \"audit\"\n", ..base },
        Case { field: "--mode audit", requested: Some(Mode::Audit), ..base },
    ]
}

/// A user policy that delivers `DEPLOY_KEY` to `/usr/bin/prog` (its source is
/// never read here: the case hands the pass the value).
const USER_SECRET: &str = "version = 1\n[[secret]]\nname = \"DEPLOY_KEY\"\nfrom = \"file:/nonexistent/deploy-key\"\nprogram = \"/usr/bin/prog\"\n";

fn decide(c: &Case, with_managed: bool) -> (Decision, Vec<Vec<u8>>) {
    let user = compile(c.user);
    let managed = compile(c.managed);
    let (u, m) = (user.policy(), managed.policy());
    let (uf, mf) = (outcome::read_env_files(&u), outcome::read_env_files(&m));
    let env = bytes(c.env);
    let secrets: Vec<Option<Vec<u8>>> = c
        .user_secret
        .map(|v| v.as_bytes().to_vec())
        .into_iter()
        .map(Some)
        .collect();
    let layers = Layers {
        user: Pass {
            policy: &u,
            env_files: &uf,
            secrets: &secrets,
        },
        managed: with_managed.then(|| Pass::new(&m, &mf)),
        requested_mode: c.requested,
        sticky: Sticky::default(),
    };
    let d = layers.decide(c.program.as_bytes(), &bytes(c.argv), &env, &[]);
    (d, env)
}

fn has(env: &[Vec<u8>], name: &str) -> bool {
    env.iter()
        .any(|e| e.starts_with(format!("{name}=").as_bytes()))
}

#[test]
fn no_field_of_a_user_policy_loosens_the_managed_layer() {
    for c in cases() {
        let (d, env) = decide(&c, true);
        let child = d.effective_env(&env);
        if c.refused {
            assert!(d.refused().is_some(), "{}: the exec is refused", c.field);
            let by = d.refused().map(|r| r.layer);
            assert_eq!(
                by,
                Some(Layer::Managed),
                "{}: by the managed layer",
                c.field
            );
        } else {
            assert!(d.refused().is_none(), "{}: not refused", c.field);
        }
        for name in c.withheld {
            assert!(!has(child, name), "{}: {name} reached the child", c.field);
        }
        for e in child {
            let holds = e.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes());
            assert!(
                !holds,
                "{}: the credential's value reached the child",
                c.field
            );
        }
        assert!(has(child, "PATH"), "{}: PATH passes both", c.field);
    }
}

#[test]
fn each_case_is_looser_under_the_user_policy_alone() {
    for c in cases() {
        let (d, env) = decide(&c, false);
        let child = d.effective_env(&env);
        if c.refused {
            assert!(
                d.refused().is_none(),
                "{}: the user policy alone lets it run",
                c.field
            );
            continue;
        }
        let loosened = c.withheld.iter().any(|n| has(child, n));
        assert!(
            loosened,
            "{}: the user policy alone lets something through",
            c.field
        );
    }
}

#[test]
fn a_managed_sticky_layer_puts_the_shim_back_that_the_user_drops() {
    let user = compile("version = 1\nsticky = false\n");
    let managed = compile("version = 1\n");
    let (u, m) = (user.policy(), managed.policy());
    let layers = Layers {
        user: Pass::new(&u, &[]),
        managed: Some(Pass::new(&m, &[])),
        requested_mode: None,
        sticky: Sticky {
            preload: Some(b"/usr/lib/libenvshim.so"),
            policy_entry: Some(b"ENVSHIM_POLICY=/tmp/lax.toml"),
            hint: None,
        },
    };
    let env = bytes(&["PATH=/usr/bin"]);
    let d = layers.decide(b"/usr/bin/prog", &bytes(&["prog"]), &env, &[]);
    let child = d.effective_env(&env);
    assert!(
        has(child, "LD_PRELOAD"),
        "the managed layer's rule 8 puts the shim back"
    );
}

/// "Where it says so": a managed grant of the name to the program lets the
/// user's secret through the managed pass, and to that program only.
#[test]
fn a_user_secret_reaches_its_program_where_the_managed_layer_grants_its_name() {
    let granted = "version = 1\n[credentials]\nnames = [\"DEPLOY_KEY\"]\n[[grant]]\nname = \"DEPLOY_KEY\"\nprogram = \"/usr/bin/prog\"\n";
    let case = |program| Case {
        field: "[[secret]] under a managed grant",
        managed: granted,
        user: USER_SECRET,
        program,
        argv: &["prog"],
        env: &["PATH=/usr/bin"],
        withheld: &[],
        refused: false,
        requested: None,
        user_secret: Some(TOKEN),
    };
    let (d, env) = decide(&case("/usr/bin/prog"), true);
    assert!(d.refused().is_none(), "not refused");
    assert!(
        has(d.effective_env(&env), "DEPLOY_KEY"),
        "the granted program gets the user's secret"
    );
    let (d, env) = decide(&case("/usr/bin/other"), true);
    assert!(
        !has(d.effective_env(&env), "DEPLOY_KEY"),
        "another program does not"
    );
}
