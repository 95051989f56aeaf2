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
