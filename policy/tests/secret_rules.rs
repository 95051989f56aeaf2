//! `[[secret]]`: what the compile accepts, and the decision's rule 6b and
//! `deny_args`, as every front end gets them from the core
//! (docs/adr/0019-secrets-delivered-at-exec.md). The values here are fakes;
//! no assertion prints one.

mod common;

use common::{bytes, compile, get, names};
use envpolicy::argv::{ArgAction, ArgRule};
use envpolicy::decide::{Action, Rule};
use envpolicy::outcome::{self, Decision, Sticky};

const POLICY: &str = r#"
version = 1
[[secret]]
name = "GH_TOKEN"
from = "file:/nonexistent/gh"
program = "/usr/bin/gh"
deny_args = [["auth", "token"], ["auth", "status", "--show-token"]]
"#;

/// A fake token: the digits and the alphabet, never a real one.
const VALUE: &str = "ghp_FAKE0123456789abcdefghijklmnopqrstuv";
/// A fake value of no token shape: only the copies rule can find it.
const PLAIN: &str = "plain-fake-secret-0123456789";

/// Decide for `program` with `args`, `env`, and `value` read for secret 0.
fn deliver(
    policy: &str,
    program: &str,
    args: &[&str],
    env: &[&str],
    value: Option<&str>,
) -> Decision {
    let c = compile(policy);
    let p = c.policy();
    let mut argv = vec![program.as_bytes().to_vec()];
    argv.extend(bytes(args));
    let secrets = [value.map(|v| v.as_bytes().to_vec())];
    delivering(
        &p,
        program.as_bytes(),
        &argv,
        &bytes(env),
        Sticky::default(),
        &secrets,
    )
}

fn holds(d: &Decision, name: &str, value: &str) -> bool {
    get(d, name).as_deref() == Some(value)
}

#[test]
fn a_matching_program_gets_the_value_read_for_it() {
    let d = deliver(
        POLICY,
        "/usr/bin/gh",
        &["pr", "list"],
        &["PATH=/bin"],
        Some(VALUE),
    );
    assert!(
        holds(&d, "GH_TOKEN", VALUE),
        "gh did not get its secret: {:?}",
        names(&d)
    );
    assert!(d.refusal.is_none());
    let c = d
        .changes
        .iter()
        .find(|c| c.name.as_deref() == Some("GH_TOKEN"))
        .expect("a change");
    assert!(c.why.contains("file:/nonexistent/gh"), "{}", c.why);
    assert!(!c.why.contains(VALUE));
}

#[test]
fn another_program_gets_nothing_even_if_a_value_is_passed() {
    let d = deliver(POLICY, "/usr/bin/env", &[], &["PATH=/bin"], Some(VALUE));
    assert!(!names(&d).contains(&"GH_TOKEN".to_string()));
}

#[test]
fn an_inherited_copy_of_the_name_is_refused_at_every_other_program() {
    let d = deliver(POLICY, "env", &[], &["GH_TOKEN=inherited-value-123"], None);
    assert!(!names(&d).contains(&"GH_TOKEN".to_string()));
    assert_eq!(d.env_verdicts[0].action, Action::Refuse);
}

#[test]
fn a_delivered_value_replaces_an_inherited_one() {
    let d = deliver(
        POLICY,
        "/usr/bin/gh",
        &[],
        &["GH_TOKEN=forged-by-a-parent-1"],
        Some(VALUE),
    );
    assert!(holds(&d, "GH_TOKEN", VALUE));
    assert_eq!(
        d.env.iter().filter(|e| e.starts_with(b"GH_TOKEN=")).count(),
        1
    );
}

#[test]
fn an_inherited_entry_of_the_same_value_is_replaced_quietly() {
    // gh running gh: the first one's environment holds the value delivered to it.
    let entry = format!("GH_TOKEN={VALUE}");
    let d = deliver(POLICY, "/usr/bin/gh", &[], &[&entry], Some(VALUE));
    assert!(holds(&d, "GH_TOKEN", VALUE));
    assert_eq!(d.env_verdicts[0].action, Action::Replace);
    assert!(!d.changes.iter().any(|c| c.loud), "{:?}", d.changes);
}

#[test]
fn without_a_value_an_inherited_entry_passes_at_a_matching_program_as_a_grant() {
    // What the supervisor sees: the shim below delivered it.
    let d = deliver(
        POLICY,
        "/usr/bin/gh",
        &[],
        &["GH_TOKEN=delivered-below-12"],
        None,
    );
    assert!(holds(&d, "GH_TOKEN", "delivered-below-12"));
    assert!(matches!(d.env_verdicts[0].rule, Rule::Grant(_)));
}

