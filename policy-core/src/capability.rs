//! What a front end can do to an exec, and what it does with a change it
//! cannot make: one table for every front end (docs/policy.md, section 2c;
//! docs/adr/0021-one-exec-pipeline.md).
//!
//! Every front end reaches the same decision ([`crate::decide`],
//! [`crate::argv`]). They differ in what they can apply. libenvshim.so, envwrap
//! and the Rust API build the child's arrays themselves, so they can make every
//! change. `envwrap --supervise` answers an exec that another process already
//! made: it can let it continue or fail it, and, where the exec's arrays are
//! its process's own (not memory it shares with a `vfork` parent), remove
//! entries from its environment in place; nothing else. Before
//! this table each front end decided for itself what to do with a change it
//! could not make, and they disagreed (a credential that a strip removes ran
//! unchanged under `[supervise] changes = "audit"`; a missing `set` refused an
//! exec the shim would have completed). Here it is decided once:
//!
//! | change the front end cannot make | enforce | `supervise.changes = "audit"` |
//! |---|---|---|
//! | the policy refuses the exec (a secret in argv or the path) | refuse | refuse |
//! | remove or rewrite an entry that holds a credential (one the policy withholds or refuses) | refuse | refuse |
//! | redact or drop an argument that holds a credential | refuse | refuse |
//! | remove or rewrite any other entry or argument | refuse | run unchanged, say so |
//! | add an entry the exec lacks (`set`, an env file's value, a secret) | run without it, say so | run without it, say so |
//!
//! A missing entry is no leak: running without it is what the program's own
//! caller asked for, and refusing it breaks the program. A credential that
//! would pass is a leak, and no setting lets one pass where enforce would
//! have refused it. In the policy's audit mode (`mode = "audit"`, `--mode
//! audit`) no front end changes anything, and every front end reports what
//! enforce would have done ([`in_mode`]).
//!
//! Nothing here allocates or formats: the shim may ask between `fork` and
//! `exec`.

use crate::compiled::{Mode, SuperviseChanges};

/// What a front end can do to an exec it decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Add an entry the exec lacks.
    pub add: bool,
    /// Remove an entry.
    pub strip: bool,
    /// Replace an entry's value.
    pub rewrite: bool,
    /// Redact, drop or rewrite an argument.
    pub argv: bool,
    /// Read a `[[secret]]`'s source in the process that becomes its program.
    /// A front end that cannot sees a delivered secret as an inherited entry
    /// of the secret's name (rule 6b: it passes there as a grant would).
    pub reads_secrets: bool,
}

impl Capabilities {
    /// libenvshim.so: it builds the child's arrays in the exec's scratch.
    pub const SHIM: Capabilities = Capabilities::ALL;
    /// envwrap's run mode: it execs the command with the arrays it built.
    pub const ENVWRAP: Capabilities = Capabilities::ALL;
    /// The Rust API (`envpolicy::spawn`): it builds the `Command`'s
    /// environment and arguments (a secret is read by envwrap, to which it
    /// routes the command).
    pub const LIBRARY: Capabilities = Capabilities::ALL;
    /// `envwrap --supervise`, for an exec another process makes in memory it
    /// shares with another process (a `vfork` or `posix_spawn` child, whose
    /// arrays may be its parent's own `environ`): it lets the exec continue or
    /// fails it, and never reads a secret.
    pub const SUPERVISOR: Capabilities = Capabilities {
        add: false,
        strip: false,
        rewrite: false,
        argv: false,
        reads_secrets: false,
    };
    /// `envwrap --supervise`, for an exec whose arrays are its process's own:
    /// it can also remove entries, by writing the envp array shorter in place
    /// (removing pointers needs no new memory).
    pub const SUPERVISOR_OWN_MEMORY: Capabilities = Capabilities {
        strip: true,
        ..Capabilities::SUPERVISOR
    };

    const ALL: Capabilities = Capabilities {
        add: true,
        strip: true,
        rewrite: true,
        argv: true,
        reads_secrets: true,
    };
}

/// One change of a decision, as far as applying it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// The policy refuses the exec (in enforce mode).
    Refuse,
    /// An entry removed; `credential`: the entry as the exec holds it is a
    /// credential (by name, import or shape).
    Strip { credential: bool },
    /// An entry's value replaced; `credential` as for [`Change::Strip`].
    Rewrite { credential: bool },
    /// An argument redacted, dropped or rewritten; `credential`: it holds a
    /// credential (a value, a shape, a credential's pair).
    Argv { credential: bool },
    /// An entry the exec lacks, added.
    Add,
}

/// What the front end does with one change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    /// The change is made.
    Made,
    /// The exec is refused.
    Refused,
    /// The exec runs without the entry the change would add; said once.
    RunsWithout,
    /// The exec runs as it stands (`supervise.changes = "audit"`); said and
    /// logged.
    RunsUnchanged,
}

