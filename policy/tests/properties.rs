//! Properties over random environments and random policies (proptest). These are
//! the invariants of docs/adr/0001-rule-order.md, checked on every case:
//! - the output never holds a refused (credential) name, unless granted;
//! - the output never holds a credential value, nor a token-shaped value;
//! - the output never holds two copies of a name;
//! - set variables always win;
//! - audit mode changes nothing;
//! - no input makes the decision panic.

mod common;
use envpolicy::compiled::Mode;
use envpolicy::outcome;
use envpolicy::shape::{find_shape, ShapeSet};
use proptest::prelude::*;

const NAMES: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TERM",
    "TZ",
    "GH_TOKEN",
    "gh_token",
    "JIRA_API_TOKEN",
    "DB_PASSWORD",
    "AGENTMUX_PANE_ID",
    "AGENTMUX_DATA_HOME",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "BASH_ENV",
    "EDITOR",
    "X",
    "Y",
    "AKM_RUN_ID",
    "MODE",
    "",
    "=",
    "A B",
];
const PATTERNS: &[&str] = &[
    "PATH",
    "HOME",
    "*",
    "AGENTMUX_*",
    "AGENTMUX_PANE_ID",
    "*_TOKEN",
    "LC_*",
    "GH_TOKEN",
    "X",
    "LD_LIBRARY_PATH",
    "*SECRET*",
    "EDITOR",
];

fn token() -> String {
    format!("ghp_{}", "Zz9".repeat(12))
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>().prop_filter("no NUL", |b| *b != 0), 0..24),
        Just(token().into_bytes()),
        Just(b"opaque-secret-1".to_vec()),
        Just(b"/usr/share/zoneinfo/UTC".to_vec()),
        Just(b"en_US.UTF-8".to_vec()),
        Just(b"%s/x".to_vec()),
    ]
}

fn entry() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => (proptest::sample::select(NAMES), value()).prop_map(|(n, v)| {
            let mut e = n.as_bytes().to_vec();
            e.push(b'=');
            e.extend(v);
            e
        }),
        1 => proptest::collection::vec(any::<u8>().prop_filter("no NUL", |b| *b != 0), 0..12),
    ]
}

fn list() -> impl Strategy<Value = Vec<&'static str>> {
    proptest::collection::vec(proptest::sample::select(PATTERNS), 0..4)
}

fn toml_list(v: &[&str]) -> String {
    let items: Vec<String> = v.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", items.join(", "))
}

#[derive(Debug, Clone)]
struct Case {
    base: &'static str,
    keep: Vec<&'static str>,
    strip: Vec<&'static str>,
    creds: Vec<&'static str>,
    set: Vec<(&'static str, &'static str)>,
    audit: bool,
    prog_keep: Vec<&'static str>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        proptest::sample::select(&["none", "floor", "all"][..]),
        list(),
        list(),
        list(),
        proptest::collection::vec(
            (
                proptest::sample::select(&["MODE", "AKM_RUN_ID", "X", "PATH"][..]),
                proptest::sample::select(&["safe", "run-1", "${HOME}", "${X}/bin"][..]),
            ),
            0..3,
        ),
        any::<bool>(),
        list(),
    )
        .prop_map(|(base, keep, strip, creds, set, audit, prog_keep)| Case {
            base,
            keep,
            strip,
            creds,
            set,
            audit,
            prog_keep,
        })
}

fn policy_text(c: &Case) -> String {
    let mut t = format!(
        "version = 1\nbase = {:?}\nkeep = {}\nstrip = {}\n",
        c.base,
        toml_list(&c.keep),
        toml_list(&c.strip)
    );
    if c.audit {
        t.push_str("mode = \"audit\"\n");
    }
    t.push_str(&format!("[credentials]\nnames = {}\n", toml_list(&c.creds)));
    t.push_str("[set]\n");
    let mut seen = Vec::new();
    for (n, v) in &c.set {
        if !seen.contains(n) {
            seen.push(*n);
            t.push_str(&format!("{n} = {v:?}\n"));
        }
    }
    t.push_str(&format!(
        "[program.prog]\nkeep = {}\n",
        toml_list(&c.prog_keep)
    ));
    t
}

