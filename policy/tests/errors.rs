//! Bad policy files: every one gets a clear error with file:line:column where a
//! position exists, never a panic, and never a quoted value.

mod common;
use common::*;
use envpolicy::load;

fn err(text: &str) -> String {
    load::compile_text(text, std::path::Path::new("p.toml"))
        .expect_err("must fail")
        .to_string()
}

#[test]
fn unknown_keys_name_file_line_and_column() {
    assert_eq!(
        err("version = 1\nkep = [\"A\"]\n")
            .split(", expected")
            .next()
            .unwrap(),
        "p.toml:2:1: unknown field `kep`"
    );
    assert!(err("version = 1\n[program.tmux]\nkeeep = []\n")
        .starts_with("p.toml:3:1: unknown field `keeep`"));
    assert!(err("version = 1\n[credentials]\nnamez = []\n")
        .starts_with("p.toml:3:1: unknown field `namez`"));
}

#[test]
fn wrong_types_say_what_was_expected() {
    let e = err("version = 1\nkeep = \"A\"\n");
    assert!(
        e.starts_with(
            "p.toml:2:8: invalid type: string \"…\", expected an array of patterns, such as"
        ),
        "{e}"
    );
    let e = err("version = 1\nbase = \"some\"\n");
    assert!(
        e.starts_with("p.toml:2:8: unknown value, expected one of `none`, `floor`, `all`"),
        "{e}"
    );
    let e = err("version = \"1\"\n");
    assert!(e.starts_with("p.toml:1:11: invalid type: string"), "{e}");
    // A value pasted in the wrong place is never echoed.
    let e = err("version = 1\nsticky = \"hunter2-secret\"\n");
    assert!(
        e.starts_with("p.toml:2:10: invalid type: string \"…\", expected a boolean"),
        "{e}"
    );
}

#[test]
fn version_is_required_and_checked() {
    assert!(err("").contains("missing field `version`"), "{}", err(""));
    assert!(err("keep = []\n").contains("missing field `version`"));
    assert_eq!(
        err("version = 2\n"),
        "p.toml:1:11: unsupported policy version 2: this envshim reads version 1"
    );
}

#[test]
fn not_toml_and_bad_patterns() {
    assert!(
        err("version = 1\nkeep = [\n").starts_with("p.toml:3:1:"),
        "{}",
        err("version = 1\nkeep = [\n")
    );
    assert!(err("version = 1\nkeep = [\"A=B\"]\n")
        .starts_with("p.toml:2:9: invalid pattern: a pattern cannot contain '='"));
    assert!(err("version = 1\nkeep = [\"\"]\n").starts_with("p.toml:2:9: invalid pattern"));
    assert!(err("version = 1\n[credentials]\nshapes = [\"nope\"]\n")
        .contains("unknown token shape `nope`"));
    assert!(
        err("version = 1\n[[grant]]\nname = \"*_TOKEN\"\nprogram = \"docker\"\n")
            .starts_with("p.toml:3:8: a grant names one variable exactly")
    );
    assert!(err("version = 1\n[program.x]\nmatch = [\"=\"]\n").contains("invalid pattern"));
}

#[test]
fn too_many_program_sections() {
    let mut text = String::from("version = 1\n");
    for i in 0..65 {
        text.push_str(&format!("[program.p{i}]\n"));
    }
    assert!(err(&text).contains("at most 64"));
}

