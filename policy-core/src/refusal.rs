//! The line every front end writes when the policy refuses an exec for one of
//! its arguments or for the program's path, written once:
//!
//! ```text
//! refused to run curl: argument 2 holds the value of JIRA_API_TOKEN (policy /home/u/p.toml)
//! refused to run gh: argument 2 completes `auth token`, which deny_args of secret GH_TOKEN refuses: the program would show the secret (policy /etc/envshim/policy.toml)
//! refused to run <53 bytes, github token>: the program's path holds a github token (the built-in policy)
//! ```
//!
//! libenvshim.so, envwrap's run, its `--supervise` and the Rust API each put
//! their own prefix before it (`envshim: `, `envwrap: `, `library: `), and
//! write it through their redacting writer ([`crate::shown::redact`]); before
//! this module each built it on its own, and they said the same refusal four
//! ways (docs/adr/0021-one-exec-pipeline.md).
//!
//! The line is made of [`Piece`]s, handed to a callback: the shim writes them
//! into a stack buffer between fork and exec, with no allocation and no
//! formatting; the std front ends collect them into a string.

use crate::argv::{source_name, ArgRule, ValueSource};
use crate::compiled::Policy;
use crate::shown::Piece;

/// What refuses the exec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    /// Argument `i` (`argv[i]`).
    Argument(usize),
    /// The path given to exec.
    Program,
}

/// Where the names a line gives come from: the policy, the exec's argv, and the
/// environments and env files a credential's value may have come from, as the
/// argv decision was handed them (`argv::ArgvRequest`).
#[derive(Clone, Copy)]
pub struct Context<'a, 'p> {
    pub policy: &'a Policy<'p>,
    pub args: &'a [&'a [u8]],
    pub env: &'a [&'a [u8]],
    pub parent_env: &'a [&'a [u8]],
    pub env_files: &'a [Option<&'a [u8]>],
}

/// The source a compiled built-in policy names (envpolicy's `load`).
const BUILTIN_SOURCE: &[u8] = b"<built-in>";

