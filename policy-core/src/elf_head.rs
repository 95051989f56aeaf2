//! What the first bytes of a program's file say about whether a shim can
//! police the execs it makes: a statically linked program has no loader to
//! read `LD_PRELOAD`, and a Go program's runtime makes the exec system call
//! itself. Read from the program headers (`PT_INTERP`: a loader runs) and
//! Go's build id note (`PT_NOTE`, owner `Go`, type 4), both in the file's
//! first page on every linker this was tried with. 64-bit little-endian ELF
//! only (x86-64, aarch64): anything else is [`Loads::Unknown`], and nothing is
//! said of it.
//!
//! One home for the shim (which reads [`HEAD`] bytes at a secret's exec) and
//! envwrap (which reads the same), so that both say the same of a program.

/// Bytes of the file to read and hand to [`inspect`].
pub const HEAD: usize = 4096;

/// What a program's head says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loads {
    /// A loader runs, and the program makes its execs through the C library:
    /// the shim loads into it and sees them.
    Shim,
    /// No loader: `LD_PRELOAD` is not read.
    Static,
    /// A Go program: the shim may load, but sees none of its execs.
    Go,
    /// Not a 64-bit little-endian ELF file (a script, another class), or its
    /// headers are not in the head.
    Unknown,
}

const PT_INTERP: u32 = 3;
const PT_NOTE: u32 = 4;
const GO_BUILD_ID: u32 = 4;

fn u16_at(b: &[u8], at: usize) -> Option<usize> {
    let w: [u8; 2] = b.get(at..at + 2)?.try_into().ok()?;
    Some(u16::from_le_bytes(w) as usize)
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let w: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
    Some(u32::from_le_bytes(w))
}

fn u64_at(b: &[u8], at: usize) -> Option<usize> {
    let w: [u8; 8] = b.get(at..at + 8)?.try_into().ok()?;
    usize::try_from(u64::from_le_bytes(w)).ok()
}

/// What `head` (the first bytes of the file, up to [`HEAD`]) says.
pub fn inspect(head: &[u8]) -> Loads {
    // ELF magic, ELFCLASS64, ELFDATA2LSB.
    if head.get(..6) != Some(b"\x7fELF\x02\x01") {
        return Loads::Unknown;
    }
    let (Some(phoff), Some(phentsize), Some(phnum)) =
        (u64_at(head, 0x20), u16_at(head, 0x36), u16_at(head, 0x38))
    else {
        return Loads::Unknown;
    };
    let mut interp = false;
    let mut go = false;
    for k in 0..phnum {
        let Some(ph) = phoff
            .checked_add(k.saturating_mul(phentsize))
            .and_then(|at| head.get(at..at.checked_add(56)?))
        else {
            return Loads::Unknown;
        };
        match u32_at(ph, 0) {
            Some(PT_INTERP) => interp = true,
            Some(PT_NOTE) => {
                let (Some(off), Some(size)) = (u64_at(ph, 8), u64_at(ph, 32)) else {
                    continue;
                };
                let notes = off.checked_add(size).and_then(|end| head.get(off..end));
                go |= notes.is_some_and(holds_go_build_id);
            }
            _ => {}
        }
    }
    match (interp, go) {
        (_, true) => Loads::Go,
        (false, false) => Loads::Static,
        (true, false) => Loads::Shim,
    }
}

/// Does a note segment hold Go's build id note?
fn holds_go_build_id(mut notes: &[u8]) -> bool {
    let align = |n: usize| n.div_ceil(4).saturating_mul(4);
    while let (Some(namesz), Some(descsz), Some(kind)) =
        (u32_at(notes, 0), u32_at(notes, 4), u32_at(notes, 8))
    {
        let (namesz, descsz) = (namesz as usize, descsz as usize);
        // The owner's name, NUL-padded: Go's linker writes `Go\0\0` (4 bytes).
        let owner = notes.get(12..12usize.saturating_add(namesz)).unwrap_or(&[]);
        let owner = match owner.iter().position(|&b| b == 0) {
            Some(end) => owner.get(..end).unwrap_or(owner),
            None => owner,
        };
        if kind == GO_BUILD_ID && owner == b"Go" {
            return true;
        }
        let next = 12usize
            .saturating_add(align(namesz))
            .saturating_add(align(descsz));
        match notes.get(next..) {
            Some(rest) => notes = rest,
            None => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elf(phdrs: &[(u32, u64, u64)], tail: &[u8]) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..6].copy_from_slice(b"\x7fELF\x02\x01");
        h[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        h[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        h[0x38..0x3a].copy_from_slice(&(phdrs.len() as u16).to_le_bytes());
        for &(t, off, size) in phdrs {
            let mut ph = vec![0u8; 56];
            ph[..4].copy_from_slice(&t.to_le_bytes());
            ph[8..16].copy_from_slice(&off.to_le_bytes());
            ph[32..40].copy_from_slice(&size.to_le_bytes());
            h.extend(ph);
        }
        h.extend_from_slice(tail);
        h
    }

    #[test]
    fn interp_and_go_notes_are_read() {
        assert_eq!(inspect(&elf(&[(1, 0, 0)], b"")), Loads::Static);
        assert_eq!(inspect(&elf(&[(PT_INTERP, 0, 0), (1, 0, 0)], b"")), Loads::Shim);
        let mut note = Vec::new();
        note.extend(4u32.to_le_bytes());
        note.extend(4u32.to_le_bytes());
        note.extend(GO_BUILD_ID.to_le_bytes());
        note.extend(b"Go\0\0abcd");
        let at = 64 + 2 * 56;
        let go = elf(&[(PT_INTERP, 0, 0), (PT_NOTE, at, note.len() as u64)], &note);
        assert_eq!(inspect(&go), Loads::Go);
        let go_static = elf(&[(1, 0, 0), (PT_NOTE, at, note.len() as u64)], &note);
        assert_eq!(inspect(&go_static), Loads::Go);
        assert_eq!(inspect(b"#!/bin/sh\n"), Loads::Unknown);
        assert_eq!(inspect(&elf(&[(1, 0, 0)], b"")[..80]), Loads::Unknown);
    }

    #[test]
    fn this_test_binary_is_read_as_the_loader_sees_it() {
        let exe = std::fs::read("/proc/self/exe").unwrap();
        let head = &exe[..HEAD.min(exe.len())];
        assert_eq!(inspect(head), Loads::Shim);
    }
}