fn split(e: &[u8]) -> Option<(&[u8], &[u8])> {
    let i = e.iter().position(|&b| b == b'=')?;
    Some((&e[..i], &e[i + 1..]))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(512), .. ProptestConfig::default() })]

    #[test]
    fn invariants_hold(c in case(), env in proptest::collection::vec(entry(), 0..24), program in proptest::sample::select(&["/usr/bin/prog", "prog", "/bin/sh", ""][..])) {
        let text = policy_text(&c);
        let compiled = match envpolicy::load::compile_text(&text, std::path::Path::new("prop.toml")) {
            Ok(c) => c,
            // A set that copies a name the case lists as a credential is refused at
            // compile time: that is the rule working, not a case to decide.
            Err(e) if e.message.contains("would copy credential") || e.message.contains("is a credential name") => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(format!("generated policy did not compile: {e}"))),
        };
        let policy = compiled.policy();
        let d = outcome::decide(&policy, program.as_bytes(), &[program.as_bytes().to_vec()], &env, &[], &[]);
        let out = d.effective_env(&env);

        if c.audit {
            prop_assert_eq!(d.mode, Mode::Audit);
            prop_assert_eq!(out, &env[..], "audit mode changed the environment");
            return Ok(());
        }

        // Credential values of the input (first copies, and later copies).
        let mut cred_values: Vec<&[u8]> = Vec::new();
        for (i, v) in d.env_verdicts.iter().enumerate() {
            if v.credential {
                if let Some((_, val)) = split(&env[i]) {
                    if val.len() >= 8 { cred_values.push(val); }
                }
            }
        }
        let mut names: Vec<&[u8]> = Vec::new();
        for e in out {
            let (name, val) = split(e).expect("every output entry has '='");
            prop_assert!(!name.is_empty(), "empty name in output");
            prop_assert!(!names.contains(&name), "duplicate name in output: {}", String::from_utf8_lossy(name));
            names.push(name);
            prop_assert!(!envpolicy::decide::is_credential(&policy, name, val), "credential in output: {}", String::from_utf8_lossy(name));
            prop_assert!(find_shape(val, ShapeSet::ALL).is_none(), "token shape in output under {}", String::from_utf8_lossy(name));
            prop_assert!(!cred_values.contains(&val), "a credential value in output under {}", String::from_utf8_lossy(name));
        }
        // Set variables win (literal ones, which cannot be refused).
        let mut seen = Vec::new();
        for (n, v) in &c.set {
            if seen.contains(n) { continue; }
            seen.push(*n);
            if !v.contains('$') {
                let want = format!("{n}={v}");
                prop_assert!(out.iter().any(|e| e == want.as_bytes()), "set {} lost", n);
            }
        }
    }

    /// An environment the policy decided, decided again as an exec another
    /// front end already decided (the route through `envwrap --routed`, the
    /// supervisor's judgement of an exec the shim made: `Layers::decide_routed`),
    /// gives the child the same environment: the second decision changes
    /// nothing, expanding sets included.
    #[test]
    fn a_routed_decision_of_a_decided_environment_changes_nothing(c in case(), env in proptest::collection::vec(entry(), 0..24)) {
        let text = policy_text(&c);
        let Ok(compiled) = envpolicy::load::compile_text(&text, std::path::Path::new("prop.toml")) else {
            return Ok(());
        };
        let policy = compiled.policy();
        let prog: &[u8] = b"/usr/bin/prog";
        let argv = vec![prog.to_vec()];
        let d = outcome::decide(&policy, prog, &argv, &env, &[], &[]);
        if c.audit || d.refused().is_some() {
            return Ok(());
        }
        let mut first = d.effective_env(&env).to_vec();
        let files: Vec<Option<Vec<u8>>> = Vec::new();
        let layers = outcome::Layers::one(outcome::Pass::new(&policy, &files), outcome::Sticky::default());
        let again = layers.decide_routed(prog, &argv, &first, &[]);
        let mut second = again.effective_env(&first).to_vec();
        first.sort();
        second.sort();
        let names = |v: &[Vec<u8>]| -> Vec<String> {
            v.iter().map(|e| String::from_utf8_lossy(split(e).map_or(&e[..], |(n, _)| n)).into_owned()).collect()
        };
        prop_assert!(first == second, "decided again, {:?} became {:?}", names(&first), names(&second));
    }

    #[test]
    fn any_bytes_as_environment_never_panic(env in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..40), argv in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..8)) {
        for text in [envpolicy::load::DEFAULT_POLICY, envpolicy::load::FLOOR_POLICY] {
            let c = envpolicy::load::compile_text(text, std::path::Path::new("p.toml")).unwrap();
            let _ = outcome::decide(&c.policy(), b"tmux", &argv, &env, &env, &[Some(env.concat())]);
        }
    }

    /// The core's pipeline (every pass of an exec) asks for the sizes it takes:
    /// in an arena of exactly its plan's bytes it decides what it decides in a
    /// roomy one, with or without a managed pass and in either mode; and a
    /// managed pass only takes away from what the user pass gives the child,
    /// or adds its own entries.
    #[test]
    fn the_pipeline_fits_its_plan_and_layers_only_take_away(
        user in case(),
        managed in case(),
        layered in any::<bool>(),
        env in proptest::collection::vec(entry(), 0..24),
        argv in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..30), 0..6),
    ) {
        let (Some(u), Some(m)) = (compile_case(&user), compile_case(&managed)) else {
            return Ok(());
        };
        let (up, mp) = (u.policy(), m.policy());
        let tight = pipeline_run(&up, layered.then_some(&mp), &env, &argv, 0);
        let roomy = pipeline_run(&up, layered.then_some(&mp), &env, &argv, 1 << 16);
        prop_assert_eq!(&tight, &roomy);
        if let (true, Some(child), Some(after_user)) = (layered, &tight.0, &tight.1) {
            let added: Vec<&[u8]> = managed.set.iter().map(|(n, _)| n.as_bytes()).collect();
            for e in child {
                let name = split(e).map_or(&e[..], |(n, _)| n);
                prop_assert!(
                    after_user.contains(e) || added.contains(&name) || name.starts_with(b"ENVSHIM_") || name == b"LD_PRELOAD",
                    "the managed pass gave the child an entry of {:?} the user pass did not", String::from_utf8_lossy(name)
                );
            }
        }
    }

    #[test]
    fn any_text_as_policy_never_panics(text in "\\PC{0,200}") {
        let _ = envpolicy::load::compile_text(&text, std::path::Path::new("p.toml"));
    }

    #[test]
    fn argv_never_carries_a_credential_value(secret in "[a-zA-Z0-9]{8,20}", prefix in "(|-u|--token=|https://bot:)", suffix in "(|@host/x|\\.txt)") {
        let c = envpolicy::load::compile_text("version = 1\n[argv]\nsecrets = \"redact\"\n", std::path::Path::new("p.toml")).unwrap();
        let env = vec![format!("API_TOKEN={secret}").into_bytes()];
        let argv = vec![b"prog".to_vec(), format!("{prefix}{secret}{suffix}").into_bytes()];
        let d = outcome::decide(&c.policy(), b"prog", &argv, &env, &[], &[]);
        for a in &d.argv {
            prop_assert!(!a.windows(secret.len()).any(|w| w == secret.as_bytes()), "secret left in argv");
        }
    }

    /// A password with bytes that escapes change, written the way one family
    /// of programs writes it (docs/adr/0023), between any bytes: the variable
    /// that carries it never reaches the child, and an argument that holds it
    /// is refused.
    #[test]
    fn an_escaped_copy_never_reaches_the_child(
        body in "[a-zA-Z0-9]{6,14}",
        special in proptest::sample::select(&["@", "/", "'", "\"", "\\", " ", "&", "%", "<", "+", "$"][..]),
        form in 0usize..8,
        before in "[a-z=:/ ]{0,6}",
        after in "[a-z=:/&?]{0,6}",
    ) {
        let password = format!("{body}{special}{body}");
        let copy = escaped_form(password.as_bytes(), form);
        let c = envpolicy::load::compile_text("version = 1\n", std::path::Path::new("p.toml")).unwrap();
        let carrier = [before.as_bytes(), &copy, after.as_bytes()].concat();
        let env = vec![
            format!("DB_PASSWORD={password}").into_bytes(),
            [b"CARRIER=".as_slice(), &carrier].concat(),
        ];
        let argv = vec![b"prog".to_vec()];
        let d = outcome::decide(&c.policy(), b"prog", &argv, &env, &[], &[]);
        prop_assert!(!d.env.iter().any(|e| e.starts_with(b"CARRIER=")), "form {} reached the child", form);
        let argv = vec![b"prog".to_vec(), carrier.clone()];
        let d = outcome::decide(&c.policy(), b"prog", &argv, &env[..1], &[], &[]);
        prop_assert!(d.refused().is_some(), "form {}: the argument was not refused", form);
    }
}

