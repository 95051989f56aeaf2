//! What another process's environment holds now, not what it started with.
//!
//! `/proc/PID/environ` shows the block the kernel put on the process's stack at
//! exec. A program that changes its environment afterwards with `setenv(3)`
//! (GNU screen's `setenv` command does, and hands the result to every window it
//! opens) keeps the new entries in its heap, where that file does not look, and
//! an `unsetenv(3)` leaves the old entry in the block. The C library's
//! `environ` array is the truth: found here through the symbol tables of the
//! program and of the C library, and their places in the process's maps, and
//! read through `/proc/PID/mem` (which needs the access `ptrace` would: the
//! same user and a dumpable process, or root). A program that names `environ`
//! itself holds the variable in its own data (a copy relocation, which the C
//! library then uses too), so the program's definition comes first.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// At most this many entries, and this many bytes per entry, are read: an
/// environment larger than that is not one a program set up by hand.
const MAX_ENTRIES: usize = 16_384;
const MAX_ENTRY: usize = 1 << 20;

/// The entries of process `pid`'s `environ` array, or why they could not be
/// read.
pub fn read(pid: u32) -> Result<Vec<Vec<u8>>, String> {
    let maps = std::fs::read(format!("/proc/{pid}/maps")).map_err(|e| e.to_string())?;
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).map_err(|e| e.to_string())?;
    let is_exe = |path: &str| Path::new(path) == exe;
    let is_libc = |path: &str| {
        let name = path.rsplit('/').next().unwrap_or(path);
        name == "libc.so.6" || (name.starts_with("libc-") && name.ends_with(".so"))
    };
    let address = [&is_exe as &dyn Fn(&str) -> bool, &is_libc]
        .into_iter()
        .find_map(|which| {
            let (base, path) = first_mapping(&maps, which)?;
            environ_symbol(Path::new(&path), base)
        })
        .ok_or("no environ found in the program or its C library")?;
    let mem = File::open(format!("/proc/{pid}/mem")).map_err(|e| e.to_string())?;
    let array = read_word(&mem, address)?;
    let mut entries = Vec::new();
    for i in 0..MAX_ENTRIES as u64 {
        let entry = read_word(&mem, array + i * 8)?;
        if entry == 0 {
            return Ok(entries);
        }
        entries.push(read_c_string(&mem, entry)?);
    }
    Err("its environment is too large to read".into())
}

/// The start of the first mapping (file offset 0) of the file `which` accepts,
/// and its path.
fn first_mapping(maps: &[u8], which: &dyn Fn(&str) -> bool) -> Option<(u64, String)> {
    String::from_utf8_lossy(maps).lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let path = *fields.get(5)?;
        if !which(path) || u64::from_str_radix(fields.get(2)?, 16).ok()? != 0 {
            return None;
        }
        let start = u64::from_str_radix(fields.first()?.split('-').next()?, 16).ok()?;
        Some((start, path.to_string()))
    })
}

/// Where the file at `path`, loaded at `base`, defines `environ` (under any of
/// its names), if it does.
fn environ_symbol(path: &Path, base: u64) -> Option<u64> {
    let bytes = std::fs::read(path).ok()?;
    let elf = goblin::elf::Elf::parse(&bytes).ok()?;
    let names = ["__environ", "environ", "_environ"];
    let sym = elf.dynsyms.iter().find(|s| {
        s.st_value != 0
            && s.st_shndx != 0
            && elf
                .dynstrtab
                .get_at(s.st_name)
                .is_some_and(|n| names.contains(&n))
    })?;
    // A position-independent file's values are offsets from where it is loaded.
    let relative = elf.header.e_type == goblin::elf::header::ET_DYN;
    Some(if relative {
        base + sym.st_value
    } else {
        sym.st_value
    })
}

fn read_word(mem: &File, at: u64) -> Result<u64, String> {
    let mut word = [0u8; 8];
    mem.read_exact_at(&mut word, at)
        .map_err(|e| e.to_string())?;
    Ok(u64::from_ne_bytes(word))
}

fn read_c_string(mem: &File, at: u64) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut chunk = [0u8; 256];
    while out.len() < MAX_ENTRY {
        let n = mem
            .read_at(&mut chunk, at + out.len() as u64)
            .map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        let piece = chunk.get(..n).unwrap_or(&[]);
        if let Some(nul) = piece.iter().position(|&b| b == 0) {
            out.extend_from_slice(piece.get(..nul).unwrap_or(&[]));
            return Ok(out);
        }
        out.extend_from_slice(piece);
    }
    Err("an entry of its environment has no end".into())
}

#[cfg(test)]
mod tests {
    /// This process's own environment, read as another's would be, holds what
    /// `setenv` put there after exec.
    #[test]
    fn reads_what_setenv_added_after_exec() {
        // SAFETY: a test binary's own thread; no other thread reads the
        // environment while this runs (the value is checked once below).
        unsafe { std::env::set_var("ENVSHIM_LIVE_ENVIRON_TEST", "after-exec") };
        let entries = super::read(std::process::id()).expect("read own environment");
        assert!(entries
            .iter()
            .any(|e| e == b"ENVSHIM_LIVE_ENVIRON_TEST=after-exec"));
    }
}
