//! What `envwrap check` says of a user policy on a host with a managed layer
//! (docs/adr/0020-managed-layer.md, decided choice 2): each rule the managed
//! layer makes dead ([`envpolicy::layer::dead_rules`], the one home of the
//! rule) is an error at the user's file that names both files, as
//! `FILE:LINE:COLUMN: what the user asks; MANAGED:LINE:COLUMN: the rule that
//! wins`. The user's file still loads and runs: the managed pass decides after
//! it whatever it says, so a dead rule changes nothing; check says so, so that
//! a user does not learn it from a child that lacks a variable.

use envpolicy::compiled::Policy;
use envpolicy::decide::Rule;
use envpolicy::layer::{dead_rules, Dead};
use envpolicy::managed::Managed;
use std::path::Path;

/// The errors for the user policy `user` (its file `user_file`, `None` for
/// the built-in default) against this host's managed layer; empty when the
/// host has none, or none of its rules is dead. A broken managed layer is one
/// error.
pub fn conflicts(user: &Policy<'_>, user_file: Option<&Path>) -> Vec<String> {
    let managed = Managed::load();
    if let Some(w) = managed.warning() {
        return vec![w.to_string()];
    }
    let Managed::Usable { compiled, path } = &managed else {
        return Vec::new();
    };
    let m = compiled.policy();
    let mut out = Vec::new();
    let user_name = user_file.map_or("the built-in policy".to_string(), envpolicy::error::shown);
    dead_rules(user, &m, |d| {
        let (at, what, by) = describe(user, d);
        let at = match (user_file, at) {
            (Some(_), Some((line, col))) => format!("{user_name}:{line}:{col}"),
            (Some(_), None) => key_at(user_file, "mode")
                .map_or(user_name.clone(), |(l, c)| format!("{user_name}:{l}:{c}")),
            (None, _) => user_name.clone(),
        };
        out.push(format!(
            "{at}: {what}, which the managed layer forbids; {}",
            by_rule(&m, path, by)
        ));
    });
    out
}

/// Where the user's rule is (line, column), what it asks, and the managed
/// rule that wins (`None` for the mode).
fn describe(user: &Policy<'_>, d: Dead) -> (Option<(u32, u32)>, String, Option<Rule>) {
    let s = |r| String::from_utf8_lossy(user.str(r)).into_owned();
    match d {
        Dead::Mode => (None, "mode = \"audit\"".to_string(), None),
        Dead::Keep { pattern, by } => {
            let p = user.pattern(pattern);
            let at = p.map(|p| (p.line, p.col.max(1)));
            (
                at,
                format!("keep {}", p.map_or(String::new(), |p| s(p.text))),
                Some(by),
            )
        }
        Dead::Set { set, by } => {
            let r = user.set(set);
            (
                r.map(|r| (r.line, 1)),
                format!("set {}", r.map_or(String::new(), |r| s(r.name))),
                Some(by),
            )
        }
        Dead::Grant { grant, by } => {
            let g = user.grant(grant);
            let what = g.map_or(String::new(), |g| {
                format!("[[grant]] {} to {}", s(g.name), s(g.program))
            });
            (g.map(|g| (g.line, 1)), what, Some(by))
        }
        Dead::Secret { secret, by } => {
            let r = user.secret(secret);
            let what = r.map_or(String::new(), |r| {
                format!("[[secret]] {} for {}", s(r.name), s(r.program))
            });
            (r.map(|r| (r.line, 1)), what, Some(by))
        }
    }
}

/// The managed rule that wins, as `MANAGED:LINE:COLUMN: what it says`.
fn by_rule(m: &Policy<'_>, path: &Path, by: Option<Rule>) -> String {
    let file = envpolicy::error::shown(path);
    let pattern_at = |i: u32| {
        m.pattern(i)
            .filter(|p| p.line != 0)
            .map(|p| (p.line, p.col.max(1)))
    };
    let (at, what) = match by {
        None => (key_at(Some(path), "mode"), "mode = \"enforce\"".to_string()),
        Some(Rule::Strip(i)) => (pattern_at(i), "strips it".to_string()),
        Some(Rule::CredentialName(i)) => match pattern_at(i) {
            Some(at) => (
                Some(at),
                "names it a credential, granted there to no such program".to_string(),
            ),
            None => (
                None,
                "refuses it as a credential of the built-in list, granted there to no such program"
                    .to_string(),
            ),
        },
        Some(Rule::BaseNone | Rule::OutsideFloor | Rule::Floor(_)) => (
            key_at(Some(path), "base"),
            "keeps only what it names (base)".to_string(),
        ),
        Some(Rule::UnsafeName(_)) => (
            key_at(Some(path), "unsafe"),
            "strips it as an unsafe name".to_string(),
        ),
        Some(r) => (None, format!("refuses it ({})", r.id())),
    };
    match at {
        Some((line, col)) => format!("{file}:{line}:{col}: {what}"),
        None => format!("{file}: {what}"),
    }
}

/// The line and column of the first top-level `key =` in the file at `path`.
fn key_at(path: Option<&Path>, key: &str) -> Option<(u32, u32)> {
    let text = std::fs::read_to_string(path?).ok()?;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with('[') {
            return None;
        }
        let rest = trimmed.strip_prefix(key).map(str::trim_start);
        if rest.is_some_and(|r| r.starts_with('=')) {
            let col = line.len() - trimmed.len() + 1;
            return Some((i as u32 + 1, col as u32));
        }
    }
    None
}