#[test]
fn an_entry_holding_the_delivered_value_is_refused_raw_or_in_base64() {
    let b64 = {
        let out = std::process::Command::new("base64")
            .arg("-w0")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin
                    .take()
                    .unwrap()
                    .write_all(format!("x-access-token:{PLAIN}").as_bytes())?;
                c.wait_with_output()
            })
            .expect("coreutils base64");
        String::from_utf8(out.stdout).unwrap()
    };
    let raw = format!("HDR=Bearer {PLAIN}");
    let encoded = format!("AUTH=basic {b64}");
    let d = deliver(
        POLICY,
        "/usr/bin/gh",
        &[],
        &[&raw, &encoded, "OK=1"],
        Some(PLAIN),
    );
    assert_eq!(
        names(&d)
            .iter()
            .filter(|n| *n == "HDR" || *n == "AUTH")
            .count(),
        0,
        "{:?}",
        names(&d)
    );
    assert!(matches!(d.env_verdicts[0].rule, Rule::SecretValue(0)));
    assert!(matches!(d.env_verdicts[1].rule, Rule::SecretValue(0)));
    assert!(names(&d).contains(&"OK".to_string()));
}

#[test]
fn an_argument_holding_the_delivered_value_refuses_the_exec() {
    let arg = format!("--header=Authorization: token {VALUE}");
    let d = deliver(POLICY, "/usr/bin/gh", &["api", &arg], &[], Some(VALUE));
    let r = d.refusal.as_ref().expect("refused");
    assert!(r.why.contains("secret GH_TOKEN"), "{}", r.why);
    assert!(!r.why.contains(VALUE));
}

#[test]
fn deny_args_refuse_the_words_in_order_with_gaps() {
    for args in [
        &["auth", "token"][..],
        &["auth", "--hostname", "h", "token"],
        &["auth", "status", "--show-token"],
    ] {
        let d = deliver(POLICY, "/usr/bin/gh", args, &[], Some(VALUE));
        let r = d
            .refusal
            .as_ref()
            .unwrap_or_else(|| panic!("gh {args:?} was not refused"));
        assert!(matches!(
            r.rule,
            outcome::ChangeRule::Arg(ArgRule::DenyArgs { secret: 0, .. })
        ));
        assert!(r.why.contains("deny_args"), "{}", r.why);
    }
    for args in [&["token", "auth"][..], &["pr", "list"], &["auth", "status"]] {
        let d = deliver(POLICY, "/usr/bin/gh", args, &[], Some(VALUE));
        assert!(d.refusal.is_none(), "gh {args:?} was refused");
    }
}

#[test]
fn deny_args_refuse_whatever_argv_secrets_says_and_only_for_the_secrets_programs() {
    let allow = format!("{POLICY}\n[argv]\nsecrets = \"allow\"\n");
    let d = deliver(&allow, "/usr/bin/gh", &["auth", "token"], &[], None);
    let (i, v) = d
        .argv_verdicts
        .iter()
        .enumerate()
        .find(|(_, v)| v.action == ArgAction::Refuse)
        .expect("refused");
    assert_eq!(i, 2, "the argument that completes the list");
    assert!(matches!(v.rule, ArgRule::DenyArgs { .. }));
    let d = deliver(POLICY, "/usr/bin/git", &["auth", "token"], &[], None);
    assert!(d.refusal.is_none());
}

/// Compile `policy`; the error's message.
fn compile_error(policy: &str) -> String {
    match envpolicy::load::compile_text(policy, std::path::Path::new("test.toml")) {
        Ok(_) => panic!("compiled:\n{policy}"),
        Err(e) => e.to_string(),
    }
}

fn secret(name: &str, from: &str) -> String {
    format!("version = 1\n[[secret]]\nname = \"{name}\"\nfrom = \"{from}\"\nprogram = \"/usr/bin/gh\"\n")
}

#[test]
fn the_compile_refuses_what_cannot_be_a_secret() {
    for (policy, says) in [
        (secret("GH_*", "file:/x"), "exactly"),
        (secret("LD_PRELOAD", "file:/x"), "belongs to the shim"),
        (secret("ENVSHIM_POLICY", "file:/x"), "belongs to the shim"),
        (secret("GH_TOKEN", "/x"), "starts with `file:`"),
        (secret("GH_TOKEN", "keyring:user:"), "starts with `file:`"),
        (secret("GH_TOKEN", "credential:a/b"), "without `/`"),
        (
            format!(
                "{}{}",
                secret("GH_TOKEN", "file:/x"),
                "[[secret]]\nname = \"GH_TOKEN\"\nfrom = \"file:/y\"\nprogram = \"/usr/bin/git\"\n"
            ),
            "twice",
        ),
        (
            format!(
                "{}{}",
                secret("GH_TOKEN", "file:/x"),
                "[[grant]]\nname = \"GH_TOKEN\"\nprogram = \"git\"\n"
            ),
            "its own `program`",
        ),
        (
            format!(
                "{}{}",
                secret("MY_VALUE", "file:/x"),
                "[set]\nMY_VALUE = \"1\"\n"
            ),
            "credential name",
        ),
        (
            format!("{}deny_args = [[]]\n", secret("GH_TOKEN", "file:/x")),
            "one or more words",
        ),
    ] {
        let e = compile_error(&policy);
        assert!(e.contains(says), "expected {says:?} in: {e}");
    }
}

