//! The lines a front end says of a change it cannot make, written once.
//!
//! The capability table ([`crate::capability`]) decides what a front end does
//! with a change it cannot make: refuse the exec, run it without an entry, or
//! (under `[supervise] changes = "audit"`) run it unchanged. Only
//! `envwrap --supervise` lacks a capability today, so only it says these
//! lines; they are written here so that what it says is the core's words,
//! beside the refusal ([`crate::refusal`]) and loud ([`crate::loud`]) lines
//! every front end shares, with the same reasons ([`crate::reason`]) and the
//! same policy label:
//!
//! ```text
//! refused to run env: it would receive GH_TOKEN, credential pattern `GH_TOKEN` (built-in) (policy p.toml)
//! refused to run env: the policy would redact argument 2 (...), which --supervise cannot do to an exec another process makes (policy p.toml)
//! audit: let env run unchanged: the policy would strip TMUX (...), which --supervise cannot do to an exec another process makes ([supervise] changes = "audit" in policy p.toml)
//! ran codex without EDITOR: the policy would set it (...), which --supervise cannot add to an exec another process makes (policy p.toml)
//! audit: let env run: enforce would strip TMUX (...), and 2 more (policy p.toml)
//! ```
//!
//! The last is the policy's audit mode, where nothing is changed and the
//! first change enforce would make is said. Pieces are handed to a callback:
//! nothing here allocates or formats.

use crate::loud::Reason;
use crate::shown::Piece;

/// Which line: what became of the change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unmade {
    /// Refused: the child would receive a credential the front end cannot
    /// remove.
    Receives,
    /// Refused: a change the front end cannot make, which
    /// `[supervise] changes = "refuse"` refuses.
    WouldChange,
    /// Run unchanged despite the change (`[supervise] changes = "audit"`).
    RunsUnchanged,
    /// Run without the entry the change would add.
    RunsWithout,
    /// The policy's audit mode: run unchanged; `more` other changes besides
    /// the one said.
    Audited { more: usize },
}

/// What a change concerns, as the line names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum What<'a> {
    /// `argv[i]`.
    Argument(usize),
    /// A variable, by name.
    Name(&'a [u8]),
    /// An entry with no name.
    Entry,
}

/// The tail of every line about a change `--supervise` cannot make.
const CANNOT: &[u8] = b", which --supervise cannot ";
const ANOTHERS: &[u8] = b" to an exec another process makes";

