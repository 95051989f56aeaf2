//! Secrets envwrap delivers to the program it execs
//! (docs/adr/0019-secrets-delivered-at-exec.md).
//!
//! Why here and nowhere above: a secret's value may be read only by the process
//! that becomes the program. envwrap's run mode execs in place, so it is that
//! process; under `--supervise` the command's child is (it reads after the
//! fork), and the supervisor never reads a source. The reading is envpolicy's
//! ([`envpolicy::secret_source`]); this module adds what envwrap does around
//! it: nothing in audit mode, one line for each secret not delivered, and each
//! value read added to what every message redacts.

use crate::journal::Journal;
use envpolicy::compiled::{Mode, Policy};
use envpolicy::secret_source::{self, Values};

/// Read the secrets `program` (the command as given, which the decision
/// matches too) gets under `policy`, from sources judged for the program's
/// environment `env`. Audit mode delivers nothing and reads nothing.
pub fn read(
    policy: &Policy<'_>,
    program: &[u8],
    env: &[Vec<u8>],
    mode: Mode,
    shown_program: &str,
    journal: &Journal,
) -> Values {
    if mode == Mode::Audit {
        return Values::default();
    }
    let reading = secret_source::read_wanted(policy, program, env);
    crate::value::learn_secret_values(reading.values.read().map(|(_, v)| v));
    for (i, why) in reading.undelivered {
        let name = policy.secret(i).map(|s| policy.str(s.name)).unwrap_or(b"?");
        journal.undelivered(name, shown_program, why);
    }
    reading.values
}

/// A child's argv and environment.
pub type ArgvAndEnv = (Vec<Vec<u8>>, Vec<Vec<u8>>);

/// What the command's child under `--supervise` needs to decide again with
/// the values it reads: the run's decision, made in the foreground envwrap
/// without them (the supervisor, forked from it, must never hold a value).
pub struct Redo {
    /// The command as given, which the decision matched.
    pub program: Vec<u8>,
    pub shown_program: String,
    /// The caller's own environment, when the child's was built from it (`-i`,
    /// `-u`, operands): its credentials must not reach argv either.
    pub parent: Vec<Vec<u8>>,
    pub env_files: Vec<Option<Vec<u8>>>,
    pub sticky_preload: Option<Vec<u8>>,
    pub sticky_policy: Option<Vec<u8>>,
}

impl Redo {
    /// Only a run in enforce mode whose program gets a secret redoes its
    /// decision.
    pub fn needed(policy: &Policy<'_>, mode: Mode, program: &[u8]) -> bool {
        mode == Mode::Enforce && envpolicy::secret::wanted(policy, program) != 0
    }

    /// In the command's child, after the fork: read the secrets, and decide
    /// again on the argv and environment decided without them. The child's
    /// argv and environment, or why the exec is refused.
    pub fn deliver(
        &self,
        policy: &Policy<'_>,
        argv: &[Vec<u8>],
        env: &[Vec<u8>],
        journal: &Journal,
    ) -> Result<ArgvAndEnv, String> {
        let values = read(
            policy,
            &self.program,
            env,
            Mode::Enforce,
            &self.shown_program,
            journal,
        );
        if values.is_empty() {
            return Ok((argv.to_vec(), env.to_vec()));
        }
        let sticky = envpolicy::outcome::Sticky {
            preload: self.sticky_preload.as_deref(),
            policy_entry: self.sticky_policy.as_deref(),
            hint: None,
        };
        let mut d = envpolicy::outcome::decide_delivering(
            policy,
            &self.program,
            argv,
            env,
            &self.parent,
            &self.env_files,
            sticky,
            values.as_slice(),
        );
        d.mode = Mode::Enforce;
        if let Some(r) = d.refused() {
            return Err(format!("refused to run {}: {}", self.shown_program, r.why));
        }
        Ok((
            d.effective_argv(argv).to_vec(),
            d.effective_env(env).to_vec(),
        ))
    }
}