/// `value` as one family of programs writes it: 0 percent-encoded (all but
/// unreserved), 1 the query form, 2 JSON, 3 JSON twice, 4 `printf %q`, 5
/// `${v@Q}`, 6 an SQL literal, 7 HTML.
fn escaped_form(value: &[u8], form: usize) -> Vec<u8> {
    let pct = |plus: bool| {
        let mut out = Vec::new();
        for &b in value {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                out.push(b);
            } else if plus && b == b' ' {
                out.push(b'+');
            } else {
                out.extend(format!("%{b:02X}").bytes());
            }
        }
        out
    };
    let json = |v: &[u8]| {
        let mut out = b"\"".to_vec();
        for &b in v {
            match b {
                b'"' | b'\\' => out.extend([b'\\', b]),
                _ => out.push(b),
            }
        }
        out.push(b'"');
        out
    };
    let quoted = |q: u8, close: &[u8]| {
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
    match form {
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
                b'"' => b"&quot;".to_vec(),
                b'\'' => b"&#39;".to_vec(),
                _ => vec![b],
            })
            .collect(),
    }
}

/// `c`'s policy, when it compiles (a set of a credential name does not).
fn compile_case(c: &Case) -> Option<envpolicy::Compiled> {
    envpolicy::load::compile_text(&policy_text(c), std::path::Path::new("p.toml")).ok()
}

