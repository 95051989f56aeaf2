//! The supervisor's mark: how an exec the shim has already judged passes
//! `envwrap --supervise` without a second judgement (docs/adr/0016-supervised-exec.md,
//! "The mark").
//!
//! The supervisor picks a random 64-bit run key per run and puts it in the
//! tree's environment as `ENVSHIM_SUPERVISOR=<16 hex digits>` ([`NAME`]). A shim
//! that decided an exec with a compiled policy makes it as the system call
//! `execveat(MARK, absolute_path, argv, envp, 0)`, where MARK ([`mark`]) mixes
//! the run key with the identity of that compiled policy ([`identity`]). The
//! kernel ignores the directory fd of an absolute path; the supervisor's seccomp
//! filter compares the register with the MARK it computed from its own policy and
//! lets a match run without a notification. Every other exec, a shim that runs
//! another policy (an edit, a failure floor, any drift) included, is judged as
//! before.
//!
//! What the mark proves is only that a process knew the run key: it is in every
//! environment of the tree. A program that forges it can pass to its child what
//! it already holds, which it could send anywhere without an exec; `--supervise`
//! is there for honest programs that bypass libc (docs/threat-model.md).
//!
//! Both sides compute the mark here, from the same bytes: one definition.

/// The variable that carries the run key to the shims of the tree.
pub const NAME: &[u8] = crate::shared::SUPERVISOR.as_bytes();

/// `ENVSHIM_SUPERVISOR=` and 16 lowercase hex digits.
pub const ENTRY_LEN: usize = NAME.len() + 1 + 16;

/// The run key in `value` (what follows `ENVSHIM_SUPERVISOR=`): exactly 16
/// lowercase hex digits, not all zero. Anything else is no key.
pub fn run_key(value: &[u8]) -> Option<u64> {
    if value.len() != 16 {
        return None;
    }
    let mut key = 0u64;
    for &b in value {
        let digit = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            _ => return None,
        };
        key = (key << 4) | u64::from(digit);
    }
    (key != 0).then_some(key)
}

/// `ENVSHIM_SUPERVISOR=<key>`, for the supervisor's command.
pub fn entry(key: u64) -> [u8; ENTRY_LEN] {
    let mut out = [0u8; ENTRY_LEN];
    let (name, rest) = out.split_at_mut(NAME.len());
    name.copy_from_slice(NAME);
    if let Some((eq, hex)) = rest.split_first_mut() {
        *eq = b'=';
        crate::hex::put(key, hex);
    }
    out
}

/// The identity of a compiled policy: a hash of all its bytes, eight at a time,
/// one multiply each (a policy of a few kilobytes hashes in under a
/// microsecond, at each marked exec). Not a cryptographic hash: what keeps a
/// forger out is the run key, and the identity only tells two policies apart.
pub fn identity(compiled: &[u8]) -> u64 {
    let mut h = 0x243f_6a88_85a3_08d3u64 ^ compiled.len() as u64;
    let mut words = compiled.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        h = (h ^ u64::from_le_bytes(b))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(29);
    }
    let mut tail = [0u8; 8];
    let rest = words.remainder();
    if let Some(t) = tail.get_mut(..rest.len()) {
        t.copy_from_slice(rest);
    }
    mix(h ^ u64::from_le_bytes(tail))
}

/// The mark for run key `key` and the policy of identity `policy`: never 0, so
/// that 0 can mean "no mark" to a caller.
pub fn mark(key: u64, policy: u64) -> u64 {
    mix(key ^ mix(policy)).max(1)
}

/// splitmix64's finaliser: every input bit moves every output bit.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_and_run_key_round_trip() {
        for key in [1u64, 0xdead_beef, u64::MAX, 0x0123_4567_89ab_cdef] {
            let e = entry(key);
            let value = e.strip_prefix(b"ENVSHIM_SUPERVISOR=").expect("name");
            assert_eq!(run_key(value), Some(key));
        }
    }

    #[test]
    fn malformed_keys_are_no_key() {
        for v in [
            &b""[..],
            b"0000000000000000",
            b"0123456789abcde",
            b"0123456789abcdef0",
            b"0123456789ABCDEF",
            b"0123456789abcdeg",
            b" 123456789abcdef",
        ] {
            assert_eq!(run_key(v), None, "{v:?}");
        }
    }

    #[test]
    fn the_mark_tells_keys_and_policies_apart() {
        let a = identity(b"version = 1 compiled, say");
        let b = identity(b"version = 1 compiled, sax");
        assert_ne!(a, b);
        assert_ne!(identity(b"12345678"), identity(b"12345678\0"));
        assert_ne!(mark(1, a), mark(2, a));
        assert_ne!(mark(1, a), mark(1, b));
        assert_eq!(mark(7, a), mark(7, identity(b"version = 1 compiled, say")));
        assert_ne!(mark(0, 0), 0);
    }
}
