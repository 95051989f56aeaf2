//! The layout of libenvshim.so's writable memory (shim/layout.ld,
//! docs/adr/0008-one-writable-segment.md) and of its hot text (shim/hot_text.ld,
//! docs/adr/0010-hot-text-first.md), read from the built library.
//!
//! A process start writes a page of the library for each page the loader relocates
//! and each page the constructor writes its statics to, and each of those is a page
//! fault in every process on the machine. So: one writable segment, with nothing
//! beyond the file's bytes for the loader to map (no `.bss`), and every relocation
//! target and every constructor static on one page of it. A failure names what
//! moved; it costs speed, not correctness, and is fixed in shim/layout.ld or by
//! keeping the constructor's statics small.
//!
//! The functions a fork child's exec and a process start run are placed first in
//! the text and together, by section patterns that ci/hot-text generates. A pattern
//! that no longer matches a function (renamed, or inlined since) places nothing,
//! and the code it stood for lands wherever the linker puts it: the test fails and
//! names the pattern.

use goblin::elf::program_header::{PF_W, PT_LOAD};
use goblin::elf::Elf;

use envshim_e2e::*;

/// The statics the constructor writes (`#[link_section = ".data.envshim_ctor"]`),
/// by a piece of their mangled names.
const CTOR_STATICS: &[&str] = &[
    "10ctor_arena3HOT",
    "4real4REAL",
    "4real8RESOLVED",
    "6policy17CONSTRUCTOR_FOUND",
    "8in_force5STATE",
    "6sticky10LD_PRELOAD",
    "6sticky6POLICY",
    "6sticky8OWN_PATH",
    "4load11POLICY_PATH",
    "4load7WARNING",
    "4load10CACHE_PATH",
    "7compile7ENVWRAP",
];

const PAGE: u64 = 4096;

#[test]
fn loading_writes_one_page_of_the_library() {
    let path = shim_so();
    let bytes = std::fs::read(&path).expect("read libenvshim.so");
    let elf = Elf::parse(&bytes).expect("libenvshim.so is ELF");

    let writable: Vec<_> = elf
        .program_headers
        .iter()
        .filter(|p| p.p_type == PT_LOAD && p.p_flags & PF_W != 0)
        .collect();
    assert_eq!(
        writable.len(),
        1,
        "{}: expected one writable segment (no separate RELRO segment), found {}",
        path.display(),
        writable.len()
    );
    let seg = writable[0];
    assert_eq!(
        seg.p_memsz,
        seg.p_filesz,
        "the writable segment has {} bytes of .bss the loader must map and zero",
        seg.p_memsz - seg.p_filesz
    );

    // Every address the loader writes at load.
    let mut written: Vec<(u64, u64, String)> = elf
        .dynrelas
        .iter()
        .chain(elf.pltrelocs.iter())
        .map(|r| (r.r_offset, 8, format!("relocation type {}", r.r_type)))
        .collect();
    // Every static the constructor writes.
    for piece in CTOR_STATICS {
        let sym = elf
            .syms
            .iter()
            .find(|s| {
                elf.strtab
                    .get_at(s.st_name)
                    .is_some_and(|n| n.contains(piece))
            })
            .unwrap_or_else(|| panic!("no symbol matching {piece} in {}", path.display()));
        written.push((sym.st_value, sym.st_size.max(1), format!("static {piece}")));
    }
    let first = written.iter().map(|w| w.0).min().unwrap();
    let page = first / PAGE;
    let off_page: Vec<String> = written
        .iter()
        .filter(|(at, len, _)| at / PAGE != page || (at + len - 1) / PAGE != page)
        .map(|(at, len, what)| format!("{what} at {at:#x}..{:#x}", at + len))
        .collect();
    assert!(
        off_page.is_empty(),
        "written at load outside page {:#x} of the library: {off_page:?}",
        page * PAGE
    );
    assert!(
        seg.p_vaddr / PAGE == page,
        "the written page {:#x} is not the writable segment's first ({:#x})",
        page * PAGE,
        seg.p_vaddr
    );
}

/// The functions every exec and every start run: their symbol names, or for the
/// constructor a piece of its mangled name.
const ALWAYS_HOT: &[&str] = &[
    "envshim_execve",
    "fork",
    "4init12envshim_init",
    "memcpy",
    "memset",
];

