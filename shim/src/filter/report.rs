//! What an exec's decision says: the refusal line, the loud lines, the withheld
//! line, the policy-set warning, and each change as a JSON line for audit mode and
//! the log. Everything it names is a variable, a program, a rule or an index,
//! never a value, and every line goes through [`crate::state::message`], which
//! redacts it against the decision's credentials too.

use core::ffi::c_int;
use core::sync::atomic::{AtomicBool, Ordering};

use envpolicy_core::argv::{ArgAction, ArgRule, ValueSource};
use envpolicy_core::decide::{self, Action, Emit, Rule};
use envpolicy_core::layer::{caller_index, Layer};
use envpolicy_core::loud::Said;
use envpolicy_core::pipeline::{Decided, Exec, Refusal};
use envpolicy_core::shown::Piece;
use envpolicy_core::Policy;

use crate::platform::sys;
use crate::state::message::{Msg, To};

/// The room for a reason ([`envpolicy_core::reason`]); one size, so that one
/// writer serves every reason ([`Msg::sink`]).
const REASON: usize = 512;

/// Which reason a loud line gives ([`envpolicy_core::reason`]).
#[derive(Clone, Copy)]
enum Why<'a> {
    /// An entry's rule.
    Entry(Rule),
    /// A credential's `NAME=VALUE` pair in an argument (`name`): dropped, or
    /// the whole argument refused.
    Pair {
        rule: Rule,
        whole: bool,
        name: &'a [u8],
    },
    /// A `set` whose expansion the policy refuses.
    RefusedSet,
    /// An entry the pass added, by its rule.
    Added(Rule),
}

/// A child's `ENVSHIM_POLICY` that rule 8 replaced is said once per process.
#[link_section = ".data.envshim_zero"]
static POLICY_SET_WARNED: AtomicBool = AtomicBool::new(false);

/// Everything a message or a JSON line of one pass may name: variables,
/// programs, rules, argument indices; never a value.
pub struct Report<'r> {
    /// The program as the exec names it.
    prog: &'r [u8],
    /// The pass: its policy, input, verdicts and what it added.
    d: &'r Decided<'r>,
    /// The exec as the caller made it (the user pass's input), which a
    /// record's index points into.
    caller: &'r Exec<'r>,
}

impl<'r> Report<'r> {
    /// What pass `d` of the exec of `prog`, which the caller made as
    /// `caller`, may name.
    pub fn of(d: &'r Decided<'r>, prog: &'r [u8], caller: &'r Exec<'r>) -> Self {
        Report { prog, d, caller }
    }

    /// The index in the caller's environment of entry `i` of this pass's
    /// input ([`envpolicy_core::layer::caller_index`]).
    fn env_index(&self, i: usize) -> Option<usize> {
        match self.d.pass.layer {
            Layer::User => Some(i),
            Layer::Managed => caller_index(self.caller.env, self.d.exec.env, i),
        }
    }

    /// The same for argument `i`.
    fn arg_index(&self, i: usize) -> Option<usize> {
        match self.d.pass.layer {
            Layer::User => Some(i),
            Layer::Managed => caller_index(self.caller.argv, self.d.exec.argv, i).or(Some(i)),
        }
    }

    fn policy(&self) -> &'r Policy<'r> {
        self.d.pass.policy
    }