/// What `can` does with `change`, where `unmade` is the policy's
/// `supervise.changes` (of the layer that made the change). The table of the
/// module docs, and its only home.
pub const fn apply(change: Change, can: Capabilities, unmade: SuperviseChanges) -> Applied {
    let made = match change {
        Change::Refuse => return Applied::Refused,
        Change::Strip { .. } => can.strip,
        Change::Rewrite { .. } => can.rewrite,
        Change::Argv { .. } => can.argv,
        Change::Add => can.add,
    };
    if made {
        return Applied::Made;
    }
    match (change, unmade) {
        (Change::Add, _) => Applied::RunsWithout,
        (
            Change::Strip { credential: true }
            | Change::Rewrite { credential: true }
            | Change::Argv { credential: true },
            _,
        ) => Applied::Refused,
        (_, SuperviseChanges::Refuse) => Applied::Refused,
        (_, SuperviseChanges::Audit) => Applied::RunsUnchanged,
    }
}

/// What the exec comes to, over all its changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exec {
    /// It runs with every change made (or with none to make).
    Runs,
    /// It runs; some change was not made, and is said: the index of the first
    /// change that runs unchanged, else of the first that runs without.
    RunsNoting(usize),
    /// It is refused: the index of the change that refuses it.
    Refused(usize),
    /// Audit mode: it runs unchanged, and what enforce would do is reported.
    Audited,
}

/// Fold what each change comes to ([`apply`], in the decision's order) into
/// the exec's fate in `mode`. A refusal wins; then a change that runs
/// unchanged (something the policy strips still reaches the child); then one
/// that runs without an entry.
pub fn in_mode(mode: Mode, applied: impl IntoIterator<Item = Applied>) -> Exec {
    if mode == Mode::Audit {
        return Exec::Audited;
    }
    let (mut unchanged, mut without) = (None, None);
    for (i, a) in applied.into_iter().enumerate() {
        match a {
            Applied::Refused => return Exec::Refused(i),
            Applied::RunsUnchanged => unchanged = unchanged.or(Some(i)),
            Applied::RunsWithout => without = without.or(Some(i)),
            Applied::Made => {}
        }
    }
    match unchanged.or(without) {
        Some(i) => Exec::RunsNoting(i),
        None => Exec::Runs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use SuperviseChanges::{Audit, Refuse};

    const KINDS: [Change; 8] = [
        Change::Refuse,
        Change::Strip { credential: true },
        Change::Strip { credential: false },
        Change::Rewrite { credential: true },
        Change::Rewrite { credential: false },
        Change::Argv { credential: true },
        Change::Argv { credential: false },
        Change::Add,
    ];

    #[test]
    fn a_front_end_that_can_make_a_change_makes_it() {
        for k in KINDS.into_iter().filter(|k| *k != Change::Refuse) {
            for unmade in [Refuse, Audit] {
                assert_eq!(apply(k, Capabilities::SHIM, unmade), Applied::Made, "{k:?}");
            }
        }
        assert_eq!(apply(Change::Refuse, Capabilities::SHIM, Audit), Applied::Refused);
    }

    #[test]
    fn no_setting_lets_a_credential_pass_where_enforce_refuses() {
        let sup = Capabilities::SUPERVISOR;
        for k in [
            Change::Refuse,
            Change::Strip { credential: true },
            Change::Rewrite { credential: true },
            Change::Argv { credential: true },
        ] {
            for unmade in [Refuse, Audit] {
                assert_eq!(apply(k, sup, unmade), Applied::Refused, "{k:?} {unmade:?}");
            }
        }
    }

    #[test]
    fn an_addition_a_front_end_cannot_make_runs_without_it() {
        for unmade in [Refuse, Audit] {
            let a = apply(Change::Add, Capabilities::SUPERVISOR, unmade);
            assert_eq!(a, Applied::RunsWithout);
        }
    }

    #[test]
    fn other_changes_follow_the_setting() {
        let sup = Capabilities::SUPERVISOR;
        for k in [
            Change::Strip { credential: false },
            Change::Rewrite { credential: false },
            Change::Argv { credential: false },
        ] {
            assert_eq!(apply(k, sup, Refuse), Applied::Refused);
            assert_eq!(apply(k, sup, Audit), Applied::RunsUnchanged);
        }
    }

    /// A supervisor that owns the exec's memory removes entries, a credential
    /// included, and still cannot rewrite, add or change argv.
    #[test]
    fn a_supervisor_on_its_own_memory_strips() {
        let own = Capabilities::SUPERVISOR_OWN_MEMORY;
        for unmade in [Refuse, Audit] {
            for credential in [true, false] {
                assert_eq!(apply(Change::Strip { credential }, own, unmade), Applied::Made);
            }
            assert_eq!(apply(Change::Rewrite { credential: true }, own, unmade), Applied::Refused);
            assert_eq!(apply(Change::Add, own, unmade), Applied::RunsWithout);
            assert_eq!(apply(Change::Refuse, own, unmade), Applied::Refused);
        }
    }

    #[test]
    fn the_exec_is_refused_by_any_refusal_and_notes_the_rest() {
        use Applied::*;
        assert_eq!(in_mode(Mode::Enforce, [Made, RunsWithout, Refused]), Exec::Refused(2));
        assert_eq!(in_mode(Mode::Enforce, [RunsWithout, RunsUnchanged]), Exec::RunsNoting(1));
        assert_eq!(in_mode(Mode::Enforce, [Made, RunsWithout]), Exec::RunsNoting(1));
        assert_eq!(in_mode(Mode::Enforce, [Made, Made]), Exec::Runs);
        assert_eq!(in_mode(Mode::Audit, [Refused]), Exec::Audited);
    }
}