/// The line, after the front end's prefix, for a change of `what` (whose
/// action's id is `verb`: strip, refuse, redact, set, ...) at the exec of
/// `program`, for the reason `reason` writes, by the policy whose source is
/// `source`.
pub fn line(
    unmade: Unmade,
    program: &[u8],
    verb: &[u8],
    what: What<'_>,
    reason: Reason<'_>,
    source: &[u8],
    out: &mut dyn FnMut(Piece<'_>),
) {
    let program = crate::bytes::basename(program);
    let mut digits = [0u8; 20];
    match unmade {
        Unmade::Receives => {
            out(Piece::Text(b"refused to run "));
            out(Piece::Word(program));
            out(Piece::Text(b": it would receive "));
            concerned(what, &mut digits, out);
            out(Piece::Text(b", "));
            reason(out);
        }
        Unmade::WouldChange | Unmade::RunsUnchanged => {
            out(Piece::Text(if unmade == Unmade::WouldChange {
                b"refused to run "
            } else {
                b"audit: let "
            }));
            out(Piece::Word(program));
            out(Piece::Text(if unmade == Unmade::WouldChange {
                b": the policy would "
            } else {
                b" run unchanged: the policy would "
            }));
            change(verb, what, reason, &mut digits, out);
            out(Piece::Text(CANNOT));
            out(Piece::Text(b"do"));
            out(Piece::Text(ANOTHERS));
        }
        Unmade::RunsWithout => {
            out(Piece::Text(b"ran "));
            out(Piece::Word(program));
            out(Piece::Text(b" without "));
            concerned(what, &mut digits, out);
            out(Piece::Text(b": the policy would set it ("));
            reason(out);
            out(Piece::Text(b")"));
            out(Piece::Text(CANNOT));
            out(Piece::Text(b"add"));
            out(Piece::Text(ANOTHERS));
        }
        Unmade::Audited { more } => {
            out(Piece::Text(b"audit: let "));
            out(Piece::Word(program));
            out(Piece::Text(b" run: enforce would "));
            change(verb, what, reason, &mut digits, out);
            if more > 0 {
                out(Piece::Text(b", and "));
                out(Piece::Text(crate::shown::decimal(more as u64, &mut digits)));
                out(Piece::Text(b" more"));
            }
        }
    }
    out(Piece::Text(b" ("));
    if unmade == Unmade::RunsUnchanged {
        out(Piece::Text(b"[supervise] changes = \"audit\" in "));
    }
    crate::refusal::label(source, out);
    out(Piece::Text(b")"));
}

/// "strip TMUX (REASON)": the change, and why.
fn change(
    verb: &[u8],
    what: What<'_>,
    reason: Reason<'_>,
    digits: &mut [u8; 20],
    out: &mut dyn FnMut(Piece<'_>),
) {
    out(Piece::Text(verb));
    out(Piece::Text(b" "));
    concerned(what, digits, out);
    out(Piece::Text(b" ("));
    reason(out);
    out(Piece::Text(b")"));
}

/// "argument 2", a variable's name, or "an entry".
fn concerned(what: What<'_>, digits: &mut [u8; 20], out: &mut dyn FnMut(Piece<'_>)) {
    match what {
        What::Argument(i) => {
            out(Piece::Text(b"argument "));
            out(Piece::Text(crate::shown::decimal(i as u64, digits)));
        }
        What::Name(name) => out(Piece::Word(name)),
        What::Entry => out(Piece::Text(b"an entry")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(unmade: Unmade, verb: &[u8], what: What<'_>) -> String {
        let mut s = String::new();
        let reason = |o: &mut dyn FnMut(Piece<'_>)| o(Piece::Text(b"WHY"));
        line(unmade, b"/usr/bin/env", verb, what, &reason, b"/p.toml", &mut |p| {
            match p {
                Piece::Text(t) | Piece::Word(t) => s.push_str(&String::from_utf8_lossy(t)),
            }
        });
        s
    }

    #[test]
    fn each_unmade_change_is_said_one_way() {
        assert_eq!(
            text(Unmade::Receives, b"refuse", What::Name(b"GH_TOKEN")),
            "refused to run env: it would receive GH_TOKEN, WHY (policy /p.toml)"
        );
        assert_eq!(
            text(Unmade::WouldChange, b"redact", What::Argument(2)),
            "refused to run env: the policy would redact argument 2 (WHY), which --supervise \
             cannot do to an exec another process makes (policy /p.toml)"
        );
        assert_eq!(
            text(Unmade::RunsUnchanged, b"strip", What::Name(b"TMUX")),
            "audit: let env run unchanged: the policy would strip TMUX (WHY), which --supervise \
             cannot do to an exec another process makes ([supervise] changes = \"audit\" in \
             policy /p.toml)"
        );
        assert_eq!(
            text(Unmade::RunsWithout, b"set", What::Name(b"EDITOR")),
            "ran env without EDITOR: the policy would set it (WHY), which --supervise cannot \
             add to an exec another process makes (policy /p.toml)"
        );
        assert_eq!(
            text(Unmade::Audited { more: 2 }, b"strip", What::Entry),
            "audit: let env run: enforce would strip an entry (WHY), and 2 more (policy /p.toml)"
        );
        assert_eq!(
            text(Unmade::Audited { more: 0 }, b"strip", What::Name(b"TMUX")),
            "audit: let env run: enforce would strip TMUX (WHY) (policy /p.toml)"
        );
    }
}
