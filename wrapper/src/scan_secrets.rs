//! `envwrap scan`'s search for `[[secret]]` values
//! (docs/adr/0019-secrets-delivered-at-exec.md).
//!
//! Why apart from the credential needles: a secret's value is in no
//! environment the scan was given; the scan reads each source it can (as the
//! user running it, by the same reader envwrap delivers with), and a secret's
//! value is expected in the environment of the programs that get it. So the
//! values are searched for in two ways: in every argument of every process
//! (scan.rs adds them to its credential needles, owner `secret NAME`), and in
//! the environment of every process that is not one of the secret's programs.

use crate::scan::Finding;
use crate::value;
use aho_corasick::AhoCorasick;
use envpolicy::bytes::split_entry;
use envpolicy::compiled::Policy;
use envpolicy::secret::program_matches;
use envpolicy::secret_source::{self, Values};

/// The secrets' values the scan could read, and an automaton over them.
pub struct SecretNeedles {
    pub values: Values,
    automaton: Option<AhoCorasick>,
    /// Per pattern of the automaton: the secret's index.
    secret_of: Vec<u32>,
}

impl SecretNeedles {
    /// Read every secret's source the scan's user can read, with the scan's
    /// own environment (`credential:` needs `CREDENTIALS_DIRECTORY`). A source
    /// that gives no value is left out quietly: `secret list` says why.
    pub fn read(policy: &Policy<'_>, own: &[Vec<u8>]) -> SecretNeedles {
        let all = u16::MAX;
        // A helper is not run from here, above every program (docs/masking.md).
        let all = secret_source::without_helpers(policy, all);
        let values = secret_source::read_mask(policy, all, own).values;
        value::learn_secret_values(values.read().map(|(_, v)| v));
        let (secret_of, patterns): (Vec<u32>, Vec<&[u8]>) = values.read().unzip();
        let automaton = (!patterns.is_empty())
            .then(|| AhoCorasick::new(&patterns).ok())
            .flatten();
        SecretNeedles {
            automaton,
            secret_of,
            values,
        }
    }

    /// The name of secret `i`, as a message shows it.
    fn name(policy: &Policy<'_>, i: u32) -> String {
        policy.secret(i).map_or_else(
            || format!("secret {i}"),
            |s| value::word(policy.str(s.name)),
        )
    }

    /// Findings for the environment `entries` of process `pid`: each entry
    /// holding a secret's value, unless the process is one of that secret's
    /// programs (by any of `names`: its argv\[0\], its comm, its executable).
    /// An entry already found (by name, as a refused credential) is not found
    /// twice.
    #[allow(clippy::too_many_arguments)]
    pub fn scan_environ(
        &self,
        policy: &Policy<'_>,
        pid: u32,
        program: &str,
        names: &[Vec<u8>],
        entries: &[Vec<u8>],
        out: &mut Vec<Finding>,
    ) {
        let Some(ac) = &self.automaton else { return };
        for entry in entries {
            let Some((var, val)) = split_entry(entry) else {
                continue;
            };
            let var = value::word(var);
            for m in ac.find_overlapping_iter(val) {
                let i = self.secret_of[m.pattern().as_usize()];
                if self.is_program_of(policy, i, names) || already_found(out, pid, &var) {
                    continue;
                }
                let secret = Self::name(policy, i);
                out.push(Finding {
                    pid,
                    program: program.to_string(),
                    kind: "environ.secret",
                    variable: Some(var.clone()),
                    index: None,
                    why: format!(
                        "holds the value of secret {secret} in {var}, outside the programs \
                         that get it"
                    ),
                });
            }
        }
    }

    /// Is a process known by `names` one of secret `i`'s programs?
    fn is_program_of(&self, policy: &Policy<'_>, i: u32, names: &[Vec<u8>]) -> bool {
        policy.secret(i).is_some_and(|s| {
            names
                .iter()
                .any(|n| program_matches(s.kind, policy.str(s.program), n))
        })
    }

    /// The values with their owners' names, for scan's argv needles.
    pub fn owned<'a>(
        &'a self,
        policy: &'a Policy<'_>,
    ) -> impl Iterator<Item = (String, &'a [u8])> + 'a {
        self.values
            .read()
            .map(move |(i, v)| (Self::name(policy, i), v))
    }
}

/// Drop the findings of process `pid` (known by `names`) that name a
/// secret's variable where the process is one of that secret's programs: the
/// credential check decides for argv\[0\], which for a script is its
/// interpreter, while a secret belongs in the environment of its program.
pub fn forgive_secret_programs(
    policy: &Policy<'_>,
    pid: u32,
    names: &[Vec<u8>],
    out: &mut Vec<Finding>,
) {
    let own: Vec<String> = (0..policy.count(envpolicy::compiled::sec::SECRETS) as u32)
        .filter_map(|i| policy.secret(i))
        .filter(|s| {
            names
                .iter()
                .any(|n| program_matches(s.kind, policy.str(s.program), n))
        })
        .map(|s| value::word(policy.str(s.name)))
        .collect();
    out.retain(|f| {
        !(f.pid == pid
            && f.kind == "environ.refused"
            && f.variable.as_ref().is_some_and(|v| own.contains(v)))
    });
}

fn already_found(out: &[Finding], pid: u32, var: &str) -> bool {
    out.iter()
        .any(|f| f.pid == pid && f.variable.as_deref() == Some(var))
}

/// What a process is known by, for a secret's program pattern (a path): its
/// argv\[0\], its comm, its executable's path, and, for a script (its kernel
/// puts the script's path after the interpreter's), an absolute argv\[1\].
pub fn process_names(pid: u32, args: &[Vec<u8>]) -> Vec<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    let mut names: Vec<Vec<u8>> = args.first().into_iter().cloned().collect();
    names.extend(args.get(1).filter(|a| a.first() == Some(&b'/')).cloned());
    names.push(crate::procfs::comm(pid).into_bytes());
    if let Ok(exe) = std::fs::read_link(format!("/proc/{pid}/exe")) {
        names.push(exe.as_os_str().as_bytes().to_vec());
    }
    names
}
