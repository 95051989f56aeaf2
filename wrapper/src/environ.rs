//! Environments as lists of raw `NAME=VALUE` entries, as exec passes them.
//!
//! envwrap reads its own environment from `environ` as it is, entries without `=`
//! and duplicate names included: the policy's normalise rule decides about those,
//! exactly as it does for libenvshim.so, which sees the raw `envp`.
//! `std::env::vars_os` would hide them.

use std::ffi::CStr;

/// envwrap's own environment, entry for entry.
pub fn own() -> Vec<Vec<u8>> {
    extern "C" {
        static environ: *const *const libc::c_char;
    }
    let mut out = Vec::new();
    // SAFETY: `environ` is the process's NULL-terminated array of NUL-terminated
    // strings. envwrap reads it once, from the main thread, before it starts any
    // thread or changes its environment, so nothing mutates it meanwhile.
    unsafe {
        let mut p = environ;
        if p.is_null() {
            return out;
        }
        while !(*p).is_null() {
            out.push(CStr::from_ptr(*p).to_bytes().to_vec());
            p = p.add(1);
        }
    }
    out
}

/// The name of an entry (all of it when there is no `=`).
pub fn name(entry: &[u8]) -> &[u8] {
    match entry.iter().position(|&b| b == b'=') {
        Some(i) => &entry[..i],
        None => entry,
    }
}

/// The value of the first entry named `name`, as `getenv` reads it.
pub fn get<'e>(env: &'e [Vec<u8>], name: &[u8]) -> Option<&'e [u8]> {
    env.iter().find_map(|e| {
        let eq = e.iter().position(|&b| b == b'=')?;
        (&e[..eq] == name).then(|| &e[eq + 1..])
    })
}

/// Remove every entry named `name`, as `unsetenv` does.
pub fn unset(env: &mut Vec<Vec<u8>>, name: &[u8]) {
    env.retain(|e| self::name(e) != name || !e.contains(&b'='));
}

/// Set `name` to `value`: the first entry of that name is replaced in place, or
/// the entry is appended, as `setenv` does.
pub fn set(env: &mut Vec<Vec<u8>>, name: &[u8], value: &[u8]) {
    let mut entry = name.to_vec();
    entry.push(b'=');
    entry.extend_from_slice(value);
    match env
        .iter_mut()
        .find(|e| e.contains(&b'=') && self::name(e) == name)
    {
        Some(slot) => *slot = entry,
        None => env.push(entry),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_unset_get() {
        let mut env: Vec<Vec<u8>> = vec![
            b"A=1".to_vec(),
            b"B=2".to_vec(),
            b"A=3".to_vec(),
            b"A".to_vec(),
        ];
        assert_eq!(get(&env, b"A"), Some(&b"1"[..]));
        set(&mut env, b"A", b"x=y");
        assert_eq!(env[0], b"A=x=y");
        assert_eq!(env[2], b"A=3");
        set(&mut env, b"C", b"");
        assert_eq!(env.last().unwrap(), b"C=");
        unset(&mut env, b"A");
        assert_eq!(env, vec![b"B=2".to_vec(), b"A".to_vec(), b"C=".to_vec()]);
        assert_eq!(name(b"NOEQ"), b"NOEQ");
    }
}
