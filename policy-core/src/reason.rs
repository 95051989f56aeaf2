//! Why a rule decided an entry, in words, as every front end says it: the
//! reason after the colon of a loud line ([`crate::loud`]), the `why` of a
//! record and of `explain`.
//!
//! ```text
//! credential pattern `GH_TOKEN` (built-in)
//! keep pattern `AWS_*` in [program.aws] at /home/u/p.toml:7:9
//! granted to `/usr/bin/gh` at /home/u/p.toml:12
//! value looks like a github token
//! ```
//!
//! Before this module the shim wrote the rule's id (`credential.name`) and
//! envwrap a sentence of its own, so one exec was explained two ways. The
//! sentence is written here once, as pieces ([`Piece`]): the words it names (a
//! pattern, a program, a path, a variable's name) go out as [`Piece::Word`], for
//! the front end to show or describe as [`crate::shown::word`] says, and a line
//! number is written from a buffer on the stack. Nothing allocates or formats,
//! so the shim says it too.

use crate::argv::{ArgAction, ArgRule, ArgVerdict, ValueSource};
use crate::compiled::{Class, Policy, GLOBAL};
use crate::decide::Rule;
use crate::shown::Piece;

/// Writes why `rule` decided an entry of `policy`. `env_name(i)` is the name of
/// the exec's entry `i` (for a value that copies another entry's).
pub fn pieces<'e>(
    policy: &Policy<'_>,
    rule: Rule,
    env_name: impl Fn(u32) -> Option<&'e [u8]>,
    out: &mut dyn FnMut(Piece<'_>),
) {
    let text = |out: &mut dyn FnMut(Piece<'_>), t: &str| out(Piece::Text(t.as_bytes()));
    match rule {
        Rule::NoEquals => text(out, "entry without '='"),
        Rule::EmptyName => text(out, "entry with an empty name"),
        Rule::Duplicate(first) => {
            text(out, "later copy of a name; the first copy (entry ");
            number(first, out);
            text(out, ") decides");
        }
        Rule::BaseAll => text(out, "base = \"all\""),
        Rule::BaseNone => text(out, "not admitted by the base"),
        Rule::OutsideFloor => text(out, "not in the floor (base = \"floor\")"),
        Rule::UnsafeValue(p) => {
            pattern(policy, p, out);
            text(out, ": value holds '/' or '%'");
        }
        Rule::Floor(p)
        | Rule::Keep(p)
        | Rule::Strip(p)
        | Rule::UnsafeName(p)
        | Rule::CredentialName(p) => pattern(policy, p, out),
        Rule::CredentialShape(s) => {
            text(out, "value looks like ");
            text(out, s.describe_with_article());
        }
        Rule::CredentialNameShape(s) => {
            text(out, "name looks like ");
            text(out, s.describe_with_article());
        }
        Rule::CredentialValue(i) => {
            text(out, "value holds the value of credential ");
            match env_name(i) {
                Some(name) => out(Piece::Word(name)),
                None => {
                    text(out, "entry ");
                    number(i, out);
                }
            }
        }
        Rule::CredentialParentValue(_) => text(
            out,
            "value holds the value of a credential of another name in the calling process's environment",
        ),
        Rule::Grant(g) => match policy.grant(g) {
            Some(r) => {
                text(out, "granted to `");
                out(Piece::Word(policy.str(r.program)));
                text(out, "` at ");
                at(policy, r.line, None, out);
            }
            None => text(out, "grant"),
        },
        Rule::FileValue(k) => match file_of_keep(policy, k) {
            Some(path) => {
                text(out, "value read from env file ");
                out(Piece::Word(path));
            }
            None => text(out, "value read from an env file"),
        },
        Rule::FileName(f) => match policy.env_file(f) {
            Some(r) => {
                text(out, "declared by env file ");
                out(Piece::Word(policy.str(r.path)));
                text(out, ", as it is now");
            }
            None => text(out, "declared by an env file"),
        },
        Rule::FileValueRefused(k) => match file_of_keep(policy, k) {
            Some(path) => {
                text(out, "env file ");
                out(Piece::Word(path));
                text(
                    out,
                    " now holds a value the policy refuses; the inherited value is not passed either",
                );
            }
            None => text(out, "an env file now holds a value the policy refuses"),
        },
        Rule::Set(s) => match policy.set(s) {
            Some(r) => {
                text(out, "set at ");
                at(policy, r.line, None, out);
            }
            None => text(out, "set"),
        },
        Rule::Sticky => text(out, "the shim's own variable (sticky)"),
        Rule::Secret(i) => match policy.secret(i) {
            Some(r) => {
                text(out, "secret read from ");
                text(out, r.source_kind.prefix());
                out(Piece::Word(policy.str(r.source)));
                text(out, " for `");
                out(Piece::Word(policy.str(r.program)));
                text(out, "` ([[secret]] at ");
                at(policy, r.line, None, out);
                text(out, ")");
            }
            None => text(out, "a secret"),
        },
        Rule::SecretHooks(i) => {
            text(
                out,
                "a loader or interpreter hook, removed from a program that gets secret ",
            );
            secret_name(policy, i, out);
        }
        Rule::SecretValue(i) => {
            text(out, "value holds the value of secret ");
            secret_name(policy, i, out);
            text(out, ", which this program gets from its source");
        }
    }
}

/// Why an argument holding a credential's `NAME=VALUE` pair (`name`) was
/// changed: dropped as a pair, or, with `whole`, refused because the pair is
/// among other words of one argument.
pub fn pair<'e>(
    policy: &Policy<'_>,
    rule: Rule,
    whole: bool,
    name: &[u8],
    env_name: impl Fn(u32) -> Option<&'e [u8]>,
    out: &mut dyn FnMut(Piece<'_>),
) {
    if whole {
        out(Piece::Text(b"holds the pair "));
        out(Piece::Word(name));
        out(Piece::Text(
            b" among other words, where it cannot be dropped alone: ",
        ));
    } else {
        out(Piece::Text(b"NAME=VALUE pair: "));
    }
    pieces(policy, rule, env_name, out);
}

/// Where the names an argument's reason gives are looked up: the exec's
/// environment, its caller's, and the env files' assignments (file, line).
/// Generic, not `dyn`: a trait object's table of addresses is relocated by
/// the loader in every process that loads the shim
/// (docs/adr/0008-one-writable-segment.md).
pub struct Names<E, P, F> {
    pub env: E,
    pub parent: P,
    pub file: F,
}

/// Why argument `arg` changes as `v` says: what every front end writes in a
/// record's `why` and in `explain`.
pub fn argument<'e, E, P, F>(
    policy: &Policy<'_>,
    v: &ArgVerdict,
    arg: &[u8],
    names: &Names<E, P, F>,
    out: &mut dyn FnMut(Piece<'_>),
) where
    E: Fn(u32) -> Option<&'e [u8]>,
    P: Fn(u32) -> Option<&'e [u8]>,
    F: Fn(u32, u32) -> Option<&'e [u8]>,
{
    let text = |out: &mut dyn FnMut(Piece<'_>), t: &str| out(Piece::Text(t.as_bytes()));
    match v.rule {
        ArgRule::None => {}
        ArgRule::PairFlag => text(out, "the flag of a NAME=VALUE pair that was dropped"),
        ArgRule::Pair {
            rule,
            name_at,
            name_end,
            ..
        } => {
            let name = arg.get(name_at as usize..name_end as usize).unwrap_or(&[]);
            pair(policy, rule, v.action == ArgAction::Refuse, name, &names.env, out);
        }
        ArgRule::Shape(s) => {
            text(out, "holds ");
            text(out, s.describe_with_article());
        }
        ArgRule::DenyArgs { secret, list } => deny_args(policy, secret as u32, list as u32, out),
        ArgRule::Value(ValueSource::Secret(i)) => {
            text(out, "holds the value of secret ");
            secret_name(policy, i, out);
            text(out, ", delivered to this program alone");
        }
        ArgRule::Value(src) => {
            text(out, "holds the value of credential ");
            let name = match src {
                ValueSource::ChildEnv(i) => (names.env)(i),
                ValueSource::ParentEnv(i) => (names.parent)(i),
                ValueSource::EnvFile { file, line } => (names.file)(file, line),
                ValueSource::Secret(_) => None,
            };
            match name {
                Some(name) => out(Piece::Word(name)),
                None => text(out, "?"),
            }
            match src {
                ValueSource::ChildEnv(_) => text(out, " from the child environment"),
                ValueSource::ParentEnv(_) => text(out, " from the parent environment"),
                ValueSource::EnvFile { file, .. } => {
                    text(out, " from env file ");
                    if let Some(r) = policy.env_file(file) {
                        out(Piece::Word(policy.str(r.path)));
                    }
                }
                ValueSource::Secret(_) => text(out, " from "),
            }
        }
    }
}

/// Why `deny_args` list `list` of secret `i` refuses an exec.
fn deny_args(policy: &Policy<'_>, i: u32, list: u32, out: &mut dyn FnMut(Piece<'_>)) {
    let Some(r) = policy.secret(i) else {
        out(Piece::Text(b"a secret's deny_args"));
        return;
    };
    out(Piece::Text(b"completes `"));
    if let Some(words) = crate::secret::deny_lists(policy, &r).nth(list as usize) {
        for (k, w) in words.iter().enumerate() {
            if k > 0 {
                out(Piece::Text(b" "));
            }
            out(Piece::Word(w));
        }
    }
    out(Piece::Text(b"`, which deny_args of secret "));
    out(Piece::Word(policy.str(r.name)));
    out(Piece::Text(
        b" refuses: the program would show the secret ([[secret]] at ",
    ));
    at(policy, r.line, None, out);
    out(Piece::Text(b")"));
}

/// Why a `set` was refused ([`crate::decide::refused_set_names`]).
pub const REFUSED_SET: &str =
    "the set value's ${...} expansion reads a credential or looks like a token";

/// "keep pattern `AWS_*` in [program.aws] at FILE:LINE:COL", or "(built-in)".
fn pattern(policy: &Policy<'_>, idx: u32, out: &mut dyn FnMut(Piece<'_>)) {
    let Some(p) = policy.pattern(idx) else {
        out(Piece::Text(b"unknown pattern"));
        return;
    };
    // Each arm writes its own text: a match that returned the text would be a
    // table of addresses, which the loader relocates in every process that
    // loads the shim (docs/adr/0008-one-writable-segment.md).
    match p.class {
        Class::Keep => out(Piece::Text(b"keep pattern")),
        Class::Strip => out(Piece::Text(b"strip pattern")),
        Class::Credential => out(Piece::Text(b"credential pattern")),
        Class::ImportStrip => out(Piece::Text(b"name declared in an imported env file")),
        Class::ImportCredential => out(Piece::Text(b"credential name imported")),
        Class::PairKeep => out(Piece::Text(b"pairs keep pattern")),
        Class::PairStrip => out(Piece::Text(b"pairs strip pattern")),
        Class::Unsafe => out(Piece::Text(b"unsafe name")),
        Class::Floor => out(Piece::Text(b"floor name")),
        Class::CheckedValue => out(Piece::Text(b"checked value of")),
    }
    out(Piece::Text(b" `"));
    out(Piece::Word(policy.str(p.text)));
    out(Piece::Text(b"`"));
    if let Some(section) = policy.program(p.scope as u32).filter(|_| p.scope != GLOBAL) {
        out(Piece::Text(b" in [program."));
        out(Piece::Word(policy.str(section.name)));
        out(Piece::Text(b"]"));
    }
    if p.line == 0 {
        out(Piece::Text(b" (built-in)"));
    } else {
        out(Piece::Text(b" at "));
        at(policy, p.line, Some(p.col), out);
    }
}

