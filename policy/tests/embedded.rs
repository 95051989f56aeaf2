//! The property of docs/adr/0017-values-hold-no-credential.md, with no list of
//! forms: a credential value (a by-name credential's random bytes, or a token
//! of a random shape) placed at a random offset inside another variable's value,
//! an argument or the program's path, between random neighbouring bytes, never
//! reaches the child (environment or argv, unless the exec is refused), and no
//! text the decision produces for people (`why`, names, JSON lines, the
//! redacted program) holds it.
//!
//! The front ends only assemble arrays around this decision and write its
//! messages through `shown::redact`; tests/tests/values_property.rs runs the
//! same forms through the real shim and envwrap.

mod common;
use common::*;
use envpolicy::outcome;
use proptest::prelude::*;

/// Bytes that may stand next to a copy: word bytes (which glue to a token),
/// separators, quotes, high bytes.
fn neighbour() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        prop_oneof![
            proptest::sample::select(b"aZ9_-./: =\"'$@".to_vec()),
            any::<u8>().prop_filter("no NUL", |b| *b != 0),
        ],
        0..6,
    )
}

/// A credential: a name the built-in default refuses, its value, and the bytes
/// of it that must reach no child (the value; a URL's password).
fn credential() -> impl Strategy<Value = (&'static str, Vec<u8>, Vec<u8>)> {
    let by_name = (8usize..40).prop_flat_map(|n| {
        proptest::collection::vec(
            proptest::sample::select(b"abcdefghijklmnopqrstuvwxyz0123456789-".to_vec()),
            n,
        )
        .prop_map(|v| ("JIRA_API_TOKEN", v.clone(), v))
    });
    prop_oneof![
        by_name,
        token().prop_map(|v| ("INNOCENT", v.clone(), v)),
        alnum(8..20).prop_map(|pw| {
            let url = [b"https://user:".as_slice(), &pw, b"@example.invalid/"].concat();
            ("PROXY_URL", url, pw)
        }),
    ]
}

fn alnum(len: std::ops::Range<usize>) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        proptest::sample::select(
            b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".to_vec(),
        ),
        len,
    )
}

/// A token of every shape the built-in default knows, with a random body.
fn token() -> impl Strategy<Value = Vec<u8>> {
    let with = |prefix: &'static [u8], len: usize| {
        alnum(len..len + 1).prop_map(move |v| [prefix, &v].concat())
    };
    prop_oneof![
        with(b"ghp_", 36),
        with(b"github_pat_", 22),
        with(b"glpat-", 20),
        with(b"xoxb-", 24),
        with(b"AKIA", 16).prop_map(|v| v.to_ascii_uppercase()),
        with(b"AIza", 35),
        with(b"sk-ant-", 40),
        with(b"sk-proj-", 40),
        (alnum(10..20), alnum(10..20), alnum(10..20))
            .prop_map(|(a, b, c)| { [b"eyJ".as_slice(), &a, b".eyJ", &b, b".", &c].concat() }),
    ]
}

/// Where the copy goes.
#[derive(Debug, Clone, Copy)]
enum Place {
    Value,
    Argument,
    Program,
}

fn place() -> impl Strategy<Value = Place> {
    prop_oneof![
        Just(Place::Value),
        Just(Place::Argument),
        Just(Place::Program)
    ]
}

fn holds(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn an_embedded_credential_reaches_no_child_and_no_message(
        (name, value, secret) in credential(),
        before in neighbour(),
        after in neighbour(),
        place in place(),
        other_policy in any::<bool>(),
        set in any::<bool>(),
    ) {
        let policy_text = if other_policy {
            "version = 1\nbase = \"all\"\nkeep = [\"CARRIER\"]\n"
        } else {
            "version = 1\n"
        };
        let c = compile(policy_text);
        let policy = c.policy();
        let copy = [before.as_slice(), &value, &after].concat();
        let mut env: Vec<Vec<u8>> = vec![b"PATH=/usr/bin:/bin".to_vec()];
        // A shaped value is found by its shape alone, its own variable unset;
        // a by-name one only when its variable is set.
        if set || name == "JIRA_API_TOKEN" {
            env.push([name.as_bytes(), b"=", &value].concat());
        }
        let mut program = b"/bin/true".to_vec();
        let mut argv = vec![program.clone()];
        match place {
            Place::Value => env.push([b"CARRIER=".as_slice(), &copy].concat()),
            Place::Argument => argv.push(copy.clone()),
            Place::Program => {
                program = [b"/opt/".as_slice(), &copy, b"/prog"].concat();
                argv[0] = program.clone();
            }
        }
        let files = outcome::read_env_files(&policy);
        let d = outcome::decide(&policy, &program, &argv, &env, &[], &files);
        let refused = d.refusal.is_some();
        for e in &d.env {
            prop_assert!(!holds(e, &secret), "the child's environment holds it");
        }
        if !refused {
            for a in &d.argv {
                prop_assert!(!holds(a, &secret), "the child's argv holds it");
            }
        }
        let shown = outcome::redacted(&policy, &program, &[&env]);
        prop_assert!(!holds(shown.as_bytes(), &secret), "the program as shown holds it");
        for ch in &d.changes {
            let by = outcome::Recorder { tool: "envpolicy", user_source: policy.source() };
            let line = outcome::json_line(&by, d.pass_mode(ch.layer), shown.as_bytes(), ch);
            prop_assert!(!holds(ch.why.as_bytes(), &secret), "a why holds it");
            prop_assert!(!holds(line.as_bytes(), &secret), "a JSON line holds it");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The same property when the program hands its child an environment of
    /// its own (`env -i CARRIER="Bearer $TOKEN" prog`, or the managed layer's
    /// pass over what the user layer decided): the credential is in the
    /// caller's environment only, and its copy, raw or in base64, is refused.
    #[test]
    fn a_copy_of_a_callers_credential_in_a_new_environment_reaches_no_child(
        (name, value, secret) in credential(),
        before in neighbour(),
        after in neighbour(),
        base64 in any::<bool>(),
    ) {
        let c = compile("version = 1\nbase = \"all\"\nkeep = [\"CARRIER\"]\n");
        let policy = c.policy();
        let carried = if base64 {
            common::base64(&value, false, true).into_bytes()
        } else {
            value.clone()
        };
        let copy = [before.as_slice(), &carried, &after].concat();
        let parent: Vec<Vec<u8>> = vec![
            b"PATH=/usr/bin:/bin".to_vec(),
            [name.as_bytes(), b"=", &value].concat(),
        ];
        let env: Vec<Vec<u8>> = vec![[b"CARRIER=".as_slice(), &copy].concat()];
        let argv = vec![b"/bin/true".to_vec()];
        let files = outcome::read_env_files(&policy);
        let d = outcome::decide(&policy, b"/bin/true", &argv, &env, &parent, &files);
        for e in &d.env {
            prop_assert!(!holds(e, &secret), "the child's environment holds it");
            prop_assert!(!holds(e, &carried), "the child's environment holds its copy");
        }
    }
}