    /// The policy's source, as every message names it.
    fn source(&self) -> &'r [u8] {
        self.d.pass.policy.source()
    }

    /// What the core's lines look names up in.
    fn context(&self) -> envpolicy_core::refusal::Context<'r, 'r> {
        envpolicy_core::refusal::Context {
            policy: self.policy(),
            args: self.d.exec.argv,
            env: self.d.exec.env,
            parent_env: self.d.exec.parent,
            env_files: self.d.pass.files.contents,
        }
    }

    /// The variable whose value an argument holds.
    fn value_name(&self, src: ValueSource) -> &'r [u8] {
        envpolicy_core::refusal::value_name(&self.context(), src)
    }

    /// The name of secret `i`.
    fn secret_name(&self, i: u32) -> &'r [u8] {
        envpolicy_core::refusal::secret_name(self.policy(), i)
    }

    fn env_name(&self, i: usize) -> &[u8] {
        self.d
            .exec
            .env
            .get(i)
            .and_then(|e| envpolicy_core::bytes::split_entry(e))
            .map_or(&[], |(n, _)| n)
    }

    /// The message for a refused exec: the core's one line
    /// ([`envpolicy_core::refusal`]), after `envshim: `.
    #[cold]
    #[inline(never)]
    pub fn refusal(&self, what: Refusal) {
        let mut m = Msg::<1024>::new();
        m.push(b"envshim: ");
        envpolicy_core::refusal::of_pass(self.d, self.prog, what, &mut |p| {
            m.push_pieces(&[p]);
        });
        self.write(&mut m, To::Person);
    }

    /// Warnings for changes worth one in enforce mode.
    pub fn loud(&self) {
        for (i, v) in self
            .d
            .verdicts
            .iter()
            .enumerate()
            .take(self.d.exec.env.len())
        {
            // Rule 8 replaced it, or rules 1 to 5 did not pass it (a value that
            // looks like a token is refused): either may be an `ENVSHIM_POLICY`.
            if (v.action == Action::Replace && v.rule == Rule::Sticky) || !v.action.passes() {
                self.policy_set(i);
            }
            if envpolicy_core::withheld::worth_saying(self.policy().settings(), v) {
                self.withheld(i);
            }
            if v.loud {
                // A grant's use, an inherited copy of a secret's name replaced
                // with the value read for it (rule 6b), a refusal.
                let said = Said::of_entry(v.action, v.rule);
                self.loud_line(said, self.env_name(i), Why::Entry(v.rule));
                if v.action == Action::Grant {
                    self.unguarded_grant(i);
                }
            }
        }
        for (i, v) in self.d.arg_verdicts.iter().enumerate() {
            if let ArgRule::Pair {
                rule,
                name_at,
                name_end,
                loud: true,
            } = v.rule
            {
                let name = self
                    .d
                    .exec
                    .argv
                    .get(i)
                    .and_then(|a| a.get(name_at as usize..name_end as usize))
                    .unwrap_or(&[]);
                let whole = v.action == ArgAction::Refuse;
                self.loud_line(Said::RefusedInArgv, name, Why::Pair { rule, whole, name });
            }
        }
        for (_, name) in decide::refused_set_names(self.policy(), self.d.env.refused_sets) {
            self.loud_line(Said::Refused, name, Why::RefusedSet);
        }
        let file_values =
            decide::refused_file_value_names(self.policy(), self.d.env.refused_file_values);
        for (k, name) in file_values {
            self.loud_line(
                Said::FileValueRefused,
                name,
                Why::Entry(Rule::FileValueRefused(k)),
            );
        }
    }

    /// Entry `i`, which the child does not get as it is: when it is an
    /// `ENVSHIM_POLICY` this process set (neither the tree's nor the one it was
    /// started with) and rule 8 gives the child the tree's, says once per process
    /// that the tree keeps its policy. The value set is not shown: it could hold
    /// anything.
    #[inline(never)]
    fn policy_set(&self, i: usize) {
        let Some(entry) = self.d.exec.env.get(i) else {
            return;
        };
        if self.d.pass.sticky.policy_entry.is_none()
            || self.d.pass.sticky.policy_entry == Some(*entry)
            || self.env_name(i) != envpolicy_core::builtin::POLICY_VAR
            || crate::state::sticky::policy_at_load().bytes() == Some(*entry)
            || POLICY_SET_WARNED.swap(true, Ordering::Relaxed)
        {
            return;
        }
        let mut m = Msg::<1024>::new();
        m.push(b"envshim: ENVSHIM_POLICY set by this process is ignored: the tree keeps ");
        match self
            .d
            .pass
            .sticky
            .policy_entry
            .and_then(|e| e.strip_prefix(envpolicy_core::shared::POLICY_ENTRY))
        {
            Some(v) if envpolicy_core::lookup::names_builtin(v) => {
                m.push(b"the built-in default policy")
            }
            Some(v) => m.push(b"the policy ").push_word(v),
            None => m.push(b"its policy"),
        };
        self.write(&mut m, To::Person);
    }

    /// `envshim: NAME withheld from PROGRAM ...`, the first time this tree
    /// withholds entry `i` ([`envpolicy_core::withheld`]).
    #[cold]
    #[inline(never)]
    fn withheld(&self, i: usize) {
        let name = self.env_name(i);
        if !crate::state::withheld::first_time(name) {
            return;
        }
        let mut m = Msg::<REASON>::new();
        m.push(b"envshim: ")
            .push_pieces(&envpolicy_core::withheld::line(name, self.prog));
        self.write(&mut m, To::Person);
    }

    /// "NAME granted to PROGRAM; it is statically linked ...": a credential a
    /// grant lets through to a program no shim loads into (static, Go), with
    /// no supervisor above, reaches everything that program starts: a static
    /// agent's own key, its sandboxed commands ([`envpolicy_core::refusal::unguarded_line`]).
    /// Reads the program's first page, at an exec that grants only.
    #[cold]
    #[inline(never)]
    fn unguarded_grant(&self, i: usize) {
        use envpolicy_core::elf_head::Loads;
        use envpolicy_core::secret::Unguarded;
        // SAFETY: `environ` is NULL or the process's NULL-terminated environment.
        let supervised = unsafe { sys::env_get(sys::environ_ptr(), envpolicy_core::mark::NAME) };
        if supervised.is_some() {
            return;
        }
        let why = match super::deliver::program_loads(self.d.exec.program) {
            Loads::Static => Unguarded::Static,
            Loads::Go => Unguarded::Go,
            Loads::Shim | Loads::Unknown => return,
        };
        let mut m = Msg::<REASON>::new();
        m.push(b"envshim: ");
        envpolicy_core::refusal::unguarded_line(
            self.env_name(i),
            self.prog,
            why,
            envpolicy_core::refusal::Given::Granted,
            &mut |b| {
                m.push(b);
            },
        );
        self.write(&mut m, To::Person);
    }

    /// The loud line of a change ([`envpolicy_core::loud`]), with why its
    /// rule decided it ([`envpolicy_core::reason`]).
    #[cold]
    #[inline(never)]
    fn loud_line(&self, said: Said, name: &[u8], why: Why<'_>) {
        let mut m = Msg::<1024>::new();
        m.push(b"envshim: ");
        let mut text = Msg::<REASON>::new();
        self.reason(&mut text, why);
        let reason = |o: &mut dyn FnMut(Piece<'_>)| o(Piece::Text(text.as_bytes()));
        envpolicy_core::loud::line(said, name, self.prog, &reason, self.source(), &mut |p| {
            m.push_pieces(&[p]);
        });
        self.write(&mut m, To::Person);
    }

    /// Writes a line about this exec, redacting the decision's credentials (and
    /// the caller's) on the way out ([`crate::state::message`]).
    fn write<const N: usize>(&self, m: &mut Msg<N>, to: To) {
        let decided = envpolicy_core::shown::Decided {
            env: self.d.exec.env,
            verdicts: self.d.verdicts,
            min: self.policy().settings().min_value_len as usize,
        };
        let parent = envpolicy_core::shown::EnvSecrets {
            policy: Some(self.policy()),
            env: self.d.exec.parent,
        };
        m.write_to(to, &envpolicy_core::shown::Both(&decided, &parent));
    }

    /// One JSON line per change, to `fd`: the core's one record
    /// ([`envpolicy_core::record`]), as envwrap and the Rust API write it.
    #[cold]
    #[inline(never)]
    pub fn all(&self, fd: c_int) {
        use envpolicy_core::record::Record;
        let base = Record {
            tool: "envshim",
            mode: self.policy().settings().mode,
            pid: sys::raw_getpid() as u32,
            program: self.prog,
            target: "env",
            index: None,
            name: None,
            action: "",
            rule: "",
            layer: self.d.pass.layer,
            why: None,
            loud: false,
            policy: self.source(),
        };
        for (i, v) in self
            .d
            .verdicts
            .iter()
            .enumerate()
            .take(self.d.exec.env.len())
        {
            if v.action == Action::Keep {
                continue;
            }
            let mut why = Msg::<REASON>::new();
            self.reason(&mut why, Why::Entry(v.rule));
            self.record(
                fd,
                &Record {
                    index: self.env_index(i),
                    name: Some(self.env_name(i)),
                    action: v.action.id(),
                    rule: v.rule.id(),
                    why: Some(why.as_bytes()),
                    loud: v.loud,
                    ..base
                },
            );
        }
        for (name, rule) in self.added() {
            let mut why = Msg::<REASON>::new();
            self.reason(&mut why, Why::Added(rule));
            let set = Record {
                name: Some(name),
                action: "set",
                rule: rule.id(),
                why: Some(why.as_bytes()),
                ..base
            };
            self.record(fd, &set);
        }
        let file_values =
            decide::refused_file_value_names(self.policy(), self.d.env.refused_file_values)
                .map(|(k, name)| (name, Why::Entry(Rule::FileValueRefused(k))));
        let sets = decide::refused_set_names(self.policy(), self.d.env.refused_sets)
            .map(|(_, name)| (name, Why::RefusedSet));
        for (name, reason) in file_values.chain(sets) {
            let rule = match reason {
                Why::Entry(rule) => rule.id(),
                _ => "credential.shape",
            };
            let mut why = Msg::<REASON>::new();
            self.reason(&mut why, reason);
            let refused = Record {
                name: Some(name),
                action: "refuse",
                rule,
                why: Some(why.as_bytes()),
                loud: true,
                ..base
            };
            self.record(fd, &refused);
        }
        if let Some(rule) = self.d.argv.program {
            let v = envpolicy_core::argv::ArgVerdict {
                action: ArgAction::Refuse,
                rule,
            };
            let mut why = Msg::<REASON>::new();
            self.arg_reason(&mut why, &v, self.d.exec.program);
            let program = Record {
                target: "program",
                name: self.arg_name(None, rule),
                action: ArgAction::Refuse.id(),
                rule: rule.id(),
                why: Some(why.as_bytes()),
                loud: true,
                ..base
            };
            self.record(fd, &program);
        }
        for (i, v) in self.d.arg_verdicts.iter().enumerate() {
            if v.action == ArgAction::Keep {
                continue;
            }
            let mut why = Msg::<REASON>::new();
            let arg = self.d.exec.argv.get(i).copied().unwrap_or(&[]);
            self.arg_reason(&mut why, v, arg);
            self.record(
                fd,
                &Record {
                    target: "argv",
                    index: self.arg_index(i),
                    name: self.arg_name(Some(i), v.rule),
                    action: v.action.id(),
                    rule: v.rule.id(),
                    why: Some(why.as_bytes()),
                    loud: envpolicy_core::argv::loud(v),
                    ..base
                },
            );
        }
    }

    /// Why, as [`envpolicy_core::reason`] writes it, into `m`.
    fn reason(&self, m: &mut Msg<REASON>, why: Why<'_>) {
        let env_name = |i: u32| Some(self.env_name(i as usize)).filter(|n| !n.is_empty());
        let mut out = m.sink();
        match why {
            Why::Entry(rule) => {
                envpolicy_core::reason::pieces(self.policy(), rule, env_name, &mut out)
            }
            // An added entry's reason names no entry of the exec's.
            Why::Added(rule) => {
                envpolicy_core::reason::pieces(self.policy(), rule, |_| None, &mut out)
            }
            Why::Pair { rule, whole, name } => {
                envpolicy_core::reason::pair(self.policy(), rule, whole, name, env_name, &mut out)
            }
            Why::RefusedSet => out(Piece::Text(envpolicy_core::reason::REFUSED_SET.as_bytes())),
        }
    }

    /// Why argument `arg` changes as `v` says ([`envpolicy_core::reason::argument`]).
    fn arg_reason(&self, m: &mut Msg<REASON>, v: &envpolicy_core::argv::ArgVerdict, arg: &[u8]) {
        let env =
            |i: u32| Some(self.value_name(ValueSource::ChildEnv(i))).filter(|n| !n.is_empty());
        let parent =
            |i: u32| Some(self.value_name(ValueSource::ParentEnv(i))).filter(|n| !n.is_empty());
        let file = |file: u32, line: u32| {
            Some(self.value_name(ValueSource::EnvFile { file, line })).filter(|n| !n.is_empty())
        };
        let names = envpolicy_core::reason::Names { env, parent, file };
        envpolicy_core::reason::argument(self.policy(), v, arg, &names, &mut m.sink());
    }

    /// The variable an argument's (or, for `None`, the path's) change
    /// concerns: whose value or pair it holds, the secret whose `deny_args`
    /// matched; none for a token shape.
    fn arg_name(&self, i: Option<usize>, rule: ArgRule) -> Option<&[u8]> {
        match rule {
            ArgRule::Pair {
                name_at, name_end, ..
            } => i
                .and_then(|i| self.d.exec.argv.get(i))
                .and_then(|a| a.get(name_at as usize..name_end as usize)),
            ArgRule::Value(src) => Some(self.value_name(src)),
            ArgRule::DenyArgs { secret, .. } => Some(self.secret_name(u32::from(secret))),
            ArgRule::Shape(_) | ArgRule::PairFlag | ArgRule::None => None,
        }
    }

    /// Each entry the pass added (a set value, a file value, rule 8's), by
    /// name, with its rule.
    fn added(&self) -> impl Iterator<Item = (&[u8], Rule)> + '_ {
        self.d.emits.iter().filter_map(|e| match *e {
            Emit::Input(_) => None,
            Emit::Built { start, len, rule } => {
                let start = start as usize;
                let entry = self.d.env_bytes.get(start..start + len as usize)?;
                Some((envpolicy_core::bytes::split_entry(entry)?.0, rule))
            }
            Emit::Pooled { entry, rule } => {
                let entry = self.policy().str(entry);
                Some((envpolicy_core::bytes::split_entry(entry)?.0, rule))
            }
        })
    }

    /// One record, as a line to `fd`, hidden against the values in view.
    fn record(&self, fd: c_int, r: &envpolicy_core::record::Record<'_>) {
        let mut m = Msg::<1024>::new();
        envpolicy_core::record::write(r, &mut |b| {
            m.push(b);
        });
        self.write(&mut m, To::Fd(fd));
    }
}
