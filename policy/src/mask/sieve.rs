//! Where in a stretch of output a form may be, found without running the
//! automaton over every byte.
//!
//! Why: an Aho-Corasick automaton over a hundred forms of twenty tokens walks
//! its table at every byte (about 15 instructions a byte: its prefilter helps
//! little when every letter and digit starts some form), which made the relay
//! the slowest part of `cat` through `--mask`. A form is at least `shortest`
//! bytes long; sampling the output every `shortest - 3` bytes puts a sample's
//! 4 bytes inside every form it holds. Each sample is looked up in a set of
//! every 4-byte run of every form (a bitmap of 2^20 bits, about 0.5% full for
//! twenty tokens); only around a sample found there does the automaton run,
//! over the stretch a form through that sample can cover. The idea is
//! envpolicy_core::encoded's `Sieve`, which passes over argv values the same
//! way, at a size for a stream.

/// Bits of the set of 4-byte runs.
const BITS: u32 = 20;

/// The 4-byte runs of every form, and the sampling step.
pub struct Sieve {
    bits: Vec<u64>,
    /// Bytes between samples: the shortest form's length less 3.
    step: usize,
    /// Bytes a form through a sample may reach on either side of it.
    reach: usize,
}

impl Sieve {
    /// The sieve of `patterns`, or `None` when one is too short to sample
    /// (under 8 bytes: the automaton alone is as quick).
    pub fn of(patterns: &[Vec<u8>]) -> Option<Sieve> {
        let shortest = patterns.iter().map(Vec::len).min()?;
        let longest = patterns.iter().map(Vec::len).max()?;
        if shortest < 8 {
            return None;
        }
        let mut sieve = Sieve {
            bits: vec![0u64; 1 << (BITS - 6)],
            step: shortest - 3,
            reach: longest,
        };
        for p in patterns {
            for run in p.windows(4) {
                let h = hash(run);
                sieve.bits[h >> 6] |= 1 << (h & 63);
            }
        }
        Some(sieve)
    }

    fn holds(&self, run: &[u8]) -> bool {
        let h = hash(run);
        self.bits[h >> 6] & (1 << (h & 63)) != 0
    }

    /// The stretches of `text` (merged, in order) outside of which it holds
    /// no whole form: around each sample whose 4 bytes are a run of some form.
    pub fn stretches(&self, text: &[u8]) -> Vec<(usize, usize)> {
        let mut out: Vec<(usize, usize)> = Vec::new();
        let mut at = 0usize;
        while let Some(run) = text.get(at..at + 4) {
            if self.holds(run) {
                let start = at.saturating_sub(self.reach);
                let end = (at + self.reach).min(text.len());
                match out.last_mut() {
                    Some(last) if start <= last.1 => last.1 = end,
                    _ => out.push((start, end)),
                }
            }
            at += self.step;
        }
        out
    }
}

/// The run's slot in the set: a multiplicative hash of its 4 bytes.
fn hash(run: &[u8]) -> usize {
    let mut b = [0u8; 4];
    b.copy_from_slice(&run[..4]);
    (u32::from_le_bytes(b).wrapping_mul(0x9E37_79B1) >> (32 - BITS)) as usize
}

#[cfg(test)]
mod tests {
    use super::Sieve;

    #[test]
    fn every_form_in_a_text_is_in_a_stretch() {
        let forms = vec![
            b"ghp_0123456789abcdefghij".to_vec(),
            b"Z2hwXzAxMjM0NTY3".to_vec(),
        ];
        let sieve = Sieve::of(&forms).expect("long enough");
        let filler = b"The quick brown fox jumps over the lazy dog. ".repeat(40);
        for form in &forms {
            for at in 0..64 {
                let mut text = filler.clone();
                text.splice(at * 7..at * 7, form.iter().copied());
                let s = sieve.stretches(&text);
                let start = at * 7;
                assert!(
                    s.iter()
                        .any(|&(a, b)| a <= start && start + form.len() <= b),
                    "a form at {start} is in no stretch"
                );
            }
        }
        // Text without any form: few stretches, if any.
        assert!(sieve.stretches(&filler).len() < 3);
    }

    #[test]
    fn short_forms_are_not_sampled() {
        assert!(Sieve::of(&[b"short".to_vec()]).is_none());
    }
}