/// The line, after the front end's prefix, for the exec of `program` refused
/// at `at` by `rule`, by the policy whose source is `source` (the layer that
/// refused: the managed layer's own file for a managed refusal).
pub fn line(
    cx: &Context<'_, '_>,
    program: &[u8],
    at: At,
    rule: ArgRule,
    source: &[u8],
    out: &mut dyn FnMut(Piece<'_>),
) {
    out(Piece::Text(b"refused to run "));
    out(Piece::Word(crate::bytes::basename(program)));
    let mut digits = [0u8; 20];
    match at {
        At::Argument(i) => {
            out(Piece::Text(b": argument "));
            out(Piece::Text(crate::shown::decimal(i as u64, &mut digits)));
        }
        At::Program => out(Piece::Text(b": the program's path")),
    }
    why(cx, at, rule, out);
    out(Piece::Text(b" ("));
    label(source, out);
    out(Piece::Text(b")"));
}

/// [`line()`] for pass `d`'s refusal `what`, at the exec of `program` (the name
/// every message gives it, `Exec::identity`), with the names looked up where
/// the pass read them: its own input (for the managed pass, the user pass's
/// result, with the caller's environment as its parent) and its env files.
/// Every front end writes a pass's refusal through this, so none looks a
/// managed refusal's names up in the caller's arrays.
pub fn of_pass(
    d: &crate::pipeline::Decided<'_>,
    program: &[u8],
    what: crate::pipeline::Refusal,
    out: &mut dyn FnMut(Piece<'_>),
) {
    use crate::pipeline::Refusal;
    let (at, rule) = match what {
        Refusal::Argument(i) => (
            At::Argument(i),
            d.arg_verdicts.get(i).map_or(ArgRule::None, |v| v.rule),
        ),
        Refusal::Program(rule) => (At::Program, rule),
    };
    let cx = Context {
        policy: d.pass.policy,
        args: d.exec.argv,
        env: d.exec.env,
        parent_env: d.exec.parent,
        env_files: d.pass.files.contents,
    };
    line(&cx, program, at, rule, d.pass.policy.source(), out);
}

/// "policy FILE", or "the built-in policy": how every message names a policy.
pub fn label(source: &[u8], out: &mut dyn FnMut(Piece<'_>)) {
    if source == BUILTIN_SOURCE {
        out(Piece::Text(b"the built-in policy"));
    } else {
        out(Piece::Text(b"policy "));
        out(Piece::Word(source));
    }
}

/// What the argument or path holds, by the argv rule that refused it.
fn why(cx: &Context<'_, '_>, at: At, rule: ArgRule, out: &mut dyn FnMut(Piece<'_>)) {
    match rule {
        ArgRule::Value(src) => {
            out(Piece::Text(b" holds the value of "));
            out(Piece::Word(value_name(cx, src)));
        }
        ArgRule::Shape(s) => {
            out(Piece::Text(b" holds "));
            out(Piece::Text(s.describe_with_article().as_bytes()));
        }
        ArgRule::DenyArgs { secret, list } => {
            out(Piece::Text(b" completes `"));
            deny_words(cx, u32::from(secret), usize::from(list), out);
            out(Piece::Text(b"`, which deny_args of secret "));
            out(Piece::Word(secret_name(cx.policy, u32::from(secret))));
            out(Piece::Text(b" refuses: the program would show the secret"));
        }
        ArgRule::Pair {
            name_at, name_end, ..
        } => {
            let name = match at {
                At::Argument(i) => cx.args.get(i),
                At::Program => None,
            }
            .and_then(|a| a.get(name_at as usize..name_end as usize))
            .unwrap_or(&[]);
            out(Piece::Text(b" holds the pair "));
            out(Piece::Word(name));
            out(Piece::Text(
                b" among other words, where it cannot be dropped alone",
            ));
        }
        ArgRule::None | ArgRule::PairFlag => out(Piece::Text(b" holds a secret")),
    }
}

/// The name of the credential whose value an argument holds.
pub fn value_name<'a>(cx: &Context<'a, '_>, src: ValueSource) -> &'a [u8] {
    match src {
        ValueSource::Secret(i) => secret_name(cx.policy, i),
        _ => source_name(cx.env, cx.parent_env, cx.env_files, src).unwrap_or(&[]),
    }
}

/// The name of secret `i`.
pub fn secret_name<'a>(policy: &Policy<'a>, i: u32) -> &'a [u8] {
    policy.secret(i).map_or(&[], |r| policy.str(r.name))
}

/// The words of `deny_args` list `list` of secret `secret`, separated by spaces.
fn deny_words(cx: &Context<'_, '_>, secret: u32, list: usize, out: &mut dyn FnMut(Piece<'_>)) {
    let Some(rec) = cx.policy.secret(secret) else {
        return;
    };
    let Some(words) = crate::secret::deny_lists(cx.policy, &rec).nth(list) else {
        return;
    };
    for (k, w) in words.iter().enumerate() {
        if k > 0 {
            out(Piece::Text(b" "));
        }
        out(Piece::Word(w));
    }
}

/// How a credential reached a program that nothing will keep it from the
/// children of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Given {
    /// A `[[secret]]`'s value, read at the exec.
    Delivered,
    /// A grant let the caller's value through (an agent's own key).
    Granted,
}

/// The one line a front end says when it delivers secret `name` to `program`
/// (or a grant lets it through, `given`) and nothing will keep it from the
/// program's children ([`crate::secret::Unguarded`]): "NAME delivered to
/// PROGRAM; WHY: its children inherit NAME; use envwrap --supervise", to `out`
/// piece by piece (the name and the program's base name shown as
/// [`crate::shown::word`] shows them). A static agent (Codex) under the shim
/// is how its own key reaches every command it runs, and this line is how the
/// person learns it.
pub fn unguarded_line(
    name: &[u8],
    program: &[u8],
    why: crate::secret::Unguarded,
    given: Given,
    out: &mut dyn FnMut(&[u8]),
) {
    let mut digits = [0u8; 20];
    let shown_name = crate::shown::word(name);
    let shown_program = crate::shown::word(crate::bytes::basename(program));
    for part in shown_name.parts(&mut digits) {
        out(part);
    }
    out(match given {
        Given::Delivered => &b" delivered to "[..],
        Given::Granted => &b" granted to "[..],
    });
    for part in shown_program.parts(&mut digits) {
        out(part);
    }
    out(b"; ");
    out(why.text());
    out(b": its children inherit ");
    for part in shown_name.parts(&mut digits) {
        out(part);
    }
    out(b"; use envwrap --supervise");
}