#[test]
fn the_hot_text_is_first_and_every_pattern_matches_a_function() {
    let path = shim_so();
    let bytes = std::fs::read(&path).expect("read libenvshim.so");
    let elf = Elf::parse(&bytes).expect("libenvshim.so is ELF");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shim/hot_text.ld");
    let script = std::fs::read_to_string(&script).expect("read shim/hot_text.ld");

    let text = elf
        .section_headers
        .iter()
        .find(|s| elf.shdr_strtab.get_at(s.sh_name) == Some(".text"))
        .unwrap_or_else(|| panic!("{}: no .text section", path.display()));
    let text = text.sh_addr..text.sh_addr + text.sh_size;
    let functions: Vec<(&str, u64, u64)> = elf
        .syms
        .iter()
        .filter(|s| s.is_function() && text.contains(&s.st_value))
        .filter_map(|s| Some((elf.strtab.get_at(s.st_name)?, s.st_value, s.st_size)))
        .collect();

    // `*(.text.NAME)`, where NAME may end in `*` (the symbol's hash left out).
    let patterns: Vec<&str> = script
        .lines()
        .filter_map(|l| l.trim().strip_prefix("*(.text.")?.strip_suffix(')'))
        .collect();
    assert!(
        patterns.len() > 20,
        "shim/hot_text.ld lists {} functions",
        patterns.len()
    );
    let matches = |p: &str, name: &str| match p.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == p,
    };
    let unmatched: Vec<&str> = patterns
        .iter()
        .copied()
        .filter(|p| !functions.iter().any(|f| matches(p, f.0)))
        .collect();
    assert!(
        unmatched.is_empty(),
        "shim/hot_text.ld names functions the library no longer has (run ci/hot-text): {unmatched:?}"
    );

    // The listed functions come first in .text, before every other function (an
    // alias at a listed function's address aside).
    let is_hot = |name: &str| patterns.iter().any(|p| matches(p, name));
    let hot_end = functions
        .iter()
        .filter(|f| is_hot(f.0))
        .map(|f| f.1 + f.2)
        .max()
        .unwrap();
    let hot_starts: Vec<u64> = functions
        .iter()
        .filter(|f| is_hot(f.0))
        .map(|f| f.1)
        .collect();
    let interleaved: Vec<String> = functions
        .iter()
        .filter(|f| !is_hot(f.0) && f.1 < hot_end && !hot_starts.contains(&f.1))
        .map(|f| format!("{} at {:#x}", f.0, f.1))
        .collect();
    assert!(
        interleaved.is_empty(),
        "functions not listed in shim/hot_text.ld lie among the listed ones (before {hot_end:#x}): {interleaved:?}"
    );
    assert_eq!(
        functions.iter().map(|f| f.1).min(),
        Some(text.start),
        "the hot text does not start .text"
    );

    for name in ALWAYS_HOT {
        let found = functions
            .iter()
            .find(|f| f.0 == *name || (name.starts_with(char::is_numeric) && f.0.contains(name)))
            .unwrap_or_else(|| panic!("no function {name} in {}", path.display()));
        assert!(
            is_hot(found.0),
            "{} is not listed in shim/hot_text.ld; run ci/hot-text",
            found.0
        );
    }
}

/// The functions a fork child runs from `execve` to the system call, by a piece
/// of their mangled names (or the symbol itself).
const EXEC_PATH: &[&str] = &[
    "envshim_execve",
    "6filter7prepare17h",
    "6filter7prepare28_$u7b$$u7b$closure",
    "6filter5apply17h",
    "6decide10decide_env17h",
    "6decide7collect17h",
    "4argv11decide_argv17h",
    "9env_cache5claim17h",
    "6policy11follow_edit28_$u7b$$u7b$closure",
    "7scratch7Scratch7reserve17h",
];

/// `sub rsp, 0x1000`: how LLVM probes a frame larger than a page, a page at a time.
const PROBE_A_PAGE: [u8; 7] = [0x48, 0x81, 0xec, 0x00, 0x10, 0x00, 0x00];

/// In a fork child every stack page the exec hook writes is a page fault (a copy of
/// the parent's page), and a frame over a page probes, so faults on, every page of
/// it: a cold branch inlined into `prepare`'s closure once made its frame 8 KiB and
/// cost each child of a shell two faults, about 3 us. Rare paths that need a large
/// frame (a message, the floor) go out of line, `#[cold]` and `#[inline(never)]`.
#[cfg(target_arch = "x86_64")]
#[test]
fn no_function_on_a_fork_childs_exec_path_has_a_frame_over_a_page() {
    let path = shim_so();
    let bytes = std::fs::read(&path).expect("read libenvshim.so");
    let elf = Elf::parse(&bytes).expect("libenvshim.so is ELF");
    let text = elf
        .section_headers
        .iter()
        .find(|s| elf.shdr_strtab.get_at(s.sh_name) == Some(".text"))
        .unwrap_or_else(|| panic!("{}: no .text section", path.display()));
    // .text's file offset, for reading a function's bytes from its address.
    let to_file = |addr: u64| (addr - text.sh_addr + text.sh_offset) as usize;
    let mut large = Vec::new();
    for piece in EXEC_PATH {
        let found: Vec<_> = elf
            .syms
            .iter()
            .filter(|s| s.is_function() && s.st_size > 0)
            .filter_map(|s| Some((elf.strtab.get_at(s.st_name)?, s)))
            .filter(|(name, _)| *name == *piece || name.contains(piece))
            .collect();
        assert!(
            !found.is_empty(),
            "no function matches {piece} in {} (renamed or inlined: update EXEC_PATH)",
            path.display()
        );
        for (name, sym) in found {
            let body = &bytes[to_file(sym.st_value)..to_file(sym.st_value + sym.st_size)];
            if body.windows(PROBE_A_PAGE.len()).any(|w| w == PROBE_A_PAGE) {
                large.push(name.to_string());
            }
        }
    }
    assert!(
        large.is_empty(),
        "functions on a fork child's exec path with a frame over a page: {large:?}"
    );
}
