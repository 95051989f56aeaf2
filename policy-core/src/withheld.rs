//! Saying that a credential was withheld, once per name and tree.
//!
//! A credential that a child would merely have inherited (`base = "all"`, the
//! built-in default) is refused quietly: a shell holding `GH_TOKEN` would
//! otherwise warn at every command it runs. But a user whose `gh` then fails
//! needs a hint, so each front end says it once:
//!
//! ```text
//! envshim: GH_TOKEN withheld from gh and what it starts (a credential; envwrap explain GH_TOKEN)
//! ```
//!
//! This module holds the three parts of that promise that do not depend on a
//! front end: which verdicts are worth the line ([`worth_saying`]), the line
//! itself ([`line()`], in [`Piece`]s), and the set of names already said ([`Said`]), which a
//! front end places in memory that the whole tree shares. The shim puts it in a
//! shared mapping that its `fork` hook creates, so that a shell's or `make`'s
//! children, which exec one by one or all at once, say each name once between
//! them; envwrap runs one exec, so its own memory is enough.
//!
//! "Tree" means a process and the children it forks: what a new program starts
//! after an exec is a new tree, and it only says a name that it holds itself
//! (a credential granted to it). A `quiet = true` policy says nothing.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::compiled::Settings;
use crate::decide::{Action, Rule, Verdict};
use crate::shown::Piece;

/// Is `v` a credential withheld from the child that no warning of its own
/// names? Refused (rule 4) or stripped, and not loud (a loud verdict has its
/// line at every exec already). A name that is itself shaped like a token is
/// left out: the line would name it only by its length.
pub fn worth_saying(settings: &Settings, v: &Verdict) -> bool {
    !settings.quiet
        && v.credential
        && matches!(v.action, Action::Refuse | Action::Strip)
        && !v.loud
        && !matches!(v.rule, Rule::CredentialNameShape(_))
}

/// The line, after the front end's own `envshim: ` or `envwrap: `, for the
/// credential `name` withheld from the program exec'd as `program` (a path or
/// a name; the line names its basename).
pub fn line<'a>(name: &'a [u8], program: &'a [u8]) -> [Piece<'a>; 6] {
    [
        Piece::Word(name),
        Piece::Text(b" withheld from "),
        Piece::Word(crate::bytes::basename(program)),
        Piece::Text(b" and what it starts (a credential; envwrap explain "),
        Piece::Word(name),
        Piece::Text(b")"),
    ]
}

/// How many names a tree says; later ones are not said (the promise is "at
/// most once", never "at every exec").
pub const SAID_MAX: usize = 62;

/// The names a tree has said, as 64-bit hashes (0: a free slot). Lock-free, so
/// that a fork child, a vfork child and the threads of a multithreaded parent
/// may all use it between fork and exec; exactly one of several processes that
/// withhold the same name at once says it.
#[repr(C)]
pub struct Said {
    slots: [AtomicU64; SAID_MAX],
}

impl Said {
    #[allow(clippy::declare_interior_mutable_const)]
    const FREE: AtomicU64 = AtomicU64::new(0);

    pub const fn new() -> Said {
        Said {
            slots: [Self::FREE; SAID_MAX],
        }
    }

    /// Records `name`: true the first time, for the caller that is to say it.
    pub fn first_time(&self, name: &[u8]) -> bool {
        let h = hash(name);
        for slot in &self.slots {
            match slot.compare_exchange(0, h, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return true,
                Err(held) if held == h => return false,
                Err(_) => {}
            }
        }
        false
    }

    /// Copies what `from` holds (a tree moving its set into shared memory).
    pub fn copy_from(&self, from: &Said) {
        for (to, from) in self.slots.iter().zip(&from.slots) {
            to.store(from.load(Ordering::Acquire), Ordering::Release);
        }
    }
}

impl Default for Said {
    fn default() -> Said {
        Said::new()
    }
}

/// FNV-1a over the exact bytes of `name`, never 0.
fn hash(name: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in name {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h | 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::Shape;

    #[test]
    fn each_name_is_said_once() {
        let said = Said::new();
        assert!(said.first_time(b"GH_TOKEN"));
        assert!(!said.first_time(b"GH_TOKEN"));
        assert!(said.first_time(b"gh_token"));
        assert!(said.first_time(b"AWS_SECRET_ACCESS_KEY"));
        assert!(!said.first_time(b"AWS_SECRET_ACCESS_KEY"));
    }

    #[test]
    fn a_full_set_says_nothing_more() {
        let said = Said::new();
        for i in 0..SAID_MAX {
            assert!(said.first_time(format!("T{i}").as_bytes()));
        }
        assert!(!said.first_time(b"ONE_MORE"));
        assert!(!said.first_time(b"T0"));
    }

    #[test]
    fn threads_say_a_name_once_between_them() {
        let said = Said::new();
        let firsts: usize = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| (0..1000).filter(|_| said.first_time(b"GH_TOKEN")).count()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(firsts, 1);
    }

    #[test]
    fn only_quiet_removals_of_credentials_are_worth_a_line() {
        use crate::compiled::{ArgvSecrets, Base, Mode, SuperviseChanges};
        let settings = Settings {
            mode: Mode::Enforce,
            base: Base::All,
            strip_unsafe: true,
            sticky: true,
            argv_secrets: ArgvSecrets::Refuse,
            env_flags: true,
            self_scrub: false,
            shapes: 0,
            min_value_len: 8,
            supervise_changes: SuperviseChanges::Refuse,
            quiet: false,
            mask: false,
        };
        let mut v = Verdict::new(Action::Refuse, Rule::CredentialName(0));
        assert!(!worth_saying(&settings, &v), "not a credential");
        v.credential = true;
        assert!(worth_saying(&settings, &v));
        let quiet = Settings {
            quiet: true,
            ..settings
        };
        assert!(!worth_saying(&quiet, &v));
        for action in [Action::Keep, Action::Grant, Action::Replace] {
            assert!(!worth_saying(&settings, &Verdict { action, ..v }));
        }
        assert!(!worth_saying(&settings, &Verdict { loud: true, ..v }));
        let shaped = Verdict {
            rule: Rule::CredentialNameShape(Shape::ALL[0]),
            ..v
        };
        assert!(!worth_saying(&settings, &shaped));
    }

    #[test]
    fn the_line_names_the_basename() {
        let parts = line(b"GH_TOKEN", b"/usr/bin/gh");
        assert_eq!(parts[2], Piece::Word(b"gh"));
        assert_eq!(parts[4], Piece::Word(b"GH_TOKEN"));
    }
}