#[test]
fn a_pasted_token_in_from_is_not_shown_by_the_error() {
    let e = compile_error(&secret("GH_TOKEN", VALUE));
    assert!(!e.contains(VALUE), "the error shows the value");
}

#[test]
fn at_most_sixteen_secrets() {
    let mut p = String::from("version = 1\n");
    for i in 0..17 {
        p += &format!("[[secret]]\nname = \"S{i}\"\nfrom = \"file:/s{i}\"\nprogram = \"/bin/p\"\n");
    }
    assert!(compile_error(&p).contains("at most 16"));
}

#[test]
fn a_secret_name_is_refused_even_without_the_builtin_credential_list() {
    let p = format!(
        "{}[credentials]\nbuiltin = false\n",
        secret("PLAIN_NAME", "file:/x")
    );
    let c = compile(&p);
    let d = common::decide(&c, "env", &[], &["PLAIN_NAME=some-value-here"]);
    assert_eq!(d.env_verdicts[0].action, Action::Refuse);
}

/// `env` under POLICY with `keep` added: at `/usr/bin/gh`, which gets the
/// secret, its first `hooks` entries are stripped as hooks (`secret.hooks`)
/// and the rest kept, with the secret after them; at `/usr/bin/env`, which does
/// not, every entry passes as before. The decision at gh.
fn strips_hooks_for_the_secret_only(keep: &str, env: &[&str], hooks: usize) -> Decision {
    let kept = POLICY.replacen("version = 1\n", &format!("version = 1\nkeep = {keep}\n"), 1);
    let name = |e: &&str| e.split('=').next().unwrap_or_default().to_string();
    let d = deliver(&kept, "/usr/bin/gh", &[], env, Some(VALUE));
    let mut rest: Vec<String> = env[hooks..].iter().map(name).collect();
    rest.push("GH_TOKEN".to_string());
    assert_eq!(names(&d), rest);
    for i in 0..hooks {
        assert!(
            matches!(d.env_verdicts[i].rule, Rule::SecretHooks(0)),
            "{:?}",
            d.env_verdicts[i]
        );
    }
    let all: Vec<String> = env.iter().map(name).collect();
    assert_eq!(
        names(&deliver(&kept, "/usr/bin/env", &[], env, Some(VALUE))),
        all
    );
    d
}

#[test]
fn a_program_that_gets_a_secret_runs_no_hook_its_caller_chose() {
    let env = [
        "LD_PRELOAD=/tmp/x.so",
        "LD_LIBRARY_PATH=/tmp",
        "PYTHONSTARTUP=/tmp/s.py",
        "OK=1",
    ];
    // Not delivering, the keeps keep them, and LD_PRELOAD stays, as before.
    let d = strips_hooks_for_the_secret_only(r#"["LD_LIBRARY_PATH", "PYTHONSTARTUP"]"#, &env, 3);
    assert!(holds(&d, "GH_TOKEN", VALUE));
}

/// An interpreter's search path is ordinary at any other exec, and stripped
/// at one that delivers: `PYTHONPATH=/tmp/evil` with a `sitecustomize.py`
/// there would run the caller's code in a Python program that gets the secret.
#[test]
fn a_program_that_gets_a_secret_runs_without_interpreter_search_paths() {
    let env = [
        "PYTHONPATH=/tmp/evil",
        "PERL5LIB=/tmp/evil",
        "NODE_PATH=/tmp/evil",
        "PYTHONPYCACHEPREFIX=/tmp/evil-pyc",
        "OK=1",
    ];
    strips_hooks_for_the_secret_only(
        r#"["PYTHONPATH", "PERL5LIB", "NODE_PATH", "PYTHONPYCACHEPREFIX"]"#,
        &env,
        4,
    );
}

#[test]
fn under_rule_8_the_shim_alone_is_preloaded_into_a_program_that_gets_a_secret() {
    let c = compile(POLICY);
    let p = c.policy();
    let env = bytes(&["LD_PRELOAD=/tmp/x.so:/lib/libenvshim.so"]);
    let sticky = Sticky {
        preload: Some(b"/lib/libenvshim.so"),
        ..Sticky::default()
    };
    let argv = [b"/usr/bin/gh".to_vec()];
    let secrets = [Some(VALUE.as_bytes().to_vec())];
    let d = delivering(&p, b"/usr/bin/gh", &argv, &env, sticky, &secrets);
    assert_eq!(get(&d, "LD_PRELOAD").as_deref(), Some("/lib/libenvshim.so"));
}

/// One pass of `p` that delivers `secrets` (rule 6b), as a front end that read
/// them decides.
fn delivering(
    p: &envpolicy::Policy<'_>,
    program: &[u8],
    argv: &[Vec<u8>],
    env: &[Vec<u8>],
    sticky: Sticky<'_>,
    secrets: &[Option<Vec<u8>>],
) -> Decision {
    let pass = outcome::Pass {
        policy: p,
        env_files: &[],
        secrets,
    };
    outcome::Layers::one(pass, sticky).decide(program, argv, env, &[])
}
