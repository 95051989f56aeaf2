//! Lowercase hexadecimal for the shim's own variables (`ENVSHIM_HINT`'s
//! digest, `ENVSHIM_SUPERVISOR`'s run key): written into a caller's buffer,
//! with no allocation and no formatting machinery.

/// `v`'s low `4 * out.len()` bits as `out.len()` lowercase hex digits, most
/// significant first.
pub fn put(v: u64, out: &mut [u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let n = out.len();
    for (i, slot) in out.iter_mut().enumerate() {
        let shift = 4 * (n - 1 - i) as u32;
        let nibble = v.checked_shr(shift).unwrap_or(0) & 0xf;
        *slot = HEX.get(nibble as usize).copied().unwrap_or(b'0');
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn put_writes_the_low_digits() {
        let mut out = [0u8; 4];
        super::put(0xdead_beef, &mut out);
        assert_eq!(&out, b"beef");
        let mut out = [0u8; 16];
        super::put(0x0123_4567_89ab_cdef, &mut out);
        assert_eq!(&out, b"0123456789abcdef");
    }
}