#[test]
fn files_that_cannot_be_policies() {
    let dir = Dir::new("errors");
    let missing = load::load(&dir.0.join("missing.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        missing.ends_with("missing.toml: cannot read policy: No such file or directory"),
        "{missing}"
    );
    let is_dir = load::load(&dir.0).unwrap_err().to_string();
    assert!(
        is_dir.ends_with(": cannot read policy: it is a directory"),
        "{is_dir}"
    );
    let p = dir.0.join("latin1.toml");
    std::fs::write(&p, b"version = 1\n# caf\xe9\n").unwrap();
    let e = load::load(&p).unwrap_err().to_string();
    assert!(
        e.ends_with("latin1.toml:2:6: policy file is not UTF-8"),
        "{e}"
    );
    let p = dir.0.join("huge.toml");
    let mut big = String::from("version = 1\n");
    while big.len() < 10 << 20 {
        big.push_str("# padding padding padding padding padding padding padding padding\n");
    }
    std::fs::write(&p, big).unwrap();
    let e = load::load(&p).unwrap_err().to_string();
    assert!(
        e.ends_with("policy file is larger than 1048576 bytes"),
        "{e}"
    );
    let p = dir.write("empty.toml", "");
    assert!(load::load(&p)
        .unwrap_err()
        .to_string()
        .contains("missing field `version`"));
    use std::os::unix::fs::symlink;
    let a = dir.0.join("loop-a.toml");
    let b = dir.0.join("loop-b.toml");
    symlink(&b, &a).unwrap();
    symlink(&a, &b).unwrap();
    let e = load::load(&a).unwrap_err().to_string();
    assert!(e.contains("cannot read policy"), "{e}");
}

#[test]
fn an_unreadable_optional_import_warns_and_a_required_one_fails() {
    let dir = Dir::new("imports");
    let c = dir.compile("version = 1\n[[import.env_file]]\npath = \"nope.env\"\n");
    assert_eq!(c.warnings.len(), 1);
    assert!(c.warnings[0]
        .message
        .contains("nope.env not read (No such file or directory)"));
    let p = dir.write(
        "req.toml",
        "version = 1\n[[import.env_file]]\npath = \"nope.env\"\nrequired = true\n",
    );
    let e = load::load(&p).unwrap_err().to_string();
    assert!(e.contains("req.toml:3:8: cannot read env file"), "{e}");
    let p = dir.write(
        "badcfg.toml",
        "version = 1\n[[import.config]]\npath = \"c.json\"\n",
    );
    dir.write("c.json", "{\"aTokenEnv\": [1, }");
    let e = load::load(&p).unwrap_err().to_string();
    assert!(
        e.contains("imported config") && e.contains("c.json:1:"),
        "{e}"
    );
}

#[test]
fn lookup_order() {
    use load::{locate_in, Source};
    use std::ffi::OsString;
    let dir = Dir::new("lookup");
    let system = dir.0.join("etc/policy.toml");
    let env = |pairs: Vec<(&'static str, OsString)>| {
        move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
    };
    let explicit = dir.0.join("explicit.toml");
    assert_eq!(
        locate_in(
            Some(&explicit),
            env(vec![("ENVSHIM_POLICY", "/x".into())]),
            &system
        ),
        Source::Explicit(explicit.clone())
    );
    assert_eq!(
        locate_in(None, env(vec![("ENVSHIM_POLICY", "/x".into())]), &system),
        Source::EnvVar("/x".into())
    );
    assert_eq!(
        locate_in(
            None,
            env(vec![("XDG_CONFIG_HOME", dir.0.clone().into())]),
            &system
        ),
        Source::Builtin
    );
    let user = dir.write("envshim/policy.toml", "version = 1\n");
    assert_eq!(
        locate_in(
            None,
            env(vec![("XDG_CONFIG_HOME", dir.0.clone().into())]),
            &system
        ),
        Source::User(user.clone())
    );
    assert_eq!(
        locate_in(
            None,
            env(vec![("HOME", dir.0.join("nohome").into())]),
            &system
        ),
        Source::Builtin
    );
    dir.write("etc/policy.toml", "version = 1\n");
    assert_eq!(
        locate_in(None, env(vec![]), &system),
        Source::System(system.clone())
    );
    assert_eq!(
        locate_in(
            None,
            env(vec![("XDG_CONFIG_HOME", dir.0.clone().into())]),
            &system
        ),
        Source::User(user.clone())
    );
    // The reserved value names the built-in default: no lookup, even with a user
    // and a system policy there; anything else is a path.
    let builtin = "ENVSHIM_POLICY";
    assert_eq!(
        locate_in(
            None,
            env(vec![
                (builtin, ":builtin".into()),
                ("XDG_CONFIG_HOME", dir.0.clone().into())
            ]),
            &system
        ),
        Source::EnvBuiltin
    );
    assert_eq!(Source::EnvBuiltin.path(), None);
    assert_eq!(
        Source::EnvBuiltin.step(),
        envpolicy::lookup::Step::EnvBuiltin
    );
    assert_eq!(
        locate_in(None, env(vec![(builtin, "./:builtin".into())]), &system),
        Source::EnvVar("./:builtin".into())
    );
    assert!(load::load_source(&Source::EnvBuiltin).is_ok());
}

#[test]
fn the_builtin_policies_compile_and_do_what_they_say() {
    let d = load::builtin_default();
    let out = envpolicy::outcome::decide(
        &d.policy(),
        b"/bin/true",
        &[],
        &bytes(&["EDITOR=vi", "GH_TOKEN=abcdefghijk"]),
        &[],
        &[],
    );
    assert_eq!(out.env, bytes(&["EDITOR=vi"]));
    let f = load::builtin_floor();
    let out = envpolicy::outcome::decide(
        &f.policy(),
        b"/bin/true",
        &[],
        &bytes(&["EDITOR=vi", "PATH=/bin"]),
        &[],
        &[],
    );
    assert_eq!(out.env, bytes(&["PATH=/bin"]));
}

#[test]
fn corrupt_compiled_bytes_are_rejected_not_trusted() {
    let c = load::builtin_default();
    let good = c.bytes().to_vec();
    assert!(envpolicy::Policy::from_bytes(&good).is_ok());
    for cut in [0, 8, 63, good.len() / 2, good.len() - 1] {
        assert!(
            envpolicy::Policy::from_bytes(&good[..cut]).is_err(),
            "cut at {cut}"
        );
    }
    // Flip every byte in turn: never a panic; either rejected or still readable.
    for i in 0..good.len() {
        let mut b = good.clone();
        b[i] ^= 0xff;
        if let Ok(p) = envpolicy::Policy::from_bytes(&b) {
            let _ = envpolicy::outcome::decide(
                &p,
                b"/bin/true",
                &[],
                &bytes(&["A=1", "GH_TOKEN=x"]),
                &[],
                &[],
            );
        }
    }
}

/// A parser's message can quote what it read, and span lines: the error is one
/// line, and a token pasted where a key belongs is described, never printed.
#[test]
fn a_parser_message_is_one_line_and_never_quotes_a_token() {
    let token = "ghp_AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHHIIII";
    let e = err(&format!("version = 1\n{token} = 1\n"));
    assert!(!e.contains("ghp_"), "{e}");
    assert!(
        e.starts_with("p.toml:2:1: unknown field `<40 bytes, github token>`"),
        "{e}"
    );
    let e = err("version = 1\nstrip = [\n");
    assert!(!e.contains('\n'), "{e:?}");
    assert!(
        e.starts_with("p.toml:3:1: invalid array; expected `]`"),
        "{e}"
    );
}

/// A misspelt key gets the key meant (issue 51, 5), after the list of them.
#[test]
fn a_misspelt_key_is_suggested() {
    let e = envpolicy::load::compile_text(
        "version = 1\nbse = \"all\"\n",
        std::path::Path::new("p.toml"),
    )
    .expect_err("an unknown key is an error");
    let text = e.to_string();
    assert!(text.contains("unknown field `bse`"), "{text}");
    assert!(text.ends_with("(did you mean `base`?)"), "{text}");
    let e = envpolicy::load::compile_text(
        "version = 1\n[credentials]\nshaps = false\n",
        std::path::Path::new("p.toml"),
    )
    .expect_err("an unknown key is an error");
    assert!(e.to_string().contains("(did you mean `shapes`?)"), "{e}");
}

/// A misspelt value of a word list gets the word meant; the value typed is
/// not repeated (it could be a secret pasted in the wrong place).
#[test]
fn a_misspelt_value_is_suggested_and_not_repeated() {
    for (text, meant) in [
        ("version = 1\nbase = \"flor\"\n", "floor"),
        ("version = 1\nmode = \"audt\"\n", "audit"),
    ] {
        let e = envpolicy::load::compile_text(text, std::path::Path::new("p.toml"))
            .expect_err("an unknown value is an error");
        let shown = e.to_string();
        assert!(
            shown.ends_with(&format!("(did you mean `{meant}`?)")),
            "{shown}"
        );
        assert!(
            !shown.contains("flor`") && !shown.contains("audt"),
            "{shown}"
        );
    }
}
