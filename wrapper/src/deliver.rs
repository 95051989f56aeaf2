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
use envpolicy::layer::{pass_mode, Layer};
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

/// The mode of the managed pass: its own, whatever was requested.
pub fn managed_mode(managed: &Policy<'_>) -> Mode {
    pass_mode(Layer::Managed, managed.settings().mode, None)
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
    /// The run's mode for the user pass (`--mode`), as the run decided.
    pub requested_mode: Option<Mode>,
    /// The managed layer, compiled in the foreground (no TOML is read after
    /// the fork), with its env files' values: the redo decides both passes,
    /// so that a user's secret is judged by the managed pass as at any exec,
    /// and the managed layer's own secrets are delivered.
    pub managed: Option<(envpolicy::load::Compiled, Vec<Option<Vec<u8>>>)>,
}

impl Redo {
    /// A run redoes its decision when a layer that enforces gives the program
    /// a secret: the user's (`mode`, the run's mode for it) or the managed
    /// layer's.
    pub fn needed(
        policy: &Policy<'_>,
        mode: Mode,
        managed: Option<&Policy<'_>>,
        program: &[u8],
    ) -> bool {
        let gets = |p: &Policy<'_>, mode: Mode| {
            mode == Mode::Enforce && envpolicy::secret::wanted(p, program) != 0
        };
        gets(policy, mode) || managed.is_some_and(|m| gets(m, managed_mode(m)))
    }

    /// In the command's child, after the fork: read the secrets of each layer,
    /// and decide both passes again on the argv and environment decided
    /// without them. The child's argv and environment, or the refusal line
    /// (which names the layer that refused).
    pub fn deliver(
        &self,
        policy: &Policy<'_>,
        argv: &[Vec<u8>],
        env: &[Vec<u8>],
        journal: &Journal,
    ) -> Result<ArgvAndEnv, String> {
        let user_mode = pass_mode(Layer::User, policy.settings().mode, self.requested_mode);
        let read_for = |p: &Policy<'_>, mode: Mode| {
            read(p, &self.program, env, mode, &self.shown_program, journal)
        };
        let values = read_for(policy, user_mode);
        let managed_policy = self.managed.as_ref().map(|(c, _)| c.policy());
        let managed_values = managed_policy
            .as_ref()
            .map(|m| read_for(m, managed_mode(m)));
        if values.is_empty() && managed_values.as_ref().is_none_or(Values::is_empty) {
            return Ok((argv.to_vec(), env.to_vec()));
        }
        let layers = envpolicy::outcome::Layers {
            user: envpolicy::outcome::Pass {
                policy,
                env_files: &self.env_files,
                secrets: values.as_slice(),
            },
            managed: managed_policy
                .as_ref()
                .zip(self.managed.as_ref())
                .zip(managed_values.as_ref())
                .map(|((p, (_, files)), v)| envpolicy::outcome::Pass {
                    policy: p,
                    env_files: files,
                    secrets: v.as_slice(),
                }),
            requested_mode: self.requested_mode,
            sticky: envpolicy::outcome::Sticky {
                preload: self.sticky_preload.as_deref(),
                policy_entry: self.sticky_policy.as_deref(),
                hint: None,
            },
        };
        let d = layers.decide(&self.program, argv, env, &self.parent);
        if d.refused().is_some() {
            return Err(d.refusal_line.unwrap_or_default());
        }
        Ok((
            d.effective_argv(argv).to_vec(),
            d.effective_env(env).to_vec(),
        ))
    }
}

/// Say once per secret delivered to `program`, and per credential a grant
/// lets through to it, when nothing will keep it from the program's children ([`envpolicy::refusal::unguarded_line`]): a program
/// the shim cannot load into (static, Go), or no shim in `child_env`'s
/// `LD_PRELOAD` at all, and no supervisor above (`ENVSHIM_SUPERVISOR`, which
/// rule 8 carries from the caller: one judges every exec of the tree). Under
/// `--supervise` this run's own supervisor does; the caller does not ask.
pub fn say_unguarded(
    d: &envpolicy::outcome::Decision,
    program: &std::path::Path,
    child_env: &[Vec<u8>],
) {
    let shim = crate::environ::get(child_env, b"LD_PRELOAD")
        .is_some_and(|v| envpolicy::supervise::shim_in_preload(v).is_some());
    use envpolicy::decide::Rule;
    use envpolicy::elf_head::Loads;
    use envpolicy::outcome::ChangeRule;
    use envpolicy::refusal::Given;
    use envpolicy::secret::Unguarded;
    // A secret delivered, or a credential a grant let through (an agent's own
    // key): either reaches what the program starts when nothing guards it.
    let delivered: Vec<(&str, Given)> = d
        .changes
        .iter()
        .filter_map(|c| match c.rule {
            ChangeRule::Env(Rule::Secret(_)) => Some((c.name.as_deref()?, Given::Delivered)),
            ChangeRule::Env(Rule::Grant(_)) => Some((c.name.as_deref()?, Given::Granted)),
            _ => None,
        })
        .collect();
    if delivered.is_empty() || crate::environ::get(child_env, envpolicy::mark::NAME).is_some() {
        return;
    }
    let why = match program_loads(program) {
        Loads::Static => Unguarded::Static,
        Loads::Go => Unguarded::Go,
        _ if !shim => Unguarded::NoShim,
        _ => return,
    };
    use std::os::unix::ffi::OsStrExt;
    for (name, given) in delivered {
        let mut line = b"envwrap: ".to_vec();
        envpolicy::refusal::unguarded_line(
            name.as_bytes(),
            program.as_os_str().as_bytes(),
            why,
            given,
            &mut |b| line.extend_from_slice(b),
        );
        tell!("{}", String::from_utf8_lossy(&line));
    }
}

/// What the head of the program's file says ([`envpolicy::elf_head`], as the
/// shim reads it): never a FIFO or a device.
fn program_loads(program: &std::path::Path) -> envpolicy::elf_head::Loads {
    use std::io::Read;
    let Ok(f) = envpolicy::read_file::open(program, envpolicy::readable::PROGRAM) else {
        return envpolicy::elf_head::Loads::Unknown;
    };
    let mut head = Vec::with_capacity(envpolicy::elf_head::HEAD);
    let _ = f
        .take(envpolicy::elf_head::HEAD as u64)
        .read_to_end(&mut head);
    envpolicy::elf_head::inspect(&head)
}
