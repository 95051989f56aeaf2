//! The execs already judged unchanged, by a keyed digest of everything the
//! verdict reads: the program, argv, the environment and the env files'
//! contents. A loop that starts the same command with the same environment is
//! judged once (docs/adr/0016-supervised-exec.md measured the judge at about a
//! third of the supervisor's time per exec).
//!
//! Only "unchanged" is remembered: a refusal is judged, said and logged each
//! time. The digest is two SipHash passes under keys drawn at start (std's
//! `RandomState`), 128 bits a process in the tree cannot predict, so it cannot
//! make a refused exec collide with an allowed one. The set is emptied when it
//! is full, and whenever the policy the supervisor holds changes.

use std::collections::hash_map::RandomState;
use std::collections::HashSet;
use std::hash::{BuildHasher, Hash, Hasher};

/// Enough for the distinct commands of a busy tree; past it, start again.
const MAX: usize = 4096;

pub struct Seen {
    keys: [RandomState; 2],
    set: HashSet<u128>,
}

impl Seen {
    pub fn new() -> Seen {
        Seen {
            keys: [RandomState::new(), RandomState::new()],
            set: HashSet::new(),
        }
    }

    /// The digest of one exec's inputs.
    pub fn digest(
        &self,
        program: &[u8],
        argv: &[Vec<u8>],
        env: &[Vec<u8>],
        files: &[Option<Vec<u8>>],
    ) -> u128 {
        let half = |k: &RandomState| {
            let mut h = k.build_hasher();
            program.hash(&mut h);
            argv.hash(&mut h);
            env.hash(&mut h);
            files.hash(&mut h);
            h.finish()
        };
        (u128::from(half(&self.keys[0])) << 64) | u128::from(half(&self.keys[1]))
    }

    pub fn contains(&self, digest: u128) -> bool {
        self.set.contains(&digest)
    }

    pub fn insert(&mut self, digest: u128) {
        if self.set.len() >= MAX {
            self.set.clear();
        }
        self.set.insert(digest);
    }

    /// Forget everything (the policy changed).
    pub fn clear(&mut self) {
        self.set.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_input_is_in_the_digest() {
        let s = Seen::new();
        let v = |x: &str| vec![x.as_bytes().to_vec()];
        let base = s.digest(b"/bin/true", &v("true"), &v("A=1"), &[]);
        assert_eq!(base, s.digest(b"/bin/true", &v("true"), &v("A=1"), &[]));
        assert_ne!(base, s.digest(b"/bin/tru", &v("true"), &v("A=1"), &[]));
        assert_ne!(base, s.digest(b"/bin/true", &v("true "), &v("A=1"), &[]));
        assert_ne!(base, s.digest(b"/bin/true", &v("true"), &v("A=2"), &[]));
        assert_ne!(base, s.digest(b"/bin/true", &v("true"), &v("A=1"), &[None]));
        // Boundaries count: ["ab"] is not ["a", "b"].
        let two = vec![b"a".to_vec(), b"b".to_vec()];
        assert_ne!(
            s.digest(b"p", &v("ab"), &[], &[]),
            s.digest(b"p", &two, &[], &[])
        );
    }
}