/// "FILE:LINE" or "FILE:LINE:COL" of the policy's source.
fn at(policy: &Policy<'_>, line: u32, col: Option<u32>, out: &mut dyn FnMut(Piece<'_>)) {
    out(Piece::Word(policy.source()));
    out(Piece::Text(b":"));
    number(line, out);
    if let Some(col) = col {
        out(Piece::Text(b":"));
        number(col, out);
    }
}

/// The env file that keep record `k` takes its value from.
fn file_of_keep<'p>(policy: &Policy<'p>, k: u32) -> Option<&'p [u8]> {
    let file = policy.file_keep(k)?.file;
    Some(policy.str(policy.env_file(file)?.path))
}

/// Secret `i`'s name, or "secret I".
fn secret_name(policy: &Policy<'_>, i: u32, out: &mut dyn FnMut(Piece<'_>)) {
    match policy.secret(i) {
        Some(r) => out(Piece::Word(policy.str(r.name))),
        None => {
            out(Piece::Text(b"secret "));
            number(i, out);
        }
    }
}

/// `n` in decimal, from a buffer on the stack ([`crate::shown::decimal`]).
fn number(n: u32, out: &mut dyn FnMut(Piece<'_>)) {
    let mut digits = [0u8; 20];
    out(Piece::Text(crate::shown::decimal(u64::from(n), &mut digits)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_in_decimal() {
        for n in [0, 7, 10, 4_294_967_295] {
            let mut s = std::string::String::new();
            number(n, &mut |p| {
                let (Piece::Text(t) | Piece::Word(t)) = p;
                s.push_str(core::str::from_utf8(t).unwrap());
            });
            assert_eq!(s, std::format!("{n}"));
        }
    }
}
