//! The line every front end writes, in enforce mode, for a change worth a
//! warning (a credential a keep list named, a grant's use, a secret's inherited
//! copy replaced, a credential's pair dropped from argv, a refused env-file
//! value or `set`), written once:
//!
//! ```text
//! granted GH_TOKEN to gh: granted to `/usr/bin/gh` at /home/u/p.toml:12 (policy /home/u/p.toml)
//! refused JIRA_API_TOKEN for curl: credential pattern `*_TOKEN` (built-in) (the built-in policy)
//! refused GH_TOKEN in the argv of docker: credential pattern `GH_TOKEN` (built-in) (policy p.toml)
//! ```
//!
//! What follows the colon is why, in the words of [`crate::reason`], which
//! every front end writes alike: the pattern and where it is written, the
//! grant and its line. Before this module the shim wrote "granted NAME for
//! /full/path (rule; policy FILE)" and envwrap "granted NAME to prog: why
//! (policy FILE)"; until the reasons were written in the core, the shim wrote
//! the rule's id where envwrap wrote a sentence.
//! The program is named by its file name and the policy as every message names
//! it, as in the refusal line ([`crate::refusal`]). Pieces are handed to a
//! callback: nothing here allocates or formats.

use crate::decide::{Action, Rule};
use crate::shown::Piece;

/// What a loud change did, as its line says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Said {
    /// A grant passed the credential.
    Granted,
    /// The entry was refused (or, loud, withheld).
    Refused,
    /// An inherited copy of a secret's name replaced with the value read for
    /// it (rule 6b).
    SecretReplaced,
    /// A credential's `NAME=VALUE` pair dropped from the program's argv.
    RefusedInArgv,
    /// An env file's value the policy refuses (rule 6).
    FileValueRefused,
}

impl Said {
    /// What an entry's loud verdict did.
    pub fn of_entry(action: Action, rule: Rule) -> Said {
        match (action, rule) {
            (Action::Grant, _) => Said::Granted,
            (Action::Replace, Rule::Secret(_)) => Said::SecretReplaced,
            (_, Rule::FileValueRefused(_)) => Said::FileValueRefused,
            _ => Said::Refused,
        }
    }
}

/// Writes why a change was made: [`crate::reason::pieces`] of its rule.
pub type Reason<'a> = &'a dyn Fn(&mut dyn FnMut(Piece<'_>));

/// The line, after the front end's prefix, for the loud change `said` of
/// `name` at the exec of `program`, for the reason `reason` writes, by the
/// policy whose source is `source`.
pub fn line(
    said: Said,
    name: &[u8],
    program: &[u8],
    reason: Reason<'_>,
    source: &[u8],
    out: &mut dyn FnMut(Piece<'_>),
) {
    let (verb, place): (&[u8], &[u8]) = match said {
        Said::Granted => (b"granted ", b" to "),
        Said::Refused => (b"refused ", b" for "),
        Said::SecretReplaced => (b"replaced the inherited ", b" with its secret's value for "),
        Said::RefusedInArgv => (b"refused ", b" in the argv of "),
        Said::FileValueRefused => (b"refused ", b" (its env file's value) for "),
    };
    out(Piece::Text(verb));
    out(Piece::Word(name));
    out(Piece::Text(place));
    out(Piece::Word(crate::bytes::basename(program)));
    out(Piece::Text(b": "));
    reason(out);
    out(Piece::Text(b" ("));
    crate::refusal::label(source, out);
    out(Piece::Text(b")"));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(said: Said, reason: &[u8], source: &[u8]) -> String {
        let mut s = String::new();
        let reason = |o: &mut dyn FnMut(Piece<'_>)| o(Piece::Text(reason));
        line(said, b"GH_TOKEN", b"/usr/bin/gh", &reason, source, &mut |p| match p {
            Piece::Text(t) | Piece::Word(t) => s.push_str(&String::from_utf8_lossy(t)),
        });
        s
    }

    #[test]
    fn each_change_is_said_one_way() {
        assert_eq!(
            text(Said::Granted, b"grant", b"/p.toml"),
            "granted GH_TOKEN to gh: grant (policy /p.toml)"
        );
        assert_eq!(
            text(Said::Refused, b"credential.name", b"<built-in>"),
            "refused GH_TOKEN for gh: credential.name (the built-in policy)"
        );
        assert_eq!(
            text(Said::RefusedInArgv, b"credential.name", b"/p.toml"),
            "refused GH_TOKEN in the argv of gh: credential.name (policy /p.toml)"
        );
        assert_eq!(
            Said::of_entry(Action::Replace, Rule::Secret(0)),
            Said::SecretReplaced
        );
        assert_eq!(Said::of_entry(Action::Grant, Rule::Grant(0)), Said::Granted);
    }
}
