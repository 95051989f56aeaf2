//! A tiny non-cryptographic PRNG (splitmix64) for generating fake secrets.
//!
//! The values only need to be unique per sandbox and never collide with text that
//! occurs naturally in program output; they do not need to be unpredictable. Seeded
//! from the clock, the pid, a process-wide counter and a stack address, so two
//! sandboxes in one process, or in two processes started in the same nanosecond,
//! still differ.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

static SEED_COUNTER: AtomicU64 = AtomicU64::new(0);

/// splitmix64: small, fast, and good enough to spread any seed over 64 bits.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

pub const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
pub const UPPER_BASE32: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
pub const DIGITS: &[u8] = b"0123456789";

impl Rng {
    /// A generator with a fixed seed (reproducible sequences, for the harness's own tests).
    pub fn with_seed(seed: u64) -> Rng {
        Rng { state: seed }
    }

    /// A generator seeded from time, pid, a counter and a stack address.
    pub fn from_entropy() -> Rng {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let pid = u64::from(std::process::id());
        let count = SEED_COUNTER.fetch_add(1, Ordering::Relaxed);
        let local = 0u8;
        let addr = &local as *const u8 as u64;
        let mut rng = Rng::with_seed(
            nanos ^ pid.rotate_left(32) ^ count.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ addr,
        );
        // Discard a few outputs so close seeds diverge.
        for _ in 0..4 {
            rng.next_u64();
        }
        rng
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (rejection sampling; `n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let x = self.next_u64();
            if x < zone {
                return x % n;
            }
        }
    }

    /// `len` characters drawn uniformly from `alphabet`.
    pub fn string_from(&mut self, alphabet: &[u8], len: usize) -> String {
        (0..len)
            .map(|_| alphabet[self.below(alphabet.len() as u64) as usize] as char)
            .collect()
    }

    /// `len` ASCII letters and digits.
    pub fn alnum(&mut self, len: usize) -> String {
        self.string_from(ALNUM, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_is_reproducible_and_entropy_differs() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::with_seed(7);
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::with_seed(7);
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(Rng::from_entropy().alnum(32), Rng::from_entropy().alnum(32));
    }

    #[test]
    fn alphabet_respected() {
        let mut r = Rng::with_seed(1);
        let s = r.string_from(DIGITS, 200);
        assert!(s.bytes().all(|b| b.is_ascii_digit()));
        assert_eq!(r.alnum(36).len(), 36);
    }
}
