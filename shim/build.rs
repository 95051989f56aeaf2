//! Builds csrc/*.c (the variadic execl family, the TLS slot and other support, the lazily
//! bound libc wrappers) into the cdylib, and
//! exports the C-defined hooks: rustc's version script for a cdylib lists only Rust
//! symbols and hides everything else, so a second version script names execl, execlp
//! and execle (GNU ld and lld merge the two).
// The crate's no-panic lints (Cargo.toml) are for the library: a build script
// that panics fails the build, which is what it should do.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    clippy::indexing_slicing
)]
use std::{env, fs, path::PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=csrc/execl.c");
    println!("cargo:rerun-if-changed=csrc/support.c");
    println!("cargo:rerun-if-changed=csrc/cold.c");
    println!("cargo:rerun-if-changed=csrc/mem.c");
    println!("cargo:rerun-if-changed=csrc/entry.c");
    cc::Build::new()
        .file("csrc/execl.c")
        .file("csrc/entry.c")
        .file("csrc/support.c")
        .file("csrc/cold.c")
        .flag("-std=gnu11")
        .flag("-fvisibility=hidden")
        .warnings(true)
        .extra_warnings(true)
        .link_lib_modifier("+whole-archive")
        .compile("envshim_c");
    // memcpy, memset and bcmp of our own (see there), in a library of their own:
    // freestanding, so the compiler does not turn their bodies into calls to the
    // very functions they define.
    cc::Build::new()
        .file("csrc/mem.c")
        .flag("-std=gnu11")
        .flag("-fvisibility=hidden")
        .flag("-ffreestanding")
        .flag("-fno-builtin")
        .warnings(true)
        .extra_warnings(true)
        .link_lib_modifier("+whole-archive")
        .compile("envshim_mem");

    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let map = out.join("envshim-c-exports.map");
    fs::write(&map, "{ global: execl; execlp; execle; };\n").expect("write version script");
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        map.display()
    );
    // The built-in default and the fail-closed floor, compiled by the policy crate.
    for (name, compiled) in [
        ("default.bin", envpolicy::load::builtin_default()),
        ("floor.bin", envpolicy::load::builtin_floor()),
    ] {
        fs::write(out.join(name), compiled.bytes()).expect("write compiled policy");
    }
    println!("cargo:rerun-if-changed=../policy/src");

    // Lazy binding for the PLT calls of csrc/cold.c (see there): rustc links cdylibs
    // with -z now, which would resolve them at load in every process.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,lazy");
    // Each segment on a page of its own (lld; GNU ld ignores an unknown -z keyword
    // with a warning). Otherwise the writable segments share pages with the end of
    // the text and straddle page boundaries, and the loader's relocations and
    // zero-filling dirty four pages instead of two: each one a page fault in every
    // process (docs/benchmarks.md). With it, the constructor's statics (`.data`,
    // see src/hooks/init.rs) are on the page the loader has already written.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,separate-loadable-segments");
    // One writable segment, laid out by layout.ld: the pages the loader and the
    // constructor write come first, and there is no .bss. (-z norelro: with RELRO,
    // lld makes the relocated part a segment of its own, one more mapping and an
    // mprotect in every process; docs/adr/0007-process-start.md says why that
    // protects little here.)
    println!("cargo:rerun-if-changed=layout.ld");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,norelro");
    // No C runtime start files (crti, crtbeginS, crtendS, crtn): their `_init`,
    // `_fini`, `frame_dummy` and `__do_global_dtors_aux` serve C++ and gcc's
    // profiling and transactional memory, none of which this library uses (its
    // constructor is an `.init_array` entry the loader runs itself), and their four
    // weak symbol lookups (`__gmon_start__`, `_ITM_*`, `__cxa_finalize`) searched
    // every loaded object at every process start: 4,000 instructions per start.
    println!("cargo:rustc-cdylib-link-arg=-nostartfiles");
    // libc, named here: the libc crate asks for it only without its "std" feature,
    // which cargo turns on when the shim is built in one command with a crate that
    // uses std (`cargo build -p envshim -p envwrap`). Without DT_NEEDED libc.so.6 the
    // library still works preloaded (libc is loaded by the program), but not run
    // as a program (src/hooks/describe.rs).
    println!("cargo:rustc-link-lib=dylib=c");
    // Run as a program, the library starts here (csrc/entry.c, src/hooks/describe.rs).
    println!("cargo:rustc-cdylib-link-arg=-Wl,-e,envshim_entry");
    let dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,-T,{}",
        dir.join("layout.ld").display()
    );
    // The functions a fork child's exec and a process start run, first in the text
    // and together, so that each touches as few of the kernel's 64 KiB fault-around
    // windows as it can (docs/adr/0010-hot-text-first.md; generated by ci/hot-text).
    println!("cargo:rerun-if-changed=hot_text.ld");
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,-T,{}",
        dir.join("hot_text.ld").display()
    );
}
