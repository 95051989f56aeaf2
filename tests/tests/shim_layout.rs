//! The layout of libenvshim.so's writable memory (shim/layout.ld,
//! docs/adr/0008-one-writable-segment.md), read from the built library.
//!
//! A process start writes a page of the library for each page the loader relocates
//! and each page the constructor writes its statics to, and each of those is a page
//! fault in every process on the machine. So: one writable segment, with nothing
//! beyond the file's bytes for the loader to map (no `.bss`), and every relocation
//! target and every constructor static on one page of it. A failure names what
//! moved; it costs speed, not correctness, and is fixed in shim/layout.ld or by
//! keeping the constructor's statics small.

use goblin::elf::program_header::{PF_W, PT_LOAD};
use goblin::elf::Elf;

use envshim_e2e::*;

/// The statics the constructor writes (`#[link_section = ".data.envshim_ctor"]`),
/// by a piece of their mangled names.
const CTOR_STATICS: &[&str] = &[
    "10ctor_arena3HOT",
    "4real4REAL",
    "4real8RESOLVED",
    "6policy4SLOT",
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