/// The child's environment after every pass (`None`: the exec is refused),
/// and after the user pass alone, through `pipeline::decide` in an arena of
/// the plan's bytes and `slack` more.
type PipelineRun = (Option<Vec<Vec<u8>>>, Option<Vec<Vec<u8>>>);

fn pipeline_run(
    user: &envpolicy::Policy<'_>,
    managed: Option<&envpolicy::Policy<'_>>,
    env: &[Vec<u8>],
    argv: &[Vec<u8>],
    slack: usize,
) -> PipelineRun {
    use envpolicy::layer::Layer;
    use envpolicy::pipeline::{self, Bump, Decided, Exec, Fate, Pass, Plan, Short, Sizes};
    let user_pass = Pass {
        layer: Layer::User,
        policy: user,
        mode: user.settings().mode,
        files: Default::default(),
        sticky: Default::default(),
        secrets: &[],
    };
    let managed_pass = managed.map(|p| Pass {
        layer: Layer::Managed,
        policy: p,
        mode: p.settings().mode,
        files: Default::default(),
        sticky: Default::default(),
        secrets: &[],
    });
    let env_r: Vec<&[u8]> = env.iter().map(Vec::as_slice).collect();
    let argv_r: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
    let exec = Exec::new(b"/usr/bin/prog", &argv_r, &env_r, &[]);
    let child_of = |d: Option<&Decided<'_>>, input: &[&[u8]]| -> Vec<Vec<u8>> {
        match d.filter(|d| d.changes()) {
            Some(d) => outcome::child_arrays(d).0,
            None => input.iter().map(|e| e.to_vec()).collect(),
        }
    };
    let mut plan = Plan::first(Sizes::of(&user_pass, &exec), managed.is_some());
    loop {
        let mut buf = vec![0u64; (plan.bytes() + slack) / 8 + 1];
        let arena = Bump::new(&mut buf);
        match pipeline::decide(exec, &user_pass, managed_pass.as_ref(), plan, &arena) {
            Ok(o) => {
                let after_user = child_of(Some(&o.user), &env_r);
                let child = match o.fate() {
                    Fate::Refused { .. } => None,
                    Fate::Runs { .. } => Some(child_of(o.child(), &env_r)),
                };
                return (child, Some(after_user));
            }
            Err(Short::Grow(p)) => plan = p,
            Err(Short::NoRoom) => panic!("an arena of the plan's bytes had no room"),
        }
    }
}
